//! Signals: `amd_signal_t` values with HSA's memory orders, waits, and kinds.
//!
//! A [`Signal`] owns a 64-byte `amd_signal_t` slot that a [`SignalPool`] carved out of
//! host- and device-visible platform memory; its handle is the slot's address, as in ROCR,
//! so a packet processor (hardware or [`processor`](crate::packet_processor)) can decrement it by
//! handle. Value operations are single atomic instructions on that memory: lock-free and
//! allocation-free. An *interrupt* signal also has a platform event: waits block on
//! [`Platform::wait_event`] after a short spin, and a non-silent store or read-modify-write
//! that finds a waiter that may be blocked ([`Waiters`]) writes the event id to the event
//! mailbox and calls [`Platform::signal_event`].
//! A *doorbell* signal ([`DoorbellSignal`]) belongs to a queue; storing to it rings the queue's
//! doorbell.
//!
//! Ref: HSA Runtime 1.2 §2.4 "Signals"; `amd_hsa_signal.h`; `hsa_ext_amd.h`
//! (`hsa_amd_signal_wait_any`).

mod doorbell;
pub(crate) mod group;
pub mod order;
mod pool;
pub mod raw;
pub mod wait;

pub use doorbell::{DoorbellRinger, DoorbellSignal};
pub use group::{wait_all, wait_any, SignalGroup, MAX_WAIT_EVENTS};
pub use order::{LoadOrder, MemoryOrder, StoreOrder};
#[cfg(not(feature = "alloc"))]
pub use pool::FIXED_MAX_SLABS;
pub use pool::{SignalPool, SLAB_BYTES, SLOTS_PER_SLAB};
pub use wait::{wait_value, EventWait, SignalCondition, WaitState, Waiters, SPIN_NS};

use core::fmt;

use crate::abi::SignalHandle;
use crate::addr::EventId;
use crate::platform::{MemoryChunk, Platform};
use crate::platform_ref::PlatformRef;
use crate::status::Result;

use raw::{Mailbox, RawSignal};

/// What a signal does besides holding its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignalKind {
    /// A user signal (`AMD_SIGNAL_KIND_USER`) without an event: waits poll.
    User,
    /// A user signal with a platform event: changes raise the event, waits block on it.
    Interrupt,
}

/// The event side of an interrupt signal.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignalEvent {
    pub(crate) id: EventId,
    pub(crate) mailbox: Option<Mailbox>,
}

/// A signal: an `amd_signal_t` in platform memory that this value owns.
///
/// Dropping it destroys its event (if any) and gives the slot back to its pool; [`destroy`]
/// does the same and reports the platform's error. Ref: HSA Runtime 1.2 §2.4.1
/// (`hsa_signal_create`, `hsa_signal_destroy`).
///
/// [`destroy`]: Signal::destroy
pub struct Signal<H: PlatformRef> {
    raw: RawSignal,
    platform: H,
    event: Option<SignalEvent>,
    /// Waiters that may block on the event (interrupt signals; unused otherwise).
    waiters: Waiters,
    pool: Option<H::SignalPoolRef>,
    /// The chunk holding the slot, when the signal owns it alone ([`Signal::in_chunk`]).
    chunk: Option<MemoryChunk>,
}

impl<H: PlatformRef> fmt::Debug for Signal<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("handle", &self.raw.handle())
            .field("kind", &self.kind())
            .field("event", &self.event.map(|e| e.id))
            .finish()
    }
}

impl<H: PlatformRef> Signal<H> {
    /// Wraps an initialised slot. `pool` is the pool to give the slot back to on drop (`None`
    /// for slots another owner, e.g. a queue's descriptor memory, frees).
    pub(crate) fn from_parts(
        raw: RawSignal,
        platform: H,
        event: Option<SignalEvent>,
        pool: Option<H::SignalPoolRef>,
    ) -> Self {
        let waiters = Waiters::with_barrier(platform.process_barrier());
        Signal {
            raw,
            platform,
            event,
            waiters,
            pool,
            chunk: None,
        }
    }

    /// The platform the signal was made on.
    pub fn platform(&self) -> &H::Target {
        &self.platform
    }

    /// The handle (`hsa_signal_t`): the host address of the `amd_signal_t`, which on this
    /// runtime's platforms is also its device address.
    pub fn handle(&self) -> SignalHandle {
        self.raw.handle()
    }

    /// The raw view, for code that works by handle (packet processors).
    pub fn raw(&self) -> RawSignal {
        self.raw
    }

    /// User or interrupt.
    pub fn kind(&self) -> SignalKind {
        if self.event.is_some() {
            SignalKind::Interrupt
        } else {
            SignalKind::User
        }
    }

    /// The chunk the signal owns alone, for a signal made by [`Signal::in_chunk`] (an IPC
    /// signal); `None` for a pool's signal.
    pub fn own_chunk(&self) -> Option<&MemoryChunk> {
        self.chunk.as_ref()
    }

    /// The platform event of an interrupt signal.
    pub fn event(&self) -> Option<EventId> {
        self.event.map(|e| e.id)
    }

    /// Whether a host-side change of this signal orders its value store before its read of
    /// the waiter count with a compiler fence alone, a waiter that blocks paying with the
    /// platform's process-wide barrier ([`Platform::process_barrier`]);
    /// `false`: both sides use a `SeqCst` fence.
    pub fn uses_process_barrier(&self) -> bool {
        self.waiters.uses_process_barrier()
    }

    /// The event a blocked wait on this signal blocks on, with the signal's waiter count.
    pub(crate) fn event_wait(&self) -> Option<EventWait<'_>> {
        self.event.map(|e| EventWait {
            id: e.id,
            waiters: &self.waiters,
        })
    }

    /// Raises the event of an interrupt signal when a waiter may be blocked on it: id into
    /// the mailbox, then [`Platform::signal_event`]. Called after every non-silent change,
    /// after the value is stored (see [`wait`](wait) for why the order matters and how the
    /// waiter count keeps wake-ups).
    fn notify(&self) {
        if let Some(ev) = self.event {
            if !self.waiters.may_block() {
                return;
            }
            if let Some(mailbox) = ev.mailbox {
                mailbox.post(ev.id.get());
            }
            // The event is alive while this signal is (destroyed only in drop/destroy), so
            // the platform's only documented error (unknown event) cannot occur.
            let _ = self.platform.signal_event(ev.id);
        }
    }

    /// Loads the value (`hsa_signal_load_scacquire` / `_relaxed`).
    pub fn load(&self, order: LoadOrder) -> i64 {
        self.raw.value().load(order.ordering())
    }

    /// Stores `value` and raises the event of an interrupt signal (`hsa_signal_store_relaxed`
    /// / `_screlease`). A Release store pairs with a waiter's Acquire load.
    pub fn store(&self, value: i64, order: StoreOrder) {
        self.raw.value().store(value, order.ordering());
        self.notify();
    }

    /// Stores `value` without raising any event (`hsa_signal_silent_store_relaxed` /
    /// `_screlease`): waiters blocked on the event are not woken.
    pub fn silent_store(&self, value: i64, order: StoreOrder) {
        self.raw.value().store(value, order.ordering());
    }

    /// Replaces the value, returns the previous one (`hsa_signal_exchange_*`).
    pub fn exchange(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().swap(value, order.ordering());
        self.notify();
        old
    }

    /// Stores `new` if the value is `expected`; returns the value observed before
    /// (`hsa_signal_cas_*`: equal to `expected` on success). Raises the event only when the
    /// value was replaced.
    pub fn compare_exchange(&self, expected: i64, new: i64, order: MemoryOrder) -> i64 {
        match self.raw.value().compare_exchange(
            expected,
            new,
            order.ordering(),
            order.failure_ordering(),
        ) {
            Ok(old) => {
                self.notify();
                old
            }
            Err(observed) => observed,
        }
    }

    /// Adds `value` (wrapping), returns the previous value (`hsa_signal_add_*`).
    pub fn add(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().fetch_add(value, order.ordering());
        self.notify();
        old
    }

    /// Subtracts `value` (wrapping), returns the previous value (`hsa_signal_subtract_*`).
    pub fn subtract(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().fetch_sub(value, order.ordering());
        self.notify();
        old
    }

    /// Bitwise AND, returns the previous value (`hsa_signal_and_*`).
    pub fn and(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().fetch_and(value, order.ordering());
        self.notify();
        old
    }

    /// Bitwise OR, returns the previous value (`hsa_signal_or_*`).
    pub fn or(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().fetch_or(value, order.ordering());
        self.notify();
        old
    }

    /// Bitwise XOR, returns the previous value (`hsa_signal_xor_*`).
    pub fn xor(&self, value: i64, order: MemoryOrder) -> i64 {
        let old = self.raw.value().fetch_xor(value, order.ordering());
        self.notify();
        old
    }

    /// Waits until the value satisfies `condition` against `compare` or about `timeout_ns`
    /// passes (`u64::MAX`: no timeout), and returns the value last observed
    /// (`hsa_signal_wait_scacquire` / `_relaxed`). The caller checks the condition on the
    /// returned value to tell success from timeout.
    ///
    /// Blocked state: spins [`Platform::wait_spin_ns`] ([`SPIN_NS`] by default), then blocks
    /// on the event of an interrupt signal, or
    /// polls with backoff for a user signal. Active state: polls. See [`wait_value`].
    pub fn wait(
        &self,
        condition: SignalCondition,
        compare: i64,
        timeout_ns: u64,
        state: WaitState,
        order: LoadOrder,
    ) -> i64 {
        wait_value(
            &*self.platform,
            self.raw.value(),
            self.event_wait(),
            condition,
            compare,
            timeout_ns,
            state,
            order,
        )
    }

    /// Destroys the signal: its event, then its slot (`hsa_signal_destroy`).
    ///
    /// # Errors
    /// The platform's status (e.g. `Status::InvalidArgument`) when destroying the event
    /// failed; the slot is given back all the same.
    pub fn destroy(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        let mut result = Ok(());
        if let Some(ev) = self.event.take() {
            result = self.platform.destroy_event(ev.id);
        }
        if let Some(pool) = self.pool.take() {
            pool.release(self.raw);
        }
        if let Some(chunk) = self.chunk.take() {
            let freed = pool::free_own_chunk(&*self.platform, &chunk);
            if result.is_ok() {
                result = freed;
            }
        }
        result
    }
}

impl<H: PlatformRef> Drop for Signal<H> {
    fn drop(&mut self) {
        // Errors are reported by `destroy`; a drop can only give the resources back.
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::signal::{AmdSignal, AMD_SIGNAL_KIND_USER};
    use crate::addr::NodeId;
    use crate::platform::fake::FakePlatform;
    use crate::status::Status;

    #[test]
    fn value_ops_follow_hsa_semantics() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create(10).unwrap();
        assert_eq!(s.kind(), SignalKind::User);
        assert_eq!(s.load(LoadOrder::Acquire), 10);
        s.store(7, StoreOrder::Release);
        assert_eq!(s.load(LoadOrder::Relaxed), 7);
        assert_eq!(s.exchange(3, MemoryOrder::AcqRel), 7);
        assert_eq!(s.compare_exchange(4, 9, MemoryOrder::Acquire), 3);
        assert_eq!(s.load(LoadOrder::Relaxed), 3);
        assert_eq!(s.compare_exchange(3, 9, MemoryOrder::Release), 3);
        assert_eq!(s.add(2, MemoryOrder::Relaxed), 9);
        assert_eq!(s.subtract(12, MemoryOrder::AcqRel), 11);
        assert_eq!(s.load(LoadOrder::Relaxed), -1);
        s.silent_store(0b1100, StoreOrder::Relaxed);
        assert_eq!(s.and(0b1010, MemoryOrder::Relaxed), 0b1100);
        assert_eq!(s.or(0b0001, MemoryOrder::Relaxed), 0b1000);
        assert_eq!(s.xor(0b1111, MemoryOrder::Relaxed), 0b1001);
        assert_eq!(s.load(LoadOrder::Acquire), 0b0110);
        // The memory really is an amd_signal_t: kind USER at 0, value at 8.
        let raw = s.raw();
        assert_eq!(
            raw.kind().load(crate::sync::Ordering::Relaxed),
            AMD_SIGNAL_KIND_USER
        );
        assert_eq!(s.handle().0 % 64, 0);
        assert_eq!(core::mem::size_of::<AmdSignal>(), 64);
        // No event: nothing was signaled.
        assert_eq!(plat.signal_event_count(), 0);
        // Debug names the handle, the kind and the event.
        assert_eq!(
            std::format!("{s:?}"),
            std::format!(
                "Signal {{ handle: {:?}, kind: User, event: None }}",
                s.handle()
            )
        );
        let i = pool.create_interrupt(0).unwrap();
        assert_eq!(
            std::format!("{i:?}"),
            std::format!(
                "Signal {{ handle: {:?}, kind: Interrupt, event: Some({:?}) }}",
                i.handle(),
                i.event().unwrap()
            )
        );
    }

    /// An active wait with a timeout polls until the change it waits for, not only until
    /// the first clock read: a change made 5 ms in (1 s under miri) ends a 60 s wait with the
    /// new value.
    #[test]
    fn an_active_wait_with_a_timeout_sees_a_later_change() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create(1).unwrap();
        let after = std::time::Duration::from_millis(if cfg!(miri) { 1000 } else { 5 });
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(after);
                s.store(0, StoreOrder::Release);
            });
            let v = s.wait(
                SignalCondition::Eq,
                0,
                60_000_000_000,
                WaitState::Active,
                LoadOrder::Acquire,
            );
            assert_eq!(v, 0);
        });
    }

    /// An active wait with a timeout on a signal nobody changes ends at its timeout, with the
    /// unchanged value: it keeps reading the clock (every few polls) past its first polls.
    #[test]
    fn an_active_wait_ends_at_its_timeout() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create(1).unwrap();
        let t = std::time::Instant::now();
        let v = s.wait(
            SignalCondition::Eq,
            0,
            5_000_000,
            WaitState::Active,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 1);
        assert!(t.elapsed() >= std::time::Duration::from_millis(5));
    }

    /// A blocked wait on an interrupt signal spins first (the platform's spin time) and only
    /// then blocks on the signal's event, for the time left (timeout less elapsed).
    #[test]
    fn a_blocked_wait_spins_before_it_blocks_on_the_event() {
        use crate::platform::fake::FaultInjector;
        let plat = FaultInjector::new(FakePlatform::new());
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create_interrupt(1).unwrap();
        let timeout = if cfg!(miri) {
            2_000_000_000
        } else {
            200_000_000
        };
        let v = s.wait(
            SignalCondition::Eq,
            0,
            timeout,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 1, "timed out with the value unchanged");
        let waits = plat.event_waits();
        assert!(!waits.is_empty(), "it blocked");
        // The first block is for (about) all the time left: the spin took far less than half.
        assert!(waits[0].timeout_ns >= timeout / 2, "{waits:?}");
        let spin = plat.wait_spin_ns();
        for w in &waits {
            assert_eq!(
                (w.events.as_slice(), w.any),
                ([s.event().unwrap()].as_slice(), false)
            );
            assert!(
                w.timeout_ns <= timeout - spin,
                "blocked before the spin ended: {waits:?}"
            );
        }
    }

    #[test]
    fn interrupt_signal_notifies_on_every_non_silent_change_while_a_waiter_may_block() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create_interrupt(1).unwrap();
        assert_eq!(s.kind(), SignalKind::Interrupt);
        let ev = s.event().unwrap();
        // The amd_signal_t carries the event id and mailbox address.
        assert_eq!(s.raw().event_id(), ev.get());
        let mailbox = s
            .raw()
            .event_mailbox_ptr()
            .load(crate::sync::Ordering::Relaxed);
        assert_eq!(mailbox, plat.mailbox_address(ev).unwrap().get());
        let untouched = plat.mailbox_value(ev);
        // Nobody waits: no change raises the event or writes the mailbox.
        s.store(4, StoreOrder::Release);
        s.subtract(1, MemoryOrder::AcqRel);
        s.compare_exchange(3, 2, MemoryOrder::AcqRel);
        assert_eq!(plat.signal_event_count(), 0);
        assert_eq!(plat.mailbox_value(ev), untouched);
        // A waiter that may block (as a blocked wait registers before its first block).
        let waiters = s.event_wait().unwrap().waiters;
        waiters.register();
        assert_eq!(waiters.count(), 1);
        s.silent_store(5, StoreOrder::Relaxed);
        assert_eq!(plat.signal_event_count(), 0);
        s.store(4, StoreOrder::Release);
        assert_eq!(plat.signal_event_count(), 1);
        assert_eq!(plat.mailbox_value(ev), Some(u64::from(ev.get())));
        s.subtract(1, MemoryOrder::AcqRel);
        s.add(1, MemoryOrder::AcqRel);
        s.exchange(1, MemoryOrder::AcqRel);
        s.and(1, MemoryOrder::AcqRel);
        s.or(1, MemoryOrder::AcqRel);
        s.xor(1, MemoryOrder::AcqRel);
        assert_eq!(plat.signal_event_count(), 7);
        s.compare_exchange(100, 2, MemoryOrder::AcqRel); // fails: no change, no event
        assert_eq!(plat.signal_event_count(), 7);
        s.compare_exchange(0, 2, MemoryOrder::AcqRel);
        assert_eq!(plat.signal_event_count(), 8);
        // The waiter left: stores are quiet again.
        waiters.unregister();
        s.store(9, StoreOrder::Release);
        assert_eq!(plat.signal_event_count(), 8);
        s.destroy().unwrap();
        assert_eq!(plat.live_event_count(), 0);
    }

    /// Calls of [`counting_barrier`].
    static BARRIER_CALLS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

    /// A process barrier for the fake: counts its calls and fences (on one thread of a test,
    /// as much order as `membarrier` gives).
    fn counting_barrier() {
        BARRIER_CALLS.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }

    /// With a platform barrier, signals take it; registration issues it once per blocked
    /// wait, a change never does, and a change still raises the event while a waiter may
    /// block. Without one, signals use fences alone.
    #[test]
    fn a_platform_barrier_is_issued_by_registration_alone() {
        let plain = FakePlatform::new();
        let pool = SignalPool::new(&plain, NodeId(0));
        assert!(!pool.create_interrupt(0).unwrap().uses_process_barrier());
        assert!(!Waiters::new().uses_process_barrier());

        let mut plat = FakePlatform::new();
        plat.set_process_barrier(Some(counting_barrier));
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create_interrupt(0).unwrap();
        assert!(s.uses_process_barrier());
        assert!(pool.create(0).unwrap().uses_process_barrier());
        let before = BARRIER_CALLS.load(core::sync::atomic::Ordering::SeqCst);
        s.store(1, StoreOrder::Release);
        s.add(1, MemoryOrder::AcqRel);
        assert_eq!(plat.signal_event_count(), 0, "nobody waits");
        // A blocked wait that times out past its spin registers once.
        let seen = s.wait(
            SignalCondition::Eq,
            7,
            // Long enough under miri for the first clock read after the spin to come
            // before the timeout (see blocked_wait_registers_while_it_may_block).
            plat.wait_spin_ns() + if cfg!(miri) { 500_000_000 } else { 2_000_000 },
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(seen, 2);
        assert_eq!(
            BARRIER_CALLS.load(core::sync::atomic::Ordering::SeqCst) - before,
            1
        );
        // While a waiter may block, a change raises the event (no barrier on this side).
        let waiters = s.event_wait().unwrap().waiters;
        waiters.register();
        assert_eq!(
            BARRIER_CALLS.load(core::sync::atomic::Ordering::SeqCst) - before,
            2
        );
        s.store(3, StoreOrder::Release);
        assert_eq!(plat.signal_event_count(), 1);
        assert_eq!(
            BARRIER_CALLS.load(core::sync::atomic::Ordering::SeqCst) - before,
            2
        );
        waiters.unregister();
        s.store(4, StoreOrder::Release);
        assert_eq!(plat.signal_event_count(), 1);
    }

    /// Yields until every count in `counts` is non-zero (at most 10 s).
    fn wait_for_registration(counts: &[&Waiters]) {
        let start = std::time::Instant::now();
        while counts.iter().any(|w| w.count() == 0) {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "the waiter never registered"
            );
            std::thread::yield_now();
        }
    }

    /// A blocked wait registers before it blocks and unregisters when it returns, whether
    /// the change woke it or the timeout passed.
    #[test]
    fn blocked_wait_registers_while_it_may_block() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create_interrupt(1).unwrap();
        let waiters = s.event_wait().unwrap().waiters;
        // Active waits and waits that are met at once never register.
        assert_eq!(
            s.wait(
                SignalCondition::Eq,
                1,
                u64::MAX,
                WaitState::Active,
                LoadOrder::Acquire
            ),
            1
        );
        assert_eq!(
            s.wait(
                SignalCondition::Eq,
                0,
                1_000_000,
                WaitState::Active,
                LoadOrder::Acquire
            ),
            1
        );
        assert_eq!(waiters.count(), 0);
        // Timed out past the spin: registered while blocked, unregistered after. The timeout
        // must outlast the spin as the wait's clock sees it: under miri, on a loaded machine,
        // the first clock read after the 20 us spin came after 5 ms, and the wait returned
        // at that read without blocking (a CI run of 2026-12-07).
        let timeout_ns = if cfg!(miri) { 500_000_000 } else { 5_000_000 };
        let v = s.wait(
            SignalCondition::Eq,
            0,
            timeout_ns,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 1);
        assert!(plat.wait_event_count() >= 1, "the wait blocked");
        assert_eq!(waiters.count(), 0);
        std::thread::scope(|sc| {
            // A lost wake-up would let the 2 s timeout pass and return 1.
            let waiter = sc.spawn(|| {
                s.wait(
                    SignalCondition::Eq,
                    0,
                    2_000_000_000,
                    WaitState::Blocked,
                    LoadOrder::Acquire,
                )
            });
            // The waiter registers after its spin; the store then raises the event.
            wait_for_registration(&[waiters]);
            s.store(0, StoreOrder::Release);
            assert_eq!(waiter.join().unwrap(), 0);
        });
        assert_eq!(plat.signal_event_count(), 1);
        assert_eq!(waiters.count(), 0);
        // wait_any registers in every member with an event, and unregisters.
        let t = pool.create_interrupt(1).unwrap();
        let r = wait_any(
            &[&s, &t],
            &[SignalCondition::Eq; 2],
            &[5, 5],
            3_000_000,
            WaitState::Blocked,
        )
        .unwrap();
        assert_eq!(r, None);
        assert_eq!(waiters.count(), 0);
        assert_eq!(t.event_wait().unwrap().waiters.count(), 0);
        std::thread::scope(|sc| {
            let waiter = sc.spawn(|| {
                wait_any(
                    &[&s, &t],
                    &[SignalCondition::Eq; 2],
                    &[5, 7],
                    2_000_000_000,
                    WaitState::Blocked,
                )
                .unwrap()
            });
            wait_for_registration(&[waiters, t.event_wait().unwrap().waiters]);
            t.store(7, StoreOrder::Release);
            assert_eq!(waiter.join().unwrap(), Some((1, 7)));
        });
        assert_eq!(waiters.count(), 0);
        assert_eq!(t.event_wait().unwrap().waiters.count(), 0);
    }

    #[test]
    fn wait_returns_at_once_when_met_and_times_out_otherwise() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create(3).unwrap();
        let v = s.wait(
            SignalCondition::Gte,
            3,
            0,
            WaitState::Active,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 3);
        // Not met: the timeout (1 ms) passes and the value last seen comes back.
        let v = s.wait(
            SignalCondition::Eq,
            0,
            1_000_000,
            WaitState::Blocked,
            LoadOrder::Acquire,
        );
        assert_eq!(v, 3);
        let i = pool.create_interrupt(3).unwrap();
        // Under miri the first clock read after the spin can come 5 ms late: the timeout must
        // outlast it or the wait ends without blocking.
        let v = i.wait(
            SignalCondition::Lt,
            3,
            if cfg!(miri) { 500_000_000 } else { 5_000_000 },
            WaitState::Blocked,
            LoadOrder::Relaxed,
        );
        assert_eq!(v, 3);
        assert!(
            plat.wait_event_count() >= 1,
            "an interrupt wait past the spin blocks"
        );
    }

    #[test]
    fn wait_wakes_on_store_from_another_thread() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        for interrupt in [false, true] {
            let s = if interrupt {
                pool.create_interrupt(1).unwrap()
            } else {
                pool.create(1).unwrap()
            };
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    s.subtract(1, MemoryOrder::Release);
                });
                let v = s.wait(
                    SignalCondition::Eq,
                    0,
                    u64::MAX,
                    WaitState::Blocked,
                    LoadOrder::Acquire,
                );
                assert_eq!(v, 0);
            });
        }
    }

    #[test]
    fn destroy_reports_event_error_and_frees_slot() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let s = pool.create_interrupt(0).unwrap();
        let ev = s.event().unwrap();
        plat.destroy_event(ev).unwrap(); // someone destroyed it under us
        let e = s.destroy().unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(pool.live_signals(), 0);
    }
}
