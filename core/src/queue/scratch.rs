//! A queue's scratch (private segment backing memory), as ROCR sets it up at queue creation
//! and the command processor reads it at each dispatch: device memory of one slot per wave
//! the GPU can hold (`max_slots_scratch_cu` × compute units), each slot 64 lanes × the
//! private bytes per lane rounded up to 1 KiB; the fields of `amd_queue_t` that describe it
//! (the private segment buffer V#, `COMPUTE_TMPRING_SIZE`, the backing's address and size, the
//! bytes per lane).
//!
//! Ref: ROCR `AqlQueue::InitScratchSRD` and `GpuAgent::QueueCreate` (ROCm 5.2) for the sizes
//! and fields; AMDGPUUsage "Private Segment Buffer" and "Flat Scratch"; the Vega ISA §8.1.8
//! "Buffer resource" for the V#'s bits; gfx9's `COMPUTE_TMPRING_SIZE` (WAVES \[11:0\],
//! WAVESIZE \[24:12\] in 1 KiB units).

use crate::abi::queue::AmdQueue;
use crate::status::{Error, Result, Status};
use crate::wire::gfx9_rsrc::{num_format, sq_sel, BufferRsrc, BUF_DATA_FORMAT_32, BUF_RSRC_DWORDS};

/// Private bytes per lane hsa-core gives a queue when its creator does not say
/// ([`QueueConfig::private_segment_size`](super::QueueConfig::private_segment_size) `None`):
/// 2 KiB, ROCR's `DEFAULT_SCRATCH_BYTES_PER_THREAD` (its per-queue scratch for a full-profile
/// agent; a dGPU's ROCR queue starts without scratch and grows it on the CP's request).
pub const DEFAULT_PRIVATE_SEGMENT_BYTES: u32 = 2048;

/// Largest private segment per lane a queue can have, bytes: 64 lanes of it fill gfx9's
/// largest `COMPUTE_TMPRING_SIZE.WAVESIZE`, 8191 KiB (ROCR's `MAX_WAVE_SCRATCH`, 8387584
/// bytes per wave, beyond which `AcquireQueueScratch` gives no scratch).
pub const MAX_PRIVATE_SEGMENT_BYTES: u32 = 131_056;

/// Largest scratch per wave slot, bytes: gfx9's `COMPUTE_TMPRING_SIZE.WAVESIZE` at its 13-bit
/// maximum, 8191 KiB (ROCR's `MAX_WAVE_SCRATCH`): a scratch request for more per wave fails the
/// queue with `OUT_OF_RESOURCES` ([`ScratchLayout::for_request`]).
pub const MAX_WAVE_SCRATCH_BYTES: u64 = 8_387_584;

/// Largest scratch, bytes, a queue keeps for every wave slot of its GPU (ROCR 5.2's
/// `single_limit` in `GpuAgent::AcquireQueueScratch`, 140 MiB). A scratch request needing more
/// gets only the slots its dispatch can occupy at once ([`ScratchLayout::for_request`]), as
/// ROCR's "large" scratch.
pub const SMALL_SCRATCH_LIMIT_BYTES: u64 = 146_800_640;

/// `COMPUTE_TMPRING_SIZE.WAVES` is 12 bits.
const MAX_WAVES: u32 = 0xFFF;

/// Lanes of a gfx9 wave.
const LANES: u64 = 64;

/// The shape of a queue's scratch: per-lane and per-wave bytes, wave slots, total size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchLayout {
    /// Private bytes per lane the queue holds (`scratch_wave64_lane_byte_size`): the
    /// requested size rounded up to 16 bytes (64 lanes of it then fill whole KiB).
    pub lane_bytes: u32,
    /// Wave slots (`COMPUTE_TMPRING_SIZE.WAVES`): compute units × `max_slots_scratch_cu`,
    /// at most 4095.
    pub waves: u32,
    /// Bytes of backing memory: `waves` × 64 × `lane_bytes`.
    pub size_bytes: u64,
}

impl ScratchLayout {
    /// The scratch of a queue on a GPU of `cu_count` compute units that runs
    /// `max_slots_scratch_cu` scratch waves per CU (KFD topology `max_slots_scratch_cu`), with
    /// `lane_bytes` of private memory per lane. `None` when there is none to give (no
    /// private bytes, no compute units or slots: a CPU node or an agent that reports none).
    ///
    /// # Errors
    /// [`Status::OutOfResources`] when `lane_bytes` exceeds [`MAX_PRIVATE_SEGMENT_BYTES`]
    /// (ROCR's status for `hsa_queue_create`).
    pub fn new(lane_bytes: u32, cu_count: u32, max_slots_scratch_cu: u32) -> Result<Option<Self>> {
        if lane_bytes > MAX_PRIVATE_SEGMENT_BYTES {
            return Err(Error::lazy(
                Status::OutOfResources,
                [u64::from(lane_bytes)],
                |&[n, ..], f| {
                    write!(
                        f,
                        "private_segment_size {n} bytes per work-item exceeds the \
                         {MAX_PRIVATE_SEGMENT_BYTES} a queue's scratch can hold \
                         (COMPUTE_TMPRING_SIZE.WAVESIZE)"
                    )
                },
            ));
        }
        let waves = cu_count.saturating_mul(max_slots_scratch_cu).min(MAX_WAVES);
        if lane_bytes == 0 || waves == 0 {
            return Ok(None);
        }
        let lane_bytes = lane_bytes.next_multiple_of(16);
        Ok(Some(ScratchLayout {
            lane_bytes,
            waves,
            size_bytes: u64::from(waves) * LANES * u64::from(lane_bytes),
        }))
    }

    /// The scratch a queue gets when the command processor reports a scratch request for the
    /// kernel dispatch `packet` (ROCR 5.2 `AqlQueue::DynamicScratchHandler` and
    /// `GpuAgent::AcquireQueueScratch`): the packet's `private_segment_size` per lane rounded
    /// up to 16 bytes (whole KiB per wave), for every wave slot of the GPU (`cu_count` ×
    /// `max_slots_scratch_cu`, at most 4095); when that exceeds
    /// [`SMALL_SCRATCH_LIMIT_BYTES`], only the slots the dispatch fills at once: its
    /// work-groups spread over the `shader_engines` (at least one group per engine) times
    /// its waves per group, capped by the GPU's slots. Sizes: bytes; `packet` as
    /// [`DispatchShape`].
    ///
    /// # Errors
    /// [`Status::OutOfResources`] (ROCR's status for a request it cannot serve) when the
    /// packet asks for no private memory, when 64 lanes of it exceed
    /// [`MAX_WAVE_SCRATCH_BYTES`], or when the GPU has no compute units or scratch slots.
    pub fn for_request(
        packet: &DispatchShape,
        cu_count: u32,
        max_slots_scratch_cu: u32,
        shader_engines: u32,
    ) -> Result<Self> {
        let private = packet.private_segment_size;
        let lane_bytes = u64::from(private).next_multiple_of(16);
        if private == 0 || lane_bytes * LANES > MAX_WAVE_SCRATCH_BYTES {
            return Err(Error::lazy(
                Status::OutOfResources,
                [u64::from(private), lane_bytes * LANES],
                |&[n, wave, ..], f| {
                    write!(
                        f,
                        "scratch request for private_segment_size {n} bytes per work-item \
                         ({wave} bytes per wave): a queue's scratch holds 1 to \
                         {MAX_WAVE_SCRATCH_BYTES} bytes per wave (COMPUTE_TMPRING_SIZE.WAVESIZE)"
                    )
                },
            ));
        }
        let device_slots = cu_count.saturating_mul(max_slots_scratch_cu).min(MAX_WAVES);
        if device_slots == 0 {
            return Err(Error::new(
                Status::OutOfResources,
                "scratch request on an agent without compute units or scratch slots \
                 (max_slots_scratch_cu)",
            ));
        }
        let lane_bytes = lane_bytes as u32;
        let wave_bytes = LANES * u64::from(lane_bytes);
        let mut waves = device_slots;
        if wave_bytes * u64::from(device_slots) > SMALL_SCRATCH_LIMIT_BYTES {
            // ROCR's "large" scratch: the groups the busiest engine gets, on every engine.
            let engines = u64::from(shader_engines.max(1));
            let lanes_per_group: u64 = packet
                .workgroup_size
                .iter()
                .map(|&d| u64::from(d.max(1)))
                .product();
            let waves_per_group = lanes_per_group.div_ceil(LANES);
            let groups: u64 = (0..3)
                .map(|d| {
                    u64::from(packet.grid_size[d])
                        .div_ceil(u64::from(packet.workgroup_size[d].max(1)))
                })
                .product();
            let per_engine = groups.div_ceil(engines).max(1);
            let wanted = (per_engine * engines).saturating_mul(waves_per_group);
            waves = wanted.min(u64::from(device_slots)) as u32;
        }
        Ok(ScratchLayout {
            lane_bytes,
            waves,
            size_bytes: u64::from(waves) * wave_bytes,
        })
    }

    /// Bytes per wave slot: 64 × [`lane_bytes`](Self::lane_bytes), a whole number of KiB.
    pub const fn wave_bytes(&self) -> u64 {
        LANES * self.lane_bytes as u64
    }

    /// The `COMPUTE_TMPRING_SIZE` value: WAVES \[11:0\], WAVESIZE \[24:12\] (KiB per wave).
    pub const fn compute_tmpring_size(&self) -> u32 {
        self.waves | ((self.wave_bytes() / 1024) as u32) << 12
    }

    /// Writes the scratch fields of `amd_queue` for backing memory at device address `base`
    /// (ROCR's `InitScratchSRD` on gfx9): the private segment buffer V# — base, stride 0,
    /// SWIZZLE_ENABLE; NUM_RECORDS the size (saturating at 32 bits); DST_SEL XYZW,
    /// NUM_FORMAT UINT, DATA_FORMAT 32, ELEMENT_SIZE 4 bytes, INDEX_STRIDE 64, ADD_TID_ENABLE,
    /// ATC 0 (a dGPU's base profile) — `compute_tmpring_size`, the backing's address and size,
    /// and the bytes per lane.
    pub fn fill(&self, base: u64, amd_queue: &mut AmdQueue) {
        amd_queue.scratch_resource_descriptor = resource_descriptor(base, self.size_bytes);
        amd_queue.compute_tmpring_size = self.compute_tmpring_size();
        amd_queue.scratch_backing_memory_location = base;
        amd_queue.scratch_backing_memory_byte_size = self.size_bytes;
        amd_queue.scratch_wave64_lane_byte_size = self.lane_bytes;
    }
}

/// What a scratch request is sized from: the kernel dispatch packet at the queue's read index
/// (`hsa_kernel_dispatch_packet_t`'s `workgroup_size_x/y/z` at byte 4, `grid_size_x/y/z` at
/// byte 12, `private_segment_size` at byte 24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchShape {
    /// Work-items per work-group in each dimension.
    pub workgroup_size: [u16; 3],
    /// Work-items of the grid in each dimension.
    pub grid_size: [u32; 3],
    /// Private bytes per work-item the packet asks for.
    pub private_segment_size: u32,
}

impl DispatchShape {
    /// The shape of the 64-byte kernel dispatch packet `packet` (little-endian fields).
    pub fn from_packet(packet: &[u8; 64]) -> DispatchShape {
        let u16_at = |o: usize| u16::from_le_bytes([packet[o], packet[o + 1]]);
        let u32_at =
            |o: usize| u32::from_le_bytes([packet[o], packet[o + 1], packet[o + 2], packet[o + 3]]);
        DispatchShape {
            workgroup_size: [u16_at(4), u16_at(6), u16_at(8)],
            grid_size: [u32_at(12), u32_at(16), u32_at(20)],
            private_segment_size: u32_at(24),
        }
    }
}

pub use super::inactive::ScratchRequest;

/// Whether a positive `queue_inactive_signal` value is the command processor's scratch request
/// (wave64 code 1 or wave32 code `0x400`, upper half 0) rather than an error: what a runtime
/// serves by growing the queue's scratch ([`super::AqlQueue::serve_scratch_request`]). ROCR
/// 5.2's `DynamicScratchHandler` tests `error_code & 0x401` after the reclaim code 512.
pub const fn is_scratch_request(value: i64) -> bool {
    use super::inactive::{CP_SCRATCH_WAVE32, CP_SCRATCH_WAVE64};
    value > 0
        && value >> 32 == 0
        && value != 512
        && value as u32 & (CP_SCRATCH_WAVE64 | CP_SCRATCH_WAVE32) != 0
}

/// The gfx9 private segment buffer V# of scratch at `base` of `size_bytes` (see
/// [`ScratchLayout::fill`]): the [`BufferRsrc`] ROCR's `InitScratchSRD` builds on gfx9 —
/// stride 0 with `SWIZZLE_EN`, `NUM_RECORDS` the backing's size in bytes (saturated at
/// 4 GiB - 1), `DST_SEL` X, Y, Z, W, `NUM_FORMAT` UINT, `DATA_FORMAT` 32, `ELEMENT_SIZE`
/// 4 bytes, `INDEX_STRIDE` 64 and `ADD_TID_ENABLE`, so each lane's dwords interleave as
/// the hardware's private-segment swizzle expects (Vega ISA §9.1.5, "Buffer Resource";
/// AMDGPUUsage "Private Segment Buffer").
pub fn resource_descriptor(base: u64, size_bytes: u64) -> [u32; 4] {
    let mut dw = [0u32; BUF_RSRC_DWORDS];
    BufferRsrc {
        base,
        stride: 0,
        swizzle_en: true,
        num_records: u32::try_from(size_bytes).unwrap_or(u32::MAX),
        dst_sel: [sq_sel::X, sq_sel::Y, sq_sel::Z, sq_sel::W],
        num_format: num_format::UINT,
        data_format: BUF_DATA_FORMAT_32,
        // 2 << 1: 4 bytes.
        element_size: 1,
        // 8 << 3: 64 lanes.
        index_stride: 3,
        add_tid_enable: true,
    }
    .emit(&mut dw);
    dw
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The emulated MI210's node (104 CUs, 32 scratch slots per CU) with 1 KiB per lane:
    /// 3328 waves of 64 KiB, 208 MiB; the V# and TMPRING_SIZE bits worked out by hand.
    #[test]
    fn layout_and_fields_of_an_mi210_queue() {
        let l = ScratchLayout::new(1024, 104, 32).unwrap().unwrap();
        assert_eq!(l.waves, 3328);
        assert_eq!(l.wave_bytes(), 65536);
        assert_eq!(l.size_bytes, 3328 * 65536);
        // WAVES 3328 = 0xD00, WAVESIZE 64 KiB = 0x40 << 12.
        assert_eq!(l.compute_tmpring_size(), 0x0004_0D00);
        let mut q = AmdQueue::default();
        l.fill(0x7f12_3456_0000, &mut q);
        assert_eq!(
            q.scratch_resource_descriptor,
            [0x3456_0000, 0x8000_7f12, 0x0D00_0000, 0x00EA_4FAC]
        );
        assert_eq!(q.scratch_backing_memory_location, 0x7f12_3456_0000);
        assert_eq!(q.scratch_backing_memory_byte_size, 218_103_808);
        assert_eq!(q.scratch_wave64_lane_byte_size, 1024);
    }

    fn shape(wg: u16, grid: u32, private: u32) -> DispatchShape {
        DispatchShape {
            workgroup_size: [wg, 1, 1],
            grid_size: [grid, 1, 1],
            private_segment_size: private,
        }
    }

    /// ROCR 5.2's sizing of a scratch request on the MI210 (104 CUs, 32 slots, 8 engines),
    /// worked out by hand: up to 140 MiB every slot (1 KiB per lane: 3328 × 64 KiB = 208 MiB
    /// is above, 512 bytes: 104 MiB is not); above it the dispatch's slots — 2 groups of one
    /// wave over 8 engines: 8; 1000 groups of 256 lanes: 125 per engine × 8 × 4 waves =
    /// 4000, capped at the 3328 slots; refusals for no private memory and above 8191 KiB per
    /// wave, and for an agent without slots.
    #[test]
    fn request_sizes_follow_rocr() {
        let l = ScratchLayout::for_request(&shape(64, 128, 500), 104, 32, 8).unwrap();
        assert_eq!(
            (l.lane_bytes, l.waves, l.size_bytes),
            (512, 3328, 3328 * 32768)
        );
        let l = ScratchLayout::for_request(&shape(64, 128, 1024), 104, 32, 8).unwrap();
        assert_eq!((l.lane_bytes, l.waves, l.size_bytes), (1024, 8, 8 * 65536));
        assert_eq!(l.compute_tmpring_size(), 8 | 64 << 12);
        let l = ScratchLayout::for_request(&shape(256, 256_000, 1024), 104, 32, 8).unwrap();
        assert_eq!(l.waves, 3328);
        let l = ScratchLayout::for_request(&shape(256, 256 * 16, 1024), 104, 32, 8).unwrap();
        assert_eq!(l.waves, 2 * 8 * 4);
        // Exactly 140 MiB (70 CUs x 32 slots x 64 KiB) is still "small": every slot.
        let l = ScratchLayout::for_request(&shape(64, 128, 1024), 70, 32, 8).unwrap();
        assert_eq!((l.waves, l.size_bytes), (2240, SMALL_SCRATCH_LIMIT_BYTES));
        let l = ScratchLayout::for_request(&shape(64, 128, 1024), 71, 32, 8).unwrap();
        assert_eq!(l.waves, 8);
        let top = ScratchLayout::for_request(&shape(64, 64, 131_056), 1, 1, 1).unwrap();
        assert_eq!(top.wave_bytes(), MAX_WAVE_SCRATCH_BYTES);
        for (s, cus) in [
            (shape(64, 64, 0), 104),
            (shape(64, 64, 131_057), 104),
            (shape(64, 64, 16), 0),
        ] {
            let e = ScratchLayout::for_request(&s, cus, 32, 8).unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources, "{s:?} {cus}");
        }
    }

    /// The packet fields a request is sized from, at hsa.h's offsets; the inactive-signal
    /// values that are requests (ROCR's `& 0x401` after 512) and those that are not.
    #[test]
    fn dispatch_shape_and_request_codes() {
        let mut p = [0u8; 64];
        p[4..6].copy_from_slice(&64u16.to_le_bytes());
        p[6..8].copy_from_slice(&2u16.to_le_bytes());
        p[8..10].copy_from_slice(&3u16.to_le_bytes());
        // Every byte of the 32-bit fields non-zero and distinct, so a wrong byte shows.
        p[12..16].copy_from_slice(&0x0403_0201u32.to_le_bytes());
        p[16..20].copy_from_slice(&0x0807_0605u32.to_le_bytes());
        p[20..24].copy_from_slice(&0x0c0b_0a09u32.to_le_bytes());
        p[24..28].copy_from_slice(&0x100f_0e0du32.to_le_bytes());
        p[28..32].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            DispatchShape::from_packet(&p),
            DispatchShape {
                workgroup_size: [64, 2, 3],
                grid_size: [0x0403_0201, 0x0807_0605, 0x0c0b_0a09],
                private_segment_size: 0x100f_0e0d
            }
        );
        for v in [1, 0x400, 0x401, 0x21] {
            assert!(is_scratch_request(v), "{v:#x}");
        }
        let oor = crate::queue::inactive::encode(Status::OutOfResources, false);
        for v in [0, -1, i64::MIN, 512, 2, 0x20, oor, 1 | 1 << 32] {
            assert!(!is_scratch_request(v), "{v:#x}");
        }
    }

    /// Per-lane sizes round up to 16 bytes (whole KiB per wave); the slot count stops at
    /// WAVES' 12 bits; no lanes, CUs or slots give no scratch; above ROCR's limit is refused.
    #[test]
    fn rounding_limits_and_refusals() {
        let l = ScratchLayout::new(100, 4, 32).unwrap().unwrap();
        assert_eq!((l.lane_bytes, l.wave_bytes(), l.waves), (112, 7168, 128));
        assert_eq!(l.compute_tmpring_size(), 128 | 7 << 12);
        assert_eq!(
            ScratchLayout::new(16, 1000, 32).unwrap().unwrap().waves,
            4095
        );
        assert_eq!(ScratchLayout::new(0, 104, 32).unwrap(), None);
        assert_eq!(ScratchLayout::new(1024, 0, 32).unwrap(), None);
        assert_eq!(ScratchLayout::new(1024, 104, 0).unwrap(), None);
        let top = ScratchLayout::new(MAX_PRIVATE_SEGMENT_BYTES, 1, 1)
            .unwrap()
            .unwrap();
        assert_eq!(top.compute_tmpring_size() >> 12, 0x1FFF);
        let e = ScratchLayout::new(MAX_PRIVATE_SEGMENT_BYTES + 1, 1, 1).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(e.detail().contains("131057"), "{}", e.detail());
    }
}
