//! Waiting on any of several signals, each with its own condition and compare value.
//!
//! Ref: `hsa_amd_signal_wait_any` (`hsa_ext_amd.h`); HSA Runtime 1.2 §2.4.2
//! `hsa_signal_group_create`, `hsa_signal_group_wait_any_scacquire`.

use crate::platform::{Platform, WaitOutcome};
use crate::status::{Error, Result, Status};

use super::order::LoadOrder;
use super::raw::RawSignal;
use super::wait::{Backoff, Clock, SignalCondition, WaitState, MULTI_EVENT_SLICE_NS};
use super::Signal;
use crate::addr::EventId;
use crate::platform_ref::PlatformRef;

/// Waits until any `signals[i]` satisfies `conditions[i]` against `values[i]`, or about
/// `timeout_ns` passes (`u64::MAX`: no timeout). Returns `Some((i, value))` for the first
/// satisfied signal in index order, `None` on timeout (`hsa_amd_signal_wait_any` returns
/// `UINT32_MAX` there). Values are loaded with Acquire (stronger than the relaxed semantics
/// the AMD extension promises).
///
/// Blocked state: spins [`Platform::wait_spin_ns`] ([`SPIN_NS`](super::SPIN_NS) by default);
/// then, when some signals are interrupt signals, blocks on
/// their events. The platform waits on one event at a time, so with more than one distinct
/// event, or when some signals have no event, the waits take turns of at most
/// [`MULTI_EVENT_SLICE_NS`]; a change to a signal whose event is not being waited on (or that
/// has none) is then seen within one turn. Without events: polls with
/// backoff.
///
/// # Errors
/// `Status::InvalidArgument` when `signals` is empty or `conditions`/`values` differ in
/// length from `signals`.
pub fn wait_any<H: PlatformRef>(
    signals: &[&Signal<H>],
    conditions: &[SignalCondition],
    values: &[i64],
    timeout_ns: u64,
    state: WaitState,
) -> Result<Option<(usize, i64)>> {
    if signals.is_empty() {
        crate::bail!(Status::InvalidArgument, "wait_any: signal_count is 0");
    }
    if conditions.len() != signals.len() || values.len() != signals.len() {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [signals.len(), conditions.len(), values.len()].map(|n| n as u64),
            |&[signals, conditions, values, ..], f| {
                write!(
                    f,
                    "wait_any: {signals} signals but {conditions} conditions and {values} values"
                )
            },
        ));
    }
    Ok(wait_any_members(
        signals.len(),
        |i| Member::of(signals[i]),
        conditions,
        values,
        timeout_ns,
        state,
    ))
}

/// What [`wait_any_members`] needs of one signal: its value, its event and the platform that
/// waits on that event. Signals with different handle types (a queue's own signal and an
/// application's) meet here.
pub(crate) struct Member<'a, P: Platform> {
    raw: RawSignal,
    event: Option<EventId>,
    platform: &'a P,
}

// Not derived: a derive would ask `P: Copy`.
impl<P: Platform> Clone for Member<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: Platform> Copy for Member<'_, P> {}

impl<'a, P: Platform> Member<'a, P> {
    /// The member view of `signal`.
    pub(crate) fn of<H: PlatformRef<Target = P>>(signal: &'a Signal<H>) -> Self {
        Member {
            raw: signal.raw(),
            event: signal.event(),
            platform: signal.platform(),
        }
    }
}

/// [`wait_any`] over `count` members, `member(i)` for `i < count` (`count > 0`, and
/// `conditions` and `values` at least `count` long: the caller checked).
pub(crate) fn wait_any_members<'a, P: Platform + 'a>(
    count: usize,
    member: impl Fn(usize) -> Member<'a, P>,
    conditions: &[SignalCondition],
    values: &[i64],
    timeout_ns: u64,
    state: WaitState,
) -> Option<(usize, i64)> {
    let clock = Clock::start(member(0).platform);
    let spin_ns = member(0).platform.wait_spin_ns();
    let mut backoff = Backoff::new();
    let mut events: heapless::Vec<(usize, EventId), 64> = heapless::Vec::new();
    let mut distinct = 0usize;
    for i in 0..count {
        if let Some(ev) = member(i).event {
            if !events.iter().any(|(_, e)| *e == ev) {
                distinct += 1;
                // More than 64 distinct events: the rest are polled between turns.
                let _ = events.push((i, ev));
            }
        }
    }
    let all_evented = (0..count).all(|i| member(i).event.is_some());
    let mut turn = 0usize;
    loop {
        for i in 0..count {
            let v = member(i).raw.value().load(LoadOrder::Acquire.ordering());
            if conditions[i].holds(v, values[i]) {
                return Some((i, v));
            }
        }
        let elapsed = clock.elapsed_ns();
        if elapsed >= timeout_ns {
            return None;
        }
        if state == WaitState::Blocked && elapsed >= spin_ns && !events.is_empty() {
            let remaining = if timeout_ns == u64::MAX {
                u64::MAX
            } else {
                timeout_ns - elapsed
            };
            // One event covers every signal only when all of them carry it; otherwise a
            // polled signal (a user signal, or an event past the 64 tracked) must be re-read
            // every slice.
            let slice = if distinct == 1 && all_evented {
                remaining
            } else {
                remaining.min(MULTI_EVENT_SLICE_NS)
            };
            let (owner, ev) = events[turn % events.len()];
            turn = turn.wrapping_add(1);
            // Armed: every value was read above; a later change leaves its event signaled.
            match member(owner).platform.wait_event(ev, slice) {
                Ok(WaitOutcome::Signaled) | Ok(WaitOutcome::TimedOut) => {}
                Err(_) => {
                    // The event is gone: poll that signal from now on.
                    events.retain(|(_, e)| *e != ev);
                }
            }
        } else {
            backoff.spin();
        }
    }
}

/// A fixed set of distinct signals waited on together (`hsa_signal_group_t`).
pub struct SignalGroup<'s, H: PlatformRef> {
    signals: &'s [&'s Signal<H>],
}

impl<H: PlatformRef> core::fmt::Debug for SignalGroup<'_, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(self.signals.iter().map(|s| s.handle()))
            .finish()
    }
}

impl<'s, H: PlatformRef> SignalGroup<'s, H> {
    /// A group over `signals` (`hsa_signal_group_create`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `signals` is empty or holds the same signal twice.
    pub fn new(signals: &'s [&'s Signal<H>]) -> Result<Self> {
        if signals.is_empty() {
            crate::bail!(Status::InvalidArgument, "signal group: num_signals is 0");
        }
        for (i, a) in signals.iter().enumerate() {
            if let Some(j) = signals[..i].iter().position(|b| b.handle() == a.handle()) {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [i as u64, j as u64, a.handle().0],
                    |&[i, j, handle, ..], f| {
                        write!(
                            f,
                            "signal group: signals[{i}] and signals[{j}] are the same signal \
                             {handle:#x}"
                        )
                    },
                ));
            }
        }
        Ok(SignalGroup { signals })
    }

    /// The signals, in group order.
    pub fn signals(&self) -> &'s [&'s Signal<H>] {
        self.signals
    }

    /// Waits until any member satisfies its condition (`hsa_signal_group_wait_any_scacquire`
    /// with a timeout hint added); see [`wait_any`].
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `conditions` or `values` differ in length from the
    /// group.
    pub fn wait_any(
        &self,
        conditions: &[SignalCondition],
        values: &[i64],
        timeout_ns: u64,
        state: WaitState,
    ) -> Result<Option<(usize, i64)>> {
        wait_any(self.signals, conditions, values, timeout_ns, state)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MemoryOrder, SignalPool, StoreOrder};
    use super::*;
    use crate::addr::NodeId;
    use crate::platform::fake::FakePlatform;
    use std::string::ToString;

    #[test]
    fn wait_any_reports_first_satisfied_index_and_value() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create(5).unwrap();
        let b = pool.create_interrupt(1).unwrap();
        let c = pool.create_interrupt(9).unwrap();
        let conds = [
            SignalCondition::Eq,
            SignalCondition::Lt,
            SignalCondition::Gte,
        ];
        let r = wait_any(&[&a, &b, &c], &conds, &[0, 1, 9], 0, WaitState::Active).unwrap();
        assert_eq!(r, Some((2, 9)));
        // Nothing satisfied: timeout.
        let r = wait_any(&[&a, &b], &conds[..2], &[0, 1], 300_000, WaitState::Blocked).unwrap();
        assert_eq!(r, None);
        // Woken by another thread.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                b.subtract(1, MemoryOrder::Release);
            });
            let r = wait_any(
                &[&a, &b],
                &conds[..2],
                &[0, 1],
                u64::MAX,
                WaitState::Blocked,
            );
            assert_eq!(r.unwrap(), Some((1, 0)));
        });
        a.store(0, StoreOrder::Release);
        let members = [&a, &b, &c];
        let g = SignalGroup::new(&members).unwrap();
        assert_eq!(g.signals().len(), 3);
        let r = g
            .wait_any(&conds, &[0, 100, 100], 0, WaitState::Active)
            .unwrap();
        assert_eq!(r, Some((0, 0)));
    }

    #[test]
    fn wait_any_and_group_errors() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create(0).unwrap();
        let e = wait_any::<&FakePlatform>(&[], &[], &[], 0, WaitState::Active).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = wait_any(&[&a], &[], &[0], 0, WaitState::Active).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(
            e.detail()
                .to_string()
                .contains("1 signals but 0 conditions"),
            "{e}"
        );
        let e = SignalGroup::<&FakePlatform>::new(&[]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = SignalGroup::new(&[&a, &a][..]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(
            e.detail().to_string().contains("signals[1] and signals[0]"),
            "{e}"
        );
        let one = [&a];
        let g = SignalGroup::new(&one).unwrap();
        let e = g.wait_any(&[SignalCondition::Eq; 2], &[0], 0, WaitState::Active);
        assert_eq!(e.unwrap_err().status(), Status::InvalidArgument);
    }
}
