//! Wait conditions and the wait strategy: spin for a short time, then block on the platform
//! event of an interrupt signal (or keep polling with backoff when there is none).
//!
//! No wake-up is lost: a platform event stays signaled until a wait consumes it (see
//! [`Platform::wait_event`]), and whoever changes a signal stores the value *before* it
//! signals the event. A waiter reads the value (arming), finds the condition unmet and only
//! then blocks; a store after that read leaves the event signaled, so the block returns at
//! once and the loop re-reads the value.
//!
//! A host-side change raises the event only when a waiter may be blocked on it (as ROCR's
//! interrupt signal does): each interrupt signal counts its waiters that may block
//! ([`Waiters`]). A waiter registers *before* the value read that arms its block; a changer
//! stores the value and then reads the count, with a `SeqCst` fence between the two accesses
//! on each side (or, on a platform with a process-wide barrier, a compiler fence on the
//! changer's side and that barrier on the waiter's: [`Platform::process_barrier`]). Either the changer sees the registration and raises the event, or the
//! waiter's read sees the new value and does not block. A changer that sees no waiter skips
//! the mailbox write and the platform call ([`Platform::signal_event`]: on Linux an
//! `AMDKFD_IOC_SET_EVENT` ioctl), the whole cost of a store nobody blocks on. The device side
//! (a packet processor's completion) does not look at the count: it always raises the event.
//!
//! Ref: HSA Runtime 1.2 §2.4 `hsa_signal_wait_scacquire` (`hsa_signal_condition_t`,
//! `hsa_wait_state_t`; the timeout is a hint; the function returns the value it observed).

use crate::addr::EventId;
use crate::platform::{Platform, WaitOutcome};
use crate::status::{Error, Status};
use crate::sync::{fence, spin_hint, AtomicI64, AtomicU32, Ordering};

use super::order::LoadOrder;

/// How long a blocked-state wait spins before it blocks on the platform event, ns, unless the
/// platform says otherwise ([`Platform::wait_spin_ns`]).
pub const SPIN_NS: u64 = 20_000;

/// The longest single block when a wait-any has to take turns over several events, ns: the
/// extra latency a signal whose event is not the one being waited on can see.
pub const MULTI_EVENT_SLICE_NS: u64 = 1_000_000;

/// `hsa_signal_condition_t`: how a signal's value is compared with the compare value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum SignalCondition {
    /// `HSA_SIGNAL_CONDITION_EQ` (0): value == compare.
    Eq = 0,
    /// `HSA_SIGNAL_CONDITION_NE` (1): value != compare.
    Ne = 1,
    /// `HSA_SIGNAL_CONDITION_LT` (2): value < compare.
    Lt = 2,
    /// `HSA_SIGNAL_CONDITION_GTE` (3): value >= compare.
    Gte = 3,
}

impl SignalCondition {
    /// From the raw `hsa_signal_condition_t` value.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a value other than 0..=3.
    pub fn from_raw(raw: u32) -> Result<SignalCondition, Error> {
        Ok(match raw {
            0 => SignalCondition::Eq,
            1 => SignalCondition::Ne,
            2 => SignalCondition::Lt,
            3 => SignalCondition::Gte,
            _ => {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [raw.into()],
                    |&[raw, ..], f| {
                        write!(
                            f,
                            "signal condition {raw} is not one of EQ 0, NE 1, LT 2, GTE 3"
                        )
                    },
                ))
            }
        })
    }

    /// Whether `value` satisfies the condition against `compare`.
    pub const fn holds(self, value: i64, compare: i64) -> bool {
        match self {
            SignalCondition::Eq => value == compare,
            SignalCondition::Ne => value != compare,
            SignalCondition::Lt => value < compare,
            SignalCondition::Gte => value >= compare,
        }
    }
}

/// `hsa_wait_state_t`: whether a waiter may give up the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WaitState {
    /// `HSA_WAIT_STATE_BLOCKED` (0): spin briefly, then block (interrupt signals) or poll
    /// with backoff.
    Blocked = 0,
    /// `HSA_WAIT_STATE_ACTIVE` (1): busy-wait the whole time.
    Active = 1,
}

impl WaitState {
    /// From the raw `hsa_wait_state_t` value.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a value other than 0 or 1.
    pub fn from_raw(raw: u32) -> Result<WaitState, Error> {
        Ok(match raw {
            0 => WaitState::Blocked,
            1 => WaitState::Active,
            _ => {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [raw.into()],
                    |&[raw, ..], f| write!(f, "wait state {raw} is not one of BLOCKED 0, ACTIVE 1"),
                ))
            }
        })
    }
}

/// The number of waiters that may block on an interrupt signal's event: what a host-side
/// change of the signal reads to decide whether to raise the event (ROCR: the interrupt
/// signal's `waiting_` count; `hsaKmtSetEvent` only when it is non-zero).
///
/// Protocol (see the [module docs](self)): a waiter calls [`Waiters::register`] before the
/// value read that precedes its first block and [`Waiters::unregister`] when the wait
/// returns; a changer stores the value, then calls [`Waiters::may_block`] and raises the
/// event when it says so. Registering after that value read (the read that decides to
/// block) loses wake-ups: the `loom_signal` model shows it.
///
/// The two sides order their accesses with a `SeqCst` fence each, or, when the signal's
/// platform has a process-wide barrier ([`Platform::process_barrier`]), asymmetrically: the
/// changer with a compiler fence (free), the registering waiter with the process barrier,
/// which makes every other thread execute a full fence. Either the changer's count read
/// comes before that fence on its thread (then so does its value store, which the waiter's
/// read after the barrier sees) or after it (then it sees the registration, made before the
/// barrier). A waiter registers once per blocked wait, after its spin; a changer runs on
/// every store.
#[derive(Debug, Default)]
pub struct Waiters {
    count: AtomicU32,
    /// The platform's process-wide barrier, when the signal's platform has one.
    barrier: Option<fn()>,
}

impl Waiters {
    /// No waiters; both sides fence.
    pub fn new() -> Self {
        Waiters {
            count: AtomicU32::new(0),
            barrier: None,
        }
    }

    /// No waiters; with `barrier` (a [`Platform::process_barrier`]), registration issues it
    /// and a change fences only the compiler.
    pub fn with_barrier(barrier: Option<fn()>) -> Self {
        Waiters {
            count: AtomicU32::new(0),
            barrier,
        }
    }

    /// Counts one more waiter that may block, then orders the increment before the caller's
    /// next read of the signal value: a `SeqCst` fence (pairs with the one in
    /// [`Waiters::may_block`]), or the process barrier.
    pub fn register(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        match self.barrier {
            Some(barrier) => barrier(),
            None => fence(Ordering::SeqCst),
        }
    }

    /// Counts one waiter fewer (the wait returned).
    pub fn unregister(&self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether a waiter may be blocked, read after the caller's change of the signal value:
    /// `false` means every waiter that registered before this call reads the new value
    /// before it blocks. A `SeqCst` fence orders the caller's value change before the read
    /// of the count (pairs with the fence in [`Waiters::register`]); with a process barrier
    /// a compiler fence does (the barrier supplies the hardware fence).
    pub fn may_block(&self) -> bool {
        if self.barrier.is_some() {
            core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        self.count.load(Ordering::Relaxed) != 0
    }

    /// The current count (for tests and diagnostics; a snapshot).
    pub fn count(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether registration issues a process barrier (and a change fences only the compiler).
    pub fn uses_process_barrier(&self) -> bool {
        self.barrier.is_some()
    }
}

/// The event a blocked-state wait may block on, and the waiter count it registers in before
/// its first block.
#[derive(Clone, Copy, Debug)]
pub struct EventWait<'a> {
    /// The signal's platform event.
    pub id: EventId,
    /// The signal's waiter count, read by whoever changes the signal.
    pub waiters: &'a Waiters,
}

/// A clock over the platform's timestamp, in ns since the wait began.
pub(crate) struct Clock<'a, P: Platform> {
    platform: &'a P,
    start: u64,
    freq_hz: u64,
}

impl<'a, P: Platform> Clock<'a, P> {
    pub(crate) fn start(platform: &'a P) -> Self {
        let freq_hz = match platform.timestamp_frequency_hz() {
            0 => 1_000_000_000,
            f => f,
        };
        Clock {
            platform,
            start: platform.timestamp_ticks(),
            freq_hz,
        }
    }

    /// Elapsed ns (saturating).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        let ticks = self.platform.timestamp_ticks().saturating_sub(self.start);
        let ns = u128::from(ticks) * 1_000_000_000 / u128::from(self.freq_hz);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// An exponential spin backoff: 1, 2, 4, ... up to 1024 spin hints a round.
pub(crate) struct Backoff(u32);

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff(0)
    }

    pub(crate) fn spin(&mut self) {
        for _ in 0..self.hints() {
            spin_hint();
        }
        if self.0 < 10 {
            self.0 += 1;
        }
    }

    /// The spin hints the next [`spin`](Self::spin) gives: 1, 2, 4, ... 1024.
    fn hints(&self) -> u32 {
        // Under loom every hint is a yield that the model explores: one a round.
        if cfg!(loom) {
            1
        } else {
            1 << self.0
        }
    }
}

/// Waits until `value` (loaded with `order`) satisfies `condition` against `compare`, or
/// `timeout_ns` (a hint; `u64::MAX` = forever) passes; returns the value last observed.
///
/// Blocked state: spins for [`Platform::wait_spin_ns`] ([`SPIN_NS`] by default), then, when
/// `event` is given, registers in its [`Waiters`], re-reads the value and blocks on
/// [`Platform::wait_event`] for the remaining time, re-checking after every return (wake-ups
/// may be spurious or stale), and unregisters when it returns; without an event it keeps
/// polling with exponential backoff.
/// Active state: polls the whole time, one spin hint per poll, and reads the clock only when
/// a timeout is given (an active wait's latency is one poll). A failing `wait_event` (unknown event: the signal's
/// owner destroyed it) degrades to polling.
///
/// This is the whole of [`Signal::wait`](super::Signal::wait); it takes the atomic and the
/// event directly so that loom models can run it on model memory.
#[allow(clippy::too_many_arguments)] // the HSA wait's own parameter list
pub fn wait_value<P: Platform>(
    platform: &P,
    value: &AtomicI64,
    event: Option<EventWait<'_>>,
    condition: SignalCondition,
    compare: i64,
    timeout_ns: u64,
    state: WaitState,
    order: LoadOrder,
) -> i64 {
    // Acquire (scacquire waits) pairs with the Release of the store or RMW that changed
    // the value (Signal::store / the packet processor's completion decrement).
    let observed = value.load(order.ordering());
    if condition.holds(observed, compare) || timeout_ns == 0 {
        return observed;
    }
    // An active wait without a timeout never needs the clock: it polls as fast as the core
    // allows, so the latency it adds to a change is one poll, not a backoff round.
    let timed = state == WaitState::Blocked || timeout_ns != u64::MAX;
    let mut registered = None;
    let observed = wait_loop(
        platform,
        value,
        event,
        &mut registered,
        condition,
        compare,
        timeout_ns,
        state,
        order,
        timed,
    );
    if let Some(waiters) = registered {
        waiters.unregister();
    }
    observed
}

/// Polls of an active timed wait between two reads of the clock (1 under loom, whose model
/// explores every spin hint).
#[cfg(not(loom))]
const ACTIVE_POLLS_PER_CLOCK: u32 = 32;
#[cfg(loom)]
const ACTIVE_POLLS_PER_CLOCK: u32 = 1;

/// The loop of [`wait_value`] after its first read; sets `registered` when it registers in
/// the event's waiter count (the caller unregisters).
#[allow(clippy::too_many_arguments)]
fn wait_loop<'a, P: Platform>(
    platform: &P,
    value: &AtomicI64,
    event: Option<EventWait<'a>>,
    registered: &mut Option<&'a Waiters>,
    condition: SignalCondition,
    compare: i64,
    timeout_ns: u64,
    state: WaitState,
    order: LoadOrder,
    timed: bool,
) -> i64 {
    let clock = Clock::start(platform);
    let spin_ns = platform.wait_spin_ns();
    let mut backoff = Backoff::new();
    let mut event = event;
    let mut polls: u32 = 0;
    loop {
        let observed = value.load(order.ordering());
        if condition.holds(observed, compare) {
            return observed;
        }
        if state == WaitState::Active {
            // Busy-wait: one spin hint per poll (no exponential backoff, which would add up
            // to its longest round, ~1024 hints, to the wake-up latency). The clock costs more
            // than a poll (a vDSO call, more under a hypervisor), so a timed wait reads it
            // every ACTIVE_POLLS_PER_CLOCK polls: its timeout is noticed that many polls late
            // at most.
            spin_hint();
            polls = polls.wrapping_add(1);
            if timed && polls % ACTIVE_POLLS_PER_CLOCK == 0 && clock.elapsed_ns() >= timeout_ns {
                return value.load(order.ordering());
            }
            continue;
        }
        let elapsed = clock.elapsed_ns();
        if elapsed >= timeout_ns {
            return observed;
        }
        match event {
            Some(ev) if elapsed >= spin_ns => {
                if registered.is_none() {
                    // Before the first block: register, then read the value again so that a
                    // change made before the registration is seen.
                    ev.waiters.register();
                    *registered = Some(ev.waiters);
                    let observed = value.load(order.ordering());
                    if condition.holds(observed, compare) {
                        return observed;
                    }
                }
                // Armed: the value was read after registering; a later change sees the
                // registration and leaves the event signaled, so this returns at once.
                let remaining = if timeout_ns == u64::MAX {
                    u64::MAX
                } else {
                    timeout_ns - elapsed
                };
                match platform.wait_event(ev.id, remaining) {
                    Ok(WaitOutcome::Signaled) | Ok(WaitOutcome::TimedOut) => {}
                    Err(_) => event = None,
                }
            }
            _ => backoff.spin(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn conditions_from_raw_match_hsa_h() {
        assert_eq!(SignalCondition::from_raw(0).unwrap(), SignalCondition::Eq);
        assert_eq!(SignalCondition::from_raw(1).unwrap(), SignalCondition::Ne);
        assert_eq!(SignalCondition::from_raw(2).unwrap(), SignalCondition::Lt);
        assert_eq!(SignalCondition::from_raw(3).unwrap(), SignalCondition::Gte);
        let e = SignalCondition::from_raw(4).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains('4'), "{e}");
        assert_eq!(WaitState::from_raw(0).unwrap(), WaitState::Blocked);
        assert_eq!(WaitState::from_raw(1).unwrap(), WaitState::Active);
        assert_eq!(
            WaitState::from_raw(2).unwrap_err().status(),
            Status::InvalidArgument
        );
    }

    #[test]
    fn conditions_compare() {
        assert!(SignalCondition::Eq.holds(5, 5));
        assert!(!SignalCondition::Eq.holds(4, 5));
        assert!(SignalCondition::Ne.holds(4, 5));
        assert!(!SignalCondition::Ne.holds(5, 5));
        assert!(SignalCondition::Lt.holds(-1, 0));
        assert!(!SignalCondition::Lt.holds(0, 0));
        assert!(SignalCondition::Gte.holds(0, 0));
        assert!(!SignalCondition::Gte.holds(-1, 0));
    }

    /// The backoff doubles its spin hints each round, from 1 up to 1024.
    #[test]
    fn backoff_doubles_up_to_1024_hints() {
        let mut b = Backoff::new();
        let rounds: std::vec::Vec<u32> = (0..13)
            .map(|_| {
                let n = b.hints();
                b.spin();
                n
            })
            .collect();
        assert_eq!(
            rounds,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1024, 1024]
        );
    }

    /// The wait clock turns the platform's ticks into ns at the platform's frequency: on a
    /// 100 MHz clock (a real GPU's), 2 ms of sleep is at least 2,000,000 ns, not the 200,000
    /// ticks; a platform that reports 0 Hz is read as ns.
    #[test]
    fn the_wait_clock_counts_ns_at_the_platforms_frequency() {
        use crate::platform::fake::FakePlatform;
        for hz in [100_000_000, 0] {
            let mut plat = FakePlatform::new();
            plat.set_timestamp_frequency_hz(hz);
            let clock = Clock::start(&plat);
            std::thread::sleep(std::time::Duration::from_millis(2));
            let ns = clock.elapsed_ns();
            assert!(ns >= 2_000_000, "{hz} Hz: {ns} ns");
            // Far below a minute: not a saturated or scaled-up count.
            assert!(ns < 60_000_000_000, "{hz} Hz: {ns} ns");
        }
    }
}
