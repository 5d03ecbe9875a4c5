//! The topology reader against real KFD sysfs dumps (read in place from the shared test data)
//! and against malformed input.
//!
//! Expected numbers were read from the dump files themselves (`cat .../properties`).

use std::fs;
use std::path::{Path, PathBuf};

use hsa_core::isa::Processor;
use hsa_core::platform::{Cache, DeviceType, HeapType};
use hsa_core::runtime::{Agent, AgentHandle};
use hsa_core::Status;
use hsa_linux::topology::{
    parse_properties, MemoryTree, SysfsTree, Topology, MAX_FILE_BYTES, MAX_LINE_BYTES, MAX_NODES,
};

/// The capture `case`'s `topology` directory, or `None` (said) when it is absent.
fn dump(case: &str) -> Option<PathBuf> {
    hsa_test_support::shared::topology_dump(case)
}

#[test]
fn mi25_2018_dump_without_gfx_target_version() {
    let Some(root) = dump("mi25-gfx900-2018-topology") else {
        return;
    };
    let t = Topology::read(&root).unwrap();
    assert_eq!(t.generation_id, Some(2));
    assert_eq!(t.system.platform_oem, 4777524452235890003);
    assert_eq!(t.system.platform_id, 85015745549651);
    assert_eq!(t.system.platform_rev, 2);
    assert_eq!(t.nodes.len(), 3);
    assert_eq!(t.cpu_count(), 1);
    assert_eq!(t.gpu_count(), 2); // node 2 is a copy of node 1

    let cpu = &t.nodes[0];
    assert_eq!(cpu.properties.device_type(), DeviceType::Cpu);
    assert_eq!(cpu.properties.cpu_cores_count, 20);
    assert_eq!(cpu.properties.compute_unit_count(), 20);
    assert_eq!(cpu.properties.max_engine_clk_ccompute, 3200);
    assert_eq!(cpu.memory_banks.len(), 1);
    assert_eq!(cpu.memory_banks[0].heap_type, HeapType::System);
    assert_eq!(cpu.memory_banks[0].size_bytes, 67155521536);
    assert_eq!(cpu.memory_banks[0].mem_clk_max_mhz, 2666);
    assert_eq!(cpu.processor(), None);

    let gpu = &t.nodes[1];
    let p = &gpu.properties;
    assert_eq!(p.node_id, 1);
    assert_eq!(p.gpu_id, 13261);
    assert_eq!(p.name.as_str(), "");
    assert_eq!(p.device_id, 0x6860);
    assert_eq!(p.gfx_target_version, 90000, "derived from device id 0x6860");
    assert_eq!(gpu.processor().map(Processor::name), Some("gfx900"));
    assert_eq!(
        gpu.target_id(false).map(|t| t.isa_name()).as_deref(),
        Some("amdgcn-amd-amdhsa--gfx900:xnack-")
    );
    assert_eq!(p.marketing_name.as_str(), "AMD Radeon Instinct MI25");
    assert_eq!(p.compute_unit_count(), 64);
    assert_eq!(p.wave_front_size, 64);
    assert_eq!(p.max_waves_per_simd, 10);
    assert_eq!(p.lds_size_in_kb, 64);
    assert_eq!(p.local_mem_size, 17163091968);
    assert_eq!(p.capability, 8832);
    assert_eq!(p.num_xcc, 1);
    assert_eq!(p.unique_id, 1000000000000000101);
    assert_eq!(p.hive_id, 0);
    assert_eq!(gpu.local_memory_bytes(), 17163091968);
    assert_eq!(gpu.memory_banks[0].width_bits, 2048);
    assert_eq!(gpu.caches.len(), 96);
    // caches/0: level 1, 16 KiB, type 9 (data | HSACU).
    assert_eq!(
        (
            gpu.caches[0].level,
            gpu.caches[0].size_kib,
            gpu.caches[0].cache_type
        ),
        (1, 16, 9)
    );
    assert_eq!(gpu.io_links.len(), 1);
    assert!(t.xgmi_hives().is_empty());
    assert_eq!(t.nodes[2].properties.device_id, 0x6860);
    assert_eq!(t.nodes[2].properties.node_id, 2);
}

#[test]
fn mi210_eight_gpus_two_hives() {
    let Some(root) = dump("mi210-8gpu-xgmi-pcie-topology") else {
        return;
    };
    let t = Topology::read(&root).unwrap();
    assert_eq!(t.generation_id, None, "this dump has no generation_id");
    assert_eq!(t.system.platform_oem, 0);
    assert_eq!(t.nodes.len(), 10);
    assert_eq!(t.cpu_count(), 2);
    assert_eq!(t.gpu_count(), 8);
    for n in &t.nodes[2..] {
        let p = &n.properties;
        assert_eq!(n.processor().map(Processor::name), Some("gfx90a"));
        assert_eq!(
            n.target_id(false).map(|t| t.isa_name()).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")
        );
        assert_eq!(p.compute_unit_count(), 104);
        assert_eq!(p.wave_front_size, 64);
        assert_eq!(p.marketing_name.as_str(), "AMD Instinct MI210");
        assert_eq!(p.max_engine_clk_fcompute, 1700);
        assert!(n.memory_banks.is_empty());
    }
    let hives = t.xgmi_hives();
    assert_eq!(hives.len(), 2);
    assert_eq!(hives[&2000000000000000401], vec![2, 3, 4, 5]);
    assert_eq!(hives[&2000000000000000402], vec![6, 7, 8, 9]);

    let n2 = &t.nodes[2];
    assert_eq!(n2.properties.drm_render_minor, 128);
    assert_eq!(n2.properties.location_id, 25344);
    assert_eq!(n2.properties.num_sdma_xgmi_engines, 3);
    assert_eq!(n2.properties.debug_prop, 470);
    assert_eq!(n2.properties.asic_revision, (746037888 >> 22) & 0xf);
    // io_links: PCIe to CPU 0, XGMI to 3, 4, 5; then p2p_links: PCIe to 1, 6, 7, 8, 9.
    let links: Vec<(u32, u32, bool)> = n2
        .io_links
        .iter()
        .map(|l| (l.link_type, l.node_to, l.p2p))
        .collect();
    assert_eq!(
        links,
        vec![
            (2, 0, false),
            (11, 3, false),
            (11, 4, false),
            (11, 5, false),
            (2, 1, true),
            (2, 6, true),
            (2, 7, true),
            (2, 8, true),
            (2, 9, true)
        ]
    );
    assert_eq!(
        (n2.io_links[0].weight, n2.io_links[0].max_bandwidth),
        (20, 32000)
    );
    let cpu = &t.nodes[0].properties;
    assert_eq!(
        (cpu.cpu_cores_count, cpu.gpu_id, cpu.simd_count),
        (64, 0, 0)
    );
}

#[test]
fn mi300x_65_nodes_in_numeric_order() {
    let Some(root) = dump("mi300x-cpx-64part-topology") else {
        return;
    };
    let t = Topology::read(&root).unwrap();
    assert_eq!(t.generation_id, Some(80));
    assert_eq!(t.nodes.len(), 65);
    let ids: Vec<u32> = t.nodes.iter().map(|n| n.properties.node_id).collect();
    assert_eq!(ids, (0..65).collect::<Vec<u32>>());
    assert_eq!(t.cpu_count(), 2);
    assert_eq!(t.gpu_count(), 63);
    for n in &t.nodes[2..] {
        assert_eq!(n.processor().map(Processor::name), Some("gfx942"));
        assert_eq!(
            n.target_id(false).map(|t| t.isa_name()).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-")
        );
        assert_eq!(n.properties.compute_unit_count(), 38);
        assert_eq!(n.properties.marketing_name.as_str(), "AMD Instinct MI300X");
        assert_eq!(n.io_links.len(), 63);
    }
    let hives = t.xgmi_hives();
    assert_eq!(hives.len(), 1);
    assert_eq!(hives[&2000000000000000301].len(), 63);
    let xgmi = t
        .nodes
        .iter()
        .flat_map(|n| &n.io_links)
        .filter(|l| l.link_type == 11)
        .count();
    let pcie = t
        .nodes
        .iter()
        .flat_map(|n| &n.io_links)
        .filter(|l| l.link_type == 2)
        .count();
    let ht = t
        .nodes
        .iter()
        .flat_map(|n| &n.io_links)
        .filter(|l| l.link_type == 1)
        .count();
    assert_eq!((xgmi, pcie, ht), (3906, 126, 2));
    // amdkfd 1.17's recommended SDMA engines: the two PCIe engines on every GPU's link (the
    // CPX partitions have no xGMI engines), none on the CPUs' link to each other.
    let masks: std::collections::BTreeMap<(u32, u32), usize> = t
        .nodes
        .iter()
        .flat_map(|n| &n.io_links)
        .fold(Default::default(), |mut m, l| {
            *m.entry((l.link_type, l.rec_sdma_eng_id_mask)).or_default() += 1;
            m
        });
    assert_eq!(
        masks.into_iter().collect::<Vec<_>>(),
        [((1, 0), 2), ((2, 3), 126), ((11, 3), 3906)]
    );
    assert_eq!(t.nodes[0].properties.cpu_cores_count, 96);
}

#[test]
fn mi308x_partitions_with_memory_banks() {
    let Some(root) = dump("mi308x-cpx-topology") else {
        return;
    };
    let t = Topology::read(&root).unwrap();
    assert_eq!(t.generation_id, Some(33));
    assert_eq!(t.system.platform_oem, 35498446626881);
    assert_eq!(t.nodes.len(), 34);
    assert_eq!(t.cpu_count(), 2);
    assert_eq!(t.gpu_count(), 32);
    let n2 = &t.nodes[2];
    assert_eq!(n2.properties.gpu_id, 24248);
    assert_eq!(n2.properties.name.as_str(), "ip discovery");
    assert_eq!(n2.properties.marketing_name.as_str(), "AMD Instinct MI308X");
    assert_eq!(n2.processor().map(Processor::name), Some("gfx942"));
    assert_eq!(n2.properties.compute_unit_count(), 20);
    assert_eq!(n2.memory_banks.len(), 1);
    assert_eq!(n2.memory_banks[0].heap_type, HeapType::FrameBufferPublic);
    assert_eq!(n2.local_memory_bytes(), 51539607552);
    assert_eq!(n2.caches.len(), 46);
    assert_eq!(n2.caches[0].size_kib, 32);
    // 24 partitions report 48 GiB, 8 report 51522830336 bytes.
    let sizes: Vec<u64> = t.nodes[2..]
        .iter()
        .map(|n| n.local_memory_bytes())
        .collect();
    assert_eq!(sizes.iter().filter(|&&s| s == 51539607552).count(), 24);
    assert_eq!(sizes.iter().filter(|&&s| s == 51522830336).count(), 8);
    assert_eq!(t.nodes[0].memory_banks[0].size_bytes, 1081864880128);
    assert_eq!(t.nodes[1].memory_banks[0].size_bytes, 1082256592896);
    assert_eq!(t.nodes[0].properties.cpu_cores_count, 112);
    let hives = t.xgmi_hives();
    assert_eq!(hives.len(), 1);
    assert_eq!(hives[&2000000000000000201], (2..34).collect::<Vec<u32>>());
    let count = |ty: u32| {
        t.nodes
            .iter()
            .flat_map(|n| &n.io_links)
            .filter(|l| !l.p2p && l.link_type == ty)
            .count()
    };
    // CPU-to-CPU links are type 5 (QPI 1.1) here.
    assert_eq!((count(11), count(2), count(5), count(1)), (992, 64, 2, 0));
}

// ---- malformed input ----

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hsa-topo-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn node(root: &Path, n: u32, props: &str) {
    let d = root.join("nodes").join(n.to_string());
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("properties"), props).unwrap();
}

#[test]
fn line_without_value_names_file_and_line() {
    let e = parse_properties("simd_count 4\ncpu_cores_count\n", "p").unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert_eq!(
        e.detail(),
        "p:2: malformed line 'cpu_cores_count': expected '<key> <value>'"
    );
}

#[test]
fn non_number_is_an_error_with_path_and_line() {
    let root = tempdir("nan");
    node(&root, 0, "cpu_cores_count 4\nsimd_count 12x\n");
    let e = Topology::read(&root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    let want = format!(
        "{}:2: simd_count value '12x' is not a decimal number",
        root.join("nodes/0/properties").display()
    );
    assert_eq!(e.detail(), want);
    // An unknown key with a non-number value is ignored.
    node(&root, 0, "cpu_cores_count 4\nsibling_map 1,0,1\n");
    assert_eq!(
        Topology::read(&root).unwrap().nodes[0]
            .properties
            .cpu_cores_count,
        4
    );
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn out_of_range_and_duplicates_and_bad_keys() {
    let root = tempdir("range");
    node(&root, 0, "simd_count 4294967296\n");
    let e = Topology::read(&root).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .ends_with(":1: simd_count value 4294967296 out of range for u32"),
        "{}",
        e.detail()
    );
    let e = parse_properties("a 1\na 2\n", "f").unwrap_err();
    assert_eq!(e.detail(), "f:2: duplicate key 'a'");
    let e = parse_properties("a-b 1\n", "f").unwrap_err();
    assert_eq!(e.detail(), "f:1: malformed key 'a-b'");
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn huge_file_and_long_line_are_rejected() {
    let root = tempdir("huge");
    let big = "x 1\n".repeat(MAX_FILE_BYTES / 4 + 1);
    node(&root, 0, &big);
    let e = Topology::read(&root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail()
            .to_string()
            .ends_with(&format!("file larger than {MAX_FILE_BYTES} bytes")),
        "{}",
        e.detail()
    );
    let long = format!("k {}\n", "1".repeat(MAX_LINE_BYTES));
    let e = parse_properties(&long, "f").unwrap_err();
    assert_eq!(
        e.detail(),
        format!(
            "f:1: line longer than {MAX_LINE_BYTES} bytes ({})",
            MAX_LINE_BYTES + 2
        )
    );
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn missing_pieces() {
    let root = tempdir("missing");
    let e = Topology::read(&root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail().to_string().contains("nodes: cannot list"),
        "{}",
        e.detail()
    );
    // Node directory without properties.
    fs::create_dir_all(root.join("nodes/0")).unwrap();
    let e = Topology::read(&root).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .contains("nodes/0/properties: cannot open"),
        "{}",
        e.detail()
    );
    // Numeric order, non-numeric entries skipped, bad generation_id reported.
    for n in (1..=10).rev() {
        node(
            &root,
            n,
            "simd_count 8\nsimd_per_cu 4\nwave_front_size 64\n",
        );
    }
    node(&root, 0, "cpu_cores_count 2\n");
    fs::create_dir_all(root.join("nodes/readme")).unwrap();
    let t = Topology::read(&root).unwrap();
    let ids: Vec<u32> = t.nodes.iter().map(|n| n.properties.node_id).collect();
    assert_eq!(
        ids,
        (0..=10).collect::<Vec<u32>>(),
        "10 after 9, not after 1"
    );
    assert_eq!(t.nodes[1].properties.gfx_target_version, 0);
    assert_eq!(t.nodes[1].properties.compute_unit_count(), 2);
    fs::write(root.join("generation_id"), "-3\n").unwrap();
    let e = Topology::read(&root).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .ends_with("generation_id:1: '-3' is not a decimal number"),
        "{}",
        e.detail()
    );
    fs::remove_file(root.join("generation_id")).unwrap();
    // A gap in the node numbers is a partial capture.
    fs::remove_dir_all(root.join("nodes/5")).unwrap();
    let e = Topology::read(&root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail()
            .to_string()
            .contains("nodes: node 5 is missing (found node 6 after 5 node(s)"),
        "{}",
        e.detail()
    );
    // A FIFO (or a device) where a file should be: refused without opening it.
    node(
        &root,
        5,
        "simd_count 8\nsimd_per_cu 4\nwave_front_size 64\n",
    );
    let fifo = root.join("nodes/5/gpu_id");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let e = Topology::read(&root).unwrap_err();
        assert!(
            e.detail()
                .to_string()
                .ends_with("nodes/5/gpu_id: cannot read: not a regular file"),
            "{}",
            e.detail()
        );
    }
    fs::remove_dir_all(&root).unwrap();
}

#[test]
fn memory_tree_reads_every_dump_as_the_file_system_does() {
    for case in [
        "mi210-8gpu-xgmi-pcie-topology",
        "mi25-gfx900-2018-topology",
        "mi300x-cpx-64part-topology",
        "mi308x-cpx-topology",
    ] {
        let Some(root) = dump(case) else { continue };
        let on_disk = Topology::read(&root).unwrap();
        let tree = MemoryTree::capture(&root).unwrap();
        let in_memory = Topology::read_from(&tree, &root).unwrap();
        assert!(!in_memory.nodes.is_empty(), "{case}");
        assert_eq!(in_memory, on_disk, "{case}");
    }
}

#[test]
fn memory_tree_errors_match_the_file_system() {
    let mut tree = MemoryTree::new();
    let root = Path::new("/t");
    let e = Topology::read_from(&tree, root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail().to_string().starts_with("/t/nodes: cannot list"),
        "{}",
        e.detail()
    );
    tree.add_dir("/t/nodes/0");
    let e = Topology::read_from(&tree, root).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .starts_with("/t/nodes/0/properties: cannot open"),
        "{}",
        e.detail()
    );
    // `properties` is a directory: an error, not "missing".
    tree.add_dir("/t/nodes/0/properties");
    let e = Topology::read_from(&tree, root).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .starts_with("/t/nodes/0/properties: cannot read"),
        "{}",
        e.detail()
    );
    let mut tree = MemoryTree::new();
    tree.add_file(
        "/t/nodes/1/properties",
        "simd_count 4\nsimd_per_cu 4\nwave_front_size 64\n",
    );
    tree.add_file("/t/nodes/0/properties", "cpu_cores_count 8\n");
    tree.add_file("/t/nodes/0/io_links/0/properties", "type 2\nnode_to 1\n");
    tree.add_file("/t/nodes/0/caches/3/properties", "level 2\n");
    tree.add_file("/t/nodes/0/caches/10/properties", "level 3\n");
    tree.add_dir("/t/nodes/0/caches/stray");
    tree.add_file("/t/nodes10/0/properties", "simd_count 1\n");
    tree.add_file("/t/generation_id", "7\n");
    let mut names = tree.list_dir(Path::new("/t/nodes/0")).unwrap();
    names.sort();
    assert_eq!(names, ["caches", "io_links", "properties"]);
    let t = Topology::read_from(&tree, root).unwrap();
    assert_eq!(t.generation_id, Some(7));
    assert_eq!((t.cpu_count(), t.gpu_count()), (1, 1));
    let levels: Vec<u32> = t.nodes[0].caches.iter().map(|c| c.level).collect();
    assert_eq!(levels, [2, 3]);
    assert_eq!(t.nodes[0].io_links[0].node_to, 1);
    tree.add_file("/t/nodes/1/gpu_id", vec![b'1'; MAX_FILE_BYTES + 1]);
    let e = Topology::read_from(&tree, root).unwrap_err();
    assert_eq!(
        e.detail(),
        format!("/t/nodes/1/gpu_id: file larger than {MAX_FILE_BYTES} bytes")
    );
}

#[test]
fn garbage_never_panics() {
    // A deterministic xorshift generator over bytes that favour the parser's separators.
    let alphabet = b"ab_1 0\n\t\r9-,\xc3\xa9 ";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 0..2000usize {
        let mut bytes = Vec::with_capacity(len % 300);
        for _ in 0..len % 300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push(alphabet[(x % alphabet.len() as u64) as usize]);
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(props) = parse_properties(&text, "g") {
            for p in &props {
                assert!(!p.key.is_empty() && !p.value.is_empty());
            }
        }
    }
}

proptest::proptest! {
    #[test]
    fn parse_properties_any_string(s in "\\PC{0,400}") {
        let _ = parse_properties(&s, "prop");
    }

    #[test]
    fn well_formed_lines_round_trip(pairs in proptest::collection::btree_map("[a-z_]{1,12}", 0u64..u64::MAX, 0..20)) {
        let text: String = pairs.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        let parsed = parse_properties(&text, "rt").unwrap();
        proptest::prop_assert_eq!(parsed.len(), pairs.len());
        for (p, (k, v)) in parsed.iter().zip(&pairs) {
            proptest::prop_assert_eq!(p.key, k.as_str());
            proptest::prop_assert_eq!(p.value, v.to_string());
        }
    }
}

#[test]
fn cpu_nodes_are_named_from_cpuinfo_by_apicid() {
    use hsa_linux::topology::cpu_model_names;
    let Some(root) = dump("mi210-8gpu-xgmi-pcie-topology") else {
        return;
    };
    let mut t = Topology::read(&root).unwrap();
    assert!(
        t.nodes[0].properties.name.is_empty(),
        "the dump's CPUs are unnamed"
    );
    // Two sockets: apicid 0.. on the first, 64.. on the second (cpu_core_id_base 0 and 64).
    let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\napicid\t\t: 0\n\n\
                   processor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\napicid\t\t: 2\n\n\
                   processor\t: 64\nmodel name\t: AMD EPYC 7713 64-Core Processor\napicid\t\t: 64\n";
    assert_eq!(
        cpu_model_names(cpuinfo),
        [
            (Some(0), "AMD EPYC 7763 64-Core Processor".to_owned()),
            (Some(2), "AMD EPYC 7763 64-Core Processor".to_owned()),
            (Some(64), "AMD EPYC 7713 64-Core Processor".to_owned()),
        ]
    );
    t.name_cpus_from_cpuinfo(cpuinfo);
    assert_eq!(
        t.nodes[0].properties.name.as_str(),
        "AMD EPYC 7763 64-Core Processor"
    );
    assert_eq!(
        t.nodes[1].properties.name.as_str(),
        "AMD EPYC 7713 64-Core Processor"
    );
    assert_eq!(
        t.nodes[1].properties.marketing_name.as_str(),
        "AMD EPYC 7713 64-Core Processor"
    );
    // GPU nodes keep their names; text without model names changes nothing.
    let gpu_name = t.nodes[2].properties.name.clone();
    t.name_cpus_from_cpuinfo("processor : 0\nBogoMIPS : 100\n");
    assert_eq!(t.nodes[2].properties.name, gpu_name);
    // An apicid no node starts at: the first model name.
    let mut t = Topology::read(&root).unwrap();
    t.name_cpus_from_cpuinfo("model name : Only One\napicid : 999\n");
    assert_eq!(t.nodes[1].properties.name.as_str(), "Only One");
}

/// The reader accepts as many nodes as the runtime holds agents, and no more.
#[test]
fn node_count_is_limited_to_the_runtimes_agents() {
    assert_eq!(MAX_NODES, hsa_core::addr::MAX_AGENTS);
    let root = Path::new("/t");
    let mut tree = MemoryTree::new();
    for n in 0..MAX_NODES {
        tree.add_file(format!("/t/nodes/{n}/properties"), "cpu_cores_count 1\n");
    }
    assert_eq!(
        Topology::read_from(&tree, root).unwrap().nodes.len(),
        MAX_NODES
    );
    tree.add_file(
        format!("/t/nodes/{MAX_NODES}/properties"),
        "cpu_cores_count 1\n",
    );
    let e = Topology::read_from(&tree, root).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert_eq!(
        e.detail(),
        "/t/nodes: more than 128 entries (MAX_NODES, the runtime's MAX_AGENTS)"
    );
}

// ---- fields a real topology cannot have ----

/// The dump `case` held in memory with the file `rel` (under the topology root) replaced by
/// `edit` of its text; `None` when the dump is absent.
fn dump_with(
    case: &str,
    rel: &str,
    edit: impl FnOnce(&str) -> String,
) -> Option<(PathBuf, MemoryTree)> {
    let root = dump(case)?;
    let mut tree = MemoryTree::capture(&root).unwrap();
    let path = root.join(rel);
    let text = fs::read_to_string(&path).unwrap();
    tree.add_file(&path, edit(&text));
    Some((root, tree))
}

/// `line` of `text` replaced by `with` (the line must be there).
fn replace_line(text: &str, line: &str, with: &str) -> String {
    assert!(text.lines().any(|l| l == line), "no line '{line}'");
    text.lines()
        .map(|l| if l == line { with } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `"<root>/<rel>:<n>"` where `n` is the 1-based line of `text` starting with `key `.
fn at(root: &Path, rel: &str, text: &str, key: &str) -> String {
    let n = text
        .lines()
        .position(|l| l.starts_with(&format!("{key} ")))
        .unwrap()
        + 1;
    format!("{}:{n}", root.join(rel).display())
}

fn read_error(root: &Path, tree: &MemoryTree) -> hsa_core::Error {
    let e = Topology::read_from(tree, root).unwrap_err();
    assert_eq!(e.status(), Status::Error, "{e}");
    e
}

#[test]
fn gpu_node_without_simds_per_cu_is_an_error() {
    let rel = "nodes/2/properties";
    let edit = |t: &str| replace_line(t, "simd_per_cu 4", "simd_per_cu 0");
    let Some((root, tree)) = dump_with("mi210-8gpu-xgmi-pcie-topology", rel, edit) else {
        return;
    };
    let text = fs::read_to_string(root.join(rel)).unwrap();
    assert_eq!(
        read_error(&root, &tree).detail(),
        format!(
            "{}: node 2: simd_per_cu 0 with simd_count 416 gives no compute unit: a GPU node \
             has 1..=416 SIMDs per CU",
            at(&root, rel, &text, "simd_per_cu")
        )
    );
    // Absent is 0 too: the message names the file.
    let mut tree = MemoryTree::new();
    tree.add_file(
        "/t/nodes/0/properties",
        "simd_count 8\nwave_front_size 64\n",
    );
    assert_eq!(
        read_error(Path::new("/t"), &tree).detail(),
        "/t/nodes/0/properties: node 0: simd_per_cu 0 with simd_count 8 gives no compute unit: \
         a GPU node has 1..=8 SIMDs per CU"
    );
    // More SIMDs per CU than SIMDs: no whole compute unit either.
    tree.add_file(
        "/t/nodes/0/properties",
        "simd_count 2\nsimd_per_cu 4\nwave_front_size 64\n",
    );
    assert_eq!(
        read_error(Path::new("/t"), &tree).detail(),
        "/t/nodes/0/properties:2: node 0: simd_per_cu 4 with simd_count 2 gives no compute \
         unit: a GPU node has 1..=2 SIMDs per CU"
    );
}

#[test]
fn simd_count_beyond_the_crat_field_is_an_error() {
    let rel = "nodes/2/properties";
    let edit = |t: &str| replace_line(t, "simd_count 416", "simd_count 4294967295");
    let Some((root, tree)) = dump_with("mi210-8gpu-xgmi-pcie-topology", rel, edit) else {
        return;
    };
    let text = fs::read_to_string(root.join(rel)).unwrap();
    assert_eq!(
        read_error(&root, &tree).detail(),
        format!(
            "{}: node 2: simd_count 4294967295 is out of range: amdkfd reports at most 65535 \
             (a 16-bit CRAT field)",
            at(&root, rel, &text, "simd_count")
        )
    );
    // The largest value the field holds is accepted; one more is not.
    let mut tree = MemoryTree::new();
    let props = |n: u32| format!("simd_count {n}\nsimd_per_cu 4\nwave_front_size 64\n");
    tree.add_file("/t/nodes/0/properties", props(65535));
    let t = Topology::read_from(&tree, Path::new("/t")).unwrap();
    assert_eq!(t.nodes[0].properties.compute_unit_count(), 16383);
    tree.add_file("/t/nodes/0/properties", props(65536));
    assert!(read_error(Path::new("/t"), &tree)
        .detail()
        .to_string()
        .starts_with("/t/nodes/0/properties:1: node 0: simd_count 65536 is out of range"));
}

#[test]
fn wave_front_size_the_isa_cannot_have_is_an_error() {
    // gfx90a (CDNA2) runs wave64 only.
    let rel = "nodes/2/properties";
    let edit = |t: &str| replace_line(t, "wave_front_size 64", "wave_front_size 32");
    let Some((root, tree)) = dump_with("mi210-8gpu-xgmi-pcie-topology", rel, edit) else {
        return;
    };
    let text = fs::read_to_string(root.join(rel)).unwrap();
    assert_eq!(
        read_error(&root, &tree).detail(),
        format!(
            "{}: node 2: wave_front_size 32 is not a wavefront size of gfx90a \
             (gfx_target_version 90010): 64 only",
            at(&root, rel, &text, "wave_front_size")
        )
    );
    // The 2018 MI25 dump has no gfx_target_version: the ISA derived from its device id
    // (gfx900) is the one checked.
    let rel = "nodes/1/properties";
    let edit = |t: &str| replace_line(t, "wave_front_size 64", "wave_front_size 32");
    let (root, tree) = dump_with("mi25-gfx900-2018-topology", rel, edit).unwrap();
    let text = fs::read_to_string(root.join(rel)).unwrap();
    assert_eq!(
        read_error(&root, &tree).detail(),
        format!(
            "{}: node 1: wave_front_size 32 is not a wavefront size of gfx900 \
             (gfx_target_version 90000): 64 only",
            at(&root, rel, &text, "wave_front_size")
        )
    );
    // gfx1100 (RDNA3) has wave32 and wave64, nothing else; an unknown ISA, 32 or 64.
    let mut tree = MemoryTree::new();
    let root = Path::new("/t");
    let props = |wave: u32, gfxv: u32| {
        format!(
            "simd_count 192\nsimd_per_cu 2\nwave_front_size {wave}\ngfx_target_version {gfxv}\n"
        )
    };
    for wave in [32, 64] {
        tree.add_file("/t/nodes/0/properties", props(wave, 110000));
        let t = Topology::read_from(&tree, root).unwrap();
        assert_eq!(t.nodes[0].properties.wave_front_size, wave);
    }
    tree.add_file("/t/nodes/0/properties", props(16, 110000));
    assert_eq!(
        read_error(root, &tree).detail(),
        "/t/nodes/0/properties:3: node 0: wave_front_size 16 is not a wavefront size of gfx1100 \
         (gfx_target_version 110000): 32 or 64"
    );
    tree.add_file("/t/nodes/0/properties", props(0, 0));
    assert_eq!(
        read_error(root, &tree).detail(),
        "/t/nodes/0/properties:3: node 0: wave_front_size 0 is not a wavefront size of an AMD \
         GPU (32 or 64)"
    );
}

#[test]
fn link_to_a_node_that_does_not_exist_is_an_error() {
    // The MI210 dump has nodes 0..=9.
    for rel in [
        "nodes/2/io_links/0/properties",
        "nodes/2/p2p_links/0/properties",
    ] {
        let edit = |t: &str| {
            let to = t.lines().find(|l| l.starts_with("node_to ")).unwrap();
            replace_line(t, to, "node_to 10")
        };
        let Some((root, tree)) = dump_with("mi210-8gpu-xgmi-pcie-topology", rel, edit) else {
            return;
        };
        let text = fs::read_to_string(root.join(rel)).unwrap();
        assert_eq!(
            read_error(&root, &tree).detail(),
            format!(
                "{}: node 2: node_to 10 names no node (the topology has nodes 0..=9)",
                at(&root, rel, &text, "node_to")
            )
        );
    }
}

#[test]
fn empty_properties_file_is_an_error() {
    let rel = "nodes/3/properties";
    for empty in ["", "\n \n\t\n"] {
        let Some((root, tree)) = dump_with("mi210-8gpu-xgmi-pcie-topology", rel, |_| empty.into())
        else {
            return;
        };
        assert_eq!(
            read_error(&root, &tree).detail(),
            format!(
                "{}: node 3: the properties file is empty (no '<key> <value>' line; amdkfd \
                 always writes the fields)",
                root.join(rel).display()
            )
        );
    }
    // The same for a memory bank's, a cache's or a link's properties.
    let rel = "nodes/2/mem_banks/0/properties";
    let (root, tree) = dump_with("mi308x-cpx-topology", rel, |_| String::new()).unwrap();
    assert_eq!(
        read_error(&root, &tree).detail(),
        format!(
            "{}: node 2: the properties file is empty (no '<key> <value>' line; amdkfd always \
             writes the fields)",
            root.join(rel).display()
        )
    );
}

/// One ISA model: a GPU agent's ISA (`HSA_AGENT_INFO_ISA`, what the loader checks code objects
/// against) and its topology node's ISA are one value, for every GPU node of every capture
/// and for nodes that set either SRAM ECC bit of `kfd_sysfs.h` (`HSA_CAP_SRAM_EDCSUPPORTED`,
/// bit 26, and bit 19, which kernels before it used and which is now
/// `HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED`).
#[test]
fn agent_isa_is_the_topology_isa() {
    let mut nodes = Vec::new();
    for case in [
        "mi25-gfx900-2018-topology",
        "mi210-8gpu-xgmi-pcie-topology",
        "mi300x-cpx-64part-topology",
        "mi308x-cpx-topology",
    ] {
        if let Some(root) = dump(case) {
            nodes.extend(Topology::read(&root).unwrap().nodes);
        }
    }
    let root = Path::new("/t");
    for gfxv in [90000, 90006, 90008, 90010, 90012, 90402, 100300, 110000] {
        for capability in [0, 0x0400_0000, 0x0008_0000] {
            let mut tree = MemoryTree::new();
            tree.add_file(
                "/t/nodes/0/properties",
                format!(
                    "simd_count 8\nsimd_per_cu 4\nwave_front_size 64\n\
                     gfx_target_version {gfxv}\ncapability {capability}\n"
                ),
            );
            nodes.extend(Topology::read_from(&tree, root).unwrap().nodes);
        }
    }
    let mut gpus = 0;
    for n in &nodes {
        let agent = Agent::new(
            AgentHandle::from_index(0),
            n.properties.clone(),
            std::iter::empty(),
            0,
            0,
            false,
        );
        let p = &n.properties;
        let what = format!(
            "node {} gfx_target_version {} capability {:#x}",
            p.node_id, p.gfx_target_version, p.capability
        );
        assert_eq!(agent.isa(), n.target_id(false).as_ref(), "{what}");
        gpus += usize::from(agent.isa().is_some());
    }
    assert!(gpus >= 24, "{gpus} GPU nodes checked");
}

/// A host CPU cache tree as sysfs writes it (two SMT siblings of one core: cpu0 and cpu1 share
/// every cache; cpu2 on a second core has its own L1d, L1i and L2 and shares the L3).
fn host_cache_tree(tree: &mut MemoryTree, cpus_dir: &str) {
    let caches = [
        // (cpu, index, level, type, size, shared_cpu_list)
        (0, 0, 1, "Data", "32K", "0-1"),
        (0, 1, 1, "Instruction", "32K", "0-1"),
        (0, 2, 2, "Unified", "1024K", "0-1"),
        (0, 3, 3, "Unified", "32M", "0-2"),
        (1, 0, 1, "Data", "32K", "0-1"),
        (1, 1, 1, "Instruction", "32K", "0-1"),
        (1, 2, 2, "Unified", "1024K", "0-1"),
        (1, 3, 3, "Unified", "32M", "0-2"),
        (2, 0, 1, "Data", "48K", "2"),
        (2, 1, 1, "Instruction", "32K", "2"),
        (2, 2, 2, "Unified", "2M", "2"),
        (2, 3, 3, "Unified", "32M", "0-2"),
    ];
    for (cpu, index, level, kind, size, shared) in caches {
        let d = format!("{cpus_dir}/cpu{cpu}/cache/index{index}");
        tree.add_file(format!("{d}/level"), format!("{level}\n"));
        tree.add_file(format!("{d}/type"), format!("{kind}\n"));
        tree.add_file(format!("{d}/size"), format!("{size}\n"));
        tree.add_file(format!("{d}/coherency_line_size"), "64\n");
        tree.add_file(format!("{d}/shared_cpu_list"), format!("{shared}\n"));
    }
    tree.add_file(format!("{cpus_dir}/cpulist"), "0-2\n");
}

/// libhsakmt's CPU caches (`topology_get_cpu_cache_props`): amdkfd gives a CPU node none, so
/// they come from `/sys/devices/system/node/node<N>/cpu<P>/cache/index<K>`, each shared cache
/// once (for the first CPU of its `shared_cpu_list`), sizes in KiB, the CPU bit in the type;
/// without `node/`, node 0's from `/sys/devices/system/cpu`. A GPU node keeps KFD's caches.
#[test]
fn cpu_nodes_take_their_caches_from_the_host_cache_tree() {
    let Some(root) = dump("mi210-8gpu-xgmi-pcie-topology") else {
        return;
    };
    let mut t = Topology::read(&root).unwrap();
    let gpu_caches = t.nodes[2].caches.clone();
    assert!(t.nodes[0].caches.is_empty() && t.nodes[1].caches.is_empty());
    let mut tree = MemoryTree::new();
    host_cache_tree(&mut tree, "/s/node/node0");
    host_cache_tree(&mut tree, "/s/node/node1");
    t.cpu_caches_from(&tree, Path::new("/s")).unwrap();
    let c = |cpu: u32, level: u32, size_kib: u32, kind: u32| Cache {
        processor_id_low: cpu,
        level,
        size_kib,
        cache_line_size_bytes: 64,
        cache_type: kind | 4,
    };
    let want = vec![
        c(0, 1, 32, 1),
        c(0, 1, 32, 2),
        c(0, 2, 1024, 3),
        c(0, 3, 32 * 1024, 3),
        c(2, 1, 48, 1),
        c(2, 1, 32, 2),
        c(2, 2, 2048, 3),
    ];
    assert_eq!(t.nodes[0].caches, want);
    assert_eq!(t.nodes[1].caches, want);
    assert_eq!(t.nodes[2].caches, gpu_caches);
    // ROCR's CPU agent keeps the data-only caches: HSA_AGENT_INFO_CACHE_SIZE is L1d's (the
    // last CPU's of a level, 48 KiB) and nothing for the unified levels.
    let cpu = Agent::new(
        AgentHandle::from_index(0),
        t.nodes[0].properties.clone(),
        t.nodes[0].caches.iter().copied(),
        0,
        0,
        false,
    );
    assert_eq!(cpu.cache_sizes_bytes(), [48 * 1024, 0, 0, 0]);

    // A kernel without NUMA: node 0's CPUs under /s/cpu.
    let mut t = Topology::read(&root).unwrap();
    let mut tree = MemoryTree::new();
    host_cache_tree(&mut tree, "/s/cpu");
    t.cpu_caches_from(&tree, Path::new("/s")).unwrap();
    assert_eq!(t.nodes[0].caches, want);
    assert!(t.nodes[1].caches.is_empty());

    // A size that is not K or M names the file.
    let mut t = Topology::read(&root).unwrap();
    tree.add_file("/s/cpu/cpu2/cache/index2/size", "2G\n");
    let e = t.cpu_caches_from(&tree, Path::new("/s")).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert_eq!(
        e.detail().to_string(),
        "/s/cpu/cpu2/cache/index2/size:1: '2G' is not a size in K or M"
    );
}
