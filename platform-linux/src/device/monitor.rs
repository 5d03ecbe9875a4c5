//! The queue-error monitor: how the Linux backend learns that a queue stopped, the way ROCR
//! learns it from amdkfd.
//!
//! amdkfd tells a process about GPU errors through KFD events it created for them
//! (`kfd_events.c`): a GPU page fault sets every `KFD_IOC_EVENT_MEMORY` event of the process,
//! with `kfd_hsa_memory_exception_data` (the faulting address, the GPU, why:
//! `kfd_signal_vm_fault_event`); a GPU hang, reset or an exception nobody handles sets every
//! `KFD_IOC_EVENT_HW_EXCEPTION` event, with `kfd_hsa_hw_exception_data` on kernels that copy
//! it (`kfd_signal_hw_exception_event`, `kfd_signal_reset_event`). `WAIT_EVENTS` hands the
//! data back. A command processor that stops a queue also stores its error into the queue's
//! `amd_queue_t.queue_inactive_signal`. ROCR creates one memory and one hardware-exception
//! event at start-up and handles them on a thread (`Runtime::VMFaultHandler`,
//! `HwExceptionHandler`); so does the monitor:
//!
//! - [`super::LinuxPlatform`] creates the two events (auto-reset) with its first compute
//!   queue (not at open: a platform that runs no queue, such as a report on the topology,
//!   then asks KFD for no event or event page), and a thread blocked in `WAIT_EVENTS` on both (in slices of
//!   [`MONITOR_SLICE_MS`], so that it notices a stop request even if the wake-up below
//!   failed);
//! - every queue the platform creates is watched: its GPU, its inactive signal and its error
//!   callback (the abort policy when it has none);
//! - when an event fires, the thread reads the inactive signal of every watched queue: a
//!   queue whose signal holds a positive value (the queue error code the command processor
//!   stored, read as ROCR reads it, or the status hsa-rt's packet processor keeps beside it:
//!   `hsa_core::queue::inactive`) stopped, and its callback is called once with that status and what the event data says
//!   (address, access, GPU). When no queue of the GPU an event names stopped so and the event
//!   ends them all (a page fault, which amdkfd answers by evicting the process's queues; a
//!   whole-GPU reset), every queue of that GPU is reported, with `MEMORY_FAULT` or `ERROR`;
//!   a per-engine reset that stopped none of this platform's queues is another platform's
//!   (two platforms may share the process's events). Callbacks run on the monitor's thread,
//!   after its locks are released, so they may call back into the platform; a queue destroyed
//!   meanwhile is not called, and `destroy_queue` on another thread waits for a call of its
//!   queue's callback in progress, so that no callback runs after its queue's destroy
//!   returned (`QueueRequest::on_error`);
//! - a memory event is also a GPU memory fault: before any queue callback runs, the handler
//!   installed with `MemoryFaultReports::set_memory_fault_handler` (the C API's system event handlers)
//!   is told the GPU's node, the address and the reasons, as ROCR's `Runtime::VMFaultHandler`
//!   builds `HSA_AMD_GPU_MEMORY_FAULT_EVENT` from the same data ([`memory_fault`]);
//! - dropping the platform stops the thread: it sets the stop flag and destroys the two
//!   events, which ends the thread's `WAIT_EVENTS` (`KFD_IOC_WAIT_RESULT_FAIL`, `EIO`), then
//!   joins it (a destroy that failed is tried once more after the join).
//!
//! On a real GPU a faulting kernel thus reaches the queue's callback instead of surfacing as
//! a wait that never ends; the emulated device reports its errors the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{JoinHandle, ThreadId};

use hsa_core::platform::{MemoryFault, MemoryFaultHandler, MemoryFaultReason, QueueErrorCallback};
use hsa_core::{error, Error, GpuVa, NodeId, QueueId, Status};

use super::lock;
use super::process::KfdProcess;
use crate::kfd::abi::*;
use crate::kfd::calls::{self, call};
use crate::kfd::driver::KfdDriver;

/// How long one `WAIT_EVENTS` of the monitor lasts at most, ms: the bound on how late it
/// notices a stop request whose wake-up (destroying its events) failed.
pub const MONITOR_SLICE_MS: u32 = 1000;

/// Byte offset of `amd_signal_t.value` (Ref: `amd_hsa_signal.h`).
const SIGNAL_VALUE_OFFSET: u64 = 8;

/// One watched queue.
#[derive(Debug)]
pub(crate) struct WatchedQueue {
    /// The KFD `gpu_id` of its GPU.
    pub(crate) gpu_id: u32,
    /// The `amd_signal_t` handle in its `amd_queue_t.queue_inactive_signal` (0: none).
    pub(crate) inactive_signal: u64,
    /// Called once when it stops with an error.
    pub(crate) callback: QueueErrorCallback,
    /// The callback was called.
    pub(crate) reported: bool,
}

/// What a fired event said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exception {
    /// A memory event, with its data.
    Memory(HsaMemoryExceptionData),
    /// A hardware-exception event, with its data.
    Hardware(HsaHwExceptionData),
    /// An event fired without data (a kernel that does not copy hardware-exception data).
    Unknown,
}

impl Exception {
    /// The `gpu_id` it names (0: unknown, any GPU).
    fn gpu_id(&self) -> u32 {
        match self {
            Exception::Memory(d) => d.gpu_id,
            Exception::Hardware(d) => d.gpu_id,
            Exception::Unknown => 0,
        }
    }

    fn applies_to(&self, gpu_id: u32) -> bool {
        self.gpu_id() == 0 || self.gpu_id() == gpu_id
    }

    /// Whether it ends every queue of its GPU even when none stored an error: a page fault
    /// (amdkfd evicts the process's queues, `kfd_dqm_evict_pasid`), a whole-GPU reset or lost
    /// memory, or an exception whose data the kernel does not report (a reset, most
    /// likely). A per-engine reset ends only the queue that stored its error.
    fn ends_every_queue(&self) -> bool {
        match self {
            Exception::Memory(_) | Exception::Unknown => true,
            Exception::Hardware(d) => {
                d.reset_type == KFD_HW_EXCEPTION_WHOLE_GPU_RESET || d.memory_lost != 0
            }
        }
    }

    /// What the event data says, in words.
    pub(crate) fn describe(&self) -> String {
        match self {
            Exception::Memory(d) => {
                let f = d.failure;
                let what = if f.read_only != 0 {
                    "write to a read-only page"
                } else if f.no_execute != 0 {
                    "execute of a non-executable page"
                } else if f.not_present != 0 {
                    "page not present"
                } else {
                    "memory fault"
                };
                let at = if f.imprecise != 0 {
                    "at an unknown address".to_owned()
                } else {
                    format!("at {:#x}", d.va)
                };
                let ras = match d.error_type {
                    KFD_MEM_ERR_NO_RAS => String::new(),
                    KFD_MEM_ERR_SRAM_ECC => ", SRAM ECC error".to_owned(),
                    KFD_MEM_ERR_POISON_CONSUMED => ", poison consumed".to_owned(),
                    KFD_MEM_ERR_GPU_HANG => ", GPU hang".to_owned(),
                    n => format!(", error type {n}"),
                };
                format!(
                    "KFD memory event: {what} {at} on gpu_id {:#x}{ras}",
                    d.gpu_id
                )
            }
            Exception::Hardware(d) => {
                let reset = match d.reset_type {
                    KFD_HW_EXCEPTION_WHOLE_GPU_RESET => "whole-GPU reset".to_owned(),
                    KFD_HW_EXCEPTION_PER_ENGINE_RESET => "per-engine reset".to_owned(),
                    n => format!("reset type {n}"),
                };
                let cause = match d.reset_cause {
                    KFD_HW_EXCEPTION_GPU_HANG => "a GPU hang".to_owned(),
                    KFD_HW_EXCEPTION_ECC => "an ECC error".to_owned(),
                    n => format!("cause {n}"),
                };
                let lost = if d.memory_lost != 0 {
                    ", device memory lost"
                } else {
                    ""
                };
                format!(
                    "KFD hardware exception event on gpu_id {:#x}: {reset} after {cause}{lost}",
                    d.gpu_id
                )
            }
            Exception::Unknown => {
                "KFD hardware exception event (the kernel reports no exception data)".to_owned()
            }
        }
    }
}

/// The GPU memory fault a memory event's data describes, on the GPU of topology node `node`:
/// the address and the reasons, translated as ROCR 5.2's `Runtime::VMFaultHandler` does
/// (libhsakmt copies the failure bits and `ErrorType` into `HsaMemoryAccessFault`): each
/// failure bit sets the [`MemoryFaultReason`] of that name, `ErrorType` 1 (SRAM ECC) sets
/// `SRAMECC`, 2 (poison consumed) `DRAMECC`, 3 (GPU hang) `HANG`. amdkfd reports no
/// "host only" failure, so `HOST_ONLY` is never set.
pub fn memory_fault(data: &HsaMemoryExceptionData, node: NodeId) -> MemoryFault {
    let f = data.failure;
    let mut reason = MemoryFaultReason::empty();
    for (bit, flag) in [
        (f.not_present, MemoryFaultReason::PAGE_NOT_PRESENT),
        (f.read_only, MemoryFaultReason::READ_ONLY),
        (f.no_execute, MemoryFaultReason::NX),
        (f.imprecise, MemoryFaultReason::IMPRECISE),
    ] {
        if bit != 0 {
            reason |= flag;
        }
    }
    reason |= match data.error_type {
        KFD_MEM_ERR_SRAM_ECC => MemoryFaultReason::SRAMECC,
        KFD_MEM_ERR_POISON_CONSUMED => MemoryFaultReason::DRAMECC,
        KFD_MEM_ERR_GPU_HANG => MemoryFaultReason::HANG,
        _ => MemoryFaultReason::empty(),
    };
    MemoryFault {
        node,
        address: GpuVa(data.va),
        reason,
    }
}

/// What `WAIT_EVENTS` returned for the memory event (entry 0) and the hardware-exception
/// event (entry 1) after one of them fired: the exceptions whose data is there; `Unknown`
/// when neither entry holds data (amdkfd before 6.x copies no hardware-exception data).
pub(crate) fn exceptions(data: &[EventData; 2]) -> Vec<Exception> {
    let mut out = Vec::new();
    let memory = data[0].memory_exception();
    if memory != HsaMemoryExceptionData::default() {
        out.push(Exception::Memory(memory));
    }
    let hw = data[1].hw_exception();
    if hw != HsaHwExceptionData::default() {
        out.push(Exception::Hardware(hw));
    }
    if out.is_empty() {
        out.push(Exception::Unknown);
    }
    out
}

/// The state the monitor's thread shares with the platform.
pub(crate) struct Shared {
    driver: Arc<dyn KfdDriver>,
    process: Arc<KfdProcess>,
    queues: Mutex<HashMap<u32, WatchedQueue>>,
    /// The KFD `gpu_id` and topology node of each GPU.
    gpu_nodes: Vec<(u32, NodeId)>,
    /// Told of every memory fault first (`MemoryFaultReports::set_memory_fault_handler`).
    fault_handler: Mutex<Option<MemoryFaultHandler>>,
    stop: AtomicBool,
    /// The queue whose callback the thread is calling now (`QueueRequest::on_error`'s
    /// contract: `destroy_queue` waits for it, [`Monitor::unwatch`]); taken after `queues`
    /// when both are held.
    delivering: Mutex<Option<u32>>,
    /// Notified when `delivering` is cleared.
    delivered: Condvar,
    /// The monitor thread's id (a callback it runs may destroy queues: it waits for nothing).
    thread: OnceLock<ThreadId>,
}

impl Shared {
    /// The value of the inactive signal at `handle`; `None` when there is none or it is not
    /// readable.
    fn inactive_value(&self, handle: u64) -> Option<i64> {
        if handle == 0 {
            return None;
        }
        let at = handle.checked_add(SIGNAL_VALUE_OFFSET)?;
        self.process.va.load_u64_acquire(at).map(|v| v as i64)
    }

    /// Tells the memory-fault handler of the memory faults among `exceptions`, then finds
    /// the queues they stopped and reports each once (see the module docs).
    pub(crate) fn on_exceptions(&self, exceptions: &[Exception]) {
        let handler = *lock(&self.fault_handler);
        if let Some(h) = handler {
            for x in exceptions {
                let Exception::Memory(d) = x else { continue };
                // A gpu_id of no GPU of ours (another platform's device): not ours to tell.
                let Some(&(_, node)) = self.gpu_nodes.iter().find(|(g, _)| *g == d.gpu_id) else {
                    continue;
                };
                (h.func)(&memory_fault(d, node), h.data);
            }
        }
        let mut calls = Vec::new();
        {
            let mut queues = lock(&self.queues);
            let describe = |gpu_id: u32| -> String {
                exceptions
                    .iter()
                    .filter(|e| e.applies_to(gpu_id))
                    .map(Exception::describe)
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            // Queues whose packet processor stored an error status (also those reported
            // before: their GPU's exception is theirs, not every queue's).
            let mut stopped_gpus = Vec::new();
            for (&id, q) in queues.iter_mut() {
                let Some(v) = self.inactive_value(q.inactive_signal).filter(|&v| v > 0) else {
                    continue;
                };
                stopped_gpus.push(q.gpu_id);
                if q.reported {
                    continue;
                }
                let status = hsa_core::queue::inactive::decode(v).unwrap_or(Status::Error);
                let events = describe(q.gpu_id);
                let e = if events.is_empty() {
                    error!(status, "queue_inactive_signal {v:#x}")
                } else {
                    error!(status, "queue_inactive_signal {v:#x}; {events}")
                };
                q.reported = true;
                calls.push((id, q.callback, e));
            }
            // An exception that stopped no queue of its GPU stopped them all: amdkfd evicts
            // the process's queues after a page fault; a whole-GPU reset loses them.
            for x in exceptions {
                if !x.ends_every_queue() || stopped_gpus.iter().any(|&g| x.applies_to(g)) {
                    continue;
                }
                let status = match x {
                    Exception::Memory(_) => Status::MemoryFault,
                    _ => Status::Error,
                };
                for (&id, q) in queues
                    .iter_mut()
                    .filter(|(_, q)| !q.reported && x.applies_to(q.gpu_id))
                {
                    q.reported = true;
                    calls.push((id, q.callback, error!(status, "{}", x.describe())));
                }
            }
        }
        for (id, cb, e) in calls {
            {
                // A queue destroyed since (by an earlier callback, or another thread) is not
                // called: its callback's data may be gone. Marked under the queues' lock, so
                // that `unwatch` either came first or waits for this call.
                let queues = lock(&self.queues);
                if !queues.contains_key(&id) {
                    continue;
                }
                *lock(&self.delivering) = Some(id);
            }
            deliver(&cb, &e, QueueId(id));
            *lock(&self.delivering) = None;
            self.delivered.notify_all();
        }
    }

    fn run(&self, memory_event: u32, hw_event: u32) {
        while !self.stop.load(Ordering::Acquire) {
            let mut data = [memory_event, hw_event].map(|event_id| EventData {
                event_id,
                ..EventData::default()
            });
            match calls::wait_events(&*self.driver, &mut data, false, MONITOR_SLICE_MS) {
                // A wait that ends after the stop request is its wake-up (the events being
                // destroyed), whatever the driver answered: nothing to report while the
                // platform goes (no callback runs while its queues are destroyed).
                Ok(_) if self.stop.load(Ordering::Acquire) => break,
                Ok(KFD_IOC_WAIT_RESULT_COMPLETE) => self.on_exceptions(&exceptions(&data)),
                Ok(_) => {}
                Err(_) if self.stop.load(Ordering::Acquire) => break,
                // Not expected (the events are ours until the stop); do not spin on it.
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}

/// The monitor: its two events and its thread (see the module docs).
pub(crate) struct Monitor {
    shared: Arc<Shared>,
    memory_event: u32,
    hw_event: u32,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("memory_event", &self.memory_event)
            .field("hw_event", &self.hw_event)
            .finish_non_exhaustive()
    }
}

impl Monitor {
    /// Starts the thread waiting on `memory_event` and `hw_event` (created by the caller).
    ///
    /// # Errors
    /// [`Status::OutOfResources`] when the thread cannot be started.
    /// `gpu_nodes` are the KFD `gpu_id` and topology node of each GPU.
    pub(crate) fn start(
        driver: Arc<dyn KfdDriver>,
        process: Arc<KfdProcess>,
        memory_event: u32,
        hw_event: u32,
        gpu_nodes: Vec<(u32, NodeId)>,
    ) -> Result<Monitor, Error> {
        let shared = Arc::new(Shared {
            driver,
            process,
            queues: Mutex::new(HashMap::new()),
            gpu_nodes,
            fault_handler: Mutex::new(None),
            stop: AtomicBool::new(false),
            delivering: Mutex::new(None),
            delivered: Condvar::new(),
            thread: OnceLock::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("hsa-kfd-events".into())
            .spawn(move || s.run(memory_event, hw_event))
            .map_err(|e| {
                error!(
                    Status::OutOfResources,
                    "starting the KFD event monitor thread: {e}"
                )
            })?;
        let _ = shared.thread.set(thread.thread().id());
        Ok(Monitor {
            shared,
            memory_event,
            hw_event,
            thread: Some(thread),
        })
    }

    /// The memory and hardware-exception event ids.
    pub(crate) fn events(&self) -> (u32, u32) {
        (self.memory_event, self.hw_event)
    }

    /// Installs (or with `None` removes) the handler told of every memory fault.
    pub(crate) fn set_fault_handler(&self, handler: Option<MemoryFaultHandler>) {
        *lock(&self.shared.fault_handler) = handler;
    }

    /// Watches queue `queue_id` from now on.
    pub(crate) fn watch(&self, queue_id: u32, queue: WatchedQueue) {
        lock(&self.shared.queues).insert(queue_id, queue);
    }

    /// Stops watching queue `queue_id` (whose memory may go away once this returns: the
    /// thread reads a queue's signal only under the lock this takes, and a call of the
    /// queue's callback the thread was making has returned, unless this runs on the thread
    /// itself); what was watched.
    pub(crate) fn unwatch(&self, queue_id: u32) -> Option<WatchedQueue> {
        let watched = lock(&self.shared.queues).remove(&queue_id);
        if self.shared.thread.get() != Some(&std::thread::current().id()) {
            let mut delivering = lock(&self.shared.delivering);
            while *delivering == Some(queue_id) {
                delivering = self
                    .shared
                    .delivered
                    .wait(delivering)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        watched
    }

    /// The error `queue` (watched until now as `queue_id`, its queue destroyed but its
    /// inactive signal still live) stored and that was not reported yet: what its callback
    /// must still be told, as ROCR 5.2 runs the error handler before a queue's destruction
    /// completes (`AqlQueue::~AqlQueue`). `None` when it was reported or stored no error.
    pub(crate) fn unreported(&self, queue: &WatchedQueue) -> Option<Error> {
        if queue.reported {
            return None;
        }
        let v = self
            .shared
            .inactive_value(queue.inactive_signal)
            .filter(|&v| v > 0)?;
        let status = hsa_core::queue::inactive::decode(v).unwrap_or(Status::Error);
        Some(error!(
            status,
            "queue_inactive_signal {v:#x} (read when the queue was destroyed)"
        ))
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Destroying the events ends the thread's WAIT_EVENTS; if that fails it ends within
        // one slice, and the destroy is tried once more after it (the event would otherwise
        // live as long as the process's /dev/kfd).
        let destroy = |event_id: u32| {
            call(
                &*self.shared.driver,
                &mut DestroyEventArgs { event_id, pad: 0 },
            )
            .is_ok()
        };
        let left: Vec<u32> = [self.memory_event, self.hw_event]
            .into_iter()
            .filter(|&e| !destroy(e))
            .collect();
        if let Some(t) = self.thread.take() {
            // The last reference may go on the monitor thread itself (a queue error callback
            // that calls hsa_shut_down): it cannot join itself, and ends by itself once the
            // callback returns and it sees `stop` (it owns its `Shared`).
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        for e in left {
            let _ = destroy(e);
        }
    }
}

/// Hands a queue error to the queue's callback, after logging it at error level with what
/// amdkfd reported (the status, the queue, the inactive signal's value, the events' data), as
/// ROCR's error handler has it: every queue error is logged, whether a callback listens or not.
pub(crate) fn deliver(callback: &QueueErrorCallback, error: &Error, queue: QueueId) {
    log::error!(
        "queue {} stopped with {}: {}",
        queue.0,
        error.status().c_name(),
        error.detail()
    );
    (callback.func)(error, queue, callback.data);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(failure: [u32; 4], error_type: u32) -> HsaMemoryExceptionData {
        HsaMemoryExceptionData {
            failure: MemoryExceptionFailure {
                not_present: failure[0],
                read_only: failure[1],
                no_execute: failure[2],
                imprecise: failure[3],
            },
            va: 0x1000,
            gpu_id: 0x1234,
            error_type,
        }
    }

    /// Each failure bit and error type becomes the `hsa_amd_memory_fault_reason_t` bit ROCR
    /// 5.2 sets for it (values of `hsa_ext_amd.h`).
    #[test]
    fn memory_exception_data_becomes_rocr_fault_reasons() {
        let f = memory_fault(&data([1, 0, 0, 0], KFD_MEM_ERR_NO_RAS), NodeId(3));
        assert_eq!(f.node, NodeId(3));
        assert_eq!(f.address, GpuVa(0x1000));
        assert_eq!(f.reason.bits(), 1); // HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT
        let bits = |failure, error_type| {
            memory_fault(&data(failure, error_type), NodeId(1))
                .reason
                .bits()
        };
        assert_eq!(bits([0, 1, 0, 0], 0), 1 << 1); // READ_ONLY
        assert_eq!(bits([0, 0, 1, 0], 0), 1 << 2); // NX
        assert_eq!(bits([0, 0, 0, 1], 0), 1 << 5); // IMPRECISE
        assert_eq!(bits([0, 0, 0, 0], KFD_MEM_ERR_SRAM_ECC), 1 << 6); // SRAMECC
        assert_eq!(bits([0, 0, 0, 0], KFD_MEM_ERR_POISON_CONSUMED), 1 << 4); // DRAMECC
        assert_eq!(bits([0, 0, 0, 0], KFD_MEM_ERR_GPU_HANG), 1 << 31); // HANG
        assert_eq!(bits([1, 1, 0, 1], 0), 0b10_0011);
        assert_eq!(bits([0, 0, 0, 0], 0), 0);
    }
}
