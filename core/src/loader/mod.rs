//! loader (being built).
