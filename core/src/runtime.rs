//! runtime (being built).
