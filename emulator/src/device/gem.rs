//! The render node's GEM objects and their GPU mappings: what amdkfd 1.15 promises ("manage
//! mappings in compute VMs with the GEM_VA ioctl") and ROCR 7 uses from that version on, for
//! its virtual-memory API (`hsa_amd_vmem_*`, HIP's `hipMemCreate`/`hipMemMap`) and its dma-buf
//! IPC: export a buffer object as a dma-buf (`EXPORT_DMABUF`), import it on the render node
//! (`PRIME_FD_TO_HANDLE`), map pages of it at a GPU address (`AMDGPU_GEM_VA`), map it for the
//! CPU (`AMDGPU_GEM_MMAP`, then mmap of the render node), close it (`GEM_CLOSE`).
//!
//! Answered as amdgpu answers them (linux `drm_prime.c`, `drm_gem.c`, `amdgpu_gem.c`
//! `amdgpu_gem_va_ioctl`, `amdgpu_vm.c` `amdgpu_vm_bo_map`/`amdgpu_vm_bo_unmap`; layouts from
//! `amdgpu_drm.h` and `drm.h`):
//! - `PRIME_FD_TO_HANDLE`: `EBADF` for a number that is no descriptor, `EINVAL` for one that
//!   is not an emulated device's dma-buf; a dma-buf imported before on the same render node
//!   gets its first handle again (`drm_prime_lookup_buf_handle`).
//! - `PRIME_HANDLE_TO_FD`: `EINVAL` for flags other than `DRM_CLOEXEC`/`DRM_RDWR`, `ENOENT`
//!   for an unknown handle; a new descriptor of the object's pages.
//! - `GEM_CLOSE`: `EINVAL` for an unknown handle; the object's mappings on that GPU go with
//!   it (`amdgpu_gem_object_close` deletes its `bo_va`).
//! - `AMDGPU_GEM_MMAP`: `ENOENT` for an unknown handle; the object's render-node mmap offset.
//! - `AMDGPU_GEM_METADATA` (`amdgpu_gem_metadata_ioctl`) and `AMDGPU_GEM_OP`
//!   (`amdgpu_gem_op_ioctl`: GET_GEM_CREATE_INFO, SET_PLACEMENT): `ENOENT` for an unknown
//!   handle; the metadata, tiling flags and preferred domains belong to the buffer object, kept
//!   in an extended attribute of its memfd (`user.hsa-emu.amdgpu-bo`), so every process that
//!   imported its dma-buf sees what one of them set (ROCR 7.2.4 marks the buffer objects it
//!   shares for IPC so and checks the mark on import). Where the host's memfds take no user
//!   extended attributes (Linux before 6.6) both answer `EOPNOTSUPP`.
//! - `AMDGPU_GEM_VA`, in the kernel's order: `EINVAL` for an address below 64 KiB
//!   (`AMDGPU_VA_RESERVED_BOTTOM`), in the canonical hole, or whose range passes the VM's top
//!   (2^48 less `AMDGPU_VA_RESERVED_TOP`), for flags outside `AMDGPU_VM_*`'s valid set, for an
//!   unknown operation; `ENOENT` for an unknown handle (all but CLEAR) or for a timeline or
//!   input sync object (the emulated node has none); `EINVAL` for an address, offset or size
//!   that is not whole pages, a zero size, a range past the object's end, or one that
//!   overlaps what the VM maps (`amdgpu_vm_bo_map`'s conflict); UNMAP of an address where the
//!   object has no mapping is `ENOENT`.
//!
//! A queue whose ring or pointers lie in a GEM_VA mapping holds its pages until it is
//! destroyed (amdkfd's `kfd_queue_acquire_buffers` takes a reference on the object), so an
//! UNMAP or GEM_CLOSE under a running queue takes nothing from its engine.
//!
//! Where this differs from amdgpu:
//! - The GEM handles belong to the GPU's render node, not to each open of it (a process that
//!   opens one render node twice sees one handle table; libdrm and libhsakmt open each once).
//! - The GPUs of a process share one address space here (the emulated device's buffer
//!   objects live in one map): a mapping may not overlap a KFD buffer object of another GPU,
//!   which amdgpu allows as the GPUs' VMs are separate. The same pages at the same address on
//!   several GPUs (ROCR maps a vmem handle on each agent given access) are one mapping reached
//!   by each of them.
//! - `AMDGPU_VM_PAGE_PRT` (partially resident mappings) is `EINVAL`: the emulated VM has no
//!   PRT pages. CLEAR and REPLACE remove whole mappings only: a range that cuts one is
//!   `EINVAL` where amdgpu would split the mapping.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError};

use hsa_linux::kfd::abi::{IOC_READ, IOC_WRITE};
use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::drm::DRM_IOCTL_BASE;
use super::mem::{Backing, PAGE_BYTES};
use super::memory::{render_mmap_offset, Alloc, Kind};
use super::{lock, Device};

const fn drm_ioc(dir: u32, nr: u8, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((DRM_IOCTL_BASE as u32) << 8) | nr as u32
}

/// `DRM_IOCTL_GEM_CLOSE`'s number.
const DRM_GEM_CLOSE: u8 = 0x09;
/// `DRM_IOCTL_PRIME_HANDLE_TO_FD`'s number.
const DRM_PRIME_HANDLE_TO_FD: u8 = 0x2d;
/// `DRM_IOCTL_PRIME_FD_TO_HANDLE`'s number.
const DRM_PRIME_FD_TO_HANDLE: u8 = 0x2e;
/// `DRM_IOCTL_AMDGPU_GEM_MMAP`'s number (`DRM_COMMAND_BASE` + `DRM_AMDGPU_GEM_MMAP`).
const DRM_AMDGPU_GEM_MMAP: u8 = 0x41;
/// `DRM_IOCTL_AMDGPU_GEM_VA`'s number (`DRM_COMMAND_BASE` + `DRM_AMDGPU_GEM_VA`).
const DRM_AMDGPU_GEM_VA: u8 = 0x48;
/// `DRM_IOCTL_AMDGPU_GEM_METADATA`'s number (`DRM_COMMAND_BASE` + `DRM_AMDGPU_GEM_METADATA`).
const DRM_AMDGPU_GEM_METADATA: u8 = 0x46;
/// `DRM_IOCTL_AMDGPU_GEM_OP`'s number (`DRM_COMMAND_BASE` + `DRM_AMDGPU_GEM_OP`).
const DRM_AMDGPU_GEM_OP: u8 = 0x50;

/// `DRM_IOCTL_AMDGPU_GEM_METADATA`: `_IOWR('d', 0x46, struct drm_amdgpu_gem_metadata)`.
pub const DRM_IOCTL_AMDGPU_GEM_METADATA: u32 = drm_ioc(
    IOC_READ | IOC_WRITE,
    DRM_AMDGPU_GEM_METADATA,
    size_of::<DrmAmdgpuGemMetadata>(),
);
/// `DRM_IOCTL_AMDGPU_GEM_OP`: `_IOWR('d', 0x50, struct drm_amdgpu_gem_op)` of 24 bytes (Linux
/// 6.16 added `num_entries`; the 16-byte struct of earlier headers is taken too).
pub const DRM_IOCTL_AMDGPU_GEM_OP: u32 = drm_ioc(
    IOC_READ | IOC_WRITE,
    DRM_AMDGPU_GEM_OP,
    size_of::<DrmAmdgpuGemOp>(),
);

/// `AMDGPU_GEM_METADATA_OP_SET_METADATA`.
pub const AMDGPU_GEM_METADATA_OP_SET_METADATA: u32 = 1;
/// `AMDGPU_GEM_METADATA_OP_GET_METADATA`.
pub const AMDGPU_GEM_METADATA_OP_GET_METADATA: u32 = 2;
/// `AMDGPU_GEM_OP_GET_GEM_CREATE_INFO`: the object's `struct drm_amdgpu_gem_create_in`.
pub const AMDGPU_GEM_OP_GET_GEM_CREATE_INFO: u32 = 0;
/// `AMDGPU_GEM_OP_SET_PLACEMENT`: the object's preferred domains.
pub const AMDGPU_GEM_OP_SET_PLACEMENT: u32 = 1;
/// `AMDGPU_GEM_DOMAIN_CPU`.
pub const AMDGPU_GEM_DOMAIN_CPU: u64 = 0x1;
/// `AMDGPU_GEM_DOMAIN_GTT`.
pub const AMDGPU_GEM_DOMAIN_GTT: u64 = 0x2;
/// `AMDGPU_GEM_DOMAIN_VRAM`.
pub const AMDGPU_GEM_DOMAIN_VRAM: u64 = 0x4;

/// `struct drm_amdgpu_gem_metadata` (`amdgpu_drm.h`, 288 bytes): a buffer object's
/// user-mode metadata and tiling flags, to set or get.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuGemMetadata {
    /// The GEM handle.
    pub handle: u32,
    /// `AMDGPU_GEM_METADATA_OP_*`.
    pub op: u32,
    /// The metadata's flags (no flags are defined).
    pub flags: u64,
    /// `AMDGPU_TILING_*`.
    pub tiling_info: u64,
    /// Bytes of `data` in use (at most 256).
    pub data_size_bytes: u32,
    /// The metadata.
    pub data: [u32; 64],
    /// The inner struct's padding to 8 bytes.
    pub pad: u32,
}

/// `struct drm_amdgpu_gem_op` (`amdgpu_drm.h`, 24 bytes since Linux 6.16).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuGemOp {
    /// The GEM handle.
    pub handle: u32,
    /// `AMDGPU_GEM_OP_*`.
    pub op: u32,
    /// GET_GEM_CREATE_INFO: user pointer to a `struct drm_amdgpu_gem_create_in`;
    /// SET_PLACEMENT: `AMDGPU_GEM_DOMAIN_*`.
    pub value: u64,
    /// GET_MAPPING_INFO's entries (not emulated).
    pub num_entries: u32,
    /// Padding.
    pub padding: u32,
}

/// `DRM_IOCTL_GEM_CLOSE`: `_IOW('d', 0x09, struct drm_gem_close)`.
pub const DRM_IOCTL_GEM_CLOSE: u32 = drm_ioc(IOC_WRITE, DRM_GEM_CLOSE, size_of::<DrmGemClose>());
/// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: `_IOWR('d', 0x2d, struct drm_prime_handle)`.
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u32 = drm_ioc(
    IOC_READ | IOC_WRITE,
    DRM_PRIME_HANDLE_TO_FD,
    size_of::<DrmPrimeHandle>(),
);
/// `DRM_IOCTL_PRIME_FD_TO_HANDLE`: `_IOWR('d', 0x2e, struct drm_prime_handle)`.
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u32 = drm_ioc(
    IOC_READ | IOC_WRITE,
    DRM_PRIME_FD_TO_HANDLE,
    size_of::<DrmPrimeHandle>(),
);
/// `DRM_IOCTL_AMDGPU_GEM_MMAP`: `_IOWR('d', 0x41, union drm_amdgpu_gem_mmap)`.
pub const DRM_IOCTL_AMDGPU_GEM_MMAP: u32 = drm_ioc(IOC_READ | IOC_WRITE, DRM_AMDGPU_GEM_MMAP, 8);
/// `DRM_IOCTL_AMDGPU_GEM_VA` as libdrm's `drmCommandWriteRead` sends it: `_IOWR` of the
/// 40-byte `struct drm_amdgpu_gem_va` of Linux before 6.16 (amdgpu's table says `_IOW`;
/// the kernel goes by the number).
pub const DRM_IOCTL_AMDGPU_GEM_VA: u32 = drm_ioc(
    IOC_READ | IOC_WRITE,
    DRM_AMDGPU_GEM_VA,
    size_of::<DrmAmdgpuGemVa>(),
);

/// `AMDGPU_VA_OP_MAP`.
pub const AMDGPU_VA_OP_MAP: u32 = 1;
/// `AMDGPU_VA_OP_UNMAP`.
pub const AMDGPU_VA_OP_UNMAP: u32 = 2;
/// `AMDGPU_VA_OP_CLEAR`: remove every mapping in a range.
pub const AMDGPU_VA_OP_CLEAR: u32 = 3;
/// `AMDGPU_VA_OP_REPLACE`: CLEAR the range, then MAP.
pub const AMDGPU_VA_OP_REPLACE: u32 = 4;

/// `AMDGPU_VM_DELAY_UPDATE`.
pub const AMDGPU_VM_DELAY_UPDATE: u32 = 1 << 0;
/// `AMDGPU_VM_PAGE_READABLE`.
pub const AMDGPU_VM_PAGE_READABLE: u32 = 1 << 1;
/// `AMDGPU_VM_PAGE_WRITEABLE`.
pub const AMDGPU_VM_PAGE_WRITEABLE: u32 = 1 << 2;
/// `AMDGPU_VM_PAGE_EXECUTABLE`.
pub const AMDGPU_VM_PAGE_EXECUTABLE: u32 = 1 << 3;
/// `AMDGPU_VM_PAGE_PRT`: a partially resident mapping.
pub const AMDGPU_VM_PAGE_PRT: u32 = 1 << 4;
/// `AMDGPU_VM_MTYPE_MASK`: the memory type, bits 5..9.
pub const AMDGPU_VM_MTYPE_MASK: u32 = 0xf << 5;
/// `AMDGPU_VM_PAGE_NOALLOC`.
pub const AMDGPU_VM_PAGE_NOALLOC: u32 = 1 << 9;

/// `AMDGPU_VA_RESERVED_BOTTOM`: the lowest address GEM_VA maps, bytes.
pub const AMDGPU_VA_RESERVED_BOTTOM: u64 = 1 << 16;
/// `AMDGPU_VA_RESERVED_TOP`: the bytes at the VM's top GEM_VA leaves alone (the trap
/// handler's 8 KiB, the 2 MiB of 64-bit sequence numbers and the 2 MiB context save area).
pub const AMDGPU_VA_RESERVED_TOP: u64 = (2 << 12) + (2 << 20) + (2 << 20);
/// `AMDGPU_GMC_HOLE_START`: the first non-canonical address.
pub const AMDGPU_GMC_HOLE_START: u64 = 0x0000_8000_0000_0000;
/// `AMDGPU_GMC_HOLE_END`: the first canonical address above the hole.
pub const AMDGPU_GMC_HOLE_END: u64 = 0xffff_8000_0000_0000;
/// `AMDGPU_GMC_HOLE_MASK`: what of a sign-extended address the VM takes.
pub const AMDGPU_GMC_HOLE_MASK: u64 = 0x0000_ffff_ffff_ffff;
/// Bytes of a gfx9 GPU VM (48-bit addresses: `max_pfn` 2^36 pages of 4 KiB).
pub const VM_BYTES: u64 = 1 << 48;

/// `DRM_CLOEXEC` (`O_CLOEXEC`) and `DRM_RDWR` (`O_RDWR`): the flags PRIME_HANDLE_TO_FD takes.
const PRIME_FLAGS: u32 = 0o2_000_000 | 0o2;

/// `struct drm_gem_close` (8 bytes). Ref: `drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmGemClose {
    /// The handle to close.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct drm_prime_handle` (12 bytes). Ref: `drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmPrimeHandle {
    /// The GEM handle (from the kernel for FD_TO_HANDLE, to it for HANDLE_TO_FD).
    pub handle: u32,
    /// `DRM_CLOEXEC` / `DRM_RDWR` for HANDLE_TO_FD.
    pub flags: u32,
    /// The dma-buf descriptor.
    pub fd: i32,
}

/// `struct drm_amdgpu_gem_va` as before Linux 6.16 (40 bytes). Ref: `amdgpu_drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuGemVa {
    /// The GEM handle.
    pub handle: u32,
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_VA_OP_*`.
    pub operation: u32,
    /// `AMDGPU_VM_*`.
    pub flags: u32,
    /// The GPU address, bytes.
    pub va_address: u64,
    /// Where in the object the mapping starts, bytes.
    pub offset_in_bo: u64,
    /// Bytes mapped.
    pub map_size: u64,
}
const _: () = assert!(size_of::<DrmAmdgpuGemVa>() == 40);

/// The fields Linux 6.16 added to `struct drm_amdgpu_gem_va` (24 bytes after the first 40).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GemVaSyncobj {
    /// `vm_timeline_point`.
    pub vm_timeline_point: u64,
    /// `vm_timeline_syncobj_out`: a sync object handle, 0 for none.
    pub vm_timeline_syncobj_out: u32,
    /// `num_syncobj_handles`.
    pub num_syncobj_handles: u32,
    /// `input_fence_syncobj_handles`: a user pointer.
    pub input_fence_syncobj_handles: u64,
}

/// One GEM object: pages a render node reaches by handle.
#[derive(Debug)]
struct GemObject {
    backing: Arc<Backing>,
    /// The pages' identity ([`Backing::identity`]).
    identity: (u64, u64),
    /// Its render-node mmap offset (`AMDGPU_GEM_MMAP`).
    mmap_offset: u64,
}

/// One render node's GEM handles and the mappings it made.
#[derive(Debug, Default)]
struct GemFile {
    objects: BTreeMap<u32, GemObject>,
    /// This GPU's `GEM_VA` mappings: first byte → (handle, bytes).
    maps: BTreeMap<u64, (u32, u64)>,
    /// The last handle given out.
    last: u32,
}

/// The GEM state of a process's render nodes, by `gpu_id`.
#[derive(Debug, Default)]
pub(crate) struct GemFiles(HashMap<u32, GemFile>);

impl GemFiles {
    /// The backing of the object whose mmap offset on GPU `gpu_id` is `offset`.
    pub(crate) fn by_mmap_offset(&self, gpu_id: u32, offset: u64) -> Option<Arc<Backing>> {
        self.0
            .get(&gpu_id)?
            .objects
            .values()
            .find(|o| o.mmap_offset == offset)
            .map(|o| o.backing.clone())
    }
}

/// `struct drm_amdgpu_gem_va` as amdgpu takes it (64 bytes): the 40 bytes every version has,
/// then the sync-object fields (zero when the caller's struct is the shorter one).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct GemVaArgs {
    va: DrmAmdgpuGemVa,
    syncobj: GemVaSyncobj,
}

/// Answers a GEM request on GPU `gpu_id`'s render node; `None` when `request` is none of
/// this module's. As `drm_ioctl`, the request is found by its number alone (libdrm's
/// `drmCommandWriteRead` sends `GEM_VA` as `_IOWR` where amdgpu's table says `_IOW`), and the
/// caller's argument (`arg`, `_IOC_SIZE(request)` bytes) is copied in up to the kernel's size
/// with the rest zero, and back out (for the requests that return something) up to the
/// smaller of the two.
pub(crate) fn ioctl(
    device: &Device,
    gpu_id: u32,
    request: u32,
    arg: &mut [u8],
) -> Option<Result<(), Errno>> {
    // Another type, or an argument that is not the request's size: the render node's other
    // requests' business (`ENOTTY`, `EINVAL`).
    if ((request >> 8) & 0xff) as u8 != DRM_IOCTL_BASE
        || ((request >> 16) & 0x3fff) as usize != arg.len()
    {
        return None;
    }
    let r = match (request & 0xff) as u8 {
        DRM_PRIME_FD_TO_HANDLE => {
            with::<DrmPrimeHandle>(arg, true, |a| prime_fd_to_handle(device, gpu_id, a))
        }
        DRM_PRIME_HANDLE_TO_FD => {
            with::<DrmPrimeHandle>(arg, true, |a| prime_handle_to_fd(device, gpu_id, a))
        }
        DRM_GEM_CLOSE => with::<DrmGemClose>(arg, false, |a| gem_close(device, gpu_id, a.handle)),
        DRM_AMDGPU_GEM_MMAP => with::<[u32; 2]>(arg, true, |a| {
            let offset = gem_mmap(device, gpu_id, a[0])?;
            *a = [offset as u32, (offset >> 32) as u32];
            Ok(())
        }),
        DRM_AMDGPU_GEM_VA => with::<GemVaArgs>(arg, false, |a| {
            gem_va(device, gpu_id, &mut a.va, &a.syncobj)
        }),
        DRM_AMDGPU_GEM_METADATA => {
            with::<DrmAmdgpuGemMetadata>(arg, true, |a| gem_metadata(device, gpu_id, a))
        }
        DRM_AMDGPU_GEM_OP => with::<DrmAmdgpuGemOp>(arg, true, |a| gem_op(device, gpu_id, a)),
        _ => return None,
    };
    Some(r)
}

/// Runs `f` on the argument read as a `T` (the caller's bytes, zero-extended or cut to the
/// kernel's size), writing it back (`out`: the requests that return something) when `f`
/// succeeds.
fn with<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
    arg: &mut [u8],
    out: bool,
    f: impl FnOnce(&mut T) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut a = T::new_zeroed();
    let n = arg.len().min(size_of::<T>());
    a.as_mut_bytes()[..n].copy_from_slice(&arg[..n]);
    f(&mut a)?;
    if out {
        arg[..n].copy_from_slice(&a.as_bytes()[..n]);
    }
    Ok(())
}

/// PRIME_FD_TO_HANDLE: the dma-buf `a.fd` as a GEM object of the render node; the handle of
/// an earlier import of the same pages when there is one.
fn prime_fd_to_handle(device: &Device, gpu_id: u32, a: &mut DrmPrimeHandle) -> Result<(), Errno> {
    let raw = u32::try_from(a.fd).map_err(|_| Errno::BADF)?;
    let backing = Backing::import(raw)?;
    let identity = backing.identity()?;
    let mut files = lock(&device.gem);
    let file = files.0.entry(gpu_id).or_default();
    if let Some((&h, _)) = file.objects.iter().find(|(_, o)| o.identity == identity) {
        a.handle = h;
        return Ok(());
    }
    // Handles count up from 1 and are never 0 (idr_alloc from 1), skipping live ones.
    let mut h = file.last;
    loop {
        h = h.wrapping_add(1).max(1);
        if !file.objects.contains_key(&h) {
            break;
        }
        if h == file.last {
            return Err(Errno::NOSPC);
        }
    }
    let id = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .next_id();
    file.objects.insert(
        h,
        GemObject {
            backing: Arc::new(backing),
            identity,
            mmap_offset: render_mmap_offset(id),
        },
    );
    file.last = h;
    a.handle = h;
    Ok(())
}

/// PRIME_HANDLE_TO_FD: a new dma-buf descriptor of the object's pages.
fn prime_handle_to_fd(device: &Device, gpu_id: u32, a: &mut DrmPrimeHandle) -> Result<(), Errno> {
    use std::os::fd::IntoRawFd;
    if a.flags & !PRIME_FLAGS != 0 {
        return Err(Errno::INVAL);
    }
    let files = lock(&device.gem);
    let o = files
        .0
        .get(&gpu_id)
        .and_then(|f| f.objects.get(&a.handle))
        .ok_or(Errno::NOENT)?;
    a.fd = o.backing.export()?.into_raw_fd();
    Ok(())
}

/// GEM_CLOSE: drops the handle and the object's mappings on this GPU.
fn gem_close(device: &Device, gpu_id: u32, handle: u32) -> Result<(), Errno> {
    let mut files = lock(&device.gem);
    let file = files.0.get_mut(&gpu_id).ok_or(Errno::INVAL)?;
    file.objects.remove(&handle).ok_or(Errno::INVAL)?;
    let vas: Vec<u64> = file
        .maps
        .iter()
        .filter(|(_, &(h, _))| h == handle)
        .map(|(&va, _)| va)
        .collect();
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    for va in vas {
        file.maps.remove(&va);
        unmap_gpu(&mut allocs, gpu_id, va);
    }
    Ok(())
}

/// Takes GPU `gpu_id` off the GEM_VA mapping at `va`, removing it when no GPU is left.
fn unmap_gpu(allocs: &mut super::memory::Allocs, gpu_id: u32, va: u64) {
    if let Some(m) = allocs.gem_va_mut(va) {
        m.mapped.remove(&gpu_id);
        if m.mapped.is_empty() {
            allocs.remove_gem_va(va);
        }
    }
}

/// The pages of GEM object `handle` on GPU `gpu_id`'s render node; `ENOENT` for an unknown
/// handle (`drm_gem_object_lookup`).
fn object(device: &Device, gpu_id: u32, handle: u32) -> Result<Arc<Backing>, Errno> {
    let files = lock(&device.gem);
    files
        .0
        .get(&gpu_id)
        .and_then(|f| f.objects.get(&handle))
        .map(|o| o.backing.clone())
        .ok_or(Errno::NOENT)
}

/// AMDGPU_GEM_METADATA as `amdgpu_gem_metadata_ioctl`: `ENOENT` for an unknown handle; GET
/// answers the object's tiling flags, metadata flags and metadata (`data_size_bytes` of
/// `data`); SET takes them, `EINVAL` for more than 256 bytes, and a size of 0 drops the
/// metadata (its flags stay, as `amdgpu_bo_set_metadata` leaves them); another operation
/// does nothing and succeeds, as amdgpu's. The state belongs to the buffer object: every
/// render node and process that imported its dma-buf sees what one of them set
/// ([`Backing::bo_state`]).
fn gem_metadata(device: &Device, gpu_id: u32, a: &mut DrmAmdgpuGemMetadata) -> Result<(), Errno> {
    let backing = object(device, gpu_id, a.handle)?;
    match a.op {
        AMDGPU_GEM_METADATA_OP_GET_METADATA => {
            let st = backing.bo_state()?;
            a.tiling_info = st.tiling_info;
            a.flags = st.flags;
            a.data_size_bytes = st.data.len() as u32;
            let bytes = a.data.as_mut_bytes();
            bytes[..st.data.len()].copy_from_slice(&st.data);
        }
        AMDGPU_GEM_METADATA_OP_SET_METADATA => {
            let n = a.data_size_bytes as usize;
            if n > size_of_val(&a.data) {
                return Err(Errno::INVAL);
            }
            let mut st = backing.bo_state()?;
            st.tiling_info = a.tiling_info;
            if n == 0 {
                st.data.clear();
            } else {
                st.flags = a.flags;
                st.data = a.data.as_bytes()[..n].to_vec();
            }
            backing.set_bo_state(&st)?;
        }
        _ => {}
    }
    Ok(())
}

/// AMDGPU_GEM_OP as `amdgpu_gem_op_ioctl`: `ENOENT` for an unknown handle.
/// - GET_GEM_CREATE_INFO writes the object's `struct drm_amdgpu_gem_create_in` (32 bytes) at
///   the user pointer `value` (`EFAULT` when that memory is not the process's): its size, the
///   page alignment KFD buffer objects get (4096 bytes), its preferred domains (VRAM or GTT,
///   or what SET_PLACEMENT set) and its creation flags.
/// - SET_PLACEMENT makes `value`'s VRAM, GTT and CPU bits the preferred domains; `EINVAL` on a
///   GPU in an xGMI hive (amdgpu refuses while a VM of the hive has the object, and a KFD
///   object always is in its process's VM).
/// - Other operations are `EINVAL`, GET_MAPPING_INFO (Linux 6.16) among them: the emulated
///   render node answers as a kernel before it did.
fn gem_op(device: &Device, gpu_id: u32, a: &mut DrmAmdgpuGemOp) -> Result<(), Errno> {
    let backing = object(device, gpu_id, a.handle)?;
    match a.op {
        AMDGPU_GEM_OP_GET_GEM_CREATE_INFO => {
            let info = backing.info()?;
            let st = backing.bo_state()?;
            let domains = if st.domains != 0 {
                st.domains
            } else if info.flags & hsa_linux::kfd::abi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 {
                AMDGPU_GEM_DOMAIN_VRAM
            } else {
                AMDGPU_GEM_DOMAIN_GTT
            };
            let create_in = [info.size, PAGE_BYTES, domains, info.gem_flags];
            device.user.write(a.value, create_in.as_bytes())
        }
        AMDGPU_GEM_OP_SET_PLACEMENT => {
            let hive = device
                .topology
                .nodes
                .iter()
                .any(|n| n.properties.gpu_id == gpu_id && n.properties.hive_id != 0);
            if hive {
                return Err(Errno::INVAL);
            }
            let mut st = backing.bo_state()?;
            st.domains =
                a.value & (AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_CPU);
            backing.set_bo_state(&st)
        }
        _ => Err(Errno::INVAL),
    }
}

/// AMDGPU_GEM_MMAP: the object's render-node mmap offset.
fn gem_mmap(device: &Device, gpu_id: u32, handle: u32) -> Result<u64, Errno> {
    let files = lock(&device.gem);
    files
        .0
        .get(&gpu_id)
        .and_then(|f| f.objects.get(&handle))
        .map(|o| o.mmap_offset)
        .ok_or(Errno::NOENT)
}

/// AMDGPU_GEM_VA (see the module docs for what is refused and why).
fn gem_va(
    device: &Device,
    gpu_id: u32,
    a: &mut DrmAmdgpuGemVa,
    s: &GemVaSyncobj,
) -> Result<(), Errno> {
    const VALID: u32 = AMDGPU_VM_DELAY_UPDATE
        | AMDGPU_VM_PAGE_READABLE
        | AMDGPU_VM_PAGE_WRITEABLE
        | AMDGPU_VM_PAGE_EXECUTABLE
        | AMDGPU_VM_MTYPE_MASK
        | AMDGPU_VM_PAGE_NOALLOC;
    const PRT: u32 = AMDGPU_VM_DELAY_UPDATE | AMDGPU_VM_PAGE_PRT;
    device.gpu_by_id(gpu_id)?;
    if a.va_address < AMDGPU_VA_RESERVED_BOTTOM
        || (AMDGPU_GMC_HOLE_START..AMDGPU_GMC_HOLE_END).contains(&a.va_address)
    {
        return Err(Errno::INVAL);
    }
    let va = a.va_address & AMDGPU_GMC_HOLE_MASK;
    let size = a.map_size;
    if va
        .checked_add(size)
        .is_none_or(|end| end > VM_BYTES - AMDGPU_VA_RESERVED_TOP)
    {
        return Err(Errno::INVAL);
    }
    if a.flags & !VALID != 0 && a.flags & !PRT != 0 {
        return Err(Errno::INVAL);
    }
    if !(AMDGPU_VA_OP_MAP..=AMDGPU_VA_OP_REPLACE).contains(&a.operation) {
        return Err(Errno::INVAL);
    }
    let mut files = lock(&device.gem);
    let file = files.0.entry(gpu_id).or_default();
    let prt = a.flags & AMDGPU_VM_PAGE_PRT != 0;
    let object = if a.operation != AMDGPU_VA_OP_CLEAR && !prt {
        Some(file.objects.get(&a.handle).ok_or(Errno::NOENT)?)
    } else {
        None
    };
    if s.vm_timeline_syncobj_out != 0 || s.num_syncobj_handles != 0 {
        return Err(Errno::NOENT);
    }
    if prt {
        return Err(Errno::INVAL);
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if a.operation == AMDGPU_VA_OP_UNMAP {
        // amdgpu_vm_bo_unmap: the object's mapping that starts at the address.
        match file.maps.get(&va) {
            Some(&(h, _)) if h == a.handle => {}
            _ => return Err(Errno::NOENT),
        }
        file.maps.remove(&va);
        unmap_gpu(&mut allocs, gpu_id, va);
        return Ok(());
    }
    // amdgpu_vm_verify_parameters: whole pages, not empty, inside the object.
    let offset = a.offset_in_bo;
    if va % PAGE_BYTES != 0 || offset % PAGE_BYTES != 0 || size % PAGE_BYTES != 0 || size == 0 {
        return Err(Errno::INVAL);
    }
    if let Some(o) = object {
        if offset
            .checked_add(size)
            .is_none_or(|end| end > o.backing.len())
        {
            return Err(Errno::INVAL);
        }
    }
    if a.operation != AMDGPU_VA_OP_MAP {
        // CLEAR, and REPLACE's first half: every mapping of this GPU in the range, whole.
        let cut: Vec<u64> = file
            .maps
            .range(..va.saturating_add(size))
            .filter(|(&m, &(_, len))| m + len > va)
            .map(|(&m, _)| m)
            .collect();
        if cut
            .iter()
            .any(|&m| m < va || m + file.maps[&m].1 > va + size)
        {
            return Err(Errno::INVAL);
        }
        for m in cut {
            file.maps.remove(&m);
            unmap_gpu(&mut allocs, gpu_id, m);
        }
        if a.operation == AMDGPU_VA_OP_CLEAR {
            return Ok(());
        }
    }
    let o = object.ok_or(Errno::NOENT)?;
    // The same pages at the same address on another GPU: that mapping, reached by this GPU
    // too (each GPU's VM maps them; the emulated GPUs share one address space).
    if let Some(m) = allocs.gem_va_mut(va) {
        let same = m.size == size
            && !m.mapped.contains(&gpu_id)
            && m.backing.as_ref().is_some_and(|b| {
                b.identity().ok() == Some(o.identity)
                    && m.region.addr().checked_sub(b.region().addr()) == Some(offset)
            });
        if !same {
            return Err(Errno::INVAL);
        }
        m.mapped.insert(gpu_id);
        file.maps.insert(va, (a.handle, size));
        return Ok(());
    }
    if allocs.overlaps(va, size) {
        return Err(Errno::INVAL);
    }
    let region = o.backing.region().sub(offset, size).ok_or(Errno::INVAL)?;
    allocs.insert(Alloc {
        va,
        size,
        gpu_id,
        handle: 0,
        mmap_offset: 0,
        kind: Kind::GemVa,
        region,
        backing: Some(o.backing.clone()),
        mapped: [gpu_id].into_iter().collect(),
        pins: 0,
        coarse: false,
    });
    file.maps.insert(va, (a.handle, size));
    Ok(())
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::ptr::NonNull;
    use std::sync::Arc;

    use hsa_linux::kfd::abi::*;
    use hsa_linux::kfd::calls::plain_ioctl;
    use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
    use zerocopy::{FromZeros, IntoBytes};

    use super::*;
    use crate::device::{builtin_topology, EmulatedKfd, BUILTIN_GPU_ID};

    const GPU: u32 = BUILTIN_GPU_ID;
    const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const RWX: u32 = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_PAGE_EXECUTABLE;

    fn dev() -> Arc<EmulatedKfd> {
        EmulatedKfd::new(builtin_topology()).unwrap()
    }

    /// ALLOC_MEMORY_OF_GPU of VRAM at `va` (0: no GPU address).
    fn alloc(d: &EmulatedKfd, va: u64, size: u64) -> Result<AllocMemoryOfGpuArgs, Errno> {
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: va,
            size,
            gpu_id: GPU,
            flags: VRAM,
            ..Default::default()
        };
        // SAFETY: without USERPTR the argument carries no pointer.
        unsafe { d.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()) }?;
        Ok(a)
    }

    /// MAP_MEMORY_TO_GPU of `handle` on the GPU.
    fn map_to_gpu(d: &EmulatedKfd, handle: u64) -> Result<(), Errno> {
        let ids = [GPU];
        let mut a = MapMemoryToGpuArgs {
            handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        // SAFETY: the id array is `ids`, one entry, borrowed for the call.
        unsafe { d.ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, a.as_mut_bytes()) }
    }

    /// EXPORT_DMABUF of `handle`: the new descriptor.
    fn export(d: &EmulatedKfd, handle: u64) -> OwnedFd {
        let mut e = ExportDmabufArgs {
            handle,
            flags: rustix::fs::OFlags::CLOEXEC.bits(),
            dmabuf_fd: 0,
        };
        plain_ioctl(d, &mut e).unwrap();
        // SAFETY: a successful EXPORT_DMABUF returns a new descriptor the caller owns.
        unsafe { OwnedFd::from_raw_fd(e.dmabuf_fd as i32) }
    }

    /// A render-node request with argument bytes `arg`.
    fn render(d: &EmulatedKfd, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: the GEM requests carry no user pointer but GEM_VA's sync-object array,
        // which these tests leave 0.
        unsafe { d.render_ioctl(GPU, request, arg) }
    }

    fn import(d: &EmulatedKfd, fd: i32) -> Result<u32, Errno> {
        let mut p = DrmPrimeHandle {
            fd,
            ..Default::default()
        };
        render(d, DRM_IOCTL_PRIME_FD_TO_HANDLE, p.as_mut_bytes())?;
        Ok(p.handle)
    }

    fn va_op(
        d: &EmulatedKfd,
        handle: u32,
        operation: u32,
        flags: u32,
        va: u64,
        offset: u64,
        size: u64,
    ) -> Result<(), Errno> {
        let mut a = DrmAmdgpuGemVa {
            handle,
            operation,
            flags,
            va_address: va,
            offset_in_bo: offset,
            map_size: size,
            ..Default::default()
        };
        render(d, DRM_IOCTL_AMDGPU_GEM_VA, a.as_mut_bytes())
    }

    /// AMDGPU_GEM_MMAP of `handle` for its fake offset, then a CPU mmap of `len` bytes of the
    /// render node there: the offset and the mapping.
    fn cpu_map(d: &EmulatedKfd, handle: u32, len: usize) -> (u64, NonNull<u8>) {
        let mut m = [handle, 0];
        render(d, DRM_IOCTL_AMDGPU_GEM_MMAP, m.as_mut_bytes()).unwrap();
        let offset = u64::from(m[0]) | u64::from(m[1]) << 32;
        let cpu = hsa_linux::kfd::calls::mmap(d, MapTarget::RenderNode(GPU), offset, len).unwrap();
        (offset, cpu)
    }

    /// The bytes the GPU reads at `va` (`None`: a fault).
    fn gpu_read(d: &EmulatedKfd, va: u64) -> Option<u32> {
        let allocs = d.device.allocs.read().unwrap();
        let r = allocs.device_region(GPU, va, 4)?;
        let mut b = [0u8; 4];
        r.read_into(&mut b);
        Some(u32::from_le_bytes(b))
    }

    /// ROCR 7's vmem path, as a trace of HIP's `hipMemCreate`/`hipMemMap`/`hipMemSetAccess`
    /// shows it: a buffer object with no GPU address, exported as a dma-buf, imported on the
    /// render node (the same pages again give the same handle), mapped for the CPU through
    /// GEM_MMAP's offset and for the GPU with GEM_VA at an offset into it; the GPU reads what
    /// the CPU wrote there; UNMAP and GEM_CLOSE take it away again.
    #[test]
    fn a_memory_only_object_reaches_the_gpu_through_gem_va() {
        let d = dev();
        let bo = alloc(&d, 0, 3 * 4096).unwrap();
        // No GPU address: MAP_MEMORY_TO_GPU is refused, FREE works as for any object.
        assert_eq!(map_to_gpu(&d, bo.handle), Err(Errno::INVAL));
        let fd = export(&d, bo.handle);
        let h = import(&d, fd.as_raw_fd()).unwrap();
        assert_eq!(h, 1, "handles count from 1");
        let again = export(&d, bo.handle);
        assert_eq!(
            import(&d, again.as_raw_fd()),
            Ok(h),
            "the same pages: the same handle"
        );

        let (offset, cpu) = cpu_map(&d, h, 3 * 4096);
        assert!(offset >= 1 << 32, "a fake offset as amdgpu's: {offset:#x}");
        assert_eq!(
            hsa_linux::kfd::calls::mmap(&*d, MapTarget::RenderNode(GPU), offset, 4 * 4096),
            Err(Errno::INVAL),
            "past the object's end"
        );
        // SAFETY: a fresh shared mapping of the object's 12 KiB, used only here.
        unsafe {
            cpu.as_ptr()
                .add(4096 + 8)
                .cast::<u32>()
                .write_volatile(0xfeed_f00d)
        };

        let va = 0x7f00_0020_0000;
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, va, 4096, 2 * 4096).unwrap();
        assert_eq!(gpu_read(&d, va + 8), Some(0xfeed_f00d));
        assert_eq!(gpu_read(&d, va + 2 * 4096), None, "past the mapping");
        // Mapped twice at the same address: the conflict amdgpu_vm_bo_map reports.
        assert_eq!(
            va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, va, 4096, 4096),
            Err(Errno::INVAL)
        );
        // UNMAP goes by the mapping's first byte.
        assert_eq!(
            va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, va + 4096, 0, 4096),
            Err(Errno::NOENT)
        );
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, va, 0, 2 * 4096).unwrap();
        assert_eq!(gpu_read(&d, va + 8), None);

        // GEM_CLOSE takes the object's mappings with it.
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, va, 0, 4096).unwrap();
        let mut c = DrmGemClose { handle: h, pad: 0 };
        render(&d, DRM_IOCTL_GEM_CLOSE, c.as_mut_bytes()).unwrap();
        assert_eq!(gpu_read(&d, va), None);
        assert_eq!(
            render(&d, DRM_IOCTL_GEM_CLOSE, c.as_mut_bytes()),
            Err(Errno::INVAL)
        );
        // A new import after the close is a new handle.
        assert_eq!(import(&d, fd.as_raw_fd()), Ok(2));

        // PRIME_HANDLE_TO_FD gives the pages back as a dma-buf.
        let mut p = DrmPrimeHandle {
            handle: 2,
            flags: rustix::fs::OFlags::CLOEXEC.bits(),
            fd: -1,
        };
        render(&d, DRM_IOCTL_PRIME_HANDLE_TO_FD, p.as_mut_bytes()).unwrap();
        // SAFETY: a successful PRIME_HANDLE_TO_FD returns a new descriptor the caller owns.
        let back = unsafe { OwnedFd::from_raw_fd(p.fd) };
        assert_eq!(rustix::fs::fstat(&back).unwrap().st_size, 3 * 4096);
        plain_ioctl(&*d, &mut FreeMemoryOfGpuArgs { handle: bo.handle }).unwrap();
        assert_eq!(
            plain_ioctl(&*d, &mut FreeMemoryOfGpuArgs { handle: bo.handle }),
            Err(Errno::INVAL)
        );
    }

    /// Each argument amdgpu refuses, with its errno, in the kernel's order; and the 64-byte
    /// struct of Linux 6.16 and the `_IOW` request number are the same request.
    #[test]
    fn gem_requests_refuse_what_amdgpu_refuses() {
        let d = dev();
        let bo = alloc(&d, 0, 4 * 4096).unwrap();
        let fd = export(&d, bo.handle);
        let h = import(&d, fd.as_raw_fd()).unwrap();
        let kfd_bo = alloc(&d, 0x7f00_0040_0000, 4096).unwrap();
        let ok = 0x7f00_0020_0000;
        /// (what, handle, operation, flags, address, offset, size, the errno).
        type Case = (&'static str, u32, u32, u32, u64, u64, u64, Errno);
        let cases: [Case; 17] = [
            (
                "below 64 KiB",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                0xf000,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "in the hole",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                1 << 47,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "past the top",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                0xffff_ffff_ffc0_0000,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "unknown flag",
                h,
                AMDGPU_VA_OP_MAP,
                1 << 10,
                ok,
                0,
                4096,
                Errno::INVAL,
            ),
            ("operation 0", h, 0, RWX, ok, 0, 4096, Errno::INVAL),
            ("operation 5", h, 5, RWX, ok, 0, 4096, Errno::INVAL),
            (
                "unknown handle",
                9,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok,
                0,
                4096,
                Errno::NOENT,
            ),
            (
                "PRT",
                h,
                AMDGPU_VA_OP_MAP,
                AMDGPU_VM_PAGE_PRT,
                ok,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "unaligned address",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok + 8,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "unaligned offset",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok,
                8,
                4096,
                Errno::INVAL,
            ),
            (
                "unaligned size",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok,
                0,
                4000,
                Errno::INVAL,
            ),
            (
                "zero size",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok,
                0,
                0,
                Errno::INVAL,
            ),
            (
                "past the object",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                ok,
                4096,
                4 * 4096,
                Errno::INVAL,
            ),
            (
                "over a KFD object",
                h,
                AMDGPU_VA_OP_MAP,
                RWX,
                kfd_bo.va_addr,
                0,
                4096,
                Errno::INVAL,
            ),
            (
                "UNMAP of nothing",
                h,
                AMDGPU_VA_OP_UNMAP,
                0,
                ok,
                0,
                4096,
                Errno::NOENT,
            ),
            (
                "CLEAR unaligned",
                0,
                AMDGPU_VA_OP_CLEAR,
                0,
                ok,
                0,
                100,
                Errno::INVAL,
            ),
            (
                "REPLACE, unknown handle",
                7,
                AMDGPU_VA_OP_REPLACE,
                RWX,
                ok,
                0,
                4096,
                Errno::NOENT,
            ),
        ];
        for (what, handle, op, flags, va, offset, size, want) in cases {
            assert_eq!(
                va_op(&d, handle, op, flags, va, offset, size),
                Err(want),
                "{what}"
            );
        }
        // Every flag of the valid set is taken: memory type (AMDGPU_VM_MTYPE_UC, 4 << 5),
        // NOALLOC, DELAY_UPDATE.
        let all = RWX | AMDGPU_VM_DELAY_UPDATE | (4 << 5) | AMDGPU_VM_PAGE_NOALLOC;
        va_op(&d, h, AMDGPU_VA_OP_MAP, all, ok + 0x40_0000, 0, 4096).unwrap();
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, all, ok + 0x40_0000, 0, 4096).unwrap();
        // A second object's pages are a second handle.
        let other = alloc(&d, 0, 4096).unwrap();
        let other_fd = export(&d, other.handle);
        let h2 = import(&d, other_fd.as_raw_fd()).unwrap();
        assert_ne!(h2, h);
        assert_eq!(import(&d, fd.as_raw_fd()), Ok(h));
        assert_eq!(import(&d, other_fd.as_raw_fd()), Ok(h2));
        // The lowest address (64 KiB) and a range ending at the VM's reserved top are taken.
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, 0x1_0000, 0, 4096).unwrap();
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, 0x1_0000, 0, 4096).unwrap();
        let top = 0xffff_0000_0000_0000 | (VM_BYTES - AMDGPU_VA_RESERVED_TOP - 4096);
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, top, 0, 4096).unwrap();
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, top, 0, 4096).unwrap();
        // A CLEAR of exactly one mapping's range takes it.
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, ok + 0x50_0000, 0, 2 * 4096).unwrap();
        va_op(&d, 0, AMDGPU_VA_OP_CLEAR, 0, ok + 0x50_0000, 0, 2 * 4096).unwrap();
        assert_eq!(gpu_read(&d, ok + 0x50_0000), None);
        // UNMAP names the object as well as the address: another handle's is ENOENT.
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, ok + 0x40_0000, 0, 4096).unwrap();
        assert_eq!(
            va_op(&d, h2, AMDGPU_VA_OP_UNMAP, 0, ok + 0x40_0000, 0, 4096),
            Err(Errno::NOENT)
        );
        // A CLEAR that starts where a mapping ends leaves it (ranges are half-open).
        va_op(&d, 0, AMDGPU_VA_OP_CLEAR, 0, ok + 0x40_1000, 0, 0x1_0000).unwrap();
        assert!(gpu_read(&d, ok + 0x40_0000).is_some());
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, ok + 0x40_0000, 0, 4096).unwrap();
        // An address above the hole is its low 48 bits (the upper half of the VM).
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, 0xffff_8000_0020_0000, 0, 4096).unwrap();
        assert!(gpu_read(&d, 0x8000_0020_0000).is_some());
        assert_eq!(
            va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, 0x8000_0020_0000, 0, 4096),
            Err(Errno::INVAL),
            "the hole, even for UNMAP"
        );
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, 0xffff_8000_0020_0000, 0, 4096).unwrap();
        // CLEAR takes whole mappings; one it would cut is refused (amdgpu would split it).
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, ok, 0, 4096).unwrap();
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, ok + 0x10_0000, 0, 2 * 4096).unwrap();
        assert_eq!(
            va_op(&d, 0, AMDGPU_VA_OP_CLEAR, 0, ok + 0x10_0000, 0, 4096),
            Err(Errno::INVAL)
        );
        va_op(&d, 0, AMDGPU_VA_OP_CLEAR, 0, ok, 0, 0x20_0000).unwrap();
        assert_eq!(
            (gpu_read(&d, ok), gpu_read(&d, ok + 0x10_0000)),
            (None, None)
        );
        // REPLACE: the range cleared, then mapped.
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, ok, 0, 4096).unwrap();
        va_op(&d, h, AMDGPU_VA_OP_REPLACE, RWX, ok, 4096, 2 * 4096).unwrap();
        assert!(gpu_read(&d, ok + 4096).is_some());

        // The 64-byte struct with a timeline sync object: none exists here.
        let mut long = GemVaArgs {
            va: DrmAmdgpuGemVa {
                handle: h,
                operation: AMDGPU_VA_OP_MAP,
                flags: RWX,
                va_address: ok + 0x30_0000,
                map_size: 4096,
                ..Default::default()
            },
            syncobj: GemVaSyncobj {
                vm_timeline_syncobj_out: 3,
                ..Default::default()
            },
        };
        let iow64 = drm_ioc(IOC_WRITE, DRM_AMDGPU_GEM_VA, 64);
        assert_eq!(render(&d, iow64, long.as_mut_bytes()), Err(Errno::NOENT));
        long.syncobj = GemVaSyncobj::default();
        render(&d, iow64, long.as_mut_bytes()).unwrap();
        assert!(gpu_read(&d, ok + 0x30_0000).is_some());

        // PRIME: a number that names nothing, a descriptor that is no dma-buf; HANDLE_TO_FD's
        // flags and handle; GEM_MMAP of an unknown handle.
        assert_eq!(import(&d, -1), Err(Errno::BADF));
        let null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(import(&d, null.as_raw_fd()), Err(Errno::INVAL));
        let mut p = DrmPrimeHandle {
            handle: h,
            flags: 1 << 3,
            fd: -1,
        };
        assert_eq!(
            render(&d, DRM_IOCTL_PRIME_HANDLE_TO_FD, p.as_mut_bytes()),
            Err(Errno::INVAL)
        );
        p = DrmPrimeHandle {
            handle: 77,
            flags: 0,
            fd: -1,
        };
        assert_eq!(
            render(&d, DRM_IOCTL_PRIME_HANDLE_TO_FD, p.as_mut_bytes()),
            Err(Errno::NOENT)
        );
        let mut m = [77u32, 0];
        assert_eq!(
            render(&d, DRM_IOCTL_AMDGPU_GEM_MMAP, m.as_mut_bytes()),
            Err(Errno::NOENT)
        );
    }

    /// The handle allocator goes on from the last handle given, past `u32::MAX` back to the
    /// start: it never gives 0 (idr_alloc from 1) and skips a handle still in use. (Its
    /// `ENOSPC` for a full table needs all 2^32 - 1 handles live, more than a test can hold.)
    #[test]
    fn handles_wrap_past_u32_max_to_the_first_free_one_above_0() {
        let d = dev();
        let fds: Vec<OwnedFd> = (0..4)
            .map(|_| export(&d, alloc(&d, 0, 4096).unwrap().handle))
            .collect();
        assert_eq!(import(&d, fds[0].as_raw_fd()), Ok(1));
        lock(&d.device.gem).0.get_mut(&GPU).unwrap().last = u32::MAX - 2;
        assert_eq!(import(&d, fds[1].as_raw_fd()), Ok(u32::MAX - 1));
        assert_eq!(import(&d, fds[2].as_raw_fd()), Ok(u32::MAX));
        // Past u32::MAX: not 0, not 1 (live), but 2.
        assert_eq!(import(&d, fds[3].as_raw_fd()), Ok(2));
        assert_eq!(lock(&d.device.gem).0[&GPU].last, 2);
        // Each handle names its own object.
        let handles = [1, u32::MAX - 1, u32::MAX, 2];
        let offsets: Vec<u64> = handles
            .iter()
            .map(|&h| {
                let mut m = [h, 0];
                render(&d, DRM_IOCTL_AMDGPU_GEM_MMAP, m.as_mut_bytes()).unwrap();
                u64::from(m[0]) | u64::from(m[1]) << 32
            })
            .collect();
        for (i, o) in offsets.iter().enumerate() {
            assert!(!offsets[..i].contains(o), "handle {:#x}", handles[i]);
        }
        let mut m = [0u32, 0];
        assert_eq!(
            render(&d, DRM_IOCTL_AMDGPU_GEM_MMAP, m.as_mut_bytes()),
            Err(Errno::NOENT),
            "no handle 0"
        );
    }

    /// An SDMA queue whose ring and pointers lie in a GEM_VA mapping holds those pages: after
    /// UNMAP, GEM_CLOSE, FREE of the buffer object and the dma-bufs' close, its engine still
    /// runs a packet on them (amdkfd's queue keeps a reference on the object), and the queue
    /// goes cleanly.
    #[test]
    fn a_queue_in_a_gem_mapping_keeps_its_pages() {
        use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
        use std::time::{Duration, Instant};
        let d = dev();
        let bo = alloc(&d, 0, 2 * 4096).unwrap();
        let fd = export(&d, bo.handle);
        let h = import(&d, fd.as_raw_fd()).unwrap();
        let (_, cpu) = cpu_map(&d, h, 8192);
        let va = 0x7f00_0060_0000;
        va_op(&d, h, AMDGPU_VA_OP_MAP, RWX, va, 0, 2 * 4096).unwrap();
        let mut q = CreateQueueArgs {
            ring_base_address: va,
            read_pointer_address: va + 4096,
            write_pointer_address: va + 4096 + 8,
            ring_size: 1024,
            gpu_id: GPU,
            queue_type: KFD_IOC_QUEUE_TYPE_SDMA,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        // SAFETY: the queue's addresses are the GEM mapping's, which the device reaches.
        unsafe { d.ioctl(AMDKFD_IOC_CREATE_QUEUE, q.as_mut_bytes()) }.unwrap();
        // Everything that named the pages goes.
        va_op(&d, h, AMDGPU_VA_OP_UNMAP, 0, va, 0, 2 * 4096).unwrap();
        let mut c = DrmGemClose { handle: h, pad: 0 };
        render(&d, DRM_IOCTL_GEM_CLOSE, c.as_mut_bytes()).unwrap();
        plain_ioctl(&*d, &mut FreeMemoryOfGpuArgs { handle: bo.handle }).unwrap();
        drop(fd);
        // One NOP (dword 0): the write pointer at 4 bytes, then the doorbell.
        // SAFETY: the CPU mapping of the object's 8 KiB, alive until the end of the test;
        // the words the engine shares are accessed atomically.
        let (ring0, rptr, wptr) = unsafe {
            (
                AtomicU32::from_ptr(cpu.as_ptr().cast()),
                AtomicU64::from_ptr(cpu.as_ptr().add(4096).cast()),
                AtomicU64::from_ptr(cpu.as_ptr().add(4096 + 8).cast()),
            )
        };
        ring0.store(0, Ordering::Release);
        wptr.store(4, Ordering::Release);
        let page =
            hsa_linux::kfd::calls::mmap(&*d, MapTarget::Kfd, q.doorbell_offset & !0x1fff, 8192)
                .unwrap();
        // SAFETY: the doorbell slot of the queue in the doorbell page the device mapped,
        // 8-byte aligned, read by the engine atomically.
        let bell = unsafe {
            AtomicU64::from_ptr(
                page.as_ptr()
                    .add((q.doorbell_offset & 0x1fff) as usize)
                    .cast(),
            )
        };
        bell.store(4, Ordering::Release);
        let t = Instant::now();
        while rptr.load(Ordering::Acquire) != 4 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(rptr.load(Ordering::Acquire), 4, "the engine ran the NOP");
        plain_ioctl(
            &*d,
            &mut DestroyQueueArgs {
                queue_id: q.queue_id,
                pad: 0,
            },
        )
        .unwrap();
        assert_eq!(d.live_handles().memory, 0);
    }

    /// Two GPUs map the same pages at the same address (ROCR maps a vmem handle on each
    /// agent given access): one mapping both reach, which stays while either maps it; other
    /// pages, another offset or another size there is a conflict.
    #[test]
    fn two_gpus_map_the_same_pages_at_one_address() {
        const SECOND: u32 = 0x5678;
        let mut t = builtin_topology();
        let mut g = t.nodes[1].clone();
        g.properties.node_id = 2;
        g.properties.gpu_id = SECOND;
        g.properties.drm_render_minor += 1;
        for l in &mut g.io_links {
            l.node_from = 2;
        }
        t.nodes.push(g);
        let d = EmulatedKfd::new(t).unwrap();
        let on = |gpu: u32, request: u32, arg: &mut [u8]| {
            // SAFETY: as `render`'s.
            unsafe { d.render_ioctl(gpu, request, arg) }
        };
        let import_on = |gpu: u32, fd: i32| {
            let mut p = DrmPrimeHandle {
                fd,
                ..Default::default()
            };
            on(gpu, DRM_IOCTL_PRIME_FD_TO_HANDLE, p.as_mut_bytes()).map(|()| p.handle)
        };
        let map_on = |gpu: u32, handle: u32, operation: u32, va: u64, offset: u64, size: u64| {
            let mut a = DrmAmdgpuGemVa {
                handle,
                operation,
                flags: RWX,
                va_address: va,
                offset_in_bo: offset,
                map_size: size,
                ..Default::default()
            };
            on(gpu, DRM_IOCTL_AMDGPU_GEM_VA, a.as_mut_bytes())
        };
        let read_on = |gpu: u32, va: u64| {
            let allocs = d.device.allocs.read().unwrap();
            allocs.device_region(gpu, va, 4).is_some()
        };
        let bo = alloc(&d, 0, 2 * 4096).unwrap();
        let fd = export(&d, bo.handle);
        let other = alloc(&d, 0, 2 * 4096).unwrap();
        let other_fd = export(&d, other.handle);
        let (a, b) = (
            import_on(GPU, fd.as_raw_fd()).unwrap(),
            import_on(SECOND, fd.as_raw_fd()).unwrap(),
        );
        let b_other = import_on(SECOND, other_fd.as_raw_fd()).unwrap();
        let va = 0x7f00_0080_0000;
        map_on(GPU, a, AMDGPU_VA_OP_MAP, va, 4096, 4096).unwrap();
        assert!(read_on(GPU, va) && !read_on(SECOND, va));
        for (what, handle, offset, size) in [
            ("other pages", b_other, 4096, 4096),
            ("another offset", b, 0, 4096),
            ("another size", b, 0, 2 * 4096),
        ] {
            assert_eq!(
                map_on(SECOND, handle, AMDGPU_VA_OP_MAP, va, offset, size),
                Err(Errno::INVAL),
                "{what}"
            );
        }
        map_on(SECOND, b, AMDGPU_VA_OP_MAP, va, 4096, 4096).unwrap();
        assert!(read_on(GPU, va) && read_on(SECOND, va));
        // Each GPU's VM maps it once.
        assert_eq!(
            map_on(SECOND, b, AMDGPU_VA_OP_MAP, va, 4096, 4096),
            Err(Errno::INVAL)
        );
        map_on(GPU, a, AMDGPU_VA_OP_UNMAP, va, 0, 4096).unwrap();
        assert!(!read_on(GPU, va) && read_on(SECOND, va));
        map_on(SECOND, b, AMDGPU_VA_OP_UNMAP, va, 0, 4096).unwrap();
        assert!(!read_on(SECOND, va));
    }

    /// The request numbers, as gcc computes them from libdrm's `drm.h` and `amdgpu_drm.h`.
    #[test]
    fn request_numbers_are_libdrms() {
        assert_eq!(DRM_IOCTL_GEM_CLOSE, 0x4008_6409);
        assert_eq!(DRM_IOCTL_PRIME_HANDLE_TO_FD, 0xc00c_642d);
        assert_eq!(DRM_IOCTL_PRIME_FD_TO_HANDLE, 0xc00c_642e);
        assert_eq!(DRM_IOCTL_AMDGPU_GEM_MMAP, 0xc008_6441);
        assert_eq!(DRM_IOCTL_AMDGPU_GEM_VA, 0xc028_6448);
        assert_eq!(size_of::<GemVaArgs>(), 64);
    }

    /// AMDGPU_GEM_METADATA and AMDGPU_GEM_OP as amdgpu answers them, and the state belongs to
    /// the buffer object: what one process's render node sets (ROCR 7.2.4 marks a buffer it
    /// shares for IPC so), another process that imported the dma-buf reads back, on its
    /// render node and in GET_DMABUF_INFO's metadata.
    #[test]
    fn metadata_and_create_info_belong_to_the_buffer_object() {
        let a = dev();
        let b = dev();
        let bo = alloc(&a, 0x7300_0000_0000, 8192).unwrap();
        let fd = export(&a, bo.handle);
        let ha = import(&a, fd.as_raw_fd()).unwrap();
        let hb = import(&b, fd.as_raw_fd()).unwrap();
        let meta = |d: &EmulatedKfd, handle: u32, op: u32| {
            let mut m = DrmAmdgpuGemMetadata::new_zeroed();
            m.handle = handle;
            m.op = op;
            render(d, DRM_IOCTL_AMDGPU_GEM_METADATA, m.as_mut_bytes()).map(|()| m)
        };
        // Nothing set yet.
        let g = meta(&b, hb, AMDGPU_GEM_METADATA_OP_GET_METADATA).unwrap();
        assert_eq!((g.data_size_bytes, g.tiling_info, g.flags), (0, 0, 0));
        let mut set = DrmAmdgpuGemMetadata::new_zeroed();
        set.handle = ha;
        set.op = AMDGPU_GEM_METADATA_OP_SET_METADATA;
        set.flags = 3;
        set.tiling_info = 0x55;
        set.data_size_bytes = 4;
        set.data[0] = 0x5a49_0923;
        render(&a, DRM_IOCTL_AMDGPU_GEM_METADATA, set.as_mut_bytes()).unwrap();
        let g = meta(&b, hb, AMDGPU_GEM_METADATA_OP_GET_METADATA).unwrap();
        assert_eq!(
            (
                g.data_size_bytes,
                g.data[0],
                g.data[1],
                g.tiling_info,
                g.flags
            ),
            (4, 0x5a49_0923, 0, 0x55, 3)
        );
        // GET_DMABUF_INFO: the metadata's size, and the metadata where there is room for it.
        let mut room = [0u8; 8];
        let mut info = GetDmabufInfoArgs {
            metadata_ptr: room.as_mut_ptr() as u64,
            metadata_size: 2,
            dmabuf_fd: fd.as_raw_fd() as u32,
            ..Default::default()
        };
        // SAFETY: metadata_ptr is `room`, 8 bytes, borrowed for the calls; the device writes at
        // most metadata_size (then 8) bytes there.
        let r = unsafe { b.ioctl(AMDKFD_IOC_GET_DMABUF_INFO, info.as_mut_bytes()) };
        assert_eq!(
            (r, info.metadata_size),
            (Err(Errno::INVAL), 4),
            "too little room"
        );
        info.metadata_size = 8;
        // SAFETY: as above.
        unsafe { b.ioctl(AMDKFD_IOC_GET_DMABUF_INFO, info.as_mut_bytes()) }.unwrap();
        assert_eq!(
            (info.metadata_size, room),
            (4, [0x23, 0x09, 0x49, 0x5a, 0, 0, 0, 0])
        );
        // More than 256 bytes: EINVAL; an unknown handle: ENOENT; another op: nothing, Ok.
        set.data_size_bytes = 257;
        assert_eq!(
            render(&a, DRM_IOCTL_AMDGPU_GEM_METADATA, set.as_mut_bytes()),
            Err(Errno::INVAL)
        );
        assert_eq!(
            meta(&b, hb + 1, AMDGPU_GEM_METADATA_OP_GET_METADATA).err(),
            Some(Errno::NOENT)
        );
        assert!(meta(&b, hb, 9).is_ok());
        // A size of 0 drops the metadata; its flags stay.
        set.data_size_bytes = 0;
        set.flags = 0;
        render(&a, DRM_IOCTL_AMDGPU_GEM_METADATA, set.as_mut_bytes()).unwrap();
        let g = meta(&b, hb, AMDGPU_GEM_METADATA_OP_GET_METADATA).unwrap();
        assert_eq!((g.data_size_bytes, g.flags), (0, 3));

        // GEM_OP: the creation info of a VRAM buffer object without PUBLIC (wiped on
        // release, no CPU access), then SET_PLACEMENT's domains.
        let mut create_in = [0u64; 4];
        let mut op = DrmAmdgpuGemOp {
            handle: hb,
            op: AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
            value: create_in.as_mut_ptr() as u64,
            ..Default::default()
        };
        render(&b, DRM_IOCTL_AMDGPU_GEM_OP, op.as_mut_bytes()).unwrap();
        assert_eq!(
            create_in,
            [8192, 4096, AMDGPU_GEM_DOMAIN_VRAM, (1 << 9) | (1 << 1)]
        );
        let mut place = DrmAmdgpuGemOp {
            handle: ha,
            op: AMDGPU_GEM_OP_SET_PLACEMENT,
            value: AMDGPU_GEM_DOMAIN_GTT | 0x40,
            ..Default::default()
        };
        render(&a, DRM_IOCTL_AMDGPU_GEM_OP, place.as_mut_bytes()).unwrap();
        render(&b, DRM_IOCTL_AMDGPU_GEM_OP, op.as_mut_bytes()).unwrap();
        assert_eq!(create_in[2], AMDGPU_GEM_DOMAIN_GTT);
        op.op = 2;
        assert_eq!(
            render(&b, DRM_IOCTL_AMDGPU_GEM_OP, op.as_mut_bytes()),
            Err(Errno::INVAL)
        );
        op.handle = hb + 1;
        op.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO;
        assert_eq!(
            render(&b, DRM_IOCTL_AMDGPU_GEM_OP, op.as_mut_bytes()),
            Err(Errno::NOENT)
        );
        // The 16-byte struct of headers before Linux 6.16 is taken too.
        let mut short = [0u8; 16];
        short[..4].copy_from_slice(&hb.to_ne_bytes());
        short[8..].copy_from_slice(&(create_in.as_mut_ptr() as u64).to_ne_bytes());
        let req16 = drm_ioc(IOC_READ | IOC_WRITE, DRM_AMDGPU_GEM_OP, 16);
        assert_eq!(render(&b, req16, &mut short), Ok(()));
    }

    /// IMPORT_DMABUF at address 0 (libhsakmt imports a dma-buf for its handle aperture so):
    /// an object with no GPU address, which MAP_MEMORY_TO_GPU refuses.
    #[test]
    fn a_dma_buf_imported_at_address_0_has_no_gpu_address() {
        let a = dev();
        let b = dev();
        let bo = alloc(&a, 0x7300_0000_0000, 4096).unwrap();
        let fd = export(&a, bo.handle);
        let mut i = ImportDmabufArgs {
            va_addr: 0,
            gpu_id: GPU,
            dmabuf_fd: fd.as_raw_fd() as u32,
            ..Default::default()
        };
        plain_ioctl(&*b, &mut i).unwrap();
        assert_ne!(i.handle, 0);
        assert_eq!(map_to_gpu(&b, i.handle), Err(Errno::INVAL));
        // A second import at 0 is another object, not an overlap.
        let mut j = ImportDmabufArgs { handle: 0, ..i };
        plain_ioctl(&*b, &mut j).unwrap();
        assert_ne!(j.handle, i.handle);
        i.va_addr = 0x1000_0001;
        assert_eq!(plain_ioctl(&*b, &mut i), Err(Errno::INVAL), "unaligned");
    }
}
