//! The bodies of the fuzz targets in `fuzz/fuzz_targets/` (one function per target, named as
//! the target). Each takes arbitrary bytes and drives one parser of outside input; a target
//! fails only by panicking (or hanging), which is exactly what the parsers promise never to do
//! on bad input. `tests/tests/fuzz_corpus.rs` replays `fuzz/corpus/<target>/` and
//! `fuzz/artifacts/<target>/` through these functions in a normal `cargo test`.
//!
//! Besides "no panic", each target checks a property the parser documents (round trips,
//! error statuses), so a wrong answer is a failure too.

use std::path::Path;
use std::sync::OnceLock;

mod engines;
mod image;
pub mod seeds;

pub use engines::{drm_ioctl, ih_ring, mqd, pm4, sdma};
pub use image::{image, image_descriptor};

use hsa_baremetal::ih::IhEntry;
use hsa_core::loader::code_object::AlignedBytes;
use hsa_core::loader::CodeObject;
use hsa_core::packet::AqlPacket;
use hsa_core::Status;
use hsa_emu::device::{builtin_topology, complete_capture, EmulatedKfd, BUILTIN_GPU_ID};
use hsa_gfx9::{self as gfx9, Gfx9Target};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::driver::KfdDriver;
use hsa_linux::topology::{MemoryTree, Properties, Topology};

/// A fuzz target's body: takes arbitrary bytes, fails only by panicking.
pub type Harness = fn(&[u8]);

/// The fuzz targets, by name (the names of `fuzz/fuzz_targets/*.rs` and of the corpus
/// directories).
pub const TARGETS: &[(&str, Harness)] = &[
    ("code_object", code_object),
    ("topology", topology),
    ("packet", packet),
    ("ih_entry", ih_entry),
    ("gfx9_decode", gfx9_decode),
    ("kfd_ioctl", kfd_ioctl),
    ("gfx9_llvm_diff", gfx9_llvm_diff),
    ("pm4", pm4),
    ("sdma", sdma),
    ("mqd", mqd),
    ("ih_ring", ih_ring),
    ("image", image),
    ("image_descriptor", image_descriptor),
    ("drm_ioctl", drm_ioctl),
];

/// Code-object reader: [`CodeObject::parse`] on the bytes (copied to aligned storage), then
/// everything a loader reads from an accepted object: metadata kernels and their arguments,
/// kernels with descriptors, variables, dynamic relocations, segments; then what
/// `hsainfo --disassemble` reads: `.text`, its symbols, each kernel's code range, and the
/// whole disassembly report.
///
/// Property: any error is `InvalidCodeObject` (the bytes are aligned, so never
/// `InvalidArgument`), or `InvalidIsa` from the disassembler for a processor it does not
/// know; a kernel's code lies inside `.text`.
pub fn code_object(data: &[u8]) {
    let aligned = AlignedBytes::new(data);
    let co = match CodeObject::parse(aligned.as_bytes()) {
        Ok(co) => co,
        Err(e) => {
            assert_eq!(e.status(), Status::InvalidCodeObject, "{e}");
            return;
        }
    };
    let _ = co.target();
    let md = co.metadata();
    assert!(md.kernels().count() <= md.kernel_count() as usize);
    assert_eq!(co.kernels().count(), co.kernel_count() as usize);
    for k in md.kernels().flatten() {
        for arg in k.args() {
            let _ = arg;
        }
    }
    for k in co.kernels().flatten() {
        let _ = co.kernel(k.metadata.name);
    }
    for v in co.variables() {
        let _ = v;
    }
    if let Ok(relocs) = co.dynamic_relocations() {
        for r in relocs.take(4096) {
            let _ = r;
        }
    }
    for seg in co.load_segments() {
        let _ = seg;
    }
    let _ = co.bytes_at_vaddr(co.image_start(), co.image_size());
    for i in 0..4 {
        let _ = co.dynamic_symbol_by_index(i);
    }
    let text = co.text_section();
    if let Ok(symbols) = co.text_symbols() {
        for s in symbols.take(4096) {
            let _ = s;
        }
    }
    for k in co.kernels().flatten() {
        match (co.kernel_code(&k), &text) {
            (Ok(code), Ok(text)) => assert!(
                code.vaddr >= text.vaddr
                    && code.vaddr + code.code.len() as u64 <= text.end()
                    && !code.code.is_empty()
            ),
            (Ok(_), Err(e)) => panic!("kernel code without .text: {e}"),
            (Err(e), _) => assert_eq!(e.status(), Status::InvalidCodeObject, "{e}"),
        }
    }
    if let Err(e) = hsa_tools::report::disassembly::disassembly_report(data, "fuzz") {
        assert!(
            matches!(e.status(), Status::InvalidCodeObject | Status::InvalidIsa),
            "{e}"
        );
    }
}

/// Topology parser, pure part and tree: the bytes are split at NUL bytes into chunks; each
/// chunk goes through [`Properties::parse`] (so [`hsa_linux::topology::parse_properties`]) and its typed lookups, and the
/// chunks also become files of an in-memory sysfs tree (see [`topology_tree`]) that
/// [`Topology::read_from`] walks. An accepted topology is then completed as the emulated device
/// completes captures.
///
/// Property: every error is `Status::Error` and names a file.
pub fn topology(data: &[u8]) {
    for chunk in data.split(|&b| b == 0) {
        let Ok(text) = std::str::from_utf8(chunk) else {
            continue;
        };
        match Properties::parse(text, "fuzz") {
            Ok(p) => {
                for e in p.entries() {
                    assert!(!e.key.is_empty() && !e.value.is_empty() && e.line >= 1);
                }
                for key in ["simd_count", "gpu_id", "size_in_bytes", "x"] {
                    let _ = p.get(key);
                    let _ = p.u64(key);
                    let _ = p.u32_or_0(key);
                    let _ = p.i32_or_0(key);
                }
            }
            Err(e) => {
                assert_eq!(e.status(), Status::Error);
                assert!(e.detail().to_string().starts_with("fuzz:"), "{e}");
            }
        }
    }
    let root = Path::new("/fuzz/topology");
    let tree = topology_tree(root, data);
    match Topology::read_from(&tree, root) {
        Ok(mut t) => {
            let _ = (t.gpu_count(), t.cpu_count(), t.xgmi_hives());
            for n in &t.nodes {
                let _ = (n.processor(), n.target_id(true), n.local_memory_bytes());
            }
            complete_capture(&mut t);
        }
        Err(e) => {
            assert_eq!(e.status(), Status::Error, "{e}");
            assert!(e.detail().to_string().starts_with("/fuzz/topology"), "{e}");
        }
    }
}

/// Whether `data`, as the [`topology`] target reads it, builds a tree that
/// [`Topology::read_from`] accepts (the corpus should mostly reach past the reader's checks).
pub fn topology_accepts(data: &[u8]) -> bool {
    let root = Path::new("/fuzz/topology");
    Topology::read_from(&topology_tree(root, data), root).is_ok()
}

/// Builds a sysfs topology tree under `root`, in memory, from fuzz bytes. Chunks (split at
/// NUL): chunk 0 is `generation_id`, chunk 1 `system_properties` (each absent when its chunk
/// is empty); every later chunk starts
/// with a selector byte `b` and the rest is the file's content. With `s = b - 1` (wrapping;
/// the minus one keeps selector 0, node 0's `properties`, from being a NUL): node `s & 3`,
/// file by `(s >> 2) & 7`: 0 `properties`, 1 `name`, 2 `gpu_id`, 3
/// `mem_banks/<k>/properties`, 4 `caches/<k>/properties`, 5 `io_links/<k>/properties`, 6
/// `p2p_links/<k>/properties`, 7 a stray directory `nodes/x<k>` (not a number); `k = s >>
/// 5`. At most 64 chunks are used. Every node directory named by any chunk exists (possibly
/// without `properties`), and `nodes/` always does. [`topology_seed`] is the inverse for a
/// real capture.
pub fn topology_tree(root: &Path, data: &[u8]) -> MemoryTree {
    let mut tree = MemoryTree::new();
    let nodes = root.join("nodes");
    tree.add_dir(&nodes);
    for (i, chunk) in data.split(|&b| b == 0).enumerate().take(64) {
        let path = match i {
            0 | 1 if chunk.is_empty() => continue,
            0 => root.join("generation_id"),
            1 => root.join("system_properties"),
            _ => {
                let Some((&b, _)) = chunk.split_first() else {
                    continue;
                };
                let s = b.wrapping_sub(1);
                let node = nodes.join(format!("{}", s & 3));
                let k = s >> 5;
                match (s >> 2) & 7 {
                    0 => node.join("properties"),
                    1 => node.join("name"),
                    2 => node.join("gpu_id"),
                    3 => node.join(format!("mem_banks/{k}/properties")),
                    4 => node.join(format!("caches/{k}/properties")),
                    5 => node.join(format!("io_links/{k}/properties")),
                    6 => node.join(format!("p2p_links/{k}/properties")),
                    _ => {
                        tree.add_dir(nodes.join(format!("x{k}")));
                        continue;
                    }
                }
            }
        };
        let content = if i < 2 { chunk } else { &chunk[1..] };
        tree.add_file(path, content);
    }
    tree
}

/// Encodes the first four nodes of a topology root on disk (a captured dump) as
/// [`topology_tree`] input: `generation_id`, `system_properties`, and per node
/// `properties`, `name`, `gpu_id` and the first memory banks, caches, IO and P2P links, as
/// many as fit in 64 chunks (node by node, so the first nodes are complete). Files holding a
/// NUL byte are skipped, and so are links to a node beyond the four (the reader refuses a link
/// to a node the topology lacks). This makes the checked-in seeds in `fuzz/seeds/topology/`.
///
/// # Panics
/// When a file under `root` that exists cannot be read (a test-data problem).
pub fn topology_seed(root: &Path) -> Vec<u8> {
    let read = |p: &Path| -> Vec<u8> {
        match std::fs::read(p) {
            Ok(b) if !b.contains(&0) => b,
            Ok(_) => Vec::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => panic!("{}: {e}", p.display()),
        }
    };
    let mut chunks: Vec<Vec<u8>> = vec![
        read(&root.join("generation_id")),
        read(&root.join("system_properties")),
    ];
    let add = |s: u8, path: &Path, chunks: &mut Vec<Vec<u8>>| {
        if chunks.len() < 64 && path.is_file() {
            let mut c = vec![s.wrapping_add(1)];
            c.extend(read(path));
            chunks.push(c);
        }
    };
    for node in 0u8..4 {
        let dir = root.join(format!("nodes/{node}"));
        for (file, name) in [(0u8, "properties"), (1, "name"), (2, "gpu_id")] {
            add(node | file << 2, &dir.join(name), &mut chunks);
        }
    }
    for k in 0u8..8 {
        for node in 0u8..4 {
            let dir = root.join(format!("nodes/{node}"));
            for (file, sub) in [(3u8, "mem_banks"), (5, "io_links"), (6, "p2p_links")] {
                let path = dir.join(format!("{sub}/{k}/properties"));
                let text = String::from_utf8(read(&path)).unwrap_or_default();
                let beyond = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("node_to "))
                    .any(|to| to.trim().parse::<u32>().map_or(true, |to| to >= 4));
                if !beyond {
                    add(node | file << 2 | k << 5, &path, &mut chunks);
                }
            }
            if k < 2 {
                let path = dir.join(format!("caches/{k}/properties"));
                add(node | 4 << 2 | k << 5, &path, &mut chunks);
            }
        }
    }
    chunks.join(&0u8)
}

/// Packet view: the first 64 bytes (zero-padded) through [`AqlPacket::new_checked`] and
/// `parse`; the whole input through `new_checked` (which must reject a short buffer).
///
/// Property: an error from `parse` is `InvalidPacketFormat`; a parsed kernel dispatch has
/// 1..=3 dimensions and no zero work-group or grid size in a used dimension.
pub fn packet(data: &[u8]) {
    let short = AqlPacket::new_checked(data);
    if data.len() < 64 {
        assert!(short.is_err());
    }
    let mut bytes = [0u8; 64];
    let n = data.len().min(64);
    bytes[..n].copy_from_slice(&data[..n]);
    let view = AqlPacket::new_checked(&bytes[..]).expect("64 bytes are a packet");
    let _ = (
        view.header(),
        view.packet_type(),
        view.args(),
        view.dep_signals(),
    );
    match view.parse() {
        Ok(hsa_core::packet::Packet::KernelDispatch(k)) => {
            let dims = usize::from(k.dimensions);
            assert!((1..=3).contains(&dims), "dimensions {dims}");
            for d in 0..dims {
                assert!(k.workgroup_size[d] != 0 && k.grid_size[d] != 0, "{k:?}");
            }
        }
        Ok(_) => {}
        Err(e) => assert_eq!(e.status(), Status::InvalidPacketFormat, "{e}"),
    }
}

/// IH entry decoder: the first 32 bytes (zero-padded) through [`IhEntry::decode`].
///
/// Property: an accepted entry encodes back to the same bytes (decode rejects every reserved
/// bit, so nothing is lost).
pub fn ih_entry(data: &[u8]) {
    let mut bytes = [0u8; 32];
    let n = data.len().min(32);
    bytes[..n].copy_from_slice(&data[..n]);
    if let Ok(e) = IhEntry::decode(&bytes) {
        assert_eq!(e.encode(), bytes, "{e:?}");
    }
}

/// GFX9 decoder: byte 0 picks the target (gfx900, gfx90a, gfx942, gfx950), the rest is
/// decoded as an instruction stream until the first error, as the disassembler walks a code
/// section, each instruction also printed.
///
/// Property: an error is `IllegalInstruction`; a decoded instruction is 4 or 8 bytes, or 16
/// for gfx950's scaled MFMA (as `Instruction::size` documents), and never longer than what
/// was left.
pub fn gfx9_decode(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let target = match sel % 4 {
        0 => Gfx9Target::Gfx900,
        1 => Gfx9Target::Gfx90a,
        2 => Gfx9Target::Gfx942,
        _ => Gfx9Target::Gfx950,
    };
    for _ in 0..1024 {
        if rest.is_empty() {
            break;
        }
        match gfx9::decode(rest, target) {
            Ok(inst) => {
                let _ = inst.name();
                let _ = format!("{inst:?}");
                let _ = inst.to_string();
                let len = usize::from(inst.size);
                // 16: gfx950's scaled MFMA.
                let sixteen = target == Gfx9Target::Gfx950 && len == 16;
                assert!(matches!(len, 4 | 8) || sixteen, "size {len}");
                assert!(len <= rest.len(), "size {len} > {} left", rest.len());
                rest = &rest[len..];
            }
            Err(e) => {
                assert_eq!(e.status(), Status::IllegalInstruction, "{e}");
                break;
            }
        }
    }
}

/// The decoder against `llvm-mc-19 --disassemble` ([`crate::llvm_diff`]): byte 0 picks the
/// target (gfx900, gfx906, gfx908, gfx90a, gfx942), the rest is up to 256 cases of 8 bytes
/// (a short tail is padded with zeros), all decoded by one llvm-mc run.
///
/// Property: no case is ours-only or text-differs (the same text and size as llvm-mc, or
/// both reject; words llvm-mc decodes and ours rejects are allowed). Without llvm-mc-19 the
/// cases are only decoded (no panic).
pub fn gfx9_llvm_diff(data: &[u8]) {
    use crate::llvm_diff;
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let target = [
        Gfx9Target::Gfx900,
        Gfx9Target::Gfx906,
        Gfx9Target::Gfx908,
        Gfx9Target::Gfx90a,
        Gfx9Target::Gfx942,
    ][usize::from(sel) % 5];
    let cases: Vec<[u8; 8]> = rest
        .chunks(8)
        .take(256)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            b
        })
        .collect();
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    if !*AVAILABLE.get_or_init(llvm_diff::llvm_mc_available) {
        for c in &cases {
            let _ = gfx9::decode(c, target).map(|i| i.to_string());
        }
        return;
    }
    let answers = llvm_diff::llvm_decode(&cases, target).expect("llvm-mc-19 runs");
    for (c, a) in cases.iter().zip(&answers) {
        let (v, class, ex) = llvm_diff::compare(c, target, a);
        assert!(
            !v.is_bug(),
            "{} {class}: {:08x} {:08x}: ours {}, llvm {}",
            v.name(),
            ex.words[0],
            ex.words[1],
            ex.ours,
            ex.llvm
        );
    }
}

/// Scratch memory for user pointers in [`kfd_ioctl`]: 16 pages, page-aligned, alive for the
/// whole process (a USERPTR allocation made by one input may be touched by the device until
/// that input's device is dropped; the memory stays valid forever).
fn scratch() -> (u64, usize) {
    const LEN: usize = 16 * 4096;
    static SCRATCH: OnceLock<usize> = OnceLock::new();
    let base = *SCRATCH.get_or_init(|| {
        let v: &'static mut [u64] = Vec::leak(vec![0u64; (LEN + 4096) / 8]);
        let p = v.as_mut_ptr() as usize;
        (p + 4095) & !4095
    });
    (base as u64, LEN)
}

/// Largest VRAM/GTT allocation the ioctl target lets through at its requested size, bytes;
/// bigger requests below 1 TiB are cut to this (to keep memfd sizes small), larger ones stay
/// (they fail with ENOMEM or EINVAL without touching memory).
const KFD_FUZZ_MAX_ALLOC_BYTES: u64 = 16 << 20;

/// Longest WAIT_EVENTS timeout the ioctl target lets through, ms (an infinite wait would
/// hang the fuzzer: nothing else signals).
const KFD_FUZZ_MAX_WAIT_MS: u32 = 2;

/// The emulated KFD's ioctl dispatcher: a fresh [`EmulatedKfd`] (built-in profile) per input,
/// then a sequence of ioctls, each `[selector, pointer mode, lo, hi, args...]`: the selector
/// picks one of the implemented requests (or, for selectors >= 32, a raw request number from
/// the next 4 bytes with a size of `lo` bytes); the argument struct is filled from the input
/// and zero-padded. Harness rules, so the device only touches memory the harness owns:
/// - every user pointer field (aperture array, device-id array, event array, CU mask,
///   USERPTR address) is replaced by: null, an unmapped low address (0x10), a kernel address,
///   or an address in the scratch area chosen by `lo`/`hi` — by the pointer mode byte;
/// - `gpu_id` fields are the built-in GPU's when the pointer mode's bit 7 is set;
/// - allocation sizes between 16 MiB and 1 TiB are cut to 16 MiB;
/// - WAIT_EVENTS timeouts are at most 2 ms;
/// - DBG_TRAP (selector 33) targets this process unless `hi`'s bit 0 asks for the input's
///   pid; its pointers (runtime info, queue-id array, exception info, snapshot buffer) are
///   the pointer mode's, each copy-out bounded (16, 32, 32 and 248 bytes) and kept inside
///   the scratch area; `ENABLE`'s descriptor is the harness's `/dev/null` (pointer mode bit 6)
///   or none; RUNTIME_ENABLE is preceded by DBG_TRAP's `SEND_RUNTIME_EVENT` of
///   `EC_PROCESS_RUNTIME`, so a debugged runtime's wait for the debugger ends.
///
/// Property: no panic, no hang, and after dropping the device every queue thread is gone
/// (checked by `EmulatedKfd`'s drop joining them).
pub fn kfd_ioctl(data: &[u8]) {
    let Ok(dev) = EmulatedKfd::new(builtin_topology()) else {
        return;
    };
    let (sbase, slen) = scratch();
    // The debugger's descriptor for DBG_TRAP's ENABLE: writes to it go nowhere.
    let dev_null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .ok();
    let dbg_fd = dev_null
        .as_ref()
        .map_or(u32::MAX, |f| std::os::fd::AsRawFd::as_raw_fd(f) as u32);
    let mut rest = data;
    let mut ops = 0;
    while rest.len() >= 4 && ops < 64 {
        ops += 1;
        let (sel, mode, lo, hi) = (rest[0], rest[1], rest[2], rest[3]);
        rest = &rest[4..];
        let ptr = match mode & 3 {
            0 => 0u64,
            1 => 0x10,
            2 => 0xffff_8000_0000_1000,
            _ => sbase + (u64::from(u16::from_le_bytes([lo, hi])) % slen as u64),
        };
        let page_ptr = ptr & !4095;
        let fix_gpu = mode & 0x80 != 0;
        let take = |rest: &mut &[u8], n: usize| -> Vec<u8> {
            let k = n.min(rest.len());
            let mut v = rest[..k].to_vec();
            v.resize(n, 0);
            *rest = &rest[k..];
            v
        };
        macro_rules! run {
            ($req:expr, $ty:ty, |$a:ident| $fix:block) => {{
                let raw = take(&mut rest, size_of::<$ty>());
                let mut $a =
                    <$ty as zerocopy::FromBytes>::read_from_bytes(&raw[..]).expect("sized buffer");
                $fix;
                // SAFETY: the harness rules above keep EmulatedKfd::ioctl's contract: every
                // pointer field is unmapped (null, 0x10, a kernel address) or in the scratch
                // area, which lives forever; the aperture copy-out is cut to one entry inside
                // it; a USERPTR range is unmapped or inside it. The device only reads the other
                // arrays, and uses queue addresses only inside its own allocations.
                let _ = unsafe { dev.ioctl($req, zerocopy::IntoBytes::as_mut_bytes(&mut $a)) };
            }};
        }
        match sel % 40 {
            0 => run!(AMDKFD_IOC_GET_VERSION, GetVersionArgs, |a| {}),
            1 => run!(AMDKFD_IOC_CREATE_QUEUE, CreateQueueArgs, |a| {
                if fix_gpu {
                    a.gpu_id = BUILTIN_GPU_ID;
                }
            }),
            2 => run!(AMDKFD_IOC_DESTROY_QUEUE, DestroyQueueArgs, |a| {
                a.queue_id %= 4;
            }),
            3 => run!(AMDKFD_IOC_SET_MEMORY_POLICY, SetMemoryPolicyArgs, |a| {
                if fix_gpu {
                    a.gpu_id = BUILTIN_GPU_ID;
                }
            }),
            4 => run!(AMDKFD_IOC_GET_CLOCK_COUNTERS, GetClockCountersArgs, |a| {}),
            5 => run!(AMDKFD_IOC_UPDATE_QUEUE, UpdateQueueArgs, |a| {}),
            6 => run!(AMDKFD_IOC_CREATE_EVENT, CreateEventArgs, |a| {}),
            7 => run!(AMDKFD_IOC_DESTROY_EVENT, DestroyEventArgs, |a| {}),
            8 => run!(AMDKFD_IOC_SET_EVENT, SetEventArgs, |a| {}),
            9 => run!(AMDKFD_IOC_RESET_EVENT, ResetEventArgs, |a| {}),
            10 => run!(AMDKFD_IOC_WAIT_EVENTS, WaitEventsArgs, |a| {
                a.events_ptr = ptr;
                a.timeout = a.timeout.min(KFD_FUZZ_MAX_WAIT_MS);
            }),
            11 => run!(
                AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
                GetProcessAperturesNewArgs,
                |a| {
                    a.kfd_process_device_apertures_ptr = ptr;
                    // Keep the copy-out inside the scratch area.
                    a.num_of_nodes = a.num_of_nodes.min(1);
                    if (sbase..sbase + slen as u64).contains(&ptr) && ptr + 64 > sbase + slen as u64
                    {
                        a.kfd_process_device_apertures_ptr = sbase;
                    }
                }
            ),
            12 => run!(AMDKFD_IOC_ACQUIRE_VM, AcquireVmArgs, |a| {
                if fix_gpu {
                    a.gpu_id = BUILTIN_GPU_ID;
                }
            }),
            13..=17 => run!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AllocMemoryOfGpuArgs, |a| {
                if fix_gpu {
                    a.gpu_id = BUILTIN_GPU_ID;
                }
                if a.size > KFD_FUZZ_MAX_ALLOC_BYTES && a.size < 1 << 40 {
                    a.size = KFD_FUZZ_MAX_ALLOC_BYTES;
                }
                if a.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
                    // The device may read and write USERPTR memory until it is freed: only
                    // the scratch area (alive forever) or addresses that fault.
                    a.mmap_offset = page_ptr;
                    let end = sbase + slen as u64;
                    if (sbase..end).contains(&page_ptr) {
                        a.size = a.size.min(end - page_ptr);
                    }
                }
            }),
            18 => run!(AMDKFD_IOC_FREE_MEMORY_OF_GPU, FreeMemoryOfGpuArgs, |a| {}),
            19 | 20 => run!(AMDKFD_IOC_MAP_MEMORY_TO_GPU, MapMemoryToGpuArgs, |a| {
                a.device_ids_array_ptr = ptr;
            }),
            21 => run!(
                AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
                UnmapMemoryFromGpuArgs,
                |a| {
                    a.device_ids_array_ptr = ptr;
                }
            ),
            22 => run!(AMDKFD_IOC_SET_CU_MASK, SetCuMaskArgs, |a| {
                a.cu_mask_ptr = ptr;
            }),
            23 => run!(AMDKFD_IOC_SET_XNACK_MODE, SetXnackModeArgs, |a| {}),
            24 => run!(AMDKFD_IOC_AVAILABLE_MEMORY, GetAvailableMemoryArgs, |a| {
                if fix_gpu {
                    a.gpu_id = BUILTIN_GPU_ID;
                }
            }),
            25 => {
                // A runtime being debugged waits in RUNTIME_ENABLE for the debugger's
                // EC_PROCESS_RUNTIME: send it first (EINVAL when the debug trap is off).
                let mut ev = [0u8; 32];
                ev[..4].copy_from_slice(&std::process::id().to_le_bytes());
                ev[4..8].copy_from_slice(&2u32.to_le_bytes());
                ev[8..16].copy_from_slice(&(1u64 << 47).to_le_bytes());
                // SAFETY: SEND_RUNTIME_EVENT of EC_PROCESS_RUNTIME alone follows no pointer.
                let _ = unsafe { dev.ioctl(hsa_emu::device::AMDKFD_IOC_DBG_TRAP, &mut ev) };
                run!(AMDKFD_IOC_RUNTIME_ENABLE, RuntimeEnableArgs, |a| {})
            }
            26 => run!(
                AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
                SetScratchBackingVaArgs,
                |a| {}
            ),
            27 => {
                // Copy input bytes into scratch (device-id and event arrays read from there).
                let raw = take(&mut rest, usize::from(lo));
                let off = (usize::from(hi) * 64).min(slen - raw.len());
                write_scratch(sbase + off as u64, &raw);
            }
            28 => {
                // AMDKFD_IOC_SVM as libhsakmt sends it: the head, `lo % 8` attributes from
                // the input (their values made the GPU's gpu_id when asked), their size in
                // the request; `hi` picks the head's page-aligned range or the input's.
                let n = usize::from(lo % 8);
                let mut arg = take(&mut rest, 24 + 8 * n);
                if hi & 1 != 0 {
                    let start = u64::from(hi) << 12;
                    arg[..8].copy_from_slice(&start.to_le_bytes());
                    arg[8..16].copy_from_slice(&(u64::from(lo) << 12).to_le_bytes());
                }
                if fix_gpu {
                    for i in 0..n {
                        let o = 24 + 8 * i + 4;
                        arg[o..o + 4].copy_from_slice(&BUILTIN_GPU_ID.to_le_bytes());
                    }
                }
                let req = AMDKFD_IOC_SVM + ((8 * n as u32) << 16);
                // SAFETY: SVM carries no pointer: the attributes are in the argument itself.
                let _ = unsafe { dev.ioctl(req, &mut arg) };
            }
            29 => run!(
                AMDKFD_IOC_GET_QUEUE_WAVE_STATE,
                GetQueueWaveStateArgs,
                |a| {
                    a.queue_id %= 4;
                    // The header copy-out (16 bytes on the built-in GPU's one XCC) stays
                    // inside the scratch area.
                    a.ctl_stack_address = ptr;
                    if (sbase..sbase + slen as u64).contains(&ptr) && ptr + 16 > sbase + slen as u64
                    {
                        a.ctl_stack_address = sbase;
                    }
                }
            ),
            30 => run!(AMDKFD_IOC_ALLOC_QUEUE_GWS, AllocQueueGwsArgs, |a| {
                a.queue_id %= 4;
            }),
            31 => run!(AMDKFD_IOC_GET_DMABUF_INFO, GetDmabufInfoArgs, |a| {
                // Read only: the device names what the descriptor is and writes nothing
                // through metadata_ptr.
                a.metadata_ptr = ptr;
            }),
            32 => {
                // SMI_EVENTS hands out a descriptor: the harness closes it, after writing the
                // input's mask to it, so a long run does not run out of descriptors.
                let raw = take(&mut rest, 8);
                let mut a = SmiEventsArgs {
                    gpuid: if fix_gpu {
                        BUILTIN_GPU_ID
                    } else {
                        u32::from_le_bytes([lo, hi, 0, 0])
                    },
                    anon_fd: 0,
                };
                // SAFETY: SMI_EVENTS carries no pointer.
                if unsafe {
                    dev.ioctl(
                        AMDKFD_IOC_SMI_EVENTS,
                        zerocopy::IntoBytes::as_mut_bytes(&mut a),
                    )
                }
                .is_ok()
                {
                    // SAFETY: a successful SMI_EVENTS hands the caller a new descriptor it owns.
                    let fd = unsafe {
                        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(
                            a.anon_fd as i32,
                        )
                    };
                    let _ = rustix::io::write(&fd, &raw);
                }
            }
            33 => {
                // DBG_TRAP: the operation from `lo`, the pointer fields and the sizes that
                // bound the copy-out kept to the harness rules.
                let mut arg = take(&mut rest, 32);
                let op = u32::from(lo % 16);
                if hi & 1 == 0 {
                    arg[..4].copy_from_slice(&std::process::id().to_le_bytes());
                }
                arg[4..8].copy_from_slice(&op.to_le_bytes());
                let end = sbase + slen as u64;
                let bounded = |len: u64| {
                    if (sbase..end).contains(&ptr) && ptr + len > end {
                        sbase
                    } else {
                        ptr
                    }
                };
                let u32_at = |arg: &[u8], o: usize| {
                    u32::from_le_bytes(arg[o..o + 4].try_into().expect("4 bytes"))
                };
                match op {
                    // ENABLE: rinfo_ptr, rinfo_size (at most 16 bytes copied), dbg_fd.
                    0 => {
                        arg[16..24].copy_from_slice(&bounded(16).to_le_bytes());
                        let fd = if mode & 0x40 != 0 { dbg_fd } else { u32::MAX };
                        arg[28..32].copy_from_slice(&fd.to_le_bytes());
                    }
                    // SUSPEND_QUEUES: queue_array_ptr, num_queues (at most 8).
                    6 => {
                        let n = u32_at(&arg, 24) % 9;
                        arg[24..28].copy_from_slice(&n.to_le_bytes());
                        arg[16..24].copy_from_slice(&bounded(32).to_le_bytes());
                    }
                    // RESUME_QUEUES: queue_array_ptr, num_queues (at most 8).
                    7 => {
                        let n = u32_at(&arg, 16) % 9;
                        arg[16..20].copy_from_slice(&n.to_le_bytes());
                        arg[8..16].copy_from_slice(&bounded(32).to_le_bytes());
                    }
                    // QUERY_EXCEPTION_INFO: info_ptr, info_size (at most 32).
                    12 => {
                        let n = u32_at(&arg, 16) % 33;
                        arg[16..20].copy_from_slice(&n.to_le_bytes());
                        arg[8..16].copy_from_slice(&bounded(32).to_le_bytes());
                    }
                    // GET_QUEUE/DEVICE_SNAPSHOT: buffer, at most 2 entries of at most 128.
                    13 | 14 => {
                        let (n, size) = (u32_at(&arg, 24) % 3, u32_at(&arg, 28) % 129);
                        arg[24..28].copy_from_slice(&n.to_le_bytes());
                        arg[28..32].copy_from_slice(&size.to_le_bytes());
                        arg[16..24].copy_from_slice(&bounded(248).to_le_bytes());
                    }
                    _ => {}
                }
                // SAFETY: the pointer fields DBG_TRAP writes through are unmapped or inside the
                // scratch area with their copy-out bounded to it (above); the descriptor is
                // the harness's /dev/null or none.
                let _ = unsafe { dev.ioctl(hsa_emu::device::AMDKFD_IOC_DBG_TRAP, &mut arg) };
            }
            _ => {
                // A raw request number. Numbers that carry user pointers (or that may block)
                // keep the harness's rules by being sent as their typed request above.
                let raw_req = u32::from_le_bytes(take(&mut rest, 4).try_into().unwrap_or([0; 4]));
                let nr = raw_req & 0xff;
                if matches!(
                    nr,
                    0x0C | 0x14 | 0x16 | 0x18 | 0x19 | 0x1A | 0x1B | 0x1F | 0x25 | 0x26
                ) && (raw_req >> 8) & 0xff == u32::from(b'K')
                {
                    continue;
                }
                let size = ((raw_req >> 16) & 0x3fff) as usize;
                let len = if lo & 1 == 0 {
                    size.min(512)
                } else {
                    usize::from(lo)
                };
                let mut arg = take(&mut rest, len);
                // SAFETY: the numbers whose pointers EmulatedKfd writes through or keeps
                // (GET_PROCESS_APERTURES_NEW, ALLOC_MEMORY_OF_GPU, GET_QUEUE_WAVE_STATE,
                // DBG_TRAP), RUNTIME_ENABLE (which may wait for a debugger) and
                // SMI_EVENTS (whose descriptor the harness must close) were skipped above, with the
                // other pointer-carrying ones and WAIT_EVENTS (which may block); every
                // other pointer it only reads through /proc/self/mem or uses only inside its
                // own allocations (its ioctl's `# Safety`).
                let _ = unsafe { dev.ioctl(raw_req, &mut arg) };
            }
        }
    }
    let live = dev.live_handles();
    assert!(live.queues <= hsa_emu::device::MAX_QUEUES_PER_PROCESS as usize);
    drop(dev);
}

/// Copies `bytes` into the scratch area at `addr` (inside [`scratch`]).
fn write_scratch(addr: u64, bytes: &[u8]) {
    let (base, len) = scratch();
    assert!(addr >= base && addr + bytes.len() as u64 <= base + len as u64);
    // Through /proc/self/mem-free plain copies: the scratch area is ordinary heap memory
    // the harness owns; the emulated device may touch it concurrently only through USERPTR
    // allocations, with the same raw copies.
    let dst = addr as usize as *mut u8;
    for (i, b) in bytes.iter().enumerate() {
        // The scratch area is raw memory shared with the device; volatile byte stores keep
        // the compiler from assuming it owns it exclusively.
        #[allow(unsafe_code)]
        // SAFETY: dst..dst+len is inside the leaked, never-freed scratch allocation (checked
        // above); u8 has no alignment or validity requirement.
        unsafe {
            dst.add(i).write_volatile(*b)
        };
    }
}
