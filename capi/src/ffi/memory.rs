//! Regions and memory pools: iteration, attributes, allocation, copies, access
//! (HSA Runtime 1.2 §2.7; `hsa_ext_amd.h` memory pools, `hsa_amd_pointer_info`).
//!
//! Regions and pools are the same objects with the same handles (the core's `PoolHandle`s),
//! as in ROCR. Allocations are returned as their device address, which on this runtime's
//! platforms is also the host address of host-accessible memory (one shared virtual address
//! space, as ROCR's).
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::ffi::c_void;

use hsa_core::memory::{AccessPermission, AgentAccess};
use hsa_core::platform::MemoryFlags;
use hsa_core::runtime::{AgentHandle, PoolHandle, RuntimePool};
use hsa_core::{bail, Error, GpuVa, NodeId, Status};

use super::agent::{agent_of, iterate};
use super::{bad_attribute, guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{self, PlatRef, State};

fn pool_of(st: &State, handle: u64) -> Result<&RuntimePool<PlatRef>, Error> {
    st.rt().pool(PoolHandle(handle))
}

fn agent_pools(st: &State, agent: u64) -> Result<Vec<u64>, Error> {
    let a = agent_of(st, agent)?;
    Ok(st
        .rt()
        .agent_pools(a.handle())
        .map(|p| p.handle().0)
        .collect())
}

/// The agent handle of a node.
/// Fills `out` and `agents` as ROCR 7's `VMemoryPtrInfo` does when `ptr` lies in a mapping or
/// a reservation of the virtual-memory API (`hsa_runtime::VirtualMemory::pointer_info`);
/// false (nothing written) otherwise.
#[cfg(feature = "linux")]
fn vmem_pointer_info(
    st: &State,
    ptr: u64,
    out: &mut HsaAmdPointerInfo,
    agents: &mut Vec<u64>,
) -> bool {
    use hsa_runtime::vmem::VmemPointer;
    match st.services().vmem().pointer_info(ptr) {
        None => false,
        Some(VmemPointer::Mapped {
            size,
            owner,
            pool,
            access,
        }) => {
            out.type_ = HSA_EXT_POINTER_TYPE_HSA_VMEM;
            out.agent_base_address = ptr as *mut c_void;
            out.host_base_address = ptr as *mut c_void;
            out.size_in_bytes = size as usize;
            out.registered = true;
            out.agent_owner = agent_of_node(st, owner);
            out.global_flags = st
                .rt()
                .pool(PoolHandle(pool))
                .map_or(0, |p| p.info().global_flags.bits());
            agents.extend(access.iter().map(|&n| agent_of_node(st, n)));
            true
        }
        Some(VmemPointer::Reserved {
            host_base,
            size,
            registered,
        }) => {
            out.type_ = HSA_EXT_POINTER_TYPE_RESERVED_ADDR;
            out.host_base_address = host_base as *mut c_void;
            out.size_in_bytes = size as usize;
            out.registered = registered;
            true
        }
    }
}

/// No virtual-memory API without the Linux services.
#[cfg(not(feature = "linux"))]
fn vmem_pointer_info(_: &State, _: u64, _: &mut HsaAmdPointerInfo, _: &mut Vec<u64>) -> bool {
    false
}

fn agent_of_node(st: &State, node: NodeId) -> u64 {
    st.rt()
        .agents()
        .iter()
        .find(|a| a.node() == node.0)
        .map_or(0, |a| a.handle().0)
}

/// `hsa_amd_agent_iterate_memory_pools`: the agent's pools in ROCR's order.
///
/// # Safety
/// `callback` is a valid function of the documented signature or NULL.
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: u64,
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_agent_iterate_memory_pools", || {
        let st = state::state()?;
        let handles = agent_pools(&st, agent)?;
        iterate(&handles, callback, data)
    })
}

/// `hsa_agent_iterate_regions`: the agent's regions (its pools).
///
/// # Safety
/// `callback` is a valid function of the documented signature or NULL.
pub unsafe extern "C" fn hsa_agent_iterate_regions(
    agent: u64,
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_agent_iterate_regions", || {
        let st = state::state()?;
        let handles = agent_pools(&st, agent)?;
        iterate(&handles, callback, data)
    })
}

/// `hsa_amd_memory_pool_get_info`: `SEGMENT` (`hsa_amd_segment_t`), `GLOBAL_FLAGS`, `SIZE`,
/// `RUNTIME_ALLOC_ALLOWED`, `RUNTIME_ALLOC_GRANULE`, `RUNTIME_ALLOC_ALIGNMENT`,
/// `ACCESSIBLE_BY_ALL`, `ALLOC_MAX_SIZE`, and `RUNTIME_ALLOC_REC_GRANULE` (18, ROCm 6).
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    memory_pool: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_memory_pool_get_info", || {
        let st = state::state()?;
        let info = pool_of(&st, memory_pool)?.info();
        non_null(value, "value")?;
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_AMD_MEMORY_POOL_INFO_SEGMENT => {
                    // Kernarg memory is a global pool with the KERNARG flag in hsa_amd_segment_t.
                    put::<u32>(value, info.segment.amd_raw().unwrap_or(0))
                }
                HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => {
                    put::<u32>(value, info.global_flags.bits())
                }
                HSA_AMD_MEMORY_POOL_INFO_SIZE => put::<usize>(value, info.size_bytes as usize),
                HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => {
                    put::<bool>(value, info.runtime_alloc_allowed)
                }
                HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE => {
                    put::<usize>(value, info.alloc_granule_bytes as usize)
                }
                HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT => {
                    put::<usize>(value, info.alloc_alignment_bytes as usize)
                }
                HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => {
                    put::<bool>(value, info.accessible_by_all)
                }
                HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => {
                    put::<usize>(value, info.alloc_max_size_bytes as usize)
                }
                HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE => {
                    put::<usize>(value, info.alloc_rec_granule_bytes as usize)
                }
                other => return Err(bad_attribute("memory pool", other)),
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_amd_agent_memory_pool_get_info`: how `agent` reaches `memory_pool`, as ROCR 5.2
/// computes it from the topology's links (`Runtime::agent_pool_info`): `ACCESS`
/// (`hsa_amd_memory_pool_access_t`), `NUM_LINK_HOPS` (`uint32_t`: 0 or 1) and `LINK_INFO`
/// (one `hsa_amd_memory_pool_link_info_t`, all zeros without a hop), with ROCR's checks in
/// its order: `value` (`INVALID_ARGUMENT`), the agent (`INVALID_AGENT`), the pool
/// (`INVALID_MEMORY_POOL`), then the attribute (`INVALID_ARGUMENT`).
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: u64,
    memory_pool: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_agent_memory_pool_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let info = st
            .rt()
            .agent_pool_info(AgentHandle(agent), PoolHandle(memory_pool))?;
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS => put::<u32>(value, info.access.raw()),
                HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS => put::<u32>(value, info.hops),
                HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO => {
                    let out = info
                        .link
                        .map_or_else(HsaAmdMemoryPoolLinkInfo::default, |l| {
                            HsaAmdMemoryPoolLinkInfo {
                                min_latency: l.min_latency_ns,
                                max_latency: l.max_latency_ns,
                                min_bandwidth: l.min_bandwidth_mbps,
                                max_bandwidth: l.max_bandwidth_mbps,
                                atomic_support_32bit: l.atomic_32bit,
                                atomic_support_64bit: l.atomic_64bit,
                                coherent_support: l.coherent,
                                link_type: l.link_type as u32,
                                numa_distance: l.numa_distance,
                            }
                        });
                    put::<HsaAmdMemoryPoolLinkInfo>(value, out)
                }
                other => return Err(bad_attribute("agent memory pool", other)),
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_region_get_info`: the `hsa_region_info_t` attributes and the AMD ones
/// `HOST_ACCESSIBLE`, `BUS_WIDTH`, `MAX_CLOCK_FREQUENCY` (of the owning agent's memory).
/// `ALLOC_MAX_PRIVATE_WORKGROUP_SIZE` (private segment only) and `AMD BASE` are
/// `INVALID_ARGUMENT`: no region is a private segment, and bases are not reported.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_region_get_info(
    region: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_region_get_info", || {
        let st = state::state()?;
        let pool = pool_of(&st, region)?;
        let info = pool.info();
        non_null(value, "value")?;
        let agent = st.rt().agent(pool.agent())?;
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_REGION_INFO_SEGMENT => put::<u32>(value, info.segment.region_raw()),
                HSA_REGION_INFO_GLOBAL_FLAGS => put::<u32>(value, info.global_flags.bits()),
                HSA_REGION_INFO_SIZE => put::<usize>(value, info.size_bytes as usize),
                HSA_REGION_INFO_ALLOC_MAX_SIZE => {
                    put::<usize>(value, info.alloc_max_size_bytes as usize)
                }
                HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED => {
                    put::<bool>(value, info.runtime_alloc_allowed)
                }
                HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE => {
                    put::<usize>(value, info.alloc_granule_bytes as usize)
                }
                HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT => {
                    put::<usize>(value, info.alloc_alignment_bytes as usize)
                }
                HSA_AMD_REGION_INFO_HOST_ACCESSIBLE => put::<bool>(value, info.host_accessible()),
                HSA_AMD_REGION_INFO_BUS_WIDTH => put::<u32>(value, agent.memory_width_bits()),
                HSA_AMD_REGION_INFO_MAX_CLOCK_FREQUENCY => {
                    put::<u32>(value, agent.memory_clock_mhz())
                }
                other => return Err(bad_attribute("region", other)),
            }
        }
        Ok(Status::Success)
    })
}

fn allocate_into(st: &State, pool: u64, size: usize, ptr: *mut *mut c_void) -> Result<(), Error> {
    non_null(ptr, "ptr")?;
    let a = st.rt().allocate(PoolHandle(pool), size as u64)?;
    // SAFETY: `ptr` is non-NULL: the caller's `void*` slot.
    unsafe { ptr.write(a.va.0 as *mut c_void) };
    Ok(())
}

/// `hsa_memory_allocate`: `size` bytes from `region`; `*ptr` is the address.
///
/// # Safety
/// `ptr` is NULL or a writable `void*`.
pub unsafe extern "C" fn hsa_memory_allocate(
    region: u64,
    size: usize,
    ptr: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_memory_allocate", || {
        let st = state::state()?;
        allocate_into(&st, region, size, ptr)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_pool_allocate`: `size` bytes from `memory_pool`.
///
/// `flags` (`hsa_amd_memory_pool_flag_t`) are taken as ROCR 7 takes them, which ignores bits
/// it does not know: `PCIE` (fine grain per point-to-point link) and `UNCACHED` change
/// nothing here (the pool's own coherence is what every allocation of it gets).
/// `EXECUTABLE` (1 << 2; HIP 7.2.4 allocates its device-side code this way) and, in a GPU's
/// memory, `CONTIGUOUS` (1 << 1) give the allocation a chunk of its own made with
/// `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE` / `_CONTIGUOUS_BEST_EFFORT`, as ROCR 7 allocates such
/// memory straight from the driver (`hsa_core::memory::MemoryPool::allocate_with_flags`);
/// amdkfd before interface 1.16 refuses `CONTIGUOUS`, and that failure is returned, as ROCR 7
/// returns it.
///
/// # Safety
/// `ptr` is NULL or a writable `void*`.
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    memory_pool: u64,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_memory_pool_allocate", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        let mut extra = MemoryFlags::empty();
        if flags & HSA_AMD_MEMORY_POOL_CONTIGUOUS_FLAG != 0 {
            extra |= MemoryFlags::CONTIGUOUS;
        }
        if flags & HSA_AMD_MEMORY_POOL_EXECUTABLE_FLAG != 0 {
            extra |= MemoryFlags::EXECUTABLE;
        }
        let a = st
            .rt()
            .allocate_with_flags(PoolHandle(memory_pool), size as u64, extra)?;
        // SAFETY: `ptr` is non-NULL: the caller's `void*` slot.
        unsafe { ptr.write(a.va.0 as *mut c_void) };
        Ok(Status::Success)
    })
}

/// Frees an allocation of the runtime as ROCR 5.2's `Runtime::FreeMemory` does (the
/// deallocation callbacks first: `HostMemory::free`); NULL: nothing.
fn free(ptr: *mut c_void) -> Result<Status, Error> {
    let st = state::state()?;
    if ptr.is_null() {
        return Ok(Status::Success);
    }
    st.host().free(st.rt(), ptr as u64)?;
    Ok(Status::Success)
}

/// `hsa_memory_free`: frees an allocation of `hsa_memory_allocate` (NULL: nothing).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ALLOCATION` when `ptr` does not start a live allocation (also
/// from a deallocation callback of the same allocation), as ROCR 5.2.
pub extern "C" fn hsa_memory_free(ptr: *mut c_void) -> HsaStatus {
    guard("hsa_memory_free", || free(ptr))
}

/// `hsa_amd_memory_pool_free`: frees an allocation of a pool (NULL: nothing).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ALLOCATION` when `ptr` does not start a live allocation (also
/// from a deallocation callback of the same allocation), as ROCR 5.2.
pub extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> HsaStatus {
    guard("hsa_amd_memory_pool_free", || free(ptr))
}

/// `hsa_memory_copy`: copies `size` bytes from `src` to `dst` with the host (both must be
/// host-accessible: pool memory with a host mapping, or the application's own memory).
///
/// # Safety
/// Outside pool memory, `dst` and `src` must be valid for `size` bytes, as in C `memcpy`.
pub unsafe extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> HsaStatus {
    guard("hsa_memory_copy", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        // SAFETY: outside pool memory and locks, both ranges hold `size` bytes (the caller's
        // contract); `copy_bytes` allows overlap.
        unsafe { st.host().copy_bytes(st.rt(), dst as u64, src as u64, size) }?;
        Ok(Status::Success)
    })
}

/// `hsa_memory_assign_agent`: makes `agent` the owner of the coarse-grained buffer at `ptr`
/// with `access` (`hsa_access_permission_t` 1..=3); fine-grained buffers: no-op.
pub extern "C" fn hsa_memory_assign_agent(ptr: *mut c_void, agent: u64, access: u32) -> HsaStatus {
    guard("hsa_memory_assign_agent", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        let node = NodeId(agent_of(&st, agent)?.node());
        let access = AccessPermission::from_raw(access)?;
        let va = GpuVa(ptr as u64);
        for p in st.rt().pools().iter().filter_map(|p| p.memory_pool()) {
            if p.pointer_info(va).is_ok() {
                p.assign_agent(va, node, access)?;
                return Ok(Status::Success);
            }
        }
        bail!(
            Status::InvalidArgument,
            "ptr {:#x} was not allocated by this runtime",
            va.0
        )
    })
}

/// `hsa_amd_agents_allow_access`: gives `agents` access to the allocation at `ptr`; `flags`
/// must be NULL (reserved).
///
/// # Safety
/// `agents` is NULL or points to `num_agents` handles.
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const u64,
    flags: *const u32,
    ptr: *const c_void,
) -> HsaStatus {
    guard("hsa_amd_agents_allow_access", || {
        let st = state::state()?;
        non_null(agents, "agents")?;
        non_null(ptr, "ptr")?;
        if num_agents == 0 {
            bail!(Status::InvalidArgument, "num_agents is 0");
        }
        if !flags.is_null() {
            bail!(
                Status::InvalidArgument,
                "flags is reserved and must be NULL"
            );
        }
        // SAFETY: non-NULL, `num_agents` handles per the caller's contract.
        let list = unsafe { core::slice::from_raw_parts(agents, num_agents as usize) };
        let handles: Vec<AgentHandle> = list.iter().map(|h| AgentHandle(*h)).collect();
        st.rt().allow_access(&handles, GpuVa(ptr as u64))?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_pointer_info`: what `ptr` is. Memory not from this runtime is
/// `HSA_EXT_POINTER_TYPE_UNKNOWN` (success, as ROCR). Memory locked with
/// `hsa_amd_memory_lock` (asked about at its host or its agent address) is
/// `HSA_EXT_POINTER_TYPE_LOCKED`: its host base is the locked pointer, its agent base the
/// agent pointer, its size the locked size, its owner the first CPU agent and its flags
/// fine-grained, as ROCR 5.2 reports it; every GPU agent can reach it. `userData` is what
/// `hsa_amd_pointer_info_set_userdata` set. When `accessible` is given, `alloc` makes the
/// array of agents that can reach the allocation (owner, agents allowed by default, agents
/// given access), and `*num_agents_accessible` is its length.
///
/// # Safety
/// `info` is NULL or points to an `hsa_amd_pointer_info_t` whose `size` the caller set;
/// `num_agents_accessible`/`accessible` are NULL or writable; `alloc` is a valid allocator
/// or NULL.
pub unsafe extern "C" fn hsa_amd_pointer_info(
    ptr: *const c_void,
    info: *mut HsaAmdPointerInfo,
    alloc: Option<AllocFn>,
    num_agents_accessible: *mut u32,
    accessible: *mut *mut u64,
) -> HsaStatus {
    guard("hsa_amd_pointer_info", || {
        let st = state::state()?;
        non_null(info, "info")?;
        // SAFETY: non-NULL; the caller set `size` (the first field).
        let caller_size = unsafe { info.cast::<u32>().read_unaligned() };
        let mut out = HsaAmdPointerInfo {
            size: (caller_size as usize).min(core::mem::size_of::<HsaAmdPointerInfo>()) as u32,
            type_: HSA_EXT_POINTER_TYPE_UNKNOWN,
            agent_base_address: core::ptr::null_mut(),
            host_base_address: core::ptr::null_mut(),
            size_in_bytes: 0,
            user_data: core::ptr::null_mut(),
            agent_owner: 0,
            global_flags: 0,
            registered: false,
            _pad: [0; 3],
        };
        let mut agents = Vec::new();
        if vmem_pointer_info(&st, ptr as u64, &mut out, &mut agents) {
            // ROCR 7 asks its virtual-memory tables first (`VMemoryPtrInfo`).
        } else if let Ok(p) = st.rt().pointer_info(GpuVa(ptr as u64)) {
            out.type_ = HSA_EXT_POINTER_TYPE_HSA;
            out.agent_base_address = p.allocation.va.0 as *mut c_void;
            out.host_base_address = p
                .allocation
                .host_ptr
                .map_or(core::ptr::null_mut(), |h| h.as_ptr().cast());
            out.size_in_bytes = p.allocation.size_bytes as usize;
            out.agent_owner = agent_of_node(&st, p.pool_owner);
            out.global_flags = p.global_flags.bits();
            out.user_data = st.host().user_data(p.allocation.va.0) as *mut c_void;
            let pool_info = st
                .rt()
                .pools()
                .iter()
                .find(|pool| {
                    pool.memory_pool()
                        .is_some_and(|m| m.pointer_info(p.allocation.va).is_ok())
                })
                .map(|pool| pool.info().clone());
            for a in st.rt().agents() {
                let node = NodeId(a.node());
                let by_default = pool_info
                    .as_ref()
                    .is_some_and(|i| i.access_of(node) == AgentAccess::AllowedByDefault);
                let given = p.allowed_nodes.contains(node);
                if node == p.pool_owner || by_default || given {
                    agents.push(a.handle().0);
                }
            }
        } else if let Some(l) = st.host().locked_info(ptr as u64) {
            out.type_ = HSA_EXT_POINTER_TYPE_LOCKED;
            out.agent_base_address = l.agent_base as *mut c_void;
            out.host_base_address = l.base as *mut c_void;
            out.size_in_bytes = l.size as usize;
            out.user_data = l.user_data as *mut c_void;
            out.agent_owner = st
                .rt()
                .agents()
                .iter()
                .find(|a| !a.is_gpu())
                .map_or(0, |a| a.handle().0);
            out.global_flags = hsa_core::memory::GlobalFlags::FINE_GRAINED.bits();
            // The GPUs the lock mapped it to.
            agents.extend(
                st.rt()
                    .agents()
                    .iter()
                    .filter(|a| a.is_gpu() && l.gpus.contains(&NodeId(a.node())))
                    .map(|a| a.handle().0),
            );
        }
        if out.type_ != HSA_EXT_POINTER_TYPE_UNKNOWN {
            // What libhsakmt knows is registered with the driver (ROCR 7's `registered`).
            out.registered = true;
        }
        let n = (out.size as usize).min(core::mem::size_of::<HsaAmdPointerInfo>());
        // SAFETY: `info` holds at least `caller_size` >= n bytes (the caller's contract); a
        // byte copy of the first n bytes of `out`.
        unsafe {
            core::ptr::copy_nonoverlapping((&raw const out).cast::<u8>(), info.cast::<u8>(), n)
        };
        if !accessible.is_null() {
            non_null(num_agents_accessible, "num_agents_accessible")?;
            let Some(alloc) = alloc else {
                bail!(
                    Status::InvalidArgument,
                    "alloc is NULL but accessible is not"
                );
            };
            // SAFETY: the application's allocator, called with a byte count.
            let array = unsafe { alloc(agents.len() * 8) }.cast::<u64>();
            if array.is_null() && !agents.is_empty() {
                bail!(Status::OutOfResources, "alloc returned NULL");
            }
            // SAFETY: `array` holds agents.len() u64s (just allocated by the caller's
            // allocator for that size); the output slots are non-NULL and writable.
            unsafe {
                core::ptr::copy_nonoverlapping(agents.as_ptr(), array, agents.len());
                accessible.write(array);
                num_agents_accessible.write(agents.len() as u32);
            }
        } else if !num_agents_accessible.is_null() {
            // SAFETY: non-NULL, writable per the caller's contract.
            unsafe { num_agents_accessible.write(agents.len() as u32) };
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_agent_iterate_memory_pools,
    hsa_agent_iterate_regions,
    hsa_amd_memory_pool_get_info,
    hsa_amd_agent_memory_pool_get_info,
    hsa_region_get_info,
    hsa_memory_allocate,
    hsa_amd_memory_pool_allocate,
    hsa_memory_free,
    hsa_amd_memory_pool_free,
    hsa_memory_copy,
    hsa_memory_assign_agent,
    hsa_amd_agents_allow_access,
    hsa_amd_pointer_info,
);
