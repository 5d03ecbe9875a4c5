//! Agents: one per topology node, with every attribute of `hsa_agent_info_t` and the AMD
//! attributes rocminfo shows.
//!
//! Ref: HSA Runtime 1.2 §2.3 "System and agent information" (`hsa_agent_info_t`);
//! `hsa_ext_amd.h` (`hsa_amd_agent_info_t`); ROCR's values for the fixed limits (workgroup
//! 1024, grid 2^32 - 1, 32 fbarriers, queue sizes 64..131072 packets).

use core::fmt::Write;

use crate::isa::TargetId;
use crate::platform::{Cache, DeviceType, NodeProperties};

/// Capacity, bytes, of an agent's UUID string (`GPU-` and 16 hex digits).
pub const UUID_CAPACITY: usize = 24;

/// An `hsa_agent_t` handle: opaque, never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct AgentHandle(pub u64);

/// Base of agent handles (so a stray small integer is never a valid handle).
const AGENT_HANDLE_BASE: u64 = 0x4853_4100_0000_0000;

impl AgentHandle {
    /// The handle of the agent at `index` in the runtime's agent list.
    pub const fn from_index(index: usize) -> AgentHandle {
        AgentHandle(AGENT_HANDLE_BASE | index as u64)
    }

    /// The agent list index of this handle, if it has the shape of one.
    pub const fn index(self) -> Option<usize> {
        if self.0 & !0xffff_ffff == AGENT_HANDLE_BASE {
            Some((self.0 & 0xffff_ffff) as usize)
        } else {
            None
        }
    }
}

bitflags::bitflags! {
    /// `hsa_agent_feature_t`: which packet kinds the agent's queues accept.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AgentFeature: u32 {
        /// `HSA_AGENT_FEATURE_KERNEL_DISPATCH` (1).
        const KERNEL_DISPATCH = 1;
        /// `HSA_AGENT_FEATURE_AGENT_DISPATCH` (2).
        const AGENT_DISPATCH = 2;
    }
}

/// `hsa_profile_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Profile {
    /// `HSA_PROFILE_BASE` (0).
    Base = 0,
    /// `HSA_PROFILE_FULL` (1).
    Full = 1,
}

/// `hsa_machine_model_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum MachineModel {
    /// `HSA_MACHINE_MODEL_SMALL` (0): 32-bit addresses.
    Small = 0,
    /// `HSA_MACHINE_MODEL_LARGE` (1): 64-bit addresses.
    Large = 1,
}

/// `hsa_default_float_rounding_mode_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FloatRoundingMode {
    /// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT` (0).
    Default = 0,
    /// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO` (1).
    Zero = 1,
    /// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR` (2).
    Near = 2,
}

/// Largest work-group, work-items (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE` on AMD GPUs).
pub const WORKGROUP_MAX_SIZE: u32 = 1024;
/// Largest grid, work-items per dimension x, y, z (`HSA_AGENT_INFO_GRID_MAX_DIM`,
/// `HSA_ISA_INFO_GRID_MAX_DIM`): ROCR 7's answer, `INT32_MAX` along x and `UINT16_MAX` along y
/// and z (the limits HIP gives its grids; ROCR 5.2 to 6.x answered `UINT32_MAX` for each).
pub const GRID_MAX_DIM: [u32; 3] = [i32::MAX as u32, u16::MAX as u32, u16::MAX as u32];
/// Largest grid, work-items (`HSA_AGENT_INFO_GRID_MAX_SIZE`).
pub const GRID_MAX_SIZE: u32 = u32::MAX;
/// Fbarriers per work-group (`HSA_AGENT_INFO_FBARRIER_MAX_SIZE`).
pub const FBARRIER_MAX_SIZE: u32 = 32;
/// ROCR's cap on `HSA_AGENT_INFO_QUEUES_MAX`: 128 (ROCR 5.2 `GpuAgent`: `HSA_MAX_QUEUES`,
/// at most 128).
pub const GPU_QUEUES_MAX: u32 = 128;

/// Most user-mode queues amdkfd lets one process create on one GPU: 127 (the hardware
/// scheduler's limit), and 255 on GC 9.4.3, 9.4.4 and 9.5.0 (`gfx_target_version` 90400,
/// 90401, 90402: gfx940–gfx942; 90500: gfx950), which have no such limit. One more is
/// `ENOSPC`. Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_process_queue_manager.c`
/// (`pqm_create_queue`), `kfd_device.c` (`gfx_target_version` of each GC version).
pub const fn amdkfd_queues_per_process(gfx_target_version: u32) -> u32 {
    match gfx_target_version {
        90400 | 90401 | 90402 | 90500 => 255,
        _ => 127,
    }
}
/// Smallest AQL queue, packets (`HSA_AGENT_INFO_QUEUE_MIN_SIZE`).
pub const GPU_QUEUE_MIN_SIZE_PACKETS: u32 = 64;
/// Largest AQL queue, packets (`HSA_AGENT_INFO_QUEUE_MAX_SIZE`).
pub const GPU_QUEUE_MAX_SIZE_PACKETS: u32 = 131_072;

/// `HSA_CAP_ASIC_REVISION_MASK` of `kfd_sysfs.h` (shift 22).
pub const HSA_CAP_ASIC_REVISION_MASK: u32 = 0x03c0_0000;
/// `HSA_CAP_FLAGS_COHERENTHOSTACCESS` of `kfd_sysfs.h`.
pub const HSA_CAP_FLAGS_COHERENTHOSTACCESS: u32 = 0x1000_0000;

/// One agent: a topology node seen through HSA's attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    handle: AgentHandle,
    node: NodeProperties,
    isa: Option<TargetId>,
    cache_sizes_bytes: [u32; 4],
    /// The line size of the node's first level-2 cache that states one, bytes (0: none does).
    l2_line_bytes: u32,
    memory_width_bits: u32,
    memory_clock_mhz: u32,
}

impl Agent {
    /// Builds the agent for `node`, with the node's caches and memory banks as the platform
    /// reported them; `xnack_on` is the process's XNACK mode
    /// ([`TopologySource::xnack_enabled`](crate::platform::TopologySource::xnack_enabled)).
    pub fn new(
        handle: AgentHandle,
        node: NodeProperties,
        caches: impl Iterator<Item = Cache>,
        memory_width_bits: u32,
        memory_clock_mhz: u32,
        xnack_on: bool,
    ) -> Agent {
        let mut cache_sizes_bytes = [0u32; 4];
        let mut l2_line_bytes = 0;
        let is_cpu = node.simd_count == 0;
        for cache in caches {
            if cache.level == 2 && l2_line_bytes == 0 {
                l2_line_bytes = cache.cache_line_size_bytes;
            }
            let level = cache.level as usize;
            if !(1..=4).contains(&level) {
                continue;
            }
            let size = cache.size_kib.saturating_mul(1024);
            if is_cpu {
                // ROCR's CpuAgent: the CPU-type caches without the instruction bit (a unified
                // cache has it), the last one of each level.
                if cache.cache_type & 4 != 0 && cache.cache_type & 2 == 0 {
                    cache_sizes_bytes[level - 1] = size;
                }
            } else if cache.cache_type & 1 != 0 && cache_sizes_bytes[level - 1] == 0 {
                // HSA_CACHE_TYPE_DATA (1): the data (or unified) cache of each level, first one.
                cache_sizes_bytes[level - 1] = size;
            }
        }
        // The same derivation every other view of a node uses (one ISA model).
        let isa = TargetId::of_node(&node, xnack_on);
        Agent {
            handle,
            node,
            isa,
            cache_sizes_bytes,
            l2_line_bytes,
            memory_width_bits,
            memory_clock_mhz,
        }
    }

    /// The agent's handle.
    pub fn handle(&self) -> AgentHandle {
        self.handle
    }

    /// The topology node the agent is.
    pub fn node_properties(&self) -> &NodeProperties {
        &self.node
    }

    /// `HSA_AGENT_INFO_DEVICE`.
    pub fn device_type(&self) -> DeviceType {
        self.node.device_type()
    }

    /// Whether this is a GPU agent.
    pub fn is_gpu(&self) -> bool {
        self.device_type() == DeviceType::Gpu
    }

    /// `HSA_AGENT_INFO_NAME`: the processor (`gfx90a`) for a GPU, the CPU's model name for a
    /// CPU (the node's `name`, else its marketing name).
    pub fn name(&self) -> &str {
        match &self.isa {
            Some(isa) => isa.processor.name(),
            None if !self.node.name.is_empty() => &self.node.name,
            None => &self.node.marketing_name,
        }
    }

    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME`: the marketing name (e.g. `AMD Instinct MI210`);
    /// empty when unknown.
    pub fn marketing_name(&self) -> &str {
        if self.node.marketing_name.is_empty() && !self.is_gpu() {
            return &self.node.name;
        }
        &self.node.marketing_name
    }

    /// `HSA_AGENT_INFO_VENDOR_NAME`: `AMD` for a GPU, `CPU` for a CPU (as ROCR reports).
    pub fn vendor_name(&self) -> &'static str {
        if self.is_gpu() {
            "AMD"
        } else {
            "CPU"
        }
    }

    /// `HSA_AGENT_INFO_FEATURE`: kernel dispatch for a GPU; none for a CPU agent.
    pub fn feature(&self) -> AgentFeature {
        if self.is_gpu() {
            AgentFeature::KERNEL_DISPATCH
        } else {
            AgentFeature::empty()
        }
    }

    /// `HSA_AGENT_INFO_MACHINE_MODEL`: always large (64-bit).
    pub fn machine_model(&self) -> MachineModel {
        MachineModel::Large
    }

    /// `HSA_AGENT_INFO_PROFILE`: base for a discrete GPU, full for a CPU (and an APU GPU, whose
    /// `HSA_CAP` says it shares host memory coherently: no local memory bank of its own).
    pub fn profile(&self) -> Profile {
        if self.is_gpu() {
            Profile::Base
        } else {
            Profile::Full
        }
    }

    /// `HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE`: round to nearest.
    pub fn default_float_rounding_mode(&self) -> FloatRoundingMode {
        FloatRoundingMode::Near
    }

    /// `HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES`: zero and near (bit mask
    /// of `1 << mode`).
    pub fn base_profile_default_float_rounding_modes(&self) -> u32 {
        (1 << FloatRoundingMode::Zero as u32) | (1 << FloatRoundingMode::Near as u32)
    }

    /// `HSA_AGENT_INFO_FAST_F16_OPERATION`.
    pub fn fast_f16(&self) -> bool {
        self.is_gpu()
    }

    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`: lanes (64 or 32; 0 for a CPU).
    pub fn wavefront_size(&self) -> u32 {
        self.node.wave_front_size
    }

    /// `HSA_AGENT_INFO_WORKGROUP_MAX_DIM`: work-items per dimension.
    pub fn workgroup_max_dim(&self) -> [u16; 3] {
        if self.is_gpu() {
            [WORKGROUP_MAX_SIZE as u16; 3]
        } else {
            [0; 3]
        }
    }

    /// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`: work-items.
    pub fn workgroup_max_size(&self) -> u32 {
        if self.is_gpu() {
            WORKGROUP_MAX_SIZE
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_GRID_MAX_DIM`: work-items per dimension.
    pub fn grid_max_dim(&self) -> [u32; 3] {
        if self.is_gpu() {
            GRID_MAX_DIM
        } else {
            [0; 3]
        }
    }

    /// `HSA_AGENT_INFO_GRID_MAX_SIZE`: work-items.
    pub fn grid_max_size(&self) -> u32 {
        if self.is_gpu() {
            GRID_MAX_SIZE
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_FBARRIER_MAX_SIZE`.
    pub fn fbarrier_max_size(&self) -> u32 {
        if self.is_gpu() {
            FBARRIER_MAX_SIZE
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_QUEUES_MAX`: for a GPU, ROCR's cap ([`GPU_QUEUES_MAX`]) or what
    /// amdkfd lets one process create on it ([`amdkfd_queues_per_process`]), whichever is
    /// lower (127 on gfx90a: ROCR's 128 would promise one queue more than amdkfd allows); 0 for
    /// a CPU.
    pub fn queues_max(&self) -> u32 {
        if self.is_gpu() {
            GPU_QUEUES_MAX.min(amdkfd_queues_per_process(
                self.node_properties().gfx_target_version,
            ))
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_QUEUE_MIN_SIZE`: packets.
    pub fn queue_min_size(&self) -> u32 {
        if self.is_gpu() {
            GPU_QUEUE_MIN_SIZE_PACKETS
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`: packets.
    pub fn queue_max_size(&self) -> u32 {
        if self.is_gpu() {
            GPU_QUEUE_MAX_SIZE_PACKETS
        } else {
            0
        }
    }

    /// `HSA_AGENT_INFO_QUEUE_TYPE`: multi-producer.
    pub fn queue_type(&self) -> crate::abi::queue::QueueType {
        crate::abi::queue::QueueType::Multi
    }

    /// `HSA_AGENT_INFO_NODE`: the topology node id.
    pub fn node(&self) -> u32 {
        self.node.node_id
    }

    /// `HSA_AGENT_INFO_CACHE_SIZE`: bytes of the L1..L4 data caches (0 where absent).
    pub fn cache_sizes_bytes(&self) -> [u32; 4] {
        self.cache_sizes_bytes
    }

    /// The agent's ISA (`HSA_AGENT_INFO_ISA`): its target id, the value the loader checks code
    /// objects against ([`TargetId::check_runs_on`]); `None` for a CPU or a GPU whose
    /// `gfx_target_version` the processor table does not have.
    pub fn isa(&self) -> Option<&TargetId> {
        self.isa.as_ref()
    }

    /// `HSA_AGENT_INFO_VERSION_MAJOR` / `_MINOR`: HSA 1.1.
    pub fn version(&self) -> (u16, u16) {
        (1, 1)
    }

    /// `HSA_AMD_AGENT_INFO_CHIP_ID`: the PCI device id.
    pub fn chip_id(&self) -> u32 {
        self.node.device_id
    }

    /// `HSA_AMD_AGENT_INFO_ASIC_REVISION`: the platform's value, else the `capability` bits
    /// `HSA_CAP_ASIC_REVISION_MASK`.
    pub fn asic_revision(&self) -> u32 {
        if self.node.asic_revision != 0 {
            self.node.asic_revision
        } else {
            (self.node.capability & HSA_CAP_ASIC_REVISION_MASK) >> 22
        }
    }

    /// `HSA_AMD_AGENT_INFO_CACHELINE_SIZE`, bytes. A GPU answers as ROCR's `GpuAgent` does:
    /// the line size of its first level-2 cache in the topology that states one (128 on gfx9
    /// parts), else 64 (KFD reports 0 on some machines: the MI300 captures' caches all say
    /// `cache_line_size 0`). A CPU answers 64, as ROCR's `CpuAgent`.
    pub fn cacheline_size(&self) -> u32 {
        if self.is_gpu() && self.l2_line_bytes != 0 {
            self.l2_line_bytes
        } else {
            64
        }
    }

    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`.
    pub fn compute_unit_count(&self) -> u32 {
        self.node.compute_unit_count()
    }

    /// `HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU`.
    pub fn simds_per_cu(&self) -> u32 {
        self.node.simd_per_cu
    }

    /// `HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES`: `array_count / simd_arrays_per_engine`.
    pub fn shader_engines(&self) -> u32 {
        self.node
            .array_count
            .checked_div(self.node.simd_arrays_per_engine)
            .unwrap_or(0)
    }

    /// `HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE`.
    pub fn shader_arrays_per_engine(&self) -> u32 {
        self.node.simd_arrays_per_engine
    }

    /// `HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU`: `max_waves_per_simd * simd_per_cu`.
    pub fn max_waves_per_cu(&self) -> u32 {
        self.node
            .max_waves_per_simd
            .saturating_mul(self.node.simd_per_cu)
    }

    /// Work-items per CU (rocminfo's "Max Work-item Per CU"): waves per CU times lanes.
    pub fn max_work_items_per_cu(&self) -> u32 {
        self.max_waves_per_cu()
            .saturating_mul(self.wavefront_size())
    }

    /// `HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY`: MHz.
    pub fn max_clock_mhz(&self) -> u32 {
        if self.is_gpu() {
            self.node.max_engine_clk_fcompute
        } else {
            self.node.max_engine_clk_ccompute
        }
    }

    /// `HSA_AMD_AGENT_INFO_BDFID`: PCI bus/device/function.
    pub fn bdfid(&self) -> u32 {
        self.node.location_id
    }

    /// `HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`.
    pub fn driver_node_id(&self) -> u32 {
        self.node.node_id
    }

    /// `HSA_AMD_AGENT_INFO_UUID`: `GPU-` and the unique id in 16 hex digits, `GPU-XX` when the
    /// GPU has none, `CPU-XX` for a CPU.
    pub fn uuid(&self) -> heapless::String<UUID_CAPACITY> {
        let mut s = heapless::String::new();
        match (self.is_gpu(), self.node.unique_id) {
            (true, 0) => {
                let _ = s.push_str("GPU-XX");
            }
            (true, id) => {
                let _ = write!(s, "GPU-{id:016x}");
            }
            (false, _) => {
                let _ = s.push_str("CPU-XX");
            }
        }
        s
    }

    /// `HSA_AMD_AGENT_INFO_MEMORY_WIDTH`: bits of the widest local memory bank.
    pub fn memory_width_bits(&self) -> u32 {
        self.memory_width_bits
    }

    /// `HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY`: MHz.
    pub fn memory_clock_mhz(&self) -> u32 {
        self.memory_clock_mhz
    }

    /// Whether the host may access the GPU's memory coherently (rocminfo's "Coherent Host
    /// Access"): `HSA_CAP_FLAGS_COHERENTHOSTACCESS` in the node's capability.
    pub fn coherent_host_access(&self) -> bool {
        self.node.capability & HSA_CAP_FLAGS_COHERENTHOSTACCESS != 0
    }

    /// The packet processor (MEC) firmware version (`fw_version`).
    pub fn packet_processor_ucode(&self) -> u32 {
        self.node.fw_version
    }

    /// The SDMA firmware version (`sdma_fw_version`).
    pub fn sdma_ucode(&self) -> u32 {
        self.node.sdma_fw_version
    }

    /// `HSA_AMD_AGENT_INFO_UCODE_VERSION` (ROCR 7): the packet processor's microcode version
    /// as libhsakmt keeps it (`EngineId.ui32.uCode`: `fw_version & 0x3ff`); 0 for a CPU, as
    /// ROCR's CPU agent answers.
    pub fn ucode_version(&self) -> u32 {
        if self.is_gpu() {
            self.node.fw_version & 0x3ff
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_SDMA_UCODE_VERSION` (ROCR 7): the SDMA engines' microcode version
    /// as libhsakmt keeps it (`uCodeEngineVersions.uCodeSDMA`: `sdma_fw_version & 0x3ff`); 0
    /// for a CPU.
    pub fn sdma_ucode_version(&self) -> u32 {
        if self.is_gpu() {
            self.node.sdma_fw_version & 0x3ff
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_NUM_SDMA_ENG` (ROCR 7): the node's PCIe-side SDMA engines
    /// (`num_sdma_engines`); 0 for a CPU.
    pub fn sdma_engines(&self) -> u32 {
        if self.is_gpu() {
            self.node.num_sdma_engines
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG` (ROCR 7): the node's xGMI SDMA engines
    /// (`num_sdma_xgmi_engines`); 0 for a CPU.
    pub fn sdma_xgmi_engines(&self) -> u32 {
        if self.is_gpu() {
            self.node.num_sdma_xgmi_engines
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_IOMMU_SUPPORT` (ROCR 7): whether the node has an IOMMUv2-class
    /// translation agent (`HSAMMUPresent`, bit 1 of the node's `capability`); ROCR answers
    /// `HSA_IOMMU_SUPPORT_V2` (1) then, else `_NONE` (0), and `_NONE` for a CPU.
    pub fn iommu_v2(&self) -> bool {
        self.is_gpu() && self.node.capability & (1 << 1) != 0
    }

    /// `HSA_AMD_AGENT_INFO_NUM_XCC` (ROCR 7): accelerated compute complexes (`num_xcc`, 1 when
    /// the kernel does not report it); 0 for a CPU, as ROCR's CPU agent answers.
    pub fn xcc_count(&self) -> u32 {
        if self.is_gpu() {
            self.node.num_xcc.max(1)
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_DRIVER_UID` (ROCR 7): amdkfd's id of the GPU (`gpu_id`); 0 for a
    /// CPU.
    pub fn driver_uid(&self) -> u32 {
        if self.is_gpu() {
            self.node.gpu_id
        } else {
            0
        }
    }

    /// `HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES` (ROCR 7): an 8-byte bit set of
    /// `hsa_amd_memory_property_agent_t`; bit 0 (`HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU`) for a
    /// GPU that shares its node with CPU cores (amdkfd's APU node: `cpu_cores_count` and
    /// `simd_count` both non-zero; ROCR reads the same fact from amdgpu's `AMDGPU_IDS_FLAGS_FUSION`).
    /// All clear for a CPU.
    pub fn memory_properties(&self) -> [u8; 8] {
        let mut bits = [0u8; 8];
        if self.is_gpu() && self.node.cpu_cores_count != 0 {
            bits[0] |= 1;
        }
        bits
    }

    /// `HSA_AMD_AGENT_INFO_ASIC_FAMILY_ID` (ROCR 7): amdgpu's family of the GPU
    /// (`AMDGPU_FAMILY_*` of `amdgpu_drm.h`, what libhsakmt keeps as `FamilyID` from the
    /// topology's `family_id` or `amdgpu_query_gpu_info`), from the node's
    /// `gfx_target_version`: 141 (`AI`) for the gfx9 discrete GPUs, 142 (`RV`) for
    /// gfx902/gfx909/gfx90c, 143 (`NV`) for gfx101x and gfx1030-1032/1034, 144 (`VGH`,
    /// gfx1033), 146 (`YC`, gfx1035), 149 (gfx1036), 151 (gfx1037), 145 (gfx1100-1102), 148
    /// (gfx1103), 150 (gfx115x), 152 (gfx120x), 130 (`VI`) and 135 (`CZ`, gfx801) for gfx8.
    /// 0 (`AMDGPU_FAMILY_UNKNOWN`) for another target and for a CPU, whose `FamilyID` ROCR
    /// reads as 0.
    pub fn asic_family_id(&self) -> u32 {
        if !self.is_gpu() {
            return 0;
        }
        let v = self.node.gfx_target_version;
        let (major, minor, step) = (v / 10000, (v / 100) % 100, v % 100);
        match (major, minor, step) {
            (8, 0, 1) => 135,
            (8, 0, _) | (8, 1, 0) => 130,
            (9, 0, 2) | (9, 0, 9) | (9, 0, 12) => 142,
            (9, _, _) => 141,
            (10, 1, _) => 143,
            (10, 3, 0..=2) | (10, 3, 4) => 143,
            (10, 3, 3) => 144,
            (10, 3, 5) => 146,
            (10, 3, 6) => 149,
            (10, 3, 7) => 151,
            (11, 0, 0..=2) => 145,
            (11, 0, 3) => 148,
            (11, 5, _) => 150,
            (12, 0, _) => 152,
            _ => 0,
        }
    }

    /// `HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_MAX` (ROCR 7): the most scratch, bytes, the agent's
    /// queues may hold at once: the 4 GiB scratch aperture per XCC (ROCR's
    /// `MaxScratchDevice`); 0 for a CPU.
    pub fn scratch_limit_max(&self) -> u64 {
        u64::from(self.xcc_count()) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU agent made from [`mi210`]'s node with no SIMDs, no GPU id and 64 cores.
    fn cpu_agent() -> Agent {
        let mut cpu = mi210();
        cpu.simd_count = 0;
        cpu.gpu_id = 0;
        cpu.cpu_cores_count = 64;
        Agent::new(
            AgentHandle::from_index(0),
            cpu,
            core::iter::empty(),
            0,
            0,
            false,
        )
    }

    fn mi210() -> NodeProperties {
        // Values of nodes/2/properties in the 8xMI210 topology dump.
        NodeProperties {
            node_id: 2,
            simd_count: 416,
            max_waves_per_simd: 8,
            lds_size_in_kb: 64,
            wave_front_size: 64,
            array_count: 8,
            simd_arrays_per_engine: 1,
            cu_per_simd_array: 14,
            simd_per_cu: 4,
            gfx_target_version: 90010,
            vendor_id: 4098,
            device_id: 29711,
            location_id: 25344,
            max_engine_clk_fcompute: 1700,
            capability: 746_037_888,
            unique_id: 0x1000_0000_0000_0401,
            ..NodeProperties::default()
        }
    }

    /// ROCR's rule: the first level-2 cache's line size, else 64 (the MI300 captures state
    /// none); a CPU says 64 whatever its caches say.
    #[test]
    fn cacheline_size_is_the_first_l2_line_size_else_64() {
        let cache = |level, line| Cache {
            processor_id_low: 0,
            level,
            size_kib: 8192,
            cache_line_size_bytes: line,
            cache_type: 1,
        };
        let gpu = |caches: &[Cache]| {
            Agent::new(
                AgentHandle::from_index(1),
                mi210(),
                caches.iter().copied(),
                0,
                0,
                false,
            )
            .cacheline_size()
        };
        assert_eq!(gpu(&[cache(1, 64), cache(2, 128), cache(2, 256)]), 128);
        assert_eq!(gpu(&[cache(2, 0), cache(2, 128)]), 128);
        assert_eq!(gpu(&[cache(1, 128), cache(2, 0)]), 64);
        assert_eq!(gpu(&[]), 64);
        let mut cpu = mi210();
        cpu.simd_count = 0;
        let cpu = Agent::new(
            AgentHandle::from_index(0),
            cpu,
            [cache(2, 128)].into_iter(),
            0,
            0,
            false,
        );
        assert_eq!(cpu.cacheline_size(), 64);
    }

    #[test]
    fn mi210_attributes_match_rocminfo() {
        let a = Agent::new(
            AgentHandle::from_index(1),
            mi210(),
            core::iter::empty(),
            0,
            0,
            false,
        );
        assert_eq!(a.name(), "gfx90a");
        assert_eq!(
            a.isa().unwrap().isa_name(),
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        );
        // XNACK is the process's mode: the same node with it on.
        let on = Agent::new(
            AgentHandle::from_index(1),
            mi210(),
            core::iter::empty(),
            0,
            0,
            true,
        );
        assert_eq!(
            on.isa().unwrap().isa_name(),
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+"
        );
        assert_eq!(a.compute_unit_count(), 104);
        assert_eq!(a.shader_engines(), 8);
        assert_eq!(a.max_waves_per_cu(), 32);
        assert_eq!(a.max_work_items_per_cu(), 2048);
        assert_eq!(a.chip_id(), 0x740f);
        assert_eq!(a.feature(), AgentFeature::KERNEL_DISPATCH);
        assert_eq!(a.uuid(), "GPU-1000000000000401");
        assert_eq!(a.queue_max_size(), 131_072);
        assert_eq!(a.asic_revision(), 1);
        assert!(!a.coherent_host_access());
    }

    /// `HSA_AGENT_INFO_QUEUES_MAX` is what a process can create: amdkfd's 127 on a gfx90a
    /// (ROCR's 128 would be one too many), ROCR's cap of 128 on a gfx942 (amdkfd allows 255).
    #[test]
    fn queues_max_is_what_amdkfd_lets_a_process_create() {
        let agent = |gfx_target_version| {
            let mut p = mi210();
            p.gfx_target_version = gfx_target_version;
            Agent::new(
                AgentHandle::from_index(1),
                p,
                core::iter::empty(),
                0,
                0,
                false,
            )
        };
        assert_eq!(agent(90010).queues_max(), 127);
        assert_eq!(agent(90402).queues_max(), 128);
        assert_eq!(amdkfd_queues_per_process(90010), 127);
        assert_eq!(amdkfd_queues_per_process(90000), 127);
        assert_eq!(amdkfd_queues_per_process(90400), 255);
        assert_eq!(amdkfd_queues_per_process(90402), 255);
        assert_eq!(amdkfd_queues_per_process(90500), 255);
        assert_eq!(amdkfd_queues_per_process(110000), 127);
        let cpu = cpu_agent();
        assert_eq!(cpu.queues_max(), 0);
    }

    /// `HSA_AMD_AGENT_INFO_ASIC_FAMILY_ID`: amdgpu's `AMDGPU_FAMILY_*` for the targets
    /// `amdgpu_drm.h` and `amdgpu_discovery.c` pair (gfx90a, gfx942: `AI` 141; gfx90c: `RV`
    /// 142; gfx1030: `NV` 143; gfx1100: 145; gfx1103: 148), 0 for a CPU.
    #[test]
    fn asic_family_ids_are_amdgpus() {
        let agent = |gfx_target_version| {
            let mut p = mi210();
            p.gfx_target_version = gfx_target_version;
            Agent::new(
                AgentHandle::from_index(1),
                p,
                core::iter::empty(),
                0,
                0,
                false,
            )
            .asic_family_id()
        };
        assert_eq!(agent(90010), 141);
        assert_eq!(agent(90402), 141);
        assert_eq!(agent(90012), 142);
        assert_eq!(agent(100300), 143);
        assert_eq!(agent(110000), 145);
        assert_eq!(agent(110003), 148);
        assert_eq!(agent(0), 0);
        let cpu = cpu_agent();
        assert_eq!(cpu.asic_family_id(), 0);
    }

    /// ROCR 7's agent attributes from nodes/2/properties of the 8xMI210 dump (`fw_version`
    /// 92, `sdma_fw_version` 9, `num_sdma_engines` 2, `num_sdma_xgmi_engines` 3, `num_xcc` 1,
    /// `capability` 0x2c77a280: no HSAMMUPresent), as rocminfo 7.2.4 prints them on Debian's
    /// ROCR over the same node ("Packet Processor uCode:: 92", "SDMA engine uCode:: 9",
    /// "IOMMU Support:: None"); an APU node (CPU cores and SIMDs) with HSAMMUPresent; a CPU.
    #[test]
    fn rocr7_attributes_from_the_topology() {
        let mut p = mi210();
        p.fw_version = 92;
        p.sdma_fw_version = 9;
        p.num_sdma_engines = 2;
        p.num_sdma_xgmi_engines = 3;
        p.num_xcc = 1;
        p.gpu_id = 0xb3f2;
        let a = Agent::new(
            AgentHandle::from_index(2),
            p.clone(),
            core::iter::empty(),
            0,
            0,
            false,
        );
        assert_eq!(a.ucode_version(), 92);
        assert_eq!(a.sdma_ucode_version(), 9);
        assert_eq!(a.sdma_engines(), 2);
        assert_eq!(a.sdma_xgmi_engines(), 3);
        assert!(!a.iommu_v2());
        assert_eq!(a.xcc_count(), 1);
        assert_eq!(a.driver_uid(), 0xb3f2);
        assert_eq!(a.memory_properties(), [0; 8]);
        assert_eq!(a.scratch_limit_max(), 4 << 30);

        // libhsakmt keeps 10 bits of each firmware version; an MI300X partition of 8 XCCs.
        let mut big = p.clone();
        big.fw_version = 0x1_0405;
        big.sdma_fw_version = 0x80_0011;
        big.num_xcc = 8;
        big.gfx_target_version = 90402;
        let b = Agent::new(
            AgentHandle::from_index(2),
            big,
            core::iter::empty(),
            0,
            0,
            false,
        );
        assert_eq!(b.ucode_version(), 0x5);
        assert_eq!(b.sdma_ucode_version(), 0x11);
        assert_eq!(b.xcc_count(), 8);
        assert_eq!(b.scratch_limit_max(), 32 << 30);

        let mut apu = p.clone();
        apu.cpu_cores_count = 4;
        apu.capability |= 1 << 1;
        let apu = Agent::new(
            AgentHandle::from_index(1),
            apu,
            core::iter::empty(),
            0,
            0,
            false,
        );
        assert!(apu.iommu_v2());
        assert_eq!(apu.memory_properties(), [1, 0, 0, 0, 0, 0, 0, 0]);

        let mut cpu = p;
        cpu.simd_count = 0;
        cpu.cpu_cores_count = 64;
        cpu.capability |= 1 << 1;
        let cpu = Agent::new(
            AgentHandle::from_index(0),
            cpu,
            core::iter::empty(),
            0,
            0,
            false,
        );
        assert_eq!(
            (
                cpu.ucode_version(),
                cpu.sdma_ucode_version(),
                cpu.sdma_engines(),
                cpu.sdma_xgmi_engines(),
                cpu.xcc_count(),
                cpu.driver_uid(),
                cpu.scratch_limit_max()
            ),
            (0, 0, 0, 0, 0, 0, 0)
        );
        assert!(!cpu.iommu_v2());
        assert_eq!(cpu.memory_properties(), [0; 8]);
    }

    #[test]
    fn handles_round_trip_and_reject_junk() {
        assert_eq!(AgentHandle::from_index(7).index(), Some(7));
        assert_eq!(AgentHandle(7).index(), None);
        assert_eq!(AgentHandle(0).index(), None);
    }

    #[test]
    fn first_data_cache_of_each_level_counts() {
        let caches = [
            Cache {
                processor_id_low: 0,
                level: 1,
                size_kib: 64,
                cache_line_size_bytes: 64,
                cache_type: 2,
            },
            Cache {
                processor_id_low: 0,
                level: 1,
                size_kib: 16,
                cache_line_size_bytes: 64,
                cache_type: 9,
            },
            Cache {
                processor_id_low: 0,
                level: 2,
                size_kib: 8192,
                cache_line_size_bytes: 128,
                cache_type: 9,
            },
            Cache {
                processor_id_low: 1,
                level: 2,
                size_kib: 4096,
                cache_line_size_bytes: 128,
                cache_type: 9,
            },
        ];
        let a = Agent::new(
            AgentHandle::from_index(1),
            mi210(),
            caches.into_iter(),
            0,
            0,
            false,
        );
        assert_eq!(a.cache_sizes_bytes(), [16 * 1024, 8192 * 1024, 0, 0]);
    }
}
