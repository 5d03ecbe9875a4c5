//! Wait conditions and the wait strategy: spin for a short time, then block on the platform
//! event of an interrupt signal (or keep polling with backoff when there is none).
//!
//! No wake-up is lost: a platform event stays signaled until a wait consumes it (see
//! [`Platform::wait_event`]), and whoever changes a signal stores the value *before* it
//! signals the event. A waiter reads the value (arming), finds the condition unmet and only
//! then blocks; a store after that read leaves the event signaled, so the block returns at
//! once and the loop re-reads the value.
//!
//! Ref: HSA Runtime 1.2 §2.4 `hsa_signal_wait_scacquire` (`hsa_signal_condition_t`,
//! `hsa_wait_state_t`; the timeout is a hint; the function returns the value it observed).

use crate::addr::EventId;
use crate::platform::{Platform, WaitOutcome};
use crate::status::{Error, Status};
use crate::sync::{spin_hint, AtomicI64};

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
        // Under loom every hint is a yield that the model explores: one a round.
        #[cfg(loom)]
        let rounds = 1;
        #[cfg(not(loom))]
        let rounds = 1u32 << self.0;
        for _ in 0..rounds {
            spin_hint();
        }
        if self.0 < 10 {
            self.0 += 1;
        }
    }
}

/// Waits until `value` (loaded with `order`) satisfies `condition` against `compare`, or
/// `timeout_ns` (a hint; `u64::MAX` = forever) passes; returns the value last observed.
///
/// Blocked state: spins for [`Platform::wait_spin_ns`] ([`SPIN_NS`] by default), then, when
/// `event` is given, blocks on
/// [`Platform::wait_event`] for the remaining time and re-checks after every return (wake-ups
/// may be spurious or stale); without an event it keeps polling with exponential backoff.
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
    event: Option<EventId>,
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
    let clock = Clock::start(platform);
    let spin_ns = platform.wait_spin_ns();
    let mut backoff = Backoff::new();
    let mut event = event;
    loop {
        let observed = value.load(order.ordering());
        if condition.holds(observed, compare) {
            return observed;
        }
        if state == WaitState::Active {
            // Busy-wait: one spin hint per poll (no exponential backoff, which would add up
            // to its longest round, ~1024 hints, to the wake-up latency).
            spin_hint();
            if timed && clock.elapsed_ns() >= timeout_ns {
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
                // Armed: `observed` was read before this call; a later store leaves the event
                // signaled and this returns at once.
                let remaining = if timeout_ns == u64::MAX {
                    u64::MAX
                } else {
                    timeout_ns - elapsed
                };
                match platform.wait_event(ev, remaining) {
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
}
