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
