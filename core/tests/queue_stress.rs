//! Stress: two producer threads push packets through a 64-slot multi-producer `AqlQueue` to a
//! consumer thread that checks a (producer, sequence) pair in every packet: each packet seen
//! exactly once, each producer's packets in order.
//!
//! 10^6 packets per producer in release builds; 10^5 in debug builds (unoptimised atomics and
//! bounds checks make 10^6 take minutes), 10^3 under miri.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use hsa_core::packet::EncodedPacket;
use hsa_core::platform::*;
use hsa_core::queue::ring::INVALID_HEADER_WORD;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::{Error, EventId, GpuVa, NodeId, QueueId, Status};

const PACKETS_PER_PRODUCER: u64 = if cfg!(miri) {
    1_000
} else if cfg!(debug_assertions) {
    100_000
} else {
    1_000_000
};

/// Host memory (GPU VA = host address), queues recorded, nothing else.
struct StressPlatform {
    start: Instant,
    chunks: Mutex<Vec<(u64, usize, Layout)>>,
    next: AtomicU64,
}

fn unsupported() -> Error {
    Error::new(Status::Error, "not supported by the stress platform")
}

// SAFETY: chunks are zeroed, aligned as asked, unique, valid until freed; thread-safe.
unsafe impl Platform for StressPlatform {
    type Error = Error;
    fn device_name(&self) -> &str {
        "stress"
    }
    fn node_count(&self) -> usize {
        1
    }
    fn node(&self, _: usize) -> Result<NodeProperties, Error> {
        Ok(NodeProperties::default())
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
    fn allocate_memory(&self, r: &MemoryRequest) -> Result<MemoryChunk, Error> {
        let layout = Layout::from_size_align(r.size_bytes as usize, r.align_bytes as usize)
            .map_err(|_| Error::new(Status::InvalidArgument, "layout"))?;
        // SAFETY: non-zero size (>= 4096).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let host = NonNull::new(ptr).ok_or_else(|| Error::new(Status::OutOfResources, "oom"))?;
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        self.chunks
            .lock()
            .unwrap()
            .push((handle, ptr as usize, layout));
        Ok(MemoryChunk {
            gpu_va: GpuVa(ptr as usize as u64),
            host_ptr: Some(host),
            size_bytes: r.size_bytes,
            handle,
        })
    }
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        let mut chunks = self.chunks.lock().unwrap();
        let i = chunks
            .iter()
            .position(|c| c.0 == chunk.handle)
            .ok_or_else(|| Error::new(Status::ResourceFree, "unknown chunk"))?;
        let (_, ptr, layout) = chunks.remove(i);
        // SAFETY: allocated above with this layout, removed from the table once.
        unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        Ok(())
    }
    fn map_memory(&self, _: &MemoryChunk, _: &[NodeId]) -> Result<(), Error> {
        Ok(())
    }
    unsafe fn create_queue(&self, _: &QueueRequest) -> Result<HwQueue, Error> {
        Ok(HwQueue {
            id: QueueId(1),
            doorbell_address: 0x1000,
        })
    }
    fn ring_doorbell(&self, _: QueueId, _: u64) {}
    fn destroy_queue(&self, _: QueueId) -> Result<(), Error> {
        Ok(())
    }
    fn create_event(&self) -> Result<Event, Error> {
        Err(unsupported())
    }
    fn destroy_event(&self, _: EventId) -> Result<(), Error> {
        Err(unsupported())
    }
    fn wait_event(&self, _: EventId, _: u64) -> Result<WaitOutcome, Error> {
        Err(unsupported())
    }
    fn signal_event(&self, _: EventId) -> Result<(), Error> {
        Err(unsupported())
    }
    fn timestamp_ticks(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
}

#[test]
fn two_producers_one_consumer_64_slots() {
    let platform = StressPlatform {
        start: Instant::now(),
        chunks: Mutex::new(Vec::new()),
        next: AtomicU64::new(1),
    };
    let queue = AqlQueue::create(&platform, &QueueConfig::new(NodeId(0), 64, 64, 1 << 17)).unwrap();
    // SAFETY: the ring is used only inside the scope below, while `queue` lives.
    let ring = unsafe { queue.ring() };
    let total = 2 * PACKETS_PER_PRODUCER;
    std::thread::scope(|s| {
        for producer in 0..2u64 {
            let queue = &queue;
            s.spawn(move || {
                for seq in 0..PACKETS_PER_PRODUCER {
                    let mut bytes = [0u8; 64];
                    bytes[0] = 1;
                    bytes[8..16].copy_from_slice(&producer.to_le_bytes());
                    bytes[16..24].copy_from_slice(&seq.to_le_bytes());
                    bytes[56..64].copy_from_slice(&(producer ^ seq).to_le_bytes());
                    let packet = EncodedPacket {
                        bytes,
                        header_word: 2 | ((producer as u32) << 16),
                    };
                    // Producer 0 waits inside `reserve` (fetch_add, then spin on the read index);
                    // producer 1 uses `try_reserve` (CAS) and yields while the queue is full, so
                    // three threads share this 2-core machine without starving the consumer.
                    let mut r = if producer == 0 {
                        queue.reserve(1).unwrap()
                    } else {
                        loop {
                            match queue.try_reserve(1) {
                                Ok(r) => break r,
                                Err(e) => {
                                    assert_eq!(e.status(), Status::OutOfResources);
                                    std::thread::yield_now();
                                }
                            }
                        }
                    };
                    let index = r.write(0, &packet).unwrap();
                    if seq % 1024 == 0 {
                        queue.ring_doorbell(index).unwrap();
                    }
                }
            });
        }
        s.spawn(move || {
            let mut next = [0u64; 2];
            for index in 0..total {
                let header = loop {
                    let h = ring.header_word(index).load(Ordering::Acquire);
                    if h != INVALID_HEADER_WORD {
                        break h;
                    }
                    std::thread::yield_now();
                };
                // SAFETY: the only consumer; a valid header was loaded with Acquire.
                let p = unsafe { ring.read_packet(index, header) };
                let producer = u64::from_le_bytes(p[8..16].try_into().unwrap());
                let seq = u64::from_le_bytes(p[16..24].try_into().unwrap());
                let check = u64::from_le_bytes(p[56..64].try_into().unwrap());
                assert!(producer < 2, "packet {index}: producer {producer}");
                assert_eq!(u64::from(header >> 16), producer, "packet {index}: header");
                assert_eq!(check, producer ^ seq, "packet {index}: torn body");
                assert_eq!(
                    seq, next[producer as usize],
                    "packet {index}: producer {producer} out of order"
                );
                next[producer as usize] += 1;
                ring.header_word(index)
                    .store(INVALID_HEADER_WORD, Ordering::Release);
                ring.read_index().store(index + 1, Ordering::Release);
            }
            assert_eq!(next, [PACKETS_PER_PRODUCER; 2]);
        });
    });
    assert_eq!(
        queue.load_write_index(hsa_core::signal::LoadOrder::Acquire),
        total
    );
    queue.destroy().unwrap();
    assert!(platform.chunks.lock().unwrap().is_empty());
}
