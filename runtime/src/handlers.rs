//! Async signal handlers and async functions (`hsa_amd_signal_async_handler`,
//! `hsa_amd_async_function`; `hsa_ext_amd.h`): handlers run on one runtime thread, as ROCR
//! 5.2's `AsyncEventsLoop`.
//!
//! The handler thread starts with the first registration. It waits on every registered signal
//! and a wake signal at once with [`hsa_core::signal::wait_any`] (blocked: on the interrupt
//! signals' events, which is why handlers take interrupt signals only, as ROCR does), calls
//! the handler of a signal whose condition holds and keeps it registered while the handler
//! returns true. No lock is held and no signal is borrowed while a handler runs, so handlers
//! may call the runtime, register handlers, destroy signals or shut the runtime down. A
//! registered signal its owner no longer considers live (the [`Liveness`] given at creation:
//! the C API asks whether the handle is still in its registry) is dropped from the thread's
//! list at its next round (ROCR: "invalidation may occur during async signal handler loop and
//! is not an error").
//!
//! [`hsa_core::signal::wait_any`] blocks on all the signals' events at once
//! (`Platform::wait_any_event`: on Linux one `AMDKFD_IOC_WAIT_EVENTS`, as ROCR's
//! `hsaKmtWaitOnMultipleEvents`), so a handler runs as soon as its signal's event fires, with
//! no polling.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

use hsa_core::platform::Platform;
use hsa_core::signal::{SignalCondition, SignalKind, SignalPool, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

use crate::{lock, Sig};

/// A signal handler: called with the value that satisfied its condition; it stays registered
/// while it returns true.
pub type SignalHandler = Box<dyn FnMut(i64) -> bool + Send>;
/// An async function: called once.
pub type AsyncFunction = Box<dyn FnOnce() + Send>;
/// Whether a registered signal is still live for its owner (checked at every round of the
/// handler thread; `false` drops its registrations).
pub type Liveness<P> = Arc<dyn Fn(&Sig<P>) -> bool + Send + Sync>;

enum Handler {
    Signal(SignalHandler),
    Function(AsyncFunction),
}

struct Registration<P: Platform + 'static> {
    /// `None` for an async function.
    signal: Option<Arc<Sig<P>>>,
    condition: SignalCondition,
    value: i64,
    handler: Handler,
}

struct Shared<P: Platform + 'static> {
    registrations: Mutex<Vec<Registration<P>>>,
    /// Raised (non-zero) to make the thread re-read the registrations; taken at shut-down.
    wake: Mutex<Option<Arc<Sig<P>>>>,
    exit: AtomicBool,
    live: Liveness<P>,
}

/// The async handlers of one runtime and the thread that runs them (module docs).
pub struct AsyncHandlers<P: Platform + 'static> {
    signals: Arc<SignalPool<Arc<P>>>,
    live: Liveness<P>,
    shared: Mutex<Option<Arc<Shared<P>>>>,
    thread: Mutex<Option<(ThreadId, JoinHandle<()>)>>,
}

impl<P: Platform + 'static> std::fmt::Debug for AsyncHandlers<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncHandlers")
            .field("running", &lock(&self.thread).is_some())
            .finish_non_exhaustive()
    }
}

impl<P: Platform + 'static> AsyncHandlers<P> {
    /// No handler yet; the thread's wake signal will come from `signals`; `live` tells a
    /// signal its owner destroyed (always true for a Rust owner, who drops its handle).
    pub fn new(signals: Arc<SignalPool<Arc<P>>>, live: Liveness<P>) -> AsyncHandlers<P> {
        AsyncHandlers {
            signals,
            live,
            shared: Mutex::new(None),
            thread: Mutex::new(None),
        }
    }

    /// Calls `handler(value)` on the handler thread once `signal` satisfies `condition`
    /// against `value`; it stays registered while it returns true
    /// (`hsa_amd_signal_async_handler`).
    ///
    /// # Errors
    /// `Status::InvalidSignal` for a signal without an event (ROCR 5.2 takes interrupt signals
    /// only); `Status::OutOfResources` when the thread or its wake signal cannot be made.
    pub fn on_signal(
        &self,
        signal: Arc<Sig<P>>,
        condition: SignalCondition,
        value: i64,
        handler: SignalHandler,
    ) -> Result<(), Error> {
        Self::check_signal(&signal)?;
        self.register(Registration {
            signal: Some(signal),
            condition,
            value,
            handler: Handler::Signal(handler),
        })
    }

    /// Checks that handlers can wait on `signal`: it has an event.
    ///
    /// # Errors
    /// `Status::InvalidSignal` for a signal without an event (ROCR 5.2 takes interrupt signals
    /// only).
    pub fn check_signal(signal: &Sig<P>) -> Result<(), Error> {
        if signal.kind() != SignalKind::Interrupt {
            bail!(
                Status::InvalidSignal,
                "signal {:#x} has no event (an AMD_GPU_ONLY signal): async handlers wait on \
                 interrupt signals",
                signal.handle().0
            );
        }
        Ok(())
    }

    /// Calls `function` once on the handler thread (`hsa_amd_async_function`).
    ///
    /// # Errors
    /// `Status::OutOfResources` when the thread or its wake signal cannot be made.
    pub fn call(&self, function: AsyncFunction) -> Result<(), Error> {
        self.register(Registration {
            signal: None,
            condition: SignalCondition::Eq,
            value: 0,
            handler: Handler::Function(function),
        })
    }

    /// Adds a registration, starting the thread (and making its wake signal) on the first.
    fn register(&self, r: Registration<P>) -> Result<(), Error> {
        let mut slot = lock(&self.shared);
        let shared = match slot.as_ref() {
            Some(s) => s.clone(),
            None => {
                let wake = self.signals.create_interrupt(0)?;
                let shared = Arc::new(Shared {
                    registrations: Mutex::new(Vec::new()),
                    wake: Mutex::new(Some(Arc::new(wake))),
                    exit: AtomicBool::new(false),
                    live: self.live.clone(),
                });
                let for_thread = shared.clone();
                let handle = std::thread::Builder::new()
                    .name("hsa-rt async handlers".into())
                    .spawn(move || run(&for_thread))
                    .map_err(|e| {
                        hsa_core::error!(
                            Status::OutOfResources,
                            "starting the async handler thread: {e}"
                        )
                    })?;
                *lock(&self.thread) = Some((handle.thread().id(), handle));
                *slot = Some(shared.clone());
                shared
            }
        };
        drop(slot);
        lock(&shared.registrations).push(r);
        if let Some(w) = lock(&shared.wake).as_ref() {
            w.store(1, StoreOrder::Release);
        }
        Ok(())
    }

    /// Stops the thread (joined unless this is the thread itself, running a handler that shut
    /// the runtime down) and drops every registration and the wake signal, which hold the
    /// runtime's signal pool.
    pub fn shut_down(&self) {
        let Some(shared) = lock(&self.shared).take() else {
            return;
        };
        shared.exit.store(true, Ordering::Release);
        let wake = lock(&shared.wake).take();
        if let Some(w) = &wake {
            w.store(1, StoreOrder::Release);
        }
        if let Some((id, handle)) = lock(&self.thread).take() {
            if id != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        let registrations = std::mem::take(&mut *lock(&shared.registrations));
        drop(registrations);
        drop(wake);
    }
}

/// The handler thread's loop.
fn run<P: Platform + 'static>(shared: &Shared<P>) {
    loop {
        if shared.exit.load(Ordering::Acquire) {
            return;
        }
        // Functions first (each runs once), with no lock held.
        let functions: Vec<Registration<P>> = {
            let mut regs = lock(&shared.registrations);
            let (f, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *regs)
                .into_iter()
                .partition(|r| r.signal.is_none());
            *regs = rest;
            f
        };
        for f in functions {
            if let Handler::Function(func) = f.handler {
                func();
            }
        }
        drop_dead(shared);
        let Some(wake) = lock(&shared.wake).clone() else {
            return;
        };
        if shared.exit.load(Ordering::Acquire) {
            return;
        }
        let (signals, conditions, values): (Vec<Arc<Sig<P>>>, Vec<SignalCondition>, Vec<i64>) = {
            let regs = lock(&shared.registrations);
            let mut s = vec![wake.clone()];
            let mut c = vec![SignalCondition::Ne];
            let mut v = vec![0];
            for r in regs.iter() {
                if let Some(sig) = &r.signal {
                    s.push(sig.clone());
                    c.push(r.condition);
                    v.push(r.value);
                }
            }
            (s, c, v)
        };
        let fired = {
            let refs: Vec<&Sig<P>> = signals.iter().map(|s| &**s).collect();
            hsa_core::signal::wait_any(&refs, &conditions, &values, u64::MAX, WaitState::Blocked)
        };
        let (index, observed) = match fired {
            Ok(Some(hit)) => hit,
            Ok(None) | Err(_) => continue,
        };
        if index == 0 {
            wake.store(0, StoreOrder::Relaxed);
            continue;
        }
        let fired_signal = signals[index].clone();
        drop(signals);
        drop(wake);
        // Take the first registration of that signal with that condition out while its
        // handler runs.
        let taken = {
            let mut regs = lock(&shared.registrations);
            let pos = regs.iter().position(|r| {
                r.signal
                    .as_ref()
                    .is_some_and(|s| Arc::ptr_eq(s, &fired_signal))
                    && r.condition.holds(observed, r.value)
            });
            pos.map(|p| regs.remove(p))
        };
        drop(fired_signal);
        let Some(mut r) = taken else {
            continue;
        };
        let keep = match &mut r.handler {
            Handler::Signal(h) => h(observed),
            Handler::Function(_) => false,
        };
        if keep && !shared.exit.load(Ordering::Acquire) {
            lock(&shared.registrations).push(r);
        }
    }
}

/// Drops the registrations whose signal its owner no longer considers live.
fn drop_dead<P: Platform + 'static>(shared: &Shared<P>) {
    let removed: Vec<Registration<P>> = {
        let mut regs = lock(&shared.registrations);
        let (gone, live): (Vec<_>, Vec<_>) = std::mem::take(&mut *regs)
            .into_iter()
            .partition(|r| r.signal.as_ref().is_some_and(|s| !(shared.live)(s)));
        *regs = live;
        gone
    };
    // Dropped after the lock (a destroyed signal's last Arc frees it here).
    drop(removed);
}
