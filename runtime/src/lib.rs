//! # hsa-runtime
//!
//! The runtime services of hsa-rt above the core, what ROCR offers beside the HSA core API:
//! the copy engine ([`copy`]: SDMA queues and host copies), images and samplers ([`images`]),
//! async signal handlers ([`handlers`]), GPU memory-fault events ([`events`]), memory and
//! signals shared between processes ([`ipc`]), and ROCm 7's virtual-memory API
//! ([`vmem`]). [`Services`] holds one of each for a runtime.
//!
//! Everything here is a Rust API over [`hsa_core::runtime::Runtime`] and the platform's
//! optional capabilities ([`hsa_core::platform::Capabilities`]); the C library
//! (`libhsa-runtime64`, crate `hsa-capi`) is a thin layer over it that converts and checks
//! arguments. A Rust program uses it directly: `examples/copy_and_sample.rs` copies through
//! the copy engine (SDMA on the emulated device) and samples an image with a clang-built
//! OpenCL kernel, with no C in between.
//!
//! What a `no_std` + `alloc` host also needs (host-memory registration and the records of
//! allocations, [`hsa_core::runtime::host_memory`]; texel math, [`hsa_core::image::region`])
//! lives in hsa-core. This crate needs `std`: the copy engine and the async handlers run
//! threads, and their waits block.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hsa_core::platform::Platform;
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::Runtime;
use hsa_core::signal::{Signal, SignalPool};

pub mod ais;
pub mod copy;
pub mod events;
pub mod handlers;
pub mod images;
pub mod ipc;
pub mod vmem;

pub use copy::{CopyConfig, CopyEngine, CopyEngineId, CopyTime, PitchedSurface};
pub use events::{FaultListener, MemoryFaults};
pub use handlers::{AsyncFunction, AsyncHandlers, Liveness, SignalHandler};
pub use images::{ForeignLayout, Image, ImageHandle, Images, SamplerHandle};
pub use ipc::{Ipc, IpcHandle};
pub use vmem::VirtualMemory;

/// A signal of a runtime over `Arc<P>`, as the services take and make them.
pub type Sig<P> = Signal<Arc<P>>;

/// Locks a mutex, taking the data of a poisoned one (a panic in a caller was caught; every
/// update here is a single insert or remove, so the data stays consistent).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How the services behave, fixed when they are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServicesConfig {
    /// The copy engine's.
    pub copy: CopyConfig,
}

/// The runtime services of one runtime: copy engine, images, async handlers, memory-fault
/// events, IPC and virtual memory, over the runtime, its host-memory records and a signal pool.
///
/// [`Services::shut_down`] stops what runs on behalf of the runtime and releases what it
/// holds (handler thread, registrations, attachments, locks), as `hsa_shut_down` does;
/// dropping the services does the same.
///
/// # Example
/// A copy on the emulated device's SDMA engine, from one fine-grained buffer to another:
/// ```
/// use std::sync::Arc;
/// use hsa_core::memory::GlobalFlags;
/// use hsa_core::runtime::host_memory::HostMemory;
/// use hsa_core::runtime::Runtime;
/// use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
/// use hsa_core::NodeId;
/// use hsa_runtime::{Services, ServicesConfig};
///
/// # if cfg!(miri) { return Ok::<(), Box<dyn std::error::Error>>(()); }
/// let device = hsa_emu::SelectedDevice::emulated(hsa_emu::EmulatedKfd::new(
///     hsa_emu::builtin_topology(),
/// )?)?;
/// let rt = Arc::new(Runtime::new(Arc::new(device.platform))?);
/// let (gpu, cpu) = (rt.first_gpu().unwrap(), rt.first_cpu().unwrap());
/// let signals = Arc::new(SignalPool::new(rt.platform_ref().clone(), NodeId(cpu.node())));
/// let services = Services::new(
///     rt.clone(),
///     Arc::new(HostMemory::new()),
///     signals.clone(),
///     ServicesConfig::default(),
/// );
/// let pool = rt.find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED).unwrap().handle();
/// let (src, dst) = (rt.allocate(pool, 4096)?, rt.allocate(pool, 4096)?);
/// // SAFETY: a live host-visible allocation of 4096 bytes, no copy uses it yet.
/// unsafe { src.host_ptr.unwrap().as_ptr().write_bytes(7, 4096) };
/// let done = Arc::new(signals.create_interrupt(1)?);
/// // SAFETY: both ranges are runtime allocations, alive until the copy completed below.
/// unsafe {
///     services.copy().copy(dst.va.0, src.va.0, 4096, Some(NodeId(gpu.node())), vec![], done.clone())?
/// };
/// let v = done.wait(SignalCondition::Eq, 0, 10_000_000_000, WaitState::Blocked, LoadOrder::Acquire);
/// assert_eq!(v, 0);
/// // SAFETY: the copy completed (acquire wait above).
/// assert_eq!(unsafe { dst.host_ptr.unwrap().as_ptr().add(4095).read() }, 7);
/// # drop(done); services.shut_down();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Services<P: Platform + 'static> {
    rt: Arc<Runtime<Arc<P>>>,
    host: Arc<HostMemory>,
    faults: Arc<MemoryFaults<P>>,
    copy: Arc<CopyEngine<P>>,
    images: Images<P>,
    handlers: AsyncHandlers<P>,
    ipc: Ipc<P>,
    vmem: Arc<VirtualMemory<P>>,
}

impl<P: Platform + 'static> std::fmt::Debug for Services<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("copy", &self.copy)
            .field("images", &self.images)
            .field("handlers", &self.handlers)
            .field("ipc", &self.ipc)
            .finish_non_exhaustive()
    }
}

impl<P: Platform + 'static> Services<P> {
    /// The services of `rt`: locked memory and allocation records in `host` (shared with the
    /// caller, which frees through it), signals the services make (the handler thread's wake
    /// signal) from `signals`. Registered signals are always live to the handler thread: a Rust
    /// owner lets go of a signal by dropping its `Arc`; see [`Services::with_liveness`].
    pub fn new(
        rt: Arc<Runtime<Arc<P>>>,
        host: Arc<HostMemory>,
        signals: Arc<SignalPool<Arc<P>>>,
        config: ServicesConfig,
    ) -> Services<P> {
        Self::with_liveness(rt, host, signals, config, Arc::new(|_: &Sig<P>| true))
    }

    /// As [`Services::new`], with `live` telling the handler thread which registered signals
    /// their owner destroyed (the C API: a handle no longer in its registry).
    pub fn with_liveness(
        rt: Arc<Runtime<Arc<P>>>,
        host: Arc<HostMemory>,
        signals: Arc<SignalPool<Arc<P>>>,
        config: ServicesConfig,
        live: Liveness<P>,
    ) -> Services<P> {
        let faults = Arc::new(MemoryFaults::new(rt.platform_ref().clone()));
        let vmem = Arc::new(VirtualMemory::new(rt.clone()));
        let copy = CopyEngine::new(
            rt.clone(),
            host.clone(),
            faults.clone(),
            vmem.clone(),
            config.copy,
        );
        Services {
            images: Images::new(rt.clone(), host.clone()),
            handlers: AsyncHandlers::new(signals, live),
            ipc: Ipc::new(rt.clone()),
            vmem,
            rt,
            host,
            faults,
            copy,
        }
    }

    /// The runtime.
    pub fn runtime(&self) -> &Runtime<Arc<P>> {
        &self.rt
    }

    /// The host-memory records (locks, user data, deallocation callbacks).
    pub fn host_memory(&self) -> &HostMemory {
        &self.host
    }

    /// The copy engine.
    pub fn copy(&self) -> &CopyEngine<P> {
        &self.copy
    }

    /// Images and samplers.
    pub fn images(&self) -> &Images<P> {
        &self.images
    }

    /// Async signal handlers and functions.
    pub fn handlers(&self) -> &AsyncHandlers<P> {
        &self.handlers
    }

    /// GPU memory-fault events.
    pub fn memory_faults(&self) -> &Arc<MemoryFaults<P>> {
        &self.faults
    }

    /// Memory and signals shared with other processes.
    pub fn ipc(&self) -> &Ipc<P> {
        &self.ipc
    }

    /// ROCm 7's virtual-memory API (where the platform has it: [`VirtualMemory::supported`]).
    pub fn vmem(&self) -> &VirtualMemory<P> {
        &self.vmem
    }

    /// Stops what runs on behalf of the runtime and releases what holds it: the memory-fault
    /// handler and listeners, the async handler thread and its registrations, IPC attachments
    /// and locks (the application must no longer use them, as after `hsa_shut_down`).
    /// Idempotent.
    pub fn shut_down(&self) {
        self.faults.shut_down();
        self.handlers.shut_down();
        // SAFETY: the runtime is going: nothing uses locked or attached memory any more (the
        // contract of hsa_shut_down, and of dropping the services).
        unsafe {
            self.host.shut_down(&self.rt);
            self.ipc.shut_down();
        }
    }
}

impl<P: Platform + 'static> Drop for Services<P> {
    fn drop(&mut self) {
        self.shut_down();
    }
}
