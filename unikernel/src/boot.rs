//! The PVH entry: the ELF note QEMU looks for, the 32-bit entry it jumps to, identity paging
//! of the first 4 GiB, the GDT, and the switch to 64-bit mode, which calls
//! [`crate::kernel_main`] with the physical address of the `hvm_start_info`.
//!
//! QEMU (`-kernel`, x86) boots an ELF carrying a `XEN_ELFNOTE_PHYS32_ENTRY` note (type 18,
//! name "Xen") through the PVH boot protocol: 32-bit protected mode, paging off, flat 4 GiB
//! code and data segments, interrupts masked, `ebx` = the start info. Ref: Xen
//! `docs/misc/pvh.pandoc`, `public/arch-x86/hvm/start_info.h`, `public/elfnote.h`; QEMU
//! `hw/i386/x86-common.c` (`read_pvh_start_addr`).
//!
//! Paging: 2 MiB pages over 0..4 GiB, identity (virtual = physical = what the device calls a
//! GPU address: HSA's system memory is identity-mapped for the GPU); the last GiB
//! (PCI MMIO hole, local APIC) is uncached (PCD|PWT).
#![allow(unsafe_code)]

use core::arch::global_asm;

/// Bytes of the boot stack (hsa-core's errors carry their message inline: keep room).
pub const STACK_BYTES: usize = 512 * 1024;

/// `hvm_start_info.magic` ("xEn3" with bit 7 of 'x' set).
pub const START_INFO_MAGIC: u32 = 0x336e_c578;

/// The start of `hvm_start_info` (version 1) that the unikernel reads.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StartInfo {
    /// [`START_INFO_MAGIC`].
    pub magic: u32,
    /// Structure version (1 has the memory map).
    pub version: u32,
    /// `SIF_*` flags.
    pub flags: u32,
    /// Modules passed.
    pub nr_modules: u32,
    /// Physical address of the module list.
    pub modlist_paddr: u64,
    /// Physical address of the command line (NUL-terminated), 0 if none.
    pub cmdline_paddr: u64,
    /// Physical address of the ACPI RSDP.
    pub rsdp_paddr: u64,
    /// Physical address of the memory map (`hvm_memmap_table_entry`s); version 1.
    pub memmap_paddr: u64,
    /// Entries in the memory map; version 1.
    pub memmap_entries: u32,
    /// Reserved.
    pub reserved: u32,
}

/// One `hvm_memmap_table_entry`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemmapEntry {
    /// Physical address of the range.
    pub addr: u64,
    /// Size of the range, bytes.
    pub size: u64,
    /// E820 type (1 = RAM).
    pub kind: u32,
    /// Reserved.
    pub reserved: u32,
}

/// E820 type of usable RAM.
pub const E820_RAM: u32 = 1;

global_asm!(
    r#"
    .section .note.Xen, "a", @note
    .p2align 2
    .long 4                 /* namesz: "Xen\0" */
    .long 8                 /* descsz */
    .long 18                /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .p2align 2
    .quad pvh_start32       /* read as a 64-bit value by QEMU */

    .section .bss.boot, "aw", @nobits
    .p2align 12
boot_pml4:  .skip 4096
boot_pdpt:  .skip 4096
boot_pd:    .skip 4096 * 4
boot_stack: .skip {stack}
boot_stack_top:

    .section .rodata.boot, "a"
    .p2align 3
boot_gdt:
    .quad 0                         /* null */
    .quad 0x00af9a000000ffff        /* 0x08: 64-bit code, DPL 0 */
    .quad 0x00cf92000000ffff        /* 0x10: data, DPL 0 */
boot_gdt_end:
boot_gdt_ptr:
    .word boot_gdt_end - boot_gdt - 1
    .quad boot_gdt

    .section .text.boot, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov %ebx, %esi                  /* hvm_start_info, kept for kernel_main */
    mov $boot_stack_top, %esp

    /* PML4[0] -> PDPT; PDPT[0..4] -> the four page directories. */
    mov $boot_pdpt, %eax
    or $3, %eax
    mov %eax, boot_pml4
    movl $0, boot_pml4 + 4
    mov $boot_pdpt, %edi
    mov $boot_pd, %eax
    or $3, %eax
    mov $4, %ecx
1:  mov %eax, (%edi)
    movl $0, 4(%edi)
    add $4096, %eax
    add $8, %edi
    loop 1b

    /* 2048 2 MiB pages: present, writable, PS; uncached from 3 GiB (PCI hole, APIC). */
    mov $boot_pd, %edi
    xor %ecx, %ecx
2:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax
    cmp $1536, %ecx
    jb 3f
    or $0x18, %eax
3:  mov %eax, (%edi)
    movl $0, 4(%edi)
    add $8, %edi
    inc %ecx
    cmp $2048, %ecx
    jb 2b

    mov %cr4, %eax
    or $0x20, %eax                  /* PAE */
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xc0000080, %ecx           /* IA32_EFER */
    rdmsr
    or $0x100, %eax                 /* LME */
    wrmsr
    mov %cr0, %eax
    or $0x80000001, %eax            /* PG | PE */
    mov %eax, %cr0
    lgdt boot_gdt_ptr
    ljmp $0x08, $long_mode_entry

    .code64
long_mode_entry:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov $boot_stack_top, %rsp
    mov %esi, %edi                  /* zero-extends: the start info's address */
    call {main}
    ud2
    "#,
    stack = const STACK_BYTES,
    main = sym crate::kernel_main,
    options(att_syntax)
);

/// The RAM ranges of the PVH memory map.
///
/// # Safety
/// `start_info` is the address QEMU passed in `ebx`: a valid `hvm_start_info` and memory map
/// in identity-mapped RAM that nothing writes.
pub unsafe fn ram_ranges(start_info: u64) -> Result<heapless::Vec<(u64, u64), 16>, &'static str> {
    // SAFETY: the caller's contract: a valid hvm_start_info at this identity-mapped address.
    let info = unsafe { core::ptr::read_volatile(start_info as *const StartInfo) };
    if info.magic != START_INFO_MAGIC {
        return Err("hvm_start_info has a bad magic");
    }
    if info.version < 1 || info.memmap_paddr == 0 {
        return Err("hvm_start_info has no memory map (version < 1)");
    }
    let mut out = heapless::Vec::new();
    for i in 0..info.memmap_entries as u64 {
        let at = info.memmap_paddr + i * core::mem::size_of::<MemmapEntry>() as u64;
        // SAFETY: entry i of the memory map the start info describes (caller's contract).
        let e = unsafe { core::ptr::read_volatile(at as *const MemmapEntry) };
        if e.kind == E820_RAM && out.push((e.addr, e.size)).is_err() {
            return Err("more than 16 RAM ranges in the memory map");
        }
    }
    Ok(out)
}
