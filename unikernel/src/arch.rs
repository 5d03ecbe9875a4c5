//! x86_64 instructions the unikernel needs: port I/O, MSRs, the time-stamp counter, `cpuid`,
//! interrupt masking and `hlt`. Thin wrappers, one instruction each.
//!
//! Ref: Intel SDM Vol. 2 (instruction set), Vol. 3A §11 (APIC), §17.17 (TSC).
#![allow(unsafe_code)]

use core::arch::asm;

/// Writes byte `value` to I/O port `port`.
pub fn outb(port: u16, value: u8) {
    // SAFETY: port writes have no memory effect; every port the unikernel writes (COM1, PCI
    // configuration, PIT, isa-debug-exit) is one the machine model defines.
    unsafe {
        asm!("out dx, al", in("dx") port, in("al") value, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a byte from I/O port `port`.
pub fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: as in `outb`: a port read has no memory effect.
    unsafe {
        asm!("in al, dx", out("al") v, in("dx") port, options(nomem, nostack, preserves_flags))
    }
    v
}

/// Writes dword `value` to I/O port `port`.
pub fn outl(port: u16, value: u32) {
    // SAFETY: as in `outb`.
    unsafe {
        asm!("out dx, eax", in("dx") port, in("eax") value, options(nomem, nostack, preserves_flags))
    }
}

/// Reads a dword from I/O port `port`.
pub fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: as in `outb`.
    unsafe {
        asm!("in eax, dx", out("eax") v, in("dx") port, options(nomem, nostack, preserves_flags))
    }
    v
}

/// Reads model-specific register `msr`.
pub fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: callers read only architectural MSRs that exist on the CPU (IA32_APIC_BASE,
    // x2APIC registers once x2APIC is enabled); no memory effect.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    }
    u64::from(hi) << 32 | u64::from(lo)
}

/// Writes model-specific register `msr`.
pub fn wrmsr(msr: u32, value: u64) {
    // SAFETY: callers write only the APIC MSRs (IA32_APIC_BASE, x2APIC registers), which
    // change interrupt delivery, not memory.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nomem, nostack, preserves_flags))
    }
}

/// The time-stamp counter.
pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: `rdtsc` only reads the counter.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) }
    u64::from(hi) << 32 | u64::from(lo)
}

/// `cpuid` leaf `leaf`, sub-leaf 0: (eax, ebx, ecx, edx).
pub fn cpuid(leaf: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, 0);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Masks maskable interrupts (`cli`).
pub fn disable_interrupts() {
    // SAFETY: masking interrupts has no memory effect; a compiler barrier keeps memory
    // accesses from moving across it (no `nomem`).
    unsafe { asm!("cli", options(nostack, preserves_flags)) }
}

/// Unmasks maskable interrupts (`sti`).
pub fn enable_interrupts() {
    // SAFETY: the IDT and the APIC are set up before the first call (main's order).
    unsafe { asm!("sti", options(nostack, preserves_flags)) }
}

/// Unmasks interrupts and halts in one step (`sti; hlt`): `sti`'s one-instruction interrupt
/// shadow means an interrupt pending at `sti` is taken after `hlt` began, so it ends the halt
/// instead of being lost before it. Returns with interrupts enabled.
pub fn enable_interrupts_and_halt() {
    // SAFETY: as in `enable_interrupts`; `hlt` waits for the next interrupt.
    unsafe { asm!("sti", "hlt", options(nostack, preserves_flags)) }
}

/// Halts forever with interrupts masked.
pub fn halt_forever() -> ! {
    loop {
        // SAFETY: masks interrupts and halts; nothing follows.
        unsafe { asm!("cli", "hlt", options(nomem, nostack)) }
    }
}
