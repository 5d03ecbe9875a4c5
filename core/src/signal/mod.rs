//! Signals: `amd_signal_t` values with HSA's memory orders, waits, and kinds.

pub mod raw;
