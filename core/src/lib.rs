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
//! ## Quick start
//!
//! The canonical HSA flow — init, find the GPU agent, find the memory pools, create an AQL
//! queue, load a code object, dispatch a kernel, wait on its completion signal, verify — on
//! the emulated device of `hsa-emu` (no GPU needed), running the real gfx90a machine code of
//! `vector_copy`. The same program is `examples/quick_start.rs` (`cargo run -p hsa-core
//! --example quick_start`), from which the README shows an excerpt; on Linux,
//! `cargo run -p hsa-core --example linux_embedding` runs it on `/dev/kfd` when present.
//! Every step returns [`Error`] (a [`Status`] and a message) when it fails.
//!
//! ```
//! use std::sync::Arc;
//!
//! use hsa_core::loader::executable::Executable;
//! use hsa_core::memory::GlobalFlags;
//! use hsa_core::packet::{HeaderFlags, KernelDispatch};
//! use hsa_core::platform::MemoryKind;
//! use hsa_core::queue::{AqlQueue, QueueConfig};
//! use hsa_core::runtime::Runtime;
//! use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
//! use hsa_core::NodeId;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//! #   if cfg!(miri) {
//! #       return Ok(()); // the emulated device makes system calls miri cannot run
//! #   }
//!     // 1. Init: a runtime over a platform. Here the emulated gfx90a (no GPU needed);
//!     //    `hsa_emu::open_default()` would pick /dev/kfd when it exists.
//!     let emulated = hsa_emu::EmulatedKfd::new(hsa_emu::builtin_topology())?;
//!     let device = hsa_emu::SelectedDevice::emulated(emulated)?;
//!     let rt = Runtime::new(Arc::new(device.platform))?;
//!
//!     // 2. Agents: the GPU that runs the kernel, the CPU that owns system memory.
//!     let gpu = rt.first_gpu().ok_or("no GPU agent")?;
//!     let cpu = rt.first_cpu().ok_or("no CPU agent")?;
//!     let gpu_node = NodeId(gpu.node());
//!     let isa = gpu.isa().ok_or("GPU agent without a known ISA")?;
//!
//!     // 3. Memory pools: kernarg memory and fine-grained system memory, both on the CPU agent.
//!     let kernarg_pool = rt.find_pool(cpu.handle(), GlobalFlags::KERNARG);
//!     let kernarg_pool = kernarg_pool.ok_or("no kernarg pool")?;
//!     let fine_pool = rt.find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED);
//!     let fine_pool = fine_pool.ok_or("no fine-grained pool")?;
//!
//!     // 4. An AQL queue of 64 packets on the GPU.
//!     let config = QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size());
//!     let queue = AqlQueue::create(rt.platform(), &config)?;
//!
//!     // 5. Load a code object built for the agent's ISA (testdata/codeobjects/kernels.cl:
//!     //    `vector_copy(int *in, int *out)`, no hidden kernel arguments).
//!     let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/codeobjects");
//!     let path = format!("{dir}/kernels-gfx90a-v5.hsaco");
//!     let code_object = std::fs::read(path)?;
//!     let mut executable = Executable::new(rt.platform());
//!     executable.load_code_object(gpu_node, isa, &code_object, MemoryKind::System)?;
//!     executable.freeze()?;
//!     let symbol = executable.symbol_by_name("vector_copy", Some(gpu_node))?;
//!     let kernel = symbol.kernel.as_ref().ok_or("vector_copy is not a kernel")?;
//!
//!     // 6. Buffers: `input` holds 0, 1, 2, ...; `output` is zeroed.
//!     const N: usize = 1024;
//!     let input = rt.allocate(fine_pool.handle(), (N * 4) as u64)?;
//!     let output = rt.allocate(fine_pool.handle(), (N * 4) as u64)?;
//!     let (Some(in_ptr), Some(out_ptr)) = (input.host_ptr, output.host_ptr) else {
//!         return Err("fine-grained memory without a host pointer".into());
//!     };
//!     let (in_ptr, out_ptr) = (in_ptr.cast::<i32>().as_ptr(), out_ptr.cast::<i32>().as_ptr());
//!     for i in 0..N {
//!         // SAFETY: both allocations hold N i32s (N * 4 bytes, 4096-aligned), are host-visible
//!         // and no dispatch uses them yet.
//!         unsafe {
//!             in_ptr.add(i).write(i as i32);
//!             out_ptr.add(i).write(0);
//!         }
//!     }
//!
//!     // 7. The kernarg segment: the two pointers, in the order of the kernel's arguments.
//!     let kernarg = rt.allocate(kernarg_pool.handle(), 16)?;
//!     let kernarg_ptr = kernarg.host_ptr.ok_or("kernarg memory without a host pointer")?;
//!     // SAFETY: the kernarg allocation holds at least 16 bytes, 8-aligned, not yet in use.
//!     unsafe { kernarg_ptr.cast::<[u64; 2]>().as_ptr().write([input.va.0, output.va.0]) };
//!
//!     // 8. Dispatch: one packet, a completion signal, the doorbell.
//!     let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
//!     let done = signals.create_interrupt(1)?;
//!     let packet = KernelDispatch {
//!         flags: HeaderFlags { barrier: true, ..HeaderFlags::SYSTEM },
//!         dimensions: 1,
//!         workgroup_size: [256, 1, 1],
//!         grid_size: [N as u32, 1, 1],
//!         private_segment_size_bytes: kernel.private_segment_size,
//!         group_segment_size_bytes: kernel.group_segment_size,
//!         kernel_object: kernel.kernel_object,
//!         kernarg_address: kernarg.va,
//!         completion_signal: done.handle(),
//!     };
//!     let mut reservation = queue.reserve(1)?;
//!     let index = reservation.write_next(&packet.emit()?)?;
//!     queue.ring_doorbell(index)?;
//!
//!     // 9. Wait until the packet processor decrements the completion signal to 0.
//!     let timeout_ns = 60_000_000_000;
//!     let (blocked, acquire) = (WaitState::Blocked, LoadOrder::Acquire);
//!     let value = done.wait(SignalCondition::Eq, 0, timeout_ns, blocked, acquire);
//!     assert_eq!(value, 0, "the dispatch did not complete");
//!
//!     // 10. Verify every element.
//!     for i in 0..N {
//!         // SAFETY: the dispatch completed (acquire wait above); the memory is ours again.
//!         assert_eq!(unsafe { out_ptr.add(i).read() }, i as i32, "element {i}");
//!     }
//!
//!     // Clean up (dropping does the same, reporting no errors).
//!     for va in [kernarg.va, input.va, output.va] {
//!         rt.free(va)?;
//!     }
//!     drop(done);
//!     queue.destroy()?;
//!     executable.destroy()?;
//!     Ok(())
//! }
//! ```
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
pub mod image;
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
pub mod sdma;
pub mod signal;
pub mod status;
pub mod sync;
pub mod wire;

pub use addr::{DoorbellIndex, EventId, GpuVa, NodeId, PacketIndex, PhysAddr, QueueId};
pub use platform_ref::PlatformRef;
pub use status::{Error, Result, Status, UnknownStatus};
