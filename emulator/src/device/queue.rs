//! The emulated command processor: one thread per compute queue running the core's
//! [`PacketProcessor`] against the queue's ring, woken by the doorbell. Kernel dispatches run
//! in the GFX9 interpreter or a host implementation, as [`ExecutionMode`] says.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use hsa_core::abi::SignalHandle;
use hsa_core::platform::QueueErrorCallback;
use hsa_core::processor::{
    AgentDispatch, KernelDispatch, PacketProcessor, ProcessorHost, Progress,
};
use hsa_core::signal::raw::RawSignal;
use hsa_core::{error, Error, GpuVa, QueueId, Status};

use super::memory::Allocs;
use super::{interp, kernel, Device, ExecutionMode};
use crate::gfx9::Gfx9Target;

/// How long an idle processor sleeps before looking at its ring again without a doorbell.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// How long a processor that ran out of packets keeps polling its ring before it sleeps, as
/// a hardware CP polls: a doorbell rung meanwhile costs no wake-up (no futex syscall on
/// either side, no scheduler latency). Burns at most this much CPU after each batch.
const IDLE_SPIN: Duration = Duration::from_micros(50);
/// How long a processor blocked on a barrier waits before re-checking the dependencies.
const BLOCKED_POLL: Duration = Duration::from_micros(100);

#[derive(Default)]
struct CtlState {
    callback: Option<QueueErrorCallback>,
    pending: Option<Error>,
}

/// Wake-up and error-reporting state shared by a queue's thread and the device.
#[derive(Default)]
pub(crate) struct QueueCtl {
    kick: AtomicU32,
    sleeping: AtomicBool,
    pub(crate) stop: AtomicBool,
    state: Mutex<CtlState>,
    cv: Condvar,
}

impl QueueCtl {
    /// The doorbell: wakes the processor if it sleeps. Never blocks for long (a mutex taken
    /// only to pair with a sleeper).
    pub(crate) fn kick(&self) {
        // SeqCst with the sleeper's SeqCst store of `sleeping` and load of `kick`: either it
        // sees the new kick and does not sleep, or we see `sleeping` and notify under the lock.
        self.kick.fetch_add(1, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let _g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            self.cv.notify_all();
        }
    }

    fn sleep(&self, seen_kick: u32, timeout: Duration) {
        let g = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.sleeping.store(true, Ordering::SeqCst);
        if self.kick.load(Ordering::SeqCst) == seen_kick && !self.stop.load(Ordering::SeqCst) {
            let _ = self.cv.wait_timeout(g, timeout);
        }
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Installs the error callback; delivers an error that came before it.
    pub(crate) fn set_callback(&self, queue_id: u32, cb: QueueErrorCallback) {
        let pending = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.callback = Some(cb);
            s.pending.take()
        };
        if let Some(e) = pending {
            (cb.func)(&e, QueueId(queue_id), cb.data);
        }
    }

    fn deliver(&self, queue_id: u32, e: Error) {
        if log_enabled() {
            eprintln!(
                "hsa-rt: queue {queue_id} stopped with {}: {}",
                e.status().c_name(),
                e.detail()
            );
        }
        let cb = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match s.callback {
                Some(cb) => cb,
                None => {
                    s.pending = Some(e);
                    return;
                }
            }
        };
        (cb.func)(&e, QueueId(queue_id), cb.data);
    }
}

/// Whether `HSA_RT_LOG` asks for log output ([`hsa_linux::env::switch`]; a bad value, which
/// `hsa_init` and the tools report, reads as off here).
fn log_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| hsa_linux::env::switch(hsa_linux::env::LOG_ENV).unwrap_or(false))
}

/// What the processor thread of one queue needs.
pub(crate) struct CpThread {
    pub(crate) device: Arc<Device>,
    pub(crate) ctl: Arc<QueueCtl>,
    pub(crate) processor: PacketProcessor,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    pub(crate) lds_bytes: u32,
}

impl CpThread {
    /// The thread body: process until stopped.
    pub(crate) fn run(mut self) {
        let mut stopped = false;
        // When the ring last went idle after processing (the spin phase's start).
        let mut idle_since: Option<std::time::Instant> = None;
        while !self.ctl.stop.load(Ordering::SeqCst) {
            let seen = self.ctl.kick.load(Ordering::SeqCst);
            if stopped {
                self.ctl.sleep(seen, Duration::from_secs(1));
                continue;
            }
            let progress = {
                let allocs = self
                    .device
                    .allocs
                    .read()
                    .unwrap_or_else(PoisonError::into_inner);
                let gpu = self.device.gpu(self.gpu_id);
                let host = CpHost {
                    device: &self.device,
                    allocs: &allocs,
                    gpu_id: self.gpu_id,
                    lds_bytes: self.lds_bytes,
                    target: gpu.and_then(|g| g.target),
                    isa: gpu.map_or("unknown", |g| g.isa.as_str()),
                };
                self.processor.process(&host, 64)
            };
            match progress {
                Progress::Processed(_) => idle_since = Some(std::time::Instant::now()),
                Progress::Idle if idle_since.is_some_and(|t| t.elapsed() < IDLE_SPIN) => {
                    for _ in 0..32 {
                        std::hint::spin_loop();
                    }
                }
                Progress::Idle => {
                    idle_since = None;
                    self.ctl.sleep(seen, IDLE_POLL);
                }
                Progress::Blocked => self.ctl.sleep(seen, BLOCKED_POLL),
                Progress::Stopped(e) => {
                    stopped = true;
                    // Delivered here, after the allocation lock is released, so the callback
                    // may call back into the device.
                    self.ctl.deliver(self.queue_id, e);
                }
            }
        }
    }
}

/// The [`ProcessorHost`] of one queue during one `process` call (holding the allocation
/// table's read lock, so nothing it resolves can be freed meanwhile).
struct CpHost<'a> {
    device: &'a Device,
    allocs: &'a Allocs,
    gpu_id: u32,
    lds_bytes: u32,
    target: Option<Gfx9Target>,
    isa: &'a str,
}

impl CpHost<'_> {
    /// Runs the host implementation registered for the kernel.
    fn run_host(&self, dispatch: &KernelDispatch) -> hsa_core::Result<()> {
        let (name, f) = self
            .device
            .kernels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .lookup(dispatch.kernel_object)?;
        kernel::run(
            &f,
            &name,
            dispatch,
            self.allocs,
            self.gpu_id,
            self.lds_bytes,
        )?;
        self.device.stats.host.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The kernel's symbol name when the loader reported one, and whether a host
    /// implementation is registered for it.
    fn symbol(&self, dispatch: &KernelDispatch) -> (Option<String>, bool) {
        let kernels = self
            .device
            .kernels
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let name = kernels.objects.get(&dispatch.kernel_object.0).cloned();
        let host = name
            .as_ref()
            .is_some_and(|n| kernels.by_name.contains_key(n));
        (name, host)
    }
}

impl ProcessorHost for CpHost<'_> {
    fn execute_kernel(&self, dispatch: &KernelDispatch) -> hsa_core::Result<()> {
        if self.device.mode() == ExecutionMode::HostOnly {
            return self.run_host(dispatch);
        }
        let (name, has_host) = self.symbol(dispatch);
        let label = match &name {
            Some(n) => format!("kernel {n}"),
            None => format!("kernel object {:#x}", dispatch.kernel_object.0),
        };
        let Some(target) = self.target else {
            if self.device.mode() == ExecutionMode::InterpretOnly {
                return Err(error!(
                    Status::InvalidIsa,
                    "{label}: HSA_RT_EMULATION=interpret, but the GPU's ISA {} is not one the \
                     emulated device's interpreter runs (gfx900, gfx90a, gfx942)",
                    self.isa
                ));
            }
            if has_host {
                // Said every time: the machine code did not run.
                eprintln!(
                    "hsa-rt: {label}: the emulated device interprets gfx9 machine code only \
                     and the GPU's ISA is {}; running the kernel's host implementation",
                    self.isa
                );
                return self.run_host(dispatch);
            }
            return Err(error!(
                Status::InvalidIsa,
                "{label}: the GPU's ISA {} is not one the emulated device's interpreter runs \
                 (gfx900, gfx90a, gfx942) and no host implementation is registered for it",
                self.isa
            ));
        };
        let threads = self.device.threads.load(Ordering::Relaxed);
        let started = std::time::Instant::now();
        match interp::run(
            dispatch,
            target,
            self.allocs,
            self.gpu_id,
            self.lds_bytes,
            threads,
        ) {
            interp::Outcome::Ran(s) => {
                let c = &self.device.stats;
                c.interpreter_ns
                    .fetch_add(started.elapsed().as_nanos() as u64, Ordering::SeqCst);
                c.workgroups.fetch_add(s.workgroups, Ordering::SeqCst);
                c.instructions.fetch_add(s.instructions, Ordering::SeqCst);
                c.lane_instructions
                    .fetch_add(s.lane_instructions, Ordering::SeqCst);
                c.interpreted.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            interp::Outcome::Failed(e) => Err(error!(
                e.status(),
                "{label} on {}: {}",
                target.name(),
                e.detail()
            )),
        }
    }

    fn agent_dispatch(&self, dispatch: &AgentDispatch) -> hsa_core::Result<()> {
        Err(error!(
            Status::InvalidPacketFormat,
            "agent dispatch packet (function {}) on a GPU compute queue: the emulated CP, like \
             the hardware's, runs kernel dispatch and barrier packets only",
            dispatch.function
        ))
    }

    fn resolve_signal(&self, handle: SignalHandle) -> hsa_core::Result<RawSignal> {
        self.allocs
            .device_region(self.gpu_id, handle.0, 64)
            .and_then(|r| r.raw_signal())
            .ok_or_else(|| {
                error!(
                    Status::InvalidSignal,
                    "signal handle {:#x} is not a 64-byte aligned amd_signal_t inside a live \
                     allocation mapped to GPU {:#x}",
                    handle.0,
                    self.gpu_id
                )
            })
    }

    fn write_mailbox(&self, mailbox: GpuVa, event_id: u32) -> hsa_core::Result<()> {
        let events = self
            .device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let word = events.page.as_ref().and_then(|p| {
            p.slot_offset(mailbox.0)
                .and_then(|off| p.region.atomic_u64(off))
        });
        match word {
            Some(w) => {
                // Release pairs with the Acquire load in Events::poll_slot (and a waiter's).
                w.store(u64::from(event_id), Ordering::Release);
                Ok(())
            }
            None => Err(error!(
                Status::InvalidSignal,
                "event mailbox {:#x} is not a slot of the event page", mailbox.0
            )),
        }
    }

    fn signal_event(&self, event_id: u32) {
        let mut events = self
            .device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if events.poll_slot(event_id) {
            self.device.events_cv.notify_all();
        }
    }

    fn timestamp_ticks(&self) -> u64 {
        super::monotonic_ns()
    }

    fn report_error(&self, _error: &Error) {
        // The thread delivers the error from Progress::Stopped once the lock is released.
    }
}
