//! The `abi` layouts, enum values and packet encodings against the C headers themselves.
//!
//! Compiles (with `$CC`, else `cc`) a C program that includes `<hsa/hsa.h>`,
//! `<hsa/hsa_ext_amd.h>`, `<hsa/amd_hsa_queue.h>` and `<hsa/amd_hsa_signal.h>` (Debian
//! `libhsa-runtime-dev`, ROCR 5.2; override the include root with `HSA_INCLUDE_DIR`), runs it,
//! and compares every line it prints (`<key> <value>`) with the value the Rust side computes
//! for the same key. The table drives both sides: a key the C program does not print fails.
//!
//! Checked: size, alignment, and every field's offset and size of the packet structs,
//! `hsa_queue_t`, `amd_queue_t`, `amd_signal_t`, `hsa_signal_t` (and, on the C side, that the
//! fields listed tile the struct with no gap, so no field is left out); every `hsa_status_t`
//! code in `Status::ALL`; packet types, fence scopes, header bit positions and widths, setup
//! dimension bits, queue types and features, `AMD_QUEUE_PROPERTIES_*`, `AMD_SIGNAL_KIND_*`,
//! `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`; and the 64 bytes of packets filled field by field in C
//! versus the same packets from the Rust builders.
//!
//! When the headers or the compiler are absent the test prints `skipped: <why>` and passes.

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use hsa_core::abi::packet::{
    AgentDispatchPacket, AmdVendorPacketHeader, BarrierPacket, BarrierValuePacket, FenceScope,
    KernelDispatchPacket, PacketType, AMD_PACKET_TYPE_BARRIER_VALUE,
    HEADER_ACQUIRE_FENCE_SCOPE_SHIFT, HEADER_ACQUIRE_FENCE_SCOPE_WIDTH, HEADER_BARRIER_SHIFT,
    HEADER_BARRIER_WIDTH, HEADER_RELEASE_FENCE_SCOPE_SHIFT, HEADER_RELEASE_FENCE_SCOPE_WIDTH,
    HEADER_TYPE_SHIFT, HEADER_TYPE_WIDTH, SETUP_DIMENSIONS_SHIFT, SETUP_DIMENSIONS_WIDTH,
};
use hsa_core::abi::queue::{
    AmdQueue, HsaQueue, QueueType, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING,
    AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER, AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS,
    AMD_QUEUE_PROPERTIES_IS_PTR64, AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE,
    QUEUE_FEATURE_AGENT_DISPATCH, QUEUE_FEATURE_KERNEL_DISPATCH,
};
use hsa_core::abi::signal::{
    AmdSignal, AMD_SIGNAL_KIND_DOORBELL, AMD_SIGNAL_KIND_INVALID, AMD_SIGNAL_KIND_LEGACY_DOORBELL,
    AMD_SIGNAL_KIND_USER,
};
use hsa_core::abi::SignalHandle;
use hsa_core::packet::{
    AgentDispatch, BarrierAnd, BarrierValue, EncodedPacket, HeaderFlags, KernelDispatch,
    PacketHeader, MAX_BARRIER_VALUE_CONDITION,
};
use hsa_core::signal::{SignalCondition, WaitState};
use hsa_core::{GpuVa, Status};

/// One compared value: the key both sides print, the C expression, the Rust value.
struct Entry {
    key: String,
    c_expr: String,
    rust: i64,
}

fn entry(key: impl Into<String>, c_expr: impl Into<String>, rust: i64) -> Entry {
    Entry {
        key: key.into(),
        c_expr: c_expr.into(),
        rust,
    }
}

/// A C enumerator or macro compared with the Rust value of the same meaning.
fn named(c_name: &str, rust: i64) -> Entry {
    entry(c_name, c_name, rust)
}

fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// One C struct: size, alignment, and (offset, size) of each listed field.
struct Layout {
    c_type: &'static str,
    fields: Vec<&'static str>,
    entries: Vec<Entry>,
}

macro_rules! layout {
    ($rust:ty, $c:literal { $( $rf:tt => $cf:literal ),* $(,)? }) => {{
        let mut entries = vec![
            entry(concat!("sizeof ", $c), concat!("sizeof(", $c, ")"), size_of::<$rust>() as i64),
            entry(concat!("alignof ", $c), concat!("_Alignof(", $c, ")"), align_of::<$rust>() as i64),
        ];
        $(
            entries.push(entry(
                concat!("offsetof ", $c, ".", $cf),
                concat!("offsetof(", $c, ", ", $cf, ")"),
                offset_of!($rust, $rf) as i64,
            ));
            entries.push(entry(
                concat!("fieldsize ", $c, ".", $cf),
                concat!("sizeof(((", $c, " *)0)->", $cf, ")"),
                field_size(|p: &$rust| &p.$rf) as i64,
            ));
        )*
        Layout { c_type: $c, fields: vec![$($cf),*], entries }
    }};
}

fn layouts() -> Vec<Layout> {
    vec![
        layout!(KernelDispatchPacket, "hsa_kernel_dispatch_packet_t" {
            header => "header", setup => "setup", workgroup_size_x => "workgroup_size_x",
            workgroup_size_y => "workgroup_size_y", workgroup_size_z => "workgroup_size_z",
            reserved0 => "reserved0", grid_size_x => "grid_size_x", grid_size_y => "grid_size_y",
            grid_size_z => "grid_size_z", private_segment_size => "private_segment_size",
            group_segment_size => "group_segment_size", kernel_object => "kernel_object",
            kernarg_address => "kernarg_address", reserved2 => "reserved2",
            completion_signal => "completion_signal",
        }),
        layout!(AgentDispatchPacket, "hsa_agent_dispatch_packet_t" {
            header => "header", type_ => "type", reserved0 => "reserved0",
            return_address => "return_address", arg => "arg", reserved2 => "reserved2",
            completion_signal => "completion_signal",
        }),
        layout!(BarrierPacket, "hsa_barrier_and_packet_t" {
            header => "header", reserved0 => "reserved0", reserved1 => "reserved1",
            dep_signal => "dep_signal", reserved2 => "reserved2",
            completion_signal => "completion_signal",
        }),
        layout!(BarrierPacket, "hsa_barrier_or_packet_t" {
            header => "header", reserved0 => "reserved0", reserved1 => "reserved1",
            dep_signal => "dep_signal", reserved2 => "reserved2",
            completion_signal => "completion_signal",
        }),
        layout!(AmdVendorPacketHeader, "hsa_amd_vendor_packet_header_t" {
            header => "header", amd_format => "AmdFormat", reserved => "reserved",
        }),
        layout!(BarrierValuePacket, "hsa_amd_barrier_value_packet_t" {
            header => "header", reserved0 => "reserved0", signal => "signal", value => "value",
            mask => "mask", cond => "cond", reserved1 => "reserved1", reserved2 => "reserved2",
            reserved3 => "reserved3", completion_signal => "completion_signal",
        }),
        layout!(HsaQueue, "hsa_queue_t" {
            type_ => "type", features => "features", base_address => "base_address",
            doorbell_signal => "doorbell_signal", size => "size", reserved1 => "reserved1",
            id => "id",
        }),
        layout!(AmdQueue, "amd_queue_t" {
            hsa_queue => "hsa_queue", reserved1 => "reserved1",
            write_dispatch_id => "write_dispatch_id",
            group_segment_aperture_base_hi => "group_segment_aperture_base_hi",
            private_segment_aperture_base_hi => "private_segment_aperture_base_hi",
            max_cu_id => "max_cu_id", max_wave_id => "max_wave_id",
            max_legacy_doorbell_dispatch_id_plus_1 => "max_legacy_doorbell_dispatch_id_plus_1",
            legacy_doorbell_lock => "legacy_doorbell_lock", reserved2 => "reserved2",
            read_dispatch_id => "read_dispatch_id",
            read_dispatch_id_field_base_byte_offset => "read_dispatch_id_field_base_byte_offset",
            compute_tmpring_size => "compute_tmpring_size",
            scratch_resource_descriptor => "scratch_resource_descriptor",
            scratch_backing_memory_location => "scratch_backing_memory_location",
            scratch_backing_memory_byte_size => "scratch_backing_memory_byte_size",
            scratch_wave64_lane_byte_size => "scratch_wave64_lane_byte_size",
            queue_properties => "queue_properties", reserved3 => "reserved3",
            queue_inactive_signal => "queue_inactive_signal", reserved4 => "reserved4",
        }),
        layout!(AmdSignal, "amd_signal_t" {
            kind => "kind", value => "value", event_mailbox_ptr => "event_mailbox_ptr",
            event_id => "event_id", reserved1 => "reserved1", start_ts => "start_ts",
            end_ts => "end_ts", queue_ptr => "queue_ptr", reserved3 => "reserved3",
        }),
        layout!(SignalHandle, "hsa_signal_t" { 0 => "handle" }),
    ]
}

fn enums() -> Vec<Entry> {
    let mut v: Vec<Entry> = Status::ALL
        .iter()
        .map(|s| named(s.c_name(), i64::from(s.raw())))
        .collect();
    for (c, t) in [
        (
            "HSA_PACKET_TYPE_VENDOR_SPECIFIC",
            PacketType::VendorSpecific,
        ),
        ("HSA_PACKET_TYPE_INVALID", PacketType::Invalid),
        (
            "HSA_PACKET_TYPE_KERNEL_DISPATCH",
            PacketType::KernelDispatch,
        ),
        ("HSA_PACKET_TYPE_BARRIER_AND", PacketType::BarrierAnd),
        ("HSA_PACKET_TYPE_AGENT_DISPATCH", PacketType::AgentDispatch),
        ("HSA_PACKET_TYPE_BARRIER_OR", PacketType::BarrierOr),
    ] {
        v.push(named(c, t as i64));
    }
    for (c, s) in [
        ("HSA_FENCE_SCOPE_NONE", FenceScope::None),
        ("HSA_FENCE_SCOPE_AGENT", FenceScope::Agent),
        ("HSA_FENCE_SCOPE_SYSTEM", FenceScope::System),
    ] {
        v.push(named(c, s as i64));
    }
    for (c, x) in [
        ("HSA_PACKET_HEADER_TYPE", HEADER_TYPE_SHIFT),
        ("HSA_PACKET_HEADER_WIDTH_TYPE", HEADER_TYPE_WIDTH),
        ("HSA_PACKET_HEADER_BARRIER", HEADER_BARRIER_SHIFT),
        ("HSA_PACKET_HEADER_WIDTH_BARRIER", HEADER_BARRIER_WIDTH),
        (
            "HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE",
            HEADER_ACQUIRE_FENCE_SCOPE_SHIFT,
        ),
        (
            "HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE",
            HEADER_ACQUIRE_FENCE_SCOPE_WIDTH,
        ),
        (
            "HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE",
            HEADER_RELEASE_FENCE_SCOPE_SHIFT,
        ),
        (
            "HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE",
            HEADER_RELEASE_FENCE_SCOPE_WIDTH,
        ),
        (
            "HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS",
            SETUP_DIMENSIONS_SHIFT,
        ),
        (
            "HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS",
            SETUP_DIMENSIONS_WIDTH,
        ),
        (
            "HSA_QUEUE_FEATURE_KERNEL_DISPATCH",
            QUEUE_FEATURE_KERNEL_DISPATCH,
        ),
        (
            "HSA_QUEUE_FEATURE_AGENT_DISPATCH",
            QUEUE_FEATURE_AGENT_DISPATCH,
        ),
        (
            "AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER",
            AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER,
        ),
        (
            "AMD_QUEUE_PROPERTIES_IS_PTR64",
            AMD_QUEUE_PROPERTIES_IS_PTR64,
        ),
        (
            "AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS",
            AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS,
        ),
        (
            "AMD_QUEUE_PROPERTIES_ENABLE_PROFILING",
            AMD_QUEUE_PROPERTIES_ENABLE_PROFILING,
        ),
        (
            "AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE",
            AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE,
        ),
        ("HSA_SIGNAL_CONDITION_GTE", MAX_BARRIER_VALUE_CONDITION),
    ] {
        v.push(named(c, i64::from(x)));
    }
    for (c, t) in [
        ("HSA_QUEUE_TYPE_MULTI", QueueType::Multi),
        ("HSA_QUEUE_TYPE_SINGLE", QueueType::Single),
        ("HSA_QUEUE_TYPE_COOPERATIVE", QueueType::Cooperative),
    ] {
        v.push(named(c, t as i64));
    }
    for (c, cond) in [
        ("HSA_SIGNAL_CONDITION_EQ", SignalCondition::Eq),
        ("HSA_SIGNAL_CONDITION_NE", SignalCondition::Ne),
        ("HSA_SIGNAL_CONDITION_LT", SignalCondition::Lt),
        ("HSA_SIGNAL_CONDITION_GTE", SignalCondition::Gte),
    ] {
        v.push(named(c, cond as i64));
    }
    for (c, w) in [
        ("HSA_WAIT_STATE_BLOCKED", WaitState::Blocked),
        ("HSA_WAIT_STATE_ACTIVE", WaitState::Active),
    ] {
        v.push(named(c, w as i64));
    }
    for (c, k) in [
        ("AMD_SIGNAL_KIND_INVALID", AMD_SIGNAL_KIND_INVALID),
        ("AMD_SIGNAL_KIND_USER", AMD_SIGNAL_KIND_USER),
        ("AMD_SIGNAL_KIND_DOORBELL", AMD_SIGNAL_KIND_DOORBELL),
        (
            "AMD_SIGNAL_KIND_LEGACY_DOORBELL",
            AMD_SIGNAL_KIND_LEGACY_DOORBELL,
        ),
    ] {
        v.push(named(c, k));
    }
    v.push(named(
        "HSA_AMD_PACKET_TYPE_BARRIER_VALUE",
        i64::from(AMD_PACKET_TYPE_BARRIER_VALUE),
    ));
    // A header composed with hsa.h's own shifts equals PacketHeader::new.
    let h = PacketHeader::new(
        PacketType::KernelDispatch,
        HeaderFlags {
            barrier: true,
            acquire_fence_scope: FenceScope::Agent,
            release_fence_scope: FenceScope::System,
        },
    );
    v.push(entry(
        "header kernel_dispatch|barrier|acq agent|rel system",
        "(HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) \
         | (1 << HSA_PACKET_HEADER_BARRIER) \
         | (HSA_FENCE_SCOPE_AGENT << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) \
         | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)",
        i64::from(h.raw()),
    ));
    v
}

/// A packet filled in C field by field, and the same packet from a Rust builder; compared
/// byte by byte as published (header word stored into the first 32 bits).
struct GoldenPacket {
    name: &'static str,
    c_type: &'static str,
    c_fill: &'static str,
    rust: EncodedPacket,
}

fn golden_packets() -> Vec<GoldenPacket> {
    let kd = KernelDispatch {
        flags: HeaderFlags {
            barrier: true,
            acquire_fence_scope: FenceScope::Agent,
            release_fence_scope: FenceScope::System,
        },
        dimensions: 2,
        workgroup_size: [256, 4, 1],
        grid_size: [4096, 300, 1],
        private_segment_size_bytes: 96,
        group_segment_size_bytes: 65536,
        kernel_object: GpuVa(0x7fff_0000_1100),
        kernarg_address: GpuVa(0x7ffe_0000_0230),
        completion_signal: SignalHandle(0x7ffd_1234_5680),
    };
    let ba = BarrierAnd::new(
        HeaderFlags::SYSTEM,
        &[
            SignalHandle(0x1111_0040),
            SignalHandle::NULL,
            SignalHandle(0x3333_0080),
        ],
        SignalHandle(0x4444_00c0),
    )
    .unwrap();
    let ad = AgentDispatch {
        flags: HeaderFlags::NONE,
        function_type: 0x8123,
        return_address: GpuVa(0xabcd_ef00),
        args: [1, 0xffff_ffff_ffff_fffe, 0x0123_4567_89ab_cdef, 42],
        completion_signal: SignalHandle(0x40),
    };
    let bv = BarrierValue {
        flags: HeaderFlags {
            barrier: true,
            ..HeaderFlags::NONE
        },
        signal: SignalHandle(0x5555_0000),
        value: -7,
        mask: 0x0f0f_0000_ffff,
        condition: 1,
        completion_signal: SignalHandle(0x6666_0000),
    };
    vec![
        GoldenPacket {
            name: "kernel_dispatch",
            c_type: "hsa_kernel_dispatch_packet_t",
            c_fill: "p.header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) \
                     | (1 << HSA_PACKET_HEADER_BARRIER) \
                     | (HSA_FENCE_SCOPE_AGENT << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) \
                     | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE); \
                     p.setup = 2 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS; \
                     p.workgroup_size_x = 256; p.workgroup_size_y = 4; p.workgroup_size_z = 1; \
                     p.grid_size_x = 4096; p.grid_size_y = 300; p.grid_size_z = 1; \
                     p.private_segment_size = 96; p.group_segment_size = 65536; \
                     p.kernel_object = 0x7fff00001100ull; \
                     p.kernarg_address = (void *)0x7ffe00000230ull; \
                     p.completion_signal.handle = 0x7ffd12345680ull;",
            rust: kd.emit().unwrap(),
        },
        GoldenPacket {
            name: "barrier_and",
            c_type: "hsa_barrier_and_packet_t",
            c_fill: "p.header = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) \
                     | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) \
                     | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE); \
                     p.dep_signal[0].handle = 0x11110040; p.dep_signal[2].handle = 0x33330080; \
                     p.completion_signal.handle = 0x444400c0;",
            rust: ba.emit().unwrap(),
        },
        GoldenPacket {
            name: "agent_dispatch",
            c_type: "hsa_agent_dispatch_packet_t",
            c_fill: "p.header = HSA_PACKET_TYPE_AGENT_DISPATCH << HSA_PACKET_HEADER_TYPE; \
                     p.type = 0x8123; p.return_address = (void *)0xabcdef00ull; \
                     p.arg[0] = 1; p.arg[1] = 0xfffffffffffffffeull; \
                     p.arg[2] = 0x0123456789abcdefull; p.arg[3] = 42; \
                     p.completion_signal.handle = 0x40;",
            rust: ad.emit().unwrap(),
        },
        GoldenPacket {
            name: "barrier_value",
            c_type: "hsa_amd_barrier_value_packet_t",
            c_fill:
                "p.header.header = (HSA_PACKET_TYPE_VENDOR_SPECIFIC << HSA_PACKET_HEADER_TYPE) \
                     | (1 << HSA_PACKET_HEADER_BARRIER); \
                     p.header.AmdFormat = HSA_AMD_PACKET_TYPE_BARRIER_VALUE; \
                     p.signal.handle = 0x55550000; p.value = -7; p.mask = 0x0f0f0000ffffll; \
                     p.cond = HSA_SIGNAL_CONDITION_NE; p.completion_signal.handle = 0x66660000;",
            rust: bv.emit().unwrap(),
        },
    ]
}

fn published(e: &EncodedPacket) -> [u8; 64] {
    let mut b = e.bytes;
    b[..4].copy_from_slice(&e.header_word.to_le_bytes());
    b
}

fn c_program(layouts: &[Layout], enums: &[Entry], golden: &[GoldenPacket]) -> String {
    let mut s = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n\
         #include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n#include <hsa/hsa_ext_image.h>\n\
         #include <hsa/amd_hsa_queue.h>\n#include <hsa/amd_hsa_signal.h>\n\
         #define P(k, e) printf(\"%s %lld\\n\", k, (long long)(e))\n\
         int main(void) {\n",
    );
    for e in layouts.iter().flat_map(|l| &l.entries).chain(enums) {
        s += &format!("  P(\"{}\", {});\n", e.key, e.c_expr);
    }
    for g in golden {
        s += &format!(
            "  {{ {t} p; unsigned char b[64]; memset(&p, 0, sizeof p); {fill}\n    \
             memcpy(b, &p, 64); for (int i = 0; i < 64; i++) printf(\"bytes {n}[%d] %d\\n\", i, b[i]); }}\n",
            t = g.c_type,
            fill = g.c_fill,
            n = g.name
        );
    }
    s += "  return 0;\n}\n";
    s
}

fn include_root() -> PathBuf {
    std::env::var_os("HSA_INCLUDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include"))
}

fn run_c(dir: &Path, src: &str) -> Result<String, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let c_path = dir.join("abi.c");
    let exe = dir.join("abi");
    std::fs::write(&c_path, src).map_err(|e| format!("write {}: {e}", c_path.display()))?;
    let out = Command::new(&cc)
        .arg("-std=gnu11")
        .arg("-Wall")
        .arg("-I")
        .arg(include_root())
        .arg(&c_path)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("skip: cannot run {cc}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cc} failed:\n{}\n--- source ---\n{src}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let run = Command::new(&exe)
        .output()
        .map_err(|e| format!("run {}: {e}", exe.display()))?;
    if !run.status.success() {
        return Err(format!("{} exited with {}", exe.display(), run.status));
    }
    String::from_utf8(run.stdout).map_err(|e| format!("non-UTF-8 output: {e}"))
}

fn parse_output(out: &str) -> BTreeMap<String, i64> {
    out.lines()
        .map(|line| {
            let (k, v) = line.rsplit_once(' ').expect("`key value` line");
            (k.to_string(), v.parse().expect("integer value"))
        })
        .collect()
}

#[test]
#[cfg_attr(
    miri,
    ignore = "compiles and runs a C program, which miri cannot spawn"
)]
fn abi_matches_c_headers() {
    let hsa_h = include_root().join("hsa/hsa.h");
    if !hsa_h.exists() {
        println!(
            "skipped: {} not found (install libhsa-runtime-dev or set HSA_INCLUDE_DIR)",
            hsa_h.display()
        );
        return;
    }
    let layouts = layouts();
    let enums = enums();
    let golden = golden_packets();
    let dir = std::env::temp_dir().join(format!("hsa-core-abi-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = match run_c(&dir, &c_program(&layouts, &enums, &golden)) {
        Ok(out) => out,
        Err(e) if e.starts_with("skip: ") => {
            println!("skipped: {}", &e["skip: ".len()..]);
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let c = parse_output(&out);

    let mut failures = Vec::new();
    let mut compared = 0;
    let mut check = |key: &str, rust: i64| match c.get(key) {
        None => failures.push(format!("{key}: missing from the C output")),
        // Alignment: the Rust packet types are deliberately 64-byte aligned (a ring slot's
        // alignment) where hsa.h's are 8; a stricter multiple is layout-compatible.
        Some(&cv) if key.starts_with("alignof ") && (cv <= 0 || rust % cv != 0) => {
            failures.push(format!("{key}: C {cv}, Rust {rust} is not a multiple"))
        }
        Some(&cv) if !key.starts_with("alignof ") && cv != rust => {
            failures.push(format!("{key}: C {cv}, Rust {rust}"))
        }
        Some(_) => compared += 1,
    };
    for e in layouts.iter().flat_map(|l| &l.entries).chain(&enums) {
        check(&e.key, e.rust);
    }
    for g in &golden {
        for (i, b) in published(&g.rust).iter().enumerate() {
            check(&format!("bytes {}[{i}]", g.name), i64::from(*b));
        }
    }
    // Every field listed: the C offsets tile the struct with no gap and no overlap.
    for l in &layouts {
        let mut spans: Vec<(i64, i64, &str)> = l
            .fields
            .iter()
            .filter_map(|f| {
                let off = c.get(&format!("offsetof {}.{f}", l.c_type))?;
                let size = c.get(&format!("fieldsize {}.{f}", l.c_type))?;
                Some((*off, *size, *f))
            })
            .collect();
        spans.sort();
        let mut end = 0;
        for (off, size, f) in &spans {
            if *off != end {
                failures.push(format!(
                    "{}: field {f} at {off}, previous field ends at {end} (a field is missing)",
                    l.c_type
                ));
            }
            end = off + size;
        }
        let size = c.get(&format!("sizeof {}", l.c_type)).copied();
        if size != Some(end) {
            failures.push(format!(
                "{}: fields end at {end}, sizeof is {size:?} (a trailing field is missing)",
                l.c_type
            ));
        }
    }
    // And the reverse for statuses: every `HSA_STATUS_*` enumerator of hsa.h and
    // hsa_ext_amd.h, and every `HSA_EXT_STATUS_*` of hsa_ext_image.h, is in `Status::ALL`.
    let mut enumerators = 0;
    for header in ["hsa/hsa.h", "hsa/hsa_ext_amd.h", "hsa/hsa_ext_image.h"] {
        let text = std::fs::read_to_string(include_root().join(header)).unwrap();
        for line in text.lines().map(str::trim_start) {
            let name = line.split_whitespace().next().unwrap_or("");
            let status = name.starts_with("HSA_STATUS_") || name.starts_with("HSA_EXT_STATUS_");
            if status && line.contains('=') {
                enumerators += 1;
                if !Status::ALL.iter().any(|s| s.c_name() == name) {
                    failures.push(format!("{header}: {name} has no Status"));
                }
            }
        }
    }
    if enumerators != Status::ALL.len() {
        failures.push(format!(
            "headers define {enumerators} HSA_STATUS_*/HSA_EXT_STATUS_* enumerators, Status::ALL \
             has {}",
            Status::ALL.len()
        ));
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("compared {compared} values with the C headers");
    assert!(compared > 400, "only {compared} values compared");
}
