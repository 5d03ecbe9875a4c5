//! The AMD signal extensions (`hsa_ext_amd.h`): `hsa_amd_signal_create` (consumers,
//! attributes), `hsa_amd_signal_value_pointer`, `hsa_amd_signal_async_handler` and
//! `hsa_amd_async_function` (handlers run on one runtime thread, as ROCR 5.2's
//! `AsyncEventsLoop`: `hsa_runtime::handlers`), and `hsa_amd_register_system_event_handler`
//! (`hsa_runtime::events`).
//!
//! A registered signal that the application destroys is dropped from the handler thread's
//! list at its next round (the services' liveness check asks whether the handle is still in
//! the state's registry; ROCR: "invalidation may occur during async signal handler loop and is
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
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;
use std::sync::Arc;

use hsa_core::platform::MemoryFault;
use hsa_core::signal::{SignalCondition, SignalKind};
use hsa_core::{bail, Status};
use hsa_runtime::AsyncHandlers;

use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{self, Sig};

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
            st.services().ipc().create_signal(initial_value)?
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
        AsyncHandlers::check_signal(&s)?;
        let condition = SignalCondition::from_raw(cond)?;
        let arg = arg as usize;
        st.services().handlers().on_signal(
            s,
            condition,
            value,
            // SAFETY: the application's handler with the signature it was registered with,
            // and its argument (callable from another thread: the caller's contract).
            Box::new(move |observed| unsafe { handler(observed, arg as *mut c_void) }),
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
        let arg = arg as usize;
        let function = move || {
            // SAFETY: the application's callback with the signature it was registered with,
            // and its argument (callable from another thread: the caller's contract).
            unsafe { callback(arg as *mut c_void) }
        };
        st.services().handlers().call(Box::new(function))?;
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
        // The GPU agents' handles by node, for the events.
        let agents: Vec<(u32, u64)> = st
            .rt()
            .agents()
            .iter()
            .filter(|a| a.is_gpu())
            .map(|a| (a.node(), a.handle().0))
            .collect();
        let data = data as usize;
        st.services()
            .memory_faults()
            .add_listener(Arc::new(move |fault: &MemoryFault| {
                let Some(&(_, agent)) = agents.iter().find(|(node, _)| *node == fault.node.0)
                else {
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
                // SAFETY: the application's callback with the signature it registered, the
                // event (live for the call) and its data.
                unsafe { cb(&raw const event as *const c_void, data as *mut c_void) };
            }));
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
