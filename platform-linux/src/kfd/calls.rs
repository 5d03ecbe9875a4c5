//! The typed amdkfd calls: the way the backend issues every ioctl.
//!
//! [`KfdDriver::ioctl`] is `unsafe` because some argument structs carry pointers. Here each
//! request the backend makes has its own function that takes or borrows the buffer a pointer
//! refers to, and fills the pointer in from that Rust buffer (of the right length) right
//! before the call:
//!
//! | request | function |
//! |---|---|
//! | `GET_PROCESS_APERTURES_NEW` | [`get_process_apertures`] |
//! | `ALLOC_MEMORY_OF_GPU` (VRAM, GTT, ...) | [`alloc_memory_of_gpu`] |
//! | `ALLOC_MEMORY_OF_GPU` (`USERPTR`) | [`alloc_userptr_memory_of_gpu`] (`unsafe`) |
//! | `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` | [`map_memory_to_gpu`] / [`unmap_memory_from_gpu`] |
//! | `CREATE_QUEUE` | [`create_queue`] (`unsafe`: the command processor uses the queue's memory) |
//! | `WAIT_EVENTS` | [`wait_events`] |
//! | `SET_CU_MASK` | [`set_cu_mask`] |
//! | requests without pointers | [`call`] (or [`plain_ioctl`] for the bare errno), over [`PlainArgs`] |
//!
//! and [`mmap`] maps without an address (the kernel picks it); mapping at an address goes
//! through [`super::ioctl::VaSpace::map_from_driver`], which owns the range.
//!
//! Ref: linux `include/uapi/linux/kfd_ioctl.h`, `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`.
#![allow(unsafe_code)]

use std::ptr::NonNull;

use hsa_core::{bail, Error, Status};
use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::abi::*;
use super::driver::{KfdDriver, MapTarget};
use super::ioctl::ioctl_arg_size;
use super::ioctl_error;

mod sealed {
    /// Keeps [`super::PlainArgs`] implemented only in this module.
    pub trait Sealed {}
}

/// An ioctl argument struct that carries no pointer the driver reads or writes through, and
/// the request it is the argument of. Implemented only here, for: [`GetVersionArgs`],
/// [`DestroyQueueArgs`], [`SetMemoryPolicyArgs`], [`GetClockCountersArgs`], [`UpdateQueueArgs`]
/// (its ring address is a GPU address KFD does not read through),
/// [`CreateEventArgs`] (its `event_page_offset` is a buffer-object handle), [`DestroyEventArgs`],
/// [`SetEventArgs`], [`ResetEventArgs`], [`AcquireVmArgs`] (a file descriptor number),
/// [`FreeMemoryOfGpuArgs`], [`SetXnackModeArgs`], [`GetAvailableMemoryArgs`],
/// [`ImportDmabufArgs`] and [`ExportDmabufArgs`] (file descriptor numbers: the driver takes
/// its own reference to an imported dma-buf, and an exported one is a new descriptor the
/// caller owns).
///
/// Ref: the field lists of `kfd_ioctl.h` (the table of [`KfdDriver::ioctl`]).
pub trait PlainArgs:
    sealed::Sealed + IntoBytes + FromBytes + Immutable + KnownLayout + Sized
{
    /// The `AMDKFD_IOC_*` request number whose argument this is.
    const REQUEST: u32;
    /// The request's name for messages, e.g. `"AMDKFD_IOC_GET_VERSION"`.
    const NAME: &'static str;
}

macro_rules! plain_args {
    ($($ty:ty => $req:ident),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl PlainArgs for $ty {
            const REQUEST: u32 = $req;
            const NAME: &'static str = stringify!($req);
        }
        const _: () = assert!(ioctl_arg_size($req) == size_of::<$ty>());
    )*};
}

plain_args! {
    GetVersionArgs => AMDKFD_IOC_GET_VERSION,
    DestroyQueueArgs => AMDKFD_IOC_DESTROY_QUEUE,
    SetMemoryPolicyArgs => AMDKFD_IOC_SET_MEMORY_POLICY,
    GetClockCountersArgs => AMDKFD_IOC_GET_CLOCK_COUNTERS,
    UpdateQueueArgs => AMDKFD_IOC_UPDATE_QUEUE,
    CreateEventArgs => AMDKFD_IOC_CREATE_EVENT,
    DestroyEventArgs => AMDKFD_IOC_DESTROY_EVENT,
    SetEventArgs => AMDKFD_IOC_SET_EVENT,
    ResetEventArgs => AMDKFD_IOC_RESET_EVENT,
    AcquireVmArgs => AMDKFD_IOC_ACQUIRE_VM,
    FreeMemoryOfGpuArgs => AMDKFD_IOC_FREE_MEMORY_OF_GPU,
    SetXnackModeArgs => AMDKFD_IOC_SET_XNACK_MODE,
    GetAvailableMemoryArgs => AMDKFD_IOC_AVAILABLE_MEMORY,
    ImportDmabufArgs => AMDKFD_IOC_IMPORT_DMABUF,
    ExportDmabufArgs => AMDKFD_IOC_EXPORT_DMABUF,
}

/// Issues `A::REQUEST` with `args` and returns the driver's errno as it is (for callers that
/// look at the errno itself, such as the tests of the emulated device).
///
/// # Errors
/// The driver's errno.
pub fn plain_ioctl<A: PlainArgs>(drv: &dyn KfdDriver, args: &mut A) -> Result<(), Errno> {
    // SAFETY: `A` is the argument struct of `A::REQUEST` (sizes asserted at compile time by
    // `plain_args!`) and carries no pointer (`PlainArgs` is implemented only for such
    // structs), so the driver accesses nothing but `args`, which is exclusively borrowed.
    unsafe { drv.ioctl(A::REQUEST, args.as_mut_bytes()) }
}

/// Issues `A::REQUEST` with `args`: the one safe way to make a request whose argument
/// carries no pointer.
///
/// # Errors
/// The driver's errno mapped by [`ioctl_error`]`(A::NAME, errno)`: e.g. `ENOMEM` →
/// [`Status::OutOfResources`], message `"<name>: Cannot allocate memory (errno 12)"`.
pub fn call<A: PlainArgs>(drv: &dyn KfdDriver, args: &mut A) -> Result<(), Error> {
    plain_ioctl(drv, args).map_err(|e| ioctl_error(A::NAME, e.raw_os_error()))
}

/// `GET_DMABUF_INFO` of dma-buf `fd` without its metadata (`metadata_ptr` 0, so the
/// argument carries no pointer): `(size in bytes, gpu_id, KFD_IOC_ALLOC_MEM_FLAGS_*)`.
///
/// # Errors
/// The driver's errno mapped by [`ioctl_error`] (`EINVAL`: not a dma-buf of an amdgpu
/// buffer object).
pub fn get_dmabuf_info(drv: &dyn KfdDriver, fd: i32) -> Result<(u64, u32, u32), Error> {
    let mut a = GetDmabufInfoArgs {
        dmabuf_fd: fd as u32,
        ..GetDmabufInfoArgs::default()
    };
    // SAFETY: the argument is GET_DMABUF_INFO's own struct with `metadata_ptr` 0 and
    // `metadata_size` 0, so the driver writes through no pointer; `a` is exclusively borrowed.
    unsafe { drv.ioctl(AMDKFD_IOC_GET_DMABUF_INFO, a.as_mut_bytes()) }
        .map_err(|e| ioctl_error("AMDKFD_IOC_GET_DMABUF_INFO", e.raw_os_error()))?;
    Ok((a.size, a.gpu_id, a.flags))
}

/// `EXPORT_DMABUF` of the buffer object `handle` (`O_CLOEXEC | O_RDWR`): the dma-buf's
/// descriptor, which the caller now owns.
///
/// # Errors
/// The driver's errno mapped by [`ioctl_error`] (`EPERM`: `USERPTR` memory, which amdgpu does
/// not export; `EINVAL`: an unknown handle); `Status::Error` when the driver returned a
/// descriptor number that cannot be one.
pub fn export_dmabuf(drv: &dyn KfdDriver, handle: u64) -> Result<std::os::fd::OwnedFd, Error> {
    use std::os::fd::FromRawFd;
    let mut a = ExportDmabufArgs {
        handle,
        flags: (rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::RDWR).bits(),
        dmabuf_fd: 0,
    };
    call(drv, &mut a)?;
    let Ok(fd) = i32::try_from(a.dmabuf_fd) else {
        bail!(
            Status::Error,
            "AMDKFD_IOC_EXPORT_DMABUF returned descriptor {} for handle {handle:#x}",
            a.dmabuf_fd
        );
    };
    // SAFETY: a successful EXPORT_DMABUF returns a new descriptor of this process that the
    // caller owns (KfdDriver's implementation safety; amdkfd's `dma_buf_fd`), and nothing else
    // has seen the number.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Issues `request` on `drv` with `args` as its argument struct, the errno mapped as
/// [`call`] maps it.
///
/// # Errors
/// - [`Status::InvalidArgument`] when `size_of::<T>()` differs from the size encoded in
///   `request` (a programming error; nothing is sent).
/// - The driver's errno mapped by [`ioctl_error`]`(name, errno)`.
///
/// # Safety
/// As [`KfdDriver::ioctl`] for `request` and the bytes of `args`.
pub(crate) unsafe fn call_raw<T: IntoBytes + FromBytes + Immutable + KnownLayout>(
    drv: &dyn KfdDriver,
    request: u32,
    name: &str,
    args: &mut T,
) -> Result<(), Error> {
    let want = ioctl_arg_size(request);
    if size_of::<T>() != want {
        bail!(
            Status::InvalidArgument,
            "{name}: argument struct is {} bytes but request {request:#x} encodes {want}",
            size_of::<T>()
        );
    }
    // SAFETY: the size matches (checked above); the rest is the caller's contract.
    unsafe { drv.ioctl(request, args.as_mut_bytes()) }
        .map_err(|e| ioctl_error(name, e.raw_os_error()))
}

/// `u32::try_from(n)`, or [`Status::InvalidArgument`] naming the request and what `n` counts.
fn count_u32(name: &str, what: &str, n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| {
        hsa_core::error!(
            Status::InvalidArgument,
            "{name}: {n} {what} do not fit the u32 count"
        )
    })
}

/// `GET_PROCESS_APERTURES_NEW`: fills `out` with the apertures of the process's GPUs and
/// returns how many entries KFD filled (at most `out.len()`). With an empty `out` nothing is
/// written and the result is the number of GPUs KFD would report (its "how many?" form).
///
/// # Errors
/// [`Status::InvalidArgument`] for more than `u32::MAX` entries; the driver's errno mapped
/// by [`ioctl_error`].
pub fn get_process_apertures(
    drv: &dyn KfdDriver,
    out: &mut [ProcessDeviceApertures],
) -> Result<usize, Error> {
    const NAME: &str = "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW";
    let n = count_u32(NAME, "aperture entries", out.len())?;
    let mut a = GetProcessAperturesNewArgs {
        kfd_process_device_apertures_ptr: if out.is_empty() {
            0
        } else {
            out.as_mut_ptr() as u64
        },
        num_of_nodes: n,
        pad: 0,
    };
    // SAFETY: the array pointer is `out`'s, exclusively borrowed for the call and
    // `num_of_nodes` = `out.len()` entries long (with 0 entries KFD writes nothing).
    unsafe { call_raw(drv, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, NAME, &mut a)? };
    Ok(if out.is_empty() {
        a.num_of_nodes as usize
    } else {
        (a.num_of_nodes as usize).min(out.len())
    })
}

/// `ALLOC_MEMORY_OF_GPU` for memory KFD allocates (VRAM, GTT, the doorbell or MMIO page):
/// `args` in, `handle` and `mmap_offset` filled in on success.
///
/// # Errors
/// [`Status::InvalidArgument`] when `args.flags` has `KFD_IOC_ALLOC_MEM_FLAGS_USERPTR`
/// (that registers host memory: [`alloc_userptr_memory_of_gpu`]); the driver's errno mapped
/// by [`ioctl_error`].
pub fn alloc_memory_of_gpu(
    drv: &dyn KfdDriver,
    args: &mut AllocMemoryOfGpuArgs,
) -> Result<(), Error> {
    const NAME: &str = "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU";
    if args.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
        bail!(
            Status::InvalidArgument,
            "{NAME}: flags {:#x} ask for USERPTR, which registers host memory \
             (alloc_userptr_memory_of_gpu)",
            args.flags
        );
    }
    // SAFETY: without USERPTR the argument carries no pointer: `va_addr` is a GPU address KFD
    // maps the new buffer object at, `mmap_offset` is only written by KFD.
    unsafe { call_raw(drv, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, NAME, args) }
}

/// `ALLOC_MEMORY_OF_GPU` with `KFD_IOC_ALLOC_MEM_FLAGS_USERPTR`: registers the host memory at
/// `args.mmap_offset` (`args.size` bytes) as a buffer object at GPU address `args.va_addr`;
/// `handle` filled in on success.
///
/// # Errors
/// [`Status::InvalidArgument`] when `args.flags` lacks USERPTR or `args.mmap_offset` is not
/// page-aligned (4096); the driver's errno mapped by [`ioctl_error`] (`EFAULT`: memory not
/// mapped).
///
/// # Safety
/// `[args.mmap_offset, args.mmap_offset + args.size)` is memory the caller owns, mapped read
/// and write, and stays so until `FREE_MEMORY_OF_GPU` of the returned handle succeeds:
/// until then the device may read and write it at any time (the row `USERPTR` of
/// [`KfdDriver::ioctl`]), so the caller keeps no Rust reference to it and accesses the words
/// it shares with the device atomically.
pub unsafe fn alloc_userptr_memory_of_gpu(
    drv: &dyn KfdDriver,
    args: &mut AllocMemoryOfGpuArgs,
) -> Result<(), Error> {
    const NAME: &str = "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU";
    if args.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR == 0 {
        bail!(
            Status::InvalidArgument,
            "{NAME}: flags {:#x} lack USERPTR (alloc_memory_of_gpu allocates)",
            args.flags
        );
    }
    if args.mmap_offset % 4096 != 0 {
        bail!(
            Status::InvalidArgument,
            "{NAME}: USERPTR host address {:#x} is not page-aligned",
            args.mmap_offset
        );
    }
    // SAFETY: the host range is the caller's for the allocation's life (this function's
    // contract, which is the USERPTR row of KfdDriver::ioctl); nothing else is a pointer.
    unsafe { call_raw(drv, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, NAME, args) }
}

/// `MAP_MEMORY_TO_GPU` or `UNMAP_MEMORY_FROM_GPU` of `handle` on `gpu_ids`.
fn map_or_unmap(
    drv: &dyn KfdDriver,
    request: u32,
    name: &str,
    handle: u64,
    gpu_ids: &[u32],
) -> Result<u32, Error> {
    if gpu_ids.is_empty() {
        bail!(
            Status::InvalidArgument,
            "{name}: no gpu_id given for handle {handle:#x}"
        );
    }
    let n = count_u32(name, "gpu ids", gpu_ids.len())?;
    let mut a = MapMemoryToGpuArgs {
        handle,
        device_ids_array_ptr: gpu_ids.as_ptr() as u64,
        n_devices: n,
        n_success: 0,
    };
    // SAFETY: the id array is `gpu_ids`, borrowed for the call and `n_devices` entries long;
    // KFD only reads it. UnmapMemoryFromGpuArgs has MapMemoryToGpuArgs's layout (both
    // `kfd_ioctl.h` structs are handle, array pointer, n_devices, n_success; sizes checked).
    unsafe { call_raw(drv, request, name, &mut a)? };
    Ok(a.n_success.min(n))
}

/// `MAP_MEMORY_TO_GPU`: maps the buffer object `handle` into the GPU VM of each of `gpu_ids`
/// (at the `va_addr` it was allocated at). Returns KFD's `n_success` (the devices mapped;
/// at most `gpu_ids.len()`).
///
/// # Errors
/// [`Status::InvalidArgument`] for an empty `gpu_ids` (nothing is sent: KFD answers
/// `EINVAL`) or more than `u32::MAX` of them; the driver's errno mapped by [`ioctl_error`].
pub fn map_memory_to_gpu(drv: &dyn KfdDriver, handle: u64, gpu_ids: &[u32]) -> Result<u32, Error> {
    map_or_unmap(
        drv,
        AMDKFD_IOC_MAP_MEMORY_TO_GPU,
        "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
        handle,
        gpu_ids,
    )
}

/// `UNMAP_MEMORY_FROM_GPU`: unmaps `handle` from the GPU VM of each of `gpu_ids`. Returns
/// KFD's `n_success` (at most `gpu_ids.len()`).
///
/// # Errors
/// As [`map_memory_to_gpu`].
pub fn unmap_memory_from_gpu(
    drv: &dyn KfdDriver,
    handle: u64,
    gpu_ids: &[u32],
) -> Result<u32, Error> {
    map_or_unmap(
        drv,
        AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
        "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU",
        handle,
        gpu_ids,
    )
}

/// `CREATE_QUEUE`: `args` in, `queue_id` and `doorbell_offset` filled in on success.
///
/// # Errors
/// The driver's errno mapped by [`ioctl_error`].
///
/// # Safety
/// The ring (`ring_base_address`, `ring_size` bytes), the `amd_queue_t` holding the write and
/// read pointers, the EOP buffer and the context save area are memory allocated from (or
/// registered with) `drv` and mapped to the queue's GPU, and stay allocated until
/// `DESTROY_QUEUE` of the queue succeeds; from this call on the command processor reads and
/// writes them concurrently with the host, so the host keeps no Rust reference to them and
/// accesses the words they share (packet headers, dispatch ids) only atomically (the
/// `CREATE_QUEUE` row of [`KfdDriver::ioctl`]).
pub unsafe fn create_queue(drv: &dyn KfdDriver, args: &mut CreateQueueArgs) -> Result<(), Error> {
    // SAFETY: the caller's contract is the CREATE_QUEUE row of KfdDriver::ioctl.
    unsafe {
        call_raw(
            drv,
            AMDKFD_IOC_CREATE_QUEUE,
            "AMDKFD_IOC_CREATE_QUEUE",
            args,
        )
    }
}

/// `WAIT_EVENTS`: waits up to `timeout_ms` milliseconds (`u32::MAX`: forever) until one of
/// `events` (by `event_id`), or all of them when `wait_for_all`, fired; KFD writes each
/// entry's exception data back. Returns KFD's `wait_result`
/// (`KFD_IOC_WAIT_RESULT_COMPLETE`, `_TIMEOUT` or `_FAIL`).
///
/// # Errors
/// [`Status::InvalidArgument`] (nothing is sent) for no events, more than
/// [`KFD_SIGNAL_EVENT_LIMIT`] (the event page's slots; the emulated device refuses more), or
/// an entry whose `kfd_event_data_ext` is not 0 (amdkfd defines no extension); the driver's
/// errno mapped by [`ioctl_error`].
pub fn wait_events(
    drv: &dyn KfdDriver,
    events: &mut [EventData],
    wait_for_all: bool,
    timeout_ms: u32,
) -> Result<u32, Error> {
    const NAME: &str = "AMDKFD_IOC_WAIT_EVENTS";
    if events.is_empty() || events.len() > KFD_SIGNAL_EVENT_LIMIT as usize {
        bail!(
            Status::InvalidArgument,
            "{NAME}: {} events; 1..={KFD_SIGNAL_EVENT_LIMIT} can be waited on",
            events.len()
        );
    }
    if let Some((i, e)) = events
        .iter()
        .enumerate()
        .find(|(_, e)| e.kfd_event_data_ext != 0)
    {
        bail!(
            Status::InvalidArgument,
            "{NAME}: events[{i}] (event {}) has kfd_event_data_ext {:#x}; it must be 0",
            e.event_id,
            e.kfd_event_data_ext
        );
    }
    let mut a = WaitEventsArgs {
        events_ptr: events.as_mut_ptr() as u64,
        num_events: events.len() as u32,
        wait_for_all: u32::from(wait_for_all),
        timeout: timeout_ms,
        wait_result: 0,
    };
    // SAFETY: the event array is `events`, exclusively borrowed for the call and
    // `num_events` entries long, each with a zero extension pointer (checked above).
    unsafe { call_raw(drv, AMDKFD_IOC_WAIT_EVENTS, NAME, &mut a)? };
    Ok(a.wait_result)
}

/// `SET_CU_MASK`: restricts queue `queue_id` to the compute units whose bits are set in
/// `mask` (bit `i` of word `w` is CU `32 * w + i`).
///
/// # Errors
/// [`Status::InvalidArgument`] for an empty mask or one of more than `u32::MAX / 32` words
/// (nothing is sent); the driver's errno mapped by [`ioctl_error`].
pub fn set_cu_mask(drv: &dyn KfdDriver, queue_id: u32, mask: &[u32]) -> Result<(), Error> {
    const NAME: &str = "AMDKFD_IOC_SET_CU_MASK";
    let bits = match u32::try_from(mask.len()) {
        Ok(n) if n > 0 => n.checked_mul(32),
        _ => None,
    };
    let Some(bits) = bits else {
        bail!(
            Status::InvalidArgument,
            "{NAME}: a mask of {} words; 1..={} can be given",
            mask.len(),
            u32::MAX / 32
        );
    };
    let mut a = SetCuMaskArgs {
        queue_id,
        num_cu_mask: bits,
        cu_mask_ptr: mask.as_ptr() as u64,
    };
    // SAFETY: the mask pointer is `mask`, borrowed for the call and `num_cu_mask / 32` words
    // long; KFD only reads it.
    unsafe { call_raw(drv, AMDKFD_IOC_SET_CU_MASK, NAME, &mut a) }
}

/// Maps `len` bytes of `target` at `offset` where the kernel chooses, shared, read and write.
/// The mapping is never unmapped by this crate (it belongs to the caller).
///
/// # Errors
/// The driver's errno (`EINVAL` for an offset that names nothing or a bad length).
pub fn mmap(
    drv: &dyn KfdDriver,
    target: MapTarget,
    offset: u64,
    len: usize,
) -> Result<NonNull<u8>, Errno> {
    // SAFETY: without an address the driver places the mapping in unused address space;
    // there is nothing to uphold.
    unsafe { drv.mmap(target, offset, len, None) }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Answers like amdkfd for the few requests below, reading and writing the pointed-to
    /// arrays as the kernel does, and records every request.
    #[derive(Default)]
    struct Recorder {
        requests: Mutex<Vec<u32>>,
        /// What the driver claims in `n_success` / `num_of_nodes` (a lying driver when big).
        claim: u32,
        errno: Option<Errno>,
    }

    impl KfdDriver for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }

        unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
            assert_eq!(arg.len(), ioctl_arg_size(request));
            self.requests.lock().unwrap().push(request);
            if let Some(e) = self.errno {
                return Err(e);
            }
            match request {
                AMDKFD_IOC_GET_VERSION => {
                    arg.copy_from_slice(
                        GetVersionArgs {
                            major_version: 1,
                            minor_version: 14,
                        }
                        .as_bytes(),
                    );
                }
                AMDKFD_IOC_MAP_MEMORY_TO_GPU | AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => {
                    let mut a = MapMemoryToGpuArgs::read_from_bytes(arg).unwrap();
                    for i in 0..a.n_devices as usize {
                        // SAFETY: the caller's contract: n_devices readable ids.
                        let id = unsafe { *(a.device_ids_array_ptr as *const u32).add(i) };
                        assert_ne!(id, 0);
                    }
                    a.n_success = self.claim;
                    arg.copy_from_slice(a.as_bytes());
                }
                AMDKFD_IOC_GET_PROCESS_APERTURES_NEW => {
                    let mut a = GetProcessAperturesNewArgs::read_from_bytes(arg).unwrap();
                    if a.num_of_nodes != 0 {
                        let p = a.kfd_process_device_apertures_ptr as *mut ProcessDeviceApertures;
                        // SAFETY: the caller's contract: num_of_nodes >= 1 writable entries.
                        unsafe {
                            p.write(ProcessDeviceApertures {
                                gpu_id: 7,
                                ..Default::default()
                            })
                        };
                    }
                    a.num_of_nodes = self.claim;
                    arg.copy_from_slice(a.as_bytes());
                }
                AMDKFD_IOC_WAIT_EVENTS => {
                    let mut a = WaitEventsArgs::read_from_bytes(arg).unwrap();
                    // SAFETY: the caller's contract: num_events readable and writable entries.
                    let first = unsafe { &mut *(a.events_ptr as *mut EventData) };
                    first.union_data[0] = 0x5a;
                    a.wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
                    arg.copy_from_slice(a.as_bytes());
                }
                _ => {}
            }
            Ok(())
        }

        unsafe fn mmap(
            &self,
            _: MapTarget,
            _: u64,
            _: usize,
            _: Option<NonNull<u8>>,
        ) -> Result<NonNull<u8>, Errno> {
            Err(Errno::NODEV)
        }
    }

    impl Recorder {
        fn sent(&self) -> Vec<u32> {
            self.requests.lock().unwrap().clone()
        }
    }

    #[test]
    fn call_checks_size_and_maps_errno() {
        assert_eq!(ioctl_arg_size(AMDKFD_IOC_CREATE_QUEUE), 88);
        let ok = Recorder::default();
        let mut v = GetVersionArgs::default();
        call(&ok, &mut v).unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 14));
        // SAFETY: the size check refuses the call before anything is sent.
        let e = unsafe {
            call_raw(
                &ok,
                AMDKFD_IOC_CREATE_QUEUE,
                "AMDKFD_IOC_CREATE_QUEUE",
                &mut v,
            )
        }
        .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(
            e.detail().to_string().contains("8 bytes") && e.detail().to_string().contains("88"),
            "{}",
            e.detail()
        );
        assert_eq!(ok.sent(), [AMDKFD_IOC_GET_VERSION], "nothing sent");
        let nomem = Recorder {
            errno: Some(Errno::NOMEM),
            ..Default::default()
        };
        let e = call(&nomem, &mut FreeMemoryOfGpuArgs::default()).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(
            e.detail(),
            "AMDKFD_IOC_FREE_MEMORY_OF_GPU: Cannot allocate memory (errno 12)"
        );
        assert_eq!(
            plain_ioctl(&nomem, &mut SetEventArgs::default()),
            Err(Errno::NOMEM)
        );
    }

    #[test]
    fn plain_args_name_their_request() {
        assert_eq!(GetVersionArgs::REQUEST, AMDKFD_IOC_GET_VERSION);
        assert_eq!(FreeMemoryOfGpuArgs::NAME, "AMDKFD_IOC_FREE_MEMORY_OF_GPU");
        assert_eq!(GetAvailableMemoryArgs::REQUEST, AMDKFD_IOC_AVAILABLE_MEMORY);
        assert_eq!(CreateEventArgs::REQUEST, AMDKFD_IOC_CREATE_EVENT);
    }

    #[test]
    fn map_refuses_an_empty_id_list_and_clamps_n_success() {
        let d = Recorder {
            claim: 99,
            ..Default::default()
        };
        let e = map_memory_to_gpu(&d, 0x42, &[]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "AMDKFD_IOC_MAP_MEMORY_TO_GPU: no gpu_id given for handle 0x42"
        );
        let e = unmap_memory_from_gpu(&d, 0x42, &[]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(d.sent().is_empty(), "nothing sent for an empty list");
        // A driver claiming 99 successes for 2 ids is clamped to 2.
        assert_eq!(map_memory_to_gpu(&d, 0x42, &[5, 6]).unwrap(), 2);
        assert_eq!(unmap_memory_from_gpu(&d, 0x42, &[5]).unwrap(), 1);
        assert_eq!(
            d.sent(),
            [
                AMDKFD_IOC_MAP_MEMORY_TO_GPU,
                AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU
            ]
        );
    }

    #[test]
    fn wait_events_checks_count_and_extension() {
        let d = Recorder::default();
        let too_many = KFD_SIGNAL_EVENT_LIMIT as usize + 1;
        let mut events = vec![EventData::default(); too_many];
        let e = wait_events(&d, &mut events, false, 0).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "AMDKFD_IOC_WAIT_EVENTS: 4097 events; 1..=4096 can be waited on"
        );
        let e = wait_events(&d, &mut [], true, 0).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let mut ext = [
            EventData::default(),
            EventData {
                event_id: 3,
                kfd_event_data_ext: 0x1000,
                ..Default::default()
            },
        ];
        let e = wait_events(&d, &mut ext, true, 0).unwrap_err();
        assert_eq!(
            e.detail(),
            "AMDKFD_IOC_WAIT_EVENTS: events[1] (event 3) has kfd_event_data_ext 0x1000; it must be 0"
        );
        assert!(d.sent().is_empty(), "nothing sent");
        // The limit itself is fine, and KFD's write-back lands in the caller's buffer.
        events.truncate(KFD_SIGNAL_EVENT_LIMIT as usize);
        assert_eq!(
            wait_events(&d, &mut events, false, 5).unwrap(),
            KFD_IOC_WAIT_RESULT_TIMEOUT
        );
        assert_eq!(events[0].union_data[0], 0x5a);
    }

    #[test]
    fn apertures_count_query_and_clamp() {
        let d = Recorder {
            claim: 3,
            ..Default::default()
        };
        assert_eq!(get_process_apertures(&d, &mut []).unwrap(), 3);
        let mut out = [ProcessDeviceApertures::default(); 2];
        // The driver claims 3 entries for a 2-entry array: clamped.
        assert_eq!(get_process_apertures(&d, &mut out).unwrap(), 2);
        assert_eq!(out[0].gpu_id, 7);
    }

    #[test]
    fn alloc_wrappers_split_on_userptr() {
        let d = Recorder::default();
        let mut a = AllocMemoryOfGpuArgs {
            flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
            mmap_offset: 0x1000,
            size: 4096,
            ..Default::default()
        };
        let e = alloc_memory_of_gpu(&d, &mut a).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("USERPTR"), "{}", e.detail());
        a.mmap_offset = 0x1001;
        // SAFETY: refused before anything is sent (misaligned host address).
        let e = unsafe { alloc_userptr_memory_of_gpu(&d, &mut a) }.unwrap_err();
        assert_eq!(
            e.detail(),
            "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: USERPTR host address 0x1001 is not page-aligned"
        );
        a.flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
        // SAFETY: refused before anything is sent (no USERPTR flag).
        let e = unsafe { alloc_userptr_memory_of_gpu(&d, &mut a) }.unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(d.sent().is_empty());
        alloc_memory_of_gpu(&d, &mut a).unwrap();
        assert_eq!(d.sent(), [AMDKFD_IOC_ALLOC_MEMORY_OF_GPU]);
    }

    #[test]
    fn cu_mask_must_not_be_empty() {
        let d = Recorder::default();
        let e = set_cu_mask(&d, 1, &[]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(d.sent().is_empty());
        set_cu_mask(&d, 1, &[u32::MAX; 4]).unwrap();
        assert_eq!(d.sent(), [AMDKFD_IOC_SET_CU_MASK]);
    }
}
