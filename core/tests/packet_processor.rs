//! The software packet processor end to end, over rings in fake-platform memory: packets are
//! written straight into a host ring with `Ring::write_body` + `Ring::publish` (the producer
//! API is tested elsewhere) and each test runs the processor itself, as a command processor
//! would, with [`TestHost`], a `ProcessorHost` whose kernels and agent functions are closures.
//! The fake platform backs memory and events and runs no queue; the emulated device, which
//! hosts the same processor on its CP threads, is tested in hsa-emu (`emulated_queue.rs`) and
//! through the queue API in hsa-tests (`queue_errors.rs`, `stress.rs`).
#![cfg(feature = "fake")]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use hsa_core::abi::packet::{
    AgentDispatchPacket, BarrierPacket, BarrierValuePacket, KernelDispatchPacket,
    AMD_PACKET_TYPE_BARRIER_VALUE,
};
use hsa_core::abi::queue::{AmdQueue, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING};
use hsa_core::abi::signal::AmdSignal;
use hsa_core::abi::SignalHandle;
use hsa_core::packet_processor::{
    DecodedAgentDispatch, DecodedKernelDispatch, PacketProcessor, ProcessorHost, Progress,
    RingConsumer,
};
use hsa_core::platform::fake::{FakePlatform, FaultInjector, FaultMethod};
use hsa_core::platform::{
    MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform, TopologySource, WaitOutcome,
};
use hsa_core::queue::ring::{Ring, INVALID_HEADER_WORD};
use hsa_core::signal::raw::RawSignal;
use hsa_core::{Error, EventId, GpuVa, NodeId, Result, Status};
use zerocopy::{Immutable, IntoBytes};

const RING_PACKETS: u32 = 16;
const QUEUE_OFFSET: usize = 4096;
const SIGNAL_OFFSET: usize = 5120;
/// The signal (of 16 at `SIGNAL_OFFSET`) that is the queue's `queue_inactive_signal`.
const INACTIVE_SIGNAL: usize = 15;
const KERNARG_OFFSET: usize = 7168;
const OUT_OFFSET: usize = 7424;

/// Header words: type | barrier << 8 | acquire << 9 | release << 11 (system scopes).
const fn hdr(packet_type: u16, barrier: bool) -> u16 {
    packet_type | (barrier as u16) << 8 | 2 << 9 | 2 << 11
}

type KernelFn = Box<dyn Fn(&DecodedKernelDispatch, &FakePlatform)>;
type AgentFn = Box<dyn Fn(&DecodedAgentDispatch, &FakePlatform)>;

/// What the processor needs from its host, for these tests: kernels and agent functions by
/// kernel object and function id, signals and kernargs checked against the fake's live chunks,
/// the fake's event mailboxes, events and clock, and a record of every reported error.
struct TestHost<'p> {
    p: &'p FakePlatform,
    kernels: HashMap<u64, KernelFn>,
    agents: HashMap<u16, AgentFn>,
    errors: RefCell<Vec<Error>>,
    /// What [`ProcessorHost::preempted`] says.
    preempted: std::cell::Cell<bool>,
}

impl<'p> TestHost<'p> {
    fn new(p: &'p FakePlatform) -> TestHost<'p> {
        TestHost {
            p,
            kernels: HashMap::new(),
            agents: HashMap::new(),
            errors: RefCell::new(Vec::new()),
            preempted: std::cell::Cell::new(false),
        }
    }

    fn kernel(&mut self, object: u64, f: impl Fn(&DecodedKernelDispatch, &FakePlatform) + 'static) {
        self.kernels.insert(object, Box::new(f));
    }

    fn agent_function(
        &mut self,
        function: u16,
        f: impl Fn(&DecodedAgentDispatch, &FakePlatform) + 'static,
    ) {
        self.agents.insert(function, Box::new(f));
    }

    /// The errors reported so far (the queue's error callback), in order.
    fn errors(&self) -> Vec<Error> {
        self.errors.borrow().clone()
    }
}

impl ProcessorHost for TestHost<'_> {
    fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> Result<()> {
        let f = self.kernels.get(&dispatch.kernel_object.0).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidPacketFormat,
                "kernel_object {:#x} is not a registered kernel",
                dispatch.kernel_object.0
            )
        })?;
        if !dispatch.kernarg_address.is_null()
            && self.p.host_ptr(dispatch.kernarg_address, 1).is_none()
        {
            hsa_core::bail!(
                Status::MemoryFault,
                "kernarg_address {:#x} is not in any live allocation",
                dispatch.kernarg_address.0
            );
        }
        f(dispatch, self.p);
        Ok(())
    }

    fn agent_dispatch(&self, dispatch: &DecodedAgentDispatch) -> Result<()> {
        let f = self.agents.get(&dispatch.function).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidPacketFormat,
                "agent dispatch type {} has no registered function",
                dispatch.function
            )
        })?;
        f(dispatch, self.p);
        Ok(())
    }

    fn resolve_signal(&self, handle: SignalHandle) -> Result<RawSignal> {
        let ptr = self
            .p
            .host_ptr(GpuVa(handle.0), 64)
            .filter(|_| handle.0 % 64 == 0)
            .ok_or_else(|| {
                hsa_core::error!(
                    Status::InvalidSignal,
                    "signal handle {:#x} is not 64-byte aligned memory of a live chunk",
                    handle.0
                )
            })?;
        // SAFETY: `host_ptr` found 64 bytes at the handle inside a live, zero-initialised
        // chunk, 64-byte aligned (checked above); the chunks outlive the queues (freed only by
        // the platform's drop), and signal values are only accessed atomically.
        Ok(unsafe { RawSignal::from_ptr(ptr.cast()) })
    }

    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> Result<()> {
        let slot = self.p.mailbox_at(mailbox).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidSignal,
                "event_mailbox_ptr {:#x} is not a mailbox of this platform",
                mailbox.0
            )
        })?;
        // Release pairs with the waiter's Acquire load of the mailbox.
        slot.store(u64::from(event_id), Ordering::Release);
        Ok(())
    }

    fn signal_event(&self, event_id: u32) {
        // An unknown id (a user-written event_id) wakes nobody.
        let _ = self.p.signal_event(EventId(event_id));
    }

    fn timestamp_ticks(&self) -> u64 {
        self.p.timestamp_ticks()
    }

    fn report_error(&self, error: &Error) {
        self.errors.borrow_mut().push(error.clone());
    }

    fn preempted(&self) -> bool {
        self.preempted.get()
    }
}

/// A ring of 16 packets, its `amd_queue_t`, 16 signals and a kernarg and an output area, all
/// in one 8 KiB chunk of the fake's memory, and the processor that consumes the ring.
struct TestQueue {
    chunk: MemoryChunk,
    ring: Ring,
    processor: PacketProcessor,
    write: u64,
}

impl TestQueue {
    /// `profiling` sets `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`; `inactive_signal` gives the
    /// `amd_queue_t` a `queue_inactive_signal` (signal 15 of the chunk, at 0).
    fn new(p: &FakePlatform, profiling: bool, inactive_signal: bool) -> TestQueue {
        let chunk = p
            .allocate_memory(&MemoryRequest {
                node: NodeId(0),
                kind: MemoryKind::System,
                size_bytes: 8192,
                align_bytes: 4096,
                flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
            })
            .unwrap();
        let base = chunk.host_ptr.unwrap();
        let queue_ptr = NonNull::new(base.as_ptr().wrapping_add(QUEUE_OFFSET)).unwrap();
        if profiling {
            // SAFETY: offset 4096 + 180 is inside the 8192-byte chunk, 4-aligned, and no
            // processor uses the amd_queue_t yet.
            unsafe {
                queue_ptr
                    .as_ptr()
                    .add(std::mem::offset_of!(AmdQueue, queue_properties))
                    .cast::<u32>()
                    .write(AMD_QUEUE_PROPERTIES_ENABLE_PROFILING)
            };
        }
        // SAFETY: 16 packets * 64 bytes at offset 0 and the 256-byte amd_queue_t at 4096 lie in
        // the chunk, 64-aligned; the chunk outlives the queue (freed only by the platform's
        // drop, after the queue).
        let ring = unsafe { Ring::new(base, RING_PACKETS, queue_ptr.cast()) };
        for i in 0..u64::from(RING_PACKETS) {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, Ordering::Release);
        }
        let q = TestQueue {
            chunk,
            ring,
            // SAFETY: this processor is the ring's only consumer (the test only produces).
            processor: PacketProcessor::new(unsafe { RingConsumer::new(ring) }),
            write: 0,
        };
        if inactive_signal {
            let handle = q.signal(INACTIVE_SIGNAL, 0).handle();
            // SAFETY: the amd_queue_t's queue_inactive_signal field lies in the chunk, 8-aligned;
            // the processor reads it only when it stops the queue, on this thread, later.
            unsafe {
                queue_ptr
                    .as_ptr()
                    .add(std::mem::offset_of!(AmdQueue, queue_inactive_signal))
                    .cast::<u64>()
                    .write(handle.0)
            };
        }
        q
    }

    /// Signal `i` (of 16 in the chunk) with kind USER and `value`.
    fn signal(&self, i: usize, value: i64) -> RawSignal {
        let s = self.raw_signal(i);
        s.kind().store(1, Ordering::Relaxed);
        s.value().store(value, Ordering::Release);
        s
    }

    /// The value of signal `i` (of 16 in the chunk).
    fn signal_value(&self, i: usize) -> i64 {
        self.raw_signal(i).value().load(Ordering::Acquire)
    }

    fn raw_signal(&self, i: usize) -> RawSignal {
        assert!(i < 16);
        let ptr = self
            .chunk
            .host_ptr
            .unwrap()
            .as_ptr()
            .wrapping_add(SIGNAL_OFFSET + 64 * i);
        // SAFETY: 64 bytes at SIGNAL_OFFSET + 64 * i (i < 16) lie in the chunk, 64-aligned,
        // zeroed, and are accessed only atomically from here on.
        unsafe { RawSignal::from_ptr(NonNull::new(ptr.cast::<AmdSignal>()).unwrap()) }
    }

    fn va(&self, offset: usize) -> u64 {
        self.chunk.gpu_va.0 + offset as u64
    }

    /// Writes and publishes one packet without running the processor.
    fn push<T: IntoBytes + Immutable>(&mut self, packet: &T) -> u64 {
        let mut bytes = [0u8; 64];
        bytes.copy_from_slice(packet.as_bytes());
        let index = self.write;
        self.write += 1;
        self.ring.write_index().store(self.write, Ordering::Release);
        // SAFETY: this test is the only producer; `index - read_index < 16` in every test and
        // the slot's header is INVALID.
        unsafe { self.ring.write_body(index, &bytes) };
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        self.ring.publish(index, word);
        index
    }

    /// Runs the processor until it is Idle, Blocked or Stopped, as a command processor does
    /// after a doorbell or a signal event; returns how many packets completed and how it
    /// ended.
    fn run(&mut self, host: &TestHost<'_>) -> (u32, Progress) {
        let mut done = 0;
        loop {
            match self.processor.process(host, 64) {
                Progress::Processed(n) => done += n,
                end => return (done, end),
            }
        }
    }

    fn submit<T: IntoBytes + Immutable>(&mut self, host: &TestHost<'_>, packet: &T) -> Progress {
        self.push(packet);
        self.run(host).1
    }

    fn read_index(&self) -> u64 {
        self.ring.read_index().load(Ordering::Acquire)
    }

    fn header_type(&self, index: u64) -> u32 {
        self.ring.header_word(index).load(Ordering::Acquire) & 0xff
    }
}

fn kernel(object: u64, completion: SignalHandle) -> KernelDispatchPacket {
    KernelDispatchPacket {
        header: hdr(2, false),
        setup: 1,
        workgroup_size_x: 64,
        workgroup_size_y: 1,
        workgroup_size_z: 1,
        grid_size_x: 256,
        grid_size_y: 1,
        grid_size_z: 1,
        kernel_object: object,
        // A kernel without arguments: `hsa.h` allows a null kernarg address and the processor
        // accepts it (the builders would not).
        kernarg_address: 0,
        completion_signal: completion,
        ..Default::default()
    }
}

fn barrier(packet_type: u16, deps: [SignalHandle; 5], completion: SignalHandle) -> BarrierPacket {
    BarrierPacket {
        header: hdr(packet_type, true),
        dep_signal: deps,
        completion_signal: completion,
        ..Default::default()
    }
}

type Log = Arc<Mutex<Vec<u64>>>;

fn logging_kernels(host: &mut TestHost<'_>, objects: &[u64]) -> Log {
    let log: Log = Arc::default();
    for &o in objects {
        let l = log.clone();
        host.kernel(o, move |d, _| l.lock().unwrap().push(d.kernel_object.0));
    }
    log
}

const N: SignalHandle = SignalHandle::NULL;

#[test]
fn packets_run_in_write_index_order_and_complete() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let log = logging_kernels(&mut host, &[0x1000, 0x2000, 0x3000]);
    let mut q = TestQueue::new(&p, false, false);
    let done = q.signal(0, 3);
    for o in [0x3000, 0x1000, 0x2000] {
        q.push(&kernel(o, done.handle()));
    }
    assert_eq!(
        *log.lock().unwrap(),
        Vec::<u64>::new(),
        "nothing runs before the processor does"
    );
    assert_eq!(q.run(&host), (3, Progress::Idle));
    assert_eq!(*log.lock().unwrap(), [0x3000, 0x1000, 0x2000]);
    assert_eq!(done.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 3);
    for i in 0..3 {
        assert_eq!(q.header_type(i), 1, "slot {i} is INVALID again");
    }
    assert!(host.errors().is_empty());
}

#[test]
fn dispatch_carries_the_packet_and_kernargs() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let mut q = TestQueue::new(&p, false, false);
    let out_va = q.va(OUT_OFFSET);
    let kernarg = q.va(KERNARG_OFFSET);
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    host.kernel(0x4000, move |d, p| {
        let out = p.read_u64(d.kernarg_address).unwrap();
        let ptr = p.host_ptr(GpuVa(out), 4).unwrap();
        // SAFETY: `host_ptr` checked 4 bytes of live memory at `out`; nothing else touches
        // them while the kernel runs.
        unsafe {
            ptr.as_ptr()
                .cast::<u32>()
                .write_unaligned(d.grid_size[0] * 2)
        };
        *s.lock().unwrap() = Some((
            d.dimensions,
            d.grid_size,
            d.workgroup_size,
            d.group_segment_size_bytes,
            d.private_segment_size_bytes,
            d.kernarg_address.0,
            d.dispatch_id,
            d.packet_address.0,
        ));
    });
    // SAFETY: KERNARG_OFFSET is inside the chunk, 8-aligned, and no kernel runs yet.
    unsafe {
        q.chunk
            .host_ptr
            .unwrap()
            .as_ptr()
            .add(KERNARG_OFFSET)
            .cast::<u64>()
            .write(out_va)
    };
    host.kernel(0x1000, |_, _| {});
    q.submit(&host, &kernel(0x1000, N));
    let mut k = kernel(0x4000, N);
    k.setup = 2;
    k.grid_size_x = 100;
    k.grid_size_y = 3;
    k.workgroup_size_x = 32;
    k.workgroup_size_y = 2;
    k.group_segment_size = 1024;
    k.private_segment_size = 16;
    k.kernarg_address = kernarg;
    assert_eq!(q.submit(&host, &k), Progress::Idle);
    assert_eq!(
        *seen.lock().unwrap(),
        Some((
            2,
            [100, 3, 1],
            [32, 2, 1],
            1024,
            16,
            kernarg,
            1,
            q.chunk.gpu_va.0 + 64
        ))
    );
    assert_eq!(p.read_u64(GpuVa(out_va)).unwrap() & 0xffff_ffff, 200);
}

#[test]
fn barrier_and_ignores_null_deps_and_blocks_later_packets() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let log = logging_kernels(&mut host, &[0x1000]);
    let mut q = TestQueue::new(&p, false, false);
    let dep = q.signal(0, 1);
    let done = q.signal(1, 1);
    // All-null barrier-AND: satisfied at once.
    assert_eq!(
        q.submit(&host, &barrier(3, [N; 5], done.handle())),
        Progress::Idle
    );
    assert_eq!(done.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 1);
    // One real dependency at 1: the barrier and the kernel behind it wait.
    q.push(&barrier(3, [N, dep.handle(), N, N, N], N));
    assert_eq!(q.submit(&host, &kernel(0x1000, N)), Progress::Blocked);
    assert_eq!(q.read_index(), 1);
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(q.run(&host), (0, Progress::Blocked));
    assert_eq!(q.read_index(), 1, "still blocked while the dependency is 1");
    dep.value().store(0, Ordering::Release);
    assert_eq!(q.run(&host), (2, Progress::Idle));
    assert_eq!(q.read_index(), 3);
    assert_eq!(*log.lock().unwrap(), [0x1000]);
}

#[test]
fn barrier_or_null_deps_never_satisfy_and_any_zero_does() {
    let p = FakePlatform::new();
    let host = TestHost::new(&p);
    let mut q = TestQueue::new(&p, false, false);
    let one = q.signal(0, 1);
    let zero = q.signal(1, 0);
    q.submit(
        &host,
        &barrier(5, [N, one.handle(), N, zero.handle(), N], N),
    );
    assert_eq!(q.read_index(), 1, "zero dependency satisfies the OR");

    let mut q2 = TestQueue::new(&p, false, false);
    assert_eq!(q2.submit(&host, &barrier(5, [N; 5], N)), Progress::Blocked);
    assert_eq!(q2.run(&host), (0, Progress::Blocked));
    assert_eq!(q2.read_index(), 0, "an all-null barrier-OR never completes");
    assert_eq!(q2.header_type(0), 5);
}

#[test]
fn barrier_value_compares_masked_value() {
    let p = FakePlatform::new();
    let host = TestHost::new(&p);
    let mut q = TestQueue::new(&p, false, false);
    let sig = q.signal(0, 0x105);
    let done = q.signal(1, 1);
    let mut bv = BarrierValuePacket::default();
    bv.header.header = hdr(0, true);
    bv.header.amd_format = AMD_PACKET_TYPE_BARRIER_VALUE;
    bv.signal = sig.handle();
    bv.mask = 0xff;
    bv.value = 3;
    bv.cond = 2; // LT: (value & 0xff) < 3
    bv.completion_signal = done.handle();
    assert_eq!(q.submit(&host, &bv), Progress::Blocked);
    assert_eq!(q.read_index(), 0, "0x105 & 0xff = 5 is not < 3");
    sig.value().store(0x302, Ordering::Release);
    assert_eq!(q.run(&host), (1, Progress::Idle));
    assert_eq!(q.read_index(), 1, "0x302 & 0xff = 2 < 3");
    assert_eq!(done.value().load(Ordering::Acquire), 0);
}

#[test]
fn barrier_value_with_null_signal_is_a_satisfied_dependency() {
    // hsa_ext_amd.h (hsa_amd_barrier_value_packet_t.signal): "A signal with a handle value
    // of 0 is allowed and is interpreted by the packet processor as a satisfied dependency";
    // HIP 7.2.4 sends one at hipEventRecord. Whatever the condition: EQ 5 on a value no
    // signal holds still completes.
    let p = FakePlatform::new();
    let host = TestHost::new(&p);
    let mut q = TestQueue::new(&p, false, false);
    let done = q.signal(0, 1);
    let mut bv = BarrierValuePacket::default();
    bv.header.header = hdr(0, true);
    bv.header.amd_format = AMD_PACKET_TYPE_BARRIER_VALUE;
    bv.signal = N;
    bv.mask = -1;
    bv.value = 5;
    bv.cond = 0; // EQ
    bv.completion_signal = done.handle();
    assert_eq!(q.submit(&host, &bv), Progress::Idle);
    assert_eq!(q.read_index(), 1);
    assert_eq!(done.value().load(Ordering::Acquire), 0);
}

#[test]
fn agent_dispatch_runs_the_registered_function() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let mut q = TestQueue::new(&p, false, false);
    host.agent_function(7, |a, platform| {
        let ptr = platform.host_ptr(a.return_address, 8).unwrap();
        // SAFETY: `host_ptr` checked 8 bytes of live memory; the test reads them only after
        // the packet completed.
        unsafe {
            ptr.as_ptr()
                .cast::<u64>()
                .write_unaligned(a.args[0] + a.args[1])
        };
    });
    let done = q.signal(0, 1);
    q.submit(
        &host,
        &AgentDispatchPacket {
            header: hdr(4, false),
            type_: 7,
            return_address: q.va(OUT_OFFSET),
            arg: [40, 2, 0, 0],
            completion_signal: done.handle(),
            ..Default::default()
        },
    );
    assert_eq!(p.read_u64(GpuVa(q.va(OUT_OFFSET))), Some(42));
    assert_eq!(done.value().load(Ordering::Acquire), 0);
}

#[test]
fn malformed_packet_stops_the_queue_once() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let log = logging_kernels(&mut host, &[0x1000, 0x2000]);
    let mut q = TestQueue::new(&p, false, true);
    q.push(&kernel(0x1000, N));
    let mut bad = kernel(0x2000, N);
    bad.workgroup_size_x = 0;
    q.push(&bad);
    q.push(&kernel(0x2000, N));
    // The processor reports the stop, not the packet it completed in the same call.
    let Progress::Stopped(e) = q.run(&host).1 else {
        panic!("not stopped")
    };
    assert_eq!(*log.lock().unwrap(), [0x1000]);
    assert_eq!(q.read_index(), 1, "read index stops at the bad packet");
    assert_eq!(q.header_type(1), 2, "the bad packet's header stays");
    assert_eq!(q.header_type(2), 2, "later packets untouched");
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    assert!(
        e.detail().to_string().contains("packet 1"),
        "{}",
        e.detail()
    );
    assert!(
        e.detail().to_string().contains("workgroup_size_x is 0"),
        "{}",
        e.detail()
    );
    assert_eq!(
        q.signal_value(INACTIVE_SIGNAL),
        hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false),
        "queue_inactive_signal holds the CP's code (invalid format) and the status"
    );
    assert_eq!(q.run(&host), (0, Progress::Stopped(e.clone())));
    assert_eq!(host.errors(), [e], "reported once");
    assert_eq!(*log.lock().unwrap(), [0x1000]);
}

/// A packet whose execution fails while the host is taking the queue away (amdkfd's
/// DESTROY_QUEUE preempting a running kernel) is abandoned, not an error: the packets before
/// it complete, it stays in its slot, nothing is stored into `queue_inactive_signal` and
/// nothing is reported; the processor says `Blocked` until it is dropped.
#[test]
fn a_packet_failing_while_preempted_is_abandoned_not_reported() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let log = logging_kernels(&mut host, &[0x1000]);
    let mut q = TestQueue::new(&p, false, true);
    q.push(&kernel(0x1000, N));
    // Not a registered kernel: the host's execution fails.
    q.push(&kernel(0x3000, N));
    host.preempted.set(true);
    assert_eq!(q.run(&host), (1, Progress::Blocked));
    assert_eq!(*log.lock().unwrap(), [0x1000]);
    assert_eq!(
        q.read_index(),
        1,
        "read index stays at the abandoned packet"
    );
    assert_eq!(q.header_type(1), 2, "the abandoned packet's header stays");
    assert_eq!(q.signal_value(INACTIVE_SIGNAL), 0, "no error stored");
    assert!(host.errors().is_empty(), "no error reported");
    assert_eq!(q.run(&host), (0, Progress::Blocked));
}

#[test]
fn unknown_signal_kernel_and_negative_dep_stop_with_precise_status() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    let log = logging_kernels(&mut host, &[0x1000]);
    // A completion signal outside every live chunk: never written.
    let mut q = TestQueue::new(&p, false, false);
    let Progress::Stopped(e) = q.submit(&host, &kernel(0x1000, SignalHandle(0x40))) else {
        panic!("not stopped")
    };
    assert_eq!(e.status(), Status::InvalidSignal);
    assert!(log.lock().unwrap().is_empty(), "the kernel did not run");
    assert_eq!(q.read_index(), 0);

    let bad_objects = [
        // A well-formed kernel object the host does not know: the host's error.
        (
            0x9980,
            Status::InvalidPacketFormat,
            "packet 0: kernel_object 0x9980 is not a registered kernel",
        ),
        // Not 64-byte aligned (AMDGPUUsage "Kernel Descriptor"): the packet parser's error,
        // before the host is asked; the CP's "invalid code" (ROCR: INVALID_CODE_OBJECT).
        (
            0x9999,
            Status::InvalidCodeObject,
            "packet 0: kernel_object is 0x9999; must be 64-byte aligned",
        ),
    ];
    for (object, status, want) in bad_objects {
        let mut q = TestQueue::new(&p, false, false);
        let Progress::Stopped(e) = q.submit(&host, &kernel(object, N)) else {
            panic!("not stopped")
        };
        assert_eq!(e.status(), status);
        assert_eq!(e.detail(), want);
    }

    let mut q = TestQueue::new(&p, false, false);
    let failed = q.signal(0, -1);
    let Progress::Stopped(e) = q.submit(&host, &barrier(3, [N, N, failed.handle(), N, N], N))
    else {
        panic!("not stopped")
    };
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail().to_string().contains("dep_signal[2]"),
        "{}",
        e.detail()
    );
    assert_eq!(host.errors().len(), 4, "one report per stopped queue");
}

#[test]
fn profiling_writes_monotonic_timestamps() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    logging_kernels(&mut host, &[0x1000]);
    let mut q = TestQueue::new(&p, true, false);
    let a = q.signal(0, 1);
    let b = q.signal(1, 1);
    q.push(&kernel(0x1000, a.handle()));
    q.push(&kernel(0x1000, b.handle()));
    q.run(&host);
    let ts = |s: &RawSignal| {
        (
            s.start_ts().load(Ordering::Acquire),
            s.end_ts().load(Ordering::Acquire),
        )
    };
    let (a0, a1) = ts(&a);
    let (b0, b1) = ts(&b);
    assert!(
        a0 > 0 && a0 <= a1 && a1 <= b0 && b0 <= b1,
        "{a0} {a1} {b0} {b1}"
    );
    assert!(b1 <= p.timestamp_ticks());

    let mut plain = TestQueue::new(&p, false, false);
    let c = plain.signal(0, 1);
    plain.submit(&host, &kernel(0x1000, c.handle()));
    assert_eq!(ts(&c), (0, 0), "no timestamps without the profiling bit");
}

/// The profiling bit is read at every packet: turned on for a live queue (as
/// `hsa_amd_profiling_set_profiler_enabled` does, after HIP created the queue) the next
/// packets get timestamps, turned off they do not. (The processor used to read the bit once,
/// when the queue was created, so HIP's events on the emulated device all read 0 ms.)
#[test]
fn profiling_bit_is_followed_on_a_live_queue() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    logging_kernels(&mut host, &[0x1000]);
    let mut q = TestQueue::new(&p, false, false);
    let ts = |s: &RawSignal| {
        (
            s.start_ts().load(Ordering::Acquire),
            s.end_ts().load(Ordering::Acquire),
        )
    };
    // SAFETY: offset 180 of the queue's live amd_queue_t: 4-aligned, inside the chunk, and
    // accessed atomically here as by the processor.
    let properties = unsafe {
        &*q.ring
            .amd_queue()
            .as_ptr()
            .cast::<u8>()
            .add(180)
            .cast::<core::sync::atomic::AtomicU32>()
    };
    let a = q.signal(0, 1);
    q.submit(&host, &kernel(0x1000, a.handle()));
    assert_eq!(ts(&a), (0, 0));

    properties.fetch_or(AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
    let b = q.signal(1, 1);
    q.submit(&host, &kernel(0x1000, b.handle()));
    let (b0, b1) = ts(&b);
    assert!(b0 > 0 && b0 <= b1, "{b0} {b1}");

    properties.fetch_and(!AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
    let c = q.signal(2, 1);
    q.submit(&host, &kernel(0x1000, c.handle()));
    assert_eq!(ts(&c), (0, 0));
}

#[test]
fn interrupt_signal_writes_mailbox_and_wakes_event() {
    let p = FakePlatform::new();
    let mut host = TestHost::new(&p);
    logging_kernels(&mut host, &[0x1000]);
    let mut q = TestQueue::new(&p, false, false);
    let event = p.create_event().unwrap();
    let sig = q.signal(0, 2);
    // SAFETY: the signal is not in use by any queue yet; plain writes of its event fields.
    unsafe {
        (*sig.as_ptr()).event_id = event.id.0;
    }
    sig.event_mailbox_ptr()
        .store(event.mailbox.0, Ordering::Release);
    assert_eq!(
        q.submit(&host, &kernel(0x1000, sig.handle())),
        Progress::Idle
    );
    assert_eq!(sig.value().load(Ordering::Acquire), 1);
    assert_eq!(p.mailbox_value(event.id), Some(u64::from(event.id.0)));
    assert_eq!(p.signal_event_count(), 1);
    assert_eq!(p.wait_event(event.id, 0).unwrap(), WaitOutcome::Signaled);
    assert_eq!(p.wait_event(event.id, 1000).unwrap(), WaitOutcome::TimedOut);

    // A user-written mailbox pointer that is no mailbox: the packet completes, the queue stops.
    sig.event_mailbox_ptr()
        .store(q.va(OUT_OFFSET), Ordering::Release);
    let Progress::Stopped(e) = q.submit(&host, &kernel(0x1000, sig.handle())) else {
        panic!("not stopped")
    };
    assert_eq!(sig.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 2);
    assert_eq!(e.status(), Status::InvalidSignal);
    assert_eq!(
        p.read_u64(GpuVa(q.va(OUT_OFFSET))),
        Some(0),
        "no wild write"
    );
    assert_eq!(host.errors().len(), 1);
}

#[test]
fn fake_topology_memory_and_fault_injection() {
    let p = FakePlatform::new();
    assert_eq!(p.node_count(), 2);
    let gpu = p.node(1).unwrap();
    assert_eq!(gpu.simd_count, 416);
    assert_eq!(gpu.compute_unit_count(), 104);
    assert_eq!(gpu.gfx_target_version, 90010);
    assert_eq!(gpu.device_id, 0x740f);
    assert_eq!(gpu.name.as_str(), "gfx90a");
    assert_eq!(p.memory_bank(1, 0).unwrap().unwrap().size_bytes, 64 << 30);
    assert_eq!(p.node(2).unwrap_err().status(), Status::InvalidIndex);
    assert_eq!(p.timestamp_frequency_hz(), 1_000_000_000);

    let req = MemoryRequest {
        node: NodeId(0),
        kind: MemoryKind::System,
        size_bytes: 4096,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let bad = MemoryRequest {
        size_bytes: 100,
        ..req
    };
    assert_eq!(
        p.allocate_memory(&bad).unwrap_err().status(),
        Status::InvalidArgument
    );
    let c = p.allocate_memory(&req).unwrap();
    assert_eq!(c.gpu_va.0, c.host_ptr.unwrap().as_ptr() as usize as u64);
    assert_eq!(p.allocated_bytes(), 4096);
    // SAFETY: `c` came from this platform and nothing uses it.
    unsafe { p.free_memory(&c) }.unwrap();
    // SAFETY: freeing again is what the test checks is refused (the chunk is unknown now).
    let e = unsafe { p.free_memory(&c) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);

    let f = FaultInjector::new(FakePlatform::new());
    f.fail_nth(FaultMethod::AllocateMemory, 2, Status::OutOfResources);
    let first = f.allocate_memory(&req).unwrap();
    let e = f.allocate_memory(&req).unwrap_err();
    assert_eq!(e.status(), Status::OutOfResources);
    assert!(
        e.detail().to_string().contains("call 2 of AllocateMemory"),
        "{}",
        e.detail()
    );
    assert!(f.allocate_memory(&req).is_ok());
    assert_eq!(f.calls(FaultMethod::AllocateMemory), 3);
    assert_eq!(f.inner().allocated_bytes(), 8192);
    // SAFETY: `first` came from the inner platform through the wrapper; unused.
    unsafe { f.free_memory(&first) }.unwrap();
}
