//! Memory and signals shared between processes (`hsa_amd_ipc_memory_create`,
//! `hsa_amd_ipc_memory_attach`, `hsa_amd_ipc_memory_detach`, `hsa_amd_ipc_signal_create`,
//! `hsa_amd_ipc_signal_attach`; `hsa_ext_amd.h`) over `hsa_runtime::ipc` (the platform's
//! `MemorySharing` capability, the 32-byte handles' words, what this process attached: see
//! there). These check and convert the arguments.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;
use std::sync::Arc;

use hsa_core::{NodeId, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state;

/// `hsa_amd_ipc_memory_create`: a handle through which other processes attach the
/// allocation at `ptr` (`len` bytes: its size).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments, a `len` above ROCR's limit, a
/// `ptr` that is not the start of a pool allocation of this runtime, a `len` other than the
/// allocation's size (rounded to pages), or memory the platform cannot share (system memory
/// of a pool, which is not shareable on Linux; every allocation on the bare-metal platform).
///
/// # Safety
/// `handle` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_ipc_memory_create(
    ptr: *mut c_void,
    len: usize,
    handle: *mut IpcMemory,
) -> HsaStatus {
    guard("hsa_amd_ipc_memory_create", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        non_null(handle, "handle")?;
        let words = st
            .services()
            .ipc()
            .create_memory_handle(ptr as u64, len as u64)?;
        // SAFETY: non-NULL, the caller's hsa_amd_ipc_memory_t.
        unsafe { handle.write(words) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_ipc_memory_attach`: maps the memory of `ipc` (another process's, or this one's)
/// into this process for `mapping_agents` (every GPU agent when `num_agents` is 0) and the
/// host; `*mapped_ptr` is its address, for the agents and the host alike.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `ipc` or `mapped_ptr`, a NULL
/// `mapping_agents` with `num_agents` > 0, a `len` of 0 or beyond the shared allocation, a
/// handle that is not a memory handle of this runtime, or whose export is gone (the exporter
/// freed the memory or exited) or cannot be taken (see `MemorySharing::import_memory`);
/// `INVALID_AGENT` for an unknown agent; `OUT_OF_RESOURCES` when it cannot be mapped.
///
/// # Safety
/// `ipc` is NULL or readable; `mapping_agents` is NULL or holds `num_agents` handles;
/// `mapped_ptr` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_ipc_memory_attach(
    ipc: *const IpcMemory,
    len: usize,
    num_agents: u32,
    mapping_agents: *const u64,
    mapped_ptr: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_ipc_memory_attach", || {
        let st = state::state()?;
        non_null(ipc, "handle")?;
        non_null(mapped_ptr, "mapped_ptr")?;
        let mut nodes: Vec<NodeId> = Vec::new();
        if num_agents != 0 {
            non_null(mapping_agents, "mapping_agents")?;
            // SAFETY: non-NULL, `num_agents` handles per the caller's contract.
            for a in unsafe { std::slice::from_raw_parts(mapping_agents, num_agents as usize) } {
                nodes.push(NodeId(agent_of(&st, *a)?.node()));
            }
        } else {
            nodes.extend(
                st.rt()
                    .agents()
                    .iter()
                    .filter(|a| a.is_gpu())
                    .map(|a| NodeId(a.node())),
            );
        }
        // SAFETY: non-NULL and readable per the caller's contract; [u32; 8] has no invalid
        // values.
        let words = unsafe { ipc.read_unaligned() };
        let ptr = st
            .services()
            .ipc()
            .attach_memory(&words, len as u64, &nodes)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { mapped_ptr.write(ptr as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_ipc_memory_detach`: ends an attachment of this process (the memory stays the
/// exporter's).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL or an address `hsa_amd_ipc_memory_attach`
/// did not return (or that was detached already), as ROCR 5.2.
pub extern "C" fn hsa_amd_ipc_memory_detach(mapped_ptr: *mut c_void) -> HsaStatus {
    guard("hsa_amd_ipc_memory_detach", || {
        let st = state::state()?;
        non_null(mapped_ptr, "mapped_ptr")?;
        // SAFETY: detaching ends the application's use of the memory (hsa_ext_amd.h).
        unsafe { st.services().ipc().detach_memory(mapped_ptr as u64) }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_ipc_signal_create`: a handle through which other processes attach `signal`,
/// which must have been created with `HSA_AMD_SIGNAL_IPC`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `handle`, a signal made without
/// `HSA_AMD_SIGNAL_IPC` (as ROCR 5.2's `IPCSignal::CreateHandle`), or memory the platform
/// cannot share; `INVALID_SIGNAL` for an unknown signal.
///
/// # Safety
/// `handle` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_ipc_signal_create(
    signal: u64,
    handle: *mut IpcSignal,
) -> HsaStatus {
    guard("hsa_amd_ipc_signal_create", || {
        let st = state::state()?;
        non_null(handle, "handle")?;
        let s = st.signal(signal)?;
        let words = st.services().ipc().create_signal_handle(&s)?;
        // SAFETY: non-NULL, the caller's hsa_amd_ipc_signal_t.
        unsafe { handle.write(words) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_ipc_signal_attach`: a signal of this process over the `amd_signal_t` of another
/// process's IPC signal (or this one's); `hsa_signal_destroy` of it ends the attachment.
/// It has no event: waits poll (see the module docs).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments, a handle that is not a signal
/// handle of this runtime, whose export is gone, or whose memory holds no live signal;
/// `OUT_OF_RESOURCES` when it cannot be mapped.
///
/// # Safety
/// `handle` is NULL or readable; `signal` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_ipc_signal_attach(
    handle: *const IpcSignal,
    signal: *mut u64,
) -> HsaStatus {
    guard("hsa_amd_ipc_signal_attach", || {
        let st = state::state()?;
        non_null(handle, "handle")?;
        non_null(signal, "signal")?;
        // SAFETY: non-NULL and readable per the caller's contract.
        let words = unsafe { handle.read_unaligned() };
        let s = st.services().ipc().attach_signal(&words)?;
        let h = s.handle().0;
        st.signals.insert(h, Arc::new(s));
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { signal.write(h) };
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_ipc_memory_create,
    hsa_amd_ipc_memory_attach,
    hsa_amd_ipc_memory_detach,
    hsa_amd_ipc_signal_create,
    hsa_amd_ipc_signal_attach,
);
