//! Fuzz target bodies for the device-side parsers added after the first targets: the
//! emulated command processor's PM4 engine and SDMA engine, the gfx9 MQD builder, the bare-metal
//! IH ring drain, and the emulated render node's DRM ioctls.

use std::sync::{Arc, OnceLock};

use hsa_baremetal::ih::IhRing;
use hsa_baremetal::irq::{EventTable, InterruptHandler};
use hsa_baremetal::mmio::MmioRegion;
use hsa_baremetal::mqd::{
    ComputeMqd, MqdParams, ALL_CUS, AQL_CONTROL_CONTROL0, DOORBELL_EN, NORMAL_PRIORITY,
    PQ_CONTROL_NO_UPDATE_RPTR, RPTR_BLOCK_SIZE,
};
use hsa_core::{DoorbellIndex, GpuVa, Status};
use hsa_emu::device::drm::{
    DrmAmdgpuInfo, DrmClient, DrmVersion, DRM_IOCTL_AMDGPU_INFO, DRM_IOCTL_GET_CLIENT,
    DRM_IOCTL_VERSION,
};
use hsa_emu::device::{builtin_topology, EmulatedKfd, BUILTIN_GPU_ID};
use zerocopy::{FromBytes, IntoBytes};

/// The PM4 engine of the emulated command processor ([`hsa_emu::device::fuzz::pm4`]): the
/// first 16 bytes are an AMD PM4-IB packet's four PM4 dwords, the rest the memory its indirect
/// buffers and writes reach (two adjacent buffer objects mapped to the GPU at
/// [`hsa_emu::device::fuzz::FUZZ_MEMORY_VA`], a third unmapped).
///
/// Property: an error is `InvalidPacketFormat` or `MemoryFault`.
pub fn pm4(data: &[u8]) {
    hsa_emu::device::fuzz::pm4(data);
}

/// The emulated SDMA engine ([`hsa_emu::device::fuzz::sdma`]): byte 0 is the number of ring
/// dwords that follow, the rest the memory its packets reach (as for [`pm4`]); up to 256
/// packets run in order until one fails or waits.
///
/// Property: an error is `InvalidPacketFormat` or `MemoryFault`; each packet that ran is at
/// least one dword and within what was written.
pub fn sdma(data: &[u8]) {
    hsa_emu::device::fuzz::sdma(data);
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = data.get(at..) {
        let n = s.len().min(8);
        b[..n].copy_from_slice(&s[..n]);
    }
    u64::from_le_bytes(b)
}

/// The gfx9 MQD of an AQL queue ([`ComputeMqd::new`]) from the addresses and sizes a host
/// hands in: seven 64-bit fields (ring, ring size, read-pointer report, write-pointer poll,
/// doorbell index (low 32 bits), EOP, EOP size), each optionally rounded to what the builder
/// accepts (byte 56's bits), so that most inputs build an MQD; then, when the input is
/// longer, the MQD's own address (bytes 57..65, rounded to 256 bytes by byte 56's bit 4),
/// the VMID (byte 65) and the priority (byte 66). Shorter inputs (the older corpus) take a
/// page-aligned MQD address, VMID 0 and the normal priority.
///
/// Property: an error is `InvalidQueueCreation`; an MQD read back (`struct v9_mqd`'s
/// fields, decoded here independently) gives the inputs: the ring and EOP bases (>> 8), the
/// queue size (`2^(QUEUE_SIZE+1)` dwords), the pointers, the doorbell's dword offset, the EOP
/// size field (`min(log2(dwords) - 1, 0xA)`), and the constant bits amdkfd programs.
pub fn mqd(data: &[u8]) {
    let f: [u64; 7] = std::array::from_fn(|i| u64_at(data, 8 * i));
    let fix = data.get(56).copied().unwrap_or(0);
    let mut p = MqdParams {
        ring: GpuVa(f[0]),
        ring_size_bytes: f[1],
        rptr_report: GpuVa(f[2]),
        wptr_poll: GpuVa(f[3]),
        doorbell: DoorbellIndex(f[4] as u32),
        eop: GpuVa(f[5]),
        eop_size_bytes: f[6],
        mqd_address: GpuVa(0x1000),
        vmid: 0,
        priority: NORMAL_PRIORITY,
        cu_masks: ALL_CUS,
        xcc: None,
    };
    if data.len() > 57 {
        p.mqd_address = GpuVa(u64_at(data, 57));
        p.vmid = data.get(65).copied().unwrap_or(0).into();
        p.priority = data.get(66).copied().unwrap_or(7).into();
    }
    if fix & 16 != 0 {
        p.mqd_address = GpuVa((p.mqd_address.get() & 0xffff_ffff_ff00).max(0x100));
    }
    if fix & 1 != 0 {
        p.ring = GpuVa((f[0] & 0xffff_ffff_ff00).max(0x100));
        p.eop = GpuVa((f[5] & 0xffff_ffff_ff00).max(0x100));
    }
    if fix & 2 != 0 {
        p.ring_size_bytes = 256 << (f[1] % 27);
        p.eop_size_bytes = 16 << (f[6] % 20);
    }
    if fix & 4 != 0 {
        p.rptr_report = GpuVa((f[2] & !7).max(8));
        p.wptr_poll = GpuVa((f[3] & !7).max(8));
    }
    if fix & 8 != 0 {
        p.doorbell = DoorbellIndex(f[4] as u32 & 0x01ff_ffff);
    }
    let m = match ComputeMqd::new(&p) {
        Ok(m) => m,
        Err(e) => {
            assert_eq!(e.status(), Status::InvalidQueueCreation, "{e}");
            return;
        }
    };
    let join = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
    assert_eq!(
        join(m.cp_hqd_pq_base_lo, m.cp_hqd_pq_base_hi) << 8,
        p.ring.get()
    );
    assert_eq!(
        join(m.cp_hqd_eop_base_addr_lo, m.cp_hqd_eop_base_addr_hi) << 8,
        p.eop.get()
    );
    let queue_size = m.cp_hqd_pq_control & 0x3f;
    assert_eq!(4u64 << (queue_size + 1), p.ring_size_bytes, "{m:?}");
    assert_eq!((m.cp_hqd_pq_control >> 8) & 0x3f, RPTR_BLOCK_SIZE);
    assert_ne!(m.cp_hqd_pq_control & PQ_CONTROL_NO_UPDATE_RPTR, 0);
    // SLOT_BASED_WPTR 2 (bits 25-26), the v9 header, the MQD's own address, VMID, priority.
    assert_eq!((m.cp_hqd_pq_control >> 25) & 3, 2);
    assert_eq!(m.header, 0xC031_0800);
    assert_eq!(
        join(m.cp_mqd_base_addr_lo, m.cp_mqd_base_addr_hi),
        p.mqd_address.get()
    );
    assert_eq!(m.cp_hqd_vmid, p.vmid);
    let pipe = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2][p.priority as usize];
    assert_eq!(m.cp_hqd_pipe_priority, pipe);
    assert_eq!(
        join(
            m.cp_hqd_pq_rptr_report_addr_lo,
            m.cp_hqd_pq_rptr_report_addr_hi
        ),
        p.rptr_report.get()
    );
    assert_eq!(
        join(m.cp_hqd_pq_wptr_poll_addr_lo, m.cp_hqd_pq_wptr_poll_addr_hi),
        p.wptr_poll.get()
    );
    assert_eq!(
        (m.cp_hqd_pq_doorbell_control >> 2) & 0x03ff_ffff,
        p.doorbell.get() * 2
    );
    assert_ne!(m.cp_hqd_pq_doorbell_control & DOORBELL_EN, 0);
    assert_eq!(m.cp_hqd_aql_control, AQL_CONTROL_CONTROL0);
    let eop_dwords_log2 = (p.eop_size_bytes / 4).trailing_zeros();
    assert_eq!(
        m.cp_hqd_eop_control,
        (eop_dwords_log2 - 1).min(hsa_core::wire::mqd::EOP_SIZE_MAX)
    );
}

/// Bytes of the largest IH ring the [`ih_ring`] target builds.
const IH_MAX_RING_BYTES: usize = 4096;

/// The bare-metal interrupt path ([`InterruptHandler::on_interrupt`] over an [`IhRing`]): byte
/// 0 picks the ring size (32 << (b % 8) bytes); then rounds, each a 4-byte write pointer (the
/// IH's write-back: any value, overflow bit and misalignment included) and the entry bytes
/// written into the ring from its start (as much as the ring holds), until the input ends or
/// 64 rounds ran. Events 0..64 are live in the handler's table.
///
/// Property: no panic; each round reads at most one ring's worth of entries; the counters only
/// grow, and signaled, malformed and unknown entries never exceed the entries read.
pub fn ih_ring(data: &[u8]) {
    let Some((&size_sel, mut rest)) = data.split_first() else {
        return;
    };
    let size = 32usize << (size_sel % 8);
    // The ring, the write-back and the read-pointer register: plain memory of this harness,
    // 8-aligned, alive until the handler (which only reads and writes them volatilely through
    // MmioRegions) is dropped at the end.
    let mut ring_mem = vec![0u64; IH_MAX_RING_BYTES / 8];
    let mut wptr_mem = [0u64; 1];
    let mut rptr_mem = [0u64; 1];
    let ring_base = ring_mem.as_mut_ptr() as usize;
    let wptr_base = wptr_mem.as_mut_ptr() as usize;
    let rptr_base = rptr_mem.as_mut_ptr() as usize;
    // SAFETY: each region is this function's own 8-aligned buffer of at least the size given
    // (the ring buffer holds IH_MAX_RING_BYTES >= size), alive until the end of the function,
    // after the handler (declared later, so dropped first); nothing else touches it meanwhile
    // except the writes below, made between the handler's calls on this thread.
    let (ring, wptr, rptr) = unsafe {
        (
            MmioRegion::new(ring_base, size),
            MmioRegion::new(wptr_base, 8),
            MmioRegion::new(rptr_base, 8),
        )
    };
    let (Ok(ring), Ok(wptr), Ok(rptr)) = (ring, wptr, rptr) else {
        panic!("regions over aligned buffers");
    };
    let ring = IhRing::new(ring, wptr, rptr, 0).expect("a power-of-two ring >= 32 bytes");
    let handler = InterruptHandler::new(ring);
    let events: EventTable<1> = EventTable::new();
    for _ in 0..64 {
        if events.allocate().is_none() {
            break;
        }
    }
    let mut before = handler.counters().snapshot();
    for _ in 0..64 {
        if rest.len() < 4 {
            break;
        }
        let w = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        rest = &rest[4..];
        let n = rest.len().min(size);
        {
            let bytes = ring_mem.as_mut_bytes();
            bytes[..n].copy_from_slice(&rest[..n]);
        }
        rest = &rest[n..];
        wptr_mem[0] = u64::from(w);
        handler.on_interrupt(&events, &|_, _| {}, &|| {});
        let after = handler.counters().snapshot();
        let entries = after.entries - before.entries;
        assert!(
            entries <= (size / 32) as u64,
            "{entries} entries from a {size}-byte ring"
        );
        assert!(after.interrupts == before.interrupts + 1);
        assert!(after.signaled - before.signaled <= entries);
        assert!(after.unknown - before.unknown <= entries);
        assert!(
            after.malformed - before.malformed <= entries + 1,
            "{before:?} -> {after:?}"
        );
        before = after;
    }
    // The handler (declared after the buffers) is dropped before them.
}

/// Scratch memory the [`drm_ioctl`] target points DRM argument pointers into: 4 pages,
/// alive for the whole process.
fn drm_scratch() -> (u64, u64) {
    const LEN: usize = 4 * 4096;
    static SCRATCH: OnceLock<usize> = OnceLock::new();
    let base = *SCRATCH.get_or_init(|| Vec::leak(vec![0u8; LEN]).as_mut_ptr() as usize);
    (base as u64, LEN as u64)
}

/// The emulated device of [`drm_ioctl`]: one for the whole process (render-node queries keep
/// no state).
fn drm_device() -> &'static Arc<EmulatedKfd> {
    static DEV: OnceLock<Arc<EmulatedKfd>> = OnceLock::new();
    DEV.get_or_init(|| EmulatedKfd::new(builtin_topology()).expect("the built-in device"))
}

/// The emulated render node's DRM ioctls ([`EmulatedKfd::render_ioctl`], what kfd-emu answers
/// libdrm with) with random argument structs: a sequence of `[selector, pointer mode, n]`
/// then the argument's bytes. The selector picks `DRM_IOCTL_VERSION`, `GET_CLIENT`,
/// `AMDGPU_INFO`, or a raw request number (4 more bytes) with an argument of `n` bytes; the
/// gpu_id is the built-in GPU's unless the mode's bit 7 picks another. Harness rule (the
/// device writes through argument pointers with `/proc/self/mem`): every pointer field is
/// null, an unmapped low address, a kernel address, or inside a scratch area of 4 pages the
/// harness leaks, with its size cut to what is left there.
///
/// Property: a request to another gpu_id, or with the wrong size, is `EINVAL`; one whose type
/// is not DRM's is `ENOTTY`; no panic.
pub fn drm_ioctl(data: &[u8]) {
    let dev = drm_device();
    let (sbase, slen) = drm_scratch();
    let mut rest = data;
    for _ in 0..32 {
        let [sel, mode, n, ..] = *rest else {
            break;
        };
        rest = &rest[3..];
        let take = |rest: &mut &[u8], k: usize| -> Vec<u8> {
            let m = k.min(rest.len());
            let mut v = rest[..m].to_vec();
            v.resize(k, 0);
            *rest = &rest[m..];
            v
        };
        let gpu_id = if mode & 0x80 == 0 {
            BUILTIN_GPU_ID
        } else {
            u32::from(n)
        };
        // A pointer and the bytes the harness lets it cover.
        let ptr = |raw: u64, len: u64| -> (u64, u64) {
            match mode & 3 {
                0 => (0, len),
                1 => (0x10, len),
                2 => (0xffff_8000_0000_1000, len),
                _ => {
                    let off = raw % slen;
                    (sbase + off, len.min(slen - off))
                }
            }
        };
        let (request, mut arg) = match sel % 4 {
            0 => {
                let raw = take(&mut rest, size_of::<DrmVersion>());
                let mut v = DrmVersion::read_from_bytes(&raw).expect("sized");
                (v.name, v.name_len) = ptr(v.name, v.name_len);
                (v.date, v.date_len) = ptr(v.date, v.date_len);
                (v.desc, v.desc_len) = ptr(v.desc, v.desc_len);
                (DRM_IOCTL_VERSION, v.as_bytes().to_vec())
            }
            1 => {
                let raw = take(&mut rest, size_of::<DrmClient>());
                (DRM_IOCTL_GET_CLIENT, raw)
            }
            2 => {
                let raw = take(&mut rest, size_of::<DrmAmdgpuInfo>());
                let mut q = DrmAmdgpuInfo::read_from_bytes(&raw).expect("sized");
                let (p, len) = ptr(q.return_pointer, u64::from(q.return_size));
                q.return_pointer = p;
                q.return_size = len as u32;
                (DRM_IOCTL_AMDGPU_INFO, q.as_bytes().to_vec())
            }
            _ => {
                let r = take(&mut rest, 4);
                let request = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
                // The pointer-carrying requests go through their typed forms above;
                // AMDGPU_GEM_OP (number 0x50, its value a pointer for GET_GEM_CREATE_INFO) is
                // not sent (the harness imports no object it could name).
                if matches!(request, DRM_IOCTL_VERSION | DRM_IOCTL_AMDGPU_INFO)
                    || ((request >> 8) & 0xff == u32::from(b'd') && request & 0xff == 0x50)
                {
                    continue;
                }
                let arg = take(&mut rest, usize::from(n));
                (request, arg)
            }
        };
        let size = ((request >> 16) & 0x3fff) as usize;
        // SAFETY: the harness rule above: every pointer the typed requests carry is null,
        // unmapped, a kernel address, or inside the leaked scratch area with its size cut to
        // fit; raw requests never carry the two pointer-carrying numbers.
        let r = unsafe { dev.render_ioctl(gpu_id, request, &mut arg) };
        if gpu_id != BUILTIN_GPU_ID {
            // No such render node: EINVAL whatever the request.
            assert_eq!(r, Err(rustix::io::Errno::INVAL), "{request:#x}");
        } else if (request >> 8) & 0xff != u32::from(b'd') {
            assert_eq!(r, Err(rustix::io::Errno::NOTTY), "{request:#x}");
        } else if size != arg.len() {
            assert_eq!(r, Err(rustix::io::Errno::INVAL), "{request:#x}");
        }
    }
}
