//! Model pieces shared by the loom tests (`loom_barrier`, `loom_interrupt`, `loom_signal`): a model
//! `amd_signal_t` made of loom atomics, and the runner that checks a negative model deadlocks.
#![allow(unsafe_code)]

use core::mem::{offset_of, size_of};
use core::ptr::NonNull;

use hsa_core::abi::signal::{AmdSignal, AMD_SIGNAL_KIND_USER};
use hsa_core::abi::SignalHandle;
use hsa_core::signal::raw::RawSignal;
use hsa_core::sync::{AtomicI64, AtomicU64};

/// An `amd_signal_t` made of loom atomics (`amd_hsa_signal.h` offsets: kind 0, value 8,
/// event_mailbox_ptr 16, event_id 24, start_ts 32, end_ts 40, queue_ptr 48), 64-byte aligned,
/// so `RawSignal`'s field views land on loom atomics.
#[repr(C, align(64))]
pub struct ModelSignal {
    pub kind: AtomicI64,
    pub value: AtomicI64,
    pub event_mailbox_ptr: AtomicU64,
    pub event_id: AtomicU64,
    pub start_ts: AtomicU64,
    pub end_ts: AtomicU64,
    pub queue_ptr: AtomicU64,
    pub reserved3: AtomicU64,
}

const _: () = assert!(size_of::<AtomicI64>() == 8 && size_of::<AtomicU64>() == 8);
const _: () = assert!(size_of::<ModelSignal>() == size_of::<AmdSignal>());
const _: () = assert!(core::mem::align_of::<ModelSignal>() == 64);
const _: () = assert!(offset_of!(ModelSignal, kind) == offset_of!(AmdSignal, kind));
const _: () = assert!(offset_of!(ModelSignal, value) == offset_of!(AmdSignal, value));
const _: () =
    assert!(offset_of!(ModelSignal, event_mailbox_ptr) == offset_of!(AmdSignal, event_mailbox_ptr));
const _: () = assert!(offset_of!(ModelSignal, event_id) == offset_of!(AmdSignal, event_id));
const _: () = assert!(offset_of!(ModelSignal, start_ts) == offset_of!(AmdSignal, start_ts));
const _: () = assert!(offset_of!(ModelSignal, end_ts) == offset_of!(AmdSignal, end_ts));
const _: () = assert!(offset_of!(ModelSignal, queue_ptr) == offset_of!(AmdSignal, queue_ptr));
const _: () = assert!(offset_of!(ModelSignal, reserved3) == offset_of!(AmdSignal, reserved3));

impl ModelSignal {
    /// A user signal with `value` and event id `event_id` (0 for none); no event mailbox.
    pub fn new(value: i64, event_id: u64) -> ModelSignal {
        ModelSignal {
            kind: AtomicI64::new(AMD_SIGNAL_KIND_USER),
            value: AtomicI64::new(value),
            event_mailbox_ptr: AtomicU64::new(0),
            event_id: AtomicU64::new(event_id),
            start_ts: AtomicU64::new(0),
            end_ts: AtomicU64::new(0),
            queue_ptr: AtomicU64::new(0),
            reserved3: AtomicU64::new(0),
        }
    }

    /// The handle: the signal's address.
    pub fn handle(&self) -> SignalHandle {
        SignalHandle(self as *const ModelSignal as usize as u64)
    }

    /// A `RawSignal` view of this signal.
    ///
    /// # Safety
    /// `self` must stay alive (and unmoved) for every use of the returned view.
    pub unsafe fn raw(&self) -> RawSignal {
        // SAFETY: 64-byte aligned and laid out as amd_signal_t (asserted above) with a loom
        // atomic on every 8-byte field, accessed only through those atomics; the caller keeps
        // it alive for the view's uses.
        unsafe { RawSignal::from_ptr(NonNull::from(self).cast::<AmdSignal>()) }
    }
}

/// Runs the test `model_test` of this test binary in a child process with env `env` set (so
/// the failing model runs for real: loom's deadlock report aborts the process, since loom
/// objects panic again while unwinding) and expects a failed exit with loom's deadlock report.
pub fn expect_deadlock(model_test: &str, env: &str) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", model_test, "--test-threads", "1", "--nocapture"])
        .env(env, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let output = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{model_test} passed: {output}");
    assert!(output.contains("deadlock"), "no deadlock report: {output}");
}
