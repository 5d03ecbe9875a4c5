//! Kernel dispatches as real GFX9 machine code: the emulated device reads the kernel
//! descriptor and the code from the GPU's memory and runs them with the wave
//! interpreter ([`crate::gfx9::exec`]), spreading the work-groups of one dispatch over host
//! threads.
//!
//! Every access of the interpreter (descriptor, code, dispatch packet, kernarg segment,
//! buffers) goes through [`GpuMemory`]: every byte it touches must lie in a live allocation
//! mapped to the GPU (an access may cross from one allocation into the adjacent one, as on a
//! GPU, whose VM sees only pages), else it is a [`Status::MemoryFault`] naming the first byte
//! that is not.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::gfx9::exec::{
    check_dispatch, run_workgroups_preemptible, workgroup_total, CodeSource, DecodeCache,
    DeviceCode, DeviceMemory, DispatchState, ExecStats, L2Action, QueueScratch, UserSgprs,
};
use crate::gfx9::hwid::WaveLaunch;
use crate::gfx9::wave::WAVE_SIZE;
use crate::gfx9::Gfx9Target;
use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::packet_processor::DecodedKernelDispatch;
use hsa_core::{error, Error, Status};
use zerocopy::{FromBytes, FromZeros};

use super::l2::{Caching, Placement, L2};
use super::mem::{Backing, Region, RegionFault};
use super::memory::{Allocs, DeviceSpan, MemoryFault};

/// Size of the AMDGPU kernel descriptor, bytes (AMDGPUUsage "Kernel Descriptor").
const DESCRIPTOR_BYTES: usize = 64;

/// Most code bytes either side of the entry point a dispatch may run (the loaded image is one
/// allocation per code object; a larger allocation is cut to this window). Only the pages
/// its waves reach are read ([`DeviceCode`]).
const CODE_WINDOW_BYTES: u64 = 8 << 20;

/// Instructions one wave may execute in [`run_kernel_dispatch`] before the dispatch is
/// aborted as hung (`Status::Exception`): that entry point has no queue to preempt. The
/// emulated amdkfd's own queues set no limit, as a GPU has none: a wave there runs until it
/// ends or its queue is destroyed ([`run`]'s `preempt`).
pub(crate) const MAX_INSTRUCTIONS_PER_WAVE: u64 = 100_000_000;

/// The device's handler of a wave's message interrupt (`s_sendmsg sendmsg(MSG_INTERRUPT)`),
/// given M0[22:0]; called from the threads running work-groups.
pub(crate) type Interrupt<'a> = dyn Fn(u32) + Sync + 'a;

/// Device memory of one GPU as the interpreter sees it: the live allocations mapped to that
/// GPU, every access bounds-checked. Holds a small cache of the allocations hit last (most
/// recent first, [`CACHED_ALLOCS`] of them: a kernel streaming from two buffers into a third
/// also reads its dispatch packet and kernarg segment, five allocations per wave, and hits it
/// on every access); make one per thread.
///
/// It takes the allocation table's read lock only to look an address up (a cache miss), never
/// for the life of a dispatch: a kernel that runs for a long time (one spinning on a flag the
/// host sets) must not keep the host from allocating or freeing memory meanwhile, as on a GPU,
/// which goes on running while amdkfd changes the page tables. The cache holds the allocation's
/// backing (`Arc`), so a region it hands out stays mapped even when the host frees the
/// allocation at the same time; an access after the free may still reach the old memory until
/// the next miss, as a GPU's stale TLB entry would, but never unmapped memory.
pub(crate) struct GpuMemory<'a> {
    allocs: &'a RwLock<Allocs>,
    gpu_id: u32,
    /// Where `s_sendmsg sendmsg(MSG_INTERRUPT)` goes (the device's interrupt handler), if
    /// anywhere.
    interrupt: Option<&'a Interrupt<'a>>,
    /// The allocations hit last, most recent first.
    last: RefCell<[Option<CachedAlloc>; CACHED_ALLOCS]>,
    /// The first access that faulted.
    fault: Cell<Option<MemoryFault>>,
    /// The GPU's L2 when the cache model is on ([`super::l2`]): coarse-grained memory is
    /// reached through it.
    l2: Option<&'a L2>,
}

/// An allocation [`GpuMemory`] looked up: its start and end (device addresses), its whole
/// region, its backing, kept alive while cached, and its placement for the cache model.
type CachedAlloc = (u64, u64, Region, Option<Arc<Backing>>, Placement);

/// Allocations a [`GpuMemory`] keeps looked up. Four were too few for HIP's and our
/// vector_add (AQL ring, kernarg segment, three buffers): every wave missed, and a miss takes
/// the allocation table's read lock, whose counter the worker threads then pass between
/// their cores (15% of the main job's time in `lookup`, under 1% with eight).
const CACHED_ALLOCS: usize = 8;

impl<'a> GpuMemory<'a> {
    /// The memory of GPU `gpu_id` over the allocation table `allocs`.
    pub(crate) fn new(allocs: &'a RwLock<Allocs>, gpu_id: u32) -> GpuMemory<'a> {
        GpuMemory {
            allocs,
            gpu_id,
            interrupt: None,
            last: RefCell::new([const { None }; CACHED_ALLOCS]),
            fault: Cell::new(None),
            l2: None,
        }
    }

    /// This memory with coarse-grained memory reached through `l2` (the cache model), or
    /// directly when `None`.
    pub(crate) fn with_l2(mut self, l2: Option<&'a L2>) -> GpuMemory<'a> {
        self.l2 = l2;
        self
    }

    /// The placement of `addr..addr+len` for the cache model: the one live allocation mapped
    /// to the GPU that holds it, or `None` (the access goes to memory uncached: it crosses
    /// allocations, lies in an SVM range, or faults).
    fn placement(&self, addr: u64, len: u64) -> Option<Placement> {
        let end = addr.checked_add(len)?;
        {
            let last = self.last.borrow();
            if let Some((.., p)) = last
                .iter()
                .flatten()
                .find(|(va, e, ..)| addr >= *va && end <= *e)
            {
                return Some(*p);
            }
        }
        let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
        allocs
            .containing(addr, len)
            .filter(|a| a.mapped.contains(&self.gpu_id))
            .map(|a| Placement::of(a, self.gpu_id))
    }

    /// The buffer object at device address `line` now, for the L2's write-backs and
    /// evictions. It takes the allocation table's read lock itself, under the L2's lock:
    /// always in that order, so a writer queued on the table cannot deadlock the two.
    fn resolve(&self, line: u64) -> Option<Placement> {
        let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
        allocs
            .containing(line, 1)
            .map(|a| Placement::of(a, self.gpu_id))
    }

    /// The cached placement of `addr..addr+len` when the cache model is on and the memory is
    /// cached there.
    fn cached(&self, addr: u64, len: u64) -> Option<(&'a L2, Placement)> {
        let l2 = self.l2?;
        let p = self.placement(addr, len)?;
        (p.caching != Caching::Uncached).then_some((l2, p))
    }

    /// This memory with `interrupt` receiving the waves' message interrupts.
    pub(crate) fn with_interrupt(mut self, interrupt: &'a Interrupt<'a>) -> GpuMemory<'a> {
        self.interrupt = Some(interrupt);
        self
    }

    /// The first access through this memory that faulted, if one did.
    pub(crate) fn fault(&self) -> Option<MemoryFault> {
        self.fault.get()
    }

    fn record_fault(&self, address: u64, what: &str) {
        if self.fault.get().is_none() {
            self.fault.set(Some(MemoryFault::of(address, what)));
        }
    }

    /// The live region of `addr..addr+len`, or `None` (nothing recorded) when it is not
    /// inside one live allocation mapped to the GPU. The hot path of every access: an access
    /// crossing allocations is [`GpuMemory::across`]'s, after this returns `None`.
    fn lookup(&self, addr: u64, len: u64) -> Option<Region> {
        {
            let mut last = self.last.borrow_mut();
            let end = addr.checked_add(len);
            let hit = last.iter().position(|c| {
                c.as_ref()
                    .is_some_and(|(va, e, ..)| addr >= *va && end.is_some_and(|end| end <= *e))
            });
            if let Some(i) = hit {
                // Most recent first: a hit moves up one place.
                if i > 0 {
                    last.swap(i, i - 1);
                }
                let (va, _, r, ..) = last[i.saturating_sub(1)].as_ref().expect("hit");
                if let Some(sub) = r.sub(addr - va, len) {
                    return Some(sub);
                }
            }
        }
        let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
        let region = allocs.device_region(self.gpu_id, addr, len)?;
        if let Some(a) = allocs.containing(addr, len) {
            if let Some(whole) = allocs.device_region(self.gpu_id, a.va, a.size) {
                let mut last = self.last.borrow_mut();
                last.rotate_right(1);
                last[0] = Some((
                    a.va,
                    a.va + a.size,
                    whole,
                    a.backing.clone(),
                    Placement::of(a, self.gpu_id),
                ));
            }
        }
        Some(region)
    }

    /// The live region of `addr..addr+len`, which must lie in one allocation (an atomic's
    /// aligned word; reads and writes may also cross allocations, [`GpuMemory::across`]).
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the access when it is not inside one live allocation
    /// mapped to the GPU.
    fn region(&self, addr: u64, len: u64, what: &str) -> Result<Region, Error> {
        if let Some(r) = self.lookup(addr, len) {
            return Ok(r);
        }
        self.record_fault(addr, what);
        let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
        let why = match allocs.containing(addr, len) {
            Some(_) => "not mapped to",
            None => "outside",
        };
        // Short: the interpreter and the queue add the instruction, lane, kernel and packet
        // in front, and messages hold 192 bytes.
        Err(error!(
            Status::MemoryFault,
            "memory fault: {what} at {addr:#x} ({len} bytes) {why} GPU {:#x}'s memory", self.gpu_id
        ))
    }

    /// The slow path of [`DeviceMemory::read`] and [`DeviceMemory::write`], for an access
    /// `addr..addr+len` that [`GpuMemory::lookup`] found in no one allocation: when every
    /// byte lies in a live allocation mapped to the GPU ([`Allocs::device_span`]: the access
    /// crosses into the adjacent allocation), `copy` moves the bytes of the span, under the
    /// allocation table's read lock; else nothing is copied.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the access and, when it is not `addr`, the first byte
    /// that is in no live allocation or in one not mapped to the GPU; that byte is the
    /// recorded fault's address (as a GPU's VM fault names the faulting page).
    fn across(
        &self,
        addr: u64,
        len: u64,
        what: &str,
        copy: impl FnOnce(&DeviceSpan) -> Result<(), RegionFault>,
    ) -> Result<(), Error> {
        let allocs = self.allocs.read().unwrap_or_else(PoisonError::into_inner);
        let at = match allocs.device_span(self.gpu_id, addr, len, what) {
            Ok(span) => {
                return copy(&span).map_err(|f| self.unmapped(addr, len, addr + f.offset, what));
            }
            Err(fault) => fault.address,
        };
        self.record_fault(at, what);
        let why = match allocs.containing(at, 1) {
            Some(_) => "not mapped to",
            None => "outside",
        };
        // Short, as `region`'s: the instruction, lane, kernel and packet go in front.
        if at == addr {
            return Err(error!(
                Status::MemoryFault,
                "memory fault: {what} at {addr:#x} ({len} bytes) {why} GPU {:#x}'s memory",
                self.gpu_id
            ));
        }
        Err(error!(
            Status::MemoryFault,
            "memory fault: {what} at {addr:#x} ({len} bytes): byte {at:#x} {why} GPU {:#x}'s \
             memory",
            self.gpu_id
        ))
    }

    /// The fault of an access `addr..addr+len` whose byte `at` lies in user memory (a
    /// `USERPTR` buffer object) that its owner unmapped while the GPU still had it mapped:
    /// the GPU takes a VM fault there (amdgpu invalidates a userptr buffer object whose pages
    /// go), recorded for the memory event.
    fn unmapped(&self, addr: u64, len: u64, at: u64, what: &str) -> Error {
        self.record_fault(at, what);
        error!(
            Status::MemoryFault,
            "memory fault: {what} at {addr:#x} ({len} bytes): byte {at:#x} is user memory that \
             was unmapped (GPU {:#x})",
            self.gpu_id
        )
    }

    /// The fault of an atomic of `size` bytes (4 or 8) at `addr`, which is not aligned to
    /// its size, recorded. The emulated device runs atomics on naturally aligned words only
    /// (host atomics need them) and refuses a misaligned one with this memory fault rather
    /// than guess at what a GPU does with it.
    fn misaligned_atomic(&self, addr: u64, size: u64) -> Error {
        self.record_fault(addr, "atomic");
        let kind = if size == 8 { "64-bit atomic" } else { "atomic" };
        error!(
            Status::MemoryFault,
            "memory fault on GPU {:#x}: {kind} at {addr:#x} is not {size}-byte aligned",
            self.gpu_id
        )
    }

    /// The one region holding every access of `n` bytes at `addrs[lane]` for the lanes of
    /// `lanes`, and its device address, or `None` (nothing recorded) when they do not all
    /// fall in one live allocation mapped to the GPU (or no lane is active).
    fn lanes_region(
        &self,
        addrs: &[u64; WAVE_SIZE],
        lanes: u64,
        n: usize,
    ) -> Option<(u64, Region)> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for (lane, &a) in addrs.iter().enumerate() {
            if lanes >> lane & 1 != 0 {
                lo = lo.min(a);
                hi = hi.max(a.checked_add(n as u64)?);
            }
        }
        if lo >= hi {
            return None;
        }
        Some((lo, self.lookup(lo, hi - lo)?))
    }
}

impl DeviceMemory for GpuMemory<'_> {
    /// The device's clock: nanoseconds of `CLOCK_MONOTONIC` (1 GHz), the ticks of its
    /// other timestamps (PM4 and SDMA timestamps, `GET_CLOCK_COUNTERS`).
    fn clock_counter(&self) -> u64 {
        super::monotonic_ns()
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> hsa_core::Result<()> {
        let len = buf.len() as u64;
        if let Some((l2, p)) = self.cached(addr, len) {
            return l2
                .read(&p, addr, buf, &|line| self.resolve(line))
                .map_err(|at| self.unmapped(addr, len, at, "read"));
        }
        match self.lookup(addr, len) {
            Some(r) => r
                .try_read_into(buf)
                .map_err(|f| self.unmapped(addr, len, addr + f.offset, "read")),
            None => self.across(addr, len, "read", |s| s.try_read_into(buf)),
        }
    }

    fn write(&self, addr: u64, data: &[u8]) -> hsa_core::Result<()> {
        let len = data.len() as u64;
        if let Some((l2, p)) = self.cached(addr, len) {
            l2.write(&p, addr, data, &|line| self.resolve(line));
            return Ok(());
        }
        match self.lookup(addr, len) {
            Some(r) => r
                .try_write_from(data)
                .map_err(|f| self.unmapped(addr, len, addr + f.offset, "write")),
            None => self.across(addr, len, "write", |s| s.try_write_from(data)),
        }
    }

    fn read_lanes(
        &self,
        addrs: &[u64; WAVE_SIZE],
        lanes: u64,
        n: usize,
        out: &mut [[u8; 16]; WAVE_SIZE],
    ) -> core::result::Result<(), (usize, Error)> {
        // One lookup when every lane's access is in one allocation; else lane by lane (the
        // first faulting lane's error, as `read` words it). Lane by lane through the L2 when
        // the cache model is on.
        let direct = match self.l2 {
            None => self.lanes_region(addrs, lanes, n),
            Some(_) => None,
        };
        let Some((lo, r)) = direct else {
            for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                self.read(addrs[lane], &mut out[lane][..n])
                    .map_err(|e| (lane, e))?;
            }
            return Ok(());
        };
        for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
            let at = addrs[lane] - lo;
            match n {
                // Constant sizes: the copy is a load, not a call.
                4 => r.try_read_at(at, &mut out[lane][..4]),
                8 => r.try_read_at(at, &mut out[lane][..8]),
                16 => r.try_read_at(at, &mut out[lane][..16]),
                _ => r.try_read_at(at, &mut out[lane][..n]),
            }
            .map_err(|f| {
                (
                    lane,
                    self.unmapped(addrs[lane], n as u64, lo + f.offset, "read"),
                )
            })?;
        }
        Ok(())
    }

    fn write_lanes(
        &self,
        addrs: &[u64; WAVE_SIZE],
        lanes: u64,
        n: usize,
        data: &[[u8; 16]; WAVE_SIZE],
    ) -> core::result::Result<(), (usize, Error)> {
        let direct = match self.l2 {
            None => self.lanes_region(addrs, lanes, n),
            Some(_) => None,
        };
        let Some((lo, r)) = direct else {
            for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                self.write(addrs[lane], &data[lane][..n])
                    .map_err(|e| (lane, e))?;
            }
            return Ok(());
        };
        for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
            let at = addrs[lane] - lo;
            match n {
                4 => r.try_write_at(at, &data[lane][..4]),
                8 => r.try_write_at(at, &data[lane][..8]),
                16 => r.try_write_at(at, &data[lane][..16]),
                _ => r.try_write_at(at, &data[lane][..n]),
            }
            .map_err(|f| {
                (
                    lane,
                    self.unmapped(addrs[lane], n as u64, lo + f.offset, "write"),
                )
            })?;
        }
        Ok(())
    }

    fn atomic_rmw_u32(&self, addr: u64, op: &mut dyn FnMut(u32) -> u32) -> hsa_core::Result<u32> {
        // Alignment first: an aligned atomic lies in one page, so in one allocation (never
        // the crossing path of `read`/`write`), and a misaligned one is refused as such
        // wherever it lies, also across two allocations.
        if addr % 4 != 0 {
            return Err(self.misaligned_atomic(addr, 4));
        }
        let word = self.region(addr, 4, "atomic")?;
        // SeqCst read-modify-write: device atomics are coherent at system scope here. Device
        // memory is little-endian; the word holds the host's native order. With the cache
        // model, at memory after the L2 gave its line up.
        let mut rmw = || word.try_rmw_u32(0, |old| op(u32::from_le(old)).to_le());
        let result = match self.cached(addr, 4) {
            Some((l2, p)) => l2
                .atomic(&p, addr, 4, rmw)
                .map_err(|at| self.unmapped(addr, 4, at, "atomic"))?,
            None => rmw(),
        };
        match result {
            Ok(Some(old)) => Ok(u32::from_le(old)),
            Ok(None) => Err(self.misaligned_atomic(addr, 4)),
            Err(f) => Err(self.unmapped(addr, 4, addr + f.offset, "atomic")),
        }
    }

    fn atomic_rmw_u64(&self, addr: u64, op: &mut dyn FnMut(u64) -> u64) -> hsa_core::Result<u64> {
        // As the u32 form: alignment first.
        if addr % 8 != 0 {
            return Err(self.misaligned_atomic(addr, 8));
        }
        let word = self.region(addr, 8, "atomic")?;
        // As the u32 form: SeqCst, little-endian device memory, at memory.
        let mut rmw = || word.try_rmw_u64(0, |old| op(u64::from_le(old)).to_le());
        let result = match self.cached(addr, 8) {
            Some((l2, p)) => l2
                .atomic(&p, addr, 8, rmw)
                .map_err(|at| self.unmapped(addr, 8, at, "atomic"))?,
            None => rmw(),
        };
        match result {
            Ok(Some(old)) => Ok(u64::from_le(old)),
            Ok(None) => Err(self.misaligned_atomic(addr, 8)),
            Err(f) => Err(self.unmapped(addr, 8, addr + f.offset, "atomic")),
        }
    }

    fn l2_action(&self, action: L2Action) -> hsa_core::Result<()> {
        let Some(l2) = self.l2 else {
            return Ok(());
        };
        match action {
            L2Action::Invalidate => l2.invalidate(),
            L2Action::WriteBack => l2.write_back(&|line| self.resolve(line)),
        }
        Ok(())
    }

    fn message_interrupt(&self, data: u32) -> hsa_core::Result<()> {
        match self.interrupt {
            Some(f) => {
                f(data);
                Ok(())
            }
            None => Err(error!(
                Status::IllegalInstruction,
                "s_sendmsg sendmsg(MSG_INTERRUPT) (M0 data {data:#x}): GPU {:#x} has no \
                 interrupt handler here",
                self.gpu_id
            )),
        }
    }
}

/// How an interpreted dispatch ended, for the caller's fallback decision.
pub(crate) enum Outcome {
    /// It ran to completion.
    Ran(ExecStats),
    /// The interpreter failed with this error (its status is the interpreter's: e.g.
    /// `IllegalInstruction` for an encoding it does not implement), and the access that
    /// faulted when it was a memory fault of a known address.
    Failed(Error, Option<MemoryFault>),
    /// The CP did not launch the dispatch: the queue's scratch (its `amd_queue_t` fields) is
    /// too small for it — the scratch request.
    ScratchRequest(crate::gfx9::exec::ScratchShort),
}

/// What the waves of a dispatch take from the GPU itself rather than from the dispatch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GpuRegs<'a> {
    /// The GPU's `GB_ADDR_CONFIG` ([`DispatchState::gb_addr_config`]).
    pub gb_addr_config: u32,
    /// Whether the GPU runs with SRAM ECC on ([`DispatchState::sramecc`]).
    pub sramecc: bool,
    /// The queue's process's FLAT apertures on the GPU ([`DispatchState::apertures`]).
    pub apertures: crate::gfx9::aperture::Apertures,
    /// The GPU's L2 when the cache model is on: the waves reach coarse-grained memory
    /// through it ([`GpuMemory::with_l2`]).
    pub l2: Option<&'a L2>,
}

/// Runs `dispatch` as machine code for `target` on GPU `gpu_id` with `lds_bytes` of LDS,
/// spreading its work-groups over `threads` host threads. `done` counts the work-groups
/// completed as they complete (a chunk at a time), for a watcher of the device's progress.
///
/// Errors come back as [`Outcome::Failed`]; their messages do not name the kernel (the
/// caller adds it). No wave has an instruction limit; once `preempt` is set (the queue is
/// being destroyed) every wave stops within
/// [`PREEMPT_CHECK_INSTRUCTIONS`](crate::gfx9::exec::PREEMPT_CHECK_INSTRUCTIONS)
/// instructions and the dispatch fails with a `preempted` error. `launch` places the
/// work-groups on the queue's enabled CUs and gives the waves their HW_ID
/// ([`crate::gfx9::hwid`]); `gpu` holds the GPU's `GB_ADDR_CONFIG`, with which the image
/// instructions address swizzled images, and its SRAM ECC mode ([`GpuRegs`]).
///
/// `caches` is the caller's interpreter state, kept from one dispatch to the next
/// ([`Interpreters`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    dispatch: &DecodedKernelDispatch,
    target: Gfx9Target,
    allocs: &RwLock<Allocs>,
    gpu_id: u32,
    lds_bytes: u32,
    threads: usize,
    done: &AtomicU64,
    preempt: &AtomicBool,
    interrupt: &Interrupt<'_>,
    launch: WaveLaunch,
    gpu: GpuRegs<'_>,
    caches: &mut Interpreters,
) -> Outcome {
    let mut scratch = None;
    match run_inner(
        dispatch,
        target,
        allocs,
        gpu_id,
        lds_bytes,
        threads,
        done,
        preempt,
        interrupt,
        launch,
        gpu,
        caches,
        &mut scratch,
    ) {
        Ok(s) => Outcome::Ran(s),
        Err((e, fault)) => match scratch {
            Some(short) => Outcome::ScratchRequest(short),
            None => Outcome::Failed(e, fault),
        },
    }
}

/// What [`run`] keeps from one dispatch to the next for its caller (a queue's CP thread):
/// one [`DecodeCache`] per thread that runs work-groups (added as needed), so each kernel is
/// decoded once rather than once per dispatch and a dispatch allocates no waves (the caches
/// read each code page a dispatch runs from device memory once and check its bytes, so code
/// changed at an address is decoded again).
#[derive(Debug, Default)]
pub(crate) struct Interpreters {
    /// The decode caches, one per worker thread.
    pub(crate) caches: Vec<DecodeCache>,
}

/// An error, with the fault of the memory that failed when it was one.
type Failure = (Error, Option<MemoryFault>);

/// What a dispatch needs before its work-groups run: the kernel descriptor, where its code
/// is, and the interpreter's dispatch state.
struct Prepared {
    descriptor: KernelDescriptor,
    code: DeviceCode,
    state: DispatchState,
}

/// Reads the kernel descriptor at the packet's kernel object, finds the code around its
/// entry point (inside `image(entry, descriptor)`, at most [`CODE_WINDOW_BYTES`] either side;
/// none of it is read here: the interpreter reads the pages waves reach), and builds the
/// dispatch state; checks the group segment against `lds_bytes`.
fn prepare(
    dispatch: &DecodedKernelDispatch,
    memory: &dyn DeviceMemory,
    lds_bytes: u32,
    image: impl FnOnce(u64, &KernelDescriptor) -> Result<(u64, u64), Error>,
) -> Result<Prepared, Error> {
    let object = dispatch.kernel_object.0;
    let mut raw = [0u8; DESCRIPTOR_BYTES];
    memory
        .read(object, &mut raw)
        .map_err(|e| error!(e.status(), "kernel descriptor: {}", e.detail()))?;
    let descriptor = KernelDescriptor::read_from_bytes(&raw)
        .map_err(|_| error!(Status::Error, "kernel descriptor is not 64 bytes"))?;
    let entry = object.wrapping_add_signed(descriptor.kernel_code_entry_byte_offset);
    let (image_start, image_end) = image(entry, &descriptor)?;
    let start = image_start.max(entry.saturating_sub(CODE_WINDOW_BYTES));
    let end = image_end.min(entry.saturating_add(CODE_WINDOW_BYTES));
    let code = DeviceCode {
        base_address: start,
        len: end.saturating_sub(start),
        entry_address: entry,
    };
    // The runtime puts the kernel's whole group segment size (the descriptor's fixed size
    // plus any dynamic LDS) in the packet; a packet that says less gets the fixed size.
    let group = dispatch
        .group_segment_size_bytes
        .max(descriptor.group_segment_fixed_size);
    if group > lds_bytes {
        // The CP's invalid-group-memory queue error (code 4), INVALID_ALLOCATION in ROCR 5.2
        // (amd_aql_queue.cpp).
        return Err(error!(
            Status::InvalidAllocation,
            "group_segment_size {group} (packet {}, descriptor {}) exceeds the GPU's LDS of \
             {lds_bytes} bytes",
            dispatch.group_segment_size_bytes,
            descriptor.group_segment_fixed_size
        ));
    }
    // The CP takes the queue's scratch from its amd_queue_t (ROCR's InitScratchSRD or
    // hsa-core's queue creation filled it) at each dispatch, as the runtime may grow it.
    let mut amd_queue = [0u8; 256];
    memory
        .read(dispatch.queue_address.0, &mut amd_queue)
        .map_err(|e| error!(e.status(), "the queue's amd_queue_t: {}", e.detail()))?;
    let state = DispatchState {
        scratch: QueueScratch::from_amd_queue(&amd_queue),
        grid_size: dispatch.grid_size,
        workgroup_size: dispatch.workgroup_size,
        dispatch_packet_address: dispatch.packet_address.0,
        kernarg_address: dispatch.kernarg_address.0,
        queue_address: dispatch.queue_address.0,
        dispatch_id: dispatch.dispatch_id,
        group_segment_size: group,
        private_segment_size: dispatch.private_segment_size_bytes,
        max_instructions_per_wave: MAX_INSTRUCTIONS_PER_WAVE,
        launch: WaveLaunch::SINGLE_CU,
        gb_addr_config: 0,
        sramecc: false,
        // The GPU's, set with `gb_addr_config` and `sramecc` when the dispatch runs.
        apertures: crate::gfx9::aperture::Apertures::AMDKFD_GFX9,
        user_sgprs: UserSgprs::FromDescriptor,
        check_vgpr_allocation: false,
    };
    Ok(Prepared {
        descriptor,
        code,
        state,
    })
}

/// Runs a kernel dispatch packet's kernel as GFX9 machine code for `target` over `memory`, on
/// the calling thread: the emulated device's shader engine for a command processor that is
/// not [`EmulatedKfd`](super::EmulatedKfd)'s, such as one serving a queue in a virtual
/// machine's RAM. It reads the kernel descriptor at `dispatch.kernel_object`, then runs
/// every work-group with `lds_bytes` of LDS. The kernel's code starts at its entry point
/// (`kernel_object + kernel_code_entry_byte_offset`) and is `max_code_bytes` long, or ends at
/// `memory_end` (the exclusive end of the memory the code lies in) when that comes first — a
/// branch past it is an illegal instruction; of it, only the pages (4 KiB) waves reach are
/// read, each once.
///
/// The packet was decoded and validated by the core's packet processor
/// ([`hsa_core::packet_processor::PacketProcessor`]): this is what a
/// [`ProcessorHost::execute_kernel`](hsa_core::packet_processor::ProcessorHost::execute_kernel)
/// calls. Its `packet_address` and `queue_address` must be device addresses (the kernel's
/// dispatch and queue pointers). There is no GPU register file here: swizzled images are
/// addressed with a `GB_ADDR_CONFIG` of 0 (one pipe, one bank: no pipe/bank XOR), the value
/// a runtime that lays images out for this device must hand addrlib too.
///
/// # Errors
/// - [`Status::MemoryFault`] from `memory` for the descriptor, the code or a kernel access
///   outside it, naming the address; or an entry point at or past `memory_end`;
/// - [`Status::InvalidAllocation`] when the group segment exceeds `lds_bytes` (the CP's
///   invalid-group-memory queue error);
/// - as [`crate::gfx9::exec::run_dispatch`]: [`Status::InvalidArgument`] (a dispatch it cannot
///   run), [`Status::OutOfResources`] (the CP's scratch request: the queue's `amd_queue_t`
///   scratch, read at `dispatch.queue_address`, is too small for the dispatch's private
///   segment), [`Status::IllegalInstruction`], [`Status::Exception`] (a wave ran 100 million
///   instructions).
pub fn run_kernel_dispatch(
    dispatch: &DecodedKernelDispatch,
    target: Gfx9Target,
    memory: &dyn DeviceMemory,
    memory_end: u64,
    max_code_bytes: u64,
    lds_bytes: u32,
) -> Result<ExecStats, Error> {
    let p = prepare(dispatch, memory, lds_bytes, |entry, _| {
        if entry >= memory_end {
            return Err(error!(
                Status::MemoryFault,
                "kernel code entry {entry:#x} (kernel object {:#x}) is at or past the end of \
                 the memory {memory_end:#x}",
                dispatch.kernel_object.0
            ));
        }
        Ok((entry, memory_end.min(entry.saturating_add(max_code_bytes))))
    })?;
    check_dispatch(&p.descriptor, &p.state)?;
    let mut stats = ExecStats::default();
    // A cache for this dispatch alone: each page the waves reach is read once.
    run_workgroups_preemptible(
        CodeSource::Device(p.code),
        &p.descriptor,
        target,
        &p.state,
        memory,
        0..workgroup_total(&p.state),
        &mut stats,
        &AtomicBool::new(false),
        &mut DecodeCache::new(),
    )?;
    Ok(stats)
}

#[allow(clippy::too_many_arguments)]
fn run_inner(
    dispatch: &DecodedKernelDispatch,
    target: Gfx9Target,
    allocs: &RwLock<Allocs>,
    gpu_id: u32,
    lds_bytes: u32,
    threads: usize,
    done: &AtomicU64,
    preempt: &AtomicBool,
    interrupt: &Interrupt<'_>,
    launch: WaveLaunch,
    gpu: GpuRegs<'_>,
    kept: &mut Interpreters,
    scratch: &mut Option<crate::gfx9::exec::ScratchShort>,
) -> Result<ExecStats, Failure> {
    let memory = GpuMemory::new(allocs, gpu_id).with_interrupt(interrupt);
    // Errors before the work-groups run: the fault, if any, is the main memory's.
    let setup = |e: Error| (e, memory.fault());
    let object = dispatch.kernel_object.0;
    let prepared = prepare(dispatch, &memory, lds_bytes, |entry, descriptor| {
        allocs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .containing(entry, 4)
            .filter(|a| a.mapped.contains(&gpu_id))
            .map(|a| (a.va, a.va + a.size))
            .ok_or_else(|| {
                memory.record_fault(entry, "execute");
                error!(
                    Status::MemoryFault,
                    "memory fault on GPU {gpu_id:#x}: kernel code entry {entry:#x} (kernel \
                     object {object:#x} + kernel_code_entry_byte_offset {:#x}) is not inside \
                     one live allocation mapped to this GPU",
                    descriptor.kernel_code_entry_byte_offset
                )
            })
    })
    .map_err(setup)?;
    drop(memory);
    run_prepared(
        prepared, target, allocs, gpu_id, threads, done, preempt, interrupt, launch, gpu, kept,
        scratch,
    )
}

/// Runs a dispatch whose launch state is ready — from an AQL packet ([`run`]) or from a PM4
/// queue's compute registers ([`run_registers`]) —: the scratch request, the dispatch
/// checks, then its work-groups over `threads` host threads (see [`run`]).
#[allow(clippy::too_many_arguments)]
fn run_prepared(
    prepared: Prepared,
    target: Gfx9Target,
    allocs: &RwLock<Allocs>,
    gpu_id: u32,
    threads: usize,
    done: &AtomicU64,
    preempt: &AtomicBool,
    interrupt: &Interrupt<'_>,
    launch: WaveLaunch,
    gpu: GpuRegs<'_>,
    kept: &mut Interpreters,
    scratch: &mut Option<crate::gfx9::exec::ScratchShort>,
) -> Result<ExecStats, Failure> {
    let memory = GpuMemory::new(allocs, gpu_id)
        .with_interrupt(interrupt)
        .with_l2(gpu.l2);
    let setup = |e: Error| (e, memory.fault());
    let code = CodeSource::Device(prepared.code);
    let descriptor = prepared.descriptor;
    let state = DispatchState {
        max_instructions_per_wave: u64::MAX,
        launch,
        gb_addr_config: gpu.gb_addr_config,
        sramecc: gpu.sramecc,
        apertures: gpu.apertures,
        ..prepared.state
    };
    // The CP's scratch request, typed, before anything else it refuses.
    if let Some(short) = crate::gfx9::exec::scratch_request(&descriptor, &state) {
        *scratch = Some(short);
        return Err(setup(short.error()));
    }
    check_dispatch(&descriptor, &state).map_err(setup)?;
    let total = workgroup_total(&state);
    let mut workers = (threads.max(1) as u64).min(total).max(1) as usize;
    // Each worker's waves take their own scratch slots (worker k from k × waves per group):
    // no more workers than the queue's COMPUTE_TMPRING_SIZE.WAVES hold, as the SPI launches
    // no more scratch waves than there are slots (check_dispatch saw one group's fit).
    let wave_slots = u64::from(
        state
            .workgroup_size
            .iter()
            .map(|&d| u32::from(d))
            .product::<u32>(),
    )
    .div_ceil(WAVE_SIZE as u64)
    .max(1);
    if descriptor
        .private_segment_fixed_size
        .max(state.private_segment_size)
        > 0
    {
        workers = workers.min((u64::from(state.scratch.waves()) / wave_slots).max(1) as usize);
    }
    let slot_of = |worker: usize| (worker as u64 * wave_slots) as u32;
    // Each thread has its own cache, kept over its chunks and the caller's dispatches; the
    // caches read each page of `code` they run once per dispatch, through the thread's
    // memory, and validate their pages against it.
    let caches = &mut kept.caches;
    if caches.len() < workers {
        caches.resize_with(workers, DecodeCache::new);
    }
    for cache in &mut caches[..workers] {
        cache.begin_dispatch();
    }
    let run_range = |mem: &GpuMemory<'_>,
                     cache: &mut DecodeCache,
                     worker: usize,
                     range: Range<u64>,
                     stats: &mut ExecStats| {
        let mut state = state;
        state.scratch.first_slot = slot_of(worker);
        let r = run_workgroups_preemptible(
            code,
            &descriptor,
            target,
            &state,
            mem,
            range,
            stats,
            preempt,
            cache,
        );
        done.fetch_add(stats.workgroups, Ordering::Relaxed);
        r
    };
    // Workers take chunks of consecutive work-groups in increasing order. After an error no
    // new chunk starts, but every chunk handed out before it runs to its end or its first
    // error, so the error reported (the one at the lowest work-group) does not depend on
    // timing.
    let chunk = (total / (workers as u64 * 8)).clamp(1, 4096);
    if workers == 1 {
        let mut stats = ExecStats::default();
        let cache = &mut caches[0];
        let mut first = 0;
        while first < total {
            let mut part = ExecStats::default();
            let r = run_range(
                &memory,
                cache,
                0,
                first..(first + chunk).min(total),
                &mut part,
            );
            stats.add(&part);
            r.map_err(setup)?;
            first += chunk;
        }
        return Ok(stats);
    }
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<(ExecStats, Option<(u64, Failure)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = caches[..workers]
            .iter_mut()
            .enumerate()
            .map(|(worker, cache)| {
                let (run_range, next, failed) = (&run_range, &next, &failed);
                s.spawn(move || {
                    let mem = GpuMemory::new(allocs, gpu_id)
                        .with_interrupt(interrupt)
                        .with_l2(gpu.l2);
                    let mut stats = ExecStats::default();
                    while !failed.load(Ordering::Relaxed) {
                        let first = next.fetch_add(chunk, Ordering::Relaxed);
                        if first >= total {
                            break;
                        }
                        let range = first..(first + chunk).min(total);
                        let mut part = ExecStats::default();
                        let r = run_range(&mem, cache, worker, range, &mut part);
                        stats.add(&part);
                        if let Err(e) = r {
                            failed.store(true, Ordering::Relaxed);
                            return (stats, Some((first + part.workgroups, (e, mem.fault()))));
                        }
                    }
                    (stats, None)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    (
                        ExecStats::default(),
                        Some((
                            0,
                            (
                                error!(Status::Error, "an interpreter worker thread panicked"),
                                None,
                            ),
                        )),
                    )
                })
            })
            .collect()
    });
    let mut stats = ExecStats::default();
    let mut first_error: Option<(u64, Failure)> = None;
    for (s, e) in results {
        stats.add(&s);
        if let Some((at, e)) = e {
            if first_error.as_ref().is_none_or(|(f, _)| at < *f) {
                first_error = Some((at, e));
            }
        }
    }
    match first_error {
        Some((_, e)) => Err(e),
        None => Ok(stats),
    }
}

/// Runs a PM4 queue's `DISPATCH_DIRECT` (`dispatch`, from the queue's compute registers) as
/// machine code for `target` on GPU `gpu_id`, as [`run`] does an AQL packet: the same
/// workers, caches and checks, with the waves' launch state from the registers rather than
/// from an AQL packet and kernel descriptor. The SPI's view: the code starts at
/// `COMPUTE_PGM` (inside one allocation mapped to the GPU), `RSRC1`/`RSRC2`/`RSRC3` are the
/// descriptor's words, the user SGPRs are `COMPUTE_USER_DATA_*` ([`UserSgprs::Registers`]),
/// there is no dispatch packet, queue or kernarg pointer, and scratch is
/// `COMPUTE_DISPATCH_SCRATCH_BASE` with `COMPUTE_TMPRING_SIZE`'s slots. A kernel that
/// enables scratch (`RSRC2.SCRATCH_EN`) takes each wave's whole `WAVESIZE` slot; a
/// work-group whose waves do not fit in `WAVES` slots is refused
/// ([`Outcome::ScratchRequest`], which the caller turns into a queue error: a PM4 queue has
/// no scratch request).
///
/// # Errors
/// As [`Outcome::Failed`]: `MemoryFault` for code outside the GPU's memory,
/// `InvalidAllocation` for LDS beyond `lds_bytes`, and what the interpreter reports.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_registers(
    dispatch: &super::pm4::ComputeDispatch,
    target: Gfx9Target,
    allocs: &RwLock<Allocs>,
    gpu_id: u32,
    lds_bytes: u32,
    threads: usize,
    done: &AtomicU64,
    preempt: &AtomicBool,
    interrupt: &Interrupt<'_>,
    launch: WaveLaunch,
    gpu: GpuRegs<'_>,
    caches: &mut Interpreters,
) -> Outcome {
    let entry = dispatch.entry;
    let image = allocs
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .containing(entry, 4)
        .filter(|a| a.mapped.contains(&gpu_id))
        .map(|a| (a.va, a.va + a.size));
    let Some((image_start, image_end)) = image else {
        return Outcome::Failed(
            error!(
                Status::MemoryFault,
                "memory fault on GPU {gpu_id:#x}: COMPUTE_PGM {entry:#x} is not inside one \
                 live allocation mapped to this GPU"
            ),
            Some(MemoryFault::of(entry, "execute")),
        );
    };
    if dispatch.lds_bytes > lds_bytes {
        return Outcome::Failed(
            error!(
                Status::InvalidAllocation,
                "COMPUTE_PGM_RSRC2.LDS_SIZE asks {} bytes; the GPU's LDS is {lds_bytes} bytes",
                dispatch.lds_bytes
            ),
            None,
        );
    }
    let mut descriptor = KernelDescriptor::new_zeroed();
    [
        descriptor.compute_pgm_rsrc1,
        descriptor.compute_pgm_rsrc2,
        descriptor.compute_pgm_rsrc3,
    ] = dispatch.rsrc;
    descriptor.group_segment_fixed_size = dispatch.lds_bytes;
    let start = image_start.max(entry.saturating_sub(CODE_WINDOW_BYTES));
    let end = image_end.min(entry.saturating_add(CODE_WINDOW_BYTES));
    let scratch = QueueScratch {
        resource_descriptor: [0; 4],
        backing_memory_location: dispatch.scratch_base,
        backing_memory_byte_size: 0,
        compute_tmpring_size: dispatch.tmpring_size,
        first_slot: 0,
    };
    let scratch = QueueScratch {
        backing_memory_byte_size: u64::from(scratch.waves()) * scratch.wave_bytes(),
        ..scratch
    };
    // SCRATCH_EN: each lane may use its share of the wave's slot.
    let private_segment_size = if dispatch.rsrc[1] & 1 != 0 {
        (scratch.wave_bytes() / WAVE_SIZE as u64) as u32
    } else {
        0
    };
    let prepared = Prepared {
        descriptor,
        code: DeviceCode {
            base_address: start,
            len: end.saturating_sub(start),
            entry_address: entry,
        },
        state: DispatchState {
            scratch,
            grid_size: dispatch.grid_size,
            workgroup_size: dispatch.workgroup_size,
            dispatch_packet_address: 0,
            kernarg_address: 0,
            queue_address: 0,
            dispatch_id: 0,
            group_segment_size: dispatch.lds_bytes,
            private_segment_size,
            max_instructions_per_wave: MAX_INSTRUCTIONS_PER_WAVE,
            launch,
            gb_addr_config: gpu.gb_addr_config,
            sramecc: gpu.sramecc,
            apertures: gpu.apertures,
            user_sgprs: UserSgprs::Registers(dispatch.user_data),
            check_vgpr_allocation: true,
        },
    };
    let mut short = None;
    match run_prepared(
        prepared, target, allocs, gpu_id, threads, done, preempt, interrupt, launch, gpu, caches,
        &mut short,
    ) {
        Ok(s) => Outcome::Ran(s),
        Err((e, fault)) => match short {
            Some(short) => Outcome::ScratchRequest(short),
            None => Outcome::Failed(e, fault),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::memory::{Alloc, Kind};
    use super::*;

    fn alloc(va: u64, handle: u64, mapped_to: Option<u32>) -> Alloc {
        let b = Arc::new(Backing::new("t", 4096).unwrap());
        Alloc {
            va,
            size: 4096,
            gpu_id: 1,
            handle,
            mmap_offset: handle << 24,
            kind: Kind::Gtt,
            region: b.region(),
            backing: Some(b),
            mapped: mapped_to.into_iter().collect(),
            pins: 0,
            coarse: false,
        }
    }

    /// Two adjacent mapped allocations and one not mapped: reads inside one succeed (also
    /// after the cache holds the other), a read across the boundary of the two mapped ones
    /// succeeds (the next test has more of those), a read into the unmapped one or outside
    /// every allocation is a memory fault naming the address; atomics add and check
    /// alignment, also a misaligned one crossing into the next allocation.
    #[test]
    fn gpu_memory_checks_every_access() {
        let mut allocs = Allocs::default();
        allocs.insert(alloc(0x10_0000, 1, Some(1)));
        allocs.insert(alloc(0x10_1000, 2, Some(1)));
        allocs.insert(alloc(0x20_0000, 3, None));
        let allocs = RwLock::new(allocs);
        let m = GpuMemory::new(&allocs, 1);
        m.write(0x10_0ffc, &7u32.to_le_bytes()).unwrap();
        m.write(0x10_1000, &9u32.to_le_bytes()).unwrap();
        let mut b = [0u8; 4];
        m.read(0x10_0ffc, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), 7);
        let mut b8 = [0u8; 8];
        m.read(0x10_0ffc, &mut b8).unwrap();
        assert_eq!(u64::from_le_bytes(b8), 9 << 32 | 7, "across the boundary");
        assert_eq!(m.fault(), None);
        let e = m.read(0x20_0000, &mut b).unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(
            e.detail(),
            "memory fault: read at 0x200000 (4 bytes) not mapped to GPU 0x1's memory"
        );
        // The first fault is what the device's memory event reports.
        let first = Some(MemoryFault {
            address: 0x20_0000,
            write: false,
        });
        assert_eq!(m.fault(), first);
        let e = m.write(0x30_0000, &[1]).unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(
            e.detail(),
            "memory fault: write at 0x300000 (1 bytes) outside GPU 0x1's memory"
        );
        assert_eq!(m.fault(), first, "the first fault stays");
        let w = GpuMemory::new(&allocs, 1);
        w.write(0x30_0000, &[1]).unwrap_err();
        assert_eq!(
            w.fault(),
            Some(MemoryFault {
                address: 0x30_0000,
                write: true
            })
        );
        assert_eq!(m.atomic_rmw_u32(0x10_1000, &mut |v| v + 5).unwrap(), 9);
        m.read(0x10_1000, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), 14);
        let e = m.atomic_rmw_u32(0x10_1002, &mut |v| v).unwrap_err();
        assert!(e.detail().contains("not 4-byte aligned"), "{}", e.detail());
        // 64-bit atomics (the `_x2`/`_f64` FLAT atomics): 8-aligned, else a fault.
        m.write(0x10_1008, &u64::MAX.to_le_bytes()).unwrap();
        assert_eq!(
            m.atomic_rmw_u64(0x10_1008, &mut |v| v.wrapping_add(2))
                .unwrap(),
            u64::MAX
        );
        m.read(0x10_1008, &mut b8).unwrap();
        assert_eq!(u64::from_le_bytes(b8), 1);
        let e = m.atomic_rmw_u64(0x10_1004, &mut |v| v).unwrap_err();
        assert!(e.detail().contains("not 8-byte aligned"), "{}", e.detail());
        // A misaligned atomic across the two allocations is refused as misaligned (its
        // address recorded), and changes nothing.
        let a = GpuMemory::new(&allocs, 1);
        let e = a.atomic_rmw_u32(0x10_0ffe, &mut |v| v + 1).unwrap_err();
        assert_eq!(
            e.detail(),
            "memory fault on GPU 0x1: atomic at 0x100ffe is not 4-byte aligned"
        );
        let e = a.atomic_rmw_u64(0x10_0ffc, &mut |v| v + 1).unwrap_err();
        assert_eq!(
            e.detail(),
            "memory fault on GPU 0x1: 64-bit atomic at 0x100ffc is not 8-byte aligned"
        );
        assert_eq!(
            a.fault(),
            Some(MemoryFault {
                address: 0x10_0ffe,
                write: true
            })
        );
        m.read(0x10_0ffc, &mut b8).unwrap();
        assert_eq!(u64::from_le_bytes(b8), 14 << 32 | 7);
    }

    /// Loads and stores of 4, 8 and 16 bytes (`read`/`write`, and wave-wide through
    /// `read_lanes`/`write_lanes`) that straddle two adjacent mapped allocations move the
    /// right bytes of each allocation's own memory, whatever the cache holds; one straddling
    /// a mapped allocation and a hole, or a mapped one and the adjacent allocation that is
    /// not mapped to this GPU, is a memory fault naming the first byte past the mapped one
    /// (the recorded fault's address too) and writes nothing.
    #[test]
    fn gpu_memory_accesses_straddle_adjacent_allocations() {
        let mut allocs = Allocs::default();
        allocs.insert(alloc(0x10_0000, 1, Some(1)));
        allocs.insert(alloc(0x10_1000, 2, Some(1)));
        allocs.insert(alloc(0x10_2000, 3, Some(2)));
        allocs.insert(alloc(0x40_0000, 4, Some(1)));
        let allocs = RwLock::new(allocs);
        // An allocation's own memory (the host's view of its backing), bypassing GpuMemory.
        let host = |va: u64| {
            let a = allocs.read().unwrap();
            let r = a.containing(va, 4096).unwrap().region;
            let mut v = vec![0u8; 4096];
            r.read_into(&mut v);
            v
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in [4usize, 8, 16] {
            for before in 1..n {
                let at = 0x10_1000 - before as u64;
                let data: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                // A fresh memory (nothing cached) and one that holds both allocations.
                let warm = GpuMemory::new(&allocs, 1);
                warm.read(0x10_0000, &mut [0u8; 4]).unwrap();
                warm.read(0x10_1000, &mut [0u8; 4]).unwrap();
                for m in [GpuMemory::new(&allocs, 1), warm] {
                    m.write(at, &data).unwrap();
                    assert_eq!(
                        host(0x10_0000)[4096 - before..],
                        data[..before],
                        "{n} {before}"
                    );
                    assert_eq!(
                        host(0x10_1000)[..n - before],
                        data[before..],
                        "{n} {before}"
                    );
                    let mut back = vec![0u8; n];
                    m.read(at, &mut back).unwrap();
                    assert_eq!(back, data);
                    assert_eq!(m.fault(), None);
                }
            }
            // A wave whose lanes straddle the boundary at every offset, with lanes inside
            // either allocation: the slow path, lane by lane.
            let addrs: [u64; WAVE_SIZE] =
                core::array::from_fn(|l| 0x10_1000 - n as u64 + (l as u64 * 3) % (2 * n as u64));
            let data: [[u8; 16]; WAVE_SIZE] =
                core::array::from_fn(|_| core::array::from_fn(|_| next() as u8));
            let lanes = 0xffff_0000_ffff_ffffu64;
            let m = GpuMemory::new(&allocs, 1);
            // One lane at a time, so each lane's bytes can be checked before the next.
            for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                m.write_lanes(&addrs, 1 << lane, n, &data).unwrap();
                let (lo, hi) = (host(0x10_0000), host(0x10_1000));
                let both = [&lo[4096 - 2 * n..], &hi[..2 * n]].concat();
                let o = (addrs[lane] - (0x10_1000 - 2 * n as u64)) as usize;
                assert_eq!(both[o..o + n], data[lane][..n], "{n} lane {lane}");
            }
            m.write_lanes(&addrs, lanes, n, &data).unwrap();
            let mut out = [[0u8; 16]; WAVE_SIZE];
            m.read_lanes(&addrs, lanes, n, &mut out).unwrap();
            // Lanes overlap: each reads what the last lane writing its bytes wrote.
            let (lo, hi) = (host(0x10_0000), host(0x10_1000));
            let both = [&lo[4096 - 2 * n..], &hi[..2 * n]].concat();
            for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                let o = (addrs[lane] - (0x10_1000 - 2 * n as u64)) as usize;
                assert_eq!(out[lane][..n], both[o..o + n], "{n} lane {lane}");
            }
            assert_eq!(m.fault(), None);
        }

        // Into a hole (past 0x40_0000's allocation) and into the allocation mapped only to
        // GPU 2: a fault at the first unreachable byte, nothing written.
        for (at, first, why) in [
            (0x40_0ffcu64, 0x40_1000u64, "outside"),
            (0x10_1ffc, 0x10_2000, "not mapped to"),
        ] {
            for n in [8usize, 16] {
                let mine = at & !0xfff;
                let before = host(mine);
                let m = GpuMemory::new(&allocs, 1);
                let e = m.write(at, &[0xa5; 16][..n]).unwrap_err();
                assert_eq!(e.status(), Status::MemoryFault);
                assert_eq!(
                    e.detail(),
                    format!(
                        "memory fault: write at {at:#x} ({n} bytes): byte {first:#x} {why} GPU \
                         0x1's memory"
                    )
                );
                assert_eq!(
                    m.fault(),
                    Some(MemoryFault {
                        address: first,
                        write: true
                    })
                );
                assert!(host(mine) == before, "{at:#x}: nothing written");
                let r = GpuMemory::new(&allocs, 1);
                let mut b = [0u8; 16];
                let e = r.read(at, &mut b[..n]).unwrap_err();
                assert!(
                    e.detail().contains(&format!("byte {first:#x}")),
                    "{}",
                    e.detail()
                );
                assert_eq!(
                    r.fault(),
                    Some(MemoryFault {
                        address: first,
                        write: false
                    })
                );
                // Wave-wide: the straddling lane faults, the lanes before it are done.
                let addrs: [u64; WAVE_SIZE] = core::array::from_fn(|l| mine + 16 * l as u64);
                let mut addrs = addrs;
                addrs[5] = at;
                let w = GpuMemory::new(&allocs, 1);
                let (lane, e) = w
                    .write_lanes(&addrs, u64::MAX, n, &[[0x5a; 16]; WAVE_SIZE])
                    .unwrap_err();
                assert_eq!(lane, 5);
                assert!(
                    e.detail().contains(&format!("byte {first:#x}")),
                    "{}",
                    e.detail()
                );
                assert_eq!(w.fault().map(|f| f.address), Some(first));
                let after = host(mine);
                for l in 0..5 {
                    assert_eq!(after[16 * l..16 * l + n], [0x5a; 16][..n], "lane {l}");
                }
                assert_eq!(
                    after[16 * 5..],
                    before[16 * 5..],
                    "{at:#x}: lanes 5.. not written"
                );
                // Put the allocation back as it was.
                let p = GpuMemory::new(&allocs, 1);
                p.write(mine, &before).unwrap();
            }
        }
    }

    /// Wave-wide lane accesses (`read_lanes`/`write_lanes`, one lookup when all lanes share
    /// an allocation) give what lane-by-lane `read`/`write` give: the bytes, the first
    /// faulting lane with the same message, the lanes before it done, and the same first
    /// fault recorded; lanes across two adjacent allocations still work lane by lane.
    #[test]
    fn gpu_memory_lane_accesses_match_lane_by_lane() {
        let mut allocs = Allocs::default();
        allocs.insert(alloc(0x10_0000, 1, Some(1)));
        allocs.insert(alloc(0x10_1000, 2, Some(1)));
        allocs.insert(alloc(0x20_0000, 3, None));
        let allocs = RwLock::new(allocs);
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            let (batched, single) = (GpuMemory::new(&allocs, 1), GpuMemory::new(&allocs, 1));
            let n = [4, 8, 12, 16][round % 4];
            let lanes = if round % 3 == 0 { u64::MAX } else { next() };
            let addrs: [u64; WAVE_SIZE] = core::array::from_fn(|_| {
                let r = next();
                match (round / 4) % 5 {
                    // All in one allocation.
                    0 | 1 => 0x10_0000 + r % (4096 - n as u64),
                    // Across the two adjacent ones (a lane may straddle them).
                    2 => 0x10_0000 + r % (8192 - n as u64),
                    // A rare lane past the end or in the unmapped allocation.
                    3 if r % 23 == 0 => 0x10_2000 - 2,
                    4 if r % 23 == 0 => 0x20_0000,
                    _ => 0x10_1000 + r % (4096 - n as u64),
                }
            });
            let data: [[u8; 16]; WAVE_SIZE] =
                core::array::from_fn(|_| next().to_le_bytes().repeat(2).try_into().unwrap());
            let store = round % 2 == 1;
            // Both mapped allocations' bytes, and putting them back.
            let snap = |m: &GpuMemory<'_>| {
                let mut b = vec![0u8; 8192];
                m.read(0x10_0000, &mut b[..4096]).unwrap();
                m.read(0x10_1000, &mut b[4096..]).unwrap();
                b
            };
            let put = |b: &[u8]| {
                let m = GpuMemory::new(&allocs, 1);
                m.write(0x10_0000, &b[..4096]).unwrap();
                m.write(0x10_1000, &b[4096..]).unwrap();
            };
            let (rb, rs) = if store {
                let before = snap(&GpuMemory::new(&allocs, 1));
                let rb = batched.write_lanes(&addrs, lanes, n, &data);
                let after_batched = snap(&GpuMemory::new(&allocs, 1));
                put(&before);
                let rs = (0..WAVE_SIZE)
                    .filter(|l| lanes >> l & 1 != 0)
                    .try_for_each(|l| single.write(addrs[l], &data[l][..n]).map_err(|e| (l, e)));
                assert!(
                    after_batched == snap(&GpuMemory::new(&allocs, 1)),
                    "round {round}: bytes written"
                );
                (rb, rs)
            } else {
                let (mut ob, mut os) = ([[0u8; 16]; WAVE_SIZE], [[0u8; 16]; WAVE_SIZE]);
                let rb = batched.read_lanes(&addrs, lanes, n, &mut ob);
                let rs = (0..WAVE_SIZE)
                    .filter(|l| lanes >> l & 1 != 0)
                    .try_for_each(|l| single.read(addrs[l], &mut os[l][..n]).map_err(|e| (l, e)));
                assert!(ob == os, "round {round}: bytes read");
                (rb, rs)
            };
            match (rb, rs) {
                (Ok(()), Ok(())) => {}
                (Err((lb, eb)), Err((ls, es))) => {
                    assert_eq!(lb, ls, "round {round}: faulting lane");
                    assert_eq!(eb.status(), es.status());
                    assert_eq!(eb.detail(), es.detail(), "round {round}");
                }
                (b, s) => panic!(
                    "round {round}: batched {:?}, lane by lane {:?}",
                    b.err(),
                    s.err()
                ),
            }
            assert_eq!(
                batched.fault(),
                single.fault(),
                "round {round}: recorded fault"
            );
        }
    }
}
