//! Memory and signals shared between processes (`hsa_amd_ipc_memory_create`,
//! `hsa_amd_ipc_memory_attach`, `hsa_amd_ipc_memory_detach`, `hsa_amd_ipc_signal_create`,
//! `hsa_amd_ipc_signal_attach`; `hsa_ext_amd.h`).
//!
//! Sharing goes through the platform ([`MemorySharing::export_memory`],
//! [`MemorySharing::import_memory`]): on Linux, KFD exports the buffer object holding the memory as
//! a dma-buf, which the attaching process takes from the exporter (`pidfd_getfd`), imports
//! (KFD `IMPORT_DMABUF`) and maps for its agents and its host, at a device address that is
//! also the host address. Both processes then reach the same pages, as two processes sharing
//! one GPU; on the emulated device too, where each process has its own device and the
//! pages are the memfd behind the exporter's buffer object.
//!
//! A pool allocation lies inside a larger chunk of the pool (2 MiB at least, see
//! `hsa_core::memory::pool`); the whole chunk is exported, and the handle names the
//! allocation's place in it, as ROCR 5.2 shares the block around a fragment. The export lasts
//! while the chunk does: after `hsa_amd_memory_pool_free` of the allocation the handle may
//! still attach (the pool may keep the chunk) but names memory the exporter may reuse;
//! once the chunk is gone, attaching is `INVALID_ARGUMENT`.
//!
//! An IPC signal (`hsa_amd_signal_create` with `HSA_AMD_SIGNAL_IPC`) is an `amd_signal_t` in
//! a page of shareable system memory of its own ([`Signal::in_chunk`]); attaching imports that
//! page and makes a signal over the same `amd_signal_t`. Such signals have no event (an event
//! is one process's): a blocked wait polls the value with backoff
//! (`hsa_core::signal::wait_value`), in the exporter and in the attached process alike.
//!
//! The 32-byte handles (`hsa_amd_ipc_memory_t`, `hsa_amd_ipc_signal_t`: eight `u32`) hold:
//! words 0–3, the platform's description of the export ([`SharedMemory::token`]: on Linux the
//! exporter's pid, its dma-buf descriptor and the dma-buf's inode number); word 4, the chunk's
//! size in 4096-byte pages; word 5, the allocation's offset in the chunk, pages; word 6, the
//! allocation's size, pages; word 7, [`MEMORY_MAGIC`] or [`SIGNAL_MAGIC`]. A handle whose
//! words do not hold that (zeros, another runtime's, a signal handle given as a memory handle)
//! or whose export is gone is `INVALID_ARGUMENT`, ROCR 5.2's status for a handle the driver
//! refuses.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use hsa_core::platform::{
    MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, MemorySharing, Platform, SharedMemory,
};
use hsa_core::signal::Signal;
use hsa_core::{bail, Error, GpuVa, NodeId, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, Sig, State};

/// `hsa_amd_ipc_memory_t`: eight 32-bit words.
pub type IpcMemory = [u32; 8];
/// `hsa_amd_ipc_signal_t`: the same.
pub type IpcSignal = [u32; 8];

/// Word 7 of a memory handle of this runtime (`"IPCM"`).
pub const MEMORY_MAGIC: u32 = u32::from_le_bytes(*b"IPCM");
/// Word 7 of a signal handle of this runtime (`"IPCS"`).
pub const SIGNAL_MAGIC: u32 = u32::from_le_bytes(*b"IPCS");

/// Page size of the handles' sizes and offsets, bytes.
const PAGE: u64 = 4096;

/// ROCR 5.2's largest `len` for `hsa_amd_ipc_memory_create` (`IPCCreate`), bytes.
const MAX_LEN: u64 = 0x7FF_FFFF_F000;

/// One attachment of this process (`hsa_amd_ipc_memory_attach`).
struct Attached {
    /// The imported chunk.
    chunk: MemoryChunk,
}

/// The IPC state of one runtime: what this process attached.
#[derive(Default)]
pub(crate) struct Ipc {
    /// Attached address (what `hsa_amd_ipc_memory_attach` returned) → its attachment.
    attached: Mutex<BTreeMap<u64, Attached>>,
}

impl Ipc {
    /// Detaches everything still attached (the runtime is going).
    pub(crate) fn shut_down(&self, st: &State) {
        for (_, a) in std::mem::take(&mut *lock(&self.attached)) {
            // SAFETY: an import of this platform, which only this table held; the
            // application's use of it ends with hsa_shut_down.
            let _ = unsafe { st.platform_ref().free_memory(&a.chunk) };
        }
    }
}

/// A handle's words for an export of `shared` where the shared range starts `offset` bytes
/// into the chunk and is `len` bytes long.
fn encode(shared: &SharedMemory, offset: u64, len: u64, magic: u32) -> Result<[u32; 8], Error> {
    let pages = |bytes: u64, what: &str| {
        u32::try_from(bytes.div_ceil(PAGE)).map_err(|_| {
            hsa_core::error!(
                Status::InvalidArgument,
                "{what} of {bytes} bytes does not fit an IPC handle"
            )
        })
    };
    let [t0, t1, t2, t3] = shared.token;
    Ok([
        t0,
        t1,
        t2,
        t3,
        pages(shared.size_bytes, "a chunk")?,
        pages(offset, "an offset")?,
        pages(len, "a length")?,
        magic,
    ])
}

/// What a handle's words say: the export, and the shared range's offset and length in bytes.
fn decode(words: &[u32; 8], magic: u32, what: &str) -> Result<(SharedMemory, u64, u64), Error> {
    let [t0, t1, t2, t3, chunk_pages, offset_pages, len_pages, m] = *words;
    if m != magic {
        bail!(
            Status::InvalidArgument,
            "{what} handle word 7 is {m:#x}, not {magic:#x}: not a {what} handle of this runtime"
        );
    }
    if chunk_pages == 0
        || len_pages == 0
        || u64::from(offset_pages) + u64::from(len_pages) > u64::from(chunk_pages)
    {
        bail!(
            Status::InvalidArgument,
            "{what} handle names {len_pages} pages at page {offset_pages} of a chunk of \
             {chunk_pages} pages"
        );
    }
    Ok((
        SharedMemory {
            token: [t0, t1, t2, t3],
            size_bytes: u64::from(chunk_pages) * PAGE,
        },
        u64::from(offset_pages) * PAGE,
        u64::from(len_pages) * PAGE,
    ))
}

/// The pool chunk holding `[va, va + len)`.
fn chunk_of(st: &State, va: u64, len: u64) -> Option<MemoryChunk> {
    let mut found = None;
    for p in st.rt().pools() {
        if let Some(mp) = p.memory_pool() {
            mp.for_each_chunk(|c| {
                let start = c.gpu_va.0;
                if va >= start
                    && (va - start)
                        .checked_add(len)
                        .is_some_and(|end| end <= c.size_bytes)
                {
                    found = Some(*c);
                }
            });
        }
        if found.is_some() {
            break;
        }
    }
    found
}

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
        let va = ptr as u64;
        let len = len as u64;
        if len > MAX_LEN {
            bail!(
                Status::InvalidArgument,
                "len {len} is above the largest shareable size {MAX_LEN}"
            );
        }
        let info = st.rt().pointer_info(GpuVa(va)).map_err(|_| {
            hsa_core::error!(
                Status::InvalidArgument,
                "{ptr:p} is not memory this runtime allocated"
            )
        })?;
        let a = info.allocation;
        if a.va.0 != va {
            bail!(
                Status::InvalidArgument,
                "{ptr:p} is inside the allocation at {:#x}: only an allocation's start can be \
                 shared",
                a.va.0
            );
        }
        if len == 0 || len.div_ceil(PAGE) != a.size_bytes.div_ceil(PAGE) {
            bail!(
                Status::InvalidArgument,
                "len {len} is not the size of the allocation at {ptr:p} ({} bytes)",
                a.size_bytes
            );
        }
        let chunk = chunk_of(&st, va, a.size_bytes).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidArgument,
                "no pool chunk holds the allocation at {ptr:p}"
            )
        })?;
        let shared = st.platform_ref().export_memory(&chunk)?;
        let words = encode(&shared, va - chunk.gpu_va.0, a.size_bytes, MEMORY_MAGIC)?;
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
/// freed the memory or exited) or cannot be taken (see [`MemorySharing::import_memory`]);
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
        let (shared, offset, shared_len) = decode(&words, MEMORY_MAGIC, "IPC memory")?;
        let len = len as u64;
        if len == 0 || len > shared_len {
            bail!(
                Status::InvalidArgument,
                "len {len} is not within the {shared_len} shared bytes"
            );
        }
        let chunk = st.platform_ref().import_memory(&shared, &nodes)?;
        let ptr = chunk.gpu_va.0 + offset;
        lock(&st.ext.ipc.attached).insert(ptr, Attached { chunk });
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
        let Some(a) = lock(&st.ext.ipc.attached).remove(&(mapped_ptr as u64)) else {
            bail!(
                Status::InvalidArgument,
                "{mapped_ptr:p} is not IPC memory attached by this process"
            );
        };
        // SAFETY: an import of this platform, just taken out of the table that alone held it;
        // detaching ends the application's use (hsa_ext_amd.h).
        unsafe { st.platform_ref().free_memory(&a.chunk) }?;
        Ok(Status::Success)
    })
}

/// A new IPC signal with `initial` (`hsa_amd_signal_create` with `HSA_AMD_SIGNAL_IPC`): a page
/// of shareable system memory of the first CPU node holding the `amd_signal_t`.
///
/// # Errors
/// `Status::OutOfResources` (or the platform's status) when the page cannot be allocated.
pub(crate) fn create_signal(st: &State, initial: i64) -> Result<Sig, Error> {
    let node = st.rt().first_cpu().map_or(0, |a| a.node());
    let request = MemoryRequest {
        node: NodeId(node),
        kind: MemoryKind::System,
        size_bytes: PAGE,
        align_bytes: PAGE,
        flags: MemoryFlags::HOST_ACCESS
            | MemoryFlags::FINE_GRAINED
            | MemoryFlags::UNCACHED
            | MemoryFlags::SHAREABLE,
    };
    let platform = st.platform_ref();
    let chunk = platform.allocate_memory(&request)?;
    // SAFETY: a chunk this platform just allocated, handed to the signal, which alone uses
    // and frees it.
    match unsafe { Signal::in_chunk(platform.clone(), chunk, Some(initial)) } {
        Ok(s) => Ok(s),
        Err(e) => {
            // SAFETY: just allocated, never shared.
            let _ = unsafe { platform.free_memory(&chunk) };
            Err(e)
        }
    }
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
        let Some(chunk) = s.own_chunk() else {
            bail!(
                Status::InvalidArgument,
                "signal {signal:#x} was not created with HSA_AMD_SIGNAL_IPC"
            );
        };
        let shared = st.platform_ref().export_memory(chunk)?;
        let offset = signal - chunk.gpu_va.0;
        let words = encode(&shared, offset, PAGE, SIGNAL_MAGIC)?;
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
        let (shared, offset, _) = decode(&words, SIGNAL_MAGIC, "IPC signal")?;
        if offset != 0 {
            bail!(
                Status::InvalidArgument,
                "IPC signal handle names offset {offset}: a signal starts its page"
            );
        }
        let gpus: Vec<NodeId> = st
            .rt()
            .agents()
            .iter()
            .filter(|a| a.is_gpu())
            .map(|a| NodeId(a.node()))
            .collect();
        let platform = st.platform_ref();
        let chunk = platform.import_memory(&shared, &gpus)?;
        // SAFETY: a chunk this platform just imported, handed to the signal, which alone uses
        // and frees it.
        let s = match unsafe { Signal::in_chunk(platform.clone(), chunk, None) } {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: just imported, never shared.
                let _ = unsafe { platform.free_memory(&chunk) };
                return Err(e);
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_reject_other_words() {
        let shared = SharedMemory {
            token: [41, 7, 0xdead_beef, 1],
            size_bytes: 2 << 20,
        };
        let w = encode(&shared, 8192, 4096, MEMORY_MAGIC).unwrap();
        assert_eq!(w, [41, 7, 0xdead_beef, 1, 512, 2, 1, 0x4d43_5049]);
        assert_eq!(
            decode(&w, MEMORY_MAGIC, "IPC memory").unwrap(),
            (shared, 8192, 4096)
        );
        let e = decode(&w, SIGNAL_MAGIC, "IPC signal").unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = decode(&[0; 8], MEMORY_MAGIC, "IPC memory").unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let mut past = w;
        past[5] = 512; // offset at the chunk's end
        let e = decode(&past, MEMORY_MAGIC, "IPC memory").unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
    }
}
