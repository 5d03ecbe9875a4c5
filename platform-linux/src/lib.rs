//! # hsa-linux
//!
//! The Linux backend of hsa-rt (being built).
#![deny(unsafe_code)]

pub mod report;
