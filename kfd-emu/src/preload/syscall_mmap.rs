//! The device files' mmap at the system-call level: a client that does not call libc's
//! `mmap` by its global symbol — tinygrad calls it through `ctypes.CDLL('libc.so.6')`, whose
//! `dlsym` finds libc's own definition, never an `LD_PRELOAD` library's; a program calling
//! `syscall(SYS_mmap, ...)` or a static binary — still gets the device's pages.
//!
//! ## How
//!
//! At the first open of a device file the library installs a seccomp filter (all the
//! process's threads, `SECCOMP_FILTER_FLAG_TSYNC`) that makes the kernel answer an `mmap`
//! system call with `SIGSYS` (`SECCOMP_RET_TRAP`) when it is x86-64's `mmap` (number 9), not
//! `MAP_ANONYMOUS`, without `MAP_EXECUTABLE` (below), and at an offset of 4 GiB or more: every
//! offset the device hands out is there (amdkfd's `KFD_MMAP_TYPE_*` offsets have their type
//! in bits 62–63 and the GPU in bits 46–61; render-node buffer objects start at
//! `DRM_FILE_PAGE_OFFSET_START`, 4 GiB, as amdgpu's fake offsets do), and an ordinary file is
//! almost never mapped there. The library's `SIGSYS` handler reads the call's arguments from
//! the signal's register context and
//! - for a descriptor that stands for a device file, maps it exactly as the interposed libc
//!   `mmap` does (`interpose::serve_mmap`: same pages, same errors, same trace line)
//!   and returns the address, or `-errno` as the kernel would, in `rax`;
//! - for any other descriptor, makes the system call itself with `MAP_EXECUTABLE` added,
//!   which the filter lets through and the kernel ignores (mmap(2): "This flag is ignored",
//!   and the kernel has not acted on it since Linux 3.7), and returns the kernel's answer
//!   unchanged.
//!
//! Every other system call, and every other `mmap`, never leaves the kernel: a process pays
//! nothing for the filter but on its mappings at such offsets. The handler keeps `errno`.
//! A `SIGSYS` that is not this filter's (its `si_errno` is not `TRAP_DATA`, 0x4b46) goes to the
//! handler that was installed before, or kills the process as the default action does.
//!
//! A filter outlives `exec`. A program exec'd from a client gets the library again
//! (`LD_PRELOAD` is inherited): its constructor installs the handler when the process is
//! already under a seccomp filter (`PR_GET_SECCOMP` is 2), so its own mmaps at such offsets
//! are served (passed through) too.
//!
//! ## Why not the alternatives
//!
//! - Descriptors that are memfds whose offsets *are* the device's memory, so that the
//!   kernel's own mmap gives the device's bytes: a memfd's size is at most `2^63 - 1`, and
//!   amdkfd's doorbell (`3 << 62`) and event-page (`2 << 62`) offsets lie past that (the
//!   kernel answers `EOVERFLOW`, which is what tinygrad got); and every buffer object would
//!   have to live in one file per GPU, which the device's memory (one memfd per buffer
//!   object, exported as its dma-buf) is not.
//! - Seccomp user notification: the supervisor answers from another thread or process and
//!   cannot make a mapping in the caller's address space except as a thread of the same
//!   process, whose own mmaps must then bypass the filter too; and a forked child, which
//!   inherits the filter but not the supervisor thread, would block in its first such mmap.
//!   A trap handler is inherited with the filter by `fork`.
//! - Syscall user dispatch (`PR_SET_SYSCALL_USER_DISPATCH`) traps every system call made
//!   outside one code region, not only these mmaps.
//!
//! ## Limits
//!
//! - x86-64 only (on other architectures nothing is installed; libc's `mmap` is still
//!   interposed).
//! - An mmap system call on a device file at an offset below 4 GiB (no device offset is
//!   there) reaches the kernel, which maps the memfd standing for the file: the mapping
//!   succeeds and touching it raises `SIGBUS`, where amdkfd answers `EINVAL`.
//! - `munmap` is not trapped (it has no descriptor to tell the device's mappings by): a
//!   direct `munmap` of a device mapping is the kernel's, as it is for amdkfd, but the trace
//!   does not record it and the emulated SVM ranges over those pages are not dropped.
//! - A client that passes `MAP_EXECUTABLE` itself, or that installs its own `SIGSYS`
//!   handler after the first open, is not served at the system-call level. A program
//!   exec'd *without* the library (cleared `LD_PRELOAD`, a static binary) that maps a file
//!   at 4 GiB or more is killed by `SIGSYS`.
//! - Installing a filter needs `CAP_SYS_ADMIN` in the process's user namespace (kfd-emu's
//!   programs run as root in their namespace) or `no_new_privs`: without the capability the
//!   library sets `PR_SET_NO_NEW_PRIVS`, after which an exec'd set-user-ID program gains no
//!   privileges. When the filter cannot be installed the library says so once on stderr and
//!   the device is served through libc's `mmap` alone.
#![allow(unsafe_code)]

/// The filter's `SECCOMP_RET_DATA`, which the kernel hands the handler as `si_errno`: tells
/// this library's traps from other filters' (`'K' << 8 | 'F'`).
pub(crate) const TRAP_DATA: u16 = 0x4b46;

/// `MAP_EXECUTABLE` (`asm-generic/mman-common.h`), ignored by the kernel's mmap: the mark of
/// the handler's own pass-through calls, which the filter lets by.
pub(crate) const PASS_THROUGH: i32 = 0x1000;

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, PoisonError};

    use libc::{c_int, c_void, siginfo_t};
    use rustix::io::Errno;

    use super::{PASS_THROUGH, TRAP_DATA};
    use crate::interpose;

    /// `AUDIT_ARCH_X86_64` (`linux/audit.h`): `EM_X86_64` | 64-bit | little-endian.
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    /// `SYS_SECCOMP` (`asm-generic/siginfo.h`): the `si_code` of a seccomp trap.
    const SYS_SECCOMP: c_int = 1;
    /// `offsetof(struct seccomp_data, ...)` (`linux/seccomp.h`): nr, arch, args[3] (flags,
    /// low half) and args[5] (offset, high half) on a little-endian machine.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const FLAGS_LO: u32 = 16 + 3 * 8;
    const OFFSET_HI: u32 = 16 + 5 * 8 + 4;
    // Classic BPF opcodes (`linux/bpf_common.h`): BPF_LD|BPF_W|BPF_ABS (0x00|0x00|0x20),
    // BPF_JMP|BPF_JEQ|BPF_K (0x05|0x10|0x00), BPF_JMP|BPF_JSET|BPF_K, BPF_RET|BPF_K.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    /// The filter (module docs): instruction 9 traps, 10 allows.
    pub(super) fn program() -> [libc::sock_filter; 11] {
        [
            stmt(LD_W_ABS, ARCH),
            jump(JEQ_K, AUDIT_ARCH_X86_64, 0, 8),
            stmt(LD_W_ABS, NR),
            jump(JEQ_K, libc::SYS_mmap as u32, 0, 6),
            stmt(LD_W_ABS, FLAGS_LO),
            jump(JSET_K, libc::MAP_ANONYMOUS as u32, 4, 0),
            jump(JSET_K, PASS_THROUGH as u32, 3, 0),
            stmt(LD_W_ABS, OFFSET_HI),
            jump(JEQ_K, 0, 1, 0),
            stmt(RET_K, libc::SECCOMP_RET_TRAP | u32::from(TRAP_DATA)),
            stmt(RET_K, libc::SECCOMP_RET_ALLOW),
        ]
    }

    /// The `SIGSYS` action before this library's, for the signals that are not its own.
    static PREVIOUS: Mutex<Option<libc::sigaction>> = Mutex::new(None);
    static HANDLER_SET: AtomicBool = AtomicBool::new(false);

    /// Installs the `SIGSYS` handler (once per process image).
    pub(super) fn install_handler() -> Result<(), Errno> {
        if HANDLER_SET.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // SAFETY: a zeroed sigaction is a valid value (no handler, empty mask, no flags).
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_sigsys as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: as above.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `act` and `old` are valid sigaction values; `on_sigsys` has the
        // SA_SIGINFO handler's signature.
        if unsafe { libc::sigaction(libc::SIGSYS, &act, &mut old) } != 0 {
            HANDLER_SET.store(false, Ordering::Release);
            return Err(Errno::from_raw_os_error(errno()));
        }
        *PREVIOUS.lock().unwrap_or_else(PoisonError::into_inner) = Some(old);
        Ok(())
    }

    /// Installs the filter on every thread of the process (module docs).
    pub(super) fn install_filter() -> Result<(), String> {
        install_handler().map_err(|e| format!("SIGSYS handler: {e}"))?;
        let mut filter = program();
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_mut_ptr(),
        };
        let seccomp = |prog: &libc::sock_fprog| {
            // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies it.
            unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_TSYNC,
                    prog as *const libc::sock_fprog,
                )
            }
        };
        let mut r = seccomp(&prog);
        if r == -1 && errno() == libc::EACCES {
            // Without CAP_SYS_ADMIN in this user namespace the kernel takes a filter only
            // under no_new_privs.
            // SAFETY: prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(format!(
                    "PR_SET_NO_NEW_PRIVS: {}",
                    Errno::from_raw_os_error(errno())
                ));
            }
            r = seccomp(&prog);
        }
        match r {
            0 => Ok(()),
            -1 => Err(format!("seccomp: {}", Errno::from_raw_os_error(errno()))),
            tid => Err(format!(
                "seccomp: thread {tid} is under another filter (TSYNC)"
            )),
        }
    }

    fn errno() -> c_int {
        // SAFETY: __errno_location returns the calling thread's errno slot.
        unsafe { *libc::__errno_location() }
    }

    fn set_errno(v: c_int) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = v };
    }

    /// The mmap the handler answers: `(addr, len, prot, flags, fd, offset)` → the kernel's
    /// return value (an address, or `-errno`).
    fn answer(addr: u64, len: u64, prot: i32, flags: i32, fd: i32, offset: u64) -> i64 {
        if let Some((s, t)) = interpose::lookup(fd) {
            // SAFETY: the program asked the kernel for this mapping with these arguments;
            // serve_mmap's contract is mmap's.
            let r = unsafe {
                interpose::serve_mmap(
                    s,
                    t,
                    addr as *mut c_void,
                    len as usize,
                    prot,
                    flags,
                    offset as i64,
                )
            };
            return match r {
                Ok(p) => p.as_ptr() as i64,
                Err(e) => -i64::from(e.raw_os_error()),
            };
        }
        // SAFETY: the program's own mmap, made as it asked with the pass-through mark the
        // kernel ignores.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mmap,
                addr,
                len,
                i64::from(prot),
                i64::from(flags | PASS_THROUGH),
                i64::from(fd),
                offset,
            )
        };
        if r == -1 {
            -i64::from(errno())
        } else {
            r
        }
    }

    /// Fields of `siginfo_t`'s `_sigsys` member (`asm-generic/siginfo.h`), after the three
    /// ints (and padding) every `siginfo_t` starts with.
    #[repr(C)]
    struct SigsysInfo {
        signo: c_int,
        errno: c_int,
        code: c_int,
        _pad: c_int,
        call_addr: *mut c_void,
        syscall: c_int,
        arch: u32,
    }

    extern "C" fn on_sigsys(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
        let saved = errno();
        // SAFETY: the kernel passes a siginfo_t for SA_SIGINFO handlers, which is at least as
        // large as SigsysInfo (128 bytes).
        let si = unsafe { &*info.cast::<SigsysInfo>() };
        let ours = si.code == SYS_SECCOMP
            && si.errno == c_int::from(TRAP_DATA)
            && si.syscall == libc::SYS_mmap as c_int
            && si.arch == AUDIT_ARCH_X86_64
            && !ctx.is_null();
        if !ours {
            chain(sig, info, ctx);
            return;
        }
        // SAFETY: for an SA_SIGINFO handler the third argument is the thread's ucontext_t,
        // which the kernel restores from (registers included) when the handler returns.
        let uc = unsafe { &mut *ctx.cast::<libc::ucontext_t>() };
        let g = &mut uc.uc_mcontext.gregs;
        let reg = |r: c_int| g[r as usize] as u64;
        let r = answer(
            reg(libc::REG_RDI),
            reg(libc::REG_RSI),
            reg(libc::REG_RDX) as i32,
            reg(libc::REG_R10) as i32,
            reg(libc::REG_R8) as i32,
            reg(libc::REG_R9),
        );
        g[libc::REG_RAX as usize] = r;
        set_errno(saved);
    }

    /// A `SIGSYS` that is not this library's: the previous handler's, or the default action
    /// (the process is killed, with a core dump where enabled).
    fn chain(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
        let prev = *PREVIOUS.lock().unwrap_or_else(PoisonError::into_inner);
        let handler = prev.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // SAFETY: a zeroed sigaction with SIG_DFL restores the default action; raising
            // SIGSYS again (pending until this handler returns, as SIGSYS is blocked in it)
            // then takes it.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGSYS, &dfl, std::ptr::null_mut());
                libc::raise(libc::SIGSYS);
            }
            return;
        }
        let flags = prev.map_or(0, |p| p.sa_flags);
        if flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous action's handler, of the SA_SIGINFO signature its flags
            // say, called with the kernel's arguments as the kernel would have.
            let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(handler) };
            f(sig, info, ctx);
        } else {
            // SAFETY: as above, a plain handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
            f(sig);
        }
    }

    /// Whether the process is under a seccomp filter (`PR_GET_SECCOMP` is 2).
    pub(super) fn filtered() -> bool {
        // SAFETY: prctl with integer arguments.
        (unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) }) == 2
    }
}

/// Installs the filter and its handler, once per process image, at the first open of a
/// device file (module docs); says on stderr, once, why when it cannot.
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_arch = "x86_64")]
        if let Err(e) = imp::install_filter() {
            eprintln!(
                "kfd-emu: the mmap system call on the device files is not served ({e}); \
                 libc's mmap is"
            );
        }
    });
}

/// Run when the library is loaded: a process image that inherited a seccomp filter (this
/// library's, from the program that exec'd it) gets the handler its traps need.
extern "C" fn at_load() {
    #[cfg(target_arch = "x86_64")]
    if imp::filtered() {
        let _ = imp::install_handler();
    }
}

/// The library's constructor entry. Sound: a plain function with no arguments, which the
/// dynamic loader calls once after loading the library.
#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The filter's jumps land on its two returns, and it ends in them.
    #[test]
    fn jumps_land_on_the_returns() {
        let p = imp::program();
        let n = p.len();
        assert_eq!(p[n - 2].k, libc::SECCOMP_RET_TRAP | u32::from(TRAP_DATA));
        assert_eq!(p[n - 1].k, libc::SECCOMP_RET_ALLOW);
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == 0x05 {
                for t in [insn.jt, insn.jf] {
                    let to = i + 1 + usize::from(t);
                    assert!(to < n, "instruction {i} jumps past the end");
                }
                if insn.jt != 0 {
                    assert_eq!(i + 1 + usize::from(insn.jt), n - 1, "{i} allows");
                }
                if insn.jf != 0 {
                    assert_eq!(i + 1 + usize::from(insn.jf), n - 1, "{i} allows");
                }
            }
        }
    }
}
