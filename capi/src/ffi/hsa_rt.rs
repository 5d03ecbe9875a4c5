//! hsa-rt's extension (`include/hsa_rt_ext.h`): host implementations of kernels on the
//! emulated device, registered from C.
#![allow(unsafe_code)]

#[cfg(feature = "emulated")]
use alloc::format;
use core::ffi::c_void;

use hsa_core::{bail, Status};
#[cfg(feature = "emulated")]
use hsa_emu::device::DispatchContext;

use super::{guard, HsaStatus};
use crate::abi::*;
use crate::state;

/// A C host kernel and its `user` pointer.
#[cfg(feature = "emulated")]
struct CKernel {
    func: HostKernelFn,
    user: usize,
}

#[cfg(feature = "emulated")]
impl CKernel {
    fn run(&self, ctx: &mut DispatchContext<'_>) -> Result<(), hsa_core::Error> {
        let mut d = HsaRtDispatch {
            dimensions: u32::from(ctx.dimensions()),
            grid_size: ctx.grid_size(),
            workgroup_size: ctx.workgroup_size(),
            reserved0: 0,
            workgroup_count: ctx.workgroup_count(),
            workgroup_id: ctx.workgroup_id(),
            group_segment_size: ctx.group_segment_size_bytes(),
            private_segment_size: ctx.private_segment_size_bytes(),
            kernel_object: ctx.kernel_object().0,
            kernarg_address: ctx.kernarg_address().0 as *mut c_void,
            group_segment: core::ptr::null_mut(),
        };
        d.group_segment = ctx.group_segment().as_mut_ptr().cast();
        // SAFETY: the application's function with the signature hsa_rt_ext.h declares; `d`
        // and the group segment it points to live across the call.
        let raw = unsafe { (self.func)(&d, self.user as *mut c_void) };
        match Status::from_raw(raw) {
            Ok(Status::Success) => Ok(()),
            // The error carries the status; its Display names it.
            Ok(s) => bail!(s, "host kernel returned an error: {s}"),
            Err(_) => bail!(Status::Error, "host kernel returned {raw:#x}"),
        }
    }
}

/// `hsa_rt_emulated_register_kernel`: registers `fn` (with `user`) as the implementation of
/// the kernel whose kernel object is `kernel_object` (the device address of its kernel
/// descriptor: `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT` of its symbol, what a dispatch
/// packet's `kernel_object` holds) on the emulated device; replaces an earlier registration
/// for it. Register after loading the code object. The device's messages name the kernel by
/// its kernel object.
///
/// # Errors
/// `NOT_INITIALIZED` before `hsa_init`; `INVALID_ARGUMENT` for a NULL `fn` or a kernel object
/// that is 0 or not 64-byte aligned; `INVALID_AGENT` when the runtime is not on the emulated
/// device (always in a build without the `emulated` feature).
///
/// # Safety
/// `fn` is NULL or a valid function, callable from another thread with `user` until the
/// runtime shuts down.
pub unsafe extern "C" fn hsa_rt_emulated_register_kernel(
    kernel_object: u64,
    func: Option<HostKernelFn>,
    user: *mut c_void,
) -> HsaStatus {
    guard("hsa_rt_emulated_register_kernel", || {
        let st = state::state()?;
        let Some(func) = func else {
            bail!(Status::InvalidArgument, "fn is NULL");
        };
        #[cfg(not(feature = "emulated"))]
        {
            let _ = (kernel_object, func, user);
            bail!(
                Status::InvalidAgent,
                "the runtime runs on {}, not on the emulated device (this library was built \
                 without it)",
                st.rt().platform().device_kind()
            );
        }
        #[cfg(feature = "emulated")]
        let Some(emulated) = st.device().emulated() else {
            bail!(
                Status::InvalidAgent,
                "the runtime runs on {}, not on the emulated device",
                st.rt().platform().device_kind()
            );
        };
        #[cfg(feature = "emulated")]
        let kernel = CKernel {
            func,
            user: user as usize,
        };
        #[cfg(feature = "emulated")]
        {
            let label = format!("at kernel object {kernel_object:#x}");
            emulated.register_kernel(hsa_core::GpuVa(kernel_object), &label, move |ctx| {
                kernel.run(ctx)
            })?;
            Ok(Status::Success)
        }
    })
}

export!(hsa_rt_emulated_register_kernel,);
