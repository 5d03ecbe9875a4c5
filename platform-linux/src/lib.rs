//! # hsa-linux
//!
//! The Linux backend of hsa-rt: the core's `Platform` over amdkfd.
//!
//! Layers, bottom up:
//! - [`kfd::abi`]: the `kfd_ioctl.h` structs, request numbers and flags (no system calls).
//! - [`kfd::driver::KfdDriver`]: the seam every ioctl and mmap goes through (both `unsafe`:
//!   arguments carry pointers, mmap may replace a range); implemented by
//!   [`kfd::ioctl::DevKfd`] (the real `/dev/kfd` and render nodes) and by the emulated device.
//! - [`kfd::calls`]: the typed, safe wrappers — one per pointer-carrying request, owning or
//!   borrowing the buffers its pointers name, and [`kfd::calls::call`] for the requests
//!   without pointers ([`kfd::calls::PlainArgs`]).
//! - [`kfd::ioctl`]: the system calls — `DevKfd`, and [`kfd::ioctl::VaSpace`] (the reserved
//!   address range chunks are carved from, with checked host stores such as doorbells and
//!   driver mappings only over ranges it owns).
//! - [`topology`]: the KFD sysfs topology (live or a captured dump); [`isa`]: ISA names.
//! - [`device::LinuxPlatform`]: `hsa_core::platform::Platform` over a driver and a topology;
//!   [`device::open_with`] picks `/dev/kfd` or the emulated device from the environment
//!   (`HSA_RT_DEVICE`, `HSA_RT_SYSFS`).
#![deny(unsafe_code)]

pub mod demo;
pub mod device;
pub mod emulated;
pub mod isa;
pub mod kfd;
pub mod report;
pub mod topology;

pub use device::LinuxPlatform;
