//! A simulated GPU for the bare-metal backend, shared by `tests/simulated_device.rs` and
//! `examples/simulated_host.rs` (which includes this file with `#[path]`), and the tests' host over
//! ordinary memory ([`host`], shared by `tests/simulated_device.rs` and `tests/fake_host.rs`).
//!
//! It plays the parts of the hardware that [`BaremetalPlatform`] talks to, over ordinary
//! memory the host describes through [`Host`]:
//! - **MEC and KIQ**: the model the VM test's device uses too ([`mec`]). The host maps and
//!   unmaps queues and flushes TLBs as amdgpu does, through a KIQ ring in memory
//!   ([`hsa_baremetal::kiq::Kiq`]); its KIQ doorbell is [`DeviceLink::kiq_doorbell`], where
//!   the MEC serves the packets at once: `MAP_QUEUES` takes a queue only from the MQD image at
//!   `mqd_addr` (what a MEC checks, each refusal named), `UNMAP_QUEUES` frees it,
//!   `QUERY_STATUS` writes the batch's fence, `INVALIDATE_TLBS` drops a PASID's translations.
//!   Each mapped queue gets a [`PacketProcessor`](hsa_core::packet_processor::PacketProcessor)
//!   over the ring and `amd_queue_t` its MQD names.
//! - **Doorbells**: it polls the 64-bit doorbell slot of every mapped queue. The value is the
//!   index of the last published packet (what `AqlQueue::ring_doorbell` stores), so it
//!   processes while `read_index <= doorbell` or while a barrier is blocked (the CP re-checks
//!   barrier dependencies the same way).
//! - **CP end-of-pipe interrupts**: when a completion signal with an event mailbox is
//!   decremented, the processor calls [`ProcessorHost::signal_event`]; the device then writes
//!   a soc15 IH entry (client `GRBM_CP` 0x14, source `CP_END_OF_PIPE` 181,
//!   `src_data[0]` = event id: amdkfd `kfd_int_process_v9.c`), advances the IH write pointer
//!   write-back (Release after the entry) and calls [`BaremetalPlatform::on_interrupt`], as
//!   the host's ISR would. Entries carry the queue's `ring_id` (queue, ME, pipe), VMID and
//!   PASID.
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
//!   are kept until the KIQ's `INVALIDATE_TLBS` for the context's PASID. VMID 0 reaches the
//!   carve-outs by GPU address, untranslated.
//!
//! Device-side memory access is atomic (the platform's side is volatile, as for real MMIO and
//! DMA; aligned 4- and 8-byte accesses are single-copy atomic on the targets we run on).
// Each includer uses a different subset of the helpers (fake_host.rs none of the device's),
// and this allow also covers `host`: unavoidable for a module `mod`-included by several crates.
#![allow(dead_code)]
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hsa_baremetal::ih::{IhEntry, IH_ENTRY_BYTES, WPTR_OVERFLOW};
use hsa_baremetal::irq::{
    cp_bad_opcode_context, CLIENT_GRBM_CP, SOURCE_CP_BAD_OPCODE, SOURCE_CP_END_OF_PIPE,
};
use hsa_baremetal::kiq::KiqConfig;
use hsa_baremetal::{BaremetalPlatform, CarveOut, Host};
use hsa_core::abi::signal::AmdSignal;
use hsa_core::abi::SignalHandle;
use hsa_core::packet_processor::{
    DecodedAgentDispatch, DecodedKernelDispatch, ProcessorHost, Progress,
};
use hsa_core::platform::Platform;
use hsa_core::signal::raw::RawSignal;
use hsa_core::{Error, EventId, GpuVa, Status};

// Test crates only (integration tests build with cfg(test)): the firmware example brings its
// own static host.
#[cfg(test)]
pub mod host;

/// The GPUVM walker the VM test's device uses too (`tests/qemu/vm.rs`).
#[path = "../qemu/vm.rs"]
pub mod vm;

/// The MEC model the VM test's device uses too (`tests/qemu/mec.rs`).
#[path = "../qemu/mec.rs"]
pub mod mec;

use mec::{Mec, QueueAddresses, Served};
use vm::{PhysMemory, VmContext, VmFault};

/// Packets one queue processes before the device looks at the next queue.
const BATCH_PACKETS: u32 = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The state the host and the device share besides memory: the MEC (its KIQ, HQDs and
/// VMIDs, [`mec::Mec`]: the model the QEMU test's device uses too), the memory the MEC reaches,
/// and the `IH_RB_CNTL.WPTR_OVERFLOW_CLEAR` request. `const`-constructible: a `static` or a
/// field of a firmware host.
///
/// The host maps queues as amdgpu does, through the KIQ ([`hsa_baremetal::kiq::Kiq`]); its
/// KIQ doorbell is [`kiq_doorbell`](DeviceLink::kiq_doorbell), where this device's MEC serves
/// the packets at once (so a host waits for no device thread).
#[derive(Debug)]
pub struct DeviceLink {
    /// The MEC. The device holds this lock for a whole pass, so an `UNMAP_QUEUES` served
    /// (under it) means the device no longer touches the queue.
    mec: spin::Mutex<MecState>,
    overflow_clear: AtomicBool,
}

/// The MEC and what it reaches.
struct MecState {
    mec: Mec,
    /// What the CP reaches by GPU address (VMID 0: the carve-outs and the KIQ's memory).
    by_gpu: Vec<Window>,
    /// What page tables name: the carve-outs by physical address.
    by_phys: Vec<Window>,
    /// Packets served: maps, unmaps, fences, TLB invalidations.
    served: [u64; 4],
    /// The KIQ packets refused, by name, in order.
    refused: Vec<String>,
}

impl std::fmt::Debug for MecState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MecState")
            .field("hqds", &self.mec.hqds.len())
            .field("served", &self.served)
            .field("refused", &self.refused)
            .finish()
    }
}

// SAFETY: the HQDs' processors point into memory the host keeps mapped for the link's life
// (the carve-outs); the TLBs are plain maps. Everything is reached only under the spin lock.
unsafe impl Send for MecState {}

impl Default for DeviceLink {
    fn default() -> Self {
        Self::new()
    }
}

/// The carve-outs of `carve_outs` with a CPU mapping, by GPU address (`by_phys` false) or by
/// physical address.
pub fn windows(carve_outs: &[CarveOut], by_phys: bool) -> Vec<Window> {
    carve_outs
        .iter()
        .filter_map(|c| {
            Some(Window {
                gpu: if by_phys {
                    c.phys_base.get()
                } else {
                    c.gpu_va.get()
                },
                virt: c.virt_base?,
                size: c.size_bytes,
            })
        })
        .collect()
}

impl DeviceLink {
    /// No KIQ, no queue mapped.
    pub const fn new() -> DeviceLink {
        DeviceLink {
            mec: spin::Mutex::new(MecState {
                mec: Mec::new(0..1 << 26),
                by_gpu: Vec::new(),
                by_phys: Vec::new(),
                served: [0; 4],
                refused: Vec::new(),
            }),
            overflow_clear: AtomicBool::new(false),
        }
    }

    /// The firmware's MEC and KIQ setup (amdgpu's `gfx_v9_0_kiq_init_queue`): a fresh MEC
    /// whose `CP_MEC_DOORBELL_RANGE` is doorbell dwords `doorbell_dwords`, reaching the host's
    /// `carve_outs` and `kiq_memory` (the block holding the ring, its write-pointer poll word
    /// and the fence; GPU address = CPU address), reading the KIQ ring of `config`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming what the MEC cannot reach.
    pub fn set_kiq(
        &self,
        carve_outs: &[CarveOut],
        kiq_memory: Window,
        config: &KiqConfig,
        doorbell_dwords: std::ops::Range<u32>,
    ) -> Result<(), Error> {
        let mut st = self.mec.lock();
        st.mec = Mec::new(doorbell_dwords);
        st.by_gpu = windows(carve_outs, false);
        st.by_gpu.push(kiq_memory);
        st.by_phys = windows(carve_outs, true);
        let st = &mut *st;
        st.mec
            .set_kiq(
                &Windows(&st.by_gpu),
                config.ring_virt as u64,
                config.ring_dwords.into(),
                config.wptr_poll_virt as u64,
            )
            .map_err(|e| hsa_core::error!(Status::InvalidArgument, "{e}"))
    }

    /// The firmware's GPUVM setup of `vmid` (1..=15): its page-table base (the PDB2's PDE,
    /// naming memory of a carve-out by physical address), PASID and amdkfd's gfx9
    /// `SH_MEM_BASES`. Queues whose MQD names `vmid` reach memory through it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming what is wrong with the VMID, the PASID or the base.
    pub fn set_vm(
        &self,
        carve_outs: &[CarveOut],
        vmid: u8,
        page_table_base: u64,
        pasid: u16,
    ) -> Result<(), Error> {
        let sh_mem_bases = hsa_core::platform::SegmentApertures::AMDKFD_GFX9.sh_mem_bases();
        let mut st = self.mec.lock();
        st.by_phys = windows(carve_outs, true);
        let st = &mut *st;
        st.mec
            .set_vm(
                &Windows(&st.by_phys),
                vmid.into(),
                page_table_base,
                pasid.into(),
                sh_mem_bases,
            )
            .map_err(|e| hsa_core::error!(Status::InvalidArgument, "{e}"))
    }

    /// The KIQ's doorbell: the MEC serves the packets up to the write pointer the host stored
    /// (a refused packet is kept in [`refused`](DeviceLink::refused), and the rest of its
    /// batch, fence included, skipped).
    pub fn kiq_doorbell(&self) {
        let mut st = self.mec.lock();
        let st = &mut *st;
        let served = &mut st.served;
        let r = st
            .mec
            .serve_kiq(&Windows(&st.by_gpu), &Windows(&st.by_phys), &mut |s| {
                let i = match s {
                    Served::Mapped => 0,
                    Served::Unmapped(_) => 1,
                    Served::Fenced => 2,
                    Served::Invalidated(_) => 3,
                    Served::Resources => return,
                };
                served[i] += 1;
            });
        if let Err(m) = r {
            st.refused.push(m);
        }
    }

    /// The KIQ packets the MEC refused, by name, in order.
    pub fn refused(&self) -> Vec<String> {
        self.mec.lock().refused.clone()
    }

    /// KIQ packets served so far: `MAP_QUEUES`, `UNMAP_QUEUES`, `QUERY_STATUS` fences,
    /// `INVALIDATE_TLBS`.
    pub fn served(&self) -> [u64; 4] {
        self.mec.lock().served
    }

    /// HQDs in use.
    pub fn mapped(&self) -> usize {
        self.mec.lock().mec.hqds.len()
    }

    /// The PASID of `vmid`'s context (0 for VMID 0 or one without page tables).
    fn pasid(&self, vmid: u8) -> u16 {
        self.mec.lock().mec.pasid(vmid)
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

/// CPU-visible memory the device reaches: device addresses `gpu .. gpu + size` (GPU or
/// physical, as the view says) are host addresses `virt ..`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// The first device address.
    pub gpu: u64,
    /// Its host address.
    pub virt: usize,
    /// Bytes.
    pub size: u64,
}

/// A view of memory made of windows (by GPU address, or by physical address: what the page
/// tables name).
pub struct Windows<'w>(pub &'w [Window]);

impl PhysMemory for Windows<'_> {
    fn at(&self, addr: u64, len: u64) -> Option<*mut u8> {
        translate(self.0, addr, len).map(|p| p as *mut u8)
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
    vm: Option<(&'k VmContext, &'k Windows<'k>)>,
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
                Ok(pa) => translate(phys.0, pa, size)?,
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

/// The simulated GPU. Drive it with [`run`](SimDevice::run) on its own thread (or
/// [`poll`](SimDevice::poll) by hand).
pub struct SimDevice<'a, H: SimHost> {
    platform: &'a BaremetalPlatform<H>,
    /// `UTCL2` fault entries written.
    vm_faults: AtomicU64,
    doorbell_base: usize,
    mailbox_base: u64,
    mailbox_count: u64,
    ih: Mutex<IhWriter>,
    kernels: Mutex<HashMap<u64, Arc<KernelFn<'a>>>>,
    errors: Mutex<Vec<(u32, Error)>>,
    packets: AtomicU64,
    eop_interrupts: AtomicU64,
}

impl<'a, H: SimHost> SimDevice<'a, H> {
    /// A device over the memory, doorbells and IH ring that `platform`'s host describes.
    pub fn new(platform: &'a BaremetalPlatform<H>) -> SimDevice<'a, H> {
        let host = platform.host();
        let ih = host.ih_ring();
        let mailbox_base = platform.event_mailbox(EventId(0)).map_or(0, |m| m.get());
        SimDevice {
            platform,
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
            errors: Mutex::new(Vec::new()),
            packets: AtomicU64::new(0),
            eop_interrupts: AtomicU64::new(0),
        }
    }

    /// The firmware's GPUVM setup of `vmid` ([`DeviceLink::set_vm`] over the host's
    /// carve-outs). Queues mapped afterwards whose MQD names `vmid` reach memory through it.
    ///
    /// # Errors
    /// As [`DeviceLink::set_vm`].
    pub fn set_vm(&self, vmid: u8, page_table_base: u64, pasid: u16) -> Result<(), Error> {
        let host = self.platform.host();
        host.link()
            .set_vm(host.carve_outs(), vmid, page_table_base, pasid)
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
        // which the host keeps mapped; `index` comes from a mapped queue's MQD (admitted only
        // inside the grant's doorbell range) or the caller's grant; 8-aligned. The platform's
        // stores are volatile 8-byte stores.
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

    /// One pass over every mapped queue: processes what its doorbell announced (and re-checks
    /// blocked barriers). Returns the packets completed.
    pub fn poll(&self) -> u32 {
        let link = self.platform.host().link();
        let mut st = link.mec.lock();
        let MecState {
            mec: Mec { hqds, vms, .. },
            by_gpu,
            by_phys,
            ..
        } = &mut *st;
        let mut done = 0;
        for hqd in hqds.iter_mut() {
            let db = hqd.at.doorbell_dword / 2;
            if hqd.processor.stopped().is_some()
                || (!hqd.blocked && hqd.processor.read_index() > self.doorbell_value(db))
            {
                continue;
            }
            let ctx = QueueCtx {
                dev: self,
                at: hqd.at,
                vms,
                by_gpu,
                by_phys,
            };
            loop {
                match hqd.processor.process(&ctx, BATCH_PACKETS) {
                    Progress::Processed(n) => {
                        done += n;
                        self.packets.fetch_add(u64::from(n), Ordering::Relaxed);
                    }
                    Progress::Idle => {
                        hqd.blocked = false;
                        break;
                    }
                    Progress::Blocked => {
                        hqd.blocked = true;
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
    at: QueueAddresses,
    /// The MEC's VMID contexts (the pass holds the MEC's lock).
    vms: &'d [Option<VmContext>; 16],
    /// What the queue reaches by GPU address at VMID 0 ([`MecState::by_gpu`]).
    by_gpu: &'d [Window],
    /// The carve-outs by physical address, what page tables name ([`MecState::by_phys`]).
    by_phys: &'d [Window],
}

impl<H: SimHost> QueueCtx<'_, '_, H> {
    /// The queue's VMID context, `None` for VMID 0 (untranslated).
    fn vm(&self) -> Result<Option<&VmContext>, String> {
        match self.at.vmid {
            0 => Ok(None),
            v => self.vms[usize::from(v)]
                .as_ref()
                .map(Some)
                .ok_or_else(|| format!("VMID {v} has no page tables")),
        }
    }

    fn pasid(&self) -> u16 {
        self.vm().ok().flatten().map_or(0, |v| v.pasid)
    }

    /// `len` bytes at `va` as the queue reaches them: through its page tables (a failed walk
    /// writes its `UTCL2` entry), or by GPU address for VMID 0.
    fn reach(&self, va: u64, len: u64) -> Result<usize, String> {
        let Some(vm) = self.vm()? else {
            return translate(self.by_gpu, va, len)
                .ok_or_else(|| format!("{va:#x} (+{len}) is not in CPU-visible memory"));
        };
        vm.host_range(&Windows(self.by_phys), va, len, true)
            .map(|p| p as usize)
            .map_err(|f| {
                self.dev.vm_fault(self.at.vmid, vm.pasid, &f);
                format!("VMID {}: {}", self.at.vmid, f.why)
            })
    }
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
            if let Err(e) = self.reach(kernarg, 8) {
                hsa_core::bail!(Status::MemoryFault, "kernarg_address {kernarg:#x}: {e}");
            }
        }
        let phys = Windows(self.by_phys);
        let vm = self
            .vm()
            .map_err(|e| hsa_core::error!(Status::MemoryFault, "{e}"))?
            .map(|v| (v, &phys));
        let ctx = KernelCtx {
            dispatch,
            windows: self.by_gpu,
            vm,
            fault: std::cell::RefCell::new(None),
        };
        f(&ctx);
        if let Some(fault) = ctx.fault.take() {
            self.dev.vm_fault(self.at.vmid, self.pasid(), &fault);
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
            self.reach(handle.0, 64)
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
            .then(|| self.reach(mailbox.get(), 8).ok())
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
            ring_id: self.at.ring_id(),
            vmid: self.at.vmid,
            pasid: self.pasid(),
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
        let doorbell = self.at.doorbell_dword / 2;
        lock(&self.dev.errors).push((doorbell, error.clone()));
        // As the MEC writes it: the doorbell id and the exception code in context_id0.
        let code = hsa_core::queue::inactive::exception_code(error.status()).unwrap_or(0);
        let entry = IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_BAD_OPCODE,
            ring_id: self.at.ring_id(),
            vmid: self.at.vmid,
            pasid: self.pasid(),
            src_data: [cp_bad_opcode_context(doorbell, code), 0, 0, 0],
            ..IhEntry::default()
        };
        self.dev.inject(&entry.encode());
        self.dev.raise();
    }
}
