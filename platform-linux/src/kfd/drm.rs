//! The render node's GEM requests the virtual-memory API makes
//! ([`crate::LinuxPlatform`]'s `VirtualAddressRanges`): import a buffer object's dma-buf as a
//! GEM object, map it into the GPU's VM at an address, find its host mmap offset, close it.
//! ROCR 7 makes the same requests through libdrm (`amdgpu_bo_import`, `amdgpu_bo_va_op`,
//! `amdgpu_bo_free`; `GetAmdgpuDeviceArgs` for the mmap offset).
//!
//! Layouts and numbers from `drm.h` and `amdgpu_drm.h` (libdrm's copies of the kernel's uapi
//! headers); `tests/kfd_abi_c.rs` compares them with the installed headers. Each wrapper goes
//! through [`KfdDriver::render_ioctl`], whose requests carry no pointer, so they are safe.

use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::abi::{ioc, IOC_READ, IOC_WRITE};
use super::driver::KfdDriver;

/// `DRM_IOCTL_BASE`, the DRM ioctl type byte `'d'`.
pub const DRM_IOCTL_BASE: u8 = b'd';
/// `DRM_COMMAND_BASE`: the first driver-specific request number.
pub const DRM_COMMAND_BASE: u8 = 0x40;

/// `struct drm_prime_handle` (12 bytes): a dma-buf descriptor and a GEM handle.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmPrimeHandle {
    /// From the kernel (FD_TO_HANDLE): the GEM handle.
    pub handle: u32,
    /// To the kernel (HANDLE_TO_FD only): `DRM_CLOEXEC`, `DRM_RDWR`.
    pub flags: u32,
    /// To the kernel (FD_TO_HANDLE): the dma-buf descriptor.
    pub fd: i32,
}

/// `struct drm_gem_close` (8 bytes).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmGemClose {
    /// The GEM handle to close.
    pub handle: u32,
    /// Zero.
    pub pad: u32,
}

/// `union drm_amdgpu_gem_mmap` (8 bytes): in, the GEM handle (`in.handle`, then `in._pad`);
/// out, the object's mmap offset on the render node (`out.addr_ptr`), over the same bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemMmap {
    /// In: `in.handle` in the low 32 bits (`in._pad` 0); out: `out.addr_ptr`.
    pub value: u64,
}

/// `struct drm_amdgpu_gem_va` (40 bytes; kernels from 6.x append sync-object fields, which a
/// 40-byte argument leaves zero: no sync objects).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuGemVa {
    /// The GEM handle (unused by `AMDGPU_VA_OP_CLEAR`).
    pub handle: u32,
    /// Zero.
    pub _pad: u32,
    /// `AMDGPU_VA_OP_*`.
    pub operation: u32,
    /// `AMDGPU_VM_PAGE_*` (and `AMDGPU_VM_DELAY_UPDATE`, `AMDGPU_VM_MTYPE_*`).
    pub flags: u32,
    /// GPU virtual address, bytes, page-aligned.
    pub va_address: u64,
    /// Byte offset in the object, page-aligned.
    pub offset_in_bo: u64,
    /// Bytes, page-aligned.
    pub map_size: u64,
}

const _: () = assert!(size_of::<DrmPrimeHandle>() == 12);
const _: () = assert!(size_of::<DrmGemClose>() == 8);
const _: () = assert!(size_of::<DrmAmdgpuGemMmap>() == 8);
const _: () = assert!(size_of::<DrmAmdgpuGemVa>() == 40);

/// `DRM_IOCTL_PRIME_FD_TO_HANDLE`: `DRM_IOWR(0x2e, struct drm_prime_handle)`.
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u32 = ioc(
    IOC_READ | IOC_WRITE,
    DRM_IOCTL_BASE,
    0x2e,
    size_of::<DrmPrimeHandle>(),
);
/// `DRM_IOCTL_GEM_CLOSE`: `DRM_IOW(0x09, struct drm_gem_close)`.
pub const DRM_IOCTL_GEM_CLOSE: u32 = ioc(IOC_WRITE, DRM_IOCTL_BASE, 0x09, size_of::<DrmGemClose>());
/// `DRM_IOCTL_AMDGPU_GEM_MMAP`: `DRM_IOWR(DRM_COMMAND_BASE + 0x01, union drm_amdgpu_gem_mmap)`.
pub const DRM_IOCTL_AMDGPU_GEM_MMAP: u32 = ioc(
    IOC_READ | IOC_WRITE,
    DRM_IOCTL_BASE,
    DRM_COMMAND_BASE + 0x01,
    size_of::<DrmAmdgpuGemMmap>(),
);
/// `DRM_IOCTL_AMDGPU_GEM_VA`: `DRM_IOW(DRM_COMMAND_BASE + 0x08, struct drm_amdgpu_gem_va)`.
pub const DRM_IOCTL_AMDGPU_GEM_VA: u32 = ioc(
    IOC_WRITE,
    DRM_IOCTL_BASE,
    DRM_COMMAND_BASE + 0x08,
    size_of::<DrmAmdgpuGemVa>(),
);

/// `AMDGPU_VA_OP_MAP`.
pub const AMDGPU_VA_OP_MAP: u32 = 1;
/// `AMDGPU_VA_OP_UNMAP`.
pub const AMDGPU_VA_OP_UNMAP: u32 = 2;
/// `AMDGPU_VM_PAGE_READABLE`.
pub const AMDGPU_VM_PAGE_READABLE: u32 = 1 << 1;
/// `AMDGPU_VM_PAGE_WRITEABLE`.
pub const AMDGPU_VM_PAGE_WRITEABLE: u32 = 1 << 2;
/// `AMDGPU_VM_PAGE_EXECUTABLE`.
pub const AMDGPU_VM_PAGE_EXECUTABLE: u32 = 1 << 3;

#[allow(unsafe_code)] // the one call of KfdDriver::render_ioctl
fn render_call<A: IntoBytes + FromBytes>(
    drv: &dyn KfdDriver,
    gpu_id: u32,
    request: u32,
    arg: &mut A,
) -> Result<(), Errno> {
    // SAFETY: every caller passes one of the four requests KfdDriver::render_ioctl allows
    // with its own argument struct (sizes asserted above), none of which carries a pointer;
    // a GEM_VA map's address is the caller's range (`gem_va_map`'s contract is its caller's).
    unsafe { drv.render_ioctl(gpu_id, request, arg.as_mut_bytes()) }
}

/// `DRM_IOCTL_PRIME_FD_TO_HANDLE` on GPU `gpu_id`'s render node: the GEM handle of dma-buf
/// `fd` there (the handle of an earlier import of the same buffer, when there is one; each
/// import still needs its own [`gem_close`] only once per distinct handle).
///
/// # Errors
/// The errno: `EBADF` for a descriptor that is not open, `EINVAL` for one that is not a
/// dma-buf the GPU can import, `ENODEV` for a driver without render nodes.
pub fn prime_fd_to_handle(drv: &dyn KfdDriver, gpu_id: u32, fd: i32) -> Result<u32, Errno> {
    let mut a = DrmPrimeHandle {
        handle: 0,
        flags: 0,
        fd,
    };
    render_call(drv, gpu_id, DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut a)?;
    Ok(a.handle)
}

/// `DRM_IOCTL_GEM_CLOSE` of `handle` on GPU `gpu_id`'s render node; its GPU mappings there go
/// with it.
///
/// # Errors
/// The errno (`EINVAL` for an unknown handle).
pub fn gem_close(drv: &dyn KfdDriver, gpu_id: u32, handle: u32) -> Result<(), Errno> {
    render_call(
        drv,
        gpu_id,
        DRM_IOCTL_GEM_CLOSE,
        &mut DrmGemClose { handle, pad: 0 },
    )
}

/// `DRM_IOCTL_AMDGPU_GEM_MMAP`: the render-node mmap offset of GEM object `handle`.
///
/// # Errors
/// The errno (`ENOENT` for an unknown handle).
pub fn gem_mmap_offset(drv: &dyn KfdDriver, gpu_id: u32, handle: u32) -> Result<u64, Errno> {
    let mut a = DrmAmdgpuGemMmap {
        value: u64::from(handle),
    };
    render_call(drv, gpu_id, DRM_IOCTL_AMDGPU_GEM_MMAP, &mut a)?;
    Ok(a.value)
}

/// `DRM_IOCTL_AMDGPU_GEM_VA` with `operation` (`AMDGPU_VA_OP_MAP` or `_UNMAP`): maps (or
/// unmaps) `size` bytes of GEM object `handle` from byte `offset` at GPU address `va` in GPU
/// `gpu_id`'s VM, with page `flags` (`AMDGPU_VM_PAGE_*`; 0 for an unmap).
///
/// The caller owns `[va, va + size)` of the GPU's address space (a reserved range of the
/// process, nothing else mapped there).
///
/// # Errors
/// The errno: `EINVAL` for an unaligned or overlapping range or bad flags, `ENOENT` for an
/// unknown handle or (unmap) no mapping of the object at `va`.
#[allow(clippy::too_many_arguments)] // the fields of drm_amdgpu_gem_va
pub fn gem_va(
    drv: &dyn KfdDriver,
    gpu_id: u32,
    operation: u32,
    handle: u32,
    flags: u32,
    va: u64,
    offset: u64,
    size: u64,
) -> Result<(), Errno> {
    let mut a = DrmAmdgpuGemVa {
        handle,
        _pad: 0,
        operation,
        flags,
        va_address: va,
        offset_in_bo: offset,
        map_size: size,
    };
    render_call(drv, gpu_id, DRM_IOCTL_AMDGPU_GEM_VA, &mut a)
}
