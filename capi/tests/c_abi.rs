//! The C ABI against Debian's ROCR 5.2 headers (`/usr/include/hsa`, package
//! libhsa-runtime-dev): enumerator values and struct layouts the Rust side relies on, the
//! export table of the built library, and a C program of our own (`c/vector_copy.c`) that
//! links against the library and runs the real gfx90a code object on the emulated device.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hsa_runtime64::abi::ALL;

fn have_headers() -> bool {
    if Path::new("/usr/include/hsa/hsa.h").exists() && which("gcc") {
        return true;
    }
    println!("skipped: /usr/include/hsa/hsa.h or gcc missing (install libhsa-runtime-dev, gcc)");
    false
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn gcc(args: &[&str]) -> std::process::Output {
    let out = Command::new("gcc").args(args).output().expect("run gcc");
    assert!(
        out.status.success(),
        "gcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every enumerator value of `abi.rs`, and the sizes/offsets of the structs the library reads
/// or writes, as `_Static_assert`s compiled against the headers.
#[test]
fn enumerators_and_layouts_match_the_headers() {
    if !have_headers() {
        return;
    }
    assert!(ALL.len() > 100, "abi table has {} entries", ALL.len());
    let mut c = String::from(
        "#include <stddef.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n\
         #include \"hsa_rt_ext.h\"\n",
    );
    for (name, value) in ALL {
        c += &format!("_Static_assert({name} == {value}u, \"{name}\");\n");
    }
    for (expr, value) in [
        ("sizeof(hsa_status_t)", 4),
        ("sizeof(hsa_agent_t)", 8),
        ("sizeof(hsa_signal_t)", 8),
        ("sizeof(hsa_signal_value_t)", 8),
        ("sizeof(hsa_agent_info_t)", 4),
        ("sizeof(hsa_device_type_t)", 4),
        ("sizeof(hsa_dim3_t)", 12),
        ("sizeof(hsa_queue_t)", 40),
        ("offsetof(hsa_queue_t, base_address)", 8),
        ("offsetof(hsa_queue_t, doorbell_signal)", 16),
        ("offsetof(hsa_queue_t, size)", 24),
        ("offsetof(hsa_queue_t, id)", 32),
        ("sizeof(hsa_kernel_dispatch_packet_t)", 64),
        ("sizeof(hsa_amd_pointer_info_t)", 56),
        ("offsetof(hsa_amd_pointer_info_t, agentBaseAddress)", 8),
        ("offsetof(hsa_amd_pointer_info_t, sizeInBytes)", 24),
        ("offsetof(hsa_amd_pointer_info_t, agentOwner)", 40),
        ("offsetof(hsa_amd_pointer_info_t, global_flags)", 48),
        ("HSA_EXT_POINTER_TYPE_UNKNOWN", 0),
        ("HSA_EXT_POINTER_TYPE_HSA", 1),
        ("HSA_DEVICE_TYPE_GPU", 1),
        ("HSA_QUEUE_TYPE_COOPERATIVE", 2),
        ("HSA_SIGNAL_CONDITION_GTE", 3),
        ("HSA_WAIT_STATE_ACTIVE", 1),
        ("HSA_AMD_SEGMENT_GROUP", 3),
        ("HSA_REGION_SEGMENT_KERNARG", 4),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED", 4),
        ("HSA_SYMBOL_KIND_KERNEL", 1),
        ("HSA_SYMBOL_LINKAGE_PROGRAM", 1),
        ("HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", 0x1024),
        ("sizeof(hsa_amd_memory_pool_link_info_t)", 28),
        (
            "offsetof(hsa_amd_memory_pool_link_info_t, max_bandwidth)",
            12,
        ),
        (
            "offsetof(hsa_amd_memory_pool_link_info_t, coherent_support)",
            18,
        ),
        ("offsetof(hsa_amd_memory_pool_link_info_t, link_type)", 20),
        (
            "offsetof(hsa_amd_memory_pool_link_info_t, numa_distance)",
            24,
        ),
        ("sizeof(hsa_rt_dispatch_t)", 80),
        ("offsetof(hsa_rt_dispatch_t, workgroup_count)", 24),
        ("offsetof(hsa_rt_dispatch_t, kernel_object)", 56),
        ("offsetof(hsa_rt_dispatch_t, group_segment)", 72),
        ("sizeof(hsa_amd_event_t)", 32),
        ("offsetof(hsa_amd_event_t, memory_fault)", 8),
        ("sizeof(hsa_amd_gpu_memory_fault_info_t)", 24),
        (
            "offsetof(hsa_amd_gpu_memory_fault_info_t, virtual_address)",
            8,
        ),
        (
            "offsetof(hsa_amd_gpu_memory_fault_info_t, fault_reason_mask)",
            16,
        ),
        ("HSA_AMD_GPU_MEMORY_FAULT_EVENT", 0),
        ("HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT", 1),
    ] {
        c += &format!("_Static_assert({expr} == {value}, \"{expr}\");\n");
    }
    let dir = common::temp_dir("abi");
    let src = dir.join("abi.c");
    std::fs::write(&src, c).unwrap();
    let include = common::crate_dir().join("include");
    gcc(&[
        "-std=c11",
        "-fsyntax-only",
        "-Werror",
        "-I",
        include.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
}

fn exported_symbols() -> Vec<(String, String)> {
    exported(" DF .text")
}

/// The exported data objects of the built library (`objdump -T`: ` DO `), as
/// [`exported_symbols`]; ROCR exports one, `_amdgpu_r_debug`.
fn exported_data() -> Vec<(String, String)> {
    exported(" DO ")
}

/// The `objdump -T` entries of the built library whose line contains `kind`: (name, version).
fn exported(kind: &str) -> Vec<(String, String)> {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(common::built_library())
        .output()
        .expect("run objdump");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(kind))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.last()?.to_string(), f.get(f.len() - 2)?.to_string()))
        })
        .collect()
}

/// The export table: every function under `ROCR_1`, rocminfo's ten imports among them, the
/// soname `libhsa-runtime64.so.1`, and every export declared by `hsa.h`/`hsa_ext_amd.h`
/// (with `hsa_ext_image.h`), `hsa_ext_finalize.h`, `hsa_rt_ext.h` or `hsa_rocr7.h` (ROCR 7's
/// additions, declared for programs built against ROCR 5.2's headers): a C file taking each one's address compiles with `-Werror`.
#[test]
fn exports_are_declared_api_under_rocr_1() {
    if !have_headers() || !which("objdump") {
        return;
    }
    let syms = exported_symbols();
    assert!(syms.len() >= 90, "only {} exports", syms.len());
    for (name, version) in &syms {
        assert!(name.starts_with("hsa_"), "unexpected export {name}");
        assert_eq!(version, "ROCR_1", "{name} is not under ROCR_1");
    }
    // The one data object, ROCR's debugger list (`struct r_debug`).
    assert_eq!(
        exported_data(),
        [("_amdgpu_r_debug".to_string(), "ROCR_1".to_string())]
    );
    for name in [
        "hsa_init",
        "hsa_shut_down",
        "hsa_status_string",
        "hsa_system_get_info",
        "hsa_iterate_agents",
        "hsa_agent_get_info",
        "hsa_agent_iterate_isas",
        "hsa_isa_get_info_alt",
        "hsa_amd_agent_iterate_memory_pools",
        "hsa_amd_memory_pool_get_info",
    ] {
        assert!(
            syms.iter().any(|(n, _)| n == name),
            "rocminfo's import {name} is not exported"
        );
    }
    let dynamic = Command::new("objdump")
        .arg("-p")
        .arg(common::built_library())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&dynamic.stdout)
        .contains("SONAME               libhsa-runtime64.so.1"));

    let mut c = String::from(
        "#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n#include <hsa/hsa_ext_finalize.h>\n\
         #include \"hsa_rt_ext.h\"\n#include \"hsa_rocr7.h\"\n\
         void* exports[] = {\n",
    );
    for (name, _) in &syms {
        c += &format!("  (void*){name},\n");
    }
    c += "};\n";
    let dir = common::temp_dir("exports");
    let src = dir.join("exports.c");
    std::fs::write(&src, c).unwrap();
    let include = common::crate_dir().join("include");
    gcc(&[
        "-std=gnu11",
        "-fsyntax-only",
        "-Werror=implicit-function-declaration",
        "-I",
        include.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
}

/// `c/vector_copy.c`, built against the headers and linked against the library as
/// `libhsa-runtime64.so.1`, runs the real `kernels-gfx90a-v5.hsaco` on the emulated MI210:
/// by default its machine code runs in the gfx9 interpreter; with `HSA_RT_EMULATION=host` the
/// host implementation registered through `hsa_rt_emulated_register_kernel` runs, and without
/// that registration the queue reports `INVALID_PACKET_FORMAT` through the queue callback.
#[test]
fn c_vector_copy_runs_on_the_emulated_device() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("vector_copy");
    let crate_dir = common::crate_dir();
    let code_object = crate_dir.join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    let run = |mode: &str, emulation: &str| {
        Command::new(&exe)
            .arg(&code_object)
            .arg(mode)
            .env("LD_LIBRARY_PATH", &libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env("HSA_RT_EMULATION", emulation)
            .env_remove("HSA_RT_SYSFS")
            .output()
            .expect("run vector_copy")
    };
    for emulation in ["interpret", "host"] {
        let out = run("register", emulation);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "vector_copy ({emulation}) failed:\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("vector_copy: verified 65536 elements\n"),
            "{stdout}"
        );
    }
    // The real machine code, no host implementation at all.
    let out = run("noregister", "interpret");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("vector_copy: verified 65536 elements\n"),
        "{stdout}"
    );

    let out = run("register", "host");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "vector_copy failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("vector_copy: GPU agent gfx90a\n"),
        "{stdout}"
    );
    assert!(stdout.contains("kernarg 16 bytes"), "{stdout}");
    assert!(
        stdout.contains("vector_copy: verified 65536 elements\n"),
        "{stdout}"
    );

    let out = run("noregister", "host");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("error 0x1009: HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"),
        "{stderr}"
    );
}

/// `HSA_RT_LOG` sets what the C library prints on stderr: `c/vector_copy.c` without its host
/// kernel under `HSA_RT_EMULATION=host` stops its queue with `INVALID_PACKET_FORMAT`, which
/// its queue callback gets; the library logs the queue error at error level with its detail
/// (the status, the queue, the packet, the kernel object) — printed by default (`warn`), at
/// `error` and at `1`, not at `0` or `off` — and with `1` also the failing calls' errors and
/// the device opened.
#[test]
fn hsa_rt_log_sets_what_the_c_library_prints() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("vector_copy");
    let code_object = common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    let run = |log: Option<&str>| {
        let mut cmd = Command::new(&exe);
        cmd.arg(&code_object)
            .arg("noregister")
            .env("LD_LIBRARY_PATH", &libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env("HSA_RT_EMULATION", "host")
            .env_remove("HSA_RT_SYSFS")
            .env_remove("HSA_XNACK");
        match log {
            Some(v) => cmd.env("HSA_RT_LOG", v),
            None => cmd.env_remove("HSA_RT_LOG"),
        };
        let out = cmd.output().expect("run vector_copy");
        assert_eq!(out.status.code(), Some(3), "{log:?}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // What the emulated device saw (its packet processor's detail) and what the runtime got
    // from amdkfd's report (the inactive signal, the hardware-exception event), both naming
    // the queue by its KFD queue id (0; the program's `hsa_queue_t.id` is 1).
    let device = "hsa-rt: queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: packet 0: ";
    let runtime = "hsa-rt: queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: \
                   queue_inactive_signal ";
    let opened = "hsa-rt: hsa_init: running on the emulated device\n";
    for (log, errors, info) in [
        (None, true, false),
        (Some(""), true, false),
        (Some("warn"), true, false),
        (Some("error"), true, false),
        (Some("1"), true, true),
        (Some("info"), true, true),
        (Some("0"), false, false),
        (Some("off"), false, false),
    ] {
        let stderr = run(log);
        assert_eq!(stderr.contains(device), errors, "{log:?}: {stderr}");
        assert_eq!(stderr.contains(runtime), errors, "{log:?}: {stderr}");
        assert_eq!(stderr.contains(opened), info, "{log:?}: {stderr}");
        // The program's own line, from its callback, is there whatever the level.
        assert!(
            stderr.contains("error 0x1009: HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"),
            "{stderr}"
        );
    }
    let debug = run(Some("debug"));
    assert!(
        debug.contains("hsa-rt: queue 1 created on node 1: "),
        "{debug}"
    );
    assert!(debug.contains(device), "{debug}");
    assert!(
        debug.contains("hsa-rt: code object for gfx90a:sramecc+:xnack- loaded on node 1: "),
        "{debug}"
    );
}

/// Builds `testdata/codeobjects/hw_id.cl` for `mcpu` into `dir` with clang-19 and
/// ld.lld-19 (freestanding OpenCL C, code object v5); `None`, with a `skipped:` line, when
/// either tool is missing.
fn build_hw_id_kernel(dir: &Path, mcpu: &str) -> Option<std::path::PathBuf> {
    if !which("clang-19") || !which("ld.lld-19") {
        println!("skipped: clang-19 or ld.lld-19 missing (install clang-19, lld-19)");
        return None;
    }
    let src = common::crate_dir().join("../testdata/codeobjects/hw_id.cl");
    let obj = dir.join(format!("hw_id-{mcpu}.o"));
    let hsaco = dir.join(format!("hw_id-{mcpu}.hsaco"));
    let cl = Command::new("clang-19")
        .args([
            "-x",
            "cl",
            "-Xclang",
            "-finclude-default-header",
            "-cl-std=CL1.2",
        ])
        .args([
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcode-object-version=5",
            "-O2",
        ])
        .arg(format!("-mcpu={mcpu}"))
        .args(["-nogpulib", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("run clang-19");
    assert!(
        cl.status.success(),
        "clang-19: {}",
        String::from_utf8_lossy(&cl.stderr)
    );
    let ld = Command::new("ld.lld-19")
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&hsaco)
        .output()
        .expect("run ld.lld-19");
    assert!(
        ld.status.success(),
        "ld.lld-19: {}",
        String::from_utf8_lossy(&ld.stderr)
    );
    Some(hsaco)
}

/// `c/cu_mask.c`: `hsa_amd_queue_cu_set_mask` restricts where the queue's work-groups run on
/// the emulated MI210 (104 CUs, 8 shader engines): with 7 CUs enabled, each of 70
/// work-groups reads its HW_ID (`hw_id.cl`) and finds itself on a CU the mask enables (as
/// amdkfd maps the user's bits onto shader engines, arrays and CUs), every enabled CU ran
/// one, and with the mask reset every one of the 104 CUs runs a work-group. A mask naming no
/// CU of the agent is accepted (as amdkfd does on gfx9): a dispatch then runs none of its
/// work-groups until a mask enables CUs, and completes after.
#[test]
fn c_cu_mask_restricts_work_groups_to_the_enabled_cus() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("cu_mask");
    let Some(code_object) = build_hw_id_kernel(&libdir, "gfx90a") else {
        return;
    };
    let out = Command::new(&exe)
        .arg(&code_object)
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_RT_SYSFS")
        .output()
        .expect("run cu_mask");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cu_mask failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "cu_mask: 104 CUs, 8 shader engines of 1 arrays of 13\ncu_mask: ok\n"
    );
}

/// Compiles `c/<name>.c` with gcc against the headers, linked against the library as
/// A command running the C program `exe` against the library in `libdir` on the emulated
/// device (no sysfs capture, no emulation override), as most tests here run theirs.
fn on_emulated_device(exe: &Path, libdir: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_EMULATION");
    cmd
}

/// `libhsa-runtime64.so.1`; returns the directory holding both and the executable.
fn build_c_program(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let libdir = common::library_dir(name);
    let exe = libdir.join(name);
    let crate_dir = common::crate_dir();
    gcc(&[
        "-std=gnu11",
        "-Wall",
        "-Werror",
        "-I",
        crate_dir.join("include").to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        crate_dir.join(format!("c/{name}.c")).to_str().unwrap(),
        "-L",
        libdir.to_str().unwrap(),
        "-l:libhsa-runtime64.so.1",
    ]);
    (libdir, exe)
}

/// `c/api_check.c`: every signal operation and wait, wait-any, signal groups, soft and AQL
/// queue indices, regions, `hsa_memory_*`, `hsa_amd_pointer_info`, symbol iteration and info,
/// and the error statuses of bad handles and arguments, with values checked in C.
#[test]
fn c_api_check_passes() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("api_check");
    let crate_dir = common::crate_dir();
    let out = Command::new(&exe)
        .arg(crate_dir.join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .output()
        .expect("run api_check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "api_check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "api_check: ok\n");
}

/// `c/rocr7_api.c`: the ROCR 7 functions and attributes HIP 7.2.4 needs, with values and
/// statuses checked in C: TIMESTAMP_FREQUENCY (1 GHz on the emulated GPU, the system's on the
/// CPU), ASIC_FAMILY_ID 141, NEAREST_CPU, MEMORY_AVAIL, CLOCK_COUNTERS; copy-engine status
/// (ROCR 7's mask per direction, an engine with a gated copy in flight left out until it
/// runs), copies on a chosen engine (verified) and ROCR 7's refusals; the SDMA log (one line
/// per command while on); EXECUTABLE pool allocations; the vmem API (host-only and device
/// reservations, a VRAM handle mapped at two addresses and shared by the host and the GPU, an
/// SDMA copy out of it, export and import as a dma-buf, ROCR 7's statuses); AIS reads and writes checked
/// against `pread`/`pwrite`; dma-buf export of VRAM (offset in the buffer object) and its
/// refusals; the async scratch limit's statuses; sampler v2's per-axis clamps in the S#.
#[test]
fn c_rocr7_api_passes() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("rocr7_api");
    let out = on_emulated_device(&exe, &libdir)
        .output()
        .expect("run rocr7_api");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rocr7_api failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "rocr7_api: ok\n");
}

/// `c/rocr_ext.c`: the ROCR extension functions HIP and ROCm tools use, from C: extension
/// queries and the AMD loader table (executables, loaded code objects, URIs, segment
/// descriptors, host addresses), HDP_FLUSH, async copies (with a dependency, odd sizes, rects,
/// copy profiling), fills, locked memory (its agent pointer, pointer info, copies through it),
/// AMD signals, async handlers and functions, deallocation callbacks and user data, dispatch
/// profiling on a live queue, tick translation, CU masks, priorities (KFD `UPDATE_QUEUE` with
/// priorities 0 and 15 in the record), caches, ISA queries,
/// coherency, executable info, variable definitions resolving `extern_var`'s relocation (its
/// kernel reads the defined variable), the HSA 1.0 code object API, and ROCR's statuses for
/// every image, sampler and finalizer function, IPC of system memory, SVM, migration and
/// interop.
#[test]
fn c_rocr_ext_passes() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("rocr_ext");
    let codeobjects = common::crate_dir().join("../testdata/codeobjects");
    // Twice: copies through SDMA queues (the default), then on the host (HSA_ENABLE_SDMA=0,
    // ROCR's switch); the emulated device's record tells which (CREATE_QUEUE of
    // KFD_IOC_QUEUE_TYPE_SDMA, queue_type 1).
    for sdma in [true, false] {
        let record = std::env::temp_dir().join(format!(
            "hsa-rt-rocr-ext-{}-{sdma}.record",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&record);
        let mut cmd = Command::new(&exe);
        cmd.arg(codeobjects.join("kernels-gfx90a-v5.hsaco"))
            .arg(codeobjects.join("extern/extern_var-gfx90a-v5.hsaco"))
            .env("LD_LIBRARY_PATH", &libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env("HSA_RT_KFD_RECORD", &record)
            .env_remove("HSA_RT_SYSFS")
            .env_remove("HSA_RT_EMULATION");
        if sdma {
            cmd.env_remove("HSA_ENABLE_SDMA");
        } else {
            cmd.env("HSA_ENABLE_SDMA", "0");
        }
        let out = cmd.output().expect("run rocr_ext");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "rocr_ext (SDMA {sdma}) failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout, "rocr_ext: ok\n");
        let record = std::fs::read_to_string(&record).expect("read the record");
        // `ioctl kfd 0xc0584b02 <result> <argument in, hex> <out>`: CREATE_QUEUE (88 bytes);
        // queue_type is the u32 at byte 40 of kfd_ioctl_create_queue_args.
        let sdma_queues = record
            .lines()
            .filter_map(|l| l.strip_prefix("ioctl kfd 0xc0584b02 0 "))
            .filter(|args| args.get(80..88) == Some("01000000"))
            .count();
        assert_eq!(sdma_queues, usize::from(sdma), "SDMA {sdma}");
        // hsa_amd_queue_set_priority(LOW, then HIGH) reached KFD as UPDATE_QUEUE
        // (`_IOW('K', 7, kfd_ioctl_update_queue_args)`, 24 bytes) that succeeded, with
        // queue_percentage 100 (byte 16) and queue_priority 0, then 15 (byte 20).
        let updates: Vec<(&str, &str)> = record
            .lines()
            .filter_map(|l| l.strip_prefix("ioctl kfd 0x40184b07 0 "))
            .filter_map(|args| Some((args.get(32..40)?, args.get(40..48)?)))
            .collect();
        assert_eq!(
            updates,
            [("64000000", "00000000"), ("64000000", "0f000000")],
            "SDMA {sdma}"
        );
    }
}

/// `c/image_edges.c`: the image extension at its edges as the header and ROCR define them:
/// import/export pitches below the region's row or slice (the tight value is used), a depth
/// image's one-float clear value ending at an unreadable page (read past it, the runtime
/// crashed), an sRGBA clear (linear values stored sRGB-encoded: 0.5 is 188), copies between
/// geometries (2D into a 3D slice and a 2DA layer, 1D into a 2D row, a 1DA layer into a 1D
/// image), 1DA regions whose y is the layer, and images whose texels would run past the
/// allocation their memory starts in (refused; the copies wrote past it).
#[test]
fn c_image_edges_pass() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("image_edges");
    let out = on_emulated_device(&exe, &libdir)
        .output()
        .expect("run image_edges");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "image_edges failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "image_edges: ok\n");
}

/// `c/image_kernel.c`: clang-built OpenCL image kernels (`isa/image_ocl-gfx90a.hsaco`, ROCm
/// device-libs) dispatched on images made by `hsa_ext_image_create` over the padded layout
/// `hsa_ext_image_data_get_info` gives: RGBA8 UNORM to RGBA16 HALF_FLOAT (x / 255 as binary16)
/// and a 4-layer 2DA RGBA8 UINT to RGBA16 UINT plus (1, 2, 3, 4), every texel checked in C
/// after `hsa_ext_image_export`. With clang-19, ld.lld-19 and Debian's ROCm device-libs, also
/// `c/image_queries.cl` built here: the OpenCL queries (width, array size, depth, height,
/// channel order and type) and reads of 1DB, 1DA and 3D images, and reads through samplers of
/// `hsa_ext_sampler_create` in each addressing mode (nearest and linear, normalized and not).
#[test]
fn c_image_kernel_reads_and_writes_runtime_images() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("image_kernel");
    let code = common::crate_dir().join("../testdata/codeobjects/isa/image_ocl-gfx90a.hsaco");
    let mut cmd = on_emulated_device(&exe, &libdir);
    cmd.arg(code);
    let devlibs = Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
    if which("clang-19") && which("ld.lld-19") && devlibs.exists() {
        let dir = common::temp_dir("image-queries");
        let obj = dir.join("image_queries.o");
        let hsaco = dir.join("image_queries.hsaco");
        let cl = common::crate_dir().join("c/image_queries.cl");
        for (tool, args) in [
            (
                "clang-19",
                vec![
                    "-x".into(),
                    "cl".into(),
                    "-Xclang".into(),
                    "-finclude-default-header".into(),
                    "-cl-std=CL2.0".into(),
                    "-target".into(),
                    "amdgcn-amd-amdhsa".into(),
                    "-mcpu=gfx90a".into(),
                    "-mcode-object-version=5".into(),
                    "-O2".into(),
                    format!("--rocm-device-lib-path={}", devlibs.display()),
                    "-c".into(),
                    cl.display().to_string(),
                    "-o".into(),
                    obj.display().to_string(),
                ],
            ),
            (
                "ld.lld-19",
                vec![
                    "-shared".into(),
                    obj.display().to_string(),
                    "-o".into(),
                    hsaco.display().to_string(),
                ],
            ),
        ] {
            let out = Command::new(tool).args(&args).output().expect(tool);
            assert!(
                out.status.success(),
                "{tool} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        cmd.arg(hsaco);
    } else {
        println!(
            "skipped: c/image_queries.cl (needs clang-19, ld.lld-19 and {})",
            devlibs.display()
        );
    }
    let out = cmd.output().expect("run image_kernel");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "image_kernel failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "image_kernel: ok\n");
}

/// `c/memory_fault.c`: a kernel reading 0x1000 (nothing maps it) on the emulated gfx90a; both
/// registered system event handlers get `HSA_AMD_GPU_MEMORY_FAULT_EVENT` with the GPU agent,
/// the address 0x1000 and `HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT`, in registration order, each
/// once and before the queue's error callback, which gets `HSA_STATUS_ERROR_MEMORY_FAULT`.
#[test]
fn c_memory_fault_reaches_the_system_event_handlers_first() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("memory_fault");
    let out = on_emulated_device(&exe, &libdir)
        .arg(common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .output()
        .expect("run memory_fault");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "memory_fault failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "memory_fault: ok\n");
}

/// Rounds each thread of the soak runs: `HSA_RT_SOAK_ROUNDS` (the long form, e.g. 2000),
/// else the short form CI runs.
fn soak_rounds() -> u32 {
    std::env::var("HSA_RT_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&r: &u32| r > 0)
        .unwrap_or(6)
}

/// `c/soak.c`: 4 threads each create and destroy a queue, signals, a signal group, an
/// executable, pool buffers (system and VRAM) and kernargs per round while dispatching
/// vector_copy and copying through the copy engine, every element checked; after the rounds
/// the emulated device's buffer objects are back to their bytes after the warm-up round
/// exactly and the resident set within 24 MiB of it. Short by default (6 rounds);
/// `HSA_RT_SOAK_ROUNDS=N` runs the long form.
#[test]
fn c_soak_creates_and_destroys_while_dispatching_and_leaks_nothing() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("soak");
    let rounds = soak_rounds().to_string();
    let out = on_emulated_device(&exe, &libdir)
        .arg(common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .args(["4", &rounds])
        .output()
        .expect("run soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "soak failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!("soak: ok: 4 threads x {rounds} rounds; ")),
        "{stdout}"
    );
    println!("{}", stdout.trim());
}

/// The C library under valgrind's memcheck (`c/soak.c`, 2 threads x 2 rounds of everything
/// the soak makes and unmakes, then `hsa_shut_down`): no invalid access, no use of an
/// uninitialised value, no definitely lost block (`--errors-for-leak-kinds=definite`; "still
/// reachable" blocks are the library's statics, the same bytes whatever the rounds). Skipped
/// without valgrind (`.ci/run` installs it). Valgrind's address-space manager refuses the
/// platform's 64 GiB address reservation, which then falls back to 32 GiB
/// (`hsa_linux::device::MIN_VA_RESERVATION_BYTES`); rustix reads the auxiliary vector
/// through libc (`use-libc-auxv`), where its own reader crashed under valgrind.
#[test]
fn c_library_under_valgrind_has_no_memory_errors_or_leaks() {
    if !have_headers() {
        return;
    }
    let valgrind = Command::new("valgrind").arg("--version").output();
    if !valgrind.is_ok_and(|o| o.status.success()) {
        println!("skipped: valgrind not found (apt install valgrind)");
        return;
    }
    let (libdir, exe) = build_c_program("soak");
    let out = Command::new("valgrind")
        .args([
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--error-exitcode=9",
            "--quiet",
        ])
        .arg(&exe)
        .arg(common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .args(["2", "2"])
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_EMULATION")
        .output()
        .expect("run valgrind");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "valgrind ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.starts_with("soak: ok: 2 threads x 2 rounds; "),
        "{stdout}"
    );
    assert!(!stderr.contains("definitely lost"), "{stderr}");
}

/// `c/async_many.c`: 300 async handlers (more than hsa-core's fixed wait list of 256 without
/// `alloc`) each run when their signal reaches 1, the last as well as the first. The
/// mechanism, from the emulated device's ioctl record (`HSA_RT_KFD_RECORD`): once every
/// handler is registered, the handler thread blocks in one `AMDKFD_IOC_WAIT_EVENTS` naming
/// every handler's event and its wake signal's (301), waiting for any, with no timeout; no
/// wait of it has a timeout (a wait that polls some signals in turns would have 1 ms).
/// Before, past 256 events the rest were polled every 1 ms, so their handlers ran up to 1 ms
/// late.
#[test]
#[cfg(feature = "emulated")]
fn c_async_handlers_wait_in_one_wait_over_every_event() {
    use hsa_emu::device::record::KfdCall;
    use hsa_linux::kfd::abi::{WaitEventsArgs, AMDKFD_IOC_WAIT_EVENTS};
    use zerocopy::FromBytes;
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("async_many");
    let record = common::temp_dir("async_many_record").join("kfd-record.txt");
    let _ = std::fs::remove_file(&record);
    let out = on_emulated_device(&exe, &libdir)
        .env("HSA_RT_KFD_RECORD", &record)
        .output()
        .expect("run async_many");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "async_many failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "async_many: ok\n");
    let text = std::fs::read_to_string(&record).expect("the ioctl record");
    let waits: Vec<WaitEventsArgs> = text
        .lines()
        .filter_map(|l| match KfdCall::parse(l) {
            Ok(KfdCall::Ioctl {
                request, before, ..
            }) if request == AMDKFD_IOC_WAIT_EVENTS => {
                WaitEventsArgs::read_from_bytes(&before).ok()
            }
            _ => None,
        })
        // The queue-error monitor waits on its own two events; the thread's first waits cover
        // the handlers registered so far.
        .filter(|a| a.num_events > 2)
        .collect();
    assert!(
        waits.iter().any(|a| a.num_events == 301),
        "no wait over all 301 events: {:?}",
        waits.iter().map(|a| a.num_events).collect::<Vec<_>>()
    );
    for a in &waits {
        assert_eq!((a.wait_for_all, a.timeout), (0, u32::MAX), "{a:?}");
    }
}

/// `c/memory_fault.c unmapped-lock`: host memory locked with `hsa_amd_memory_lock` and then
/// unmapped by the program is the kernel's input. The GPU's read faults as a GPU's access to a
/// userptr buffer object whose pages went: `HSA_AMD_GPU_MEMORY_FAULT_EVENT` at the locked
/// pointer, then the queue's callback with `HSA_STATUS_ERROR_MEMORY_FAULT`; the process lives
/// on and `hsa_amd_memory_unlock` succeeds. (Before, the emulated device read the unmapped
/// page directly and the process died of SIGSEGV.)
#[test]
fn c_unmapped_locked_memory_faults_instead_of_crashing() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("memory_fault");
    let code_object = common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    let out = on_emulated_device(&exe, &libdir)
        .arg(&code_object)
        .arg("unmapped-lock")
        .output()
        .expect("run memory_fault unmapped-lock");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "memory_fault unmapped-lock failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "memory_fault: unmapped lock: ok\n");
    // The same while 2^20 work-items read 4 MiB of it: completion first, or a fault inside
    // the locked range; the process never dies.
    for _ in 0..3 {
        let out = on_emulated_device(&exe, &libdir)
            .arg(&code_object)
            .arg("unmap-while-reading")
            .output()
            .expect("run memory_fault unmap-while-reading");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "memory_fault unmap-while-reading failed ({:?}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with("memory_fault: unmap while reading: "),
            "{stdout}"
        );
    }
}

/// `c/memory_fault.c shut-down-in-callback`: the queue's error callback stores to and loads a
/// signal, then calls the last `hsa_shut_down`, which returns `HSA_STATUS_SUCCESS` (the
/// platform is dropped on its own event thread, which it then must not join: the join failed
/// with EDEADLK, a panic the call reported as `HSA_STATUS_ERROR`, leaving the platform half
/// dropped); afterwards a signal load gives 0 and `hsa_queue_destroy` and `hsa_shut_down` give
/// `HSA_STATUS_ERROR_NOT_INITIALIZED`.
#[test]
fn c_shut_down_inside_a_queue_error_callback() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("memory_fault");
    let out = on_emulated_device(&exe, &libdir)
        .arg(common::crate_dir().join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .arg("shut-down-in-callback")
        .output()
        .expect("run memory_fault");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "memory_fault shut-down-in-callback failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout,
        "memory_fault: shut down in the queue's callback: ok\n"
    );
    assert!(!stderr.contains("panic"), "{stderr}");
}

/// `c/sdma_fault.c`: an SDMA copy whose source was freed before its dependency released it
/// faults on the emulated SDMA engine; the system event handler gets the fault (GPU, source
/// address), the copy's completion signal becomes -1, a later copy on that GPU is refused with
/// `HSA_STATUS_ERROR` instead of waiting on a queue amdkfd evicted, and a host copy still
/// completes.
#[test]
fn c_sdma_fault_fails_the_copies_on_the_stopped_queue() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("sdma_fault");
    let out = on_emulated_device(&exe, &libdir)
        .env_remove("HSA_ENABLE_SDMA")
        .output()
        .expect("run sdma_fault");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sdma_fault failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout, "sdma_fault: ok\n");
    // The copy engine's report is written before it sets the completion signal the program
    // waits on, so it is there even when the program exits at once (it once lost that race:
    // the report was written after the signals changed).
    assert!(
        stderr.contains("stopped with HSA_STATUS_ERROR_MEMORY_FAULT"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a GPU memory fault ended its SDMA queue; 1 copies on it did not complete"),
        "{stderr}"
    );
}

/// `c/lock_agents.c` on the 8-GPU MI210 capture (`HSA_RT_SYSFS`): memory locked for GPU 2 is
/// read by a kernel there, while GPU 5's read faults at the agent pointer (the system event
/// handler names GPU 5 and that address; the queue's callback gets MEMORY_FAULT) and
/// `hsa_amd_pointer_info` lists GPU 2 alone; locking the pages again for GPU 5 and the CPU
/// maps them to GPU 5 too (whose kernel then reads them); a lock listing no agents reaches all
/// eight GPUs.
#[test]
fn c_memory_lock_maps_only_to_the_agents_listed() {
    if !have_headers() {
        return;
    }
    let crate_dir = common::crate_dir();
    let Some(mi210) = hsa_test_support::shared::topology_dump("mi210-8gpu-xgmi-pcie-topology")
    else {
        return;
    };
    let (libdir, exe) = build_c_program("lock_agents");
    let out = Command::new(&exe)
        .arg(crate_dir.join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_SYSFS", &mi210)
        .env_remove("HSA_RT_EMULATION")
        .output()
        .expect("run lock_agents");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lock_agents failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "lock_agents: ok\n");
}

/// `c/ipc.c`: two processes (forked before `hsa_init`, each with its own emulated device) share
/// three pages of VRAM and an IPC signal: the child checks the parent's fill through an async
/// copy from the attached address, writes its pattern through the host and sets the signal to
/// 2; the parent sees 2 and the pattern, sets 0, which the child's blocked wait sees. Also the
/// exact statuses of zero, mismatched, out-of-range and stale handles and of detaching what
/// is not attached.
#[test]
fn c_ipc_shares_memory_and_a_signal_between_processes() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("ipc");
    let out = on_emulated_device(&exe, &libdir).output().expect("run ipc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ipc failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "ipc: ok\n");
}

/// `c/dispatch_loop.c`: the per-dispatch pattern of ROCR's samples (kernarg buffer of a
/// random size, a new completion signal, dispatch with the barrier bit, wait, free both),
/// 10,000 times with a new queue every 97 dispatches, on the emulated gfx90a and (with the
/// shared test data) gfx942. Every later dispatch used to stop its queue with
/// `INVALID_SIGNAL` once the first signal was destroyed (the emulated KFD dropped the event
/// page with its last event).
#[test]
fn c_dispatch_loop_creates_and_destroys_a_signal_per_dispatch() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("dispatch_loop");
    let crate_dir = common::crate_dir();
    let mi308x = crate_dir.join("../../shared/testdata/kfd-topology/mi308x-cpx-topology/topology");
    let mut cases = vec![("kernels-gfx90a-v5.hsaco", None)];
    if mi308x.exists() {
        cases.push(("kernels-gfx942-v5.hsaco", Some(mi308x)));
    } else {
        println!("skipped: gfx942 case, {} not found", mi308x.display());
    }
    for (code_object, sysfs) in cases {
        let mut cmd = Command::new(&exe);
        cmd.arg(crate_dir.join("../testdata/codeobjects").join(code_object))
            .arg("10000")
            .env("LD_LIBRARY_PATH", &libdir)
            .env("HSA_RT_DEVICE", "emulated")
            .env_remove("HSA_RT_EMULATION")
            .env_remove("HSA_RT_SYSFS");
        if let Some(dir) = sysfs {
            cmd.env("HSA_RT_SYSFS", dir);
        }
        let out = cmd.output().expect("run dispatch_loop");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "dispatch_loop ({code_object}) failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout, "dispatch_loop: 10000 dispatches verified on 104 queues\n",
            "{code_object}"
        );
    }
}

/// Runs `c/rocr_compat.c`'s `section` on the emulated device (built-in profile); asserts it
/// prints `rocr_compat: <section> ok`. The program is built once for all the tests that run
/// it (they run at once, and each build would replace the directory the others use).
fn run_rocr_compat(section: &str) {
    static BUILT: std::sync::OnceLock<(std::path::PathBuf, std::path::PathBuf)> =
        std::sync::OnceLock::new();
    let (libdir, exe) = BUILT.get_or_init(|| build_c_program("rocr_compat"));
    let crate_dir = common::crate_dir();
    let out = Command::new(exe)
        .arg(crate_dir.join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco"))
        .arg(section)
        .env("LD_LIBRARY_PATH", libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_EMULATION")
        .output()
        .expect("run rocr_compat");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rocr_compat {section} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, format!("rocr_compat: {section} ok\n"));
}

/// The functions Debian's ROCR 5.2 `hsa.h` declares `HSA_DEPRECATED`, all of which its
/// `libhsa-runtime64.so.1` exports: every one is exported under `ROCR_1`; each renamed
/// memory-order operation is the same function as its new name; and they work from C
/// (`rocr_compat.c deprecated`).
#[test]
fn rocr_5_2_deprecated_names_are_exported() {
    if !have_headers() || !which("objdump") {
        return;
    }
    let header = std::fs::read_to_string("/usr/include/hsa/hsa.h").unwrap();
    let mut deprecated = Vec::new();
    for piece in header.split("HSA_API HSA_DEPRECATED").skip(1) {
        let name: String = piece
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        deprecated.push(name);
    }
    assert_eq!(deprecated.len(), 52, "{deprecated:?}");
    let out = Command::new("objdump")
        .arg("-T")
        .arg(common::built_library())
        .output()
        .expect("run objdump");
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    // name -> (address, version)
    let exports: std::collections::HashMap<String, (String, String)> = table
        .lines()
        .filter(|l| l.contains(" DF .text"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.last()?.to_string(),
                (f.first()?.to_string(), f.get(f.len() - 2)?.to_string()),
            ))
        })
        .collect();
    let mut missing = Vec::new();
    for name in &deprecated {
        match exports.get(name) {
            Some((_, version)) => assert_eq!(version, "ROCR_1", "{name}"),
            None => missing.push(name.clone()),
        }
        let renamed = name
            .strip_suffix("_acq_rel")
            .map(|b| format!("{b}_scacq_screl"))
            .or_else(|| {
                name.strip_suffix("_acquire")
                    .map(|b| format!("{b}_scacquire"))
            })
            .or_else(|| {
                name.strip_suffix("_release")
                    .map(|b| format!("{b}_screlease"))
            });
        if let (Some(new), Some((address, _))) = (renamed, exports.get(name)) {
            assert_eq!(
                exports.get(&new).map(|e| &e.0),
                Some(address),
                "{name} is not the same function as {new}"
            );
        }
    }
    assert!(missing.is_empty(), "not exported: {missing:?}");
    for name in [
        "hsa_executable_get_symbol",
        "hsa_signal_store_release",
        "hsa_signal_wait_acquire",
    ] {
        assert!(deprecated.iter().any(|d| d == name), "{name}");
        assert!(exports.contains_key(name), "{name}");
    }
    run_rocr_compat("deprecated");
}

/// `hsa_amd_agent_memory_pool_get_info` from C (`rocr_compat.c pool_info`): ROCR 5.2's access,
/// hops and link info between the built-in profile's CPU and GPU, and its error statuses.
#[test]
fn agent_memory_pool_info_is_rocr_5_2s() {
    if !have_headers() {
        return;
    }
    run_rocr_compat("pool_info");
}

/// `hsa_amd_agents_allow_access` with the CPU agent on VRAM (`rocr_compat.c allow_access`):
/// accepted as by ROCR 5.2 (it was `INVALID_ARGUMENT`); the host then uses the memory and
/// `hsa_amd_pointer_info` lists the CPU.
#[test]
fn the_cpu_agent_may_be_allowed_access_to_vram() {
    if !have_headers() {
        return;
    }
    run_rocr_compat("allow_access");
}

/// Pool allocations reserve without touching and give their memory back on free
/// (`rocr_compat.c memory`): 1 GiB from the CPU's fine- and coarse-grained pools and from
/// VRAM of the emulated device adds less than 64 MiB resident (/proc/self/statm), 256 MiB
/// written add at least 240 MiB, and after `hsa_amd_memory_pool_free` resident memory is
/// back within 64 MiB of where it was, over five rounds. (It used to add the whole GiB at
/// allocation, in about a second, and keep it after the free.)
#[test]
fn a_gib_allocation_is_not_touched_and_is_given_back() {
    if !have_headers() {
        return;
    }
    run_rocr_compat("memory");
}

/// `HSA_AGENT_INFO_QUEUES_MAX` (127 on the emulated gfx90a: amdkfd's per-process limit) queues
/// can be created, one more is `OUT_OF_RESOURCES` (`rocr_compat.c queues`). It used to say 128
/// while the 25th `hsa_queue_create` failed.
#[test]
fn queues_max_queues_can_be_created_and_not_one_more() {
    if !have_headers() {
        return;
    }
    run_rocr_compat("queues");
}

/// The `nm -D --defined-only` names of a library (version suffixes dropped), without the
/// version nodes (`A` symbols such as `ROCR_1`).
fn nm_defined(lib: &Path) -> Vec<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "nm -D {}", lib.display());
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [_, kind, name] if *kind != "A" => {
                    Some(name.split('@').next().unwrap_or(name).to_string())
                }
                _ => None,
            }
        })
        .collect();
    names.sort();
    names
}

/// `capi/README.md`'s table of ROCR 5.2's exports has one row per export of Debian's
/// `libhsa-runtime64.so.1` (`nm -D --defined-only`), in name order, so it cannot drift from
/// the real library: a row marked `not provided` names something this library does not export,
/// every other row a function it exports under `ROCR_1`.
#[test]
fn readme_table_lists_every_rocr_export() {
    let rocr = Path::new("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1");
    if !rocr.exists() || !which("nm") || !which("objdump") {
        println!(
            "skipped: {} or nm/objdump missing (install libhsa-runtime64-1, binutils)",
            rocr.display()
        );
        return;
    }
    let theirs = nm_defined(rocr);
    assert_eq!(
        theirs.iter().filter(|n| n.starts_with("hsa_")).count(),
        224,
        "ROCR 5.2.3 exports 224 functions"
    );
    let readme = std::fs::read_to_string(common::crate_dir().join("README.md")).unwrap();
    let (_, rest) = readme
        .split_once("<!-- rocr-exports: begin -->")
        .expect("README.md has the rocr-exports table");
    let (table, _) = rest.split_once("<!-- rocr-exports: end -->").unwrap();
    let rows: Vec<(String, String)> = table
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    let names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    let missing: Vec<&String> = theirs.iter().filter(|n| !names.contains(n)).collect();
    let extra: Vec<&String> = names.iter().filter(|n| !theirs.contains(n)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "README table vs Debian's exports: missing rows {missing:?}, rows for no export {extra:?}"
    );
    assert_eq!(names, theirs, "rows are in name order");
    let ours: Vec<(String, String)> = exported_symbols()
        .into_iter()
        .chain(exported_data())
        .collect();
    for (name, here) in &rows {
        let exported = ours.iter().find(|(n, _)| n == name);
        match here.as_str() {
            "not provided" => assert!(exported.is_none(), "{name} is exported: update the table"),
            "implemented" | "absent feature" => match exported {
                Some((_, version)) => assert_eq!(version, "ROCR_1", "{name}"),
                None => panic!("{name} is marked {here} but not exported"),
            },
            other => panic!("{name}: unknown entry {other:?}"),
        }
    }
}

/// README.md's table of ROCR 7.2.4's additions lists exactly the functions Debian's ROCR
/// 7.2.4 (the ROCm 7 chroot's `libhsa-runtime64.so.1`) exports beyond ROCR 5.2.3, in name
/// order; those marked implemented or absent feature are exported here under `ROCR_1`, those
/// marked not provided are not. Skips without the chroot or Debian's ROCR 5.2.3.
#[test]
fn readme_rocr7_table_lists_every_rocr7_addition() {
    let root = std::env::var_os("ROCM7_CHROOT")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/work/chroots/rocm7"), PathBuf::from);
    let rocr7 = root.join("usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1");
    let rocr5 = Path::new("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1");
    if !rocr7.exists() || !rocr5.exists() || !which("nm") || !which("objdump") {
        println!(
            "skipped: {} (scripts/rocm7-chroot.sh build) or {} or nm/objdump missing",
            rocr7.display(),
            rocr5.display()
        );
        return;
    }
    let old = nm_defined(rocr5);
    let added: Vec<String> = nm_defined(&rocr7)
        .into_iter()
        .filter(|n| n.starts_with("hsa_") && !old.contains(n))
        .collect();
    assert_eq!(added.len(), 36, "ROCR 7.2.4 adds 36 functions: {added:?}");
    let readme = std::fs::read_to_string(common::crate_dir().join("README.md")).unwrap();
    let (_, rest) = readme
        .split_once("<!-- rocr7-exports: begin -->")
        .expect("README.md has the rocr7-exports table");
    let (table, _) = rest.split_once("<!-- rocr7-exports: end -->").unwrap();
    let rows: Vec<(String, String)> = table
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    let names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        names, added,
        "the table's rows are ROCR 7.2.4's additions, in name order"
    );
    let ours: Vec<(String, String)> = exported_symbols()
        .into_iter()
        .chain(exported_data())
        .collect();
    for (name, here) in &rows {
        let exported = ours.iter().find(|(n, _)| n == name);
        match here.as_str() {
            "not provided" => assert!(exported.is_none(), "{name} is exported: update the table"),
            "implemented" | "absent feature" => match exported {
                Some((_, version)) => assert_eq!(version, "ROCR_1", "{name}"),
                None => panic!("{name} is marked {here} but not exported"),
            },
            other => panic!("{name}: unknown entry {other:?}"),
        }
    }
}

/// `c/rocr7_rest.c` prints `c/rocr7_rest.expected`, the transcript Debian's ROCR 7.2.4 prints
/// under kfd-emu (`kfd-emu/tests/rocm7.rs` checks that side): `hsa_amd_queue_get_info` (the
/// GPU, the doorbell signal's address, `INVALID_ARGUMENT`, `INVALID_QUEUE`),
/// `hsa_amd_signal_wait_all` (0 with every satisfying value, `UINT32_MAX` at a timeout with the
/// values met so far, NULL signals as satisfied with 0), dma-buf export v2 and close
/// (`RESOURCE_FREE` for a closed descriptor), SPM and PC sampling (`ERROR` for the GPU,
/// `INVALID_AGENT` for the CPU, `INVALID_ARGUMENT` for unknown sessions), and
/// `_amdgpu_r_debug` (version 11, one entry from freeze to destroy whose `l_addr` is the
/// loader's load delta and whose name is the code object's `file://` URI).
#[test]
fn c_rocr7_rest_prints_rocr7s_transcript() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("rocr7_rest");
    let crate_dir = common::crate_dir();
    let code_object = crate_dir
        .join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco")
        .canonicalize()
        .unwrap();
    let out = Command::new(&exe)
        .arg(&code_object)
        .env("LD_LIBRARY_PATH", &libdir)
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .output()
        .expect("run rocr7_rest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rocr7_rest failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = std::fs::read_to_string(crate_dir.join("c/rocr7_rest.expected")).unwrap();
    assert_eq!(stdout, expected);
}

/// `c/fork_child.c`: 20 children forked while a thread of the parent adds to a signal (often
/// inside a read-side section at the fork) each create and destroy a signal and exit 0; the
/// parent's signal counts all 2,000,000 adds. (Before the fork handler closed the parent's other
/// threads' section counters in the child, most children waited for ever in the grace period of
/// `hsa_signal_destroy`.)
#[test]
fn c_fork_child_does_not_wait_for_the_parents_threads() {
    if !have_headers() {
        return;
    }
    let (libdir, exe) = build_c_program("fork_child");
    let out = on_emulated_device(&exe, &libdir)
        .output()
        .expect("run fork_child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fork_child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "fork_child: ok\n");
}
