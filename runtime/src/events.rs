//! GPU memory faults as system events: [`MemoryFaults`] hands every fault the platform reports
//! ([`MemoryFaultReports`], on Linux the KFD memory event) to the listeners registered with
//! [`MemoryFaults::add_listener`] (the C API's `hsa_amd_register_system_event_handler`), in
//! registration order, on the platform's thread and before the error callback of the queue the
//! fault stopped, as ROCR 5.2's `Runtime::VMFaultHandler` does; then to the copy engine, whose
//! SDMA queue on that GPU the fault ended ([`CopyEngine::on_gpu_memory_fault`]). Unlike ROCR,
//! a fault no listener answers does not abort the process.
//!
//! The platform's handler is installed at the first listener or at the copy engine's first
//! SDMA queue, whichever comes first, and stays until [`MemoryFaults::shut_down`]. The
//! handler the platform calls is a plain function with a word of data
//! ([`MemoryFaultHandler`]): the data is a token that finds this object in a process-wide
//! table of weak references, so a fault reported while the runtime goes away finds nothing
//! rather than freed memory.
//!
//! [`CopyEngine::on_gpu_memory_fault`]: crate::copy::CopyEngine::on_gpu_memory_fault

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

#[allow(unused_imports)] // doc links
use hsa_core::platform::MemoryFaultReports;
use hsa_core::platform::{MemoryFault, MemoryFaultHandler, Platform};

use crate::lock;

/// A listener of GPU memory faults: called once per fault on the platform's thread; it must
/// not block for long (other faults and queue errors wait behind it).
pub type FaultListener = Arc<dyn Fn(&MemoryFault) + Send + Sync>;

/// Something told of a memory fault after the listeners (the copy engine).
pub(crate) trait FaultSink: Send + Sync {
    /// A GPU memory fault on `fault.node`.
    fn on_memory_fault(&self, fault: &MemoryFault);
}

/// The installed handlers' targets, by token (a process may hold several runtimes).
static SINKS: Mutex<Vec<(usize, Weak<dyn FaultSink>)>> = Mutex::new(Vec::new());
/// The next token (0 is never used).
static NEXT_TOKEN: AtomicUsize = AtomicUsize::new(1);

/// The platform's memory-fault handler: the target of `token`, if it still lives.
fn dispatch(fault: &MemoryFault, token: usize) {
    let sink = lock(&SINKS)
        .iter()
        .find(|(t, _)| *t == token)
        .and_then(|(_, w)| w.upgrade());
    if let Some(sink) = sink {
        sink.on_memory_fault(fault);
    }
}

/// The memory-fault events of one runtime (module docs).
pub struct MemoryFaults<P: Platform + 'static> {
    platform: Arc<P>,
    /// In registration order.
    listeners: Mutex<Vec<FaultListener>>,
    /// The token of the installed platform handler; `None` until installed.
    token: Mutex<Option<usize>>,
    /// Told after the listeners (the copy engine).
    after: Mutex<Option<Weak<dyn FaultSink>>>,
}

impl<P: Platform + 'static> std::fmt::Debug for MemoryFaults<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryFaults")
            .field("listeners", &lock(&self.listeners).len())
            .field("installed", &lock(&self.token).is_some())
            .finish()
    }
}

impl<P: Platform + 'static> MemoryFaults<P> {
    /// No listener; nothing installed on `platform` yet.
    pub fn new(platform: Arc<P>) -> MemoryFaults<P> {
        MemoryFaults {
            platform,
            listeners: Mutex::new(Vec::new()),
            token: Mutex::new(None),
            after: Mutex::new(None),
        }
    }

    /// Registers `listener` (any number, as ROCR 5.2), installing the platform's handler if it
    /// is not yet. A platform that reports no faults ([`MemoryFaultReports`] absent) keeps the
    /// registration and never calls it (said at info level, once per install).
    pub fn add_listener(self: &Arc<Self>, listener: FaultListener) {
        self.watch();
        lock(&self.listeners).push(listener);
    }

    /// Sets what is told of each fault after the listeners.
    pub(crate) fn set_after(&self, sink: Weak<dyn FaultSink>) {
        *lock(&self.after) = Some(sink);
    }

    /// Installs the platform's memory-fault handler unless it is installed.
    pub fn watch(self: &Arc<Self>) {
        let mut token = lock(&self.token);
        if token.is_some() {
            return;
        }
        let t = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        let weak: Weak<dyn FaultSink> = Arc::downgrade(self) as Weak<dyn FaultSink>;
        lock(&SINKS).push((t, weak));
        *token = Some(t);
        let handler = MemoryFaultHandler {
            func: dispatch,
            data: t,
        };
        match self.platform.capabilities().memory_faults {
            Some(reports) => {
                if let Err(e) = reports.set_memory_fault_handler(Some(handler)) {
                    log::info!("hsa_amd_register_system_event_handler: {e}");
                }
            }
            None => log::info!(
                "hsa_amd_register_system_event_handler: the {} platform cannot report GPU \
                 memory faults",
                self.platform.device_name()
            ),
        }
    }

    /// Removes the platform's handler (the platform may outlive the runtime) and every
    /// listener.
    pub fn shut_down(&self) {
        if let Some(t) = lock(&self.token).take() {
            if let Some(reports) = self.platform.capabilities().memory_faults {
                let _ = reports.set_memory_fault_handler(None);
            }
            lock(&SINKS).retain(|(x, _)| *x != t);
        }
        lock(&self.listeners).clear();
        *lock(&self.after) = None;
    }
}

impl<P: Platform + 'static> FaultSink for MemoryFaults<P> {
    fn on_memory_fault(&self, fault: &MemoryFault) {
        // No lock held while listeners run: they may call back into the runtime.
        let listeners = lock(&self.listeners).clone();
        for l in listeners {
            l(fault);
        }
        // Then (as a queue's error callback comes after the handlers) the fault ends the GPU's
        // SDMA queue, if copies made one.
        let after = lock(&self.after).as_ref().and_then(Weak::upgrade);
        if let Some(after) = after {
            after.on_memory_fault(fault);
        }
    }
}
