//! Host memory the application already has, made reachable by the agents
//! (`hsa_amd_memory_lock`, `hsa_amd_memory_lock_to_pool`, `hsa_amd_memory_unlock`;
//! `hsa_memory_register`, `hsa_memory_deregister`), and what the runtime keeps about its own
//! allocations for the application (`hsa_amd_pointer_info_set_userdata`,
//! `hsa_amd_register_deallocation_callback`, `hsa_amd_deregister_deallocation_callback`).
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
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `format!`.
use std::format;

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Mutex;

use hsa_core::platform::{HostMemoryRegistration, MemoryChunk, Platform};
use hsa_core::runtime::PoolHandle;
use hsa_core::{bail, Error, GpuVa, NodeId, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, State};

/// Page size of registrations, bytes.
const PAGE: u64 = 4096;

/// `hsa_amd_deallocation_callback_t`: `void (*)(void* ptr, void* user_data)`.
pub type DeallocationCallback = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// One registered page range.
struct Registered {
    /// First page and end (page-aligned) of the host range.
    start: u64,
    end: u64,
    chunk: MemoryChunk,
    /// The GPU nodes it is mapped to.
    gpus: Vec<NodeId>,
    /// Locks using it.
    refs: u32,
}

/// One lock of the application.
struct Locked {
    /// The locked host pointer and size.
    ptr: u64,
    size: u64,
    /// Where the agents reach `ptr`.
    agent_ptr: u64,
    /// The host range of the registration it uses (`None` for runtime memory).
    registration: Option<(u64, u64)>,
}

/// A deallocation callback.
#[derive(Clone, Copy)]
struct Notifier {
    ptr: u64,
    callback: DeallocationCallback,
    user_data: usize,
}

#[derive(Default)]
struct Table {
    registrations: Vec<Registered>,
    locks: Vec<Locked>,
}

/// The host-memory state of one runtime.
#[derive(Default)]
pub(crate) struct HostMemory {
    table: Mutex<Table>,
    /// `hsa_amd_pointer_info_set_userdata`: base address → user data.
    user_data: Mutex<HashMap<u64, usize>>,
    /// `hsa_amd_register_deallocation_callback` registrations.
    notifiers: Mutex<Vec<Notifier>>,
    /// Base addresses of allocations being freed (their callbacks running): to the
    /// application they are gone already, as in ROCR 5.2 (`Runtime::FreeMemory`).
    freeing: Mutex<Vec<u64>>,
}

/// What `hsa_amd_pointer_info` reports for locked memory.
pub(crate) struct LockedInfo {
    /// The locked host pointer.
    pub(crate) base: u64,
    /// Where the agents reach it.
    pub(crate) agent_base: u64,
    /// The locked size, bytes.
    pub(crate) size: u64,
    /// `hsa_amd_pointer_info_set_userdata` of the base.
    pub(crate) user_data: usize,
    /// The GPU nodes that reach it.
    pub(crate) gpus: Vec<NodeId>,
}

impl HostMemory {
    /// Deregisters everything still registered (the runtime is going).
    pub(crate) fn shut_down(&self, st: &State) {
        let mut t = lock(&self.table);
        t.locks.clear();
        for r in std::mem::take(&mut t.registrations) {
            // SAFETY: a registration of this platform, used by no lock any more; queues that
            // might still read it are destroyed after (the runtime is shutting down and
            // kernels using locked memory must have completed, as for hsa_amd_memory_unlock).
            let _ = unsafe { st.platform_ref().deregister_host_memory(&r.chunk) };
        }
    }

    /// The user data set for the allocation at `base`, 0 when none.
    pub(crate) fn user_data(&self, base: u64) -> usize {
        lock(&self.user_data).get(&base).copied().unwrap_or(0)
    }

    /// Called before the runtime frees its allocation `[base, base + size)`: marks it as being
    /// freed, runs the deallocation callbacks registered inside it (then forgets them) and
    /// forgets its user data; [`HostMemory::after_free`] ends the mark. `false` (nothing done)
    /// when the allocation is being freed already: a callback frees it again, which ROCR 5.2
    /// answers with `INVALID_ALLOCATION` (the allocation left its map before the callbacks
    /// ran).
    pub(crate) fn before_free(&self, base: u64, size: u64) -> bool {
        {
            let mut f = lock(&self.freeing);
            if f.contains(&base) {
                return false;
            }
            f.push(base);
        }
        let due: Vec<Notifier> = {
            let mut n = lock(&self.notifiers);
            let (due, keep) = std::mem::take(&mut *n)
                .into_iter()
                .partition(|x| x.ptr >= base && x.ptr - base < size.max(1));
            *n = keep;
            due
        };
        lock(&self.user_data).remove(&base);
        for x in due {
            // SAFETY: the application's callback with the signature it registered, its
            // pointer and data; no lock is held.
            unsafe { (x.callback)(x.ptr as *mut c_void, x.user_data as *mut c_void) };
        }
        true
    }

    /// Called after the runtime freed (or failed to free) the allocation at `base` that
    /// [`HostMemory::before_free`] marked: ends the mark.
    pub(crate) fn after_free(&self, base: u64) {
        lock(&self.freeing).retain(|&b| b != base);
    }

    /// The lock whose host or agent range contains `ptr`, for `hsa_amd_pointer_info`.
    pub(crate) fn locked_info(&self, ptr: u64) -> Option<LockedInfo> {
        let t = lock(&self.table);
        let inside = |base: u64, size: u64| ptr >= base && ptr - base < size;
        t.locks
            .iter()
            .rev()
            .find(|l| {
                l.registration.is_some() && (inside(l.ptr, l.size) || inside(l.agent_ptr, l.size))
            })
            .map(|l| LockedInfo {
                base: l.ptr,
                agent_base: l.agent_ptr,
                size: l.size,
                user_data: self.user_data(l.ptr),
                gpus: l
                    .registration
                    .and_then(|(start, end)| {
                        t.registrations
                            .iter()
                            .find(|r| r.start == start && r.end == end)
                    })
                    .map(|r| r.gpus.clone())
                    .unwrap_or_default(),
            })
    }

    /// The host address of `len` bytes at `ptr` when they lie in a lock's agent range (the
    /// copy engine reaches locked memory through the host mapping); `None` otherwise.
    pub(crate) fn agent_to_host(&self, ptr: u64, len: u64) -> Option<u64> {
        let t = lock(&self.table);
        t.locks.iter().rev().find_map(|l| {
            let offset = ptr.checked_sub(l.agent_ptr)?;
            (l.registration.is_some() && offset.checked_add(len)? <= l.size)
                .then_some(l.ptr + offset)
        })
    }
}

/// Makes `[ptr, ptr + size)` reachable by the GPU agents of `gpus` (nodes); returns the agent
/// pointer.
fn lock_range(st: &State, ptr: u64, size: u64, gpus: &[NodeId]) -> Result<u64, Error> {
    let ext = &st.ext.host;
    if st.rt().pointer_info(GpuVa(ptr)).is_ok() {
        // The runtime's own memory: already reachable, at its address.
        lock(&ext.table).locks.push(Locked {
            ptr,
            size,
            agent_ptr: ptr,
            registration: None,
        });
        return Ok(ptr);
    }
    let start = ptr / PAGE * PAGE;
    let end = ptr
        .checked_add(size)
        .and_then(|e| e.checked_next_multiple_of(PAGE))
        .ok_or_else(|| {
            hsa_core::error!(Status::InvalidArgument, "{size} bytes at {ptr:#x} overflow")
        })?;
    let mut t = lock(&ext.table);
    let shared = t
        .registrations
        .iter_mut()
        .find(|r| r.start == start && r.end == end);
    let agent_base = match shared {
        Some(r) => {
            // The GPUs this lock adds reach the shared registration too (libhsakmt maps a
            // registered range again for the nodes asked).
            let more: Vec<NodeId> = gpus
                .iter()
                .copied()
                .filter(|g| !r.gpus.contains(g))
                .collect();
            if !more.is_empty() {
                st.platform_ref()
                    .map_memory(&r.chunk, &more)
                    .map_err(|e| e.context(&format!("locking {size} bytes at {ptr:#x}")))?;
                r.gpus.extend(more);
            }
            r.refs += 1;
            r.chunk.gpu_va.0
        }
        None => {
            let host = NonNull::new(start as *mut u8)
                .ok_or_else(|| hsa_core::error!(Status::InvalidArgument, "address 0"))?;
            // SAFETY: the application's memory, which it keeps mapped while locked
            // (hsa_amd_memory_lock's contract).
            let chunk = unsafe {
                st.platform_ref()
                    .register_host_memory(host, end - start, gpus)
            }
            .map_err(|e| e.context(&format!("locking {size} bytes at {ptr:#x}")))?;
            let base = chunk.gpu_va.0;
            t.registrations.push(Registered {
                start,
                end,
                chunk,
                gpus: gpus.to_vec(),
                refs: 1,
            });
            base
        }
    };
    let agent_ptr = agent_base + (ptr - start);
    t.locks.push(Locked {
        ptr,
        size,
        agent_ptr,
        registration: Some((start, end)),
    });
    Ok(agent_ptr)
}

/// Undoes the most recent lock of `ptr`; whether there was one.
fn unlock_range(st: &State, ptr: u64) -> bool {
    let mut t = lock(&st.ext.host.table);
    let Some(i) = t.locks.iter().rposition(|l| l.ptr == ptr) else {
        return false;
    };
    let l = t.locks.remove(i);
    let Some((start, end)) = l.registration else {
        return true;
    };
    let Some(j) = t
        .registrations
        .iter()
        .position(|r| r.start == start && r.end == end)
    else {
        return true;
    };
    t.registrations[j].refs -= 1;
    if t.registrations[j].refs == 0 {
        let r = t.registrations.remove(j);
        // SAFETY: a registration of this platform that no lock uses any more; the application
        // does not use the memory from agents after unlocking it.
        if let Err(e) = unsafe { st.platform_ref().deregister_host_memory(&r.chunk) } {
            super::log_error("hsa_amd_memory_unlock", &e);
        }
    }
    true
}

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
        let p = lock_range(&st, host_ptr as u64, size as u64, &gpus)?;
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
        let p = lock_range(&st, host_ptr as u64, size as u64, &gpus)?;
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
        unlock_range(&st, host_ptr as u64);
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

/// The allocation of the runtime holding `ptr`: (base, size).
fn allocation_of(st: &State, ptr: u64) -> Option<(u64, u64)> {
    st.rt()
        .pointer_info(GpuVa(ptr))
        .ok()
        .map(|p| (p.allocation.va.0, p.allocation.size_bytes))
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
        let p = ptr as u64;
        let is_base = allocation_of(&st, p).is_some_and(|(base, _)| base == p)
            || st.ext.host.locked_info(p).is_some_and(|l| l.base == p);
        if !is_base {
            bail!(
                Status::InvalidArgument,
                "{p:#x} is not the start of an allocation or of locked memory"
            );
        }
        lock(&st.ext.host.user_data).insert(p, userdata as usize);
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
        if allocation_of(&st, ptr as u64).is_none() {
            bail!(
                Status::InvalidAllocation,
                "{ptr:p} is not inside an allocation of this runtime"
            );
        }
        lock(&st.ext.host.notifiers).push(Notifier {
            ptr: ptr as u64,
            callback,
            user_data: user_data as usize,
        });
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
        let mut n = lock(&st.ext.host.notifiers);
        let before = n.len();
        n.retain(|x| !(x.ptr == ptr as u64 && x.callback as usize == callback as usize));
        if n.len() == before {
            bail!(
                Status::InvalidArgument,
                "no deallocation callback {:#x} is registered for {ptr:p}",
                callback as usize
            );
        }
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
