//! The per-dispatch pattern of ROCR's own samples, 10,000 times, through the Rust API on the
//! emulated device (the C ABI runs the same loop in `capi/tests/c_abi.rs`): for every
//! dispatch allocate a kernarg buffer of a random size, create an interrupt completion
//! signal, dispatch `vector_copy` with the barrier bit set, wait, verify, then free the
//! kernarg buffer and destroy the signal; every 97 dispatches the queue is destroyed and
//! another created.
//!
//! Regression: destroying the last signal event made the emulated KFD drop the process's
//! event page, so the next signal's mailbox was outside any event page and its dispatch
//! stopped the queue with `INVALID_SIGNAL` (amdkfd keeps the page for the process's life).

use std::sync::Arc;

use hsa_core::loader::code_object::AlignedBytes;
use hsa_core::loader::executable::Executable;
use hsa_core::loader::CodeObject;
use hsa_core::memory::GlobalFlags;
use hsa_core::packet::{HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{SignalCondition, SignalPool, WaitState};
use hsa_core::NodeId;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::topology::Topology;
use hsa_linux::LinuxPlatform;

const ELEMENTS: u32 = 256;
const WORKGROUP: u16 = 64;
const QUEUE_EVERY: u32 = 97;

/// xorshift64*: reproducible kernarg sizes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(2_685_821_657_736_338_717) >> 32) as u32
    }
}

fn code_object(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_loop(emulated: std::sync::Arc<EmulatedKfd>, code_object_file: &str, iterations: u32) {
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let target = *gpu.isa().unwrap();
    let kernarg_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .unwrap()
        .handle();
    let fine_pool = rt
        .find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED)
        .unwrap()
        .handle();
    let gpu_node = NodeId(gpu.node());

    let bytes = code_object(code_object_file);
    let aligned = AlignedBytes::new(&bytes);
    let kernarg_size = CodeObject::parse(aligned.as_bytes())
        .unwrap()
        .kernel("vector_copy")
        .unwrap()
        .metadata
        .kernarg_segment_size;
    let mut exe = Executable::new(rt.platform());
    exe.load_code_object(gpu_node, &target, &bytes, MemoryKind::System)
        .unwrap();
    exe.freeze().unwrap();
    let kernel = exe
        .symbol_by_name("vector_copy", Some(gpu_node))
        .unwrap()
        .kernel
        .clone()
        .unwrap();

    let input = rt.allocate(fine_pool, u64::from(ELEMENTS) * 4).unwrap();
    let output = rt.allocate(fine_pool, u64::from(ELEMENTS) * 4).unwrap();
    let in_ptr = input.host_ptr.unwrap().as_ptr().cast::<i32>();
    let out_ptr = output.host_ptr.unwrap().as_ptr().cast::<i32>();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let config = QueueConfig::new(gpu_node, 64, gpu.queue_min_size(), gpu.queue_max_size());

    let mut queue: Option<AqlQueue<&LinuxPlatform>> = None;
    for iteration in 0..iterations {
        if iteration % QUEUE_EVERY == 0 {
            if let Some(q) = queue.take() {
                assert_eq!(q.error(), None, "iteration {iteration}: queue error");
                q.destroy().unwrap();
            }
            queue = Some(AqlQueue::create(rt.platform(), &config).unwrap());
        }
        let q = queue.as_ref().unwrap();
        for i in 0..ELEMENTS {
            let v = (i.wrapping_mul(2_654_435_761) ^ iteration) as i32;
            // SAFETY: `input` and `output` are live host-accessible allocations of ELEMENTS
            // i32s; the GPU touches them only between the doorbell and the wait below.
            unsafe {
                in_ptr.add(i as usize).write_volatile(v);
                out_ptr.add(i as usize).write_volatile(-1);
            }
        }
        // At least the kernel's kernarg segment, up to 4 KiB more.
        let ka_bytes = u64::from(kernarg_size) + u64::from(rng.next() % 4097);
        let kernarg = rt.allocate(kernarg_pool, ka_bytes).unwrap();
        let ka = kernarg.host_ptr.unwrap().as_ptr();
        // SAFETY: `kernarg` is a live host-accessible allocation of at least `ka_bytes` (>= 16)
        // bytes, owned by this loop until it is freed below.
        unsafe {
            ka.write_bytes(0, ka_bytes as usize);
            ka.cast::<u64>().write_unaligned(input.va.0);
            ka.add(8).cast::<u64>().write_unaligned(output.va.0);
        }
        let done = signals.create_interrupt(1).unwrap();
        let dispatch = KernelDispatch {
            flags: HeaderFlags {
                barrier: true,
                ..HeaderFlags::SYSTEM
            },
            dimensions: 1,
            workgroup_size: [WORKGROUP, 1, 1],
            grid_size: [ELEMENTS, 1, 1],
            private_segment_size_bytes: kernel.private_segment_size,
            group_segment_size_bytes: kernel.group_segment_size,
            kernel_object: kernel.kernel_object,
            kernarg_address: kernarg.va,
            completion_signal: done.handle(),
        };
        let mut reservation = q.reserve(1).unwrap();
        let last = reservation.write_next(&dispatch.emit().unwrap()).unwrap();
        q.ring_doorbell(last).unwrap();
        let v = q
            .wait_completion(
                &done,
                SignalCondition::Lt,
                1,
                30_000_000_000,
                WaitState::Blocked,
            )
            .unwrap_or_else(|e| panic!("iteration {iteration}: {e}"));
        assert!(
            v < 1,
            "iteration {iteration}: not complete after 30 s (signal {v}); queue error: {:?}",
            q.error()
        );
        for i in 0..ELEMENTS as usize {
            // SAFETY: as above; the dispatch completed (acquire wait).
            let (got, want) = unsafe {
                (
                    out_ptr.add(i).read_volatile(),
                    in_ptr.add(i).read_volatile(),
                )
            };
            assert_eq!(got, want, "iteration {iteration}: element {i}");
        }
        rt.free(kernarg.va).unwrap();
        done.destroy().unwrap();
    }
    let queue = queue.unwrap();
    assert_eq!(queue.error(), None, "queue error");
    queue.destroy().unwrap();
    assert_eq!(signals.live_signals(), 0);
    rt.free(input.va).unwrap();
    rt.free(output.va).unwrap();
    exe.destroy().unwrap();
}

#[test]
fn ten_thousand_dispatches_each_with_its_own_signal_and_kernarg_gfx90a() {
    run_loop(
        EmulatedKfd::new(builtin_topology()).unwrap(),
        "kernels-gfx90a-v5.hsaco",
        10_000,
    );
}

#[test]
fn ten_thousand_dispatches_each_with_its_own_signal_and_kernarg_gfx942() {
    let Some(dir) = hsa_test_support::shared::topology_dump("mi308x-cpx-topology") else {
        return;
    };
    let topology = Topology::read(&dir).unwrap();
    run_loop(
        EmulatedKfd::new(topology).unwrap(),
        "kernels-gfx942-v5.hsaco",
        10_000,
    );
}
