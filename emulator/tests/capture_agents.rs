//! The runtime on the emulated device over the largest captured topology, the 65 nodes of an
//! MI300X system in CPX mode (`mi300x-cpx-64part`, read in place from the shared test data):
//! every agent fits every per-agent table and mask (`hsa_core::addr::MAX_AGENTS`). Without
//! `../shared` the test says so and passes.

use std::path::PathBuf;
use std::sync::Arc;

use hsa_core::addr::{NodeId, MAX_AGENTS};
use hsa_core::memory::GlobalFlags;
use hsa_core::runtime::{AgentHandle, Runtime};

/// The capture `case`'s `topology` directory, or `None` (said) when it is absent.
fn dump(case: &str) -> Option<PathBuf> {
    hsa_test_support::shared::topology_dump(case)
}

#[test]
fn every_agent_of_the_65_node_capture_can_be_allowed_access() {
    let Some(root) = dump("mi300x-cpx-64part-topology") else {
        return;
    };
    // As `hsainfo --sysfs` and `vector_copy --sysfs` open it.
    let rt = Runtime::new(Arc::new(hsa_emu::open_capture(&root).unwrap().platform)).unwrap();
    let nodes: Vec<u32> = rt.agents().iter().map(|a| a.node()).collect();
    assert_eq!(nodes, (0..65).collect::<Vec<u32>>());
    assert!(nodes.len() <= MAX_AGENTS);
    let gpus = rt.agents().iter().filter(|a| a.is_gpu()).count();
    assert_eq!(gpus, 63);
    let all: Vec<AgentHandle> = rt.agents().iter().map(|a| a.handle()).collect();
    let cpu = rt.first_cpu().unwrap().handle();
    let pool = rt
        .find_pool(cpu, GlobalFlags::FINE_GRAINED)
        .unwrap()
        .handle();

    // An agent listed many times counts once; the agents after the repeats are not dropped.
    let a = rt.allocate(pool, 4096).unwrap();
    let mut repeated = vec![all[0]; 2 * MAX_AGENTS];
    repeated.push(all[1]);
    repeated.push(all[64]);
    rt.allow_access(&repeated, a.va).unwrap();
    let allowed = rt.pointer_info(a.va).unwrap().allowed_nodes;
    let ids: Vec<u32> = allowed.iter().map(NodeId::get).collect();
    assert_eq!(ids, [0, 1, 64]);

    // Every agent, node 64 included (the access mask once held nodes 0..64 only).
    let b = rt.allocate(pool, 4096).unwrap();
    rt.allow_access(&all, b.va).unwrap();
    let allowed = rt.pointer_info(b.va).unwrap().allowed_nodes;
    assert_eq!(allowed.len(), 65);
    for node in 0..65 {
        assert!(allowed.contains(NodeId(node)), "node {node} not allowed");
    }
    rt.free(a.va).unwrap();
    rt.free(b.va).unwrap();
}

/// The `recommended_sdma_engine_id_mask` the emulated amdkfd gives an IO link
/// (`hsa_emu::device::fill_recommended_sdma_engines`) is what amdkfd 1.17 wrote on the IO
/// links of both captures that have it: an MI210 hive of 8 GPUs (2 PCIe and 3 xGMI engines:
/// 3 on the CPU links, 28 = engines 2..=4 on the xGMI links) and the 63 MI300X partitions in
/// CPX mode (no xGMI engines: 3 everywhere). P2P links are left as they are (amdkfd builds
/// them elsewhere; the MI210 capture has masks on some and not on their reverses).
#[test]
fn recommended_sdma_engines_are_amdkfds_on_real_captures() {
    for (case, links) in [
        ("mi210-8gpu-xgmi-pcie-topology", 40),
        ("mi300x-cpx-64part-topology", 4032),
    ] {
        let Some(root) = dump(case) else {
            return;
        };
        let captured = hsa_linux::topology::Topology::read(&root).unwrap();
        let mut cleared = captured.clone();
        for n in &mut cleared.nodes {
            for l in n.io_links.iter_mut().filter(|l| !l.p2p) {
                l.rec_sdma_eng_id_mask = 0;
            }
        }
        assert_eq!(
            hsa_emu::device::fill_recommended_sdma_engines(&mut cleared),
            links,
            "{case}"
        );
        let masks = |t: &hsa_linux::topology::Topology| -> Vec<(u32, u32, bool, u32)> {
            t.nodes
                .iter()
                .flat_map(|n| &n.io_links)
                .map(|l| (l.node_from, l.node_to, l.p2p, l.rec_sdma_eng_id_mask))
                .collect()
        };
        assert_eq!(masks(&cleared), masks(&captured), "{case}");
        // Idempotent: nothing is left to fill.
        assert_eq!(
            hsa_emu::device::fill_recommended_sdma_engines(&mut cleared),
            0
        );
    }
}
