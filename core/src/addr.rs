//! Newtypes for addresses and ids, so a device address is never mixed up with a host pointer,
//! an event id with a queue id, or a packet index with a byte offset.

use core::fmt;

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// Wraps a raw value.
            pub const fn new(raw: $inner) -> Self {
                Self(raw)
            }
            /// The raw value.
            pub const fn get(self) -> $inner {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }
    };
}

id_newtype!(
    /// A virtual address in a GPU's address space (bytes). On Linux (amdkfd SVM) and in the
    /// emulated device the CPU maps the same memory at the same address; on bare metal the
    /// host's translation decides.
    GpuVa(u64)
);
id_newtype!(
    /// A physical (bus) address, bytes. Bare metal only.
    PhysAddr(u64)
);
id_newtype!(
    /// Index of a 64-bit doorbell slot in the doorbell aperture (slot `i` is at byte `8 * i`).
    DoorbellIndex(u32)
);
id_newtype!(
    /// A hardware queue's id as the platform names it (KFD `queue_id`).
    QueueId(u32)
);
id_newtype!(
    /// A platform event's id (KFD `event_id`); written to an event mailbox to raise it.
    EventId(u32)
);
id_newtype!(
    /// A topology node id (KFD sysfs `nodes/N`); every agent is one node.
    NodeId(u32)
);
id_newtype!(
    /// A packet's position in an AQL queue: the monotonically increasing 64-bit write/read
    /// index, in packets. The slot is `index % size_packets`.
    PacketIndex(u64)
);

impl GpuVa {
    /// The null address.
    pub const NULL: GpuVa = GpuVa(0);

    /// Whether the address is 0.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// `self + bytes`, or `None` on overflow.
    pub const fn checked_add(self, bytes: u64) -> Option<GpuVa> {
        match self.0.checked_add(bytes) {
            Some(v) => Some(GpuVa(v)),
            None => None,
        }
    }

    /// Whether the address is a multiple of `align_bytes` (a power of two).
    pub const fn is_aligned(self, align_bytes: u64) -> bool {
        align_bytes != 0 && self.0 & (align_bytes - 1) == 0
    }
}

/// Most agents (topology nodes) a runtime holds, and the bound on their node ids: everything
/// sized per agent — the runtime's agent list, a pool's per-agent access rules
/// ([`PoolInfo::access`](crate::memory::PoolInfo::access)), an allocation's access mask
/// ([`NodeMask`]) — holds `MAX_AGENTS` entries, node ids `0..MAX_AGENTS`.
///
/// 128: the largest capture of the test data, an MI300X system in CPX mode
/// (`mi300x-cpx-64part`), has 65 nodes, and KFD numbers nodes from 0 without gaps
/// (linux `kfd_topology.c`).
pub const MAX_AGENTS: usize = 128;

/// Words of a [`NodeMask`].
const NODE_MASK_WORDS: usize = MAX_AGENTS.div_ceil(64);

/// A set of topology nodes with ids below [`MAX_AGENTS`]: bit `n` stands for node `n` (the
/// agents an allocation was made accessible to, `hsa_amd_agents_allow_access`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeMask([u64; NODE_MASK_WORDS]);

impl NodeMask {
    /// No node.
    pub const EMPTY: NodeMask = NodeMask([0; NODE_MASK_WORDS]);

    /// Adds `node`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the node and [`MAX_AGENTS`] when the node id is
    /// `MAX_AGENTS` or more; the set is unchanged then.
    pub fn insert(&mut self, node: NodeId) -> crate::Result<()> {
        let n = node.get() as usize;
        if n >= MAX_AGENTS {
            crate::bail!(
                crate::Status::InvalidArgument,
                "node {} is beyond MAX_AGENTS ({MAX_AGENTS}): node ids must be below it",
                node.get()
            );
        }
        self.0[n / 64] |= 1 << (n % 64);
        Ok(())
    }

    /// Whether `node` is in the set (never for an id of [`MAX_AGENTS`] or more).
    pub fn contains(&self, node: NodeId) -> bool {
        let n = node.get() as usize;
        n < MAX_AGENTS && self.0[n / 64] & (1 << (n % 64)) != 0
    }

    /// The nodes in either set.
    #[must_use]
    pub fn union(self, other: NodeMask) -> NodeMask {
        let mut out = self;
        for (w, o) in out.0.iter_mut().zip(other.0) {
            *w |= o;
        }
        out
    }

    /// How many nodes are in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The nodes in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..MAX_AGENTS as u32)
            .map(NodeId)
            .filter(|&n| self.contains(n))
    }
}

impl fmt::Debug for NodeMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(NodeId::get)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_mask_holds_every_node_below_max_agents_and_refuses_the_rest() {
        let mut m = NodeMask::EMPTY;
        assert!(m.is_empty());
        for n in [0, 63, 64, 65, MAX_AGENTS as u32 - 1] {
            m.insert(NodeId(n)).unwrap();
        }
        assert_eq!(m.len(), 5);
        assert!(m.contains(NodeId(64)) && m.contains(NodeId(127)));
        assert!(!m.contains(NodeId(1)) && !m.contains(NodeId(128)));
        let e = m.insert(NodeId(MAX_AGENTS as u32)).unwrap_err();
        assert_eq!(e.status(), crate::Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "node 128 is beyond MAX_AGENTS (128): node ids must be below it"
        );
        assert_eq!(m.len(), 5);
        let ids: heapless::Vec<u32, 8> = m.iter().map(NodeId::get).collect();
        assert_eq!(ids, [0, 63, 64, 65, 127]);
        let mut one = NodeMask::EMPTY;
        one.insert(NodeId(2)).unwrap();
        assert_eq!(m.union(one).len(), 6);
    }
}
