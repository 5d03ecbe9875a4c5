//! The producer half of the AQL protocol over a [`Ring`]: reserve with back-pressure, write
//! and publish. Platform-free, so loom models run exactly this code over a model ring.
//!
//! Ref: HSA Runtime 1.2 §2.6 (write index reservation, `hsa_queue_add_write_index_*`);
//! HSA PSA 1.2 §2.9 (packet publication: the header is written last, atomically).

use crate::abi::packet::PacketType;
use crate::packet::EncodedPacket;
use crate::status::{Error, Result, Status};
use crate::sync::{AtomicU64, Ordering};

use super::ring::Ring;

/// Reserves slots of a ring and publishes packets into them.
#[derive(Debug)]
pub struct Producer {
    ring: Ring,
    multi: bool,
    /// The read index as last loaded from the ring, packets. It only grows, so a stale value
    /// is conservative (it shows less free space); the shared `read_dispatch_id` line, which
    /// the consumer writes after every packet, is loaded only when this value says "full".
    /// Stored with Release after an Acquire load of the ring's read index and loaded with
    /// Acquire, so a producer that trusts it is ordered after the consumer's reads of the slot
    /// just as if it had loaded the read index itself.
    cached_read: AtomicU64,
}

impl Producer {
    /// A producer over `ring`; `multi` selects the multi-producer reservation (atomic add on
    /// the write index) over the single-producer one (load, then store).
    pub fn new(ring: Ring, multi: bool) -> Producer {
        // Acquire pairs with the consumer's Release store of the read index, as in `fits`.
        let read = ring.read_index().load(Ordering::Acquire);
        Producer {
            ring,
            multi,
            cached_read: AtomicU64::new(read),
        }
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    fn check_count(&self, count: u32) -> Result<()> {
        let size = self.ring.size_packets();
        if count == 0 || count > size {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [count.into(), size.into()],
                |&[count, size, ..], f| {
                    write!(
                        f,
                        "reserve count {count} must be between 1 and the queue size {size}"
                    )
                },
            ));
        }
        Ok(())
    }

    /// Whether the slots up to `end` (exclusive) are free, given the read index: the consumer
    /// has released every packet `end - size` places back.
    fn fits(&self, end: u64) -> bool {
        let size = u64::from(self.ring.size_packets());
        // Fast path: the cached read index (see `cached_read`) already shows room. Acquire
        // pairs with the Release store below (by this or another producer).
        if end.wrapping_sub(self.cached_read.load(Ordering::Acquire)) <= size {
            return true;
        }
        // Acquire pairs with the consumer's Release store of the read index, made after it
        // stored the INVALID header: the slot is free and the consumer's reads of it are done.
        let read = self.ring.read_index().load(Ordering::Acquire);
        // Release: whoever trusts the cached value is ordered after the Acquire load above.
        // fetch_max so that a slower producer never moves the cache back.
        self.cached_read.fetch_max(read, Ordering::AcqRel);
        end.wrapping_sub(read) <= size
    }

    /// Reserves `count` consecutive packet slots, waiting (spinning) until the packet
    /// processor has consumed enough packets that none of them holds an unconsumed packet.
    /// Multi-producer: `fetch_add` with AcqRel on the write index, then wait; single: wait,
    /// then store the new write index (Release).
    ///
    /// Never returns while the queue is full; with a stopped processor it spins forever (use
    /// [`try_reserve`](Self::try_reserve) to get an error instead).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `count` is 0 or larger than the queue.
    pub fn reserve(&self, count: u32) -> Result<Reservation<'_>> {
        self.reserve_unless(count, || None)
    }

    /// [`reserve`](Self::reserve), except that while it waits for room it asks `stopped`
    /// (once per backoff round) whether the queue can still make progress, and returns that
    /// error when it cannot. A multi-producer reservation has then already taken its write
    /// indices; they stay unwritten, which only matters to a queue that runs again.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `count` is 0 or larger than the queue; the error
    /// `stopped` returned.
    pub fn reserve_unless(
        &self,
        count: u32,
        stopped: impl Fn() -> Option<crate::Error>,
    ) -> Result<Reservation<'_>> {
        self.check_count(count)?;
        let wi = self.ring.write_index();
        let n = u64::from(count);
        let start = if self.multi {
            wi.fetch_add(n, Ordering::AcqRel)
        } else {
            wi.load(Ordering::Relaxed)
        };
        let mut backoff = crate::signal::wait::Backoff::new();
        while !self.fits(start.wrapping_add(n)) {
            if let Some(e) = stopped() {
                return Err(e);
            }
            backoff.spin();
        }
        if !self.multi {
            wi.store(start.wrapping_add(n), Ordering::Release);
        }
        Ok(Reservation::new(self, start, count))
    }

    /// Reserves `count` slots if they are free now, without waiting. Multi-producer: a
    /// compare-and-swap loop on the write index, so a failed attempt reserves nothing.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `count` is 0 or larger than the queue;
    /// `Status::OutOfResources` when the queue has fewer than `count` free slots (the write
    /// index is left unchanged).
    pub fn try_reserve(&self, count: u32) -> Result<Reservation<'_>> {
        self.check_count(count)?;
        let wi = self.ring.write_index();
        let n = u64::from(count);
        let mut start = wi.load(Ordering::Relaxed);
        loop {
            if !self.fits(start.wrapping_add(n)) {
                let size = self.ring.size_packets().into();
                let read = self.ring.read_index().load(Ordering::Relaxed);
                return Err(Error::lazy(
                    Status::OutOfResources,
                    [n, start, size, read],
                    |&[count, start, size, read, ..], f| {
                        write!(
                            f,
                            "queue full: {count} packets at write index {start} do not fit a \
                             queue of {size} with read index {read}"
                        )
                    },
                ));
            }
            if !self.multi {
                wi.store(start.wrapping_add(n), Ordering::Release);
                return Ok(Reservation::new(self, start, count));
            }
            match wi.compare_exchange_weak(
                start,
                start.wrapping_add(n),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Reservation::new(self, start, count)),
                Err(now) => start = now,
            }
        }
    }
}

/// Slots `start .. start + count` of a queue, reserved by one producer, to be written in
/// order with [`write`](Reservation::write).
///
/// Every reserved slot must be written: the packet processor consumes packets in order and
/// stops at a slot whose header is still INVALID. Dropping a reservation with unwritten slots
/// stalls the queue (HSA gives the producer no way to give a write index back).
#[must_use = "reserved slots must be written or the queue stalls"]
#[derive(Debug)]
pub struct Reservation<'a> {
    producer: &'a Producer,
    start: u64,
    count: u32,
    next: u32,
}

impl<'a> Reservation<'a> {
    fn new(producer: &'a Producer, start: u64, count: u32) -> Self {
        Reservation {
            producer,
            start,
            count,
            next: 0,
        }
    }

    /// The first reserved packet index (write index before the reservation).
    pub fn start_index(&self) -> u64 {
        self.start
    }

    /// The last reserved packet index: what to ring the doorbell with.
    pub fn last_index(&self) -> u64 {
        self.start.wrapping_add(u64::from(self.count) - 1)
    }

    /// Slots reserved.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Slots written so far.
    pub fn written(&self) -> u32 {
        self.next
    }

    /// Writes `packet` into slot `i` (0-based within the reservation): the body with plain
    /// (relaxed) stores while the header is INVALID, then the header word with one Release
    /// store, which pairs with the processor's Acquire load of the header. Returns the
    /// packet's index.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `i` is not the next unwritten slot (slots are written
    /// once each, in order) or `i >= count`; `Status::InvalidPacketFormat` when the packet's
    /// header word has type INVALID (it would never be consumed).
    pub fn write(&mut self, i: u32, packet: &EncodedPacket) -> Result<u64> {
        if i >= self.count || i != self.next {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [i.into(), self.next.into(), self.count.into()],
                |&[i, next, count, ..], f| {
                    write!(
                        f,
                        "reservation slot {i}: next unwritten slot is {next} of {count}"
                    )
                },
            ));
        }
        if packet.header_word & 0xff == PacketType::Invalid as u32 {
            return Err(Error::lazy(
                Status::InvalidPacketFormat,
                [packet.header_word.into()],
                |&[word, ..], f| write!(f, "packet header word {word:#010x} has type INVALID"),
            ));
        }
        let index = self.start.wrapping_add(u64::from(i));
        let ring = self.producer.ring();
        ring.store_body(index, &packet.bytes);
        ring.publish(index, packet.header_word);
        self.next += 1;
        Ok(index)
    }

    /// Writes `packet` into the next unwritten slot; see [`write`](Self::write).
    ///
    /// # Errors
    /// As for `write`; `Status::InvalidArgument` when every slot is written.
    pub fn write_next(&mut self, packet: &EncodedPacket) -> Result<u64> {
        self.write(self.next, packet)
    }
}
