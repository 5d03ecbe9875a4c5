//! Code object readers, executables and their symbols (HSA Runtime 1.2 §2.9).
//!
//! Every symbol of a loaded code object is an agent symbol (kernels and agent-allocated
//! variables), so symbol iteration is over agent symbols; program symbols do not exist here.
#![allow(unsafe_code)]

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::{c_char, c_void, CStr};

use hsa_core::loader::executable::{Executable, ExternalVariable, Symbol, SymbolKind};
use hsa_core::platform::MemoryKind;
use hsa_core::{bail, Error, NodeId, Status};

use super::agent::{agent_of, callback_result};
use super::{bad_attribute, guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{
    self, lock, untag, ExecEntry, Mutex, Reader, State, EXECUTABLE_BASE, INDEX_BITS, LOADED_BASE,
    READER_BASE, SYMBOL_BASE,
};

/// Largest code object a reader accepts, bytes.
pub const MAX_CODE_OBJECT_BYTES: usize = 1 << 30;

/// Registers a reader over `bytes` that came from `uri` and writes its handle to `out`.
pub(crate) fn new_reader(
    st: &State,
    bytes: Vec<u8>,
    uri: String,
    out: *mut u64,
) -> Result<Status, Error> {
    let id = st.next_id();
    lock(&st.readers).insert(id, Arc::new(Reader { bytes, uri }));
    // SAFETY: `out` was checked non-NULL by the caller: the hsa_code_object_reader_t slot.
    unsafe { out.write(READER_BASE | id) };
    Ok(Status::Success)
}

/// `hsa_code_object_reader_create_from_memory`: a reader over a copy of `size` bytes.
///
/// # Safety
/// `code_object` is NULL or points to `size` readable bytes; `code_object_reader` is NULL or
/// writable.
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    code_object_reader: *mut u64,
) -> HsaStatus {
    guard("hsa_code_object_reader_create_from_memory", || {
        let st = state::state()?;
        non_null(code_object, "code_object")?;
        non_null(code_object_reader, "code_object_reader")?;
        if size == 0 || size > MAX_CODE_OBJECT_BYTES {
            bail!(
                Status::InvalidArgument,
                "size {size} is 0 or above {MAX_CODE_OBJECT_BYTES}"
            );
        }
        // SAFETY: non-NULL, `size` readable bytes per the caller's contract.
        let bytes = unsafe { core::slice::from_raw_parts(code_object.cast::<u8>(), size) };
        #[cfg(feature = "linux")]
        let uri = super::amd_loader::memory_uri(code_object as u64, size);
        // Without an OS there is no process id to name (AMD loader extension: Linux build).
        #[cfg(not(feature = "linux"))]
        let uri = alloc::format!("memory://0#offset={:#x}&size={size}", code_object as u64);
        new_reader(&st, bytes.to_vec(), uri, code_object_reader)
    })
}

/// `hsa_code_object_reader_create_from_file`: a reader over the whole file behind `file`
/// (read from offset 0 with `pread`, as ROCR reads it; the descriptor stays the caller's).
/// Linux backend only (bare metal has no file descriptors).
///
/// # Safety
/// `code_object_reader` is NULL or writable.
#[cfg(feature = "linux")]
pub unsafe extern "C" fn hsa_code_object_reader_create_from_file(
    file: i32,
    code_object_reader: *mut u64,
) -> HsaStatus {
    guard("hsa_code_object_reader_create_from_file", || {
        let st = state::state()?;
        non_null(code_object_reader, "code_object_reader")?;
        let bytes = read_code_object_fd(file, 0, None)?;
        let uri = super::amd_loader::file_uri(file, 0, bytes.len(), true);
        new_reader(&st, bytes, uri, code_object_reader)
    })
}

/// The regular file behind the caller's descriptor `file` from byte `offset`: `size` bytes,
/// or (`None`) the rest of the file; read with `pread` (the descriptor's own offset is left
/// alone). Its type and size are checked with `fstat` before anything is read, so a FIFO or
/// device never blocks the call and an oversized file is refused without being read.
///
/// # Errors
/// `Status::InvalidFile` naming the descriptor: not an open descriptor, not a regular file,
/// empty, a range larger than `MAX_CODE_OBJECT_BYTES`, or a read error (shorter than its
/// size); `Status::InvalidCodeObject` when `offset` is at or past the end of the file, or the
/// range runs past it (as ROCR 5.2's `CodeObjectReaderImpl::SetFile`).
#[cfg(feature = "linux")]
pub(crate) fn read_code_object_fd(
    file: i32,
    offset: u64,
    size: Option<u64>,
) -> Result<Vec<u8>, hsa_core::Error> {
    use hsa_core::error;
    use rustix::fs::FileType;
    if file < 0 {
        bail!(Status::InvalidFile, "file descriptor {file} is negative");
    }
    // SAFETY: the fd is only borrowed for the fstat and preads below, during this call, while
    // the caller keeps it open (hsa.h: the application owns `file`); an fd that is not open
    // makes fstat fail with EBADF, nothing else.
    let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(file) };
    let stat = rustix::fs::fstat(fd)
        .map_err(|e| error!(Status::InvalidFile, "file descriptor {file}: fstat: {e}"))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        bail!(
            Status::InvalidFile,
            "file descriptor {file} is not a regular file but a {kind:?}"
        );
    }
    let file_size = u64::try_from(stat.st_size).unwrap_or(0);
    if file_size == 0 {
        bail!(
            Status::InvalidFile,
            "file descriptor {file}: the file is empty"
        );
    }
    if offset >= file_size {
        bail!(
            Status::InvalidCodeObject,
            "file descriptor {file}: offset {offset} is not inside its {file_size} bytes"
        );
    }
    let size = size.unwrap_or(file_size - offset);
    if offset.checked_add(size).is_none_or(|end| end > file_size) {
        bail!(
            Status::InvalidCodeObject,
            "file descriptor {file}: {size} bytes at offset {offset} run past its {file_size} bytes"
        );
    }
    if size == 0 || size > MAX_CODE_OBJECT_BYTES as u64 {
        bail!(
            Status::InvalidFile,
            "file descriptor {file}: {size} bytes (a code object is 1 to {MAX_CODE_OBJECT_BYTES} bytes)"
        );
    }
    let mut bytes = alloc::vec![0u8; size as usize];
    let mut done = 0usize;
    while done < bytes.len() {
        match rustix::io::pread(fd, &mut bytes[done..], offset + done as u64) {
            Ok(0) => bail!(
                Status::InvalidFile,
                "file descriptor {file}: ended after {done} of {size} bytes"
            ),
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => bail!(Status::InvalidFile, "file descriptor {file}: read: {e}"),
        }
    }
    Ok(bytes)
}

/// `hsa_code_object_reader_destroy`.
pub extern "C" fn hsa_code_object_reader_destroy(code_object_reader: u64) -> HsaStatus {
    guard("hsa_code_object_reader_destroy", || {
        let st = state::state()?;
        let removed =
            untag(code_object_reader, READER_BASE).and_then(|id| lock(&st.readers).remove(&id));
        if removed.is_none() {
            bail!(
                Status::InvalidCodeObjectReader,
                "code object reader {code_object_reader:#x} is not a live reader"
            );
        }
        Ok(Status::Success)
    })
}

/// `hsa_executable_create_alt`: an empty executable. `profile` must be BASE (0) or FULL (1),
/// `default_float_rounding_mode` 0..=2; `options` is ignored (no options are defined).
///
/// # Safety
/// `executable` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_create_alt(
    profile: u32,
    default_float_rounding_mode: u32,
    options: *const c_char,
    executable: *mut u64,
) -> HsaStatus {
    let _ = options;
    guard("hsa_executable_create_alt", || {
        let st = state::state()?;
        non_null(executable, "executable")?;
        if profile > 1 {
            bail!(Status::InvalidArgument, "profile {profile} is not 0 or 1");
        }
        if default_float_rounding_mode > 2 {
            bail!(
                Status::InvalidArgument,
                "default_float_rounding_mode {default_float_rounding_mode} is not 0..=2"
            );
        }
        let id = st.next_id();
        let entry = ExecEntry {
            executable: Some(Executable::new(st.platform_ref())),
            code_objects: Vec::new(),
            profile,
            rounding_mode: default_float_rounding_mode,
        };
        lock(&st.executables).insert(id, Arc::new(Mutex::new(entry)));
        // SAFETY: non-NULL, the caller's hsa_executable_t slot.
        unsafe { executable.write(EXECUTABLE_BASE | id) };
        Ok(Status::Success)
    })
}

/// Runs `f` on a live executable.
pub(crate) fn with_executable<T>(
    st: &State,
    handle: u64,
    f: impl FnOnce(u64, &mut Executable<state::PlatRef>) -> Result<T, Error>,
) -> Result<T, Error> {
    let (id, e) = st.executable(handle)?;
    let mut entry = lock(&e);
    match entry.executable.as_mut() {
        Some(exe) => f(id, exe),
        None => bail!(
            Status::InvalidExecutable,
            "executable {handle:#x} was destroyed"
        ),
    }
}

/// `hsa_executable_load_agent_code_object`: loads the reader's code object for `agent`
/// (checked against the agent's ISA: `INCOMPATIBLE_ARGUMENTS` when it cannot run there).
///
/// # Safety
/// `loaded_code_object` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: u64,
    agent: u64,
    code_object_reader: u64,
    options: *const c_char,
    loaded_code_object: *mut u64,
) -> HsaStatus {
    let _ = options;
    guard("hsa_executable_load_agent_code_object", || {
        let st = state::state()?;
        let reader = st.reader(code_object_reader)?;
        let handle = load_for_agent(&st, executable, agent, &reader)?;
        if !loaded_code_object.is_null() {
            // SAFETY: non-NULL, the caller's hsa_loaded_code_object_t slot.
            unsafe { loaded_code_object.write(handle) };
        }
        Ok(Status::Success)
    })
}

/// Loads `reader`'s code object into `executable` for `agent`; the loaded code object's
/// handle.
///
/// # Errors
/// `INVALID_AGENT` for an unknown agent or one without an ISA; `INVALID_EXECUTABLE`; the
/// loader's errors (`Executable::load_code_object`).
pub(crate) fn load_for_agent(
    st: &State,
    executable: u64,
    agent: u64,
    reader: &Arc<Reader>,
) -> Result<u64, Error> {
    let a = agent_of(st, agent)?;
    let Some(isa) = a.isa() else {
        bail!(
            Status::InvalidAgent,
            "agent {} has no ISA to load code for",
            a.name()
        );
    };
    let node = NodeId(a.node());
    let (id, e) = st.executable(executable)?;
    let mut entry = lock(&e);
    let Some(exe) = entry.executable.as_mut() else {
        bail!(
            Status::InvalidExecutable,
            "executable {executable:#x} was destroyed"
        );
    };
    let index = exe.load_code_object(node, isa, &reader.bytes, MemoryKind::System)?;
    entry.code_objects.push(reader.clone());
    Ok(LOADED_BASE | id << INDEX_BITS | index as u64)
}

/// `hsa_executable_freeze`: no more loads; `FROZEN_EXECUTABLE` when already frozen.
pub extern "C" fn hsa_executable_freeze(executable: u64, options: *const c_char) -> HsaStatus {
    let _ = options;
    guard("hsa_executable_freeze", || {
        let st = state::state()?;
        with_executable(&st, executable, |_, exe| exe.freeze())?;
        drop(st);
        #[cfg(feature = "linux")]
        super::r_debug::refresh(true);
        Ok(Status::Success)
    })
}

/// `hsa_executable_validate`: `*result` is 0 when every symbol lies in its code object's
/// memory and every kernel object is 64-byte aligned, 1 otherwise.
///
/// # Safety
/// `result` is NULL or writable.
pub unsafe extern "C" fn hsa_executable_validate(executable: u64, result: *mut u32) -> HsaStatus {
    guard("hsa_executable_validate", || {
        let st = state::state()?;
        non_null(result, "result")?;
        let ok = with_executable(&st, executable, |_, exe| Ok(exe.validate().is_ok()))?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { result.write(u32::from(!ok)) };
        Ok(Status::Success)
    })
}

/// `hsa_executable_destroy`: frees the memory of every loaded code object.
pub extern "C" fn hsa_executable_destroy(executable: u64) -> HsaStatus {
    guard("hsa_executable_destroy", || {
        let st = state::state()?;
        let (id, e) = st.executable(executable)?;
        lock(&st.executables).remove(&id);
        let exe = lock(&e).executable.take();
        drop(st);
        #[cfg(feature = "linux")]
        super::r_debug::refresh(false);
        if let Some(exe) = exe {
            exe.destroy()?;
        }
        Ok(Status::Success)
    })
}

fn symbol_handle(executable_id: u64, index: usize) -> u64 {
    SYMBOL_BASE | executable_id << INDEX_BITS | index as u64
}

/// The index bit of a symbol handle that names a defined variable
/// (`Executable::external_variables`) rather than a loaded symbol.
const EXTERNAL_BIT: u64 = 1 << (INDEX_BITS - 1);

/// The handle of the executable's defined variable `index`.
pub(crate) fn external_handle(executable_id: u64, index: usize) -> u64 {
    symbol_handle(executable_id, index) | EXTERNAL_BIT
}

/// What a symbol handle names.
enum AnySymbol {
    /// A symbol of a loaded code object.
    Loaded(Symbol),
    /// A variable the application defined.
    Defined(ExternalVariable),
}

/// The symbol behind a handle, copied.
fn symbol_of(st: &State, handle: u64) -> Result<AnySymbol, Error> {
    let bad = || {
        hsa_core::error!(
            Status::InvalidExecutableSymbol,
            "symbol handle {handle:#x} is not a symbol of a live executable"
        )
    };
    let raw = untag(handle, SYMBOL_BASE).ok_or_else(bad)?;
    let (id, index) = (raw >> INDEX_BITS, raw & ((1 << INDEX_BITS) - 1));
    with_executable(st, EXECUTABLE_BASE | id, |_, exe| {
        if index & EXTERNAL_BIT != 0 {
            exe.external_variables()
                .get((index & !EXTERNAL_BIT) as usize)
                .cloned()
                .map(AnySymbol::Defined)
                .ok_or_else(bad)
        } else {
            exe.symbols()
                .nth(index as usize)
                .cloned()
                .map(AnySymbol::Loaded)
                .ok_or_else(bad)
        }
    })
    .map_err(|e| {
        if e.status() == Status::InvalidExecutable {
            bad()
        } else {
            e
        }
    })
}

/// `hsa_executable_get_symbol_by_name`: the symbol named `symbol_name` (`vector_copy.kd`, or
/// a kernel's source name `vector_copy`) for `*agent` (any agent when `agent` is NULL).
///
/// # Safety
/// `symbol_name` is NULL or NUL-terminated; `agent` is NULL or readable; `symbol` is NULL or
/// writable.
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: u64,
    symbol_name: *const c_char,
    agent: *const u64,
    symbol: *mut u64,
) -> HsaStatus {
    guard("hsa_executable_get_symbol_by_name", || {
        let st = state::state()?;
        non_null(symbol_name, "symbol_name")?;
        non_null(symbol, "symbol")?;
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let name = unsafe { CStr::from_ptr(symbol_name) }
            .to_str()
            .map_err(|_| hsa_core::error!(Status::InvalidSymbolName, "name is not UTF-8"))?;
        let node = if agent.is_null() {
            None
        } else {
            // SAFETY: non-NULL, a readable hsa_agent_t per the caller's contract.
            let handle = unsafe { agent.read() };
            Some(NodeId(agent_of(&st, handle)?.node()))
        };
        let handle = with_executable(&st, executable, |id, exe| {
            match exe.symbol_by_name(name, node) {
                Ok(found) => {
                    let index = exe
                        .symbols()
                        .position(|s| core::ptr::eq(s, found))
                        .unwrap_or(0);
                    Ok(symbol_handle(id, index))
                }
                // A variable the application defined (for that agent, or the program's).
                Err(e) => exe
                    .external_variables()
                    .iter()
                    .position(|v| v.name == name && (v.node.is_none() || v.node == node))
                    .map(|i| external_handle(id, i))
                    .ok_or(e),
            }
        })?;
        // SAFETY: non-NULL, the caller's hsa_executable_symbol_t slot.
        unsafe { symbol.write(handle) };
        Ok(Status::Success)
    })
}

fn iterate_symbols(
    executable: u64,
    agent: Option<u64>,
    callback: Option<SymbolCallback>,
    data: *mut c_void,
) -> Result<Status, Error> {
    let st = state::state()?;
    let Some(callback) = callback else {
        bail!(Status::InvalidArgument, "callback is NULL");
    };
    let node = match agent {
        Some(a) => Some(NodeId(agent_of(&st, a)?.node())),
        None => None,
    };
    // Handles first, callbacks after: a callback may call the API on this executable.
    let handles: Vec<u64> = with_executable(&st, executable, |id, exe| {
        let defined = exe
            .external_variables()
            .iter()
            .enumerate()
            .filter(|(_, v)| node.is_none() || v.node == node)
            .map(|(i, _)| external_handle(id, i));
        Ok(exe
            .symbols()
            .enumerate()
            .filter(|(_, s)| node.is_none_or(|n| n == s.node))
            .map(|(i, _)| symbol_handle(id, i))
            .chain(defined)
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
}

/// `hsa_executable_iterate_symbols` (deprecated in HSA 1.2, still in `hsa.h`): every symbol.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: u64,
    callback: Option<SymbolCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_iterate_symbols", || {
        iterate_symbols(executable, None, callback, data)
    })
}

/// `hsa_executable_iterate_agent_symbols`: the symbols loaded for `agent`, then the variables
/// defined for it (`hsa_executable_agent_global_variable_define`).
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_executable_iterate_agent_symbols(
    executable: u64,
    agent: u64,
    callback: Option<AgentSymbolCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_iterate_agent_symbols", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let node = NodeId(agent_of(&st, agent)?.node());
        let handles: Vec<u64> = with_executable(&st, executable, |id, exe| {
            let defined = exe
                .external_variables()
                .iter()
                .enumerate()
                .filter(|(_, v)| v.node == Some(node))
                .map(|(i, _)| external_handle(id, i));
            Ok(exe
                .symbols()
                .enumerate()
                .filter(|(_, s)| s.node == node)
                .map(|(i, _)| symbol_handle(id, i))
                .chain(defined)
                .collect())
        })?;
        drop(st);
        for h in handles {
            // SAFETY: the application's callback with its documented signature.
            let raw = unsafe { callback(executable, agent, h, data) };
            if let Some(r) = callback_result(raw) {
                return r;
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_executable_symbol_get_info`: `TYPE`, `NAME_LENGTH`, `NAME` (not NUL-terminated, as
/// `hsa.h` says), `AGENT`, `VARIABLE_ADDRESS`, `LINKAGE` (program), `IS_DEFINITION` (true),
/// `VARIABLE_ALLOCATION` (agent), `VARIABLE_SEGMENT` (global), `VARIABLE_SIZE`,
/// `KERNEL_OBJECT`, `KERNEL_KERNARG_SEGMENT_SIZE`/`_ALIGNMENT`, `KERNEL_GROUP_SEGMENT_SIZE`,
/// `KERNEL_PRIVATE_SEGMENT_SIZE`, `KERNEL_DYNAMIC_CALLSTACK`, `KERNEL_CALL_CONVENTION` (0).
/// Kernel attributes of a variable and variable attributes of a kernel, module names
/// (program symbols only), `VARIABLE_ALIGNMENT`/`IS_CONST` (not in the code object's
/// symbol table) and indirect-function attributes are `INVALID_ARGUMENT`.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size (`NAME`:
/// `NAME_LENGTH` bytes).
pub unsafe extern "C" fn hsa_executable_symbol_get_info(
    executable_symbol: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_executable_symbol_get_info", || {
        let st = state::state()?;
        let s = match symbol_of(&st, executable_symbol)? {
            AnySymbol::Loaded(s) => s,
            AnySymbol::Defined(v) => {
                non_null(value, "value")?;
                // SAFETY: `value` is non-NULL and as large as the attribute's type.
                return unsafe { defined_variable_info(&st, &v, attribute, value) };
            }
        };
        non_null(value, "value")?;
        let agent = st
            .rt()
            .agents()
            .iter()
            .find(|a| a.node() == s.node.0)
            .map_or(0, |a| a.handle().0);
        let kernel = s.kernel.as_ref();
        let is_var = s.kind == SymbolKind::Variable;
        let need_kernel = || {
            kernel.ok_or_else(|| {
                hsa_core::error!(
                    Status::InvalidArgument,
                    "attribute {attribute} is a kernel attribute; {} is a variable",
                    s.name
                )
            })
        };
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_EXECUTABLE_SYMBOL_INFO_TYPE => put::<u32>(value, if is_var { 0 } else { 1 }),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => put::<u32>(value, s.name.len() as u32),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME => core::ptr::copy_nonoverlapping(
                    s.name.as_ptr(),
                    value.cast::<u8>(),
                    s.name.len(),
                ),
                HSA_EXECUTABLE_SYMBOL_INFO_AGENT => put::<u64>(value, agent),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS if is_var => {
                    put::<u64>(value, s.address.0)
                }
                // HSA_SYMBOL_LINKAGE_PROGRAM (1), as ROCR reports loaded symbols.
                HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE => put::<u32>(value, 1),
                HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION => put::<bool>(value, true),
                // HSA_VARIABLE_ALLOCATION_AGENT (0).
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION if is_var => put::<u32>(value, 0),
                // HSA_VARIABLE_SEGMENT_GLOBAL (0).
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT if is_var => put::<u32>(value, 0),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE if is_var => {
                    put::<u32>(value, s.size_bytes as u32)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT => {
                    put::<u64>(value, need_kernel()?.kernel_object.0)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE => {
                    put::<u32>(value, need_kernel()?.kernarg_segment_size)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT => {
                    put::<u32>(value, need_kernel()?.kernarg_segment_align)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE => {
                    put::<u32>(value, need_kernel()?.group_segment_size)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE => {
                    put::<u32>(value, need_kernel()?.private_segment_size)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK => {
                    put::<bool>(value, need_kernel()?.dynamic_callstack)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION => {
                    need_kernel()?;
                    put::<u32>(value, 0)
                }
                other => return Err(bad_attribute("executable symbol", other)),
            }
        }
        Ok(Status::Success)
    })
}

#[cfg(feature = "linux")]
export!(hsa_code_object_reader_create_from_file);
/// `hsa_executable_symbol_get_info` of a variable the application defined: `TYPE` (variable),
/// `NAME_LENGTH`, `NAME`, `AGENT` (an agent's definition only), `VARIABLE_ADDRESS`, `LINKAGE`
/// (program), `IS_DEFINITION`, `VARIABLE_ALLOCATION` (agent or program), `VARIABLE_SEGMENT`
/// (global or read-only), `VARIABLE_SIZE` (0: not given, as ROCR 5.2 records it); others
/// `INVALID_ARGUMENT`.
///
/// # Safety
/// `value` is non-NULL and points to memory of the attribute's size.
unsafe fn defined_variable_info(
    st: &State,
    v: &ExternalVariable,
    attribute: u32,
    value: *mut c_void,
) -> Result<Status, Error> {
    // SAFETY: (all arms) per this function's contract.
    unsafe {
        match attribute {
            HSA_EXECUTABLE_SYMBOL_INFO_TYPE => put::<u32>(value, 0),
            HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => put::<u32>(value, v.name.len() as u32),
            HSA_EXECUTABLE_SYMBOL_INFO_NAME => {
                core::ptr::copy_nonoverlapping(v.name.as_ptr(), value.cast::<u8>(), v.name.len())
            }
            HSA_EXECUTABLE_SYMBOL_INFO_AGENT => {
                let Some(node) = v.node else {
                    bail!(
                        Status::InvalidArgument,
                        "{} is a program variable: it has no agent",
                        v.name
                    );
                };
                let agent = st
                    .rt()
                    .agents()
                    .iter()
                    .find(|a| a.node() == node.0)
                    .map_or(0, |a| a.handle().0);
                put::<u64>(value, agent)
            }
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS => put::<u64>(value, v.address.0),
            HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE => put::<u32>(value, 1),
            HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION => put::<bool>(value, true),
            // HSA_VARIABLE_ALLOCATION_AGENT (0) / _PROGRAM (1).
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION => {
                put::<u32>(value, u32::from(v.node.is_none()))
            }
            // HSA_VARIABLE_SEGMENT_GLOBAL (0) / _READONLY (1).
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT => {
                put::<u32>(value, u32::from(v.read_only))
            }
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE => put::<u32>(value, 0),
            other => return Err(bad_attribute("defined variable", other)),
        }
    }
    Ok(Status::Success)
}

export!(
    hsa_code_object_reader_create_from_memory,
    hsa_code_object_reader_destroy,
    hsa_executable_create_alt,
    hsa_executable_load_agent_code_object,
    hsa_executable_freeze,
    hsa_executable_validate,
    hsa_executable_destroy,
    hsa_executable_get_symbol_by_name,
    hsa_executable_iterate_symbols,
    hsa_executable_iterate_agent_symbols,
    hsa_executable_symbol_get_info,
);
