//! What hsa-rt's tests share, in one place (a dev-dependency only; not published):
//!
//! - [`FlatMemory`]: device memory made of a few regions at fixed addresses, as the gfx9
//!   interpreter's tests and benches build it (with the `device-memory` feature it is
//!   `hsa_gfx9`'s `DeviceMemory`, with `CLOCK_MONOTONIC` as its clock);
//! - [`shared`]: the captured KFD topologies and rocminfo outputs of `../shared/testdata`
//!   (`HSA_RT_SHARED`), found the one way every test finds them, or `skipped: ...` said;
//! - [`cargo`]: `cargo build -p PACKAGE --lib` from a test, into a target directory of its
//!   own beside the test's, in the test's profile (the C library and kfd-emu's preload
//!   library that C programs and ROCm load).
//!
//! The error a queue stopped with is the queue's own to remember (`hsa_core::queue`), not a
//! recorder's here.

#![deny(unsafe_code)]

pub mod cargo;
mod memory;
pub mod rocm7;
pub mod shared;

pub use memory::FlatMemory;
