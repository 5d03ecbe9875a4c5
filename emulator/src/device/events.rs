//! KFD events on the emulated device: the event table, the signal event page and its mailbox
//! slots (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_events.c`).
//!
//! - Signal events (`KFD_IOC_EVENT_SIGNAL`, and `DEBUG_EVENT` as the kernel treats it) get a
//!   slot in the event page; their id is the slot index. A slot holds
//!   [`UNSIGNALED_EVENT_SLOT`] (all ones) until someone writes the event id into it (a
//!   completion signal's mailbox); the kernel then takes the interrupt, sees the slot changed,
//!   sets the event and writes `UNSIGNALED_EVENT_SLOT` back. Here the processor's
//!   `signal_event` and every `WAIT_EVENTS` check do the same.
//! - Other event types get ids from `0x8000_0000` (`KFD_FIRST_NONSIGNAL_EVENT_ID`) and no slot.
//!   The device sets every memory (`KFD_IOC_EVENT_MEMORY`) or hardware-exception
//!   (`KFD_IOC_EVENT_HW_EXCEPTION`) event of the process at once, with the exception data
//!   `WAIT_EVENTS` copies back ([`Events::signal_type`]; `kfd_signal_vm_fault_event`,
//!   `kfd_signal_hw_exception_event`).
//! - A thread blocked in `WAIT_EVENTS` is a [`Waiter`] registered with the ids it waits on;
//!   setting or destroying an event wakes only the waiters on that event (amdkfd's
//!   per-event wait queue, `ev->wq`), not every thread blocked in the device: a completion
//!   that nobody waits on for (an active wait) wakes no one, and a process's other waiters
//!   (ROCR's async-events thread, hsa-rt's monitor) sleep through it.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use zerocopy::FromBytes;

use hsa_linux::kfd::abi::*;

use super::mem::{Backing, Region};
use super::memory::Kind;
use super::{lock, Device};

/// The value of a mailbox slot nobody has written (`UNSIGNALED_EVENT_SLOT` in `kfd_events.c`).
pub const UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;

/// Size of the event page, bytes: one 64-bit slot per possible signal event (the backend's
/// constant: one definition of the KFD fact).
pub use hsa_linux::device::EVENT_PAGE_BYTES;

/// First id of events that are not signal events (`KFD_FIRST_NONSIGNAL_EVENT_ID`).
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x8000_0000;

/// The signal event page.
#[derive(Debug)]
pub(crate) struct EventPage {
    /// The device's view of the slots.
    pub(crate) region: Region,
    /// The memory, when the device made it (not a user buffer object).
    pub(crate) own: Option<Backing>,
    /// Addresses at which the user sees the page (mmaps of it, or the BO's VA).
    pub(crate) user_bases: Vec<u64>,
    /// The KFD handle of the user buffer object holding the page (pinned while it is the
    /// page), when it is one.
    pub(crate) user_handle: Option<u64>,
}

impl EventPage {
    /// The device view's offset of mailbox address `mailbox`, if it is a slot of this page.
    pub(crate) fn slot_offset(&self, mailbox: u64) -> Option<u64> {
        if mailbox % 8 != 0 {
            return None;
        }
        std::iter::once(self.region.addr())
            .chain(self.user_bases.iter().copied())
            .find_map(|base| {
                let off = mailbox.checked_sub(base)?;
                (off < EVENT_PAGE_BYTES).then_some(off)
            })
    }
}

/// One event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub(crate) event_type: u32,
    pub(crate) auto_reset: bool,
    pub(crate) signaled: bool,
    /// Slot index in the event page (signal events).
    pub(crate) slot: Option<u32>,
    /// The exception data of the last time it was set (`kfd_event_data`'s union: memory
    /// exception data of a memory event, hardware exception data of a hardware-exception
    /// event; zeros until then).
    pub(crate) data: [u8; 32],
    /// How many times it was set, from 1 (`kfd_event.event_age`, interface 1.14): a
    /// `WAIT_EVENTS` entry of a signal event carrying another non-zero `last_event_age` is
    /// satisfied at once, and a completed wait writes the age back. Never 0 (0 in a
    /// `last_event_age` means "no age": the wait of interfaces before 1.14).
    pub(crate) age: u64,
}

/// An event's age after one more set, as `set_event` counts it: never wrapping back to 0
/// (no age) or 1 (a new event's age), but to 2.
fn next_age(age: u64) -> u64 {
    match age.wrapping_add(1) {
        0 => 2,
        a => a,
    }
}

/// A thread blocked in `WAIT_EVENTS` (amdkfd's `kfd_event_waiter`s of one wait, one per
/// event, here one entry for all of them).
#[derive(Debug)]
pub(crate) struct Waiter {
    /// The event ids it waits on.
    ids: Vec<u32>,
    /// Where it sleeps, with the lock of the event table ([`Events`]'s mutex) as the mutex.
    cv: Arc<Condvar>,
    /// Whether one of its events was set or destroyed since it last looked
    /// ([`Events::take_woken`]).
    woken: bool,
}

/// The key of a registered [`Waiter`] ([`Events::add_waiter`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WaiterKey(u64);

/// The event table.
#[derive(Debug, Default)]
pub(crate) struct Events {
    pub(crate) page: Option<EventPage>,
    pub(crate) table: BTreeMap<u32, Event>,
    next_other: u32,
    /// The threads blocked in `WAIT_EVENTS`, by key.
    waiters: BTreeMap<WaiterKey, Waiter>,
    next_waiter: u64,
}

impl Events {
    /// The lowest free signal slot.
    pub(crate) fn free_slot(&self) -> Option<u32> {
        (0..KFD_SIGNAL_EVENT_LIMIT).find(|s| !self.table.contains_key(s))
    }

    /// A fresh non-signal event id.
    pub(crate) fn next_other_id(&mut self) -> Result<u32, Errno> {
        for _ in 0..=u32::MAX / 2 {
            let id = FIRST_NONSIGNAL_EVENT_ID | (self.next_other & 0x7fff_ffff);
            self.next_other = self.next_other.wrapping_add(1);
            if !self.table.contains_key(&id) {
                return Ok(id);
            }
        }
        Err(Errno::NOSPC)
    }

    fn slot_word(&self, slot: u32) -> Option<&std::sync::atomic::AtomicU64> {
        self.page.as_ref()?.region.atomic_u64(u64::from(slot) * 8)
    }

    /// Sets a slot back to [`UNSIGNALED_EVENT_SLOT`].
    pub(crate) fn clear_slot(&self, slot: u32) {
        if let Some(w) = self.slot_word(slot) {
            w.store(UNSIGNALED_EVENT_SLOT, std::sync::atomic::Ordering::Release);
        }
    }

    /// What the kernel's interrupt handler does for `id`: a signal event whose slot was
    /// written becomes signaled (its waiters woken) and the slot unsignaled. Returns whether
    /// anything changed.
    pub(crate) fn poll_slot(&mut self, id: u32) -> bool {
        let Some(ev) = self.table.get(&id).copied() else {
            return false;
        };
        let Some(slot) = ev.slot else {
            return false;
        };
        let written = self
            .slot_word(slot)
            .map(|w| w.load(std::sync::atomic::Ordering::Acquire) != UNSIGNALED_EVENT_SLOT)
            .unwrap_or(false);
        if written {
            self.clear_slot(slot);
            self.set(id);
        }
        written
    }

    /// What amdkfd does with the CP's end-of-pipe interrupt carrying `context_id`
    /// (`kfd_signal_event_interrupt(pasid, context_id, 32)`): when `context_id` names a signal
    /// event whose slot was written, that event is set; otherwise the id is taken as invalid
    /// and every signal event whose slot was written is set. Each slot set goes back to
    /// [`UNSIGNALED_EVENT_SLOT`], and the waiters of each event set are woken. Returns whether
    /// any event was set.
    pub(crate) fn end_of_pipe_interrupt(&mut self, context_id: u32) -> bool {
        if self.poll_slot(context_id) {
            return true;
        }
        let ids: Vec<u32> = self
            .table
            .iter()
            .filter(|(_, ev)| ev.slot.is_some())
            .map(|(&id, _)| id)
            .collect();
        let mut any = false;
        for id in ids {
            any |= self.poll_slot(id);
        }
        any
    }

    /// Sets every event of type `event_type` with exception data `data`, as amdkfd does for a
    /// memory fault or a hardware exception, and wakes their waiters; returns how many there
    /// were.
    pub(crate) fn signal_type(&mut self, event_type: u32, data: [u8; 32]) -> usize {
        let mut set = Vec::new();
        for (&id, ev) in self.table.iter_mut() {
            if ev.event_type == event_type {
                ev.signaled = true;
                ev.age = next_age(ev.age);
                ev.data = data;
                set.push(id);
            }
        }
        for &id in &set {
            self.wake(id);
        }
        set.len()
    }

    /// Sets event `id` and wakes its waiters (no-op for an unknown id).
    pub(crate) fn set(&mut self, id: u32) {
        if let Some(ev) = self.table.get_mut(&id) {
            ev.signaled = true;
            ev.age = next_age(ev.age);
            self.wake(id);
        }
    }

    /// Removes event `id` (its slot back to [`UNSIGNALED_EVENT_SLOT`]) and wakes its waiters,
    /// whose wait then fails (`kfd_wait_on_events`: an event destroyed during the wait);
    /// `None` for an unknown id.
    pub(crate) fn destroy(&mut self, id: u32) -> Option<Event> {
        let e = self.table.remove(&id)?;
        if let Some(s) = e.slot {
            self.clear_slot(s);
        }
        self.wake(id);
        Some(e)
    }

    /// Registers a thread about to block in `WAIT_EVENTS` on `ids`: its key, and the
    /// condition variable it sleeps on (with this table's mutex). It must call
    /// [`Events::remove_waiter`] before it returns.
    pub(crate) fn add_waiter(&mut self, ids: &[u32]) -> (WaiterKey, Arc<Condvar>) {
        let key = WaiterKey(self.next_waiter);
        self.next_waiter = self.next_waiter.wrapping_add(1);
        let cv = Arc::new(Condvar::new());
        self.waiters.insert(
            key,
            Waiter {
                ids: ids.to_vec(),
                cv: cv.clone(),
                woken: false,
            },
        );
        (key, cv)
    }

    /// Unregisters the waiter `key`.
    pub(crate) fn remove_waiter(&mut self, key: WaiterKey) {
        self.waiters.remove(&key);
    }

    /// Whether one of waiter `key`'s events was set or destroyed since the last call (and
    /// clears that).
    pub(crate) fn take_woken(&mut self, key: WaiterKey) -> bool {
        self.waiters
            .get_mut(&key)
            .is_some_and(|w| std::mem::take(&mut w.woken))
    }

    /// Wakes the waiters of event `id`, and only those (amdkfd: `wake_up_all(&ev->wq)`).
    fn wake(&mut self, id: u32) {
        for w in self.waiters.values_mut() {
            if w.ids.contains(&id) {
                w.woken = true;
                w.cv.notify_one();
            }
        }
    }
}

// ---- The ioctls (kfd_chardev.c's handlers, kfd_events.c's `kfd_event_create`,
// `kfd_wait_on_events`, ...) ----

/// CREATE_EVENT as `kfd_ioctl_create_event` does it:
/// - a non-zero `event_page_offset` names the user's buffer object that becomes the
///   process's event page, whatever the event's type (ROCR's first event is a memory
///   event); it must be a GTT BO of at least [`EVENT_PAGE_BYTES`] (amdkfd maps it into the
///   kernel), and a process has one event page for its whole life: naming another once one
///   is set is `EINVAL` ("Event page is already set");
/// - the first signal event of a process that named none gets a page of the device's own,
///   which the user maps from `/dev/kfd`;
/// - a signal event always returns `event_page_offset = KFD_MMAP_TYPE_EVENTS`
///   (`kfd_event_create`), its slot index and trigger data.
pub(crate) fn create_event(device: &Arc<Device>, a: &mut CreateEventArgs) -> Result<(), Errno> {
    let mut ev = lock(&device.events);
    if a.event_page_offset != 0 {
        // Lock order: allocations, then events.
        drop(ev);
        let mut allocs = device
            .allocs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        ev = lock(&device.events);
        if ev.page.is_some() {
            return Err(Errno::INVAL);
        }
        let alloc = allocs
            .by_handle_mut(a.event_page_offset)
            .ok_or(Errno::INVAL)?;
        // amdkfd maps the page into the kernel, which only a GTT buffer object allows
        // (amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel: EINVAL for USERPTR, and a VRAM BO
        // cannot be pinned in GTT).
        if alloc.size < EVENT_PAGE_BYTES || alloc.kind != Kind::Gtt {
            return Err(Errno::INVAL);
        }
        // Pinned for the process's life: FREE of it is EPERM (kfd_ioctl_free_memory_of_gpu).
        alloc.pins += 1;
        ev.page = Some(EventPage {
            region: alloc.region,
            own: None,
            user_bases: vec![alloc.va],
            user_handle: Some(alloc.handle),
        });
        for s in 0..KFD_SIGNAL_EVENT_LIMIT {
            ev.clear_slot(s);
        }
    }
    let is_signal =
        a.event_type == KFD_IOC_EVENT_SIGNAL || a.event_type == KFD_IOC_EVENT_DEBUG_EVENT;
    if !is_signal {
        let id = ev.next_other_id()?;
        ev.table.insert(
            id,
            Event {
                event_type: a.event_type,
                auto_reset: a.auto_reset != 0,
                signaled: false,
                slot: None,
                data: [0; 32],
                age: 1,
            },
        );
        a.event_id = id;
        a.event_trigger_data = id;
        return Ok(());
    }
    if ev.page.is_none() {
        let own = Backing::new("hsa-emulated-events", EVENT_PAGE_BYTES)?;
        ev.page = Some(EventPage {
            region: own.region(),
            own: Some(own),
            user_bases: Vec::new(),
            user_handle: None,
        });
        // Fill every slot with UNSIGNALED_EVENT_SLOT.
        for s in 0..KFD_SIGNAL_EVENT_LIMIT {
            ev.clear_slot(s);
        }
    }
    let slot = ev.free_slot().ok_or(Errno::NOSPC)?;
    ev.clear_slot(slot);
    ev.table.insert(
        slot,
        Event {
            event_type: a.event_type,
            auto_reset: a.auto_reset != 0,
            signaled: false,
            slot: Some(slot),
            data: [0; 32],
            age: 1,
        },
    );
    a.event_id = slot;
    a.event_slot_index = slot;
    a.event_trigger_data = slot;
    a.event_page_offset = KFD_MMAP_EVENTS_OFFSET;
    Ok(())
}

/// DESTROY_EVENT (`EINVAL` for an unknown id). The event page stays: amdkfd keeps it (and the
/// user's buffer object behind it) until the process closes `/dev/kfd`, so later events keep
/// their mailboxes.
pub(crate) fn destroy_event(device: &Arc<Device>, a: &mut DestroyEventArgs) -> Result<(), Errno> {
    lock(&device.events)
        .destroy(a.event_id)
        .map(|_| ())
        .ok_or(Errno::INVAL)
}

/// SET_EVENT: sets a signal event and wakes its waiters; `EINVAL` for an unknown id or an
/// event of another type (`kfd_set_event`).
pub(crate) fn set_event(device: &Arc<Device>, a: &mut SetEventArgs) -> Result<(), Errno> {
    let mut ev = lock(&device.events);
    match ev.table.get(&a.event_id) {
        Some(e) if e.event_type == KFD_IOC_EVENT_SIGNAL => {}
        _ => return Err(Errno::INVAL),
    }
    ev.set(a.event_id);
    Ok(())
}

/// RESET_EVENT: clears an event; `EINVAL` for an unknown id.
pub(crate) fn reset_event(device: &Arc<Device>, a: &mut ResetEventArgs) -> Result<(), Errno> {
    let mut ev = lock(&device.events);
    let e = ev.table.get_mut(&a.event_id).ok_or(Errno::INVAL)?;
    e.signaled = false;
    Ok(())
}

/// WAIT_EVENTS as `kfd_wait_on_events`: `EINVAL` for more than [`KFD_SIGNAL_EVENT_LIMIT`]
/// events or an unknown one, `EFAULT` when the event array is not mapped; the wait ends when
/// one (or, with `wait_for_all`, every) event is set (`KFD_IOC_WAIT_RESULT_COMPLETE`, the
/// exception data of memory and hardware-exception events copied back), at the timeout in
/// ms (`_TIMEOUT`; `u32::MAX` waits forever), or with `EIO` and `_FAIL` when one of the
/// events is destroyed meanwhile. Event age (interface 1.14, `kfd_hsa_signal_event_data`):
/// an entry of a signal event whose `last_event_age` is not 0 counts as set when the event's
/// age differs from it (set since the caller last saw it, even if that set was consumed by
/// another wait or an auto-reset), and a completed wait writes the event's age back into it;
/// a `last_event_age` of 0 waits as before 1.14.
pub(crate) fn wait_events(device: &Arc<Device>, a: &mut WaitEventsArgs) -> Result<(), Errno> {
    if a.num_events > KFD_SIGNAL_EVENT_LIMIT {
        return Err(Errno::INVAL);
    }
    let mut raw = vec![0u8; a.num_events as usize * size_of::<EventData>()];
    if !raw.is_empty() {
        device.user.read(a.events_ptr, &mut raw)?;
    }
    // Each entry's event id and, for a signal event, the `last_event_age` of its union
    // (`kfd_hsa_signal_event_data`, bytes 0..8; 0: no age).
    let (ids, last_ages): (Vec<u32>, Vec<u64>) = raw
        .chunks_exact(size_of::<EventData>())
        .map(|c| {
            EventData::read_from_bytes(c).map_or((u32::MAX, 0), |d| {
                let age = u64::from_ne_bytes(d.union_data[..8].try_into().unwrap_or([0; 8]));
                (d.event_id, age)
            })
        })
        .unzip();
    let deadline = (a.timeout != u32::MAX)
        .then(|| Instant::now() + Duration::from_millis(u64::from(a.timeout)));
    let mut ev = lock(&device.events);
    // As kfd_wait_on_events: an unknown event is EINVAL before the wait; one destroyed
    // during it ends the wait with KFD_IOC_WAIT_RESULT_FAIL and EIO.
    if ids.iter().any(|id| !ev.table.contains_key(id)) {
        return Err(Errno::INVAL);
    }
    // Woken by its own events only (set, signalled by type, or destroyed), as amdkfd's
    // waiter on each event's wait queue; unregistered on every way out.
    // init_event_waiter: a signal event's entry with a non-zero last_event_age other than
    // the event's age is satisfied from the start (it was set since the caller last saw it).
    let ages: Vec<Option<u64>> = ids
        .iter()
        .zip(&last_ages)
        .map(|(id, &last)| {
            let e = ev.table.get(id)?;
            (e.event_type == KFD_IOC_EVENT_SIGNAL && last != 0).then_some(last)
        })
        .collect();
    let (key, cv) = ev.add_waiter(&ids);
    let r = wait_events_registered(device, a, &ids, &ages, deadline, ev, key, &cv);
    lock(&device.events).remove_waiter(key);
    r
}

/// The loop of [`wait_events`] once its waiter `key` (sleeping on `cv`) is registered; `ev`
/// is the locked event table; `ages[i]` the `last_event_age` of entry `i` when it is a signal
/// event's and not 0 (its age is then tracked).
#[allow(clippy::too_many_arguments)]
fn wait_events_registered(
    device: &Device,
    a: &mut WaitEventsArgs,
    ids: &[u32],
    ages: &[Option<u64>],
    deadline: Option<Instant>,
    mut ev: MutexGuard<'_, Events>,
    key: WaiterKey,
    cv: &Condvar,
) -> Result<(), Errno> {
    loop {
        // Whatever woke it is looked at now; what happens from here on wakes it again.
        ev.take_woken(key);
        let mut fired = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            if !ev.table.contains_key(&id) {
                a.wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                return Err(Errno::IO);
            }
            ev.poll_slot(id);
            let aged = |e: &Event| ages[i].is_some_and(|last| last != e.age);
            if let Some(e) = ev.table.get(&id).filter(|e| e.signaled || aged(e)) {
                fired.push((i, e.event_type, e.data, e.age));
            }
        }
        let done = if a.wait_for_all != 0 {
            fired.len() == ids.len() && !ids.is_empty()
        } else {
            !fired.is_empty()
        };
        if done {
            for &id in ids {
                if let Some(e) = ev.table.get_mut(&id) {
                    if e.signaled && e.auto_reset {
                        e.signaled = false;
                    }
                }
            }
            drop(ev);
            // copy_signaled_event_data: the exception data of each memory or
            // hardware-exception event that fired goes back into its entry's union, and the
            // age of each signal event whose age the caller tracks.
            for (i, event_type, data, age) in fired {
                let age = age.to_ne_bytes();
                let bytes = match event_type {
                    KFD_IOC_EVENT_MEMORY => &data[..],
                    KFD_IOC_EVENT_HW_EXCEPTION => &data[..16],
                    KFD_IOC_EVENT_SIGNAL if ages[i].is_some() => &age[..],
                    _ => continue,
                };
                let at = a.events_ptr + (i * size_of::<EventData>()) as u64;
                device.user.write(at, bytes)?;
            }
            a.wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
            return Ok(());
        }
        let wait = match deadline {
            None => Duration::from_millis(10),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    a.wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
                    return Ok(());
                }
                (d - now).min(Duration::from_millis(10))
            }
        };
        // Slots written by the host (not through SET_EVENT) are seen at the next poll; a
        // SET_EVENT, a processor's interrupt or a destroy of one of `ids` wakes this
        // waiter at once (and no other).
        ev = cv
            .wait_timeout(ev, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_linux::kfd::abi::{
        KFD_IOC_EVENT_HW_EXCEPTION, KFD_IOC_EVENT_MEMORY, KFD_IOC_EVENT_SIGNAL,
    };

    fn event(event_type: u32) -> Event {
        Event {
            event_type,
            auto_reset: true,
            signaled: false,
            slot: None,
            data: [0; 32],
            age: 1,
        }
    }

    /// Setting, signalling by type and destroying an event wake the waiters on that event and
    /// no other (kfd_events.c: each event has its own wait queue).
    #[test]
    fn only_the_waiters_on_an_event_are_woken() {
        let mut ev = Events::default();
        let (a, b, m) = (1, 2, FIRST_NONSIGNAL_EVENT_ID);
        ev.table.insert(a, event(KFD_IOC_EVENT_SIGNAL));
        ev.table.insert(b, event(KFD_IOC_EVENT_SIGNAL));
        ev.table.insert(m, event(KFD_IOC_EVENT_MEMORY));
        let (on_a, _) = ev.add_waiter(&[a]);
        let (on_b_and_m, _) = ev.add_waiter(&[b, m]);
        let (on_all, _) = ev.add_waiter(&[a, b, m]);

        ev.set(a);
        assert!(ev.take_woken(on_a));
        assert!(!ev.take_woken(on_b_and_m));
        assert!(ev.take_woken(on_all));
        // Taken: not woken again until something else happens.
        assert!(!ev.take_woken(on_a));

        // A hardware exception sets no memory event: nobody wakes.
        assert_eq!(ev.signal_type(KFD_IOC_EVENT_HW_EXCEPTION, [0; 32]), 0);
        assert!(!ev.take_woken(on_a) && !ev.take_woken(on_b_and_m) && !ev.take_woken(on_all));
        assert_eq!(ev.signal_type(KFD_IOC_EVENT_MEMORY, [7; 32]), 1);
        assert!(!ev.take_woken(on_a));
        assert!(ev.take_woken(on_b_and_m));
        assert!(ev.take_woken(on_all));

        assert!(ev.destroy(b).is_some());
        assert!(!ev.take_woken(on_a));
        assert!(ev.take_woken(on_b_and_m));
        assert!(ev.take_woken(on_all));
        assert!(ev.destroy(b).is_none());

        // An unknown id wakes nobody; a removed waiter is not woken.
        ev.set(99);
        ev.remove_waiter(on_a);
        ev.set(a);
        assert!(!ev.take_woken(on_a) && !ev.take_woken(on_b_and_m));
        assert!(ev.take_woken(on_all));
    }
}
