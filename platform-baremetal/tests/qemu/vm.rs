//! The device's GPUVM: a VMID's page tables, walked as gfx9's UTCL2 walks them, for every
//! access a queue of that VMID makes (its ring and `amd_queue_t`, the signals and event
//! mailboxes the packet processor touches, and each load, store and atomic of its kernels).
//!
//! - A context is what the firmware programs per VMID (`SET_VM`: the page-table base that
//!   `VM_CONTEXT<n>_PAGE_TABLE_BASE_ADDR_LO32/HI32` hold, and the PASID of `IH_VMID_<n>_LUT`).
//!   The base is a PDE: `VALID`, the PDB2's address in bits 12..48, and `SYSTEM` (this device
//!   has no VRAM: every table and page is guest RAM).
//! - The walk: PDB2, PDB1, PDB0, PTB, indexed by address bits 39..48, 30..39, 21..30,
//!   12..21 (`block_size` 9). Each directory entry must be `VALID` and `SYSTEM`; a PDB0 entry
//!   names a PTB when `TF` is set, or maps a 2 MiB page itself when `PDE_PTE` is. The PTE
//!   must be `VALID` and `SYSTEM`, `READABLE` for a read and `WRITEABLE` for a write or an
//!   atomic.
//! - Translations are kept, per page, until the firmware's `INVALIDATE_TLBS` for the
//!   context's PASID (as the UTCL1/UTCL2 TLBs keep them): a page unmapped without that flush
//!   is still reached, as on a GPU.
//! - A failed walk is a [`VmFault`]: the access fails with `Status::MemoryFault` and the fault
//!   is kept for the device to write its `UTCL2` IH entry ([`VmFault::entry`]).
//!
//! Ref: linux `amdgpu/amdgpu_vm.h` (`AMDGPU_PTE_*`, `AMDGPU_PDE_PTE`), `gmc_v9_0.c`
//! (`gmc_v9_0_get_vm_pde`, `gmc_v9_0_process_interrupt`), `amdkfd/kfd_int_process_v9.c`
//! (`event_interrupt_wq_v9`: the page number in `src_data[0]` and `src_data[1][3:0]`, the
//! protection bits in `ring_id`).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hsa_baremetal::gpuvm::PteFlags;
use hsa_baremetal::ih::IhEntry;
use hsa_baremetal::irq::CLIENT_UTCL2;
use hsa_core::{error, Status};
use hsa_gfx9::exec::DeviceMemory;

/// The memory behind the page tables: what a device reaches at a physical (guest-physical,
/// bus) address. The tables themselves and every page they name are read through it.
pub trait PhysMemory {
    /// The host address of `len` bytes at physical `addr`, when all of them are memory.
    fn at(&self, addr: u64, len: u64) -> Option<*mut u8>;

    /// The aligned 64-bit word at physical `addr`, as an atomic.
    fn u64(&self, addr: u64) -> Option<&AtomicU64> {
        let p = self.at(addr, 8).filter(|p| *p as usize % 8 == 0)?;
        // SAFETY: 8 bytes of the memory (checked), 8-aligned; a device's accesses to it are
        // atomic or byte copies, as DMA is.
        Some(unsafe { &*(p as *const AtomicU64) })
    }
}

/// `UTCL2_1_0__SRCID__FAULT`: the source id of a GFX-hub page fault.
pub const SOURCE_UTCL2_FAULT: u8 = 0;
/// The address bits of an entry (12..48).
const ADDRESS_MASK: u64 = 0x0000_FFFF_FFFF_F000;
/// Bytes of a page.
const PAGE: u64 = 4096;
/// The index shifts of PDB2, PDB1, PDB0 and the PTB.
const LEVELS: [(u32, &str); 4] = [(39, "PDB2"), (30, "PDB1"), (21, "PDB0"), (12, "PTB")];

/// One VMID's page tables as the firmware set them, and the translations its TLB keeps.
#[derive(Debug)]
pub struct VmContext {
    /// The PDB2's guest-physical address.
    root: u64,
    /// The context's PASID (`IH_VMID_<n>_LUT`).
    pub pasid: u16,
    /// The context's `SH_MEM_BASES`.
    pub sh_mem_bases: u32,
    /// Page number → the guest-physical page and whether it may be written.
    tlb: RefCell<HashMap<u64, (u64, bool)>>,
}

/// A walk that failed: the access's address, what it was, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmFault {
    /// The faulting address (not page-aligned: the access's first byte in the page).
    pub address: u64,
    /// A store or an atomic.
    pub write: bool,
    /// The page had no valid translation (a directory entry or the PTE not `VALID`); false: a
    /// protection fault (the PTE lacks `READABLE`/`WRITEABLE`, or names memory that is not
    /// system memory).
    pub not_present: bool,
    /// What the walk found, for the device's log.
    pub why: String,
}

impl VmFault {
    /// The `UTCL2` IH entry the GFX hub writes for this fault, for context `vmid` and
    /// `pasid`: `src_data[0]` the page number's low 32 bits, `src_data[1]` bits 3..0 its
    /// bits 32..35 and bit 5 "write", `ring_id` 0x08 for a page not present or 0x20 for a
    /// write the page does not allow (0x10 for such a read).
    pub fn entry(&self, vmid: u8, pasid: u16) -> IhEntry {
        let page = self.address >> 12;
        let ring_id = match (self.not_present, self.write) {
            (true, _) => 0x08,
            (false, true) => 0x20,
            (false, false) => 0x10,
        };
        IhEntry {
            client_id: CLIENT_UTCL2,
            source_id: SOURCE_UTCL2_FAULT,
            ring_id,
            vmid,
            pasid,
            src_data: [
                page as u32,
                ((page >> 32) & 0xf) as u32 | if self.write { 0x20 } else { 0 },
                0,
                0,
            ],
            ..IhEntry::default()
        }
    }
}

impl VmContext {
    /// The context whose `VM_CONTEXT<n>_PAGE_TABLE_BASE_ADDR` is `base`, of `pasid`, with
    /// apertures `sh_mem_bases`.
    ///
    /// # Errors
    /// A base that is not a `VALID`, `SYSTEM` PDE naming a page of `ram`.
    pub fn new(
        ram: &dyn PhysMemory,
        base: u64,
        pasid: u16,
        sh_mem_bases: u32,
    ) -> Result<VmContext, String> {
        let flags = PteFlags::VALID | PteFlags::SYSTEM;
        let root = base & ADDRESS_MASK;
        if base & flags.bits() != flags.bits() || ram.at(root, PAGE).is_none() {
            return Err(format!(
                "page-table base {base:#x} is not a VALID, SYSTEM PDE naming a page of guest RAM"
            ));
        }
        Ok(VmContext {
            root,
            pasid,
            sh_mem_bases,
            tlb: RefCell::new(HashMap::new()),
        })
    }

    /// Drops every kept translation (`INVALIDATE_TLBS`).
    pub fn invalidate(&self) {
        self.tlb.borrow_mut().clear();
    }

    /// The guest-physical address of `va` for a read or (`write`) a write.
    ///
    /// # Errors
    /// The [`VmFault`] of a walk that found no page or a page that does not allow the access.
    pub fn translate(&self, ram: &dyn PhysMemory, va: u64, write: bool) -> Result<u64, VmFault> {
        let fault = |not_present: bool, why: String| VmFault {
            address: va,
            write,
            not_present,
            why,
        };
        if va >> 48 != 0 {
            return Err(fault(
                true,
                format!("{va:#x} is past the 48-bit address space"),
            ));
        }
        let vpn = va >> 12;
        if let Some(&(phys, writable)) = self.tlb.borrow().get(&vpn) {
            if write && !writable {
                return Err(fault(false, format!("page {va:#x} is not WRITEABLE")));
            }
            return Ok(phys | (va & (PAGE - 1)));
        }
        let (page_base, span, pte) = self.walk(ram, va).map_err(|(p, why)| fault(p, why))?;
        let need = PteFlags::VALID | PteFlags::SYSTEM;
        if pte & need.bits() != need.bits() {
            return Err(fault(
                pte & PteFlags::VALID.bits() == 0,
                format!("PTE {pte:#x} of {va:#x} is not VALID and SYSTEM"),
            ));
        }
        if pte & PteFlags::READABLE.bits() == 0 {
            return Err(fault(
                false,
                format!("PTE {pte:#x} of {va:#x} is not READABLE"),
            ));
        }
        let writable = pte & PteFlags::WRITEABLE.bits() != 0;
        if write && !writable {
            return Err(fault(
                false,
                format!("PTE {pte:#x} of {va:#x} is not WRITEABLE"),
            ));
        }
        let phys = page_base + (va & (span - 1) & !(PAGE - 1));
        self.tlb.borrow_mut().insert(vpn, (phys, writable));
        Ok(phys | (va & (PAGE - 1)))
    }

    /// Walks the four levels for `va`: the page's base, its size and its PTE (a PDB0 entry
    /// for a 2 MiB page), or (not present, why).
    fn walk(&self, ram: &dyn PhysMemory, va: u64) -> Result<(u64, u64, u64), (bool, String)> {
        let mut table = self.root;
        for (level, (shift, name)) in LEVELS.into_iter().enumerate() {
            let at = table + 8 * ((va >> shift) & 511);
            let Some(word) = ram.u64(at) else {
                return Err((
                    false,
                    format!("{name} entry of {va:#x} at {at:#x} is outside guest RAM"),
                ));
            };
            let entry = u64::from_le(word.load(Ordering::Acquire));
            if level == LEVELS.len() - 1 {
                return Ok((entry & ADDRESS_MASK, PAGE, entry));
            }
            if entry & PteFlags::VALID.bits() == 0 {
                return Err((true, format!("{name} entry of {va:#x} is not VALID")));
            }
            if entry & PteFlags::SYSTEM.bits() == 0 {
                return Err((
                    false,
                    format!("{name} entry {entry:#x} of {va:#x} names VRAM (no SYSTEM bit)"),
                ));
            }
            let tf = entry & PteFlags::TF.bits() != 0;
            let huge = entry & PteFlags::PDE_PTE.bits() != 0;
            match (level, tf, huge) {
                (2, false, true) => return Ok((entry & !0x1F_FFFF & ADDRESS_MASK, 2 << 20, entry)),
                (2, true, false) | (0 | 1, false, false) => table = entry & ADDRESS_MASK,
                _ => {
                    return Err((
                        false,
                        format!(
                            "{name} entry {entry:#x} of {va:#x}: TF {tf} with PDE_PTE {huge} \
                             (a PDB0 entry names a PTB with TF or a 2 MiB page with PDE_PTE; \
                             PDB2/PDB1 entries neither)"
                        ),
                    ))
                }
            }
        }
        unreachable!("the PTB level returns")
    }

    /// The host address of `len` bytes at `va` for accesses of kind `write`, when they map to
    /// consecutive guest-physical pages (a ring, a signal).
    ///
    /// # Errors
    /// The first page's fault, or a [`VmFault`] naming a range that is not physically
    /// contiguous.
    pub fn host_range(
        &self,
        ram: &dyn PhysMemory,
        va: u64,
        len: u64,
        write: bool,
    ) -> Result<*mut u8, VmFault> {
        let first = self.translate(ram, va, write)?;
        let mut page = va & !(PAGE - 1);
        while page + PAGE < va + len {
            page += PAGE;
            let p = self.translate(ram, page, write)?;
            if p != first + (page - va) {
                return Err(VmFault {
                    address: page,
                    write,
                    not_present: false,
                    why: format!(
                        "{len} bytes at {va:#x} are not physically contiguous (this device \
                         reaches rings and signals through one host mapping)"
                    ),
                });
            }
        }
        ram.at(first, len).ok_or_else(|| VmFault {
            address: va,
            write,
            not_present: false,
            why: format!("{va:#x} translates to {first:#x} (+{len}), outside guest RAM"),
        })
    }
}

/// Memory as a queue of one VMID sees it: through its context's page tables, or
/// guest-physical when the queue runs under VMID 0 (no context). The first fault is kept in
/// [`fault`](GpuView::fault).
pub struct GpuView<'a> {
    /// The physical memory.
    pub ram: &'a dyn PhysMemory,
    /// The queue's context.
    pub vm: Option<&'a VmContext>,
    /// The first walk that failed.
    pub fault: RefCell<Option<VmFault>>,
}

impl<'a> GpuView<'a> {
    /// A view of `ram` through `vm`.
    pub fn new(ram: &'a dyn PhysMemory, vm: Option<&'a VmContext>) -> GpuView<'a> {
        GpuView {
            ram,
            vm,
            fault: RefCell::new(None),
        }
    }

    /// Applies `f` to each piece of `[addr, addr + len)` that stays in one page, with its
    /// guest-physical address and its offset in the access.
    fn pieces(
        &self,
        addr: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(u64, usize, usize) -> hsa_core::Result<()>,
    ) -> hsa_core::Result<()> {
        let Some(vm) = self.vm else {
            return f(addr, 0, len);
        };
        let mut done = 0usize;
        while done < len {
            let a = addr.wrapping_add(done as u64);
            let n = (len - done).min((PAGE - (a & (PAGE - 1))) as usize);
            let phys = vm.translate(self.ram, a, write).map_err(|e| self.keep(e))?;
            f(phys, done, n)?;
            done += n;
        }
        Ok(())
    }

    /// Keeps `fault` (the first) and makes the access's error of it.
    fn keep(&self, fault: VmFault) -> hsa_core::Error {
        let e = error!(
            Status::MemoryFault,
            "memory fault: {} at {:#x}: {}",
            if fault.write { "write" } else { "read" },
            fault.address,
            fault.why
        );
        self.fault.borrow_mut().get_or_insert(fault);
        e
    }
}

impl GpuView<'_> {
    /// `len` bytes at physical `phys`, or the memory fault naming the access.
    fn phys(&self, phys: u64, len: usize, what: &str) -> hsa_core::Result<*mut u8> {
        self.ram.at(phys, len as u64).ok_or_else(|| {
            error!(
                Status::MemoryFault,
                "memory fault: {what} at physical {phys:#x} ({len} bytes) outside memory"
            )
        })
    }
}

impl DeviceMemory for GpuView<'_> {
    /// The host's `CLOCK_MONOTONIC` in nanoseconds (the device's clock).
    fn clock_counter(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> hsa_core::Result<()> {
        self.pieces(addr, buf.len(), false, |phys, at, n| {
            let p = self.phys(phys, n, "read")?;
            // SAFETY: `n` bytes of the memory (checked); `buf` is our own buffer.
            unsafe { std::ptr::copy(p, buf[at..].as_mut_ptr(), n) };
            Ok(())
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> hsa_core::Result<()> {
        self.pieces(addr, data.len(), true, |phys, at, n| {
            let p = self.phys(phys, n, "write")?;
            // SAFETY: as in `read`; the memory is writable.
            unsafe { std::ptr::copy(data[at..].as_ptr(), p, n) };
            Ok(())
        })
    }

    fn atomic_rmw_u32(&self, addr: u64, op: &mut dyn FnMut(u32) -> u32) -> hsa_core::Result<u32> {
        let phys = match self.vm {
            Some(vm) if addr % 4 == 0 => vm
                .translate(self.ram, addr, true)
                .map_err(|e| self.keep(e))?,
            _ => addr,
        };
        let p = self.phys(phys, 4, "atomic")?.cast::<AtomicU32>();
        if p as usize % 4 != 0 {
            hsa_core::bail!(
                Status::MemoryFault,
                "memory fault: atomic at {addr:#x} is not 4-aligned"
            );
        }
        // SAFETY: 4 aligned bytes of the memory (checked), accessed atomically.
        Ok(rmw_u32(unsafe { &*p }, op))
    }
}

/// Applies `op` to the little-endian word `w` atomically (a compare-exchange loop), as a
/// device's atomic does; the old value.
pub fn rmw_u32(w: &AtomicU32, op: &mut dyn FnMut(u32) -> u32) -> u32 {
    let mut old = w.load(Ordering::SeqCst);
    loop {
        let new = op(u32::from_le(old)).to_le();
        match w.compare_exchange_weak(old, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return u32::from_le(old),
            Err(now) => old = now,
        }
    }
}
