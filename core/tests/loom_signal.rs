//! Loom model of the signal wait protocol: a waiter in the blocked state (past its spin, so
//! it blocks on the platform event) races a store plus event signal from another thread. A
//! lost wake-up would leave the waiter blocked forever, which loom reports as a deadlock.
//! The wait is the crate's own `hsa_core::signal::wait_value`; the platform event is a model
//! (a flag under a loom `Mutex` with a `Condvar`, signaled until a wait consumes it, as the
//! `Platform` trait requires).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p hsa-core --release --test loom_signal`
#![cfg(loom)]

use hsa_core::platform::*;
use hsa_core::signal::{wait_value, LoadOrder, SignalCondition, WaitState};
use hsa_core::sync::{AtomicI64, Ordering};
use hsa_core::{Error, EventId, GpuVa, NodeId, QueueId, Status};
use loom::sync::{Arc, Condvar, Mutex};

struct ModelPlatform {
    signaled: Mutex<bool>,
    cv: Condvar,
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

#[test]
fn blocked_wait_racing_store_and_wake_loses_no_wakeup() {
    loom::model(|| {
        let platform = Arc::new(ModelPlatform {
            signaled: Mutex::new(false),
            cv: Condvar::new(),
            clock: std::sync::atomic::AtomicU64::new(0),
        });
        let value = Arc::new(AtomicI64::new(1));
        let event = platform.create_event().unwrap().id;
        let (p2, v2) = (platform.clone(), value.clone());
        let storer = loom::thread::spawn(move || {
            // As Signal::store does: the value first (Release), then the event.
            v2.store(0, Ordering::Release);
            p2.signal_event(event).unwrap();
        });
        let seen = wait_value(
            &*platform,
            &value,
            Some(event),
            SignalCondition::Eq,
            0,
            u64::MAX,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(seen, 0);
        storer.join().unwrap();
    });
}
