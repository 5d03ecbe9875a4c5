//! Shared by the kfd-emu integration tests: the preloaded library, built fresh.
//!
//! `cargo test` builds the `kfd-emu` binary the tests run (`CARGO_BIN_EXE_kfd-emu`) but not
//! the package's cdylib, `libkfd_emu_preload.so`: without this, kfd-emu found whatever
//! library an earlier `cargo build` left beside it — none on a clean checkout, a stale one
//! after a change to the emulated device. [`preload_library`] builds it with `cargo build -p
//! kfd-emu --lib` (the `CARGO` running the tests, the same profile) into
//! `<target>/capi-cdylib`: a target directory of its own, so it never waits for the lock of
//! the build that runs the tests, shared with the capi tests' build of
//! `libhsa-runtime64.so` over the same dependencies. The tests hand it to kfd-emu through
//! `KFD_EMU_PRELOAD`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The freshly built `libkfd_emu_preload.so` (built once per test process).
pub fn preload_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary is in <target>/<profile>/deps");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    let target_dir = profile_dir.parent().expect("<target>").join("capi-cdylib");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "-p", "kfd-emu", "--lib", "--target-dir"])
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile == "release" {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build for the preload library");
    assert!(
        status.success(),
        "cargo build -p kfd-emu --lib failed: {status}"
    );
    let lib = target_dir.join(profile).join("libkfd_emu_preload.so");
    assert!(lib.exists(), "{} missing after cargo build", lib.display());
    lib
}
