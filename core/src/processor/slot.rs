//! The processor's one `unsafe` seam: the consumer role of a ring, which may copy published
//! packets out of their slots.
#![allow(unsafe_code)]

use crate::abi::packet::PACKET_SIZE_BYTES;
use crate::queue::ring::{Ring, INVALID_HEADER_WORD};
use crate::sync::Ordering;

/// The consumer side of one [`Ring`]: the read index and the right to read published slots.
///
/// Made once per ring with [`RingConsumer::new`]; a [`PacketProcessor`](super::PacketProcessor)
/// owns it.
#[derive(Debug)]
pub struct RingConsumer {
    ring: Ring,
    read_index: u64,
}

impl RingConsumer {
    /// Takes the consumer role of `ring`, starting at its current `read_dispatch_id`.
    ///
    /// # Safety
    /// The caller guarantees this is the ring's only consumer for as long as it is used: no
    /// other consumer (or hardware queue) reads its slots, writes headers back to INVALID or
    /// advances its read index.
    pub unsafe fn new(ring: Ring) -> RingConsumer {
        RingConsumer {
            // Acquire pairs with the Release store of whoever consumed before (none, or a
            // previous consumer that was stopped).
            read_index: ring.read_index().load(Ordering::Acquire),
            ring,
        }
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The index, in packets, of the next packet to consume.
    pub fn read_index(&self) -> u64 {
        self.read_index
    }

    /// Loads the header word at the read index with Acquire and, when its type is not
    /// INVALID, copies the whole packet out; `None` while the slot holds no packet.
    ///
    /// The Acquire load pairs with the producer's Release store in [`Ring::publish`]: once
    /// the type is valid, the body written before it is visible.
    pub fn peek(&self) -> Option<[u8; PACKET_SIZE_BYTES]> {
        let word = self
            .ring
            .header_word(self.read_index)
            .load(Ordering::Acquire);
        if word & 0xff == INVALID_HEADER_WORD & 0xff {
            return None;
        }
        // SAFETY: `new`'s contract makes this the only consumer and `read_index` is its read
        // index; the Acquire load above saw a valid header, so the producer has finished the
        // body and will not write it again until `release` stores INVALID and advances the
        // read index.
        Some(unsafe { self.ring.read_packet(self.read_index, word) })
    }

    /// Frees the slot at the read index and advances the read index by one packet: stores
    /// INVALID into the header (Release), then the new read index into `read_dispatch_id`
    /// (Release, pairing with the producer's Acquire load of the read index in
    /// back-pressure). INVALID goes first so that a producer that sees the new read index
    /// never has its next header overwritten by this store.
    pub fn release(&mut self) {
        self.ring
            .header_word(self.read_index)
            .store(INVALID_HEADER_WORD, Ordering::Release);
        self.read_index = self.read_index.wrapping_add(1);
        self.ring
            .read_index()
            .store(self.read_index, Ordering::Release);
    }
}
