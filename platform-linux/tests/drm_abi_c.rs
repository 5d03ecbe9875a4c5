//! Compares `hsa_linux::kfd::drm` with libdrm's `drm.h` and `amdgpu_drm.h` (Debian's
//! `libdrm-dev`, under `/usr/include/libdrm`): a C program prints every struct size, field
//! offset, request number and constant the virtual-memory API uses; the output is compared
//! with the Rust values. Says `skipped:` without the headers or a C compiler.

use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use hsa_linux::kfd::drm::*;

#[test]
fn drm_abi_matches_libdrm_headers() {
    if !Path::new("/usr/include/libdrm/amdgpu_drm.h").exists() {
        println!("skipped: /usr/include/libdrm/amdgpu_drm.h is not installed (libdrm-dev)");
        return;
    }
    let table: Vec<(&str, u64)> = vec![
        (
            "sizeof(struct drm_prime_handle)",
            size_of::<DrmPrimeHandle>() as u64,
        ),
        (
            "offsetof(struct drm_prime_handle, handle)",
            offset_of!(DrmPrimeHandle, handle) as u64,
        ),
        (
            "offsetof(struct drm_prime_handle, flags)",
            offset_of!(DrmPrimeHandle, flags) as u64,
        ),
        (
            "offsetof(struct drm_prime_handle, fd)",
            offset_of!(DrmPrimeHandle, fd) as u64,
        ),
        (
            "sizeof(struct drm_gem_close)",
            size_of::<DrmGemClose>() as u64,
        ),
        (
            "offsetof(struct drm_gem_close, handle)",
            offset_of!(DrmGemClose, handle) as u64,
        ),
        (
            "sizeof(union drm_amdgpu_gem_mmap)",
            size_of::<DrmAmdgpuGemMmap>() as u64,
        ),
        ("offsetof(union drm_amdgpu_gem_mmap, in.handle)", 0),
        ("offsetof(union drm_amdgpu_gem_mmap, out.addr_ptr)", 0),
        (
            "sizeof(struct drm_amdgpu_gem_va)",
            size_of::<DrmAmdgpuGemVa>() as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, handle)",
            offset_of!(DrmAmdgpuGemVa, handle) as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, operation)",
            offset_of!(DrmAmdgpuGemVa, operation) as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, flags)",
            offset_of!(DrmAmdgpuGemVa, flags) as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, va_address)",
            offset_of!(DrmAmdgpuGemVa, va_address) as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, offset_in_bo)",
            offset_of!(DrmAmdgpuGemVa, offset_in_bo) as u64,
        ),
        (
            "offsetof(struct drm_amdgpu_gem_va, map_size)",
            offset_of!(DrmAmdgpuGemVa, map_size) as u64,
        ),
        (
            "DRM_IOCTL_PRIME_FD_TO_HANDLE",
            u64::from(DRM_IOCTL_PRIME_FD_TO_HANDLE),
        ),
        ("DRM_IOCTL_GEM_CLOSE", u64::from(DRM_IOCTL_GEM_CLOSE)),
        (
            "DRM_IOCTL_AMDGPU_GEM_MMAP",
            u64::from(DRM_IOCTL_AMDGPU_GEM_MMAP),
        ),
        (
            "DRM_IOCTL_AMDGPU_GEM_VA",
            u64::from(DRM_IOCTL_AMDGPU_GEM_VA),
        ),
        ("DRM_COMMAND_BASE", u64::from(DRM_COMMAND_BASE)),
        ("AMDGPU_VA_OP_MAP", u64::from(AMDGPU_VA_OP_MAP)),
        ("AMDGPU_VA_OP_UNMAP", u64::from(AMDGPU_VA_OP_UNMAP)),
        (
            "AMDGPU_VM_PAGE_READABLE",
            u64::from(AMDGPU_VM_PAGE_READABLE),
        ),
        (
            "AMDGPU_VM_PAGE_WRITEABLE",
            u64::from(AMDGPU_VM_PAGE_WRITEABLE),
        ),
        (
            "AMDGPU_VM_PAGE_EXECUTABLE",
            u64::from(AMDGPU_VM_PAGE_EXECUTABLE),
        ),
    ];
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <drm.h>\n#include <amdgpu_drm.h>\n\
         int main(void) {\n",
    );
    for (expr, _) in &table {
        c.push_str(&format!(
            "    printf(\"%llu\\n\", (unsigned long long)({expr}));\n"
        ));
    }
    c.push_str("    return 0;\n}\n");
    let dir = std::env::temp_dir().join(format!("hsa-drm-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("drm_abi.c"), dir.join("drm_abi"));
    std::fs::write(&src, c).unwrap();
    let cc = match Command::new("cc")
        .args(["-I", "/usr/include/libdrm", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: cannot run cc: {e}");
            return;
        }
    };
    assert!(
        cc.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let values: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), table.len());
    let mismatches: Vec<String> = table
        .iter()
        .zip(&values)
        .filter(|((_, rust), c)| rust != *c)
        .map(|((expr, rust), c)| format!("{expr}: C {c:#x}, Rust {rust:#x}"))
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    println!("compared {} entries with libdrm's headers", table.len());
}
