//! Host-side stores to an interrupt signal on the Linux backend, with the process-wide barrier
//! (`membarrier`): a store orders its value before its read of the waiter count with a
//! compiler fence alone, so a waiter about to block must be seen through the barrier it
//! issues when it registers. A store that raced a waiter's registration and missed it would
//! leave the waiter blocked until its timeout: every round here must wake at once.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::platform::Platform;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::NodeId;
use hsa_emu::device::builtin_topology;
use hsa_emu::{EmulatedKfd, SelectedDevice};

const CPU: NodeId = NodeId(0);

fn platform() -> Arc<hsa_linux::LinuxPlatform> {
    let kfd = EmulatedKfd::new(builtin_topology()).expect("emulated device");
    Arc::new(
        SelectedDevice::emulated(Arc::clone(&kfd))
            .expect("platform")
            .platform,
    )
}

#[test]
fn linux_signals_use_the_process_barrier_and_blocked_waiters_still_wake() {
    let plat = platform();
    // membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) is in every kernel since 4.14.
    assert!(
        plat.process_barrier().is_some(),
        "the Linux backend offers no process barrier (membarrier registration refused?)"
    );
    let pool = Arc::new(SignalPool::new(Arc::clone(&plat), CPU));
    let signal = Arc::new(pool.create_interrupt(0).expect("interrupt signal"));
    assert!(signal.uses_process_barrier());
    let user = pool.create(0).expect("user signal");
    assert!(
        user.uses_process_barrier(),
        "every signal of the pool decides alike"
    );

    // Each round: the waiter blocks (its spin is the platform's, 20 us by default) for the
    // round's value; the store comes after a delay that sweeps the window around the
    // waiter's registration (before, during and after its spin).
    let rounds = 300i64;
    let ack = Arc::new(AtomicI64::new(0));
    let waiter = {
        let signal = Arc::clone(&signal);
        let ack = Arc::clone(&ack);
        std::thread::spawn(move || {
            for i in 1..=rounds {
                let t = Instant::now();
                // A lost wake-up shows as a wait that lasts its whole timeout (the value is
                // there when it ends, so it still returns `i`): stop at the first one.
                let seen = signal.wait(
                    SignalCondition::Eq,
                    i,
                    2_000_000_000,
                    WaitState::Blocked,
                    LoadOrder::Acquire,
                );
                ack.store(i, Ordering::Release);
                if seen != i || t.elapsed() > Duration::from_secs(1) {
                    return Some((i, seen, t.elapsed()));
                }
            }
            None
        })
    };
    for i in 1..=rounds {
        // The waiter is waiting for `i` (or about to): store it after a delay that sweeps
        // the window around the waiter's registration, before, during and after its spin.
        std::thread::sleep(Duration::from_micros((i as u64 * 7) % 60));
        signal.store(i, StoreOrder::Release);
        while ack.load(Ordering::Acquire) < i && !waiter.is_finished() {
            std::thread::yield_now();
        }
    }
    let lost = waiter.join().expect("waiter");
    assert_eq!(
        lost, None,
        "(round, value seen, wait time) of a wait that missed its store's wake-up"
    );
}

/// A forked child can use the barrier it inherited: the expedited command works there after
/// the barrier ran (this kernel carries the registration across fork; where one did not, the
/// barrier registers the child on first use). The child runs only system calls before
/// `_exit`.
#[test]
fn the_process_barrier_works_in_a_forked_child() {
    use rustix::thread::{membarrier, MembarrierCommand};
    let plat = platform();
    let barrier = plat.process_barrier().expect("membarrier");
    barrier();
    // SAFETY: the child calls only async-signal-safe functions (system calls through rustix,
    // no allocation, no lock) and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        barrier();
        let code = i32::from(membarrier(MembarrierCommand::PrivateExpedited).is_err());
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: `pid` is this test's child; `status` is a writable int.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "the child is not registered for the expedited barrier after using it"
    );
}
