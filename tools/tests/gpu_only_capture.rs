//! hsainfo on `testdata/kfd-topology/mi100-gpu-only`: a KFD tree of one gfx908 GPU node (an
//! MI100's properties, `mem_banks_count 1` without a `mem_banks/` directory, `local_mem_size
//! 0`) and no CPU node. amdkfd always reports its CPU nodes before any GPU
//! (`kfd_topology_init`), so the emulated device completes such a tree with a CPU node 0 and
//! the GPU as node 1 (`hsa_emu::device::complete_capture`); the report lists both, with the
//! GPU's values as the tree's files give them (read here independently of the topology
//! parser). Opening the platform and writing the report asks the device for no event and no
//! memory: a report needs no device event.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hsa_core::runtime::Runtime;

fn tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/kfd-topology/mi100-gpu-only/topology")
}

/// `key value` lines of a sysfs properties file.
fn properties(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// Each agent's first-level `Label: value` lines (two-space indent), first of each label.
fn agents(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut out: Vec<BTreeMap<String, String>> = Vec::new();
    for line in text.lines() {
        let t = line.trim_end();
        if t.starts_with("Agent ") && t[6..].trim().parse::<u32>().is_ok() {
            out.push(BTreeMap::new());
        } else if let (Some(map), true) =
            (out.last_mut(), t.starts_with("  ") && !t.starts_with("   "))
        {
            if let Some((label, value)) = t.trim().split_once(':') {
                map.entry(label.trim().to_string())
                    .or_insert_with(|| value.trim().to_string());
            }
        }
    }
    out
}

/// The tree is what the issue describes: one GPU node, no CPU node, a bank counted but not
/// listed, `local_mem_size 0`.
#[test]
fn the_tree_is_gpu_only() {
    let root = tree();
    let nodes: Vec<_> = std::fs::read_dir(root.join("nodes")).unwrap().collect();
    assert_eq!(nodes.len(), 1);
    let p = properties(&root.join("nodes/0/properties"));
    assert_eq!(p["cpu_cores_count"], 0);
    assert_eq!(p["gfx_target_version"], 90008);
    assert_eq!(p["mem_banks_count"], 1);
    assert_eq!(p["local_mem_size"], 0);
    assert!(!root.join("nodes/0/mem_banks").exists());
}

/// `hsainfo --sysfs` on the tree: exit 0; agent 1 the CPU node amdkfd would report (node 0,
/// this host's logical CPUs, a 16 GiB system pool), agent 2 the MI100 (node 1) with the tree's
/// compute units, chip id, clock, wavefront and waves per CU. Before, it exited 1 with
/// "creating the KFD memory event that reports queue errors: AMDKFD_IOC_ALLOC_MEMORY_OF_GPU:
/// Cannot allocate memory (errno 12)".
#[test]
fn hsainfo_reports_a_gpu_only_capture() {
    let root = tree();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hsainfo"))
        .arg("--sysfs")
        .arg(&root)
        .env_remove("HSA_RT_DEVICE")
        .env_remove("HSA_XNACK")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blocks = agents(&text);
    assert_eq!(blocks.len(), 2, "{text}");
    let (cpu, gpu) = (&blocks[0], &blocks[1]);
    assert_eq!(cpu["Device Type"], "CPU");
    assert_eq!(cpu["Node"], "0");
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(cpu["Compute Unit"], cores.to_string());
    assert!(
        text.contains("      Size:                    16777216(0x1000000) KB"),
        "{text}"
    );
    let p = properties(&root.join("nodes/0/properties"));
    assert_eq!(gpu["Device Type"], "GPU");
    assert_eq!(gpu["Node"], "1");
    assert_eq!(gpu["Name"], "gfx908");
    assert_eq!(gpu["Marketing Name"], "AMD Instinct MI100");
    assert_eq!(
        gpu["Compute Unit"],
        (p["simd_count"] / p["simd_per_cu"]).to_string()
    );
    assert_eq!(gpu["Compute Unit"], "120");
    let chip = p["device_id"];
    assert_eq!(gpu["Chip ID"], format!("{chip}({chip:#x})"));
    assert_eq!(
        gpu["Max Clock Freq. (MHz)"],
        p["max_engine_clk_fcompute"].to_string()
    );
    let waves = p["max_waves_per_simd"] * p["simd_per_cu"];
    assert_eq!(gpu["Max Waves Per CU"], format!("{waves}({waves:#x})"));
    assert_eq!(gpu["Shader Engines"], p["array_count"].to_string());
}

/// Opening the platform over the capture and writing the report creates no KFD event and
/// allocates nothing on the device: the queue-error monitor's events come with the first
/// queue. (Before, the platform's open created two events and the event page.)
#[test]
fn the_report_asks_the_device_for_no_event() {
    let device = hsa_emu::open_capture(&tree()).expect("open the capture");
    let emulated = device.emulated.clone().expect("the emulated device");
    let rt = Runtime::new(Arc::new(device.platform)).expect("runtime");
    let text = hsa_tools::report::agents::report(&rt);
    assert!(text.contains("  Name:                    gfx908"), "{text}");
    let live = emulated.live_handles();
    assert_eq!(
        (live.events, live.memory, live.queues),
        (0, 0, 0),
        "{live:?}"
    );
}
