//! Memory types (`hsa_ext_amd.h`): pointer info, pool link info, pitched pointers and
//! `hsa_dim3_t`, copy times, IPC handles, SVM attributes.

#[allow(unused_imports)]
use super::*;
use core::ffi::c_void;

/// `hsa_amd_pointer_info_t` (`hsa_ext_amd.h`, ROCR 5.2; `registered` from ROCR 7's interface
/// 1.13, in what was padding): 56 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaAmdPointerInfo {
    /// Size of the structure, bytes: set by the caller, reduced to what was filled.
    pub size: u32,
    /// `hsa_amd_pointer_type_t`.
    pub type_: u32,
    /// Base address of the allocation for agents.
    pub agent_base_address: *mut c_void,
    /// Base address of the allocation for the host.
    pub host_base_address: *mut c_void,
    /// Size of the allocation, bytes.
    pub size_in_bytes: usize,
    /// Application data (none: NULL).
    pub user_data: *mut c_void,
    /// The agent owning the allocation's pool.
    pub agent_owner: u64,
    /// The pool's `hsa_amd_memory_pool_global_flag_t` bits.
    pub global_flags: u32,
    /// Whether the allocation is registered with the driver (ROCR 7: true for what libhsakmt
    /// knows and for virtual-memory mappings; a host-only reservation is not).
    pub registered: bool,
    /// Padding to the C struct's 56 bytes.
    pub _pad: [u8; 3],
}
const _: () = assert!(core::mem::size_of::<HsaAmdPointerInfo>() == 56);
const _: () = assert!(core::mem::offset_of!(HsaAmdPointerInfo, registered) == 52);
const _: () = assert!(core::mem::offset_of!(HsaAmdPointerInfo, agent_owner) == 40);
const _: () = assert!(core::mem::offset_of!(HsaAmdPointerInfo, global_flags) == 48);

/// `hsa_amd_memory_pool_link_info_t` (`hsa_ext_amd.h`, ROCR 5.2): 28 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaAmdMemoryPoolLinkInfo {
    /// Minimum transfer latency, ns.
    pub min_latency: u32,
    /// Maximum transfer latency, ns.
    pub max_latency: u32,
    /// Minimum bandwidth, MB/s.
    pub min_bandwidth: u32,
    /// Maximum bandwidth, MB/s.
    pub max_bandwidth: u32,
    /// 32-bit atomics across the link.
    pub atomic_support_32bit: bool,
    /// 64-bit atomics across the link.
    pub atomic_support_64bit: bool,
    /// Cache-coherent transactions across the link.
    pub coherent_support: bool,
    /// `hsa_amd_link_info_type_t`.
    pub link_type: u32,
    /// NUMA distance (the link's weight).
    pub numa_distance: u32,
}
const _: () = assert!(core::mem::size_of::<HsaAmdMemoryPoolLinkInfo>() == 28);
const _: () = assert!(core::mem::offset_of!(HsaAmdMemoryPoolLinkInfo, link_type) == 20);
const _: () = assert!(core::mem::offset_of!(HsaAmdMemoryPoolLinkInfo, numa_distance) == 24);

/// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE` (ROCm 6 `hsa_ext_amd.h`; not in the
/// installed 5.2 header).
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE: u32 = 18;

/// `HSA_EXT_POINTER_TYPE_UNKNOWN`.
pub const HSA_EXT_POINTER_TYPE_UNKNOWN: u32 = 0;

/// `HSA_EXT_POINTER_TYPE_HSA`.
pub const HSA_EXT_POINTER_TYPE_HSA: u32 = 1;

/// `HSA_EXT_POINTER_TYPE_LOCKED`.
pub const HSA_EXT_POINTER_TYPE_LOCKED: u32 = 2;

/// `HSA_EXT_POINTER_TYPE_RESERVED_ADDR` (ROCm 7's `hsa_ext_amd.h`: an address reserved with
/// `hsa_amd_vmem_address_reserve`, libhsakmt's `HSA_POINTER_RESERVED_ADDR`).
pub const HSA_EXT_POINTER_TYPE_RESERVED_ADDR: u32 = 5;

/// `HSA_EXT_POINTER_TYPE_HSA_VMEM` (ROCm 7's `hsa_ext_amd.h`: memory mapped with
/// `hsa_amd_vmem_map`).
pub const HSA_EXT_POINTER_TYPE_HSA_VMEM: u32 = 6;

/// `hsa_pitched_ptr_t`: a base address, a row pitch and a slice pitch, bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PitchedPtr {
    /// First byte of the surface.
    pub base: *mut c_void,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Bytes from one slice to the next (0: one slice).
    pub slice: usize,
}

/// `hsa_dim3_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x (bytes, in the rect copy).
    pub x: u32,
    /// y (rows).
    pub y: u32,
    /// z (slices).
    pub z: u32,
}

/// `hsa_amd_copy_direction_t` `hsaHostToHost`.
pub const HSA_HOST_TO_HOST: u32 = 0;

/// `hsa_amd_profiling_async_copy_time_t`: start and end, system timestamp ticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncCopyTime {
    /// When the copy started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

/// `hsa_amd_ipc_memory_t`: eight 32-bit words.
pub type IpcMemory = [u32; 8];

/// `hsa_amd_ipc_signal_t`: the same.
pub type IpcSignal = [u32; 8];

/// `hsa_amd_svm_attribute_pair_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SvmAttributePair {
    /// `hsa_amd_svm_attribute_t`.
    pub attribute: u64,
    /// Its value.
    pub value: u64,
}

/// `hsa_amd_vmem_address_reserve_flag_t` (`hsa_ext_amd.h`, ROCR 7): reserve a range of host
/// virtual addresses only, without registering it with the driver.
pub const HSA_AMD_VMEM_ADDRESS_NO_REGISTER: u64 = 1 << 0;

/// `hsa_amd_memory_type_t` (`hsa_ext_amd.h`, ROCR 7), `hsa_amd_vmem_handle_create`'s `type`:
/// ordinary memory.
pub const MEMORY_TYPE_NONE: u32 = 0;
/// `hsa_amd_memory_type_t`: pinned memory.
pub const MEMORY_TYPE_PINNED: u32 = 1;

/// `hsa_amd_dma_buf_mapping_type_t` (`hsa_ext_amd.h`, ROCR 7), the flags of
/// `hsa_amd_portable_export_dmabuf_v2`: no particular mapping.
pub const HSA_AMD_DMABUF_MAPPING_TYPE_NONE: u64 = 0;
/// `hsa_amd_dma_buf_mapping_type_t`: the importer maps the memory over PCIe.
pub const HSA_AMD_DMABUF_MAPPING_TYPE_PCIE: u64 = 1;

/// `hsa_amd_vmem_alloc_handle_t` (`hsa_ext_amd.h`, ROCR 7): an opaque handle to a physical
/// allocation made by `hsa_amd_vmem_handle_create`, 8 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HsaAmdVmemAllocHandle {
    /// Opaque handle.
    pub handle: u64,
}
const _: () = assert!(core::mem::size_of::<HsaAmdVmemAllocHandle>() == 8);

/// `hsa_amd_memory_access_desc_t` (`hsa_ext_amd.h`, ROCR 7): one agent's access to a mapped
/// range, `hsa_amd_vmem_set_access`'s array element; 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HsaAmdMemoryAccessDesc {
    /// `hsa_access_permission_t` (`HSA_ACCESS_PERMISSION_NONE` 0, `_RO` 1, `_WO` 2, `_RW` 3).
    pub permissions: u32,
    /// The agent (`hsa_agent_t`).
    pub agent_handle: u64,
}
const _: () = assert!(core::mem::size_of::<HsaAmdMemoryAccessDesc>() == 16);
const _: () = assert!(core::mem::offset_of!(HsaAmdMemoryAccessDesc, agent_handle) == 8);
