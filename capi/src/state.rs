//! The process-wide runtime behind the C API: reference-counted init/shut-down (HSA Runtime 1.2
//! §2.1) and the registries that turn C handles into live Rust objects.
//!
//! # Ownership
//! Every object made through the C API shares the platform: the runtime, the signal pool,
//! queues, signals and executables each hold a [`PlatRef`] (`Arc<Plat>`), and signals hold
//! their pool by `Arc`. No object borrows another, so none can outlive what it uses: a call
//! that still holds a signal or queue when `hsa_shut_down` runs keeps the platform (and the
//! pool) alive until it lets go. `hsa_shut_down` drops the global `Arc<State>`; the last call
//! still using the state drops it, which destroys what is left in its registries (HSA: shut
//! down releases every object), and the platform goes with the last object holding it.
//!
//! # Handles
//! Agents, pools/regions: the core's handles. ISAs, executables, readers, loaded code objects,
//! symbols and signal groups: a tagged `u64` (a base in the top 24 bits, never 0), always
//! looked up, never dereferenced. Signals: the `amd_signal_t` address (as ROCR), also looked
//! up. Queues: the `hsa_queue_t` (= `amd_queue_t`) address, looked up.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hsa_core::loader::executable::Executable;
use hsa_core::memory::Allocation;
use hsa_core::queue::AqlQueue;
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::{Runtime, MAX_REFCOUNT};
use hsa_core::signal::{Signal, SignalPool};
use hsa_core::{bail, Error, NodeId, Status};

use crate::backend::{self, Device};
pub(crate) use crate::handle_map::{HandleMap, Held};
use crate::rcu::{self, ReadSection};

/// The platform under the C API (the backend's).
pub(crate) use crate::backend::Plat;
/// How the C API's objects hold the platform: shared.
pub(crate) type PlatRef = Arc<Plat>;
/// A signal made through the C API.
pub(crate) type Sig = Signal<PlatRef>;

/// Tag of ISA handles (`hsa_isa_t`): base | agent index.
pub(crate) const ISA_BASE: u64 = 0x4853_4900_0000_0000;
/// Tag of executable handles: base | executable id.
pub(crate) const EXECUTABLE_BASE: u64 = 0x4853_4500_0000_0000;
/// Tag of code object reader handles: base | reader id.
pub(crate) const READER_BASE: u64 = 0x4853_5200_0000_0000;
/// Tag of signal group handles: base | group id.
pub(crate) const GROUP_BASE: u64 = 0x4853_4700_0000_0000;
/// Tag of symbol handles: base | executable id << 20 | symbol index.
pub(crate) const SYMBOL_BASE: u64 = 0x4853_5900_0000_0000;
/// Tag of loaded code object handles: base | executable id << 20 | load index.
pub(crate) const LOADED_BASE: u64 = 0x4853_4c00_0000_0000;
/// Bits of the per-executable index in symbol and loaded-code-object handles.
pub(crate) const INDEX_BITS: u32 = 20;

/// Splits a tagged handle into its id, when the tag matches.
pub(crate) fn untag(handle: u64, base: u64) -> Option<u64> {
    (handle & 0xffff_ff00_0000_0000 == base).then_some(handle & 0x0000_00ff_ffff_ffff)
}

/// A queue made through the C API.
// One per queue, behind an Arc: the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum QueueImpl {
    /// `hsa_queue_create`: an AQL queue the platform's packet processor consumes. `None` once
    /// destroyed (a racing call then sees no queue); beside it, the view the hot calls use
    /// without the lock.
    Aql(RwLock<Option<AqlQueue<PlatRef>>>, AqlHot),
    /// `hsa_soft_queue_create`: descriptor and ring in region memory, consumed by the
    /// application itself.
    Soft(SoftQueue),
}

pub(crate) use hot::{hot_view, AqlHot};

/// The part of an AQL queue the hot calls (index operations, doorbell stores) use without the
/// queue's lock.
#[allow(unsafe_code)] // the ring view's contract
mod hot {
    use super::{Held, PlatRef, QueueImpl};
    use core::sync::atomic::AtomicU64;
    use hsa_core::queue::ring::Ring;
    use hsa_core::queue::AqlQueue;
    use hsa_core::signal::{DoorbellRinger, StoreOrder};

    /// An AQL queue's ring indices and doorbell, reachable only through [`hot_view`] of a
    /// queue found inside a read section: `hsa_queue_destroy` unlinks the queue from the
    /// tables and waits out a grace period before it destroys the queue (and frees the
    /// `amd_queue_t` holding the indices). The doorbell stays sound to ring even after that
    /// (`DoorbellRinger`).
    pub(crate) struct AqlHot {
        ring: Ring,
        ringer: DoorbellRinger<PlatRef>,
    }

    impl AqlHot {
        /// The view of a queue just created, before it is registered.
        pub(crate) fn new(queue: &AqlQueue<PlatRef>) -> AqlHot {
            AqlHot {
                // SAFETY: `Ring`'s contract (not used once the queue is destroyed) holds
                // because `hot_view` hands it out only inside a read section that found the
                // queue registered, and destruction comes after unregistration and a grace
                // period (`QueueTable::remove`).
                ring: unsafe { queue.ring() },
                ringer: queue.doorbell_signal().ringer(),
            }
        }

        /// `amd_queue_t.read_dispatch_id` or `write_dispatch_id`.
        pub(crate) fn index(&self, read_index: bool) -> &AtomicU64 {
            if read_index {
                self.ring.read_index()
            } else {
                self.ring.write_index()
            }
        }

        /// Rings the queue's doorbell with `value`.
        pub(crate) fn ring_doorbell(&self, value: u64, order: StoreOrder) {
            self.ringer.ring(value, order);
        }
    }

    /// The lock-free view of an AQL queue found inside a read section; `None` for a queue
    /// found under the table's lock (no section) or a soft queue.
    pub(crate) fn hot_view<'a>(queue: &'a Held<'a, QueueImpl>) -> Option<&'a AqlHot> {
        match queue {
            Held::Borrowed(QueueImpl::Aql(_, hot)) => Some(hot),
            _ => None,
        }
    }
}

/// The queues made through the C API, by `hsa_queue_t` address, and the AQL ones also by
/// their doorbell signal's handle: a store to a doorbell signal (every dispatch) finds its
/// queue with one lookup, taking no queue's lock. Both maps change together, under the one
/// lock of the table.
#[derive(Default)]
pub(crate) struct QueueTable {
    by_address: HandleMap<QueueImpl>,
    by_doorbell: HandleMap<QueueImpl>,
    /// Serialises registrations, so the two maps change together.
    changes: Mutex<()>,
}

impl QueueTable {
    /// Registers an AQL queue at its `hsa_queue_t` address with its doorbell signal's handle.
    pub(crate) fn insert_aql(&self, address: u64, doorbell: u64, queue: Arc<QueueImpl>) {
        let _change = lock(&self.changes);
        self.by_doorbell.insert(doorbell, queue.clone());
        self.by_address.insert(address, queue);
    }

    /// Registers a soft queue at its `hsa_queue_t` address (its doorbell is an ordinary
    /// signal the application rings itself).
    pub(crate) fn insert_soft(&self, address: u64, queue: Arc<QueueImpl>) {
        let _change = lock(&self.changes);
        self.by_address.insert(address, queue);
    }

    /// Unregisters the queue at `address` (and its doorbell), once no read section can still
    /// be using it; `None` when none is there.
    pub(crate) fn remove(&self, address: u64) -> Option<Arc<QueueImpl>> {
        let _change = lock(&self.changes);
        let q = self.by_address.remove(address)?;
        // The queue's lock is let go before the doorbell's grace period: nothing a section
        // may wait for is held across one (a section that took the queue's read lock behind
        // a waiting writer, hsa_queue_inactivate, would wait for this call while the grace
        // period waited for it).
        let doorbell = match &*q {
            QueueImpl::Aql(lock, _) => read(lock)
                .as_ref()
                .map(|aql| aql.doorbell_signal().handle().0),
            QueueImpl::Soft(_) => None,
        };
        if let Some(doorbell) = doorbell {
            self.by_doorbell.remove(doorbell);
        }
        Some(q)
    }

    /// The queue at an `hsa_queue_t` address: borrowed inside `section`, else shared.
    pub(crate) fn get<'a>(
        &'a self,
        address: u64,
        section: Option<&'a ReadSection>,
    ) -> Option<Held<'a, QueueImpl>> {
        self.by_address.get(address, section)
    }

    /// The AQL queue whose doorbell signal has handle `handle`: borrowed inside `section`,
    /// else shared.
    pub(crate) fn by_doorbell<'a>(
        &'a self,
        handle: u64,
        section: Option<&'a ReadSection>,
    ) -> Option<Held<'a, QueueImpl>> {
        self.by_doorbell.get(handle, section)
    }

    /// Live doorbells (tests).
    #[cfg(all(test, feature = "linux"))]
    pub(crate) fn doorbells(&self) -> usize {
        self.by_doorbell.len()
    }

    /// Empties the table, returning the queues (the state's shut-down destroys them).
    fn take_all(&self) -> Vec<Arc<QueueImpl>> {
        let _change = lock(&self.changes);
        self.by_doorbell.take_all();
        self.by_address.take_all()
    }
}

/// The memory of a soft queue.
pub(crate) struct SoftQueue {
    /// The 256-byte `amd_queue_t` (its first 40 bytes are the `hsa_queue_t`).
    pub(crate) descriptor: Allocation,
    /// The ring, `size * 64` bytes.
    pub(crate) ring: Allocation,
}

/// A code object reader: the bytes of one code object.
pub(crate) struct Reader {
    /// The code object, copied.
    pub(crate) bytes: Vec<u8>,
    /// Where it came from, as the AMD loader extension's URI (`memory://PID#offset=...`,
    /// `file://PATH#offset=...&size=...`; read by the extension, a Linux-build module).
    #[cfg_attr(not(feature = "linux"), allow(dead_code))]
    pub(crate) uri: String,
}

/// An executable made through the C API.
pub(crate) struct ExecEntry {
    /// `None` once destroyed.
    pub(crate) executable: Option<Executable<PlatRef>>,
    /// The reader of each loaded code object, by load index (the loader extension reports
    /// their bytes and URIs).
    pub(crate) code_objects: Vec<Arc<Reader>>,
    /// `hsa_profile_t` it was created with (`hsa_executable_get_info`: Linux build).
    #[cfg_attr(not(feature = "linux"), allow(dead_code))]
    pub(crate) profile: u32,
    /// `hsa_default_float_rounding_mode_t` it was created with (as `profile`).
    #[cfg_attr(not(feature = "linux"), allow(dead_code))]
    pub(crate) rounding_mode: u32,
}

/// The error of a handle that is no live signal (`INVALID_SIGNAL`), worded the same by every
/// call that looks one up ([`State::signal`] and the signal functions).
pub(crate) fn dead_signal(signal: u64) -> Error {
    hsa_core::error!(
        Status::InvalidSignal,
        "signal handle {signal:#x} is not a live signal"
    )
}

pub(crate) use crate::locks::{lock, read, write, Mutex, RwLock};

/// Everything one initialised runtime holds.
pub(crate) struct State {
    /// Signals by handle.
    pub(crate) signals: HandleMap<Sig>,
    /// Signal groups by id: their member signals.
    pub(crate) groups: Mutex<BTreeMap<u64, Vec<Arc<Sig>>>>,
    /// Queues by `hsa_queue_t` address and by doorbell signal.
    pub(crate) queues: QueueTable,
    /// Executables by id.
    pub(crate) executables: Mutex<BTreeMap<u64, Arc<Mutex<ExecEntry>>>>,
    /// Code object readers by id.
    pub(crate) readers: Mutex<BTreeMap<u64, Arc<Reader>>>,
    /// Next id for groups, executables, readers.
    next_id: AtomicU64,
    /// The pool of the signals made through the C API; each signal shares it.
    signal_pool: Arc<SignalPool<PlatRef>>,
    /// The runtime (shared with the services, whose pending copies keep it).
    runtime: Arc<Runtime<PlatRef>>,
    /// Locked memory, user data and deallocation callbacks of the runtime's allocations
    /// (`hsa_core::runtime::host_memory`): consulted by `hsa_amd_pointer_info` and every free
    /// in both builds.
    host: Arc<HostMemory>,
    /// The runtime services (copy engine, images, async handlers, memory-fault events, IPC):
    /// `hsa-runtime`, a std crate, so the Linux build only.
    #[cfg(feature = "linux")]
    services: hsa_runtime::Services<Plat>,
    /// What the C API keeps that no Rust API has: handles it hands out and per-object settings
    /// (the functions that use them are the Linux build's).
    #[cfg_attr(feature = "baremetal", allow(dead_code))]
    pub(crate) records: Records,
    /// The backend's part: the emulated device (Linux), the interrupt path's registration
    /// (bare metal, kept for its drop).
    #[cfg_attr(feature = "baremetal", allow(dead_code))]
    device: Device,
}

/// What the C API keeps per runtime that no Rust API has: the HSA 1.0 code objects
/// (`hsa_code_object_deserialize`), the coherency types agents were given and the cache names
/// handed out (`const char*` valid while the runtime is), CU masks of queues, and per GPU node
/// the clock samples that translate its ticks to the system domain.
#[derive(Default)]
#[cfg_attr(feature = "baremetal", allow(dead_code))]
pub(crate) struct Records {
    /// HSA 1.0 code objects by id.
    pub(crate) code_objects: Mutex<BTreeMap<u64, Arc<Reader>>>,
    /// Coherency types set with `hsa_amd_coherency_set_type`, by agent handle.
    pub(crate) coherency: Mutex<BTreeMap<u64, u32>>,
    /// Cache names handed out, by cache handle.
    pub(crate) cache_names: Mutex<BTreeMap<u64, alloc::ffi::CString>>,
    /// The current CU mask of each AQL queue (by `hsa_queue_t` address) that has been given
    /// one; a queue without an entry runs on all its agent's CUs.
    pub(crate) cu_masks: Mutex<BTreeMap<u64, Vec<u32>>>,
    /// Per GPU node: the first clock sample and the latest (Linux: `LinuxPlatform::clock_sample`).
    #[cfg(feature = "linux")]
    pub(crate) clocks: Mutex<BTreeMap<u32, (hsa_linux::ClockSample, hsa_linux::ClockSample)>>,
    /// Per GPU node: its clock counter's rate, Hz, once measured (`State::gpu_clock_frequency`).
    #[cfg(feature = "linux")]
    pub(crate) gpu_clock_hz: Mutex<BTreeMap<u32, u64>>,
}

impl State {
    fn new(platform: Plat, opened: backend::Opened) -> Result<State, Error> {
        let runtime = Arc::new(Runtime::new(Arc::new(platform))?);
        let cpu_node = runtime.first_cpu().map_or(0, |a| a.node());
        let signal_pool = Arc::new(SignalPool::new(
            runtime.platform_ref().clone(),
            NodeId(cpu_node),
        ));
        let host = Arc::new(HostMemory::new());
        Ok(State {
            signals: HandleMap::default(),
            groups: Mutex::new(BTreeMap::new()),
            queues: QueueTable::default(),
            executables: Mutex::new(BTreeMap::new()),
            readers: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            #[cfg(feature = "linux")]
            services: services(&runtime, &host, &signal_pool),
            signal_pool,
            device: Device::new(opened, runtime.platform_ref()),
            runtime,
            host,
            records: Records::default(),
        })
    }

    /// The runtime services.
    #[cfg(feature = "linux")]
    pub(crate) fn services(&self) -> &hsa_runtime::Services<Plat> {
        &self.services
    }

    /// Locked memory and the records of allocations.
    pub(crate) fn host(&self) -> &HostMemory {
        &self.host
    }

    /// One tick of GPU `node` in the system domain (`HSA_SYSTEM_INFO_TIMESTAMP`), as ROCR 5.2
    /// translates them (`GpuAgent::TranslateTime`): the emulated command processor stamps the
    /// system timestamp itself, so its ticks translate to themselves; on `/dev/kfd` from two
    /// samples of the GPU's counter and the system clock (`LinuxPlatform::clock_sample`,
    /// `AMDKFD_IOC_GET_CLOCK_COUNTERS`), the first taken at the first translation for the
    /// node, the second refreshed when a tick lies beyond it by more than a quarter of their
    /// distance or is more than 1/16 s old.
    ///
    /// # Errors
    /// The clock ioctl's error on `/dev/kfd`.
    #[cfg(feature = "linux")]
    pub(crate) fn system_ticks(&self, node: NodeId, tick: u64) -> Result<u64, Error> {
        if self.device.is_emulated() {
            return Ok(tick);
        }
        let platform = self.platform_ref();
        let mut clocks = lock(&self.records.clocks);
        let (t0, mut t1) = match clocks.get(&node.0) {
            Some(s) => *s,
            None => {
                let t0 = platform.clock_sample(node)?;
                // Two samples a millisecond apart give the first frequency ratio.
                std::thread::sleep(std::time::Duration::from_millis(1));
                (t0, platform.clock_sample(node)?)
            }
        };
        let now = hsa_core::platform::Platform::timestamp_ticks(&*platform);
        let stale = now.saturating_sub(t1.system) > 1_000_000_000 / 16;
        if stale || tick > t1.gpu.saturating_add(t1.gpu.saturating_sub(t0.gpu) / 4) {
            t1 = platform.clock_sample(node)?;
        }
        clocks.insert(node.0, (t0, t1));
        let gpu_span = t1.gpu.saturating_sub(t0.gpu).max(1) as f64;
        let ratio = t1.system.saturating_sub(t0.system) as f64 / gpu_span;
        let offset = (tick as i128 - i128::from(t1.gpu)) as f64 * ratio;
        Ok((i128::from(t1.system) + offset as i128).max(0) as u64)
    }

    /// The rate of GPU `node`'s clock counter, Hz (`HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY`):
    /// `system_hz` on the emulated device (its counter is the system timestamp); on
    /// `/dev/kfd` measured from two `AMDKFD_IOC_GET_CLOCK_COUNTERS` samples 10 ms apart (taken
    /// once per node and kept) against the system timestamp of `system_hz`, rounded to whole
    /// MHz (amdgpu's counters run at whole MHz: 100 MHz on gfx9 and later).
    ///
    /// # Errors
    /// The clock ioctl's error.
    #[cfg(feature = "linux")]
    pub(crate) fn gpu_clock_frequency(&self, node: NodeId, system_hz: u64) -> Result<u64, Error> {
        if self.device.is_emulated() {
            return Ok(system_hz);
        }
        let mut freqs = lock(&self.records.gpu_clock_hz);
        if let Some(f) = freqs.get(&node.0) {
            return Ok(*f);
        }
        let platform = self.platform_ref();
        let t0 = platform.clock_sample(node)?;
        std::thread::sleep(std::time::Duration::from_millis(10));
        let t1 = platform.clock_sample(node)?;
        let system = t1.system.saturating_sub(t0.system).max(1) as f64;
        let hz = t1.gpu.saturating_sub(t0.gpu) as f64 * system_hz as f64 / system;
        let f = ((hz / 1e6).round() as u64).saturating_mul(1_000_000);
        freqs.insert(node.0, f);
        Ok(f)
    }

    /// The backend's part of the state.
    #[cfg(feature = "emulated")]
    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// The runtime.
    pub(crate) fn rt(&self) -> &Runtime<PlatRef> {
        &self.runtime
    }

    /// A handle to the platform, for a queue or executable to keep.
    pub(crate) fn platform_ref(&self) -> PlatRef {
        self.runtime.platform_ref().clone()
    }

    /// The signal pool; each signal made from it keeps a clone.
    pub(crate) fn signal_pool(&self) -> &Arc<SignalPool<PlatRef>> {
        &self.signal_pool
    }

    /// A fresh id (1, 2, ...) for a group, executable or reader.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The signal behind a handle, `None` when no live signal of this runtime has it (a
    /// lookup that may miss without an error to format: the doorbell path).
    pub(crate) fn find_signal(&self, handle: u64) -> Option<Arc<Sig>> {
        self.signals.get_arc(handle)
    }

    /// The signal behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidSignal` when no live signal of this runtime has that handle.
    pub(crate) fn signal(&self, handle: u64) -> Result<Arc<Sig>, Error> {
        match self.find_signal(handle) {
            Some(s) => Ok(s),
            None => Err(dead_signal(handle)),
        }
    }

    /// The queue at an `hsa_queue_t` address.
    ///
    /// # Errors
    /// `Status::InvalidQueue` when no live queue is there.
    pub(crate) fn queue(&self, address: u64) -> Result<Arc<QueueImpl>, Error> {
        match self.queues.by_address.get_arc(address) {
            Some(q) => Ok(q),
            None => bail!(
                Status::InvalidQueue,
                "queue {address:#x} is not a live queue"
            ),
        }
    }

    /// The live AQL queue whose doorbell signal has handle `handle`: one map lookup under the
    /// queue table's read lock, no queue's own lock (the doorbell path of every dispatch).
    #[cfg(all(test, feature = "linux"))]
    pub(crate) fn queue_by_doorbell(&self, handle: u64) -> Option<Arc<QueueImpl>> {
        self.queues.by_doorbell.get_arc(handle)
    }

    /// The executable behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidExecutable` for an unknown or destroyed executable.
    pub(crate) fn executable(&self, handle: u64) -> Result<(u64, Arc<Mutex<ExecEntry>>), Error> {
        let found = untag(handle, EXECUTABLE_BASE)
            .and_then(|id| lock(&self.executables).get(&id).map(|e| (id, e.clone())));
        match found {
            Some(e) => Ok(e),
            None => bail!(
                Status::InvalidExecutable,
                "executable handle {handle:#x} is not a live executable"
            ),
        }
    }

    /// The reader behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidCodeObjectReader` for an unknown or destroyed reader.
    pub(crate) fn reader(&self, handle: u64) -> Result<Arc<Reader>, Error> {
        let found = untag(handle, READER_BASE).and_then(|id| lock(&self.readers).get(&id).cloned());
        match found {
            Some(r) => Ok(r),
            None => bail!(
                Status::InvalidCodeObjectReader,
                "code object reader handle {handle:#x} is not a live reader"
            ),
        }
    }
}

impl Drop for State {
    /// Shut-down releases every object still registered (HSA Runtime 1.2 §2.1): queues are
    /// destroyed (their hardware queues stopped), soft queues' memory and executables freed.
    /// Nothing here is needed for soundness: each object owns what it uses.
    fn drop(&mut self) {
        // The services first (the async handler thread, the memory-fault handler, IPC
        // attachments), then locked memory: what runs on behalf of the runtime or holds it.
        #[cfg(feature = "linux")]
        self.services.shut_down();
        // SAFETY: the runtime is going (hsa_shut_down): the application no longer uses locked
        // memory from agents.
        #[allow(unsafe_code)]
        unsafe {
            self.host.shut_down(&self.runtime)
        };
        lock(&self.groups).clear();
        drop(self.signals.take_all());
        for q in self.queues.take_all() {
            match &*q {
                QueueImpl::Aql(lock, _) => {
                    if let Some(queue) = write(lock).take() {
                        let _ = queue.destroy();
                    }
                }
                QueueImpl::Soft(soft) => {
                    let _ = self.rt().free(soft.descriptor.va);
                    let _ = self.rt().free(soft.ring.va);
                }
            }
        }
        for (_, e) in core::mem::take(&mut *lock(&self.executables)) {
            if let Some(exe) = lock(&e).executable.take() {
                let _ = exe.destroy();
            }
        }
        lock(&self.readers).clear();
    }
}

/// The runtime services of the Linux build (`hsa-runtime`), configured by the backend; a
/// signal the application destroyed (no longer in the state's registry under its handle)
/// drops the async handlers registered on it, as ROCR's `AsyncEventsLoop` does.
#[cfg(feature = "linux")]
fn services(
    runtime: &Arc<Runtime<PlatRef>>,
    host: &Arc<HostMemory>,
    signals: &Arc<SignalPool<PlatRef>>,
) -> hsa_runtime::Services<Plat> {
    let live: hsa_runtime::Liveness<Plat> = Arc::new(|s| {
        state().is_ok_and(|st| {
            st.find_signal(s.handle().0)
                .is_some_and(|live| core::ptr::eq(&*live, s))
        })
    });
    hsa_runtime::Services::with_liveness(
        runtime.clone(),
        host.clone(),
        signals.clone(),
        backend::services_config(),
        live,
    )
}

/// The global runtime: reference count and state.
pub(crate) static GLOBAL: Mutex<(u32, Option<Arc<State>>)> = Mutex::new((0, None));

pub(crate) use current::with_state;
use current::CURRENT;

/// The current state for lock-free reads (its one `unsafe`: the dereference).
#[allow(unsafe_code)]
mod current {
    use super::{rcu, ReadSection, State};
    use core::sync::atomic::{AtomicPtr, Ordering};
    use hsa_core::{bail, Error, Status};

    /// The state `GLOBAL` holds, for [`with_state`]'s lock-free reads (null when there is none).
    /// Set and cleared under `GLOBAL`'s lock; the state it points to is dropped only after it
    /// was cleared and a grace period passed.
    pub(super) static CURRENT: AtomicPtr<State> = AtomicPtr::new(core::ptr::null_mut());

    /// Runs `f` on the current state: inside a read section when the thread can enter one (no
    /// lock, no reference count; `f` then gets the section for lock-free registry lookups), else
    /// on a shared [`state`]. For short calls that neither block nor call the application (signal
    /// values, queue indices, doorbells): `hsa_shut_down` waits for them.
    ///
    /// # Errors
    /// `Status::NotInitialized` as [`state`]; `f`'s.
    #[inline(always)]
    pub(crate) fn with_state<R>(
        f: impl FnOnce(&State, Option<&ReadSection>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let Some(section) = rcu::read() else {
            return f(&*super::state()?, None);
        };
        let current = CURRENT.load(Ordering::Acquire);
        if current.is_null() {
            bail!(
                Status::NotInitialized,
                "the HSA runtime is not initialized (call hsa_init first)"
            );
        }
        // SAFETY: CURRENT points into the `Arc<State>` GLOBAL holds; `shut_down` clears it, then
        // waits out a grace period before dropping that `Arc`, and this section began before the
        // load above.
        let st = unsafe { &*current };
        f(st, Some(&section))
    }
}

/// `hsa_init`: the first call opens the backend's platform (`backend::open`: on Linux
/// `/dev/kfd` or the emulated device, after installing the stderr logger at `HSA_RT_LOG`'s
/// level; on bare metal the host `hsa_rt_baremetal_init` registered) and builds the runtime;
/// later calls count.
///
/// # Errors
/// `Status::RefcountOverflow` once [`MAX_REFCOUNT`] (`INT32_MAX`, as ROCR) inits are
/// counted; on the first init, `backend::open`'s errors and the runtime's.
pub(crate) fn init() -> Result<(), Error> {
    let mut g = lock(&GLOBAL);
    if g.0 >= MAX_REFCOUNT {
        bail!(
            Status::RefcountOverflow,
            "hsa_init called {} times without hsa_shut_down",
            g.0
        );
    }
    if g.0 == 0 {
        rcu::prepare();
        let (platform, opened) = backend::open()?;
        let state = Arc::new(State::new(platform, opened)?);
        CURRENT.store(Arc::as_ptr(&state).cast_mut(), Ordering::Release);
        g.1 = Some(state);
    }
    g.0 += 1;
    Ok(())
}

/// `hsa_shut_down`: counts down; at 0 the state is released (destroyed when the last call
/// still using it returns; a call inside [`with_state`] is waited for).
///
/// # Errors
/// `Status::NotInitialized` when the count is 0.
pub(crate) fn shut_down() -> Result<(), Error> {
    let state = {
        let mut g = lock(&GLOBAL);
        if g.0 == 0 {
            bail!(
                Status::NotInitialized,
                "hsa_shut_down called more often than hsa_init"
            );
        }
        g.0 -= 1;
        if g.0 == 0 {
            CURRENT.store(core::ptr::null_mut(), Ordering::Release);
            g.1.take()
        } else {
            None
        }
    };
    if state.is_some() {
        // Calls that read CURRENT before it was cleared end before the state may go.
        rcu::synchronize();
    }
    // Dropped outside the global lock: destroying queues can take a while.
    drop(state);
    Ok(())
}

/// The current state.
///
/// # Errors
/// `Status::NotInitialized` before `hsa_init` or after the last `hsa_shut_down`.
pub(crate) fn state() -> Result<Arc<State>, Error> {
    match &lock(&GLOBAL).1 {
        Some(s) => Ok(s.clone()),
        None => bail!(
            Status::NotInitialized,
            "the HSA runtime is not initialized (call hsa_init first)"
        ),
    }
}
