//! `gfx9_census`: the opcode census of the gfx9 decoder against `llvm-mc-19 --disassemble`
//! (see `hsa_tests::census`).
//!
//! Usage: `gfx9_census [processor...]` (default: every gfx9 processor of LLVM 19; `gfx950`
//! when named, against the ROCm 7 chroot's LLVM 22, `scripts/chroot-llvm`). Prints,
//! per processor, the opcodes llvm decodes, how many ours prints equal, and every other one
//! as `FAMILY mnemonic: outcome` lines.

use std::process::ExitCode;

use hsa_tests::census::{self, Outcome, LLVM22_PROCESSORS, PROCESSORS};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut status = ExitCode::SUCCESS;
    // gfx950 only when asked for: its llvm-mc is the ROCm 7 chroot's LLVM 22.
    let llvm22 = LLVM22_PROCESSORS
        .into_iter()
        .filter(|(cpu, _)| args.iter().any(|a| a == cpu));
    for (cpu, target) in PROCESSORS.into_iter().chain(llvm22) {
        if !args.is_empty() && !args.iter().any(|a| a == cpu) {
            continue;
        }
        let c = match census::run(cpu, target) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{cpu}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!(
            "## {cpu} (run as {}): {} opcodes llvm decodes, {} equal, {} not",
            target.name(),
            c.total(),
            c.equal(),
            c.total() - c.equal()
        );
        for (name, o) in c.gaps() {
            match o {
                Outcome::Missing(e) => println!("{cpu} missing {name}: {e}"),
                Outcome::Differs(l, ours) => println!("{cpu} differs {name}: llvm {l} ours {ours}"),
                Outcome::Equal => {}
            }
            status = ExitCode::FAILURE;
        }
    }
    status
}
