//! The one trait through which the core reaches hardware and the OS: [`Platform`], with its
//! topology apart in the supertrait [`TopologySource`].
//!
//! The shape follows virtio-drivers' `Hal`: every method says what the implementer guarantees
//! (`# Implementation safety`) and, where the caller has obligations, what the caller guarantees
//! (`# Safety`). Methods take `&self` so that two devices (two fakes in one test) never need
//! global state. Verbs use ROCR/amdkfd names (`allocate_memory`, `create_queue`,
//! `ring_doorbell`, `create_event`, `wait_event`).
//!
//! Topology is read by index (`node(i)`, `memory_bank(node, i)`, ...) so that it needs no
//! allocator: a no_std host can answer from static tables. The runtime reads it once, when it
//! starts; [`Platform`]'s own methods (memory, queues, events, time) are what it calls while it
//! runs. Errors are the core's own [`Error`].
#![allow(unsafe_code)] // an unsafe trait with unsafe methods; no unsafe blocks here

pub mod capability;
#[cfg(feature = "fake")]
pub mod fake;

pub use capability::{
    Capabilities, HostMemoryRegistration, MemoryFaultReports, MemorySharing, SdmaQueues,
    VirtualAddressRanges,
};

use core::fmt;
use core::ptr::NonNull;

use crate::addr::{EventId, GpuVa, NodeId, QueueId};
use crate::status::{Error, Result, Status};

/// Capacity, in bytes, of a node's name and marketing name.
pub const NAME_CAPACITY: usize = 64;

/// The kind of device a topology node is.
///
/// Ref: `hsa_device_type_t` (HSA Runtime 1.2 §2.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
#[non_exhaustive]
pub enum DeviceType {
    /// A CPU (`HSA_DEVICE_TYPE_CPU`, 0): the node has `cpu_cores_count > 0` and no SIMDs.
    Cpu = 0,
    /// A GPU (`HSA_DEVICE_TYPE_GPU`, 1): the node has SIMDs.
    Gpu = 1,
    /// A DSP (`HSA_DEVICE_TYPE_DSP`, 2).
    Dsp = 2,
}

/// One topology node's properties: the fields of amdkfd's
/// `/sys/devices/virtual/kfd/kfd/topology/nodes/N/properties` (names kept), plus `name` and
/// `gpu_id` from the files of the same name, and what the platform derived.
///
/// Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_topology.c` (`node_show`), `kfd_sysfs.h`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProperties {
    /// The node's id (`nodes/N`).
    pub node_id: u32,
    /// `gpu_id`: the driver's handle for the GPU (0 for a CPU node).
    pub gpu_id: u32,
    /// `name`: the ISA-ish name the kernel reports ("gfx90a", or a CPU's model); may be empty.
    pub name: heapless::String<NAME_CAPACITY>,
    /// Marketing name (e.g. "AMD Instinct MI210"); empty when the platform does not know it.
    pub marketing_name: heapless::String<NAME_CAPACITY>,
    /// `cpu_cores_count`.
    pub cpu_cores_count: u32,
    /// `simd_count`: SIMDs on the node (0 for a CPU).
    pub simd_count: u32,
    /// `mem_banks_count`.
    pub mem_banks_count: u32,
    /// `caches_count`.
    pub caches_count: u32,
    /// `io_links_count`.
    pub io_links_count: u32,
    /// `p2p_links_count`.
    pub p2p_links_count: u32,
    /// `cpu_core_id_base`.
    pub cpu_core_id_base: u32,
    /// `simd_id_base`.
    pub simd_id_base: u32,
    /// `max_waves_per_simd`.
    pub max_waves_per_simd: u32,
    /// `lds_size_in_kb`: group segment (LDS) per work-group, KiB.
    pub lds_size_in_kb: u32,
    /// `gds_size_in_kb`.
    pub gds_size_in_kb: u32,
    /// `num_gws`.
    pub num_gws: u32,
    /// `wave_front_size`: lanes per wavefront (32 or 64).
    pub wave_front_size: u32,
    /// `array_count`: shader arrays on the node.
    pub array_count: u32,
    /// `simd_arrays_per_engine`.
    pub simd_arrays_per_engine: u32,
    /// `cu_per_simd_array`.
    pub cu_per_simd_array: u32,
    /// `simd_per_cu`.
    pub simd_per_cu: u32,
    /// `max_slots_scratch_cu`.
    pub max_slots_scratch_cu: u32,
    /// `gfx_target_version` (e.g. 90010 for gfx90a); 0 where the kernel did not report it and
    /// the platform could not derive it.
    pub gfx_target_version: u32,
    /// `vendor_id` (PCI, 0x1002 = AMD).
    pub vendor_id: u32,
    /// `device_id` (PCI device id: HSA's chip id).
    pub device_id: u32,
    /// `location_id`: PCI bus/device/function (BDFID).
    pub location_id: u32,
    /// `domain`: PCI domain.
    pub domain: u32,
    /// `drm_render_minor`: N of `/dev/dri/renderD<N>`.
    pub drm_render_minor: i32,
    /// `hive_id`: XGMI hive (0 when none).
    pub hive_id: u64,
    /// `unique_id`: the GPU's unique id (0 when unknown).
    pub unique_id: u64,
    /// `num_sdma_engines`.
    pub num_sdma_engines: u32,
    /// `num_sdma_xgmi_engines`.
    pub num_sdma_xgmi_engines: u32,
    /// `num_sdma_queues_per_engine`.
    pub num_sdma_queues_per_engine: u32,
    /// `num_cp_queues`.
    pub num_cp_queues: u32,
    /// `max_engine_clk_fcompute`: GPU max clock, MHz.
    pub max_engine_clk_fcompute: u32,
    /// `max_engine_clk_ccompute`: CPU max clock, MHz.
    pub max_engine_clk_ccompute: u32,
    /// `local_mem_size`: bytes of local memory the kernel reports here (often 0; see banks).
    pub local_mem_size: u64,
    /// `fw_version`: the MEC firmware version.
    pub fw_version: u32,
    /// `capability`: HSA_CAP_* bits of `kfd_sysfs.h`.
    pub capability: u32,
    /// `debug_prop`.
    pub debug_prop: u32,
    /// `sdma_fw_version`.
    pub sdma_fw_version: u32,
    /// `num_xcc`: accelerated compute complexes in this partition (1 before gfx940).
    pub num_xcc: u32,
    /// Revision (ASIC revision) when the platform knows it, else 0.
    pub asic_revision: u32,
}

impl NodeProperties {
    /// CPU, GPU or DSP, from the SIMD and CPU-core counts (as ROCR decides).
    pub fn device_type(&self) -> DeviceType {
        if self.simd_count > 0 {
            DeviceType::Gpu
        } else {
            DeviceType::Cpu
        }
    }

    /// Compute units: `simd_count / simd_per_cu` for a GPU, CPU cores for a CPU.
    pub fn compute_unit_count(&self) -> u32 {
        match self.device_type() {
            DeviceType::Gpu if self.simd_per_cu > 0 => self.simd_count / self.simd_per_cu,
            DeviceType::Gpu => 0,
            _ => self.cpu_cores_count,
        }
    }
}

/// Heap type of a memory bank (`heap_type` in `mem_banks/N/properties`).
///
/// Ref: `HSA_MEM_HEAP_TYPE_*` in ROCR's `hsakmttypes.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeapType {
    /// System memory (0).
    System,
    /// Frame buffer visible to the host (1: `FB_PUBLIC`).
    FrameBufferPublic,
    /// Frame buffer the host cannot see (2: `FB_PRIVATE`).
    FrameBufferPrivate,
    /// GPU global data share (3).
    GpuGds,
    /// GPU LDS (4).
    GpuLds,
    /// GPU scratch (5).
    GpuScratch,
    /// A value this version does not know.
    Other(u32),
}

impl HeapType {
    /// From the raw `heap_type` value.
    pub fn from_raw(raw: u32) -> HeapType {
        match raw {
            0 => HeapType::System,
            1 => HeapType::FrameBufferPublic,
            2 => HeapType::FrameBufferPrivate,
            3 => HeapType::GpuGds,
            4 => HeapType::GpuLds,
            5 => HeapType::GpuScratch,
            n => HeapType::Other(n),
        }
    }
}

/// One memory bank of a node (`nodes/N/mem_banks/M/properties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBank {
    /// `heap_type`.
    pub heap_type: HeapType,
    /// `size_in_bytes`.
    pub size_bytes: u64,
    /// `flags` (`HSA_MEM_FLAGS_*`).
    pub flags: u32,
    /// `width`: bus width, bits.
    pub width_bits: u32,
    /// `mem_clk_max`: MHz.
    pub mem_clk_max_mhz: u32,
}

/// One cache of a node (`nodes/N/caches/M/properties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cache {
    /// `processor_id_low`.
    pub processor_id_low: u32,
    /// `level` (1, 2, 3...).
    pub level: u32,
    /// `size`: KiB.
    pub size_kib: u32,
    /// `cache_line_size`: bytes.
    pub cache_line_size_bytes: u32,
    /// `type` (`HSA_CACHE_TYPE_*` bits: data 1, instruction 2, CPU 4, HSACU 8).
    pub cache_type: u32,
}

/// One IO link or P2P link of a node (`nodes/N/io_links/M/properties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoLink {
    /// `type` (`HSA_IOLINKTYPE_*`: 2 PCIe, 11 XGMI, ...).
    pub link_type: u32,
    /// `node_from`.
    pub node_from: u32,
    /// `node_to`.
    pub node_to: u32,
    /// `weight`: relative distance.
    pub weight: u32,
    /// `min_bandwidth`, MB/s.
    pub min_bandwidth: u32,
    /// `max_bandwidth`, MB/s.
    pub max_bandwidth: u32,
    /// `flags`.
    pub flags: u32,
    /// `recommended_sdma_engine_id_mask` (amdkfd 1.17+, `kfd_set_recommended_sdma_engines`):
    /// the SDMA engines amdkfd recommends for copies over this link, bit N for engine id N
    /// (the PCIe engines first, then the xGMI ones); 0 where the topology does not say
    /// (kernels before 1.17).
    pub rec_sdma_eng_id_mask: u32,
    /// Whether this came from `p2p_links` rather than `io_links`.
    pub p2p: bool,
}

bitflags::bitflags! {
    /// How a chunk of backing memory is to be allocated.
    ///
    /// Ref: `KFD_IOC_ALLOC_MEM_FLAGS_*` in `kfd_ioctl.h`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MemoryFlags: u32 {
        /// The host must be able to read and write it (a host pointer is returned).
        const HOST_ACCESS = 1 << 0;
        /// Fine-grained: coherent between host and agents while both use it.
        const FINE_GRAINED = 1 << 1;
        /// Uncached on the device (signals, queue rings).
        const UNCACHED = 1 << 2;
        /// The device may execute from it (code objects).
        const EXECUTABLE = 1 << 3;
        /// Read-only for the device.
        const READ_ONLY = 1 << 4;
        /// Other processes may import it ([`MemorySharing::export_memory`]): on Linux a system
        /// chunk is then a KFD GTT buffer object, not host pages registered as USERPTR
        /// (which amdgpu does not export). Device-local chunks are shareable anyway.
        const SHAREABLE = 1 << 5;
        /// Physically contiguous (device-local memory; best effort on amdkfd:
        /// `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT`, interface 1.16). Ignored for
        /// system memory, as ROCR 7 ignores `HSA_AMD_MEMORY_POOL_CONTIGUOUS_FLAG` there.
        const CONTIGUOUS = 1 << 6;
    }
}

/// Where a chunk of backing memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// System memory (KFD GTT / USERPTR), reachable by the host.
    System,
    /// The node's device-local memory (KFD VRAM); the host may not be able to touch it.
    DeviceLocal,
}

/// A request for one chunk of backing memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRequest {
    /// The node whose memory (or whose view of system memory) it is.
    pub node: NodeId,
    /// System or device-local.
    pub kind: MemoryKind,
    /// Size, bytes: a multiple of 4096.
    pub size_bytes: u64,
    /// Alignment of the device address, bytes: a power of two, at least 4096.
    pub align_bytes: u64,
    /// Access and caching flags.
    pub flags: MemoryFlags,
}

/// A chunk of backing memory handed to the core by the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryChunk {
    /// The device address of the first byte.
    pub gpu_va: GpuVa,
    /// The host's pointer to the first byte, when the host can touch the memory.
    pub host_ptr: Option<NonNull<u8>>,
    /// Size, bytes.
    pub size_bytes: u64,
    /// The platform's handle for the chunk (KFD `handle`); opaque to the core.
    pub handle: u64,
}

// SAFETY: a MemoryChunk is a description (addresses and a handle), not access; whoever turns
// `host_ptr` into a reference upholds aliasing rules on its own.
unsafe impl Send for MemoryChunk {}
// SAFETY: as for Send: sharing the description gives no access by itself.
unsafe impl Sync for MemoryChunk {}

/// What another process needs to import a chunk this process exported
/// ([`MemorySharing::export_memory`], [`MemorySharing::import_memory`]): four words whose meaning is the
/// platform's (on Linux the exporter's process id, its dma-buf file descriptor and the
/// dma-buf's inode number, which tells a live export from a stale one) and the chunk's size.
///
/// Ref: the first words of `hsa_amd_ipc_memory_t` (`hsa_ext_amd.h`), which the C API builds
/// from this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SharedMemory {
    /// The platform's description of the export.
    pub token: [u32; 4],
    /// Size of the exported chunk, bytes (a multiple of 4096).
    pub size_bytes: u64,
}

/// The type of hardware queue to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// A compute queue that consumes AQL packets (KFD `KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`).
    ComputeAql,
}

/// A function the platform calls when the packet processor stops a queue with an error,
/// with the user data given at creation. C-shaped so it needs no allocator.
///
/// Ref: the `callback` parameter of `hsa_queue_create` (HSA Runtime 1.2 §2.6.2).
#[derive(Clone, Copy, Debug)]
pub struct QueueErrorCallback {
    /// Called once with the error and the queue's id.
    pub func: fn(error: &Error, queue: QueueId, data: usize),
    /// Passed back as `data`.
    pub data: usize,
}

bitflags::bitflags! {
    /// Why a GPU memory access faulted: `hsa_amd_memory_fault_reason_t` (`hsa_ext_amd.h`,
    /// ROCR 5.2), bits as that header numbers them. A fault may have several.
    ///
    /// On Linux they come from amdkfd's `kfd_hsa_memory_exception_data`: `NotPresent`,
    /// `ReadOnly`, `NoExecute` and `Imprecise` set the bit of that name; `ErrorType` 1 (SRAM
    /// ECC) sets `SRAMECC`, 2 (poison consumed) `DRAMECC`, 3 (GPU hang) `HANG`, as ROCR's
    /// `Runtime::VMFaultHandler` translates them.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MemoryFaultReason: u32 {
        /// `HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT`: page not present or supervisor privilege.
        const PAGE_NOT_PRESENT = 1 << 0;
        /// `HSA_AMD_MEMORY_FAULT_READ_ONLY`: write to a read-only page.
        const READ_ONLY = 1 << 1;
        /// `HSA_AMD_MEMORY_FAULT_NX`: execute of a page marked no-execute.
        const NX = 1 << 2;
        /// `HSA_AMD_MEMORY_FAULT_HOST_ONLY`: a GPU access to a host-only page.
        const HOST_ONLY = 1 << 3;
        /// `HSA_AMD_MEMORY_FAULT_DRAMECC`: DRAM ECC failure.
        const DRAMECC = 1 << 4;
        /// `HSA_AMD_MEMORY_FAULT_IMPRECISE`: the exact fault address is unknown.
        const IMPRECISE = 1 << 5;
        /// `HSA_AMD_MEMORY_FAULT_SRAMECC`: SRAM ECC failure (registers; no fault address).
        const SRAMECC = 1 << 6;
        /// `HSA_AMD_MEMORY_FAULT_HANG`: GPU reset after an unspecified hang.
        const HANG = 1 << 31;
    }
}

/// A GPU memory fault as the platform learned it: the GPU, the address, why. What the C API
/// hands its system event handlers as `hsa_amd_gpu_memory_fault_info_t` (`hsa_ext_amd.h`).
///
/// Ref: amdkfd `kfd_hsa_memory_exception_data` (`kfd_ioctl.h`), libhsakmt
/// `HsaMemoryAccessFault`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryFault {
    /// The topology node of the GPU whose access faulted.
    pub node: NodeId,
    /// The faulting device (virtual) address; meaningless with
    /// [`MemoryFaultReason::IMPRECISE`].
    pub address: GpuVa,
    /// Why it faulted.
    pub reason: MemoryFaultReason,
}

/// A function the platform calls on every GPU memory fault it learns of
/// ([`MemoryFaultReports::set_memory_fault_handler`]), with the user data given. C-shaped so it needs no
/// allocator.
///
/// Ref: ROCR's `Runtime::VMFaultHandler`, which hands each fault to the handlers of
/// `hsa_amd_register_system_event_handler`.
#[derive(Clone, Copy, Debug)]
pub struct MemoryFaultHandler {
    /// Called once per fault, on a thread of the platform's choosing, before the error
    /// callbacks of the queues the fault stopped run.
    pub func: fn(fault: &MemoryFault, data: usize),
    /// Passed back as `data`.
    pub data: usize,
}

/// A request to create a hardware queue over memory the core has prepared.
#[derive(Clone, Copy, Debug)]
pub struct QueueRequest {
    /// The GPU node to run it.
    pub node: NodeId,
    /// What kind of queue.
    pub kind: QueueKind,
    /// Device address of the ring of 64-byte AQL packets.
    pub ring: GpuVa,
    /// Host pointer to the same ring.
    pub ring_host: NonNull<u8>,
    /// Ring size, bytes (`size_packets * 64`, a power of two).
    pub ring_size_bytes: u64,
    /// Device address of the `amd_queue_t` (its first 40 bytes are the `hsa_queue_t`).
    pub amd_queue: GpuVa,
    /// Host pointer to the same `amd_queue_t`.
    pub amd_queue_host: NonNull<u8>,
    /// Device address of `amd_queue_t.read_dispatch_id` (the CP's read pointer report).
    pub read_pointer: GpuVa,
    /// Device address of `amd_queue_t.write_dispatch_id` (the CP's write pointer poll).
    pub write_pointer: GpuVa,
    /// Called when the processor stops the queue with an error, on a thread of the
    /// platform's choosing: the event monitor's on Linux (amdkfd reports the error through
    /// KFD events and `queue_inactive_signal`), the host's IH interrupt handler on bare metal
    /// (hsa-baremetal reads `queue_inactive_signal` after a queue-error IH entry). `None`
    /// leaves the error to the platform's policy. The fake platform runs no queue and only
    /// records it.
    ///
    /// The platform calls it at most once per queue, and never after
    /// [`Platform::destroy_queue`] of the queue has returned: a call running on another thread
    /// is waited for (a callback that destroys its own queue on the platform's thread is not),
    /// so `data` need only stay valid until then. [`AqlQueue`](crate::queue::AqlQueue) relies
    /// on it: its data is the address of the record that keeps the error.
    pub on_error: Option<QueueErrorCallback>,
}

/// A hardware queue the platform created, with the handle of its doorbell (`D` is the
/// platform's [`Platform::Doorbell`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwQueue<D> {
    /// The platform's queue id.
    pub id: QueueId,
    /// The doorbell signal value the core writes into `hsa_queue_t.doorbell_signal`: for
    /// hardware queues the address of the queue's doorbell (ROCR stores the doorbell's
    /// address in the signal's `hardware_doorbell_ptr`).
    pub doorbell_address: u64,
    /// What [`Platform::ring_doorbell`] rings: the queue keeps it, so ringing looks nothing
    /// up (Ref: ROCR `AqlQueue` keeps `signal_.hardware_doorbell_ptr` and rings it with one
    /// store).
    pub doorbell: D,
}

/// A request to create an SDMA queue (amdkfd `KFD_IOC_QUEUE_TYPE_SDMA`; ROCR's `BlitSdma`)
/// over memory the core has prepared: a ring of SDMA packets and two 64-bit words, the read
/// pointer the engine writes back and the write pointer the producer stores, both byte
/// offsets that only grow (gfx9). The doorbell takes the same byte offset as the write
/// pointer.
#[derive(Clone, Copy, Debug)]
pub struct SdmaQueueRequest {
    /// The GPU node whose SDMA engine runs it.
    pub node: NodeId,
    /// Device address of the ring.
    pub ring: GpuVa,
    /// Ring size, bytes (a power of two, at least 1024).
    pub ring_size_bytes: u64,
    /// Device address of the 64-bit read pointer (8-byte aligned).
    pub read_pointer: GpuVa,
    /// Device address of the 64-bit write pointer (8-byte aligned).
    pub write_pointer: GpuVa,
}

/// A platform event: what an interrupt-capable signal blocks on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The event id: whoever changes the signal writes it to the mailbox.
    pub id: EventId,
    /// Device (and host) address of the 64-bit event mailbox slot (KFD `event_slot_index`
    /// slot in the event page); 0 when the platform has no mailbox.
    pub mailbox: GpuVa,
}

/// What a wait on a platform event ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitOutcome {
    /// The event was signaled (or the wait may have been spurious: callers re-check).
    Signaled,
    /// The timeout passed.
    TimedOut,
}

/// The topology a platform reports, read by index: the nodes (CPU and GPU agents), their
/// memory banks, caches and links, the device's name and the process's XNACK mode. The runtime
/// reads it once, in [`Runtime::new`](crate::runtime::Runtime::new), to make its agents, their
/// pools and the links between them; nothing on a hot path asks again. Indices need no
/// allocator, so a no_std host answers from static tables.
///
/// The answers do not change while the platform lives.
///
/// Ref: amdkfd's sysfs topology (`/sys/devices/virtual/kfd/kfd/topology/nodes/N`, read by
/// libhsakmt's `hsaKmtGetNodeProperties`, `hsaKmtGetNodeMemoryProperties`,
/// `hsaKmtGetNodeCacheProperties`, `hsaKmtGetNodeIoLinkProperties`).
pub trait TopologySource {
    /// A short name of the device kind, for messages: `"kfd"`, `"emulated"`, `"baremetal"`,
    /// `"fake"`.
    fn device_name(&self) -> &str;

    /// Number of topology nodes (CPU and GPU agents). Never blocks.
    fn node_count(&self) -> usize;

    /// Properties of node `index` (0-based, `< node_count()`).
    ///
    /// # Errors
    /// `Status::InvalidIndex` for an index out of range.
    fn node(&self, index: usize) -> Result<NodeProperties>;

    /// Memory bank `bank` of node `index`; `Ok(None)` past the last bank.
    ///
    /// # Errors
    /// `Status::InvalidIndex` for a node out of range.
    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>>;

    /// Cache `cache` of node `index`; `Ok(None)` past the last cache.
    ///
    /// # Errors
    /// `Status::InvalidIndex` for a node out of range.
    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>>;

    /// IO or P2P link `link` of node `index` (IO links first, then P2P links); `Ok(None)` past
    /// the last.
    ///
    /// # Errors
    /// `Status::InvalidIndex` for a node out of range.
    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>>;

    /// Whether this process runs with XNACK on (recoverable GPU page faults; KFD's per-process
    /// mode, `AMDKFD_IOC_SET_XNACK_MODE`). It decides the `xnack` feature of every GPU agent's
    /// ISA (`gfx90a:sramecc+:xnack+` or `...:xnack-`), and so which code objects load
    /// (AMDGPUUsage "Target Features"). The default, and every platform without recoverable
    /// faults, is off.
    fn xnack_enabled(&self) -> bool {
        false
    }

    /// This process's group (LDS) and private (scratch) apertures on GPU node `node`: what
    /// the GPU's `SH_MEM_BASES` holds for the process, which [`AqlQueue`] copies into each
    /// queue's `amd_queue_t` (`group_segment_aperture_base_hi`,
    /// `private_segment_aperture_base_hi`) as ROCR's `AqlQueue` does. `None` (the default):
    /// unknown, and those fields stay 0.
    ///
    /// Ref: kfd_ioctl.h `kfd_process_device_apertures` (`lds_base`, `scratch_base`), which
    /// `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW` reports.
    ///
    /// [`AqlQueue`]: crate::queue::AqlQueue
    fn segment_apertures(&self, node: NodeId) -> Option<SegmentApertures> {
        let _ = node;
        None
    }
}

/// A process's flat-address apertures for the group and private segments on one GPU: where
/// a FLAT access goes to the work-group's LDS or the lane's scratch. On gfx9-gfx11 only bits
/// 63:48 of each base exist (`SH_MEM_BASES.SHARED_BASE`, `.PRIVATE_BASE`); each aperture spans
/// 4 GiB.
///
/// Ref: kfd_ioctl.h `kfd_process_device_apertures`; amdkfd `kfd_flat_memory.c`
/// (`kfd_init_apertures_v9`, `compute_sh_mem_bases_64bit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentApertures {
    /// First address of the group (LDS, "shared") aperture, bytes (`lds_base`).
    pub group_base: u64,
    /// First address of the private (scratch) aperture, bytes (`scratch_base`).
    pub private_base: u64,
}

impl SegmentApertures {
    /// What amdkfd gives every process on gfx9, gfx10 and gfx11: the LDS aperture at
    /// `1 << 48`, the scratch aperture at `2 << 48` (`MAKE_LDS_APP_BASE_V9`,
    /// `MAKE_SCRATCH_APP_BASE_V9`): `SH_MEM_BASES` 0x0001_0002.
    pub const AMDKFD_GFX9: SegmentApertures = SegmentApertures::from_sh_mem_bases(0x0001_0002);

    /// The apertures a `SH_MEM_BASES` value selects: `SHARED_BASE` (bits 31:16) and
    /// `PRIVATE_BASE` (bits 15:0) are bits 63:48 of the group and private bases.
    pub const fn from_sh_mem_bases(sh_mem_bases: u32) -> SegmentApertures {
        SegmentApertures {
            group_base: ((sh_mem_bases >> 16) as u64) << 48,
            private_base: ((sh_mem_bases & 0xFFFF) as u64) << 48,
        }
    }

    /// The `SH_MEM_BASES` value of these apertures (their bits below 48 dropped), packed as
    /// amdkfd's `compute_sh_mem_bases_64bit` packs it.
    pub const fn sh_mem_bases(&self) -> u32 {
        ((self.group_base >> 48) as u32) << 16 | (self.private_base >> 48) as u32
    }
}

/// What the core needs from a host: its topology ([`TopologySource`], the supertrait), backing
/// memory, hardware queues, events and time.
///
/// # Implementation safety
/// An implementer guarantees, for every method: memory chunks it returns are valid for their
/// whole size at `host_ptr` (when given) and `gpu_va` until freed, zeroed, aligned as asked, and
/// never overlap another live chunk (a chunk from `import_memory` holds what its exporter
/// wrote, not zeros, and other processes may write it concurrently); queues it creates read only the ring and `amd_queue_t`
/// named in the request; every method may be called from any thread at once (`Sync`).
///
/// # Errors
/// Every fallible method returns the core's own [`Error`] (a status and a message naming the
/// cause: the ioctl and its errno, the node, the address), which the core passes on as it is.
pub unsafe trait Platform: TopologySource + Send + Sync {
    /// One queue's doorbell as [`Platform::ring_doorbell`] reaches it, handed out by
    /// [`Platform::create_queue`] (in [`HwQueue::doorbell`]) and kept by the queue: what the
    /// platform needs to ring it without a lookup or a lock — the address of the mapped
    /// doorbell word (Linux), the doorbell's index in the BAR (bare metal), the queue id (the
    /// fake).
    ///
    /// Ringing a handle must stay sound for as long as the handle lives, even after
    /// `destroy_queue` (or the drop of the platform that made it): the handle keeps whatever
    /// it stores to alive, or names something that cannot go away. Ringing the doorbell of a
    /// destroyed queue has no effect a live queue depends on (on hardware, a store to a slot
    /// nobody reads, or a spurious wake-up of the queue that has the doorbell next).
    type Doorbell: Clone + fmt::Debug + Send + Sync;

    // ---- memory ----

    /// Allocates one zeroed chunk of backing memory. May block (a syscall); never calls back
    /// into the core.
    ///
    /// # Errors
    /// `Status::OutOfResources` when there is no room; `Status::InvalidArgument` for a size or
    /// alignment that is not a multiple of 4096 / a power of two, or an unknown node.
    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk>;

    /// Gives a chunk back.
    ///
    /// # Safety
    /// The caller guarantees that `chunk` was returned by this platform's `allocate_memory`,
    /// has not been freed, and that nothing (host or queue) uses it any more.
    ///
    /// # Errors
    /// `Status::ResourceFree` when the platform could not release it (the chunk is then lost,
    /// never reused).
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<()>;

    /// Makes `chunk` accessible to the agents of `nodes` (KFD MAP_MEMORY_TO_GPU).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an unknown node; `Status::OutOfResources` when the
    /// mapping could not be made.
    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<()>;

    // ---- queues ----

    /// Creates a hardware queue over the ring and `amd_queue_t` of `request`, which the core
    /// has initialised (headers INVALID, indices 0, `queue_inactive_signal` set). May block.
    /// The platform calls `request.on_error` once if the queue's packet processor stops it
    /// with an error (see [`QueueRequest::on_error`]).
    ///
    /// # Safety
    /// The caller guarantees the ring, the `amd_queue_t` and the `amd_signal_t` its
    /// `queue_inactive_signal` names (when not 0) stay valid and are not freed until
    /// `destroy_queue` has returned for this queue, and that those words the packet processor
    /// shares with the host (indices, headers, signal values) are accessed atomically.
    ///
    /// # Errors
    /// `Status::OutOfResources` when the node has no free hardware queue slot;
    /// `Status::InvalidQueueCreation` for a request the hardware cannot serve.
    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue<Self::Doorbell>>;

    /// Tells the packet processor that packets up to and including `write_index` may be
    /// valid: one 64-bit store of the index to the queue's doorbell (after whatever fence the
    /// hardware needs so that the packets are visible first), through the handle
    /// [`Platform::create_queue`] returned. No lookup, no lock, no system call: this is the
    /// per-packet path (HSA PSA §2.8.3: the doorbell is written after the packet). Never
    /// blocks; never fails. A device watches its doorbells (and the queue's write index) as
    /// a command processor does; the fake platform, which has no device, records the write.
    fn ring_doorbell(&self, doorbell: &Self::Doorbell, write_index: u64);

    /// Stops and destroys a queue. After it returns the processor never touches the ring
    /// again. May block until the processor has stopped.
    ///
    /// # Errors
    /// `Status::InvalidQueue` for an unknown id.
    fn destroy_queue(&self, queue: QueueId) -> Result<()>;

    // ---- events ----

    /// Creates an event that interrupt-capable signals can block on. May block.
    ///
    /// # Errors
    /// `Status::OutOfResources` when the platform has no more events.
    fn create_event(&self) -> Result<Event>;

    /// Destroys an event. Waiters are woken.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an unknown id.
    fn destroy_event(&self, event: EventId) -> Result<()>;

    /// Blocks the calling thread until `event` is signaled or `timeout_ns` passes
    /// (`u64::MAX` = no timeout). Spurious returns are allowed; callers re-check their
    /// condition. A signal raised after the caller armed (read its condition) and before this
    /// call must not be lost: the event stays signaled until a wait consumes it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an unknown event.
    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome>;

    /// Blocks the calling thread until any of `events` is signaled or `timeout_ns` passes
    /// (`u64::MAX` = no timeout): one wait over all of them (`hsa_amd_signal_wait_any`,
    /// `hsa_amd_signal_async_handler`; ROCR: `hsaKmtWaitOnMultipleEvents` with `WaitOnAll`
    /// false). Events signaled while the caller armed are not lost, as for
    /// [`wait_event`](Self::wait_event); it does not say which event fired (callers re-check
    /// their signals, as ROCR does). Spurious returns of either outcome are allowed.
    ///
    /// The default is for platforms that wait on one event at a time: it waits on `events[0]`
    /// alone, and with more than one event for at most
    /// [`MULTI_EVENT_SLICE_NS`](crate::signal::wait::MULTI_EVENT_SLICE_NS), so that a caller
    /// that rotates the list between calls (as [`signal::wait_any`](crate::signal::wait_any)
    /// does) gives every event its turn. Linux overrides it with one `AMDKFD_IOC_WAIT_EVENTS`
    /// over all of them.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an empty list, more events than the platform can wait on
    /// at once (Linux: `KFD_SIGNAL_EVENT_LIMIT`, 4096) or an unknown event.
    fn wait_any_event(&self, events: &[EventId], timeout_ns: u64) -> Result<WaitOutcome> {
        let Some(&first) = events.first() else {
            crate::bail!(Status::InvalidArgument, "wait_any_event: no events");
        };
        let timeout_ns = if events.len() > 1 {
            timeout_ns.min(crate::signal::wait::MULTI_EVENT_SLICE_NS)
        } else {
            timeout_ns
        };
        self.wait_event(first, timeout_ns)
    }

    /// Signals `event`, waking its waiters. Never blocks; callable from a packet processor.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an unknown event.
    fn signal_event(&self, event: EventId) -> Result<()>;

    /// A process-wide memory barrier, when the platform has one: a function that, when it
    /// returns, has made every thread of the process that shares this address space execute a
    /// full memory barrier (Linux: `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, Linux 4.14
    /// and later, registered once when the platform opens). Decided once per platform; the
    /// answer must not change.
    ///
    /// With one, a host-side store to an interrupt signal orders its value store before its
    /// read of the signal's waiter count with a compiler fence alone, and a waiter about to
    /// block pays for both with this barrier ([`Waiters`](crate::signal::wait::Waiters)):
    /// the store on every dispatch's completion-signal reset loses its full fence (an
    /// `mfence` on x86, which also waits for the packet stores before it). Without one (the
    /// default, and under loom and miri) both sides fence.
    fn process_barrier(&self) -> Option<fn()> {
        None
    }

    // ---- optional capabilities ----

    /// What this platform can do beyond the methods above, each an optional trait of its own
    /// ([`capability`]): SDMA queues, host-memory registration, memory sharing between
    /// processes, GPU memory-fault reports. The default has none of them; a caller that needs
    /// one that is missing returns the status ROCR returns when the driver lacks it (each
    /// capability's doc says which). Cheap: called on cold paths (queue creation, locks,
    /// exports), never per packet.
    fn capabilities(&self) -> Capabilities<'_, Self::Doorbell> {
        Capabilities::none()
    }

    // ---- time ----

    /// The current value of the system timestamp, ticks of `timestamp_frequency_hz()`;
    /// monotonic. Ref: `HSA_SYSTEM_INFO_TIMESTAMP`.
    fn timestamp_ticks(&self) -> u64;

    /// Ticks per second of `timestamp_ticks` (1 GHz on Linux, where a tick is 1 ns).
    fn timestamp_frequency_hz(&self) -> u64;

    /// How long a blocked-state signal wait spins before it blocks on
    /// [`wait_event`](Self::wait_event), ns. The default, [`SPIN_NS`](crate::signal::SPIN_NS),
    /// suits a device that does not share the waiting CPU; a platform whose device runs on
    /// the same host CPUs as the waiter (an emulated device behind a virtual machine) returns
    /// less, since a spinning waiter delays the device it waits for.
    fn wait_spin_ns(&self) -> u64 {
        crate::signal::SPIN_NS
    }

    /// Gives the CPU away for about `ns` nanoseconds while the caller waits for device
    /// progress that raises no event: an SDMA engine consuming its ring
    /// ([`SdmaQueue::submit`](crate::sdma::SdmaQueue::submit) with the ring full, where ROCR
    /// yields its thread: `BlitSdma::AcquireWriteAddress`). Returning early is allowed
    /// (callers re-check their condition); never much longer than `ns`.
    ///
    /// The default, for a host without a scheduler, spins on
    /// [`timestamp_ticks`](Self::timestamp_ticks) until `ns` passed; Linux sleeps the thread.
    fn relax(&self, ns: u64) {
        let freq_hz = match self.timestamp_frequency_hz() {
            0 => 1_000_000_000,
            f => f,
        };
        let ticks =
            u64::try_from(u128::from(ns) * u128::from(freq_hz) / 1_000_000_000).unwrap_or(u64::MAX);
        let start = self.timestamp_ticks();
        while self.timestamp_ticks().saturating_sub(start) < ticks {
            core::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SegmentApertures;

    /// `SH_MEM_BASES` packs bits 63:48 of the group base in 31:16 and of the private base in
    /// 15:0 (`compute_sh_mem_bases_64bit`); amdkfd's gfx9 bases are 1 << 48 and 2 << 48.
    #[test]
    fn sh_mem_bases_packs_the_top_bits_of_each_base() {
        let a = SegmentApertures::AMDKFD_GFX9;
        assert_eq!((a.group_base, a.private_base), (1 << 48, 2 << 48));
        assert_eq!(a.sh_mem_bases(), 0x0001_0002);
        let b = SegmentApertures {
            group_base: 0xABCD_0000_0000_1234,
            private_base: 0x1234_FFFF_0000_0000,
        };
        assert_eq!(b.sh_mem_bases(), 0xABCD_1234);
        assert_eq!(
            SegmentApertures::from_sh_mem_bases(0xABCD_1234),
            SegmentApertures {
                group_base: 0xABCD_0000_0000_0000,
                private_base: 0x1234_0000_0000_0000,
            }
        );
    }
}
