//! Memory and signals shared between processes (`hsa_amd_ipc_memory_create`, `_attach`,
//! `_detach`, `hsa_amd_ipc_signal_create`, `_attach`; `hsa_ext_amd.h`): [`Ipc`].
//!
//! Sharing goes through the platform's [`MemorySharing`] capability: on Linux, KFD exports the
//! buffer object holding the memory as a dma-buf, which the attaching process takes from the
//! exporter (`pidfd_getfd`), imports (KFD `IMPORT_DMABUF`) and maps for its agents and its
//! host, at a device address that is also the host address. Both processes then reach the same
//! pages, as two processes sharing one GPU; on the emulated device too, where each process has
//! its own device and the pages are the memfd behind the exporter's buffer object. A platform
//! without the capability refuses with `Status::InvalidArgument`, ROCR's status when the driver
//! cannot share memory.
//!
//! A pool allocation lies inside a larger chunk of the pool (2 MiB at least, see
//! `hsa_core::memory::pool`); the whole chunk is exported, and the handle names the
//! allocation's place in it, as ROCR 5.2 shares the block around a fragment. The export lasts
//! while the chunk does: after the allocation is freed the handle may still attach (the pool
//! may keep the chunk) but names memory the exporter may reuse; once the chunk is gone,
//! attaching is `INVALID_ARGUMENT`.
//!
//! An IPC signal is an `amd_signal_t` in a page of shareable system memory of its own
//! ([`Signal::in_chunk`]); attaching imports that page and makes a signal over the same
//! `amd_signal_t`. Such signals have no event (an event is one process's): a blocked wait polls
//! the value with backoff, in the exporter and in the attached process alike.
//!
//! The 32-byte handles ([`IpcHandle`]: `hsa_amd_ipc_memory_t`, `hsa_amd_ipc_signal_t`, eight
//! `u32`) hold: words 0–3, the platform's description of the export ([`SharedMemory::token`]:
//! on Linux the exporter's pid, its dma-buf descriptor and the dma-buf's inode number); word 4,
//! the chunk's size in 4096-byte pages; word 5, the allocation's offset in the chunk, pages;
//! word 6, the allocation's size, pages; word 7, [`MEMORY_MAGIC`] or [`SIGNAL_MAGIC`]. A
//! handle whose words do not hold that (zeros, another runtime's, a signal handle given as a
//! memory handle) or whose export is gone is `INVALID_ARGUMENT`, ROCR 5.2's status for a handle
//! the driver refuses.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hsa_core::platform::{
    MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, MemorySharing, Platform, SharedMemory,
};
use hsa_core::runtime::Runtime;
use hsa_core::signal::Signal;
use hsa_core::{bail, Error, GpuVa, NodeId, Status};

use crate::{lock, Sig};

/// `hsa_amd_ipc_memory_t` and `hsa_amd_ipc_signal_t`: eight 32-bit words (module docs).
pub type IpcHandle = [u32; 8];

/// Word 7 of a memory handle of this runtime (`"IPCM"`).
pub const MEMORY_MAGIC: u32 = u32::from_le_bytes(*b"IPCM");
/// Word 7 of a signal handle of this runtime (`"IPCS"`).
pub const SIGNAL_MAGIC: u32 = u32::from_le_bytes(*b"IPCS");

/// Page size of the handles' sizes and offsets, bytes.
const PAGE: u64 = 4096;

/// ROCR 5.2's largest length for `hsa_amd_ipc_memory_create` (`IPCCreate`), bytes.
pub const MAX_LEN: u64 = 0x7FF_FFFF_F000;

/// The IPC state of one runtime: what this process attached (module docs).
pub struct Ipc<P: Platform + 'static> {
    rt: Arc<Runtime<Arc<P>>>,
    /// Attached address (what [`Ipc::attach_memory`] returned) → the imported chunk.
    attached: Mutex<BTreeMap<u64, MemoryChunk>>,
}

impl<P: Platform + 'static> std::fmt::Debug for Ipc<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipc")
            .field("attached", &lock(&self.attached).len())
            .finish_non_exhaustive()
    }
}

/// The platform's sharing capability, or ROCR's status when it has none.
fn sharing<'a, P: Platform>(platform: &'a P, what: &str) -> Result<&'a dyn MemorySharing, Error> {
    platform.capabilities().sharing.ok_or_else(|| {
        hsa_core::error!(
            Status::InvalidArgument,
            "{what}: the {} platform cannot share memory with other processes",
            platform.device_name()
        )
    })
}

/// A handle's words for an export of `shared` where the shared range starts `offset` bytes
/// into the chunk and is `len` bytes long.
///
/// # Errors
/// `Status::InvalidArgument` when a size does not fit the handle's words.
pub fn encode(
    shared: &SharedMemory,
    offset: u64,
    len: u64,
    magic: u32,
) -> Result<IpcHandle, Error> {
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
///
/// # Errors
/// `Status::InvalidArgument` for another magic or a range outside the chunk.
pub fn decode(
    words: &IpcHandle,
    magic: u32,
    what: &str,
) -> Result<(SharedMemory, u64, u64), Error> {
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

impl<P: Platform + 'static> Ipc<P> {
    /// Nothing attached yet.
    pub fn new(rt: Arc<Runtime<Arc<P>>>) -> Ipc<P> {
        Ipc {
            rt,
            attached: Mutex::new(BTreeMap::new()),
        }
    }

    /// The pool chunk holding `[va, va + len)`.
    fn chunk_of(&self, va: u64, len: u64) -> Option<MemoryChunk> {
        let mut found = None;
        for p in self.rt.pools() {
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

    /// A handle through which other processes attach the allocation at `ptr` (`len` bytes:
    /// its size, as `hsa_amd_ipc_memory_create` takes it).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a `len` above [`MAX_LEN`], a `ptr` that is not the start
    /// of a pool allocation of this runtime, a `len` other than the allocation's size (rounded
    /// to pages), or memory the platform cannot share (system memory of a pool, not shareable
    /// on Linux; every allocation of a platform without [`MemorySharing`]).
    pub fn create_memory_handle(&self, ptr: u64, len: u64) -> Result<IpcHandle, Error> {
        if len > MAX_LEN {
            bail!(
                Status::InvalidArgument,
                "len {len} is above the largest shareable size {MAX_LEN}"
            );
        }
        let info = self.rt.pointer_info(GpuVa(ptr)).map_err(|_| {
            hsa_core::error!(
                Status::InvalidArgument,
                "{ptr:#x} is not memory this runtime allocated"
            )
        })?;
        let a = info.allocation;
        if a.va.0 != ptr {
            bail!(
                Status::InvalidArgument,
                "{ptr:#x} is inside the allocation at {:#x}: only an allocation's start can be \
                 shared",
                a.va.0
            );
        }
        if len == 0 || len.div_ceil(PAGE) != a.size_bytes.div_ceil(PAGE) {
            bail!(
                Status::InvalidArgument,
                "len {len} is not the size of the allocation at {ptr:#x} ({} bytes)",
                a.size_bytes
            );
        }
        let chunk = self.chunk_of(ptr, a.size_bytes).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidArgument,
                "no pool chunk holds the allocation at {ptr:#x}"
            )
        })?;
        let what = format!("{} bytes at {}", chunk.size_bytes, chunk.gpu_va);
        let shared = sharing(self.rt.platform(), &what)?.export_memory(&chunk)?;
        encode(&shared, ptr - chunk.gpu_va.0, a.size_bytes, MEMORY_MAGIC)
    }

    /// Maps the memory of `handle` (another process's, or this one's) into this process for
    /// the agents of `nodes` and the host; returns its address, for the agents and the host
    /// alike (`hsa_amd_ipc_memory_attach`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a `len` of 0 or beyond the shared allocation, a handle
    /// that is not a memory handle of this runtime, or whose export is gone (the exporter
    /// freed the memory or exited) or cannot be taken; `Status::OutOfResources` when it cannot
    /// be mapped.
    pub fn attach_memory(
        &self,
        handle: &IpcHandle,
        len: u64,
        nodes: &[NodeId],
    ) -> Result<u64, Error> {
        let (shared, offset, shared_len) = decode(handle, MEMORY_MAGIC, "IPC memory")?;
        if len == 0 || len > shared_len {
            bail!(
                Status::InvalidArgument,
                "len {len} is not within the {shared_len} shared bytes"
            );
        }
        let what = format!("{} shared bytes", shared.size_bytes);
        let chunk = sharing(self.rt.platform(), &what)?.import_memory(&shared, nodes)?;
        let ptr = chunk.gpu_va.0 + offset;
        lock(&self.attached).insert(ptr, chunk);
        Ok(ptr)
    }

    /// Ends an attachment of this process (the memory stays the exporter's;
    /// `hsa_amd_ipc_memory_detach`).
    ///
    /// # Safety
    /// Nothing of this process (host or agent) uses the attached memory any more.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an address [`Ipc::attach_memory`] did not return (or that
    /// was detached already), as ROCR 5.2; the platform's error freeing the import.
    pub unsafe fn detach_memory(&self, ptr: u64) -> Result<(), Error> {
        let Some(chunk) = lock(&self.attached).remove(&ptr) else {
            bail!(
                Status::InvalidArgument,
                "{ptr:#x} is not IPC memory attached by this process"
            );
        };
        // SAFETY: an import of this platform, just taken out of the table that alone held it;
        // nothing uses it (this function's contract).
        unsafe { self.rt.platform().free_memory(&chunk) }
    }

    /// A new IPC signal with value `initial`: a page of shareable system memory of the first
    /// CPU node holding the `amd_signal_t` (`hsa_amd_signal_create` with
    /// `HSA_AMD_SIGNAL_IPC`); it has no event.
    ///
    /// # Errors
    /// `Status::OutOfResources` (or the platform's status) when the page cannot be allocated.
    pub fn create_signal(&self, initial: i64) -> Result<Sig<P>, Error> {
        let node = self.rt.first_cpu().map_or(0, |a| a.node());
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
        let platform = self.rt.platform_ref();
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

    /// A handle through which other processes attach `signal`, which must be an IPC signal
    /// ([`Ipc::create_signal`]; `hsa_amd_ipc_signal_create`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a signal that is not an IPC signal (as ROCR 5.2's
    /// `IPCSignal::CreateHandle`), or memory the platform cannot share.
    pub fn create_signal_handle(&self, signal: &Sig<P>) -> Result<IpcHandle, Error> {
        let handle = signal.handle().0;
        let Some(chunk) = signal.own_chunk() else {
            bail!(
                Status::InvalidArgument,
                "signal {handle:#x} was not created with HSA_AMD_SIGNAL_IPC"
            );
        };
        let what = format!("{} bytes at {}", chunk.size_bytes, chunk.gpu_va);
        let shared = sharing(self.rt.platform(), &what)?.export_memory(chunk)?;
        encode(&shared, handle - chunk.gpu_va.0, PAGE, SIGNAL_MAGIC)
    }

    /// A signal of this process over the `amd_signal_t` of another process's IPC signal (or
    /// this one's), mapped for every GPU agent; dropping it ends the attachment
    /// (`hsa_amd_ipc_signal_attach`). It has no event: waits poll.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a handle that is not a signal handle of this runtime,
    /// whose export is gone, or whose memory holds no live signal; `Status::OutOfResources`
    /// when it cannot be mapped.
    pub fn attach_signal(&self, handle: &IpcHandle) -> Result<Sig<P>, Error> {
        let (shared, offset, _) = decode(handle, SIGNAL_MAGIC, "IPC signal")?;
        if offset != 0 {
            bail!(
                Status::InvalidArgument,
                "IPC signal handle names offset {offset}: a signal starts its page"
            );
        }
        let gpus: Vec<NodeId> = self
            .rt
            .agents()
            .iter()
            .filter(|a| a.is_gpu())
            .map(|a| NodeId(a.node()))
            .collect();
        let platform = self.rt.platform_ref();
        let what = format!("{} shared bytes", shared.size_bytes);
        let chunk = sharing(&**platform, &what)?.import_memory(&shared, &gpus)?;
        // SAFETY: a chunk this platform just imported, handed to the signal, which alone uses
        // and frees it.
        match unsafe { Signal::in_chunk(platform.clone(), chunk, None) } {
            Ok(s) => Ok(s),
            Err(e) => {
                // SAFETY: just imported, never shared.
                let _ = unsafe { platform.free_memory(&chunk) };
                Err(e)
            }
        }
    }

    /// Detaches everything still attached (the runtime is going).
    ///
    /// # Safety
    /// Nothing uses attached memory any more.
    pub unsafe fn shut_down(&self) {
        for (_, chunk) in std::mem::take(&mut *lock(&self.attached)) {
            // SAFETY: an import of this platform, which only this table held; unused (this
            // function's contract).
            let _ = unsafe { self.rt.platform().free_memory(&chunk) };
        }
    }
}

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
