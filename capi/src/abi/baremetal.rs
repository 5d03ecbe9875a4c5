//! The bare-metal host description firmware written in C hands the library
//! (`include/hsa_rt_ext.h`, `hsa_rt_baremetal_host_t` and its tables), which
//! `backend::baremetal` checks and copies into an `hsa_baremetal::Host`.

#[allow(unused_imports)]
use super::*;
use core::ffi::{c_char, c_void};

use hsa_core::platform::NAME_CAPACITY;

/// `hsa_rt_baremetal_host_t.ih_filter` bit 31: the word holds a filter.
pub const IH_FILTER_ON: u32 = 1 << 31;

/// `HSA_RT_BAREMETAL_HOST_VERSION`: the layout of `hsa_rt_baremetal_host_t` this library
/// reads ([`HsaRtBaremetalHostV2`]); a host of version 1 ([`HsaRtBaremetalHost`], without the
/// GPU-context fields) is read too, the fields' zero meanings standing for them.
pub const HOST_VERSION: u32 = 2;

/// `hsa_rt_baremetal_memory_kind_t` `HSA_RT_BAREMETAL_SYSTEM_MEMORY`: host DRAM the GPU
/// reaches over the bus; CPU-visible, identity-mapped for the GPU.
pub const SYSTEM_MEMORY: u32 = 0;

/// `HSA_RT_BAREMETAL_HOST_VISIBLE_VRAM`: VRAM the CPU reaches through a BAR mapping.
pub const HOST_VISIBLE_VRAM: u32 = 1;

/// `HSA_RT_BAREMETAL_PRIVATE_VRAM`: VRAM the CPU cannot touch (`virt_base` 0).
pub const PRIVATE_VRAM: u32 = 2;

/// `hsa_rt_baremetal_carve_out_t`: one region of memory the runtime manages
/// (`hsa_baremetal::CarveOut`). 40 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtCarveOut {
    /// Topology node id whose memory it is.
    pub node: u32,
    /// `hsa_rt_baremetal_memory_kind_t`: [`SYSTEM_MEMORY`], [`HOST_VISIBLE_VRAM`],
    /// [`PRIVATE_VRAM`].
    pub kind: u32,
    /// Physical (bus) address of the first byte.
    pub phys_base: u64,
    /// CPU virtual address of the first byte; 0 when the CPU cannot touch it.
    pub virt_base: u64,
    /// GPU virtual address of the first byte (equal to `virt_base` for system memory).
    pub gpu_va: u64,
    /// Size, bytes (a multiple of 4096).
    pub size_bytes: u64,
}
const _: () = assert!(core::mem::size_of::<HsaRtCarveOut>() == 40);

/// `hsa_rt_baremetal_doorbells_t`: the doorbell aperture and the doorbells the runtime may
/// use (`hsa_baremetal::DoorbellAperture`). 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtDoorbells {
    /// CPU virtual address of doorbell 0, mapped uncached.
    pub virt_base: u64,
    /// Size of the mapping, bytes.
    pub size_bytes: u64,
    /// The first doorbell index the runtime may use.
    pub first: u32,
    /// How many consecutive doorbells from `first`.
    pub count: u32,
}
const _: () = assert!(core::mem::size_of::<HsaRtDoorbells>() == 24);

/// `hsa_rt_baremetal_ih_ring_t`: the soc15 IH ring the host set up and the read-pointer
/// register (`hsa_baremetal::IhRingConfig`). 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtIhRing {
    /// CPU virtual address of the ring (8-byte aligned).
    pub ring_virt_base: u64,
    /// Ring size, bytes: a power of two, at least 32.
    pub ring_size_bytes: u32,
    /// Zero.
    pub reserved: u32,
    /// CPU virtual address of the 32-bit write-pointer write-back (8-byte aligned).
    pub wptr_virt: u64,
    /// CPU virtual address of the register block holding `IH_RB_RPTR` (8-byte aligned).
    pub rptr_block_virt_base: u64,
    /// Size of that block's mapping, bytes.
    pub rptr_block_size_bytes: u64,
    /// Byte offset of `IH_RB_RPTR` in the block (a multiple of 4).
    pub rptr_offset_bytes: u64,
}
const _: () = assert!(core::mem::size_of::<HsaRtIhRing>() == 48);

/// `hsa_rt_baremetal_mqd_t`: the gfx9 MQD register images the runtime computes for a compute
/// queue, copied from its MQD (`hsa_baremetal::ComputeMqd`, a full `struct v9_mqd`:
/// `hsa_core::wire::mqd::V9Mqd`, whose field names these are). 48 bytes: these twelve
/// register images, for a host that programs an HQD's registers itself; the whole 2048-byte
/// image is at `hsa_rt_baremetal_queue_mapping_t.mqd_address` (`mqd_virt` for the CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaRtMqd {
    /// `cp_hqd_pq_base_lo`.
    pub cp_hqd_pq_base_lo: u32,
    /// `cp_hqd_pq_base_hi`.
    pub cp_hqd_pq_base_hi: u32,
    /// `cp_hqd_pq_control`.
    pub cp_hqd_pq_control: u32,
    /// `cp_hqd_pq_rptr_report_addr_lo`.
    pub cp_hqd_pq_rptr_report_addr_lo: u32,
    /// `cp_hqd_pq_rptr_report_addr_hi`.
    pub cp_hqd_pq_rptr_report_addr_hi: u32,
    /// `cp_hqd_pq_wptr_poll_addr_lo`.
    pub cp_hqd_pq_wptr_poll_addr_lo: u32,
    /// `cp_hqd_pq_wptr_poll_addr_hi`.
    pub cp_hqd_pq_wptr_poll_addr_hi: u32,
    /// `cp_hqd_pq_doorbell_control`.
    pub cp_hqd_pq_doorbell_control: u32,
    /// `cp_hqd_aql_control`.
    pub cp_hqd_aql_control: u32,
    /// `cp_hqd_eop_base_addr_lo`.
    pub cp_hqd_eop_base_addr_lo: u32,
    /// `cp_hqd_eop_base_addr_hi`.
    pub cp_hqd_eop_base_addr_hi: u32,
    /// `cp_hqd_eop_control`.
    pub cp_hqd_eop_control: u32,
}
const _: () = assert!(core::mem::size_of::<HsaRtMqd>() == 48);

/// `hsa_rt_baremetal_queue_mapping_t`: what the host's `map_queue`/`unmap_queue` get
/// (`hsa_baremetal::QueueMapping`). Addresses are GPU addresses but `mqd_virt`. 128 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtQueueMapping {
    /// The GPU node id.
    pub node: u32,
    /// The doorbell index the queue listens on.
    pub doorbell: u32,
    /// The ring of 64-byte AQL packets.
    pub ring: u64,
    /// Ring size, bytes.
    pub ring_size_bytes: u64,
    /// Where the CP reports the read index (`amd_queue_t.read_dispatch_id`).
    pub read_pointer: u64,
    /// Where the CP polls the write index (`amd_queue_t.write_dispatch_id`).
    pub write_pointer: u64,
    /// The `amd_queue_t`.
    pub amd_queue: u64,
    /// The end-of-pipe buffer.
    pub eop: u64,
    /// EOP buffer size, bytes.
    pub eop_size_bytes: u64,
    /// The MQD fields computed from the above.
    pub mqd: HsaRtMqd,
    /// GPU address of the whole MQD image (2048 bytes, `struct v9_mqd`) the runtime wrote:
    /// a KIQ `MAP_QUEUES`' `mqd_addr`.
    pub mqd_address: u64,
    /// CPU virtual address of that image, valid until `unmap_queue` returned.
    pub mqd_virt: u64,
}
const _: () = assert!(core::mem::size_of::<HsaRtQueueMapping>() == 128);

/// `hsa_rt_baremetal_memory_bank_t`: one memory bank of a node (KFD
/// `nodes/N/mem_banks/M/properties`; [`hsa_core::platform::MemoryBank`]). 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtMemoryBank {
    /// `heap_type`: 0 system, 1 frame buffer public, 2 frame buffer private, ...
    pub heap_type: u32,
    /// `flags` (`HSA_MEM_FLAGS_*`).
    pub flags: u32,
    /// `size_in_bytes`.
    pub size_bytes: u64,
    /// `width`: bus width, bits.
    pub width_bits: u32,
    /// `mem_clk_max`: MHz.
    pub mem_clk_max_mhz: u32,
}
const _: () = assert!(core::mem::size_of::<HsaRtMemoryBank>() == 24);

/// `hsa_rt_baremetal_node_t`: one topology node, with the fields and meanings of KFD's
/// `nodes/N/properties` ([`hsa_core::platform::NodeProperties`]); caches and IO links are not
/// described (the runtime reports none). 304 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // each field is the KFD property of its name (see NodeProperties)
pub struct HsaRtNode {
    pub node_id: u32,
    pub gpu_id: u32,
    /// NUL-terminated, UTF-8 ("gfx90a", or a CPU's model).
    pub name: [c_char; NAME_CAPACITY],
    /// NUL-terminated, UTF-8; may be empty.
    pub marketing_name: [c_char; NAME_CAPACITY],
    pub cpu_cores_count: u32,
    pub simd_count: u32,
    pub cpu_core_id_base: u32,
    pub simd_id_base: u32,
    pub max_waves_per_simd: u32,
    pub lds_size_in_kb: u32,
    pub gds_size_in_kb: u32,
    pub num_gws: u32,
    pub wave_front_size: u32,
    pub array_count: u32,
    pub simd_arrays_per_engine: u32,
    pub cu_per_simd_array: u32,
    pub simd_per_cu: u32,
    pub max_slots_scratch_cu: u32,
    pub gfx_target_version: u32,
    pub vendor_id: u32,
    pub device_id: u32,
    pub location_id: u32,
    pub domain: u32,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u32,
    pub num_cp_queues: u32,
    pub max_engine_clk_fcompute: u32,
    pub max_engine_clk_ccompute: u32,
    pub fw_version: u32,
    pub capability: u32,
    pub debug_prop: u32,
    pub sdma_fw_version: u32,
    pub num_xcc: u32,
    pub asic_revision: u32,
    /// Zero.
    pub reserved: u32,
    pub hive_id: u64,
    pub unique_id: u64,
    pub local_mem_size: u64,
    /// `mem_banks_count` entries; NULL when 0.
    pub mem_banks: *const HsaRtMemoryBank,
    pub mem_banks_count: u32,
    /// Zero.
    pub reserved1: u32,
}
const _: () = assert!(core::mem::size_of::<HsaRtNode>() == 304);
const _: () = assert!(core::mem::offset_of!(HsaRtNode, cpu_cores_count) == 136);
const _: () = assert!(core::mem::offset_of!(HsaRtNode, hive_id) == 264);
const _: () = assert!(core::mem::offset_of!(HsaRtNode, mem_banks) == 288);

/// `bool (*)(void* waiter)`: the check a host's `wait_for_interrupt` makes with interrupts
/// masked.
pub type StillWaitingFn = unsafe extern "C" fn(*mut c_void) -> bool;

/// The fields every version of `HSA_RT_BAREMETAL_HOST_VERSION` has: all of a version-1
/// host struct (216 bytes), the start of version 2's ([`HsaRtBaremetalHostV2`]): everything
/// the firmware hands the runtime but the GPU context. Callbacks get `context` first;
/// `NULL` optional callbacks mean "nothing to do".
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtBaremetalHost {
    /// [`HOST_VERSION`].
    pub version: u32,
    /// Which IH entries are this runtime's: 0, every entry; else [`IH_FILTER_ON`] | first
    /// VMID (bits 0..4) | last VMID << 4 | PASID << 8 (bits 8..24; 0: any PASID)
    /// (`HSA_RT_BAREMETAL_IH_FILTER`; `hsa_baremetal::irq::IhFilter`).
    pub ih_filter: u32,
    /// Passed to every callback.
    pub context: *mut c_void,
    /// `carve_out_count` carve-outs.
    pub carve_outs: *const HsaRtCarveOut,
    /// Number of carve-outs (at least one of system memory).
    pub carve_out_count: u32,
    /// Number of topology nodes.
    pub node_count: u32,
    /// `node_count` nodes, in node-id order.
    pub nodes: *const HsaRtNode,
    /// The doorbell aperture.
    pub doorbells: HsaRtDoorbells,
    /// The IH ring.
    pub ih_ring: HsaRtIhRing,
    /// Ticks per second of `timestamp_ticks`; not 0.
    pub timestamp_frequency_hz: u64,
    /// Zeroes private VRAM (an SDMA fill); required when a carve-out is private VRAM.
    pub clear_device_memory: Option<unsafe extern "C" fn(*mut c_void, u64, u64) -> u32>,
    /// Makes a carve-out range reachable by the GPUs of `nodes`; optional.
    pub map_memory: Option<unsafe extern "C" fn(*mut c_void, u64, u64, *const u32, u32) -> u32>,
    /// Makes the GPU serve a queue (MQD to HQD); required.
    pub map_queue: Option<unsafe extern "C" fn(*mut c_void, *const HsaRtQueueMapping) -> u32>,
    /// Stops a queue; after it returns the GPU no longer reads the ring; required.
    pub unmap_queue: Option<unsafe extern "C" fn(*mut c_void, *const HsaRtQueueMapping) -> u32>,
    /// Clears `RB_OVERFLOW` (`IH_RB_CNTL.WPTR_OVERFLOW_CLEAR`); optional; interrupt context.
    pub ih_overflow_clear: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Sleeps until an interrupt may have arrived or the deadline passed; required.
    pub wait_for_interrupt:
        Option<unsafe extern "C" fn(*mut c_void, u64, StillWaitingFn, *mut c_void)>,
    /// Wakes CPUs sleeping in `wait_for_interrupt`; optional; must not block.
    pub wake_waiters: Option<unsafe extern "C" fn(*mut c_void)>,
    /// A monotonic timestamp in ticks of `timestamp_frequency_hz`; required.
    pub timestamp_ticks: Option<unsafe extern "C" fn(*mut c_void) -> u64>,
    /// Receives each failing call's error message (one NUL-terminated line); optional.
    pub log: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
    /// The library's heap in a build without an OS (`x86_64-unknown-none`): `size` bytes
    /// aligned to `align` (a power of two), or NULL; required there, ignored elsewhere.
    pub allocate: Option<HostAllocateFn>,
    /// Gives back what `allocate` returned, with the same size and alignment; required with
    /// `allocate`.
    pub deallocate: Option<HostDeallocateFn>,
    /// Called with a message when the library panics in a build without an OS; must not
    /// return. Optional (the CPU then spins forever); ignored where there is an OS.
    pub abort: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
}
const _: () = assert!(core::mem::size_of::<HsaRtBaremetalHost>() == 216);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHost, doorbells) == 40);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHost, timestamp_frequency_hz) == 112);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHost, log) == 184);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHost, allocate) == 192);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHost, abort) == 208);

/// `hsa_rt_baremetal_host_t` of version 2: version 1's fields ([`HsaRtBaremetalHost`], which
/// a version-1 host ends with), then the GPU context the firmware set up for the runtime's
/// queues. 232 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtBaremetalHostV2 {
    /// The version-1 fields.
    pub base: HsaRtBaremetalHost,
    /// The VMID of the runtime's queues, 0..=15 (each MQD's `cp_hqd_vmid`;
    /// `hsa_baremetal::Host::queue_vmid`).
    pub queue_vmid: u32,
    /// `SH_MEM_BASES` programmed for that VMID; 0: amdkfd's gfx9 value 0x0001_0002
    /// (`hsa_baremetal::Host::sh_mem_bases`).
    pub sh_mem_bases: u32,
    /// `CP_MEC_DOORBELL_RANGE_LOWER` as programmed (bytes); with `_upper` 0 as well: not
    /// checked (`hsa_baremetal::Host::mec_doorbell_range`).
    pub mec_doorbell_range_lower: u32,
    /// `CP_MEC_DOORBELL_RANGE_UPPER` as programmed (bytes).
    pub mec_doorbell_range_upper: u32,
}
const _: () = assert!(core::mem::size_of::<HsaRtBaremetalHostV2>() == 232);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHostV2, queue_vmid) == 216);
const _: () = assert!(core::mem::offset_of!(HsaRtBaremetalHostV2, mec_doorbell_range_upper) == 228);

/// `hsa_rt_baremetal_host_t.allocate`: `size` bytes aligned to `align` (a power of two) from
/// the firmware's heap, or NULL.
pub type HostAllocateFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;

/// `hsa_rt_baremetal_host_t.deallocate`: gives back what `allocate` returned, with the same
/// size and alignment.
pub type HostDeallocateFn = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize);
