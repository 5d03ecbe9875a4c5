//! The processor's loop over a ring (`PacketProcessor::process` and `step`) with a host that
//! records every call: how many packets a call takes, where the read index stands, barrier-OR,
//! what a stop leaves behind and in which order, the event wake-ups of the inactive signal,
//! and profiling timestamps. Issue 43's mutation run of this module found these unchecked by
//! hsa-core's own tests (the emulated device's tests cover them from outside the crate).

// The set-up only: a ring over a boxed buffer, raw signals over boxed amd_signal_t.
#![allow(unsafe_code)]

use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::boxed::Box;
use std::string::String;
use std::vec::Vec;
use std::{format, vec};

use zerocopy::FromZeros;

use super::{
    DecodedAgentDispatch, DecodedKernelDispatch, PacketProcessor, ProcessorHost, Progress,
    RingConsumer,
};
use crate::abi::packet::FenceScope;
use crate::abi::queue::{AmdQueue, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING};
use crate::abi::signal::AmdSignal;
use crate::abi::SignalHandle;
use crate::addr::GpuVa;
use crate::packet::{BarrierAnd, BarrierOr, EncodedPacket, HeaderFlags, KernelDispatch};
use crate::queue::inactive::{self, ScratchRequest};
use crate::queue::ring::{Ring, INVALID_HEADER_WORD};
use crate::queue::Producer;
use crate::signal::raw::RawSignal;
use crate::status::{Error, Result, Status};
use crate::sync::Ordering;

const SLOTS: u32 = 8;

#[repr(C, align(64))]
struct Storage {
    slots: [[u8; 64]; SLOTS as usize],
    queue: AmdQueue,
}

/// A ring of 8 slots and its `amd_queue_t`, a producer and the processor over it.
struct Queue {
    /// The ring's memory, leaked from a Box (so moving the Queue retags nothing) and freed
    /// in `drop`.
    storage: NonNull<Storage>,
    producer: Producer,
    processor: PacketProcessor,
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: `storage` came from Box::leak in `new` and is freed only here; the ring,
        // producer and processor hold raw pointers into it and touch nothing when dropped.
        drop(unsafe { Box::from_raw(self.storage.as_ptr()) });
    }
}

impl Queue {
    /// An empty queue; `profiling` sets `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`, `inactive` is
    /// the `queue_inactive_signal`.
    fn new(profiling: bool, inactive: SignalHandle) -> Queue {
        let mut boxed = Box::new(Storage {
            slots: [[0; 64]; SLOTS as usize],
            queue: AmdQueue::new_zeroed(),
        });
        if profiling {
            boxed.queue.queue_properties |= AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
        }
        boxed.queue.queue_inactive_signal = inactive;
        let storage = NonNull::from(Box::leak(boxed));
        // SAFETY: an in-bounds field projection of the live, leaked Storage (never null).
        let base = unsafe { NonNull::new_unchecked(&raw mut (*storage.as_ptr()).slots) };
        // SAFETY: as for `base`.
        let queue = unsafe { NonNull::new_unchecked(&raw mut (*storage.as_ptr()).queue) };
        // SAFETY: the Storage lives until the Queue drops, after its ring, producer and
        // processor are last used; 64-byte aligned; 8 slots of 64 bytes; slot headers and the
        // indices are only touched through the Ring from here on.
        let ring = unsafe { Ring::new(base.cast::<u8>(), SLOTS, queue) };
        for i in 0..u64::from(SLOTS) {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, Ordering::Relaxed);
        }
        // SAFETY: the processor below is the ring's only consumer.
        let consumer = unsafe { RingConsumer::new(ring) };
        Queue {
            producer: Producer::new(ring, false),
            processor: PacketProcessor::new(consumer),
            storage,
        }
    }

    fn push(&self, packet: Result<EncodedPacket>) {
        let packet = packet.expect("a valid packet");
        self.producer
            .reserve(1)
            .expect("room in the ring")
            .write_next(&packet)
            .expect("write the packet");
    }

    /// Read index in `amd_queue_t` (what a producer sees).
    fn read_dispatch_id(&self) -> u64 {
        self.processor.ring().read_index().load(Ordering::Acquire)
    }
}

/// `amd_signal_t`s owned by the test, leaked from a boxed slice (so taking pointers to them
/// and moving this value retags nothing) and freed on drop; handles are their addresses.
struct Signals {
    first: NonNull<AmdSignal>,
    len: usize,
}

impl Drop for Signals {
    fn drop(&mut self) {
        let slice = core::ptr::slice_from_raw_parts_mut(self.first.as_ptr(), self.len);
        // SAFETY: the slice came from Box::leak in `new` and is freed only here, after the
        // test's last use of its signals.
        drop(unsafe { Box::from_raw(slice) });
    }
}

impl Signals {
    /// Signals with these values; signal `k` has event id `100 + k` and, when `mailbox`,
    /// an event mailbox at `0x1000 + 8k`.
    fn new(values: &[i64], mailbox: bool) -> Signals {
        let all: Box<[AmdSignal]> = values
            .iter()
            .enumerate()
            .map(|(k, &value)| AmdSignal {
                value,
                event_id: 100 + k as u32,
                event_mailbox_ptr: if mailbox { 0x1000 + 8 * k as u64 } else { 0 },
                ..AmdSignal::default()
            })
            .collect();
        let len = all.len();
        let first = NonNull::from(Box::leak(all)).cast::<AmdSignal>();
        Signals { first, len }
    }

    fn ptr(&self, k: usize) -> NonNull<AmdSignal> {
        assert!(k < self.len);
        // SAFETY: k is within the leaked slice.
        unsafe { self.first.add(k) }
    }

    fn handle(&self, k: usize) -> SignalHandle {
        SignalHandle(self.ptr(k).as_ptr() as u64)
    }

    fn raw(&self, k: usize) -> RawSignal {
        // SAFETY: the signal lives (unmoved) as long as `self`, longer than every use in a
        // test; the processor and the test touch it only through atomics.
        unsafe { RawSignal::from_ptr(self.ptr(k)) }
    }

    fn value(&self, k: usize) -> i64 {
        self.raw(k).value().load(Ordering::Acquire)
    }

    fn set(&self, k: usize, v: i64) {
        self.raw(k).value().store(v, Ordering::Release);
    }

    /// Makes signal `k` a signal with no event (`event_id` 0), before any processing.
    fn clear_event_id(&mut self, k: usize) {
        // SAFETY: `&mut self`: no RawSignal of this set is in use, and `k` is in the slice.
        unsafe { (*self.ptr(k).as_ptr()).event_id = 0 };
    }
}

/// A host that runs kernels by the rules its fields set and logs every call it gets.
struct Host<'a> {
    signals: &'a Signals,
    /// The status `execute_kernel` fails with (None: it succeeds).
    kernel_error: Option<Status>,
    /// Kernel executions left that fail with the CP's scratch request.
    scratch_requests: Cell<u32>,
    pending_scratch: Cell<Option<ScratchRequest>>,
    preempted: bool,
    ticks: Cell<u64>,
    tick_reads: Cell<u32>,
    log: RefCell<Vec<String>>,
    /// (packet_address, queue_address) of each kernel dispatch.
    addresses: RefCell<Vec<(u64, u64)>>,
    /// Whether the fence hooks log too (`acquire <scope>`, `release <scope>`, with the
    /// completion signal's value at the call).
    log_fences: bool,
}

impl<'a> Host<'a> {
    fn new(signals: &'a Signals) -> Host<'a> {
        Host {
            signals,
            kernel_error: None,
            scratch_requests: Cell::new(0),
            pending_scratch: Cell::new(None),
            preempted: false,
            ticks: Cell::new(0),
            tick_reads: Cell::new(0),
            log: RefCell::new(Vec::new()),
            addresses: RefCell::new(Vec::new()),
            log_fences: false,
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.borrow().clone()
    }
}

impl ProcessorHost for Host<'_> {
    fn acquire_fence(&self, scope: FenceScope) {
        if self.log_fences {
            self.log.borrow_mut().push(format!("acquire {scope:?}"));
        }
    }

    fn release_fence(&self, scope: FenceScope) {
        if self.log_fences {
            // Signal 2 is the kernel's completion signal in the fence test: not yet decremented.
            let last = self.signals.value(2);
            self.log
                .borrow_mut()
                .push(format!("release {scope:?} (completion {last})"));
        }
    }

    fn execute_kernel(&self, d: &DecodedKernelDispatch) -> Result<()> {
        self.log
            .borrow_mut()
            .push(format!("kernel {}", d.dispatch_id));
        self.addresses
            .borrow_mut()
            .push((d.packet_address.0, d.queue_address.0));
        if self.scratch_requests.get() > 0 {
            self.scratch_requests.set(self.scratch_requests.get() - 1);
            let request = ScratchRequest {
                wave_bytes_needed: 1024,
                slots_needed: 1,
                wave_bytes: 0,
                slots: 0,
            };
            self.pending_scratch.set(Some(request));
            return Err(request.error());
        }
        match self.kernel_error {
            Some(status) => Err(crate::error!(status, "kernel at {:#x}", d.kernel_object.0)),
            None => Ok(()),
        }
    }
    fn scratch_request(&self) -> Option<ScratchRequest> {
        self.pending_scratch.take()
    }
    fn agent_dispatch(&self, _: &DecodedAgentDispatch) -> Result<()> {
        Err(crate::error!(Status::Error, "no agent functions"))
    }
    fn resolve_signal(&self, h: SignalHandle) -> Result<RawSignal> {
        (0..self.signals.len)
            .find(|&k| self.signals.handle(k) == h)
            .map(|k| self.signals.raw(k))
            .ok_or_else(|| crate::error!(Status::InvalidSignal, "signal {:#x}", h.0))
    }
    fn write_mailbox(&self, at: GpuVa, id: u32) -> Result<()> {
        self.log
            .borrow_mut()
            .push(format!("mailbox {:#x} {id}", at.0));
        Ok(())
    }
    fn signal_event(&self, id: u32) {
        self.log.borrow_mut().push(format!("event {id}"));
    }
    fn signal_event_by_id(&self, signal: SignalHandle, id: u32) {
        self.log
            .borrow_mut()
            .push(format!("event by id {:#x} {id}", signal.0));
    }
    fn timestamp_ticks(&self) -> u64 {
        self.tick_reads.set(self.tick_reads.get() + 1);
        self.ticks.get()
    }
    fn queue_stopping(&self, e: &Error) {
        self.log
            .borrow_mut()
            .push(format!("stopping {}", e.status().c_name()));
    }
    fn report_error(&self, e: &Error) {
        self.log
            .borrow_mut()
            .push(format!("report {}", e.status().c_name()));
    }
    fn preempted(&self) -> bool {
        self.preempted
    }
}

fn barrier_and(deps: &[SignalHandle], completion: SignalHandle) -> Result<EncodedPacket> {
    BarrierAnd::new(HeaderFlags::SYSTEM, deps, completion)?.emit()
}

fn kernel(completion: SignalHandle) -> Result<EncodedPacket> {
    KernelDispatch {
        completion_signal: completion,
        ..KernelDispatch::one_dimensional(GpuVa(0x40_0000), GpuVa(0x50_0000), 64, 256)
    }
    .emit()
}

/// `max_packets` bounds one call (2 of 3 ready packets), the next call takes the rest, and
/// the processor's read index and `amd_queue_t.read_dispatch_id` count the packets taken.
#[test]
fn max_packets_bounds_a_call_and_the_read_index_counts_packets() {
    let signals = Signals::new(&[], false);
    let host = Host::new(&signals);
    let mut q = Queue::new(false, SignalHandle::NULL);
    for _ in 0..3 {
        q.push(barrier_and(&[], SignalHandle::NULL));
    }
    assert_eq!(q.processor.process(&host, 2), Progress::Processed(2));
    assert_eq!((q.processor.read_index(), q.read_dispatch_id()), (2, 2));
    assert_eq!(q.processor.process(&host, 2), Progress::Processed(1));
    assert_eq!((q.processor.read_index(), q.read_dispatch_id()), (3, 3));
    assert_eq!(q.processor.process(&host, 2), Progress::Idle);
    assert_eq!(q.processor.read_index(), 3);
}

/// A call that completes packets and then meets a barrier not yet satisfied reports the
/// completed packets; the next call reports Blocked; once the dependency is 0 the barrier
/// completes and decrements its completion signal.
#[test]
fn a_barrier_after_completed_packets_reports_them_then_blocks() {
    let signals = Signals::new(&[1, 1], false);
    let host = Host::new(&signals);
    let mut q = Queue::new(false, SignalHandle::NULL);
    q.push(barrier_and(&[], SignalHandle::NULL));
    q.push(barrier_and(&[signals.handle(0)], signals.handle(1)));
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    assert_eq!((q.processor.read_index(), signals.value(1)), (1, 1));
    signals.set(0, 0);
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    assert_eq!((q.processor.read_index(), signals.value(1)), (2, 0));
}

/// Barrier-OR (HSA PSA §2.9.9) waits while every dependency is non-zero and completes when
/// any is 0, here the second of two.
#[test]
fn barrier_or_completes_when_any_dependency_is_zero() {
    let signals = Signals::new(&[1, 2, 1], false);
    let host = Host::new(&signals);
    let mut q = Queue::new(false, SignalHandle::NULL);
    let or = BarrierOr::new(
        HeaderFlags::SYSTEM,
        &[signals.handle(0), signals.handle(1)],
        signals.handle(2),
    )
    .unwrap();
    q.push(or.emit());
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    assert_eq!(signals.value(2), 1);
    signals.set(1, 0);
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    assert_eq!(signals.value(2), 0);
}

/// An empty ring is Idle, also while the host is taking the queue off the device.
#[test]
fn an_empty_ring_is_idle_while_preempted() {
    let signals = Signals::new(&[], false);
    let mut host = Host::new(&signals);
    host.preempted = true;
    let mut q = Queue::new(false, SignalHandle::NULL);
    assert_eq!(q.processor.process(&host, 8), Progress::Idle);
}

/// A failed kernel stops the queue: the inactive signal holds the CP's code with the status
/// in its upper half, then the host hears `queue_stopping`, the signal's mailbox and event
/// are written, and last the error is reported, once. `stopped()` keeps the error, every
/// later call returns it, and the failed packet stays unconsumed.
#[test]
fn a_stop_sets_the_inactive_signal_wakes_its_event_and_reports_once() {
    let signals = Signals::new(&[0], true);
    let mut host = Host::new(&signals);
    host.kernel_error = Some(Status::MemoryFault);
    let mut q = Queue::new(false, signals.handle(0));
    q.push(barrier_and(&[], SignalHandle::NULL));
    q.push(kernel(SignalHandle::NULL));
    let Progress::Stopped(e) = q.processor.process(&host, 8) else {
        panic!("the kernel's error stops the queue")
    };
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(e.detail(), "packet 1: kernel at 0x400000");
    assert_eq!(q.processor.stopped(), Some(&e));
    let v = signals.value(0);
    assert_eq!(v, inactive::encode(Status::MemoryFault, false));
    assert_eq!(v >> 32, i64::from(Status::MemoryFault.raw()));
    assert_eq!(
        host.log(),
        vec![
            "kernel 1",
            "stopping HSA_STATUS_ERROR_MEMORY_FAULT",
            "mailbox 0x1000 100",
            "event 100",
            "report HSA_STATUS_ERROR_MEMORY_FAULT",
        ]
    );
    assert_eq!(q.processor.process(&host, 8), Progress::Stopped(e));
    assert_eq!((q.processor.read_index(), host.log().len()), (1, 5));
}

/// The CP's scratch request stores the wave64 code into the inactive signal and wakes its
/// event (mailbox, then event), without stopping the queue or reporting an error.
#[test]
fn a_scratch_request_wakes_the_inactive_signals_event() {
    let signals = Signals::new(&[0], true);
    let host = Host::new(&signals);
    host.scratch_requests.set(1);
    let mut q = Queue::new(false, signals.handle(0));
    q.push(kernel(SignalHandle::NULL));
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    assert_eq!(signals.value(0), i64::from(inactive::CP_SCRATCH_WAVE64));
    assert_eq!(
        host.log(),
        vec!["kernel 0", "mailbox 0x1000 100", "event 100"]
    );
    assert_eq!(q.processor.stopped(), None);
}

/// A completion signal with an event but no event mailbox (libhsakmt's model mode gives its
/// events none) has its event raised by id, with the signal's handle; one with neither event
/// nor mailbox raises nothing; with a mailbox, the mailbox path alone runs
/// (`a_scratch_request_wakes_the_inactive_signals_event`).
#[test]
fn an_event_without_a_mailbox_is_raised_by_id() {
    let mut signals = Signals::new(&[1, 1, 0], false);
    signals.clear_event_id(1);
    let host = Host::new(&signals);
    let mut q = Queue::new(false, SignalHandle::NULL);
    q.push(kernel(signals.handle(0)));
    q.push(kernel(signals.handle(1)));
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(2));
    assert_eq!((signals.value(0), signals.value(1)), (0, 0));
    assert_eq!(
        host.log(),
        vec![
            String::from("kernel 0"),
            format!("event by id {:#x} 100", signals.handle(0).0),
            String::from("kernel 1"),
        ]
    );
}

/// The scratch request's event, for an inactive signal without a mailbox, is raised by id.
#[test]
fn a_scratch_request_raises_a_mailboxless_inactive_event_by_id() {
    let signals = Signals::new(&[0], false);
    let host = Host::new(&signals);
    host.scratch_requests.set(1);
    let mut q = Queue::new(false, signals.handle(0));
    q.push(kernel(SignalHandle::NULL));
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    assert_eq!(
        host.log(),
        vec![
            String::from("kernel 0"),
            format!("event by id {:#x} 100", signals.handle(0).0)
        ]
    );
}

/// With profiling on, a packet first seen blocked at tick 100 and completed at tick 250
/// carries start 100 and end 250 in its completion signal.
#[test]
fn profiling_stamps_a_blocked_packet_from_when_it_was_first_seen() {
    let signals = Signals::new(&[1, 1], false);
    let host = Host::new(&signals);
    let mut q = Queue::new(true, SignalHandle::NULL);
    q.push(barrier_and(&[signals.handle(0)], signals.handle(1)));
    host.ticks.set(100);
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    host.ticks.set(180);
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    host.ticks.set(250);
    signals.set(0, 0);
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    let done = signals.raw(1);
    assert_eq!(
        (
            done.start_ts().load(Ordering::Relaxed),
            done.end_ts().load(Ordering::Relaxed),
            done.value().load(Ordering::Relaxed)
        ),
        (100, 250, 0)
    );
}

/// With profiling off the host's clock is never read and the completion signal's
/// timestamps stay 0.
#[test]
fn without_profiling_the_clock_is_not_read() {
    let signals = Signals::new(&[1], false);
    let host = Host::new(&signals);
    host.ticks.set(77);
    let mut q = Queue::new(false, SignalHandle::NULL);
    q.push(kernel(signals.handle(0)));
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    let done = signals.raw(0);
    assert_eq!(
        (
            host.tick_reads.get(),
            done.start_ts().load(Ordering::Relaxed),
            done.end_ts().load(Ordering::Relaxed),
            done.value().load(Ordering::Relaxed)
        ),
        (0, 0, 0, 0)
    );
}

/// Without `set_device_addresses` a kernel dispatch carries the host addresses the ring was
/// made with: its slot (index mod 8, 64 bytes each) and the `amd_queue_t`.
#[test]
fn device_addresses_default_to_the_host_addresses() {
    let signals = Signals::new(&[], false);
    let host = Host::new(&signals);
    let mut q = Queue::new(false, SignalHandle::NULL);
    let slots = q.storage.as_ptr() as u64;
    let queue = slots + u64::from(SLOTS) * 64;
    for _ in 0..SLOTS + 2 {
        q.push(kernel(SignalHandle::NULL));
        assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    }
    let got = host.addresses.borrow();
    assert_eq!(got[1], (slots + 64, queue));
    assert_eq!(got[9], (slots + 64, queue));
    assert_eq!(got[7], (slots + 7 * 64, queue));
}

/// The host's fence hooks (its caches' actions): a kernel's acquire before it runs and its
/// release after it, before the completion signal drops; a barrier's acquire only once its
/// dependencies are satisfied (never while it blocks); no hook for a scope of None.
#[test]
fn fence_hooks_run_at_launch_and_before_the_completion_signal() {
    let signals = Signals::new(&[1, 1, 1], false);
    let host = Host {
        log_fences: true,
        ..Host::new(&signals)
    };
    let mut q = Queue::new(false, SignalHandle::NULL);
    q.push(
        KernelDispatch {
            flags: HeaderFlags {
                barrier: false,
                acquire_fence_scope: FenceScope::Agent,
                release_fence_scope: FenceScope::System,
            },
            completion_signal: signals.handle(2),
            ..KernelDispatch::one_dimensional(GpuVa(0x40_0000), GpuVa(0x50_0000), 64, 256)
        }
        .emit(),
    );
    let flags = HeaderFlags {
        barrier: false,
        acquire_fence_scope: FenceScope::System,
        release_fence_scope: FenceScope::None,
    };
    q.push(BarrierAnd::new(flags, &[signals.handle(0)], signals.handle(1)).and_then(|b| b.emit()));
    // The kernel, its fences and the barrier's, without the events the signals raise.
    let fences = || -> Vec<String> {
        host.log()
            .into_iter()
            .filter(|l| !l.starts_with("event"))
            .collect()
    };
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    assert_eq!(q.processor.process(&host, 8), Progress::Blocked);
    assert_eq!(
        fences(),
        ["acquire Agent", "kernel 0", "release System (completion 1)"]
    );
    signals.set(0, 0);
    assert_eq!(q.processor.process(&host, 8), Progress::Processed(1));
    assert_eq!(
        fences()[3..],
        [String::from("acquire System")],
        "the barrier's acquire once satisfied, and no release of scope None"
    );
    assert_eq!((signals.value(1), signals.value(2)), (0, 0));
}
