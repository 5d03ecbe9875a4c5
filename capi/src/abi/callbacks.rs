//! The C callback types the API takes (`hsa.h`, `hsa_ext_amd.h`, `hsa_ven_amd_loader.h`):
//! each called with the application's `data` last, returning an `hsa_status_t` where the
//! header says so.

#[allow(unused_imports)]
use super::*;
use core::ffi::c_void;

/// A C callback taking a handle and the user's data.
pub type HandleCallback = unsafe extern "C" fn(u64, *mut c_void) -> u32;

/// The C symbol iteration callback.
pub type SymbolCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

/// The agent-symbol iteration callback (`executable, agent, symbol, data`).
pub type AgentSymbolCallback = unsafe extern "C" fn(u64, u64, u64, *mut c_void) -> u32;

/// The C queue error callback: `void (*)(hsa_status_t, hsa_queue_t*, void*)`.
pub type QueueErrorFn = unsafe extern "C" fn(u32, *mut c_void, *mut c_void);

/// The program-symbol iteration callback (`executable, symbol, data`).
pub type ProgramSymbolCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

/// The allocation callback of `hsa_code_object_serialize`.
pub type SerializeAlloc = unsafe extern "C" fn(usize, u64, *mut *mut c_void) -> u32;

/// The code-symbol iteration callback (`code_object, symbol, data`).
pub type CodeSymbolCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

/// The allocation callback of `hsa_amd_pointer_info`.
pub type AllocFn = unsafe extern "C" fn(usize) -> *mut c_void;

/// `hsa_amd_deallocation_callback_t`: `void (*)(void* ptr, void* user_data)`.
pub type DeallocationCallback = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// `hsa_amd_signal_handler`: `bool (*)(hsa_signal_value_t value, void* arg)`.
pub type SignalHandler = unsafe extern "C" fn(i64, *mut c_void) -> bool;

/// `hsa_amd_async_function`'s callback: `void (*)(void* arg)`.
pub type AsyncFunction = unsafe extern "C" fn(*mut c_void);

/// `hsa_amd_system_event_callback_t`: `hsa_status_t (*)(const hsa_amd_event_t*, void*)`.
pub type SystemEventCallback = unsafe extern "C" fn(*const c_void, *mut c_void) -> u32;

/// An executable-iteration callback: `hsa_status_t (*)(hsa_executable_t, void*)`.
pub type ExecutableCallback = unsafe extern "C" fn(u64, *mut c_void) -> u32;

/// A loaded-code-object callback: `hsa_status_t (*)(hsa_executable_t,
/// hsa_loaded_code_object_t, void*)`.
pub type LoadedCodeObjectCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;
