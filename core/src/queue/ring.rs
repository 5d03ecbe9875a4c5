//! The one place that touches AQL ring memory and the `amd_queue_t` indices: slot access with
//! the publish protocol's orderings.
//!
//! Producer: write the body (bytes 4..64) while the header still says INVALID, then store the
//! first 32 bits (header | setup) with Release. Consumer: Acquire-load the first 32 bits; once
//! the type is not INVALID the body is visible; after the packet is done, store an INVALID
//! header with Release, then advance `read_dispatch_id` with Release.
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::abi::packet::{PacketType, PACKET_SIZE_BYTES};
use crate::abi::queue::AmdQueue;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// The INVALID header word (type 1, nothing else) as the first 32 bits of a slot.
pub const INVALID_HEADER_WORD: u32 = PacketType::Invalid as u32;

/// A ring of 64-byte AQL packets and its `amd_queue_t`, by pointer.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    base: NonNull<u8>,
    size_packets: u32,
    queue: NonNull<AmdQueue>,
}

// SAFETY: all shared access to ring slots' first 32 bits and to the indices is atomic; bodies
// are written only by the producer that reserved the slot (before publishing) and read only
// by the consumer after the Acquire load of a valid header. The creator guarantees lifetime.
unsafe impl Send for Ring {}
// SAFETY: as for Send.
unsafe impl Sync for Ring {}

impl Ring {
    /// Makes a ring view.
    ///
    /// # Safety
    /// The caller guarantees: `base` points to `size_packets * 64` bytes, 64-byte aligned;
    /// `size_packets` is a power of two; `queue` points to a live `amd_queue_t`; both stay
    /// valid while the `Ring` (and copies) are used; nothing accesses slot headers or the
    /// dispatch ids except through a `Ring` (or the hardware, atomically).
    pub unsafe fn new(base: NonNull<u8>, size_packets: u32, queue: NonNull<AmdQueue>) -> Ring {
        debug_assert!(size_packets.is_power_of_two());
        Ring {
            base,
            size_packets,
            queue,
        }
    }

    /// Ring size, packets.
    pub fn size_packets(&self) -> u32 {
        self.size_packets
    }

    /// Pointer to the `amd_queue_t`.
    pub fn amd_queue(&self) -> NonNull<AmdQueue> {
        self.queue
    }

    /// Pointer to the ring base.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    fn slot_ptr(&self, index: u64) -> *mut u8 {
        let slot = (index & u64::from(self.size_packets - 1)) as usize;
        // In bounds: slot < size_packets and the ring has size_packets * 64 bytes.
        self.base.as_ptr().wrapping_add(slot * PACKET_SIZE_BYTES)
    }

    /// The atomic first 32 bits (header | setup) of the slot of `index`.
    pub fn header_word(&self, index: u64) -> &AtomicU32 {
        // SAFETY: `new`'s contract: the slot is live, 64-aligned (so 4-aligned) and its first
        // 32 bits are only accessed atomically.
        unsafe { &*self.slot_ptr(index).cast::<AtomicU32>() }
    }

    /// Writes bytes 4..64 of `packet` into the slot of `index`, leaving the header word alone.
    ///
    /// # Safety
    /// The caller guarantees it owns the slot: it reserved `index`, the consumer has passed
    /// it (`index - read_index < size`), and the header word is INVALID, so the consumer does
    /// not read the body concurrently.
    pub unsafe fn write_body(&self, index: u64, packet: &[u8; PACKET_SIZE_BYTES]) {
        let dst = self.slot_ptr(index);
        // SAFETY: the caller owns the slot; bytes 4..64 lie inside it and do not overlap the
        // header word, which others access atomically.
        unsafe {
            core::ptr::copy_nonoverlapping(
                packet.as_ptr().add(4),
                dst.add(4),
                PACKET_SIZE_BYTES - 4,
            )
        };
    }

    /// Publishes the slot of `index`: stores its header word with Release. Pairs with the
    /// consumer's Acquire load in [`Ring::header_word`] users (`processor`).
    pub fn publish(&self, index: u64, header_word: u32) {
        self.header_word(index)
            .store(header_word, Ordering::Release);
    }

    /// Copies the whole 64-byte packet of `index` out of the ring (the header word as
    /// `header_word`, already loaded by the caller with Acquire).
    ///
    /// # Safety
    /// The caller guarantees it is the consumer and has seen a valid header for `index` with
    /// an Acquire load, so the producer no longer writes the body.
    pub unsafe fn read_packet(&self, index: u64, header_word: u32) -> [u8; PACKET_SIZE_BYTES] {
        let mut out = [0u8; PACKET_SIZE_BYTES];
        // SAFETY: the caller is the consumer of a published slot; bytes 4..64 are stable.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.slot_ptr(index).add(4),
                out.as_mut_ptr().add(4),
                PACKET_SIZE_BYTES - 4,
            )
        };
        out[..4].copy_from_slice(&header_word.to_le_bytes());
        out
    }

    /// `amd_queue_t.write_dispatch_id` (offset 56) as an atomic.
    pub fn write_index(&self) -> &AtomicU64 {
        // SAFETY: `new`'s contract: live amd_queue_t, 64-aligned; offset 56 is 8-aligned and
        // accessed only atomically.
        unsafe { &*self.queue.as_ptr().cast::<u8>().add(56).cast::<AtomicU64>() }
    }

    /// `amd_queue_t.read_dispatch_id` (offset 128) as an atomic.
    pub fn read_index(&self) -> &AtomicU64 {
        // SAFETY: as for write_index; offset 128.
        unsafe {
            &*self
                .queue
                .as_ptr()
                .cast::<u8>()
                .add(128)
                .cast::<AtomicU64>()
        }
    }

    /// `amd_queue_t.queue_properties` (offset 180), read once.
    pub fn queue_properties(&self) -> u32 {
        // SAFETY: as for write_index; offset 180 is 4-aligned; written before the queue is
        // shared and then only read.
        unsafe {
            (*self
                .queue
                .as_ptr()
                .cast::<u8>()
                .add(180)
                .cast::<AtomicU32>())
            .load(Ordering::Relaxed)
        }
    }
}
