//! The software packet processor: the consumer side of an AQL queue.
//!
//! A [`PacketProcessor`] takes packets off a [`Ring`] in write-index order and runs each to
//! completion, doing what the GPU's command processor does for a hardware queue: it is what
//! serves the emulated device's compute queues and soft queues (and the core's own tests,
//! which run it over rings in the fake platform's memory, `platform::fake` with the `fake`
//! feature). Whoever
//! hosts it (a thread on Linux, a core or an interrupt handler on bare
//! metal) calls [`PacketProcessor::process`] when the doorbell rings or a signal event fires,
//! and supplies a [`ProcessorHost`]: kernel execution, the agent-dispatch table, signal-handle
//! validation, mailboxes, events, time and error reporting.
//!
//! # Protocol (consumer)
//! For the packet at the read index (Ref: HSA PSA 1.2 §2.9 "Architected Queuing Language"):
//! 1. Acquire-load the slot's first 32 bits; INVALID means no packet yet ([`Progress::Idle`]).
//!    The load pairs with the producer's Release store in [`Ring::publish`].
//! 2. Decode and validate the packet, and resolve its completion signal through the host:
//!    packets are untrusted, so a bad field or an unknown signal handle stops the queue before
//!    anything of the packet runs.
//! 3. Barrier bit: this processor runs packets strictly in order and each to completion, so
//!    when a packet launches every earlier packet has completed and the bit is always
//!    satisfied. Acquire fence: for agent or system scope a `fence(Acquire)`.
//! 4. Run: a kernel through [`ProcessorHost::execute_kernel`], an agent function through
//!    [`ProcessorHost::agent_dispatch`], the PM4 commands of an AMD PM4-IB vendor packet
//!    through [`ProcessorHost::execute_pm4`], barriers by reading their dependency signals (a
//!    barrier not yet satisfied leaves the packet in place: [`Progress::Blocked`]).
//! 5. Complete: for agent or system release scope a `fence(Release)`; with profiling on
//!    (`AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`) store start and end timestamps into the
//!    completion signal; decrement its value by 1 (Release); if it has an event mailbox, write
//!    the event id there (through the host, which checks the address) and wake the event;
//!    store INVALID into the slot's header (Release); advance `read_dispatch_id` (Release,
//!    pairing with the producer's Acquire load of the read index in back-pressure).
//!
//! # Barriers
//! - Barrier-AND (PSA §2.9.8): satisfied when every dependency's value is 0; null handles are
//!   satisfied dependencies (`hsa.h`), so an all-null barrier-AND completes at once.
//! - Barrier-OR (PSA §2.9.9): satisfied when any dependency's value is 0; null handles are
//!   dependencies never satisfied (`hsa.h`), so an all-null barrier-OR blocks the queue for
//!   good, as on hardware.
//! - A dependency with a negative value is a failed dependency: the barrier completes with an
//!   error and the queue stops with `Status::Error` (the PSA's barrier error rule, as this
//!   module reads it).
//! - AMD barrier-value (`hsa_ext_amd.h`): satisfied when `(value & mask) cond compare`.
//!
//! # Errors
//! A malformed packet (undefined type, reserved fence scope, bad dimensions, zero sizes,
//! null kernel object; not a misaligned kernarg address, which the CP passes on), an
//! unknown signal handle, or a host error from
//! the kernel executor or agent handler stops the queue: the error is reported once through
//! [`ProcessorHost::report_error`], [`PacketProcessor::process`] returns
//! [`Progress::Stopped`] now and forever, the bad packet's header stays as it is and the read
//! index is not advanced past it. Packet errors carry `INVALID_PACKET_FORMAT`, unknown signals
//! the host's status (`INVALID_SIGNAL`), host errors their own status. Before the report, the
//! queue's `amd_queue_t.queue_inactive_signal` (if the host knows the handle) is set to the
//! command processor's queue error code for the error, with the `hsa_status_t` in its upper
//! half ([`crate::queue::inactive`]: ROCR decodes the code), and its event is signaled, so
//! that waiters on it wake (ROCR watches this signal for CP-reported queue errors).
//!
//! # Soft queues
//! `hsa_soft_queue_create` makes a queue whose packet processor is the user's own code (CPU
//! agents, agent dispatch). That is a [`PacketProcessor`] over the soft queue's ring with a
//! host whose `execute_kernel` returns an error and whose `agent_dispatch` looks the function
//! up in the user's table: no separate type is needed.

mod decode;
mod slot;
#[cfg(test)]
mod tests;
mod vendor;

pub use decode::{Command, DecodedAgentDispatch, DecodedKernelDispatch};
pub use slot::RingConsumer;
pub use vendor::DecodedPm4Ib;

use crate::abi::packet::{FenceScope, PacketType, PACKET_SIZE_BYTES};
use crate::abi::queue::AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
use crate::abi::SignalHandle;
use crate::addr::GpuVa;
use crate::queue::inactive;
use crate::queue::ring::Ring;
use crate::signal::raw::RawSignal;
use crate::status::{Error, Result, Status};
use crate::sync::{fence, Ordering};

/// What a packet processor needs from whoever hosts it.
///
/// Every method may be called from the thread (or interrupt context) that calls
/// [`PacketProcessor::process`]; none may call back into the same processor.
pub trait ProcessorHost {
    /// The kernel executor: runs one validated kernel dispatch to completion (grid and
    /// work-group sizes, kernarg address, group and private segment sizes, kernel object).
    ///
    /// # Errors
    /// Any error stops the queue with its status, e.g. `Status::InvalidPacketFormat` for a
    /// kernel object the host does not know, `Status::MemoryFault` for a kernarg address it
    /// cannot reach.
    fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> Result<()>;

    /// Runs the agent function registered for `dispatch.function` (the packet's `type`). The
    /// processor does nothing with `return_address`; the handler stores its result there.
    ///
    /// # Errors
    /// Any error stops the queue with its status, e.g. `Status::InvalidPacketFormat` for an
    /// unregistered function id.
    fn agent_dispatch(&self, dispatch: &DecodedAgentDispatch) -> Result<()>;

    /// Runs the PM4 commands of an AMD PM4-IB vendor packet (`AMD_AQL_FORMAT_PM4_IB`, ROCR's
    /// `amd_aql_pm4_ib`) to completion, as the command processor does; the processor then
    /// completes the packet as any other (release fence, completion signal). The default is
    /// for hosts without a PM4 engine: the queue stops with `Status::InvalidPacketFormat`, as
    /// a command processor stops on a vendor packet it does not support.
    ///
    /// # Errors
    /// Any error stops the queue with its status, e.g. `Status::InvalidPacketFormat` for a
    /// PM4 packet the host does not execute, `Status::MemoryFault` for an indirect buffer it
    /// cannot read.
    fn execute_pm4(&self, packet: &DecodedPm4Ib) -> Result<()> {
        crate::bail!(
            Status::InvalidPacketFormat,
            "AMD vendor packet of format PM4_IB (1), PM4 header {:#010x}: this packet \
             processor runs no PM4 commands",
            packet.pm4[0]
        )
    }

    /// The device's cache actions for a packet's acquire fence of `scope` (HSA Platform
    /// System Architecture Specification 2.9, "memory model": the acquire makes what other
    /// agents released visible to the packet), applied when the packet launches: before a
    /// kernel, agent or PM4-IB packet runs, and once a barrier packet's dependencies are
    /// satisfied. The processor itself has issued an Acquire memory fence already. A command
    /// processor invalidates its caches here (at system scope, the L2 on gfx9). The default
    /// does nothing: a host whose memory has no cache of its own.
    fn acquire_fence(&self, _scope: FenceScope) {}

    /// The device's cache actions for a packet's release fence of `scope` (HSA PSA 2.9: the
    /// release makes what the packet wrote visible to the agents of that scope), applied
    /// after the packet completed and before its completion signal is decremented, ahead of
    /// the processor's own Release memory fence. A command processor writes its caches back
    /// here (at system scope, the L2 on gfx9). The default does nothing.
    fn release_fence(&self, _scope: FenceScope) {}

    /// Turns a signal handle from a packet (never null) into a live signal. The host must
    /// check that the handle names a signal it knows, so that an untrusted packet can never
    /// make the processor write through a wild pointer.
    ///
    /// # Errors
    /// `Status::InvalidSignal` for a handle that is not a live signal.
    fn resolve_signal(&self, handle: SignalHandle) -> Result<RawSignal>;

    /// Stores `event_id` (zero-extended) into the 64-bit event mailbox slot at `mailbox` with
    /// Release, after checking that `mailbox` is a slot the host made (the signal's
    /// `event_mailbox_ptr` is user-writable memory).
    ///
    /// # Errors
    /// `Status::InvalidSignal` when `mailbox` is not a live mailbox slot.
    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> Result<()>;

    /// Wakes the waiters of event `event_id` (an interrupt signal changed). Never blocks.
    fn signal_event(&self, event_id: u32);

    /// Raises event `event_id` of `signal`, an interrupt signal whose value just changed and
    /// whose `event_mailbox_ptr` is 0, for a host whose KFD takes signal events by id alone:
    /// AMD's hsakmt model interface (`hsakmtmodeliface.h`: `hsakmt_model_set_event_fn` takes
    /// `amd_signal_t::event_id`), whose libhsakmt gives events no mailbox slot. A CP raises
    /// an event only through its mailbox (`amd_signal_t`, AMDGPUUsage "Signal"), so the
    /// default raises nothing. A host should raise nothing once `signal`'s memory is freed:
    /// the runtime may have destroyed the event with it. Never blocks for long.
    fn signal_event_by_id(&self, signal: SignalHandle, event_id: u32) {
        let _ = (signal, event_id);
    }

    /// The current timestamp, in the ticks of `HSA_SYSTEM_INFO_TIMESTAMP`; monotonic.
    fn timestamp_ticks(&self) -> u64;

    /// The queue stopped with `error`: call the queue's error callback. Called once per queue.
    fn report_error(&self, error: &Error);

    /// The processor stopped the queue with `error` and has stored it into the queue's
    /// `queue_inactive_signal`, and is about to wake the signal's waiters (its mailbox and
    /// event): the moment for a device to record the error and raise what its hardware
    /// raises before a waiter can look — the emulated amdkfd logs the error and sets KFD's
    /// memory event of a page fault here, as a GPU's VM raises its fault interrupt before
    /// anyone learns that the queue stopped. Called at most once per queue, only when the
    /// inactive signal resolved, before [`ProcessorHost::report_error`]. The default does
    /// nothing.
    fn queue_stopping(&self, error: &Error) {
        let _ = error;
    }

    /// Whether the queue is being taken off the device while a packet runs: amdkfd's
    /// DESTROY_QUEUE unmaps a queue from the hardware and its waves end wherever they are, so
    /// a kernel that would never finish (one spinning on a host flag) still lets its queue go.
    /// When a packet's execution fails and this says `true`, the processor abandons the
    /// packet: it neither completes it nor stops the queue with the error (nothing is stored
    /// into `queue_inactive_signal`, no error is reported), leaves it in its slot and returns
    /// [`Progress::Blocked`] (or [`Progress::Processed`] for the packets before it); the
    /// caller is expected to drop the processor. The default says `false`.
    fn preempted(&self) -> bool {
        false
    }

    /// Whether the last failure of [`ProcessorHost::execute_kernel`] was the command
    /// processor's scratch request, typed: the queue's scratch (`amd_queue_t`'s
    /// `compute_tmpring_size` and scratch descriptor) is too small for the dispatch. Taken:
    /// the processor asks once per failure. The processor then does not stop the queue: it
    /// stores the wave64 scratch-request queue error code ([`inactive::CP_SCRATCH_WAVE64`],
    /// upper half 0, as the CP does) into `queue_inactive_signal`, wakes its waiters, and
    /// waits — [`Progress::Blocked`] — until the runtime stores 0 there again (ROCR's
    /// `DynamicScratchHandler`, hsa-core's
    /// `AqlQueue::serve_scratch_request`,
    /// grow the queue's scratch, rewrite those fields and store 0 to resume the queue); then
    /// it runs the same packet again, re-reading the fields. The default says `None` (hosts
    /// that run no machine code have no scratch).
    fn scratch_request(&self) -> Option<crate::queue::inactive::ScratchRequest> {
        None
    }
}

/// What one call of [`PacketProcessor::process`] achieved.
// Errors carry an inline message (no allocator), as `result_large_err` is allowed workspace-wide.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// No packet was processed: the slot at the read index holds no valid packet. Wait for
    /// the doorbell.
    Idle,
    /// No packet was processed: the packet at the read index is a barrier whose condition
    /// does not hold yet. Poll again later or when a signal event fires.
    Blocked,
    /// This many packets completed (at least 1); call again to continue.
    Processed(u32),
    /// The queue is stopped after this error; the processor never processes again.
    Stopped(Error),
}

/// The consumer of one AQL queue: takes packets at the read index, runs them in order, each
/// to completion.
#[derive(Debug)]
/// # Example
/// A ring of 16 packets and its `amd_queue_t` in the fake platform's memory, a barrier-AND
/// packet written by a [`Producer`](crate::queue::Producer), and the processor consuming it for
/// a host that runs no kernels (the emulated device's command processor is a full host; the
/// [crate's quick start](crate#quick-start) dispatches a kernel through it).
/// ```
/// use std::ptr::NonNull;
///
/// use hsa_core::abi::queue::AmdQueue;
/// use hsa_core::abi::SignalHandle;
/// use hsa_core::packet::{BarrierAnd, HeaderFlags};
/// use hsa_core::packet_processor::{
///     DecodedAgentDispatch, DecodedKernelDispatch, PacketProcessor, ProcessorHost, Progress,
///     RingConsumer,
/// };
/// use hsa_core::platform::fake::FakePlatform;
/// use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
/// use hsa_core::queue::ring::{Ring, INVALID_HEADER_WORD};
/// use hsa_core::queue::Producer;
/// use hsa_core::signal::raw::RawSignal;
/// use hsa_core::{bail, Error, GpuVa, NodeId, Result, Status};
///
/// /// A host without kernels, agent functions or signals: enough for a barrier without any.
/// struct NoDevice;
///
/// impl ProcessorHost for NoDevice {
///     fn execute_kernel(&self, _: &DecodedKernelDispatch) -> Result<()> {
///         bail!(Status::InvalidPacketFormat, "no kernels here")
///     }
///     fn agent_dispatch(&self, _: &DecodedAgentDispatch) -> Result<()> {
///         bail!(Status::InvalidPacketFormat, "no agent functions here")
///     }
///     fn resolve_signal(&self, handle: SignalHandle) -> Result<RawSignal> {
///         bail!(Status::InvalidSignal, "no signal {:#x}", handle.0)
///     }
///     fn write_mailbox(&self, _: GpuVa, _: u32) -> Result<()> {
///         Ok(())
///     }
///     fn signal_event(&self, _: u32) {}
///     fn timestamp_ticks(&self) -> u64 {
///         0
///     }
///     fn report_error(&self, _: &Error) {}
/// }
///
/// let platform = FakePlatform::new();
/// let chunk = platform.allocate_memory(&MemoryRequest {
///     node: NodeId(0),
///     kind: MemoryKind::System,
///     size_bytes: 8192,
///     align_bytes: 4096,
///     flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
/// })?;
/// let base = chunk.host_ptr.expect("the fake's memory is the host's");
/// let amd_queue = NonNull::new(base.as_ptr().wrapping_add(4096)).unwrap().cast::<AmdQueue>();
/// // SAFETY: 16 slots of 64 bytes at 0 and the 256-byte amd_queue_t at 4096 lie in the zeroed
/// // 8 KiB chunk, 64-aligned; the chunk lives as long as the platform, longer than the ring.
/// let ring = unsafe { Ring::new(base, 16, amd_queue) };
/// for i in 0..16 {
///     ring.header_word(i).store(INVALID_HEADER_WORD, std::sync::atomic::Ordering::Release);
/// }
/// // SAFETY: this processor is the ring's only consumer.
/// let mut processor = PacketProcessor::new(unsafe { RingConsumer::new(ring) });
/// assert_eq!(processor.process(&NoDevice, 16), Progress::Idle);
///
/// let producer = Producer::new(ring, false);
/// let barrier = BarrierAnd::new(HeaderFlags::SYSTEM, &[], SignalHandle::NULL)?;
/// producer.reserve(1)?.write_next(&barrier.emit()?)?;
/// assert_eq!(processor.process(&NoDevice, 16), Progress::Processed(1));
/// assert_eq!((processor.read_index(), processor.process(&NoDevice, 16)), (1, Progress::Idle));
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct PacketProcessor {
    consumer: RingConsumer,
    stopped: Option<Error>,
    /// Start timestamp of the packet at `read_index` when it was first seen blocked.
    started: Option<(u64, u64)>,
    /// Device address of slot 0 of the ring.
    ring_address: GpuVa,
    /// Device address of the `amd_queue_t`.
    queue_address: GpuVa,
    /// Waiting for the runtime to serve a scratch request (the inactive signal to be 0).
    scratch_wait: bool,
}

enum Step {
    Idle,
    Blocked,
    Done,
}

impl PacketProcessor {
    /// A processor over a ring's consumer role. Profiling follows the
    /// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING` bit of the ring's `queue_properties`, read at
    /// every packet (the host sets and clears it on a live queue:
    /// `hsa_amd_profiling_set_profiler_enabled`, as ROCR's `AqlQueue::SetProfiling`).
    pub fn new(consumer: RingConsumer) -> PacketProcessor {
        PacketProcessor {
            ring_address: host_addresses(consumer.ring()).0,
            queue_address: host_addresses(consumer.ring()).1,
            consumer,
            stopped: None,
            started: None,
            scratch_wait: false,
        }
    }

    /// Sets the device addresses of the ring's first slot and of the `amd_queue_t`, which
    /// [`DecodedKernelDispatch::packet_address`] and [`DecodedKernelDispatch::queue_address`] are computed
    /// from. By default they are the host addresses the [`Ring`] was made with, which is right
    /// wherever the device sees memory at the CPU's addresses (KFD maps system and VRAM
    /// allocations at one shared virtual address); a host that reaches the ring through a
    /// different mapping (the emulated device's own view) gives the device addresses here.
    pub fn set_device_addresses(&mut self, ring_address: GpuVa, queue_address: GpuVa) {
        self.ring_address = ring_address;
        self.queue_address = queue_address;
    }

    /// The device address of the slot of packet `index`:
    /// `ring_address + (index mod size_packets) * 64`.
    pub fn packet_address(&self, index: u64) -> GpuVa {
        let slot = index & u64::from(self.ring().size_packets().wrapping_sub(1));
        GpuVa(
            self.ring_address
                .0
                .wrapping_add(slot * PACKET_SIZE_BYTES as u64),
        )
    }

    /// The ring it consumes.
    pub fn ring(&self) -> &Ring {
        self.consumer.ring()
    }

    /// The index, in packets, of the next packet to process.
    pub fn read_index(&self) -> u64 {
        self.consumer.read_index()
    }

    /// Whether timestamps are written into completion signals: the
    /// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING` bit of the ring's `queue_properties` now.
    pub fn profiling(&self) -> bool {
        self.consumer.ring().queue_properties() & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING != 0
    }

    /// The error that stopped the queue, if it is stopped.
    pub fn stopped(&self) -> Option<&Error> {
        self.stopped.as_ref()
    }

    /// Processes up to `max_packets` packets.
    ///
    /// Returns [`Progress::Processed`] when at least one packet completed (the caller loops
    /// until `Idle` or `Blocked`), and [`Progress::Stopped`] when a packet failed (now or
    /// earlier); see the module docs for what stops a queue.
    pub fn process<H: ProcessorHost + ?Sized>(&mut self, host: &H, max_packets: u32) -> Progress {
        if let Some(e) = &self.stopped {
            return Progress::Stopped(e.clone());
        }
        if self.scratch_wait {
            let handle = self.consumer.ring().queue_inactive_signal();
            match Self::resolve(host, handle) {
                // Acquire pairs with the runtime's release store of 0 after it rewrote the
                // scratch fields of amd_queue_t.
                Ok(Some(sig)) if sig.value().load(Ordering::Acquire) != 0 => {
                    return Progress::Blocked
                }
                _ => self.scratch_wait = false,
            }
        }
        let mut done = 0;
        while done < max_packets {
            match self.step(host) {
                Ok(Step::Done) => {
                    log::trace!("packet {} processed", self.consumer.read_index() - 1);
                    done += 1;
                }
                Ok(Step::Idle) if done == 0 => return Progress::Idle,
                Ok(Step::Blocked) if done == 0 => return Progress::Blocked,
                Ok(_) => break,
                Err(_) if host.preempted() => {
                    log::debug!(
                        "packet {} abandoned: the queue is being destroyed",
                        self.consumer.read_index()
                    );
                    break;
                }
                Err(e) if host.scratch_request().is_some() && self.request_scratch(host) => {
                    log::debug!(
                        "packet {}: scratch request stored in the inactive signal: {}",
                        self.consumer.read_index(),
                        e.detail()
                    );
                    break;
                }
                Err(e) => {
                    let e = e.context_index(self.consumer.read_index());
                    // The platform reports the error at error level, naming its queue; the detail
                    // names the packet (`context_index`).
                    log::debug!(
                        "packet processor stopped with {}: {}",
                        e.status().c_name(),
                        e.detail()
                    );
                    // The packet that failed is still in its slot.
                    let vendor = self
                        .consumer
                        .peek()
                        .is_some_and(|b| b[0] == PacketType::VendorSpecific as u8);
                    Self::mark_inactive(
                        host,
                        self.consumer.ring().queue_inactive_signal(),
                        &e,
                        vendor,
                    );
                    host.report_error(&e);
                    self.stopped = Some(e.clone());
                    return Progress::Stopped(e);
                }
            }
        }
        if done == 0 {
            if host.preempted() || self.scratch_wait {
                return Progress::Blocked;
            }
            Progress::Idle
        } else {
            Progress::Processed(done)
        }
    }

    fn resolve<H: ProcessorHost + ?Sized>(
        host: &H,
        handle: SignalHandle,
    ) -> Result<Option<RawSignal>> {
        if handle.is_null() {
            Ok(None)
        } else {
            host.resolve_signal(handle).map(Some)
        }
    }

    fn step<H: ProcessorHost + ?Sized>(&mut self, host: &H) -> Result<Step> {
        let index = self.consumer.read_index();
        let Some(bytes) = self.consumer.peek() else {
            return Ok(Step::Idle);
        };
        let (header, mut command) = match vendor::decode_pm4_ib(&bytes) {
            Some(pm4_ib) => pm4_ib?,
            None => decode::decode(&bytes)?,
        };
        if let Command::Kernel(k) = &mut command {
            k.packet_address = self.packet_address(index);
            k.queue_address = self.queue_address;
            k.dispatch_id = index;
        }
        let completion = Self::resolve(host, command.completion_signal())?;
        // A barrier packet launches when its dependencies are satisfied: its acquire applies
        // then (below); any other packet's before it runs.
        let barrier = matches!(
            command,
            Command::BarrierAnd(_) | Command::BarrierOr(_) | Command::BarrierValue(..)
        );
        if header.acquire_fence_scope != FenceScope::None {
            fence(Ordering::Acquire);
            if !barrier {
                host.acquire_fence(header.acquire_fence_scope);
            }
        }
        let profiling = self.profiling();
        let start_ts = match self.started {
            Some((i, ts)) if i == index => ts,
            _ if profiling => host.timestamp_ticks(),
            _ => 0,
        };
        let satisfied = match &command {
            Command::Kernel(k) => host.execute_kernel(k).map(|()| true)?,
            Command::Agent(a) => host.agent_dispatch(a).map(|()| true)?,
            Command::AmdPm4Ib(p) => host.execute_pm4(p).map(|()| true)?,
            Command::BarrierAnd(b) => {
                let mut all = true;
                for (i, &d) in b.dep_signals.iter().enumerate() {
                    if let Some(v) = Self::dep_value(host, i, d)? {
                        all &= v == 0;
                    }
                }
                all
            }
            Command::BarrierOr(b) => {
                let mut any = false;
                for (i, &d) in b.dep_signals.iter().enumerate() {
                    if let Some(v) = Self::dep_value(host, i, d)? {
                        any |= v == 0;
                    }
                }
                any
            }
            // hsa_ext_amd.h: a 0 dependency handle is satisfied, whatever the condition.
            Command::BarrierValue(b, _) if b.signal.is_null() => true,
            Command::BarrierValue(b, cond) => {
                let sig = host.resolve_signal(b.signal)?;
                let v = sig.value().load(Ordering::Acquire);
                cond.holds(v & b.mask, b.value)
            }
        };
        if !satisfied {
            self.started = Some((index, start_ts));
            return Ok(Step::Blocked);
        }
        if barrier && header.acquire_fence_scope != FenceScope::None {
            host.acquire_fence(header.acquire_fence_scope);
        }
        if header.release_fence_scope != FenceScope::None {
            host.release_fence(header.release_fence_scope);
            fence(Ordering::Release);
        }
        let mut notify = Ok(());
        if let Some(sig) = completion {
            if profiling {
                sig.start_ts().store(start_ts, Ordering::Relaxed);
                sig.end_ts()
                    .store(host.timestamp_ticks().max(start_ts), Ordering::Relaxed);
            }
            // Release pairs with the waiter's Acquire load of the value: everything the
            // packet wrote (and the timestamps) is visible once the waiter sees the decrement.
            sig.value().fetch_sub(1, Ordering::Release);
            notify = Self::raise_event(host, command.completion_signal(), &sig);
        }
        self.consumer.release();
        self.started = None;
        notify.map(|()| Step::Done)
    }

    /// Stores the scratch-request queue error code into the queue's `queue_inactive_signal`
    /// and wakes its waiters ([`ProcessorHost::scratch_request`]); `false` when the queue
    /// has no inactive signal the host knows (no runtime can serve the request: the queue
    /// stops with the error instead).
    fn request_scratch<H: ProcessorHost + ?Sized>(&mut self, host: &H) -> bool {
        let Ok(Some(sig)) = Self::resolve(host, self.consumer.ring().queue_inactive_signal())
        else {
            return false;
        };
        // Release pairs with the Acquire load of a waiter on the inactive signal.
        sig.value()
            .store(i64::from(inactive::CP_SCRATCH_WAVE64), Ordering::Release);
        self.scratch_wait = true;
        // A bad mailbox leaves the queue waiting for the runtime, which polls the signal.
        let _ = Self::raise_event(host, self.consumer.ring().queue_inactive_signal(), &sig);
        true
    }

    /// Raises the event of `sig` (resolved from `handle`) after its value changed: through its
    /// event mailbox when it has one (write the event id, then wake the event's waiters), else
    /// by id where the host's KFD takes events so ([`ProcessorHost::signal_event_by_id`]).
    ///
    /// # Errors
    /// `Status::InvalidSignal` when the mailbox is not a live mailbox slot.
    fn raise_event<H: ProcessorHost + ?Sized>(
        host: &H,
        handle: SignalHandle,
        sig: &RawSignal,
    ) -> Result<()> {
        let mailbox = sig.event_mailbox_ptr().load(Ordering::Acquire);
        let id = sig.event_id();
        if mailbox != 0 {
            host.write_mailbox(GpuVa(mailbox), id)?;
            host.signal_event(id);
        } else if id != 0 {
            host.signal_event_by_id(handle, id);
        }
        Ok(())
    }

    /// Sets the queue's `queue_inactive_signal` (when there is one the host knows) to the
    /// command processor's queue error code for the error, with its `hsa_status_t` in the
    /// upper half ([`inactive::encode`]; `vendor_packet`: the failing packet was an AMD
    /// vendor packet), as the CP does when it stops a queue, and wakes its waiters through
    /// its event. Best effort: a bad handle or mailbox is ignored (the error callback still
    /// reports the stop).
    fn mark_inactive<H: ProcessorHost + ?Sized>(
        host: &H,
        handle: SignalHandle,
        error: &Error,
        vendor_packet: bool,
    ) {
        let Ok(Some(sig)) = Self::resolve(host, handle) else {
            return;
        };
        // Release pairs with the Acquire load of a waiter on the inactive signal.
        sig.value().store(
            inactive::encode(error.status(), vendor_packet),
            Ordering::Release,
        );
        host.queue_stopping(error);
        let mailbox = sig.event_mailbox_ptr().load(Ordering::Acquire);
        if mailbox != 0 {
            let id = sig.event_id();
            if host.write_mailbox(GpuVa(mailbox), id).is_ok() {
                host.signal_event(id);
            }
        }
    }

    /// The value of dependency `i`, `None` for a null handle.
    fn dep_value<H: ProcessorHost + ?Sized>(
        host: &H,
        i: usize,
        handle: SignalHandle,
    ) -> Result<Option<i64>> {
        let Some(sig) = Self::resolve(host, handle)? else {
            return Ok(None);
        };
        let v = sig.value().load(Ordering::Acquire);
        if v < 0 {
            crate::bail!(
                Status::Error,
                "dep_signal[{i}] ({:#x}) has negative value {v}: the dependency failed",
                handle.0
            );
        }
        Ok(Some(v))
    }
}

/// The host addresses a ring was made with (ring slot 0, `amd_queue_t`), the default device
/// addresses of a [`PacketProcessor`].
#[cfg(not(loom))]
fn host_addresses(ring: &Ring) -> (GpuVa, GpuVa) {
    (
        GpuVa(ring.base().as_ptr() as u64),
        GpuVa(ring.amd_queue().as_ptr() as u64),
    )
}

/// Under loom a ring is a model without device addresses.
#[cfg(loom)]
fn host_addresses(_ring: &Ring) -> (GpuVa, GpuVa) {
    (GpuVa(0), GpuVa(0))
}

trait ContextIndex {
    fn context_index(self, index: u64) -> Error;
}

impl ContextIndex for Error {
    fn context_index(self, index: u64) -> Error {
        crate::error!(self.status(), "packet {index}: {}", self.detail())
    }
}
