//! Embedding hsa-rt in a Rust program on Linux: the quick start of the crate docs on the
//! device the environment picks — `/dev/kfd` when it exists, else the emulated device
//! (`HSA_RT_DEVICE=kfd|emulated` forces one; see `docs/environment.md`) — with
//! a queue error callback and a bounded wait.
//!
//! From the repository's root (a clean clone needs nothing else):
//!
//! ```text
//! cargo run -p hsa-core --example linux_embedding
//! cargo run -p hsa-core --example linux_embedding -- testdata/codeobjects/kernels-gfx90a-v4.hsaco
//! ```
//!
//! The argument is the code object; by default `testdata/codeobjects/kernels-<ISA>-v5.hsaco`
//! for the first GPU agent's processor (`gfx90a` on the emulated device). Prints
//! `linux_embedding: <agent> on <kfd|emulated>: verified 65536 elements` and exits 0, or
//! prints the error and exits 1. In your own crate, depend on `hsa-core`, `hsa-linux` and
//! `hsa-emu` (the device choice, `hsa_emu::open_default`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::loader::executable::Executable;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::{HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::NodeId;

/// Elements (32-bit ints) copied.
const N: usize = 1 << 16;
/// Work-items per work-group (at most the kernel's `.max_flat_workgroup_size`, 256).
const WORKGROUP: u16 = 256;
/// How long to wait for the dispatch before giving up.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs vector_copy from `code_object` (default: the one for the agent's processor) and
/// returns what `main` prints after `linux_embedding: `.
fn run(code_object: Option<PathBuf>) -> Result<String, Box<dyn std::error::Error>> {
    let device = hsa_emu::open_default()?;
    let device_kind = device.platform.device_kind().to_string();
    let rt = Runtime::new(Arc::new(device.platform))?;
    let gpu = rt.first_gpu().ok_or("no GPU agent")?;
    let cpu = rt.first_cpu().ok_or("no CPU agent")?;
    let gpu_node = NodeId(gpu.node());
    let isa = gpu.isa().ok_or("the GPU agent's ISA is unknown")?;
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .ok_or("no kernarg pool")?
        .handle();
    let fine_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED)
        .ok_or("no fine-grained pool")?
        .handle();

    // No error callback: the queue records why it stopped (`AqlQueue::error`).
    let config = QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size());
    let queue = AqlQueue::create(rt.platform(), &config)?;

    let path = match code_object {
        Some(p) => p,
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../testdata/codeobjects/kernels-{}-v5.hsaco",
            isa.processor.name()
        )),
    };
    let code_object =
        std::fs::read(&path).map_err(|e| format!("code object {}: {e}", path.display()))?;
    let mut executable = Executable::new(rt.platform());
    executable
        .load_code_object(gpu_node, isa, &code_object, MemoryKind::System)
        .map_err(|e| e.context(&path.display().to_string()))?;
    executable.freeze()?;
    let kernel = executable
        .symbol_by_name("vector_copy", Some(gpu_node))?
        .kernel
        .clone()
        .ok_or("vector_copy is not a kernel")?;

    let input = rt.allocate(fine_pool, (N * 4) as u64)?;
    let output = rt.allocate(fine_pool, (N * 4) as u64)?;
    let kernarg = rt.allocate(kernarg_pool, 16)?;
    let (Some(in_ptr), Some(out_ptr), Some(ka_ptr)) =
        (input.host_ptr, output.host_ptr, kernarg.host_ptr)
    else {
        return Err("system memory without a host pointer".into());
    };
    let (in_ptr, out_ptr) = (
        in_ptr.cast::<i32>().as_ptr(),
        out_ptr.cast::<i32>().as_ptr(),
    );
    for i in 0..N {
        // SAFETY: both allocations hold N i32s (N * 4 bytes, page-aligned), host-visible, not
        // yet used by any dispatch.
        unsafe {
            in_ptr.add(i).write((i as i32).wrapping_mul(7) - 3);
            out_ptr.add(i).write(0);
        }
    }
    // SAFETY: the kernarg allocation holds at least 16 bytes, 8-aligned, not yet in use.
    unsafe {
        ka_ptr
            .cast::<[u64; 2]>()
            .as_ptr()
            .write([input.va.0, output.va.0])
    };

    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let done = signals.create_interrupt(1)?;
    let packet = KernelDispatch {
        flags: HeaderFlags {
            barrier: true,
            ..HeaderFlags::SYSTEM
        },
        dimensions: 1,
        workgroup_size: [WORKGROUP, 1, 1],
        grid_size: [N as u32, 1, 1],
        private_segment_size_bytes: kernel.private_segment_size,
        group_segment_size_bytes: kernel.group_segment_size,
        kernel_object: kernel.kernel_object,
        kernarg_address: kernarg.va,
        completion_signal: done.handle(),
    };
    let mut reservation = queue.reserve(1)?;
    let index = reservation.write_next(&packet.emit()?)?;
    queue.ring_doorbell(index)?;

    // Wait in slices of 100 ms, so that a queue error or the timeout ends the wait.
    let started = Instant::now();
    while done.wait(
        SignalCondition::Eq,
        0,
        100_000_000,
        WaitState::Blocked,
        LoadOrder::Acquire,
    ) != 0
    {
        if let Some(e) = queue.error() {
            return Err(format!("queue {} error: {e}", queue.id()).into());
        }
        if started.elapsed() > TIMEOUT {
            return Err(format!("the dispatch did not complete in {TIMEOUT:?}").into());
        }
    }
    for i in 0..N {
        // SAFETY: the dispatch completed (acquire wait above); the buffers are ours again.
        let (got, want) = unsafe { (out_ptr.add(i).read(), in_ptr.add(i).read()) };
        if got != want {
            return Err(format!("element {i} is {got}, expected {want}").into());
        }
    }

    for va in [kernarg.va, input.va, output.va] {
        rt.free(va)?;
    }
    drop(done);
    queue.destroy()?;
    executable.destroy()?;
    Ok(format!(
        "{} on {device_kind}: verified {N} elements",
        gpu.name()
    ))
}

fn main() -> ExitCode {
    match run(std::env::args_os().nth(1).map(PathBuf::from)) {
        Ok(line) => {
            println!("linux_embedding: {line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("linux_embedding: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo test -p hsa-core` runs the example (`test = true` in Cargo.toml), on the device the
/// environment picks, so that it cannot rot.
#[cfg(test)]
mod tests {
    #[test]
    #[cfg_attr(miri, ignore = "the device makes system calls miri cannot run")]
    fn verifies_every_element() {
        let line = super::run(None).unwrap_or_else(|e| panic!("linux_embedding: {e}"));
        assert!(line.ends_with(": verified 65536 elements"), "{line}");
    }
}
