//! Scratch as silicon does it (issue 38), through hsa-rt's runtime on the emulated device:
//! hsa-core gives each queue its scratch and writes `amd_queue_t`'s scratch fields, and the
//! emulated CP builds every wave's private segment buffer, flat scratch and wave offset from
//! them. A 64 KiB private array per work-item and a recursive function (frames on the scratch
//! stack) give the values the host computes, on queues created with scratch and on queues
//! that start without and grow it when the CP reports its scratch request (queue error code 1
//! in the inactive signal), served by `AqlQueue::wait_completion` as ROCR's
//! `DynamicScratchHandler` serves it; the emulated GPU's VRAM returns to its level before the
//! queue once it is destroyed. A request no queue can hold fails the queue with
//! `OUT_OF_RESOURCES`, and no work-item writes.
//!
//! Kernels: `testdata/codeobjects/scratch.c` (`scratch/scratch-gfx90a-v5.hsaco`).

use std::sync::Arc;

use hsa_core::abi::queue::AmdQueue;
use hsa_core::loader::executable::Executable;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::{HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig, QueueState};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{NodeId, Status};
use hsa_emu::device::BUILTIN_GPU_ID;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::kfd::abi::GetAvailableMemoryArgs;
use hsa_linux::kfd::calls::plain_ioctl;

/// Work-items of each dispatch: two work-groups of 64 (two waves, which the emulated device
/// may run on two host threads, each in its own scratch slot).
const ITEMS: u32 = 128;

fn code_object() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/scratch/scratch-gfx90a-v5.hsaco");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The host's `big_private` (scratch.c).
fn big_private(seed: u32, i: u32) -> u32 {
    const BIG: u32 = 16384;
    let tmp = |j: u32| seed.wrapping_mul(j + 1).wrapping_add(i);
    (0..BIG)
        .step_by(97)
        .fold(0u32, |s, j| s.wrapping_add(tmp(j.wrapping_mul(seed) % BIG)))
}

/// The host's `walk` (scratch.c).
fn walk(input: &[u32], k: u32, acc: u32) -> u32 {
    let frame = |j: u32| acc.wrapping_add(j).wrapping_add(k);
    if k == 0 {
        return acc;
    }
    let r = walk(
        input,
        k - 1,
        acc.wrapping_mul(31).wrapping_add(input[(k % 64) as usize]),
    );
    r ^ frame(acc.wrapping_add(r) % 8)
}

/// What one dispatch did: the queue's state after it, its `amd_queue_t`'s scratch fields
/// (`compute_tmpring_size`, `scratch_backing_memory_byte_size`,
/// `scratch_wave64_lane_byte_size`), and `out`.
struct Run {
    /// `scratch_size_bytes` of the queue right after creation and after the dispatch.
    scratch_before: u64,
    scratch_after: u64,
    /// The emulated GPU's available VRAM (`AMDKFD_IOC_AVAILABLE_MEMORY`) before the queue was
    /// created and after it was destroyed, bytes.
    vram_before: u64,
    vram_after: u64,
    state: QueueState,
    inactive_value: i64,
    error: Option<hsa_core::Error>,
    tmpring: u32,
    scratch_bytes: u64,
    lane_bytes: u32,
    /// `amd_queue_t`'s group and private aperture bases, bits 63:32.
    apertures_hi: (u32, u32),
    out: Vec<u32>,
}

/// Runs `kernel` over [`ITEMS`] work-items of `input` on a new queue whose scratch holds
/// `queue_private` bytes per work-item, the packet asking for `packet_private`.
fn run(kernel: &str, input: &[u32], queue_private: Option<u32>, packet_private: u32) -> Run {
    let kfd = EmulatedKfd::new(builtin_topology()).unwrap();
    let vram = || {
        let mut a = GetAvailableMemoryArgs {
            gpu_id: BUILTIN_GPU_ID,
            ..Default::default()
        };
        plain_ioctl(&*kfd, &mut a).unwrap();
        a.available
    };
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(kfd.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let target = *gpu.isa().unwrap();
    let pool = |f| rt.find_pool(cpu.handle(), f).unwrap().handle();
    let gpu_node = NodeId(gpu.node());
    let mut exe = Executable::new(rt.platform());
    exe.load_code_object(gpu_node, &target, &code_object(), MemoryKind::System)
        .unwrap();
    exe.freeze().unwrap();
    let k = exe
        .symbol_by_name(kernel, Some(gpu_node))
        .unwrap()
        .kernel
        .clone()
        .unwrap();
    let n = ITEMS as usize;
    let buf_in = rt
        .allocate(pool(GlobalFlags::FINE_GRAINED), 4 * 64.max(n as u64))
        .unwrap();
    let buf_out = rt
        .allocate(pool(GlobalFlags::FINE_GRAINED), 4 * n as u64)
        .unwrap();
    let kernarg = rt.allocate(pool(GlobalFlags::KERNARG), 4096).unwrap();
    let (in_ptr, out_ptr) = (
        buf_in.host_ptr.unwrap().as_ptr().cast::<u32>(),
        buf_out.host_ptr.unwrap().as_ptr().cast::<u32>(),
    );
    let ka = kernarg.host_ptr.unwrap().as_ptr();
    // SAFETY: live host-accessible allocations of the sizes above, which the GPU touches only
    // between the doorbell and the wait below.
    unsafe {
        for (i, v) in input.iter().enumerate() {
            in_ptr.add(i).write_volatile(*v);
        }
        for i in 0..n {
            out_ptr.add(i).write_volatile(0xEEEE_EEEE);
        }
        ka.write_bytes(0, 4096);
        ka.cast::<u64>().write_unaligned(buf_in.va.0);
        ka.add(8).cast::<u64>().write_unaligned(buf_out.va.0);
        ka.add(16).cast::<u32>().write_unaligned(ITEMS);
    }
    let mut config = QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size());
    config.private_segment_size = queue_private;
    let vram_before = vram();
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let scratch_before = q.scratch_size_bytes();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let done = signals.create_interrupt(1).unwrap();
    let dispatch = KernelDispatch {
        flags: HeaderFlags::SYSTEM,
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [ITEMS, 1, 1],
        private_segment_size_bytes: packet_private.max(k.private_segment_size),
        group_segment_size_bytes: k.group_segment_size,
        kernel_object: k.kernel_object,
        kernarg_address: kernarg.va,
        completion_signal: done.handle(),
    };
    let mut reservation = q.reserve(1).unwrap();
    let last = reservation.write_next(&dispatch.emit().unwrap()).unwrap();
    q.ring_doorbell(last).unwrap();
    // Ends at completion or when the queue stops (the inactive signal changes).
    let _ = q.wait_completion(
        &done,
        SignalCondition::Lt,
        1,
        60_000_000_000,
        WaitState::Blocked,
    );
    // SAFETY: the ring and its amd_queue_t are live until the queue is destroyed below; the
    // scratch fields read were written at creation and the processor only reads them.
    let amd: AmdQueue = unsafe { q.ring().amd_queue().as_ptr().read_volatile() };
    let scratch_after = q.scratch_size_bytes();
    let mut run = Run {
        scratch_before,
        scratch_after,
        vram_before,
        vram_after: 0,
        state: q.state(),
        inactive_value: q.inactive_signal().load(LoadOrder::Acquire),
        error: q.error(),
        tmpring: amd.compute_tmpring_size,
        scratch_bytes: amd.scratch_backing_memory_byte_size,
        lane_bytes: amd.scratch_wave64_lane_byte_size,
        apertures_hi: (
            amd.group_segment_aperture_base_hi,
            amd.private_segment_aperture_base_hi,
        ),
        // SAFETY: as above; the dispatch completed or stopped (acquire wait).
        out: (0..n)
            .map(|i| unsafe { out_ptr.add(i).read_volatile() })
            .collect(),
    };
    q.destroy().unwrap();
    run.vram_after = vram();
    done.destroy().unwrap();
    for va in [buf_in.va, buf_out.va, kernarg.va] {
        rt.free(va).unwrap();
    }
    exe.destroy().unwrap();
    run
}

fn input() -> Vec<u32> {
    (0..ITEMS.max(64))
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect()
}

/// A 64 KiB private array per work-item on a queue created for it (65540 bytes per lane, the
/// kernel's fixed size: 3328 slots of 4097 KiB, WAVES 0xD00 and WAVESIZE 4097 in
/// COMPUTE_TMPRING_SIZE): every work-item's sum is the host's.
#[test]
fn large_private_array_runs_in_the_queues_scratch() {
    let input = input();
    let r = run("big_private", &input, Some(65540), 0);
    assert_eq!(
        r.state,
        QueueState::Active,
        "{:?} tmpring {:#x} bytes {:#x} lane {}",
        r.error,
        r.tmpring,
        r.scratch_bytes,
        r.lane_bytes
    );
    assert_eq!(r.tmpring, 0xD00 | 4097 << 12);
    assert_eq!(r.lane_bytes, 65552);
    // The apertures the emulated amdkfd reported (GET_PROCESS_APERTURES_NEW: LDS at 1 << 48,
    // scratch at 2 << 48), in amd_queue_t as ROCR writes them.
    assert_eq!(r.apertures_hi, (0x0001_0000, 0x0002_0000));
    assert_eq!(r.scratch_bytes, 3328 * 64 * 65552);
    for i in 0..ITEMS {
        assert_eq!(
            r.out[i as usize],
            big_private(input[i as usize], i),
            "out[{i}]"
        );
    }
}

/// A recursive call 1..12 frames deep on hsa-core's fixed carve-out (2 KiB per lane, what
/// the C API's queues take at creation; the packet asking for 1 KiB as HIP's default stack
/// size does): each frame's words live on the scratch stack across the call; results as the
/// host's; no request (the scratch is the one made at creation).
#[test]
fn recursive_call_runs_on_the_fixed_queue_scratch() {
    let input = input();
    let r = run("recursive", &input, Some(2048), 1024);
    assert_eq!(r.scratch_before, r.scratch_after);
    assert_eq!(
        r.state,
        QueueState::Active,
        "{:?} tmpring {:#x} bytes {:#x} lane {}",
        r.error,
        r.tmpring,
        r.scratch_bytes,
        r.lane_bytes
    );
    assert_eq!(r.lane_bytes, 2048);
    assert_eq!(r.tmpring, 0xD00 | 128 << 12);
    for i in 0..ITEMS {
        let want = walk(&input, input[i as usize] % 12 + 1, i);
        assert_eq!(r.out[i as usize], want, "out[{i}]");
    }
}

/// The 64 KiB private array on a queue created without scratch (hsa-core's default, ROCR's):
/// the CP's scratch request grows it for the packet's 65540 bytes per work-item (65552 per
/// lane, WAVESIZE 4097 KiB); all 3328 slots would take 13.9 GB, above ROCR's 140 MiB, so the
/// queue gets the slots the dispatch fills (ROCR's "large" scratch): 2 work-groups over 8
/// shader engines, at least one each, one wave per group — 8 slots, 8 × 4097 KiB. Every
/// work-item's sum is the host's, and the VRAM is back once the queue is gone.
#[test]
fn large_private_array_grows_the_queues_scratch_from_zero() {
    let input = input();
    let r = run("big_private", &input, None, 0);
    assert_eq!(r.state, QueueState::Active, "{:?}", r.error);
    assert_eq!(r.scratch_before, 0);
    assert_eq!(r.tmpring, 8 | 4097 << 12);
    assert_eq!(r.lane_bytes, 65552);
    assert_eq!(r.scratch_bytes, 8 * 64 * 65552);
    assert_eq!(r.scratch_after, 8 * 64 * 65552);
    for i in 0..ITEMS {
        assert_eq!(
            r.out[i as usize],
            big_private(input[i as usize], i),
            "out[{i}]"
        );
    }
    assert_eq!(r.vram_after, r.vram_before);
}

/// The recursive call on a queue created without scratch, the packet asking for 1 KiB per
/// work-item: 64 KiB per wave for all 3328 slots is 208 MiB, above 140 MiB, so 8 slots
/// (as above); results as the host's; VRAM back after destroy.
#[test]
fn recursive_call_grows_the_queues_scratch_from_zero() {
    let input = input();
    let r = run("recursive", &input, None, 1024);
    assert_eq!(r.state, QueueState::Active, "{:?}", r.error);
    assert_eq!(r.scratch_before, 0);
    assert_eq!((r.tmpring, r.lane_bytes), (8 | 64 << 12, 1024));
    assert_eq!((r.scratch_bytes, r.scratch_after), (8 << 16, 8 << 16));
    for i in 0..ITEMS {
        let want = walk(&input, input[i as usize] % 12 + 1, i);
        assert_eq!(r.out[i as usize], want, "out[{i}]");
    }
    assert_eq!(r.vram_after, r.vram_before);
}

/// A request no queue can hold: the packet asks for 131057 bytes per work-item, 8388608
/// bytes per wave (16-byte lanes), above COMPUTE_TMPRING_SIZE.WAVESIZE's 8191 KiB (ROCR's `MAX_WAVE_SCRATCH`).
/// The queue stops with `OUT_OF_RESOURCES` (ROCR's status for a scratch request it cannot
/// serve), in its state, its recorded error and the inactive signal (status in the upper
/// half); it holds no scratch and no work-item wrote.
#[test]
fn an_impossible_scratch_request_fails_the_queue_with_out_of_resources() {
    let r = run("recursive", &input(), None, 131_057);
    assert_eq!(r.state, QueueState::Stopped(Status::OutOfResources));
    let e = r.error.expect("recorded");
    assert_eq!(e.status(), Status::OutOfResources);
    assert!(
        e.detail().to_string().contains("8388608 bytes per wave"),
        "{e}"
    );
    assert_eq!(
        r.inactive_value >> 32,
        i64::from(Status::OutOfResources.raw())
    );
    assert_eq!((r.tmpring, r.scratch_bytes, r.scratch_after), (0, 0, 0));
    assert!(r.out.iter().all(|&v| v == 0xEEEE_EEEE));
    assert_eq!(r.vram_after, r.vram_before);
}
