//! The process-wide runtime behind the C API: reference-counted init/shut-down (HSA Runtime 1.2
//! §2.1) and the registries that turn C handles into live Rust objects.
//!
//! # Lifetimes
//! The core's signals, queues and executables borrow the platform (`&'p P`) and signals also
//! their pool. A C handle has no lifetime, so the first `hsa_init` moves the [`Runtime`] and the
//! [`SignalPool`] into leaked boxes and every object made through the C API borrows them as
//! `'static`. That is sound because of one rule this module keeps: every object that borrows
//! them lives only in the registries of the one [`State`] that owns the boxes (or in a local of
//! an API call, which holds an `Arc<State>` for the whole call), and `State::drop` empties the
//! registries before it frees the boxes. `hsa_shut_down` only drops the global `Arc`; the state
//! goes when the last call still using it returns.
//!
//! # Handles
//! Agents, pools/regions: the core's handles. ISAs, executables, readers, loaded code objects,
//! symbols and signal groups: a tagged `u64` (a base in the top 24 bits, never 0), always
//! looked up, never dereferenced. Signals: the `amd_signal_t` address (as ROCR), also looked
//! up. Queues: the `hsa_queue_t` (= `amd_queue_t`) address, looked up.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use hsa_core::loader::executable::Executable;
use hsa_core::memory::Allocation;
use hsa_core::queue::AqlQueue;
use hsa_core::runtime::{Runtime, MAX_REFCOUNT};
use hsa_core::signal::{Signal, SignalPool};
use hsa_core::{bail, Error, NodeId, Status};
use hsa_emu::{EmulatedKfd, SelectedDevice};
use hsa_linux::LinuxPlatform;

/// The platform under the C API.
pub(crate) type Plat = LinuxPlatform;
/// A signal made through the C API.
pub(crate) type Sig = Signal<'static, Plat>;

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
    /// destroyed (a racing call then sees no queue).
    Aql(RwLock<Option<AqlQueue<'static, Plat>>>),
    /// `hsa_soft_queue_create`: descriptor and ring in region memory, consumed by the
    /// application itself.
    Soft(SoftQueue),
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
    /// `file://PATH#offset=...&size=...`).
    pub(crate) uri: String,
}

/// An executable made through the C API.
pub(crate) struct ExecEntry {
    /// `None` once destroyed.
    pub(crate) executable: Option<Executable<'static, Plat>>,
    /// The reader of each loaded code object, by load index (the loader extension reports
    /// their bytes and URIs).
    pub(crate) code_objects: Vec<Arc<Reader>>,
    /// `hsa_profile_t` it was created with.
    pub(crate) profile: u32,
    /// `hsa_default_float_rounding_mode_t` it was created with.
    pub(crate) rounding_mode: u32,
}

/// A C queue-error callback (`hsa_queue_create`'s `callback` and `data`).
#[derive(Clone, Copy)]
pub(crate) struct QueueCallback {
    /// The callback.
    pub(crate) func: unsafe extern "C" fn(u32, *mut std::ffi::c_void, *mut std::ffi::c_void),
    /// Its `data`, as an address.
    pub(crate) data: usize,
    /// The `hsa_queue_t` address (0 until the queue exists).
    pub(crate) queue: u64,
}

/// Registered C queue-error callbacks by key (the core callback's `data`).
pub(crate) static QUEUE_CALLBACKS: Mutex<Vec<(usize, QueueCallback)>> = Mutex::new(Vec::new());

/// Locks a mutex, taking the data of a poisoned one (a panic in another call was caught and
/// reported as `HSA_STATUS_ERROR`; the registries stay consistent because every update is a
/// single insert or remove).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read access to an `RwLock`, poison ignored as for [`lock`].
pub(crate) fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write access to an `RwLock`, poison ignored as for [`lock`].
pub(crate) fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}

/// Everything one initialised runtime holds.
pub(crate) struct State {
    /// Signals by handle.
    pub(crate) signals: RwLock<HashMap<u64, Arc<Sig>>>,
    /// Signal groups by id: their member signals.
    pub(crate) groups: Mutex<HashMap<u64, Vec<Arc<Sig>>>>,
    /// Queues by `hsa_queue_t` address.
    pub(crate) queues: RwLock<HashMap<u64, Arc<QueueImpl>>>,
    /// Executables by id.
    pub(crate) executables: Mutex<HashMap<u64, Arc<Mutex<ExecEntry>>>>,
    /// Code object readers by id.
    pub(crate) readers: Mutex<HashMap<u64, Arc<Reader>>>,
    /// Next id for groups, executables, readers.
    next_id: AtomicU64,
    /// Leaked `Box<SignalPool>`, freed in `drop` after every signal.
    signal_pool: NonNull<SignalPool<'static, Plat>>,
    /// Leaked `Box<Runtime>`, freed in `drop` last.
    runtime: NonNull<Runtime<Plat>>,
    /// The emulated device under the platform, when that is what it runs on (for
    /// `hsa_rt_emulated_register_kernel`).
    emulated: Option<Arc<EmulatedKfd>>,
    /// What the ROCR extension functions keep (locked memory, async handlers, ...).
    pub(crate) ext: crate::extras::Extras,
}

// SAFETY: the two pointers are owned boxes of `Sync` types (Runtime<LinuxPlatform> and
// SignalPool, whose state is behind locks and atomics); everything else is behind locks or is
// `Send + Sync` itself (the `Arc<EmulatedKfd>`, a `KfdDriver`). The
// signals, queues and executables are used from any thread as the core allows (their
// operations are atomics on shared memory or take `&self` behind the registry locks).
unsafe impl Send for State {}
// SAFETY: as for Send.
unsafe impl Sync for State {}

impl State {
    fn new(device: SelectedDevice) -> Result<State, Error> {
        let SelectedDevice { platform, emulated } = device;
        let runtime = Runtime::new(platform)?;
        let cpu_node = runtime.first_cpu().map_or(0, |a| a.node());
        let runtime = NonNull::from(Box::leak(Box::new(runtime)));
        // SAFETY: `runtime` was just leaked and is freed only in `drop`, after the pool, which
        // is the only borrower made here.
        let platform: &'static Plat = unsafe { runtime.as_ref() }.platform();
        let pool = SignalPool::new(platform, NodeId(cpu_node));
        let signal_pool = NonNull::from(Box::leak(Box::new(pool)));
        Ok(State {
            signals: RwLock::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            queues: RwLock::new(HashMap::new()),
            executables: Mutex::new(HashMap::new()),
            readers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            signal_pool,
            runtime,
            emulated,
            ext: crate::extras::Extras::default(),
        })
    }

    /// The emulated device under the platform; `None` on `/dev/kfd`.
    pub(crate) fn emulated(&self) -> Option<&Arc<EmulatedKfd>> {
        self.emulated.as_ref()
    }

    /// The runtime.
    pub(crate) fn rt(&self) -> &Runtime<Plat> {
        // SAFETY: the box lives until `drop`, which needs `&mut self`.
        unsafe { self.runtime.as_ref() }
    }

    /// The platform, with the `'static` lifetime the C API's objects are made with. Only for
    /// objects that go into this state's registries (see the module doc).
    pub(crate) fn platform_static(&self) -> &'static Plat {
        // SAFETY: the runtime box is freed only in `drop`, after the registries (the only
        // places the result may be kept, per this function's contract) are emptied.
        unsafe { self.runtime.as_ref() }.platform()
    }

    /// The signal pool, `'static` under the same contract as [`State::platform_static`].
    pub(crate) fn signal_pool_static(&self) -> &'static SignalPool<'static, Plat> {
        // SAFETY: the pool box is freed only in `drop`, after the signal registry (the only
        // place signals made from it are kept) is emptied.
        unsafe { self.signal_pool.as_ref() }
    }

    /// A fresh id (1, 2, ...) for a group, executable or reader.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The signal behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidSignal` when no live signal of this runtime has that handle.
    pub(crate) fn signal(&self, handle: u64) -> Result<Arc<Sig>, Error> {
        match read(&self.signals).get(&handle) {
            Some(s) => Ok(s.clone()),
            None => bail!(
                Status::InvalidSignal,
                "signal handle {handle:#x} is not a live signal"
            ),
        }
    }

    /// The queue at an `hsa_queue_t` address.
    ///
    /// # Errors
    /// `Status::InvalidQueue` when no live queue is there.
    pub(crate) fn queue(&self, address: u64) -> Result<Arc<QueueImpl>, Error> {
        match read(&self.queues).get(&address) {
            Some(q) => Ok(q.clone()),
            None => bail!(
                Status::InvalidQueue,
                "queue {address:#x} is not a live queue"
            ),
        }
    }

    /// The queue whose doorbell signal has handle `handle`.
    pub(crate) fn queue_by_doorbell(&self, handle: u64) -> Option<Arc<QueueImpl>> {
        read(&self.queues)
            .values()
            .find(|q| match &***q {
                QueueImpl::Aql(lock) => read(lock)
                    .as_ref()
                    .is_some_and(|a| a.doorbell_signal().handle().0 == handle),
                QueueImpl::Soft(_) => false,
            })
            .cloned()
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
    fn drop(&mut self) {
        // Everything that borrows the pool or the runtime first (see the module doc).
        self.ext.shut_down(self);
        lock(&self.groups).clear();
        write(&self.signals).clear();
        for (_, q) in write(&self.queues).drain() {
            match &*q {
                QueueImpl::Aql(lock) => {
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
        for (_, e) in lock(&self.executables).drain() {
            if let Some(exe) = lock(&e).executable.take() {
                let _ = exe.destroy();
            }
        }
        lock(&self.readers).clear();
        // SAFETY: the pool was leaked in `new` and is freed only here; every signal made from
        // it was in the registries just emptied (API calls that held clones held an
        // `Arc<State>` too, so they have returned before this drop runs).
        drop(unsafe { Box::from_raw(self.signal_pool.as_ptr()) });
        // SAFETY: as above for the runtime; the pool, its last borrower, is gone.
        drop(unsafe { Box::from_raw(self.runtime.as_ptr()) });
    }
}

/// The global runtime: reference count and state.
static GLOBAL: Mutex<(u32, Option<Arc<State>>)> = Mutex::new((0, None));

/// `hsa_init`: the first call checks `HSA_RT_LOG`, opens the default device
/// (`hsa_emu::open_default`: `/dev/kfd`, else the emulated device; `HSA_RT_DEVICE`,
/// `HSA_RT_SYSFS`, `HSA_XNACK`, `HSA_RT_EMULATION`) and builds the runtime; later calls
/// count.
///
/// # Errors
/// `Status::RefcountOverflow` once [`MAX_REFCOUNT`] (`INT32_MAX`, as ROCR) inits are
/// counted; on the first init,
/// `Status::InvalidArgument` naming `HSA_RT_LOG` and the accepted values when it is not a
/// switch value (`hsa_linux::env::switch`), and the platform's and runtime's errors.
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
        hsa_linux::env::switch(hsa_linux::env::LOG_ENV)?;
        let device = hsa_emu::open_default()?;
        g.1 = Some(Arc::new(State::new(device)?));
    }
    g.0 += 1;
    Ok(())
}

/// `hsa_shut_down`: counts down; at 0 the state is released (destroyed when the last call
/// still using it returns).
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
            g.1.take()
        } else {
            None
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `hsa_init` counts to `INT32_MAX` and the next call is `REFCOUNT_OVERFLOW`, as ROCR 5.2;
    /// the count then still goes down to 0. (Counting there one call at a time takes a
    /// minute: the test starts the count near the limit.)
    #[test]
    fn init_stops_at_int32_max() {
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
}
