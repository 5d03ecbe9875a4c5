//! Debian's real `/usr/bin/rocminfo` (package rocminfo 5.2) on our library.
//!
//! rocminfo checks two things before `hsa_init`: that `lsmod` lists `amdgpu`, and that
//! `/dev/kfd` opens read-write. Without the driver the test provides both: an `lsmod` script
//! first on `PATH`, and rocminfo run in a private mount namespace (`unshare -m`, root) whose
//! `/dev` is a tmpfs holding `null` and a `kfd` stand-in (both the null device). Our runtime is
//! forced onto the emulated device (`HSA_RT_DEVICE=emulated`), since a `/dev/kfd` is now
//! present. Where namespaces are not permitted the test says so and skips.
#![cfg(feature = "linux")] // runs the Linux build's shared library

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROCMINFO: &str = "/usr/bin/rocminfo";

/// Runs rocminfo on our library with `extra_env`, or `None` (after saying why) when it cannot.
fn run_rocminfo(name: &str, extra_env: &[(&str, &Path)]) -> Option<Output> {
    if !Path::new(ROCMINFO).exists() {
        println!("skipped: {ROCMINFO} missing (apt install rocminfo)");
        return None;
    }
    let libdir = common::library_dir(name);
    let bindir = libdir.join("bin");
    std::fs::create_dir_all(&bindir).unwrap();
    let lsmod = bindir.join("lsmod");
    std::fs::write(
        &lsmod,
        "#!/bin/sh\necho 'Module                  Size  Used by'\necho 'amdgpu              9000000  0'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&lsmod, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bindir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let probe = Command::new("unshare").args(["-m", "true"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        println!(
            "skipped: cannot make a private mount namespace (unshare -m needs root or \
             CAP_SYS_ADMIN) to give rocminfo a /dev/kfd"
        );
        return None;
    }
    let script = "mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && \
                  mknod -m 666 /dev/kfd c 1 3 && exec rocminfo";
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", script])
        .env("PATH", path)
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    Some(cmd.output().expect("run rocminfo"))
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

fn check_ran(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "rocminfo failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ROCk module is loaded"), "{stdout}");
    assert!(
        stdout.contains("Runtime Version:         1.1\n"),
        "{stdout}"
    );
    assert!(stdout.contains("*** Done ***"), "{stdout}");
    stdout
}

/// The built-in emulated device: a CPU agent and an MI210 GPU agent with its pools and ISA.
#[test]
fn rocminfo_lists_the_emulated_device() {
    let Some(out) = run_rocminfo("rocminfo-emulated", &[]) else {
        return;
    };
    let s = check_ran(&out);
    assert_eq!(count(&s, "Device Type:             CPU"), 1, "{s}");
    assert_eq!(count(&s, "Device Type:             GPU"), 1, "{s}");
    assert!(s.contains("  Name:                    gfx90a"), "{s}");
    assert!(s.contains("Chip ID:                 29711(0x740f)"), "{s}");
    assert!(s.contains("Compute Unit:            104"), "{s}");
    assert!(
        s.contains("      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        "{s}"
    );
    assert!(
        s.contains("      Segment:                 GLOBAL; FLAGS: KERNARG, FINE GRAINED"),
        "{s}"
    );
    // 3 CPU pools + 3 GPU pools (coarse, extended fine, group): the built-in MI210 is in no
    // xGMI hive, so, as ROCR, no fine-grained VRAM pool.
    assert_eq!(count(&s, "Segment:"), 6, "{s}");
    assert_eq!(
        count(&s, "Segment:                 GLOBAL; FLAGS: FINE GRAINED"),
        1,
        "{s}"
    );
    assert_eq!(count(&s, "      Segment:                 GROUP"), 1, "{s}");
}

fn mi210_topology() -> Option<PathBuf> {
    hsa_test_support::shared::topology_dump("mi210-8gpu-xgmi-pcie-topology")
}

/// The captured 8×MI210 machine: 2 CPU and 8 GPU agents, 38 pools, 8 gfx90a ISAs.
#[test]
fn rocminfo_lists_the_8_mi210_capture() {
    let Some(topology) = mi210_topology() else {
        return;
    };
    let Some(out) = run_rocminfo("rocminfo-mi210", &[("HSA_RT_SYSFS", &topology)]) else {
        return;
    };
    let s = check_ran(&out);
    assert_eq!(count(&s, "Device Type:             CPU"), 2, "{s}");
    assert_eq!(count(&s, "Device Type:             GPU"), 8, "{s}");
    assert_eq!(count(&s, "  Name:                    gfx90a"), 8, "{s}");
    assert_eq!(
        count(
            &s,
            "Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        ),
        8,
        "{s}"
    );
    // 2 CPUs × 3 pools + 8 GPUs × 4 pools.
    assert_eq!(count(&s, "Segment:"), 38, "{s}");
    let agents = s.lines().filter(|l| l.starts_with("Agent ")).count();
    assert_eq!(agents, 10, "{s}");
    assert!(s.contains("Agent 10"), "{s}");
}
