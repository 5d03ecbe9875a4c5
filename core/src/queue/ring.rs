//! The one place that touches AQL ring memory and the `amd_queue_t` indices: slot access with
//! the publish protocol's orderings.
//!
//! Producer: write the body (bytes 4..64) while the header still says INVALID, then store the
//! first 32 bits (header | setup) with Release. Consumer: Acquire-load the first 32 bits; once
//! the type is not INVALID the body is visible; after the packet is done, store an INVALID
//! header with Release, then advance `read_dispatch_id` with Release.
//!
//! Under `cfg(loom)` the same `Ring` runs over a `ModelRing` on the heap: each slot is a loom
//! `AtomicU32` header plus a loom `UnsafeCell` body (so loom reports any access to a body that
//! is not ordered by the protocol), and the two indices are loom atomics. Raw ring memory cannot
//! hold loom atomics, which carry model state.
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::abi::packet::{PacketType, PACKET_SIZE_BYTES};
#[cfg(not(loom))]
use crate::abi::queue::AmdQueue;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// The INVALID header word (type 1, nothing else) as the first 32 bits of a slot.
pub const INVALID_HEADER_WORD: u32 = PacketType::Invalid as u32;

/// A ring of 64-byte AQL packets and its `amd_queue_t`, by pointer.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    #[cfg(not(loom))]
    base: NonNull<u8>,
    #[cfg(loom)]
    base: NonNull<ModelSlot>,
    size_packets: u32,
    #[cfg(not(loom))]
    queue: NonNull<AmdQueue>,
    #[cfg(loom)]
    queue: NonNull<ModelIndices>,
}

// SAFETY: all shared access to ring slots' first 32 bits and to the indices is atomic; bodies
// are written only by the producer that reserved the slot (before publishing) and read only
// by the consumer after the Acquire load of a valid header. The creator guarantees lifetime.
unsafe impl Send for Ring {}
// SAFETY: as for Send.
unsafe impl Sync for Ring {}

#[cfg(not(loom))]
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

    /// Sets the bits `set`, then clears the bits `clear`, of `amd_queue_t.queue_properties`
    /// with atomic read-modify-writes (the packet processor reads the word at every packet).
    pub fn update_queue_properties(&self, set: u32, clear: u32) {
        // SAFETY: as for queue_properties: offset 180 of the live amd_queue_t, 4-aligned,
        // only accessed atomically once the queue is shared.
        let word = unsafe {
            &*self
                .queue
                .as_ptr()
                .cast::<u8>()
                .add(180)
                .cast::<AtomicU32>()
        };
        word.fetch_or(set, Ordering::AcqRel);
        word.fetch_and(!clear, Ordering::AcqRel);
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

    /// Writes bytes 4..64 of `packet` into the slot of `index` with relaxed atomic stores
    /// (one 32-bit, seven 64-bit), leaving the header word alone.
    ///
    /// Safe where [`Ring::write_body`] is not: a misbehaving second producer (two threads on a
    /// single-producer queue, or a write index moved back by hand) yields a garbled packet,
    /// never a data race. On x86_64 and AArch64 relaxed stores are plain stores. The
    /// [`Ring::publish`] Release store that follows orders them before the header.
    pub fn store_body(&self, index: u64, packet: &[u8; PACKET_SIZE_BYTES]) {
        let dst = self.slot_ptr(index);
        // SAFETY: `new`'s contract: the slot is live and 64-aligned; bytes 4..8 and 8..64 lie
        // inside it (4- and 8-aligned) and are here accessed atomically only.
        let word = unsafe { &*dst.add(4).cast::<AtomicU32>() };
        word.store(
            u32::from_le_bytes([packet[4], packet[5], packet[6], packet[7]]),
            Ordering::Relaxed,
        );
        for (i, chunk) in packet[8..].chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            // SAFETY: as above; 8 + 8 * i < 64 for i < 7, 8-aligned.
            let q = unsafe { &*dst.add(8 + 8 * i).cast::<AtomicU64>() };
            q.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
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

    /// `amd_queue_t.queue_inactive_signal` (offset 192): the handle of the signal the packet
    /// processor sets when it stops the queue with an error (null for none).
    pub fn queue_inactive_signal(&self) -> crate::abi::SignalHandle {
        // SAFETY: as for write_index; offset 192 is 8-aligned; written before the queue is
        // shared and then only read.
        let raw = unsafe {
            (*self
                .queue
                .as_ptr()
                .cast::<u8>()
                .add(192)
                .cast::<AtomicU64>())
            .load(Ordering::Relaxed)
        };
        crate::abi::SignalHandle(raw)
    }

    /// `amd_queue_t.queue_properties` (offset 180), loaded atomically: the host may change
    /// a bit of a live queue (`AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`), as ROCR does.
    pub fn queue_properties(&self) -> u32 {
        // SAFETY: as for write_index; offset 180 is 4-aligned; written before the queue is
        // shared, afterwards only changed with atomic stores of the whole word.
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

impl Ring {
    /// Ring size, packets.
    pub fn size_packets(&self) -> u32 {
        self.size_packets
    }

    /// Publishes the slot of `index`: stores its header word with Release. Pairs with the
    /// consumer's Acquire load in [`Ring::header_word`] users (`processor`).
    pub fn publish(&self, index: u64, header_word: u32) {
        self.header_word(index)
            .store(header_word, Ordering::Release);
    }
}

/// One ring slot of a [`ModelRing`] (loom only).
#[cfg(loom)]
#[derive(Debug)]
pub struct ModelSlot {
    header: AtomicU32,
    body: loom::cell::UnsafeCell<[u8; PACKET_SIZE_BYTES - 4]>,
}

/// The two dispatch ids of a [`ModelRing`] (loom only).
#[cfg(loom)]
#[derive(Debug)]
pub struct ModelIndices {
    write: AtomicU64,
    read: AtomicU64,
}

/// Heap storage for a ring under loom: slots (INVALID headers) and indices (0). Keep it alive
/// (e.g. in an `Arc`) while any [`Ring`] from [`ModelRing::ring`] is used.
#[cfg(loom)]
#[derive(Debug)]
pub struct ModelRing {
    slots: alloc::boxed::Box<[ModelSlot]>,
    indices: alloc::boxed::Box<ModelIndices>,
}

#[cfg(loom)]
impl ModelRing {
    /// A ring of `size_packets` (a power of two) slots.
    pub fn new(size_packets: u32) -> ModelRing {
        assert!(size_packets.is_power_of_two());
        let slots = (0..size_packets)
            .map(|_| ModelSlot {
                header: AtomicU32::new(INVALID_HEADER_WORD),
                body: loom::cell::UnsafeCell::new([0; PACKET_SIZE_BYTES - 4]),
            })
            .collect();
        ModelRing {
            slots,
            indices: alloc::boxed::Box::new(ModelIndices {
                write: AtomicU64::new(0),
                read: AtomicU64::new(0),
            }),
        }
    }

    /// A `Ring` over this storage.
    pub fn ring(&self) -> Ring {
        Ring {
            base: NonNull::from(&self.slots[0]),
            size_packets: self.slots.len() as u32,
            queue: NonNull::from(&*self.indices),
        }
    }
}

#[cfg(loom)]
impl Ring {
    fn slot(&self, index: u64) -> &ModelSlot {
        let slot = (index & u64::from(self.size_packets - 1)) as usize;
        // SAFETY: `ModelRing::ring`: base points to size_packets live slots, kept alive by the
        // caller's ModelRing.
        unsafe { &*self.base.as_ptr().add(slot) }
    }

    /// The atomic first 32 bits (header | setup) of the slot of `index`.
    pub fn header_word(&self, index: u64) -> &AtomicU32 {
        &self.slot(index).header
    }

    /// `amd_queue_t.queue_properties`: a model ring has none (no profiling).
    pub fn queue_properties(&self) -> u32 {
        0
    }

    /// A model ring has no `queue_properties`: nothing to update.
    pub fn update_queue_properties(&self, _set: u32, _clear: u32) {}

    /// `amd_queue_t.queue_inactive_signal`: a model ring has none.
    pub fn queue_inactive_signal(&self) -> crate::abi::SignalHandle {
        crate::abi::SignalHandle::NULL
    }

    /// Writes bytes 4..64 of `packet` into the slot of `index` (loom: a tracked cell write).
    ///
    /// # Safety
    /// As in the non-loom build.
    pub unsafe fn write_body(&self, index: u64, packet: &[u8; PACKET_SIZE_BYTES]) {
        self.store_body(index, packet)
    }

    /// Writes bytes 4..64 of `packet` into the slot of `index`. Under loom this is a tracked
    /// non-atomic write, so loom flags any producer/consumer overlap the protocol allows.
    pub fn store_body(&self, index: u64, packet: &[u8; PACKET_SIZE_BYTES]) {
        self.slot(index).body.with_mut(|p| {
            // SAFETY: loom checks this access against every other access to the cell.
            unsafe { (*p).copy_from_slice(&packet[4..]) }
        });
    }

    /// Copies the packet of `index` out (loom: a tracked cell read).
    ///
    /// # Safety
    /// As in the non-loom build.
    pub unsafe fn read_packet(&self, index: u64, header_word: u32) -> [u8; PACKET_SIZE_BYTES] {
        let mut out = [0u8; PACKET_SIZE_BYTES];
        self.slot(index).body.with(|p| {
            // SAFETY: loom checks this access against every other access to the cell.
            out[4..].copy_from_slice(unsafe { &*p })
        });
        out[..4].copy_from_slice(&header_word.to_le_bytes());
        out
    }

    /// The write index.
    pub fn write_index(&self) -> &AtomicU64 {
        // SAFETY: `ModelRing::ring`: live indices kept alive by the caller's ModelRing.
        unsafe { &(*self.queue.as_ptr()).write }
    }

    /// The read index.
    pub fn read_index(&self) -> &AtomicU64 {
        // SAFETY: as for write_index.
        unsafe { &(*self.queue.as_ptr()).read }
    }
}
