//! The project's HIP test programs, shared by `capi/tests/hip.rs` (run on this library) and
//! `kfd-emu/tests/hip.rs` (run on Debian's libhsa-runtime64 under kfd-emu, and compared with
//! this library): `capi/hip/hip_check.hip`, the code-object file `capi/hip/module_kernels.hip`
//! and `capi/hip/rocprim_check.hip` (rocPRIM's device algorithms, Debian's librocprim-dev
//! 5.3.3), built with Debian's hipcc (HIP 5.2.3) as fat binaries for every processor of
//! [`HIPCC_ARCHS`] (HIP's runtime loads the code object of the agent's processor); the
//! sections of both programs, each run in its own process (HIP aborts the process on a queue
//! error); the emulated device's profiles they run on besides the default MI210-like gfx90a
//! ([`PROFILES`], [`profile_sections`]); and what each section's run means ([`outcome`]).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `capi/hip`, from either crate (both are directories of the workspace root).
pub const HIP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../capi/hip");

/// The 8-GPU MI210 capture of the shared test data (the `multigpu` section's topology),
/// under `$HSA_RT_SHARED`, else under `../shared` beside the workspace
/// (`hsa_test_support::shared`).
pub fn eight_mi210s() -> PathBuf {
    hsa_test_support::shared::shared_dir()
        .join("testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology")
}

/// The processors hipcc compiles the programs for, one `--offload-arch=` each, into one fat
/// binary (a clang offload bundle of one code object per processor). Debian's hipcc (clang
/// 15) stops before gfx942; a gfx942 build (clang-19) is a build of its own.
pub const HIPCC_ARCHS: [&str; 4] = ["gfx900", "gfx906", "gfx908", "gfx90a"];

/// The emulated device's built-in profiles (`HSA_RT_PROFILE`, `kfd-emu --profile`) the
/// hipcc-built programs run on besides the default one (the MI210-like gfx90a): each profile's
/// name is the processor its GPU agent reports, whose code object of the fat binary HIP must
/// load (`hsa_emu::device::builtin_topology_for`: gfx900 on the MI210-like machine, gfx906 an
/// MI60, gfx908 an MI100).
pub const PROFILES: [&str; 3] = ["gfx900", "gfx906", "gfx908"];

/// Largest size `rocprim_sort` sorts on a profile of [`PROFILES`] (`rocprim_check
/// rocprim_sort 4097`: 1, 1000 and 4097 elements, several blocks with a partial last one):
/// its 30011-element sorts take a minute in the interpreter, so they run on the default
/// profile only.
pub const PROFILE_SORT_MAX: &str = "4097";

/// The sections a profile of [`PROFILES`] runs, with their arguments after the section's name:
/// every section of [`SECTIONS`] but `multigpu` (its topology is the 8-MI210 capture) and
/// every section of [`ROCPRIM_SECTIONS`] (`rocprim_sort` up to [`PROFILE_SORT_MAX`]
/// elements). `rocprim_*` sections are left out without librocprim-dev.
pub fn profile_sections(programs: &Programs) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    for section in SECTIONS.iter().chain(&ROCPRIM_SECTIONS) {
        if *section == "multigpu"
            || (section.starts_with("rocprim_") && programs.rocprim_check.is_none())
        {
            continue;
        }
        let mut args: Vec<String> = section_args(section, programs)
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if *section == "rocprim_sort" {
            args.push(PROFILE_SORT_MAX.to_owned());
        }
        out.push((*section, args));
    }
    out
}

/// Every section of hip_check that is a test (`launch_loop` is B8's bench, not listed).
pub const SECTIONS: [&str; 18] = [
    "vector_add",
    "shared",
    "memcpy",
    "memset",
    "pitched",
    "images",
    "streams",
    "hostmem",
    "callbacks",
    "symbols",
    "atomics",
    "math",
    "printf",
    "module",
    "hiprtc",
    "multigpu",
    "badlaunch",
    "fault",
];

/// The sections of rocprim_check: rocPRIM 5.3.3's `reduce` (sum and maximum),
/// `inclusive_scan` and `exclusive_scan`, `radix_sort_keys` and `radix_sort_pairs`, and
/// `histogram_even`, each on 1, 1000, 4097 and 30011 elements against the host's results.
pub const ROCPRIM_SECTIONS: [&str; 4] = [
    "rocprim_reduce",
    "rocprim_scan",
    "rocprim_sort",
    "rocprim_histogram",
];

/// A section that fails only because the gfx9 interpreter lacks an instruction: the
/// section, the status the queue stops with (HIP's abort message names it), the interpreter's
/// words for the instruction (in the queue error's detail), and what is missing.
pub struct IsaGap {
    pub section: &'static str,
    pub status: &'static str,
    pub detail: &'static str,
    pub missing: &'static str,
}

/// The sections that fail only for a gap of the interpreter: none today (device `printf`,
/// the last, runs since the interpreter delivers `s_sendmsg sendmsg(MSG_INTERRUPT)`, HIP
/// 5.2's hostcall doorbell). A section listed here passes either way, but only with exactly
/// the gap's error when it fails.
pub const ISA_GAPS: [IsaGap; 0] = [];

/// What the `printf` section's kernels print (`hello(42)` from lane 0, `hello_formats(1.25,
/// "hello")` from lanes 0..3, in `hip_check.hip`): the section passes only when stdout holds
/// each line exactly once.
pub const PRINTF_LINES: [&str; 4] = [
    "hip_check: hello from the device: 42\n",
    "hip_check: t=0 f=0.000 s=hello x=0 c=a ll=0\n",
    "hip_check: t=1 f=1.250 s=hello x=0xff c=b ll=1099511627776\n",
    "hip_check: t=2 f=2.500 s=hello x=0x1fe c=c ll=2199023255552\n",
];

/// What a run of a section showed.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0 with `hip_check: <section> ok` (`rocprim_check: <section> ok`).
    Passed,
    /// The section's [`IsaGap`]: HIP aborted in its queue callback with the gap's status.
    IsaGap(&'static str),
    /// The `fault` section's kernel read address 0x1000 and the process aborted reporting a
    /// GPU memory fault: through the queue's error callback (HIP: `callbackQueue aborting
    /// with error : HSA_STATUS_ERROR_MEMORY_FAULT`), or through the runtime's VM-fault
    /// handler on KFD's memory event (ROCR: `Memory access fault by GPU node-N ... on
    /// address 0x1000`).
    MemoryFault,
    /// Anything else, with the output.
    Failed(String),
}

/// `hipcc` on `PATH`, or `None`.
pub fn hipcc() -> Option<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", "command -v hipcc"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Compiles `capi/hip/<src>` with hipcc for every processor of [`HIPCC_ARCHS`] (`extra`
/// before the source) into `<cache>/<out>-<key>`, or finds it there already: `<cache>` is
/// `hip-programs` in cargo's workspace-wide test directory (`CARGO_TARGET_TMPDIR`), `<key>` a
/// hash of hipcc's arguments, the source's text and `hipcc --version`, so that
/// `capi/tests/hip.rs` and `kfd-emu/tests/hip.rs` (and a second run) compile each program
/// once. Written under a temporary name and renamed, so a reader never sees half a file.
fn build(hipcc: &Path, src: &str, out: &str, extra: &[&str]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source = Path::new(HIP_DIR).join(src);
    let mut args: Vec<String> = HIPCC_ARCHS
        .iter()
        .map(|a| format!("--offload-arch={a}"))
        .collect();
    args.extend(extra.iter().map(|e| (*e).to_owned()));
    let mut h = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut h);
    std::fs::read(&source)
        .expect("read the HIP source")
        .hash(&mut h);
    if let Ok(v) = Command::new(hipcc).arg("--version").output() {
        v.stdout.hash(&mut h);
    }
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hip-programs");
    std::fs::create_dir_all(&cache).expect("create the HIP programs' cache");
    let exe = cache.join(format!("{out}-{:016x}", h.finish()));
    if exe.is_file() {
        return exe;
    }
    let partial = cache.join(format!("{out}.{}.partial", std::process::id()));
    let o = Command::new(hipcc)
        .args(&args)
        .arg(&source)
        .arg("-o")
        .arg(&partial)
        .output()
        .expect("run hipcc");
    assert!(
        o.status.success(),
        "hipcc {src} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&partial, &exe).expect("rename the built program");
    exe
}

/// The built programs.
pub struct Programs {
    /// `hip_check`, linked (as hipcc links) to libamdhip64, which loads
    /// `libhsa-runtime64.so.1` by its soname.
    pub hip_check: PathBuf,
    /// `module_kernels.co`, the code-object file of the `module` section (with several
    /// processors, a clang offload bundle, which `hipModuleLoad` unbundles).
    pub module_co: PathBuf,
    /// `rocprim_check` (built with `-std=c++17`, which rocPRIM 5.3's headers need); `None`
    /// without `/usr/include/rocprim/rocprim.hpp` (Debian's librocprim-dev).
    pub rocprim_check: Option<PathBuf>,
}

/// Builds hip_check, the module's code object and rocprim_check with `hipcc` (or finds them
/// built: see `build`).
pub fn build_programs(hipcc: &Path) -> Programs {
    Programs {
        hip_check: build(hipcc, "hip_check.hip", "hip_check", &[]),
        module_co: build(
            hipcc,
            "module_kernels.hip",
            "module_kernels.co",
            &["--genco"],
        ),
        rocprim_check: Path::new(ROCPRIM_HEADER)
            .is_file()
            .then(|| build(hipcc, "rocprim_check.hip", "rocprim_check", &["-std=c++17"])),
    }
}

/// Builds `hip/hip_soak.hip` with `hipcc` (or finds it built: see `build`).
pub fn build_soak(hipcc: &Path) -> PathBuf {
    build(hipcc, "hip_soak.hip", "hip_soak", &[])
}

/// The header of Debian's librocprim-dev that rocprim_check needs.
pub const ROCPRIM_HEADER: &str = "/usr/include/rocprim/rocprim.hpp";

/// The program `section` is a section of, and the name it prints its result line with;
/// `Err` with a `skipped: ...` line when that program could not be built.
pub fn program<'a>(
    section: &str,
    programs: &'a Programs,
) -> Result<(&'a Path, &'static str), String> {
    if !section.starts_with("rocprim_") {
        return Ok((&programs.hip_check, "hip_check"));
    }
    match &programs.rocprim_check {
        Some(exe) => Ok((exe, "rocprim_check")),
        None => Err(format!(
            "skipped: {ROCPRIM_HEADER} not found (install librocprim-dev)"
        )),
    }
}

/// The arguments of `section` after its name.
pub fn section_args(section: &str, programs: &Programs) -> Vec<PathBuf> {
    match section {
        "module" => vec![programs.module_co.clone()],
        _ => Vec::new(),
    }
}

/// The captured topology `section` runs on (`multigpu`: the 8-GPU capture), `None` for the
/// built-in device; `Err` with a `skipped: ...` line when the capture is missing.
pub fn section_topology(section: &str) -> Result<Option<PathBuf>, String> {
    if section != "multigpu" {
        return Ok(None);
    }
    let dir = eight_mi210s();
    if dir.is_dir() {
        Ok(Some(dir))
    } else {
        Err(format!("skipped: {} not found", dir.display()))
    }
}

/// What the run of `section` that printed `out` showed.
pub fn outcome(section: &str, out: &Output) -> Outcome {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let printed =
        section != "printf" || PRINTF_LINES.iter().all(|l| stdout.matches(l).count() == 1);
    let name = if section.starts_with("rocprim_") {
        "rocprim_check"
    } else {
        "hip_check"
    };
    if out.status.success() && stdout.contains(&format!("{name}: {section} ok\n")) && printed {
        return Outcome::Passed;
    }
    if !out.status.success() && !stdout.contains("FAIL") {
        if let Some(gap) = ISA_GAPS.iter().find(|g| {
            g.section == section
                && stderr.contains(&format!("callbackQueue aborting with error : {}", g.status))
        }) {
            return Outcome::IsaGap(gap.missing);
        }
        let queue_error =
            stderr.contains("callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT");
        let vm_fault = stderr.contains("Memory access fault by GPU node-")
            && stderr.contains("on address 0x1000.");
        if section == "fault" && (queue_error || vm_fault) {
            return Outcome::MemoryFault;
        }
    }
    Outcome::Failed(format!("{}:\n{stdout}\n{stderr}", out.status))
}

/// The outcomes `section` may have: passing, or its known failure.
pub fn expected(section: &str, outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Passed => section != "fault",
        Outcome::IsaGap(_) => true,
        Outcome::MemoryFault => section == "fault",
        Outcome::Failed(_) => false,
    }
}
