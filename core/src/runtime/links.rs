//! Links between agents, as ROCR 5.2 reports them through
//! `hsa_amd_agent_memory_pool_get_info` (`NUM_LINK_HOPS`, `LINK_INFO`).
//!
//! ROCR builds a node-to-node matrix from what libhsakmt reports for each node
//! (`hsaKmtGetNodeIoLinkProperties`), and libhsakmt 5.2 reports:
//! - the node's `io_links` (with `node_from` taken as the node itself), then its `p2p_links`;
//! - when no node has `p2p_links` (older kernels), an indirect link for every pair of nodes
//!   that reach each other through the CPUs their GPUs hang off (GPU→CPU→GPU,
//!   GPU→CPU→CPU→GPU, GPU→CPU→CPU, CPU→CPU→GPU), whose weight is the sum of the hops'
//!   weights and whose type is that of the link leaving the first CPU (libhsakmt
//!   `topology_create_indirect_gpu_links`). No indirect link joins two CPUs, two GPUs of one
//!   XGMI hive, crosses QPI between CPU sockets (weight above 20), or ends at a GPU without
//!   host-visible VRAM. Each node lists at most `nodes - 1` links; indirect links past that
//!   are not added.
//!
//! ROCR then registers every link under (from, to), a later one replacing an earlier one
//! (`Runtime::RegisterLinkInfo`): its type becomes `hsa_amd_link_info_type_t` with the
//! atomics and coherence ROCR assumes for that type, which the link's flags override when
//! their `Override` bit is set (a link whose flags forbid peer-to-peer DMA is left out); its
//! bandwidths and latencies are copied; its weight is the NUMA distance; and its hop count is
//! the weight capped at 1 (`amd_topology.cpp` `RegisterLinkInfo`).
//!
//! The latencies (`min_latency`, `max_latency` of the sysfs link) are not part of the
//! platform's [`IoLink`], so they are 0 here; every captured KFD topology in the test data has
//! 0 in both.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::platform::{HeapType, IoLink, TopologySource};
use crate::status::Result;

/// `HSA_IOLINKTYPE_HYPERTRANSPORT` (libhsakmt `hsakmttypes.h`; the sysfs `type` value).
pub const IOLINK_TYPE_HYPERTRANSPORT: u32 = 1;
/// `HSA_IOLINKTYPE_PCIEXPRESS`.
pub const IOLINK_TYPE_PCIEXPRESS: u32 = 2;
/// `HSA_IOLINK_TYPE_QPI_1_1`.
pub const IOLINK_TYPE_QPI_1_1: u32 = 5;
/// `HSA_IOLINK_TYPE_INFINIBAND`.
pub const IOLINK_TYPE_INFINIBAND: u32 = 9;
/// `HSA_IOLINK_TYPE_XGMI`.
pub const IOLINK_TYPE_XGMI: u32 = 11;

/// Bits of a link's `flags` (libhsakmt `HSA_LINKPROPERTY`).
pub mod link_flags {
    /// The other bits describe the link, not its type's defaults.
    pub const OVERRIDE: u32 = 1 << 0;
    /// No coherent transactions.
    pub const NON_COHERENT: u32 = 1 << 1;
    /// No 32-bit atomics.
    pub const NO_ATOMICS_32BIT: u32 = 1 << 2;
    /// No 64-bit atomics.
    pub const NO_ATOMICS_64BIT: u32 = 1 << 3;
    /// No peer-to-peer DMA: ROCR ignores the link.
    pub const NO_PEER_TO_PEER_DMA: u32 = 1 << 4;
}

/// `hsa_amd_link_info_type_t` (`hsa_ext_amd.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum LinkType {
    /// `HSA_AMD_LINK_INFO_TYPE_HYPERTRANSPORT` (0); also what ROCR reports for a link type it
    /// does not know (its zeroed default).
    HyperTransport = 0,
    /// `HSA_AMD_LINK_INFO_TYPE_QPI` (1).
    Qpi = 1,
    /// `HSA_AMD_LINK_INFO_TYPE_PCIE` (2).
    Pcie = 2,
    /// `HSA_AMD_LINK_INFO_TYPE_INFINBAND` (3).
    Infiniband = 3,
    /// `HSA_AMD_LINK_INFO_TYPE_XGMI` (4).
    Xgmi = 4,
}

/// `hsa_amd_memory_pool_link_info_t`: one link as ROCR describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// `min_latency`, ns (0: see the module doc).
    pub min_latency_ns: u32,
    /// `max_latency`, ns (0: see the module doc).
    pub max_latency_ns: u32,
    /// `min_bandwidth`, MB/s (the sysfs link's `min_bandwidth`).
    pub min_bandwidth_mbps: u32,
    /// `max_bandwidth`, MB/s.
    pub max_bandwidth_mbps: u32,
    /// `atomic_support_32bit`.
    pub atomic_32bit: bool,
    /// `atomic_support_64bit`.
    pub atomic_64bit: bool,
    /// `coherent_support`.
    pub coherent: bool,
    /// `link_type`.
    pub link_type: LinkType,
    /// `numa_distance`: the link's weight.
    pub numa_distance: u32,
}

/// A registered link from one node to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS` before the access rule: the weight
    /// capped at 1 (0 for a link of weight 0).
    pub hops: u32,
    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO`.
    pub info: LinkInfo,
}

/// The links of a topology, by (from node id, to node id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkTable {
    links: BTreeMap<(u32, u32), Link>,
}

impl LinkTable {
    /// The link from node `from` to node `to`; `None` for a node to itself or nodes without a
    /// link (ROCR then reports 0 hops and never-allowed access).
    pub fn get(&self, from: u32, to: u32) -> Option<&Link> {
        if from == to {
            return None;
        }
        self.links.get(&(from, to))
    }

    /// Number of registered links.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether no link is registered.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

/// What the indirect-link rules need to know about one node.
struct NodeView {
    id: u32,
    gpu: bool,
    hive_id: u64,
    public_vram: bool,
    links: Vec<IoLink>,
}

impl NodeView {
    /// The first link to `to`: its weight and type.
    fn direct(&self, to: u32) -> Option<(u32, u32)> {
        self.links
            .iter()
            .find(|l| l.node_to == to)
            .map(|l| (l.weight, l.link_type))
    }

    /// The CPU a GPU hangs off: the first PCIe link of weight at most 20 (a larger weight
    /// is a GPU→CPU→GPU path, libhsakmt `gpu_get_direct_link_cpu`).
    fn direct_cpu(&self) -> Option<u32> {
        if !self.gpu {
            return None;
        }
        self.links
            .iter()
            .find(|l| l.link_type == IOLINK_TYPE_PCIEXPRESS && l.weight <= 20)
            .map(|l| l.node_to)
    }
}

/// The indirect link from `a` to `b` (indices into `nodes`): its weight and type, or `None`
/// (libhsakmt `get_indirect_iolink_info`).
fn indirect(nodes: &[NodeView], a: usize, b: usize) -> Option<(u32, u32)> {
    let (n1, n2) = (&nodes[a], &nodes[b]);
    if a == b || (!n1.gpu && !n2.gpu) {
        return None;
    }
    if n1.hive_id != 0 && n1.hive_id == n2.hive_id {
        return None;
    }
    let by_id = |id: u32| nodes.iter().find(|n| n.id == id);
    let cpu1 = n1.direct_cpu();
    let cpu2 = n2.direct_cpu();
    if cpu1.is_none() && cpu2.is_none() {
        return None;
    }
    if n2.gpu && !n2.public_vram {
        return None;
    }
    let (w1, w2, w3, link_type) = match (cpu1, cpu2) {
        (Some(c1), Some(c2)) if c1 == c2 => {
            let (w1, _) = n1.direct(c1)?;
            let (w2, t) = by_id(c1)?.direct(n2.id)?;
            (w1, w2, 0, t)
        }
        (Some(c1), Some(c2)) => {
            let (w1, _) = n1.direct(c1)?;
            let (w2, t) = by_id(c1)?.direct(c2)?;
            if t == IOLINK_TYPE_QPI_1_1 && w2 > 20 {
                return None;
            }
            let (w3, _) = by_id(c2)?.direct(n2.id)?;
            (w1, w2, w3, t)
        }
        (Some(c1), None) => {
            let (w1, _) = n1.direct(c1)?;
            let (w2, t) = by_id(c1)?.direct(n2.id)?;
            (w1, w2, 0, t)
        }
        (None, Some(c2)) => {
            let (w2, t) = n1.direct(c2)?;
            let (w3, _) = by_id(c2)?.direct(n2.id)?;
            (0, w2, w3, t)
        }
        (None, None) => return None,
    };
    let weight = w1.saturating_add(w2).saturating_add(w3);
    (weight != 0).then_some((weight, link_type))
}

/// Adds the indirect link `a` → `b` when there is one and node `a` has room for it.
fn add_indirect(nodes: &mut [NodeView], a: usize, b: usize) {
    let Some((weight, link_type)) = indirect(nodes, a, b) else {
        return;
    };
    let capacity = nodes.len() - 1;
    let to = nodes[b].id;
    let from = &mut nodes[a];
    if from.links.len() >= capacity {
        return;
    }
    from.links.push(IoLink {
        link_type,
        node_from: from.id,
        node_to: to,
        weight,
        min_bandwidth: 0,
        max_bandwidth: 0,
        flags: 0,
        rec_sdma_eng_id_mask: 0,
        p2p: false,
    });
}

/// What ROCR registers for one link; `None` for a link it ignores.
fn register(link: &IoLink) -> Option<Link> {
    let (link_type, defaults) = match link.link_type {
        IOLINK_TYPE_HYPERTRANSPORT => (LinkType::HyperTransport, true),
        IOLINK_TYPE_PCIEXPRESS => (LinkType::Pcie, true),
        IOLINK_TYPE_QPI_1_1 => (LinkType::Qpi, true),
        IOLINK_TYPE_INFINIBAND => (LinkType::Infiniband, false),
        IOLINK_TYPE_XGMI => (LinkType::Xgmi, true),
        _ => (LinkType::HyperTransport, false),
    };
    let (mut atomic_32bit, mut atomic_64bit, mut coherent) = (defaults, defaults, defaults);
    if link.flags & link_flags::OVERRIDE != 0 {
        if link.flags & link_flags::NO_PEER_TO_PEER_DMA != 0 {
            return None;
        }
        atomic_32bit = link.flags & link_flags::NO_ATOMICS_32BIT == 0;
        atomic_64bit = link.flags & link_flags::NO_ATOMICS_64BIT == 0;
        coherent = link.flags & link_flags::NON_COHERENT == 0;
    }
    Some(Link {
        hops: link.weight.min(1),
        info: LinkInfo {
            min_latency_ns: 0,
            max_latency_ns: 0,
            min_bandwidth_mbps: link.min_bandwidth,
            max_bandwidth_mbps: link.max_bandwidth,
            atomic_32bit,
            atomic_64bit,
            coherent,
            link_type,
            numa_distance: link.weight,
        },
    })
}

/// Builds the link table of the platform's topology (see the module doc).
///
/// # Errors
/// The platform's topology errors.
pub fn build<P: TopologySource + ?Sized>(platform: &P) -> Result<LinkTable> {
    let mut nodes = Vec::new();
    for index in 0..platform.node_count() {
        let props = platform.node(index)?;
        let mut public_vram = false;
        for bank in 0.. {
            match platform.memory_bank(index, bank)? {
                Some(b) => public_vram |= b.heap_type == HeapType::FrameBufferPublic,
                None => break,
            }
        }
        let mut links = Vec::new();
        for link in 0.. {
            match platform.io_link(index, link)? {
                // libhsakmt takes `node_from` to be the node the link is listed under.
                Some(l) => links.push(IoLink {
                    node_from: props.node_id,
                    ..l
                }),
                None => break,
            }
        }
        nodes.push(NodeView {
            id: props.node_id,
            gpu: props.gpu_id != 0,
            hive_id: props.hive_id,
            public_vram,
            links,
        });
    }
    let any_p2p = nodes.iter().any(|n| n.links.iter().any(|l| l.p2p));
    if !any_p2p && nodes.len() > 1 {
        for a in 0..nodes.len() - 1 {
            for b in a + 1..nodes.len() {
                add_indirect(&mut nodes, a, b);
                add_indirect(&mut nodes, b, a);
            }
        }
    }
    let mut table = LinkTable::default();
    for node in &nodes {
        for l in &node.links {
            if let Some(link) = register(l) {
                table.links.insert((l.node_from, l.node_to), link);
            }
        }
    }
    Ok(table)
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;
    use crate::platform::fake::{FakeNode, FakePlatform, FakeTopology};
    use crate::platform::MemoryBank;

    fn io(from: u32, to: u32, link_type: u32, weight: u32) -> IoLink {
        IoLink {
            link_type,
            node_from: from,
            node_to: to,
            weight,
            min_bandwidth: 0,
            max_bandwidth: 0,
            flags: 0,
            rec_sdma_eng_id_mask: 0,
            p2p: false,
        }
    }

    /// Node `id`: the fake MI210's CPU or GPU with these links; a GPU's VRAM is
    /// host-visible when `public`.
    fn node(base: &FakeTopology, id: u32, gpu: bool, public: bool, links: Vec<IoLink>) -> FakeNode {
        let mut n = base.nodes[usize::from(gpu)].clone();
        n.properties.node_id = id;
        if gpu {
            n.properties.gpu_id = 0x4a00 + id;
            n.banks = std::vec![MemoryBank {
                heap_type: if public {
                    HeapType::FrameBufferPublic
                } else {
                    HeapType::FrameBufferPrivate
                },
                ..n.banks[0]
            }];
        }
        n.properties.io_links_count = links.len() as u32;
        n.links = links;
        n
    }

    /// Two sockets joined by QPI (weight 21: different sockets): CPU 0 with GPUs 1, 2
    /// (host-visible VRAM) and 3 (private VRAM); CPU 4 with GPU 5. Only direct PCIe links,
    /// no `p2p_links`: an old kernel, for which libhsakmt adds the indirect links.
    fn two_sockets() -> FakeTopology {
        let base = FakeTopology::mi210();
        FakeTopology {
            nodes: std::vec![
                node(
                    &base,
                    0,
                    false,
                    false,
                    std::vec![
                        io(0, 1, IOLINK_TYPE_PCIEXPRESS, 20),
                        io(0, 2, IOLINK_TYPE_PCIEXPRESS, 20),
                        io(0, 3, IOLINK_TYPE_PCIEXPRESS, 20),
                        io(0, 4, IOLINK_TYPE_QPI_1_1, 21),
                    ]
                ),
                node(
                    &base,
                    1,
                    true,
                    true,
                    std::vec![io(1, 0, IOLINK_TYPE_PCIEXPRESS, 20)]
                ),
                node(
                    &base,
                    2,
                    true,
                    true,
                    std::vec![io(2, 0, IOLINK_TYPE_PCIEXPRESS, 20)]
                ),
                node(
                    &base,
                    3,
                    true,
                    false,
                    std::vec![io(3, 0, IOLINK_TYPE_PCIEXPRESS, 20)]
                ),
                node(
                    &base,
                    4,
                    false,
                    false,
                    std::vec![
                        io(4, 0, IOLINK_TYPE_QPI_1_1, 21),
                        io(4, 5, IOLINK_TYPE_PCIEXPRESS, 20)
                    ]
                ),
                node(
                    &base,
                    5,
                    true,
                    true,
                    std::vec![io(5, 4, IOLINK_TYPE_PCIEXPRESS, 20)]
                ),
            ],
        }
    }

    /// (from, to, type, weight) of every registered link, in order.
    fn summary(t: &LinkTable) -> Vec<(u32, u32, LinkType, u32)> {
        t.links
            .iter()
            .map(|(&(f, to), l)| (f, to, l.info.link_type, l.info.numa_distance))
            .collect()
    }

    #[test]
    fn indirect_links_follow_libhsakmt_without_p2p_links() {
        let table = build(&FakePlatform::with_topology(two_sockets())).unwrap();
        use LinkType::{Pcie, Qpi};
        let direct = [
            (0, 1, Pcie, 20),
            (0, 2, Pcie, 20),
            (0, 3, Pcie, 20),
            (0, 4, Qpi, 21),
            (1, 0, Pcie, 20),
            (2, 0, Pcie, 20),
            (3, 0, Pcie, 20),
            (4, 0, Qpi, 21),
            (4, 5, Pcie, 20),
            (5, 4, Pcie, 20),
        ];
        // GPU→CPU→GPU under one socket: weight 20 + 20, the type of the CPU's link; none
        // into GPU 3 (its VRAM is not host-visible); a GPU and the other socket's CPU:
        // 20 + 21 over QPI; none between GPUs of different sockets (QPI weight 21 > 20).
        let indirect = [
            (0, 5, Qpi, 41),
            (1, 2, Pcie, 40),
            (1, 4, Qpi, 41),
            (2, 1, Pcie, 40),
            (2, 4, Qpi, 41),
            (3, 1, Pcie, 40),
            (3, 2, Pcie, 40),
            (3, 4, Qpi, 41),
            (4, 1, Qpi, 41),
            (4, 2, Qpi, 41),
            (5, 0, Qpi, 41),
        ];
        let mut want: Vec<_> = direct.iter().chain(indirect.iter()).copied().collect();
        want.sort_by_key(|&(f, t, _, _)| (f, t));
        assert_eq!(summary(&table), want);
        for (f, t, _, _) in want {
            let l = table.get(f, t).unwrap();
            assert_eq!(l.hops, 1);
            // No flags: the type's defaults (PCIe and QPI: atomics and coherence).
            assert!(l.info.atomic_32bit && l.info.atomic_64bit && l.info.coherent);
        }
        assert_eq!(table.get(1, 5), None);
        assert_eq!(table.get(1, 3), None);
        assert_eq!(table.get(2, 2), None);
    }

    #[test]
    fn a_p2p_link_anywhere_means_no_indirect_links() {
        let mut t = two_sockets();
        t.nodes[5].links.push(IoLink {
            p2p: true,
            ..io(5, 0, IOLINK_TYPE_PCIEXPRESS, 52)
        });
        let table = build(&FakePlatform::with_topology(t)).unwrap();
        assert_eq!(table.len(), 11);
        assert_eq!(table.get(1, 2), None);
        assert_eq!(table.get(5, 0).unwrap().info.numa_distance, 52);
    }

    #[test]
    fn flags_override_the_types_defaults_and_can_drop_a_link() {
        let mut t = two_sockets();
        // Override + non-coherent + no 64-bit atomics.
        t.nodes[1].links[0].flags =
            link_flags::OVERRIDE | link_flags::NON_COHERENT | link_flags::NO_ATOMICS_64BIT;
        t.nodes[1].links[0].min_bandwidth = 312;
        t.nodes[1].links[0].max_bandwidth = 32000;
        // Override + no peer-to-peer DMA: ROCR leaves the link out.
        t.nodes[2].links[0].flags = link_flags::OVERRIDE | link_flags::NO_PEER_TO_PEER_DMA;
        // No override: the bits are ignored.
        t.nodes[3].links[0].flags = link_flags::NON_COHERENT;
        // InfiniBand: no atomics or coherence by default; an unknown type (16, "other"):
        // ROCR's zeroed default, HyperTransport without atomics or coherence.
        t.nodes[4].links[1].link_type = IOLINK_TYPE_INFINIBAND;
        t.nodes[5].links[0].link_type = 16;
        t.nodes[5].links[0].weight = 0;
        let table = build(&FakePlatform::with_topology(t)).unwrap();
        assert_eq!(
            table.get(1, 0),
            Some(&Link {
                hops: 1,
                info: LinkInfo {
                    min_latency_ns: 0,
                    max_latency_ns: 0,
                    min_bandwidth_mbps: 312,
                    max_bandwidth_mbps: 32000,
                    atomic_32bit: true,
                    atomic_64bit: false,
                    coherent: false,
                    link_type: LinkType::Pcie,
                    numa_distance: 20,
                },
            })
        );
        assert_eq!(table.get(2, 0), None);
        assert!(table.get(3, 0).unwrap().info.coherent);
        let ib = table.get(4, 5).unwrap().info;
        assert_eq!(ib.link_type, LinkType::Infiniband);
        assert!(!ib.atomic_32bit && !ib.atomic_64bit && !ib.coherent);
        // Weight 0: registered, but no hop (so never reachable).
        let other = table.get(5, 4).unwrap();
        assert_eq!(other.hops, 0);
        assert_eq!(other.info.link_type, LinkType::HyperTransport);
        assert!(!other.info.atomic_32bit && !other.info.coherent);
    }
}
