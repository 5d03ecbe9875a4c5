//! HSA extensions: the support queries (`hsa_system_extension_supported`,
//! `hsa_agent_extension_supported` and their `_major_` forms, `hsa_extension_get_name`), the
//! function tables (`hsa_system_get_extension_table`, `hsa_system_get_major_extension_table`)
//! and the tables they hand out: the AMD loader's (`amd_loader::AMD_LOADER`,
//! `hsa_ven_amd_loader.h`, versions 1.00 to 1.03) and the image extension's
//! ([`super::image::IMAGES_1`]).
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

use std::ffi::{c_char, c_void};

use hsa_core::{bail, Error, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{self, State};

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
    if !hsa_runtime::images::agent_has_images(agent) {
        mask[usize::from(HSA_EXTENSION_IMAGES / 8)] &= !(1 << (HSA_EXTENSION_IMAGES % 8));
    }
    mask
}

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
                (&raw const super::amd_loader::AMD_LOADER).cast::<u8>(),
                std::mem::size_of::<AmdLoader103>(),
            ),
            (HSA_EXTENSION_IMAGES, 1) => (
                (&raw const super::image::IMAGES_1).cast::<u8>(),
                std::mem::size_of::<Images1>(),
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
        if !a.is_gpu()
            || (extension == HSA_EXTENSION_IMAGES && !hsa_runtime::images::agent_has_images(a))
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

export!(
    hsa_extension_get_name,
    hsa_system_extension_supported,
    hsa_system_major_extension_supported,
    hsa_system_get_major_extension_table,
    hsa_system_get_extension_table,
    hsa_agent_extension_supported,
    hsa_agent_major_extension_supported,
);
