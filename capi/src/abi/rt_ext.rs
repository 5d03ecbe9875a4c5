//! hsa-rt's own C types (`include/hsa_rt_ext.h`): host kernels on the emulated device.

#[allow(unused_imports)]
use super::*;
use core::ffi::c_void;

/// `hsa_rt_dispatch_t`: what a host kernel sees of one work-group (sizes in work-items,
/// addresses are device addresses, which on the emulated device are host addresses too).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HsaRtDispatch {
    /// Grid dimensions, 1..=3.
    pub dimensions: u32,
    /// Grid size x/y/z, work-items.
    pub grid_size: [u32; 3],
    /// Work-group size x/y/z, work-items.
    pub workgroup_size: [u16; 3],
    /// Padding.
    pub reserved0: u16,
    /// Work-groups per dimension.
    pub workgroup_count: [u32; 3],
    /// This work-group's id x/y/z.
    pub workgroup_id: [u32; 3],
    /// Group segment bytes of the dispatch.
    pub group_segment_size: u32,
    /// Private segment bytes per work-item.
    pub private_segment_size: u32,
    /// The kernel object (kernel descriptor address).
    pub kernel_object: u64,
    /// The kernarg segment.
    pub kernarg_address: *mut c_void,
    /// This work-group's group segment (LDS): `group_segment_size` zeroed bytes, valid
    /// during the call.
    pub group_segment: *mut c_void,
}
const _: () = assert!(core::mem::size_of::<HsaRtDispatch>() == 80);
const _: () = assert!(core::mem::offset_of!(HsaRtDispatch, workgroup_count) == 24);
const _: () = assert!(core::mem::offset_of!(HsaRtDispatch, kernel_object) == 56);
const _: () = assert!(core::mem::offset_of!(HsaRtDispatch, group_segment) == 72);

/// `hsa_rt_host_kernel_fn`: called once per work-group; a status other than SUCCESS stops the
/// queue with that error.
pub type HostKernelFn = unsafe extern "C" fn(*const HsaRtDispatch, *mut c_void) -> u32;
