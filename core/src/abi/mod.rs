//! abi (being built).
