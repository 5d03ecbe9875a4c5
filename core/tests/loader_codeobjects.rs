//! Code objects of `testdata/codeobjects/` through the reader and the executable loader.
//!
//! Expected values were taken from `llvm-readelf-19 -h --dyn-syms --notes` on each file (and
//! agree with `testdata/codeobjects/README.md`); where `llvm-readelf-19` is on PATH the tests
//! also run it and compare.

use std::path::PathBuf;

use hsa_core::isa::{Processor, TargetId};
use hsa_core::loader::code_object::AlignedBytes;
use hsa_core::loader::{CodeObject, Executable, ExternalVariable, SymbolKind};
use hsa_core::platform::fake::{FakePlatform, FakeTopology};
use hsa_core::platform::MemoryKind;
use hsa_core::{GpuVa, NodeId, Status};

struct K {
    name: &'static str,
    kd: u64,
    kernarg: u32,
    group: u32,
    private: u32,
    wave: u32,
    sgpr: u32,
    vgpr: u32,
    args: u32,
}

struct F {
    file: &'static str,
    abi_version: u8,
    e_flags: u32,
    target: &'static str,
    kernels: [K; 3],
}

#[rustfmt::skip]
const FILES: &[F] = &[
    F {
        file: "kernels-gfx1030-v4.hsaco",
        abi_version: 2,
        e_flags: 0x36,
        target: "amdgcn-amd-amdhsa--gfx1030",
        kernels: [
            K { name: "vector_copy", kd: 0x9c0, kernarg: 16, group: 0, private: 0, wave: 32, sgpr: 11, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xa00, kernarg: 24, group: 0, private: 0, wave: 32, sgpr: 11, vgpr: 6, args: 3 },
            K { name: "local_reverse", kd: 0xa40, kernarg: 16, group: 1024, private: 0, wave: 32, sgpr: 11, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx1030-v5.hsaco",
        abi_version: 3,
        e_flags: 0x36,
        target: "amdgcn-amd-amdhsa--gfx1030",
        kernels: [
            K { name: "vector_copy", kd: 0xac0, kernarg: 16, group: 0, private: 0, wave: 32, sgpr: 11, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xb00, kernarg: 24, group: 0, private: 0, wave: 32, sgpr: 11, vgpr: 6, args: 3 },
            K { name: "local_reverse", kd: 0xb40, kernarg: 16, group: 1024, private: 0, wave: 32, sgpr: 11, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx1100-v4.hsaco",
        abi_version: 2,
        e_flags: 0x41,
        target: "amdgcn-amd-amdhsa--gfx1100",
        kernels: [
            K { name: "vector_copy", kd: 0x9c0, kernarg: 16, group: 0, private: 0, wave: 32, sgpr: 18, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xa00, kernarg: 24, group: 0, private: 0, wave: 32, sgpr: 18, vgpr: 6, args: 3 },
            K { name: "local_reverse", kd: 0xa40, kernarg: 16, group: 1024, private: 0, wave: 32, sgpr: 18, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx1100-v5.hsaco",
        abi_version: 3,
        e_flags: 0x41,
        target: "amdgcn-amd-amdhsa--gfx1100",
        kernels: [
            K { name: "vector_copy", kd: 0xac0, kernarg: 16, group: 0, private: 0, wave: 32, sgpr: 18, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xb00, kernarg: 24, group: 0, private: 0, wave: 32, sgpr: 18, vgpr: 6, args: 3 },
            K { name: "local_reverse", kd: 0xb40, kernarg: 16, group: 1024, private: 0, wave: 32, sgpr: 18, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx1200-v5.hsaco",
        abi_version: 3,
        e_flags: 0x48,
        target: "amdgcn-amd-amdhsa--gfx1200",
        kernels: [
            K { name: "vector_copy", kd: 0xac0, kernarg: 16, group: 0, private: 0, wave: 32, sgpr: 7, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xb00, kernarg: 24, group: 0, private: 0, wave: 32, sgpr: 10, vgpr: 6, args: 3 },
            K { name: "local_reverse", kd: 0xb40, kernarg: 16, group: 1024, private: 0, wave: 32, sgpr: 7, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx9-generic-v6.hsaco",
        abi_version: 4,
        e_flags: 0x1000151,
        target: "amdgcn-amd-amdhsa--gfx9-generic",
        kernels: [
            K { name: "vector_copy", kd: 0xa80, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xac0, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xb00, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx900-v4.hsaco",
        abi_version: 2,
        e_flags: 0x12c,
        target: "amdgcn-amd-amdhsa--gfx900",
        kernels: [
            K { name: "vector_copy", kd: 0x9c0, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xa00, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xa40, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx900-v5.hsaco",
        abi_version: 3,
        e_flags: 0x12c,
        target: "amdgcn-amd-amdhsa--gfx900",
        kernels: [
            K { name: "vector_copy", kd: 0xa80, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xac0, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xb00, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 5, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx90a-v4.hsaco",
        abi_version: 2,
        e_flags: 0x53f,
        target: "amdgcn-amd-amdhsa--gfx90a",
        kernels: [
            K { name: "vector_copy", kd: 0xa00, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xa40, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xa80, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 6, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx90a-v5.hsaco",
        abi_version: 3,
        e_flags: 0x53f,
        target: "amdgcn-amd-amdhsa--gfx90a",
        kernels: [
            K { name: "vector_copy", kd: 0xa80, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xac0, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xb00, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 6, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx942-v4.hsaco",
        abi_version: 2,
        e_flags: 0x54c,
        target: "amdgcn-amd-amdhsa--gfx942",
        kernels: [
            K { name: "vector_copy", kd: 0xa00, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 18, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xa40, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 18, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xa80, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 18, vgpr: 6, args: 2 },
        ],
    },
    F {
        file: "kernels-gfx942-v5.hsaco",
        abi_version: 3,
        e_flags: 0x54c,
        target: "amdgcn-amd-amdhsa--gfx942",
        kernels: [
            K { name: "vector_copy", kd: 0xa80, kernarg: 16, group: 0, private: 0, wave: 64, sgpr: 18, vgpr: 4, args: 2 },
            K { name: "vector_add", kd: 0xac0, kernarg: 24, group: 0, private: 0, wave: 64, sgpr: 18, vgpr: 5, args: 3 },
            K { name: "local_reverse", kd: 0xb00, kernarg: 16, group: 1024, private: 0, wave: 64, sgpr: 18, vgpr: 6, args: 2 },
        ],
    },
    F {
        file: "kernels_ocl-gfx1030-v4.hsaco",
        abi_version: 2,
        e_flags: 0x36,
        target: "amdgcn-amd-amdhsa--gfx1030",
        kernels: [
            K { name: "vector_copy", kd: 0xd80, kernarg: 72, group: 0, private: 0, wave: 32, sgpr: 11, vgpr: 4, args: 9 },
            K { name: "vector_add", kd: 0xdc0, kernarg: 80, group: 0, private: 0, wave: 32, sgpr: 12, vgpr: 6, args: 10 },
            K { name: "local_reverse", kd: 0xe00, kernarg: 72, group: 1024, private: 0, wave: 32, sgpr: 12, vgpr: 5, args: 9 },
        ],
    },
    F {
        file: "kernels_ocl-gfx1030-v5.hsaco",
        abi_version: 3,
        e_flags: 0x36,
        target: "amdgcn-amd-amdhsa--gfx1030",
        kernels: [
            K { name: "vector_copy", kd: 0x1240, kernarg: 272, group: 0, private: 0, wave: 32, sgpr: 12, vgpr: 4, args: 15 },
            K { name: "vector_add", kd: 0x1280, kernarg: 280, group: 0, private: 0, wave: 32, sgpr: 12, vgpr: 6, args: 16 },
            K { name: "local_reverse", kd: 0x12c0, kernarg: 272, group: 1024, private: 0, wave: 32, sgpr: 12, vgpr: 5, args: 15 },
        ],
    },
    F {
        file: "kernels_ocl-gfx90a-v4.hsaco",
        abi_version: 2,
        e_flags: 0x53f,
        target: "amdgcn-amd-amdhsa--gfx90a",
        kernels: [
            K { name: "vector_copy", kd: 0xdc0, kernarg: 72, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 4, args: 9 },
            K { name: "vector_add", kd: 0xe00, kernarg: 80, group: 0, private: 0, wave: 64, sgpr: 24, vgpr: 5, args: 10 },
            K { name: "local_reverse", kd: 0xe40, kernarg: 72, group: 1024, private: 0, wave: 64, sgpr: 16, vgpr: 6, args: 9 },
        ],
    },
    F {
        file: "kernels_ocl-gfx90a-v5.hsaco",
        abi_version: 3,
        e_flags: 0x53f,
        target: "amdgcn-amd-amdhsa--gfx90a",
        kernels: [
            K { name: "vector_copy", kd: 0x1240, kernarg: 272, group: 0, private: 0, wave: 64, sgpr: 14, vgpr: 4, args: 15 },
            K { name: "vector_add", kd: 0x1280, kernarg: 280, group: 0, private: 0, wave: 64, sgpr: 16, vgpr: 5, args: 16 },
            K { name: "local_reverse", kd: 0x12c0, kernarg: 272, group: 1024, private: 0, wave: 64, sgpr: 14, vgpr: 6, args: 15 },
        ],
    },
];

/// The files a test walks: every one of [`FILES`] natively; under miri, which interprets a
/// load of one of these files in about a minute (every file took the loader tests past half
/// an hour), one v4 and one v5 code object, one freestanding and one with ROCm device-libs'
/// hidden arguments, which take the reader and the loader through the same unsafe code as
/// the rest.
fn files() -> impl Iterator<Item = &'static F> {
    const UNDER_MIRI: [&str; 2] = ["kernels-gfx900-v4.hsaco", "kernels_ocl-gfx90a-v5.hsaco"];
    FILES
        .iter()
        .filter(|f| !cfg!(miri) || UNDER_MIRI.contains(&f.file))
}

fn codeobjects_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects")
}

/// A code object's bytes in 8-byte-aligned storage: the reader reads the ELF structures in
/// place and refuses misaligned bytes, and a `Vec<u8>` promises no alignment (under miri it
/// has none).
fn read(file: &str) -> AlignedBytes {
    let data =
        std::fs::read(codeobjects_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    AlignedBytes::new(&data)
}

/// The fake (host memory, GPU address = host address) with four nodes — the CPU and three
/// copies of its MI210, as the tests load onto agents 1 to 3 — and at most 64 MiB of chunks
/// live, so an image a flipped header makes huge fails with `OUT_OF_RESOURCES`.
fn platform() -> FakePlatform {
    let mut topology = FakeTopology::mi210();
    for id in 2..4 {
        let mut gpu = topology.nodes[1].clone();
        gpu.properties.node_id = id;
        topology.nodes.push(gpu);
    }
    let mut p = FakePlatform::with_topology(topology);
    p.set_memory_limit_bytes(1 << 26);
    p
}

/// An agent ISA that the code object runs on: the processor (gfx900 for gfx9-generic) with
/// XNACK off and SRAMECC on where supported.
fn agent_for(co: &CodeObject<'_>) -> TargetId {
    let t = co.target();
    let processor = if t.processor.is_generic() {
        Processor::GFX900
    } else {
        t.processor
    };
    TargetId::of_agent(processor, true, false)
}

#[test]
fn table_covers_every_file() {
    let mut on_disk: Vec<String> = std::fs::read_dir(codeobjects_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".hsaco"))
        .collect();
    on_disk.sort();
    let mut in_table: Vec<String> = FILES.iter().map(|f| f.file.to_string()).collect();
    in_table.sort();
    assert_eq!(on_disk, in_table);
}

/// Why a test is left out under miri: its checks are the reader's and the loader's safe code
/// (`code_object.rs`, `metadata.rs`, `executable.rs` hold no `unsafe`), which the native run
/// covers; the loads miri does run here go through the same unsafe code (the image copy, the
/// fake platform's memory) that these would.
#[cfg_attr(not(miri), allow(unused_macros))]
macro_rules! safe_code_only {
    () => {
        "safe code only (the native run covers it); miri runs the loads that reach unsafe code"
    };
}

#[test]
fn reader_matches_llvm_readelf() {
    for f in files() {
        let bytes = read(f.file);
        let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.file));
        assert_eq!(co.version(), u32::from(f.abi_version) + 2, "{}", f.file);
        assert_eq!(co.e_flags(), f.e_flags, "{}", f.file);
        assert_eq!(co.target().isa_name().to_string(), f.target, "{}", f.file);
        assert_eq!(co.metadata().target, Some(f.target), "{}", f.file);
        let expected_version = if f.abi_version == 2 { [1, 1] } else { [1, 2] };
        assert_eq!(co.metadata().version, expected_version, "{}", f.file);
        let kernels: Vec<_> = co.kernels().map(|k| k.unwrap()).collect();
        assert_eq!(kernels.len(), 3, "{}", f.file);
        for (k, e) in kernels.iter().zip(&f.kernels) {
            let m = &k.metadata;
            let ctx = format!("{} {}", f.file, e.name);
            assert_eq!(m.name, e.name, "{ctx}");
            assert_eq!(m.symbol, format!("{}.kd", e.name), "{ctx}");
            assert_eq!(k.descriptor_vaddr, e.kd, "{ctx}");
            assert_eq!(m.kernarg_segment_size, e.kernarg, "{ctx}");
            assert_eq!(k.descriptor.kernarg_size, e.kernarg, "{ctx}");
            assert_eq!(m.kernarg_segment_align, 8, "{ctx}");
            assert_eq!(m.group_segment_fixed_size, e.group, "{ctx}");
            assert_eq!(k.descriptor.group_segment_fixed_size, e.group, "{ctx}");
            assert_eq!(m.private_segment_fixed_size, e.private, "{ctx}");
            assert_eq!(m.wavefront_size, e.wave, "{ctx}");
            assert_eq!(k.descriptor.wavefront_size(), e.wave, "{ctx}");
            assert_eq!(m.sgpr_count, e.sgpr, "{ctx}");
            assert_eq!(m.vgpr_count, e.vgpr, "{ctx}");
            assert_eq!(m.max_flat_workgroup_size, Some(256), "{ctx}");
            assert!(!m.uses_dynamic_stack, "{ctx}");
            assert_eq!(m.arg_count(), e.args, "{ctx}");
            let args: Vec<_> = m.args().map(|a| a.unwrap()).collect();
            assert_eq!(args.len() as u32, e.args, "{ctx}");
            // The first argument is always `int* in`/`a` at offset 0, 8 bytes, a global buffer.
            assert_eq!(
                (args[0].offset, args[0].size, args[0].value_kind),
                (0, 8, "global_buffer"),
                "{ctx}"
            );
            assert_eq!(args[0].address_space, Some("global"), "{ctx}");
            assert_eq!(args[0].type_name, Some("int*"), "{ctx}");
            assert_eq!(args[1].offset, 8, "{ctx}");
            assert!(args.iter().take(2).all(|a| !a.is_hidden()), "{ctx}");
            // The descriptor's user SGPRs include the dispatch pointer (README: kernels use it).
            assert!(k.descriptor.enable_sgpr_kernarg_segment_ptr(), "{ctx}");
            assert!(k.descriptor.rsrc2().enable_sgpr_workgroup_id_x(), "{ctx}");
        }
    }
}

/// Runs llvm-readelf-19 when available and compares kernarg sizes, wavefront sizes and `.kd`
/// symbol values with what the reader finds.
#[test]
#[cfg_attr(miri, ignore = "runs llvm-readelf, which miri cannot spawn")]
fn reader_matches_live_llvm_readelf() {
    let probe = std::process::Command::new("llvm-readelf-19")
        .arg("--version")
        .output();
    if probe.map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("llvm-readelf-19 not on PATH; live comparison skipped");
        return;
    }
    for f in FILES {
        let path = codeobjects_dir().join(f.file);
        let out = std::process::Command::new("llvm-readelf-19")
            .args(["--notes", "--dyn-syms"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let field = |key: &str| -> Vec<u64> {
            text.lines()
                .filter_map(|l| l.trim().strip_prefix(key))
                .map(|v| v.trim().parse().unwrap())
                .collect()
        };
        let bytes = read(f.file);
        let co = CodeObject::parse(&bytes).unwrap();
        let kernels: Vec<_> = co.kernels().map(|k| k.unwrap()).collect();
        let ours = |g: &dyn Fn(&hsa_core::loader::Kernel<'_>) -> u64| {
            kernels.iter().map(g).collect::<Vec<_>>()
        };
        assert_eq!(
            field(".kernarg_segment_size:"),
            ours(&|k| k.metadata.kernarg_segment_size.into()),
            "{}",
            f.file
        );
        assert_eq!(
            field(".wavefront_size:"),
            ours(&|k| k.metadata.wavefront_size.into()),
            "{}",
            f.file
        );
        assert_eq!(
            field(".group_segment_fixed_size:"),
            ours(&|k| k.metadata.group_segment_fixed_size.into()),
            "{}",
            f.file
        );
        for k in &kernels {
            let line = text
                .lines()
                .find(|l| l.trim_end().ends_with(&format!(" {}", k.metadata.symbol)))
                .unwrap();
            let value = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
            assert_eq!(
                value, k.descriptor_vaddr,
                "{} {}",
                f.file, k.metadata.symbol
            );
        }
    }
}

#[test]
fn load_places_kernel_objects_at_base_plus_kd() {
    let platform = platform();
    for f in files() {
        let bytes = read(f.file);
        let co = CodeObject::parse(&bytes).unwrap();
        let agent = agent_for(&co);
        let mut exe = Executable::new(&platform);
        let index = exe
            .load_code_object(NodeId(1), &agent, &bytes, MemoryKind::System)
            .unwrap();
        assert_eq!(index, 0);
        exe.freeze().unwrap();
        exe.validate().unwrap();
        let loaded = &exe.loaded_code_objects()[0];
        let base = loaded.load_base.get();
        assert_eq!(
            base,
            loaded.chunk.gpu_va.get(),
            "image starts at vaddr 0 in these files"
        );
        assert_eq!(base % 4096, 0);
        for e in &f.kernels {
            let sym = exe
                .symbol_by_name(&format!("{}.kd", e.name), Some(NodeId(1)))
                .unwrap();
            assert_eq!(sym.kind, SymbolKind::Kernel);
            let info = sym.kernel.as_ref().unwrap();
            assert_eq!(
                info.kernel_object.get(),
                base + e.kd,
                "{} {}",
                f.file,
                e.name
            );
            assert_eq!(info.kernel_object.get() % 64, 0);
            assert_eq!(info.kernarg_segment_size, e.kernarg);
            // The metadata says 8; HSA's least kernarg alignment, 16, as ROCR reports it.
            assert_eq!(info.kernarg_segment_align, 16);
            assert_eq!(info.group_segment_size, e.group);
            assert_eq!(info.private_segment_size, e.private);
            assert_eq!(info.wavefront_size, e.wave);
            assert!(!info.dynamic_callstack);
            // Lookup by source name finds the same symbol.
            assert_eq!(exe.symbol_by_name(e.name, None).unwrap(), sym);
            // The loaded descriptor bytes equal the file's.
            // SAFETY: the chunk is live host memory of the executable (GPU VA = host address
            // in this platform) and 64 bytes at the kernel object lie inside it (validate()).
            let loaded_kd =
                unsafe { std::slice::from_raw_parts(info.kernel_object.get() as *const u8, 64) };
            let k = co.kernel(e.name).unwrap();
            assert_eq!(loaded_kd, zerocopy::IntoBytes::as_bytes(&k.descriptor));
        }
        assert_eq!(exe.symbols().count(), 3);
        assert_eq!(
            exe.symbol_by_name("nope", None).unwrap_err().status(),
            Status::InvalidSymbolName
        );
        assert_eq!(
            exe.load_code_object(NodeId(1), &agent, &bytes, MemoryKind::System)
                .unwrap_err()
                .status(),
            Status::FrozenExecutable
        );
        assert_eq!(platform.live_chunks().len(), 1);
        exe.destroy().unwrap();
        assert_eq!(platform.live_chunks().len(), 0);
    }
    assert_eq!(platform.map_calls().len(), files().count());
    assert!(platform
        .map_calls()
        .iter()
        .all(|(_, nodes)| nodes == &[NodeId(1)]));
}

#[test]
fn loaded_image_is_the_file_segments_and_zero_fill() {
    let platform = platform();
    let bytes = read("kernels_ocl-gfx90a-v5.hsaco");
    let co = CodeObject::parse(&bytes).unwrap();
    let mut exe = Executable::new(&platform);
    exe.load_code_object(NodeId(2), &agent_for(&co), &bytes, MemoryKind::DeviceLocal)
        .unwrap();
    let chunk = exe.loaded_code_objects()[0].chunk;
    // llvm-readelf-19 -l: LOAD 0x0/0x0 filesz 0x1304; LOAD 0x1400/0x2400 filesz 0x6c0;
    // LOAD 0x1ac0/0x3ac0 filesz 0x70 memsz 0x540.
    assert_eq!(co.image_size(), 0x3ac0 + 0x540);
    assert_eq!(chunk.size_bytes, 0x4000);
    // SAFETY: live host memory of `chunk_size` bytes owned by the executable.
    let image = unsafe {
        std::slice::from_raw_parts(chunk.host_ptr.unwrap().as_ptr(), chunk.size_bytes as usize)
    };
    assert_eq!(&image[..0x1304], &bytes[..0x1304]);
    assert_eq!(
        &image[0x2400..0x2400 + 0x6c0],
        &bytes[0x1400..0x1400 + 0x6c0]
    );
    assert_eq!(&image[0x3ac0..0x3ac0 + 0x70], &bytes[0x1ac0..0x1ac0 + 0x70]);
    assert!(image[0x3ac0 + 0x70..0x3ac0 + 0x540].iter().all(|&b| b == 0));
    drop(exe);
    assert_eq!(platform.live_chunks().len(), 0, "drop frees the memory");
}

/// An undefined symbol of a code object (`extern/extern_var-gfx90a-v5.hsaco`: `ext_var`, an
/// R_AMDGPU_ABS64 relocation at 0x2b20 per `llvm-readelf-19 -r`) resolves to the executable's
/// definition for the agent, else the program's; without one the load is
/// `VARIABLE_UNDEFINED`; a second definition for the same agent is `VARIABLE_ALREADY_DEFINED`
/// and one after freezing `FROZEN_EXECUTABLE` (ROCR 5.2's statuses).
#[test]
fn undefined_symbols_resolve_to_defined_variables() {
    let platform = platform();
    let bytes = read("extern/extern_var-gfx90a-v5.hsaco");
    let co = CodeObject::parse(&bytes).unwrap();
    let agent = agent_for(&co);
    let mut exe = Executable::new(&platform);
    let e = exe
        .load_code_object(NodeId(1), &agent, &bytes, MemoryKind::System)
        .unwrap_err();
    assert_eq!(e.status(), Status::VariableUndefined);
    assert_eq!(
        e.detail(),
        "relocation at 0x2b20 refers to undefined symbol \"ext_var\", which the executable \
         does not define"
    );
    assert_eq!(platform.live_chunks().len(), 0);
    let var = |node, address| ExternalVariable {
        name: "ext_var".into(),
        node,
        address: GpuVa(address),
        read_only: false,
    };
    exe.define_variable(var(None, 0x1111_0000)).unwrap();
    exe.define_variable(var(Some(NodeId(2)), 0x2222_0000))
        .unwrap();
    let e = exe
        .define_variable(var(Some(NodeId(2)), 0x3333_0000))
        .unwrap_err();
    assert_eq!(e.status(), Status::VariableAlreadyDefined);
    for node in [1, 2] {
        exe.load_code_object(NodeId(node), &agent, &bytes, MemoryKind::System)
            .unwrap();
    }
    let got = |i: usize| {
        let chunk = exe.loaded_code_objects()[i].chunk;
        let at = 0x2b20 - co.image_start() as usize;
        // SAFETY: the chunk is live host memory of the executable, larger than 0x2b28 bytes.
        unsafe { std::ptr::read_unaligned(chunk.host_ptr.unwrap().as_ptr().add(at).cast::<u64>()) }
    };
    assert_eq!(got(0), 0x1111_0000, "node 1: the program's definition");
    assert_eq!(got(1), 0x2222_0000, "node 2: its own definition");
    assert_eq!(exe.external_variables().len(), 2);
    exe.freeze().unwrap();
    let e = exe
        .define_variable(var(Some(NodeId(3)), 0x4444_0000))
        .unwrap_err();
    assert_eq!(e.status(), Status::FrozenExecutable);
}

#[test]
#[cfg_attr(miri, ignore = safe_code_only!())]
fn wrong_isa_for_agent_is_incompatible() {
    let platform = platform();
    let bytes = read("kernels-gfx90a-v5.hsaco");
    let mut exe = Executable::new(&platform);
    let agent = TargetId::parse("gfx942:sramecc+:xnack-").unwrap();
    let e = exe
        .load_code_object(NodeId(1), &agent, &bytes, MemoryKind::System)
        .unwrap_err();
    assert_eq!(e.status(), Status::IncompatibleArguments);
    assert!(
        e.detail().to_string().contains("amdgcn-amd-amdhsa--gfx90a"),
        "{e}"
    );
    assert!(
        e.detail()
            .to_string()
            .contains("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"),
        "{e}"
    );
    assert_eq!(platform.live_chunks().len(), 0);
    // gfx9-generic runs on gfx900/gfx906 but not gfx90a.
    let generic = read("kernels-gfx9-generic-v6.hsaco");
    let e = exe
        .load_code_object(
            NodeId(1),
            &TargetId::parse("gfx90a:xnack-").unwrap(),
            &generic,
            MemoryKind::System,
        )
        .unwrap_err();
    assert_eq!(e.status(), Status::IncompatibleArguments);
    assert!(e.detail().to_string().contains("gfx9-generic"), "{e}");
    exe.load_code_object(
        NodeId(1),
        &TargetId::parse("gfx906:sramecc-:xnack+").unwrap(),
        &generic,
        MemoryKind::System,
    )
    .unwrap();
}

#[test]
fn misaligned_bytes_are_copied_before_loading() {
    let platform = platform();
    let bytes = read("kernels-gfx1100-v5.hsaco");
    // One byte past an 8-aligned start: misaligned whatever the allocator does (a plain
    // Vec<u8> has no alignment, and under miri its start can be anything, so `vec[1..]` was
    // sometimes 8-aligned).
    let mut storage = AlignedBytes::new(&vec![0u8; bytes.len() + 1]);
    let shifted = storage.as_mut_bytes();
    shifted[1..].copy_from_slice(&bytes);
    assert_eq!(shifted[1..].as_ptr() as usize % 8, 1);
    let agent = TargetId::parse("gfx1100").unwrap();
    assert_eq!(
        CodeObject::parse(&shifted[1..]).unwrap_err().status(),
        Status::InvalidArgument
    );
    let mut exe = Executable::new(&platform);
    exe.load_code_object(NodeId(3), &agent, &shifted[1..], MemoryKind::System)
        .unwrap();
    let base = exe.loaded_code_objects()[0].load_base.get();
    let k = exe
        .symbol_by_name("local_reverse", Some(NodeId(3)))
        .unwrap();
    assert_eq!(k.address.get(), base + 0xb40);
    assert!(exe
        .symbol_by_name("local_reverse", Some(NodeId(4)))
        .is_err());
}

/// The file offsets (bytes) of every occurrence of `needle` in `raw`, in file order: how the
/// note tests find a MessagePack key or value to patch.
fn offsets_of(raw: &[u8], needle: &[u8]) -> Vec<usize> {
    raw.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

fn patched(file: &str, at: usize, value: &[u8]) -> AlignedBytes {
    let mut b = read(file);
    b[at..at + value.len()].copy_from_slice(value);
    b
}

#[test]
fn bad_headers_give_exact_errors() {
    let file = "kernels-gfx900-v5.hsaco";
    for (bytes, frag) in [
        (patched(file, 18, &62u16.to_le_bytes()), "e_machine is 62"),
        (patched(file, 8, &[1]), "EI_ABIVERSION is 1"),
        (patched(file, 8, &[5]), "EI_ABIVERSION is 5"),
        (patched(file, 7, &[0]), "EI_OSABI is 0"),
        (patched(file, 4, &[1]), "EI_CLASS is 1"),
        (patched(file, 5, &[2]), "EI_DATA is 2"),
        (patched(file, 0, b"\x7fELG"), "not an ELF file"),
        (patched(file, 0x30, &[0x27]), "EF_AMDGPU_MACH 0x27"),
    ] {
        let e = CodeObject::parse(&bytes).unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject, "{frag}");
        assert!(e.detail().to_string().contains(frag), "{frag}: {e}");
    }
}

#[test]
#[cfg_attr(miri, ignore = safe_code_only!())]
fn metadata_descriptor_disagreement_names_kernel_and_field() {
    // vector_copy.kd of kernels-gfx900-v5.hsaco is at vaddr = file offset 0xa80 (PT_LOAD 0
    // maps offset 0 at vaddr 0); kernarg_size is at +8.
    let bytes = patched("kernels-gfx900-v5.hsaco", 0xa80 + 8, &99u32.to_le_bytes());
    let e = CodeObject::parse(&bytes).unwrap_err();
    assert_eq!(e.status(), Status::InvalidCodeObject);
    assert_eq!(e.detail(), "kernel \"vector_copy\": kernarg_segment_size is 16 in metadata but 99 in the kernel descriptor");
    // A descriptor kernarg_size of 0 states no size (the assembler's default without
    // `.amdhsa_kernarg_size`, as in rocBLAS 7's Tensile kernels): the kernel loads, and its
    // symbol gives the metadata's 16 bytes.
    let bytes = patched("kernels-gfx900-v5.hsaco", 0xa80 + 8, &0u32.to_le_bytes());
    let co = CodeObject::parse(&bytes).unwrap();
    let agent = agent_for(&co);
    let platform = platform();
    let mut exe = Executable::new(&platform);
    exe.load_code_object(NodeId(1), &agent, &bytes, MemoryKind::System)
        .unwrap();
    let sym = exe
        .symbol_by_name("vector_copy.kd", Some(NodeId(1)))
        .unwrap();
    assert_eq!(sym.kernel.as_ref().unwrap().kernarg_segment_size, 16);
    // group segment of local_reverse.kd (0xb00).
    let bytes = patched("kernels-gfx900-v5.hsaco", 0xb00, &512u32.to_le_bytes());
    let e = CodeObject::parse(&bytes).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .contains("\"local_reverse\": group_segment_fixed_size is 1024"),
        "{e}"
    );
    // Set wave32 in a wave64 kernel (code properties at +56, bit 10).
    let bytes = patched(
        "kernels-gfx900-v5.hsaco",
        0xac0 + 57,
        &[0x04 | read("kernels-gfx900-v5.hsaco")[0xac0 + 57]],
    );
    let e = CodeObject::parse(&bytes).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .contains("\"vector_add\": wavefront_size is 64 in metadata but 32"),
        "{e}"
    );
    // Dynamic stack bit (bit 11) in a v5 object.
    let bytes = patched(
        "kernels-gfx900-v5.hsaco",
        0xa80 + 57,
        &[0x08 | read("kernels-gfx900-v5.hsaco")[0xa80 + 57]],
    );
    let e = CodeObject::parse(&bytes).unwrap_err();
    assert!(e.detail().to_string().contains("uses_dynamic_stack"), "{e}");
}

/// A code object linked from two objects has two metadata notes (rocBLAS's Tensile libraries:
/// one per kernel); its kernels are those of both, in file order, and each loads as a symbol.
/// Reading only one note (the loader took the last) left HIP's lookups of the others failing.
#[test]
#[cfg_attr(miri, ignore = safe_code_only!())]
fn kernels_of_every_metadata_note_are_loaded() {
    let file = "linked/kernels+more-gfx90a-v5.hsaco";
    let bytes = read(file);
    let co = CodeObject::parse(&bytes).unwrap();
    // kernels.cl's three, then kernels_more.cl's five (llvm-readelf-19 --notes: two notes).
    let names: Vec<&str> = co.kernels().map(|k| k.unwrap().metadata.name).collect();
    assert_eq!(
        names,
        [
            "vector_copy",
            "vector_add",
            "local_reverse",
            "branchy",
            "loop_sum",
            "saxpy_clamp",
            "mixed_args",
            "group_sum"
        ]
    );
    assert_eq!(co.kernel_count(), 8);
    assert_eq!(co.metadata().kernel_count(), 3, "the first note's own");
    let platform = platform();
    let mut exe = Executable::new(&platform);
    exe.load_code_object(NodeId(1), &agent_for(&co), &bytes, MemoryKind::System)
        .unwrap();
    for name in names {
        let sym = exe
            .symbol_by_name(&format!("{name}.kd"), Some(NodeId(1)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sym.kind, SymbolKind::Kernel);
    }
    // Notes that disagree on amdhsa.version: the second note's [1, 2] made [1, 1] (the
    // MessagePack array 0x92 0x01 0x02 after the second "amdhsa.version" key).
    let versions = offsets_of(bytes.as_bytes(), b"amdhsa.version\x92\x01\x02");
    assert_eq!(versions.len(), 2, "one version per note");
    // The minor version's byte is the last of the match.
    let minor = versions[1] + b"amdhsa.version".len() + 2;
    let e = CodeObject::parse(&patched(file, minor, &[1])).unwrap_err();
    assert_eq!(e.status(), Status::InvalidCodeObject);
    assert_eq!(
        e.detail().to_string(),
        "metadata note 1: amdhsa.version [1, 1] and amdhsa.target \
         Some(\"amdgcn-amd-amdhsa--gfx90a\") differ from the first note's [1, 2] and \
         Some(\"amdgcn-amd-amdhsa--gfx90a\")"
    );
}

/// A later metadata note may leave `amdhsa.target` out (rocBLAS 7.2.4's Tensile libraries for
/// double precision do: HIP's load of them failed with `INVALID_CODE_OBJECT` and rocBLAS
/// answered `rocblas_status_internal_error`): the note belongs to the code object's target
/// and its kernels load. A note naming another target is still refused.
#[test]
#[cfg_attr(miri, ignore = safe_code_only!())]
fn a_later_note_without_a_target_belongs_to_the_code_object() {
    let file = "linked/kernels+more-gfx90a-v5.hsaco";
    let raw = read(file);
    let at = offsets_of(&raw, b"amdhsa.target");
    assert_eq!(at.len(), 2, "one target per note");
    // "amdhsa.target" -> "amdhsa.tarXet": a key the parser does not know, so no target.
    let no_target = patched(file, at[1] + 10, b"X");
    let co = CodeObject::parse(&no_target).unwrap();
    assert_eq!(co.kernel_count(), 8);
    assert_eq!(co.metadata().target, Some("amdgcn-amd-amdhsa--gfx90a"));
    // The target string's processor "gfx90a" -> "gfx90c" in the second note: refused.
    let value = b"amdgcn-amd-amdhsa--gfx90a";
    let second = *offsets_of(&raw, value)
        .iter()
        .find(|&&v| v > at[1])
        .expect("the second note's target string");
    let other = patched(file, second + value.len() - 1, b"c");
    let e = CodeObject::parse(&other).unwrap_err();
    assert_eq!(e.status(), Status::InvalidCodeObject);
    assert_eq!(
        e.detail().to_string(),
        "metadata note 1: amdhsa.version [1, 2] and amdhsa.target \
         Some(\"amdgcn-amd-amdhsa--gfx90c\") differ from the first note's [1, 2] and \
         Some(\"amdgcn-amd-amdhsa--gfx90a\")"
    );
}

#[test]
fn every_prefix_is_an_error_never_a_panic() {
    let files = ["kernels-gfx900-v4.hsaco", "kernels_ocl-gfx90a-v5.hsaco"];
    // Under miri, the first file alone.
    for file in &files[..if cfg!(miri) { 1 } else { 2 }] {
        let bytes = read(file);
        // Under miri every 97th prefix (and the last), each still through the whole parser.
        let step = if cfg!(miri) { 97 } else { 1 };
        for len in (0..bytes.len()).step_by(step).chain([bytes.len() - 1]) {
            let r = CodeObject::parse(&bytes[..len]);
            assert!(r.is_err(), "{file}: prefix of {len} bytes parsed");
        }
        assert!(CodeObject::parse(&bytes).is_ok());
    }
}

mod flips {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 512 }))]
        #[test]
        fn byte_flips_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
                                  file in 0usize..FILES.len()) {
            let mut bytes = read(FILES[file].file);
            for (at, x) in flips {
                let i = at % bytes.len();
                bytes[i] ^= x | 1;
            }
            if let Ok(co) = CodeObject::parse(&bytes) {
                // Whatever parses must also load (or fail cleanly) without panicking.
                let platform = platform();
                let mut exe = Executable::new(&platform);
                let _ = exe.load_code_object(NodeId(1), &agent_for(&co), &bytes, MemoryKind::System);
                drop(exe);
                prop_assert_eq!(platform.live_chunks().len(), 0);
            }
        }

        #[test]
        fn header_and_metadata_flips_never_panic(at in 0usize..0x1000, x in 1u8..) {
            // Concentrate on the ELF header, program headers and the note.
            let mut bytes = read("kernels_ocl-gfx1030-v5.hsaco");
            bytes[at] ^= x;
            let _ = CodeObject::parse(&bytes);
        }
    }
}
