//! Functions ROCR 5.2 exports for features this runtime does not provide. Each checks its
//! arguments as ROCR does and then returns the status ROCR 5.2 returns when the feature is
//! absent from the machine or the build, so that an application's fallback path is the one it
//! takes on such a ROCR:
//!
//! | feature | functions | status | ROCR 5.2 without it |
//! |---|---|---|---|
//! | finalizer | `hsa_ext_program_*` | `NOT_INITIALIZED` | the finalizer table's `hsa_ext_null` entries |
//! | graphics interop | `hsa_amd_interop_map_buffer`; `hsa_amd_interop_unmap_buffer` | `ERROR`; `SUCCESS` | `hsaKmtRegisterGraphicsHandleToNodes` failing; unmap ignores its result |
//! | SVM (KFD `SVM` ioctl) | `hsa_amd_svm_attributes_set/get` | `ERROR` after the attribute checks | `hsaKmtSVMSetAttr`/`GetAttr` failing |
//! | migration | `hsa_amd_memory_migrate`, `hsa_amd_memory_pool_can_migrate` (`*result` false) | `OUT_OF_RESOURCES` | `MemoryRegion::Migrate`/`CanMigrate` (not implemented in ROCR either) |
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;

use hsa_core::runtime::PoolHandle;
use hsa_core::{bail, Error, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state;

/// Defines functions that return `NOT_INITIALIZED` whatever their arguments, as ROCR 5.2's
/// `hsa_ext_null` table entries do when the finalizer is not loaded (it
/// does not even check that the runtime is initialised). They are declared without
/// parameters: the C caller's arguments (in registers or its own stack area, caller-cleaned in
/// the C ABI) are never read.
macro_rules! not_loaded {
    ($what:literal: $($name:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: ", $what, " are not provided: `NOT_INITIALIZED`, as ROCR 5.2 without them.")]
        pub extern "C" fn $name() -> HsaStatus {
            Status::NotInitialized.raw()
        }
        export!($name);
    )*};
}

not_loaded!(
    "the finalizer and HSAIL programs":
    hsa_ext_program_create,
    hsa_ext_program_destroy,
    hsa_ext_program_add_module,
    hsa_ext_program_iterate_modules,
    hsa_ext_program_get_info,
    hsa_ext_program_finalize,
);

/// `hsa_amd_interop_map_buffer`: no graphics buffer can be imported here.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `agents`/`size`/`ptr`, `flags` other than 0
/// or `num_agents` 0; `INVALID_AGENT`; then `ERROR` (ROCR's status when
/// `hsaKmtRegisterGraphicsHandleToNodes` fails).
///
/// # Safety
/// `agents` is NULL or holds `num_agents` handles.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_interop_map_buffer(
    num_agents: u32,
    agents: *const u64,
    interop_handle: i32,
    flags: u32,
    size: *mut usize,
    ptr: *mut *mut c_void,
    metadata_size: *mut usize,
    metadata: *mut *const c_void,
) -> HsaStatus {
    let _ = (metadata_size, metadata);
    guard("hsa_amd_interop_map_buffer", || {
        let st = state::state()?;
        non_null(agents, "agents")?;
        non_null(size, "size")?;
        non_null(ptr, "ptr")?;
        if flags != 0 {
            bail!(Status::InvalidArgument, "flags {flags:#x} must be 0");
        }
        if num_agents == 0 {
            bail!(Status::InvalidArgument, "num_agents is 0");
        }
        // SAFETY: non-NULL, `num_agents` handles per the caller's contract.
        for a in unsafe { std::slice::from_raw_parts(agents, num_agents as usize) } {
            agent_of(&st, *a)?;
        }
        bail!(
            Status::Error,
            "graphics handle {interop_handle}: buffers of other drivers cannot be imported here"
        )
    })
}

/// `hsa_amd_interop_unmap_buffer`: SUCCESS, as ROCR 5.2, which ignores the result of the
/// unmap (nothing can have been mapped here).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_interop_unmap_buffer(ptr: *mut c_void) -> HsaStatus {
    let _ = ptr;
    guard("hsa_amd_interop_unmap_buffer", || {
        state::state()?;
        Ok(Status::Success)
    })
}

/// `HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION`: an agent, or 0.
const SVM_PREFERRED_LOCATION: u64 = 4;
/// `HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION`: get only.
const SVM_PREFETCH_LOCATION: u64 = 5;
/// `HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE`, `_IN_PLACE`, `_NO_ACCESS`: agents.
const SVM_AGENT_ATTRIBUTES: std::ops::RangeInclusive<u64> = 0x200..=0x202;
/// `HSA_AMD_SVM_ATTRIB_ACCESS_QUERY`: get only.
const SVM_ACCESS_QUERY: u64 = 0x203;

/// Checks an SVM attribute list as ROCR 5.2 does before calling KFD, then fails as KFD does
/// without SVM.
fn svm(
    st: &crate::state::State,
    set: bool,
    ptr: *mut c_void,
    size: usize,
    list: *const SvmAttributePair,
    count: usize,
) -> Result<Status, Error> {
    let pairs: &[SvmAttributePair] = if count == 0 {
        &[]
    } else {
        non_null(list, "attribute_list")?;
        // SAFETY: non-NULL, `count` pairs per the caller's contract.
        unsafe { std::slice::from_raw_parts(list, count) }
    };
    let mut seen = Vec::new();
    for p in pairs {
        let known = match p.attribute {
            0..=3 | 6 => true,
            SVM_PREFERRED_LOCATION => {
                if p.value != 0 {
                    agent_of(st, p.value)?;
                }
                true
            }
            SVM_PREFETCH_LOCATION => !set,
            // The agent access attributes can only be set (ROCR's `GetSvmAttrib` refuses
            // them, as `hsa_ext_amd.h` says).
            a if set && SVM_AGENT_ATTRIBUTES.contains(&a) => {
                agent_of(st, p.value)?;
                true
            }
            SVM_ACCESS_QUERY => {
                if !set {
                    agent_of(st, p.value)?;
                }
                !set
            }
            _ => false,
        };
        if !known {
            bail!(
                Status::InvalidArgument,
                "attribute {:#x} is not an SVM attribute that can be {}",
                p.attribute,
                if set { "set" } else { "read" }
            );
        }
        if set {
            let key = if SVM_AGENT_ATTRIBUTES.contains(&p.attribute) {
                (u64::MAX, p.value)
            } else {
                (p.attribute, 0)
            };
            if seen.contains(&key) {
                bail!(
                    Status::IncompatibleArguments,
                    "attribute {:#x} is given twice for the same target",
                    p.attribute
                );
            }
            seen.push(key);
        }
    }
    bail!(
        Status::Error,
        "{size} bytes at {ptr:p}: shared virtual memory is not supported here \
         (HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED is false)"
    )
}

/// `hsa_amd_svm_attributes_set`: the list is checked as ROCR 5.2 checks it; then `ERROR`:
/// there is no SVM here (`HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED` is false).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for an attribute that cannot be set; `INVALID_AGENT`;
/// `INCOMPATIBLE_ARGUMENTS` for an attribute given twice; else `ERROR`.
///
/// # Safety
/// `attribute_list` is NULL or holds `attribute_count` pairs.
pub unsafe extern "C" fn hsa_amd_svm_attributes_set(
    ptr: *mut c_void,
    size: usize,
    attribute_list: *mut SvmAttributePair,
    attribute_count: usize,
) -> HsaStatus {
    guard("hsa_amd_svm_attributes_set", || {
        let st = state::state()?;
        svm(&st, true, ptr, size, attribute_list, attribute_count)
    })
}

/// `hsa_amd_svm_attributes_get`: as [`hsa_amd_svm_attributes_set`] for reading.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for an unknown attribute or one that can only be set
/// (the agent access attributes); `INVALID_AGENT`; else `ERROR`.
///
/// # Safety
/// `attribute_list` is NULL or holds `attribute_count` pairs.
pub unsafe extern "C" fn hsa_amd_svm_attributes_get(
    ptr: *mut c_void,
    size: usize,
    attribute_list: *mut SvmAttributePair,
    attribute_count: usize,
) -> HsaStatus {
    guard("hsa_amd_svm_attributes_get", || {
        let st = state::state()?;
        svm(&st, false, ptr, size, attribute_list, attribute_count)
    })
}

/// `hsa_amd_memory_pool_can_migrate`: `*result` false and `OUT_OF_RESOURCES`, as ROCR 5.2
/// (`MemoryRegion::CanMigrate` is not implemented there either).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `result`; `INVALID_MEMORY_POOL`; else
/// `OUT_OF_RESOURCES`.
///
/// # Safety
/// `result` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_memory_pool_can_migrate(
    src_memory_pool: u64,
    dst_memory_pool: u64,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_amd_memory_pool_can_migrate", || {
        let st = state::state()?;
        non_null(result, "result")?;
        pool(&st, src_memory_pool)?;
        pool(&st, dst_memory_pool)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { result.write(false) };
        bail!(
            Status::OutOfResources,
            "memory cannot migrate between pools here"
        )
    })
}

/// `hsa_amd_memory_migrate`: `OUT_OF_RESOURCES`, as ROCR 5.2 (`MemoryRegion::Migrate` is not
/// implemented there either).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `ptr` or `flags` other than 0;
/// `INVALID_MEMORY_POOL`; else `OUT_OF_RESOURCES`.
pub extern "C" fn hsa_amd_memory_migrate(
    ptr: *const c_void,
    memory_pool: u64,
    flags: u32,
) -> HsaStatus {
    guard("hsa_amd_memory_migrate", || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        if flags != 0 {
            bail!(Status::InvalidArgument, "flags {flags:#x} must be 0");
        }
        pool(&st, memory_pool)?;
        bail!(Status::OutOfResources, "memory cannot migrate here")
    })
}

/// The pool behind a handle, with ROCR's status for an unknown one.
fn pool(st: &crate::state::State, handle: u64) -> Result<(), Error> {
    st.rt()
        .pool(PoolHandle(handle))
        .map(|_| ())
        .map_err(|e| hsa_core::error!(Status::InvalidMemoryPool, "{}", e.detail()))
}

export!(
    hsa_amd_interop_map_buffer,
    hsa_amd_interop_unmap_buffer,
    hsa_amd_svm_attributes_set,
    hsa_amd_svm_attributes_get,
    hsa_amd_memory_pool_can_migrate,
    hsa_amd_memory_migrate,
);
