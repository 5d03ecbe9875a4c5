//! # hsa-emu
//!
//! The emulated AMD GPU of hsa-rt: where there is no AMD GPU, this crate plays one behind the
//! same amdkfd interface the Linux backend (`hsa-linux`) drives on real hardware. It is a std
//! crate apart from the runtime: nothing in `hsa-core` or `hsa-linux` depends on it.
//!
//! - [`gfx9`]: the `hsa-gfx9` crate, the GFX9 (wave64) decoder, disassembler text
//!   (`llvm-objdump`'s syntax) and wave interpreter, which runs the real machine code of gfx900
//!   (and its variants), gfx906, gfx908, gfx90a and gfx942 (and gfx940/941) code objects; this
//!   crate's device supplies its memory and clock.
//! - [`device`]: the emulated device — [`EmulatedKfd`], a model of amdkfd in its shape (one
//!   ioctl table indexed like `kfd_chardev.c`'s `amdkfd_ioctls[]`, handlers by object:
//!   process, clock, events, memory, dma-bufs, queues, SDMA) that implements
//!   [`hsa_linux::kfd::driver::KfdDriver`]; its command processor (one thread per AQL queue,
//!   running the core's packet processor, with a PM4 engine for the PM4-IB vendor packet; one
//!   thread per PM4 compute queue, `KFD_IOC_QUEUE_TYPE_COMPUTE`, running the same PM4 engine
//!   over its ring: register state, `DISPATCH_DIRECT`, waits and fences) and SDMA engine (one thread per
//!   SDMA queue), both reading their packets through `hsa_core::wire`; host implementations of
//!   the test kernels; and the
//!   built-in device profiles ([`builtin_topology`]: an MI210-like gfx90a and a CPU).
//! - [`select`]: the choice between the real `/dev/kfd` and the emulated device
//!   ([`open_default`], [`open_capture`]; `HSA_RT_DEVICE`, `HSA_RT_SYSFS`, `HSA_XNACK`), which
//!   returns a [`SelectedDevice`]: the `hsa_linux::LinuxPlatform` and, when emulated, the
//!   [`EmulatedKfd`] below it.
//!
//! The emulated device is opened like the real one: `LinuxPlatform::new(driver, topology)` with
//! an `Arc<EmulatedKfd>` as the driver ([`SelectedDevice::emulated`] does that and keeps the
//! handle).
#![deny(unsafe_code)]

extern crate alloc;

pub mod device;
/// The GFX9 instruction set the emulated device runs: the `hsa-gfx9` crate (decoder,
/// disassembler, wave interpreter), re-exported under its old path.
pub use hsa_gfx9 as gfx9;
pub mod select;

pub use device::{builtin_topology, EmulatedKfd, ExecutionMode, ExecutionStats};
pub use select::{open_capture, open_default, open_with, SelectedDevice};
