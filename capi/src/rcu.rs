//! Lock-free reads of the C API's registries: read-side sections and grace periods
//! (read-copy-update, as Linux's RCU and liburcu's "memb" flavour do it).
//!
//! The hot calls (signal loads and stores, queue index operations, doorbell stores) run inside
//! a [`ReadSection`]: the state and the registry entries they reach stay alive until the
//! section ends, with no reference count touched and no lock taken. Whoever retires an object
//! (`hsa_shut_down` the state, `hsa_signal_destroy` a signal, a table growing its slots) first
//! unlinks it, then waits out a grace period ([`synchronize`]: every section running at that
//! moment has ended) and only then drops it.
//!
//! # Cost
//! Entering a section is a store to the thread's own counter; leaving, another. Where the
//! kernel offers `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (Linux 4.14+), the full barrier
//! between the counter store and the section's reads is paid by [`synchronize`], which makes
//! every running thread of the process execute one, instead of by every reader; elsewhere a
//! reader issues a `SeqCst` fence on entry.
//!
//! # Rules
//! A section must not block or call back into the application (a grace period waits for it),
//! and [`synchronize`] must not be called from inside one (it would wait for itself; it skips
//! the calling thread's own counter instead). Sections do not nest: [`read`] inside a section
//! gives `None` and the caller takes its slow path, as it does on a target without
//! thread-local storage (`target_os = "none"`), where sections never exist and grace periods
//! are immediate.
//!
//! A forked child has only the forking thread: a `pthread_atfork` child handler closes every
//! other counter it inherited (one left odd by a section running at the fork would hold the
//! child's grace periods for ever).

/// Entering a section and waiting for sections: threads with thread-local storage.
#[cfg(not(target_os = "none"))]
mod imp {
    use core::cell::Cell;
    use core::marker::PhantomData;
    use core::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, Ordering};
    use std::boxed::Box;
    use std::sync::OnceLock;
    use std::vec::Vec;

    /// One thread's section counter: even outside a section, odd inside.
    struct Reader {
        sections: AtomicU64,
        /// Whether a live thread uses this counter (counters of exited threads are reused).
        owned: AtomicBool,
    }

    /// Every counter ever handed out (a thread's is leaked, then reused after it exits). A
    /// spin lock, held for a push or a copy only: the fork handlers hold it across `fork()`
    /// and release it in parent and child, which a `std` mutex cannot do.
    static READERS: spin::Mutex<Vec<&'static Reader>> = spin::Mutex::new(Vec::new());

    /// The calling thread's counter, given back when the thread exits.
    struct Registration(&'static Reader);

    impl Drop for Registration {
        fn drop(&mut self) {
            let _ = OWN.try_with(|o| o.set(core::ptr::null()));
            self.0.owned.store(false, Ordering::Release);
        }
    }

    std::thread_local! {
        static MINE: Registration = {
            let r = claim();
            OWN.with(|o| o.set(r));
            Registration(r)
        };
        /// The calling thread's counter once `MINE` holds it (null before): for the fork
        /// handler, which must not make `MINE` (that takes the lock it holds).
        static OWN: Cell<*const Reader> = const { Cell::new(core::ptr::null()) };
    }

    /// A free counter, or a new one.
    fn claim() -> &'static Reader {
        let mut readers = READERS.lock();
        for r in readers.iter() {
            if r.owned
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return r;
            }
        }
        let r: &'static Reader = Box::leak(Box::new(Reader {
            sections: AtomicU64::new(0),
            owned: AtomicBool::new(true),
        }));
        readers.push(r);
        r
    }

    /// Whether [`synchronize`] makes every thread execute a full barrier
    /// (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, registered once): readers then need
    /// only a compiler fence. Decided before the first section, never changed.
    fn asymmetric() -> bool {
        static ASYMMETRIC: OnceLock<bool> = OnceLock::new();
        *ASYMMETRIC.get_or_init(register_membarrier)
    }

    #[cfg(all(feature = "linux", not(miri)))]
    fn register_membarrier() -> bool {
        use rustix::thread::{membarrier, MembarrierCommand};
        membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
    }

    #[cfg(any(not(feature = "linux"), miri))]
    fn register_membarrier() -> bool {
        false
    }

    /// Makes every running thread of the process execute a full memory barrier (or, without
    /// membarrier, just this one).
    fn barrier_all() {
        fence(Ordering::SeqCst);
        #[cfg(all(feature = "linux", not(miri)))]
        if asymmetric() {
            use rustix::thread::{membarrier, MembarrierCommand};
            if membarrier(MembarrierCommand::PrivateExpedited).is_err() {
                // Registered, so this cannot fail; if it did, the global command (a wait for
                // every CPU to pass a scheduling point) gives the same guarantee, slowly.
                let _ = membarrier(MembarrierCommand::Global);
            }
        }
        fence(Ordering::SeqCst);
    }

    /// Decides now how sections order their reads (registering for `membarrier`, which
    /// waits for a kernel grace period: milliseconds), so the first section does not pay it;
    /// and, once, has a forked child forget its parent's other threads' counters.
    pub(crate) fn prepare() {
        asymmetric();
        static FORK: OnceLock<()> = OnceLock::new();
        FORK.get_or_init(fork::register);
    }

    /// The counters a forked child inherits: only the forking thread lives on in the child, so
    /// a counter another thread of the parent left odd (a section running at the fork) would
    /// make every grace period of the child wait for ever.
    #[cfg(all(feature = "linux", not(miri)))]
    #[allow(unsafe_code)] // registering the handlers; releasing the lock they hold
    mod fork {
        use super::{OWN, READERS};
        use core::cell::Cell;
        use core::sync::atomic::Ordering;

        extern "C" {
            /// POSIX `pthread_atfork` (glibc, musl): handlers run around every `fork()`.
            fn pthread_atfork(
                prepare: Option<extern "C" fn()>,
                parent: Option<extern "C" fn()>,
                child: Option<extern "C" fn()>,
            ) -> i32;
        }

        /// Registers the handlers (a failure, `ENOMEM`, leaves forked children as before).
        pub(super) fn register() {
            // SAFETY: a plain C call with `extern "C" fn()`s of this library (glibc's
            // `pthread_atfork` records the library's `__dso_handle` and drops the handlers if
            // the library is unloaded).
            let _ = unsafe { pthread_atfork(Some(before), Some(in_parent), Some(in_child)) };
        }

        /// Before `fork()`: takes the counters' lock, so that no thread holds it at the fork
        /// (the child would never see it released).
        extern "C" fn before() {
            core::mem::forget(READERS.lock());
        }

        /// In the parent after `fork()`: releases the lock [`before`] took.
        extern "C" fn in_parent() {
            // SAFETY: `before` took the lock on this thread and forgot its guard; nothing
            // else can hold it.
            unsafe { READERS.force_unlock() };
        }

        /// In the child, right after `fork()`: every counter but the calling thread's belongs
        /// to a thread the child does not have; each is closed (made even) and freed for
        /// reuse. Then releases the lock [`before`] took.
        extern "C" fn in_child() {
            // SAFETY: `before` took the lock and forgot its guard; the child's only thread is
            // the one that took it.
            unsafe { READERS.force_unlock() };
            let own = OWN.try_with(Cell::get).unwrap_or(core::ptr::null());
            for r in READERS.lock().iter() {
                if core::ptr::eq(*r, own) {
                    continue;
                }
                let seen = r.sections.load(Ordering::Relaxed);
                r.sections
                    .store(seen.wrapping_add(seen & 1), Ordering::Release);
                r.owned.store(false, Ordering::Release);
            }
        }
    }

    /// Without the C library's fork handlers (miri, bare builds): nothing to register.
    #[cfg(any(not(feature = "linux"), miri))]
    mod fork {
        pub(super) fn register() {}
    }

    /// A read-side section of the calling thread; ends when dropped. Not `Send`: it is the
    /// thread's.
    pub(crate) struct ReadSection {
        reader: &'static Reader,
        entered: u64,
        _thread: PhantomData<*const ()>,
    }

    impl Drop for ReadSection {
        fn drop(&mut self) {
            // Release: the section's reads happen before a grace period that sees it end.
            self.reader
                .sections
                .store(self.entered.wrapping_add(1), Ordering::Release);
        }
    }

    /// Enters a section; `None` inside one already (sections do not nest) or while the
    /// thread's storage is being torn down.
    #[inline(always)]
    pub(crate) fn read() -> Option<ReadSection> {
        let asymmetric = asymmetric();
        let reader = MINE.try_with(|m| m.0).ok()?;
        let outside = reader.sections.load(Ordering::Relaxed);
        if outside & 1 == 1 {
            return None;
        }
        let entered = outside.wrapping_add(1);
        // Release, as the exit store: a grace period that reads this (the next section's
        // entry, having missed the last exit) still synchronises with the sections before.
        reader.sections.store(entered, Ordering::Release);
        // The counter store must be visible before the section's reads: ordered here by a
        // full fence, or by the barrier `synchronize` forces onto this thread.
        if asymmetric {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        Some(ReadSection {
            reader,
            entered,
            _thread: PhantomData,
        })
    }

    /// Waits until every section that had begun when this was called has ended (a grace
    /// period). Call it after unlinking an object and before dropping it.
    pub(crate) fn synchronize() {
        let readers: Vec<&'static Reader> = READERS.lock().clone();
        let own = MINE.try_with(|m| m.0 as *const Reader).ok();
        barrier_all();
        for r in readers {
            if Some(r as *const Reader) == own {
                continue;
            }
            let seen = r.sections.load(Ordering::Acquire);
            if seen & 1 == 0 {
                continue;
            }
            let mut polls = 0u32;
            while r.sections.load(Ordering::Acquire) == seen {
                polls = polls.saturating_add(1);
                if polls < 128 {
                    core::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// Without thread-local storage there are no sections; a grace period is immediate.
#[cfg(target_os = "none")]
mod imp {
    /// Never made: [`read`] always answers `None`.
    pub(crate) enum ReadSection {}

    /// No section on this target: callers take their locked path.
    pub(crate) fn read() -> Option<ReadSection> {
        None
    }

    /// No section can be running.
    pub(crate) fn synchronize() {}

    /// Nothing to prepare.
    pub(crate) fn prepare() {}
}

pub(crate) use imp::{prepare, read, synchronize, ReadSection};

#[cfg(all(test, not(target_os = "none")))]
#[allow(unsafe_code)] // the test frees what its readers dereference
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
    use std::boxed::Box;
    use std::sync::Arc;
    use std::vec::Vec;

    /// Sections do not nest.
    #[test]
    fn sections_do_not_nest() {
        let outer = read().expect("a section");
        assert!(read().is_none());
        drop(outer);
        assert!(read().is_some());
    }

    /// Readers dereference a published box while a writer replaces and frees it after each
    /// grace period; every value a reader sees must still be intact (the freed box is
    /// poisoned first, so a read after the free would see the poison, and miri or ASan would
    /// see the use after free).
    #[test]
    fn a_grace_period_outlasts_every_running_section() {
        const LIVE: u64 = 0x5afe_5afe;
        struct Obj {
            tag: AtomicU64,
        }
        let current = Arc::new(AtomicPtr::new(Box::into_raw(Box::new(Obj {
            tag: AtomicU64::new(LIVE),
        }))));
        let stop = Arc::new(AtomicBool::new(false));
        let bad = Arc::new(AtomicU64::new(0));
        let sections = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (current, stop, bad) = (current.clone(), stop.clone(), bad.clone());
                let sections = sections.clone();
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        sections.fetch_add(1, Ordering::Relaxed);
                        let section = read().unwrap();
                        let p = current.load(Ordering::Acquire);
                        for _ in 0..64 {
                            // SAFETY: loaded inside the section; the writer frees a box only
                            // after unlinking it and waiting out a grace period.
                            let tag = unsafe { (*p).tag.load(Ordering::Relaxed) };
                            if tag != LIVE {
                                bad.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        drop(section);
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        // At least 2,000 replacements, and on until the readers ran 200,000 sections (counts,
        // not times; fewer under miri).
        let (replacements, reads) = if cfg!(miri) {
            (20, 200)
        } else {
            (2_000, 200_000)
        };
        let mut replaced = 0;
        while replaced < replacements || sections.load(Ordering::Relaxed) < reads {
            replaced += 1;
            let new = Box::into_raw(Box::new(Obj {
                tag: AtomicU64::new(LIVE),
            }));
            let old = current.swap(new, Ordering::AcqRel);
            synchronize();
            // SAFETY: unlinked and a grace period passed: no section can still hold it.
            unsafe {
                (*old).tag.store(0xdead, Ordering::Relaxed);
                drop(Box::from_raw(old));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let reads: u64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(reads > 0);
        assert_eq!(bad.load(Ordering::Relaxed), 0);
        // SAFETY: every reader has joined.
        unsafe { drop(Box::from_raw(current.load(Ordering::Acquire))) };
    }
}
