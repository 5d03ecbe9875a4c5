//! The seam between the Linux backend and amdkfd: every ioctl and mmap the backend makes goes
//! through a [`KfdDriver`]. The real driver ([`super::ioctl`]) makes the system calls on
//! `/dev/kfd` and the render node; another implementation (outside this crate) may answer them
//! with the kernel's semantics. Everything above this trait — building argument structs,
//! choosing flags, reading results — is the same code in every case.
//!
//! [`KfdDriver::ioctl`] and [`KfdDriver::mmap`] are `unsafe`: an ioctl argument may carry
//! pointers the driver reads and writes through, and an mmap at an address replaces what is
//! there. The backend calls them only through the typed wrappers of [`super::calls`], which
//! derive every such pointer from a Rust buffer of the right length, and through
//! [`super::ioctl::VaSpace::map_from_driver`], which maps only over ranges it owns.
#![allow(unsafe_code)] // the trait's two unsafe methods; no unsafe blocks here

use std::ptr::NonNull;

use rustix::io::Errno;

/// Which file an mmap offset refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapTarget {
    /// `/dev/kfd` (doorbell pages, the event page).
    Kfd,
    /// The render node `/dev/dri/renderD<minor>` of the GPU with this `gpu_id` (buffer
    /// objects at their `mmap_offset`).
    RenderNode(u32),
    /// A dma-buf open in this process with this file descriptor (a buffer object imported
    /// with `IMPORT_DMABUF`, which has no render-node offset: the host maps the dma-buf
    /// itself, from offset 0).
    DmaBuf(i32),
}

/// amdkfd as the backend sees it.
///
/// Implementations must be usable from any thread at once (`ioctl` may block: WAIT_EVENTS).
///
/// # Implementation safety
/// Callers uphold the `# Safety` sections of [`KfdDriver::ioctl`] and [`KfdDriver::mmap`]
/// and nothing more; an implementation relies on nothing else. In particular it
/// - reads and writes `arg` itself, and through a pointer inside `arg` at most the bytes the
///   table of [`KfdDriver::ioctl`] gives for that field, computed from the lengths in `arg`
///   (clamped to its own limits, never grown), and only for as long as the table says;
/// - copies through a pointer only in a way that fails with `EFAULT` instead of faulting when
///   the memory is not mapped (the kernel's `copy_{from,to}_user`; the emulated device's
///   `/proc/self/mem`), since callers may pass such a pointer;
/// - reaches the memory of a queue or a `USERPTR` allocation only through its own mappings
///   of memory that was registered with it, never through an address merely because an
///   argument names it;
/// - maps only where [`KfdDriver::mmap`] says;
/// - answers a successful `EXPORT_DMABUF` with a new descriptor of this process in
///   `dmabuf_fd`, which the caller then owns (and closes), and takes its own reference to the
///   descriptor `IMPORT_DMABUF` names (the caller may close it after the call).
///
/// Counts a driver returns (`n_success`, `num_of_nodes`, `wait_result`) are checked by the
/// callers ([`super::calls`] clamps them), so a wrong count is a bug, not undefined behaviour.
pub trait KfdDriver: Send + Sync + 'static {
    /// A short name for messages: `"kfd"` for the real driver.
    fn name(&self) -> &str;

    /// Issues ioctl `request` (an `AMDKFD_IOC_*` number) on `/dev/kfd` with `arg` as the
    /// argument buffer. `arg.len()` must equal the size encoded in `request` (else `EINVAL`,
    /// nothing done). Use the typed wrappers of [`super::calls`] instead: they uphold the
    /// contract below.
    ///
    /// # Safety
    /// `arg` is the argument struct of `request` as `kfd_ioctl.h` defines it. Some requests
    /// carry pointers in it, through which the driver (or the GPU it programs) reads and
    /// writes; for each the caller guarantees that the memory is valid for that access, of at
    /// least the bytes given, that no Rust reference to it is used meanwhile, and that it
    /// stays so for as long as given — or, for the pointers the driver only copies through
    /// (rows 1–4), that the address is not mapped at all (the call then fails with `EFAULT`):
    ///
    /// | request | field | access | bytes | how long |
    /// |---|---|---|---|---|
    /// | `MAP_MEMORY_TO_GPU`, `UNMAP_MEMORY_FROM_GPU` | `device_ids_array_ptr` | read | 4 × `n_devices` | the call |
    /// | `WAIT_EVENTS` | `events_ptr` (each entry's `kfd_event_data_ext` 0: no extension is defined) | read, written back | 48 × `num_events` | the call |
    /// | `GET_PROCESS_APERTURES_NEW` | `kfd_process_device_apertures_ptr` | written (none when `num_of_nodes` is 0) | 56 × `num_of_nodes` | the call |
    /// | `SET_CU_MASK` | `cu_mask_ptr` | read | 4 × `num_cu_mask` / 32 | the call |
    /// | `ALLOC_MEMORY_OF_GPU` with `KFD_IOC_ALLOC_MEM_FLAGS_USERPTR` | `mmap_offset` (the host address) | read and written by the device, concurrently with the host; must stay mapped read-write | `size`, page-aligned | until `FREE_MEMORY_OF_GPU` of the returned handle succeeds |
    /// | `CREATE_QUEUE`, `UPDATE_QUEUE` | `ring_base_address`, `write_pointer_address`, `read_pointer_address`, `eop_buffer_address`, `ctx_save_restore_address` | read and written by the command processor, concurrently with the host | `ring_size`, the `amd_queue_t` (256) the two pointers lie in, `eop_buffer_size`, `ctx_save_restore_size` | until `DESTROY_QUEUE` of the queue succeeds |
    /// | `SET_SCRATCH_BACKING_VA` | `va_addr` | read and written by the GPU's waves (pre-gfx9 scratch) | the scratch size | the process's life |
    /// | `RUNTIME_ENABLE` | `r_debug` | read by a debugger | `struct r_debug` | the process's life |
    ///
    /// The memory of the last four rows is memory allocated from this driver (or, for
    /// `USERPTR`, registered with it) and mapped to the GPU, and the host accesses the words it
    /// shares with the device (AQL packet headers, dispatch ids, signal values, doorbells)
    /// only atomically. Every other request of `kfd_ioctl.h` carries no pointer; a request
    /// number not in `kfd_ioctl.h` must be one whose argument carries none.
    ///
    /// # Errors
    /// The errno the kernel (or the driver standing in for it) returned.
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno>;

    /// Maps `len` bytes (a multiple of the page size) of `target` at `offset`, shared, read and
    /// write; at exactly `addr` (`MAP_FIXED`, replacing what is mapped there) when given.
    /// Without `addr`, [`super::calls::mmap`] is the safe way.
    ///
    /// # Safety
    /// For [`MapTarget::DmaBuf`], the descriptor is open in this process for the call.
    /// With `addr`: `[addr, addr + len)` belongs to the caller — a range it reserved for this,
    /// such as a carved [`super::ioctl::VaSpace`] range — and nothing else uses it: no Rust
    /// reference, no other thread, no other mapping's user, since its mapping is replaced.
    /// Without `addr` there is nothing to uphold (the kernel picks unused addresses). Either
    /// way the new mapping is the caller's.
    ///
    /// # Implementation safety
    /// With `addr`, map exactly there or fail, touching nothing outside `[addr, addr + len)`;
    /// without, never replace an existing mapping.
    ///
    /// # Errors
    /// The errno of mmap (EINVAL for an offset that names nothing).
    unsafe fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno>;

    /// The file descriptor number of the render node `/dev/dri/renderD<minor>` of the GPU with
    /// this `gpu_id`, for `AMDKFD_IOC_ACQUIRE_VM.drm_fd` (the real driver opens it on first
    /// use and keeps it open). A driver without DRM files keeps this default, `-1`, and
    /// accepts it in ACQUIRE_VM.
    ///
    /// # Errors
    /// The errno of opening the render node (`EACCES`: not in the `render` group; `ENOENT`:
    /// no such node; `ENODEV`: unknown `gpu_id`).
    fn render_node_fd(&self, _gpu_id: u32) -> Result<i32, Errno> {
        Ok(-1)
    }

    /// Issues DRM ioctl `request` on the render node of the GPU with this `gpu_id` with `arg`
    /// as the argument buffer (`arg.len()` the size `request` encodes, else `EINVAL`). Use the
    /// typed wrappers of [`super::drm`]: they make only the requests below, whose arguments
    /// carry no pointer. A driver without render nodes keeps this default, `ENODEV`, and the
    /// platform then has no virtual-memory API (`VirtualAddressRanges`).
    ///
    /// # Safety
    /// `arg` is the argument struct of `request` as `drm.h` / `amdgpu_drm.h` define it, and
    /// `request` is one of `DRM_IOCTL_PRIME_FD_TO_HANDLE`, `DRM_IOCTL_GEM_CLOSE`,
    /// `DRM_IOCTL_AMDGPU_GEM_MMAP` and `DRM_IOCTL_AMDGPU_GEM_VA` (the last with no sync
    /// objects), none of which carries a pointer. A `GEM_VA` map makes the GPU read and write
    /// the object's pages at the address given: the caller owns that range of the GPU's
    /// address space.
    ///
    /// # Errors
    /// The errno the kernel (or the driver standing in for it) returned; `ENODEV` by default.
    unsafe fn render_ioctl(
        &self,
        _gpu_id: u32,
        _request: u32,
        _arg: &mut [u8],
    ) -> Result<(), Errno> {
        Err(Errno::NODEV)
    }
}
