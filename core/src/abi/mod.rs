//! Layouts the hardware, its firmware or ROCR-compatible code read: AQL packets, `hsa_queue_t`
//! inside `amd_queue_t`, `amd_signal_t`, the kernel descriptor.
//!
//! Every type is `#[repr(C)]` with zerocopy derives and compile-time size and offset asserts;
//! `core/tests/abi_c.rs` also compares them with the C headers of Debian's
//! `libhsa-runtime-dev` (ROCR 5.2: `hsa.h`, `hsa_ext_amd.h`, `amd_hsa_queue.h`,
//! `amd_hsa_signal.h`). This module holds no logic and no `unsafe`.

pub mod packet;
pub mod queue;
pub mod signal;

/// An `hsa_signal_t`: the handle of a signal, which in this runtime (as in ROCR) is the
/// address of its [`signal::AmdSignal`]. 0 is the null signal.
///
/// Ref: `hsa_signal_t` in `hsa.h` (a struct of one `uint64_t handle`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(transparent)]
pub struct SignalHandle(pub u64);

impl SignalHandle {
    /// The null signal (`handle == 0`).
    pub const NULL: SignalHandle = SignalHandle(0);

    /// Whether this is the null signal.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }
}
