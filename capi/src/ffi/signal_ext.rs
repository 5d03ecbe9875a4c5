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
//! System event handlers (`hsa_amd_register_system_event_handler`) are told of every GPU
//! memory fault the platform reports (`MemoryFaultReports::set_memory_fault_handler`; on Linux the KFD
//! memory event), as `HSA_AMD_GPU_MEMORY_FAULT_EVENT` with the GPU agent, the address and the
//! reasons, on the platform's thread and before the error callback of the queue the fault
//! stopped, as ROCR 5.2's `Runtime::VMFaultHandler` does. Unlike ROCR, a fault no handler
//! answers with `HSA_STATUS_SUCCESS` does not abort the process here: it goes on to the queue's
//! callback (and aborts only without one). The same platform handler then tells the copy
//! engine, whose SDMA queue on that GPU the fault ended; it is installed at the first system
//! event handler or at the copy engine's first SDMA queue, whichever comes first.
//!
//! `hsa_core::signal::wait_any` blocks on all the signals' events at once
//! (`Platform::wait_any_event`: on Linux one `AMDKFD_IOC_WAIT_EVENTS`, as ROCR's
//! `hsaKmtWaitOnMultipleEvents`), so a handler runs as soon as its signal's event fires, with
//! no polling.
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

use hsa_core::platform::{MemoryFault, MemoryFaultHandler, MemoryFaultReports};
use hsa_core::signal::{SignalCondition, SignalKind, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, Sig, State};

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

/// `HSA_AMD_GPU_MEMORY_FAULT_EVENT` (`hsa_amd_event_type_t`).
pub const HSA_AMD_GPU_MEMORY_FAULT_EVENT: u32 = 0;

/// `hsa_amd_gpu_memory_fault_info_t` (`hsa_ext_amd.h`): the agent, the virtual address and
/// the `hsa_amd_memory_fault_reason_t` bits of a GPU memory fault.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaAmdGpuMemoryFaultInfo {
    /// `agent`: the GPU agent whose access faulted.
    pub agent: u64,
    /// `virtual_address`: the address accessed.
    pub virtual_address: u64,
    /// `fault_reason_mask`: `hsa_amd_memory_fault_reason_t` bits.
    pub fault_reason_mask: u32,
}

/// `hsa_amd_event_t` (`hsa_ext_amd.h`): the event type and its data (the union's one member,
/// `memory_fault`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HsaAmdEvent {
    /// `event_type` (`hsa_amd_event_type_t`).
    pub event_type: u32,
    /// `memory_fault`, valid for `HSA_AMD_GPU_MEMORY_FAULT_EVENT`.
    pub memory_fault: HsaAmdGpuMemoryFaultInfo,
}

const _: () = assert!(std::mem::size_of::<HsaAmdGpuMemoryFaultInfo>() == 24);
const _: () = assert!(std::mem::size_of::<HsaAmdEvent>() == 32);
const _: () = assert!(std::mem::offset_of!(HsaAmdEvent, memory_fault) == 8);

/// What the platform's memory-fault handler reads: the registered system event handlers and
/// the GPU agents' handles by topology node. A process static rather than part of the state:
/// the handler runs on the platform's thread, which must not wait for the state's lock (the
/// state's drop waits for that thread).
#[derive(Default)]
struct SystemEvents {
    /// (callback, data) in registration order.
    handlers: Vec<(SystemEventCallback, usize)>,
    /// (node, agent handle) of each GPU agent, filled at the first registration.
    agents: Vec<(u32, u64)>,
}

static SYSTEM_EVENTS: Mutex<SystemEvents> = Mutex::new(SystemEvents {
    handlers: Vec::new(),
    agents: Vec::new(),
});

/// The platform's memory-fault handler: hands `fault` to every system event handler as an
/// `HSA_AMD_GPU_MEMORY_FAULT_EVENT`, in registration order, with no lock held; then tells the
/// copy engine ([`super::copy::CopyEngine::on_gpu_memory_fault`]).
fn on_memory_fault(fault: &MemoryFault, _data: usize) {
    notify_system_event_handlers(fault);
    // Then (as a queue's error callback comes after the handlers) the fault ends the GPU's
    // SDMA queue, if copies made one: its pending copies fail.
    if let Ok(st) = state::state() {
        st.ext.copy.on_gpu_memory_fault(fault.node);
    }
}

/// Hands `fault` to every system event handler (see [`on_memory_fault`]).
fn notify_system_event_handlers(fault: &MemoryFault) {
    let (handlers, agent) = {
        let ev = lock(&SYSTEM_EVENTS);
        let agent = ev
            .agents
            .iter()
            .find(|(node, _)| *node == fault.node.0)
            .map(|&(_, h)| h);
        (ev.handlers.clone(), agent)
    };
    let Some(agent) = agent else {
        return;
    };
    let event = HsaAmdEvent {
        event_type: HSA_AMD_GPU_MEMORY_FAULT_EVENT,
        memory_fault: HsaAmdGpuMemoryFaultInfo {
            agent,
            virtual_address: fault.address.0,
            fault_reason_mask: fault.reason.bits(),
        },
    };
    for (cb, data) in handlers {
        // SAFETY: the application's callback with the signature it registered, the event
        // (live for the call) and its data.
        unsafe { cb(&raw const event as *const c_void, data as *mut c_void) };
    }
}

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
    pub(crate) fn shut_down(&self, st: &State) {
        // The system event handlers go with the runtime (the platform may outlive it).
        {
            let mut ev = lock(&SYSTEM_EVENTS);
            if !ev.agents.is_empty() {
                let _ = st.platform_ref().set_memory_fault_handler(None);
            }
            *ev = SystemEvents::default();
        }
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
        st.signals.insert(handle, Arc::new(s));
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
/// ROCR 5.2). The only system event `hsa_ext_amd.h` defines is a GPU memory fault: each
/// handler is called with an `HSA_AMD_GPU_MEMORY_FAULT_EVENT` for every fault the platform
/// reports, before the error callback of the queue the fault stopped (see the module doc). A
/// platform that reports no faults (the default of `MemoryFaultReports::set_memory_fault_handler`)
/// keeps the registration and never calls it.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_register_system_event_handler(
    callback: Option<SystemEventCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_register_system_event_handler", || {
        let st = state::state()?;
        let Some(cb) = callback else {
            return Ok(Status::Success);
        };
        watch_memory_faults(&st);
        lock(&SYSTEM_EVENTS).handlers.push((cb, data as usize));
        Ok(Status::Success)
    })
}

/// Installs the platform's memory-fault handler ([`on_memory_fault`]) unless it is
/// installed: at the first system event handler, or when the copy engine makes its first
/// SDMA queue (a fault ends it). It stays until the runtime shuts down.
pub(crate) fn watch_memory_faults(st: &State) {
    let mut ev = lock(&SYSTEM_EVENTS);
    if !ev.agents.is_empty() {
        return;
    }
    ev.agents = st
        .rt()
        .agents()
        .iter()
        .filter(|a| a.is_gpu())
        .map(|a| (a.node(), a.handle().0))
        .collect();
    let handler = MemoryFaultHandler {
        func: on_memory_fault,
        data: 0,
    };
    if let Err(e) = st.platform_ref().set_memory_fault_handler(Some(handler)) {
        super::log_error("hsa_amd_register_system_event_handler", &e);
    }
}

export!(
    hsa_amd_signal_create,
    hsa_amd_signal_value_pointer,
    hsa_amd_signal_async_handler,
    hsa_amd_async_function,
    hsa_amd_register_system_event_handler,
);
