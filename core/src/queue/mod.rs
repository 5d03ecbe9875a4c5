//! queue (being built).
