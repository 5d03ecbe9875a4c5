//! Queue and profiling types (`hsa_ext_amd.h`).

#[allow(unused_imports)]
use super::*;

/// `hsa_amd_profiling_dispatch_time_t`: start and end, system timestamp ticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchTime {
    /// When the dispatch started.
    pub start: u64,
    /// When it completed.
    pub end: u64,
}

/// `hsa_queue_info_attribute_t` (`hsa_ext_amd.h`, ROCR 7), `hsa_amd_queue_get_info`: the
/// agent that owns the hardware queue (`hsa_agent_t`).
pub const HSA_AMD_QUEUE_INFO_AGENT: u32 = 0;
/// `hsa_queue_info_attribute_t`: the queue's doorbell id (`uint64_t`; ROCR 7 answers the
/// address its doorbell signal rings, `hardware_doorbell_ptr`).
pub const HSA_AMD_QUEUE_INFO_DOORBELL_ID: u32 = 1;
