//! The emulated command processor: one thread per compute queue. An AQL queue's thread runs
//! the core's [`PacketProcessor`] against the queue's ring; kernel dispatches run in the
//! GFX9 interpreter or a host implementation, as [`ExecutionMode`] says, and PM4-IB vendor
//! packets in the PM4 engine (`pm4`). A PM4 queue's thread ([`Pm4Thread`]) runs the PM4
//! engine over its ring of dwords; its dispatches run in the interpreter (a PM4 dispatch has
//! no kernel object, so no host implementation).
//!
//! Nobody tells it that packets arrived: like a CP it watches what a producer writes — the
//! queue's doorbell (the 64-bit word of the GPU's doorbell page that ROCR, and our producer,
//! store the packet index to), the write index (`amd_queue_t.write_dispatch_id`, the CP's
//! write-pointer poll address of CREATE_QUEUE) and the header of the next slot. It takes a
//! slot only once the write index or the doorbell announced it, as the CP reads no further
//! than its write pointer: a zeroed slot past it (tinygrad never writes INVALID headers) is
//! not a packet. The policy, and its cost:
//!
//! - after activity (packets processed, or the doorbell or write index moved) it polls those
//!   words in a spin loop for [`IDLE_SPIN`], once per spin-loop hint, reading the clock only
//!   every [`SPIN_CLOCK_EVERY`] polls: a producer that rings again within that window is
//!   seen within a few hundred nanoseconds, with no system call on either side (the
//!   dispatch round trip of B4). That costs up to [`IDLE_SPIN`] of one core per burst;
//! - then it sleeps between polls, [`POLL_MIN`] at first, doubling up to [`POLL_MAX`]: an
//!   idle queue costs about `1 s / POLL_MAX` wake-ups per second (a few microseconds of CPU
//!   each, well under 1 % of a core), and the first packet after a long idle period waits at
//!   most [`POLL_MAX`];
//! - a queue whose barrier packet waits for a dependency polls every [`BLOCKED_POLL`];
//! - destroying the queue wakes the thread at once (the device's own condition variable, not
//!   a doorbell).
//!
//! [`IdlePoll`] is that policy; the SDMA engine's threads (`sdma.rs`) follow it too.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use hsa_core::abi::packet::FenceScope;
use hsa_core::abi::SignalHandle;
use hsa_core::packet_processor::{
    DecodedAgentDispatch, DecodedKernelDispatch, DecodedPm4Ib, PacketProcessor, ProcessorHost,
    Progress,
};
use hsa_core::queue::ring::{Ring, INVALID_HEADER_WORD};
use hsa_core::signal::raw::RawSignal;
use hsa_core::{error, Error, GpuVa, Status};

use super::mem::{Backing, Region};
use super::memory::{Allocs, MemoryFault};
use super::pm4::{self, ComputeDispatch, Pm4Counts, Pm4Memory, Pm4State};
use super::{interp, kernel, Device, ExecutionMode};
use crate::gfx9::exec::DecodeCache;
use crate::gfx9::hwid::{
    WaveLaunch, MAX_CUS_PER_SHADER_ARRAY, MAX_SHADER_ARRAYS_PER_ENGINE, MAX_SHADER_ENGINES,
};
use crate::gfx9::Gfx9Target;

/// How long the processor polls its doorbell, write index and next header in a spin loop
/// after activity, before it sleeps between polls. Burns at most this much CPU per burst.
pub(crate) const IDLE_SPIN: Duration = Duration::from_micros(50);
/// The first sleep between two polls once the spin phase is over.
pub(crate) const POLL_MIN: Duration = Duration::from_micros(50);
/// The longest sleep between two polls of an idle queue: the most a packet waits after a
/// long idle period.
pub(crate) const POLL_MAX: Duration = Duration::from_millis(1);
/// How long a processor blocked on a barrier waits before re-checking the dependencies.
pub(crate) const BLOCKED_POLL: Duration = Duration::from_micros(100);

/// Stop and wake-up state shared by a queue's thread and the device.
#[derive(Default)]
pub(crate) struct QueueCtl {
    kick: AtomicU32,
    sleeping: AtomicBool,
    pub(crate) stop: AtomicBool,
    state: Mutex<()>,
    cv: Condvar,
    /// A compute queue's `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` (the HQD's per-engine CU
    /// enable masks, [`crate::gfx9::hwid`]): every CU of the GPU at CREATE_QUEUE, the mapped
    /// user mask after SET_CU_MASK. Read at the start of each dispatch.
    pub(crate) cu_enable: Mutex<[u32; MAX_SHADER_ENGINES]>,
    /// A compute queue's MQD (`struct v9_mqd`), as the emulated amdkfd filled it
    /// (`queue_manager::load_mqd`): the CP took the queue's ring, pointers, doorbell and
    /// format from it when the queue was mapped; UPDATE_QUEUE and SET_CU_MASK update it. All
    /// zero for an SDMA queue.
    pub(crate) mqd: Mutex<hsa_core::wire::mqd::V9Mqd>,
    /// Whether the queue is inactive: created or updated (UPDATE_QUEUE) with
    /// `queue_percentage` 0, which amdkfd's `QUEUE_IS_ACTIVE` counts as not active (ROCR's
    /// `AqlQueue::Suspend` does this). Its engine takes no packet until an UPDATE_QUEUE with a
    /// non-zero percentage, which kicks it.
    pub(crate) inactive: AtomicBool,
    /// Whether the debugger suspended the queue (`DBG_TRAP`'s `SUSPEND_QUEUES`; amdkfd's
    /// `is_suspended`, which `QUEUE_IS_ACTIVE` also counts as not active): its engine takes
    /// no packet until `RESUME_QUEUES` (or the debug trap's end), which kicks it.
    pub(crate) suspended: AtomicBool,
}

impl QueueCtl {
    /// Whether the engine may take no packet now: the queue is inactive or suspended.
    pub(crate) fn halted(&self) -> bool {
        self.inactive.load(Ordering::SeqCst) || self.suspended.load(Ordering::SeqCst)
    }

    /// The address of the queue's context save area, from its MQD
    /// (`cp_hqd_ctx_save_base_addr`; 0: none).
    pub(crate) fn ctx_save_area(&self) -> u64 {
        let m = self.mqd.lock().unwrap_or_else(PoisonError::into_inner);
        hsa_core::wire::mqd::join(
            m.cp_hqd_ctx_save_base_addr_lo,
            m.cp_hqd_ctx_save_base_addr_hi,
        )
    }

    /// Wakes the processor if it sleeps (the device does, to stop it). Never blocks for long
    /// (a mutex taken only to pair with a sleeper).
    pub(crate) fn kick(&self) {
        // SeqCst with the sleeper's SeqCst store of `sleeping` and load of `kick`: either it
        // sees the new kick and does not sleep, or we see `sleeping` and notify under the lock.
        self.kick.fetch_add(1, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let _g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            self.cv.notify_all();
        }
    }

    /// How many times the processor was kicked: read before checking for work, then handed
    /// to [`QueueCtl::sleep`], so a kick in between is never slept through.
    pub(crate) fn kicks(&self) -> u32 {
        self.kick.load(Ordering::SeqCst)
    }

    /// Sleeps at most `timeout`, unless a kick came after `seen_kick` was read or the queue
    /// is being stopped.
    pub(crate) fn sleep(&self, seen_kick: u32, timeout: Duration) {
        let g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.sleeping.store(true, Ordering::SeqCst);
        if self.kick.load(Ordering::SeqCst) == seen_kick && !self.stop.load(Ordering::SeqCst) {
            let _ = self.cv.wait_timeout(g, timeout);
        }
        self.sleeping.store(false, Ordering::SeqCst);
    }
}

/// How many polls of an idle queue's spin phase share one read of the clock (the check
/// whether [`IDLE_SPIN`] is over): a read of the clock costs more than a poll of a few words,
/// and polling only between batches of spin-loop hints let a producer wait for the batch.
pub(crate) const SPIN_CLOCK_EVERY: u32 = 64;

/// The idle-wait policy a queue's thread (the CP's and the SDMA engine's) follows between
/// polls of what a producer writes (see the module docs): for [`IDLE_SPIN`] after the last
/// activity, one `spin_loop` hint per poll, reading the clock only every
/// [`SPIN_CLOCK_EVERY`] polls; then a sleep of [`POLL_MIN`], doubling up to [`POLL_MAX`],
/// that a kick ([`QueueCtl::kick`]) ends early.
///
/// The thread calls [`IdlePoll::active`] when it saw activity (packets ran, a watched word
/// moved) and [`IdlePoll::idle`] after each poll that found nothing.
#[derive(Debug)]
pub(crate) struct IdlePoll {
    /// When the last activity was seen.
    activity: Instant,
    /// Polls since the last activity (or clock read), counting to [`SPIN_CLOCK_EVERY`].
    polls: u32,
    /// Whether the spin phase is still on.
    spinning: bool,
    /// The next sleep, once spinning is over.
    sleep: Duration,
}

impl IdlePoll {
    /// A policy whose last activity is now.
    pub(crate) fn new() -> IdlePoll {
        IdlePoll {
            activity: Instant::now(),
            polls: 0,
            spinning: true,
            sleep: POLL_MIN,
        }
    }

    /// Activity was seen: the spin phase starts again and the sleeps start over at
    /// [`POLL_MIN`].
    pub(crate) fn active(&mut self) {
        *self = IdlePoll::new();
    }

    /// A poll found nothing: spins once (the clock read every [`SPIN_CLOCK_EVERY`] calls)
    /// while the spin phase lasts, else sleeps on `ctl` (unless it was kicked after `kicks`
    /// was read) and doubles the next sleep.
    #[inline]
    pub(crate) fn idle(&mut self, ctl: &QueueCtl, kicks: u32) {
        if self.spinning {
            self.polls += 1;
            if self.polls == SPIN_CLOCK_EVERY {
                self.polls = 0;
                self.spinning = self.activity.elapsed() < IDLE_SPIN;
            }
            std::hint::spin_loop();
        } else {
            ctl.sleep(kicks, self.sleep);
            self.sleep = (self.sleep * 2).min(POLL_MAX);
        }
    }
}

/// What the processor thread of one queue needs.
pub(crate) struct CpThread {
    pub(crate) device: Arc<Device>,
    pub(crate) ctl: Arc<QueueCtl>,
    pub(crate) processor: PacketProcessor,
    /// The queue's doorbell: its 8 bytes of the GPU's doorbell page (live as long as the
    /// device, which this thread holds).
    pub(crate) doorbell: Region,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    pub(crate) lds_bytes: u32,
}

/// What a producer last wrote that the processor watches: the doorbell and the write index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Watched {
    doorbell: u64,
    write_index: u64,
}

impl CpThread {
    fn watched(&self, ring: &Ring) -> Watched {
        Watched {
            // Acquire pairs with the producer's Release store of the doorbell (after the
            // packet's header store).
            doorbell: self
                .doorbell
                .atomic_u64(0)
                .map_or(0, |w| w.load(Ordering::Acquire)),
            write_index: ring.write_index().load(Ordering::Acquire),
        }
    }

    /// The packets the producer announced, counted from the ring's start: the write pointer
    /// the CP polls (`amd_queue_t.write_dispatch_id`, CREATE_QUEUE's write pointer address)
    /// or, once the doorbell moved from `bell_at_start`, the doorbell's packet index + 1
    /// (ROCR and tinygrad store the index of the last packet they wrote), whichever is
    /// further. The CP takes no slot at or past it, whatever its header says: a producer that
    /// never wrote INVALID into its ring (tinygrad's ring is zeroed, and a zero header reads as
    /// VENDOR_SPECIFIC) has no packet there.
    fn announced(&self, watched: &Watched, bell_at_start: u64) -> u64 {
        let by_bell = if watched.doorbell != bell_at_start {
            watched.doorbell.wrapping_add(1)
        } else {
            0
        };
        watched.write_index.max(by_bell)
    }

    /// Whether the slot at the read index holds a packet: announced, and its header is no
    /// longer INVALID.
    fn next_packet_ready(&self, ring: &Ring, bell_at_start: u64) -> bool {
        let read = self.processor.read_index();
        read < self.announced(&self.watched(ring), bell_at_start)
            && ring.header_word(read).load(Ordering::Acquire) & 0xff != INVALID_HEADER_WORD & 0xff
    }

    /// Waits until a producer did something: the doorbell or the write index moved, or the
    /// next slot holds a packet (the module docs' policy, [`IdlePoll`]). `watched` is what was
    /// seen at the last activity. Returns early when the queue is being stopped.
    fn wait_for_work(
        &self,
        ring: &Ring,
        watched: &mut Watched,
        idle: &mut IdlePoll,
        bell_at_start: u64,
    ) {
        loop {
            let kicks = self.ctl.kick.load(Ordering::SeqCst);
            if self.ctl.stop.load(Ordering::SeqCst) {
                return;
            }
            let now = self.watched(ring);
            if now != *watched {
                *watched = now;
                idle.active();
                return;
            }
            if self.next_packet_ready(ring, bell_at_start) {
                return;
            }
            idle.idle(&self.ctl, kicks);
        }
    }

    /// The thread body: process until stopped.
    pub(crate) fn run(mut self) {
        let mut stopped = false;
        let ring = *self.processor.ring();
        let mut watched = self.watched(&ring);
        let bell_at_start = watched.doorbell;
        let mut idle = IdlePoll::new();
        // The interpreter's decoded kernels and waves, kept over the queue's dispatches.
        let caches = RefCell::new(interp::Interpreters::default());
        let pm4 = RefCell::new(Pm4State::default());
        while !self.ctl.stop.load(Ordering::SeqCst) {
            let seen = self.ctl.kick.load(Ordering::SeqCst);
            if stopped || self.ctl.halted() {
                self.ctl.sleep(seen, Duration::from_secs(1));
                continue;
            }
            let (progress, fault) = {
                let host = CpHost::new(
                    &self.device,
                    &self.ctl,
                    (self.queue_id, self.gpu_id, self.lds_bytes),
                    &caches,
                    &pm4,
                );
                // Only the announced packets (`announced`), at most 64 per turn.
                let now = self.watched(&ring);
                let ahead = self
                    .announced(&now, bell_at_start)
                    .saturating_sub(self.processor.read_index());
                let progress = if ahead == 0 && self.processor.stopped().is_none() {
                    Progress::Idle
                } else {
                    self.processor.process(&host, ahead.clamp(1, 64) as u32)
                };
                (progress, (host.fault.get(), host.vm_fault_raised.get()))
            };
            match progress {
                Progress::Processed(_) => {
                    idle.active();
                    watched = self.watched(&ring);
                }
                Progress::Idle => self.wait_for_work(&ring, &mut watched, &mut idle, bell_at_start),
                Progress::Blocked => self.ctl.sleep(seen, BLOCKED_POLL),
                Progress::Stopped(e) => {
                    stopped = true;
                    // Reported here, after the allocation lock is released: the queue's
                    // inactive signal already holds the status (the processor stored it).
                    let (fault, raised) = fault;
                    self.device.report_queue_error(
                        self.queue_id,
                        self.gpu_id,
                        &e,
                        fault,
                        raised,
                        self.ctl.ctx_save_area(),
                    );
                }
            }
        }
    }
}

/// The command processor thread of a PM4 compute queue (`KFD_IOC_QUEUE_TYPE_COMPUTE`): the
/// MEC reading PM4 packets from the queue's ring, as it does for amdgpu's own compute rings.
///
/// Its pointers, in dwords: the write pointer is the unwrapped count of dwords the producer
/// wrote (tinygrad's `put_value`), which it stores to the 64-bit doorbell (and to the write
/// pointer's 64-bit word, which the thread reads when the doorbell did not move: the HQD's
/// write-pointer poll); the read pointer the thread reports at `read_pointer_address` is the
/// dword offset in the ring of the next packet (`CP_HQD_PQ_RPTR`, 32 bits), stored after each
/// batch of whole packets. It watches the doorbell by the AQL thread's [`IdlePoll`] policy.
pub(crate) struct Pm4Thread {
    pub(crate) device: Arc<Device>,
    pub(crate) ctl: Arc<QueueCtl>,
    /// The ring's device address and size in dwords (a power of two).
    pub(crate) ring_va: u64,
    pub(crate) ring_dwords: u64,
    pub(crate) read_pointer_va: u64,
    pub(crate) write_pointer_va: u64,
    /// The queue's doorbell: its 8 bytes of the GPU's doorbell page.
    pub(crate) doorbell: Region,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    pub(crate) lds_bytes: u32,
}

impl Pm4Thread {
    /// The write pointer, given the read pointer `rptr` (both unwrapped dword counts): the
    /// doorbell's value when it is ahead of `rptr`, else the write pointer's word (the HQD's
    /// write-pointer poll) when that is, else `rptr` (nothing new). A doorbell behind `rptr`
    /// is one not rung since the thread took a newer write pointer from the word: tinygrad
    /// stores the word, then the doorbell, and the thread may run the packets between the
    /// two stores. A word behind `rptr` is one the producer does not keep.
    fn write_pointer(&self, host: &CpHost<'_>, rptr: u64) -> u64 {
        // Acquire pairs with the producer's Release store of the doorbell (after its ring
        // stores).
        let doorbell = self
            .doorbell
            .atomic_u64(0)
            .map_or(0, |w| w.load(Ordering::Acquire));
        if doorbell > rptr {
            return doorbell;
        }
        let mut w = [0u32; 2];
        match host.read_dwords(self.write_pointer_va, &mut w) {
            Ok(()) => (u64::from(w[0]) | u64::from(w[1]) << 32).max(rptr),
            Err(_) => rptr,
        }
    }

    /// Runs the packets from `rptr` to `end`; returns the new read pointer.
    fn run_pending(
        &self,
        host: &CpHost<'_>,
        rptr: u64,
        end: u64,
        dw: &mut Vec<u32>,
    ) -> hsa_core::Result<u64> {
        let n = end.wrapping_sub(rptr);
        if n > self.ring_dwords {
            return Err(error!(
                Status::InvalidPacketFormat,
                "PM4 queue {}: write pointer {end} against read pointer {rptr}: more than the \
                 ring's {} dwords",
                self.queue_id,
                self.ring_dwords
            ));
        }
        dw.clear();
        dw.resize(n as usize, 0);
        let at = rptr % self.ring_dwords;
        let first = (self.ring_dwords - at).min(n) as usize;
        host.read_dwords(self.ring_va + at * 4, &mut dw[..first])?;
        if first < dw.len() {
            host.read_dwords(self.ring_va, &mut dw[first..])?;
        }
        let mut counts = Pm4Counts::default();
        let done = pm4::execute_ring(
            dw,
            self.ring_va,
            self.ring_dwords,
            rptr,
            &mut host.pm4.borrow_mut(),
            host,
            &mut counts,
        )?;
        self.device
            .stats
            .pm4_packets
            .fetch_add(u64::from(counts.total()), Ordering::SeqCst);
        let rptr = rptr + done as u64;
        host.write_u32(self.read_pointer_va, (rptr % self.ring_dwords) as u32)?;
        Ok(rptr)
    }

    /// The thread body: runs packets until the queue is destroyed or a packet stops it.
    pub(crate) fn run(self) {
        let caches = RefCell::new(interp::Interpreters::default());
        let pm4 = RefCell::new(Pm4State::default());
        let host = CpHost::new(
            &self.device,
            &self.ctl,
            (self.queue_id, self.gpu_id, self.lds_bytes),
            &caches,
            &pm4,
        );
        let _ = host.write_u32(self.read_pointer_va, 0);
        let mut rptr = 0u64;
        let mut idle = IdlePoll::new();
        let mut dw = Vec::new();
        while !self.ctl.stop.load(Ordering::SeqCst) {
            let kicks = self.ctl.kicks();
            if self.ctl.halted() {
                self.ctl.sleep(kicks, Duration::from_secs(1));
                continue;
            }
            let end = self.write_pointer(&host, rptr);
            if end == rptr {
                idle.idle(&self.ctl, kicks);
                continue;
            }
            match self.run_pending(&host, rptr, end, &mut dw) {
                Ok(r) if r != rptr => {
                    rptr = r;
                    idle.active();
                }
                // An incomplete packet: the rest comes with a later write pointer.
                Ok(_) => self.ctl.sleep(kicks, BLOCKED_POLL),
                // Destroyed while a WAIT_REG_MEM or a dispatch ran: the queue is gone, it did
                // not fail (nothing is reported, as for a preempted AQL queue).
                Err(_) if self.ctl.stop.load(Ordering::SeqCst) => return,
                Err(e) => {
                    self.device.report_queue_error(
                        self.queue_id,
                        self.gpu_id,
                        &e,
                        host.fault.get(),
                        false,
                        self.ctl.ctx_save_area(),
                    );
                    // Stopped: wait to be destroyed.
                    while !self.ctl.stop.load(Ordering::SeqCst) {
                        let k = self.ctl.kicks();
                        self.ctl.sleep(k, Duration::from_secs(1));
                    }
                    return;
                }
            }
        }
    }
}

/// The [`ProcessorHost`] of one queue during one `process` call. It read-locks the allocation
/// table for each look at memory only, never across a kernel, whose machine code may run for
/// ever (a wave spinning on a flag the host sets): the host must be able to allocate and free
/// meanwhile, as on a GPU. Every signal it resolved keeps its memory's backing alive (`pins`)
/// until the call ends, so nothing it resolved is unmapped under it.
struct CpHost<'a> {
    device: &'a Device,
    allocs: &'a RwLock<Allocs>,
    /// The backings of the memory the resolved signals are in.
    pins: RefCell<Vec<Arc<Backing>>>,
    /// The KFD queue id this host serves.
    queue_id: u32,
    gpu_id: u32,
    lds_bytes: u32,
    target: Option<Gfx9Target>,
    isa: &'a str,
    /// The access that faulted, when a kernel stopped the queue with a memory fault.
    fault: std::cell::Cell<Option<MemoryFault>>,
    /// The scratch request the last kernel execution was refused for
    /// ([`ProcessorHost::scratch_request`]).
    scratch_request: std::cell::Cell<Option<hsa_core::queue::inactive::ScratchRequest>>,
    /// Whether that fault's KFD memory event is raised already ([`CpHost::raise_vm_fault`]).
    vm_fault_raised: std::cell::Cell<bool>,
    /// Set by DESTROY_QUEUE: a running kernel is preempted ([`ProcessorHost::preempted`]).
    stop: &'a AtomicBool,
    /// The queue's control block (its CU enable masks, its wake-ups).
    ctl: &'a QueueCtl,
    /// The interpreter's decode caches (one per thread running work-groups), kept by the
    /// queue's thread from one dispatch to the next.
    caches: &'a RefCell<interp::Interpreters>,
    /// The queue's PM4 engine state (its compute registers), kept by the queue's thread.
    pm4: &'a RefCell<Pm4State>,
}

impl<'a> CpHost<'a> {
    /// The host a queue's engine thread gives the packet processor or the PM4 engine: queue
    /// `queue_id` on GPU `gpu_id` with `lds_bytes` of LDS per CU (`ids`), its controls, the
    /// decode caches and PM4 register state the thread keeps; nothing faulted or requested
    /// yet.
    fn new(
        device: &'a Device,
        ctl: &'a QueueCtl,
        ids: (u32, u32, u32),
        caches: &'a RefCell<interp::Interpreters>,
        pm4: &'a RefCell<Pm4State>,
    ) -> Self {
        let (queue_id, gpu_id, lds_bytes) = ids;
        let gpu = device.gpu(gpu_id);
        CpHost {
            device,
            allocs: &device.allocs,
            pins: RefCell::new(Vec::new()),
            queue_id,
            gpu_id,
            lds_bytes,
            target: gpu.and_then(|g| g.target),
            isa: gpu.map_or("unknown", |g| g.isa.as_str()),
            fault: std::cell::Cell::new(None),
            scratch_request: std::cell::Cell::new(None),
            vm_fault_raised: std::cell::Cell::new(false),
            stop: &ctl.stop,
            ctl,
            caches,
            pm4,
        }
    }

    /// The allocation table, read-locked until the guard is dropped.
    fn allocs(&self) -> RwLockReadGuard<'_, Allocs> {
        self.allocs.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises the recorded fault's KFD memory event now ([`ProcessorHost::queue_stopping`]:
    /// the queue's inactive signal holds the error, its waiters are not woken yet), as the
    /// GPU's VM raises its fault interrupt before anything tells a waiter that the queue
    /// stopped. ROCR handles both on one thread, the VM fault first when both are pending
    /// (it reports the fault and aborts); when the inactive signal woke it first, its queue
    /// callback reported the CP's memory-violation code (`MEMORY_APERTURE_VIOLATION`) —
    /// which a real GPU does not store for a page fault — instead. hsa-rt's monitor, woken
    /// by the memory event, finds the inactive signal already set. Once per queue stop;
    /// nothing when no fault was recorded.
    fn raise_vm_fault(&self) {
        if let Some(f) = self.fault.get() {
            if !self.vm_fault_raised.replace(true) {
                self.device.raise_vm_fault(self.gpu_id, Some(f));
            }
        }
    }

    /// Runs the host implementation registered for the kernel.
    fn run_host(&self, dispatch: &DecodedKernelDispatch) -> hsa_core::Result<()> {
        let k = self
            .device
            .kernels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .lookup(dispatch.kernel_object)?;
        kernel::run(
            &k.run,
            &k.label,
            dispatch,
            &self.allocs(),
            self.gpu_id,
            self.lds_bytes,
            &self.fault,
        )?;
        self.device.stats.host.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// What the SPI launches this queue's next dispatch with: its CU enable masks as they
    /// are now, and the queue's place in the CP. The emulated amdkfd maps compute queue `q`
    /// to MEC1 (ME_ID 1), pipe `q % 4`, queue `q / 4 % 8`, as a scheduler spreading queues
    /// over the pipes would; its process has VMID 8 (the first of amdkfd's compute VMIDs).
    ///
    /// While the masks enable no CU (a user mask that named none of the GPU's CUs, which
    /// amdkfd accepts) no work-group can launch: the dispatch waits, as the SPI would hang,
    /// until SET_CU_MASK enables a CU or the queue is destroyed.
    ///
    /// # Errors
    /// [`Status::Exception`] (`preempted ...`) when the queue is destroyed meanwhile.
    fn wave_launch(&self) -> hsa_core::Result<WaveLaunch> {
        loop {
            let seen = self.ctl.kicks();
            let cu_enable = *self
                .ctl
                .cu_enable
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Some CU enabled (what `enabled_cus` would find, without making its list): every
            // bit of a mask word is a CU (16 per shader array, 2 arrays per engine).
            const _: () = assert!(MAX_CUS_PER_SHADER_ARRAY * MAX_SHADER_ARRAYS_PER_ENGINE == 32);
            if cu_enable.iter().any(|&w| w != 0) {
                return Ok(WaveLaunch {
                    cu_enable,
                    me_id: 1,
                    pipe_id: (self.queue_id % 4) as u8,
                    queue_id: (self.queue_id / 4 % 8) as u8,
                    vm_id: 8,
                });
            }
            if self.stop.load(Ordering::SeqCst) {
                return Err(error!(
                    Status::Exception,
                    "preempted before its first work-group: the queue's CU mask enables no \
                     compute unit, and the device took the queue away"
                ));
            }
            self.ctl.sleep(seen, BLOCKED_POLL);
        }
    }

    /// How messages name the dispatch's kernel (its registration's label, or its kernel
    /// object), and whether a host implementation is registered for it.
    fn kernel_label(&self, dispatch: &DecodedKernelDispatch) -> (String, bool) {
        let kernels = self
            .device
            .kernels
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        (
            kernels.label(dispatch.kernel_object),
            kernels.by_object.contains_key(&dispatch.kernel_object.0),
        )
    }
}

impl CpHost<'_> {
    /// Runs a dispatch in the interpreter (`run`, given the interpreter state, the wave
    /// launch and `GB_ADDR_CONFIG`), keeping the device's statistics; `label` names the
    /// kernel in messages.
    fn interpret(
        &self,
        target: Gfx9Target,
        label: &dyn Fn() -> String,
        run: &dyn Fn(&mut interp::Interpreters, WaveLaunch, interp::GpuRegs) -> interp::Outcome,
    ) -> hsa_core::Result<()> {
        let launch = self.wave_launch()?;
        let gpu = self
            .device
            .gpu(self.gpu_id)
            .map_or_else(interp::GpuRegs::default, |g| interp::GpuRegs {
                gb_addr_config: g.gb_addr_config,
                sramecc: g.sramecc,
                apertures: g.apertures,
                l2: self.device.l2(self.gpu_id),
            });
        let mut caches = self.caches.borrow_mut();
        let counts = |caches: &[DecodeCache]| {
            caches.iter().fold((0, 0, 0), |(d, i, r), c| {
                (
                    d + c.decoded(),
                    i + c.invalidated_pages(),
                    r + c.code_bytes_read(),
                )
            })
        };
        let before = counts(&caches.caches);
        let started = std::time::Instant::now();
        let outcome = run(&mut caches, launch, gpu);
        let after = counts(&caches.caches);
        drop(caches);
        let c = &self.device.stats;
        c.code_bytes_read
            .fetch_add(after.2 - before.2, Ordering::SeqCst);
        c.decoded.fetch_add(after.0 - before.0, Ordering::SeqCst);
        c.invalidated_pages
            .fetch_add(after.1 - before.1, Ordering::SeqCst);
        match outcome {
            interp::Outcome::Ran(s) => {
                let c = &self.device.stats;
                c.interpreter_ns
                    .fetch_add(started.elapsed().as_nanos() as u64, Ordering::SeqCst);
                c.instructions.fetch_add(s.instructions, Ordering::SeqCst);
                c.lane_instructions
                    .fetch_add(s.lane_instructions, Ordering::SeqCst);
                c.interpreted.fetch_add(1, Ordering::SeqCst);
                // The label is made only for a message (not per dispatch).
                log::debug!(
                    "gpu_id {:#x}: {} interpreted on {}: {} work-groups, {} instructions, \
                     {:.3} s{}",
                    self.gpu_id,
                    label(),
                    target.name(),
                    s.workgroups,
                    s.instructions,
                    started.elapsed().as_secs_f64(),
                    match self.device.l2(self.gpu_id) {
                        Some(l2) => format!("; L2 (cache model) so far: {:?}", l2.stats()),
                        None => String::new(),
                    }
                );
                Ok(())
            }
            interp::Outcome::ScratchRequest(short) => {
                self.scratch_request.set(Some(short));
                Err(error!(
                    Status::OutOfResources,
                    "{} on {}: {}",
                    label(),
                    target.name(),
                    short.error().detail()
                ))
            }
            interp::Outcome::Failed(e, fault) => {
                self.fault.set(fault);
                Err(error!(
                    e.status(),
                    "{} on {}: {}",
                    label(),
                    target.name(),
                    e.detail()
                ))
            }
        }
    }
}

impl ProcessorHost for CpHost<'_> {
    fn acquire_fence(&self, scope: FenceScope) {
        self.device.acquire_fence(self.gpu_id, scope);
    }

    fn release_fence(&self, scope: FenceScope) {
        self.device.release_fence(self.gpu_id, scope);
    }

    fn preempted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn scratch_request(&self) -> Option<hsa_core::queue::inactive::ScratchRequest> {
        self.scratch_request.take()
    }

    fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> hsa_core::Result<()> {
        if self.device.mode() == ExecutionMode::HostOnly {
            return self.run_host(dispatch);
        }
        let Some(target) = self.target else {
            let (label, has_host) = self.kernel_label(dispatch);
            if self.device.mode() == ExecutionMode::InterpretOnly {
                return Err(error!(
                    Status::InvalidIsa,
                    "{label}: HSA_RT_EMULATION=interpret, but the GPU's ISA {} is not one the \
                     emulated device's interpreter runs (gfx900 and its variants, gfx906, gfx908, gfx90a, gfx940/941/942)",
                    self.isa
                ));
            }
            if has_host {
                // Said every time: the machine code did not run.
                log::warn!(
                    "{label}: the emulated device interprets gfx9 machine code only and the \
                     GPU's ISA is {}; running the kernel's host implementation",
                    self.isa
                );
                return self.run_host(dispatch);
            }
            return Err(error!(
                Status::InvalidIsa,
                "{label}: the GPU's ISA {} is not one the emulated device's interpreter runs \
                 (gfx900 and its variants, gfx906, gfx908, gfx90a, gfx940/941/942) and no host implementation is registered for it",
                self.isa
            ));
        };
        let (device, gpu_id) = (self.device, self.gpu_id);
        self.interpret(
            target,
            &|| self.kernel_label(dispatch).0,
            &|caches, launch, gb| {
                interp::run(
                    dispatch,
                    target,
                    self.allocs,
                    self.gpu_id,
                    self.lds_bytes,
                    self.device.threads.load(Ordering::Relaxed),
                    &self.device.stats.workgroups,
                    self.stop,
                    &|data| device.sq_message_interrupt(gpu_id, data),
                    launch,
                    gb,
                    caches,
                )
            },
        )
    }

    fn agent_dispatch(&self, dispatch: &DecodedAgentDispatch) -> hsa_core::Result<()> {
        Err(error!(
            Status::InvalidPacketFormat,
            "agent dispatch packet (function {}) on a GPU compute queue: the emulated CP, like \
             the hardware's, runs kernel dispatch and barrier packets only",
            dispatch.function
        ))
    }

    fn execute_pm4(&self, packet: &DecodedPm4Ib) -> hsa_core::Result<()> {
        let counts = pm4::execute(packet, &mut self.pm4.borrow_mut(), self)?;
        self.device
            .stats
            .pm4_packets
            .fetch_add(u64::from(counts.total()), Ordering::SeqCst);
        Ok(())
    }

    fn resolve_signal(&self, handle: SignalHandle) -> hsa_core::Result<RawSignal> {
        let allocs = self.allocs();
        if let Some(b) = allocs
            .containing(handle.0, 64)
            .and_then(|a| a.backing.clone())
        {
            self.pins.borrow_mut().push(b);
        }
        allocs
            .device_region(self.gpu_id, handle.0, 64)
            .and_then(|r| r.raw_signal())
            .ok_or_else(|| {
                error!(
                    Status::InvalidSignal,
                    "signal handle {:#x} is not a 64-byte aligned amd_signal_t inside a live \
                     allocation mapped to GPU {:#x}",
                    handle.0,
                    self.gpu_id
                )
            })
    }

    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> hsa_core::Result<()> {
        if self.device.event_sink(self.gpu_id).is_some() {
            // The model interface's host keeps no mailbox page (its CREATE_EVENT gives no
            // slot): the event id alone reaches it, through `signal_event`.
            return Ok(());
        }
        let events = self
            .device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let word = events.page.as_ref().and_then(|p| {
            p.slot_offset(mailbox.0)
                .and_then(|off| p.region.atomic_u64(off))
        });
        match word {
            Some(w) => {
                // Release pairs with the Acquire load in Events::poll_slot (and a waiter's).
                w.store(u64::from(event_id), Ordering::Release);
                Ok(())
            }
            None => Err(error!(
                Status::InvalidSignal,
                "event mailbox {:#x} is not a slot of the event page", mailbox.0
            )),
        }
    }

    fn signal_event(&self, event_id: u32) {
        if let Some(sink) = self.device.event_sink(self.gpu_id) {
            return sink(event_id);
        }
        self.device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .poll_slot(event_id);
    }

    fn signal_event_by_id(&self, signal: SignalHandle, event_id: u32) {
        let Some(sink) = self.device.event_sink(self.gpu_id) else {
            // amdkfd wakes an event only through its slot in the event page.
            return;
        };
        // The read guard spans the call: the model's `freed_memory` (which takes the table
        // for writing) cannot free the signal's memory, nor the runtime then destroy its
        // event, until the host took the event; once the memory is freed, nothing is raised.
        let allocs = self.allocs();
        if allocs.device_region(self.gpu_id, signal.0, 64).is_some() {
            sink(event_id);
        }
    }

    fn timestamp_ticks(&self) -> u64 {
        super::clock::monotonic_ns()
    }

    fn report_error(&self, _error: &Error) {
        // The thread reports the error (log, KFD events) from Progress::Stopped, once the
        // allocation lock is released.
    }

    fn queue_stopping(&self, error: &Error) {
        // Recorded before any event can tell a waiter that the queue stopped (the thread
        // records it again, with the rest of the report, once the allocation lock is
        // released).
        self.device.record_queue_error(self.queue_id, error);
        self.raise_vm_fault();
    }
}

/// The GPU's side of the PM4 engine: its accesses go through the allocations mapped to it,
/// as the CP's go through the GPU's page tables; a fault is recorded for the KFD memory
/// event, as a kernel's is.
impl CpHost<'_> {
    /// The memory fault of a PM4 access (`what`) that reached, at `va`, user memory its owner
    /// unmapped, recorded for the memory event.
    fn unmapped(&self, va: u64, what: &str) -> hsa_core::Error {
        self.fault.set(Some(MemoryFault::of(va, what)));
        hsa_core::error!(
            hsa_core::Status::MemoryFault,
            "memory fault on GPU {:#x}: {what} at {va:#x}: user memory that was unmapped",
            self.gpu_id
        )
    }
}

impl Pm4Memory for CpHost<'_> {
    fn l2_action(&self, action: crate::gfx9::exec::L2Action) {
        match action {
            crate::gfx9::exec::L2Action::WriteBack => self.device.write_back_l2(self.gpu_id),
            crate::gfx9::exec::L2Action::Invalidate => {
                if let Some(l2) = self.device.l2(self.gpu_id) {
                    l2.invalidate();
                }
            }
        }
    }

    fn read_dwords(&self, va: u64, out: &mut [u32]) -> hsa_core::Result<()> {
        let len = out.len() as u64 * 4;
        let allocs = self.allocs();
        // The buffer may cross from one allocation into the next: the CP, like any GPU
        // client, needs its pages mapped, not one buffer object.
        let span = allocs
            .device_span(self.gpu_id, va, len, "PM4 indirect buffer read")
            .map_err(|f| {
                self.fault.set(Some(MemoryFault::of(f.address, "read")));
                f.error
            })?;
        let mut bytes = vec![0u8; out.len() * 4];
        span.try_read_into(&mut bytes)
            .map_err(|f| self.unmapped(va + f.offset, "PM4 indirect buffer read"))?;
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }

    fn write_u32(&self, va: u64, value: u32) -> hsa_core::Result<()> {
        let allocs = self.allocs();
        let region = allocs
            .device_region_or_fault(self.gpu_id, va, 4, "PM4 write")
            .inspect_err(|_| self.fault.set(Some(MemoryFault::of(va, "write"))))?;
        // Release (a SeqCst store for user memory) pairs with the Acquire load of whoever
        // polls the word (a signal's waiter, the host).
        match region.atomic_u32(0).filter(|_| !region.is_user()) {
            Some(w) => w.store(value, Ordering::Release),
            None => region
                .try_write_from(&value.to_le_bytes())
                .map_err(|f| self.unmapped(va + f.offset, "PM4 write"))?,
        }
        Ok(())
    }

    fn write_u64(&self, va: u64, value: u64) -> hsa_core::Result<()> {
        let allocs = self.allocs();
        let region = allocs
            .device_region_or_fault(self.gpu_id, va, 8, "PM4 write")
            .inspect_err(|_| self.fault.set(Some(MemoryFault::of(va, "write"))))?;
        match region.atomic_u64(0).filter(|_| !region.is_user()) {
            // Release: as in write_u32.
            Some(w) => w.store(value, Ordering::Release),
            None => region
                .try_write_from(&value.to_le_bytes())
                .map_err(|f| self.unmapped(va + f.offset, "PM4 write"))?,
        }
        Ok(())
    }

    fn gpu_clock(&self) -> u64 {
        super::clock::monotonic_ns()
    }

    fn end_of_pipe_interrupt(&self, context_id: u32) {
        if let Some(sink) = self.device.event_sink(self.gpu_id) {
            return sink(context_id);
        }
        self.device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .end_of_pipe_interrupt(context_id);
    }

    fn dispatch(&self, dispatch: &ComputeDispatch) -> hsa_core::Result<()> {
        let label = || format!("PM4 dispatch of COMPUTE_PGM {:#x}", dispatch.entry);
        let Some(target) = self.target else {
            return Err(error!(
                Status::InvalidIsa,
                "{}: the GPU's ISA {} is not one the emulated device's interpreter runs (a PM4 \
                 dispatch has no host implementation)",
                label(),
                self.isa
            ));
        };
        let (device, gpu_id) = (self.device, self.gpu_id);
        let r = self.interpret(target, &label, &|caches, launch, gb| {
            interp::run_registers(
                dispatch,
                target,
                self.allocs,
                self.gpu_id,
                self.lds_bytes,
                self.device.threads.load(Ordering::Relaxed),
                &self.device.stats.workgroups,
                self.stop,
                &|data| device.sq_message_interrupt(gpu_id, data),
                launch,
                gb,
                caches,
            )
        });
        // A PM4 queue has no scratch request: COMPUTE_TMPRING_SIZE too small is the error.
        self.scratch_request.take();
        r
    }

    fn poll_interval(&self) -> hsa_core::Result<()> {
        if self.stop.load(Ordering::SeqCst) {
            return Err(error!(
                Status::Exception,
                "preempted: the device took the queue away"
            ));
        }
        let seen = self.ctl.kicks();
        self.ctl.sleep(seen, BLOCKED_POLL);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy's steps, without timing anything: a poll whose last activity is long past
    /// still spins until its clock read ([`SPIN_CLOCK_EVERY`] polls), then sleeps — here not
    /// at all, the control block having been kicked since `kicks` was read — doubling the
    /// sleep from [`POLL_MIN`] up to [`POLL_MAX`]; activity starts it over.
    #[test]
    fn idle_poll_spins_until_its_clock_read_then_backs_off() {
        let ctl = QueueCtl::default();
        let stale = ctl.kicks();
        ctl.kick();
        let mut idle = IdlePoll::new();
        idle.activity -= IDLE_SPIN * 2;
        for _ in 0..SPIN_CLOCK_EVERY - 1 {
            idle.idle(&ctl, stale);
            assert!(idle.spinning);
        }
        idle.idle(&ctl, stale);
        assert!(!idle.spinning);
        let mut sleeps = Vec::new();
        for _ in 0..8 {
            sleeps.push(idle.sleep);
            idle.idle(&ctl, stale);
        }
        let us = |n| Duration::from_micros(n);
        assert_eq!(
            sleeps,
            [
                us(50),
                us(100),
                us(200),
                us(400),
                us(800),
                us(1000),
                us(1000),
                us(1000)
            ]
        );
        idle.active();
        assert!(idle.spinning && idle.polls == 0 && idle.sleep == POLL_MIN);
        // Within the spin window the clock read keeps it spinning.
        for _ in 0..SPIN_CLOCK_EVERY {
            idle.idle(&ctl, stale);
        }
        assert!(idle.spinning || idle.activity.elapsed() >= IDLE_SPIN);
    }
}
