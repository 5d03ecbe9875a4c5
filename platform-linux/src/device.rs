//! [`LinuxPlatform`]: the core's [`Platform`] over amdkfd — a [`KfdDriver`] (the real
//! `/dev/kfd`, or any driver with its semantics) and the KFD [`Topology`].
//!
//! What each platform call becomes (ROCR's `amd_memory_region.cpp`, `amd_aql_queue.cpp`,
//! libhsakmt's `fmm.c`, `queues.c`, `events.c` are the references for the facts):
//!
//! | call | amdkfd |
//! |---|---|
//! | `new` | `GET_VERSION` (major 1), `ACQUIRE_VM` per GPU, `GET_PROCESS_APERTURES_NEW`: nothing more, so that a report on the topology needs no device event or memory |
//! | `allocate_memory` System | host pages at a carved VA, `ALLOC_MEMORY_OF_GPU(USERPTR)`, `MAP_MEMORY_TO_GPU` (all GPUs) |
//! | `allocate_memory` DeviceLocal | `ALLOC_MEMORY_OF_GPU(VRAM)` at a carved VA, render-node mmap when host-visible, `MAP_MEMORY_TO_GPU` (its GPU) |
//! | `free_memory` | `UNMAP_MEMORY_FROM_GPU`, `FREE_MEMORY_OF_GPU`, VA back to the reservation |
//! | `create_queue` | the first time: `CREATE_EVENT(MEMORY)` and `CREATE_EVENT(HW_EXCEPTION)` for the queue-error [`monitor`]; then EOP (VRAM) and CWSR (host) buffers, `CREATE_QUEUE(COMPUTE_AQL)`, doorbell page mmap; the queue is watched by the [`monitor`] |
//! | `create_sdma_queue` | the first queue of either kind starts the [`monitor`] (as `create_queue`); then `CREATE_QUEUE(SDMA)` on the caller's ring, doorbell page mmap; the engine's faults arrive as the monitor's events |
//! | `ring_doorbell` | one 64-bit release store to the doorbell word through the queue's [`KfdDoorbell`]: no lock, no lookup |
//! | `create_event` | `CREATE_EVENT(SIGNAL, auto_reset)`; the process's first event (this one, or the monitor's) hands KFD the event page |
//! | `wait_event` / `signal_event` / `destroy_event` | `WAIT_EVENTS` / `SET_EVENT` / `DESTROY_EVENT` |
//!
//! Every chunk's device address is its host address (amdkfd SVM): all chunks are carved from
//! one reserved range ([`VaSpace`]) of [`VA_RESERVATION_BYTES`].

mod cwsr;
pub mod monitor;
mod platform_impl;
mod ranges;
pub use platform_impl::abort_on_queue_error;
mod process;
pub mod va;

pub use cwsr::{
    context_save_area_header, queue_buffer_sizes, vgpr_bytes_per_cu, ContextSaveAreaHeader,
    QueueBufferSizes,
};

use std::collections::{HashMap, HashSet};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hsa_core::addr::{EventId, GpuVa, NodeId, QueueId};
use hsa_core::platform::{
    DeviceType, MemoryChunk, MemoryFaultHandler, MemoryFlags, MemoryKind, NodeProperties, Platform,
    SharedMemory,
};
use hsa_core::{bail, error, Error, Status};
use rustix::io::Errno;

use crate::kfd::abi::*;
use crate::kfd::calls::{self, call};
use crate::kfd::driver::{KfdDriver, MapTarget};
use crate::kfd::ioctl::{Backing, OwnedMapping, VaSpace};
use crate::topology::{Topology, TopologyNode};

/// Address space reserved per platform for all chunks, bytes (64 GiB; `MAP_NORESERVE`, so it
/// costs no memory until used).
pub const VA_RESERVATION_BYTES: u64 = 64 << 30;

/// The smallest address reservation the platform falls back to where the address space
/// refuses [`VA_RESERVATION_BYTES`] (halving from it), bytes (4 GiB).
pub const MIN_VA_RESERVATION_BYTES: u64 = 4 << 30;

/// Reserves the process's GPU address range: [`VA_RESERVATION_BYTES`], or, where the address
/// space cannot take that much at once (a `ulimit -v`, valgrind's address-space manager, which
/// refuses 64 GiB), the largest half of it that it can, down to
/// [`MIN_VA_RESERVATION_BYTES`]: chunks then run out sooner (`OUT_OF_RESOURCES`), nothing
/// else changes.
///
/// # Errors
/// [`Status::OutOfResources`] (`ENOMEM`) or [`Status::Error`] naming the errno when not even
/// the minimum can be reserved.
fn reserve_va() -> Result<VaSpace, Error> {
    let mut len = VA_RESERVATION_BYTES;
    loop {
        match VaSpace::reserve(len) {
            Ok(v) => return Ok(v),
            Err(e)
                if len > MIN_VA_RESERVATION_BYTES && matches!(e, Errno::NOMEM | Errno::INVAL) =>
            {
                len /= 2;
            }
            Err(e) => return Err(va_error("reserving the GPU address range", e)),
        }
    }
}

/// Chunks of at least this size are placed at multiples of it, so the GPU can use 2 MiB pages
/// (libhsakmt's `GPU_HUGE_PAGE_SIZE`), bytes.
pub const HUGE_PAGE_BYTES: u64 = 2 << 20;

/// Size of a SOC15 (gfx9+) process doorbell page: 1024 doorbells of 8 bytes (libhsakmt
/// `DOORBELLS_PAGE_SIZE(DOORBELL_SIZE(gfxv))`), bytes. CREATE_QUEUE's `doorbell_offset` is the
/// page's mmap offset plus the queue's doorbell offset within it, so
/// `offset & !(DOORBELL_PAGE_BYTES - 1)` is mapped (once per GPU) and
/// `offset & (DOORBELL_PAGE_BYTES - 1)` locates the doorbell.
pub const DOORBELL_PAGE_BYTES: u64 = 1024 * 8;

/// Size of the event page: `KFD_SIGNAL_EVENT_LIMIT` 64-bit slots, bytes.
pub const EVENT_PAGE_BYTES: u64 = KFD_SIGNAL_EVENT_LIMIT as u64 * 8;

/// `queue_priority` of every queue: ROCR's normal priority (libhsakmt `priority_map[3]`).
pub const QUEUE_PRIORITY_NORMAL: u32 = 7;

/// A GPU clock counter and the system timestamp read together
/// ([`LinuxPlatform::clock_sample`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSample {
    /// The GPU's clock counter (`gpu_clock_counter` of `AMDKFD_IOC_GET_CLOCK_COUNTERS`), its
    /// own ticks.
    pub gpu: u64,
    /// The platform's system timestamp at the same moment, ns (`CLOCK_MONOTONIC`).
    pub system: u64,
}

/// One GPU the platform drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// Topology node id.
    pub node_id: u32,
    /// KFD `gpu_id`.
    pub gpu_id: u32,
    /// `gfx_target_version` (90010 = gfx90a).
    pub gfx_target_version: u32,
    /// GPUVM aperture base from `GET_PROCESS_APERTURES_NEW` (0 when not reported).
    pub gpuvm_base: u64,
    /// GPUVM aperture limit (inclusive; 0 when not reported).
    pub gpuvm_limit: u64,
    /// The process's LDS (group) aperture base from `GET_PROCESS_APERTURES_NEW` (`lds_base`;
    /// 0 when not reported).
    pub lds_base: u64,
    /// The process's scratch (private) aperture base (`scratch_base`; 0 when not reported).
    pub scratch_base: u64,
}

#[derive(Debug)]
struct ChunkRecord {
    size: u64,
    /// KFD handle; `None` for host memory of a machine without GPUs.
    handle: Option<u64>,
    /// The `gpu_id` KFD allocated (or imported) the buffer object on; `None` for host memory
    /// of a machine without GPUs and for registered host memory.
    gpu: Option<u32>,
    mapped_to: Vec<u32>,
    /// Registered host memory of the application (`register_host_memory`).
    user: bool,
    /// Its device address was carved from the reservation (all chunks but a registration for
    /// CPU nodes only, which is the host address).
    carved: bool,
    /// Its export to other processes (`export_memory`), kept while the chunk lives.
    export: Option<Export>,
}

/// An exported chunk: the dma-buf descriptor KFD gave, held open so that importers can take
/// it (`pidfd_getfd`) until the chunk is freed, and the description handed out.
#[derive(Debug)]
struct Export {
    _fd: std::os::fd::OwnedFd,
    shared: SharedMemory,
}

#[derive(Debug)]
struct QueueRecord {
    eop: Option<MemoryChunk>,
    cwsr: Option<MemoryChunk>,
    /// The ring's device address and size in bytes (UPDATE_QUEUE names them again).
    ring: (u64, u32),
}

/// A queue's doorbell on Linux ([`Platform::Doorbell`] of [`LinuxPlatform`]): its 64-bit word
/// in the GPU's doorbell page, which amdkfd maps from `/dev/kfd` (`CREATE_QUEUE`'s
/// `doorbell_offset`: the page's mmap offset plus the word's offset in it). Ringing is one
/// release store to the word, with no lock and no lookup (ROCR's `hardware_doorbell_ptr`
/// store). The handle keeps the page mapped, so ringing stays sound after the queue, or the
/// platform, is gone: the store then reaches a doorbell no queue of ours uses.
#[derive(Clone, Debug)]
pub struct KfdDoorbell {
    page: Arc<OwnedMapping>,
    /// Byte offset of the word in the page: a multiple of 8, below the page's size.
    offset: u64,
}

impl KfdDoorbell {
    /// Address of the doorbell word (what the queue's doorbell signal holds).
    pub fn address(&self) -> u64 {
        self.page.va() + self.offset
    }

    /// Stores `value` to the doorbell word (release): the whole ring. The offset was checked
    /// against the page when the queue was made, so the store always happens.
    fn ring(&self, value: u64) {
        let _ = self.page.store_u64_release(self.offset, value);
    }
}

#[derive(Debug, Default)]
struct State {
    chunks: HashMap<u64, ChunkRecord>,
    queues: HashMap<u32, QueueRecord>,
    events: HashSet<u32>,
    /// (gpu_id, mmap offset) → the mapped doorbell page (queues' [`KfdDoorbell`]s share it).
    doorbell_pages: HashMap<(u32, u64), Arc<OwnedMapping>>,
}

/// The Linux platform: amdkfd through a [`KfdDriver`], topology from sysfs (or a capture).
///
/// Drop destroys every queue and event and frees every chunk still live, then releases the
/// address reservation.
/// # Examples
/// Over amdkfd: the topology from sysfs and the driver from `/dev/kfd` (not run here: it needs
/// an AMD GPU and access to `/dev/kfd`; `hsa_emu::open_default()` does this, or opens the
/// emulated device where there is none):
/// ```no_run
/// use std::sync::Arc;
/// use hsa_linux::kfd::ioctl::DevKfd;
/// use hsa_linux::topology::Topology;
/// use hsa_linux::LinuxPlatform;
///
/// let topology = Topology::read_default()?;
/// let driver = DevKfd::open(&topology)?;
/// let platform = LinuxPlatform::new(driver, topology)?;
/// # Ok::<(), hsa_core::Error>(())
/// ```
/// Over the emulated device (`hsa-emu`'s [`KfdDriver`]), as a runtime's platform:
/// ```
/// use std::sync::Arc;
/// use hsa_core::runtime::Runtime;
/// use hsa_linux::LinuxPlatform;
///
/// let emulated = hsa_emu::EmulatedKfd::new(hsa_emu::builtin_topology())?;
/// let platform = LinuxPlatform::new(emulated.clone(), emulated.topology().clone())?;
/// assert_eq!(platform.device_kind(), "emulated");
/// let rt = Runtime::new(Arc::new(platform))?;
/// assert_eq!(rt.first_gpu().map(|gpu| gpu.name()), Some("gfx90a"));
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct LinuxPlatform {
    driver: Arc<dyn KfdDriver>,
    topology: Topology,
    version: (u32, u32),
    gpus: Vec<GpuInfo>,
    /// The per-process state shared with other platforms on the same driver.
    process: Arc<process::KfdProcess>,
    state: Mutex<State>,
    /// The process's XNACK mode, as KFD reported it at open.
    xnack: bool,
    /// The queue-error monitor, started with the first compute queue (nothing else can
    /// fault or hang): a platform that makes no queue (a report on the topology) creates no
    /// KFD event and so needs no event page.
    monitor: OnceLock<monitor::Monitor>,
    /// The virtual-memory API's reservations and mappings (`ranges`).
    ranges: Mutex<ranges::Ranges>,
    /// Held while the monitor starts (one start, however many threads make their first
    /// queue at once); holds the memory-fault handler, which a monitor started later gets.
    monitor_start: Mutex<Option<MemoryFaultHandler>>,
}

impl std::fmt::Debug for LinuxPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPlatform")
            .field("driver", &self.driver.name())
            .field("version", &self.version)
            .field("gpus", &self.gpus)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn va_error(what: &str, e: Errno) -> Error {
    let status = if e == Errno::NOMEM {
        Status::OutOfResources
    } else {
        Status::Error
    };
    error!(
        status,
        "{what}: {}",
        crate::kfd::errno_text(e.raw_os_error())
    )
}

/// `timeout_ns` as WAIT_EVENTS wants it: milliseconds rounded up; `u64::MAX` (and anything
/// at or beyond `0xffffffff` ms) is `0xffffffff`, KFD's "forever".
pub fn wait_timeout_ms(timeout_ns: u64) -> u32 {
    if timeout_ns == u64::MAX {
        return u32::MAX;
    }
    u32::try_from(timeout_ns.div_ceil(1_000_000)).unwrap_or(u32::MAX)
}

/// How amdkfd backs a chunk (`KFD_IOC_ALLOC_MEM_FLAGS_USERPTR` / `_GTT` / `_VRAM` of
/// `kfd_ioctl.h`), which decides how the host maps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KfdPlacement {
    /// Host pages the runtime maps itself and registers with KFD: system memory
    /// ([`MemoryKind::System`]).
    UserPtr,
    /// A system-memory buffer object KFD allocates; the host maps it from the render node at
    /// its `mmap_offset`. amdkfd maps the event page into the kernel, which it can do only for
    /// a GTT buffer object (`amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel` refuses USERPTR with
    /// `EINVAL`), so the event page is one.
    Gtt,
    /// Device-local memory ([`MemoryKind::DeviceLocal`]); PUBLIC and mapped from the render
    /// node when the host needs access.
    Vram,
}

impl From<MemoryKind> for KfdPlacement {
    fn from(kind: MemoryKind) -> KfdPlacement {
        match kind {
            MemoryKind::System => KfdPlacement::UserPtr,
            MemoryKind::DeviceLocal => KfdPlacement::Vram,
        }
    }
}

/// The `KFD_IOC_ALLOC_MEM_FLAGS_*` for a request: [`kfd_alloc_flags_for`] with system memory
/// as USERPTR and device-local memory as VRAM.
pub fn kfd_alloc_flags(kind: MemoryKind, flags: MemoryFlags) -> u32 {
    kfd_alloc_flags_for(kind.into(), flags)
}

/// The `KFD_IOC_ALLOC_MEM_FLAGS_*` for a chunk placed as `placement`: the memory type,
/// WRITABLE unless READ_ONLY, EXECUTABLE, COHERENT for fine-grained, UNCACHED, PUBLIC for
/// host-visible VRAM, CONTIGUOUS_BEST_EFFORT for contiguous VRAM, and always NO_SUBSTITUTE.
pub fn kfd_alloc_flags_for(placement: KfdPlacement, flags: MemoryFlags) -> u32 {
    let mut f = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
    f |= match placement {
        KfdPlacement::UserPtr => KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        KfdPlacement::Gtt => KFD_IOC_ALLOC_MEM_FLAGS_GTT,
        KfdPlacement::Vram => KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
    };
    if !flags.contains(MemoryFlags::READ_ONLY) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    }
    if flags.contains(MemoryFlags::EXECUTABLE) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    }
    if flags.contains(MemoryFlags::FINE_GRAINED) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
    }
    if flags.contains(MemoryFlags::UNCACHED) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
    }
    if placement == KfdPlacement::Vram && flags.contains(MemoryFlags::HOST_ACCESS) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    }
    // As ROCR 7: physically contiguous only for VRAM.
    if placement == KfdPlacement::Vram && flags.contains(MemoryFlags::CONTIGUOUS) {
        f |= KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT;
    }
    f
}

/// Sets the process's XNACK mode when `request` says so, then returns the mode KFD reports.
fn xnack_mode(drv: &dyn KfdDriver, request: Option<bool>) -> Result<bool, Error> {
    if let Some(on) = request {
        let mut a = SetXnackModeArgs {
            xnack_enabled: i32::from(on),
        };
        call(drv, &mut a)
            .map_err(|e| error!(e.status(), "HSA_XNACK={}: {}", u8::from(on), e.detail()))?;
    }
    let mut a = SetXnackModeArgs { xnack_enabled: -1 };
    match call(drv, &mut a) {
        Ok(()) => Ok(a.xnack_enabled > 0),
        // Before KFD 1.5 there is no per-process mode: XNACK is off.
        Err(_) => Ok(false),
    }
}

impl LinuxPlatform {
    /// Opens the platform on `driver` for the machine `topology` describes: checks the KFD
    /// interface version, acquires each GPU's VM from its render node, reads the GPUVM
    /// apertures and reserves [`VA_RESERVATION_BYTES`] of address space.
    ///
    /// # Errors
    /// - [`Status::Error`] `"kfd version X.Y unsupported (need 1.x)"` when the major version is
    ///   not 1.
    /// - The ioctl's error (named, see [`crate::kfd::ioctl_error`]) when `GET_VERSION`,
    ///   `ACQUIRE_VM` or `GET_PROCESS_APERTURES_NEW` fails.
    /// - [`Status::Error`] naming `/dev/dri/renderD<minor>` when a render node cannot be
    ///   opened (`"permission denied on ...: join the render group"` for `EACCES`).
    /// - [`Status::OutOfResources`] when the address space cannot be reserved or does not lie
    ///   inside a GPU's GPUVM aperture.
    pub fn new(driver: Arc<dyn KfdDriver>, topology: Topology) -> Result<LinuxPlatform, Error> {
        LinuxPlatform::with_xnack(driver, topology, None)
    }

    /// [`LinuxPlatform::new`], and the process's XNACK mode set to `xnack` when it is given
    /// (`AMDKFD_IOC_SET_XNACK_MODE`, as ROCR does for `HSA_XNACK`); the mode is then queried
    /// either way and decides the agents' ISA ([`TopologySource::xnack_enabled`](hsa_core::platform::TopologySource::xnack_enabled)). A kernel without
    /// the ioctl (before KFD 1.5) reads as XNACK off when nothing is asked.
    ///
    /// # Errors
    /// As [`LinuxPlatform::new`]; when `xnack` is given and KFD refuses it, the ioctl's
    /// error prefixed with `"HSA_XNACK=<0|1>: "` (`EPERM`: a GPU cannot run in that mode).
    pub fn with_xnack(
        driver: Arc<dyn KfdDriver>,
        topology: Topology,
        xnack: Option<bool>,
    ) -> Result<LinuxPlatform, Error> {
        let drv = &*driver;
        let mut v = GetVersionArgs::default();
        call(drv, &mut v)?;
        if v.major_version != KFD_IOCTL_MAJOR_VERSION {
            bail!(
                Status::Error,
                "kfd version {}.{} unsupported (need {KFD_IOCTL_MAJOR_VERSION}.x)",
                v.major_version,
                v.minor_version
            );
        }
        let mut gpus: Vec<GpuInfo> = topology
            .nodes
            .iter()
            .map(|n| &n.properties)
            .filter(|p| p.device_type() == DeviceType::Gpu && p.gpu_id != 0)
            .map(|p| GpuInfo {
                node_id: p.node_id,
                gpu_id: p.gpu_id,
                gfx_target_version: p.gfx_target_version,
                gpuvm_base: 0,
                gpuvm_limit: 0,
                lds_base: 0,
                scratch_base: 0,
            })
            .collect();
        let process = process::process_of(&driver, reserve_va)?;
        let va = &process.va;

        for gpu in &gpus {
            let minor = topology
                .nodes
                .iter()
                .find(|n| n.properties.node_id == gpu.node_id)
                .map_or(0, |n| n.properties.drm_render_minor);
            let fd = drv.render_node_fd(gpu.gpu_id).map_err(|e| match e {
                Errno::ACCESS | Errno::PERM => error!(
                    Status::Error,
                    "permission denied on /dev/dri/renderD{minor}: join the render group"
                ),
                e => error!(
                    Status::Error,
                    "open /dev/dri/renderD{minor} (gpu_id {}): {e}", gpu.gpu_id
                ),
            })?;
            let mut a = AcquireVmArgs {
                drm_fd: fd as u32,
                gpu_id: gpu.gpu_id,
            };
            call(drv, &mut a)?;
        }
        let xnack = if gpus.is_empty() {
            false
        } else {
            xnack_mode(drv, xnack)?
        };

        if !gpus.is_empty() {
            let mut apertures = vec![ProcessDeviceApertures::default(); gpus.len()];
            let filled = calls::get_process_apertures(drv, &mut apertures)?;
            for ap in &apertures[..filled] {
                if let Some(g) = gpus.iter_mut().find(|g| g.gpu_id == ap.gpu_id) {
                    g.gpuvm_base = ap.gpuvm_base;
                    g.gpuvm_limit = ap.gpuvm_limit;
                    g.lds_base = ap.lds_base;
                    g.scratch_base = ap.scratch_base;
                }
            }
            let (lo, hi) = (va.base(), va.base() + va.len_bytes() - 1);
            for g in &gpus {
                if g.gpuvm_limit != 0 && (lo < g.gpuvm_base || hi > g.gpuvm_limit) {
                    bail!(
                        Status::OutOfResources,
                        "address reservation {lo:#x}..={hi:#x} is outside the GPUVM aperture \
                         {:#x}..={:#x} of gpu_id {}",
                        g.gpuvm_base,
                        g.gpuvm_limit,
                        g.gpu_id
                    );
                }
            }
        }

        Ok(LinuxPlatform {
            driver,
            topology,
            version: (v.major_version, v.minor_version),
            gpus,
            process,
            state: Mutex::new(State::default()),
            xnack,
            monitor: OnceLock::new(),
            ranges: Mutex::new(ranges::Ranges::default()),
            monitor_start: Mutex::new(None),
        })
    }

    /// The queue-error monitor, started on first use: creates the memory and
    /// hardware-exception events (the process's first event hands KFD the event page, as
    /// ROCR's first event does) and starts the [`monitor`] on them with the memory-fault
    /// handler installed so far. ROCR creates the same two events at start-up; here they wait
    /// for the first compute queue, the only thing whose errors they report, so that a
    /// platform opened to read the topology (hsainfo) asks KFD for nothing else.
    ///
    /// # Errors
    /// The error of either `CREATE_EVENT` (or of the event page's allocation), prefixed with
    /// `"creating the KFD <memory|hardware-exception> event that reports queue errors"`; the
    /// thread's spawn error.
    fn monitor(&self) -> Result<&monitor::Monitor, Error> {
        if let Some(m) = self.monitor.get() {
            return Ok(m);
        }
        let handler = lock(&self.monitor_start);
        if let Some(m) = self.monitor.get() {
            return Ok(m);
        }
        let m = self.start_monitor()?;
        m.set_fault_handler(*handler);
        Ok(self.monitor.get_or_init(|| m))
    }

    /// Creates the memory and hardware-exception events and starts the [`monitor`] on them.
    fn start_monitor(&self) -> Result<monitor::Monitor, Error> {
        let what = |kind: &str, e: Error| {
            e.context(&format!(
                "creating the KFD {kind} event that reports queue errors"
            ))
        };
        let memory = self
            .create_kfd_event(KFD_IOC_EVENT_MEMORY)
            .map_err(|e| what("memory", e))?
            .0
            .event_id;
        let destroy = |id: u32| {
            let _ = call(
                &*self.driver,
                &mut DestroyEventArgs {
                    event_id: id,
                    pad: 0,
                },
            );
        };
        let hw = match self.create_kfd_event(KFD_IOC_EVENT_HW_EXCEPTION) {
            Ok((a, _)) => a.event_id,
            Err(e) => {
                destroy(memory);
                return Err(what("hardware-exception", e));
            }
        };
        let gpu_nodes = self
            .gpus
            .iter()
            .map(|g| (g.gpu_id, NodeId(g.node_id)))
            .collect();
        match monitor::Monitor::start(
            self.driver.clone(),
            self.process.clone(),
            memory,
            hw,
            gpu_nodes,
        ) {
            Ok(m) => Ok(m),
            Err(e) => {
                destroy(memory);
                destroy(hw);
                Err(e)
            }
        }
    }

    /// The KFD ids of the queue-error monitor's memory and hardware-exception events; `None`
    /// until the platform's first compute queue started the monitor (never on a machine
    /// without GPUs).
    pub fn exception_events(&self) -> Option<(u32, u32)> {
        self.monitor.get().map(monitor::Monitor::events)
    }

    /// The driver's short name ([`KfdDriver::name`]): `"kfd"` for the real `/dev/kfd`.
    pub fn device_kind(&self) -> &str {
        self.driver.name()
    }

    /// The KFD interface version (major, minor) the driver reported.
    pub fn kfd_version(&self) -> (u32, u32) {
        self.version
    }

    /// The GPUs, in topology order, with their apertures.
    pub fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    /// The topology the platform answers from.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Restricts the queue `queue` to the compute units whose bits are set in `mask` (bit `i`
    /// of word `w` is CU `32 * w + i`), as `hsa_amd_queue_cu_set_mask` (KFD `SET_CU_MASK`).
    ///
    /// # Errors
    /// [`Status::InvalidQueue`] for a queue this platform did not create;
    /// [`Status::InvalidArgument`] for an empty mask; the ioctl's error.
    pub fn set_queue_cu_mask(&self, queue: QueueId, mask: &[u32]) -> Result<(), Error> {
        if !lock(&self.state).queues.contains_key(&queue.0) {
            bail!(Status::InvalidQueue, "no queue with id {}", queue.0);
        }
        calls::set_cu_mask(&*self.driver, queue.0, mask)
    }

    /// Sets the scheduling priority of the queue `queue` (KFD `UPDATE_QUEUE` with the queue's
    /// ring, 100 percent and `priority` 0..=15; libhsakmt maps ROCR's low, normal and high
    /// priorities to 0, 7 and 15).
    ///
    /// # Errors
    /// [`Status::InvalidQueue`] for a queue this platform did not create;
    /// [`Status::InvalidArgument`] for a priority above 15; the ioctl's error.
    pub fn set_queue_priority(&self, queue: QueueId, priority: u32) -> Result<(), Error> {
        if priority > KFD_MAX_QUEUE_PRIORITY {
            bail!(
                Status::InvalidArgument,
                "queue priority {priority} is above {KFD_MAX_QUEUE_PRIORITY}"
            );
        }
        let Some((ring, ring_size)) = lock(&self.state).queues.get(&queue.0).map(|q| q.ring) else {
            bail!(Status::InvalidQueue, "no queue with id {}", queue.0);
        };
        let mut a = UpdateQueueArgs {
            ring_base_address: ring,
            queue_id: queue.0,
            ring_size,
            queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
            queue_priority: priority,
        };
        call(&*self.driver, &mut a)
    }

    /// Reads the clock counter of the GPU of `node` (`AMDKFD_IOC_GET_CLOCK_COUNTERS`: the
    /// counter the command processor writes into profiling timestamps) together with this
    /// platform's system timestamp ([`Platform::timestamp_ticks`], read just before and after
    /// the ioctl: the sample's system time is their midpoint).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when `node` is not one of the platform's GPUs; the ioctl's
    /// error (named, see [`crate::kfd::ioctl_error`]).
    pub fn clock_sample(&self, node: NodeId) -> Result<ClockSample, Error> {
        let Some(gpu) = self.gpu_by_node(node) else {
            bail!(Status::InvalidArgument, "node {} is not a GPU", node.0);
        };
        let mut a = GetClockCountersArgs {
            gpu_id: gpu.gpu_id,
            ..GetClockCountersArgs::default()
        };
        let before = hsa_core::platform::Platform::timestamp_ticks(self);
        call(&*self.driver, &mut a)?;
        let after = hsa_core::platform::Platform::timestamp_ticks(self);
        Ok(ClockSample {
            gpu: a.gpu_clock_counter,
            system: before + (after - before) / 2,
        })
    }

    /// Bytes of memory amdkfd would still let this process allocate on the GPU of `node`
    /// (`AMDKFD_IOC_AVAILABLE_MEMORY`, `kfd_ioctl_get_available_memory_args.available`): what
    /// ROCR 7 reports as `HSA_AMD_AGENT_INFO_MEMORY_AVAIL` (before adding its own caches).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when `node` is not one of the platform's GPUs; the ioctl's
    /// error (named, see [`crate::kfd::ioctl_error`]; amdkfd before interface 1.9 has no such
    /// ioctl).
    pub fn available_memory(&self, node: NodeId) -> Result<u64, Error> {
        let Some(gpu) = self.gpu_by_node(node) else {
            bail!(Status::InvalidArgument, "node {} is not a GPU", node.0);
        };
        let mut a = GetAvailableMemoryArgs {
            gpu_id: gpu.gpu_id,
            ..GetAvailableMemoryArgs::default()
        };
        call(&*self.driver, &mut a)?;
        Ok(a.available)
    }

    /// A new dma-buf file descriptor over the buffer object holding `len` bytes at `va`, and
    /// the byte offset of `va` in it (`AMDKFD_IOC_EXPORT_DMABUF` of the chunk's KFD handle;
    /// libhsakmt's `hsaKmtExportDMABufHandle`, what ROCR 7's `hsa_amd_portable_export_dmabuf`
    /// calls). The caller owns the descriptor; the chunk stays this platform's.
    ///
    /// # Errors
    /// [`Status::InvalidAllocation`] when no chunk of this platform holds the whole range;
    /// [`Status::InvalidArgument`] for registered host memory or host memory of a machine
    /// without GPUs (no buffer object of KFD's to export); the ioctl's error, as
    /// [`Status::Error`] (amdgpu refuses to export USERPTR system memory).
    pub fn export_dmabuf(&self, va: u64, len: u64) -> Result<(std::os::fd::OwnedFd, u64), Error> {
        let st = lock(&self.state);
        let Some((&start, rec)) = st.chunks.iter().find(|(&s, r)| {
            va >= s
                && va
                    .checked_add(len)
                    .is_some_and(|e| e <= s.saturating_add(r.size))
        }) else {
            bail!(
                Status::InvalidAllocation,
                "no chunk holds {len} bytes at {va:#x}"
            );
        };
        if rec.user {
            bail!(
                Status::InvalidArgument,
                "{va:#x} is registered host memory of the application: no buffer object to export"
            );
        }
        let Some(handle) = rec.handle else {
            bail!(
                Status::InvalidArgument,
                "{va:#x} is host memory of a machine without GPUs: no buffer object to export"
            );
        };
        let fd = calls::export_dmabuf(&*self.driver, handle).map_err(|e| {
            error!(
                Status::Error,
                "exporting the chunk at {start:#x}: {}",
                e.detail()
            )
        })?;
        Ok((fd, va - start))
    }

    fn topo_node(&self, index: usize) -> Result<&TopologyNode, Error> {
        self.topology.nodes.get(index).ok_or_else(|| {
            error!(
                Status::InvalidIndex,
                "node index {index} out of range (0..{})",
                self.topology.nodes.len()
            )
        })
    }

    fn node_by_id(&self, node: NodeId) -> Option<&NodeProperties> {
        self.topology
            .nodes
            .iter()
            .map(|n| &n.properties)
            .find(|p| p.node_id == node.0)
    }

    fn gpu_by_node(&self, node: NodeId) -> Option<&GpuInfo> {
        self.gpus.iter().find(|g| g.node_id == node.0)
    }

    fn all_gpu_ids(&self) -> Vec<u32> {
        self.gpus.iter().map(|g| g.gpu_id).collect()
    }

    /// Allocates a chunk: carve VA, back it, ALLOC + MAP to `map_to`.
    fn alloc_chunk(
        &self,
        alloc_gpu: Option<u32>,
        placement: KfdPlacement,
        size: u64,
        align: u64,
        flags: MemoryFlags,
        map_to: &[u32],
    ) -> Result<MemoryChunk, Error> {
        let page = self.process.va.page_bytes();
        if size == 0 || size % page != 0 {
            bail!(
                Status::InvalidArgument,
                "size_bytes {size} is not a positive multiple of the page size {page}"
            );
        }
        if !align.is_power_of_two() || align < 4096 {
            bail!(
                Status::InvalidArgument,
                "align_bytes {align} is not a power of two >= 4096"
            );
        }
        let align = if size >= HUGE_PAGE_BYTES {
            align.max(HUGE_PAGE_BYTES)
        } else {
            align
        };
        let va = self.process.va.carve(size, align).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "no address space left for {size} bytes aligned to {align} ({} of {} bytes free)",
                self.process.va.free_bytes(),
                self.process.va.len_bytes()
            )
        })?;
        match self.alloc_at(va, alloc_gpu, placement, size, flags, map_to) {
            Ok(c) => Ok(c),
            Err(e) => {
                // A chunk recorded despite the error is a buffer KFD would not free: its
                // addresses stay carved (KFD may still use the host pages of a USERPTR
                // buffer), and the platform's drop retries the free.
                if !lock(&self.state).chunks.contains_key(&va) {
                    let _ = self.process.va.release(va);
                }
                Err(e)
            }
        }
    }

    fn alloc_at(
        &self,
        va: u64,
        alloc_gpu: Option<u32>,
        placement: KfdPlacement,
        size: u64,
        flags: MemoryFlags,
        map_to: &[u32],
    ) -> Result<MemoryChunk, Error> {
        let drv = &*self.driver;
        if placement == KfdPlacement::UserPtr || alloc_gpu.is_none() {
            self.process
                .va
                .back_with_host_memory(va)
                .map_err(|e| va_error("mapping host memory", e))?;
        }
        let Some(gpu_id) = alloc_gpu else {
            // No GPU at all: plain host memory, nothing for KFD to know.
            self.record(va, size, None, None, Vec::new());
            return Ok(self.chunk(va, size, 0));
        };
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: va,
            size,
            handle: 0,
            mmap_offset: 0,
            gpu_id,
            flags: kfd_alloc_flags_for(placement, flags),
        };
        if placement == KfdPlacement::UserPtr {
            // USERPTR: the user address goes in mmap_offset (kfd_ioctl.h).
            a.mmap_offset = va;
            #[allow(unsafe_code)]
            // SAFETY: `[va, va + size)` is a carved range of the process's reservation, just
            // backed with host memory, page-aligned. It stays carved and mapped until FREE of
            // the handle succeeds: `free_chunk` gives the addresses back only after FREE
            // succeeded, and `undo` below keeps a buffer KFD would not free recorded, which
            // keeps its addresses carved (`alloc_chunk`). No Rust reference into it exists: the
            // chunk reaches the core as raw pointers, under the `Platform` contract.
            unsafe {
                calls::alloc_userptr_memory_of_gpu(drv, &mut a)?
            };
        } else {
            calls::alloc_memory_of_gpu(drv, &mut a)?;
        }
        let handle = a.handle;
        let undo = |e: Error| {
            if call(drv, &mut FreeMemoryOfGpuArgs { handle }).is_err() {
                // KFD still holds the buffer: keep it recorded so that its addresses are not
                // reused and the platform's drop retries the free.
                self.record(va, size, Some(handle), Some(gpu_id), Vec::new());
            }
            e
        };
        let host_mapped = match placement {
            KfdPlacement::UserPtr => false,
            KfdPlacement::Gtt => true,
            KfdPlacement::Vram => flags.contains(MemoryFlags::HOST_ACCESS),
        };
        if host_mapped {
            self.process
                .va
                .map_from_driver(va, drv, MapTarget::RenderNode(gpu_id), a.mmap_offset)
                .map_err(|e| undo(va_error("mapping a buffer object for the host", e)))?;
        }
        // Host memory was just mapped anonymous, which the kernel zero-fills on first touch:
        // writing zeros would only make every page resident at once (1 GiB: a second, and a
        // GiB of RSS). A buffer object's pages may hold old data (amdgpu does not clear VRAM
        // on allocation), so those are zeroed (`VaSpace::zero`).
        if self
            .process
            .va
            .range(va)
            .is_some_and(|r| r.1 == Backing::Driver)
        {
            self.process.va.zero(va);
        }
        if !map_to.is_empty() {
            self.map_handle(handle, map_to).map_err(undo)?;
        }
        self.record(va, size, Some(handle), Some(gpu_id), map_to.to_vec());
        Ok(self.chunk(va, size, handle))
    }

    fn chunk(&self, va: u64, size: u64, handle: u64) -> MemoryChunk {
        let host = self
            .process
            .va
            .range(va)
            .is_some_and(|(_, b)| b != Backing::Reserved);
        MemoryChunk {
            gpu_va: GpuVa(va),
            host_ptr: if host {
                NonNull::new(va as *mut u8)
            } else {
                None
            },
            size_bytes: size,
            handle,
        }
    }

    fn record(
        &self,
        va: u64,
        size: u64,
        handle: Option<u64>,
        gpu: Option<u32>,
        mapped_to: Vec<u32>,
    ) {
        lock(&self.state).chunks.insert(
            va,
            ChunkRecord {
                size,
                handle,
                gpu,
                mapped_to,
                user: false,
                carved: true,
                export: None,
            },
        );
    }

    /// Records a registration of the application's memory at device address `va` (see
    /// `register_host_memory`); `carved` when `va` was carved from the reservation.
    fn record_user(
        &self,
        va: u64,
        size: u64,
        handle: Option<u64>,
        mapped_to: Vec<u32>,
        carved: bool,
    ) {
        lock(&self.state).chunks.insert(
            va,
            ChunkRecord {
                size,
                handle,
                gpu: None,
                mapped_to,
                user: true,
                carved,
                export: None,
            },
        );
    }

    /// Whether the live chunk at `va` is registered host memory; `None` when there is none.
    fn chunk_is_user(&self, va: u64) -> Option<bool> {
        lock(&self.state).chunks.get(&va).map(|r| r.user)
    }

    /// Whether `[va, va + size)` overlaps the platform's address reservation.
    fn in_reservation(&self, va: u64, size: u64) -> bool {
        let (lo, hi) = (
            self.process.va.base(),
            self.process.va.base() + self.process.va.len_bytes(),
        );
        va < hi && va.saturating_add(size) > lo
    }

    fn map_handle(&self, handle: u64, gpu_ids: &[u32]) -> Result<(), Error> {
        calls::map_memory_to_gpu(&*self.driver, handle, gpu_ids).map(|_| ())
    }

    fn free_chunk(&self, va: u64) -> Result<(), Error> {
        let rec = lock(&self.state)
            .chunks
            .remove(&va)
            .ok_or_else(|| error!(Status::InvalidArgument, "no live chunk at gpu_va {va:#x}"))?;
        let drv = &*self.driver;
        if let Some(handle) = rec.handle {
            let mut unmapped = false;
            if !rec.mapped_to.is_empty() {
                // A failed unmap still lets FREE release the buffer (as libhsakmt does).
                unmapped = calls::unmap_memory_from_gpu(drv, handle, &rec.mapped_to).is_ok();
            }
            if let Err(e) = call(drv, &mut FreeMemoryOfGpuArgs { handle }) {
                // The buffer is still alive in KFD: keep the chunk recorded (so the platform's
                // drop frees it) instead of forgetting a live handle.
                let mapped_to = if unmapped { Vec::new() } else { rec.mapped_to };
                if rec.user {
                    self.record_user(va, rec.size, Some(handle), mapped_to, rec.carved);
                } else {
                    self.record(va, rec.size, Some(handle), rec.gpu, mapped_to);
                }
                return Err(e.with_status(Status::ResourceFree));
            }
        }
        if !rec.carved {
            // A registration for the host alone: its address is the application's.
            return Ok(());
        }
        self.process.va.release(va).map_err(|e| {
            error!(
                Status::ResourceFree,
                "returning {} bytes at {va:#x} to the reservation: {e}", rec.size
            )
        })
    }

    /// `export_memory`: EXPORT_DMABUF of the chunk at `va` once; the description of the export
    /// (this process's id, the dma-buf's descriptor and inode number, the chunk's size).
    fn export_chunk(&self, va: u64) -> Result<SharedMemory, Error> {
        let mut st = lock(&self.state);
        let rec = st.chunks.get_mut(&va).ok_or_else(|| {
            error!(
                Status::InvalidArgument,
                "no live chunk at gpu_va {va:#x} to share"
            )
        })?;
        if let Some(e) = &rec.export {
            return Ok(e.shared);
        }
        if rec.user {
            bail!(
                Status::InvalidArgument,
                "gpu_va {va:#x} is registered host memory of the application: it cannot be \
                 shared with other processes"
            );
        }
        let Some(handle) = rec.handle else {
            bail!(
                Status::InvalidArgument,
                "gpu_va {va:#x} is host memory of a machine without GPUs: there is no buffer \
                 object to share"
            );
        };
        let fd = calls::export_dmabuf(&*self.driver, handle).map_err(|e| {
            error!(
                Status::InvalidArgument,
                "sharing the chunk at gpu_va {va:#x}: {} (system memory is shareable only \
                 when allocated SHAREABLE)",
                e.detail()
            )
        })?;
        let ino = rustix::fs::fstat(&fd)
            .map_err(|e| va_error("looking at an exported dma-buf", e))?
            .st_ino;
        let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
        let shared = SharedMemory {
            token: [
                pid,
                std::os::fd::AsRawFd::as_raw_fd(&fd) as u32,
                ino as u32,
                (ino >> 32) as u32,
            ],
            size_bytes: rec.size,
        };
        rec.export = Some(Export { _fd: fd, shared });
        Ok(shared)
    }

    /// `import_memory`: takes the exporter's dma-buf descriptor (`pidfd_open` +
    /// `pidfd_getfd`, which need ptrace access to the exporter: same user, and Yama's
    /// `ptrace_scope` 0 unless the exporter is a descendant), checks that it is still the
    /// export (inode number and size), IMPORT_DMABUF at a carved address on the first GPU of
    /// `nodes` (else the first GPU), maps it for the host through the dma-buf and to the GPUs
    /// of `nodes`.
    fn import_chunk(&self, shared: &SharedMemory, nodes: &[NodeId]) -> Result<MemoryChunk, Error> {
        use std::os::fd::AsRawFd;
        let [pid, fd_no, ino_lo, ino_hi] = shared.token;
        let ino = u64::from(ino_lo) | (u64::from(ino_hi) << 32);
        let size = shared.size_bytes;
        let page = self.process.va.page_bytes();
        if size == 0 || size % page != 0 {
            bail!(
                Status::InvalidArgument,
                "shared memory of {size} bytes: not a positive multiple of the page size {page}"
            );
        }
        let mut gpu_ids = Vec::new();
        for &n in nodes {
            if self.node_by_id(n).is_none() {
                bail!(Status::InvalidArgument, "node {} does not exist", n.0);
            }
            if let Some(g) = self.gpu_by_node(n) {
                if !gpu_ids.contains(&g.gpu_id) {
                    gpu_ids.push(g.gpu_id);
                }
            }
        }
        let Some(import_gpu) = gpu_ids
            .first()
            .copied()
            .or_else(|| self.gpus.first().map(|g| g.gpu_id))
        else {
            bail!(Status::InvalidArgument, "no GPU to import shared memory on");
        };
        let gone = |what: &str, e: Errno| {
            error!(
                Status::InvalidArgument,
                "shared memory of process {pid} (descriptor {fd_no}): {what}: {} (errno {})",
                e,
                e.raw_os_error()
            )
        };
        let pid_nz = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| gone("not a process id", Errno::SRCH))?;
        let pidfd = rustix::process::pidfd_open(pid_nz, rustix::process::PidfdFlags::empty())
            .map_err(|e| gone("the exporting process is gone", e))?;
        let raw = i32::try_from(fd_no).map_err(|_| gone("not a descriptor", Errno::BADF))?;
        let fd =
            rustix::process::pidfd_getfd(&pidfd, raw, rustix::process::PidfdGetfdFlags::empty())
                .map_err(|e| {
                    gone(
                "cannot take the descriptor (EBADF: the memory was freed; EPERM: no ptrace \
                 access to the exporter)",
                e,
            )
                })?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| gone("fstat", e))?;
        if stat.st_ino != ino {
            bail!(
                Status::InvalidArgument,
                "shared memory of process {pid}: descriptor {fd_no} is no longer the export \
                 (inode {} instead of {ino}): the memory was freed",
                stat.st_ino
            );
        }
        if u64::try_from(stat.st_size).ok() != Some(size) {
            bail!(
                Status::InvalidArgument,
                "shared memory of process {pid}: the export holds {} bytes, the handle says \
                 {size}",
                stat.st_size
            );
        }
        let align = if size >= HUGE_PAGE_BYTES {
            HUGE_PAGE_BYTES
        } else {
            page
        };
        let va = self.process.va.carve(size, align).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "no address space left to import {size} bytes ({} of {} bytes free)",
                self.process.va.free_bytes(),
                self.process.va.len_bytes()
            )
        })?;
        let drv = &*self.driver;
        let mut a = ImportDmabufArgs {
            va_addr: va,
            handle: 0,
            gpu_id: import_gpu,
            dmabuf_fd: fd.as_raw_fd() as u32,
        };
        if let Err(e) = call(drv, &mut a) {
            let _ = self.process.va.release(va);
            bail!(Status::InvalidArgument, "{}", e.detail());
        }
        let handle = a.handle;
        let undo = |e: Error| {
            if call(drv, &mut FreeMemoryOfGpuArgs { handle }).is_err() {
                self.record(va, size, Some(handle), Some(import_gpu), Vec::new());
            } else {
                let _ = self.process.va.release(va);
            }
            e
        };
        self.process
            .va
            .map_from_driver(va, drv, MapTarget::DmaBuf(fd.as_raw_fd()), 0)
            .map_err(|e| {
                undo(error!(
                    Status::OutOfResources,
                    "mapping imported memory for the host: {e} (errno {})",
                    e.raw_os_error()
                ))
            })?;
        if !gpu_ids.is_empty() {
            self.map_handle(handle, &gpu_ids)
                .map_err(|e| undo(e.with_status(Status::OutOfResources)))?;
        }
        // The buffer object and the host mapping hold the dma-buf now.
        drop(fd);
        self.record(va, size, Some(handle), Some(import_gpu), gpu_ids);
        Ok(self.chunk(va, size, handle))
    }

    /// Maps the doorbell page at `mmap_offset` of `gpu_id` once; the mapping, which queues'
    /// doorbells share.
    fn doorbell_page(&self, gpu_id: u32, mmap_offset: u64) -> Result<Arc<OwnedMapping>, Error> {
        let mut st = lock(&self.state);
        if let Some(page) = st.doorbell_pages.get(&(gpu_id, mmap_offset)) {
            return Ok(page.clone());
        }
        let len = DOORBELL_PAGE_BYTES.max(self.process.va.page_bytes());
        let page = self
            .process
            .va
            .map_owned(len, len, &*self.driver, MapTarget::Kfd, mmap_offset)
            .map_err(|e| {
                va_error(
                    &format!(
                        "mapping the doorbell page (offset {mmap_offset:#x}) of gpu_id {gpu_id}"
                    ),
                    e,
                )
            })?;
        let page = Arc::new(page);
        st.doorbell_pages
            .insert((gpu_id, mmap_offset), page.clone());
        Ok(page)
    }

    fn free_queue_buffers(&self, rec: &QueueRecord) {
        for c in [rec.eop, rec.cwsr].into_iter().flatten() {
            let _ = self.free_chunk(c.gpu_va.0);
        }
    }
}

impl Drop for LinuxPlatform {
    fn drop(&mut self) {
        // The monitor first: no callback runs while the queues go.
        drop(self.monitor.take());
        let queues: Vec<u32> = lock(&self.state).queues.keys().copied().collect();
        for q in queues {
            let _ = self.destroy_queue(QueueId(q));
        }
        let events: Vec<u32> = lock(&self.state).events.iter().copied().collect();
        for e in events {
            let _ = self.destroy_event(EventId(e));
        }
        // The event page handed to KFD is not freed: amdkfd refuses (EPERM, "Free signal BO
        // is not allowed") and releases it when the process closes /dev/kfd. Its host
        // mapping goes with the reservation.
        let event_page = lock(&self.process.event_page).map(|p| p.va);
        // The EOP and save-area buffers of a queue KFD would not destroy are not freed either:
        // its command processor may still write them (KFD releases them with the process).
        let busy: HashSet<u64> = lock(&self.state)
            .queues
            .values()
            .flat_map(|q| [q.eop, q.cwsr])
            .flatten()
            .map(|c| c.gpu_va.0)
            .collect();
        // The virtual-memory API's mappings hold GEM handles of chunks: they go first.
        self.drop_ranges();
        let chunks: Vec<u64> = lock(&self.state).chunks.keys().copied().collect();
        for va in chunks {
            if Some(va) != event_page && !busy.contains(&va) {
                let _ = self.free_chunk(va);
            }
        }
        // The doorbell pages this platform mapped go back with the last doorbell handle
        // (a queue's handle may outlive the platform); the event page stays with the process
        // (shared with other platforms on the same driver, see `process`).
        lock(&self.state).doorbell_pages.clear();
        process::release(&self.driver);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The KFD flags of a request, as `kfd_ioctl.h` numbers them (ROCR 7's
    /// `AllocateKfdMemory`): contiguous only for VRAM, public for host-visible VRAM,
    /// executable and uncached as asked, writable unless read-only.
    #[test]
    fn kfd_flags_follow_the_request() {
        let vram = kfd_alloc_flags_for(
            KfdPlacement::Vram,
            MemoryFlags::CONTIGUOUS | MemoryFlags::EXECUTABLE,
        );
        assert_eq!(
            vram,
            (1 << 0) | (1 << 23) | (1 << 28) | (1 << 30) | (1 << 31)
        );
        let gtt = kfd_alloc_flags_for(
            KfdPlacement::Gtt,
            MemoryFlags::CONTIGUOUS | MemoryFlags::FINE_GRAINED | MemoryFlags::READ_ONLY,
        );
        assert_eq!(gtt, (1 << 1) | (1 << 26) | (1 << 28));
        let user = kfd_alloc_flags_for(
            KfdPlacement::UserPtr,
            MemoryFlags::HOST_ACCESS | MemoryFlags::UNCACHED | MemoryFlags::CONTIGUOUS,
        );
        assert_eq!(user, (1 << 2) | (1 << 25) | (1 << 28) | (1 << 31));
        let public = kfd_alloc_flags_for(KfdPlacement::Vram, MemoryFlags::HOST_ACCESS);
        assert_eq!(public, (1 << 0) | (1 << 28) | (1 << 29) | (1 << 31));
    }

    /// A failed mapping names the errno once: its description and number, not also the
    /// `(os error N)` of rustix's Display.
    #[test]
    fn va_errors_name_the_errno_once() {
        let e = va_error("mapping host memory", Errno::NOMEM);
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(
            e.detail(),
            "mapping host memory: Cannot allocate memory (errno 12)"
        );
        let e = va_error("reserving the GPU address range", Errno::INVAL);
        assert_eq!(e.status(), Status::Error);
        assert_eq!(
            e.detail(),
            "reserving the GPU address range: Invalid argument (errno 22)"
        );
    }
}
