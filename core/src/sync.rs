//! The atomics every shared index and signal value goes through: `core`'s, or loom's under
//! `cfg(loom)` so the queue and signal protocols can be model-checked.

#[cfg(not(loom))]
pub use core::sync::atomic::{
    fence, AtomicBool, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// Pads and aligns `T` to 128 bytes (two cache lines, against adjacent-line prefetch) so that
/// host-side hot indices of different owners never share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct CachePadded<T>(pub T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A spin-loop hint, or loom's yield under `cfg(loom)`.
#[inline]
pub fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
