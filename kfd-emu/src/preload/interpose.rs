//! The interposed libc functions: the only `unsafe` of the library.
//!
//! Each exported function has libc's signature (the variadic `open`/`ioctl` family take
//! their one optional argument as a fixed parameter: on x86-64 and aarch64 SysV a variadic
//! integer or pointer argument is passed where a fixed one would be, and a callee that does
//! not use it reads a register the caller left undefined, as libc's own does). Calls that
//! are not for the emulated device files go to the next definition (`dlsym(RTLD_NEXT)`:
//! libc's).
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::fd::{BorrowedFd, IntoRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use hsa_linux::kfd::abi::{IOC_READ, IOC_WRITE};
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use libc::{c_char, c_int, c_uint, c_ulong, c_void, off_t, size_t};
use rustix::io::Errno;

use crate::state::{self, State, Target};
use crate::trace;

/// Looks up (once) the next definition of a libc function.
macro_rules! next {
    ($name:literal, $ty:ty) => {{
        static SLOT: AtomicUsize = AtomicUsize::new(0);
        let mut p = SLOT.load(Ordering::Relaxed);
        if p == 0 {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no precondition.
            p = unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr().cast()) }
                as usize;
            SLOT.store(p, Ordering::Relaxed);
        }
        if p == 0 {
            None
        } else {
            // SAFETY: `p` is the address of libc's function of that name, whose C type is
            // `$ty` (the same signature as the function defined here).
            Some(unsafe { std::mem::transmute::<usize, $ty>(p) })
        }
    }};
}

/// Run at exit (normal termination runs `.fini_array`): the trace's `stats` line.
extern "C" fn trace_stats_at_exit() {
    state::trace_stats();
}

/// The library's destructor entry. Sound: a plain function with no arguments, which the
/// dynamic loader calls once while the process exits, when every library is still loaded.
#[used]
#[link_section = ".fini_array"]
static TRACE_STATS_AT_EXIT: extern "C" fn() = trace_stats_at_exit;

fn set_errno(e: Errno) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = e.raw_os_error() };
}

fn fail(e: Errno) -> c_int {
    set_errno(e);
    -1
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;
type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type IoctlFn = unsafe extern "C" fn(c_int, c_ulong, *mut c_void) -> c_int;
type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;
type MunmapFn = unsafe extern "C" fn(*mut c_void, size_t) -> c_int;
type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat64) -> c_int;
type FxstatFn = unsafe extern "C" fn(c_int, c_int, *mut libc::stat64) -> c_int;

/// `Some(fd or -1)` when `path` is a device file this library emulates.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn emulated_open(path: *const c_char, flags: c_int) -> Option<c_int> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    let kind = state::classify(unsafe { CStr::from_ptr(path) }.to_bytes())?;
    let s = match state::state() {
        Ok(s) => s,
        Err(_) => return Some(fail(Errno::NODEV)),
    };
    Some(match s.open(kind, flags & libc::O_CLOEXEC != 0) {
        Ok(fd) => fd.into_raw_fd(),
        Err(e) => fail(e),
    })
}

/// `open(2)`.
///
/// # Safety
/// libc's contract for `open`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("open", OpenFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(path, flags, mode) },
        None => fail(Errno::NOSYS),
    }
}

/// `open64(2)`.
///
/// # Safety
/// libc's contract for `open64`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("open64", OpenFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(path, flags, mode) },
        None => fail(Errno::NOSYS),
    }
}

/// `__open_2` (`open` under `_FORTIFY_SOURCE`).
///
/// # Safety
/// libc's contract for `__open_2`.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("__open_2", Open2Fn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(path, flags) },
        None => fail(Errno::NOSYS),
    }
}

/// `__open64_2`.
///
/// # Safety
/// libc's contract for `__open64_2`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("__open64_2", Open2Fn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(path, flags) },
        None => fail(Errno::NOSYS),
    }
}

/// `openat(2)` (absolute paths only are emulated).
///
/// # Safety
/// libc's contract for `openat`.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("openat", OpenatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(dir, path, flags, mode) },
        None => fail(Errno::NOSYS),
    }
}

/// `openat64`.
///
/// # Safety
/// libc's contract for `openat64`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("openat64", OpenatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(dir, path, flags, mode) },
        None => fail(Errno::NOSYS),
    }
}

/// `__openat_2`.
///
/// # Safety
/// libc's contract for `__openat_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("__openat_2", Openat2Fn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(dir, path, flags) },
        None => fail(Errno::NOSYS),
    }
}

/// `__openat64_2`.
///
/// # Safety
/// libc's contract for `__openat64_2`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: libc's contract: `path` is a C string.
    if let Some(r) = unsafe { emulated_open(path, flags) } {
        return r;
    }
    match next!("__openat64_2", Openat2Fn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(dir, path, flags) },
        None => fail(Errno::NOSYS),
    }
}

/// The device file `fd` stands for, if any (`fd` need not be open).
pub(crate) fn lookup(fd: c_int) -> Option<(&'static State, Target)> {
    if fd < 0 {
        return None;
    }
    // SAFETY: only used for the duration of an fstat; an fd that is not open makes fstat
    // fail with EBADF, which reads as "not ours".
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    state::lookup(borrowed)
}

/// `close(2)`: libc's; a device file's close is traced.
///
/// # Safety
/// libc's contract for `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some((s, t)) = lookup(fd) {
        if let Some(tr) = &s.tracer {
            tr.line(&format!("close {} fd={fd}", t.path()));
        }
    }
    match next!("close", CloseFn) {
        // SAFETY: the caller's argument, passed on unchanged.
        Some(f) => unsafe { f(fd) },
        None => fail(Errno::NOSYS),
    }
}

/// DRM's character-device major (`DRM_MAJOR`, `include/drm/drm.h`): render node `renderD<N>`
/// is device 226:N.
pub(crate) const DRM_MAJOR: u32 = 226;

/// What `fstat` of a device file answers beyond the memfd standing for it: a render node is
/// the character device `DRM_MAJOR:minor` (libdrm's `drmGetMinorNameForFD` and
/// `drmGetDevice2` go from `st_rdev` to `/sys/dev/char/226:<minor>`, and libdrm_amdgpu tells
/// two GPUs apart that way: with the memfd's `st_rdev` 0:0 every render node looked like the
/// first, and ROCR 7's libhsakmt mapped every GPU's buffer objects through the first GPU's
/// node). `/dev/kfd` keeps the memfd's answer (amdkfd's major is dynamic and no client reads
/// it). Other descriptors are untouched.
fn device_stat(fd: c_int, st: *mut libc::stat64) {
    if st.is_null() {
        return;
    }
    if let Some((_, Target::Render { minor, .. })) = lookup(fd) {
        // SAFETY: `st` is the caller's stat buffer, which the successful fstat just filled.
        let st = unsafe { &mut *st };
        st.st_mode = libc::S_IFCHR | 0o666;
        st.st_rdev = libc::makedev(DRM_MAJOR, minor as u32);
        st.st_size = 0;
    }
}

/// `fstat(2)` (glibc 2.33's `fstat`): libc's, and a render node's answer as
/// [`device_stat`] says.
///
/// # Safety
/// libc's contract for `fstat`.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, st: *mut libc::stat64) -> c_int {
    let r = match next!("fstat", FstatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(fd, st) },
        None => return fail(Errno::NOSYS),
    };
    if r == 0 {
        device_stat(fd, st);
    }
    r
}

/// `fstat64`: as [`fstat`] (the same structure on x86-64).
///
/// # Safety
/// libc's contract for `fstat64`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, st: *mut libc::stat64) -> c_int {
    let r = match next!("fstat64", FstatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(fd, st) },
        None => return fail(Errno::NOSYS),
    };
    if r == 0 {
        device_stat(fd, st);
    }
    r
}

/// `__fxstat64`, what programs built against glibc before 2.33 call for `fstat`: as
/// [`fstat`].
///
/// # Safety
/// libc's contract for `__fxstat64`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat64(ver: c_int, fd: c_int, st: *mut libc::stat64) -> c_int {
    let r = match next!("__fxstat64", FxstatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(ver, fd, st) },
        None => return fail(Errno::NOSYS),
    };
    if r == 0 {
        device_stat(fd, st);
    }
    r
}

/// `__fxstat`: as [`__fxstat64`] (the same structure on x86-64).
///
/// # Safety
/// libc's contract for `__fxstat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstat(ver: c_int, fd: c_int, st: *mut libc::stat64) -> c_int {
    let r = match next!("__fxstat", FxstatFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(ver, fd, st) },
        None => return fail(Errno::NOSYS),
    };
    if r == 0 {
        device_stat(fd, st);
    }
    r
}

/// `copy_from_user`: `out.len()` bytes at `addr` of this process (`EFAULT` when unmapped).
fn copy_from_user(addr: u64, out: &mut [u8]) -> Result<(), Errno> {
    if out.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut c_void,
        iov_len: out.len(),
    };
    // SAFETY: `local` is `out`, writable for its length; the kernel reads `remote` from this
    // process's address space and fails with EFAULT where it is not mapped.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == out.len() as isize {
        Ok(())
    } else {
        Err(Errno::FAULT)
    }
}

/// `copy_to_user`: `data` to `addr` of this process (`EFAULT` when unmapped).
fn copy_to_user(addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut c_void,
        iov_len: data.len(),
    };
    // SAFETY: `local` is `data`, only read by the kernel; the kernel writes `remote` in this
    // process's address space (the caller's argument buffer, as an ioctl would) and fails
    // with EFAULT where it is not mapped.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == data.len() as isize {
        Ok(())
    } else {
        Err(Errno::FAULT)
    }
}

/// An ioctl on a device file, as the kernel runs one: copy in, handle, copy out.
fn device_ioctl(s: &State, target: Target, request: u32, arg: u64) -> Result<(), Errno> {
    let size = ((request >> 16) & 0x3fff) as usize;
    // kfd_ioctl copies in and out as its table's command says, whatever the request's
    // direction bits; the size is the request's. Render-node requests keep their own.
    let dir = match target {
        Target::Kfd => {
            hsa_emu::device::amdkfd_table_command((request & 0xff) as u8).unwrap_or(request)
        }
        Target::Render { .. } => request,
    } >> 30;
    let mut buf = vec![0u8; size];
    if dir & IOC_WRITE != 0 {
        copy_from_user(arg, &mut buf)?;
    }
    let before = buf.clone();
    let result = match target {
        // SAFETY: the program's ioctl: the pointers inside the argument are the program's, as
        // they would be for amdkfd (KfdDriver::ioctl's contract is the kernel's).
        Target::Kfd => unsafe { s.kfd.ioctl(request, &mut buf) },
        // SAFETY: as above, for the render node's user pointers.
        Target::Render { gpu_id, .. } => unsafe { s.kfd.render_ioctl(gpu_id, request, &mut buf) },
    };
    // As kfd_ioctl and drm_ioctl: the argument goes back for _IOC_READ even after an error.
    let copied = if dir & IOC_READ != 0 {
        copy_to_user(arg, &buf)
    } else {
        Ok(())
    };
    let result = result.and(copied);
    if let Some(t) = &s.tracer {
        t.line(&trace::ioctl_line(
            &target.path(),
            request,
            &before,
            &buf,
            result,
        ));
    }
    result
}

/// `ioctl(2)`: a device file's requests go to the emulated device.
///
/// # Safety
/// libc's contract for `ioctl` with the request's argument.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if let Some((s, t)) = lookup(fd) {
        return match device_ioctl(s, t, request as u32, arg as u64) {
            Ok(()) => 0,
            Err(e) => fail(e),
        };
    }
    match next!("ioctl", IoctlFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(fd, request, arg) },
        None => fail(Errno::NOSYS),
    }
}

/// A device file's mmap, as the kernel's `mmap` on amdkfd or amdgpu answers it: the mapping
/// (with the protection asked for) or the errno; traced. Served for the interposed libc
/// `mmap`/`mmap64` and for the mmap system call ([`crate::syscall_mmap`]).
///
/// # Safety
/// As `mmap(2)` with `MAP_FIXED` when `flags` has it: the program gives up what was mapped
/// at `addr`.
pub(crate) unsafe fn serve_mmap(
    s: &State,
    target: Target,
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    offset: off_t,
) -> Result<NonNull<u8>, Errno> {
    let fixed = flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0;
    let at = if fixed {
        NonNull::new(addr.cast::<u8>())
    } else {
        None
    };
    let map_target = match target {
        Target::Kfd => MapTarget::Kfd,
        Target::Render { gpu_id, .. } => MapTarget::RenderNode(gpu_id),
    };
    // SAFETY: the program asked for this mapping (over `addr` when fixed), as it would ask
    // the kernel: KfdDriver::mmap's contract is mmap's.
    let mut result = unsafe { s.kfd.mmap(map_target, offset as u64, len, at) };
    if let Ok(p) = result {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        if prot != rw {
            // SAFETY: `p..p+len` is the mapping just made for the program.
            let r = unsafe { libc::mprotect(p.as_ptr().cast(), len, prot) };
            if r != 0 {
                result = Err(Errno::ACCESS);
            }
        }
    }
    if let (Ok(p), Some(_)) = (result, &s.tracer) {
        s.mapped(p.as_ptr() as u64, len as u64);
    }
    if let Some(t) = &s.tracer {
        let what = match target {
            Target::Kfd => trace::kfd_offset_kind(offset as u64),
            Target::Render { .. } => "BO".to_owned(),
        };
        let r = match result {
            Ok(p) => format!("{:#x}", p.as_ptr() as usize),
            Err(e) => trace::errno_name(e),
        };
        t.line(&format!(
            "mmap {} offset={:#x} ({what}) len={len:#x} prot={} flags={} addr={:#x} -> {r}",
            target.path(),
            offset as u64,
            trace::prot_text(prot),
            trace::map_flags_text(flags),
            addr as usize
        ));
    }
    result
}

/// [`serve_mmap`] with libc's `mmap` return convention (`MAP_FAILED` and `errno`).
///
/// # Safety
/// As [`serve_mmap`].
unsafe fn device_mmap(
    s: &State,
    target: Target,
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the caller's contract is serve_mmap's.
    match unsafe { serve_mmap(s, target, addr, len, prot, flags, offset) } {
        Ok(p) => p.as_ptr().cast(),
        Err(e) => {
            set_errno(e);
            libc::MAP_FAILED
        }
    }
}

/// `mmap(2)`: a device file's mapping comes from the emulated device.
///
/// # Safety
/// libc's contract for `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    if flags & libc::MAP_ANONYMOUS == 0 {
        if let Some((s, t)) = lookup(fd) {
            // SAFETY: the caller's mmap contract.
            return unsafe { device_mmap(s, t, addr, len, prot, flags, offset) };
        }
    }
    match next!("mmap", MmapFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(addr, len, prot, flags, fd, offset) },
        None => {
            set_errno(Errno::NOSYS);
            libc::MAP_FAILED
        }
    }
}

/// `mmap64`: as [`mmap`] (`off_t` is 64 bits here).
///
/// # Safety
/// libc's contract for `mmap64`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    if flags & libc::MAP_ANONYMOUS == 0 {
        if let Some((s, t)) = lookup(fd) {
            // SAFETY: the caller's mmap contract.
            return unsafe { device_mmap(s, t, addr, len, prot, flags, offset) };
        }
    }
    match next!("mmap64", MmapFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(addr, len, prot, flags, fd, offset) },
        None => {
            set_errno(Errno::NOSYS);
            libc::MAP_FAILED
        }
    }
}

/// `munmap(2)`: libc's (traced once a device file was opened).
///
/// # Safety
/// libc's contract for `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    if let Some(s) = state::opened() {
        if let Some(t) = &s.tracer {
            if s.unmapped(addr as u64, len as u64) {
                t.line(&format!("munmap {:#x} len={len:#x}", addr as usize));
            }
        }
    }
    let r = match next!("munmap", MunmapFn) {
        // SAFETY: the caller's arguments, passed on unchanged.
        Some(f) => unsafe { f(addr, len) },
        None => return fail(Errno::NOSYS),
    };
    // amdkfd's MMU notifier: the SVM ranges over unmapped pages go (the C library's own
    // munmap, in `free`, is not seen here; alloc_memory_of_gpu deals with those).
    if r == 0 {
        if let Some(s) = state::opened() {
            s.kfd.cpu_unmapped(addr as u64, len as u64);
        }
    }
    r
}
