//! Loom model of the AQL producer protocol: two multi-producers and one consumer on a 4-slot
//! ring, five packets, so a producer must wait on the read index (back-pressure). Checks: every
//! packet consumed exactly once, each producer's packets in its order, none overwritten before
//! consumption (loom flags any unordered access to a slot body: bodies are loom `UnsafeCell`s
//! under `cfg(loom)`), and the final write index.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p hsa-core --release --test loom_queue`
#![cfg(loom)]

use hsa_core::packet::EncodedPacket;
use hsa_core::queue::ring::{ModelRing, INVALID_HEADER_WORD};
use hsa_core::queue::Producer;
use hsa_core::sync::Ordering;
use loom::sync::Arc;

/// Packets per producer: five through four slots, so one reservation must wait for the
/// consumer (six make the model take more than ten minutes).
const COUNTS: [u8; 2] = [3, 2];

fn packet(producer: u8, seq: u8) -> EncodedPacket {
    let mut bytes = [0u8; 64];
    bytes[0] = 1;
    bytes[8] = producer;
    bytes[9] = seq;
    EncodedPacket {
        bytes,
        header_word: 0x0000_0002 | (u32::from(producer) << 16),
    }
}

#[test]
fn two_producers_one_consumer_four_slots() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // Waiting producers and the polling consumer spin (yielding); allow long spins.
    builder.max_branches = 100_000;
    builder.check(|| {
        let storage = Arc::new(ModelRing::new(4));
        let producers: Vec<_> = (0..2u8)
            .map(|p| {
                let storage = storage.clone();
                loom::thread::spawn(move || {
                    let producer = Producer::new(storage.ring(), true);
                    for k in 0..COUNTS[p as usize] {
                        let mut r = producer.reserve(1).unwrap();
                        r.write(0, &packet(p, k)).unwrap();
                    }
                })
            })
            .collect();

        // The consumer, as the packet processor does it.
        let ring = storage.ring();
        let mut next = [0u8; 2];
        for index in 0..u64::from(COUNTS[0] + COUNTS[1]) {
            let header = loop {
                let h = ring.header_word(index).load(Ordering::Acquire);
                if h != INVALID_HEADER_WORD {
                    break h;
                }
                loom::thread::yield_now();
            };
            // SAFETY: this thread is the only consumer and saw a valid header with Acquire.
            let p = unsafe { ring.read_packet(index, header) };
            let (producer, seq) = (p[8] as usize, p[9]);
            assert_eq!(
                header >> 16,
                producer as u32,
                "header and body from one packet"
            );
            assert_eq!(
                seq, next[producer],
                "producer {producer}'s packets in order"
            );
            next[producer] += 1;
            // Release pairs with a producer's Acquire load of the read index in `reserve`.
            ring.header_word(index)
                .store(INVALID_HEADER_WORD, Ordering::Release);
            ring.read_index().store(index + 1, Ordering::Release);
        }
        for t in producers {
            t.join().unwrap();
        }
        assert_eq!(next, COUNTS, "every packet consumed exactly once");
        assert_eq!(
            ring.write_index().load(Ordering::Acquire),
            u64::from(COUNTS[0] + COUNTS[1])
        );
    });
}
