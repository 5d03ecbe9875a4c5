//! What the unikernel runs on hsa-rt once the platform is up: the main job (the vector_copy
//! code object embedded in the image, loaded with hsa-core's loader; a queue and an interrupt
//! signal; one dispatch; a blocked wait that sleeps until the completion interrupt; every
//! element verified), a barrier-AND chain, the figures, and the fault phases.
//!
//! Every line it prints that a test reads starts with `hsa-unikernel:`; figures are
//! `hsa-unikernel: figure NAME VALUE UNIT`.
#![allow(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hsa_baremetal::{BaremetalPlatform, IrqStats};
use hsa_core::abi::SignalHandle;
use hsa_core::isa::TargetId;
use hsa_core::loader::executable::Executable;
use hsa_core::packet::{BarrierAnd, HeaderFlags, KernelDispatch};
use hsa_core::platform::{
    MemoryChunk, MemoryFault, MemoryFaultHandler, MemoryFaultReason, MemoryFaultReports,
    MemoryFlags, MemoryKind, MemoryRequest, Platform, QueueErrorCallback, TopologySource,
};
use hsa_core::queue::{AqlQueue, QueueConfig, QueueState};
use hsa_core::signal::raw::RawSignal;
use hsa_core::signal::{Signal, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::{Error, EventId, NodeId, QueueId, Status};

use crate::arch::{disable_interrupts, enable_interrupts, enable_interrupts_and_halt, rdtsc};
use crate::host::VmHost;
use crate::protocol::*;

type Vm = BaremetalPlatform<VmHost>;

/// The code object: the repository's gfx90a build of `kernels.cl` (v5), 8-byte aligned as the
/// loader reads it.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);
static CODE_OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!(
    "../../testdata/codeobjects/kernels-gfx90a-v5.hsaco"
));

/// The GPU's node (the device model).
const GPU: NodeId = NodeId(1);
/// The CPU's node.
const CPU: NodeId = NodeId(0);
/// Work-group size of the main job's dispatches.
const WORKGROUP: u16 = 256;
/// Dispatches in the barrier-AND chain.
const CHAIN: usize = 4;
/// Queue size, packets.
const QUEUE_PACKETS: u32 = 1024;
/// Timeout of one wait, ns.
const WAIT_NS: u64 = 60_000_000_000;

/// TSC at the last IH interrupt's entry (set by the handler).
pub static LAST_IH_TSC: AtomicU64 = AtomicU64::new(0);
/// IH interrupts taken.
pub static IH_INTERRUPTS: AtomicU64 = AtomicU64::new(0);
/// TSC at the last echo interrupt's entry.
pub static LAST_ECHO_TSC: AtomicU64 = AtomicU64::new(0);
/// Echo interrupts taken.
pub static ECHO_INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Calls of the job's queue error callback that were given [`QUEUE_ERROR_DATA`] (the queue
/// itself keeps the error: `AqlQueue::error`).
static QUEUE_ERROR_CALLS: AtomicU64 = AtomicU64::new(0);
/// The `data` the job's queues give their error callback.
const QUEUE_ERROR_DATA: usize = 0x4853_4121;

/// The job's queue error callback (`hsa_queue_create`'s `callback`), after the queue recorded
/// the error. hsa-baremetal calls it from `on_interrupt`, in the IH interrupt handler: it
/// counts and returns, without allocating or blocking.
fn on_queue_error(_: &Error, _: QueueId, data: usize) {
    if data == QUEUE_ERROR_DATA {
        QUEUE_ERROR_CALLS.fetch_add(1, Ordering::AcqRel);
    }
}

/// GPU memory faults the job's memory-fault handler was given with [`FAULT_DATA`].
static FAULT_CALLS: AtomicU64 = AtomicU64::new(0);
/// The last fault's address, reason bits and node.
static FAULT_SEEN: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
/// The `data` the job's memory-fault handler is given.
const FAULT_DATA: usize = 0x5654_4d46;

/// The job's memory-fault handler (`hsa_amd_register_system_event_handler`'s memory-fault
/// event). hsa-baremetal calls it from the IH interrupt handler, during the drain: it records
/// and returns.
fn on_memory_fault(fault: &MemoryFault, data: usize) {
    if data == FAULT_DATA {
        FAULT_SEEN[0].store(fault.address.get(), Ordering::Relaxed);
        FAULT_SEEN[1].store(u64::from(fault.reason.bits()), Ordering::Relaxed);
        FAULT_SEEN[2].store(u64::from(fault.node.get()), Ordering::Relaxed);
        FAULT_CALLS.fetch_add(1, Ordering::AcqRel);
    }
}

/// The job's queue configuration: 1024 packets on the GPU, with the error callback.
fn queue_config() -> QueueConfig {
    let mut c = QueueConfig::new(GPU, QUEUE_PACKETS, 64, 1 << 16);
    c.on_error = Some(QueueErrorCallback {
        func: on_queue_error,
        data: QUEUE_ERROR_DATA,
    });
    c
}

/// What the test asked for (the control page).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Elements of the main job.
    pub elements: u32,
    /// Run the figures.
    pub figures: bool,
    /// Run the fault phases.
    pub faults: bool,
    /// Rounds of each figure.
    pub rounds: u32,
}

/// A host-visible buffer of `i32`s in system memory.
struct Buffer {
    chunk: MemoryChunk,
    len: usize,
}

impl Buffer {
    fn new(p: &'static Vm, len: usize) -> Result<Buffer, Error> {
        let chunk = p.allocate_memory(&MemoryRequest {
            node: CPU,
            kind: MemoryKind::System,
            size_bytes: (len as u64 * 4).next_multiple_of(4096),
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS,
        })?;
        if chunk.host_ptr.is_none() {
            hsa_core::bail!(
                Status::InvalidAllocation,
                "buffer of {len} ints has no host pointer"
            );
        }
        Ok(Buffer { chunk, len })
    }

    fn ptr(&self) -> *mut i32 {
        self.chunk
            .host_ptr
            .map_or(core::ptr::NonNull::dangling(), |p| p.cast::<i32>())
            .as_ptr()
    }

    /// The elements. Read only after the completion signal of the dispatch that wrote them
    /// was observed (Acquire).
    fn as_slice(&self) -> &[i32] {
        // SAFETY: the chunk holds at least `len * 4` bytes at `ptr` (checked at creation),
        // page-aligned, never freed; the device writes it only while a dispatch runs, and the
        // job reads it only after that dispatch's completion was observed.
        unsafe { core::slice::from_raw_parts(self.ptr(), self.len) }
    }

    /// Sets element `i` to `f(i)`; only while no dispatch uses the buffer.
    fn fill(&self, f: impl Fn(usize) -> i32) {
        for i in 0..self.len {
            // SAFETY: as in `as_slice`; `i < len`; no dispatch reads or writes it now.
            unsafe { self.ptr().add(i).write_volatile(f(i)) };
        }
    }

    fn va(&self) -> u64 {
        self.chunk.gpu_va.get()
    }
}

/// The kernel the job dispatches: its kernel object and segment sizes from the loader.
struct Kernel {
    object: hsa_core::GpuVa,
    group_segment: u32,
    private_segment: u32,
}

fn system_chunk(p: &'static Vm, bytes: u64) -> Result<MemoryChunk, Error> {
    p.allocate_memory(&MemoryRequest {
        node: CPU,
        kind: MemoryKind::System,
        size_bytes: bytes,
        align_bytes: 4096,
        flags: MemoryFlags::HOST_ACCESS,
    })
}

/// A kernarg segment for vector_copy(in, out): 16 bytes (kernels.cl has no hidden
/// arguments).
fn kernarg(p: &'static Vm, input: u64, output: u64) -> Result<MemoryChunk, Error> {
    let c = system_chunk(p, 4096)?;
    let Some(ptr) = c.host_ptr else {
        hsa_core::bail!(
            Status::InvalidAllocation,
            "kernarg chunk has no host pointer"
        );
    };
    // SAFETY: a fresh 4096-byte chunk, 8-aligned; no dispatch uses it yet.
    unsafe {
        ptr.cast::<u64>().as_ptr().write_volatile(input);
        ptr.cast::<u64>().as_ptr().add(1).write_volatile(output);
    }
    Ok(c)
}

fn dispatch_packet(
    k: &Kernel,
    kernarg: &MemoryChunk,
    grid: u32,
    wg: u16,
    done: &Signal<&'_ Vm>,
) -> KernelDispatch {
    KernelDispatch {
        flags: HeaderFlags {
            barrier: true,
            ..HeaderFlags::SYSTEM
        },
        private_segment_size_bytes: k.private_segment,
        group_segment_size_bytes: k.group_segment,
        completion_signal: done.handle(),
        ..KernelDispatch::one_dimensional(
            k.object,
            kernarg.gpu_va,
            wg.min(grid.min(u32::from(u16::MAX)) as u16),
            grid,
        )
    }
}

fn submit(queue: &AqlQueue<&'_ Vm>, packet: &KernelDispatch) -> Result<(), Error> {
    let mut r = queue.reserve(1)?;
    let last = r.write_next(&packet.emit()?)?;
    queue.ring_doorbell(last)
}

fn wait_done(queue: &AqlQueue<&'_ Vm>, done: &Signal<&'_ Vm>, what: &str) -> Result<(), Error> {
    let v = queue
        .wait_completion(done, SignalCondition::Eq, 0, WAIT_NS, WaitState::Blocked)
        .map_err(|e| e.context(what))?;
    if v != 0 {
        hsa_core::bail!(Status::Error, "{what}: timed out (signal value {v})");
    }
    Ok(())
}

fn us(ticks: u64, hz: u64) -> u64 {
    (u128::from(ticks) * 1_000_000 / u128::from(hz.max(1))) as u64
}

fn ns(ticks: u64, hz: u64) -> u64 {
    (u128::from(ticks) * 1_000_000_000 / u128::from(hz.max(1))) as u64
}

/// Runs the job; prints what it did.
///
/// # Errors
/// The first step that failed, with its status and message.
pub fn run(p: &'static Vm, cfg: Config) -> Result<(), Error> {
    let hz = p.timestamp_frequency_hz();
    let gpu = p.node(1)?;
    let Some(target) = TargetId::of_node(&gpu, false) else {
        hsa_core::bail!(
            Status::InvalidIsa,
            "GPU node has no known ISA ({})",
            gpu.gfx_target_version
        );
    };
    let mut exe = Executable::new(p);
    exe.load_code_object(GPU, &target, &CODE_OBJECT.0, MemoryKind::System)
        .map_err(|e| e.context("kernels-gfx90a-v5.hsaco"))?;
    exe.freeze()?;
    let sym = exe.symbol_by_name("vector_copy", Some(GPU))?;
    let Some(info) = sym.kernel.as_ref() else {
        hsa_core::bail!(Status::InvalidSymbolName, "vector_copy is not a kernel");
    };
    let kernel = Kernel {
        object: info.kernel_object,
        group_segment: info.group_segment_size,
        private_segment: info.private_segment_size,
    };
    crate::println!(
        "hsa-unikernel: loaded vector_copy for {} at kernel object {:#x}",
        target,
        kernel.object.get()
    );

    let signals = SignalPool::new(p, CPU);
    let queue = AqlQueue::create(p, &queue_config())?;
    crate::println!(
        "hsa-unikernel: queue {} on doorbell {:#x} ({} packets)",
        queue.id(),
        queue.hw_queue().doorbell_address,
        queue.size_packets()
    );

    // ---- the main job ----
    let n = cfg.elements.max(1) as usize;
    let a = Buffer::new(p, n)?;
    let c = Buffer::new(p, n)?;
    let expect = |i: usize| (i as i32).wrapping_mul(7).wrapping_sub(3);
    a.fill(expect);
    c.fill(|_| 0);
    let ka = kernarg(p, a.va(), c.va())?;
    let done = signals.create_interrupt(1)?;
    // The dispatch waits behind a barrier-AND on `gate`, which the wait opens only once it
    // halts (`host::gate_on_next_halt`): the dispatch cannot complete before the wait
    // blocked, however the host schedules this vCPU and the device's thread (two shared
    // cores, other VMs and builds beside them). The wait may still be ended by its slice
    // timer rather than by the completion interrupt when the host delivers the MSI late (the
    // wait re-reads the queue's inactive signal every slice); the interrupt is then taken
    // after the wait, and the job waits for it before it counts.
    let gate = signals.create(1)?;
    let halts0 = p.host().halts.load(Ordering::Relaxed);
    let ih0 = IH_INTERRUPTS.load(Ordering::Relaxed);
    let t0 = rdtsc();
    {
        let mut r = queue.reserve(2)?;
        let barrier = BarrierAnd::new(
            HeaderFlags::SYSTEM,
            &[gate.handle()],
            hsa_core::abi::SignalHandle::NULL,
        )?;
        r.write_next(&barrier.emit()?)?;
        let last =
            r.write_next(&dispatch_packet(&kernel, &ka, n as u32, WORKGROUP, &done).emit()?)?;
        // SAFETY: `gate` lives until this function returns, after the wait below (which
        // returns only once the dispatch behind the gate completed, so the gate was opened).
        unsafe { crate::host::gate_on_next_halt(gate.handle().0 + 8) };
        queue.ring_doorbell(last)?;
    }
    wait_done(&queue, &done, "vector_copy")?;
    let t1 = rdtsc();
    halt_until_moves(&IH_INTERRUPTS, ih0, hz)?;
    let got = c.as_slice();
    if let Some(i) = (0..n).find(|&i| got[i] != expect(i)) {
        hsa_core::bail!(
            Status::Error,
            "vector_copy: element {i} is {}, expected {}",
            got[i],
            expect(i)
        );
    }
    let halts = p.host().halts.load(Ordering::Relaxed) - halts0;
    let interrupts = IH_INTERRUPTS.load(Ordering::Relaxed) - ih0;
    if gate.load(hsa_core::signal::LoadOrder::Acquire) != 0 || halts == 0 {
        hsa_core::bail!(
            Status::Error,
            "vector_copy completed without its wait halting ({halts} halts, gate {})",
            gate.load(hsa_core::signal::LoadOrder::Acquire)
        );
    }
    crate::println!(
        "hsa-unikernel: vector_copy verified {n} elements in {} us (blocked wait: {halts} halts, {interrupts} IH interrupts)",
        us(t1 - t0, hz),
    );

    // ---- a barrier-AND chain: a -> c -> a -> c -> a, each waiting on the previous ----
    c.fill(|_| 0);
    let mut links = Vec::new();
    let mut kargs = Vec::new();
    for k in 0..CHAIN {
        links.push(signals.create_interrupt(1)?);
        let (src, dst) = if k % 2 == 0 { (&a, &c) } else { (&c, &a) };
        kargs.push(kernarg(p, src.va(), dst.va())?);
    }
    for k in 0..CHAIN {
        let mut r = queue.reserve(if k == 0 { 1 } else { 2 })?;
        if k > 0 {
            let barrier = BarrierAnd::new(
                HeaderFlags::SYSTEM,
                &[links[k - 1].handle()],
                hsa_core::abi::SignalHandle::NULL,
            )?;
            r.write_next(&barrier.emit()?)?;
        }
        let last = r.write_next(
            &dispatch_packet(&kernel, &kargs[k], n as u32, WORKGROUP, &links[k]).emit()?,
        )?;
        queue.ring_doorbell(last)?;
    }
    wait_done(&queue, &links[CHAIN - 1], "barrier-AND chain")?;
    for (k, link) in links[..CHAIN - 1].iter().enumerate() {
        if link.load(hsa_core::signal::LoadOrder::Acquire) != 0 {
            hsa_core::bail!(
                Status::Error,
                "chain link {k} did not complete before the last"
            );
        }
    }
    for (name, b) in [("a", &a), ("c", &c)] {
        let s = b.as_slice();
        if let Some(i) = (0..n).find(|&i| s[i] != expect(i)) {
            hsa_core::bail!(
                Status::Error,
                "chain: {name}[{i}] is {}, expected {}",
                s[i],
                expect(i)
            );
        }
    }
    crate::println!("hsa-unikernel: barrier-AND chain of {CHAIN} dispatches verified {n} elements");

    // The "empty" dispatch of the figures and faults: one work-item of vector_copy.
    let one_in = Buffer::new(p, 64)?;
    let one_out = Buffer::new(p, 64)?;
    one_in.fill(|i| 0x5eed + i as i32);
    let one_ka = kernarg(p, one_in.va(), one_out.va())?;
    let empty = |done: &Signal<&'_ Vm>| dispatch_packet(&kernel, &one_ka, 1, 1, done);

    if cfg.figures {
        figures(p, &queue, &signals, &empty, cfg.rounds.max(1), hz)?;
    }
    if cfg.faults {
        faults(p, queue, &signals, &empty, hz)?;
        page_fault(p, &kernel, &signals, hz)?;
        bad_mqds(p)?;
    } else {
        queue.destroy()?;
    }
    crate::println!("hsa-unikernel: IH {:?}", p.irq_stats());
    Ok(())
}

/// Waits (halting) until `counter` (an interrupt count) moves past `seen`.
fn halt_until_moves(counter: &AtomicU64, seen: u64, hz: u64) -> Result<(), Error> {
    let deadline = rdtsc() + 5 * hz;
    loop {
        disable_interrupts();
        if counter.load(Ordering::Acquire) != seen {
            enable_interrupts();
            return Ok(());
        }
        if rdtsc() > deadline {
            enable_interrupts();
            hsa_core::bail!(Status::Error, "no interrupt within 5 s");
        }
        crate::apic::arm_timer(deadline);
        enable_interrupts_and_halt();
        crate::apic::disarm_timer();
    }
}

/// The echo signal of the raw rounds while one is armed: its handle (0: none) and event.
static ECHO_SIGNAL: AtomicU64 = AtomicU64::new(0);
static ECHO_EVENT: AtomicU64 = AtomicU64::new(0);

/// Called by the echo interrupt's handler: completes the armed echo signal (value 0, its
/// event marked pending), as the IH path completes a dispatch's.
pub fn on_echo(p: &Vm) {
    let handle = ECHO_SIGNAL.load(Ordering::Acquire);
    if handle == 0 {
        return;
    }
    // SAFETY: `figures` arms the handle of a live interrupt signal and clears it before the
    // signal is dropped; the value is only accessed atomically.
    let Ok(raw) = (unsafe { RawSignal::from_handle(SignalHandle(handle)) }) else {
        return;
    };
    raw.value().store(0, Ordering::Release);
    let _ = p.signal_event(EventId(ECHO_EVENT.load(Ordering::Acquire) as u32));
}

/// The `q`-quantile (0..=1) of sorted `v`.
fn quantile(v: &[u64], q: f64) -> u64 {
    let i = ((v.len().saturating_sub(1)) as f64 * q + 0.5) as usize;
    v.get(i).copied().unwrap_or(0)
}

fn figures(
    p: &'static Vm,
    queue: &AqlQueue<&'_ Vm>,
    signals: &SignalPool<&'_ Vm>,
    empty: &dyn Fn(&Signal<&'_ Vm>) -> KernelDispatch,
    rounds: u32,
    hz: u64,
) -> Result<(), Error> {
    let dev = *p.host().device();
    // Raw and dispatch rounds alternate (raw first in even rounds, dispatch first in odd
    // ones), so both see the same host; each waits the same way, in the queue's blocked
    // wait on an interrupt signal (hsa-core's spin, hsa-baremetal's spin, `sti; hlt`), and
    // each is timed from its doorbell store to the entry of the interrupt that ends it.
    let echo = signals.create_interrupt(1)?;
    let Some(echo_event) = echo.event() else {
        hsa_core::bail!(Status::Error, "the echo signal has no event");
    };
    ECHO_EVENT.store(u64::from(echo_event.get()), Ordering::Release);
    ECHO_SIGNAL.store(echo.handle().0, Ordering::Release);
    let done = signals.create_interrupt(1)?;
    let raw_round = || -> Result<u64, Error> {
        echo.store(1, StoreOrder::Relaxed);
        let seen = ECHO_INTERRUPTS.load(Ordering::Acquire);
        let t0 = rdtsc();
        dev.ring(DEVICE_PEER, DEVICE_VECTOR_ECHO);
        wait_done(queue, &echo, "echo")?;
        halt_until_moves(&ECHO_INTERRUPTS, seen, hz)?;
        Ok(ns(
            LAST_ECHO_TSC.load(Ordering::Acquire).saturating_sub(t0),
            hz,
        ))
    };
    let dispatch_round = || -> Result<u64, Error> {
        done.store(1, StoreOrder::Relaxed);
        let packet = empty(&done);
        let mut r = queue.reserve(1)?;
        let last = r.write_next(&packet.emit()?)?;
        let seen = IH_INTERRUPTS.load(Ordering::Acquire);
        let t0 = rdtsc();
        queue.ring_doorbell(last)?;
        wait_done(queue, &done, "empty dispatch")?;
        // The wait may see the signal before the interrupt arrives: the figure ends at the
        // completion interrupt's entry.
        halt_until_moves(&IH_INTERRUPTS, seen, hz)?;
        Ok(ns(
            LAST_IH_TSC.load(Ordering::Acquire).saturating_sub(t0),
            hz,
        ))
    };
    let halts0 = p.host().halts.load(Ordering::Relaxed);
    let (mut raw, mut lat, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    // Per round, dispatch minus raw, ns, offset by 2^32 so that it sorts as an unsigned.
    let mut extra = Vec::new();
    for round in 0..rounds {
        let (r, d) = if round % 2 == 0 {
            let r = raw_round()?;
            (r, dispatch_round()?)
        } else {
            let d = dispatch_round()?;
            (raw_round()?, d)
        };
        raw.push(r);
        lat.push(d);
        // Per mille.
        ratio.push(d * 1000 / r.max(1));
        extra.push((d + (1 << 32)).saturating_sub(r));
    }
    ECHO_SIGNAL.store(0, Ordering::Release);
    let halts = p.host().halts.load(Ordering::Relaxed) - halts0;
    // Rate: `rounds` dispatches back to back (a doorbell each), one wait for all.
    let all = signals.create_interrupt(i64::from(rounds))?;
    let t0 = rdtsc();
    for _ in 0..rounds {
        submit(queue, &empty(&all))?;
    }
    wait_done(queue, &all, "dispatch rate")?;
    let rate_ticks = rdtsc() - t0;
    for v in [&mut raw, &mut lat, &mut ratio, &mut extra] {
        v.sort_unstable();
    }
    let per_s = u128::from(rounds) * u128::from(hz) / u128::from(rate_ticks.max(1));
    for (name, v) in [("raw_round_trip", &raw), ("dispatch_latency", &lat)] {
        crate::println!(
            "hsa-unikernel: figure {name}_median {} ns",
            quantile(v, 0.5)
        );
        crate::println!("hsa-unikernel: figure {name}_min {} ns", quantile(v, 0.0));
        crate::println!("hsa-unikernel: figure {name}_p10 {} ns", quantile(v, 0.1));
        crate::println!("hsa-unikernel: figure {name}_p90 {} ns", quantile(v, 0.9));
    }
    crate::println!(
        "hsa-unikernel: figure ratio_median_permille {} -",
        quantile(&ratio, 0.5)
    );
    // Signed: the median difference may be negative.
    crate::println!(
        "hsa-unikernel: figure extra_median_ns {} ns",
        quantile(&extra, 0.5) as i64 - (1 << 32)
    );
    crate::println!("hsa-unikernel: figure dispatches_per_second {per_s} 1/s");
    crate::println!("hsa-unikernel: figure rounds {rounds} -");
    crate::println!("hsa-unikernel: figure halts {halts} -");
    Ok(())
}

/// Waits (halting, 1 ms at a time) until the device's IH entries are all drained: an
/// interrupt of an earlier completion that the waiter saw before its MSI-X arrived must not
/// land in the next phase's counts.
fn settle(p: &'static Vm, hz: u64) -> Result<(), Error> {
    let deadline = rdtsc() + hz;
    loop {
        disable_interrupts();
        if p.host().ih_idle() {
            enable_interrupts();
            return Ok(());
        }
        if rdtsc() > deadline {
            enable_interrupts();
            hsa_core::bail!(
                Status::Error,
                "IH entries still pending after 1 s: {:?}",
                p.irq_stats()
            );
        }
        crate::apic::arm_timer(rdtsc() + hz / 1000);
        enable_interrupts_and_halt();
        crate::apic::disarm_timer();
    }
}

fn arm(p: &'static Vm, fault: u64, count: u64) -> Result<(), Error> {
    settle(p, p.timestamp_frequency_hz())?;
    p.host()
        .device()
        .command(CMD_ARM_FAULT, &[fault, count], p.timestamp_frequency_hz())
        .map_err(|e| hsa_core::error!(Status::Error, "{e}"))
}

fn delta(a: IrqStats, b: IrqStats) -> IrqStats {
    IrqStats {
        interrupts: b.interrupts - a.interrupts,
        entries: b.entries - a.entries,
        signaled: b.signaled - a.signaled,
        unknown: b.unknown - a.unknown,
        queue_errors: b.queue_errors - a.queue_errors,
        memory_faults: b.memory_faults - a.memory_faults,
        malformed: b.malformed - a.malformed,
        bad_event: b.bad_event - a.bad_event,
        overflows: b.overflows - a.overflows,
        foreign: b.foreign - a.foreign,
    }
}

fn faults(
    p: &'static Vm,
    queue: AqlQueue<&'static Vm>,
    signals: &SignalPool<&'static Vm>,
    empty: &dyn Fn(&Signal<&'_ Vm>) -> KernelDispatch,
    hz: u64,
) -> Result<(), Error> {
    // 1. A dropped interrupt: the completion is still seen (the blocked wait wakes at its
    //    slice deadline and re-reads the signal); the entry stays in the ring until the next
    //    interrupt drains it.
    arm(p, FAULT_DROP_INTERRUPT, 1)?;
    let s0 = p.irq_stats();
    let done = signals.create_interrupt(1)?;
    let t0 = rdtsc();
    submit(&queue, &empty(&done))?;
    wait_done(&queue, &done, "dispatch with a dropped interrupt")?;
    let waited = us(rdtsc() - t0, hz);
    let d1 = delta(s0, p.irq_stats());
    let next = signals.create_interrupt(1)?;
    submit(&queue, &empty(&next))?;
    wait_done(&queue, &next, "dispatch after the dropped interrupt")?;
    settle(p, hz)?;
    let d2 = delta(s0, p.irq_stats());
    if d1.signaled != 0 || d2.signaled != 2 || d2.entries != 2 {
        hsa_core::bail!(
            Status::Error,
            "dropped interrupt: expected no entry drained before the next interrupt and both after; \
             got {d1:?} then {d2:?}"
        );
    }
    crate::println!(
        "hsa-unikernel: fault drop-interrupt ok: completion seen after {waited} us without its interrupt; \
         its entry drained with the next ({} entries in {} interrupts)",
        d2.entries,
        d2.interrupts
    );

    // 2. Merged interrupts: four completions, one MSI-X.
    const MERGED: u64 = 4;
    arm(p, FAULT_MERGE_INTERRUPTS, MERGED)?;
    let s0 = p.irq_stats();
    let dones: Vec<_> = (0..MERGED)
        .map(|_| signals.create_interrupt(1))
        .collect::<Result<_, _>>()?;
    for d in &dones {
        submit(&queue, &empty(d))?;
    }
    for d in &dones {
        wait_done(&queue, d, "merged-interrupt dispatch")?;
    }
    settle(p, hz)?;
    let d = delta(s0, p.irq_stats());
    if d.signaled != MERGED || d.interrupts != 1 {
        hsa_core::bail!(
            Status::Error,
            "merged interrupts: expected {MERGED} events in 1 interrupt, got {d:?}"
        );
    }
    crate::println!(
        "hsa-unikernel: fault merge-interrupts ok: {} events signaled from 1 interrupt",
        d.signaled
    );

    // 3. A malformed IH entry: counted, skipped, the completion after it still signaled.
    arm(p, FAULT_MALFORMED_ENTRY, 1)?;
    let s0 = p.irq_stats();
    let done = signals.create_interrupt(1)?;
    submit(&queue, &empty(&done))?;
    wait_done(&queue, &done, "dispatch after a malformed entry")?;
    settle(p, hz)?;
    let d = delta(s0, p.irq_stats());
    if d.malformed != 1 || d.signaled != 1 {
        hsa_core::bail!(
            Status::Error,
            "malformed entry: expected 1 malformed and 1 signaled, got {d:?}"
        );
    }
    crate::println!(
        "hsa-unikernel: fault malformed-entry ok: {} malformed counted, {} signaled",
        d.malformed,
        d.signaled
    );

    // 3b. amdgpu's VMID-0 fence before a completion on the shared IH ring: skipped as another
    //     VMID's (the host's IH filter), the completion after it signaled once.
    arm(p, FAULT_FOREIGN_ENTRY, 1)?;
    let s0 = p.irq_stats();
    let done = signals.create_interrupt(1)?;
    submit(&queue, &empty(&done))?;
    wait_done(&queue, &done, "dispatch after a foreign entry")?;
    settle(p, hz)?;
    let d = delta(s0, p.irq_stats());
    if d.foreign != 1 || d.signaled != 1 || d.entries != 2 || d.bad_event != 0 {
        hsa_core::bail!(
            Status::Error,
            "foreign entry: expected 2 entries, 1 foreign and 1 signaled, got {d:?}"
        );
    }
    crate::println!(
        "hsa-unikernel: fault foreign-entry ok: {} of {} entries skipped as VMID 0's, {} signaled",
        d.foreign,
        d.entries,
        d.signaled
    );

    // 4. A queue error: the device stops the queue; the wait ends with the processor's status.
    arm(p, FAULT_QUEUE_ERROR, 1)?;
    let s0 = p.irq_stats();
    let done = signals.create_interrupt(1)?;
    submit(&queue, &empty(&done))?;
    let e = match queue.wait_completion(&done, SignalCondition::Eq, 0, WAIT_NS, WaitState::Blocked)
    {
        Ok(v) => hsa_core::bail!(
            Status::Error,
            "queue error: the wait returned {v} instead of the error"
        ),
        Err(e) => e,
    };
    let state = queue.state();
    settle(p, hz)?;
    let d = delta(s0, p.irq_stats());
    if e.status() != Status::MemoryFault
        || state != QueueState::Stopped(Status::MemoryFault)
        || d.queue_errors != 1
        || d.unknown != 0
    {
        hsa_core::bail!(
            Status::Error,
            "queue error: expected MemoryFault from the wait and the queue, 1 queue-error IH \
             entry; got {:?} ({}), {state:?}, {d:?}",
            e.status(),
            e.detail()
        );
    }
    crate::println!(
        "hsa-unikernel: fault queue-error ok: wait ended with {:?}: {}; queue {state:?}",
        e.status(),
        e.detail()
    );
    // The platform called the queue's error callback once, from the IH interrupt, with the
    // status and value the processor stored in the inactive signal.
    let stored = queue
        .inactive_signal()
        .load(hsa_core::signal::LoadOrder::Acquire);
    let calls = QUEUE_ERROR_CALLS.load(Ordering::Acquire);
    let Some(recorded) = queue.error().filter(|_| calls == 1) else {
        hsa_core::bail!(
            Status::Error,
            "queue error: the error callback ran {calls} times with its data (expected once)"
        );
    };
    let (id, data, status, detail) = (
        queue.hw_queue().id.get(),
        QUEUE_ERROR_DATA,
        recorded.status(),
        recorded.detail(),
    );
    if status != Status::MemoryFault {
        hsa_core::bail!(
            Status::Error,
            "queue error: the queue recorded {status:?} ({detail})"
        );
    }
    crate::println!(
        "hsa-unikernel: fault queue-error callback: {calls} call, queue {id}, data {data:#x}, \
         {status:?}: {detail} (inactive signal {stored:#x})"
    );
    queue.destroy()?;
    // The device serves a new queue afterwards.
    let queue = AqlQueue::create(p, &queue_config())?;
    let done = signals.create_interrupt(1)?;
    submit(&queue, &empty(&done))?;
    wait_done(&queue, &done, "dispatch on a new queue after the error")?;
    queue.destroy()?;
    let calls = QUEUE_ERROR_CALLS.load(Ordering::Acquire);
    if calls != 1 {
        hsa_core::bail!(
            Status::Error,
            "queue error: the error callback ran {calls} times by the end (expected once)"
        );
    }
    crate::println!("hsa-unikernel: fault queue-error recovered: a new queue runs");
    Ok(())
}

/// 6. A page the GPU's page tables no longer map. vector_copy copies two pages of ints into
///    `dst`; then `dst`'s second page is unmapped:
///    - before the TLB flush, the device still reaches it through the translation it kept
///      (as a GPU does until `INVALIDATE_TLBS`);
///    - after the flush, the kernel's first store there faults: the device writes the GFX
///      hub's `UTCL2` entry, and the memory-fault handler gets exactly that page, "page not
///      present", on the GPU node; the queue stops with `MemoryFault`;
///    - mapped back and flushed, a new queue copies both pages again.
fn page_fault(
    p: &'static Vm,
    kernel: &Kernel,
    signals: &SignalPool<&'static Vm>,
    hz: u64,
) -> Result<(), Error> {
    const INTS: usize = 2048;
    let src = Buffer::new(p, INTS)?;
    let dst = Buffer::new(p, INTS)?;
    src.fill(|i| (i as i32) ^ 0x0123_4567);
    let ka = kernarg(p, src.va(), dst.va())?;
    let copy = |queue: &AqlQueue<&'static Vm>, what: &str| -> Result<(), Error> {
        dst.fill(|_| 0);
        let done = signals.create_interrupt(1)?;
        submit(
            queue,
            &dispatch_packet(kernel, &ka, INTS as u32, WORKGROUP, &done),
        )?;
        wait_done(queue, &done, what)?;
        let got = dst.as_slice();
        match (0..INTS).find(|&i| got[i] != (i as i32) ^ 0x0123_4567) {
            Some(i) => hsa_core::bail!(Status::Error, "{what}: dst[{i}] is {:#x}", got[i]),
            None => Ok(()),
        }
    };
    p.set_memory_fault_handler(Some(MemoryFaultHandler {
        func: on_memory_fault,
        data: FAULT_DATA,
    }))?;
    let queue = AqlQueue::create(p, &queue_config())?;
    copy(&queue, "copy with both pages mapped")?;
    let second = hsa_core::GpuVa(dst.va() + 4096);
    p.host().gpu_unmap(second, 4096)?;
    copy(&queue, "copy through the kept translation")?;
    crate::println!(
        "hsa-unikernel: fault page-fault stale ok: before the TLB flush the GPU still wrote {second} through its kept translation"
    );
    p.host().flush_tlbs()?;
    settle(p, hz)?;
    let s0 = p.irq_stats();
    let calls0 = FAULT_CALLS.load(Ordering::Acquire);
    let done = signals.create_interrupt(1)?;
    submit(
        &queue,
        &dispatch_packet(kernel, &ka, INTS as u32, WORKGROUP, &done),
    )?;
    let e = match queue.wait_completion(&done, SignalCondition::Eq, 0, WAIT_NS, WaitState::Blocked)
    {
        Ok(v) => hsa_core::bail!(
            Status::Error,
            "page fault: the wait returned {v}: the store to the unmapped page did not fault"
        ),
        Err(e) => e,
    };
    settle(p, hz)?;
    let d = delta(s0, p.irq_stats());
    let calls = FAULT_CALLS.load(Ordering::Acquire) - calls0;
    let [address, reason, node] = FAULT_SEEN.each_ref().map(|a| a.load(Ordering::Relaxed));
    if e.status() != Status::MemoryFault
        || queue.state() != QueueState::Stopped(Status::MemoryFault)
        || calls != 1
        || d.memory_faults != 1
        || address != second.get()
        || reason != u64::from(MemoryFaultReason::PAGE_NOT_PRESENT.bits())
        || node != u64::from(GPU.get())
    {
        hsa_core::bail!(
            Status::Error,
            "page fault: expected one fault at {second}, page not present, on node {}, and \
             MemoryFault from the wait and the queue; got {calls} handler calls (last at \
             {address:#x}, reason {reason:#x}, node {node}), {:?} ({}), {:?}, {d:?}",
            GPU.get(),
            e.status(),
            e.detail(),
            queue.state()
        );
    }
    crate::println!(
        "hsa-unikernel: fault page-fault ok: handler got {address:#x} (reason {reason:#x}, node {node}); wait ended with {:?}; queue {:?}",
        e.status(),
        queue.state()
    );
    queue.destroy()?;
    p.set_memory_fault_handler(None)?;
    p.host().gpu_remap(second, 4096)?;
    p.host().flush_tlbs()?;
    let queue = AqlQueue::create(p, &queue_config())?;
    copy(&queue, "copy after the page was mapped back")?;
    queue.destroy()?;
    crate::println!(
        "hsa-unikernel: fault page-fault recovered: mapped back, a new queue copies both pages"
    );
    Ok(())
}

/// How long a KIQ batch the device must refuse is given, ns.
const REFUSED_BATCH_TIMEOUT_NS: u64 = 50_000_000;

/// 5. MAP_QUEUES packets the device must refuse, each naming what is wrong, and none mapping
///    a queue: an MQD with a wrong header, an AQL MQD without `SLOT_BASED_WPTR`, a packet
///    whose doorbell differs from its MQD's, an MQD whose doorbell is not the device's, an
///    MQD without an EOP buffer, an MQD whose VMID has no page tables. Each MQD is a good one
///    (hsa-baremetal's, for a queue at fake addresses) with one field broken, in a page of
///    system memory.
fn bad_mqds(p: &'static Vm) -> Result<(), Error> {
    use hsa_baremetal::mqd::{ComputeMqd, MqdParams, ALL_CUS, NORMAL_PRIORITY};
    use hsa_core::wire::kiq::{KiqPacket, MapQueues};
    use hsa_core::{DoorbellIndex, GpuVa};
    let page = system_chunk(p, 4096)?;
    let Some(ptr) = page.host_ptr else {
        hsa_core::bail!(Status::InvalidAllocation, "MQD page has no host pointer");
    };
    let fake = |at: u64| GpuVa(page.gpu_va.get() + 0x800 + at);
    let good = ComputeMqd::new(&MqdParams {
        ring: fake(0x100),
        ring_size_bytes: 4096,
        rptr_report: fake(0x80),
        wptr_poll: fake(0x38),
        doorbell: DoorbellIndex(QUEUE_DOORBELL_INDEX),
        eop: fake(0x200),
        eop_size_bytes: 4096,
        mqd_address: page.gpu_va,
        vmid: 0,
        priority: NORMAL_PRIORITY,
        cu_masks: ALL_CUS,
        xcc: None,
    })?;
    // (name, the break, the packet's doorbell offset): doorbell 1 is dword offset 2.
    type Break = fn(&mut [u32; 512]);
    let cases: [(&str, Break, u32); 6] = [
        ("header", |d| d[0] = 0xC031_0801, 2),
        ("slot-based-wptr", |d| d[145] &= !(3 << 25), 2),
        ("doorbell-mismatch", |_| {}, 4),
        (
            "reserved-doorbell",
            |d| d[143] = (d[143] & !(0x3ff_ffff << 2)) | 40 << 2,
            40,
        ),
        // cp_hqd_eop_base_addr_lo/hi (dwords 165, 166): no EOP buffer.
        ("eop-null", |d| (d[165], d[166]) = (0, 0), 2),
        // cp_hqd_vmid (dword 131): a VMID the firmware gave no page tables.
        ("vmid-without-tables", |d| d[131] = 5, 2),
    ];
    for (name, breaks, doorbell_offset) in cases {
        let mut d = good.v9_mqd().dwords();
        breaks(&mut d);
        for (i, w) in d.iter().enumerate() {
            // SAFETY: the first 2048 bytes of the fresh 4096-byte page, 4-aligned; the device
            // reads them only after the KIQ batch below is published.
            unsafe { ptr.cast::<u32>().as_ptr().add(i).write_volatile(*w) };
        }
        let packet = MapQueues::amdgpu_kiq(
            1,
            0,
            0,
            doorbell_offset,
            page.gpu_va.get(),
            fake(0x38).get(),
        );
        let r = p
            .host()
            .kiq_packets(&[KiqPacket::MapQueues(packet)], REFUSED_BATCH_TIMEOUT_NS);
        let Err(e) = r else {
            hsa_core::bail!(Status::Error, "bad MQD ({name}): the device mapped it");
        };
        crate::println!(
            "hsa-unikernel: fault bad-mqd {name} refused: {}",
            e.detail()
        );
    }
    // SAFETY: the page is ours and nothing uses it any more (every batch was refused).
    unsafe { p.free_memory(&page) }?;
    Ok(())
}
