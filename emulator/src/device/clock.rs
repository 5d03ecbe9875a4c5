//! The emulated GPU's clock: one counter, `CLOCK_MONOTONIC` in ns, that the engines read (the
//! CP's `RELEASE_MEM` with `DATA_SEL` 3, the SDMA engine's `TIMESTAMP`, the interpreter's
//! `s_memtime`/`s_memrealtime` through `gfx9::exec::device_clock_ns`) and that
//! `GET_CLOCK_COUNTERS` reports (Ref: amdkfd `kfd_ioctl_get_clock_counters`).
//!
//! The GPU, CPU and system counters are the same nanoseconds here, so a runtime converting
//! GPU ticks to host time (ROCR's `hsa_amd_profiling_convert_tick_to_system_domain`) gets
//! exact values; the frequency reported is 1 GHz.

use std::sync::Arc;

use rustix::io::Errno;

use hsa_linux::kfd::abi::GetClockCountersArgs;

use super::Device;

/// The counters' frequency, Hz (`GET_CLOCK_COUNTERS.system_clock_freq`): they count ns.
pub const CLOCK_FREQUENCY_HZ: u64 = 1_000_000_000;

/// `CLOCK_MONOTONIC`, ns: the GPU clock counter the emulated engines read.
pub(crate) fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

/// `GET_CLOCK_COUNTERS`: the GPU, CPU and system counters, all [`monotonic_ns`]. As the
/// kernel, an unknown `gpu_id` gives a zero GPU counter, not an error.
pub(crate) fn get_clock_counters(
    device: &Arc<Device>,
    a: &mut GetClockCountersArgs,
) -> Result<(), Errno> {
    let now = monotonic_ns();
    a.gpu_clock_counter = if device.gpu(a.gpu_id).is_some() {
        now
    } else {
        0
    };
    a.cpu_clock_counter = now;
    a.system_clock_counter = now;
    a.system_clock_freq = CLOCK_FREQUENCY_HZ;
    Ok(())
}
