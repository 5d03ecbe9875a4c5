//! Agents and ISAs (HSA Runtime 1.2 §2.3, §2.9.1; `hsa_amd_agent_info_t`).
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::ffi::c_void;

use hsa_core::isa::TargetId;
use hsa_core::runtime::{Agent, AgentHandle};
use hsa_core::{bail, Error, Status};

use super::{bad_attribute, guard, non_null, put, put_str, HsaStatus};
use crate::abi::*;
use crate::state::{self, untag, State, ISA_BASE};

/// What an iteration does after a C callback returned `raw`: SUCCESS continues (`None`);
/// anything else stops and is returned as is (INFO_BREAK included, as the `hsa_iterate_*`
/// functions document).
pub(crate) fn callback_result(raw: u32) -> Option<Result<Status, Error>> {
    match Status::from_raw(raw) {
        Ok(Status::Success) => None,
        Ok(s) if !s.is_error() => Some(Ok(s)),
        Ok(s) => Some(Err(Error::from(s))),
        Err(_) => Some(Err(hsa_core::error!(
            Status::Error,
            "callback returned {raw:#x}, not an hsa_status_t"
        ))),
    }
}

/// Runs `callback` over `handles` (copied first, so the callback may call the API).
pub(crate) fn iterate(
    handles: &[u64],
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> Result<Status, Error> {
    let Some(callback) = callback else {
        bail!(Status::InvalidArgument, "callback is NULL");
    };
    for h in handles {
        // SAFETY: the application's callback, called as its C signature says with the data
        // it passed; no runtime lock is held (the handles were copied out first).
        let raw = unsafe { callback(*h, data) };
        if let Some(r) = callback_result(raw) {
            return r;
        }
    }
    Ok(Status::Success)
}

/// The agent behind a C handle.
///
/// # Errors
/// `Status::InvalidAgent` for an unknown handle.
pub(crate) fn agent_of(st: &State, handle: u64) -> Result<&Agent, Error> {
    st.rt().agent(AgentHandle(handle))
}

/// Bit of an ISA handle that names its agent's generic ISA ([`TargetId::generic`]) rather
/// than the agent's own.
const GENERIC_ISA: u64 = 1 << 32;

/// The agent of an ISA handle (ISAs are the GPU agents' ISAs: each agent's own, and the
/// generic one ROCR 7 lists after it) and the ISA the handle names.
///
/// # Errors
/// `Status::InvalidIsa` for an unknown handle, an agent without an ISA, or a generic handle
/// of an agent whose processor has no generic target.
pub(crate) fn isa_of(st: &State, handle: u64) -> Result<(&Agent, TargetId), Error> {
    let found = untag(handle, ISA_BASE).and_then(|raw| {
        let a = st.rt().agents().get((raw & !GENERIC_ISA) as usize)?;
        let own = *a.isa()?;
        let isa = if raw & GENERIC_ISA != 0 {
            own.generic()?
        } else {
            own
        };
        Some((a, isa))
    });
    match found {
        Some(f) => Ok(f),
        None => bail!(Status::InvalidIsa, "ISA handle {handle:#x} is not an ISA"),
    }
}

/// The agent of an ISA handle ([`isa_of`]).
///
/// # Errors
/// As [`isa_of`].
pub(crate) fn isa_agent(st: &State, handle: u64) -> Result<&Agent, Error> {
    isa_of(st, handle).map(|(a, _)| a)
}

/// The ISA handle of an agent (0 when it has no ISA).
pub(crate) fn isa_handle(agent: &Agent) -> u64 {
    match (agent.isa(), agent.handle().index()) {
        (Some(_), Some(i)) => ISA_BASE | i as u64,
        _ => 0,
    }
}

/// The handles of every ISA of an agent, in ROCR 7's order: its own, then its generic one
/// when its processor is in a generic target's list (none without an ISA).
pub(crate) fn isa_handles(agent: &Agent) -> Vec<u64> {
    let own = isa_handle(agent);
    if own == 0 {
        return Vec::new();
    }
    let generic = agent.isa().and_then(TargetId::generic).is_some();
    let mut v = alloc::vec![own];
    if generic {
        v.push(own | GENERIC_ISA);
    }
    v
}

/// `hsa_iterate_agents`: calls `callback(agent, data)` for every agent in node order.
///
/// # Safety
/// `callback` is a valid function of the documented signature or NULL.
pub unsafe extern "C" fn hsa_iterate_agents(
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_iterate_agents", || {
        let st = state::state()?;
        let handles: Vec<u64> = st.rt().agents().iter().map(|a| a.handle().0).collect();
        iterate(&handles, callback, data)
    })
}

/// `HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS`: 2^`WatchPointsTotalBits` of the node's
/// capability (`kfd_sysfs.h` `HSA_CAP_WATCH_POINTS_TOTALBITS_MASK` 0xf00, shift 8), as ROCR.
fn watch_points(agent: &Agent) -> u32 {
    1u32 << ((agent.node_properties().capability >> 8) & 0xf)
}

/// `hsa_agent_get_info`: every `hsa_agent_info_t` attribute and the `hsa_amd_agent_info_t`
/// attributes of ROCR 5.2. Output sizes as `hsa.h` documents (`NAME`: `char[64]`, `UUID`:
/// `char[21]`, `CACHE_SIZE`: `uint32_t[4]`, ...). `HDP_FLUSH` is an `hsa_amd_hdp_flush_t` of two
/// NULL pointers: this runtime maps no HDP registers (no KFD MMIO-remap page), which is what
/// ROCR 5.2 reports for a GPU without an MMIO-remap heap and for every CPU agent
/// (`amd_gpu_agent.cpp`, `amd_cpu_agent.cpp`); HIP refuses a device whose query fails.
/// `EXTENSIONS` has the bits of the provided extensions on GPU agents (images only where the
/// agent has them) and none on CPU agents. The image extension's `HSA_EXT_AGENT_INFO_*`
/// attributes (`0x3000..=0x300C`, Linux build) give its limits: see `ffi::image::agent_info`.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_agent_get_info(
    agent: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_agent_get_info", || {
        let st = state::state()?;
        let a = agent_of(&st, agent)?;
        non_null(value, "value")?;
        let gpu = a.is_gpu();
        // SAFETY: (all arms) `value` is non-NULL and, per the caller's contract, as large as
        // the attribute's documented type.
        unsafe {
            match attribute {
                HSA_AGENT_INFO_NAME => put_str::<64>(value, a.name()),
                HSA_AGENT_INFO_VENDOR_NAME => put_str::<64>(value, a.vendor_name()),
                HSA_AGENT_INFO_FEATURE => put::<u32>(value, a.feature().bits()),
                HSA_AGENT_INFO_MACHINE_MODEL => put::<u32>(value, a.machine_model() as u32),
                HSA_AGENT_INFO_PROFILE => put::<u32>(value, a.profile() as u32),
                HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => {
                    put::<u32>(value, a.default_float_rounding_mode() as u32)
                }
                HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
                    put::<u32>(value, a.base_profile_default_float_rounding_modes())
                }
                HSA_AGENT_INFO_FAST_F16_OPERATION => put::<bool>(value, a.fast_f16()),
                HSA_AGENT_INFO_WAVEFRONT_SIZE => put::<u32>(value, a.wavefront_size()),
                HSA_AGENT_INFO_WORKGROUP_MAX_DIM => put::<[u16; 3]>(value, a.workgroup_max_dim()),
                HSA_AGENT_INFO_WORKGROUP_MAX_SIZE => put::<u32>(value, a.workgroup_max_size()),
                HSA_AGENT_INFO_GRID_MAX_DIM => put::<[u32; 3]>(value, a.grid_max_dim()),
                HSA_AGENT_INFO_GRID_MAX_SIZE => put::<u32>(value, a.grid_max_size()),
                HSA_AGENT_INFO_FBARRIER_MAX_SIZE => put::<u32>(value, a.fbarrier_max_size()),
                HSA_AGENT_INFO_QUEUES_MAX => put::<u32>(value, a.queues_max()),
                HSA_AGENT_INFO_QUEUE_MIN_SIZE => put::<u32>(value, a.queue_min_size()),
                HSA_AGENT_INFO_QUEUE_MAX_SIZE => put::<u32>(value, a.queue_max_size()),
                HSA_AGENT_INFO_QUEUE_TYPE => put::<u32>(value, a.queue_type() as u32),
                HSA_AGENT_INFO_NODE => put::<u32>(value, a.node()),
                HSA_AGENT_INFO_DEVICE => put::<u32>(value, a.device_type() as u32),
                HSA_AGENT_INFO_CACHE_SIZE => put::<[u32; 4]>(value, a.cache_sizes_bytes()),
                HSA_AGENT_INFO_ISA => put::<u64>(value, isa_handle(a)),
                HSA_AGENT_INFO_EXTENSIONS => put::<[u8; 128]>(
                    value,
                    if gpu {
                        super::agent_extension_mask(a)
                    } else {
                        [0; 128]
                    },
                ),
                HSA_AGENT_INFO_VERSION_MAJOR => put::<u16>(value, a.version().0),
                HSA_AGENT_INFO_VERSION_MINOR => put::<u16>(value, a.version().1),
                HSA_AMD_AGENT_INFO_CHIP_ID => put::<u32>(value, a.chip_id()),
                HSA_AMD_AGENT_INFO_CACHELINE_SIZE => put::<u32>(value, a.cacheline_size()),
                HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT => put::<u32>(value, a.compute_unit_count()),
                HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => put::<u32>(value, a.max_clock_mhz()),
                HSA_AMD_AGENT_INFO_DRIVER_NODE_ID => put::<u32>(value, a.driver_node_id()),
                HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS => put::<u32>(value, watch_points(a)),
                HSA_AMD_AGENT_INFO_BDFID => put::<u32>(value, a.bdfid()),
                HSA_AMD_AGENT_INFO_MEMORY_WIDTH => put::<u32>(value, a.memory_width_bits()),
                HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY => put::<u32>(value, a.memory_clock_mhz()),
                HSA_AMD_AGENT_INFO_PRODUCT_NAME => put_str::<64>(value, a.marketing_name()),
                HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU => put::<u32>(value, a.max_waves_per_cu()),
                HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU => put::<u32>(value, a.simds_per_cu()),
                HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES => put::<u32>(value, a.shader_engines()),
                HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE => {
                    put::<u32>(value, a.shader_arrays_per_engine())
                }
                // hsa_amd_hdp_flush_t { uint32_t* HDP_MEM_FLUSH_CNTL; uint32_t* HDP_REG_FLUSH_CNTL; }
                HSA_AMD_AGENT_INFO_HDP_FLUSH => put::<[usize; 2]>(value, [0, 0]),
                HSA_AMD_AGENT_INFO_DOMAIN => put::<u32>(value, a.node_properties().domain),
                HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES => put::<bool>(value, false),
                HSA_AMD_AGENT_INFO_UUID => put_str::<21>(value, &a.uuid()),
                HSA_AMD_AGENT_INFO_ASIC_REVISION => put::<u32>(value, a.asic_revision()),
                HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS => {
                    put::<bool>(value, gpu && a.coherent_host_access())
                }
                HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT => {
                    put::<u32>(value, a.compute_unit_count())
                }
                HSA_AMD_AGENT_INFO_UCODE_VERSION => put::<u32>(value, a.ucode_version()),
                HSA_AMD_AGENT_INFO_SDMA_UCODE_VERSION => put::<u32>(value, a.sdma_ucode_version()),
                HSA_AMD_AGENT_INFO_NUM_SDMA_ENG => put::<u32>(value, a.sdma_engines()),
                HSA_AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG => put::<u32>(value, a.sdma_xgmi_engines()),
                HSA_AMD_AGENT_INFO_IOMMU_SUPPORT => put::<u32>(
                    value,
                    if a.iommu_v2() {
                        HSA_IOMMU_SUPPORT_V2
                    } else {
                        HSA_IOMMU_SUPPORT_NONE
                    },
                ),
                HSA_AMD_AGENT_INFO_NUM_XCC => put::<u32>(value, a.xcc_count()),
                HSA_AMD_AGENT_INFO_DRIVER_UID => put::<u32>(value, a.driver_uid()),
                HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES => {
                    put::<[u8; 8]>(value, a.memory_properties())
                }
                // ROCR 7.2.4 answers all clear ("not yet implemented" there).
                HSA_AMD_AGENT_INFO_AQL_EXTENSIONS => put::<[u8; 8]>(value, [0; 8]),
                HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_MAX => put::<u64>(value, a.scratch_limit_max()),
                // The async scratch reclaim threshold: 0, ROCR's value where async reclaim is
                // off (this library never reclaims scratch asynchronously).
                HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_CURRENT => put::<u64>(value, 0),
                HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY => {
                    put::<u64>(value, timestamp_frequency(&st, a)?)
                }
                HSA_AMD_AGENT_INFO_ASIC_FAMILY_ID => put::<u32>(value, a.asic_family_id()),
                HSA_AMD_AGENT_INFO_NEAREST_CPU => put::<u64>(value, nearest_cpu(&st, a)),
                #[cfg(feature = "linux")]
                HSA_AMD_AGENT_INFO_MEMORY_AVAIL if gpu => put::<u64>(value, memory_avail(&st, a)?),
                #[cfg(feature = "linux")]
                HSA_AMD_AGENT_INFO_CLOCK_COUNTERS => {
                    put::<[u64; 4]>(value, clock_counters(&st, a)?)
                }
                other => {
                    if super::image_agent_info(a, other, value).is_none() {
                        return Err(bad_attribute("agent", other));
                    }
                }
            }
        }
        Ok(Status::Success)
    })
}

/// `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY` (ROCR 7), Hz: for a CPU the system timestamp's
/// (`HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`, as ROCR's CPU agent answers); for a GPU the rate of
/// its clock counter (the one `s_memrealtime`, profiling timestamps and
/// `AMDKFD_IOC_GET_CLOCK_COUNTERS` read). ROCR reads amdgpu's `gpu_counter_freq`
/// (`AMDGPU_INFO_DEV_INFO`, 100 MHz on gfx9); this library does not query amdgpu's DRM info,
/// so on `/dev/kfd` it measures the counter against the system clock from two
/// `GET_CLOCK_COUNTERS` samples (`State::gpu_clock_frequency`, rounded to whole MHz), and on
/// the emulated device, whose counter counts the system clock's nanoseconds, answers the
/// system's frequency exactly.
///
/// # Errors
/// The clock ioctl's error on `/dev/kfd`.
fn timestamp_frequency(st: &State, a: &Agent) -> Result<u64, Error> {
    let system = st.rt().system_info().timestamp_frequency_hz;
    if !a.is_gpu() {
        return Ok(system);
    }
    #[cfg(feature = "linux")]
    {
        st.gpu_clock_frequency(hsa_core::addr::NodeId(a.node()), system)
    }
    #[cfg(not(feature = "linux"))]
    {
        Ok(system)
    }
}

/// `HSA_AMD_AGENT_INFO_NEAREST_CPU` (ROCR 7): the handle of the CPU agent nearest a GPU, as
/// ROCR's `GpuAgent::GetNearestCpuAgent` picks it: the CPU agent whose link from the GPU has
/// the least `numa_distance` (the topology link's weight; 0 where no link is registered, as
/// ROCR's zeroed link info), the first in agent order on a tie; 0 for a CPU agent (ROCR's CPU
/// agent answers a null handle).
fn nearest_cpu(st: &State, a: &Agent) -> u64 {
    if !a.is_gpu() {
        return 0;
    }
    let rt = st.rt();
    let mut best: Option<(u32, u64)> = None;
    for c in rt.agents().iter().filter(|c| !c.is_gpu()) {
        let d = rt
            .links()
            .get(a.node(), c.node())
            .map_or(0, |l| l.info.numa_distance);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c.handle().0));
        }
    }
    best.map_or(0, |(_, h)| h)
}

/// `HSA_AMD_AGENT_INFO_MEMORY_AVAIL` (ROCR 7) of a GPU, bytes: what amdkfd would still let
/// the process allocate on it (`AMDKFD_IOC_AVAILABLE_MEMORY`). ROCR adds the memory its own
/// pools and scratch keep cached for reuse; this library keeps no such cache of free device
/// memory apart from its pools' partly used chunks, which it does not add. A CPU agent's
/// query is `INVALID_ARGUMENT`, as ROCR's CPU agent does not answer it.
///
/// # Errors
/// `INVALID_ARGUMENT` when the ioctl fails (ROCR's status then).
#[cfg(feature = "linux")]
fn memory_avail(st: &State, a: &Agent) -> Result<u64, Error> {
    st.platform_ref()
        .available_memory(hsa_core::addr::NodeId(a.node()))
        .map_err(|e| hsa_core::error!(Status::InvalidArgument, "MEMORY_AVAIL: {}", e.detail()))
}

/// `HSA_AMD_AGENT_INFO_CLOCK_COUNTERS` (ROCR 7): `hsa_amd_clock_counters_t` (GPU counter, CPU
/// counter, system counter, system frequency in Hz) from `AMDKFD_IOC_GET_CLOCK_COUNTERS` for a
/// GPU (`LinuxPlatform::clock_sample`: the system counter is read by this library around the
/// ioctl, and serves as the CPU counter too), all zero for a CPU (as ROCR's CPU agent).
///
/// # Errors
/// `ERROR` when the ioctl fails (ROCR's status then).
#[cfg(feature = "linux")]
fn clock_counters(st: &State, a: &Agent) -> Result<[u64; 4], Error> {
    if !a.is_gpu() {
        return Ok([0; 4]);
    }
    let p = st.platform_ref();
    let s = p
        .clock_sample(hsa_core::addr::NodeId(a.node()))
        .map_err(|e| hsa_core::error!(Status::Error, "CLOCK_COUNTERS: {}", e.detail()))?;
    let freq = st.rt().system_info().timestamp_frequency_hz;
    Ok([s.gpu, s.system, s.system, freq])
}

/// `hsa_agent_iterate_isas`: the agent's one ISA (none for a CPU agent).
///
/// # Safety
/// `callback` is a valid function of the documented signature or NULL.
pub unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: u64,
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_agent_iterate_isas", || {
        let st = state::state()?;
        let a = agent_of(&st, agent)?;
        // The agent's own ISA only. ROCR 7 lists the generic one after it ([`isa_handles`]),
        // but HIP 5.2.3 dies of SIGSEGV at start-up on an agent that lists it (gfx900 and
        // gfx906 profiles, `kfd-emu/tests/hip.rs`), and one library serves HIP 5.2 and 7.
        let handles: Vec<u64> = isa_handles(a).into_iter().take(1).collect();
        iterate(&handles, callback, data)
    })
}

/// `hsa_isa_get_info_alt`: `hsa_isa_info_t` attributes (`NAME` is the full ISA name, e.g.
/// `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`, written with its NUL; `NAME_LENGTH` excludes
/// the NUL). The deprecated call-convention attributes are `INVALID_ARGUMENT` (they belong to
/// `hsa_isa_get_info`).
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size (`NAME`:
/// `NAME_LENGTH + 1` bytes).
pub unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_isa_get_info_alt", || {
        let st = state::state()?;
        let (a, target) = isa_of(&st, isa)?;
        non_null(value, "value")?;
        let isa_name = target.isa_name();
        let name: &str = &isa_name;
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_ISA_INFO_NAME_LENGTH => put::<u32>(value, name.len() as u32),
                HSA_ISA_INFO_NAME => {
                    let out = value.cast::<u8>();
                    core::ptr::copy_nonoverlapping(name.as_ptr(), out, name.len());
                    out.add(name.len()).write(0);
                }
                // bool[2] indexed by hsa_machine_model_t: large only.
                HSA_ISA_INFO_MACHINE_MODELS => put::<[bool; 2]>(value, [false, true]),
                // bool[2] indexed by hsa_profile_t: base only.
                HSA_ISA_INFO_PROFILES => put::<[bool; 2]>(value, [true, false]),
                // bool[3] indexed by hsa_default_float_rounding_mode_t: near.
                HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES
                | HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
                    put::<[bool; 3]>(value, [false, false, true])
                }
                HSA_ISA_INFO_FAST_F16_OPERATION => put::<bool>(value, a.fast_f16()),
                HSA_ISA_INFO_WORKGROUP_MAX_DIM => put::<[u16; 3]>(value, a.workgroup_max_dim()),
                HSA_ISA_INFO_WORKGROUP_MAX_SIZE => put::<u32>(value, a.workgroup_max_size()),
                HSA_ISA_INFO_GRID_MAX_DIM => put::<[u32; 3]>(value, a.grid_max_dim()),
                HSA_ISA_INFO_GRID_MAX_SIZE => put::<u64>(value, u64::from(a.grid_max_size())),
                HSA_ISA_INFO_FBARRIER_MAX_SIZE => put::<u32>(value, a.fbarrier_max_size()),
                other => return Err(bad_attribute("ISA", other)),
            }
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_iterate_agents,
    hsa_agent_get_info,
    hsa_agent_iterate_isas,
    hsa_isa_get_info_alt,
);
