//! processor (being built).
