//! SDMA queues on the emulated device, at the KFD level: `CREATE_QUEUE` of
//! `KFD_IOC_QUEUE_TYPE_SDMA` over a ring, read and write pointers in GTT memory, packets
//! written as ROCR 5.2's `BlitSdma` writes them (SDMA 4.x layouts, `sdma_registers.h` /
//! `vega10_sdma_pkt_open.h`), the doorbell rung with the write pointer in bytes. Each packet
//! kind is checked against a result computed here; a bad packet stops the queue with an error
//! naming it.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::Status;
use hsa_emu::device::{builtin_topology, EmulatedKfd, BUILTIN_GPU_ID, EVENT_PAGE_BYTES};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::calls::{self, plain_ioctl};
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use rustix::io::Errno;
use zerocopy::IntoBytes;

/// The device address of the test's GTT buffer (64 KiB) and its layout (byte offsets).
const VA: u64 = 0x7100_0000_0000;
const SIZE: u64 = 65536;
const RING: u64 = 0;
const RING_BYTES: u32 = 4096;
const RPTR: u64 = 4096;
const WPTR: u64 = 4104;
/// Words the packets write, read and poll.
const WORDS: u64 = 4352;
const SRC: u64 = 16384;
const DST: u64 = 32768;
/// The event page's device address (a GTT buffer of its own, 32 KiB).
const EVENT_VA: u64 = 0x7100_0010_0000;

/// Field order: the device goes last (its threads use the memory the mappings show).
struct Sdma {
    host: NonNull<u8>,
    doorbell: NonNull<u64>,
    queue_id: u32,
    wptr: std::cell::Cell<u64>,
    d: Arc<EmulatedKfd>,
}

fn alloc_gtt(d: &EmulatedKfd, va: u64, size: u64) -> AllocMemoryOfGpuArgs {
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: va,
        size,
        handle: 0,
        mmap_offset: 0,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };
    // SAFETY: without USERPTR the argument carries no pointer.
    unsafe { d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) }.unwrap();
    assert_eq!(
        calls::map_memory_to_gpu(d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    a
}

fn create_args(queue_type: u32) -> CreateQueueArgs {
    CreateQueueArgs {
        ring_base_address: VA + RING,
        write_pointer_address: VA + WPTR,
        read_pointer_address: VA + RPTR,
        ring_size: RING_BYTES,
        gpu_id: BUILTIN_GPU_ID,
        queue_type,
        queue_percentage: 100,
        queue_priority: 15,
        ..Default::default()
    }
}

fn try_create(d: &EmulatedKfd, q: &mut CreateQueueArgs) -> Result<(), Errno> {
    // SAFETY: EmulatedKfd reaches a queue's addresses only inside allocations mapped to its
    // GPU (its ioctl's `# Safety`).
    unsafe { d.ioctl(AMDKFD_IOC_CREATE_QUEUE, q.as_mut_bytes()) }
}

fn setup() -> Sdma {
    setup_on(builtin_topology())
}

/// [`setup`] on another topology whose GPU has the built-in `gpu_id` (a built-in profile).
fn setup_on(topology: hsa_linux::topology::Topology) -> Sdma {
    let d = EmulatedKfd::new(topology).unwrap();
    let a = alloc_gtt(&d, VA, SIZE);
    let host = calls::mmap(
        &*d,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        a.mmap_offset,
        SIZE as usize,
    )
    .unwrap();
    let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    try_create(&d, &mut q).unwrap();
    assert_eq!(
        q.doorbell_offset & KFD_MMAP_TYPE_MASK,
        KFD_MMAP_TYPE_DOORBELL
    );
    let page = calls::mmap(&*d, MapTarget::Kfd, q.doorbell_offset & !0x1fff, 8192).unwrap();
    let doorbell = NonNull::new(
        page.as_ptr()
            .wrapping_add((q.doorbell_offset & 0x1fff) as usize)
            .cast::<u64>(),
    )
    .unwrap();
    Sdma {
        host,
        doorbell,
        queue_id: q.queue_id,
        wptr: std::cell::Cell::new(0),
        d,
    }
}

impl Sdma {
    fn word64(&self, offset: u64) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= SIZE);
        // SAFETY: in bounds and aligned (checked), the GTT mapping lives as long as the
        // device (`self.d`), and the words the device shares are accessed atomically.
        unsafe { AtomicU64::from_ptr(self.host.as_ptr().add(offset as usize).cast()) }
    }

    fn word32(&self, offset: u64) -> &AtomicU32 {
        assert!(offset % 4 == 0 && offset + 4 <= SIZE);
        // SAFETY: as for word64.
        unsafe { AtomicU32::from_ptr(self.host.as_ptr().add(offset as usize).cast()) }
    }

    fn bytes(&self, offset: u64, len: u64) -> Vec<u8> {
        (offset..offset + len)
            .map(|o| (self.word32(o & !3).load(Ordering::Acquire) >> (8 * (o % 4))) as u8)
            .collect()
    }

    fn put_bytes(&self, offset: u64, data: &[u8]) {
        assert!(offset % 4 == 0 && data.len() % 4 == 0);
        for (i, c) in data.chunks_exact(4).enumerate() {
            self.word32(offset + 4 * i as u64).store(
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                Ordering::Release,
            );
        }
    }

    /// Writes `dwords` at the write pointer (wrapping in the ring), stores the new write
    /// pointer, then rings the doorbell with it, as ROCR's `UpdateWriteAndDoorbellRegister`.
    fn submit(&self, dwords: &[u32]) -> u64 {
        let mut w = self.wptr.get();
        for &v in dwords {
            self.word32(RING + w % u64::from(RING_BYTES))
                .store(v, Ordering::Relaxed);
            w += 4;
        }
        self.wptr.set(w);
        self.word64(WPTR).store(w, Ordering::Release);
        // SAFETY: the doorbell page mapping the device returned, 8-byte aligned, mapped for
        // the device's life; the device reads it atomically.
        let bell = unsafe { AtomicU64::from_ptr(self.doorbell.as_ptr()) };
        bell.store(w, Ordering::Release);
        w
    }

    /// Waits up to 10 s for the read pointer to reach `target`.
    fn wait_rptr(&self, target: u64) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if self.word64(RPTR).load(Ordering::Acquire) == target {
                return true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        false
    }

    fn run(&self, dwords: &[u32]) {
        let end = self.submit(dwords);
        assert!(self.wait_rptr(end), "read pointer never reached {end:#x}");
    }

    fn wait_error(&self) -> hsa_core::Error {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Some(e) = self.d.queue_error(self.queue_id) {
                return e;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("the SDMA queue did not stop");
    }
}

/// GET_CLOCK_COUNTERS' GPU clock counter.
fn gpu_clock(d: &EmulatedKfd) -> u64 {
    let mut c = GetClockCountersArgs {
        gpu_id: BUILTIN_GPU_ID,
        ..Default::default()
    };
    plain_ioctl(d, &mut c).unwrap();
    c.gpu_clock_counter
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// SDMA_PKT_COPY_LINEAR for `bytes` bytes (count = bytes - 1 on SDMA 4).
fn copy_linear(src: u64, dst: u64, bytes: u32) -> [u32; 7] {
    [1, bytes - 1, 0, lo(src), hi(src), lo(dst), hi(dst)]
}

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
        .collect()
}

#[test]
fn copy_linear_copies_the_bytes_and_moves_the_read_pointer() {
    let s = setup();
    let data = pattern(4096, 7);
    s.put_bytes(SRC, &data);
    let before = s.d.execution_stats().sdma_packets;
    // 1001 bytes from an odd source offset to an odd destination offset, as memmove.
    s.run(&copy_linear(VA + SRC + 3, VA + DST + 5, 1001));
    let got = s.bytes(DST, 1010);
    let mut want = vec![0u8; 1010];
    want[5..1006].copy_from_slice(&data[3..1004]);
    assert_eq!(got, want);
    assert_eq!(s.word64(RPTR).load(Ordering::Acquire), 28);
    assert_eq!(s.d.execution_stats().sdma_packets, before + 1);
    // NOPs: a zero dword is one; a NOP with count 2 is three dwords.
    s.run(&[0, 2 << 16, 0xdead, 0xbeef]);
    assert_eq!(s.word64(RPTR).load(Ordering::Acquire), 28 + 16);
    assert_eq!(s.d.execution_stats().sdma_packets, before + 3);
}

#[test]
fn copy_rect_copies_a_sub_window() {
    let s = setup();
    let data = pattern(8192, 3);
    s.put_bytes(SRC, &data);
    // 4-byte elements (element 2); source pitch 64 elements, window at (2, 1), 5 x 3
    // elements; destination pitch 16 elements at (1, 2).
    let (spitch, dpitch, ex) = (64u64, 16u64, 4u64);
    let header = 1 | (4 << 8) | (2 << 29);
    let p = [
        header,
        lo(VA + SRC),
        hi(VA + SRC),
        2 | (1 << 16),
        (spitch as u32 - 1) << 13,
        0,
        lo(VA + DST),
        hi(VA + DST),
        1 | (2 << 16),
        (dpitch as u32 - 1) << 13,
        0,
        4 | (2 << 16),
        0,
    ];
    s.run(&p);
    let got = s.bytes(DST, 4096);
    let mut want = vec![0u8; 4096];
    for y in 0..3u64 {
        let so = ((1 + y) * spitch + 2) * ex;
        let d = ((2 + y) * dpitch + 1) * ex;
        want[d as usize..(d + 5 * ex) as usize]
            .copy_from_slice(&data[so as usize..(so + 5 * ex) as usize]);
    }
    assert_eq!(got, want);
}

#[test]
fn fence_atomic_fill_and_timestamp_write_what_they_say() {
    let s = setup();
    let w = VA + WORDS;
    s.word64(WORDS + 8).store(5, Ordering::Release);
    s.word64(WORDS + 16).store(0x1_0000_0000, Ordering::Release);
    s.word32(WORDS + 24).store(9, Ordering::Release);
    let t0 = gpu_clock(&s.d);
    s.run(&[
        // FENCE: 0x12345678 at WORDS.
        5,
        lo(w),
        hi(w),
        0x1234_5678,
        // ATOMIC add64 of -1 (ROCR's signal decrement, operation 47) at WORDS + 8.
        10 | (47 << 25),
        lo(w + 8),
        hi(w + 8),
        0xffff_ffff,
        0xffff_ffff,
        0,
        0,
        0,
        // ATOMIC cmpswap64 (0x28) of 77 comparing with 0x2_0000_0000: no match, no swap.
        10 | (0x28 << 25),
        lo(w + 16),
        hi(w + 16),
        77,
        0,
        0,
        2,
        0,
        // ATOMIC umax32 (0x14) of 4 on 9: stays 9; then sub32 (0x10) of 10: wraps.
        10 | (0x14 << 25),
        lo(w + 24),
        hi(w + 24),
        4,
        0,
        0,
        0,
        0,
        10 | (0x10 << 25),
        lo(w + 24),
        hi(w + 24),
        10,
        0,
        0,
        0,
        0,
        // CONST_FILL of 300 dwords (count as ROCR writes it: (300 - 1) * 4).
        11 | (2 << 30),
        lo(VA + DST),
        hi(VA + DST),
        0xa5a5_0102,
        299 * 4,
        // TIMESTAMP GET_GLOBAL at WORDS + 32.
        13 | (2 << 8),
        lo(w + 32),
        hi(w + 32),
    ]);
    let t1 = gpu_clock(&s.d);
    assert_eq!(s.word32(WORDS).load(Ordering::Acquire), 0x1234_5678);
    assert_eq!(s.word64(WORDS + 8).load(Ordering::Acquire), 4);
    assert_eq!(s.word64(WORDS + 16).load(Ordering::Acquire), 0x1_0000_0000);
    assert_eq!(
        s.word32(WORDS + 24).load(Ordering::Acquire),
        9u32.wrapping_sub(10)
    );
    for i in 0..301u64 {
        let want = if i < 300 { 0xa5a5_0102 } else { 0 };
        assert_eq!(
            s.word32(DST + 4 * i).load(Ordering::Acquire),
            want,
            "dword {i}"
        );
    }
    let ts = s.word64(WORDS + 32).load(Ordering::Acquire);
    assert!(t0 <= ts && ts <= t1, "{t0} <= {ts} <= {t1}");
    // A cmpswap whose compare value matches swaps.
    s.run(&[10 | (0x28 << 25), lo(w + 16), hi(w + 16), 77, 0, 0, 1, 0]);
    assert_eq!(s.word64(WORDS + 16).load(Ordering::Acquire), 77);
}

#[test]
fn poll_regmem_waits_for_the_value() {
    let s = setup();
    let w = VA + WORDS;
    s.word64(WORDS).store(0x2_0000_0001, Ordering::Release);
    let data = pattern(64, 1);
    s.put_bytes(SRC, &data);
    // As ROCR waits on a dependency signal: the high half equal to 0, then the low half;
    // ROCR's HDP flush (a register poll, function "always") before the copy.
    let poll = |addr: u64| {
        [
            8 | (3 << 28) | (1 << 31),
            lo(addr),
            hi(addr),
            0,
            0xffff_ffff,
            4 | (0xfff << 16),
        ]
    };
    let mut p = Vec::new();
    p.extend(poll(w + 4));
    p.extend(poll(w));
    p.extend([8, 0, 0x8000_0000, 0, 0, 0]);
    p.extend(copy_linear(VA + SRC, VA + DST, 64));
    let end = s.submit(&p);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        s.word64(RPTR).load(Ordering::Acquire),
        0,
        "the first poll waits"
    );
    assert_eq!(s.bytes(DST, 64), vec![0; 64]);
    s.word64(WORDS).store(1, Ordering::Release);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        s.word64(RPTR).load(Ordering::Acquire),
        24,
        "the second poll waits"
    );
    s.word64(WORDS).store(0, Ordering::Release);
    assert!(s.wait_rptr(end));
    assert_eq!(s.bytes(DST, 64), data);
}

#[test]
fn fence_and_trap_raise_the_signal_event() {
    let s = setup();
    let page = alloc_gtt(&s.d, EVENT_VA, EVENT_PAGE_BYTES);
    let mut ce = CreateEventArgs {
        event_page_offset: page.handle,
        event_type: KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut ce).unwrap();
    let mailbox = EVENT_VA + 8 * u64::from(ce.event_slot_index);
    let wait = |ms| {
        let mut data = [EventData {
            event_id: ce.event_id,
            ..Default::default()
        }];
        calls::wait_events(&*s.d, &mut data, false, ms).unwrap()
    };
    // A TRAP alone, with no slot written: nothing to set.
    s.run(&[6, ce.event_id]);
    assert_eq!(wait(0), KFD_IOC_WAIT_RESULT_TIMEOUT);
    let page_host = calls::mmap(
        &*s.d,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        page.mmap_offset,
        EVENT_PAGE_BYTES as usize,
    )
    .unwrap();
    // SAFETY: the event's 8-byte slot in the page's host mapping, live as long as the
    // device; the device accesses it atomically.
    let slot = unsafe {
        AtomicU64::from_ptr(
            page_host
                .as_ptr()
                .add(8 * ce.event_slot_index as usize)
                .cast(),
        )
    };
    // ROCR's completion: FENCE of the event id into the mailbox, then TRAP with it. The
    // interrupt's handler (amdkfd's, here the device's) found the slot written, set the
    // event and put the slot back to unsignaled — before the read pointer passed the TRAP.
    s.run(&[5, lo(mailbox), hi(mailbox), ce.event_id, 6, ce.event_id]);
    assert_eq!(slot.load(Ordering::Acquire), u64::MAX);
    assert_eq!(wait(5000), KFD_IOC_WAIT_RESULT_COMPLETE);
    assert_eq!(wait(0), KFD_IOC_WAIT_RESULT_TIMEOUT, "auto-reset");
}

/// ... and the GPU reset it leads to reaches a system-management reader as amdkfd's
/// `kfd_smi_event_update_gpu_reset` sends it: the pre-reset event with the next reset
/// sequence number (1), then the post-reset event with the same, each with the cause.
#[test]
fn unknown_opcode_stops_the_queue_naming_it() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let s = setup();
    let mut smi = SmiEventsArgs {
        gpuid: BUILTIN_GPU_ID,
        anon_fd: 0,
    };
    // SAFETY: the argument carries no pointer.
    unsafe { s.d.ioctl(AMDKFD_IOC_SMI_EVENTS, smi.as_mut_bytes()) }.unwrap();
    // SAFETY: a successful SMI_EVENTS hands the caller a new descriptor it owns.
    let smi = unsafe { OwnedFd::from_raw_fd(smi.anon_fd as i32) };
    // KFD_SMI_EVENT_MASK_FROM_INDEX(3) | (4).
    assert_eq!(rustix::io::write(&smi, &0xcu64.to_ne_bytes()), Ok(8));
    let hw = {
        let mut ce = CreateEventArgs {
            event_type: KFD_IOC_EVENT_HW_EXCEPTION,
            auto_reset: 1,
            ..Default::default()
        };
        plain_ioctl(&*s.d, &mut ce).unwrap();
        ce.event_id
    };
    s.run(&[0]);
    s.submit(&[0x0000_0017, 0, 0]);
    let e = s.wait_error();
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    assert_eq!(
        e.detail().to_string(),
        "SDMA queue 0 at ring offset 0x4 (read pointer 0x4): opcode 23 (header 0x00000017) is \
         not one the emulated SDMA engine runs (NOP 0, COPY 1, FENCE 5, TRAP 6, POLL_REGMEM 8, \
         ATOMIC 10, CONST_FILL 11, TIMESTAMP 13)"
    );
    let mut data = [EventData {
        event_id: hw,
        ..Default::default()
    }];
    assert_eq!(
        calls::wait_events(&*s.d, &mut data, false, 5000).unwrap(),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    // As amdkfd's kfd_signal_reset_event after the hung engine's GPU reset: memory lost
    // (ROCR acts on the event only then), a hang, reset_type 0 (whole GPU).
    assert_eq!(
        data[0].hw_exception(),
        HsaHwExceptionData {
            reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
            reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
            memory_lost: 1,
            gpu_id: BUILTIN_GPU_ID,
        }
    );
    assert_eq!(
        s.word64(RPTR).load(Ordering::Acquire),
        4,
        "the queue stopped there"
    );
    let want = "3 1 HWS hang\n4 1 HWS hang\n";
    let mut got = Vec::new();
    let t = Instant::now();
    while got.len() < want.len() && t.elapsed() < Duration::from_secs(10) {
        let mut buf = [0u8; 64];
        match rustix::io::read(&smi, &mut buf) {
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(Errno::AGAIN) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

#[test]
fn copy_out_of_range_is_a_memory_fault_naming_the_address() {
    let s = setup();
    s.submit(&copy_linear(VA + SRC, VA + SIZE - 16, 64));
    let e = s.wait_error();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "SDMA queue 0 at ring offset 0x0 (read pointer 0x0): memory fault on GPU {:#x}: COPY \
             LINEAR destination write at {:#x} (64 bytes): byte {:#x} is in no live allocation",
            BUILTIN_GPU_ID,
            VA + SIZE - 16,
            VA + SIZE
        )
    );
    assert_eq!(s.bytes(DST, 4), vec![0; 4]);
}

/// A second GTT buffer of `SIZE` bytes at `VA + SIZE`, right after the test's own: the two
/// are adjacent in the GPU's address space (`ALLOC_MEMORY_OF_GPU` takes the device address the
/// caller picks, as ROCR's allocator does), separate buffer objects with separate backing
/// memory. Returns its host mapping.
fn neighbour(s: &Sdma) -> NonNull<u8> {
    let a = alloc_gtt(&s.d, VA + SIZE, SIZE);
    calls::mmap(
        &*s.d,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        a.mmap_offset,
        SIZE as usize,
    )
    .unwrap()
}

/// The two adjacent buffers' bytes `VA + offset .. + len` as the host sees them (`offset`
/// counts from `VA` across both).
fn both_bytes(s: &Sdma, second: NonNull<u8>, offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|o| {
            let (base, at) = if o < SIZE {
                (s.host, o)
            } else {
                (second, o - SIZE)
            };
            assert!(at < SIZE);
            // SAFETY: inside one of the two live GTT mappings (checked); read after the read
            // pointer's Acquire load showed the device done with the packet.
            unsafe { base.as_ptr().add(at as usize).read_volatile() }
        })
        .collect()
}

/// Writes `data` at `VA + offset` across the two adjacent buffers, as [`both_bytes`] reads.
fn put_both(s: &Sdma, second: NonNull<u8>, offset: u64, data: &[u8]) {
    for (i, &b) in data.iter().enumerate() {
        let o = offset + i as u64;
        let (base, at) = if o < SIZE {
            (s.host, o)
        } else {
            (second, o - SIZE)
        };
        assert!(at < SIZE);
        // SAFETY: inside one of the two live GTT mappings (checked); no packet runs meanwhile.
        unsafe { base.as_ptr().add(at as usize).write_volatile(b) };
    }
}

/// An SDMA packet's range may cross from one buffer object into the adjacent one, as on the
/// engine (it needs every page mapped in the GPU's VM, nothing more): linear copies whose
/// source, destination or both cross, one whose two sides overlap across the boundary
/// (`memmove`), a rect copy with a row across it, and a fill across it, each checked against
/// the same operations done on a host copy of the two buffers.
#[test]
fn packets_span_adjacent_allocations() {
    let s = setup();
    let second = neighbour(&s);
    let edge = SIZE; // offset from VA of the second buffer's first byte
    let (start, stop) = (edge - 8192, edge + 16384);
    put_both(&s, second, start, &pattern((stop - start) as usize, 11));
    let mut model = both_bytes(&s, second, start, stop - start);
    let at = |o: u64| (o - start) as usize;
    let check = |model: &[u8], what: &str| {
        assert!(
            both_bytes(&s, second, start, stop - start) == model,
            "{what}: the bytes differ from the host's"
        );
    };

    // Source across the boundary, destination inside the second buffer.
    s.run(&copy_linear(VA + edge - 1500, VA + edge + 4099, 3000));
    model.copy_within(at(edge - 1500)..at(edge + 1500), at(edge + 4099));
    check(&model, "source across");
    // Destination across the boundary, source inside the first buffer.
    s.run(&copy_linear(VA + edge - 7000, VA + edge - 999, 2001));
    model.copy_within(at(edge - 7000)..at(edge - 4999), at(edge - 999));
    check(&model, "destination across");
    // Both across, overlapping: memmove, as within one buffer (forward and backward).
    s.run(&copy_linear(VA + edge - 1500, VA + edge - 1000, 3000));
    model.copy_within(at(edge - 1500)..at(edge + 1500), at(edge - 1000));
    check(&model, "overlapping, destination above");
    s.run(&copy_linear(VA + edge - 600, VA + edge - 1100, 2500));
    model.copy_within(at(edge - 600)..at(edge + 1900), at(edge - 1100));
    check(&model, "overlapping, destination below");

    // LINEAR_RECT: 4-byte elements, source rows of 64 elements at pitch 64 from
    // `edge - 300` (row 1 crosses the boundary), 3 rows, to pitch 80 at `edge + 8192`.
    let (src, dst) = (VA + edge - 300, VA + edge + 8192);
    let header = 1 | (4 << 8) | (2 << 29);
    s.run(&[
        header,
        lo(src),
        hi(src),
        0,
        63 << 13,
        0,
        lo(dst),
        hi(dst),
        0,
        79 << 13,
        0,
        63 | (2 << 16),
        0,
    ]);
    for y in 0..3u64 {
        let so = at(edge - 300 + y * 256);
        model.copy_within(so..so + 256, at(edge + 8192 + y * 320));
    }
    check(&model, "rect");

    // CONST_FILL of 32 dwords across the boundary.
    let fill = VA + edge - 64;
    s.run(&[11 | (2 << 30), lo(fill), hi(fill), 0x5a5a_c3c3, 31 << 2]);
    for k in 0..32 {
        let o = at(edge - 64 + 4 * k);
        model[o..o + 4].copy_from_slice(&0x5a5a_c3c3u32.to_le_bytes());
    }
    check(&model, "fill");
}

/// A range crossing from a buffer object into unmapped space faults naming the access and the
/// first unmapped byte, and writes nothing, although its first bytes are mapped; so does one
/// crossing into a buffer object that is not mapped to the GPU.
#[test]
fn a_range_across_a_hole_faults_at_the_first_unmapped_byte() {
    let s = setup();
    let second = neighbour(&s);
    let end = 2 * SIZE; // VA + end: nothing there
    s.submit(&copy_linear(VA + SRC, VA + end - 16, 64));
    let e = s.wait_error();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "SDMA queue 0 at ring offset 0x0 (read pointer 0x0): memory fault on GPU {:#x}: COPY \
             LINEAR destination write at {:#x} (64 bytes): byte {:#x} is in no live allocation",
            BUILTIN_GPU_ID,
            VA + end - 16,
            VA + end
        )
    );
    assert_eq!(both_bytes(&s, second, end - 16, 16), vec![0; 16]);

    // A third buffer object after the second, allocated but not mapped to the GPU: a fill
    // crossing into it faults at its first byte.
    let s = setup();
    let second = neighbour(&s);
    let mut third = AllocMemoryOfGpuArgs {
        va_addr: VA + end,
        size: SIZE,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    // SAFETY: without USERPTR the argument carries no pointer.
    unsafe {
        s.d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, third.as_mut_bytes())
    }
    .unwrap();
    let fill = VA + end - 8;
    s.submit(&[11 | (2 << 30), lo(fill), hi(fill), 0x1234_5678, 3 << 2]);
    let e = s.wait_error();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "SDMA queue 0 at ring offset 0x0 (read pointer 0x0): memory fault on GPU {:#x}: \
             CONST_FILL write at {:#x} (16 bytes): byte {:#x} is in the allocation at {:#x}, \
             which is not mapped to this GPU",
            BUILTIN_GPU_ID,
            VA + end - 8,
            VA + end,
            VA + end
        )
    );
    assert_eq!(both_bytes(&s, second, end - 8, 8), vec![0; 8]);
}

#[test]
fn bad_sizes_and_fields_stop_the_queue() {
    for (p, want) in [
        (
            // The built-in gfx90a's SDMA 4.4 counts are 30 bits wide.
            vec![1, 0x4000_0000, 0, 0, 0, 0, 0],
            "COPY LINEAR count dword 0x40000000 has bits above the 30-bit count of this SDMA \
             engine (SDMA 4.4 and later)",
        ),
        (
            vec![11 | (2 << 30), 0, 0, 0, 0x8000_0000],
            "CONST_FILL count dword 0x80000000 has bits above the 30-bit count",
        ),
        (
            vec![1 | (3 << 8)],
            "COPY sub-opcode 3 (header 0x00000301) is not one the emulated SDMA engine runs",
        ),
        (
            vec![11 | (1 << 30), 0, 0, 0, 0],
            "CONST_FILL fillsize 1 (header 0x4000000b): the emulated SDMA engine fills dwords",
        ),
        (
            vec![10 | (0x50 << 25), 0, 0, 0, 0, 0, 0, 0],
            "ATOMIC operation 0x50 (header 0xa000000a) is not one",
        ),
        (vec![5, 2, 0, 0], "FENCE write address 0x2 is not 4-byte aligned"),
        (
            vec![8 | (3 << 28), 0x1234, 0, 0, 0, 0],
            "POLL_REGMEM of register 0x1234 (function 3): the emulated SDMA engine has no registers",
        ),
        (
            vec![1, 15, 0],
            "packet 0x00000001 (opcode 1) is 7 dwords, but only 3 were written",
        ),
        (
            // LINEAR_RECT of 1-byte elements, 1 x 16129 x 2043 (the fuzzer's 41 s input):
            // destination pitch 1 and slice pitch 1 put all its rows on a few bytes.
            vec![1 | (4 << 8), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3f00 << 16, 0x7fa],
            "COPY LINEAR_RECT destination slice pitch 1 elements is below the 16129 elements \
             of a slice's 16129 rows: overlapping destination slices are not emulated",
        ),
        (
            // 8 elements a row, destination pitch 4: rows overlap.
            vec![1 | (4 << 8), 0, 0, 0, 0, 0, 0, 0, 0, 3 << 13, 0, 7 | (1 << 16), 0],
            "COPY LINEAR_RECT destination pitch 4 elements is below the rectangle's width 8: \
             overlapping destination rows are not emulated",
        ),
    ] {
        let s = setup();
        s.submit(&p);
        let e = s.wait_error();
        assert_eq!(e.status(), Status::InvalidPacketFormat, "{p:x?}");
        assert!(e.detail().to_string().contains(want), "{p:x?}: {e}");
    }
}

/// A COPY LINEAR of `0x40_0000 + 64` bytes (a count with bit 22 set, as ROCR 7 writes for
/// copies above 4 MiB on gfx90a and gfx94x) and a CONST_FILL of as many bytes, between two
/// 8 MiB GTT buffers: what each profile's SDMA engine makes of them.
fn wide_count_packets(s: &Sdma) -> (NonNull<u8>, [u32; 7], [u32; 5]) {
    const BIG_VA: u64 = 0x7200_0000_0000;
    const BIG: u64 = 8 << 20;
    let src = alloc_gtt(&s.d, BIG_VA, BIG);
    let dst = alloc_gtt(&s.d, BIG_VA + BIG, BIG);
    let bytes: u32 = 0x40_0000 + 64;
    let map = |a: &AllocMemoryOfGpuArgs| {
        calls::mmap(
            &*s.d,
            MapTarget::RenderNode(BUILTIN_GPU_ID),
            a.mmap_offset,
            BIG as usize,
        )
        .unwrap()
    };
    let (src_host, dst_host) = (map(&src), map(&dst));
    let data = pattern(bytes as usize, 7);
    // SAFETY: the 8 MiB mapping the device returned; `data` is shorter.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), src_host.as_ptr(), data.len()) };
    let fill = [
        11 | (2 << 30),
        lo(BIG_VA + BIG),
        hi(BIG_VA + BIG),
        0xdead_beef,
        bytes - 4,
    ];
    (dst_host, copy_linear(BIG_VA, BIG_VA + BIG, bytes), fill)
}

#[test]
fn sdma_4_4_counts_are_30_bits_wide() {
    // gfx90a (the built-in profile, SDMA 4.4.0) and gfx942 (SDMA 4.4.2) copy and fill past
    // 4 MiB in one packet (amdgpu's sdma_v4_4 and sdma_v4_4_2 buffer funcs: 1 << 30 bytes).
    for topology in [
        builtin_topology(),
        hsa_emu::device::builtin_profile("gfx942").unwrap(),
    ] {
        let s = setup_on(topology);
        let (dst, copy, fill) = wide_count_packets(&s);
        let bytes = 0x40_0000 + 64usize;
        // SAFETY: the 8 MiB destination mapping, read once the engine moved past the packet.
        let read = || unsafe { std::slice::from_raw_parts(dst.as_ptr(), bytes) }.to_vec();
        s.run(&copy);
        assert!(read() == pattern(bytes, 7), "copy of {bytes} bytes");
        s.run(&fill);
        let got = read();
        assert!(
            got.chunks(4).all(|c| c == 0xdead_beefu32.to_le_bytes()),
            "fill of {bytes} bytes"
        );
    }
}

#[test]
fn sdma_4_0_counts_are_22_bits_wide() {
    // gfx908 (an MI100, SDMA 4.2.2) and gfx900 (SDMA 4.0.0) stop the queue on the same copy
    // (amdgpu's sdma_v4_0 buffer funcs: 1 << 22 bytes; vega10_sdma_pkt_open.h's count mask
    // 0x003FFFFF).
    for profile in ["gfx908", "gfx900"] {
        let s = setup_on(hsa_emu::device::builtin_profile(profile).unwrap());
        let (_, copy, _) = wide_count_packets(&s);
        s.submit(&copy);
        let e = s.wait_error();
        assert_eq!(e.status(), Status::InvalidPacketFormat, "{profile}");
        assert!(
            e.detail().to_string().contains(
                "COPY LINEAR count dword 0x0040003f has bits above the 22-bit count of this \
                 SDMA engine (SDMA 4.0-4.2)"
            ),
            "{profile}: {e}"
        );
    }
}

#[test]
fn create_sdma_queue_checks_its_arguments() {
    let s = setup();
    let mut bad = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    bad.read_pointer_address = VA + RPTR + 4;
    assert_eq!(try_create(&s.d, &mut bad), Err(Errno::INVAL));
    let mut bad = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    bad.write_pointer_address = 0x6000_0000_0000;
    assert_eq!(try_create(&s.d, &mut bad), Err(Errno::FAULT));
    let mut bad = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    bad.ring_size = 3000;
    assert_eq!(try_create(&s.d, &mut bad), Err(Errno::INVAL));
    // The built-in profile: 2 SDMA engines x 8 queues, no XGMI engine. The setup's queue is
    // one of the 16.
    let mut ids = vec![];
    for _ in 0..15 {
        let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
        try_create(&s.d, &mut q).unwrap();
        ids.push(q.queue_id);
    }
    let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    assert_eq!(try_create(&s.d, &mut q), Err(Errno::NOMEM));
    let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA_XGMI);
    assert_eq!(try_create(&s.d, &mut q), Err(Errno::NOMEM));
    for queue_id in ids {
        plain_ioctl(&*s.d, &mut DestroyQueueArgs { queue_id, pad: 0 }).unwrap();
    }
}

/// CREATE_QUEUE of interface 1.17 (the 96-byte argument): a `SDMA_BY_ENG_ID` queue takes the
/// lowest free queue of the engine it names, as amdkfd's `allocate_sdma_queue` (slot `i` is
/// queue `i / 2` of engine `i % 2` on the built-in GPU's 2 engines x 8 queues); an engine id
/// past the GPU's engines is `EINVAL`; an engine with no free queue is `ENOMEM` while the
/// other still has some, which plain SDMA queues then take; the shorter 1.11 argument still
/// creates queues.
#[test]
fn sdma_queues_by_engine_id_take_that_engines_slots() {
    use hsa_emu::device::{
        CreateQueueArgs17, AMDKFD_IOC_CREATE_QUEUE_17, KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
    };
    assert_eq!(AMDKFD_IOC_CREATE_QUEUE_17, 0xc060_4b02);
    let s = setup(); // its queue: slot 0, engine 0
    let by_engine = |engine: u32| -> Result<u32, Errno> {
        let mut q = CreateQueueArgs17 {
            args: create_args(KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID),
            sdma_engine_id: engine,
            pad: 0,
        };
        // SAFETY: as try_create's.
        unsafe { s.d.ioctl(AMDKFD_IOC_CREATE_QUEUE_17, q.as_mut_bytes()) }?;
        assert_eq!(q.sdma_engine_id, engine, "the argument comes back as given");
        assert_eq!(q.args.queue_type, KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID);
        Ok(q.args.queue_id)
    };
    assert_eq!(by_engine(2), Err(Errno::INVAL));
    assert_eq!(by_engine(u32::MAX), Err(Errno::INVAL));
    // Engine 1's eight queues (slots 1, 3, .., 15), then no more on engine 1.
    let mut ids = vec![];
    for _ in 0..8 {
        ids.push(by_engine(1).unwrap());
    }
    assert_eq!(by_engine(1), Err(Errno::NOMEM));
    // Engine 0 has seven left (slot 0 is the setup's): by engine id, then by kind.
    ids.push(by_engine(0).unwrap());
    for _ in 0..6 {
        let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
        try_create(&s.d, &mut q).unwrap();
        ids.push(q.queue_id);
    }
    let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA);
    assert_eq!(try_create(&s.d, &mut q), Err(Errno::NOMEM));
    assert_eq!(by_engine(0), Err(Errno::NOMEM));
    // A queue of engine 1 gone: its slot is engine 1's again, not engine 0's.
    plain_ioctl(
        &*s.d,
        &mut DestroyQueueArgs {
            queue_id: ids[3],
            pad: 0,
        },
    )
    .unwrap();
    assert_eq!(by_engine(0), Err(Errno::NOMEM));
    ids[3] = by_engine(1).unwrap();
    for queue_id in ids {
        plain_ioctl(&*s.d, &mut DestroyQueueArgs { queue_id, pad: 0 }).unwrap();
    }

    // With 2 xGMI engines (ids 2 and 3), engine 3 is the second xGMI engine: its 8 queues
    // are xGMI slots 1, 3, ..; then xGMI queues by kind take engine 2's 8.
    let mut t = builtin_topology();
    t.nodes[1].properties.num_sdma_xgmi_engines = 2;
    let x = setup_on(t);
    let xgmi_engine = |engine: u32| -> Result<(), Errno> {
        let mut q = CreateQueueArgs17 {
            args: create_args(KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID),
            sdma_engine_id: engine,
            pad: 0,
        };
        // SAFETY: as try_create's.
        unsafe { x.d.ioctl(AMDKFD_IOC_CREATE_QUEUE_17, q.as_mut_bytes()) }
    };
    assert_eq!(xgmi_engine(4), Err(Errno::INVAL));
    for _ in 0..8 {
        xgmi_engine(3).unwrap();
    }
    assert_eq!(xgmi_engine(3), Err(Errno::NOMEM));
    for _ in 0..8 {
        let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA_XGMI);
        try_create(&x.d, &mut q).unwrap();
    }
    let mut q = create_args(KFD_IOC_QUEUE_TYPE_SDMA_XGMI);
    assert_eq!(try_create(&x.d, &mut q), Err(Errno::NOMEM));
    assert_eq!(xgmi_engine(2), Err(Errno::NOMEM));
    // The PCIe engines are another kind: engine 1 still has its 8 queues.
    xgmi_engine(1).unwrap();
}

/// hsa-core's SDMA producer ([`hsa_core::sdma::SdmaQueue`]) over the Linux backend over the
/// emulated device: the queue is a real `KFD_IOC_QUEUE_TYPE_SDMA` queue of the emulated
/// amdkfd, and ROCR 5.2's command for a 5 MiB copy — two polls of a dependency, timestamps,
/// HDP flush, two `COPY_LINEAR` (at most 0x3fffe0 bytes each), the completion's atomic
/// decrement — runs on its SDMA engine: 8 packets, the bytes copied, the value decremented
/// only after the dependency reached 0, the times ordered and inside the GPU clock's
/// readings around the copy.
#[test]
fn core_sdma_queue_copies_through_the_linux_backend() {
    use hsa_core::addr::{GpuVa, NodeId};
    use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
    use hsa_core::sdma::{copy_commands, SdmaCompletion, SdmaQueue};

    let emu = EmulatedKfd::new(builtin_topology()).unwrap();
    let node = emu
        .topology()
        .nodes
        .iter()
        .position(|n| n.properties.gpu_id != 0)
        .map(|i| NodeId(i as u32))
        .unwrap();
    let platform = Arc::new(
        hsa_emu::SelectedDevice::emulated(emu.clone())
            .unwrap()
            .platform,
    );
    let queue = SdmaQueue::create(platform.clone(), node).unwrap();
    let size: u64 = 5 << 20;
    let chunk = platform
        .allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: 2 * size + 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        })
        .unwrap();
    let host = chunk.host_ptr.unwrap().as_ptr();
    let va = chunk.gpu_va.0;
    let (src, dst, words) = (0u64, size, 2 * size);
    let data = pattern(size as usize, 11);
    // SAFETY: the chunk holds 2 * size + 4096 bytes, host-mapped, zeroed, and nothing else
    // touches it until the command is submitted.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
    let word = |off: u64| {
        // SAFETY: 8-aligned offsets inside the chunk's last page, accessed atomically here and
        // by the engine, live until the chunk is freed at the end.
        unsafe { AtomicU64::from_ptr(host.add(off as usize).cast()) }
    };
    let (dep, value, start, end) = (words, words + 8, words + 16, words + 24);
    word(dep).store(1, Ordering::Release);
    word(value).store(1, Ordering::Release);
    let before = emu.execution_stats().sdma_packets;
    let t0 = gpu_clock(&emu);
    let mut cmd = Vec::new();
    copy_commands(
        &mut cmd,
        GpuVa(va + dst),
        GpuVa(va + src),
        size,
        &[GpuVa(va + dep)],
        &SdmaCompletion {
            value: GpuVa(va + value),
            mailbox: None,
            timestamps: Some((GpuVa(va + start), GpuVa(va + end))),
        },
    );
    assert_eq!(cmd.len(), 6 + 6 + 3 + 6 + 7 + 7 + 3 + 8);
    queue.submit(&cmd).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        word(value).load(Ordering::Acquire),
        1,
        "waits for the dependency"
    );
    // The first poll (the value's high half, 0) passed; the second (the low half, 1) waits.
    assert_eq!(queue.read_pointer(), 24);
    word(dep).store(0, Ordering::Release);
    let t = Instant::now();
    while word(value).load(Ordering::Acquire) != 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the copy never completed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let t1 = gpu_clock(&emu);
    let mut got = vec![0u8; size as usize];
    // SAFETY: inside the chunk; the engine finished writing (the value reached 0 after it).
    unsafe { std::ptr::copy_nonoverlapping(host.add(dst as usize), got.as_mut_ptr(), got.len()) };
    assert!(got == data, "the copied bytes differ");
    assert_eq!(emu.execution_stats().sdma_packets - before, 8);
    assert_eq!(queue.read_pointer(), cmd.len() as u64 * 4);
    let (s, e) = (
        word(start).load(Ordering::Acquire),
        word(end).load(Ordering::Acquire),
    );
    assert!(t0 <= s && s <= e && e <= t1, "{t0} <= {s} <= {e} <= {t1}");
    drop(queue);
    // SAFETY: the queue is destroyed; nothing uses the chunk.
    unsafe { platform.free_memory(&chunk) }.unwrap();
}

/// hsa-core's rect command ([`hsa_core::sdma::copy_rect_commands`], ROCR 5.2's tiling into
/// `COPY_LINEAR_RECT` packets of 1- to 16-byte elements) on the emulated SDMA engine: each
/// block lands where a host copy row by row puts it, for odd and aligned offsets and widths,
/// several slices, and a row pitch beyond the packet's 2^19 elements (copied along z).
#[test]
fn core_rect_commands_copy_the_block() {
    use hsa_core::addr::{GpuVa, NodeId};
    use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
    use hsa_core::sdma::{copy_rect_commands, RectSurface, SdmaCompletion, SdmaQueue};

    let emu = EmulatedKfd::new(builtin_topology()).unwrap();
    let node = emu
        .topology()
        .nodes
        .iter()
        .position(|n| n.properties.gpu_id != 0)
        .map(|i| NodeId(i as u32))
        .unwrap();
    let platform = Arc::new(
        hsa_emu::SelectedDevice::emulated(emu.clone())
            .unwrap()
            .platform,
    );
    let queue = SdmaQueue::create(platform.clone(), node).unwrap();
    let half: u64 = 4 << 20;
    let chunk = platform
        .allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: 2 * half + 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        })
        .unwrap();
    let host = chunk.host_ptr.unwrap().as_ptr();
    let va = chunk.gpu_va.0;
    let data = pattern(half as usize, 5);
    // SAFETY: the chunk holds 2 * half + 4096 bytes, host-mapped; the engine is idle.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
    // SAFETY: 8-aligned, in the chunk's last page, accessed atomically here and by the engine.
    let value = unsafe { AtomicU64::from_ptr(host.add(2 * half as usize).cast()) };
    // (src pitch, src slice, src offset, dst pitch, dst slice, dst offset, range)
    type Case = (u64, u64, [u64; 3], u64, u64, [u64; 3], [u64; 3]);
    let cases: [Case; 4] = [
        (64, 0, [8, 2, 0], 32, 0, [4, 1, 0], [16, 8, 1]),
        (100, 1000, [3, 1, 1], 52, 520, [1, 2, 0], [37, 5, 3]),
        (
            4096,
            65536,
            [16, 3, 2],
            2048,
            32768,
            [32, 0, 1],
            [1024, 7, 2],
        ),
        // A row pitch of 2 MiB, beyond the packet's 2^19 elements of 1 byte: rows become slices.
        (1 << 21, 0, [5, 0, 0], 256, 0, [0, 0, 0], [200, 2, 1]),
    ];
    for (sp, ss, so, dp, dsl, doff, r) in cases {
        // SAFETY: the destination half, zeroed for this case while the engine is idle.
        unsafe { std::ptr::write_bytes(host.add(half as usize), 0, half as usize) };
        let src = RectSurface {
            base: GpuVa(va),
            pitch: sp,
            slice: ss,
            offset: so,
        };
        let dst = RectSurface {
            base: GpuVa(va + half),
            pitch: dp,
            slice: dsl,
            offset: doff,
        };
        value.store(1, Ordering::Release);
        let mut cmd = Vec::new();
        let target = SdmaCompletion {
            value: GpuVa(va + 2 * half),
            mailbox: None,
            timestamps: None,
        };
        copy_rect_commands(&mut cmd, &dst, &src, r, &[], &target).unwrap();
        queue.submit(&cmd).unwrap();
        let t = Instant::now();
        while value.load(Ordering::Acquire) != 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "rect copy never completed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut want = vec![0u8; half as usize];
        for z in 0..r[2] {
            for y in 0..r[1] {
                let s = so[0] + (so[1] + y) * sp + (so[2] + z) * ss;
                let d = doff[0] + (doff[1] + y) * dp + (doff[2] + z) * dsl;
                want[d as usize..(d + r[0]) as usize]
                    .copy_from_slice(&data[s as usize..(s + r[0]) as usize]);
            }
        }
        let mut got = vec![0u8; half as usize];
        // SAFETY: inside the chunk; the engine finished (the value reached 0 after it).
        unsafe {
            std::ptr::copy_nonoverlapping(host.add(half as usize), got.as_mut_ptr(), got.len())
        };
        assert!(
            got == want,
            "case {sp} {ss} {so:?} {dp} {dsl} {doff:?} {r:?}"
        );
    }
    // A pitch that cannot be told in the packet even in bytes, copied along z: an error.
    let wide = RectSurface {
        base: GpuVa(va),
        pitch: 1 << 20,
        slice: 1 << 29,
        offset: [1, 0, 0],
    };
    let e = copy_rect_commands(
        &mut Vec::new(),
        &wide,
        &wide,
        [3, 1, 2],
        &[],
        &SdmaCompletion {
            value: GpuVa(va + 2 * half),
            mailbox: None,
            timestamps: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    drop(queue);
    // SAFETY: the queue is destroyed; nothing uses the chunk.
    unsafe { platform.free_memory(&chunk) }.unwrap();
}

/// A looping compare-swap (`ATOMIC` with the loop bit) waits, without writing, until the
/// compare value is there; a queue left waiting on one is still destroyed.
#[test]
fn looping_compare_swap_waits_for_its_value() {
    let s = setup();
    let w = VA + WORDS;
    s.word64(WORDS).store(3, Ordering::Release);
    let end = s.submit(&[10 | (1 << 16) | (0x28 << 25), lo(w), hi(w), 9, 0, 4, 0, 0]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(s.word64(RPTR).load(Ordering::Acquire), 0);
    assert_eq!(s.word64(WORDS).load(Ordering::Acquire), 3);
    s.word64(WORDS).store(4, Ordering::Release);
    assert!(s.wait_rptr(end));
    assert_eq!(s.word64(WORDS).load(Ordering::Acquire), 9);
    // Another that never matches: dropping the device destroys the waiting queue.
    s.submit(&[10 | (1 << 16) | (0x28 << 25), lo(w), hi(w), 1, 0, 2, 0, 0]);
}

/// Packets of every opcode with fields drawn at random (addresses inside and outside the
/// queue's memory, any sizes, operations and flags) never make the engine panic: each run
/// either reaches its write pointer or stops the queue with an error.
#[test]
fn random_packets_end_or_stop_the_queue_never_panic() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // Panics anywhere in the process (the engine threads included) are counted.
    static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let lens = [1u32, 7, 13, 4, 2, 6, 8, 5, 3];
    let ops = [0u32, 1, 1, 5, 6, 8, 10, 11, 13];
    for case in 0..60 {
        let s = setup();
        let mut p = Vec::new();
        for _ in 0..4 {
            let k = (next() % ops.len() as u64) as usize;
            let mut header = ops[k] | ((next() as u32) & 0xffff_0000);
            if ops[k] == 1 {
                header = (header & !0xff00) | if k == 1 { 0 } else { 4 << 8 };
            }
            if ops[k] == 13 {
                header = (header & !0xff00) | (2 << 8);
            }
            if ops[k] == 0 {
                header &= 0xff;
            }
            p.push(header);
            for _ in 1..lens[k] {
                let r = next();
                // Addresses: often inside the buffer, sometimes anywhere.
                p.push(match r % 4 {
                    0 => lo(VA + (r >> 8) % SIZE),
                    1 => hi(VA),
                    _ => (r >> 16) as u32,
                });
            }
        }
        let end = s.submit(&p);
        let t = Instant::now();
        loop {
            if s.word64(RPTR).load(Ordering::Acquire) == end
                || s.d.queue_error(s.queue_id).is_some()
            {
                break;
            }
            // A POLL_REGMEM or looping compare-swap may wait forever on a random value:
            // that is a wait, not a failure; the queue is destroyed waiting.
            if t.elapsed() > Duration::from_millis(300) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(s);
        assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a panic in case {case}");
    }
}

/// hsa-core's SDMA producer waits for ring space without burning a core: with the engine held
/// by a `POLL_REGMEM` on a word that is not yet 0 and the 1 MiB ring filled with NOPs, the
/// next `submit` gives the CPU away through `Platform::relax` (counted by a fault injector
/// around the Linux backend over the emulated device) until the poll passes and the engine
/// frees space; then it publishes, and the engine runs everything.
#[test]
fn core_sdma_submit_relaxes_while_the_ring_is_full() {
    use hsa_core::addr::{GpuVa, NodeId};
    use hsa_core::platform::fake::{FaultInjector, FaultMethod};
    use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
    use hsa_core::sdma::{packet, SdmaQueue, SDMA_RING_BYTES};

    let emu = EmulatedKfd::new(builtin_topology()).unwrap();
    let node = emu
        .topology()
        .nodes
        .iter()
        .position(|n| n.properties.gpu_id != 0)
        .map(|i| NodeId(i as u32))
        .unwrap();
    let platform = Arc::new(FaultInjector::new(
        hsa_emu::SelectedDevice::emulated(emu.clone())
            .unwrap()
            .platform,
    ));
    let queue = Arc::new(SdmaQueue::create(platform.clone(), node).unwrap());
    let chunk = platform
        .allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        })
        .unwrap();
    // SAFETY: the chunk's first 4 bytes, 4-aligned, accessed atomically here and by the
    // engine, live until the chunk is freed at the end.
    let word = unsafe { AtomicU32::from_ptr(chunk.host_ptr.unwrap().as_ptr().cast()) };
    word.store(1, Ordering::Release);
    queue
        .submit(&packet::poll_mem_eq(GpuVa(chunk.gpu_va.0), 0))
        .unwrap();
    // 15 commands of 64 KiB of one-dword NOPs: the ring holds 24 + 15 * 65536 bytes the
    // engine has not consumed (it waits at the poll, read pointer 0).
    let nops = vec![0u32; 16384];
    for _ in 0..15 {
        queue.submit(&nops).unwrap();
    }
    assert_eq!(queue.read_pointer(), 0);
    let q = queue.clone();
    let n = nops.clone();
    let blocked = std::thread::spawn(move || q.submit(&n));
    let t = Instant::now();
    while platform.calls(FaultMethod::Relax) == 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let relaxed = platform.calls(FaultMethod::Relax);
    assert!(!blocked.is_finished(), "submit returned with the ring full");
    word.store(0, Ordering::Release);
    blocked.join().unwrap().unwrap();
    assert!(
        relaxed > 0,
        "submit waited for ring space without Platform::relax"
    );
    // The last command did not fit before the ring's end: NOPs pad up to it, and the
    // command starts again at offset 0.
    let end = SDMA_RING_BYTES + 65536;
    let t = Instant::now();
    while queue.read_pointer() != end {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the engine never caught up"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(queue);
    // SAFETY: the queue is destroyed; nothing uses the chunk.
    unsafe { platform.free_memory(&chunk) }.unwrap();
}

/// hsa-core's `SdmaQueue::submit` returns the write pointer after each command (what the
/// read pointer reaches once the engine ran it); once the queue is marked stopped (the
/// runtime learnt that amdkfd evicted it), a `submit` waiting for ring space returns
/// `Status::Error` instead of waiting for ever, and so does every later one.
#[test]
fn core_sdma_submit_fails_once_the_queue_is_marked_stopped() {
    use hsa_core::addr::{GpuVa, NodeId};
    use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
    use hsa_core::sdma::{packet, SdmaQueue};
    use hsa_core::Status;

    let emu = EmulatedKfd::new(builtin_topology()).unwrap();
    let node = emu
        .topology()
        .nodes
        .iter()
        .position(|n| n.properties.gpu_id != 0)
        .map(|i| NodeId(i as u32))
        .unwrap();
    let platform = Arc::new(
        hsa_emu::SelectedDevice::emulated(emu.clone())
            .unwrap()
            .platform,
    );
    let queue = Arc::new(SdmaQueue::create(platform.clone(), node).unwrap());
    let chunk = platform
        .allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        })
        .unwrap();
    // SAFETY: as in core_sdma_submit_relaxes_while_the_ring_is_full.
    let word = unsafe { AtomicU32::from_ptr(chunk.host_ptr.unwrap().as_ptr().cast()) };
    word.store(1, Ordering::Release);
    // The poll is 24 bytes, each NOP command 64 KiB: the engine waits at the poll.
    let poll = packet::poll_mem_eq(GpuVa(chunk.gpu_va.0), 0);
    assert_eq!(queue.submit(&poll).unwrap(), 24);
    let nops = vec![0u32; 16384];
    for i in 1..=15u64 {
        assert_eq!(queue.submit(&nops).unwrap(), 24 + i * 65536);
    }
    assert!(!queue.is_stopped());
    let q = queue.clone();
    let n = nops.clone();
    let blocked = std::thread::spawn(move || q.submit(&n));
    std::thread::sleep(Duration::from_millis(20));
    assert!(!blocked.is_finished(), "submit returned with the ring full");
    queue.mark_stopped();
    let e = blocked.join().unwrap().unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(e.detail().contains("has stopped"), "{e}");
    assert!(queue.is_stopped());
    let e = queue.submit(&poll).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    // Nothing more reached the ring: the engine, released, stops at the last NOP command.
    word.store(0, Ordering::Release);
    let t = Instant::now();
    while queue.read_pointer() != 24 + 15 * 65536 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the engine never caught up"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(queue);
    // SAFETY: the queue is destroyed; nothing uses the chunk.
    unsafe { platform.free_memory(&chunk) }.unwrap();
}

/// The CPUs an `emu-sdma-q*` thread of this process may run on, one set per thread.
fn sdma_engine_affinities() -> Vec<rustix::thread::CpuSet> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !name.starts_with("emu-sdma-q") {
            continue;
        }
        let Ok(tid) = t.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // A thread of another test may end between the listing and the look-up.
        if let Ok(set) = rustix::thread::sched_getaffinity(rustix::process::Pid::from_raw(tid)) {
            out.push(set);
        }
    }
    out
}

/// An SDMA queue's engine thread may run on the CPUs of the thread that created the queue,
/// no others: the placement the benches rely on (the `sdma_copy_64k` bench creates its queue
/// from CPU 1 and spins on CPU 0; an engine thread sharing the spinning thread's CPU runs
/// only when the scheduler preempts the spin, and each copy then waits a time slice).
#[test]
fn sdma_engine_thread_inherits_the_creators_cpus() {
    let all = rustix::thread::sched_getaffinity(None).unwrap();
    let Some(cpu) = (0..rustix::thread::CpuSet::MAX_CPU)
        .rev()
        .find(|&c| all.is_set(c))
        .filter(|_| all.count() >= 2)
    else {
        println!("skipped: the test may run on one CPU only, so no pinning shows");
        return;
    };
    let found = std::thread::spawn(move || {
        let mut one = rustix::thread::CpuSet::new();
        one.set(cpu);
        rustix::thread::sched_setaffinity(None, &one).unwrap();
        let s = setup();
        // The engine runs: a NOP moves the read pointer.
        s.run(&[0]);
        // Other tests' engine threads (same name, unpinned creators) may run anywhere.
        let pinned = sdma_engine_affinities()
            .iter()
            .filter(|set| set.count() == 1 && set.is_set(cpu))
            .count();
        drop(s);
        pinned
    })
    .join()
    .unwrap();
    assert_eq!(found, 1, "emu-sdma-q* threads pinned to CPU {cpu} alone");
}

/// A packet written across the ring's end (the engine reads the ring as one stream: its
/// first dwords at the end, the rest from offset 0) runs as written, in one batch with the
/// NOPs before it.
#[test]
fn a_packet_across_the_rings_end_runs() {
    let s = setup();
    let data = pattern(256, 11);
    s.put_bytes(SRC, &data);
    // First batch: NOPs up to 8 bytes before the ring's end.
    let nops = vec![0u32; (RING_BYTES as usize - 8) / 4];
    s.run(&nops);
    // Second batch, read across the end: two NOPs (the ring's last 8 bytes), then from offset
    // 0 a copy, a NOP with count 1 (2 dwords) and a second copy.
    let mut cmd = vec![0u32, 0];
    cmd.extend(copy_linear(VA + SRC, VA + DST, 100));
    cmd.extend([1 << 16, 0xdead]);
    cmd.extend(copy_linear(VA + SRC + 100, VA + DST + 100, 156));
    let before = s.d.execution_stats().sdma_packets;
    s.run(&cmd);
    assert_eq!(s.bytes(DST, 256), data);
    assert_eq!(
        s.word64(RPTR).load(Ordering::Acquire),
        u64::from(RING_BYTES) - 8 + 4 * cmd.len() as u64
    );
    assert_eq!(s.d.execution_stats().sdma_packets, before + 5);
    // A copy whose own dwords straddle the end: one NOP, then 3 of the copy's dwords before
    // the end and 4 after.
    let s2 = setup();
    s2.put_bytes(SRC, &data);
    s2.run(&vec![0u32; (RING_BYTES as usize - 16) / 4]);
    let mut cmd = vec![0u32];
    cmd.extend(copy_linear(VA + SRC, VA + DST, 256));
    s2.run(&cmd);
    assert_eq!(s2.bytes(DST, 256), data);
}

/// A field of `vega10_sdma_pkt_open.h`: `(value & mask) << shift`, the header's
/// `SDMA_PKT_*_<FIELD>(x)` macro.
fn pkt(value: u64, mask: u32, shift: u32) -> u32 {
    ((value as u32) & mask) << shift
}

/// `SDMA_PKT_HEADER_OP(op) | SDMA_PKT_HEADER_SUB_OP(sub_op)` (op mask 0xFF shift 0, sub_op
/// mask 0xFF shift 8).
fn sdma_header(op: u32, sub_op: u32) -> u32 {
    pkt(op.into(), 0xFF, 0) | pkt(sub_op.into(), 0xFF, 8)
}

/// The emulated engine and hsa-core's producer each checked against the kernel's own header,
/// not against each other: every packet is composed here from `vega10_sdma_pkt_open.h`'s
/// numbers (opcodes `SDMA_OP_*`, each field's `_offset` dword, `_mask` and `_shift`, written
/// out below), hsa-core's builders must produce exactly those dwords, and the engine must do
/// what the header says they mean.
#[test]
fn packets_composed_from_the_kernel_headers_values_run_and_match_the_producer() {
    use hsa_core::sdma::packet;
    use hsa_core::GpuVa;
    let s = setup();
    let data = pattern(256, 11);
    s.put_bytes(SRC, &data);
    let w = VA + WORDS;
    s.word64(WORDS + 8).store(3, Ordering::Release);

    // SDMA_PKT_COPY_LINEAR: HEADER op SDMA_OP_COPY (1), sub_op SDMA_SUBOP_COPY_LINEAR (0);
    // COUNT (offset 1) count mask 0x003FFFFF shift 0 = bytes - 1; PARAMETER (offset 2);
    // SRC_ADDR_LO/HI (offsets 3, 4), DST_ADDR_LO/HI (offsets 5, 6), masks 0xFFFFFFFF.
    let (src, dst) = (VA + SRC + 4, VA + DST + 8);
    let copy = [
        sdma_header(1, 0),
        pkt(100 - 1, 0x003F_FFFF, 0),
        0,
        pkt(src, 0xFFFF_FFFF, 0),
        pkt(src >> 32, 0xFFFF_FFFF, 0),
        pkt(dst, 0xFFFF_FFFF, 0),
        pkt(dst >> 32, 0xFFFF_FFFF, 0),
    ];
    assert_eq!(packet::copy_linear(GpuVa(dst), GpuVa(src), 100), copy);

    // SDMA_PKT_ATOMIC: HEADER op SDMA_OP_ATOMIC (10), atomic_op mask 0x7F shift 25
    // (ADD_RTN_64: 47); ADDR_LO/HI (1, 2), SRC_DATA_LO/HI (3, 4), CMP_DATA_LO/HI (5, 6),
    // LOOP_INTERVAL (7).
    let minus_one = (-1i64) as u64;
    let atomic = [
        sdma_header(10, 0) | pkt(47, 0x7F, 25),
        pkt(w + 8, 0xFFFF_FFFF, 0),
        pkt((w + 8) >> 32, 0xFFFF_FFFF, 0),
        pkt(minus_one, 0xFFFF_FFFF, 0),
        pkt(minus_one >> 32, 0xFFFF_FFFF, 0),
        0,
        0,
        0,
    ];
    assert_eq!(packet::atomic_add64(GpuVa(w + 8), -1), atomic);

    // SDMA_PKT_FENCE: op SDMA_OP_FENCE (5); ADDR_LO/HI (1, 2); DATA (3).
    let fence = [
        sdma_header(5, 0),
        pkt(w, 0xFFFF_FFFF, 0),
        pkt(w >> 32, 0xFFFF_FFFF, 0),
        0x5eed,
    ];
    assert_eq!(packet::fence(GpuVa(w), 0x5eed), fence);

    // SDMA_PKT_POLL_REGMEM: op SDMA_OP_POLL_REGMEM (8), func mask 0x7 shift 28 (3: equal),
    // mem_poll mask 0x1 shift 31; ADDR_LO/HI (1, 2); VALUE (3); MASK (4); DW5 interval mask
    // 0xFFFF shift 0, retry_count mask 0xFFF shift 16.
    let poll = [
        sdma_header(8, 0) | pkt(3, 0x7, 28) | pkt(1, 0x1, 31),
        pkt(w + 16, 0xFFFF_FFFF, 0),
        pkt((w + 16) >> 32, 0xFFFF_FFFF, 0),
        0,
        0xFFFF_FFFF,
        pkt(4, 0xFFFF, 0) | pkt(0xFFF, 0xFFF, 16),
    ];
    assert_eq!(packet::poll_mem_eq(GpuVa(w + 16), 0), poll);

    // SDMA_PKT_TIMESTAMP: op SDMA_OP_TIMESTAMP (13), sub_op SDMA_SUBOP_TIMESTAMP_GET_GLOBAL
    // (2); ADDR_LO/HI (1, 2).
    let stamp = [
        sdma_header(13, 2),
        pkt(w + 24, 0xFFFF_FFFF, 0),
        pkt((w + 24) >> 32, 0xFFFF_FFFF, 0),
    ];
    assert_eq!(packet::timestamp(GpuVa(w + 24)), stamp);

    // SDMA_PKT_TRAP: op SDMA_OP_TRAP (6); INT_CONTEXT (1) int_context mask 0x0FFFFFFF.
    let trap = [sdma_header(6, 0), pkt(0xf000_0007, 0x0FFF_FFFF, 0)];
    assert_eq!(packet::trap(0xf000_0007), trap);

    let t0 = gpu_clock(&s.d);
    s.run(&[&copy[..], &atomic, &fence, &poll, &stamp].concat());
    let t1 = gpu_clock(&s.d);
    let mut want = vec![0u8; 112];
    want[8..108].copy_from_slice(&data[4..104]);
    assert_eq!(s.bytes(DST, 112), want, "COPY_LINEAR moved count + 1 bytes");
    assert_eq!(
        s.word64(WORDS + 8).load(Ordering::Acquire),
        2,
        "ATOMIC added -1"
    );
    assert_eq!(
        s.word32(WORDS).load(Ordering::Acquire),
        0x5eed,
        "FENCE stored its data"
    );
    let ts = s.word64(WORDS + 24).load(Ordering::Acquire);
    assert!(t0 <= ts && ts <= t1, "TIMESTAMP {t0} <= {ts} <= {t1}");
}
