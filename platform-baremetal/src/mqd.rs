//! The gfx9 memory queue descriptor (MQD) of an AQL compute queue, computed from the queue's
//! addresses and sizes: a [`V9Mqd`] (`struct v9_mqd` in full, from [`hsa_core::wire::mqd`])
//! filled as amdkfd fills a user AQL queue's ([`V9Mqd::amdkfd_compute`]: `init_mqd` then
//! `update_mqd`), with the doorbell enabled as amdgpu's `gfx_v9_0_mqd_init` enables it for a
//! ring mapped through the KIQ.
//!
//! Ref: linux `drivers/gpu/drm/amd/include/v9_structs.h` (`struct v9_mqd`, field names kept),
//! `amdkfd/kfd_mqd_manager_v9.c` (`init_mqd`, `update_mqd`), `amdgpu/gfx_v9_0.c`
//! (`gfx_v9_0_mqd_init`); bit positions from `gc_9_0_sh_mask.h` ([`cp_hqd`]).
//!
//! The whole 2048-byte image is the MQD: the platform writes it into CPU-visible memory at
//! [`MqdParams::mqd_address`], where a KIQ `MAP_QUEUES` points the command processor
//! ([`hsa_core::wire::kiq::MapQueues::amdgpu_kiq`]). No context save area (CWSR) is set up:
//! the queue cannot be preempted mid-dispatch, as amdkfd's queues without one.

use core::ops::Deref;

pub use hsa_core::wire::mqd::V9Mqd;
use hsa_core::wire::mqd::{cp_hqd, ComputeQueueProperties};
use hsa_core::{DoorbellIndex, Error, GpuVa, Status};

/// `CP_HQD_PQ_CONTROL.QUEUE_SIZE`, bits \[5:0\]: log2(ring size in dwords) - 1.
pub const PQ_CONTROL_QUEUE_SIZE_MASK: u32 = cp_hqd::PQ_CONTROL_QUEUE_SIZE.mask();
/// `CP_HQD_PQ_CONTROL.RPTR_BLOCK_SIZE` shift (bits \[13:8\]).
pub const PQ_CONTROL_RPTR_BLOCK_SIZE_SHIFT: u32 = cp_hqd::PQ_CONTROL_RPTR_BLOCK_SIZE.shift;
/// The RPTR_BLOCK_SIZE value amdkfd programs: 5 (`DEFAULT_RPTR_BLOCK_SIZE` in cik_regs.h,
/// `5 << CP_HQD_PQ_CONTROL__RPTR_BLOCK_SIZE__SHIFT` in kfd_mqd_manager_v9.c).
pub const RPTR_BLOCK_SIZE: u32 = 5;
/// `CP_HQD_PQ_CONTROL.NO_UPDATE_RPTR` (bit 27): set for AQL queues, whose read index the CP
/// maintains in `amd_queue_t`.
pub const PQ_CONTROL_NO_UPDATE_RPTR: u32 = 1 << cp_hqd::PQ_CONTROL_NO_UPDATE_RPTR.shift;
/// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET` shift (bits \[27:2\], unit: dwords).
pub const DOORBELL_OFFSET_SHIFT: u32 = cp_hqd::DOORBELL_OFFSET.shift;
/// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET` largest value (26 bits).
pub const DOORBELL_OFFSET_MAX: u32 = cp_hqd::DOORBELL_OFFSET.mask();
/// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_EN` (bit 30).
pub const DOORBELL_EN: u32 = 1 << cp_hqd::DOORBELL_EN.shift;
/// `CP_HQD_AQL_CONTROL.CONTROL0 = 1`: the queue holds AQL packets.
pub const AQL_CONTROL_CONTROL0: u32 = 1 << cp_hqd::AQL_CONTROL0.shift;

/// Inputs of [`ComputeMqd::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MqdParams {
    /// GPU address of the ring: 256-byte aligned.
    pub ring: GpuVa,
    /// Ring size, bytes: a power of two from 256 to 2^34 (`QUEUE_SIZE` holds log2(dwords)-1).
    pub ring_size_bytes: u64,
    /// Where the CP reports the read pointer: 8-byte aligned.
    pub rptr_report: GpuVa,
    /// Where the CP polls the write pointer: 8-byte aligned.
    pub wptr_poll: GpuVa,
    /// The queue's 64-bit doorbell (slot `i` is dword offset `2 * i`).
    pub doorbell: DoorbellIndex,
    /// GPU address of the EOP buffer: 256-byte aligned.
    pub eop: GpuVa,
    /// EOP buffer size, bytes: a power of two from 16 to 2^31 (amdkfd keeps it in a `u32`).
    pub eop_size_bytes: u64,
    /// GPU address of the MQD itself (`cp_mqd_base_addr_lo`/`_hi`): 256-byte aligned, not null.
    pub mqd_address: GpuVa,
    /// The queue's VMID (`cp_hqd_vmid`, 0..=15): 0 when the firmware's scheduler or the
    /// host's `MAP_QUEUES` decides it, as amdkfd leaves it under the hardware scheduler.
    pub vmid: u32,
    /// Queue priority, 0..=15 (amdkfd's `priority`, mapped to `cp_hqd_pipe_priority` by
    /// [`hsa_core::wire::mqd::PIPE_PRIORITY_MAP`]): [`NORMAL_PRIORITY`] for ROCR's
    /// `HSA_QUEUE_PRIORITY_NORMAL`.
    pub priority: u32,
    /// The per-engine CU enable masks `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` (bit
    /// `cu + 16 * sh` of engine `se`'s word; `hsa_core::wire::cu_mask::ShaderLayout::map_cu_mask`
    /// maps a user's CU mask to them, as amdkfd's `SET_CU_MASK` does): [`ALL_CUS`] for a queue
    /// without a CU mask, as `CREATE_QUEUE` leaves it. With [`MqdParams::xcc`] only SE0..SE3
    /// are masks (the MQD's dwords 39-42 hold other fields there), and SE4..SE7 must be
    /// [`ALL_CUS`]'s.
    pub cu_masks: [u32; 8],
    /// `Some` for a GPU whose queues have one MQD per XCC of their partition (GC 9.4.3, 9.4.4
    /// and 9.5.0: gfx940-gfx942, gfx950): which XCC's MQD this is. `None` for one MQD (GC 9.0
    /// to 9.4.2: gfx900-gfx90a).
    pub xcc: Option<XccMqd>,
}

/// `sizeof(struct v9_mqd)`, bytes: the stride of a queue's per-XCC MQDs without a context
/// save area.
pub const MQD_BYTES: u32 = hsa_core::wire::mqd::V9_MQD_BYTES;

pub use hsa_core::wire::mqd::{has_xcc_mqds, XccMqd};

/// The per-engine masks of a queue with every CU enabled: amdkfd's `init_mqd` value.
pub const ALL_CUS: [u32; 8] = [u32::MAX; 8];

/// The amdkfd queue priority of a normal-priority HSA queue: ROCR's
/// `HSA_QUEUE_PRIORITY_NORMAL` is libhsakmt's priority 0, which it maps to amdkfd's 7
/// (`CP_HQD_PIPE_PRIORITY` medium).
pub const NORMAL_PRIORITY: u32 = 7;

/// The gfx9 MQD of an AQL compute queue: a [`V9Mqd`] (dereference it to read the register
/// images) as [`V9Mqd::amdkfd_compute`] fills it for an AQL queue without a trap handler or
/// context save area, plus `DOORBELL_EN`. Among its fields:
/// - `header` 0xC0310800, `cp_mqd_base_addr_lo`/`_hi` = [`MqdParams::mqd_address`],
///   `cp_mqd_control` `PRIV_STATE`, every CU enabled, `cp_hqd_vmid`, `cp_hqd_pipe_priority`;
/// - `cp_hqd_pq_base_lo`/`_hi`: ring address >> 8;
/// - `cp_hqd_pq_control`: QUEUE_SIZE | RPTR_BLOCK_SIZE 5 | QUEUE_FULL_EN | WPP_CLAMP_EN |
///   SLOT_BASED_WPTR 2 | NO_UPDATE_RPTR | UNORD_DISPATCH;
/// - `cp_hqd_pq_rptr_report_addr_lo`/`_hi`, `cp_hqd_pq_wptr_poll_addr_lo`/`_hi`;
/// - `cp_hqd_pq_doorbell_control`: dword offset << 2 | DOORBELL_BIF_DROP | DOORBELL_EN;
/// - `cp_hqd_aql_control`: CONTROL0 = 1;
/// - `cp_hqd_eop_base_addr_lo`/`_hi`: EOP address >> 8;
/// - `cp_hqd_eop_control`: EOP_SIZE = min(0xA, log2(size in dwords) - 1)
///   ([`hsa_core::wire::mqd::eop_control`], at most [`hsa_core::wire::mqd::EOP_SIZE_MAX`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComputeMqd(V9Mqd);

impl Deref for ComputeMqd {
    type Target = V9Mqd;

    fn deref(&self) -> &V9Mqd {
        &self.0
    }
}

impl ComputeMqd {
    /// The whole MQD, as the CP loads it.
    pub fn v9_mqd(&self) -> &V9Mqd {
        &self.0
    }
}

impl ComputeMqd {
    /// Computes the MQD for `p`. With [`MqdParams::xcc`], the image of that XCC as amdkfd's
    /// `init_mqd_v9_4_3` and `update_mqd_v9_4_3` fill it for an AQL queue:
    /// `compute_current_logic_xcc_id` (dword 39) = `(logical_start + index) % count`,
    /// `compute_tg_chunk_size` (dword 41) = 1, `cp_mqd_stride_size` (dword 226) =
    /// `stride_bytes`, SE0..SE3's masks from `cu_masks`, dwords 40 and 42 `init_mqd`'s all-ones,
    /// and for the master XCC (index 0) `NO_UPDATE_RPTR` cleared from `cp_hqd_pq_control`.
    ///
    /// # Errors
    /// `Status::InvalidQueueCreation` naming the field and value for: a ring or EOP address
    /// not 256-byte aligned, a ring size that is not a power of two in 256..=2^34 bytes, an
    /// EOP size that is not a power of two in 16..=2^31 bytes, a read/write pointer address not
    /// 8-byte aligned, a doorbell whose dword offset does not fit 26 bits, an XCC count
    /// outside 1..=8 or an index not below it, a stride under 2048 or not a multiple of 256,
    /// SE4..SE7 masks other than all-ones on a multi-XCC GPU.
    pub fn new(p: &MqdParams) -> Result<ComputeMqd, Error> {
        let bad = Status::InvalidQueueCreation;
        if !p.ring.is_aligned(256) || p.ring.is_null() {
            return Err(Error::lazy(bad, [p.ring.get()], |&[a, ..], f| {
                write!(f, "ring address {a:#x} is null or not 256-byte aligned")
            }));
        }
        let s = p.ring_size_bytes;
        if !s.is_power_of_two() || !(256..=1 << 34).contains(&s) {
            return Err(Error::lazy(bad, [s], |&[s, ..], f| {
                write!(
                    f,
                    "ring_size_bytes {s:#x} is not a power of two in 256..=2^34"
                )
            }));
        }
        if !p.eop.is_aligned(256) || p.eop.is_null() {
            return Err(Error::lazy(bad, [p.eop.get()], |&[a, ..], f| {
                write!(f, "EOP address {a:#x} is null or not 256-byte aligned")
            }));
        }
        let e = p.eop_size_bytes;
        let Some(eop_size) = u32::try_from(e)
            .ok()
            .filter(|e| e.is_power_of_two() && *e >= 16)
        else {
            return Err(Error::lazy(bad, [e], |&[e, ..], f| {
                write!(
                    f,
                    "eop_size_bytes {e:#x} is not a power of two in 16..=2^31"
                )
            }));
        };
        if !p.rptr_report.is_aligned(8) || p.rptr_report.is_null() {
            return Err(Error::lazy(bad, [p.rptr_report.get()], |&[a, ..], f| {
                write!(
                    f,
                    "read pointer address {a:#x} is null or not 8-byte aligned"
                )
            }));
        }
        if !p.wptr_poll.is_aligned(8) || p.wptr_poll.is_null() {
            return Err(Error::lazy(bad, [p.wptr_poll.get()], |&[a, ..], f| {
                write!(
                    f,
                    "write pointer address {a:#x} is null or not 8-byte aligned"
                )
            }));
        }
        let dw_offset = p
            .doorbell
            .get()
            .checked_mul(2)
            .filter(|&o| o <= DOORBELL_OFFSET_MAX);
        let Some(dw_offset) = dw_offset else {
            return Err(Error::lazy(
                bad,
                [p.doorbell.get().into()],
                |&[i, ..], f| write!(f, "doorbell index {i} does not fit DOORBELL_OFFSET"),
            ));
        };
        if !p.mqd_address.is_aligned(256) || p.mqd_address.is_null() {
            return Err(Error::lazy(bad, [p.mqd_address.get()], |&[a, ..], f| {
                write!(f, "MQD address {a:#x} is null or not 256-byte aligned")
            }));
        }
        if p.vmid > 15 {
            return Err(Error::lazy(bad, [p.vmid.into()], |&[v, ..], f| {
                write!(f, "VMID {v} is past 15")
            }));
        }
        if p.priority > 15 {
            return Err(Error::lazy(bad, [p.priority.into()], |&[v, ..], f| {
                write!(f, "queue priority {v} is past 15")
            }));
        }
        // amdkfd's init_mqd + update_mqd of an AQL user queue, then the doorbell enabled as
        // amdgpu's gfx_v9_0_mqd_init does for a ring the KIQ maps (amdkfd enables it when it
        // loads the HQD instead).
        let mut m = V9Mqd::amdkfd_compute(&ComputeQueueProperties {
            aql: true,
            queue_address: p.ring.get(),
            queue_size_bytes: s,
            read_ptr: p.rptr_report.get(),
            write_ptr: p.wptr_poll.get(),
            doorbell_off: dw_offset,
            eop_address: p.eop.get(),
            eop_size_bytes: eop_size,
            priority: p.priority,
            vmid: p.vmid,
            trap_handler: false,
            ctx_save: None,
            mqd_address: p.mqd_address.get(),
        });
        m.cp_hqd_pq_doorbell_control |= DOORBELL_EN;
        match p.xcc {
            None => m.set_cu_masks(p.cu_masks),
            Some(x) => {
                if p.cu_masks[4..] != ALL_CUS[4..] {
                    return Err(Error::lazy(
                        bad,
                        [p.cu_masks[4].into(), p.cu_masks[7].into()],
                        |&[a, b, ..], f| {
                            write!(
                                f,
                                "CU masks of SE4..SE7 ({a:#x} .. {b:#x}) given on a multi-XCC \
                                 GPU, whose MQD has none"
                            )
                        },
                    ));
                }
                m.set_xcc_cu_masks([p.cu_masks[0], p.cu_masks[1], p.cu_masks[2], p.cu_masks[3]]);
                m.amdkfd_xcc(&x, true, 0)?;
            }
        }
        Ok(ComputeMqd(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn params() -> MqdParams {
        MqdParams {
            ring: GpuVa(0x1_2345_6700),
            ring_size_bytes: 4096, // 64 packets, 1024 dwords
            rptr_report: GpuVa(0x7_0000_0080),
            wptr_poll: GpuVa(0x7_0000_0038),
            doorbell: DoorbellIndex(3),
            eop: GpuVa(0x7_8000_0000),
            eop_size_bytes: 4096,
            mqd_address: GpuVa(0x7_9000_0100),
            vmid: 3,
            priority: NORMAL_PRIORITY,
            cu_masks: ALL_CUS,
            xcc: None,
        }
    }

    /// The exported register bits are the headers' (`cik_regs.h`, `gc_9_0_sh_mask.h`).
    #[test]
    fn register_bits_are_the_headers() {
        assert_eq!(PQ_CONTROL_NO_UPDATE_RPTR, 1 << 27);
        assert_eq!(DOORBELL_EN, 1 << 30);
        assert_eq!(AQL_CONTROL_CONTROL0, 1);
        assert_eq!(PQ_CONTROL_QUEUE_SIZE_MASK, 0x3f);
        assert_eq!(PQ_CONTROL_RPTR_BLOCK_SIZE_SHIFT, 8);
        assert_eq!(DOORBELL_OFFSET_SHIFT, 2);
        assert_eq!(DOORBELL_OFFSET_MAX, (1 << 26) - 1);
    }

    #[test]
    fn fields_match_hand_computed_values() {
        let m = ComputeMqd::new(&params()).unwrap();
        // 0x1_2345_6700 >> 8 = 0x0123_4567
        assert_eq!(m.cp_hqd_pq_base_lo, 0x0123_4567);
        assert_eq!(m.cp_hqd_pq_base_hi, 0);
        // log2(1024) - 1 = 9; | 5 << 8 | QUEUE_FULL_EN 1 << 14 | WPP_CLAMP_EN 1 << 16 |
        // SLOT_BASED_WPTR 2 << 25 | NO_UPDATE_RPTR 1 << 27 | UNORD_DISPATCH 1 << 28
        assert_eq!(m.cp_hqd_pq_control, 0x1C01_4509);
        assert_eq!(m.cp_hqd_pq_rptr_report_addr_lo, 0x0000_0080);
        assert_eq!(m.cp_hqd_pq_rptr_report_addr_hi, 0x7);
        assert_eq!(m.cp_hqd_pq_wptr_poll_addr_lo, 0x0000_0038);
        assert_eq!(m.cp_hqd_pq_wptr_poll_addr_hi, 0x7);
        // doorbell 3 -> dword offset 6 -> 6 << 2 = 0x18; | DOORBELL_BIF_DROP 1 << 1 |
        // DOORBELL_EN 1 << 30
        assert_eq!(m.cp_hqd_pq_doorbell_control, 0x4000_001A);
        assert_eq!(m.cp_hqd_aql_control, 1);
        // 0x7_8000_0000 >> 8 = 0x0780_0000
        assert_eq!(m.cp_hqd_eop_base_addr_lo, 0x0780_0000);
        assert_eq!(m.cp_hqd_eop_base_addr_hi, 0);
        // 4096 bytes = 1024 dwords -> 10 - 1 = 9
        assert_eq!(m.cp_hqd_eop_control, 9);
        assert_eq!(m.header, 0xC031_0800);
        assert_eq!(m.cp_hqd_vmid, 3);
        // pipe_priority_map[7] = KFD_PIPE_PRIORITY_CS_MEDIUM (1).
        assert_eq!(m.cp_hqd_pipe_priority, 1);
    }

    /// The whole image, dword by dword at `struct v9_mqd`'s places (`v9_structs.h`), worked
    /// out by hand from amdkfd's `init_mqd`/`update_mqd` for an AQL queue without trap
    /// handler or context save area: header 0; `compute_pipelinestat_enable` 11; the eight
    /// CU masks 23, 24, 26, 27, 39..=42 all ones; `cp_mqd_base_addr` 128/129; `cp_hqd_vmid`
    /// 131; `cp_hqd_persistent_state` 132 (PRELOAD_REQ | 0x53 << 8); `cp_hqd_pipe_priority`
    /// 133; `cp_hqd_quantum` 135 (QUANTUM_EN | 1 << 4 | 1 << 8); the ring 136/137, read
    /// pointer 139/140, write pointer 141/142, doorbell 143, `cp_hqd_pq_control` 145;
    /// `cp_hqd_ib_control` 149 (3 << 20 | 1 << 23); `cp_hqd_hq_status0` 160 (bit 14);
    /// `cp_mqd_control` 162 (PRIV_STATE 1 << 8); EOP 165..=167; `cp_hqd_aql_control` 181.
    /// Every other dword is 0.
    #[test]
    fn fields_sit_at_the_v9_mqd_dwords() {
        let d = ComputeMqd::new(&params()).unwrap().v9_mqd().dwords();
        let ones = 0xFFFF_FFFF;
        let want = [
            (0, 0xC031_0800),
            (11, 1),
            (23, ones),
            (24, ones),
            (26, ones),
            (27, ones),
            (39, ones),
            (40, ones),
            (41, ones),
            (42, ones),
            (128, 0x9000_0100),
            (129, 0x7),
            (131, 3),
            (132, 0x5301),
            (133, 1),
            (135, 0x111),
            (136, 0x0123_4567),
            (139, 0x80),
            (140, 0x7),
            (141, 0x38),
            (142, 0x7),
            (143, 0x4000_001A),
            (145, 0x1C01_4509),
            (149, 0x00B0_0000),
            (160, 0x4000),
            (162, 0x100),
            (165, 0x0780_0000),
            (167, 9),
            (181, 1),
        ];
        for (i, &v) in d.iter().enumerate() {
            let expected = want.iter().find(|w| w.0 == i).map_or(0, |w| w.1);
            assert_eq!(v, expected, "dword {i}: {v:#x} != {expected:#x}");
        }
    }

    /// The image over a matrix of ring sizes, EOP sizes, doorbells, VMIDs and priorities:
    /// each equals the golden image above with the dwords of those inputs worked out from
    /// `kfd_mqd_manager_v9.c`'s formulas, independently of the builder: `QUEUE_SIZE`
    /// log2(ring dwords) - 1 in `cp_hqd_pq_control` (145) beside its fixed AQL bits
    /// 0x1C01_4500; the ring >> 8 (136/137); the doorbell's dword offset << 2 with
    /// `DOORBELL_BIF_DROP` and `DOORBELL_EN` (143); the EOP >> 8 (165/166) and
    /// min(log2(EOP dwords) - 1, 0xA) (167); `cp_hqd_vmid` (131); the pipe priority of
    /// `pipe_priority_map` (133: 0 for priorities 0-6, 1 for 7-10, 2 for 11-15). Every other
    /// dword stays the golden image's.
    #[test]
    fn images_over_a_matrix_of_inputs_match_the_kfd_formulas() {
        let golden = ComputeMqd::new(&params()).unwrap().v9_mqd().dwords();
        let log2 = |v: u64| 63 - v.leading_zeros();
        let mut images = 0;
        for ring_bytes in [256u64, 4096, 1 << 20, 1 << 30] {
            for eop_bytes in [16u64, 4096, 8192, 1 << 16] {
                for doorbell in [0u32, 3, 511, 0x01FF_FFFF] {
                    for vmid in [0u32, 8, 15] {
                        for priority in [0u32, 6, 7, 10, 11, 15] {
                            let ring = 0x0000_7F12_3400_0000u64;
                            let eop = 0x0000_0001_0000_0100u64;
                            let mut p = params();
                            p.ring = GpuVa(ring);
                            p.ring_size_bytes = ring_bytes;
                            p.eop = GpuVa(eop);
                            p.eop_size_bytes = eop_bytes;
                            p.doorbell = DoorbellIndex(doorbell);
                            (p.vmid, p.priority) = (vmid, priority);
                            let got = ComputeMqd::new(&p).unwrap().v9_mqd().dwords();
                            let mut want = golden;
                            want[136] = (ring >> 8) as u32;
                            want[137] = (ring >> 40) as u32;
                            want[145] = 0x1C01_4500 | (log2(ring_bytes / 4) - 1);
                            want[143] = (doorbell * 2) << 2 | 2 | 1 << 30;
                            want[165] = (eop >> 8) as u32;
                            want[166] = (eop >> 40) as u32;
                            want[167] = (log2(eop_bytes / 4) - 1).min(0xA);
                            want[131] = vmid;
                            want[133] = match priority {
                                0..=6 => 0,
                                7..=10 => 1,
                                _ => 2,
                            };
                            for i in 0..512 {
                                assert_eq!(
                                    got[i], want[i],
                                    "dword {i}: ring {ring_bytes} eop {eop_bytes} doorbell \
                                     {doorbell} vmid {vmid} priority {priority}"
                                );
                            }
                            images += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(images, 4 * 4 * 4 * 3 * 6);
    }

    /// CU masks and the multi-XCC images of GC 9.4.3/9.4.4/9.5.0 over a matrix of ring sizes,
    /// VMIDs, masks and XCC slots, each equal to the golden image with these dwords worked out
    /// from `kfd_mqd_manager_v9.c`, independently of the builder: one MQD per queue
    /// (`update_cu_mask`): the eight masks in `compute_static_thread_mgmt_se0..7` (dwords 23,
    /// 24, 26, 27, 39-42); per-XCC MQDs (`init_mqd_v9_4_3`, `update_mqd_v9_4_3`): SE0-SE3's
    /// masks (23, 24, 26, 27), `compute_current_logic_xcc_id` (39) =
    /// (logical start + XCC) % XCCs, dword 40 and 42 `init_mqd`'s all-ones,
    /// `compute_tg_chunk_size` (41) = 1, `cp_mqd_stride_size` (226) = the stride, and the master
    /// XCC's `cp_hqd_pq_control` (145) without `NO_UPDATE_RPTR` (bit 27).
    #[test]
    fn cu_masks_and_per_xcc_images_match_the_kfd_formulas() {
        let golden = ComputeMqd::new(&params()).unwrap().v9_mqd().dwords();
        let masks: [[u32; 8]; 4] = [
            ALL_CUS,
            [0x1, 0x3, 0x7, 0xF, 0x1F, 0x3F, 0x7F, 0xFF],
            [
                0xFFFF_0000,
                0x0000_FFFF,
                0x8000_0001,
                0,
                0x1234_5678,
                0x0F0F_0F0F,
                0xFFFE,
                0x10,
            ],
            [0; 8],
        ];
        let xccs = [
            None,
            Some((0u32, 1u32, 0u32, 2048u32)),
            Some((0, 2, 1, 4096)),
            Some((1, 2, 1, 4096)),
            Some((3, 4, 6, 2048)),
            Some((7, 8, 3, 2304)),
        ];
        let mut images = 0;
        for ring_bytes in [4096u64, 1 << 20] {
            for vmid in [0u32, 8] {
                for m in masks {
                    for x in xccs {
                        let mut p = params();
                        p.ring_size_bytes = ring_bytes;
                        p.vmid = vmid;
                        p.cu_masks = m;
                        p.xcc = x.map(|(index, count, logical_start, stride_bytes)| XccMqd {
                            index,
                            count,
                            logical_start,
                            stride_bytes,
                        });
                        let mut want = golden;
                        want[145] = 0x1C01_4500 | ((ring_bytes / 4).ilog2() - 1);
                        want[131] = vmid;
                        for (d, v) in [23, 24, 26, 27].into_iter().zip(m) {
                            want[d] = v;
                        }
                        match x {
                            None => {
                                for (d, v) in [39, 40, 41, 42].into_iter().zip(&m[4..]) {
                                    want[d] = *v;
                                }
                            }
                            Some((index, count, start, stride)) => {
                                // SE4..SE7 are not masks here: all-ones, as the builder takes
                                // them.
                                p.cu_masks[4..].copy_from_slice(&[u32::MAX; 4]);
                                want[39] = (start + index) % count;
                                want[40] = u32::MAX;
                                want[41] = 1;
                                want[42] = u32::MAX;
                                want[226] = stride;
                                if index == 0 {
                                    want[145] &= !(1 << 27);
                                }
                            }
                        }
                        let got = ComputeMqd::new(&p).unwrap().v9_mqd().dwords();
                        for i in 0..512 {
                            assert_eq!(
                                got[i], want[i],
                                "dword {i}: ring {ring_bytes} vmid {vmid} masks {m:x?} xcc {x:?}"
                            );
                        }
                        images += 1;
                    }
                }
            }
        }
        assert_eq!(images, 2 * 2 * 4 * 6);
    }

    /// A multi-XCC image with bad slot values, or with SE4-SE7 masks (dwords those GPUs use
    /// otherwise), is refused by name.
    #[test]
    fn bad_xcc_slots_are_named() {
        let with = |index, count, stride_bytes, se4| {
            let mut p = params();
            p.cu_masks[4] = se4;
            p.xcc = Some(XccMqd {
                index,
                count,
                logical_start: 0,
                stride_bytes,
            });
            ComputeMqd::new(&p).unwrap_err().to_string()
        };
        let e = with(2, 2, 2048, u32::MAX);
        assert!(e.contains("XCC 2 of 2: the count is not 1..=8"), "{e}");
        let e = with(0, 9, 2048, u32::MAX);
        assert!(e.contains("XCC 0 of 9"), "{e}");
        let e = with(0, 0, 2048, u32::MAX);
        assert!(e.contains("XCC 0 of 0"), "{e}");
        let e = with(0, 1, 1792, u32::MAX);
        assert!(e.contains("MQD stride 0x700 is under 2048"), "{e}");
        let e = with(0, 1, 2049, u32::MAX);
        assert!(e.contains("MQD stride 0x801"), "{e}");
        let e = with(0, 1, 2048, 0xF);
        assert!(
            e.contains("CU masks of SE4..SE7 (0xf .. 0xffffffff)"),
            "{e}"
        );
        assert!(has_xcc_mqds(90402) && has_xcc_mqds(90400) && has_xcc_mqds(90500));
        assert!(!has_xcc_mqds(90010) && !has_xcc_mqds(90403) && !has_xcc_mqds(90000));
    }

    /// What a command processor takes from the image (the emulated device's check of an
    /// MQD, [`V9Mqd::load_compute`]): accepted, with the ring, pointers and doorbell given.
    #[test]
    fn the_cp_takes_the_image() {
        let q = ComputeMqd::new(&params())
            .unwrap()
            .load_compute(0..2048, true)
            .unwrap();
        assert_eq!(
            (q.ring, q.ring_size_bytes, q.read_ptr, q.write_ptr),
            (0x1_2345_6700, 4096, 0x7_0000_0080, 0x7_0000_0038)
        );
        assert_eq!(q.doorbell_dword, 6);
    }

    #[test]
    fn large_sizes_and_high_addresses() {
        let mut p = params();
        p.ring = GpuVa(0xffff_8000_0000_0000);
        p.ring_size_bytes = 1 << 20; // 2^18 dwords -> 17 = 0x11
        p.eop_size_bytes = 32 * 1024; // 8192 dwords -> 12, clamped to 0xA
        p.doorbell = DoorbellIndex(0x1000); // dword 0x2000 -> 0x8000
        let m = ComputeMqd::new(&p).unwrap();
        // 0xffff_8000_0000_0000 >> 8 = 0x00ff_ff80_0000_0000
        assert_eq!(m.cp_hqd_pq_base_lo, 0);
        assert_eq!(m.cp_hqd_pq_base_hi, 0x00ff_ff80);
        assert_eq!(m.cp_hqd_pq_control, 0x1C01_4511);
        assert_eq!(m.cp_hqd_eop_control, 0xA);
        assert_eq!(m.cp_hqd_pq_doorbell_control, 0x4000_8002);
        p.ring_size_bytes = 256; // 64 dwords -> 5
        p.eop_size_bytes = 16; // 4 dwords -> 1
        let m = ComputeMqd::new(&p).unwrap();
        assert_eq!(m.cp_hqd_pq_control & PQ_CONTROL_QUEUE_SIZE_MASK, 5);
        assert_eq!(m.cp_hqd_eop_control, 1);
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let check = |f: &dyn Fn(&mut MqdParams), needle: &str| {
            let mut p = params();
            f(&mut p);
            let e = ComputeMqd::new(&p).unwrap_err();
            assert_eq!(e.status(), Status::InvalidQueueCreation);
            assert!(
                e.detail().to_string().contains(needle),
                "{e:?} lacks {needle}"
            );
        };
        check(
            &|p| p.ring = GpuVa(0x1_2345_6780),
            "ring address 0x123456780",
        );
        check(&|p| p.ring_size_bytes = 3000, "ring_size_bytes 0xbb8");
        check(&|p| p.ring_size_bytes = 128, "ring_size_bytes 0x80");
        check(&|p| p.eop = GpuVa(0), "EOP address 0x0");
        check(&|p| p.eop_size_bytes = 8, "eop_size_bytes 0x8");
        check(
            &|p| p.eop_size_bytes = 1 << 32,
            "eop_size_bytes 0x100000000",
        );
        check(
            &|p| p.rptr_report = GpuVa(0x1004),
            "read pointer address 0x1004",
        );
        check(
            &|p| p.wptr_poll = GpuVa(0x1002),
            "write pointer address 0x1002",
        );
        check(
            &|p| p.doorbell = DoorbellIndex(0x0200_0000),
            "doorbell index 33554432",
        );
        check(
            &|p| p.mqd_address = GpuVa(0x7_9000_0180),
            "MQD address 0x790000180",
        );
        check(&|p| p.mqd_address = GpuVa(0), "MQD address 0x0");
        // 15 is the last VMID and the last priority (HIGH, 2).
        let mut p = params();
        (p.vmid, p.priority) = (15, 15);
        let m = ComputeMqd::new(&p).unwrap();
        assert_eq!((m.cp_hqd_vmid, m.cp_hqd_pipe_priority), (15, 2));
        check(&|p| p.vmid = 16, "VMID 16 is past 15");
        check(&|p| p.priority = 16, "queue priority 16 is past 15");
    }
}
