//! The catalogue of bad inputs: one row per bad input from outside (an application, a file,
//! sysfs, the kernel), each with the exact `Status` it must produce and a fragment of the
//! message (which names the bad field and value). Every row runs in `cargo test`; a row that
//! returns `Ok`, panics, or produces another status or message fails the test, and all
//! failing rows are reported together.

use hsa_core::isa::TargetId;
use hsa_core::loader::code_object::AlignedBytes;
use hsa_core::loader::executable::Executable;
use hsa_core::loader::CodeObject;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::{AqlPacket, HeaderFlags, KernelDispatch};
use hsa_core::platform::fake::FakePlatform;
use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::{Error, GpuVa, NodeId, Status};
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::topology::{parse_properties, Properties};
use hsa_linux::LinuxPlatform;
use rustix::io::Errno;
use std::sync::Arc;

type Outcome = Result<(), Error>;

struct Row {
    what: &'static str,
    status: Status,
    fragment: &'static str,
    run: fn() -> Outcome,
}

const fn row(
    what: &'static str,
    status: Status,
    fragment: &'static str,
    run: fn() -> Outcome,
) -> Row {
    Row {
        what,
        status,
        fragment,
        run,
    }
}

// ---- queues (FakePlatform's GPU: node 1) -------------------------------------------------

fn queue(size: u32, min: u32, max: u32) -> Outcome {
    let p = FakePlatform::new();
    let q = AqlQueue::create(&p, &QueueConfig::new(NodeId(1), size, min, max))?;
    q.destroy()
}

/// A full queue (nothing consumes it: the fake only records queues) that was closed, then
/// `reserve` on it: the wait for room must end with an error.
fn reserve_on_closed_full_queue() -> Outcome {
    let p = FakePlatform::new();
    let q = AqlQueue::create(&p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17))?;
    q.add_write_index(64, hsa_core::signal::MemoryOrder::Relaxed);
    q.close()?;
    q.reserve(1).map(|_| ())
}

/// `reserve` on a full queue whose packet processor stopped it (a malformed packet: the
/// processor stores its error code into the queue's inactive signal, as the CP does): the wait
/// for room ends with that status.
fn reserve_on_stopped_queue() -> Outcome {
    let p = FakePlatform::new();
    let q = AqlQueue::create(&p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17))?;
    q.add_write_index(64, hsa_core::signal::MemoryOrder::Relaxed);
    let code = hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false);
    q.inactive_signal()
        .store(code, hsa_core::signal::StoreOrder::Release);
    let r = q.reserve(1).map(|_| ());
    q.destroy()?;
    r
}

// ---- packets ------------------------------------------------------------------------------

/// A valid 1-D kernel dispatch packet's bytes (header: type 2, system scopes), then `edit`.
fn dispatch_bytes(edit: impl FnOnce(&mut [u8; 64])) -> [u8; 64] {
    let p = KernelDispatch {
        flags: HeaderFlags::SYSTEM,
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [256, 1, 1],
        private_segment_size_bytes: 0,
        group_segment_size_bytes: 0,
        kernel_object: GpuVa(0x7f00_0000_1000),
        kernarg_address: GpuVa(0x7f00_0000_2000),
        completion_signal: hsa_core::abi::SignalHandle::NULL,
    }
    .emit()
    .expect("valid dispatch");
    let mut b = [0u8; 64];
    b.copy_from_slice(&p.bytes);
    // The body is encoded with an INVALID header; the first 32 bits are published apart.
    b[..4].copy_from_slice(&p.header_word.to_le_bytes());
    edit(&mut b);
    b
}

fn parse(bytes: [u8; 64]) -> Outcome {
    AqlPacket::new_checked(&bytes[..])?.parse().map(|_| ())
}

fn put_u16(b: &mut [u8; 64], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8; 64], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8; 64], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

// ---- memory -------------------------------------------------------------------------------

fn runtime() -> Runtime<Arc<FakePlatform>> {
    Runtime::new(Arc::new(FakePlatform::new())).expect("runtime on the fake platform")
}

fn fine_pool(rt: &Runtime<Arc<FakePlatform>>) -> hsa_core::runtime::PoolHandle {
    let cpu = rt.first_cpu().expect("cpu").handle();
    rt.find_pool(cpu, GlobalFlags::FINE_GRAINED)
        .expect("fine-grained pool")
        .handle()
}

// ---- code objects -------------------------------------------------------------------------

fn code_object_file(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_code_object(bytes: &[u8]) -> Outcome {
    let aligned = AlignedBytes::new(bytes);
    CodeObject::parse(aligned.as_bytes()).map(|_| ())
}

fn disassemble(bytes: &[u8]) -> Outcome {
    hsa_tools::report::disassembly::disassembly_report(bytes, "f").map(|_| ())
}

fn load_for(agent_isa: &str, file: &str) -> Outcome {
    let p = FakePlatform::new();
    let mut exe = Executable::new(&p);
    let isa = TargetId::parse(agent_isa)?;
    exe.load_code_object(NodeId(1), &isa, &code_object_file(file), MemoryKind::System)?;
    exe.destroy()
}

// ---- ioctl errors through the Linux backend ------------------------------------------------

fn with_failing_ioctl(errno: Errno, f: fn(&LinuxPlatform) -> Outcome) -> Outcome {
    let emulated = EmulatedKfd::new(builtin_topology())?;
    let platform = SelectedDevice::emulated(emulated.clone())?.platform;
    emulated.fail_nth_ioctl(0, errno);
    f(&platform)
}

fn allocate_vram(p: &LinuxPlatform) -> Outcome {
    let gpu = NodeId(1);
    // On success the chunk is freed by the platform's drop.
    p.allocate_memory(&MemoryRequest {
        node: gpu,
        kind: MemoryKind::DeviceLocal,
        size_bytes: 2 << 20,
        align_bytes: 4096,
        flags: MemoryFlags::empty(),
    })
    .map(|_| ())
}

fn catalogue() -> Vec<Row> {
    vec![
        // Queues.
        row("queue of 0 packets", Status::InvalidArgument, "size_packets 0 is 0 or not a power of two", || queue(0, 64, 1 << 17)),
        row("queue of 1000 packets", Status::InvalidArgument, "size_packets 1000 is 0 or not a power of two", || queue(1000, 64, 1 << 17)),
        row("queue above the agent's max", Status::InvalidArgument, "exceeds the agent's max", || queue(1 << 18, 64, 1 << 17)),
        row("agent min not a power of two", Status::InvalidArgument, "min_size_packets 65 is not a power of two", || queue(128, 65, 1 << 17)),
        row("agent min above max", Status::InvalidArgument, "exceeds max_size_packets", || queue(128, 1 << 18, 1 << 17)),
        row("reserve on a full, closed queue", Status::InvalidQueue, "was destroyed", reserve_on_closed_full_queue),
        row("reserve on a queue its processor stopped", Status::InvalidPacketFormat, "was stopped by its packet processor", reserve_on_stopped_queue),
        // Packets (checked view, what the packet processor runs).
        row("the valid dispatch itself is accepted (control)", Status::Error, "control row", || {
            parse(dispatch_bytes(|_| {}))?;
            Err(hsa_core::error!(Status::Error, "control row: parsed"))
        }),
        row("packet type 6", Status::InvalidPacketFormat, "packet type (header bits 0..8) is 6; must be in 0..=5", || parse(dispatch_bytes(|b| b[0] = 6))),
        row("packet type 255", Status::InvalidPacketFormat, "packet type (header bits 0..8) is 255", || parse(dispatch_bytes(|b| b[0] = 255))),
        row("acquire fence scope 3", Status::InvalidPacketFormat, "acquire fence scope (header bits 9..11) is 3", || parse(dispatch_bytes(|b| put_u16(b, 0, 2 | 1 << 8 | 3 << 9 | 2 << 11)))),
        row("release fence scope 3", Status::InvalidPacketFormat, "release fence scope (header bits 11..13) is 3", || parse(dispatch_bytes(|b| put_u16(b, 0, 2 | 2 << 9 | 3 << 11)))),
        row("dispatch with 0 dimensions", Status::InvalidPacketFormat, "dimensions is 0; must be in 1..=3", || parse(dispatch_bytes(|b| put_u16(b, 2, 0)))),
        row("setup 4 (the 2-bit dimensions field reads 0)", Status::InvalidPacketFormat, "dimensions is 0", || parse(dispatch_bytes(|b| put_u16(b, 2, 4)))),
        row("workgroup_size_x 0", Status::InvalidPacketFormat, "workgroup_size_x is 0; must be >= 1", || parse(dispatch_bytes(|b| put_u16(b, 4, 0)))),
        row("workgroup_size_y 2 in a 1-D grid", Status::InvalidPacketFormat, "workgroup_size_y is 2; must be 1 when dimensions is 1", || parse(dispatch_bytes(|b| put_u16(b, 6, 2)))),
        row("grid_size_x 0", Status::InvalidPacketFormat, "grid_size_x is 0; must be >= 1", || parse(dispatch_bytes(|b| put_u32(b, 12, 0)))),
        row("grid_size_z 0", Status::InvalidPacketFormat, "grid_size_z is 0", || parse(dispatch_bytes(|b| put_u32(b, 20, 0)))),
        row("grid below the work-group", Status::InvalidPacketFormat, "grid_size_x is 32; must be >= workgroup_size_x (64)", || parse(dispatch_bytes(|b| put_u32(b, 12, 32)))),
        row("null kernel object", Status::InvalidPacketFormat, "kernel_object is null (0x0)", || parse(dispatch_bytes(|b| put_u64(b, 32, 0)))),
        row("misaligned kernel object", Status::InvalidPacketFormat, "kernel_object is 0x7f0000001008; must be 64-byte aligned", || parse(dispatch_bytes(|b| put_u64(b, 32, 0x7f00_0000_1008)))),
        // hsa.h: a dispatch's kernarg_address "May be NULL" (a kernel without arguments), so the
        // wire format accepts it; the builder is stricter (see the builder row below).
        row("null kernarg address on the wire is accepted", Status::Success, "", || parse(dispatch_bytes(|b| put_u64(b, 40, 0)))),
        row("misaligned kernarg address", Status::InvalidPacketFormat, "kernarg_address is 0x7f0000002004; must be 16-byte aligned", || parse(dispatch_bytes(|b| put_u64(b, 40, 0x7f00_0000_2004)))),
        row("vendor packet with AmdFormat 7", Status::InvalidPacketFormat, "AmdFormat (vendor packet byte 2) is 7", || parse(dispatch_bytes(|b| { put_u16(b, 0, 2 << 9 | 2 << 11); b[2] = 7; }))),
        row("barrier-value with condition 9", Status::InvalidPacketFormat, "condition is 9; must be in 0..=3", || parse(dispatch_bytes(|b| { *b = [0; 64]; put_u16(b, 0, 2 << 9 | 2 << 11); b[2] = 2; put_u64(b, 8, 0x1000); put_u32(b, 32, 9); }))),
        // hsa_ext_amd.h: a 0 dependency signal is a satisfied dependency (HIP 7 sends one).
        row("barrier-value with null signal is accepted", Status::Success, "", || parse(dispatch_bytes(|b| { *b = [0; 64]; put_u16(b, 0, 2 << 9 | 2 << 11); b[2] = 2; }))),
        row("short packet buffer", Status::InvalidArgument, "AQL packet buffer is 63 bytes; must be 64", || AqlPacket::new_checked(&[0u8; 63][..]).map(|_| ())),
        row("builder: dispatch with grid 0", Status::InvalidArgument, "grid_size_x is 0; must be >= 1", || {
            KernelDispatch::one_dimensional(GpuVa(0x1000), GpuVa(0x2000), 1, 0).emit().map(|_| ())
        }),
        row("builder: dispatch with null kernarg", Status::InvalidArgument, "kernarg_address is null", || {
            KernelDispatch::one_dimensional(GpuVa(0x1000), GpuVa(0), 1, 1).emit().map(|_| ())
        }),
        // Memory.
        row("allocate 0 bytes", Status::InvalidArgument, "size_bytes is 0; must be at least 1", || {
            let rt = runtime();
            rt.allocate(fine_pool(&rt), 0).map(|_| ())
        }),
        row("allocate more than the pool holds", Status::InvalidAllocation, "size_bytes is 1152921504606846976; the pool's alloc_max_size_bytes is", || {
            let rt = runtime();
            rt.allocate(fine_pool(&rt), 1 << 60).map(|_| ())
        }),
        row("double free", Status::InvalidArgument, "was not allocated from any memory pool", || {
            let rt = runtime();
            let a = rt.allocate(fine_pool(&rt), 4096)?;
            rt.free(a.va)?;
            rt.free(a.va)
        }),
        row("free of a foreign pointer", Status::InvalidArgument, "0xdead0000", || runtime().free(GpuVa(0xdead_0000))),
        row("free of an interior pointer", Status::InvalidArgument, "is not an allocation of this pool (never allocated, or freed)", || {
            let rt = runtime();
            let a = rt.allocate(fine_pool(&rt), 4096)?;
            rt.free(GpuVa(a.va.0 + 64))
        }),
        // Code objects.
        row("code object for the wrong ISA", Status::IncompatibleArguments, "code object ISA amdgcn-amd-amdhsa--gfx1030 (generic version 0) does not run on agent ISA amdgcn-amd-amdhsa--gfx90a", || load_for("amdgcn-amd-amdhsa--gfx90a", "kernels-gfx1030-v5.hsaco")),
        row("code object truncated to 100 bytes", Status::InvalidCodeObject, "program headers", || parse_code_object(&code_object_file("kernels-gfx90a-v5.hsaco")[..100])),
        row("code object truncated to half", Status::InvalidCodeObject, "is past the file", || {
            let f = code_object_file("kernels-gfx90a-v5.hsaco");
            parse_code_object(&f[..f.len() / 2])
        }),
        row("not an ELF file", Status::InvalidCodeObject, "not an ELF file (magic [23, 21, 2f, 62])", || parse_code_object(b"#!/bin/sh\necho this is not a code object\n")),
        row("ELF for another machine (e_machine 62)", Status::InvalidCodeObject, "e_machine is 62, expected EM_AMDGPU (224)", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            f[18..20].copy_from_slice(&62u16.to_le_bytes());
            parse_code_object(&f)
        }),
        row("big-endian ELF", Status::InvalidCodeObject, "EI_DATA is 2, expected little-endian (1)", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            f[5] = 2;
            parse_code_object(&f)
        }),
        row("unknown processor in e_flags", Status::InvalidCodeObject, "EF_AMDGPU_MACH 0xff is not a known AMDGCN processor", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            f[48] = 0xff; // EF_AMDGPU_MACH: low byte of e_flags
            parse_code_object(&f)
        }),
        row("program headers beyond the file", Status::InvalidCodeObject, "program headers", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            f[32..40].copy_from_slice(&(1u64 << 40).to_le_bytes()); // e_phoff
            parse_code_object(&f)
        }),
        row("misaligned code object bytes", Status::InvalidArgument, "are not 8-byte aligned", || {
            let f = code_object_file("kernels-gfx90a-v5.hsaco");
            let aligned = AlignedBytes::new(&[&[0u8][..], &f[..]].concat());
            CodeObject::parse(&aligned.as_bytes()[1..]).map(|_| ())
        }),
        // hsainfo --code-object FILE --disassemble.
        row("disassembly: kernel symbol past the end of .text", Status::InvalidCodeObject, "kernel \"vector_copy\": symbol \"vector_copy\" at 0x1c00 size 4096 lies outside .text [0x1c00, 0x22c0)", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            // .dynsym at file offset 0x900; entry 1 (vector_copy): st_size at +16.
            f[0x900 + 24 + 16..0x900 + 24 + 24].copy_from_slice(&0x1000u64.to_le_bytes());
            disassemble(&f)
        }),
        row("disassembly: kernel symbol of size 0", Status::InvalidCodeObject, "symbol \"vector_copy\" has size 0, so its code range is unknown", || {
            let mut f = code_object_file("kernels-gfx90a-v5.hsaco");
            f[0x900 + 24 + 16..0x900 + 24 + 24].copy_from_slice(&0u64.to_le_bytes());
            disassemble(&f)
        }),
        row("disassembly: gfx1030 code", Status::InvalidIsa, "cannot disassemble gfx1030 code: the disassembler knows only gfx9", || disassemble(&code_object_file("kernels-gfx1030-v5.hsaco"))),
        // Malformed sysfs properties.
        row("properties: key without value", Status::Error, "props:2: malformed line 'simd_count': expected '<key> <value>'", || parse_properties("cpu_cores_count 4\nsimd_count\n", "props").map(|_| ())),
        row("properties: bad key", Status::Error, "props:1: malformed key 'simd-count'", || parse_properties("simd-count 4\n", "props").map(|_| ())),
        row("properties: duplicate key", Status::Error, "props:2: duplicate key 'gpu_id'", || parse_properties("gpu_id 1\ngpu_id 2\n", "props").map(|_| ())),
        row("properties: line too long", Status::Error, "props:1: line longer than 16384 bytes", || {
            let long = format!("sibling_map {}\n", "1,".repeat(10_000));
            parse_properties(&long, "props").map(|_| ())
        }),
        row("properties: not a number", Status::Error, "props:1: simd_count value 'four' is not a decimal number", || {
            Properties::parse("simd_count four\n", "props")?.u64("simd_count").map(|_| ())
        }),
        row("properties: u32 overflow", Status::Error, "props:1: simd_count value 4294967296 out of range for u32", || {
            Properties::parse("simd_count 4294967296\n", "props")?.u32_or_0("simd_count").map(|_| ())
        }),
        // ioctl errors, as the Linux backend reports them.
        row("ALLOC_MEMORY_OF_GPU fails with ENOMEM", Status::OutOfResources, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: Cannot allocate memory (errno 12)", || with_failing_ioctl(Errno::NOMEM, allocate_vram)),
        row("ALLOC_MEMORY_OF_GPU fails with EINVAL", Status::InvalidArgument, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: Invalid argument (errno 22)", || with_failing_ioctl(Errno::INVAL, allocate_vram)),
        row("ALLOC_MEMORY_OF_GPU fails with EFAULT", Status::InvalidArgument, "Bad address (errno 14)", || with_failing_ioctl(Errno::FAULT, allocate_vram)),
        row("ALLOC_MEMORY_OF_GPU fails with EBUSY", Status::InvalidRuntimeState, "Device or resource busy (errno 16)", || with_failing_ioctl(Errno::BUSY, allocate_vram)),
        row("ALLOC_MEMORY_OF_GPU fails with EPERM", Status::Error, "Operation not permitted (errno 1)", || with_failing_ioctl(Errno::PERM, allocate_vram)),
        row("CREATE_QUEUE fails with ENOSPC", Status::OutOfResources, "AMDKFD_IOC_CREATE_QUEUE: No space left on device (errno 28)", || {
            let emulated = EmulatedKfd::new(builtin_topology())?;
            let rt = Runtime::new(Arc::new(SelectedDevice::emulated(emulated.clone())?.platform))?;
            let gpu = rt.first_gpu().expect("gpu");
            let config = QueueConfig::new(NodeId(gpu.node()), 1024, gpu.queue_min_size(), gpu.queue_max_size());
            // The platform's first queue also starts its queue-error monitor (the event page
            // and two events): made and destroyed first, so that every queue below makes the
            // same ioctls.
            AqlQueue::create(rt.platform(), &config)?.destroy()?;
            // The queue's ring and amd_queue_t are allocated first; fail the next CREATE_QUEUE.
            let mut n = 0;
            loop {
                emulated.fail_nth_ioctl(n, Errno::NOSPC);
                match AqlQueue::create(rt.platform(), &config) {
                    Ok(q) => { q.destroy()?; n += 1; }
                    Err(e) if e.detail().to_string().contains("CREATE_QUEUE") || n > 64 => return Err(e),
                    Err(_) => n += 1,
                }
            }
        }),
    ]
}

/// How often `text` names the status `c_name` (`HSA_STATUS_ERROR` is not counted inside
/// `HSA_STATUS_ERROR_INVALID_ARGUMENT`).
fn names_of(text: &str, c_name: &str) -> usize {
    text.match_indices(c_name)
        .filter(|(i, _)| {
            !text[i + c_name.len()..].starts_with(|c: char| c == '_' || c.is_ascii_alphanumeric())
        })
        .count()
}

/// Every row's error, as displayed (message, then status name), names its status once: a
/// message does not repeat the status the error already carries.
#[test]
fn every_bad_input_gives_its_status_and_message() {
    let mut failures = Vec::new();
    let rows = catalogue();
    for r in &rows {
        let got = std::panic::catch_unwind(r.run);
        match got {
            Err(_) => failures.push(format!("{}: panicked", r.what)),
            // A row whose status is SUCCESS documents an input that must be accepted.
            Ok(Ok(())) if r.status == Status::Success => {}
            Ok(Ok(())) => failures.push(format!("{}: accepted", r.what)),
            Ok(Err(e)) => {
                let shown = e.to_string();
                if names_of(&shown, e.status().c_name()) != 1
                    || (shown.contains("(os error") && shown.contains("(errno"))
                {
                    failures.push(format!(
                        "{}: \"{shown}\" does not name its status (or errno) once",
                        r.what
                    ));
                }
                if e.status() != r.status || !e.detail().to_string().contains(r.fragment) {
                    failures.push(format!(
                        "{}: got {:?} \"{}\", want {:?} containing \"{}\"",
                        r.what,
                        e.status(),
                        e.detail(),
                        r.status,
                        r.fragment
                    ));
                }
            }
        }
    }
    assert!(rows.len() >= 50, "the catalogue has {} rows", rows.len());
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
