//! packet (being built).
