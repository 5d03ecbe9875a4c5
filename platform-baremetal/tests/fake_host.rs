//! The bare-metal backend against a fake host over ordinary memory: doorbell stores, IH ring
//! draining into events, and a waiter woken by another thread's interrupt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hsa_baremetal::ih::IhEntry;
use hsa_baremetal::{
    BaremetalPlatform, CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping,
    RegisterLocation,
};
use hsa_core::platform::{
    MemoryFlags, MemoryKind, MemoryRequest, NodeProperties, Platform, QueueKind, QueueRequest,
    WaitOutcome,
};
use hsa_core::{DoorbellIndex, Error, EventId, GpuVa, NodeId, PhysAddr, Status};

const SYS_BYTES: usize = 1 << 20;
const IH_BYTES: usize = 1024; // 32 entries
const FIRST_DOORBELL: u32 = 4;

fn words(bytes: usize) -> Box<[AtomicU64]> {
    (0..bytes / 8).map(|_| AtomicU64::new(0)).collect()
}

/// Memory the "GPU" and the test share, as atomics so the test needs no unsafe.
struct FakeHost {
    sys: Box<[AtomicU64]>,
    doorbell_bar: Box<[AtomicU64]>,
    ih: Box<[AtomicU64]>,
    ih_wptr: Box<[AtomicU64]>,
    ih_regs: Box<[AtomicU64]>,
    carve: Vec<CarveOut>,
    nodes: Vec<NodeProperties>,
    mapped: Mutex<Vec<QueueMapping>>,
    unmapped: Mutex<Vec<DoorbellIndex>>,
    lock: Mutex<()>,
    cv: Condvar,
    start: Instant,
}

impl FakeHost {
    fn new() -> FakeHost {
        let sys = words(SYS_BYTES);
        let sys_addr = sys.as_ptr() as usize;
        // Page-align the carve-out inside the buffer.
        let virt = sys_addr.next_multiple_of(4096);
        let size = (SYS_BYTES - (virt - sys_addr)) as u64 & !4095;
        let carve = vec![
            CarveOut {
                node: NodeId(0),
                kind: CarveOutKind::SystemMemory,
                phys_base: PhysAddr(0x10_0000_0000),
                virt_base: Some(virt),
                gpu_va: GpuVa(virt as u64), // identity: HSA shares host pointers with the GPU
                size_bytes: size,
            },
            CarveOut {
                node: NodeId(1),
                kind: CarveOutKind::PrivateVram,
                phys_base: PhysAddr(0x8000_0000),
                virt_base: None,
                gpu_va: GpuVa(0x8000_0000),
                size_bytes: 1 << 24,
            },
        ];
        let cpu = NodeProperties {
            node_id: 0,
            cpu_cores_count: 4,
            ..Default::default()
        };
        let gpu = NodeProperties {
            node_id: 1,
            simd_count: 8,
            simd_per_cu: 4,
            gfx_target_version: 90010,
            ..Default::default()
        };
        FakeHost {
            sys,
            doorbell_bar: words(64 * 8),
            ih: words(IH_BYTES),
            ih_wptr: words(8),
            ih_regs: words(32),
            carve,
            nodes: vec![cpu, gpu],
            mapped: Mutex::new(Vec::new()),
            unmapped: Mutex::new(Vec::new()),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            start: Instant::now(),
        }
    }

    fn doorbell(&self, i: u32) -> u64 {
        self.doorbell_bar[i as usize].load(Ordering::SeqCst)
    }

    /// Writes `entry` at slot `slot` of the IH ring (as the IH block would).
    fn put_raw(&self, slot: usize, bytes: [u8; 32]) {
        for (i, c) in bytes.chunks_exact(8).enumerate() {
            self.ih[slot * 4 + i]
                .store(u64::from_le_bytes(c.try_into().unwrap()), Ordering::SeqCst);
        }
    }

    fn set_wptr(&self, bytes: u32) {
        self.ih_wptr[0].store(u64::from(bytes), Ordering::SeqCst);
    }

    fn rptr_register(&self) -> u32 {
        // register at byte offset 12 of the block: high half of word 1
        (self.ih_regs[1].load(Ordering::SeqCst) >> 32) as u32
    }

    fn sys_word_at(&self, virt: usize) -> u64 {
        let i = (virt - self.sys.as_ptr() as usize) / 8;
        self.sys[i].load(Ordering::SeqCst)
    }

    fn ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

// SAFETY: every address handed out points into boxes this value owns for its whole life;
// carve-outs do not overlap; the doorbell grant 4..36 fits the 512-byte BAR; only the
// platform reads the IH ring.
unsafe impl Host for FakeHost {
    fn carve_outs(&self) -> &[CarveOut] {
        &self.carve
    }
    fn clear_device_memory(&self, _gpu_va: GpuVa, _size_bytes: u64) -> Result<(), Error> {
        Ok(())
    }
    fn doorbells(&self) -> DoorbellAperture {
        DoorbellAperture {
            virt_base: self.doorbell_bar.as_ptr() as usize,
            size_bytes: self.doorbell_bar.len() * 8,
            first: DoorbellIndex(FIRST_DOORBELL),
            count: 32,
        }
    }
    unsafe fn map_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        self.mapped.lock().unwrap().push(*mapping);
        Ok(())
    }
    fn unmap_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        self.unmapped.lock().unwrap().push(mapping.doorbell);
        Ok(())
    }
    fn ih_ring(&self) -> IhRingConfig {
        IhRingConfig {
            ring_virt_base: self.ih.as_ptr() as usize,
            ring_size_bytes: IH_BYTES as u32,
            wptr_virt: self.ih_wptr.as_ptr() as usize,
            rptr_register: RegisterLocation {
                block_virt_base: self.ih_regs.as_ptr() as usize,
                block_size_bytes: 256,
                offset_bytes: 12,
            },
        }
    }
    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool) {
        let g = self.lock.lock().unwrap();
        if !still_waiting() {
            return;
        }
        let now = self.ns();
        if now >= deadline_ticks {
            return;
        }
        // No cap: a lost wake-up makes the waiter sleep to its deadline and the test fail.
        let _ = self
            .cv
            .wait_timeout(g, Duration::from_nanos(deadline_ticks - now))
            .unwrap();
    }
    fn wake_waiters(&self) {
        let _g = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
    fn timestamp_ticks(&self) -> u64 {
        self.ns()
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
    fn nodes(&self) -> &[NodeProperties] {
        &self.nodes
    }
}

fn platform() -> Arc<BaremetalPlatform<FakeHost>> {
    Arc::new(BaremetalPlatform::new(FakeHost::new()).unwrap())
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
    // doorbell 4 -> dword 8 -> 8 << 2 = 0x20, | DOORBELL_EN
    assert_eq!(m.mqd.cp_hqd_pq_doorbell_control, 0x4000_0020);
    assert_eq!(m.mqd.cp_hqd_pq_control, 0x0800_0509);
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

    p.ring_doorbell(q.id, 41);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 41);
    p.ring_doorbell(q.id, 0x1_0000_0002);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 0x1_0000_0002);
    for i in (0..64).filter(|&i| i != FIRST_DOORBELL) {
        assert_eq!(p.host().doorbell(i), 0, "doorbell {i}");
    }
    // a second queue takes the next doorbell
    // SAFETY: as above.
    let q2 = unsafe { p.create_queue(&req) }.unwrap();
    p.ring_doorbell(q2.id, 7);
    assert_eq!(p.host().doorbell(FIRST_DOORBELL + 1), 7);

    p.destroy_queue(q.id).unwrap();
    assert_eq!(
        *p.host().unmapped.lock().unwrap(),
        [DoorbellIndex(FIRST_DOORBELL)]
    );
    p.ring_doorbell(q.id, 99); // dead queue: ignored
    assert_eq!(p.host().doorbell(FIRST_DOORBELL), 0x1_0000_0002);
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
            client_id: 0x12,
            source_id: 0,
            ..Default::default()
        }
        .encode(),
    ); // VMC: unknown
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
            let t = Instant::now();
            let r = p.wait_event(ev.id, 5_000_000_000).unwrap();
            (r, t.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    p.host().put_raw(0, eop(ev.id.get()));
    p.host().set_wptr(32);
    assert_eq!(p.on_interrupt(), 1);
    let (r, waited) = waiter.join().unwrap();
    assert_eq!(r, WaitOutcome::Signaled);
    assert!(waited < Duration::from_secs(4), "woken late: {waited:?}");
    assert!(
        waited >= Duration::from_millis(40),
        "returned before the interrupt: {waited:?}"
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

    let p: &'static BaremetalPlatform<FakeHost> =
        Box::leak(Box::new(BaremetalPlatform::new(FakeHost::new()).unwrap()));
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
