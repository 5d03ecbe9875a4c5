//! Queues on the emulated device: an AQL kernel dispatch written by hand into a ring, run by
//! the emulated CP through a registered host kernel, completing its signal (and its interrupt
//! event); a bad kernarg pointer stops the queue with MEMORY_FAULT, reported as amdkfd does:
//! the queue's inactive signal, a KFD memory event with the faulting address, and the
//! device's log. ROCR's PM4-IB vendor packets run their PM4 in the CP; an unknown PM4 opcode
//! stops the queue.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::abi::packet::{KernelDispatchPacket, PACKET_SIZE_BYTES};
use hsa_core::abi::queue::AmdQueue;
use hsa_core::abi::SignalHandle;
use hsa_core::queue::ring::{Ring, INVALID_HEADER_WORD};
use hsa_core::{GpuVa, Status};
use hsa_emu::device::{
    builtin_topology, EmulatedKfd, ExecutionMode, ExecutionStats, BUILTIN_GPU_ID, EVENT_PAGE_BYTES,
    KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::calls::{self, plain_ioctl};
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use rustix::io::Errno;
use zerocopy::IntoBytes;

/// 16 KiB of page-aligned memory the test owns and registers as USERPTR. Layout (bytes):
/// ring 0..1024 (16 packets), amd_queue_t 4096..4352, completion signal 8192..8256, the
/// queue's inactive signal 8256..8320, kernargs 8448..8464, src 12288..13312,
/// dst 13312..14336.
#[repr(C, align(4096))]
struct Arena([AtomicU64; 2048]);

const RING: u64 = 0;
const QUEUE: u64 = 4096;
const SIGNAL: u64 = 8192;
const INACTIVE: u64 = 8256;
const KERNARG: u64 = 8448;
const SRC: u64 = 12288;
const DST: u64 = 13312;
const N: u64 = 256;

impl Arena {
    fn new() -> Box<Arena> {
        Box::new(Arena(std::array::from_fn(|_| AtomicU64::new(0))))
    }
    fn base(&self) -> u64 {
        self as *const Arena as u64
    }
    fn word(&self, offset: u64) -> &AtomicU64 {
        &self.0[(offset / 8) as usize]
    }
}

const KERNEL_OBJECT: u64 = 0x7f00_1234_0000;

/// Field order matters: `d` drops (destroying the queue and the USERPTR allocation, joining
/// the CP thread) before `arena`, whose memory the device uses until then.
struct Setup {
    d: Arc<EmulatedKfd>,
    arena: Box<Arena>,
    handle: u64,
    queue_id: u32,
    doorbell: NonNull<u64>,
    ring: Ring,
}

fn setup() -> Setup {
    setup_with(builtin_topology())
}

fn setup_with(topology: hsa_linux::topology::Topology) -> Setup {
    setup_full(topology, None)
}

/// `setup_with`; with `ctx_save_area` (an arena offset), the process enables its runtime
/// first (RUNTIME_ENABLE, as ROCR 7 does before its first queue) and the queue is created
/// with its context save area there.
fn setup_full(topology: hsa_linux::topology::Topology, ctx_save_area: Option<u64>) -> Setup {
    let d = EmulatedKfd::new(topology).unwrap();
    if ctx_save_area.is_some() {
        let mut a = RuntimeEnableArgs {
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
            ..Default::default()
        };
        // SAFETY: the argument carries no pointer the device follows (r_debug is 0).
        unsafe { d.ioctl(AMDKFD_IOC_RUNTIME_ENABLE, a.as_mut_bytes()) }.unwrap();
    }
    // These tests are about the CP and host implementations: the kernel object is not a
    // real kernel descriptor.
    d.set_execution_mode(ExecutionMode::HostOnly);
    let arena = Arena::new();
    let base = arena.base();
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: base,
        size: 16384,
        handle: 0,
        mmap_offset: base,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };
    // SAFETY: the arena is 16 KiB of page-aligned memory the test owns, reached only through
    // atomics (AtomicU64 words) and the Ring, and it outlives the device (Setup's field order),
    // so it stays mapped until the allocation is freed.
    unsafe { calls::alloc_userptr_memory_of_gpu(&*d, &mut a) }.unwrap();
    assert_eq!(
        calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );

    // SAFETY: the arena outlives the Ring (both live in Setup, the arena boxed, and the Ring is
    // dropped with it); 1024 bytes at offset 0 are 16 64-byte slots, 64-aligned; the
    // amd_queue_t at 4096 is 256 bytes, 64-aligned; slot headers and indices are only
    // accessed atomically (here and by the emulated CP).
    let ring = unsafe {
        Ring::new(
            NonNull::new((base + RING) as *mut u8).unwrap(),
            16,
            NonNull::new((base + QUEUE) as *mut AmdQueue).unwrap(),
        )
    };
    // As ROCR does before creating the queue: amd_queue_t.queue_inactive_signal names a user
    // signal (kind 1, value 0) the CP sets when it stops the queue; every slot starts INVALID.
    arena.word(INACTIVE).store(1, Ordering::Relaxed);
    arena
        .word(QUEUE + std::mem::offset_of!(AmdQueue, queue_inactive_signal) as u64)
        .store(base + INACTIVE, Ordering::Release);
    for i in 0..16 {
        ring.header_word(i)
            .store(INVALID_HEADER_WORD, Ordering::Release);
    }
    let mut q = CreateQueueArgs {
        ring_base_address: base + RING,
        write_pointer_address: base + QUEUE + 56,
        read_pointer_address: base + QUEUE + 128,
        ring_size: 1024,
        gpu_id: BUILTIN_GPU_ID,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        queue_priority: 7,
        ctx_save_restore_address: ctx_save_area.map_or(0, |off| base + off),
        ctx_save_restore_size: if ctx_save_area.is_some() { 1024 } else { 0 },
        ctl_stack_size: if ctx_save_area.is_some() { 512 } else { 0 },
        ..Default::default()
    };
    // SAFETY: the ring and the amd_queue_t are in the arena, registered and mapped to the GPU
    // above, alive until after the device (Setup's field order), and their shared words are
    // accessed only atomically (AtomicU64 words, the Ring).
    unsafe { calls::create_queue(&*d, &mut q) }.unwrap();
    assert_eq!(
        q.doorbell_offset & KFD_MMAP_TYPE_MASK,
        KFD_MMAP_TYPE_DOORBELL
    );
    assert_eq!(kfd_mmap_get_gpu_id(q.doorbell_offset), BUILTIN_GPU_ID);
    let page_off = q.doorbell_offset & !0x1fff;
    let page = calls::mmap(&*d, MapTarget::Kfd, page_off, 8192).unwrap();
    let doorbell = NonNull::new(
        page.as_ptr()
            .wrapping_add((q.doorbell_offset & 0x1fff) as usize)
            .cast::<u64>(),
    )
    .unwrap();
    d.register_kernel(GpuVa(KERNEL_OBJECT), "vector_copy", |ctx| {
        let src = ctx.kernarg_u64(0)?;
        let dst = ctx.kernarg_u64(8)?;
        for [x, _, _] in ctx.work_items() {
            let v: u32 = ctx.read(src + 4 * u64::from(x))?;
            ctx.write(dst + 4 * u64::from(x), v)?;
        }
        Ok(())
    })
    .unwrap();
    Setup {
        d,
        arena,
        handle: a.handle,
        queue_id: q.queue_id,
        doorbell,
        ring,
    }
}

impl Setup {
    fn dispatch(&self, index: u64, kernarg: u64, signal_value: i64) {
        self.dispatch_kernel(index, kernarg, signal_value, KERNEL_OBJECT);
    }

    fn dispatch_kernel(&self, index: u64, kernarg: u64, signal_value: i64, kernel_object: u64) {
        let base = self.arena.base();
        self.arena
            .word(SIGNAL + 8)
            .store(signal_value as u64, Ordering::Release);
        let p = KernelDispatchPacket {
            header: 0,
            setup: 1,
            workgroup_size_x: 64,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            grid_size_x: N as u32,
            grid_size_y: 1,
            grid_size_z: 1,
            kernel_object,
            kernarg_address: kernarg,
            completion_signal: SignalHandle(base + SIGNAL),
            ..Default::default()
        };
        let mut bytes = [0u8; PACKET_SIZE_BYTES];
        bytes.copy_from_slice(p.as_bytes());
        // SAFETY: single producer; slot `index` was never used or its packet was consumed
        // (the test waits for each completion), so its header is INVALID/zero and the CP
        // does not read the body.
        unsafe { self.ring.write_body(index, &bytes) };
        self.ring.write_index().store(index + 1, Ordering::Release);
        // type KERNEL_DISPATCH (2), barrier, system acquire and release (2 << 9, 2 << 11);
        // setup (dimensions 1) in the high half.
        let header: u32 = 2 | (1 << 8) | (2 << 9) | (2 << 11);
        self.ring.publish(index, header | (1 << 16));
        // The doorbell: a store of the packet index, nothing else (the CP watches the word).
        // SAFETY: `doorbell` points into the doorbell page mapping the device returned (8-byte
        // aligned, mapped for the process's life); the emulated device never reads it
        // non-atomically.
        let bell = unsafe { AtomicU64::from_ptr(self.doorbell.as_ptr()) };
        bell.store(index, Ordering::Release);
    }

    fn wait_signal_zero(&self) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if self.arena.word(SIGNAL + 8).load(Ordering::Acquire) == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }
}

/// Creates a KFD event of `event_type` (a memory or hardware-exception event, as ROCR makes
/// one of each at start-up); its id.
fn exception_event(d: &EmulatedKfd, event_type: u32) -> u32 {
    let mut ce = CreateEventArgs {
        event_type,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(d, &mut ce).unwrap();
    assert!(ce.event_id >= hsa_emu::device::FIRST_NONSIGNAL_EVENT_ID);
    ce.event_id
}

/// Waits up to 10 s for either of the memory and hardware-exception events; the entries as
/// WAIT_EVENTS filled them.
fn wait_exception(d: &EmulatedKfd, memory: u32, hw: u32) -> [EventData; 2] {
    let mut data = [memory, hw].map(|event_id| EventData {
        event_id,
        ..Default::default()
    });
    let r = calls::wait_events(d, &mut data, false, 10_000).unwrap();
    assert_eq!(
        r, KFD_IOC_WAIT_RESULT_COMPLETE,
        "no exception event within 10 s"
    );
    data
}

fn wait_event(d: &EmulatedKfd, id: u32, timeout_ms: u32) -> u32 {
    let mut data = [EventData {
        event_id: id,
        ..Default::default()
    }];
    calls::wait_events(d, &mut data, false, timeout_ms).unwrap()
}

#[test]
fn kernel_dispatch_runs_the_host_kernel_and_completes_the_signal() {
    let s = setup();
    let base = s.arena.base();
    for i in 0..N {
        let w = s.arena.word(SRC + 8 * (i / 2));
        w.fetch_or((i * 3 + 1) << (32 * (i % 2)), Ordering::Relaxed);
    }
    s.arena.word(KERNARG).store(base + SRC, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);

    // An interrupt signal: its mailbox is the event's slot in the event page.
    let mut ce = CreateEventArgs {
        event_type: KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut ce).unwrap();
    let page = calls::mmap(
        &*s.d,
        MapTarget::Kfd,
        ce.event_page_offset,
        EVENT_PAGE_BYTES as usize,
    )
    .unwrap();
    let mailbox = page.as_ptr() as u64 + 8 * u64::from(ce.event_slot_index);
    s.arena.word(SIGNAL + 16).store(mailbox, Ordering::Relaxed);
    s.arena
        .word(SIGNAL + 24)
        .store(u64::from(ce.event_id), Ordering::Relaxed);

    s.dispatch(0, base + KERNARG, 1);
    assert!(s.wait_signal_zero(), "completion signal never reached 0");
    for i in 0..N {
        let w = s.arena.word(DST + 8 * (i / 2)).load(Ordering::Acquire);
        let v = (w >> (32 * (i % 2))) as u32;
        assert_eq!(v, i as u32 * 3 + 1, "dst[{i}]");
    }
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 1);
    // The slot is INVALID again.
    assert_eq!(s.ring.header_word(0).load(Ordering::Acquire) & 0xff, 1);
    // The completion raised the event through its mailbox.
    assert_eq!(
        wait_event(&s.d, ce.event_id, 5000),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    assert_eq!(
        wait_event(&s.d, ce.event_id, 0),
        KFD_IOC_WAIT_RESULT_TIMEOUT
    );

    // The ring's memory cannot be freed under the live queue.
    let mut f = FreeMemoryOfGpuArgs { handle: s.handle };
    assert_eq!(plain_ioctl(&*s.d, &mut f), Err(Errno::BUSY));
    let mut dq = DestroyQueueArgs {
        queue_id: s.queue_id,
        pad: 0,
    };
    plain_ioctl(&*s.d, &mut dq).unwrap();
    assert_eq!(plain_ioctl(&*s.d, &mut dq), Err(Errno::INVAL));
    plain_ioctl(&*s.d, &mut f).unwrap();
    let mut de = DestroyEventArgs {
        event_id: ce.event_id,
        pad: 0,
    };
    plain_ioctl(&*s.d, &mut de).unwrap();
    assert_eq!(s.d.live_handles(), Default::default());
    assert_eq!(s.d.queue_error(s.queue_id), None, "no error expected");
    assert_eq!(s.arena.word(INACTIVE + 8).load(Ordering::Acquire), 0);
}

/// tinygrad never writes INVALID into its AQL ring's headers: its slots past the write index
/// are zero, and a zero header reads as a VENDOR_SPECIFIC packet of AmdFormat 0. The CP takes
/// packets only up to its write pointer (`write_dispatch_id`, or the doorbell's packet
/// index): zeroed slots there are not packets, and a dispatch written into one later runs.
/// (The emulated CP stopped the queue with INVALID_PACKET_FORMAT, "AmdFormat (vendor packet
/// byte 2) is 0", before it bounded its reads by the write index: tinygrad's `AMD_AQL=1`.)
#[test]
fn zeroed_slots_past_the_write_index_are_not_packets() {
    let s = setup();
    let base = s.arena.base();
    for i in 0..N {
        let w = s.arena.word(SRC + 8 * (i / 2));
        w.fetch_or((i * 5 + 2) << (32 * (i % 2)), Ordering::Relaxed);
    }
    s.arena.word(KERNARG).store(base + SRC, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    for slot in 0..4 {
        s.ring.header_word(slot).store(0, Ordering::Release);
    }
    // Time for a CP that took header 0 as a packet to do so.
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.d.queue_error(s.queue_id), None);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 0);
    s.dispatch(0, base + KERNARG, 1);
    assert!(s.wait_signal_zero(), "completion signal never reached 0");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.d.queue_error(s.queue_id), None);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 1);
    assert_eq!(s.ring.header_word(1).load(Ordering::Acquire), 0);
    // The next slot, still zero, takes the next dispatch.
    s.dispatch(1, base + KERNARG, 1);
    assert!(
        s.wait_signal_zero(),
        "second completion signal never reached 0"
    );
    assert_eq!(s.d.queue_error(s.queue_id), None);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 2);
    for i in 0..N {
        let w = s.arena.word(DST + 8 * (i / 2)).load(Ordering::Acquire);
        assert_eq!((w >> (32 * (i % 2))) as u32, i as u32 * 5 + 2, "dst[{i}]");
    }
}

#[test]
fn bad_kernarg_pointer_is_a_memory_fault_through_the_memory_event() {
    let s = setup();
    let base = s.arena.base();
    let memory_event = exception_event(&s.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
    s.arena
        .word(KERNARG)
        .store(0xdead_0000_0000, Ordering::Relaxed); // src: wild pointer
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    s.dispatch(0, base + KERNARG, 1);
    // As amdkfd reports it: the memory event fires with the faulting address and the GPU
    // (kfd_hsa_memory_exception_data), and the queue's inactive signal holds the CP's code
    // for a memory violation (0x2000_0000) with the status above it.
    let [m, h] = wait_exception(&s.d, memory_event, hw_event);
    assert_eq!(
        s.arena.word(INACTIVE + 8).load(Ordering::Acquire),
        0x2b_2000_0000
    );
    let fault = m.memory_exception();
    assert_eq!(fault.va, 0xdead_0000_0000);
    assert_eq!(fault.gpu_id, BUILTIN_GPU_ID);
    assert_eq!(
        (
            fault.failure.not_present,
            fault.failure.read_only,
            fault.failure.no_execute,
            fault.failure.imprecise
        ),
        (1, 0, 0, 0)
    );
    assert_eq!(fault.error_type, KFD_MEM_ERR_NO_RAS);
    assert_eq!(h.hw_exception(), HsaHwExceptionData::default(), "not fired");
    assert_eq!(
        wait_event(&s.d, hw_event, 0),
        KFD_IOC_WAIT_RESULT_TIMEOUT,
        "a memory fault is no hardware exception"
    );
    // The device's own log has the whole detail.
    let logged = s.d.queue_error(s.queue_id).expect("logged");
    assert_eq!(logged.status(), Status::MemoryFault);
    assert!(
        logged.detail().to_string().contains("0xdead00000000"),
        "{logged}"
    );
    // The queue stopped: the signal was not decremented, the packet not consumed.
    assert_eq!(s.arena.word(SIGNAL + 8).load(Ordering::Acquire), 1);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 0);

    // A kernel object nothing was registered for is an INVALID_PACKET_FORMAT on a fresh
    // queue, naming the object and what is registered.
    let s3 = setup();
    let memory_event = exception_event(&s3.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s3.d, KFD_IOC_EVENT_HW_EXCEPTION);
    assert_eq!(s3.d.queue_error(s3.queue_id), None);
    s3.dispatch_kernel(0, s3.arena.base() + KERNARG, 1, KERNEL_OBJECT + 64);
    // Not a memory fault: the hardware-exception event fires, with the GPU.
    let [m, h] = wait_exception(&s3.d, memory_event, hw_event);
    assert_eq!(
        m.memory_exception(),
        HsaMemoryExceptionData::default(),
        "not fired"
    );
    assert_eq!(
        h.hw_exception(),
        HsaHwExceptionData {
            reset_type: KFD_HW_EXCEPTION_PER_ENGINE_RESET,
            reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
            memory_lost: 0,
            gpu_id: BUILTIN_GPU_ID,
        }
    );
    assert_eq!(
        s3.arena.word(INACTIVE + 8).load(Ordering::Acquire),
        0x1009_0000_0020
    );
    let logged = s3.d.queue_error(s3.queue_id).expect("logged");
    assert_eq!(logged.status(), Status::InvalidPacketFormat);
    assert!(
        logged.detail().to_string().contains(
            "kernel object 0x7f0012340040 has no host implementation on the emulated device \
             (registered: vector_copy at 0x7f0012340000)"
        ),
        "{logged}"
    );
    // Only a kernel descriptor's address (non-zero, 64-byte aligned) can be registered.
    for bad in [0, KERNEL_OBJECT + 8] {
        let e =
            s3.d.register_kernel(GpuVa(bad), "bad", |_| Ok(()))
                .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains(&format!("{bad:#x}")), "{e}");
    }
    // The process is alive and the device still answers.
    let mut v = GetVersionArgs::default();
    plain_ioctl(&*s.d, &mut v).unwrap();
}

/// For a process whose runtime is enabled, a queue error reaches the runtime as amdkfd sends
/// an exception (`kfd_send_exception_to_runtime`): its `KFD_EC_MASK` bit (a kernel object
/// the device cannot run: `INVALID_PACKET_FORMAT`, `EC_QUEUE_PACKET_UNSUPPORTED` = 20) ORed
/// into the word the context save area header's `err_payload_addr` names, then its
/// `err_event_id` set; no hardware exception. A header naming no signal event leaves the
/// report to the hardware-exception event, as before.
#[test]
fn a_queue_error_reaches_an_enabled_runtime_as_an_exception() {
    const CSA: u64 = 9216;
    const PAYLOAD: u64 = 9472;
    for good_event in [true, false] {
        let s = setup_full(builtin_topology(), Some(CSA));
        let base = s.arena.base();
        let mut ce = CreateEventArgs {
            event_type: KFD_IOC_EVENT_SIGNAL,
            auto_reset: 1,
            ..Default::default()
        };
        plain_ioctl(&*s.d, &mut ce).unwrap();
        let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
        // struct kfd_context_save_area_header: err_payload_addr at byte 24, err_event_id at 32.
        s.arena
            .word(CSA + 24)
            .store(base + PAYLOAD, Ordering::Relaxed);
        let event_id = if good_event { ce.event_id } else { 9999 };
        s.arena
            .word(CSA + 32)
            .store(u64::from(event_id), Ordering::Relaxed);
        s.arena.word(PAYLOAD).store(1 << 40, Ordering::Release);
        s.dispatch_kernel(0, base + KERNARG, 1, KERNEL_OBJECT + 64);
        if good_event {
            assert_eq!(
                wait_event(&s.d, ce.event_id, 10_000),
                KFD_IOC_WAIT_RESULT_COMPLETE
            );
            assert_eq!(
                s.arena.word(PAYLOAD).load(Ordering::Acquire),
                1 << 40 | kfd_ec_mask(EC_QUEUE_PACKET_UNSUPPORTED)
            );
            assert_eq!(kfd_ec_mask(EC_QUEUE_PACKET_UNSUPPORTED), 1 << 19);
            assert_eq!(
                wait_event(&s.d, hw_event, 200),
                KFD_IOC_WAIT_RESULT_TIMEOUT,
                "the runtime took the exception"
            );
        } else {
            assert_eq!(
                wait_event(&s.d, hw_event, 10_000),
                KFD_IOC_WAIT_RESULT_COMPLETE
            );
        }
        let logged = s.d.queue_error(s.queue_id).expect("logged");
        assert_eq!(logged.status(), Status::InvalidPacketFormat);
    }
}

/// RUNTIME_ENABLE once the process has a queue is `EEXIST` (amdkfd's `runtime_enable`:
/// "user queues already active"); disabling still succeeds, and with the queue gone enabling
/// works.
#[test]
fn runtime_enable_after_a_queue_is_eexist() {
    let s = setup();
    let run = |mode_mask: u32| {
        let mut a = RuntimeEnableArgs {
            mode_mask,
            ..Default::default()
        };
        // SAFETY: the argument carries no pointer the device follows (r_debug is 0).
        unsafe { s.d.ioctl(AMDKFD_IOC_RUNTIME_ENABLE, a.as_mut_bytes()) }
    };
    assert_eq!(run(KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK), Err(Errno::EXIST));
    assert_eq!(run(0), Ok(()));
    let mut q = DestroyQueueArgs {
        queue_id: s.queue_id,
        pad: 0,
    };
    plain_ioctl(&*s.d, &mut q).unwrap();
    assert_eq!(run(KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK), Ok(()));
}

#[test]
fn create_queue_checks_its_arguments() {
    let s = setup();
    let base = s.arena.base();
    let good = CreateQueueArgs {
        ring_base_address: base + RING,
        write_pointer_address: base + QUEUE + 56,
        read_pointer_address: base + QUEUE + 128,
        ring_size: 1024,
        gpu_id: BUILTIN_GPU_ID,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        queue_priority: 7,
        ..Default::default()
    };
    let try_create = |f: &dyn Fn(&mut CreateQueueArgs)| {
        let mut q = good;
        f(&mut q);
        // SAFETY: EmulatedKfd uses a queue's addresses only inside allocations mapped to its
        // GPU (its ioctl's `# Safety`); the good ones are the arena's, as in `setup`.
        unsafe { s.d.ioctl(AMDKFD_IOC_CREATE_QUEUE, q.as_mut_bytes()) }
    };
    // A queue type amdkfd does not know (PM4 compute queues are emulated: tests/pm4_queue.rs)
    // is set_queue_properties_from_user's ENOTSUPP, the kernel-internal 524. Type 4 is 1.17's
    // SDMA_BY_ENG_ID: through the 1.11 argument its engine id is 0 (zero-extended).
    assert_eq!(
        try_create(&|q| q.queue_type = 5),
        Err(Errno::from_raw_os_error(524))
    );
    let mut by_engine = CreateQueueArgs {
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        ..good
    };
    // SAFETY: as try_create's.
    unsafe { s.d.ioctl(AMDKFD_IOC_CREATE_QUEUE, by_engine.as_mut_bytes()) }.unwrap();
    plain_ioctl(
        &*s.d,
        &mut DestroyQueueArgs {
            queue_id: by_engine.queue_id,
            pad: 0,
        },
    )
    .unwrap();
    assert_eq!(try_create(&|q| q.ring_size = 1536), Err(Errno::INVAL));
    assert_eq!(try_create(&|q| q.gpu_id = 7), Err(Errno::INVAL));
    assert_eq!(try_create(&|q| q.queue_percentage = 101), Err(Errno::INVAL));
    // Bits 8-15 of queue_percentage are the PM4 target XCC, not part of the percentage.
    assert_eq!(
        try_create(&|q| q.queue_percentage = 101 | 1 << 8),
        Err(Errno::INVAL)
    );
    // A ring smaller than KFD_MIN_QUEUE_RING_SIZE (or 0) is raised to 1024 bytes and the
    // ioctl writes the size back, as set_queue_properties_from_user does; the percentage with
    // an XCC id in bits 8-15 is accepted.
    for (ring_size, percentage) in [(512, 100), (0, 100 | 1 << 8)] {
        let mut q = good;
        q.ring_size = ring_size;
        q.queue_percentage = percentage;
        // SAFETY: as for `setup`'s queue: the same arena memory.
        unsafe { calls::create_queue(&*s.d, &mut q) }.unwrap();
        assert_eq!(q.ring_size, 1024);
        let mut dq = DestroyQueueArgs {
            queue_id: q.queue_id,
            pad: 0,
        };
        plain_ioctl(&*s.d, &mut dq).unwrap();
    }
    assert_eq!(
        try_create(&|q| q.ring_base_address = 0x6000_0000_0000),
        Err(Errno::INVAL)
    );
    assert_eq!(try_create(&|q| q.ring_base_address = 0), Err(Errno::FAULT));
    // 126 more queues fit (amdkfd's 127 per process on a gfx90a; it used to stop at the
    // 24 of num_cp_queues, the hardware slots amdkfd's scheduler multiplexes), the 128th
    // does not.
    let mut ids = Vec::new();
    for _ in 0..126 {
        let mut q = good;
        // SAFETY: as for `setup`'s queue: the same arena memory.
        unsafe { calls::create_queue(&*s.d, &mut q) }.unwrap();
        ids.push(q.queue_id);
    }
    assert_eq!(try_create(&|_| {}), Err(Errno::NOSPC));
    assert_eq!(s.d.live_handles().queues, 127);
    for id in ids {
        let mut dq = DestroyQueueArgs {
            queue_id: id,
            pad: 0,
        };
        plain_ioctl(&*s.d, &mut dq).unwrap();
    }
    let mut u = UpdateQueueArgs {
        ring_base_address: base,
        queue_id: s.queue_id,
        ring_size: 1024,
        queue_percentage: 50,
        queue_priority: 3,
    };
    // SAFETY: the ring is the queue's own (EmulatedKfd refuses to move a ring and uses
    // UPDATE_QUEUE's address for nothing else).
    unsafe { s.d.ioctl(AMDKFD_IOC_UPDATE_QUEUE, u.as_mut_bytes()) }.unwrap();
    // The XCC id in bits 8-15 is not part of the percentage; a ring size of 0 is the
    // queue's 1024 bytes (raised to KFD_MIN_QUEUE_RING_SIZE, as kfd_ioctl_update_queue).
    u.queue_percentage = 50 | 1 << 8;
    u.ring_size = 0;
    // SAFETY: as above.
    unsafe { s.d.ioctl(AMDKFD_IOC_UPDATE_QUEUE, u.as_mut_bytes()) }.unwrap();
    for edit in [
        |u: &mut UpdateQueueArgs| u.queue_priority = 16,
        |u: &mut UpdateQueueArgs| u.queue_percentage = 101 | 1 << 8,
        |u: &mut UpdateQueueArgs| u.ring_size = 1536,
        |u: &mut UpdateQueueArgs| u.ring_size = 2048,
    ] {
        let mut bad = u;
        edit(&mut bad);
        assert_eq!(
            // SAFETY: as above.
            unsafe { s.d.ioctl(AMDKFD_IOC_UPDATE_QUEUE, bad.as_mut_bytes()) },
            Err(Errno::INVAL),
            "{bad:?}"
        );
    }
    let mask = [u32::MAX; 4];
    calls::set_cu_mask(&*s.d, s.queue_id, &mask).unwrap();
    let mut cu = SetCuMaskArgs {
        queue_id: s.queue_id,
        num_cu_mask: 33,
        cu_mask_ptr: mask.as_ptr() as u64,
    };
    assert_eq!(
        // SAFETY: the mask is `mask`, 4 words; 33 bits name at most 2 of them.
        unsafe { s.d.ioctl(AMDKFD_IOC_SET_CU_MASK, cu.as_mut_bytes()) },
        Err(Errno::INVAL)
    );
    assert_eq!(s.d.live_handles().queues, 1);
}

/// SET_CU_MASK with `mask`'s words as the user's mask.
fn set_cu_mask_raw(s: &Setup, num_cu_mask: u32, ptr: u64) -> Result<(), Errno> {
    let mut cu = SetCuMaskArgs {
        queue_id: s.queue_id,
        num_cu_mask,
        cu_mask_ptr: ptr,
    };
    // SAFETY: the emulated device only reads `num_cu_mask / 32` words at `ptr` (checked by
    // the device: an unmapped pointer is EFAULT).
    unsafe { s.d.ioctl(AMDKFD_IOC_SET_CU_MASK, cu.as_mut_bytes()) }
}

/// SET_CU_MASK maps the user's CU mask onto the HQD's per-engine enable masks
/// (`COMPUTE_STATIC_THREAD_MGMT_SE*`, bit `cu + 16 * sh`) as amdkfd's
/// `mqd_symmetrically_map_cu_mask` documents for gfx9: user bit i is the i-th CU in the order
/// (CU 0 of SH 0 of SE 0, 1, ..., CU 0 of SH 1 of every SE, CU 1, ...), skipping arrays that
/// have no such CU; bits past the GPU's CU count are dropped. The expected words are worked
/// out here by hand from that rule.
#[test]
fn cu_mask_maps_symmetrically_onto_engines_and_arrays() {
    // The built-in MI210 shape: 8 engines of one array of 13 CUs (104).
    let s = setup();
    assert_eq!(
        s.d.compute_static_thread_mgmt(s.queue_id),
        Some([0x1FFF; 8])
    );
    // Bits 0, 9, 103 and 104: i = 9 is SE 1 CU 1, i = 103 SE 7 CU 12, 104 is past the CUs.
    let mask = [1 | 1 << 9, 0, 0, 1 << 7 | 1 << 8];
    calls::set_cu_mask(&*s.d, s.queue_id, &mask).unwrap();
    assert_eq!(
        s.d.compute_static_thread_mgmt(s.queue_id),
        Some([1, 1 << 1, 0, 0, 0, 0, 0, 1 << 12])
    );
    // As amdkfd on gfx9: a mask naming no CU of the GPU is taken (the queue then cannot
    // launch a work-group), all zero or only past the CU count.
    calls::set_cu_mask(&*s.d, s.queue_id, &[0; 4]).unwrap();
    assert_eq!(s.d.compute_static_thread_mgmt(s.queue_id), Some([0; 8]));
    calls::set_cu_mask(&*s.d, s.queue_id, &[0, 0, 0, !0xFF]).unwrap();
    assert_eq!(s.d.compute_static_thread_mgmt(s.queue_id), Some([0; 8]));
    // kfd_ioctl_set_cu_mask's own checks: a count of 0 or not a multiple of 32, an unmapped
    // mask, an unknown queue.
    let all = [u32::MAX; 4];
    assert_eq!(
        set_cu_mask_raw(&s, 0, all.as_ptr() as u64),
        Err(Errno::INVAL)
    );
    assert_eq!(
        set_cu_mask_raw(&s, 40, all.as_ptr() as u64),
        Err(Errno::INVAL)
    );
    assert_eq!(set_cu_mask_raw(&s, 128, 8), Err(Errno::FAULT));
    assert_eq!(s.d.compute_static_thread_mgmt(s.queue_id), Some([0; 8]));
    calls::set_cu_mask(&*s.d, s.queue_id, &all).unwrap();
    assert_eq!(
        s.d.compute_static_thread_mgmt(s.queue_id),
        Some([0x1FFF; 8])
    );
    assert!(calls::set_cu_mask(&*s.d, s.queue_id + 1, &all).is_err());
    assert_eq!(s.d.compute_static_thread_mgmt(s.queue_id + 1), None);

    // 4 engines of 2 arrays, 60 CUs: SE0 and SE1 have 8 CUs an array, SE2 and SE3 7.
    let mut t = builtin_topology();
    let g = &mut t.nodes[1].properties;
    g.array_count = 8;
    g.simd_arrays_per_engine = 2;
    g.simd_count = 60 * 4;
    let s = setup_with(t);
    assert_eq!(
        s.d.compute_static_thread_mgmt(s.queue_id),
        Some([
            0x00FF_00FF,
            0x00FF_00FF,
            0x007F_007F,
            0x007F_007F,
            0,
            0,
            0,
            0
        ])
    );
    // i = 0: SE0 SH0 CU0. i = 5: CU 0's second round (SH 1), SE 1. CU 7 exists on SE0 and
    // SE1 only: i = 56, 57 are SE0, SE1 of SH 0; 58, 59 SE0, SE1 of SH 1.
    calls::set_cu_mask(
        &*s.d,
        s.queue_id,
        &[1 | 1 << 5, 1 << (57 - 32) | 1 << (59 - 32)],
    )
    .unwrap();
    assert_eq!(
        s.d.compute_static_thread_mgmt(s.queue_id),
        Some([1, 1 << 16 | 1 << 7 | 1 << 23, 0, 0, 0, 0, 0, 0])
    );
}

/// `HSA_XNACK` (here through `LinuxPlatform::with_xnack`) sets the process's XNACK mode with
/// `SET_XNACK_MODE`; the agents' ISA follows it, and KFD refuses a change while queues exist.
#[test]
fn xnack_mode_follows_the_request_and_names_the_isa() {
    use hsa_core::platform::TopologySource;
    use hsa_core::runtime::Runtime;
    use hsa_linux::kfd::abi::SetXnackModeArgs;
    use hsa_linux::LinuxPlatform;

    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let topology = emulated.topology().clone();
    let query = || {
        let mut a = SetXnackModeArgs { xnack_enabled: -1 };
        plain_ioctl(&*emulated, &mut a).unwrap();
        a.xnack_enabled
    };
    assert_eq!(query(), 0, "the kernel default: off");
    let off = LinuxPlatform::with_xnack(emulated.clone(), topology.clone(), None).unwrap();
    assert!(!off.xnack_enabled());
    let rt = Runtime::new(Arc::new(off)).unwrap();
    let isa = rt.first_gpu().unwrap().isa().unwrap().isa_name();
    assert_eq!(isa, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    drop(rt);

    let on = LinuxPlatform::with_xnack(emulated.clone(), topology.clone(), Some(true)).unwrap();
    assert!(on.xnack_enabled());
    assert_eq!(query(), 1);
    let rt = Runtime::new(Arc::new(on)).unwrap();
    let gpu = rt.first_gpu().unwrap();
    assert_eq!(
        gpu.isa().unwrap().isa_name(),
        "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+"
    );
    // With a queue alive the mode cannot change: the open fails and names why.
    let config = hsa_core::queue::QueueConfig::new(
        hsa_core::NodeId(gpu.node()),
        gpu.queue_min_size(),
        gpu.queue_min_size(),
        gpu.queue_max_size(),
    );
    let q = hsa_core::queue::AqlQueue::create(rt.platform(), &config).unwrap();
    let e = LinuxPlatform::with_xnack(emulated.clone(), topology, Some(false)).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .starts_with("HSA_XNACK=0: AMDKFD_IOC_SET_XNACK_MODE"),
        "{e}"
    );
    assert!(
        e.detail().to_string().contains("EBUSY") || e.detail().to_string().contains("busy"),
        "{e}"
    );
    assert_eq!(query(), 1, "unchanged");
    q.destroy().unwrap();
}

/// Where the PM4 tests put their indirect buffer and what it writes (free arena bytes).
const IB: u64 = 10240;
const PM4_OUT: u64 = 14336;

impl Setup {
    /// Stores `dwords` at arena offset `offset` (8-aligned), through the arena's words.
    fn put_dwords(&self, offset: u64, dwords: &[u32]) {
        for (k, pair) in dwords.chunks(2).enumerate() {
            let lo = u64::from(pair[0]);
            let hi = pair.get(1).map_or(0, |&d| u64::from(d));
            self.arena
                .word(offset + 8 * k as u64)
                .store(lo | hi << 32, Ordering::Relaxed);
        }
    }

    /// Submits ROCR's PM4-IB vendor packet (`AqlQueue::ExecutePM4` on gfx9) at `index`,
    /// calling the `size` dwords at arena offset `IB`, with the test's completion signal.
    fn submit_pm4_ib(&self, index: u64, size: u32) {
        let base = self.arena.base();
        let ib = base + IB;
        self.arena.word(SIGNAL + 8).store(1, Ordering::Release);
        let mut p = hsa_core::abi::packet::AmdAqlPm4IbPacket {
            ib_jump_cmd: [
                3 << 30 | 2 << 16 | 0x3f << 8,
                ib as u32,
                (ib >> 32) as u32,
                size | 1 << 23,
            ],
            dw_cnt_remain: 0xa,
            completion_signal: SignalHandle(base + SIGNAL),
            ..Default::default()
        };
        p.header.amd_format = 1;
        let mut bytes = [0u8; PACKET_SIZE_BYTES];
        bytes.copy_from_slice(p.as_bytes());
        // SAFETY: single producer; slot `index` was never used, so its header is INVALID and
        // the CP does not read the body.
        unsafe { self.ring.write_body(index, &bytes) };
        self.ring.write_index().store(index + 1, Ordering::Release);
        // Header 0 (VENDOR_SPECIFIC, no barrier, no fences), ven_hdr 1 in the high half.
        self.ring.publish(index, 1 << 16);
        // SAFETY: as in `dispatch_kernel`.
        let bell = unsafe { AtomicU64::from_ptr(self.doorbell.as_ptr()) };
        bell.store(index, Ordering::Release);
    }
}

/// ROCR 5.2 follows every code load with a PM4-IB vendor packet (`AMD_AQL_FORMAT_PM4_IB`)
/// whose INDIRECT_BUFFER calls an ACQUIRE_MEM. The emulated CP runs the PM4 of such a packet
/// (here ROCR's ACQUIRE_MEM, a WRITE_DATA and a RELEASE_MEM with 64-bit data, values
/// from the PM4 formats of `soc15d.h`) and completes it as any packet: signal decremented,
/// read index past it. (It stopped the queue with INVALID_PACKET_FORMAT before.)
#[test]
fn pm4_ib_vendor_packet_runs_its_indirect_buffer() {
    let s = setup();
    let out = s.arena.base() + PM4_OUT;
    let ib = [
        // ROCR's GpuAgent::InvalidateCodeCaches (gfx9): ACQUIRE_MEM, 7 dwords.
        0xc005_5800,
        1 << 29 | 1 << 27 | 1 << 23 | 1 << 18,
        0xffff_ffff,
        0xff,
        0,
        0,
        0,
        // WRITE_DATA (count 4: 6 dwords), DST_SEL 5 (memory), two data dwords.
        0xc004_3700,
        5 << 8,
        out as u32,
        (out >> 32) as u32,
        0x1111_2222,
        0x3333_4444,
        // RELEASE_MEM (8 dwords): EOP event, DATA_SEL 2 (64-bit data) at out + 8.
        0xc006_4900,
        0x14 | 5 << 8,
        2 << 29,
        (out + 8) as u32,
        ((out + 8) >> 32) as u32,
        0x7777_8888,
        0x5555_6666,
        0,
    ];
    s.put_dwords(IB, &ib);
    let before = s.d.execution_stats().pm4_packets;
    s.submit_pm4_ib(0, ib.len() as u32);
    assert!(s.wait_signal_zero(), "completion signal never reached 0");
    assert_eq!(s.d.queue_error(s.queue_id), None);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 1);
    assert_eq!(
        s.arena.word(PM4_OUT).load(Ordering::Acquire),
        0x3333_4444_1111_2222
    );
    assert_eq!(
        s.arena.word(PM4_OUT + 8).load(Ordering::Acquire),
        0x5555_6666_7777_8888
    );
    // The INDIRECT_BUFFER and the three packets in it.
    assert_eq!(s.d.execution_stats().pm4_packets - before, 4);
    // The queue goes on: a kernel dispatch after it runs.
    let base = s.arena.base();
    s.arena.word(KERNARG).store(base + SRC, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    s.dispatch(1, base + KERNARG, 1);
    assert!(
        s.wait_signal_zero(),
        "the dispatch after the PM4 never completed"
    );
}

/// An indirect buffer may cross from one buffer object into the next, as on the CP (its
/// fetches need the pages mapped in the GPU's VM, not one buffer object): here a WRITE_DATA
/// whose header and control dword are the arena's (USERPTR) last 8 bytes and whose address
/// and data are the first bytes of a GTT buffer object the test allocates at the device
/// address right after the arena. Moving the IB's start to the arena's end before the other
/// buffer exists faults at the first byte past the arena instead.
#[test]
fn pm4_indirect_buffer_spans_adjacent_allocations() {
    let s = setup();
    let base = s.arena.base();
    let arena_end = base + 16384;
    let out = base + PM4_OUT;
    let ib = [
        0xc004_3700u32,
        5 << 8,
        out as u32,
        (out >> 32) as u32,
        0xaaaa_5555,
        0x1234_abcd,
    ];
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: arena_end,
        size: 4096,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    // SAFETY: without USERPTR the argument carries no pointer.
    unsafe { s.d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) }.unwrap();
    assert_eq!(
        calls::map_memory_to_gpu(&*s.d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    let tail = calls::mmap(
        &*s.d,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        a.mmap_offset,
        4096,
    )
    .unwrap();
    s.put_dwords(16384 - 8, &ib[..2]);
    for (k, &d) in ib[2..].iter().enumerate() {
        // SAFETY: inside the live 4 KiB GTT mapping, 4-aligned; no packet runs meanwhile.
        unsafe { tail.as_ptr().cast::<u32>().add(k).write_volatile(d) };
    }
    // The packet's INDIRECT_BUFFER names arena offset IB: point it at the arena's end.
    let ib_va = arena_end - 8;
    s.arena.word(SIGNAL + 8).store(1, Ordering::Release);
    let mut p = hsa_core::abi::packet::AmdAqlPm4IbPacket {
        ib_jump_cmd: [
            3 << 30 | 2 << 16 | 0x3f << 8,
            ib_va as u32,
            (ib_va >> 32) as u32,
            ib.len() as u32 | 1 << 23,
        ],
        dw_cnt_remain: 0xa,
        completion_signal: SignalHandle(base + SIGNAL),
        ..Default::default()
    };
    p.header.amd_format = 1;
    let mut bytes = [0u8; PACKET_SIZE_BYTES];
    bytes.copy_from_slice(p.as_bytes());
    // SAFETY: single producer; slot 0 was never used, so its header is INVALID.
    unsafe { s.ring.write_body(0, &bytes) };
    s.ring.write_index().store(1, Ordering::Release);
    s.ring.publish(0, 1 << 16);
    // SAFETY: as in `dispatch_kernel`.
    let bell = unsafe { AtomicU64::from_ptr(s.doorbell.as_ptr()) };
    bell.store(0, Ordering::Release);
    assert!(s.wait_signal_zero(), "completion signal never reached 0");
    assert_eq!(s.d.queue_error(s.queue_id), None);
    assert_eq!(
        s.arena.word(PM4_OUT).load(Ordering::Acquire),
        0x1234_abcd_aaaa_5555
    );

    // Without the neighbour: a fault at its first byte, the IB's access named.
    let s = setup();
    let memory_event = exception_event(&s.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
    s.put_dwords(16384 - 8, &ib[..2]);
    let mut p2 = p;
    p2.completion_signal = SignalHandle(s.arena.base() + SIGNAL);
    let ib_va = s.arena.base() + 16384 - 8;
    p2.ib_jump_cmd[1] = ib_va as u32;
    p2.ib_jump_cmd[2] = (ib_va >> 32) as u32;
    s.arena.word(SIGNAL + 8).store(1, Ordering::Release);
    let mut bytes = [0u8; PACKET_SIZE_BYTES];
    bytes.copy_from_slice(p2.as_bytes());
    // SAFETY: as above.
    unsafe { s.ring.write_body(0, &bytes) };
    s.ring.write_index().store(1, Ordering::Release);
    s.ring.publish(0, 1 << 16);
    let [m, _] = wait_exception(&s.d, memory_event, hw_event);
    assert_eq!(m.memory_exception().va, s.arena.base() + 16384);
    let logged = s.d.queue_error(s.queue_id).expect("logged");
    assert_eq!(logged.status(), Status::MemoryFault);
    assert!(
        logged.detail().contains(&format!(
            "PM4 indirect buffer read at {ib_va:#x} (24 bytes): byte {:#x} is in no live \
             allocation",
            ib_va + 8
        )),
        "{logged}"
    );
}

/// A PM4 opcode the emulated CP does not execute (here SET_BASE, 0x11) stops the queue
/// at the vendor packet with INVALID_PACKET_FORMAT naming the opcode and where it is.
#[test]
fn unknown_pm4_opcode_stops_the_queue() {
    let s = setup();
    let memory_event = exception_event(&s.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
    s.put_dwords(IB, &[0xc000_1100, 0x16]);
    s.submit_pm4_ib(0, 2);
    let [_, h] = wait_exception(&s.d, memory_event, hw_event);
    assert_eq!(h.hw_exception().gpu_id, BUILTIN_GPU_ID);
    let logged = s.d.queue_error(s.queue_id).expect("logged");
    assert_eq!(logged.status(), Status::InvalidPacketFormat);
    let ib = s.arena.base() + IB;
    assert!(
        logged.detail().contains(&format!(
            "packet 0: PM4 at IB1 at {ib:#x}, dword 0 ({ib:#x}): opcode 0x11 (header \
             0xc0001100) is not one the emulated CP executes"
        )),
        "{logged}"
    );
    assert_eq!(s.arena.word(SIGNAL + 8).load(Ordering::Acquire), 1);
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 0);
    // The CP's code for a vendor packet it does not support (0x100, which ROCR reports as
    // INVALID_PACKET_FORMAT) with the status above it.
    assert_eq!(
        s.arena.word(INACTIVE + 8).load(Ordering::Acquire),
        0x1009_0000_0100
    );
}

/// 4 KiB of page-aligned memory for a hand-made kernel: its kernel descriptor at 0, its code
/// at [`CODE_OFFSET`].
#[repr(C, align(4096))]
struct CodePage([AtomicU64; 512]);

const CODE_OFFSET: u64 = 256;

impl CodePage {
    fn base(&self) -> u64 {
        self as *const CodePage as u64
    }

    /// Writes the code of a kernel that stores `value` to the address in its first kernarg
    /// ([`CodePage::write_code`]).
    fn write_kernel(&self, value: u32) {
        // llvm-mc-19 -mcpu=gfx90a: s_load_dwordx2 s[2:3], s[0:1], 0x0; s_waitcnt
        // lgkmcnt(0); v_mov_b32 v0, <value>; v_mov_b32 v1, 0; global_store_dword v1, v0,
        // s[2:3]; s_endpgm.
        self.write_code(&[
            0xC006_0080,
            0x0000_0000,
            0xBF8C_C07F,
            0x7E00_02FF,
            value,
            0x7E02_0280,
            0xDC70_8000,
            0x0002_0001,
            0xBF81_0000,
            0,
        ]);
    }

    /// Writes a kernel descriptor (AMDGPUUsage "Kernel Descriptor": entry offset at byte 16,
    /// COMPUTE_PGM_RSRC2 at 52 with USER_SGPR_COUNT 2 in bits 5:1, kernel_code_properties at
    /// 56 with ENABLE_SGPR_KERNARG_SEGMENT_PTR, bit 3: the kernarg pointer in s[0:1]) and
    /// `code` at its entry point.
    fn write_code(&self, code: &[u32]) {
        let mut bytes = [0u8; 4096];
        bytes[16..24].copy_from_slice(&CODE_OFFSET.to_le_bytes());
        bytes[52..56].copy_from_slice(&(2u32 << 1).to_le_bytes());
        bytes[56..58].copy_from_slice(&(1u16 << 3).to_le_bytes());
        for (i, w) in code.iter().enumerate() {
            let o = CODE_OFFSET as usize + 4 * i;
            bytes[o..o + 4].copy_from_slice(&w.to_le_bytes());
        }
        for (i, w) in self.0.iter().enumerate() {
            w.store(
                u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()),
                Ordering::Release,
            );
        }
    }

    /// Registers the page as USERPTR memory mapped to the GPU; its handle.
    fn register(&self, d: &EmulatedKfd) -> u64 {
        register_code_pages(std::slice::from_ref(self), d)
    }
}

/// Registers `pages` (contiguous) as one USERPTR allocation mapped to the GPU; its handle.
fn register_code_pages(pages: &[CodePage], d: &EmulatedKfd) -> u64 {
    let base = pages[0].base();
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: base,
        size: 4096 * pages.len() as u64,
        handle: 0,
        mmap_offset: base,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
    };
    // SAFETY: the pages are 4 KiB each, contiguous (one slice), page-aligned, owned by
    // the test, reached only through atomics, and outlive the device (declared before it
    // in the test).
    unsafe { calls::alloc_userptr_memory_of_gpu(d, &mut a) }.unwrap();
    assert_eq!(
        calls::map_memory_to_gpu(d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    a.handle
}

/// Issue 19: the CP decodes a kernel once, not once per dispatch, and never runs stale code:
/// code rewritten in place between two dispatches, and code freed and loaded again at the
/// same address, run as their new bytes.
#[test]
fn interpreted_kernel_is_decoded_once_and_never_runs_stale_code() {
    let code = Box::new(CodePage(std::array::from_fn(|_| AtomicU64::new(0))));
    let s = setup();
    s.d.set_execution_mode(ExecutionMode::InterpretOnly);
    s.d.set_interpreter_threads(1);
    let base = s.arena.base();
    s.arena.word(KERNARG).store(base + DST, Ordering::Relaxed);
    code.write_kernel(0x1122_3344);
    let handle = code.register(&s.d);
    let run = |index: u64| -> u32 {
        s.dispatch_kernel(index, base + KERNARG, 1, code.base());
        assert!(s.wait_signal_zero(), "dispatch {index} did not complete");
        assert_eq!(s.d.queue_error(s.queue_id), None);
        s.arena.word(DST).load(Ordering::Acquire) as u32
    };
    // Six instructions (s_endpgm included), each decoded once.
    assert_eq!(run(0), 0x1122_3344);
    let first = s.d.execution_stats();
    assert_eq!(first.decoded_instructions, 6);
    assert_eq!(first.interpreted_dispatches, 1);
    assert_eq!(run(1), 0x1122_3344);
    assert_eq!(run(2), 0x1122_3344);
    let again = s.d.execution_stats();
    assert_eq!(again.interpreted_dispatches, 3);
    assert_eq!(
        again.decoded_instructions, 6,
        "decoded again for a later dispatch"
    );
    assert_eq!(again.invalidated_code_pages, 0);

    // The literal rewritten in place: the next dispatch runs the new bytes.
    code.write_kernel(0x5566_7788);
    assert_eq!(run(3), 0x5566_7788);
    let rewritten = s.d.execution_stats();
    assert_eq!(rewritten.invalidated_code_pages, 1);
    assert_eq!(rewritten.decoded_instructions, 12);

    // Freed, other code written, the same memory registered again at the same address.
    assert_eq!(
        calls::unmap_memory_from_gpu(&*s.d, handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    plain_ioctl(&*s.d, &mut FreeMemoryOfGpuArgs { handle }).unwrap();
    code.write_kernel(0x99AA_BBCC);
    let _handle = code.register(&s.d);
    assert_eq!(run(4), 0x99AA_BBCC);
    assert_eq!(s.d.execution_stats().invalidated_code_pages, 2);
}

/// A dispatch reads from device memory only the code pages its waves run, each once: a small
/// kernel in the middle of a 4 MiB code allocation (a big code object's loaded image) costs
/// its one page and the 12 bytes past it (the rest of a 16-byte instruction, gfx950's scaled
/// MFMA, that could start on the page's last dword) per dispatch, not the allocation, and once although the dispatch's 4
/// work-groups run as 4 chunks on the one interpreter thread; a later dispatch reads the page
/// again (it is validated by content) but decodes nothing.
#[test]
fn interpreted_dispatch_reads_only_the_code_pages_it_runs() {
    const PAGES: usize = 1024;
    let code: Box<[CodePage]> = (0..PAGES)
        .map(|_| CodePage(std::array::from_fn(|_| AtomicU64::new(0))))
        .collect();
    let s = setup();
    s.d.set_execution_mode(ExecutionMode::InterpretOnly);
    s.d.set_interpreter_threads(1);
    let base = s.arena.base();
    s.arena.word(KERNARG).store(base + DST, Ordering::Relaxed);
    let kernel = &code[PAGES / 2];
    kernel.write_kernel(0x0BAD_C0DE);
    register_code_pages(&code, &s.d);
    let run = |index: u64| -> ExecutionStats {
        s.dispatch_kernel(index, base + KERNARG, 1, kernel.base());
        assert!(s.wait_signal_zero(), "dispatch {index} did not complete");
        assert_eq!(s.d.queue_error(s.queue_id), None);
        assert_eq!(
            s.arena.word(DST).load(Ordering::Acquire) as u32,
            0x0BAD_C0DE
        );
        s.d.execution_stats()
    };
    let first = run(0);
    // A page and the 12 bytes past it a 16-byte instruction at its end may cover.
    assert_eq!(first.code_bytes_read, 4096 + 12, "first dispatch");
    let second = run(1);
    assert_eq!(
        second.code_bytes_read - first.code_bytes_read,
        4096 + 12,
        "second dispatch"
    );
    assert_eq!(second.decoded_instructions, first.decoded_instructions);
}

/// The arena's byte at offset `o`, as the host sees it.
fn arena_byte(s: &Setup, o: u64) -> u8 {
    (s.arena.word(o & !7).load(Ordering::Acquire) >> (8 * (o % 8))) as u8
}

/// Sets the arena's byte at offset `o` (no dispatch runs meanwhile).
fn set_arena_byte(s: &Setup, o: u64, v: u8) {
    let w = s.arena.word(o & !7);
    let old = w.load(Ordering::Relaxed) & !(0xff << (8 * (o % 8)));
    w.store(old | u64::from(v) << (8 * (o % 8)), Ordering::Relaxed);
}

/// Byte `o` (below 4096) of a page [`gtt_page_at`] mapped, as the host sees it.
fn page_byte(p: NonNull<u8>, o: usize) -> u8 {
    assert!(o < 4096);
    // SAFETY: `p` is a live 4 KiB mapping of the device's and `o` inside it; no dispatch
    // runs while the host reads it.
    unsafe { p.as_ptr().add(o).read_volatile() }
}

/// Sets byte `o` (below 4096) of a page [`gtt_page_at`] mapped.
fn set_page_byte(p: NonNull<u8>, o: usize, v: u8) {
    assert!(o < 4096);
    // SAFETY: as in `page_byte`.
    unsafe { p.as_ptr().add(o).write_volatile(v) }
}

/// A GTT buffer object of one page at `va`, mapped to the built-in GPU, and its CPU mapping
/// (as `pm4_indirect_buffer_spans_adjacent_allocations` makes the arena's neighbour).
fn gtt_page_at(s: &Setup, va: u64) -> NonNull<u8> {
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: va,
        size: 4096,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    // SAFETY: without USERPTR the argument carries no pointer.
    unsafe { s.d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) }.unwrap();
    assert_eq!(
        calls::map_memory_to_gpu(&*s.d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    calls::mmap(
        &*s.d,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        a.mmap_offset,
        4096,
    )
    .unwrap()
}

/// An interpreted kernel's loads and stores of 4, 8 and 16 bytes (GLOBAL, and a scalar
/// `s_load_dwordx4`) that straddle two adjacent buffer objects read and write the bytes of
/// both, as a GPU's do (its VM sees only pages): loads across the arena's end into the GTT
/// page after it, stores across that page's end into a second one; every byte checked
/// against the host's view of the three.
#[test]
fn interpreted_kernel_accesses_straddle_adjacent_allocations() {
    let code = Box::new(CodePage(std::array::from_fn(|_| AtomicU64::new(0))));
    let s = setup();
    s.d.set_execution_mode(ExecutionMode::InterpretOnly);
    let base = s.arena.base();
    let (e, f) = (base + 16384, base + 16384 + 4096);
    let first = gtt_page_at(&s, e);
    let second = gtt_page_at(&s, f);
    // The 32 bytes around each boundary: 16 before, 16 after.
    let around_e = || -> Vec<u8> {
        (0..32)
            .map(|k| {
                if k < 16 {
                    arena_byte(&s, 16384 - 16 + k as u64)
                } else {
                    page_byte(first, k - 16)
                }
            })
            .collect()
    };
    let around_f = || -> Vec<u8> {
        (0..32)
            .map(|k| {
                if k < 16 {
                    page_byte(first, 4080 + k)
                } else {
                    page_byte(second, k - 16)
                }
            })
            .collect()
    };
    // Distinct bytes around both boundaries.
    for k in 0..16 {
        set_arena_byte(&s, 16384 - 16 + k as u64, 0x40 + k as u8);
        set_page_byte(first, k, 0x50 + k as u8);
        set_page_byte(first, 4080 + k, 0x60 + k as u8);
        set_page_byte(second, k, 0x70 + k as u8);
    }
    let (at_e, mut at_f) = (around_e(), around_f());
    s.arena.word(KERNARG).store(e, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    s.arena.word(KERNARG + 16).store(f, Ordering::Relaxed);
    // llvm-mc-19 -mcpu=gfx90a. Kernargs: e (the arena's end), out (DST), f (the first
    // page's end). Every lane of every work-group does the same: the stores write what the
    // loads do not read.
    code.write_code(&[
        // s_load_dwordx2 s[2:3], s[0:1], 0x0
        0xC006_0080,
        0x0000_0000,
        // s_load_dwordx2 s[4:5], s[0:1], 0x8
        0xC006_0100,
        0x0000_0008,
        // s_load_dwordx2 s[12:13], s[0:1], 0x10
        0xC006_0300,
        0x0000_0010,
        // s_waitcnt lgkmcnt(0)
        0xBF8C_C07F,
        // v_mov_b32_e32 v0, 0
        0x7E00_0280,
        // global_load_dword v1, v0, s[2:3] offset:-2
        0xDC50_9FFE,
        0x0102_0000,
        // global_load_dwordx2 v[2:3], v0, s[2:3] offset:-4
        0xDC54_9FFC,
        0x0202_0000,
        // global_load_dwordx4 v[4:7], v0, s[2:3] offset:-7
        0xDC5C_9FF9,
        0x0402_0000,
        // s_add_u32 s6, s2, -8
        0x8006_C802,
        // s_addc_u32 s7, s3, -1
        0x8207_C103,
        // s_load_dwordx4 s[8:11], s[6:7], 0x0
        0xC00A_0203,
        0x0000_0000,
        // s_waitcnt vmcnt(0) lgkmcnt(0)
        0xBF8C_0070,
        // v_mov_b32_e32 v12, s8 (v13..v15 from s9..s11)
        0x7E18_0208,
        0x7E1A_0209,
        0x7E1C_020A,
        0x7E1E_020B,
        // global_store_dword v0, v1, s[4:5]
        0xDC70_8000,
        0x0004_0100,
        // global_store_dwordx2 v0, v[2:3], s[4:5] offset:4
        0xDC74_8004,
        0x0004_0200,
        // global_store_dwordx4 v0, v[4:7], s[4:5] offset:12
        0xDC7C_800C,
        0x0004_0400,
        // global_store_dwordx4 v0, v[12:15], s[4:5] offset:28
        0xDC7C_801C,
        0x0004_0C00,
        // v_mov_b32_e32 v8..v11, 0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c
        0x7E10_02FF,
        0x0302_0100,
        0x7E12_02FF,
        0x0706_0504,
        0x7E14_02FF,
        0x0B0A_0908,
        0x7E16_02FF,
        0x0F0E_0D0C,
        // global_store_dwordx4 v0, v[8:11], s[12:13] offset:-13
        0xDC7C_9FF3,
        0x000C_0800,
        // global_store_dwordx2 v0, v[8:9], s[12:13] offset:-5
        0xDC74_9FFB,
        0x000C_0800,
        // global_store_dword v0, v8, s[12:13] offset:-1
        0xDC70_9FFF,
        0x000C_0800,
        // s_endpgm
        0xBF81_0000,
    ]);
    let _handle = code.register(&s.d);
    s.dispatch_kernel(0, base + KERNARG, 1, code.base());
    assert!(s.wait_signal_zero(), "the dispatch did not complete");
    assert_eq!(s.d.queue_error(s.queue_id), None);

    // Loads: the dword at e-2, the dwordx2 at e-4, the dwordx4 at e-7, the scalar dwordx4 at
    // e-8 (byte 16 of `at_e` is e's).
    let mut want = Vec::new();
    for (from, n) in [(14, 4), (12, 8), (9, 16), (8, 16)] {
        want.extend_from_slice(&at_e[from..from + n]);
    }
    let out: Vec<u8> = (0..44).map(|k| arena_byte(&s, DST + k)).collect();
    assert_eq!(out, want, "the loaded bytes");
    assert_eq!(around_e(), at_e, "the loads changed nothing");
    // Stores, in order: 16 bytes at f-13, 8 at f-5, 4 at f-1.
    let c: Vec<u8> = (0..16).collect();
    at_f[3..19].copy_from_slice(&c);
    at_f[11..19].copy_from_slice(&c[..8]);
    at_f[15..19].copy_from_slice(&c[..4]);
    assert_eq!(around_f(), at_f, "the stored bytes");
}

/// A host kernel's accesses through `DispatchContext` (`read`, `read_slice`, `write`,
/// `write_slice`) may cross from one buffer object into the adjacent one, as the
/// interpreter's do, and move the bytes of both; one crossing from a buffer object into a
/// hole is a memory fault whose memory event names the hole's first byte, and writes nothing.
#[test]
fn host_kernel_accesses_straddle_adjacent_allocations() {
    const STRADDLE: u64 = KERNEL_OBJECT + 0x40;
    let s = setup();
    let base = s.arena.base();
    let (e, f) = (base + 16384, base + 16384 + 4096);
    let first = gtt_page_at(&s, e);
    let second = gtt_page_at(&s, f);
    for k in 0..16 {
        set_arena_byte(&s, 16384 - 16 + k as u64, 0x40 + k as u8);
        set_page_byte(first, k, 0x50 + k as u8);
    }
    s.d.register_kernel(GpuVa(STRADDLE), "straddle", |ctx| {
        let (e, out, f) = (
            ctx.kernarg_u64(0)?,
            ctx.kernarg_u64(8)?,
            ctx.kernarg_u64(16)?,
        );
        let a: u32 = ctx.read(e - 2)?;
        let b: u64 = ctx.read(e - 4)?;
        let c: Vec<u8> = ctx.read_slice(e - 7, 16)?;
        ctx.write(out, a)?;
        ctx.write(out + 4, b)?;
        ctx.write_slice(out + 12, &c)?;
        ctx.write_slice(f - 13, &(0..16).collect::<Vec<u8>>())?;
        ctx.write(f - 5, 0x0706_0504_0302_0100u64)
    })
    .unwrap();
    s.arena.word(KERNARG).store(e, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    s.arena.word(KERNARG + 16).store(f, Ordering::Relaxed);
    s.dispatch_kernel(0, base + KERNARG, 1, STRADDLE);
    assert!(s.wait_signal_zero(), "the dispatch did not complete");
    assert_eq!(s.d.queue_error(s.queue_id), None);
    // Bytes e-16..e+16 as placed above.
    let at_e: Vec<u8> = (0..32).map(|k| 0x40 + k as u8).collect();
    let mut want = Vec::new();
    for (from, n) in [(14, 4), (12, 8), (9, 16)] {
        want.extend_from_slice(&at_e[from..from + n]);
    }
    let out: Vec<u8> = (0..28).map(|k| arena_byte(&s, DST + k)).collect();
    assert_eq!(out, want, "the bytes read");
    let around_f: Vec<u8> = (0..32)
        .map(|k| {
            if k < 16 {
                page_byte(first, 4080 + k)
            } else {
                page_byte(second, k - 16)
            }
        })
        .collect();
    let mut at_f = vec![0u8; 32];
    at_f[3..19].copy_from_slice(&(0..16).collect::<Vec<u8>>());
    at_f[11..19].copy_from_slice(&[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(around_f, at_f, "the bytes written");

    // From the second page into the hole after it (a fresh queue: the fault stops it).
    let s = setup();
    let base = s.arena.base();
    let (e, f) = (base + 16384, base + 16384 + 4096);
    let _first = gtt_page_at(&s, e);
    let second = gtt_page_at(&s, f);
    let hole = f + 4096;
    let memory_event = exception_event(&s.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
    s.d.register_kernel(GpuVa(STRADDLE), "into_hole", |ctx| {
        let hole = ctx.kernarg_u64(0)?;
        ctx.write(hole - 4, u64::MAX)
    })
    .unwrap();
    s.arena.word(KERNARG).store(hole, Ordering::Relaxed);
    s.dispatch_kernel(0, base + KERNARG, 1, STRADDLE);
    let [m, _] = wait_exception(&s.d, memory_event, hw_event);
    assert_eq!(m.memory_exception().va, hole);
    let logged = s.d.queue_error(s.queue_id).expect("logged");
    assert_eq!(logged.status(), Status::MemoryFault);
    assert!(
        logged
            .detail()
            .contains(&format!("byte {hole:#x} is in no live allocation")),
        "{logged}"
    );
    assert_eq!(
        (4092..4096)
            .map(|o| page_byte(second, o))
            .collect::<Vec<_>>(),
        [0; 4],
        "nothing written"
    );
}

/// UPDATE_QUEUE with `queue_percentage` 0 makes the queue inactive, as amdkfd's
/// `QUEUE_IS_ACTIVE` does (ROCR's `AqlQueue::Suspend`): a packet rung meanwhile is not taken
/// (its read index stays 0 and its completion signal 1 while the test polls 200 times, 1 ms
/// apart); an update back to 100 makes the CP take and complete it.
#[test]
fn a_queue_updated_to_zero_percent_takes_no_packet_until_updated_back() {
    let s = setup();
    let base = s.arena.base();
    s.arena.word(KERNARG).store(base + SRC, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    let update = |percentage: u32| {
        let mut u = UpdateQueueArgs {
            ring_base_address: base,
            queue_id: s.queue_id,
            ring_size: 1024,
            queue_percentage: percentage,
            queue_priority: 7,
        };
        // SAFETY: the queue's own ring (EmulatedKfd refuses to move a ring and uses
        // UPDATE_QUEUE's address for nothing else).
        unsafe { s.d.ioctl(AMDKFD_IOC_UPDATE_QUEUE, u.as_mut_bytes()) }.unwrap();
    };
    update(0);
    s.dispatch(0, base + KERNARG, 1);
    for _ in 0..200 {
        assert_eq!(s.ring.read_index().load(Ordering::Acquire), 0);
        assert_eq!(s.arena.word(SIGNAL + 8).load(Ordering::Acquire), 1);
        std::thread::sleep(Duration::from_millis(1));
    }
    update(100);
    assert!(s.wait_signal_zero(), "completion signal never reached 0");
    assert_eq!(s.ring.read_index().load(Ordering::Acquire), 1);
}

/// GET_QUEUE_WAVE_STATE as amdkfd answers it (`pqm_get_wave_state`, the DQM's and the gfx9
/// MQD manager's `get_wave_state`): `EINVAL` while the queue is active, `EFAULT` for an
/// unknown queue; once UPDATE_QUEUE made it inactive, the context save left nothing (the
/// emulated CP saves no waves): 0 bytes of control stack and save area in use, and the
/// header's `wave_state` written at `ctl_stack_address` with the MQD's offsets (the 512-byte
/// control stack's end, as `init_mqd` sets them).
#[test]
fn queue_wave_state_of_an_inactive_queue() {
    const CSA: u64 = 9216;
    let s = setup_full(builtin_topology(), Some(CSA));
    let base = s.arena.base();
    s.arena.word(CSA).store(u64::MAX, Ordering::Relaxed);
    s.arena.word(CSA + 8).store(u64::MAX, Ordering::Relaxed);
    s.arena.word(CSA + 16).store(u64::MAX, Ordering::Relaxed);
    let wave_state = |queue_id: u32| {
        let mut a = GetQueueWaveStateArgs {
            ctl_stack_address: base + CSA,
            ctl_stack_used_size: 7,
            save_area_used_size: 7,
            queue_id,
            pad: 0,
        };
        // SAFETY: ctl_stack_address is the arena's context save area, mapped to the GPU and
        // alive until after the device; the device writes 16 bytes there.
        let r = unsafe { s.d.ioctl(AMDKFD_IOC_GET_QUEUE_WAVE_STATE, a.as_mut_bytes()) };
        (r, a.ctl_stack_used_size, a.save_area_used_size)
    };
    assert_eq!(wave_state(s.queue_id).0, Err(Errno::INVAL), "active");
    assert_eq!(
        wave_state(s.queue_id + 1).0,
        Err(Errno::FAULT),
        "no such queue"
    );
    assert_eq!(s.arena.word(CSA).load(Ordering::Relaxed), u64::MAX);
    let mut u = UpdateQueueArgs {
        ring_base_address: base + RING,
        queue_id: s.queue_id,
        ring_size: 1024,
        queue_percentage: 0,
        queue_priority: 7,
    };
    plain_ioctl(&*s.d, &mut u).unwrap();
    assert_eq!(wave_state(s.queue_id), (Ok(()), 0, 0));
    // wave_state: control_stack_offset 512, control_stack_size 0, wave_state_offset 512,
    // wave_state_size 0; the next word is untouched.
    assert_eq!(s.arena.word(CSA).load(Ordering::Relaxed), 512);
    assert_eq!(s.arena.word(CSA + 8).load(Ordering::Relaxed), 512);
    assert_eq!(s.arena.word(CSA + 16).load(Ordering::Relaxed), u64::MAX);
    // Active again: EINVAL again. The update's priority reaches the MQD (pipe_priority_map:
    // 7 is CS_MEDIUM, 12 CS_HIGH).
    assert_eq!(s.d.mqd(s.queue_id).unwrap().cp_hqd_pipe_priority, 1);
    u.queue_percentage = 100;
    u.queue_priority = 12;
    plain_ioctl(&*s.d, &mut u).unwrap();
    assert_eq!(wave_state(s.queue_id).0, Err(Errno::INVAL));
    assert_eq!(s.d.mqd(s.queue_id).unwrap().cp_hqd_pipe_priority, 2);
}

/// ALLOC_QUEUE_GWS as `pqm_set_gws`: one queue of a process per GPU holds the GWS (`EBUSY`
/// for a second request, even for the same queue), `num_gws` 0 gives them back (`EINVAL`
/// when none are held), `first_gws` is 0; `EINVAL` for an unknown queue; `ENODEV` on a GPU
/// whose topology node reports no GWS.
#[test]
fn queue_gws_is_one_per_process_and_gpu() {
    let s = setup();
    let gws = |queue_id: u32, num_gws: u32| {
        let mut a = AllocQueueGwsArgs {
            queue_id,
            num_gws,
            first_gws: 9,
            pad: 0,
        };
        // SAFETY: the argument carries no pointer.
        let r = unsafe { s.d.ioctl(AMDKFD_IOC_ALLOC_QUEUE_GWS, a.as_mut_bytes()) };
        (r, a.first_gws)
    };
    assert_eq!(gws(s.queue_id + 1, 1).0, Err(Errno::INVAL));
    assert_eq!(gws(s.queue_id, 0).0, Err(Errno::INVAL), "none held");
    assert_eq!(gws(s.queue_id, 1), (Ok(()), 0));
    assert_eq!(gws(s.queue_id, 1).0, Err(Errno::BUSY));
    assert_eq!(gws(s.queue_id, 0).0, Ok(()));
    assert_eq!(gws(s.queue_id, 0).0, Err(Errno::INVAL));
    assert_eq!(gws(s.queue_id, 64).0, Ok(()));
    drop(s);

    let mut topology = builtin_topology();
    for n in &mut topology.nodes {
        n.properties.num_gws = 0;
    }
    let s = setup_with(topology);
    let mut a = AllocQueueGwsArgs {
        queue_id: s.queue_id,
        num_gws: 1,
        ..Default::default()
    };
    // SAFETY: the argument carries no pointer.
    let r = unsafe { s.d.ioctl(AMDKFD_IOC_ALLOC_QUEUE_GWS, a.as_mut_bytes()) };
    assert_eq!(r, Err(Errno::NODEV));
}

/// Reads what an SMI descriptor has queued, waiting up to 10 s for `want` bytes.
fn smi_read(fd: &std::os::fd::OwnedFd, want: usize) -> String {
    let mut out = Vec::new();
    let t = Instant::now();
    while out.len() < want && t.elapsed() < Duration::from_secs(10) {
        let mut buf = [0u8; 256];
        match rustix::io::read(fd, &mut buf) {
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::AGAIN) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("read of the SMI descriptor: {e}"),
        }
    }
    String::from_utf8(out).unwrap()
}

/// SMI_EVENTS as `kfd_smi_event_open` and `kfd_smi_event_update_vmfault`: a reader starts
/// with no events enabled (`EAGAIN`: nothing queued), writes the 64-bit mask of the events
/// it wants, and a GPU memory fault then queues `"1 <pid, hex>:<task name>\n"` for the
/// readers whose mask has bit 0 (`KFD_SMI_EVENT_MASK_FROM_INDEX(1)`), not for one that asked
/// for the reset events only; `EINVAL` for a gpu_id of no GPU.
#[test]
fn smi_events_deliver_a_vm_fault_to_the_readers_that_asked() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let s = setup();
    let base = s.arena.base();
    let open = |gpuid: u32| {
        let mut a = SmiEventsArgs { gpuid, anon_fd: 0 };
        // SAFETY: the argument carries no pointer.
        unsafe { s.d.ioctl(AMDKFD_IOC_SMI_EVENTS, a.as_mut_bytes()) }.map(|()| {
            // SAFETY: a successful SMI_EVENTS hands the caller a new descriptor it owns.
            unsafe { OwnedFd::from_raw_fd(a.anon_fd as i32) }
        })
    };
    assert_eq!(open(BUILTIN_GPU_ID + 1).err(), Some(Errno::INVAL));
    let faults = open(BUILTIN_GPU_ID).unwrap();
    let resets = open(BUILTIN_GPU_ID).unwrap();
    let silent = open(BUILTIN_GPU_ID).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(rustix::io::read(&faults, &mut buf), Err(Errno::AGAIN));
    // KFD_SMI_EVENT_MASK_FROM_INDEX(1) = bit 0; (3) | (4) = bits 2 and 3.
    assert_eq!(rustix::io::write(&faults, &1u64.to_ne_bytes()), Ok(8));
    assert_eq!(rustix::io::write(&resets, &0xcu64.to_ne_bytes()), Ok(8));

    let memory_event = exception_event(&s.d, KFD_IOC_EVENT_MEMORY);
    let hw_event = exception_event(&s.d, KFD_IOC_EVENT_HW_EXCEPTION);
    s.arena
        .word(KERNARG)
        .store(0xdead_0000_0000, Ordering::Relaxed);
    s.arena
        .word(KERNARG + 8)
        .store(base + DST, Ordering::Relaxed);
    s.dispatch(0, base + KERNARG, 1);
    wait_exception(&s.d, memory_event, hw_event);
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    let comm: String = comm.trim_end().chars().take(15).collect();
    let want = format!("1 {:x}:{comm}\n", std::process::id());
    assert_eq!(smi_read(&faults, want.len()), want);
    assert_eq!(rustix::io::read(&resets, &mut buf), Err(Errno::AGAIN));
    assert_eq!(rustix::io::read(&silent, &mut buf), Err(Errno::AGAIN));
}
