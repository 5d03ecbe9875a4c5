//! The only unsafe code of the loader: an owned chunk of platform memory for a loaded image
//! (freed exactly once), and the host view of its bytes.
#![allow(unsafe_code)]

use crate::platform::{MemoryChunk, MemoryRequest, Platform};
use crate::platform_ref::PlatformRef;
use crate::status::{Result, Status};

/// A chunk of platform memory this loader allocated and owns; freed on [`OwnedChunk::free`]
/// or drop, exactly once.
pub(super) struct OwnedChunk<H: PlatformRef> {
    platform: H,
    chunk: MemoryChunk,
    freed: bool,
}

impl<H: PlatformRef> OwnedChunk<H> {
    /// Allocates a chunk.
    ///
    /// # Errors
    /// The platform's error as a core error, with context.
    pub(super) fn allocate(platform: H, request: &MemoryRequest) -> Result<Self> {
        let chunk = platform
            .allocate_memory(request)
            .map_err(|e| e.context("code object memory"))?;
        Ok(OwnedChunk {
            platform,
            chunk,
            freed: false,
        })
    }

    /// The chunk's description.
    pub(super) fn chunk(&self) -> &MemoryChunk {
        &self.chunk
    }

    /// Runs `f` on the host bytes of the chunk (all `size_bytes` of them).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when the chunk has no host pointer or its size does not
    /// fit the host's address space.
    pub(super) fn with_host_bytes<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let chunk = &self.chunk;
        let ptr = chunk.host_ptr.ok_or_else(|| {
            crate::error!(
                Status::InvalidAllocation,
                "code object memory at {} has no host mapping to copy through",
                chunk.gpu_va
            )
        })?;
        let len = usize::try_from(chunk.size_bytes)
            .ok()
            .filter(|&l| l <= isize::MAX as usize)
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidAllocation,
                    "chunk of {} bytes does not fit the host",
                    chunk.size_bytes
                )
            })?;
        // SAFETY: by the `Platform` implementation-safety contract, `host_ptr` is valid for
        // reads and writes of `size_bytes` bytes until the chunk is freed (it is not: `self`
        // is alive and `freed` only becomes true in `free`/drop), and it overlaps no other
        // live chunk. `&mut self` makes this the only host reference to the bytes while `f`
        // runs; the slice does not outlive `f`.
        let bytes = unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), len) };
        Ok(f(bytes))
    }

    /// Frees the chunk.
    ///
    /// # Errors
    /// The platform's status (`ResourceFree`) when it could not release the chunk.
    pub(super) fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if self.freed {
            return Ok(());
        }
        self.freed = true;
        // SAFETY: the chunk came from this platform's `allocate_memory` (only `allocate`
        // builds an OwnedChunk) and `freed` guarantees it is freed once. The host holds no
        // reference into it (slices never escape `with_host_bytes`). That no kernel still
        // runs from it is the application's duty, as for `hsa_executable_destroy`; a late
        // GPU access faults on the device, not in this process.
        unsafe { self.platform.free_memory(&self.chunk) }
            .map_err(|e| e.context("freeing code object memory"))
    }
}

impl<H: PlatformRef> Drop for OwnedChunk<H> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}
