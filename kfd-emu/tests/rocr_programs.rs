//! C programs linked against Debian's unmodified ROCR (libhsa-runtime64 of ROCm 5.2, with its
//! libhsakmt) run under `kfd-emu`: real ROCR as the oracle of the emulated amdkfd and CP.
//!
//! Each program is built with gcc against Debian's `hsa/hsa.h` and linked to
//! `libhsa-runtime64.so.1` by its soname. Skips (`skipped: ...`) where gcc, the headers or
//! Debian's ROCR are absent, or kfd-emu cannot make its mount namespace (neither root nor
//! user namespaces).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LIBHSA: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";
const HSA_H: &str = "/usr/include/hsa/hsa.h";

/// Builds `sources` (paths relative to this crate) into an executable linked to Debian's
/// ROCR; `None` (said) when gcc, the headers or the library are missing.
fn build(name: &str, sources: &[&str], includes: &[&str]) -> Option<PathBuf> {
    for need in [LIBHSA, HSA_H] {
        if !Path::new(need).exists() {
            println!("skipped: {need} missing (apt install libhsa-runtime-dev)");
            return None;
        }
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("kfd-emu-rocr-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    let mut cmd = Command::new("gcc");
    cmd.args(["-std=gnu11", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe);
    for i in includes {
        cmd.arg("-I").arg(crate_dir.join(i));
    }
    for s in sources {
        cmd.arg(crate_dir.join(s));
    }
    cmd.arg("-l:libhsa-runtime64.so.1");
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: gcc: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "gcc {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// Runs `kfd-emu -- exe args` on the built-in profile; `None` (said) when kfd-emu cannot make
/// its namespace.
fn kfd_emu(exe: &Path, args: &[&str]) -> Option<Output> {
    kfd_emu_with(&[], exe, args)
}

/// Runs `kfd-emu OPTIONS -- exe args`; `None` (said) when kfd-emu cannot make its namespace.
fn kfd_emu_with(options: &[String], exe: &Path, args: &[&str]) -> Option<Output> {
    let out = Command::new(env!("CARGO_BIN_EXE_kfd-emu"))
        .args(options)
        .arg("--")
        .arg(exe)
        .args(args)
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_RT_EMULATION")
        .env("KFD_EMU_PRELOAD", common::preload_library())
        .output()
        .expect("run kfd-emu");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(1) && stderr.contains("cannot make one") {
        println!("skipped: {}", stderr.trim());
        return None;
    }
    Some(out)
}

/// An AMD PM4-IB vendor packet whose PM4 the emulated CP does not run reaches ROCR's queue
/// callback as HSA_STATUS_ERROR_INVALID_PACKET_FORMAT (0x1009): the CP's vendor-packet code
/// (0x100) in the queue's inactive signal, as ROCR's DynamicScratchHandler decodes it. Before,
/// the CP stored the bare hsa_status_t, whose bit 0 ROCR read as a scratch request: it
/// asserted ("Invalid packet in dynamic scratch handler") and aborted.
#[test]
fn an_unknown_pm4_packet_reaches_rocr_as_invalid_packet_format() {
    let Some(exe) = build("bad_pm4", &["tests/c/bad_pm4.c"], &[]) else {
        return;
    };
    let Some(out) = kfd_emu(&exe, &[]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert_eq!(stdout, "bad_pm4: queue error 0x1009\n", "{stderr}");
}

/// The C vector_copy (`capi/c/vector_copy.c`, hsa.h only: the program of the capi tests)
/// linked to Debian's ROCR runs under kfd-emu and verifies every element: the real
/// `vector_copy` machine code, loaded by ROCR's loader, run by the emulated CP's gfx9
/// interpreter, on the built-in MI210, a gfx900 and the captured 8×MI210 machine. On the way
/// ROCR invalidates the code caches with a PM4-IB vendor packet after loading (it asserted on
/// the stopped queue before the CP ran PM4).
#[test]
fn c_vector_copy_on_debian_rocr_verifies() {
    let Some(exe) = build(
        "vector_copy",
        &["../capi/c/vector_copy.c"],
        &["../capi/include"],
    ) else {
        return;
    };
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let objects = crate_dir.join("../testdata/codeobjects");
    let mut cases = vec![
        (vec![], "kernels-gfx90a-v5.hsaco", "gfx90a"),
        (
            vec!["--profile".to_owned(), "gfx900".to_owned()],
            "kernels-gfx900-v4.hsaco",
            "gfx900",
        ),
    ];
    let shared = hsa_linux::env::path(hsa_linux::env::SHARED_ENV)
        .unwrap_or_else(|| crate_dir.join("../../shared"))
        .join("testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology");
    if shared.is_dir() {
        cases.push((
            vec!["--sysfs".to_owned(), shared.to_string_lossy().into_owned()],
            "kernels-gfx90a-v5.hsaco",
            "gfx90a",
        ));
    } else {
        println!("skipped (one case): {} missing", shared.display());
    }
    for (options, object, isa) in cases {
        let code_object = objects.join(object);
        let Some(out) = kfd_emu_with(
            &options,
            &exe,
            &[code_object.to_str().unwrap(), "noregister"],
        ) else {
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{options:?}: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.starts_with(&format!("vector_copy: GPU agent {isa}\n")),
            "{options:?}: {stdout}"
        );
        assert!(
            stdout.ends_with("vector_copy: verified 65536 elements\n"),
            "{options:?}: {stdout}\n{stderr}"
        );
    }
}
