//! The gfx9 memory queue descriptor (MQD) of a compute queue: `struct v9_mqd`, the 512 dwords
//! (2048 bytes) the command processor loads into a hardware queue descriptor (HQD) when the
//! queue is mapped, and saves back when it is unmapped.
//!
//! Layout: linux `drivers/gpu/drm/amd/include/v9_structs.h` (`struct v9_mqd`, field names and
//! order kept; the header's `reserved_N` dwords sit at dword `N`, which pins every named
//! field's place, asserted below at compile time). What each register image holds:
//! `amdkfd/kfd_mqd_manager_v9.c` (`init_mqd`, `update_mqd`) and `amdgpu/gfx_v9_0.c`
//! (`gfx_v9_0_mqd_init`); bit positions of the `CP_HQD_*` fields in [`cp_hqd`].
//!
//! [`V9Mqd::amdkfd_compute`] fills one as amdkfd does for a user compute queue (`init_mqd`
//! then `update_mqd`); [`write_queue_registers`] is the part of it both producers (the
//! emulated amdkfd and the bare-metal backend's `ComputeMqd`) share;
//! [`V9Mqd::load_compute`] is what a command processor takes from one when it maps the
//! queue, refusing an MQD amdkfd would never produce.
//!
//! [`V9Mqd`] is `#[repr(C)]` with zerocopy derives: it is the view over the 2048 bytes (read
//! one from guest memory with `V9Mqd::read_from_bytes`, write one with `as_bytes`). The
//! bare-metal backend fills the fields an AQL queue needs (`hsa_baremetal::mqd`); the emulated
//! amdkfd fills it as amdkfd does ([`V9Mqd::amdkfd_compute`]).

use core::mem::offset_of;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Dwords of a [`V9Mqd`].
pub const V9_MQD_DWORDS: usize = 512;

/// `struct v9_mqd.header` as amdkfd's `init_mqd` (v9) and amdgpu's `gfx_v9_0_mqd_init` write
/// it: `0xC0310800`.
pub const V9_MQD_HEADER: u32 = 0xC031_0800;

/// `CP_HQD_PQ_CONTROL.SLOT_BASED_WPTR` of an AQL queue (amdkfd's `update_mqd`: `2 <<
/// SLOT_BASED_WPTR__SHIFT`): the write pointer and doorbell count 64-byte packet slots, not
/// dwords.
pub const SLOT_BASED_WPTR_AQL: u32 = 2;

/// Bit fields of the `CP_HQD_*` register images (`gc_9_0_sh_mask.h`; amdkfd `cik_regs.h`'s
/// names where it keeps them).
pub mod cp_hqd {
    use crate::wire::Field;

    /// `CP_HQD_PQ_CONTROL.QUEUE_SIZE`: log2(ring size in dwords) - 1.
    pub const PQ_CONTROL_QUEUE_SIZE: Field = Field::new(0, 0, 6);
    /// `CP_HQD_PQ_CONTROL.RPTR_BLOCK_SIZE`: log2 of the read-pointer report block, dwords.
    pub const PQ_CONTROL_RPTR_BLOCK_SIZE: Field = Field::new(0, 8, 6);
    /// `CP_HQD_PQ_CONTROL.NO_UPDATE_RPTR`: the CP keeps no read pointer in memory of its own
    /// (AQL: `amd_queue_t.read_dispatch_id` is it).
    pub const PQ_CONTROL_NO_UPDATE_RPTR: Field = Field::new(0, 27, 1);
    /// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET`: the doorbell's dword offset in the
    /// doorbell aperture.
    pub const DOORBELL_OFFSET: Field = Field::new(0, 2, 26);
    /// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_EN`.
    pub const DOORBELL_EN: Field = Field::new(0, 30, 1);
    /// `CP_HQD_AQL_CONTROL.CONTROL0` (shift 0): amdkfd writes `1 << CONTROL0__SHIFT` for an
    /// AQL ring and leaves the dword 0 for PM4. Declared one bit wide, the bit amdkfd sets;
    /// [`super::V9Mqd::load_compute`] compares the whole dword with those two values, so a wider
    /// value (2, say) is refused rather than read as PM4.
    pub const AQL_CONTROL0: Field = Field::new(0, 0, 1);
    /// `CP_HQD_EOP_CONTROL.EOP_SIZE`: log2(EOP buffer dwords) - 1.
    pub const EOP_CONTROL_EOP_SIZE: Field = Field::new(0, 0, 6);
    /// `CP_HQD_PQ_CONTROL.QUEUE_FULL_EN` (bit 14).
    pub const PQ_CONTROL_QUEUE_FULL_EN: Field = Field::new(0, 14, 1);
    /// `CP_HQD_PQ_CONTROL.WPP_CLAMP_EN` (bit 16).
    pub const PQ_CONTROL_WPP_CLAMP_EN: Field = Field::new(0, 16, 1);
    /// `CP_HQD_PQ_CONTROL.SLOT_BASED_WPTR` (bits 25-26; amdkfd programs
    /// `2 << SLOT_BASED_WPTR__SHIFT` for AQL).
    pub const PQ_CONTROL_SLOT_BASED_WPTR: Field = Field::new(0, 25, 2);
    /// `CP_HQD_PQ_CONTROL.UNORD_DISPATCH` (bit 28).
    pub const PQ_CONTROL_UNORD_DISPATCH: Field = Field::new(0, 28, 1);
    /// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_BIF_DROP` (bit 1).
    pub const DOORBELL_BIF_DROP: Field = Field::new(0, 1, 1);
    /// `CP_HQD_PERSISTENT_STATE.PRELOAD_REQ` (bit 0).
    pub const PERSISTENT_STATE_PRELOAD_REQ: Field = Field::new(0, 0, 1);
    /// `CP_HQD_PERSISTENT_STATE.PRELOAD_SIZE` (bits 8-17).
    pub const PERSISTENT_STATE_PRELOAD_SIZE: Field = Field::new(0, 8, 10);
    /// `CP_HQD_PERSISTENT_STATE.QSWITCH_MODE` (bit 30).
    pub const PERSISTENT_STATE_QSWITCH_MODE: Field = Field::new(0, 30, 1);
    /// `CP_HQD_QUANTUM.QUANTUM_EN` (bit 0).
    pub const QUANTUM_EN: Field = Field::new(0, 0, 1);
    /// `CP_HQD_QUANTUM.QUANTUM_SCALE` (bit 4).
    pub const QUANTUM_SCALE: Field = Field::new(0, 4, 1);
    /// `CP_HQD_QUANTUM.QUANTUM_DURATION` (bits 8-13).
    pub const QUANTUM_DURATION: Field = Field::new(0, 8, 6);
    /// `CP_HQD_IB_CONTROL.MIN_IB_AVAIL_SIZE` (bits 20-21).
    pub const IB_CONTROL_MIN_IB_AVAIL_SIZE: Field = Field::new(0, 20, 2);
    /// `CP_HQD_IB_CONTROL.IB_EXE_DISABLE` (bit 23).
    pub const IB_CONTROL_IB_EXE_DISABLE: Field = Field::new(0, 23, 1);
    /// `CP_MQD_CONTROL.PRIV_STATE` (bit 8).
    pub const MQD_CONTROL_PRIV_STATE: Field = Field::new(0, 8, 1);
    /// `CP_HQD_PIPE_PRIORITY.PIPE_PRIORITY` (bits 0-1): [`super::PIPE_PRIORITY_MAP`]'s value.
    pub const PIPE_PRIORITY: Field = Field::new(0, 0, 2);
    /// `COMPUTE_PGM_RSRC2.TRAP_PRESENT` (bit 6).
    pub const PGM_RSRC2_TRAP_PRESENT: Field = Field::new(0, 6, 1);
}

/// `struct v9_mqd` (2048 bytes). Field names are the header's; each doc gives the dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct V9Mqd {
    /// Dword 0: MQD header (`0xC0310800` from amdkfd's `init_mqd`).
    pub header: u32,
    /// Dword 1: `compute_dispatch_initiator`.
    pub compute_dispatch_initiator: u32,
    /// Dword 2: `compute_dim_x`.
    pub compute_dim_x: u32,
    /// Dword 3: `compute_dim_y`.
    pub compute_dim_y: u32,
    /// Dword 4: `compute_dim_z`.
    pub compute_dim_z: u32,
    /// Dword 5: `compute_start_x`.
    pub compute_start_x: u32,
    /// Dword 6: `compute_start_y`.
    pub compute_start_y: u32,
    /// Dword 7: `compute_start_z`.
    pub compute_start_z: u32,
    /// Dword 8: `compute_num_thread_x`.
    pub compute_num_thread_x: u32,
    /// Dword 9: `compute_num_thread_y`.
    pub compute_num_thread_y: u32,
    /// Dword 10: `compute_num_thread_z`.
    pub compute_num_thread_z: u32,
    /// Dword 11: `compute_pipelinestat_enable`.
    pub compute_pipelinestat_enable: u32,
    /// Dword 12: `compute_perfcount_enable`.
    pub compute_perfcount_enable: u32,
    /// Dword 13: `compute_pgm_lo`.
    pub compute_pgm_lo: u32,
    /// Dword 14: `compute_pgm_hi`.
    pub compute_pgm_hi: u32,
    /// Dword 15: Trap handler code (TBA) >> 8, low 32 bits.
    pub compute_tba_lo: u32,
    /// Dword 16: `compute_tba_hi`.
    pub compute_tba_hi: u32,
    /// Dword 17: Trap handler memory (TMA) >> 8, low 32 bits.
    pub compute_tma_lo: u32,
    /// Dword 18: `compute_tma_hi`.
    pub compute_tma_hi: u32,
    /// Dword 19: `compute_pgm_rsrc1`.
    pub compute_pgm_rsrc1: u32,
    /// Dword 20: `compute_pgm_rsrc2`.
    pub compute_pgm_rsrc2: u32,
    /// Dword 21: `compute_vmid`.
    pub compute_vmid: u32,
    /// Dword 22: `compute_resource_limits`.
    pub compute_resource_limits: u32,
    /// Dword 23: CU enable mask of shader engine 0 (bit `cu + 16 * sh`).
    pub compute_static_thread_mgmt_se0: u32,
    /// Dword 24: CU enable mask of shader engine 1.
    pub compute_static_thread_mgmt_se1: u32,
    /// Dword 25: `compute_tmpring_size`.
    pub compute_tmpring_size: u32,
    /// Dword 26: CU enable mask of shader engine 2.
    pub compute_static_thread_mgmt_se2: u32,
    /// Dword 27: CU enable mask of shader engine 3.
    pub compute_static_thread_mgmt_se3: u32,
    /// Dword 28: `compute_restart_x`.
    pub compute_restart_x: u32,
    /// Dword 29: `compute_restart_y`.
    pub compute_restart_y: u32,
    /// Dword 30: `compute_restart_z`.
    pub compute_restart_z: u32,
    /// Dword 31: `compute_thread_trace_enable`.
    pub compute_thread_trace_enable: u32,
    /// Dword 32: `compute_misc_reserved`.
    pub compute_misc_reserved: u32,
    /// Dword 33: `compute_dispatch_id`.
    pub compute_dispatch_id: u32,
    /// Dword 34: `compute_threadgroup_id`.
    pub compute_threadgroup_id: u32,
    /// Dword 35: `compute_relaunch`.
    pub compute_relaunch: u32,
    /// Dword 36: `compute_wave_restore_addr_lo`.
    pub compute_wave_restore_addr_lo: u32,
    /// Dword 37: `compute_wave_restore_addr_hi`.
    pub compute_wave_restore_addr_hi: u32,
    /// Dword 38: `compute_wave_restore_control`.
    pub compute_wave_restore_control: u32,
    /// Dword 39: CU enable mask of shader engine 4. GC 9.4.3's multi-XCC MQD reads this
    /// dword as `compute_current_logic_xcc_id`.
    pub compute_static_thread_mgmt_se4: u32,
    /// Dword 40: CU enable mask of shader engine 5 (GC 9.4.3: `compute_restart_cg_tg_id`).
    pub compute_static_thread_mgmt_se5: u32,
    /// Dword 41: CU enable mask of shader engine 6 (GC 9.4.3: `compute_tg_chunk_size`).
    pub compute_static_thread_mgmt_se6: u32,
    /// Dword 42: CU enable mask of shader engine 7 (GC 9.4.3:
    /// `compute_restore_tg_chunk_size`).
    pub compute_static_thread_mgmt_se7: u32,
    /// Dwords 43..65: reserved (`reserved_43` .. `reserved_64`).
    pub reserved_43: [u32; 22],
    /// Dword 65: `compute_user_data_0`.
    pub compute_user_data_0: u32,
    /// Dword 66: `compute_user_data_1`.
    pub compute_user_data_1: u32,
    /// Dword 67: `compute_user_data_2`.
    pub compute_user_data_2: u32,
    /// Dword 68: `compute_user_data_3`.
    pub compute_user_data_3: u32,
    /// Dword 69: `compute_user_data_4`.
    pub compute_user_data_4: u32,
    /// Dword 70: `compute_user_data_5`.
    pub compute_user_data_5: u32,
    /// Dword 71: `compute_user_data_6`.
    pub compute_user_data_6: u32,
    /// Dword 72: `compute_user_data_7`.
    pub compute_user_data_7: u32,
    /// Dword 73: `compute_user_data_8`.
    pub compute_user_data_8: u32,
    /// Dword 74: `compute_user_data_9`.
    pub compute_user_data_9: u32,
    /// Dword 75: `compute_user_data_10`.
    pub compute_user_data_10: u32,
    /// Dword 76: `compute_user_data_11`.
    pub compute_user_data_11: u32,
    /// Dword 77: `compute_user_data_12`.
    pub compute_user_data_12: u32,
    /// Dword 78: `compute_user_data_13`.
    pub compute_user_data_13: u32,
    /// Dword 79: `compute_user_data_14`.
    pub compute_user_data_14: u32,
    /// Dword 80: `compute_user_data_15`.
    pub compute_user_data_15: u32,
    /// Dword 81: `cp_compute_csinvoc_count_lo`.
    pub cp_compute_csinvoc_count_lo: u32,
    /// Dword 82: `cp_compute_csinvoc_count_hi`.
    pub cp_compute_csinvoc_count_hi: u32,
    /// Dwords 83..86: reserved (`reserved_83` .. `reserved_85`).
    pub reserved_83: [u32; 3],
    /// Dword 86: `cp_mqd_query_time_lo`.
    pub cp_mqd_query_time_lo: u32,
    /// Dword 87: `cp_mqd_query_time_hi`.
    pub cp_mqd_query_time_hi: u32,
    /// Dword 88: `cp_mqd_connect_start_time_lo`.
    pub cp_mqd_connect_start_time_lo: u32,
    /// Dword 89: `cp_mqd_connect_start_time_hi`.
    pub cp_mqd_connect_start_time_hi: u32,
    /// Dword 90: `cp_mqd_connect_end_time_lo`.
    pub cp_mqd_connect_end_time_lo: u32,
    /// Dword 91: `cp_mqd_connect_end_time_hi`.
    pub cp_mqd_connect_end_time_hi: u32,
    /// Dword 92: `cp_mqd_connect_end_wf_count`.
    pub cp_mqd_connect_end_wf_count: u32,
    /// Dword 93: `cp_mqd_connect_end_pq_rptr`.
    pub cp_mqd_connect_end_pq_rptr: u32,
    /// Dword 94: `cp_mqd_connect_end_pq_wptr`.
    pub cp_mqd_connect_end_pq_wptr: u32,
    /// Dword 95: `cp_mqd_connect_end_ib_rptr`.
    pub cp_mqd_connect_end_ib_rptr: u32,
    /// Dword 96: `cp_mqd_readindex_lo`.
    pub cp_mqd_readindex_lo: u32,
    /// Dword 97: `cp_mqd_readindex_hi`.
    pub cp_mqd_readindex_hi: u32,
    /// Dword 98: `cp_mqd_save_start_time_lo`.
    pub cp_mqd_save_start_time_lo: u32,
    /// Dword 99: `cp_mqd_save_start_time_hi`.
    pub cp_mqd_save_start_time_hi: u32,
    /// Dword 100: `cp_mqd_save_end_time_lo`.
    pub cp_mqd_save_end_time_lo: u32,
    /// Dword 101: `cp_mqd_save_end_time_hi`.
    pub cp_mqd_save_end_time_hi: u32,
    /// Dword 102: `cp_mqd_restore_start_time_lo`.
    pub cp_mqd_restore_start_time_lo: u32,
    /// Dword 103: `cp_mqd_restore_start_time_hi`.
    pub cp_mqd_restore_start_time_hi: u32,
    /// Dword 104: `cp_mqd_restore_end_time_lo`.
    pub cp_mqd_restore_end_time_lo: u32,
    /// Dword 105: `cp_mqd_restore_end_time_hi`.
    pub cp_mqd_restore_end_time_hi: u32,
    /// Dword 106: `disable_queue`.
    pub disable_queue: u32,
    /// Dword 107: reserved (`reserved_107`).
    pub reserved_107: [u32; 1],
    /// Dword 108: `gds_cs_ctxsw_cnt0`.
    pub gds_cs_ctxsw_cnt0: u32,
    /// Dword 109: `gds_cs_ctxsw_cnt1`.
    pub gds_cs_ctxsw_cnt1: u32,
    /// Dword 110: `gds_cs_ctxsw_cnt2`.
    pub gds_cs_ctxsw_cnt2: u32,
    /// Dword 111: `gds_cs_ctxsw_cnt3`.
    pub gds_cs_ctxsw_cnt3: u32,
    /// Dwords 112..114: reserved (`reserved_112` .. `reserved_113`).
    pub reserved_112: [u32; 2],
    /// Dword 114: `cp_pq_exe_status_lo`.
    pub cp_pq_exe_status_lo: u32,
    /// Dword 115: `cp_pq_exe_status_hi`.
    pub cp_pq_exe_status_hi: u32,
    /// Dword 116: `cp_packet_id_lo`.
    pub cp_packet_id_lo: u32,
    /// Dword 117: `cp_packet_id_hi`.
    pub cp_packet_id_hi: u32,
    /// Dword 118: `cp_packet_exe_status_lo`.
    pub cp_packet_exe_status_lo: u32,
    /// Dword 119: `cp_packet_exe_status_hi`.
    pub cp_packet_exe_status_hi: u32,
    /// Dword 120: `gds_save_base_addr_lo`.
    pub gds_save_base_addr_lo: u32,
    /// Dword 121: `gds_save_base_addr_hi`.
    pub gds_save_base_addr_hi: u32,
    /// Dword 122: `gds_save_mask_lo`.
    pub gds_save_mask_lo: u32,
    /// Dword 123: `gds_save_mask_hi`.
    pub gds_save_mask_hi: u32,
    /// Dword 124: `ctx_save_base_addr_lo`.
    pub ctx_save_base_addr_lo: u32,
    /// Dword 125: `ctx_save_base_addr_hi`.
    pub ctx_save_base_addr_hi: u32,
    /// Dword 126: `dynamic_cu_mask_addr_lo`.
    pub dynamic_cu_mask_addr_lo: u32,
    /// Dword 127: `dynamic_cu_mask_addr_hi`.
    pub dynamic_cu_mask_addr_hi: u32,
    /// Dword 128: The MQD's own GPU address, low 32 bits (4-byte aligned).
    pub cp_mqd_base_addr_lo: u32,
    /// Dword 129: The MQD's own GPU address, high 32 bits.
    pub cp_mqd_base_addr_hi: u32,
    /// Dword 130: Whether the HQD is active (the CP's copy).
    pub cp_hqd_active: u32,
    /// Dword 131: The queue's VMID.
    pub cp_hqd_vmid: u32,
    /// Dword 132: `PRELOAD_REQ` | `PRELOAD_SIZE` ...
    pub cp_hqd_persistent_state: u32,
    /// Dword 133: The pipe priority.
    pub cp_hqd_pipe_priority: u32,
    /// Dword 134: The queue priority (0..15).
    pub cp_hqd_queue_priority: u32,
    /// Dword 135: `QUANTUM_EN` | `QUANTUM_SCALE` | `QUANTUM_DURATION`.
    pub cp_hqd_quantum: u32,
    /// Dword 136: The ring's GPU address >> 8, low 32 bits.
    pub cp_hqd_pq_base_lo: u32,
    /// Dword 137: The ring's GPU address >> 8, high 32 bits.
    pub cp_hqd_pq_base_hi: u32,
    /// Dword 138: `cp_hqd_pq_rptr`.
    pub cp_hqd_pq_rptr: u32,
    /// Dword 139: Where the CP reports the read pointer, low 32 bits.
    pub cp_hqd_pq_rptr_report_addr_lo: u32,
    /// Dword 140: Where the CP reports the read pointer, high 32 bits.
    pub cp_hqd_pq_rptr_report_addr_hi: u32,
    /// Dword 141: Where the CP polls the write pointer, low 32 bits.
    pub cp_hqd_pq_wptr_poll_addr_lo: u32,
    /// Dword 142: Where the CP polls the write pointer, high 32 bits.
    pub cp_hqd_pq_wptr_poll_addr_hi: u32,
    /// Dword 143: `DOORBELL_OFFSET` (dwords) << 2 | `DOORBELL_EN` (bit 30) ...
    pub cp_hqd_pq_doorbell_control: u32,
    /// Dword 144: reserved (`reserved_144`).
    pub reserved_144: [u32; 1],
    /// Dword 145: `QUEUE_SIZE` (log2(ring dwords) - 1) | `RPTR_BLOCK_SIZE` << 8 | `NO_UPDATE_RPTR` (bit 27) ...
    pub cp_hqd_pq_control: u32,
    /// Dword 146: `cp_hqd_ib_base_addr_lo`.
    pub cp_hqd_ib_base_addr_lo: u32,
    /// Dword 147: `cp_hqd_ib_base_addr_hi`.
    pub cp_hqd_ib_base_addr_hi: u32,
    /// Dword 148: `cp_hqd_ib_rptr`.
    pub cp_hqd_ib_rptr: u32,
    /// Dword 149: `cp_hqd_ib_control`.
    pub cp_hqd_ib_control: u32,
    /// Dword 150: `cp_hqd_iq_timer`.
    pub cp_hqd_iq_timer: u32,
    /// Dword 151: `cp_hqd_iq_rptr`.
    pub cp_hqd_iq_rptr: u32,
    /// Dword 152: `cp_hqd_dequeue_request`.
    pub cp_hqd_dequeue_request: u32,
    /// Dword 153: `cp_hqd_dma_offload`.
    pub cp_hqd_dma_offload: u32,
    /// Dword 154: `cp_hqd_sema_cmd`.
    pub cp_hqd_sema_cmd: u32,
    /// Dword 155: `cp_hqd_msg_type`.
    pub cp_hqd_msg_type: u32,
    /// Dword 156: `cp_hqd_atomic0_preop_lo`.
    pub cp_hqd_atomic0_preop_lo: u32,
    /// Dword 157: `cp_hqd_atomic0_preop_hi`.
    pub cp_hqd_atomic0_preop_hi: u32,
    /// Dword 158: `cp_hqd_atomic1_preop_lo`.
    pub cp_hqd_atomic1_preop_lo: u32,
    /// Dword 159: `cp_hqd_atomic1_preop_hi`.
    pub cp_hqd_atomic1_preop_hi: u32,
    /// Dword 160: `cp_hqd_hq_status0`.
    pub cp_hqd_hq_status0: u32,
    /// Dword 161: `cp_hqd_hq_control0`.
    pub cp_hqd_hq_control0: u32,
    /// Dword 162: `cp_mqd_control`.
    pub cp_mqd_control: u32,
    /// Dword 163: `cp_hqd_hq_status1`.
    pub cp_hqd_hq_status1: u32,
    /// Dword 164: `cp_hqd_hq_control1`.
    pub cp_hqd_hq_control1: u32,
    /// Dword 165: The EOP buffer's GPU address >> 8, low 32 bits.
    pub cp_hqd_eop_base_addr_lo: u32,
    /// Dword 166: The EOP buffer's GPU address >> 8, high 32 bits.
    pub cp_hqd_eop_base_addr_hi: u32,
    /// Dword 167: `EOP_SIZE`: log2(EOP dwords) - 1, at most 0xA on gfx9.
    pub cp_hqd_eop_control: u32,
    /// Dword 168: `cp_hqd_eop_rptr`.
    pub cp_hqd_eop_rptr: u32,
    /// Dword 169: `cp_hqd_eop_wptr`.
    pub cp_hqd_eop_wptr: u32,
    /// Dword 170: `cp_hqd_eop_done_events`.
    pub cp_hqd_eop_done_events: u32,
    /// Dword 171: The context-save (CWSR) area's GPU address, low 32 bits.
    pub cp_hqd_ctx_save_base_addr_lo: u32,
    /// Dword 172: The context-save area's GPU address, high 32 bits.
    pub cp_hqd_ctx_save_base_addr_hi: u32,
    /// Dword 173: `cp_hqd_ctx_save_control`.
    pub cp_hqd_ctx_save_control: u32,
    /// Dword 174: `cp_hqd_cntl_stack_offset`.
    pub cp_hqd_cntl_stack_offset: u32,
    /// Dword 175: `cp_hqd_cntl_stack_size`.
    pub cp_hqd_cntl_stack_size: u32,
    /// Dword 176: `cp_hqd_wg_state_offset`.
    pub cp_hqd_wg_state_offset: u32,
    /// Dword 177: `cp_hqd_ctx_save_size`.
    pub cp_hqd_ctx_save_size: u32,
    /// Dword 178: `cp_hqd_gds_resource_state`.
    pub cp_hqd_gds_resource_state: u32,
    /// Dword 179: `cp_hqd_error`.
    pub cp_hqd_error: u32,
    /// Dword 180: `cp_hqd_eop_wptr_mem`.
    pub cp_hqd_eop_wptr_mem: u32,
    /// Dword 181: `CONTROL0` = 1: the ring holds AQL packets.
    pub cp_hqd_aql_control: u32,
    /// Dword 182: `cp_hqd_pq_wptr_lo`.
    pub cp_hqd_pq_wptr_lo: u32,
    /// Dword 183: `cp_hqd_pq_wptr_hi`.
    pub cp_hqd_pq_wptr_hi: u32,
    /// Dwords 184..192: reserved (`reserved_184` .. `reserved_191`).
    pub reserved_184: [u32; 8],
    /// Dword 192: `iqtimer_pkt_header`.
    pub iqtimer_pkt_header: u32,
    /// Dword 193: `iqtimer_pkt_dw0`.
    pub iqtimer_pkt_dw0: u32,
    /// Dword 194: `iqtimer_pkt_dw1`.
    pub iqtimer_pkt_dw1: u32,
    /// Dword 195: `iqtimer_pkt_dw2`.
    pub iqtimer_pkt_dw2: u32,
    /// Dword 196: `iqtimer_pkt_dw3`.
    pub iqtimer_pkt_dw3: u32,
    /// Dword 197: `iqtimer_pkt_dw4`.
    pub iqtimer_pkt_dw4: u32,
    /// Dword 198: `iqtimer_pkt_dw5`.
    pub iqtimer_pkt_dw5: u32,
    /// Dword 199: `iqtimer_pkt_dw6`.
    pub iqtimer_pkt_dw6: u32,
    /// Dword 200: `iqtimer_pkt_dw7`.
    pub iqtimer_pkt_dw7: u32,
    /// Dword 201: `iqtimer_pkt_dw8`.
    pub iqtimer_pkt_dw8: u32,
    /// Dword 202: `iqtimer_pkt_dw9`.
    pub iqtimer_pkt_dw9: u32,
    /// Dword 203: `iqtimer_pkt_dw10`.
    pub iqtimer_pkt_dw10: u32,
    /// Dword 204: `iqtimer_pkt_dw11`.
    pub iqtimer_pkt_dw11: u32,
    /// Dword 205: `iqtimer_pkt_dw12`.
    pub iqtimer_pkt_dw12: u32,
    /// Dword 206: `iqtimer_pkt_dw13`.
    pub iqtimer_pkt_dw13: u32,
    /// Dword 207: `iqtimer_pkt_dw14`.
    pub iqtimer_pkt_dw14: u32,
    /// Dword 208: `iqtimer_pkt_dw15`.
    pub iqtimer_pkt_dw15: u32,
    /// Dword 209: `iqtimer_pkt_dw16`.
    pub iqtimer_pkt_dw16: u32,
    /// Dword 210: `iqtimer_pkt_dw17`.
    pub iqtimer_pkt_dw17: u32,
    /// Dword 211: `iqtimer_pkt_dw18`.
    pub iqtimer_pkt_dw18: u32,
    /// Dword 212: `iqtimer_pkt_dw19`.
    pub iqtimer_pkt_dw19: u32,
    /// Dword 213: `iqtimer_pkt_dw20`.
    pub iqtimer_pkt_dw20: u32,
    /// Dword 214: `iqtimer_pkt_dw21`.
    pub iqtimer_pkt_dw21: u32,
    /// Dword 215: `iqtimer_pkt_dw22`.
    pub iqtimer_pkt_dw22: u32,
    /// Dword 216: `iqtimer_pkt_dw23`.
    pub iqtimer_pkt_dw23: u32,
    /// Dword 217: `iqtimer_pkt_dw24`.
    pub iqtimer_pkt_dw24: u32,
    /// Dword 218: `iqtimer_pkt_dw25`.
    pub iqtimer_pkt_dw25: u32,
    /// Dword 219: `iqtimer_pkt_dw26`.
    pub iqtimer_pkt_dw26: u32,
    /// Dword 220: `iqtimer_pkt_dw27`.
    pub iqtimer_pkt_dw27: u32,
    /// Dword 221: `iqtimer_pkt_dw28`.
    pub iqtimer_pkt_dw28: u32,
    /// Dword 222: `iqtimer_pkt_dw29`.
    pub iqtimer_pkt_dw29: u32,
    /// Dword 223: `iqtimer_pkt_dw30`.
    pub iqtimer_pkt_dw30: u32,
    /// Dword 224: `iqtimer_pkt_dw31`.
    pub iqtimer_pkt_dw31: u32,
    /// Dword 225: reserved before GC 9.4.3; `pm4_target_xcc_in_xcp` there (the XCC of its
    /// partition a PM4 queue's packets run on).
    pub pm4_target_xcc_in_xcp: u32,
    /// Dword 226: reserved before GC 9.4.3; `cp_mqd_stride_size` there (bytes from one XCC's
    /// MQD of the queue to the next).
    pub cp_mqd_stride_size: u32,
    /// Dword 227: reserved (`reserved_227`).
    pub reserved_227: u32,
    /// Dword 228: `set_resources_header`.
    pub set_resources_header: u32,
    /// Dword 229: `set_resources_dw1`.
    pub set_resources_dw1: u32,
    /// Dword 230: `set_resources_dw2`.
    pub set_resources_dw2: u32,
    /// Dword 231: `set_resources_dw3`.
    pub set_resources_dw3: u32,
    /// Dword 232: `set_resources_dw4`.
    pub set_resources_dw4: u32,
    /// Dword 233: `set_resources_dw5`.
    pub set_resources_dw5: u32,
    /// Dword 234: `set_resources_dw6`.
    pub set_resources_dw6: u32,
    /// Dword 235: `set_resources_dw7`.
    pub set_resources_dw7: u32,
    /// Dwords 236..240: reserved (`reserved_236` .. `reserved_239`).
    pub reserved_236: [u32; 4],
    /// Dword 240: `queue_doorbell_id0`.
    pub queue_doorbell_id0: u32,
    /// Dword 241: `queue_doorbell_id1`.
    pub queue_doorbell_id1: u32,
    /// Dword 242: `queue_doorbell_id2`.
    pub queue_doorbell_id2: u32,
    /// Dword 243: `queue_doorbell_id3`.
    pub queue_doorbell_id3: u32,
    /// Dword 244: `queue_doorbell_id4`.
    pub queue_doorbell_id4: u32,
    /// Dword 245: `queue_doorbell_id5`.
    pub queue_doorbell_id5: u32,
    /// Dword 246: `queue_doorbell_id6`.
    pub queue_doorbell_id6: u32,
    /// Dword 247: `queue_doorbell_id7`.
    pub queue_doorbell_id7: u32,
    /// Dword 248: `queue_doorbell_id8`.
    pub queue_doorbell_id8: u32,
    /// Dword 249: `queue_doorbell_id9`.
    pub queue_doorbell_id9: u32,
    /// Dword 250: `queue_doorbell_id10`.
    pub queue_doorbell_id10: u32,
    /// Dword 251: `queue_doorbell_id11`.
    pub queue_doorbell_id11: u32,
    /// Dword 252: `queue_doorbell_id12`.
    pub queue_doorbell_id12: u32,
    /// Dword 253: `queue_doorbell_id13`.
    pub queue_doorbell_id13: u32,
    /// Dword 254: `queue_doorbell_id14`.
    pub queue_doorbell_id14: u32,
    /// Dword 255: `queue_doorbell_id15`.
    pub queue_doorbell_id15: u32,
    /// Dwords 256..512: reserved (`reserved_256` .. `reserved_511`).
    pub reserved_256: [u32; 256],
}

impl Default for V9Mqd {
    fn default() -> V9Mqd {
        V9Mqd::new_zeroed()
    }
}

impl V9Mqd {
    /// The MQD as its 512 dwords.
    pub fn dwords(&self) -> [u32; V9_MQD_DWORDS] {
        zerocopy::transmute!(*self)
    }

    /// The MQD whose dwords are `d`.
    pub fn from_dwords(d: [u32; V9_MQD_DWORDS]) -> V9Mqd {
        zerocopy::transmute!(d)
    }

    /// The ring's GPU address (`cp_hqd_pq_base_hi:lo << 8`; bits 24-31 of
    /// `cp_hqd_pq_base_hi` fall off the top: [`V9Mqd::load_compute`] refuses an MQD with any
    /// of bits 8-31 set).
    pub fn pq_base(&self) -> u64 {
        join(self.cp_hqd_pq_base_lo, self.cp_hqd_pq_base_hi) << 8
    }

    /// The ring's size in bytes from `CP_HQD_PQ_CONTROL.QUEUE_SIZE` (`4 << (QUEUE_SIZE + 1)`,
    /// that is `2^(QUEUE_SIZE + 3)`); `None` for a `QUEUE_SIZE` of 61..=63, whose ring of
    /// 2^64 bytes or more no `u64` holds (amdkfd programs at most [`QUEUE_SIZE_MAX`]).
    pub fn pq_size_bytes(&self) -> Option<u64> {
        1u64.checked_shl(cp_hqd::PQ_CONTROL_QUEUE_SIZE.get(&[self.cp_hqd_pq_control]) + 3)
    }

    /// Where the CP reports the read pointer.
    pub fn rptr_report_addr(&self) -> u64 {
        join(
            self.cp_hqd_pq_rptr_report_addr_lo,
            self.cp_hqd_pq_rptr_report_addr_hi,
        )
    }

    /// Where the CP polls the write pointer.
    pub fn wptr_poll_addr(&self) -> u64 {
        join(
            self.cp_hqd_pq_wptr_poll_addr_lo,
            self.cp_hqd_pq_wptr_poll_addr_hi,
        )
    }

    /// The doorbell's dword offset, when `DOORBELL_EN` is set.
    pub fn doorbell_dword_offset(&self) -> Option<u32> {
        let d = [self.cp_hqd_pq_doorbell_control];
        (cp_hqd::DOORBELL_EN.get(&d) != 0).then(|| cp_hqd::DOORBELL_OFFSET.get(&d))
    }

    /// The EOP buffer's GPU address (`cp_hqd_eop_base_addr_hi:lo << 8`).
    pub fn eop_base(&self) -> u64 {
        join(self.cp_hqd_eop_base_addr_lo, self.cp_hqd_eop_base_addr_hi) << 8
    }
}

/// `value` as the (low, high) 32-bit halves a `_lo`/`_hi` register pair holds (the kernel's
/// `lower_32_bits`, `upper_32_bits`).
pub const fn split(value: u64) -> (u32, u32) {
    (value as u32, (value >> 32) as u32)
}

/// The 64-bit value of a `_lo`/`_hi` register pair.
pub const fn join(lo: u32, hi: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

/// What amdkfd's v9 MQD manager reads of a user compute queue (its `struct queue_properties`,
/// as CREATE_QUEUE and UPDATE_QUEUE set it) to fill a [`V9Mqd`] ([`V9Mqd::amdkfd_compute`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComputeQueueProperties {
    /// `KFD_QUEUE_FORMAT_AQL` (true) or PM4 (false).
    pub aql: bool,
    /// GPU address of the ring (`queue_address`); the MQD keeps it >> 8.
    pub queue_address: u64,
    /// Ring size, bytes (`queue_size`): a power of two.
    pub queue_size_bytes: u64,
    /// Where the CP reports the read pointer (`read_ptr`).
    pub read_ptr: u64,
    /// Where the CP polls the write pointer (`write_ptr`).
    pub write_ptr: u64,
    /// The doorbell's dword offset in the doorbell aperture (`doorbell_off`).
    pub doorbell_off: u32,
    /// GPU address of the EOP buffer (`eop_ring_buffer_address`).
    pub eop_address: u64,
    /// EOP buffer size, bytes (`eop_ring_buffer_size`, a `u32` in amdkfd: CREATE_QUEUE's
    /// 64-bit `eop_buffer_size` is truncated to it; 0: none).
    pub eop_size_bytes: u32,
    /// Queue priority, 0..=15 (`priority`).
    pub priority: u32,
    /// The queue's VMID (`vmid`). Under the hardware scheduler (HWS, amdkfd's default
    /// `sched_policy`) `create_queue_cpsch` never sets it: 0, the HWS picks the VMID when it
    /// maps the process. Only the no-HWS path (`create_queue_nocpsch`) puts one here.
    pub vmid: u32,
    /// Whether the queue has a first-level trap handler (`tba_addr != 0`). On a dGPU with
    /// CWSR, `kfd_process_device_init_cwsr_dgpu` sets `tba_addr` to the CWSR trap handler's
    /// address for every process, so every queue has one (SET_TRAP_HANDLER's handler becomes
    /// the second level, recorded in the first level's TMA).
    pub trap_handler: bool,
    /// The context save/restore (CWSR) area, when CWSR is enabled and the queue has one.
    pub ctx_save: Option<CtxSaveArea>,
    /// The MQD's own GPU address (`mqd_mem_obj->gpu_addr`).
    pub mqd_address: u64,
}

/// A queue's context save/restore area (`ctx_save_restore_area_address`, `_size`,
/// `ctl_stack_size` of CREATE_QUEUE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxSaveArea {
    /// GPU address of the area.
    pub address: u64,
    /// Size of the area, bytes.
    pub size_bytes: u32,
    /// Size of its control stack, bytes.
    pub ctl_stack_size_bytes: u32,
}

/// `pipe_priority_map` (amdkfd `kfd_mqd_manager.c`): the `CP_HQD_PIPE_PRIORITY` of each queue
/// priority 0..=15: `KFD_PIPE_PRIORITY_CS_LOW` (0) for 0..=6, `_MEDIUM` (1) for 7..=10,
/// `_HIGH` (2) for 11..=15.
pub const PIPE_PRIORITY_MAP: [u32; 16] = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2];

/// `order_base_2(n)` of the kernel: the smallest `k` with `2^k >= n` (0 for 0 and 1).
const fn order_base_2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// `cp_hqd_eop_control` as amdkfd's `update_mqd` (v9, as in linux v7.0)
/// computes it from the EOP buffer size in bytes (`eop_ring_buffer_size`, a `u32`):
/// `size ? min(0xA, order_base_2(size / 4) - 1) : 0`, in C `int` arithmetic. So 12 bytes
/// give 1 (order_base_2(3) = 2), 20 give 2, 4096 give 9, 8192 and more 0xA; a size of 1..=7
/// bytes gives `order_base_2(0 or 1) - 1 = -1`, which amdkfd stores as the dword
/// 0xFFFF_FFFF (`EOP_SIZE` 0x3F and every reserved bit set: garbage the CP was never meant
/// to get). This function returns that same 0xFFFF_FFFF; [`V9Mqd::load_compute`] refuses
/// it (`EOP_SIZE` past [`EOP_SIZE_MAX`]), where the hardware would take it.
///
/// Kernels with `kfd_queue.c`'s `kfd_queue_acquire_buffers` (v7.0 has it) also refuse, at
/// CREATE_QUEUE with an EOP buffer address, any size but the node's `eop_buffer_size` (4096 on gfx9) with `EINVAL`;
/// sizes other than 4096 reach this formula only with a null EOP address.
pub const fn eop_control(eop_size_bytes: u32) -> u32 {
    if eop_size_bytes == 0 {
        return 0;
    }
    // order_base_2 returns an int; `- 1` and min() stay in int.
    let order = order_base_2((eop_size_bytes / 4) as u64) as i32 - 1;
    let v = if order < EOP_SIZE_MAX as i32 {
        order
    } else {
        EOP_SIZE_MAX as i32
    };
    v as u32
}

/// Writes the register images of a compute queue's ring, pointers, doorbell and EOP buffer
/// into `m`, as amdkfd's `update_mqd` (v9) does, keeping `cp_hqd_pq_control`'s other bits:
/// `cp_hqd_pq_base_lo/hi` = ring >> 8; `CP_HQD_PQ_CONTROL.QUEUE_SIZE` =
/// `order_base_2(ring bytes / 4) - 1`; the read-pointer report and write-pointer poll
/// addresses; `cp_hqd_pq_doorbell_control` = `doorbell_dword << 2` (nothing else: amdkfd's
/// `update_mqd` rewrites the dword); `cp_hqd_eop_base_addr_lo/hi` = EOP >> 8;
/// `cp_hqd_eop_control` = [`eop_control`]`(eop_size_bytes)`.
///
/// The bare-metal backend's `ComputeMqd` and [`V9Mqd::amdkfd_compute`] both fill these
/// fields here. The caller checks the ring size: for a ring under 8 bytes the kernel's
/// `order_base_2(size / 4) - 1` is the `int` -1, which amdkfd ORs into the whole
/// `cp_hqd_pq_control` (0xFFFF_FFFF); here only `QUEUE_SIZE` takes its low 6 bits (0x3F),
/// the dword's other bits kept. amdkfd never gets there: CREATE_QUEUE raises a ring under
/// 1 KiB to 1 KiB.
#[allow(clippy::too_many_arguments)]
pub fn write_queue_registers(
    m: &mut V9Mqd,
    ring: u64,
    ring_size_bytes: u64,
    read_ptr: u64,
    write_ptr: u64,
    doorbell_dword: u32,
    eop: u64,
    eop_size_bytes: u32,
) {
    let size = order_base_2(ring_size_bytes / 4).wrapping_sub(1);
    m.cp_hqd_pq_control = cp_hqd::PQ_CONTROL_QUEUE_SIZE.with(m.cp_hqd_pq_control, size);
    (m.cp_hqd_pq_base_lo, m.cp_hqd_pq_base_hi) = split(ring >> 8);
    (
        m.cp_hqd_pq_rptr_report_addr_lo,
        m.cp_hqd_pq_rptr_report_addr_hi,
    ) = split(read_ptr);
    (m.cp_hqd_pq_wptr_poll_addr_lo, m.cp_hqd_pq_wptr_poll_addr_hi) = split(write_ptr);
    // Unmasked, as the kernel's `doorbell_off << DOORBELL_OFFSET__SHIFT`.
    m.cp_hqd_pq_doorbell_control = doorbell_dword << cp_hqd::DOORBELL_OFFSET.shift;
    m.cp_hqd_eop_control = eop_control(eop_size_bytes);
    (m.cp_hqd_eop_base_addr_lo, m.cp_hqd_eop_base_addr_hi) = split(eop >> 8);
}

/// What a command processor takes from a compute queue's MQD when it maps the queue
/// ([`V9Mqd::load_compute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HqdQueue {
    /// GPU address of the ring (`cp_hqd_pq_base << 8`).
    pub ring: u64,
    /// Ring size, bytes (`4 << (QUEUE_SIZE + 1)`).
    pub ring_size_bytes: u64,
    /// Where the CP reports the read pointer (AQL: `amd_queue_t.read_dispatch_id`).
    pub read_ptr: u64,
    /// Where the CP polls the write pointer (AQL: `amd_queue_t.write_dispatch_id`).
    pub write_ptr: u64,
    /// The doorbell's dword offset in the doorbell aperture (`DOORBELL_OFFSET`).
    pub doorbell_dword: u32,
    /// Whether the ring holds AQL packets (`CP_HQD_AQL_CONTROL.CONTROL0`).
    pub aql: bool,
}

/// Smallest `CP_HQD_PQ_CONTROL.QUEUE_SIZE` amdkfd programs: 7 (a 1 KiB ring,
/// `KFD_MIN_QUEUE_RING_SIZE`, is 256 dwords).
pub const QUEUE_SIZE_MIN: u32 = 7;
/// Largest `CP_HQD_PQ_CONTROL.QUEUE_SIZE` amdkfd programs: 28 (CREATE_QUEUE's ring size is a
/// 32-bit power of two: at most 2 GiB, 2^29 dwords).
pub const QUEUE_SIZE_MAX: u32 = 28;
/// Largest `CP_HQD_EOP_CONTROL.EOP_SIZE` amdkfd programs for an EOP buffer of 8 bytes or
/// more: its `update_mqd` clamps to 0xA (2048 dwords), the per-SE EOP-done count being 8 bits
/// (`kfd_mqd_manager_v9.c`'s comment).
pub const EOP_SIZE_MAX: u32 = 0xA;

/// Whether a GPU of `gfx_target_version` gives each queue one MQD per XCC of its partition:
/// GC 9.4.3 (gfx940, gfx941, gfx942; GC 9.4.4 is also gfx942) and 9.5.0 (gfx950), whose
/// queues amdkfd makes with `init_mqd_v9_4_3` ([`V9Mqd::amdkfd_xcc`]).
pub const fn has_xcc_mqds(gfx_target_version: u32) -> bool {
    matches!(gfx_target_version, 90400..=90402 | 90500)
}

/// `sizeof(struct v9_mqd)`, bytes: amdkfd's per-XCC MQD stride without CWSR.
pub const V9_MQD_BYTES: u32 = 2048;

/// Which of a queue's per-XCC MQDs an image is, on a GPU [`has_xcc_mqds`] names: the queue
/// has one MQD per XCC of its partition, `stride_bytes` apart from XCC 0's, each loaded on its
/// XCC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XccMqd {
    /// This XCC within the partition: 0 is the master XCC, whose CP reports the read pointer.
    pub index: u32,
    /// XCCs in the partition (`NUM_XCC(xcc_mask)`; the node's `num_xcc`): 1 to 8.
    pub count: u32,
    /// amdkfd's `current_logical_xcc_start` when the queue was made (it counts up by one per
    /// queue of the node): XCC `index` gets logical id `(logical_start + index) % count`
    /// (`compute_current_logic_xcc_id`), spreading queues' first work-groups over the XCCs.
    pub logical_start: u32,
    /// Bytes from one XCC's MQD to the next (`cp_mqd_stride_size`, amdkfd's `mqd_stride_v9`):
    /// [`V9_MQD_BYTES`] without CWSR, the control stack page-aligned plus a page with it; a
    /// multiple of 256 of at least 2048.
    pub stride_bytes: u32,
}

impl XccMqd {
    /// # Errors
    /// `Status::InvalidQueueCreation` for a count outside 1..=8, an index not below it, or a
    /// stride under 2048 bytes or not a multiple of 256.
    pub fn check(&self) -> crate::Result<()> {
        let bad = crate::Status::InvalidQueueCreation;
        if !(1..=8).contains(&self.count) || self.index >= self.count {
            crate::bail!(
                bad,
                "XCC {} of {}: the count is not 1..=8 or the index not below it",
                self.index,
                self.count
            );
        }
        if self.stride_bytes < V9_MQD_BYTES || self.stride_bytes % 256 != 0 {
            crate::bail!(
                bad,
                "MQD stride {:#x} is under 2048 bytes or not a multiple of 256",
                self.stride_bytes
            );
        }
        Ok(())
    }
}

/// The dwords of `compute_static_thread_mgmt_se0..7` (`v9_structs.h`), engine order: the one
/// list [`V9Mqd::set_cu_masks`] and [`V9Mqd::cu_masks`] go through.
pub const CU_MASK_DWORDS: [usize; 8] = [23, 24, 26, 27, 39, 40, 41, 42];

impl V9Mqd {
    /// The MQD amdkfd makes for the user compute queue `p` on a gfx9 GPU other than GC 9.4.3,
    /// 9.4.4 and 9.5.0 (whose multi-XCC MQDs differ): `init_mqd` then `update_mqd` of
    /// `kfd_mqd_manager_v9.c`, with no CU mask given yet. `init_mqd`: `header` 0xC0310800,
    /// `compute_pipelinestat_enable` 1, every `compute_static_thread_mgmt_se0..7` all ones,
    /// `cp_hqd_persistent_state` = `PRELOAD_REQ` | 0x53 << `PRELOAD_SIZE` (| `QSWITCH_MODE`
    /// with a context save area), `cp_hqd_pq_control` = 5 << `RPTR_BLOCK_SIZE` |
    /// `UNORD_DISPATCH`, `cp_mqd_control` = `PRIV_STATE`, the MQD's own address,
    /// `cp_hqd_quantum` = `QUANTUM_EN` | `QUANTUM_SCALE` 1 | `QUANTUM_DURATION` 1,
    /// `cp_hqd_hq_status0` bit 14 (the CP sets up the dispatch pointer), `CP_HQD_AQL_CONTROL
    /// .CONTROL0` for AQL, `COMPUTE_PGM_RSRC2.TRAP_PRESENT` with a trap handler, and the
    /// context save area's address, size and control stack size (offsets = size). Then
    /// [`V9Mqd::amdkfd_update_compute`].
    pub fn amdkfd_compute(p: &ComputeQueueProperties) -> V9Mqd {
        use cp_hqd::*;
        let mut m = V9Mqd {
            header: V9_MQD_HEADER,
            compute_pipelinestat_enable: 1,
            ..V9Mqd::default()
        };
        m.set_cu_masks([u32::MAX; 8]);
        m.cp_hqd_persistent_state =
            PERSISTENT_STATE_PRELOAD_SIZE.with(PERSISTENT_STATE_PRELOAD_REQ.with(0, 1), 0x53);
        m.cp_hqd_pq_control =
            PQ_CONTROL_UNORD_DISPATCH.with(PQ_CONTROL_RPTR_BLOCK_SIZE.with(0, 5), 1);
        m.cp_mqd_control = MQD_CONTROL_PRIV_STATE.with(0, 1);
        (m.cp_mqd_base_addr_lo, m.cp_mqd_base_addr_hi) = split(p.mqd_address);
        m.cp_hqd_quantum = QUANTUM_DURATION.with(QUANTUM_SCALE.with(QUANTUM_EN.with(0, 1), 1), 1);
        m.cp_hqd_hq_status0 = 1 << 14;
        if p.aql {
            m.cp_hqd_aql_control = AQL_CONTROL0.with(0, 1);
        }
        if p.trap_handler {
            m.compute_pgm_rsrc2 = PGM_RSRC2_TRAP_PRESENT.with(m.compute_pgm_rsrc2, 1);
        }
        if let Some(c) = p.ctx_save {
            m.cp_hqd_persistent_state =
                PERSISTENT_STATE_QSWITCH_MODE.with(m.cp_hqd_persistent_state, 1);
            (
                m.cp_hqd_ctx_save_base_addr_lo,
                m.cp_hqd_ctx_save_base_addr_hi,
            ) = split(c.address);
            m.cp_hqd_ctx_save_size = c.size_bytes;
            m.cp_hqd_cntl_stack_size = c.ctl_stack_size_bytes;
            m.cp_hqd_cntl_stack_offset = c.ctl_stack_size_bytes;
            m.cp_hqd_wg_state_offset = c.ctl_stack_size_bytes;
        }
        m.amdkfd_update_compute(p);
        m
    }

    /// amdkfd's `update_mqd` (v9) of the compute queue `p` without a CU mask (CREATE_QUEUE's
    /// and UPDATE_QUEUE's call): [`write_queue_registers`], `cp_hqd_ib_control` = 3 <<
    /// `MIN_IB_AVAIL_SIZE` | `IB_EXE_DISABLE`, `cp_hqd_iq_timer` 0, `cp_hqd_vmid`; for AQL,
    /// `NO_UPDATE_RPTR` | 2 << `SLOT_BASED_WPTR` | `QUEUE_FULL_EN` | `WPP_CLAMP_EN` in
    /// `cp_hqd_pq_control` and `DOORBELL_BIF_DROP` in the doorbell control;
    /// `cp_hqd_ctx_save_control` 0 with a context save area; `cp_hqd_pipe_priority` from
    /// [`PIPE_PRIORITY_MAP`] (a priority past 15 is taken as 15; CREATE_QUEUE refuses one).
    /// `cp_hqd_queue_priority` stays 0, as in linux v7.0: commit 73463e26f7e2 ("drm/amdkfd:
    /// Disable MQD queue priority", merged for v7.0-rc1) stopped `set_priority` writing the
    /// queue priority there; v6.19 and earlier wrote `q->priority`.
    pub fn amdkfd_update_compute(&mut self, p: &ComputeQueueProperties) {
        let m = self;
        write_queue_registers(
            m,
            p.queue_address,
            p.queue_size_bytes,
            p.read_ptr,
            p.write_ptr,
            p.doorbell_off,
            p.eop_address,
            p.eop_size_bytes,
        );
        use cp_hqd::*;
        m.cp_hqd_ib_control =
            IB_CONTROL_IB_EXE_DISABLE.with(IB_CONTROL_MIN_IB_AVAIL_SIZE.with(0, 3), 1);
        m.cp_hqd_iq_timer = 0;
        m.cp_hqd_vmid = p.vmid;
        if p.aql {
            let pq = PQ_CONTROL_NO_UPDATE_RPTR.with(m.cp_hqd_pq_control, 1);
            let pq = PQ_CONTROL_SLOT_BASED_WPTR.with(pq, SLOT_BASED_WPTR_AQL);
            let pq = PQ_CONTROL_QUEUE_FULL_EN.with(pq, 1);
            m.cp_hqd_pq_control = PQ_CONTROL_WPP_CLAMP_EN.with(pq, 1);
            m.cp_hqd_pq_doorbell_control = DOORBELL_BIF_DROP.with(m.cp_hqd_pq_doorbell_control, 1);
        }
        if p.ctx_save.is_some() {
            m.cp_hqd_ctx_save_control = 0;
        }
        m.cp_hqd_pipe_priority =
            PIPE_PRIORITY.with(0, PIPE_PRIORITY_MAP[p.priority.min(15) as usize]);
    }

    /// What amdkfd's `init_mqd_v9_4_3` adds to [`V9Mqd::amdkfd_compute`]'s image for XCC `x`
    /// of a queue on a GPU [`has_xcc_mqds`] names: `cp_mqd_stride_size` = `x.stride_bytes`,
    /// then [`V9Mqd::amdkfd_xcc_update`]. For an AQL queue `compute_current_logic_xcc_id`
    /// (dword 39, SE4's mask on other GPUs) = `(logical_start + index) % count`; for a PM4 queue
    /// it is 0 and `pm4_target_xcc_in_xcp` = `pm4_target_xcc`. The caller sets the MQD's own
    /// address (`cp_mqd_base_addr`) to this XCC's copy.
    ///
    /// # Errors
    /// As [`XccMqd::check`]; nothing is written then.
    pub fn amdkfd_xcc(&mut self, x: &XccMqd, aql: bool, pm4_target_xcc: u32) -> crate::Result<()> {
        x.check()?;
        self.cp_mqd_stride_size = x.stride_bytes;
        self.compute_static_thread_mgmt_se4 = if aql {
            (x.logical_start % x.count + x.index) % x.count
        } else {
            0
        };
        self.amdkfd_xcc_update(x.index, aql, pm4_target_xcc);
        Ok(())
    }

    /// What amdkfd's `update_mqd_v9_4_3` adds to [`V9Mqd::amdkfd_update_compute`] for XCC
    /// `index` (after it, which sets `NO_UPDATE_RPTR` for AQL): for an AQL queue
    /// `compute_tg_chunk_size` (dword 41, SE6's mask on other GPUs) 1, and the master XCC's
    /// (index 0) `NO_UPDATE_RPTR` cleared, its CP being the one that reports the read pointer;
    /// for a PM4 queue `compute_tg_chunk_size` and `compute_current_logic_xcc_id` 0 and
    /// `pm4_target_xcc_in_xcp` = `pm4_target_xcc`.
    pub fn amdkfd_xcc_update(&mut self, index: u32, aql: bool, pm4_target_xcc: u32) {
        if aql {
            self.compute_static_thread_mgmt_se6 = 1;
            if index == 0 {
                self.cp_hqd_pq_control =
                    cp_hqd::PQ_CONTROL_NO_UPDATE_RPTR.with(self.cp_hqd_pq_control, 0);
            }
        } else {
            self.compute_static_thread_mgmt_se4 = 0;
            self.compute_static_thread_mgmt_se6 = 0;
            self.pm4_target_xcc_in_xcp = pm4_target_xcc;
        }
    }

    /// amdkfd's `update_cu_mask` on a GPU [`has_xcc_mqds`] names: only SE0..SE3's masks
    /// (`compute_static_thread_mgmt_se0..3`); dwords 39-42 hold other fields there.
    pub fn set_xcc_cu_masks(&mut self, se_mask: [u32; 4]) {
        let mut all = self.cu_masks();
        all[..4].copy_from_slice(&se_mask);
        self.set_cu_masks(all);
    }

    /// amdkfd's `update_cu_mask` (v9): the per-engine CU enable masks (`se_mask`, as
    /// `mqd_symmetrically_map_cu_mask` mapped the user's mask) into
    /// `compute_static_thread_mgmt_se0..7`.
    pub fn set_cu_masks(&mut self, se_mask: [u32; 8]) {
        let bytes = self.as_mut_bytes();
        for (d, v) in CU_MASK_DWORDS.into_iter().zip(se_mask) {
            bytes[4 * d..4 * d + 4].copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// The per-engine CU enable masks `compute_static_thread_mgmt_se0..7`.
    pub fn cu_masks(&self) -> [u32; 8] {
        let b = self.as_bytes();
        CU_MASK_DWORDS
            .map(|d| u32::from_ne_bytes([b[4 * d], b[4 * d + 1], b[4 * d + 2], b[4 * d + 3]]))
    }

    /// What a command processor takes from this MQD when it maps a compute queue whose
    /// format is AQL (`aql`) or PM4, the queue's doorbell having to lie in `doorbells` (the
    /// process's doorbell page, dword offsets in the doorbell aperture; a doorbell is 2
    /// dwords): the ring, its size, the pointer addresses, the doorbell and the format. The
    /// doorbell need not be enabled (`DOORBELL_EN`): amdkfd leaves it off in the MQD and
    /// enables it when it loads the HQD (`hqd_load`).
    ///
    /// # Errors
    /// [`Status::InvalidQueueCreation`](crate::Status::InvalidQueueCreation) naming the field,
    /// for an MQD amdkfd never produces: `CP_HQD_PQ_CONTROL.QUEUE_SIZE` outside
    /// [`QUEUE_SIZE_MIN`]..=[`QUEUE_SIZE_MAX`]; a null ring (`cp_hqd_pq_base`) or one past a
    /// 48-bit address (any of bits 8-31 of `cp_hqd_pq_base_hi` set); a `cp_hqd_aql_control`
    /// other than 0 and `CONTROL0` = 1, or one that does not match the queue's format;
    /// `DOORBELL_OFFSET` outside `doorbells`; a null read-pointer report or write-pointer poll
    /// address; a null EOP buffer (`cp_hqd_eop_base_addr`) of non-zero `EOP_SIZE`; `EOP_SIZE` past
    /// [`EOP_SIZE_MAX`]; a `header` other than [`V9_MQD_HEADER`];
    /// an AQL queue whose `SLOT_BASED_WPTR` is not [`SLOT_BASED_WPTR_AQL`].
    pub fn load_compute(
        &self,
        doorbells: core::ops::Range<u32>,
        aql: bool,
    ) -> crate::Result<HqdQueue> {
        let bad = crate::Status::InvalidQueueCreation;
        if self.header != V9_MQD_HEADER {
            crate::bail!(
                bad,
                "MQD header {:#x} is not the v9 MQD's {V9_MQD_HEADER:#x}",
                self.header
            );
        }
        let pq = [self.cp_hqd_pq_control];
        let slot_based = cp_hqd::PQ_CONTROL_SLOT_BASED_WPTR.get(&pq);
        if aql && slot_based != SLOT_BASED_WPTR_AQL {
            crate::bail!(
                bad,
                "MQD cp_hqd_pq_control {:#x}: SLOT_BASED_WPTR is {slot_based}, not the AQL \
                 queue's {SLOT_BASED_WPTR_AQL} (the CP would read the packet-index doorbell \
                 as a dword pointer)",
                self.cp_hqd_pq_control
            );
        }
        let size = cp_hqd::PQ_CONTROL_QUEUE_SIZE.get(&pq);
        if !(QUEUE_SIZE_MIN..=QUEUE_SIZE_MAX).contains(&size) {
            crate::bail!(
                bad,
                "MQD cp_hqd_pq_control {:#x}: QUEUE_SIZE {size} is outside \
                 {QUEUE_SIZE_MIN}..={QUEUE_SIZE_MAX} (rings of 1 KiB to 2 GiB)",
                self.cp_hqd_pq_control
            );
        }
        // hi:lo << 8 is 48 bits when hi < 2^8; checked on hi itself, before the shift drops
        // its bits 24-31.
        if self.cp_hqd_pq_base_hi >> 8 != 0 {
            crate::bail!(
                bad,
                "MQD cp_hqd_pq_base_hi {:#x}: the ring address (cp_hqd_pq_base_hi:lo << 8) is \
                 past the 48-bit GPU virtual address space",
                self.cp_hqd_pq_base_hi
            );
        }
        let ring = self.pq_base();
        if ring == 0 {
            crate::bail!(
                bad,
                "MQD cp_hqd_pq_base_hi:lo {:#x}:{:#x}: ring address {ring:#x} is null",
                self.cp_hqd_pq_base_hi,
                self.cp_hqd_pq_base_lo
            );
        }
        // amdkfd writes 1 << CONTROL0__SHIFT (AQL) or nothing (PM4): any other value of the
        // dword is one it never produces.
        let aql_on = cp_hqd::AQL_CONTROL0.with(0, 1);
        if self.cp_hqd_aql_control != 0 && self.cp_hqd_aql_control != aql_on {
            crate::bail!(
                bad,
                "MQD cp_hqd_aql_control {:#x}: amdkfd writes 0 (PM4) or {aql_on:#x} (AQL, \
                 CONTROL0)",
                self.cp_hqd_aql_control
            );
        }
        let control0 = self.cp_hqd_aql_control == aql_on;
        if control0 != aql {
            crate::bail!(
                bad,
                "MQD cp_hqd_aql_control {:#x}: CONTROL0 is {} on {} queue",
                self.cp_hqd_aql_control,
                if control0 { "on" } else { "off" },
                if aql { "an AQL" } else { "a PM4" }
            );
        }
        let db = cp_hqd::DOORBELL_OFFSET.get(&[self.cp_hqd_pq_doorbell_control]);
        if db < doorbells.start || db.saturating_add(2) > doorbells.end {
            crate::bail!(
                bad,
                "MQD cp_hqd_pq_doorbell_control {:#x}: DOORBELL_OFFSET {db:#x} is outside the \
                 process's doorbell page (dwords {:#x}..{:#x})",
                self.cp_hqd_pq_doorbell_control,
                doorbells.start,
                doorbells.end
            );
        }
        let (read_ptr, write_ptr) = (self.rptr_report_addr(), self.wptr_poll_addr());
        if read_ptr == 0 {
            crate::bail!(bad, "MQD cp_hqd_pq_rptr_report_addr is null");
        }
        if write_ptr == 0 {
            crate::bail!(bad, "MQD cp_hqd_pq_wptr_poll_addr is null");
        }
        let eop = cp_hqd::EOP_CONTROL_EOP_SIZE.get(&[self.cp_hqd_eop_control]);
        // A null EOP address with EOP_SIZE 0 is amdkfd's queue without an EOP buffer (gfx94x
        // AQL queues: size 0, address 0); with a size, the CP would write end-of-pipe events
        // at address 0.
        if self.eop_base() == 0 && eop != 0 {
            crate::bail!(
                bad,
                "MQD cp_hqd_eop_base_addr_hi:lo is null with EOP_SIZE {eop:#x}: the CP would \
                 write end-of-pipe events at address 0"
            );
        }
        if eop > EOP_SIZE_MAX {
            crate::bail!(
                bad,
                "MQD cp_hqd_eop_control {:#x}: EOP_SIZE {eop:#x} is past {EOP_SIZE_MAX:#x}",
                self.cp_hqd_eop_control
            );
        }
        // QUEUE_SIZE <= QUEUE_SIZE_MAX (checked above): 2^31 bytes at most.
        let ring_size_bytes = self.pq_size_bytes().unwrap_or(0);
        Ok(HqdQueue {
            ring,
            ring_size_bytes,
            read_ptr,
            write_ptr,
            doorbell_dword: db,
            aql,
        })
    }
}

// Every named field's dword, as `v9_structs.h` places it (its reserved_N dwords at N).
const _: () = {
    /// Byte offset of dword `n` (inside the block: rustc 1.85 calls a function used only by
    /// a `const _` dead).
    const fn dword(n: usize) -> usize {
        n * 4
    }
    assert!(size_of::<V9Mqd>() == V9_MQD_DWORDS * 4);
    assert!(offset_of!(V9Mqd, header) == dword(0));
    assert!(offset_of!(V9Mqd, compute_dispatch_initiator) == dword(1));
    assert!(offset_of!(V9Mqd, compute_dim_x) == dword(2));
    assert!(offset_of!(V9Mqd, compute_dim_y) == dword(3));
    assert!(offset_of!(V9Mqd, compute_dim_z) == dword(4));
    assert!(offset_of!(V9Mqd, compute_start_x) == dword(5));
    assert!(offset_of!(V9Mqd, compute_start_y) == dword(6));
    assert!(offset_of!(V9Mqd, compute_start_z) == dword(7));
    assert!(offset_of!(V9Mqd, compute_num_thread_x) == dword(8));
    assert!(offset_of!(V9Mqd, compute_num_thread_y) == dword(9));
    assert!(offset_of!(V9Mqd, compute_num_thread_z) == dword(10));
    assert!(offset_of!(V9Mqd, compute_pipelinestat_enable) == dword(11));
    assert!(offset_of!(V9Mqd, compute_perfcount_enable) == dword(12));
    assert!(offset_of!(V9Mqd, compute_pgm_lo) == dword(13));
    assert!(offset_of!(V9Mqd, compute_pgm_hi) == dword(14));
    assert!(offset_of!(V9Mqd, compute_tba_lo) == dword(15));
    assert!(offset_of!(V9Mqd, compute_tba_hi) == dword(16));
    assert!(offset_of!(V9Mqd, compute_tma_lo) == dword(17));
    assert!(offset_of!(V9Mqd, compute_tma_hi) == dword(18));
    assert!(offset_of!(V9Mqd, compute_pgm_rsrc1) == dword(19));
    assert!(offset_of!(V9Mqd, compute_pgm_rsrc2) == dword(20));
    assert!(offset_of!(V9Mqd, compute_vmid) == dword(21));
    assert!(offset_of!(V9Mqd, compute_resource_limits) == dword(22));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se0) == dword(23));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se1) == dword(24));
    assert!(offset_of!(V9Mqd, compute_tmpring_size) == dword(25));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se2) == dword(26));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se3) == dword(27));
    assert!(offset_of!(V9Mqd, compute_restart_x) == dword(28));
    assert!(offset_of!(V9Mqd, compute_restart_y) == dword(29));
    assert!(offset_of!(V9Mqd, compute_restart_z) == dword(30));
    assert!(offset_of!(V9Mqd, compute_thread_trace_enable) == dword(31));
    assert!(offset_of!(V9Mqd, compute_misc_reserved) == dword(32));
    assert!(offset_of!(V9Mqd, compute_dispatch_id) == dword(33));
    assert!(offset_of!(V9Mqd, compute_threadgroup_id) == dword(34));
    assert!(offset_of!(V9Mqd, compute_relaunch) == dword(35));
    assert!(offset_of!(V9Mqd, compute_wave_restore_addr_lo) == dword(36));
    assert!(offset_of!(V9Mqd, compute_wave_restore_addr_hi) == dword(37));
    assert!(offset_of!(V9Mqd, compute_wave_restore_control) == dword(38));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se4) == dword(39));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se5) == dword(40));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se6) == dword(41));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se7) == dword(42));
    assert!(offset_of!(V9Mqd, reserved_43) == dword(43));
    assert!(offset_of!(V9Mqd, compute_user_data_0) == dword(65));
    assert!(offset_of!(V9Mqd, compute_user_data_1) == dword(66));
    assert!(offset_of!(V9Mqd, compute_user_data_2) == dword(67));
    assert!(offset_of!(V9Mqd, compute_user_data_3) == dword(68));
    assert!(offset_of!(V9Mqd, compute_user_data_4) == dword(69));
    assert!(offset_of!(V9Mqd, compute_user_data_5) == dword(70));
    assert!(offset_of!(V9Mqd, compute_user_data_6) == dword(71));
    assert!(offset_of!(V9Mqd, compute_user_data_7) == dword(72));
    assert!(offset_of!(V9Mqd, compute_user_data_8) == dword(73));
    assert!(offset_of!(V9Mqd, compute_user_data_9) == dword(74));
    assert!(offset_of!(V9Mqd, compute_user_data_10) == dword(75));
    assert!(offset_of!(V9Mqd, compute_user_data_11) == dword(76));
    assert!(offset_of!(V9Mqd, compute_user_data_12) == dword(77));
    assert!(offset_of!(V9Mqd, compute_user_data_13) == dword(78));
    assert!(offset_of!(V9Mqd, compute_user_data_14) == dword(79));
    assert!(offset_of!(V9Mqd, compute_user_data_15) == dword(80));
    assert!(offset_of!(V9Mqd, cp_compute_csinvoc_count_lo) == dword(81));
    assert!(offset_of!(V9Mqd, cp_compute_csinvoc_count_hi) == dword(82));
    assert!(offset_of!(V9Mqd, reserved_83) == dword(83));
    assert!(offset_of!(V9Mqd, cp_mqd_query_time_lo) == dword(86));
    assert!(offset_of!(V9Mqd, cp_mqd_query_time_hi) == dword(87));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_start_time_lo) == dword(88));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_start_time_hi) == dword(89));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_time_lo) == dword(90));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_time_hi) == dword(91));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_wf_count) == dword(92));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_pq_rptr) == dword(93));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_pq_wptr) == dword(94));
    assert!(offset_of!(V9Mqd, cp_mqd_connect_end_ib_rptr) == dword(95));
    assert!(offset_of!(V9Mqd, cp_mqd_readindex_lo) == dword(96));
    assert!(offset_of!(V9Mqd, cp_mqd_readindex_hi) == dword(97));
    assert!(offset_of!(V9Mqd, cp_mqd_save_start_time_lo) == dword(98));
    assert!(offset_of!(V9Mqd, cp_mqd_save_start_time_hi) == dword(99));
    assert!(offset_of!(V9Mqd, cp_mqd_save_end_time_lo) == dword(100));
    assert!(offset_of!(V9Mqd, cp_mqd_save_end_time_hi) == dword(101));
    assert!(offset_of!(V9Mqd, cp_mqd_restore_start_time_lo) == dword(102));
    assert!(offset_of!(V9Mqd, cp_mqd_restore_start_time_hi) == dword(103));
    assert!(offset_of!(V9Mqd, cp_mqd_restore_end_time_lo) == dword(104));
    assert!(offset_of!(V9Mqd, cp_mqd_restore_end_time_hi) == dword(105));
    assert!(offset_of!(V9Mqd, disable_queue) == dword(106));
    assert!(offset_of!(V9Mqd, reserved_107) == dword(107));
    assert!(offset_of!(V9Mqd, gds_cs_ctxsw_cnt0) == dword(108));
    assert!(offset_of!(V9Mqd, gds_cs_ctxsw_cnt1) == dword(109));
    assert!(offset_of!(V9Mqd, gds_cs_ctxsw_cnt2) == dword(110));
    assert!(offset_of!(V9Mqd, gds_cs_ctxsw_cnt3) == dword(111));
    assert!(offset_of!(V9Mqd, reserved_112) == dword(112));
    assert!(offset_of!(V9Mqd, cp_pq_exe_status_lo) == dword(114));
    assert!(offset_of!(V9Mqd, cp_pq_exe_status_hi) == dword(115));
    assert!(offset_of!(V9Mqd, cp_packet_id_lo) == dword(116));
    assert!(offset_of!(V9Mqd, cp_packet_id_hi) == dword(117));
    assert!(offset_of!(V9Mqd, cp_packet_exe_status_lo) == dword(118));
    assert!(offset_of!(V9Mqd, cp_packet_exe_status_hi) == dword(119));
    assert!(offset_of!(V9Mqd, gds_save_base_addr_lo) == dword(120));
    assert!(offset_of!(V9Mqd, gds_save_base_addr_hi) == dword(121));
    assert!(offset_of!(V9Mqd, gds_save_mask_lo) == dword(122));
    assert!(offset_of!(V9Mqd, gds_save_mask_hi) == dword(123));
    assert!(offset_of!(V9Mqd, ctx_save_base_addr_lo) == dword(124));
    assert!(offset_of!(V9Mqd, ctx_save_base_addr_hi) == dword(125));
    assert!(offset_of!(V9Mqd, dynamic_cu_mask_addr_lo) == dword(126));
    assert!(offset_of!(V9Mqd, dynamic_cu_mask_addr_hi) == dword(127));
    assert!(offset_of!(V9Mqd, cp_mqd_base_addr_lo) == dword(128));
    assert!(offset_of!(V9Mqd, cp_mqd_base_addr_hi) == dword(129));
    assert!(offset_of!(V9Mqd, cp_hqd_active) == dword(130));
    assert!(offset_of!(V9Mqd, cp_hqd_vmid) == dword(131));
    assert!(offset_of!(V9Mqd, cp_hqd_persistent_state) == dword(132));
    assert!(offset_of!(V9Mqd, cp_hqd_pipe_priority) == dword(133));
    assert!(offset_of!(V9Mqd, cp_hqd_queue_priority) == dword(134));
    assert!(offset_of!(V9Mqd, cp_hqd_quantum) == dword(135));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_base_lo) == dword(136));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_base_hi) == dword(137));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_rptr) == dword(138));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_rptr_report_addr_lo) == dword(139));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_rptr_report_addr_hi) == dword(140));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_wptr_poll_addr_lo) == dword(141));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_wptr_poll_addr_hi) == dword(142));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_doorbell_control) == dword(143));
    assert!(offset_of!(V9Mqd, reserved_144) == dword(144));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_control) == dword(145));
    assert!(offset_of!(V9Mqd, cp_hqd_ib_base_addr_lo) == dword(146));
    assert!(offset_of!(V9Mqd, cp_hqd_ib_base_addr_hi) == dword(147));
    assert!(offset_of!(V9Mqd, cp_hqd_ib_rptr) == dword(148));
    assert!(offset_of!(V9Mqd, cp_hqd_ib_control) == dword(149));
    assert!(offset_of!(V9Mqd, cp_hqd_iq_timer) == dword(150));
    assert!(offset_of!(V9Mqd, cp_hqd_iq_rptr) == dword(151));
    assert!(offset_of!(V9Mqd, cp_hqd_dequeue_request) == dword(152));
    assert!(offset_of!(V9Mqd, cp_hqd_dma_offload) == dword(153));
    assert!(offset_of!(V9Mqd, cp_hqd_sema_cmd) == dword(154));
    assert!(offset_of!(V9Mqd, cp_hqd_msg_type) == dword(155));
    assert!(offset_of!(V9Mqd, cp_hqd_atomic0_preop_lo) == dword(156));
    assert!(offset_of!(V9Mqd, cp_hqd_atomic0_preop_hi) == dword(157));
    assert!(offset_of!(V9Mqd, cp_hqd_atomic1_preop_lo) == dword(158));
    assert!(offset_of!(V9Mqd, cp_hqd_atomic1_preop_hi) == dword(159));
    assert!(offset_of!(V9Mqd, cp_hqd_hq_status0) == dword(160));
    assert!(offset_of!(V9Mqd, cp_hqd_hq_control0) == dword(161));
    assert!(offset_of!(V9Mqd, cp_mqd_control) == dword(162));
    assert!(offset_of!(V9Mqd, cp_hqd_hq_status1) == dword(163));
    assert!(offset_of!(V9Mqd, cp_hqd_hq_control1) == dword(164));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_base_addr_lo) == dword(165));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_base_addr_hi) == dword(166));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_control) == dword(167));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_rptr) == dword(168));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_wptr) == dword(169));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_done_events) == dword(170));
    assert!(offset_of!(V9Mqd, cp_hqd_ctx_save_base_addr_lo) == dword(171));
    assert!(offset_of!(V9Mqd, cp_hqd_ctx_save_base_addr_hi) == dword(172));
    assert!(offset_of!(V9Mqd, cp_hqd_ctx_save_control) == dword(173));
    assert!(offset_of!(V9Mqd, cp_hqd_cntl_stack_offset) == dword(174));
    assert!(offset_of!(V9Mqd, cp_hqd_cntl_stack_size) == dword(175));
    assert!(offset_of!(V9Mqd, cp_hqd_wg_state_offset) == dword(176));
    assert!(offset_of!(V9Mqd, cp_hqd_ctx_save_size) == dword(177));
    assert!(offset_of!(V9Mqd, cp_hqd_gds_resource_state) == dword(178));
    assert!(offset_of!(V9Mqd, cp_hqd_error) == dword(179));
    assert!(offset_of!(V9Mqd, cp_hqd_eop_wptr_mem) == dword(180));
    assert!(offset_of!(V9Mqd, cp_hqd_aql_control) == dword(181));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_wptr_lo) == dword(182));
    assert!(offset_of!(V9Mqd, cp_hqd_pq_wptr_hi) == dword(183));
    assert!(offset_of!(V9Mqd, reserved_184) == dword(184));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_header) == dword(192));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw0) == dword(193));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw1) == dword(194));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw2) == dword(195));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw3) == dword(196));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw4) == dword(197));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw5) == dword(198));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw6) == dword(199));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw7) == dword(200));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw8) == dword(201));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw9) == dword(202));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw10) == dword(203));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw11) == dword(204));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw12) == dword(205));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw13) == dword(206));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw14) == dword(207));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw15) == dword(208));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw16) == dword(209));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw17) == dword(210));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw18) == dword(211));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw19) == dword(212));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw20) == dword(213));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw21) == dword(214));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw22) == dword(215));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw23) == dword(216));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw24) == dword(217));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw25) == dword(218));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw26) == dword(219));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw27) == dword(220));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw28) == dword(221));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw29) == dword(222));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw30) == dword(223));
    assert!(offset_of!(V9Mqd, iqtimer_pkt_dw31) == dword(224));
    assert!(offset_of!(V9Mqd, pm4_target_xcc_in_xcp) == dword(225));
    assert!(offset_of!(V9Mqd, cp_mqd_stride_size) == dword(226));
    assert!(offset_of!(V9Mqd, reserved_227) == dword(227));
    assert!(offset_of!(V9Mqd, set_resources_header) == dword(228));
    assert!(offset_of!(V9Mqd, set_resources_dw1) == dword(229));
    assert!(offset_of!(V9Mqd, set_resources_dw2) == dword(230));
    assert!(offset_of!(V9Mqd, set_resources_dw3) == dword(231));
    assert!(offset_of!(V9Mqd, set_resources_dw4) == dword(232));
    assert!(offset_of!(V9Mqd, set_resources_dw5) == dword(233));
    assert!(offset_of!(V9Mqd, set_resources_dw6) == dword(234));
    assert!(offset_of!(V9Mqd, set_resources_dw7) == dword(235));
    assert!(offset_of!(V9Mqd, reserved_236) == dword(236));
    assert!(offset_of!(V9Mqd, queue_doorbell_id0) == dword(240));
    assert!(offset_of!(V9Mqd, queue_doorbell_id1) == dword(241));
    assert!(offset_of!(V9Mqd, queue_doorbell_id2) == dword(242));
    assert!(offset_of!(V9Mqd, queue_doorbell_id3) == dword(243));
    assert!(offset_of!(V9Mqd, queue_doorbell_id4) == dword(244));
    assert!(offset_of!(V9Mqd, queue_doorbell_id5) == dword(245));
    assert!(offset_of!(V9Mqd, queue_doorbell_id6) == dword(246));
    assert!(offset_of!(V9Mqd, queue_doorbell_id7) == dword(247));
    assert!(offset_of!(V9Mqd, queue_doorbell_id8) == dword(248));
    assert!(offset_of!(V9Mqd, queue_doorbell_id9) == dword(249));
    assert!(offset_of!(V9Mqd, queue_doorbell_id10) == dword(250));
    assert!(offset_of!(V9Mqd, queue_doorbell_id11) == dword(251));
    assert!(offset_of!(V9Mqd, queue_doorbell_id12) == dword(252));
    assert!(offset_of!(V9Mqd, queue_doorbell_id13) == dword(253));
    assert!(offset_of!(V9Mqd, queue_doorbell_id14) == dword(254));
    assert!(offset_of!(V9Mqd, queue_doorbell_id15) == dword(255));
    assert!(offset_of!(V9Mqd, reserved_256) == dword(256));
    // CU_MASK_DWORDS names the eight compute_static_thread_mgmt_se* fields, in order.
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se0) == dword(CU_MASK_DWORDS[0]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se1) == dword(CU_MASK_DWORDS[1]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se2) == dword(CU_MASK_DWORDS[2]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se3) == dword(CU_MASK_DWORDS[3]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se4) == dword(CU_MASK_DWORDS[4]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se5) == dword(CU_MASK_DWORDS[5]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se6) == dword(CU_MASK_DWORDS[6]));
    assert!(offset_of!(V9Mqd, compute_static_thread_mgmt_se7) == dword(CU_MASK_DWORDS[7]));
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwords_and_accessors_read_the_register_images() {
        let mut d = [0u32; V9_MQD_DWORDS];
        // cp_hqd_pq_base_lo/hi (136, 137), pq_control (145), rptr report (139, 140),
        // wptr poll (141, 142), doorbell control (143), EOP base (165, 166).
        d[136] = 0x0123_4567;
        d[145] = 0x0800_0509;
        d[139] = 0x80;
        d[140] = 0x7;
        d[141] = 0x38;
        d[142] = 0x7;
        d[143] = 0x4000_0018;
        d[165] = 0x0780_0000;
        let m = V9Mqd::from_dwords(d);
        assert_eq!(m.cp_hqd_pq_base_lo, 0x0123_4567);
        assert_eq!(m.pq_base(), 0x1_2345_6700);
        assert_eq!(m.pq_size_bytes(), Some(4096));
        assert_eq!(m.rptr_report_addr(), 0x7_0000_0080);
        assert_eq!(m.wptr_poll_addr(), 0x7_0000_0038);
        assert_eq!(m.doorbell_dword_offset(), Some(6));
        assert_eq!(m.eop_base(), 0x7_8000_0000);
        assert_eq!(m.dwords(), d);
        assert_eq!(V9Mqd::default().dwords(), [0; V9_MQD_DWORDS]);
        let mut off = m;
        off.cp_hqd_pq_doorbell_control = 0x18;
        assert_eq!(off.doorbell_dword_offset(), None);
    }

    /// `init_mqd_v9_4_3`/`update_mqd_v9_4_3`'s per-XCC dwords, by hand: an AQL queue's
    /// master XCC (index 0 of 2, logical start 1) gets `compute_current_logic_xcc_id` (39)
    /// (1 + 0) % 2 = 1, `compute_tg_chunk_size` (41) 1, `cp_mqd_stride_size` (226) the stride,
    /// and `NO_UPDATE_RPTR` (145 bit 27) cleared; XCC 1 gets (1 + 1) % 2 = 0 and keeps bit 27;
    /// a PM4 queue gets 0 in 39 and 41 and its target XCC in `pm4_target_xcc_in_xcp` (225).
    /// SE0-SE3's masks go to 23, 24, 26, 27 and leave 39-42 alone.
    #[test]
    fn per_xcc_dwords_by_hand() {
        let slot = |index| XccMqd {
            index,
            count: 2,
            logical_start: 1,
            stride_bytes: 0x2000,
        };
        let mut aql = V9Mqd::default();
        aql.set_cu_masks([u32::MAX; 8]);
        aql.cp_hqd_pq_control = 0x1C01_4509;
        let mut master = aql;
        master.amdkfd_xcc(&slot(0), true, 5).unwrap();
        let d = master.dwords();
        assert_eq!((d[39], d[40], d[41], d[42]), (1, u32::MAX, 1, u32::MAX));
        assert_eq!((d[145], d[225], d[226]), (0x1401_4509, 0, 0x2000));
        let mut second = aql;
        second.amdkfd_xcc(&slot(1), true, 5).unwrap();
        let d = second.dwords();
        assert_eq!((d[39], d[41], d[145], d[226]), (0, 1, 0x1C01_4509, 0x2000));
        let mut pm4 = aql;
        pm4.amdkfd_xcc(&slot(0), false, 5).unwrap();
        let d = pm4.dwords();
        assert_eq!((d[39], d[41], d[145], d[225]), (0, 0, 0x1C01_4509, 5));
        master.set_xcc_cu_masks([1, 2, 3, 4]);
        let d = master.dwords();
        assert_eq!([d[23], d[24], d[26], d[27]], [1, 2, 3, 4]);
        assert_eq!((d[39], d[40], d[41], d[42]), (1, u32::MAX, 1, u32::MAX));
        for (x, why) in [
            ((2, 2, 2048), "XCC 2 of 2"),
            ((0, 0, 2048), "XCC 0 of 0"),
            ((0, 9, 2048), "XCC 0 of 9"),
            ((0, 1, 1792), "MQD stride 0x700"),
            ((0, 1, 2080), "MQD stride 0x820"),
        ] {
            let mut m = aql;
            let e = m
                .amdkfd_xcc(
                    &XccMqd {
                        index: x.0,
                        count: x.1,
                        logical_start: 0,
                        stride_bytes: x.2,
                    },
                    true,
                    0,
                )
                .unwrap_err();
            assert_eq!(e.status(), crate::Status::InvalidQueueCreation);
            assert!(e.detail().contains(why), "{e}");
            assert_eq!(m, aql, "nothing written");
        }
        // Logical ids: (6 + 1) % 4 = 3; amdkfd's counter is a u32 that wraps: (2^32 - 1 + 1)
        // % 3 = (0 + 1) % 3 = 1, the start reduced first.
        for (index, count, start, id) in [(1, 4, 6, 3), (1, 3, u32::MAX, 1), (2, 3, u32::MAX, 2)] {
            let mut m = aql;
            let x = XccMqd {
                index,
                count,
                logical_start: start,
                stride_bytes: 2048,
            };
            m.amdkfd_xcc(&x, true, 0).unwrap();
            assert_eq!(m.compute_static_thread_mgmt_se4, id, "{x:?}");
        }
        // The smallest stride (one MQD, no CWSR) and the most XCCs are taken.
        for (index, count, stride) in [(0, 1, 2048), (7, 8, 2048), (0, 8, 2304)] {
            let mut m = aql;
            let x = XccMqd {
                index,
                count,
                logical_start: 0,
                stride_bytes: stride,
            };
            m.amdkfd_xcc(&x, true, 0).unwrap();
            assert_eq!(m.cp_mqd_stride_size, stride);
        }
        assert!(has_xcc_mqds(90400) && has_xcc_mqds(90401) && has_xcc_mqds(90402));
        assert!(has_xcc_mqds(90500) && !has_xcc_mqds(90403) && !has_xcc_mqds(90010));
        assert_eq!(V9_MQD_BYTES as usize, core::mem::size_of::<V9Mqd>());
    }

    /// `eop_control` against amdkfd's `size ? min(0xA, order_base_2(size / 4) - 1) : 0`,
    /// worked out by hand: 0 -> 0; 4 -> ob2(1) - 1 = -1 -> 0xFFFF_FFFF (as is 7: ob2(1));
    /// 8 -> ob2(2) - 1 = 0; 12 -> ob2(3) - 1 = 1; 16 -> ob2(4) - 1 = 1; 20 -> ob2(5) - 1 = 2;
    /// 4096 -> ob2(1024) - 1 = 9; 6000 -> ob2(1500) - 1 = 10; 8192 -> 10; 2^31 -> 28, clamped
    /// to 0xA; u32::MAX -> ob2(2^30 - 1) - 1 = 29 -> 0xA.
    #[test]
    fn eop_control_follows_amdkfd_int_arithmetic() {
        let cases = [
            (0, 0),
            (4, 0xFFFF_FFFF),
            (7, 0xFFFF_FFFF),
            (8, 0),
            (12, 1),
            (16, 1),
            (20, 2),
            (4096, 9),
            (6000, 0xA),
            (8192, 0xA),
            (1 << 31, 0xA),
            (u32::MAX, 0xA),
        ];
        for (size, want) in cases {
            assert_eq!(eop_control(size), want, "EOP size {size}");
        }
    }

    /// `pq_size_bytes` is total: QUEUE_SIZE 60 is 2^63 bytes, 61..=63 have no u64 size.
    #[test]
    fn pq_size_bytes_is_total() {
        let m = |q: u32| V9Mqd {
            cp_hqd_pq_control: 0x0800_0500 | q,
            ..V9Mqd::default()
        };
        assert_eq!(m(0).pq_size_bytes(), Some(8));
        assert_eq!(m(28).pq_size_bytes(), Some(1 << 31));
        assert_eq!(m(60).pq_size_bytes(), Some(1 << 63));
        for q in 61..=63 {
            assert_eq!(m(q).pq_size_bytes(), None, "QUEUE_SIZE {q}");
        }
    }

    /// `amdkfd_compute`'s dwords for one AQL queue, each worked out by hand from amdkfd's
    /// rule (not read back through the accessors that share the writer's encoding): ring
    /// 0x7f12_3456_7800, 64 KiB; read pointer 0x7f00_0001_0080, write pointer
    /// 0x7f00_0001_0038; doorbell dword 0x46; EOP 0x7f00_0002_0000, 4 KiB; priority 13; MQD at
    /// 0x1234_5678_9abc; context save area 0x7f00_0003_0000, 0x5000 bytes, control stack
    /// 0x1000.
    #[test]
    fn amdkfd_compute_dwords_by_hand() {
        let p = ComputeQueueProperties {
            aql: true,
            queue_address: 0x7f12_3456_7800,
            queue_size_bytes: 65536,
            read_ptr: 0x7f00_0001_0080,
            write_ptr: 0x7f00_0001_0038,
            doorbell_off: 0x46,
            eop_address: 0x7f00_0002_0000,
            eop_size_bytes: 4096,
            priority: 13,
            vmid: 0,
            trap_handler: true,
            ctx_save: Some(CtxSaveArea {
                address: 0x7f00_0003_0000,
                size_bytes: 0x5000,
                ctl_stack_size_bytes: 0x1000,
            }),
            mqd_address: 0x1234_5678_9abc,
        };
        let d = V9Mqd::amdkfd_compute(&p).dwords();
        let want: &[(usize, u32)] = &[
            (0, 0xC031_0800),
            (11, 1),
            (20, 0x40),
            (23, 0xFFFF_FFFF),
            (24, 0xFFFF_FFFF),
            (26, 0xFFFF_FFFF),
            (27, 0xFFFF_FFFF),
            (39, 0xFFFF_FFFF),
            (40, 0xFFFF_FFFF),
            (41, 0xFFFF_FFFF),
            (42, 0xFFFF_FFFF),
            // MQD address: lo 0x5678_9abc, hi 0x1234.
            (128, 0x5678_9abc),
            (129, 0x1234),
            // PRELOAD_REQ 1 | 0x53 << 8 = 0x5301, | QSWITCH_MODE 1 << 30.
            (132, 0x4000_5301),
            // pipe_priority_map[13] = HIGH (2).
            (133, 2),
            // QUANTUM_EN | 1 << 4 | 1 << 8.
            (135, 0x111),
            // 0x7f12_3456_7800 >> 8 = 0x7f_1234_5678.
            (136, 0x1234_5678),
            (137, 0x7f),
            (139, 0x0001_0080),
            (140, 0x7f00),
            (141, 0x0001_0038),
            (142, 0x7f00),
            // 0x46 << 2 = 0x118, | BIF_DROP 2.
            (143, 0x11a),
            // 64 KiB = 2^14 dwords -> 13 = 0xd; | 5 << 8 | 1 << 14 | 1 << 16 | 2 << 25 |
            // 1 << 27 | 1 << 28 = 0x1C01_4500 | 0xd.
            (145, 0x1C01_450D),
            // 3 << 20 | 1 << 23.
            (149, 0x00B0_0000),
            (160, 0x4000),
            (162, 0x100),
            // 0x7f00_0002_0000 >> 8 = 0x7f_0000_0200.
            (165, 0x200),
            (166, 0x7f),
            (167, 9),
            (171, 0x0003_0000),
            (172, 0x7f00),
            (174, 0x1000),
            (175, 0x1000),
            (176, 0x1000),
            (177, 0x5000),
            (181, 1),
        ];
        for (i, &v) in d.iter().enumerate() {
            let expected = want.iter().find(|w| w.0 == i).map_or(0, |w| w.1);
            assert_eq!(v, expected, "dword {i}: {v:#x} != {expected:#x}");
        }
    }

    /// The CP refuses an MQD amdkfd never produces, naming the field: each case breaks one
    /// field of a good AQL queue's MQD (doorbell page: dwords 0..2048).
    #[test]
    fn load_compute_refuses_mqds_amdkfd_never_produces() {
        extern crate alloc;
        use alloc::string::ToString;
        let p = ComputeQueueProperties {
            aql: true,
            queue_address: 0x7f00_0000_0000,
            queue_size_bytes: 4096,
            read_ptr: 0x7f00_0001_0080,
            write_ptr: 0x7f00_0001_0038,
            doorbell_off: 6,
            eop_address: 0x7f00_0002_0000,
            eop_size_bytes: 4096,
            ..ComputeQueueProperties::default()
        };
        let good = V9Mqd::amdkfd_compute(&p);
        let q = good.load_compute(0..2048, true).unwrap();
        assert_eq!(
            (
                q.ring,
                q.ring_size_bytes,
                q.read_ptr,
                q.write_ptr,
                q.doorbell_dword
            ),
            (
                0x7f00_0000_0000,
                4096,
                0x7f00_0001_0080,
                0x7f00_0001_0038,
                6
            )
        );
        let refused = |f: &dyn Fn(&mut V9Mqd), aql: bool, needle: &str| {
            let mut m = good;
            f(&mut m);
            let e = m.load_compute(0..2048, aql).unwrap_err();
            assert_eq!(e.status(), crate::Status::InvalidQueueCreation);
            let text = e.detail().to_string();
            assert!(text.contains(needle), "{text} lacks {needle}");
        };
        // QUEUE_SIZE 6 (a 512-byte ring) and 29 (4 GiB).
        refused(
            &|m| m.cp_hqd_pq_control = m.cp_hqd_pq_control & !0x3f | 6,
            true,
            "QUEUE_SIZE 6",
        );
        refused(
            &|m| m.cp_hqd_pq_control = m.cp_hqd_pq_control & !0x3f | 29,
            true,
            "QUEUE_SIZE 29",
        );
        refused(
            &|m| (m.cp_hqd_pq_base_lo, m.cp_hqd_pq_base_hi) = (0, 0),
            true,
            "ring address 0x0 is null",
        );
        refused(&|m| m.cp_hqd_pq_base_hi = 0x100, true, "cp_hqd_pq_base");
        // Junk in bits 24-31 of cp_hqd_pq_base_hi, which `<< 8` would drop: still refused.
        refused(
            &|m| m.cp_hqd_pq_base_hi |= 0x8000_0000,
            true,
            "MQD cp_hqd_pq_base_hi 0x8000007f",
        );
        // CP_HQD_AQL_CONTROL 2 (CONTROL0 bit 0 clear): amdkfd writes only 0 or 1; not PM4.
        refused(
            &|m| m.cp_hqd_aql_control = 2,
            false,
            "cp_hqd_aql_control 0x2: amdkfd writes 0 (PM4) or 0x1 (AQL",
        );
        refused(
            &|m| m.cp_hqd_aql_control = 3,
            true,
            "cp_hqd_aql_control 0x3: amdkfd writes 0",
        );
        // amdkfd's 0xFFFF_FFFF for a 1..=7-byte EOP buffer.
        refused(
            &|m| m.cp_hqd_eop_control = eop_control(4),
            true,
            "EOP_SIZE 0x3f",
        );
        refused(
            &|m| m.cp_hqd_aql_control = 0,
            true,
            "cp_hqd_aql_control 0x0: CONTROL0 is off",
        );
        refused(&|_| {}, false, "CONTROL0 is on on a PM4 queue");
        refused(
            &|m| m.cp_hqd_pq_doorbell_control = 2048 << 2,
            true,
            "DOORBELL_OFFSET 0x800",
        );
        refused(
            &|m| m.cp_hqd_pq_doorbell_control = 2047 << 2,
            true,
            "DOORBELL_OFFSET 0x7ff",
        );
        refused(
            &|m| {
                (
                    m.cp_hqd_pq_rptr_report_addr_lo,
                    m.cp_hqd_pq_rptr_report_addr_hi,
                ) = (0, 0)
            },
            true,
            "cp_hqd_pq_rptr_report_addr",
        );
        refused(
            &|m| (m.cp_hqd_pq_wptr_poll_addr_lo, m.cp_hqd_pq_wptr_poll_addr_hi) = (0, 0),
            true,
            "cp_hqd_pq_wptr_poll_addr",
        );
        refused(&|m| m.cp_hqd_eop_control = 0xB, true, "EOP_SIZE 0xb");
        refused(
            &|m| (m.cp_hqd_eop_base_addr_lo, m.cp_hqd_eop_base_addr_hi) = (0, 0),
            true,
            "cp_hqd_eop_base_addr_hi:lo is null with EOP_SIZE 0x9",
        );
        // No EOP buffer at all (gfx94x's AQL queues: address 0, size 0) is taken.
        let mut m = good;
        (m.cp_hqd_eop_base_addr_lo, m.cp_hqd_eop_base_addr_hi) = (0, 0);
        m.cp_hqd_eop_control = eop_control(0);
        assert!(m.load_compute(0..2048, true).is_ok());
        refused(
            &|m| m.header = 0xC031_0801,
            true,
            "MQD header 0xc0310801 is not the v9 MQD's 0xc0310800",
        );
        // An AQL queue without SLOT_BASED_WPTR 2 (bits 25-26): 0 and 1 refused.
        refused(
            &|m| m.cp_hqd_pq_control &= !(3 << 25),
            true,
            "SLOT_BASED_WPTR is 0, not the AQL queue's 2",
        );
        refused(
            &|m| m.cp_hqd_pq_control = m.cp_hqd_pq_control & !(3 << 25) | 1 << 25,
            true,
            "SLOT_BASED_WPTR is 1",
        );
        // A PM4 queue's ring is dword-based: SLOT_BASED_WPTR 0 is taken there.
        let mut m = good;
        m.cp_hqd_aql_control = 0;
        m.cp_hqd_pq_control &= !(3 << 25);
        assert!(m.load_compute(0..2048, false).is_ok());
        // The doorbell at the page's last 8 bytes is taken.
        let mut m = good;
        m.cp_hqd_pq_doorbell_control = 2046 << 2;
        assert_eq!(m.load_compute(0..2048, true).unwrap().doorbell_dword, 2046);
    }
}
