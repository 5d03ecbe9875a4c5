//! The interrupt path: [`InterruptHandler::on_interrupt`], which the host's ISR calls. It
//! drains the IH ring, maps CP end-of-pipe and SQ message entries to event ids, marks those
//! events pending in a lock-free [`EventTable`], writes the read pointer back and counts what
//! it could not use. Never blocks, never allocates.
//!
//! Mapping (amdkfd `kfd_int_process_v9.c`, `event_interrupt_wq_v9`): entries from client
//! `GRBM_CP` (0x14) or `SE0SH..SE3SH` (0x0a..0x0d) with source
//! `SOC15_INTSRC_CP_END_OF_PIPE` (181) carry the event id in `context_id0` = `src_data[0]`
//! (32 valid bits); with source `SOC15_INTSRC_SQ_INTERRUPT_MSG` (239, `s_sendmsg` from a
//! wave) the id is the 24-bit `KFD_CONTEXT_ID_GET_SQ_INT_DATA(ctx0, ctx1)` =
//! `(ctx0 & 0xfff) | ((ctx0 >> 16) & 0xf000) | ((ctx1 << 16) & 0xff0000)`. An entry from a CP
//! client with source `SOC15_INTSRC_CP_BAD_OPCODE` (183) says the command processor stopped a
//! queue with an error (amdkfd answers it with a hardware-exception event); it signals no
//! event: the handler counts it and raises a flag ([`InterruptHandler::take_queue_error`]) on
//! which the platform reads its queues' `queue_inactive_signal`s.
//!
//! An entry from a VM client — `VMC` (0x12), `VMC1` (0x06) or `UTCL2` (0x1b), any source, as
//! `event_interrupt_wq_v9` takes them — is a GPU page fault: the page number is
//! `src_data[0] | (src_data[1] & 0xf) << 32` (the address is that times 4096), and `ring_id`
//! bit 3 (`prot_valid`) and bit 5 (`prot_write`) are what amdkfd reports as `NotPresent` and
//! `ReadOnly` (`kfd_signal_vm_fault_event`), so they become
//! [`MemoryFaultReason::PAGE_NOT_PRESENT`] and [`MemoryFaultReason::READ_ONLY`]
//! ([`IhAction::MemoryFault`]); the handler passes it to its caller's `on_fault`.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hsa_core::platform::MemoryFaultReason;
use hsa_core::{EventId, GpuVa};

use crate::ih::{IhEntry, IhRing};

/// `SOC15_IH_CLIENTID_VMC1` (= `SOC15_IH_CLIENTID_PCIE0`, soc15_ih_clientid.h): the second
/// MM hub's VM faults.
pub const CLIENT_VMC1: u8 = 0x06;
/// `SOC15_IH_CLIENTID_VMC`: MM hub VM faults.
pub const CLIENT_VMC: u8 = 0x12;
/// `SOC15_IH_CLIENTID_UTCL2`: GFX hub (UTCL2) VM faults.
pub const CLIENT_UTCL2: u8 = 0x1b;
/// `SOC15_IH_CLIENTID_SE0SH` (soc15_ih_clientid.h).
pub const CLIENT_SE0SH: u8 = 0x0a;
/// `SOC15_IH_CLIENTID_SE3SH`.
pub const CLIENT_SE3SH: u8 = 0x0d;
/// `SOC15_IH_CLIENTID_GRBM_CP`.
pub const CLIENT_GRBM_CP: u8 = 0x14;
/// `SOC15_INTSRC_CP_END_OF_PIPE` = `GFX_9_0__SRCID__CP_EOP_INTERRUPT` (soc15_int.h).
pub const SOURCE_CP_END_OF_PIPE: u8 = 181;
/// `SOC15_INTSRC_SQ_INTERRUPT_MSG` (soc15_int.h).
pub const SOURCE_SQ_INTERRUPT_MSG: u8 = 239;
/// `SOC15_INTSRC_CP_BAD_OPCODE` = `GFX_9_0__SRCID__CP_BAD_OPCODE_ERROR` (soc15_int.h): the
/// command processor stopped a queue with an error.
pub const SOURCE_CP_BAD_OPCODE: u8 = 183;

/// What an IH entry means to this runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IhAction {
    /// Signal this event.
    Signal(EventId),
    /// The CP stopped the queue on doorbell `doorbell_id` with exception `error_code`.
    QueueError {
        /// `KFD_DEBUG_DOORBELL_ID`: the doorbell's 64-bit slot in its 8 KiB doorbell page.
        doorbell_id: u16,
        /// `KFD_DEBUG_CP_BAD_OP_ECODE`: amdkfd's exception code (0: none given).
        error_code: u16,
    },
    /// A GPU page fault at `address` (page-aligned), for `reason`.
    MemoryFault {
        /// The faulting page's device address.
        address: GpuVa,
        /// What amdkfd would report of it.
        reason: MemoryFaultReason,
    },
    /// Not a source this runtime handles.
    Unknown,
}

/// Maps a decoded entry to an action (pure; see the module doc for the rules).
pub fn classify(e: &IhEntry) -> IhAction {
    if matches!(e.client_id, CLIENT_VMC | CLIENT_VMC1 | CLIENT_UTCL2) {
        let page = u64::from(e.src_data[0]) | (u64::from(e.src_data[1] & 0xf) << 32);
        let mut reason = MemoryFaultReason::empty();
        if e.ring_id & 0x08 != 0 {
            reason |= MemoryFaultReason::PAGE_NOT_PRESENT;
        }
        if e.ring_id & 0x20 != 0 {
            reason |= MemoryFaultReason::READ_ONLY;
        }
        return IhAction::MemoryFault {
            address: GpuVa(page << 12),
            reason,
        };
    }
    let cp_client =
        e.client_id == CLIENT_GRBM_CP || (CLIENT_SE0SH..=CLIENT_SE3SH).contains(&e.client_id);
    if !cp_client {
        return IhAction::Unknown;
    }
    match e.source_id {
        SOURCE_CP_END_OF_PIPE => IhAction::Signal(EventId(e.src_data[0])),
        SOURCE_SQ_INTERRUPT_MSG => {
            let (c0, c1) = (e.src_data[0], e.src_data[1]);
            IhAction::Signal(EventId(
                (c0 & 0xfff) | ((c0 >> 16) & 0xf000) | ((c1 << 16) & 0xff_0000),
            ))
        }
        SOURCE_CP_BAD_OPCODE => IhAction::QueueError {
            doorbell_id: (e.src_data[0] & CP_BAD_OP_DOORBELL_ID_MASK) as u16,
            error_code: ((e.src_data[0] & CP_BAD_OP_ECODE_MASK) >> CP_BAD_OP_ECODE_SHIFT) as u16,
        },
        _ => IhAction::Unknown,
    }
}

/// `KFD_INT_DATA_DEBUG_DOORBELL_MASK` (`kfd_int_process_v9.c`): bits 0..10 of a
/// `CP_BAD_OPCODE` entry's `context_id0` are the stopped queue's doorbell id, its 64-bit slot
/// in its 8 KiB doorbell page (1024 slots).
pub const CP_BAD_OP_DOORBELL_ID_MASK: u32 = 0x3ff;
/// `KFD_DEBUG_CP_BAD_OP_ECODE_MASK`: bits 10..26 of that `context_id0` are amdkfd's exception
/// code (`enum kfd_dbg_trap_exception_code`).
pub const CP_BAD_OP_ECODE_MASK: u32 = 0x3ff_fc00;
/// `KFD_DEBUG_CP_BAD_OP_ECODE_SHIFT`.
pub const CP_BAD_OP_ECODE_SHIFT: u32 = 10;
/// Doorbell ids a `CP_BAD_OPCODE` entry can name.
pub const DOORBELL_IDS: usize = 1024;

/// The `context_id0` a command processor writes into a `CP_BAD_OPCODE` entry for the queue on
/// doorbell `doorbell_id` stopped with exception `error_code` (inverse of [`classify`]).
pub const fn cp_bad_opcode_context(doorbell_id: u32, error_code: u32) -> u32 {
    (doorbell_id & CP_BAD_OP_DOORBELL_ID_MASK)
        | ((error_code << CP_BAD_OP_ECODE_SHIFT) & CP_BAD_OP_ECODE_MASK)
}

/// Which IH entries are this runtime's, as amdkfd's `event_interrupt_isr_v9` decides for its
/// processes: entries whose VMID lies in `first_vmid..=last_vmid` (amdkfd's
/// `first_vmid_kfd..=last_vmid_kfd`: amdgpu's own rings fence on VMID 0 on a shared IH ring)
/// and, when `pasid` is given, whose PASID is it. Others are counted
/// ([`IrqCounters::foreign`]) and skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IhFilter {
    /// The first VMID of this runtime's.
    pub first_vmid: u8,
    /// The last VMID of this runtime's.
    pub last_vmid: u8,
    /// This runtime's PASID, when the host gave its queues one.
    pub pasid: Option<u16>,
}

impl IhFilter {
    /// Every entry (VMIDs 0..=15, any PASID): an IH ring of this runtime alone.
    pub const ANY: IhFilter = IhFilter {
        first_vmid: 0,
        last_vmid: 15,
        pasid: None,
    };

    /// Whether entry `e` is this runtime's.
    pub fn wants(&self, e: &IhEntry) -> bool {
        (self.first_vmid..=self.last_vmid).contains(&e.vmid)
            && self.pasid.is_none_or(|p| p == e.pasid)
    }
}

/// A fixed-capacity table of `64 * WORDS` events: which ids are allocated and which are
/// pending (signaled, not yet consumed by a wait). Lock-free: one `AtomicU64` bit per event.
#[derive(Debug)]
pub struct EventTable<const WORDS: usize> {
    allocated: [AtomicU64; WORDS],
    pending: [AtomicU64; WORDS],
}

impl<const WORDS: usize> Default for EventTable<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize> EventTable<WORDS> {
    /// Number of event ids (0 .. CAPACITY).
    pub const CAPACITY: usize = 64 * WORDS;

    /// An empty table.
    pub const fn new() -> Self {
        EventTable {
            allocated: [const { AtomicU64::new(0) }; WORDS],
            pending: [const { AtomicU64::new(0) }; WORDS],
        }
    }

    fn slot(id: EventId) -> Option<(usize, u64)> {
        let i = id.get() as usize;
        (i < Self::CAPACITY).then(|| (i / 64, 1u64 << (i % 64)))
    }

    /// Allocates the lowest free id, not pending. `None` when all are taken.
    pub fn allocate(&self) -> Option<EventId> {
        for (w, word) in self.allocated.iter().enumerate() {
            let mut cur = word.load(Ordering::Relaxed);
            while cur != u64::MAX {
                let bit = (!cur).trailing_zeros();
                match word.compare_exchange_weak(
                    cur,
                    cur | 1 << bit,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        self.pending[w].fetch_and(!(1 << bit), Ordering::AcqRel);
                        return Some(EventId((w * 64) as u32 + bit));
                    }
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    /// Frees `id`; returns whether it was allocated.
    pub fn free(&self, id: EventId) -> bool {
        let Some((w, m)) = Self::slot(id) else {
            return false;
        };
        self.allocated[w].fetch_and(!m, Ordering::AcqRel) & m != 0
    }

    /// Whether `id` is allocated.
    pub fn is_allocated(&self, id: EventId) -> bool {
        Self::slot(id).is_some_and(|(w, m)| self.allocated[w].load(Ordering::Acquire) & m != 0)
    }

    /// Marks `id` pending; returns `false` (and marks nothing) when `id` is out of range or not
    /// allocated. Release: pairs with the Acquire in [`take`](Self::take), so a waiter that
    /// consumes the bit sees the memory (signal value) written before the interrupt.
    pub fn set_pending(&self, id: EventId) -> bool {
        let Some((w, m)) = Self::slot(id) else {
            return false;
        };
        if self.allocated[w].load(Ordering::Acquire) & m == 0 {
            return false;
        }
        self.pending[w].fetch_or(m, Ordering::Release);
        true
    }

    /// Whether `id` is pending (without consuming it).
    pub fn is_pending(&self, id: EventId) -> bool {
        Self::slot(id).is_some_and(|(w, m)| self.pending[w].load(Ordering::Acquire) & m != 0)
    }

    /// Consumes `id`'s pending mark; returns whether it was pending. Acquire: pairs with
    /// [`set_pending`](Self::set_pending).
    pub fn take(&self, id: EventId) -> bool {
        Self::slot(id)
            .is_some_and(|(w, m)| self.pending[w].fetch_and(!m, Ordering::AcqRel) & m != 0)
    }
}

/// Counters the host can read at any time (relaxed loads).
#[derive(Debug, Default)]
pub struct IrqCounters {
    /// Times `on_interrupt` drained the ring.
    pub interrupts: AtomicU64,
    /// Entries read.
    pub entries: AtomicU64,
    /// Entries that signaled an event.
    pub signaled: AtomicU64,
    /// Entries from a client/source this runtime does not handle.
    pub unknown: AtomicU64,
    /// Entries saying the command processor stopped a queue with an error
    /// ([`SOURCE_CP_BAD_OPCODE`]).
    pub queue_errors: AtomicU64,
    /// GPU page-fault entries ([`IhAction::MemoryFault`]).
    pub memory_faults: AtomicU64,
    /// Entries (or write pointers) that failed to decode.
    pub malformed: AtomicU64,
    /// Entries naming an event id that is out of range or not allocated.
    pub bad_event: AtomicU64,
    /// Ring overflows reported by the write pointer.
    pub overflows: AtomicU64,
    /// Entries of other VMIDs or PASIDs ([`IhFilter`]), skipped.
    pub foreign: AtomicU64,
}

/// A copy of [`IrqCounters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqStats {
    /// See [`IrqCounters::interrupts`].
    pub interrupts: u64,
    /// See [`IrqCounters::entries`].
    pub entries: u64,
    /// See [`IrqCounters::signaled`].
    pub signaled: u64,
    /// See [`IrqCounters::unknown`].
    pub unknown: u64,
    /// See [`IrqCounters::queue_errors`].
    pub queue_errors: u64,
    /// See [`IrqCounters::memory_faults`].
    pub memory_faults: u64,
    /// See [`IrqCounters::malformed`].
    pub malformed: u64,
    /// See [`IrqCounters::bad_event`].
    pub bad_event: u64,
    /// See [`IrqCounters::overflows`].
    pub overflows: u64,
    /// See [`IrqCounters::foreign`].
    pub foreign: u64,
}

impl IrqCounters {
    /// A snapshot (each counter read relaxed).
    pub fn snapshot(&self) -> IrqStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IrqStats {
            interrupts: r(&self.interrupts),
            entries: r(&self.entries),
            signaled: r(&self.signaled),
            unknown: r(&self.unknown),
            queue_errors: r(&self.queue_errors),
            memory_faults: r(&self.memory_faults),
            malformed: r(&self.malformed),
            bad_event: r(&self.bad_event),
            overflows: r(&self.overflows),
            foreign: r(&self.foreign),
        }
    }
}

/// The IH ring reader plus its counters. One per IH ring.
#[derive(Debug)]
pub struct InterruptHandler {
    ring: spin::Mutex<IhRing>,
    again: AtomicBool,
    queue_error: AtomicBool,
    filter: IhFilter,
    /// Per doorbell id: 0, or `CP_ERROR_MARK | exception code` of a `CP_BAD_OPCODE` entry not
    /// yet taken ([`take_cp_error`](Self::take_cp_error)).
    cp_errors: [AtomicU32; DOORBELL_IDS],
    counters: IrqCounters,
}

/// The mark of a pending CP error in [`InterruptHandler`]'s table (the 16-bit exception code
/// sits below it).
const CP_ERROR_MARK: u32 = 1 << 16;

impl InterruptHandler {
    /// A handler draining `ring`, taking every entry ([`IhFilter::ANY`]).
    pub fn new(ring: IhRing) -> InterruptHandler {
        InterruptHandler::with_filter(ring, IhFilter::ANY)
    }

    /// A handler draining `ring`, taking the entries `filter` wants.
    pub fn with_filter(ring: IhRing, filter: IhFilter) -> InterruptHandler {
        InterruptHandler {
            ring: spin::Mutex::new(ring),
            again: AtomicBool::new(false),
            queue_error: AtomicBool::new(false),
            filter,
            cp_errors: [const { AtomicU32::new(0) }; DOORBELL_IDS],
            counters: IrqCounters::default(),
        }
    }

    /// The exception code of the `CP_BAD_OPCODE` entry drained for doorbell id
    /// `doorbell_id` (its 64-bit slot in its doorbell page, `0..1024`), if one came since the
    /// last call for it; clears it. Several entries for one doorbell before a call keep the
    /// last code.
    pub fn take_cp_error(&self, doorbell_id: u16) -> Option<u16> {
        let slot = self.cp_errors.get(usize::from(doorbell_id))?;
        let v = slot.swap(0, Ordering::AcqRel);
        (v & CP_ERROR_MARK != 0).then_some(v as u16)
    }

    /// The counters.
    pub fn counters(&self) -> &IrqCounters {
        &self.counters
    }

    /// Whether a queue-error entry ([`IhAction::QueueError`]) was drained since the last call;
    /// clears the flag.
    pub fn take_queue_error(&self) -> bool {
        self.queue_error.swap(false, Ordering::AcqRel)
    }

    /// Drains the ring into `events`; `on_fault` runs for each GPU page-fault entry (in ring
    /// order, during the drain), `on_overflow` when the write pointer reported an overflow.
    /// Returns the number of events signaled by this call.
    ///
    /// Never blocks: if another CPU is draining, this call asks it to make one more pass
    /// (so no entry written before this call is left behind) and returns 0.
    pub fn on_interrupt<const W: usize>(
        &self,
        events: &EventTable<W>,
        on_fault: &dyn Fn(GpuVa, MemoryFaultReason),
        on_overflow: &dyn Fn(),
    ) -> u64 {
        self.again.store(true, Ordering::Release);
        let mut signaled = 0;
        loop {
            let Some(mut ring) = self.ring.try_lock() else {
                return signaled;
            };
            // Acquire pairs with the Release above (ours or another caller's).
            while self.again.swap(false, Ordering::AcqRel) {
                self.counters.interrupts.fetch_add(1, Ordering::Relaxed);
                let c = &self.counters;
                // Logged records are formatted only when a `log` backend takes them.
                let stats = ring.drain(|r| match r {
                    Err(e) => log::warn!("IH ring: entry skipped: {e}"),
                    Ok(e) if !self.filter.wants(&e) => {
                        log::debug!("IH ring: entry of another VMID or PASID: {e:?}");
                        c.foreign.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(e) => match classify(&e) {
                        IhAction::Signal(id) => {
                            if events.set_pending(id) {
                                c.signaled.fetch_add(1, Ordering::Relaxed);
                                signaled += 1;
                            } else {
                                log::debug!("IH ring: signal for event {id}, which is not live");
                                c.bad_event.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        IhAction::QueueError {
                            doorbell_id,
                            error_code,
                        } => {
                            c.queue_errors.fetch_add(1, Ordering::Relaxed);
                            if let Some(slot) = self.cp_errors.get(usize::from(doorbell_id)) {
                                slot.store(
                                    CP_ERROR_MARK | u32::from(error_code),
                                    Ordering::Release,
                                );
                            }
                            self.queue_error.store(true, Ordering::Release);
                        }
                        IhAction::MemoryFault { address, reason } => {
                            c.memory_faults.fetch_add(1, Ordering::Relaxed);
                            on_fault(address, reason);
                        }
                        IhAction::Unknown => {
                            log::debug!("IH ring: entry of no known source: {e:?}");
                            c.unknown.fetch_add(1, Ordering::Relaxed);
                        }
                    },
                });
                c.entries
                    .fetch_add(u64::from(stats.entries), Ordering::Relaxed);
                c.malformed.fetch_add(
                    u64::from(stats.malformed) + u64::from(stats.bad_wptr),
                    Ordering::Relaxed,
                );
                if stats.overflow {
                    log::warn!("IH ring overflowed: interrupts were lost");
                    c.overflows.fetch_add(1, Ordering::Relaxed);
                    on_overflow();
                }
            }
            drop(ring);
            // A caller that set `again` after our last swap but failed try_lock before we
            // unlocked would be lost: look once more.
            if !self.again.load(Ordering::Acquire) {
                return signaled;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(client: u8, source: u8, d0: u32, d1: u32) -> IhEntry {
        IhEntry {
            client_id: client,
            source_id: source,
            src_data: [d0, d1, 0, 0],
            ..Default::default()
        }
    }

    /// VM-client entries are page faults as `event_interrupt_wq_v9` reads them: the page from
    /// `src_data[0]` and the low 4 bits of `src_data[1]`, `ring_id` bit 3 "not present" and
    /// bit 5 "read-only", any source id.
    #[test]
    fn vm_client_entries_are_page_faults() {
        let fault = |client, ring_id, d0, d1| {
            classify(&IhEntry {
                ring_id,
                ..entry(client, 0, d0, d1)
            })
        };
        assert_eq!(
            fault(0x12, 0x28, 0x0012_3456, 0xa3),
            IhAction::MemoryFault {
                address: GpuVa(0x3_0012_3456 << 12),
                reason: MemoryFaultReason::PAGE_NOT_PRESENT | MemoryFaultReason::READ_ONLY,
            }
        );
        assert_eq!(
            fault(0x1b, 0x08, 1, 0),
            IhAction::MemoryFault {
                address: GpuVa(0x1000),
                reason: MemoryFaultReason::PAGE_NOT_PRESENT,
            }
        );
        assert_eq!(
            classify(&entry(0x06, 181, 2, 0x10)),
            IhAction::MemoryFault {
                address: GpuVa(0x2000),
                reason: MemoryFaultReason::empty(),
            }
        );
    }

    #[test]
    fn classify_follows_kfd_v9() {
        assert_eq!(
            classify(&entry(0x14, 181, 7, 0)),
            IhAction::Signal(EventId(7))
        );
        assert_eq!(
            classify(&entry(0x0a, 181, 0xdead_beef, 0)),
            IhAction::Signal(EventId(0xdead_beef))
        );
        assert_eq!(
            classify(&entry(0x0d, 181, 1, 0)),
            IhAction::Signal(EventId(1))
        );
        // SQ: ctx0 = 0x0123_4567 -> 0x567 | (0x0123 & 0xf000 = 0) ; ctx1 = 0xab -> 0xab0000
        assert_eq!(
            classify(&entry(0x14, 239, 0x0123_4567, 0xab)),
            IhAction::Signal(EventId(0xab_0567))
        );
        // ctx0 bits [31:28] land in [15:12]: 0xf000_0000 >> 16 = 0xf000
        assert_eq!(
            classify(&entry(0x14, 239, 0xf000_0001, 0)),
            IhAction::Signal(EventId(0xf001))
        );
        // CP bad opcode: context_id0 = doorbell id [9:0] | exception code [25:10]
        // (KFD_DEBUG_DOORBELL_ID, KFD_DEBUG_CP_BAD_OP_ECODE); bits 26-31 are not the code's.
        let qe = |doorbell_id, error_code| IhAction::QueueError {
            doorbell_id,
            error_code,
        };
        assert_eq!(classify(&entry(0x14, 183, 7, 0)), qe(7, 0));
        assert_eq!(classify(&entry(0x0a, 183, 0, 0)), qe(0, 0));
        assert_eq!(
            classify(&entry(0x14, 183, 0xfc00_0000 | 16 << 10 | 0x3ff, 0)),
            qe(0x3ff, 16)
        );
        assert_eq!(classify(&entry(0x14, 183, 0x03ff_fc02, 0)), qe(2, 0xffff));
        assert_eq!(cp_bad_opcode_context(0x402, 16), 2 | 16 << 10);
        assert_eq!(cp_bad_opcode_context(5, 0x1_0001), 5 | 1 << 10);
        assert_eq!(classify(&entry(0x14, 184, 7, 0)), IhAction::Unknown); // CP privileged reg
        assert_eq!(classify(&entry(0x0e, 183, 7, 0)), IhAction::Unknown); // not a CP client
        assert_eq!(classify(&entry(0x0e, 181, 7, 0)), IhAction::Unknown);
    }

    #[test]
    fn event_table_allocates_marks_and_consumes() {
        let t = EventTable::<2>::new();
        assert_eq!(EventTable::<2>::CAPACITY, 128);
        let ids: [EventId; 3] = core::array::from_fn(|_| t.allocate().unwrap());
        assert_eq!(ids, [EventId(0), EventId(1), EventId(2)]);
        assert!(!t.set_pending(EventId(5)), "not allocated");
        assert!(!t.set_pending(EventId(128)), "out of range");
        assert!(t.set_pending(EventId(1)));
        assert!(t.is_pending(EventId(1)));
        assert!(t.take(EventId(1)));
        assert!(!t.take(EventId(1)));
        assert!(t.free(EventId(0)));
        assert!(!t.free(EventId(0)));
        assert_eq!(t.allocate(), Some(EventId(0)));
        for _ in 3..128 {
            assert!(t.allocate().is_some());
        }
        assert_eq!(t.allocate(), None);
        assert!(t.is_allocated(EventId(127)));
    }

    /// A malformed write pointer counts as one malformed record, added to the malformed
    /// entries (none here: the reader skips to the pointer), and signals nothing.
    #[test]
    fn a_misaligned_write_pointer_is_counted_as_malformed() {
        let (r, _ring) = crate::mmio::test_region(16); // 4 entries
        let (w, _wptr) = crate::mmio::test_region(1);
        let (rp, _rptr) = crate::mmio::test_region(1);
        let h = InterruptHandler::new(crate::ih::IhRing::new(r, w, rp, 0).unwrap());
        let events = EventTable::<1>::new();
        w.write32(0, 68).unwrap(); // 2 entries and 4 bytes
        assert_eq!(h.on_interrupt(&events, &|_, _| {}, &|| {}), 0);
        let s = h.counters().snapshot();
        assert_eq!((s.interrupts, s.entries, s.malformed), (1, 0, 1));
        assert_eq!(
            rp.read32(0).unwrap(),
            64,
            "the read pointer moves to the entry boundary"
        );
    }

    /// Entries of VMIDs outside the filter's range, or of another PASID, are counted as
    /// foreign and do nothing (amdgpu's VMID-0 fence on a shared ring signals no event); a
    /// `CP_BAD_OPCODE` entry marks its doorbell id with its exception code, taken once.
    #[test]
    fn the_filter_skips_foreign_entries_and_cp_errors_are_kept_by_doorbell() {
        let (r, _ring) = crate::mmio::test_region(64); // 8 entries
        let (w, _wptr) = crate::mmio::test_region(1);
        let (rp, _rptr) = crate::mmio::test_region(1);
        let filter = IhFilter {
            first_vmid: 8,
            last_vmid: 15,
            pasid: Some(0x8001),
        };
        let h = InterruptHandler::with_filter(crate::ih::IhRing::new(r, w, rp, 0).unwrap(), filter);
        let events = EventTable::<1>::new();
        let ids: [EventId; 2] = core::array::from_fn(|_| events.allocate().unwrap());
        let put = |i: usize, vmid: u8, pasid: u16, source: u8, d0: u32| {
            let e = IhEntry {
                client_id: CLIENT_GRBM_CP,
                source_id: source,
                vmid,
                pasid,
                src_data: [d0, 0, 0, 0],
                ..IhEntry::default()
            }
            .encode();
            for (k, c) in e.chunks(4).enumerate() {
                r.write32(32 * i + 4 * k, u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .unwrap();
            }
        };
        put(0, 0, 0, SOURCE_CP_END_OF_PIPE, ids[0].0); // amdgpu's VMID-0 fence
        put(1, 7, 0x8001, SOURCE_CP_END_OF_PIPE, ids[0].0); // below first_vmid
        put(2, 8, 0x8002, SOURCE_CP_END_OF_PIPE, ids[0].0); // another process
        put(3, 15, 0x8001, SOURCE_CP_END_OF_PIPE, ids[1].0); // ours
        put(
            4,
            8,
            0x8001,
            SOURCE_CP_BAD_OPCODE,
            cp_bad_opcode_context(0x21, 16),
        );
        put(
            5,
            9,
            0x8001,
            SOURCE_CP_BAD_OPCODE,
            cp_bad_opcode_context(0x3ff, 0),
        );
        put(
            6,
            0,
            0x8001,
            SOURCE_CP_BAD_OPCODE,
            cp_bad_opcode_context(0x22, 18),
        );
        w.write32(0, 7 * 32).unwrap();
        assert_eq!(h.on_interrupt(&events, &|_, _| {}, &|| {}), 1);
        assert!(!events.is_pending(ids[0]) && events.is_pending(ids[1]));
        let s = h.counters().snapshot();
        assert_eq!(
            (s.entries, s.foreign, s.signaled, s.queue_errors),
            (7, 4, 1, 2)
        );
        assert!(h.take_queue_error());
        assert_eq!(h.take_cp_error(0x21), Some(16));
        assert_eq!(h.take_cp_error(0x21), None, "taken once");
        assert_eq!(h.take_cp_error(0x3ff), Some(0));
        assert_eq!(h.take_cp_error(0x22), None, "a foreign entry marks nothing");
        assert_eq!(h.take_cp_error(1024), None, "past the doorbell page");
        assert!(IhFilter::ANY.wants(&IhEntry {
            vmid: 15,
            pasid: 3,
            ..IhEntry::default()
        }));
    }

    /// A reused id starts without the pending mark its previous owner left, and allocating
    /// clears only that id's mark: the other ids of the same word keep theirs. Ids of the
    /// second word are numbered from 64.
    #[test]
    fn allocation_clears_only_its_own_stale_pending_mark() {
        let t = EventTable::<2>::new();
        for i in 0..3 {
            assert_eq!(t.allocate(), Some(EventId(i)));
        }
        assert!(t.set_pending(EventId(0)));
        assert!(t.set_pending(EventId(1)));
        assert!(t.free(EventId(1)));
        assert_eq!(t.allocate(), Some(EventId(1)), "the lowest free id");
        assert!(!t.is_pending(EventId(1)), "a reused id is not pending");
        assert!(t.is_pending(EventId(0)), "another id's mark is kept");
        for i in 3..64 {
            assert_eq!(t.allocate(), Some(EventId(i)));
        }
        assert_eq!(
            t.allocate(),
            Some(EventId(64)),
            "first id of the second word"
        );
        assert!(t.set_pending(EventId(64)));
        assert!(t.free(EventId(64)));
        assert_eq!(t.allocate(), Some(EventId(64)));
        assert!(!t.is_pending(EventId(64)));
        assert!(t.is_pending(EventId(0)));
    }
}
