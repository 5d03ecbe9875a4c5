//! The queue-management PM4 packets a MEC's interface queues take: the kernel interface queue
//! (KIQ) that amdgpu maps its own rings through, and the HSA interface queue (HIQ) that
//! amdkfd's hardware scheduler (HWS) runs its runlists from. `SET_RESOURCES`,
//! `MAP_PROCESS`, `MAP_QUEUES`, `UNMAP_QUEUES`, `QUERY_STATUS`, `RUN_LIST` and
//! `INVALIDATE_TLBS`, typed ([`KiqPacket`]: `parse`, `emit`), with the values amdgpu's KIQ
//! functions and amdkfd's packet manager put in them ([`MapQueues::amdgpu_kiq`],
//! [`MapQueues::amdkfd_hws`], [`UnmapQueues::amdgpu_kiq`], [`QueryStatus::fence`], ...).
//!
//! Layouts: linux `amdkfd/kfd_pm4_headers_ai.h` (`struct pm4_mes_*`, linux 6.x: MAP_QUEUES'
//! `extended_engine_sel` and `gws_control_queue`, MAP_PROCESS' `gds_size_hi`) and
//! `amdgpu/soc15d.h` (`PACKET3_MAP_QUEUES_*` and the other field macros; the opcodes
//! `0xA0`..`0xA5`, `0x98`). amdgpu's gfx9 KIQ functions (`gfx_v9_0_kiq_set_resources`,
//! `_map_queues`, `_unmap_queues`, `_query_status`, `_invalidate_tlbs`) and amdkfd's
//! `kfd_packet_manager_v9.c` (`pm_map_process_v9`, `pm_runlist_v9`, `pm_set_resources_v9`,
//! `pm_map_queues_v9`, `pm_unmap_queues_v9`, `pm_query_status_v9`) fill them.
//!
//! Where the two headers disagree, the firmware structs of `kfd_pm4_headers_ai.h` win:
//! `soc15d.h`'s `PACKET3_QUERY_STATUS_ENG_SEL(x)` shifts by 25, inside the doorbell offset,
//! while `pm4_mes_query_status` puts `engine_sel` at bits 28..31 (amdgpu only ever passes 0
//! there for compute, where both agree).
//!
//! The module doc of [`crate::wire`] states the no-panic contract; `emit` refuses a value
//! wider than its field ([`WireError::BadValue`]) instead of cutting it.

use super::pm4::{packet3, Header};
use super::{get_u64, set_u64, Field, WireError};

/// `PACKET3_SET_RESOURCES` (`IT_SET_RESOURCES`).
pub const OP_SET_RESOURCES: u8 = 0xa0;
/// `IT_MAP_PROCESS`.
pub const OP_MAP_PROCESS: u8 = 0xa1;
/// `PACKET3_MAP_QUEUES`.
pub const OP_MAP_QUEUES: u8 = 0xa2;
/// `PACKET3_UNMAP_QUEUES`.
pub const OP_UNMAP_QUEUES: u8 = 0xa3;
/// `PACKET3_QUERY_STATUS`.
pub const OP_QUERY_STATUS: u8 = 0xa4;
/// `IT_RUN_LIST`.
pub const OP_RUN_LIST: u8 = 0xa5;
/// `PACKET3_INVALIDATE_TLBS`.
pub const OP_INVALIDATE_TLBS: u8 = 0x98;

/// Dwords of each packet, header included (`sizeof(struct pm4_mes_*) / 4`).
pub mod dwords {
    /// `struct pm4_mes_set_resources`.
    pub const SET_RESOURCES: usize = 8;
    /// `struct pm4_mes_map_process` (gfx9 before GC 9.4.2; aldebaran's is longer).
    pub const MAP_PROCESS: usize = 17;
    /// `struct pm4_mes_map_queues`.
    pub const MAP_QUEUES: usize = 7;
    /// `struct pm4_mes_unmap_queues`.
    pub const UNMAP_QUEUES: usize = 6;
    /// `struct pm4_mes_query_status`.
    pub const QUERY_STATUS: usize = 7;
    /// `struct pm4_mes_runlist`.
    pub const RUN_LIST: usize = 4;
    /// `PACKET3(PACKET3_INVALIDATE_TLBS, 0)` and its one control dword.
    pub const INVALIDATE_TLBS: usize = 2;
}

/// The fields (dword, shift, width), named as `kfd_pm4_headers_ai.h` names them.
pub mod field {
    use crate::wire::Field;

    /// SET_RESOURCES `vmid_mask`: the VMIDs the scheduler may use.
    pub const SR_VMID_MASK: Field = Field::new(1, 0, 16);
    /// SET_RESOURCES `unmap_latency`, 100 ms units.
    pub const SR_UNMAP_LATENCY: Field = Field::new(1, 16, 8);
    /// SET_RESOURCES `queue_type` ([`super::SetResourcesQueueType`]).
    pub const SR_QUEUE_TYPE: Field = Field::new(1, 29, 3);
    /// SET_RESOURCES `queue_mask_lo` (`_hi` follows).
    pub const SR_QUEUE_MASK: usize = 2;
    /// SET_RESOURCES `gws_mask_lo` (`_hi` follows).
    pub const SR_GWS_MASK: usize = 4;
    /// SET_RESOURCES `oac_mask`.
    pub const SR_OAC_MASK: Field = Field::new(6, 0, 16);
    /// SET_RESOURCES `gds_heap_base`.
    pub const SR_GDS_HEAP_BASE: Field = Field::new(7, 0, 10);
    /// SET_RESOURCES `gds_heap_size`.
    pub const SR_GDS_HEAP_SIZE: Field = Field::new(7, 11, 10);

    /// MAP_PROCESS `pasid`.
    pub const MP_PASID: Field = Field::new(1, 0, 16);
    /// MAP_PROCESS `exec_cleaner_shader`.
    pub const MP_EXEC_CLEANER_SHADER: Field = Field::new(1, 17, 1);
    /// MAP_PROCESS `debug_vmid`.
    pub const MP_DEBUG_VMID: Field = Field::new(1, 18, 4);
    /// MAP_PROCESS `new_debug`.
    pub const MP_NEW_DEBUG: Field = Field::new(1, 22, 1);
    /// MAP_PROCESS `diq_enable`.
    pub const MP_DIQ_ENABLE: Field = Field::new(1, 24, 1);
    /// MAP_PROCESS `process_quantum`.
    pub const MP_PROCESS_QUANTUM: Field = Field::new(1, 25, 7);
    /// MAP_PROCESS `vm_context_page_table_base_addr_lo32` (`_hi32` follows).
    pub const MP_PAGE_TABLE_BASE: usize = 2;
    /// MAP_PROCESS `sh_mem_bases`.
    pub const MP_SH_MEM_BASES: Field = Field::new(4, 0, 32);
    /// MAP_PROCESS `sh_mem_config`.
    pub const MP_SH_MEM_CONFIG: Field = Field::new(5, 0, 32);
    /// MAP_PROCESS `sq_shader_tba_lo` (`_hi` follows).
    pub const MP_TBA: usize = 6;
    /// MAP_PROCESS `sq_shader_tma_lo` (`_hi` follows).
    pub const MP_TMA: usize = 8;
    /// MAP_PROCESS `gds_addr_lo` (`_hi` follows).
    pub const MP_GDS_ADDR: usize = 11;
    /// MAP_PROCESS `num_gws`.
    pub const MP_NUM_GWS: Field = Field::new(13, 0, 7);
    /// MAP_PROCESS `sdma_enable`.
    pub const MP_SDMA_ENABLE: Field = Field::new(13, 7, 1);
    /// MAP_PROCESS `num_oac`.
    pub const MP_NUM_OAC: Field = Field::new(13, 8, 4);
    /// MAP_PROCESS `gds_size_hi` (bits 6..10 of the GDS size).
    pub const MP_GDS_SIZE_HI: Field = Field::new(13, 12, 4);
    /// MAP_PROCESS `gds_size` (bits 0..6 of the GDS size).
    pub const MP_GDS_SIZE: Field = Field::new(13, 16, 6);
    /// MAP_PROCESS `num_queues`.
    pub const MP_NUM_QUEUES: Field = Field::new(13, 22, 10);
    /// MAP_PROCESS `completion_signal_lo` (`_hi` follows).
    pub const MP_COMPLETION_SIGNAL: usize = 15;

    /// MAP_QUEUES `extended_engine_sel`.
    pub const MQ_EXTENDED_ENGINE_SEL: Field = Field::new(1, 2, 2);
    /// MAP_QUEUES `queue_sel` (`PACKET3_MAP_QUEUES_QUEUE_SEL`).
    pub const MQ_QUEUE_SEL: Field = Field::new(1, 4, 2);
    /// MAP_QUEUES `PACKET3_MAP_QUEUES_VMID` (soc15d.h).
    pub const MQ_VMID: Field = Field::new(1, 8, 4);
    /// MAP_QUEUES `gws_control_queue`.
    pub const MQ_GWS_CONTROL_QUEUE: Field = Field::new(1, 12, 1);
    /// MAP_QUEUES `PACKET3_MAP_QUEUES_QUEUE`: the queue slot in its pipe.
    pub const MQ_QUEUE: Field = Field::new(1, 13, 3);
    /// MAP_QUEUES `PACKET3_MAP_QUEUES_PIPE`.
    pub const MQ_PIPE: Field = Field::new(1, 16, 2);
    /// MAP_QUEUES `PACKET3_MAP_QUEUES_ME`: 0 for MEC1 (amdgpu's `me == 1`), 1 for MEC2.
    pub const MQ_ME: Field = Field::new(1, 18, 2);
    /// MAP_QUEUES `queue_type` ([`super::MapQueueType`]).
    pub const MQ_QUEUE_TYPE: Field = Field::new(1, 21, 3);
    /// MAP_QUEUES `PACKET3_MAP_QUEUES_ALLOC_FORMAT`.
    pub const MQ_ALLOC_FORMAT: Field = Field::new(1, 24, 2);
    /// MAP_QUEUES `engine_sel` ([`super::EngineSel`]).
    pub const MQ_ENGINE_SEL: Field = Field::new(1, 26, 3);
    /// MAP_QUEUES `num_queues`.
    pub const MQ_NUM_QUEUES: Field = Field::new(1, 29, 3);
    /// MAP_QUEUES `check_disable`.
    pub const MQ_CHECK_DISABLE: Field = Field::new(2, 1, 1);
    /// MAP_QUEUES `doorbell_offset` (dwords into the doorbell aperture).
    pub const MQ_DOORBELL_OFFSET: Field = Field::new(2, 2, 26);
    /// MAP_QUEUES `mqd_addr_lo` (`_hi` follows).
    pub const MQ_MQD_ADDR: usize = 3;
    /// MAP_QUEUES `wptr_addr_lo` (`_hi` follows).
    pub const MQ_WPTR_ADDR: usize = 5;

    /// UNMAP_QUEUES `action` ([`super::UnmapAction`]).
    pub const UQ_ACTION: Field = Field::new(1, 0, 2);
    /// UNMAP_QUEUES `extended_engine_sel`.
    pub const UQ_EXTENDED_ENGINE_SEL: Field = Field::new(1, 2, 2);
    /// UNMAP_QUEUES `queue_sel`.
    pub const UQ_QUEUE_SEL: Field = Field::new(1, 4, 2);
    /// UNMAP_QUEUES `engine_sel`.
    pub const UQ_ENGINE_SEL: Field = Field::new(1, 26, 3);
    /// UNMAP_QUEUES `num_queues`.
    pub const UQ_NUM_QUEUES: Field = Field::new(1, 29, 3);
    /// UNMAP_QUEUES `pasid` (`bitfields3a`, for a PASID's queues).
    pub const UQ_PASID: Field = Field::new(2, 0, 16);
    /// UNMAP_QUEUES `doorbell_offset0`..`3` (dwords 2..6, bits 2..28).
    pub const UQ_DOORBELL_OFFSET: [Field; 4] = [
        Field::new(2, 2, 26),
        Field::new(3, 2, 26),
        Field::new(4, 2, 26),
        Field::new(5, 2, 26),
    ];
    /// UNMAP_QUEUES `PACKET3_UNMAP_QUEUES_RB_WPTR` (soc15d.h `CONTROL3b`, with the
    /// preempt-without-unmap action).
    pub const UQ_RB_WPTR: Field = Field::new(3, 0, 32);

    /// QUERY_STATUS `context_id`.
    pub const QS_CONTEXT_ID: Field = Field::new(1, 0, 28);
    /// QUERY_STATUS `interrupt_sel`.
    pub const QS_INTERRUPT_SEL: Field = Field::new(1, 28, 2);
    /// QUERY_STATUS `command` ([`super::QueryCommand`]).
    pub const QS_COMMAND: Field = Field::new(1, 30, 2);
    /// QUERY_STATUS `pasid` (`bitfields3a`, with the process-status interrupt).
    pub const QS_PASID: Field = Field::new(2, 0, 16);
    /// QUERY_STATUS `doorbell_offset` (`bitfields3b`).
    pub const QS_DOORBELL_OFFSET: Field = Field::new(2, 2, 26);
    /// QUERY_STATUS `engine_sel` (`bitfields3b`).
    pub const QS_ENGINE_SEL: Field = Field::new(2, 28, 3);
    /// QUERY_STATUS `addr_lo` (`_hi` follows): where the fence value goes.
    pub const QS_ADDR: usize = 3;
    /// QUERY_STATUS `data_lo` (`_hi` follows): the fence value.
    pub const QS_DATA: usize = 5;

    /// RUN_LIST `ib_base_lo` (bits 2..32; `ib_base_hi` follows).
    pub const RL_IB_BASE: usize = 1;
    /// RUN_LIST `ib_size`, dwords.
    pub const RL_IB_SIZE: Field = Field::new(3, 0, 20);
    /// RUN_LIST `chain`.
    pub const RL_CHAIN: Field = Field::new(3, 20, 1);
    /// RUN_LIST `offload_polling`.
    pub const RL_OFFLOAD_POLLING: Field = Field::new(3, 21, 1);
    /// RUN_LIST `chained_runlist_idle_disable`.
    pub const RL_CHAINED_RUNLIST_IDLE_DISABLE: Field = Field::new(3, 22, 1);
    /// RUN_LIST `valid`.
    pub const RL_VALID: Field = Field::new(3, 23, 1);
    /// RUN_LIST `process_cnt`.
    pub const RL_PROCESS_CNT: Field = Field::new(3, 24, 4);

    /// INVALIDATE_TLBS `PACKET3_INVALIDATE_TLBS_DST_SEL`.
    pub const IT_DST_SEL: Field = Field::new(1, 0, 4);
    /// INVALIDATE_TLBS `PACKET3_INVALIDATE_TLBS_ALL_HUB`.
    pub const IT_ALL_HUB: Field = Field::new(1, 4, 1);
    /// INVALIDATE_TLBS `PACKET3_INVALIDATE_TLBS_PASID`.
    pub const IT_PASID: Field = Field::new(1, 5, 16);
    /// INVALIDATE_TLBS `PACKET3_INVALIDATE_TLBS_FLUSH_TYPE`.
    pub const IT_FLUSH_TYPE: Field = Field::new(1, 29, 3);
}

/// Generates a `u8`-backed enum of a packet field's defined values, with `from_raw` (the
/// field name for [`WireError::BadValue`] when the value is not defined).
macro_rules! field_enum {
    ($(#[$m:meta])* $name:ident, $field:literal { $($(#[$vm:meta])* $v:ident = $n:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum $name {
            $($(#[$vm])* $v = $n),+
        }

        impl $name {
            /// The value of field `raw`.
            ///
            /// # Errors
            #[doc = concat!("[`WireError::BadValue`] naming `", $field, "` for a value the header does not define.")]
            pub fn from_raw(raw: u32) -> Result<$name, WireError> {
                match raw {
                    $($n => Ok($name::$v),)+
                    _ => Err(WireError::BadValue { field: $field, value: raw.into() }),
                }
            }
        }
    };
}

field_enum!(
    /// SET_RESOURCES `queue_type` (`enum mes_set_resources_queue_type_enum`): which
    /// interface queue the packet configures.
    SetResourcesQueueType, "SET_RESOURCES queue_type" {
        /// The kernel interface queue (amdgpu's KIQ).
        Kiq = 0,
        /// The HSA interface queue (amdkfd's HIQ).
        Hiq = 1,
        /// The HSA debug interface queue.
        HsaDebug = 4,
    }
);

field_enum!(
    /// `engine_sel` of MAP_QUEUES, UNMAP_QUEUES and QUERY_STATUS (`enum
    /// mes_map_queues_engine_sel_enum`), with the legacy `extended_engine_sel` (0).
    EngineSel, "engine_sel" {
        /// A compute queue.
        Compute = 0,
        /// An SDMA0 queue.
        Sdma0 = 2,
        /// An SDMA1 queue.
        Sdma1 = 3,
    }
);

field_enum!(
    /// MAP_QUEUES `queue_sel` (`enum mes_map_queues_queue_sel_enum`).
    MapQueueSel, "MAP_QUEUES queue_sel" {
        /// Into the ME/pipe/queue slot the packet names (amdgpu's KIQ).
        SpecifiedSlot = 0,
        /// Into a slot the hardware scheduler picks (amdkfd's HWS).
        HwsDetermined = 1,
    }
);

field_enum!(
    /// MAP_QUEUES `queue_type` (`enum mes_map_queues_queue_type_enum`).
    MapQueueType, "MAP_QUEUES queue_type" {
        /// A normal compute queue.
        NormalCompute = 0,
        /// The debug interface queue.
        DebugInterface = 1,
        /// A static queue of normal latency.
        NormalLatencyStatic = 2,
        /// A static queue of low latency.
        LowLatencyStatic = 3,
    }
);

field_enum!(
    /// UNMAP_QUEUES `action` (`enum mes_unmap_queues_action_enum`; soc15d.h names 3).
    UnmapAction, "UNMAP_QUEUES action" {
        /// Save the queue's state to its MQD and unmap it.
        PreemptQueues = 0,
        /// Unmap it without saving (a hung queue).
        ResetQueues = 1,
        /// Disable the process' queues.
        DisableProcessQueues = 2,
        /// Preempt without unmapping (`PREEMPT_QUEUES_NO_UNMAP`): dword 3 is `RB_WPTR`.
        PreemptQueuesNoUnmap = 3,
    }
);

field_enum!(
    /// UNMAP_QUEUES `queue_sel` (`enum mes_unmap_queues_queue_sel_enum`).
    UnmapQueueSel, "UNMAP_QUEUES queue_sel" {
        /// The queues whose doorbell offsets follow (`num_queues` of them).
        SpecifiedQueues = 0,
        /// Every queue of the PASID in dword 2.
        PasidQueues = 1,
        /// Every queue.
        AllQueues = 2,
        /// Every queue but the static ones.
        AllNonStaticQueues = 3,
    }
);

field_enum!(
    /// QUERY_STATUS `interrupt_sel` (`enum mes_query_status_interrupt_sel_enum`).
    QueryInterruptSel, "QUERY_STATUS interrupt_sel" {
        /// Completion status: dword 2 holds a doorbell offset and engine.
        CompletionStatus = 0,
        /// Process status: dword 2 holds a PASID.
        ProcessStatus = 1,
        /// Queue status: dword 2 holds a doorbell offset and engine.
        QueueStatus = 2,
    }
);

field_enum!(
    /// QUERY_STATUS `command` (`enum mes_query_status_command_enum`).
    QueryCommand, "QUERY_STATUS command" {
        /// Raise the interrupt only.
        InterruptOnly = 0,
        /// Write the fence at once.
        FenceOnlyImmediate = 1,
        /// Write the fence once earlier writes are acknowledged (amdgpu's and amdkfd's
        /// choice).
        FenceOnlyAfterWriteAck = 2,
        /// Write the fence after the acknowledgement, then raise the interrupt.
        FenceWaitForWriteAckSendInterrupt = 3,
    }
);

/// `SET_RESOURCES`: the VMIDs and queues an interface queue's scheduler owns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetResources {
    /// `vmid_mask` (16 bits).
    pub vmid_mask: u16,
    /// `unmap_latency`, 100 ms units.
    pub unmap_latency: u8,
    /// `queue_type`: [`SetResourcesQueueType`] as its raw value.
    pub queue_type: u8,
    /// `queue_mask_lo`/`_hi`: one bit per MEC queue slot the scheduler may use.
    pub queue_mask: u64,
    /// `gws_mask_lo`/`_hi`.
    pub gws_mask: u64,
    /// `oac_mask` (16 bits).
    pub oac_mask: u16,
    /// `gds_heap_base` (10 bits).
    pub gds_heap_base: u16,
    /// `gds_heap_size` (10 bits).
    pub gds_heap_size: u16,
}

impl SetResources {
    /// What amdgpu's gfx9 `kiq_set_resources` writes: the KIQ owns `queue_mask`'s queues, no
    /// VMID, GWS, OAC or GDS.
    pub const fn amdgpu_kiq(queue_mask: u64) -> SetResources {
        SetResources {
            vmid_mask: 0,
            unmap_latency: 0,
            queue_type: SetResourcesQueueType::Kiq as u8,
            queue_mask,
            gws_mask: 0,
            oac_mask: 0,
            gds_heap_base: 0,
            gds_heap_size: 0,
        }
    }
}

/// `MAP_PROCESS`: a process' address space and trap handler for the hardware scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapProcess {
    /// `pasid` (16 bits).
    pub pasid: u16,
    /// `exec_cleaner_shader`.
    pub exec_cleaner_shader: bool,
    /// `debug_vmid` (4 bits).
    pub debug_vmid: u8,
    /// `new_debug`.
    pub new_debug: bool,
    /// `diq_enable`.
    pub diq_enable: bool,
    /// `process_quantum` (7 bits; amdkfd: 10).
    pub process_quantum: u8,
    /// `vm_context_page_table_base_addr_lo32`/`_hi32`: the page directory, as amdgpu's
    /// `amdgpu_gmc_pd_addr` gives it (a PDE value).
    pub page_table_base: u64,
    /// `sh_mem_bases`.
    pub sh_mem_bases: u32,
    /// `sh_mem_config`.
    pub sh_mem_config: u32,
    /// `sq_shader_tba_lo`/`_hi`: trap handler address >> 8, and bit 63 `TRAP_EN`
    /// (`SQ_SHADER_TBA_HI.TRAP_EN`, which amdkfd sets though gfx9 does not define it).
    pub sq_shader_tba: u64,
    /// `sq_shader_tma_lo`/`_hi`: trap handler memory >> 8.
    pub sq_shader_tma: u64,
    /// `gds_addr_lo`/`_hi`.
    pub gds_addr: u64,
    /// `num_gws` (7 bits).
    pub num_gws: u8,
    /// `sdma_enable`.
    pub sdma_enable: bool,
    /// `num_oac` (4 bits).
    pub num_oac: u8,
    /// The GDS size (10 bits: `gds_size` holds bits 0..6, `gds_size_hi` bits 6..10).
    pub gds_size: u16,
    /// `num_queues` (10 bits).
    pub num_queues: u16,
    /// `completion_signal_lo`/`_hi`.
    pub completion_signal: u64,
}

/// `MAP_QUEUES`: load a queue's MQD into a hardware queue slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapQueues {
    /// `queue_sel`: [`MapQueueSel`] as its raw value.
    pub queue_sel: u8,
    /// `PACKET3_MAP_QUEUES_VMID` (4 bits).
    pub vmid: u8,
    /// `gws_control_queue`.
    pub gws_control_queue: bool,
    /// `PACKET3_MAP_QUEUES_QUEUE`: the queue slot (3 bits).
    pub queue: u8,
    /// `PACKET3_MAP_QUEUES_PIPE` (2 bits).
    pub pipe: u8,
    /// `PACKET3_MAP_QUEUES_ME` (2 bits): 0 for MEC1, 1 for MEC2.
    pub me: u8,
    /// `queue_type`: [`MapQueueType`] as its raw value.
    pub queue_type: u8,
    /// `PACKET3_MAP_QUEUES_ALLOC_FORMAT` (2 bits; 0: all on one pipe).
    pub alloc_format: u8,
    /// `engine_sel`: [`EngineSel`] as its raw value.
    pub engine_sel: u8,
    /// `extended_engine_sel` (2 bits; 0: legacy `engine_sel`).
    pub extended_engine_sel: u8,
    /// `num_queues` (3 bits; amdgpu and amdkfd: 1).
    pub num_queues: u8,
    /// `check_disable`.
    pub check_disable: bool,
    /// `doorbell_offset`: the queue's doorbell, dwords into the aperture (26 bits).
    pub doorbell_offset: u32,
    /// `mqd_addr_lo`/`_hi`: the GPU address of the queue's MQD.
    pub mqd_addr: u64,
    /// `wptr_addr_lo`/`_hi`: where the CP polls the write pointer.
    pub wptr_addr: u64,
}

impl MapQueues {
    /// What amdgpu's gfx9 `kiq_map_queues` writes for a compute ring: the slot given by
    /// `mec` (1 or 2, amdgpu's `ring->me`), `pipe` and `queue`, VMID 0, a normal compute
    /// queue, one queue.
    pub const fn amdgpu_kiq(
        mec: u8,
        pipe: u8,
        queue: u8,
        doorbell_offset: u32,
        mqd_addr: u64,
        wptr_addr: u64,
    ) -> MapQueues {
        MapQueues {
            queue_sel: MapQueueSel::SpecifiedSlot as u8,
            vmid: 0,
            gws_control_queue: false,
            queue,
            pipe,
            me: if mec == 1 { 0 } else { 1 },
            queue_type: MapQueueType::NormalCompute as u8,
            alloc_format: 0,
            engine_sel: EngineSel::Compute as u8,
            extended_engine_sel: 0,
            num_queues: 1,
            check_disable: false,
            doorbell_offset,
            mqd_addr,
            wptr_addr,
        }
    }

    /// What amdkfd's `pm_map_queues_v9` writes for a user compute queue in a runlist: a slot
    /// the scheduler picks, a normal compute queue (a static one for a debug process'
    /// `is_static`), one queue.
    pub const fn amdkfd_hws(
        doorbell_offset: u32,
        mqd_addr: u64,
        wptr_addr: u64,
        gws: bool,
        is_static: bool,
    ) -> MapQueues {
        MapQueues {
            queue_sel: MapQueueSel::HwsDetermined as u8,
            vmid: 0,
            gws_control_queue: gws,
            queue: 0,
            pipe: 0,
            me: 0,
            queue_type: if is_static {
                MapQueueType::NormalLatencyStatic as u8
            } else {
                MapQueueType::NormalCompute as u8
            },
            alloc_format: 0,
            engine_sel: EngineSel::Compute as u8,
            extended_engine_sel: 0,
            num_queues: 1,
            check_disable: false,
            doorbell_offset,
            mqd_addr,
            wptr_addr,
        }
    }
}

/// Which queues an `UNMAP_QUEUES` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmapQueues {
    /// `num_queues` (1..=4) queues by doorbell offset (`queue_sel` 0).
    Doorbells {
        /// `action`.
        action: UnmapAction,
        /// `engine_sel`.
        engine_sel: EngineSel,
        /// `doorbell_offset0`..: the first `count` are the queues.
        doorbell_offsets: [u32; 4],
        /// `num_queues`.
        count: u8,
    },
    /// One queue preempted without unmapping (`PREEMPT_QUEUES_NO_UNMAP`): its doorbell
    /// offset, and the ring write pointer to resume from in dword 3.
    PreemptNoUnmap {
        /// `engine_sel`.
        engine_sel: EngineSel,
        /// `doorbell_offset0`.
        doorbell_offset: u32,
        /// `RB_WPTR`.
        rb_wptr: u32,
    },
    /// Every queue of a PASID (`queue_sel` 1).
    Pasid {
        /// `action`.
        action: UnmapAction,
        /// `engine_sel`.
        engine_sel: EngineSel,
        /// `pasid`.
        pasid: u16,
    },
    /// Every queue (`queue_sel` 2), or every non-static one (3).
    All {
        /// `action`.
        action: UnmapAction,
        /// `engine_sel`.
        engine_sel: EngineSel,
        /// Keep the static queues (`queue_sel` 3).
        non_static_only: bool,
    },
}

impl UnmapQueues {
    /// What amdgpu's gfx9 `kiq_unmap_queues` writes to unmap (or reset) one compute ring
    /// (`action` [`UnmapAction::PreemptQueues`] or [`UnmapAction::ResetQueues`]).
    pub const fn amdgpu_kiq(action: UnmapAction, doorbell_offset: u32) -> UnmapQueues {
        UnmapQueues::Doorbells {
            action,
            engine_sel: EngineSel::Compute,
            doorbell_offsets: [doorbell_offset, 0, 0, 0],
            count: 1,
        }
    }
}

/// `QUERY_STATUS`: once what came before it on the interface queue is done, write `data` to
/// `addr` (a fence) and/or raise an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryStatus {
    /// `context_id` (28 bits), returned in the interrupt.
    pub context_id: u32,
    /// `interrupt_sel`.
    pub interrupt_sel: QueryInterruptSel,
    /// `command`.
    pub command: QueryCommand,
    /// Dword 2: a PASID for [`QueryInterruptSel::ProcessStatus`]; else the doorbell offset
    /// (bits 2..28) and `engine_sel` (bits 28..31), kept here as the raw dword.
    pub target: u32,
    /// `addr_lo`/`_hi`: where the fence goes (8-byte aligned for a 64-bit fence).
    pub addr: u64,
    /// `data_lo`/`_hi`: the fence value.
    pub data: u64,
}

impl QueryStatus {
    /// The fence amdkfd's `pm_query_status_v9` writes (and amdgpu's KIQ, with doorbell
    /// offset 0 and the compute engine): completion status, write `value` to `addr` after
    /// the write acknowledgement, no interrupt.
    pub const fn fence(addr: u64, value: u64) -> QueryStatus {
        QueryStatus {
            context_id: 0,
            interrupt_sel: QueryInterruptSel::CompletionStatus,
            command: QueryCommand::FenceOnlyAfterWriteAck,
            target: 0,
            addr,
            data: value,
        }
    }

    /// The doorbell offset of dword 2 (meaningless for a process-status query).
    pub fn doorbell_offset(&self) -> u32 {
        field::QS_DOORBELL_OFFSET.get(&[0, 0, self.target])
    }
}

/// `RUN_LIST`: run the runlist indirect buffer at `ib_base` (MAP_PROCESS and MAP_QUEUES
/// packets, `ib_size` dwords).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunList {
    /// `ib_base_lo`/`_hi`: 4-byte aligned.
    pub ib_base: u64,
    /// `ib_size`, dwords (20 bits).
    pub ib_size: u32,
    /// `chain`.
    pub chain: bool,
    /// `offload_polling`.
    pub offload_polling: bool,
    /// `chained_runlist_idle_disable`.
    pub chained_runlist_idle_disable: bool,
    /// `valid`.
    pub valid: bool,
    /// `process_cnt` (4 bits).
    pub process_cnt: u8,
}

/// `INVALIDATE_TLBS`: flush a PASID's GPU TLB entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvalidateTlbs {
    /// `DST_SEL` (4 bits; amdgpu: 1).
    pub dst_sel: u8,
    /// `ALL_HUB`: the MM hub too, not only the GC hub.
    pub all_hub: bool,
    /// `PASID`.
    pub pasid: u16,
    /// `FLUSH_TYPE` (3 bits; 0 legacy, 1 lightweight, 2 heavyweight).
    pub flush_type: u8,
}

impl InvalidateTlbs {
    /// What amdgpu's gfx9 `kiq_invalidate_tlbs` writes.
    pub const fn amdgpu_kiq(pasid: u16, flush_type: u8, all_hub: bool) -> InvalidateTlbs {
        InvalidateTlbs {
            dst_sel: 1,
            all_hub,
            pasid,
            flush_type,
        }
    }
}

/// A typed queue-management packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KiqPacket {
    /// `SET_RESOURCES`.
    SetResources(SetResources),
    /// `MAP_PROCESS`.
    MapProcess(MapProcess),
    /// `MAP_QUEUES`.
    MapQueues(MapQueues),
    /// `UNMAP_QUEUES`.
    UnmapQueues(UnmapQueues),
    /// `QUERY_STATUS`.
    QueryStatus(QueryStatus),
    /// `RUN_LIST`.
    RunList(RunList),
    /// `INVALIDATE_TLBS`.
    InvalidateTlbs(InvalidateTlbs),
}

/// Writes `value` into `f` of `d`, refusing a value wider than the field.
fn put(d: &mut [u32], f: Field, name: &'static str, value: u64) -> Result<(), WireError> {
    if !f.fits(value) {
        return Err(WireError::BadValue { field: name, value });
    }
    f.set(d, value as u32);
    Ok(())
}

/// `put(d, FIELD, "PACKET field", packet.field)`, the name made of the packet's and the
/// field's (the struct field is named as `kfd_pm4_headers_ai.h` names it).
macro_rules! put {
    ($d:expr, $packet:ident, $s:ident . $field:ident, $f:expr) => {
        put(
            $d,
            $f,
            concat!(stringify!($packet), " ", stringify!($field)),
            $s.$field.into(),
        )?
    };
}

impl KiqPacket {
    /// Dwords the packet takes, header included.
    pub const fn dwords(&self) -> usize {
        match self {
            KiqPacket::SetResources(_) => dwords::SET_RESOURCES,
            KiqPacket::MapProcess(_) => dwords::MAP_PROCESS,
            KiqPacket::MapQueues(_) => dwords::MAP_QUEUES,
            KiqPacket::UnmapQueues(_) => dwords::UNMAP_QUEUES,
            KiqPacket::QueryStatus(_) => dwords::QUERY_STATUS,
            KiqPacket::RunList(_) => dwords::RUN_LIST,
            KiqPacket::InvalidateTlbs(_) => dwords::INVALIDATE_TLBS,
        }
    }

    /// The packet's opcode.
    pub const fn opcode(&self) -> u8 {
        match self {
            KiqPacket::SetResources(_) => OP_SET_RESOURCES,
            KiqPacket::MapProcess(_) => OP_MAP_PROCESS,
            KiqPacket::MapQueues(_) => OP_MAP_QUEUES,
            KiqPacket::UnmapQueues(_) => OP_UNMAP_QUEUES,
            KiqPacket::QueryStatus(_) => OP_QUERY_STATUS,
            KiqPacket::RunList(_) => OP_RUN_LIST,
            KiqPacket::InvalidateTlbs(_) => OP_INVALIDATE_TLBS,
        }
    }

    /// Writes the packet into the first [`KiqPacket::dwords`] dwords of `out` (every bit the
    /// packet does not set is 0, as after amdkfd's `memset`), and returns that count.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when `out` is shorter than the packet;
    /// [`WireError::BadValue`] naming the field when a value does not fit it (a doorbell
    /// offset past 26 bits, a queue slot past 7, an UNMAP_QUEUES count outside 1..=4, a
    /// run-list base not 4-byte aligned). Nothing is written then.
    pub fn emit(&self, out: &mut [u32]) -> Result<usize, WireError> {
        let n = self.dwords();
        let header = packet3(self.opcode(), n as u32 - 1);
        let Some(out) = out.get_mut(..n) else {
            return Err(WireError::Truncated {
                what: "KIQ packet",
                header,
                needed: n,
                available: out.len(),
            });
        };
        let mut d = [0u32; dwords::MAP_PROCESS];
        let d = &mut d[..n];
        d[0] = header;
        self.emit_body(d)?;
        out.copy_from_slice(d);
        Ok(n)
    }

    fn emit_body(&self, d: &mut [u32]) -> Result<(), WireError> {
        use field::*;
        match *self {
            KiqPacket::SetResources(s) => {
                put!(d, SET_RESOURCES, s.vmid_mask, SR_VMID_MASK);
                put!(d, SET_RESOURCES, s.unmap_latency, SR_UNMAP_LATENCY);
                SetResourcesQueueType::from_raw(s.queue_type.into())?;
                put!(d, SET_RESOURCES, s.queue_type, SR_QUEUE_TYPE);
                set_u64(d, SR_QUEUE_MASK, s.queue_mask);
                set_u64(d, SR_GWS_MASK, s.gws_mask);
                put!(d, SET_RESOURCES, s.oac_mask, SR_OAC_MASK);
                put!(d, SET_RESOURCES, s.gds_heap_base, SR_GDS_HEAP_BASE);
                put!(d, SET_RESOURCES, s.gds_heap_size, SR_GDS_HEAP_SIZE);
            }
            KiqPacket::MapProcess(m) => {
                put!(d, MAP_PROCESS, m.pasid, MP_PASID);
                put!(
                    d,
                    MAP_PROCESS,
                    m.exec_cleaner_shader,
                    MP_EXEC_CLEANER_SHADER
                );
                put!(d, MAP_PROCESS, m.debug_vmid, MP_DEBUG_VMID);
                put!(d, MAP_PROCESS, m.new_debug, MP_NEW_DEBUG);
                put!(d, MAP_PROCESS, m.diq_enable, MP_DIQ_ENABLE);
                put!(d, MAP_PROCESS, m.process_quantum, MP_PROCESS_QUANTUM);
                set_u64(d, MP_PAGE_TABLE_BASE, m.page_table_base);
                MP_SH_MEM_BASES.set(d, m.sh_mem_bases);
                MP_SH_MEM_CONFIG.set(d, m.sh_mem_config);
                set_u64(d, MP_TBA, m.sq_shader_tba);
                set_u64(d, MP_TMA, m.sq_shader_tma);
                set_u64(d, MP_GDS_ADDR, m.gds_addr);
                put!(d, MAP_PROCESS, m.num_gws, MP_NUM_GWS);
                put!(d, MAP_PROCESS, m.sdma_enable, MP_SDMA_ENABLE);
                put!(d, MAP_PROCESS, m.num_oac, MP_NUM_OAC);
                if m.gds_size >= 1 << 10 {
                    return Err(WireError::BadValue {
                        field: "MAP_PROCESS gds_size",
                        value: m.gds_size.into(),
                    });
                }
                MP_GDS_SIZE.set(d, (m.gds_size & 0x3f).into());
                MP_GDS_SIZE_HI.set(d, (m.gds_size >> 6).into());
                put!(d, MAP_PROCESS, m.num_queues, MP_NUM_QUEUES);
                set_u64(d, MP_COMPLETION_SIGNAL, m.completion_signal);
            }
            KiqPacket::MapQueues(m) => {
                MapQueueSel::from_raw(m.queue_sel.into())?;
                MapQueueType::from_raw(m.queue_type.into())?;
                put!(d, MAP_QUEUES, m.extended_engine_sel, MQ_EXTENDED_ENGINE_SEL);
                if m.extended_engine_sel == 0 {
                    EngineSel::from_raw(m.engine_sel.into())?;
                }
                put!(d, MAP_QUEUES, m.queue_sel, MQ_QUEUE_SEL);
                put!(d, MAP_QUEUES, m.vmid, MQ_VMID);
                put!(d, MAP_QUEUES, m.gws_control_queue, MQ_GWS_CONTROL_QUEUE);
                put!(d, MAP_QUEUES, m.queue, MQ_QUEUE);
                put!(d, MAP_QUEUES, m.pipe, MQ_PIPE);
                put!(d, MAP_QUEUES, m.me, MQ_ME);
                put!(d, MAP_QUEUES, m.queue_type, MQ_QUEUE_TYPE);
                put!(d, MAP_QUEUES, m.alloc_format, MQ_ALLOC_FORMAT);
                put!(d, MAP_QUEUES, m.engine_sel, MQ_ENGINE_SEL);
                put!(d, MAP_QUEUES, m.num_queues, MQ_NUM_QUEUES);
                put!(d, MAP_QUEUES, m.check_disable, MQ_CHECK_DISABLE);
                put!(d, MAP_QUEUES, m.doorbell_offset, MQ_DOORBELL_OFFSET);
                set_u64(d, MQ_MQD_ADDR, m.mqd_addr);
                set_u64(d, MQ_WPTR_ADDR, m.wptr_addr);
            }
            KiqPacket::UnmapQueues(u) => {
                let (action, queue_sel, engine_sel, count) = match u {
                    UnmapQueues::Doorbells {
                        action,
                        engine_sel,
                        doorbell_offsets,
                        count,
                    } => {
                        if action == UnmapAction::PreemptQueuesNoUnmap {
                            // Its dword 3 is RB_WPTR: use the PreemptNoUnmap variant.
                            return Err(WireError::BadValue {
                                field: "UNMAP_QUEUES action",
                                value: action as u64,
                            });
                        }
                        if !(1..=4).contains(&count) {
                            return Err(WireError::BadValue {
                                field: "UNMAP_QUEUES num_queues",
                                value: count.into(),
                            });
                        }
                        for (i, &o) in doorbell_offsets.iter().take(count.into()).enumerate() {
                            const NAMES: [&str; 4] = [
                                "UNMAP_QUEUES doorbell_offset0",
                                "UNMAP_QUEUES doorbell_offset1",
                                "UNMAP_QUEUES doorbell_offset2",
                                "UNMAP_QUEUES doorbell_offset3",
                            ];
                            put(d, UQ_DOORBELL_OFFSET[i], NAMES[i], o.into())?;
                        }
                        (action, UnmapQueueSel::SpecifiedQueues, engine_sel, count)
                    }
                    UnmapQueues::PreemptNoUnmap {
                        engine_sel,
                        doorbell_offset,
                        rb_wptr,
                    } => {
                        put(
                            d,
                            UQ_DOORBELL_OFFSET[0],
                            "UNMAP_QUEUES doorbell_offset0",
                            doorbell_offset.into(),
                        )?;
                        UQ_RB_WPTR.set(d, rb_wptr);
                        (
                            UnmapAction::PreemptQueuesNoUnmap,
                            UnmapQueueSel::SpecifiedQueues,
                            engine_sel,
                            1,
                        )
                    }
                    UnmapQueues::Pasid {
                        action,
                        engine_sel,
                        pasid,
                    } => {
                        UQ_PASID.set(d, pasid.into());
                        (action, UnmapQueueSel::PasidQueues, engine_sel, 0)
                    }
                    UnmapQueues::All {
                        action,
                        engine_sel,
                        non_static_only,
                    } => {
                        let sel = if non_static_only {
                            UnmapQueueSel::AllNonStaticQueues
                        } else {
                            UnmapQueueSel::AllQueues
                        };
                        (action, sel, engine_sel, 0)
                    }
                };
                UQ_ACTION.set(d, action as u32);
                UQ_QUEUE_SEL.set(d, queue_sel as u32);
                UQ_ENGINE_SEL.set(d, engine_sel as u32);
                UQ_NUM_QUEUES.set(d, count.into());
            }
            KiqPacket::QueryStatus(q) => {
                put!(d, QUERY_STATUS, q.context_id, QS_CONTEXT_ID);
                QS_INTERRUPT_SEL.set(d, q.interrupt_sel as u32);
                QS_COMMAND.set(d, q.command as u32);
                d[2] = q.target;
                set_u64(d, QS_ADDR, q.addr);
                set_u64(d, QS_DATA, q.data);
            }
            KiqPacket::RunList(r) => {
                if r.ib_base & 3 != 0 {
                    return Err(WireError::BadValue {
                        field: "RUN_LIST ib_base",
                        value: r.ib_base,
                    });
                }
                set_u64(d, RL_IB_BASE, r.ib_base);
                put!(d, RUN_LIST, r.ib_size, RL_IB_SIZE);
                RL_CHAIN.set(d, r.chain.into());
                RL_OFFLOAD_POLLING.set(d, r.offload_polling.into());
                RL_CHAINED_RUNLIST_IDLE_DISABLE.set(d, r.chained_runlist_idle_disable.into());
                RL_VALID.set(d, r.valid.into());
                put!(d, RUN_LIST, r.process_cnt, RL_PROCESS_CNT);
            }
            KiqPacket::InvalidateTlbs(t) => {
                put!(d, INVALIDATE_TLBS, t.dst_sel, IT_DST_SEL);
                IT_ALL_HUB.set(d, t.all_hub.into());
                IT_PASID.set(d, t.pasid.into());
                put!(d, INVALIDATE_TLBS, t.flush_type, IT_FLUSH_TYPE);
            }
        }
        Ok(())
    }

    /// Reads the packet at the start of `d` (more dwords may follow it).
    ///
    /// # Errors
    /// [`WireError::Truncated`] for a buffer shorter than the header says, or a header whose
    /// length is not the packet's; [`WireError::UnknownOpcode`] for a type-0, type-1 or
    /// filler header or another opcode; [`WireError::BadValue`] naming the field for an
    /// `engine_sel`, `queue_sel`, `queue_type`, `action`, `interrupt_sel` or SET_RESOURCES
    /// `queue_type` the header does not define, or an UNMAP_QUEUES of specified queues whose
    /// `num_queues` is outside 1..=4.
    pub fn parse(d: &[u32]) -> Result<KiqPacket, WireError> {
        use field::*;
        let header = d.first().copied().unwrap_or(0);
        let Header::Type3 { opcode, count } = Header::parse(header) else {
            if d.is_empty() {
                return Err(WireError::Truncated {
                    what: "KIQ packet",
                    header,
                    needed: 1,
                    available: 0,
                });
            }
            return Err(WireError::UnknownOpcode {
                what: "KIQ packet",
                header,
            });
        };
        let want = match opcode {
            OP_SET_RESOURCES => dwords::SET_RESOURCES,
            OP_MAP_PROCESS => dwords::MAP_PROCESS,
            OP_MAP_QUEUES => dwords::MAP_QUEUES,
            OP_UNMAP_QUEUES => dwords::UNMAP_QUEUES,
            OP_QUERY_STATUS => dwords::QUERY_STATUS,
            OP_RUN_LIST => dwords::RUN_LIST,
            OP_INVALIDATE_TLBS => dwords::INVALIDATE_TLBS,
            _ => {
                return Err(WireError::UnknownOpcode {
                    what: "KIQ packet",
                    header,
                })
            }
        };
        let len = count as usize + 2;
        if len != want || d.len() < len {
            return Err(WireError::Truncated {
                what: "KIQ packet",
                header,
                needed: want,
                available: if len != want { len } else { d.len() },
            });
        }
        let d = &d[..len];
        let g = |f: Field| f.get(d);
        Ok(match opcode {
            OP_SET_RESOURCES => {
                SetResourcesQueueType::from_raw(g(SR_QUEUE_TYPE))?;
                KiqPacket::SetResources(SetResources {
                    vmid_mask: g(SR_VMID_MASK) as u16,
                    unmap_latency: g(SR_UNMAP_LATENCY) as u8,
                    queue_type: g(SR_QUEUE_TYPE) as u8,
                    queue_mask: get_u64(d, SR_QUEUE_MASK),
                    gws_mask: get_u64(d, SR_GWS_MASK),
                    oac_mask: g(SR_OAC_MASK) as u16,
                    gds_heap_base: g(SR_GDS_HEAP_BASE) as u16,
                    gds_heap_size: g(SR_GDS_HEAP_SIZE) as u16,
                })
            }
            OP_MAP_PROCESS => KiqPacket::MapProcess(MapProcess {
                pasid: g(MP_PASID) as u16,
                exec_cleaner_shader: g(MP_EXEC_CLEANER_SHADER) != 0,
                debug_vmid: g(MP_DEBUG_VMID) as u8,
                new_debug: g(MP_NEW_DEBUG) != 0,
                diq_enable: g(MP_DIQ_ENABLE) != 0,
                process_quantum: g(MP_PROCESS_QUANTUM) as u8,
                page_table_base: get_u64(d, MP_PAGE_TABLE_BASE),
                sh_mem_bases: g(MP_SH_MEM_BASES),
                sh_mem_config: g(MP_SH_MEM_CONFIG),
                sq_shader_tba: get_u64(d, MP_TBA),
                sq_shader_tma: get_u64(d, MP_TMA),
                gds_addr: get_u64(d, MP_GDS_ADDR),
                num_gws: g(MP_NUM_GWS) as u8,
                sdma_enable: g(MP_SDMA_ENABLE) != 0,
                num_oac: g(MP_NUM_OAC) as u8,
                gds_size: (g(MP_GDS_SIZE) | g(MP_GDS_SIZE_HI) << 6) as u16,
                num_queues: g(MP_NUM_QUEUES) as u16,
                completion_signal: get_u64(d, MP_COMPLETION_SIGNAL),
            }),
            OP_MAP_QUEUES => {
                MapQueueSel::from_raw(g(MQ_QUEUE_SEL))?;
                MapQueueType::from_raw(g(MQ_QUEUE_TYPE))?;
                if g(MQ_EXTENDED_ENGINE_SEL) == 0 {
                    EngineSel::from_raw(g(MQ_ENGINE_SEL))?;
                }
                KiqPacket::MapQueues(MapQueues {
                    queue_sel: g(MQ_QUEUE_SEL) as u8,
                    vmid: g(MQ_VMID) as u8,
                    gws_control_queue: g(MQ_GWS_CONTROL_QUEUE) != 0,
                    queue: g(MQ_QUEUE) as u8,
                    pipe: g(MQ_PIPE) as u8,
                    me: g(MQ_ME) as u8,
                    queue_type: g(MQ_QUEUE_TYPE) as u8,
                    alloc_format: g(MQ_ALLOC_FORMAT) as u8,
                    engine_sel: g(MQ_ENGINE_SEL) as u8,
                    extended_engine_sel: g(MQ_EXTENDED_ENGINE_SEL) as u8,
                    num_queues: g(MQ_NUM_QUEUES) as u8,
                    check_disable: g(MQ_CHECK_DISABLE) != 0,
                    doorbell_offset: g(MQ_DOORBELL_OFFSET),
                    mqd_addr: get_u64(d, MQ_MQD_ADDR),
                    wptr_addr: get_u64(d, MQ_WPTR_ADDR),
                })
            }
            OP_UNMAP_QUEUES => {
                let action = UnmapAction::from_raw(g(UQ_ACTION))?;
                let engine_sel = EngineSel::from_raw(g(UQ_ENGINE_SEL))?;
                let count = g(UQ_NUM_QUEUES) as u8;
                KiqPacket::UnmapQueues(match UnmapQueueSel::from_raw(g(UQ_QUEUE_SEL))? {
                    UnmapQueueSel::SpecifiedQueues
                        if action == UnmapAction::PreemptQueuesNoUnmap =>
                    {
                        UnmapQueues::PreemptNoUnmap {
                            engine_sel,
                            doorbell_offset: g(UQ_DOORBELL_OFFSET[0]),
                            rb_wptr: g(UQ_RB_WPTR),
                        }
                    }
                    UnmapQueueSel::SpecifiedQueues => {
                        if !(1..=4).contains(&count) {
                            return Err(WireError::BadValue {
                                field: "UNMAP_QUEUES num_queues",
                                value: count.into(),
                            });
                        }
                        let mut doorbell_offsets = [0; 4];
                        for (i, o) in doorbell_offsets.iter_mut().enumerate().take(count.into()) {
                            *o = g(UQ_DOORBELL_OFFSET[i]);
                        }
                        UnmapQueues::Doorbells {
                            action,
                            engine_sel,
                            doorbell_offsets,
                            count,
                        }
                    }
                    UnmapQueueSel::PasidQueues => UnmapQueues::Pasid {
                        action,
                        engine_sel,
                        pasid: g(UQ_PASID) as u16,
                    },
                    sel => UnmapQueues::All {
                        action,
                        engine_sel,
                        non_static_only: sel == UnmapQueueSel::AllNonStaticQueues,
                    },
                })
            }
            OP_QUERY_STATUS => {
                let interrupt_sel = QueryInterruptSel::from_raw(g(QS_INTERRUPT_SEL))?;
                if interrupt_sel != QueryInterruptSel::ProcessStatus {
                    EngineSel::from_raw(g(QS_ENGINE_SEL))?;
                }
                KiqPacket::QueryStatus(QueryStatus {
                    context_id: g(QS_CONTEXT_ID),
                    interrupt_sel,
                    command: QueryCommand::from_raw(g(QS_COMMAND))?,
                    target: d[2],
                    addr: get_u64(d, QS_ADDR),
                    data: get_u64(d, QS_DATA),
                })
            }
            OP_RUN_LIST => KiqPacket::RunList(RunList {
                ib_base: get_u64(d, RL_IB_BASE) & !3,
                ib_size: g(RL_IB_SIZE),
                chain: g(RL_CHAIN) != 0,
                offload_polling: g(RL_OFFLOAD_POLLING) != 0,
                chained_runlist_idle_disable: g(RL_CHAINED_RUNLIST_IDLE_DISABLE) != 0,
                valid: g(RL_VALID) != 0,
                process_cnt: g(RL_PROCESS_CNT) as u8,
            }),
            _ => KiqPacket::InvalidateTlbs(InvalidateTlbs {
                dst_sel: g(IT_DST_SEL) as u8,
                all_hub: g(IT_ALL_HUB) != 0,
                pasid: g(IT_PASID) as u16,
                flush_type: g(IT_FLUSH_TYPE) as u8,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emit(p: KiqPacket) -> [u32; dwords::MAP_PROCESS] {
        let mut d = [0xdead_beef; dwords::MAP_PROCESS];
        let n = p.emit(&mut d).unwrap();
        assert_eq!(n, p.dwords());
        // Nothing past the packet.
        assert!(d[n..].iter().all(|&w| w == 0xdead_beef));
        assert_eq!(KiqPacket::parse(&d[..n]), Ok(p), "round trip of {p:?}");
        d
    }

    /// amdgpu's gfx9 KIQ writes for MEC1 pipe 0 queue 2 (`me == 1`: ME field 0), doorbell
    /// dword 0x10, by soc15d.h's macros: `PACKET3(0xA2, 5)` = 3 << 30 | 5 << 16 | 0xA2 << 8;
    /// `QUEUE(2)` = 2 << 13, `NUM_QUEUES(1)` = 1 << 29; `DOORBELL_OFFSET(0x10)` = 0x10 << 2.
    #[test]
    fn map_queues_is_amdgpus_kiq_packet() {
        let d = emit(KiqPacket::MapQueues(MapQueues::amdgpu_kiq(
            1,
            0,
            2,
            0x10,
            0x0000_0080_1234_5600,
            0x0000_0080_0000_1008,
        )));
        assert_eq!(
            d[..7],
            [
                0xc005_a200,
                0x2000_4000,
                0x40,
                0x1234_5600,
                0x80,
                0x0000_1008,
                0x80
            ]
        );
        // MEC2, pipe 3, queue 7: ME(1) = 1 << 18, PIPE(3) = 3 << 16, QUEUE(7) = 7 << 13.
        let d = emit(KiqPacket::MapQueues(MapQueues::amdgpu_kiq(
            2, 3, 7, 0x3ff_fffc, 0, 0,
        )));
        assert_eq!(d[1], 0x2000_0000 | 1 << 18 | 3 << 16 | 7 << 13);
        assert_eq!(d[2], 0x3ff_fffc << 2);
    }

    /// Every MAP_QUEUES control field at once, each at its soc15d.h / kfd_pm4_headers_ai.h
    /// shift: `EXTENDED_ENGINE_SEL` 2, `QUEUE_SEL` 4, `VMID` 8, `gws_control_queue` 12,
    /// `QUEUE` 13, `PIPE` 16, `ME` 18, `QUEUE_TYPE` 21, `ALLOC_FORMAT` 24, `ENGINE_SEL` 26,
    /// `NUM_QUEUES` 29; `CHECK_DISABLE` 1 of dword 2.
    #[test]
    fn map_queues_fields_sit_at_their_shifts() {
        let d = emit(KiqPacket::MapQueues(MapQueues {
            queue_sel: 1,
            vmid: 0xf,
            gws_control_queue: true,
            queue: 5,
            pipe: 2,
            me: 1,
            queue_type: 3,
            alloc_format: 2,
            engine_sel: 6,
            extended_engine_sel: 1,
            num_queues: 1,
            check_disable: true,
            doorbell_offset: 0x22,
            mqd_addr: 0xffff_ffff_ffff_ff00,
            wptr_addr: 0x1_0000_0000,
        }));
        assert_eq!(
            d[1],
            1 << 2
                | 1 << 4
                | 0xf << 8
                | 1 << 12
                | 5 << 13
                | 2 << 16
                | 1 << 18
                | 3 << 21
                | 2 << 24
                | 6 << 26
                | 1 << 29
        );
        assert_eq!(d[2..7], [0x22 << 2 | 2, 0xffff_ff00, 0xffff_ffff, 0, 1]);
    }

    /// amdkfd's `pm_map_queues_v9` for a user queue: `queue_sel` 1 (bits 4..6), a GWS queue
    /// sets bit 12, a static (debug) one `queue_type` 2 (bits 21..24).
    #[test]
    fn map_queues_is_amdkfds_runlist_packet() {
        let d = emit(KiqPacket::MapQueues(MapQueues::amdkfd_hws(
            0x1002, 0x1000, 0x2038, false, false,
        )));
        assert_eq!(
            d[..7],
            [0xc005_a200, 0x2000_0010, 0x1002 << 2, 0x1000, 0, 0x2038, 0]
        );
        let d = emit(KiqPacket::MapQueues(MapQueues::amdkfd_hws(
            4, 0x1000, 0x2038, true, true,
        )));
        assert_eq!(d[1], 0x2000_0010 | 1 << 12 | 2 << 21);
    }

    /// gfx9 `kiq_unmap_queues` (`PACKET3(0xA3, 4)`): `ACTION(a) | QUEUE_SEL(0) |
    /// ENGINE_SEL(0) | NUM_QUEUES(1)`, `DOORBELL_OFFSET0(db)`, then zeros; amdkfd's by PASID
    /// and all-queues forms.
    #[test]
    fn unmap_queues_packets() {
        let d = emit(KiqPacket::UnmapQueues(UnmapQueues::amdgpu_kiq(
            UnmapAction::ResetQueues,
            0x10,
        )));
        assert_eq!(d[..6], [0xc004_a300, 0x2000_0001, 0x40, 0, 0, 0]);
        let d = emit(KiqPacket::UnmapQueues(UnmapQueues::Pasid {
            action: UnmapAction::PreemptQueues,
            engine_sel: EngineSel::Compute,
            pasid: 0x8001,
        }));
        assert_eq!(d[..3], [0xc004_a300, 1 << 4, 0x8001]);
        let d = emit(KiqPacket::UnmapQueues(UnmapQueues::All {
            action: UnmapAction::PreemptQueues,
            engine_sel: EngineSel::Sdma1,
            non_static_only: true,
        }));
        assert_eq!(d[1], 3 << 4 | 3 << 26);
        let d = emit(KiqPacket::UnmapQueues(UnmapQueues::Doorbells {
            action: UnmapAction::PreemptQueues,
            engine_sel: EngineSel::Compute,
            doorbell_offsets: [2, 4, 6, 8],
            count: 4,
        }));
        assert_eq!(d[..6], [0xc004_a300, 4 << 29, 8, 16, 24, 32]);
        let d = emit(KiqPacket::UnmapQueues(UnmapQueues::PreemptNoUnmap {
            engine_sel: EngineSel::Compute,
            doorbell_offset: 6,
            rb_wptr: 0x1234,
        }));
        assert_eq!(d[..4], [0xc004_a300, 0x2000_0003, 24, 0x1234]);
    }

    /// `pm_query_status_v9` (`PACKET3(0xA4, 5)`): `COMMAND(2)` = 2 << 30, the address and
    /// the 64-bit fence value.
    #[test]
    fn query_status_fence() {
        let d = emit(KiqPacket::QueryStatus(QueryStatus::fence(
            0x7f00_1000_0008,
            0x1_0000_0002,
        )));
        assert_eq!(
            d[..7],
            [0xc005_a400, 0x8000_0000, 0, 0x1000_0008, 0x7f00, 2, 1]
        );
    }

    /// `kiq_set_resources` (`PACKET3(0xA0, 6)`, queue type KIQ) and amdkfd's HIQ form.
    #[test]
    fn set_resources_packets() {
        let d = emit(KiqPacket::SetResources(SetResources::amdgpu_kiq(
            0xffff_0000_0000_00ff,
        )));
        assert_eq!(d[..8], [0xc006_a000, 0, 0xff, 0xffff_0000, 0, 0, 0, 0]);
        let d = emit(KiqPacket::SetResources(SetResources {
            vmid_mask: 0xff00,
            unmap_latency: 40,
            queue_type: SetResourcesQueueType::Hiq as u8,
            queue_mask: 1,
            gws_mask: 0x1_0000_0000,
            oac_mask: 0xffff,
            gds_heap_base: 0x3ff,
            gds_heap_size: 0x201,
        }));
        assert_eq!(d[1], 0xff00 | 40 << 16 | 1 << 29);
        assert_eq!(d[4..8], [0, 1, 0xffff, 0x3ff | 0x201 << 11]);
    }

    /// `pm_map_process_v9` (17 dwords: `PACKET3(0xA1, 15)`): quantum 10 at bit 25, the GDS
    /// size split 6 + 4 bits, TBA_HI's TRAP_EN bit 31.
    #[test]
    fn map_process_packet() {
        let d = emit(KiqPacket::MapProcess(MapProcess {
            pasid: 0x8003,
            process_quantum: 10,
            page_table_base: 0x0000_0001_2345_6001,
            sh_mem_bases: 0x0002_0001,
            sh_mem_config: 0x1_0000 | 3,
            sq_shader_tba: (0x7fff_0000_0000 >> 8) | 1 << 63,
            sq_shader_tma: 0x7ffe_0000_0000 >> 8,
            gds_addr: 0,
            num_gws: 64,
            sdma_enable: true,
            num_oac: 0,
            gds_size: 0x3c5,
            num_queues: 3,
            ..MapProcess::default()
        }));
        assert_eq!(
            d,
            [
                0xc00f_a100,
                0x8003 | 10 << 25,
                0x2345_6001,
                1,
                0x0002_0001,
                0x1_0003,
                0xff00_0000,
                0x8000_007f,
                0xfe00_0000,
                0x7f,
                0,
                0,
                0,
                64 | 1 << 7 | 0xf << 12 | 0x05 << 16 | 3 << 22,
                0,
                0,
                0
            ]
        );
    }

    /// `pm_runlist_v9` (`PACKET3(0xA5, 2)`) and gfx9 `kiq_invalidate_tlbs`
    /// (`PACKET3(0x98, 0)`: `DST_SEL(1) | ALL_HUB(h) | PASID(p) << 5 | FLUSH_TYPE(t) << 29`).
    #[test]
    fn run_list_and_invalidate_tlbs() {
        let d = emit(KiqPacket::RunList(RunList {
            ib_base: 0x1_0000_2000,
            ib_size: 0x40,
            chain: true,
            chained_runlist_idle_disable: true,
            valid: true,
            process_cnt: 2,
            ..RunList::default()
        }));
        assert_eq!(
            d[..4],
            [
                0xc002_a500,
                0x2000,
                1,
                0x40 | 1 << 20 | 1 << 22 | 1 << 23 | 2 << 24
            ]
        );
        let d = emit(KiqPacket::InvalidateTlbs(InvalidateTlbs::amdgpu_kiq(
            0x8001, 2, true,
        )));
        assert_eq!(d[..2], [0xc000_9800, 1 | 1 << 4 | 0x8001 << 5 | 2 << 29]);
    }

    #[test]
    fn emit_refuses_values_wider_than_their_field_and_writes_nothing() {
        let mut out = [7u32; 8];
        let check = |p: KiqPacket, field: &str, out: &mut [u32; 8]| {
            let e = p.emit(out).unwrap_err();
            assert!(
                matches!(e, WireError::BadValue { field: f, .. } if f == field),
                "{e:?} names {field}"
            );
            assert_eq!(*out, [7; 8]);
        };
        let mut m = MapQueues::amdgpu_kiq(1, 0, 0, 1 << 26, 0, 0);
        check(
            KiqPacket::MapQueues(m),
            "MAP_QUEUES doorbell_offset",
            &mut out,
        );
        m.doorbell_offset = 0;
        m.queue = 8;
        check(KiqPacket::MapQueues(m), "MAP_QUEUES queue", &mut out);
        m.queue = 0;
        m.engine_sel = 1;
        check(KiqPacket::MapQueues(m), "engine_sel", &mut out);
        m.engine_sel = 0;
        m.queue_type = 4;
        check(KiqPacket::MapQueues(m), "MAP_QUEUES queue_type", &mut out);
        check(
            KiqPacket::UnmapQueues(UnmapQueues::Doorbells {
                action: UnmapAction::PreemptQueues,
                engine_sel: EngineSel::Compute,
                doorbell_offsets: [0; 4],
                count: 5,
            }),
            "UNMAP_QUEUES num_queues",
            &mut out,
        );
        check(
            KiqPacket::UnmapQueues(UnmapQueues::Doorbells {
                action: UnmapAction::PreemptQueues,
                engine_sel: EngineSel::Compute,
                doorbell_offsets: [0, 1 << 26, 0, 0],
                count: 2,
            }),
            "UNMAP_QUEUES doorbell_offset1",
            &mut out,
        );
        check(
            KiqPacket::RunList(RunList {
                ib_base: 0x1002,
                ..RunList::default()
            }),
            "RUN_LIST ib_base",
            &mut out,
        );
        check(
            KiqPacket::SetResources(SetResources {
                queue_type: 2,
                ..SetResources::default()
            }),
            "SET_RESOURCES queue_type",
            &mut out,
        );
        // A buffer shorter than the packet.
        let e = KiqPacket::QueryStatus(QueryStatus::fence(0, 0))
            .emit(&mut out[..6])
            .unwrap_err();
        assert_eq!(
            e,
            WireError::Truncated {
                what: "KIQ packet",
                header: 0xc005_a400,
                needed: 7,
                available: 6
            }
        );
    }

    #[test]
    fn parse_names_what_is_wrong() {
        let good = emit(KiqPacket::MapQueues(MapQueues::amdgpu_kiq(
            1, 0, 0, 2, 0, 0,
        )));
        // Short buffer, wrong count in the header, unknown opcode, type-0 header, nothing.
        assert_eq!(
            KiqPacket::parse(&good[..6]),
            Err(WireError::Truncated {
                what: "KIQ packet",
                header: 0xc005_a200,
                needed: 7,
                available: 6
            })
        );
        let mut d = good;
        d[0] = packet3(OP_MAP_QUEUES, 6);
        assert!(KiqPacket::parse(&d).is_ok());
        d[0] = packet3(OP_MAP_QUEUES, 8);
        assert_eq!(
            KiqPacket::parse(&d),
            Err(WireError::Truncated {
                what: "KIQ packet",
                header: 0xc007_a200,
                needed: 7,
                available: 9
            })
        );
        d[0] = packet3(0x49, 6);
        assert_eq!(
            KiqPacket::parse(&d),
            Err(WireError::UnknownOpcode {
                what: "KIQ packet",
                header: 0xc005_4900
            })
        );
        d[0] = 0x1234;
        assert!(matches!(
            KiqPacket::parse(&d),
            Err(WireError::UnknownOpcode { .. })
        ));
        assert!(matches!(
            KiqPacket::parse(&[]),
            Err(WireError::Truncated { available: 0, .. })
        ));
        // Undefined field values, each named.
        let bad = |mut d: [u32; dwords::MAP_PROCESS], i: usize, v: u32, field: &str| {
            d[i] = v;
            let e = KiqPacket::parse(&d).unwrap_err();
            assert!(
                matches!(e, WireError::BadValue { field: f, .. } if f == field),
                "{e:?} should name {field}"
            );
        };
        bad(good, 1, 1 << 26, "engine_sel");
        bad(good, 1, 2 << 4, "MAP_QUEUES queue_sel");
        bad(good, 1, 5 << 21, "MAP_QUEUES queue_type");
        let unmap = emit(KiqPacket::UnmapQueues(UnmapQueues::amdgpu_kiq(
            UnmapAction::PreemptQueues,
            2,
        )));
        bad(unmap, 1, 0, "UNMAP_QUEUES num_queues");
        bad(unmap, 1, 5 << 29, "UNMAP_QUEUES num_queues");
        bad(unmap, 1, 1 << 29 | 7 << 26, "engine_sel");
        let query = emit(KiqPacket::QueryStatus(QueryStatus::fence(8, 1)));
        bad(query, 1, 3 << 28, "QUERY_STATUS interrupt_sel");
        bad(query, 2, 1 << 28, "engine_sel");
        // A process-status query's dword 2 is a PASID: no engine to check.
        let mut q = query;
        q[1] = 1 << 28;
        q[2] = 0xffff;
        assert!(KiqPacket::parse(&q).is_ok());
        let sr = emit(KiqPacket::SetResources(SetResources::amdgpu_kiq(1)));
        bad(sr, 1, 7 << 29, "SET_RESOURCES queue_type");
        // A MAP_QUEUES with an extended engine select takes any engine_sel (SDMA 0..7).
        let mut d = good;
        d[1] = 1 << 29 | 1 << 2 | 5 << 26;
        assert!(KiqPacket::parse(&d).is_ok());
        // The doorbell offset of a queue-status query.
        let mut q = QueryStatus::fence(0, 0);
        q.target = 0x10 << 2 | 2 << 28;
        assert_eq!(q.doorbell_offset(), 0x10);
    }
}
