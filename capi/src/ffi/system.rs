//! Init, shut-down, status strings, system attributes (HSA Runtime 1.2 §2.1–2.3).
#![allow(unsafe_code)]

use alloc::ffi::CString;
use alloc::format;
use alloc::vec::Vec;
use core::ffi::{c_char, c_void};

use hsa_core::{bail, Status};

use super::{guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state;

fn status_strings() -> &'static [(Status, CString)] {
    static STRINGS: spin::Once<Vec<(Status, CString)>> = spin::Once::new();
    STRINGS.call_once(|| {
        Status::ALL
            .iter()
            .map(|s| {
                let text = format!("{}: {}", s.c_name(), s.description());
                (*s, CString::new(text).unwrap_or_default())
            })
            .collect()
    })
}

/// `hsa_status_string`: a static NUL-terminated description of `status`.
///
/// # Safety
/// `string` is NULL or a writable `const char*`.
pub unsafe extern "C" fn hsa_status_string(status: u32, string: *mut *const c_char) -> HsaStatus {
    guard("hsa_status_string", || {
        non_null(string, "string")?;
        let Some((_, text)) = status_strings().iter().find(|(s, _)| s.raw() == status) else {
            bail!(
                Status::InvalidArgument,
                "status {status:#x} is not an hsa_status_t"
            );
        };
        // SAFETY: non-NULL, the caller's `const char*` slot; the string is static.
        unsafe { string.write(text.as_ptr()) };
        Ok(Status::Success)
    })
}

/// `hsa_init`: see `state::init`.
pub extern "C" fn hsa_init() -> HsaStatus {
    guard("hsa_init", || state::init().map(|()| Status::Success))
}

/// `hsa_shut_down`: see `state::shut_down`.
pub extern "C" fn hsa_shut_down() -> HsaStatus {
    guard("hsa_shut_down", || {
        state::shut_down()?;
        // The last shut-down destroyed every executable: the debugger's list empties.
        #[cfg(feature = "linux")]
        super::r_debug::refresh(false);
        Ok(Status::Success)
    })
}

/// `hsa_system_get_info`: the `hsa_system_info_t` attributes (and the AMD ones of ROCR 5.2:
/// `BUILD_VERSION` as a static `const char*`, `SVM_SUPPORTED` and
/// `SVM_ACCESSIBLE_BY_DEFAULT`, both false here; and ROCR 7's 0x203-0x208: `MWAITX_ENABLED`
/// false (no MWAITX waits), `DMABUF_SUPPORTED` as ROCR (amdkfd's interface 1.12 or later, on
/// Linux), `VIRTUAL_MEM_API_SUPPORTED` the runtime's virtual memory service's answer (false
/// until it can place device memory), `XNACK_ENABLED` the process's XNACK mode,
/// `EXT_VERSION_MAJOR`/`_MINOR` 1.15 as ROCR 7.2.4's `HSA_AMD_INTERFACE_VERSION_*`). Any other
/// attribute: `HSA_STATUS_ERROR_INVALID_ARGUMENT`, as ROCR. `EXTENSIONS` has the bits of the provided
/// extensions ([`super::extension::extension_mask`]: the AMD profiler and loader).
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's documented size.
pub unsafe extern "C" fn hsa_system_get_info(attribute: u32, value: *mut c_void) -> HsaStatus {
    guard("hsa_system_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let info = st.rt().system_info();
        // SAFETY: (all arms) `value` is non-NULL and, per the caller's contract, as large as
        // the attribute's type.
        unsafe {
            match attribute {
                HSA_SYSTEM_INFO_VERSION_MAJOR => put::<u16>(value, info.version.0),
                HSA_SYSTEM_INFO_VERSION_MINOR => put::<u16>(value, info.version.1),
                HSA_SYSTEM_INFO_TIMESTAMP => put::<u64>(value, st.rt().timestamp_ticks()),
                HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => {
                    put::<u64>(value, info.timestamp_frequency_hz)
                }
                HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => put::<u64>(value, info.signal_max_wait_ticks),
                HSA_SYSTEM_INFO_ENDIANNESS => put::<u32>(value, info.endianness as u32),
                HSA_SYSTEM_INFO_MACHINE_MODEL => put::<u32>(value, info.machine_model as u32),
                HSA_SYSTEM_INFO_EXTENSIONS => {
                    let mut mask = info.extensions;
                    for (m, e) in mask.iter_mut().zip(super::extension_mask()) {
                        *m |= e;
                    }
                    put::<[u8; 128]>(value, mask)
                }
                HSA_AMD_SYSTEM_INFO_BUILD_VERSION => {
                    static BUILD: &core::ffi::CStr = c"hsa-rt 0.1.0";
                    put::<*const c_char>(value, BUILD.as_ptr())
                }
                HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED
                | HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT => put::<bool>(value, false),
                // ROCR answers `HSA_ENABLE_MWAITX=1` on a CPU with MWAITX; our signal waits
                // never use MWAITX, so false.
                HSA_AMD_SYSTEM_INFO_MWAITX_ENABLED => put::<bool>(value, false),
                // ROCR: KFD >= 1.12 (dma-buf export), as here on Linux, where
                // `hsa_amd_portable_export_dmabuf` exports through KFD's EXPORT_DMABUF.
                HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED => put::<bool>(value, dmabuf_supported(&st)),
                // ROCR: KFD >= 1.15 with libdrm's `amdgpu_device_get_fd`. Here: whether the
                // runtime's virtual memory service can place device memory
                // (`hsa_runtime::VirtualMemory::supported`: not yet, false).
                HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED => {
                    put::<bool>(value, vmem_supported(&st))
                }
                HSA_AMD_SYSTEM_INFO_XNACK_ENABLED => put::<bool>(value, info.xnack_enabled),
                HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR => {
                    put::<u16>(value, HSA_AMD_INTERFACE_VERSION.0)
                }
                HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR => {
                    put::<u16>(value, HSA_AMD_INTERFACE_VERSION.1)
                }
                other => return Err(super::bad_attribute("system", other)),
            }
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_status_string,
    hsa_init,
    hsa_shut_down,
    hsa_system_get_info,
);

/// `HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED`: amdkfd's interface is 1.12 or later (ROCR 7's
/// test; `hsa_amd_portable_export_dmabuf` then exports through `AMDKFD_IOC_EXPORT_DMABUF`).
#[cfg(feature = "linux")]
fn dmabuf_supported(st: &state::State) -> bool {
    st.platform_ref().kfd_version() >= (1, 12)
}

#[cfg(not(feature = "linux"))]
fn dmabuf_supported(_: &state::State) -> bool {
    false
}

/// `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED` (`hsa_runtime::VirtualMemory::supported`).
#[cfg(feature = "linux")]
fn vmem_supported(st: &state::State) -> bool {
    st.services().vmem().supported()
}

#[cfg(not(feature = "linux"))]
fn vmem_supported(_: &state::State) -> bool {
    false
}
