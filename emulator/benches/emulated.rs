//! Issue 10, the emulated device's hot paths against their physical baselines, side by side:
//!
//! - B4: empty-kernel dispatch round trip: publish a kernel dispatch packet, ring the doorbell,
//!   the emulated CP thread runs it, decrements the completion signal, the active wait
//!   returns. Baseline: a `crossbeam` channel round trip between the same two threads. The
//!   kernel is an empty host implementation registered for `vector_copy`'s kernel object once
//!   the code object is loaded, run because the
//!   device is put in [`ExecutionMode::HostOnly`]: by default it would interpret
//!   `vector_copy`'s real machine code, which faults on the bench's zeroed kernargs. The wait
//!   is the queue's `wait_completion`, so a queue the CP stopped fails the bench at once with
//!   the CP's error instead of a timeout.
//! - B6: blocked-wait wake-up latency through the futex path: a waiter blocks on an interrupt
//!   signal (spin phase over, blocked in the device's event wait), the other thread stores;
//!   the time from the store to the wait's return. Baseline: the same with a raw futex
//!   wait/wake (`rustix`). Each iteration first sleeps 300 µs so the waiter is surely blocked;
//!   only the latency is timed.
//! - SDMA copy: a 64 KiB linear copy on an SDMA queue of the emulated device
//!   (`hsa_core::sdma::SdmaQueue`, the command of `copy_commands`: HDP flush, `COPY_LINEAR`,
//!   the completion's `ATOMIC` decrement), submitted and spun on until the value reaches 0.
//!   The queue is created from CPU 1 so its engine thread (which inherits its creator's
//!   CPUs) runs beside the bench thread, not on its CPU. Baseline: a host `memcpy` of the
//!   same 64 KiB.
//!
//! Run: `cargo bench -p hsa-emu --bench emulated` (the device is always the emulated one
//! here); `BENCHMARKS.md` is made from criterion's output by `scripts/bench_report.py`.
#![allow(missing_docs)] // criterion_group! makes an undocumented pub fn
#![allow(unsafe_code)] // writing the kernarg segment through its host pointer

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam::channel;

use hsa_core::abi::SignalHandle;
use hsa_core::loader::executable::Executable;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::{HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::NodeId;
use hsa_emu::{EmulatedKfd, ExecutionMode};
use hsa_linux::LinuxPlatform;
use hsa_tools::demo::{default_code_object_dir, find_code_object};
use rustix::thread::futex;

/// How long B6 sleeps before each store, so the waiter is past its spin phase
/// ([`hsa_core::signal::SPIN_NS`]) and blocked.
const B6_SLEEP: Duration = Duration::from_micros(300);
/// How long B6's waiters block before they look at their stop flag (and block again): a bound
/// so that a bench that failed can end its waiter thread. A wait that times out just before a
/// store costs that iteration its blocked state; at one in `B6_WAIT_SLICE / B6_SLEEP` (~3000)
/// iterations the median does not see it.
const B6_WAIT_SLICE: Duration = Duration::from_secs(1);
/// How long B6 waits for a wake-up before it fails (a lost wake-up, not a slow one).
const B6_DEADLINE: Duration = Duration::from_secs(10);

/// Pins the calling thread to `cpu` (bench thread 0, its peer 1). Ignored where not allowed.
fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu % rustix::thread::CpuSet::MAX_CPU);
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

/// Whether the calling thread may be pinned to `cpu` (its affinity is restored after).
fn cpu_usable(cpu: usize) -> bool {
    let Ok(before) = rustix::thread::sched_getaffinity(None) else {
        return false;
    };
    pin(cpu);
    let usable = rustix::thread::sched_getaffinity(None).is_ok_and(|s| s.is_set(cpu));
    let _ = rustix::thread::sched_setaffinity(None, &before);
    usable
}

/// Panics when a thread of this process whose name starts with `prefix` (an emulated
/// engine's thread) may run on `cpu`, the bench thread's: the bench thread spins while it
/// waits, so an engine sharing its CPU runs only when the scheduler preempts the spin, and
/// the bench would time the scheduler's slices instead of the engine.
fn assert_engines_apart(prefix: &str, cpu: usize) {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    let mut seen = 0;
    for t in tasks.flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let tid = t
            .file_name()
            .to_string_lossy()
            .parse::<i32>()
            .expect("task id");
        let set = rustix::thread::sched_getaffinity(rustix::process::Pid::from_raw(tid))
            .expect("engine thread's affinity");
        assert!(
            !set.is_set(cpu),
            "{} (task {tid}) may run on CPU {cpu}, the bench thread's",
            name.trim_end()
        );
        seen += 1;
    }
    assert!(seen > 0, "no {prefix}* thread in /proc/self/task");
}

/// CLOCK_MONOTONIC, ns (comparable across threads).
fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Why the CP stopped B4's queue: the device's log has the whole detail; the queue what
/// amdkfd's event said (the platform's event monitor records it after the CP stored the
/// status, which ends the wait), so wait for it a little.
fn cp_error<H: hsa_core::PlatformRef>(emulated: &EmulatedKfd, queue: &AqlQueue<H>) -> String {
    let logged = emulated
        .queue_error(queue.hw_id().0)
        .map_or_else(|| "nothing".to_owned(), |e| e.to_string());
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(e) = queue.error() {
            return format!("the CP logged {logged}; the queue recorded {e}");
        }
        if Instant::now() > deadline {
            return format!("the CP logged {logged}; no queue error within 1 s");
        }
        thread::sleep(Duration::from_millis(1));
    }
}

fn open_emulated() -> (LinuxPlatform, Arc<EmulatedKfd>) {
    // Before any thread exists: the bench always runs on the emulated device.
    std::env::set_var("HSA_RT_DEVICE", "emulated");
    let device = hsa_emu::open_default().expect("emulated device");
    let (platform, emulated) = (device.platform, device.emulated);
    let emulated = emulated.expect("HSA_RT_DEVICE=emulated");
    // Host implementations only: the default mode would interpret vector_copy's machine code
    // instead (B4 registers an empty one once the kernel is loaded).
    emulated.set_execution_mode(ExecutionMode::HostOnly);
    (platform, emulated)
}

fn b4_dispatch_round_trip(c: &mut Criterion) {
    // The queue's CP thread inherits the affinity of the thread that creates the queue: CPU 1,
    // the other core; the bench thread then moves to CPU 0.
    pin(1);
    let (platform, emulated) = open_emulated();
    let rt = Runtime::new(Arc::new(platform)).expect("runtime");
    let gpu = rt.first_gpu().expect("GPU agent");
    let cpu = rt.first_cpu().expect("CPU agent");
    let target = *gpu.isa().expect("ISA");
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .expect("kernarg pool")
        .handle();
    let gpu_node = NodeId(gpu.node());
    let config = QueueConfig::new(gpu_node, 1024, gpu.queue_min_size(), gpu.queue_max_size());
    let queue = AqlQueue::create(rt.platform(), &config).expect("queue");
    pin(0);
    let path = find_code_object(&default_code_object_dir(), &target).expect("code object");
    let bytes = std::fs::read(&path).expect("read code object");
    let mut executable = Executable::new(rt.platform());
    executable
        .load_code_object(gpu_node, &target, &bytes, MemoryKind::System)
        .expect("load");
    executable.freeze().expect("freeze");
    let kernel = executable
        .symbol_by_name("vector_copy", Some(gpu_node))
        .expect("symbol")
        .kernel
        .clone()
        .expect("kernel");
    // The empty kernel: the dispatch's one work-group does nothing.
    emulated
        .register_kernel(kernel.kernel_object, "empty vector_copy", |_ctx| Ok(()))
        .expect("register the empty kernel");
    let kernarg = rt
        .allocate(kernarg_pool, u64::from(kernel.kernarg_segment_size.max(16)))
        .expect("kernarg");
    if let Some(p) = kernarg.host_ptr {
        // SAFETY: the kernarg allocation holds at least 16 bytes at `p`, owned here.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0, 16) };
    }
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let completion = signals.create(1).expect("signal");
    let packet = KernelDispatch {
        flags: HeaderFlags {
            barrier: true,
            ..HeaderFlags::SYSTEM
        },
        dimensions: 1,
        workgroup_size: [1, 1, 1],
        grid_size: [1, 1, 1],
        private_segment_size_bytes: kernel.private_segment_size,
        group_segment_size_bytes: kernel.group_segment_size,
        kernel_object: kernel.kernel_object,
        kernarg_address: kernarg.va,
        completion_signal: completion.handle(),
    }
    .emit()
    .expect("packet");
    assert_ne!(completion.handle(), SignalHandle::NULL);

    let mut g = c.benchmark_group("B4_dispatch_round_trip");
    g.bench_function("hsa_emulated_dispatch", |b| {
        b.iter(|| {
            completion.silent_store(1, StoreOrder::Relaxed);
            let mut r = queue.reserve(1).expect("reserve");
            let last = r.write_next(&packet).expect("write");
            queue.ring_doorbell(last).expect("doorbell");
            let v = queue
                .wait_completion(
                    &completion,
                    SignalCondition::Lt,
                    1,
                    10_000_000_000,
                    WaitState::Active,
                )
                .unwrap_or_else(|e| {
                    panic!("dispatch failed: {e}; {}", cp_error(&emulated, &queue))
                });
            assert_eq!(
                v, 0,
                "dispatch did not complete in 10 s (queue still active)"
            );
        })
    });

    let (to_peer, peer_rx) = channel::bounded::<u64>(1);
    let (peer_tx, from_peer) = channel::bounded::<u64>(1);
    thread::scope(|s| {
        s.spawn(move || {
            pin(1);
            while let Ok(v) = peer_rx.recv() {
                if peer_tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut i = 0u64;
        g.bench_function("crossbeam_channel", |b| {
            b.iter(|| {
                i += 1;
                to_peer.send(i).expect("send");
                assert_eq!(from_peer.recv().expect("recv"), i);
            })
        });
        drop(to_peer);
    });
    g.finish();
    drop(completion);
    queue.destroy().expect("destroy queue");
}

/// Times B6's one-way wake-up: `store(i)` wakes the waiter, which records when its wait
/// returned in `woke` and the value in `seen`. Returns the summed latencies.
///
/// # Panics
/// When the waiter did not see a store within [`B6_DEADLINE`] (a lost wake-up); `stop` is set
/// first so the waiter ends and the panic is not held up by the thread scope.
fn wake_latencies(
    iters: u64,
    next: &mut i64,
    store: impl Fn(i64),
    seen: &AtomicI64,
    woke: &AtomicU64,
    stop: &AtomicBool,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        *next += 1;
        thread::sleep(B6_SLEEP);
        let t0 = now_ns();
        store(*next);
        let deadline = Instant::now() + B6_DEADLINE;
        while seen.load(Ordering::Acquire) != *next {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Release);
                panic!(
                    "B6: the waiter did not wake within {B6_DEADLINE:?} of store({next}); it last \
                     saw {}",
                    seen.load(Ordering::Acquire)
                );
            }
            spin_loop();
        }
        total += Duration::from_nanos(woke.load(Ordering::Relaxed).saturating_sub(t0));
    }
    total
}

fn b6_blocked_wake(c: &mut Criterion) {
    pin(0);
    let rt = Runtime::new(Arc::new(open_emulated().0)).expect("runtime");
    let cpu = rt.first_cpu().expect("CPU agent");
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let signal = signals.create_interrupt(0).expect("interrupt signal");
    let seen = AtomicI64::new(0);
    let woke = AtomicU64::new(0);
    let stop = AtomicBool::new(false);

    let mut g = c.benchmark_group("B6_blocked_wake_latency");
    // Criterion sees only the latencies (~10 us) while each iteration also sleeps 300 us:
    // a short measurement time keeps the wall time to a few seconds.
    g.sample_size(20)
        .measurement_time(Duration::from_millis(150))
        .warm_up_time(Duration::from_millis(20));
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut last = 0;
            loop {
                let v = signal.wait(
                    SignalCondition::Ne,
                    last,
                    B6_WAIT_SLICE.as_nanos() as u64,
                    WaitState::Blocked,
                    LoadOrder::Acquire,
                );
                if v == last {
                    // Timed out: no store in B6_WAIT_SLICE.
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    continue;
                }
                woke.store(now_ns(), Ordering::Relaxed);
                seen.store(v, Ordering::Release);
                if v < 0 {
                    return;
                }
                last = v;
            }
        });
        let mut next = 0i64;
        g.bench_function("hsa_interrupt_signal", |b| {
            b.iter_custom(|iters| {
                wake_latencies(
                    iters,
                    &mut next,
                    |v| signal.store(v, StoreOrder::Release),
                    &seen,
                    &woke,
                    &stop,
                )
            })
        });
        signal.store(-1, StoreOrder::Release);
    });

    let word = AtomicU32::new(0);
    let seen = AtomicI64::new(0);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut last = 0u32;
            loop {
                let mut v = word.load(Ordering::Acquire);
                let slice = rustix::time::Timespec {
                    tv_sec: B6_WAIT_SLICE.as_secs() as i64,
                    tv_nsec: 0,
                };
                while v == last {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let _ = futex::wait(&word, futex::Flags::PRIVATE, last, Some(&slice));
                    v = word.load(Ordering::Acquire);
                }
                woke.store(now_ns(), Ordering::Relaxed);
                let v = v as i32 as i64;
                seen.store(v, Ordering::Release);
                if v < 0 {
                    return;
                }
                last = v as u32;
            }
        });
        let mut next = 0i64;
        g.bench_function("raw_futex", |b| {
            b.iter_custom(|iters| {
                wake_latencies(
                    iters,
                    &mut next,
                    |v| {
                        word.store(v as u32, Ordering::Release);
                        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
                    },
                    &seen,
                    &woke,
                    &stop,
                )
            })
        });
        word.store(u32::MAX, Ordering::Release);
        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
    });
    g.finish();
}

fn sdma_copy(c: &mut Criterion) {
    use hsa_core::platform::{MemoryFlags, MemoryRequest, Platform};
    use hsa_core::sdma::{copy_commands, SdmaCompletion, SdmaQueue};
    use hsa_core::GpuVa;

    // The SDMA queue's thread inherits the affinity of the thread that creates the queue:
    // CPU 1, the other core; the bench thread then moves to CPU 0. Created from CPU 0 (where
    // B4 and B6 leave the bench thread), the engine and the spinning bench thread shared one
    // CPU and every copy waited for a time slice (~250 us); `assert_engines_apart` checks it.
    pin(1);
    let (platform, emulated) = open_emulated();
    let node = emulated
        .topology()
        .nodes
        .iter()
        .position(|n| n.properties.gpu_id != 0)
        .map(|i| NodeId(i as u32))
        .expect("a GPU node");
    let queue = SdmaQueue::create(&platform, node).expect("SDMA queue");
    pin(0);
    if cpu_usable(1) {
        assert_engines_apart("emu-sdma-q", 0);
    }
    const BYTES: u64 = 64 << 10;
    let chunk = platform
        .allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: 2 * BYTES + 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        })
        .expect("copy buffers");
    let host = chunk.host_ptr.expect("host mapping").as_ptr();
    let va = chunk.gpu_va.0;
    // SAFETY: 8-aligned, inside the chunk's last page, only accessed atomically (here and by
    // the SDMA engine), live until the chunk is freed below.
    let value = unsafe { AtomicU64::from_ptr(host.add(2 * BYTES as usize).cast()) };
    let mut cmd = Vec::new();
    copy_commands(
        &mut cmd,
        GpuVa(va + BYTES),
        GpuVa(va),
        BYTES,
        &[],
        &SdmaCompletion {
            value: GpuVa(va + 2 * BYTES),
            mailbox: None,
            timestamps: None,
        },
    );
    let mut g = c.benchmark_group("sdma_copy_64k");
    g.bench_function("hsa_emulated_sdma", |b| {
        b.iter(|| {
            value.store(1, Ordering::Release);
            queue.submit(&cmd).expect("submit");
            while value.load(Ordering::Acquire) != 0 {
                spin_loop();
            }
        })
    });
    let src = vec![7u8; BYTES as usize];
    let mut dst = vec![0u8; BYTES as usize];
    g.bench_function("host_memcpy", |b| {
        b.iter(|| dst.copy_from_slice(std::hint::black_box(&src)))
    });
    g.finish();
    drop(queue);
    // SAFETY: the queue is destroyed; nothing uses the chunk.
    unsafe { platform.free_memory(&chunk) }.expect("free");
}

/// Short runs: 30 samples over ~3 s after a 0.5 s warm-up per bench (B6 sets its own).
fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
}

criterion_group! {
    name = emulated;
    config = config();
    targets = b4_dispatch_round_trip, b6_blocked_wake, sdma_copy
}
criterion_main!(emulated);
