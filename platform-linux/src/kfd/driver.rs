//! The seam between the Linux backend and amdkfd: every ioctl and mmap the backend makes goes
//! through a [`KfdDriver`]. The real driver ([`super::ioctl`]) makes the system calls on
//! `/dev/kfd` and the render node; another implementation (outside this crate) may answer them
//! with the kernel's semantics. Everything above this trait — building argument structs,
//! choosing flags, reading results — is the same code in every case.

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
}

/// amdkfd as the backend sees it.
///
/// Implementations must be usable from any thread at once (`ioctl` may block: WAIT_EVENTS).
pub trait KfdDriver: Send + Sync + 'static {
    /// A short name for messages: `"kfd"` for the real driver.
    fn name(&self) -> &str;

    /// Issues ioctl `request` (an `AMDKFD_IOC_*` number) on `/dev/kfd` with `arg` as the
    /// argument buffer. `arg.len()` must equal the size encoded in `request`.
    ///
    /// # Errors
    /// The errno the kernel (or the driver standing in for it) returned.
    fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno>;

    /// Maps `len` bytes (a multiple of the page size) of `target` at `offset`, shared, read and
    /// write; at exactly `addr` (`MAP_FIXED`, replacing a reservation) when given.
    ///
    /// # Errors
    /// The errno of mmap (EINVAL for an offset that names nothing).
    fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno>;

    /// Called after the backend stored a new write index to a queue's doorbell. Hardware needs
    /// nothing more (the MMIO store is the doorbell); a software device wakes its packet
    /// processor. Never blocks. Emulator-only seam, to be removed (issue 18): a device should
    /// watch the doorbell and write index as the CP does.
    fn doorbell_rung(&self, _queue_id: u32, _doorbell: NonNull<u64>, _value: u64) {}

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

    /// Told by the backend for every kernel the loader loads: its kernel object (the device
    /// address of its kernel descriptor) and its symbol name, as ROCR reports loaded code
    /// objects to tools. Hardware needs nothing; a software device uses it to find the host
    /// implementation of a kernel. Never fails. Emulator-only seam, to be removed (issue 18):
    /// a device should find kernels from the kernel descriptors in the memory it maps.
    fn register_kernel_symbol(&self, _kernel_object: u64, _name: &str) {}

    /// Told by the backend right after CREATE_QUEUE succeeded: the callback to call once when
    /// the queue's packet processor stops with an error. On hardware the error arrives as a
    /// KFD hardware-exception event instead (not wired yet); a software device calls it from
    /// its packet processor. Never fails. Emulator-only seam, to be removed (issue 18): errors
    /// should arrive as amdkfd reports them (hardware-exception and memory events,
    /// `queue_inactive_signal`).
    fn set_queue_error_callback(
        &self,
        _queue_id: u32,
        _callback: hsa_core::platform::QueueErrorCallback,
    ) {
    }
}
