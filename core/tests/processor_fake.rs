//! The software packet processor, end to end through the fake platform: packets are written
//! straight into a host ring with `Ring::write_body` + `Ring::publish` (the producer API is
//! built elsewhere) and the fake runs them inside `ring_doorbell`.
#![cfg(feature = "fake")]

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hsa_core::abi::packet::{
    AgentDispatchPacket, BarrierPacket, BarrierValuePacket, KernelDispatchPacket,
    AMD_PACKET_TYPE_BARRIER_VALUE,
};
use hsa_core::abi::queue::AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
use hsa_core::abi::signal::AmdSignal;
use hsa_core::abi::SignalHandle;
use hsa_core::platform::fake::{FakePlatform, FaultInjector, FaultMethod};
use hsa_core::platform::{
    MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform, QueueErrorCallback, QueueKind,
    QueueRequest, WaitOutcome,
};
use hsa_core::queue::ring::{Ring, INVALID_HEADER_WORD};
use hsa_core::signal::raw::RawSignal;
use hsa_core::{Error, GpuVa, NodeId, QueueId, Status};
use zerocopy::{Immutable, IntoBytes};

const RING_PACKETS: u32 = 16;
const QUEUE_OFFSET: usize = 4096;
const SIGNAL_OFFSET: usize = 5120;
const KERNARG_OFFSET: usize = 7168;
const OUT_OFFSET: usize = 7424;

/// Error-callback counters, one per test that counts (tests run in parallel).
static ERRORS: [AtomicU32; 4] = [const { AtomicU32::new(0) }; 4];

fn count_error(_e: &Error, _q: QueueId, data: usize) {
    ERRORS[data].fetch_add(1, Ordering::SeqCst);
}

/// Header words: type | barrier << 8 | acquire << 9 | release << 11 (system scopes).
const fn hdr(packet_type: u16, barrier: bool) -> u16 {
    packet_type | (barrier as u16) << 8 | 2 << 9 | 2 << 11
}

struct TestQueue<'p> {
    p: &'p FakePlatform,
    chunk: MemoryChunk,
    ring: Ring,
    id: QueueId,
    write: u64,
}

impl<'p> TestQueue<'p> {
    fn new(p: &'p FakePlatform, profiling: bool, error_slot: Option<usize>) -> TestQueue<'p> {
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
            // SAFETY: offset 4096 + 180 is inside the 8192-byte chunk, 4-aligned, and no queue
            // uses the amd_queue_t yet.
            unsafe {
                queue_ptr
                    .as_ptr()
                    .add(180)
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
        let request = QueueRequest {
            node: NodeId(1),
            kind: QueueKind::ComputeAql,
            ring: chunk.gpu_va,
            ring_host: base,
            ring_size_bytes: u64::from(RING_PACKETS) * 64,
            amd_queue: GpuVa(chunk.gpu_va.0 + QUEUE_OFFSET as u64),
            amd_queue_host: queue_ptr,
            read_pointer: GpuVa(chunk.gpu_va.0 + QUEUE_OFFSET as u64 + 128),
            write_pointer: GpuVa(chunk.gpu_va.0 + QUEUE_OFFSET as u64 + 56),
            on_error: error_slot.map(|data| QueueErrorCallback {
                func: count_error,
                data,
            }),
        };
        // SAFETY: the ring and amd_queue_t stay valid until the platform drops.
        let hw = unsafe { p.create_queue(&request) }.unwrap();
        TestQueue {
            p,
            chunk,
            ring,
            id: hw.doorbell,
            write: 0,
        }
    }

    /// Signal `i` (of 16 in the chunk) with kind USER and `value`.
    fn signal(&self, i: usize, value: i64) -> RawSignal {
        let ptr = self
            .chunk
            .host_ptr
            .unwrap()
            .as_ptr()
            .wrapping_add(SIGNAL_OFFSET + 64 * i);
        // SAFETY: 64 bytes at SIGNAL_OFFSET + 64 * i (i < 16) lie in the chunk, 64-aligned,
        // zeroed, and are accessed only atomically from here on.
        let s = unsafe { RawSignal::from_ptr(NonNull::new(ptr.cast::<AmdSignal>()).unwrap()) };
        s.kind().store(1, Ordering::Relaxed);
        s.value().store(value, Ordering::Release);
        s
    }

    fn va(&self, offset: usize) -> u64 {
        self.chunk.gpu_va.0 + offset as u64
    }

    /// Writes and publishes one packet without ringing the doorbell.
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

    fn doorbell(&self) {
        self.p.ring_doorbell(&self.id, self.write - 1);
    }

    fn submit<T: IntoBytes + Immutable>(&mut self, packet: &T) {
        self.push(packet);
        self.doorbell();
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

fn logging_kernels(p: &FakePlatform, objects: &[u64]) -> Log {
    let log: Log = Arc::default();
    for &o in objects {
        let l = log.clone();
        p.register_kernel(o, move |ctx| l.lock().unwrap().push(ctx.kernel_object().0));
    }
    log
}

const N: SignalHandle = SignalHandle::NULL;

#[test]
fn packets_run_in_write_index_order_and_complete() {
    let p = FakePlatform::new();
    let log = logging_kernels(&p, &[0x1000, 0x2000, 0x3000]);
    let mut q = TestQueue::new(&p, false, None);
    let done = q.signal(0, 3);
    for o in [0x3000, 0x1000, 0x2000] {
        q.push(&kernel(o, done.handle()));
    }
    assert_eq!(
        *log.lock().unwrap(),
        Vec::<u64>::new(),
        "nothing runs before the doorbell"
    );
    q.doorbell();
    assert_eq!(*log.lock().unwrap(), [0x3000, 0x1000, 0x2000]);
    assert_eq!(done.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 3);
    for i in 0..3 {
        assert_eq!(q.header_type(i), 1, "slot {i} is INVALID again");
    }
}

#[test]
fn dispatch_context_carries_the_packet_and_kernargs() {
    let p = FakePlatform::new();
    let mut q = TestQueue::new(&p, false, None);
    let out_va = q.va(OUT_OFFSET);
    let kernarg = q.va(KERNARG_OFFSET);
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    p.register_kernel(0x4000, move |ctx| {
        let out = ctx.kernarg_u64(0).unwrap();
        let ptr = ctx.host_ptr(GpuVa(out), 4).unwrap();
        // SAFETY: `host_ptr` checked 4 bytes of live memory at `out`; nothing else touches
        // them while the kernel runs.
        unsafe {
            ptr.as_ptr()
                .cast::<u32>()
                .write_unaligned(ctx.grid_size()[0] * 2)
        };
        *s.lock().unwrap() = Some((
            ctx.dimensions(),
            ctx.grid_size(),
            ctx.workgroup_size(),
            ctx.group_segment_size_bytes(),
            ctx.private_segment_size_bytes(),
            ctx.kernarg_address().0,
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
    let mut k = kernel(0x4000, N);
    k.setup = 2;
    k.grid_size_x = 100;
    k.grid_size_y = 3;
    k.workgroup_size_x = 32;
    k.workgroup_size_y = 2;
    k.group_segment_size = 1024;
    k.private_segment_size = 16;
    k.kernarg_address = kernarg;
    q.submit(&k);
    assert_eq!(
        *seen.lock().unwrap(),
        Some((2, [100, 3, 1], [32, 2, 1], 1024, 16, kernarg))
    );
    assert_eq!(p.read_u64(GpuVa(out_va)).unwrap() & 0xffff_ffff, 200);
}

#[test]
fn barrier_and_ignores_null_deps_and_blocks_later_packets() {
    let p = FakePlatform::new();
    let log = logging_kernels(&p, &[0x1000]);
    let mut q = TestQueue::new(&p, false, None);
    let dep = q.signal(0, 1);
    let done = q.signal(1, 1);
    // All-null barrier-AND: satisfied at once.
    q.submit(&barrier(3, [N; 5], done.handle()));
    assert_eq!(done.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 1);
    // One real dependency at 1: the barrier and the kernel behind it wait.
    q.push(&barrier(3, [N, dep.handle(), N, N, N], N));
    q.submit(&kernel(0x1000, N));
    assert_eq!(q.read_index(), 1);
    assert!(log.lock().unwrap().is_empty());
    p.poll_queues();
    assert_eq!(q.read_index(), 1, "still blocked while the dependency is 1");
    dep.value().store(0, Ordering::Release);
    p.poll_queues();
    assert_eq!(q.read_index(), 3);
    assert_eq!(*log.lock().unwrap(), [0x1000]);
}

#[test]
fn barrier_or_null_deps_never_satisfy_and_any_zero_does() {
    let p = FakePlatform::new();
    let mut q = TestQueue::new(&p, false, None);
    let one = q.signal(0, 1);
    let zero = q.signal(1, 0);
    q.submit(&barrier(5, [N, one.handle(), N, zero.handle(), N], N));
    assert_eq!(q.read_index(), 1, "zero dependency satisfies the OR");

    let mut q2 = TestQueue::new(&p, false, None);
    q2.submit(&barrier(5, [N; 5], N));
    p.poll_queues();
    assert_eq!(q2.read_index(), 0, "an all-null barrier-OR never completes");
    assert_eq!(q2.header_type(0), 5);
}

#[test]
fn barrier_value_compares_masked_value() {
    let p = FakePlatform::new();
    let mut q = TestQueue::new(&p, false, None);
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
    q.submit(&bv);
    assert_eq!(q.read_index(), 0, "0x105 & 0xff = 5 is not < 3");
    sig.value().store(0x302, Ordering::Release);
    p.poll_queues();
    assert_eq!(q.read_index(), 1, "0x302 & 0xff = 2 < 3");
    assert_eq!(done.value().load(Ordering::Acquire), 0);
}

#[test]
fn agent_dispatch_runs_the_registered_function() {
    let p = FakePlatform::new();
    let mut q = TestQueue::new(&p, false, None);
    p.register_agent_function(7, |a, platform| {
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
    q.submit(&AgentDispatchPacket {
        header: hdr(4, false),
        type_: 7,
        return_address: q.va(OUT_OFFSET),
        arg: [40, 2, 0, 0],
        completion_signal: done.handle(),
        ..Default::default()
    });
    assert_eq!(p.read_u64(GpuVa(q.va(OUT_OFFSET))), Some(42));
    assert_eq!(done.value().load(Ordering::Acquire), 0);
}

#[test]
fn malformed_packet_stops_the_queue_once() {
    let p = FakePlatform::new();
    let log = logging_kernels(&p, &[0x1000, 0x2000]);
    let mut q = TestQueue::new(&p, false, Some(0));
    q.push(&kernel(0x1000, N));
    let mut bad = kernel(0x2000, N);
    bad.workgroup_size_x = 0;
    q.push(&bad);
    q.push(&kernel(0x2000, N));
    q.doorbell();
    assert_eq!(*log.lock().unwrap(), [0x1000]);
    assert_eq!(q.read_index(), 1, "read index stops at the bad packet");
    assert_eq!(q.header_type(1), 2, "the bad packet's header stays");
    assert_eq!(q.header_type(2), 2, "later packets untouched");
    let e = p.queue_error(q.id).unwrap();
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    assert!(e.detail().contains("packet 1"), "{}", e.detail());
    assert!(
        e.detail().contains("workgroup_size_x is 0"),
        "{}",
        e.detail()
    );
    q.doorbell();
    p.poll_queues();
    assert_eq!(ERRORS[0].load(Ordering::SeqCst), 1, "callback once");
    assert_eq!(*log.lock().unwrap(), [0x1000]);
}

#[test]
fn unknown_signal_kernel_and_negative_dep_stop_with_precise_status() {
    let p = FakePlatform::new();
    let log = logging_kernels(&p, &[0x1000]);
    // A completion signal outside every live chunk: never written.
    let mut q = TestQueue::new(&p, false, Some(1));
    q.submit(&kernel(0x1000, SignalHandle(0x40)));
    assert_eq!(p.queue_error(q.id).unwrap().status(), Status::InvalidSignal);
    assert!(log.lock().unwrap().is_empty(), "the kernel did not run");
    assert_eq!(q.read_index(), 0);

    let bad_objects = [
        // A well-formed kernel object the host does not know: the host's error.
        (
            0x9980,
            "packet 0: kernel_object 0x9980 is not a registered kernel",
        ),
        // Not 64-byte aligned (AMDGPUUsage "Kernel Descriptor"): the packet parser's error,
        // before the host is asked.
        (
            0x9999,
            "packet 0: kernel_object is 0x9999; must be 64-byte aligned",
        ),
    ];
    for (object, want) in bad_objects {
        let mut q = TestQueue::new(&p, false, Some(1));
        q.submit(&kernel(object, N));
        let e = p.queue_error(q.id).unwrap();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(e.detail(), want);
    }

    let mut q = TestQueue::new(&p, false, Some(1));
    let failed = q.signal(0, -1);
    q.submit(&barrier(3, [N, N, failed.handle(), N, N], N));
    let e = p.queue_error(q.id).unwrap();
    assert_eq!(e.status(), Status::Error);
    assert!(e.detail().contains("dep_signal[2]"), "{}", e.detail());
    assert_eq!(ERRORS[1].load(Ordering::SeqCst), 4);
}

#[test]
fn profiling_writes_monotonic_timestamps() {
    let p = FakePlatform::new();
    logging_kernels(&p, &[0x1000]);
    let mut q = TestQueue::new(&p, true, None);
    let a = q.signal(0, 1);
    let b = q.signal(1, 1);
    q.push(&kernel(0x1000, a.handle()));
    q.push(&kernel(0x1000, b.handle()));
    q.doorbell();
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

    let mut plain = TestQueue::new(&p, false, None);
    let c = plain.signal(0, 1);
    plain.submit(&kernel(0x1000, c.handle()));
    assert_eq!(ts(&c), (0, 0), "no timestamps without the profiling bit");
}

/// The profiling bit is read at every packet: turned on for a live queue (as
/// `hsa_amd_profiling_set_profiler_enabled` does, after HIP created the queue) the next
/// packets get timestamps, turned off they do not. (The processor used to read the bit once,
/// when the queue was created, so HIP's events on the emulated device all read 0 ms.)
#[test]
fn profiling_bit_is_followed_on_a_live_queue() {
    let p = FakePlatform::new();
    logging_kernels(&p, &[0x1000]);
    let mut q = TestQueue::new(&p, false, None);
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
            .cast::<AtomicU32>()
    };
    let a = q.signal(0, 1);
    q.submit(&kernel(0x1000, a.handle()));
    assert_eq!(ts(&a), (0, 0));

    properties.fetch_or(AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
    let b = q.signal(1, 1);
    q.submit(&kernel(0x1000, b.handle()));
    let (b0, b1) = ts(&b);
    assert!(b0 > 0 && b0 <= b1, "{b0} {b1}");

    properties.fetch_and(!AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
    let c = q.signal(2, 1);
    q.submit(&kernel(0x1000, c.handle()));
    assert_eq!(ts(&c), (0, 0));
}

#[test]
fn interrupt_signal_writes_mailbox_and_wakes_event() {
    let p = FakePlatform::new();
    logging_kernels(&p, &[0x1000]);
    let mut q = TestQueue::new(&p, false, Some(2));
    let event = p.create_event().unwrap();
    let sig = q.signal(0, 2);
    // SAFETY: the signal is not in use by any queue yet; plain writes of its event fields.
    unsafe {
        (*sig.as_ptr()).event_id = event.id.0;
    }
    sig.event_mailbox_ptr()
        .store(event.mailbox.0, Ordering::Release);
    q.submit(&kernel(0x1000, sig.handle()));
    assert_eq!(sig.value().load(Ordering::Acquire), 1);
    assert_eq!(p.mailbox_value(event.id), Some(u64::from(event.id.0)));
    assert_eq!(p.wait_event(event.id, 0).unwrap(), WaitOutcome::Signaled);
    assert_eq!(p.wait_event(event.id, 1000).unwrap(), WaitOutcome::TimedOut);

    // A user-written mailbox pointer that is no mailbox: the packet completes, the queue stops.
    sig.event_mailbox_ptr()
        .store(q.va(OUT_OFFSET), Ordering::Release);
    q.submit(&kernel(0x1000, sig.handle()));
    assert_eq!(sig.value().load(Ordering::Acquire), 0);
    assert_eq!(q.read_index(), 2);
    assert_eq!(p.queue_error(q.id).unwrap().status(), Status::InvalidSignal);
    assert_eq!(
        p.read_u64(GpuVa(q.va(OUT_OFFSET))),
        Some(0),
        "no wild write"
    );
    assert_eq!(ERRORS[2].load(Ordering::SeqCst), 1);
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
        e.detail().contains("call 2 of AllocateMemory"),
        "{}",
        e.detail()
    );
    assert!(f.allocate_memory(&req).is_ok());
    assert_eq!(f.calls(FaultMethod::AllocateMemory), 3);
    assert_eq!(f.inner().allocated_bytes(), 8192);
    // SAFETY: `first` came from the inner platform through the wrapper; unused.
    unsafe { f.free_memory(&first) }.unwrap();
}
