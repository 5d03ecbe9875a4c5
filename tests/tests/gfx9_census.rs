//! The gfx9 opcode census (issue 39, `hsa_tests::census`): every opcode of every compute
//! encoding llvm-mc-19 decodes for each gfx9 processor of LLVM 19, through our decoder and
//! disassembler. Fails when an opcode is not printed as llvm-objdump prints it unless it is
//! graphics-only (`testdata/gfx9_census/graphics.txt`, with the reason), and when a listed
//! graphics mnemonic is no gap on any processor (the list must not outlive its reason).
//! Prints `skipped: ...` without llvm-mc-19.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hsa_tests::census::{self, PROCESSORS};
use hsa_tests::llvm_diff;

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/gfx9_census")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

/// The graphics-only mnemonics (`mnemonic: reason` lines).
pub fn graphics() -> BTreeSet<String> {
    data("graphics.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split(':').next().unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn every_llvm_compute_opcode_is_equal_or_listed() {
    if !llvm_diff::llvm_mc_available() {
        println!("skipped: {} not found", llvm_diff::LLVM_MC);
        return;
    }
    let graphics = graphics();
    let mut gaps = Vec::new();
    let mut graphics_seen = BTreeSet::new();
    let (mut total, mut equal) = (0, 0);
    for (cpu, target) in PROCESSORS {
        let c = census::run(cpu, target).expect("llvm-mc-19 runs");
        assert!(c.total() > 1000, "{cpu}: only {} opcodes", c.total());
        total += c.total();
        equal += c.equal();
        for (name, o) in c.gaps() {
            let mnemonic = name.split(' ').nth(1).unwrap_or("");
            if graphics.contains(mnemonic) {
                graphics_seen.insert(mnemonic.to_string());
                continue;
            }
            gaps.push(format!("{cpu} {name}: {o:?}"));
        }
    }
    let unused: Vec<&String> = graphics.difference(&graphics_seen).collect();
    println!("{equal} of {total} opcodes equal; the others graphics-only");
    assert!(
        gaps.is_empty() && unused.is_empty(),
        "{} compute opcodes not printed as llvm-objdump-19 prints them:\n{}\n\
         graphics.txt mnemonics that are no gap: {unused:?}",
        gaps.len(),
        gaps.join("\n"),
    );
}

/// gfx950 against LLVM 22's llvm-mc (the ROCm 7 chroot's, `scripts/chroot-llvm`): every
/// compute opcode it decodes is printed as it prints it, or is graphics-only, or is one of
/// the gaps `gfx950_gaps.txt` lists (the work left); a listed gap that is closed fails too,
/// so the list cannot outlive the work. Prints `skipped: ...` without the chroot.
#[test]
fn gfx950_opcodes_are_equal_or_listed() {
    let (cpu, target) = census::LLVM22_PROCESSORS[0];
    if !llvm_diff::llvm_mc_available_for(cpu) {
        println!("skipped: no LLVM 22 llvm-mc (scripts/chroot-llvm: the ROCm 7 chroot)");
        return;
    }
    let graphics = graphics();
    let listed: BTreeSet<String> = data("gfx950_gaps.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect();
    let c = census::run(cpu, target).expect("LLVM 22's llvm-mc runs");
    assert!(c.total() > 1500, "{cpu}: only {} opcodes", c.total());
    let mut unlisted = Vec::new();
    let mut open = BTreeSet::new();
    for (name, o) in c.gaps() {
        let mnemonic = name.split(' ').nth(1).unwrap_or("");
        if graphics.contains(mnemonic) {
            continue;
        }
        if listed.contains(&name) {
            open.insert(name);
        } else {
            unlisted.push(format!("{cpu} {name}: {o:?}"));
        }
    }
    let closed: Vec<&String> = listed.difference(&open).collect();
    println!(
        "{cpu}: {} of {} opcodes equal; {} listed gaps open",
        c.equal(),
        c.total(),
        open.len()
    );
    assert!(
        unlisted.is_empty() && closed.is_empty(),
        "{} gfx950 opcodes not printed as LLVM 22's llvm-objdump prints them and not listed:\n{}\n\
         gfx950_gaps.txt lines that are no gap any more (remove them): {closed:?}",
        unlisted.len(),
        unlisted.join("\n"),
    );
}
