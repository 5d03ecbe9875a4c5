//! The exported C functions (`hsa.h`, `hsa_ext_amd.h` of ROCR 5.2, and `hsa_rt_ext.h`): thin
//! wrappers that check and convert their arguments (NULL pointers, handles looked up, C structs
//! of [`crate::abi`] into Rust values) and call the Rust APIs below them — the core runtime
//! (`hsa_core`), the runtime services (`hsa_runtime`: copy engine, images, async handlers,
//! IPC), the host-memory records (`hsa_core::runtime::host_memory`) and the registries of
//! `crate::state`. Nothing outside this module imports from it (`tests/structure.rs`).
//!
//! Every function body runs inside `guard`: errors cross the boundary as `hsa_status_t`, a
//! panic as `HSA_STATUS_ERROR`. Every pointer argument is checked for NULL
//! (`HSA_STATUS_ERROR_INVALID_ARGUMENT`); handles are looked up, never dereferenced.
//! Each failing call's error message is logged at info level through the `log` facade, to
//! the backend's logger (Linux: the stderr logger `hsa_init` installs, at the level of
//! `HSA_RT_LOG`, where `1` or `info` prints these; bare metal: the host's `log` callback,
//! when given).
#![allow(unsafe_code)]

/// Exports each named function as a global symbol of that name: an assembler alias
/// (`.set NAME, <mangled Rust symbol>`) that rustc's own cdylib version script does not list,
/// so `hsa_runtime64.map` puts it under `ROCR_1` (a `#[no_mangle]` symbol would be pinned to
/// the unversioned base by rustc's script). In the staticlib and rlib it is a plain global
/// symbol.
macro_rules! export {
    ($($name:ident),* $(,)?) => {$(
        ::core::arch::global_asm!(
            concat!(".globl ", stringify!($name)),
            concat!(".type ", stringify!($name), ",@function"),
            concat!(".set ", stringify!($name), ", {f}"),
            f = sym $name,
        );
    )*};
}

/// Exports each function a second time under another name (`alias => function`), as
/// [`export!`] does under its own name: for the names a later HSA version renamed, which ROCR
/// still exports (`deprecated`).
macro_rules! export_alias {
    ($($alias:ident => $name:ident),* $(,)?) => {$(
        ::core::arch::global_asm!(
            concat!(".globl ", stringify!($alias)),
            concat!(".type ", stringify!($alias), ",@function"),
            concat!(".set ", stringify!($alias), ", {f}"),
            f = sym $name,
        );
    )*};
}

pub mod agent;
#[cfg(feature = "linux")]
pub mod agent_ext;
#[cfg(feature = "linux")]
pub mod amd_loader;
#[cfg(feature = "baremetal")]
pub mod baremetal;
#[cfg(feature = "linux")]
pub mod copy;
pub mod deprecated;
#[cfg(feature = "linux")]
pub mod executable_ext;
#[cfg(feature = "linux")]
pub mod extension;
#[cfg(feature = "linux")]
pub mod host_memory;
#[cfg(feature = "linux")]
pub mod hsa_rt;
#[cfg(feature = "linux")]
pub mod image;
#[cfg(feature = "linux")]
pub mod ipc;
pub mod loader;
pub mod memory;
pub mod queue;
#[cfg(feature = "linux")]
pub mod queue_ext;
#[cfg(feature = "linux")]
pub mod r_debug;
#[cfg(feature = "linux")]
pub mod rocr7;
pub mod signal;
#[cfg(feature = "linux")]
pub mod signal_ext;
#[cfg(feature = "linux")]
pub mod spm_pcs;
pub mod system;
#[cfg(all(test, feature = "linux"))]
mod tests;
#[cfg(feature = "linux")]
pub mod unsupported;

use core::ffi::c_void;

use hsa_core::{bail, Error, Status};

pub(crate) use crate::abi::HsaStatus;

/// Logs a failing call's error at info level (the caller gets the status; the message says
/// why): `<function>: <message> (<STATUS>)` — the error's Display names the status once.
pub(crate) fn log_error(function: &str, e: &Error) {
    log::info!("{function}: {e}");
}

/// Runs `body`, catching a panic where there is unwinding (a hosted build): `Err(())` for a
/// caught panic. Without an OS (`x86_64-unknown-none`, `panic = "abort"`) a panic ends in the
/// library's panic handler and never returns here.
#[inline(always)]
fn catch<R>(body: impl FnOnce() -> R) -> Result<R, ()> {
    #[cfg(not(target_os = "none"))]
    return std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).map_err(|_| ());
    #[cfg(target_os = "none")]
    return Ok(body());
}

/// Runs an API body: `Ok(status)` is returned as is (SUCCESS, or INFO_BREAK from an
/// iteration), `Err(e)` as `e.status()`, a panic as `HSA_STATUS_ERROR`.
pub(crate) fn guard(function: &str, body: impl FnOnce() -> Result<Status, Error>) -> HsaStatus {
    match catch(body) {
        Ok(Ok(status)) => status.raw(),
        Ok(Err(e)) => {
            log_error(function, &e);
            e.status().raw()
        }
        Err(_) => {
            // A bug of the library, not of the caller: logged as an error.
            log::error!(
                "{function}: {}",
                hsa_core::error!(Status::Error, "internal panic caught")
            );
            Status::Error.raw()
        }
    }
}

/// Runs a body that cannot report an error through its C signature (signal and queue index
/// operations return a value or nothing): errors and panics give `fallback`.
#[inline(always)]
pub(crate) fn guard_value<T>(
    function: &str,
    fallback: T,
    body: impl FnOnce() -> Result<T, Error>,
) -> T {
    match catch(body) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            log_error(function, &e);
            fallback
        }
        Err(_) => fallback,
    }
}

/// Checks an argument pointer.
///
/// # Errors
/// `Status::InvalidArgument` naming `what` when `p` is NULL.
pub(crate) fn non_null<T>(p: *const T, what: &str) -> Result<(), Error> {
    if p.is_null() {
        bail!(Status::InvalidArgument, "{what} is NULL");
    }
    Ok(())
}

/// Writes `v` to the attribute output `out`.
///
/// # Safety
/// `out` is non-NULL and points to writable memory of at least `size_of::<T>()` bytes, as the
/// header documents for the attribute (the caller's contract in C); no alignment is assumed.
pub(crate) unsafe fn put<T: Copy>(out: *mut c_void, v: T) {
    // SAFETY: per this function's contract; unaligned write as the caller's buffer may be a
    // byte array.
    unsafe { out.cast::<T>().write_unaligned(v) }
}

/// Writes `s` as a NUL-padded `char[N]` (truncated to N-1 bytes + NUL).
///
/// # Safety
/// As [`put`], for `N` bytes.
pub(crate) unsafe fn put_str<const N: usize>(out: *mut c_void, s: &str) {
    let mut buf = [0u8; N];
    let n = s.len().min(N - 1);
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    // SAFETY: per this function's contract.
    unsafe { put(out, buf) }
}

/// An `INVALID_ARGUMENT` error for an attribute an object does not have.
pub(crate) fn bad_attribute(what: &str, attribute: u32) -> Error {
    hsa_core::error!(
        Status::InvalidArgument,
        "{what} attribute {attribute:#x} is not supported"
    )
}

/// `HSA_SYSTEM_INFO_EXTENSIONS`' bits of the extensions this build provides: the Linux build's
/// ([`extension::extension_mask`]); the bare-metal build exports none of their functions.
pub(crate) fn extension_mask() -> [u8; 128] {
    #[cfg(feature = "linux")]
    return extension::extension_mask();
    #[cfg(not(feature = "linux"))]
    return [0; 128];
}

/// `HSA_AGENT_INFO_EXTENSIONS` of GPU agent `agent` in this build (see [`extension_mask`]).
pub(crate) fn agent_extension_mask(agent: &hsa_core::runtime::Agent) -> [u8; 128] {
    #[cfg(feature = "linux")]
    return extension::agent_extension_mask(agent);
    #[cfg(not(feature = "linux"))]
    {
        let _ = agent;
        [0; 128]
    }
}

/// The image extension's agent attributes (`HSA_EXT_AGENT_INFO_*`) in this build; `None` for
/// other attributes, and for all of them without images (the bare-metal build).
///
/// # Safety
/// `value` is as large as the attribute's type.
pub(crate) unsafe fn image_agent_info(
    agent: &hsa_core::runtime::Agent,
    attribute: u32,
    value: *mut c_void,
) -> Option<()> {
    #[cfg(feature = "linux")]
    // SAFETY: the caller's contract.
    return unsafe { image::agent_info(agent, attribute, value) };
    #[cfg(not(feature = "linux"))]
    {
        let _ = (agent, attribute, value);
        None
    }
}
