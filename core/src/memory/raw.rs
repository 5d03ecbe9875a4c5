//! The memory module's only `unsafe`: giving chunks back to the platform, host copies into and
//! out of host-accessible allocations, and `Send`/`Sync` for [`Allocation`].
#![allow(unsafe_code)]

use crate::platform_ref::PlatformRef;

use crate::addr::GpuVa;
use crate::memory::pool::{Allocation, MemoryPool};
use crate::platform::{MemoryChunk, Platform};
use crate::status::{Error, Result, Status};

// SAFETY: an Allocation is a description (addresses and a size), like `MemoryChunk`; reaching
// the memory through `host_ptr` needs `unsafe` whose caller upholds aliasing and lifetime.
unsafe impl Send for Allocation {}
// SAFETY: as for Send: sharing the description grants no access by itself.
unsafe impl Sync for Allocation {}

/// Gives `chunk` back to `platform`.
///
/// Callers (the pool) pass only chunks this platform allocated, that they have removed from
/// their tables (so it is freed once), and that hold no live allocation, or the pool is being
/// dropped (which ends every allocation, see [`MemoryPool`]).
pub(crate) fn free_chunk<P: Platform + ?Sized>(platform: &P, chunk: &MemoryChunk) -> Result<()> {
    // SAFETY: per this function's contract the chunk came from `platform.allocate_memory`, is
    // freed exactly once (the caller took it out of its table), and nothing uses it any more.
    unsafe { platform.free_memory(chunk) }.map_err(|e| e.context("freeing a pool chunk"))
}

/// Copies `size_bytes` from `src` (in `src_pool`) to `dst` (in `dst_pool`) through host
/// pointers. Both ranges must lie inside one live allocation each of host-accessible pools.
/// Size 0 copies nothing and succeeds. Ref: `hsa_memory_copy`.
///
/// # Safety
/// The caller guarantees that no other thread (or agent) reads `dst` or writes either range
/// while the copy runs, and that neither allocation is freed meanwhile.
///
/// # Errors
/// `Status::InvalidArgument` when a range is not inside one live allocation of its pool, a
/// pool is not host-accessible, or the two ranges overlap (`hsa_memory_copy` forbids it).
pub unsafe fn copy<H1, H2, const N1: usize, const N2: usize>(
    dst_pool: &MemoryPool<H1, N1>,
    dst: GpuVa,
    src_pool: &MemoryPool<H2, N2>,
    src: GpuVa,
    size_bytes: u64,
) -> Result<()>
where
    H1: PlatformRef,
    H2: PlatformRef,
{
    if size_bytes == 0 {
        return Ok(());
    }
    let d = dst_pool.host_span(dst, size_bytes)?;
    let s = src_pool.host_span(src, size_bytes)?;
    let (da, sa) = (d.as_ptr().addr() as u64, s.as_ptr().addr() as u64);
    if da < sa + size_bytes && sa < da + size_bytes {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [size_bytes, src.get(), dst.get()],
            |&[size_bytes, src, dst, ..], f| {
                write!(
                    f,
                    "copy of {size_bytes} bytes from {} to {}: the ranges overlap",
                    GpuVa(src),
                    GpuVa(dst)
                )
            },
        ));
    }
    let len = usize::try_from(size_bytes).map_err(|_| {
        crate::error!(
            Status::InvalidArgument,
            "size_bytes {size_bytes} exceeds usize"
        )
    })?;
    // SAFETY: `host_span` checked that both ranges lie inside live host-accessible allocations
    // (the platform guarantees chunk host pointers valid for their size); they do not overlap
    // (checked above); the caller guarantees no concurrent access or free.
    unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), d.as_ptr(), len) };
    Ok(())
}

impl<H, const N: usize> MemoryPool<H, N>
where
    H: PlatformRef,
{
    /// Writes `bytes` at `va` through the host pointer.
    ///
    /// # Safety
    /// The caller guarantees no other thread or agent accesses those bytes while this runs and
    /// the allocation is not freed meanwhile.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when the range is not inside one live allocation of this
    /// pool, or the pool is not host-accessible.
    pub unsafe fn write(&self, va: GpuVa, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let d = self.host_span(va, bytes.len() as u64)?;
        // SAFETY: `host_span` checked the range lies in a live host-accessible allocation;
        // `bytes` is a distinct Rust slice (it cannot alias pool memory the caller does not
        // access concurrently); exclusivity is the caller's guarantee.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), d.as_ptr(), bytes.len()) };
        Ok(())
    }

    /// Reads `out.len()` bytes at `va` through the host pointer.
    ///
    /// # Safety
    /// The caller guarantees no other thread or agent writes those bytes while this runs and
    /// the allocation is not freed meanwhile.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub unsafe fn read(&self, va: GpuVa, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let s = self.host_span(va, out.len() as u64)?;
        // SAFETY: as in `write`, with the roles swapped; `out` is an exclusive Rust borrow.
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}
