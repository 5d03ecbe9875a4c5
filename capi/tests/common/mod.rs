//! Shared by the capi integration tests: where the built library is, and a directory that
//! holds it under the name applications load (`libhsa-runtime64.so.1`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The cdylib `cargo test -p hsa-capi` built with the test: the test binary is
/// `<target>/<profile>/deps/<name>-<hash>`, the library `<target>/<profile>/libhsa_runtime64.so`
/// (independent of `CARGO_TARGET_DIR`).
pub fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary is in <target>/<profile>/deps");
    let lib = profile_dir.join("libhsa_runtime64.so");
    assert!(
        lib.exists(),
        "{} missing: build the cdylib (cargo test -p hsa-capi builds it)",
        lib.display()
    );
    lib
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
