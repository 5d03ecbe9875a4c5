//! A client that calls the mmap system call itself on the device files (tinygrad calls mmap
//! through `ctypes.CDLL('libc.so.6')`, which LD_PRELOAD never interposes) is served as one
//! that calls libc's `mmap`: `tests/c/syscall_mmap.c` maps a buffer object and the doorbell
//! page with `syscall(SYS_mmap, ...)` and with libc, and checks that both mappings are the
//! device's same bytes, that bad offsets and lengths get amdkfd's and amdgpu's `EINVAL`, that
//! a file mapped past 4 GiB is still the file, and that a child exec'd afterwards runs.
//! Needs gcc (the program writes out the two kfd_ioctl.h structs it uses).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `tests/c/syscall_mmap.c`; `None` (said) when gcc is missing.
fn build() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("kfd-emu-syscall-mmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("syscall_mmap");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/syscall_mmap.c");
    let out = match Command::new("gcc")
        .args(["-std=gnu11", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: gcc: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// Every check of the program passes, on the built-in profile (gfx90a) and on gfx942
/// (tinygrad's target).
#[test]
fn the_mmap_system_call_maps_the_devices_bytes() {
    let Some(exe) = build() else {
        return;
    };
    for profile in ["builtin", "gfx942"] {
        let options = ["--profile".to_owned(), profile.to_owned()];
        let Some(out) = common::kfd_emu_with(&options, &[], &exe, &[]) else {
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{profile}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout,
            "syscall_mmap: bo: ok\n\
             syscall_mmap: doorbell: ok\n\
             syscall_mmap: errors: ok\n\
             syscall_mmap: file: ok\n\
             syscall_mmap: exec: ok\n",
            "{profile}"
        );
    }
}
