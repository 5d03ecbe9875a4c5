//! The main job end to end on the emulated device: vector_copy, vector_add, local_reverse and
//! a barrier-AND chain through the whole runtime (pools, queue, code object, kernarg segment,
//! dispatch packet, doorbell, completion signal), on the built-in profile and on a captured
//! MI210 topology.

use std::path::{Path, PathBuf};

use hsa_core::Status;
use hsa_linux::demo::{self, DemoConfig, DemoKernel};
use hsa_linux::emulated::{builtin_topology, EmulatedKfd};
use hsa_linux::topology::Topology;
use hsa_linux::LinuxPlatform;

fn builtin() -> LinuxPlatform {
    LinuxPlatform::new_emulated(EmulatedKfd::new(builtin_topology()).unwrap()).unwrap()
}

fn mi210() -> Option<LinuxPlatform> {
    let shared = std::env::var_os("HSA_RT_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let root = shared.join("testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology");
    if !root.is_dir() {
        eprintln!("skipped: {} is absent (set HSA_RT_SHARED)", root.display());
        return None;
    }
    let t = Topology::read(&root).unwrap();
    Some(LinuxPlatform::new_emulated(EmulatedKfd::new(t).unwrap()).unwrap())
}

fn config(kernel: DemoKernel, chain: u32) -> DemoConfig {
    DemoConfig {
        kernel,
        elements: 64 * 1024,
        chain,
        ..DemoConfig::default()
    }
}

#[test]
fn vector_copy_builtin_profile() {
    let o = demo::run(builtin(), &config(DemoKernel::VectorCopy, 1)).unwrap();
    assert_eq!(o.agent, "gfx90a");
    assert_eq!(o.device, "emulated");
    assert_eq!(o.elements_verified, 64 * 1024);
    assert_eq!(
        o.code_object.file_name().unwrap(),
        "kernels-gfx90a-v5.hsaco"
    );
}

#[test]
fn vector_add_and_local_reverse_builtin_profile() {
    for kernel in [DemoKernel::VectorAdd, DemoKernel::LocalReverse] {
        let o = demo::run(builtin(), &config(kernel, 1)).unwrap();
        assert_eq!(o.elements_verified, 64 * 1024, "{kernel:?}");
    }
}

#[test]
fn barrier_and_chains_builtin_profile() {
    for (kernel, chain) in [(DemoKernel::VectorCopy, 4), (DemoKernel::LocalReverse, 3)] {
        let o = demo::run(builtin(), &config(kernel, chain)).unwrap();
        assert_eq!(o.dispatches, chain);
        assert_eq!(o.elements_verified, 64 * 1024);
    }
}

#[test]
fn all_kernels_on_the_captured_mi210_topology() {
    for kernel in [
        DemoKernel::VectorCopy,
        DemoKernel::VectorAdd,
        DemoKernel::LocalReverse,
    ] {
        let Some(platform) = mi210() else { return };
        let o = demo::run(platform, &config(kernel, 2)).unwrap();
        assert_eq!(o.agent, "gfx90a");
        assert_eq!(o.elements_verified, 64 * 1024);
    }
}

#[test]
fn a_code_object_for_another_isa_is_refused_naming_both() {
    let mut c = config(DemoKernel::VectorCopy, 1);
    c.code_object = Some(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/codeobjects/kernels-gfx1100-v5.hsaco"),
    );
    let e = demo::run(builtin(), &c).unwrap_err();
    assert_eq!(e.status(), Status::IncompatibleArguments);
    assert!(
        e.detail().contains("gfx1100") && e.detail().contains("gfx90a"),
        "{}",
        e.detail()
    );
}

#[test]
fn no_code_object_for_the_agent_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("hsa-rt-no-co-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/codeobjects/kernels-gfx1030-v5.hsaco"),
        dir.join("kernels-gfx1030-v5.hsaco"),
    )
    .unwrap();
    let target = hsa_core::isa::TargetId::of_agent(hsa_core::isa::Processor::GFX90A, true, false);
    let e = demo::find_code_object(&dir, &target).unwrap_err();
    assert_eq!(e.status(), Status::InvalidIsa);
    assert!(
        e.detail().contains("gfx1030") && e.detail().contains("gfx90a"),
        "{}",
        e.detail()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn expect_err(c: &DemoConfig, status: Status, fragments: &[&str]) {
    let e = demo::run(builtin(), c).unwrap_err();
    assert_eq!(e.status(), status, "{e}");
    for f in fragments {
        assert!(e.detail().contains(f), "{f:?} not in {:?}", e.detail());
    }
}

#[test]
fn local_reverse_needs_full_workgroups() {
    let c = DemoConfig {
        kernel: DemoKernel::LocalReverse,
        elements: 1000,
        workgroup_size: 64,
        ..DemoConfig::default()
    };
    expect_err(
        &c,
        Status::InvalidArgument,
        &["--elements 1000", "--workgroup-size 64", "multiple"],
    );
    // vector_copy has no such constraint: 1000 = 15 full groups of 64 and one of 40.
    let c = DemoConfig {
        kernel: DemoKernel::VectorCopy,
        ..c
    };
    assert_eq!(demo::run(builtin(), &c).unwrap().elements_verified, 1000);
}

#[test]
fn options_are_validated_naming_the_option() {
    let base = DemoConfig::default();
    expect_err(
        &DemoConfig {
            elements: 10,
            ..base.clone()
        },
        Status::InvalidArgument,
        &["--elements 10 is smaller than --workgroup-size 256"],
    );
    expect_err(
        &DemoConfig {
            elements: 0,
            ..base.clone()
        },
        Status::InvalidArgument,
        &["--elements 0"],
    );
    expect_err(
        &DemoConfig {
            workgroup_size: 0,
            ..base.clone()
        },
        Status::InvalidArgument,
        &["--workgroup-size 0"],
    );
    expect_err(
        &DemoConfig {
            chain: 0,
            ..base.clone()
        },
        Status::InvalidArgument,
        &["--chain 0"],
    );
}

#[test]
fn chain_is_limited_by_the_event_limit() {
    assert_eq!(demo::MAX_CHAIN, 4000);
    let c = DemoConfig {
        chain: 5000,
        ..DemoConfig::default()
    };
    expect_err(
        &c,
        Status::InvalidArgument,
        &["--chain 5000", "4000", "4096"],
    );
}

#[test]
fn code_object_errors_name_the_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects");
    let mut c = config(DemoKernel::VectorCopy, 1);
    c.code_object = Some(dir.join("README.md"));
    expect_err(
        &c,
        Status::InvalidCodeObject,
        &["README.md: not an ELF file"],
    );
    c.code_object = Some("/dev/zero".into());
    expect_err(
        &c,
        Status::InvalidCodeObject,
        &["/dev/zero: not an ELF file"],
    );
    // A parse error past the magic names the file too.
    let bad = std::env::temp_dir().join(format!("hsa-rt-trunc-{}.hsaco", std::process::id()));
    let bytes = std::fs::read(dir.join("kernels-gfx90a-v5.hsaco")).unwrap();
    std::fs::write(&bad, &bytes[..100]).unwrap();
    c.code_object = Some(bad.clone());
    let e = demo::run(builtin(), &c).unwrap_err();
    std::fs::remove_file(&bad).unwrap();
    assert_eq!(e.status(), Status::InvalidCodeObject, "{e}");
    assert!(e.detail().contains("hsa-rt-trunc-"), "{e}");
}

#[test]
fn buffers_larger_than_the_pool_are_refused_before_allocating() {
    let c = DemoConfig {
        elements: 4_000_000_000,
        ..DemoConfig::default()
    };
    let started = std::time::Instant::now();
    expect_err(
        &c,
        Status::OutOfResources,
        &[
            "--elements 4000000000 needs 48000004096 bytes (3 buffers of 16000000000 + 4096 of \
             kernargs); fine-grained pool: 17179869184 bytes, 17179869184 per allocation",
        ],
    );
    // Nothing was allocated or filled (filling 16 GB takes many seconds).
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn workgroup_size_above_the_kernel_limit_is_refused() {
    for kernel in [DemoKernel::LocalReverse, DemoKernel::VectorCopy] {
        let c = DemoConfig {
            kernel,
            elements: 4096,
            workgroup_size: 512,
            ..DemoConfig::default()
        };
        expect_err(
            &c,
            Status::InvalidArgument,
            &[
                "--workgroup-size 512",
                ".max_flat_workgroup_size 256",
                "work-group max size is 1024",
            ],
        );
    }
}

/// The OpenCL-built kernels have hidden arguments (v4: global offsets and `hidden_none`; v5:
/// block counts, group sizes, remainders, global offsets, grid dims); the demo fills them
/// from the metadata and the interpreter runs the real code, which reads them.
#[test]
fn ocl_kernels_with_hidden_arguments_run_and_verify() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects");
    for file in ["kernels_ocl-gfx90a-v5.hsaco", "kernels_ocl-gfx90a-v4.hsaco"] {
        for kernel in [
            DemoKernel::VectorCopy,
            DemoKernel::VectorAdd,
            DemoKernel::LocalReverse,
        ] {
            // 4 work-groups of 64; vector_copy/add also with a partial last group.
            let elements = if kernel == DemoKernel::LocalReverse {
                256
            } else {
                1000
            };
            let c = DemoConfig {
                kernel,
                elements,
                workgroup_size: 64,
                chain: 1,
                code_object: Some(dir.join(file)),
            };
            let o = demo::run(builtin(), &c).unwrap_or_else(|e| panic!("{file} {kernel:?}: {e}"));
            assert_eq!(
                o.elements_verified,
                u64::from(elements),
                "{file} {kernel:?}"
            );
            assert_eq!(o.executor, "gfx9 interpreter", "{file} {kernel:?}");
        }
    }
}

#[test]
fn hidden_argument_values() {
    assert_eq!(
        demo::hidden_argument("hidden_block_count_x", 1000, 64),
        Some(15)
    );
    assert_eq!(
        demo::hidden_argument("hidden_remainder_x", 1000, 64),
        Some(40)
    );
    assert_eq!(
        demo::hidden_argument("hidden_group_size_x", 1000, 64),
        Some(64)
    );
    assert_eq!(
        demo::hidden_argument("hidden_group_size_y", 1000, 64),
        Some(1)
    );
    assert_eq!(demo::hidden_argument("hidden_grid_dims", 1000, 64), Some(1));
    assert_eq!(
        demo::hidden_argument("hidden_global_offset_x", 1000, 64),
        Some(0)
    );
    assert_eq!(
        demo::hidden_argument("hidden_printf_buffer", 1000, 64),
        None
    );
}

/// `hsainfo > /dev/full` reports the write error and exits 1; `hsainfo | head -0` (the
/// reader gone before the first write) exits 0 quietly; neither panics.
#[test]
fn hsainfo_output_errors_do_not_panic() {
    use std::process::{Command, Stdio};
    let co = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/kernels_ocl-gfx90a-v5.hsaco");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hsainfo"))
        .arg("--code-object")
        .arg(&co)
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("hsainfo: cannot write output: No space left on device"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_hsainfo"))
        .arg("--code-object")
        .arg(&co)
        .stdout(Stdio::from(writer))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "");
}
