//! Kernels that run long or forever on the emulated device, as a GPU runs them: a wave has no
//! instruction limit (rocrtst's `Aql_Barrier_Bit` tests leave kernels spinning on a signal
//! the host never sets; the emulated device used to stop their queue after 100 million
//! instructions, aborting the test), and destroying a queue ends a kernel that would never
//! finish — amdkfd's DESTROY_QUEUE takes the queue off the hardware wherever its waves are —
//! without a queue error.
//!
//! The kernels are a kernel descriptor and a few hand-assembled gfx9 instructions (encodings
//! from `llvm-mc-19 -arch=amdgcn -mcpu=gfx90a -show-encoding`) in a GPU-mapped allocation.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hsa_core::memory::GlobalFlags;
use hsa_core::packet::KernelDispatch;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{GpuVa, NodeId};
use hsa_emu::{builtin_topology, EmulatedKfd, ExecutionMode, SelectedDevice};

/// Byte offset of the code from the kernel descriptor (`kernel_code_entry_byte_offset`).
const ENTRY: usize = 0x100;

/// `s_mov_b32 s0, 51000000; loop: s_add_u32 s0, s0, -1; s_cbranch_scc1 loop; s_endpgm`:
/// 2 + 2 x 51,000,001 = 102,000,004 instructions (the add carries until s0 was 0).
const COUNT_DOWN: [u32; 6] = [
    0xbe80_00ff,
    51_000_000,
    0x8000_c100,
    0xbf85_fffe,
    0xbf81_0000,
    0,
];

/// `s_branch -1`: a branch to itself, forever.
const SPIN: [u32; 1] = [0xbf82_ffff];

/// Byte offset in the kernel's allocation of the word [`WAIT_FOR_FLAG`] polls; the word after
/// it is the kernel's "started" mark.
const FLAG: usize = 3072;

/// `s[0:1] = flag address; global_store_dword (flag + 4) <- 1; loop: s_load_dword s2, s[0:1]
/// glc; s_waitcnt lgkmcnt(0); s_cmp_eq_u32 s2, 0; s_cbranch_scc1 loop; s_endpgm`: marks that it
/// started, then waits until the host sets the flag. Words 1 and 3 are the flag's address.
const WAIT_FOR_FLAG: [u32; 15] = [
    0xbe80_00ff,
    0, // address, low half
    0xbe81_00ff,
    0, // address, high half
    0x7e00_0200,
    0x7e02_0201,
    0x7e04_0281,
    0xdc70_8004,
    0x007f_0200,
    0xc003_0080,
    0,
    0xbf8c_c07f,
    0xbf06_8002,
    0xbf85_fffa,
    0xbf81_0000,
];

/// Runs `code` as a one-work-item kernel on the emulated gfx90a, interpreted (`patch` gets
/// the code and the address of the kernel's allocation before it is written there); `then`
/// gets the queue, the completion signal, the emulated device, the allocation's host address
/// and the runtime once the packet is submitted.
fn with_kernel(
    code: &[u32],
    patch: impl FnOnce(&mut [u32], u64),
    then: impl FnOnce(
        AqlQueue<&hsa_linux::LinuxPlatform>,
        &hsa_core::signal::Signal<&hsa_linux::LinuxPlatform>,
        &EmulatedKfd,
        *mut u8,
        &Runtime<Arc<hsa_linux::LinuxPlatform>>,
    ),
) {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    emulated.set_execution_mode(ExecutionMode::InterpretOnly);
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .unwrap()
        .handle();
    let kernel = rt.allocate(pool, 4096).unwrap();
    let mut code = code.to_vec();
    patch(&mut code, kernel.va.0);
    let mut image = vec![0u8; ENTRY + code.len() * 4];
    // (The kernarg segment, unused, is the allocation's second half.)
    // kernel_descriptor_t: kernel_code_entry_byte_offset at byte 16; everything else zero
    // (wave64, no user SGPRs, no LDS or scratch).
    image[16..24].copy_from_slice(&(ENTRY as i64).to_le_bytes());
    for (i, w) in code.iter().enumerate() {
        image[ENTRY + 4 * i..ENTRY + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    let host = kernel.host_ptr.unwrap().as_ptr();
    // SAFETY: `kernel` is a live host-accessible allocation of 4096 bytes, longer than
    // `image`; no dispatch reads it yet.
    unsafe { host.copy_from_nonoverlapping(image.as_ptr(), image.len()) };
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let done = signals.create_interrupt(1).unwrap();
    let config = QueueConfig::new(
        NodeId(gpu.node()),
        gpu.queue_min_size(),
        gpu.queue_min_size(),
        gpu.queue_max_size(),
    );
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let packet = KernelDispatch {
        completion_signal: done.handle(),
        ..KernelDispatch::one_dimensional(GpuVa(kernel.va.0), GpuVa(kernel.va.0 + 2048), 1, 1)
    };
    let mut r = q.reserve(1).unwrap();
    let last = r.write_next(&packet.emit().unwrap()).unwrap();
    q.ring_doorbell(last).unwrap();
    then(q, &done, &emulated, host, &rt);
    rt.free(kernel.va).unwrap();
}

/// A wave past 100 million instructions (the hang guard the emulated device had) runs to
/// its end: the completion signal reaches 0 and the queue reports no error.
#[test]
fn a_wave_has_no_instruction_limit() {
    with_kernel(
        &COUNT_DOWN,
        |_, _| {},
        |q, done, emulated, _, _| {
            let v = q
                .wait_completion(
                    done,
                    SignalCondition::Lt,
                    1,
                    300_000_000_000,
                    WaitState::Blocked,
                )
                .unwrap();
            assert_eq!(v, 0, "queue error: {:?}", q.error());
            assert!(emulated.queue_error(q.hw_id().0).is_none());
            assert_eq!(
                emulated.execution_stats().instructions,
                102_000_004,
                "the instructions the count-down kernel executes"
            );
            q.close().unwrap();
            assert_eq!(q.error(), None, "queue error");
            q.destroy().unwrap();
        },
    );
}

/// Destroying a queue whose kernel spins forever returns, and the kernel's end is no queue
/// error: no callback, nothing stored into the queue's inactive signal, no error recorded by
/// the device; the packet never completed.
#[test]
fn destroying_a_queue_ends_a_kernel_that_never_finishes() {
    with_kernel(
        &SPIN,
        |_, _| {},
        |q, done, emulated, _, _| {
            // The wave is running (or about to): nothing completes it.
            let v = q
                .wait_completion(
                    done,
                    SignalCondition::Lt,
                    1,
                    200_000_000,
                    WaitState::Blocked,
                )
                .unwrap();
            assert_eq!(v, 1);
            let hw = q.hw_id().0;
            // The inactive signal outlives nothing of the queue: read it through the device
            // after the destroy instead (its error record).

            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::scope(|s| {
                s.spawn(move || {
                    // close destroys the hardware queue (an error it stored but no event
                    // reported is reported then); the queue's record is read before its memory
                    // goes.
                    let closed = q.close();
                    let error = q.error();
                    tx.send((closed, error, q.destroy())).unwrap()
                });
                let (closed, error, destroyed) = rx
                    .recv_timeout(Duration::from_secs(60))
                    .unwrap_or_else(|_| {
                        eprintln!(
                            "hsa_queue_destroy still blocked after 60 s on a spinning kernel"
                        );
                        std::process::exit(1)
                    });
                closed.unwrap();
                assert_eq!(error, None, "queue error");
                destroyed.unwrap();
            });
            assert!(emulated.queue_error(hw).is_none());
            assert_eq!(
                done.load(LoadOrder::Acquire),
                1,
                "the packet never completed"
            );
        },
    );
}

/// While a kernel waits for a flag the host sets, the host allocates and frees memory, then
/// sets the flag, and the kernel completes: the allocation table is not locked for the life
/// of a dispatch (it was, and rocrtst's `Aql_Barrier_Bit` tests hung loading their second
/// kernel while the first spun).
#[test]
fn the_host_allocates_while_a_kernel_waits_for_it() {
    let patch = |code: &mut [u32], va: u64| {
        let flag = va + FLAG as u64;
        code[1] = flag as u32;
        code[3] = (flag >> 32) as u32;
    };
    with_kernel(&WAIT_FOR_FLAG, patch, |q, done, emulated, host, rt| {
        // SAFETY: FLAG + 8 <= 4096, inside the kernel's live host-accessible allocation; the
        // kernel and this thread touch these words only atomically.
        let (flag, started) = unsafe {
            (
                &*host.add(FLAG).cast::<AtomicU32>(),
                &*host.add(FLAG + 4).cast::<AtomicU32>(),
            )
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while started.load(Ordering::Acquire) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the kernel never started"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let cpu = rt.first_cpu().unwrap();
        let pool = rt
            .find_pool(cpu.handle(), GlobalFlags::KERNARG)
            .unwrap()
            .handle();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(move || {
                let a = rt.allocate(pool, 64 << 20).unwrap();
                rt.free(a.va).unwrap();
                tx.send(()).unwrap();
            });
            rx.recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| {
                    eprintln!("allocating blocked 60 s behind a running kernel");
                    std::process::exit(1)
                });
        });
        flag.store(1, Ordering::Release);
        let v = q
            .wait_completion(
                done,
                SignalCondition::Lt,
                1,
                60_000_000_000,
                WaitState::Blocked,
            )
            .unwrap();
        assert_eq!(v, 0, "queue error: {:?}", q.error());
        assert!(emulated.queue_error(q.hw_id().0).is_none());
        q.close().unwrap();
        assert_eq!(q.error(), None, "queue error");
        q.destroy().unwrap();
    });
}
