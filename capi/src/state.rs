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
    fn doorbells(&self) -> usize {
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

/// A C queue-error callback (`hsa_queue_create`'s `callback` and `data`).
#[derive(Clone, Copy)]
pub(crate) struct QueueCallback {
    /// The callback.
    pub(crate) func: unsafe extern "C" fn(u32, *mut core::ffi::c_void, *mut core::ffi::c_void),
    /// Its `data`, as an address.
    pub(crate) data: usize,
    /// The `hsa_queue_t` address (0 until the queue exists).
    pub(crate) queue: u64,
}

/// Registered C queue-error callbacks by key (the core callback's `data`).
pub(crate) static QUEUE_CALLBACKS: Mutex<Vec<(usize, QueueCallback)>> = Mutex::new(Vec::new());

pub(crate) use locks::{lock, read, write, Mutex, RwLock};

/// The registries' locks: std's where there is an OS (a blocked caller sleeps), spin locks
/// on a target without one (`x86_64-unknown-none`).
#[cfg(not(target_os = "none"))]
mod locks {
    use std::sync::PoisonError;
    pub(crate) use std::sync::{Mutex, RwLock};
    use std::sync::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    /// Locks a mutex, taking the data of a poisoned one (a panic in another call was caught
    /// and reported as `HSA_STATUS_ERROR`; the registries stay consistent because every
    /// update is a single insert or remove).
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read access to an `RwLock`, poison ignored as for [`lock`].
    pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        m.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Write access to an `RwLock`, poison ignored as for [`lock`].
    pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        m.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The registries' locks without an OS: spin locks (a panic aborts there, so nothing is
/// poisoned).
#[cfg(target_os = "none")]
mod locks {
    pub(crate) use spin::{Mutex, RwLock};
    use spin::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    /// Locks a mutex.
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock()
    }

    /// Read access to an `RwLock`.
    pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        m.read()
    }

    /// Write access to an `RwLock`.
    pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        m.write()
    }
}

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
    /// The runtime.
    runtime: Runtime<PlatRef>,
    /// The backend's part: the emulated device (Linux), the interrupt path's registration
    /// (bare metal, kept for its drop).
    #[cfg_attr(feature = "baremetal", allow(dead_code))]
    device: Device,
    /// What the ROCR extension functions keep (locked memory, async handlers, ...).
    #[cfg(feature = "linux")]
    pub(crate) ext: crate::extras::Extras,
}

impl State {
    fn new(platform: Plat, opened: backend::Opened) -> Result<State, Error> {
        let runtime = Runtime::new(Arc::new(platform))?;
        let cpu_node = runtime.first_cpu().map_or(0, |a| a.node());
        let signal_pool = Arc::new(SignalPool::new(
            runtime.platform_ref().clone(),
            NodeId(cpu_node),
        ));
        Ok(State {
            signals: HandleMap::default(),
            groups: Mutex::new(BTreeMap::new()),
            queues: QueueTable::default(),
            executables: Mutex::new(BTreeMap::new()),
            readers: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            signal_pool,
            device: Device::new(opened, runtime.platform_ref()),
            runtime,
            #[cfg(feature = "linux")]
            ext: crate::extras::Extras::default(),
        })
    }

    /// The backend's part of the state.
    #[cfg(feature = "linux")]
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
            None => Err(crate::ffi::signal::dead_signal(handle)),
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
        // The ROCR extensions' objects (async handlers, locked memory) first.
        #[cfg(feature = "linux")]
        self.ext.shut_down(self);
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

/// The global runtime: reference count and state.
static GLOBAL: Mutex<(u32, Option<Arc<State>>)> = Mutex::new((0, None));

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

// The tests run the Linux backend (the emulated device); the bare-metal one is tested from C
// (`tests/baremetal.rs`).
#[cfg(all(test, feature = "linux"))]
mod tests {
    use super::*;
    use hsa_core::signal::{LoadOrder, StoreOrder};

    /// The tests share the process-wide runtime: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// `hsa_init` counts to `INT32_MAX` and the next call is `REFCOUNT_OVERFLOW`, as ROCR 5.2;
    /// the count then still goes down to 0. (Counting there one call at a time takes a
    /// minute: the test starts the count near the limit.)
    #[test]
    fn init_stops_at_int32_max() {
        let _serial = lock(&SERIAL);
        init().unwrap();
        lock(&GLOBAL).0 = 0x7fff_fffe;
        init().unwrap();
        assert_eq!(lock(&GLOBAL).0, 0x7fff_ffff);
        let e = init().unwrap_err();
        assert_eq!(e.status(), Status::RefcountOverflow);
        assert_eq!(
            e.detail(),
            "hsa_init called 2147483647 times without hsa_shut_down"
        );
        assert_eq!(lock(&GLOBAL).0, 0x7fff_ffff);
        lock(&GLOBAL).0 = 1;
        shut_down().unwrap();
        assert!(state().is_err());
    }

    /// Stores to doorbell signals find their queue through the table's doorbell map: after
    /// four queues are created and two destroyed, a store to a destroyed queue's doorbell is
    /// refused as a store to any dead handle is (`INVALID_SIGNAL`, "... is not a live
    /// signal"; the C store logs it and does nothing), and no entry of it is left; a live
    /// queue's doorbell still rings (the doorbell word holds the value) and its barrier
    /// packet completes.
    #[test]
    #[allow(unsafe_code)] // the C entry points, and a read of the doorbell word
    fn doorbell_stores_follow_queue_create_and_destroy() {
        use crate::ffi::queue::{hsa_queue_create, hsa_queue_destroy};
        use crate::ffi::signal::{hsa_signal_create, hsa_signal_destroy, ring_doorbell};
        use hsa_core::abi::SignalHandle;
        use hsa_core::packet::{BarrierAnd, HeaderFlags};

        let _serial = lock(&SERIAL);
        init().unwrap();
        let st = state().unwrap();
        let gpu = st.rt().first_gpu().expect("the emulated GPU").handle().0;
        let mut queues = Vec::new();
        for _ in 0..4 {
            let mut q: *mut core::ffi::c_void = core::ptr::null_mut();
            // SAFETY: no callback; `q` is a writable hsa_queue_t* slot.
            let status =
                unsafe { hsa_queue_create(gpu, 64, 0, None, core::ptr::null_mut(), 0, 0, &mut q) };
            assert_eq!(status, Status::Success.raw());
            queues.push(q);
        }
        let doorbell_of = |q: *mut core::ffi::c_void| match &*st.queue(q as u64).unwrap() {
            QueueImpl::Aql(l, _) => read(l).as_ref().unwrap().doorbell_signal().handle().0,
            QueueImpl::Soft(_) => unreachable!("hsa_queue_create made it"),
        };
        let doorbells: Vec<u64> = queues.iter().map(|&q| doorbell_of(q)).collect();
        for (&q, &d) in queues.iter().zip(&doorbells) {
            assert!(Arc::ptr_eq(
                &st.queue_by_doorbell(d).unwrap(),
                &st.queue(q as u64).unwrap()
            ));
        }
        assert_eq!(hsa_queue_destroy(queues[1]), Status::Success.raw());
        assert_eq!(hsa_queue_destroy(queues[3]), Status::Success.raw());
        for &dead in [doorbells[1], doorbells[3]].iter() {
            assert!(st.queue_by_doorbell(dead).is_none());
            let e = ring_doorbell(&st, dead, 1, StoreOrder::Release).unwrap_err();
            assert_eq!(e.status(), Status::InvalidSignal);
            assert_eq!(
                e.detail(),
                alloc::format!("signal handle {dead:#x} is not a live signal")
            );
        }
        assert_eq!(st.queues.doorbells(), 2);

        // The live queue 2: barrier-AND packets, the last with a completion signal, rung
        // through the doorbell path.
        let mut done = 0u64;
        // SAFETY: no consumers; `done` is a writable hsa_signal_t.
        let status = unsafe { hsa_signal_create(1, 0, core::ptr::null(), &raw mut done) };
        assert_eq!(status, Status::Success.raw());
        let live = st.queue(queues[2] as u64).unwrap();
        let QueueImpl::Aql(l, _) = &*live else {
            unreachable!("hsa_queue_create made it")
        };
        let (index, bell) = {
            let guard = read(l);
            let aql = guard.as_ref().unwrap();
            let packet = |signal| {
                BarrierAnd::new(HeaderFlags::NONE, &[], signal)
                    .unwrap()
                    .emit()
                    .unwrap()
            };
            // Two packets, so that the doorbell's value (the last one's index, 1) differs
            // from the word's initial 0.
            let mut r = aql.reserve(2).unwrap();
            r.write(0, &packet(SignalHandle::NULL)).unwrap();
            (
                r.write(1, &packet(SignalHandle(done))).unwrap(),
                aql.doorbell_signal().doorbell_address(),
            )
        };
        ring_doorbell(&st, doorbells[2], index as i64, StoreOrder::Release).unwrap();
        // SAFETY: the doorbell page's word of a live queue, mapped for the platform's life
        // and 8-byte aligned; read once, volatile (the device reads it too).
        let rung = unsafe { core::ptr::read_volatile(bell as *const u64) };
        assert_eq!(rung, index);
        let signal = st.signal(done).unwrap();
        let t = std::time::Instant::now();
        while signal.load(LoadOrder::Acquire) != 0 {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "the barrier packet never completed"
            );
            std::thread::yield_now();
        }
        drop((signal, live));
        assert_eq!(hsa_signal_destroy(done), Status::Success.raw());
        assert_eq!(hsa_queue_destroy(queues[0]), Status::Success.raw());
        assert_eq!(hsa_queue_destroy(queues[2]), Status::Success.raw());
        assert!(st.queue_by_doorbell(doorbells[2]).is_none());
        assert_eq!(st.queues.doorbells(), 0);
        drop(st);
        shut_down().unwrap();
    }

    /// The async handler thread (`hsa_amd_signal_async_handler`, issue 20: "without
    /// busy-polling") sleeps while no watched signal changes: over 300 ms with a handler armed
    /// on a signal nobody touches, the thread named "hsa-rt async handlers" is given under 3
    /// clock ticks of CPU time (`/proc/self/task/TID/stat` utime + stime, 100 per second), where
    /// polling would take about 30. (CPU time, not a speed: the wall-clock wait only gives a
    /// poller the chance to burn it.) Then the handler runs once the signal changes.
    #[test]
    #[allow(unsafe_code)] // the C entry points and the handler's argument
    fn the_async_handler_thread_sleeps_until_a_signal_changes() {
        use crate::ffi::signal::{hsa_signal_create, hsa_signal_destroy};
        use crate::ffi::signal_ext::hsa_amd_signal_async_handler;
        use core::sync::atomic::AtomicBool;

        /// utime + stime of this process's thread whose name starts with `prefix`.
        fn cpu_ticks(prefix: &str) -> Option<u64> {
            for task in std::fs::read_dir("/proc/self/task").ok()? {
                let dir = task.ok()?.path();
                let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
                if !comm.starts_with(prefix) {
                    continue;
                }
                let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
                // Fields after the ")" that ends the name: state is the 3rd field, utime the
                // 14th and stime the 15th.
                let rest = &stat[stat.rfind(')')? + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                return Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?);
            }
            None
        }
        unsafe extern "C" fn handler(value: i64, arg: *mut core::ffi::c_void) -> bool {
            // SAFETY: `arg` is the test's `AtomicBool`, alive until the handler has run.
            let ran = unsafe { &*arg.cast::<AtomicBool>() };
            ran.store(value == 5, Ordering::Release);
            false
        }

        let _serial = lock(&SERIAL);
        init().unwrap();
        let mut signal = 0u64;
        // SAFETY: no consumers; `signal` is a writable hsa_signal_t.
        let status = unsafe { hsa_signal_create(0, 0, core::ptr::null(), &raw mut signal) };
        assert_eq!(status, Status::Success.raw());
        let ran = AtomicBool::new(false);
        // SAFETY: a live signal, a valid handler; `ran` outlives the registration (the handler
        // runs, and returns false, before the test ends).
        let status = unsafe {
            hsa_amd_signal_async_handler(
                signal,
                0, // HSA_SIGNAL_CONDITION_EQ
                5,
                Some(handler),
                (&raw const ran).cast_mut().cast(),
            )
        };
        assert_eq!(status, Status::Success.raw());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = cpu_ticks("hsa-rt async").expect("the async handler thread");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let after = cpu_ticks("hsa-rt async").expect("the async handler thread");
        assert!(
            after - before < 3,
            "the idle async handler thread used {} ticks in 300 ms",
            after - before
        );
        state()
            .unwrap()
            .signal(signal)
            .unwrap()
            .store(5, StoreOrder::Release);
        let t = std::time::Instant::now();
        while !ran.load(Ordering::Acquire) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "the handler never ran"
            );
            std::thread::yield_now();
        }
        assert_eq!(hsa_signal_destroy(signal), Status::Success.raw());
        shut_down().unwrap();
    }

    /// A signal still held when the last `hsa_shut_down` drops the state (a call in another
    /// thread that looked it up, here this test) stays usable: it keeps its pool and the
    /// platform alive, and gives its slot back when it goes. (When the state owned the pool
    /// and the platform, the shut-down freed the signal's memory under it.)
    #[test]
    #[allow(unsafe_code)] // creates the signal through the C entry point, as a C caller does
    fn a_signal_held_past_shut_down_keeps_its_memory() {
        let _serial = lock(&SERIAL);
        init().unwrap();
        let mut handle = 0u64;
        // SAFETY: no consumers; `handle` is a writable hsa_signal_t.
        let status = unsafe {
            crate::ffi::signal::hsa_signal_create(41, 0, core::ptr::null(), &raw mut handle)
        };
        assert_eq!(status, Status::Success.raw());
        let signal = state().unwrap().signal(handle).unwrap();
        shut_down().unwrap();
        assert_eq!(
            state().err().map(|e| e.status()),
            Some(Status::NotInitialized)
        );
        assert_eq!(signal.load(LoadOrder::Acquire), 41);
        signal.store(7, StoreOrder::Release);
        assert_eq!(signal.load(LoadOrder::Acquire), 7);
        assert_eq!(signal.handle().0, handle);
        drop(signal);
    }

    /// `QueueTable::remove` does not hold the queue's lock across the doorbell's grace period:
    /// a thread that finds the lock read-held from inside a section (the remover between its
    /// two maps) keeps its section and still gets the write lock (as hsa_queue_inactivate
    /// would) before the remover can finish. When the remover held the read lock while it
    /// waited for sections, this never happened: a doorbell store waiting behind a waiting
    /// writer and the remover's grace period waited for each other.
    #[test]
    #[allow(unsafe_code)] // the C entry points
    fn a_queue_removal_waits_for_sections_without_the_queue_lock() {
        use crate::ffi::queue::{hsa_queue_create, hsa_queue_destroy};
        use core::sync::atomic::AtomicBool;

        let _serial = lock(&SERIAL);
        init().unwrap();
        let st = state().unwrap();
        let gpu = st.rt().first_gpu().expect("the emulated GPU").handle().0;
        let mut caught = 0;
        // Queues until the prober caught the remover holding the lock once (a count, not a time).
        while caught < 1 {
            let mut q: *mut core::ffi::c_void = core::ptr::null_mut();
            // SAFETY: no callback; `q` is a writable hsa_queue_t* slot.
            let status =
                unsafe { hsa_queue_create(gpu, 64, 0, None, core::ptr::null_mut(), 0, 0, &mut q) };
            assert_eq!(status, Status::Success.raw());
            let address = q as u64;
            let queue = st.queue(address).unwrap();
            let done = Arc::new(AtomicBool::new(false));
            let prober = {
                let (queue, done) = (queue.clone(), done.clone());
                std::thread::spawn(move || {
                    let QueueImpl::Aql(l, _) = &*queue else {
                        unreachable!("hsa_queue_create made it")
                    };
                    while !done.load(Ordering::Acquire) {
                        let section = rcu::read().unwrap();
                        if l.try_write().is_ok() {
                            continue;
                        }
                        // The remover holds the read lock: with this section kept, the write
                        // lock must still come.
                        while l.try_write().is_err() {
                            std::thread::yield_now();
                        }
                        drop(section);
                        return true;
                    }
                    false
                })
            };
            let removed = st.queues.remove(address).unwrap();
            done.store(true, Ordering::Release);
            caught += usize::from(prober.join().unwrap());
            assert!(st.queues.by_doorbell(doorbell_of(&removed), None).is_none());
            // Registered again, so that the C call destroys it.
            st.queues
                .insert_aql(address, doorbell_of(&removed), removed);
            drop(queue);
            assert_eq!(hsa_queue_destroy(q), Status::Success.raw());
        }
        drop(st);
        shut_down().unwrap();
    }

    /// The doorbell signal handle of an AQL queue of the table.
    fn doorbell_of(q: &QueueImpl) -> u64 {
        match q {
            QueueImpl::Aql(l, _) => read(l).as_ref().unwrap().doorbell_signal().handle().0,
            QueueImpl::Soft(_) => unreachable!("hsa_queue_create made it"),
        }
    }
}
