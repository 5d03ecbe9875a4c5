//! Accesses to user memory that fault instead of crashing: how the emulated GPU reaches
//! `USERPTR` buffer objects (memory the application registered, `hsa_amd_memory_lock`), which
//! the application may unmap while a kernel or a copy engine still reads it.
//!
//! A GPU reaching a page that is no longer mapped takes a VM fault: amdgpu's MMU notifier
//! invalidates the userptr buffer object when its pages go, and the GPU's next access to
//! them faults, which amdkfd reports with a memory event (`kfd_signal_vm_fault_event`). The
//! emulated device reads and writes that memory from inside the process, where an unmapped
//! page would be a `SIGSEGV`; so every access to a user region goes through the routines
//! here, which work as the kernel's `copy_from_user` does: the access is one instruction (or
//! a `rep movsb`) inside a known range of code, and a `SIGSEGV` or `SIGBUS` whose instruction
//! pointer lies in that range resumes at a fixup that returns the faulting address instead of
//! the value. Any other fault goes to the handler that was installed before (Rust's stack
//! overflow report, the application's own, or the default action), unchanged.
//!
//! Only x86_64 has these routines; elsewhere a user region is accessed directly (an unmapped
//! page then stops the process, as before).
#![allow(unsafe_code)]

/// A guarded access faulted: the host address of the byte (or word) that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UserFault {
    /// The faulting host address (`si_addr`), or the access's first byte when the kernel did
    /// not report one.
    pub(crate) host_address: u64,
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::ffi::c_void;
    use std::sync::OnceLock;

    use super::UserFault;

    // The routines. Each is a leaf that keeps nothing on the stack, so the fixup can return
    // from any instruction of it; each returns 0 in rax, or (set by the signal handler) the
    // faulting address. Symbols are hidden: every shared object that links hsa-emu (the C
    // library, kfd-emu's preload library) has its own copy and its own handler in the chain.
    core::arch::global_asm!(
        ".pushsection .text.hsa_emu_guarded,\"ax\",@progbits",
        ".p2align 4",
        ".globl hsa_emu_guarded_begin",
        ".hidden hsa_emu_guarded_begin",
        "hsa_emu_guarded_begin:",
        // copy(dst: rdi, src: rsi, len: rdx) -> rax
        ".globl hsa_emu_guarded_copy",
        ".hidden hsa_emu_guarded_copy",
        "hsa_emu_guarded_copy:",
        // The sizes of a lane's access (4, 8, 16 bytes) as one load and one store each.
        "    cmp rdx, 4",
        "    jne 2f",
        "    mov eax, dword ptr [rsi]",
        "    mov dword ptr [rdi], eax",
        "    xor eax, eax",
        "    ret",
        "2:",
        "    cmp rdx, 8",
        "    jne 3f",
        "    mov rax, qword ptr [rsi]",
        "    mov qword ptr [rdi], rax",
        "    xor eax, eax",
        "    ret",
        "3:",
        "    cmp rdx, 16",
        "    jne 4f",
        "    movups xmm0, xmmword ptr [rsi]",
        "    movups xmmword ptr [rdi], xmm0",
        "    xor eax, eax",
        "    ret",
        "4:",
        "    mov rcx, rdx",
        "    rep movsb",
        "    xor eax, eax",
        "    ret",
        // cas32(ptr: rdi, expected: esi, new: edx, old_out: rcx) -> rax
        ".globl hsa_emu_guarded_cas32",
        ".hidden hsa_emu_guarded_cas32",
        "hsa_emu_guarded_cas32:",
        "    mov eax, esi",
        "    lock cmpxchg dword ptr [rdi], edx",
        "    mov dword ptr [rcx], eax",
        "    xor eax, eax",
        "    ret",
        // cas64(ptr: rdi, expected: rsi, new: rdx, old_out: rcx) -> rax
        ".globl hsa_emu_guarded_cas64",
        ".hidden hsa_emu_guarded_cas64",
        "hsa_emu_guarded_cas64:",
        "    mov rax, rsi",
        "    lock cmpxchg qword ptr [rdi], rdx",
        "    mov qword ptr [rcx], rax",
        "    xor eax, eax",
        "    ret",
        ".globl hsa_emu_guarded_end",
        ".hidden hsa_emu_guarded_end",
        "hsa_emu_guarded_end:",
        // The fixup: rax already holds the faulting address.
        ".globl hsa_emu_guarded_fixup",
        ".hidden hsa_emu_guarded_fixup",
        "hsa_emu_guarded_fixup:",
        "    ret",
        ".popsection",
    );

    extern "C" {
        fn hsa_emu_guarded_begin();
        fn hsa_emu_guarded_end();
        fn hsa_emu_guarded_fixup();
        fn hsa_emu_guarded_copy(dst: *mut u8, src: *const u8, len: usize) -> u64;
        fn hsa_emu_guarded_cas32(ptr: *mut u32, expected: u32, new: u32, old: *mut u32) -> u64;
        fn hsa_emu_guarded_cas64(ptr: *mut u64, expected: u64, new: u64, old: *mut u64) -> u64;
    }

    /// The handlers installed before ours, for SIGSEGV and SIGBUS.
    static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

    /// Our handler: a fault inside the routines resumes at the fixup with the faulting
    /// address in rax; any other goes to the previous handler.
    extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let begin = hsa_emu_guarded_begin as *const () as usize as u64;
        let end = hsa_emu_guarded_end as *const () as usize as u64;
        // SAFETY: the kernel passes a valid ucontext_t for an SA_SIGINFO handler; rip and rax
        // are plain fields of its saved registers, which the kernel restores on return.
        unsafe {
            let uc = &mut *ctx.cast::<libc::ucontext_t>();
            let rip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as u64;
            if (begin..end).contains(&rip) {
                let addr = (*info).si_addr() as u64;
                // Never 0: 0 means success to the caller.
                uc.uc_mcontext.gregs[libc::REG_RAX as usize] = addr.max(1) as i64;
                uc.uc_mcontext.gregs[libc::REG_RIP as usize] =
                    hsa_emu_guarded_fixup as *const () as usize as i64;
                return;
            }
        }
        chain(sig, info, ctx);
    }

    /// Passes a fault that is not ours to the handler installed before ours; with none (the
    /// default action), restores the default and returns, so that the faulting instruction
    /// faults again and the process stops as it would have.
    fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let Some(prev) = PREVIOUS.get() else {
            reset_default(sig);
            return;
        };
        let prev = if sig == libc::SIGBUS {
            &prev[1]
        } else {
            &prev[0]
        };
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            reset_default(sig);
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: a handler installed with SA_SIGINFO has this signature; we pass what the
            // kernel gave us.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            // SAFETY: a handler installed without SA_SIGINFO takes the signal number only.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }

    fn reset_default(sig: libc::c_int) {
        // SAFETY: plain sigaction call with a zeroed, default action.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }

    /// Installs the handler once per process (per copy of this crate in it).
    pub(crate) fn install() {
        PREVIOUS.get_or_init(|| {
            // SAFETY: sigaction with a valid action structure; the previous actions are kept
            // for chaining. SA_ONSTACK: a thread with an alternate stack (Rust's, for stack
            // overflows) takes the fault there; SA_NODEFER is not set, so a fault inside our
            // handler would stop the process instead of recursing.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_fault as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                let mut prev: [libc::sigaction; 2] = std::mem::zeroed();
                libc::sigaction(libc::SIGSEGV, &act, &mut prev[0]);
                libc::sigaction(libc::SIGBUS, &act, &mut prev[1]);
                prev
            }
        });
    }

    fn result(r: u64, fallback: u64) -> Result<(), UserFault> {
        if r == 0 {
            Ok(())
        } else {
            Err(UserFault {
                host_address: if r == 1 { fallback } else { r },
            })
        }
    }

    /// Copies `len` bytes from `src` to `dst` (`memmove` semantics are the caller's: the
    /// routine copies forward).
    ///
    /// # Safety
    /// Each range is memory of this process that is either mapped with the access's
    /// permission or not mapped at all (no Rust object lives there); they do not overlap with
    /// `dst` above `src`.
    pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), UserFault> {
        if len == 0 {
            return Ok(());
        }
        install();
        // SAFETY: the caller's contract; a fault in the routine is turned into its result.
        let r = unsafe { hsa_emu_guarded_copy(dst, src, len) };
        result(r, src as u64)
    }

    /// `lock cmpxchg` of the 4-aligned u32 at `ptr`: the value it held.
    ///
    /// # Safety
    /// `ptr` is 4-aligned memory of this process that is mapped writable or not mapped.
    pub(crate) unsafe fn cas32(ptr: *mut u32, expected: u32, new: u32) -> Result<u32, UserFault> {
        install();
        let mut old = 0u32;
        // SAFETY: the caller's contract; `old` is our own stack slot.
        let r = unsafe { hsa_emu_guarded_cas32(ptr, expected, new, &mut old) };
        result(r, ptr as u64).map(|()| old)
    }

    /// `lock cmpxchg` of the 8-aligned u64 at `ptr`: the value it held.
    ///
    /// # Safety
    /// `ptr` is 8-aligned memory of this process that is mapped writable or not mapped.
    pub(crate) unsafe fn cas64(ptr: *mut u64, expected: u64, new: u64) -> Result<u64, UserFault> {
        install();
        let mut old = 0u64;
        // SAFETY: the caller's contract; `old` is our own stack slot.
        let r = unsafe { hsa_emu_guarded_cas64(ptr, expected, new, &mut old) };
        result(r, ptr as u64).map(|()| old)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::UserFault;
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    /// # Safety
    /// As the x86_64 form, and both ranges mapped (an unmapped page faults here).
    pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), UserFault> {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy(src, dst, len) };
        Ok(())
    }

    /// # Safety
    /// As the x86_64 form, and mapped.
    pub(crate) unsafe fn cas32(ptr: *mut u32, expected: u32, new: u32) -> Result<u32, UserFault> {
        // SAFETY: the caller's contract: aligned, mapped, accessed atomically.
        let a = unsafe { &*(ptr as *const AtomicU32) };
        Ok(
            a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                .unwrap_or_else(|v| v),
        )
    }

    /// # Safety
    /// As the x86_64 form, and mapped.
    pub(crate) unsafe fn cas64(ptr: *mut u64, expected: u64, new: u64) -> Result<u64, UserFault> {
        // SAFETY: the caller's contract: aligned, mapped, accessed atomically.
        let a = unsafe { &*(ptr as *const AtomicU64) };
        Ok(
            a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                .unwrap_or_else(|v| v),
        )
    }
}

pub(crate) use imp::{cas32, cas64, copy};

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// A page mapped then made inaccessible: the guarded routines report its address where a plain
    /// access would stop the process; on a mapped page they copy and compare-and-swap.
    #[test]
    fn inaccessible_memory_faults_instead_of_crashing() {
        let len = 4096usize;
        // SAFETY: a fresh anonymous mapping of our own, made PROT_NONE below before the
        // accesses that test the fault and unmapped at the end; nothing else uses it.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap()
        .cast::<u8>();
        let mut buf = [7u8; 16];
        // SAFETY: `p` is mapped read-write; `buf` is ours.
        unsafe {
            copy(p.add(100), buf.as_ptr(), 16).unwrap();
            copy(buf.as_mut_ptr(), p.add(96), 8).unwrap();
            assert_eq!(buf[..8], [0, 0, 0, 0, 7, 7, 7, 7]);
            assert_eq!(
                cas32(p.add(100).cast(), 0x0707_0707, 5).unwrap(),
                0x0707_0707
            );
            assert_eq!(
                cas64(p.add(104).cast(), 0, 9).unwrap(),
                0x0707_0707_0707_0707
            );
            copy(buf.as_mut_ptr(), p.add(100), 8).unwrap();
        }
        assert_eq!(buf[..8], [5, 0, 0, 0, 7, 7, 7, 7]);
        // The page is made inaccessible rather than unmapped: an unmapped range could be
        // handed to another test thread's mmap before the accesses below (CI saw that once),
        // while a PROT_NONE page keeps its addresses ours and faults on every access.
        // SAFETY: our mapping; nothing refers to it.
        unsafe { rustix::mm::mprotect(p.cast(), len, rustix::mm::MprotectFlags::empty()) }.unwrap();
        let at = p as u64;
        // SAFETY: `p` is now inaccessible (no Rust object there): the routines report the fault.
        unsafe {
            assert_eq!(
                copy(buf.as_mut_ptr(), p.add(8), 8),
                Err(UserFault {
                    host_address: at + 8
                })
            );
            assert_eq!(
                copy(p.add(16), buf.as_ptr(), 4),
                Err(UserFault {
                    host_address: at + 16
                })
            );
            assert_eq!(
                copy(buf.as_mut_ptr(), p.add(48), 16),
                Err(UserFault {
                    host_address: at + 48
                })
            );
            assert_eq!(
                copy(buf.as_mut_ptr(), p.add(1), 3),
                Err(UserFault {
                    host_address: at + 1
                })
            );
            assert_eq!(
                cas32(p.add(32).cast(), 0, 1),
                Err(UserFault {
                    host_address: at + 32
                })
            );
            assert_eq!(
                cas64(p.add(64).cast(), 0, 1),
                Err(UserFault {
                    host_address: at + 64
                })
            );
        }
        // SAFETY: our mapping; nothing refers to it.
        unsafe { rustix::mm::munmap(p.cast(), len) }.unwrap();
    }
}
