//! Signal attributes and system events (`hsa_ext_amd.h`).

#[allow(unused_imports)]
use super::*;

/// `HSA_AMD_SIGNAL_AMD_GPU_ONLY`: only GPUs wait on the signal (no event).
pub const HSA_AMD_SIGNAL_AMD_GPU_ONLY: u64 = 1;

/// `HSA_AMD_SIGNAL_IPC`: the signal may be shared with other processes (`hsa_amd_ipc_signal_create`).
pub const HSA_AMD_SIGNAL_IPC: u64 = 2;

/// `HSA_AMD_GPU_MEMORY_FAULT_EVENT` (`hsa_amd_event_type_t`).
pub const HSA_AMD_GPU_MEMORY_FAULT_EVENT: u32 = 0;

/// `hsa_amd_gpu_memory_fault_info_t` (`hsa_ext_amd.h`): the agent, the virtual address and
/// the `hsa_amd_memory_fault_reason_t` bits of a GPU memory fault.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaAmdGpuMemoryFaultInfo {
    /// `agent`: the GPU agent whose access faulted.
    pub agent: u64,
    /// `virtual_address`: the address accessed.
    pub virtual_address: u64,
    /// `fault_reason_mask`: `hsa_amd_memory_fault_reason_t` bits.
    pub fault_reason_mask: u32,
}
const _: () = assert!(core::mem::size_of::<HsaAmdGpuMemoryFaultInfo>() == 24);

/// `hsa_amd_event_t` (`hsa_ext_amd.h`): the event type and its data (the union's one member,
/// `memory_fault`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaAmdEvent {
    /// `event_type` (`hsa_amd_event_type_t`).
    pub event_type: u32,
    /// `memory_fault`, valid for `HSA_AMD_GPU_MEMORY_FAULT_EVENT`.
    pub memory_fault: HsaAmdGpuMemoryFaultInfo,
}
const _: () = assert!(core::mem::size_of::<HsaAmdEvent>() == 32);
const _: () = assert!(core::mem::offset_of!(HsaAmdEvent, memory_fault) == 8);
