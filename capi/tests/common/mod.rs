//! Shared by the capi integration tests: where the built library is, and a directory that
//! holds it under the name applications load (`libhsa-runtime64.so.1`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The cdylib, built on first use: `cargo test` links its tests against the rlib and does not
/// produce the cdylib, so this runs `cargo build -p hsa-capi --lib` (the `CARGO` that runs the
/// tests, the same profile) into `<target>/capi-cdylib` — its own target directory, so it
/// never waits for the lock of the build that runs the tests. The test binary is
/// `<target>/<profile>/deps/<name>-<hash>`; the library ends up in
/// `<target>/capi-cdylib/<profile>/libhsa_runtime64.so`.
pub fn built_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_library).clone()
}

fn build_library() -> PathBuf {
    cargo_build_capi("capi-cdylib", &[], None).join("libhsa_runtime64.so")
}

/// The bare-metal build's static library (`--no-default-features --features baremetal`),
/// built on first use as [`built_library`] is, into `<target>/capi-baremetal`.
pub fn built_baremetal_staticlib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            cargo_build_capi(
                "capi-baremetal",
                &["--no-default-features", "--features", "baremetal"],
                None,
            )
            .join("libhsa_runtime64.a")
        })
        .clone()
}

/// The target of builds without an OS.
pub const NO_OS_TARGET: &str = "x86_64-unknown-none";

/// The bare-metal build's static library for [`NO_OS_TARGET`] (no_std + alloc), built on
/// first use into `<target>/capi-baremetal-none`; `None` when the Rust target is not
/// installed (`rustup target add x86_64-unknown-none`).
pub fn built_no_os_staticlib() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
            let sysroot = std::process::Command::new(rustc)
                .args(["--print", "sysroot"])
                .output()
                .ok()?;
            let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
            if !Path::new(&sysroot)
                .join("lib/rustlib")
                .join(NO_OS_TARGET)
                .exists()
            {
                return None;
            }
            Some(
                cargo_build_capi(
                    "capi-baremetal-none",
                    &["--no-default-features", "--features", "baremetal"],
                    Some(NO_OS_TARGET),
                )
                .join("libhsa_runtime64.a"),
            )
        })
        .clone()
}

/// Runs `cargo build -p hsa-capi --lib ARGS [--target TARGET]` into `<target>/DIR_NAME` (the
/// profile of the tests) and returns the directory the libraries are in.
fn cargo_build_capi(dir_name: &str, args: &[&str], target: Option<&str>) -> PathBuf {
    hsa_test_support::cargo::build_lib("hsa-capi", dir_name, args, target)
}

/// A fresh temp directory named after `name` and this process.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hsa-capi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// A directory holding the built library as `libhsa-runtime64.so.1` (a symlink), for
/// `LD_LIBRARY_PATH`.
pub fn library_dir(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    std::os::unix::fs::symlink(built_library(), dir.join("libhsa-runtime64.so.1"))
        .expect("symlink library");
    dir
}

/// The crate directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
