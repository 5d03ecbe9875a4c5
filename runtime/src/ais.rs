//! File reads and writes straight to and from runtime allocations: ROCm 7's AIS calls
//! (`hsa_amd_ais_file_read`, `hsa_amd_ais_file_write`, `hsa_ext_amd.h`, marked experimental
//! there).
//!
//! ROCR 7.2.4 moves the data with amdgpu's direct-storage path where the kernel has it. This
//! runtime has no such path; the header's contract only needs the device memory to be
//! reachable by the host, so the data moves through the allocation's host mapping with
//! `pread`/`pwrite` at the file offset: the same bytes end up in the same places, at host
//! copy speed.

use std::os::fd::BorrowedFd;

use hsa_core::addr::GpuVa;
use hsa_core::platform_ref::PlatformRef;
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::Runtime;
use hsa_core::{bail, Error, Status};

/// Which way [`file_io`] moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// File to memory (`hsa_amd_ais_file_read`).
    Read,
    /// Memory to file (`hsa_amd_ais_file_write`).
    Write,
}

/// Moves `size` bytes between file descriptor `fd` at byte `file_offset` and the runtime
/// allocation at `ptr`, through its host mapping. Returns the bytes moved and the last
/// `errno` seen (0 when none): fewer bytes than asked when the file ends first (a read) or
/// the system call fails part way.
///
/// # Errors
/// `Status::InvalidArgument` for a negative `fd` or `file_offset`, a NULL `ptr`, a `size`
/// of 0, or memory the host cannot reach; `Status::InvalidAllocation` when `ptr` is not inside
/// an allocation of `rt` or the range runs past it; `Status::Error` when the first system call
/// fails (the header's status for a failed transfer), naming the `errno`.
///
/// # Safety
/// `fd` is an open file descriptor for the whole call; no one else writes the range during a
/// read.
pub unsafe fn file_io<H: PlatformRef>(
    rt: &Runtime<H>,
    host: &HostMemory,
    fd: i32,
    ptr: u64,
    size: u64,
    file_offset: i64,
    dir: Direction,
) -> Result<(u64, i32), Error> {
    if fd < 0 {
        bail!(Status::InvalidArgument, "file descriptor {fd} is negative");
    }
    if ptr == 0 {
        bail!(Status::InvalidArgument, "devicePtr is NULL");
    }
    if size == 0 {
        bail!(Status::InvalidArgument, "size is 0");
    }
    if file_offset < 0 {
        bail!(
            Status::InvalidArgument,
            "file_offset {file_offset} is negative"
        );
    }
    let info = rt.pointer_info(GpuVa(ptr)).map_err(|_| {
        hsa_core::error!(
            Status::InvalidAllocation,
            "devicePtr {ptr:#x} is not memory this runtime allocated"
        )
    })?;
    let a = info.allocation;
    if (ptr - a.va.0)
        .checked_add(size)
        .is_none_or(|end| end > a.size_bytes)
    {
        bail!(
            Status::InvalidAllocation,
            "{size} bytes at {ptr:#x} run past the allocation at {:#x} ({} bytes)",
            a.va.0,
            a.size_bytes
        );
    }
    let len = usize::try_from(size)
        .map_err(|_| hsa_core::error!(Status::InvalidArgument, "size {size} too large"))?;
    let host_ptr = host.host_range(rt, ptr, len, "devicePtr")?;
    // SAFETY: the caller keeps `fd` open for the call.
    let file = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut done = 0usize;
    let mut errno = 0;
    while done < len {
        let off = file_offset as u64 + done as u64;
        // SAFETY: `host_ptr` maps `len` bytes of the allocation (checked above); the caller
        // keeps others from writing it during a read.
        let r = unsafe {
            let p = host_ptr.add(done);
            match dir {
                Direction::Read => {
                    rustix::io::pread(file, std::slice::from_raw_parts_mut(p, len - done), off)
                }
                Direction::Write => {
                    rustix::io::pwrite(file, std::slice::from_raw_parts(p, len - done), off)
                }
            }
        };
        match r {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                errno = e.raw_os_error();
                if done == 0 {
                    bail!(
                        Status::Error,
                        "{} at file offset {off}: {e}",
                        if dir == Direction::Read {
                            "pread"
                        } else {
                            "pwrite"
                        }
                    );
                }
                break;
            }
        }
    }
    Ok((done as u64, errno))
}
