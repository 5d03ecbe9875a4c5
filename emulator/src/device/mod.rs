//! The emulated device: a mock of `/dev/kfd` with the kernel's semantics, for machines without
//! an AMD GPU.
//!
//! [`EmulatedKfd`] implements [`KfdDriver`], so the Linux backend drives it exactly as it drives
//! the real `/dev/kfd`: ioctl argument structs of [`hsa_linux::kfd::abi`] in, errno out. Semantics
//! follow linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` (`kfd_ioctl` and the per-ioctl
//! handlers), `kfd_events.c` and `kfd_process_queue_manager.c`, and so does the shape:
//!
//! - [`AMDKFD_IOCTLS`] is amdkfd's ioctl table (`amdkfd_ioctls[]`: indexed by number, rows of
//!   command, handler, name and flags) and `kfd_ioctl`'s checks (the `chardev` module): a
//!   request's size must be its `_IOC_SIZE` (`EINVAL`); the device looks at its number only,
//!   so its type byte and direction are the table's ([`amdkfd_table_command`]: the argument
//!   comes back for a command that returns one, whatever the request says), and a different
//!   encoded size is accepted (the argument is zero-extended or truncated to the struct; a
//!   read-only command's starts all zero). Every number in amdkfd's range
//!   ([`AMDKFD_COMMAND_START`]..[`AMDKFD_COMMAND_END`]) has a row; a number outside it (0, or
//!   from [`AMDKFD_COMMAND_END`] on: among them the ROCm 5.x kernels' own 0x80 range) is
//!   `EINVAL`, as `kfd_ioctl` answers it before Linux 6.18.
//! - The handlers live by object: `process` (version, apertures, memory policy, scratch,
//!   ACQUIRE_VM, trap handler, tile config, XNACK, RUNTIME_ENABLE), `debug` (DBG_TRAP), `clock`
//!   (GET_CLOCK_COUNTERS and the GPU clock every engine reads), `events`, `memory` (buffer
//!   objects), `dmabuf`, `queue_manager` (queues, CU masks), `sdma` (SDMA queues and their
//!   engine), [`drm`] (the render node). A new ioctl is one table row and one handler.
//! - Unknown `gpu_id`, memory handle, queue id or event id: `EINVAL`. A user pointer (device
//!   id arrays, event arrays, aperture arrays, CU masks) that is not mapped: `EFAULT` (copies go
//!   through `/proc/self/mem`, as `copy_from_user` would fault).
//! - Memory: VRAM and GTT are backed by memfd pages the device maps for itself; the user maps
//!   them with `mmap(RenderNode(gpu_id), mmap_offset, len, Some(va))`. USERPTR registers the
//!   caller's pages (which must stay mapped until FREE). Sizes beyond the topology's VRAM bank
//!   (per GPU) or system bank (CPU nodes) are `ENOMEM`. The device reaches an allocation only
//!   after `MAP_MEMORY_TO_GPU` for that GPU (as GPUVM mappings work). Freeing memory a live
//!   queue uses (ring, `amd_queue_t`) or the event page is `EBUSY`.
//! - Queues: AQL compute, PM4 compute and SDMA. Each AQL queue is served by a thread running the core's packet processor
//!   ([`hsa_core::packet_processor`]) that watches the queue's doorbell (its word of the GPU's
//!   doorbell page, which the user maps from `/dev/kfd`), its write index and its next
//!   packet header, as a command processor does: nothing but memory tells it that packets
//!   arrived (the polling policy is in the `queue` module's docs).
//!   A process may have 127 queues on a GPU (255 on gfx94x/gfx950), as amdkfd; one more is
//!   `ENOSPC`. PM4 compute queues (`KFD_IOC_QUEUE_TYPE_COMPUTE`: a ring of dwords, a 64-bit
//!   write pointer in dwords that the doorbell carries, a 32-bit read pointer the CP writes)
//!   are served by a thread running the PM4 engine over the ring (the `pm4` module's docs:
//!   the packets and registers it runs, dispatches launched from the compute registers).
//!   SDMA queues (`KFD_IOC_QUEUE_TYPE_SDMA`, `_SDMA_XGMI`: a byte ring, 64-bit
//!   read and write pointers, a doorbell that takes the write pointer) are served by the
//!   emulated SDMA engine, one thread each (the `sdma` module's docs: the packets it runs);
//!   a GPU has `num_sdma_engines` (XGMI: `num_sdma_xgmi_engines`) times
//!   `num_sdma_queues_per_engine` of them, as amdkfd's SDMA queue bitmap; one more is
//!   `ENOMEM`. The device counts the SDMA packets it ran ([`ExecutionStats::sdma_packets`]).
//! - Kernel dispatches ([`ExecutionMode`]): by default the kernel's real machine code runs in
//!   the GFX9 wave interpreter of [`crate::gfx9::exec`] when the GPU's ISA is one it runs
//!   ([`Gfx9Target::from_processor`]: gfx900 and its variants, gfx906, gfx908, gfx90a,
//!   gfx940/941/942): the kernel descriptor at the packet's kernel object and the code are read
//!   from GPU memory, the dispatch and queue pointers are the packet's and `amd_queue_t`'s
//!   device addresses, and the work-groups run on several host threads. Otherwise (another
//!   ISA) the host implementation registered for the packet's kernel object
//!   ([`EmulatedKfd::register_kernel`]) runs instead, when there is one. The device knows no
//!   symbols: a kernel is its kernel descriptor in GPU memory, and messages name it by its
//!   registration's label or its kernel object. `HSA_RT_EMULATION=host` (or [`EmulatedKfd::set_execution_mode`]) runs
//!   host implementations only.
//! - Caches: none by default (every store is visible to every reader at once). With the
//!   cache model on ([`EmulatedKfd::set_cache_model`], [`CACHE_MODEL_ENV`]) each GPU's waves
//!   reach coarse-grained memory through an L2 that only a packet's system-scope fences, the
//!   ISA's `buffer_wbl2`/`buffer_invl2`/`buffer_inv` and PM4 cache actions make coherent, as
//!   on silicon (the `l2` module's docs).
//! - CU masks: each compute queue keeps its per-engine CU enable masks (every CU at
//!   CREATE_QUEUE; SET_CU_MASK maps the user's mask as amdkfd does, [`cu_mask`]); the
//!   interpreter runs each work-group on an enabled CU, round robin, and gives each wave its
//!   `HW_REG_HW_ID` ([`crate::gfx9::hwid`]); [`EmulatedKfd::compute_static_thread_mgmt`]
//!   reads the masks back.
//! - AMD PM4-IB vendor packets (ROCR's cache invalidation after loading code, tinygrad's
//!   command buffers with `AMD_AQL=1`) run in the CP's PM4 engine, the one a PM4 queue's ring
//!   runs in (the `pm4` module's docs list the packets); any other PM4 stops the queue with
//!   `INVALID_PACKET_FORMAT`.
//! - Events: see [`events`](self) module docs; mailbox slots start at all-ones
//!   (`UNSIGNALED_EVENT_SLOT`).
//!
//! - Sharing: `EXPORT_DMABUF` of a VRAM or GTT buffer object is a new descriptor of its memfd
//!   (`EPERM` for USERPTR memory, as amdgpu); `IMPORT_DMABUF` of such a descriptor (from this
//!   process or, through `pidfd_getfd`, another one's device) makes those pages a buffer
//!   object of this device at the address given, which the user maps for the host through the
//!   descriptor itself (`MapTarget::DmaBuf`). A descriptor that is not an emulated device's
//!   export is `EINVAL`, as amdgpu refuses a foreign dma-buf.
//! - `SET_TRAP_HANDLER` records the trap handler ([`EmulatedKfd::trap_handler`]);
//!   `GET_TILE_CONFIG` answers a gfx9 GPU's empty tiling tables (ROCR's image manager);
//!   `MMIO_REMAP` memory is the GPU's one MMIO page, mapped from `/dev/kfd` at the offset
//!   the allocation returns (`KFD_MMAP_TYPE_MMIO | KFD_MMAP_GPU_ID(gpu_id)`).
//!
//! Emulation limits (said aloud): `UPDATE_QUEUE` cannot move a queue to another ring
//! (`EINVAL`); a ring smaller than 1024 bytes is `EINVAL` (the kernel clamps it); ACQUIRE_VM is
//! not required before allocating; CRIU_OP is `EACCES` (every process is treated as lacking
//! `CAP_CHECKPOINT_RESTORE` and `CAP_SYS_ADMIN`); the first debugger interface's requests are
//! `EPERM`, as since Linux 6.2; DBG_TRAP is answered as amdkfd answers it under the hardware
//! scheduler for this process (another process's pid: the `debug` module's one
//! approximation), but the emulated waves cannot be halted, trapped or watched (no wave-launch
//! override, normal launch mode only, no address-watch slot) and a suspended queue's dispatch
//! in progress runs to its end; GWS changes nothing in how shaders run (no `ds_gws_*`);
//! the CP saves no waves, so GET_QUEUE_WAVE_STATE finds nothing saved; the SMI events
//! raised are VM faults, GPU resets, SVM unmaps and SVM prefetch migrations (the `smi`
//! module); an SVM prefetch moves a range's location, which is bookkeeping only (emulated
//! VRAM is host memory, the bytes stay put), and nothing migrates on a GPU or CPU fault (the
//! `svm` module). The interface version is
//! [`EMULATED_KFD_MINOR_VERSION`] (1.17; its docs say what each minor past 1.11 needs here
//! and what stops it going higher).

use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::gfx9::aperture::Apertures;
use crate::gfx9::Gfx9Target;
use hsa_core::platform::HeapType;
use hsa_core::runtime::agent::amdkfd_queues_per_process;
use hsa_core::{error, Error, GpuVa, Status};
use rustix::io::Errno;
use zerocopy::{FromBytes, IntoBytes};

use hsa_linux::device::ContextSaveAreaHeader;
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use hsa_linux::topology::Topology;

mod chardev;
mod clock;
mod debug;
pub use hsa_core::wire::cu_mask;
mod dmabuf;
pub mod drm;
mod events;
#[cfg(feature = "_fuzz")]
#[doc(hidden)]
pub mod fuzz;
pub mod gem;
mod guarded;
pub mod host_kernels;
mod interp;
pub mod ip_discovery;
mod kernel;
mod l2;
pub use l2::CacheStats;
mod mem;
mod memory;
pub mod model;
mod pm4;
mod process;
mod profile;
mod queue;
mod queue_manager;
pub mod record;
mod sdma;
mod smi;
mod svm;

pub use chardev::{
    amdkfd_ioctl, amdkfd_table_command, AmdkfdIoctlDesc, AMDKFD_COMMAND_END, AMDKFD_COMMAND_START,
    AMDKFD_IOCTLS, KFD_IOC_FLAG_CHECKPOINT_RESTORE,
};
pub(crate) use clock::monotonic_ns;
pub use clock::CLOCK_FREQUENCY_HZ;
pub use events::{EVENT_PAGE_BYTES, FIRST_NONSIGNAL_EVENT_ID, UNSIGNALED_EVENT_SLOT};
/// `kfd_ioctl.h`'s `GET_TILE_CONFIG` and `SET_TRAP_HANDLER` arguments, defined with the rest of
/// the ABI in [`hsa_linux::kfd::abi`] (re-exported where this device used to define them).
pub use hsa_linux::kfd::abi::{
    GetTileConfigArgs, SetTrapHandlerArgs, AMDKFD_IOC_GET_TILE_CONFIG, AMDKFD_IOC_SET_TRAP_HANDLER,
};
pub use interp::run_kernel_dispatch;
pub use kernel::DispatchContext;
pub use memory::MAX_MAP_DEVICES;
pub use process::{
    AMDKFD_IOC_DBG_TRAP, EMULATED_KFD_MINOR_VERSION, MACRO_TILE_MODE_ENTRIES, TILE_MODE_ENTRIES,
};
pub use profile::{
    builtin_profile, builtin_topology, builtin_topology_for, complete_capture,
    fill_recommended_sdma_engines, recommended_sdma_engines, BUILTIN_GPU_ID, BUILTIN_PROFILES,
    BUILTIN_SYSTEM_BYTES, BUILTIN_VRAM_BYTES,
};
pub use queue_manager::{
    CreateQueueArgs17, AMDKFD_IOC_CREATE_QUEUE_17, KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
    MAX_QUEUES_PER_PROCESS,
};

use events::Events;
use mem::{Backing, UserMemory, PAGE_BYTES};
use memory::{Allocs, MemoryFault};
use queue_manager::QueueEntry;

/// Size of a GPU's doorbell page on `/dev/kfd`, bytes (the backend's constant: 1024 queues
/// of one 64-bit doorbell).
pub use hsa_linux::device::DOORBELL_PAGE_BYTES;

/// Counts of live objects, for tests that check nothing leaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveHandles {
    /// Live buffer objects (ALLOC_MEMORY_OF_GPU minus FREE).
    pub memory: usize,
    /// Live queues.
    pub queues: usize,
    /// Live events.
    pub events: usize,
}

/// How the emulated device runs kernel dispatches.
///
/// Selected per device with [`EmulatedKfd::set_execution_mode`]; the initial mode comes from
/// the environment variable `HSA_RT_EMULATION`: unset or empty for
/// [`ExecutionMode::Interpret`], `interpret` for [`ExecutionMode::InterpretOnly`], `host` for
/// [`ExecutionMode::HostOnly`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecutionMode {
    /// Run the kernel's machine code in the GFX9 interpreter; machine code that fails (an
    /// encoding the interpreter does not implement, a memory fault) stops the queue with the
    /// interpreter's error, never a host implementation. Only on a GPU whose ISA the
    /// interpreter does not run (it runs gfx900 and its variants, gfx906, gfx908, gfx90a and gfx940/941/942) does a host implementation
    /// registered for the kernel object run instead, and each such dispatch says so on
    /// stderr; without one the dispatch stops the queue with `INVALID_ISA`.
    #[default]
    Interpret,
    /// As [`ExecutionMode::Interpret`], without the fallback: on a GPU whose ISA the
    /// interpreter does not run the dispatch stops the queue with `INVALID_ISA` even when a
    /// host implementation is registered. What `HSA_RT_EMULATION=interpret` asks for.
    InterpretOnly,
    /// Run only host implementations registered by kernel object (a kernel without one stops
    /// the queue with `INVALID_PACKET_FORMAT`).
    HostOnly,
}

/// [`ExecutionMode`] as stored in `Device::mode`.
fn mode_code(mode: ExecutionMode) -> u8 {
    match mode {
        ExecutionMode::Interpret => 0,
        ExecutionMode::HostOnly => 1,
        ExecutionMode::InterpretOnly => 2,
    }
}

impl ExecutionMode {
    /// The mode named by a value of `HSA_RT_EMULATION` (a choice,
    /// [`hsa_linux::env::parse_choice`]): unset or empty → Interpret, `interpret` →
    /// InterpretOnly, `host` → HostOnly.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] naming the variable, the value and the accepted values for
    /// anything else (a value that is not UTF-8 too).
    pub fn parse_env(value: Option<&std::ffi::OsStr>) -> Result<ExecutionMode, Error> {
        let modes = [
            ("interpret", ExecutionMode::InterpretOnly),
            ("host", ExecutionMode::HostOnly),
        ];
        Ok(
            hsa_linux::env::parse_choice(hsa_linux::env::EMULATION_ENV, value, &modes)?
                .unwrap_or_default(),
        )
    }

    /// [`ExecutionMode::parse_env`] of a set value.
    ///
    /// # Errors
    /// As [`ExecutionMode::parse_env`].
    pub fn parse(value: &str) -> Result<ExecutionMode, Error> {
        ExecutionMode::parse_env(Some(std::ffi::OsStr::new(value)))
    }

    /// The mode from the environment variable `HSA_RT_EMULATION`
    /// ([`ExecutionMode::parse_env`]).
    ///
    /// # Errors
    /// As [`ExecutionMode::parse_env`].
    pub fn from_env() -> Result<ExecutionMode, Error> {
        ExecutionMode::parse_env(std::env::var_os(hsa_linux::env::EMULATION_ENV).as_deref())
    }
}

/// What the device's kernel executors did since it was made (all queues).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecutionStats {
    /// Dispatches the GFX9 interpreter ran to completion (AQL kernel dispatch packets and
    /// PM4 `DISPATCH_DIRECT`/`_INDIRECT`).
    pub interpreted_dispatches: u64,
    /// Dispatches a host implementation ran (in HostOnly mode or as a fallback).
    pub host_dispatches: u64,
    /// Work-groups the interpreter completed, counted as they complete (a chunk of a
    /// dispatch at a time): a dispatch still running, or one that failed, counts those it
    /// completed so far. A tool's progress display reads it while it waits.
    pub workgroups: u64,
    /// Wave-instructions the interpreter executed (one per instruction per wave).
    pub instructions: u64,
    /// Lane-instructions: the sum over executed instructions of the active lanes.
    pub lane_instructions: u64,
    /// Wall time spent in interpreted dispatches, ns.
    pub interpreter_ns: u64,
    /// PM4 packets the command processor executed (from PM4 queues' rings and AMD PM4-IB
    /// vendor packets), indirect buffers and their contents each counted.
    pub pm4_packets: u64,
    /// SDMA packets the SDMA queues executed (all opcodes, `NOP` included).
    pub sdma_packets: u64,
    /// Instructions the interpreter decoded: each kernel's once per queue thread (and worker
    /// thread) while its code bytes stay the same, not once per dispatch
    /// ([`DecodeCache`](crate::gfx9::exec::DecodeCache)).
    pub decoded_instructions: u64,
    /// Code pages whose decoded instructions were dropped because their bytes had changed
    /// since they were decoded (code rewritten, or other code loaded at the address).
    pub invalidated_code_pages: u64,
    /// Kernel code bytes the interpreter read from device memory to run dispatches: each
    /// code page (4 KiB and the 12 bytes past it) a dispatch's waves reach, once per dispatch
    /// and worker thread, never the whole code object
    /// ([`DecodeCache`](crate::gfx9::exec::DecodeCache)).
    pub code_bytes_read: u64,
}

#[derive(Default)]
struct StatCounters {
    interpreted: AtomicU64,
    host: AtomicU64,
    workgroups: AtomicU64,
    instructions: AtomicU64,
    lane_instructions: AtomicU64,
    interpreter_ns: AtomicU64,
    pm4_packets: AtomicU64,
    sdma_packets: AtomicU64,
    decoded: AtomicU64,
    invalidated_pages: AtomicU64,
    code_bytes_read: AtomicU64,
}

/// The environment variable that turns the cache model on for every emulated device made
/// after it is read ([`EmulatedKfd::set_cache_model`]): a switch, `1` on, `0`, empty or unset
/// off.
pub const CACHE_MODEL_ENV: &str = "HSA_RT_CACHE_MODEL";

/// The cache model's initial state from [`CACHE_MODEL_ENV`] (a switch,
/// [`hsa_linux::env::switch`]).
///
/// # Errors
/// [`Status::InvalidArgument`] naming the variable and the accepted values for any other
/// value.
fn cache_model_from_env() -> Result<bool, Error> {
    hsa_linux::env::switch(CACHE_MODEL_ENV)
}

/// One emulated GPU.
#[derive(Debug)]
struct Gpu {
    gpu_id: u32,
    vram_bytes: u64,
    /// Most queues the process may have on this GPU (amdkfd's per-process limit).
    max_queues: u32,
    lds_bytes: u32,
    doorbells: Arc<Backing>,
    /// The GPU's remapped MMIO page (amdgpu's `rmmio_remap`: the HDP flush registers), which
    /// `MMIO_REMAP` buffer objects stand for and `/dev/kfd` maps at
    /// `KFD_MMAP_TYPE_MMIO | KFD_MMAP_GPU_ID(gpu_id)`. Writes land in memory and do nothing:
    /// the emulated device has no HDP to flush.
    mmio: Arc<Backing>,
    /// Its shader engines, arrays and CUs (from the topology node).
    layout: cu_mask::ShaderLayout,
    /// The XCCs of its partition (the node's `num_xcc`, at least 1) when its queues have one
    /// MQD per XCC (`hsa_core::wire::mqd::has_xcc_mqds`: GC 9.4.3, 9.4.4, 9.5.0); `None` for
    /// one MQD per queue.
    xccs: Option<u32>,
    /// amdkfd's `current_logical_xcc_start`: counts up by one per compute queue made on it.
    logical_xcc_start: AtomicU32,
    /// The ISA the interpreter runs for it; `None` for an ISA [`Gfx9Target::from_processor`] does not know.
    target: Option<Gfx9Target>,
    /// The ISA's name (`gfx90a`), or `gfx_target_version N` when it has none.
    isa: String,
    /// The width of its SDMA engines' count fields.
    sdma_count_width: sdma::CountWidth,
    /// Its `GB_ADDR_CONFIG` ([`profile::gb_addr_config`]): what `GET_TILE_CONFIG` reports
    /// and the interpreter lays swizzled images out with.
    gb_addr_config: u32,
    /// Whether it runs with SRAM ECC on: its node's `capability` has
    /// `HSA_CAP_SRAM_EDCSUPPORTED` (or the older bit) and its processor has SRAMECC
    /// ([`hsa_core::isa::TargetId::of_node`]'s rule); D16 loads then zero the half they do
    /// not load.
    sramecc: bool,
    /// This process's FLAT apertures on it: the `SH_MEM_BASES` amdkfd programs for the
    /// process, which `GET_PROCESS_APERTURES_NEW` reports and the interpreter's FLAT
    /// instructions and `src_shared_base`/`src_private_base` use.
    apertures: Apertures,
    /// Its L2, when the cache model is on ([`Device::cache_model`]).
    l2: l2::L2,
}

/// The device state shared with the processor threads.
pub(crate) struct Device {
    topology: Topology,
    gpus: Vec<Gpu>,
    system_bytes: u64,
    user: UserMemory,
    pub(crate) allocs: RwLock<Allocs>,
    /// The KFD events, and the threads blocked in `WAIT_EVENTS` on them (each woken only by
    /// its own events).
    pub(crate) events: Mutex<Events>,
    queues: Mutex<BTreeMap<u32, QueueEntry>>,
    /// The error each queue's CP stopped it with, by queue id: the device's own log (what
    /// amdkfd and the GPU print to the kernel log), kept until a new queue takes the id.
    queue_errors: Mutex<HashMap<u32, Error>>,
    /// The trap handler (TBA, TMA) set on each GPU by SET_TRAP_HANDLER, by gpu_id.
    trap_handlers: Mutex<HashMap<u32, (u64, u64)>>,
    pub(crate) kernels: RwLock<kernel::Kernels>,
    ioctls: AtomicU64,
    faults: Mutex<Vec<(u64, Errno)>>,
    xnack: AtomicI32,
    /// Whether the runtime is enabled (`RUNTIME_ENABLE` with `KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK`
    /// and no disable since: amdkfd's `runtime_info.runtime_state`).
    runtime_enabled: AtomicBool,
    /// The process's debug-trap state (`DBG_TRAP`) and the runtime's info (lock after
    /// `queues`).
    debug: debug::Debugger,
    /// The process's SVM ranges (`AMDKFD_IOC_SVM`).
    svm: Mutex<svm::SvmRanges>,
    /// The render nodes' GEM objects and `GEM_VA` mappings (lock before `allocs`).
    pub(crate) gem: Mutex<gem::GemFiles>,
    /// The readers of the GPUs' system-management events (`SMI_EVENTS`).
    smi: Mutex<smi::SmiClients>,
    /// 0 = Interpret, 1 = HostOnly.
    mode: AtomicU8,
    /// Host threads per interpreted dispatch.
    threads: AtomicUsize,
    /// Whether the cache model is on ([`l2`]): waves reach coarse-grained memory through
    /// their GPU's L2, which only fences make coherent.
    cache_model: AtomicBool,
    stats: StatCounters,
    /// Where each GPU's signal events go when another KFD owns the events: AMD's model
    /// interface (`crate::model`), whose host (libhsakmt in model mode) keeps the event table
    /// and takes the event id through its `set_event` callback. Empty otherwise: the events
    /// are this device's own table's.
    event_sinks: RwLock<HashMap<u32, EventSink>>,
}

/// A receiver of one GPU's signal events (the event id of a completion signal, an SDMA trap
/// or `s_sendmsg(MSG_INTERRUPT)`), in place of the emulated amdkfd's event table.
pub(crate) type EventSink = Arc<dyn Fn(u32) + Send + Sync>;

impl Device {
    /// The shader sequencer's message interrupt (`s_sendmsg sendmsg(MSG_INTERRUPT)`, M0[22:0]
    /// as `data`), as amdkfd handles it (`kfd_int_process_v9.c`:
    /// `kfd_signal_event_interrupt(pasid, data, 23)`) — the same event path as the CP's
    /// end-of-pipe interrupt: event `data` when its mailbox slot was written, else every
    /// signal event whose slot was; waiters are woken.
    pub(crate) fn sq_message_interrupt(&self, gpu_id: u32, data: u32) {
        if let Some(sink) = self.event_sink(gpu_id) {
            return sink(data & 0x7F_FFFF);
        }
        lock(&self.events).end_of_pipe_interrupt(data & 0x7F_FFFF);
    }

    /// GPU `gpu_id`'s [`EventSink`], when its events go to another KFD.
    pub(crate) fn event_sink(&self, gpu_id: u32) -> Option<EventSink> {
        self.event_sinks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&gpu_id)
            .cloned()
    }

    pub(crate) fn mode(&self) -> ExecutionMode {
        match self.mode.load(Ordering::Relaxed) {
            1 => ExecutionMode::HostOnly,
            2 => ExecutionMode::InterpretOnly,
            _ => ExecutionMode::Interpret,
        }
    }

    fn gpu(&self, gpu_id: u32) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id)
    }

    /// GPU `gpu_id`'s L2 when the cache model is on ([`l2`]), else `None`: waves then reach
    /// memory directly.
    pub(crate) fn l2(&self, gpu_id: u32) -> Option<&l2::L2> {
        if !self.cache_model.load(Ordering::Relaxed) {
            return None;
        }
        self.gpu(gpu_id).map(|g| &g.l2)
    }

    /// The CP's cache action for a packet's acquire fence of `scope` on GPU `gpu_id`, applied
    /// before the packet runs (AMDGPUUsage, gfx90a/gfx942 memory model): at system scope the
    /// L2 drops every clean line, so the packet's kernel reads what the host and the other
    /// agents wrote. Agent scope and below touch only the caches the model does not have
    /// (L1, scalar, instruction). Nothing when the cache model is off.
    pub(crate) fn acquire_fence(&self, gpu_id: u32, scope: hsa_core::abi::packet::FenceScope) {
        if scope == hsa_core::abi::packet::FenceScope::System {
            if let Some(l2) = self.l2(gpu_id) {
                l2.invalidate();
            }
        }
    }

    /// The CP's cache action for a packet's release fence of `scope` on GPU `gpu_id`, applied
    /// after the packet ran and before its completion signal: at system scope the L2 writes
    /// every dirty byte back to memory, so the host, the SDMA engines and the other GPUs see
    /// what the kernel wrote. Agent scope and below do nothing to the L2. With the cache model
    /// off the L2 is empty (but for a dispatch that started with it on) and this costs a lock.
    pub(crate) fn release_fence(&self, gpu_id: u32, scope: hsa_core::abi::packet::FenceScope) {
        if scope == hsa_core::abi::packet::FenceScope::System {
            self.write_back_l2(gpu_id);
        }
    }

    /// Writes GPU `gpu_id`'s dirty L2 bytes to memory ([`l2::L2::write_back`]). Also when the
    /// cache model was turned off since: a dispatch that was running then finishes with the L2
    /// it started with, and its lines reach memory here (an empty L2 costs one lock).
    pub(crate) fn write_back_l2(&self, gpu_id: u32) {
        if let Some(l2) = self.gpu(gpu_id).map(|g| &g.l2) {
            // The allocation table's read lock per line, under the L2's lock: the order of
            // every path into the L2 (a queued writer cannot deadlock the two).
            l2.write_back(&|line| {
                self.allocs
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .containing(line, 1)
                    .map(|a| l2::Placement::of(a, gpu_id))
            });
        }
    }

    /// GPU `gpu_id`, or `EINVAL` as amdkfd answers a `gpu_id` the process has no device data
    /// for (`kfd_process_device_data_by_id`).
    fn gpu_by_id(&self, gpu_id: u32) -> Result<&Gpu, Errno> {
        self.gpu(gpu_id).ok_or(Errno::INVAL)
    }

    /// What the device does when its CP stopped queue `queue_id` (on GPU `gpu_id`) with
    /// `error` — the processor has already stored the status into the queue's
    /// `amd_queue_t.queue_inactive_signal`, as ROCR's CP firmware does:
    /// - it keeps the error, with the detail the interpreter knows (packet, kernel,
    ///   instruction, address), in its own log ([`EmulatedKfd::queue_error`]), and logs it
    ///   at error level (`log::error!`; what the kernel log holds on a real machine);
    /// - it sets the process's KFD events as amdkfd does: for a memory fault every
    ///   `KFD_IOC_EVENT_MEMORY` event ([`Device::raise_vm_fault`]) — unless the CP raised it
    ///   already (`vm_fault_raised`) between storing the inactive signal's value and waking
    ///   its waiters, as a GPU's VM interrupt comes before anyone learns of the stop —; for
    ///   an error an exception code stands for, in a process whose runtime is enabled
    ///   (RUNTIME_ENABLE, ROCR 6 and later), the exception to the runtime through the queue's
    ///   context save area ([`Device::send_exception_to_runtime`] with `ctx_save_area`, the
    ///   area's address or 0), as amdkfd sends the CP's `CP_BAD_OPCODE` and the trap
    ///   handler's wave errors; failing that, or for any other error, every
    ///   `KFD_IOC_EVENT_HW_EXCEPTION` event,
    ///   with `kfd_hsa_hw_exception_data` (the GPU, a per-engine reset caused by a hang, no
    ///   memory lost: the queue's engine stopped, nothing else did;
    ///   `kfd_signal_hw_exception_event`). A process that created no such event is told
    ///   nothing more (amdkfd logs "got unhandled exception").
    pub(crate) fn report_queue_error(
        &self,
        queue_id: u32,
        gpu_id: u32,
        error: &Error,
        fault: Option<MemoryFault>,
        vm_fault_raised: bool,
        ctx_save_area: u64,
    ) {
        log::error!(
            "queue {queue_id} stopped with {}: {}",
            error.status().c_name(),
            error.detail()
        );
        self.record_queue_error(queue_id, error);
        if error.status() == Status::MemoryFault && self.event_sink(gpu_id).is_some() {
            // The model interface's host (libhsakmt in model mode) has no memory events: the
            // runtime would wait for ever on a queue that will never finish (an SDMA copy's
            // signal). ROCR ends the process on a GPU memory fault; so does the model.
            eprintln!(
                "hsa-emu model: memory access fault by GPU {gpu_id:#x} (queue {queue_id}): {}; \
                 the model interface cannot report it to the runtime, so the process ends, \
                 as ROCR ends it on a GPU memory fault",
                error.detail()
            );
            std::process::abort();
        }
        if error.status() == Status::MemoryFault {
            if !vm_fault_raised {
                self.raise_vm_fault(gpu_id, fault);
            }
            return;
        }
        // kfd_set_dbg_ev_from_interrupt: a debugger that takes the exception gets it alone.
        if let Some(ec) = exception_code(error.status()) {
            if debug::raise_queue_exception(self, queue_id, kfd_ec_mask(ec)) {
                return;
            }
        }
        if self.runtime_enabled.load(Ordering::SeqCst) {
            if let Some(ec) = exception_code(error.status()) {
                if self.send_exception_to_runtime(queue_id, gpu_id, ctx_save_area, kfd_ec_mask(ec))
                {
                    return;
                }
            }
        }
        let mut data = [0u8; 32];
        let d = HsaHwExceptionData {
            reset_type: KFD_HW_EXCEPTION_PER_ENGINE_RESET,
            reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
            memory_lost: 0,
            gpu_id,
        };
        data[..16].copy_from_slice(d.as_bytes());
        lock(&self.events).signal_type(KFD_IOC_EVENT_HW_EXCEPTION, data);
    }

    /// amdkfd's report of a queue exception to a process whose runtime is enabled and that no
    /// debugger is attached to (`kfd_set_dbg_ev_from_interrupt` → `kfd_send_exception_to_runtime`,
    /// linux `kfd_debug.c`, `kfd_process.c`): ORs `error_reason` (`KFD_EC_MASK` bits) into the
    /// 64-bit word whose address the header of the queue's context save area
    /// (`ctx_save_area`, `struct kfd_context_save_area_header`) holds in `err_payload_addr`,
    /// then sets the signal event its `err_event_id` names. ROCR 7 points these at its queue's
    /// exception signal and event, whose handler maps the bits to the queue error callback's
    /// status. `false`, with a warning naming what is wrong, when the queue has no save area,
    /// the header or the word is not in memory the GPU reaches, or the event is not a signal
    /// event (amdkfd's `get_user`/`kfd_set_event` fail there too): the caller reports the
    /// error another way.
    pub(crate) fn send_exception_to_runtime(
        &self,
        queue_id: u32,
        gpu_id: u32,
        ctx_save_area: u64,
        error_reason: u64,
    ) -> bool {
        let warn = |why: String| {
            log::warn!(
                "queue {queue_id}: exception {error_reason:#x} not sent to the runtime: {why}"
            );
            false
        };
        if ctx_save_area == 0 {
            return warn("the queue has no context save area".into());
        }
        let header = {
            let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
            let mut bytes = [0u8; size_of::<ContextSaveAreaHeader>()];
            let read = allocs
                .device_region(gpu_id, ctx_save_area, bytes.len() as u64)
                .map(|r| r.try_read_at(0, &mut bytes));
            match read {
                Some(Ok(())) => ContextSaveAreaHeader::read_from_bytes(&bytes)
                    .expect("the buffer is the header's size"),
                _ => {
                    return warn(format!(
                        "the context save area header at {ctx_save_area:#x} is not in memory"
                    ))
                }
            }
        };
        let payload = header.error_reason;
        {
            let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
            let word = allocs
                .device_region(gpu_id, payload, 8)
                .filter(|_| payload % 8 == 0);
            match word.as_ref().and_then(|r| r.atomic_u64(0)) {
                // Release pairs with the runtime's Acquire load of its exception signal.
                Some(w) => {
                    w.fetch_or(error_reason, Ordering::Release);
                }
                None => {
                    return warn(format!(
                        "err_payload_addr {payload:#x} is not an aligned 64-bit word in memory"
                    ))
                }
            }
        }
        let mut events = lock(&self.events);
        match events.table.get(&header.error_event_id) {
            Some(e) if e.event_type == KFD_IOC_EVENT_SIGNAL => {
                events.set(header.error_event_id);
                true
            }
            _ => warn(format!(
                "err_event_id {} is not a signal event",
                header.error_event_id
            )),
        }
    }

    /// Keeps `error` as queue `queue_id`'s in the device's log of queue errors
    /// ([`EmulatedKfd::queue_error`]).
    pub(crate) fn record_queue_error(&self, queue_id: u32, error: &Error) {
        lock(&self.queue_errors).insert(queue_id, error.clone());
    }

    /// A GPU memory fault (the VM's fault interrupt, `kfd_signal_vm_fault_event`): sets every
    /// `KFD_IOC_EVENT_MEMORY` event of the process with `kfd_hsa_memory_exception_data` (the
    /// faulting address, the GPU, `NotPresent` — the device has no read-only or
    /// non-executable pages —, or `imprecise` when the address is unknown).
    pub(crate) fn raise_vm_fault(&self, gpu_id: u32, fault: Option<MemoryFault>) {
        let d = HsaMemoryExceptionData {
            failure: MemoryExceptionFailure {
                not_present: u32::from(fault.is_some()),
                read_only: 0,
                no_execute: 0,
                imprecise: u32::from(fault.is_none()),
            },
            va: fault.map_or(0, |f| f.address),
            gpu_id,
            error_type: KFD_MEM_ERR_NO_RAS,
        };
        let mut data = [0u8; 32];
        data.copy_from_slice(d.as_bytes());
        // A debugger that takes EC_DEVICE_MEMORY_VIOLATION gets the fault instead; it may
        // hand it on with DBG_TRAP's SEND_RUNTIME_EVENT.
        if !debug::raise_memory_violation(self, gpu_id, data) {
            self.signal_vm_fault(data);
        }
        lock(&self.smi).vm_fault(gpu_id);
    }

    /// Sets every `KFD_IOC_EVENT_MEMORY` event of the process with `data` (its
    /// `kfd_hsa_memory_exception_data`), as `kfd_signal_vm_fault_event` does.
    pub(crate) fn signal_vm_fault(&self, data: [u8; 32]) {
        lock(&self.events).signal_type(KFD_IOC_EVENT_MEMORY, data);
    }
}

/// The emulated `/dev/kfd` (driver name `"emulated"`). See the module docs for semantics.
/// # Example
/// The built-in MI210-like profile as a [`LinuxPlatform`](hsa_linux::LinuxPlatform)'s driver
/// ([`SelectedDevice::emulated`](crate::SelectedDevice::emulated)), its gfx9 interpreter the
/// executor ([`ExecutionMode`]; `HSA_RT_EMULATION` picks it in [`crate::open_default`]); the
/// [quick start of hsa-core](hsa_core#quick-start) dispatches a kernel on it.
/// ```
/// use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
///
/// let emulated = EmulatedKfd::new(builtin_topology())?;
/// let gpus = emulated.topology().nodes.iter().filter(|n| n.properties.gpu_id != 0).count();
/// assert_eq!(gpus, 1);
/// let device = SelectedDevice::emulated(emulated)?;
/// assert_eq!(device.platform.device_kind(), "emulated");
/// let stats = device.emulated.as_ref().map(|e| e.execution_stats().interpreted_dispatches);
/// assert_eq!(stats, Some(0));
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct EmulatedKfd {
    device: Arc<Device>,
    /// What it answered, when recording (the `record` module).
    recorder: record::Recorder,
}

impl std::fmt::Debug for EmulatedKfd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatedKfd")
            .field("gpus", &self.device.gpus)
            .field("live", &self.live_handles())
            .finish()
    }
}

/// The machine's `available_parallelism` (1 when unknown).
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The exception amdkfd reports for a queue that stopped with `status` (`enum
/// kfd_dbg_trap_exception_code`): the CP's bad-packet codes, which its `CP_BAD_OPCODE`
/// interrupt carries, and the wave errors the trap handler reports
/// (`hsa_core::queue::inactive::exception_code`, the inverse of ROCR 7's
/// `AqlQueue::ExceptionHandler` table). An unsupported and a vendor packet both come out as
/// `EC_QUEUE_PACKET_UNSUPPORTED` (ROCR reports both as `INVALID_PACKET_FORMAT`). `None` for a
/// memory fault (amdkfd's VM-fault event) and statuses no exception stands for.
fn exception_code(status: Status) -> Option<u32> {
    hsa_core::queue::inactive::exception_code(status)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl EmulatedKfd {
    /// Makes an emulated device for `topology` (e.g. [`builtin_topology`] or a captured dump),
    /// first completed by [`complete_capture`].
    /// Every node with SIMDs and a non-zero `gpu_id` becomes an emulated GPU with its VRAM
    /// banks' size and `lds_size_in_kb`, taking as many queues as amdkfd lets a process
    /// create on it (`amdkfd_queues_per_process`: 127, or 255 on gfx94x/gfx950; with its
    /// hardware scheduler amdkfd runs more queues than `num_cp_queues`, the hardware queue
    /// slots, by switching them in and out).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when the topology has no GPU node, two GPUs share a
    /// `gpu_id`, `HSA_RT_EMULATION` is set to something other than `interpret` or `host`, or
    /// `HSA_RT_CACHE_MODEL` ([`CACHE_MODEL_ENV`]) to something other than `0` or `1`; [`Status::OutOfResources`] when doorbell pages cannot be allocated;
    /// [`Status::Error`] when `/proc/self/mem` cannot be opened.
    pub fn new(topology: Topology) -> Result<Arc<EmulatedKfd>, Error> {
        // amdkfd's `kfd_init_apertures_v9`, which it uses for gfx9, gfx10 and gfx11 alike
        // (the emulated device models no older GPU).
        EmulatedKfd::with_apertures(topology, Apertures::AMDKFD_GFX9)
    }

    /// As [`EmulatedKfd::new`], with every GPU's FLAT apertures `apertures` for the process:
    /// what the process's KFD programs into `SH_MEM_BASES` (amdkfd's, or the model
    /// interface's host's, [`crate::model`]).
    pub(crate) fn with_apertures(
        mut topology: Topology,
        apertures: Apertures,
    ) -> Result<Arc<EmulatedKfd>, Error> {
        complete_capture(&mut topology);
        let mut gpus: Vec<Gpu> = Vec::new();
        for n in &topology.nodes {
            let p = &n.properties;
            if p.simd_count == 0 || p.gpu_id == 0 {
                continue;
            }
            if gpus.iter().any(|g| g.gpu_id == p.gpu_id) {
                return Err(error!(
                    Status::InvalidArgument,
                    "topology: gpu_id {:#x} appears on two nodes", p.gpu_id
                ));
            }
            let doorbells = Backing::new("hsa-emulated-doorbells", DOORBELL_PAGE_BYTES)
                .map_err(|e| error!(Status::OutOfResources, "doorbell page: {e}"))?;
            let processor = n.processor();
            gpus.push(Gpu {
                gpu_id: p.gpu_id,
                vram_bytes: n.local_memory_bytes(),
                max_queues: amdkfd_queues_per_process(p.gfx_target_version),
                lds_bytes: p.lds_size_in_kb.saturating_mul(1024),
                doorbells: Arc::new(doorbells),
                mmio: Arc::new(
                    Backing::new("hsa-emulated-mmio", PAGE_BYTES)
                        .map_err(|e| error!(Status::OutOfResources, "MMIO page: {e}"))?,
                ),
                layout: cu_mask::ShaderLayout::from_properties(p),
                xccs: hsa_core::wire::mqd::has_xcc_mqds(p.gfx_target_version)
                    .then_some(p.num_xcc.max(1)),
                logical_xcc_start: AtomicU32::new(0),
                target: processor.and_then(Gfx9Target::from_processor),
                isa: processor.map_or_else(
                    || format!("gfx_target_version {}", p.gfx_target_version),
                    |processor| processor.name().to_owned(),
                ),
                sdma_count_width: sdma::CountWidth::for_target(p.gfx_target_version),
                gb_addr_config: profile::gb_addr_config(p),
                sramecc: hsa_core::isa::TargetId::of_node(p, false)
                    .is_some_and(|t| t.sramecc == hsa_core::isa::FeatureSetting::On),
                apertures,
                l2: l2::L2::default(),
            });
        }
        if gpus.is_empty() {
            return Err(error!(
                Status::InvalidArgument,
                "topology has no GPU node (simd_count > 0 and gpu_id != 0) to emulate"
            ));
        }
        let system_bytes = topology
            .nodes
            .iter()
            .filter(|n| n.properties.simd_count == 0)
            .flat_map(|n| n.memory_banks.iter())
            .filter(|b| b.heap_type == HeapType::System)
            .fold(0u64, |a, b| a.saturating_add(b.size_bytes));
        let mode = ExecutionMode::from_env()?;
        let cache_model = cache_model_from_env()?;
        if cache_model {
            log::info!("emulated device: cache model on ({CACHE_MODEL_ENV}=1)");
        }
        let recorder = record::Recorder::from_env()?;
        let user = UserMemory::open()
            .map_err(|e| error!(Status::Error, "emulated device: open /proc/self/mem: {e}"))?;
        Ok(Arc::new(EmulatedKfd {
            device: Arc::new(Device {
                topology,
                gpus,
                system_bytes,
                user,
                allocs: RwLock::new(Allocs::default()),
                events: Mutex::new(Events::default()),
                queues: Mutex::new(BTreeMap::new()),
                queue_errors: Mutex::new(HashMap::new()),
                trap_handlers: Mutex::new(HashMap::new()),
                kernels: RwLock::new(kernel::Kernels::default()),
                ioctls: AtomicU64::new(0),
                faults: Mutex::new(Vec::new()),
                xnack: AtomicI32::new(0),
                runtime_enabled: AtomicBool::new(false),
                debug: debug::Debugger::default(),
                svm: Mutex::new(svm::SvmRanges::default()),
                gem: Mutex::new(gem::GemFiles::default()),
                smi: Mutex::new(smi::SmiClients::default()),
                mode: AtomicU8::new(mode_code(mode)),
                threads: AtomicUsize::new(default_threads()),
                cache_model: AtomicBool::new(cache_model),
                stats: StatCounters::default(),
                event_sinks: RwLock::new(HashMap::new()),
            }),
            recorder,
        }))
    }

    /// The topology the device emulates.
    pub fn topology(&self) -> &Topology {
        &self.device.topology
    }

    /// Live memory handles, queues and events.
    pub fn live_handles(&self) -> LiveHandles {
        let d = &self.device;
        LiveHandles {
            memory: d
                .allocs
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .len(),
            queues: lock(&d.queues).len(),
            events: lock(&d.events).table.len(),
        }
    }

    /// The process unmapped its CPU pages `addr..addr + len` (bytes; `munmap`, as an
    /// interposer sees it): the SVM ranges over them go, as amdkfd's MMU notifier removes
    /// them (`svm_range_unmap_from_cpu`), so the GPU reaches those pages no more and a buffer
    /// object may be allocated there again. Buffer objects are not touched (amdkfd keeps a
    /// USERPTR buffer object whose pages went; the GPU's access to them faults). Returns
    /// whether an SVM range was there. A zero `len` is nothing.
    pub fn cpu_unmapped(&self, addr: u64, len: u64) -> bool {
        len != 0 && svm::cpu_unmapped(&self.device, addr, len)
    }

    /// Number of ioctls issued so far (failed ones included).
    pub fn ioctl_count(&self) -> u64 {
        self.device.ioctls.load(Ordering::SeqCst)
    }

    /// Makes the `n`-th ioctl from now fail with `errno`, without any side effect: `n = 0` is
    /// the next ioctl, `n = 1` the one after. Several injections may be pending.
    pub fn fail_nth_ioctl(&self, n: u64, errno: Errno) {
        let at = self.device.ioctls.load(Ordering::SeqCst).saturating_add(n);
        lock(&self.device.faults).push((at, errno));
    }

    /// How kernel dispatches run from now on (dispatches already running finish as they
    /// started).
    pub fn set_execution_mode(&self, mode: ExecutionMode) {
        self.device.mode.store(mode_code(mode), Ordering::Relaxed);
    }

    /// How kernel dispatches run: `HSA_RT_EMULATION`'s mode, or the last
    /// [`EmulatedKfd::set_execution_mode`].
    pub fn execution_mode(&self) -> ExecutionMode {
        self.device.mode()
    }

    /// Host threads the interpreter spreads one dispatch's work-groups over; `0` means the
    /// machine's `available_parallelism` (the default).
    pub fn set_interpreter_threads(&self, threads: usize) {
        let n = if threads == 0 {
            default_threads()
        } else {
            threads
        };
        self.device.threads.store(n, Ordering::Relaxed);
    }

    /// Turns the cache model on or off ([`CACHE_MODEL_ENV`] sets the initial state): with it,
    /// the waves of each GPU reach coarse-grained memory through that GPU's L2, which only a
    /// packet's system-scope fences and the ISA's cache instructions (`buffer_wbl2`,
    /// `buffer_invl2`, gfx942's `buffer_inv sc1`) make coherent with the host, the SDMA engines
    /// and the other GPUs, as on silicon (AMDGPUUsage's gfx90a and gfx942 memory models); a
    /// program that forgets a fence reads stale data. Turning it off writes every dirty line
    /// back first. A dispatch running meanwhile keeps the choice it started with to its end;
    /// when the model was turned off under it, its packet's system-scope release (or the next
    /// one's, or turning the model off again) writes its lines back, so nothing is lost.
    pub fn set_cache_model(&self, on: bool) {
        let d = &self.device;
        if !on {
            for g in &d.gpus {
                d.write_back_l2(g.gpu_id);
            }
        }
        d.cache_model.store(on, Ordering::Relaxed);
    }

    /// Whether the cache model is on ([`EmulatedKfd::set_cache_model`]).
    pub fn cache_model(&self) -> bool {
        self.device.cache_model.load(Ordering::Relaxed)
    }

    /// What GPU `gpu_id`'s L2 did so far under the cache model (all zero while it was never
    /// on); `None` for a `gpu_id` the device does not have.
    pub fn cache_stats(&self, gpu_id: u32) -> Option<CacheStats> {
        self.device.gpu(gpu_id).map(|g| g.l2.stats())
    }

    /// Host threads per interpreted dispatch.
    pub fn interpreter_threads(&self) -> usize {
        self.device.threads.load(Ordering::Relaxed)
    }

    /// What the kernel executors did so far, on all queues.
    pub fn execution_stats(&self) -> ExecutionStats {
        let c = &self.device.stats;
        ExecutionStats {
            interpreted_dispatches: c.interpreted.load(Ordering::SeqCst),
            host_dispatches: c.host.load(Ordering::SeqCst),
            workgroups: c.workgroups.load(Ordering::SeqCst),
            instructions: c.instructions.load(Ordering::SeqCst),
            lane_instructions: c.lane_instructions.load(Ordering::SeqCst),
            interpreter_ns: c.interpreter_ns.load(Ordering::SeqCst),
            pm4_packets: c.pm4_packets.load(Ordering::SeqCst),
            sdma_packets: c.sdma_packets.load(Ordering::SeqCst),
            decoded_instructions: c.decoded.load(Ordering::SeqCst),
            invalidated_code_pages: c.invalidated_pages.load(Ordering::SeqCst),
            code_bytes_read: c.code_bytes_read.load(Ordering::SeqCst),
        }
    }

    /// Registers `f` as the host implementation of the kernel whose kernel object (the
    /// device address of its 64-byte kernel descriptor: what a dispatch packet's
    /// `kernel_object` holds, and what `Executable` symbol lookup returns for the kernel) is
    /// `kernel_object`, replacing an earlier registration for it. `label` names the kernel in
    /// the device's messages (e.g. `"vector_copy"`). `f` runs once per work-group. Register
    /// after loading the code object: the device knows kernels by address only.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for a kernel object that is 0 or not 64-byte aligned
    /// (AMDGPUUsage: kernel descriptors are 64-byte aligned).
    pub fn register_kernel<F>(&self, kernel_object: GpuVa, label: &str, f: F) -> Result<(), Error>
    where
        F: Fn(&mut DispatchContext<'_>) -> Result<(), Error> + Send + Sync + 'static,
    {
        if kernel_object.0 == 0 || kernel_object.0 % 64 != 0 {
            return Err(error!(
                Status::InvalidArgument,
                "kernel object {:#x} is not the address of a kernel descriptor (0 or not \
                 64-byte aligned)",
                kernel_object.0
            ));
        }
        self.device
            .kernels
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .by_object
            .insert(
                kernel_object.0,
                kernel::HostKernel {
                    label: label.to_owned(),
                    run: Arc::new(f),
                },
            );
        Ok(())
    }

    /// The error the device's command processor stopped queue `queue_id` with, with all the
    /// detail it knows (the packet, the kernel, the instruction, the faulting address): the
    /// device's own log, as the kernel log is on a real machine. The runtime learns of the
    /// error the way amdkfd tells it — the queue's `queue_inactive_signal` and a KFD memory or
    /// hardware-exception event, whose data carries the address and the GPU — so a tool that
    /// wants the detail asks the device here. Kept after the queue is destroyed, until a new
    /// queue takes the id; `None` when the queue did not stop with an error.
    pub fn queue_error(&self, queue_id: u32) -> Option<Error> {
        lock(&self.device.queue_errors).get(&queue_id).cloned()
    }

    /// The GPU node whose render node is `/dev/dri/renderD<minor>` (its
    /// `drm_render_minor`), as `(node index, gpu_id)`; `None` when no GPU has that minor.
    pub fn render_node(&self, minor: i32) -> Option<(usize, u32)> {
        self.device
            .topology
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| {
                n.properties.simd_count > 0
                    && n.properties.gpu_id != 0
                    && n.properties.drm_render_minor == minor
            })
            .map(|(i, n)| (i, n.properties.gpu_id))
    }

    /// A DRM ioctl on the render node of GPU `gpu_id`: the queries `libdrm_amdgpu` makes,
    /// answered from the topology (see [`drm`]). `arg` is the argument's copy
    /// (`_IOC_SIZE(request)` bytes); the answer is written back into it.
    ///
    /// # Errors
    /// `EINVAL` for an unknown `gpu_id`, a size that is not the request's, a request or
    /// `AMDGPU_INFO` query the render node does not answer; `ENOTTY` for a request whose
    /// type is not `'d'`; `EFAULT` when a user pointer inside the argument is not mapped.
    ///
    /// # Safety
    /// The user pointers inside the argument (`drm_version`'s string buffers,
    /// `drm_amdgpu_info.return_pointer`) are valid for writes of the sizes the argument
    /// gives, or not mapped at all (they are written through `/proc/self/mem`).
    #[allow(unsafe_code)]
    pub unsafe fn render_ioctl(
        &self,
        gpu_id: u32,
        request: u32,
        arg: &mut [u8],
    ) -> Result<(), Errno> {
        self.device.ioctls.fetch_add(1, Ordering::SeqCst);
        let before = self.recorder.on().then(|| arg.to_vec());
        let result = self
            .device
            .topology
            .nodes
            .iter()
            .find(|n| n.properties.gpu_id == gpu_id && n.properties.simd_count > 0)
            .ok_or(Errno::INVAL)
            .and_then(|node| {
                gem::ioctl(&self.device, gpu_id, request, arg)
                    .unwrap_or_else(|| drm::ioctl(node, &self.device.user, request, arg))
            });
        if let Some(before) = before {
            self.recorder.record(record::KfdCall::Ioctl {
                target: record::CallTarget::Render(gpu_id),
                request,
                before,
                after: arg.to_vec(),
                result,
            });
        }
        result
    }

    /// Starts recording every ioctl and mmap the device answers, in memory (again from
    /// nothing if it was recording); see the `record` module.
    pub fn start_recording(&self) {
        self.recorder.start();
    }

    /// The calls recorded since [`EmulatedKfd::start_recording`], in the order they were
    /// answered; empty when not recording.
    pub fn recording(&self) -> Vec<record::KfdCall> {
        self.recorder.calls()
    }

    /// The trap handler SET_TRAP_HANDLER last set on GPU `gpu_id`: its code (TBA) and memory
    /// (TMA) addresses; `None` before any. The emulated GPU records it, as amdkfd writes it
    /// into the queues' MQDs, and runs no trap handler (the interpreter stops a queue on a
    /// trap instead).
    pub fn trap_handler(&self, gpu_id: u32) -> Option<(u64, u64)> {
        lock(&self.device.trap_handlers).get(&gpu_id).copied()
    }

    /// A compute queue's MQD (`struct v9_mqd`), as the emulated amdkfd filled it at
    /// CREATE_QUEUE (amdkfd's `init_mqd` and `update_mqd`, [`V9Mqd::amdkfd_compute`]) and
    /// updated it since (UPDATE_QUEUE's priority, SET_CU_MASK's masks): the bytes its CP took
    /// the ring, pointers, doorbell and format from. `None` for an unknown or SDMA queue.
    ///
    /// [`V9Mqd::amdkfd_compute`]: hsa_core::wire::mqd::V9Mqd::amdkfd_compute
    pub fn mqd(&self, queue_id: u32) -> Option<hsa_core::wire::mqd::V9Mqd> {
        queue_manager::mqd(&self.device, queue_id)
    }

    /// A compute queue's `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` (its HQD's per-engine CU
    /// enable masks: bit `cu + 16 * sh` of word `se`, [`crate::gfx9::hwid`]), as a debugger
    /// reads them from the MQD: every CU of the GPU until SET_CU_MASK maps a user mask into
    /// them. `None` for an unknown or SDMA queue.
    pub fn compute_static_thread_mgmt(&self, queue_id: u32) -> Option<[u32; 8]> {
        queue_manager::compute_static_thread_mgmt(&self.device, queue_id)
    }
}

// The implementation safety of KfdDriver: every pointer inside an argument (device-id, event,
// aperture and CU-mask arrays) is only copied through /proc/self/mem (`UserMemory`), for at
// most the bytes the argument's counts give (EFAULT when unmapped, never a fault); a USERPTR
// range is registered only when /proc/self/maps shows it mapped readable (EFAULT otherwise);
// the apertures and events are written for at most `num_of_nodes` and `num_events` entries;
// queue memory is reached only inside allocations mapped to the GPU (`device_region`), USERPTR
// memory only inside the registered range; mmap maps at exactly the given address or where the
// kernel picks.
#[allow(unsafe_code)]
impl KfdDriver for EmulatedKfd {
    fn name(&self) -> &str {
        "emulated"
    }

    /// The ioctl, answered with amdkfd's semantics (see the module docs).
    ///
    /// # Safety
    /// As [`KfdDriver::ioctl`], relaxed to what this device needs:
    /// - `GET_PROCESS_APERTURES_NEW`'s array is valid for writes of
    ///   `min(num_of_nodes, number of GPUs)` entries for the call, or not mapped (`EFAULT`);
    /// - a `USERPTR` address is valid as the table says until FREE, or not mapped (`EFAULT`:
    ///   its pages are checked against `/proc/self/maps`);
    /// - nothing else: the pointers this device only reads (device-id arrays, CU masks) are
    ///   read through `/proc/self/mem` whatever they hold, and so are `WAIT_EVENTS`' events,
    ///   into whose entries it writes back (the exception data of memory and
    ///   hardware-exception events that fired, the 32-byte union at the start of each entry)
    ///   through `/proc/self/mem` too, `EFAULT` when unmapped; a queue's ring and `amd_queue_t` are used only inside allocations
    ///   mapped to its GPU (`EINVAL`/`EFAULT` otherwise), which cannot be freed while the queue
    ///   lives (`EBUSY`); the other addresses (`UPDATE_QUEUE`'s ring, which must not change,
    ///   EOP and save areas, scratch, `r_debug`) are not used.
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        let n = self.device.ioctls.fetch_add(1, Ordering::SeqCst);
        let before = self.recorder.on().then(|| arg.to_vec());
        let injected = {
            let mut faults = lock(&self.device.faults);
            faults
                .iter()
                .position(|&(at, _)| at == n)
                .map(|i| faults.swap_remove(i).1)
        };
        let result = match injected {
            Some(errno) => Err(errno),
            None => chardev::ioctl(&self.device, request, arg),
        };
        log::trace!("/dev/kfd ioctl {request:#x} answered: {result:?}");
        if let Some(before) = before {
            self.recorder.record(record::KfdCall::Ioctl {
                target: record::CallTarget::Kfd,
                request,
                before,
                after: arg.to_vec(),
                result,
            });
        }
        result
    }

    /// Maps the device's memfd pages of a doorbell page, the event page or a buffer object.
    ///
    /// # Safety
    /// As [`KfdDriver::mmap`].
    unsafe fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno> {
        let result = if len == 0 {
            Err(Errno::INVAL)
        } else {
            // SAFETY: the caller upholds KfdDriver::mmap's contract, which is theirs.
            unsafe {
                match target {
                    MapTarget::Kfd => chardev::mmap(&self.device, offset, len, addr),
                    MapTarget::RenderNode(gpu_id) => {
                        drm::mmap(&self.device, gpu_id, offset, len, addr)
                    }
                    // The dma-buf of an imported buffer object: its pages, from offset 0.
                    MapTarget::DmaBuf(_) if offset != 0 => Err(Errno::INVAL),
                    MapTarget::DmaBuf(fd) => mem::map_dmabuf_at(fd, addr, len),
                }
            }
        };
        if self.recorder.on() {
            self.recorder.record(record::KfdCall::Mmap {
                target: match target {
                    MapTarget::Kfd => record::CallTarget::Kfd,
                    MapTarget::RenderNode(g) => record::CallTarget::Render(g),
                    MapTarget::DmaBuf(fd) => record::CallTarget::DmaBuf(fd),
                },
                offset,
                len: len as u64,
                fixed: addr.map(|a| a.as_ptr() as u64),
                result: result.map(|p| p.as_ptr() as u64),
            });
        }
        result
    }

    /// The render node's GEM requests (PRIME import, `GEM_VA`, `GEM_MMAP`, `GEM_CLOSE`), as
    /// [`EmulatedKfd::render_ioctl`] answers them.
    ///
    /// # Safety
    /// As [`KfdDriver::render_ioctl`].
    unsafe fn render_ioctl(&self, gpu_id: u32, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: the requests KfdDriver::render_ioctl allows carry no user pointer, so the
        // inherent method's contract holds trivially.
        unsafe { EmulatedKfd::render_ioctl(self, gpu_id, request, arg) }
    }
}

impl Drop for EmulatedKfd {
    fn drop(&mut self) {
        let ids: Vec<u32> = lock(&self.device.queues).keys().copied().collect();
        for id in ids {
            let _ = queue_manager::destroy_queue(&self.device, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_linux::kfd::calls::plain_ioctl;

    /// Each queue error's exception code is the one ROCR 7.2.4's `AqlQueue::ExceptionHandler`
    /// turns back into the same status (its table, from `amd_aql_queue.cpp`); a memory fault
    /// and statuses no exception stands for have none.
    #[test]
    fn exception_codes_round_trip_through_rocr7s_table() {
        let rocr7 = |ec: u32| match ec {
            1..=3 => Status::Exception,
            4 => Status::IllegalInstruction,
            5 => Status::MemoryFault,
            6 | 33 => Status::MemoryApertureViolation,
            16 => Status::IncompatibleArguments,
            17 => Status::InvalidAllocation,
            18 => Status::InvalidCodeObject,
            20 | 23 => Status::InvalidPacketFormat,
            21 => Status::InvalidArgument,
            22 => Status::InvalidIsa,
            _ => Status::Error,
        };
        for status in [
            Status::IncompatibleArguments,
            Status::InvalidAllocation,
            Status::InvalidCodeObject,
            Status::InvalidPacketFormat,
            Status::InvalidArgument,
            Status::InvalidIsa,
            Status::IllegalInstruction,
            Status::MemoryApertureViolation,
            Status::Exception,
        ] {
            let ec = exception_code(status).unwrap();
            assert_eq!(rocr7(ec), status, "{status:?} -> {ec}");
        }
        for status in [Status::MemoryFault, Status::OutOfResources, Status::Error] {
            assert_eq!(exception_code(status), None, "{status:?}");
        }
        assert_eq!(
            kfd_ec_mask(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID),
            1 << 20
        );
    }

    fn dev() -> Arc<EmulatedKfd> {
        EmulatedKfd::new(builtin_topology()).unwrap()
    }

    /// `ioctl` with an argument that carries no pointer.
    #[allow(unsafe_code)]
    fn raw(d: &EmulatedKfd, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: the callers pass requests this device does not implement or GET_VERSION,
        // none of which carries a pointer.
        unsafe { d.ioctl(request, arg) }
    }

    #[test]
    fn version_and_size_checks() {
        let d = dev();
        let mut v = GetVersionArgs::default();
        plain_ioctl(&*d, &mut v).unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 17));
        let mut short = [0u8; 4];
        assert_eq!(
            raw(&d, AMDKFD_IOC_GET_VERSION, &mut short),
            Err(Errno::INVAL)
        );
        let mut x = [0u8; 8];
        // Past amdkfd's table: EINVAL (kfd_ioctl's err_i1).
        assert_eq!(
            raw(&d, ioc(IOC_READ, b'K', 0x7f, 8), &mut x),
            Err(Errno::INVAL)
        );
        // kfd_ioctl takes the number alone: another type byte is still GET_VERSION, and its
        // answer comes back even when the request's direction says write-only (the table's
        // command is _IOR). The emulated device used to answer ENOTTY.
        assert_eq!(raw(&d, ioc(IOC_READ, b'Q', 0x01, 8), &mut x), Ok(()));
        assert_eq!(x, [1, 0, 0, 0, 17, 0, 0, 0]);
        let mut y = [0u8; 8];
        assert_eq!(raw(&d, ioc(IOC_WRITE, 0, 0x01, 8), &mut y), Ok(()));
        assert_eq!(y, [1, 0, 0, 0, 17, 0, 0, 0]);
        assert_eq!(d.ioctl_count(), 5);
    }

    /// An `AMDKFD_IOC_SVM` request as libhsakmt builds it: the head, the attributes, and
    /// their size added to the request's `_IOC_SIZE`.
    fn svm(
        d: &EmulatedKfd,
        start: u64,
        size: u64,
        op: u32,
        attrs: &mut [(u32, u32)],
    ) -> Result<(), Errno> {
        let head = SvmArgs {
            start_addr: start,
            size,
            op,
            nattr: attrs.len() as u32,
        };
        let mut buf = head.as_bytes().to_vec();
        for &(t, v) in attrs.iter() {
            buf.extend_from_slice(SvmAttribute { type_: t, value: v }.as_bytes());
        }
        let request = AMDKFD_IOC_SVM + ((8 * attrs.len() as u32) << 16);
        let r = raw(d, request, &mut buf);
        for (i, a) in attrs.iter_mut().enumerate() {
            let o = 24 + 8 * i;
            let a2 =
                <SvmAttribute as zerocopy::FromBytes>::read_from_bytes(&buf[o..o + 8]).unwrap();
            *a = (a2.type_, a2.value);
        }
        r
    }

    #[test]
    fn svm_set_attr_then_get_attr_answers_what_was_set() {
        let d = dev();
        let g = BUILTIN_GPU_ID;
        let base = 0x7f00_0000_0000u64;
        // What libhsakmt's register_svm_range sends for a queue's CWSR area.
        let flags = KFD_IOCTL_SVM_FLAG_HOST_ACCESS
            | KFD_IOCTL_SVM_FLAG_GPU_EXEC
            | KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED;
        let mut set = [
            (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, g),
            (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0),
            (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, !flags),
            (KFD_IOCTL_SVM_ATTR_SET_FLAGS, flags),
            (KFD_IOCTL_SVM_ATTR_ACCESS, g),
            (KFD_IOCTL_SVM_ATTR_GRANULARITY, 0xff),
        ];
        assert_eq!(
            svm(&d, base, 0x10000, KFD_IOCTL_SVM_OP_SET_ATTR, &mut set),
            Ok(())
        );
        let all = |g: u32| {
            [
                (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0),
                (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0),
                (KFD_IOCTL_SVM_ATTR_NO_ACCESS, g),
                (KFD_IOCTL_SVM_ATTR_SET_FLAGS, 0),
                (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, 0),
                (KFD_IOCTL_SVM_ATTR_GRANULARITY, 0),
            ]
        };
        let mut got = all(g);
        assert_eq!(
            svm(
                &d,
                base + 0x4000,
                0x4000,
                KFD_IOCTL_SVM_OP_GET_ATTR,
                &mut got
            ),
            Ok(())
        );
        assert_eq!(
            got,
            [
                (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 0),
                (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, g),
                (KFD_IOCTL_SVM_ATTR_ACCESS, g),
                (KFD_IOCTL_SVM_ATTR_SET_FLAGS, flags),
                (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, !flags),
                (KFD_IOCTL_SVM_ATTR_GRANULARITY, 0x3f),
            ]
        );
        // ACCESS_IN_PLACE and a granularity over part of it: the range splits.
        let mut part = [
            (KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, g),
            (KFD_IOCTL_SVM_ATTR_GRANULARITY, 4),
        ];
        assert_eq!(
            svm(
                &d,
                base + 0x8000,
                0x2000,
                KFD_IOCTL_SVM_OP_SET_ATTR,
                &mut part
            ),
            Ok(())
        );
        assert_eq!(lock(&d.device.svm).len(), 3);
        let mut got = all(g);
        assert_eq!(
            svm(
                &d,
                base + 0x8000,
                0x1000,
                KFD_IOCTL_SVM_OP_GET_ATTR,
                &mut got
            ),
            Ok(())
        );
        assert_eq!(got[2], (KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, g));
        assert_eq!(got[5], (KFD_IOCTL_SVM_ATTR_GRANULARITY, 4));
        // Over the whole: the smallest granularity, access (not in place) common to all.
        let mut got = all(g);
        assert_eq!(
            svm(&d, base, 0x10000, KFD_IOCTL_SVM_OP_GET_ATTR, &mut got),
            Ok(())
        );
        assert_eq!(got[2], (KFD_IOCTL_SVM_ATTR_ACCESS, g));
        assert_eq!(got[5], (KFD_IOCTL_SVM_ATTR_GRANULARITY, 4));
        // NO_ACCESS on a page, then a range across the set one and a gap: locations differ,
        // the gap's range has the defaults, no GPU has access everywhere.
        let mut no = [(KFD_IOCTL_SVM_ATTR_NO_ACCESS, g)];
        assert_eq!(
            svm(&d, base, 0x1000, KFD_IOCTL_SVM_OP_SET_ATTR, &mut no),
            Ok(())
        );
        let mut empty: [(u32, u32); 0] = [];
        assert_eq!(
            svm(
                &d,
                base + 0x10000,
                0x3000,
                KFD_IOCTL_SVM_OP_SET_ATTR,
                &mut empty
            ),
            Ok(())
        );
        let mut got = all(g);
        assert_eq!(
            svm(&d, base, 0x13000, KFD_IOCTL_SVM_OP_GET_ATTR, &mut got),
            Ok(())
        );
        assert_eq!(got[0].1, KFD_IOCTL_SVM_LOCATION_UNDEFINED);
        assert_eq!(got[1].1, KFD_IOCTL_SVM_LOCATION_UNDEFINED);
        assert_eq!(got[2], (KFD_IOCTL_SVM_ATTR_NO_ACCESS, g));
        // Flags all have: HOST_ACCESS; none has: all but HOST_ACCESS|COHERENT|GPU_EXEC|ALWAYS_MAPPED.
        assert_eq!(got[3].1, KFD_IOCTL_SVM_FLAG_HOST_ACCESS);
        assert_eq!(got[4].1, !(flags | KFD_IOCTL_SVM_FLAG_COHERENT));
        // Where no range is: amdkfd's defaults (XNACK off: no access).
        let mut got = all(g);
        assert_eq!(
            svm(&d, 0x1000, 0x1000, KFD_IOCTL_SVM_OP_GET_ATTR, &mut got),
            Ok(())
        );
        assert_eq!(
            got,
            [
                (
                    KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
                    KFD_IOCTL_SVM_LOCATION_UNDEFINED
                ),
                (
                    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
                    KFD_IOCTL_SVM_LOCATION_UNDEFINED
                ),
                (KFD_IOCTL_SVM_ATTR_NO_ACCESS, g),
                (KFD_IOCTL_SVM_ATTR_SET_FLAGS, 3),
                (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, !3),
                (KFD_IOCTL_SVM_ATTR_GRANULARITY, 9),
            ]
        );
    }

    /// An SVM range whose memory the program unmapped (the C library's `free`, which the
    /// emulated device does not see) and mapped again: a USERPTR buffer object there is
    /// allocated, and the range's pages over it are dropped, as amdkfd's MMU notifier drops
    /// them at the unmap. It was EADDRINUSE, and HIP 7.2.4 then died in `hipStreamCreate`
    /// (the thunk's queue ring at the address of a freed `std::vector` HIP had granted the
    /// GPU; issue 37). Other kinds over a range stay EADDRINUSE (svm_refuses_what_amdkfd_refuses).
    #[test]
    #[allow(unsafe_code)]
    fn userptr_over_a_stale_svm_range_drops_the_range() {
        let d = dev();
        let g = BUILTIN_GPU_ID;
        let mut host = vec![0u8; 5 * 4096];
        let addr = (host.as_mut_ptr() as u64 + 4095) & !4095;
        let mut access = [(KFD_IOCTL_SVM_ATTR_ACCESS, g)];
        assert_eq!(
            svm(&d, addr, 3 * 4096, KFD_IOCTL_SVM_OP_SET_ATTR, &mut access),
            Ok(())
        );
        assert_eq!(lock(&d.device.svm).len(), 1);
        let mut alloc = AllocMemoryOfGpuArgs {
            va_addr: addr + 4096,
            size: 4096,
            gpu_id: g,
            mmap_offset: addr + 4096,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        assert_eq!(
            raw(&d, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, alloc.as_mut_bytes()),
            Ok(())
        );
        // The range is split around the buffer object: its first and last page stay, and
        // the GPU still reaches them, not the middle one (no longer SVM; the buffer object
        // is not mapped to the GPU yet).
        assert_eq!(lock(&d.device.svm).len(), 2);
        let allocs = d.device.allocs.read().unwrap();
        assert!(allocs.device_span(g, addr, 8, "read").is_ok());
        assert!(allocs.device_span(g, addr + 2 * 4096, 8, "read").is_ok());
        assert_eq!(
            allocs
                .device_span(g, addr + 4096, 8, "read")
                .map(|_| ())
                .unwrap_err()
                .address,
            addr + 4096
        );
        drop(allocs);
        // An unmap the interposer sees (munmap) drops the pages it covers the same way, and
        // an SMI reader asking for UNMAP_FROM_GPU (event 11) hears of it for the GPU that had
        // access: the first page and the page count in hex, trigger 2 (UNMAP_FROM_CPU).
        let mut smi = SmiEventsArgs {
            gpuid: g,
            anon_fd: 0,
        };
        raw(&d, AMDKFD_IOC_SMI_EVENTS, smi.as_mut_bytes()).unwrap();
        // SAFETY: a successful SMI_EVENTS hands the caller a new descriptor it owns.
        let smi = unsafe {
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(smi.anon_fd as i32)
        };
        assert_eq!(rustix::io::write(&smi, &(1u64 << 10).to_ne_bytes()), Ok(8));
        assert!(!d.cpu_unmapped(addr, 0));
        assert!(d.cpu_unmapped(addr, 4096));
        assert_eq!(lock(&d.device.svm).len(), 1);
        assert!(!d.cpu_unmapped(addr, 4096));
        let mut buf = [0u8; 128];
        let n = rustix::io::read(&smi, &mut buf).unwrap();
        let line = std::str::from_utf8(&buf[..n]).unwrap();
        let want = format!(" -{} @{:x}(1) {g:x} 2\n", std::process::id(), addr / 4096);
        let ns = line
            .strip_prefix("b ")
            .and_then(|l| l.strip_suffix(want.as_str()))
            .unwrap_or_else(|| panic!("{line:?}"));
        assert!(ns.parse::<i64>().unwrap() > 0, "{line:?}");
        drop(host);
    }

    #[test]
    fn svm_access_makes_host_memory_reachable_by_the_gpu() {
        let d = dev();
        let g = BUILTIN_GPU_ID;
        let mut host = vec![0u8; 3 * 4096];
        let addr = (host.as_mut_ptr() as u64 + 4095) & !4095;
        let at = (addr - host.as_ptr() as u64) as usize;
        host[at..at + 8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        let read = |d: &EmulatedKfd| {
            let allocs = d.device.allocs.read().unwrap();
            let span = allocs
                .device_span(g, addr, 8, "read")
                .map_err(|f| f.address)?;
            let mut out = [0u8; 8];
            span.try_read_into(&mut out).unwrap();
            Ok::<u64, u64>(u64::from_le_bytes(out))
        };
        // Registered without access (what ROCR's coarse-grain registration sends): a fault.
        let mut flags = [(KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_FLAG_COHERENT)];
        assert_eq!(
            svm(&d, addr, 4096, KFD_IOCTL_SVM_OP_SET_ATTR, &mut flags),
            Ok(())
        );
        assert_eq!(read(&d), Err(addr));
        let mut access = [(KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, g)];
        assert_eq!(
            svm(&d, addr, 4096, KFD_IOCTL_SVM_OP_SET_ATTR, &mut access),
            Ok(())
        );
        assert_eq!(read(&d), Ok(0x1122_3344_5566_7788));
        // A span past the range's end faults at its first byte outside.
        let allocs = d.device.allocs.read().unwrap();
        let f = allocs.device_span(g, addr + 4092, 8, "read").unwrap_err();
        assert_eq!(f.address, addr + 4096);
        drop(allocs);
        let mut no = [(KFD_IOCTL_SVM_ATTR_NO_ACCESS, g)];
        assert_eq!(
            svm(&d, addr, 4096, KFD_IOCTL_SVM_OP_SET_ATTR, &mut no),
            Ok(())
        );
        assert_eq!(read(&d), Err(addr));
        drop(host);
    }

    #[test]
    fn svm_refuses_what_amdkfd_refuses() {
        let d = dev();
        let g = BUILTIN_GPU_ID;
        let set = KFD_IOCTL_SVM_OP_SET_ATTR;
        let base = 0x7f00_0000_0000u64;
        let mut ok = [(KFD_IOCTL_SVM_ATTR_ACCESS, g)];
        for (start, size) in [(base + 1, 0x1000), (base, 0x800), (0, 0x1000), (base, 0)] {
            assert_eq!(
                svm(&d, start, size, set, &mut ok),
                Err(Errno::INVAL),
                "{start:#x} {size:#x}"
            );
        }
        assert_eq!(svm(&d, !0xfffu64, 0x2000, set, &mut ok), Err(Errno::INVAL));
        assert_eq!(svm(&d, base, 0x1000, 2, &mut ok), Err(Errno::INVAL));
        for bad in [
            (8, 0),
            (KFD_IOCTL_SVM_ATTR_ACCESS, g + 1),
            (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0xffff_ffff),
            (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, 7),
            (KFD_IOCTL_SVM_ATTR_NO_ACCESS, 0),
        ] {
            let mut a = [bad];
            assert_eq!(
                svm(&d, base, 0x1000, set, &mut a),
                Err(Errno::INVAL),
                "{bad:?}"
            );
            let mut a = [bad];
            if bad.0 >= KFD_IOCTL_SVM_ATTR_ACCESS {
                assert_eq!(
                    svm(&d, base, 0x1000, KFD_IOCTL_SVM_OP_GET_ATTR, &mut a),
                    Err(Errno::INVAL),
                    "{bad:?}"
                );
            }
        }
        // A failed SET_ATTR created no range.
        assert_eq!(lock(&d.device.svm).len(), 0);
        // nattr larger than the buffer holds (kfd_ioctl_svm_validate).
        let head = SvmArgs {
            start_addr: base,
            size: 0x1000,
            op: set,
            nattr: 2,
        };
        let mut buf = head.as_bytes().to_vec();
        buf.extend_from_slice(
            SvmAttribute {
                type_: KFD_IOCTL_SVM_ATTR_ACCESS,
                value: g,
            }
            .as_bytes(),
        );
        assert_eq!(
            raw(&d, AMDKFD_IOC_SVM + (8 << 16), &mut buf),
            Err(Errno::INVAL)
        );
        let mut short = [0u8; 8];
        assert_eq!(
            raw(&d, AMDKFD_IOC_SVM & !(0x3fff << 16) | (8 << 16), &mut short),
            Err(Errno::INVAL)
        );
        assert_eq!(svm(&d, base, 0x1000, set, &mut ok), Ok(()));
        // A buffer object over the SVM range: EADDRINUSE (kfd_ioctl_alloc_memory_of_gpu); and
        // an SVM range over a buffer object: EADDRINUSE (svm_range_check_vm).
        let mut alloc = AllocMemoryOfGpuArgs {
            va_addr: base,
            size: 0x2000,
            gpu_id: g,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        assert_eq!(
            raw(&d, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, alloc.as_mut_bytes()),
            Err(Errno::ADDRINUSE)
        );
        alloc.va_addr = base + 0x10000;
        assert_eq!(
            raw(&d, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, alloc.as_mut_bytes()),
            Ok(())
        );
        assert_eq!(
            svm(&d, base + 0x11000, 0x1000, set, &mut ok),
            Err(Errno::ADDRINUSE)
        );
    }

    #[test]
    fn topology_without_gpu_is_rejected() {
        let mut t = builtin_topology();
        t.nodes.truncate(1);
        assert_eq!(
            EmulatedKfd::new(t).unwrap_err().status(),
            Status::InvalidArgument
        );
    }

    #[test]
    #[allow(unsafe_code)]
    fn apertures_count_then_fill() {
        let d = dev();
        let mut a = GetProcessAperturesNewArgs::default();
        // SAFETY: num_of_nodes 0: KFD's "how many?" form writes through no pointer.
        unsafe { d.ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, a.as_mut_bytes()) }.unwrap();
        assert_eq!(a.num_of_nodes, 1);
        let mut out = [ProcessDeviceApertures::default(); 2];
        a.kfd_process_device_apertures_ptr = out.as_mut_ptr() as u64;
        a.num_of_nodes = 2;
        // SAFETY: the array is `out`, 2 entries, not otherwise used during the call.
        unsafe { d.ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, a.as_mut_bytes()) }.unwrap();
        assert_eq!(a.num_of_nodes, 1);
        let got = std::hint::black_box(&out)[0];
        assert_eq!(got.gpu_id, BUILTIN_GPU_ID);
        assert!(got.gpuvm_base < got.gpuvm_limit);
        // kfd_flat_memory.c's v9 apertures: LDS at 1 << 48, scratch at 2 << 48, 4 GiB each.
        assert_eq!(
            (
                got.lds_base,
                got.lds_limit,
                got.scratch_base,
                got.scratch_limit
            ),
            (
                0x0001_0000_0000_0000,
                0x0001_0000_FFFF_FFFF,
                0x0002_0000_0000_0000,
                0x0002_0000_FFFF_FFFF
            )
        );
        // The same apertures the interpreter's waves address FLAT memory with.
        let gpu = &d.device.gpus[0];
        assert_eq!(
            (got.lds_base, got.scratch_base),
            (gpu.apertures.shared_base(), gpu.apertures.private_base())
        );
        a.kfd_process_device_apertures_ptr = 16;
        assert_eq!(
            // SAFETY: address 16 is never mapped (page 0): the copy fails with EFAULT.
            unsafe { d.ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, a.as_mut_bytes()) },
            Err(Errno::FAULT)
        );
        // The typed wrapper: the same answers.
        assert_eq!(
            hsa_linux::kfd::calls::get_process_apertures(&*d, &mut []).unwrap(),
            1
        );
        let mut out = [ProcessDeviceApertures::default(); 3];
        assert_eq!(
            hsa_linux::kfd::calls::get_process_apertures(&*d, &mut out).unwrap(),
            1
        );
        assert_eq!(out[0].gpu_id, BUILTIN_GPU_ID);
    }
}
