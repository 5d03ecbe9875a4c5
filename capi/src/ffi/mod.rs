//! The exported C functions (`hsa.h`, `hsa_ext_amd.h` of ROCR 5.2, and `hsa_rt_ext.h`).
//!
//! Every function body runs inside `guard`: errors cross the boundary as `hsa_status_t`, a
//! panic as `HSA_STATUS_ERROR`. Every pointer argument is checked for NULL
//! (`HSA_STATUS_ERROR_INVALID_ARGUMENT`); handles are looked up, never dereferenced.
//! Set `HSA_RT_LOG=1` to print each failing call's error message on stderr (a switch,
//! `hsa_linux::env::switch`: unset, empty and `0` are off).
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
pub mod agent_ext;
pub mod copy;
pub mod deprecated;
pub mod executable_ext;
pub mod ext;
pub mod extension;
pub mod host_memory;
pub mod loader;
pub mod memory;
pub mod queue;
pub mod queue_ext;
pub mod signal;
pub mod signal_ext;
pub mod system;
pub mod unsupported;

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use hsa_core::{bail, Error, Status};

/// `hsa_status_t`.
pub type HsaStatus = u32;

/// Whether `HSA_RT_LOG` asks for error messages. A value the switch does not accept counts as
/// on, so that the error `hsa_init` returns for it is printed too.
fn log_enabled() -> bool {
    hsa_linux::env::switch(hsa_linux::env::LOG_ENV).unwrap_or(true)
}

pub(crate) fn log_error(function: &str, e: &Error) {
    if log_enabled() {
        // The error's Display names the status after the message: once.
        eprintln!("hsa-rt: {function}: {e}");
    }
}

/// Runs an API body: `Ok(status)` is returned as is (SUCCESS, or INFO_BREAK from an
/// iteration), `Err(e)` as `e.status()`, a panic as `HSA_STATUS_ERROR`.
pub(crate) fn guard(function: &str, body: impl FnOnce() -> Result<Status, Error>) -> HsaStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status.raw(),
        Ok(Err(e)) => {
            log_error(function, &e);
            e.status().raw()
        }
        Err(_) => {
            log_error(
                function,
                &hsa_core::error!(Status::Error, "internal panic caught"),
            );
            Status::Error.raw()
        }
    }
}

/// Runs a body that cannot report an error through its C signature (signal and queue index
/// operations return a value or nothing): errors and panics give `fallback`.
pub(crate) fn guard_value<T>(
    function: &str,
    fallback: T,
    body: impl FnOnce() -> Result<T, Error>,
) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
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
