//! `hsa_amd_agent_memory_pool_get_info` over the captured 8×MI210 machine
//! (`mi210-8gpu-xgmi-pcie-topology`, read in place from the shared test data): two CPUs, two
//! XGMI hives of four GPUs, PCIe `io_links` and `p2p_links`. Each expected value is what ROCR
//! 5.2 computes from the link's sysfs fields (quoted beside it): access from the pool's kind
//! and the agents' hives, hops capped at 1, link type, atomics and coherence from `type` and
//! `flags`, bandwidths, NUMA distance = `weight`. Without `../shared` the test says so and
//! passes.

use std::path::PathBuf;
use std::sync::Arc;

use hsa_core::memory::{AgentAccess, GlobalFlags, Segment};
use hsa_core::runtime::{AgentPoolInfo, LinkInfo, LinkType, PoolHandle, Runtime};
use hsa_linux::LinuxPlatform;

/// The `topology` directory of capture `case`, or `None` (said) when it is missing.
fn dump(case: &str) -> Option<PathBuf> {
    hsa_test_support::shared::topology_dump(case)
}

/// The pool of node `node` with exactly `flags` (global segment), or its group pool.
fn pool(rt: &Runtime<Arc<LinuxPlatform>>, node: u32, flags: Option<GlobalFlags>) -> PoolHandle {
    let agent = rt.agents()[node as usize].handle();
    rt.agent_pools(agent)
        .find(|p| match flags {
            Some(f) => p.info().segment == Segment::Global && p.info().global_flags == f,
            None => p.info().segment == Segment::Group,
        })
        .unwrap_or_else(|| panic!("node {node} has no pool {flags:?}"))
        .handle()
}

fn info(rt: &Runtime<Arc<LinuxPlatform>>, from: u32, pool: PoolHandle) -> AgentPoolInfo {
    let agent = rt.agents()[from as usize].handle();
    rt.agent_pool_info(agent, pool).unwrap()
}

#[allow(clippy::too_many_arguments)]
fn link(
    min_bw: u32,
    max_bw: u32,
    atomics: bool,
    coherent: bool,
    link_type: LinkType,
    weight: u32,
) -> Option<LinkInfo> {
    Some(LinkInfo {
        min_latency_ns: 0,
        max_latency_ns: 0,
        min_bandwidth_mbps: min_bw,
        max_bandwidth_mbps: max_bw,
        atomic_32bit: atomics,
        atomic_64bit: atomics,
        coherent,
        link_type,
        numa_distance: weight,
    })
}

const NEVER: AgentPoolInfo = AgentPoolInfo {
    access: AgentAccess::NeverAllowed,
    hops: 0,
    link: None,
};

#[test]
fn agent_pool_info_of_the_8_gpu_mi210_capture_is_rocr_5_2s() {
    let Some(root) = dump("mi210-8gpu-xgmi-pcie-topology") else {
        return;
    };
    let rt = Runtime::new(Arc::new(hsa_emu::open_capture(&root).unwrap().platform)).unwrap();
    let nodes: Vec<u32> = rt.agents().iter().map(|a| a.node()).collect();
    assert_eq!(nodes, (0..10).collect::<Vec<u32>>());
    let coarse = Some(GlobalFlags::COARSE_GRAINED);
    let fine = Some(GlobalFlags::FINE_GRAINED);
    let disallowed = |link| AgentPoolInfo {
        access: AgentAccess::DisallowedByDefault,
        hops: 1,
        link,
    };

    // nodes/0/io_links/1: type 2 (PCIe), node_to 2, weight 20, min/max_bandwidth 312/32000,
    // flags 3 (override, non-coherent).
    let cpu0_to_gpu2 = link(312, 32000, true, false, LinkType::Pcie, 20);
    assert_eq!(info(&rt, 0, pool(&rt, 2, coarse)), disallowed(cpu0_to_gpu2));
    // Fine-grained VRAM: the CPU (hive 0) is outside GPU 2's hive 2000000000000000401.
    assert_eq!(info(&rt, 0, pool(&rt, 2, fine)), NEVER);

    // nodes/2/io_links/1: type 11 (XGMI), node_to 3, weight 15, 50000/50000, flags 1.
    let gpu2_to_gpu3 = link(50000, 50000, true, true, LinkType::Xgmi, 15);
    assert_eq!(info(&rt, 2, pool(&rt, 3, coarse)), disallowed(gpu2_to_gpu3));
    // Same hive: fine-grained VRAM is reachable after allow_access.
    assert_eq!(info(&rt, 2, pool(&rt, 3, fine)), disallowed(gpu2_to_gpu3));

    // nodes/2/p2p_links/1: type 2, node_to 6, weight 72, 0/0, flags 3.
    let gpu2_to_gpu6 = link(0, 0, true, false, LinkType::Pcie, 72);
    assert_eq!(info(&rt, 2, pool(&rt, 6, coarse)), disallowed(gpu2_to_gpu6));
    // Another hive (…402): fine-grained VRAM never.
    assert_eq!(info(&rt, 2, pool(&rt, 6, fine)), NEVER);

    // nodes/2/io_links/0: type 2, node_to 0, weight 20, 312/32000, flags 1: system memory is
    // disallowed by default for a GPU.
    let gpu2_to_cpu0 = link(312, 32000, true, true, LinkType::Pcie, 20);
    assert_eq!(info(&rt, 2, pool(&rt, 0, fine)), disallowed(gpu2_to_cpu0));

    // nodes/1/io_links/0: type 1 (HyperTransport), node_to 0, weight 32, flags 0 (no
    // override: HyperTransport's atomics and coherence): allowed by default for a CPU.
    assert_eq!(
        info(&rt, 1, pool(&rt, 0, fine)),
        AgentPoolInfo {
            access: AgentAccess::AllowedByDefault,
            hops: 1,
            link: link(0, 0, true, true, LinkType::HyperTransport, 32),
        }
    );

    // nodes/0/p2p_links/0: node_to 6, weight 52, flags 3; nodes/6/p2p_links/0: node_to 0,
    // weight 52, flags 1.
    assert_eq!(
        info(&rt, 0, pool(&rt, 6, coarse)),
        disallowed(link(0, 0, true, false, LinkType::Pcie, 52))
    );
    assert_eq!(
        info(
            &rt,
            6,
            pool(
                &rt,
                0,
                Some(GlobalFlags::KERNARG | GlobalFlags::FINE_GRAINED)
            )
        ),
        disallowed(link(0, 0, true, true, LinkType::Pcie, 52))
    );

    // The group segment of another GPU: never; the owner: allowed, no hop.
    assert_eq!(info(&rt, 3, pool(&rt, 2, None)), NEVER);
    assert_eq!(
        info(&rt, 2, pool(&rt, 2, coarse)),
        AgentPoolInfo {
            access: AgentAccess::AllowedByDefault,
            hops: 0,
            link: None,
        }
    );

    // Unknown handles.
    let bad_agent = hsa_core::runtime::AgentHandle(12345);
    assert_eq!(
        rt.agent_pool_info(bad_agent, pool(&rt, 2, coarse))
            .unwrap_err()
            .status(),
        hsa_core::Status::InvalidAgent
    );
    assert_eq!(
        rt.agent_pool_info(rt.agents()[0].handle(), PoolHandle(5))
            .unwrap_err()
            .status(),
        hsa_core::Status::InvalidMemoryPool
    );
}
