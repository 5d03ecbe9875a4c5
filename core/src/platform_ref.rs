//! How the core's objects reach their platform: one handle type, [`PlatformRef`].
//!
//! Queues ([`AqlQueue`](crate::queue::AqlQueue)), signals ([`Signal`](crate::signal::Signal)) and their pools
//! ([`SignalPool`]), memory pools ([`MemoryPool`](crate::memory::MemoryPool)), executables
//! (`loader::executable::Executable`) and the runtime (`runtime::Runtime`) each keep a `H: PlatformRef` and call the platform through it. Two kinds of
//! handle are provided:
//!
//! - `&'p P`: the object borrows the platform, which the borrow checker keeps alive; costs
//!   nothing and needs no allocator (firmware, no_std, tests). A signal borrows its pool
//!   the same way (`&'p SignalPool<&'p P>`).
//! - `Arc<P>` (feature `alloc`): the object shares ownership of the platform, which lives
//!   until the last object holding it is dropped, so an object may outlive whatever created
//!   it (a C ABI's handles, a runtime shut down while a queue is still referenced). A signal
//!   shares its pool the same way (`Arc<SignalPool<Arc<P>>>`).
//!
//! Either way no object can outlive the memory it uses, by construction.
//!
//! ```
//! use std::sync::Arc;
//! use hsa_core::platform::fake::FakePlatform;
//! use hsa_core::signal::{LoadOrder, SignalPool};
//! use hsa_core::NodeId;
//!
//! // Borrowed: the pool and its signals borrow `platform`.
//! let platform = FakePlatform::new();
//! let pool = SignalPool::new(&platform, NodeId(0));
//! let signal = pool.create(1).unwrap();
//! assert_eq!(signal.load(LoadOrder::Acquire), 1);
//!
//! // Shared: the signal keeps its pool, and the pool its platform, alive.
//! let pool = Arc::new(SignalPool::new(Arc::new(FakePlatform::new()), NodeId(0)));
//! let signal = pool.create(2).unwrap();
//! drop(pool);
//! assert_eq!(signal.load(LoadOrder::Acquire), 2);
//! ```

use core::ops::Deref;

use crate::platform::Platform;
use crate::signal::SignalPool;

/// A handle through which an object reaches its [`Platform`]: `&'p P` or (with `alloc`)
/// `Arc<P>`. See the [module doc](self).
///
/// Cloning a handle is cheap (a copy, or a reference-count increment) and never fails;
/// dereferencing it gives the platform.
pub trait PlatformRef: Clone + Deref<Target: Platform + Sized> {
    /// The same kind of handle to a [`SignalPool`] over this handle, which each signal made
    /// by the pool keeps so that it can give its slot back: `&'p SignalPool<&'p P>` beside
    /// `&'p P`, `Arc<SignalPool<Arc<P>>>` beside `Arc<P>`.
    type SignalPoolRef: Clone + Deref<Target = SignalPool<Self>>;
}

impl<'p, P: Platform> PlatformRef for &'p P {
    type SignalPoolRef = &'p SignalPool<&'p P>;
}

#[cfg(feature = "alloc")]
impl<P: Platform> PlatformRef for alloc::sync::Arc<P> {
    type SignalPoolRef = alloc::sync::Arc<SignalPool<alloc::sync::Arc<P>>>;
}

/// The platform behind handle `H`.
pub type PlatformOf<H> = <H as Deref>::Target;

/// The doorbell handle type of the platform behind `H` ([`Platform::Doorbell`]).
pub type DoorbellOf<H> = <PlatformOf<H> as Platform>::Doorbell;
