//! The emulated device: a mock of `/dev/kfd` with the kernel's semantics, for machines without
//! an AMD GPU.
//!
//! [`EmulatedKfd`] implements [`KfdDriver`], so the Linux backend drives it exactly as it drives
//! the real `/dev/kfd`: ioctl argument structs of [`hsa_linux::kfd::abi`] in, errno out. Semantics
//! follow linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` (`kfd_ioctl` and the per-ioctl
//! handlers), `kfd_events.c` and `kfd_process_queue_manager.c`:
//!
//! - `arg.len()` must equal `_IOC_SIZE(request)` (the trait's contract), else `EINVAL`. As
//!   `kfd_ioctl`, the device looks at the request's number only: its type byte and direction
//!   are the table's ([`amdkfd_table_command`]: the argument comes back for a command that
//!   returns one, whatever the request says), and a different encoded size is accepted (the
//!   argument is zero-extended or truncated to the emulation's struct). A number in amdkfd's
//!   table ([`AMDKFD_COMMAND_START`]..[`AMDKFD_COMMAND_END`]) not implemented here is
//!   `ENOTTY`; a number outside the table (0, or from [`AMDKFD_COMMAND_END`] on: among them
//!   the ROCm 5.x kernels' own 0x80 range) is `EINVAL`, as `kfd_ioctl` answers it.
//! - Unknown `gpu_id`, memory handle, queue id or event id: `EINVAL`. A user pointer (device
//!   id arrays, event arrays, aperture arrays, CU masks) that is not mapped: `EFAULT` (copies go
//!   through `/proc/self/mem`, as `copy_from_user` would fault).
//! - Memory: VRAM and GTT are backed by memfd pages the device maps for itself; the user maps
//!   them with `mmap(RenderNode(gpu_id), mmap_offset, len, Some(va))`. USERPTR registers the
//!   caller's pages (which must stay mapped until FREE). Sizes beyond the topology's VRAM bank
//!   (per GPU) or system bank (CPU nodes) are `ENOMEM`. The device reaches an allocation only
//!   after `MAP_MEMORY_TO_GPU` for that GPU (as GPUVM mappings work). Freeing memory a live
//!   queue uses (ring, `amd_queue_t`) or the event page is `EBUSY`.
//! - Queues: AQL compute and SDMA. Each AQL queue is served by a thread running the core's packet processor
//!   ([`hsa_core::packet_processor`]) that watches the queue's doorbell (its word of the GPU's
//!   doorbell page, which the user maps from `/dev/kfd`), its write index and its next
//!   packet header, as a command processor does: nothing but memory tells it that packets
//!   arrived (the polling policy is in the `queue` module's docs).
//!   A process may have 127 queues on a GPU (255 on gfx94x/gfx950), as amdkfd; one more is
//!   `ENOSPC`. SDMA queues (`KFD_IOC_QUEUE_TYPE_SDMA`, `_SDMA_XGMI`: a byte ring, 64-bit
//!   read and write pointers, a doorbell that takes the write pointer) are served by the
//!   emulated SDMA engine, one thread each (the `sdma` module's docs: the packets it runs);
//!   a GPU has `num_sdma_engines` (XGMI: `num_sdma_xgmi_engines`) times
//!   `num_sdma_queues_per_engine` of them, as amdkfd's SDMA queue bitmap; one more is
//!   `ENOMEM`. The device counts the SDMA packets it ran ([`ExecutionStats::sdma_packets`]).
//! - Kernel dispatches ([`ExecutionMode`]): by default the kernel's real machine code runs in
//!   the GFX9 wave interpreter of [`crate::gfx9::exec`] when the GPU's ISA is gfx900,
//!   gfx90a or gfx942: the kernel descriptor at the packet's kernel object and the code are read
//!   from GPU memory, the dispatch and queue pointers are the packet's and `amd_queue_t`'s
//!   device addresses, and the work-groups run on several host threads. Otherwise (another
//!   ISA) the host implementation registered for the packet's kernel object
//!   ([`EmulatedKfd::register_kernel`]) runs instead, when there is one. The device knows no
//!   symbols: a kernel is its kernel descriptor in GPU memory, and messages name it by its
//!   registration's label or its kernel object. `HSA_RT_EMULATION=host` (or [`EmulatedKfd::set_execution_mode`]) runs
//!   host implementations only.
//! - CU masks: each compute queue keeps its per-engine CU enable masks (every CU at
//!   CREATE_QUEUE; SET_CU_MASK maps the user's mask as amdkfd does, [`cu_mask`]); the
//!   interpreter runs each work-group on an enabled CU, round robin, and gives each wave its
//!   `HW_REG_HW_ID` ([`crate::gfx9::hwid`]); [`EmulatedKfd::compute_static_thread_mgmt`]
//!   reads the masks back.
//! - AMD PM4-IB vendor packets (ROCR's cache invalidation after loading code) run in the
//!   CP's PM4 engine: `NOP`, `WRITE_DATA`, `INDIRECT_BUFFER`, `RELEASE_MEM`, `ACQUIRE_MEM`
//!   (the `pm4` module's docs); any other PM4 stops the queue with `INVALID_PACKET_FORMAT`.
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
//! not required before allocating; SVM, CRIU and debugger ioctls are `ENOTTY`.

use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::gfx9::Gfx9Target;
use hsa_core::packet_processor::PacketProcessor;
use hsa_core::platform::HeapType;
use hsa_core::runtime::agent::amdkfd_queues_per_process;
use hsa_core::{error, Error, GpuVa, Status};
use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use hsa_linux::topology::Topology;

pub mod cu_mask;
pub mod drm;
mod events;
#[cfg(feature = "_fuzz")]
#[doc(hidden)]
pub mod fuzz;
mod guarded;
pub mod host_kernels;
mod interp;
mod kernel;
mod mem;
mod memory;
mod pm4;
mod profile;
mod queue;
pub mod record;
mod sdma;

pub use events::{EVENT_PAGE_BYTES, FIRST_NONSIGNAL_EVENT_ID, UNSIGNALED_EVENT_SLOT};
pub use interp::run_kernel_dispatch;
pub use kernel::DispatchContext;
pub use profile::{
    builtin_profile, builtin_topology, builtin_topology_for, complete_capture, BUILTIN_GPU_ID,
    BUILTIN_PROFILES, BUILTIN_SYSTEM_BYTES, BUILTIN_VRAM_BYTES,
};

use events::{Event, EventPage, Events};
use mem::{round_up_page, Backing, UserMemory, PAGE_BYTES};
use memory::{Alloc, Allocs, Kind, MemoryFault};
use queue::{CpThread, QueueCtl};

/// Size of a GPU's doorbell page on `/dev/kfd`, bytes (the backend's constant: 1024 queues
/// of one 64-bit doorbell).
pub use hsa_linux::device::DOORBELL_PAGE_BYTES;

/// Most queues a process may have (`KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`).
pub const MAX_QUEUES_PER_PROCESS: u32 = 1024;

/// Most device ids `MAP/UNMAP_MEMORY_TO_GPU` accept in one call (more is `EINVAL`).
pub const MAX_MAP_DEVICES: u32 = 1024;

/// `AMDKFD_COMMAND_START`: the first KFD ioctl number (`kfd_ioctl.h`).
pub const AMDKFD_COMMAND_START: u8 = 0x01;
/// `AMDKFD_COMMAND_END` of the interface this device models (KFD 1.11..1.14, up to
/// `AMDKFD_IOC_DBG_TRAP` 0x26): numbers from here on are past amdkfd's table (`EINVAL`).
pub const AMDKFD_COMMAND_END: u8 = 0x27;

/// `struct kfd_ioctl_set_trap_handler_args` (24 bytes): `AMDKFD_IOC_SET_TRAP_HANDLER`
/// (`_IOW('K', 0x13, ...)`), the process's trap handler on one GPU. Ref: `kfd_ioctl.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct SetTrapHandlerArgs {
    /// To KFD: the trap handler's code (TBA), a GPU address.
    pub tba_addr: u64,
    /// To KFD: the trap handler's memory (TMA), a GPU address.
    pub tma_addr: u64,
    /// To KFD: the GPU.
    pub gpu_id: u32,
    /// Padding.
    pub pad: u32,
}
const _: () = assert!(size_of::<SetTrapHandlerArgs>() == 24);

/// `AMDKFD_IOC_SET_TRAP_HANDLER`: `_IOW('K', 0x13, struct kfd_ioctl_set_trap_handler_args)`.
pub const AMDKFD_IOC_SET_TRAP_HANDLER: u32 = ioc(
    IOC_WRITE,
    AMDKFD_IOCTL_BASE,
    0x13,
    size_of::<SetTrapHandlerArgs>(),
);

/// `struct kfd_ioctl_get_tile_config_args` (40 bytes): `AMDKFD_IOC_GET_TILE_CONFIG`
/// (`_IOWR('K', 0x12, ...)`), the GPU's tiling registers, which ROCR's image manager reads
/// at start (through `hsaKmtGetTileConfig`) to set up its address library. Ref: `kfd_ioctl.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct GetTileConfigArgs {
    /// To KFD: where the tile-mode array goes (user address).
    pub tile_config_ptr: u64,
    /// To KFD: where the macro-tile-mode array goes (user address).
    pub macro_tile_config_ptr: u64,
    /// To KFD: entries the caller's tile-mode array holds; from KFD: entries written.
    pub num_tile_configs: u32,
    /// To KFD: entries the caller's macro-tile array holds; from KFD: entries written.
    pub num_macro_tile_configs: u32,
    /// To KFD: the GPU.
    pub gpu_id: u32,
    /// From KFD: the `GB_ADDR_CONFIG` register.
    pub gb_addr_config: u32,
    /// From KFD: memory banks (`MC_ARB_RAMCFG.NOOFBANK`).
    pub num_banks: u32,
    /// From KFD: memory ranks (`MC_ARB_RAMCFG.NOOFRANKS`).
    pub num_ranks: u32,
}
const _: () = assert!(size_of::<GetTileConfigArgs>() == 40);

/// `AMDKFD_IOC_GET_TILE_CONFIG`: `_IOWR('K', 0x12, struct kfd_ioctl_get_tile_config_args)`.
pub const AMDKFD_IOC_GET_TILE_CONFIG: u32 = ioc(
    IOC_READ | IOC_WRITE,
    AMDKFD_IOCTL_BASE,
    0x12,
    size_of::<GetTileConfigArgs>(),
);

/// Entries of amdgpu's tile-mode array (`adev->gfx.config.tile_mode_array`), which
/// `AMDKFD_IOC_GET_TILE_CONFIG` returns at most.
pub const TILE_MODE_ENTRIES: u32 = 32;
/// Entries of amdgpu's macro-tile-mode array (`adev->gfx.config.macrotile_mode_array`).
pub const MACRO_TILE_MODE_ENTRIES: u32 = 16;

/// The command of amdkfd's ioctl table (`amdkfd_ioctls[nr].cmd`: type `'K'`, the argument's
/// size, its direction) for ioctl number `nr`, when this device emulates it; `None` for other
/// numbers. amdkfd answers a request by its number alone and copies the argument in and out
/// as this command's direction says (`kfd_ioctl`), so a caller copying for it (kfd-emu's
/// preloaded library) uses this direction, not the request's.
pub fn amdkfd_table_command(nr: u8) -> Option<u32> {
    Some(match nr {
        0x01 => AMDKFD_IOC_GET_VERSION,
        0x02 => AMDKFD_IOC_CREATE_QUEUE,
        0x03 => AMDKFD_IOC_DESTROY_QUEUE,
        0x04 => AMDKFD_IOC_SET_MEMORY_POLICY,
        0x05 => AMDKFD_IOC_GET_CLOCK_COUNTERS,
        0x07 => AMDKFD_IOC_UPDATE_QUEUE,
        0x08 => AMDKFD_IOC_CREATE_EVENT,
        0x09 => AMDKFD_IOC_DESTROY_EVENT,
        0x0A => AMDKFD_IOC_SET_EVENT,
        0x0B => AMDKFD_IOC_RESET_EVENT,
        0x0C => AMDKFD_IOC_WAIT_EVENTS,
        0x11 => AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
        0x12 => AMDKFD_IOC_GET_TILE_CONFIG,
        0x13 => AMDKFD_IOC_SET_TRAP_HANDLER,
        0x14 => AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
        0x15 => AMDKFD_IOC_ACQUIRE_VM,
        0x16 => AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
        0x17 => AMDKFD_IOC_FREE_MEMORY_OF_GPU,
        0x18 => AMDKFD_IOC_MAP_MEMORY_TO_GPU,
        0x19 => AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
        0x1A => AMDKFD_IOC_SET_CU_MASK,
        0x1D => AMDKFD_IOC_IMPORT_DMABUF,
        0x21 => AMDKFD_IOC_SET_XNACK_MODE,
        0x23 => AMDKFD_IOC_AVAILABLE_MEMORY,
        0x24 => AMDKFD_IOC_EXPORT_DMABUF,
        0x25 => AMDKFD_IOC_RUNTIME_ENABLE,
        _ => return None,
    })
}

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
    /// interpreter does not run (gfx900, gfx90a, gfx942) does a host implementation
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
    /// Dispatches the GFX9 interpreter ran to completion.
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
    /// PM4 packets the command processor executed (from AMD PM4-IB vendor packets: ROCR's
    /// cache invalidations), indirect buffers and their contents each counted.
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
    /// code page (4 KiB and the 4 bytes past it) a dispatch's waves reach, once per dispatch
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
    /// The ISA the interpreter runs for it; `None` when it is not gfx900/gfx90a/gfx942.
    target: Option<Gfx9Target>,
    /// The ISA's name (`gfx90a`), or `gfx_target_version N` when it has none.
    isa: String,
    /// The width of its SDMA engines' count fields.
    sdma_count_width: sdma::CountWidth,
    /// Its `GB_ADDR_CONFIG` ([`profile::gb_addr_config`]): what `GET_TILE_CONFIG` reports
    /// and the interpreter lays swizzled images out with.
    gb_addr_config: u32,
}

struct QueueEntry {
    gpu_id: u32,
    /// `KFD_IOC_QUEUE_TYPE_*`.
    queue_type: u32,
    ring_va: u64,
    ring_size: u32,
    pinned: Vec<u64>,
    ctl: Arc<queue::QueueCtl>,
    thread: Option<JoinHandle<()>>,
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
    /// 0 = Interpret, 1 = HostOnly.
    mode: AtomicU8,
    /// Host threads per interpreted dispatch.
    threads: AtomicUsize,
    stats: StatCounters,
}

impl Device {
    /// The shader sequencer's message interrupt (`s_sendmsg sendmsg(MSG_INTERRUPT)`, M0[22:0]
    /// as `data`), as amdkfd handles it (`kfd_int_process_v9.c`:
    /// `kfd_signal_event_interrupt(pasid, data, 23)`) — the same event path as the CP's
    /// end-of-pipe interrupt: event `data` when its mailbox slot was written, else every
    /// signal event whose slot was; waiters are woken.
    pub(crate) fn sq_message_interrupt(&self, data: u32) {
        lock(&self.events).end_of_pipe_interrupt(data & 0x7F_FFFF);
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
    ///   any other error every `KFD_IOC_EVENT_HW_EXCEPTION` event,
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
    ) {
        log::error!(
            "queue {queue_id} stopped with {}: {}",
            error.status().c_name(),
            error.detail()
        );
        self.record_queue_error(queue_id, error);
        if error.status() == Status::MemoryFault {
            if !vm_fault_raised {
                self.raise_vm_fault(gpu_id, fault);
            }
            return;
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

/// CLOCK_MONOTONIC, ns.
pub(crate) fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the argument as `T`: zero-extended/truncated copy in, copy back out when the
/// request has `_IOC_READ` (also after an error, as `kfd_ioctl` does).
fn with_args<T, F>(request: u32, arg: &mut [u8], f: F) -> Result<(), Errno>
where
    T: FromBytes + IntoBytes + Immutable + KnownLayout,
    F: FnOnce(&mut T) -> Result<(), Errno>,
{
    let mut t = T::new_zeroed();
    let n = arg.len().min(size_of::<T>());
    t.as_mut_bytes()[..n].copy_from_slice(&arg[..n]);
    let r = f(&mut t);
    if (request >> 30) & IOC_READ != 0 {
        arg[..n].copy_from_slice(&t.as_bytes()[..n]);
    }
    r
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
    /// `gpu_id`, or `HSA_RT_EMULATION` is set to something other than `interpret` or `host`; [`Status::OutOfResources`] when doorbell pages cannot be allocated;
    /// [`Status::Error`] when `/proc/self/mem` cannot be opened.
    pub fn new(mut topology: Topology) -> Result<Arc<EmulatedKfd>, Error> {
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
                target: processor.and_then(Gfx9Target::from_processor),
                isa: processor.map_or_else(
                    || format!("gfx_target_version {}", p.gfx_target_version),
                    |processor| processor.name().to_owned(),
                ),
                sdma_count_width: sdma::CountWidth::for_target(p.gfx_target_version),
                gb_addr_config: profile::gb_addr_config(p),
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
                mode: AtomicU8::new(mode_code(mode)),
                threads: AtomicUsize::new(default_threads()),
                stats: StatCounters::default(),
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
            .and_then(|node| drm::ioctl(node, &self.device.user, request, arg));
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

    fn gpu(&self, gpu_id: u32) -> Result<&Gpu, Errno> {
        self.device
            .gpus
            .iter()
            .find(|g| g.gpu_id == gpu_id)
            .ok_or(Errno::INVAL)
    }

    fn dispatch(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        let size = ((request >> 16) & 0x3fff) as usize;
        if size != arg.len() {
            return Err(Errno::INVAL);
        }
        let nr = (request & 0xff) as u8;
        // kfd_ioctl: a number outside AMDKFD_COMMAND_START..AMDKFD_CORE_IOCTL_COUNT is the
        // -EINVAL it starts with (linux before 6.18) — among them the ROCm 5.x kernels' own
        // range from 0x80 (IPC, the 5.x DBG_TRAP, CROSS_MEMORY_COPY, RLC_SPM), which an
        // upstream kernel does not have.
        if !(AMDKFD_COMMAND_START..AMDKFD_COMMAND_END).contains(&nr) {
            return Err(Errno::INVAL);
        }
        // kfd_ioctl then looks at the number only: the command is its table's — type byte and
        // direction included, whatever the caller's — and the size the caller's.
        let Some(request) = amdkfd_table_command(nr) else {
            return Err(Errno::NOTTY);
        };
        match nr {
            0x01 => with_args(request, arg, |a: &mut GetVersionArgs| {
                a.major_version = KFD_IOCTL_MAJOR_VERSION;
                a.minor_version = KFD_IOCTL_MINOR_VERSION;
                Ok(())
            }),
            0x02 => with_args(request, arg, |a| self.create_queue(a)),
            0x03 => with_args(request, arg, |a: &mut DestroyQueueArgs| {
                self.destroy_queue(a.queue_id)
            }),
            0x04 => with_args(request, arg, |a: &mut SetMemoryPolicyArgs| {
                self.gpu(a.gpu_id)?;
                let ok =
                    |p| p == KFD_IOC_CACHE_POLICY_COHERENT || p == KFD_IOC_CACHE_POLICY_NONCOHERENT;
                if !ok(a.default_policy) || !ok(a.alternate_policy) {
                    return Err(Errno::INVAL);
                }
                Ok(())
            }),
            0x05 => with_args(request, arg, |a: &mut GetClockCountersArgs| {
                let now = monotonic_ns();
                // As the kernel: an unknown gpu_id gives a zero GPU counter, not an error.
                a.gpu_clock_counter = if self.gpu(a.gpu_id).is_ok() { now } else { 0 };
                a.cpu_clock_counter = now;
                a.system_clock_counter = now;
                a.system_clock_freq = 1_000_000_000;
                Ok(())
            }),
            0x07 => with_args(request, arg, |a| self.update_queue(a)),
            0x08 => with_args(request, arg, |a| self.create_event(a)),
            0x09 => with_args(request, arg, |a: &mut DestroyEventArgs| {
                self.destroy_event(a.event_id)
            }),
            0x0A => with_args(request, arg, |a: &mut SetEventArgs| {
                let mut ev = lock(&self.device.events);
                match ev.table.get(&a.event_id) {
                    Some(e) if e.event_type == KFD_IOC_EVENT_SIGNAL => {}
                    _ => return Err(Errno::INVAL),
                }
                ev.set(a.event_id);
                Ok(())
            }),
            0x0B => with_args(request, arg, |a: &mut ResetEventArgs| {
                let mut ev = lock(&self.device.events);
                let e = ev.table.get_mut(&a.event_id).ok_or(Errno::INVAL)?;
                e.signaled = false;
                Ok(())
            }),
            0x0C => with_args(request, arg, |a| self.wait_events(a)),
            0x11 => with_args(request, arg, |a: &mut SetScratchBackingVaArgs| {
                self.gpu(a.gpu_id).map(|_| ())
            }),
            0x12 => with_args(request, arg, |a| self.tile_config(a)),
            // kfd_ioctl_set_trap_handler: EINVAL for a GPU the process has no data for.
            0x13 => with_args(request, arg, |a: &mut SetTrapHandlerArgs| {
                self.gpu(a.gpu_id)?;
                lock(&self.device.trap_handlers).insert(a.gpu_id, (a.tba_addr, a.tma_addr));
                Ok(())
            }),
            0x14 => with_args(request, arg, |a| self.apertures(a)),
            0x15 => with_args(request, arg, |a: &mut AcquireVmArgs| {
                self.gpu(a.gpu_id).map(|_| ())
            }),
            0x16 => with_args(request, arg, |a| self.alloc(a)),
            0x17 => with_args(request, arg, |a: &mut FreeMemoryOfGpuArgs| {
                let mut allocs = self
                    .device
                    .allocs
                    .write()
                    .unwrap_or_else(PoisonError::into_inner);
                // kfd_ioctl_free_memory_of_gpu: the process's event page is freed only at
                // process termination ("Free signal BO is not allowed").
                let is_event_page = lock(&self.device.events)
                    .page
                    .as_ref()
                    .is_some_and(|p| p.user_handle == Some(a.handle));
                if is_event_page {
                    return Err(Errno::PERM);
                }
                allocs.remove(a.handle).map(|_| ())
            }),
            0x18 => with_args(request, arg, |a: &mut MapMemoryToGpuArgs| {
                self.map(
                    a.handle,
                    a.device_ids_array_ptr,
                    a.n_devices,
                    &mut a.n_success,
                    true,
                )
            }),
            0x19 => with_args(request, arg, |a: &mut UnmapMemoryFromGpuArgs| {
                self.map(
                    a.handle,
                    a.device_ids_array_ptr,
                    a.n_devices,
                    &mut a.n_success,
                    false,
                )
            }),
            0x1A => with_args(request, arg, |a| self.set_cu_mask(a)),
            0x1D => with_args(request, arg, |a| self.import_dmabuf(a)),
            0x24 => with_args(request, arg, |a| self.export_dmabuf(a)),
            0x21 => with_args(request, arg, |a: &mut SetXnackModeArgs| {
                if a.xnack_enabled >= 0 {
                    let want = i32::from(a.xnack_enabled != 0);
                    if want != self.device.xnack.load(Ordering::SeqCst)
                        && !lock(&self.device.queues).is_empty()
                    {
                        return Err(Errno::BUSY);
                    }
                    self.device.xnack.store(want, Ordering::SeqCst);
                }
                a.xnack_enabled = self.device.xnack.load(Ordering::SeqCst);
                Ok(())
            }),
            0x23 => with_args(request, arg, |a: &mut GetAvailableMemoryArgs| {
                let g = self.gpu(a.gpu_id)?;
                let used = self
                    .device
                    .allocs
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .vram_used(g.gpu_id);
                a.available = g.vram_bytes.saturating_sub(used);
                Ok(())
            }),
            0x25 => with_args(request, arg, |a: &mut RuntimeEnableArgs| {
                a.capabilities_mask = 0;
                Ok(())
            }),
            _ => Err(Errno::NOTTY),
        }
    }

    /// `kfd_ioctl_get_tile_config`: the GPU's tiling configuration as amdgpu keeps it
    /// (`amdgpu_amdkfd_get_tile_config`). A gfx9 and later GPU programs no tile-mode tables
    /// (amdgpu leaves both arrays zero) and no `MC_ARB_RAMCFG` (banks and ranks 0);
    /// `GB_ADDR_CONFIG` is the value amdgpu composes for the GPU
    /// ([`profile::gb_addr_config`]), the one the interpreter addresses swizzled images
    /// with. The arrays are written up to the caller's count, capped at
    /// amdgpu's ([`TILE_MODE_ENTRIES`], [`MACRO_TILE_MODE_ENTRIES`]), and the counts come
    /// back as written. `EINVAL` for an unknown GPU; `EFAULT` (counts 0) when an array is
    /// not mapped.
    fn tile_config(&self, a: &mut GetTileConfigArgs) -> Result<(), Errno> {
        a.gb_addr_config = self.gpu(a.gpu_id)?.gb_addr_config;
        a.num_banks = 0;
        a.num_ranks = 0;
        a.num_tile_configs = a.num_tile_configs.min(TILE_MODE_ENTRIES);
        a.num_macro_tile_configs = a.num_macro_tile_configs.min(MACRO_TILE_MODE_ENTRIES);
        let zeros = [0u8; 4 * TILE_MODE_ENTRIES as usize];
        let tiles = 4 * a.num_tile_configs as usize;
        if let Err(e) = self.device.user.write(a.tile_config_ptr, &zeros[..tiles]) {
            a.num_tile_configs = 0;
            return Err(e);
        }
        let macros = 4 * a.num_macro_tile_configs as usize;
        if let Err(e) = self
            .device
            .user
            .write(a.macro_tile_config_ptr, &zeros[..macros])
        {
            a.num_macro_tile_configs = 0;
            return Err(e);
        }
        Ok(())
    }

    fn apertures(&self, a: &mut GetProcessAperturesNewArgs) -> Result<(), Errno> {
        let gpus = &self.device.gpus;
        if a.num_of_nodes == 0 {
            // As the kernel: report how many entries are needed.
            a.num_of_nodes = gpus.len() as u32;
            return Ok(());
        }
        let n = (a.num_of_nodes as usize).min(gpus.len());
        let entries: Vec<ProcessDeviceApertures> = gpus[..n]
            .iter()
            .map(|g| ProcessDeviceApertures {
                // gfx9 apertures (kfd_flat_memory.c: MAKE_LDS_APP_BASE_V9, SCRATCH_V9).
                lds_base: 0x1_0000_0000_0000,
                lds_limit: 0x1_0000_ffff_ffff,
                scratch_base: 0x2_0000_0000_0000,
                scratch_limit: 0x2_0000_ffff_ffff,
                gpuvm_base: 0x20_0000,
                gpuvm_limit: 0x7fff_ffff_ffff,
                gpu_id: g.gpu_id,
                pad: 0,
            })
            .collect();
        self.device.user.write(
            a.kfd_process_device_apertures_ptr,
            entries.as_slice().as_bytes(),
        )?;
        a.num_of_nodes = n as u32;
        Ok(())
    }

    fn alloc(&self, a: &mut AllocMemoryOfGpuArgs) -> Result<(), Errno> {
        let gpu = self.gpu(a.gpu_id)?;
        let type_bits = a.flags
            & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM
                | KFD_IOC_ALLOC_MEM_FLAGS_GTT
                | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
                | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
                | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
        let kind = match type_bits {
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM => Kind::Vram,
            KFD_IOC_ALLOC_MEM_FLAGS_GTT => Kind::Gtt,
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Kind::Userptr,
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL => Kind::Doorbell,
            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP => Kind::MmioRemap,
            _ => return Err(Errno::INVAL),
        };
        if a.size == 0 || a.va_addr == 0 || a.va_addr % PAGE_BYTES != 0 {
            return Err(Errno::INVAL);
        }
        let size = round_up_page(a.size).ok_or(Errno::INVAL)?;
        if a.va_addr.checked_add(size).is_none() {
            return Err(Errno::INVAL);
        }
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if allocs.overlaps(a.va_addr, size) {
            return Err(Errno::INVAL);
        }
        match kind {
            Kind::Vram if allocs.vram_used(gpu.gpu_id).saturating_add(size) > gpu.vram_bytes => {
                return Err(Errno::NOMEM)
            }
            Kind::Gtt | Kind::Userptr
                if allocs.system_used().saturating_add(size) > self.device.system_bytes =>
            {
                return Err(Errno::NOMEM)
            }
            Kind::Doorbell if size != DOORBELL_PAGE_BYTES => return Err(Errno::INVAL),
            Kind::MmioRemap if size != PAGE_BYTES => return Err(Errno::INVAL),
            _ => {}
        }
        let id = allocs.next_id();
        let handle = (u64::from(gpu.gpu_id) << 32) | u64::from(id);
        let (backing, region, mmap_offset) = match kind {
            Kind::Userptr => {
                if a.mmap_offset % PAGE_BYTES != 0 {
                    return Err(Errno::INVAL);
                }
                (None, self.device.user.user_region(a.mmap_offset, size)?, 0)
            }
            Kind::Doorbell => {
                let b = gpu.doorbells.clone();
                let r = b.region();
                (Some(b), r, u64::from(id) << 24)
            }
            // The GPU's one MMIO page, mapped through /dev/kfd (the offset below), not the
            // render node.
            Kind::MmioRemap => {
                let b = gpu.mmio.clone();
                let r = b.region();
                (Some(b), r, 0)
            }
            _ => {
                let b = Arc::new(Backing::new(mem::EXPORT_NAME, size)?);
                let r = b.region();
                (Some(b), r, u64::from(id) << 24)
            }
        };
        if mmap_offset != 0 {
            a.mmap_offset = mmap_offset;
        }
        // kfd_ioctl_alloc_memory_of_gpu: "MMIO is mapped through kfd device".
        if kind == Kind::MmioRemap {
            a.mmap_offset = KFD_MMAP_TYPE_MMIO | kfd_mmap_gpu_id(gpu.gpu_id);
        }
        a.handle = handle;
        allocs.insert(Alloc {
            va: a.va_addr,
            size,
            gpu_id: gpu.gpu_id,
            handle,
            mmap_offset,
            kind,
            region,
            backing,
            mapped: Default::default(),
            pins: 0,
        });
        Ok(())
    }

    /// EXPORT_DMABUF as `kfd_ioctl_export_dmabuf`: `EINVAL` for an unknown handle (or its GPU)
    /// or flags other than `O_CLOEXEC`/`O_RDWR`; `EPERM` for `USERPTR` memory (amdgpu will not
    /// export user pages) and `EINVAL` for the doorbell and MMIO pages; otherwise a new
    /// descriptor of the buffer object's memfd pages, which the caller owns.
    fn export_dmabuf(&self, a: &mut ExportDmabufArgs) -> Result<(), Errno> {
        use std::os::fd::IntoRawFd;
        let allowed = (rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::RDWR).bits();
        if a.flags & !allowed != 0 {
            return Err(Errno::INVAL);
        }
        self.gpu((a.handle >> 32) as u32)?;
        let allocs = self
            .device
            .allocs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let bo = allocs.by_handle(a.handle).ok_or(Errno::INVAL)?;
        let backing = match bo.kind {
            Kind::Userptr => return Err(Errno::PERM),
            Kind::Doorbell | Kind::MmioRemap => return Err(Errno::INVAL),
            Kind::Vram | Kind::Gtt | Kind::Imported => bo.backing.as_ref().ok_or(Errno::INVAL)?,
        };
        let fd = backing.export()?.into_raw_fd();
        a.dmabuf_fd = fd as u32;
        Ok(())
    }

    /// IMPORT_DMABUF as `kfd_ioctl_import_dmabuf`: the dma-buf's pages (an emulated device's
    /// export, of this process or another: the memfd is shared) become a new buffer object of
    /// this process at `va_addr` on `gpu_id`, the dma-buf's whole size, not yet mapped to any
    /// GPU; the user maps them for the host through the dma-buf itself
    /// ([`MapTarget::DmaBuf`]). `EINVAL` for an unknown GPU, an unaligned or overlapping
    /// address, or a descriptor that is not an emulated device's dma-buf; `EBADF` for a
    /// number that names no descriptor.
    fn import_dmabuf(&self, a: &mut ImportDmabufArgs) -> Result<(), Errno> {
        let gpu = self.gpu(a.gpu_id)?;
        if a.va_addr == 0 || a.va_addr % PAGE_BYTES != 0 {
            return Err(Errno::INVAL);
        }
        let backing = Arc::new(Backing::import(a.dmabuf_fd)?);
        let region = backing.region();
        let size = backing.len();
        if a.va_addr.checked_add(size).is_none() {
            return Err(Errno::INVAL);
        }
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if allocs.overlaps(a.va_addr, size) {
            return Err(Errno::INVAL);
        }
        let id = allocs.next_id();
        let handle = (u64::from(gpu.gpu_id) << 32) | u64::from(id);
        allocs.insert(Alloc {
            va: a.va_addr,
            size,
            gpu_id: gpu.gpu_id,
            handle,
            mmap_offset: 0,
            kind: Kind::Imported,
            region,
            backing: Some(backing),
            mapped: Default::default(),
            pins: 0,
        });
        a.handle = handle;
        Ok(())
    }

    fn map(
        &self,
        handle: u64,
        ids_ptr: u64,
        n_devices: u32,
        n_success: &mut u32,
        map: bool,
    ) -> Result<(), Errno> {
        if n_devices == 0 || n_devices > MAX_MAP_DEVICES || *n_success > n_devices {
            return Err(Errno::INVAL);
        }
        let mut raw = vec![0u8; n_devices as usize * 4];
        self.device.user.read(ids_ptr, &mut raw)?;
        let ids: Vec<u32> = raw
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if allocs.by_handle(handle).is_none() {
            return Err(Errno::INVAL);
        }
        for (i, &id) in ids.iter().enumerate().skip(*n_success as usize) {
            self.gpu(id)?;
            let a = allocs.by_handle_mut(handle).ok_or(Errno::INVAL)?;
            if map {
                a.mapped.insert(id);
            } else if !a.mapped.remove(&id) {
                return Err(Errno::INVAL);
            }
            *n_success = i as u32 + 1;
        }
        Ok(())
    }

    /// CREATE_EVENT as `kfd_ioctl_create_event` does it:
    /// - a non-zero `event_page_offset` names the user's buffer object that becomes the
    ///   process's event page, whatever the event's type (ROCR's first event is a memory
    ///   event); it must be a GTT BO of at least [`EVENT_PAGE_BYTES`] (amdkfd maps it into the
    ///   kernel), and a process has one event page for its whole life: naming another once one
    ///   is set is `EINVAL` ("Event page is already set");
    /// - the first signal event of a process that named none gets a page of the device's own,
    ///   which the user maps from `/dev/kfd`;
    /// - a signal event always returns `event_page_offset = KFD_MMAP_TYPE_EVENTS`
    ///   (`kfd_event_create`), its slot index and trigger data.
    fn create_event(&self, a: &mut CreateEventArgs) -> Result<(), Errno> {
        let mut ev = lock(&self.device.events);
        if a.event_page_offset != 0 {
            // Lock order: allocations, then events.
            drop(ev);
            let mut allocs = self
                .device
                .allocs
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            ev = lock(&self.device.events);
            if ev.page.is_some() {
                return Err(Errno::INVAL);
            }
            let alloc = allocs
                .by_handle_mut(a.event_page_offset)
                .ok_or(Errno::INVAL)?;
            // amdkfd maps the page into the kernel, which only a GTT buffer object allows
            // (amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel: EINVAL for USERPTR, and a VRAM BO
            // cannot be pinned in GTT).
            if alloc.size < EVENT_PAGE_BYTES || alloc.kind != Kind::Gtt {
                return Err(Errno::INVAL);
            }
            // Pinned for the process's life: FREE of it is EPERM (kfd_ioctl_free_memory_of_gpu).
            alloc.pins += 1;
            ev.page = Some(EventPage {
                region: alloc.region,
                own: None,
                user_bases: vec![alloc.va],
                user_handle: Some(alloc.handle),
            });
            for s in 0..KFD_SIGNAL_EVENT_LIMIT {
                ev.clear_slot(s);
            }
        }
        let is_signal =
            a.event_type == KFD_IOC_EVENT_SIGNAL || a.event_type == KFD_IOC_EVENT_DEBUG_EVENT;
        if !is_signal {
            let id = ev.next_other_id()?;
            ev.table.insert(
                id,
                Event {
                    event_type: a.event_type,
                    auto_reset: a.auto_reset != 0,
                    signaled: false,
                    slot: None,
                    data: [0; 32],
                },
            );
            a.event_id = id;
            a.event_trigger_data = id;
            return Ok(());
        }
        if ev.page.is_none() {
            let own = Backing::new("hsa-emulated-events", EVENT_PAGE_BYTES)?;
            ev.page = Some(EventPage {
                region: own.region(),
                own: Some(own),
                user_bases: Vec::new(),
                user_handle: None,
            });
            // Fill every slot with UNSIGNALED_EVENT_SLOT.
            for s in 0..KFD_SIGNAL_EVENT_LIMIT {
                ev.clear_slot(s);
            }
        }
        let slot = ev.free_slot().ok_or(Errno::NOSPC)?;
        ev.clear_slot(slot);
        ev.table.insert(
            slot,
            Event {
                event_type: a.event_type,
                auto_reset: a.auto_reset != 0,
                signaled: false,
                slot: Some(slot),
                data: [0; 32],
            },
        );
        a.event_id = slot;
        a.event_slot_index = slot;
        a.event_trigger_data = slot;
        a.event_page_offset = KFD_MMAP_EVENTS_OFFSET;
        Ok(())
    }

    /// DESTROY_EVENT. The event page stays: amdkfd keeps it (and the user's buffer object
    /// behind it) until the process closes `/dev/kfd`, so later events keep their mailboxes.
    fn destroy_event(&self, id: u32) -> Result<(), Errno> {
        lock(&self.device.events)
            .destroy(id)
            .map(|_| ())
            .ok_or(Errno::INVAL)
    }

    fn wait_events(&self, a: &mut WaitEventsArgs) -> Result<(), Errno> {
        if a.num_events > KFD_SIGNAL_EVENT_LIMIT {
            return Err(Errno::INVAL);
        }
        let mut raw = vec![0u8; a.num_events as usize * size_of::<EventData>()];
        if !raw.is_empty() {
            self.device.user.read(a.events_ptr, &mut raw)?;
        }
        let ids: Vec<u32> = raw
            .chunks_exact(size_of::<EventData>())
            .map(|c| {
                EventData::read_from_bytes(c)
                    .map(|d| d.event_id)
                    .unwrap_or(u32::MAX)
            })
            .collect();
        let deadline = (a.timeout != u32::MAX)
            .then(|| Instant::now() + Duration::from_millis(u64::from(a.timeout)));
        let mut ev = lock(&self.device.events);
        // As kfd_wait_on_events: an unknown event is EINVAL before the wait; one destroyed
        // during it ends the wait with KFD_IOC_WAIT_RESULT_FAIL and EIO.
        if ids.iter().any(|id| !ev.table.contains_key(id)) {
            return Err(Errno::INVAL);
        }
        // Woken by its own events only (set, signalled by type, or destroyed), as amdkfd's
        // waiter on each event's wait queue; unregistered on every way out.
        let (key, cv) = ev.add_waiter(&ids);
        let r = self.wait_events_registered(a, &ids, deadline, ev, key, &cv);
        lock(&self.device.events).remove_waiter(key);
        r
    }

    /// The loop of [`EmulatedKfd::wait_events`] once its waiter `key` (sleeping on `cv`) is
    /// registered; `ev` is the locked event table.
    fn wait_events_registered(
        &self,
        a: &mut WaitEventsArgs,
        ids: &[u32],
        deadline: Option<Instant>,
        mut ev: std::sync::MutexGuard<'_, Events>,
        key: events::WaiterKey,
        cv: &Condvar,
    ) -> Result<(), Errno> {
        loop {
            // Whatever woke it is looked at now; what happens from here on wakes it again.
            ev.take_woken(key);
            let mut fired = Vec::new();
            for (i, &id) in ids.iter().enumerate() {
                if !ev.table.contains_key(&id) {
                    a.wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                    return Err(Errno::IO);
                }
                ev.poll_slot(id);
                if let Some(e) = ev.table.get(&id).filter(|e| e.signaled) {
                    fired.push((i, e.event_type, e.data));
                }
            }
            let done = if a.wait_for_all != 0 {
                fired.len() == ids.len() && !ids.is_empty()
            } else {
                !fired.is_empty()
            };
            if done {
                for &id in ids {
                    if let Some(e) = ev.table.get_mut(&id) {
                        if e.signaled && e.auto_reset {
                            e.signaled = false;
                        }
                    }
                }
                drop(ev);
                // copy_signaled_event_data: the exception data of each memory or
                // hardware-exception event that fired goes back into its entry's union.
                for (i, event_type, data) in fired {
                    let bytes = match event_type {
                        KFD_IOC_EVENT_MEMORY => &data[..],
                        KFD_IOC_EVENT_HW_EXCEPTION => &data[..16],
                        _ => continue,
                    };
                    let at = a.events_ptr + (i * size_of::<EventData>()) as u64;
                    self.device.user.write(at, bytes)?;
                }
                a.wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
                return Ok(());
            }
            let wait = match deadline {
                None => Duration::from_millis(10),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        a.wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
                        return Ok(());
                    }
                    (d - now).min(Duration::from_millis(10))
                }
            };
            // Slots written by the host (not through SET_EVENT) are seen at the next poll; a
            // SET_EVENT, a processor's interrupt or a destroy of one of `ids` wakes this
            // waiter at once (and no other).
            ev = cv
                .wait_timeout(ev, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn create_queue(&self, a: &mut CreateQueueArgs) -> Result<(), Errno> {
        if matches!(
            a.queue_type,
            KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
        ) {
            return self.create_sdma_queue(a);
        }
        let gpu = self.gpu(a.gpu_id)?;
        if a.queue_type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
            || a.queue_percentage > KFD_MAX_QUEUE_PERCENTAGE
            || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
            || !a.ring_size.is_power_of_two()
            || a.ring_size < KFD_MIN_QUEUE_RING_SIZE
        {
            return Err(Errno::INVAL);
        }
        if a.ring_base_address == 0 || a.read_pointer_address == 0 || a.write_pointer_address == 0 {
            return Err(Errno::FAULT);
        }
        // AQL: the pointers are amd_queue_t.write_dispatch_id (56) and read_dispatch_id (128).
        let amd_queue = a.write_pointer_address.wrapping_sub(56);
        if a.read_pointer_address.wrapping_sub(128) != amd_queue || amd_queue % 64 != 0 {
            return Err(Errno::INVAL);
        }
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let ring_region = allocs
            .device_region(gpu.gpu_id, a.ring_base_address, u64::from(a.ring_size))
            .ok_or(Errno::INVAL)?;
        let queue_region = allocs
            .device_region(gpu.gpu_id, amd_queue, 256)
            .ok_or(Errno::FAULT)?;
        let mut queues = lock(&self.device.queues);
        // As pqm_create_queue: the process's queues on this GPU are limited (ENOSPC).
        let on_gpu = queues.values().filter(|q| q.gpu_id == gpu.gpu_id).count() as u32;
        if on_gpu >= gpu.max_queues {
            return Err(Errno::NOSPC);
        }
        let qid = (0..MAX_QUEUES_PER_PROCESS)
            .find(|i| !queues.contains_key(i))
            .ok_or(Errno::NOSPC)?;
        let consumer =
            mem::ring_consumer(ring_region, a.ring_size / 64, queue_region).ok_or(Errno::INVAL)?;
        let ctl = Arc::new(QueueCtl::default());
        ctl.inactive
            .store(a.queue_percentage == 0, Ordering::SeqCst);
        *lock(&ctl.cu_enable) = gpu.layout.all_cus();
        let mut processor = PacketProcessor::new(consumer);
        // The kernel's dispatch and queue pointers are device addresses, not the device's
        // own view of the memory the consumer reads through.
        processor.set_device_addresses(GpuVa(a.ring_base_address), GpuVa(amd_queue));
        // The queue's doorbell: 8 bytes at `qid * 8` of the GPU's doorbell page, the offset
        // CREATE_QUEUE returns below.
        let doorbell = gpu
            .doorbells
            .region()
            .sub(u64::from(qid) * 8, 8)
            .ok_or(Errno::NOSPC)?;
        let cp = CpThread {
            device: self.device.clone(),
            ctl: ctl.clone(),
            processor,
            doorbell,
            queue_id: qid,
            gpu_id: gpu.gpu_id,
            lds_bytes: gpu.lds_bytes,
        };
        let thread = std::thread::Builder::new()
            .name(format!("emu-cp-q{qid}"))
            .spawn(move || cp.run())
            .map_err(|_| Errno::NOMEM)?;
        let mut pinned = Vec::new();
        for va in [a.ring_base_address, amd_queue] {
            if let Some(al) = allocs.mapped_containing_mut(gpu.gpu_id, va, 1) {
                al.pins += 1;
                pinned.push(al.handle);
            }
        }
        queues.insert(
            qid,
            QueueEntry {
                gpu_id: gpu.gpu_id,
                queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                ring_va: a.ring_base_address,
                ring_size: a.ring_size,
                pinned,
                ctl,
                thread: Some(thread),
            },
        );
        lock(&self.device.queue_errors).remove(&qid);
        a.queue_id = qid;
        a.doorbell_offset = kfd_mmap_doorbell_offset(gpu.gpu_id) | (u64::from(qid) * 8);
        Ok(())
    }

    /// CREATE_QUEUE of an SDMA queue (amdkfd `set_queue_properties_from_user`,
    /// `allocate_sdma_queue`): the ring, read and write pointers must lie in memory mapped to
    /// the GPU (the pointers 8-byte aligned: the engine writes the 64-bit read pointer back);
    /// EOP and context-save buffers are not used.
    fn create_sdma_queue(&self, a: &mut CreateQueueArgs) -> Result<(), Errno> {
        let gpu = self.gpu(a.gpu_id)?;
        if a.queue_percentage > KFD_MAX_QUEUE_PERCENTAGE
            || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
            || !a.ring_size.is_power_of_two()
            || a.ring_size < KFD_MIN_QUEUE_RING_SIZE
        {
            return Err(Errno::INVAL);
        }
        if a.ring_base_address == 0 || a.read_pointer_address == 0 || a.write_pointer_address == 0 {
            return Err(Errno::FAULT);
        }
        if a.read_pointer_address % 8 != 0 || a.write_pointer_address % 8 != 0 {
            return Err(Errno::INVAL);
        }
        let props = self
            .device
            .topology
            .nodes
            .iter()
            .find(|n| n.properties.gpu_id == gpu.gpu_id)
            .map(|n| n.properties.clone())
            .ok_or(Errno::INVAL)?;
        let xgmi = a.queue_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
        let engines = if xgmi {
            props.num_sdma_xgmi_engines
        } else {
            props.num_sdma_engines
        };
        let sdma_slots = engines.saturating_mul(props.num_sdma_queues_per_engine);
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let ring = allocs
            .device_region(gpu.gpu_id, a.ring_base_address, u64::from(a.ring_size))
            .ok_or(Errno::INVAL)?;
        let rptr = allocs
            .device_region(gpu.gpu_id, a.read_pointer_address, 8)
            .ok_or(Errno::FAULT)?;
        allocs
            .device_region(gpu.gpu_id, a.write_pointer_address, 8)
            .ok_or(Errno::FAULT)?;
        let mut queues = lock(&self.device.queues);
        let on_gpu = queues.values().filter(|q| q.gpu_id == gpu.gpu_id).count() as u32;
        if on_gpu >= gpu.max_queues {
            return Err(Errno::NOSPC);
        }
        let sdma_on_gpu = queues
            .values()
            .filter(|q| q.gpu_id == gpu.gpu_id && q.queue_type == a.queue_type)
            .count() as u32;
        if sdma_on_gpu >= sdma_slots {
            return Err(Errno::NOMEM);
        }
        let qid = (0..MAX_QUEUES_PER_PROCESS)
            .find(|i| !queues.contains_key(i))
            .ok_or(Errno::NOSPC)?;
        let doorbell = gpu
            .doorbells
            .region()
            .sub(u64::from(qid) * 8, 8)
            .ok_or(Errno::NOSPC)?;
        // A new queue starts at 0: its doorbell too (a destroyed queue's may be left over).
        if let Some(w) = doorbell.atomic_u64(0) {
            w.store(0, Ordering::Release);
        }
        let ctl = Arc::new(QueueCtl::default());
        ctl.inactive
            .store(a.queue_percentage == 0, Ordering::SeqCst);
        let engine = sdma::SdmaThread {
            device: self.device.clone(),
            ctl: ctl.clone(),
            ring,
            rptr,
            doorbell,
            queue_id: qid,
            gpu_id: gpu.gpu_id,
            count_width: gpu.sdma_count_width,
        };
        let thread = std::thread::Builder::new()
            .name(format!("emu-sdma-q{qid}"))
            .spawn(move || engine.run())
            .map_err(|_| Errno::NOMEM)?;
        let mut pinned = Vec::new();
        for va in [
            a.ring_base_address,
            a.read_pointer_address,
            a.write_pointer_address,
        ] {
            if let Some(al) = allocs.mapped_containing_mut(gpu.gpu_id, va, 1) {
                al.pins += 1;
                pinned.push(al.handle);
            }
        }
        queues.insert(
            qid,
            QueueEntry {
                gpu_id: gpu.gpu_id,
                queue_type: a.queue_type,
                ring_va: a.ring_base_address,
                ring_size: a.ring_size,
                pinned,
                ctl,
                thread: Some(thread),
            },
        );
        lock(&self.device.queue_errors).remove(&qid);
        a.queue_id = qid;
        a.doorbell_offset = kfd_mmap_doorbell_offset(gpu.gpu_id) | (u64::from(qid) * 8);
        Ok(())
    }

    fn destroy_queue(&self, qid: u32) -> Result<(), Errno> {
        let mut q = lock(&self.device.queues).remove(&qid).ok_or(Errno::INVAL)?;
        q.ctl.stop.store(true, Ordering::SeqCst);
        q.ctl.kick();
        if let Some(t) = q.thread.take() {
            let _ = t.join();
        }
        let mut allocs = self
            .device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for h in q.pinned {
            if let Some(a) = allocs.by_handle_mut(h) {
                a.pins = a.pins.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// UPDATE_QUEUE (`kfd_ioctl_update_queue`, `pqm_update_queue_properties`): percentage
    /// and priority beyond their maxima are `EINVAL`, as is an unknown queue. The ring must
    /// stay where it is (`EINVAL` otherwise; amdkfd would move the queue to a new ring, which
    /// ROCR never asks). A `queue_percentage` of 0 makes the queue inactive, as amdkfd's
    /// `QUEUE_IS_ACTIVE` does (ROCR's `AqlQueue::Suspend`): its engine takes no packet until
    /// an update with a non-zero percentage.
    fn update_queue(&self, a: &mut UpdateQueueArgs) -> Result<(), Errno> {
        let queues = lock(&self.device.queues);
        let q = queues.get(&a.queue_id).ok_or(Errno::INVAL)?;
        if a.queue_percentage > KFD_MAX_QUEUE_PERCENTAGE
            || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
        {
            return Err(Errno::INVAL);
        }
        if a.ring_base_address != q.ring_va || a.ring_size != q.ring_size {
            return Err(Errno::INVAL);
        }
        q.ctl
            .inactive
            .store(a.queue_percentage == 0, Ordering::SeqCst);
        q.ctl.kick();
        Ok(())
    }

    /// SET_CU_MASK (`kfd_ioctl_set_cu_mask`, `pqm_update_mqd`): `num_cu_mask` must be a
    /// non-zero multiple of 32 (`EINVAL`); at most 1024 bits are read (`EFAULT` when they are
    /// not mapped); an unknown queue is `EINVAL`. A compute queue's HQD enable masks become
    /// the mapped mask ([`cu_mask::ShaderLayout::map_cu_mask`]), used from its next dispatch
    /// on. As amdkfd on gfx9, a mask that enables no CU of the GPU (all zero, or only bits
    /// past its CU count) is accepted: the queue's dispatches then wait for a mask that
    /// enables one (amdkfd's comment: such a queue hangs). An SDMA queue takes the mask and
    /// ignores it (amdkfd's SDMA MQD manager has no CU mask).
    fn set_cu_mask(&self, a: &mut SetCuMaskArgs) -> Result<(), Errno> {
        if a.num_cu_mask == 0 || a.num_cu_mask % 32 != 0 {
            return Err(Errno::INVAL);
        }
        // As the kernel, at most 1024 mask bits are read.
        let words = (a.num_cu_mask / 32).min(32) as usize;
        let mut raw = vec![0u8; words * 4];
        self.device.user.read(a.cu_mask_ptr, &mut raw)?;
        let mask: Vec<u32> = raw
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let queues = lock(&self.device.queues);
        let q = queues.get(&a.queue_id).ok_or(Errno::INVAL)?;
        if q.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL {
            let gpu = self.gpu(q.gpu_id)?;
            *lock(&q.ctl.cu_enable) = gpu.layout.map_cu_mask(&mask);
            q.ctl.kick();
        }
        Ok(())
    }

    /// A compute queue's `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` (its HQD's per-engine CU
    /// enable masks: bit `cu + 16 * sh` of word `se`, [`crate::gfx9::hwid`]), as a debugger
    /// reads them from the MQD: every CU of the GPU until SET_CU_MASK maps a user mask into
    /// them. `None` for an unknown or SDMA queue.
    pub fn compute_static_thread_mgmt(&self, queue_id: u32) -> Option<[u32; 8]> {
        let queues = lock(&self.device.queues);
        let q = queues.get(&queue_id)?;
        (q.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL).then(|| *lock(&q.ctl.cu_enable))
    }

    /// # Safety
    /// As [`KfdDriver::mmap`].
    #[allow(unsafe_code)]
    unsafe fn mmap_kfd(
        &self,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno> {
        match offset & KFD_MMAP_TYPE_MASK {
            KFD_MMAP_TYPE_DOORBELL => {
                let hash = kfd_mmap_get_gpu_id(offset);
                let gpu = self
                    .device
                    .gpus
                    .iter()
                    .find(|g| g.gpu_id & 0xffff == hash)
                    .ok_or(Errno::INVAL)?;
                if offset & !(KFD_MMAP_TYPE_MASK | KFD_MMAP_GPU_ID_MASK) != 0
                    || len as u64 != DOORBELL_PAGE_BYTES
                {
                    return Err(Errno::INVAL);
                }
                // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
                unsafe { gpu.doorbells.map_at(addr, len) }
            }
            // kfd_mmio_mmap: the GPU's remapped MMIO page, exactly one page.
            KFD_MMAP_TYPE_MMIO => {
                let hash = kfd_mmap_get_gpu_id(offset);
                let gpu = self
                    .device
                    .gpus
                    .iter()
                    .find(|g| g.gpu_id & 0xffff == hash)
                    .ok_or(Errno::INVAL)?;
                if offset & !(KFD_MMAP_TYPE_MASK | KFD_MMAP_GPU_ID_MASK) != 0
                    || len as u64 != PAGE_BYTES
                {
                    return Err(Errno::INVAL);
                }
                // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
                unsafe { gpu.mmio.map_at(addr, len) }
            }
            KFD_MMAP_TYPE_EVENTS => {
                if offset != KFD_MMAP_EVENTS_OFFSET || len == 0 || len as u64 > EVENT_PAGE_BYTES {
                    return Err(Errno::INVAL);
                }
                let mut ev = lock(&self.device.events);
                let page = ev.page.as_mut().ok_or(Errno::INVAL)?;
                let own = page.own.as_ref().ok_or(Errno::INVAL)?;
                // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
                let p = unsafe { own.map_at(addr, len) }?;
                page.user_bases.push(p.as_ptr() as u64);
                Ok(p)
            }
            _ => Err(Errno::INVAL),
        }
    }

    /// # Safety
    /// As [`KfdDriver::mmap`].
    #[allow(unsafe_code)]
    unsafe fn mmap_render(
        &self,
        gpu_id: u32,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno> {
        self.gpu(gpu_id)?;
        let allocs = self
            .device
            .allocs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let a = allocs.by_mmap_offset(offset).ok_or(Errno::INVAL)?;
        if a.gpu_id != gpu_id || len as u64 > a.size {
            return Err(Errno::INVAL);
        }
        let backing = a.backing.as_ref().ok_or(Errno::INVAL)?;
        // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
        unsafe { backing.map_at(addr, len) }
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
            None => self.dispatch(request, arg),
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
                    MapTarget::Kfd => self.mmap_kfd(offset, len, addr),
                    MapTarget::RenderNode(gpu_id) => self.mmap_render(gpu_id, offset, len, addr),
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
}

impl Drop for EmulatedKfd {
    fn drop(&mut self) {
        let ids: Vec<u32> = lock(&self.device.queues).keys().copied().collect();
        for id in ids {
            let _ = self.destroy_queue(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_linux::kfd::calls::plain_ioctl;

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
        assert_eq!((v.major_version, v.minor_version), (1, 11));
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
        assert_eq!(x, [1, 0, 0, 0, 11, 0, 0, 0]);
        let mut y = [0u8; 8];
        assert_eq!(raw(&d, ioc(IOC_WRITE, 0, 0x01, 8), &mut y), Ok(()));
        assert_eq!(y, [1, 0, 0, 0, 11, 0, 0, 0]);
        assert_eq!(d.ioctl_count(), 5);
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
