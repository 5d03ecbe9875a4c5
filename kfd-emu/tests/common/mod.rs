//! Shared by the kfd-emu integration tests: the preloaded library and hsa-rt's C library,
//! built fresh; C programs built against Debian's ROCR; running kfd-emu.
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
use std::process::{Command, Output};

/// The freshly built `libkfd_emu_preload.so` (built once per test process).
pub fn preload_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build("kfd-emu", "libkfd_emu_preload.so"))
        .clone()
}

/// The freshly built `libhsa_emu_model.so`, the model library of `kfd-emu --model` (built
/// once per test process, beside [`preload_library`]).
pub fn model_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build("hsa-emu-model", "libhsa_emu_model.so"))
        .clone()
}

/// hsa-rt's `libhsa_runtime64.so` (the C ABI, `hsa-capi`), built as the capi tests build it
/// (same directory); once per test process.
pub fn capi_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build("hsa-capi", "libhsa_runtime64.so"))
        .clone()
}

/// A directory holding [`capi_library`] as `libhsa-runtime64.so.1` (a symlink), for
/// `LD_LIBRARY_PATH`: a program linked to Debian's ROCR by its soname then loads hsa-rt's
/// library instead (once per test process).
pub fn capi_library_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kfd-emu-capi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        std::os::unix::fs::symlink(capi_library(), dir.join("libhsa-runtime64.so.1"))
            .expect("symlink library");
        dir
    })
    .clone()
}

/// `cargo build -p PACKAGE --lib` into `<target>/capi-cdylib`; the library `file` it made.
fn build(package: &str, file: &str) -> PathBuf {
    let lib = hsa_test_support::cargo::build_lib(package, "capi-cdylib", &[], None).join(file);
    assert!(lib.exists(), "{} missing after cargo build", lib.display());
    lib
}

/// Debian's ROCR (ROCm 5.2).
pub const LIBHSA: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";
/// Debian's `hsa.h`.
pub const HSA_H: &str = "/usr/include/hsa/hsa.h";

/// Builds `sources` (paths relative to this crate) into an executable linked to Debian's
/// ROCR; `None` (said) when gcc, the headers or the library are missing.
pub fn build_c(name: &str, sources: &[&str], includes: &[&str]) -> Option<PathBuf> {
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
pub fn kfd_emu(exe: &Path, args: &[&str]) -> Option<Output> {
    kfd_emu_with(&[], &[], exe, args)
}

/// Runs `kfd-emu OPTIONS -- exe args` with `envs` added; `None` (said) when kfd-emu cannot
/// make its namespace.
pub fn kfd_emu_with(
    options: &[String],
    envs: &[(&str, String)],
    exe: &Path,
    args: &[&str],
) -> Option<Output> {
    let out = Command::new(env!("CARGO_BIN_EXE_kfd-emu"))
        .args(options)
        .arg("--")
        .arg(exe)
        .args(args)
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_RT_KFD_RECORD")
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .env("KFD_EMU_PRELOAD", preload_library())
        .output()
        .expect("run kfd-emu");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(1) && stderr.contains("cannot make one") {
        println!("skipped: {}", stderr.trim());
        return None;
    }
    Some(out)
}

/// A scratch directory under cargo's target tmpdir, `name`, emptied once per test process:
/// `/opt/hsa-rt/out` inside the ROCm 7 chroot ([`run_in_rocm7`]). It holds
/// `lib/libhsa-runtime64.so.1`, a link to hsa-rt's library as the chroot sees it
/// (`/opt/hsa-rt/capi`).
pub fn rocm7_out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::os::unix::fs::symlink(
        "/opt/hsa-rt/capi/libhsa_runtime64.so",
        dir.join("lib/libhsa-runtime64.so.1"),
    )
    .unwrap();
    dir
}

/// Runs `command` in the ROCm 7 chroot at `root` (`scripts/rocm7-chroot.sh run`), with this
/// repository at `/opt/hsa-rt/src`, kfd-emu's binary at `/opt/hsa-rt/kfd-emu`, the preloaded
/// library at `/opt/hsa-rt/preload`, the model library at `/opt/hsa-rt/model`, `out` at
/// `/opt/hsa-rt/out` and, with `capi`, hsa-rt's library at `/opt/hsa-rt/capi`. The host's
/// hsa-rt, kfd-emu and loader variables are not passed in.
pub fn run_in_rocm7(root: &Path, out: &Path, capi: bool, command: &[&str]) -> Output {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let parent = |p: &Path| p.parent().unwrap().to_string_lossy().into_owned();
    let mut binds = vec![
        format!("{}:/opt/hsa-rt/src", crate_dir.parent().unwrap().display()),
        format!(
            "{}:/opt/hsa-rt/kfd-emu",
            parent(Path::new(env!("CARGO_BIN_EXE_kfd-emu")))
        ),
        format!("{}:/opt/hsa-rt/preload", parent(&preload_library())),
        // The same directory: cargo builds the model library beside the preloaded one.
        format!("{}:/opt/hsa-rt/model", parent(&model_library())),
        format!("{}:/opt/hsa-rt/out", out.display()),
    ];
    if capi {
        binds.push(format!("{}:/opt/hsa-rt/capi", parent(&capi_library())));
    }
    let mut cmd = Command::new("bash");
    cmd.arg(crate_dir.join("../scripts/rocm7-chroot.sh"))
        .args(["run", "--root"])
        .arg(root);
    for b in &binds {
        cmd.args(["--bind", b]);
    }
    cmd.arg("--")
        .args(command)
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_RT_KFD_RECORD")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD");
    cmd.output().expect("run scripts/rocm7-chroot.sh")
}
