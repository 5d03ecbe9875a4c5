//! The device model behind the VM's ivshmem device: the emulated GPU's command processor and
//! gfx9 interpreter (hsa-emu) serving the guest's AQL queue in guest RAM.
//!
//! - It waits (`poll`) on its three eventfds — peer 0's vectors: the queue's doorbell, a
//!   command in the control page, an echo request — and on a stop eventfd.
//! - A doorbell carries no value: on one, the device reads the write index from
//!   `amd_queue_t.write_dispatch_id` and, while the read index is behind it, runs the core's
//!   [`PacketProcessor`] over the ring the guest mapped until the header at the read index is
//!   INVALID; a barrier waiting for a dependency is re-tried every 100 µs.
//! - Kernels run in [`hsa_emu::device::run_kernel_dispatch`] over guest RAM
//!   ([`GpuView`]: guest-physical address = file offset = the guest's virtual address, or
//!   through the queue's page tables).
//! - A completion signal with an event decremented → a soc15 IH entry (client `GRBM_CP`,
//!   source `CP_END_OF_PIPE`, `src_data[0]` = event id) in the guest's IH ring, the write
//!   pointer write-back advanced (Release after the entry), then MSI-X vector 0 raised by
//!   signalling the VM's eventfd 0. Several signals before QEMU reads the eventfd merge into
//!   one MSI, which the guest's drain handles.
//! - Queues come and go through the KIQ, as the MEC model shared with the in-process
//!   simulation ([`crate::mec`]) serves it: on the command vector (the KIQ's doorbell), the
//!   packets between its read pointer and the write pointer the guest stored at the KIQ's poll
//!   address (`MAP_QUEUES` from the MQD bytes at `mqd_addr` only, `UNMAP_QUEUES`,
//!   `QUERY_STATUS`, `INVALIDATE_TLBS`, `SET_RESOURCES`); a refused packet is named in the
//!   control page's message and the rest of its batch skipped. It serves every mapped queue
//!   on a doorbell.
//! - Every entry carries its queue's VMID (the MQD's `cp_hqd_vmid`) and that VMID's PASID.
//! - A queue whose VMID has a context (`SET_VM`) reaches memory only through its page tables
//!   ([`crate::vm`]): its ring and `amd_queue_t` when it is mapped, its signals and event
//!   mailboxes, and every access its kernels make. A walk that fails writes the GFX hub's
//!   `UTCL2` fault entry (the page in `src_data`), raises the IH vector, and fails the access;
//!   a kernel's fault then stops its queue as the queue-error fault below does.
//!   `INVALIDATE_TLBS` on the KIQ drops the translations kept for the PASID.
//! - Faults, armed by the guest's `ARM_FAULT` command: drop an interrupt, merge several, a
//!   malformed entry before the next, a VMID-0 fence entry before the next, a queue error (the next kernel fails with
//!   `MemoryFault`; the processor stores it in `queue_inactive_signal`; the device writes a
//!   `CP_BAD_OPCODE` entry as the MEC does, the queue's doorbell id and exception code in
//!   `context_id0`, and raises vector 0).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hsa_baremetal::ih::{IhEntry, IH_ENTRY_BYTES, WPTR_OVERFLOW};
use hsa_baremetal::irq::{
    cp_bad_opcode_context, CLIENT_GRBM_CP, SOURCE_CP_BAD_OPCODE, SOURCE_CP_END_OF_PIPE,
};
use hsa_core::abi::signal::AmdSignal;
use hsa_core::abi::SignalHandle;
use hsa_core::packet_processor::{
    DecodedAgentDispatch, DecodedKernelDispatch, ProcessorHost, Progress,
};
use hsa_core::signal::raw::RawSignal;
use hsa_core::{Error, GpuVa, Status};
use hsa_gfx9::aperture::Apertures;
use hsa_gfx9::Gfx9Target;
use rustix::event::{poll, PollFd, PollFlags};

use crate::mec::{Mec, QueueAddresses, Served, AMD_QUEUE_BYTES};
use crate::protocol::*;
use crate::vm::{GpuView, PhysMemory, VmFault};

/// LDS per work-group of the device, bytes (gfx9).
const LDS_BYTES: u32 = 64 * 1024;
/// Kernel code read per dispatch from the entry point, bytes: the embedded kernels are a few
/// hundred bytes, and reading (and allocating) 64 KiB per dispatch cost ~30 µs of the empty
/// dispatch's latency. A kernel that branches past it stops with an illegal instruction.
const CODE_BYTES: u64 = 4096;
/// The doorbell dwords this device serves: doorbell [`QUEUE_DOORBELL_INDEX`] (2 dwords).
const DOORBELL_DWORDS: std::ops::Range<u32> =
    2 * QUEUE_DOORBELL_INDEX..2 * QUEUE_DOORBELL_INDEX + 2;

/// A shared mapping of a file (guest RAM, or the ivshmem shared memory).
pub struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is shared memory; every access through it is bounds-checked and is an
// atomic word access or a byte copy, as the device's side of DMA is.
unsafe impl Send for Mapping {}
// SAFETY: as for Send.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared, read-write.
    ///
    /// # Errors
    /// The system's error.
    pub fn new(fd: impl AsFd, len: usize) -> Result<Mapping, String> {
        // SAFETY: a fresh mapping chosen by the kernel (no address given): it overlaps nothing
        // of ours; unmapped in Drop, after every user (the device thread is joined first).
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                fd,
                0,
            )
        }
        .map_err(|e| format!("mmap of {len} bytes: {e}"))?;
        Ok(Mapping {
            base: NonNull::new(p.cast()).ok_or("mmap returned null")?,
            len,
        })
    }

    /// The host address of `[addr, addr + len)` when it lies inside the mapping.
    pub fn at(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        (end <= self.len as u64).then(|| self.base.as_ptr().wrapping_add(addr as usize))
    }

    /// The aligned `u32` at `addr` as an atomic.
    pub fn u32(&self, addr: u64) -> Option<&AtomicU32> {
        let p = self.at(addr, 4).filter(|p| *p as usize % 4 == 0)?;
        // SAFETY: inside the live mapping (checked), 4-aligned; shared words are accessed
        // atomically (or volatilely by the guest, single-copy atomic on x86).
        Some(unsafe { &*(p as *const AtomicU32) })
    }

    /// The aligned `u64` at `addr` as an atomic.
    pub fn u64(&self, addr: u64) -> Option<&AtomicU64> {
        let p = self.at(addr, 8).filter(|p| *p as usize % 8 == 0)?;
        // SAFETY: as in `u32`, 8-aligned.
        Some(unsafe { &*(p as *const AtomicU64) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, made in `new`; nothing uses it any more.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl PhysMemory for Mapping {
    fn at(&self, addr: u64, len: u64) -> Option<*mut u8> {
        Mapping::at(self, addr, len)
    }
}

/// What the device did (read by the test).
#[derive(Debug, Default)]
pub struct DeviceStats {
    /// Queue doorbells received.
    pub doorbells: AtomicU64,
    /// Commands served.
    pub commands: AtomicU64,
    /// Packets the processor completed.
    pub packets: AtomicU64,
    /// Kernels the interpreter ran.
    pub kernels: AtomicU64,
    /// IH entries written (malformed ones included).
    pub ih_entries: AtomicU64,
    /// MSI-X interrupts raised on vector 0.
    pub ih_interrupts: AtomicU64,
    /// Interrupts not raised because the guest had already drained the entries.
    pub ih_already_drained: AtomicU64,
    /// Interrupts dropped by the fault.
    pub dropped: AtomicU64,
    /// Interrupts withheld to merge.
    pub merged: AtomicU64,
    /// Malformed entries written.
    pub malformed: AtomicU64,
    /// Queues stopped with an error.
    pub queue_errors: AtomicU64,
    /// Echo requests answered.
    pub echoes: AtomicU64,
    /// KIQ `MAP_QUEUES` packets that mapped a queue.
    pub kiq_maps: AtomicU64,
    /// KIQ `UNMAP_QUEUES` packets served.
    pub kiq_unmaps: AtomicU64,
    /// KIQ `QUERY_STATUS` fences written.
    pub kiq_fences: AtomicU64,
    /// KIQ `INVALIDATE_TLBS` packets served.
    pub kiq_invalidations: AtomicU64,
    /// GPU page faults (`UTCL2` entries written).
    pub vm_faults: AtomicU64,
    /// Why the device refused each KIQ packet it refused, in order (the guest's fault phase
    /// sends some on purpose).
    pub kiq_refused: Mutex<Vec<String>>,
    /// Time in the interpreter for one-work-item dispatches, ns.
    pub kernel_ns: AtomicU64,
    /// One-work-item dispatches.
    pub small_kernels: AtomicU64,
    /// Per one-work-item dispatch that ended a wake-up: ns from the doorbell's wake-up (`poll`
    /// returned) to its completion interrupt raised (packet processor, interpreter, signal,
    /// IH entry).
    pub service_ns: Mutex<Vec<u64>>,
    /// Per echo: ns from its wake-up to the echo interrupt raised.
    pub echo_ns: Mutex<Vec<u64>>,
}

/// The errors the device hit that the guest cannot see (a refused command is also told to the
/// guest); the test fails on any.
pub type DeviceLog = Arc<Mutex<Vec<String>>>;

/// The IH block's write side.
struct IhWriter {
    ring: u64,
    size_bytes: u32,
    wptr_addr: u64,
    wptr: u32,
    overflow: bool,
}

#[derive(Default)]
struct Faults {
    drop: u64,
    merge: u64,
    malformed: u64,
    queue_error: u64,
    foreign: u64,
}

/// The device: its memory, eventfds and state. Run with [`Device::run`] on its own thread.
pub struct Device {
    /// Guest RAM.
    pub ram: Mapping,
    /// The ivshmem shared memory (control page first).
    pub shm: Mapping,
    /// Peer 0's eventfds (what the guest's doorbell writes signal), by vector.
    pub mine: Vec<OwnedFd>,
    /// The guest's eventfds (its MSI-X vectors), by vector.
    pub guest: Vec<OwnedFd>,
    /// Ends [`run`](Device::run) when signalled.
    pub stop: OwnedFd,
    /// The ISA the interpreter runs.
    pub target: Gfx9Target,
    /// Counters.
    pub stats: Arc<DeviceStats>,
    /// Errors.
    pub log: DeviceLog,
}

struct State {
    ih: Option<IhWriter>,
    /// The KIQ, the HQDs and the VMIDs' page tables (`SET_KIQ`, `SET_VM`).
    mec: Mec,
    faults: Faults,
    merge_left: u64,
    started: Instant,
    /// When `poll` returned with the queue's doorbell, until the next interrupt raised.
    woke: Option<Instant>,
    /// The last kernel had one work-item.
    small: bool,
}

fn push(v: &Mutex<Vec<u64>>, d: std::time::Duration) {
    v.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(d.as_nanos() as u64);
}

fn drain(fd: &OwnedFd) {
    let mut b = [0u8; 8];
    // Non-blocking (QEMU set O_NONBLOCK on the shared description): EAGAIN means empty.
    let _ = rustix::io::read(fd, &mut b);
}

impl Device {
    fn control(&self, offset: usize) -> &AtomicU32 {
        self.shm
            .u32(offset as u64)
            .expect("control page word inside the shared memory")
    }

    fn arg(&self, i: usize) -> u64 {
        self.shm
            .u64((CTL_ARGS + 8 * i) as u64)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    fn raise(&self, vector: u16) {
        let _ = rustix::io::write(&self.guest[usize::from(vector)], &1u64.to_ne_bytes());
    }

    fn complain(&self, what: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(what);
    }

    /// Serves until [`stop`](Device::stop) is signalled.
    pub fn run(&self) {
        let mut st = State {
            ih: None,
            mec: Mec::new(DOORBELL_DWORDS),
            faults: Faults::default(),
            merge_left: 0,
            started: Instant::now(),
            woke: None,
            small: false,
        };
        loop {
            let blocked = st.mec.hqds.iter().any(|h| h.blocked);
            let timeout = rustix::time::Timespec {
                tv_sec: if blocked { 0 } else { 1 },
                tv_nsec: if blocked { 100_000 } else { 0 },
            };
            let mut fds = [
                PollFd::new(&self.mine[usize::from(DEVICE_VECTOR_QUEUE)], PollFlags::IN),
                PollFd::new(
                    &self.mine[usize::from(DEVICE_VECTOR_COMMAND)],
                    PollFlags::IN,
                ),
                PollFd::new(&self.mine[usize::from(DEVICE_VECTOR_ECHO)], PollFlags::IN),
                PollFd::new(&self.stop, PollFlags::IN),
            ];
            if let Err(e) = poll(&mut fds, Some(&timeout)) {
                if e != rustix::io::Errno::INTR {
                    self.complain(format!("device: poll: {e}"));
                    return;
                }
            }
            let ready: Vec<bool> = fds
                .iter()
                .map(|f| f.revents().contains(PollFlags::IN))
                .collect();
            if ready[3] {
                return;
            }
            let woke = Instant::now();
            if ready[2] {
                drain(&self.mine[usize::from(DEVICE_VECTOR_ECHO)]);
                self.stats.echoes.fetch_add(1, Ordering::Relaxed);
                self.raise(GUEST_VECTOR_ECHO);
                push(&self.stats.echo_ns, woke.elapsed());
            }
            if ready[1] {
                // The command vector is also the KIQ's doorbell: a command is waiting when
                // CTL_CMD is set (the device clears it), the KIQ when its write pointer moved.
                drain(&self.mine[usize::from(DEVICE_VECTOR_COMMAND)]);
                if self.control(CTL_CMD).load(Ordering::Acquire) != 0 {
                    self.command(&mut st);
                }
                self.serve_kiq(&mut st);
            }
            if ready[0] {
                drain(&self.mine[usize::from(DEVICE_VECTOR_QUEUE)]);
                self.stats.doorbells.fetch_add(1, Ordering::Relaxed);
                st.woke = Some(woke);
            }
            if ready[0] || blocked {
                self.serve_queue(&mut st);
            }
        }
    }

    fn command(&self, st: &mut State) {
        // Acquire pairs with the guest's fence before its command store.
        let cmd = self.control(CTL_CMD).load(Ordering::Acquire);
        let result = match cmd {
            CMD_SET_IH => self.set_ih(st),
            CMD_SET_KIQ => self.set_kiq(st),
            CMD_SET_VM => self.set_vm(st),
            CMD_ARM_FAULT => {
                let (fault, count) = (self.arg(0), self.arg(1));
                match fault {
                    FAULT_DROP_INTERRUPT => st.faults.drop += count,
                    FAULT_MERGE_INTERRUPTS => st.faults.merge = count,
                    FAULT_MALFORMED_ENTRY => st.faults.malformed += count,
                    FAULT_QUEUE_ERROR => st.faults.queue_error += count,
                    FAULT_FOREIGN_ENTRY => st.faults.foreign += count,
                    _ => {}
                }
                if (1..=5).contains(&fault) {
                    Ok(())
                } else {
                    Err(format!("unknown fault {fault}"))
                }
            }
            other => Err(format!("unknown command {other}")),
        };
        self.stats.commands.fetch_add(1, Ordering::Relaxed);
        let status = match result {
            Ok(()) => STATUS_OK,
            Err(m) => {
                self.tell(&m);
                self.complain(format!("device refused command {cmd}: {m}"));
                STATUS_REFUSED
            }
        };
        self.control(CTL_CMD).store(0, Ordering::Relaxed);
        // Release: the message (and the cleared command) before the status (the guest polls
        // the status).
        self.control(CTL_CMD_STATUS)
            .store(status, Ordering::Release);
    }

    /// Writes `m` (cut to fit, NUL-terminated) into the control page's message area.
    fn tell(&self, m: &str) {
        let bytes = m.as_bytes();
        let n = bytes.len().min(MESSAGE_BYTES - 1);
        for (i, b) in bytes[..n].iter().chain(std::iter::once(&0)).enumerate() {
            if let Some(p) = self.shm.at((CTL_MESSAGE + i) as u64, 1) {
                // SAFETY: a byte of the control page's message area (checked).
                unsafe { p.write_volatile(*b) };
            }
        }
    }

    /// `SET_VM`: VMID `arg 0`'s page-table base (`arg 1`), PASID (`arg 2`) and
    /// `SH_MEM_BASES` (`arg 3`).
    fn set_vm(&self, st: &mut State) -> Result<(), String> {
        let (vmid, base, pasid, bases) = (self.arg(0), self.arg(1), self.arg(2), self.arg(3));
        let runs = Apertures::AMDKFD_GFX9.sh_mem_bases();
        if bases != u64::from(runs) {
            return Err(format!(
                "SET_VM: SH_MEM_BASES {bases:#x}: this device's interpreter runs amdkfd's gfx9 \
                 apertures ({runs:#x}) only"
            ));
        }
        st.mec
            .set_vm(&self.ram, vmid, base, pasid, runs)
            .map_err(|e| format!("SET_VM: {e}"))
    }

    fn set_kiq(&self, st: &mut State) -> Result<(), String> {
        st.mec
            .set_kiq(&self.ram, self.arg(0), self.arg(1), self.arg(2))
    }

    /// Runs the KIQ's packets up to the write pointer the guest published (guest RAM is both
    /// the untranslated and the physical memory).
    fn serve_kiq(&self, st: &mut State) {
        let stats = &self.stats;
        let r = st.mec.serve_kiq(&self.ram, &self.ram, &mut |s| {
            let counter = match s {
                Served::Mapped => &stats.kiq_maps,
                Served::Unmapped(_) => &stats.kiq_unmaps,
                Served::Fenced => &stats.kiq_fences,
                Served::Invalidated(_) => &stats.kiq_invalidations,
                Served::Resources => return,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        });
        if let Err(m) = r {
            self.tell(&m);
            self.stats
                .kiq_refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(m);
        }
    }

    fn set_ih(&self, st: &mut State) -> Result<(), String> {
        let (ring, size, wptr) = (self.arg(0), self.arg(1), self.arg(2));
        if !size.is_power_of_two() || size < u64::from(IH_ENTRY_BYTES) || size > 1 << 20 {
            return Err(format!(
                "IH ring size {size} is not a power of two in 32..=1 MiB"
            ));
        }
        if ring % 8 != 0 || self.ram.at(ring, size).is_none() || self.ram.u32(wptr).is_none() {
            return Err(format!(
                "IH ring {ring:#x} (+{size}) or write-back {wptr:#x} is not in guest RAM"
            ));
        }
        st.ih = Some(IhWriter {
            ring,
            size_bytes: size as u32,
            wptr_addr: wptr,
            wptr: 0,
            overflow: false,
        });
        Ok(())
    }

    fn serve_queue(&self, st: &mut State) {
        let mut hqds = std::mem::take(&mut st.mec.hqds);
        for hqd in &mut hqds {
            // The doorbell carried no value: the write index is in amd_queue_t
            // (write_dispatch_id, the CP's write-pointer poll address). Acquire pairs with
            // the producer's reservation (an AcqRel add before the packet and the doorbell).
            let ring = *hqd.processor.ring();
            let published = ring.write_index().load(Ordering::Acquire);
            if hqd.processor.stopped().is_some()
                || !(hqd.blocked || hqd.processor.read_index() < published)
            {
                continue;
            }
            loop {
                let ctx = Ctx {
                    dev: self,
                    st: RefCell::new(&mut *st),
                    at: hqd.at,
                };
                match hqd.processor.process(&ctx, 64) {
                    Progress::Processed(n) => {
                        self.stats
                            .packets
                            .fetch_add(u64::from(n), Ordering::Relaxed);
                    }
                    // Idle: the header at the read index is still INVALID (reserved, not yet
                    // published: its doorbell comes later) or the ring is empty.
                    Progress::Idle => {
                        hqd.blocked = false;
                        break;
                    }
                    Progress::Blocked => {
                        hqd.blocked = true;
                        break;
                    }
                    Progress::Stopped(_) => {
                        hqd.blocked = false;
                        break;
                    }
                }
            }
        }
        // Queues mapped while these ran (none: the KIQ is served between doorbells) stay.
        hqds.append(&mut st.mec.hqds);
        st.mec.hqds = hqds;
    }

    /// A walk of `vmid`'s tables failed: the GFX hub's `UTCL2` entry, and the IH interrupt.
    fn vm_fault(&self, st: &mut State, vmid: u8, fault: &VmFault) {
        self.stats.vm_faults.fetch_add(1, Ordering::Relaxed);
        eprintln!("device: VMID {vmid} page fault: {}", fault.why);
        let entry = fault.entry(vmid, st.mec.pasid(vmid));
        if self.push_entry(st, &entry.encode()) {
            self.raise_ih(st);
        }
    }

    fn push_entry(&self, st: &mut State, entry: &[u8; 32]) -> bool {
        let Some(ih) = st.ih.as_mut() else {
            self.complain("device: an IH entry before SET_IH".into());
            return false;
        };
        if self
            .control(CTL_IH_OVERFLOW_CLEAR)
            .swap(0, Ordering::AcqRel)
            != 0
        {
            ih.overflow = false;
        }
        let mask = ih.size_bytes - 1;
        let next = (ih.wptr + IH_ENTRY_BYTES) & mask;
        let rptr = self.control(CTL_IH_RPTR).load(Ordering::Acquire) & mask;
        if next == rptr {
            ih.overflow = true;
        }
        for (i, c) in entry.chunks_exact(4).enumerate() {
            let w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            if let Some(word) = self.ram.u32(ih.ring + u64::from(ih.wptr) + 4 * i as u64) {
                word.store(w, Ordering::Relaxed);
            }
        }
        ih.wptr = next;
        let raw = ih.wptr | if ih.overflow { WPTR_OVERFLOW } else { 0 };
        // Release: the entry before the write pointer (pairs with the guest's Acquire fence
        // after its write-pointer load).
        if let Some(w) = self.ram.u32(ih.wptr_addr) {
            w.store(raw, Ordering::Release);
        }
        self.stats.ih_entries.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Raises the IH interrupt (MSI-X vector 0) for the entries written — unless the guest's
    /// drain has already read them all (its read pointer equals the write pointer): a drain
    /// still running for an earlier interrupt took them, and an interrupt raised now would
    /// reach the guest after that drain with nothing to read, or, when the host delivers it
    /// late (QEMU's main loop starved on a loaded machine), during a later phase, where it
    /// would drain that phase's entry in place of the interrupt the phase counts (as an IH
    /// interrupts only while its ring is not empty).
    fn raise_ih(&self, st: &State) {
        if let Some(ih) = &st.ih {
            // SeqCst: the write pointer's store (push_entry) comes before this load of the
            // read pointer. The guest's drain loads the write pointer, reads the entries up to
            // it and then stores the read pointer: a read pointer equal to this write pointer
            // is a drain's that read the entry; any other value leaves the entry unread, and
            // the interrupt is raised.
            std::sync::atomic::fence(Ordering::SeqCst);
            let mask = ih.size_bytes - 1;
            if self.control(CTL_IH_RPTR).load(Ordering::Acquire) & mask == ih.wptr {
                self.stats
                    .ih_already_drained
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        self.stats.ih_interrupts.fetch_add(1, Ordering::Relaxed);
        self.raise(GUEST_VECTOR_IH);
    }
}

/// The processor's view of the device during one `process` call. `ProcessorHost` takes
/// `&self`; the state it changes (IH writer, faults) sits in a `RefCell` (the processor never
/// calls its host re-entrantly).
struct Ctx<'d, 's> {
    dev: &'d Device,
    st: RefCell<&'s mut State>,
    /// The queue being served.
    at: QueueAddresses,
}

impl Ctx<'_, '_> {
    /// The GPU address of `host`, an address in the queue's ring or `amd_queue_t` as the
    /// packet processor knows it.
    fn gpu_address(&self, host: u64) -> u64 {
        let a = &self.at;
        if host >= a.queue_host && host < a.queue_host + AMD_QUEUE_BYTES {
            a.queue_va + (host - a.queue_host)
        } else {
            a.ring_va.wrapping_add(host.wrapping_sub(a.ring_host))
        }
    }

    /// `len` bytes at `va` of the queue's address space, as a host pointer; a walk that fails
    /// writes its `UTCL2` entry.
    fn reach(&self, va: u64, len: u64) -> Result<*mut u8, String> {
        let mut st = self.st.borrow_mut();
        let st: &mut State = &mut st;
        let r = match st.mec.vms[usize::from(self.at.vmid)].as_ref() {
            Some(vm) => vm.host_range(&self.dev.ram, va, len, true),
            None => {
                return self
                    .dev
                    .ram
                    .at(va, len)
                    .ok_or_else(|| format!("{va:#x} (+{len}) is not in guest RAM"))
            }
        };
        r.map_err(|f| {
            let why = f.why.clone();
            self.dev.vm_fault(st, self.at.vmid, &f);
            format!("VMID {}: {why}", self.at.vmid)
        })
    }
}

impl ProcessorHost for Ctx<'_, '_> {
    fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> Result<(), Error> {
        let mut st = self.st.borrow_mut();
        let st: &mut State = &mut st;
        if st.faults.queue_error > 0 {
            st.faults.queue_error -= 1;
            hsa_core::bail!(
                Status::MemoryFault,
                "injected queue error: kernel object {:#x} faulted (device model)",
                dispatch.kernel_object.get()
            );
        }
        // The processor knows the ring by this process's mapping of it: the packet's and the
        // queue's addresses (the kernel's dispatch and queue pointers) are host addresses
        // here, guest-physical ones for the kernel.
        let mut d = *dispatch;
        d.packet_address = GpuVa(self.gpu_address(d.packet_address.get()));
        d.queue_address = GpuVa(self.gpu_address(d.queue_address.get()));
        let t = Instant::now();
        let (r, fault) = {
            let view = GpuView::new(
                &self.dev.ram,
                st.mec.vms[usize::from(self.at.vmid)].as_ref(),
            );
            let r = hsa_emu::device::run_kernel_dispatch(
                &d,
                self.dev.target,
                &view,
                1 << 48,
                CODE_BYTES,
                LDS_BYTES,
            );
            (r, view.fault.take())
        };
        if let Some(f) = fault {
            self.dev.vm_fault(st, self.at.vmid, &f);
        }
        st.small = dispatch.grid_size[0] == 1;
        if dispatch.grid_size[0] == 1 {
            self.dev
                .stats
                .kernel_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.dev.stats.small_kernels.fetch_add(1, Ordering::Relaxed);
        }
        r?;
        self.dev.stats.kernels.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn agent_dispatch(&self, dispatch: &DecodedAgentDispatch) -> Result<(), Error> {
        hsa_core::bail!(
            Status::InvalidPacketFormat,
            "agent dispatch packet (function {}) on a GPU compute queue",
            dispatch.function
        )
    }

    fn resolve_signal(&self, handle: SignalHandle) -> Result<RawSignal, Error> {
        let p = if handle.0 % 64 == 0 && handle.0 != 0 {
            self.reach(handle.0, 64)
        } else {
            Err("not 64-byte aligned".into())
        };
        let p = match p {
            Ok(p) => NonNull::new(p.cast::<AmdSignal>()),
            Err(e) => hsa_core::bail!(
                Status::InvalidSignal,
                "signal handle {:#x} is not a 64-byte aligned amd_signal_t the queue reaches: \
                 {e}",
                handle.0
            ),
        };
        let Some(p) = p else {
            hsa_core::bail!(
                Status::InvalidSignal,
                "signal handle {:#x} is null",
                handle.0
            );
        };
        // SAFETY: 64 aligned bytes of guest RAM, mapped as long as the device; signal fields
        // are accessed atomically only.
        Ok(unsafe { RawSignal::from_ptr(p) })
    }

    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> Result<(), Error> {
        let at = mailbox.get();
        let p = if at % 8 == 0 {
            self.reach(at, 8)
        } else {
            Err("not 8-byte aligned".into())
        };
        let p = match p {
            Ok(p) => p,
            Err(e) => hsa_core::bail!(
                Status::InvalidSignal,
                "event mailbox {at:#x} is not a word the queue reaches: {e}"
            ),
        };
        // SAFETY: 8 aligned bytes of guest RAM (host_range/at checked), mapped as long as
        // the device; the mailbox is accessed atomically only.
        unsafe { (*p.cast::<AtomicU64>()).store(u64::from(event_id), Ordering::Release) };
        Ok(())
    }

    fn signal_event(&self, event_id: u32) {
        let mut st = self.st.borrow_mut();
        let st: &mut State = &mut st;
        if st.faults.malformed > 0 {
            st.faults.malformed -= 1;
            let mut bad = IhEntry {
                client_id: CLIENT_GRBM_CP,
                source_id: SOURCE_CP_END_OF_PIPE,
                vmid: self.at.vmid,
                pasid: st.mec.pasid(self.at.vmid),
                src_data: [event_id, 0, 0, 0],
                ..IhEntry::default()
            }
            .encode();
            bad[3] |= 0x70; // dword 0 bits [30:28]: reserved
            if self.dev.push_entry(st, &bad) {
                self.dev.stats.malformed.fetch_add(1, Ordering::Relaxed);
            }
        }
        if st.faults.foreign > 0 {
            st.faults.foreign -= 1;
            // amdgpu's own fence on the shared ring: VMID 0, no PASID, a live event's id.
            let fence = IhEntry {
                client_id: CLIENT_GRBM_CP,
                source_id: SOURCE_CP_END_OF_PIPE,
                src_data: [event_id, 0, 0, 0],
                ..IhEntry::default()
            };
            self.dev.push_entry(st, &fence.encode());
        }
        let entry = IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_END_OF_PIPE,
            ring_id: self.at.ring_id(),
            vmid: self.at.vmid,
            pasid: st.mec.pasid(self.at.vmid),
            timestamp: st.started.elapsed().as_nanos() as u64,
            src_data: [event_id, 0, 0, 0],
            ..IhEntry::default()
        };
        if !self.dev.push_entry(st, &entry.encode()) {
            return;
        }
        if let Some(woke) = st.woke.take().filter(|_| st.small) {
            push(&self.dev.stats.service_ns, woke.elapsed());
        }
        if st.faults.drop > 0 {
            st.faults.drop -= 1;
            self.dev.stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if st.faults.merge > 0 {
            if st.merge_left == 0 {
                st.merge_left = st.faults.merge;
            }
            st.merge_left -= 1;
            if st.merge_left > 0 {
                self.dev.stats.merged.fetch_add(1, Ordering::Relaxed);
                return;
            }
            st.faults.merge = 0;
        }
        self.dev.raise_ih(st);
    }

    fn timestamp_ticks(&self) -> u64 {
        self.st.borrow().started.elapsed().as_nanos() as u64
    }

    fn report_error(&self, error: &Error) {
        let mut st = self.st.borrow_mut();
        let st: &mut State = &mut st;
        self.dev.stats.queue_errors.fetch_add(1, Ordering::Relaxed);
        eprintln!("device: queue stopped: {error}");
        // As the MEC writes it: the queue's doorbell id (its 64-bit slot) and the exception
        // code (0 for a status no code stands for, such as the injected memory fault).
        let code = hsa_core::queue::inactive::exception_code(error.status()).unwrap_or(0);
        let entry = IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_BAD_OPCODE,
            ring_id: self.at.ring_id(),
            vmid: self.at.vmid,
            pasid: st.mec.pasid(self.at.vmid),
            src_data: [
                cp_bad_opcode_context(self.at.doorbell_dword / 2, code),
                0,
                0,
                0,
            ],
            ..IhEntry::default()
        };
        if self.dev.push_entry(st, &entry.encode()) {
            self.dev.raise_ih(st);
        }
    }
}
