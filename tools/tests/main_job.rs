//! The main job end to end on the emulated device: vector_copy, vector_add, local_reverse and
//! a barrier-AND chain through the whole runtime (pools, queue, code object, kernarg segment,
//! dispatch packet, doorbell, completion signal), on the built-in profile and on a captured
//! MI210 topology.

use std::path::Path;

use hsa_core::Status;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::topology::Topology;
use hsa_tools::demo::{self, DemoConfig, DemoKernel};

fn builtin() -> SelectedDevice {
    SelectedDevice::emulated(EmulatedKfd::new(builtin_topology()).unwrap()).unwrap()
}

fn mi210() -> Option<SelectedDevice> {
    let root = hsa_test_support::shared::topology_dump("mi210-8gpu-xgmi-pcie-topology")?;
    let t = Topology::read(&root).unwrap();
    Some(SelectedDevice::emulated(EmulatedKfd::new(t).unwrap()).unwrap())
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
        e.detail().to_string().contains("gfx1100") && e.detail().to_string().contains("gfx90a"),
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
        e.detail().to_string().contains("gfx1030") && e.detail().to_string().contains("gfx90a"),
        "{}",
        e.detail()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn expect_err(c: &DemoConfig, status: Status, fragments: &[&str]) {
    let e = demo::run(builtin(), c).unwrap_err();
    assert_eq!(e.status(), status, "{e}");
    for f in fragments {
        assert!(
            e.detail().to_string().contains(f),
            "{f:?} not in {:?}",
            e.detail()
        );
    }
}

/// local_reverse reads `tile[lsz - 1 - lid]` with `lsz` the packet's work-group size: a
/// partial last group would read LDS it never wrote, so a grid that is not a whole number
/// of work-groups (also one smaller than a work-group) is refused, naming the kernel, the
/// options and why.
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
        &[
            "local_reverse needs full work-groups: --elements 1000 is not a multiple of \
             --workgroup-size 64",
            "last work-group of 40 work-items",
            "tile[40..64]",
        ],
    );
    let c = DemoConfig {
        elements: 1000,
        workgroup_size: 256,
        ..c
    };
    expect_err(
        &c,
        Status::InvalidArgument,
        &[
            "local_reverse needs full work-groups: --elements 1000",
            "last work-group of 232 work-items",
            "tile[232..256]",
        ],
    );
    // A grid smaller than one work-group is one work-group of all its work-items (hsa.h: a
    // grid is not smaller than its work-group): reversed whole.
    let c = DemoConfig {
        elements: 10,
        workgroup_size: 256,
        ..c
    };
    let o = demo::run(builtin(), &c).unwrap();
    assert_eq!((o.elements_verified, o.workgroup_size), (10, 10));
}

/// HSA allows a grid that is not a whole number of work-groups (the last one is partial);
/// one smaller than `--workgroup-size` runs as one work-group of all its work-items (hsa.h
/// forbids a grid smaller than its work-group). vector_copy and vector_add run so through the
/// GFX9 interpreter (the default), every element verifies, and the buffers' elements past
/// the grid (each buffer is padded to whole work-groups) keep the values they had: no
/// work-item beyond the grid ran.
#[test]
fn partial_workgroups_verify_and_leave_past_the_grid_untouched() {
    for kernel in [DemoKernel::VectorCopy, DemoKernel::VectorAdd] {
        for (elements, workgroup_size, chain, dispatched, past) in [
            (10, 256, 1, 10, 0),
            (1000, 64, 1, 64, 24),
            (1000, 64, 3, 64, 24),
            (200, 256, 2, 200, 0),
            (70000, 256, 1, 256, 144),
            (1, 1, 1, 1, 0),
        ] {
            let c = DemoConfig {
                kernel,
                elements,
                workgroup_size,
                chain,
                code_object: None,
                agent: 0,
            };
            let o = demo::run(builtin(), &c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
            assert_eq!(o.executor, "gfx9 interpreter", "{c:?}");
            assert_eq!(o.elements_verified, u64::from(elements), "{c:?}");
            assert_eq!(o.workgroup_size, dispatched, "{c:?}");
            // Three buffers, each padded to whole work-groups.
            assert_eq!(o.elements_past_grid_verified, 3 * past, "{c:?}");
            let s = o.execution.unwrap();
            assert_eq!(
                s.workgroups,
                u64::from(chain * elements.div_ceil(u32::from(dispatched))),
                "{c:?}"
            );
        }
    }
}

#[test]
fn options_are_validated_naming_the_option() {
    let base = DemoConfig::default();
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
        Status::InvalidFile,
        &["/dev/zero: not a regular file but a character device"],
    );
    // A parse error past the magic names the file too.
    let bad = std::env::temp_dir().join(format!("hsa-rt-trunc-{}.hsaco", std::process::id()));
    let bytes = std::fs::read(dir.join("kernels-gfx90a-v5.hsaco")).unwrap();
    std::fs::write(&bad, &bytes[..100]).unwrap();
    c.code_object = Some(bad.clone());
    let e = demo::run(builtin(), &c).unwrap_err();
    std::fs::remove_file(&bad).unwrap();
    assert_eq!(e.status(), Status::InvalidCodeObject, "{e}");
    assert!(e.detail().to_string().contains("hsa-rt-trunc-"), "{e}");
}

/// `hsainfo --code-object` (the binary) and the demo's `--code-object` on a FIFO and on a
/// sparse 3 GiB file that starts with the ELF magic: both refused at once, naming the file
/// and the reason, instead of blocking until a writer comes or reading 256 MiB first.
#[test]
fn code_object_fifo_and_huge_files_are_refused_at_once() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("hsa-rt-co-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.hsaco");
    let status = Command::new("mkfifo").arg(&fifo).status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("skipped: mkfifo is not available ({status:?})");
        return;
    }
    let big = dir.join("big.hsaco");
    let f = std::fs::File::create(&big).unwrap();
    std::io::Write::write_all(&mut &f, b"\x7fELF").unwrap();
    f.set_len(3 << 30).unwrap();
    drop(f);
    let fifo_reason = "fifo.hsaco: not a regular file but a FIFO";
    let big_reason = "big.hsaco: 3221225472 bytes, larger than 268435456 bytes (256 MiB)";
    let mut failures = Vec::new();
    for (file, reason) in [(&fifo, fifo_reason), (&big, big_reason)] {
        // hsainfo, with a deadline: a blocked child is killed and the test fails.
        let mut child = Command::new(env!("CARGO_BIN_EXE_hsainfo"))
            .arg("--code-object")
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            failures.push(format!(
                "hsainfo --code-object {} did not return",
                file.display()
            ));
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) || !stderr.contains(reason) {
            failures.push(format!("hsainfo: {:?} {stderr}", out.status));
        }
        // The demo, on a thread with a deadline; a blocked open is released by a writer.
        let mut c = config(DemoKernel::VectorCopy, 1);
        c.code_object = Some(file.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let run = std::thread::spawn(move || {
            let _ = tx.send(demo::run(builtin(), &c));
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Err(e))
                if e.status() == Status::InvalidFile && e.detail().to_string().contains(reason) => {
            }
            Ok(r) => failures.push(format!("demo: {r:?}")),
            Err(_) => {
                let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
                failures.push(format!(
                    "demo --code-object {} did not return",
                    file.display()
                ));
            }
        }
        run.join().unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A `--code-object` path of about 400 bytes that does not exist, or is not an ELF file: the
/// message keeps the whole path, the file's name and the reason (errors built with `alloc`
/// keep long messages whole; nothing is elided).
#[test]
fn a_long_code_object_path_keeps_the_reason() {
    let root = std::env::temp_dir().join(format!("hsa-rt-long-{}", std::process::id()));
    let mut dir = root.clone();
    for i in 0..4 {
        dir = dir.join(format!("{i}{}", "d".repeat(90)));
    }
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.hsaco");
    let not_elf = dir.join("text.hsaco");
    std::fs::write(&not_elf, "#!/bin/sh\n").unwrap();
    assert!(missing.as_os_str().len() > 380, "{}", missing.display());
    let mut c = config(DemoKernel::VectorCopy, 1);
    c.code_object = Some(missing.clone());
    let e = demo::run(builtin(), &c).unwrap_err();
    c.code_object = Some(not_elf.clone());
    let e2 = demo::run(builtin(), &c).unwrap_err();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(e.status(), Status::InvalidFile, "{e}");
    let d = e.detail().to_string();
    assert!(d.starts_with(&*missing.to_string_lossy()), "{d}");
    assert!(!d.contains('…'), "{d}");
    assert!(
        d.ends_with("/missing.hsaco: No such file or directory (os error 2)"),
        "{d}"
    );
    assert_eq!(e2.status(), Status::InvalidCodeObject, "{e2}");
    let d = e2.detail().to_string();
    assert!(d.starts_with(&*not_elf.to_string_lossy()), "{d}");
    assert!(!d.contains('…'), "{d}");
    assert!(
        d.ends_with(
            "/text.hsaco: not an ELF file (starts with [23, 21, 2f, 62], expected [7f, 45, \
             4c, 46])"
        ),
        "{d}"
    );
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
                agent: 0,
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

/// `agent: N` runs on the Nth GPU agent: on the MI210 dump (CPU nodes 0 and 1, GPU nodes 2 to
/// 9), GPU agent 3 is node 5, and the kernel runs and verifies there; agent 8 is past the
/// eighth GPU agent: `InvalidAgent` naming the index and the count.
#[test]
fn agent_option_picks_the_nth_gpu_agent() {
    let Some(device) = mi210() else { return };
    let c = DemoConfig {
        agent: 3,
        ..config(DemoKernel::VectorCopy, 1)
    };
    let o = demo::run(device, &c).unwrap();
    assert_eq!(o.agent_node, 5);
    assert_eq!(o.elements_verified, 64 * 1024);
    let o = demo::run(builtin(), &config(DemoKernel::VectorCopy, 1)).unwrap();
    assert_eq!(o.agent_node, 1, "the built-in profile's one GPU agent");

    let c = DemoConfig {
        agent: 8,
        ..config(DemoKernel::VectorCopy, 1)
    };
    let e = demo::run(mi210().unwrap(), &c).unwrap_err();
    assert_eq!(e.status(), Status::InvalidAgent);
    assert!(
        e.to_string()
            .contains("agent 8 asked for, but the device has 8 GPU agent(s): 0 to 7"),
        "{e}"
    );
}

/// `hsainfo --agent N` reports the system and GPU agent N only, under its number among all
/// agents; past the last GPU agent it exits 1 naming the count; `--version` prints the
/// crate's version.
#[test]
fn hsainfo_agent_and_version_options() {
    use std::process::Command;
    let out = Command::new(env!("CARGO_BIN_EXE_hsainfo"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("hsainfo {}\n", env!("CARGO_PKG_VERSION"))
    );

    let Some(root) = hsa_test_support::shared::topology_dump("mi210-8gpu-xgmi-pcie-topology")
    else {
        return;
    };
    let run = |n: &str| {
        Command::new(env!("CARGO_BIN_EXE_hsainfo"))
            .arg("--sysfs")
            .arg(&root)
            .args(["--agent", n])
            .output()
            .unwrap()
    };
    let out = run("1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("=====================\nHSA System Attributes\n"));
    let agents: Vec<&str> = text.lines().filter(|l| l.starts_with("Agent ")).collect();
    assert_eq!(agents, ["Agent 4"], "{text}");
    let node: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  Node:"))
        .map(|l| l.trim_start_matches("  Node:").trim())
        .collect();
    assert_eq!(node, ["3"]);

    let out = run("8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("agent 8 asked for, but the device has 8 GPU agent(s): 0 to 7"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
