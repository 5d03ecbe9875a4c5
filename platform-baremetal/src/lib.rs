//! # hsa-baremetal
//!
//! The bare-metal backend of hsa-rt: no OS, the host (firmware, a unikernel, a hypervisor)
//! hands in memory carve-outs, the doorbell aperture, the soc15 IH ring and a
//! wait-for-interrupt hook through [`Host`], and [`BaremetalPlatform`] implements
//! `hsa_core::platform::Platform` over them.
//!
//! Layers: [`mmio`] (the only `unsafe`: bounded volatile register access) ← [`doorbell`]
//! (64-bit doorbell stores), [`ih`] (IH entry decode, ring reader), [`mqd`] (the gfx9 MQD
//! image), [`carveout`] (chunk allocator with out-of-band bookkeeping) ← [`irq`] (the ISR
//! path, event table) ← [`BaremetalPlatform`]. For hosts: [`kiq`], the KIQ ring a host maps
//! queues through (`MAP_QUEUES`/`UNMAP_QUEUES` fenced by `QUERY_STATUS`), and [`gpuvm`], gfx9
//! page tables for `Host::map_memory`.
//!
//! The host's ISR calls [`BaremetalPlatform::on_interrupt`]; threads blocked in
//! `Platform::wait_event` spin briefly ([`Host::wait_spin_ns`]), then sleep in
//! [`Host::wait_for_interrupt`].
//!
//! Queue errors: a queue created with `QueueRequest::on_error` is watched through its
//! `amd_queue_t.queue_inactive_signal`. When the IH ring brings a queue-error entry
//! (`SOC15_INTSRC_CP_BAD_OPCODE`, see [`irq`]), `on_interrupt` reads the inactive signal of
//! the queue whose doorbell id the entry names (storing the entry's exception code there when
//! the command processor wrote none), and calls its callback once for a positive value (the
//! error, decoded with `hsa_core::queue::inactive::decode`):
//! see [`BaremetalPlatform::report_queue_errors`].
//!
//! GPUs: gfx9 (GC 9.0 to 9.4.2) with one MQD per queue, and GC 9.4.3/9.4.4/9.5.0 partitions of
//! one XCC (the master XCC's MQD, [`mqd::XccMqd`]); a queue on a partition of several XCCs is
//! refused (`Status::InvalidQueueCreation`), as it needs one MQD mapped on each XCC's KIQ.
//!
//! GPU memory faults: a page-fault entry of a VM client (see [`irq`]) goes to the handler
//! installed with `MemoryFaultReports::set_memory_fault_handler`, from the ISR, during the drain — so
//! before the callbacks of the queues the fault stopped, which run after it.
//!
//! With feature `alloc`, `heap::CarveOutHeap` is a spin-locked `linked_list_allocator` heap
//! over a system-memory chunk, installable as `#[global_allocator]`.
#![no_std]
#![deny(unsafe_code)]
#![deny(
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    missing_docs
)]
// hsa_core::Error keeps its message inline (~200 bytes) so that errors need no allocator, by
// design; boxing it is not an option in no_std without `alloc`.
#![allow(clippy::result_large_err)]

#[cfg(test)]
extern crate std;

pub mod carveout;
pub mod doorbell;
pub mod gpuvm;
#[cfg(feature = "alloc")]
pub mod heap;
pub mod host;
pub mod ih;
pub mod irq;
pub mod kiq;
pub mod mmio;
pub mod mqd;
mod platform;

use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};

use hsa_core::platform::{
    MemoryChunk, MemoryFault, MemoryFaultHandler, MemoryFaultReason, MemoryFlags, MemoryKind,
    MemoryRequest, QueueErrorCallback, WaitOutcome,
};
use hsa_core::{DoorbellIndex, Error, EventId, GpuVa, NodeId, QueueId, Status};

use crate::mmio::MmioRegion;

pub use crate::carveout::{CarveOutAllocator, CarveOutBlock};
pub use crate::doorbell::Doorbells;
pub use crate::host::{
    CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping, RegisterLocation,
};
pub use crate::ih::{IhEntry, IhError, IhRing};
pub use crate::irq::{EventTable, InterruptHandler, IrqStats};
pub use crate::mqd::{ComputeMqd, MqdParams};

/// Most hardware queues one platform serves at once.
pub const MAX_QUEUES: usize = 32;
/// EOP buffer size per queue, bytes (one page; `EOP_SIZE` field 9).
pub const EOP_BYTES: u64 = 4096;
/// How long `wait_event` spins before sleeping in the host's hook, ns, unless the host says
/// otherwise ([`Host::wait_spin_ns`]).
pub const WAIT_EVENT_SPIN_NS: u64 = 20_000;

struct QueueSlot {
    mapping: QueueMapping,
    eop: CarveOutBlock,
    /// The page holding the queue's MQD image (`mapping.mqd_address`).
    mqd: CarveOutBlock,
    /// Present when the queue was created with an error callback.
    watch: Option<ErrorWatch>,
}

/// What the platform keeps of a queue created with `QueueRequest::on_error`.
struct ErrorWatch {
    /// The 8-byte `amd_signal_t.value` of the queue's `queue_inactive_signal`.
    inactive_value: MmioRegion,
    callback: QueueErrorCallback,
    /// The callback was called (it is called once).
    reported: bool,
}

/// Byte offset of `amd_signal_t.value` (Ref: `amd_hsa_signal.h`).
const SIGNAL_VALUE_OFFSET: u64 = 8;

/// The bare-metal platform: a [`Host`], the carve-out allocator, the granted doorbells, the IH
/// ring's interrupt handler, and an event table of `64 * EVENT_WORDS` events whose 8-byte
/// mailboxes live in one event page carved from system memory.
///
/// # Examples
/// A `Host` needs real memory, a doorbell aperture and an IH ring, more than a doc example can
/// hold; two whole programs show it, each run by a test or CI:
/// - `unikernel/` (hsa-unikernel): firmware, `no_std` for `x86_64-unknown-none`, its `Host`
///   over the VM's RAM and an ivshmem BAR; `cargo test --release -p hsa-baremetal --test
///   qemu -- --nocapture` builds and boots it in QEMU (see its `src/main.rs`).
/// - `examples/simulated_host.rs`: a `Host` over `static` buffers with a simulated device on
///   an ordinary Linux host (std); `cargo run -p hsa-baremetal --example simulated_host`.
pub struct BaremetalPlatform<H: Host, const EVENT_WORDS: usize = 4> {
    host: H,
    memory: CarveOutAllocator,
    doorbells: Doorbells,
    irq: InterruptHandler,
    events: EventTable<EVENT_WORDS>,
    event_page: CarveOutBlock,
    queues: spin::Mutex<[Option<QueueSlot>; MAX_QUEUES]>,
    /// A queue-error entry arrived (or a check was asked for) and the queues' inactive
    /// signals were not read since.
    queue_errors_pending: AtomicBool,
    /// The next look reads every queue's inactive signal, not only those a `CP_BAD_OPCODE`
    /// entry named ([`check_queue_errors`](Self::check_queue_errors)).
    queue_errors_scan_all: AtomicBool,
    /// Calls of each queue slot's error callback in progress (set under the queue table's
    /// lock, cleared after the call): `destroy_queue` waits for them, so that no callback runs
    /// after its queue's destroy returned (`QueueRequest::on_error`).
    delivering: [AtomicU32; MAX_QUEUES],
    /// `MemoryFaultReports::set_memory_fault_handler`'s handler (the ISR only tries the lock).
    fault_handler: spin::Mutex<Option<MemoryFaultHandler>>,
}

impl<H: Host, const EVENT_WORDS: usize> core::fmt::Debug for BaremetalPlatform<H, EVENT_WORDS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BaremetalPlatform")
            .field("doorbells", &self.doorbells)
            .field("event_page", &self.event_page)
            .field("irq", &self.irq.counters().snapshot())
            .finish_non_exhaustive()
    }
}

/// HSA hands host pointers to the GPU unchanged (signal handles are `amd_signal_t` host
/// addresses, `Event::mailbox` is one address for both sides, kernarg and queue pointers are
/// shared), so system memory must sit at the same address in the CPU's and the GPU's address
/// spaces (ROCR gets this from KFD's SVM mapping; a bare-metal host sets its GPU page tables
/// so). VRAM carve-outs may differ.
/// `InvalidArgument`: event `id` is not allocated (formatted only when displayed: wait and
/// signal paths).
pub(crate) fn event_not_allocated(id: EventId) -> Error {
    Error::lazy(
        Status::InvalidArgument,
        [id.get().into()],
        |&[id, ..], f| write!(f, "event {id} is not allocated"),
    )
}

fn check_system_identity(carve_outs: &[CarveOut]) -> Result<(), Error> {
    for (i, c) in carve_outs.iter().enumerate() {
        if c.kind == CarveOutKind::SystemMemory
            && c.virt_base.map(|v| v as u64) != Some(c.gpu_va.get())
        {
            let (mapped, virt) = c.virt_base.map_or((0, 0), |v| (1, v as u64));
            return Err(Error::lazy(
                Status::InvalidArgument,
                [i as u64, c.gpu_va.get(), mapped, virt],
                |&[i, gpu_va, mapped, virt, ..], f| {
                    write!(
                        f,
                        "carve-out {i}: system memory at gpu_va {gpu_va:#x} has virt_base "
                    )?;
                    // As `Option<usize>`'s Debug shows it.
                    match mapped {
                        0 => f.write_str("None")?,
                        _ => write!(f, "Some({virt})")?,
                    }
                    write!(
                        f,
                        "; HSA shares host pointers with the GPU, so gpu_va must equal virt_base"
                    )
                },
            ));
        }
    }
    Ok(())
}

fn ns_to_ticks(ns: u64, freq_hz: u64) -> u64 {
    u64::try_from(u128::from(ns) * u128::from(freq_hz) / 1_000_000_000).unwrap_or(u64::MAX)
}

impl<H: Host, const EVENT_WORDS: usize> BaremetalPlatform<H, EVENT_WORDS> {
    /// Number of events (`64 * EVENT_WORDS`).
    pub const EVENT_CAPACITY: usize = 64 * EVENT_WORDS;

    /// Builds the platform over `host`: checks the carve-outs, doorbells and IH ring it
    /// describes, and carves the event page (`8 * EVENT_CAPACITY` bytes, page-rounded) out of
    /// system memory.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for carve-outs, a doorbell grant or an IH ring the host
    /// described inconsistently (the message names which), including a system-memory
    /// carve-out whose `gpu_va` is not its `virt_base` (see [`CarveOut::gpu_va`]);
    /// `Status::OutOfResources` when no system-memory carve-out can hold the event page.
    pub fn new(host: H) -> Result<Self, Error> {
        let memory = CarveOutAllocator::new(host.carve_outs())?;
        check_system_identity(host.carve_outs())?;
        let d = host.doorbells();
        let mut doorbells = Doorbells::new(mmio::host_doorbell_aperture(&host)?, d.first, d.count)?;
        // The slots the GPUs' doorbell pages keep for SDMA, IH and VCN are never given out.
        for n in host.nodes().iter().filter(|n| n.simd_count > 0) {
            if let Some(r) = doorbell::reserved_non_cp_slots(n.gfx_target_version) {
                doorbells = doorbells.with_reserved(r)?;
            }
        }
        if let Some((lower, upper)) = host.mec_doorbell_range() {
            doorbells = doorbells.within_mec_range(lower, upper)?;
        }
        let (ring, wptr, rptr_block) = mmio::host_ih_regions(&host)?;
        let ih = IhRing::new(
            ring,
            wptr,
            rptr_block,
            host.ih_ring().rptr_register.offset_bytes,
        )
        .map_err(|e| {
            Error::lazy(Status::InvalidArgument, e.to_values(), |&v, f| {
                write!(f, "{}", IhError::from_values(v))
            })
        })?;
        let Some(node) = memory.any_system_node() else {
            hsa_core::bail!(
                Status::OutOfResources,
                "no system-memory carve-out for the event page"
            );
        };
        let page_bytes = (8 * Self::EVENT_CAPACITY as u64).next_multiple_of(carveout::PAGE_BYTES);
        let event_page = memory.allocate(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes: page_bytes,
            align_bytes: carveout::PAGE_BYTES,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::UNCACHED,
        })?;
        mmio::host_carve_out_window(&host, event_page.carve_out, event_page.offset, page_bytes)?
            .fill_zero();
        let filter = host.ih_filter();
        Ok(BaremetalPlatform {
            host,
            memory,
            doorbells,
            irq: InterruptHandler::with_filter(ih, filter),
            events: EventTable::new(),
            event_page,
            queues: spin::Mutex::new([const { None }; MAX_QUEUES]),
            delivering: [const { AtomicU32::new(0) }; MAX_QUEUES],
            queue_errors_pending: AtomicBool::new(false),
            queue_errors_scan_all: AtomicBool::new(false),
            fault_handler: spin::Mutex::new(None),
        })
    }

    /// The host.
    pub fn host(&self) -> &H {
        &self.host
    }

    /// The granted doorbells.
    pub fn doorbells(&self) -> &Doorbells {
        &self.doorbells
    }

    /// The carve-out allocator.
    pub fn memory(&self) -> &CarveOutAllocator {
        &self.memory
    }

    /// The event table (pending marks).
    pub fn events(&self) -> &EventTable<EVENT_WORDS> {
        &self.events
    }

    /// Call from the host's ISR for the IH interrupt: drains the IH ring, marks events
    /// pending, writes the read pointer back, counts unknown and malformed entries, and on a
    /// reported overflow calls [`Host::ih_overflow_clear`]. Each GPU page-fault entry goes to
    /// the memory-fault handler, during the drain (logged at error level too). After a
    /// queue-error entry it
    /// reports the queues that stopped ([`report_queue_errors`](Self::report_queue_errors):
    /// their error callbacks run here, in the ISR). Returns the number of events signaled.
    /// Never blocks, never allocates.
    pub fn on_interrupt(&self) -> u64 {
        let n = self.irq.on_interrupt(
            &self.events,
            &|address, reason| self.deliver_memory_fault(address, reason),
            &|| self.host.ih_overflow_clear(),
        );
        if self.irq.take_queue_error() {
            self.queue_errors_pending.store(true, Ordering::Release);
        }
        self.report_queue_errors();
        if n > 0 {
            self.host.wake_waiters();
        }
        n
    }

    /// Reads every live queue's inactive signal now, as after a queue-error IH entry, and
    /// reports what [`report_queue_errors`](Self::report_queue_errors) finds: for a device
    /// that stops queues without writing such an entry, or a host that lost its interrupt.
    /// Returns the number of callbacks called.
    pub fn check_queue_errors(&self) -> usize {
        self.queue_errors_scan_all.store(true, Ordering::Release);
        self.queue_errors_pending.store(true, Ordering::Release);
        self.report_queue_errors()
    }

    /// When a queue-error entry arrived since the last look (or [`check_queue_errors`]
    /// asked): for every live queue created with `QueueRequest::on_error` that a
    /// `CP_BAD_OPCODE` entry named by its doorbell id (the doorbell index modulo 1024, its
    /// slot in an 8 KiB doorbell page; every queue after [`check_queue_errors`]), reads its
    /// `queue_inactive_signal`. A queue the entry named whose signal holds no error yet (a
    /// command processor that does not write it, as silicon's) gets the entry's exception
    /// code as ROCR 7 maps it (`hsa_core::queue::inactive::exception_status`), stored there
    /// (`encode`) so that its waiters see it. For a positive value, calls the callback once,
    /// with the status `hsa_core::queue::inactive::decode` reads from that value
    /// (`Status::Error` for one it cannot read) and the detail `queue_inactive_signal 0x...`
    /// (the value), and the platform's queue id; a queue is reported at most once in its
    /// life, and logged at error level (`log`) before its callback runs. A negative value (the
    /// core's "destroyed" mark) is no error. Returns the number of callbacks called.
    ///
    /// Callbacks run on the caller's CPU after the queue table's lock is released, so they
    /// may call back into the platform; from [`on_interrupt`](Self::on_interrupt) that is the
    /// host's ISR, where a callback must not block or wait (nor destroy its own queue:
    /// `destroy_queue` waits until no call of the queue's callback is in progress). Never
    /// blocks: when the queue table
    /// is locked (the ISR interrupted `create_queue` or `destroy_queue`), the look is left to
    /// the lock's holder, which makes it on release.
    ///
    /// [`check_queue_errors`]: Self::check_queue_errors
    pub fn report_queue_errors(&self) -> usize {
        let mut called = 0;
        while self.queue_errors_pending.load(Ordering::Acquire) {
            let Some(mut slots) = self.queues.try_lock() else {
                break;
            };
            self.queue_errors_pending.store(false, Ordering::Release);
            let scan_all = self.queue_errors_scan_all.swap(false, Ordering::AcqRel);
            // Acquire: the packet processor stored the value before the entry that brought us
            // here (and its write pointer, which the drain read with Acquire).
            fence(Ordering::Acquire);
            let mut calls: [Option<(QueueErrorCallback, u64)>; MAX_QUEUES] = [None; MAX_QUEUES];
            for (call, slot) in calls.iter_mut().zip(slots.iter_mut()) {
                let Some(s) = slot.as_mut() else {
                    continue;
                };
                let doorbell_id = (s.mapping.doorbell.get() as usize % irq::DOORBELL_IDS) as u16;
                let named = self.irq.take_cp_error(doorbell_id);
                let Some(w) = s.watch.as_mut() else {
                    continue;
                };
                if named.is_none() && !scan_all {
                    continue;
                }
                let Ok(mut v) = w.inactive_value.read64(0) else {
                    continue;
                };
                if let Some(code) = named.filter(|_| v == 0) {
                    let status = hsa_core::queue::inactive::exception_status(code.into());
                    v = hsa_core::queue::inactive::encode(status, false) as u64;
                    if w.inactive_value.write64(0, v).is_err() {
                        continue;
                    }
                }
                if w.reported || (v as i64) <= 0 {
                    continue;
                }
                w.reported = true;
                *call = Some((w.callback, v));
            }
            for (i, call) in calls.iter().enumerate() {
                if call.is_some() {
                    // Relaxed: the table's lock (held) orders it before destroy_queue's look.
                    self.delivering[i].fetch_add(1, Ordering::Relaxed);
                }
            }
            drop(slots);
            for (i, call) in calls.iter().enumerate() {
                let Some((callback, v)) = *call else {
                    continue;
                };
                let status = hsa_core::queue::inactive::decode(v as i64).unwrap_or(Status::Error);
                let e = Error::lazy(status, [v], |&[v, ..], f| {
                    write!(f, "queue_inactive_signal {v:#x}")
                });
                // At error level whether or not the callback handles it, as the Linux backend.
                log::error!("queue {i} stopped by its packet processor: {e}");
                (callback.func)(&e, QueueId(i as u32), callback.data);
                // Release pairs with destroy_queue's Acquire load: the call happened before.
                self.delivering[i].fetch_sub(1, Ordering::Release);
                called += 1;
            }
        }
        if called > 0 {
            // Waiters on a stopped queue re-check its state.
            self.host.wake_waiters();
        }
        called
    }

    /// The CPU's window over `[va, va + len)` of a system-memory carve-out (identity mapped:
    /// `va` is also the CPU address), when it lies inside one.
    fn system_window(&self, va: u64, len: u64) -> Option<MmioRegion> {
        self.host
            .carve_outs()
            .iter()
            .enumerate()
            .find_map(|(i, c)| {
                let base = c.virt_base? as u64;
                let off = va.checked_sub(base)?;
                (c.kind == CarveOutKind::SystemMemory && off.checked_add(len)? <= c.size_bytes)
                    .then(|| mmio::host_carve_out_window(&self.host, i, off, len).ok())
                    .flatten()
            })
    }

    /// The watch of `request`'s queue errors: its `queue_inactive_signal`'s value word.
    ///
    /// # Errors
    /// `Status::InvalidQueueCreation` when the `amd_queue_t` or its inactive signal is not in
    /// a system-memory carve-out (the platform could not read it).
    fn error_watch(
        &self,
        request: &hsa_core::platform::QueueRequest,
    ) -> Result<Option<ErrorWatch>, Error> {
        let Some(callback) = request.on_error else {
            return Ok(None);
        };
        let field = core::mem::offset_of!(hsa_core::abi::queue::AmdQueue, queue_inactive_signal);
        let at = request.amd_queue.get().wrapping_add(field as u64);
        let handle = self
            .system_window(at, 8)
            .and_then(|w| w.read64(0).ok())
            .unwrap_or(0);
        let value = (handle != 0)
            .then(|| self.system_window(handle.wrapping_add(SIGNAL_VALUE_OFFSET), 8))
            .flatten();
        let Some(inactive_value) = value else {
            return Err(Error::lazy(
                Status::InvalidQueueCreation,
                [request.amd_queue.get(), handle],
                |&[amd_queue, handle, ..], f| {
                    write!(
                        f,
                        "amd_queue_t {amd_queue:#x} or its queue_inactive_signal {handle:#x} is \
                         not in a system-memory carve-out: the error callback cannot be served"
                    )
                },
            ));
        };
        Ok(Some(ErrorWatch {
            inactive_value,
            callback,
            reported: false,
        }))
    }

    /// The interrupt counters now.
    pub fn irq_stats(&self) -> IrqStats {
        self.irq.counters().snapshot()
    }

    /// Device (and host) address of event `id`'s 8-byte mailbox slot in the event page.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an id out of range.
    pub fn event_mailbox(&self, id: EventId) -> Result<GpuVa, Error> {
        if id.get() as usize >= Self::EVENT_CAPACITY {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [id.get().into()],
                |&[id, ..], f| write!(f, "event id {id} >= capacity {}", Self::EVENT_CAPACITY),
            ));
        }
        Ok(GpuVa(
            self.event_page.gpu_va.get() + 8 * u64::from(id.get()),
        ))
    }

    /// Logs a GPU page fault at `address` at error level (as amdgpu prints one) and hands it
    /// to the memory-fault handler, as a fault of the host's first GPU node (the GPU whose IH
    /// ring this is). Never blocks: when the handler's slot is locked (the handler is being
    /// replaced on another CPU) the fault is only logged.
    fn deliver_memory_fault(&self, address: GpuVa, reason: MemoryFaultReason) {
        log::error!(
            "GPU memory fault at {address} (hsa_amd_memory_fault_reason_t {:#x})",
            reason.bits()
        );
        let Some(handler) = self.fault_handler.try_lock().and_then(|h| *h) else {
            return;
        };
        let Some(gpu) = self.host.nodes().iter().find(|n| n.simd_count > 0) else {
            return;
        };
        let fault = MemoryFault {
            node: NodeId(gpu.node_id),
            address,
            reason,
        };
        (handler.func)(&fault, handler.data);
    }

    fn check_node(&self, node: NodeId) -> Result<(), Error> {
        if self.host.nodes().iter().any(|n| n.node_id == node.get()) {
            Ok(())
        } else {
            Err(Error::lazy(
                Status::InvalidArgument,
                [node.get().into()],
                |&[node, ..], f| write!(f, "node {node} is unknown to the host"),
            ))
        }
    }

    /// Zeroes a freshly allocated chunk (volatile stores through its CPU mapping, or the
    /// host's device clear).
    fn zero(&self, a: &CarveOutBlock) -> Result<(), Error> {
        match a.virt {
            Some(_) => {
                mmio::host_carve_out_window(&self.host, a.carve_out, a.offset, a.size_bytes)?
                    .fill_zero();
                Ok(())
            }
            None => self.host.clear_device_memory(a.gpu_va, a.size_bytes),
        }
    }

    fn allocate_zeroed(&self, request: &MemoryRequest) -> Result<CarveOutBlock, Error> {
        let a = self.memory.allocate(request)?;
        if let Err(e) = self.zero(&a) {
            let _ = self.memory.free(a.handle(), a.size_bytes);
            return Err(e);
        }
        Ok(a)
    }

    fn allocate_chunk(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        self.check_node(request.node)?;
        let a = self.allocate_zeroed(request)?;
        Ok(MemoryChunk {
            gpu_va: a.gpu_va,
            host_ptr: a.virt.and_then(|v| NonNull::new(v as *mut u8)),
            size_bytes: a.size_bytes,
            handle: a.handle(),
        })
    }

    fn free_chunk(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        let a = self.memory.free(chunk.handle, chunk.size_bytes)?;
        if a.gpu_va != chunk.gpu_va {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [chunk.gpu_va.get(), chunk.handle, a.gpu_va.get()],
                |&[gpu_va, handle, handle_va, ..], f| {
                    write!(
                        f,
                        "chunk gpu_va {gpu_va:#x} does not match handle {handle:#x} \
                         ({handle_va:#x})"
                    )
                },
            ));
        }
        Ok(())
    }

    fn pick_doorbell(&self, slots: &[Option<QueueSlot>]) -> Option<DoorbellIndex> {
        let first = self.doorbells.first().get();
        (first..first.saturating_add(self.doorbells.count()))
            .map(DoorbellIndex)
            .filter(|d| self.doorbells.usable(*d))
            .find(|d| !slots.iter().flatten().any(|s| s.mapping.doorbell == *d))
    }

    /// Allocates an EOP buffer: device-local memory of the node, else system memory.
    fn allocate_eop(&self, node: NodeId) -> Result<CarveOutBlock, Error> {
        let mut req = MemoryRequest {
            node,
            kind: MemoryKind::DeviceLocal,
            size_bytes: EOP_BYTES,
            align_bytes: carveout::PAGE_BYTES,
            flags: MemoryFlags::empty(),
        };
        self.allocate_zeroed(&req).or_else(|_| {
            req.kind = MemoryKind::System;
            self.allocate_zeroed(&req)
        })
    }

    /// Allocates the page a queue's MQD image lives in: CPU-visible memory (the runtime
    /// writes the image), system memory first (amdkfd keeps MQDs in GTT), else the node's
    /// device-local memory when the CPU can reach it.
    ///
    /// # Errors
    /// `Status::OutOfResources` when no carve-out the CPU can write has a free page.
    fn allocate_mqd(&self, node: NodeId) -> Result<CarveOutBlock, Error> {
        for kind in [MemoryKind::System, MemoryKind::DeviceLocal] {
            let req = MemoryRequest {
                node,
                kind,
                size_bytes: carveout::PAGE_BYTES,
                align_bytes: carveout::PAGE_BYTES,
                flags: MemoryFlags::empty(),
            };
            match self.allocate_zeroed(&req) {
                Ok(a) if a.virt.is_some() => return Ok(a),
                Ok(a) => {
                    let _ = self.memory.free(a.handle(), a.size_bytes);
                }
                Err(_) => {}
            }
        }
        Err(Error::lazy(
            Status::OutOfResources,
            [node.0.into()],
            |&[node, ..], f| {
                write!(
                    f,
                    "no CPU-visible page for the MQD of a queue of node {node} (system or \
                     device-local memory the CPU can write)"
                )
            },
        ))
    }

    /// Writes `mqd`'s 512 dwords at the start of `block` (from [`Self::allocate_mqd`]).
    fn write_mqd(&self, block: &CarveOutBlock, mqd: &ComputeMqd) -> Result<(), Error> {
        let window = mmio::host_carve_out_window(
            &self.host,
            block.carve_out,
            block.offset,
            (hsa_core::wire::mqd::V9_MQD_DWORDS * 4) as u64,
        )?;
        for (i, d) in mqd.v9_mqd().dwords().into_iter().enumerate() {
            window.write32(4 * i, d).map_err(Error::from)?;
        }
        Ok(())
    }

    fn wait(&self, id: EventId, timeout_ns: u64) -> Result<WaitOutcome, Error> {
        self.wait_any(core::slice::from_ref(&id), timeout_ns)
    }

    /// Waits until any of `ids` is pending (consuming the first pending one, in list order;
    /// the others stay pending for the next wait), a destroyed one (a spurious return), or
    /// the timeout: spins [`Host::wait_spin_ns`], then
    /// sleeps in [`Host::wait_for_interrupt`] until the deadline, re-checking after each
    /// wake-up.
    fn wait_any(&self, ids: &[EventId], timeout_ns: u64) -> Result<WaitOutcome, Error> {
        if ids.is_empty() {
            hsa_core::bail!(Status::InvalidArgument, "wait_any_event: no events");
        }
        if let Some(&id) = ids.iter().find(|&&id| !self.events.is_allocated(id)) {
            return Err(event_not_allocated(id));
        }
        let freq = self.host.timestamp_frequency_hz().max(1);
        let start = self.host.timestamp_ticks();
        let deadline = if timeout_ns == u64::MAX {
            u64::MAX
        } else {
            start.saturating_add(ns_to_ticks(timeout_ns, freq))
        };
        let spin_until = start
            .saturating_add(ns_to_ticks(self.host.wait_spin_ns(), freq))
            .min(deadline);
        loop {
            // A destroyed event wakes its waiters (a spurious return: callers re-check).
            if ids
                .iter()
                .any(|&id| self.events.take(id) || !self.events.is_allocated(id))
            {
                return Ok(WaitOutcome::Signaled);
            }
            let now = self.host.timestamp_ticks();
            if now >= deadline {
                return Ok(WaitOutcome::TimedOut);
            }
            if now < spin_until {
                core::hint::spin_loop();
                continue;
            }
            // Check after arming: the host re-evaluates this with interrupts masked and sleeps
            // only if the event is still not pending.
            self.host.wait_for_interrupt(deadline, &|| {
                ids.iter()
                    .all(|&id| !self.events.is_pending(id) && self.events.is_allocated(id))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn carve(kind: CarveOutKind, virt: Option<usize>, gpu: u64) -> CarveOut {
        CarveOut {
            node: NodeId(0),
            kind,
            phys_base: hsa_core::PhysAddr(0x1000_0000),
            virt_base: virt,
            gpu_va: GpuVa(gpu),
            size_bytes: 0x10_0000,
        }
    }

    #[test]
    fn system_memory_must_be_identity_mapped() {
        let ok = [
            carve(CarveOutKind::SystemMemory, Some(0x7000_0000), 0x7000_0000),
            carve(
                CarveOutKind::HostVisibleVram,
                Some(0x9000_0000),
                0x1_0000_0000,
            ),
            carve(CarveOutKind::PrivateVram, None, 0x2_0000_0000),
        ];
        assert!(check_system_identity(&ok).is_ok());
        let moved = [
            ok[1],
            carve(CarveOutKind::SystemMemory, Some(0x7000_0000), 0x8000),
        ];
        let e = check_system_identity(&moved).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("carve-out 1"), "{e}");
        assert!(e.detail().to_string().contains("gpu_va 0x8000"), "{e}");
        assert_eq!(
            e.detail(),
            "carve-out 1: system memory at gpu_va 0x8000 has virt_base Some(1879048192); HSA \
             shares host pointers with the GPU, so gpu_va must equal virt_base"
        );
        let unmapped = [carve(CarveOutKind::SystemMemory, None, 0x8000)];
        let e = check_system_identity(&unmapped).unwrap_err();
        assert_eq!(
            e.detail(),
            "carve-out 0: system memory at gpu_va 0x8000 has virt_base None; HSA shares host \
             pointers with the GPU, so gpu_va must equal virt_base"
        );
    }

    /// Issue 18: hsa-core as this crate's tests build it has no `alloc` (this crate's default
    /// features), and still an error fits 64 bytes; this crate's messages longer than
    /// hsa-core's inline capacity stay whole because they are built with `Error::lazy` (a
    /// formatted one would keep only its head and tail there).
    #[test]
    fn errors_fit_64_bytes_and_keep_long_messages_whole() {
        let (e, r) = (
            core::mem::size_of::<Error>(),
            core::mem::size_of::<Result<(), Error>>(),
        );
        assert!(e <= 64, "Error is {e} bytes");
        assert!(r <= 64, "Result<(), Error> is {r} bytes");
        let e = Error::from(mmio::MmioError::OutOfBounds {
            offset: 0x1000,
            width: 8,
            size_bytes: 0x1000,
        });
        let want = "MMIO offset 0x1000 (+8 bytes) is past the region's 0x1000 bytes";
        assert!(want.len() > hsa_core::status::INLINE_CAPACITY);
        assert_eq!(e.detail(), want);
        assert_eq!(e.status(), Status::InvalidArgument);
    }

    #[test]
    fn ns_to_ticks_saturates_and_scales() {
        assert_eq!(ns_to_ticks(1_000, 1_000_000_000), 1_000);
        assert_eq!(ns_to_ticks(1_000_000, 100_000_000), 100_000);
        assert_eq!(ns_to_ticks(u64::MAX, 2_000_000_000), u64::MAX);
        assert_eq!(ns_to_ticks(999, 1_000_000), 0);
    }
}
