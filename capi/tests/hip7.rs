//! HIP 7.2.4 on this library: programs built by hipcc 7.2.4 in the ROCm 7 chroot
//! (`scripts/rocm7-chroot.sh`, Debian sid with `libamdhip64-7`; glibc >= 2.38) run with
//! `libamdhip64.so.7` loading this library as `libhsa-runtime64.so.1`, on the emulated device
//! (`HSA_RT_DEVICE=emulated`): the built-in MI210-like gfx90a and `HSA_RT_PROFILE=gfx942`.
//! docs/rocm7-status.md says what runs.
//!
//! The chroot is `$ROCM7_CHROOT`, else `/work/chroots/rocm7` (where `.ci/run` builds it). Each
//! run goes through the script's `run` (a private mount namespace): this repository is bound
//! at `/opt/hsa-rt/src`, the directory of the freshly built library at `/opt/hsa-rt/capi`, and
//! a scratch directory of this test process at `/opt/hsa-rt/out` (the programs hipcc builds,
//! and `lib/libhsa-runtime64.so.1`, a link to the library as the chroot sees it). Nothing is
//! copied into the chroot. Needs root (chroot, mounts); says `skipped:` without the chroot or
//! root.
//!
//! Tests marked `#[ignore = "extended: ..."]` pass and run outside CI, for time:
//! `scripts/extended-clients` runs them and writes `docs/extended-clients.md`.

mod common;
mod hip_programs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Where the chroot is; `None` (said) when it or root is missing.
fn chroot() -> Option<PathBuf> {
    hsa_test_support::rocm7::chroot(&["usr/bin/hipcc", "usr/lib/x86_64-linux-gnu/libamdhip64.so.7"])
}

/// This test process's scratch directory (`/opt/hsa-rt/out` inside).
fn out_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::temp_dir("hip7");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        // Both names: RCCL dlopens the unversioned one (an installed library has both).
        for name in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
            std::os::unix::fs::symlink(
                "/opt/hsa-rt/capi/libhsa_runtime64.so",
                dir.join("lib").join(name),
            )
            .unwrap();
        }
        dir
    })
}

/// Runs `command` in the chroot with the binds of the module docs.
fn run_in(root: &Path, command: &[&str]) -> Output {
    run_in_with(root, &[], command)
}

/// [`run_in`] with more binds (`SRC:DST`).
fn run_in_with(root: &Path, extra_binds: &[String], command: &[&str]) -> Output {
    let src = common::crate_dir().parent().unwrap().to_path_buf();
    let lib = common::built_library();
    let mut binds = vec![
        format!("{}:/opt/hsa-rt/src", src.display()),
        format!("{}:/opt/hsa-rt/capi", lib.parent().unwrap().display()),
        format!("{}:/opt/hsa-rt/out", out_dir().display()),
    ];
    binds.extend_from_slice(extra_binds);
    let mut cmd = Command::new("bash");
    cmd.arg(src.join("scripts/rocm7-chroot.sh"))
        .args(["run", "--root"])
        .arg(root);
    for b in &binds {
        cmd.args(["--bind", b]);
    }
    cmd.arg("--")
        .args(command)
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_PROFILE")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD");
    cmd.output().expect("run scripts/rocm7-chroot.sh")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `capi/hip/<src>` built by hipcc 7.2.4 with `args` into `/opt/hsa-rt/out/<exe>` (once per
/// test process and program).
fn build(root: &Path, src: &str, exe: &str, args: &[&str]) -> String {
    let path = format!("/opt/hsa-rt/out/{exe}");
    if out_dir().join(exe).exists() {
        return path;
    }
    let source = format!("/opt/hsa-rt/src/capi/hip/{src}");
    let mut c = vec!["hipcc"];
    c.extend_from_slice(args);
    c.extend_from_slice(&[source.as_str(), "-o", path.as_str()]);
    let out = run_in(root, &c);
    let (o, e) = text(&out);
    assert!(out.status.success(), "hipcc 7.2.4 {src}: {o}\n{e}");
    path
}

/// Runs `exe ARGS` on this library on the emulated device (`profile`: `HSA_RT_PROFILE`).
fn run_ours(root: &Path, profile: Option<&str>, exe: &str, args: &[&str]) -> Output {
    let profile_env = profile.map(|p| format!("HSA_RT_PROFILE={p}"));
    let mut c = vec![
        "env",
        "LD_LIBRARY_PATH=/opt/hsa-rt/out/lib",
        "HSA_RT_DEVICE=emulated",
    ];
    if let Some(p) = &profile_env {
        c.push(p);
    }
    c.push(exe);
    c.extend_from_slice(args);
    run_in(root, &c)
}

/// `ldd -r` of HIP 7.2.4 against this library: every `hsa_*` import resolves (HIP is linked
/// with BIND_NOW: one missing import and it does not load).
#[test]
fn hip7_imports_resolve_against_this_library() {
    let Some(root) = chroot() else { return };
    let out = run_in(
        &root,
        &[
            "env",
            "LD_LIBRARY_PATH=/opt/hsa-rt/out/lib",
            "ldd",
            "-r",
            "/usr/lib/x86_64-linux-gnu/libamdhip64.so.7",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("libhsa-runtime64.so.1 => /opt/hsa-rt/out/lib/libhsa-runtime64.so.1"),
        "ldd did not resolve this library:\n{stdout}\n{stderr}"
    );
    let missing: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.contains("undefined symbol: hsa_"))
        .collect();
    assert!(missing.is_empty(), "undefined: {missing:#?}");
}

/// `capi/hip/vector_add.hip` built once for gfx90a and gfx942 verifies on this library on both
/// emulated targets.
#[test]
fn hip7_vector_add_on_gfx90a_and_gfx942() {
    let Some(root) = chroot() else { return };
    let exe = build(
        &root,
        "vector_add.hip",
        "vector_add7",
        &["--offload-arch=gfx90a", "--offload-arch=gfx942"],
    );
    for (profile, isa) in [
        (None, "gfx90a:sramecc+:xnack-"),
        (Some("gfx942"), "gfx942:sramecc+:xnack-"),
    ] {
        let out = run_ours(&root, profile, &exe, &[]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{profile:?}: {stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("vector_add: verified 65536 elements on {isa}")),
            "{profile:?}: {stdout}"
        );
    }
}

/// `capi/hip/vector_add.hip` built for `gfx9-4-generic` alone (a code object v6 with generic
/// version 1) verifies on the emulated gfx942: HIP 7.2.4 picks the generic code object for the
/// agent although this library lists only the agent's own ISA (`hsa_agent_iterate_isas`; see
/// `docs/rocm7-status.md`), and the loader takes it on a processor it covers.
#[test]
fn hip7_gfx9_4_generic_code_runs_on_gfx942() {
    let Some(root) = chroot() else { return };
    let exe = build(
        &root,
        "vector_add.hip",
        "vector_add7_gfx9_4_generic",
        &["--offload-arch=gfx9-4-generic"],
    );
    let out = run_ours(&root, Some("gfx942"), &exe, &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("vector_add: verified 65536 elements on gfx942:sramecc+:xnack-"),
        "{stdout}"
    );
}

/// `capi/hip/hip_check.hip`'s sections built by hipcc 7.2.4 for gfx90a pass on this library:
/// kernels, shared memory, memsets, pitched memory and images (the image extension), streams
/// and events (HIP 7's barrier-value packets, TIMESTAMP_FREQUENCY for elapsed times), host
/// memory, callbacks, symbols, atomics, math, device printf, hiprtc, a bad launch's error,
/// memcpy in every direction (the copy engines), modules (`hipModuleLoad` of a `--genco`
/// code-object bundle) and virtual memory (`hipMemCreate`, `hipMemMap`, `hipMemSetAccess`
/// over the `hsa_amd_vmem_*` API: a kernel across two mappings, copies in and out).
#[test]
fn hip7_check_sections_on_gfx90a() {
    let Some(root) = chroot() else { return };
    let exe = build(
        &root,
        "hip_check.hip",
        "hip_check7",
        &["--offload-arch=gfx90a", "-O2", "-lhiprtc"],
    );
    // The `module` section's code-object bundle (`hipModuleLoad`), built with `--genco`.
    let co = build(
        &root,
        "module_kernels.hip",
        "module_kernels7.co",
        &["--offload-arch=gfx90a", "-O2", "--genco"],
    );
    let mut failed = Vec::new();
    for section in [
        "vector_add",
        "shared",
        "memset",
        "pitched",
        "streams",
        "hostmem",
        "callbacks",
        "symbols",
        "atomics",
        "math",
        "printf",
        "hiprtc",
        "badlaunch",
        "memcpy",
        "images",
        "module",
        "vmem",
    ] {
        let out = match section {
            "module" => run_ours(&root, None, &exe, &[section, &co]),
            _ => run_ours(&root, None, &exe, &[section]),
        };
        let (stdout, stderr) = text(&out);
        if !out.status.success() || !stdout.contains(&format!("hip_check: {section} ok")) {
            failed.push(format!("{section}: {:?}\n{stdout}\n{stderr}", out.status));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// rocPRIM 7.2.4 and hipCUB 7.2.4 (header-only, in the chroot) on this library:
/// `capi/hip/rocprim_check.hip` (device reduce, scan, radix sort, histogram) and
/// `capi/hip/hipcub_check.hip` (DeviceReduce Sum/Max, DeviceScan InclusiveSum,
/// DeviceRadixSort SortPairs with stable order), built by hipcc 7.2.4 for gfx90a and gfx942,
/// each section on both emulated devices, every result compared in the program with the
/// host's.
#[test]
fn rocprim7_and_hipcub7_sections_pass_on_this_library() {
    let Some(root) = chroot() else { return };
    if !root.join("usr/include/hipcub/hipcub.hpp").exists() {
        println!("skipped: the chroot has no hipCUB headers (scripts/rocm7-chroot.sh build)");
        return;
    }
    let archs = ["--offload-arch=gfx90a", "--offload-arch=gfx942"];
    let rocprim = build(&root, "rocprim_check.hip", "rocprim_check7", &archs);
    let hipcub = build(&root, "hipcub_check.hip", "hipcub_check7", &archs);
    let mut failed = Vec::new();
    let sections = [
        (&rocprim, "rocprim_check", "rocprim_reduce"),
        (&rocprim, "rocprim_check", "rocprim_scan"),
        (&rocprim, "rocprim_check", "rocprim_sort"),
        (&rocprim, "rocprim_check", "rocprim_histogram"),
        (&hipcub, "hipcub_check", "reduce_scan"),
        (&hipcub, "hipcub_check", "sort"),
    ];
    for profile in [None, Some("gfx942")] {
        for (exe, program, section) in sections {
            let out = run_ours(&root, profile, exe, &[section]);
            let (stdout, stderr) = text(&out);
            if !out.status.success() || !stdout.contains(&format!("{program}: {section} ok")) {
                failed.push(format!(
                    "{profile:?} {program} {section}: {:?}\n{stdout}\n{stderr}",
                    out.status
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// RCCL 7.2.4 on this library across the eight GPUs of the captured MI210 machine (two xGMI
/// hives of four, PCIe between them; `capi/hip/rccl_allreduce.hip`: an in-place float sum
/// all-reduce, one communicator per GPU in one process, every element checked against the
/// host's sum). RCCL reads the topology from `/sys/class/kfd/kfd/topology` itself (its
/// `alt_rsmi`: the nodes' `properties` and `gpu_id`), so the test gives the chroot a
/// `/sys/class` holding a copy of the capture, with a `gpu_id` file for each GPU (the capture
/// has none), and points the library at the same copy. It stopped with "out of memory"
/// until `hsa_amd_agents_allow_access` mapped a GPU's fine-grained VRAM for the GPUs of the
/// other hive as ROCR does (the pool reports them `NEVER_ALLOWED`, and ROCR maps anyway).
/// RCCL's channels and buffers are limited (`NCCL_MAX_NCHANNELS=2`, `NCCL_BUFFSIZE` 1 MiB) to
/// keep it near 90 s; with RCCL's defaults it passes in about 4 minutes.
#[test]
fn rccl7_allreduce_across_eight_mi210s_on_this_library() {
    let Some(root) = chroot() else { return };
    if !root.join("usr/include/rccl/rccl.h").exists() {
        println!("skipped: the chroot has no RCCL (librccl-dev; scripts/rocm7-chroot.sh build)");
        return;
    }
    let capture = hip_programs::eight_mi210s();
    if !capture.is_dir() {
        println!("skipped: {} not found", capture.display());
        return;
    }
    let class = out_dir().join("class");
    let topology = class.join("kfd/kfd/topology");
    if !topology.exists() {
        copy_tree(&capture, &topology);
        let nodes = topology.join("nodes");
        for entry in std::fs::read_dir(&nodes).unwrap() {
            let node = entry.unwrap().path();
            let props = std::fs::read_to_string(node.join("properties")).unwrap();
            let gpu = props
                .lines()
                .any(|l| l.starts_with("simd_count ") && !l.ends_with(" 0"));
            let index: u32 = node.file_name().unwrap().to_str().unwrap().parse().unwrap();
            let id = if gpu { 40_000 + index } else { 0 };
            std::fs::write(node.join("gpu_id"), format!("{id}\n")).unwrap();
        }
    }
    let exe = build(
        &root,
        "rccl_allreduce.hip",
        "rccl_allreduce7",
        &["--offload-arch=gfx90a", "-lrccl"],
    );
    let out = run_in_with(
        &root,
        &[format!("{}:/sys/class", class.display())],
        &[
            "env",
            "LD_LIBRARY_PATH=/opt/hsa-rt/out/lib",
            "HSA_RT_DEVICE=emulated",
            "HSA_RT_SYSFS=/sys/class/kfd/kfd/topology",
            "NCCL_DEBUG=WARN",
            "NCCL_MAX_NCHANNELS=2",
            "NCCL_BUFFSIZE=1048576",
            &exe,
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("devices 8\n"), "{stdout}");
    assert!(stdout.contains("rccl_allreduce: ok"), "{stdout}\n{stderr}");
}

/// Copies the directory tree `from` to `to` (files and directories; symbolic links are
/// followed).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

/// hipBLAS 7.2.4's SGEMM (64 x 64 x 64) on this library, checked against the host by
/// `hipblas-bench -v 1`: rocBLAS's Tensile kernels are hand-written assembly whose kernel
/// descriptors leave kernarg_size 0, in code objects linked with one metadata note per kernel.
/// The loader refused the first and saw only the last note's kernel of the second
/// (`HIPBLAS_STATUS_INTERNAL_ERROR`); now the product's error norm is rocBLAS's single-precision
/// figure.
#[test]
fn hipblas7_sgemm_verifies_on_this_library() {
    let Some(root) = chroot() else { return };
    let out = run_ours(
        &root,
        None,
        "/usr/libexec/rocm/libhipblas3-tests/hipblas-bench",
        &[
            "-f", "gemm", "-r", "s", "-m", "64", "-n", "64", "-k", "64", "-v", "1",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The result line: f32_r,N,N,64,64,64,... then the host and device error norms last.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("f32_r,N,N,64,64,64,"))
        .unwrap_or_else(|| panic!("no result line:\n{stdout}\n{stderr}"));
    let fields: Vec<&str> = line.trim().trim_end_matches(',').split(',').collect();
    for norm in &fields[fields.len() - 2..] {
        let norm: f64 = norm.trim().parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(norm < 1e-5, "error norm {norm}: {line}");
    }
}

/// rocBLAS 7.2.4's own tests of three Tensile GEMMs pass on this library (emulated gfx90a and
/// gfx942, both sramecc+), each once broken by a different fault, found by tracing the kernel:
/// - `quick_gemm_64_1_4_5_8_f32_r_NN` (an MFMA SGEMM): it reads the rows of A past K through
///   the SGPR offset of a raw buffer and needs them to read 0; the range check ignored the
///   SGPR offset, so it read rocBLAS's guard NaNs and its result was NaN;
/// - `quick_gemm_fortran_f64_r_NN_7_9_15`: its code object's later metadata notes name no
///   `amdhsa.target`; the loader refused it and rocBLAS answered
///   `rocblas_status_internal_error`;
/// - `quick_gemm_small_f16_r_NN_8_2_2`: it ORs a `buffer_load_short_d16`/`_d16_hi` pair,
///   which with SRAM ECC on leave the other half 0; the kept half made -1 read -1.0078125.
#[test]
fn rocblas7_tensile_gemms_pass_on_this_library() {
    run_gtest(
        "/usr/libexec/rocm/librocblas5-tests/rocblas-test",
        &[
            "--gtest_filter=*quick_gemm_64_1_4_5_8_f32_r_NN_63_4_6_5_63_6_0_63*:\
           *quick_gemm_fortran_f64_r_NN_7_9_15_2_17_18_n1_19_F*:\
           *quick_gemm_small_f16_rf16_rf16_rf16_rf16_r_NN_8_2_2_1_8_8_1_8_8*",
        ],
        3,
    );
}

/// rocFFT 7.2.4's real-to-complex accuracy tests of lengths 32, 64 and 128 (single and
/// double precision, in and out of place, batches 1 to 4: 38 cases with `--seed 1`) pass on
/// this library against FFTW, on emulated gfx90a and gfx942 (rocFFT builds its kernels for
/// the device with hiprtc). They failed with errors of up to 4 against a bound of 0.0007: the
/// post-processing step reads `Z[N - k]` at a negative DS base folded into the offset
/// (`ds_read_b64 v[4:5], v6 offset:256` with `v6 = -8`), which wraps at 32 bits on the GPU
/// and read 0 in the interpreter.
#[test]
fn rocfft7_real_to_complex_passes_on_this_library() {
    run_gtest(
        "/usr/libexec/rocm/librocfft0-tests/rocfft-test",
        // rocfft-test draws some of its cases' parameters at random: seed 1 gives 38.
        &[
            "--seed",
            "1",
            "--gtest_filter=pow2_1D/accuracy_test.vs_fftw/real_forward_len_32_*:\
             pow2_1D/accuracy_test.vs_fftw/real_forward_len_64_*:\
             pow2_1D/accuracy_test.vs_fftw/real_forward_len_128_*",
        ],
        38,
    );
}

/// rocRAND 7.2.4's own device-API tests of four generators (philox4x32-10 18 tests, MTGP32 19,
/// Sobol32 and Sobol64 17 each: each generator's kernels run on the device and their numbers
/// are compared with rocRAND's host implementation) pass on this library, on emulated gfx90a
/// and gfx942 (about 50 s with the debug library the tests use). On gfx942 philox's Poisson
/// cases failed and MTGP32 did not finish until the interpreter gave a 64-bit operand's float
/// constant as the double (`v_mov_b64 v[8:9], 1.0` loaded 0x3F800000). The rest of
/// `librocrand1-tests` and their times are listed in docs/rocm7-status.md.
#[test]
fn rocrand7_kernel_tests_pass_on_this_library() {
    for (binary, passed) in [
        ("test_rocrand_kernel_philox4x32_10", 18),
        ("test_rocrand_kernel_mtgp32", 19),
        ("test_rocrand_kernel_sobol32", 17),
        ("test_rocrand_kernel_sobol64", 17),
    ] {
        run_gtest(
            &format!("/usr/libexec/rocm/librocrand1-tests/{binary}"),
            &[],
            passed,
        );
    }
}

/// rocSOLVER 7.2.4's own check-in tests of GETRF (LU factorisation with partial pivoting: the
/// 72 float and double cases, sizes 0 to 100 and invalid ones, checked against the host's
/// LAPACK) pass on this library, on emulated gfx90a and gfx942. rocSOLVER drives rocBLAS's
/// kernels and its own; the factorisation once stopped on a memory fault (`getf2_getrf` read
/// address 0) until the interpreter's DS and buffer range fixes. The complex cases (72 more)
/// pass too (by hand); they are left out to keep CI's time.
#[test]
#[ignore = "extended: about 2.5 minutes in the debug build; CI runs the same cases on ROCR 7.2.4 under kfd-emu (kfd-emu/tests/rocm7.rs rocsolver7_getrf_on_rocr7_both_ways_in); scripts/extended-clients runs it (docs/extended-clients.md)"]
fn rocsolver7_getrf_passes_on_this_library() {
    run_gtest(
        "/usr/libexec/rocm/librocsolver0-tests/rocsolver-test",
        &["--gtest_filter=checkin_lapack/GETRF.__float/*:checkin_lapack/GETRF.__double/*"],
        72,
    );
}

/// rocrtst 7.2.4's virtual-memory tests (Debian's `libhsa-runtime64-tests`) pass on this
/// library, on emulated gfx90a and gfx942, as on ROCR 7.2.4 under kfd-emu
/// (`docs/rocrtst7-preload.md`): `VirtMemory_Basic_Test` (reservations, handles and their
/// properties, access per GPU, reference counts, partial mappings, `hsa_amd_pointer_info`'s
/// `RESERVED_ADDR` and `HSA_VMEM` types), `VirtMemory_Access_Test` (the host and a kernel
/// reading and writing a mapping) and `VirtMemory_Interprocess_Test` (a handle exported as a
/// dma-buf to a child process); with `Test_Example`, its one kernel dispatch. They found
/// `hsa_amd_pointer_info` answering `UNKNOWN` for a reservation and `HSA` for a mapping, and
/// a kernarg alignment below 16 (rocrtst asserts 16, what ROCR reports).
#[test]
fn rocrtst7_virtual_memory_tests_pass_on_this_library() {
    let runner = "/usr/libexec/rocm/libhsa-runtime64-tests/run-tests";
    let Some(root) = hsa_test_support::rocm7::chroot(&[
        runner.trim_start_matches('/'),
        "usr/local/lib/rocrtst-compat",
    ]) else {
        return;
    };
    out_dir();
    for profile in [None, Some("gfx942")] {
        let profile_env = profile.map(|p| format!("HSA_RT_PROFILE={p}"));
        let mut c = vec![
            "env",
            // rocrtst64 links libamd_smi.so.26, which the chroot keeps apart (rocm7-chroot.sh).
            "LD_LIBRARY_PATH=/opt/hsa-rt/out/lib:/usr/local/lib/rocrtst-compat",
            "HSA_RT_DEVICE=emulated",
        ];
        if let Some(p) = &profile_env {
            c.push(p);
        }
        c.extend([
            runner,
            "--gtest_filter=rocrtst.Test_Example:rocrtstFunc.VirtMemory_*",
        ]);
        let out = run_in(&root, &c);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{profile:?}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("[  PASSED  ] 4 tests."),
            "{profile:?}: not 4 tests passed:\n{stdout}\n{stderr}"
        );
    }
}

/// Runs one of ROCm 7.2.4's gtest binaries (an absolute path inside the chroot) on this
/// library, on the built-in profile (emulated gfx90a) and on the gfx942 one, and checks that
/// each run exits 0 having passed exactly `passed` tests. Says `skipped:` (via
/// [`hsa_test_support::rocm7::chroot`]) when the chroot, the binary or HIP 7 is missing.
fn run_gtest(binary: &str, args: &[&str], passed: usize) {
    let in_root = binary.trim_start_matches('/');
    let Some(root) =
        hsa_test_support::rocm7::chroot(&[in_root, "usr/lib/x86_64-linux-gnu/libamdhip64.so.7"])
    else {
        return;
    };
    for profile in [None, Some("gfx942")] {
        let out = run_ours(&root, profile, binary, args);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{profile:?}: {stdout}\n{stderr}");
        let want = format!("[  PASSED  ] {passed} tests.");
        assert!(
            stdout.contains(&want),
            "{profile:?}: not {passed} tests passed:\n{stdout}\n{stderr}"
        );
    }
}
