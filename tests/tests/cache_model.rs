//! The cache model (issue 38 item 5) through hsa-rt's runtime on the emulated gfx90a: with it
//! on, a kernel reaches coarse-grained memory through its GPU's L2, and only the packets'
//! system-scope fences make the L2 coherent with the host, as on silicon (AMDGPUUsage, the
//! gfx90a memory model: system memory is cached non-coherently, MTYPE NC).
//!
//! - A kernel whose packet lacks the system-scope acquire reads the host's old data: the
//!   lines an earlier kernel filled are still in the L2 (the negative test the issue asks for).
//!   With the system-scope acquire it reads the new data; with the model off, both read it.
//! - What a kernel stores under an agent-scope release stays in the L2: the host reads the old
//!   data until a later packet's system-scope release (here a barrier-AND's) writes it back.
//!
//! Kernel: `vector_copy` of `testdata/codeobjects/kernels.cl` (gfx90a, code object v5).

use std::sync::Arc;

use hsa_core::abi::packet::FenceScope;
use hsa_core::loader::executable::{Executable, KernelInfo};
use hsa_core::memory::{Allocation, GlobalFlags};
use hsa_core::packet::{BarrierAnd, EncodedPacket, HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::pools::PoolHandle;
use hsa_core::runtime::Runtime;
use hsa_core::signal::Signal;
use hsa_core::signal::{SignalCondition, SignalPool, WaitState};
use hsa_core::NodeId;
use hsa_emu::device::{CacheStats, BUILTIN_GPU_ID};
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::LinuxPlatform;

/// Elements `vector_copy` copies per dispatch: 4 KiB, 32 L2 lines.
const N: usize = 1024;

fn code_object() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects/kernels-gfx90a-v5.hsaco");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a test works with: the emulated device, the runtime, `vector_copy`, a queue, a
/// signal pool and three buffers: `coarse_in` and `coarse_out` from the CPU agent's
/// coarse-grained pool, `fine` from its fine-grained pool.
struct Rig<'a, 'p> {
    kfd: &'a EmulatedKfd,
    rt: &'a Runtime<Arc<LinuxPlatform>>,
    queue: &'a AqlQueue<&'p LinuxPlatform>,
    signals: &'a SignalPool<&'p LinuxPlatform>,
    kernel: &'a KernelInfo,
    kernarg_pool: PoolHandle,
    coarse_in: &'a Allocation,
    coarse_out: &'a Allocation,
    fine: &'a Allocation,
}

/// Runs `test` on a fresh emulated gfx90a with the cache model `on` or off, then checks the
/// queue took no error and frees everything.
fn with_rig(on: bool, test: impl FnOnce(&Rig<'_, '_>)) {
    let kfd = EmulatedKfd::new(builtin_topology()).unwrap();
    kfd.set_cache_model(on);
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(kfd.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let gpu_node = NodeId(gpu.node());
    let target = *gpu.isa().unwrap();
    let mut exe = Executable::new(rt.platform());
    exe.load_code_object(gpu_node, &target, &code_object(), MemoryKind::System)
        .unwrap();
    exe.freeze().unwrap();
    let kernel = exe
        .symbol_by_name("vector_copy", Some(gpu_node))
        .unwrap()
        .kernel
        .clone()
        .unwrap();
    let pool = |f| rt.find_pool(cpu.handle(), f).unwrap().handle();
    let bytes = (N * 4) as u64;
    let coarse_in = rt
        .allocate(pool(GlobalFlags::COARSE_GRAINED), bytes)
        .unwrap();
    let coarse_out = rt
        .allocate(pool(GlobalFlags::COARSE_GRAINED), bytes)
        .unwrap();
    let fine = rt.allocate(pool(GlobalFlags::FINE_GRAINED), bytes).unwrap();
    let config = QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size());
    let queue = AqlQueue::create(rt.platform(), &config).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    test(&Rig {
        kfd: &kfd,
        rt: &rt,
        queue: &queue,
        signals: &signals,
        kernel: &kernel,
        kernarg_pool: pool(GlobalFlags::KERNARG),
        coarse_in: &coarse_in,
        coarse_out: &coarse_out,
        fine: &fine,
    });
    assert_eq!(queue.error(), None);
    queue.destroy().unwrap();
    for a in [&coarse_in, &coarse_out, &fine] {
        rt.free(a.va).unwrap();
    }
    exe.destroy().unwrap();
}

/// Writes `value + i` into element `i` of `a` from the host.
fn fill(a: &Allocation, value: i32) {
    let p = a.host_ptr.unwrap().as_ptr().cast::<i32>();
    for i in 0..N {
        // SAFETY: a live host-accessible allocation of N i32s; no dispatch runs now.
        unsafe { p.add(i).write_volatile(value + i as i32) };
    }
}

/// The host's view of `a`: `Some(v)` when element `i` is `v + i` for every `i`, else `None`.
fn read(a: &Allocation) -> Option<i32> {
    let p = a.host_ptr.unwrap().as_ptr().cast::<i32>();
    // SAFETY: as in `fill`; the packets before completed (acquire wait).
    let v: Vec<i32> = (0..N)
        .map(|i| unsafe { p.add(i).read_volatile() })
        .collect();
    let base = v[0];
    v.iter()
        .enumerate()
        .all(|(i, &x)| x == base + i as i32)
        .then_some(base)
}

impl Rig<'_, '_> {
    /// Submits `packet` with completion signal `done` and waits for it.
    fn submit(&self, packet: &EncodedPacket, done: &Signal<&LinuxPlatform>) {
        let mut reservation = self.queue.reserve(1).unwrap();
        let last = reservation.write_next(packet).unwrap();
        self.queue.ring_doorbell(last).unwrap();
        let v = self
            .queue
            .wait_completion(
                done,
                SignalCondition::Lt,
                1,
                30_000_000_000,
                WaitState::Blocked,
            )
            .unwrap();
        assert!(
            v < 1,
            "not complete after 30 s; queue error {:?}",
            self.queue.error()
        );
    }

    /// Runs `vector_copy(from, to)` with the fence scopes given and waits for it.
    fn copy(&self, from: &Allocation, to: &Allocation, acquire: FenceScope, release: FenceScope) {
        let kernarg = self.rt.allocate(self.kernarg_pool, 4096).unwrap();
        let ka = kernarg.host_ptr.unwrap().as_ptr();
        // SAFETY: a live host-accessible kernarg buffer of 4096 bytes, ours until freed below.
        unsafe {
            ka.write_bytes(0, 4096);
            ka.cast::<u64>().write_unaligned(from.va.0);
            ka.add(8).cast::<u64>().write_unaligned(to.va.0);
        }
        let done = self.signals.create_interrupt(1).unwrap();
        let dispatch = KernelDispatch {
            flags: HeaderFlags {
                barrier: true,
                acquire_fence_scope: acquire,
                release_fence_scope: release,
            },
            dimensions: 1,
            workgroup_size: [64, 1, 1],
            grid_size: [N as u32, 1, 1],
            private_segment_size_bytes: self.kernel.private_segment_size,
            group_segment_size_bytes: self.kernel.group_segment_size,
            kernel_object: self.kernel.kernel_object,
            kernarg_address: kernarg.va,
            completion_signal: done.handle(),
        };
        self.submit(&dispatch.emit().unwrap(), &done);
        done.destroy().unwrap();
        self.rt.free(kernarg.va).unwrap();
    }

    /// A barrier-AND packet with no dependency and a release fence of `release`, waited for.
    fn barrier(&self, release: FenceScope) {
        let done = self.signals.create_interrupt(1).unwrap();
        let flags = HeaderFlags {
            barrier: true,
            acquire_fence_scope: FenceScope::None,
            release_fence_scope: release,
        };
        let b = BarrierAnd::new(flags, &[], done.handle()).unwrap();
        self.submit(&b.emit().unwrap(), &done);
        done.destroy().unwrap();
    }
}

/// The kernel reads coarse-grained system memory the host changed since an earlier kernel
/// read it: with an agent-scope acquire it reads the old values out of the L2, with a
/// system-scope acquire the new ones. With the model off every acquire reads the new ones.
#[test]
fn without_the_system_scope_acquire_a_kernel_reads_stale_host_data() {
    use FenceScope::{Agent, System};
    for model in [true, false] {
        with_rig(model, |r| {
            fill(r.coarse_in, 1000);
            r.copy(r.coarse_in, r.fine, System, System);
            assert_eq!(read(r.fine), Some(1000), "model {model}: first copy");
            fill(r.coarse_in, 2000);
            r.copy(r.coarse_in, r.fine, Agent, System);
            let stale = if model { 1000 } else { 2000 };
            assert_eq!(
                read(r.fine),
                Some(stale),
                "model {model}: agent-scope acquire after the host's stores"
            );
            r.copy(r.coarse_in, r.fine, System, System);
            assert_eq!(
                read(r.fine),
                Some(2000),
                "model {model}: system-scope acquire"
            );
            let stats = r.kfd.cache_stats(BUILTIN_GPU_ID).unwrap();
            if model {
                // The input's 32 lines, filled by the first and the third copy (the kernel's
                // code too; the kernarg and the output are fine-grained).
                assert!(stats.fills >= 64, "{stats:?}");
                assert!(stats.invalidates >= 2, "{stats:?}");
            } else {
                assert_eq!(stats, CacheStats::default());
            }
        });
    }
}

/// What a kernel stores into coarse-grained memory under an agent-scope release stays in the
/// L2: the host reads the old values until a later packet's system-scope release (a
/// barrier-AND with no dependency) writes the lines back.
#[test]
fn without_the_system_scope_release_the_host_reads_stale_results() {
    use FenceScope::{Agent, System};
    for model in [true, false] {
        with_rig(model, |r| {
            fill(r.fine, 3000);
            fill(r.coarse_out, -5000);
            r.copy(r.fine, r.coarse_out, System, Agent);
            let before = if model { -5000 } else { 3000 };
            assert_eq!(
                read(r.coarse_out),
                Some(before),
                "model {model}: agent-scope release"
            );
            r.barrier(Agent);
            assert_eq!(
                read(r.coarse_out),
                Some(before),
                "model {model}: a barrier with an agent-scope release"
            );
            r.barrier(System);
            assert_eq!(
                read(r.coarse_out),
                Some(3000),
                "model {model}: a barrier with a system-scope release"
            );
        });
    }
}

/// Turning the model off writes every dirty line back: nothing a kernel stored is lost.
#[test]
fn turning_the_model_off_writes_the_l2_back() {
    with_rig(true, |r| {
        fill(r.fine, 7000);
        fill(r.coarse_out, 0);
        r.copy(r.fine, r.coarse_out, FenceScope::System, FenceScope::Agent);
        assert_eq!(read(r.coarse_out), Some(0));
        r.kfd.set_cache_model(false);
        assert_eq!(read(r.coarse_out), Some(7000));
    });
}
