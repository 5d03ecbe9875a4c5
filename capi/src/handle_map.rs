//! The registries' map from C handles (`hsa_signal_t`, `hsa_queue_t*`, doorbell signals) to
//! their objects: found without a lock or a reference count inside a [`ReadSection`], by
//! `Arc` outside one.
//!
//! # Layout
//! The owners, one `Arc` per handle, sit in a `BTreeMap` under the map's mutex, which every
//! change takes. Beside it is an open-addressed table of (handle, object pointer) slots that
//! readers probe with atomic loads. An insert fills a slot's pointer, then its key; a removal
//! clears the pointer, marks the key a tombstone, waits out a grace period
//! ([`rcu::synchronize`]) and only then lets the `Arc` go. The table is replaced by a larger
//! one (tombstones dropped) when live slots and tombstones pass half of it; the old table is
//! freed after a grace period too. Keys never move within a table, so a probe racing an
//! insert or removal sees the handle either present or absent, never another's object.
//! Handles 0 and 1 (the table's empty and tombstone keys) have a pointer each beside the
//! table: a section takes no lock even for them (a removal holds the lock while it waits for
//! sections to end).

#![allow(unsafe_code)] // dereferences of the published table and object pointers

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::locks::{lock, Mutex};
use crate::rcu::{self, ReadSection};

/// Key of a slot never used.
const EMPTY: u64 = 0;
/// Key of a slot whose entry was removed (probes go past it).
const TOMBSTONE: u64 = 1;
/// Slots of the first table.
const MIN_SLOTS: usize = 16;

/// One slot: a handle and its object (null while being filled or once removed).
struct Slot<T> {
    key: AtomicU64,
    object: AtomicPtr<T>,
}

/// The probe table: a power-of-two number of slots.
struct Table<T> {
    slots: Box<[Slot<T>]>,
}

impl<T> Table<T> {
    fn with_slots(n: usize) -> Box<Table<T>> {
        let slots = (0..n)
            .map(|_| Slot {
                key: AtomicU64::new(EMPTY),
                object: AtomicPtr::new(core::ptr::null_mut()),
            })
            .collect();
        Box::new(Table { slots })
    }

    /// The first slot a handle probes (Fibonacci hashing: handles are aligned addresses
    /// whose low bits are all zero).
    fn start(&self, handle: u64) -> usize {
        (handle.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (self.slots.len() - 1)
    }

    /// The slot holding `handle`, probing from its start to the first never-used slot.
    fn slot_of(&self, handle: u64) -> Option<&Slot<T>> {
        let mask = self.slots.len() - 1;
        let mut i = self.start(handle);
        for _ in 0..self.slots.len() {
            let slot = &self.slots[i];
            match slot.key.load(Ordering::Acquire) {
                k if k == handle => return Some(slot),
                EMPTY => return None,
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// The object of `handle`, or null.
    fn find(&self, handle: u64) -> *const T {
        match self.slot_of(handle) {
            Some(slot) => slot.object.load(Ordering::Acquire),
            None => core::ptr::null(),
        }
    }

    /// Puts `handle` (absent from the table) in the first free or tombstone slot of its
    /// probe: the object first, then the key (release), so a reader that sees the key sees
    /// the object. Answers whether a tombstone was reused.
    fn place(&self, handle: u64, object: *const T) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.start(handle);
        loop {
            let slot = &self.slots[i];
            let key = slot.key.load(Ordering::Relaxed);
            if key == EMPTY || key == TOMBSTONE {
                slot.object.store(object.cast_mut(), Ordering::Release);
                slot.key.store(handle, Ordering::Release);
                return key == TOMBSTONE;
            }
            // The map keeps at most half the slots used, so a free one is always ahead.
            i = (i + 1) & mask;
        }
    }
}

/// What a lookup gives: a reference valid for the section, or a shared owner.
pub(crate) enum Held<'a, T> {
    /// Found inside a section: alive until the section ends.
    Borrowed(&'a T),
    /// Found under the map's lock (no section): kept alive by this `Arc`.
    Shared(Arc<T>),
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Borrowed(r) => r,
            Held::Shared(a) => a,
        }
    }
}

/// What changes take the lock for.
struct Owners<T> {
    by_handle: BTreeMap<u64, Arc<T>>,
    tombstones: usize,
}

/// A map from handles to shared objects, read without a lock (see the module doc).
pub(crate) struct HandleMap<T> {
    /// The probe table (a `Box` leaked; replaced and freed only under `owners`' lock, after a
    /// grace period).
    table: AtomicPtr<Table<T>>,
    /// The objects of handles 0 and 1 (the probe table's empty and tombstone keys), by handle;
    /// null when absent. Set and cleared as a slot's object is.
    low: [AtomicPtr<T>; 2],
    owners: Mutex<Owners<T>>,
}

impl<T> Default for HandleMap<T> {
    fn default() -> Self {
        HandleMap {
            table: AtomicPtr::new(Box::into_raw(Table::with_slots(MIN_SLOTS))),
            low: [
                AtomicPtr::new(core::ptr::null_mut()),
                AtomicPtr::new(core::ptr::null_mut()),
            ],
            owners: Mutex::new(Owners {
                by_handle: BTreeMap::new(),
                tombstones: 0,
            }),
        }
    }
}

impl<T> Drop for HandleMap<T> {
    fn drop(&mut self) {
        // SAFETY: the table was leaked from a Box by this map, and `&mut self` means no
        // section can be reading it.
        drop(unsafe { Box::from_raw(*self.table.get_mut()) });
    }
}

impl<T> HandleMap<T> {
    /// The object of `handle`: without a lock inside `section`, else under the map's lock.
    /// Handles 0 and 1 (never addresses, but what a caller may pass) are read from their own
    /// two pointers, as lock-free: a section never takes the map's lock, which a removal holds
    /// while it waits for sections to end.
    #[inline(always)]
    pub(crate) fn get<'a>(
        &'a self,
        handle: u64,
        section: Option<&'a ReadSection>,
    ) -> Option<Held<'a, T>> {
        if section.is_none() {
            return lock(&self.owners)
                .by_handle
                .get(&handle)
                .cloned()
                .map(Held::Shared);
        }
        let object = match self.low.get(handle as usize) {
            Some(low) if handle <= TOMBSTONE => low.load(Ordering::Acquire).cast_const(),
            _ => {
                // SAFETY: a table is freed only after it was replaced and a grace period
                // passed; this section began before the load.
                let table = unsafe { &*self.table.load(Ordering::Acquire) };
                table.find(handle)
            }
        };
        // SAFETY: a non-null slot (or low) object is an `Arc` of `owners`, which a removal
        // lets go only after clearing the pointer and a grace period; the section holds.
        (!object.is_null()).then(|| Held::Borrowed(unsafe { &*object }))
    }

    /// The object of `handle`, shared (for a caller that keeps it past a section: waits,
    /// copies).
    pub(crate) fn get_arc(&self, handle: u64) -> Option<Arc<T>> {
        let section = rcu::read();
        match self.get(handle, section.as_ref())? {
            Held::Shared(a) => Some(a),
            Held::Borrowed(r) => {
                let p: *const T = r;
                // SAFETY: `p` is the pointer of an `Arc` owned by `owners` and kept alive by
                // the section (see `get`); a count taken now keeps it past the section.
                unsafe {
                    Arc::increment_strong_count(p);
                    Some(Arc::from_raw(p))
                }
            }
        }
    }

    /// Registers `object` under `handle`, replacing (and returning, after a grace period)
    /// an earlier object of that handle.
    pub(crate) fn insert(&self, handle: u64, object: Arc<T>) -> Option<Arc<T>> {
        let mut owners = lock(&self.owners);
        let old = owners.by_handle.remove(&handle);
        if old.is_some() {
            self.unlink(&mut owners, handle);
        }
        if handle <= TOMBSTONE {
            self.low[handle as usize].store(Arc::as_ptr(&object).cast_mut(), Ordering::Release);
        } else {
            self.reserve(&mut owners);
            // SAFETY: the current table; only changes (under the lock held) replace it.
            let table = unsafe { &*self.table.load(Ordering::Acquire) };
            if table.place(handle, Arc::as_ptr(&object)) {
                owners.tombstones -= 1;
            }
        }
        owners.by_handle.insert(handle, object);
        if old.is_some() {
            rcu::synchronize();
        }
        old
    }

    /// Unregisters `handle`: its object, once no section can still be using it.
    pub(crate) fn remove(&self, handle: u64) -> Option<Arc<T>> {
        let mut owners = lock(&self.owners);
        let old = owners.by_handle.remove(&handle)?;
        self.unlink(&mut owners, handle);
        // Under the lock: the slot cannot be reused for the handle before the grace period.
        rcu::synchronize();
        Some(old)
    }

    /// Unregisters every handle and returns the objects, once no section can be using them.
    pub(crate) fn take_all(&self) -> Vec<Arc<T>> {
        let mut owners = lock(&self.owners);
        let fresh = Box::into_raw(Table::with_slots(MIN_SLOTS));
        let old = self.table.swap(fresh, Ordering::AcqRel);
        for low in &self.low {
            low.store(core::ptr::null_mut(), Ordering::Release);
        }
        owners.tombstones = 0;
        let objects = core::mem::take(&mut owners.by_handle)
            .into_values()
            .collect();
        rcu::synchronize();
        // SAFETY: unpublished above and a grace period passed.
        drop(unsafe { Box::from_raw(old) });
        objects
    }

    /// Live handles.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.owners).by_handle.len()
    }

    /// Clears `handle`'s slot: object first, then the key becomes a tombstone (handles 0 and
    /// 1: their pointer).
    fn unlink(&self, owners: &mut Owners<T>, handle: u64) {
        if handle <= TOMBSTONE {
            self.low[handle as usize].store(core::ptr::null_mut(), Ordering::Release);
            return;
        }
        // SAFETY: the current table; only changes (under the lock held) replace it.
        let table = unsafe { &*self.table.load(Ordering::Acquire) };
        if let Some(slot) = table.slot_of(handle) {
            slot.object.store(core::ptr::null_mut(), Ordering::Release);
            slot.key.store(TOMBSTONE, Ordering::Release);
            owners.tombstones += 1;
        }
    }

    /// Makes room for one more slot: a table twice as large as the live entries need, with
    /// no tombstones, when live slots and tombstones would pass half of the current one.
    fn reserve(&self, owners: &mut Owners<T>) {
        // SAFETY: the current table; only changes (under the lock held) replace it.
        let table = unsafe { &*self.table.load(Ordering::Acquire) };
        let live = owners.by_handle.len();
        if (live + owners.tombstones + 1) * 2 <= table.slots.len() {
            return;
        }
        let slots = ((live + 1) * 4).next_power_of_two().max(MIN_SLOTS);
        let fresh = Table::with_slots(slots);
        for (&handle, object) in &owners.by_handle {
            if handle > TOMBSTONE {
                fresh.place(handle, Arc::as_ptr(object));
            }
        }
        let old = self.table.swap(Box::into_raw(fresh), Ordering::AcqRel);
        owners.tombstones = 0;
        rcu::synchronize();
        // SAFETY: unpublished above and a grace period passed: no section still reads it.
        drop(unsafe { Box::from_raw(old) });
    }
}

#[cfg(all(test, not(target_os = "none")))]
mod tests {
    use super::*;
    use core::sync::atomic::AtomicBool;
    use std::thread;

    const LIVE: u64 = 0x11fe;

    /// An object that marks itself dead when dropped.
    struct Obj {
        handle: u64,
        tag: AtomicU64,
    }

    impl Drop for Obj {
        fn drop(&mut self) {
            self.tag.store(0xdead, Ordering::Relaxed);
        }
    }

    fn obj(handle: u64) -> Arc<Obj> {
        Arc::new(Obj {
            handle,
            tag: AtomicU64::new(LIVE),
        })
    }

    /// Inserts, lookups with and without a section, replacement, removal, tombstone reuse,
    /// growth past the first table and the handles that are never addresses (0 and 1).
    #[test]
    fn lookups_follow_inserts_and_removals() {
        let map = HandleMap::default();
        let handles: Vec<u64> = (1..=200u64).map(|i| i * 64).collect();
        for &h in &handles {
            assert!(map.insert(h, obj(h)).is_none());
        }
        assert_eq!(map.len(), 200);
        let section = rcu::read().unwrap();
        for &h in &handles {
            assert_eq!(map.get(h, Some(&section)).unwrap().handle, h);
            assert!(matches!(
                map.get(h, Some(&section)),
                Some(Held::Borrowed(_))
            ));
            assert!(map.get(h + 8, Some(&section)).is_none());
        }
        drop(section);
        for &h in handles.iter().step_by(2) {
            assert_eq!(map.remove(h).unwrap().handle, h);
            assert!(map.remove(h).is_none());
        }
        let section = rcu::read().unwrap();
        for (i, &h) in handles.iter().enumerate() {
            assert_eq!(
                map.get(h, Some(&section)).is_some(),
                i % 2 == 1,
                "handle {h:#x}"
            );
            assert_eq!(map.get(h, None).is_some(), i % 2 == 1, "handle {h:#x}");
        }
        drop(section);
        // The removed handles come back (into tombstones); a replacement returns the old.
        for &h in handles.iter().step_by(2) {
            assert!(map.insert(h, obj(h)).is_none());
        }
        let old = map.insert(handles[1], obj(handles[1])).unwrap();
        assert_eq!(old.handle, handles[1]);
        for h in [0u64, 1] {
            assert!(map.insert(h, obj(h)).is_none());
            let section = rcu::read().unwrap();
            assert_eq!(map.get(h, Some(&section)).unwrap().handle, h);
        }
        assert_eq!(map.len(), 202);
        let section = rcu::read().unwrap();
        for &h in &handles {
            assert_eq!(map.get(h, Some(&section)).unwrap().handle, h);
        }
        drop(section);
        let mut all: Vec<u64> = map.take_all().iter().map(|o| o.handle).collect();
        all.sort_unstable();
        assert_eq!(all[..2], [0, 1]);
        assert_eq!(all[2..], handles[..]);
        assert_eq!(map.len(), 0);
        assert!(map.get(handles[0], rcu::read().as_ref()).is_none());
    }

    /// Readers look objects up and read them inside sections while a writer removes,
    /// re-inserts and grows the map: an object a reader finds is never one already dropped
    /// (its tag would read dead), and a handle always finds its own object.
    #[test]
    fn a_found_object_is_never_dropped_under_its_reader() {
        let map = Arc::new(HandleMap::default());
        let handles: Vec<u64> = (1..=64u64).map(|i| i * 0x40).collect();
        for &h in &handles {
            map.insert(h, obj(h));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let lookups = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (map, stop, handles) = (map.clone(), stop.clone(), handles.clone());
                let lookups = lookups.clone();
                thread::spawn(move || {
                    let (mut found, mut bad) = (0u64, 0u64);
                    let mut i = r;
                    while !stop.load(Ordering::Relaxed) {
                        let h = handles[i % handles.len()];
                        i += 7;
                        let section = rcu::read().unwrap();
                        lookups.fetch_add(1, Ordering::Relaxed);
                        if let Some(o) = map.get(h, Some(&section)) {
                            found += 1;
                            for _ in 0..64 {
                                bad += u64::from(o.tag.load(Ordering::Relaxed) != LIVE);
                            }
                            bad += u64::from(o.handle != h);
                        }
                    }
                    (found, bad)
                })
            })
            .collect();
        // Until the readers made 400,000 lookups between them (a count, not a time; fewer
        // under miri, which checks each access instead).
        let target = if cfg!(miri) { 300 } else { 400_000 };
        let mut round = 0;
        while lookups.load(Ordering::Relaxed) < target {
            round += 1;
            for &h in handles.iter().skip(round % 3).step_by(3) {
                drop(map.remove(h));
            }
            for &h in handles.iter().skip(round % 3).step_by(3) {
                map.insert(h, obj(h));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for t in readers {
            let (found, bad) = t.join().unwrap();
            assert!(found > 0);
            assert_eq!(bad, 0);
        }
    }

    /// A lookup of handle 0 or 1 inside a section while another thread removes a handle (it
    /// holds the map's lock across its grace period, which waits for that section): the
    /// lookup takes no lock, so both finish. (When those handles were looked up under the
    /// lock, the section waited for the lock and the grace period for the section: a C
    /// `hsa_signal_load_relaxed` of a zero handle racing `hsa_signal_destroy` hung both.)
    #[test]
    fn low_handles_inside_a_section_take_no_lock() {
        let map = Arc::new(HandleMap::default());
        map.insert(1, obj(1));
        map.insert(0x40, obj(0x40));
        let section = rcu::read().unwrap();
        let remover = {
            let map = map.clone();
            thread::spawn(move || map.remove(0x40).map(|o| o.handle))
        };
        // Until the remover holds the lock (it keeps it until this section ends).
        while map.owners.try_lock().is_ok() {
            thread::yield_now();
        }
        assert!(map.get(0, Some(&section)).is_none());
        assert_eq!(map.get(1, Some(&section)).unwrap().handle, 1);
        drop(section);
        assert_eq!(remover.join().unwrap(), Some(0x40));
        assert_eq!(map.remove(1).unwrap().handle, 1);
        assert!(map.get(1, rcu::read().as_ref()).is_none());
    }
}
