//! The ROCm 7.2.4 chroot (`scripts/rocm7-chroot.sh`, docs/rocm7-status.md) that the tests of
//! ROCm 7 clients run in.

use std::path::PathBuf;
use std::process::Command;

/// The chroot's root: `$ROCM7_CHROOT`, else `/work/chroots/rocm7`, when every path of `needs`
/// (relative to the root) exists there and this process is root (entering it needs mount
/// namespaces); `None` after printing `skipped: ...` naming what is missing.
pub fn chroot(needs: &[&str]) -> Option<PathBuf> {
    let root = std::env::var_os("ROCM7_CHROOT")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/work/chroots/rocm7"), PathBuf::from);
    for need in needs {
        if !root.join(need).exists() {
            println!(
                "skipped: no ROCm 7 chroot at {} ({need} missing; build it with \
                 scripts/rocm7-chroot.sh build, or set ROCM7_CHROOT)",
                root.display()
            );
            return None;
        }
    }
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        println!("skipped: running in the ROCm 7 chroot needs root");
        return None;
    }
    Some(root)
}
