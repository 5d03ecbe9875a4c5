//! # hsa-linux
//!
//! The Linux backend of hsa-rt (being built).
#![deny(unsafe_code)]

pub mod isa;
pub mod kfd;
pub mod report;
pub mod topology;
