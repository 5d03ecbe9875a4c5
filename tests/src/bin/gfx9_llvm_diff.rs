//! `gfx9_llvm_diff`: the differential run of the gfx9 decoder against `llvm-mc-19
//! --disassemble` (see `hsa_tests::llvm_diff`).
//!
//! Usage: `gfx9_llvm_diff <target> [count] [seed] [batch]` (defaults 100000, 1, 20000);
//! `<target>` is gfx900, gfx906, gfx908, gfx90a, gfx942 or gfx950 (against the ROCm 7 chroot's
//! LLVM 22, `scripts/chroot-llvm`). Prints a Markdown report on stdout
//! and a progress line per batch on stderr; exits 1 when a case of ours is to fix.

use std::process::ExitCode;
use std::time::Instant;

use hsa_gfx9::Gfx9Target;
use hsa_tests::llvm_diff::{self, Verdict};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = match args.first().map(String::as_str) {
        Some("gfx900") => Gfx9Target::Gfx900,
        Some("gfx906") => Gfx9Target::Gfx906,
        Some("gfx908") => Gfx9Target::Gfx908,
        Some("gfx90a") => Gfx9Target::Gfx90a,
        Some("gfx942") => Gfx9Target::Gfx942,
        Some("gfx950") => Gfx9Target::Gfx950,
        other => {
            eprintln!("usage: gfx9_llvm_diff gfx900|gfx906|gfx908|gfx90a|gfx942|gfx950 [count] [seed] [batch]; got {other:?}");
            return ExitCode::from(2);
        }
    };
    let num = |i: usize, default: u64| -> Option<u64> {
        match args.get(i) {
            None => Some(default),
            Some(s) => s.parse().ok(),
        }
    };
    let (Some(count), Some(seed), Some(batch)) = (num(1, 100_000), num(2, 1), num(3, 20_000))
    else {
        eprintln!("count, seed and batch are decimal numbers");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    let tally = llvm_diff::run(target, count, seed, batch.max(1) as usize, |t| {
        let s = start.elapsed().as_secs_f64();
        eprintln!(
            "{}: {} cases, {:.0}/s, bugs {}, llvm-only {}",
            target.name(),
            t.total,
            t.total as f64 / s,
            t.bugs(),
            t.verdicts.get(&Verdict::LlvmOnly).copied().unwrap_or(0)
        );
    });
    let tally = match tally {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gfx9_llvm_diff: {e}");
            return ExitCode::from(2);
        }
    };
    let title = format!(
        "{}: `gfx9_llvm_diff {} {count} {seed} {batch}` ({:.0} s)",
        target.name(),
        target.name(),
        start.elapsed().as_secs_f64()
    );
    print!("{}", tally.report(&title));
    if tally.bugs() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
