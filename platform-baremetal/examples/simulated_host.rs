//! The `Host` trait of hsa-baremetal, walked through on an ordinary Linux host: a [`Host`] over
//! `static` buffers (no heap, no std collections in the host), the core's AQL queue and
//! signals on top of [`BaremetalPlatform`], a barrier-AND and a kernel dispatch, and a blocked
//! wait that sleeps in the host's wait-for-interrupt hook until the IH interrupt path wakes it.
//!
//! This is not firmware: it needs std, for the simulated device's thread and the host clock.
//! The firmware example — a `no_std` image for `x86_64-unknown-none` that runs the main job on
//! hsa-baremetal in a QEMU virtual machine — is `unikernel/` (hsa-unikernel); see its
//! `src/main.rs` for the commands.
//!
//! There is no GPU here: a thread runs the simulated device from `tests/sim` (the same one the
//! integration test uses). The host maps its queue as amdgpu does, with a `MAP_QUEUES` packet
//! on a KIQ ring in a static page, which the device's MEC (the model the QEMU test's device
//! uses too) serves from the queue's MQD image. The device polls the doorbells, runs the ring through the core's packet
//! processor, executes the "kernel" as a Rust closure, and reports completions as soc15 IH
//! end-of-pipe entries, calling `on_interrupt` as the host's ISR would.
//!
//! Run: `cargo run -p hsa-baremetal --example simulated_host`.

#[path = "../tests/sim/mod.rs"]
mod sim;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use hsa_baremetal::kiq::{Kiq, KiqConfig};
use hsa_baremetal::{
    BaremetalPlatform, CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping,
    RegisterLocation,
};
use hsa_core::packet::{BarrierAnd, HeaderFlags, KernelDispatch};
use hsa_core::platform::Platform;
use hsa_core::platform::{MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, NodeProperties};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::{DoorbellIndex, Error, GpuVa, NodeId, PhysAddr, Status};
use sim::{DeviceLink, SimDevice, SimHost, Window};

/// System memory the firmware hands to the runtime, bytes (identity-mapped for the GPU).
const SYSTEM_BYTES: usize = 1 << 20;
/// The IH ring, bytes (128 entries of 32).
const IH_BYTES: usize = 4096;
/// The doorbell BAR mapping, bytes (512 doorbells).
const DOORBELL_BAR_BYTES: usize = 4096;
/// The doorbells this runtime may use.
const FIRST_DOORBELL: u32 = 8;
const DOORBELL_COUNT: u32 = 8;
/// Byte offset of `IH_RB_RPTR` in the IH register block.
const IH_RPTR_OFFSET: usize = 0x10;
/// The "kernel" the simulated device knows (a kernel descriptor address, 64-aligned).
const VECTOR_ADD: GpuVa = GpuVa(0x4000_0000);
/// Work-items of the dispatch.
const N: u32 = 1024;

/// `N` zeroed, 4096-aligned 64-bit words: memory the device and the runtime share.
#[repr(C, align(4096))]
struct Pages<const N: usize>([AtomicU64; N]);

impl<const N: usize> Pages<N> {
    const fn new() -> Self {
        Pages([const { AtomicU64::new(0) }; N])
    }

    fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

static SYSTEM_MEMORY: Pages<{ SYSTEM_BYTES / 8 }> = Pages::new();
static DOORBELL_BAR: Pages<{ DOORBELL_BAR_BYTES / 8 }> = Pages::new();
static IH_RING: Pages<{ IH_BYTES / 8 }> = Pages::new();
static IH_WPTR_WRITEBACK: Pages<1> = Pages::new();
static IH_REGISTERS: Pages<32> = Pages::new();
/// The KIQ's page: a 256-dword ring, then its write-pointer poll word (dwords) and its fence.
static KIQ_PAGE: Pages<512> = Pages::new();
/// KIQ ring size, dwords.
const KIQ_RING_DWORDS: u32 = 256;
/// How long the host waits for a KIQ fence, ns.
const KIQ_TIMEOUT_NS: u64 = 1_000_000_000;
static LINK: DeviceLink = DeviceLink::new();

/// The firmware's host: fixed arrays and atomics only.
struct FirmwareHost {
    carve_outs: [CarveOut; 2],
    nodes: [NodeProperties; 2],
    /// Interrupts delivered to sleeping CPUs (the "wake" edge a `hlt` waits for).
    wake_epoch: AtomicU64,
    /// Times a waiter halted (still waiting after arming).
    halts: AtomicU64,
    /// The KIQ ring this host maps queues through (amdgpu's `kiq_map_queues` path).
    kiq: spin::Mutex<Kiq>,
    boot: Instant,
}

impl FirmwareHost {
    fn new() -> Result<FirmwareHost, Error> {
        let sys = SYSTEM_MEMORY.addr();
        let kiq_page = KIQ_PAGE.addr();
        let Some(config) = KiqConfig::identity_block(kiq_page, KIQ_RING_DWORDS) else {
            hsa_core::bail!(
                Status::InvalidArgument,
                "the KIQ page passes the address space"
            );
        };
        // SAFETY: the ring, poll word and fence lie in KIQ_PAGE, a `static` (identity-mapped
        // for the device), written only through this Kiq and by the device's MEC.
        let kiq = unsafe { Kiq::new(&config) }?;
        let host = FirmwareHost {
            carve_outs: [
                CarveOut {
                    node: NodeId(0),
                    kind: CarveOutKind::SystemMemory,
                    phys_base: PhysAddr(0x1_0000_0000),
                    virt_base: Some(sys),
                    gpu_va: GpuVa(sys as u64),
                    size_bytes: SYSTEM_BYTES as u64,
                },
                CarveOut {
                    node: NodeId(1),
                    kind: CarveOutKind::PrivateVram,
                    phys_base: PhysAddr(0x80_0000_0000),
                    virt_base: None,
                    gpu_va: GpuVa(0x80_0000_0000),
                    size_bytes: 64 << 20,
                },
            ],
            nodes: [
                NodeProperties {
                    node_id: 0,
                    cpu_cores_count: 1,
                    ..Default::default()
                },
                NodeProperties {
                    node_id: 1,
                    simd_count: 4,
                    simd_per_cu: 4,
                    wave_front_size: 64,
                    gfx_target_version: 90010,
                    ..Default::default()
                },
            ],
            wake_epoch: AtomicU64::new(0),
            halts: AtomicU64::new(0),
            kiq: spin::Mutex::new(kiq),
            boot: Instant::now(),
        };
        // The firmware's bring-up of the MEC: its KIQ, and CP_MEC_DOORBELL_RANGE over the
        // doorbells granted to the runtime.
        let page = Window {
            gpu: kiq_page as u64,
            virt: kiq_page,
            size: 4096,
        };
        let doorbells = 2 * FIRST_DOORBELL..2 * (FIRST_DOORBELL + DOORBELL_COUNT);
        LINK.set_kiq(&host.carve_outs, page, &config, doorbells)?;
        Ok(host)
    }

    /// Writes one KIQ batch (`submit`), rings the KIQ's doorbell and waits for its fence.
    fn kiq_batch(
        &self,
        submit: impl FnOnce(&mut Kiq, &dyn Fn(u64)) -> Result<u64, Error>,
    ) -> Result<(), Error> {
        let mut kiq = self.kiq.lock();
        let seq = submit(&mut kiq, &|_| LINK.kiq_doorbell())?;
        kiq.wait(self, seq, KIQ_TIMEOUT_NS)
    }
}

// SAFETY: the carve-outs, doorbell BAR, IH ring, write-back and register block are `static`s
// (valid forever), used by nobody but the runtime and the (simulated) device; the system
// carve-out is identity-mapped; nothing overlaps; doorbells 8..16 fit the 4096-byte BAR.
unsafe impl Host for FirmwareHost {
    fn carve_outs(&self) -> &[CarveOut] {
        &self.carve_outs
    }

    fn clear_device_memory(&self, _gpu_va: GpuVa, _size_bytes: u64) -> Result<(), Error> {
        // A real firmware would run an SDMA constant fill here; the simulated VRAM is never
        // read.
        Ok(())
    }

    fn doorbells(&self) -> DoorbellAperture {
        DoorbellAperture {
            virt_base: DOORBELL_BAR.addr(),
            size_bytes: DOORBELL_BAR_BYTES,
            first: DoorbellIndex(FIRST_DOORBELL),
            count: DOORBELL_COUNT,
        }
    }

    unsafe fn map_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        println!(
            "  host: map_queue doorbell {} ring {:#x} ({} bytes) amd_queue {:#x} eop {:#x}",
            mapping.doorbell.get(),
            mapping.ring.get(),
            mapping.ring_size_bytes,
            mapping.amd_queue.get(),
            mapping.eop.get()
        );
        // MEC1, pipe 0, a queue slot per granted doorbell.
        let slot = (mapping.doorbell.get() - FIRST_DOORBELL) as u8;
        self.kiq_batch(|kiq, ring| kiq.map_queue(mapping, 1, 0, slot, ring))
    }

    fn unmap_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        println!("  host: unmap_queue doorbell {}", mapping.doorbell.get());
        self.kiq_batch(|kiq, ring| kiq.unmap_queue(mapping, ring))
    }

    fn ih_ring(&self) -> IhRingConfig {
        IhRingConfig {
            ring_virt_base: IH_RING.addr(),
            ring_size_bytes: IH_BYTES as u32,
            wptr_virt: IH_WPTR_WRITEBACK.addr(),
            rptr_register: RegisterLocation {
                block_virt_base: IH_REGISTERS.addr(),
                block_size_bytes: 256,
                offset_bytes: IH_RPTR_OFFSET,
            },
        }
    }

    fn ih_overflow_clear(&self) {
        LINK.request_overflow_clear();
    }

    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool) {
        // Arm first, then check: a wake after the check moves the epoch and ends the halt.
        let armed = self.wake_epoch.load(Ordering::Acquire);
        if !still_waiting() {
            return;
        }
        self.halts.fetch_add(1, Ordering::Relaxed);
        // Stand-in for `sti; hlt`: this CPU does nothing until the next interrupt's wake.
        while self.wake_epoch.load(Ordering::Acquire) == armed
            && self.timestamp_ticks() < deadline_ticks
        {
            std::thread::yield_now();
        }
    }

    fn wake_waiters(&self) {
        self.wake_epoch.fetch_add(1, Ordering::Release);
    }

    fn timestamp_ticks(&self) -> u64 {
        self.boot.elapsed().as_nanos() as u64
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }

    fn nodes(&self) -> &[NodeProperties] {
        &self.nodes
    }
}

impl SimHost for FirmwareHost {
    fn link(&self) -> &DeviceLink {
        &LINK
    }
}

/// The 32-bit words of a host-visible chunk, as atomics.
fn words(chunk: &MemoryChunk) -> Result<&[AtomicU32], Error> {
    let Some(ptr) = chunk.host_ptr else {
        hsa_core::bail!(
            Status::InvalidAllocation,
            "chunk {} has no host pointer",
            chunk.gpu_va
        );
    };
    // SAFETY: the platform guarantees `size_bytes` of live memory at `host_ptr` until the
    // chunk is freed (after every use below); 4096-aligned; accessed only atomically here and
    // by the device.
    Ok(unsafe {
        std::slice::from_raw_parts(
            ptr.as_ptr().cast::<AtomicU32>(),
            chunk.size_bytes as usize / 4,
        )
    })
}

fn system_chunk(p: &impl Platform, bytes: u64) -> Result<MemoryChunk, Error> {
    p.allocate_memory(&MemoryRequest {
        node: NodeId(0),
        kind: MemoryKind::System,
        size_bytes: bytes,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    })
}

fn main() -> Result<(), Error> {
    println!("simulated_host: bringing up hsa-baremetal over static buffers");
    let platform = BaremetalPlatform::<FirmwareHost>::new(FirmwareHost::new()?)?;
    let p = &platform;
    for c in p.host().carve_outs() {
        println!(
            "  carve-out node {} {:?}: gpu_va {:#x}, {} KiB",
            c.node.get(),
            c.kind,
            c.gpu_va.get(),
            c.size_bytes / 1024
        );
    }

    // Buffers: a, b (inputs), c (output), and the kernarg segment [a, b, c, n].
    let bytes = u64::from(N) * 4;
    let (a, b, c) = (
        system_chunk(p, bytes)?,
        system_chunk(p, bytes)?,
        system_chunk(p, bytes)?,
    );
    let kernarg = system_chunk(p, 4096)?;
    let args = words(&kernarg)?;
    for (i, chunk) in [&a, &b, &c].into_iter().enumerate() {
        let va = chunk.gpu_va.get();
        args[2 * i].store(va as u32, Ordering::Relaxed);
        args[2 * i + 1].store((va >> 32) as u32, Ordering::Relaxed);
    }
    args[6].store(N, Ordering::Relaxed);

    let device = SimDevice::new(p);
    device.register_kernel(VECTOR_ADD, |ctx| {
        let arg = |i| ctx.kernarg_u64(i).unwrap_or(0);
        let (a, b, c) = (arg(0), arg(1), arg(2));
        let n = arg(3) as u32;
        for i in 0..ctx.dispatch.grid_size[0].min(n) {
            let off = 4 * u64::from(i);
            let sum = ctx.load_u32(a + off).unwrap_or(0) + ctx.load_u32(b + off).unwrap_or(0);
            ctx.store_u32(c + off, sum);
        }
    });

    let signals = SignalPool::new(p, NodeId(0));
    let inputs_ready = signals.create(1)?;
    let barrier_done = signals.create_interrupt(1)?;
    let kernel_done = signals.create_interrupt(1)?;
    let queue = AqlQueue::create(p, &QueueConfig::new(NodeId(1), 64, 64, 1 << 12))?;
    println!(
        "  queue {} on doorbell address {:#x}, {} packets",
        queue.id(),
        queue.hw_queue().doorbell_address,
        queue.size_packets()
    );

    let stop = std::sync::atomic::AtomicBool::new(false);
    let outcome = std::thread::scope(|s| -> Result<(i64, i64), Error> {
        s.spawn(|| device.run(&stop));
        let result = (|| {
            // Barrier-AND on "inputs ready", then the dispatch: the GPU holds the kernel back
            // until the firmware has filled the inputs.
            let mut r = queue.reserve(2)?;
            let barrier_flags = HeaderFlags {
                barrier: true,
                ..HeaderFlags::SYSTEM
            };
            let barrier = BarrierAnd::new(
                barrier_flags,
                &[inputs_ready.handle()],
                barrier_done.handle(),
            )?;
            r.write_next(&barrier.emit()?)?;
            let dispatch = KernelDispatch {
                completion_signal: kernel_done.handle(),
                ..KernelDispatch::one_dimensional(VECTOR_ADD, kernarg.gpu_va, 256, N)
            };
            r.write_next(&dispatch.emit()?)?;
            queue.ring_doorbell(r.last_index())?;
            println!(
                "simulated_host: submitted barrier-AND + dispatch, doorbell {}",
                r.last_index()
            );

            let (wa, wb) = (words(&a)?, words(&b)?);
            for i in 0..N as usize {
                wa[i].store(i as u32, Ordering::Relaxed);
                wb[i].store(1000 * i as u32, Ordering::Relaxed);
            }
            // Release: the inputs before the dependency reads 0.
            inputs_ready.store(0, StoreOrder::Release);
            println!("simulated_host: inputs ready; waiting (blocked) for the dispatch");
            let barrier_value = barrier_done.wait(
                SignalCondition::Eq,
                0,
                5_000_000_000,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
            let kernel_value = kernel_done.wait(
                SignalCondition::Eq,
                0,
                5_000_000_000,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
            Ok((barrier_value, kernel_value))
        })();
        stop.store(true, Ordering::Release);
        result
    })?;

    let wc = words(&c)?;
    let wrong = (0..N as usize)
        .filter(|&i| wc[i].load(Ordering::Relaxed) != 1001 * i as u32)
        .count();
    let stats = p.irq_stats();
    println!(
        "simulated_host: barrier_done = {}, kernel_done = {}, c[5] = {}, c[{}] = {}",
        outcome.0,
        outcome.1,
        wc[5].load(Ordering::Relaxed),
        N - 1,
        wc[N as usize - 1].load(Ordering::Relaxed)
    );
    println!(
        "simulated_host: device completed {} packets, raised {} end-of-pipe interrupts; CPU halted {} times",
        device.packets(),
        device.eop_interrupts(),
        p.host().halts.load(Ordering::Relaxed)
    );
    println!("simulated_host: IH {stats:?}");

    queue.destroy()?;
    drop((inputs_ready, barrier_done, kernel_done));
    // SAFETY: the queue is destroyed and the device stopped: nothing uses the buffers.
    unsafe {
        for chunk in [&a, &b, &c, &kernarg] {
            p.free_memory(chunk)?;
        }
    }

    if outcome != (0, 0) || wrong != 0 || stats.signaled != 2 || !device.errors().is_empty() {
        hsa_core::bail!(
            Status::Error,
            "dispatch failed: signals {outcome:?}, {wrong} wrong results, {} events signaled, \
             device errors {:?}",
            stats.signaled,
            device.errors()
        );
    }
    println!("simulated_host: ok");
    Ok(())
}
