//! Signals and signal groups (HSA Runtime 1.2 §2.4; `hsa_amd_signal_wait_any`).
//!
//! The value operations cannot report errors through their C signatures: on a handle that is
//! not a live signal they do nothing and return 0 (`HSA_RT_LOG=1` prints why). A store to a
//! queue's doorbell signal rings that queue's doorbell.
#![allow(unsafe_code)]

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use hsa_core::signal::{
    LoadOrder, MemoryOrder, SignalCondition, SignalGroup, StoreOrder, WaitState,
};
use hsa_core::{bail, Error, Status};

use super::{guard, guard_value, non_null, HsaStatus};
use crate::rcu::ReadSection;
use crate::state::{self, dead_signal, lock, read, untag, QueueImpl, Sig, State, GROUP_BASE};

/// Converts an HSA timeout hint (system timestamp ticks) to nanoseconds.
fn ticks_to_ns(st: &State, ticks: u64) -> u64 {
    if ticks == u64::MAX {
        return u64::MAX;
    }
    let hz = st.rt().system_info().timestamp_frequency_hz.max(1);
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(hz);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// `hsa_signal_create`: a signal with `initial_value`. It has a platform event (waits block)
/// unless every listed consumer is a GPU agent (which never waits through the host), as ROCR
/// decides.
///
/// # Safety
/// `consumers` is NULL or points to `num_consumers` handles; `signal` is NULL or writable.
pub unsafe extern "C" fn hsa_signal_create(
    initial_value: i64,
    num_consumers: u32,
    consumers: *const u64,
    signal: *mut u64,
) -> HsaStatus {
    guard("hsa_signal_create", || {
        let st = state::state()?;
        non_null(signal, "signal")?;
        let consumers: &[u64] = if num_consumers == 0 {
            &[]
        } else {
            non_null(consumers, "consumers")?;
            // SAFETY: non-NULL, `num_consumers` handles per the caller's contract.
            unsafe { core::slice::from_raw_parts(consumers, num_consumers as usize) }
        };
        let mut all_gpu = !consumers.is_empty();
        for c in consumers {
            all_gpu &= super::agent::agent_of(&st, *c)?.is_gpu();
        }
        let pool = st.signal_pool();
        let s: Sig = if all_gpu {
            pool.create(initial_value)?
        } else {
            pool.create_interrupt(initial_value)?
        };
        let handle = s.handle().0;
        st.signals.insert(handle, Arc::new(s));
        // SAFETY: non-NULL, the caller's hsa_signal_t slot.
        unsafe { signal.write(handle) };
        Ok(Status::Success)
    })
}

/// `hsa_signal_destroy`: destroys a signal (its event, then its slot; a wait still running on
/// it in another thread keeps the slot until it returns).
pub extern "C" fn hsa_signal_destroy(signal: u64) -> HsaStatus {
    guard("hsa_signal_destroy", || {
        let st = state::state()?;
        let Some(s) = st.signals.remove(signal) else {
            return Err(dead_signal(signal));
        };
        match Arc::try_unwrap(s) {
            Ok(s) => s.destroy()?,
            Err(_shared) => {} // freed by the last user
        }
        Ok(Status::Success)
    })
}

/// Runs a value operation on a live signal (found without a lock: [`state::with_state`]).
fn with_signal<T>(name: &str, signal: u64, fallback: T, f: impl FnOnce(&Sig) -> T) -> T {
    guard_value(name, fallback, || {
        state::with_state(|st, section| match st.signals.get(signal, section) {
            Some(s) => Ok(f(&s)),
            None => Err(dead_signal(signal)),
        })
    })
}

fn store(name: &str, signal: u64, value: i64, order: StoreOrder, silent: bool) {
    guard_value(name, (), || {
        state::with_state(|st, section| {
            match st.signals.get(signal, section) {
                Some(s) if silent => s.silent_store(value, order),
                Some(s) => s.store(value, order),
                None => ring_doorbell_in(st, section, signal, value, order)?,
            }
            Ok(())
        })
    })
}

/// A store to a handle that is no live signal of the table: a doorbell signal's, which rings
/// its queue (every dispatch comes here, so no error is made unless the handle is neither).
///
/// # Errors
/// `Status::InvalidSignal` ("signal handle ... is not a live signal") when `signal` is no
/// live signal and no live queue's doorbell signal (a destroyed queue's, too).
#[cfg(all(test, feature = "linux"))]
pub(crate) fn ring_doorbell(
    st: &State,
    signal: u64,
    value: i64,
    order: StoreOrder,
) -> Result<(), Error> {
    ring_doorbell_in(st, None, signal, value, order)
}

/// [`ring_doorbell`], with the queue found inside `section` when there is one.
fn ring_doorbell_in(
    st: &State,
    section: Option<&ReadSection>,
    signal: u64,
    value: i64,
    order: StoreOrder,
) -> Result<(), Error> {
    let Some(q) = st.queues.by_doorbell(signal, section) else {
        return match st.signals.get(signal, section) {
            Some(_) => Ok(()),
            None => Err(dead_signal(signal)),
        };
    };
    if let Some(hot) = state::hot_view(&q) {
        hot.ring_doorbell(value as u64, order);
    } else if let QueueImpl::Aql(lock, _) = &*q {
        if let Some(queue) = read(lock).as_ref() {
            queue.doorbell_signal().store(value as u64, order);
        }
    }
    Ok(())
}

macro_rules! load_fn {
    ($name:ident, $order:expr) => {
        #[doc = concat!("`", stringify!($name), "`: the signal's value (0 for an unknown handle).")]
        pub extern "C" fn $name(signal: u64) -> i64 {
            with_signal(stringify!($name), signal, 0, |s| s.load($order))
        }
        export!($name);
    };
}
load_fn!(hsa_signal_load_scacquire, LoadOrder::Acquire);
load_fn!(hsa_signal_load_relaxed, LoadOrder::Relaxed);

macro_rules! store_fn {
    ($name:ident, $order:expr, $silent:expr) => {
        #[doc = concat!("`", stringify!($name), "`: stores `value` (a doorbell signal rings its queue).")]
                pub extern "C" fn $name(signal: u64, value: i64) {
            store(stringify!($name), signal, value, $order, $silent)
        }
        export!($name);
    };
}
store_fn!(hsa_signal_store_relaxed, StoreOrder::Relaxed, false);
store_fn!(hsa_signal_store_screlease, StoreOrder::Release, false);
store_fn!(hsa_signal_silent_store_relaxed, StoreOrder::Relaxed, true);
store_fn!(hsa_signal_silent_store_screlease, StoreOrder::Release, true);

macro_rules! rmw_fns {
    ($op:ident, [$($name:ident = $order:expr),*]) => {$(
        #[doc = concat!("`", stringify!($name), "`: atomic ", stringify!($op), " of `value`.")]
                pub extern "C" fn $name(signal: u64, value: i64) {
            with_signal(stringify!($name), signal, (), |s| {
                s.$op(value, $order);
            })
        }
        export!($name);
    )*};
}
rmw_fns!(
    add,
    [
        hsa_signal_add_scacq_screl = MemoryOrder::AcqRel,
        hsa_signal_add_scacquire = MemoryOrder::Acquire,
        hsa_signal_add_relaxed = MemoryOrder::Relaxed,
        hsa_signal_add_screlease = MemoryOrder::Release
    ]
);
rmw_fns!(
    subtract,
    [
        hsa_signal_subtract_scacq_screl = MemoryOrder::AcqRel,
        hsa_signal_subtract_scacquire = MemoryOrder::Acquire,
        hsa_signal_subtract_relaxed = MemoryOrder::Relaxed,
        hsa_signal_subtract_screlease = MemoryOrder::Release
    ]
);
rmw_fns!(
    and,
    [
        hsa_signal_and_scacq_screl = MemoryOrder::AcqRel,
        hsa_signal_and_scacquire = MemoryOrder::Acquire,
        hsa_signal_and_relaxed = MemoryOrder::Relaxed,
        hsa_signal_and_screlease = MemoryOrder::Release
    ]
);
rmw_fns!(
    or,
    [
        hsa_signal_or_scacq_screl = MemoryOrder::AcqRel,
        hsa_signal_or_scacquire = MemoryOrder::Acquire,
        hsa_signal_or_relaxed = MemoryOrder::Relaxed,
        hsa_signal_or_screlease = MemoryOrder::Release
    ]
);
rmw_fns!(
    xor,
    [
        hsa_signal_xor_scacq_screl = MemoryOrder::AcqRel,
        hsa_signal_xor_scacquire = MemoryOrder::Acquire,
        hsa_signal_xor_relaxed = MemoryOrder::Relaxed,
        hsa_signal_xor_screlease = MemoryOrder::Release
    ]
);

macro_rules! exchange_fns {
    ($($name:ident = $order:expr),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: atomic exchange; returns the previous value.")]
                pub extern "C" fn $name(signal: u64, value: i64) -> i64 {
            with_signal(stringify!($name), signal, 0, |s| s.exchange(value, $order))
        }
        export!($name);
    )*};
}
exchange_fns!(
    hsa_signal_exchange_scacq_screl = MemoryOrder::AcqRel,
    hsa_signal_exchange_scacquire = MemoryOrder::Acquire,
    hsa_signal_exchange_relaxed = MemoryOrder::Relaxed,
    hsa_signal_exchange_screlease = MemoryOrder::Release
);

macro_rules! cas_fns {
    ($($name:ident = $order:expr),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: compare-and-swap; returns the value observed.")]
                pub extern "C" fn $name(signal: u64, expected: i64, value: i64) -> i64 {
            with_signal(stringify!($name), signal, 0, |s| {
                s.compare_exchange(expected, value, $order)
            })
        }
        export!($name);
    )*};
}
cas_fns!(
    hsa_signal_cas_scacq_screl = MemoryOrder::AcqRel,
    hsa_signal_cas_scacquire = MemoryOrder::Acquire,
    hsa_signal_cas_relaxed = MemoryOrder::Relaxed,
    hsa_signal_cas_screlease = MemoryOrder::Release
);

fn wait(
    name: &str,
    signal: u64,
    condition: u32,
    compare_value: i64,
    timeout_hint: u64,
    wait_state_hint: u32,
    order: LoadOrder,
) -> i64 {
    guard_value(name, 0, || {
        // A condition that already holds is answered inside the read section; a wait that
        // may block takes its own references (a grace period must not wait for it).
        let holds = state::with_state(|st, section| {
            let s = st
                .signals
                .get(signal, section)
                .ok_or_else(|| dead_signal(signal))?;
            let condition = SignalCondition::from_raw(condition)?;
            WaitState::from_raw(wait_state_hint)?;
            let value = s.load(order);
            Ok(condition.holds(value, compare_value).then_some(value))
        })?;
        if let Some(value) = holds {
            return Ok(value);
        }
        let st = state::state()?;
        let s = st.signal(signal)?;
        let condition = SignalCondition::from_raw(condition)?;
        let wait_state = WaitState::from_raw(wait_state_hint)?;
        Ok(s.wait(
            condition,
            compare_value,
            ticks_to_ns(&st, timeout_hint),
            wait_state,
            order,
        ))
    })
}

/// `hsa_signal_wait_scacquire`: waits until the value satisfies `condition` against
/// `compare_value` or about `timeout_hint` ticks pass; returns the value last observed.
pub extern "C" fn hsa_signal_wait_scacquire(
    signal: u64,
    condition: u32,
    compare_value: i64,
    timeout_hint: u64,
    wait_state_hint: u32,
) -> i64 {
    wait(
        "hsa_signal_wait_scacquire",
        signal,
        condition,
        compare_value,
        timeout_hint,
        wait_state_hint,
        LoadOrder::Acquire,
    )
}

/// `hsa_signal_wait_relaxed`: as [`hsa_signal_wait_scacquire`] with relaxed loads.
pub extern "C" fn hsa_signal_wait_relaxed(
    signal: u64,
    condition: u32,
    compare_value: i64,
    timeout_hint: u64,
    wait_state_hint: u32,
) -> i64 {
    wait(
        "hsa_signal_wait_relaxed",
        signal,
        condition,
        compare_value,
        timeout_hint,
        wait_state_hint,
        LoadOrder::Relaxed,
    )
}

fn conditions_and_values(
    n: usize,
    conditions: *const u32,
    values: *const i64,
) -> Result<(Vec<SignalCondition>, Vec<i64>), Error> {
    non_null(conditions, "conditions")?;
    non_null(values, "compare values")?;
    // SAFETY: both non-NULL and hold `n` elements per the caller's contract.
    let (c, v) = unsafe {
        (
            core::slice::from_raw_parts(conditions, n),
            core::slice::from_raw_parts(values, n),
        )
    };
    let c = c
        .iter()
        .map(|c| SignalCondition::from_raw(*c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((c, v.to_vec()))
}

/// `hsa_amd_signal_wait_any`: waits until any `signals[i]` satisfies `conds[i]` against
/// `values[i]`; returns that index (and its value in `*satisfying_value`), or `UINT32_MAX` on
/// timeout or invalid arguments.
///
/// # Safety
/// `signals`, `conds`, `values` point to `signal_count` elements; `satisfying_value` is NULL
/// or writable.
pub unsafe extern "C" fn hsa_amd_signal_wait_any(
    signal_count: u32,
    signals: *const u64,
    conds: *const u32,
    values: *const i64,
    timeout_hint: u64,
    wait_hint: u32,
    satisfying_value: *mut i64,
) -> u32 {
    guard_value("hsa_amd_signal_wait_any", u32::MAX, || {
        let st = state::state()?;
        non_null(signals, "signals")?;
        let n = signal_count as usize;
        // SAFETY: non-NULL, `signal_count` handles per the caller's contract.
        let handles = unsafe { core::slice::from_raw_parts(signals, n) };
        let owned = handles
            .iter()
            .map(|h| st.signal(*h))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&Sig> = owned.iter().map(|s| &**s).collect();
        let (c, v) = conditions_and_values(n, conds, values)?;
        let state = WaitState::from_raw(wait_hint)?;
        let r = hsa_core::signal::wait_any(&refs, &c, &v, ticks_to_ns(&st, timeout_hint), state)?;
        Ok(match r {
            Some((i, value)) => {
                if !satisfying_value.is_null() {
                    // SAFETY: non-NULL, writable per the caller's contract.
                    unsafe { satisfying_value.write(value) };
                }
                i as u32
            }
            None => u32::MAX,
        })
    })
}

/// `hsa_amd_signal_wait_all` (ROCR 7): waits until every `signals[i]` has satisfied
/// `conds[i]` against `values[i]` (relaxed semantics; a signal that satisfied its condition
/// once stays satisfied, `hsa_core::signal::wait_all`); returns 0 then, `UINT32_MAX` on
/// timeout or invalid arguments. A NULL (0) or dead signal counts as satisfied with value 0,
/// and its condition is not read, as ROCR 7 skips it. `satisfying_values`, when not NULL,
/// receives each signal's satisfying value (0 for NULL and dead signals, and for signals still
/// unsatisfied at a timeout), as ROCR 7 writes them.
///
/// # Safety
/// `signals`, `conds`, `values` and (when not NULL) `satisfying_values` point to
/// `signal_count` elements.
pub unsafe extern "C" fn hsa_amd_signal_wait_all(
    signal_count: u32,
    signals: *const u64,
    conds: *const u32,
    values: *const i64,
    timeout_hint: u64,
    wait_hint: u32,
    satisfying_values: *mut i64,
) -> u32 {
    guard_value("hsa_amd_signal_wait_all", u32::MAX, || {
        let st = state::state()?;
        let n = signal_count as usize;
        let mut satisfying = vec![0i64; n];
        if n > 0 {
            non_null(signals, "signals")?;
            non_null(conds, "conditions")?;
            non_null(values, "compare values")?;
            // SAFETY: non-NULL, `signal_count` elements each per the caller's contract.
            let (handles, raw_conds, raw_values) = unsafe {
                (
                    core::slice::from_raw_parts(signals, n),
                    core::slice::from_raw_parts(conds, n),
                    core::slice::from_raw_parts(values, n),
                )
            };
            // The live signals, with their index, condition and compare value.
            let mut index = Vec::new();
            let mut owned = Vec::new();
            let mut c = Vec::new();
            let mut v = Vec::new();
            for (i, h) in handles.iter().enumerate() {
                let Some(sig) = (*h != 0).then(|| st.find_signal(*h)).flatten() else {
                    continue;
                };
                index.push(i);
                owned.push(sig);
                c.push(SignalCondition::from_raw(raw_conds[i])?);
                v.push(raw_values[i]);
            }
            let refs: Vec<&Sig> = owned.iter().map(|s| &**s).collect();
            let state = WaitState::from_raw(wait_hint)?;
            let mut met = vec![0i64; refs.len()];
            let all = hsa_core::signal::wait_all(
                &refs,
                &c,
                &v,
                ticks_to_ns(&st, timeout_hint),
                state,
                &mut met,
            )?;
            for (k, i) in index.into_iter().enumerate() {
                satisfying[i] = met[k];
            }
            if !all {
                write_values(satisfying_values, &satisfying);
                return Ok(u32::MAX);
            }
        }
        write_values(satisfying_values, &satisfying);
        Ok(0)
    })
}

/// Copies `values` to `out` when `out` is not NULL (`out` holds `values.len()` elements per
/// the caller's contract).
fn write_values(out: *mut i64, values: &[i64]) {
    if !out.is_null() {
        // SAFETY: non-NULL, writable for `values.len()` elements per the caller's contract;
        // it cannot overlap the Vec behind `values`.
        unsafe { core::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    }
}

/// `hsa_signal_group_create`: a group of distinct signals (`num_consumers`/`consumers` are
/// checked to be agents and otherwise not used: every wait runs on the host).
///
/// # Safety
/// `signals` points to `num_signals` handles; `consumers` is NULL or points to
/// `num_consumers` handles; `signal_group` is NULL or writable.
pub unsafe extern "C" fn hsa_signal_group_create(
    num_signals: u32,
    signals: *const u64,
    num_consumers: u32,
    consumers: *const u64,
    signal_group: *mut u64,
) -> HsaStatus {
    guard("hsa_signal_group_create", || {
        let st = state::state()?;
        non_null(signals, "signals")?;
        non_null(signal_group, "signal_group")?;
        if num_consumers > 0 {
            non_null(consumers, "consumers")?;
            // SAFETY: non-NULL, `num_consumers` handles per the caller's contract.
            for c in unsafe { core::slice::from_raw_parts(consumers, num_consumers as usize) } {
                super::agent::agent_of(&st, *c)?;
            }
        }
        // SAFETY: non-NULL, `num_signals` handles per the caller's contract.
        let handles = unsafe { core::slice::from_raw_parts(signals, num_signals as usize) };
        let owned = handles
            .iter()
            .map(|h| st.signal(*h))
            .collect::<Result<Vec<_>, _>>()?;
        {
            let refs: Vec<&Sig> = owned.iter().map(|s| &**s).collect();
            SignalGroup::new(&refs)?; // empty or duplicate members
        }
        let id = st.next_id();
        lock(&st.groups).insert(id, owned);
        // SAFETY: non-NULL, the caller's hsa_signal_group_t slot.
        unsafe { signal_group.write(GROUP_BASE | id) };
        Ok(Status::Success)
    })
}

/// `hsa_signal_group_destroy`: destroys the group (not its signals).
pub extern "C" fn hsa_signal_group_destroy(signal_group: u64) -> HsaStatus {
    guard("hsa_signal_group_destroy", || {
        let st = state::state()?;
        let removed = untag(signal_group, GROUP_BASE).and_then(|id| lock(&st.groups).remove(&id));
        if removed.is_none() {
            bail!(
                Status::InvalidSignalGroup,
                "signal group {signal_group:#x} is not a live group"
            );
        }
        Ok(Status::Success)
    })
}

#[allow(clippy::too_many_arguments)]
fn group_wait(
    name: &str,
    signal_group: u64,
    conditions: *const u32,
    compare_values: *const i64,
    wait_state_hint: u32,
    signal: *mut u64,
    value: *mut i64,
) -> HsaStatus {
    guard(name, || {
        let st = state::state()?;
        let members = untag(signal_group, GROUP_BASE)
            .and_then(|id| lock(&st.groups).get(&id).cloned())
            .ok_or_else(|| {
                hsa_core::error!(
                    Status::InvalidSignalGroup,
                    "signal group {signal_group:#x} is not a live group"
                )
            })?;
        non_null(signal, "signal")?;
        non_null(value, "value")?;
        let (c, v) = conditions_and_values(members.len(), conditions, compare_values)?;
        let state = WaitState::from_raw(wait_state_hint)?;
        let refs: Vec<&Sig> = members.iter().map(|s| &**s).collect();
        let group = SignalGroup::new(&refs)?;
        match group.wait_any(&c, &v, u64::MAX, state)? {
            Some((i, observed)) => {
                // SAFETY: both non-NULL, writable per the caller's contract.
                unsafe {
                    signal.write(members[i].handle().0);
                    value.write(observed);
                }
                Ok(Status::Success)
            }
            None => bail!(Status::Error, "signal group wait ended without a signal"),
        }
    })
}

/// `hsa_signal_group_wait_any_scacquire`: waits until a member satisfies its condition;
/// writes that member and its value.
///
/// # Safety
/// `conditions`/`compare_values` point to one element per member; `signal`/`value` are NULL
/// or writable.
pub unsafe extern "C" fn hsa_signal_group_wait_any_scacquire(
    signal_group: u64,
    conditions: *const u32,
    compare_values: *const i64,
    wait_state_hint: u32,
    signal: *mut u64,
    value: *mut i64,
) -> HsaStatus {
    group_wait(
        "hsa_signal_group_wait_any_scacquire",
        signal_group,
        conditions,
        compare_values,
        wait_state_hint,
        signal,
        value,
    )
}

/// `hsa_signal_group_wait_any_relaxed`: as the `scacquire` form (loads are acquire, which is
/// stronger than relaxed).
///
/// # Safety
/// As [`hsa_signal_group_wait_any_scacquire`].
pub unsafe extern "C" fn hsa_signal_group_wait_any_relaxed(
    signal_group: u64,
    conditions: *const u32,
    compare_values: *const i64,
    wait_state_hint: u32,
    signal: *mut u64,
    value: *mut i64,
) -> HsaStatus {
    group_wait(
        "hsa_signal_group_wait_any_relaxed",
        signal_group,
        conditions,
        compare_values,
        wait_state_hint,
        signal,
        value,
    )
}

export!(
    hsa_signal_create,
    hsa_signal_destroy,
    hsa_signal_wait_scacquire,
    hsa_signal_wait_relaxed,
    hsa_amd_signal_wait_any,
    hsa_amd_signal_wait_all,
    hsa_signal_group_create,
    hsa_signal_group_destroy,
    hsa_signal_group_wait_any_scacquire,
    hsa_signal_group_wait_any_relaxed,
);

// The names HSA 1.1 renamed, which ROCR 5.2 still exports (see `deprecated`).
export_alias!(
    hsa_signal_load_acquire => hsa_signal_load_scacquire,
    hsa_signal_store_release => hsa_signal_store_screlease,
    hsa_signal_wait_acquire => hsa_signal_wait_scacquire,
    hsa_signal_exchange_acq_rel => hsa_signal_exchange_scacq_screl,
    hsa_signal_exchange_acquire => hsa_signal_exchange_scacquire,
    hsa_signal_exchange_release => hsa_signal_exchange_screlease,
    hsa_signal_cas_acq_rel => hsa_signal_cas_scacq_screl,
    hsa_signal_cas_acquire => hsa_signal_cas_scacquire,
    hsa_signal_cas_release => hsa_signal_cas_screlease,
    hsa_signal_add_acq_rel => hsa_signal_add_scacq_screl,
    hsa_signal_add_acquire => hsa_signal_add_scacquire,
    hsa_signal_add_release => hsa_signal_add_screlease,
    hsa_signal_subtract_acq_rel => hsa_signal_subtract_scacq_screl,
    hsa_signal_subtract_acquire => hsa_signal_subtract_scacquire,
    hsa_signal_subtract_release => hsa_signal_subtract_screlease,
    hsa_signal_and_acq_rel => hsa_signal_and_scacq_screl,
    hsa_signal_and_acquire => hsa_signal_and_scacquire,
    hsa_signal_and_release => hsa_signal_and_screlease,
    hsa_signal_or_acq_rel => hsa_signal_or_scacq_screl,
    hsa_signal_or_acquire => hsa_signal_or_scacquire,
    hsa_signal_or_release => hsa_signal_or_screlease,
    hsa_signal_xor_acq_rel => hsa_signal_xor_scacq_screl,
    hsa_signal_xor_acquire => hsa_signal_xor_scacquire,
    hsa_signal_xor_release => hsa_signal_xor_screlease,
);
