//! `hsainfo`: reports about the HSA system and code objects.
//!
//! `hsainfo` prints what rocminfo prints (system attributes, agents, pools, ISAs) through the
//! runtime's public API, on the default device (`/dev/kfd`, else the emulated device);
//! `hsainfo --sysfs DIR` runs it on a captured KFD topology through the emulated device;
//! `hsainfo --agent N` reports GPU agent N only (from 0; past the last is an error naming how
//! many there are); `hsainfo --version` prints the version;
//! `hsainfo --code-object FILE` prints a code object's target and kernels;
//! `hsainfo --code-object FILE --disassemble` prints each kernel's gfx9 machine code in
//! `llvm-objdump-19 -d` text ([`hsa_tools::report::disassembly`]).
//!
//! Output is written without panicking: a closed pipe (`hsainfo | head -2`) ends it quietly
//! with success; another write error (`> /dev/full`) prints a message and exits with 1.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser};
use hsa_tools::report::{fail, print};

/// Command line of hsainfo.
#[derive(Debug, Parser)]
#[command(
    name = "hsainfo",
    version,
    about = "Report on HSA agents and AMDGPU code objects"
)]
struct Args {
    /// Print the target and kernels of an AMDGPU code object (.hsaco) instead of the agents.
    #[arg(long = "code-object", value_name = "FILE")]
    code_object: Option<PathBuf>,
    /// With --code-object: print each kernel's instructions in `llvm-objdump-19 -d` text
    /// (gfx9 code only).
    ///
    /// The same lines as `llvm-objdump-19 -d --mcpu=<processor> FILE`, kernel by kernel under
    /// `<address> <name>:` labels, for gfx9 code objects (gfx900 and its variants, gfx906,
    /// gfx908, gfx90a, gfx940/941/942, gfx9-generic)
    /// (another processor is an error naming it). Each kernel ends at the end of its symbol
    /// (st_size), so the alignment padding llvm-objdump lists up to the next symbol (s_nop 0)
    /// is left out. A word the decoder does not know is a `.long 0x<word>` line, as
    /// llvm-objdump prints an unknown word, marked `// not decoded by hsa-rt: <reason>`.
    #[arg(long = "disassemble")]
    disassemble: bool,
    /// Report on a captured KFD sysfs topology (the directory holding `nodes/`) through the
    /// emulated device.
    #[arg(long = "sysfs", value_name = "DIR", conflicts_with = "code_object")]
    sysfs: Option<PathBuf>,
    /// Report on GPU agent N only (counting GPU agents from 0, in node order), after the
    /// system attributes; it keeps its number among all agents (`Agent k`).
    #[arg(long = "agent", value_name = "N", conflicts_with = "code_object")]
    agent: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = hsa_linux::logger::install_stderr_logger() {
        return fail("hsainfo", e);
    }
    if args.disassemble && args.code_object.is_none() {
        Args::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--disassemble needs --code-object FILE (it disassembles the kernels of a code object)",
            )
            .exit();
    }
    match args.code_object {
        Some(path) => code_object(&path, args.disassemble),
        None => agents(args.sysfs.as_deref(), args.agent),
    }
}

fn agents(sysfs: Option<&std::path::Path>, agent: Option<usize>) -> ExitCode {
    let platform = match sysfs {
        Some(dir) => hsa_emu::open_capture(dir),
        None => hsa_emu::open_default(),
    };
    let runtime = platform.and_then(|d| hsa_core::runtime::Runtime::new(Arc::new(d.platform)));
    let report = runtime.and_then(|rt| match agent {
        Some(n) => hsa_tools::report::agents::gpu_agent_report(&rt, n),
        None => Ok(hsa_tools::report::agents::report(&rt)),
    });
    match report {
        Ok(text) => print("hsainfo", &text),
        Err(e) => fail("hsainfo", e),
    }
}

fn code_object(path: &std::path::Path, disassemble: bool) -> ExitCode {
    let bytes = match hsa_tools::report::code_object::read_code_object_file(path) {
        Ok(b) => b,
        Err(e) => return fail("hsainfo", e),
    };
    let report = if disassemble {
        let name = path.display().to_string();
        hsa_tools::report::disassembly::disassembly_report(&bytes, &name)
    } else {
        hsa_tools::report::code_object::code_object_report(&bytes)
    };
    match report {
        Ok(report) => print("hsainfo", &report),
        Err(e) => fail("hsainfo", format_args!("{}: {e}", path.display())),
    }
}
