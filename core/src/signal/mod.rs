//! signal (being built).
