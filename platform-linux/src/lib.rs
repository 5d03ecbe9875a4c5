//! # hsa-linux
//!
//! The Linux backend of hsa-rt: the core's `Platform` over amdkfd (`/dev/kfd`).
//!
//! Layers, bottom up:
//! - [`kfd::abi`]: the `kfd_ioctl.h` structs, request numbers and flags (no system calls).
//! - [`kfd::driver::KfdDriver`]: the seam every ioctl and mmap goes through (both `unsafe`:
//!   arguments carry pointers, mmap may replace a range); implemented here by
//!   [`kfd::ioctl::DevKfd`] (the real `/dev/kfd` and render nodes), and by any other driver
//!   with amdkfd's semantics a caller hands to [`LinuxPlatform::new`].
//! - [`kfd::calls`]: the typed, safe wrappers — one per pointer-carrying request, owning or
//!   borrowing the buffers its pointers name, and [`kfd::calls::call`] for the requests
//!   without pointers ([`kfd::calls::PlainArgs`]).
//! - [`kfd::ioctl`]: the system calls — `DevKfd`, and [`kfd::ioctl::VaSpace`] (the reserved
//!   address range chunks are carved from, with checked host stores such as doorbells and
//!   driver mappings only over ranges it owns).
//! - [`topology`]: the KFD sysfs topology (live or a captured dump); [`isa`]: a GPU's ISA and
//!   product name by PCI device id (for kernels that do not report them).
//! - [`device::LinuxPlatform`]: `hsa_core::platform::Platform` over a driver and a topology
//!   ([`LinuxPlatform::new`], [`LinuxPlatform::with_xnack`]).
//! - [`env`](mod@env): the environment variables the runtime reads, and how each kind of value
//!   (switch, choice, path, log level) is parsed; [`logger`]: the stderr `log` backend of the C library
//!   and the tools, at the level `HSA_RT_LOG` asks for.
//!
//! Which driver to open (the real `/dev/kfd` or another one) is decided above this crate, by
//! its callers.
#![deny(unsafe_code)]

pub mod device;
pub mod env;
pub mod isa;
pub mod kfd;
pub mod logger;
pub mod topology;

pub use device::{ClockSample, LinuxPlatform};
