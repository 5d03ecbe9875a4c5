//! The gfx9 opcode census (issue 39, `hsa_tests::census`): every opcode of every compute
//! encoding llvm-mc-19 decodes for each gfx9 processor of LLVM 19, through our decoder and
//! disassembler. Fails when an opcode is neither printed as llvm-objdump prints it, nor listed
//! as a known gap (`testdata/gfx9_census/gaps.txt`) or as graphics-only
//! (`testdata/gfx9_census/graphics.txt`); and when a listed gap is closed (the list must
//! shrink with the work). Prints `skipped: ...` without llvm-mc-19.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hsa_tests::census::{self, Outcome, PROCESSORS};
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
    let listed: BTreeSet<String> = data("gaps.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let mut seen = BTreeSet::new();
    let mut new = Vec::new();
    for (cpu, target) in PROCESSORS {
        let c = census::run(cpu, target).expect("llvm-mc-19 runs");
        assert!(c.total() > 1000, "{cpu}: only {} opcodes", c.total());
        for (name, o) in c.gaps() {
            let mnemonic = name.split(' ').nth(1).unwrap_or("");
            if graphics.contains(mnemonic) {
                continue;
            }
            let kind = match o {
                Outcome::Missing(_) => "missing",
                Outcome::Differs(..) => "differs",
                Outcome::Equal => continue,
            };
            let line = format!("{cpu} {kind} {name}");
            if !listed.contains(&line) {
                new.push(format!("{line}: {o:?}"));
            }
            seen.insert(line);
        }
    }
    let closed: Vec<&String> = listed.difference(&seen).collect();
    assert!(
        new.is_empty() && closed.is_empty(),
        "{} new gaps (not in testdata/gfx9_census/gaps.txt):\n{}\n{} listed gaps are closed \
         (remove them from gaps.txt):\n{}",
        new.len(),
        new.join("\n"),
        closed.len(),
        closed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
