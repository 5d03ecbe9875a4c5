//! The library installs as a C library (issue 35): `cargo cinstall` (cargo-c) into a fresh
//! prefix gives `libhsa-runtime64.so.1` with that soname and the `libhsa-runtime64.so` link,
//! `hsa-runtime64.pc` and `hsa_rt_ext.h`; a C program written here, which includes both
//! `hsa/hsa.h` and `hsa_rt_ext.h`, then builds with nothing but
//! `pkg-config --cflags --libs hsa-runtime64` and runs on the emulated device.
//!
//! Prints `skipped: ...` and passes when `cargo cinstall` (`cargo install cargo-c`), a C
//! compiler, `pkg-config`, `readelf` or Debian's `hsa/hsa.h` (libhsa-runtime-dev) is missing;
//! `.ci/run` installs them.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// The C program: the runtime's agents, one of them a GPU, and an hsa_rt_ext.h function that
/// answers on the emulated device.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <hsa/hsa.h>
#include <hsa_rt_ext.h>

static hsa_status_t count(hsa_agent_t agent, void* data) {
  hsa_device_type_t type;
  if (hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
    return HSA_STATUS_ERROR;
  if (type == HSA_DEVICE_TYPE_GPU) ++*(int*)data;
  return HSA_STATUS_SUCCESS;
}

int main(void) {
  if (hsa_init() != HSA_STATUS_SUCCESS) return 1;
  int gpus = 0;
  if (hsa_iterate_agents(count, &gpus) != HSA_STATUS_SUCCESS) return 2;
  /* A NULL host kernel: INVALID_ARGUMENT, from the function hsa_rt_ext.h declares. */
  if (hsa_rt_emulated_register_kernel(0x1000, NULL, NULL) != HSA_STATUS_ERROR_INVALID_ARGUMENT)
    return 3;
  if (hsa_shut_down() != HSA_STATUS_SUCCESS) return 4;
  printf("fresh program: %d GPU agent(s)\n", gpus);
  return 0;
}
"#;

/// Whether `program --version` (or `args`) runs.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The cargo that runs the tests.
fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The test binary's target directory (`<target>/<profile>/deps/<test>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

fn pkg_config(pc_dir: &Path, args: &[&str]) -> String {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("hsa-runtime64")
        .env("PKG_CONFIG_PATH", pc_dir)
        .output()
        .expect("run pkg-config");
    assert!(
        out.status.success(),
        "pkg-config {args:?} hsa-runtime64: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn cinstall_gives_a_library_c_programs_link_with_pkg_config() {
    let missing: Vec<&str> = [
        ("cargo cinstall (cargo install cargo-c)", {
            Command::new(cargo())
                .args(["cinstall", "--version"])
                .output()
                .is_ok_and(|o| o.status.success())
        }),
        ("cc", runs("cc", &["--version"])),
        ("pkg-config", runs("pkg-config", &["--version"])),
        ("readelf", runs("readelf", &["--version"])),
        (
            "hsa/hsa.h (libhsa-runtime-dev)",
            Path::new("/usr/include/hsa/hsa.h").exists(),
        ),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(what, _)| what)
    .collect();
    if !missing.is_empty() {
        println!("skipped: {} not installed", missing.join(", "));
        return;
    }
    let prefix = common::temp_dir("cinstall");
    // The release build of cargo cinstall, in a target directory of its own (the tests' build
    // holds the lock of theirs).
    let status = Command::new(cargo())
        .args(["cinstall", "-p", "hsa-capi", "--prefix"])
        .arg(&prefix)
        .args(["--libdir", "lib", "--target-dir"])
        .arg(target_dir().join("capi-cinstall"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo cinstall");
    assert!(status.success(), "cargo cinstall: {status}");

    // The library under its soname, the development link, and what the soname says.
    let lib = prefix.join("lib");
    let so1 = lib.join("libhsa-runtime64.so.1");
    let so = lib.join("libhsa-runtime64.so");
    for link in [&so1, &so] {
        assert!(
            std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()),
            "{} is not a symlink",
            link.display()
        );
        assert_eq!(
            std::fs::canonicalize(link).unwrap(),
            std::fs::canonicalize(lib.join("libhsa-runtime64.so.1.0.0")).unwrap()
        );
    }
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(&so1)
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("Library soname: [libhsa-runtime64.so.1]"),
        "{dynamic}"
    );
    let header = prefix.join("include/hsa_rt_ext.h");
    assert!(header.exists(), "{} missing", header.display());

    // A fresh program, built with what pkg-config says and nothing else.
    let pc_dir = lib.join("pkgconfig");
    assert!(pc_dir.join("hsa-runtime64.pc").exists());
    let cflags = pkg_config(&pc_dir, &["--cflags"]);
    let libs = pkg_config(&pc_dir, &["--libs"]);
    let libdir = pkg_config(&pc_dir, &["--variable=libdir"]);
    assert_eq!(Path::new(&libdir), lib.as_path());
    let src = prefix.join("fresh.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = prefix.join("fresh");
    let cc = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(cflags.split_whitespace())
        .args(libs.split_whitespace())
        .arg(format!("-Wl,-rpath,{libdir}"))
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc {cflags} {libs}: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{:?}: {stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(stdout, "fresh program: 1 GPU agent(s)\n");
    // The program loaded the installed library.
    let ldd = Command::new("ldd").arg(&exe).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&format!("libhsa-runtime64.so.1 => {}", so1.display())),
        "{ldd}"
    );
    let _ = std::fs::remove_dir_all(&prefix);
}
