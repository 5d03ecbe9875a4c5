//! `SignalPool`: a slab that carves 64-byte `amd_signal_t` slots out of 4096-byte platform
//! chunks (System memory, host-accessible, fine-grained, uncached), 64 slots a chunk, with the
//! free set a bitmap per chunk kept outside the signal memory.
//!
//! Without `alloc` the pool holds at most [`FIXED_MAX_SLABS`] chunks (heapless); with `alloc`
//! it grows without bound (or up to [`SignalPool::with_max_slabs`]). Creating and destroying
//! signals takes a spin lock (not the hot path); value operations never touch the pool.
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::abi::signal::{AmdSignal, AMD_SIGNAL_KIND_INVALID, AMD_SIGNAL_KIND_USER};
use crate::addr::{GpuVa, NodeId};
use crate::platform::{MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform};
use crate::status::{show_host_ptr, Error, Result, Status};
use crate::sync::Ordering;

use super::raw::{Mailbox, RawSignal};
use super::{Signal, SignalEvent};
use crate::platform_ref::PlatformRef;
#[cfg(feature = "alloc")]
use alloc::sync::Arc;

/// Bytes of one slab chunk requested from the platform.
pub const SLAB_BYTES: u64 = 4096;
/// `amd_signal_t` slots in one slab (4096 / 64).
pub const SLOTS_PER_SLAB: usize = 64;
/// Most slabs a pool can hold without `alloc` (1024 signals).
#[cfg(not(feature = "alloc"))]
pub const FIXED_MAX_SLABS: usize = 16;

struct Slab {
    chunk: MemoryChunk,
    host: NonNull<u8>,
    /// Bit i set: slot i is free.
    free: u64,
}

// SAFETY: a Slab describes memory the pool owns; the host pointer is only dereferenced by the
// pool (under its lock) and through RawSignals whose accesses are atomic.
unsafe impl Send for Slab {}

#[cfg(feature = "alloc")]
type Slabs = alloc::vec::Vec<Slab>;
#[cfg(not(feature = "alloc"))]
type Slabs = heapless::Vec<Slab, FIXED_MAX_SLABS>;

/// A pool of `amd_signal_t` slots in platform memory, from which signals are created.
///
/// `H` is how the pool reaches the platform ([`PlatformRef`]). Each signal keeps a handle of
/// the same kind to its pool ([`PlatformRef::SignalPoolRef`]) to give its slot back: with
/// `&P` the signals borrow the pool (create them with [`create`](SignalPool::create) on the
/// pool), with `Arc<P>` they share it (keep the pool in an `Arc` and call
/// [`create`](SignalPool::create) on that). Generic code uses
/// [`create_in`](SignalPool::create_in) and [`create_interrupt_in`](SignalPool::create_interrupt_in).
///
/// Ref: ROCR allocates signals from a fine-grained system-memory slab
/// (`core::SharedSignal`); HSA Runtime 1.2 §2.4.1 `hsa_signal_create`.
/// # Example
/// ```
/// use hsa_core::platform::fake::FakePlatform;
/// use hsa_core::signal::{LoadOrder, MemoryOrder, SignalCondition, SignalPool, WaitState};
/// use hsa_core::NodeId;
///
/// let platform = FakePlatform::new();
/// let pool = SignalPool::new(&platform, NodeId(0));
/// let signal = pool.create(2)?;
/// assert_eq!(signal.subtract(1, MemoryOrder::Release), 2); // returns the previous value
/// signal.subtract(1, MemoryOrder::Release);
/// // The condition holds already: the wait returns the value at once.
/// let value = signal.wait(SignalCondition::Eq, 0, u64::MAX, WaitState::Active, LoadOrder::Acquire);
/// assert_eq!(value, 0);
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct SignalPool<H: PlatformRef> {
    platform: H,
    node: NodeId,
    max_slabs: usize,
    slabs: spin::Mutex<Slabs>,
}

impl<H: PlatformRef> SignalPool<H> {
    /// An empty pool whose chunks are allocated for `node` as signals are created.
    pub fn new(platform: H, node: NodeId) -> Self {
        #[cfg(feature = "alloc")]
        let max = usize::MAX;
        #[cfg(not(feature = "alloc"))]
        let max = FIXED_MAX_SLABS;
        Self::with_max_slabs(platform, node, max)
    }

    /// An empty pool that holds at most `max_slabs` chunks (64 signals each); without `alloc`
    /// the limit is also capped at `FIXED_MAX_SLABS` (16).
    pub fn with_max_slabs(platform: H, node: NodeId, max_slabs: usize) -> Self {
        #[cfg(not(feature = "alloc"))]
        let max_slabs = max_slabs.min(FIXED_MAX_SLABS);
        SignalPool {
            platform,
            node,
            max_slabs,
            slabs: spin::Mutex::new(Slabs::new()),
        }
    }

    /// The platform the pool allocates from.
    pub fn platform(&self) -> &H::Target {
        &self.platform
    }

    /// The handle through which the pool reaches its platform.
    pub fn platform_ref(&self) -> &H {
        &self.platform
    }

    /// Signals alive now.
    pub fn live_signals(&self) -> usize {
        self.slabs
            .lock()
            .iter()
            .map(|s| SLOTS_PER_SLAB - s.free.count_ones() as usize)
            .sum()
    }

    /// Chunks held now.
    pub fn slab_count(&self) -> usize {
        self.slabs.lock().len()
    }

    /// Creates a user signal with value `initial` from the pool behind `pool`
    /// (`hsa_signal_create` with no consumers that need interrupts); the signal keeps a clone
    /// of `pool`. [`create`](SignalPool::create) does the same for a pool at hand.
    ///
    /// # Errors
    /// `Status::OutOfResources` when the pool is at its slab limit, or the platform's status
    /// when allocating a chunk failed; `Status::InvalidAllocation` when the platform returned
    /// a chunk without a host pointer or smaller than [`SLAB_BYTES`].
    pub fn create_in(pool: &H::SignalPoolRef, initial: i64) -> Result<Signal<H>> {
        let raw = pool.allocate_slot(AmdSignal {
            kind: AMD_SIGNAL_KIND_USER,
            value: initial,
            ..AmdSignal::default()
        })?;
        Ok(Signal::from_parts(
            raw,
            pool.platform.clone(),
            None,
            Some(pool.clone()),
        ))
    }

    /// Creates an interrupt signal with value `initial` from the pool behind `pool`: a user
    /// signal with a platform event (`Platform::create_event`) whose mailbox and id go into
    /// the `amd_signal_t` (`hsa_amd_signal_create` with interrupt support); the signal keeps a
    /// clone of `pool`. [`create_interrupt`](SignalPool::create_interrupt) does the same for
    /// a pool at hand.
    ///
    /// # Errors
    /// As for [`create_in`](Self::create_in); also the platform's status (e.g.
    /// `Status::OutOfResources`) when it has no more events, and `Status::InvalidArgument`
    /// when the platform's mailbox address is not 8-byte aligned.
    pub fn create_interrupt_in(pool: &H::SignalPoolRef, initial: i64) -> Result<Signal<H>> {
        let platform = &pool.platform;
        let event = platform.create_event()?;
        // SAFETY: the platform made the mailbox with the event; it stays valid until
        // destroy_event, which Signal::release calls only after the signal's last use.
        let mailbox = match unsafe { Mailbox::from_address(event.mailbox.get()) } {
            Ok(m) => m,
            Err(e) => {
                let _ = platform.destroy_event(event.id);
                return Err(e);
            }
        };
        let raw = match pool.allocate_slot(AmdSignal {
            kind: AMD_SIGNAL_KIND_USER,
            value: initial,
            event_mailbox_ptr: event.mailbox.get(),
            event_id: event.id.get(),
            ..AmdSignal::default()
        }) {
            Ok(r) => r,
            Err(e) => {
                let _ = platform.destroy_event(event.id);
                return Err(e);
            }
        };
        let ev = SignalEvent {
            id: event.id,
            mailbox,
        };
        Ok(Signal::from_parts(
            raw,
            platform.clone(),
            Some(ev),
            Some(pool.clone()),
        ))
    }

    fn allocate_slot(&self, init: AmdSignal) -> Result<RawSignal> {
        let mut slabs = self.slabs.lock();
        let index = match slabs.iter().position(|s| s.free != 0) {
            Some(i) => i,
            None => {
                if slabs.len() >= self.max_slabs {
                    return Err(Error::lazy(
                        Status::OutOfResources,
                        [slabs.len() as u64, self.max_slabs as u64],
                        |&[slabs, max_slabs, ..], f| {
                            write!(
                                f,
                                "signal pool is full: {slabs} slabs of {SLOTS_PER_SLAB} signals \
                                 (max_slabs {max_slabs})"
                            )
                        },
                    ));
                }
                let slab = self.allocate_slab()?;
                #[cfg(feature = "alloc")]
                slabs.push(slab);
                #[cfg(not(feature = "alloc"))]
                if let Err(slab) = slabs.push(slab) {
                    // Unreachable given max_slabs <= FIXED_MAX_SLABS, but never leak.
                    // SAFETY: the chunk was just allocated and never shared.
                    let _ = unsafe { self.platform.free_memory(&slab.chunk) };
                    crate::bail!(Status::OutOfResources, "signal pool is full");
                }
                slabs.len() - 1
            }
        };
        let slab = &mut slabs[index];
        let bit = slab.free.trailing_zeros() as usize;
        slab.free &= !(1u64 << bit);
        let ptr = slab
            .host
            .as_ptr()
            .wrapping_add(bit * 64)
            .cast::<AmdSignal>();
        // SAFETY: the slot lies inside the slab's chunk (bit < 64, 64 * 64 = SLAB_BYTES), is
        // 64-aligned (chunk aligned to 4096) and free, so no one else accesses it; the write
        // happens before the handle is shared (the pool lock, then the Signal's creation).
        unsafe { ptr.write(init) };
        // SAFETY: the slot is live until `release`, which only the owning Signal calls after
        // its last use; after the write above all access is atomic.
        Ok(unsafe { RawSignal::from_ptr(NonNull::new_unchecked(ptr)) })
    }

    fn allocate_slab(&self) -> Result<Slab> {
        let request = MemoryRequest {
            node: self.node,
            kind: MemoryKind::System,
            size_bytes: SLAB_BYTES,
            align_bytes: SLAB_BYTES,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED,
        };
        let chunk = self.platform.allocate_memory(&request)?;
        let host = match chunk.host_ptr {
            Some(h) if chunk.size_bytes >= SLAB_BYTES && (h.as_ptr() as usize) % 64 == 0 => h,
            _ => {
                // SAFETY: the chunk was just allocated by this platform and never shared.
                let _ = unsafe { self.platform.free_memory(&chunk) };
                let host = chunk.host_ptr.map_or(0, |h| h.as_ptr().addr() as u64);
                return Err(Error::lazy(
                    Status::InvalidAllocation,
                    [chunk.gpu_va.get(), host, chunk.size_bytes],
                    |&[gpu_va, host, size_bytes, ..], f| {
                        write!(
                            f,
                            "platform chunk for signals at {} has host_ptr ",
                            GpuVa(gpu_va)
                        )?;
                        show_host_ptr(host, f)?;
                        write!(
                            f,
                            " and size_bytes {size_bytes}; need a 64-aligned host pointer and \
                             {SLAB_BYTES} bytes"
                        )
                    },
                ));
            }
        };
        Ok(Slab {
            chunk,
            host,
            free: u64::MAX,
        })
    }

    /// Gives a slot back (from `Signal`'s drop/destroy).
    pub(super) fn release(&self, raw: RawSignal) {
        // Mark the slot INVALID so a stale handle is recognisable.
        raw.kind().store(AMD_SIGNAL_KIND_INVALID, Ordering::Release);
        let addr = raw.as_ptr() as usize;
        let mut slabs = self.slabs.lock();
        for slab in slabs.iter_mut() {
            if let Some(slot) = slot_of(slab.host.as_ptr() as usize, addr) {
                slab.free |= 1u64 << slot;
                return;
            }
        }
    }
}

/// Frees the chunk of a signal made by [`Signal::in_chunk`], at its destruction (the signal's
/// last use of the slot).
pub(super) fn free_own_chunk<P: Platform + ?Sized>(
    platform: &P,
    chunk: &MemoryChunk,
) -> Result<()> {
    // SAFETY: only `Signal::release` calls this, once, for the chunk `in_chunk` was given,
    // whose contract makes it the signal's alone; the slot is not used after.
    unsafe { platform.free_memory(chunk) }
}

impl<H: PlatformRef> Signal<H> {
    /// A user signal (no event) whose `amd_signal_t` is the first 64 bytes of `chunk`, a
    /// chunk of its own: an IPC signal (`hsa_amd_signal_create` with `HSA_AMD_SIGNAL_IPC`,
    /// whose memory another process imports, or `hsa_amd_ipc_signal_attach`, over the memory
    /// imported). With `initial` the slot is written afresh (kind `AMD_SIGNAL_KIND_USER`, that
    /// value); without, it is taken as it is (another process's signal) and must hold a user
    /// signal. Destroying the signal frees the chunk ([`Platform::free_memory`]); the slot is
    /// not marked invalid, since another process may still use it.
    ///
    /// # Safety
    /// `chunk` was returned by `platform`'s `allocate_memory` or `import_memory`, is live,
    /// and nothing else uses or frees it from now on; its memory may be written concurrently
    /// only atomically (by other processes' signals over the same memory).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for a chunk without a 64-aligned host pointer or smaller
    /// than 64 bytes; `Status::InvalidArgument` when `initial` is `None` and the slot does not
    /// hold a user signal (`kind` is not `AMD_SIGNAL_KIND_USER`). The chunk is not freed on
    /// error.
    pub unsafe fn in_chunk(platform: H, chunk: MemoryChunk, initial: Option<i64>) -> Result<Self> {
        let host = match chunk.host_ptr {
            Some(h) if chunk.size_bytes >= 64 && (h.as_ptr() as usize) % 64 == 0 => h,
            _ => crate::bail!(
                Status::InvalidAllocation,
                "chunk at {} ({} bytes) has no 64-aligned host pointer for a signal",
                chunk.gpu_va,
                chunk.size_bytes
            ),
        };
        let ptr = host.cast::<AmdSignal>();
        match initial {
            // SAFETY: the chunk is the caller's alone, at least 64 bytes and 64-aligned; the
            // write happens before the handle exists.
            Some(value) => unsafe {
                ptr.as_ptr().write(AmdSignal {
                    kind: AMD_SIGNAL_KIND_USER,
                    value,
                    ..AmdSignal::default()
                })
            },
            None => {
                // SAFETY: as below; reading the kind atomically (another process may write
                // the value meanwhile, never the kind of a live signal).
                let raw = unsafe { RawSignal::from_ptr(ptr) };
                let kind = raw.kind().load(Ordering::Acquire);
                if kind != AMD_SIGNAL_KIND_USER {
                    crate::bail!(
                        Status::InvalidArgument,
                        "the memory at {} holds no user signal (kind {kind})",
                        chunk.gpu_va
                    );
                }
            }
        }
        // SAFETY: the slot lives as long as the chunk, which the signal frees only after its
        // last use; every access after the write above is atomic.
        let raw = unsafe { RawSignal::from_ptr(ptr) };
        let mut s = Signal::from_parts(raw, platform, None, None);
        s.chunk = Some(chunk);
        Ok(s)
    }
}

impl<'p, P: Platform> SignalPool<&'p P> {
    /// Creates a user signal with value `initial` (`hsa_signal_create` with no consumers
    /// that need interrupts); the signal borrows the pool. See [`create_in`](Self::create_in).
    ///
    /// # Errors
    /// As for [`create_in`](Self::create_in).
    pub fn create(&'p self, initial: i64) -> Result<Signal<&'p P>> {
        Self::create_in(&self, initial)
    }

    /// Creates an interrupt signal with value `initial`; the signal borrows the pool. See
    /// [`create_interrupt_in`](Self::create_interrupt_in).
    ///
    /// # Errors
    /// As for [`create_interrupt_in`](Self::create_interrupt_in).
    pub fn create_interrupt(&'p self, initial: i64) -> Result<Signal<&'p P>> {
        Self::create_interrupt_in(&self, initial)
    }
}

#[cfg(feature = "alloc")]
impl<P: Platform> SignalPool<Arc<P>> {
    /// Creates a user signal with value `initial` (`hsa_signal_create` with no consumers
    /// that need interrupts); the signal shares the pool. See [`create_in`](Self::create_in).
    ///
    /// # Errors
    /// As for [`create_in`](Self::create_in).
    pub fn create(self: &Arc<Self>, initial: i64) -> Result<Signal<Arc<P>>> {
        Self::create_in(self, initial)
    }

    /// Creates an interrupt signal with value `initial`; the signal shares the pool. See
    /// [`create_interrupt_in`](Self::create_interrupt_in).
    ///
    /// # Errors
    /// As for [`create_interrupt_in`](Self::create_interrupt_in).
    pub fn create_interrupt(self: &Arc<Self>, initial: i64) -> Result<Signal<Arc<P>>> {
        Self::create_interrupt_in(self, initial)
    }
}

impl<H: PlatformRef> Drop for SignalPool<H> {
    fn drop(&mut self) {
        for slab in self.slabs.get_mut().iter() {
            // SAFETY: every Signal holds a handle to the pool (a borrow or a shared count), so
            // none is alive: nothing uses the chunk.
            // A failure loses the chunk (the platform never reuses it).
            let _ = unsafe { self.platform.free_memory(&slab.chunk) };
        }
    }
}

/// The slot index (0..64) of the `amd_signal_t` at host address `addr` in the slab whose
/// first byte is at `base`, or `None` when `addr` is outside that slab (another slab's slot,
/// even one that starts right where this slab ends).
fn slot_of(base: usize, addr: usize) -> Option<u32> {
    let offset = addr.checked_sub(base)?;
    (offset < SLAB_BYTES as usize).then_some((offset / 64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::fake::{FakePlatform, FaultInjector, FaultMethod, Tamper};
    use std::string::ToString;
    use std::sync::Arc;

    #[test]
    fn slots_are_carved_64_per_chunk_and_reused() {
        let plat = FakePlatform::new();
        let pool = SignalPool::new(&plat, NodeId(0));
        let mut v = std::vec::Vec::new();
        for i in 0..65 {
            v.push(pool.create(i).unwrap());
        }
        assert_eq!(pool.slab_count(), 2);
        assert_eq!(pool.live_signals(), 65);
        let h0 = v[0].handle();
        assert_eq!(v[1].handle().0 - h0.0, 64);
        let req = plat.last_memory_request().unwrap();
        assert_eq!(req.size_bytes, 4096);
        assert_eq!(req.kind, MemoryKind::System);
        assert_eq!(
            req.flags,
            MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED
        );
        v.remove(0);
        assert_eq!(pool.live_signals(), 64);
        let again = pool.create(5).unwrap();
        assert_eq!(again.handle(), h0, "the freed slot is reused");
        assert_eq!(again.load(super::super::LoadOrder::Relaxed), 5);
        drop(v);
        drop(again);
        assert_eq!(pool.live_signals(), 0);
        drop(pool);
        assert_eq!(plat.live_chunks().len(), 0);
    }

    #[test]
    fn full_pool_is_out_of_resources() {
        let plat = FakePlatform::new();
        let pool = SignalPool::with_max_slabs(&plat, NodeId(0), 1);
        let v: std::vec::Vec<_> = (0..64).map(|_| pool.create(0).unwrap()).collect();
        let e = pool.create(0).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(e.detail().to_string().contains("max_slabs 1"), "{e}");
        drop(v);
    }

    #[test]
    fn a_slot_belongs_to_the_slab_it_lies_in() {
        let base = 0x10_0000;
        assert_eq!(slot_of(base, base), Some(0));
        assert_eq!(slot_of(base, base + 64), Some(1));
        assert_eq!(slot_of(base, base + 4032), Some(63));
        // The next slab's first slot, right behind this one, and anything before it.
        assert_eq!(slot_of(base, base + 4096), None);
        assert_eq!(slot_of(base, base - 64), None);
    }

    #[test]
    fn platform_errors_pass_through() {
        let plat = FaultInjector::new(FakePlatform::new());
        plat.fail_next(FaultMethod::AllocateMemory, Status::OutOfResources);
        let pool = SignalPool::new(&plat, NodeId(0));
        assert_eq!(pool.create(0).unwrap_err().status(), Status::OutOfResources);
        plat.fail_next(FaultMethod::CreateEvent, Status::OutOfResources);
        assert_eq!(
            pool.create_interrupt(0).unwrap_err().status(),
            Status::OutOfResources
        );
        plat.tamper_next(Tamper::MisalignMailbox);
        let e = pool.create_interrupt(0).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("mailbox"), "{e}");
        assert_eq!(
            plat.inner().live_event_count(),
            0,
            "the event was given back"
        );
        // A slab without host pointer, shorter than 4096 bytes, or not 64-byte aligned.
        for tamper in [
            Tamper::HideHostPtr,
            Tamper::ShortChunk,
            Tamper::MisalignHostPtr,
        ] {
            plat.tamper_next(tamper);
            let e = pool.create(0).unwrap_err();
            assert_eq!(e.status(), Status::InvalidAllocation, "{tamper:?}");
            assert!(
                e.detail()
                    .to_string()
                    .ends_with("need a 64-aligned host pointer and 4096 bytes"),
                "{tamper:?}: {e}"
            );
            assert_eq!(
                plat.inner().live_chunks().len(),
                0,
                "the chunk was given back ({tamper:?})"
            );
        }
        // A slab is one page of system memory the host sees, fine-grained and uncached.
        let s = pool.create_interrupt(0).unwrap();
        let slab = *plat.memory_requests().last().unwrap();
        assert_eq!(
            (slab.kind, slab.size_bytes, slab.align_bytes, slab.flags),
            (
                MemoryKind::System,
                4096,
                4096,
                MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED
            )
        );
        // An interrupt signal's amd_signal_t: kind USER, its event's mailbox and id.
        let raw = s.raw();
        assert_eq!(raw.kind().load(Ordering::Relaxed), AMD_SIGNAL_KIND_USER);
        let ev = s.event().unwrap();
        assert_ne!(raw.event_mailbox_ptr().load(Ordering::Relaxed), 0);
        assert_eq!(raw.event_id(), ev.get());
    }

    /// With shared handles a signal keeps its pool, and the pool its platform: dropping
    /// every other handle leaves the signal usable, and the slab goes back to the platform
    /// with the last signal.
    #[test]
    fn a_shared_pool_lives_as_long_as_its_signals() {
        let plat = Arc::new(FakePlatform::new());
        let pool = Arc::new(SignalPool::new(plat.clone(), NodeId(0)));
        let user = pool.create(3).unwrap();
        let interrupt = pool.create_interrupt(4).unwrap();
        drop(pool);
        assert_eq!(
            plat.live_chunks().len(),
            1,
            "the slab stays while signals live"
        );
        assert_eq!(user.load(super::super::LoadOrder::Acquire), 3);
        // A waiter that may block: the store raises the event through the platform.
        interrupt.event_wait().unwrap().waiters.register();
        interrupt.store(5, super::super::StoreOrder::Release);
        assert_eq!(interrupt.load(super::super::LoadOrder::Acquire), 5);
        assert_eq!(plat.signal_event_count(), 1);
        drop(user);
        assert_eq!(plat.live_chunks().len(), 1);
        drop(interrupt);
        assert_eq!(
            plat.live_chunks().len(),
            0,
            "the last signal freed the pool's slab"
        );
        assert_eq!(plat.live_event_count(), 0);
        assert_eq!(
            Arc::strong_count(&plat),
            1,
            "no handle to the platform is left"
        );
    }
}

#[cfg(test)]
mod in_chunk_tests {
    use super::*;
    use crate::platform::fake::FakePlatform;
    use crate::signal::{LoadOrder, SignalKind};

    #[test]
    fn a_signal_in_its_own_chunk_frees_it_when_destroyed() {
        use crate::platform::{MemoryFlags, MemoryKind, MemoryRequest};
        let plat = FakePlatform::new();
        let request = MemoryRequest {
            node: NodeId(0),
            kind: MemoryKind::System,
            size_bytes: 4096,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::SHAREABLE,
        };
        let chunk = plat.allocate_memory(&request).unwrap();
        // SAFETY: a chunk of this platform, handed to the signal alone.
        let s = unsafe { Signal::in_chunk(&plat, chunk, Some(5)) }.unwrap();
        assert_eq!(s.kind(), SignalKind::User);
        assert_eq!(s.load(LoadOrder::Relaxed), 5);
        assert_eq!(s.handle().0, chunk.host_ptr.unwrap().as_ptr() as u64);
        assert_eq!(s.own_chunk(), Some(&chunk));
        // A second signal over the same memory (what attaching does) sees the first's value.
        let view = plat.allocate_memory(&request).unwrap();
        // SAFETY: as above; the slot is copied in, standing for memory both processes map.
        unsafe {
            view.host_ptr
                .unwrap()
                .cast::<AmdSignal>()
                .as_ptr()
                .write(s.raw().as_ptr().read())
        };
        // SAFETY: as above.
        let attached = unsafe { Signal::in_chunk(&plat, view, None) }.unwrap();
        assert_eq!(attached.load(LoadOrder::Relaxed), 5);
        assert_eq!(plat.live_chunks().len(), 2);
        s.destroy().unwrap();
        attached.destroy().unwrap();
        assert!(plat.live_chunks().is_empty());

        // Memory that holds no user signal cannot be attached; the chunk stays the caller's.
        let zeroed = plat.allocate_memory(&request).unwrap();
        // SAFETY: as above.
        let e = unsafe { Signal::in_chunk(&plat, zeroed, None) }.unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(plat.live_chunks(), [zeroed]);
        // The fake cannot share with other processes (no sharing capability).
        assert!(plat.capabilities().sharing.is_none());
    }
}
