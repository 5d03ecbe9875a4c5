//! What a region (HSA) or memory pool (AMD extension) is: segment, global flags, size,
//! allocation granule and alignment, and which agents may reach it.
//!
//! HSA regions and AMD memory pools describe the same memory, so one [`PoolInfo`] answers both
//! `hsa_region_get_info` and `hsa_amd_memory_pool_get_info` (plus
//! `hsa_amd_agent_memory_pool_get_info` through [`PoolInfo::access_of`]).
//!
//! Ref: HSA Runtime 1.2 §2.8 "Memory" (`hsa_region_segment_t`, `hsa_region_global_flag_t`,
//! `hsa_region_info_t` in `hsa.h`); `hsa_amd_segment_t`, `hsa_amd_memory_pool_global_flag_t`,
//! `hsa_amd_memory_pool_info_t`, `hsa_amd_memory_pool_access_t` in `hsa_ext_amd.h`.

use crate::addr::NodeId;
pub use crate::addr::MAX_AGENTS;
use crate::platform::{MemoryFlags, MemoryKind};
use crate::status::{Result, Status};

/// The segment a region or pool belongs to.
///
/// The discriminants are `hsa_region_segment_t`'s. `hsa_amd_segment_t` has the same values for
/// the first four and no kernarg segment: AMD reports kernarg memory as a global pool with
/// [`GlobalFlags::KERNARG`] (see [`Segment::amd_raw`]).
///
/// Ref: `hsa.h` `hsa_region_segment_t`; `hsa_ext_amd.h` `hsa_amd_segment_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Segment {
    /// `HSA_REGION_SEGMENT_GLOBAL` / `HSA_AMD_SEGMENT_GLOBAL` (0): shared by all agents.
    Global = 0,
    /// `HSA_REGION_SEGMENT_READONLY` / `HSA_AMD_SEGMENT_READONLY` (1): constant during a kernel.
    Readonly = 1,
    /// `HSA_REGION_SEGMENT_PRIVATE` / `HSA_AMD_SEGMENT_PRIVATE` (2): per work-item.
    Private = 2,
    /// `HSA_REGION_SEGMENT_GROUP` / `HSA_AMD_SEGMENT_GROUP` (3): per work-group (LDS).
    Group = 3,
    /// `HSA_REGION_SEGMENT_KERNARG` (4): kernel arguments (regions only).
    Kernarg = 4,
}

impl Segment {
    /// The `hsa_region_segment_t` value.
    pub const fn region_raw(self) -> u32 {
        self as u32
    }

    /// The `hsa_amd_segment_t` value; `None` for [`Segment::Kernarg`], which that enum lacks.
    pub const fn amd_raw(self) -> Option<u32> {
        match self {
            Segment::Kernarg => None,
            s => Some(s as u32),
        }
    }

    /// From a raw `hsa_region_segment_t` value.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the value when it is not 0..=4.
    pub fn from_region_raw(raw: u32) -> Result<Segment> {
        Ok(match raw {
            0 => Segment::Global,
            1 => Segment::Readonly,
            2 => Segment::Private,
            3 => Segment::Group,
            4 => Segment::Kernarg,
            other => crate::bail!(
                Status::InvalidArgument,
                "segment is {other}; hsa_region_segment_t is 0..=4"
            ),
        })
    }
}

bitflags::bitflags! {
    /// Global-segment flags of a region or pool. The bit values of `hsa_region_global_flag_t`
    /// and `hsa_amd_memory_pool_global_flag_t` are the same.
    ///
    /// Ref: `hsa.h` `HSA_REGION_GLOBAL_FLAG_*`; `hsa_ext_amd.h`
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_*` (EXTENDED_SCOPE_FINE_GRAINED = 8 from ROCm 6
    /// headers; the installed 5.2 headers stop at 4).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct GlobalFlags: u32 {
        /// `..._KERNARG` / `..._KERNARG_INIT` (1): may hold kernel arguments.
        const KERNARG = 1;
        /// `..._FINE_GRAINED` (2): coherent under the HSA memory model while shared.
        const FINE_GRAINED = 2;
        /// `..._COARSE_GRAINED` (4): one agent at a time; ownership moves with
        /// `hsa_memory_assign_agent`.
        const COARSE_GRAINED = 4;
        /// `..._EXTENDED_SCOPE_FINE_GRAINED` (8): fine-grained with system-scope atomics.
        const EXTENDED_SCOPE_FINE_GRAINED = 8;
    }
}

/// What an agent may do with a pool by default.
///
/// Ref: `hsa_ext_amd.h` `hsa_amd_memory_pool_access_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AgentAccess {
    /// `HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED` (0): the agent can never reach it.
    NeverAllowed = 0,
    /// `HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT` (1): reachable without
    /// `hsa_amd_agents_allow_access`.
    AllowedByDefault = 1,
    /// `HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT` (2): reachable after
    /// `hsa_amd_agents_allow_access`.
    DisallowedByDefault = 2,
}

impl AgentAccess {
    /// The raw `hsa_amd_memory_pool_access_t` value.
    pub const fn raw(self) -> u32 {
        self as u32
    }
}

/// Access permissions asked for when ownership of a coarse-grained buffer moves.
///
/// Ref: `hsa.h` `hsa_access_permission_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AccessPermission {
    /// `HSA_ACCESS_PERMISSION_RO` (1).
    ReadOnly = 1,
    /// `HSA_ACCESS_PERMISSION_WO` (2).
    WriteOnly = 2,
    /// `HSA_ACCESS_PERMISSION_RW` (3).
    ReadWrite = 3,
}

impl AccessPermission {
    /// From a raw `hsa_access_permission_t`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the value when it is not 1, 2 or 3 (as
    /// `hsa_memory_assign_agent` specifies for an invalid `access`).
    pub fn from_raw(raw: u32) -> Result<AccessPermission> {
        Ok(match raw {
            1 => AccessPermission::ReadOnly,
            2 => AccessPermission::WriteOnly,
            3 => AccessPermission::ReadWrite,
            other => crate::bail!(
                Status::InvalidArgument,
                "access is {other}; hsa_access_permission_t is 1..=3"
            ),
        })
    }
}

/// Everything `hsa_region_get_info` and `hsa_amd_memory_pool_get_info` report about one pool,
/// plus what the core needs to back it (node, memory kind, chunk flags).
///
/// Build it with [`PoolInfo::new`] and adjust the public fields; [`PoolInfo::validate`] (called
/// by `MemoryPool::new`) checks that the values are coherent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// `HSA_REGION_INFO_SEGMENT` / `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`.
    pub segment: Segment,
    /// `HSA_REGION_INFO_GLOBAL_FLAGS` / `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS` (global
    /// segment only).
    pub global_flags: GlobalFlags,
    /// `..._INFO_SIZE`: the most bytes the pool may reserve from the platform.
    pub size_bytes: u64,
    /// `..._INFO_RUNTIME_ALLOC_ALLOWED`: whether `allocate` is allowed (never for group and
    /// private segments).
    pub runtime_alloc_allowed: bool,
    /// `..._INFO_RUNTIME_ALLOC_GRANULE`, bytes: every allocation's size is a multiple of it.
    /// A power of two.
    pub alloc_granule_bytes: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE` (18, ROCm 6), bytes: the size
    /// allocations should be multiples of for best performance.
    pub alloc_rec_granule_bytes: u64,
    /// `..._INFO_RUNTIME_ALLOC_ALIGNMENT`, bytes: every allocation's address is a multiple
    /// of it. A power of two (at least 16 for kernarg pools).
    pub alloc_alignment_bytes: u64,
    /// `HSA_REGION_INFO_ALLOC_MAX_SIZE` / `HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE`, bytes:
    /// the largest single allocation; at most `size_bytes`.
    pub alloc_max_size_bytes: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL`: no agent is
    /// [`AgentAccess::NeverAllowed`].
    pub accessible_by_all: bool,
    /// The agent (topology node) the pool belongs to: `agentOwner` of
    /// `hsa_amd_pointer_info_t`.
    pub owner: NodeId,
    /// System or device-local backing memory.
    pub memory_kind: MemoryKind,
    /// Flags for the chunks requested from the platform; `HOST_ACCESS` makes allocations
    /// host-accessible.
    pub chunk_flags: MemoryFlags,
    /// Per-agent access (`HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS`); agents not listed are
    /// [`AgentAccess::NeverAllowed`] unless `accessible_by_all`, then
    /// [`AgentAccess::DisallowedByDefault`]. The owner is always allowed by default.
    pub access: heapless::Vec<(NodeId, AgentAccess), MAX_AGENTS>,
}

impl PoolInfo {
    /// A global pool of `owner` with the given flags and size: allocation allowed, granule
    /// and alignment 4096 bytes (the page size ROCR reports), max allocation = size, backing
    /// system memory with host access, no other agents listed.
    pub fn new(owner: NodeId, global_flags: GlobalFlags, size_bytes: u64) -> PoolInfo {
        let mut chunk_flags = MemoryFlags::HOST_ACCESS;
        if global_flags
            .intersects(GlobalFlags::FINE_GRAINED | GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED)
        {
            chunk_flags |= MemoryFlags::FINE_GRAINED;
        }
        PoolInfo {
            segment: Segment::Global,
            global_flags,
            size_bytes,
            runtime_alloc_allowed: true,
            alloc_granule_bytes: 4096,
            alloc_rec_granule_bytes: 4096,
            alloc_alignment_bytes: 4096,
            alloc_max_size_bytes: size_bytes,
            accessible_by_all: false,
            owner,
            memory_kind: MemoryKind::System,
            chunk_flags,
            access: heapless::Vec::new(),
        }
    }

    /// Whether allocations in this pool can be reached through a host pointer.
    pub fn host_accessible(&self) -> bool {
        self.chunk_flags.contains(MemoryFlags::HOST_ACCESS)
    }

    /// Whether this is a kernarg pool (global with [`GlobalFlags::KERNARG`], or the kernarg
    /// segment).
    pub fn is_kernarg(&self) -> bool {
        self.segment == Segment::Kernarg || self.global_flags.contains(GlobalFlags::KERNARG)
    }

    /// Whether this pool is coarse-grained (ownership transfers apply).
    pub fn is_coarse_grained(&self) -> bool {
        self.global_flags.contains(GlobalFlags::COARSE_GRAINED)
    }

    /// The alignment every allocation gets, bytes: `alloc_alignment_bytes`, raised to 16 for
    /// kernarg pools (AMDGPU kernarg segments are at least 16-byte aligned, AMDGPUUsage
    /// "Kernarg segment").
    pub fn effective_alignment_bytes(&self) -> u64 {
        if self.is_kernarg() {
            self.alloc_alignment_bytes.max(16)
        } else {
            self.alloc_alignment_bytes
        }
    }

    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS` for `node`.
    pub fn access_of(&self, node: NodeId) -> AgentAccess {
        if node == self.owner {
            return AgentAccess::AllowedByDefault;
        }
        match self.access.iter().find(|(n, _)| *n == node) {
            Some(&(_, a)) => a,
            None if self.accessible_by_all => AgentAccess::DisallowedByDefault,
            None => AgentAccess::NeverAllowed,
        }
    }

    /// Sets the access rule of `node`, replacing an earlier one.
    ///
    /// # Errors
    /// `Status::OutOfResources` when [`MAX_AGENTS`] agents are already listed.
    pub fn set_access(&mut self, node: NodeId, access: AgentAccess) -> Result<()> {
        if let Some(slot) = self.access.iter_mut().find(|(n, _)| *n == node) {
            slot.1 = access;
            return Ok(());
        }
        self.access.push((node, access)).map_err(|_| {
            crate::error!(
                Status::OutOfResources,
                "pool lists {MAX_AGENTS} agents already; cannot add node {}",
                node.get()
            )
        })
    }

    /// Checks that the attributes are coherent.
    ///
    /// # Errors
    /// `Status::InvalidArgument`, naming the field and value, when: the granule or alignment
    /// is 0 or not a power of two; `alloc_max_size_bytes > size_bytes`; both fine- and
    /// coarse-grained are set (`hsa.h` forbids it); a kernarg pool is not fine-grained
    /// (`hsa.h`: KERNARG requires FINE_GRAINED); runtime allocation is allowed in the group or
    /// private segment (`hsa.h`: always false there).
    pub fn validate(&self) -> Result<()> {
        if !self.alloc_granule_bytes.is_power_of_two() {
            crate::bail!(
                Status::InvalidArgument,
                "alloc_granule_bytes is {}; must be a power of two",
                self.alloc_granule_bytes
            );
        }
        if !self.alloc_alignment_bytes.is_power_of_two() {
            crate::bail!(
                Status::InvalidArgument,
                "alloc_alignment_bytes is {}; must be a power of two",
                self.alloc_alignment_bytes
            );
        }
        if self.alloc_max_size_bytes > self.size_bytes {
            crate::bail!(
                Status::InvalidArgument,
                "alloc_max_size_bytes is {}; must not exceed size_bytes {}",
                self.alloc_max_size_bytes,
                self.size_bytes
            );
        }
        let fine = GlobalFlags::FINE_GRAINED | GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED;
        if self.global_flags.contains(GlobalFlags::COARSE_GRAINED)
            && self.global_flags.intersects(fine)
        {
            crate::bail!(
                Status::InvalidArgument,
                "global_flags is {:#x}; fine- and coarse-grained exclude each other",
                self.global_flags.bits()
            );
        }
        if self.global_flags.contains(GlobalFlags::KERNARG) && !self.global_flags.intersects(fine) {
            crate::bail!(
                Status::InvalidArgument,
                "global_flags is {:#x}; KERNARG requires FINE_GRAINED",
                self.global_flags.bits()
            );
        }
        if self.runtime_alloc_allowed && matches!(self.segment, Segment::Group | Segment::Private) {
            crate::bail!(
                Status::InvalidArgument,
                "runtime_alloc_allowed is true in segment {:?}; never allowed there",
                self.segment
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn raw_values_match_hsa_headers() {
        // hsa.h hsa_region_segment_t
        assert_eq!(Segment::Global.region_raw(), 0);
        assert_eq!(Segment::Readonly.region_raw(), 1);
        assert_eq!(Segment::Private.region_raw(), 2);
        assert_eq!(Segment::Group.region_raw(), 3);
        assert_eq!(Segment::Kernarg.region_raw(), 4);
        // hsa_ext_amd.h hsa_amd_segment_t has no kernarg
        assert_eq!(Segment::Group.amd_raw(), Some(3));
        assert_eq!(Segment::Kernarg.amd_raw(), None);
        // hsa_region_global_flag_t / hsa_amd_memory_pool_global_flag_t
        assert_eq!(GlobalFlags::KERNARG.bits(), 1);
        assert_eq!(GlobalFlags::FINE_GRAINED.bits(), 2);
        assert_eq!(GlobalFlags::COARSE_GRAINED.bits(), 4);
        assert_eq!(GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED.bits(), 8);
        // hsa_amd_memory_pool_access_t
        assert_eq!(AgentAccess::NeverAllowed.raw(), 0);
        assert_eq!(AgentAccess::AllowedByDefault.raw(), 1);
        assert_eq!(AgentAccess::DisallowedByDefault.raw(), 2);
        // hsa_access_permission_t
        assert_eq!(
            AccessPermission::from_raw(3),
            Ok(AccessPermission::ReadWrite)
        );
        assert_eq!(
            AccessPermission::from_raw(0).unwrap_err().status(),
            Status::InvalidArgument
        );
        assert_eq!(Segment::from_region_raw(4), Ok(Segment::Kernarg));
        let e = Segment::from_region_raw(5).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("segment is 5"));
    }

    #[test]
    fn validate_rejects_incoherent_attributes() {
        let ok = PoolInfo::new(NodeId(1), GlobalFlags::COARSE_GRAINED, 1 << 20);
        assert_eq!(ok.validate(), Ok(()));

        let mut p = ok.clone();
        p.alloc_granule_bytes = 3000;
        assert!(p
            .validate()
            .unwrap_err()
            .detail()
            .to_string()
            .contains("alloc_granule_bytes is 3000"));
        let mut p = ok.clone();
        p.alloc_alignment_bytes = 0;
        assert!(p
            .validate()
            .unwrap_err()
            .detail()
            .to_string()
            .contains("alloc_alignment_bytes is 0"));
        let mut p = ok.clone();
        p.alloc_max_size_bytes = (1 << 20) + 1;
        assert_eq!(p.validate().unwrap_err().status(), Status::InvalidArgument);
        let mut p = ok.clone();
        p.global_flags |= GlobalFlags::FINE_GRAINED;
        assert!(p
            .validate()
            .unwrap_err()
            .detail()
            .to_string()
            .contains("0x6"));
        let p = PoolInfo::new(NodeId(0), GlobalFlags::KERNARG, 4096);
        assert!(p
            .validate()
            .unwrap_err()
            .detail()
            .to_string()
            .contains("KERNARG requires FINE_GRAINED"));
        let mut p = ok.clone();
        p.segment = Segment::Group;
        assert_eq!(p.validate().unwrap_err().status(), Status::InvalidArgument);
        p.runtime_alloc_allowed = false;
        assert_eq!(p.validate(), Ok(()));
    }

    #[test]
    fn kind_predicates_follow_segment_flags_and_chunk_flags() {
        // A coarse-grained device pool: not kernarg, no host access, its own alignment.
        let mut p = PoolInfo::new(NodeId(1), GlobalFlags::COARSE_GRAINED, 1 << 20);
        p.chunk_flags = MemoryFlags::empty();
        p.alloc_alignment_bytes = 4;
        assert!(p.is_coarse_grained());
        assert!(!p.is_kernarg());
        assert!(!p.host_accessible());
        assert_eq!(p.effective_alignment_bytes(), 4);
        // A fine-grained system pool: host access (PoolInfo::new's default), not coarse.
        let p = PoolInfo::new(NodeId(0), GlobalFlags::FINE_GRAINED, 1 << 20);
        assert!(!p.is_coarse_grained());
        assert!(!p.is_kernarg());
        assert!(p.host_accessible());
        // The kernarg segment is kernarg without the global flag.
        let mut p = PoolInfo::new(NodeId(0), GlobalFlags::FINE_GRAINED, 1 << 20);
        p.segment = Segment::Kernarg;
        p.alloc_alignment_bytes = 8;
        assert!(p.is_kernarg());
        assert_eq!(p.effective_alignment_bytes(), 16);
    }

    #[test]
    fn access_rules_and_kernarg_alignment() {
        let mut p = PoolInfo::new(
            NodeId(1),
            GlobalFlags::KERNARG | GlobalFlags::FINE_GRAINED,
            1 << 20,
        );
        p.alloc_alignment_bytes = 4;
        assert_eq!(p.effective_alignment_bytes(), 16);
        assert!(p.chunk_flags.contains(MemoryFlags::FINE_GRAINED));
        assert_eq!(p.access_of(NodeId(1)), AgentAccess::AllowedByDefault);
        assert_eq!(p.access_of(NodeId(2)), AgentAccess::NeverAllowed);
        p.set_access(NodeId(2), AgentAccess::DisallowedByDefault)
            .unwrap();
        assert_eq!(p.access_of(NodeId(2)), AgentAccess::DisallowedByDefault);
        p.set_access(NodeId(2), AgentAccess::AllowedByDefault)
            .unwrap();
        assert_eq!(p.access_of(NodeId(2)), AgentAccess::AllowedByDefault);
        assert_eq!(p.access.len(), 1);
        p.accessible_by_all = true;
        assert_eq!(p.access_of(NodeId(7)), AgentAccess::DisallowedByDefault);
        for n in 10..(10 + MAX_AGENTS as u32 - 1) {
            p.set_access(NodeId(n), AgentAccess::AllowedByDefault)
                .unwrap();
        }
        assert_eq!(
            p.set_access(NodeId(999), AgentAccess::AllowedByDefault)
                .unwrap_err()
                .status(),
            Status::OutOfResources
        );
    }
}
