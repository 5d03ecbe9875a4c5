//! HIP on the emulated gfx942 (MI300): Debian's hipcc uses clang-15, which stops at gfx940,
//! so `capi/hip/vector_add.hip` is built here with clang-19 (`-x hip --offload-arch=gfx942`)
//! against the same HIP 5.2.3 headers and rocm-device-libs, then run on this library over the
//! captured MI308X topology (gfx942 agents).
//!
//! What the build needs beyond clang-19: the `clang-offload-bundler` that makes HIP's fat
//! binary (Debian ships only LLVM 15's, `clang-offload-bundler-15`, found through `-B`), code
//! object v4 (`-mcode-object-version=4`: HIP 5.2's loader reads `hipv4-` bundles; clang-19
//! defaults to v5), and an `oclc_isa_version_942.bc`, which rocm-device-libs 5.2 lacks: the
//! gfx940 file stands in for it (its only content is the ISA version constant, 9.4.0 instead
//! of 9.4.2).
//!
//! What the run needs: a HIP runtime that knows gfx942. The gfx9 entries of Debian's
//! libamdhip64 5.2.3 ISA table end at gfx90d (no gfx940/gfx941/gfx942): on a gfx942 agent
//! `hipGetDeviceProperties` frees an invalid pointer and the process dies (SIGSEGV),
//! whatever the code object (the gfx90a build does the same). So the test builds and checks the gfx942 code object, then
//! says `skipped:` with that reason when the installed libamdhip64 has no gfx942; with one
//! that has, it runs the program and requires its "verified" line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's HIP runtime library.
const LIBAMDHIP64: &str = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
/// rocm-device-libs' bitcode directory on Debian.
const DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// `prog` on `PATH`, or `None`.
fn which(prog: &str) -> Option<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Whether `hay` contains `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Builds `capi/hip/<src>` for gfx942 with clang-19 into `dir/out`; `Err` with a
/// `skipped: ...` line when a tool or library is missing.
fn build_gfx942(dir: &Path, src: &str, out: &str) -> Result<PathBuf, String> {
    let clang = which("clang++-19").ok_or("skipped: clang++-19 not found")?;
    // clang-19 links AMDGPU code objects with its own `lld` (Debian's lld-19).
    if !Path::new("/usr/lib/llvm-19/bin/lld").is_file() {
        return Err("skipped: /usr/lib/llvm-19/bin/lld not found (install lld-19)".into());
    }
    let bundler = which("clang-offload-bundler-19")
        .or_else(|| which("clang-offload-bundler"))
        .or_else(|| which("clang-offload-bundler-15"))
        .ok_or("skipped: no clang-offload-bundler (Debian: clang-15's) found")?;
    if !Path::new("/usr/include/hip/hip_runtime.h").is_file() {
        return Err("skipped: /usr/include/hip not found (install libamdhip64-dev)".into());
    }
    let libs = Path::new(DEVICE_LIBS);
    if !libs.join("ocml.bc").is_file() {
        return Err(format!(
            "skipped: {DEVICE_LIBS} not found (install rocm-device-libs)"
        ));
    }
    // clang looks for `clang-offload-bundler` in -B directories; the device libs directory
    // gets a gfx942 ISA file (see the module doc).
    let bin = dir.join("bin");
    let bc = dir.join("bitcode");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&bc).unwrap();
    std::os::unix::fs::symlink(&bundler, bin.join("clang-offload-bundler")).unwrap();
    for e in std::fs::read_dir(libs).unwrap() {
        let p = e.unwrap().path();
        std::os::unix::fs::symlink(&p, bc.join(p.file_name().unwrap())).unwrap();
    }
    let isa942 = bc.join("oclc_isa_version_942.bc");
    if !isa942.exists() {
        std::os::unix::fs::symlink(libs.join("oclc_isa_version_940.bc"), &isa942).unwrap();
    }
    let exe = dir.join(out);
    let o = Command::new(clang)
        .arg(format!("-B{}", bin.display()))
        .args(["-x", "hip", "--offload-arch=gfx942", "--rocm-path=/usr"])
        .arg(format!("--rocm-device-lib-path={}", bc.display()))
        .args(["-mcode-object-version=4", "-O2"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("hip").join(src))
        .arg("-o")
        .arg(&exe)
        .args(["-L/usr/lib/x86_64-linux-gnu", "-lamdhip64"])
        .output()
        .expect("run clang++-19");
    assert!(
        o.status.success(),
        "clang++-19 {src} for gfx942 failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    Ok(exe)
}

#[test]
fn hip_vector_add_on_gfx942_built_with_clang19() {
    let dir = common::temp_dir("hip-gfx942");
    let exe = match build_gfx942(&dir, "vector_add.hip", "vector_add_gfx942") {
        Ok(exe) => exe,
        Err(skipped) => {
            println!("{skipped}");
            return;
        }
    };
    // The fat binary carries a code object v4 bundle for gfx942.
    let bytes = std::fs::read(&exe).unwrap();
    assert!(
        contains(&bytes, b"hipv4-amdgcn-amd-amdhsa--gfx942"),
        "no gfx942 code object v4 bundle in {exe:?}"
    );
    let Ok(hip) = std::fs::read(LIBAMDHIP64) else {
        println!("skipped: {LIBAMDHIP64} not found (install libamdhip64-dev)");
        return;
    };
    if !contains(&hip, b"gfx942\0") {
        println!(
            "skipped: the gfx942 program builds, but {LIBAMDHIP64} (Debian's HIP 5.2.3) has no \
             gfx940/gfx941/gfx942 in its ISA table (its gfx9 entries end at gfx90d): \
             hipGetDeviceProperties crashes (SIGSEGV) on a gfx942 agent whatever the code \
             object, so no HIP program runs on the emulated gfx942 with this HIP runtime"
        );
        return;
    }
    let topology = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/testdata/kfd-topology/mi308x-cpx-topology/topology"
    ));
    if !topology.is_dir() {
        println!("skipped: {} not found", topology.display());
        return;
    }
    let libdir = common::library_dir("hip-gfx942-lib");
    let out = Command::new(&exe)
        .env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_SYSFS", &topology)
        .env("HSA_RT_LOG", "1")
        .output()
        .expect("run vector_add_gfx942");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("vector_add: verified 65536 elements"),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
