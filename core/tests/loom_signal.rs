//! Loom model of the signal wait protocol: a waiter in the blocked state (past its spin, so
//! it blocks on the platform event) races host-side changes of an interrupt signal from other
//! threads. A change stores the value and then raises the event only when the signal's waiter
//! count ([`Waiters`]) says a waiter may be blocked, as `Signal::store` does. A lost wake-up
//! would leave the waiter blocked forever, which loom reports as a deadlock. The wait is the
//! crate's own `hsa_core::signal::wait_value` and the count the crate's own `Waiters`; the
//! platform event is a model (a flag under a loom `Mutex` with a `Condvar`, signaled until a
//! wait consumes it, as the `Platform` trait requires). The last test shows that the model
//! finds the lost wake-up of a waiter that registers in the count after the value read that
//! decides to block.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p hsa-core --release --test loom_signal`
#![cfg(loom)]

#[allow(dead_code)] // this model uses the deadlock runner alone
mod loom_model;

use hsa_core::platform::*;
use hsa_core::signal::{wait_value, EventWait, LoadOrder, SignalCondition, WaitState, Waiters};
use hsa_core::sync::{AtomicI64, Ordering};
use hsa_core::{Error, EventId, GpuVa, NodeId, QueueId, Status};
use loom::sync::{Arc, Condvar, Mutex};
use loom_model::expect_deadlock;

struct ModelPlatform {
    signaled: Mutex<bool>,
    cv: Condvar,
    /// How many times the event was raised (Signal::notify calls that reached the platform).
    raised: std::sync::atomic::AtomicU32,
    /// Not a loom atomic: the clock is not under test. Each read advances 1 ms so a wait
    /// leaves its spin phase at once.
    clock: std::sync::atomic::AtomicU64,
}

fn unsupported() -> Error {
    Error::new(Status::Error, "not modelled")
}

impl TopologySource for ModelPlatform {
    fn device_name(&self) -> &str {
        "loom"
    }
    fn node_count(&self) -> usize {
        0
    }
    fn node(&self, _: usize) -> Result<NodeProperties, Error> {
        Err(unsupported())
    }
    fn memory_bank(&self, _: usize, _: usize) -> Result<Option<MemoryBank>, Error> {
        Ok(None)
    }
    fn cache(&self, _: usize, _: usize) -> Result<Option<Cache>, Error> {
        Ok(None)
    }
    fn io_link(&self, _: usize, _: usize) -> Result<Option<IoLink>, Error> {
        Ok(None)
    }
}

// SAFETY: the model allocates nothing and creates no queues; its event methods are
// thread-safe (a loom Mutex).
unsafe impl Platform for ModelPlatform {
    /// No queues, so no doorbells.
    type Doorbell = ();
    fn allocate_memory(&self, _: &MemoryRequest) -> Result<MemoryChunk, Error> {
        Err(unsupported())
    }
    unsafe fn free_memory(&self, _: &MemoryChunk) -> Result<(), Error> {
        Err(unsupported())
    }
    fn map_memory(&self, _: &MemoryChunk, _: &[NodeId]) -> Result<(), Error> {
        Err(unsupported())
    }
    unsafe fn create_queue(&self, _: &QueueRequest) -> Result<HwQueue<()>, Error> {
        Err(unsupported())
    }
    fn ring_doorbell(&self, _: &(), _: u64) {}
    fn destroy_queue(&self, _: QueueId) -> Result<(), Error> {
        Err(unsupported())
    }
    fn create_event(&self) -> Result<Event, Error> {
        Ok(Event {
            id: EventId(0),
            mailbox: GpuVa(0),
        })
    }
    fn destroy_event(&self, _: EventId) -> Result<(), Error> {
        Ok(())
    }
    fn wait_event(&self, _: EventId, _timeout_ns: u64) -> Result<WaitOutcome, Error> {
        let mut s = self.signaled.lock().unwrap();
        while !*s {
            s = self.cv.wait(s).unwrap();
        }
        *s = false;
        Ok(WaitOutcome::Signaled)
    }
    fn signal_event(&self, _: EventId) -> Result<(), Error> {
        self.raised
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.signaled.lock().unwrap() = true;
        self.cv.notify_all();
        Ok(())
    }
    fn timestamp_ticks(&self) -> u64 {
        self.clock
            .fetch_add(1_000_000, std::sync::atomic::Ordering::Relaxed)
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
}

/// An interrupt signal of the model: its value, waiter count and event.
struct ModelSignal {
    platform: ModelPlatform,
    value: AtomicI64,
    waiters: Waiters,
    event: EventId,
}

impl ModelSignal {
    fn new(value: i64) -> Arc<ModelSignal> {
        let platform = ModelPlatform {
            signaled: Mutex::new(false),
            cv: Condvar::new(),
            raised: std::sync::atomic::AtomicU32::new(0),
            clock: std::sync::atomic::AtomicU64::new(0),
        };
        let event = platform.create_event().unwrap().id;
        Arc::new(ModelSignal {
            platform,
            value: AtomicI64::new(value),
            waiters: Waiters::new(),
            event,
        })
    }

    /// What `Signal::subtract` does: the change (Release), then the event only when a
    /// waiter may be blocked.
    fn subtract(&self, n: i64) {
        self.value.fetch_sub(n, Ordering::Release);
        if self.waiters.may_block() {
            self.platform.signal_event(self.event).unwrap();
        }
    }

    /// What `Signal::store` does.
    fn store(&self, v: i64) {
        self.value.store(v, Ordering::Release);
        if self.waiters.may_block() {
            self.platform.signal_event(self.event).unwrap();
        }
    }

    /// `hsa_signal_wait_scacquire(signal, EQ, 0, UINT64_MAX, BLOCKED)` through the crate's
    /// wait.
    fn wait_for_zero(&self) {
        let seen = wait_value(
            &self.platform,
            &self.value,
            Some(EventWait {
                id: self.event,
                waiters: &self.waiters,
            }),
            SignalCondition::Eq,
            0,
            u64::MAX,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(seen, 0);
        assert_eq!(self.waiters.count(), 0, "the wait unregistered");
    }
}

#[test]
fn blocked_wait_racing_store_and_wake_loses_no_wakeup() {
    loom::model(|| {
        let signal = ModelSignal::new(1);
        let s2 = signal.clone();
        let storer = loom::thread::spawn(move || s2.store(0));
        signal.wait_for_zero();
        storer.join().unwrap();
    });
}

/// Two changers, each subtracting 1 from 2: the waiter may wake on the first, see 1 and block
/// again; the second must still wake it, whichever of them sees the registration.
#[test]
fn two_changers_lose_no_wakeup() {
    // Three threads and a waiter that may loop: bounded to 3 preemptions per execution (loom's
    // advice for models this size) to finish in minutes.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let signal = ModelSignal::new(2);
        let changers: Vec<_> = (0..2)
            .map(|_| {
                let s = signal.clone();
                loom::thread::spawn(move || s.subtract(1))
            })
            .collect();
        signal.wait_for_zero();
        for c in changers {
            c.join().unwrap();
        }
    });
}

/// Without a waiter no change reaches the platform (the cost the count removes).
#[test]
fn changes_nobody_waits_for_raise_no_event() {
    loom::model(|| {
        let signal = ModelSignal::new(2);
        let s2 = signal.clone();
        let t = loom::thread::spawn(move || s2.subtract(1));
        signal.subtract(1);
        t.join().unwrap();
        assert_eq!(signal.value.load(Ordering::Acquire), 0);
        assert_eq!(
            signal
                .platform
                .raised
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    });
}

/// Set to run [`late_registration_model`] for real (only
/// [`registering_after_the_arming_read_loses_the_wakeup`] does).
const NEGATIVE_ENV: &str = "HSA_LOOM_SIGNAL_NEGATIVE";

/// The failing model behind [`registering_after_the_arming_read_loses_the_wakeup`]; does
/// nothing unless `HSA_LOOM_SIGNAL_NEGATIVE` is set, because loom's deadlock report aborts
/// the process.
#[test]
fn late_registration_model() {
    if std::env::var_os(NEGATIVE_ENV).is_none() {
        return;
    }
    loom::model(|| {
        let signal = ModelSignal::new(1);
        let s2 = signal.clone();
        let storer = loom::thread::spawn(move || s2.store(0));
        // A wait with the increment misplaced: it reads the value, decides to block, and
        // only then registers. A store between the read and the registration sees no waiter
        // and skips the event.
        while signal.value.load(Ordering::Acquire) != 0 {
            signal.waiters.register();
            signal.platform.wait_event(signal.event, u64::MAX).unwrap();
            signal.waiters.unregister();
        }
        storer.join().unwrap();
    });
}

/// The model can fail: a waiter that registers after the read that decides to block loses the
/// wake-up. Runs [`late_registration_model`] in a child process of this test binary and
/// expects loom's deadlock report and a failed exit.
#[test]
fn registering_after_the_arming_read_loses_the_wakeup() {
    expect_deadlock("late_registration_model", NEGATIVE_ENV);
}
