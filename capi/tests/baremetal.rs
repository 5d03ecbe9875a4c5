//! The bare-metal build of the C ABI (`--no-default-features --features baremetal`): the
//! static library builds and exports the firmware's entry points, the host struct's layout in
//! `hsa_rt_ext.h` is the one the library reads, and a firmware written in C
//! (`c/baremetal_firmware.c`) runs on it over a simulated machine: its own memory, doorbell
//! BAR and IH ring, and a thread playing the command processor that reports completions
//! through the IH ring and `hsa_rt_baremetal_interrupt`. Built for `x86_64-unknown-none`
//! (no_std + alloc), it links into freestanding C firmware without libc
//! (`c/baremetal_freestanding.c`), which runs it.

mod common;

use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn have_headers() -> bool {
    if Path::new("/usr/include/hsa/hsa.h").exists() && have("gcc") {
        return true;
    }
    println!("skipped: /usr/include/hsa/hsa.h or gcc missing (install libhsa-runtime-dev, gcc)");
    false
}

fn gcc(args: &[&str]) {
    let out = Command::new("gcc").args(args).output().expect("run gcc");
    assert!(
        out.status.success(),
        "gcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The symbols the archive defines (`nm -g --defined-only`).
fn defined_symbols(archive: &Path) -> Vec<String> {
    let out = Command::new("nm")
        .args(["-g", "--defined-only"])
        .arg(archive)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "nm failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[1] == "T").then(|| f[2].to_string())
        })
        .collect()
}

/// The staticlib builds with the bare-metal backend and defines the firmware's entry points
/// next to the HSA API; the Linux backend's extras (emulated kernels, file descriptors) are
/// not in it.
#[test]
fn baremetal_staticlib_exports_the_firmware_api() {
    let archive = common::built_baremetal_staticlib();
    assert!(archive.exists(), "{} missing", archive.display());
    if !have("nm") {
        println!("skipped: nm missing (binutils)");
        return;
    }
    let symbols = defined_symbols(&archive);
    for name in [
        "hsa_rt_baremetal_init",
        "hsa_rt_baremetal_interrupt",
        "hsa_init",
        "hsa_shut_down",
        "hsa_queue_create",
        "hsa_signal_wait_scacquire",
        "hsa_executable_load_agent_code_object",
    ] {
        assert!(
            symbols.iter().any(|s| s == name),
            "{name} is not defined by {}",
            archive.display()
        );
    }
    for name in [
        "hsa_rt_emulated_register_kernel",
        "hsa_code_object_reader_create_from_file",
    ] {
        assert!(
            !symbols.iter().any(|s| s == name),
            "{name} is Linux-only but defined by the bare-metal build"
        );
    }
}

/// The sizes and offsets of the host struct and its parts in `hsa_rt_ext.h` are those the
/// library's `backend::baremetal` asserts for its `#[repr(C)]` mirrors.
#[test]
fn baremetal_host_layout_matches_the_header() {
    if !have_headers() {
        return;
    }
    let mut c = String::from("#include <stddef.h>\n#include \"hsa_rt_ext.h\"\n");
    for (expr, value) in [
        ("sizeof(hsa_rt_baremetal_carve_out_t)", 40),
        ("offsetof(hsa_rt_baremetal_carve_out_t, virt_base)", 16),
        ("sizeof(hsa_rt_baremetal_doorbells_t)", 24),
        ("sizeof(hsa_rt_baremetal_ih_ring_t)", 48),
        ("offsetof(hsa_rt_baremetal_ih_ring_t, wptr_virt)", 16),
        ("sizeof(hsa_rt_baremetal_mqd_t)", 48),
        ("sizeof(hsa_rt_baremetal_queue_mapping_t)", 128),
        ("offsetof(hsa_rt_baremetal_queue_mapping_t, mqd)", 64),
        (
            "offsetof(hsa_rt_baremetal_queue_mapping_t, mqd_address)",
            112,
        ),
        ("offsetof(hsa_rt_baremetal_queue_mapping_t, mqd_virt)", 120),
        ("sizeof(hsa_rt_baremetal_memory_bank_t)", 24),
        ("sizeof(hsa_rt_baremetal_node_t)", 304),
        ("offsetof(hsa_rt_baremetal_node_t, cpu_cores_count)", 136),
        ("offsetof(hsa_rt_baremetal_node_t, hive_id)", 264),
        ("offsetof(hsa_rt_baremetal_node_t, mem_banks)", 288),
        ("sizeof(hsa_rt_baremetal_host_t)", 232),
        ("offsetof(hsa_rt_baremetal_host_t, queue_vmid)", 216),
        ("offsetof(hsa_rt_baremetal_host_t, sh_mem_bases)", 220),
        (
            "offsetof(hsa_rt_baremetal_host_t, mec_doorbell_range_lower)",
            224,
        ),
        (
            "offsetof(hsa_rt_baremetal_host_t, mec_doorbell_range_upper)",
            228,
        ),
        ("offsetof(hsa_rt_baremetal_host_t, allocate)", 192),
        ("offsetof(hsa_rt_baremetal_host_t, abort)", 208),
        ("offsetof(hsa_rt_baremetal_host_t, doorbells)", 40),
        (
            "offsetof(hsa_rt_baremetal_host_t, timestamp_frequency_hz)",
            112,
        ),
        ("offsetof(hsa_rt_baremetal_host_t, map_queue)", 136),
        ("offsetof(hsa_rt_baremetal_host_t, log)", 184),
        ("HSA_RT_BAREMETAL_HOST_VERSION", 2),
        ("offsetof(hsa_rt_baremetal_host_t, ih_filter)", 4),
        // 1 << 31 | first 8 | last 9 << 4 | PASID 0x8001 << 8 (the bit and the rest apart).
        ("(HSA_RT_BAREMETAL_IH_FILTER(8, 9, 0x8001) >> 31)", 1),
        (
            "(HSA_RT_BAREMETAL_IH_FILTER(8, 9, 0x8001) & 0x7fffffffu)",
            0x0080_0198,
        ),
        ("HSA_RT_BAREMETAL_PRIVATE_VRAM", 2),
    ] {
        c += &format!("_Static_assert({expr} == {value}, \"{expr}\");\n");
    }
    let dir = common::temp_dir("baremetal-abi");
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

/// `c/baremetal_firmware.c`, linked against the bare-metal static library: registration
/// errors with their status and log line (hsa_init first, a bad version, a NULL `map_queue`,
/// an unknown carve-out kind, a NULL table, private VRAM without `clear_device_memory`, a node
/// name without NUL, a zero timestamp frequency; more doorbells than the aperture holds fails
/// `hsa_init`), the agents it described, the real gfx90a code object loaded into its
/// carve-out, `map_queue` with the queue's ring, doorbell and MQD, a barrier-AND and a
/// vector_copy dispatch completed through IH end-of-pipe interrupts, `unmap_queue` on
/// destroy, and no interrupt reaching the runtime after shut-down.
#[test]
fn c_firmware_runs_on_the_baremetal_build() {
    if !have_headers() {
        return;
    }
    let archive = common::built_baremetal_staticlib();
    let dir = common::temp_dir("baremetal-firmware");
    let exe = dir.join("baremetal_firmware");
    let crate_dir = common::crate_dir();
    gcc(&[
        "-std=gnu11",
        "-Wall",
        "-Werror",
        "-I",
        crate_dir.join("include").to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        crate_dir.join("c/baremetal_firmware.c").to_str().unwrap(),
        archive.to_str().unwrap(),
        // What a Rust staticlib with std needs from the C library (rustc
        // --print native-static-libs).
        "-lgcc_s",
        "-lutil",
        "-lrt",
        "-lpthread",
        "-lm",
        "-ldl",
        "-lc",
    ]);
    let code_object = crate_dir.join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    let out = Command::new(&exe)
        .arg(&code_object)
        .output()
        .expect("run baremetal_firmware");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "baremetal_firmware failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("baremetal_firmware: ok: 2 packets, 2 interrupts,"),
        "{stdout}"
    );
    assert!(stdout.contains("4096 elements verified"), "{stdout}");
}

/// The no_std build for `x86_64-unknown-none` links into freestanding C firmware without
/// libc (`ld -static -nostdlib`: nothing left undefined) and runs there: registration, agents,
/// a signal, kernarg memory inside the carve-out, a queue mapped and unmapped, shut-down; a
/// heap that fails makes the library's panic handler call the host's log and abort.
#[test]
fn freestanding_firmware_runs_on_the_no_std_build() {
    if !have_headers() || !have("ld") {
        println!("skipped: ld missing (binutils)");
        return;
    }
    let Some(archive) = common::built_no_os_staticlib() else {
        println!(
            "skipped: Rust target {} not installed (rustup target add {})",
            common::NO_OS_TARGET,
            common::NO_OS_TARGET
        );
        return;
    };
    let dir = common::temp_dir("baremetal-freestanding");
    let object = dir.join("firmware.o");
    let exe = dir.join("firmware");
    let crate_dir = common::crate_dir();
    gcc(&[
        "-std=gnu11",
        "-Wall",
        "-Werror",
        "-ffreestanding",
        "-fno-stack-protector",
        "-fno-pie",
        "-O1",
        "-I",
        crate_dir.join("include").to_str().unwrap(),
        "-c",
        crate_dir
            .join("c/baremetal_freestanding.c")
            .to_str()
            .unwrap(),
        "-o",
        object.to_str().unwrap(),
    ]);
    let link = Command::new("ld")
        .args([
            "-static",
            "-nostdlib",
            "-e",
            "_start",
            "--gc-sections",
            "-o",
        ])
        .arg(&exe)
        .arg(&object)
        .arg(&archive)
        .output()
        .expect("run ld");
    assert!(
        link.status.success(),
        "ld failed:\n{}",
        String::from_utf8_lossy(&link.stderr)
    );
    let out = Command::new(&exe).output().expect("run the firmware");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(70), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("freestanding: ok: 2 agents, queue on doorbell 8, heap "),
        "{stdout}"
    );
    for (line, prefix) in [(lines[1], "log: "), (lines[2], "abort: ")] {
        assert!(
            line.starts_with(&format!("{prefix}hsa-rt: panic: memory allocation of ")),
            "{stdout}"
        );
    }
}
