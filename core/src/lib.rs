//! # hsa-core
//!
//! The no_std core of hsa-rt, an embeddable HSA runtime for AMD GPUs. It knows the HSA/AMD
//! ABI (AQL packets, `amd_queue_t`, `amd_signal_t`, kernel descriptors, code objects) and the
//! runtime's logic; everything OS- or hardware-specific goes through [`platform::Platform`],
//! which every object reaches through one kind of handle, [`PlatformRef`] (`&P` or `Arc<P>`).
//!
//! Layers, lowest first: [`abi`] (layouts the hardware reads) ← [`packet`] (header
//! encode/decode, builders, checked view) ← [`queue`], [`signal`], [`memory`] ←
//! [`packet_processor`], [`loader`] ← [`runtime`].
//!
//! ## Logging
//!
//! hsa-rt's crates log through the [`log`] facade, which works without `std`: `error` for
//! queue errors with their detail (the status, the queue, the packet, the kernel and
//! instruction or the faulting address where known), `warn` for what the user should know
//! (the emulated device stands in, a kernel's host fallback runs, interrupts were lost),
//! `info` for the device opened and each failing C API call, `debug` for queues created,
//! code objects loaded and dispatches run, `trace` for each packet and each emulated ioctl.
//! A Rust program installs any `log` backend and the records go there; with none installed
//! nothing is printed. The C library (`libhsa-runtime64`) and the tools install
//! `hsa_linux::logger`'s stderr logger, at the level the `HSA_RT_LOG` variable asks for.
#![no_std]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod abi;
pub mod addr;
pub mod isa;
pub mod loader;
pub mod memory;
pub mod packet;
pub mod packet_processor;
pub mod platform;
pub mod platform_ref;
pub mod queue;
#[cfg(feature = "alloc")]
pub mod runtime;
pub mod signal;
pub mod status;
pub mod sync;

pub use addr::{DoorbellIndex, EventId, GpuVa, NodeId, PacketIndex, PhysAddr, QueueId};
pub use platform_ref::PlatformRef;
pub use status::{Error, Result, Status, UnknownStatus};
