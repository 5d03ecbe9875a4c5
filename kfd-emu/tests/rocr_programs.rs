//! C programs linked against Debian's unmodified ROCR (libhsa-runtime64 of ROCm 5.2, with its
//! libhsakmt) run under `kfd-emu`: real ROCR as the oracle of the emulated amdkfd and CP.
//!
//! Each program is built with gcc against Debian's `hsa/hsa.h` and linked to
//! `libhsa-runtime64.so.1` by its soname. Skips (`skipped: ...`) where gcc, the headers or
//! Debian's ROCR are absent, or kfd-emu cannot make its mount namespace (neither root nor
//! user namespaces).

mod common;

use std::path::Path;

use common::{build_c, kfd_emu, kfd_emu_with};

/// An AMD PM4-IB vendor packet whose PM4 the emulated CP does not run reaches ROCR's queue
/// callback as HSA_STATUS_ERROR_INVALID_PACKET_FORMAT (0x1009): the CP's vendor-packet code
/// (0x100) in the queue's inactive signal, as ROCR's DynamicScratchHandler decodes it. Before,
/// the CP stored the bare hsa_status_t, whose bit 0 ROCR read as a scratch request: it
/// asserted ("Invalid packet in dynamic scratch handler") and aborted.
#[test]
fn an_unknown_pm4_packet_reaches_rocr_as_invalid_packet_format() {
    let Some(exe) = build_c("bad_pm4", &["tests/c/bad_pm4.c"], &[]) else {
        return;
    };
    let Some(out) = kfd_emu(&exe, &[]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert_eq!(stdout, "bad_pm4: queue error 0x1009\n", "{stderr}");
}

/// The C vector_copy (`capi/c/vector_copy.c`, hsa.h only: the program of the capi tests)
/// linked to Debian's ROCR runs under kfd-emu and verifies every element: the real
/// `vector_copy` machine code, loaded by ROCR's loader, run by the emulated CP's gfx9
/// interpreter, on the built-in MI210, a gfx900 and the captured 8×MI210 machine. On the way
/// ROCR invalidates the code caches with a PM4-IB vendor packet after loading (it asserted on
/// the stopped queue before the CP ran PM4).
#[test]
fn c_vector_copy_on_debian_rocr_verifies() {
    let Some(exe) = build_c(
        "vector_copy",
        &["../capi/c/vector_copy.c"],
        &["../capi/include"],
    ) else {
        return;
    };
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let objects = crate_dir.join("../testdata/codeobjects");
    let mut cases = vec![
        (vec![], "kernels-gfx90a-v5.hsaco", "gfx90a"),
        (
            vec!["--profile".to_owned(), "gfx900".to_owned()],
            "kernels-gfx900-v4.hsaco",
            "gfx900",
        ),
    ];
    if let Some(shared) = hsa_test_support::shared::topology_dump("mi210-8gpu-xgmi-pcie-topology") {
        cases.push((
            vec!["--sysfs".to_owned(), shared.to_string_lossy().into_owned()],
            "kernels-gfx90a-v5.hsaco",
            "gfx90a",
        ));
    }
    for (options, object, isa) in cases {
        let code_object = objects.join(object);
        let Some(out) = kfd_emu_with(
            &options,
            &[],
            &exe,
            &[code_object.to_str().unwrap(), "noregister"],
        ) else {
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{options:?}: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.starts_with(&format!("vector_copy: GPU agent {isa}\n")),
            "{options:?}: {stdout}"
        );
        assert!(
            stdout.ends_with("vector_copy: verified 65536 elements\n"),
            "{options:?}: {stdout}\n{stderr}"
        );
    }
}

/// `capi/c/cu_mask.c` on Debian's ROCR under kfd-emu: ROCR's `hsa_amd_queue_cu_set_mask`
/// reaches the emulated amdkfd through libhsakmt's SET_CU_MASK, and the work-groups of
/// `hw_id.cl` (built with clang-19 at test time) run only on the CUs the mask enables, each of
/// them used; with the mask reset, every CU is used; a mask naming no CU holds a dispatch
/// until CUs are enabled again. The same program and checks as
/// `capi/tests/c_abi.rs` on hsa-rt.
#[test]
fn c_cu_mask_on_debian_rocr_confines_work_groups() {
    let Some(exe) = build_c("cu_mask", &["../capi/c/cu_mask.c"], &["../capi/include"]) else {
        return;
    };
    let dir = exe.parent().unwrap();
    let which = |t: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !which("clang-19") || !which("ld.lld-19") {
        println!("skipped: clang-19 or ld.lld-19 missing (install clang-19, lld-19)");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects/hw_id.cl");
    let obj = dir.join("hw_id.o");
    let hsaco = dir.join("hw_id.hsaco");
    for (tool, args) in [
        (
            "clang-19",
            vec![
                "-x".into(),
                "cl".into(),
                "-Xclang".into(),
                "-finclude-default-header".into(),
                "-cl-std=CL1.2".into(),
                "-target".into(),
                "amdgcn-amd-amdhsa".into(),
                "-mcpu=gfx90a".into(),
                "-mcode-object-version=5".into(),
                "-O2".into(),
                "-nogpulib".into(),
                "-c".into(),
                src.to_string_lossy().into_owned(),
                "-o".into(),
                obj.to_string_lossy().into_owned(),
            ],
        ),
        (
            "ld.lld-19",
            vec![
                "-shared".into(),
                obj.to_string_lossy().into_owned(),
                "-o".into(),
                hsaco.to_string_lossy().into_owned(),
            ],
        ),
    ] as [(&str, Vec<String>); 2]
    {
        let out = std::process::Command::new(tool)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let Some(out) = kfd_emu(&exe, &[hsaco.to_str().unwrap()]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert_eq!(
        stdout, "cu_mask: 104 CUs, 8 shader engines of 1 arrays of 13\ncu_mask: ok\n",
        "{stderr}"
    );
}

/// amdkfd answers an ioctl by its number alone (`kfd_ioctl`: the command is its table's, type
/// byte and direction included): GET_VERSION asked with type 'Q' and a write-only direction
/// returns the version through kfd-emu. The emulated device answered ENOTTY for a type byte
/// other than 'K', and the preloaded library copied the answer back only for a request whose
/// own direction said so.
#[test]
fn kfd_ioctls_are_answered_by_number_alone() {
    let Some(exe) = build_c("kfd_ioctl_number", &["tests/c/kfd_ioctl_number.c"], &[]) else {
        return;
    };
    let Some(out) = kfd_emu(&exe, &[]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "kfd_ioctl_number: 1.17\n");
}

/// B8's hsa.h program (`capi/c/dispatch_round_trip.c`) runs on Debian's ROCR under kfd-emu and
/// on hsa-rt's library, both on the built-in device (a few dispatches, each checked: that it
/// works, not how fast; `scripts/bench_report.py` times it).
#[test]
fn b8_dispatch_round_trip_runs_on_both() {
    let Some(exe) = build_c(
        "dispatch_round_trip",
        &["../capi/c/dispatch_round_trip.c"],
        &[],
    ) else {
        return;
    };
    let code_object = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco")
        .to_string_lossy()
        .into_owned();
    let args = [code_object.as_str(), "10"];
    let Some(rocr) = kfd_emu(&exe, &args) else {
        return;
    };
    let ours = std::process::Command::new(&exe)
        .args(args)
        .env("LD_LIBRARY_PATH", common::capi_library_dir())
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_EMULATION")
        .output()
        .expect("run dispatch_round_trip");
    for (who, out) in [("ROCR", rocr), ("hsa-rt", ours)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success()
                && stdout.starts_with("dispatch_round_trip: 10 dispatches, ")
                && stdout.contains("\ndispatch_round_trip: submit "),
            "{who}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Kernarg buffers from the CPU agent's KERNARG_INIT pool, allocated per dispatch with
/// `hsa_amd_memory_pool_allocate` (`tests/c/kernarg_pool.c`), on Debian's ROCR 5.2.3 under
/// kfd-emu. ROCR allocates pool memory restricted (`AllocateRestrict`: the trace shows
/// `ALLOC_MEMORY_OF_GPU` of a userptr and no `MAP_MEMORY_TO_GPU`; ROCR's own pointer info
/// says `CanAccess: 0`) and answers the GPU's access to that pool with
/// `HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT` (2): amdkfd maps a buffer only on
/// `MAP_MEMORY_TO_GPU`, so the kernel's first kernarg load faults, as the emulated device
/// reports and ROCR's VM fault handler prints, unless the program grants the GPU access with
/// `hsa_amd_agents_allow_access`; then 16 dispatches, each freeing its buffer and allocating
/// the next, verify. (hsa-rt's own library maps pool memory to every GPU at allocation, so the
/// program without `allow` passes there: more permissive than ROCR, never less.)
#[test]
fn kernarg_pool_buffers_need_allow_access_on_debian_rocr() {
    let Some(exe) = build_c("kernarg_pool", &["tests/c/kernarg_pool.c"], &[]) else {
        return;
    };
    let object = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    let object = object.to_str().unwrap();
    let Some(out) = kfd_emu(&exe, &[object, "16", "allow"]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert_eq!(
        stdout,
        "kernarg_pool: kernarg pool accessible by all: yes; GPU access 2\n\
         kernarg_pool: 16 dispatches verified\n",
        "{stderr}"
    );
    let Some(out) = kfd_emu(&exe, &[object, "1"]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // ROCR's VM fault report names the kernarg buffer (page-aligned: a pool allocation),
    // which it mapped to no GPU.
    let kernarg = stderr
        .lines()
        .find_map(|l| l.strip_prefix("kernarg_pool: dispatch 0 kernarg "))
        .unwrap_or_else(|| panic!("no kernarg address:\n{stderr}"));
    assert!(
        stderr.contains("Memory access fault by GPU node-1 (Agent handle: ")
            && stderr.contains(&format!("on address {kernarg}. Reason: Page not present")),
        "{stderr}"
    );
    assert!(stderr.contains("CanAccess: 0"), "{stderr}");
}

/// `tests/c/scratch.c` on Debian's ROCR under kfd-emu: the 64 KiB private array and the
/// recursive call of `testdata/codeobjects/scratch.c` on a queue ROCR creates without scratch
/// (COMPUTE_TMPRING_SIZE 0): the emulated CP's scratch request (code 1 in the inactive
/// signal) makes ROCR's DynamicScratchHandler allocate scratch, fill the queue's
/// `amd_queue_t` and resume the queue; the CP then runs the waves on that scratch, and every
/// work-item's value is the host's. The queue's TMPRING_SIZE then holds ROCR's wave size:
/// 4097 KiB (65540 bytes per lane) for `big_private`.
#[test]
fn c_scratch_kernels_on_debian_rocr_grow_the_queues_scratch() {
    let Some(exe) = build_c("scratch", &["tests/c/scratch.c"], &[]) else {
        return;
    };
    let object = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/scratch/scratch-gfx90a-v5.hsaco");
    let Some(out) = kfd_emu(&exe, &[object.to_str().unwrap()]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    print!("{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "scratch: tmpring at creation 0x0", "{stdout}");
    assert!(
        lines[1].starts_with("scratch: big_private.kd verified 128, tmpring 0x1001"),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("scratch: recursive.kd verified 128, tmpring 0x"),
        "{stdout}"
    );
}
