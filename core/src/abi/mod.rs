//! abi (being built).
pub mod kernel_descriptor;
