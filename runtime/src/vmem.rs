//! The place of ROCm 7's virtual-memory API (`hsa_amd_vmem_*`, ROCR 6.1 and later): reserving
//! device address ranges apart from the memory behind them, making physical allocations
//! ("handles"), mapping and unmapping them into reserved ranges, setting per-agent access,
//! and exporting handles as dma-bufs.
//!
//! | ROCm 7 function | what it will do here |
//! |---|---|
//! | `hsa_amd_vmem_address_reserve`, `_address_free` | carve a range of the platform's address space (Linux: the reserved VA range of `hsa_linux::kfd::ioctl::VaSpace`), no memory behind it |
//! | `hsa_amd_vmem_handle_create`, `_handle_release` | a platform chunk of a pool's kind with no mapping (KFD `ALLOC_MEMORY_OF_GPU` without `MAP_MEMORY_TO_GPU`) |
//! | `hsa_amd_vmem_map`, `_unmap` | map a handle at an offset of a reserved range (KFD allocates at a given `va_addr`, so the mapping is a fresh buffer object at that address over the handle's memory) |
//! | `hsa_amd_vmem_set_access`, `_get_access` | `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` for the agents named |
//! | `hsa_amd_vmem_export_shareable_handle`, `_import_shareable_handle` | the dma-buf path [`MemorySharing`](hsa_core::platform::MemorySharing) already takes for IPC |
//! | `hsa_amd_vmem_retain_alloc_handle`, `_get_alloc_properties_from_handle` | lookups in the table this module will keep |
//!
//! Each needs the platform to place memory at an address the caller chose, which
//! [`Platform`](hsa_core::platform::Platform) does not offer; it will be a capability of its
//! own (as `SdmaQueues` is), and [`VirtualMemory::supported`] answers
//! `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED` until then: false, as ROCR answers on a
//! driver without it, which makes HIP keep its own allocation path.

/// The virtual-memory state of one runtime (module docs): none yet.
#[derive(Debug, Default)]
pub struct VirtualMemory {
    _private: (),
}

impl VirtualMemory {
    /// No reservation, no handle.
    pub fn new() -> VirtualMemory {
        VirtualMemory::default()
    }

    /// `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED`: whether the `hsa_amd_vmem_*` functions
    /// work. False: no platform offers placing memory at a chosen address yet (module docs).
    pub fn supported(&self) -> bool {
        false
    }
}
