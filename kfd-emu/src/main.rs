//! `kfd-emu [--sysfs DIR | --profile NAME] [--trace FILE | --model] [--] COMMAND [ARGS...]`
//!
//! Runs COMMAND — Debian's unmodified `rocminfo`, or any program of ROCm's user space
//! (libhsakmt, libhsa-runtime64) — with hsa-emu's emulated device standing in for amdkfd and
//! the GPU:
//!
//! - in a private mount namespace (root: a mount namespace; others: a user namespace too),
//!   the KFD sysfs topology at `/sys/devices/virtual/kfd/kfd/topology`, written from the
//!   topology the emulated device serves: the built-in profile, or a captured dump
//!   (`--sysfs DIR`) completed as the emulated device completes it (missing `gpu_id`s,
//!   memory banks, `system_properties`);
//! - a fixture `/proc/cpuinfo` naming the CPU nodes as the topology does, and a fixture
//!   `/sys/devices/system/node` holding each CPU node's caches (libhsakmt 5.2 reads CPU caches
//!   there, not from KFD), so that nothing of the host's CPUs reaches the results (on a
//!   kernel without NUMA, where that directory does not exist, libhsakmt reads the host's
//!   `/sys/devices/system/cpu` instead);
//! - an `lsmod` first on `PATH` that lists `amdgpu` (rocminfo 5 runs `lsmod | grep amdgpu`),
//!   and amdgpu's `/sys/module/amdgpu` with `initstate` `live` (rocminfo 7 reads it) and
//!   `version` (the emulated amdkfd's interface version, 1.17);
//! - a fixture `/sys/class/drm` with each GPU's `renderD<minor>/device/ip_discovery` tree
//!   (GC, SDMA0 and NBIF versions, which tinygrad reads; `sysfs::write_ip_discovery`);
//! - each GPU as a PCI function in `/sys/bus/pci/devices`, beside the host's devices (hwloc
//!   looks a GPU up there by the bus id ROCR reports; `sysfs::write_pci_devices`), with its
//!   DRM nodes (`drm/renderD<minor>`, `drm/card<N>`) linked from `/sys/class/drm` and
//!   `/sys/dev/char/226:<minor>` (`sysfs::write_drm_nodes`; the preloaded library answers
//!   `fstat` of a render node as that character device);
//! - any root: `/` need not be a mount point (a chroot into a plain directory), as long as
//!   `/proc` and `/sys` are mounts inside it;
//! - `libkfd_emu_preload.so` preloaded (found beside this binary, or at `$KFD_EMU_PRELOAD`),
//!   which answers `/dev/kfd` and the render nodes from the emulated device (see its docs);
//! - with `--trace FILE`, every ioctl and mmap of those files recorded in FILE.
//!
//! With `--model`, the other way in: nothing is preloaded, and ROCR 7.2.4's own libhsakmt
//! answers the KFD ioctls in its model mode, driving the emulated GPU through AMD's model
//! interface (`libhsa_emu_model.so`, found beside this binary or at `$KFD_EMU_MODEL_LIB`;
//! `hsa_emu::device::model`). kfd-emu writes the model topology libhsakmt needs (each GPU's
//! `gpu_id` its node index + 1; `DebugSupportedFirmware`, capability bit 29, clear: libhsakmt's
//! model implements no debugger runtime; `SVMAPISupported`, bit 27, clear: its SVM ioctl does
//! nothing) under
//! `/sys/devices/virtual/kfd/kfd-emu/model-topology`, and sets `HSA_MODEL_TOPOLOGY` and
//! `HSA_MODEL_LIB`; the namespace's fixtures are as above, plus a `/dev/kfd` that is an empty
//! file (rocminfo 7.2.4 will not start unless it opens read-write; nothing reads it). Which to
//! use:
//! - the preloaded `/dev/kfd` (the default) serves any ROCm user space (ROCR 5.2.3 and 7.2.4,
//!   tinygrad, hsa-rt's own library), every GPU profile, and the emulated amdkfd's checks of
//!   every ioctl, as amdkfd would refuse them;
//! - `--model` needs no `LD_PRELOAD` (programs that are static, setuid, or clear their
//!   environment), and runs the GPU exactly where AMD's own models plug in. ROCR 7.2.4's model
//!   mode only gets through initialisation on GPUs for which ROCR installs no trap handler
//!   without the debugger: `--profile gfx942` (gfx940-942, gfx950, gfx11 and later), and it
//!   answers KFD queries with its own fixed values (apertures, clock counters), not the
//!   emulated amdkfd's.
//!
//! Profiles (`--profile`, `hsa_emu::device::BUILTIN_PROFILES`): `builtin` (the default: the
//! MI210-like gfx90a of `hsa_emu::builtin_topology`), or one of `gfx900`, `gfx906` (an MI60),
//! `gfx908` (an MI100), `gfx90a`, `gfx942`, `gfx1030`, `gfx1100`
//! (`hsa_emu::device::builtin_topology_for`).
//!
//! Exit status: COMMAND's (kfd-emu replaces itself with it); 2 for a usage error; 1 when the
//! namespace or the topology cannot be set up, with a message saying why (e.g. neither root
//! nor user namespaces).
//!
//! ## Examples
//!
//! ROCm programs on the emulated device, from the repository's root (Debian 12: `apt install
//! rocminfo libhsa-runtime-dev gcc`; root or user namespaces): Debian's `rocminfo`, then the C
//! `vector_copy` over `hsa.h` linked to Debian's ROCR (`-lhsa-runtime64` finds
//! `/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so`), which prints `vector_copy: verified
//! 65536 elements` last. `kfd-emu/tests/examples.rs` runs these lines (the cargo build
//! replaced by the test's own build).
//!
//! ```text
//! cargo build -p kfd-emu
//! target/debug/kfd-emu -- rocminfo
//! gcc -std=gnu11 -Wall -Icapi/include capi/c/vector_copy.c -lhsa-runtime64 -o target/vector_copy_rocr
//! target/debug/kfd-emu -- target/vector_copy_rocr testdata/codeobjects/kernels-gfx90a-v5.hsaco noregister
//! ```
//!
//! ROCm 7.2.4 (rocminfo, HIP, ROCR 7.2.4) needs a newer glibc than Debian 12's: it runs in
//! the ROCm 7 chroot (`scripts/rocm7-chroot.sh`, as root), with kfd-emu and its preloaded
//! library bound in (`docs/rocm7-status.md` says what runs there):
//!
//! ```text
//! scripts/rocm7-chroot.sh build
//! scripts/rocm7-chroot.sh run --bind $PWD/target/debug:/opt/hsa-rt/kfd-emu -- \
//!     env KFD_EMU_PRELOAD=/opt/hsa-rt/kfd-emu/libkfd_emu_preload.so \
//!     /opt/hsa-rt/kfd-emu/kfd-emu -- rocminfo
//! ```
#![deny(unsafe_code)]

mod namespace;
mod sysfs;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hsa_emu::device::{builtin_profile, complete_capture};
use hsa_linux::topology::Topology;

/// The preloaded library's file name.
const PRELOAD_NAME: &str = "libkfd_emu_preload.so";

const USAGE: &str =
    "usage: kfd-emu [--sysfs DIR | --profile NAME] [--trace FILE | --model] [--] COMMAND [ARGS...]
  --sysfs DIR      emulate the captured KFD topology at DIR (its topology/ root)
  --profile NAME   a built-in profile: builtin (default), gfx900, gfx906, gfx908, gfx90a,
                   gfx942, gfx1030, gfx1100
  --trace FILE     record every ioctl and mmap of /dev/kfd and the render nodes in FILE
  --model          no preload: ROCR's libhsakmt in model mode drives the emulated GPU through
                   libhsa_emu_model.so (HSA_MODEL_LIB; gfx942 and later)";

struct Options {
    sysfs: Option<PathBuf>,
    profile: Option<String>,
    trace: Option<PathBuf>,
    /// `--model`: AMD's model interface instead of the preloaded `/dev/kfd`.
    model: bool,
    command: Vec<OsString>,
}

fn parse(args: Vec<OsString>) -> Result<Options, String> {
    let mut o = Options {
        sysfs: None,
        profile: None,
        trace: None,
        model: false,
        command: Vec::new(),
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.to_str() {
            Some("--sysfs") => o.sysfs = Some(value("--sysfs")?.into()),
            Some("--profile") => {
                o.profile = Some(
                    value("--profile")?
                        .into_string()
                        .map_err(|v| format!("--profile {v:?} is not UTF-8"))?,
                )
            }
            Some("--trace") => o.trace = Some(value("--trace")?.into()),
            Some("--model") => o.model = true,
            Some("--help") | Some("-h") => return Err(String::new()),
            Some("--") => {
                o.command = it.collect();
                break;
            }
            Some(s) if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => {
                o.command.push(a);
                o.command.extend(it);
                break;
            }
        }
    }
    if o.sysfs.is_some() && o.profile.is_some() {
        return Err("--sysfs and --profile exclude each other".into());
    }
    if o.model && o.trace.is_some() {
        // libhsakmt answers the ioctls itself in model mode: no device file to trace.
        return Err("--trace and --model exclude each other".into());
    }
    if o.command.is_empty() {
        return Err("no COMMAND given".into());
    }
    Ok(o)
}

/// The topology to emulate, completed as the emulated device completes it.
fn topology(o: &Options) -> Result<Topology, String> {
    let mut t = match (&o.sysfs, o.profile.as_deref()) {
        (Some(dir), _) => {
            let mut t = Topology::read(dir).map_err(|e| format!("--sysfs: {}", e.detail()))?;
            // Completed first (it may add a CPU node); unnamed CPU nodes get this machine's
            // processor name, as hsainfo gives them (the fixture /proc/cpuinfo then names
            // them so for libhsakmt).
            complete_capture(&mut t);
            t.name_cpus_from_host();
            t
        }
        (None, None | Some("builtin")) => hsa_emu::builtin_topology(),
        (None, Some(name)) => {
            builtin_profile(name).map_err(|e| format!("--profile {name}: {}", e.detail()))?
        }
    };
    complete_capture(&mut t);
    Ok(t)
}

/// The library `name` beside this binary (or one directory up: cargo puts a test's
/// binary in `deps/`), or at `$env` when set; `package` builds it.
fn library_path(name: &str, env: &str, package: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        return Ok(p.into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("locating kfd-emu itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for candidate in [dir.join(name), dir.join("..").join(name)] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(format!(
        "{name} is not beside {} (build it with `cargo build -p {package}`, or set {env})",
        exe.display()
    ))
}

/// The model library's file name (`--model`).
const MODEL_LIB_NAME: &str = "libhsa_emu_model.so";

/// Where `--model` writes the model topology (inside the namespace's helper directory).
const MODEL_TOPOLOGY_DIR: &str = "/sys/devices/virtual/kfd/kfd-emu/model-topology";

/// `DebugSupportedFirmware` in a node's `capability` (bit 29, libhsakmt's `HSA_CAPABILITY`):
/// with it set, ROCR enables the debugger runtime, which libhsakmt's model mode aborts on.
const CAP_DEBUG_SUPPORTED_FIRMWARE: u32 = 1 << 29;

/// `SVMAPISupported` (bit 27): with it set, ROCR and HIP hand the GPU pageable host memory
/// through SVM ranges, which libhsakmt's model mode accepts and does nothing with (its
/// `AMDKFD_IOC_SVM` is a no-op), so the GPU would read host addresses outside its aperture.
const CAP_SVM_API_SUPPORTED: u32 = 1 << 27;

/// `topology` as libhsakmt's model mode needs it: each GPU node's `gpu_id` its node index + 1
/// (libhsakmt refuses others), without `DebugSupportedFirmware` and `SVMAPISupported`.
fn model_topology(topology: &Topology) -> Topology {
    let mut t = topology.clone();
    for (i, n) in t.nodes.iter_mut().enumerate() {
        if n.properties.gpu_id != 0 {
            n.properties.gpu_id = i as u32 + 1;
            n.properties.capability &= !(CAP_DEBUG_SUPPORTED_FIRMWARE | CAP_SVM_API_SUPPORTED);
        }
    }
    t
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir()
        .map_err(|e| format!("current directory: {e}"))?
        .join(p))
}

fn run(o: Options) -> Result<std::io::Error, String> {
    let topology = topology(&o)?;
    let library = if o.model {
        absolute(&library_path(
            MODEL_LIB_NAME,
            "KFD_EMU_MODEL_LIB",
            "hsa-emu-model",
        )?)?
    } else {
        absolute(&library_path(PRELOAD_NAME, "KFD_EMU_PRELOAD", "kfd-emu")?)?
    };
    let trace = match &o.trace {
        Some(t) => {
            let t = absolute(t)?;
            std::fs::write(&t, "").map_err(|e| format!("--trace {}: {e}", t.display()))?;
            Some(t)
        }
        None => None,
    };
    namespace::enter()?;
    let root = namespace::make_topology_dir()?;
    sysfs::write_topology(&topology, &root)?;
    sysfs::write_module(
        &namespace::make_module_dir()?,
        (
            hsa_linux::kfd::abi::KFD_IOCTL_MAJOR_VERSION,
            hsa_emu::device::EMULATED_KFD_MINOR_VERSION,
        ),
    )?;
    let helpers = Path::new(namespace::HELPER_DIR);
    let processors = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pci = helpers.join("pci");
    sysfs::write_pci_devices(
        &topology,
        &namespace::make_pci_devices_dir()?,
        &pci,
        &sysfs::cpu_mask(processors),
    )?;
    let drm_class = namespace::make_drm_class_dir()?;
    sysfs::write_drm_nodes(
        &topology,
        &pci,
        &drm_class,
        &namespace::make_dev_char_dir()?,
    )?;
    sysfs::write_ip_discovery(&topology, &drm_class)?;
    namespace::make_kfd_class_link()?;
    let cpuinfo = helpers.join("cpuinfo");
    std::fs::write(&cpuinfo, sysfs::cpuinfo(&topology, processors))
        .map_err(|e| format!("{}: {e}", cpuinfo.display()))?;
    namespace::bind_file(&cpuinfo, "/proc/cpuinfo")?;
    if namespace::hide_dir("/sys/devices/system/node")? {
        sysfs::write_cpu_caches(&topology, Path::new("/sys/devices/system/node"))?;
    }
    let bin = helpers.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let lsmod = bin.join("lsmod");
    std::fs::write(
        &lsmod,
        "#!/bin/sh\n# kfd-emu: the emulated device stands in for amdgpu.\n\
         echo 'Module                  Size  Used by'\n\
         echo 'amdgpu               9000000  0'\n",
    )
    .map_err(|e| format!("{}: {e}", lsmod.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lsmod, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", lsmod.display()))?;
    }
    let mut path = OsString::from(bin.as_os_str());
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let mut cmd = std::process::Command::new(&o.command[0]);
    cmd.args(&o.command[1..])
        .env("PATH", path)
        .env_remove("KFD_EMU_TOPOLOGY");
    if o.model {
        namespace::stand_in_dev_kfd()?;
        let dir = Path::new(MODEL_TOPOLOGY_DIR);
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        sysfs::write_topology(&model_topology(&topology), dir)?;
        cmd.env("HSA_MODEL_TOPOLOGY", dir)
            .env("HSA_MODEL_LIB", &library);
    } else {
        let mut ld_preload = OsString::from(library.as_os_str());
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            ld_preload.push(":");
            ld_preload.push(old);
        }
        cmd.env("LD_PRELOAD", ld_preload)
            .env_remove("HSA_MODEL_TOPOLOGY")
            .env_remove("HSA_MODEL_LIB");
    }
    match &trace {
        Some(t) => cmd.env("KFD_EMU_TRACE", t),
        None => cmd.env_remove("KFD_EMU_TRACE"),
    };
    Ok(cmd.exec())
}

fn main() -> ExitCode {
    let options = match parse(std::env::args_os().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("kfd-emu: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let command = options.command[0].clone();
    match run(options) {
        Ok(exec_error) => {
            eprintln!(
                "kfd-emu: cannot run {}: {exec_error}",
                command.to_string_lossy()
            );
            ExitCode::from(127)
        }
        Err(e) => {
            eprintln!("kfd-emu: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn options() {
        let o = parse(args(&[
            "--profile",
            "gfx900",
            "--trace",
            "t",
            "--",
            "rocminfo",
            "-v",
        ]))
        .unwrap();
        assert_eq!(o.profile.as_deref(), Some("gfx900"));
        assert_eq!(o.trace.as_deref(), Some(Path::new("t")));
        assert_eq!(o.command, args(&["rocminfo", "-v"]));
        let o = parse(args(&["rocminfo", "--sysfs", "x"])).unwrap();
        assert_eq!(o.command, args(&["rocminfo", "--sysfs", "x"]));
        assert!(o.sysfs.is_none());
        assert_eq!(
            parse(args(&["--sysfs", "a", "--profile", "b", "x"]))
                .err()
                .unwrap(),
            "--sysfs and --profile exclude each other"
        );
        assert_eq!(
            parse(args(&["--trace"])).err().unwrap(),
            "--trace needs a value"
        );
        assert_eq!(parse(args(&[])).err().unwrap(), "no COMMAND given");
        assert_eq!(
            parse(args(&["--bogus", "x"])).err().unwrap(),
            "unknown option --bogus"
        );
        let o = parse(args(&["--model", "--profile", "gfx942", "--", "rocminfo"])).unwrap();
        assert!(o.model);
        assert!(!parse(args(&["rocminfo"])).unwrap().model);
        assert_eq!(
            parse(args(&["--model", "--trace", "t", "x"]))
                .err()
                .unwrap(),
            "--trace and --model exclude each other"
        );
        let e = topology(&parse(args(&["--profile", "gfx1", "x"])).unwrap()).unwrap_err();
        assert!(
            e.contains("\"gfx1\"") && e.contains("gfx906, gfx908"),
            "{e}"
        );
    }

    /// The model topology: the GPU node (index 1 of the gfx942 profile) gets `gpu_id` 2 and
    /// loses only `DebugSupportedFirmware` and `SVMAPISupported` (0x2c77_a280 ->
    /// 0x0477_a280); the CPU node is as it was.
    #[test]
    fn model_topology_renumbers_gpus_and_clears_the_debugger_bit() {
        let t = topology(&parse(args(&["--profile", "gfx942", "x"])).unwrap()).unwrap();
        assert_eq!(t.nodes[1].properties.capability, 0x2c77_a280);
        let m = model_topology(&t);
        assert_eq!(m.nodes[0].properties.gpu_id, 0);
        assert_eq!(
            m.nodes[0].properties.capability,
            t.nodes[0].properties.capability
        );
        assert_eq!(m.nodes[1].properties.gpu_id, 2);
        assert_eq!(m.nodes[1].properties.capability, 0x0477_a280);
    }
}
