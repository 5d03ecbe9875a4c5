//! Stress: two producer threads push packets through a 64-slot multi-producer `AqlQueue` to a
//! consumer thread that checks a (producer, sequence) pair in every packet: each packet seen
//! exactly once, each producer's packets in order.
//!
//! 10^6 packets per producer in release builds; 10^5 in debug builds (unoptimised atomics and
//! bounds checks make 10^6 take minutes), 10^3 under miri.

use std::sync::atomic::Ordering;

use hsa_core::packet::EncodedPacket;
use hsa_core::platform::fake::FakePlatform;
use hsa_core::queue::ring::INVALID_HEADER_WORD;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::{NodeId, Status};

const PACKETS_PER_PRODUCER: u64 = if cfg!(miri) {
    1_000
} else if cfg!(debug_assertions) {
    100_000
} else {
    1_000_000
};

#[test]
fn two_producers_one_consumer_64_slots() {
    // The fake only records queues: the consumer thread below plays the packet processor.
    let platform = FakePlatform::new();
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
    assert!(platform.live_chunks().is_empty());
}
