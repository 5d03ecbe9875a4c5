//! # hsa-tools
//!
//! The tools and examples of hsa-rt, over the runtime's public API and `hsa-emu`'s device
//! selection (`/dev/kfd`, else the emulated device):
//!
//! - [`demo`]: the main job — the canonical HSA flow (load the real `vector_copy` kernel for
//!   the agent's ISA, dispatch it, verify every element), run by the `vector_copy` example
//!   (`cargo run --release --example vector_copy`) and the end-to-end tests.
//! - [`report`]: what the `hsainfo` binary prints — rocminfo's report of agents, pools and
//!   ISAs, a code object's target and kernels, and its kernels' disassembly in
//!   `llvm-objdump`'s text (`cargo run -p hsa-tools --bin hsainfo`).
//! - [`progress`]: the progress bar the `vector_copy` example shows on a terminal.
//!
//! The tools log through the `log` facade to `hsa_linux::logger`'s stderr logger, at the
//! level `HSA_RT_LOG` asks for.
#![deny(unsafe_code)]

pub mod demo;
pub mod progress;
pub mod report;
