//! The interrupt descriptor table and the interrupt entry stubs: each stub pushes a dummy
//! error code where the CPU pushes none, then its vector, saves the caller-saved registers
//! and calls [`isr_dispatch`], which hands the vector to [`crate::interrupt`]. The target
//! has no SSE (soft-float), so the general registers are all the state there is.
//!
//! Ref: Intel SDM Vol. 3A §6.14 (64-bit IDT gates, the interrupt stack frame), §6.15
//! (which exceptions push an error code).
#![allow(unsafe_code)]

use core::arch::global_asm;

/// The registers a stub saved and the CPU's interrupt frame, lowest address first.
#[repr(C)]
#[derive(Debug)]
pub struct Frame {
    /// Saved r11.
    pub r11: u64,
    /// Saved r10.
    pub r10: u64,
    /// Saved r9.
    pub r9: u64,
    /// Saved r8.
    pub r8: u64,
    /// Saved rdi.
    pub rdi: u64,
    /// Saved rsi.
    pub rsi: u64,
    /// Saved rdx.
    pub rdx: u64,
    /// Saved rcx.
    pub rcx: u64,
    /// Saved rax.
    pub rax: u64,
    /// The vector.
    pub vector: u64,
    /// The error code (0 where the CPU pushes none).
    pub error: u64,
    /// Interrupted rip.
    pub rip: u64,
    /// Interrupted cs.
    pub cs: u64,
    /// Interrupted rflags.
    pub rflags: u64,
    /// Interrupted rsp.
    pub rsp: u64,
    /// Interrupted ss.
    pub ss: u64,
}

// The vectors with stubs: the 32 exceptions, the three MSI-X vectors, the APIC timer and the
// spurious vector. Keep in step with `VECTORS`.
global_asm!(
    r#"
    .section .text.isr, "ax"
    .irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,48,49,50,64,255
isr_stub_\v:
    .if (\v == 8) || ((\v >= 10) && (\v <= 14)) || (\v == 17) || (\v == 21) || (\v == 29) || (\v == 30)
    .else
    push $0
    .endif
    push $\v
    jmp isr_common
    .endr

isr_common:
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    mov %rsp, %rdi
    cld
    call {dispatch}
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    add $16, %rsp
    iretq

    .section .rodata.isr, "a"
    .p2align 3
    .global isr_stub_table
isr_stub_table:
    .irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,48,49,50,64,255
    .quad isr_stub_\v
    .endr
    "#,
    dispatch = sym isr_dispatch,
    options(att_syntax)
);

/// The vectors of `isr_stub_table`, in its order.
const VECTORS: [u8; 37] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 48, 49, 50, 64, 255,
];

extern "C" {
    static isr_stub_table: [u64; 37];
}

/// One 16-byte 64-bit interrupt gate.
#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

const EMPTY: Gate = Gate {
    offset_low: 0,
    selector: 0,
    ist: 0,
    type_attr: 0,
    offset_mid: 0,
    offset_high: 0,
    reserved: 0,
};

#[repr(C, align(16))]
struct Idt([Gate; 256]);

static IDT: spin::Mutex<Idt> = spin::Mutex::new(Idt([EMPTY; 256]));

#[repr(C, packed)]
struct Pointer {
    limit: u16,
    base: u64,
}

extern "C" fn isr_dispatch(frame: &Frame) {
    crate::interrupt(frame);
}

/// Fills the IDT (interrupt gates, code selector 0x08, DPL 0) and loads it.
pub fn init() {
    let mut idt = IDT.lock();
    for (i, &v) in VECTORS.iter().enumerate() {
        // SAFETY: `isr_stub_table` is the read-only table of stub addresses defined above,
        // with exactly VECTORS.len() entries.
        let stub = unsafe { isr_stub_table[i] };
        idt.0[usize::from(v)] = Gate {
            offset_low: stub as u16,
            selector: 0x08,
            ist: 0,
            type_attr: 0x8e,
            offset_mid: (stub >> 16) as u16,
            offset_high: (stub >> 32) as u32,
            reserved: 0,
        };
    }
    let ptr = Pointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: idt.0.as_ptr() as u64,
    };
    // SAFETY: the IDT is a static (never moves, lives forever) whose gates point at the stubs
    // above; `lidt` only reads the 10-byte pointer.
    unsafe {
        core::arch::asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack, preserves_flags))
    };
}
