//! The MEC's queue management, one model for both test devices (the QEMU test's device,
//! `tests/qemu/device.rs`, and the in-process simulation, `tests/sim`): the KIQ ring the
//! firmware set up and its packets, the HQDs they fill, and each VMID's GPUVM context.
//!
//! - **KIQ** ([`Mec::set_kiq`], [`Mec::serve_kiq`]): a PM4 ring whose write pointer (dwords)
//!   the host stores to a poll address before its doorbell. Packets are read as
//!   `hsa_core::wire::kiq` parses them; the first one refused stops the batch (its
//!   `QUERY_STATUS` fence is never written) and the reader moves to the write pointer, as a
//!   MEC that hit a bad packet is reset.
//! - **MAP_QUEUES** takes the queue only from the MQD bytes at `mqd_addr`
//!   (`V9Mqd::load_compute`: header, queue size, `SLOT_BASED_WPTR`, doorbell inside
//!   `CP_MEC_DOORBELL_RANGE`, EOP alignment), and checks what the MEC relies on beyond it: the
//!   packet's doorbell offset and write-pointer address equal to the image's, no second queue
//!   on a doorbell, a ring of 64-byte packets, the read and write pointers one `amd_queue_t`'s,
//!   a VMID the firmware gave page tables, the ring and `amd_queue_t` reachable (through
//!   those tables) and `amd_queue_t`'s aperture fields equal to the VMID's `SH_MEM_BASES`.
//! - **UNMAP_QUEUES** (doorbell offsets), **QUERY_STATUS** (the 64-bit fence), **INVALIDATE_TLBS**
//!   (every VMID of the PASID; an unknown PASID is refused), **SET_RESOURCES** (taken).
//!
//! Addresses: VMID 0 (the KIQ, MQDs, fences, and queues without a VMID) reaches memory through
//! the device's `mem` view; page tables name addresses of its `phys` view (for the QEMU device
//! both are guest RAM; for the simulation the carve-outs by GPU and by physical address).
//!
//! Ref: linux `amdgpu/gfx_v9_0.c` (`gfx_v9_0_kiq_map_queues`, `gfx_v9_0_eop_irq`'s `ring_id`
//! decode), `amdkfd/kfd_mqd_manager_v9.c`, `amdkfd/kfd_pm4_headers_ai.h`.
#![allow(dead_code)] // each device uses a part

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use hsa_core::abi::queue::AmdQueue;
use hsa_core::packet_processor::{PacketProcessor, RingConsumer};
use hsa_core::queue::ring::Ring;
use hsa_core::wire::kiq::{EngineSel, KiqPacket, MapQueues, UnmapQueues};
use hsa_core::wire::mqd::{V9Mqd, V9_MQD_DWORDS};
use hsa_core::wire::pm4::Header;
use hsa_gfx9::aperture::Apertures;

use super::vm::{PhysMemory, VmContext};

/// `sizeof(amd_queue_t)`, bytes.
pub const AMD_QUEUE_BYTES: u64 = 256;
/// `offsetof(amd_queue_t, read_dispatch_id)`.
const READ_DISPATCH_ID_OFFSET: u64 = 128;
/// `offsetof(amd_queue_t, write_dispatch_id)`.
const WRITE_DISPATCH_ID_OFFSET: u64 = 56;
/// Dwords of the longest packet the KIQ reader takes (MAP_PROCESS, 17).
const KIQ_PACKET_MAX_DWORDS: usize = 17;

/// A mapped queue's slot (`MAP_QUEUES`' ME, pipe and queue), VMID (`cp_hqd_vmid`), doorbell,
/// and the GPU addresses of its ring and `amd_queue_t` with the host addresses the packet
/// processor reaches them at.
#[derive(Clone, Copy, Debug)]
pub struct QueueAddresses {
    /// ME (1 or 2: MEC1, MEC2), pipe and queue of the HQD.
    pub me: u8,
    pub pipe: u8,
    pub queue: u8,
    pub vmid: u8,
    pub ring_va: u64,
    pub ring_host: u64,
    /// The ring's size, bytes (64 * a power of two).
    pub ring_bytes: u64,
    pub queue_va: u64,
    pub queue_host: u64,
    /// The doorbell dword offset (`DOORBELL_OFFSET`; the doorbell index is half of it).
    pub doorbell_dword: u32,
}

impl QueueAddresses {
    /// The `ring_id` of the queue's IH entries: queue in bits 6..4, ME in 3..2, pipe in 1..0
    /// (as amdgpu's `gfx_v9_0_eop_irq` takes them apart).
    pub fn ring_id(&self) -> u8 {
        (self.queue & 7) << 4 | (self.me & 3) << 2 | (self.pipe & 3)
    }
}

/// A hardware queue descriptor in use: the queue's packet processor and where it is.
pub struct Hqd {
    pub processor: PacketProcessor,
    /// The last pass stopped at a barrier whose dependencies were not met.
    pub blocked: bool,
    pub at: QueueAddresses,
}

/// What a served KIQ packet did (the devices count them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// MAP_QUEUES: a queue took an HQD.
    Mapped,
    /// UNMAP_QUEUES: this many queues left their HQDs.
    Unmapped(usize),
    /// QUERY_STATUS: the fence was written.
    Fenced,
    /// INVALIDATE_TLBS: this many VMIDs' translations were dropped.
    Invalidated(usize),
    /// SET_RESOURCES.
    Resources,
}

/// The KIQ's ring, as the firmware set it up, and the MEC's read pointer.
#[derive(Debug)]
struct KiqReader {
    ring: u64,
    dwords: u32,
    wptr_addr: u64,
    /// Dwords consumed since setup.
    rptr: u64,
}

/// The MEC: its KIQ, its HQDs and the GPUVM contexts of the VMIDs the firmware set up.
pub struct Mec {
    kiq: Option<KiqReader>,
    /// The GPUVM context of each VMID (index 0 unused).
    pub vms: [Option<VmContext>; 16],
    /// The queues mapped, in mapping order.
    pub hqds: Vec<Hqd>,
    /// `CP_MEC_DOORBELL_RANGE`, as doorbell dword offsets.
    doorbells: Range<u32>,
}

/// 4-byte word `i` at `addr` of `mem`, little-endian; `None` outside it.
fn dword(mem: &dyn PhysMemory, addr: u64) -> Option<u32> {
    let p = mem.at(addr, 4).filter(|p| *p as usize % 4 == 0)?;
    // SAFETY: 4 bytes of the device's memory (checked), 4-aligned; the device reads memory
    // the host shares with it atomically.
    Some(u32::from_le(
        unsafe { &*(p as *const AtomicU32) }.load(Ordering::Acquire),
    ))
}

impl Mec {
    /// A MEC with no KIQ, no queue and no VMID set up, serving doorbell dwords `doorbells`.
    pub const fn new(doorbells: Range<u32>) -> Mec {
        Mec {
            kiq: None,
            vms: [const { None }; 16],
            hqds: Vec::new(),
            doorbells,
        }
    }

    /// The PASID of `vmid`'s context (0 for VMID 0 or one the firmware did not set up).
    pub fn pasid(&self, vmid: u8) -> u16 {
        self.vms
            .get(usize::from(vmid))
            .and_then(Option::as_ref)
            .map_or(0, |v| v.pasid)
    }

    /// The firmware's KIQ setup: a ring of `dwords` dwords at `ring` and the write pointer's
    /// poll address `wptr`, both in `mem`. The read pointer starts at 0.
    ///
    /// # Errors
    /// A size that is not a power of two in 64..=2^20, or a ring or poll word outside `mem`.
    pub fn set_kiq(
        &mut self,
        mem: &dyn PhysMemory,
        ring: u64,
        dwords: u64,
        wptr: u64,
    ) -> Result<(), String> {
        if !dwords.is_power_of_two() || !(64..=1 << 20).contains(&dwords) {
            return Err(format!(
                "KIQ ring of {dwords} dwords is not a power of two in 64..=2^20"
            ));
        }
        if ring % 4 != 0 || mem.at(ring, 4 * dwords).is_none() || mem.u64(wptr).is_none() {
            return Err(format!(
                "KIQ ring {ring:#x} ({dwords} dwords) or write-pointer poll address {wptr:#x} \
                 is not in the device's memory"
            ));
        }
        self.kiq = Some(KiqReader {
            ring,
            dwords: dwords as u32,
            wptr_addr: wptr,
            rptr: 0,
        });
        Ok(())
    }

    /// The firmware's GPUVM setup of `vmid` (1..=15): the page-table base
    /// (`VM_CONTEXT<n>_PAGE_TABLE_BASE_ADDR`, naming `phys`), the PASID (`IH_VMID_<n>_LUT`)
    /// and `SH_MEM_BASES`.
    ///
    /// # Errors
    /// A VMID or PASID out of range, or a base that is not a valid PDE of `phys`.
    pub fn set_vm(
        &mut self,
        phys: &dyn PhysMemory,
        vmid: u64,
        base: u64,
        pasid: u64,
        sh_mem_bases: u32,
    ) -> Result<(), String> {
        if !(1..16).contains(&vmid) || pasid == 0 || pasid > u64::from(u16::MAX) {
            return Err(format!(
                "VMID {vmid} is not 1..=15 or PASID {pasid:#x} is not 1..=0xffff"
            ));
        }
        self.vms[vmid as usize] = Some(VmContext::new(phys, base, pasid as u16, sh_mem_bases)?);
        Ok(())
    }

    /// Runs the KIQ's packets up to the write pointer the host published, calling `served`
    /// for each one done.
    ///
    /// # Errors
    /// The first packet refused, by name; the reader has moved to the write pointer.
    pub fn serve_kiq(
        &mut self,
        mem: &dyn PhysMemory,
        phys: &dyn PhysMemory,
        served: &mut dyn FnMut(Served),
    ) -> Result<(), String> {
        let Some(k) = self.kiq.as_ref() else {
            return Ok(());
        };
        let (ring, mask, rptr0) = (k.ring, u64::from(k.dwords) - 1, k.rptr);
        // Acquire pairs with the host's Release store after it wrote the packets.
        let wptr = mem
            .u64(k.wptr_addr)
            .map_or(0, |w| w.load(Ordering::Acquire));
        let mut rptr = rptr0;
        let mut result = Ok(());
        while rptr < wptr {
            let at = |i: u64| dword(mem, ring + 4 * (i & mask)).unwrap_or(0);
            let header = at(rptr);
            let len = Header::parse(header)
                .packet_dwords()
                .filter(|&n| n <= KIQ_PACKET_MAX_DWORDS);
            let r = match len {
                None => Err(format!(
                    "KIQ header {header:#010x} at dword {rptr} is not a queue-management packet"
                )),
                Some(n) if rptr + n as u64 > wptr => Err(format!(
                    "KIQ packet {header:#010x} at dword {rptr} runs past the write pointer {wptr}"
                )),
                Some(n) => {
                    let words: Vec<u32> = (0..n as u64).map(|i| at(rptr + i)).collect();
                    let start = rptr;
                    rptr += n as u64;
                    KiqPacket::parse(&words)
                        .map_err(|e| format!("KIQ packet at dword {start}: {e}"))
                        .and_then(|p| self.packet(mem, phys, &p))
                        .map(&mut *served)
                }
            };
            if let Err(m) = r {
                // A MEC stops at a packet it refuses; the batch's fence is never written.
                result = Err(m);
                rptr = wptr;
            }
        }
        if let Some(k) = self.kiq.as_mut() {
            k.rptr = rptr;
        }
        result
    }

    fn packet(
        &mut self,
        mem: &dyn PhysMemory,
        phys: &dyn PhysMemory,
        p: &KiqPacket,
    ) -> Result<Served, String> {
        match *p {
            KiqPacket::MapQueues(m) => {
                let at = self.admit(mem, phys, &m)?;
                // SAFETY: `admit` checked both ranges lie in the device's memory, which
                // stays mapped as long as the device, 64-aligned, the size a power of two;
                // the host keeps them valid until its UNMAP_QUEUES, which drops this
                // processor first.
                let ring = unsafe {
                    Ring::new(
                        NonNull::new(at.ring_host as *mut u8).ok_or("null ring")?,
                        (at.ring_bytes / 64) as u32,
                        NonNull::new(at.queue_host as *mut AmdQueue).ok_or("null amd_queue_t")?,
                    )
                };
                // SAFETY: one HQD per doorbell (checked by `admit`): this processor is the
                // ring's only consumer.
                let consumer = unsafe { RingConsumer::new(ring) };
                self.hqds.push(Hqd {
                    processor: PacketProcessor::new(consumer),
                    blocked: false,
                    at,
                });
                Ok(Served::Mapped)
            }
            KiqPacket::UnmapQueues(UnmapQueues::Doorbells {
                engine_sel: EngineSel::Compute,
                doorbell_offsets,
                count,
                ..
            }) => {
                for &db in &doorbell_offsets[..usize::from(count)] {
                    let Some(i) = self.hqds.iter().position(|h| h.at.doorbell_dword == db) else {
                        return Err(format!(
                            "UNMAP_QUEUES doorbell_offset {db:#x}: no queue is mapped there"
                        ));
                    };
                    self.hqds.remove(i);
                }
                Ok(Served::Unmapped(usize::from(count)))
            }
            KiqPacket::QueryStatus(q) => {
                let Some(w) = mem.u64(q.addr) else {
                    return Err(format!(
                        "QUERY_STATUS addr {:#x} is not an 8-aligned word of the device's \
                         memory",
                        q.addr
                    ));
                };
                w.store(q.data.to_le(), Ordering::Release);
                Ok(Served::Fenced)
            }
            KiqPacket::SetResources(_) => Ok(Served::Resources),
            KiqPacket::InvalidateTlbs(t) => {
                let mut flushed = 0;
                for vm in self.vms.iter().flatten().filter(|v| v.pasid == t.pasid) {
                    vm.invalidate();
                    flushed += 1;
                }
                if flushed == 0 {
                    return Err(format!(
                        "INVALIDATE_TLBS pasid {:#x}: no VMID of this device has that PASID",
                        t.pasid
                    ));
                }
                Ok(Served::Invalidated(flushed))
            }
            other => Err(format!("KIQ packet {other:?} is not served by this device")),
        }
    }

    /// `MAP_QUEUES`: the queue is what the MQD at `mqd_addr` says.
    fn admit(
        &self,
        mem: &dyn PhysMemory,
        phys: &dyn PhysMemory,
        m: &MapQueues,
    ) -> Result<QueueAddresses, String> {
        if m.engine_sel != EngineSel::Compute as u8 || m.extended_engine_sel != 0 {
            return Err(format!(
                "MAP_QUEUES engine_sel {} (extended {}): this device has compute queues only",
                m.engine_sel, m.extended_engine_sel
            ));
        }
        if m.num_queues != 1 {
            return Err(format!(
                "MAP_QUEUES num_queues {}: the packet carries one MQD",
                m.num_queues
            ));
        }
        if mem.at(m.mqd_addr, 4 * V9_MQD_DWORDS as u64).is_none() || m.mqd_addr % 4 != 0 {
            return Err(format!(
                "MAP_QUEUES mqd_addr {:#x}: the {}-byte MQD is not in the device's memory",
                m.mqd_addr,
                4 * V9_MQD_DWORDS
            ));
        }
        let mqd = V9Mqd::from_dwords(std::array::from_fn(|i| {
            dword(mem, m.mqd_addr + 4 * i as u64).unwrap_or(0)
        }));
        let hqd = mqd
            .load_compute(self.doorbells.clone(), true)
            .map_err(|e| format!("MAP_QUEUES mqd_addr {:#x}: {e}", m.mqd_addr))?;
        if m.doorbell_offset != hqd.doorbell_dword {
            return Err(format!(
                "MAP_QUEUES doorbell_offset {:#x} differs from the MQD's DOORBELL_OFFSET {:#x}",
                m.doorbell_offset, hqd.doorbell_dword
            ));
        }
        if m.wptr_addr != hqd.write_ptr {
            return Err(format!(
                "MAP_QUEUES wptr_addr {:#x} differs from the MQD's cp_hqd_pq_wptr_poll_addr {:#x}",
                m.wptr_addr, hqd.write_ptr
            ));
        }
        if let Some(h) = self
            .hqds
            .iter()
            .find(|h| h.at.doorbell_dword == hqd.doorbell_dword || h.at.ring_va == hqd.ring)
        {
            return Err(format!(
                "MAP_QUEUES doorbell_offset {:#x} (ring {:#x}): the queue of doorbell_offset \
                 {:#x} (ring {:#x}) is mapped there",
                hqd.doorbell_dword, hqd.ring, h.at.doorbell_dword, h.at.ring_va
            ));
        }
        let amd_queue = hqd.read_ptr.wrapping_sub(READ_DISPATCH_ID_OFFSET);
        if hqd.write_ptr != amd_queue.wrapping_add(WRITE_DISPATCH_ID_OFFSET) {
            return Err(format!(
                "MQD read pointer {:#x} and write pointer {:#x} are not one amd_queue_t's \
                 read_dispatch_id and write_dispatch_id",
                hqd.read_ptr, hqd.write_ptr
            ));
        }
        let (ring, ring_bytes) = (hqd.ring, hqd.ring_size_bytes);
        let packets = ring_bytes / 64;
        if ring_bytes % 64 != 0 || !packets.is_power_of_two() || packets > u64::from(u32::MAX) {
            return Err(format!(
                "ring of {ring_bytes} bytes is not 64 * a power of two"
            ));
        }
        let vmid = mqd.cp_hqd_vmid;
        let vm = match vmid {
            0 => None,
            1..=15 => Some(self.vms[vmid as usize].as_ref().ok_or_else(|| {
                format!(
                    "MQD cp_hqd_vmid {vmid}: the firmware gave that VMID no page tables \
                     (VM_CONTEXT{vmid}_PAGE_TABLE_BASE_ADDR is 0)"
                )
            })?),
            _ => return Err(format!("MQD cp_hqd_vmid {vmid} is past 15")),
        };
        // The CP reaches the ring and amd_queue_t through the queue's VMID.
        let host = |va: u64, len: u64| match vm {
            Some(vm) => vm
                .host_range(phys, va, len, true)
                .map_err(|f| format!("VMID {vmid}: {}", f.why)),
            None => mem
                .at(va, len)
                .ok_or_else(|| format!("{va:#x} (+{len}) is not in the device's memory")),
        };
        let ring_p = host(ring, ring_bytes).map_err(|e| format!("ring {ring:#x}: {e}"))?;
        let queue_p = host(amd_queue, AMD_QUEUE_BYTES)
            .map_err(|e| format!("amd_queue_t {amd_queue:#x}: {e}"))?;
        if ring_p as usize % 64 != 0 || queue_p as usize % 64 != 0 {
            return Err(format!(
                "ring {ring:#x} or amd_queue_t {amd_queue:#x} is not 64-byte aligned"
            ));
        }
        if let Some(vm) = vm {
            // The apertures the queue's code is told (ROCR's amd_queue_t fields) must be the
            // ones SH_MEM_BASES gives its waves.
            let a = Apertures::from_sh_mem_bases(vm.sh_mem_bases);
            let word = |off: usize| {
                // SAFETY: inside the 256 bytes of amd_queue_t reached above, 4-aligned.
                unsafe { (queue_p.add(off) as *const AtomicU32).as_ref() }
                    .map_or(0, |w| u32::from_le(w.load(Ordering::Acquire)))
            };
            for (field, off, base) in [
                (
                    "group_segment_aperture_base_hi",
                    std::mem::offset_of!(AmdQueue, group_segment_aperture_base_hi),
                    a.shared_base(),
                ),
                (
                    "private_segment_aperture_base_hi",
                    std::mem::offset_of!(AmdQueue, private_segment_aperture_base_hi),
                    a.private_base(),
                ),
            ] {
                let (got, want) = (word(off), (base >> 32) as u32);
                if got != want {
                    return Err(format!(
                        "amd_queue_t {amd_queue:#x}: {field} {got:#x} is not SH_MEM_BASES \
                         {:#x}'s {want:#x}",
                        vm.sh_mem_bases
                    ));
                }
            }
        }
        Ok(QueueAddresses {
            me: m.me,
            pipe: m.pipe,
            queue: m.queue,
            vmid: vmid as u8,
            ring_va: ring,
            ring_host: ring_p as u64,
            ring_bytes,
            queue_va: amd_queue,
            queue_host: queue_p as u64,
            doorbell_dword: hqd.doorbell_dword,
        })
    }
}
