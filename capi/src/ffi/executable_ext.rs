//! The rest of the executable API ROCR 5.2 exports: `hsa_executable_get_info`, variable
//! definitions (`hsa_executable_global_variable_define`, `_agent_global_variable_define`,
//! `_readonly_variable_define`), `hsa_executable_iterate_program_symbols`,
//! `hsa_executable_validate_alt`, `hsa_executable_load_program_code_object`, and the HSA 1.0
//! code object API (`hsa_code_object_*`, `hsa_code_symbol_get_info`,
//! `hsa_executable_load_code_object`).
//!
//! A defined variable resolves the undefined symbols of the code objects loaded after it
//! (`hsa_core::loader::executable::Executable::define_variable`) and is a symbol of the
//! executable: an agent's in `hsa_executable_iterate_agent_symbols`, a program's in
//! `hsa_executable_iterate_program_symbols`, both found by name.
//!
//! An `hsa_code_object_t` is a copy of the serialized code object (a tagged handle, as the
//! readers'); its symbols are its kernels (by their `.kd` names) then its variables. As ROCR
//! 5.2 answers for code objects of version 3 and later (which carry no HSA 1.0 notes):
//! `hsa_code_object_get_info` gives `ISA` as the ISA's name (`char[64]`, ROCR's "TODO"), and
//! `VERSION`, `MACHINE_MODEL`, `PROFILE`, `DEFAULT_FLOAT_ROUNDING_MODE` are
//! `INVALID_CODE_OBJECT`; `TYPE` is `INVALID_ARGUMENT`.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `format!`.
use std::format;

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use hsa_core::loader::code_object::{AlignedBytes, CodeObject};
use hsa_core::loader::executable::ExternalVariable;
use hsa_core::{bail, Error, GpuVa, NodeId, Status};

use super::agent::{agent_of, callback_result};
use super::loader::{external_handle, load_for_agent, with_executable};
use super::{bad_attribute, guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{self, lock, untag, Reader, State, INDEX_BITS};

/// Tag of HSA 1.0 code object handles (`hsa_code_object_t`): base | id.
pub const CODE_OBJECT_BASE: u64 = 0x4853_4f00_0000_0000;
/// Tag of HSA 1.0 code symbol handles (`hsa_code_symbol_t`): base | id << 20 | index.
pub const CODE_SYMBOL_BASE: u64 = 0x4853_4b00_0000_0000;

/// `hsa_executable_info_t`.
const HSA_EXECUTABLE_INFO_PROFILE: u32 = 1;
const HSA_EXECUTABLE_INFO_STATE: u32 = 2;
const HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE: u32 = 3;

/// `hsa_code_object_info_t`.
const HSA_CODE_OBJECT_INFO_VERSION: u32 = 0;
const HSA_CODE_OBJECT_INFO_ISA: u32 = 2;
const HSA_CODE_OBJECT_INFO_MACHINE_MODEL: u32 = 3;
const HSA_CODE_OBJECT_INFO_PROFILE: u32 = 4;
const HSA_CODE_OBJECT_INFO_DEFAULT_FLOAT_ROUNDING_MODE: u32 = 5;

/// `hsa_executable_get_info`: `PROFILE` and `DEFAULT_FLOAT_ROUNDING_MODE` (as created),
/// `STATE` (`UNFROZEN` 0 / `FROZEN` 1).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value` or another attribute;
/// `INVALID_EXECUTABLE`.
///
/// # Safety
/// `value` is NULL or writable for the attribute's type (4 bytes).
pub unsafe extern "C" fn hsa_executable_get_info(
    executable: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let (_, e) = st.executable(executable)?;
        let entry = lock(&e);
        let Some(exe) = entry.executable.as_ref() else {
            bail!(
                Status::InvalidExecutable,
                "executable {executable:#x} was destroyed"
            );
        };
        let v = match attribute {
            HSA_EXECUTABLE_INFO_PROFILE => entry.profile,
            HSA_EXECUTABLE_INFO_STATE => u32::from(exe.is_frozen()),
            HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE => entry.rounding_mode,
            other => return Err(bad_attribute("executable", other)),
        };
        // SAFETY: non-NULL, writable for 4 bytes per the caller's contract.
        unsafe { put::<u32>(value, v) };
        Ok(Status::Success)
    })
}

/// Defines `name` at `address` in `executable`, for `node` (`None`: the program).
fn define(
    executable: u64,
    agent: Option<u64>,
    name: *const c_char,
    address: *mut c_void,
    read_only: bool,
) -> Result<Status, Error> {
    let st = state::state()?;
    non_null(name, "variable_name")?;
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let name = unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| hsa_core::error!(Status::InvalidSymbolName, "name is not UTF-8"))?
        .to_string();
    let node = match agent {
        Some(a) => Some(NodeId(agent_of(&st, a)?.node())),
        None => None,
    };
    with_executable(&st, executable, |_, exe| {
        exe.define_variable(ExternalVariable {
            name,
            node,
            address: GpuVa(address as u64),
            read_only,
        })
    })?;
    Ok(Status::Success)
}

/// `hsa_executable_global_variable_define`: defines a program variable (for every agent's
/// code objects) at `address`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL name; `INVALID_EXECUTABLE`;
/// `FROZEN_EXECUTABLE`; `VARIABLE_ALREADY_DEFINED`.
///
/// # Safety
/// `variable_name` is NULL or NUL-terminated.
pub unsafe extern "C" fn hsa_executable_global_variable_define(
    executable: u64,
    variable_name: *const c_char,
    address: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_global_variable_define", || {
        define(executable, None, variable_name, address, false)
    })
}

/// `hsa_executable_agent_global_variable_define`: defines a variable of `agent`'s code objects
/// at `address` (how HIP gives its code objects a variable they declare `extern`).
///
/// # Errors (as status)
/// As [`hsa_executable_global_variable_define`]; `INVALID_AGENT` for an unknown agent (ROCR
/// 5.2 records any handle).
///
/// # Safety
/// `variable_name` is NULL or NUL-terminated.
pub unsafe extern "C" fn hsa_executable_agent_global_variable_define(
    executable: u64,
    agent: u64,
    variable_name: *const c_char,
    address: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_agent_global_variable_define", || {
        define(executable, Some(agent), variable_name, address, false)
    })
}

/// `hsa_executable_readonly_variable_define`: as
/// [`hsa_executable_agent_global_variable_define`], in the read-only segment.
///
/// # Errors (as status)
/// As [`hsa_executable_agent_global_variable_define`].
///
/// # Safety
/// `variable_name` is NULL or NUL-terminated.
pub unsafe extern "C" fn hsa_executable_readonly_variable_define(
    executable: u64,
    agent: u64,
    variable_name: *const c_char,
    address: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_readonly_variable_define", || {
        define(executable, Some(agent), variable_name, address, true)
    })
}

/// `hsa_executable_iterate_program_symbols`: the program variables defined with
/// [`hsa_executable_global_variable_define`] (loaded code objects have agent symbols only).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback; `INVALID_EXECUTABLE`; the
/// callback's status.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_executable_iterate_program_symbols(
    executable: u64,
    callback: Option<ProgramSymbolCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_iterate_program_symbols", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let handles: Vec<u64> = with_executable(&st, executable, |id, exe| {
            Ok(exe
                .external_variables()
                .iter()
                .enumerate()
                .filter(|(_, v)| v.node.is_none())
                .map(|(i, _)| external_handle(id, i))
                .collect())
        })?;
        drop(st);
        for h in handles {
            // SAFETY: the application's callback with its documented signature.
            let raw = unsafe { callback(executable, h, data) };
            if let Some(r) = callback_result(raw) {
                return r;
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_executable_validate_alt`: `hsa_executable_validate` (`options` is ignored: none are
/// defined).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `result`; `INVALID_EXECUTABLE`.
///
/// # Safety
/// `result` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_validate_alt(
    executable: u64,
    options: *const c_char,
    result: *mut u32,
) -> HsaStatus {
    let _ = options;
    // SAFETY: the caller's contract, passed on.
    unsafe { super::loader::hsa_executable_validate(executable, result) }
}

/// `hsa_executable_load_program_code_object`: an AMDGPU code object runs on the agent it is
/// loaded for, so loading one for no agent is refused (`INVALID_AGENT`, ROCR 5.2's status for a
/// code object that needs an agent); load it with `hsa_executable_load_agent_code_object`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_EXECUTABLE`; `INVALID_CODE_OBJECT_READER`;
/// `FROZEN_EXECUTABLE`; else `INVALID_AGENT`.
pub extern "C" fn hsa_executable_load_program_code_object(
    executable: u64,
    code_object_reader: u64,
    options: *const c_char,
    loaded_code_object: *mut u64,
) -> HsaStatus {
    let _ = (options, loaded_code_object);
    guard("hsa_executable_load_program_code_object", || {
        let st = state::state()?;
        let frozen = with_executable(&st, executable, |_, exe| Ok(exe.is_frozen()))?;
        st.reader(code_object_reader)?;
        if frozen {
            bail!(
                Status::FrozenExecutable,
                "cannot load a code object into a frozen executable"
            );
        }
        bail!(
            Status::InvalidAgent,
            "an AMDGPU code object is loaded for an agent \
             (hsa_executable_load_agent_code_object)"
        )
    })
}

// ---- the HSA 1.0 code object API (deprecated) ----

/// The code object behind a handle.
fn code_object_of(st: &State, handle: u64) -> Result<Arc<Reader>, Error> {
    let found = untag(handle, CODE_OBJECT_BASE)
        .and_then(|id| lock(&st.records.code_objects).get(&id).cloned());
    match found {
        Some(r) => Ok(r),
        None => bail!(
            Status::InvalidCodeObject,
            "code object handle {handle:#x} is not a live code object"
        ),
    }
}

/// One symbol of an unloaded code object.
struct CodeSymbol {
    name: String,
    variable_size: Option<u64>,
    kernel: Option<(u32, u32, u32, u32, bool)>,
}

/// The symbols of a code object: kernels (`.kd` names), then variables.
fn code_symbols(bytes: &[u8]) -> Result<Vec<CodeSymbol>, Error> {
    let aligned = AlignedBytes::new(bytes);
    let co = CodeObject::parse(aligned.as_bytes())?;
    let mut out = Vec::new();
    for k in co.kernels() {
        let k = k?;
        let m = &k.metadata;
        out.push(CodeSymbol {
            name: m.symbol.to_string(),
            variable_size: None,
            kernel: Some((
                m.kernarg_segment_size,
                // At least 16, as the loaded executable's (`KernelInfo::kernarg_segment_align`).
                m.kernarg_segment_align.max(16),
                m.group_segment_fixed_size,
                m.private_segment_fixed_size,
                m.uses_dynamic_stack || k.descriptor.uses_dynamic_stack(),
            )),
        });
    }
    for v in co.variables() {
        let v = v?;
        out.push(CodeSymbol {
            name: v.name.to_string(),
            variable_size: Some(v.size),
            kernel: None,
        });
    }
    Ok(out)
}

/// `hsa_code_object_deserialize`: a code object from `size` bytes (copied; checked to be an
/// AMDGPU code object).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL pointers or a size of 0;
/// `INVALID_CODE_OBJECT` for bytes that are not a code object.
///
/// # Safety
/// `serialized_code_object` is NULL or readable for `size` bytes; `code_object` is NULL or
/// writable.
pub unsafe extern "C" fn hsa_code_object_deserialize(
    serialized_code_object: *const c_void,
    size: usize,
    options: *const c_char,
    code_object: *mut u64,
) -> HsaStatus {
    let _ = options;
    guard("hsa_code_object_deserialize", || {
        let st = state::state()?;
        non_null(serialized_code_object, "serialized_code_object")?;
        non_null(code_object, "code_object")?;
        if size == 0 {
            bail!(Status::InvalidArgument, "serialized_code_object_size is 0");
        }
        // SAFETY: non-NULL, `size` readable bytes per the caller's contract.
        let bytes =
            unsafe { std::slice::from_raw_parts(serialized_code_object.cast::<u8>(), size) };
        code_symbols(bytes)?;
        let id = st.next_id();
        let reader = Reader {
            bytes: bytes.to_vec(),
            uri: super::amd_loader::memory_uri(serialized_code_object as u64, size),
        };
        lock(&st.records.code_objects).insert(id, Arc::new(reader));
        // SAFETY: non-NULL, the caller's hsa_code_object_t slot.
        unsafe { code_object.write(CODE_OBJECT_BASE | id) };
        Ok(Status::Success)
    })
}

/// `hsa_code_object_serialize`: the code object's bytes, in memory `alloc_callback` gives.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments; `INVALID_CODE_OBJECT`; the
/// callback's status.
///
/// # Safety
/// `alloc_callback` is NULL or valid and stores a pointer to `size` writable bytes;
/// the output slots are NULL or writable.
pub unsafe extern "C" fn hsa_code_object_serialize(
    code_object: u64,
    alloc_callback: Option<SerializeAlloc>,
    callback_data: u64,
    options: *const c_char,
    serialized_code_object: *mut *mut c_void,
    serialized_code_object_size: *mut usize,
) -> HsaStatus {
    let _ = options;
    guard("hsa_code_object_serialize", || {
        let st = state::state()?;
        let Some(alloc) = alloc_callback else {
            bail!(Status::InvalidArgument, "alloc_callback is NULL");
        };
        non_null(serialized_code_object, "serialized_code_object")?;
        non_null(serialized_code_object_size, "serialized_code_object_size")?;
        let co = code_object_of(&st, code_object)?;
        let n = co.bytes.len();
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: the application's allocator with its documented signature.
        let raw = unsafe { alloc(n, callback_data, &mut out) };
        if let Some(r) = callback_result(raw) {
            return r;
        }
        non_null(out, "the address alloc_callback returned")?;
        // SAFETY: `out` holds `n` writable bytes (the callback's contract); the slots are
        // non-NULL and writable.
        unsafe {
            std::ptr::copy_nonoverlapping(co.bytes.as_ptr(), out.cast::<u8>(), n);
            serialized_code_object.write(out);
            serialized_code_object_size.write(n);
        }
        Ok(Status::Success)
    })
}

/// `hsa_code_object_destroy`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_CODE_OBJECT`.
pub extern "C" fn hsa_code_object_destroy(code_object: u64) -> HsaStatus {
    guard("hsa_code_object_destroy", || {
        let st = state::state()?;
        let removed = untag(code_object, CODE_OBJECT_BASE)
            .and_then(|id| lock(&st.records.code_objects).remove(&id));
        if removed.is_none() {
            bail!(
                Status::InvalidCodeObject,
                "code object handle {code_object:#x} is not a live code object"
            );
        }
        Ok(Status::Success)
    })
}

/// `hsa_code_object_get_info`: `ISA` as a `char[64]` name, the others as ROCR 5.2 answers
/// them for a code object without HSA 1.0 notes (see the module doc).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value` or `TYPE`/unknown attributes;
/// `INVALID_CODE_OBJECT` for an unknown handle and for `VERSION`, `MACHINE_MODEL`, `PROFILE`,
/// `DEFAULT_FLOAT_ROUNDING_MODE`.
///
/// # Safety
/// `value` is NULL or writable for 64 bytes (`ISA`).
pub unsafe extern "C" fn hsa_code_object_get_info(
    code_object: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_code_object_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let co = code_object_of(&st, code_object)?;
        match attribute {
            HSA_CODE_OBJECT_INFO_ISA => {
                let aligned = AlignedBytes::new(&co.bytes);
                let parsed = CodeObject::parse(aligned.as_bytes())?;
                let name = parsed.target().isa_name();
                // SAFETY: non-NULL, 64 writable bytes per the caller's contract.
                unsafe { super::put_str::<64>(value, &name) };
            }
            HSA_CODE_OBJECT_INFO_VERSION
            | HSA_CODE_OBJECT_INFO_MACHINE_MODEL
            | HSA_CODE_OBJECT_INFO_PROFILE
            | HSA_CODE_OBJECT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => bail!(
                Status::InvalidCodeObject,
                "attribute {attribute}: the code object has no HSA 1.0 (HSAIL) notes"
            ),
            other => return Err(bad_attribute("code object", other)),
        }
        Ok(Status::Success)
    })
}

/// The symbol `name` of a code object (a kernel by its `.kd` name or its source name).
fn find_code_symbol(st: &State, code_object: u64, name: &str) -> Result<u64, Error> {
    let co = code_object_of(st, code_object)?;
    let id = untag(code_object, CODE_OBJECT_BASE).unwrap_or(0);
    let symbols = code_symbols(&co.bytes)?;
    let index = symbols.iter().position(|s| s.name == name).or_else(|| {
        symbols
            .iter()
            .position(|s| s.kernel.is_some() && s.name.strip_suffix(".kd") == Some(name))
    });
    match index {
        Some(i) => Ok(CODE_SYMBOL_BASE | id << INDEX_BITS | i as u64),
        None => bail!(
            Status::InvalidSymbolName,
            "no symbol named {name:?} in the code object"
        ),
    }
}

/// `hsa_code_object_get_symbol`: the symbol named `symbol_name`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments; `INVALID_CODE_OBJECT`;
/// `INVALID_SYMBOL_NAME`.
///
/// # Safety
/// `symbol_name` is NULL or NUL-terminated; `symbol` is NULL or writable.
pub unsafe extern "C" fn hsa_code_object_get_symbol(
    code_object: u64,
    symbol_name: *const c_char,
    symbol: *mut u64,
) -> HsaStatus {
    guard("hsa_code_object_get_symbol", || {
        let st = state::state()?;
        non_null(symbol_name, "symbol_name")?;
        non_null(symbol, "symbol")?;
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let name = unsafe { CStr::from_ptr(symbol_name) }.to_string_lossy();
        let h = find_code_symbol(&st, code_object, &name)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { symbol.write(h) };
        Ok(Status::Success)
    })
}

/// `hsa_code_object_get_symbol_from_name`: as [`hsa_code_object_get_symbol`], with a module
/// name (`module::symbol`, as ROCR mangles it; AMDGPU code objects have no modules, so only
/// an empty or NULL module name finds anything).
///
/// # Errors (as status)
/// As [`hsa_code_object_get_symbol`].
///
/// # Safety
/// `module_name` is NULL or NUL-terminated; as [`hsa_code_object_get_symbol`] otherwise.
pub unsafe extern "C" fn hsa_code_object_get_symbol_from_name(
    code_object: u64,
    module_name: *const c_char,
    symbol_name: *const c_char,
    symbol: *mut u64,
) -> HsaStatus {
    guard("hsa_code_object_get_symbol_from_name", || {
        let st = state::state()?;
        non_null(symbol_name, "symbol_name")?;
        non_null(symbol, "symbol")?;
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let mut name = unsafe { CStr::from_ptr(symbol_name) }
            .to_string_lossy()
            .into_owned();
        if !module_name.is_null() {
            // SAFETY: non-NULL and NUL-terminated per the caller's contract.
            let module = unsafe { CStr::from_ptr(module_name) }.to_string_lossy();
            if !module.is_empty() {
                name = format!("{module}::{name}");
            }
        }
        let h = find_code_symbol(&st, code_object, &name)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { symbol.write(h) };
        Ok(Status::Success)
    })
}

/// `hsa_code_object_iterate_symbols`: kernels, then variables.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback; `INVALID_CODE_OBJECT`; the
/// callback's status.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_code_object_iterate_symbols(
    code_object: u64,
    callback: Option<CodeSymbolCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_code_object_iterate_symbols", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let co = code_object_of(&st, code_object)?;
        let id = untag(code_object, CODE_OBJECT_BASE).unwrap_or(0);
        let n = code_symbols(&co.bytes)?.len() as u64;
        drop(st);
        for i in 0..n {
            // SAFETY: the application's callback with its documented signature.
            let raw =
                unsafe { callback(code_object, CODE_SYMBOL_BASE | id << INDEX_BITS | i, data) };
            if let Some(r) = callback_result(raw) {
                return r;
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_code_symbol_get_info`: `TYPE`, `NAME_LENGTH`, `NAME`, `MODULE_NAME_LENGTH` (0),
/// `MODULE_NAME` (nothing), `LINKAGE` (program), `IS_DEFINITION`, `VARIABLE_ALLOCATION`
/// (agent), `VARIABLE_SEGMENT` (global), `VARIABLE_SIZE`, the kernel's segment sizes,
/// alignment, dynamic call stack and call convention (0).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value`, a kernel attribute of a variable
/// (or the reverse) or an unknown attribute; `INVALID_CODE_SYMBOL`.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's size.
pub unsafe extern "C" fn hsa_code_symbol_get_info(
    code_symbol: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_code_symbol_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let bad = || {
            hsa_core::error!(
                Status::InvalidCodeSymbol,
                "code symbol handle {code_symbol:#x} is not a symbol of a live code object"
            )
        };
        let raw = untag(code_symbol, CODE_SYMBOL_BASE).ok_or_else(bad)?;
        let (id, index) = (raw >> INDEX_BITS, (raw & ((1 << INDEX_BITS) - 1)) as usize);
        let co = code_object_of(&st, CODE_OBJECT_BASE | id).map_err(|_| bad())?;
        let symbols = code_symbols(&co.bytes)?;
        let s = symbols.get(index).ok_or_else(bad)?;
        let kernel = || {
            s.kernel.ok_or_else(|| {
                hsa_core::error!(
                    Status::InvalidArgument,
                    "attribute {attribute} is a kernel attribute; {} is a variable",
                    s.name
                )
            })
        };
        let variable = || {
            s.variable_size.ok_or_else(|| {
                hsa_core::error!(
                    Status::InvalidArgument,
                    "attribute {attribute} is a variable attribute; {} is a kernel",
                    s.name
                )
            })
        };
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_EXECUTABLE_SYMBOL_INFO_TYPE => put::<u32>(value, u32::from(s.kernel.is_some())),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => put::<u32>(value, s.name.len() as u32),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME => {
                    std::ptr::copy_nonoverlapping(s.name.as_ptr(), value.cast::<u8>(), s.name.len())
                }
                // HSA_CODE_SYMBOL_INFO_MODULE_NAME_LENGTH / _MODULE_NAME: no modules.
                3 => put::<u32>(value, 0),
                4 => {}
                HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE => put::<u32>(value, 1),
                HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION => put::<bool>(value, true),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION => {
                    variable()?;
                    put::<u32>(value, 0)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT => {
                    variable()?;
                    put::<u32>(value, 0)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE => put::<u32>(value, variable()? as u32),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE => {
                    put::<u32>(value, kernel()?.0)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT => {
                    put::<u32>(value, kernel()?.1)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE => {
                    put::<u32>(value, kernel()?.2)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE => {
                    put::<u32>(value, kernel()?.3)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK => {
                    put::<bool>(value, kernel()?.4)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION => {
                    kernel()?;
                    put::<u32>(value, 0)
                }
                other => return Err(bad_attribute("code symbol", other)),
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_executable_load_code_object`: loads an HSA 1.0 code object into `executable` for
/// `agent`, as `hsa_executable_load_agent_code_object` loads a reader's.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_CODE_OBJECT`; as `hsa_executable_load_agent_code_object`.
pub extern "C" fn hsa_executable_load_code_object(
    executable: u64,
    agent: u64,
    code_object: u64,
    options: *const c_char,
) -> HsaStatus {
    let _ = options;
    guard("hsa_executable_load_code_object", || {
        let st = state::state()?;
        let co = self::code_object_of(&st, code_object)?;
        load_for_agent(&st, executable, agent, &co)?;
        Ok(Status::Success)
    })
}

export!(
    hsa_executable_get_info,
    hsa_executable_global_variable_define,
    hsa_executable_agent_global_variable_define,
    hsa_executable_readonly_variable_define,
    hsa_executable_iterate_program_symbols,
    hsa_executable_validate_alt,
    hsa_executable_load_program_code_object,
    hsa_code_object_deserialize,
    hsa_code_object_serialize,
    hsa_code_object_destroy,
    hsa_code_object_get_info,
    hsa_code_object_get_symbol,
    hsa_code_object_get_symbol_from_name,
    hsa_code_object_iterate_symbols,
    hsa_code_symbol_get_info,
    hsa_executable_load_code_object,
);
