//! # hsa-linux
//!
//! The Linux backend of hsa-rt: the core's `Platform` over amdkfd (`/dev/kfd`).
//!
//! Layers, bottom up:
//! - [`kfd::abi`]: the `kfd_ioctl.h` structs, request numbers and flags (no system calls).
//! - [`kfd::driver::KfdDriver`]: the seam every ioctl and mmap goes through; implemented here
//!   by [`kfd::ioctl::DevKfd`] (the real `/dev/kfd` and render nodes), and by any other driver
//!   with amdkfd's semantics a caller hands to [`LinuxPlatform::new`].
//! - [`kfd::ioctl`]: the only `unsafe` code of the device layer — `DevKfd`, the typed
//!   [`kfd::ioctl::call`], and [`kfd::ioctl::VaSpace`] (the reserved address range chunks are
//!   carved from, with checked host stores such as doorbells).
//! - [`topology`]: the KFD sysfs topology (live or a captured dump); [`isa`]: a GPU's ISA and
//!   product name by PCI device id (for kernels that do not report them).
//! - [`device::LinuxPlatform`]: `hsa_core::platform::Platform` over a driver and a topology
//!   ([`LinuxPlatform::new`], [`LinuxPlatform::with_xnack`]).
//! - [`env`](mod@env): the environment variables the runtime reads, and how each kind of value
//!   (switch, choice, path) is parsed.
//!
//! Which driver to open (the real `/dev/kfd` or another one) is decided above this crate, by
//! its callers.
#![deny(unsafe_code)]

pub mod device;
pub mod env;
pub mod isa;
pub mod kfd;
pub mod topology;

pub use device::LinuxPlatform;
