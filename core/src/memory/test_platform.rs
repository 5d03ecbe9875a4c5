//! A minimal test-only platform for the memory tests: chunks from the host heap (`std::alloc`),
//! or at made-up device addresses that nothing maps (`host_ptr: None`) to prove the pool never
//! touches managed memory. Records `map_memory` calls and live chunks.
#![allow(unsafe_code)]

use core::ptr::NonNull;
use std::alloc::Layout;
use std::sync::Mutex;
use std::vec::Vec;

use crate::addr::{EventId, GpuVa, NodeId, QueueId};
use crate::platform::{
    Cache, Event, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryRequest, NodeProperties,
    Platform, QueueRequest, WaitOutcome,
};
use crate::status::{Error, Status};

/// Where chunks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// Host heap: `gpu_va` = host address, `host_ptr` set.
    Host,
    /// Unmapped addresses from `0xdead_0000_0000` up; `host_ptr` None.
    Unmapped,
}

pub(crate) const UNMAPPED_BASE: u64 = 0xdead_0000_0000;

#[derive(Default)]
struct State {
    live: Vec<(MemoryChunk, usize)>, // chunk, layout align
    next_unmapped: u64,
    maps: Vec<(GpuVa, Vec<NodeId>)>,
    allocations: usize,
    fail_next: bool,
}

pub(crate) struct TestPlatform {
    backing: Backing,
    limit_bytes: u64,
    state: Mutex<State>,
}

impl TestPlatform {
    pub(crate) fn new(backing: Backing, limit_bytes: u64) -> TestPlatform {
        TestPlatform {
            backing,
            limit_bytes,
            state: Mutex::new(State {
                next_unmapped: UNMAPPED_BASE,
                ..State::default()
            }),
        }
    }

    pub(crate) fn live_chunks(&self) -> Vec<MemoryChunk> {
        self.state
            .lock()
            .unwrap()
            .live
            .iter()
            .map(|l| l.0)
            .collect()
    }

    pub(crate) fn chunk_allocations(&self) -> usize {
        self.state.lock().unwrap().allocations
    }

    pub(crate) fn maps(&self) -> Vec<(GpuVa, Vec<NodeId>)> {
        self.state.lock().unwrap().maps.clone()
    }

    pub(crate) fn fail_next_allocation(&self) {
        self.state.lock().unwrap().fail_next = true;
    }
}

impl Drop for TestPlatform {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap();
        for (c, align) in st.live.drain(..) {
            if let Some(p) = c.host_ptr {
                let layout = Layout::from_size_align(c.size_bytes as usize, align).unwrap();
                // SAFETY: allocated with this layout in `allocate_memory`, freed once here.
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
            }
        }
    }
}

// SAFETY: chunks are fresh zeroed heap allocations (or unmapped address ranges that are never
// handed a host pointer), aligned as asked, disjoint; state is behind a Mutex.
unsafe impl Platform for TestPlatform {
    type Error = Error;

    fn device_name(&self) -> &str {
        "memtest"
    }
    fn node_count(&self) -> usize {
        2
    }
    fn node(&self, index: usize) -> Result<NodeProperties, Error> {
        if index >= 2 {
            crate::bail!(Status::InvalidIndex, "node {index}");
        }
        Ok(NodeProperties {
            node_id: index as u32,
            ..NodeProperties::default()
        })
    }
    fn memory_bank(&self, _: usize, _: usize) -> Result<Option<MemoryBank>, Error> {
        Ok(None)
    }
    fn cache(&self, _: usize, _: usize) -> Result<Option<Cache>, Error> {
        Ok(None)
    }
    fn io_link(&self, _: usize, _: usize) -> Result<Option<IoLink>, Error> {
        Ok(None)
    }

    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        let mut st = self.state.lock().unwrap();
        if core::mem::take(&mut st.fail_next) {
            crate::bail!(Status::OutOfResources, "injected failure");
        }
        if request.size_bytes % 4096 != 0
            || !request.align_bytes.is_power_of_two()
            || request.align_bytes < 4096
        {
            crate::bail!(
                Status::InvalidArgument,
                "size {} align {}",
                request.size_bytes,
                request.align_bytes
            );
        }
        let held: u64 = st.live.iter().map(|l| l.0.size_bytes).sum();
        if held + request.size_bytes > self.limit_bytes {
            crate::bail!(
                Status::OutOfResources,
                "test platform limit {} bytes",
                self.limit_bytes
            );
        }
        let chunk = match self.backing {
            Backing::Host => {
                let layout = Layout::from_size_align(
                    request.size_bytes as usize,
                    request.align_bytes as usize,
                )
                .unwrap();
                // SAFETY: layout has non-zero size (a multiple of 4096 that passed the pool's checks).
                let p = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
                    .ok_or_else(|| crate::error!(Status::OutOfResources, "host heap"))?;
                MemoryChunk {
                    gpu_va: GpuVa(p.as_ptr().addr() as u64),
                    host_ptr: Some(p),
                    size_bytes: request.size_bytes,
                    handle: 0,
                }
            }
            Backing::Unmapped => {
                let base = st.next_unmapped.next_multiple_of(request.align_bytes);
                st.next_unmapped = base + request.size_bytes + 4096; // a gap between chunks
                MemoryChunk {
                    gpu_va: GpuVa(base),
                    host_ptr: None,
                    size_bytes: request.size_bytes,
                    handle: base,
                }
            }
        };
        st.live.push((chunk, request.align_bytes as usize));
        st.allocations += 1;
        Ok(chunk)
    }

    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        let mut st = self.state.lock().unwrap();
        let i = st.live.iter().position(|l| l.0 == *chunk).ok_or_else(|| {
            crate::error!(Status::ResourceFree, "chunk at {} not live", chunk.gpu_va)
        })?;
        let (c, align) = st.live.swap_remove(i);
        if let Some(p) = c.host_ptr {
            let layout = Layout::from_size_align(c.size_bytes as usize, align).unwrap();
            // SAFETY: allocated with this layout in `allocate_memory`; removed from `live`, so
            // freed once; the caller guarantees nothing uses it.
            unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
        }
        Ok(())
    }

    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<(), Error> {
        let mut st = self.state.lock().unwrap();
        if !st.live.iter().any(|l| l.0 == *chunk) {
            crate::bail!(
                Status::InvalidArgument,
                "chunk at {} not live",
                chunk.gpu_va
            );
        }
        st.maps.push((chunk.gpu_va, nodes.to_vec()));
        Ok(())
    }

    unsafe fn create_queue(&self, _: &QueueRequest) -> Result<HwQueue, Error> {
        crate::bail!(
            Status::InvalidQueueCreation,
            "the memory test platform has no queues"
        )
    }
    fn ring_doorbell(&self, _: QueueId, _: u64) {}
    fn destroy_queue(&self, queue: QueueId) -> Result<(), Error> {
        crate::bail!(Status::InvalidQueue, "queue {queue}")
    }
    fn create_event(&self) -> Result<Event, Error> {
        crate::bail!(
            Status::OutOfResources,
            "the memory test platform has no events"
        )
    }
    fn destroy_event(&self, event: EventId) -> Result<(), Error> {
        crate::bail!(Status::InvalidArgument, "event {event}")
    }
    fn wait_event(&self, event: EventId, _: u64) -> Result<WaitOutcome, Error> {
        crate::bail!(Status::InvalidArgument, "event {event}")
    }
    fn signal_event(&self, event: EventId) -> Result<(), Error> {
        crate::bail!(Status::InvalidArgument, "event {event}")
    }
    fn timestamp_ticks(&self) -> u64 {
        0
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
}
