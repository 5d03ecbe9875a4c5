//! The main job: vector_copy (or vector_add, local_reverse) end to end on the default device —
//! `/dev/kfd` when present, else the emulated device.
//!
//! ```text
//! cargo run --release --example vector_copy
//! cargo run --release --example vector_copy -- --kernel local-reverse --chain 4
//! cargo run --release --example vector_copy -- --agent 3 --sysfs ../shared/testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology
//! cargo run --release --example vector_copy -- --sysfs ../shared/testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology/topology
//! ```
//!
//! Prints one line naming the agent, the device, what ran the kernel (the GPU, or on the
//! emulated device the gfx9 interpreter with its speed, or a host implementation) and the
//! elements verified; exits non-zero on any error or mismatch. `HSA_RT_EMULATION=host` makes
//! the emulated device run host implementations only. `--help` lists the options and their
//! limits (tools/README.md has them too). A closed stdout pipe is not an error; any
//! other write error is reported with exit code 1.
//!
//! On a terminal, an interpreted run longer than a second shows a progress bar on stderr
//! (work-groups done of all dispatches'); redirected, nothing. `HSA_RT_LOG` sets what the
//! runtime logs on stderr (default: warnings and errors; `1`: also failing calls' errors).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use hsa_tools::demo::{self, DemoConfig, DemoKernel};
use hsa_tools::progress::ProgressDisplay;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Kernel {
    VectorCopy,
    VectorAdd,
    LocalReverse,
}

/// The options' limits, for `--help` (tools/README.md has the same table).
const LIMITS: &str = "\
Limits, checked before anything is allocated (a value outside is an error naming the option):
  --elements        1 to 4294967295; the three buffers (elements rounded up to whole
                    work-groups, x 4 bytes each) must fit the CPU's fine-grained pool and the
                    Linux backend's 64 GiB of reserved address space; local-reverse needs a
                    multiple of --workgroup-size
  --workgroup-size  1 to 65535, at most the kernel's .max_flat_workgroup_size (256 for
                    kernels.cl's) and the agent's work-group maximum (1024 on the
                    built-in profile)
  --chain           1 to 4000 (one completion signal each; amdkfd allows 4096 per process)
  --agent           below the number of GPU agents
  --sysfs           the directory holding nodes/ (a capture's .../topology)
The environment variables (HSA_RT_DEVICE, HSA_RT_EMULATION, HSA_RT_LOG, ...) are in
docs/environment.md.";

/// Runs a kernel of testdata/codeobjects/kernels.cl through the HSA runtime and verifies it.
#[derive(Debug, Parser)]
#[command(name = "vector_copy", version, after_help = LIMITS)]
struct Args {
    /// The kernel to run.
    #[arg(long, value_enum, default_value = "vector-copy")]
    kernel: Kernel,
    /// Elements (32-bit ints) per buffer: the grid size (any size; the last work-group may be
    /// partial, except for local-reverse).
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u32).range(1..))]
    elements: u32,
    /// Work-group size, work-items.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..))]
    workgroup_size: u16,
    /// Number of dispatches, chained by barrier-AND packets (at most 4000: one completion
    /// signal each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(demo::MAX_CHAIN)))]
    chain: u32,
    /// The code object to load (default: the one built for the agent's ISA).
    #[arg(long, value_name = "FILE")]
    code_object: Option<PathBuf>,
    /// Run on the emulated device over a captured KFD topology (the directory with `nodes/`).
    #[arg(long, value_name = "DIR")]
    sysfs: Option<PathBuf>,
    /// The GPU agent to run on: its index among the GPU agents, from 0, in node order (an
    /// index past the last is an error naming how many there are).
    #[arg(long, value_name = "N", default_value_t = 0)]
    agent: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = hsa_linux::logger::install_stderr_logger() {
        return hsa_tools::report::fail("vector_copy", e);
    }
    let platform = match &args.sysfs {
        Some(dir) => hsa_emu::open_capture(dir),
        None => hsa_emu::open_default(),
    };
    let config = DemoConfig {
        kernel: match args.kernel {
            Kernel::VectorCopy => DemoKernel::VectorCopy,
            Kernel::VectorAdd => DemoKernel::VectorAdd,
            Kernel::LocalReverse => DemoKernel::LocalReverse,
        },
        elements: args.elements,
        workgroup_size: args.workgroup_size,
        chain: args.chain,
        code_object: args.code_object,
        agent: args.agent,
    };
    let mut progress = ProgressDisplay::stderr("work-groups");
    let outcome = platform.and_then(|d| {
        demo::run_with_progress(d, &config, &mut |done, total| progress.update(done, total))
    });
    progress.finish();
    match outcome {
        Ok(o) => {
            let speed = match o.execution {
                Some(s) if s.interpreter_ns > 0 => format!(
                    ", {:.1} M lane-instructions/s",
                    s.lane_instructions as f64 * 1e3 / s.interpreter_ns as f64
                ),
                _ => String::new(),
            };
            let past_grid = match o.elements_past_grid_verified {
                0 => String::new(),
                k => format!(" (and {k} past the grid untouched)"),
            };
            let workgroup = if o.workgroup_size == config.workgroup_size {
                String::new()
            } else {
                format!(" in one work-group of {}", o.workgroup_size)
            };
            let line = format!(
                "{}: agent {} on the {} device, run by the {}{speed}, {} dispatch(es){workgroup}, \
                 {} elements verified{past_grid} ({})\n",
                config.kernel.name(),
                o.agent,
                o.device,
                o.executor,
                o.dispatches,
                o.elements_verified,
                o.code_object
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("?")
            );
            hsa_tools::report::print("vector_copy", &line)
        }
        Err(e) => hsa_tools::report::fail("vector_copy", e),
    }
}
