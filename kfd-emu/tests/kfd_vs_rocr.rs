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
                    waits.insert(format!(
                        "{}, {timeout}",
                        if w.wait_for_all != 0 { "all" } else { "any" }
                    ));
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
                if let Some(b) = bos.iter_mut().find(|b| b.va == *addr) {
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
        places.push(("trap handler memory (TMA)".into(), tma));
    }
    let mut purpose_of: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (purpose, addr) in &places {
        if let Some(k) = bos
            .iter()
            .position(|b| b.va <= *addr && *addr < b.va + b.size)
        {
            purpose_of.entry(k).or_default().push(purpose.clone());
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

/// The start of the buffer object holding `addr` (0 when none does).
fn job_base(bos: &[Bo], addr: u64) -> u64 {
    bos.iter()
        .find(|b| b.va <= addr && addr < b.va + b.size)
        .map_or(0, |b| b.va)
}

/// The difference rows of `docs/kfd-vs-rocr.md`: fact → (ROCR's value, ours), from table rows
/// `` | `fact` | `rocr` | `ours` | why | ``.
fn documented() -> BTreeMap<String, (String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/kfd-vs-rocr.md");
    let text = std::fs::read_to_string(&path).expect("docs/kfd-vs-rocr.md");
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let Some(inner) = line.strip_prefix("| `") else {
            continue;
        };
        let cells: Vec<&str> = inner.split(" | ").collect();
        if cells.len() < 4 {
            continue;
        }
        let unquote = |s: &str| s.trim().trim_matches('`').to_owned();
        rows.insert(unquote(cells[0]), (unquote(cells[1]), unquote(cells[2])));
    }
    rows
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
    let theirs = facts(&rocr_job);
    let mine = facts(&ours_job);
    let keys: BTreeSet<&String> = theirs.keys().chain(mine.keys()).collect();
    let dash = "-".to_owned();
    let mut differences = BTreeMap::new();
    for k in keys {
        let (a, b) = (theirs.get(k).unwrap_or(&dash), mine.get(k).unwrap_or(&dash));
        if a != b {
            differences.insert(k.clone(), (a.clone(), b.clone()));
        }
    }
    let doc = documented();
    let mut problems = Vec::new();
    for (k, (a, b)) in &differences {
        match doc.get(k) {
            None => problems.push(format!("new difference: | `{k}` | `{a}` | `{b}` |")),
            Some((da, db)) if da != a || db != b => problems.push(format!(
                "changed: `{k}`: the document says ROCR `{da}`, hsa-rt `{db}`; now | `{k}` | `{a}` | `{b}` |"
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
        "docs/kfd-vs-rocr.md is out of date:\n{}\n\nall facts (ROCR | hsa-rt):\n{}",
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
