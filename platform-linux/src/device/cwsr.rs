//! Sizes of the per-queue buffers amdkfd wants with an AQL compute queue: the end-of-pipe
//! (EOP) buffer and the compute-wave save/restore (CWSR) area, and the header at the start
//! of each XCC's save area.
//!
//! Facts (formulas, constants) from linux `drivers/gpu/drm/amd/amdkfd/kfd_queue.c`
//! (`kfd_queue_ctx_save_restore_size`, which since linux 6.11 rejects a queue whose sizes differ
//! from its own) and ROCT-Thunk-Interface `queues.c` (`update_ctx_save_restore_size`,
//! `hsaKmtCreateQueue`), which compute the same values from the node's topology properties.
//! `gfx_target_version` is the decimal sysfs value (90010 = gfx90a).

use hsa_core::platform::NodeProperties;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `HWREG_SIZE_PER_CU`: hardware register save space per CU, bytes.
pub const HWREG_SIZE_PER_CU: u64 = 0x1000;
/// `SGPR_SIZE_PER_CU`: SGPR save space per CU, bytes.
pub const SGPR_SIZE_PER_CU: u64 = 0x4000;
/// `DEBUGGER_BYTES_PER_WAVE`.
pub const DEBUGGER_BYTES_PER_WAVE: u64 = 32;
/// `DEBUGGER_BYTES_ALIGN`.
pub const DEBUGGER_BYTES_ALIGN: u64 = 64;
/// `sizeof(HsaUserContextSaveAreaHeader)`, bytes.
pub const CONTEXT_SAVE_AREA_HEADER_BYTES: u64 = 40;
/// `GFX_VERSION_NAVI10` (gfx1010): from here control-stack entries are 12 bytes.
const GFX_NAVI10: u32 = 100100;

/// The header amdkfd and the trap handler expect at the start of each XCC's save area.
///
/// C: `HsaUserContextSaveAreaHeader` (ROCT `hsakmttypes.h`), 40 bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ContextSaveAreaHeader {
    /// Offset of the last saved control stack top (written by the CP).
    pub control_stack_offset: u32,
    /// Size of the last saved control stack (written by the CP).
    pub control_stack_size: u32,
    /// Offset of the last saved wave state (written by the CP).
    pub wave_state_offset: u32,
    /// Size of the last saved wave state (written by the CP).
    pub wave_state_size: u32,
    /// Offset from this header to the debugger area, bytes.
    pub debug_offset: u32,
    /// Size of the debugger area (all XCCs), bytes.
    pub debug_size: u32,
    /// Address of a 64-bit error reason the trap handler writes (0: none).
    pub error_reason: u64,
    /// Event to signal on a queue error (0: none).
    pub error_event_id: u32,
    /// Reserved.
    pub reserved1: u32,
}
const _: () =
    assert!(size_of::<ContextSaveAreaHeader>() == CONTEXT_SAVE_AREA_HEADER_BYTES as usize);

/// What CREATE_QUEUE needs besides the ring, all in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueBufferSizes {
    /// `eop_buffer_size` (0: the ASIC takes no EOP buffer for AQL queues, gfx94x).
    pub eop_buffer_bytes: u64,
    /// `ctl_stack_size`: control stack part of one XCC's save area.
    pub ctl_stack_bytes: u32,
    /// `ctx_save_restore_size`: one XCC's save area (control stack + work-group data).
    pub ctx_save_restore_bytes: u32,
    /// Debugger area per XCC.
    pub debug_memory_bytes: u32,
    /// Bytes to allocate for the whole CWSR buffer: `(ctx + debug) * num_xcc`, page aligned.
    pub cwsr_total_bytes: u64,
    /// XCCs (save areas) in the buffer.
    pub num_xcc: u32,
}

/// VGPR save space per CU (`get_vgpr_size_per_cu`): 512 KiB on gfx908/gfx90a/gfx94x/gfx950
/// (their accumulation registers), 384 KiB on gfx1150/gfx1151/gfx1200/gfx1201, else 256 KiB.
pub fn vgpr_bytes_per_cu(gfx_target_version: u32) -> u64 {
    match gfx_target_version {
        90008 | 90010 | 90500 => 0x80000,
        v if v / 100 == 904 => 0x80000,
        110500 | 110501 | 120000 | 120001 => 0x60000,
        _ => 0x40000,
    }
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// The EOP and CWSR sizes for an AQL queue on the GPU node `props`, with the system page size
/// `page_bytes`; `None` for a node that is not a GPU of gfx8 or later (no `simd_count`,
/// `simd_per_cu` or `gfx_target_version`) or whose sizes overflow 32 bits.
pub fn queue_buffer_sizes(props: &NodeProperties, page_bytes: u64) -> Option<QueueBufferSizes> {
    let gfxv = props.gfx_target_version;
    if gfxv < 80000 || props.simd_count == 0 || props.simd_per_cu == 0 {
        return None;
    }
    let num_xcc = props.num_xcc.max(1);
    let cu_num = u64::from(props.simd_count / props.simd_per_cu / num_xcc);
    let wave_num = if gfxv < GFX_NAVI10 {
        let engines = u64::from(
            props
                .array_count
                .checked_div(props.simd_arrays_per_engine)
                .unwrap_or(0),
        );
        (cu_num * 40).min(engines * 512)
    } else {
        cu_num * 32
    };
    let bytes_per_wave = if gfxv >= GFX_NAVI10 { 12 } else { 8 };
    let wg_data = align_up(
        cu_num
            * (vgpr_bytes_per_cu(gfxv)
                + SGPR_SIZE_PER_CU
                + (u64::from(props.lds_size_in_kb) << 10)
                + HWREG_SIZE_PER_CU),
        page_bytes,
    );
    let mut ctl_stack = align_up(
        CONTEXT_SAVE_AREA_HEADER_BYTES + wave_num * bytes_per_wave + 8,
        page_bytes,
    );
    if gfxv / 10000 == 10 {
        // gfx10: the hardware limits the control stack to 0x7000 bytes.
        ctl_stack = ctl_stack.min(0x7000);
    }
    let debug = align_up(wave_num * DEBUGGER_BYTES_PER_WAVE, DEBUGGER_BYTES_ALIGN);
    let ctx = ctl_stack + wg_data;
    let total = align_up((ctx + debug) * u64::from(num_xcc), page_bytes);
    let eop = if gfxv / 100 == 904 {
        0 // gfx94x: AQL queues take no EOP buffer (ROCT; the kernel accepts address 0)
    } else if gfxv == 80002 {
        0x8000 // Tonga
    } else {
        4096
    };
    Some(QueueBufferSizes {
        eop_buffer_bytes: eop,
        ctl_stack_bytes: u32::try_from(ctl_stack).ok()?,
        ctx_save_restore_bytes: u32::try_from(ctx).ok()?,
        debug_memory_bytes: u32::try_from(debug).ok()?,
        cwsr_total_bytes: total,
        num_xcc,
    })
}

/// The header of XCC `xcc` (0-based): the debugger area follows all save areas, so it sits
/// `(num_xcc - xcc) * ctx_save_restore_bytes` after this header (ROCT `fill_cwsr_header`).
pub fn context_save_area_header(sizes: &QueueBufferSizes, xcc: u32) -> ContextSaveAreaHeader {
    ContextSaveAreaHeader {
        debug_offset: (sizes.num_xcc - xcc).saturating_mul(sizes.ctx_save_restore_bytes),
        debug_size: sizes.debug_memory_bytes.saturating_mul(sizes.num_xcc),
        ..ContextSaveAreaHeader::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi210() -> NodeProperties {
        // From the MI210 topology dump (nodes/1/properties).
        NodeProperties {
            simd_count: 416,
            simd_per_cu: 4,
            array_count: 8,
            simd_arrays_per_engine: 1,
            lds_size_in_kb: 64,
            gfx_target_version: 90010,
            num_xcc: 1,
            ..NodeProperties::default()
        }
    }

    #[test]
    fn mi210_sizes_follow_the_kernel_formula() {
        let s = queue_buffer_sizes(&mi210(), 4096).unwrap();
        // cu 104, waves min(104*40, 8/1*512) = 4096; ctl = align(40 + 4096*8 + 8) = 0x9000;
        // wg = 104 * (0x80000 + 0x4000 + 0x10000 + 0x1000) = 0x3c88000 (page multiple).
        assert_eq!(s.ctl_stack_bytes, 0x9000);
        assert_eq!(s.ctx_save_restore_bytes, 0x9000 + 0x3c8_8000);
        assert_eq!(s.debug_memory_bytes, 4096 * 32);
        assert_eq!(s.cwsr_total_bytes, 0x9000 + 0x3c8_8000 + 0x2_0000);
        assert_eq!(s.eop_buffer_bytes, 4096);
    }

    #[test]
    fn gfx11_and_gfx94x_and_cpu() {
        // RX 7900 XTX (gfx1100): 96 CUs (192 SIMDs, 2 per CU), 64 KiB LDS.
        let p = NodeProperties {
            simd_count: 192,
            simd_per_cu: 2,
            array_count: 12,
            simd_arrays_per_engine: 2,
            lds_size_in_kb: 64,
            gfx_target_version: 110000,
            num_xcc: 1,
            ..NodeProperties::default()
        };
        let s = queue_buffer_sizes(&p, 4096).unwrap();
        // waves 96*32 = 3072; ctl = align(40 + 3072*12 + 8) = 0xa000.
        assert_eq!(s.ctl_stack_bytes, 0xa000);
        assert_eq!(s.ctx_save_restore_bytes, 0xa000 + 96 * 0x55000);
        let mut mi300 = mi210();
        mi300.gfx_target_version = 90402;
        mi300.num_xcc = 8;
        mi300.simd_count = 1216;
        let s = queue_buffer_sizes(&mi300, 4096).unwrap();
        assert_eq!(s.eop_buffer_bytes, 0);
        assert_eq!(s.num_xcc, 8);
        assert_eq!(
            s.cwsr_total_bytes,
            8 * (u64::from(s.ctx_save_restore_bytes) + u64::from(s.debug_memory_bytes))
        );
        assert_eq!(queue_buffer_sizes(&NodeProperties::default(), 4096), None);
    }

    #[test]
    fn header_debug_offsets() {
        let s = QueueBufferSizes {
            eop_buffer_bytes: 4096,
            ctl_stack_bytes: 0x1000,
            ctx_save_restore_bytes: 0x10000,
            debug_memory_bytes: 0x800,
            cwsr_total_bytes: 0x21000,
            num_xcc: 2,
        };
        let h0 = context_save_area_header(&s, 0);
        let h1 = context_save_area_header(&s, 1);
        assert_eq!(h0.debug_offset, 0x20000);
        assert_eq!(h1.debug_offset, 0x10000);
        assert_eq!(h0.debug_size, 0x1000);
        assert_eq!(h0.as_bytes().len(), 40);
    }
}
