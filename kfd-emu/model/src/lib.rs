//! # libhsa_emu_model.so
//!
//! hsa-emu's emulated GPU as a *model library* for libhsakmt's model mode: the second way,
//! after `kfd-emu`'s preloaded `/dev/kfd`, to run ROCm's own user space on the emulated
//! device, and one that needs no `LD_PRELOAD` and no amdkfd model of ours (libhsakmt answers
//! the KFD ioctls itself). ROCR 7.2.4 loads it when
//!
//! - `HSA_MODEL_TOPOLOGY` names a topology directory in amdkfd's sysfs layout whose GPU nodes
//!   have `gpu_id` = node index + 1 (`kfd-emu --model` writes one and sets both variables), and
//! - `HSA_MODEL_LIB` names this library.
//!
//! libhsakmt `dlopen`s it, calls [`get_hsakmt_model_functions`] and checks the interface
//! version ([`hsa_emu::device::model::INTERFACE_VERSION`], 0.4). What each entry point does,
//! and what the interface leaves out, is [`hsa_emu::device::model`]'s; this crate is only the
//! C ABI (`hsakmtmodeliface.h`'s `struct hsakmt_model_functions`). The entry points return
//! nothing or a pointer, so an error (a bad range, a queue the emulated device refuses) is
//! written to stderr prefixed `hsa-emu model:`, and `create`/`register_queue` return null,
//! which libhsakmt reports and aborts on.

use std::ffi::c_void;
use std::sync::{Mutex, OnceLock, PoisonError};

use hsa_emu::device::model::{ModelGpu, ModelProcess, ModelQueue, QueueInfo, INTERFACE_VERSION};

/// `struct hsakmt_model_queue_info` (interface 0.4): GPU virtual addresses, the doorbell
/// pointer (libhsakmt leaves it null), the ring size in bytes and the KFD queue type.
#[repr(C)]
struct CQueueInfo {
    ring_base_address: u64,
    write_pointer_address: u64,
    read_pointer_address: u64,
    doorbell: *mut u64,
    ring_size: u32,
    queue_type: u32,
}

type SetEventFn = unsafe extern "C" fn(data: *mut c_void, event_id: u32);

/// `struct hsakmt_model_functions` of interface 0.4, field for field.
#[repr(C)]
struct Functions {
    version_major: u32,
    version_minor: u32,
    create: unsafe extern "C" fn() -> *mut c_void,
    destroy: unsafe extern "C" fn(*mut c_void),
    set_global_aperture: unsafe extern "C" fn(*mut c_void, *mut c_void, u64),
    alloced_memory: unsafe extern "C" fn(*mut c_void, *mut c_void, u64, u32),
    freed_memory: unsafe extern "C" fn(*mut c_void, *mut c_void, u64),
    set_notify_event:
        unsafe extern "C" fn(*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>, *mut c_void),
    set_wait_event: unsafe extern "C" fn(
        *mut c_void,
        Option<unsafe extern "C" fn(*mut c_void, u64, u64)>,
        *mut c_void,
    ),
    register_queue: unsafe extern "C" fn(*mut c_void, *mut CQueueInfo) -> *mut c_void,
    set_set_event: unsafe extern "C" fn(*mut c_void, Option<SetEventFn>, *mut c_void),
    destroy_queue: unsafe extern "C" fn(*mut c_void, *mut c_void),
}

static FUNCTIONS: Functions = Functions {
    version_major: INTERFACE_VERSION.0,
    version_minor: INTERFACE_VERSION.1,
    create,
    destroy,
    set_global_aperture,
    alloced_memory,
    freed_memory,
    set_notify_event,
    set_wait_event,
    register_queue,
    set_set_event,
    destroy_queue,
};

/// The process's emulated GPUs, made at the first `create` from `$HSA_MODEL_TOPOLOGY`.
static PROCESS: OnceLock<Result<ModelProcess, String>> = OnceLock::new();

/// Serialises the calls of the host's `set_event`: libhsakmt's updates its event table
/// without a lock of its own, and every queue's thread may signal.
static SET_EVENT: Mutex<()> = Mutex::new(());

/// The model interface's one export: the table of entry points and the interface version
/// (`get_hsakmt_model_functions_t`). The table lives as long as the library.
#[no_mangle]
pub extern "C" fn get_hsakmt_model_functions() -> *const c_void {
    std::ptr::from_ref(&FUNCTIONS).cast()
}

fn complain(what: &str, e: &dyn std::fmt::Display) {
    eprintln!("hsa-emu model: {what}: {e}");
}

/// # Safety
/// `model` is null or a pointer `create` returned and `destroy` has not freed.
unsafe fn gpu<'a>(model: *mut c_void) -> Option<&'a ModelGpu> {
    // SAFETY: per this function's contract, a non-null `model` is a live `ModelGpu` that
    // `create` leaked with `Box::into_raw`; nothing takes it mutably.
    unsafe { model.cast::<ModelGpu>().as_ref() }
}

unsafe extern "C" fn create() -> *mut c_void {
    let process = PROCESS.get_or_init(|| {
        // The emulated device logs through `log` (a queue's error with its detail): printed
        // on stderr at the level of HSA_RT_LOG, as hsa-rt's C library and kfd-emu do.
        if let Err(e) = hsa_linux::logger::install_stderr_logger() {
            complain("HSA_RT_LOG", &e);
        }
        ModelProcess::from_env().map_err(|e| e.to_string())
    });
    let gpu = match process {
        Ok(p) => p.create_gpu(),
        Err(e) => {
            complain("create", e);
            return std::ptr::null_mut();
        }
    };
    match gpu {
        Ok(g) => Box::into_raw(Box::new(g)).cast(),
        Err(e) => {
            complain("create", &e);
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn destroy(model: *mut c_void) {
    if !model.is_null() {
        // SAFETY: libhsakmt passes what `create` returned, once; `Box::into_raw` made it.
        drop(unsafe { Box::from_raw(model.cast::<ModelGpu>()) });
    }
}

unsafe extern "C" fn set_global_aperture(model: *mut c_void, base: *mut c_void, size: u64) {
    // SAFETY: libhsakmt passes what `create` returned.
    if let Some(g) = unsafe { gpu(model) } {
        g.set_global_aperture(base as u64, size);
    }
}

unsafe extern "C" fn alloced_memory(model: *mut c_void, va: *mut c_void, size: u64, flags: u32) {
    // SAFETY: libhsakmt passes what `create` returned.
    if let Some(g) = unsafe { gpu(model) } {
        if let Err(e) = g.alloced_memory(va as u64, size, flags) {
            complain("alloced_memory", &e);
        }
    }
}

unsafe extern "C" fn freed_memory(model: *mut c_void, va: *mut c_void, size: u64) {
    // SAFETY: libhsakmt passes what `create` returned.
    if let Some(g) = unsafe { gpu(model) } {
        if let Err(e) = g.freed_memory(va as u64, size) {
            complain("freed_memory", &e);
        }
    }
}

/// Deprecated in the interface ("remove this") and never called by libhsakmt 7.2.4; the
/// emulated GPU has nothing to notify through it (signal events go through `set_set_event`).
unsafe extern "C" fn set_notify_event(
    _model: *mut c_void,
    _callback: Option<unsafe extern "C" fn(*mut c_void)>,
    _data: *mut c_void,
) {
}

/// The host's way for a model to wait for one of its events; the emulated GPU never waits
/// for a host event (a barrier packet's dependency is a signal in memory, which its command
/// processor polls), so the callback is not kept.
unsafe extern "C" fn set_wait_event(
    _model: *mut c_void,
    _callback: Option<unsafe extern "C" fn(*mut c_void, u64, u64)>,
    _data: *mut c_void,
) {
}

unsafe extern "C" fn register_queue(model: *mut c_void, info: *mut CQueueInfo) -> *mut c_void {
    // SAFETY: libhsakmt passes what `create` returned.
    let Some(g) = (unsafe { gpu(model) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: libhsakmt passes its own filled `hsakmt_model_queue_info`, live for the call.
    let Some(info) = (unsafe { info.as_ref() }) else {
        complain("register_queue", &"no queue info");
        return std::ptr::null_mut();
    };
    let info = QueueInfo {
        ring_base_address: info.ring_base_address,
        write_pointer_address: info.write_pointer_address,
        read_pointer_address: info.read_pointer_address,
        ring_size: info.ring_size,
        queue_type: info.queue_type,
    };
    match g.register_queue(&info) {
        Ok(q) => Box::into_raw(Box::new(q)).cast(),
        Err(e) => {
            complain("register_queue", &e);
            std::ptr::null_mut()
        }
    }
}

/// The host's `set_event` and its data pointer, as one value a queue's thread can call.
struct HostSetEvent {
    callback: SetEventFn,
    data: *mut c_void,
}

// SAFETY: the data pointer is libhsakmt's opaque argument to its own callback, which it
// gives for calls from the model's threads (the interface's purpose); calls are serialised by
// SET_EVENT.
unsafe impl Send for HostSetEvent {}
// SAFETY: as for Send: the value is only read, and each call holds SET_EVENT.
unsafe impl Sync for HostSetEvent {}

impl HostSetEvent {
    fn call(&self, event_id: u32) {
        let _one = SET_EVENT.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the host registered `callback` with `data` for exactly this call.
        unsafe { (self.callback)(self.data, event_id) }
    }
}

unsafe extern "C" fn set_set_event(
    model: *mut c_void,
    callback: Option<SetEventFn>,
    data: *mut c_void,
) {
    // SAFETY: libhsakmt passes what `create` returned.
    let (Some(g), Some(callback)) = (unsafe { gpu(model) }, callback) else {
        return;
    };
    let host = HostSetEvent { callback, data };
    g.set_event_sink(Box::new(move |id| host.call(id)));
}

unsafe extern "C" fn destroy_queue(model: *mut c_void, queue: *mut c_void) {
    // SAFETY: libhsakmt passes what `create` returned.
    let Some(g) = (unsafe { gpu(model) }) else {
        return;
    };
    if queue.is_null() {
        return;
    }
    // SAFETY: libhsakmt passes what `register_queue` returned, once (it forgets the queue).
    let q = unsafe { Box::from_raw(queue.cast::<ModelQueue>()) };
    if let Err(e) = g.destroy_queue(*q) {
        complain("destroy_queue", &e);
    }
}
