//! The bare-metal backend end to end against a simulated GPU (`sim`): the core's `AqlQueue`
//! and `SignalPool` over `BaremetalPlatform`, a device thread that watches the doorbells, runs
//! the rings through the core's `PacketProcessor` and reports completions of interrupt signals
//! as soc15 IH entries, and waiters that sleep in the host's wait-for-interrupt hook until the
//! platform's interrupt path wakes them.

mod sim;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use hsa_baremetal::ih::IhEntry;
use hsa_baremetal::irq::{CLIENT_GRBM_CP, SOURCE_CP_END_OF_PIPE};
use hsa_baremetal::{BaremetalPlatform, IrqStats};
use hsa_core::packet::{BarrierAnd, HeaderFlags, KernelDispatch};
use hsa_core::platform::Platform;
use hsa_core::platform::{MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, QueueErrorCallback};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::{Error, GpuVa, NodeId, QueueId, Status};
use sim::host::{HostConfig, TestHost};
use sim::SimDevice;

const FIRST_DOORBELL: u32 = 16;
const HOST: HostConfig = HostConfig {
    sys_bytes: 2 << 20,
    ih_bytes: 4096, // 128 entries
    first_doorbell: FIRST_DOORBELL,
    doorbell_bar_bytes: 4096 * 8, // 4096 doorbell slots
    rptr_offset: 12,
    cpu_cores: 2,
    forward_to_link: true,
};
const KERNEL: GpuVa = GpuVa(0x10_0000);
const TIMEOUT_NS: u64 = 10_000_000_000;

type Plat = BaremetalPlatform<TestHost>;

fn platform() -> Plat {
    BaremetalPlatform::new(TestHost::new(HOST)).unwrap()
}

fn system_chunk(p: &Plat) -> MemoryChunk {
    p.allocate_memory(&MemoryRequest {
        node: NodeId(0),
        kind: MemoryKind::System,
        size_bytes: 4096,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    })
    .unwrap()
}

/// The 32-bit word `i` of a host-visible chunk.
fn word(chunk: &MemoryChunk, i: usize) -> &AtomicU32 {
    assert!(4 * i + 4 <= chunk.size_bytes as usize);
    // SAFETY: in bounds (asserted), 4-aligned, inside a live chunk of the identity-mapped
    // system carve-out; the device accesses it atomically too.
    unsafe { AtomicU32::from_ptr(chunk.host_ptr.unwrap().as_ptr().cast::<u32>().add(i)) }
}

fn set_kernarg_u64(chunk: &MemoryChunk, value: u64) {
    word(chunk, 0).store(value as u32, Ordering::Relaxed);
    word(chunk, 1).store((value >> 32) as u32, Ordering::Relaxed);
}

/// Polls `cond` every 100 µs for up to 20 s.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out: {what}");
        thread::sleep(Duration::from_micros(100));
    }
}

fn unknown_entry() -> [u8; 32] {
    // THM (0x0f, thermal): not a source this runtime handles.
    IhEntry {
        client_id: 0x0f,
        source_id: 0,
        ..Default::default()
    }
    .encode()
}

fn eop_entry(event: u32) -> [u8; 32] {
    IhEntry {
        client_id: CLIENT_GRBM_CP,
        source_id: SOURCE_CP_END_OF_PIPE,
        src_data: [event, 0, 0, 0],
        ..Default::default()
    }
    .encode()
}

fn counts(s: IrqStats) -> [u64; 6] {
    [
        s.entries,
        s.signaled,
        s.unknown,
        s.malformed,
        s.bad_event,
        s.overflows,
    ]
}

fn gpu_queue(p: &Plat) -> AqlQueue<&Plat> {
    AqlQueue::create(p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17)).unwrap()
}

#[test]
fn barrier_and_dispatch_complete_and_wake_blocked_waiters_through_the_ih_ring() {
    let p = platform();
    let h = p.host();
    let out = system_chunk(&p);
    let kernarg = system_chunk(&p);
    set_kernarg_u64(&kernarg, out.gpu_va.get());
    let kernel_started = AtomicBool::new(false);
    let kernel_go = AtomicBool::new(false);
    let dev = SimDevice::new(&p);
    dev.register_kernel(KERNEL, |ctx| {
        kernel_started.store(true, Ordering::SeqCst);
        let t = Instant::now();
        while !kernel_go.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(20) {
            thread::sleep(Duration::from_micros(100));
        }
        let dst = ctx.kernarg_u64(0).unwrap();
        for i in 0..ctx.dispatch.grid_size[0] {
            assert!(ctx.store_u32(dst + 4 * u64::from(i), i * i + 7));
        }
    });
    let pool = SignalPool::new(&p, NodeId(0));
    let gate = pool.create(1).unwrap();
    let barrier_done = pool.create_interrupt(1).unwrap();
    let kernel_done = pool.create_interrupt(1).unwrap();
    let (be, ke) = (barrier_done.event().unwrap(), kernel_done.event().unwrap());
    let queue = gpu_queue(&p);
    assert_eq!(h.link.mapped(), 1);
    let doorbell = FIRST_DOORBELL; // the first queue takes the first granted doorbell
    assert_eq!(
        queue.hw_queue().doorbell_address,
        h.doorbell_bar.as_ptr() as u64 + 8 * u64::from(doorbell)
    );

    let stop = AtomicBool::new(false);
    let waited = thread::scope(|s| {
        s.spawn(|| dev.run(&stop));
        // The controller: junk entries while the waiter sleeps, then open the gate; junk again
        // while the kernel runs and the waiter sleeps on its signal, then let the kernel end.
        s.spawn(|| {
            wait_until("waiter asleep on the barrier", || {
                h.sleeps.load(Ordering::SeqCst) >= 1
            });
            dev.inject(&unknown_entry());
            let mut bad = eop_entry(be.get());
            bad[3] |= 0x40; // dword 0 bit 30: reserved -> malformed, must not signal
            dev.inject(&bad);
            assert_eq!(dev.raise(), 0, "junk signals nothing");
            assert_eq!(h.woken.load(Ordering::SeqCst), 0, "junk wakes nobody");
            gate.store(0, StoreOrder::Release);
            wait_until("kernel running, waiter asleep on it", || {
                kernel_started.load(Ordering::SeqCst) && h.sleeps.load(Ordering::SeqCst) >= 2
            });
            dev.inject(&eop_entry(200)); // not an allocated event
                                         // A queue-error entry while no queue stored an error: counted, reports nothing.
            let mut cp_bad_opcode = IhEntry::decode(&eop_entry(0)).unwrap();
            cp_bad_opcode.source_id = 183;
            dev.inject(&cp_bad_opcode.encode());
            assert_eq!(dev.raise(), 0);
            kernel_go.store(true, Ordering::SeqCst);
        });

        let mut r = queue.reserve(2).unwrap();
        let barrier = BarrierAnd::new(
            HeaderFlags {
                barrier: true,
                ..HeaderFlags::SYSTEM
            },
            &[gate.handle()],
            barrier_done.handle(),
        )
        .unwrap();
        r.write_next(&barrier.emit().unwrap()).unwrap();
        let dispatch = KernelDispatch {
            completion_signal: kernel_done.handle(),
            ..KernelDispatch::one_dimensional(KERNEL, kernarg.gpu_va, 64, 256)
        };
        r.write_next(&dispatch.emit().unwrap()).unwrap();
        let last = r.last_index();
        queue.ring_doorbell(last).unwrap();
        assert_eq!(last, 1);

        let t = Instant::now();
        let v = barrier_done.wait(
            SignalCondition::Eq,
            0,
            TIMEOUT_NS,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 0, "barrier-AND completed");
        let t1 = t.elapsed();
        let v = kernel_done.wait(
            SignalCondition::Lt,
            1,
            TIMEOUT_NS,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 0, "dispatch completed");
        stop.store(true, Ordering::Release);
        (t1, t.elapsed())
    });
    assert!(waited.1 < Duration::from_secs(15), "woken late: {waited:?}");

    // The kernel ran once with the packet's grid and wrote through the kernarg pointer.
    for i in [0u32, 1, 63, 255] {
        assert_eq!(word(&out, i as usize).load(Ordering::Relaxed), i * i + 7);
    }
    assert_eq!(word(&out, 256).load(Ordering::Relaxed), 0, "grid is 256");
    assert_eq!(dev.packets(), 2);
    assert_eq!(queue.load_read_index(LoadOrder::Acquire), 2);
    assert_eq!(
        dev.doorbell_value(doorbell),
        1,
        "doorbell holds the last index"
    );
    assert!(dev.errors().is_empty(), "{:?}", dev.errors());

    // Both waiters slept in the host hook and were woken by the interrupt path.
    assert_eq!(h.sleeps.load(Ordering::SeqCst), 2);
    assert_eq!(h.woken.load(Ordering::SeqCst), 2);
    assert_eq!(dev.eop_interrupts(), 2);
    // 2 junk + barrier EOP + 2 junk + kernel EOP, in that order in the ring; one of the
    // junk entries is a queue-error entry that found no stopped queue.
    let s = p.irq_stats();
    assert_eq!(counts(s), [6, 2, 1, 1, 1, 0], "{s:?}");
    assert_eq!(s.queue_errors, 1, "{s:?}");
    assert!((2..=4).contains(&s.interrupts), "{s:?}");
    assert_eq!(h.rptr_register(), 6 * 32);
    // The processor wrote each event id into its mailbox.
    for ev in [be, ke] {
        let mb = p.event_mailbox(ev).unwrap().get() as *const u64;
        // SAFETY: the mailbox slot of a live event, in the identity-mapped event page.
        let got = unsafe { AtomicU64::from_ptr(mb.cast_mut()) }.load(Ordering::Acquire);
        assert_eq!(got, u64::from(ev.get()));
    }

    queue.destroy().unwrap();
    assert_eq!(h.link.mapped(), 0);
    // SAFETY: no queue or kernel uses the chunks any more.
    unsafe {
        p.free_memory(&out).unwrap();
        p.free_memory(&kernarg).unwrap();
    }
}

#[test]
fn many_dispatches_wrap_the_ring_and_every_completion_wakes_the_waiter() {
    const ROUNDS: u32 = 150; // > 2 laps of the 64-packet ring and > 1 lap of the IH ring
    let p = platform();
    let kernarg = system_chunk(&p);
    let runs = AtomicU32::new(0);
    let dev = SimDevice::new(&p);
    dev.register_kernel(KERNEL, |ctx| {
        assert_eq!(ctx.dispatch.grid_size, [64, 1, 1]);
        runs.fetch_add(1, Ordering::SeqCst);
    });
    let pool = SignalPool::new(&p, NodeId(0));
    let done = pool.create_interrupt(1).unwrap();
    let queue = gpu_queue(&p);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| dev.run(&stop));
        for round in 0..ROUNDS {
            done.silent_store(1, StoreOrder::Relaxed);
            let mut r = queue.reserve(1).unwrap();
            let k = KernelDispatch {
                completion_signal: done.handle(),
                ..KernelDispatch::one_dimensional(KERNEL, kernarg.gpu_va, 64, 64)
            };
            let index = r.write_next(&k.emit().unwrap()).unwrap();
            assert_eq!(index, u64::from(round));
            queue.ring_doorbell(index).unwrap();
            let v = done.wait(
                SignalCondition::Eq,
                0,
                TIMEOUT_NS,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
            assert_eq!(v, 0, "round {round}");
        }
        stop.store(true, Ordering::Release);
    });
    assert_eq!(runs.load(Ordering::SeqCst), ROUNDS);
    assert_eq!(queue.load_read_index(LoadOrder::Acquire), u64::from(ROUNDS));
    let s = p.irq_stats();
    assert_eq!(counts(s), [150, 150, 0, 0, 0, 0], "{s:?}");
    assert_eq!(p.host().rptr_register(), (150 % 128) * 32);
    assert!(dev.errors().is_empty());
    queue.destroy().unwrap();
    // SAFETY: no queue or kernel uses the chunk any more.
    unsafe { p.free_memory(&kernarg) }.unwrap();
}

#[test]
fn overflowed_ih_ring_is_recovered_once_and_later_interrupts_still_arrive() {
    let p = platform();
    let h = p.host();
    let dev = SimDevice::new(&p);
    // 130 entries into a 128-entry ring without an interrupt: the IH overflows.
    for _ in 0..130 {
        dev.inject(&unknown_entry());
    }
    assert_eq!(dev.raise(), 0);
    let s = p.irq_stats();
    // Restart at wptr + 32: the 127 entries not overwritten.
    assert_eq!(counts(s), [127, 0, 127, 0, 0, 1], "{s:?}");
    assert_eq!(h.overflow_clears.load(Ordering::SeqCst), 1);
    // A repeated interrupt before the IH writes again re-reads nothing.
    assert_eq!(dev.raise(), 0);
    assert_eq!(counts(p.irq_stats()), [127, 0, 127, 0, 0, 1]);

    // A real completion after the overflow: the next write clears RB_OVERFLOW.
    let kernarg = system_chunk(&p);
    dev.register_kernel(KERNEL, |_| {});
    let pool = SignalPool::new(&p, NodeId(0));
    let done = pool.create_interrupt(1).unwrap();
    let queue = gpu_queue(&p);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| dev.run(&stop));
        let mut r = queue.reserve(1).unwrap();
        let k = KernelDispatch {
            completion_signal: done.handle(),
            ..KernelDispatch::one_dimensional(KERNEL, kernarg.gpu_va, 1, 1)
        };
        let i = r.write_next(&k.emit().unwrap()).unwrap();
        queue.ring_doorbell(i).unwrap();
        let v = done.wait(
            SignalCondition::Eq,
            0,
            TIMEOUT_NS,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 0);
        stop.store(true, Ordering::Release);
    });
    assert_eq!(counts(p.irq_stats()), [128, 1, 127, 0, 0, 1]);
    assert_eq!(
        h.ih_wptr[0].load(Ordering::SeqCst) & 1,
        0,
        "overflow cleared"
    );
    queue.destroy().unwrap();
    // SAFETY: nothing uses the chunk any more.
    unsafe { p.free_memory(&kernarg) }.unwrap();
}

/// A queue-error callback that counts its calls in the `AtomicUsize` its data points to (the
/// queue itself keeps the error: `AqlQueue::error`).
fn count_calls(_: &Error, _: QueueId, counter: usize) {
    // SAFETY: `counter` is the address of a test's `AtomicUsize`, which outlives its queues
    // (the platform calls no callback after the queue's destroy returned).
    unsafe { &*(counter as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn bad_packets_stop_the_queue_and_are_reported_by_the_device() {
    let calls = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let p = platform();
    let dev = SimDevice::new(&p);
    let pool = SignalPool::new(&p, NodeId(0));
    let done = pool.create(1).unwrap();
    let kernarg = system_chunk(&p);
    let mut config = QueueConfig::new(NodeId(1), 64, 64, 1 << 17);
    config.on_error = Some(QueueErrorCallback {
        func: count_calls,
        data: &calls[0] as *const AtomicUsize as usize,
    });
    let queue = AqlQueue::create(&p, &config).unwrap();
    // A second queue, with a callback, that does not fail: never reported.
    let mut quiet = config;
    quiet.on_error = Some(QueueErrorCallback {
        func: count_calls,
        data: &calls[1] as *const AtomicUsize as usize,
    });
    let other = AqlQueue::create(&p, &quiet).unwrap();
    // A kernel object nobody registered.
    let k = KernelDispatch {
        completion_signal: done.handle(),
        ..KernelDispatch::one_dimensional(GpuVa(0xbad_0000), kernarg.gpu_va, 1, 1)
    };
    let mut r = queue.reserve(1).unwrap();
    let i = r.write_next(&k.emit().unwrap()).unwrap();
    queue.ring_doorbell(i).unwrap();
    assert_eq!(dev.poll(), 0);
    let errors = dev.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, FIRST_DOORBELL);
    assert_eq!(errors[0].1.status(), Status::InvalidPacketFormat);
    assert!(
        errors[0].1.detail().to_string().contains("0xbad0000"),
        "{}",
        errors[0].1
    );
    assert_eq!(done.load(LoadOrder::Acquire), 1, "not completed");
    assert_eq!(queue.load_read_index(LoadOrder::Acquire), 0);
    // The platform learnt it from the CP_BAD_OPCODE entry and reported it once (the queue
    // recorded it, then called its callback), with the status the processor stored and the
    // value it read.
    let stored = queue.inactive_signal().load(LoadOrder::Acquire);
    assert_eq!(
        stored,
        hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false)
    );
    let e = queue.error().expect("the queue's error");
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    assert_eq!(
        e.detail(),
        format!("queue_inactive_signal {stored:#x}").as_str()
    );
    let count = |i: usize| calls[i].load(Ordering::SeqCst);
    assert_eq!(count(0), 1);
    assert_eq!(p.irq_stats().queue_errors, 1);
    // Stopped for good: reported once, even when the platform looks again.
    assert_eq!(dev.poll(), 0);
    assert_eq!(dev.errors().len(), 1);
    assert_eq!(p.check_queue_errors(), 0);
    assert_eq!(count(0), 1);
    assert_eq!((count(1), other.error()), (0, None));
    queue.destroy().unwrap();
    other.destroy().unwrap();
    assert_eq!(count(0), 1, "destruction reports nothing more");
    // SAFETY: nothing uses the chunk any more.
    unsafe { p.free_memory(&kernarg) }.unwrap();
}

/// The MEC (the model the QEMU device shares) takes a queue only from the MQD image at
/// `MAP_QUEUES`' `mqd_addr`, through the host's KIQ: an image with a wrong header, a doorbell
/// outside the MEC's range, a packet whose doorbell is not the image's, and a second queue on
/// a mapped ring are each refused by name (their fences never written, no HQD taken); a good
/// image maps, and `UNMAP_QUEUES` frees its HQD once.
#[test]
fn the_mec_takes_queues_from_the_mqd_image_through_the_kiq() {
    use hsa_baremetal::mqd::{ComputeMqd, MqdParams, ALL_CUS, NORMAL_PRIORITY};
    use hsa_core::wire::kiq::{KiqPacket, MapQueues, UnmapAction, UnmapQueues};
    use hsa_core::DoorbellIndex;
    let p = platform();
    let h = p.host();
    let block = p
        .allocate_memory(&MemoryRequest {
            node: NodeId(0),
            kind: MemoryKind::System,
            size_bytes: 4 * 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS,
        })
        .unwrap();
    // The MQD at +0, amd_queue_t at +4096, the ring at +8192, the EOP buffer at +12288.
    let base = block.gpu_va.get();
    let image = |doorbell: u32, ring: u64| {
        ComputeMqd::new(&MqdParams {
            ring: GpuVa(ring),
            ring_size_bytes: 4096,
            rptr_report: GpuVa(base + 4096 + 128),
            wptr_poll: GpuVa(base + 4096 + 56),
            doorbell: DoorbellIndex(doorbell),
            eop: GpuVa(base + 12288),
            eop_size_bytes: 4096,
            mqd_address: GpuVa(base),
            vmid: 0,
            priority: NORMAL_PRIORITY,
            cu_masks: ALL_CUS,
            xcc: None,
        })
        .unwrap()
        .v9_mqd()
        .dwords()
    };
    let write = |d: &[u32; 512]| {
        for (i, w) in d.iter().enumerate() {
            word(&block, i).store(*w, Ordering::SeqCst);
        }
    };
    let map = |doorbell_dword: u32| {
        let m = MapQueues::amdgpu_kiq(1, 0, 0, doorbell_dword, base, base + 4096 + 56);
        h.kiq_packets(&[KiqPacket::MapQueues(m)], Status::InvalidQueueCreation)
    };
    let refused = |doorbell_dword: u32| {
        let e = map(doorbell_dword).unwrap_err();
        assert_eq!(e.status(), Status::InvalidQueueCreation, "{e}");
        e.detail().to_string()
    };
    let db = FIRST_DOORBELL + 3;
    let ring = base + 8192;
    let mut bad = image(db, ring);
    bad[0] = 0xC031_0801;
    write(&bad);
    let e = refused(2 * db);
    assert!(e.contains("MQD header 0xc0310801"), "{e}");
    write(&image(5, ring));
    let e = refused(10);
    assert!(e.contains("DOORBELL_OFFSET 0xa is outside"), "{e}");
    write(&image(db, ring));
    let e = refused(2 * db + 2);
    assert!(
        e.contains(&format!(
            "doorbell_offset {:#x} differs from the MQD's DOORBELL_OFFSET {:#x}",
            2 * db + 2,
            2 * db
        )),
        "{e}"
    );
    assert_eq!((h.link.mapped(), h.link.served()), (0, [0, 0, 0, 0]));
    map(2 * db).unwrap();
    assert_eq!((h.link.mapped(), h.link.served()), (1, [1, 0, 1, 0]));
    // Another doorbell on the same ring: the ring comes from the image.
    write(&image(db + 1, ring));
    let e = refused(2 * db + 2);
    assert!(
        e.contains(&format!("(ring {ring:#x}): the queue of")),
        "{e}"
    );
    let unmap = || {
        let u = UnmapQueues::amdgpu_kiq(UnmapAction::PreemptQueues, 2 * db);
        h.kiq_packets(&[KiqPacket::UnmapQueues(u)], Status::InvalidQueue)
    };
    unmap().unwrap();
    assert_eq!((h.link.mapped(), h.link.served()), (0, [1, 1, 2, 0]));
    let e = unmap().unwrap_err();
    assert!(e.detail().contains("no queue is mapped there"), "{e}");
    assert_eq!(h.link.refused().len(), 5);
    // SAFETY: the MEC holds no queue in the block any more.
    unsafe { p.free_memory(&block) }.unwrap();
}

/// Each queue's MQD runs under the host's VMID (`Host::queue_vmid` → `cp_hqd_vmid`, dword
/// 131 of the image): the MEC reads VMID 9 from the image and refuses it, as the firmware gave
/// VMID 9 no page tables (the VMID-8 test below maps one that has them); a VMID past 15 fails
/// the queue's creation before the KIQ. Nothing is mapped, and the doorbell is free again.
#[test]
fn the_mqd_carries_the_hosts_vmid() {
    let p = platform();
    let create = || AqlQueue::create(&p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17));
    p.host().queue_vmid.store(9, Ordering::SeqCst);
    let e = create().unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation, "{e}");
    assert!(
        e.detail()
            .contains("MQD cp_hqd_vmid 9: the firmware gave that VMID no page tables"),
        "{e}"
    );
    p.host().queue_vmid.store(16, Ordering::SeqCst);
    let e = create().unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation, "{e}");
    assert!(e.detail().contains("VMID 16 is past 15"), "{e}");
    assert_eq!(p.host().mapped.lock().unwrap().len(), 0);
    assert_eq!(p.host().link.mapped(), 0);
    p.host().queue_vmid.store(0, Ordering::SeqCst);
    let q = create().unwrap();
    let mapped = *p.host().mapped.lock().unwrap().last().unwrap();
    assert_eq!(mapped.doorbell.get(), FIRST_DOORBELL);
    assert_eq!(p.host().link.mapped(), 1);
    q.destroy().unwrap();
}

/// On a GC 9.4.3 GPU (gfx942) of one XCC per partition, the queue's MQD is XCC 0's as
/// amdkfd's `init_mqd_v9_4_3` fills it (`compute_current_logic_xcc_id` 0,
/// `compute_tg_chunk_size` 1, `cp_mqd_stride_size` 2048, and the master XCC's
/// `cp_hqd_pq_control` without `NO_UPDATE_RPTR`), and the MEC maps it. A partition of two XCCs
/// fails the queue by name, with nothing mapped.
#[test]
fn gc_9_4_3_queues_get_the_master_xccs_mqd() {
    let gfx942 = |xccs| {
        let h = TestHost::new(HOST).with_gpu(|n| {
            n.gfx_target_version = 90402;
            n.num_xcc = xccs;
        });
        BaremetalPlatform::new(h).unwrap()
    };
    let p = gfx942(1);
    let q = gpu_queue(&p);
    let m = p.host().mapped.lock().unwrap()[0].mqd;
    let d = m.v9_mqd().dwords();
    assert_eq!((d[39], d[41], d[226]), (0, 1, 2048));
    assert_eq!((d[40], d[42]), (u32::MAX, u32::MAX));
    assert_eq!(d[145] & 1 << 27, 0, "NO_UPDATE_RPTR: {:#x}", d[145]);
    assert_eq!(p.host().link.mapped(), 1);
    q.destroy().unwrap();
    let p = gfx942(2);
    let e = AqlQueue::create(&p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17)).unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation, "{e}");
    assert!(
        e.detail().contains("node 1 is a partition of 2 XCCs"),
        "{e}"
    );
    assert_eq!(p.host().link.mapped(), 0);
    // gfx900: one MQD, NO_UPDATE_RPTR set, dwords 39-42 and 226 the masks and reserved.
    let p = platform();
    let q = gpu_queue(&p);
    let d = p.host().mapped.lock().unwrap()[0].mqd.v9_mqd().dwords();
    assert_eq!((d[39], d[41], d[226]), (u32::MAX, u32::MAX, 0));
    assert_ne!(d[145] & 1 << 27, 0);
    q.destroy().unwrap();
}

/// A host whose MEC doorbell range (`CP_MEC_DOORBELL_RANGE_LOWER/UPPER`) holds the grant
/// (32 doorbells from `FIRST_DOORBELL`) makes a platform; one a doorbell short is refused,
/// naming the grant and the range.
#[test]
fn a_grant_outside_the_mec_doorbell_range_is_refused() {
    let (first, last) = (8 * FIRST_DOORBELL, 8 * (FIRST_DOORBELL + 31));
    let host = TestHost::new(HOST);
    *host.mec_range.lock().unwrap() = Some((first, last));
    assert!(Plat::new(host).is_ok());
    let host = TestHost::new(HOST);
    *host.mec_range.lock().unwrap() = Some((first, last - 8));
    let e = Plat::new(host).err().unwrap();
    assert_eq!(e.status(), Status::InvalidArgument);
    let d = e.detail().to_string();
    assert!(
        d.contains(&format!(
            "granted doorbells {FIRST_DOORBELL}..{} (bytes {first:#x}..={last:#x}) leave the \
             MEC's doorbell range {first:#x}..={:#x}",
            FIRST_DOORBELL + 32,
            last - 8
        )),
        "{d}"
    );
}

/// The apertures a queue is told are the host's `SH_MEM_BASES` on a GPU node only (none for
/// the CPU node or an unknown one), and the platform reports memory faults.
#[test]
fn gpu_nodes_have_the_hosts_apertures_and_faults_are_reported() {
    use hsa_core::platform::{SegmentApertures, TopologySource};
    let p = platform();
    assert_eq!(
        p.segment_apertures(NodeId(1)),
        Some(SegmentApertures {
            group_base: 1 << 48,
            private_base: 2 << 48,
        })
    );
    assert_eq!(p.segment_apertures(NodeId(0)), None);
    assert_eq!(p.segment_apertures(NodeId(5)), None);
    assert!(p.capabilities().memory_faults.is_some());
    // A queue's amd_queue_t carries them (bits 63:32).
    let q = gpu_queue(&p);
    // SAFETY: the ring's amd_queue_t lives until the queue is destroyed below.
    let amd = unsafe { q.ring().amd_queue().as_ptr().read_volatile() };
    assert_eq!(
        (
            amd.group_segment_aperture_base_hi,
            amd.private_segment_aperture_base_hi
        ),
        (0x1_0000, 0x2_0000)
    );
    q.destroy().unwrap();
}

/// Faults the memory-fault handler was given, and the last one's address and reason bits.
static FAULTS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

fn record_fault(f: &hsa_core::platform::MemoryFault, _: usize) {
    FAULTS[1].store(f.address.get(), Ordering::SeqCst);
    FAULTS[2].store(u64::from(f.reason.bits()), Ordering::SeqCst);
    FAULTS[0].fetch_add(1, Ordering::SeqCst);
}

/// The in-process device walks the page tables of a queue's VMID with the VM test's walker:
/// the host maps its carve-out for VMID 8 with `hsa_baremetal::gpuvm` (tables in a chunk of
/// the carve-out, by physical address), the device is told the base, and a kernel's store
/// lands through them; a page unmapped is still reached until the TLB flush, and then the
/// store faults: a `UTCL2` entry whose page reaches the memory-fault handler exactly, and the
/// queue stops with `MemoryFault`.
#[test]
fn queues_of_a_vmid_reach_memory_through_its_page_tables() {
    use hsa_baremetal::gpuvm::{GpuVm, MType, PteFlags, TableRegion};
    use hsa_baremetal::Host;
    use hsa_core::platform::{MemoryFaultHandler, MemoryFaultReason, MemoryFaultReports};

    const VMID: u8 = 8;
    const PASID: u16 = 0x8001;
    let p = platform();
    p.host().queue_vmid.store(VMID, Ordering::SeqCst);
    let dev = SimDevice::new(&p);
    let tables = p
        .allocate_memory(&MemoryRequest {
            node: NodeId(0),
            kind: MemoryKind::System,
            size_bytes: 8 * 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS,
        })
        .unwrap();
    let virt = tables.host_ptr.unwrap().as_ptr() as usize;
    let phys = p.host().virt_to_phys(virt).unwrap().get();
    // SAFETY: the pages are a live chunk of the identity-mapped system carve-out, zeroed by
    // the platform, 4 KiB aligned, used by nothing else while the test runs.
    let tables = unsafe { TableRegion::new(phys, virt, 8) }.unwrap();
    let mut vm = GpuVm::new(tables, true).unwrap();
    let carve = p.host().carve_outs()[0];
    let flags = PteFlags::SYSTEM | PteFlags::SNOOPED | PteFlags::READABLE | PteFlags::WRITEABLE;
    vm.map(
        carve.gpu_va,
        carve.phys_base.get(),
        carve.size_bytes,
        flags,
        MType::Uc,
    )
    .unwrap();
    dev.set_vm(VMID, vm.root_pde(), PASID).unwrap();
    p.set_memory_fault_handler(Some(MemoryFaultHandler {
        func: record_fault,
        data: 0,
    }))
    .unwrap();
    // The kernel stores kernarg word 1 at the address in kernarg word 0.
    dev.register_kernel(KERNEL, |k| {
        let (at, value) = (k.kernarg_u64(0).unwrap(), k.kernarg_u64(1).unwrap());
        k.store_u32(at, value as u32);
    });
    let target = system_chunk(&p);
    let kernarg = system_chunk(&p);
    set_kernarg_u64(&kernarg, target.gpu_va.get() + 8);
    let pool = SignalPool::new(&p, NodeId(0));
    let queue = gpu_queue(&p);
    let mapped = *p.host().mapped.lock().unwrap().last().unwrap();
    assert_eq!(mapped.mqd.v9_mqd().cp_hqd_vmid, u32::from(VMID));
    let store = |value: u32| {
        word(&kernarg, 2).store(value, Ordering::SeqCst);
        let done = pool.create(1).unwrap();
        let k = KernelDispatch {
            completion_signal: done.handle(),
            ..KernelDispatch::one_dimensional(KERNEL, kernarg.gpu_va, 1, 1)
        };
        let mut r = queue.reserve(1).unwrap();
        let i = r.write_next(&k.emit().unwrap()).unwrap();
        queue.ring_doorbell(i).unwrap();
        dev.poll();
        done.load(LoadOrder::Acquire)
    };
    assert_eq!(store(0x1111), 0);
    assert_eq!(word(&target, 2).load(Ordering::SeqCst), 0x1111);
    // Unmapped, the page is still reached through the kept translation.
    vm.unmap(target.gpu_va, 4096).unwrap();
    assert_eq!(store(0x2222), 0);
    assert_eq!(word(&target, 2).load(Ordering::SeqCst), 0x2222);
    // After the flush the store faults: the handler gets exactly that page.
    p.host().invalidate_tlbs(PASID).unwrap();
    assert_eq!(p.host().link.served()[3], 1);
    let before = FAULTS[0].load(Ordering::SeqCst);
    assert_eq!(store(0x3333), 1, "the faulting dispatch does not complete");
    assert_eq!(word(&target, 2).load(Ordering::SeqCst), 0x2222);
    assert_eq!(FAULTS[0].load(Ordering::SeqCst), before + 1);
    assert_eq!(FAULTS[1].load(Ordering::SeqCst), target.gpu_va.get());
    assert_eq!(
        FAULTS[2].load(Ordering::SeqCst),
        u64::from(MemoryFaultReason::PAGE_NOT_PRESENT.bits())
    );
    assert_eq!(dev.vm_faults(), 1);
    assert_eq!(p.irq_stats().memory_faults, 1);
    assert_eq!(
        queue.error().map(|e| e.status()),
        Some(Status::MemoryFault),
        "{:?}",
        dev.errors()
    );
    queue.destroy().unwrap();
    p.set_memory_fault_handler(None).unwrap();
}

/// The `ring_id` the MEC model puts in a queue's IH entries is the one amdgpu's
/// `gfx_v9_0_eop_irq` takes apart: pipe in bits 1..0, ME in 3..2, queue in 6..4.
#[test]
fn ih_entries_name_the_queue_as_amdgpu_decodes_ring_id() {
    let at = sim::mec::QueueAddresses {
        me: 1,
        pipe: 2,
        queue: 5,
        vmid: 0,
        ring_va: 0,
        ring_host: 0,
        ring_bytes: 4096,
        queue_va: 0,
        queue_host: 0,
        doorbell_dword: 0,
    };
    let id = at.ring_id();
    assert_eq!((id & 0x03, (id & 0x0c) >> 2, (id & 0x70) >> 4), (2, 1, 5));
    assert_eq!(id, 0x56);
}
