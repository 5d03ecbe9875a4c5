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
