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

#[cfg(all(test, not(loom)))]
mod tests {
    use core::ptr::NonNull;
    use std::cell::RefCell;
    use std::vec::Vec;

    use super::RingConsumer;
    use crate::abi::queue::AmdQueue;
    use crate::abi::SignalHandle;
    use crate::addr::GpuVa;
    use crate::packet::KernelDispatch as Builder;
    use crate::packet_processor::vendor::tests::{rocr_packet, rocr_pm4};
    use crate::packet_processor::{
        DecodedAgentDispatch, DecodedKernelDispatch, DecodedPm4Ib, PacketProcessor, ProcessorHost,
        Progress,
    };
    use crate::queue::ring::{Ring, INVALID_HEADER_WORD};
    use crate::signal::raw::RawSignal;
    use crate::status::{Error, Result, Status};
    use zerocopy::FromZeros;

    #[repr(C, align(64))]
    struct Storage {
        slots: [[u8; 64]; 4],
        queue: AmdQueue,
    }

    #[derive(Default)]
    struct Recorder(RefCell<Vec<DecodedKernelDispatch>>);

    impl ProcessorHost for Recorder {
        fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> Result<()> {
            self.0.borrow_mut().push(*dispatch);
            Ok(())
        }
        fn agent_dispatch(&self, _: &DecodedAgentDispatch) -> Result<()> {
            Err(crate::error!(Status::Error, "none"))
        }
        fn resolve_signal(&self, _: SignalHandle) -> Result<RawSignal> {
            Err(crate::error!(Status::InvalidSignal, "none"))
        }
        fn write_mailbox(&self, _: GpuVa, _: u32) -> Result<()> {
            Ok(())
        }
        fn signal_event(&self, _: u32) {}
        fn timestamp_ticks(&self) -> u64 {
            0
        }
        fn report_error(&self, _: &Error) {}
    }

    /// Publishes 6 kernel dispatches (wrapping the 4-slot ring) and checks that each
    /// dispatch carries its slot's device address, the queue's and its index.
    #[test]
    fn kernel_dispatch_carries_packet_queue_addresses_and_dispatch_id() {
        let mut storage = std::boxed::Box::new(Storage {
            slots: [[0; 64]; 4],
            queue: AmdQueue::new_zeroed(),
        });
        let base = NonNull::from(&mut storage.slots).cast::<u8>();
        let queue = NonNull::from(&mut storage.queue);
        // SAFETY: `storage` (boxed, 64-aligned) outlives the ring and the consumer below; 4
        // slots of 64 bytes; slot headers and indices are only touched through the Ring.
        let ring = unsafe { Ring::new(base, 4, queue) };
        for i in 0..4 {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, crate::sync::Ordering::Relaxed);
        }
        // SAFETY: the only consumer of this ring.
        let consumer = unsafe { RingConsumer::new(ring) };
        let mut p = PacketProcessor::new(consumer);
        let host_base = base.as_ptr() as u64;
        assert_eq!(p.packet_address(5), GpuVa(host_base + 64));
        p.set_device_addresses(GpuVa(0x7000_0000), GpuVa(0x7000_1000));
        let rec = Recorder::default();
        for index in 0..6u64 {
            let pkt = Builder::one_dimensional(GpuVa(0x40_0000), GpuVa(0x50_0000), 64, 256)
                .emit()
                .unwrap();
            // SAFETY: single producer; the slot was consumed (or never used), so its header
            // is INVALID and the consumer does not read the body.
            unsafe { ring.write_body(index, &pkt.bytes) };
            ring.publish(index, pkt.header_word);
            assert_eq!(p.process(&rec, 8), Progress::Processed(1));
        }
        let got = rec.0.borrow();
        assert_eq!(got.len(), 6);
        for (i, d) in got.iter().enumerate() {
            assert_eq!(d.dispatch_id, i as u64);
            assert_eq!(d.packet_address, GpuVa(0x7000_0000 + (i as u64 % 4) * 64));
            assert_eq!(d.queue_address, GpuVa(0x7000_1000));
            assert_eq!(d.workgroup_size, [64, 1, 1]);
        }
    }

    /// A host that records the PM4 it is given.
    #[derive(Default)]
    struct Pm4Host(RefCell<Vec<DecodedPm4Ib>>);

    impl ProcessorHost for Pm4Host {
        fn execute_kernel(&self, _: &DecodedKernelDispatch) -> Result<()> {
            Err(crate::error!(Status::Error, "none"))
        }
        fn agent_dispatch(&self, _: &DecodedAgentDispatch) -> Result<()> {
            Err(crate::error!(Status::Error, "none"))
        }
        fn execute_pm4(&self, packet: &DecodedPm4Ib) -> Result<()> {
            self.0.borrow_mut().push(*packet);
            Ok(())
        }
        fn resolve_signal(&self, _: SignalHandle) -> Result<RawSignal> {
            Err(crate::error!(Status::InvalidSignal, "none"))
        }
        fn write_mailbox(&self, _: GpuVa, _: u32) -> Result<()> {
            Ok(())
        }
        fn signal_event(&self, _: u32) {}
        fn timestamp_ticks(&self) -> u64 {
            0
        }
        fn report_error(&self, _: &Error) {}
    }

    /// Publishes `packet` into slot 0 of a fresh 2-slot ring and processes it with `host`;
    /// returns the progress and the read index after.
    fn process_one<H: ProcessorHost>(packet: [u8; 64], host: &H) -> (Progress, u64) {
        let mut storage = std::boxed::Box::new(Storage {
            slots: [[0; 64]; 4],
            queue: AmdQueue::new_zeroed(),
        });
        let base = NonNull::from(&mut storage.slots).cast::<u8>();
        let queue = NonNull::from(&mut storage.queue);
        // SAFETY: `storage` (boxed, 64-aligned) outlives the ring and the consumer below; 2
        // of its 4 slots of 64 bytes; slot headers and indices are only touched through the
        // Ring.
        let ring = unsafe { Ring::new(base, 2, queue) };
        for i in 0..2 {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, crate::sync::Ordering::Relaxed);
        }
        // SAFETY: single producer; slot 0 was never used, so its header is INVALID.
        unsafe { ring.write_body(0, &packet) };
        ring.publish(
            0,
            u32::from_le_bytes([packet[0], packet[1], packet[2], packet[3]]),
        );
        // SAFETY: the only consumer of this ring.
        let consumer = unsafe { RingConsumer::new(ring) };
        let progress = PacketProcessor::new(consumer).process(host, 4);
        (
            progress,
            ring.read_index().load(crate::sync::Ordering::Acquire),
        )
    }

    /// ROCR's PM4-IB vendor packet reaches the host's `execute_pm4` and completes: the read
    /// index passes it (what ROCR 5.2's `ExecutePM4` waits for).
    #[test]
    fn processor_hands_pm4_to_its_host_and_completes_the_packet() {
        let host = Pm4Host::default();
        let (progress, read) = process_one(rocr_packet(), &host);
        assert_eq!(progress, Progress::Processed(1));
        assert_eq!(read, 1);
        assert_eq!(host.0.borrow()[0].pm4, rocr_pm4());
    }

    /// A host without a PM4 engine (the trait's default, e.g. [`Recorder`]) stops the queue at
    /// the packet with `INVALID_PACKET_FORMAT`.
    #[test]
    fn a_host_without_pm4_stops_the_queue_with_invalid_packet_format() {
        let (progress, read) = process_one(rocr_packet(), &Recorder::default());
        let Progress::Stopped(e) = progress else {
            panic!("{progress:?}")
        };
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "packet 0: AMD vendor packet of format PM4_IB (1), PM4 header 0xc0023f00: this \
             packet processor runs no PM4 commands"
        );
        assert_eq!(read, 0);
    }

    /// A host whose first `requests` kernel executions are the CP's scratch request (the
    /// queue's scratch too small); it resolves one signal, the queue's inactive signal.
    struct ScratchHost {
        requests: core::cell::Cell<u32>,
        ran: core::cell::Cell<u32>,
        errors: core::cell::Cell<u32>,
        inactive: NonNull<crate::abi::signal::AmdSignal>,
        /// The request execute_kernel just failed with.
        pending: core::cell::Cell<Option<crate::queue::inactive::ScratchRequest>>,
    }

    impl ProcessorHost for ScratchHost {
        fn execute_kernel(&self, _: &DecodedKernelDispatch) -> Result<()> {
            if self.requests.get() > 0 {
                self.requests.set(self.requests.get() - 1);
                let request = crate::queue::inactive::ScratchRequest {
                    wave_bytes_needed: 1024,
                    slots_needed: 1,
                    wave_bytes: 0,
                    slots: 0,
                };
                self.pending.set(Some(request));
                return Err(request.error());
            }
            self.ran.set(self.ran.get() + 1);
            Ok(())
        }
        fn scratch_request(&self) -> Option<crate::queue::inactive::ScratchRequest> {
            self.pending.take()
        }
        fn agent_dispatch(&self, _: &DecodedAgentDispatch) -> Result<()> {
            Err(crate::error!(Status::Error, "none"))
        }
        fn resolve_signal(&self, h: SignalHandle) -> Result<RawSignal> {
            if h.0 != self.inactive.as_ptr() as u64 {
                return Err(crate::error!(Status::InvalidSignal, "none"));
            }
            // SAFETY: the test's boxed amd_signal_t outlives the processor's use of it.
            Ok(unsafe { RawSignal::from_ptr(self.inactive) })
        }
        fn write_mailbox(&self, _: GpuVa, _: u32) -> Result<()> {
            Ok(())
        }
        fn signal_event(&self, _: u32) {}
        fn timestamp_ticks(&self) -> u64 {
            0
        }
        fn report_error(&self, _: &Error) {
            self.errors.set(self.errors.get() + 1);
        }
    }

    /// The CP's scratch request, as ROCR's DynamicScratchHandler expects it: the processor
    /// stores the wave64 code (1, upper half 0) into the queue's inactive signal, leaves the
    /// packet in its slot and reports Blocked until the runtime stores 0 there (after growing
    /// the scratch); then it runs the same packet again, and completes it. Without a
    /// resolvable inactive signal the request stops the queue instead.
    #[test]
    fn scratch_request_waits_for_the_runtime_and_reruns_the_packet() {
        let mut storage = std::boxed::Box::new(Storage {
            slots: [[0; 64]; 4],
            queue: AmdQueue::new_zeroed(),
        });
        let mut inactive = std::boxed::Box::new(crate::abi::signal::AmdSignal::default());
        let inactive_ptr = NonNull::from(&mut *inactive);
        storage.queue.queue_inactive_signal = SignalHandle(inactive_ptr.as_ptr() as u64);
        let base = NonNull::from(&mut storage.slots).cast::<u8>();
        let queue = NonNull::from(&mut storage.queue);
        // SAFETY: `storage` (boxed, 64-aligned) outlives the ring and the consumer below.
        let ring = unsafe { Ring::new(base, 4, queue) };
        for i in 0..4 {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, crate::sync::Ordering::Relaxed);
        }
        let pkt = Builder::one_dimensional(GpuVa(0x40_0000), GpuVa(0x50_0000), 64, 256)
            .emit()
            .unwrap();
        // SAFETY: single producer; slot 0 was never used.
        unsafe { ring.write_body(0, &pkt.bytes) };
        ring.publish(0, pkt.header_word);
        // SAFETY: the only consumer of this ring.
        let mut p = PacketProcessor::new(unsafe { RingConsumer::new(ring) });
        let host = ScratchHost {
            requests: core::cell::Cell::new(1),
            ran: core::cell::Cell::new(0),
            errors: core::cell::Cell::new(0),
            inactive: inactive_ptr,
            pending: core::cell::Cell::new(None),
        };
        let value = || {
            // SAFETY: the boxed signal is live; read through the atomic the processor uses.
            let sig = unsafe { RawSignal::from_ptr(inactive_ptr) };
            sig.value().load(crate::sync::Ordering::Acquire)
        };
        assert_eq!(p.process(&host, 4), Progress::Blocked);
        assert_eq!(value(), 1);
        assert_eq!(p.process(&host, 4), Progress::Blocked);
        assert_eq!((host.ran.get(), p.stopped()), (0, None));
        assert_eq!(ring.read_index().load(crate::sync::Ordering::Acquire), 0);
        // The runtime resumes the queue.
        // SAFETY: as above.
        unsafe { RawSignal::from_ptr(inactive_ptr) }
            .value()
            .store(0, crate::sync::Ordering::Release);
        assert_eq!(p.process(&host, 4), Progress::Processed(1));
        assert_eq!(host.ran.get(), 1);
        assert_eq!(ring.read_index().load(crate::sync::Ordering::Acquire), 1);
        assert_eq!((value(), host.errors.get()), (0, 0));
        // No inactive signal the host knows: the request stops the queue.
        // SAFETY: the boxed queue is live; nothing else accesses it now.
        unsafe { (*queue.as_ptr()).queue_inactive_signal = SignalHandle(0) };
        let host = ScratchHost {
            requests: core::cell::Cell::new(1),
            ran: core::cell::Cell::new(0),
            errors: core::cell::Cell::new(0),
            inactive: inactive_ptr,
            pending: core::cell::Cell::new(None),
        };
        // SAFETY: slot 1 was never used.
        unsafe { ring.write_body(1, &pkt.bytes) };
        ring.publish(1, pkt.header_word);
        assert!(
            matches!(p.process(&host, 4), Progress::Stopped(e) if e.status() == Status::OutOfResources)
        );
        assert_eq!((host.ran.get(), host.errors.get()), (0, 1));
        drop(storage);
    }
}
