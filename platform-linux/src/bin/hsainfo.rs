//! `hsainfo`: reports about the HSA system and code objects.
//!
//! `hsainfo` prints what rocminfo prints (system attributes, agents, pools, ISAs) through the
//! runtime's public API, on the default device (`/dev/kfd`, else the emulated device);
//! `hsainfo --sysfs DIR` runs it on a captured KFD topology through the emulated device;
//! `hsainfo --code-object FILE` prints a code object's target and kernels.

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
    /// Report on a captured KFD sysfs topology (the directory holding `nodes/`) through the
    /// emulated device.
    #[arg(long = "sysfs", value_name = "DIR", conflicts_with = "code_object")]
    sysfs: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match args.code_object {
        Some(path) => code_object(&path),
        None => agents(args.sysfs.as_deref()),
    }
}

fn agents(sysfs: Option<&std::path::Path>) -> ExitCode {
    let platform = match sysfs {
        Some(dir) => hsa_linux::topology::Topology::read(dir)
            .and_then(hsa_linux::emulated::EmulatedKfd::new)
            .and_then(hsa_linux::LinuxPlatform::new_emulated),
        None => hsa_linux::LinuxPlatform::open_default(),
    };
    let runtime = platform.and_then(hsa_core::runtime::Runtime::new);
    match runtime {
        Ok(rt) => {
            print!("{}", hsa_linux::report::agents::report(&rt));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hsainfo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn code_object(path: &std::path::Path) -> ExitCode {
    let bytes = match hsa_linux::report::code_object::read_code_object_file(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("hsainfo: {e}");
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
