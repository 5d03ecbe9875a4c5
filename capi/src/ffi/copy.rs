//! The copy engine of the C API: `hsa_amd_memory_async_copy`, `hsa_amd_memory_async_copy_rect`,
//! `hsa_amd_svm_prefetch_async`
//! and `hsa_amd_memory_fill` (`hsa_ext_amd.h`), and copy profiling
//! (`hsa_amd_profiling_async_copy_enable`, `hsa_amd_profiling_get_async_copy_time`).
//!
//! Copies run on the host (`memmove` between the host mappings of the two ranges; ROCR does
//! the same for copies between CPU agents, `Runtime::CopyMemory`), in submission order, as an
//! SDMA engine runs its ring: a copy starts once every dependency signal has been observed at
//! 0 and every earlier copy has completed; then the completion signal is decremented (or set
//! to -1 when the copy failed, as `hsa_ext_amd.h` says). A copy whose dependencies are already
//! satisfied, submitted while no other copy is pending, runs at once in the caller's thread;
//! the others run on a copy thread that exits when nothing is pending. Both ranges must be
//! reachable by the host: system memory, host-visible device memory (the emulated device's
//! VRAM is), or the application's own memory. Device memory the host cannot map (a real GPU
//! without a large BAR) needs an SDMA or blit-kernel path, which this runtime does not have
//! yet: such a copy is refused with `INVALID_ARGUMENT` naming the range.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hsa_core::signal::{LoadOrder, MemoryOrder, SignalCondition, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

use super::agent::agent_of;
use super::memory::host_range;
use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, Sig, State};

/// `hsa_pitched_ptr_t`: a base address, a row pitch and a slice pitch, bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PitchedPtr {
    /// First byte of the surface.
    pub base: *mut c_void,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Bytes from one slice to the next (0: one slice).
    pub slice: usize,
}

/// `hsa_dim3_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x (bytes, in the rect copy).
    pub x: u32,
    /// y (rows).
    pub y: u32,
    /// z (slices).
    pub z: u32,
}

/// `hsa_amd_copy_direction_t` `hsaHostToHost`.
pub const HSA_HOST_TO_HOST: u32 = 0;

/// `hsa_amd_profiling_async_copy_time_t`: start and end, system timestamp ticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsyncCopyTime {
    /// When the copy started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// `hsa_amd_svm_prefetch_async`: nothing to move (see there).
    Prefetch,
    Linear {
        dst: u64,
        src: u64,
        size: usize,
    },
    Rect {
        dst: (u64, usize, usize),
        dst_offset: Dim3,
        src: (u64, usize, usize),
        src_offset: Dim3,
        range: Dim3,
    },
}

struct Job {
    /// Keeps the runtime (and so the signals' pool and the memory) alive until the copy ends.
    st: Arc<State>,
    deps: Vec<Arc<Sig>>,
    /// `None` only for a prefetch without a completion signal.
    completion: Option<Arc<Sig>>,
    op: Op,
    /// Write start/end timestamps into the completion signal.
    profile: bool,
}

#[derive(Default)]
struct Pending {
    jobs: VecDeque<Job>,
    /// A copy thread is running (it takes the jobs in order).
    running: bool,
}

/// The copy engine of one runtime.
#[derive(Default)]
pub(crate) struct CopyEngine {
    pending: Arc<Mutex<Pending>>,
    /// `hsa_amd_profiling_async_copy_enable`.
    profiling: AtomicBool,
    /// Completion signals of profiled copies (by handle; the weak reference tells a signal
    /// from a later one at the same address).
    profiled: Mutex<HashMap<u64, Weak<Sig>>>,
}

impl CopyEngine {
    fn submit(&self, job: Job) -> Result<(), Error> {
        let mut p = lock(&self.pending);
        let ready = job.deps.iter().all(|d| d.load(LoadOrder::Acquire) == 0);
        if p.jobs.is_empty() && !p.running && ready {
            drop(p);
            run(job);
            return Ok(());
        }
        p.jobs.push_back(job);
        if !p.running {
            let pending = self.pending.clone();
            let spawned = std::thread::Builder::new()
                .name("hsa-rt copy".into())
                .spawn(move || worker(&pending));
            if let Err(e) = spawned {
                p.jobs.pop_back();
                bail!(Status::OutOfResources, "starting the copy thread: {e}");
            }
            p.running = true;
        }
        Ok(())
    }
}

/// The copy thread: runs the pending copies in order, exits when there are none.
fn worker(pending: &Mutex<Pending>) {
    loop {
        let job = {
            let mut p = lock(pending);
            match p.jobs.pop_front() {
                Some(j) => j,
                None => {
                    p.running = false;
                    return;
                }
            }
        };
        for d in &job.deps {
            d.wait(
                SignalCondition::Eq,
                0,
                u64::MAX,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
        }
        // Dropping the job may drop the last reference to the runtime: nothing of it is
        // used after this.
        run(job);
    }
}

/// Runs one copy whose dependencies are satisfied and completes its signal.
fn run(job: Job) {
    let start = job.st.rt().timestamp_ticks();
    let result = copy(&job.st, &job.op);
    let Some(completion) = &job.completion else {
        return;
    };
    if job.profile {
        let raw = completion.raw();
        raw.start_ts().store(start, Ordering::Relaxed);
        raw.end_ts()
            .store(job.st.rt().timestamp_ticks().max(start), Ordering::Relaxed);
    }
    match result {
        Ok(()) => {
            completion.subtract(1, MemoryOrder::Release);
        }
        Err(e) => {
            super::log_error("hsa_amd_memory_async_copy (at run time)", &e);
            completion.store(-1, StoreOrder::Release);
        }
    }
}

/// Copies `len` bytes between two host-reachable ranges (overlap allowed).
fn copy_bytes(st: &State, dst: u64, src: u64, len: usize) -> Result<(), Error> {
    let d = host_range(st, dst as *const c_void, len, "dst")?;
    let s = host_range(st, src as *const c_void, len, "src")?;
    // SAFETY: both ranges hold `len` bytes: pool ranges were checked by host_range; other
    // memory is the application's, valid for the copy per hsa_amd_memory_async_copy's
    // contract (it must stay allocated until the completion signal is decremented).
    unsafe { std::ptr::copy(s, d, len) };
    Ok(())
}

fn copy(st: &State, op: &Op) -> Result<(), Error> {
    match *op {
        Op::Prefetch => Ok(()),
        Op::Linear { dst, src, size } => copy_bytes(st, dst, src, size),
        Op::Rect {
            dst,
            dst_offset,
            src,
            src_offset,
            range,
        } => {
            let at = |(base, pitch, slice): (u64, usize, usize), o: Dim3, y: u32, z: u32| {
                base + u64::from(o.x)
                    + (u64::from(o.y) + u64::from(y)) * pitch as u64
                    + (u64::from(o.z) + u64::from(z)) * slice as u64
            };
            for z in 0..range.z {
                for y in 0..range.y {
                    copy_bytes(
                        st,
                        at(dst, dst_offset, y, z),
                        at(src, src_offset, y, z),
                        range.x as usize,
                    )?;
                }
            }
            Ok(())
        }
    }
}

/// The dependency signals of a copy, with ROCR 5.2's argument checks.
fn dependencies(st: &State, count: u32, signals: *const u64) -> Result<Vec<Arc<Sig>>, Error> {
    if (count == 0) != signals.is_null() {
        bail!(
            Status::InvalidArgument,
            "num_dep_signals is {count} but dep_signals is {}",
            if signals.is_null() {
                "NULL"
            } else {
                "not NULL"
            }
        );
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: non-NULL, `count` handles per the caller's contract.
    let handles = unsafe { std::slice::from_raw_parts(signals, count as usize) };
    handles.iter().map(|h| st.signal(*h)).collect()
}

fn enqueue(
    st: &Arc<State>,
    deps: Vec<Arc<Sig>>,
    completion: Option<Arc<Sig>>,
    op: Op,
) -> Result<Status, Error> {
    let engine = &st.ext.copy;
    let profile = engine.profiling.load(Ordering::Acquire) && !matches!(op, Op::Prefetch);
    if let (true, Some(c)) = (profile, &completion) {
        lock(&engine.profiled).insert(c.handle().0, Arc::downgrade(c));
    }
    engine.submit(Job {
        st: st.clone(),
        deps,
        completion,
        op,
        profile,
    })?;
    Ok(Status::Success)
}

/// `hsa_amd_memory_async_copy`: copies `size` bytes from `src` to `dst` once every
/// dependency signal is 0, then decrements `completion_signal` (see the module doc for how
/// and where). `size` 0 copies nothing and leaves the signal alone, as ROCR 5.2.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `dst`/`src`, a dependency count that does
/// not match `dep_signals`, or a range the host cannot reach (checked before the copy is
/// queued); `INVALID_AGENT`; `INVALID_SIGNAL` for an unknown dependency or completion signal;
/// `OUT_OF_RESOURCES` when the copy thread cannot start.
///
/// # Safety
/// `dep_signals` is NULL or holds `num_dep_signals` handles; outside runtime allocations,
/// `dst` and `src` are valid for `size` bytes until the completion signal is decremented.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: u64,
    src: *const c_void,
    src_agent: u64,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    guard("hsa_amd_memory_async_copy", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        agent_of(&st, dst_agent)?;
        agent_of(&st, src_agent)?;
        let completion = st.signal(completion_signal)?;
        if size == 0 {
            return Ok(Status::Success);
        }
        host_range(&st, dst, size, "dst")?;
        host_range(&st, src, size, "src")?;
        enqueue(
            &st,
            deps,
            Some(completion),
            Op::Linear {
                dst: dst as u64,
                src: src as u64,
                size,
            },
        )
    })
}

/// `hsa_amd_memory_async_copy_rect`: copies `range` (x bytes by y rows by z slices) from
/// `src` at `src_offset` to `dst` at `dst_offset`, as [`hsa_amd_memory_async_copy`]. An empty
/// range copies nothing.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL pointers, a dependency count that does not
/// match, `hsaHostToHost`, and the checks of ROCR 5.2's SDMA rect copy (bases, pitches and
/// slices 4-byte aligned; the rect inside both surfaces' pitch and slice; a slice pitch for
/// more than one slice); `INVALID_AGENT` for an unknown or CPU `copy_agent`; `INVALID_SIGNAL`.
///
/// # Safety
/// The pointer arguments are NULL or readable; `dep_signals` holds `num_dep_signals` handles;
/// the surfaces are valid for the rect until the completion signal is decremented.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy_rect(
    dst: *const PitchedPtr,
    dst_offset: *const Dim3,
    src: *const PitchedPtr,
    src_offset: *const Dim3,
    range: *const Dim3,
    copy_agent: u64,
    dir: u32,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    guard("hsa_amd_memory_async_copy_rect", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        non_null(dst_offset, "dst_offset")?;
        non_null(src_offset, "src_offset")?;
        non_null(range, "range")?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        if dir == HSA_HOST_TO_HOST {
            bail!(
                Status::InvalidArgument,
                "dir is hsaHostToHost, which the rect copy does not do"
            );
        }
        if !agent_of(&st, copy_agent)?.is_gpu() {
            bail!(
                Status::InvalidAgent,
                "copy_agent {copy_agent:#x} is not a GPU agent"
            );
        }
        let completion = st.signal(completion_signal)?;
        // SAFETY: all non-NULL, readable per the caller's contract.
        let (d, s, d_off, s_off, r) = unsafe {
            (
                dst.read_unaligned(),
                src.read_unaligned(),
                dst_offset.read_unaligned(),
                src_offset.read_unaligned(),
                range.read_unaligned(),
            )
        };
        if r.x == 0 || r.y == 0 || r.z == 0 {
            return Ok(Status::Success);
        }
        check_rect(&d, &d_off, &s, &s_off, &r)?;
        enqueue(
            &st,
            deps,
            Some(completion),
            Op::Rect {
                dst: (d.base as u64, d.pitch, d.slice),
                dst_offset: d_off,
                src: (s.base as u64, s.pitch, s.slice),
                src_offset: s_off,
                range: r,
            },
        )
    })
}

/// ROCR 5.2's rect checks (`BlitSdma::SubmitCopyRectCommand`).
fn check_rect(
    dst: &PitchedPtr,
    dst_offset: &Dim3,
    src: &PitchedPtr,
    src_offset: &Dim3,
    range: &Dim3,
) -> Result<(), Error> {
    if dst.base as usize % 4 != 0 || src.base as usize % 4 != 0 {
        bail!(
            Status::InvalidArgument,
            "rect copy bases {:p} and {:p} must be 4-byte aligned",
            dst.base,
            src.base
        );
    }
    if dst.pitch % 4 != 0 || src.pitch % 4 != 0 || dst.slice % 4 != 0 || src.slice % 4 != 0 {
        bail!(
            Status::InvalidArgument,
            "rect copy pitches ({}, {}) and slices ({}, {}) must be multiples of 4",
            dst.pitch,
            src.pitch,
            dst.slice,
            src.slice
        );
    }
    let x = u64::from(range.x);
    if u64::from(src_offset.x) + x > src.pitch as u64
        || u64::from(dst_offset.x) + x > dst.pitch as u64
    {
        bail!(
            Status::InvalidArgument,
            "rect copy width {} at x {} / {} runs past the pitch {} / {}",
            range.x,
            src_offset.x,
            dst_offset.x,
            src.pitch,
            dst.pitch
        );
    }
    for (p, o, what) in [(src, src_offset, "src"), (dst, dst_offset, "dst")] {
        if p.slice != 0
            && p.pitch != 0
            && u64::from(o.y) + u64::from(range.y) > (p.slice / p.pitch) as u64
        {
            bail!(
                Status::InvalidArgument,
                "rect copy height {} at row {} runs past the {} rows of a {what} slice",
                range.y,
                o.y,
                p.slice / p.pitch
            );
        }
    }
    if range.z > 1 && (src.slice == 0 || dst.slice == 0) {
        bail!(
            Status::InvalidArgument,
            "rect copy of {} slices needs both slice pitches",
            range.z
        );
    }
    Ok(())
}

/// `hsa_amd_memory_fill`: stores `value` into `count` consecutive 32-bit words at `ptr`, now
/// (by the host: ROCR 5.2 fills device memory with a blit kernel and host memory from the
/// host, synchronously either way).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL or not 4-byte aligned `ptr`, or a range
/// the host cannot reach.
///
/// # Safety
/// Outside runtime allocations, `ptr` is valid for `count * 4` bytes.
pub unsafe extern "C" fn hsa_amd_memory_fill(
    ptr: *mut c_void,
    value: u32,
    count: usize,
) -> HsaStatus {
    guard("hsa_amd_memory_fill", || {
        let st = state::state()?;
        if ptr.is_null() || ptr as usize % 4 != 0 {
            bail!(
                Status::InvalidArgument,
                "ptr {ptr:p} is NULL or not 4-byte aligned"
            );
        }
        if count == 0 {
            return Ok(Status::Success);
        }
        let bytes = count.checked_mul(4).ok_or_else(|| {
            hsa_core::error!(Status::InvalidArgument, "count {count} words overflow")
        })?;
        let h = host_range(&st, ptr, bytes, "ptr")?.cast::<u32>();
        // SAFETY: `bytes` bytes at `h` are reachable (pool ranges checked by host_range,
        // others by the caller's contract); `ptr` is 4-aligned and the host mapping keeps
        // the offset, so `h` is too.
        unsafe { std::slice::from_raw_parts_mut(h, count) }.fill(value);
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_async_copy_enable`: whether copies submitted from now on record their
/// start and end times in their completion signal.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> HsaStatus {
    guard("hsa_amd_profiling_async_copy_enable", || {
        let st = state::state()?;
        st.ext.copy.profiling.store(enable, Ordering::Release);
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_get_async_copy_time`: when the profiled copy that completes `signal`
/// started and ended, system timestamp ticks (`HSA_SYSTEM_INFO_TIMESTAMP`; the host copies, so
/// no translation is needed).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `time`; `INVALID_SIGNAL`; `ERROR` when no
/// profiled copy has completed `signal` (ROCR 5.2: the signal has no copy agent).
///
/// # Safety
/// `time` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: u64,
    time: *mut AsyncCopyTime,
) -> HsaStatus {
    guard("hsa_amd_profiling_get_async_copy_time", || {
        let st = state::state()?;
        non_null(time, "time")?;
        let s = st.signal(signal)?;
        let profiled = lock(&st.ext.copy.profiled)
            .get(&signal)
            .and_then(Weak::upgrade)
            .is_some_and(|p| Arc::ptr_eq(&p, &s));
        if !profiled {
            bail!(
                Status::Error,
                "signal {signal:#x} has not completed a profiled copy \
                 (hsa_amd_profiling_async_copy_enable)"
            );
        }
        let raw = s.raw();
        let t = AsyncCopyTime {
            start: raw.start_ts().load(Ordering::Acquire),
            end: raw.end_ts().load(Ordering::Acquire),
        };
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { time.write_unaligned(t) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_svm_prefetch_async`: a prefetch is a hint and this runtime has no SVM migration
/// (`HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED` is false): the memory stays where it is; the
/// completion signal (when not 0) is decremented once the dependencies are 0, in order with the
/// copies, as ROCR 5.2 decrements it after its (there failing) KFD call.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a dependency count that does
/// not match `dep_signals`; `INVALID_SIGNAL` for an unknown dependency or completion signal.
///
/// # Safety
/// `dep_signals` is NULL or holds `num_dep_signals` handles.
pub unsafe extern "C" fn hsa_amd_svm_prefetch_async(
    ptr: *mut c_void,
    size: usize,
    agent: u64,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    let _ = (ptr, size);
    guard("hsa_amd_svm_prefetch_async", || {
        let st = state::state()?;
        agent_of(&st, agent)?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        let completion = match completion_signal {
            0 => None,
            h => Some(st.signal(h)?),
        };
        enqueue(&st, deps, completion, Op::Prefetch)
    })
}

export!(
    hsa_amd_svm_prefetch_async,
    hsa_amd_memory_async_copy,
    hsa_amd_memory_async_copy_rect,
    hsa_amd_memory_fill,
    hsa_amd_profiling_async_copy_enable,
    hsa_amd_profiling_get_async_copy_time,
);
