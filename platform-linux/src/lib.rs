//! # hsa-linux
//!
//! The Linux backend of hsa-rt: the core's `Platform` over amdkfd.
//!
//! Layers, bottom up:
//! - [`kfd::abi`]: the `kfd_ioctl.h` structs, request numbers and flags (no system calls).
//! - [`kfd::driver::KfdDriver`]: the seam every ioctl and mmap goes through; implemented by
//!   [`kfd::ioctl::DevKfd`] (the real `/dev/kfd` and render nodes) and by the emulated device.
//! - [`kfd::ioctl`]: the only `unsafe` code of the device layer — `DevKfd`, the typed
//!   [`kfd::ioctl::call`], and [`kfd::ioctl::VaSpace`] (the reserved address range chunks are
//!   carved from, with checked host stores such as doorbells).
//! - [`topology`]: the KFD sysfs topology (live or a captured dump); [`isa`]: a GPU's ISA and
//!   product name by PCI device id (for kernels that do not report them).
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
