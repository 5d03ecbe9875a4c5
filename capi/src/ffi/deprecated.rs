//! The deprecated names ROCR 5.2 still exports (`HSA_DEPRECATED` in its `hsa.h`; `nm -D` of
//! Debian's `libhsa-runtime64.so.1`, package libhsa-runtime64-1 5.2.3).
//!
//! - HSA 1.1 renamed the memory orders of the signal and queue operations (`_acquire` →
//!   `_scacquire`, `_release` → `_screlease`, `_acq_rel` → `_scacq_screl`): the old names are
//!   second symbols of the same functions (`export_alias!` in `signal.rs` and `queue.rs`, next
//!   to the functions: an alias must be assembled with its target), as ROCR's forward to the
//!   new ones.
//! - `hsa_executable_create`, `hsa_executable_get_symbol`, `hsa_isa_get_info`,
//!   `hsa_isa_compatible` and `hsa_agent_get_exception_policies` check their arguments as
//!   ROCR 5.2 (`core/runtime/hsa.cpp`) and call the current API.
//!
//! The HSA 1.0 code object API (`hsa_code_object_*`, `hsa_code_symbol_get_info`,
//! `hsa_executable_load_code_object`) is in `executable_ext`; the deprecated extension queries
//! (`hsa_system_extension_supported`, `hsa_system_get_extension_table`,
//! `hsa_agent_extension_supported`) are in `extension`, with their current forms.
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::ffi::{c_char, c_void, CStr};

use hsa_core::{bail, Status};

use super::agent::{agent_of, hsa_isa_get_info_alt, isa_agent};
use super::loader::{
    hsa_executable_create_alt, hsa_executable_freeze, hsa_executable_get_symbol_by_name,
};
use super::{guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state;

/// `HSA_EXECUTABLE_STATE_UNFROZEN` (`hsa_executable_state_t`).
const EXECUTABLE_STATE_UNFROZEN: u32 = 0;
/// `HSA_EXECUTABLE_STATE_FROZEN` (`hsa_executable_state_t`).
const EXECUTABLE_STATE_FROZEN: u32 = 1;
/// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT`.
const FLOAT_ROUNDING_MODE_DEFAULT: u32 = 0;

/// The call convention count of an ISA (`HSA_ISA_INFO_CALL_CONVENTION_COUNT`): one, as ROCR.
const CALL_CONVENTIONS: u32 = 1;
/// `HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE`: 64 work-items (every gfx9 ISA; ROCR
/// 5.2 reports 64 for every ISA).
const CALL_CONVENTION_WAVEFRONT_SIZE: u32 = 64;
/// `HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT`: the fixed 40 ROCR 5.2
/// reports for every ISA (`core/runtime/isa.cpp`).
const CALL_CONVENTION_WAVEFRONTS_PER_CU: u32 = 40;

/// `hsa_executable_create` (deprecated): `hsa_executable_create_alt` with the default float
/// rounding mode, frozen at once when `executable_state` is `FROZEN`.
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a profile other than BASE (0) or FULL (1), a state other than
/// UNFROZEN (0) or FROZEN (1), or a NULL `executable`.
///
/// # Safety
/// `executable` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_create(
    profile: u32,
    executable_state: u32,
    options: *const c_char,
    executable: *mut u64,
) -> HsaStatus {
    let checked = guard("hsa_executable_create", || {
        state::state()?;
        if profile > 1 {
            bail!(Status::InvalidArgument, "profile {profile} is not 0 or 1");
        }
        if executable_state != EXECUTABLE_STATE_UNFROZEN
            && executable_state != EXECUTABLE_STATE_FROZEN
        {
            bail!(
                Status::InvalidArgument,
                "executable_state {executable_state} is not UNFROZEN (0) or FROZEN (1)"
            );
        }
        non_null(executable, "executable")?;
        Ok(Status::Success)
    });
    if checked != Status::Success.raw() {
        return checked;
    }
    // SAFETY: `executable` is non-NULL and writable (the caller's contract).
    let status = unsafe {
        hsa_executable_create_alt(profile, FLOAT_ROUNDING_MODE_DEFAULT, options, executable)
    };
    if status != Status::Success.raw() || executable_state != EXECUTABLE_STATE_FROZEN {
        return status;
    }
    // SAFETY: hsa_executable_create_alt succeeded: it wrote the handle.
    hsa_executable_freeze(unsafe { executable.read() }, core::ptr::null())
}

/// `hsa_executable_get_symbol` (deprecated): `hsa_executable_get_symbol_by_name` for `agent`
/// with the name `module_name::symbol_name` (just `symbol_name` when `module_name` is NULL or
/// empty); `call_convention` is ignored, as in ROCR. Every symbol of a code object is an agent
/// symbol here, so `agent` is always passed on.
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a NULL `symbol_name` or `symbol`; `INVALID_SYMBOL_NAME` for an empty
/// name or one not found; `INVALID_EXECUTABLE`, `INVALID_AGENT` for unknown handles.
///
/// # Safety
/// `module_name` is NULL or NUL-terminated; `symbol_name` is NULL or NUL-terminated;
/// `symbol` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_get_symbol(
    executable: u64,
    module_name: *const c_char,
    symbol_name: *const c_char,
    agent: u64,
    call_convention: i32,
    symbol: *mut u64,
) -> HsaStatus {
    let _ = call_convention;
    let mut mangled = Vec::new();
    let checked = guard("hsa_executable_get_symbol", || {
        state::state()?;
        non_null(symbol_name, "symbol_name")?;
        non_null(symbol, "symbol")?;
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let name = unsafe { CStr::from_ptr(symbol_name) }.to_bytes();
        if name.is_empty() {
            bail!(Status::InvalidSymbolName, "symbol_name is empty");
        }
        if !module_name.is_null() {
            // SAFETY: non-NULL and NUL-terminated per the caller's contract.
            let module = unsafe { CStr::from_ptr(module_name) }.to_bytes();
            if !module.is_empty() {
                mangled.extend_from_slice(module);
                mangled.extend_from_slice(b"::");
            }
        }
        mangled.extend_from_slice(name);
        mangled.push(0);
        Ok(Status::Success)
    });
    if checked != Status::Success.raw() {
        return checked;
    }
    // SAFETY: `mangled` is NUL-terminated; `&agent` is a readable hsa_agent_t; `symbol` is
    // non-NULL and writable (checked, and the caller's contract).
    unsafe {
        hsa_executable_get_symbol_by_name(
            executable,
            mangled.as_ptr().cast::<c_char>(),
            &agent,
            symbol,
        )
    }
}

/// `hsa_isa_get_info` (deprecated): `hsa_isa_get_info_alt` for `index` 0, plus the three
/// call-convention attributes with ROCR 5.2's values (count 1, wavefront size 64, 40
/// wavefronts per compute unit).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a NULL `value` or an unknown attribute; `INVALID_INDEX` for an
/// `index` other than 0; `INVALID_ISA` for an unknown handle.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_isa_get_info(
    isa: u64,
    attribute: u32,
    index: u32,
    value: *mut c_void,
) -> HsaStatus {
    let checked = guard("hsa_isa_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        if index != 0 {
            bail!(
                Status::InvalidIndex,
                "index {index}: an ISA has one call convention, index 0"
            );
        }
        isa_agent(&st, isa)?;
        let fixed = match attribute {
            HSA_ISA_INFO_CALL_CONVENTION_COUNT => CALL_CONVENTIONS,
            HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE => CALL_CONVENTION_WAVEFRONT_SIZE,
            HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT => {
                CALL_CONVENTION_WAVEFRONTS_PER_CU
            }
            _ => return Ok(Status::InfoBreak),
        };
        // SAFETY: `value` is non-NULL and holds a uint32_t (the attribute's type).
        unsafe { put::<u32>(value, fixed) };
        Ok(Status::Success)
    });
    if checked != Status::InfoBreak.raw() {
        return checked;
    }
    // SAFETY: forwarded under the caller's contract.
    unsafe { hsa_isa_get_info_alt(isa, attribute, value) }
}

/// `hsa_isa_compatible` (deprecated): whether code for `code_object_isa` runs on an agent of
/// `agent_isa` (same processor, and every feature the code object fixes — `sramecc`, `xnack`
/// — set the same way on the agent; AMDGPUUsage "Target ID").
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a NULL `result`; `INVALID_ISA` for an unknown handle.
///
/// # Safety
/// `result` is NULL or a writable `bool`.
pub unsafe extern "C" fn hsa_isa_compatible(
    code_object_isa: u64,
    agent_isa: u64,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_isa_compatible", || {
        let st = state::state()?;
        non_null(result, "result")?;
        let (_, code) = super::agent::isa_of(&st, code_object_isa)?;
        let (_, agent) = super::agent::isa_of(&st, agent_isa)?;
        let compatible = code.check_runs_on(&agent).is_ok();
        // SAFETY: non-NULL, a writable bool per the caller's contract.
        unsafe { result.write(compatible) };
        Ok(Status::Success)
    })
}

/// `hsa_agent_get_exception_policies` (deprecated): no exception policy (`*mask` = 0), as
/// ROCR 5.2.
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a NULL `mask` or a profile other than BASE (0) or FULL (1);
/// `INVALID_AGENT` for an unknown agent.
///
/// # Safety
/// `mask` is NULL or a writable `uint16_t`.
pub unsafe extern "C" fn hsa_agent_get_exception_policies(
    agent: u64,
    profile: u32,
    mask: *mut u16,
) -> HsaStatus {
    guard("hsa_agent_get_exception_policies", || {
        let st = state::state()?;
        non_null(mask, "mask")?;
        if profile > 1 {
            bail!(Status::InvalidArgument, "profile {profile} is not 0 or 1");
        }
        agent_of(&st, agent)?;
        // SAFETY: non-NULL, a writable uint16_t per the caller's contract.
        unsafe { mask.write(0) };
        Ok(Status::Success)
    })
}

export!(
    hsa_executable_create,
    hsa_executable_get_symbol,
    hsa_isa_get_info,
    hsa_isa_compatible,
    hsa_agent_get_exception_policies,
);
