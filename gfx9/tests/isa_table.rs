//! The processor table (`hsa_core::isa`) against what it was taken from, and the one ISA
//! value against every place that uses it:
//!
//! - `llvm-mc-19`, run at test time for every row: the `e_flags` it writes for
//!   `-mcpu=<processor>` (EF_AMDGPU_MACH, XNACK and SRAMECC "any" or "unsupported", generic
//!   version) and whether it accepts `.amdhsa_wavefront_size32 1` (wave32). Rows llvm-19 does
//!   not know must be the ones listed in [`NEWER_THAN_LLVM_19`]. Skipped with a message when
//!   llvm-mc-19 is not installed.
//! - the real code objects of `testdata/codeobjects` (their `e_flags`, built by clang-19 with
//!   no target features, so every supported feature is "any").
//! - the real KFD topologies of `../shared/testdata/kfd-topology` (`gfx_target_version`,
//!   `wave_front_size`, `capability`) and, for the MI210, the ISA name rocminfo printed on a
//!   real MI210 machine (`../shared/testdata/rocminfo`). Skipped with a message when absent.
//! - per capture, each GPU agent's ISA is what the loader accepts code objects for and what
//!   picks the emulated device's interpreter model.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hsa_core::isa::{
    FeatureSetting, Processor, TargetId, EF_AMDGPU_FEATURE_SRAMECC_V4, EF_AMDGPU_FEATURE_XNACK_V4,
    EF_AMDGPU_GENERIC_VERSION_OFFSET, EF_AMDGPU_MACH,
};
use hsa_core::loader::code_object::AlignedBytes;
use hsa_core::loader::CodeObject;
use hsa_core::platform::NodeProperties;
use hsa_core::runtime::{Agent, AgentHandle};
use hsa_gfx9::Gfx9Target;

/// Rows whose values come from LLVM's ELF.h and AMDGPUUsage after llvm-19 (llvm-mc-19 writes
/// `EF_AMDGPU_MACH_NONE` for them).
const NEWER_THAN_LLVM_19: [&str; 4] = ["gfx950", "gfx1153", "gfx1250", "gfx9-4-generic"];

/// `e_flags` of an ELF object (bytes 48..52 of the ELF64 header).
fn e_flags(elf: &[u8]) -> u32 {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    u32::from_le_bytes(elf[48..52].try_into().unwrap())
}

/// Runs `llvm-mc-19` for `processor` on `source`; the object's bytes, or its stderr.
fn llvm_mc(processor: &str, source: &str) -> Result<Vec<u8>, String> {
    let mut child = Command::new("llvm-mc-19")
        .args([
            "-triple=amdgcn-amd-amdhsa",
            &format!("-mcpu={processor}"),
            "--amdhsa-code-object-version=6",
            "-filetype=obj",
            "-o",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(source.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The two-bit feature field a code object built with no target features has: "any" (1)
/// when the processor supports the feature, "unsupported" (0) when not.
fn default_bits(supported: bool) -> u32 {
    u32::from(supported)
}

#[test]
#[cfg_attr(miri, ignore = "runs llvm-mc, which miri cannot spawn")]
fn table_matches_llvm_mc_19() {
    if Command::new("llvm-mc-19")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: llvm-mc-19 not found");
        return;
    }
    // A kernel descriptor asking for wave32 (AMDGPUUsage "Kernel Descriptor",
    // `.amdhsa_wavefront_size32`): llvm-mc refuses it where wave32 does not exist.
    let wave32 = ".text\nk:\n  s_endpgm\n.rodata\n.p2align 6\n.amdhsa_kernel k\n  \
                  .amdhsa_next_free_vgpr 1\n  .amdhsa_next_free_sgpr 1\n  \
                  .amdhsa_wavefront_size32 1\n.end_amdhsa_kernel\n";
    let mut unknown = Vec::new();
    for p in Processor::all() {
        let flags = e_flags(&llvm_mc(p.name(), "").unwrap());
        if flags & EF_AMDGPU_MACH == 0 {
            unknown.push(p.name());
            continue;
        }
        assert_eq!(flags & EF_AMDGPU_MACH, p.mach(), "{p}: EF_AMDGPU_MACH");
        assert_eq!(
            (flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8,
            default_bits(p.supports_xnack()),
            "{p}: XNACK support"
        );
        assert_eq!(
            (flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10,
            default_bits(p.supports_sramecc()),
            "{p}: SRAMECC support"
        );
        assert_eq!(
            flags >> EF_AMDGPU_GENERIC_VERSION_OFFSET,
            u32::from(p.is_generic()),
            "{p}: generic version"
        );
        let wave32_ok = llvm_mc(p.name(), wave32).is_ok();
        assert_eq!(
            wave32_ok,
            p.wavefront_sizes().contains(&32),
            "{p}: wave32 (wavefront sizes {:?})",
            p.wavefront_sizes()
        );
    }
    assert_eq!(unknown, NEWER_THAN_LLVM_19);
}

fn codeobjects() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects")
}

#[test]
fn table_matches_the_code_objects() {
    let mut files = Vec::new();
    for dir in [codeobjects(), codeobjects().join("more")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "hsaco") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut seen = Vec::new();
    for path in &files {
        // kernels[_ocl|_more]-<processor>-v<N>.hsaco
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let (_, rest) = stem.split_once('-').unwrap();
        let (name, version) = rest.rsplit_once("-v").unwrap();
        let p = Processor::from_name(name).unwrap();
        let bytes = std::fs::read(path).unwrap();
        let flags = e_flags(&bytes);
        assert_eq!(flags & EF_AMDGPU_MACH, p.mach(), "{stem}");
        assert_eq!(
            (flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8,
            default_bits(p.supports_xnack()),
            "{stem}"
        );
        assert_eq!(
            (flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10,
            default_bits(p.supports_sramecc()),
            "{stem}"
        );
        let mut expected = TargetId::new(p);
        expected.generic_version = u32::from(version == "6" && p.is_generic());
        let aligned = AlignedBytes::new(&bytes);
        let co = CodeObject::parse(aligned.as_bytes()).unwrap();
        assert_eq!(co.target(), expected, "{stem}");
        seen.push(p.name());
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "gfx1030",
            "gfx1100",
            "gfx1200",
            "gfx9-generic",
            "gfx900",
            "gfx90a",
            "gfx940",
            "gfx941",
            "gfx942"
        ]
    );
}

/// `<shared>/testdata`, or `None` (said) when the captures are absent.
fn shared_testdata() -> Option<PathBuf> {
    hsa_test_support::shared::testdata()
}

/// The GPU nodes of a capture: the fields of `nodes/N/properties` this test reads (a
/// properties file is `<key> <value>` lines; kfd_topology.c).
fn gpu_nodes(root: &Path) -> Vec<NodeProperties> {
    let mut nodes = Vec::new();
    for entry in std::fs::read_dir(root.join("nodes")).unwrap() {
        let dir = entry.unwrap().path();
        let text = std::fs::read_to_string(dir.join("properties")).unwrap();
        let props: BTreeMap<&str, u64> = text
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k, v.trim().parse().ok()?))
            })
            .collect();
        let get = |k: &str| u32::try_from(props.get(k).copied().unwrap_or(0)).unwrap();
        let node = NodeProperties {
            node_id: dir.file_name().unwrap().to_str().unwrap().parse().unwrap(),
            simd_count: get("simd_count"),
            simd_per_cu: get("simd_per_cu"),
            wave_front_size: get("wave_front_size"),
            gfx_target_version: get("gfx_target_version"),
            capability: get("capability"),
            device_id: get("device_id"),
            ..NodeProperties::default()
        };
        if node.simd_count > 0 {
            nodes.push(node);
        }
    }
    nodes.sort_by_key(|n| n.node_id);
    nodes
}

/// Each capture, the processor of its GPUs (from the product: the capture's README) and its
/// GPU node count.
const CAPTURES: [(&str, &str, usize); 3] = [
    ("mi210-8gpu-xgmi-pcie-topology", "gfx90a", 8),
    ("mi300x-cpx-64part-topology", "gfx942", 63),
    ("mi308x-cpx-topology", "gfx942", 32),
];

#[test]
fn table_matches_the_captured_topologies() {
    let Some(data) = shared_testdata() else {
        return;
    };
    for (case, processor, count) in CAPTURES {
        let nodes = gpu_nodes(&data.join("kfd-topology").join(case).join("topology"));
        assert_eq!(nodes.len(), count, "{case}");
        for n in &nodes {
            let what = format!("{case} node {}", n.node_id);
            let p = Processor::from_gfx_target_version(n.gfx_target_version)
                .unwrap_or_else(|| panic!("{what}: {}", n.gfx_target_version));
            assert_eq!(p.name(), processor, "{what}");
            assert_eq!(p.gfx_target_version(), Some(n.gfx_target_version));
            assert!(
                p.wavefront_sizes().contains(&n.wave_front_size),
                "{what}: wave_front_size {}",
                n.wave_front_size
            );
        }
    }
    let gfx90a = gpu_nodes(&data.join("kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology"));
    assert_eq!(gfx90a[0].gfx_target_version, 90010);
    let gfx942 = gpu_nodes(&data.join("kfd-topology/mi308x-cpx-topology/topology"));
    assert_eq!(gfx942[0].gfx_target_version, 90402);
    // The MI25 capture predates gfx_target_version (the Linux backend derives it from the
    // device id); its nodes have none.
    let mi25 = gpu_nodes(&data.join("kfd-topology/mi25-gfx900-2018-topology/topology"));
    assert!(mi25.iter().all(|n| n.gfx_target_version == 0));
    assert!(mi25
        .iter()
        .all(|n| Processor::from_gfx_target_version(n.gfx_target_version).is_none()));

    // An MI210's ISA, from the capture's gfx_target_version and capability, is the name
    // rocminfo printed on a real 4×MI210 machine.
    let isa = TargetId::of_node(&gfx90a[0], false).unwrap().isa_name();
    assert_eq!(isa, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    let rocminfo =
        std::fs::read_to_string(data.join("rocminfo/tr7975wx-4x-mi210-rocminfo/rocminfo.txt"))
            .unwrap();
    let names: Vec<&str> = rocminfo
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Name:"))
        .map(str::trim)
        .filter(|n| n.starts_with("amdgcn-"))
        .collect();
    assert_eq!(names, [isa.as_str(); 4]);
}

/// For every GPU agent of every capture, one value: the agent's ISA is its node's target id,
/// the loader accepts exactly the code objects whose target runs on it (same processor, or a
/// generic target covering it), and the emulated device picks the same interpreter model for
/// the agent as for each code object it accepts.
#[test]
fn agent_isa_is_what_the_loader_and_the_emulated_device_use() {
    let Some(data) = shared_testdata() else {
        return;
    };
    // Each code object's target, as the loader reads it.
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(codeobjects()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "hsaco") {
            let bytes = std::fs::read(&path).unwrap();
            let aligned = AlignedBytes::new(&bytes);
            let target = CodeObject::parse(aligned.as_bytes()).unwrap().target();
            objects.push((path, target));
        }
    }
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    let mut checked = 0;
    for (case, processor, _) in CAPTURES {
        for (xnack_on, node) in [false, true].into_iter().flat_map(|x| {
            gpu_nodes(&data.join("kfd-topology").join(case).join("topology"))
                .into_iter()
                .map(move |n| (x, n))
        }) {
            let what = format!("{case} node {} xnack {xnack_on}", node.node_id);
            let agent = Agent::new(
                AgentHandle::from_index(0),
                node.clone(),
                std::iter::empty(),
                0,
                0,
                xnack_on,
            );
            let isa = *agent.isa().unwrap_or_else(|| panic!("{what}: no ISA"));
            assert_eq!(Some(isa), TargetId::of_node(&node, xnack_on), "{what}");
            assert_eq!(agent.name(), processor, "{what}");
            assert_eq!(isa.processor.name(), processor, "{what}");
            let on_off = if xnack_on {
                FeatureSetting::On
            } else {
                FeatureSetting::Off
            };
            assert_eq!(
                (isa.sramecc, isa.xnack),
                (FeatureSetting::On, on_off),
                "{what}"
            );
            for (path, target) in &objects {
                let runs = target.check_runs_on(&isa).is_ok();
                let same = target.processor == isa.processor
                    || target.processor.generic_covers(isa.processor);
                assert_eq!(runs, same, "{what}: {}", path.display());
                if runs {
                    assert_eq!(
                        Gfx9Target::from_processor(target.processor),
                        Gfx9Target::from_processor(isa.processor),
                        "{what}: {}",
                        path.display()
                    );
                    checked += 1;
                }
            }
        }
    }
    // gfx90a: kernels v4/v5 and kernels_ocl v4/v5 on 8 nodes; gfx942: v4/v5 on 95; twice
    // (XNACK off and on).
    assert_eq!(checked, 2 * (8 * 4 + 95 * 2));
}
