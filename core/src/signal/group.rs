//! Waiting on any of several signals, each with its own condition and compare value.
//!
//! Ref: `hsa_amd_signal_wait_any` (`hsa_ext_amd.h`); HSA Runtime 1.2 §2.4.2
//! `hsa_signal_group_create`, `hsa_signal_group_wait_any_scacquire`.

use crate::platform::Platform;
use crate::status::{Error, Result, Status};

use super::order::LoadOrder;
use super::raw::RawSignal;
use super::wait::{Backoff, Clock, SignalCondition, WaitState, Waiters, MULTI_EVENT_SLICE_NS};
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
/// then, when some signals are interrupt signals, blocks on all their events at once with
/// [`Platform::wait_any_event`] (Linux: one `AMDKFD_IOC_WAIT_EVENTS`), re-reading every
/// signal after each return. When every signal has an event (any number with the `alloc`
/// feature, at most [`MAX_WAIT_EVENTS`] distinct ones without) that wait lasts until the
/// timeout; when some have none, it lasts at most
/// [`MULTI_EVENT_SLICE_NS`], so a change to a polled signal is seen within that. A platform
/// that waits on one event at a time (the default of `wait_any_event`) gets the events in
/// turns of at most [`MULTI_EVENT_SLICE_NS`], as do signals of different platforms. Without
/// events: polls with backoff.
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
    /// The signal's waiter count (interrupt signals).
    waiters: Option<&'a Waiters>,
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
            waiters: signal.event_wait().map(|e| e.waiters),
            platform: signal.platform(),
        }
    }
}

/// [`wait_any`] over `count` members, `member(i)` for `i < count` (`count > 0`, and
/// `conditions` and `values` at least `count` long: the caller checked).
///
/// Before its first block it registers in the waiter count of every member with one and
/// re-reads all values (see [`Waiters`]); it unregisters when it returns.
pub(crate) fn wait_any_members<'a, P: Platform + 'a>(
    count: usize,
    member: impl Fn(usize) -> Member<'a, P>,
    conditions: &[SignalCondition],
    values: &[i64],
    timeout_ns: u64,
    state: WaitState,
) -> Option<(usize, i64)> {
    let mut registered = false;
    let result = wait_any_loop(
        count,
        &member,
        conditions,
        values,
        timeout_ns,
        state,
        &mut registered,
    );
    if registered {
        (0..count)
            .filter_map(|i| member(i).waiters)
            .for_each(Waiters::unregister);
    }
    result
}

/// The first member (index order) whose value satisfies its condition, with that value.
fn first_met<'a, P: Platform + 'a>(
    count: usize,
    member: &impl Fn(usize) -> Member<'a, P>,
    conditions: &[SignalCondition],
    values: &[i64],
) -> Option<(usize, i64)> {
    (0..count).find_map(|i| {
        let v = member(i).raw.value().load(LoadOrder::Acquire.ordering());
        conditions[i].holds(v, values[i]).then_some((i, v))
    })
}

/// The loop of [`wait_any_members`]; sets `registered` when it registered the members'
/// waiter counts (the caller unregisters).
fn wait_any_loop<'a, P: Platform + 'a>(
    count: usize,
    member: &impl Fn(usize) -> Member<'a, P>,
    conditions: &[SignalCondition],
    values: &[i64],
    timeout_ns: u64,
    state: WaitState,
    registered: &mut bool,
) -> Option<(usize, i64)> {
    let first = member(0).platform;
    let clock = Clock::start(first);
    let spin_ns = first.wait_spin_ns();
    let mut backoff = Backoff::new();
    // Event ids are the platform's own: two platforms may hand out the same id, so events are
    // only gathered into one wait when every member belongs to one platform.
    let one_platform = (1..count).all(|i| core::ptr::eq(member(i).platform, first));
    let any_event = (0..count).any(|i| member(i).event.is_some());
    // One platform: the distinct events, waited on together; without `alloc`, past
    // MAX_WAIT_EVENTS the rest are polled between waits.
    let mut events = EventList::new();
    let mut overflow = false;
    if one_platform {
        for i in 0..count {
            if let Some(ev) = member(i).event {
                if !events.contains(&ev) {
                    overflow |= !push_event(&mut events, ev);
                }
            }
        }
    }
    // One wait covers every signal when one platform waits on all their events; otherwise
    // every block lasts one slice, after which every signal is re-read.
    let mut covered = one_platform && !overflow && (0..count).all(|i| member(i).event.is_some());
    // Several platforms: the member whose event is waited on next (each in turn).
    let mut turn = 0;
    loop {
        if let Some(met) = first_met(count, member, conditions, values) {
            return Some(met);
        }
        let elapsed = clock.elapsed_ns();
        if elapsed >= timeout_ns {
            return None;
        }
        let can_block = if one_platform {
            !events.is_empty()
        } else {
            any_event
        };
        if state == WaitState::Blocked && elapsed >= spin_ns && can_block {
            if !*registered {
                // Before the first block: register, then re-read every value so that a
                // change made before the registration is seen.
                (0..count)
                    .filter_map(|i| member(i).waiters)
                    .for_each(Waiters::register);
                *registered = true;
                if let Some(met) = first_met(count, member, conditions, values) {
                    return Some(met);
                }
            }
            let remaining = if timeout_ns == u64::MAX {
                u64::MAX
            } else {
                timeout_ns - elapsed
            };
            let slice = if covered {
                remaining
            } else {
                remaining.min(MULTI_EVENT_SLICE_NS)
            };
            // Armed: every value was read above, after registering; a later change sees the
            // registration and leaves its event signaled.
            if one_platform {
                if first.wait_any_event(&events, slice).is_err() {
                    // An event is gone: poll its signals from now on (each slice).
                    covered = false;
                    events.retain(|ev| first.wait_event(*ev, 0).is_ok());
                }
                // A platform that waits on the first event alone gives the next one its turn.
                if !events.is_empty() {
                    events.rotate_left(1);
                }
            } else {
                let owner = (0..count)
                    .map(|k| (turn + k) % count)
                    .find(|&i| member(i).event.is_some());
                if let Some((i, ev)) = owner.and_then(|i| Some((i, member(i).event?))) {
                    turn = i + 1; // taken modulo count above
                    if member(i).platform.wait_event(ev, slice).is_err() {
                        // Its event is gone: the signal is polled like the others.
                        backoff.spin();
                    }
                }
            }
        } else {
            backoff.spin();
        }
    }
}

/// The most distinct events one wait-any blocks on at once without the `alloc` feature; the
/// signals of further events are then polled between waits (every [`MULTI_EVENT_SLICE_NS`]).
/// With `alloc` there is no such limit: one wait covers every event (up to the platform's own
/// limit, Linux's `KFD_SIGNAL_EVENT_LIMIT` of 4096, past which the platform refuses the wait
/// and the signals are polled), so no signal of a large wait (hundreds of async handlers)
/// waits for a slice to be seen.
pub const MAX_WAIT_EVENTS: usize = 256;

/// The events one wait-any blocks on.
#[cfg(feature = "alloc")]
type EventList = alloc::vec::Vec<EventId>;
/// The events one wait-any blocks on.
#[cfg(not(feature = "alloc"))]
type EventList = heapless::Vec<EventId, MAX_WAIT_EVENTS>;

/// Appends `ev`; `false` when the list is full (without `alloc` only).
fn push_event(list: &mut EventList, ev: EventId) -> bool {
    #[cfg(feature = "alloc")]
    {
        list.push(ev);
        true
    }
    #[cfg(not(feature = "alloc"))]
    {
        list.push(ev).is_ok()
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

/// Waits until every `signals[i]` has satisfied `conditions[i]` against `values[i]`, or about
/// `timeout_ns` passes (`u64::MAX`: no timeout). A signal that satisfied its condition once
/// counts as satisfied from then on, and `satisfying[i]` receives the value it was seen with
/// (`hsa_amd_signal_wait_all`, ROCR 7: `Signal::WaitMultiple` with `wait_on_all`); the entries
/// of signals still unsatisfied at a timeout are set to 0. Returns `true` when every signal was
/// satisfied, `false` on timeout (the C function returns 0 and `UINT32_MAX`). An empty list is
/// satisfied at once. Waiting is [`wait_any`]'s, over the signals not yet satisfied.
///
/// # Errors
/// `Status::InvalidArgument` when `conditions`, `values` or `satisfying` differ in length from
/// `signals`, or (without the `alloc` feature) when there are more than [`MAX_WAIT_EVENTS`]
/// signals.
pub fn wait_all<H: PlatformRef>(
    signals: &[&Signal<H>],
    conditions: &[SignalCondition],
    values: &[i64],
    timeout_ns: u64,
    state: WaitState,
    satisfying: &mut [i64],
) -> Result<bool> {
    let n = signals.len();
    if conditions.len() != n || values.len() != n || satisfying.len() != n {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [n, conditions.len(), values.len(), satisfying.len()].map(|n| n as u64),
            |&[signals, conditions, values, satisfying, ..], f| {
                write!(
                    f,
                    "wait_all: {signals} signals but {conditions} conditions, {values} values \
                     and {satisfying} satisfying values"
                )
            },
        ));
    }
    satisfying.fill(0);
    let Some(first) = signals.first() else {
        return Ok(true);
    };
    // The signals not yet satisfied, in index order.
    let mut pending = IndexList::new();
    for i in 0..n {
        if !push_index(&mut pending, i) {
            crate::bail!(
                Status::InvalidArgument,
                "wait_all: {n} signals, more than the {MAX_WAIT_EVENTS} a build without alloc waits on"
            );
        }
    }
    let clock = Clock::start(first.platform());
    let mut pending_conditions = pending
        .iter()
        .map(|&i| conditions[i])
        .collect::<ConditionList>();
    let mut pending_values = pending.iter().map(|&i| values[i]).collect::<ValueList>();
    while !pending.is_empty() {
        let remaining = if timeout_ns == u64::MAX {
            u64::MAX
        } else {
            timeout_ns.saturating_sub(clock.elapsed_ns())
        };
        let met = wait_any_members(
            pending.len(),
            |k| Member::of(signals[pending[k]]),
            &pending_conditions,
            &pending_values,
            remaining,
            state,
        );
        let Some((k, value)) = met else {
            return Ok(false);
        };
        satisfying[pending[k]] = value;
        pending.remove(k);
        pending_conditions.remove(k);
        pending_values.remove(k);
    }
    Ok(true)
}

/// Signal indices of one wait-all.
#[cfg(feature = "alloc")]
type IndexList = alloc::vec::Vec<usize>;
/// Signal indices of one wait-all.
#[cfg(not(feature = "alloc"))]
type IndexList = heapless::Vec<usize, MAX_WAIT_EVENTS>;
/// The conditions of the signals of an [`IndexList`].
#[cfg(feature = "alloc")]
type ConditionList = alloc::vec::Vec<SignalCondition>;
/// The conditions of the signals of an [`IndexList`].
#[cfg(not(feature = "alloc"))]
type ConditionList = heapless::Vec<SignalCondition, MAX_WAIT_EVENTS>;
/// The compare values of the signals of an [`IndexList`].
#[cfg(feature = "alloc")]
type ValueList = alloc::vec::Vec<i64>;
/// The compare values of the signals of an [`IndexList`].
#[cfg(not(feature = "alloc"))]
type ValueList = heapless::Vec<i64, MAX_WAIT_EVENTS>;

/// Appends `i`; `false` when the list is full (without `alloc` only).
fn push_index(list: &mut IndexList, i: usize) -> bool {
    #[cfg(feature = "alloc")]
    {
        list.push(i);
        true
    }
    #[cfg(not(feature = "alloc"))]
    {
        list.push(i).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LoadOrder, MemoryOrder, SignalPool, StoreOrder};
    use super::*;
    use crate::addr::NodeId;
    use crate::platform::fake::{FakePlatform, FaultInjector, FaultMethod};
    use std::string::ToString;
    use std::vec::Vec;

    #[test]
    fn wait_all_reports_every_satisfying_value_or_a_timeout() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create(0).unwrap();
        let b = pool.create_interrupt(5).unwrap();
        let c = pool.create_interrupt(9).unwrap();
        let conds = [
            SignalCondition::Eq,
            SignalCondition::Gte,
            SignalCondition::Lt,
        ];
        let mut sat = [7; 3];
        let r = wait_all(
            &[&a, &b, &c],
            &conds,
            &[0, 5, 10],
            0,
            WaitState::Active,
            &mut sat,
        );
        assert_eq!((r.unwrap(), sat), (true, [0, 5, 9]));
        // c unsatisfied: a timeout, with the values of the others and 0 for c.
        let mut sat = [7; 3];
        let r = wait_all(
            &[&a, &b, &c],
            &conds,
            &[0, 5, 9],
            300_000,
            WaitState::Blocked,
            &mut sat,
        );
        assert_eq!((r.unwrap(), sat), (false, [0, 5, 0]));
        // Nothing to wait on: satisfied at once.
        assert_eq!(
            wait_all(&[&a][..0], &[], &[], 0, WaitState::Active, &mut []),
            Ok(true)
        );
        // Lengths that differ.
        let e = wait_all(&[&a], &conds, &[0], 0, WaitState::Active, &mut [0]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = wait_all(&[&a], &conds[..1], &[0], 0, WaitState::Active, &mut []).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
    }

    #[test]
    fn wait_all_keeps_a_signal_satisfied_once_and_waits_for_the_rest() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create_interrupt(0).unwrap();
        let b = pool.create_interrupt(2).unwrap();
        let c = pool.create_interrupt(1).unwrap();
        let conds = [SignalCondition::Eq; 3];
        let mut sat = [7; 3];
        std::thread::scope(|sc| {
            sc.spawn(|| {
                // a leaves its condition once the waiter has seen it hold: the waiter blocks on
                // an event only after the round in which a was met (a sleep instead would race
                // a slow waiter, as under miri, and leave it waiting forever).
                while plat.wait_event_count() == 0 {
                    std::thread::yield_now();
                }
                a.store(4, StoreOrder::Release);
                c.subtract(1, MemoryOrder::Release);
                std::thread::sleep(std::time::Duration::from_millis(2));
                b.subtract(2, MemoryOrder::Release);
            });
            let r = wait_all(
                &[&a, &b, &c],
                &conds,
                &[0, 0, 0],
                u64::MAX,
                WaitState::Blocked,
                &mut sat,
            );
            assert_eq!(r, Ok(true));
        });
        assert_eq!(sat, [0, 0, 0]);
        assert_eq!(a.load(LoadOrder::Acquire), 4);
    }

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

    type Inj = FaultInjector<FakePlatform>;

    /// A wait long enough to get past the spin and block several times: miri runs the spin
    /// loop ~10^3 times slower in real time.
    const BLOCKING_NS: u64 = if cfg!(miri) {
        2_000_000_000
    } else {
        30_000_000
    };

    /// How long a helper thread sleeps before it changes a signal (past the spin, also
    /// under miri).
    const CHANGE_AFTER: std::time::Duration =
        std::time::Duration::from_millis(if cfg!(miri) { 1000 } else { 5 });

    /// Three interrupt signals of one platform: every block is one wait on all three events
    /// (rotated each time, so a platform that waits on the first alone gives each its turn)
    /// for all the time that remains, not a slice; afterwards the waiter counts are
    /// unregistered, so a host store raises no event.
    #[test]
    fn interrupt_signals_of_one_platform_block_together_for_the_time_left() {
        let plat: Inj = FaultInjector::new(FakePlatform::new());
        let pool = SignalPool::new(&plat, NodeId(0));
        let s: Vec<_> = (0..3).map(|_| pool.create_interrupt(1).unwrap()).collect();
        let refs: Vec<_> = s.iter().collect();
        let ev: Vec<EventId> = s.iter().map(|x| x.event().unwrap()).collect();
        let timeout = BLOCKING_NS;
        let r = wait_any(
            &refs,
            &[SignalCondition::Eq; 3],
            &[0; 3],
            timeout,
            WaitState::Blocked,
        );
        assert_eq!(r.unwrap(), None);
        let waits = plat.event_waits();
        assert!(waits.len() >= 2, "{waits:?}");
        assert!(waits.iter().all(|w| w.any), "{waits:?}");
        assert_eq!(waits[0].events, ev);
        assert_eq!(waits[1].events, [ev[1], ev[2], ev[0]]);
        // The first block asks for what is left after the spin: more than one slice.
        let spin = plat.wait_spin_ns();
        assert!(
            waits[0].timeout_ns > MULTI_EVENT_SLICE_NS && waits[0].timeout_ns <= timeout - spin,
            "{waits:?}"
        );
        let raised = plat.inner().signal_event_count();
        s[1].store(7, StoreOrder::Release);
        assert_eq!(
            plat.inner().signal_event_count(),
            raised,
            "no waiter left registered"
        );
    }

    /// A member without an event (polled) caps every block at one slice, so its change is
    /// seen within a slice; the block covers only the evented members.
    #[test]
    fn a_polled_member_caps_each_block_at_one_slice() {
        let plat: Inj = FaultInjector::new(FakePlatform::new());
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create_interrupt(1).unwrap();
        let polled = pool.create(1).unwrap();
        assert_eq!(polled.event(), None);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(CHANGE_AFTER);
                polled.store(0, StoreOrder::Release);
            });
            let r = wait_any(
                &[&a, &polled],
                &[SignalCondition::Eq; 2],
                &[0, 0],
                3 * BLOCKING_NS + 2_000_000_000, // a wait that missed the change fails, not hangs
                WaitState::Blocked,
            );
            assert_eq!(r.unwrap(), Some((1, 0)));
        });
        let waits = plat.event_waits();
        assert!(!waits.is_empty());
        for w in &waits {
            assert_eq!(w.events, [a.event().unwrap()]);
            assert_eq!(w.timeout_ns, MULTI_EVENT_SLICE_NS, "{waits:?}");
        }
    }

    /// Two platforms hand out the same event ids: the signals of each are still waited on,
    /// one platform's event at a time, in slices, and a change on either is seen.
    #[test]
    fn signals_of_two_platforms_take_turns() {
        let (p1, p2): (Inj, Inj) = (
            FaultInjector::new(FakePlatform::new()),
            FaultInjector::new(FakePlatform::new()),
        );
        let (pool1, pool2) = (
            SignalPool::new(&p1, NodeId(0)),
            SignalPool::new(&p2, NodeId(0)),
        );
        let a = pool1.create_interrupt(1).unwrap();
        let b = pool2.create_interrupt(1).unwrap();
        assert_eq!(a.event(), b.event(), "the fakes number their events alike");
        std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(CHANGE_AFTER);
                b.store(0, StoreOrder::Release);
            });
            let r = wait_any(
                &[&a, &b],
                &[SignalCondition::Eq; 2],
                &[0, 0],
                3 * BLOCKING_NS + 2_000_000_000, // a wait that missed the change fails, not hangs
                WaitState::Blocked,
            );
            assert_eq!(r.unwrap(), Some((1, 0)));
        });
        for (p, s) in [(&p1, &a), (&p2, &b)] {
            let waits = p.event_waits();
            assert!(!waits.is_empty(), "each platform gets a turn");
            for w in &waits {
                assert!(!w.any);
                assert_eq!(w.events, [s.event().unwrap()]);
                assert!(w.timeout_ns <= MULTI_EVENT_SLICE_NS, "{waits:?}");
            }
        }
    }

    /// Several platforms and a polled member: the turns skip the member without an event and
    /// reach every other one, on its own platform.
    #[test]
    fn turns_skip_a_polled_member_and_reach_every_platform() {
        let (p1, p2): (Inj, Inj) = (
            FaultInjector::new(FakePlatform::new()),
            FaultInjector::new(FakePlatform::new()),
        );
        let (pool1, pool2) = (
            SignalPool::new(&p1, NodeId(0)),
            SignalPool::new(&p2, NodeId(0)),
        );
        let polled = pool1.create(1).unwrap();
        let a = pool1.create_interrupt(1).unwrap();
        let b = pool2.create_interrupt(1).unwrap();
        let r = wait_any(
            &[&polled, &a, &b],
            &[SignalCondition::Eq; 3],
            &[0; 3],
            BLOCKING_NS,
            WaitState::Blocked,
        );
        assert_eq!(r.unwrap(), None);
        for (p, s) in [(&p1, &a), (&p2, &b)] {
            let waits = p.event_waits();
            assert!(!waits.is_empty(), "every evented member gets turns");
            assert!(
                waits.iter().all(|w| w.events == [s.event().unwrap()]),
                "{waits:?}"
            );
        }
    }

    /// A wait the platform refuses (its event is gone) drops that event and polls the signal
    /// from then on: the change is still seen.
    #[test]
    fn a_refused_event_wait_falls_back_to_polling() {
        let plat: Inj = FaultInjector::new(FakePlatform::new());
        let pool = SignalPool::new(&plat, NodeId(0));
        let a = pool.create_interrupt(1).unwrap();
        let b = pool.create_interrupt(1).unwrap();
        plat.fail_next(FaultMethod::WaitEvent, Status::InvalidArgument);
        let r = wait_any(
            &[&a, &b],
            &[SignalCondition::Eq; 2],
            &[0, 0],
            BLOCKING_NS,
            WaitState::Blocked,
        );
        assert_eq!(r.unwrap(), None);
        let waits = plat.event_waits();
        // The refused block, then one zero-timeout probe per event (both alive), then blocks
        // in slices over both.
        assert!(
            waits[0].any && waits[0].timeout_ns > MULTI_EVENT_SLICE_NS,
            "{waits:?}"
        );
        let probes: Vec<_> = waits[1..3]
            .iter()
            .map(|w| (w.events[0], w.timeout_ns, w.any))
            .collect();
        assert_eq!(
            probes,
            [
                (a.event().unwrap(), 0, false),
                (b.event().unwrap(), 0, false)
            ]
        );
        assert!(waits.len() > 3, "{waits:?}");
        for w in &waits[3..] {
            assert!(w.any && w.timeout_ns <= MULTI_EVENT_SLICE_NS, "{waits:?}");
        }
    }

    #[test]
    fn a_group_shows_its_signal_handles() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let (a, b) = (pool.create(0).unwrap(), pool.create(0).unwrap());
        let members = [&a, &b];
        let g = SignalGroup::new(&members).unwrap();
        assert_eq!(
            std::format!("{g:?}"),
            std::format!("[{:?}, {:?}]", a.handle(), b.handle())
        );
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
        let short_values =
            wait_any(&[&a], &[SignalCondition::Eq], &[], 0, WaitState::Active).unwrap_err();
        assert_eq!(
            short_values.detail(),
            "wait_any: 1 signals but 1 conditions and 0 values"
        );
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
