//! amdkfd (`/dev/kfd`): the ioctl ABI ([`abi`]) and the mapping of its errors to [`Status`].
//!
//! [`ioctl`] holds the system calls (the real [`driver::KfdDriver`], `DevKfd`, and the address
//! reservation `VaSpace`); [`calls`] the typed, safe wrappers every ioctl goes through; the
//! rest makes no system calls.

use hsa_core::{error, Error, Status};
use rustix::io::Errno;

pub mod abi;
pub mod calls;
pub mod driver;
pub mod drm;
pub mod ioctl;

const ENOMEM: i32 = Errno::NOMEM.raw_os_error();
const ENOSPC: i32 = Errno::NOSPC.raw_os_error();
const EAGAIN: i32 = Errno::AGAIN.raw_os_error();
const EMFILE: i32 = Errno::MFILE.raw_os_error();
const ENFILE: i32 = Errno::NFILE.raw_os_error();
const EINVAL: i32 = Errno::INVAL.raw_os_error();
const EFAULT: i32 = Errno::FAULT.raw_os_error();
const E2BIG: i32 = Errno::TOOBIG.raw_os_error();
const ERANGE: i32 = Errno::RANGE.raw_os_error();
const EOVERFLOW: i32 = Errno::OVERFLOW.raw_os_error();
const ENODEV: i32 = Errno::NODEV.raw_os_error();
const ENOENT: i32 = Errno::NOENT.raw_os_error();
const ENXIO: i32 = Errno::NXIO.raw_os_error();
const EBUSY: i32 = Errno::BUSY.raw_os_error();
const EEXIST: i32 = Errno::EXIST.raw_os_error();
const EPERM: i32 = Errno::PERM.raw_os_error();
const EACCES: i32 = Errno::ACCESS.raw_os_error();

/// The [`Status`] an amdkfd ioctl failure with `errno` (positive, as `errno` holds it) maps to:
///
/// | errno | Status | why |
/// |---|---|---|
/// | `ENOMEM`, `ENOSPC`, `EAGAIN`, `EMFILE`, `ENFILE` | [`Status::OutOfResources`] | no memory, VA, queue slot or fd |
/// | `EINVAL`, `EFAULT`, `E2BIG`, `ERANGE`, `EOVERFLOW` | [`Status::InvalidArgument`] | the kernel rejected an argument |
/// | `ENODEV`, `ENOENT`, `ENXIO` | [`Status::InvalidAgent`] | no GPU with that `gpu_id` (or it is gone) |
/// | `EBUSY`, `EEXIST` | [`Status::InvalidRuntimeState`] | wrong state (queues already active, call pending) |
/// | `EPERM`, `EACCES` | [`Status::Error`] | no permission (HSA has no code for it; the message says which) |
/// | anything else (`EIO`, ...) | [`Status::Error`] | |
///
/// Ref: `kfd_chardev.c` return values; `hsa_status_t` (HSA Runtime 1.2 §2.2.1).
pub fn status_for_errno(errno: i32) -> Status {
    match errno {
        ENOMEM | ENOSPC | EAGAIN | EMFILE | ENFILE => Status::OutOfResources,
        EINVAL | EFAULT | E2BIG | ERANGE | EOVERFLOW => Status::InvalidArgument,
        ENODEV | ENOENT | ENXIO => Status::InvalidAgent,
        EBUSY | EEXIST => Status::InvalidRuntimeState,
        EPERM | EACCES => Status::Error,
        _ => Status::Error,
    }
}

/// An errno as messages name it, once: `"<description> (errno <n>)"`, e.g. `"Cannot allocate
/// memory (errno 12)"` (the C library's `strerror` text without the `" (os error N)"` that
/// `std::io::Error`'s and rustix's `Display` append).
pub fn errno_text(errno: i32) -> String {
    let desc = std::io::Error::from_raw_os_error(errno).to_string();
    let desc = desc.split(" (os error").next().unwrap_or(&desc);
    format!("{desc} (errno {errno})")
}

/// An [`Error`] for a failed ioctl: `status_for_errno(errno)` and the message
/// `"<what>: <errno_text>"`, e.g. `"AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: Cannot allocate memory
/// (errno 12)"`.
pub fn ioctl_error(what: &str, errno: i32) -> Error {
    error!(status_for_errno(errno), "{what}: {}", errno_text(errno))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mapping_uses_linux_numbers() {
        // Linux asm-generic/errno-base.h values.
        assert_eq!(status_for_errno(12), Status::OutOfResources); // ENOMEM
        assert_eq!(status_for_errno(28), Status::OutOfResources); // ENOSPC
        assert_eq!(status_for_errno(22), Status::InvalidArgument); // EINVAL
        assert_eq!(status_for_errno(14), Status::InvalidArgument); // EFAULT
        assert_eq!(status_for_errno(19), Status::InvalidAgent); // ENODEV
        assert_eq!(status_for_errno(16), Status::InvalidRuntimeState); // EBUSY
        assert_eq!(status_for_errno(1), Status::Error); // EPERM
        assert_eq!(status_for_errno(13), Status::Error); // EACCES
        assert_eq!(status_for_errno(5), Status::Error); // EIO
        assert_eq!(status_for_errno(-1), Status::Error);
        assert_eq!(status_for_errno(0), Status::Error);
    }

    #[test]
    fn ioctl_error_message() {
        let e = ioctl_error("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", 12);
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(
            e.detail()
                .to_string()
                .starts_with("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: "),
            "{}",
            e.detail()
        );
        assert!(
            e.detail().to_string().ends_with("(errno 12)"),
            "{}",
            e.detail()
        );
    }
}
