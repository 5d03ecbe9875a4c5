//! # hsa-linux
//!
//! The Linux backend of hsa-rt (being built).
#![deny(unsafe_code)]

pub mod emulated;
pub mod isa;
pub mod kfd;
pub mod topology;
