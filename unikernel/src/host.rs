//! The unikernel's [`Host`] for hsa-baremetal: the VM's real hardware.
//!
//! - Memory: one system-memory carve-out of guest RAM above the image, identity-mapped (its
//!   CPU address is its guest-physical address is its GPU address). The GPU reaches it through
//!   page tables ([`hsa_baremetal::gpuvm`], in this image's .bss): the whole carve-out is mapped
//!   for VMID [`GUEST_VMID`] when the host is made, and the firmware step `SET_VM` gives the
//!   device the tables' base; queues run under that VMID ([`Host::queue_vmid`]).
//!   [`VmHost::gpu_unmap`]/[`VmHost::gpu_remap`] change the tables, and
//!   [`VmHost::flush_tlbs`] flushes the GPU's TLBs through the KIQ (`INVALIDATE_TLBS`).
//! - Doorbells: the aperture is the ivshmem device's BAR0, the one granted doorbell is index
//!   [`QUEUE_DOORBELL_INDEX`]; see [`crate::protocol::DEVICE_VECTOR_QUEUE`] for how a 64-bit
//!   store there becomes "peer 0, vector 0" and why the device reads the write index from
//!   `amd_queue_t` instead.
//! - Queues: `map_queue`/`unmap_queue` write amdgpu's `MAP_QUEUES`/`UNMAP_QUEUES` packets,
//!   each fenced by `QUERY_STATUS`, into the KIQ ring ([`hsa_baremetal::kiq`]: a page of the
//!   image's .bss that the firmware step `SET_KIQ` told the device about), ring the KIQ's
//!   doorbell and poll the fence. `MAP_QUEUES` names the MQD hsa-baremetal wrote; the device
//!   takes the queue from those bytes.
//! - Interrupts: the IH ring and its write-pointer write-back are pages of the image's .bss;
//!   the read-pointer register is a word of the control page; the device raises MSI-X vector
//!   [`crate::protocol::GUEST_VECTOR_IH`], whose handler calls
//!   [`BaremetalPlatform::on_interrupt`]. `wait_for_interrupt` checks with interrupts masked,
//!   arms the APIC timer for the deadline and halts with `sti; hlt`.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hsa_baremetal::gpuvm::{GpuVm, MType, PteFlags, TableRegion};
use hsa_baremetal::kiq::{Kiq, KiqConfig};
use hsa_baremetal::{
    BaremetalPlatform, CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping,
    RegisterLocation,
};
use hsa_core::platform::NodeProperties;
use hsa_core::{DoorbellIndex, Error, GpuVa, NodeId, PhysAddr, Status};

use crate::apic;
use crate::arch::{disable_interrupts, enable_interrupts, enable_interrupts_and_halt, rdtsc};
use crate::ivshmem::Ivshmem;
use crate::protocol::*;

/// Bytes of the IH ring (128 entries of 32 bytes).
pub const IH_RING_BYTES: usize = 4096;
/// `gfx_target_version` of the GPU node the device model plays (gfx90a, which the embedded
/// code object is built for).
pub const GPU_TARGET_VERSION: u32 = 90010;

/// A 4 KiB-aligned page of zeroed 64-bit words that the device writes (through guest RAM) and
/// the runtime reads (volatile, through `hsa_baremetal::mmio`).
#[repr(C, align(4096))]
pub struct Page<const N: usize>([AtomicU64; N]);

impl<const N: usize> Page<N> {
    const fn new() -> Self {
        Page([const { AtomicU64::new(0) }; N])
    }

    /// Its address (guest-physical = virtual).
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

static IH_RING: Page<{ IH_RING_BYTES / 8 }> = Page::new();

/// Dwords of the KIQ ring (4 KiB).
pub const KIQ_RING_DWORDS: usize = 1024;
/// How long a KIQ batch may take before `map_queue`/`unmap_queue` give up, ns.
const KIQ_TIMEOUT_NS: u64 = 5_000_000_000;
/// The KIQ's block ([`KiqConfig::identity_block`]): the ring of [`KIQ_RING_DWORDS`], then
/// the write-pointer poll word (dwords) the device polls, then the fence it writes.
static KIQ_BLOCK: Page<{ KiqConfig::identity_block_bytes(KIQ_RING_DWORDS as u32) / 8 }> =
    Page::new();

/// The value word (`amd_signal_t.value`, a guest-physical = virtual address) of a signal that
/// the next halt stores 0 into before it halts; 0: none (see [`gate_on_next_halt`]).
static HALT_GATE: AtomicU64 = AtomicU64::new(0);

/// Arms a gate: the next time a waiter halts in [`Host::wait_for_interrupt`] (interrupts
/// masked, still waiting), it first stores 0 (Release) into the 64-bit signal value at
/// `value_address`. A packet behind a barrier-AND on that signal then cannot complete before
/// a waiter has halted, whatever the host's scheduling: the main job uses it so that its wait
/// deterministically blocks before the dispatch it waits for runs (an interrupt raised after
/// the store stays pending while interrupts are masked and ends the halt).
///
/// # Safety
/// `value_address` is the 8-aligned value word of a live signal in guest RAM that stays live
/// until the gate opened (the caller waits for that).
pub unsafe fn gate_on_next_halt(value_address: u64) {
    HALT_GATE.store(value_address, Ordering::Release);
}

/// Opens the armed gate, if any (see [`gate_on_next_halt`]).
fn open_gate() {
    let at = HALT_GATE.swap(0, Ordering::AcqRel);
    if at != 0 {
        // SAFETY: `gate_on_next_halt`'s caller guarantees a live, 8-aligned signal value word;
        // the device reads it atomically (64-bit accesses are single-copy atomic on x86).
        unsafe { (*(at as *const AtomicU64)).store(0, Ordering::Release) };
    }
}
static IH_WPTR: Page<1> = Page::new();

/// Pages for the GPU page tables: a 4 KiB PTB maps 2 MiB, so 128 pages cover a carve-out of
/// up to about 240 MiB (with the three directory tables).
const TABLE_PAGES: usize = 128;
static TABLES: [Page<512>; TABLE_PAGES] = [const { Page::new() }; TABLE_PAGES];
/// Set when [`take_tables`] took [`TABLES`].
static TABLES_TAKEN: AtomicBool = AtomicBool::new(false);

/// [`TABLES`] as the page-table memory of one [`GpuVm`], once.
///
/// # Errors
/// `Status::OutOfResources` when they were taken before.
fn take_tables() -> Result<TableRegion, Error> {
    if TABLES_TAKEN.swap(true, Ordering::AcqRel) {
        hsa_core::bail!(Status::OutOfResources, "the page-table pages are taken");
    }
    let base = TABLES.as_ptr() as usize;
    // SAFETY: TABLES is one run of TABLE_PAGES 4 KiB pages (Page's size and alignment),
    // zeroed (.bss), identity-mapped read-write (phys = virt) for the image's life, and
    // handed out once (TABLES_TAKEN).
    unsafe { TableRegion::new(base as u64, base, TABLE_PAGES) }
}

/// The flags of the carve-out's pages: system memory, snooped, read/write/execute, uncached
/// (`MTYPE_UC`, as amdgpu maps fine-grained system memory on gfx90a).
const CARVE_OUT_PTE: PteFlags = PteFlags::SYSTEM
    .union(PteFlags::SNOOPED)
    .union(PteFlags::READABLE)
    .union(PteFlags::WRITEABLE)
    .union(PteFlags::EXECUTABLE);

/// The platform, reachable from the interrupt handlers.
pub static PLATFORM: spin::Once<BaremetalPlatform<VmHost>> = spin::Once::new();

/// The VM as hsa-baremetal's host.
pub struct VmHost {
    carve_outs: [CarveOut; 1],
    nodes: [NodeProperties; 2],
    device: Ivshmem,
    tsc_hz: u64,
    /// The KIQ ring this host maps queues through.
    kiq: spin::Mutex<Kiq>,
    /// VMID [`GUEST_VMID`]'s page tables.
    vm: spin::Mutex<GpuVm<TableRegion>>,
    /// Times a waiter halted (still waiting after the check with interrupts masked).
    pub halts: AtomicU64,
}

impl VmHost {
    /// A host whose system memory is `[base, base + size_bytes)` of guest RAM.
    ///
    /// # Errors
    /// The KIQ's, when its static block does not make a ring (it does).
    pub fn new(device: Ivshmem, base: u64, size_bytes: u64, tsc_hz: u64) -> Result<VmHost, Error> {
        let mut gpu = NodeProperties {
            node_id: 1,
            simd_count: 4,
            simd_per_cu: 4,
            array_count: 1,
            simd_arrays_per_engine: 1,
            cu_per_simd_array: 1,
            max_waves_per_simd: 8,
            wave_front_size: 64,
            lds_size_in_kb: 64,
            gfx_target_version: GPU_TARGET_VERSION,
            vendor_id: 0x1002,
            num_cp_queues: 1,
            ..Default::default()
        };
        let _ = gpu.name.push_str("gfx90a");
        let _ = gpu.marketing_name.push_str("hsa-emu over ivshmem");
        // SAFETY: the KIQ ring and its two words lie in KIQ_BLOCK, this image's static
        // (identity-mapped: CPU address = GPU address), written only through this Kiq (under
        // its lock) and by the device.
        let kiq = unsafe { Kiq::new(&Self::kiq_config()?) }?;
        let mut vm = GpuVm::new(take_tables()?, true)?;
        vm.map(GpuVa(base), base, size_bytes, CARVE_OUT_PTE, MType::Uc)
            .map_err(|e| e.context("mapping the carve-out for the GPU"))?;
        Ok(VmHost {
            vm: spin::Mutex::new(vm),
            carve_outs: [CarveOut {
                node: NodeId(0),
                kind: CarveOutKind::SystemMemory,
                phys_base: PhysAddr(base),
                virt_base: Some(base as usize),
                gpu_va: GpuVa(base),
                size_bytes,
            }],
            nodes: [
                NodeProperties {
                    node_id: 0,
                    cpu_cores_count: 1,
                    ..Default::default()
                },
                gpu,
            ],
            device,
            tsc_hz,
            kiq: spin::Mutex::new(kiq),
            halts: AtomicU64::new(0),
        })
    }

    /// The KIQ's ring address, ring dwords and write-pointer poll address (for the device's
    /// `SET_KIQ`, the firmware's KIQ bring-up).
    ///
    /// # Errors
    /// As [`VmHost::kiq_config`].
    pub fn kiq_layout() -> Result<[u64; 3], Error> {
        let c = Self::kiq_config()?;
        Ok([
            c.ring_virt as u64,
            c.ring_dwords.into(),
            c.wptr_poll_virt as u64,
        ])
    }

    /// The KIQ of [`KIQ_BLOCK`].
    ///
    /// # Errors
    /// `Status::InvalidArgument` when the block would pass the end of the address space.
    fn kiq_config() -> Result<KiqConfig, Error> {
        KiqConfig::identity_block(KIQ_BLOCK.addr(), KIQ_RING_DWORDS as u32).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidArgument,
                "the KIQ block at {:#x} passes the address space",
                KIQ_BLOCK.addr()
            )
        })
    }

    /// Submits `packets` as one KIQ batch and waits up to `timeout_ns` for its fence (the
    /// fault phases send packets the device must refuse).
    ///
    /// # Errors
    /// As [`Kiq::submit`]; a batch the device refused times out, with its message.
    pub fn kiq_packets(
        &self,
        packets: &[hsa_core::wire::kiq::KiqPacket],
        timeout_ns: u64,
    ) -> Result<(), Error> {
        self.kiq_batch(|kiq, ring| kiq.submit(packets, ring), timeout_ns)
    }

    /// Submits one KIQ batch with `submit` (given the KIQ and its doorbell) and waits for its
    /// fence; a batch the device refused times out, and its message is added.
    fn kiq_batch(
        &self,
        submit: impl FnOnce(&mut Kiq, &dyn Fn(u64)) -> Result<u64, Error>,
        timeout_ns: u64,
    ) -> Result<(), Error> {
        let mut kiq = self.kiq.lock();
        let device = self.device;
        let seq = submit(&mut kiq, &|_| {
            device.ring(DEVICE_PEER, DEVICE_VECTOR_COMMAND)
        })?;
        kiq.wait(self, seq, timeout_ns).map_err(|e| {
            hsa_core::error!(
                e.status(),
                "{e}; the device says: {}",
                self.device.message()
            )
        })
    }

    /// The arguments of the firmware's `SET_VM`: the VMID, its page-table base, PASID and
    /// `SH_MEM_BASES` ([`Host::sh_mem_bases`], amdkfd's gfx9 apertures).
    pub fn vm_setup(&self) -> [u64; 4] {
        [
            u64::from(GUEST_VMID),
            self.vm.lock().root_pde(),
            u64::from(GUEST_PASID),
            u64::from(self.sh_mem_bases()),
        ]
    }

    /// Unmaps `bytes` at `va` from the GPU's page tables. The GPU may go on using
    /// translations it keeps until [`flush_tlbs`](VmHost::flush_tlbs), as amdgpu updates
    /// page tables and then flushes.
    ///
    /// # Errors
    /// [`GpuVm::unmap`]'s (nothing changed then).
    pub fn gpu_unmap(&self, va: GpuVa, bytes: u64) -> Result<(), Error> {
        self.vm.lock().unmap(va, bytes)
    }

    /// Maps `bytes` at `va` (in the carve-out) back for the GPU, as they were mapped at
    /// start.
    ///
    /// # Errors
    /// [`GpuVm::map`]'s.
    pub fn gpu_remap(&self, va: GpuVa, bytes: u64) -> Result<(), Error> {
        self.vm
            .lock()
            .map(va, va.get(), bytes, CARVE_OUT_PTE, MType::Uc)
    }

    /// Flushes the GPU's TLBs for the runtime's PASID (`INVALIDATE_TLBS`, legacy flush, GFX
    /// hub only), waiting for the KIQ's fence.
    ///
    /// # Errors
    /// The KIQ's.
    pub fn flush_tlbs(&self) -> Result<(), Error> {
        self.kiq_batch(
            |kiq, ring| kiq.invalidate_tlbs(GUEST_PASID, 0, false, ring),
            KIQ_TIMEOUT_NS,
        )
    }

    /// The ivshmem device.
    pub fn device(&self) -> &Ivshmem {
        &self.device
    }

    /// The IH ring's address, size and write-back address (for the device's `SET_IH`).
    pub fn ih_layout() -> [u64; 3] {
        [
            IH_RING.addr() as u64,
            IH_RING_BYTES as u64,
            IH_WPTR.addr() as u64,
        ]
    }

    /// Whether every IH entry the device wrote has been drained: the write pointer the device
    /// wrote back equals the read pointer the runtime wrote to the register.
    pub fn ih_idle(&self) -> bool {
        let mask = IH_RING_BYTES as u32 - 1;
        let wptr = IH_WPTR.0[0].load(Ordering::Acquire) as u32 & mask & !1;
        wptr == self.device.control32(CTL_IH_RPTR) & mask
    }
}

// SAFETY: the carve-out is guest RAM above the image and heap that nothing else uses,
// identity-mapped (virt = phys = GPU address); the doorbell aperture is BAR0 (256 bytes,
// mapped uncached), of which only doorbell 1 is granted ((1 + 1) * 8 <= 256) and only this
// runtime rings it; the IH ring and write-back are this image's statics, the read-pointer
// register a word of the control page (BAR2, mapped), and only this runtime reads the ring;
// every method may be called from any context (single CPU; the ISR only calls on_interrupt).
unsafe impl Host for VmHost {
    fn carve_outs(&self) -> &[CarveOut] {
        &self.carve_outs
    }

    fn clear_device_memory(&self, gpu_va: GpuVa, size_bytes: u64) -> Result<(), Error> {
        hsa_core::bail!(
            Status::InvalidArgument,
            "the VM has no device-local memory to clear ({gpu_va}, {size_bytes} bytes)"
        )
    }

    fn doorbells(&self) -> DoorbellAperture {
        DoorbellAperture {
            virt_base: self.device.registers.address as usize,
            size_bytes: BAR0_BYTES,
            first: DoorbellIndex(QUEUE_DOORBELL_INDEX),
            count: 1,
        }
    }

    unsafe fn map_queue(&self, m: &QueueMapping) -> Result<(), Error> {
        // MEC1, pipe 0, queue 0: the device's one queue slot per doorbell.
        self.kiq_batch(|kiq, ring| kiq.map_queue(m, 1, 0, 0, ring), KIQ_TIMEOUT_NS)
    }

    fn unmap_queue(&self, m: &QueueMapping) -> Result<(), Error> {
        self.kiq_batch(|kiq, ring| kiq.unmap_queue(m, ring), KIQ_TIMEOUT_NS)
    }

    fn ih_ring(&self) -> IhRingConfig {
        IhRingConfig {
            ring_virt_base: IH_RING.addr(),
            ring_size_bytes: IH_RING_BYTES as u32,
            wptr_virt: IH_WPTR.addr(),
            rptr_register: RegisterLocation {
                block_virt_base: self.device.control_addr(0),
                block_size_bytes: CONTROL_PAGE_BYTES,
                offset_bytes: CTL_IH_RPTR,
            },
        }
    }

    fn queue_vmid(&self) -> u8 {
        GUEST_VMID
    }

    /// The device's MEC takes doorbell [`QUEUE_DOORBELL_INDEX`] only (its dword offset 2,
    /// byte 8: `(index * 2) << 2` in both registers).
    fn mec_doorbell_range(&self) -> Option<(u32, u32)> {
        let at = (QUEUE_DOORBELL_INDEX * 2) << 2;
        Some((at, at))
    }

    fn ih_filter(&self) -> hsa_baremetal::irq::IhFilter {
        hsa_baremetal::irq::IhFilter {
            first_vmid: GUEST_VMID,
            last_vmid: GUEST_VMID,
            pasid: Some(GUEST_PASID),
        }
    }

    fn ih_overflow_clear(&self) {
        self.device.set_control32(CTL_IH_OVERFLOW_CLEAR, 1);
    }

    /// 0: the device is a thread of the host this VM's vCPU runs on (2 shared cores here); a
    /// vCPU spinning in a wait takes the host CPU the device model and QEMU's I/O thread need
    /// to answer (B9 measured 60-75 µs round trips with the 2 x 20 µs default spin phases,
    /// 20-40 µs without). Waits halt at once.
    fn wait_spin_ns(&self) -> u64 {
        0
    }

    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool) {
        disable_interrupts();
        if !still_waiting() {
            enable_interrupts();
            return;
        }
        self.halts.fetch_add(1, Ordering::Relaxed);
        open_gate();
        apic::arm_timer(deadline_ticks);
        // An interrupt that arrived after the check is pending now and ends the halt.
        enable_interrupts_and_halt();
        apic::disarm_timer();
    }

    fn timestamp_ticks(&self) -> u64 {
        rdtsc()
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.tsc_hz.max(1)
    }

    fn nodes(&self) -> &[NodeProperties] {
        &self.nodes
    }
}
