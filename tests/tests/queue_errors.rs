//! Queue errors and waits on the emulated device: a malformed packet stops its queue and is
//! reported once through the queue's callback — as amdkfd reports it, the queue's inactive
//! signal and a KFD hardware-exception event, which the Linux backend's monitor turns into
//! the callback; the detail stays in the device's log — while other queues keep running;
//! signal waits
//! with timeouts return on time when nothing comes; a closed or failed queue ends the waits of
//! the threads using it with an error instead of leaving them blocked.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hsa_core::abi::SignalHandle;
use hsa_core::packet::{BarrierAnd, EncodedPacket, HeaderFlags};
use hsa_core::platform::fake::FakePlatform;
use hsa_core::platform::{MemoryFaultReports, QueueErrorCallback};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{Error, NodeId, PlatformRef, QueueId, Status};
use hsa_emu::device::BUILTIN_GPU_ID;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};

/// A queue-error callback that counts its calls in the `AtomicU32` its data points to.
fn count_calls(_: &Error, _q: QueueId, counter: usize) {
    // SAFETY: `counter` is the address of an `AtomicU32` of the test, which outlives the
    // queue (the platform calls no callback after the queue's destroy returned).
    unsafe { &*(counter as *const AtomicU32) }.fetch_add(1, Ordering::SeqCst);
}

/// A packet whose header says type 6 (undefined), with a valid-looking body.
fn malformed() -> EncodedPacket {
    let mut bytes = [0u8; 64];
    let header_word = 6 | 2 << 9 | 2 << 11;
    bytes[..4].copy_from_slice(&1u32.to_le_bytes()); // INVALID while the body is written
    EncodedPacket { bytes, header_word }
}

fn submit<H: PlatformRef>(q: &AqlQueue<H>, packet: &EncodedPacket) {
    let mut r = q.reserve(1).unwrap();
    let last = r.write_next(packet).unwrap();
    q.ring_doorbell(last).unwrap();
}

/// A barrier-AND packet on `deps` with completion signal `completion`, system scopes.
fn barrier(deps: &[SignalHandle], completion: SignalHandle) -> EncodedPacket {
    BarrierAnd::new(HeaderFlags::SYSTEM, deps, completion)
        .unwrap()
        .emit()
        .unwrap()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let started = Instant::now();
    while !f() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn malformed_packet_stops_its_queue_once_and_others_keep_running() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let calls = [AtomicU32::new(0), AtomicU32::new(0)];
    let config = |slot: usize| {
        let mut c = QueueConfig::new(
            NodeId(gpu.node()),
            1024,
            gpu.queue_min_size(),
            gpu.queue_max_size(),
        );
        c.on_error = Some(QueueErrorCallback {
            func: count_calls,
            data: &calls[slot] as *const AtomicU32 as usize,
        });
        c
    };
    let bad = AqlQueue::create(rt.platform(), &config(0)).unwrap();
    let good = AqlQueue::create(rt.platform(), &config(1)).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));

    submit(&bad, &malformed());
    // The callback comes only through the KFD event the emulated device sets: without it the
    // monitor never looks at the queue.
    wait_until("error callback", || calls[0].load(Ordering::SeqCst) == 1);
    // The queue keeps the error it was given.
    let e = bad.error().expect("the queue's error");
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "queue_inactive_signal {:#x}; KFD hardware exception event on gpu_id {BUILTIN_GPU_ID:#x}: \
             per-engine reset after a GPU hang",
            hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false)
        )
    );
    // The device's log has what its packet processor saw.
    let logged = emulated.queue_error(bad.hw_id().0).expect("logged");
    assert_eq!(logged.status(), Status::InvalidPacketFormat);
    assert!(
        logged
            .detail()
            .to_string()
            .contains("packet 0: packet type (header bits 0..8) is 6"),
        "{logged}"
    );
    // amd_queue_t.queue_inactive_signal: set by the packet processor when it stops the queue,
    // to the CP's queue error code (invalid packet format, 0x20) with the status above it.
    let inactive = bad.inactive_signal().load(LoadOrder::Acquire);
    assert_eq!(
        inactive, 0x1009_0000_0020,
        "queue_inactive_signal after the error"
    );
    // The stopped queue consumed nothing more: a valid packet after it stays unprocessed and
    // a second report never comes.
    let after = signals.create_interrupt(1).unwrap();
    submit(&bad, &barrier(&[], after.handle()));
    let v = after.wait(
        SignalCondition::Eq,
        0,
        100_000_000,
        WaitState::Blocked,
        LoadOrder::Acquire,
    );
    assert_eq!(v, 1, "a stopped queue ran a packet");
    assert_eq!(
        calls[0].load(Ordering::SeqCst),
        1,
        "reported more than once"
    );
    assert_eq!(
        bad.load_read_index(LoadOrder::Acquire),
        0,
        "the bad packet was consumed"
    );

    // The other queue runs, before and after the bad one is destroyed.
    let done = signals.create_interrupt(1).unwrap();
    submit(&good, &barrier(&[], done.handle()));
    let v = done.wait(
        SignalCondition::Eq,
        0,
        5_000_000_000,
        WaitState::Blocked,
        LoadOrder::Acquire,
    );
    assert_eq!(v, 0);
    bad.destroy().unwrap();
    let done2 = signals.create_interrupt(1).unwrap();
    submit(&good, &barrier(&[], done2.handle()));
    let v = done2.wait(
        SignalCondition::Eq,
        0,
        5_000_000_000,
        WaitState::Blocked,
        LoadOrder::Acquire,
    );
    assert_eq!(v, 0);
    assert_eq!(
        calls[1].load(Ordering::SeqCst),
        0,
        "the good queue reported an error"
    );
    assert_eq!(good.error(), None);
    assert_eq!(emulated.live_handles().queues, 1);
    drop((after, done, done2));
    good.destroy().unwrap();
    assert_eq!(emulated.live_handles().queues, 0);
}

/// Waits for a value that never comes, on `signal`, and checks the time it took.
fn timed_wait(wait: impl Fn(u64) -> i64) {
    for timeout_ms in [1u64, 20, 100] {
        let started = Instant::now();
        let v = wait(timeout_ms * 1_000_000);
        let took = started.elapsed();
        assert_eq!(v, 1, "value changed?");
        assert!(
            took >= Duration::from_millis(timeout_ms),
            "returned early: {took:?} for {timeout_ms} ms"
        );
        assert!(
            took < Duration::from_millis(timeout_ms * 10 + 200),
            "returned late: {took:?} for {timeout_ms} ms"
        );
    }
}

#[test]
fn signal_waits_time_out_on_time_on_the_emulated_device() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let cpu = rt.first_cpu().unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    for s in [
        signals.create_interrupt(1).unwrap(),
        signals.create(1).unwrap(),
    ] {
        for state in [WaitState::Blocked, WaitState::Active] {
            timed_wait(|t| s.wait(SignalCondition::Eq, 0, t, state, LoadOrder::Acquire));
        }
    }
}

#[test]
fn signal_waits_time_out_on_time_on_the_fake_platform() {
    let p = FakePlatform::new();
    let signals = SignalPool::new(&p, NodeId(0));
    for s in [
        signals.create_interrupt(1).unwrap(),
        signals.create(1).unwrap(),
    ] {
        for state in [WaitState::Blocked, WaitState::Active] {
            timed_wait(|t| s.wait(SignalCondition::Lt, 1, t, state, LoadOrder::Relaxed));
        }
    }
}

/// Runs `f` on a scoped thread and returns what it returned, or ends the whole test process
/// when it has not returned within 10 s of `release` (a waiter the queue failed to wake would
/// otherwise hang the scope's join forever).
fn returns_after<'s, T: Send + 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    what: &'static str,
    f: impl FnOnce() -> T + Send + 's,
) -> impl FnOnce() -> T + 's {
    let (tx, rx) = std::sync::mpsc::channel();
    scope.spawn(move || {
        let _ = tx.send(f());
    });
    move || match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(v) => v,
        Err(_) => {
            eprintln!("{what}: still blocked 10 s after the queue stopped");
            std::process::exit(1);
        }
    }
}

#[test]
fn closing_a_queue_wakes_its_waiters_with_an_error() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let size = gpu.queue_min_size();
    let config = QueueConfig::new(NodeId(gpu.node()), size, size, gpu.queue_max_size());
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    // A barrier-AND on a dependency that never completes holds the processor at packet 0;
    // the rest of the ring fills up behind it.
    let never = signals.create_interrupt(1).unwrap();
    let done = signals.create_interrupt(1).unwrap();
    submit(&q, &barrier(&[never.handle()], SignalHandle::NULL));
    for _ in 1..size - 1 {
        submit(&q, &barrier(&[], SignalHandle::NULL));
    }
    submit(&q, &barrier(&[], done.handle()));
    assert!(q.try_reserve(1).is_err(), "the queue is full");
    // A bounded wait returns on time with the value it saw.
    let v = q
        .wait_completion(
            &done,
            SignalCondition::Eq,
            0,
            20_000_000,
            WaitState::Blocked,
        )
        .unwrap();
    assert_eq!(v, 1);

    std::thread::scope(|scope| {
        let reserve = returns_after(scope, "reserve", || q.reserve(1).map(|_| ()));
        let wait = returns_after(scope, "wait_completion", || {
            q.wait_completion(&done, SignalCondition::Eq, 0, u64::MAX, WaitState::Blocked)
        });
        let active = returns_after(scope, "active wait", || {
            q.wait_completion(&done, SignalCondition::Lt, 1, u64::MAX, WaitState::Active)
        });
        // Let them block (not needed for the outcome, which is the same either way).
        std::thread::sleep(Duration::from_millis(50));
        q.close().unwrap();
        let expected = format!("queue {} was destroyed", q.id());
        for (what, e) in [
            ("reserve", reserve().unwrap_err()),
            ("blocked wait", wait().unwrap_err()),
            ("active wait", active().unwrap_err()),
        ] {
            assert_eq!(e.status(), Status::InvalidQueue, "{what}: {e}");
            assert_eq!(e.detail(), expected, "{what}");
        }
    });
    assert_eq!(
        q.inactive_signal().load(LoadOrder::Acquire),
        hsa_core::queue::QUEUE_DESTROYED
    );
    assert_eq!(
        done.load(LoadOrder::Acquire),
        1,
        "nothing ran after packet 0"
    );
    assert_eq!(
        emulated.live_handles().queues,
        0,
        "hardware queue destroyed"
    );
    drop((never, done));
    q.destroy().unwrap();
}

#[test]
fn a_failed_queue_ends_completion_waits_with_its_status() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    // No callback: the queue records the error, nothing aborts.
    let config = QueueConfig::new(
        NodeId(gpu.node()),
        gpu.queue_min_size(),
        gpu.queue_min_size(),
        gpu.queue_max_size(),
    );
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let ok = signals.create_interrupt(1).unwrap();
    let after = signals.create_interrupt(1).unwrap();
    submit(&q, &barrier(&[], ok.handle()));
    let v = q
        .wait_completion(&ok, SignalCondition::Eq, 0, u64::MAX, WaitState::Blocked)
        .unwrap();
    assert_eq!(v, 0, "a completed packet's wait succeeds");
    std::thread::scope(|scope| {
        let wait = returns_after(scope, "wait_completion", || {
            q.wait_completion(&after, SignalCondition::Eq, 0, u64::MAX, WaitState::Blocked)
        });
        submit(&q, &malformed());
        submit(&q, &barrier(&[], after.handle()));
        let e = wait().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat, "{e}");
        assert_eq!(
            e.detail(),
            format!(
                "queue {} was stopped by its packet processor: malformed AQL packet",
                q.id()
            )
        );
    });
    assert_eq!(
        q.state(),
        hsa_core::queue::QueueState::Stopped(Status::InvalidPacketFormat)
    );
    // The completed packet's wait still succeeds on the stopped queue.
    let v = q
        .wait_completion(&ok, SignalCondition::Eq, 0, u64::MAX, WaitState::Blocked)
        .unwrap();
    assert_eq!(v, 0);
    drop((ok, after));
    q.destroy().unwrap();
    assert_eq!(emulated.live_handles().queues, 0);
}

/// In a child process (`HSA_RT_TEST_CHILD` names the case): a malformed packet on a queue
/// created with a callback (`"callback"`), with the abort policy ROCR applies to a queue
/// without one (`"abort"`: `hsa_linux::device::abort_on_queue_error`, what the C API's
/// `hsa_queue_create` gives a NULL callback) or with none (`"none"`: the queue records the
/// error); the child then waits for the packet after it, which never completes, and prints
/// the queue's error. The child installs the stderr logger of the tools and the C library (at
/// `HSA_RT_LOG`'s level), except in the case `"abort-nolog"` (a program with no `log`
/// backend).
#[test]
fn queue_error_child() {
    let Ok(case) = std::env::var("HSA_RT_TEST_CHILD") else {
        return; // only as a child of the tests below
    };
    let case = match case.strip_suffix("-nolog") {
        Some(c) => c.to_string(),
        None => {
            hsa_linux::logger::install_stderr_logger().unwrap();
            case
        }
    };
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let mut config = QueueConfig::new(NodeId(gpu.node()), 64, 64, gpu.queue_max_size());
    fn report(e: &Error, q: QueueId, _: usize) {
        println!("callback: queue {} {}", q.0, e.status().c_name());
    }
    match case.as_str() {
        "callback" => {
            config.on_error = Some(QueueErrorCallback {
                func: report,
                data: 0,
            })
        }
        "abort" => {
            config.on_error = Some(QueueErrorCallback {
                func: hsa_linux::device::abort_on_queue_error,
                data: 0,
            })
        }
        _ => {}
    }
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let after = signals.create_interrupt(1).unwrap();
    submit(&q, &malformed());
    submit(&q, &barrier(&[], after.handle()));
    let v = after.wait(
        SignalCondition::Eq,
        0,
        2_000_000_000,
        WaitState::Blocked,
        LoadOrder::Acquire,
    );
    println!("child: wait returned {v}");
    println!(
        "child: queue error {}",
        q.error().map_or("none", |e| e.status().c_name())
    );
}

fn run_child(case: &str, log: Option<&str>) -> std::process::Output {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "queue_error_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("HSA_RT_TEST_CHILD", case)
    .env_remove("HSA_RT_LOG");
    if let Some(v) = log {
        cmd.env("HSA_RT_LOG", v);
    }
    cmd.output().unwrap()
}

/// Under the abort policy (ROCR's for a queue without a callback), with or without a `log`
/// backend, the error's line is printed once (by the logger at error level, or by the abort
/// policy itself when nothing takes error records), then the abort.
#[test]
fn a_queue_error_under_the_abort_policy_is_printed_and_aborts_the_process() {
    for case in ["abort", "abort-nolog"] {
        a_queue_error_under_the_abort_policy_aborts(case);
    }
}

/// A Rust queue without a callback does not abort: the waits go on (here the one on the packet
/// after the bad one times out), and the queue keeps the error.
#[test]
fn a_queue_error_without_a_callback_is_recorded_and_the_process_goes_on() {
    let out = run_child("none", None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("child: wait returned 1\n"), "{stdout}");
    assert!(
        stdout.contains("child: queue error HSA_STATUS_ERROR_INVALID_PACKET_FORMAT\n"),
        "{stdout}"
    );
}

fn a_queue_error_under_the_abort_policy_aborts(case: &str) {
    use std::os::unix::process::ExitStatusExt;
    let out = run_child(case, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.signal(),
        Some(6),
        "SIGABRT expected: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    // What amdkfd reported: the status in the queue's inactive signal and the event's data
    // (the packet's detail is in the device's log, logged at error level: below), once.
    let line = format!(
        "hsa-rt: queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: \
         queue_inactive_signal {:#x}; KFD hardware exception event on gpu_id {BUILTIN_GPU_ID:#x}: \
         per-engine reset after a GPU hang\n",
        hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false)
    );
    assert_eq!(stderr.matches(&line).count(), 1, "{case}: {stderr}");
    assert!(
        stderr.contains("hsa-rt: queue 0 has no error callback; aborting, as ROCR does\n"),
        "{case}: {stderr}"
    );
    assert!(!stdout.contains("child: wait returned"), "{stdout}");
}

/// The stderr logger prints every queue error with the device's detail (the packet and what
/// is wrong with it) at error level: by default and at `error` or `1`, not at `0`/`off`.
#[test]
fn hsa_rt_log_prints_every_queue_error_with_its_detail() {
    for (log, printed) in [
        (Some("1"), true),
        (Some("error"), true),
        (Some(""), true),
        (None, true),
        (Some("0"), false),
        (Some("off"), false),
    ] {
        let out = run_child("callback", log);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{log:?}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"),
            "the callback ran: {stdout}"
        );
        assert!(stdout.contains("child: wait returned 1"), "{stdout}");
        let logged = stderr.contains(
            "hsa-rt: queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: packet 0: \
             packet type (header bits 0..8) is 6",
        );
        assert_eq!(logged, printed, "HSA_RT_LOG={log:?}: {stderr}");
    }
}

/// A kernel's bad access on the emulated device reaches the queue's callback through a KFD
/// memory event, as a GPU page fault does through amdkfd: the status MEMORY_FAULT and the
/// event's data (the faulting address, the GPU); the device's log names the kernel.
#[test]
fn a_memory_fault_reaches_the_callback_through_the_memory_event() {
    use hsa_core::memory::GlobalFlags;
    use hsa_core::packet::KernelDispatch;

    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    emulated.set_execution_mode(hsa_emu::ExecutionMode::HostOnly);
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .unwrap()
        .handle();
    let kernarg = rt.allocate(kernarg_pool, 64).unwrap();
    // The "kernel": a host implementation at a kernel object of our choosing (the device
    // knows kernels by address), reading a wild pointer.
    let kernel_object = hsa_core::GpuVa(0x7f00_0000_1000);
    emulated
        .register_kernel(kernel_object, "wild_read", |ctx| {
            ctx.read::<u32>(0xdead_0000_0000).map(|_| ())
        })
        .unwrap();
    let config = QueueConfig::new(
        NodeId(gpu.node()),
        gpu.queue_min_size(),
        gpu.queue_min_size(),
        gpu.queue_max_size(),
    );
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let packet = KernelDispatch::one_dimensional(kernel_object, kernarg.va, 1, 1)
        .emit()
        .unwrap();
    submit(&q, &packet);
    wait_until("queue error", || q.error().is_some());
    let e = q.error().unwrap();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(
        e.detail().to_string(),
        format!(
            "queue_inactive_signal {:#x}; KFD memory event: page not present at \
             0xdead00000000 on gpu_id {BUILTIN_GPU_ID:#x}",
            hsa_core::queue::inactive::encode(Status::MemoryFault, false)
        )
    );
    let logged = emulated.queue_error(q.hw_id().0).unwrap();
    assert!(
        logged.detail().to_string().contains("kernel wild_read")
            && logged.detail().to_string().contains("0xdead00000000"),
        "{logged}"
    );
    q.destroy().unwrap();
    rt.free(kernarg.va).unwrap();
}

/// The platform's memory-fault handler (`MemoryFaultReports::set_memory_fault_handler`, what the C API's
/// system event handlers hang on) is told of a kernel's bad access from the KFD memory event:
/// the GPU's node, the address and "page not present" — before the queue's error callback
/// runs; with the handler removed, the next fault reaches only the callback.
#[test]
fn a_memory_fault_reaches_the_fault_handler_before_the_queue_callback() {
    use hsa_core::memory::GlobalFlags;
    use hsa_core::packet::KernelDispatch;
    use hsa_core::platform::{MemoryFault, MemoryFaultHandler, MemoryFaultReason};

    /// What happened, in order.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Fault(MemoryFault, usize),
        QueueError(Status),
    }
    /// The fault handler and the queue callback push to the test's list their data points to.
    fn push(data: usize, seen: Seen) {
        // SAFETY: `data` is the address of the test's `Mutex<Vec<Seen>>`, declared before the
        // runtime so that it outlives the platform and its monitor thread.
        let list = unsafe { &*(data as *const Mutex<Vec<Seen>>) };
        list.lock().unwrap().push(seen);
    }
    fn on_fault(f: &MemoryFault, data: usize) {
        push(data, Seen::Fault(*f, data));
    }
    fn on_queue_error(e: &Error, _q: QueueId, data: usize) {
        push(data, Seen::QueueError(e.status()));
    }
    let list: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
    let data = &list as *const Mutex<Vec<Seen>> as usize;
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    emulated.set_execution_mode(hsa_emu::ExecutionMode::HostOnly);
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    rt.platform()
        .set_memory_fault_handler(Some(MemoryFaultHandler {
            func: on_fault,
            data,
        }))
        .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .unwrap()
        .handle();
    let kernarg = rt.allocate(kernarg_pool, 64).unwrap();
    let kernel_object = hsa_core::GpuVa(0x7f00_0000_2000);
    emulated
        .register_kernel(kernel_object, "read_0x1000", |ctx| {
            ctx.read::<u32>(0x1000).map(|_| ())
        })
        .unwrap();
    let run_faulting_kernel = || {
        let mut config = QueueConfig::new(
            NodeId(gpu.node()),
            gpu.queue_min_size(),
            gpu.queue_min_size(),
            gpu.queue_max_size(),
        );
        config.on_error = Some(QueueErrorCallback {
            func: on_queue_error,
            data,
        });
        let q = AqlQueue::create(rt.platform(), &config).unwrap();
        let packet = KernelDispatch::one_dimensional(kernel_object, kernarg.va, 1, 1)
            .emit()
            .unwrap();
        submit(&q, &packet);
        wait_until("error callback", || {
            list.lock()
                .unwrap()
                .iter()
                .any(|s| matches!(s, Seen::QueueError(_)))
        });
        q.destroy().unwrap();
        std::mem::take(&mut *list.lock().unwrap())
    };
    assert_eq!(
        run_faulting_kernel(),
        [
            Seen::Fault(
                MemoryFault {
                    node: NodeId(gpu.node()),
                    address: hsa_core::GpuVa(0x1000),
                    reason: MemoryFaultReason::PAGE_NOT_PRESENT,
                },
                data
            ),
            Seen::QueueError(Status::MemoryFault),
        ]
    );
    rt.platform().set_memory_fault_handler(None).unwrap();
    assert_eq!(
        run_faulting_kernel(),
        [Seen::QueueError(Status::MemoryFault)]
    );
    rt.free(kernarg.va).unwrap();
}

/// A queue destroyed while the platform runs its error callback on the monitor's thread:
/// `destroy` returns only after the callback returned (`QueueRequest::on_error`'s promise,
/// which lets `AqlQueue` hand the platform the address of its error record). The callback
/// sleeps 300 ms once it started; the test destroys the queue as soon as it starts.
#[test]
fn destroying_a_queue_waits_for_its_running_error_callback() {
    use std::sync::atomic::AtomicBool;
    /// What the callback reports through its data: it started, it finished.
    struct Progress {
        started: AtomicBool,
        finished: AtomicBool,
    }
    fn slow(_: &Error, _: QueueId, data: usize) {
        // SAFETY: `data` is the test's `Progress`, alive until after the queue is destroyed
        // (and so, by the promise under test, after this returns).
        let p = unsafe { &*(data as *const Progress) };
        p.started.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        p.finished.store(true, Ordering::SeqCst);
    }
    let progress = Progress {
        started: AtomicBool::new(false),
        finished: AtomicBool::new(false),
    };
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let mut config = QueueConfig::new(NodeId(gpu.node()), 64, 64, gpu.queue_max_size());
    config.on_error = Some(QueueErrorCallback {
        func: slow,
        data: &progress as *const Progress as usize,
    });
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    submit(&q, &malformed());
    wait_until("the callback starts", || {
        progress.started.load(Ordering::SeqCst)
    });
    q.destroy().unwrap();
    assert!(
        progress.finished.load(Ordering::SeqCst),
        "destroy returned while the queue's error callback still ran"
    );
}
