//! The memory pools (and HSA regions) each agent offers, built from the topology's memory
//! banks the way ROCR lays them out:
//!
//! - every CPU agent: system memory as a fine-grained pool, a kernarg (+ fine-grained) pool
//!   and a coarse-grained pool; 4 KiB granule and alignment; accessible by all agents. ROCR 7
//!   adds an extended-scope fine-grained system pool after the fine-grained one; hsa-rt does
//!   not, because HIP 5.2's runtime aborts on a system pool that is neither fine- nor
//!   coarse-grained (its assertion "Memory Segments that are not fine grained has to be
//!   coarse grained"), and one library serves HIP 5.2 and 7;
//! - every GPU agent with local memory (a frame-buffer bank): VRAM as a coarse-grained pool,
//!   an extended-scope fine-grained pool and, when the GPU is in an xGMI hive (`hive_id` not
//!   0), a fine-grained pool (ROCR's `GpuAgent::InitRegionList` makes that one user-visible
//!   only then, or with `HSA_FINE_GRAIN_PCIE`, which hsa-rt does not read); 4 KiB granule, 2 MiB
//!   recommended granule; not accessible by other agents by default, but the agents ROCR
//!   reports `DISALLOWED_BY_DEFAULT` for (see [`Runtime::agent_pool_info`]) may be given
//!   access with `hsa_amd_agents_allow_access`: the CPU (host access, when the VRAM is
//!   host-visible) and linked GPUs;
//! - every GPU agent: its group segment (LDS) as a pool that cannot be allocated from.
//!
//! A CPU node whose capture has no memory bank (some sysfs dumps have none) gets
//! [`NOMINAL_SYSTEM_MEMORY_BYTES`], so that kernarg and fine-grained memory exist.
//!
//! Ref: `hsa_amd_memory_pool_info_t` (`hsa_ext_amd.h`); rocminfo's pool list.

use alloc::vec::Vec;

use crate::addr::{GpuVa, NodeId, MAX_AGENTS};
use crate::memory::{
    AgentAccess, Allocation, GlobalFlags, MemoryPool, PointerInfo, PoolInfo, Segment,
};
use crate::platform::{HeapType, MemoryFlags, MemoryKind, TopologySource};
use crate::platform_ref::PlatformRef;
use crate::status::{Result, Status};

use super::links::{LinkInfo, LinkTable};
use super::{Agent, AgentHandle, Runtime};

/// Size given to a CPU node's system memory when the topology reports no bank for it, bytes.
pub const NOMINAL_SYSTEM_MEMORY_BYTES: u64 = 16 << 30;

/// Recommended allocation granule of GPU local memory (`..._RUNTIME_ALLOC_REC_GRANULE`), bytes.
pub const GPU_REC_GRANULE_BYTES: u64 = 2 << 20;

/// An `hsa_amd_memory_pool_t` / `hsa_region_t` handle: opaque, never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct PoolHandle(pub u64);

const POOL_HANDLE_BASE: u64 = 0x4853_5000_0000_0000;

impl PoolHandle {
    /// The handle of the pool at `index` in the runtime's pool list.
    pub const fn from_index(index: usize) -> PoolHandle {
        PoolHandle(POOL_HANDLE_BASE | index as u64)
    }

    /// The pool list index of this handle, if it has the shape of one.
    pub const fn index(self) -> Option<usize> {
        if self.0 & !0xffff_ffff == POOL_HANDLE_BASE {
            Some((self.0 & 0xffff_ffff) as usize)
        } else {
            None
        }
    }
}

/// One pool of one agent.
pub struct RuntimePool<H: PlatformRef> {
    handle: PoolHandle,
    agent: AgentHandle,
    info: PoolInfo,
    /// `None` for pools nothing can be allocated from (group segment).
    pool: Option<MemoryPool<H>>,
}

impl<H: PlatformRef> RuntimePool<H> {
    /// The pool's handle.
    pub fn handle(&self) -> PoolHandle {
        self.handle
    }

    /// The agent that owns it.
    pub fn agent(&self) -> AgentHandle {
        self.agent
    }

    /// What it is: segment, flags, size, granules, access.
    pub fn info(&self) -> &PoolInfo {
        &self.info
    }

    /// The allocator behind it, when runtime allocation is allowed.
    pub fn memory_pool(&self) -> Option<&MemoryPool<H>> {
        self.pool.as_ref()
    }
}

fn system_bytes<P: TopologySource>(platform: &P, index: usize) -> u64 {
    let total: u64 = (0..)
        .map_while(|b| platform.memory_bank(index, b).ok().flatten())
        .filter(|b| b.heap_type == HeapType::System)
        .map(|b| b.size_bytes)
        .sum();
    if total == 0 {
        NOMINAL_SYSTEM_MEMORY_BYTES
    } else {
        total
    }
}

fn local_bytes<P: TopologySource>(platform: &P, index: usize, agent: &Agent) -> u64 {
    let banks: u64 = (0..)
        .map_while(|b| platform.memory_bank(index, b).ok().flatten())
        .filter(|b| {
            matches!(
                b.heap_type,
                HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
            )
        })
        .map(|b| b.size_bytes)
        .sum();
    if banks == 0 {
        agent.node_properties().local_mem_size
    } else {
        banks
    }
}

fn host_visible_vram<P: TopologySource>(platform: &P, index: usize) -> bool {
    (0..)
        .map_while(|b| platform.memory_bank(index, b).ok().flatten())
        .any(|b| b.heap_type == HeapType::FrameBufferPublic)
}

/// What `hsa_amd_agent_memory_pool_get_info` reports for one agent and one pool.
///
/// Ref: `hsa_ext_amd.h` `hsa_amd_agent_memory_pool_info_t`; ROCR 5.2
/// `MemoryRegion::GetAgentPoolInfo` and `GetAccessInfo` (`amd_memory_region.cpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentPoolInfo {
    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS`.
    pub access: AgentAccess,
    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS`: the link's hop count (0 or 1), 0 when
    /// the access is never allowed.
    pub hops: u32,
    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO`: the link from the agent to the pool's
    /// owner; `None` (reported as all zeros) when the access is never allowed or there is no
    /// hop (the owner itself).
    pub link: Option<LinkInfo>,
}

/// ROCR 5.2's access rule (`MemoryRegion::GetAccessInfo`): the owner is allowed by default;
/// an agent without a link to the owner never; system memory is allowed by default for CPU
/// agents and disallowed by default for the others; coarse-grained device memory is
/// disallowed by default; fine-grained device memory is disallowed by default for an agent
/// of the owner's XGMI hive (hive 0 counts as a hive: a CPU and a GPU outside any hive match)
/// and never allowed for the others; any other pool (the group segment) is never allowed.
fn rocr_access(agent: &Agent, owner: &Agent, info: &PoolInfo, links: &LinkTable) -> AgentAccess {
    if agent.handle() == owner.handle() {
        return AgentAccess::AllowedByDefault;
    }
    if links
        .get(agent.node(), owner.node())
        .is_none_or(|l| l.hops < 1)
    {
        return AgentAccess::NeverAllowed;
    }
    if info.segment != Segment::Global {
        return AgentAccess::NeverAllowed;
    }
    match info.memory_kind {
        MemoryKind::System if !agent.is_gpu() => AgentAccess::AllowedByDefault,
        MemoryKind::System => AgentAccess::DisallowedByDefault,
        MemoryKind::DeviceLocal if info.is_coarse_grained() => AgentAccess::DisallowedByDefault,
        MemoryKind::DeviceLocal
            if agent.node_properties().hive_id == owner.node_properties().hive_id =>
        {
            AgentAccess::DisallowedByDefault
        }
        MemoryKind::DeviceLocal => AgentAccess::NeverAllowed,
    }
}

pub(super) fn build_pools<H: PlatformRef>(
    platform: &H,
    agents: &[Agent],
    links: &LinkTable,
) -> Result<Vec<RuntimePool<H>>> {
    let mut out = Vec::new();
    let gpus: Vec<NodeId> = agents
        .iter()
        .filter(|a| a.is_gpu())
        .map(|a| NodeId(a.node()))
        .collect();
    let mut push = |agent: &Agent, info: PoolInfo| -> Result<()> {
        let pool = if info.runtime_alloc_allowed {
            Some(MemoryPool::new(platform.clone(), info.clone())?)
        } else {
            None
        };
        out.push(RuntimePool {
            handle: PoolHandle::from_index(out.len()),
            agent: agent.handle(),
            info,
            pool,
        });
        Ok(())
    };
    for (index, agent) in agents.iter().enumerate() {
        let owner = NodeId(agent.node());
        if !agent.is_gpu() {
            let size = system_bytes(&**platform, index);
            for flags in [
                GlobalFlags::FINE_GRAINED,
                GlobalFlags::KERNARG | GlobalFlags::FINE_GRAINED,
                GlobalFlags::COARSE_GRAINED,
            ] {
                let mut info = PoolInfo::new(owner, flags, size);
                info.accessible_by_all = true;
                info.memory_kind = MemoryKind::System;
                if flags.contains(GlobalFlags::KERNARG) {
                    // Kernarg segments are read by the packet processor and kernels right after
                    // the host writes them: uncached, as ROCR's kernarg pool.
                    info.chunk_flags |= MemoryFlags::UNCACHED;
                }
                for gpu in &gpus {
                    info.set_access(*gpu, AgentAccess::AllowedByDefault)?;
                }
                push(agent, info)?;
            }
            continue;
        }
        let size = local_bytes(&**platform, index, agent);
        if size > 0 {
            let host_access = host_visible_vram(&**platform, index);
            // VRAM as fine-grained (uncached) memory is offered over xGMI only: ROCR makes
            // the pool user-visible when the GPU is in a hive (or HSA_FINE_GRAIN_PCIE is set,
            // which hsa-rt does not read).
            let in_hive = agent.node_properties().hive_id != 0;
            let flag_sets = [
                GlobalFlags::COARSE_GRAINED,
                GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED,
                GlobalFlags::FINE_GRAINED,
            ];
            for flags in flag_sets
                .into_iter()
                .filter(|f| in_hive || *f != GlobalFlags::FINE_GRAINED)
            {
                let mut info = PoolInfo::new(owner, flags, size);
                info.memory_kind = MemoryKind::DeviceLocal;
                info.alloc_rec_granule_bytes = GPU_REC_GRANULE_BYTES;
                if !host_access {
                    info.chunk_flags.remove(MemoryFlags::HOST_ACCESS);
                }
                // Who may be given access with hsa_amd_agents_allow_access: the agents ROCR
                // reports DISALLOWED_BY_DEFAULT for (a CPU only when the host can map the
                // VRAM at all).
                for other in agents {
                    let access = rocr_access(other, agent, &info, links);
                    let host_only = !other.is_gpu() && !host_access;
                    if access == AgentAccess::DisallowedByDefault && !host_only {
                        info.set_access(NodeId(other.node()), access)?;
                    }
                }
                push(agent, info)?;
            }
        }
        let mut group = PoolInfo::new(
            owner,
            GlobalFlags::empty(),
            u64::from(agent.node_properties().lds_size_in_kb) * 1024,
        );
        group.segment = Segment::Group;
        group.runtime_alloc_allowed = false;
        group.alloc_granule_bytes = 0;
        group.alloc_rec_granule_bytes = 0;
        group.alloc_alignment_bytes = 0;
        group.alloc_max_size_bytes = 0;
        group.chunk_flags = MemoryFlags::empty();
        push(agent, group)?;
    }
    Ok(out)
}

impl<H: PlatformRef> Runtime<H> {
    /// Every pool, in agent order.
    pub fn pools(&self) -> &[RuntimePool<H>] {
        &self.pools
    }

    /// The pools of one agent (`hsa_amd_agent_iterate_memory_pools`), in rocminfo's order.
    pub fn agent_pools(&self, agent: AgentHandle) -> impl Iterator<Item = &RuntimePool<H>> {
        self.pools.iter().filter(move |p| p.agent == agent)
    }

    /// The pool behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidMemoryPool` for a handle this runtime did not give out.
    pub fn pool(&self, handle: PoolHandle) -> Result<&RuntimePool<H>> {
        handle
            .index()
            .and_then(|i| self.pools.get(i))
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidMemoryPool,
                    "pool handle {:#x} is not a pool of this runtime",
                    handle.0
                )
            })
    }

    /// `hsa_amd_agent_memory_pool_get_info`: how `agent` reaches `pool`, as ROCR 5.2 computes
    /// it from the topology's links (see [`AgentPoolInfo`] and [`super::links`]).
    ///
    /// # Errors
    /// `Status::InvalidAgent` for an unknown agent; `Status::InvalidMemoryPool` for an unknown
    /// pool.
    pub fn agent_pool_info(&self, agent: AgentHandle, pool: PoolHandle) -> Result<AgentPoolInfo> {
        let agent = self.agent(agent)?;
        let pool = self.pool(pool)?;
        let owner = self.agent(pool.agent)?;
        let access = rocr_access(agent, owner, &pool.info, &self.links);
        let link = self.links.get(agent.node(), owner.node());
        let reachable = access != AgentAccess::NeverAllowed;
        Ok(AgentPoolInfo {
            access,
            hops: if reachable {
                link.map_or(0, |l| l.hops)
            } else {
                0
            },
            link: link.filter(|l| reachable && l.hops > 0).map(|l| l.info),
        })
    }

    /// The first pool of `agent` whose flags contain `flags` (e.g. the kernarg pool of the CPU
    /// agent, or a fine-grained pool).
    pub fn find_pool(&self, agent: AgentHandle, flags: GlobalFlags) -> Option<&RuntimePool<H>> {
        self.agent_pools(agent).find(|p| {
            p.info.segment == Segment::Global
                && p.info.runtime_alloc_allowed
                && p.info.global_flags.contains(flags)
        })
    }

    /// `hsa_amd_memory_pool_allocate`: `size_bytes` from pool `handle`, aligned to the pool's
    /// alignment (kernarg: at least 16 bytes).
    ///
    /// # Errors
    /// `Status::InvalidMemoryPool` for an unknown handle; `Status::InvalidAllocation` for a
    /// pool that does not allow runtime allocation or a size beyond its maximum;
    /// `Status::InvalidArgument` for size 0; `Status::OutOfResources` when there is no room.
    pub fn allocate(&self, handle: PoolHandle, size_bytes: u64) -> Result<Allocation> {
        self.allocate_with_flags(handle, size_bytes, MemoryFlags::empty())
    }

    /// [`allocate`](Self::allocate) with chunk flags beyond the pool's
    /// ([`MemoryPool::allocate_with_flags`]: `EXECUTABLE`, and `CONTIGUOUS` in device-local
    /// memory, each in a chunk of its own; the flags of `hsa_amd_memory_pool_allocate`).
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate); the platform's status when it cannot make the chunk.
    pub fn allocate_with_flags(
        &self,
        handle: PoolHandle,
        size_bytes: u64,
        extra: MemoryFlags,
    ) -> Result<Allocation> {
        let pool = self.pool(handle)?;
        match &pool.pool {
            Some(p) => p.allocate_with_flags(size_bytes, extra),
            None => crate::bail!(
                Status::InvalidAllocation,
                "pool {:#x} ({:?} segment) does not allow runtime allocation",
                handle.0,
                pool.info.segment
            ),
        }
    }

    fn pool_of(&self, va: GpuVa) -> Result<(&MemoryPool<H>, PointerInfo)> {
        for p in self.pools.iter().filter_map(|p| p.pool.as_ref()) {
            if let Ok(info) = p.pointer_info(va) {
                return Ok((p, info));
            }
        }
        crate::bail!(
            Status::InvalidArgument,
            "address {:#x} was not allocated from any memory pool of this runtime",
            va.0
        )
    }

    /// `hsa_amd_memory_pool_free`: gives back the allocation that starts at `va`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `va` is not the start of a live allocation of any pool
    /// (never allocated, already freed, or an interior address); nothing changes then.
    pub fn free(&self, va: GpuVa) -> Result<()> {
        let (pool, _) = self.pool_of(va)?;
        pool.free(va)
    }

    /// `hsa_amd_pointer_info`: the allocation containing `va` and its pool.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when no pool gave out memory containing `va`.
    pub fn pointer_info(&self, va: GpuVa) -> Result<PointerInfo> {
        self.pool_of(va).map(|(_, info)| info)
    }

    /// `hsa_amd_agents_allow_access`: makes the allocation at `va` accessible to `agents`
    /// (an agent listed twice counts once). As ROCR 5.2, a CPU agent may be given access to
    /// device memory (host access); here the VRAM must be host-visible for that.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an unknown address, an empty agent list, an agent that
    /// can never reach the pool, or a CPU agent for VRAM the host cannot map (naming the pool's
    /// node); `Status::InvalidAgent` for an unknown agent; `Status::OutOfResources` naming
    /// [`MAX_AGENTS`] for more distinct agents than that (which a runtime never holds); the
    /// platform's mapping errors.
    pub fn allow_access(&self, agents: &[AgentHandle], va: GpuVa) -> Result<()> {
        let (pool, _) = self.pool_of(va)?;
        let info = pool.info();
        let device_only = info.memory_kind == MemoryKind::DeviceLocal && !info.host_accessible();
        let mut nodes: heapless::Vec<NodeId, MAX_AGENTS> = heapless::Vec::new();
        for a in agents {
            let agent = self.agent(*a)?;
            let node = NodeId(agent.node());
            if device_only && !agent.is_gpu() {
                crate::bail!(
                    Status::InvalidArgument,
                    "agent {:#x} is a CPU, and the VRAM of node {} at {va} is not host-visible \
                     (no FB_PUBLIC memory bank): the host cannot be given access",
                    a.0,
                    info.owner.get()
                );
            }
            if nodes.contains(&node) {
                continue;
            }
            // Cannot fail: the runtime has at most MAX_AGENTS agents, one node each.
            nodes.push(node).map_err(|node| {
                crate::error!(
                    Status::OutOfResources,
                    "allow_access: more than MAX_AGENTS ({MAX_AGENTS}) distinct agents; \
                     cannot add node {}",
                    node.get()
                )
            })?;
        }
        pool.allow_access(va, &nodes)
    }
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;
    use crate::platform::fake::FakePlatform;
    use std::sync::Arc;

    #[test]
    fn fake_mi210_has_rocminfo_pool_layout() {
        let rt = Runtime::new(Arc::new(FakePlatform::new())).unwrap();
        let cpu = rt.first_cpu().unwrap().handle();
        let gpu = rt.first_gpu().unwrap().handle();
        let cpu_flags: Vec<_> = rt.agent_pools(cpu).map(|p| p.info().global_flags).collect();
        assert_eq!(
            cpu_flags,
            [
                GlobalFlags::FINE_GRAINED,
                GlobalFlags::KERNARG | GlobalFlags::FINE_GRAINED,
                GlobalFlags::COARSE_GRAINED
            ]
        );
        // The fake MI210 is in no hive: VRAM as coarse and extended-scope fine-grained memory,
        // no fine-grained VRAM pool (rocminfo 7.2.4 on ROCR under kfd-emu lists the same).
        let gpu_flags: Vec<_> = rt
            .agent_pools(gpu)
            .filter(|p| p.info().segment == Segment::Global)
            .map(|p| p.info().global_flags)
            .collect();
        assert_eq!(
            gpu_flags,
            [
                GlobalFlags::COARSE_GRAINED,
                GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED
            ]
        );
        let gpu_pools: Vec<_> = rt
            .agent_pools(gpu)
            .map(|p| (p.info().segment, p.info().runtime_alloc_allowed))
            .collect();
        assert_eq!(gpu_pools.last(), Some(&(Segment::Group, false)));
        let group = rt.agent_pools(gpu).last().unwrap();
        assert_eq!(group.info().size_bytes, 64 * 1024);
        assert_eq!(
            rt.allocate(group.handle(), 64).unwrap_err().status(),
            Status::InvalidAllocation
        );
        let kernarg = rt.find_pool(cpu, GlobalFlags::KERNARG).unwrap();
        let a = rt.allocate(kernarg.handle(), 100).unwrap();
        assert_eq!(a.va.0 % 16, 0);
        assert_eq!(rt.pointer_info(a.va).unwrap().allocation.va, a.va);
        rt.free(a.va).unwrap();
        assert_eq!(rt.free(a.va).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(
            rt.pool(PoolHandle(5)).err().unwrap().status(),
            Status::InvalidMemoryPool
        );
    }
}

#[cfg(all(test, feature = "fake"))]
mod vram_access_tests {
    use super::*;
    use crate::platform::fake::{FakePlatform, FakeTopology};
    use std::sync::Arc;

    fn vram(rt: &Runtime<Arc<FakePlatform>>) -> PoolHandle {
        let gpu = rt.first_gpu().unwrap().handle();
        rt.find_pool(gpu, GlobalFlags::COARSE_GRAINED)
            .unwrap()
            .handle()
    }

    /// ROCR 5.2 lets the CPU be given access to VRAM (host access): with host-visible VRAM
    /// (an FB_PUBLIC bank) it is recorded like any agent; with VRAM the host cannot map (the
    /// fake MI210's FB_PRIVATE bank) it is refused, saying why.
    #[test]
    fn the_cpu_may_be_given_access_to_host_visible_vram() {
        let mut t = FakeTopology::mi210();
        t.nodes[1].banks[0].heap_type = HeapType::FrameBufferPublic;
        let rt = Runtime::new(Arc::new(FakePlatform::with_topology(t))).unwrap();
        let cpu = rt.first_cpu().unwrap();
        let a = rt.allocate(vram(&rt), 4096).unwrap();
        assert!(a.host_ptr.is_some());
        assert_eq!(
            rt.agent_pool_info(cpu.handle(), vram(&rt)).unwrap().access,
            AgentAccess::DisallowedByDefault
        );
        rt.allow_access(&[cpu.handle()], a.va).unwrap();
        assert!(rt
            .pointer_info(a.va)
            .unwrap()
            .allowed_nodes
            .contains(NodeId(cpu.node())));

        let rt = Runtime::new(Arc::new(FakePlatform::new())).unwrap();
        let cpu = rt.first_cpu().unwrap().handle();
        let pool = rt.pool(vram(&rt)).unwrap();
        assert!(!pool.info().host_accessible());
        let a = rt.allocate(pool.handle(), 4096).unwrap();
        let e = rt.allow_access(&[cpu], a.va).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            alloc::format!(
                "agent {:#x} is a CPU, and the VRAM of node 1 at {} is not host-visible (no \
                 FB_PUBLIC memory bank): the host cannot be given access",
                cpu.0,
                a.va
            )
        );
    }
}

#[cfg(all(test, feature = "fake"))]
mod agent_limit_tests {
    use super::*;
    use crate::platform::fake::{FakePlatform, FakeTopology};
    use std::sync::Arc;

    /// The fake's CPU followed by `gpus` copies of its MI210, nodes numbered 0..=gpus.
    fn topology(gpus: u32) -> FakeTopology {
        let mut t = FakeTopology::mi210();
        let gpu = t.nodes.pop().unwrap();
        for i in 1..=gpus {
            let mut g = gpu.clone();
            g.properties.node_id = i;
            g.properties.gpu_id = 0x4a2b + i;
            t.nodes.push(g);
        }
        t
    }

    #[test]
    fn every_one_of_max_agents_can_be_allowed_and_one_more_is_refused() {
        let rt = Runtime::new(Arc::new(FakePlatform::with_topology(topology(
            MAX_AGENTS as u32 - 1,
        ))))
        .unwrap();
        assert_eq!(rt.agents().len(), MAX_AGENTS);
        let cpu = rt.first_cpu().unwrap().handle();
        let pool = rt.find_pool(cpu, GlobalFlags::FINE_GRAINED).unwrap();
        let a = rt.allocate(pool.handle(), 4096).unwrap();
        // Every agent, the last ones twice: duplicates count once, none is dropped.
        let mut handles: Vec<AgentHandle> = rt.agents().iter().map(|a| a.handle()).collect();
        handles.extend(rt.agents()[64..].iter().map(|a| a.handle()));
        rt.allow_access(&handles, a.va).unwrap();
        let allowed = rt.pointer_info(a.va).unwrap().allowed_nodes;
        assert_eq!(allowed.len(), MAX_AGENTS);
        for agent in rt.agents() {
            assert!(allowed.contains(NodeId(agent.node())), "{}", agent.node());
        }

        let e = Runtime::new(Arc::new(FakePlatform::with_topology(topology(
            MAX_AGENTS as u32,
        ))))
        .err()
        .unwrap();
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(
            e.detail(),
            "the topology has 129 nodes, more than MAX_AGENTS (128)"
        );
        let mut t = topology(1);
        t.nodes[1].properties.node_id = MAX_AGENTS as u32;
        let e = Runtime::new(Arc::new(FakePlatform::with_topology(t)))
            .err()
            .unwrap();
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(
            e.detail(),
            "node 128 (index 1): node ids must be below MAX_AGENTS (128)"
        );
    }
}
