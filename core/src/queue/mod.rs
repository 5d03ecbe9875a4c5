//! AQL user-mode queues: the producer side.

pub mod ring;
