//! Building a library crate of the workspace from a test: what a test needs when C programs
//! or ROCm are to load the built library (hsa-capi's `libhsa-runtime64.so`, kfd-emu's
//! preload library), which cargo does not build for a test by itself.

use std::path::{Path, PathBuf};

/// Runs `cargo build -p PACKAGE --lib ARGS [--target TARGET]` (the cargo running the test,
/// `$CARGO`) in the workspace, into the target directory `<target>/DIR_NAME` beside the
/// test's own (so it does not wait for the test's build lock), in the test's profile
/// (`--release` when the test binary is a release build); returns the directory the built
/// libraries are in (`<target>/DIR_NAME[/TARGET]/<profile>`).
///
/// # Panics
/// When the test binary is not in `<target>/<profile>/deps`, cargo cannot be run, the build
/// fails, or the output directory is missing after it (a test cannot go on without the
/// library).
pub fn build_lib(package: &str, dir_name: &str, args: &[&str], target: Option<&str>) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary is in <target>/<profile>/deps");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    let target_dir = profile_dir.parent().expect("<target>").join(dir_name);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "-p", package, "--lib", "--target-dir"])
        .arg(&target_dir)
        .args(args)
        .current_dir(workspace_dir());
    if let Some(target) = target {
        cmd.args(["--target", target]);
    }
    if profile == "release" {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build");
    assert!(
        status.success(),
        "cargo build -p {package} --lib {args:?} failed: {status}"
    );
    let dir = match target {
        Some(target) => target_dir.join(target).join(profile),
        None => target_dir.join(profile),
    };
    assert!(dir.exists(), "{} missing after cargo build", dir.display());
    dir
}

/// The workspace's root directory.
pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
