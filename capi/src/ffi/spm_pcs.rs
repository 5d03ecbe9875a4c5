//! ROCR 7's streaming performance monitor (`hsa_amd_spm_*`, `hsa_ext_amd.h`) and PC sampling
//! (`hsa_ven_amd_pcs_*`, `hsa_ven_amd_pc_sampling.h`) exports.
//!
//! Both need amdkfd ioctls that upstream Linux does not have: ROCR 7 runs SPM through
//! `AMDKFD_IOC_RLC_SPM` and PC sampling through `AMDKFD_IOC_PC_SAMPLE` (interface 1.16 of
//! ROCm's own `kfd_ioctl.h`); neither is in the kernel's `kfd_ioctl.h` (1.23 in Debian sid),
//! and the emulated amdkfd does not serve them either. ROCR 7.2.4 then fails each request in
//! the driver, and so does this library, with the same statuses (checked on ROCR 7.2.4 under
//! kfd-emu by `kfd-emu/tests/rocm7.rs`, `rocr7_rest_statuses_equal_ours`):
//!
//! | call | a GPU agent | another handle |
//! |---|---|---|
//! | `hsa_amd_spm_acquire`, `_release` | `ERROR` (the SPM ioctl fails) | `INVALID_AGENT` |
//! | `hsa_amd_spm_set_dest_buffer` | `ERROR`; `*size_copied` 0, `*is_data_loss` false, `*timeout` kept (libhsakmt's writes after the failed ioctl) | `INVALID_AGENT` |
//! | `hsa_ven_amd_pcs_iterate_configuration` | `ERROR`: the driver offers no sampling method, the callback is never called | `INVALID_AGENT` |
//! | `hsa_ven_amd_pcs_create`, `_create_from_id` | `INVALID_ARGUMENT` for a NULL handle or callback or an unknown method, else `ERROR` (the driver cannot create a session) | `INVALID_AGENT` |
//! | `hsa_ven_amd_pcs_destroy`, `_start`, `_stop`, `_flush` | `INVALID_ARGUMENT`: no session can exist | |
//!
//! Differences in `hsa_ven_amd_pcs_create_from_id`, which ROCR 7 uses for a session amdkfd
//! already made for another client: ROCR 7.2.4 does not ask amdkfd there, sets up the
//! session's buffers and answers `SUCCESS` for a GPU (samples would come only from amdkfd),
//! and after a failed `hsa_ven_amd_pcs_create` it keeps the method's slot taken and answers
//! `OUT_OF_RESOURCES`; here it answers `ERROR`, since no sample can ever arrive
//! (`c/rocr7_api.c` checks it; the shared transcript leaves it out).
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;

use hsa_core::{bail, Error, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::state::{self, State};

/// `hsa_ven_amd_pcs_method_kind_t`: the host-trap and stochastic methods (0 and 1).
const PCS_METHODS: [u32; 2] = [0, 1];

/// The GPU agent `agent` names.
///
/// # Errors
/// `Status::InvalidAgent` for a handle that is no agent, or a CPU agent (ROCR 7 offers SPM and
/// PC sampling on GPU agents only).
fn gpu(st: &State, agent: u64) -> Result<u32, Error> {
    let a = agent_of(st, agent)?;
    if !a.is_gpu() {
        bail!(
            Status::InvalidAgent,
            "agent {agent:#x} is a CPU agent: SPM and PC sampling are a GPU's"
        );
    }
    Ok(a.node())
}

/// The error of an SPM request on a GPU agent.
fn no_spm(node: u32, what: &str) -> Error {
    hsa_core::error!(
        Status::Error,
        "SPM {what} on node {node}: amdkfd has no AMDKFD_IOC_RLC_SPM (not in the kernel's \
         kfd_ioctl.h), so the streaming performance monitor cannot be reached"
    )
}

/// `hsa_amd_spm_acquire` (ROCR 7): takes the GPU's streaming performance monitor. See the
/// module docs: `ERROR` for a GPU, as ROCR 7 answers when amdkfd refuses the request.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for a handle that is not a GPU agent; `ERROR`.
pub extern "C" fn hsa_amd_spm_acquire(preferred_agent: u64) -> HsaStatus {
    guard("hsa_amd_spm_acquire", || {
        let st = state::state()?;
        Err(no_spm(gpu(&st, preferred_agent)?, "acquire"))
    })
}

/// `hsa_amd_spm_release` (ROCR 7): gives the monitor back. As [`hsa_amd_spm_acquire`].
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for a handle that is not a GPU agent; `ERROR`.
pub extern "C" fn hsa_amd_spm_release(preferred_agent: u64) -> HsaStatus {
    guard("hsa_amd_spm_release", || {
        let st = state::state()?;
        Err(no_spm(gpu(&st, preferred_agent)?, "release"))
    })
}

/// `hsa_amd_spm_set_dest_buffer` (ROCR 7): where the monitor's samples go (`size_in_bytes`
/// at `dest`, waiting up to `*timeout` ms). For a GPU it writes 0 to `*size_copied` and
/// false to `*is_data_loss`, keeps `*timeout`, and returns `ERROR`, as ROCR 7 does when the
/// request fails in amdkfd.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for a handle that is not a GPU agent;
/// `INVALID_ARGUMENT` for a NULL `timeout`, `size_copied` or `is_data_loss` (ROCR would
/// dereference them); `ERROR`.
///
/// # Safety
/// `timeout` and `size_copied` are NULL or point to a `uint32_t`, `is_data_loss` to a `bool`.
pub unsafe extern "C" fn hsa_amd_spm_set_dest_buffer(
    preferred_agent: u64,
    size_in_bytes: usize,
    timeout: *mut u32,
    size_copied: *mut u32,
    dest: *mut c_void,
    is_data_loss: *mut bool,
) -> HsaStatus {
    let _ = (size_in_bytes, dest);
    guard("hsa_amd_spm_set_dest_buffer", || {
        let st = state::state()?;
        let node = gpu(&st, preferred_agent)?;
        non_null(timeout, "timeout")?;
        non_null(size_copied, "size_copied")?;
        non_null(is_data_loss, "is_data_loss")?;
        // SAFETY: non-NULL, the caller's uint32_t and bool.
        unsafe {
            size_copied.write(0);
            is_data_loss.write(false);
        }
        Err(no_spm(node, "set_dest_buffer"))
    })
}

/// The error of a PC-sampling request on a GPU agent.
fn no_pcs(node: u32) -> Error {
    hsa_core::error!(
        Status::Error,
        "PC sampling on node {node}: amdkfd has no AMDKFD_IOC_PC_SAMPLE (not in the kernel's \
         kfd_ioctl.h), so it offers no sampling method"
    )
}

/// `hsa_ven_amd_pcs_iterate_configuration` (ROCR 7): the sampling methods the GPU offers,
/// to `configuration_callback`. None is offered (module docs): `ERROR` for a GPU, and the
/// callback is not called, as ROCR 7 answers when amdkfd has no PC sampling.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for a handle that is not a GPU agent; `ERROR`.
pub extern "C" fn hsa_ven_amd_pcs_iterate_configuration(
    agent: u64,
    configuration_callback: *const c_void,
    callback_data: *mut c_void,
) -> HsaStatus {
    let _ = (configuration_callback, callback_data);
    guard("hsa_ven_amd_pcs_iterate_configuration", || {
        let st = state::state()?;
        Err(no_pcs(gpu(&st, agent)?))
    })
}

/// The checks both session constructors share, in ROCR 7's order (`PcsRuntime`): the agent,
/// then the handle and callback pointers, then the method; then the driver's refusal.
fn create(
    function: &str,
    agent: u64,
    method: u32,
    data_ready_callback: *const c_void,
    pc_sampling: *mut u64,
) -> HsaStatus {
    guard(function, || {
        let st = state::state()?;
        let node = gpu(&st, agent)?;
        non_null(pc_sampling, "pc_sampling")?;
        non_null(data_ready_callback, "data_ready_callback")?;
        if !PCS_METHODS.contains(&method) {
            bail!(
                Status::InvalidArgument,
                "method {method} is not an hsa_ven_amd_pcs_method_kind_t"
            );
        }
        Err(no_pcs(node))
    })
}

/// `hsa_ven_amd_pcs_create` (ROCR 7): a PC-sampling session. No session can be made here
/// (module docs).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for a handle that is not a GPU agent;
/// `INVALID_ARGUMENT` for a NULL `pc_sampling` or `data_ready_callback`, or an unknown
/// `method`; `ERROR` otherwise. `*pc_sampling` is not written.
#[allow(clippy::too_many_arguments)] // the C signature
pub extern "C" fn hsa_ven_amd_pcs_create(
    agent: u64,
    method: u32,
    units: u32,
    interval: usize,
    latency: usize,
    buffer_size: usize,
    data_ready_callback: *const c_void,
    client_callback_data: *mut c_void,
    pc_sampling: *mut u64,
) -> HsaStatus {
    let _ = (units, interval, latency, buffer_size, client_callback_data);
    create(
        "hsa_ven_amd_pcs_create",
        agent,
        method,
        data_ready_callback,
        pc_sampling,
    )
}

/// `hsa_ven_amd_pcs_create_from_id` (ROCR 7): a session over one amdkfd already made
/// (`pcs_id`). As [`hsa_ven_amd_pcs_create`].
///
/// # Errors (as status)
/// As [`hsa_ven_amd_pcs_create`].
#[allow(clippy::too_many_arguments)] // the C signature
pub extern "C" fn hsa_ven_amd_pcs_create_from_id(
    pcs_id: u32,
    agent: u64,
    method: u32,
    units: u32,
    interval: usize,
    latency: usize,
    buffer_size: usize,
    data_ready_callback: *const c_void,
    client_callback_data: *mut c_void,
    pc_sampling: *mut u64,
) -> HsaStatus {
    let _ = (
        pcs_id,
        units,
        interval,
        latency,
        buffer_size,
        client_callback_data,
    );
    create(
        "hsa_ven_amd_pcs_create_from_id",
        agent,
        method,
        data_ready_callback,
        pc_sampling,
    )
}

/// The answer of the session calls: no session exists (ROCR 7: "Cannot find PcSampling
/// session", `INVALID_ARGUMENT`).
fn no_session(function: &str, pc_sampling: u64) -> HsaStatus {
    guard(function, || {
        bail!(
            Status::InvalidArgument,
            "PC sampling session {pc_sampling:#x} does not exist (no session can be made here)"
        )
    })
}

/// `hsa_ven_amd_pcs_destroy` (ROCR 7).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT`: no session exists.
pub extern "C" fn hsa_ven_amd_pcs_destroy(pc_sampling: u64) -> HsaStatus {
    no_session("hsa_ven_amd_pcs_destroy", pc_sampling)
}

/// `hsa_ven_amd_pcs_start` (ROCR 7).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT`: no session exists.
pub extern "C" fn hsa_ven_amd_pcs_start(pc_sampling: u64) -> HsaStatus {
    no_session("hsa_ven_amd_pcs_start", pc_sampling)
}

/// `hsa_ven_amd_pcs_stop` (ROCR 7).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT`: no session exists.
pub extern "C" fn hsa_ven_amd_pcs_stop(pc_sampling: u64) -> HsaStatus {
    no_session("hsa_ven_amd_pcs_stop", pc_sampling)
}

/// `hsa_ven_amd_pcs_flush` (ROCR 7).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT`: no session exists.
pub extern "C" fn hsa_ven_amd_pcs_flush(pc_sampling: u64) -> HsaStatus {
    no_session("hsa_ven_amd_pcs_flush", pc_sampling)
}

export!(
    hsa_amd_spm_acquire,
    hsa_amd_spm_release,
    hsa_amd_spm_set_dest_buffer,
    hsa_ven_amd_pcs_iterate_configuration,
    hsa_ven_amd_pcs_create,
    hsa_ven_amd_pcs_create_from_id,
    hsa_ven_amd_pcs_destroy,
    hsa_ven_amd_pcs_start,
    hsa_ven_amd_pcs_stop,
    hsa_ven_amd_pcs_flush,
);
