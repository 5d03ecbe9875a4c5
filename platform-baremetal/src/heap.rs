//! A spin-locked `linked_list_allocator` heap over a system-memory chunk of the carve-outs,
//! usable as `#[global_allocator]` (feature `alloc`).
//!
//! Its free list lives inside the managed memory, which is why it only ever covers
//! CPU-visible system memory, and it is nothing hot (first fit).
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};

use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest};
use hsa_core::{Error, Status};
use linked_list_allocator::Heap;

use crate::host::Host;
use crate::BaremetalPlatform;

/// The heap. Starts empty (every allocation fails) until [`BaremetalPlatform::init_heap`].
pub struct CarveOutHeap {
    heap: spin::Mutex<Heap>,
}

impl core::fmt::Debug for CarveOutHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let h = self.heap.lock();
        write!(
            f,
            "CarveOutHeap({:#x} of {:#x} bytes used)",
            h.used(),
            h.size()
        )
    }
}

impl Default for CarveOutHeap {
    fn default() -> Self {
        Self::empty()
    }
}

impl CarveOutHeap {
    /// An empty heap, for a `static`.
    pub const fn empty() -> CarveOutHeap {
        CarveOutHeap {
            heap: spin::Mutex::new(Heap::empty()),
        }
    }

    /// Bytes in use.
    pub fn used_bytes(&self) -> usize {
        self.heap.lock().used()
    }

    /// Bytes managed.
    pub fn size_bytes(&self) -> usize {
        self.heap.lock().size()
    }
}

// SAFETY: allocation and deallocation go through `linked_list_allocator::Heap` under a lock;
// the memory it manages was given by `init_heap` from a carve-out chunk that is never freed
// and that the host keeps valid for the 'static platform's life.
unsafe impl GlobalAlloc for CarveOutHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.heap
            .lock()
            .allocate_first_fit(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: the GlobalAlloc contract: `ptr` came from `alloc` on this heap with
            // `layout`.
            unsafe { self.heap.lock().deallocate(p, layout) }
        }
    }
}

impl<H: Host, const W: usize> BaremetalPlatform<H, W> {
    /// Gives `heap` a `size_bytes` chunk of system memory (page-rounded) from the carve-outs,
    /// never freed. Needs `'static` so the memory outlives every allocation.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `heap` already has memory or `size_bytes` is 0;
    /// `Status::OutOfResources` when system memory has no room or the CPU cannot touch it.
    pub fn init_heap(
        &'static self,
        heap: &'static CarveOutHeap,
        size_bytes: usize,
    ) -> Result<(), Error> {
        let mut h = heap.heap.lock();
        if h.size() != 0 || size_bytes == 0 {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [h.size() as u64, size_bytes as u64],
                |&[has, size_bytes, ..], f| {
                    write!(f, "heap has {has:#x} bytes; size_bytes {size_bytes:#x}")
                },
            ));
        }
        let Some(node) = self.memory.any_system_node() else {
            hsa_core::bail!(
                Status::OutOfResources,
                "no system-memory carve-out for the heap"
            );
        };
        let size = (size_bytes as u64).next_multiple_of(crate::carveout::PAGE_BYTES);
        let a = self.memory.allocate(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: size,
            align_bytes: crate::carveout::PAGE_BYTES,
            flags: MemoryFlags::HOST_ACCESS,
        })?;
        let Some(virt) = a.virt else {
            let _ = self.memory.free(a.handle(), a.size_bytes);
            return Err(Error::lazy(
                Status::OutOfResources,
                [a.carve_out as u64],
                |&[i, ..], f| write!(f, "system carve-out {i} has no CPU mapping"),
            ));
        };
        // SAFETY: `[virt, virt + size)` is a chunk of a CPU-mapped system-memory carve-out that
        // the allocator gave out exclusively and that is never freed; the host keeps it valid
        // for the 'static platform's life.
        unsafe { h.init(virt as *mut u8, size as usize) };
        Ok(())
    }
}
