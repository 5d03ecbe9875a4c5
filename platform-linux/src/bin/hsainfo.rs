//! `hsainfo`: reports about the HSA system and code objects.
//!
//! `hsainfo --code-object FILE` prints a code object's target and kernels (see
//! `hsa_linux::report::code_object`). Without a mode it prints a short usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Command line of hsainfo.
#[derive(Debug, Parser)]
#[command(
    name = "hsainfo",
    about = "Report on HSA agents and AMDGPU code objects"
)]
struct Args {
    /// Print the target and kernels of an AMDGPU code object (.hsaco) instead of the agents.
    #[arg(long = "code-object", value_name = "FILE")]
    code_object: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.code_object {
        Some(path) => code_object(&path),
        None => {
            eprintln!(
                "hsainfo: the agent report is not available in this build; use --code-object FILE"
            );
            ExitCode::from(2)
        }
    }
}

fn code_object(path: &std::path::Path) -> ExitCode {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("hsainfo: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    match hsa_linux::report::code_object::code_object_report(&bytes) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hsainfo: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
