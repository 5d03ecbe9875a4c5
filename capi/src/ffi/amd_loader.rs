//! The AMD loader extension (`hsa_ven_amd_loader.h`, versions 1.00 to 1.03): the functions of
//! its table (`hsa_ven_amd_loader_query_host_address`, `_query_segment_descriptors`,
//! `_query_executable`, `_executable_iterate_loaded_code_objects`,
//! `_loaded_code_object_get_info`, `_code_object_reader_create_from_file_with_offset_size`,
//! `_iterate_executables`), reached through the table `hsa_system_get_major_extension_table`
//! hands out (`AMD_LOADER`; not exported, as in ROCR), and the code object URIs it reports.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `format!`.
use std::format;

use std::ffi::c_void;
use std::sync::Arc;

use hsa_core::{bail, Status};

use super::agent::callback_result;
use super::{guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{self, lock, untag, Reader, State, EXECUTABLE_BASE, INDEX_BITS, LOADED_BASE};

/// The loader table handed out.
pub(crate) static AMD_LOADER: AmdLoader103 = AmdLoader103 {
    query_host_address: hsa_ven_amd_loader_query_host_address,
    query_segment_descriptors: hsa_ven_amd_loader_query_segment_descriptors,
    query_executable: hsa_ven_amd_loader_query_executable,
    executable_iterate_loaded_code_objects:
        hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
    loaded_code_object_get_info: hsa_ven_amd_loader_loaded_code_object_get_info,
    code_object_reader_create_from_file_with_offset_size:
        hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size,
    iterate_executables: hsa_ven_amd_loader_iterate_executables,
};

/// One loaded code object as the loader extension reports it.
pub(crate) struct Loaded {
    executable: u64,
    handle: u64,
    agent: u64,
    pub(crate) reader: Arc<Reader>,
    /// Device address of the image's first byte.
    base: u64,
    /// Bytes of the image's memory.
    size: u64,
    /// Device address that file vaddr 0 maps to.
    pub(crate) delta: i64,
    /// Whether its executable is frozen (`_amdgpu_r_debug` lists only those).
    pub(crate) frozen: bool,
}

/// Every loaded code object of every live executable, in executable-id and load order.
pub(crate) fn all_loaded(st: &State) -> Vec<Loaded> {
    let mut execs: Vec<(u64, Arc<std::sync::Mutex<crate::state::ExecEntry>>)> =
        lock(&st.executables)
            .iter()
            .map(|(id, e)| (*id, e.clone()))
            .collect();
    execs.sort_by_key(|(id, _)| *id);
    let mut out = Vec::new();
    for (id, e) in execs {
        let entry = lock(&e);
        let Some(exe) = entry.executable.as_ref() else {
            continue;
        };
        for (index, lco) in exe.loaded_code_objects().iter().enumerate() {
            let Some(reader) = entry.code_objects.get(index) else {
                continue;
            };
            let agent = st
                .rt()
                .agents()
                .iter()
                .find(|a| a.node() == lco.node.0)
                .map_or(0, |a| a.handle().0);
            out.push(Loaded {
                executable: EXECUTABLE_BASE | id,
                handle: LOADED_BASE | id << INDEX_BITS | index as u64,
                agent,
                reader: reader.clone(),
                base: lco.chunk.gpu_va.0,
                size: lco.chunk.size_bytes,
                delta: lco.load_base.0 as i64,
                frozen: exe.is_frozen(),
            });
        }
    }
    out
}

/// The loaded code object whose memory holds `address`.
fn loaded_at(st: &State, address: u64) -> Option<Loaded> {
    all_loaded(st)
        .into_iter()
        .find(|l| address >= l.base && address - l.base < l.size)
}

/// `hsa_ven_amd_loader_query_host_address`: the host address of `device_address` inside a
/// loaded code object's memory (the same address: code objects are loaded into system memory,
/// whose device and host addresses agree).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments or an address outside every
/// loaded code object (ROCR 5.2).
///
/// # Safety
/// `host_address` is NULL or writable.
pub unsafe extern "C" fn hsa_ven_amd_loader_query_host_address(
    device_address: *const c_void,
    host_address: *mut *const c_void,
) -> HsaStatus {
    guard("hsa_ven_amd_loader_query_host_address", || {
        let st = state::state()?;
        non_null(device_address, "device_address")?;
        non_null(host_address, "host_address")?;
        let address = device_address as u64;
        let Some(l) = loaded_at(&st, address) else {
            bail!(
                Status::InvalidArgument,
                "{address:#x} is not inside a loaded code object"
            );
        };
        let host = st
            .rt()
            .pointer_info(hsa_core::GpuVa(l.base))
            .ok()
            .and_then(|p| p.allocation.host_ptr)
            .map_or(address, |h| h.as_ptr() as u64 + (address - l.base));
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { host_address.write(host as *const c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_ven_amd_loader_query_segment_descriptors`: one descriptor per loaded code object (its
/// one segment, as ROCR's loader for code objects v2 and later). With `*num` 0 and
/// `descriptors` NULL it stores the count; with `*num` equal to the count it fills them.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `num`, or exactly one of `*num` and
/// `descriptors` being 0/NULL; `INCOMPATIBLE_ARGUMENTS` when `*num` is not the count (ROCR
/// 5.2's `QuerySegmentDescriptors`).
///
/// # Safety
/// `num` is NULL or read-writable; `descriptors` is NULL or writable for `*num` descriptors.
pub unsafe extern "C" fn hsa_ven_amd_loader_query_segment_descriptors(
    descriptors: *mut SegmentDescriptor,
    num: *mut usize,
) -> HsaStatus {
    guard("hsa_ven_amd_loader_query_segment_descriptors", || {
        let st = state::state()?;
        non_null(num, "num_segment_descriptors")?;
        // SAFETY: non-NULL, readable per the caller's contract.
        let asked = unsafe { num.read() };
        if (asked == 0) != descriptors.is_null() {
            bail!(
                Status::InvalidArgument,
                "*num_segment_descriptors is {asked} but segment_descriptors is {}",
                if descriptors.is_null() {
                    "NULL"
                } else {
                    "not NULL"
                }
            );
        }
        let loaded = all_loaded(&st);
        if asked == 0 {
            // SAFETY: non-NULL, writable per the caller's contract.
            unsafe { num.write(loaded.len()) };
            return Ok(Status::Success);
        }
        if asked != loaded.len() {
            bail!(
                Status::IncompatibleArguments,
                "*num_segment_descriptors is {asked}; there are {} segments",
                loaded.len()
            );
        }
        for (i, l) in loaded.iter().enumerate() {
            let d = SegmentDescriptor {
                agent: l.agent,
                executable: l.executable,
                code_object_storage_type: STORAGE_TYPE_MEMORY,
                code_object_storage_base: l.reader.bytes.as_ptr().cast(),
                code_object_storage_size: l.reader.bytes.len(),
                code_object_storage_offset: first_load_offset(&l.reader.bytes),
                segment_base: l.base as *const c_void,
                segment_size: l.size as usize,
            };
            // SAFETY: `descriptors` holds `asked` == loaded.len() descriptors.
            unsafe { descriptors.add(i).write_unaligned(d) };
        }
        Ok(Status::Success)
    })
}

/// The file offset of a code object's first `PT_LOAD` segment (0 when it cannot be read).
fn first_load_offset(bytes: &[u8]) -> usize {
    let aligned = hsa_core::loader::code_object::AlignedBytes::new(bytes);
    let Ok(co) = hsa_core::loader::code_object::CodeObject::parse(aligned.as_bytes()) else {
        return 0;
    };
    let base = aligned.as_bytes().as_ptr() as usize;
    let offset = co
        .load_segments()
        .next()
        .map_or(0, |s| s.file_bytes.as_ptr() as usize - base);
    offset
}

/// `hsa_ven_amd_loader_query_executable`: the executable whose loaded code object holds
/// `device_address`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments or an address outside every
/// loaded code object.
///
/// # Safety
/// `executable` is NULL or writable.
pub unsafe extern "C" fn hsa_ven_amd_loader_query_executable(
    device_address: *const c_void,
    executable: *mut u64,
) -> HsaStatus {
    guard("hsa_ven_amd_loader_query_executable", || {
        let st = state::state()?;
        non_null(device_address, "device_address")?;
        non_null(executable, "executable")?;
        let address = device_address as u64;
        let Some(l) = loaded_at(&st, address) else {
            bail!(
                Status::InvalidArgument,
                "{address:#x} is not inside a loaded code object"
            );
        };
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { executable.write(l.executable) };
        Ok(Status::Success)
    })
}

/// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects`: calls `callback` for each
/// loaded code object of `executable` in load order; a status other than SUCCESS stops the
/// iteration and is returned.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback; `INVALID_EXECUTABLE`.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_ven_amd_loader_executable_iterate_loaded_code_objects(
    executable: u64,
    callback: Option<LoadedCodeObjectCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard(
        "hsa_ven_amd_loader_executable_iterate_loaded_code_objects",
        || {
            let st = state::state()?;
            let Some(callback) = callback else {
                bail!(Status::InvalidArgument, "callback is NULL");
            };
            st.executable(executable)?;
            let handles: Vec<u64> = all_loaded(&st)
                .into_iter()
                .filter(|l| l.executable == executable)
                .map(|l| l.handle)
                .collect();
            drop(st);
            for h in handles {
                // SAFETY: the application's callback with its documented signature.
                let raw = unsafe { callback(executable, h, data) };
                if let Some(r) = callback_result(raw) {
                    return r;
                }
            }
            Ok(Status::Success)
        },
    )
}

/// `hsa_ven_amd_loader_loaded_code_object_get_info`: `EXECUTABLE`, `KIND` (agent), `AGENT`,
/// `CODE_OBJECT_STORAGE_TYPE` (memory, as ROCR 5.2 always reports), `..._MEMORY_BASE`/`_SIZE`
/// (the reader's copy of the code object), `LOAD_DELTA`, `LOAD_BASE`, `LOAD_SIZE`,
/// `URI_LENGTH`, `URI` (not NUL-terminated, `URI_LENGTH` bytes, as ROCR copies it).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value`, `CODE_OBJECT_STORAGE_FILE` (as
/// ROCR 5.2) or an unknown attribute; `INVALID_CODE_OBJECT` for a handle that is not a loaded
/// code object of a live executable.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's size.
pub unsafe extern "C" fn hsa_ven_amd_loader_loaded_code_object_get_info(
    loaded_code_object: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_ven_amd_loader_loaded_code_object_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let bad = || {
            hsa_core::error!(
                Status::InvalidCodeObject,
                "{loaded_code_object:#x} is not a loaded code object of a live executable"
            )
        };
        untag(loaded_code_object, LOADED_BASE).ok_or_else(bad)?;
        let l = all_loaded(&st)
            .into_iter()
            .find(|l| l.handle == loaded_code_object)
            .ok_or_else(bad)?;
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                lco_info::EXECUTABLE => put::<u64>(value, l.executable),
                lco_info::KIND => put::<u32>(value, LOADED_CODE_OBJECT_KIND_AGENT),
                lco_info::AGENT => put::<u64>(value, l.agent),
                lco_info::STORAGE_TYPE => put::<u32>(value, STORAGE_TYPE_MEMORY),
                lco_info::STORAGE_MEMORY_BASE => put::<u64>(value, l.reader.bytes.as_ptr() as u64),
                lco_info::STORAGE_MEMORY_SIZE => put::<u64>(value, l.reader.bytes.len() as u64),
                lco_info::LOAD_DELTA => put::<i64>(value, l.delta),
                lco_info::LOAD_BASE => put::<u64>(value, l.base),
                lco_info::LOAD_SIZE => put::<u64>(value, l.size),
                lco_info::URI_LENGTH => put::<u32>(value, l.reader.uri.len() as u32),
                lco_info::URI => std::ptr::copy_nonoverlapping(
                    l.reader.uri.as_ptr(),
                    value.cast::<u8>(),
                    l.reader.uri.len(),
                ),
                lco_info::STORAGE_FILE => bail!(
                    Status::InvalidArgument,
                    "CODE_OBJECT_STORAGE_FILE: the storage is memory"
                ),
                other => return Err(super::bad_attribute("loaded code object", other)),
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size`: a reader over
/// `size` bytes of `file` from `offset` (`size` 0: to the end of the file).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL reader slot or descriptor -1;
/// `INVALID_CODE_OBJECT` for `size` 0 (as ROCR 5.2, which rejects it before reading) or a
/// range outside the file; `INVALID_FILE` for a descriptor that is not a readable regular
/// file.
///
/// # Safety
/// `code_object_reader` is NULL or writable.
pub unsafe extern "C" fn hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(
    file: i32,
    offset: usize,
    size: usize,
    code_object_reader: *mut u64,
) -> HsaStatus {
    guard(
        "hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size",
        || {
            let st = state::state()?;
            non_null(code_object_reader, "code_object_reader")?;
            if size == 0 {
                bail!(Status::InvalidCodeObject, "size is 0");
            }
            if file == -1 {
                bail!(Status::InvalidArgument, "file descriptor is -1");
            }
            let bytes = super::loader::read_code_object_fd(file, offset as u64, Some(size as u64))?;
            let uri = file_uri(file, offset, size, false);
            super::loader::new_reader(&st, bytes, uri, code_object_reader)
        },
    )
}

/// `hsa_ven_amd_loader_iterate_executables`: calls `callback` for each live executable in
/// creation order; a status other than SUCCESS stops the iteration and is returned.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_ven_amd_loader_iterate_executables(
    callback: Option<ExecutableCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_ven_amd_loader_iterate_executables", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let mut ids: Vec<u64> = lock(&st.executables).keys().copied().collect();
        ids.sort_unstable();
        drop(st);
        for id in ids {
            // SAFETY: the application's callback with its documented signature.
            let raw = unsafe { callback(EXECUTABLE_BASE | id, data) };
            if let Some(r) = callback_result(raw) {
                return r;
            }
        }
        Ok(Status::Success)
    })
}

/// The URI of a code object read from memory: `memory://<pid>#offset=0x<address>&size=<n>`
/// (`hsa_ven_amd_loader.h`'s syntax, ROCR's spelling).
pub fn memory_uri(address: u64, size: usize) -> String {
    format!(
        "memory://{}#offset={address:#x}&size={size}",
        std::process::id()
    )
}

/// The URI of a code object read from `file`: `file://<path>` with every byte outside
/// `[a-zA-Z0-9/_.~-]` written `%XX`, then `#offset=<o>&size=<n>` unless it is the whole file;
/// the memory form naming nothing (address 0) when the descriptor's path cannot be read.
pub fn file_uri(file: i32, offset: usize, size: usize, whole: bool) -> String {
    let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{file}")) else {
        return memory_uri(0, size);
    };
    let mut uri = String::from("file://");
    for b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/_.~-".contains(b) {
            uri.push(char::from(*b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    if !whole {
        uri.push_str(&format!("#offset={offset}&size={size}"));
    }
    uri
}
