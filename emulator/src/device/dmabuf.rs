//! Sharing buffer objects as dma-bufs on the emulated device: `EXPORT_DMABUF` and
//! `IMPORT_DMABUF` (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`,
//! `kfd_ioctl_export_dmabuf`, `kfd_ioctl_import_dmabuf`).
//!
//! An export is a new descriptor of the buffer object's memfd (`EPERM` for USERPTR memory, as
//! amdgpu); an import (from this process or, through `pidfd_getfd`, another one's device)
//! makes those pages a buffer object of this device at the address given, which the user maps
//! for the host through the descriptor itself (`MapTarget::DmaBuf`). A descriptor that is not
//! an emulated device's export is `EINVAL`, as amdgpu refuses a foreign dma-buf.

use std::sync::{Arc, PoisonError};

use rustix::io::Errno;

use hsa_linux::kfd::abi::{ExportDmabufArgs, GetDmabufInfoArgs, ImportDmabufArgs};

use super::mem::{self, Backing, PAGE_BYTES};
use super::memory::{Alloc, Kind};
use super::Device;

/// EXPORT_DMABUF as `kfd_ioctl_export_dmabuf`: `EINVAL` for an unknown handle (or its GPU)
/// or flags other than `O_CLOEXEC`/`O_RDWR`; `EPERM` for `USERPTR` memory (amdgpu will not
/// export user pages) and `EINVAL` for the doorbell and MMIO pages; otherwise a new
/// descriptor of the buffer object's memfd pages, which the caller owns.
pub(crate) fn export_dmabuf(device: &Arc<Device>, a: &mut ExportDmabufArgs) -> Result<(), Errno> {
    use std::os::fd::IntoRawFd;
    let allowed = (rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::RDWR).bits();
    if a.flags & !allowed != 0 {
        return Err(Errno::INVAL);
    }
    device.gpu_by_id((a.handle >> 32) as u32)?;
    let allocs = device.allocs.read().unwrap_or_else(PoisonError::into_inner);
    let bo = allocs.by_handle(a.handle).ok_or(Errno::INVAL)?;
    let backing = match bo.kind {
        Kind::Userptr => return Err(Errno::PERM),
        Kind::Doorbell | Kind::MmioRemap | Kind::Aliased | Kind::GemVa => return Err(Errno::INVAL),
        Kind::Vram | Kind::Gtt | Kind::Imported => bo.backing.as_ref().ok_or(Errno::INVAL)?,
    };
    let fd = backing.export()?.into_raw_fd();
    a.dmabuf_fd = fd as u32;
    Ok(())
}

/// IMPORT_DMABUF as `kfd_ioctl_import_dmabuf`: the dma-buf's pages (an emulated device's
/// export, of this process or another: the memfd is shared) become a new buffer object of
/// this process at `va_addr` on `gpu_id`, the dma-buf's whole size, not yet mapped to any
/// GPU; the user maps them for the host through the dma-buf itself
/// ([`MapTarget::DmaBuf`](hsa_linux::kfd::driver::MapTarget::DmaBuf)). Address 0 makes an
/// object with no GPU address, which MAP_MEMORY_TO_GPU refuses (`EINVAL`) and the render
/// node's GEM_VA maps. `EINVAL` for an unknown GPU, an unaligned or overlapping
/// address, or a descriptor that is not an emulated device's dma-buf; `EBADF` for a
/// number that names no descriptor.
pub(crate) fn import_dmabuf(device: &Arc<Device>, a: &mut ImportDmabufArgs) -> Result<(), Errno> {
    let gpu = device.gpu_by_id(a.gpu_id)?;
    // Address 0: an object with no GPU address (libhsakmt imports a dma-buf so for its
    // handle aperture, `mem_handle_aperture`), reached through the render node's GEM_VA as an
    // ALLOC_MEMORY_OF_GPU at address 0 is.
    if a.va_addr % PAGE_BYTES != 0 {
        return Err(Errno::INVAL);
    }
    let backing = Arc::new(Backing::import(a.dmabuf_fd)?);
    let region = backing.region();
    let size = backing.len();
    if a.va_addr.checked_add(size).is_none() {
        return Err(Errno::INVAL);
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if a.va_addr != 0 && allocs.overlaps(a.va_addr, size) {
        return Err(Errno::INVAL);
    }
    let id = allocs.next_id();
    let handle = (u64::from(gpu.gpu_id) << 32) | u64::from(id);
    allocs.insert(Alloc {
        va: a.va_addr,
        size,
        gpu_id: gpu.gpu_id,
        handle,
        mmap_offset: 0,
        kind: Kind::Imported,
        region,
        backing: Some(backing),
        mapped: Default::default(),
        pins: 0,
        coarse: false,
    });
    a.handle = handle;
    Ok(())
}

/// GET_DMABUF_INFO as `kfd_ioctl_get_dmabuf_info` and `amdgpu_amdkfd_get_dmabuf_info`: the
/// size (bytes), GPU and memory flags (`VRAM`, with `PUBLIC` when the CPU may reach it, or
/// `GTT`) of the buffer object behind a dma-buf an emulated device exported, from this
/// process or another, and its metadata (what a render node's `AMDGPU_GEM_METADATA` set):
/// `metadata_size` comes back as the metadata's size in bytes, and with a `metadata_ptr`
/// the metadata is copied there, `EINVAL` when the `metadata_size` given is smaller (the
/// size still comes back, so the caller can ask again, as libhsakmt does), `EFAULT` when that
/// memory is not the process's. `EINVAL` when the device has no GPU or the descriptor is no
/// emulated buffer object's dma-buf (amdgpu refuses a foreign one so); `EBADF` for a number
/// that names no descriptor.
pub(crate) fn get_dmabuf_info(
    device: &Arc<Device>,
    a: &mut GetDmabufInfoArgs,
) -> Result<(), Errno> {
    if device.gpus.is_empty() {
        return Err(Errno::INVAL);
    }
    let (info, state) = mem::dmabuf_info_and_state(a.dmabuf_fd)?;
    a.size = info.size;
    let room = a.metadata_size as usize;
    a.metadata_size = state.data.len() as u32;
    if a.metadata_ptr != 0 {
        if room < state.data.len() {
            return Err(Errno::INVAL);
        }
        device.user.write(a.metadata_ptr, &state.data)?;
    }
    a.gpu_id = info.gpu_id;
    a.flags = info.flags;
    Ok(())
}
