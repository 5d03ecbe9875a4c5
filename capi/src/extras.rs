//! What the ROCR extension functions keep per runtime (one [`Extras`] in each `State`).
//!
//! `State::drop` calls [`Extras::shut_down`] before anything else, so that whatever here
//! borrows the runtime (signals of async handlers, platform registrations of locked memory; pending copies hold the runtime itself) is gone before the runtime is freed.

use crate::ffi::agent_ext::AgentExtras;
use crate::ffi::copy::CopyEngine;
use crate::ffi::executable_ext::CodeObjects;
use crate::ffi::host_memory::HostMemory;
use crate::ffi::image::Images;
use crate::ffi::ipc::Ipc;
use crate::ffi::queue_ext::QueueExtras;
use crate::ffi::signal_ext::AsyncHandlers;
use crate::state::State;

/// The per-runtime state of the ROCR extension functions.
#[derive(Default)]
pub(crate) struct Extras {
    /// `hsa_amd_signal_async_handler`, `hsa_amd_async_function`, system event handlers.
    pub(crate) handlers: AsyncHandlers,
    /// `hsa_amd_memory_async_copy` and copy profiling.
    pub(crate) copy: CopyEngine,
    /// CU masks and clock samples.
    pub(crate) queues: QueueExtras,
    /// Locked host memory, pointer user data, deallocation callbacks.
    pub(crate) host: HostMemory,
    /// Coherency types and cache names.
    pub(crate) agents: AgentExtras,
    /// HSA 1.0 code objects (`hsa_code_object_deserialize`).
    pub(crate) code_objects: CodeObjects,
    /// IPC memory this process attached.
    pub(crate) ipc: Ipc,
    /// Images and samplers (`hsa_ext_image_*`).
    pub(crate) images: Images,
}

impl Extras {
    /// Stops what runs on behalf of the runtime and releases what borrows it.
    pub(crate) fn shut_down(&self, st: &State) {
        self.handlers.shut_down(st);
        self.host.shut_down(st);
        self.ipc.shut_down(st);
    }
}
