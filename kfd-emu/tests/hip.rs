//! The project's HIP test programs (capi's `hip_programs`: `capi/hip/hip_check.hip` and
//! `capi/hip/rocprim_check.hip`, built with Debian's hipcc for gfx900, gfx906, gfx908 and
//! gfx90a in one fat binary), linked as hipcc links them — Debian's libamdhip64 (HIP 5.2.3),
//! which loads `libhsa-runtime64.so.1` — run twice per section, on the emulated device (the
//! MI210-like gfx90a; some also on the built-in gfx906, gfx900 and gfx908 profiles, which ROCR
//! 5.2 supports too): on hsa-rt's library (`LD_LIBRARY_PATH`, `HSA_RT_DEVICE=emulated`), and on
//! Debian's ROCR 5.2.3 with its libhsakmt under kfd-emu (the emulated amdkfd and CP). Each
//! section must pass on both, or fail the same known way on both ([`hip_programs::outcome`]:
//! the `fault` section's memory fault, which ROCR reports from its VM-fault handler and
//! hsa-rt through the queue's error callback). Device `printf` (HIP's hostcall: the kernel's
//! `s_sendmsg sendmsg(MSG_INTERRUPT)` wakes the host's listener through the emulated KFD's
//! signal event) must print its line on both.
//!
//! ROCR runs as it does by default, with SDMA: its copies between host and device go
//! through SDMA queues, which the emulated device's SDMA engine runs
//! ([`rocr_copies_through_sdma_queues`] checks they really do); its other copies through
//! its blit kernels (gfx90a machine code embedded in ROCR), which run in the emulated CP's
//! gfx9 interpreter, as HIP's own kernels do.
//!
//! Skips (`skipped: ...`) without hipcc (`hipcc`, `libamdhip64-dev`, `rocm-device-libs`),
//! or where kfd-emu cannot make its mount namespace (neither root nor user namespaces).

#[path = "../../capi/tests/hip_programs/mod.rs"]
mod hip_programs;

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use hip_programs::{Outcome, Programs};

/// The programs and a directory holding hsa-rt's library as `libhsa-runtime64.so.1`, built
/// once for all the tests; `None` without hipcc.
fn built() -> Option<&'static (PathBuf, Programs)> {
    static BUILT: OnceLock<Option<(PathBuf, Programs)>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let hipcc = hip_programs::hipcc()?;
            let dir = common::capi_library_dir();
            let programs = hip_programs::build_programs(&hipcc);
            Some((dir, programs))
        })
        .as_ref()
}

/// `hip_check SECTION ARGS` on hsa-rt's library (the emulated device; `sysfs`: a capture),
/// with `envs` set.
fn on_ours(
    libdir: &Path,
    exe: &Path,
    args: &[String],
    sysfs: Option<&Path>,
    envs: &[(&str, String)],
) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_LOG", "1")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_PROFILE");
    if let Some(dir) = sysfs {
        cmd.env("HSA_RT_SYSFS", dir);
    }
    cmd.envs(envs.iter().map(|(k, v)| (k, v)));
    cmd.output().expect("run hip_check")
}

/// Runs each of `sections` (those of [`hip_programs::profile_sections`]) on the built-in
/// profile `profile` on both libraries (`HSA_RT_PROFILE`; `kfd-emu --profile`) and asserts
/// the same expected outcome on both.
fn profile_on_both(profile: &str, sections: &[&str]) {
    let Some((libdir, programs)) = built() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    for (section, args) in hip_programs::profile_sections(programs) {
        if !sections.contains(&section) {
            continue;
        }
        let (exe, _) = hip_programs::program(section, programs).expect("built");
        let mut argv = vec![section.to_owned()];
        argv.extend(args);
        let options = ["--profile".to_owned(), profile.to_owned()];
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let Some(rocr) = common::kfd_emu_with(&options, &[], exe, &args) else {
            return;
        };
        let ours = Command::new(exe)
            .args(&argv)
            .env("LD_LIBRARY_PATH", libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env("HSA_RT_PROFILE", profile)
            .env("HSA_RT_LOG", "1")
            .env_remove("HSA_RT_EMULATION")
            .env_remove("HSA_RT_SYSFS")
            .output()
            .expect("run a HIP program");
        let (ours, rocr) = (
            hip_programs::outcome(section, &ours),
            hip_programs::outcome(section, &rocr),
        );
        assert!(
            hip_programs::expected(section, &rocr),
            "{section} on {profile} on Debian's ROCR under kfd-emu: {rocr:?}"
        );
        assert!(
            hip_programs::expected(section, &ours),
            "{section} on {profile} on hsa-rt: {ours:?}"
        );
        assert_eq!(ours, rocr, "{section} on {profile}: hsa-rt, then ROCR");
    }
}

/// Every section of `hip_programs::profile_sections` (all but `multigpu`; rocPRIM's sorts up
/// to 4097 elements) on the emulated MI60 (gfx906), on both libraries; but `images`, which
/// stops at ROCR's tiled image layouts (`hip_images_on_both`).
#[test]
fn hip_and_rocprim_sections_on_gfx906_on_both() {
    profile_on_both(
        "gfx906",
        &hip_programs::SECTIONS
            .iter()
            .chain(&hip_programs::ROCPRIM_SECTIONS)
            .copied()
            .filter(|s| *s != "images")
            .collect::<Vec<_>>(),
    );
}

/// vector_add, atomics, printf and rocPRIM's reduce on the emulated gfx900 and MI100
/// (gfx908), on both libraries (the full list runs on hsa-rt in `capi/tests/hip.rs`).
#[test]
fn hip_sections_on_gfx900_and_gfx908_on_both() {
    for profile in ["gfx900", "gfx908"] {
        profile_on_both(
            profile,
            &["vector_add", "atomics", "printf", "rocprim_reduce"],
        );
    }
}

/// `hip_check ARGS` on Debian's ROCR under kfd-emu (`sysfs`: a capture; `envs` added);
/// `None` (said) when kfd-emu cannot make its namespace.
fn on_rocr(
    exe: &Path,
    args: &[String],
    sysfs: Option<&Path>,
    envs: &[(&str, String)],
    trace: Option<&Path>,
) -> Option<Output> {
    let mut options = Vec::new();
    if let Some(dir) = sysfs {
        options.extend(["--sysfs".to_owned(), dir.to_string_lossy().into_owned()]);
    }
    if let Some(file) = trace {
        options.extend(["--trace".to_owned(), file.to_string_lossy().into_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::kfd_emu_with(&options, envs, exe, &args)
}

/// What a run of `section` needs: hsa-rt's library directory, the program, its arguments
/// (the section's name first) and the section's topology; `None` after a `skipped: ...` line
/// when hipcc, the program or the topology is missing.
fn prepare(section: &str) -> Option<(&'static Path, &'static Path, Vec<String>, Option<PathBuf>)> {
    let Some((libdir, programs)) = built() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return None;
    };
    let sysfs = match hip_programs::section_topology(section) {
        Ok(t) => t,
        Err(skipped) => {
            println!("{skipped}");
            return None;
        }
    };
    let exe = match hip_programs::program(section, programs) {
        Ok((exe, _)) => exe,
        Err(skipped) => {
            println!("{skipped}");
            return None;
        }
    };
    let mut args = vec![section.to_owned()];
    args.extend(
        hip_programs::section_args(section, programs)
            .iter()
            .map(|p| p.to_string_lossy().into_owned()),
    );
    Some((libdir, exe, args, sysfs))
}

/// Runs `section` on both libraries and asserts the same expected outcome.
fn same_on_both(section: &str) {
    same_on_both_with(section, &[]);
}

/// [`same_on_both`] with `envs` set for both runs; the runs' output (hsa-rt's, then ROCR's
/// under kfd-emu), or `None` after a `skipped: ...` line.
fn same_on_both_with(section: &str, envs: &[(&str, String)]) -> Option<(Output, Output)> {
    let (libdir, exe, args, sysfs) = prepare(section)?;
    let rocr_out = on_rocr(exe, &args, sysfs.as_deref(), envs, None)?;
    let out = on_ours(libdir, exe, &args, sysfs.as_deref(), envs);
    let (ours, rocr) = (
        hip_programs::outcome(section, &out),
        hip_programs::outcome(section, &rocr_out),
    );
    assert!(
        hip_programs::expected(section, &rocr),
        "{section} on Debian's ROCR under kfd-emu: {rocr:?}"
    );
    assert!(
        hip_programs::expected(section, &ours),
        "{section} on hsa-rt: {ours:?}"
    );
    assert_eq!(ours, rocr, "{section}: hsa-rt, then ROCR");
    if ours != Outcome::Passed {
        println!("{section}: the same known failure on both: {ours:?}");
    }
    Some((out, rocr_out))
}

/// With the emulated device's cache model on (`HSA_RT_CACHE_MODEL=1`, issue 38: coarse-grained
/// memory behind an L2 that only system-scope fences make coherent), the sections that move
/// data between host, kernels and copy engines still pass on Debian's ROCR 5.2.3 under kfd-emu
/// and on hsa-rt: HIP and both runtimes put the fences silicon needs. Both emulated devices'
/// logs (hsa-rt's library's, kfd-emu's preload's) show the model was on, and on ROCR, whose
/// buffers are coarse-grained VRAM, that the L2 wrote lines back.
#[test]
fn hip_sections_with_the_cache_model_on_both() {
    let envs = [
        ("HSA_RT_CACHE_MODEL", "1".to_owned()),
        ("HSA_RT_LOG", "debug".to_owned()),
    ];
    for section in [
        "vector_add",
        "memset",
        "streams",
        "hostmem",
        "callbacks",
        "atomics",
    ] {
        let Some((ours, rocr)) = same_on_both_with(section, &envs) else {
            return;
        };
        for (who, out) in [("hsa-rt", &ours), ("ROCR under kfd-emu", &rocr)] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("cache model on (HSA_RT_CACHE_MODEL=1)"),
                "{section} on {who}: {stderr}"
            );
        }
        // The last dispatch's line counts the lines written back before it.
        let rocr = String::from_utf8_lossy(&rocr.stderr);
        let written_back = rocr
            .rsplit_once("written_back: ")
            .and_then(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok());
        assert!(
            written_back.is_some_and(|n| n > 0),
            "{section} on ROCR under kfd-emu: {rocr}"
        );
    }
}

#[test]
fn hip_vector_add_on_both() {
    same_on_both("vector_add");
}

#[test]
fn hip_shared_memory_on_both() {
    same_on_both("shared");
}

/// hipMemcpy of every kind, 1 byte to 64 MiB: on ROCR every copy is a blit kernel run by the
/// interpreter (the slowest of these tests).
#[test]
fn hip_memcpy_on_both() {
    same_on_both("memcpy");
}

#[test]
fn hip_memset_on_both() {
    same_on_both("memset");
}

/// Pitched allocations (`hipMallocPitch`, `hipMalloc3D`, `hipMemset3D`, `hipMemcpy3D`), which
/// HIP 5.2 allows only where the runtime has the image extension: both libraries have it.
#[test]
fn hip_pitched_on_both() {
    same_on_both("pitched");
}

/// Textures and surfaces (`hipMallocArray`, `hipMemcpy2DToArray`, `tex2D`, `surf2Dwrite`,
/// bilinear `tex2D`, `tex1Dfetch`): image instructions over each runtime's image descriptors,
/// every texel checked against the value the host computed. hsa-rt's images are linear;
/// Debian's ROCR 5.2.3 lays a gfx90a image out through addrlib in a swizzled mode (SW_MODE
/// 22, `SW_4KB_D_X`, with the pipe/bank XOR of the MI210's `GB_ADDR_CONFIG` 0x22194042),
/// which the interpreter addresses as addrlib does (`hsa_gfx9::tiling`); before it did, the
/// first image instruction (ROCclr's `copyBufferToImage` blit) stopped ROCR's queue with
/// `ILLEGAL_INSTRUCTION` naming the `SW_MODE`.
#[test]
fn hip_images_on_both() {
    same_on_both("images");
}

/// Streams, `hipStreamWaitEvent`, and `hipEventElapsedTime` covering the kernel's own
/// device-clock span (the emulated CP's packet timestamps and the shader clock in one tick
/// domain, converted by each runtime's `hsa_amd_profiling_get_dispatch_time`).
#[test]
fn hip_streams_and_events_on_both() {
    same_on_both("streams");
}

#[test]
fn hip_host_malloc_and_register_on_both() {
    same_on_both("hostmem");
}

#[test]
fn hip_stream_callbacks_on_both() {
    same_on_both("callbacks");
}

/// `__device__` variables through hipMemcpyToSymbol / FromSymbol / GetSymbolAddress.
#[test]
fn hip_device_variables_on_both() {
    same_on_both("symbols");
}

#[test]
fn hip_atomics_on_both() {
    same_on_both("atomics");
}

#[test]
fn hip_division_and_math_on_both() {
    same_on_both("math");
}

#[test]
fn hip_device_printf_on_both() {
    same_on_both("printf");
}

#[test]
fn hip_module_load_and_launch_on_both() {
    same_on_both("module");
}

/// hipRTC: compiled at run time, loaded with hipModuleLoadData, launched.
#[test]
fn hiprtc_on_both() {
    same_on_both("hiprtc");
}

/// The captured 8-GPU MI210 machine: 8 devices, hipSetDevice, a peer copy.
#[test]
fn hip_eight_mi210s_on_both() {
    same_on_both("multigpu");
}

/// rocPRIM 5.3.3's device reduce (sum and maximum) on 1 to 30011 ints.
#[test]
fn rocprim_device_reduce_on_both() {
    same_on_both("rocprim_reduce");
}

/// rocPRIM's inclusive and exclusive scans on 1 to 30011 ints.
#[test]
fn rocprim_device_scans_on_both() {
    same_on_both("rocprim_scan");
}

/// rocPRIM's radix sorts (keys; int keys with values) on 1 to 30011 elements.
#[test]
fn rocprim_radix_sort_on_both() {
    same_on_both("rocprim_sort");
}

/// rocPRIM's `histogram_even` on 1 to 30011 samples.
#[test]
fn rocprim_histogram_on_both() {
    same_on_both("rocprim_histogram");
}

#[test]
fn hip_invalid_launch_configuration_on_both() {
    same_on_both("badlaunch");
}

/// The kernel reads address 0x1000. On a GPU the VM raises its fault interrupt before anything
/// tells a waiter that the queue stopped, and ROCR (which handles both on one thread, the VM
/// fault first when both are pending) prints the fault and aborts. The emulated device raised
/// KFD's memory event only after waking the queue's inactive signal, and in 3 runs of 8 HIP
/// reported the stored memory-violation code from its queue callback
/// (`HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`) instead: three runs, each must report the
/// fault.
#[test]
fn hip_faulting_kernel_on_both() {
    for _ in 0..3 {
        same_on_both("fault");
    }
}

/// ROCR's default path: it asks the emulated amdkfd for SDMA queues (`CREATE_QUEUE` with
/// `KFD_IOC_QUEUE_TYPE_SDMA`, a 1 MiB ring, priority 15), gets them, and copies through them:
/// vector_add's hipMemcpys verify, and the emulated SDMA engine ran packets (the trace's
/// `stats` line at exit).
#[test]
fn rocr_copies_through_sdma_queues() {
    let Some((_, programs)) = built() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    let trace = std::env::temp_dir().join(format!("kfd-emu-hip-sdma-{}.trace", std::process::id()));
    let _ = std::fs::remove_file(&trace);
    let args = ["vector_add".to_owned()];
    let Some(out) = on_rocr(&programs.hip_check, &args, None, &[], Some(&trace)) else {
        return;
    };
    assert_eq!(hip_programs::outcome("vector_add", &out), Outcome::Passed);
    let trace = std::fs::read_to_string(&trace).expect("read the trace");
    let creates: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("AMDKFD_IOC_CREATE_QUEUE"))
        .collect();
    assert!(
        creates.iter().any(|l| l.contains("queue_type: 1,")
            && l.contains("ring_size: 1048576,")
            && l.contains("-> 0 ")),
        "{creates:#?}"
    );
    let stats = trace
        .lines()
        .find(|l| l.contains(" stats "))
        .expect("the stats line at exit");
    let sdma: u64 = stats
        .split("sdma_packets=")
        .nth(1)
        .and_then(|v| v.trim().parse().ok())
        .expect("sdma_packets");
    assert!(sdma > 0, "{stats}");
}

/// B8's HIP program runs on both (a few launches: that it works, not how fast).
#[test]
fn b8_hip_launch_loop_runs_on_both() {
    let Some((libdir, programs)) = built() else {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    };
    let args = ["launch_loop".to_owned(), "10".to_owned()];
    let Some(rocr) = on_rocr(&programs.hip_check, &args, None, &[], None) else {
        return;
    };
    let ours = on_ours(libdir, &programs.hip_check, &args, None, &[]);
    for (who, out) in [("hsa-rt", ours), ("ROCR", rocr)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("hip_check: launch_loop 10 launches, "),
            "{who}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
