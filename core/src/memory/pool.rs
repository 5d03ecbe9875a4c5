//! A memory pool: backing chunks from the platform plus a [`SubAllocator`] over them.
//!
//! The pool grows by asking [`Platform::allocate_memory`] for a chunk of at least
//! [`DEFAULT_CHUNK_BYTES`] (or the request, granule-rounded, when larger) as long as the
//! pool's `size_bytes` allows, and gives a chunk back when its last allocation is freed
//! (keeping one empty chunk of at most [`DEFAULT_CHUNK_BYTES`] cached, so a pool that
//! allocates and frees one kernarg buffer per dispatch does not call the platform each time;
//! a larger chunk — made for one large allocation — goes back at once, so that its memory
//! does). Every chunk left is given back when the pool drops.
//!
//! All methods take `&self`: state sits behind a `spin::Mutex` held only for the
//! sub-allocator's bookkeeping, never across a platform call.
//!
//! An allocation with chunk flags beyond the pool's ([`MemoryPool::allocate_with_flags`]:
//! executable, contiguous) gets a chunk of its own, used whole and given back on free.
//!
//! Errors follow `hsa.h` (`hsa_memory_allocate`) and `hsa_ext_amd.h`
//! (`hsa_amd_memory_pool_allocate`), which agree: size 0 → `INVALID_ARGUMENT`; a pool without
//! runtime allocation, or a size above `ALLOC_MAX_SIZE` → `INVALID_ALLOCATION`; no memory →
//! `OUT_OF_RESOURCES`. Freeing or querying an address the pool never gave (or gave and took
//! back) → `INVALID_ARGUMENT` with the state unchanged (the headers call this undefined; we
//! detect it).

use crate::platform_ref::PlatformRef;
use core::fmt;
use core::ptr::NonNull;

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::addr::{GpuVa, NodeId, NodeMask};
use crate::memory::region::{AccessPermission, AgentAccess, GlobalFlags, PoolInfo, Segment};
#[cfg(not(feature = "alloc"))]
use crate::memory::suballoc::RANGE_CAPACITY;
use crate::memory::suballoc::{RangeId, SubAllocError, SubAllocator, DEFAULT_CAPACITY};
use crate::platform::{MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform};
use crate::status::{Error, Result, Status};

/// The smallest chunk a pool asks the platform for, bytes (2 MiB: one large page).
pub const DEFAULT_CHUNK_BYTES: u64 = 2 << 20;

/// The chunk flags that give an allocation a chunk of its own
/// ([`MemoryPool::allocate_with_flags`]).
const DEDICATED_FLAGS: MemoryFlags = MemoryFlags::EXECUTABLE.union(MemoryFlags::CONTIGUOUS);

/// Page size the platform works in, bytes (`MemoryRequest` sizes and alignments).
const PAGE_BYTES: u64 = 4096;

/// One allocation: its device address, host pointer when the pool is host-accessible, and
/// size. A plain description: freeing goes through [`MemoryPool::free`] (or use [`Buffer`]).
///
/// Ref: the `ptr` out-parameter of `hsa_amd_memory_pool_allocate`; `agentBaseAddress` /
/// `hostBaseAddress` / `sizeInBytes` of `hsa_amd_pointer_info_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Device address of the first byte (aligned to the pool's alignment).
    pub va: GpuVa,
    /// Host pointer to the first byte, when the host can touch the memory.
    pub host_ptr: Option<NonNull<u8>>,
    /// Size, bytes: the request rounded up to the pool's granule.
    pub size_bytes: u64,
}

/// What [`MemoryPool::pointer_info`] reports about an allocation.
///
/// Ref: `hsa_amd_pointer_info_t` (`hsa_ext_amd.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// The whole allocation the queried address lies in.
    pub allocation: Allocation,
    /// The pool's agent (`agentOwner`).
    pub pool_owner: NodeId,
    /// The agent that owns a coarse-grained buffer after `hsa_memory_assign_agent`, and the
    /// access it asked for; `None` before any assignment.
    pub assigned: Option<(NodeId, AccessPermission)>,
    /// The pool's global flags (`global_flags`).
    pub global_flags: GlobalFlags,
    /// The nodes given access with [`MemoryPool::allow_access`] or
    /// [`MemoryPool::assign_agent`].
    pub allowed_nodes: NodeMask,
}

/// A pool's byte totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes in live allocations (granule-rounded).
    pub in_use_bytes: u64,
    /// Bytes of chunks held from the platform.
    pub reserved_bytes: u64,
    /// Largest free block inside the chunks held, bytes (a larger request grows the pool).
    pub largest_free_block_bytes: u64,
    /// Live allocations.
    pub allocations: usize,
    /// Chunks held.
    pub chunks: usize,
}

/// Per-allocation bookkeeping kept in the sub-allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Meta {
    assigned: Option<(NodeId, AccessPermission)>,
    allowed_nodes: NodeMask,
}

#[derive(Debug)]
struct Inner<const N: usize> {
    sub: SubAllocator<Meta, N>,
    #[cfg(feature = "alloc")]
    chunks: Vec<Option<MemoryChunk>>,
    #[cfg(not(feature = "alloc"))]
    chunks: heapless::Vec<Option<MemoryChunk>, RANGE_CAPACITY>,
    cached_empty: Option<RangeId>,
    /// Ranges of chunks made for one allocation with extra flags
    /// ([`MemoryPool::allocate_with_flags`]): given back when that allocation is freed,
    /// never cached, never used for another allocation.
    #[cfg(feature = "alloc")]
    dedicated: Vec<RangeId>,
    #[cfg(not(feature = "alloc"))]
    dedicated: heapless::Vec<RangeId, RANGE_CAPACITY>,
    reserved_bytes: u64,
    /// Bytes being requested from the platform by threads outside the lock.
    pending_bytes: u64,
}

impl<const N: usize> Inner<N> {
    /// Bytes the pool holds or is asking the platform for: what counts against its size.
    fn committed_bytes(&self) -> u64 {
        self.reserved_bytes + self.pending_bytes
    }

    fn chunk(&self, range: RangeId) -> Option<MemoryChunk> {
        self.chunks.get(range.0 as usize).copied().flatten()
    }

    fn set_chunk(&mut self, range: RangeId, chunk: Option<MemoryChunk>) -> Result<()> {
        let i = range.0 as usize;
        while self.chunks.len() <= i {
            #[cfg(feature = "alloc")]
            self.chunks.push(None);
            #[cfg(not(feature = "alloc"))]
            if self.chunks.push(None).is_err() {
                crate::bail!(
                    Status::OutOfResources,
                    "pool holds {RANGE_CAPACITY} chunks already"
                );
            }
        }
        self.chunks[i] = chunk;
        Ok(())
    }
}

/// A memory pool (AMD) or region (HSA) of one agent: see the module doc.
///
/// `H` is how the pool reaches the platform ([`PlatformRef`]: `&P`, `Arc<P>`). `N` is the record capacity without `alloc` (a power of two; see
/// [`SubAllocator`]).
///
/// Dropping the pool gives every chunk back to the platform, ending all allocations still
/// live: whoever owns the pool (the runtime) destroys queues that use its memory first.
/// # Example
/// The runtime's fine-grained system-memory pool of the fake platform's CPU agent:
/// ```
/// use hsa_core::memory::GlobalFlags;
/// use hsa_core::platform::fake::FakePlatform;
/// use hsa_core::runtime::Runtime;
///
/// let platform = FakePlatform::new();
/// let rt = Runtime::new(&platform)?;
/// let cpu = rt.first_cpu().expect("a CPU agent");
/// let pool = rt.find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED).expect("system memory");
/// let pool = pool.memory_pool().expect("runtime allocation is allowed");
/// let a = pool.allocate(100)?; // rounded up to the pool's granule
/// assert_eq!(a.size_bytes, pool.info().alloc_granule_bytes);
/// assert!(a.host_ptr.is_some());
/// pool.free(a.va)?;
/// // Freed already: refused, naming the address.
/// assert_eq!(pool.free(a.va).unwrap_err().status(), hsa_core::Status::InvalidArgument);
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct MemoryPool<H, const N: usize = DEFAULT_CAPACITY>
where
    H: PlatformRef,
{
    platform: H,
    info: PoolInfo,
    alignment_bytes: u64,
    chunk_unit_bytes: u64,
    inner: spin::Mutex<Inner<N>>,
}

fn round_up(v: u64, align: u64) -> Option<u64> {
    Some(v.checked_add(align - 1)? & !(align - 1))
}

impl<H, const N: usize> MemoryPool<H, N>
where
    H: PlatformRef,
{
    /// A pool described by `info`, backed by `platform`. Reserves nothing yet.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `info` fails [`PoolInfo::validate`].
    pub fn new(platform: H, info: PoolInfo) -> Result<Self> {
        info.validate()?;
        let alignment_bytes = info.effective_alignment_bytes();
        let sub = SubAllocator::new(info.alloc_granule_bytes).map_err(|_| {
            crate::error!(
                Status::InvalidArgument,
                "alloc_granule_bytes is {}",
                info.alloc_granule_bytes
            )
        })?;
        let chunk_unit_bytes = info.alloc_granule_bytes.max(PAGE_BYTES);
        Ok(MemoryPool {
            platform,
            info,
            alignment_bytes,
            chunk_unit_bytes,
            inner: spin::Mutex::new(Inner {
                sub,
                #[cfg(feature = "alloc")]
                chunks: Vec::new(),
                #[cfg(not(feature = "alloc"))]
                chunks: heapless::Vec::new(),
                cached_empty: None,
                #[cfg(feature = "alloc")]
                dedicated: Vec::new(),
                #[cfg(not(feature = "alloc"))]
                dedicated: heapless::Vec::new(),
                reserved_bytes: 0,
                pending_bytes: 0,
            }),
        })
    }

    /// The pool's attributes (what `hsa_amd_memory_pool_get_info` reports).
    pub fn info(&self) -> &PoolInfo {
        &self.info
    }

    /// The platform the pool allocates from.
    pub fn platform(&self) -> &H::Target {
        &self.platform
    }

    /// Allocates `size_bytes` (rounded up to the granule) at the pool's alignment (at least
    /// 16 bytes in a kernarg pool). Ref: `hsa_amd_memory_pool_allocate`, `hsa_memory_allocate`.
    ///
    /// # Errors
    /// - `Status::InvalidArgument`: `size_bytes` is 0.
    /// - `Status::InvalidAllocation`: the pool does not allow runtime allocation, or
    ///   `size_bytes` exceeds `alloc_max_size_bytes`.
    /// - `Status::OutOfResources`: growing would exceed `size_bytes` of the pool, or (without
    ///   `alloc`) record storage is full; the platform's status when it cannot give a chunk.
    pub fn allocate(&self, size_bytes: u64) -> Result<Allocation> {
        self.allocate_aligned(size_bytes, self.alignment_bytes)
    }

    /// As [`allocate`](Self::allocate) with a stricter alignment: `align_bytes` (a power of
    /// two) is raised to the pool's alignment.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate); also `Status::InvalidArgument` when `align_bytes` is
    /// not a power of two.
    pub fn allocate_aligned(&self, size_bytes: u64, align_bytes: u64) -> Result<Allocation> {
        let size = self.checked_size(size_bytes)?;
        if !align_bytes.is_power_of_two() {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [align_bytes],
                |&[align_bytes, ..], f| {
                    write!(f, "align_bytes is {align_bytes}; must be a power of two")
                },
            ));
        }
        let align = align_bytes.max(self.alignment_bytes);
        self.allocate_checked(size_bytes, size, align)
    }

    /// Allocates `size_bytes` with `extra` chunk flags (`hsa_amd_memory_pool_allocate`'s
    /// `HSA_AMD_MEMORY_POOL_EXECUTABLE_FLAG` and `HSA_AMD_MEMORY_POOL_CONTIGUOUS_FLAG`):
    /// [`MemoryFlags::EXECUTABLE`] and, in device-local memory, [`MemoryFlags::CONTIGUOUS`].
    /// As ROCR 7, which takes such an allocation straight from the driver (its fragment
    /// allocator serves ordinary memory only), the allocation gets a chunk of its own with the
    /// pool's flags plus `extra`, sized to whole pages and used whole; freeing it gives the
    /// chunk back at once. Other flags in `extra` are ignored; with none left, this is
    /// [`allocate`](Self::allocate).
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate); the platform's status when it cannot make the chunk
    /// (amdkfd before interface 1.16 refuses `CONTIGUOUS`: ROCR 7 returns that failure too).
    pub fn allocate_with_flags(&self, size_bytes: u64, extra: MemoryFlags) -> Result<Allocation> {
        let mut extra = extra & DEDICATED_FLAGS;
        if self.info.memory_kind != MemoryKind::DeviceLocal {
            extra.remove(MemoryFlags::CONTIGUOUS);
        }
        if extra.is_empty() {
            return self.allocate(size_bytes);
        }
        let size = self.checked_size(size_bytes)?;
        let bytes = round_up(size, self.chunk_unit_bytes).ok_or_else(|| {
            Error::lazy(Status::OutOfResources, [size], |&[size, ..], f| {
                write!(f, "size {size} too large")
            })
        })?;
        {
            let mut inner = self.inner.lock();
            let committed = inner.committed_bytes();
            if bytes > self.info.size_bytes.saturating_sub(committed) {
                return Err(Error::lazy(
                    Status::OutOfResources,
                    [self.info.size_bytes, committed, bytes],
                    |&[pool, committed, bytes, ..], f| {
                        write!(
                            f,
                            "pool of {pool} bytes has {committed} reserved; {bytes} more \
                             needed for a chunk of its own"
                        )
                    },
                ));
            }
            inner.pending_bytes += bytes;
        }
        let request = MemoryRequest {
            node: self.info.owner,
            kind: self.info.memory_kind,
            size_bytes: bytes,
            align_bytes: self.alignment_bytes.max(PAGE_BYTES),
            flags: self.info.chunk_flags | extra,
        };
        let got = self.platform.allocate_memory(&request);
        let mut inner = self.inner.lock();
        inner.pending_bytes -= bytes;
        let chunk = got.map_err(|e| e.context("allocating a chunk of its own"))?;
        // The whole chunk becomes the allocation under the one lock, so no other allocation
        // ever lands in it.
        let placed = Self::place_dedicated(&mut inner, &chunk, request.align_bytes);
        match placed {
            Ok(a) => Ok(a),
            Err(e) => {
                drop(inner);
                let _ = self.release(&chunk);
                Err(e)
            }
        }
    }

    /// Adds `chunk` as a dedicated range and allocates all of it. On error nothing of it is
    /// left in the tables (the caller gives the chunk back).
    fn place_dedicated(
        inner: &mut Inner<N>,
        chunk: &MemoryChunk,
        align: u64,
    ) -> Result<Allocation> {
        let bad = |e: SubAllocError| {
            Error::lazy(
                Status::OutOfResources,
                [chunk.gpu_va.get(), chunk.size_bytes, e as u64],
                |&[va, size, e, ..], f| {
                    write!(f, "cannot use chunk at {} of {size} bytes: ", GpuVa(va))?;
                    show_suballoc_error(e, f)
                },
            )
        };
        if !chunk.gpu_va.is_aligned(align) {
            return Err(bad(SubAllocError::BadArgument));
        }
        let range = inner
            .sub
            .add_range(chunk.gpu_va.get(), chunk.size_bytes)
            .map_err(bad)?;
        let grant = match inner.sub.allocate(chunk.size_bytes, align, Meta::default()) {
            Ok(g) => g,
            Err(e) => {
                let _ = inner.sub.remove_range(range);
                return Err(bad(e));
            }
        };
        let undo = |inner: &mut Inner<N>, e: Error| {
            let _ = inner.sub.free(grant.addr);
            let _ = inner.sub.remove_range(range);
            let _ = inner.set_chunk(range, None);
            e
        };
        if let Err(e) = inner.set_chunk(range, Some(*chunk)) {
            return Err(undo(inner, e));
        }
        #[cfg(feature = "alloc")]
        inner.dedicated.push(range);
        #[cfg(not(feature = "alloc"))]
        if inner.dedicated.push(range).is_err() {
            let e = crate::error!(
                Status::OutOfResources,
                "pool holds {RANGE_CAPACITY} chunks already"
            );
            return Err(undo(inner, e));
        }
        inner.reserved_bytes += chunk.size_bytes;
        Ok(allocation_in(chunk, grant.addr, grant.size))
    }

    /// `size_bytes` rounded up to the granule, after the checks every allocation makes.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate).
    fn checked_size(&self, size_bytes: u64) -> Result<u64> {
        if !self.info.runtime_alloc_allowed {
            return Err(Error::lazy(
                Status::InvalidAllocation,
                [
                    self.info.owner.get().into(),
                    self.info.segment.region_raw().into(),
                ],
                |&[node, segment, ..], f| {
                    write!(f, "pool of node {node} (")?;
                    match Segment::from_region_raw(segment as u32) {
                        Ok(s) => write!(f, "{s:?}")?,
                        Err(_) => write!(f, "{segment}")?,
                    }
                    write!(f, " segment) does not allow runtime allocation")
                },
            ));
        }
        if size_bytes == 0 {
            crate::bail!(
                Status::InvalidArgument,
                "size_bytes is 0; must be at least 1"
            );
        }
        if size_bytes > self.info.alloc_max_size_bytes {
            return Err(Error::lazy(
                Status::InvalidAllocation,
                [size_bytes, self.info.alloc_max_size_bytes],
                |&[size_bytes, max, ..], f| {
                    write!(
                        f,
                        "size_bytes is {size_bytes}; the pool's alloc_max_size_bytes is {max}"
                    )
                },
            ));
        }
        round_up(size_bytes, self.info.alloc_granule_bytes).ok_or_else(|| {
            Error::lazy(
                Status::InvalidAllocation,
                [size_bytes],
                |&[size_bytes, ..], f| {
                    write!(
                        f,
                        "size_bytes {size_bytes} overflows when rounded to the granule"
                    )
                },
            )
        })
    }

    /// Allocates `size` bytes (granule-rounded `size_bytes`) at `align` from the pool's
    /// chunks, growing the pool when none has room.
    fn allocate_checked(&self, size_bytes: u64, size: u64, align: u64) -> Result<Allocation> {
        // A bounded number of rounds: another thread may take a chunk we added.
        for _ in 0..4 {
            let chunk_bytes = {
                let mut inner = self.inner.lock();
                match inner.sub.allocate(size, align, Meta::default()) {
                    Ok(g) => {
                        if inner.cached_empty == Some(g.range) {
                            inner.cached_empty = None;
                        }
                        let chunk = inner.chunk(g.range).ok_or_else(|| no_chunk(g.range))?;
                        return Ok(allocation_in(&chunk, g.addr, g.size));
                    }
                    Err(SubAllocError::NoRoom) => {
                        match self.growth_bytes(&mut inner, size, align) {
                            Ok(bytes) => bytes,
                            Err(e) => {
                                // The cached empty chunk may be what blocks growth (the request
                                // does not fit in it): give it back and try again.
                                let Some(chunk) = Self::take_cached(&mut inner) else {
                                    return Err(e);
                                };
                                drop(inner);
                                self.release(&chunk)?;
                                continue;
                            }
                        }
                    }
                    Err(SubAllocError::NoRecords) => {
                        return Err(Error::lazy(Status::OutOfResources, [], |_, f| {
                            write!(
                                f,
                                "pool record storage (capacity {N}) is full; free allocations \
                                 first"
                            )
                        }))
                    }
                    Err(e) => {
                        return Err(Error::lazy(
                            Status::InvalidArgument,
                            [size_bytes, align, e as u64],
                            |&[size_bytes, align, e, ..], f| {
                                write!(f, "size_bytes {size_bytes}, align {align}: ")?;
                                show_suballoc_error(e, f)
                            },
                        ))
                    }
                }
            };
            self.grow(chunk_bytes, align)?;
        }
        Err(Error::lazy(
            Status::OutOfResources,
            [size],
            |&[size, ..], f| {
                write!(
                    f,
                    "pool kept running out of room for {size} bytes while other threads allocated"
                )
            },
        ))
    }

    /// Removes the cached empty chunk from the tables, if there is one and it is still empty.
    fn take_cached(inner: &mut Inner<N>) -> Option<MemoryChunk> {
        let range = inner.cached_empty.take()?;
        let chunk = inner.chunk(range)?;
        inner.sub.remove_range(range).ok()?;
        inner.chunks[range.0 as usize] = None;
        inner.reserved_bytes -= chunk.size_bytes;
        Some(chunk)
    }

    /// Bytes of the next chunk to request for `size` at `align`; reserves them in
    /// `pending_bytes`. Called with the lock held.
    fn growth_bytes(&self, inner: &mut Inner<N>, size: u64, align: u64) -> Result<u64> {
        let committed = inner.committed_bytes();
        let room = self.info.size_bytes.saturating_sub(committed);
        // The chunk is aligned to `align` (see `grow`), so the allocation fits at its start.
        let need = round_up(size, self.chunk_unit_bytes).ok_or_else(|| {
            Error::lazy(Status::OutOfResources, [size], |&[size, ..], f| {
                write!(f, "size {size} too large")
            })
        })?;
        let want = need.max(round_up(DEFAULT_CHUNK_BYTES, self.chunk_unit_bytes).unwrap_or(need));
        let bytes = if want <= room {
            want
        } else if need <= room {
            need
        } else {
            return Err(Error::lazy(
                Status::OutOfResources,
                [self.info.size_bytes, committed, need, size, align],
                |&[pool, committed, need, size, align], f| {
                    write!(
                        f,
                        "pool of {pool} bytes has {committed} reserved; {need} more needed for \
                         {size} bytes at align {align}"
                    )
                },
            ));
        };
        inner.pending_bytes += bytes;
        Ok(bytes)
    }

    /// Requests a chunk of `bytes` (already counted in `pending_bytes`) and adds it.
    fn grow(&self, bytes: u64, align: u64) -> Result<()> {
        let request = MemoryRequest {
            node: self.info.owner,
            kind: self.info.memory_kind,
            size_bytes: bytes,
            align_bytes: align.max(PAGE_BYTES),
            flags: self.info.chunk_flags,
        };
        let got = self.platform.allocate_memory(&request);
        let mut inner = self.inner.lock();
        inner.pending_bytes -= bytes;
        let chunk = got.map_err(|e| e.context("allocating a pool chunk"))?;
        let added = if chunk.size_bytes < bytes || !chunk.gpu_va.is_aligned(request.align_bytes) {
            Err(SubAllocError::BadArgument)
        } else {
            inner.sub.add_range(chunk.gpu_va.get(), chunk.size_bytes)
        };
        let range = match added {
            Ok(r) => r,
            Err(e) => {
                drop(inner);
                let _ = self.release(&chunk);
                return Err(Error::lazy(
                    Status::OutOfResources,
                    [
                        chunk.gpu_va.get(),
                        chunk.size_bytes,
                        bytes,
                        request.align_bytes,
                        e as u64,
                    ],
                    |&[va, size, bytes, align, e], f| {
                        write!(
                            f,
                            "cannot use chunk at {} of {size} bytes (asked {bytes} aligned \
                             {align}): ",
                            GpuVa(va)
                        )?;
                        show_suballoc_error(e, f)
                    },
                ));
            }
        };
        if let Err(e) = inner.set_chunk(range, Some(chunk)) {
            let _ = inner.sub.remove_range(range);
            drop(inner);
            let _ = self.release(&chunk);
            return Err(e);
        }
        inner.reserved_bytes += chunk.size_bytes;
        Ok(())
    }

    fn release(&self, chunk: &MemoryChunk) -> Result<()> {
        // `chunk` came from this platform, is no longer in the pool's tables, and no
        // allocation of it is live (callers remove the range first).
        crate::memory::raw::free_chunk(&*self.platform, chunk)
    }

    /// Frees the allocation that starts at `va`. A chunk left empty goes back to the
    /// platform unless it becomes the one cached empty chunk (only a chunk of at most
    /// [`DEFAULT_CHUNK_BYTES`] is cached).
    /// Ref: `hsa_amd_memory_pool_free`, `hsa_memory_free`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `va` is not the start of a live allocation of this pool
    /// (never allocated here, an interior address, or already freed); nothing changes then.
    /// The platform's status (`ResourceFree`) when giving an empty chunk back fails; the
    /// allocation is freed all the same.
    pub fn free(&self, va: GpuVa) -> Result<()> {
        let to_release = {
            let mut inner = self.inner.lock();
            let freed = inner.sub.free(va.get()).map_err(|_| {
                Error::lazy(Status::InvalidArgument, [va.get()], |&[va, ..], f| {
                    write!(
                        f,
                        "address {} is not an allocation of this pool (never allocated, or \
                         freed)",
                        GpuVa(va)
                    )
                })
            })?;
            let small = inner
                .chunk(freed.range)
                .is_some_and(|c| c.size_bytes <= DEFAULT_CHUNK_BYTES);
            let dedicated = inner.dedicated.iter().position(|&r| r == freed.range);
            if !freed.range_empty {
                None
            } else if small
                && dedicated.is_none()
                && (inner.cached_empty.is_none() || inner.cached_empty == Some(freed.range))
            {
                inner.cached_empty = Some(freed.range);
                None
            } else {
                if let Some(i) = dedicated {
                    inner.dedicated.swap_remove(i);
                }
                let chunk = inner.chunk(freed.range);
                match (chunk, inner.sub.remove_range(freed.range)) {
                    (Some(chunk), Ok(_)) => {
                        inner.chunks[freed.range.0 as usize] = None;
                        inner.reserved_bytes -= chunk.size_bytes;
                        Some(chunk)
                    }
                    _ => None,
                }
            }
        };
        match to_release {
            Some(chunk) => self.release(&chunk),
            None => Ok(()),
        }
    }

    /// The allocation containing `va` (any byte of it) and its ownership and access.
    /// Ref: `hsa_amd_pointer_info`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when no live allocation of this pool contains `va`.
    pub fn pointer_info(&self, va: GpuVa) -> Result<PointerInfo> {
        let inner = self.inner.lock();
        let f = inner.sub.find(va.get()).ok_or_else(|| not_inside(va))?;
        let chunk = inner.chunk(f.range).ok_or_else(|| no_chunk(f.range))?;
        Ok(PointerInfo {
            allocation: allocation_in(&chunk, f.addr, f.size),
            pool_owner: self.info.owner,
            assigned: f.data.assigned,
            global_flags: self.info.global_flags,
            allowed_nodes: f.data.allowed_nodes,
        })
    }

    /// Whether `len` bytes at `va` lie inside one live allocation; returns the host pointer
    /// to `va` when the pool is host-accessible.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `[va, va + len)` is not inside one live allocation, or
    /// the pool is not host-accessible.
    pub fn host_span(&self, va: GpuVa, len: u64) -> Result<NonNull<u8>> {
        let info = self.pointer_info(va)?;
        let a = info.allocation;
        let off = va.get() - a.va.get();
        if len > a.size_bytes - off {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [len, va.get(), a.va.get(), a.size_bytes],
                |&[len, va, base, size, ..], f| {
                    write!(
                        f,
                        "{len} bytes at {} run past the allocation at {} of {size} bytes",
                        GpuVa(va),
                        GpuVa(base)
                    )
                },
            ));
        }
        let host = a.host_ptr.ok_or_else(|| {
            Error::lazy(Status::InvalidArgument, [va.get()], |&[va, ..], f| {
                write!(
                    f,
                    "address {} is in a pool the host cannot access",
                    GpuVa(va)
                )
            })
        })?;
        NonNull::new(host.as_ptr().wrapping_add(off as usize)).ok_or_else(|| {
            Error::lazy(Status::Error, [va.get()], |&[va, ..], f| {
                write!(f, "host pointer of {} wrapped to null", GpuVa(va))
            })
        })
    }

    fn check_nodes(&self, nodes: &[NodeId]) -> Result<NodeMask> {
        if nodes.is_empty() {
            crate::bail!(
                Status::InvalidArgument,
                "num_agents is 0; list at least one agent"
            );
        }
        let mut mask = NodeMask::EMPTY;
        for &n in nodes {
            mask.insert(n)?;
        }
        Ok(mask)
    }

    /// Lets the agents of `nodes` access the allocation containing `va`: maps its chunk for
    /// them (`Platform::map_memory`). Ref: `hsa_amd_agents_allow_access`.
    ///
    /// The pool's access rule for a node ([`PoolInfo::access_of`]) is not consulted: as ROCR's
    /// `MemoryRegion::AllowAccess`, the mapping is asked of the platform, which decides
    /// (amdkfd maps a GPU's fine-grained VRAM for a GPU of another xGMI hive over PCIe, which
    /// the rule reports as `NEVER_ALLOWED`; RCCL relies on it).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `nodes` is empty, a node's id is
    /// [`MAX_AGENTS`](crate::addr::MAX_AGENTS) or more (see [`NodeMask::insert`]), or `va` is
    /// not inside a live allocation; the platform's status when mapping fails.
    pub fn allow_access(&self, va: GpuVa, nodes: &[NodeId]) -> Result<()> {
        let mask = self.check_nodes(nodes)?;
        let (base, chunk) = self.locate(va)?;
        self.platform
            .map_memory(&chunk, nodes)
            .map_err(|e| e.context("allow_access"))?;
        self.update_meta(base, |m| m.allowed_nodes = m.allowed_nodes.union(mask))
    }

    /// Makes `node` the owner of the coarse-grained buffer at `va` with `access`; a no-op for
    /// a fine-grained pool. Maps the chunk for `node` when it is not allowed by default and
    /// was not given access before. Ref: `hsa_memory_assign_agent`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `va` is not the start of a live allocation (as
    /// `hsa_memory_assign_agent` requires), or the id of `node` is [`MAX_AGENTS`](crate::addr::MAX_AGENTS) or more;
    /// `Status::InvalidAgent` when `node` can never access the pool; the platform's status
    /// when mapping fails.
    pub fn assign_agent(&self, va: GpuVa, node: NodeId, access: AccessPermission) -> Result<()> {
        let (meta, chunk) = {
            let inner = self.inner.lock();
            let f = inner.sub.get(va.get()).ok_or_else(|| {
                Error::lazy(Status::InvalidArgument, [va.get()], |&[va, ..], f| {
                    write!(
                        f,
                        "address {} is not the start of an allocation of this pool",
                        GpuVa(va)
                    )
                })
            })?;
            (
                f.data,
                inner.chunk(f.range).ok_or_else(|| no_chunk(f.range))?,
            )
        };
        if !self.info.is_coarse_grained() {
            return Ok(());
        }
        let rule = self.info.access_of(node);
        if rule == AgentAccess::NeverAllowed {
            return Err(Error::lazy(
                Status::InvalidAgent,
                [node.get().into()],
                |&[node, ..], f| write!(f, "node {node} can never access this pool"),
            ));
        }
        let mut allowed = meta.allowed_nodes;
        allowed.insert(node)?;
        if rule != AgentAccess::AllowedByDefault && !meta.allowed_nodes.contains(node) {
            self.platform
                .map_memory(&chunk, &[node])
                .map_err(|e| e.context("assign_agent"))?;
        }
        self.update_meta(va.get(), |m| {
            m.assigned = Some((node, access));
            m.allowed_nodes = m.allowed_nodes.union(allowed);
        })
    }

    /// The base of the allocation containing `va` and its chunk.
    fn locate(&self, va: GpuVa) -> Result<(u64, MemoryChunk)> {
        let inner = self.inner.lock();
        let f = inner.sub.find(va.get()).ok_or_else(|| not_inside(va))?;
        let chunk = inner.chunk(f.range).ok_or_else(|| no_chunk(f.range))?;
        Ok((f.addr, chunk))
    }

    fn update_meta(&self, base: u64, f: impl FnOnce(&mut Meta)) -> Result<()> {
        let mut inner = self.inner.lock();
        let mut m = inner
            .sub
            .get(base)
            .ok_or_else(|| freed_meanwhile(base))?
            .data;
        f(&mut m);
        inner
            .sub
            .set_data(base, m)
            .map(|_| ())
            .map_err(|_| freed_meanwhile(base))
    }

    /// Byte totals. Ref: what ROCR reports through `HSA_AMD_MEMORY_POOL_INFO_*` plus the
    /// pool's own accounting.
    pub fn stats(&self) -> PoolStats {
        let inner = self.inner.lock();
        let s = inner.sub.stats();
        PoolStats {
            in_use_bytes: s.in_use_bytes,
            reserved_bytes: inner.reserved_bytes,
            largest_free_block_bytes: s.largest_free_bytes,
            allocations: s.allocations,
            chunks: s.ranges,
        }
    }

    /// Allocates like [`allocate`](Self::allocate) and returns a [`Buffer`] that frees on drop.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate).
    pub fn allocate_buffer(&self, size_bytes: u64) -> Result<Buffer<'_, H, N>> {
        Ok(Buffer {
            pool: self,
            allocation: self.allocate(size_bytes)?,
        })
    }

    /// Calls `f` with every live allocation's device address and size in bytes, in no
    /// particular order, for checks and tools. Holds the pool's lock: `f` must not call
    /// back into the pool.
    pub fn for_each_allocation(&self, mut f: impl FnMut(GpuVa, u64)) {
        for (a, s, _) in self.inner.lock().sub.allocations() {
            f(GpuVa(a), s);
        }
    }

    /// Calls `f` with every chunk the pool holds, for checks and tools. Holds the pool's
    /// lock: `f` must not call back into the pool.
    pub fn for_each_chunk(&self, mut f: impl FnMut(&MemoryChunk)) {
        for c in self.inner.lock().chunks.iter().flatten() {
            f(c);
        }
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let inner = self.inner.lock();
        inner.sub.check_invariants();
        let held: u64 = inner.chunks.iter().flatten().map(|c| c.size_bytes).sum();
        assert_eq!(held, inner.reserved_bytes);
        assert!(inner.reserved_bytes <= self.info.size_bytes);
        assert_eq!(inner.pending_bytes, 0);
        for (a, s, r) in inner.sub.allocations() {
            let c = inner
                .chunk(r)
                .expect("allocation in a range without a chunk");
            assert!(
                a >= c.gpu_va.get() && a + s <= c.gpu_va.get() + c.size_bytes,
                "allocation outside its chunk"
            );
            assert_eq!(a % self.alignment_bytes, 0, "allocation misaligned");
            assert_eq!(s % self.info.alloc_granule_bytes, 0);
        }
    }
}

fn allocation_in(chunk: &MemoryChunk, addr: u64, size: u64) -> Allocation {
    let off = addr - chunk.gpu_va.get();
    Allocation {
        va: GpuVa(addr),
        host_ptr: chunk
            .host_ptr
            .and_then(|p| NonNull::new(p.as_ptr().wrapping_add(off as usize))),
        size_bytes: size,
    }
}

impl<H, const N: usize> Drop for MemoryPool<H, N>
where
    H: PlatformRef,
{
    fn drop(&mut self) {
        let inner = self.inner.get_mut();
        for chunk in inner.chunks.iter_mut() {
            if let Some(c) = chunk.take() {
                let _ = crate::memory::raw::free_chunk(&*self.platform, &c);
            }
        }
        inner.reserved_bytes = 0;
    }
}

/// An allocation that frees itself when dropped (virtio-drivers `Dma<H>` shape).
pub struct Buffer<'a, H, const N: usize = DEFAULT_CAPACITY>
where
    H: PlatformRef,
{
    pool: &'a MemoryPool<H, N>,
    allocation: Allocation,
}

impl<H, const N: usize> Buffer<'_, H, N>
where
    H: PlatformRef,
{
    /// The allocation.
    pub fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// Device address of the first byte.
    pub fn va(&self) -> GpuVa {
        self.allocation.va
    }
}

impl<H, const N: usize> Drop for Buffer<'_, H, N>
where
    H: PlatformRef,
{
    fn drop(&mut self) {
        // The allocation is ours and live; a failure to return an empty chunk is only a leak.
        let _ = self.pool.free(self.allocation.va);
    }
}

impl From<SubAllocError> for Error {
    fn from(e: SubAllocError) -> Error {
        let status = match e {
            SubAllocError::NoRoom | SubAllocError::NoRecords => Status::OutOfResources,
            _ => Status::InvalidArgument,
        };
        Error::lazy(status, [e as u64], |&[e, ..], f| {
            f.write_str("sub-allocator: ")?;
            show_suballoc_error(e, f)
        })
    }
}

/// Shows the [`SubAllocError`] whose discriminant is `e` as its `Debug` does.
fn show_suballoc_error(e: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match usize::try_from(e)
        .ok()
        .and_then(|i| SubAllocError::ALL.get(i))
    {
        Some(e) => write!(f, "{e:?}"),
        None => write!(f, "SubAllocError {e}"),
    }
}

/// `InvalidArgument`: no live allocation of the pool contains `va`.
fn not_inside(va: GpuVa) -> Error {
    Error::lazy(Status::InvalidArgument, [va.get()], |&[va, ..], f| {
        write!(
            f,
            "address {} is not inside an allocation of this pool",
            GpuVa(va)
        )
    })
}

/// `InvalidArgument`: the allocation at `base` was freed by another thread meanwhile.
fn freed_meanwhile(base: u64) -> Error {
    Error::lazy(Status::InvalidArgument, [base], |&[base, ..], f| {
        write!(f, "allocation at {base:#x} was freed meanwhile")
    })
}

/// `Error`: the pool's tables lost the chunk of a range that holds an allocation.
fn no_chunk(range: RangeId) -> Error {
    Error::lazy(Status::Error, [range.0.into()], |&[range, ..], f| {
        write!(f, "no chunk for range {range}")
    })
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the unsafe host read/write/copy accessors
mod tests {
    use super::*;
    use crate::memory::region::Segment;
    use crate::platform::fake::{
        FakeMemory, FakePlatform, FaultInjector, FaultMethod, Tamper, UNMAPPED_BASE,
    };
    use crate::platform::{MemoryFlags, MemoryKind};
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::string::ToString;
    use std::sync::Arc;
    use std::vec;
    use std::vec::Vec as StdVec;

    const MIB: u64 = 1 << 20;
    /// Record capacity for the tests: only matters without `alloc`, where the records live
    /// inline in the pool (kept small enough for a test thread's stack in debug builds).
    const CAP: usize = if cfg!(feature = "alloc") { 8192 } else { 2048 };
    type TestPool<'a, P = FakePlatform> = MemoryPool<&'a P, CAP>;

    /// The fake with chunks from `memory` and at most `limit_bytes` of them live.
    fn platform(memory: FakeMemory, limit_bytes: u64) -> FakePlatform {
        let mut p = FakePlatform::new();
        p.set_memory(memory);
        p.set_memory_limit_bytes(limit_bytes);
        p
    }

    fn fine(size: u64) -> PoolInfo {
        PoolInfo::new(NodeId(0), GlobalFlags::FINE_GRAINED, size)
    }

    fn kernarg(size: u64) -> PoolInfo {
        let mut i = PoolInfo::new(
            NodeId(0),
            GlobalFlags::KERNARG | GlobalFlags::FINE_GRAINED,
            size,
        );
        i.alloc_granule_bytes = 8;
        i.alloc_rec_granule_bytes = 64;
        i.alloc_alignment_bytes = 4;
        i
    }

    fn coarse_device(size: u64) -> PoolInfo {
        let mut i = PoolInfo::new(NodeId(1), GlobalFlags::COARSE_GRAINED, size);
        i.memory_kind = MemoryKind::DeviceLocal;
        i.chunk_flags = MemoryFlags::empty();
        i.set_access(NodeId(0), AgentAccess::DisallowedByDefault)
            .unwrap();
        i.set_access(NodeId(2), AgentAccess::NeverAllowed).unwrap();
        i
    }

    /// EXECUTABLE and, in device-local memory, CONTIGUOUS allocations get a chunk of their own
    /// with those flags, used whole (no other allocation lands in it) and given back on free;
    /// in system memory CONTIGUOUS is dropped; no flag left is an ordinary allocation.
    #[test]
    fn flagged_allocations_get_a_chunk_of_their_own() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, coarse_device(32 * MIB)).unwrap();
        let plain = pool.allocate(100).unwrap();
        assert_eq!(p.live_chunks().len(), 1);
        let x = pool
            .allocate_with_flags(5000, MemoryFlags::EXECUTABLE | MemoryFlags::CONTIGUOUS)
            .unwrap();
        let req = p.last_memory_request().unwrap();
        assert_eq!(req.flags, MemoryFlags::EXECUTABLE | MemoryFlags::CONTIGUOUS);
        assert_eq!((req.size_bytes, req.kind), (8192, MemoryKind::DeviceLocal));
        assert_eq!(x.size_bytes, 8192, "the whole chunk, in pages");
        assert_eq!(p.live_chunks().len(), 2);
        assert_eq!(pool.stats().reserved_bytes, DEFAULT_CHUNK_BYTES + 8192);
        assert_eq!(
            pool.pointer_info(GpuVa(x.va.get() + 8191))
                .unwrap()
                .allocation,
            x
        );
        // Ordinary allocations keep to the ordinary chunk.
        for _ in 0..8 {
            let a = pool.allocate(4096).unwrap();
            assert!(a.va.get() + a.size_bytes <= x.va.get() || a.va.get() >= x.va.get() + 8192);
        }
        pool.free(x.va).unwrap();
        assert_eq!(p.live_chunks().len(), 1, "a flagged chunk is not cached");
        assert_eq!(pool.stats().reserved_bytes, DEFAULT_CHUNK_BYTES);
        assert_eq!(
            pool.free(x.va).unwrap_err().status(),
            Status::InvalidArgument
        );
        pool.free(plain.va).unwrap();
        // Read-only and other flags are not the caller's to add: an ordinary allocation.
        let chunks_made = p.allocation_count();
        let y = pool
            .allocate_with_flags(64, MemoryFlags::READ_ONLY)
            .unwrap();
        assert_eq!(p.live_chunks().len(), 1);
        assert_eq!(p.allocation_count(), chunks_made, "no chunk of its own");
        pool.free(y.va).unwrap();
        // The checks of every allocation come first.
        let e = pool
            .allocate_with_flags(0, MemoryFlags::EXECUTABLE)
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = pool
            .allocate_with_flags(64 * MIB, MemoryFlags::EXECUTABLE)
            .unwrap_err();
        assert_eq!(
            e.status(),
            Status::InvalidAllocation,
            "above the pool's maximum"
        );
        // Within the maximum, beyond what the pool may still reserve beside its chunk.
        let e = pool
            .allocate_with_flags(31 * MIB, MemoryFlags::EXECUTABLE)
            .unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(e.detail().to_string().contains("a chunk of its own"), "{e}");
        // Exactly the room left (32 MiB less the ordinary chunk), after a flagged chunk came
        // and went: nothing of it is still counted.
        let f = pool
            .allocate_with_flags(8 * MIB, MemoryFlags::EXECUTABLE)
            .unwrap();
        pool.free(f.va).unwrap();
        let room = 32 * MIB - DEFAULT_CHUNK_BYTES;
        let all = pool
            .allocate_with_flags(room, MemoryFlags::EXECUTABLE)
            .unwrap();
        assert_eq!(all.size_bytes, room);
        pool.free(all.va).unwrap();
        drop(pool);

        // Extra flags add to the pool's own, even one it has already.
        let mut exec_info = coarse_device(32 * MIB);
        exec_info.chunk_flags = MemoryFlags::EXECUTABLE;
        let exec: TestPool<'_> = MemoryPool::new(&p, exec_info).unwrap();
        let g = exec
            .allocate_with_flags(64, MemoryFlags::EXECUTABLE)
            .unwrap();
        assert_eq!(
            p.last_memory_request().unwrap().flags,
            MemoryFlags::EXECUTABLE
        );
        exec.free(g.va).unwrap();
        drop(exec);

        let sys: TestPool<'_> = MemoryPool::new(&p, fine(16 * MIB)).unwrap();
        let z = sys
            .allocate_with_flags(100, MemoryFlags::CONTIGUOUS | MemoryFlags::EXECUTABLE)
            .unwrap();
        assert_eq!(
            p.last_memory_request().unwrap().flags,
            MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::EXECUTABLE
        );
        assert_eq!(z.size_bytes, 4096);
        sys.free(z.va).unwrap();
        assert_eq!(p.live_chunks().len(), 0);
    }

    #[test]
    fn allocate_rounds_aligns_and_accounts() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, fine(16 * MIB)).unwrap();
        let a = pool.allocate(100).unwrap();
        assert_eq!(a.size_bytes, 4096);
        assert!(a.va.is_aligned(4096));
        assert_eq!(a.host_ptr.unwrap().as_ptr().addr() as u64, a.va.get());
        let b = pool.allocate_aligned(5000, 1 << 16).unwrap();
        assert_eq!(b.size_bytes, 8192);
        assert!(b.va.is_aligned(1 << 16));
        let s = pool.stats();
        assert_eq!(
            (s.in_use_bytes, s.reserved_bytes, s.allocations, s.chunks),
            (12288, DEFAULT_CHUNK_BYTES, 2, 1)
        );
        assert_eq!(p.live_chunks().len(), 1);
        let info = pool.pointer_info(GpuVa(b.va.get() + 4097)).unwrap();
        assert_eq!(info.allocation, b);
        assert_eq!(info.pool_owner, NodeId(0));
        assert_eq!(info.global_flags, GlobalFlags::FINE_GRAINED);
        assert_eq!(info.assigned, None);
        // SAFETY: single-threaded test; `a` is live.
        unsafe {
            pool.write(GpuVa(a.va.get() + 10), b"kernarg").unwrap();
            let mut out = [0u8; 9];
            pool.read(GpuVa(a.va.get() + 9), &mut out).unwrap();
            assert_eq!(&out, b"\0kernarg\0");
        }
        pool.free(a.va).unwrap();
        pool.free(b.va).unwrap();
        assert_eq!(pool.stats().in_use_bytes, 0);
        assert_eq!(pool.stats().largest_free_block_bytes, DEFAULT_CHUNK_BYTES);
        pool.check_invariants();
        drop(pool);
        assert!(p.live_chunks().is_empty(), "drop gives every chunk back");
    }

    #[test]
    fn kernarg_allocations_are_16_byte_aligned() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, kernarg(4 * MIB)).unwrap();
        let mut vas = StdVec::new();
        for size in [1u64, 8, 9, 24, 40, 3] {
            let a = pool.allocate(size).unwrap();
            assert!(a.va.is_aligned(16), "{} not 16-aligned", a.va);
            assert_eq!(a.size_bytes, size.next_multiple_of(8));
            vas.push(a.va);
        }
        pool.check_invariants();
        for va in vas {
            pool.free(va).unwrap();
        }
    }

    #[test]
    fn bad_input_gets_the_statuses_of_hsa_h() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, fine(8 * MIB)).unwrap();
        // hsa_amd_memory_pool_allocate / hsa_memory_allocate: size 0 -> INVALID_ARGUMENT.
        let e = pool.allocate(0).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("size_bytes is 0"));
        // size > ALLOC_MAX_SIZE -> INVALID_ALLOCATION.
        let e = pool.allocate(8 * MIB + 1).unwrap_err();
        assert_eq!(e.status(), Status::InvalidAllocation);
        assert!(e.detail().to_string().contains("8388609"));
        assert_eq!(
            pool.allocate_aligned(16, 48).unwrap_err().status(),
            Status::InvalidArgument
        );
        let a = pool.allocate(4096).unwrap();
        let before = pool.stats();
        // Freeing what the pool never gave, an interior address, or twice: INVALID_ARGUMENT.
        assert_eq!(
            pool.free(GpuVa(0x1234_5000)).unwrap_err().status(),
            Status::InvalidArgument
        );
        assert_eq!(
            pool.free(GpuVa(a.va.get() + 8)).unwrap_err().status(),
            Status::InvalidArgument
        );
        assert_eq!(pool.stats(), before);
        pool.free(a.va).unwrap();
        let after = pool.stats();
        let e = pool.free(a.va).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains(&std::format!("{}", a.va)));
        assert_eq!(pool.stats(), after);
        assert_eq!(
            pool.pointer_info(a.va).unwrap_err().status(),
            Status::InvalidArgument
        );
        assert_eq!(
            pool.assign_agent(a.va, NodeId(0), AccessPermission::ReadWrite)
                .unwrap_err()
                .status(),
            Status::InvalidArgument
        );
        assert_eq!(
            pool.allow_access(a.va, &[NodeId(0)]).unwrap_err().status(),
            Status::InvalidArgument
        );
        pool.check_invariants();

        // A pool without runtime allocation: INVALID_ALLOCATION.
        let mut group = fine(64 * 1024);
        group.segment = Segment::Group;
        group.global_flags = GlobalFlags::empty();
        group.runtime_alloc_allowed = false;
        let gp: TestPool<'_> = MemoryPool::new(&p, group).unwrap();
        assert_eq!(
            gp.allocate(64).unwrap_err().status(),
            Status::InvalidAllocation
        );
        // An incoherent descriptor: INVALID_ARGUMENT.
        let mut bad = fine(MIB);
        bad.alloc_granule_bytes = 100;
        assert_eq!(
            TestPool::new(&p, bad).err().unwrap().status(),
            Status::InvalidArgument
        );
    }

    #[test]
    fn no_room_is_out_of_resources_and_frees_bring_room_back() {
        let p = FaultInjector::new(platform(FakeMemory::Host, 64 * MIB));
        let pool: TestPool<'_, FaultInjector<FakePlatform>> =
            MemoryPool::new(&p, fine(4 * MIB)).unwrap();
        let a = pool.allocate(3 * MIB).unwrap();
        let b = pool.allocate(MIB).unwrap();
        assert_eq!(pool.stats().reserved_bytes, 4 * MIB);
        let e = pool.allocate(4096).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        pool.check_invariants();
        pool.free(b.va).unwrap();
        let c = pool.allocate(4096).unwrap();
        pool.free(a.va).unwrap();
        pool.free(c.va).unwrap();
        assert_eq!(pool.allocate(4 * MIB).unwrap().size_bytes, 4 * MIB);
        pool.check_invariants();

        // The platform's own failure comes through with its status.
        let pool2: TestPool<'_, FaultInjector<FakePlatform>> =
            MemoryPool::new(&p, fine(4 * MIB)).unwrap();
        p.fail_next(FaultMethod::AllocateMemory, Status::OutOfResources);
        assert_eq!(
            pool2.allocate(16).unwrap_err().status(),
            Status::OutOfResources
        );
        assert!(pool2.allocate(16).is_ok());
        pool2.check_invariants();
    }

    /// A buffer knows its address, is listed among the pool's allocations while it lives,
    /// and frees on drop.
    #[test]
    fn a_buffer_is_listed_while_it_lives_and_frees_on_drop() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, fine(16 * MIB)).unwrap();
        let b = pool.allocate_buffer(5000).unwrap();
        assert_eq!(b.va(), b.allocation().va);
        assert_eq!(b.allocation().size_bytes, 8192);
        let mut live = StdVec::new();
        pool.for_each_allocation(|va, size| live.push((va, size)));
        assert_eq!(live, vec![(b.va(), 8192)]);
        drop(b);
        live.clear();
        pool.for_each_allocation(|va, size| live.push((va, size)));
        assert_eq!((live.len(), pool.stats().allocations), (0, 0));
    }

    /// A sub-allocator error becomes OUT_OF_RESOURCES for want of room or records and
    /// INVALID_ARGUMENT otherwise, named as its Debug shows it.
    #[test]
    fn suballocator_errors_map_to_statuses_and_name_themselves() {
        for (e, status, text) in [
            (
                SubAllocError::NoRoom,
                Status::OutOfResources,
                "sub-allocator: NoRoom",
            ),
            (
                SubAllocError::NoRecords,
                Status::OutOfResources,
                "sub-allocator: NoRecords",
            ),
            (
                SubAllocError::Overlap,
                Status::InvalidArgument,
                "sub-allocator: Overlap",
            ),
        ] {
            let err = Error::from(e);
            assert_eq!(
                (err.status(), err.detail().to_string()),
                (status, text.to_string())
            );
        }
    }

    /// A platform that hands back a chunk shorter than asked: the pool gives it back (the
    /// platform is left with nothing live) and refuses the allocation naming the chunk; the
    /// next growth works.
    #[test]
    fn a_chunk_shorter_than_asked_is_given_back_and_refused() {
        let p = FaultInjector::new(platform(FakeMemory::Host, 64 * MIB));
        let pool: TestPool<'_, FaultInjector<FakePlatform>> =
            MemoryPool::new(&p, fine(16 * MIB)).unwrap();
        p.tamper_next(Tamper::ShortChunk);
        let e = pool.allocate(100).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        let detail = e.to_string();
        assert!(
            detail.contains("of 2093056 bytes (asked 2097152 aligned 4096)"),
            "{detail}"
        );
        assert_eq!((p.inner().live_chunks().len(), pool.stats().chunks), (0, 0));
        assert_eq!(pool.allocate(100).unwrap().size_bytes, 4096);
        pool.check_invariants();
    }

    /// Room counts the chunks other threads are still requesting: while one allocation's
    /// 2 MiB chunk is in flight (held inside the platform), a second 2 MiB allocation of a
    /// 3 MiB pool is refused with the pool's numbers, and the first then completes.
    #[test]
    fn growth_counts_chunks_still_being_requested() {
        let p = FaultInjector::new(platform(FakeMemory::Host, 64 * MIB));
        let pool: TestPool<'_, FaultInjector<FakePlatform>> =
            MemoryPool::new(&p, fine(3 * MIB)).unwrap();
        let hold = p.hold_next(FaultMethod::AllocateMemory);
        std::thread::scope(|s| {
            let first = s.spawn(|| pool.allocate(2 * MIB).map(|a| a.size_bytes));
            hold.wait_arrival();
            let e = pool.allocate(2 * MIB).unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert_eq!(
                e.detail(),
                "pool of 3145728 bytes has 2097152 reserved; 2097152 more needed for 2097152 \
                 bytes at align 4096"
            );
            hold.release();
            assert_eq!(first.join().unwrap().unwrap(), 2 * MIB);
        });
        assert_eq!(pool.stats().reserved_bytes, 2 * MIB);
        pool.check_invariants();
    }

    #[test]
    fn grows_by_chunks_and_gives_empty_ones_back_keeping_one() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, fine(32 * MIB)).unwrap();
        let big: StdVec<_> = (0..3).map(|_| pool.allocate(2 * MIB).unwrap()).collect();
        assert_eq!(pool.stats().chunks, 3);
        assert_eq!(p.live_chunks().len(), 3);
        let large = pool.allocate(5 * MIB + 1).unwrap();
        assert_eq!(pool.stats().reserved_bytes, 6 * MIB + 5 * MIB + 4096);
        for a in &big {
            pool.free(a.va).unwrap();
        }
        // Three empty chunks: one stays cached, two went back.
        assert_eq!(p.live_chunks().len(), 2);
        assert_eq!(pool.stats().chunks, 2);
        // Reusing the cached chunk does not call the platform.
        let n = p.allocation_count();
        let again = pool.allocate(4096).unwrap();
        assert_eq!(p.allocation_count(), n);
        pool.free(again.va).unwrap();
        pool.free(large.va).unwrap();
        assert_eq!(p.live_chunks().len(), 1);
        pool.check_invariants();
    }

    /// A chunk made for one large allocation goes back to the platform when that allocation
    /// is freed, even with no chunk cached: only a default-sized chunk is kept.
    #[test]
    fn a_large_chunk_is_never_the_cached_one() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, fine(32 * MIB)).unwrap();
        let large = pool.allocate(16 * MIB).unwrap();
        assert_eq!(p.live_chunks().len(), 1);
        pool.free(large.va).unwrap();
        assert_eq!(p.live_chunks().len(), 0);
        assert_eq!(pool.stats().reserved_bytes, 0);
        // A default-sized one is kept for the next allocation.
        let small = pool.allocate(4096).unwrap();
        pool.free(small.va).unwrap();
        assert_eq!(p.live_chunks().len(), 1);
        assert_eq!(pool.stats().reserved_bytes, DEFAULT_CHUNK_BYTES);
        pool.check_invariants();
    }

    /// ROCR's `AllowAccess` maps for every listed agent whatever the pool's access rule says
    /// (a GPU's fine-grained VRAM for a GPU of another xGMI hive is `NEVER_ALLOWED` by the
    /// rule, and RCCL has it mapped over PCIe): the platform is asked, and the node recorded.
    #[test]
    fn allow_access_maps_a_never_allowed_node_the_platform_can_map() {
        let p = platform(FakeMemory::Unmapped, 64 * MIB);
        let mut info = coarse_device(16 * MIB);
        info.set_access(NodeId(0), AgentAccess::NeverAllowed)
            .unwrap();
        let pool: TestPool<'_> = MemoryPool::new(&p, info).unwrap();
        let a = pool.allocate(4096).unwrap();
        pool.allow_access(a.va, &[NodeId(0)]).unwrap();
        let mut chunk_va = GpuVa::NULL;
        pool.for_each_chunk(|c| chunk_va = c.gpu_va);
        assert_eq!(p.map_calls(), vec![(chunk_va, vec![NodeId(0)])]);
        let allowed = pool.pointer_info(a.va).unwrap().allowed_nodes;
        assert_eq!(allowed.iter().collect::<StdVec<_>>(), [NodeId(0)]);
        pool.free(a.va).unwrap();
    }

    #[test]
    fn allow_access_and_assign_agent_map_through_the_platform() {
        let p = platform(FakeMemory::Unmapped, 64 * MIB);
        let pool: TestPool<'_> = MemoryPool::new(&p, coarse_device(16 * MIB)).unwrap();
        let a = pool.allocate(8192).unwrap();
        assert_eq!(a.host_ptr, None);
        assert!(a.va.get() >= UNMAPPED_BASE);
        let e = pool.allow_access(a.va, &[]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("num_agents is 0"));
        assert!(p.map_calls().is_empty());
        pool.allow_access(GpuVa(a.va.get() + 100), &[NodeId(0)])
            .unwrap();
        let mut chunk_va = GpuVa::NULL;
        pool.for_each_chunk(|c| chunk_va = c.gpu_va);
        assert_eq!(p.map_calls(), vec![(chunk_va, vec![NodeId(0)])]);
        let allowed = pool.pointer_info(a.va).unwrap().allowed_nodes;
        assert_eq!(allowed.iter().collect::<StdVec<_>>(), [NodeId(0)]);
        // Node 2 is NEVER_ALLOWED by the pool's rule; as ROCR, the platform is asked anyway
        // and decides: the fake has no node 2 and refuses, so nothing is recorded.
        let e = pool.allow_access(a.va, &[NodeId(2)]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("node index 2"), "{e}");
        assert_eq!(p.map_calls().len(), 1);

        assert_eq!(
            pool.assign_agent(a.va, NodeId(2), AccessPermission::ReadWrite)
                .unwrap_err()
                .status(),
            Status::InvalidAgent
        );
        // Node 0 was allowed already: no second map; node 1 owns the pool: no map.
        pool.assign_agent(a.va, NodeId(0), AccessPermission::ReadOnly)
            .unwrap();
        pool.assign_agent(a.va, NodeId(1), AccessPermission::ReadWrite)
            .unwrap();
        assert_eq!(p.map_calls().len(), 1);
        let info = pool.pointer_info(a.va).unwrap();
        assert_eq!(
            info.assigned,
            Some((NodeId(1), AccessPermission::ReadWrite))
        );
        let allowed: StdVec<NodeId> = info.allowed_nodes.iter().collect();
        assert_eq!(allowed, [NodeId(0), NodeId(1)]);
        assert_eq!(info.pool_owner, NodeId(1));
        // host access is refused for device memory
        assert_eq!(
            pool.host_span(a.va, 1).unwrap_err().status(),
            Status::InvalidArgument
        );

        // Fine-grained: assign_agent is a no-op that succeeds.
        let hp = platform(FakeMemory::Host, 8 * MIB);
        let fpool: TestPool<'_> = MemoryPool::new(&hp, fine(4 * MIB)).unwrap();
        let f = fpool.allocate(1).unwrap();
        fpool
            .assign_agent(f.va, NodeId(5), AccessPermission::ReadWrite)
            .unwrap();
        assert_eq!(fpool.pointer_info(f.va).unwrap().assigned, None);
    }

    #[test]
    fn copy_between_host_pools_checks_bounds_and_overlap() {
        let p = platform(FakeMemory::Host, 64 * MIB);
        let a_pool: TestPool<'_> = MemoryPool::new(&p, fine(4 * MIB)).unwrap();
        let k_pool: TestPool<'_> = MemoryPool::new(&p, kernarg(4 * MIB)).unwrap();
        let src = a_pool.allocate(4096).unwrap();
        let dst = k_pool.allocate(64).unwrap();
        // SAFETY: single-threaded test; all allocations live.
        unsafe {
            a_pool.write(src.va, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
            crate::memory::copy(&k_pool, dst.va, &a_pool, GpuVa(src.va.get() + 2), 4).unwrap();
            let mut out = [0u8; 6];
            k_pool.read(dst.va, &mut out).unwrap();
            assert_eq!(out, [3, 4, 5, 6, 0, 0]);
            assert_eq!(
                crate::memory::copy(&k_pool, dst.va, &a_pool, src.va, 0),
                Ok(())
            );
            let e = crate::memory::copy(&k_pool, dst.va, &a_pool, src.va, 65).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(e.detail().to_string().contains("65 bytes"));
            let e = crate::memory::copy(&a_pool, GpuVa(src.va.get() + 8), &a_pool, src.va, 16)
                .unwrap_err();
            assert!(e.detail().to_string().contains("overlap"));
            assert_eq!(
                k_pool
                    .write(GpuVa(dst.va.get() + 60), &[0; 8])
                    .unwrap_err()
                    .status(),
                Status::InvalidArgument
            );
        }
    }

    #[test]
    fn unmapped_device_memory_survives_thousands_of_operations() {
        // Chunks at 0xdead_0000_0000 with no host pointer: any touch of managed memory would
        // fault. The pool only does arithmetic on addresses.
        let p = platform(FakeMemory::Unmapped, 1 << 40);
        let pool: TestPool<'_> = MemoryPool::new(&p, coarse_device(256 * MIB)).unwrap();
        let mut rng = Rng(0x5eed);
        let mut live = StdVec::new();
        for _ in 0..if cfg!(miri) { 200 } else { 20_000 } {
            if live.is_empty() || rng.next() % 2 == 0 {
                let a = pool.allocate(1 + rng.next() % (64 * 1024)).unwrap();
                assert!(a.va.get() >= UNMAPPED_BASE && a.host_ptr.is_none());
                live.push(a.va);
            } else {
                let i = (rng.next() as usize) % live.len();
                pool.free(live.swap_remove(i)).unwrap();
            }
        }
        pool.check_invariants();
        for va in live {
            pool.free(va).unwrap();
        }
        assert_eq!(pool.stats().in_use_bytes, 0);
        assert_eq!(p.live_chunks().len(), 1, "one cached chunk left");
    }

    #[test]
    fn concurrent_allocate_and_free() {
        let p = Arc::new(platform(FakeMemory::Host, 256 * MIB));
        let pool: Arc<MemoryPool<Arc<FakePlatform>, CAP>> =
            Arc::new(MemoryPool::new(p.clone(), kernarg(64 * MIB)).unwrap());
        let rounds = if cfg!(miri) {
            20
        } else if cfg!(feature = "alloc") {
            1500
        } else {
            300
        };
        let threads: StdVec<_> = (0..4)
            .map(|t| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let mut mine = StdVec::new();
                    for i in 0..rounds {
                        let a = pool.allocate(16 + (i % 7) * 24).unwrap();
                        // SAFETY: this thread owns `a` exclusively.
                        unsafe { pool.write(a.va, &[t as u8; 16]).unwrap() };
                        mine.push(a);
                        if i % 3 != 0 {
                            let b = mine.swap_remove(0);
                            let mut out = [0u8; 16];
                            // SAFETY: this thread owns `b` exclusively.
                            unsafe { pool.read(b.va, &mut out).unwrap() };
                            assert_eq!(out, [t as u8; 16], "another thread wrote into this block");
                            pool.free(b.va).unwrap();
                        }
                    }
                    mine
                })
            })
            .collect();
        let left: StdVec<Allocation> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        pool.check_invariants();
        assert_eq!(pool.stats().allocations, left.len());
        assert_eq!(
            pool.stats().in_use_bytes,
            left.iter().map(|a| a.size_bytes).sum::<u64>()
        );
    }

    /// xorshift64*: a tiny deterministic generator seeded by proptest.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Runs `ops` random allocate/free operations on a pool of `info` and checks after each
    /// that live blocks are disjoint, inside their chunk, aligned, and that totals add up.
    fn random_ops(
        backing: FakeMemory,
        info: PoolInfo,
        seed: u64,
        ops: usize,
        max_size: u64,
    ) -> core::result::Result<(), TestCaseError> {
        let p = platform(backing, 1 << 40);
        let align = info.effective_alignment_bytes();
        let granule = info.alloc_granule_bytes;
        let pool_size = info.size_bytes;
        let pool: TestPool<'_> = MemoryPool::new(&p, info).unwrap();
        let mut rng = Rng(seed | 1);
        let mut live: BTreeMap<u64, u64> = BTreeMap::new();
        let mut keys: StdVec<u64> = StdVec::new();
        for n in 0..ops {
            if keys.is_empty() || rng.next() % 100 < 55 {
                let size = 1 + rng.next() % max_size;
                match pool.allocate(size) {
                    Ok(a) => {
                        let (va, s) = (a.va.get(), a.size_bytes);
                        prop_assert_eq!(va % align, 0);
                        prop_assert_eq!(s, size.next_multiple_of(granule));
                        if let Some((&pa, &ps)) = live.range(..va).next_back() {
                            prop_assert!(pa + ps <= va, "overlaps the block below");
                        }
                        if let Some((&na, _)) = live.range(va..).next() {
                            prop_assert!(va + s <= na, "overlaps the block above");
                        }
                        live.insert(va, s);
                        keys.push(va);
                    }
                    Err(e) => prop_assert_eq!(e.status(), Status::OutOfResources),
                }
            } else {
                let i = (rng.next() as usize) % keys.len();
                let va = keys.swap_remove(i);
                live.remove(&va);
                pool.free(GpuVa(va)).unwrap();
            }
            if n % 4096 == 0 || n + 1 == ops {
                pool.check_invariants(); // blocks inside chunks, aligned, records consistent
                let mut chunks = StdVec::new();
                pool.for_each_chunk(|c| chunks.push(*c));
                for (&va, &s) in &live {
                    prop_assert!(chunks
                        .iter()
                        .any(|c| va >= c.gpu_va.get() && va + s <= c.gpu_va.get() + c.size_bytes));
                }
            }
            let st = pool.stats();
            prop_assert_eq!(st.in_use_bytes, live.values().sum::<u64>());
            prop_assert_eq!(st.allocations, live.len());
            prop_assert!(st.reserved_bytes <= pool_size && st.in_use_bytes <= st.reserved_bytes);
        }
        let held: u64 = p.live_chunks().iter().map(|c| c.size_bytes).sum();
        prop_assert_eq!(held, pool.stats().reserved_bytes);
        Ok(())
    }

    const CASES: u32 = if cfg!(miri) { 1 } else { 4 };
    const OPS: usize = if cfg!(miri) { 300 } else { 25_000 }; // 4 x 25,000 = 10^5 per kind

    proptest! {
        #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn random_ops_kernarg_pool(seed in any::<u64>()) {
            random_ops(FakeMemory::Host, kernarg(8 * MIB), seed, OPS, 512)?;
        }

        #[test]
        fn random_ops_fine_grained_system_pool(seed in any::<u64>()) {
            random_ops(FakeMemory::Host, fine(64 * MIB), seed, OPS, 256 * 1024)?;
        }

        #[test]
        fn random_ops_coarse_grained_unmapped_device_pool(seed in any::<u64>()) {
            random_ops(FakeMemory::Unmapped, coarse_device(48 * MIB), seed, OPS, 1 << 20)?;
        }
    }
}
