//! HSA extensions: the support queries (`hsa_system_extension_supported`,
//! `hsa_agent_extension_supported` and their `_major_` forms, `hsa_extension_get_name`), the
//! function tables (`hsa_system_get_extension_table`, `hsa_system_get_major_extension_table`)
//! and the AMD loader's table (`hsa_ven_amd_loader.h`, versions 1.00 to 1.03); the image
//! extension's table is [`super::image::IMAGES_1`].
//!
//! What is supported is said truthfully (ROCR 5.2 answers `true` for every version up to the
//! runtime's own from `hsa_system_extension_supported`, and for every extension of a GPU agent):
//! - `HSA_EXTENSION_AMD_LOADER` 1.0–1.3, system-wide and on GPU agents: the table works.
//! - `HSA_EXTENSION_AMD_PROFILER` 1.0, system-wide and on GPU agents: the
//!   `hsa_amd_profiling_*` functions (ROCR sets its bit in `HSA_SYSTEM_INFO_EXTENSIONS` and
//!   `HSA_AGENT_INFO_EXTENSIONS` too).
//! - `HSA_EXTENSION_IMAGES` 1.0, system-wide and on the GPU agents that have images (gfx9
//!   other than gfx94x, `image::agent_has_images`): `hsa_ext_images_1_pfn_t` (the
//!   1.00 table is its first ten functions).
//! - Nothing else: the finalizer, performance counters, profiling events and aqlprofile are
//!   not provided. Their tables answer `HSA_STATUS_ERROR`, as ROCR 5.2's do when the
//!   finalizer or `libhsa-amd-aqlprofile64.so` is absent (`hsa.cpp`
//!   `hsa_system_get_major_extension_table`).
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `format!`.
use std::format;

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use hsa_core::{bail, Error, Status};

use super::agent::{agent_of, callback_result};
use super::{guard, non_null, put, HsaStatus};
use crate::state::{self, lock, untag, Reader, State, EXECUTABLE_BASE, INDEX_BITS, LOADED_BASE};

/// `HSA_EXTENSION_FINALIZER`.
pub const HSA_EXTENSION_FINALIZER: u16 = 0;
/// `HSA_EXTENSION_IMAGES`.
pub const HSA_EXTENSION_IMAGES: u16 = 1;
/// `HSA_EXTENSION_PERFORMANCE_COUNTERS`.
pub const HSA_EXTENSION_PERFORMANCE_COUNTERS: u16 = 2;
/// `HSA_EXTENSION_PROFILING_EVENTS`.
pub const HSA_EXTENSION_PROFILING_EVENTS: u16 = 3;
/// `HSA_EXTENSION_STD_LAST`.
pub const HSA_EXTENSION_STD_LAST: u16 = 3;
/// `HSA_AMD_FIRST_EXTENSION`.
pub const HSA_AMD_FIRST_EXTENSION: u16 = 0x200;
/// `HSA_EXTENSION_AMD_PROFILER`.
pub const HSA_EXTENSION_AMD_PROFILER: u16 = 0x200;
/// `HSA_EXTENSION_AMD_LOADER`.
pub const HSA_EXTENSION_AMD_LOADER: u16 = 0x201;
/// `HSA_EXTENSION_AMD_AQLPROFILE`.
pub const HSA_EXTENSION_AMD_AQLPROFILE: u16 = 0x202;
/// `HSA_AMD_LAST_EXTENSION`.
pub const HSA_AMD_LAST_EXTENSION: u16 = 0x202;

/// The extensions this runtime provides: (id, major version, highest minor version).
pub const SUPPORTED: [(u16, u16, u16); 3] = [
    (HSA_EXTENSION_IMAGES, 1, 0),
    (HSA_EXTENSION_AMD_PROFILER, 1, 0),
    (HSA_EXTENSION_AMD_LOADER, 1, 3),
];

/// The 128-byte extension bit mask of `HSA_SYSTEM_INFO_EXTENSIONS` and of a GPU agent's
/// `HSA_AGENT_INFO_EXTENSIONS`: bit `id` set for each provided extension.
pub fn extension_mask() -> [u8; 128] {
    let mut mask = [0u8; 128];
    for (id, _, _) in SUPPORTED {
        mask[usize::from(id / 8)] |= 1 << (id % 8);
    }
    mask
}

/// A GPU agent's `HSA_AGENT_INFO_EXTENSIONS`: [`extension_mask`] without the image bit where
/// the agent has no images.
pub fn agent_extension_mask(agent: &hsa_core::runtime::Agent) -> [u8; 128] {
    let mut mask = extension_mask();
    if !super::image::agent_has_images(agent) {
        mask[usize::from(HSA_EXTENSION_IMAGES / 8)] &= !(1 << (HSA_EXTENSION_IMAGES % 8));
    }
    mask
}

/// `HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY`.
pub const STORAGE_TYPE_MEMORY: u32 = 2;
/// `HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_KIND_AGENT`.
pub const LOADED_CODE_OBJECT_KIND_AGENT: u32 = 2;

/// `hsa_ven_amd_loader_loaded_code_object_info_t` attributes.
pub mod lco_info {
    /// `..._INFO_EXECUTABLE` (`hsa_executable_t`).
    pub const EXECUTABLE: u32 = 1;
    /// `..._INFO_KIND` (`uint32_t`).
    pub const KIND: u32 = 2;
    /// `..._INFO_AGENT` (`hsa_agent_t`).
    pub const AGENT: u32 = 3;
    /// `..._INFO_CODE_OBJECT_STORAGE_TYPE` (`uint32_t`).
    pub const STORAGE_TYPE: u32 = 4;
    /// `..._INFO_CODE_OBJECT_STORAGE_MEMORY_BASE` (`uint64_t`).
    pub const STORAGE_MEMORY_BASE: u32 = 5;
    /// `..._INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE` (`uint64_t`).
    pub const STORAGE_MEMORY_SIZE: u32 = 6;
    /// `..._INFO_CODE_OBJECT_STORAGE_FILE` (`int`).
    pub const STORAGE_FILE: u32 = 7;
    /// `..._INFO_LOAD_DELTA` (`int64_t`).
    pub const LOAD_DELTA: u32 = 8;
    /// `..._INFO_LOAD_BASE` (`uint64_t`).
    pub const LOAD_BASE: u32 = 9;
    /// `..._INFO_LOAD_SIZE` (`uint64_t`).
    pub const LOAD_SIZE: u32 = 10;
    /// `..._INFO_URI_LENGTH` (`uint32_t`).
    pub const URI_LENGTH: u32 = 11;
    /// `..._INFO_URI` (`char[URI_LENGTH]`).
    pub const URI: u32 = 12;
}

/// `hsa_ven_amd_loader_segment_descriptor_t` (`hsa_ven_amd_loader.h`): 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SegmentDescriptor {
    /// The agent the segment is loaded for.
    pub agent: u64,
    /// The executable holding it.
    pub executable: u64,
    /// `hsa_ven_amd_loader_code_object_storage_type_t`: always MEMORY (2).
    pub code_object_storage_type: u32,
    /// The code object's first byte (the reader's copy).
    pub code_object_storage_base: *const c_void,
    /// The code object's size, bytes.
    pub code_object_storage_size: usize,
    /// Offset in the code object of the first byte copied into the segment.
    pub code_object_storage_offset: usize,
    /// The segment's address.
    pub segment_base: *const c_void,
    /// The segment's size, bytes.
    pub segment_size: usize,
}

const _: () = assert!(std::mem::size_of::<SegmentDescriptor>() == 64);
const _: () = assert!(std::mem::offset_of!(SegmentDescriptor, code_object_storage_base) == 24);

/// An executable-iteration callback: `hsa_status_t (*)(hsa_executable_t, void*)`.
pub type ExecutableCallback = unsafe extern "C" fn(u64, *mut c_void) -> u32;
/// A loaded-code-object callback: `hsa_status_t (*)(hsa_executable_t,
/// hsa_loaded_code_object_t, void*)`.
pub type LoadedCodeObjectCallback = unsafe extern "C" fn(u64, u64, *mut c_void) -> u32;

/// `hsa_ven_amd_loader_1_03_pfn_t`: the seven functions in the header's order (the 1.00 table
/// is its first three, 1.01 its first five, 1.02 its first six).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmdLoader103 {
    /// `hsa_ven_amd_loader_query_host_address`.
    pub query_host_address: unsafe extern "C" fn(*const c_void, *mut *const c_void) -> u32,
    /// `hsa_ven_amd_loader_query_segment_descriptors`.
    pub query_segment_descriptors: unsafe extern "C" fn(*mut SegmentDescriptor, *mut usize) -> u32,
    /// `hsa_ven_amd_loader_query_executable`.
    pub query_executable: unsafe extern "C" fn(*const c_void, *mut u64) -> u32,
    /// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects`.
    pub executable_iterate_loaded_code_objects:
        unsafe extern "C" fn(u64, Option<LoadedCodeObjectCallback>, *mut c_void) -> u32,
    /// `hsa_ven_amd_loader_loaded_code_object_get_info`.
    pub loaded_code_object_get_info: unsafe extern "C" fn(u64, u32, *mut c_void) -> u32,
    /// `hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size`.
    pub code_object_reader_create_from_file_with_offset_size:
        unsafe extern "C" fn(i32, usize, usize, *mut u64) -> u32,
    /// `hsa_ven_amd_loader_iterate_executables`.
    pub iterate_executables: unsafe extern "C" fn(Option<ExecutableCallback>, *mut c_void) -> u32,
}

/// The loader table handed out.
static AMD_LOADER: AmdLoader103 = AmdLoader103 {
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

/// Bytes of the loader table of version 1.`minor` (`sizeof(hsa_ven_amd_loader_1_0N_pfn_t)`).
fn loader_table_bytes(minor: u16) -> Option<usize> {
    match minor {
        0 => Some(3 * 8),
        1 => Some(5 * 8),
        2 => Some(6 * 8),
        3 => Some(7 * 8),
        _ => None,
    }
}

/// Whether `extension` is an id `hsa.h` defines a range for (standard or AMD).
fn known_id(extension: u16) -> bool {
    extension <= HSA_EXTENSION_STD_LAST
        || (HSA_AMD_FIRST_EXTENSION..=HSA_AMD_LAST_EXTENSION).contains(&extension)
}

/// The highest minor version of `extension` `major` this runtime provides.
fn provided(extension: u16, major: u16) -> Option<u16> {
    SUPPORTED
        .iter()
        .find(|(id, m, _)| *id == extension && *m == major)
        .map(|(_, _, minor)| *minor)
}

/// `hsa_extension_get_name`: the name of a known extension (`HSA_EXTENSION_IMAGES`, ...), as
/// ROCR 5.2 names them.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `name`, or an unknown extension (then
/// `*name` is `"HSA_EXTENSION_INVALID"`, as ROCR).
///
/// # Safety
/// `name` is NULL or a writable `const char*`.
pub unsafe extern "C" fn hsa_extension_get_name(
    extension: u16,
    name: *mut *const c_char,
) -> HsaStatus {
    guard("hsa_extension_get_name", || {
        state::state()?;
        non_null(name, "name")?;
        let text: &'static std::ffi::CStr = match extension {
            HSA_EXTENSION_FINALIZER => c"HSA_EXTENSION_FINALIZER",
            HSA_EXTENSION_IMAGES => c"HSA_EXTENSION_IMAGES",
            HSA_EXTENSION_PERFORMANCE_COUNTERS => c"HSA_EXTENSION_PERFORMANCE_COUNTERS",
            HSA_EXTENSION_PROFILING_EVENTS => c"HSA_EXTENSION_PROFILING_EVENTS",
            HSA_EXTENSION_AMD_PROFILER => c"HSA_EXTENSION_AMD_PROFILER",
            HSA_EXTENSION_AMD_LOADER => c"HSA_EXTENSION_AMD_LOADER",
            HSA_EXTENSION_AMD_AQLPROFILE => c"HSA_EXTENSION_AMD_AQLPROFILE",
            other => {
                // SAFETY: non-NULL, the caller's `const char*` slot; the string is static.
                unsafe { name.write(c"HSA_EXTENSION_INVALID".as_ptr()) };
                bail!(Status::InvalidArgument, "extension {other:#x} is not known");
            }
        };
        // SAFETY: as above.
        unsafe { name.write(text.as_ptr()) };
        Ok(Status::Success)
    })
}

/// `hsa_system_extension_supported` (deprecated): whether version `major.minor` of
/// `extension` is provided (see the module doc for the list).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for an id outside `hsa.h`'s ranges or a NULL
/// `result` (ROCR 5.2's checks).
///
/// # Safety
/// `result` is NULL or writable.
pub unsafe extern "C" fn hsa_system_extension_supported(
    extension: u16,
    version_major: u16,
    version_minor: u16,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_system_extension_supported", || {
        state::state()?;
        if !known_id(extension) {
            bail!(
                Status::InvalidArgument,
                "extension {extension:#x} is not known"
            );
        }
        non_null(result, "result")?;
        let yes = provided(extension, version_major).is_some_and(|m| version_minor <= m);
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { result.write(yes) };
        Ok(Status::Success)
    })
}

/// `hsa_system_major_extension_supported`: whether major version `version_major` of
/// `extension` is provided, and its highest minor version.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `version_minor` or `result` (an unknown
/// id is simply not supported, as in ROCR 5.2).
///
/// # Safety
/// `version_minor` and `result` are NULL or writable.
pub unsafe extern "C" fn hsa_system_major_extension_supported(
    extension: u16,
    version_major: u16,
    version_minor: *mut u16,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_system_major_extension_supported", || {
        state::state()?;
        non_null(version_minor, "version_minor")?;
        non_null(result, "result")?;
        let minor = provided(extension, version_major);
        // SAFETY: both non-NULL, writable per the caller's contract.
        unsafe {
            if let Some(m) = minor {
                version_minor.write(m);
            }
            result.write(minor.is_some());
        }
        Ok(Status::Success)
    })
}

/// `hsa_system_get_major_extension_table`: copies the first `table_length` bytes of the
/// function table of `extension` `version_major` (at most the whole 1.03 table for the AMD
/// loader) to `table`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `table` or `table_length` 0; `ERROR` for
/// any extension or major version not provided (ROCR 5.2's status when the extension's
/// library is absent).
///
/// # Safety
/// `table` is NULL or writable for `table_length` bytes.
pub unsafe extern "C" fn hsa_system_get_major_extension_table(
    extension: u16,
    version_major: u16,
    table_length: usize,
    table: *mut c_void,
) -> HsaStatus {
    guard("hsa_system_get_major_extension_table", || {
        state::state()?;
        non_null(table, "table")?;
        if table_length == 0 {
            bail!(Status::InvalidArgument, "table_length is 0");
        }
        let (source, size) = match (extension, version_major) {
            (HSA_EXTENSION_AMD_LOADER, 1) => (
                (&raw const AMD_LOADER).cast::<u8>(),
                std::mem::size_of::<AmdLoader103>(),
            ),
            (HSA_EXTENSION_IMAGES, 1) => (
                (&raw const super::image::IMAGES_1).cast::<u8>(),
                std::mem::size_of::<super::image::Images1>(),
            ),
            _ => bail!(
                Status::Error,
                "extension {extension:#x} version {version_major} has no table here \
                 (HSA_EXTENSION_IMAGES 1 and HSA_EXTENSION_AMD_LOADER 1 are provided)"
            ),
        };
        let n = table_length.min(size);
        // SAFETY: `table` holds `table_length` >= n writable bytes (the caller's contract);
        // a byte copy of the first n bytes of a static table.
        unsafe { std::ptr::copy_nonoverlapping(source, table.cast::<u8>(), n) };
        Ok(Status::Success)
    })
}

/// `hsa_system_get_extension_table` (deprecated): the table of `extension`
/// `version_major.version_minor`, as [`hsa_system_get_major_extension_table`] with that
/// version's table size (ROCR 5.2's `get_extension_table_length`).
///
/// # Errors (as status)
/// As [`hsa_system_get_major_extension_table`]; `INVALID_ARGUMENT` for a version whose table
/// size is unknown (any but images/finalizer/aqlprofile 1.00 and the loader 1.00–1.03).
///
/// # Safety
/// `table` is NULL or writable for the size of that version's table.
pub unsafe extern "C" fn hsa_system_get_extension_table(
    extension: u16,
    version_major: u16,
    version_minor: u16,
    table: *mut c_void,
) -> HsaStatus {
    let length = match (extension, version_major) {
        (HSA_EXTENSION_AMD_LOADER, 1) => loader_table_bytes(version_minor).unwrap_or(0),
        // hsa_ext_images_1_00_pfn_t: the first ten functions of the image table.
        (HSA_EXTENSION_IMAGES, 1) if version_minor == 0 => 10 * 8,
        // hsa_ext_finalizer_1_00_pfn_t, hsa_ven_amd_aqlprofile_1_00_pfn_t: not provided; any
        // non-zero length leads to the ERROR the major form returns for them.
        (HSA_EXTENSION_FINALIZER | HSA_EXTENSION_AMD_AQLPROFILE, 1) if version_minor == 0 => 8,
        _ => 0,
    };
    // SAFETY: the caller's contract, with the length of the version it asked for.
    unsafe { hsa_system_get_major_extension_table(extension, version_major, length, table) }
}

/// Checks an agent-extension query's arguments as ROCR 5.2 does and says whether `agent`
/// provides `extension` `major` (GPU agents provide what the system provides).
fn agent_provides(
    st: &State,
    extension: u16,
    agent: u64,
    major: u16,
    result: *mut bool,
) -> Result<Option<u16>, Error> {
    if !known_id(extension) {
        bail!(
            Status::InvalidArgument,
            "extension {extension:#x} is not known"
        );
    }
    non_null(result, "result")?;
    // SAFETY: non-NULL, writable per the caller's contract (ROCR clears it first).
    unsafe { result.write(false) };
    let a = agent_of(st, agent)?;
    Ok(
        if !a.is_gpu() || (extension == HSA_EXTENSION_IMAGES && !super::image::agent_has_images(a))
        {
            None
        } else {
            provided(extension, major)
        },
    )
}

/// `hsa_agent_extension_supported` (deprecated): whether `agent` provides version
/// `major.minor` of `extension` (GPU agents: the AMD loader 1.0–1.3 and the AMD profiler 1.0;
/// CPU agents: nothing).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for an unknown id or a NULL `result`;
/// `INVALID_AGENT`.
///
/// # Safety
/// `result` is NULL or writable.
pub unsafe extern "C" fn hsa_agent_extension_supported(
    extension: u16,
    agent: u64,
    version_major: u16,
    version_minor: u16,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_agent_extension_supported", || {
        let st = state::state()?;
        let minor = agent_provides(&st, extension, agent, version_major, result)?;
        // SAFETY: `result` was checked non-NULL by agent_provides.
        unsafe { result.write(minor.is_some_and(|m| version_minor <= m)) };
        Ok(Status::Success)
    })
}

/// `hsa_agent_major_extension_supported`: whether `agent` provides major version
/// `version_major` of `extension`, and its highest minor version.
///
/// # Errors (as status)
/// As [`hsa_agent_extension_supported`]; `INVALID_ARGUMENT` for a NULL `version_minor`.
///
/// # Safety
/// `version_minor` and `result` are NULL or writable.
pub unsafe extern "C" fn hsa_agent_major_extension_supported(
    extension: u16,
    agent: u64,
    version_major: u16,
    version_minor: *mut u16,
    result: *mut bool,
) -> HsaStatus {
    guard("hsa_agent_major_extension_supported", || {
        let st = state::state()?;
        let minor = agent_provides(&st, extension, agent, version_major, result)?;
        if let Some(m) = minor {
            non_null(version_minor, "version_minor")?;
            // SAFETY: both non-NULL, writable per the caller's contract.
            unsafe {
                version_minor.write(m);
                result.write(true);
            }
        }
        Ok(Status::Success)
    })
}

// ---- the AMD loader table (not exported: reached through the table, as in ROCR) ----

/// One loaded code object as the loader extension reports it.
struct Loaded {
    executable: u64,
    handle: u64,
    agent: u64,
    reader: Arc<Reader>,
    /// Device address of the image's first byte.
    base: u64,
    /// Bytes of the image's memory.
    size: u64,
    /// Device address that file vaddr 0 maps to.
    delta: i64,
}

/// Every loaded code object of every live executable, in executable-id and load order.
fn all_loaded(st: &State) -> Vec<Loaded> {
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

export!(
    hsa_extension_get_name,
    hsa_system_extension_supported,
    hsa_system_major_extension_supported,
    hsa_system_get_major_extension_table,
    hsa_system_get_extension_table,
    hsa_agent_extension_supported,
    hsa_agent_major_extension_supported,
);
