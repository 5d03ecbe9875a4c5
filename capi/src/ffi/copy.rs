//! The copy engine of the C API: `hsa_amd_memory_async_copy`, `hsa_amd_memory_async_copy_rect`,
//! `hsa_amd_svm_prefetch_async`
//! and `hsa_amd_memory_fill` (`hsa_ext_amd.h`), and copy profiling
//! (`hsa_amd_profiling_async_copy_enable`, `hsa_amd_profiling_get_async_copy_time`).
//!
//! On the Linux backend a linear copy (`hsa_amd_memory_async_copy`) runs on an SDMA queue of
//! the copy's GPU agent, as ROCR 5.2 runs it (`BlitSdma`): the destination's agent when it is
//! a GPU, else the source's; a rect copy (`_rect`) on its `copy_agent`'s, in
//! `COPY_LINEAR_RECT` tiles ([`hsa_core::sdma::copy_rect_commands`]). The queue is made at the first such copy, one per GPU agent
//! ([`hsa_core::sdma::SdmaQueue`]: `CREATE_QUEUE` of `KFD_IOC_QUEUE_TYPE_SDMA`, a 1 MiB ring).
//! The command is ROCR's ([`hsa_core::sdma::copy_commands`]): the engine itself waits for the
//! dependency signals (two `POLL_REGMEM` per signal, on the value's high then low half), copies
//! in `COPY_LINEAR` packets, decrements the completion signal with an `ATOMIC` add of -1 (ROCR
//! on agents with 64-bit platform atomics) and, when the signal has an event mailbox, writes
//! the event id there with a `FENCE` and raises the interrupt with a `TRAP`; with copy
//! profiling on, `TIMESTAMP` packets write the start and end into the completion signal, in
//! the GPU's clock (translated to the system domain when read, as dispatch times are). The
//! call returns once the command is in the ring. That path is taken when both ranges are
//! memory the copy agent reaches (its own pool, a system pool, or a pool it was allowed) and
//! `HSA_ENABLE_SDMA` is not `0` (ROCR's switch); otherwise — no GPU agent, the application's
//! own memory, a platform without SDMA queues (creating one failed: said once at debug
//! level) — the copy runs on the host, as below, and so do fills. A GPU memory fault ends the
//! GPU's SDMA queue (amdkfd evicts the process's queues, `kfd_dqm_evict_pasid`):
//! `CopyEngine::on_gpu_memory_fault` sets the completion signal of each copy on it that had
//! not completed to -1 and marks the queue stopped, so later copies on it fail with `ERROR`
//! rather than wait for an engine that is gone.
//!
//! Host copies (`memmove` between the host mappings of the two ranges; ROCR does
//! the same for copies between CPU agents, `Runtime::CopyMemory`) run in submission order, as an
//! SDMA engine runs its ring: a copy starts once every dependency signal has been observed at
//! 0 and every earlier host copy has completed; then the completion signal is decremented (or set
//! to -1 when the copy failed, as `hsa_ext_amd.h` says). A copy whose dependencies are already
//! satisfied, submitted while no other copy is pending, runs at once in the caller's thread;
//! the others run on a copy thread that exits when nothing is pending. Both ranges must be
//! reachable by the host: system memory, host-visible device memory (the emulated device's
//! VRAM is), or the application's own memory; a host copy of device memory the host cannot
//! map is refused with `INVALID_ARGUMENT` naming the range.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hsa_core::addr::{GpuVa, NodeId};
use hsa_core::sdma::{copy_commands, copy_rect_commands, RectSurface, SdmaCompletion, SdmaQueue};
use hsa_core::signal::{LoadOrder, MemoryOrder, SignalCondition, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

use super::agent::agent_of;
use super::memory::host_range;
use super::{guard, non_null, HsaStatus};
use crate::state::{self, lock, PlatRef, Sig, State};

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
    /// from a later one at the same address), with the GPU node whose SDMA engine stamped
    /// the times (`None`: the host did, in system ticks).
    profiled: Mutex<HashMap<u64, Profiled>>,
    /// SDMA queues by GPU node, made at the first copy that uses one; `None` when the
    /// platform refused (that node's copies stay on the host).
    sdma: Mutex<HashMap<u32, Option<Arc<SdmaQueue<PlatRef>>>>>,
    /// SDMA commands submitted that may not have run yet, by GPU node: the queue's write
    /// pointer after each, and its completion signal.
    in_flight: Mutex<HashMap<u32, Vec<InFlight>>>,
}

/// An SDMA command that may not have run yet: the queue's write pointer after it, and its
/// copy's completion signal.
type InFlight = (u64, Weak<Sig>);

/// A profiled copy's completion signal and the GPU node whose SDMA engine stamped its times
/// (`None`: the host).
type Profiled = (Weak<Sig>, Option<NodeId>);

/// Whether copies may use SDMA queues: unless `HSA_ENABLE_SDMA` is `0` (ROCR's switch;
/// `hsa_init` refused a value other than `0` or `1`).
fn sdma_enabled() -> bool {
    hsa_linux::env::sdma_enabled().unwrap_or(true)
}

/// The device address of `len` bytes at `ptr` when they lie in one pool allocation that GPU
/// `node` reaches: its own pool, a system (CPU agent's) pool, or one it was allowed.
fn gpu_range(st: &State, ptr: u64, len: usize, node: NodeId) -> Option<GpuVa> {
    let info = st.rt().pointer_info(GpuVa(ptr)).ok()?;
    let a = info.allocation;
    let end = (ptr - a.va.0).checked_add(len as u64)?;
    if end > a.size_bytes {
        return None;
    }
    let owner_is_cpu = st
        .rt()
        .agents()
        .iter()
        .any(|ag| ag.node() == info.pool_owner.0 && !ag.is_gpu());
    (info.pool_owner == node || owner_is_cpu || info.allowed_nodes.contains(node))
        .then_some(GpuVa(ptr))
}

impl CopyEngine {
    /// The SDMA queue of GPU `node`, made at the first call; `None` when the platform has
    /// none (said once, at debug level).
    /// The first queue made also starts watching GPU memory faults
    /// ([`super::signal_ext::watch_memory_faults`]), which end it
    /// ([`CopyEngine::on_gpu_memory_fault`]).
    fn sdma_queue(&self, st: &State, node: NodeId) -> Option<Arc<SdmaQueue<PlatRef>>> {
        let mut made = false;
        let queue = lock(&self.sdma)
            .entry(node.0)
            .or_insert_with(|| match SdmaQueue::create(st.platform_ref(), node) {
                Ok(q) => {
                    made = true;
                    Some(Arc::new(q))
                }
                Err(e) => {
                    log::debug!(
                        "node {}: no SDMA queue ({}); copies run on the host",
                        node.0,
                        e.detail()
                    );
                    None
                }
            })
            .clone();
        if made {
            // After the queue map's lock is released: the fault handler takes it.
            super::signal_ext::watch_memory_faults(st);
        }
        queue
    }

    /// A GPU memory fault on `node`: amdkfd evicts the process's queues of that GPU
    /// (`kfd_dqm_evict_pasid`), its SDMA queue included, so the engine runs no more of the
    /// ring. The queue is marked stopped (later copies on it fail with `ERROR` instead of
    /// waiting for ever), and every copy submitted to it that had not completed gets its
    /// completion signal set to -1, the error `hsa_ext_amd.h` gives for a failed copy.
    pub(crate) fn on_gpu_memory_fault(&self, node: NodeId) {
        let queue = lock(&self.sdma).get(&node.0).cloned().flatten();
        let Some(queue) = queue else {
            return;
        };
        queue.mark_stopped();
        let failed = self.fail_in_flight(&queue);
        log::error!(
            "node {}: a GPU memory fault ended its SDMA queue; {failed} copies on it did not \
             complete (completion signals set to -1), later ones fail",
            node.0
        );
    }

    /// Sets the completion signal of every command of `queue` past its read pointer that is
    /// still above 0 to -1 (the queue has stopped); how many there were.
    fn fail_in_flight(&self, queue: &SdmaQueue<PlatRef>) -> usize {
        let read = queue.read_pointer();
        let stuck: Vec<Weak<Sig>> = {
            let mut in_flight = lock(&self.in_flight);
            let list = in_flight.entry(queue.node().0).or_default();
            let (stuck, _done): (Vec<_>, Vec<_>) = list.drain(..).partition(|(end, _)| *end > read);
            stuck.into_iter().map(|(_, s)| s).collect()
        };
        let mut failed = 0;
        for sig in stuck.iter().filter_map(Weak::upgrade) {
            if sig.load(LoadOrder::Acquire) > 0 {
                sig.store(-1, StoreOrder::Release);
                failed += 1;
            }
        }
        failed
    }

    /// Runs a copy on the SDMA queue of GPU `node` when it can (module docs): `build` appends
    /// the command given the dependency values and the completion; `Ok(false)` when the copy
    /// must run on the host instead (SDMA disabled, or no queue).
    fn try_sdma(
        &self,
        st: &State,
        node: NodeId,
        deps: &[Arc<Sig>],
        completion: &Arc<Sig>,
        build: impl FnOnce(&mut Vec<u32>, &[GpuVa], &SdmaCompletion) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        if !sdma_enabled() {
            return Ok(false);
        }
        let Some(queue) = self.sdma_queue(st, node) else {
            return Ok(false);
        };
        let value_of = |sig: &Sig| GpuVa(sig.raw().as_ptr() as u64 + 8);
        let dep_values: Vec<GpuVa> = deps.iter().map(|d| value_of(d)).collect();
        let raw = completion.raw();
        let base = raw.as_ptr() as u64;
        let mailbox = raw.event_mailbox_ptr().load(Ordering::Acquire);
        let profile = self.profiling.load(Ordering::Acquire);
        let target = SdmaCompletion {
            value: value_of(completion),
            mailbox: (mailbox != 0).then(|| (GpuVa(mailbox), raw.event_id())),
            timestamps: profile.then_some((GpuVa(base + 32), GpuVa(base + 40))),
        };
        let mut cmd = Vec::new();
        build(&mut cmd, &dep_values, &target)?;
        let end = queue.submit(&cmd)?;
        if profile {
            lock(&self.profiled).insert(
                completion.handle().0,
                (Arc::downgrade(completion), Some(node)),
            );
        }
        {
            let read = queue.read_pointer();
            let mut in_flight = lock(&self.in_flight);
            let list = in_flight.entry(node.0).or_default();
            list.retain(|(e, _)| *e > read);
            list.push((end, Arc::downgrade(completion)));
        }
        // A fault handler that stopped the queue between the submit and the entry above
        // did not see this copy.
        if queue.is_stopped() {
            self.fail_in_flight(&queue);
        }
        Ok(true)
    }
}

/// The device range a rect copy touches on one surface, when GPU `node` reaches all of it.
fn rect_gpu_extent(st: &State, s: &RectSurface, range: &Dim3, node: NodeId) -> Option<()> {
    let first = s
        .base
        .0
        .checked_add(s.offset[0])?
        .checked_add(s.offset[1].checked_mul(s.pitch)?)?
        .checked_add(s.offset[2].checked_mul(s.slice)?)?;
    let len = u64::from(range.x)
        .checked_add(u64::from(range.y - 1).checked_mul(s.pitch)?)?
        .checked_add(u64::from(range.z - 1).checked_mul(s.slice)?)?;
    gpu_range(st, first, usize::try_from(len).ok()?, node).map(|_| ())
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

/// Copies `len` bytes between two host-reachable ranges (overlap allowed): the host copy of
/// this module, and the image extension's row copies (`ffi::image`).
///
/// # Errors
/// `INVALID_ARGUMENT` naming `dst` or `src` for a pool range the host cannot reach or that
/// runs past its allocation ([`host_range`]).
pub(crate) fn copy_bytes(st: &State, dst: u64, src: u64, len: usize) -> Result<(), Error> {
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
        lock(&engine.profiled).insert(c.handle().0, (Arc::downgrade(c), None));
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
        // ROCR's copy agent: the destination's when it is a GPU, else the source's.
        let copy_node = [dst_agent, src_agent]
            .into_iter()
            .filter_map(|h| agent_of(&st, h).ok())
            .find(|a| a.is_gpu())
            .map(|a| NodeId(a.node()));
        if let Some(node) = copy_node {
            let ranges = (
                gpu_range(&st, dst as u64, size, node),
                gpu_range(&st, src as u64, size, node),
            );
            if let (Some(d), Some(s)) = ranges {
                let build = |cmd: &mut Vec<u32>, deps: &[GpuVa], target: &SdmaCompletion| {
                    copy_commands(cmd, d, s, size as u64, deps, target);
                    Ok(())
                };
                if st.ext.copy.try_sdma(&st, node, &deps, &completion, build)? {
                    return Ok(Status::Success);
                }
            }
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
        // ROCR 5.2 runs a rect copy on the copy agent's SDMA queue (`SubmitCopyRectCommand`).
        let surface = |p: &PitchedPtr, o: &Dim3| RectSurface {
            base: GpuVa(p.base as u64),
            pitch: p.pitch as u64,
            slice: p.slice as u64,
            offset: [u64::from(o.x), u64::from(o.y), u64::from(o.z)],
        };
        let (ds, ss) = (surface(&d, &d_off), surface(&s, &s_off));
        let node = NodeId(agent_of(&st, copy_agent)?.node());
        if rect_gpu_extent(&st, &ds, &r, node).is_some()
            && rect_gpu_extent(&st, &ss, &r, node).is_some()
        {
            let extent = [u64::from(r.x), u64::from(r.y), u64::from(r.z)];
            let build = |cmd: &mut Vec<u32>, deps: &[GpuVa], target: &SdmaCompletion| {
                copy_rect_commands(cmd, &ds, &ss, extent, deps, target)
            };
            if st.ext.copy.try_sdma(&st, node, &deps, &completion, build)? {
                return Ok(Status::Success);
            }
        }
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
/// started and ended, system timestamp ticks (`HSA_SYSTEM_INFO_TIMESTAMP`): an SDMA copy's
/// `TIMESTAMP` packets stamp the GPU clock, translated as dispatch times are
/// (`hsa_amd_profiling_convert_tick_to_system_domain`, ROCR's `TranslateTime`); a host copy
/// stamps system ticks itself.
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
            .and_then(|(w, node)| Some((w.upgrade()?, *node)))
            .filter(|(p, _)| Arc::ptr_eq(p, &s))
            .map(|(_, node)| node);
        let Some(node) = profiled else {
            bail!(
                Status::Error,
                "signal {signal:#x} has not completed a profiled copy \
                 (hsa_amd_profiling_async_copy_enable)"
            );
        };
        let raw = s.raw();
        let mut t = AsyncCopyTime {
            start: raw.start_ts().load(Ordering::Acquire),
            end: raw.end_ts().load(Ordering::Acquire),
        };
        if let Some(node) = node {
            t = AsyncCopyTime {
                start: super::queue_ext::translate(&st, node, t.start)?,
                end: super::queue_ext::translate(&st, node, t.end)?,
            };
        }
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
