//! The emulated `/dev/kfd` driven through `KfdDriver::ioctl` with the `kfd_ioctl.h` structs:
//! memory, events, errno semantics and fault injection. Requests without pointers go through
//! `calls::plain_ioctl` (the errno as it is); the others through `KfdDriver::ioctl` itself, under
//! `EmulatedKfd::ioctl`'s `# Safety` (which lets these tests pass unmapped pointers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::Status;
use hsa_emu::device::{
    builtin_topology, EmulatedKfd, LiveHandles, BUILTIN_GPU_ID, EVENT_PAGE_BYTES,
    UNSIGNALED_EVENT_SLOT,
};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::calls::{self, plain_ioctl};
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use rustix::io::Errno;
use zerocopy::IntoBytes;

fn dev() -> Arc<EmulatedKfd> {
    EmulatedKfd::new(builtin_topology()).expect("emulated device")
}

/// ALLOC_MEMORY_OF_GPU of KFD-allocated memory (`flags` without USERPTR).
fn alloc(
    d: &EmulatedKfd,
    va: u64,
    size: u64,
    flags: u32,
    mmap_offset: u64,
) -> Result<AllocMemoryOfGpuArgs, Errno> {
    assert_eq!(
        flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        0,
        "use alloc_userptr"
    );
    // SAFETY: without USERPTR the argument carries no pointer.
    unsafe { alloc_any(d, va, size, flags, mmap_offset) }
}

/// ALLOC_MEMORY_OF_GPU with any flags.
///
/// # Safety
/// With USERPTR, `[mmap_offset, mmap_offset + size)` is not mapped, or is memory the caller
/// owns and keeps mapped until FREE of the returned handle succeeds.
unsafe fn alloc_any(
    d: &EmulatedKfd,
    va: u64,
    size: u64,
    flags: u32,
    mmap_offset: u64,
) -> Result<AllocMemoryOfGpuArgs, Errno> {
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: va,
        size,
        handle: 0,
        mmap_offset,
        gpu_id: BUILTIN_GPU_ID,
        flags,
    };
    // SAFETY: this function's contract is the USERPTR row of EmulatedKfd::ioctl's.
    unsafe { d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) }?;
    Ok(a)
}

fn free(d: &EmulatedKfd, handle: u64) -> Result<(), Errno> {
    plain_ioctl(d, &mut FreeMemoryOfGpuArgs { handle })
}

fn map(d: &EmulatedKfd, handle: u64, ids: &[u32], req: u32) -> (Result<(), Errno>, u32) {
    let mut a = MapMemoryToGpuArgs {
        handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: ids.len() as u32,
        n_success: 0,
    };
    // SAFETY: the id array is `ids`, borrowed for the call, `n_devices` long.
    let r = unsafe { d.ioctl(req, a.as_mut_bytes()) };
    (r, a.n_success)
}

/// `ioctl` of raw bytes: a wrong size or a request this device does not implement.
fn raw(d: &EmulatedKfd, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
    // SAFETY: EmulatedKfd refuses a size that is not the request's (EINVAL) and a number it
    // does not implement (ENOTTY) before it looks at the bytes.
    unsafe { d.ioctl(request, arg) }
}

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

/// The emulated amdkfd speaks interface 1.17 (SDMA queues by engine id; the contiguous flag;
/// GEM_VA on the render node; event age; the debugger API of 1.13 answered as amdkfd answers
/// a process without a debugger).
#[test]
fn version_is_1_17() {
    let d = dev();
    assert_eq!(d.name(), "emulated");
    let mut v = GetVersionArgs::default();
    plain_ioctl(&*d, &mut v).unwrap();
    assert_eq!(v.major_version, KFD_IOCTL_MAJOR_VERSION);
    assert_eq!(v.minor_version, 17);
    assert_eq!(hsa_emu::device::EMULATED_KFD_MINOR_VERSION, 17);
}

/// `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT` (`kfd_ioctl.h` 1.16): amdkfd asks for
/// contiguous VRAM when it can and takes the flag on any allocation; the emulated device's
/// memory is one piece anyway, and the flag changes nothing else.
#[test]
fn the_contiguous_flag_of_1_16_is_taken() {
    const CONTIGUOUS: u32 = 1 << 23;
    let d = dev();
    let v = alloc(&d, 0x7100_0000_0000, 3 << 20, VRAM | CONTIGUOUS, 0).unwrap();
    let g = alloc(&d, 0x7100_0040_0000, 4096, GTT | CONTIGUOUS, 0).unwrap();
    assert_eq!(d.live_handles().memory, 2);
    free(&d, v.handle).unwrap();
    free(&d, g.handle).unwrap();
}

#[test]
fn alloc_map_unmap_free_counts_back_to_zero() {
    let d = dev();
    let a = alloc(&d, 0x7100_0000_0000, 1 << 20, VRAM, 0).unwrap();
    assert_eq!(
        a.handle >> 32,
        u64::from(BUILTIN_GPU_ID),
        "KFD puts the gpu id in the high half"
    );
    // amdgpu's fake offsets start at DRM_FILE_PAGE_OFFSET_START (4 GiB): the first buffer
    // object is id 1, 16 MiB above it.
    assert_eq!(a.mmap_offset, (1 << 32) + (1 << 24));
    let b = alloc(&d, 0x7100_0010_0000, 5000, GTT, 0).unwrap();
    assert_ne!(a.handle, b.handle);
    assert_eq!(b.mmap_offset, (1 << 32) + (2 << 24));
    assert_eq!(
        d.live_handles(),
        LiveHandles {
            memory: 2,
            queues: 0,
            events: 0
        }
    );

    let mut avail = GetAvailableMemoryArgs {
        gpu_id: BUILTIN_GPU_ID,
        ..Default::default()
    };
    plain_ioctl(&*d, &mut avail).unwrap();
    assert_eq!(avail.available, (64 << 30) - (1 << 20));

    assert_eq!(
        map(
            &d,
            a.handle,
            &[BUILTIN_GPU_ID],
            AMDKFD_IOC_MAP_MEMORY_TO_GPU
        ),
        (Ok(()), 1)
    );
    assert_eq!(
        map(
            &d,
            a.handle,
            &[BUILTIN_GPU_ID],
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU
        ),
        (Ok(()), 1)
    );
    // Unmapping what is not mapped.
    assert_eq!(
        map(
            &d,
            a.handle,
            &[BUILTIN_GPU_ID],
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU
        )
        .0,
        Err(Errno::INVAL)
    );
    // An unknown gpu id in the array: EINVAL, n_success says how far it got.
    assert_eq!(
        map(
            &d,
            a.handle,
            &[BUILTIN_GPU_ID, 0x9999],
            AMDKFD_IOC_MAP_MEMORY_TO_GPU
        ),
        (Err(Errno::INVAL), 1)
    );
    // n_devices 0, and a device array pointer that is not mapped.
    assert_eq!(
        map(&d, a.handle, &[], AMDKFD_IOC_MAP_MEMORY_TO_GPU).0,
        Err(Errno::INVAL)
    );
    let mut bad = MapMemoryToGpuArgs {
        handle: a.handle,
        device_ids_array_ptr: 8,
        n_devices: 1,
        n_success: 0,
    };
    assert_eq!(
        // SAFETY: address 8 is never mapped (page 0): EmulatedKfd answers EFAULT.
        unsafe { d.ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, bad.as_mut_bytes()) },
        Err(Errno::FAULT)
    );

    free(&d, a.handle).unwrap();
    free(&d, b.handle).unwrap();
    assert_eq!(d.live_handles(), LiveHandles::default());
    assert_eq!(free(&d, a.handle), Err(Errno::INVAL), "double free");
}

#[test]
fn alloc_errors_follow_the_kernel() {
    let d = dev();
    // Beyond the GPU's 64 GiB VRAM bank, and beyond the CPU node's 16 GiB system bank.
    assert_eq!(
        alloc(&d, 0x7200_0000_0000, (64 << 30) + 4096, VRAM, 0).unwrap_err(),
        Errno::NOMEM
    );
    assert_eq!(
        alloc(&d, 0x7200_0000_0000, (16 << 30) + 4096, GTT, 0).unwrap_err(),
        Errno::NOMEM
    );
    // Exactly the whole VRAM is fine (sparse memfd), then nothing more fits.
    let all = alloc(&d, 0x7300_0000_0000, 64 << 30, VRAM, 0).unwrap();
    assert_eq!(
        alloc(&d, 0x7400_0000_0000, 4096, VRAM, 0).unwrap_err(),
        Errno::NOMEM
    );
    free(&d, all.handle).unwrap();
    // Unknown gpu, no memory type, zero size, overlapping VA.
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: 0x7200_0000_0000,
        size: 4096,
        gpu_id: 0x4321,
        flags: VRAM,
        ..Default::default()
    };
    assert_eq!(
        // SAFETY: VRAM: no pointer.
        unsafe { d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) },
        Err(Errno::INVAL)
    );
    assert_eq!(
        alloc(
            &d,
            0x7200_0000_0000,
            4096,
            KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            0
        )
        .unwrap_err(),
        Errno::INVAL
    );
    assert_eq!(
        alloc(&d, 0x7200_0000_0000, 0, VRAM, 0).unwrap_err(),
        Errno::INVAL
    );
    let x = alloc(&d, 0x7200_0000_0000, 8192, VRAM, 0).unwrap();
    assert_eq!(
        alloc(&d, 0x7200_0000_1000, 4096, GTT, 0).unwrap_err(),
        Errno::INVAL
    );
    // USERPTR over memory that is not mapped: EFAULT.
    assert_eq!(
        // SAFETY: 0x1000 is never mapped (below vm.mmap_min_addr).
        unsafe {
            alloc_any(
                &d,
                0x7500_0000_0000,
                4096,
                KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
                0x1000,
            )
        }
        .unwrap_err(),
        Errno::FAULT
    );
    assert_eq!(free(&d, 0xdead_beef), Err(Errno::INVAL));
    free(&d, x.handle).unwrap();
    assert_eq!(d.live_handles().memory, 0);
}

#[test]
fn argument_size_and_unknown_requests() {
    let d = dev();
    let mut v = [0u8; 12];
    assert_eq!(raw(&d, AMDKFD_IOC_GET_VERSION, &mut v), Err(Errno::INVAL));
    let mut a = [0u8; 8];
    // Past amdkfd's table: kfd_ioctl's EINVAL (linux before 6.18); every number of the
    // table has a row, so none answers ENOTTY. A shorter argument is zero-extended: an
    // 8-byte GET_QUEUE_WAVE_STATE names queue 0, which does not exist (EFAULT).
    assert_eq!(
        raw(&d, ioc(IOC_READ | IOC_WRITE, b'K', 0x60, 8), &mut a),
        Err(Errno::INVAL)
    );
    assert_eq!(
        raw(&d, ioc(IOC_READ | IOC_WRITE, b'K', 0x1B, 8), &mut a),
        Err(Errno::FAULT)
    );
    let mut q = DestroyQueueArgs {
        queue_id: 3,
        pad: 0,
    };
    assert_eq!(plain_ioctl(&*d, &mut q), Err(Errno::INVAL));
    let mut e = SetEventArgs {
        event_id: 77,
        pad: 0,
    };
    assert_eq!(plain_ioctl(&*d, &mut e), Err(Errno::INVAL));
    let mut p = SetMemoryPolicyArgs {
        gpu_id: BUILTIN_GPU_ID,
        default_policy: 2,
        ..Default::default()
    };
    assert_eq!(plain_ioctl(&*d, &mut p), Err(Errno::INVAL));
    p.default_policy = KFD_IOC_CACHE_POLICY_NONCOHERENT;
    plain_ioctl(&*d, &mut p).unwrap();
    let mut x = SetXnackModeArgs { xnack_enabled: -1 };
    plain_ioctl(&*d, &mut x).unwrap();
    assert_eq!(x.xnack_enabled, 0);
    let mut c = GetClockCountersArgs {
        gpu_id: BUILTIN_GPU_ID,
        ..Default::default()
    };
    plain_ioctl(&*d, &mut c).unwrap();
    assert_eq!(c.system_clock_freq, 1_000_000_000);
    assert!(c.gpu_clock_counter > 0);
}

#[test]
fn fault_injection_fails_the_nth_ioctl_without_side_effects() {
    let d = dev();
    let before = d.ioctl_count();
    d.fail_nth_ioctl(1, Errno::NOMEM);
    let a = alloc(&d, 0x7600_0000_0000, 4096, GTT, 0).unwrap(); // n = 0: succeeds
    assert_eq!(
        alloc(&d, 0x7600_0001_0000, 4096, GTT, 0).unwrap_err(),
        Errno::NOMEM
    ); // n = 1
    assert_eq!(
        d.live_handles().memory,
        1,
        "the injected failure allocated nothing"
    );
    // The same request again succeeds: the injection fired once.
    let b = alloc(&d, 0x7600_0001_0000, 4096, GTT, 0).unwrap();
    assert_eq!(d.ioctl_count(), before + 3);
    free(&d, a.handle).unwrap();
    free(&d, b.handle).unwrap();
}

fn create_event(d: &EmulatedKfd, event_type: u32, auto_reset: bool) -> CreateEventArgs {
    let mut c = CreateEventArgs {
        event_type,
        auto_reset: u32::from(auto_reset),
        ..Default::default()
    };
    plain_ioctl(d, &mut c).unwrap();
    c
}

fn wait(d: &EmulatedKfd, ids: &[u32], all: bool, timeout_ms: u32) -> Result<u32, Errno> {
    let mut data: Vec<EventData> = ids
        .iter()
        .map(|&event_id| EventData {
            event_id,
            ..Default::default()
        })
        .collect();
    let mut w = WaitEventsArgs {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: ids.len() as u32,
        wait_for_all: u32::from(all),
        timeout: timeout_ms,
        wait_result: 0xff,
    };
    // SAFETY: the event array is `data`, borrowed for the call, `num_events` long.
    unsafe { d.ioctl(AMDKFD_IOC_WAIT_EVENTS, w.as_mut_bytes()) }?;
    Ok(w.wait_result)
}

#[test]
fn event_set_from_another_thread_wakes_the_waiter() {
    let d = dev();
    let e = create_event(&d, KFD_IOC_EVENT_SIGNAL, true);
    assert_eq!(e.event_page_offset, KFD_MMAP_EVENTS_OFFSET);
    assert_eq!(e.event_slot_index, e.event_id);
    let page = calls::mmap(
        &*d,
        MapTarget::Kfd,
        KFD_MMAP_EVENTS_OFFSET,
        EVENT_PAGE_BYTES as usize,
    )
    .unwrap();
    assert_eq!(page.as_ptr() as usize % 4096, 0);

    let d2 = d.clone();
    let id = e.event_id;
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        (wait(&d2, &[id], false, u32::MAX), t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    let mut s = SetEventArgs {
        event_id: id,
        pad: 0,
    };
    plain_ioctl(&*d, &mut s).unwrap();
    let (r, took) = waiter.join().unwrap();
    assert_eq!(r, Ok(KFD_IOC_WAIT_RESULT_COMPLETE));
    assert!(took >= Duration::from_millis(40), "{took:?}");
    // Auto-reset: the wait consumed it.
    assert_eq!(wait(&d, &[id], false, 0), Ok(KFD_IOC_WAIT_RESULT_TIMEOUT));

    // A manual-reset event stays signaled until RESET_EVENT.
    let m = create_event(&d, KFD_IOC_EVENT_SIGNAL, false);
    let mut s = SetEventArgs {
        event_id: m.event_id,
        pad: 0,
    };
    plain_ioctl(&*d, &mut s).unwrap();
    assert_eq!(
        wait(&d, &[m.event_id], false, 0),
        Ok(KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    assert_eq!(
        wait(&d, &[m.event_id], false, 0),
        Ok(KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    // Wait-for-all with one unsignaled event times out.
    assert_eq!(
        wait(&d, &[m.event_id, id], true, 0),
        Ok(KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    let mut r = ResetEventArgs {
        event_id: m.event_id,
        pad: 0,
    };
    plain_ioctl(&*d, &mut r).unwrap();
    assert_eq!(
        wait(&d, &[m.event_id], false, 0),
        Ok(KFD_IOC_WAIT_RESULT_TIMEOUT)
    );

    // Non-signal events get ids from 0x80000000 and cannot be set from the CPU.
    let hw = create_event(&d, KFD_IOC_EVENT_HW_EXCEPTION, false);
    assert!(hw.event_id >= 0x8000_0000);
    let mut s = SetEventArgs {
        event_id: hw.event_id,
        pad: 0,
    };
    assert_eq!(plain_ioctl(&*d, &mut s), Err(Errno::INVAL));

    assert_eq!(d.live_handles().events, 3);
    for ev in [id, m.event_id, hw.event_id] {
        let mut x = DestroyEventArgs {
            event_id: ev,
            pad: 0,
        };
        plain_ioctl(&*d, &mut x).unwrap();
    }
    assert_eq!(d.live_handles().events, 0);
    let mut x = DestroyEventArgs {
        event_id: id,
        pad: 0,
    };
    assert_eq!(plain_ioctl(&*d, &mut x), Err(Errno::INVAL));
    let _ = UNSIGNALED_EVENT_SLOT;
}

#[test]
fn wait_events_times_out_and_checks_its_arguments() {
    let d = dev();
    let e = create_event(&d, KFD_IOC_EVENT_SIGNAL, true);
    let t = Instant::now();
    assert_eq!(
        wait(&d, &[e.event_id], false, 30),
        Ok(KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(30) && took < Duration::from_secs(2),
        "{took:?}"
    );
    // Unknown event id, too many events, unmapped array.
    assert_eq!(wait(&d, &[e.event_id + 1], false, 0), Err(Errno::INVAL));
    let mut w = WaitEventsArgs {
        events_ptr: 16,
        num_events: 1,
        wait_for_all: 0,
        timeout: 0,
        wait_result: 0,
    };
    assert_eq!(
        // SAFETY: address 16 is never mapped (page 0): EmulatedKfd answers EFAULT.
        unsafe { d.ioctl(AMDKFD_IOC_WAIT_EVENTS, w.as_mut_bytes()) },
        Err(Errno::FAULT)
    );
    w.num_events = KFD_SIGNAL_EVENT_LIMIT + 1;
    assert_eq!(
        // SAFETY: as above (and refused before any read: too many events).
        unsafe { d.ioctl(AMDKFD_IOC_WAIT_EVENTS, w.as_mut_bytes()) },
        Err(Errno::INVAL)
    );
}

#[test]
fn mmap_offsets_are_checked() {
    let d = dev();
    // No event page before the first signal event (kfd_event_mmap: EINVAL).
    let mmap = |target, offset, len| calls::mmap(&*d, target, offset, len);
    assert_eq!(
        mmap(MapTarget::Kfd, KFD_MMAP_EVENTS_OFFSET, 4096),
        Err(Errno::INVAL)
    );
    // Doorbell page of the GPU: exactly the process doorbell slice.
    let off = kfd_mmap_doorbell_offset(BUILTIN_GPU_ID);
    assert!(mmap(MapTarget::Kfd, off, 8192).is_ok());
    assert_eq!(mmap(MapTarget::Kfd, off, 4096), Err(Errno::INVAL));
    assert_eq!(
        mmap(MapTarget::Kfd, kfd_mmap_doorbell_offset(0x777), 8192),
        Err(Errno::INVAL)
    );
    // A render-node offset that names nothing, and one that does.
    assert_eq!(
        mmap(MapTarget::RenderNode(BUILTIN_GPU_ID), 0x1000, 4096),
        Err(Errno::INVAL)
    );
    let a = alloc(&d, 0x7700_0000_0000, 8192, GTT, 0).unwrap();
    assert!(mmap(MapTarget::RenderNode(BUILTIN_GPU_ID), a.mmap_offset, 8192).is_ok());
    assert_eq!(
        mmap(
            MapTarget::RenderNode(BUILTIN_GPU_ID),
            a.mmap_offset,
            3 * 4096
        ),
        Err(Errno::INVAL)
    );
    free(&d, a.handle).unwrap();
}

#[test]
fn the_event_page_must_be_a_gtt_buffer_object() {
    // amdkfd maps the event page into the kernel: amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel
    // refuses USERPTR memory with EINVAL, and a VRAM BO cannot be pinned in GTT.
    let d = dev();
    let create = |handle: u64| {
        let mut c = CreateEventArgs {
            event_type: KFD_IOC_EVENT_SIGNAL,
            auto_reset: 1,
            event_page_offset: handle,
            ..Default::default()
        };
        plain_ioctl(&*d, &mut c).map(|()| c)
    };
    let size = EVENT_PAGE_BYTES;
    let layout = std::alloc::Layout::from_size_align(size as usize, 4096).unwrap();
    // SAFETY: a non-zero-size layout; the pages stay allocated until the end of the test.
    let host = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!host.is_null());
    // SAFETY: `host` is this test's, mapped, untouched by it, and deallocated only after the
    // FREE of this handle below succeeded.
    let userptr = unsafe {
        alloc_any(
            &d,
            host as u64,
            size,
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            host as u64,
        )
    }
    .unwrap();
    assert_eq!(create(userptr.handle).unwrap_err(), Errno::INVAL);
    let vram = alloc(&d, 0x7f00_0000_0000, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0).unwrap();
    assert_eq!(create(vram.handle).unwrap_err(), Errno::INVAL);
    let small = alloc(&d, 0x7f00_0010_0000, 4096, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0).unwrap();
    assert_eq!(
        create(small.handle).unwrap_err(),
        Errno::INVAL,
        "under 32 KiB"
    );
    let gtt = alloc(&d, 0x7f00_0020_0000, size, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0).unwrap();
    let e = create(gtt.handle).unwrap();
    assert_eq!(e.event_slot_index, e.event_id);
    // kfd_event_create answers every signal event with the events mmap offset.
    assert_eq!(e.event_page_offset, KFD_MMAP_EVENTS_OFFSET);
    let mut destroy = DestroyEventArgs {
        event_id: e.event_id,
        ..Default::default()
    };
    plain_ioctl(&*d, &mut destroy).unwrap();
    for h in [userptr.handle, vram.handle, small.handle] {
        free(&d, h).unwrap();
    }
    // The page is the process's for its whole life: with no event left it still cannot be
    // freed (kfd_ioctl_free_memory_of_gpu: EPERM) nor replaced ("Event page is already set").
    assert_eq!(free(&d, gtt.handle).unwrap_err(), Errno::PERM);
    let other = alloc(&d, 0x7f00_0030_0000, size, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0).unwrap();
    assert_eq!(create(other.handle).unwrap_err(), Errno::INVAL);
    free(&d, other.handle).unwrap();
    // A later signal event gets a slot in the same page.
    let again = create(0).unwrap();
    assert_eq!(again.event_id, e.event_id, "the freed slot is reused");
    assert_eq!(again.event_page_offset, KFD_MMAP_EVENTS_OFFSET);
    assert_eq!(d.live_handles().memory, 1, "only the event page is left");
    // SAFETY: allocated above with this layout; KFD no longer knows the pages.
    unsafe { std::alloc::dealloc(host, layout) };
}

#[test]
fn the_event_page_can_come_with_any_event_type() {
    // kfd_ioctl_create_event takes the page from `event_page_offset` before it looks at the
    // type: ROCR's first event is a memory event, and its signal events then use that page.
    let d = dev();
    let page = alloc(
        &d,
        0x7f00_0040_0000,
        EVENT_PAGE_BYTES,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT,
        0,
    )
    .unwrap();
    let mut memory = CreateEventArgs {
        event_type: KFD_IOC_EVENT_MEMORY,
        auto_reset: 1,
        event_page_offset: page.handle,
        ..Default::default()
    };
    plain_ioctl(&*d, &mut memory).unwrap();
    let mut signal = CreateEventArgs {
        event_type: KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(&*d, &mut signal).unwrap();
    assert_eq!(signal.event_page_offset, KFD_MMAP_EVENTS_OFFSET);
    assert_eq!(
        free(&d, page.handle).unwrap_err(),
        Errno::PERM,
        "the memory event's page is the event page"
    );
}

/// The typed wrappers against the emulated device: what they refuse is never sent (the
/// device's ioctl count does not move), and what they send gets the device's answers.
#[test]
fn typed_wrappers_check_before_sending() {
    let d = dev();
    let a = alloc(&d, 0x7800_0000_0000, 4096, VRAM, 0).unwrap();
    let before = d.ioctl_count();
    let e = calls::map_memory_to_gpu(&*d, a.handle, &[]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let mut too_many = vec![EventData::default(); KFD_SIGNAL_EVENT_LIMIT as usize + 1];
    let e = calls::wait_events(&*d, &mut too_many, false, 0).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let e = calls::set_cu_mask(&*d, 0, &[]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let mut user = AllocMemoryOfGpuArgs {
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        ..a
    };
    let e = calls::alloc_memory_of_gpu(&*d, &mut user).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(d.ioctl_count(), before, "nothing was sent");

    assert_eq!(
        calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    let e = calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID, 0x9999]).unwrap_err();
    assert_eq!(
        e.detail(),
        "AMDKFD_IOC_MAP_MEMORY_TO_GPU: Invalid argument (errno 22)"
    );
    assert_eq!(
        calls::unmap_memory_from_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap(),
        1
    );
    let ev = create_event(&d, KFD_IOC_EVENT_SIGNAL, true);
    let mut data = [EventData {
        event_id: ev.event_id,
        ..Default::default()
    }];
    assert_eq!(
        calls::wait_events(&*d, &mut data, true, 0).unwrap(),
        KFD_IOC_WAIT_RESULT_TIMEOUT
    );
    calls::call(
        &*d,
        &mut SetEventArgs {
            event_id: ev.event_id,
            pad: 0,
        },
    )
    .unwrap();
    assert_eq!(
        calls::wait_events(&*d, &mut data, true, 0).unwrap(),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    calls::call(&*d, &mut FreeMemoryOfGpuArgs { handle: a.handle }).unwrap();
}

/// A wait for any of several events, as `kfd_wait_on_events` with `wait_for_all` 0: it returns
/// `COMPLETE` when the last one is set from another thread, and consumes only what was set
/// (the others stay unsignaled); every auto-reset event already signaled when the wait starts
/// is consumed by it (`init_event_waiter`), not only the first; a manual-reset one stays set.
#[test]
fn wait_for_any_returns_when_any_event_is_set_and_consumes_what_fired() {
    let d = dev();
    let ids: Vec<u32> = (0..6)
        .map(|_| create_event(&d, KFD_IOC_EVENT_SIGNAL, true).event_id)
        .collect();
    let set = |id: u32| {
        let mut s = SetEventArgs {
            event_id: id,
            pad: 0,
        };
        plain_ioctl(&*d, &mut s).unwrap();
    };
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| wait(&d, &ids, false, u32::MAX));
        std::thread::sleep(Duration::from_millis(30));
        set(ids[5]);
        assert_eq!(waiter.join().unwrap(), Ok(KFD_IOC_WAIT_RESULT_COMPLETE));
    });
    // Consumed: nothing is signaled any more.
    assert_eq!(wait(&d, &ids, false, 0), Ok(KFD_IOC_WAIT_RESULT_TIMEOUT));
    // Two set before the wait: one wait-any takes both.
    set(ids[1]);
    set(ids[4]);
    assert_eq!(wait(&d, &ids, false, 0), Ok(KFD_IOC_WAIT_RESULT_COMPLETE));
    assert_eq!(
        wait(&d, &[ids[4]], false, 0),
        Ok(KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    assert_eq!(
        wait(&d, &[ids[1]], false, 0),
        Ok(KFD_IOC_WAIT_RESULT_TIMEOUT)
    );
    // A manual-reset event among them stays set across waits.
    let m = create_event(&d, KFD_IOC_EVENT_SIGNAL, false).event_id;
    set(m);
    let with_m = [ids[0], m, ids[2]];
    assert_eq!(
        wait(&d, &with_m, false, 0),
        Ok(KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    assert_eq!(
        wait(&d, &with_m, false, 0),
        Ok(KFD_IOC_WAIT_RESULT_COMPLETE)
    );
    assert_eq!(wait(&d, &with_m, true, 0), Ok(KFD_IOC_WAIT_RESULT_TIMEOUT));
}

/// WAIT_EVENTS on one entry carrying `last_event_age` `age` (`kfd_hsa_signal_event_data`,
/// the union's first 8 bytes): the wait result and the age the entry holds afterwards.
fn wait_with_age(d: &EmulatedKfd, id: u32, age: u64, timeout_ms: u32) -> (u32, u64) {
    let mut data = [EventData {
        event_id: id,
        ..Default::default()
    }];
    data[0].union_data[..8].copy_from_slice(&age.to_ne_bytes());
    let mut w = WaitEventsArgs {
        events_ptr: data.as_mut_ptr() as u64,
        num_events: 1,
        wait_for_all: 0,
        timeout: timeout_ms,
        wait_result: 0xff,
    };
    // SAFETY: the event array is `data`, borrowed for the call, one entry long.
    unsafe { d.ioctl(AMDKFD_IOC_WAIT_EVENTS, w.as_mut_bytes()) }.unwrap();
    let back = u64::from_ne_bytes(data[0].union_data[..8].try_into().unwrap());
    (w.wait_result, back)
}

/// Event age (interface 1.14, `kfd_events.c`): a signal event is born at age 1 and each set
/// adds 1; a wait whose `last_event_age` differs from the event's age completes at once, even
/// when the set it missed was consumed by another wait, and writes the age back; one whose
/// age matches waits for the next set; age 0 waits as before 1.14 (and gets nothing back).
#[test]
fn wait_events_tracks_event_age() {
    let d = dev();
    let id = create_event(&d, KFD_IOC_EVENT_SIGNAL, true).event_id;
    let set = || {
        let mut s = SetEventArgs {
            event_id: id,
            pad: 0,
        };
        plain_ioctl(&*d, &mut s).unwrap();
    };
    let (complete, timeout) = (KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_TIMEOUT);
    // Not set yet: the caller's age 1 is the event's.
    assert_eq!(wait_with_age(&d, id, 1, 0), (timeout, 1));
    set();
    // Set once since age 1: complete, age 2 back.
    assert_eq!(wait_with_age(&d, id, 1, 0), (complete, 2));
    // Nothing new since age 2.
    assert_eq!(wait_with_age(&d, id, 2, 0), (timeout, 2));
    // Set and consumed by an age-less wait: a caller still at age 2 learns of it.
    set();
    assert_eq!(wait(&d, &[id], false, 0), Ok(complete));
    assert_eq!(wait_with_age(&d, id, 2, 0), (complete, 3));
    // A stale age completes again (the set is not consumed by age); age 0 sees nothing set.
    assert_eq!(wait_with_age(&d, id, 1, 0), (complete, 3));
    assert_eq!(wait_with_age(&d, id, 0, 0), (timeout, 0));
    // A set while the caller waits at its current age ends that wait with the new age.
    std::thread::scope(|sc| {
        let waiter = sc.spawn(|| wait_with_age(&d, id, 3, u32::MAX));
        std::thread::sleep(Duration::from_millis(30));
        set();
        assert_eq!(waiter.join().unwrap(), (complete, 4));
    });
}

/// RUNTIME_ENABLE as amdkfd runs it for a process without a debugger: enable once (`EBUSY`
/// the second time), disable always succeeds, `EEXIST` once the process has a queue; the
/// argument comes back as given. DBG_TRAP (0x26, 1.13) as amdkfd under the hardware
/// scheduler answers it before the debug trap is enabled: `EINVAL` for every operation but
/// `ENABLE`, which wants an open descriptor (`EBADF`); the rest is `device::debug`'s tests.
#[test]
fn runtime_enable_and_dbg_trap_answer_as_amdkfd() {
    let d = dev();
    let run = |mode_mask: u32| {
        let mut a = RuntimeEnableArgs {
            r_debug: 0,
            mode_mask,
            capabilities_mask: 0x5a,
        };
        let r = raw(&d, AMDKFD_IOC_RUNTIME_ENABLE, a.as_mut_bytes());
        assert_eq!(a.capabilities_mask, 0x5a);
        r
    };
    let enable = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK | KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK;
    assert_eq!(run(enable), Ok(()));
    assert_eq!(run(enable), Err(Errno::BUSY));
    // tinygrad's call (mode_mask 0) disables it.
    assert_eq!(run(0), Ok(()));
    assert_eq!(run(0), Ok(()));
    assert_eq!(run(enable), Ok(()));
    let mut dbg = [0u8; 32];
    for op in [0u32, 1, 2, 5, 14, 99] {
        dbg[..4].copy_from_slice(&std::process::id().to_ne_bytes());
        dbg[4..8].copy_from_slice(&op.to_ne_bytes());
        // ENABLE's dbg_fd (bytes 28..32): not a descriptor.
        dbg[28..32].copy_from_slice(&u32::MAX.to_ne_bytes());
        let want = if op == 0 { Errno::BADF } else { Errno::INVAL };
        assert_eq!(
            raw(&d, hsa_emu::device::AMDKFD_IOC_DBG_TRAP, &mut dbg),
            Err(want),
            "op {op}"
        );
    }
    assert_eq!(hsa_emu::device::AMDKFD_IOC_DBG_TRAP, 0xc020_4b26);
}

/// As `kfd_wait_on_events`: a wait on an event that is destroyed while it waits ends with
/// `KFD_IOC_WAIT_RESULT_FAIL` and `EIO` (what wakes a thread blocked on a memory or
/// hardware-exception event when its owner shuts down); an unknown event is `EINVAL` before
/// any wait.
#[test]
fn destroying_an_event_ends_a_wait_on_it_with_eio() {
    let d = dev();
    // The waiter may not have entered its wait when the event is destroyed (a loaded host
    // can keep the thread from running for longer than the pause): then its wait names a
    // destroyed event, EINVAL, and the case is tried again with a longer pause, on a new
    // event. Any other outcome fails at once.
    let mut eio = false;
    for attempt in 1..=10u64 {
        let mut ce = CreateEventArgs {
            event_type: KFD_IOC_EVENT_MEMORY,
            auto_reset: 1,
            ..Default::default()
        };
        plain_ioctl(&*d, &mut ce).unwrap();
        let id = ce.event_id;
        let started = Instant::now();
        let detail = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let mut data = [EventData {
                    event_id: id,
                    ..Default::default()
                }];
                calls::wait_events(&*d, &mut data, false, u32::MAX)
            });
            std::thread::sleep(Duration::from_millis(50 * attempt));
            let mut de = DestroyEventArgs {
                event_id: id,
                pad: 0,
            };
            plain_ioctl(&*d, &mut de).unwrap();
            waiter.join().unwrap().unwrap_err().detail().to_string()
        });
        assert!(started.elapsed() < Duration::from_secs(5));
        let mut data = [EventData {
            event_id: id,
            ..Default::default()
        }];
        let e = calls::wait_events(&*d, &mut data, false, 0).unwrap_err();
        assert!(e.detail().to_string().contains("(errno 22)"), "{e}");
        if detail.contains("(errno 5)") {
            eio = true;
            break;
        }
        assert!(detail.contains("(errno 22)"), "attempt {attempt}: {detail}");
    }
    assert!(
        eio,
        "no wait was ended by the destroy with EIO in 10 attempts"
    );
}

/// EXPORT_DMABUF / IMPORT_DMABUF between two emulated devices (two processes' devices, as the
/// IPC functions use them): the importer's buffer object is the exporter's pages, mapped for
/// the host through the dma-buf; and the kernel's errnos for what cannot be shared.
#[test]
fn dmabuf_export_and_import_share_pages_between_devices() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let a = dev();
    let b = dev();
    let bo = alloc(&a, 0x7100_0000_0000, 8192, VRAM, 0).unwrap();
    let mut e = ExportDmabufArgs {
        handle: bo.handle,
        flags: (rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::RDWR).bits(),
        dmabuf_fd: 0,
    };
    plain_ioctl(&*a, &mut e).unwrap();
    // SAFETY: a successful EXPORT_DMABUF returns a new descriptor the caller owns.
    let fd = unsafe { OwnedFd::from_raw_fd(e.dmabuf_fd as i32) };
    assert_eq!(rustix::fs::fstat(&fd).unwrap().st_size, 8192);

    let mut i = ImportDmabufArgs {
        va_addr: 0x7200_0000_0000,
        handle: 0,
        gpu_id: BUILTIN_GPU_ID,
        dmabuf_fd: fd.as_raw_fd() as u32,
    };
    plain_ioctl(&*b, &mut i).unwrap();
    assert_ne!(i.handle, 0);
    assert_eq!(b.live_handles().memory, 1);
    assert_eq!(
        map(
            &b,
            i.handle,
            &[BUILTIN_GPU_ID],
            AMDKFD_IOC_MAP_MEMORY_TO_GPU
        )
        .0,
        Ok(())
    );
    // The same address again overlaps the import: EINVAL.
    let mut again = ImportDmabufArgs { handle: 0, ..i };
    assert_eq!(plain_ioctl(&*b, &mut again), Err(Errno::INVAL));

    // Host views: the exporter's through its render node, the importer's through the dma-buf
    // (which has no render-node offset; an offset into it is EINVAL).
    let pa = calls::mmap(
        &*a,
        MapTarget::RenderNode(BUILTIN_GPU_ID),
        bo.mmap_offset,
        8192,
    )
    .unwrap();
    let pb = calls::mmap(&*b, MapTarget::DmaBuf(fd.as_raw_fd()), 0, 8192).unwrap();
    assert_eq!(
        calls::mmap(&*b, MapTarget::DmaBuf(fd.as_raw_fd()), 4096, 4096),
        Err(Errno::INVAL)
    );
    assert_eq!(
        calls::mmap(&*b, MapTarget::DmaBuf(fd.as_raw_fd()), 0, 3 * 4096),
        Err(Errno::INVAL)
    );
    drop(fd); // the import and the mappings hold the pages
              // SAFETY: two fresh shared mappings of the same 8192 bytes, used only here, atomically.
    let (wa, wb) = unsafe {
        (
            &*pa.as_ptr().add(4100).cast::<std::sync::atomic::AtomicU32>(),
            &*pb.as_ptr().add(4100).cast::<std::sync::atomic::AtomicU32>(),
        )
    };
    wa.store(0x1234_5678, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(wb.load(std::sync::atomic::Ordering::SeqCst), 0x1234_5678);
    wb.store(0x9abc_def0, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(wa.load(std::sync::atomic::Ordering::SeqCst), 0x9abc_def0);
    // The exporter frees its buffer object; the import still holds the pages.
    free(&a, bo.handle).unwrap();
    assert_eq!(wb.load(std::sync::atomic::Ordering::SeqCst), 0x9abc_def0);
    assert_eq!(
        map(
            &b,
            i.handle,
            &[BUILTIN_GPU_ID],
            AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU
        )
        .0,
        Ok(())
    );
    free(&b, i.handle).unwrap();
    assert_eq!(b.live_handles().memory, 0);

    // Errors: an unknown handle, flags beyond O_CLOEXEC | O_RDWR, USERPTR memory (EPERM),
    // a descriptor number that names nothing (EBADF), one that is no emulated dma-buf.
    let mut bad = ExportDmabufArgs {
        handle: (u64::from(BUILTIN_GPU_ID) << 32) | 0xffff,
        ..e
    };
    assert_eq!(plain_ioctl(&*a, &mut bad), Err(Errno::INVAL));
    let gtt = alloc(&a, 0x7300_0000_0000, 4096, GTT, 0).unwrap();
    let mut odd = ExportDmabufArgs {
        handle: gtt.handle,
        flags: rustix::fs::OFlags::APPEND.bits(),
        dmabuf_fd: 0,
    };
    assert_eq!(plain_ioctl(&*a, &mut odd), Err(Errno::INVAL));
    let mut page = vec![0u8; 8192];
    let host = (page.as_mut_ptr() as u64).next_multiple_of(4096);
    // SAFETY: `host..host+4096` lies in `page`, which outlives the buffer object (freed below).
    let user = unsafe {
        alloc_any(
            &a,
            0x7400_0000_0000,
            4096,
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            host,
        )
    }
    .unwrap();
    let mut up = ExportDmabufArgs {
        handle: user.handle,
        ..e
    };
    assert_eq!(plain_ioctl(&*a, &mut up), Err(Errno::PERM));
    free(&a, user.handle).unwrap();
    free(&a, gtt.handle).unwrap();
    let mut none = ImportDmabufArgs {
        dmabuf_fd: 0x7fff_fff0,
        ..i
    };
    assert_eq!(plain_ioctl(&*b, &mut none), Err(Errno::BADF));
    let null = std::fs::File::open("/dev/null").unwrap();
    let mut foreign = ImportDmabufArgs {
        dmabuf_fd: null.as_raw_fd() as u32,
        ..i
    };
    assert_eq!(plain_ioctl(&*b, &mut foreign), Err(Errno::INVAL));
    assert_eq!(b.live_handles().memory, 0);
}

/// A second descriptor of one emulated process: every call goes to the same `EmulatedKfd`
/// (amdkfd's one `kfd_process` per address space), as a second `open("/dev/kfd")` in one
/// process would.
struct SecondDescriptor(Arc<EmulatedKfd>);

impl KfdDriver for SecondDescriptor {
    fn name(&self) -> &str {
        "emulated (second descriptor)"
    }

    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { self.0.ioctl(request, arg) }
    }

    unsafe fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<std::ptr::NonNull<u8>>,
    ) -> Result<std::ptr::NonNull<u8>, Errno> {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { self.0.mmap(target, offset, len, addr) }
    }

    fn render_node_fd(&self, gpu_id: u32) -> Result<i32, Errno> {
        self.0.render_node_fd(gpu_id)
    }
}

/// amdkfd takes one event page per process and refuses a second one
/// (`kfd_kmap_event_page`: "Event page is already set", `EINVAL`). Two platforms on one
/// driver share the process's page (its first event hands it over once; the second
/// platform's events get mailboxes in it); a platform on a second descriptor of the same
/// process hands over a page of its own, which the emulated amdkfd refuses as amdkfd does,
/// and the error says why. That is why `DevKfd::open` opens `/dev/kfd` once per process.
#[test]
fn a_second_descriptor_of_the_process_cannot_hand_kfd_another_event_page() {
    use hsa_core::platform::Platform;
    use hsa_linux::LinuxPlatform;
    let d = dev();
    let topology = d.topology().clone();
    let first = LinuxPlatform::new(d.clone(), topology.clone()).unwrap();
    let e1 = first.create_event().unwrap();
    let same = LinuxPlatform::new(d.clone(), topology.clone()).unwrap();
    let e2 = same.create_event().unwrap();
    // One page: the mailboxes are slots of it (8 bytes each).
    assert_eq!(
        e2.mailbox.0.wrapping_sub(e1.mailbox.0),
        8 * u64::from(e2.id.0.wrapping_sub(e1.id.0))
    );
    let memory = d.live_handles().memory;
    let second = LinuxPlatform::new(Arc::new(SecondDescriptor(d.clone())), topology).unwrap();
    let e = second.create_event().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(
        e.detail().starts_with(
            "handing KFD the process's event page (amdkfd takes one per process; another \
             open of /dev/kfd in this process may have set it): AMDKFD_IOC_CREATE_EVENT: "
        ),
        "{}",
        e.detail()
    );
    // The refused page was freed again.
    assert_eq!(d.live_handles().memory, memory);
}

/// GET_DMABUF_INFO as `kfd_ioctl_get_dmabuf_info` and `amdgpu_amdkfd_get_dmabuf_info`: for a
/// dma-buf of another process's buffer object, its size, its GPU and its domain (`VRAM`,
/// with `PUBLIC` when allocated so, or `GTT`), no metadata; `EBADF` for a number that names
/// no descriptor; `EINVAL` for a descriptor that is no dma-buf of an emulated buffer object.
#[test]
fn dmabuf_info_names_the_exporters_gpu_size_and_domain() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let a = dev();
    let b = dev();
    let cases = [
        (
            0x7100_0000_0000,
            8192,
            VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
        ),
        (0x7100_0001_0000, 4096, VRAM, KFD_IOC_ALLOC_MEM_FLAGS_VRAM),
        (0x7100_0002_0000, 12288, GTT, KFD_IOC_ALLOC_MEM_FLAGS_GTT),
    ];
    let info = |d: &EmulatedKfd, fd: u32| {
        let mut i = GetDmabufInfoArgs {
            metadata_size: 64,
            dmabuf_fd: fd,
            ..Default::default()
        };
        // SAFETY: metadata_ptr is 0: the device writes through no pointer.
        let r = unsafe { d.ioctl(AMDKFD_IOC_GET_DMABUF_INFO, i.as_mut_bytes()) };
        r.map(|()| (i.size, i.gpu_id, i.flags, i.metadata_size))
    };
    for (va, size, flags, want) in cases {
        let bo = alloc(&a, va, size, flags, 0).unwrap();
        let mut e = ExportDmabufArgs {
            handle: bo.handle,
            flags: rustix::fs::OFlags::CLOEXEC.bits(),
            dmabuf_fd: 0,
        };
        plain_ioctl(&*a, &mut e).unwrap();
        // SAFETY: a successful EXPORT_DMABUF returns a new descriptor the caller owns.
        let fd = unsafe { OwnedFd::from_raw_fd(e.dmabuf_fd as i32) };
        assert_eq!(
            info(&b, fd.as_raw_fd() as u32),
            Ok((size, BUILTIN_GPU_ID, want, 0)),
            "flags {flags:#x}"
        );
        // The exporter's buffer object may go: the dma-buf keeps what it is.
        free(&a, bo.handle).unwrap();
        assert_eq!(info(&a, fd.as_raw_fd() as u32).map(|i| i.2), Ok(want));
    }
    let closed = {
        let f = std::fs::File::open("/dev/null").unwrap();
        f.as_raw_fd() as u32
    };
    assert_eq!(info(&b, closed), Err(Errno::BADF));
    let null = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(info(&b, null.as_raw_fd() as u32), Err(Errno::INVAL));
    let other = rustix::fs::memfd_create("not-a-bo", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&other, 4096).unwrap();
    assert_eq!(info(&b, other.as_raw_fd() as u32), Err(Errno::INVAL));
}

/// What amdkfd still answers at numbers it keeps for old interfaces: GET_PROCESS_APERTURES
/// (the first GPUs' apertures, as GET_PROCESS_APERTURES_NEW reports them), `EPERM` for the
/// first debugger interface's four requests (gone since Linux 6.2), and `EACCES` for
/// CRIU_OP from a process without `CAP_CHECKPOINT_RESTORE`/`CAP_SYS_ADMIN`, before the
/// argument is looked at.
#[test]
fn old_numbers_answer_as_amdkfd() {
    let d = dev();
    let mut old = GetProcessAperturesArgs::default();
    old.process_apertures[1].gpu_id = 0xdead;
    raw(&d, AMDKFD_IOC_GET_PROCESS_APERTURES, old.as_mut_bytes()).unwrap();
    assert_eq!(old.num_of_nodes, 1);
    let mut entries = [ProcessDeviceApertures::default(); 2];
    let mut new = GetProcessAperturesNewArgs {
        kfd_process_device_apertures_ptr: entries.as_mut_ptr() as u64,
        num_of_nodes: 2,
        pad: 0,
    };
    // SAFETY: the pointer is `entries`, two entries long, borrowed for the call.
    unsafe { d.ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, new.as_mut_bytes()) }.unwrap();
    assert_eq!(new.num_of_nodes, 1);
    assert_eq!(old.process_apertures[0], entries[0]);
    assert_eq!(old.process_apertures[0].gpu_id, BUILTIN_GPU_ID);
    assert_ne!(old.process_apertures[0].lds_base, 0);
    // Entries past the GPUs: amdkfd's argument is zeroed before its handler runs (IOC_OUT).
    assert_eq!(old.process_apertures[1], ProcessDeviceApertures::default());

    let mut r = DbgRegisterArgs {
        gpu_id: BUILTIN_GPU_ID,
        pad: 0,
    };
    assert_eq!(
        raw(&d, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, r.as_mut_bytes()),
        Err(Errno::PERM)
    );
    assert_eq!(
        raw(&d, AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, r.as_mut_bytes()),
        Err(Errno::PERM)
    );
    let mut w = DbgContentArgs::default();
    assert_eq!(
        raw(
            &d,
            AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED,
            w.as_mut_bytes()
        ),
        Err(Errno::PERM)
    );
    assert_eq!(
        raw(&d, AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, w.as_mut_bytes()),
        Err(Errno::PERM)
    );
    let mut c = CriuArgs {
        op: 0,
        ..Default::default()
    };
    assert_eq!(
        raw(&d, AMDKFD_IOC_CRIU_OP, c.as_mut_bytes()),
        Err(Errno::ACCESS)
    );
}
