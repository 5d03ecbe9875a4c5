//! HSA memory orders and the Rust orderings they map to.
//!
//! HSA names its signal and queue-index operations by memory order (`_relaxed`, `_scacquire`,
//! `_screlease`, `_scacq_screl`); the `sc` prefix says the order holds at system scope, which on
//! a host CPU is what Rust's orderings already give for memory shared with the device.
//!
//! Ref: HSA Runtime 1.2 §2.4 "Signals" (function variants per memory order); HSA PRM memory
//! model (`scacquire`, `screlease`, `scacq_screl`).

use crate::sync::Ordering;

/// The memory order of a read-modify-write operation (exchange, compare-and-swap, add,
/// subtract, and, or, xor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryOrder {
    /// `_relaxed` → [`Ordering::Relaxed`].
    Relaxed,
    /// `_scacquire` → [`Ordering::Acquire`].
    Acquire,
    /// `_screlease` → [`Ordering::Release`].
    Release,
    /// `_scacq_screl` → [`Ordering::AcqRel`].
    AcqRel,
}

impl MemoryOrder {
    /// The Rust ordering of the operation.
    pub const fn ordering(self) -> Ordering {
        match self {
            MemoryOrder::Relaxed => Ordering::Relaxed,
            MemoryOrder::Acquire => Ordering::Acquire,
            MemoryOrder::Release => Ordering::Release,
            MemoryOrder::AcqRel => Ordering::AcqRel,
        }
    }

    /// The ordering of a failed compare-and-swap (a load): the acquire part of the order, as
    /// C11 requires (a failure ordering never releases).
    pub const fn failure_ordering(self) -> Ordering {
        match self {
            MemoryOrder::Relaxed | MemoryOrder::Release => Ordering::Relaxed,
            MemoryOrder::Acquire | MemoryOrder::AcqRel => Ordering::Acquire,
        }
    }
}

/// The memory order of a load: HSA defines `_relaxed` and `_scacquire` loads only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoadOrder {
    /// `_relaxed` → [`Ordering::Relaxed`].
    Relaxed,
    /// `_scacquire` → [`Ordering::Acquire`].
    Acquire,
}

impl LoadOrder {
    /// The Rust ordering of the load.
    pub const fn ordering(self) -> Ordering {
        match self {
            LoadOrder::Relaxed => Ordering::Relaxed,
            LoadOrder::Acquire => Ordering::Acquire,
        }
    }
}

/// The memory order of a store: HSA defines `_relaxed` and `_screlease` stores only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreOrder {
    /// `_relaxed` → [`Ordering::Relaxed`].
    Relaxed,
    /// `_screlease` → [`Ordering::Release`].
    Release,
}

impl StoreOrder {
    /// The Rust ordering of the store.
    pub const fn ordering(self) -> Ordering {
        match self {
            StoreOrder::Relaxed => Ordering::Relaxed,
            StoreOrder::Release => Ordering::Release,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_map_to_rust_orderings() {
        assert_eq!(MemoryOrder::Relaxed.ordering(), Ordering::Relaxed);
        assert_eq!(MemoryOrder::Acquire.ordering(), Ordering::Acquire);
        assert_eq!(MemoryOrder::Release.ordering(), Ordering::Release);
        assert_eq!(MemoryOrder::AcqRel.ordering(), Ordering::AcqRel);
        assert_eq!(MemoryOrder::Release.failure_ordering(), Ordering::Relaxed);
        assert_eq!(MemoryOrder::AcqRel.failure_ordering(), Ordering::Acquire);
        assert_eq!(LoadOrder::Acquire.ordering(), Ordering::Acquire);
        assert_eq!(StoreOrder::Release.ordering(), Ordering::Release);
    }
}
