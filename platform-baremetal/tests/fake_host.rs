//! The bare-metal backend against the tests' host over ordinary memory (`sim::host`), with the
//! test playing the GPU: doorbell stores, IH ring draining into events, and a waiter woken by
//! another thread's interrupt.

mod sim;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hsa_baremetal::ih::IhEntry;
use hsa_baremetal::{BaremetalPlatform, Host};
use hsa_core::platform::{
    MemoryChunk, MemoryFaultReports, MemoryFlags, MemoryKind, MemoryRequest, Platform,
    QueueErrorCallback, QueueKind, QueueRequest, TopologySource, WaitOutcome,
};
use hsa_core::signal::{wait_any, LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{DoorbellIndex, Error, EventId, GpuVa, NodeId, QueueId, Status};
use sim::host::{HostConfig, TestHost};

const FIRST_DOORBELL: u32 = 4;
const HOST: HostConfig = HostConfig {
    sys_bytes: 1 << 20,
    ih_bytes: 1024, // 32 entries
    first_doorbell: FIRST_DOORBELL,
    doorbell_bar_bytes: 64 * 8,
    rptr_offset: 12,
    cpu_cores: 4,
    // The doorbell test maps two queues on one ring, which the device link refuses.
    forward_to_link: false,
};

fn platform() -> Arc<BaremetalPlatform<TestHost>> {
    Arc::new(BaremetalPlatform::new(TestHost::new(HOST)).unwrap())
}

fn eop(event: u32) -> [u8; 32] {
    IhEntry {
        client_id: 0x14,
        source_id: 181,
        src_data: [event, 0, 0, 0],
        ..Default::default()
    }
    .encode()
}

#[test]
fn doorbell_store_lands_at_aperture_plus_index_times_8() {
    let p = platform();
    let sys = |size| MemoryRequest {
        node: NodeId(1),
        kind: MemoryKind::System,
        size_bytes: size,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let ring = p.allocate_memory(&sys(4096)).unwrap();
    let aq = p.allocate_memory(&sys(4096)).unwrap();
    let req = QueueRequest {
        node: NodeId(1),
        kind: QueueKind::ComputeAql,
        ring: ring.gpu_va,
        ring_host: ring.host_ptr.unwrap(),
        ring_size_bytes: 4096,
        amd_queue: aq.gpu_va,
        amd_queue_host: aq.host_ptr.unwrap(),
        read_pointer: GpuVa(aq.gpu_va.get() + 128),
        write_pointer: GpuVa(aq.gpu_va.get() + 56),
        on_error: None,
    };
    // SAFETY: ring and aq stay allocated until after destroy_queue below.
    let q = unsafe { p.create_queue(&req) }.unwrap();
    let m = p.host().mapped.lock().unwrap()[0];
    assert_eq!(m.doorbell, DoorbellIndex(FIRST_DOORBELL));
    assert_eq!(
        q.doorbell_address,
        p.host().doorbell_bar.as_ptr() as u64 + 8 * u64::from(FIRST_DOORBELL)
    );
    // doorbell 4 -> dword 8 -> 8 << 2 = 0x20, | DOORBELL_BIF_DROP 2 | DOORBELL_EN 1 << 30
    assert_eq!(m.mqd.cp_hqd_pq_doorbell_control, 0x4000_0022);
    // 1024 dwords -> QUEUE_SIZE 9 | RPTR_BLOCK_SIZE 5 << 8 | QUEUE_FULL_EN 1 << 14 |
    // WPP_CLAMP_EN 1 << 16 | SLOT_BASED_WPTR 2 << 25 | NO_UPDATE_RPTR 1 << 27 |
    // UNORD_DISPATCH 1 << 28
    assert_eq!(m.mqd.cp_hqd_pq_control, 0x1C01_4509);
    // The image sits in a CPU-visible page at mqd_address, which it names itself
    // (cp_mqd_base_addr, dwords 128-129), and a CP takes it from there.
    assert_eq!(m.mqd_address.get() % 4096, 0);
    let c = p
        .host()
        .carve_outs()
        .iter()
        .find(|c| (c.gpu_va.get()..c.gpu_va.get() + c.size_bytes).contains(&m.mqd_address.get()))
        .expect("the MQD lies in a carve-out");
    let virt = c.virt_base.expect("a CPU-visible carve-out")
        + (m.mqd_address.get() - c.gpu_va.get()) as usize;
    // SAFETY: virt is the start of the live queue's MQD page (4096 bytes) in the fake host's
    // carve-out, which outlives `p`.
    let image = unsafe { std::slice::from_raw_parts(virt as *const u32, 512) };
    assert_eq!(image, &m.mqd.v9_mqd().dwords()[..]);
    assert_eq!(image[0], 0xC031_0800);
    assert_eq!(
        u64::from(image[128]) | u64::from(image[129]) << 32,
        m.mqd_address.get()
    );
    let hqd = m.mqd.load_compute(0..2048, true).unwrap();
    assert_eq!(hqd.ring, ring.gpu_va.get());
    assert_eq!(
        u64::from(m.mqd.cp_hqd_pq_rptr_report_addr_lo),
        (aq.gpu_va.get() + 128) & 0xffff_ffff
    );
    assert_eq!(m.eop_size_bytes, 4096);
    assert_eq!(m.eop.get() & 0xff, 0);
    // EOP came from node 1's private VRAM
    assert!(
        (0x8000_0000..0x8100_0000).contains(&m.eop.get()),
        "{:#x}",
        m.eop.get()
    );

    assert_eq!(q.doorbell, DoorbellIndex(FIRST_DOORBELL));
    p.ring_doorbell(&q.doorbell, 41);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 41);
    p.ring_doorbell(&q.doorbell, 0x1_0000_0002);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 0x1_0000_0002);
    for i in (0..64).filter(|&i| i != FIRST_DOORBELL) {
        assert_eq!(p.host().doorbell(i), 0, "doorbell {i}");
    }
    // a second queue takes the next doorbell
    // SAFETY: as above.
    // SAFETY: as for q0.
    let q2 = unsafe { p.create_queue(&req) }.unwrap();
    p.ring_doorbell(&q2.doorbell, 7);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL + 1), 7);

    p.destroy_queue(q.id).unwrap();
    assert_eq!(
        *p.host().unmapped.lock().unwrap(),
        [DoorbellIndex(FIRST_DOORBELL)]
    );
    // A destroyed queue's handle still stores to its doorbell slot, which no HQD reads now;
    // the live queue's doorbell is untouched.
    p.ring_doorbell(&q.doorbell, 99);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 99);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL + 1), 7);
    assert_eq!(
        p.destroy_queue(q.id).unwrap_err().status(),
        Status::InvalidQueue
    );
    p.destroy_queue(q2.id).unwrap();
    // SAFETY: the queues that used them are destroyed.
    unsafe {
        p.free_memory(&ring).unwrap();
        p.free_memory(&aq).unwrap();
        assert_eq!(
            p.free_memory(&aq).unwrap_err().status(),
            Status::InvalidArgument
        );
    }
}

#[test]
fn ih_entries_mark_events_and_count_errors() {
    let p = platform();
    let e0 = p.create_event().unwrap();
    let e1 = p.create_event().unwrap();
    let e2 = p.create_event().unwrap();
    assert_eq!((e0.id, e1.id, e2.id), (EventId(0), EventId(1), EventId(2)));
    assert_eq!(e1.mailbox.get(), e0.mailbox.get() + 8);
    let h = p.host();
    h.put_raw(0, eop(0)); // EOP -> event 0
                          // SQ message, 24-bit data 0x000001 in ctx0[11:0] -> event 1
    h.put_raw(
        1,
        IhEntry {
            client_id: 0x14,
            source_id: 239,
            src_data: [1, 0, 0, 0],
            ..Default::default()
        }
        .encode(),
    );
    h.put_raw(
        2,
        IhEntry {
            client_id: 0x0f,
            source_id: 0,
            ..Default::default()
        }
        .encode(),
    ); // THM: unknown
    let mut bad = eop(2);
    bad[3] = 0x40; // dword 0 bit 30: reserved
    h.put_raw(3, bad);
    h.put_raw(4, eop(200)); // not allocated
    h.set_wptr(5 * 32);
    assert_eq!(p.on_interrupt(), 2);
    let s = p.irq_stats();
    assert_eq!(
        (
            s.interrupts,
            s.entries,
            s.signaled,
            s.unknown,
            s.malformed,
            s.bad_event,
            s.overflows
        ),
        (1, 5, 2, 1, 1, 1, 0)
    );
    assert_eq!(h.rptr_register(), 160);
    assert_eq!(p.wait_event(e0.id, 0).unwrap(), WaitOutcome::Signaled);
    assert_eq!(
        p.wait_event(e0.id, 0).unwrap(),
        WaitOutcome::TimedOut,
        "consumed"
    );
    assert_eq!(p.wait_event(e1.id, 1_000).unwrap(), WaitOutcome::Signaled);
    assert_eq!(p.wait_event(e2.id, 100_000).unwrap(), WaitOutcome::TimedOut);
    assert_eq!(
        p.wait_event(EventId(9), 0).unwrap_err().status(),
        Status::InvalidArgument
    );

    // nothing new: no counts move except the pass
    assert_eq!(p.on_interrupt(), 0);
    assert_eq!(p.irq_stats().entries, 5);
    // overflow: wptr 64 | 1 -> restart at 96 and read to the wrap (slots 3..31, 0, 1)
    for slot in 0..32 {
        h.put_raw(slot, eop(2));
    }
    h.set_wptr(64 | 1);
    assert_eq!(p.on_interrupt(), 31);
    assert_eq!(p.irq_stats().overflows, 1);
    assert_eq!(h.rptr_register(), 64);
    assert!(p.events().take(e2.id));

    // software signal; unknown ids are errors
    p.signal_event(e2.id).unwrap();
    assert_eq!(p.wait_event(e2.id, 0).unwrap(), WaitOutcome::Signaled);
    assert_eq!(
        p.signal_event(EventId(100)).unwrap_err().status(),
        Status::InvalidArgument
    );
    p.destroy_event(e2.id).unwrap();
    assert_eq!(
        p.destroy_event(e2.id).unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn waiter_is_woken_by_another_threads_interrupt() {
    let p = platform();
    let ev = p.create_event().unwrap();
    let waiter = {
        let p = Arc::clone(&p);
        std::thread::spawn(move || {
            let r = p.wait_event(ev.id, 5_000_000_000).unwrap();
            (r, Instant::now())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // The waiter may only return after this point: nothing has raised the event yet. (Its
    // own start time is no reference: on a loaded machine the thread starts late.)
    let raised = Instant::now();
    p.host().put_raw(0, eop(ev.id.get()));
    p.host().set_wptr(32);
    assert_eq!(p.on_interrupt(), 1);
    let (r, returned) = waiter.join().unwrap();
    assert_eq!(r, WaitOutcome::Signaled);
    assert!(
        returned >= raised,
        "returned {:?} before the interrupt",
        raised - returned
    );
    assert!(
        returned - raised < Duration::from_secs(4),
        "woken late: {:?}",
        returned - raised
    );

    // many rounds, racing the waiter's arming against the interrupt
    for round in 0..50u32 {
        let w = {
            let p = Arc::clone(&p);
            std::thread::spawn(move || p.wait_event(ev.id, 5_000_000_000).unwrap())
        };
        let slot = (1 + round as usize) % 32;
        p.host().put_raw(slot, eop(ev.id.get()));
        p.host().set_wptr(((slot + 1) % 32 * 32) as u32);
        p.on_interrupt();
        assert_eq!(w.join().unwrap(), WaitOutcome::Signaled, "round {round}");
    }
}

/// `wait_any_event` waits on every event at once: a waiter on three events sleeps once and
/// is woken by the interrupt of the last one (the trait's default would wait on the first
/// alone, for at most 1 ms, and return TimedOut); a pending event among them returns at once
/// without sleeping, and only that one is consumed.
#[test]
fn wait_any_event_sleeps_once_over_every_event() {
    let p = platform();
    let evs: Vec<EventId> = (0..3).map(|_| p.create_event().unwrap().id).collect();
    let sleeps = p.host().sleeps.load(Ordering::SeqCst);
    let woken = p.host().woken.load(Ordering::SeqCst);
    let waiter = {
        let p = Arc::clone(&p);
        let evs = evs.clone();
        std::thread::spawn(move || p.wait_any_event(&evs, 10_000_000_000).unwrap())
    };
    // Let it block (it sleeps until the interrupt whatever this delay is).
    while p.host().sleeps.load(Ordering::SeqCst) == sleeps {
        std::thread::sleep(Duration::from_millis(1));
    }
    p.host().put_raw(0, eop(evs[2].get()));
    p.host().set_wptr(32);
    assert_eq!(p.on_interrupt(), 1);
    assert_eq!(waiter.join().unwrap(), WaitOutcome::Signaled);
    assert_eq!(p.host().sleeps.load(Ordering::SeqCst) - sleeps, 1);
    assert_eq!(p.host().woken.load(Ordering::SeqCst) - woken, 1);
    // Two pending: one wait returns at once and consumes the first in list order.
    p.signal_event(evs[0]).unwrap();
    p.signal_event(evs[1]).unwrap();
    let sleeps = p.host().sleeps.load(Ordering::SeqCst);
    assert_eq!(p.wait_any_event(&evs, 0).unwrap(), WaitOutcome::Signaled);
    assert_eq!(
        p.wait_any_event(&evs[1..], 0).unwrap(),
        WaitOutcome::Signaled
    );
    assert_eq!(p.wait_any_event(&evs, 0).unwrap(), WaitOutcome::TimedOut);
    assert_eq!(p.host().sleeps.load(Ordering::SeqCst), sleeps);
    assert_eq!(
        p.wait_any_event(&[], 0).unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn memory_and_topology() {
    let p = platform();
    assert_eq!(p.node_count(), 2);
    assert_eq!(p.node(1).unwrap().gfx_target_version, 90010);
    assert_eq!(p.node(2).unwrap_err().status(), Status::InvalidIndex);
    assert_eq!(
        p.memory_bank(3, 0).unwrap_err().status(),
        Status::InvalidIndex
    );
    assert_eq!(p.memory_bank(0, 0).unwrap(), None);
    let req = MemoryRequest {
        node: NodeId(0),
        kind: MemoryKind::System,
        size_bytes: 8192,
        align_bytes: 8192,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let c = p.allocate_memory(&req).unwrap();
    assert!(c.gpu_va.is_aligned(8192));
    let virt = c.host_ptr.unwrap().as_ptr() as usize;
    assert_eq!(p.host().sys_word_at(virt), 0);
    let bad = MemoryRequest {
        node: NodeId(7),
        ..req
    };
    assert_eq!(
        p.allocate_memory(&bad).unwrap_err().status(),
        Status::InvalidArgument
    );
    let vram = MemoryRequest {
        node: NodeId(1),
        kind: MemoryKind::DeviceLocal,
        flags: MemoryFlags::empty(),
        ..req
    };
    let v = p.allocate_memory(&vram).unwrap();
    assert!(v.host_ptr.is_none());
    p.map_memory(&v, &[NodeId(1)]).unwrap();
    assert!(p.map_memory(&v, &[NodeId(9)]).is_err());
    // SAFETY: nothing uses the chunks.
    unsafe {
        p.free_memory(&c).unwrap();
        p.free_memory(&v).unwrap();
    }
    assert_eq!(p.timestamp_frequency_hz(), 1_000_000_000);
    assert_eq!(p.device_name(), "baremetal");
}

#[cfg(feature = "alloc")]
#[test]
fn heap_over_a_system_chunk_allocates_and_frees() {
    use std::alloc::{GlobalAlloc, Layout};

    use hsa_baremetal::heap::CarveOutHeap;

    let p: &'static BaremetalPlatform<TestHost> = Box::leak(Box::new(
        BaremetalPlatform::new(TestHost::new(HOST)).unwrap(),
    ));
    let heap: &'static CarveOutHeap = Box::leak(Box::new(CarveOutHeap::empty()));
    let layout = Layout::from_size_align(256, 64).unwrap();
    // SAFETY: a valid non-zero layout; an empty heap returns null.
    assert!(unsafe { heap.alloc(layout) }.is_null());
    p.init_heap(heap, 10_000).unwrap();
    assert_eq!(heap.size_bytes(), 12288);
    assert_eq!(
        p.init_heap(heap, 4096).unwrap_err().status(),
        Status::InvalidArgument
    );
    // SAFETY: valid layout; the pointer is freed with the same layout.
    unsafe {
        let a = heap.alloc(layout);
        assert!(!a.is_null());
        assert_eq!(a as usize % 64, 0);
        assert!(heap.used_bytes() >= 256);
        heap.dealloc(a, layout);
    }
    assert_eq!(heap.used_bytes(), 0);
}

/// What the error callbacks of this file's queues were told: (data, queue id, status,
/// detail).
static CALLBACKS: Mutex<Vec<(usize, QueueId, Status, String)>> = Mutex::new(Vec::new());

fn record_error(e: &Error, queue: QueueId, data: usize) {
    CALLBACKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((data, queue, e.status(), e.detail().to_string()));
}

/// This test binary's `log` backend: every record's level and message.
static LOG_RECORDS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct CaptureLog;

impl log::Log for CaptureLog {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        LOG_RECORDS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((record.level(), record.args().to_string()));
    }

    fn flush(&self) {}
}

/// The records logged so far (the logger is installed on first call).
fn log_records() -> Vec<(log::Level, String)> {
    static CAPTURE: CaptureLog = CaptureLog;
    if log::set_logger(&CAPTURE).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
    LOG_RECORDS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn callbacks(data: usize) -> Vec<(QueueId, Status, String)> {
    CALLBACKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|c| c.0 == data)
        .map(|c| (c.1, c.2, c.3.clone()))
        .collect()
}

/// A `CP_BAD_OPCODE` entry as the MEC writes it: `context_id0` = the doorbell id (bits 0..10)
/// | the exception code (bits 10..26).
fn cp_bad_opcode(doorbell: DoorbellIndex, code: u32) -> [u8; 32] {
    IhEntry {
        client_id: 0x14,
        source_id: 183,
        src_data: [(doorbell.get() & 0x3ff) | code << 10, 0, 0, 0],
        ..Default::default()
    }
    .encode()
}

/// Offsets in a queue's descriptor chunk, as the core lays it out: `amd_queue_t` at 0, its
/// `queue_inactive_signal` handle at 192, the inactive `amd_signal_t` at 320 (value at +8).
const INACTIVE_HANDLE: usize = 192;
const INACTIVE_SIGNAL: u64 = 320;

fn descriptor_word(chunk: &MemoryChunk, offset: usize) -> &AtomicU64 {
    // SAFETY: an 8-aligned word inside a live 4096-byte chunk of the test host's memory; the
    // platform reads it with volatile loads, the test stores atomically.
    unsafe { &*(chunk.host_ptr.unwrap().as_ptr().add(offset) as *const AtomicU64) }
}

#[test]
fn a_stopped_queue_is_reported_to_its_callback_once_with_the_stored_status() {
    const DATA: usize = 0x51;
    log_records();
    let p = platform();
    let sys = |size| MemoryRequest {
        node: NodeId(1),
        kind: MemoryKind::System,
        size_bytes: size,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let ring = p.allocate_memory(&sys(4096)).unwrap();
    let descs: Vec<MemoryChunk> = (0..4)
        .map(|_| p.allocate_memory(&sys(4096)).unwrap())
        .collect();
    let request = |d: &MemoryChunk, data: Option<usize>| QueueRequest {
        node: NodeId(1),
        kind: QueueKind::ComputeAql,
        ring: ring.gpu_va,
        ring_host: ring.host_ptr.unwrap(),
        ring_size_bytes: 4096,
        amd_queue: d.gpu_va,
        amd_queue_host: d.host_ptr.unwrap(),
        read_pointer: GpuVa(d.gpu_va.get() + 128),
        write_pointer: GpuVa(d.gpu_va.get() + 56),
        on_error: data.map(|data| QueueErrorCallback {
            func: record_error,
            data,
        }),
    };
    // A callback needs an inactive signal the platform can read (the handle is still 0).
    // SAFETY: creation fails before anything is mapped.
    let e = unsafe { p.create_queue(&request(&descs[0], Some(DATA))) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "amd_queue_t {:#x} or its queue_inactive_signal 0x0 is not in a system-memory \
             carve-out: the error callback cannot be served",
            descs[0].gpu_va.get()
        )
    );
    for d in &descs {
        descriptor_word(d, INACTIVE_HANDLE)
            .store(d.gpu_va.get() + INACTIVE_SIGNAL, Ordering::SeqCst);
    }
    let value = |i: usize| descriptor_word(&descs[i], INACTIVE_SIGNAL as usize + 8);
    // SAFETY: the ring and descriptors stay allocated until the queues are destroyed below.
    let q0 = unsafe { p.create_queue(&request(&descs[0], Some(DATA))) }.unwrap();
    // SAFETY: as for q0.
    let q1 = unsafe { p.create_queue(&request(&descs[1], Some(DATA + 1))) }.unwrap();
    // SAFETY: as for q0.
    let q2 = unsafe { p.create_queue(&request(&descs[2], None)) }.unwrap();
    // SAFETY: as for q0.
    let q3 = unsafe { p.create_queue(&request(&descs[3], Some(DATA + 2))) }.unwrap();
    let h = p.host();

    // A queue-error entry for a doorbell no queue uses: nothing to report.
    h.put_raw(0, cp_bad_opcode(DoorbellIndex(60), 16));
    h.set_wptr(32);
    p.on_interrupt();
    assert_eq!(p.irq_stats().queue_errors, 1);
    assert!(callbacks(DATA).is_empty() && callbacks(DATA + 1).is_empty());
    assert_eq!(
        value(3).load(Ordering::SeqCst),
        0,
        "no other queue is touched"
    );

    // Queue 1 stops with an illegal instruction, queue 2 (no callback) with a memory fault;
    // the value alone, without an entry, is not looked at.
    let stored = hsa_core::queue::inactive::encode(Status::IllegalInstruction, false);
    value(1).store(stored as u64, Ordering::SeqCst);
    value(2).store(
        hsa_core::queue::inactive::encode(Status::MemoryFault, false) as u64,
        Ordering::SeqCst,
    );
    h.put_raw(1, eop(0));
    h.set_wptr(64);
    p.on_interrupt();
    assert!(callbacks(DATA + 1).is_empty(), "no queue-error entry yet");
    // An entry naming queue 2's doorbell reports no other queue (queue 1's value waits).
    h.put_raw(2, cp_bad_opcode(q2.doorbell, 0));
    h.set_wptr(96);
    p.on_interrupt();
    assert!(
        callbacks(DATA + 1).is_empty(),
        "queue 1's doorbell was not named"
    );
    // The stored value is the processor's: the entry's code does not replace it.
    h.put_raw(3, cp_bad_opcode(q1.doorbell, 18));
    h.set_wptr(128);
    p.on_interrupt();
    let want1 = vec![(
        q1.id,
        Status::IllegalInstruction,
        format!("queue_inactive_signal {stored:#x}"),
    )];
    assert_eq!(callbacks(DATA + 1), want1);
    assert!(callbacks(DATA).is_empty(), "queue 0 runs");
    // Logged at error level too, with the same detail, before the callback ran.
    let logged = format!(
        "queue {} stopped by its packet processor: queue_inactive_signal {stored:#x} \
         (HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION)",
        q1.id.0
    );
    assert!(
        log_records().contains(&(log::Level::Error, logged.clone())),
        "{logged:?} not among {:?}",
        log_records()
    );
    // Once: another entry, or a look without one, reports it no more.
    h.put_raw(4, cp_bad_opcode(q1.doorbell, 0));
    h.set_wptr(160);
    p.on_interrupt();
    assert_eq!(p.check_queue_errors(), 0);
    assert_eq!(callbacks(DATA + 1), want1);

    // A real CP's value (no status in the upper half) is decoded as ROCR does; a negative
    // one (the core's destroyed mark) is no error.
    value(0).store(hsa_core::queue::QUEUE_DESTROYED as u64, Ordering::SeqCst);
    assert_eq!(p.check_queue_errors(), 0);
    value(0).store(0x8, Ordering::SeqCst); // invalid code
    assert_eq!(p.check_queue_errors(), 1);
    assert_eq!(
        callbacks(DATA),
        vec![(
            q0.id,
            Status::InvalidCodeObject,
            "queue_inactive_signal 0x8".to_string()
        )]
    );
    // A CP that stores nothing (silicon's): queue 3's entry carries exception 16
    // (EC_QUEUE_PACKET_DISPATCH_DIM_INVALID), which the platform stores as ROCR 7 maps it
    // (INCOMPATIBLE_ARGUMENTS) for its waiters, then reports.
    h.put_raw(5, cp_bad_opcode(q3.doorbell, 16));
    h.set_wptr(192);
    p.on_interrupt();
    let dim = hsa_core::queue::inactive::encode(Status::IncompatibleArguments, false);
    assert_eq!(value(3).load(Ordering::SeqCst), dim as u64);
    assert_eq!(
        callbacks(DATA + 2),
        vec![(
            q3.id,
            Status::IncompatibleArguments,
            format!("queue_inactive_signal {dim:#x}")
        )]
    );
    assert_eq!(p.irq_stats().queue_errors, 5);

    for q in [q0, q1, q2, q3] {
        p.destroy_queue(q.id).unwrap();
    }
    // SAFETY: the queues that used them are destroyed.
    unsafe {
        p.free_memory(&ring).unwrap();
        for d in &descs {
            p.free_memory(d).unwrap();
        }
    }
}

#[test]
fn the_hosts_spin_phase_is_every_blocked_waits() {
    let p = platform();
    let ev = p.create_event().unwrap();
    let h = p.host();
    let sleeps = || h.sleeps.load(Ordering::SeqCst);
    let pool = SignalPool::new(&*p, NodeId(0));
    let s = pool.create_interrupt(1).unwrap();
    // Three 10 µs blocked waits that time out: the platform's event wait, hsa-core's signal
    // wait and its wait-any (what a queue's completion wait runs).
    let event_wait = || {
        assert_eq!(p.wait_event(ev.id, 10_000).unwrap(), WaitOutcome::TimedOut);
    };
    let signal_wait = || {
        let v = s.wait(
            SignalCondition::Eq,
            0,
            10_000,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 1);
    };
    let any_wait = || {
        let any = wait_any(
            &[&s],
            &[SignalCondition::Eq],
            &[0],
            10_000,
            WaitState::Blocked,
        );
        assert_eq!(any.unwrap(), None);
    };
    let waits: [(&str, &dyn Fn()); 3] = [
        ("event wait", &event_wait),
        ("signal wait", &signal_wait),
        ("wait-any", &any_wait),
    ];
    // The default: each ends inside the 20 µs spin phase, never asleep (hsa-core's spin
    // phase is the platform's).
    assert_eq!(p.wait_spin_ns(), hsa_baremetal::WAIT_EVENT_SPIN_NS);
    for _ in 0..100 {
        for (_, wait) in &waits {
            wait();
        }
    }
    assert_eq!(sleeps(), 0);
    // A host that spins 0 ns: each goes to sleep in the host's hook at once. (A wait whose
    // thread is preempted past its deadline before it arms times out awake: tries.)
    h.spin_ns.store(0, Ordering::SeqCst);
    assert_eq!(p.wait_spin_ns(), 0);
    for (what, wait) in &waits {
        let before = sleeps();
        for _ in 0..100 {
            wait();
            if sleeps() > before {
                break;
            }
        }
        assert!(sleeps() > before, "the {what} never slept");
    }
}

/// A GPU page-fault entry in the IH ring (client UTCL2, as a gfx9 GFX-hub fault) reaches the
/// handler of `MemoryFaultReports::set_memory_fault_handler` with the GPU's node, the page's address and
/// the reasons of its `ring_id` bits — before the callback of the queue the fault stopped,
/// which the following CP_BAD_OPCODE entry reports; without a handler it is only counted.
#[test]
fn a_page_fault_entry_reaches_the_fault_handler_before_the_queue_callback() {
    use hsa_core::platform::{MemoryFault, MemoryFaultHandler, MemoryFaultReason};
    const DATA: usize = 0x61;
    /// Faults (with their data) and queue errors, in the order they came.
    static ORDER: Mutex<Vec<String>> = Mutex::new(Vec::new());
    fn on_fault(f: &MemoryFault, data: usize) {
        ORDER
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("{f:?} {data:#x}"));
    }
    fn on_error(e: &Error, _q: QueueId, _data: usize) {
        ORDER
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("queue error {}", e.status().c_name()));
    }
    let p = platform();
    let gpu = (0..p.node_count())
        .map(|i| p.node(i).unwrap())
        .find(|n| n.simd_count > 0)
        .unwrap();
    let sys = |size| MemoryRequest {
        node: NodeId(gpu.node_id),
        kind: MemoryKind::System,
        size_bytes: size,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let ring = p.allocate_memory(&sys(4096)).unwrap();
    let desc = p.allocate_memory(&sys(4096)).unwrap();
    descriptor_word(&desc, INACTIVE_HANDLE)
        .store(desc.gpu_va.get() + INACTIVE_SIGNAL, Ordering::SeqCst);
    let request = QueueRequest {
        node: NodeId(gpu.node_id),
        kind: QueueKind::ComputeAql,
        ring: ring.gpu_va,
        ring_host: ring.host_ptr.unwrap(),
        ring_size_bytes: 4096,
        amd_queue: desc.gpu_va,
        amd_queue_host: desc.host_ptr.unwrap(),
        read_pointer: GpuVa(desc.gpu_va.get() + 128),
        write_pointer: GpuVa(desc.gpu_va.get() + 56),
        on_error: Some(QueueErrorCallback {
            func: on_error,
            data: 0,
        }),
    };
    // SAFETY: the ring and descriptor stay allocated until the queue is destroyed below.
    let q = unsafe { p.create_queue(&request) }.unwrap();
    let h = p.host();
    let page_fault = |ring_id: u8, page: u64| {
        IhEntry {
            client_id: 0x1b, // SOC15_IH_CLIENTID_UTCL2
            source_id: 0,
            ring_id,
            src_data: [page as u32, (page >> 32) as u32, 0, 0],
            ..Default::default()
        }
        .encode()
    };

    // No handler: counted, told to no one.
    h.put_raw(0, page_fault(0x08, 0x7));
    h.set_wptr(32);
    p.on_interrupt();
    assert_eq!(p.irq_stats().memory_faults, 1);
    assert!(ORDER.lock().unwrap().is_empty());

    p.set_memory_fault_handler(Some(MemoryFaultHandler {
        func: on_fault,
        data: DATA,
    }))
    .unwrap();
    // The packet processor stored the queue's error; the fault's entry comes first, then the
    // CP's, in one interrupt.
    descriptor_word(&desc, INACTIVE_SIGNAL as usize + 8).store(
        hsa_core::queue::inactive::encode(Status::MemoryFault, false) as u64,
        Ordering::SeqCst,
    );
    h.put_raw(1, page_fault(0x28, 0x1_0000_0001));
    h.put_raw(2, cp_bad_opcode(q.doorbell, 0));
    h.set_wptr(96);
    p.on_interrupt();
    let fault = MemoryFault {
        node: NodeId(gpu.node_id),
        address: GpuVa(0x1_0000_0001 << 12),
        reason: MemoryFaultReason::PAGE_NOT_PRESENT | MemoryFaultReason::READ_ONLY,
    };
    assert_eq!(
        *ORDER.lock().unwrap(),
        [
            format!("{fault:?} {DATA:#x}"),
            "queue error HSA_STATUS_ERROR_MEMORY_FAULT".to_string()
        ]
    );
    assert_eq!(p.irq_stats().memory_faults, 2);
    p.destroy_queue(q.id).unwrap();
    // SAFETY: the queue that used them is destroyed.
    unsafe {
        p.free_memory(&ring).unwrap();
        p.free_memory(&desc).unwrap();
    }
}

/// The test host's GPU is a gfx90a, whose doorbell pages keep slots 0x100..=0x18F (and
/// 0x300..=0x38F) for SDMA, IH and VCN (vega20's layout): queues never get them, and a grant
/// of those slots only is refused.
#[test]
fn queues_skip_the_doorbell_slots_gfx9_reserves_for_other_engines() {
    let host = |first| HostConfig {
        first_doorbell: first,
        doorbell_bar_bytes: (first as usize + 32) * 8,
        ..HOST
    };
    let e = match BaremetalPlatform::<TestHost>::new(TestHost::new(host(0x100))) {
        Ok(_) => panic!("a grant of reserved doorbells was taken"),
        Err(e) => e,
    };
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(
        e.detail().to_string(),
        "every granted doorbell 256..288 is a slot the GPU's doorbell pages reserve for SDMA, \
         IH and VCN (0x100..=0x18f and their mirrors 512 up)"
    );
    let p = BaremetalPlatform::<TestHost>::new(TestHost::new(host(0xFE))).unwrap();
    let sys = |size| MemoryRequest {
        node: NodeId(1),
        kind: MemoryKind::System,
        size_bytes: size,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    };
    let ring = p.allocate_memory(&sys(4096)).unwrap();
    let descs: Vec<MemoryChunk> = (0..3)
        .map(|_| p.allocate_memory(&sys(4096)).unwrap())
        .collect();
    let request = |d: &MemoryChunk| QueueRequest {
        node: NodeId(1),
        kind: QueueKind::ComputeAql,
        ring: ring.gpu_va,
        ring_host: ring.host_ptr.unwrap(),
        ring_size_bytes: 4096,
        amd_queue: d.gpu_va,
        amd_queue_host: d.host_ptr.unwrap(),
        read_pointer: GpuVa(d.gpu_va.get() + 128),
        write_pointer: GpuVa(d.gpu_va.get() + 56),
        on_error: None,
    };
    // SAFETY: the ring and descriptors stay allocated until the queues are destroyed below.
    let q0 = unsafe { p.create_queue(&request(&descs[0])) }.unwrap();
    // SAFETY: as for q0.
    let q1 = unsafe { p.create_queue(&request(&descs[1])) }.unwrap();
    assert_eq!(
        (q0.doorbell, q1.doorbell),
        (DoorbellIndex(0xFE), DoorbellIndex(0xFF))
    );
    // SAFETY: as for q0 (refused before anything is mapped).
    let e = unsafe { p.create_queue(&request(&descs[2])) }.unwrap_err();
    assert_eq!(e.status(), Status::OutOfResources);
    for q in [q0, q1] {
        p.destroy_queue(q.id).unwrap();
    }
    // SAFETY: the queues that used them are destroyed.
    unsafe {
        p.free_memory(&ring).unwrap();
        for d in &descs {
            p.free_memory(d).unwrap();
        }
    }
}
