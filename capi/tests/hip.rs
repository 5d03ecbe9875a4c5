//! HIP programs on this runtime: `hip/hip_check.hip` (and the code-object file
//! `hip/module_kernels.hip`) and `hip/rocprim_check.hip` (rocPRIM's device algorithms) built
//! with Debian's hipcc (HIP 5.2.3) for gfx900, gfx906, gfx908 and gfx90a in one fat binary,
//! run against the built `libhsa-runtime64.so.1` on the emulated MI210 (gfx90a), which
//! interprets the kernels' real machine code, and on the built-in gfx900, gfx906 (MI60) and
//! gfx908 (MI100) profiles (`HSA_RT_PROFILE`, [`hip_programs::PROFILES`]), where HIP loads
//! the code object of that processor. Each section runs in its own process (HIP aborts the
//! process on a queue error) and compares its results with the host's.
//!
//! The programs, their sections and what a run of one means are `hip_programs` (shared with
//! `kfd-emu/tests/hip.rs`, which runs the same sections on Debian's ROCR under kfd-emu and
//! compares). A section that needs an instruction the gfx9 interpreter does not execute yet
//! would be listed in [`ISA_GAPS`] (none is today) and pass only with that exact interpreter
//! error; the `printf` section also checks the text the device printed.
//!
//! Needs `hipcc`, `libamdhip64-dev` and `rocm-device-libs` (`.ci/run` installs them); without
//! hipcc every test says `skipped: hipcc not found` and passes.

mod common;
mod hip_programs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use hip_programs::{Outcome, Programs, ISA_GAPS};

/// The library directory and the programs, built once for all the tests (they run at once);
/// `None` without hipcc.
fn programs() -> Option<&'static (PathBuf, Programs)> {
    static BUILT: OnceLock<Option<(PathBuf, Programs)>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let hipcc = hip_programs::hipcc()?;
            let libdir = common::library_dir("hip");
            let programs = hip_programs::build_programs(&hipcc);
            Some((libdir, programs))
        })
        .as_ref()
}

/// Runs `hip_check <section> [args]` (`rocprim_check` for its sections) on the emulated device (`sysfs`: a captured topology),
/// with `HSA_RT_LOG=1`.
fn run(section: &str, args: &[&Path], sysfs: Option<&Path>) -> Option<Output> {
    let Some((libdir, programs)) = programs() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return None;
    };
    let exe = match hip_programs::program(section, programs) {
        Ok((exe, _)) => exe,
        Err(skipped) => {
            println!("{skipped}");
            return None;
        }
    };
    let mut cmd = Command::new(exe);
    cmd.arg(section)
        .args(args)
        .env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_EMULATION")
        // The emulated device then prints each queue error with its instruction.
        .env("HSA_RT_LOG", "1")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_PROFILE");
    if let Some(dir) = sysfs {
        cmd.env("HSA_RT_SYSFS", dir);
    }
    Some(cmd.output().expect("run hip_check"))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a section and asserts it printed `hip_check: <section> ok` and exited 0 — or, for a
/// section of [`ISA_GAPS`], stopped with exactly the gap's status and instruction.
fn check(section: &str) {
    let Some(programs) = programs().map(|(_, p)| p) else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    let args = hip_programs::section_args(section, programs);
    let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    let sysfs = match hip_programs::section_topology(section) {
        Ok(t) => t,
        Err(skipped) => {
            println!("{skipped}");
            return;
        }
    };
    let Some(out) = run(section, &args, sysfs.as_deref()) else {
        return;
    };
    let (stdout, stderr) = text(&out);
    match hip_programs::outcome(section, &out) {
        Outcome::Passed => {}
        Outcome::IsaGap(missing) => {
            let gap = ISA_GAPS.iter().find(|g| g.section == section).unwrap();
            // This library reports the queue error's detail (HSA_RT_LOG) before HIP aborts.
            assert!(stderr.contains(gap.detail), "{stdout}\n{stderr}");
            println!(
                "expected failure: {missing}, which the gfx9 interpreter does not execute yet \
                 (the queue stopped with: {})",
                gap.detail
            );
        }
        other => panic!("hip_check {section}: {other:?}"),
    }
}

/// Runs every section of [`hip_programs::profile_sections`] on the emulated device's built-in
/// profile `profile` (`HSA_RT_PROFILE`) and asserts each one's expected outcome (passing, or
/// the `fault` section's memory fault); `vector_add` runs with `HSA_RT_LOG=debug` and must
/// have loaded the code object of `profile`'s processor (the loader refuses any other on that
/// agent) and interpreted its kernel on that processor.
fn check_profile(profile: &str) {
    let Some((libdir, programs)) = programs() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    let mut failures = Vec::new();
    for (section, args) in hip_programs::profile_sections(programs) {
        let (exe, _) = hip_programs::program(section, programs).expect("built");
        let log = if section == "vector_add" {
            "debug"
        } else {
            "1"
        };
        let out = Command::new(exe)
            .arg(section)
            .args(&args)
            .env("LD_LIBRARY_PATH", libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env("HSA_RT_PROFILE", profile)
            .env("HSA_RT_LOG", log)
            .env_remove("HSA_RT_EMULATION")
            .env_remove("HSA_RT_SYSFS")
            .output()
            .expect("run a HIP program");
        let outcome = hip_programs::outcome(section, &out);
        if !hip_programs::expected(section, &outcome) {
            failures.push(format!("{section}: {outcome:?}"));
        } else if let Outcome::IsaGap(missing) = outcome {
            println!("{profile} {section}: expected failure: {missing}");
        }
        if section == "vector_add" {
            let stderr = String::from_utf8_lossy(&out.stderr);
            for want in [
                format!("hsa-rt: code object for {profile}:"),
                format!(" interpreted on {profile}: "),
            ] {
                if !stderr.contains(&want) {
                    failures.push(format!("vector_add: no {want:?} in\n{stderr}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "on {profile}: {failures:#?}");
}

/// Every section but `multigpu` on the emulated gfx900 (the MI210-like machine with a gfx900
/// agent), HIP loading the fat binary's gfx900 code object.
#[test]
fn hip_and_rocprim_sections_on_gfx900() {
    check_profile("gfx900");
}

/// Every section but `multigpu` on the emulated MI60 (gfx906), from its gfx906 code object.
#[test]
fn hip_and_rocprim_sections_on_gfx906() {
    check_profile("gfx906");
}

/// Every section but `multigpu` on the emulated MI100 (gfx908), from its gfx908 code object.
#[test]
fn hip_and_rocprim_sections_on_gfx908() {
    check_profile("gfx908");
}

/// `vector_add` with `HSA_RT_SYSFS` on `testdata/kfd-topology/mi100-gpu-only` (one gfx908
/// GPU node, no CPU node), which the emulated device completes with the CPU node amdkfd
/// always reports: HIP finds the MI100 and runs the gfx908 kernel. Before, HIP found no
/// device (the platform's open failed on the event page's GTT memory, which the emulated
/// device bounded by CPU nodes' banks).
#[test]
fn hip_vector_add_on_a_gpu_only_capture() {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/kfd-topology/mi100-gpu-only/topology");
    let Some(out) = run("vector_add", &[], Some(&tree)) else {
        return;
    };
    assert_eq!(
        hip_programs::outcome("vector_add", &out),
        Outcome::Passed,
        "{:?}",
        text(&out)
    );
}

/// `hip/hip_soak.hip` on the emulated device: 3 host threads each create and destroy streams,
/// events, device and pinned buffers and a module per round while launching kernels and
/// copying, every element checked; afterwards the emulated device's buffer objects are back to
/// their bytes after the warm-up round exactly and the resident set within 48 MiB. Short by
/// default (4 rounds); `HSA_RT_SOAK_ROUNDS=N` runs the long form.
#[test]
fn hip_soak_creates_and_destroys_while_launching_and_leaks_nothing() {
    let Some((libdir, programs)) = programs() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    let hipcc = hip_programs::hipcc().expect("hipcc");
    let exe = hip_programs::build_soak(&hipcc);
    let rounds = std::env::var("HSA_RT_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&r| r > 0)
        .unwrap_or(4)
        .to_string();
    let out = Command::new(exe)
        .arg(&programs.module_co)
        .args(["3", &rounds])
        .env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_LOG", "1")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_PROFILE")
        .output()
        .expect("run hip_soak");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(
        stdout.starts_with(&format!("hip_soak: ok: 3 threads x {rounds} rounds; ")),
        "{stdout}"
    );
    println!("{}", stdout.trim());
}

#[test]
fn hip_vector_add() {
    check("vector_add");
}

#[test]
fn hip_static_and_dynamic_shared_memory() {
    check("shared");
}

/// Pitched allocations, which HIP 5.2 allows only where the runtime has the image extension:
/// `hipDeviceAttributeImageSupport` 1, `hipMallocPitch` rows padded to 256 bytes and filled by
/// a kernel through the pitch, `hipMalloc3D` + `hipMemset3D` + `hipMemcpy3D` of a sub-box
/// against the host's expected bytes.
#[test]
fn hip_pitched_allocations_through_the_image_extension() {
    check("pitched");
}

/// Images through HIP: `hipMallocArray`, `hipMemcpy2DToArray`, a texture object read with
/// `tex2D` (point sampling, unnormalized coordinates), a surface object written with
/// `surf2Dwrite` and read back with `hipMemcpy2DFromArray`, bilinear filtering with
/// normalized coordinates, and `tex1Dfetch` from a texture over linear memory (a 1DB image's
/// buffer resource), against the host's values. The image instructions (MIMG) run in the
/// interpreter over the image extension's linear T#.
#[test]
fn hip_textures_and_surfaces() {
    check("images");
}

/// hipMemcpy host to device, device to device and back, 1 byte to 64 MiB at aligned and odd
/// offsets; host to host; `hipMemcpyDefault` in every direction; `hipMemcpyAsync` of every
/// direction on one stream; `hipMemcpy2D` / `hipMemcpy2DAsync` between pitched arrays (the
/// device-to-host one through `hsa_amd_memory_async_copy_rect`).
#[test]
fn hip_memcpy_every_direction_1_byte_to_64_mib() {
    check("memcpy");
}

/// `hipMemset`, `hipMemsetD8/D16/D32` and their async forms, whole buffers and ranges at
/// unaligned starts with odd counts over a known background.
#[test]
fn hip_memset_of_every_width() {
    check("memset");
}

/// Two streams ordered by `hipStreamWaitEvent`, async copies, and `hipEventElapsedTime` of a
/// kernel between two events (HIP reads the events' barrier-packet timestamps with
/// `hsa_amd_profiling_get_dispatch_time`): at least the span of the device clock (`clock64`,
/// at `clockInstructionRate`) from the kernel's first work-group start to its last end, at
/// most the host's time around the run.
#[test]
fn hip_streams_events_and_elapsed_time() {
    check("streams");
}

#[test]
fn hip_host_malloc_and_host_register() {
    check("hostmem");
}

#[test]
fn hip_stream_callbacks() {
    check("callbacks");
}

/// `__device__` variables: `hipMemcpyToSymbol` (and its async form at an offset), a kernel
/// reading and writing them, `hipMemcpyFromSymbol`, `hipGetSymbolAddress`, `hipGetSymbolSize`
/// (HIP finds them among the loaded code object's variable symbols).
#[test]
fn hip_device_variables_through_symbols() {
    check("symbols");
}

#[test]
fn hip_atomics() {
    check("atomics");
}

/// IEEE division and sqrt bit for bit, device-libs math (sin/cos with f64 range reduction,
/// exp, log, pow, atan2) within 2 (pow, atan2: 4) ULP of the host, f32 and f64; and 32/64-bit
/// signed and unsigned integer division and remainder exactly.
#[test]
fn hip_division_and_math_functions() {
    check("math");
}

#[test]
fn hip_device_printf() {
    check("printf");
}

#[test]
fn hip_module_load_and_launch() {
    check("module");
}

/// hipRTC: a kernel compiled from a string at run time (`hiprtcCompileProgram` with
/// `--gpu-architecture=` the device's processor, gfx90a here, through Debian's
/// libamd-comgr2), its code object loaded with `hipModuleLoadData` and launched with
/// `hipModuleLaunchKernel`.
#[test]
fn hiprtc_compile_load_and_launch() {
    check("hiprtc");
}

/// The captured 8-GPU MI210 machine (shared test data): 8 devices, hipSetDevice, a peer copy.
#[test]
fn hip_eight_mi210s_and_a_peer_copy() {
    check("multigpu");
}

/// rocPRIM 5.3.3's `rocprim::reduce` (sum and maximum; DPP row broadcasts, `ds_swizzle_b32`,
/// `ds_bpermute_b32`) on 1 to 30011 ints.
#[test]
fn rocprim_device_reduce() {
    check("rocprim_reduce");
}

/// rocPRIM's `inclusive_scan` and `exclusive_scan` (initial value 7) of ints (also
/// `v_cmp_*_u16` in SDWA form).
#[test]
fn rocprim_device_scans() {
    check("rocprim_scan");
}

/// rocPRIM's `radix_sort_keys` (32-bit unsigned keys) and `radix_sort_pairs` (int keys, their
/// positions as values: stable, as the host's `std::stable_sort`).
#[test]
fn rocprim_radix_sort_keys_and_pairs() {
    check("rocprim_sort");
}

/// rocPRIM's `histogram_even`: 37 bins over [-100, 270), samples outside too.
#[test]
fn rocprim_histogram_even() {
    check("rocprim_histogram");
}

#[test]
fn hip_refuses_an_invalid_launch_configuration() {
    check("badlaunch");
}

/// A faulting kernel stops its queue with the memory fault the emulated device reports; HIP
/// 5.2 prints it and aborts the process (ROCclr's `Device::callbackQueue`).
#[test]
fn hip_faulting_kernel_reports_the_queue_error() {
    let Some(out) = run("fault", &[], None) else {
        return;
    };
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("FAIL"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT"),
        "{stderr}"
    );
}
