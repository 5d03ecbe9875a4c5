//! kfd-emu in a root that is not a mount point: a chroot into a plain directory, as a user
//! makes one with debootstrap. kfd-emu makes its mounts private to its namespace; the one
//! recursive change at `/` that does so elsewhere is refused there (EINVAL: `/` is a
//! directory inside a mount the process cannot name), and kfd-emu stopped with "making /
//! private in the new namespace: Invalid argument". It now makes each mount it can reach
//! private instead.
//!
//! The root is built from this machine's own `/usr` and `/etc` (bound read-only into a fresh
//! directory under the temp dir, in a private mount namespace that `unshare` makes and that
//! goes when the test ends), so the test needs no chroot of its own: Debian's `rocminfo`
//! (ROCR 5.2.3) runs in it under kfd-emu. Needs root (chroot, mounts) and util-linux's
//! `unshare`; says `skipped:` without them.

mod common;

use std::path::Path;
use std::process::Command;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `kfd-emu -- rocminfo` chrooted into a fresh directory holding this machine's `/usr`
/// and `/etc`, with `/proc`, `/sys` and `/dev` mounted inside; `self_bind` first binds the
/// directory on itself (making it a mount point).
fn rocminfo_in_plain_root(self_bind: bool) -> Option<std::process::Output> {
    if !Path::new("/usr/bin/rocminfo").exists() {
        println!("skipped: /usr/bin/rocminfo missing (apt install rocminfo)");
        return None;
    }
    if !is_root() {
        println!("skipped: chrooting needs root");
        return None;
    }
    let root = std::env::temp_dir().join(format!(
        "kfd-emu-plain-root-{}-{self_bind}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    // Directories and links of a merged-/usr Debian root; the mounts are the namespace's.
    let script = r#"
        set -e
        R=$1 EXE=$2 PRELOAD=$3 SELF=$4
        [ "$SELF" = 1 ] && mount --bind "$R" "$R"
        mkdir -p "$R/usr" "$R/etc" "$R/proc" "$R/sys" "$R/dev" "$R/tmp" "$R/kfd"
        for l in bin lib lib64 sbin; do [ -e "$R/$l" ] || ln -s "usr/$l" "$R/$l"; done
        mount --bind -o ro /usr "$R/usr"
        mount --bind -o ro /etc "$R/etc"
        mount -t proc proc "$R/proc"
        mount --rbind /sys "$R/sys"
        mount --rbind /dev "$R/dev"
        : > "$R/kfd/kfd-emu"
        : > "$R/kfd/libkfd_emu_preload.so"
        mount --bind "$EXE" "$R/kfd/kfd-emu"
        mount --bind "$PRELOAD" "$R/kfd/libkfd_emu_preload.so"
        exec chroot "$R" /usr/bin/env KFD_EMU_PRELOAD=/kfd/libkfd_emu_preload.so \
            /kfd/kfd-emu -- /usr/bin/rocminfo
    "#;
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&root)
        .arg(env!("CARGO_BIN_EXE_kfd-emu"))
        .arg(common::preload_library())
        .arg(if self_bind { "1" } else { "0" })
        .env_remove("HSA_RT_SYSFS")
        .output();
    let _ = std::fs::remove_dir_all(&root);
    match out {
        Ok(o) => Some(o),
        Err(e) => {
            println!("skipped: unshare: {e}");
            None
        }
    }
}

fn assert_rocminfo_ran(out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // The built-in profile's GPU, as rocminfo names its agent and ISA.
    assert!(
        stdout.contains("  Name:                    gfx90a"),
        "{stdout}"
    );
    assert!(
        stdout.contains("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        "{stdout}"
    );
}

#[test]
fn runs_in_a_root_that_is_not_a_mount_point() {
    if let Some(out) = rocminfo_in_plain_root(false) {
        assert_rocminfo_ran(&out);
    }
}

#[test]
fn runs_in_a_root_bound_on_itself() {
    if let Some(out) = rocminfo_in_plain_root(true) {
        assert_rocminfo_ran(&out);
    }
}
