//! hsa-rt's Linux backend and Debian's ROCR (ROCm 5.2: libhsa-runtime64 over libhsakmt) on the
//! same job — the C vector_copy (`capi/c/vector_copy.c`) on the emulated built-in MI210 —
//! compared by how they use amdkfd: every ioctl and mmap both make is recorded by the
//! emulated device itself (`HSA_RT_KFD_RECORD`), then reduced to address-free facts
//! (allocation flags, sizes and mappings per purpose, queue properties, event types, which
//! ioctls are used and in what order at start-up and around the queue). Every fact whose
//! values differ must be a row of `docs/kfd-vs-rocr.md` with both values as they are, and
//! every row must still be a difference: a new difference, a changed value or a difference
//! gone fails here, naming it.
//!
//! Our side: the same C program linked to hsa-rt's `libhsa-runtime64.so.1`
//! (`HSA_RT_DEVICE=emulated`: the Linux backend talking to the emulated device in-process).
//! ROCR's side: linked to Debian's library, under kfd-emu. Skips (`skipped: ...`) where gcc,
//! Debian's ROCR or its headers are absent, or kfd-emu cannot make its namespace.
//!
//! ROCR 7.2.4 (`rocr7_and_hsa_rt_differ_only_as_documented`): the same source built in the
//! ROCm 7 chroot (`scripts/rocm7-chroot.sh`) by its clang against ROCR 7.2.4, run there under
//! kfd-emu and, for our side, on hsa-rt's library (the same binary); held to the doc's second
//! table (`| fact | ROCR 7.2.4 | hsa-rt | why |`) by the same rules. Skips without the chroot
//! or root (`hsa_test_support::rocm7::chroot`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use hsa_emu::device::record::{CallTarget, KfdCall};
use hsa_linux::kfd::abi::*;
use zerocopy::FromBytes;

/// What one run did: the device's record and where the program put things (its stdout).
struct Job {
    calls: Vec<KfdCall>,
    /// Purpose → address, from vector_copy's `ring ..., kernarg ..., in ..., out ...,
    /// signal ...` and `kernel object ...` lines.
    places: BTreeMap<&'static str, u64>,
}

fn record_file(name: &str) -> PathBuf {
    let f = std::env::temp_dir().join(format!("kfd-vs-rocr-{name}-{}.rec", std::process::id()));
    let _ = std::fs::remove_file(&f);
    f
}

fn job(out: &std::process::Output, record: &Path, who: &str) -> Job {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("vector_copy: verified 65536 elements"),
        "{who}: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let text = std::fs::read_to_string(record).expect("the record file");
    let _ = std::fs::remove_file(record);
    let calls = text
        .lines()
        .map(|l| KfdCall::parse(l).unwrap_or_else(|e| panic!("{who}: {e}")))
        .collect();
    let hex = |s: &str| {
        u64::from_str_radix(
            s.trim_end_matches(',')
                .trim_start_matches("0x")
                .trim_end_matches(','),
            16,
        )
        .unwrap_or_else(|_| panic!("{who}: not hex: {s}"))
    };
    let mut places = BTreeMap::new();
    for line in stdout.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["vector_copy:", "kernel", "object", ko, ..] = w.as_slice() {
            places.insert("code object", hex(ko));
        }
        if let ["vector_copy:", "ring", ring, "kernarg", ka, "in", i, "out", o, "signal", s] =
            w.as_slice()
        {
            places.insert("queue ring", hex(ring));
            places.insert("kernarg", hex(ka));
            places.insert("input buffer", hex(i));
            places.insert("output buffer", hex(o));
            places.insert("completion signal", hex(s));
        }
    }
    assert_eq!(places.len(), 6, "{who}: {stdout}");
    Job { calls, places }
}

fn vector_copy() -> Option<PathBuf> {
    common::build_c(
        "vector_copy",
        &["../capi/c/vector_copy.c"],
        &["../capi/include"],
    )
}

fn code_object() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco")
}

/// Debian's ROCR under kfd-emu.
fn rocr(exe: &Path) -> Option<Job> {
    let record = record_file("rocr");
    let out = common::kfd_emu_with(
        &[],
        &[("HSA_RT_KFD_RECORD", record.to_string_lossy().into_owned())],
        exe,
        &[code_object().to_str().unwrap(), "noregister"],
    )?;
    Some(job(&out, &record, "ROCR"))
}

/// hsa-rt's library, the emulated device in-process.
fn ours(exe: &Path) -> Job {
    let record = record_file("ours");
    let dir = std::env::temp_dir().join(format!("kfd-vs-rocr-lib-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(common::capi_library(), dir.join("libhsa-runtime64.so.1")).unwrap();
    let out = Command::new(exe)
        .arg(code_object())
        .arg("noregister")
        .env("LD_LIBRARY_PATH", &dir)
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_KFD_RECORD", &record)
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_RT_EMULATION")
        .output()
        .expect("run vector_copy");
    job(&out, &record, "hsa-rt")
}

/// The ROCm 7 chroot (`scripts/rocm7-chroot.sh`) with what the ROCR 7.2.4 job needs: its
/// clang, ROCR 7.2.4 and its headers; `None` (said) when it or root is missing.
fn chroot7() -> Option<PathBuf> {
    hsa_test_support::rocm7::chroot(&[
        "usr/bin/clang-22",
        "usr/lib/x86_64-linux-gnu/libhsa-runtime64.so",
        "usr/include/hsa/hsa.h",
    ])
}

/// This test binary's scratch directory for the ROCR 7.2.4 job, `/opt/hsa-rt/out` inside the
/// chroot: the program clang builds, the records, and `lib/libhsa-runtime64.so.1`, a link to
/// hsa-rt's library as the chroot sees it. Emptied by each run (once per test process).
fn out_dir7() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| common::rocm7_out_dir("kfd-vs-rocr7"))
}

/// Runs `command` in the chroot with hsa-rt's library bound too, as `kfd-emu/tests/rocm7.rs`
/// runs its programs ([`common::run_in_rocm7`]).
fn run_in7(root: &Path, command: &[&str]) -> std::process::Output {
    common::run_in_rocm7(root, out_dir7(), true, command)
}

const CODE_OBJECT7: &str = "/opt/hsa-rt/src/testdata/codeobjects/kernels-gfx90a-v5.hsaco";

/// vector_copy built in the chroot by its clang against ROCR 7.2.4's headers and library;
/// its path inside.
fn vector_copy7(root: &Path) -> &'static str {
    let out = run_in7(
        root,
        &[
            "clang-22",
            "-std=gnu11",
            "-O1",
            "-Wall",
            "-Werror",
            "-I/opt/hsa-rt/src/capi/include",
            "-o",
            "/opt/hsa-rt/out/vector_copy7",
            "/opt/hsa-rt/src/capi/c/vector_copy.c",
            "-lhsa-runtime64",
        ],
    );
    assert!(
        out.status.success(),
        "clang-22 vector_copy.c in the chroot: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    "/opt/hsa-rt/out/vector_copy7"
}

/// The record file `name` in [`out_dir7`]: (host path, path inside the chroot), removed.
fn record7(name: &str) -> (PathBuf, String) {
    let host = out_dir7().join(format!("{name}.rec"));
    let _ = std::fs::remove_file(&host);
    (host, format!("/opt/hsa-rt/out/{name}.rec"))
}

/// Debian's ROCR 7.2.4 under kfd-emu, in the chroot.
fn rocr7(root: &Path, exe: &str) -> Job {
    let (host, inside) = record7("rocr7");
    let record = format!("HSA_RT_KFD_RECORD={inside}");
    let out = run_in7(
        root,
        &[
            "env",
            "KFD_EMU_PRELOAD=/opt/hsa-rt/preload/libkfd_emu_preload.so",
            &record,
            "/opt/hsa-rt/kfd-emu/kfd-emu",
            "--",
            exe,
            CODE_OBJECT7,
            "noregister",
        ],
    );
    job(&out, &host, "ROCR 7.2.4")
}

/// The same program on hsa-rt's library, the emulated device in-process, in the chroot.
fn ours7(root: &Path, exe: &str) -> Job {
    let (host, inside) = record7("ours7");
    let record = format!("HSA_RT_KFD_RECORD={inside}");
    let out = run_in7(
        root,
        &[
            "env",
            "LD_LIBRARY_PATH=/opt/hsa-rt/out/lib",
            "HSA_RT_DEVICE=emulated",
            &record,
            exe,
            CODE_OBJECT7,
            "noregister",
        ],
    );
    job(&out, &host, "hsa-rt (in the ROCm 7 chroot)")
}

/// The name of a KFD ioctl number (`kfd_ioctl.h`).
fn ioctl_name(request: u32) -> String {
    let nr = request & 0xff;
    let name = match nr {
        0x01 => "GET_VERSION",
        0x02 => "CREATE_QUEUE",
        0x03 => "DESTROY_QUEUE",
        0x04 => "SET_MEMORY_POLICY",
        0x05 => "GET_CLOCK_COUNTERS",
        0x07 => "UPDATE_QUEUE",
        0x08 => "CREATE_EVENT",
        0x09 => "DESTROY_EVENT",
        0x0A => "SET_EVENT",
        0x0B => "RESET_EVENT",
        0x0C => "WAIT_EVENTS",
        0x11 => "SET_SCRATCH_BACKING_VA",
        0x12 => "GET_TILE_CONFIG",
        0x13 => "SET_TRAP_HANDLER",
        0x14 => "GET_PROCESS_APERTURES_NEW",
        0x15 => "ACQUIRE_VM",
        0x16 => "ALLOC_MEMORY_OF_GPU",
        0x17 => "FREE_MEMORY_OF_GPU",
        0x18 => "MAP_MEMORY_TO_GPU",
        0x19 => "UNMAP_MEMORY_FROM_GPU",
        0x1A => "SET_CU_MASK",
        0x20 => "SVM",
        0x21 => "SET_XNACK_MODE",
        0x23 => "AVAILABLE_MEMORY",
        0x25 => "RUNTIME_ENABLE",
        0x82 => "DBG_TRAP (ROCm 5.x, 0x82)",
        _ => return format!("K:{nr:#04x}"),
    };
    name.to_owned()
}

fn flags_text(flags: u32) -> String {
    let names = [
        (KFD_IOC_ALLOC_MEM_FLAGS_VRAM, "VRAM"),
        (KFD_IOC_ALLOC_MEM_FLAGS_GTT, "GTT"),
        (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, "USERPTR"),
        (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, "DOORBELL"),
        (KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, "MMIO_REMAP"),
        (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, "WRITABLE"),
        (KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE, "EXECUTABLE"),
        (KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, "PUBLIC"),
        (KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE, "NO_SUBSTITUTE"),
        (KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, "AQL_QUEUE_MEM"),
        (KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, "COHERENT"),
        (KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED, "UNCACHED"),
        (1 << 24, "EXT_COHERENT"),
    ];
    let mut parts: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    let known = names.iter().fold(0, |a, (b, _)| a | b);
    let rest = flags & !known;
    let rest_text = format!("{rest:#x}");
    if rest != 0 {
        parts.push(&rest_text);
    }
    parts.join("+")
}

fn event_type_name(t: u32) -> String {
    match t {
        KFD_IOC_EVENT_SIGNAL => "SIGNAL".into(),
        KFD_IOC_EVENT_HW_EXCEPTION => "HW_EXCEPTION".into(),
        KFD_IOC_EVENT_DEBUG_EVENT => "DEBUG_EVENT".into(),
        KFD_IOC_EVENT_MEMORY => "MEMORY".into(),
        other => format!("type {other}"),
    }
}

/// Reads a `T` from an ioctl argument.
fn arg<T: FromBytes>(bytes: &[u8]) -> T {
    T::read_from_prefix(bytes)
        .map(|(v, _)| v)
        .unwrap_or_else(|_| panic!("argument of {} bytes", bytes.len()))
}

/// One buffer object as the record shows it.
#[derive(Debug)]
struct Bo {
    va: u64,
    size: u64,
    flags: u32,
    handle: u64,
    /// How the CPU reaches it: `USERPTR`'s own pages, an mmap of the render node or of
    /// `/dev/kfd` (doorbells, MMIO), or not at all.
    cpu: &'static str,
    /// MAP_MEMORY_TO_GPU calls naming it.
    maps: u32,
    /// Index of its ALLOC in the record.
    at: usize,
}

/// Joins `items` compressing runs of equal neighbours as `item ×n`.
fn runs(items: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let mut j = i;
        while j < items.len() && items[j] == items[i] {
            j += 1;
        }
        out.push(if j - i > 1 {
            format!("{} ×{}", items[i], j - i)
        } else {
            items[i].clone()
        });
        i = j;
    }
    out.join(", ")
}

/// The job's facts, by name (see the module docs and `docs/kfd-vs-rocr.md`).
fn facts(job: &Job) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let mut bos: Vec<Bo> = Vec::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut queues: Vec<(usize, CreateQueueArgs)> = Vec::new();
    let mut events: Vec<String> = Vec::new();
    let mut event_page: Option<(String, u64)> = None;
    let mut trap: Option<(u64, u64)> = None;
    let mut acquire_vm_fd = None;
    let mut waits: BTreeSet<String> = BTreeSet::new();
    let mut svm: Vec<(u64, u64, String)> = Vec::new();
    let mut order: Vec<(usize, String)> = Vec::new();
    for (i, call) in job.calls.iter().enumerate() {
        match call {
            KfdCall::Ioctl {
                target: CallTarget::Render(_),
                ..
            } => {
                used.insert("DRM (libdrm_amdgpu queries)".into());
                order.push((i, "DRM".into()));
            }
            // The device makes no ioctl on a dma-buf.
            KfdCall::Ioctl {
                target: CallTarget::DmaBuf(_),
                ..
            } => {}
            KfdCall::Ioctl {
                target: CallTarget::Kfd,
                request,
                before,
                after,
                result,
            } => {
                let name = ioctl_name(*request);
                used.insert(name.clone());
                order.push((i, name.clone()));
                if request & 0xff == 0x0C {
                    let w: WaitEventsArgs = arg(before);
                    let timeout = if w.timeout >= 0xffff_fffe {
                        "infinite"
                    } else {
                        "finite"
                    };
                    // Not how many events: ROCR's async-handler thread waits for as many as
                    // have handlers at the time, which is timing. Nor how a wait ends (a wait
                    // whose events are destroyed ends with EIO, by design in both).
                    // A wait for one event is the same wait whether the caller asked for all
                    // or any: it counts as "any". Runtimes wait for one event besides the
                    // application's wait, and whether such a wait reaches KFD is timing: an
                    // async-handler thread left with only its wake-up event (ROCR 5.2 and 7),
                    // ROCR 7's queue destructor waiting for that thread (after 200 µs of
                    // polling).
                    let all = w.wait_for_all != 0 && w.num_events > 1;
                    waits.insert(format!("{}, {timeout}", if all { "all" } else { "any" }));
                    continue;
                }
                if let Err(e) = result {
                    let errno = match e.raw_os_error() {
                        5 => "EIO".to_owned(),
                        22 => "EINVAL".to_owned(),
                        25 => "ENOTTY".to_owned(),
                        n => format!("errno {n}"),
                    };
                    f.insert(format!("ioctl.{name}.fails"), errno);
                    continue;
                }
                match request & 0xff {
                    0x16 => {
                        let a: AllocMemoryOfGpuArgs = arg(after);
                        let cpu = if a.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
                            "USERPTR (its own pages)"
                        } else {
                            "not mapped"
                        };
                        bos.push(Bo {
                            va: a.va_addr,
                            size: a.size,
                            flags: a.flags,
                            handle: a.handle,
                            cpu,
                            maps: 0,
                            at: i,
                        });
                    }
                    0x18 => {
                        let a: MapMemoryToGpuArgs = arg(before);
                        if let Some(b) = bos.iter_mut().rev().find(|b| b.handle == a.handle) {
                            b.maps += 1;
                        }
                    }
                    0x02 => queues.push((i, arg(before))),
                    0x08 => {
                        let b: CreateEventArgs = arg(before);
                        events.push(format!(
                            "{}{}",
                            event_type_name(b.event_type),
                            if b.auto_reset != 0 {
                                " (auto-reset)"
                            } else {
                                " (manual reset)"
                            }
                        ));
                        if b.event_page_offset != 0 && event_page.is_none() {
                            event_page = Some((event_type_name(b.event_type), b.event_page_offset));
                        }
                    }
                    0x13 => {
                        let t: hsa_emu::device::SetTrapHandlerArgs = arg(before);
                        trap = Some((t.tba_addr, t.tma_addr));
                    }
                    0x20 => {
                        let a: SvmArgs = arg(before);
                        if a.op == KFD_IOCTL_SVM_OP_SET_ATTR {
                            let attrs: Vec<SvmAttribute> = (0..a.nattr as usize)
                                .map(|k| arg(&before[24 + 8 * k..]))
                                .collect();
                            svm.push((a.start_addr, a.size, svm_text(&attrs)));
                        }
                    }
                    0x15 => {
                        let a: AcquireVmArgs = arg(before);
                        acquire_vm_fd = Some(if a.drm_fd as i32 == -1 {
                            "-1 (no DRM file)"
                        } else {
                            "the render node's fd"
                        });
                    }
                    _ => {}
                }
            }
            KfdCall::Mmap {
                target,
                result: Ok(addr),
                ..
            } => {
                // The latest buffer object at that address: a runtime may free one and make
                // another at the same address (libhsakmt 7's MMIO page, re-made when ROCR
                // re-reads the topology).
                if let Some(b) = bos.iter_mut().rev().find(|b| b.va == *addr) {
                    b.cpu = match target {
                        CallTarget::Kfd => "mmap of /dev/kfd",
                        CallTarget::Render(_) => "mmap of the render node",
                        CallTarget::DmaBuf(_) => "mmap of a dma-buf",
                    };
                }
                order.push((
                    i,
                    match target {
                        CallTarget::Kfd => "mmap /dev/kfd".into(),
                        CallTarget::Render(_) => "mmap render node".into(),
                        CallTarget::DmaBuf(_) => "mmap dma-buf".into(),
                    },
                ));
            }
            KfdCall::Mmap { .. } => {}
            other => panic!("a kind of call this comparison does not know: {other:?}"),
        }
    }

    // Purposes: from the queue, the events, the trap handler and the program's own output.
    let mut places: Vec<(String, u64)> = job
        .places
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect();
    let ring = job.places["queue ring"];
    let app = queues
        .iter()
        .find(|(_, q)| q.ring_base_address == ring)
        .map(|(i, q)| (*i, *q))
        .expect("no CREATE_QUEUE with the program's ring");
    let (qi, q) = app;
    places.push(("amd_queue_t".into(), q.write_pointer_address));
    places.push(("EOP buffer".into(), q.eop_buffer_address));
    places.push(("CWSR area".into(), q.ctx_save_restore_address));
    if let Some((tba, tma)) = trap {
        places.push(("trap handler code (TBA)".into(), tba));
        if tma != 0 {
            places.push(("trap handler memory (TMA)".into(), tma));
        } else {
            f.insert("ioctl.SET_TRAP_HANDLER.tma".into(), "0 (none)".into());
        }
    }
    let mut purpose_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (purpose, addr) in &places {
        if let Some(k) = bos
            .iter()
            .position(|b| b.va <= *addr && *addr < b.va + b.size)
        {
            purpose_of.entry(k).or_default().push(purpose.clone());
        } else if let Some((_, size, attrs)) = svm
            .iter()
            .rev()
            .find(|(start, size, _)| *start <= *addr && *addr < start + size)
        {
            // No buffer object: the process's own pages, which the GPU reaches through an
            // SVM range (ROCR 7's context save area).
            f.insert(format!("alloc.{purpose}.flags"), format!("SVM: {attrs}"));
            f.insert(format!("alloc.{purpose}.size"), format!("{size:#x}"));
            f.insert(
                format!("alloc.{purpose}.cpu"),
                "SVM range (its own pages)".into(),
            );
            f.insert(format!("alloc.{purpose}.gpu_map_calls"), "0".into());
            f.insert(format!("alloc.{purpose}.shared_with"), "-".into());
        } else {
            f.insert(format!("alloc.{purpose}"), "no buffer object".into());
        }
    }
    if let Some((ty, handle)) = &event_page {
        if let Some(k) = bos.iter().position(|b| b.handle == *handle) {
            purpose_of.entry(k).or_default().push("event page".into());
        }
        f.insert(
            "event.page_given_by".into(),
            format!("the first {ty} event"),
        );
    }
    for (k, b) in bos.iter().enumerate() {
        if b.flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0 {
            purpose_of.entry(k).or_default().push("doorbell".into());
        }
        if b.flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP != 0 {
            purpose_of
                .entry(k)
                .or_default()
                .push("MMIO remap (HDP flush)".into());
        }
    }
    for (k, purposes) in &purpose_of {
        let b = &bos[*k];
        for p in purposes {
            let others: Vec<&String> = purposes.iter().filter(|o| *o != p).collect();
            f.insert(format!("alloc.{p}.flags"), flags_text(b.flags));
            f.insert(format!("alloc.{p}.size"), format!("{:#x}", b.size));
            f.insert(format!("alloc.{p}.cpu"), b.cpu.to_owned());
            f.insert(format!("alloc.{p}.gpu_map_calls"), b.maps.to_string());
            f.insert(
                format!("alloc.{p}.shared_with"),
                if others.is_empty() {
                    "-".into()
                } else {
                    others
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            );
        }
    }
    // Allocations of no known purpose, by flags: how many and their sizes.
    let mut other: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (k, b) in bos.iter().enumerate() {
        if !purpose_of.contains_key(&k) {
            other.entry(flags_text(b.flags)).or_default().push(b.size);
        }
    }
    for (flags, mut sizes) in other {
        sizes.sort_unstable();
        let sizes: Vec<String> = sizes.iter().map(|s| format!("{s:#x}")).collect();
        f.insert(format!("alloc.other.{flags}"), runs(&sizes));
    }

    // The queue.
    f.insert("queue.count".into(), queues.len().to_string());
    f.insert("queue.ring_size".into(), format!("{:#x}", q.ring_size));
    f.insert("queue.type".into(), q.queue_type.to_string());
    f.insert("queue.percentage".into(), q.queue_percentage.to_string());
    f.insert("queue.priority".into(), q.queue_priority.to_string());
    f.insert("queue.eop_size".into(), format!("{:#x}", q.eop_buffer_size));
    f.insert(
        "queue.ctx_save_size".into(),
        format!("{:#x}", q.ctx_save_restore_size),
    );
    f.insert(
        "queue.ctl_stack_size".into(),
        format!("{:#x}", q.ctl_stack_size),
    );
    f.insert(
        "queue.read_write_pointers".into(),
        format!(
            "amd_queue_t + {:#x} / + {:#x}",
            q.write_pointer_address - job_base(&bos, q.write_pointer_address),
            q.read_pointer_address - job_base(&bos, q.read_pointer_address)
        ),
    );
    // What the application queue needed, in order: its buffer objects (and anything else
    // allocated or mapped meanwhile), CREATE_QUEUE, and the doorbell's mapping right after it
    // (a runtime's other thread, waiting on events, is left out).
    let first_own = purpose_of
        .iter()
        .filter(|(_, p)| {
            p.iter().any(|p| {
                ["queue ring", "amd_queue_t", "EOP buffer", "CWSR area"].contains(&p.as_str())
            })
        })
        .map(|(k, _)| bos[*k].at)
        .min()
        .unwrap_or(qi);
    let mut steps: Vec<String> = Vec::new();
    for (i, what) in &order {
        if *i < first_own || what == "MAP_MEMORY_TO_GPU" {
            continue;
        }
        if ["WAIT_EVENTS", "SET_EVENT"].contains(&what.as_str()) {
            continue;
        }
        let step = match bos.iter().position(|b| b.at == *i) {
            Some(k) => match purpose_of.get(&k) {
                Some(p) => format!("ALLOC {}", p.join("+")),
                None => "ALLOC other".into(),
            },
            None => what.clone(),
        };
        if *i > qi && step != "ALLOC doorbell" && step != "mmap /dev/kfd" {
            break;
        }
        steps.push(step);
    }
    f.insert("order.queue_setup".into(), runs(&steps));

    // Events and waits.
    f.insert("event.created".into(), runs(&events));
    f.insert(
        "wait.kinds".into(),
        waits.into_iter().collect::<Vec<_>>().join("; "),
    );
    if let Some(fd) = acquire_vm_fd {
        f.insert("ioctl.ACQUIRE_VM.drm_fd".into(), fd.into());
    }

    // Which ioctls, and the start-up order up to the first allocation.
    for name in &used {
        f.insert(format!("ioctl.{name}"), "used".into());
    }
    let first_alloc = bos.first().map_or(usize::MAX, |b| b.at);
    let start: Vec<String> = order
        .iter()
        .filter(|(i, _)| *i < first_alloc)
        .map(|(_, w)| w.clone())
        .collect();
    f.insert("order.start".into(), runs(&start));
    f
}

/// An SVM range's attributes, in the order given: `ACCESS` and locations naming a GPU say
/// `GPU` (one GPU here), `CLR_FLAGS` is left out when it clears all but `SET_FLAGS`.
fn svm_text(attrs: &[SvmAttribute]) -> String {
    let flags = |v: u32| {
        let names = [
            (KFD_IOCTL_SVM_FLAG_HOST_ACCESS, "HOST_ACCESS"),
            (KFD_IOCTL_SVM_FLAG_COHERENT, "COHERENT"),
            (0x4, "HIVE_LOCAL"),
            (0x8, "GPU_RO"),
            (0x10, "GPU_EXEC"),
            (0x20, "GPU_READ_MOSTLY"),
            (0x40, "GPU_ALWAYS_MAPPED"),
            (0x80, "EXT_COHERENT"),
        ];
        let mut parts: Vec<String> = names
            .iter()
            .filter(|(b, _)| v & b != 0)
            .map(|(_, n)| (*n).to_owned())
            .collect();
        let rest = v & !names.iter().fold(0, |a, (b, _)| a | b);
        if rest != 0 {
            parts.push(format!("{rest:#x}"));
        }
        parts.join("+")
    };
    let loc = |v: u32| match v {
        KFD_IOCTL_SVM_LOCATION_SYSMEM => "system".to_owned(),
        KFD_IOCTL_SVM_LOCATION_UNDEFINED => "undefined".to_owned(),
        _ => "GPU".to_owned(),
    };
    let set = attrs
        .iter()
        .find(|a| a.type_ == KFD_IOCTL_SVM_ATTR_SET_FLAGS)
        .map(|a| a.value);
    attrs
        .iter()
        .filter_map(|a| {
            Some(match a.type_ {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => format!("PREFERRED_LOC {}", loc(a.value)),
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => format!("PREFETCH_LOC {}", loc(a.value)),
                KFD_IOCTL_SVM_ATTR_ACCESS => "ACCESS GPU".to_owned(),
                KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => "ACCESS_IN_PLACE GPU".to_owned(),
                KFD_IOCTL_SVM_ATTR_NO_ACCESS => "NO_ACCESS GPU".to_owned(),
                KFD_IOCTL_SVM_ATTR_SET_FLAGS => format!("SET_FLAGS {}", flags(a.value)),
                KFD_IOCTL_SVM_ATTR_CLR_FLAGS if Some(!a.value) == set => return None,
                KFD_IOCTL_SVM_ATTR_CLR_FLAGS => format!("CLR_FLAGS {}", flags(a.value)),
                KFD_IOCTL_SVM_ATTR_GRANULARITY => format!("GRANULARITY {:#x}", a.value),
                other => format!("attribute {other} = {:#x}", a.value),
            })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The start of the buffer object holding `addr` (0 when none does).
fn job_base(bos: &[Bo], addr: u64) -> u64 {
    bos.iter()
        .find(|b| b.va <= addr && addr < b.va + b.size)
        .map_or(0, |b| b.va)
}

/// The table of `docs/kfd-vs-rocr.md` whose header row is `| fact | ROCR 5.2 | hsa-rt | why |`.
const ROCR5: &str = "ROCR 5.2";
/// The table whose header row is `| fact | ROCR 7.2.4 | hsa-rt | why |`.
const ROCR7: &str = "ROCR 7.2.4";

/// The difference rows of one table of `docs/kfd-vs-rocr.md` (the one whose header row names
/// `rocr`, [`ROCR5`] or [`ROCR7`], in its second column): fact → (ROCR's value, ours), from
/// the rows `` | `fact` | `rocr` | `ours` | why | `` that follow that header up to the next
/// header row or heading.
fn documented(rocr: &str) -> BTreeMap<String, (String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/kfd-vs-rocr.md");
    let text = std::fs::read_to_string(&path).expect("docs/kfd-vs-rocr.md");
    let mut rows = BTreeMap::new();
    let mut headers = 0;
    let mut inside = false;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("| fact | ") {
            inside = header.split(" | ").next() == Some(rocr);
            headers += usize::from(inside);
            continue;
        }
        if line.starts_with('#') {
            inside = false;
        }
        let Some(inner) = line.strip_prefix("| `") else {
            continue;
        };
        if !inside {
            continue;
        }
        let cells: Vec<&str> = inner.split(" | ").collect();
        if cells.len() < 4 {
            continue;
        }
        let unquote = |s: &str| s.trim().trim_matches('`').to_owned();
        let fact = unquote(cells[0]);
        let old = rows.insert(fact.clone(), (unquote(cells[1]), unquote(cells[2])));
        assert!(
            old.is_none(),
            "docs/kfd-vs-rocr.md: `{fact}` twice in the {rocr} table"
        );
    }
    assert_eq!(
        headers, 1,
        "docs/kfd-vs-rocr.md: one table with the header `| fact | {rocr} | hsa-rt | why |`"
    );
    rows
}

/// Fails unless every fact whose values differ between `theirs` (ROCR's, `rocr` naming which)
/// and `mine` is a row of that ROCR's table with both values as they are, and every row of the
/// table is still a difference.
fn assert_documented(
    rocr: &str,
    theirs: &BTreeMap<String, String>,
    mine: &BTreeMap<String, String>,
) {
    let keys: BTreeSet<&String> = theirs.keys().chain(mine.keys()).collect();
    let dash = "-".to_owned();
    let mut differences = BTreeMap::new();
    for k in keys {
        let (a, b) = (theirs.get(k).unwrap_or(&dash), mine.get(k).unwrap_or(&dash));
        if a != b {
            differences.insert(k.clone(), (a.clone(), b.clone()));
        }
    }
    let doc = documented(rocr);
    let mut problems = Vec::new();
    for (k, (a, b)) in &differences {
        match doc.get(k) {
            None => problems.push(format!("new difference: | `{k}` | `{a}` | `{b}` |")),
            Some((da, db)) if da != a || db != b => problems.push(format!(
                "changed: `{k}`: the document says {rocr} `{da}`, hsa-rt `{db}`; now | `{k}` | `{a}` | `{b}` |"
            )),
            Some(_) => {}
        }
    }
    for k in doc.keys() {
        if !differences.contains_key(k) {
            problems.push(format!(
                "no longer a difference (remove its row): `{k}` = `{}`",
                theirs.get(k).unwrap_or(&dash)
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/kfd-vs-rocr.md ({rocr} table) is out of date:\n{}\n\nall facts ({rocr} | hsa-rt):\n{}",
        problems.join("\n"),
        theirs
            .keys()
            .chain(mine.keys())
            .collect::<BTreeSet<_>>()
            .iter()
            .map(|k| format!(
                "{k}: {} | {}",
                theirs.get(*k).unwrap_or(&dash),
                mine.get(*k).unwrap_or(&dash)
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The comparison has substance: the facts both share include the queue's sizes.
    for k in ["queue.ring_size", "queue.eop_size", "queue.ctx_save_size"] {
        assert_eq!(theirs.get(k), mine.get(k), "{k}");
        assert!(theirs.contains_key(k), "{k}");
    }
}

#[test]
fn every_difference_from_rocr_is_in_the_document() {
    let Some(exe) = vector_copy() else {
        return;
    };
    let Some(rocr_job) = rocr(&exe) else {
        return;
    };
    let ours_job = ours(&exe);
    assert_documented(ROCR5, &facts(&rocr_job), &facts(&ours_job));
}

/// The same job on Debian's ROCR 7.2.4 (in the ROCm 7 chroot, under kfd-emu) and on hsa-rt's
/// library (the same program, in the chroot), held to the doc's ROCR 7.2.4 table as the test
/// above holds ROCR 5.2 to its own.
#[test]
fn rocr7_and_hsa_rt_differ_only_as_documented() {
    let Some(root) = chroot7() else {
        return;
    };
    let exe = vector_copy7(&root);
    let theirs = facts(&rocr7(&root, exe));
    let mine = facts(&ours7(&root, exe));
    assert_documented(ROCR7, &theirs, &mine);
}
