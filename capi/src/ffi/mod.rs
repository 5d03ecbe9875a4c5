//! The exported C functions (`hsa.h`, `hsa_ext_amd.h` of ROCR 5.2, and `hsa_rt_ext.h`).
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
pub mod copy;
pub mod deprecated;
#[cfg(feature = "linux")]
pub mod executable_ext;
#[cfg(feature = "linux")]
pub mod ext;
#[cfg(feature = "linux")]
pub mod extension;
#[cfg(feature = "linux")]
pub mod host_memory;
#[cfg(feature = "linux")]
pub mod image;
#[cfg(feature = "linux")]
pub mod ipc;
pub mod loader;
pub mod memory;
pub mod queue;
#[cfg(feature = "linux")]
pub mod queue_ext;
pub mod signal;
#[cfg(feature = "linux")]
pub mod signal_ext;
pub mod system;
#[cfg(feature = "linux")]
pub mod unsupported;

/// What the shared C-ABI modules ask of the ROCR extensions (the AMD extension table, locked
/// host memory, pointer user data, deallocation callbacks): the Linux build's registries; the
/// bare-metal build provides none of those functions, so nothing is ever registered there.
#[cfg(feature = "linux")]
pub(crate) mod ext_hooks {
    pub(crate) use super::host_memory::LockedInfo;
    use crate::state::State;

    /// `HSA_*_INFO_EXTENSIONS`' bits of the extensions provided.
    pub(crate) fn extension_mask() -> [u8; 128] {
        super::extension::extension_mask()
    }

    /// `HSA_AGENT_INFO_EXTENSIONS` of GPU agent `agent`: the system's, without images where
    /// the agent has none.
    pub(crate) fn agent_extension_mask(agent: &hsa_core::runtime::Agent) -> [u8; 128] {
        super::extension::agent_extension_mask(agent)
    }

    /// The image extension's agent attributes (`HSA_EXT_AGENT_INFO_*`); `None` for others.
    ///
    /// # Safety
    /// `value` is as large as the attribute's type.
    pub(crate) unsafe fn image_agent_info(
        agent: &hsa_core::runtime::Agent,
        attribute: u32,
        value: *mut core::ffi::c_void,
    ) -> Option<()> {
        // SAFETY: the caller's contract.
        unsafe { super::image::agent_info(agent, attribute, value) }
    }

    /// Runs the deallocation callbacks of `[base, base + size)` before it is freed; `false`
    /// when it is being freed already (by a callback of the same free).
    pub(crate) fn before_free(st: &State, base: u64, size: u64) -> bool {
        st.ext.host.before_free(base, size)
    }

    /// Ends what [`before_free`] began, once the allocation at `base` is freed.
    pub(crate) fn after_free(st: &State, base: u64) {
        st.ext.host.after_free(base)
    }

    /// The host address of the agent pointer `ptr` of locked memory (`len` bytes), if it is one.
    pub(crate) fn agent_to_host(st: &State, ptr: u64, len: u64) -> Option<u64> {
        st.ext.host.agent_to_host(ptr, len)
    }

    /// `hsa_amd_pointer_info_set_userdata` of the allocation at `base` (0: none).
    pub(crate) fn user_data(st: &State, base: u64) -> usize {
        st.ext.host.user_data(base)
    }

    /// The locked range holding `ptr`, if any.
    pub(crate) fn locked_info(st: &State, ptr: u64) -> Option<LockedInfo> {
        st.ext.host.locked_info(ptr)
    }
}

/// The bare-metal build's answers: no extension tables, nothing locked or annotated.
#[cfg(not(feature = "linux"))]
pub(crate) mod ext_hooks {
    use crate::state::State;

    /// What `hsa_amd_pointer_info` reports for locked memory (never, here).
    pub(crate) struct LockedInfo {
        /// The locked host pointer.
        pub(crate) base: u64,
        /// Where the agents reach it.
        pub(crate) agent_base: u64,
        /// The locked size, bytes.
        pub(crate) size: u64,
        /// The user data of the base.
        pub(crate) user_data: usize,
        /// The GPU nodes that reach it.
        pub(crate) gpus: alloc::vec::Vec<hsa_core::NodeId>,
    }

    /// No extension is provided.
    pub(crate) fn extension_mask() -> [u8; 128] {
        [0; 128]
    }

    /// No extension is provided.
    pub(crate) fn agent_extension_mask(_: &hsa_core::runtime::Agent) -> [u8; 128] {
        [0; 128]
    }

    /// No image attributes: images are not provided.
    ///
    /// # Safety
    /// Nothing is written.
    pub(crate) unsafe fn image_agent_info(
        _: &hsa_core::runtime::Agent,
        _: u32,
        _: *mut core::ffi::c_void,
    ) -> Option<()> {
        None
    }

    /// No deallocation callbacks exist, so no free runs inside another.
    pub(crate) fn before_free(_: &State, _: u64, _: u64) -> bool {
        true
    }

    /// Nothing to end.
    pub(crate) fn after_free(_: &State, _: u64) {}

    /// Nothing is locked.
    pub(crate) fn agent_to_host(_: &State, _: u64, _: u64) -> Option<u64> {
        None
    }

    /// No user data is set.
    pub(crate) fn user_data(_: &State, _: u64) -> usize {
        0
    }

    /// Nothing is locked.
    pub(crate) fn locked_info(_: &State, _: u64) -> Option<LockedInfo> {
        None
    }
}
use core::ffi::c_void;

use hsa_core::{bail, Error, Status};

/// `hsa_status_t`.
pub type HsaStatus = u32;

/// Logs a failing call's error at info level (the caller gets the status; the message says
/// why): `<function>: <message> (<STATUS>)` — the error's Display names the status once.
pub(crate) fn log_error(function: &str, e: &Error) {
    log::info!("{function}: {e}");
}

/// Runs `body`, catching a panic where there is unwinding (a hosted build): `Err(())` for a
/// caught panic. Without an OS (`x86_64-unknown-none`, `panic = "abort"`) a panic ends in the
/// library's panic handler and never returns here.
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
