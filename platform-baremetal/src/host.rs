//! What the firmware or kernel hosting the runtime hands in: memory carve-outs with their
//! physical, virtual and GPU addresses, the doorbell aperture and the doorbells this runtime
//! may use, the soc15 IH ring, a wait-for-interrupt hook, a timestamp source, the topology it
//! knows, and the hooks that make the GPU see memory and queues.
//!
//! The shape follows virtio-drivers' `Hal`: each method says what the implementer guarantees
//! (`# Implementation safety`) and, where the caller has obligations, what the caller
//! guarantees (`# Safety`). Methods take `&self`, so two fake hosts can live in one test.
//! Addresses are plain integers (`usize` virtual, [`PhysAddr`], [`GpuVa`]): the only place that
//! turns them into pointers is [`crate::mmio`].
#![allow(unsafe_code)] // an unsafe trait with one unsafe method; no unsafe blocks here

use hsa_core::platform::{Cache, IoLink, MemoryBank, NodeProperties};
use hsa_core::{DoorbellIndex, Error, GpuVa, NodeId, PhysAddr};

use crate::mqd::ComputeMqd;

/// What a carve-out's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CarveOutKind {
    /// System memory (host DRAM) that the GPU reaches over the bus; CPU-visible.
    SystemMemory,
    /// VRAM the CPU can touch through a BAR mapping (large-BAR / resizable BAR).
    HostVisibleVram,
    /// VRAM the CPU cannot touch: `virt_base` is `None`.
    PrivateVram,
}

/// One region of memory the host gives the runtime to manage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarveOut {
    /// The GPU node whose memory it is (or, for system memory, which node's view it is).
    pub node: NodeId,
    /// What kind of memory.
    pub kind: CarveOutKind,
    /// Physical (bus) address of the first byte.
    pub phys_base: PhysAddr,
    /// CPU virtual address of the first byte; `None` when the CPU cannot touch it.
    pub virt_base: Option<usize>,
    /// Address of the first byte in the GPU's virtual address space. For
    /// [`CarveOutKind::SystemMemory`] it must equal `virt_base`: HSA hands host pointers
    /// (signal handles, event mailboxes, kernarg and queue addresses) to the GPU unchanged,
    /// so the host maps system memory at the same address for the GPU as for the CPU.
    pub gpu_va: GpuVa,
    /// Size, bytes (a multiple of 4096).
    pub size_bytes: u64,
}

/// The doorbell BAR mapping and the slots this runtime may use.
///
/// Ringing doorbell `i` is one 64-bit volatile store of the queue's last published packet
/// index to `virt_base + 8 * i` ([`crate::doorbell::Doorbells::ring`]), after a fence.
///
/// **Doorbells that carry no value.** A platform whose doorbell is only a notification (an
/// interrupt to another agent, an eventfd, a mailbox bit) maps onto this as follows: grant
/// the slot(s) whose 64-bit store reaches the notification register, and have the device
/// read the write index from `amd_queue_t.write_dispatch_id` — the write-pointer poll address
/// [`QueueMapping::write_pointer`], which the runtime advances (at reservation) before it
/// rings — rather than from the doorbell, as a CP that polls its write pointer does; the
/// packet headers then say which reserved slots are published. The device must treat every
/// notification as "look again" and consume up to the write index (or the first header still
/// INVALID), since several stores may reach it as one notification. Check what the store
/// writes besides the notification: a bus may split it (QEMU's `ivshmem-doorbell` takes a
/// 64-bit store to BAR0 + 8 as two 32-bit writes, the low half to its read-only `IVPosition`,
/// the high half — 0 while the index is below 2^32 — to its doorbell register, meaning "peer
/// 0, vector 0"; from index 2^32 on the high half names another peer and the notification is
/// lost, a limit of that mapping). `hsa-unikernel` does exactly this
/// (`platform-baremetal/tests/qemu.rs` boots it).
///
/// On a gfx9 GPU whose doorbell layout is known, the granted slots that each 8 KiB doorbell
/// page keeps for SDMA, IH and VCN are never given to a queue, as amdkfd's doorbell bitmap
/// skips them (`crate::doorbell::reserved_non_cp_slots`); a grant of those slots only is
/// refused. A grant outside the MEC's doorbell range (`CP_MEC_DOORBELL_RANGE_LOWER/UPPER`,
/// which the host programmed and reports with [`Host::mec_doorbell_range`]) is refused too.
///
/// Ref: soc15 doorbells are 64-bit, 8 bytes apart (`AMDGPU_DOORBELL64_*`, amdgpu_doorbell.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoorbellAperture {
    /// CPU virtual address of doorbell 0 (the start of the doorbell BAR mapping), uncached.
    pub virt_base: usize,
    /// Size of the mapping, bytes.
    pub size_bytes: usize,
    /// The first doorbell index this runtime may use.
    pub first: DoorbellIndex,
    /// How many consecutive doorbells, from `first`, this runtime may use.
    pub count: u32,
}

/// A 32-bit register: a virtual mapping of the register block and the register's byte offset
/// in it. Written through [`crate::mmio::MmioRegion`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterLocation {
    /// CPU virtual address of the register block's mapping (8-byte aligned).
    pub block_virt_base: usize,
    /// Size of that mapping, bytes.
    pub block_size_bytes: usize,
    /// Byte offset of the register inside the block (a multiple of 4).
    pub offset_bytes: usize,
}

/// The soc15 interrupt-handler (IH) ring the host set up (`IH_RB_BASE`, `IH_RB_CNTL`,
/// `IH_RB_WPTR_ADDR`), and where this runtime reads and writes its pointers.
///
/// Ref: linux `vega10_ih.c` (`vega10_ih_get_wptr`, `vega10_ih_set_rptr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IhRingConfig {
    /// CPU virtual address of the ring (8-byte aligned).
    pub ring_virt_base: usize,
    /// Ring size, bytes: a power of two, at least 32 (one entry).
    pub ring_size_bytes: u32,
    /// CPU virtual address of the 32-bit write-pointer write-back (`IH_RB_WPTR` copy): a byte
    /// offset into the ring, bit 0 = `RB_OVERFLOW`. Must be 8-byte aligned.
    pub wptr_virt: usize,
    /// The read-pointer register (`IH_RB_RPTR`) to write the byte offset back to.
    pub rptr_register: RegisterLocation,
}

/// Everything the host needs to make the GPU serve a compute queue (KIQ `MAP_QUEUES` or direct
/// HQD programming: the host's choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueMapping {
    /// The GPU node.
    pub node: NodeId,
    /// GPU address of the ring of 64-byte AQL packets.
    pub ring: GpuVa,
    /// Ring size, bytes.
    pub ring_size_bytes: u64,
    /// The doorbell the queue listens on.
    pub doorbell: DoorbellIndex,
    /// GPU address where the CP reports the read pointer (`amd_queue_t.read_dispatch_id`).
    pub read_pointer: GpuVa,
    /// GPU address the CP polls for the write pointer (`amd_queue_t.write_dispatch_id`).
    pub write_pointer: GpuVa,
    /// GPU address of the `amd_queue_t`.
    pub amd_queue: GpuVa,
    /// GPU address of the end-of-pipe buffer the runtime allocated.
    pub eop: GpuVa,
    /// EOP buffer size, bytes.
    pub eop_size_bytes: u64,
    /// GPU address of the queue's MQD image (a page the runtime allocated and wrote
    /// [`QueueMapping::mqd`] into, 2048 bytes): a KIQ `MAP_QUEUES`' `mqd_addr`.
    pub mqd_address: GpuVa,
    /// CPU virtual address of the same image (the page stays allocated until
    /// [`Host::unmap_queue`] returned).
    pub mqd_virt: usize,
    /// The gfx9 MQD computed from the above (the image at `mqd_address`).
    pub mqd: ComputeMqd,
}

/// What the bare-metal backend needs from its host.
///
/// # Implementation safety
/// An implementer guarantees, for the whole life of the value: every carve-out in
/// [`carve_outs`](Host::carve_outs) is memory nobody else uses, with `virt_base` (when given)
/// mapped read-write for the CPU and `gpu_va` mapped for the GPU, both over all of
/// `size_bytes`; carve-outs never overlap; the doorbell aperture is mapped uncached for all of
/// `size_bytes`, `(first + count) * 8 <= size_bytes`, and no one else rings those doorbells;
/// the IH ring, its write-pointer write-back and the read-pointer register are mapped and
/// valid, and only this runtime reads the ring; the methods may be called from any thread and
/// from interrupt context where noted.
pub unsafe trait Host: Send + Sync {
    // ---- memory ----

    /// The memory regions this runtime manages. Must return the same slice every call.
    fn carve_outs(&self) -> &[CarveOut];

    /// The CPU virtual address of physical address `phys`, when the host maps it.
    /// The default searches the carve-outs.
    fn phys_to_virt(&self, phys: PhysAddr) -> Option<usize> {
        self.carve_outs().iter().find_map(|c| {
            let off = phys.get().checked_sub(c.phys_base.get())?;
            (off < c.size_bytes).then_some(())?;
            Some(c.virt_base? + usize::try_from(off).ok()?)
        })
    }

    /// The physical address of CPU virtual address `virt`, when it lies in a carve-out.
    /// The default searches the carve-outs.
    fn virt_to_phys(&self, virt: usize) -> Option<PhysAddr> {
        self.carve_outs().iter().find_map(|c| {
            let off = u64::try_from(virt.checked_sub(c.virt_base?)?).ok()?;
            (off < c.size_bytes).then(|| PhysAddr::new(c.phys_base.get() + off))
        })
    }

    /// Makes `[gpu_va, gpu_va + size_bytes)` of a carve-out accessible to the GPUs of `nodes`
    /// (page tables, if the host keeps per-node ones). The default does nothing: carve-outs
    /// are already mapped for every node.
    ///
    /// # Errors
    /// The host's error (`Status::OutOfResources` when page tables are full).
    fn map_memory(&self, gpu_va: GpuVa, size_bytes: u64, nodes: &[NodeId]) -> Result<(), Error> {
        let _ = (gpu_va, size_bytes, nodes);
        Ok(())
    }

    /// Zeroes memory the CPU cannot touch (a [`CarveOutKind::PrivateVram`] range), e.g. with
    /// an SDMA fill. Called before such memory is handed out.
    ///
    /// # Errors
    /// The host's error; the allocation then fails with it.
    fn clear_device_memory(&self, gpu_va: GpuVa, size_bytes: u64) -> Result<(), Error>;

    // ---- doorbells, queues ----

    /// The doorbell aperture and the doorbells this runtime may use.
    fn doorbells(&self) -> DoorbellAperture;

    /// Makes the GPU serve the queue described by `mapping` (map the MQD to an HQD).
    ///
    /// # Safety
    /// The caller guarantees the ring, `amd_queue_t` and EOP buffer stay valid until
    /// [`unmap_queue`](Host::unmap_queue) has returned for this doorbell.
    ///
    /// # Errors
    /// The host's error (`Status::OutOfResources` when no HQD is free).
    unsafe fn map_queue(&self, mapping: &QueueMapping) -> Result<(), Error>;

    /// Stops the queue on `doorbell` (dequeue the HQD); after it returns the GPU no longer
    /// reads its ring. May block.
    ///
    /// # Errors
    /// The host's error (`Status::ResourceFree` when the dequeue timed out).
    fn unmap_queue(&self, mapping: &QueueMapping) -> Result<(), Error>;

    // ---- interrupts, time ----

    /// The IH ring this runtime drains.
    fn ih_ring(&self) -> IhRingConfig;

    /// Called by the interrupt path when the IH write pointer reported an overflow
    /// (`RB_OVERFLOW`); the host clears it: it writes `IH_RB_CNTL` with `WPTR_OVERFLOW_CLEAR`
    /// set and then again with it clear, as amdgpu's `vega10_ih_get_wptr` does (the bit left
    /// set would hide the next overflow). The runtime has already moved its read pointer to
    /// the oldest entry not overwritten. Default: nothing. Called from interrupt context:
    /// must not block.
    fn ih_overflow_clear(&self) {}

    /// Sleeps the calling CPU until an interrupt may have arrived or `deadline_ticks` (in
    /// [`timestamp_ticks`](Host::timestamp_ticks) units) has passed.
    ///
    /// The host must call `still_waiting()` with interrupts masked (or under whatever lock its
    /// wake-up path takes) and sleep only if it returns `true`, unmasking and sleeping
    /// atomically (x86 `sti; hlt`), so that an interrupt arriving after the check wakes it: this
    /// is the "check after arming" that keeps wake-ups from being lost. Spurious returns are
    /// allowed.
    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool);

    /// How long a blocked wait spins before it sleeps in
    /// [`wait_for_interrupt`](Host::wait_for_interrupt), ns: the spin of hsa-core's signal
    /// waits (`Platform::wait_spin_ns`) and then that of `Platform::wait_event`. Default
    /// [`WAIT_EVENT_SPIN_NS`](crate::WAIT_EVENT_SPIN_NS) (20 µs), for a device that does not
    /// use the waiting CPU. A host whose device is emulated on the CPUs its waiters run on (a
    /// virtual machine whose device model is a host thread) returns 0: a spinning vCPU takes
    /// the host CPU the device needs to answer.
    fn wait_spin_ns(&self) -> u64 {
        crate::WAIT_EVENT_SPIN_NS
    }

    /// The VMID the host runs this runtime's queues under (the GPUVM context whose page
    /// tables it set up, e.g. with [`crate::gpuvm::GpuVm`]): written into each queue's MQD
    /// (`cp_hqd_vmid`, `kfd_mqd_manager_v9.c`), so the CP translates the queue's addresses
    /// through that context. Default 0: no context of its own (system memory reached
    /// untranslated, as the in-process simulation does). A VMID past 15 makes queue creation
    /// fail with `Status::InvalidQueueCreation`.
    fn queue_vmid(&self) -> u8 {
        0
    }

    /// The values the host programmed into `CP_MEC_DOORBELL_RANGE_LOWER` and `_UPPER`: byte
    /// offsets into the doorbell aperture of the first and last doorbell dword the MEC takes
    /// (amdgpu's `gfx_v9_0_kiq_init_register` writes `(index * 2) << 2` for the KIQ's and the
    /// last user queue's doorbells). When given,
    /// [`BaremetalPlatform::new`](crate::BaremetalPlatform::new) refuses a doorbell grant that
    /// leaves the range (`Status::InvalidArgument`, both named): those queues would never run.
    /// Default `None`: not checked.
    fn mec_doorbell_range(&self) -> Option<(u32, u32)> {
        None
    }

    /// The `SH_MEM_BASES` value the host programs for [`queue_vmid`](Host::queue_vmid)
    /// (`SHARED_BASE` bits 31:16, `PRIVATE_BASE` bits 15:0: bits 63:48 of the LDS and scratch
    /// apertures' bases). The runtime writes the apertures it names into each queue's
    /// `amd_queue_t` (`group_segment_aperture_base_hi`, `private_segment_aperture_base_hi`),
    /// as ROCR does from what amdkfd reports. Default: amdkfd's gfx9 value 0x0001_0002 (LDS
    /// at `1 << 48`, scratch at `2 << 48`; `kfd_flat_memory.c`), which code built for amdkfd
    /// processes may assume.
    fn sh_mem_bases(&self) -> u32 {
        hsa_core::platform::SegmentApertures::AMDKFD_GFX9.sh_mem_bases()
    }

    /// Which IH entries are this runtime's (`crate::irq::IhFilter`): the VMIDs its queues run
    /// under and its PASID, as amdkfd keeps `first_vmid_kfd..=last_vmid_kfd` on an IH ring it
    /// shares with amdgpu. Default: every entry (an IH ring of this runtime alone).
    fn ih_filter(&self) -> crate::irq::IhFilter {
        crate::irq::IhFilter::ANY
    }

    /// Wakes CPUs sleeping in [`wait_for_interrupt`](Host::wait_for_interrupt) after an event
    /// was signaled by software (an IPI, or nothing on a single core). Must not block.
    fn wake_waiters(&self) {}

    /// A monotonic timestamp, ticks of [`timestamp_frequency_hz`](Host::timestamp_frequency_hz).
    fn timestamp_ticks(&self) -> u64;

    /// Ticks per second of [`timestamp_ticks`](Host::timestamp_ticks); never 0.
    fn timestamp_frequency_hz(&self) -> u64;

    // ---- topology ----

    /// Topology nodes (CPU and GPU agents) the host knows, in node-id order.
    fn nodes(&self) -> &[NodeProperties];

    /// Memory bank `bank` of node `node`, `None` past the last. Default: none.
    fn memory_bank(&self, node: usize, bank: usize) -> Option<MemoryBank> {
        let _ = (node, bank);
        None
    }

    /// Cache `cache` of node `node`, `None` past the last. Default: none.
    fn cache(&self, node: usize, cache: usize) -> Option<Cache> {
        let _ = (node, cache);
        None
    }

    /// IO link `link` of node `node`, `None` past the last. Default: none.
    fn io_link(&self, node: usize, link: usize) -> Option<IoLink> {
        let _ = (node, link);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host that gives only what it must: every optional method is the trait's default.
    struct Bare;

    // SAFETY: it hands out nothing (no carve-out, no doorbell, an empty IH ring description);
    // the tests only call its defaults.
    unsafe impl Host for Bare {
        fn carve_outs(&self) -> &[CarveOut] {
            &[]
        }
        fn clear_device_memory(&self, _: GpuVa, _: u64) -> Result<(), Error> {
            Ok(())
        }
        fn doorbells(&self) -> DoorbellAperture {
            DoorbellAperture {
                virt_base: 0,
                size_bytes: 0,
                first: DoorbellIndex(0),
                count: 0,
            }
        }
        unsafe fn map_queue(&self, _: &QueueMapping) -> Result<(), Error> {
            Ok(())
        }
        fn unmap_queue(&self, _: &QueueMapping) -> Result<(), Error> {
            Ok(())
        }
        fn ih_ring(&self) -> IhRingConfig {
            IhRingConfig {
                ring_virt_base: 0,
                ring_size_bytes: 0,
                wptr_virt: 0,
                rptr_register: RegisterLocation {
                    block_virt_base: 0,
                    block_size_bytes: 0,
                    offset_bytes: 0,
                },
            }
        }
        fn wait_for_interrupt(&self, _: u64, _: &dyn Fn() -> bool) {}
        fn timestamp_ticks(&self) -> u64 {
            0
        }
        fn timestamp_frequency_hz(&self) -> u64 {
            1
        }
        fn nodes(&self) -> &[NodeProperties] {
            &[]
        }
    }

    /// The defaults are what their docs say: queues under VMID 0, amdkfd's gfx9
    /// `SH_MEM_BASES` 0x0001_0002, no MEC doorbell range to check, every IH entry taken, the
    /// 20 µs spin, carve-outs already mapped.
    #[test]
    fn the_defaults_are_the_documented_values() {
        let h = Bare;
        assert_eq!(h.queue_vmid(), 0);
        assert_eq!(h.sh_mem_bases(), 0x0001_0002);
        assert_eq!(h.mec_doorbell_range(), None);
        assert_eq!(h.ih_filter(), crate::irq::IhFilter::ANY);
        assert_eq!(h.wait_spin_ns(), 20_000);
        assert!(h.map_memory(GpuVa(0x1000), 4096, &[NodeId(1)]).is_ok());
        assert_eq!(h.phys_to_virt(PhysAddr(0x1000)), None);
        assert_eq!(h.virt_to_phys(0x1000), None);
    }
}
