//! A simulated GPU for the bare-metal backend, shared by `tests/simulated_device.rs` and
//! `examples/simulated_host.rs` (which includes this file with `#[path]`), and the tests' host over
//! ordinary memory ([`host`], shared by `tests/simulated_device.rs` and `tests/fake_host.rs`).
//!
//! It plays the parts of the hardware that [`BaremetalPlatform`] talks to, over ordinary
//! memory the host describes through [`Host`]:
//! - **HQDs**: the host's `map_queue`/`unmap_queue` forward to a [`DeviceLink`] (fixed array,
//!   no heap, so a firmware-style host can embed it); each mapped queue gets a
//!   [`PacketProcessor`] over the ring and `amd_queue_t` its MQD image names (the
//!   [`QueueMapping`]'s `mqd_virt`, checked as a MEC checks it: `V9Mqd::load_compute`).
//! - **Doorbells**: it polls the 64-bit doorbell slot of every mapped queue. The value is the
//!   index of the last published packet (what `AqlQueue::ring_doorbell` stores), so it
//!   processes while `read_index <= doorbell` or while a barrier is blocked (the CP re-checks
//!   barrier dependencies the same way).
//! - **CP end-of-pipe interrupts**: when a completion signal with an event mailbox is
//!   decremented, the processor calls [`ProcessorHost::signal_event`]; the device then writes
//!   a soc15 IH entry (client `GRBM_CP` 0x14, source `CP_END_OF_PIPE` 181,
//!   `src_data[0]` = event id: amdkfd `kfd_int_process_v9.c`), advances the IH write pointer
//!   write-back (Release after the entry) and calls [`BaremetalPlatform::on_interrupt`], as
//!   the host's ISR would.
//! - **IH overflow**: a write that would make the write pointer reach the host's read-pointer
//!   register sets `RB_OVERFLOW` (bit 0) in the write-back and keeps writing, overwriting the
//!   oldest entry (`IH_RB_CNTL.WPTR_OVERFLOW_ENABLE` = 1, as Linux programs it); the host's
//!   `ih_overflow_clear` (`WPTR_OVERFLOW_CLEAR`) clears it at the next write.
//! - **Kernels**: there is no shader core; a kernel object maps to a registered closure that
//!   gets a [`KernelCtx`] (the dispatch, kernarg and memory access by GPU address).
//! - **GPUVM**: a queue whose MQD names a VMID (`cp_hqd_vmid`) the firmware gave page tables
//!   ([`SimDevice::set_vm`]) reaches its ring, `amd_queue_t`, signals, event mailboxes and
//!   kernel memory only through them, with the VM test's walker ([`vm`], over the
//!   carve-outs' physical addresses); a walk that fails writes the GFX hub's `UTCL2` entry
//!   and raises the interrupt, and the kernel's access fails (its queue stops). Translations
//!   are kept until [`SimDevice::invalidate_tlbs`]. VMID 0 reaches the carve-outs by GPU
//!   address, untranslated.
//!
//! Device-side memory access is atomic (the platform's side is volatile, as for real MMIO and
//! DMA; aligned 4- and 8-byte accesses are single-copy atomic on the targets we run on).
// Each includer uses a different subset of the helpers (fake_host.rs none of the device's),
// and this allow also covers `host`: unavoidable for a module `mod`-included by several crates.
#![allow(dead_code)]
#![allow(unsafe_code)]

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hsa_baremetal::ih::{IhEntry, IH_ENTRY_BYTES, WPTR_OVERFLOW};
use hsa_baremetal::irq::{
    cp_bad_opcode_context, CLIENT_GRBM_CP, SOURCE_CP_BAD_OPCODE, SOURCE_CP_END_OF_PIPE,
};
use hsa_baremetal::{BaremetalPlatform, Host, QueueMapping};
use hsa_core::abi::queue::AmdQueue;
use hsa_core::abi::signal::AmdSignal;
use hsa_core::abi::SignalHandle;
use hsa_core::packet_processor::{
    DecodedAgentDispatch, DecodedKernelDispatch, PacketProcessor, ProcessorHost, Progress,
    RingConsumer,
};
use hsa_core::platform::Platform;
use hsa_core::queue::ring::Ring;
use hsa_core::signal::raw::RawSignal;
use hsa_core::wire::mqd::{V9Mqd, V9_MQD_DWORDS};
use hsa_core::{Error, EventId, GpuVa, Status};

// Test crates only (integration tests build with cfg(test)): the firmware example brings its
// own static host.
#[cfg(test)]
pub mod host;

/// The GPUVM walker the VM test's device uses too (`tests/qemu/vm.rs`).
#[path = "../qemu/vm.rs"]
pub mod vm;

use vm::{PhysMemory, VmContext, VmFault};

/// Hardware queue descriptors (HQDs) the simulated device has.
pub const MAX_HQDS: usize = 8;
/// Packets one queue processes before the device looks at the next queue.
const BATCH_PACKETS: u32 = 64;
/// `sizeof(amd_queue_t)`, bytes.
const AMD_QUEUE_BYTES: u64 = 256;
/// The dword of `cp_hqd_vmid` in `struct v9_mqd`.
const CP_HQD_VMID_DWORD: usize = 131;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The state the host and the device share besides memory: the HQD table (written by the
/// host's `map_queue`/`unmap_queue`) and the `IH_RB_CNTL.WPTR_OVERFLOW_CLEAR` request. No heap:
/// a `static` or a field of a firmware host.
#[derive(Debug)]
pub struct DeviceLink {
    /// (generation, mapping) per HQD. The device holds this lock for a whole pass, so
    /// `unmap` returning means the device no longer touches the queue.
    hqds: spin::Mutex<[Option<(u64, QueueMapping)>; MAX_HQDS]>,
    next_generation: AtomicU64,
    overflow_clear: AtomicBool,
}

impl Default for DeviceLink {
    fn default() -> Self {
        Self::new()
    }
}

/// `mapping` with the ring, its size, the read and write pointers and the `amd_queue_t` the
/// MQD image at `mapping.mqd_virt` names (the `amd_queue_t` holding the read pointer at
/// `read_dispatch_id`, offset 128).
fn from_mqd(mapping: &QueueMapping) -> Result<QueueMapping, Error> {
    let bad = Status::InvalidQueueCreation;
    if mapping.mqd_virt == 0 || mapping.mqd_virt % 4 != 0 {
        hsa_core::bail!(
            bad,
            "MQD at CPU address {:#x} is not readable",
            mapping.mqd_virt
        );
    }
    let mut d = [0u32; V9_MQD_DWORDS];
    for (i, w) in d.iter_mut().enumerate() {
        // SAFETY: the platform wrote the 2048-byte image at `mqd_virt` (a CPU-visible page it
        // keeps until unmap_queue returned); 4-aligned (checked).
        *w = unsafe { ((mapping.mqd_virt + 4 * i) as *const u32).read_volatile() };
    }
    let hqd = V9Mqd::from_dwords(d).load_compute(0..1 << 26, true)?;
    if hqd.doorbell_dword != mapping.doorbell.get() * 2 {
        hsa_core::bail!(
            bad,
            "MQD DOORBELL_OFFSET {:#x} is not doorbell {}'s",
            hqd.doorbell_dword,
            mapping.doorbell.get()
        );
    }
    Ok(QueueMapping {
        ring: GpuVa(hqd.ring),
        ring_size_bytes: hqd.ring_size_bytes,
        read_pointer: GpuVa(hqd.read_ptr),
        write_pointer: GpuVa(hqd.write_ptr),
        amd_queue: GpuVa(hqd.read_ptr.wrapping_sub(128)),
        ..*mapping
    })
}

impl DeviceLink {
    /// No queue mapped.
    pub const fn new() -> DeviceLink {
        DeviceLink {
            hqds: spin::Mutex::new([None; MAX_HQDS]),
            next_generation: AtomicU64::new(1),
            overflow_clear: AtomicBool::new(false),
        }
    }

    /// `Host::map_queue`: takes a free HQD for the queue the MQD image at `mapping.mqd_virt`
    /// describes, as a MEC loads it: the ring, its size, the read and write pointers come
    /// from the image ([`V9Mqd::load_compute`]), not from the mapping's other fields.
    ///
    /// # Errors
    /// `Status::OutOfResources` when all [`MAX_HQDS`] are taken; `Status::InvalidQueueCreation`
    /// when the MQD is one a MEC refuses (its field named), its doorbell is not the mapping's,
    /// or the doorbell or the ring already has a queue.
    pub fn map(&self, mapping: &QueueMapping) -> Result<(), Error> {
        let mapping = &from_mqd(mapping)?;
        let mut hqds = self.hqds.lock();
        let taken = hqds
            .iter()
            .flatten()
            .any(|(_, m)| m.doorbell == mapping.doorbell || m.ring == mapping.ring);
        if taken {
            hsa_core::bail!(
                Status::InvalidQueueCreation,
                "doorbell {} or ring {:#x} already has an HQD",
                mapping.doorbell.get(),
                mapping.ring.get()
            );
        }
        let Some(free) = hqds.iter_mut().find(|h| h.is_none()) else {
            hsa_core::bail!(Status::OutOfResources, "all {MAX_HQDS} HQDs are in use");
        };
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        *free = Some((generation, *mapping));
        Ok(())
    }

    /// `Host::unmap_queue`: frees the HQD of `mapping.doorbell`. Waits for the device's
    /// current pass (the HQD lock), so afterwards the device no longer reads the ring.
    ///
    /// # Errors
    /// `Status::InvalidQueue` when no HQD serves that doorbell.
    pub fn unmap(&self, mapping: &QueueMapping) -> Result<(), Error> {
        let mut hqds = self.hqds.lock();
        let Some(slot) = hqds
            .iter_mut()
            .find(|h| h.is_some_and(|(_, m)| m.doorbell == mapping.doorbell))
        else {
            hsa_core::bail!(
                Status::InvalidQueue,
                "no HQD serves doorbell {}",
                mapping.doorbell.get()
            );
        };
        *slot = None;
        Ok(())
    }

    /// HQDs in use.
    pub fn mapped(&self) -> usize {
        self.hqds.lock().iter().flatten().count()
    }

    /// `Host::ih_overflow_clear`: the `WPTR_OVERFLOW_CLEAR` register write.
    pub fn request_overflow_clear(&self) {
        self.overflow_clear.store(true, Ordering::Release);
    }
}

/// A host the simulated device can serve: a [`Host`] that forwards its queue and IH-control
/// hooks to a [`DeviceLink`].
pub trait SimHost: Host {
    /// The link the host's `map_queue`, `unmap_queue` and `ih_overflow_clear` forward to.
    fn link(&self) -> &DeviceLink;
}

/// A CPU-visible carve-out: GPU addresses `gpu .. gpu + size` are host addresses `virt ..`.
#[derive(Clone, Copy, Debug)]
struct Window {
    gpu: u64,
    virt: usize,
    size: u64,
}

/// The CPU-visible carve-outs by physical address: what the page tables name.
struct PhysWindows(Vec<Window>);

impl PhysMemory for PhysWindows {
    fn at(&self, addr: u64, len: u64) -> Option<*mut u8> {
        translate(&self.0, addr, len).map(|p| p as *mut u8)
    }
}

fn translate(windows: &[Window], va: u64, len: u64) -> Option<usize> {
    windows.iter().find_map(|w| {
        let off = va.checked_sub(w.gpu)?;
        (off.checked_add(len)? <= w.size).then(|| w.virt + off as usize)
    })
}

/// What a registered kernel gets: the validated dispatch and memory access by GPU address.
pub struct KernelCtx<'k> {
    /// The dispatch packet, decoded and validated by the packet processor.
    pub dispatch: &'k DecodedKernelDispatch,
    windows: &'k [Window],
    /// The queue's GPUVM context and the physical memory, when it has one.
    vm: Option<(&'k VmContext, &'k PhysWindows)>,
    /// The first walk that failed.
    fault: std::cell::RefCell<Option<VmFault>>,
}

impl KernelCtx<'_> {
    fn atomic<T>(&self, va: u64, write: bool) -> Option<&T> {
        let size = std::mem::size_of::<T>() as u64;
        if va % size != 0 {
            return None;
        }
        let p = match self.vm {
            Some((vm, phys)) => match vm.translate(phys, va, write) {
                Ok(pa) => translate(&phys.0, pa, size)?,
                Err(f) => {
                    self.fault.borrow_mut().get_or_insert(f);
                    return None;
                }
            },
            None => translate(self.windows, va, size)?,
        };
        // SAFETY: `p` lies inside a CPU-visible carve-out, which the host keeps mapped for its
        // whole life (longer than any dispatch), aligned to `size`; device-side accesses to
        // kernel memory are all atomic.
        Some(unsafe { &*(p as *const T) })
    }

    /// 64-bit word `i` of the kernarg segment.
    pub fn kernarg_u64(&self, i: u64) -> Option<u64> {
        self.load_u64(self.dispatch.kernarg_address.get() + 8 * i)
    }

    /// Loads the aligned 64-bit word at GPU address `va`; `None` outside CPU-visible memory.
    pub fn load_u64(&self, va: u64) -> Option<u64> {
        self.atomic::<AtomicU64>(va, false)
            .map(|a| a.load(Ordering::Relaxed))
    }

    /// Loads the aligned 32-bit word at GPU address `va`; `None` outside CPU-visible memory.
    pub fn load_u32(&self, va: u64) -> Option<u32> {
        self.atomic::<AtomicU32>(va, false)
            .map(|a| a.load(Ordering::Relaxed))
    }

    /// Stores the aligned 32-bit `value` at GPU address `va`; `false` outside CPU-visible
    /// memory (nothing stored).
    pub fn store_u32(&self, va: u64, value: u32) -> bool {
        self.atomic::<AtomicU32>(va, true)
            .map(|a| a.store(value, Ordering::Relaxed))
            .is_some()
    }
}

type KernelFn<'a> = dyn Fn(&KernelCtx<'_>) + Send + Sync + 'a;

/// The IH block's write side.
#[derive(Debug)]
struct IhWriter {
    ring: usize,
    size_bytes: u32,
    wptr_virt: usize,
    rptr_virt: usize,
    wptr: u32,
    overflow: bool,
}

impl IhWriter {
    fn word(addr: usize) -> &'static AtomicU32 {
        // SAFETY: only called with addresses from the host's `IhRingConfig` (ring slots,
        // write-back, read-pointer register), which the `Host` implementer keeps mapped for
        // the host's life, 4-aligned (the platform checked 8-alignment of the bases; offsets
        // are multiples of 4). The device is stopped before the host goes away.
        unsafe { &*(addr as *const AtomicU32) }
    }

    fn push(&mut self, entry: &[u8; 32], link: &DeviceLink) {
        if link.overflow_clear.swap(false, Ordering::AcqRel) {
            self.overflow = false;
        }
        let mask = self.size_bytes - 1;
        let next = (self.wptr + IH_ENTRY_BYTES) & mask;
        let rptr = Self::word(self.rptr_virt).load(Ordering::Acquire) & mask;
        if next == rptr {
            self.overflow = true;
        }
        for (i, c) in entry.chunks_exact(4).enumerate() {
            let w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            Self::word(self.ring + self.wptr as usize + 4 * i).store(w, Ordering::Relaxed);
        }
        self.wptr = next;
        let raw = self.wptr | if self.overflow { WPTR_OVERFLOW } else { 0 };
        // Release: the entry's stores before the write pointer (pairs with the platform's
        // Acquire fence after its write-pointer load).
        Self::word(self.wptr_virt).store(raw, Ordering::Release);
    }
}

struct SimQueue {
    generation: u64,
    hqd: u8,
    /// The MQD's `cp_hqd_vmid`.
    vmid: u8,
    processor: PacketProcessor,
    blocked: bool,
}

/// The simulated GPU. Drive it with [`run`](SimDevice::run) on its own thread (or
/// [`poll`](SimDevice::poll) by hand).
pub struct SimDevice<'a, H: SimHost> {
    platform: &'a BaremetalPlatform<H>,
    windows: Vec<Window>,
    /// The CPU-visible carve-outs by physical address.
    phys: PhysWindows,
    /// The GPUVM context of each VMID the firmware set up ([`SimDevice::set_vm`]).
    vms: Mutex<[Option<VmContext>; 16]>,
    /// `UTCL2` fault entries written.
    vm_faults: AtomicU64,
    doorbell_base: usize,
    mailbox_base: u64,
    mailbox_count: u64,
    ih: Mutex<IhWriter>,
    kernels: Mutex<HashMap<u64, Arc<KernelFn<'a>>>>,
    queues: Mutex<HashMap<u32, SimQueue>>,
    errors: Mutex<Vec<(u32, Error)>>,
    /// Generations of mappings already seen (attached or found attached): attach once.
    attached: Mutex<HashSet<u64>>,
    packets: AtomicU64,
    eop_interrupts: AtomicU64,
}

impl<'a, H: SimHost> SimDevice<'a, H> {
    /// A device over the memory, doorbells and IH ring that `platform`'s host describes.
    pub fn new(platform: &'a BaremetalPlatform<H>) -> SimDevice<'a, H> {
        let host = platform.host();
        let windows = host
            .carve_outs()
            .iter()
            .filter_map(|c| {
                Some(Window {
                    gpu: c.gpu_va.get(),
                    virt: c.virt_base?,
                    size: c.size_bytes,
                })
            })
            .collect();
        let phys = PhysWindows(
            host.carve_outs()
                .iter()
                .filter_map(|c| {
                    Some(Window {
                        gpu: c.phys_base.get(),
                        virt: c.virt_base?,
                        size: c.size_bytes,
                    })
                })
                .collect(),
        );
        let ih = host.ih_ring();
        let mailbox_base = platform.event_mailbox(EventId(0)).map_or(0, |m| m.get());
        SimDevice {
            platform,
            windows,
            phys,
            vms: Mutex::new(std::array::from_fn(|_| None)),
            vm_faults: AtomicU64::new(0),
            doorbell_base: host.doorbells().virt_base,
            mailbox_base,
            mailbox_count: BaremetalPlatform::<H>::EVENT_CAPACITY as u64,
            ih: Mutex::new(IhWriter {
                ring: ih.ring_virt_base,
                size_bytes: ih.ring_size_bytes,
                wptr_virt: ih.wptr_virt,
                rptr_virt: ih.rptr_register.block_virt_base + ih.rptr_register.offset_bytes,
                wptr: 0,
                overflow: false,
            }),
            kernels: Mutex::new(HashMap::new()),
            queues: Mutex::new(HashMap::new()),
            errors: Mutex::new(Vec::new()),
            attached: Mutex::new(HashSet::new()),
            packets: AtomicU64::new(0),
            eop_interrupts: AtomicU64::new(0),
        }
    }

    /// The firmware's GPUVM setup of `vmid` (1..=15): its page-table base (the PDB2's PDE,
    /// `hsa_baremetal::gpuvm::GpuVm::root_pde`, naming memory of a carve-out by physical
    /// address) and its PASID. Queues whose MQD names `vmid` reach memory through it from
    /// their next mapping on.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming what is wrong with `vmid` or the base.
    pub fn set_vm(&self, vmid: u8, page_table_base: u64, pasid: u16) -> Result<(), Error> {
        if !(1..16).contains(&vmid) {
            hsa_core::bail!(Status::InvalidArgument, "VMID {vmid} is not 1..=15");
        }
        let sh_mem_bases = hsa_core::platform::SegmentApertures::AMDKFD_GFX9.sh_mem_bases();
        let vm = VmContext::new(&self.phys, page_table_base, pasid, sh_mem_bases)
            .map_err(|e| hsa_core::error!(Status::InvalidArgument, "{e}"))?;
        lock(&self.vms)[usize::from(vmid)] = Some(vm);
        Ok(())
    }

    /// The firmware's `INVALIDATE_TLBS` for `pasid`: drops the translations kept for it.
    pub fn invalidate_tlbs(&self, pasid: u16) {
        for vm in lock(&self.vms)
            .iter()
            .flatten()
            .filter(|v| v.pasid == pasid)
        {
            vm.invalidate();
        }
    }

    /// The PASID of `vmid`'s context (0 for VMID 0 or one without page tables).
    fn pasid(&self, vmid: u8) -> u16 {
        lock(&self.vms)
            .get(usize::from(vmid))
            .and_then(Option::as_ref)
            .map_or(0, |v| v.pasid)
    }

    /// `UTCL2` fault entries written so far.
    pub fn vm_faults(&self) -> u64 {
        self.vm_faults.load(Ordering::Relaxed)
    }

    /// A walk of `vmid`'s tables failed: the GFX hub's `UTCL2` entry, and the interrupt.
    fn vm_fault(&self, vmid: u8, pasid: u16, fault: &VmFault) {
        self.vm_faults.fetch_add(1, Ordering::Relaxed);
        self.inject(&fault.entry(vmid, pasid).encode());
        self.raise();
    }

    /// `len` bytes at `va` as queue `vmid` reaches them: through its page tables (a failed
    /// walk writes its `UTCL2` entry), or by GPU address for VMID 0.
    fn reach(&self, vmid: u8, va: u64, len: u64) -> Result<usize, String> {
        if vmid == 0 {
            return translate(&self.windows, va, len)
                .ok_or_else(|| format!("{va:#x} (+{len}) is not in CPU-visible memory"));
        }
        let vms = lock(&self.vms);
        let Some(vm) = vms[usize::from(vmid)].as_ref() else {
            return Err(format!("VMID {vmid} has no page tables"));
        };
        match vm.host_range(&self.phys, va, len, true) {
            Ok(p) => Ok(p as usize),
            Err(f) => {
                let pasid = vm.pasid;
                drop(vms);
                self.vm_fault(vmid, pasid, &f);
                Err(format!("VMID {vmid}: {}", f.why))
            }
        }
    }

    /// Makes dispatches of `kernel_object` run `f`.
    pub fn register_kernel(
        &self,
        kernel_object: GpuVa,
        f: impl Fn(&KernelCtx<'_>) + Send + Sync + 'a,
    ) {
        lock(&self.kernels).insert(kernel_object.get(), Arc::new(f));
    }

    /// The value in doorbell slot `index` of the aperture.
    pub fn doorbell_value(&self, index: u32) -> u64 {
        // SAFETY: the platform checked that every granted doorbell fits the host's aperture,
        // which the host keeps mapped; `index` comes from a mapping (a granted doorbell) or
        // the caller's grant; 8-aligned. The platform's stores are volatile 8-byte stores.
        let slot = unsafe { &*((self.doorbell_base + 8 * index as usize) as *const AtomicU64) };
        slot.load(Ordering::Acquire)
    }

    /// Writes `entry` into the IH ring (advancing the write pointer) without raising the
    /// interrupt: for injecting unknown or malformed entries.
    pub fn inject(&self, entry: &[u8; 32]) {
        lock(&self.ih).push(entry, self.platform.host().link());
    }

    /// Raises the IH interrupt: calls the platform's ISR entry point. Returns the events it
    /// signaled.
    pub fn raise(&self) -> u64 {
        self.platform.on_interrupt()
    }

    /// Packets completed so far.
    pub fn packets(&self) -> u64 {
        self.packets.load(Ordering::Relaxed)
    }

    /// End-of-pipe interrupts raised so far.
    pub fn eop_interrupts(&self) -> u64 {
        self.eop_interrupts.load(Ordering::Relaxed)
    }

    /// Queue errors reported by the packet processors: (doorbell, error).
    pub fn errors(&self) -> Vec<(u32, Error)> {
        lock(&self.errors).clone()
    }

    /// Processor for a newly seen mapping, or an error naming what is attached.
    fn attach(
        &self,
        mapping: &QueueMapping,
        vmid: u8,
        generation: u64,
        hqd: u8,
    ) -> Result<SimQueue, Error> {
        let size_packets = mapping.ring_size_bytes / 64;
        if !size_packets.is_power_of_two() || size_packets > u64::from(u32::MAX) {
            hsa_core::bail!(
                Status::InvalidQueueCreation,
                "ring_size_bytes {} is not 64 * a power of two",
                mapping.ring_size_bytes
            );
        }
        let ring = self
            .reach(vmid, mapping.ring.get(), mapping.ring_size_bytes)
            .ok();
        let queue = self
            .reach(vmid, mapping.amd_queue.get(), AMD_QUEUE_BYTES)
            .ok();
        let (Some(ring), Some(queue)) = (
            ring.and_then(|p| NonNull::new(p as *mut u8)),
            queue.and_then(|p| NonNull::new(p as *mut AmdQueue)),
        ) else {
            hsa_core::bail!(
                Status::InvalidQueueCreation,
                "ring {:#x} or amd_queue {:#x} is not in CPU-visible memory",
                mapping.ring.get(),
                mapping.amd_queue.get()
            );
        };
        if ring.as_ptr() as usize % 64 != 0 || queue.as_ptr() as usize % 64 != 0 {
            hsa_core::bail!(
                Status::InvalidQueueCreation,
                "ring {:#x} or amd_queue {:#x} is not 64-byte aligned",
                mapping.ring.get(),
                mapping.amd_queue.get()
            );
        }
        // SAFETY: both lie in a carve-out the host keeps mapped (checked by `translate`),
        // 64-aligned (checked), the size is a power of two; `Host::map_queue`'s caller keeps
        // them valid until `unmap_queue`, after which this device drops the processor before
        // its next access (the HQD lock is held over every pass).
        let ring = unsafe { Ring::new(ring, size_packets as u32, queue) };
        // SAFETY: the link gives each ring at most one HQD, and this device is the only
        // consumer of HQD rings.
        let consumer = unsafe { RingConsumer::new(ring) };
        Ok(SimQueue {
            generation,
            hqd,
            vmid,
            processor: PacketProcessor::new(consumer),
            blocked: false,
        })
    }

    /// One pass over every mapped queue: processes what its doorbell announced (and re-checks
    /// blocked barriers). Returns the packets completed.
    pub fn poll(&self) -> u32 {
        let link = self.platform.host().link();
        let hqds = link.hqds.lock();
        let mut queues = lock(&self.queues);
        queues.retain(|db, q| {
            hqds.iter()
                .flatten()
                .any(|(g, m)| m.doorbell.get() == *db && *g == q.generation)
        });
        let mut done = 0;
        for (hqd, (generation, mapping)) in hqds
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.map(|h| (i, h)))
        {
            let db = mapping.doorbell.get();
            let q = match queues.entry(db) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) => {
                    if !lock(&self.attached).insert(generation) {
                        continue; // reported once already
                    }
                    // SAFETY: the image the mapping was taken from (read at map, 4-aligned):
                    // the platform keeps it until unmap_queue returned, and the HQD lock
                    // held here keeps the mapping.
                    let vmid = unsafe {
                        ((mapping.mqd_virt + 4 * CP_HQD_VMID_DWORD) as *const u32).read_volatile()
                    };
                    if vmid > 15 {
                        lock(&self.errors).push((
                            db,
                            hsa_core::error!(
                                Status::InvalidQueueCreation,
                                "MQD cp_hqd_vmid {vmid} is past 15"
                            ),
                        ));
                        continue;
                    }
                    let vmid = vmid as u8;
                    match self.attach(&mapping, vmid, generation, hqd as u8) {
                        Ok(q) => v.insert(q),
                        Err(e) => {
                            lock(&self.errors).push((db, e));
                            continue;
                        }
                    }
                }
            };
            if q.processor.stopped().is_some()
                || (!q.blocked && q.processor.read_index() > self.doorbell_value(db))
            {
                continue;
            }
            let ctx = QueueCtx {
                dev: self,
                doorbell: db,
                hqd: q.hqd,
                vmid: q.vmid,
            };
            loop {
                match q.processor.process(&ctx, BATCH_PACKETS) {
                    Progress::Processed(n) => {
                        done += n;
                        self.packets.fetch_add(u64::from(n), Ordering::Relaxed);
                    }
                    Progress::Idle => {
                        q.blocked = false;
                        break;
                    }
                    Progress::Blocked => {
                        q.blocked = true;
                        break;
                    }
                    Progress::Stopped(_) => break,
                }
            }
        }
        done
    }

    /// Polls until `stop` is set, sleeping 100 µs after a pass that completed nothing.
    pub fn run(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            if self.poll() == 0 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }
}

/// The packet processor's view of the device for one queue.
struct QueueCtx<'d, 'a, H: SimHost> {
    dev: &'d SimDevice<'a, H>,
    doorbell: u32,
    hqd: u8,
    /// The queue's VMID (0: untranslated).
    vmid: u8,
}

impl<H: SimHost> ProcessorHost for QueueCtx<'_, '_, H> {
    fn execute_kernel(&self, dispatch: &DecodedKernelDispatch) -> Result<(), Error> {
        let object = dispatch.kernel_object.get();
        let Some(f) = lock(&self.dev.kernels).get(&object).cloned() else {
            hsa_core::bail!(
                Status::InvalidPacketFormat,
                "kernel_object {object:#x} is not a registered kernel"
            );
        };
        let kernarg = dispatch.kernarg_address.get();
        if kernarg != 0 {
            if let Err(e) = self.dev.reach(self.vmid, kernarg, 8) {
                hsa_core::bail!(Status::MemoryFault, "kernarg_address {kernarg:#x}: {e}");
            }
        }
        let vms = lock(&self.dev.vms);
        let vm = match self.vmid {
            0 => None,
            v => Some((
                vms[usize::from(v)].as_ref().ok_or_else(|| {
                    hsa_core::error!(Status::MemoryFault, "VMID {v} has no page tables")
                })?,
                &self.dev.phys,
            )),
        };
        let pasid = vm.map_or(0, |(v, _)| v.pasid);
        let ctx = KernelCtx {
            dispatch,
            windows: &self.dev.windows,
            vm,
            fault: std::cell::RefCell::new(None),
        };
        f(&ctx);
        let fault = ctx.fault.take();
        drop(vms);
        if let Some(fault) = fault {
            self.dev.vm_fault(self.vmid, pasid, &fault);
            hsa_core::bail!(
                Status::MemoryFault,
                "memory fault: {} at {:#x}: {}",
                if fault.write { "write" } else { "read" },
                fault.address,
                fault.why
            );
        }
        Ok(())
    }

    fn agent_dispatch(&self, dispatch: &DecodedAgentDispatch) -> Result<(), Error> {
        hsa_core::bail!(
            Status::InvalidPacketFormat,
            "the simulated GPU runs no agent functions (type {})",
            dispatch.function
        )
    }

    fn resolve_signal(&self, handle: SignalHandle) -> Result<RawSignal, Error> {
        let ptr = if handle.0 % 64 == 0 {
            self.dev.reach(self.vmid, handle.0, 64)
        } else {
            Err("not 64-byte aligned".into())
        };
        let Some(ptr) = ptr.ok().and_then(|p| NonNull::new(p as *mut AmdSignal)) else {
            hsa_core::bail!(
                Status::InvalidSignal,
                "signal handle {:#x} is not a 64-byte aligned slot the queue reaches",
                handle.0
            );
        };
        // SAFETY: 64 aligned bytes inside a carve-out the host keeps mapped for its life
        // (longer than this device); signal fields are only accessed atomically.
        Ok(unsafe { RawSignal::from_ptr(ptr) })
    }

    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> Result<(), Error> {
        let off = mailbox.get().wrapping_sub(self.dev.mailbox_base);
        let slot = (self.dev.mailbox_base != 0 && off % 8 == 0 && off / 8 < self.dev.mailbox_count)
            .then(|| self.dev.reach(self.vmid, mailbox.get(), 8).ok())
            .flatten();
        let Some(slot) = slot else {
            hsa_core::bail!(
                Status::InvalidSignal,
                "event_mailbox_ptr {:#x} is not a slot of the event page",
                mailbox.get()
            );
        };
        // SAFETY: an 8-aligned slot of the platform's event page (checked above), which lives
        // as long as the platform; mailbox slots are only accessed atomically or volatilely.
        let slot = unsafe { &*(slot as *const AtomicU64) };
        slot.store(u64::from(event_id), Ordering::Release);
        Ok(())
    }

    fn signal_event(&self, event_id: u32) {
        let entry = IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_END_OF_PIPE,
            ring_id: self.hqd,
            vmid: self.vmid,
            pasid: self.dev.pasid(self.vmid),
            timestamp: self.dev.platform.timestamp_ticks(),
            src_data: [event_id, 0, 0, 0],
            ..IhEntry::default()
        };
        self.dev.inject(&entry.encode());
        self.dev.eop_interrupts.fetch_add(1, Ordering::Relaxed);
        self.dev.raise();
    }

    fn timestamp_ticks(&self) -> u64 {
        self.dev.platform.timestamp_ticks()
    }

    /// Records the error, then tells the platform as a CP does: a `CP_BAD_OPCODE` IH entry
    /// (the processor stored the error into the queue's inactive signal before) and the
    /// interrupt.
    fn report_error(&self, error: &Error) {
        lock(&self.dev.errors).push((self.doorbell, error.clone()));
        // As the MEC writes it: the doorbell id and the exception code in context_id0.
        let code = hsa_core::queue::inactive::exception_code(error.status()).unwrap_or(0);
        let entry = IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_BAD_OPCODE,
            ring_id: self.hqd,
            vmid: self.vmid,
            pasid: self.dev.pasid(self.vmid),
            src_data: [cp_bad_opcode_context(self.doorbell, code), 0, 0, 0],
            ..IhEntry::default()
        };
        self.dev.inject(&entry.encode());
        self.dev.raise();
    }
}
