//! hsa-rt's bare-metal entry points (`include/hsa_rt_ext.h`, feature `baremetal`): the
//! firmware registers its host with `hsa_rt_baremetal_init` before `hsa_init`, and its ISR for
//! the GPU's IH interrupt calls `hsa_rt_baremetal_interrupt` (`crate::backend::baremetal`).
#![allow(unsafe_code)]

use hsa_core::{bail, Status};

use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::backend;

/// `hsa_rt_baremetal_init`: registers the host the next first `hsa_init` builds the runtime
/// over: checks it and copies its tables (they need not outlive the call); its callbacks and
/// `context` must stay valid until the last `hsa_shut_down` returns. Replaces an earlier
/// registration.
///
/// # Errors
/// `INVALID_ARGUMENT` for a NULL `host`, a `version` other than
/// `HSA_RT_BAREMETAL_HOST_VERSION`, a NULL required callback (`map_queue`, `unmap_queue`,
/// `wait_for_interrupt`, `timestamp_ticks`), a zero `timestamp_frequency_hz`, an `ih_filter`
/// that is neither 0 nor a filter with first VMID <= last, a table pointer
/// that is NULL with a non-zero count, an unknown carve-out kind, a private-VRAM carve-out
/// with a `virt_base` or without `clear_device_memory`, a CPU-visible one without
/// `virt_base`, or a node name that is not NUL-terminated UTF-8 (the message names the field
/// and index); `INVALID_RUNTIME_STATE` while the runtime is initialized. What only the
/// platform checks (overlapping carve-outs, doorbells outside the aperture, the IH ring's
/// alignment) is reported by `hsa_init`.
///
/// # Safety
/// `host` is NULL or points to a host struct whose tables are valid for their counts and
/// which keeps the promises `hsa_rt_ext.h` lists (memory, doorbells and IH ring mapped and
/// used by this runtime only; callbacks callable from any thread).
pub unsafe extern "C" fn hsa_rt_baremetal_init(host: *const HsaRtBaremetalHost) -> HsaStatus {
    guard("hsa_rt_baremetal_init", || {
        non_null(host, "host")?;
        if crate::state::state().is_ok() {
            bail!(
                Status::InvalidRuntimeState,
                "the runtime is initialized: register the host before hsa_init or after the \
                 last hsa_shut_down"
            );
        }
        // SAFETY: non-NULL; the caller's contract covers the struct (of the size its
        // version gives: version 2's when it says 2) and its tables.
        unsafe {
            if (*host).version == crate::abi::HOST_VERSION {
                let v2 = &*host.cast::<crate::abi::HsaRtBaremetalHostV2>();
                backend::baremetal::register(&v2.base, Some(v2))
            } else {
                backend::baremetal::register(&*host, None)
            }
        }?;
        Ok(Status::Success)
    })
}

/// `hsa_rt_baremetal_interrupt`: the firmware's ISR for the GPU's IH interrupt calls this.
/// Drains the IH ring, marks the events its end-of-pipe entries name, writes the read pointer
/// back and wakes waiters (`BaremetalPlatform::on_interrupt`). Returns the number of events
/// signaled; 0 when the runtime is not initialized. Never blocks, never allocates.
pub extern "C" fn hsa_rt_baremetal_interrupt() -> u64 {
    backend::baremetal::interrupt()
}

export!(hsa_rt_baremetal_init, hsa_rt_baremetal_interrupt,);
