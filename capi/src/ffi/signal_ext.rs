//! The AMD signal extensions (`hsa_ext_amd.h`): `hsa_amd_signal_create` (consumers,
//! attributes), `hsa_amd_signal_value_pointer`, `hsa_amd_signal_async_handler` and
//! `hsa_amd_async_function` (handlers run on one runtime thread, as ROCR 5.2's
//! `AsyncEventsLoop`), and `hsa_amd_register_system_event_handler`.
//!
//! The handler thread starts with the first registration. It waits on every registered signal
//! and a wake signal at once with `hsa_core::signal::wait_any` (blocked: on the interrupt
//! signals' events, which is why `hsa_amd_signal_async_handler` takes interrupt signals only,
//! as ROCR does), calls the handler of a signal whose condition holds and keeps it registered
//! when the handler returns true. No lock is held and no signal is borrowed while a handler
//! runs, so handlers may call the API, register handlers, destroy signals or shut the runtime
//! down. A registered signal that the application destroys is dropped from the thread's list
//! at its next round (ROCR: "invalidation may occur during async signal handler loop and is
//! not an error").
//!
//! `hsa_core::signal::wait_any` waits on one platform event at a time, in turns of 1 ms when
//! the signals have several: a handler may run up to a turn after its signal changed
//! (ROCR waits on all events at once with `hsaKmtWaitOnMultipleEvents`).
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `vec!`.
use std::vec;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

use hsa_core::signal::{SignalCondition, SignalKind, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, write, Sig, State};

/// `HSA_AMD_SIGNAL_AMD_GPU_ONLY`: only GPUs wait on the signal (no event).
pub const HSA_AMD_SIGNAL_AMD_GPU_ONLY: u64 = 1;
/// `HSA_AMD_SIGNAL_IPC`: the signal may be shared with other processes (`hsa_amd_ipc_signal_create`).
pub const HSA_AMD_SIGNAL_IPC: u64 = 2;

/// `hsa_amd_signal_handler`: `bool (*)(hsa_signal_value_t value, void* arg)`.
pub type SignalHandler = unsafe extern "C" fn(i64, *mut c_void) -> bool;
/// `hsa_amd_async_function`'s callback: `void (*)(void* arg)`.
pub type AsyncFunction = unsafe extern "C" fn(*mut c_void);
/// `hsa_amd_system_event_callback_t`: `hsa_status_t (*)(const hsa_amd_event_t*, void*)`.
pub type SystemEventCallback = unsafe extern "C" fn(*const c_void, *mut c_void) -> u32;

#[derive(Clone, Copy)]
enum Handler {
    Signal(SignalHandler),
    Function(AsyncFunction),
}

struct Registration {
    /// `None` for `hsa_amd_async_function`.
    signal: Option<Arc<Sig>>,
    condition: SignalCondition,
    value: i64,
    handler: Handler,
    arg: usize,
}

#[derive(Default)]
struct Shared {
    registrations: Mutex<Vec<Registration>>,
    /// Raised (non-zero) to make the thread re-read the registrations; taken at shut-down.
    wake: Mutex<Option<Arc<Sig>>>,
    exit: AtomicBool,
}

/// The async handlers of one runtime and the thread that runs them.
#[derive(Default)]
pub(crate) struct AsyncHandlers {
    shared: Mutex<Option<Arc<Shared>>>,
    thread: Mutex<Option<(ThreadId, JoinHandle<()>)>>,
    /// `hsa_amd_register_system_event_handler` registrations (callback, data).
    pub(crate) system_event_handlers: Mutex<Vec<(SystemEventCallback, usize)>>,
}

impl AsyncHandlers {
    /// Adds a registration, starting the thread (and making its wake signal) on the first.
    fn register(&self, st: &State, r: Registration) -> Result<(), Error> {
        let mut slot = lock(&self.shared);
        let shared = match slot.as_ref() {
            Some(s) => s.clone(),
            None => {
                let wake = st.signal_pool().create_interrupt(0)?;
                let shared = Arc::new(Shared {
                    wake: Mutex::new(Some(Arc::new(wake))),
                    ..Shared::default()
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
    /// the runtime down) and drops every registration and the wake signal, which borrow the
    /// runtime's signal pool.
    pub(crate) fn shut_down(&self) {
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
        lock(&shared.registrations).clear();
        drop(wake);
    }
}

/// The handler thread's loop.
fn run(shared: &Shared) {
    loop {
        if shared.exit.load(Ordering::Acquire) {
            return;
        }
        // Functions first (each runs once), with no lock held.
        let functions: Vec<Registration> = {
            let mut regs = lock(&shared.registrations);
            let (f, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *regs)
                .into_iter()
                .partition(|r| r.signal.is_none());
            *regs = rest;
            f
        };
        for f in functions {
            if let Handler::Function(func) = f.handler {
                // SAFETY: the application's callback with the signature it was registered
                // with and its argument.
                unsafe { func(f.arg as *mut c_void) };
            }
        }
        drop_destroyed(shared);
        let Some(wake) = lock(&shared.wake).clone() else {
            return;
        };
        if shared.exit.load(Ordering::Acquire) {
            return;
        }
        let (signals, conditions, values): (Vec<Arc<Sig>>, Vec<SignalCondition>, Vec<i64>) = {
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
            let refs: Vec<&Sig> = signals.iter().map(|s| &**s).collect();
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
        let Some(r) = taken else {
            continue;
        };
        let keep = match r.handler {
            // SAFETY: the application's handler with the signature it was registered with.
            Handler::Signal(h) => unsafe { h(observed, r.arg as *mut c_void) },
            Handler::Function(_) => false,
        };
        if keep && !shared.exit.load(Ordering::Acquire) {
            lock(&shared.registrations).push(r);
        }
    }
}

/// Drops the registrations whose signal the application destroyed (it is no longer in the
/// runtime's registry under its handle), and all of them once the runtime is gone.
fn drop_destroyed(shared: &Shared) {
    let Ok(st) = state::state() else {
        lock(&shared.registrations).clear();
        return;
    };
    let removed: Vec<Registration> = {
        let mut regs = lock(&shared.registrations);
        let (gone, live): (Vec<_>, Vec<_>) =
            std::mem::take(&mut *regs).into_iter().partition(|r| {
                r.signal.as_ref().is_some_and(|s| {
                    st.signal(s.handle().0)
                        .map_or(true, |live| !Arc::ptr_eq(&live, s))
                })
            });
        *regs = live;
        gone
    };
    // Dropped after the lock (a destroyed signal's last Arc frees it here).
    drop(removed);
    drop(st);
}

/// `hsa_amd_signal_create`: a signal with `initial_value`. It is an interrupt signal (waits
/// block on its event) unless `attributes` has `HSA_AMD_SIGNAL_AMD_GPU_ONLY` or
/// `HSA_AMD_SIGNAL_IPC`, or consumers are given and none is a CPU agent (ROCR 5.2's rule).
/// An `IPC` signal lives in a page of shareable memory of its own, which
/// `hsa_amd_ipc_signal_create` shares with other processes (see `ipc`); it has no event.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `signal`, NULL `consumers` with
/// `num_consumers` > 0, or a consumer listed twice; `OUT_OF_RESOURCES` when no signal can be
/// made.
///
/// # Safety
/// `consumers` is NULL or holds `num_consumers` handles; `signal` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_signal_create(
    initial_value: i64,
    num_consumers: u32,
    consumers: *const u64,
    attributes: u64,
    signal: *mut u64,
) -> HsaStatus {
    guard("hsa_amd_signal_create", || {
        let st = state::state()?;
        non_null(signal, "signal")?;
        let mut interrupt = attributes & (HSA_AMD_SIGNAL_AMD_GPU_ONLY | HSA_AMD_SIGNAL_IPC) == 0;
        if interrupt && num_consumers != 0 {
            non_null(consumers, "consumers")?;
            // SAFETY: non-NULL, `num_consumers` handles per the caller's contract.
            let list = unsafe { std::slice::from_raw_parts(consumers, num_consumers as usize) };
            for (i, c) in list.iter().enumerate() {
                if list[..i].contains(c) {
                    bail!(Status::InvalidArgument, "consumer {c:#x} is listed twice");
                }
            }
            interrupt = st
                .rt()
                .agents()
                .iter()
                .any(|a| !a.is_gpu() && list.contains(&a.handle().0));
        }
        let pool = st.signal_pool();
        let s: Sig = if attributes & HSA_AMD_SIGNAL_IPC != 0 {
            super::ipc::create_signal(&st, initial_value)?
        } else if interrupt {
            pool.create_interrupt(initial_value)?
        } else {
            pool.create(initial_value)?
        };
        let handle = s.handle().0;
        write(&st.signals).insert(handle, Arc::new(s));
        // SAFETY: non-NULL, the caller's hsa_signal_t slot.
        unsafe { signal.write(handle) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_signal_value_pointer`: the address of the signal's value (`amd_signal_t.value`),
/// for signals without an event only (ROCR 5.2: busy-wait signals), which the application may
/// then poll or change directly.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value_ptr` or an interrupt signal;
/// `INVALID_SIGNAL`.
///
/// # Safety
/// `value_ptr` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_signal_value_pointer(
    signal: u64,
    value_ptr: *mut *const i64,
) -> HsaStatus {
    guard("hsa_amd_signal_value_pointer", || {
        let st = state::state()?;
        non_null(value_ptr, "value_ptr")?;
        let s = st.signal(signal)?;
        if s.kind() != SignalKind::User {
            bail!(
                Status::InvalidArgument,
                "signal {signal:#x} is an interrupt signal: its value is changed through the API only"
            );
        }
        let p: *const std::sync::atomic::AtomicI64 = s.raw().value();
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { value_ptr.write(p.cast::<i64>()) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_signal_async_handler`: calls `handler(value, arg)` on the runtime's handler
/// thread once `signal` satisfies `cond` against `value`; the handler stays registered while
/// it returns true.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL handler or an unknown condition;
/// `INVALID_SIGNAL` for an unknown signal or one without an event (ROCR 5.2 takes interrupt
/// signals only); `OUT_OF_RESOURCES` when the thread cannot start.
///
/// # Safety
/// `handler` is NULL or a valid function, callable from another thread with `arg`.
pub unsafe extern "C" fn hsa_amd_signal_async_handler(
    signal: u64,
    cond: u32,
    value: i64,
    handler: Option<SignalHandler>,
    arg: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_signal_async_handler", || {
        let st = state::state()?;
        let Some(handler) = handler else {
            bail!(Status::InvalidArgument, "handler is NULL");
        };
        let s = st.signal(signal)?;
        if s.kind() != SignalKind::Interrupt {
            bail!(
                Status::InvalidSignal,
                "signal {signal:#x} has no event (an AMD_GPU_ONLY signal): async handlers \
                 wait on interrupt signals"
            );
        }
        let condition = SignalCondition::from_raw(cond)?;
        st.ext.handlers.register(
            &st,
            Registration {
                signal: Some(s),
                condition,
                value,
                handler: Handler::Signal(handler),
                arg: arg as usize,
            },
        )?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_async_function`: calls `callback(arg)` once on the runtime's handler thread.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback; `OUT_OF_RESOURCES` when the
/// thread cannot start.
///
/// # Safety
/// `callback` is NULL or a valid function, callable from another thread with `arg`.
pub unsafe extern "C" fn hsa_amd_async_function(
    callback: Option<AsyncFunction>,
    arg: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_async_function", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        st.ext.handlers.register(
            &st,
            Registration {
                signal: None,
                condition: SignalCondition::Eq,
                value: 0,
                handler: Handler::Function(callback),
                arg: arg as usize,
            },
        )?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_register_system_event_handler`: registers `callback` with `data` (any number, as
/// ROCR 5.2). The only system event `hsa_ext_amd.h` defines is a GPU memory fault; this
/// runtime reports a kernel's memory fault to the error callback of the queue that ran it
/// (and, without one, aborts as ROCR does), and does not call these handlers.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_register_system_event_handler(
    callback: Option<SystemEventCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_register_system_event_handler", || {
        let st = state::state()?;
        if let Some(cb) = callback {
            lock(&st.ext.handlers.system_event_handlers).push((cb, data as usize));
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_signal_create,
    hsa_amd_signal_value_pointer,
    hsa_amd_signal_async_handler,
    hsa_amd_async_function,
    hsa_amd_register_system_event_handler,
);
