//! Host memory the application already has, made reachable by the agents
//! (`hsa_amd_memory_lock`, `hsa_amd_memory_lock_to_pool`, `hsa_amd_memory_unlock`;
//! `hsa_memory_register`, `hsa_memory_deregister`), and what the runtime keeps about its own
//! allocations for the application (`hsa_amd_pointer_info_set_userdata`,
//! `hsa_amd_register_deallocation_callback`, `hsa_amd_deregister_deallocation_callback`).
//!
//! The records themselves are `hsa_core::runtime::host_memory::HostMemory` (the state's, in
//! both builds: frees and `hsa_amd_pointer_info` consult them); these functions check and
//! convert the arguments.
//!
//! A lock registers the pages holding the buffer with the platform
//! (`HostMemoryRegistration::register_host_memory`: on Linux a KFD `USERPTR` buffer) for the GPU agents it
//! lists — every GPU agent when it lists none — as ROCR's `MemoryRegion::Lock` does (CPU agents
//! in the list need nothing); the agents reach them at the device address the platform chose,
//! so `*agent_ptr` differs from `host_ptr` (as ROCR's on a discrete GPU, which HIP 5.2 relies
//! on). A GPU the lock does not name does not reach the memory (on the emulated device its
//! access faults). Locking the same pages again (same page range) shares the registration
//! (reference-counted, as libhsakmt does), mapping it to the GPUs the new lock adds;
//! `hsa_amd_memory_unlock` undoes the most recent lock of a pointer. Memory the runtime
//! allocated itself is already reachable: locking it registers nothing and `*agent_ptr` is
//! the pointer. `hsa_amd_pointer_info` reports locked memory as `HSA_EXT_POINTER_TYPE_LOCKED`
//! at its host or its agent address, and the copy engine reads and writes it through either.
//!
//! `hsa_memory_register` and `hsa_memory_deregister` are hints that change nothing, as in ROCR
//! 5.2: the agents here are base-profile agents, which reach host memory only through a lock's
//! agent pointer (or memory the runtime allocated).
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;

use hsa_core::runtime::PoolHandle;
use hsa_core::{bail, Error, NodeId, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{self, State};

/// The GPU nodes a lock maps its memory to, with ROCR's checks of the agent list: those of the
/// GPU agents listed (each once; CPU agents need nothing), every GPU agent's when the list is
/// empty (ROCR 5.2 `MemoryRegion::Lock`).
fn lock_gpus(st: &State, agents: *const u64, num_agent: i32) -> Result<Vec<NodeId>, Error> {
    if agents.is_null() != (num_agent == 0) {
        bail!(
            Status::InvalidArgument,
            "num_agent is {num_agent} but agents is {}",
            if agents.is_null() { "NULL" } else { "not NULL" }
        );
    }
    if num_agent < 0 {
        bail!(Status::InvalidArgument, "num_agent {num_agent} is negative");
    }
    if num_agent == 0 {
        return Ok(st
            .rt()
            .agents()
            .iter()
            .filter(|a| a.is_gpu())
            .map(|a| NodeId(a.node()))
            .collect());
    }
    let mut gpus = Vec::new();
    // SAFETY: non-NULL, `num_agent` handles per the caller's contract.
    for a in unsafe { std::slice::from_raw_parts(agents, num_agent as usize) } {
        let agent = agent_of(st, *a)?;
        let node = NodeId(agent.node());
        if agent.is_gpu() && !gpus.contains(&node) {
            gpus.push(node);
        }
    }
    Ok(gpus)
}

/// `hsa_amd_memory_lock`: makes `size` bytes of the application's memory at `host_ptr`
/// reachable by the GPU agents `agents` lists (all of them when `num_agent` is 0; see the
/// module doc); `*agent_ptr` is the address agents use.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a size of 0, NULL `host_ptr`/`agent_ptr`, or
/// `agents`/`num_agent` where one is empty and the other not; `INVALID_AGENT`; `ERROR` when
/// the platform cannot register the memory; `OUT_OF_RESOURCES` when it cannot map it.
///
/// # Safety
/// `agents` is NULL or holds `num_agent` handles; `agent_ptr` is NULL or writable; the memory
/// stays allocated until it is unlocked.
pub unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    size: usize,
    agents: *const u64,
    num_agent: i32,
    agent_ptr: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_memory_lock", || {
        let st = state::state()?;
        if size == 0 || host_ptr.is_null() || agent_ptr.is_null() {
            bail!(
                Status::InvalidArgument,
                "size {size}, host_ptr {host_ptr:p}, agent_ptr {agent_ptr:p}: none may be 0"
            );
        }
        // SAFETY: non-NULL, writable per the caller's contract (ROCR clears it first).
        unsafe { agent_ptr.write(std::ptr::null_mut()) };
        let gpus = lock_gpus(&st, agents, num_agent)?;
        // SAFETY: the application keeps the memory mapped while it is locked (the caller's
        // contract).
        let p = unsafe { st.host().lock(st.rt(), host_ptr as u64, size as u64, &gpus) }?;
        // SAFETY: as above.
        unsafe { agent_ptr.write(p as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_lock_to_pool`: [`hsa_amd_memory_lock`] with a CPU agent's pool named
/// (its fine- or coarse-grained system memory); `flags` must be 0.
///
/// # Errors (as status)
/// As [`hsa_amd_memory_lock`]; `INVALID_ARGUMENT` for `flags` other than 0;
/// `INVALID_MEMORY_POOL` for an unknown pool or one that is not a CPU agent's.
///
/// # Safety
/// As [`hsa_amd_memory_lock`].
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_lock_to_pool(
    host_ptr: *mut c_void,
    size: usize,
    agents: *const u64,
    num_agent: i32,
    pool: u64,
    flags: u32,
    agent_ptr: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_memory_lock_to_pool", || {
        let st = state::state()?;
        if size == 0 || host_ptr.is_null() || agent_ptr.is_null() || flags != 0 {
            bail!(
                Status::InvalidArgument,
                "size {size}, host_ptr {host_ptr:p}, agent_ptr {agent_ptr:p} must not be 0 \
                 and flags {flags:#x} must be 0"
            );
        }
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { agent_ptr.write(std::ptr::null_mut()) };
        let gpus = lock_gpus(&st, agents, num_agent)?;
        let owner = st
            .rt()
            .pool(PoolHandle(pool))
            .map_err(|e| hsa_core::error!(Status::InvalidMemoryPool, "{}", e.detail()))?
            .agent();
        if st.rt().agent(owner)?.is_gpu() {
            bail!(
                Status::InvalidMemoryPool,
                "pool {pool:#x} is device memory: memory is locked to a CPU agent's pool"
            );
        }
        // SAFETY: as in hsa_amd_memory_lock.
        let p = unsafe { st.host().lock(st.rt(), host_ptr as u64, size as u64, &gpus) }?;
        // SAFETY: as above.
        unsafe { agent_ptr.write(p as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_unlock`: undoes a lock of `host_ptr` (the most recent one; SUCCESS also for
/// a pointer that is not locked, as ROCR 5.2).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_memory_unlock(host_ptr: *mut c_void) -> HsaStatus {
    guard("hsa_amd_memory_unlock", || {
        let st = state::state()?;
        // SAFETY: the application does not use the memory from agents after unlocking it.
        unsafe { st.host().unlock(st.rt(), host_ptr as u64) };
        Ok(Status::Success)
    })
}

/// `hsa_memory_register`: a hint that changes nothing, as ROCR 5.2's (see the module doc).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a size of 0 with an address (ROCR 5.2's one
/// check).
pub extern "C" fn hsa_memory_register(address: *mut c_void, size: usize) -> HsaStatus {
    guard("hsa_memory_register", || {
        state::state()?;
        if size == 0 && !address.is_null() {
            bail!(Status::InvalidArgument, "size is 0");
        }
        Ok(Status::Success)
    })
}

/// `hsa_memory_deregister`: nothing to undo (see [`hsa_memory_register`]); SUCCESS, as ROCR
/// 5.2.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_memory_deregister(address: *mut c_void, size: usize) -> HsaStatus {
    let _ = (address, size);
    guard("hsa_memory_deregister", || {
        state::state()?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_pointer_info_set_userdata`: sets the `userData` `hsa_amd_pointer_info` reports for
/// the allocation (or lock) starting at `ptr`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL or an address that is not the start of a
/// runtime allocation or of locked memory (ROCR 5.2).
pub extern "C" fn hsa_amd_pointer_info_set_userdata(
    ptr: *const c_void,
    userdata: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_pointer_info_set_userdata", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        st.host()
            .set_user_data(st.rt(), ptr as u64, userdata as usize)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_register_deallocation_callback`: `callback(ptr, user_data)` is called when the
/// runtime allocation holding `ptr` is freed (`hsa_amd_memory_pool_free`, `hsa_memory_free`),
/// before it is.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `ptr` or `callback`;
/// `INVALID_ALLOCATION` when `ptr` is not inside a runtime allocation.
pub extern "C" fn hsa_amd_register_deallocation_callback(
    ptr: *mut c_void,
    callback: Option<DeallocationCallback>,
    user_data: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_register_deallocation_callback", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let user_data = user_data as usize;
        st.host().register_deallocation_callback(
            st.rt(),
            ptr as u64,
            callback as usize,
            // SAFETY: the application's callback with the signature it registered, its
            // pointer and data; the runtime holds no lock while it runs.
            Box::new(move |p| unsafe { callback(p as *mut c_void, user_data as *mut c_void) }),
        )?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_deregister_deallocation_callback`: removes every registration of `callback` for
/// `ptr`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `ptr` or `callback`, or when there is no
/// such registration.
pub extern "C" fn hsa_amd_deregister_deallocation_callback(
    ptr: *mut c_void,
    callback: Option<DeallocationCallback>,
) -> HsaStatus {
    guard("hsa_amd_deregister_deallocation_callback", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        st.host()
            .deregister_deallocation_callback(ptr as u64, callback as usize)?;
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_memory_lock,
    hsa_amd_memory_lock_to_pool,
    hsa_amd_memory_unlock,
    hsa_memory_register,
    hsa_memory_deregister,
    hsa_amd_pointer_info_set_userdata,
    hsa_amd_register_deallocation_callback,
    hsa_amd_deregister_deallocation_callback,
);
