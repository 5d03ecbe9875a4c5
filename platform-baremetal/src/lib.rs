//! # hsa-baremetal
//!
//! The bare-metal backend of hsa-rt (being built).
#![no_std]
#![deny(unsafe_code)]
