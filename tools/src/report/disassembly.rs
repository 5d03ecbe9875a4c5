//! `hsainfo --code-object FILE --disassemble`: the machine code of each kernel, in the text of
//! `llvm-objdump-19 -d --mcpu=<processor> FILE`, so the two can be diffed.
//!
//! The output has llvm-objdump's layout, byte for byte (`\t` stands for a tab):
//!
//! ```text
//!
//! FILE:\tfile format elf64-amdgpu
//!
//! Disassembly of section .text:
//!
//! 0000000000001c00 <vector_copy>:
//! \ts_load_dword s9, s[4:5], 0x4                               // 000000001C00: C0020242 00000004
//! ```
//!
//! A label line `<16 hex digits> <symbol>:` per kernel, in address order, after a blank line;
//! then one line per instruction: a tab, the instruction text left-justified to column 60 (the
//! tab counts as one column; longer text is not cut), `// `, the address in 12 upper-case hex
//! digits, `:`, and the instruction's dwords in upper-case hex. A branch (`s_branch`,
//! `s_cbranch_*`) whose target lies in `.text` ends with ` <symbol+0xoff>` (` <symbol>` at
//! offset 0), naming the nearest symbol of `.text` at or before the target (`.text` itself when
//! there is none).
//!
//! Where it differs from llvm-objdump, on purpose:
//! - A kernel's range is its function symbol's `[st_value, st_value + st_size)`, checked to
//!   lie inside `.text` ([`CodeObject::kernel_code`]); llvm-objdump goes on to the next symbol,
//!   so it also lists the alignment padding after each kernel (`s_nop 0`, or `s_code_end` at
//!   the end of `.text`), which no wave executes.
//! - A word the decoder of `hsa_gfx9` does not know is printed as llvm-objdump prints an
//!   unknown word (`.long 0x<word>`, the next instruction starting 4 bytes on; `.byte` for a
//!   tail shorter than 4 bytes), followed by ` // not decoded by hsa-rt: <reason>`: the
//!   emulated device would stop there with `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION`, while
//!   llvm-objdump may know the word (e.g. MUBUF, VOP3P, SDWA, which the decoder does not).
//! - Branch targets outside `.text` get no `<symbol>` comment (llvm-objdump names a symbol of
//!   whatever section precedes them).
//! - Only kernels are listed (the code object's metadata), not other function symbols.
//!
//! Only gfx9 machine code is known: gfx900 and its variants, gfx906, gfx908, gfx90a,
//! gfx940/941/942 and gfx9-generic (whose instructions are gfx900's); a code object for another processor is an error naming it.
//!
//! Ref: llvm-objdump's AMDGPU output (`AMDGCNPrettyPrinter`, observed with llvm-objdump-19);
//! LLVM AMDGPUUsage "Symbols"; Vega ISA §4.4 for branch targets.

use std::fmt::Write as _;

use hsa_core::loader::{AlignedBytes, CodeObject, TextSection};
use hsa_core::{bail, Result, Status};
use hsa_gfx9::{decode, Gfx9Target};

/// The column (0-based, the leading tab counting as one) where llvm-objdump starts the
/// `// address: encoding` comment of an instruction line.
pub const COMMENT_COLUMN: usize = 60;

/// Marks a line whose bytes the gfx9 decoder could not decode.
pub const NOT_DECODED: &str = "not decoded by hsa-rt";

/// Disassembles every kernel of a gfx9 code object in llvm-objdump's text (see the module
/// doc). `file_name` is printed in the header line, as llvm-objdump prints the path it was
/// given.
///
/// # Errors
/// - `Status::InvalidCodeObject` (or another status of [`CodeObject::parse`]) when `bytes` is
///   not a valid code object, or a kernel's code range is bad (the errors of
///   [`CodeObject::kernel_code`]: its function symbol missing, not `STT_FUNC`, of size 0, or
///   outside `.text`, or not at the descriptor's entry).
/// - `Status::InvalidIsa` naming the processor when it is not one the decoder knows (gfx900 and
///   its variants, gfx906, gfx908, gfx90a, gfx940/941/942, gfx9-generic).
///
/// Bytes the decoder does not know are not errors: they are printed as marked `.long`/`.byte`
/// lines.
pub fn disassembly_report(bytes: &[u8], file_name: &str) -> Result<String> {
    let aligned = AlignedBytes::new(bytes);
    let co = CodeObject::parse(aligned.as_bytes())?;
    let processor = co.target().processor;
    let Some(target) = Gfx9Target::from_processor(processor) else {
        bail!(
            Status::InvalidIsa,
            "cannot disassemble {processor} code: the disassembler knows only gfx9 \
             (gfx900 and its variants, gfx906, gfx908, gfx90a, gfx940/941/942, gfx9-generic)"
        );
    };
    let text = co.text_section()?;
    let mut labels = co.text_symbols()?.collect::<Result<Vec<_>>>()?;
    labels.retain(|(name, _)| !name.is_empty());
    labels.sort_by_key(|&(name, vaddr)| (vaddr, name));
    let mut kernels = Vec::new();
    for kernel in co.kernels() {
        kernels.push(co.kernel_code(&kernel?)?);
    }
    kernels.sort_by_key(|k| (k.vaddr, k.symbol));

    let mut out = String::new();
    let _ = write!(
        out,
        "\n{file_name}:\tfile format elf64-amdgpu\n\nDisassembly of section .text:\n"
    );
    for kernel in &kernels {
        let _ = write!(out, "\n{:016x} <{}>:\n", kernel.vaddr, kernel.symbol);
        let mut offset = 0;
        while offset < kernel.code.len() {
            let address = kernel.vaddr + offset as u64;
            offset += instruction_line(
                &mut out,
                &kernel.code[offset..],
                address,
                target,
                &text,
                &labels,
            );
        }
    }
    Ok(out)
}

/// Appends the line of the instruction at the start of `code` (at `address`) and returns its
/// size in bytes (at least 1, at most `code.len()`).
fn instruction_line(
    out: &mut String,
    code: &[u8],
    address: u64,
    target: Gfx9Target,
    text: &TextSection<'_>,
    labels: &[(&str, u64)],
) -> usize {
    let start = out.len();
    // (size in bytes, where a branch goes, why it was not decoded)
    let (size, branch_to, note) = match decode(code, target) {
        Ok(inst) => {
            let _ = write!(out, "\t{inst}");
            let size = usize::from(inst.size).clamp(1, code.len());
            (size, inst.branch_target(address), None)
        }
        Err(e) if code.len() >= 4 => {
            let word = u32::from_le_bytes([code[0], code[1], code[2], code[3]]);
            let _ = write!(out, "\t.long 0x{word:08x}");
            (4, None, Some(e))
        }
        Err(e) => {
            out.push_str("\t.byte ");
            for (i, b) in code.iter().enumerate() {
                let _ = write!(out, "{}0x{b:02x}", if i > 0 { ", " } else { "" });
            }
            (code.len(), None, Some(e))
        }
    };
    // The text is ASCII: one column per byte.
    let width = out.len() - start;
    if width < COMMENT_COLUMN {
        out.extend(std::iter::repeat_n(' ', COMMENT_COLUMN - width));
    }
    let _ = write!(out, "// {address:012X}:");
    let bytes = &code[..size];
    if size >= 4 {
        for w in bytes.chunks_exact(4) {
            let _ = write!(out, " {:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    } else {
        for b in bytes {
            let _ = write!(out, " {b:02X}");
        }
    }
    if let Some(label) = branch_to.and_then(|to| label(to, text, labels)) {
        let _ = write!(out, " {label}");
    }
    if let Some(e) = note {
        let _ = write!(out, " // {NOT_DECODED}: {}", e.detail());
    }
    out.push('\n');
    size
}

/// `<symbol+0xoff>` for an address in `.text`: the nearest symbol at or before it (the last
/// of equal addresses), else `.text` itself; `None` outside `.text`.
fn label(to: u64, text: &TextSection<'_>, labels: &[(&str, u64)]) -> Option<String> {
    if to < text.vaddr || to >= text.end() {
        return None;
    }
    let (name, base) = labels
        .iter()
        .rev()
        .find(|&&(_, vaddr)| vaddr <= to && vaddr >= text.vaddr)
        .copied()
        .unwrap_or((".text", text.vaddr));
    Some(match to - base {
        0 => format!("<{name}>"),
        off => format!("<{name}+0x{off:x}>"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(file: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../testdata/codeobjects/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// Lines copied from `llvm-objdump-19 -d --mcpu=gfx90a kernels-gfx90a-v5.hsaco`.
    #[test]
    fn vector_copy_gfx90a_is_llvm_objdump_text() {
        let r = disassembly_report(&testdata("kernels-gfx90a-v5.hsaco"), "k.hsaco").unwrap();
        let head: Vec<&str> = r.lines().take(10).collect();
        assert_eq!(
            head,
            [
                "",
                "k.hsaco:\tfile format elf64-amdgpu",
                "",
                "Disassembly of section .text:",
                "",
                "0000000000001c00 <vector_copy>:",
                "\ts_load_dword s9, s[4:5], 0x4                               // 000000001C00: C0020242 00000004",
                "\ts_load_dwordx4 s[0:3], s[6:7], 0x0                         // 000000001C08: C00A0003 00000000",
                "\tv_mov_b32_e32 v1, 0                                        // 000000001C10: 7E020280",
                "\ts_waitcnt lgkmcnt(0)                                       // 000000001C14: BF8CC07F",
            ]
        );
        // The kernel ends at its symbol's end (0x1c00 + 96): s_endpgm, no padding after it.
        let copy = r.split("\n\n").nth(2).unwrap();
        assert!(copy.ends_with(
            "\ts_endpgm                                                   // 000000001C5C: BF810000"
        ));
        assert!(r.contains("\n\n0000000000001d00 <vector_add>:\n"));
        assert!(r.contains("\n\n0000000000001e00 <local_reverse>:\n"));
        assert!(!r.contains("s_nop"));
    }

    /// A branch with its `<symbol+off>` comment, from `llvm-objdump-19 -d --mcpu=gfx900
    /// more/kernels_more-gfx900-v5.hsaco`.
    #[test]
    fn branch_targets_are_labelled() {
        let r = disassembly_report(&testdata("more/kernels_more-gfx900-v5.hsaco"), "m").unwrap();
        assert!(r.contains(
            "\n\ts_cbranch_execnz 65526                                     // 0000000024B8: BF89FFF6 <loop_sum+0x94>\n"
        ), "{r}");
        assert!(r.contains(
            "\n\ts_cbranch_execz 25                                         // 00000000232C: BF880019 <branchy+0x94>\n"
        ), "{r}");
    }

    #[test]
    fn other_isas_are_errors_naming_them() {
        for (file, isa) in [
            ("kernels-gfx1030-v5.hsaco", "gfx1030"),
            ("kernels-gfx1100-v4.hsaco", "gfx1100"),
            ("kernels-gfx1200-v5.hsaco", "gfx1200"),
        ] {
            let e = disassembly_report(&testdata(file), file).unwrap_err();
            assert_eq!(e.status(), Status::InvalidIsa, "{file}");
            assert!(
                e.detail()
                    .to_string()
                    .starts_with(&format!("cannot disassemble {isa} code: ")),
                "{e}"
            );
        }
        // gfx9-generic code is gfx900's.
        let r = disassembly_report(&testdata("kernels-gfx9-generic-v6.hsaco"), "g").unwrap();
        assert!(r.contains("\n0000000000001c00 <vector_copy>:\n\ts_load_dword s9, s[4:5], 0x4 "));
    }

    /// Overwrites the little-endian dword at `file_offset`.
    fn patch(bytes: &mut [u8], file_offset: usize, word: u32) {
        bytes[file_offset..file_offset + 4].copy_from_slice(&word.to_le_bytes());
    }

    #[test]
    fn unknown_words_are_marked_and_skipped_by_4_bytes() {
        // vector_copy of kernels-gfx90a-v5.hsaco: .text at vaddr 0x1c00, file offset 0xc00.
        let mut bytes = testdata("kernels-gfx90a-v5.hsaco");
        // 0x1c10 `v_mov_b32_e32 v1, 0` → 0xffffffff (no encoding); 0x1c14 `s_waitcnt` → the
        // first dword of a MIMG `image_load` whose second dword (the next instruction's)
        // names a sampler register, which `image_load` has none of: llvm-mc-19 refuses the
        // pair too ("invalid instruction encoding").
        patch(&mut bytes, 0xc10, 0xffff_ffff);
        patch(&mut bytes, 0xc14, 0xf000_0000);
        let r = disassembly_report(&bytes, "p").unwrap();
        let lines: Vec<&str> = r.lines().skip(8).take(3).collect();
        assert_eq!(
            lines[0],
            "\t.long 0xffffffff                                           // 000000001C10: FFFFFFFF \
             // not decoded by hsa-rt: unknown 0xffffffff: unknown encoding"
        );
        assert_eq!(
            lines[1],
            "\t.long 0xf0000000                                           // 000000001C14: F0000000 \
             // not decoded by hsa-rt: MIMG 0xf0000000 0x8604ff09: ssamp of an instruction \
             without a sampler"
        );
        // Decoding goes on with the next word.
        assert_eq!(
            lines[2],
            "\ts_and_b32 s4, s9, 0xffff                                   // 000000001C18: 8604FF09 0000FFFF"
        );
    }

    #[test]
    fn bad_code_ranges_are_errors() {
        // .dynsym of kernels-gfx90a-v5.hsaco at file offset 0x900, 24-byte entries: entry 1 is
        // vector_copy (st_value at +8, st_size at +16), 96 bytes at 0x1c00; .text ends at
        // 0x22c0.
        let good = testdata("kernels-gfx90a-v5.hsaco");
        let entry = 0x900 + 24;
        let mut bytes = good.clone();
        bytes[entry + 16..entry + 24].copy_from_slice(&0x1000u64.to_le_bytes());
        let e = disassembly_report(&bytes, "p").unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject);
        assert_eq!(
            e.detail(),
            "kernel \"vector_copy\": symbol \"vector_copy\" at 0x1c00 size 4096 lies outside \
             .text [0x1c00, 0x22c0)"
        );
        let mut bytes = good.clone();
        bytes[entry + 16..entry + 24].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = disassembly_report(&bytes, "p").unwrap_err();
        assert!(e.detail().to_string().contains("lies outside .text"), "{e}");
        let mut bytes = good.clone();
        bytes[entry + 16..entry + 24].copy_from_slice(&0u64.to_le_bytes());
        let e = disassembly_report(&bytes, "p").unwrap_err();
        assert_eq!(
            e.detail(),
            "kernel \"vector_copy\": symbol \"vector_copy\" has size 0, so its code range is \
             unknown"
        );
        // Moved by 4 bytes: still inside .text, but not where the descriptor enters.
        let mut bytes = good.clone();
        bytes[entry + 8..entry + 16].copy_from_slice(&0x1c04u64.to_le_bytes());
        let e = disassembly_report(&bytes, "p").unwrap_err();
        assert_eq!(
            e.detail(),
            "kernel \"vector_copy\": symbol \"vector_copy\" is at 0x1c04 but the descriptor \
             \"vector_copy.kd\" enters the kernel at 0x1c00"
        );
    }

    /// Corrupted real files (deterministic xorshift: 1 to 4 bytes overwritten, biased towards
    /// the headers, symbols and code): an error of the documented statuses or a report, never
    /// a panic.
    #[test]
    fn corrupted_files_never_panic() {
        let good = testdata("more/kernels_more-gfx90a-v5.hsaco");
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ok, mut failed) = (0, 0);
        for _ in 0..if cfg!(miri) { 20 } else { 1000 } {
            let mut bytes = good.clone();
            for _ in 0..=next() % 4 {
                let r = next();
                // Half the hits in the first 0x1400 bytes (headers, .dynsym, .rodata, the
                // start of .text), the rest anywhere.
                let span = if r & 1 == 0 {
                    0x1400
                } else {
                    bytes.len() as u64
                };
                let at = ((r >> 8) % span) as usize;
                bytes[at] = (r >> 32) as u8;
            }
            match disassembly_report(&bytes, "f") {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(
                        matches!(e.status(), Status::InvalidCodeObject | Status::InvalidIsa),
                        "{e}"
                    );
                    failed += 1;
                }
            }
        }
        assert!(ok > 0 && failed > 0, "{ok} reports, {failed} errors");
    }
}
