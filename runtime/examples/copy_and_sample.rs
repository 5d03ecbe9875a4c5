//! The runtime services from Rust, with no C in between: texels go through the copy engine
//! (an SDMA queue of the emulated gfx90a) into an image's memory, and a clang-built OpenCL
//! kernel samples the image (`sample_f` of `testdata/codeobjects/image.cl`:
//! `read_imagef` through a constant sampler with normalized coordinates, clamp-to-edge and
//! bilinear filtering, at `(i / 64, 0.3)` for work-item `i`). Every sample is checked against
//! the filter computed on the host.
//!
//! `cargo run -p hsa-runtime --example copy_and_sample` (the emulated device, no GPU needed);
//! `cargo test -p hsa-runtime --example copy_and_sample` runs it as a test.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use hsa_core::image::{channel_order, channel_type, Descriptor, Format, Geometry};
use hsa_core::loader::executable::Executable;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::KernelDispatch;
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{GpuVa, NodeId};
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_runtime::{Services, ServicesConfig};

/// The image: a row of `WIDTH` 32-bit float texels (R), texel `x` holding `10 x + 1`.
const WIDTH: usize = 8;
/// Work-items of the dispatch: one sample each.
const SAMPLES: usize = 64;
/// How long a wait may take, ns.
const TIMEOUT_NS: u64 = 60_000_000_000;

fn texel(x: usize) -> f32 {
    10.0 * x as f32 + 1.0
}

/// What `read_imagef` with a normalized, clamp-to-edge, linear sampler gives at `u` on a one-row
/// image (OpenCL 1.2 §8.2: the texel-centre blend of the two texels around `u * WIDTH - 0.5`,
/// indices clamped to the edge; the row coordinate only picks the one row).
fn filtered(u: f32) -> f32 {
    let x = u * WIDTH as f32 - 0.5;
    let i0 = x.floor();
    let a = x - i0;
    let clamp = |i: f32| (i.max(0.0) as usize).min(WIDTH - 1);
    (1.0 - a) * texel(clamp(i0)) + a * texel(clamp(i0 + 1.0))
}

/// Runs the example; what it prints after `copy_and_sample: `.
fn run() -> Result<String, Box<dyn std::error::Error>> {
    // The runtime over the emulated device, and its services.
    let emulated = EmulatedKfd::new(builtin_topology())?;
    let device = SelectedDevice::emulated(emulated.clone())?;
    let rt = Arc::new(Runtime::new(Arc::new(device.platform))?);
    let gpu = rt.first_gpu().ok_or("no GPU agent")?;
    let cpu = rt.first_cpu().ok_or("no CPU agent")?;
    let gpu_node = NodeId(gpu.node());
    let signals = Arc::new(SignalPool::new(
        rt.platform_ref().clone(),
        NodeId(cpu.node()),
    ));
    let services = Services::new(
        rt.clone(),
        Arc::new(HostMemory::new()),
        signals.clone(),
        ServicesConfig::default(),
    );
    let fine = rt
        .find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED)
        .ok_or("no fine-grained pool")?
        .handle();
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .ok_or("no kernarg pool")?
        .handle();

    // The image: 2D, one row of R32F texels, over runtime memory laid out as the services say.
    let desc = Descriptor {
        geometry: Geometry::D2,
        width: WIDTH as u64,
        height: 1,
        depth: 0,
        array_size: 0,
        format: Format {
            channel_type: channel_type::FLOAT,
            channel_order: channel_order::R,
        },
    };
    let layout = hsa_runtime::images::data_layout(gpu, &desc, None)?;
    let image_memory = rt.allocate(fine, layout.size)?;
    let image = services
        .images()
        .create(gpu, &desc, image_memory.va.0, None)?;

    // The texels, written by the host into a staging buffer, go into the image's memory
    // through the copy engine: the GPU's SDMA queue (both ranges are system memory the GPU
    // reaches).
    let staging = rt.allocate(fine, layout.row_pitch)?;
    let staging_ptr = staging
        .host_ptr
        .ok_or("staging memory without a host pointer")?;
    for x in 0..WIDTH {
        // SAFETY: the staging allocation holds `row_pitch` >= WIDTH * 4 bytes, host-visible,
        // used by nothing else yet.
        unsafe { staging_ptr.cast::<f32>().as_ptr().add(x).write(texel(x)) };
    }
    let queues_before = emulated.live_handles().queues;
    let copied = Arc::new(signals.create_interrupt(1)?);
    // SAFETY: both ranges are runtime allocations that stay allocated until the copy has
    // completed (the wait below).
    unsafe {
        services.copy().copy(
            image_memory.va.0,
            staging.va.0,
            WIDTH * 4,
            Some(gpu_node),
            Vec::new(),
            copied.clone(),
        )?
    };
    let v = copied.wait(
        SignalCondition::Eq,
        0,
        TIMEOUT_NS,
        WaitState::Blocked,
        LoadOrder::Acquire,
    );
    if v != 0 {
        return Err(format!("the copy did not complete (signal {v})").into());
    }
    let sdma_queues = emulated.live_handles().queues - queues_before;
    if sdma_queues != 1 {
        return Err(format!("the copy made {sdma_queues} queues, not one SDMA queue").into());
    }

    // The kernel: sample_f(read_only image2d_t src, __global float4* out).
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/isa/image_ocl-gfx90a.hsaco");
    let code = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let isa = gpu.isa().ok_or("the GPU agent's ISA is unknown")?;
    let mut executable = Executable::new(rt.platform());
    executable.load_code_object(gpu_node, isa, &code, MemoryKind::System)?;
    executable.freeze()?;
    let symbol = executable.symbol_by_name("sample_f", Some(gpu_node))?;
    let kernel = symbol.kernel.as_ref().ok_or("sample_f is not a kernel")?;

    // Its arguments: the image handle, the output, then code object v5's hidden block counts
    // (1, 1, 1) and group sizes (64, 1, 1) (AMDGPUUsage "Code Object V5 Metadata").
    let out = rt.allocate(fine, (SAMPLES * 16) as u64)?;
    let out_ptr = out.host_ptr.ok_or("output memory without a host pointer")?;
    let kernarg = rt.allocate(
        kernarg_pool,
        u64::from(kernel.kernarg_segment_size).max(256),
    )?;
    let ka = kernarg
        .host_ptr
        .ok_or("kernarg memory without a host pointer")?;
    // SAFETY: the kernarg allocation holds at least 256 bytes, 16-aligned, host-visible, not
    // yet used by a dispatch.
    unsafe {
        let ka = ka.as_ptr();
        ka.write_bytes(0, 256);
        ka.cast::<[u64; 2]>().write([image.0, out.va.0]);
        ka.add(16).cast::<[u32; 3]>().write([1, 1, 1]);
        ka.add(28).cast::<[u16; 3]>().write([SAMPLES as u16, 1, 1]);
    }

    // The dispatch: one work-group of 64 work-items on an AQL queue of the GPU.
    let queue = AqlQueue::create(
        rt.platform(),
        &QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size()),
    )?;
    let done = signals.create_interrupt(1)?;
    let packet = KernelDispatch {
        private_segment_size_bytes: kernel.private_segment_size,
        group_segment_size_bytes: kernel.group_segment_size,
        completion_signal: done.handle(),
        ..KernelDispatch::one_dimensional(
            kernel.kernel_object,
            kernarg.va,
            SAMPLES as u16,
            SAMPLES as u32,
        )
    };
    let mut reservation = queue.reserve(1)?;
    let index = reservation.write_next(&packet.emit()?)?;
    queue.ring_doorbell(index)?;
    let v = queue.wait_completion(
        &done,
        SignalCondition::Eq,
        0,
        TIMEOUT_NS,
        WaitState::Blocked,
    )?;
    if v != 0 {
        return Err(format!("the dispatch did not complete (signal {v})").into());
    }

    // Every sample against the host's filter.
    for i in 0..SAMPLES {
        // SAFETY: the dispatch completed (acquire wait); `out` holds SAMPLES float4s.
        let got = unsafe { out_ptr.cast::<[f32; 4]>().as_ptr().add(i).read() };
        let want = [filtered(i as f32 / SAMPLES as f32), 0.0, 0.0, 1.0];
        if got != want {
            return Err(format!("sample {i}: {got:?}, expected {want:?}").into());
        }
    }

    // Clean up (dropping does the same, reporting nothing).
    drop((done, copied));
    queue.destroy()?;
    executable.destroy()?;
    services.images().destroy(image)?;
    for va in [kernarg.va, out.va, staging.va, image_memory.va] {
        rt.free(GpuVa(va.0))?;
    }
    services.shut_down();
    Ok(format!(
        "{WIDTH} texels copied on the GPU's SDMA queue, {SAMPLES} bilinear samples of the image \
         match the host"
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("copy_and_sample: {line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("copy_and_sample: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// The example's checks hold: one SDMA queue made by the copy, every sample equal to the
    /// host's filter.
    #[test]
    #[cfg_attr(miri, ignore = "the device makes system calls miri cannot run")]
    fn copies_on_sdma_and_samples_the_image() {
        let line = super::run().unwrap_or_else(|e| panic!("copy_and_sample: {e}"));
        assert!(
            line.starts_with("8 texels copied on the GPU's SDMA queue"),
            "{line}"
        );
    }

    /// The host's filter blends the texel centres: at the first texel's centre it is that
    /// texel, halfway between two it is their mean, past the edge it clamps.
    #[test]
    fn the_host_filter_blends_texel_centres() {
        assert_eq!(super::filtered(0.5 / 8.0), 1.0);
        assert_eq!(super::filtered(1.0 / 8.0), 6.0);
        assert_eq!(super::filtered(0.0), 1.0);
        assert_eq!(super::filtered(1.0), 71.0);
    }
}
