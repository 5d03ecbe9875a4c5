//! # libkfd_emu_preload.so
//!
//! The library `kfd-emu` preloads (`LD_PRELOAD`) into the program it runs, so that the
//! program's unmodified ROCm user space (libhsakmt, libdrm_amdgpu, ROCR) drives hsa-emu's
//! emulated device ([`hsa_emu::EmulatedKfd`]) as if it were amdkfd and a GPU:
//!
//! - `open`, `open64`, `__open_2`, `__open64_2`, `openat`, `openat64`, `__openat_2`,
//!   `__openat64_2` of `/dev/kfd` or `/dev/dri/renderD<minor>` (a minor that one of the
//!   topology's GPUs has; another is `ENOENT`) give a file descriptor of a memfd standing for
//!   the device file; every other path goes to libc. The device is made at the first open of
//!   `/dev/kfd`, from the topology at `/sys/devices/virtual/kfd/kfd/topology` (which `kfd-emu`
//!   writes into its private mount namespace), or at `$KFD_EMU_TOPOLOGY` when set.
//! - A descriptor is recognised by the file it refers to (device and inode of its memfd), not
//!   by its number: `dup`, `dup2`, `fcntl(F_DUPFD_CLOEXEC)` (libdrm keeps such a copy) and
//!   inheritance all keep working. The library keeps one descriptor of each memfd itself, so
//!   an inode is never reused by another file while the process lives.
//! - `ioctl` on such a descriptor: `/dev/kfd` requests go to the emulated amdkfd
//!   ([`hsa_linux::kfd::driver::KfdDriver::ioctl`]), render-node requests to its DRM answers
//!   ([`hsa_emu::EmulatedKfd::render_ioctl`]). The argument is copied in and out as the kernel
//!   does (`process_vm_readv`/`writev`, so a bad pointer is `EFAULT`, not a crash).
//! - `mmap`/`mmap64` of such a descriptor map the device's pages (doorbells, the event page,
//!   buffer objects) at the offset the ioctls returned, with the protection asked for;
//!   `munmap` and `close` go to libc. A client that makes the mmap system call itself
//!   (tinygrad calls `mmap` through `ctypes.CDLL('libc.so.6')`, which no `LD_PRELOAD`
//!   library interposes; `syscall(SYS_mmap, ...)`) is served the same: a seccomp filter
//!   traps its mmaps at the device's offsets into the library's `SIGSYS` handler
//!   ([`syscall_mmap`], which says why this and not memfds whose offsets are the device's
//!   memory or seccomp user notification, and its limits).
//! - `open` and `ioctl` need nothing of the kind for Python clients: `os.open` and
//!   `fcntl.ioctl` call libc's `open`/`openat`/`ioctl` by their global symbols, which this
//!   library interposes.
//! - With `$KFD_EMU_TRACE` naming a file, every ioctl and mmap of the device files is
//!   appended to it, one line each: the request by name, the argument decoded before and
//!   after, the result ([`trace`]).
//!
//! Nothing happens in a process that does not open `/dev/kfd` or a render node: the library
//! only looks at paths and, once a device file was opened, at the descriptors given to
//! `ioctl` and `mmap`.
#![deny(unsafe_code)]

mod interpose;
mod state;
pub mod syscall_mmap;
pub mod trace;
