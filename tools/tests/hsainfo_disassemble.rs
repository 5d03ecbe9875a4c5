//! `hsainfo --code-object FILE --disassemble` (the built binary) against
//! `llvm-objdump-19 -d --mcpu=<processor> FILE`, run at test time, for every code object in
//! `testdata/codeobjects/` and `testdata/codeobjects/more/`: gfx9 ones must give llvm-objdump's
//! labels and instruction lines (text, address and encoding; whitespace normalized), the others
//! an error naming their ISA. Without llvm-objdump-19 the comparisons say
//! `skipped: llvm-objdump-19 not found` and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hsa_core::loader::{AlignedBytes, CodeObject};

fn codeobjects() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects")
}

/// Every `*.hsaco` of `testdata/codeobjects/` and its `more/`, sorted.
fn all_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [codeobjects(), codeobjects().join("more")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hsaco"))
        .collect();
    files.sort();
    files
}

/// The processor of a code object, e.g. `gfx90a`, `gfx9-generic`, `gfx1030`.
fn processor(path: &Path) -> &'static str {
    let bytes = AlignedBytes::new(&std::fs::read(path).unwrap());
    CodeObject::parse(&bytes).unwrap().target().processor.name()
}

fn hsainfo(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hsainfo"))
        .arg("--code-object")
        .arg(path)
        .arg("--disassemble")
        .output()
        .unwrap()
}

fn have_objdump() -> bool {
    let ok = Command::new("llvm-objdump-19")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("skipped: llvm-objdump-19 not found");
    }
    ok
}

fn objdump(path: &Path, mcpu: &str) -> String {
    let out = Command::new("llvm-objdump-19")
        .args(["-d", &format!("--mcpu={mcpu}")])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "llvm-objdump-19 failed on {path:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A disassembly listing: its header lines (before the first label) and, per label line
/// (`0000000000001c00 <vector_copy>:`), its instruction lines; every line with its whitespace
/// runs collapsed to one space and blank lines dropped.
#[derive(Debug)]
struct Listing {
    header: Vec<String>,
    blocks: Vec<(String, Vec<String>)>,
}

fn normalize(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn listing(text: &str) -> Listing {
    let mut header = Vec::new();
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if line.ends_with(">:") && !line.starts_with('\t') {
            blocks.push((normalize(line), Vec::new()));
        } else if let Some((_, lines)) = blocks.last_mut() {
            lines.push(normalize(line));
        } else {
            header.push(normalize(line));
        }
    }
    Listing { header, blocks }
}

/// `(st_value, st_size)` of the function symbols of `.text`, by name, from
/// `llvm-objdump-19 -T` (`0000000000001c00 g    DF .text\t0000000000000060 .protected vector_copy`).
fn function_symbols(path: &Path) -> Vec<(String, u64, u64)> {
    let out = Command::new("llvm-objdump-19")
        .arg("-T")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llvm-objdump-19 -T failed on {path:?}"
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains(" DF .text"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
            (f[f.len() - 1].to_string(), hex(f[0]), hex(f[4]))
        })
        .collect()
}

/// The address and byte count of a normalized instruction line's `// 000000001C00: C0020242
/// 00000004` comment.
fn span(line: &str) -> (u64, u64) {
    let comment = line.split("// ").nth(1).unwrap();
    let mut words = comment.split(' ');
    let address = u64::from_str_radix(words.next().unwrap().trim_end_matches(':'), 16).unwrap();
    let bytes = words
        .take_while(|w| w.chars().all(|c| c.is_ascii_hexdigit()) && !w.is_empty())
        .map(|w| w.len() as u64 / 2)
        .sum();
    (address, bytes)
}

/// The instruction text of a normalized line (before its `//` comment).
fn mnemonic(line: &str) -> &str {
    line.split("//").next().unwrap_or("").trim()
}

/// Compares hsainfo's listing with llvm-objdump's: the same header and labels in the same
/// order; per label, hsainfo's lines equal llvm-objdump's first lines, and what llvm-objdump
/// lists after them (up to the next symbol) is alignment padding. Returns the number of
/// instruction lines compared.
fn compare(path: &Path, ours: &Listing, theirs: &Listing) -> usize {
    assert_eq!(ours.header, theirs.header, "{path:?}: header lines");
    let labels = |l: &Listing| l.blocks.iter().map(|b| b.0.clone()).collect::<Vec<_>>();
    assert_eq!(labels(ours), labels(theirs), "{path:?}: labels");
    let mut compared = 0;
    for ((label, mine), (_, objdump)) in ours.blocks.iter().zip(&theirs.blocks) {
        assert!(!mine.is_empty(), "{path:?} {label}: no instructions");
        assert!(
            mine.len() <= objdump.len(),
            "{path:?} {label}: {} lines, llvm-objdump has {}",
            mine.len(),
            objdump.len()
        );
        for (i, (a, b)) in mine.iter().zip(objdump).enumerate() {
            assert_eq!(a, b, "{path:?} {label}: instruction {i}");
        }
        for pad in &objdump[mine.len()..] {
            assert!(
                matches!(mnemonic(pad), "s_nop 0" | "s_code_end"),
                "{path:?} {label}: llvm-objdump lists {pad:?} past the end of the kernel"
            );
        }
        compared += mine.len();
    }
    compared
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs hsainfo and llvm-objdump, which miri cannot spawn"
)]
fn every_gfx9_code_object_disassembles_as_llvm_objdump_does() {
    if !have_objdump() {
        return;
    }
    let (mut files, mut instructions) = (0, 0);
    for path in all_files() {
        let processor = processor(&path);
        if !processor.starts_with("gfx9") {
            continue;
        }
        let out = hsainfo(&path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{path:?}: {stderr}");
        assert_eq!(stderr, "", "{path:?}");
        let ours = listing(&String::from_utf8(out.stdout).unwrap());
        let theirs = listing(&objdump(&path, processor));
        assert!(
            ours.blocks.len() >= 3,
            "{path:?}: {} kernels",
            ours.blocks.len()
        );
        instructions += compare(&path, &ours, &theirs);
        // Each kernel's lines cover exactly its symbol's [st_value, st_value + st_size).
        let symbols = function_symbols(&path);
        assert_eq!(symbols.len(), ours.blocks.len(), "{path:?}: {symbols:?}");
        for (label, lines) in &ours.blocks {
            let (_, start, size) = symbols
                .iter()
                .find(|(name, _, _)| label.ends_with(&format!(" <{name}>:")))
                .unwrap_or_else(|| panic!("{path:?}: no symbol for {label}"));
            let mut at = *start;
            for line in lines {
                let (address, bytes) = span(line);
                assert_eq!(address, at, "{path:?} {label}: {line}");
                at += bytes;
            }
            assert_eq!(at, start + size, "{path:?} {label}: lines end at {at:#x}");
        }
        files += 1;
    }
    // gfx900, gfx90a, gfx942 (v4, v5), gfx9-generic v6, kernels_ocl gfx90a (v4, v5) and
    // more/ (gfx900, gfx90a, gfx940, gfx941, gfx942).
    assert_eq!(files, 14, "gfx9 code objects compared");
    println!("{instructions} instructions in {files} code objects agree with llvm-objdump-19");
}

#[test]
#[cfg_attr(miri, ignore = "runs hsainfo, which miri cannot spawn")]
fn other_isas_are_an_error_naming_the_isa() {
    let mut files = 0;
    for path in all_files() {
        let processor = processor(&path);
        if processor.starts_with("gfx9") {
            continue;
        }
        let out = hsainfo(&path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{path:?}");
        assert_eq!(
            stderr,
            format!(
                "hsainfo: {}: cannot disassemble {processor} code: the disassembler knows only \
                 gfx9 (gfx900 and its variants, gfx906, gfx908, gfx90a, gfx940/941/942, \
                 gfx9-generic) (HSA_STATUS_ERROR_INVALID_ISA)\n",
                path.display()
            )
        );
        files += 1;
    }
    // gfx1030, gfx1100 (v4, v5), gfx1200 v5, kernels_ocl gfx1030 (v4, v5).
    assert_eq!(files, 7, "non-gfx9 code objects");
}

#[test]
#[cfg_attr(miri, ignore = "runs hsainfo, which miri cannot spawn")]
fn disassemble_without_code_object_is_a_usage_error() {
    for extra in [&[][..], &["--sysfs", "/nonexistent"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_hsainfo"))
            .arg("--disassemble")
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.starts_with("error: --disassemble needs --code-object FILE"),
            "{extra:?}: {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// A word that is no instruction at all, patched into vector_copy: llvm-objdump prints it as
/// `.long`, and so does hsainfo, marked, going on with the next word as llvm-objdump does.
#[test]
#[cfg_attr(
    miri,
    ignore = "runs hsainfo and llvm-objdump, which miri cannot spawn"
)]
fn an_unknown_word_is_printed_as_llvm_objdump_prints_it_and_marked() {
    if !have_objdump() {
        return;
    }
    // kernels-gfx942-v5.hsaco: .text at vaddr 0x1c00, file offset 0xc00; 0x1c10 is the
    // fourth instruction of vector_copy.
    let mut bytes = std::fs::read(codeobjects().join("kernels-gfx942-v5.hsaco")).unwrap();
    bytes[0xc10..0xc14].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
    let path = std::env::temp_dir().join(format!("hsa-rt-unknown-{}.hsaco", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let out = hsainfo(&path);
    let theirs = objdump(&path, "gfx942");
    std::fs::remove_file(&path).unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let marked: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("not decoded by hsa-rt"))
        .collect();
    assert_eq!(
        marked,
        ["\t.long 0xffffffff                                           // 000000001C10: FFFFFFFF \
          // not decoded by hsa-rt: unknown 0xffffffff: unknown encoding"]
    );
    assert!(theirs.contains(
        "\n\t.long 0xffffffff                                           // 000000001C10: FFFFFFFF\n"
    ));
    // Without the mark, the listings agree as for the unpatched file.
    let unmarked = text.replace(
        " // not decoded by hsa-rt: unknown 0xffffffff: unknown encoding",
        "",
    );
    compare(&path, &listing(&unmarked), &listing(&theirs));
}
