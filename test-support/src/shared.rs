//! The shared test data beside the checkout: `../shared/testdata` (captured KFD sysfs
//! topologies under `kfd-topology/<case>/topology`, rocminfo outputs), or
//! `$HSA_RT_SHARED/testdata` ([`hsa_linux::env::SHARED_ENV`]). A test that needs it and does
//! not find it prints `skipped: ... missing (set HSA_RT_SHARED)` and passes.

use std::path::{Path, PathBuf};

/// The `shared` directory: `$HSA_RT_SHARED`, else the workspace's `../shared`.
pub fn shared_dir() -> PathBuf {
    hsa_linux::env::path(hsa_linux::env::SHARED_ENV)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

/// `<shared>/testdata`, when it holds the captured topologies (`kfd-topology/`); `None`
/// after printing `skipped: ...`.
pub fn testdata() -> Option<PathBuf> {
    let dir = shared_dir().join("testdata");
    if dir.join("kfd-topology").is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: {} missing (set HSA_RT_SHARED)",
            dir.join("kfd-topology").display()
        );
        None
    }
}

/// The `topology` directory of capture `case` (`<shared>/testdata/kfd-topology/<case>/topology`,
/// the directory holding `nodes/`); `None` after printing `skipped: ...` when it is missing.
pub fn topology_dump(case: &str) -> Option<PathBuf> {
    let root = shared_dir()
        .join("testdata/kfd-topology")
        .join(case)
        .join("topology");
    if root.is_dir() {
        Some(root)
    } else {
        println!("skipped: {} missing (set HSA_RT_SHARED)", root.display());
        None
    }
}

/// The `topology` directory of every capture, sorted by path; `None` after printing
/// `skipped: ...` when the captures are missing.
pub fn topology_dumps() -> Option<Vec<PathBuf>> {
    let dir = shared_dir().join("testdata/kfd-topology");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipped: {} missing (set HSA_RT_SHARED)", dir.display());
        return None;
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join("topology"))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Some(out)
}
