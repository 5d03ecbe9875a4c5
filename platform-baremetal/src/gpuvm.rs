//! gfx9 GPU page tables: the four-level tree (PDB2, PDB1, PDB0, PTB) a GPUVM context
//! translates 48-bit GPU virtual addresses through, built as amdgpu builds a process's
//! (`amdgpu_vm_pt.c`) for a [`Host`](crate::Host) whose `map_memory` must make memory
//! reachable by GPU address.
//!
//! Each level is one 4 KiB table of 512 64-bit entries, indexed by 9 bits of the address:
//! PDB2 by bits 39..48, PDB1 by 30..39, PDB0 by 21..30, the PTB by 12..21 (amdgpu's
//! `block_size` 9 with `root_level` PDB2). A directory entry (PDE) holds the next table's
//! address (bits 6..48) with `VALID`, and `SYSTEM | SNOOPED` when the tables live in system
//! memory; a PDB0 entry also sets `TF` (translate further: its address is a PTB, not a 2 MiB
//! page), as `gmc_v9_0_get_vm_pde` does when `translate_further` is on (more than one level).
//! A page entry (PTE) holds the 4 KiB page's address (bits 12..48), the [`PteFlags`] and the
//! memory type in bits 57..59 ([`MType`]).
//!
//! [`GpuVm::root_pde`] is what a `MAP_PROCESS` packet's `vm_context_page_table_base_addr`
//! (or `VM_CONTEXT*_PAGE_TABLE_BASE_ADDR`) takes; [`crate::kiq::Kiq::invalidate_tlbs`] flushes
//! the TLBs after a change.
//!
//! Ref: linux `amdgpu/amdgpu_vm.h` (`AMDGPU_PTE_*`, `AMDGPU_PDE_*`,
//! `AMDGPU_PTE_MTYPE_VG10`), `amdgpu/gmc_v9_0.c` (`gmc_v9_0_get_vm_pde`,
//! `gmc_v9_0_get_vm_pte`), `amdgpu/amdgpu_vm_pt.c`.
#![allow(unsafe_code)] // the table memory is the host's, on its word (`TableMemory`)

use bitflags::bitflags;
use hsa_core::{Error, GpuVa, Status};

use crate::mmio::MmioRegion;

bitflags! {
    /// The flag bits of a gfx9 page table entry (`AMDGPU_PTE_*`, `AMDGPU_PDE_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PteFlags: u64 {
        /// `AMDGPU_PTE_VALID`.
        const VALID = 1 << 0;
        /// `AMDGPU_PTE_SYSTEM`: the address is system memory (over PCIe), not VRAM.
        const SYSTEM = 1 << 1;
        /// `AMDGPU_PTE_SNOOPED`: accesses snoop the CPU caches.
        const SNOOPED = 1 << 2;
        /// `AMDGPU_PTE_TMZ`: trusted memory.
        const TMZ = 1 << 3;
        /// `AMDGPU_PTE_EXECUTABLE`.
        const EXECUTABLE = 1 << 4;
        /// `AMDGPU_PTE_READABLE`.
        const READABLE = 1 << 5;
        /// `AMDGPU_PTE_WRITEABLE`.
        const WRITEABLE = 1 << 6;
        /// `AMDGPU_PTE_PRT`: a partially resident texture's page.
        const PRT = 1 << 51;
        /// `AMDGPU_PDE_PTE`: a PDE that maps a page itself.
        const PDE_PTE = 1 << 54;
        /// `AMDGPU_PTE_LOG`.
        const LOG = 1 << 55;
        /// `AMDGPU_PTE_TF`: translate further (a PDB0 entry naming a PTB).
        const TF = 1 << 56;
        // No `AMDGPU_PTE_NOALLOC` (bit 58): that is gfx10.3's; on gfx9, bits 57..59 are the
        // memory type ([`MType`]), which [`pte`] writes.
    }
}

/// The memory type of a page (`AMDGPU_PTE_MTYPE_VG10`, bits 57..59): how the GPU caches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MType {
    /// `MTYPE_NC`: non-coherent, cached (amdgpu's default).
    Nc = 0,
    /// `MTYPE_WC`: write-combined.
    Wc = 1,
    /// `MTYPE_CC`: cache-coherent.
    Cc = 2,
    /// `MTYPE_UC`: uncached.
    Uc = 3,
}

/// Entries per table.
pub const TABLE_ENTRIES: usize = 512;
/// Bytes of a table (and of a page).
pub const TABLE_BYTES: usize = 4096;
/// Bits of GPU virtual address the tree translates.
pub const VA_BITS: u32 = 48;
/// The address bits of an entry: 12..48 of a PTE, 6..48 of a PDE.
const PTE_ADDRESS_MASK: u64 = 0x0000_FFFF_FFFF_F000;
/// The shift of each level's index: PDB2, PDB1, PDB0, PTB.
const LEVEL_SHIFTS: [u32; 4] = [39, 30, 21, 12];

/// A page entry: `phys` (4 KiB aligned, below 2^48) with `flags` and memory type `mtype`.
/// The three parts occupy disjoint bits (address 12..48; flags 0..7 and 51..57; memory type
/// 57..59).
pub const fn pte(phys: u64, flags: PteFlags, mtype: MType) -> u64 {
    (phys & PTE_ADDRESS_MASK) | flags.bits() | (mtype as u64) << 57
}

/// One 4 KiB table page: where the GPU reads it and where the CPU writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TablePage {
    /// The address the GPU's page walker reads it at (a PDE's address).
    pub phys: u64,
    /// The CPU's address of the same page.
    pub virt: usize,
}

/// Where the page tables live: 4 KiB pages the host hands out.
///
/// # Safety
/// Every page [`alloc_table`](TableMemory::alloc_table) returns is 4 KiB aligned (both
/// addresses), zeroed, mapped read-write for the CPU at `virt` for as long as the
/// [`GpuVm`] lives, and used by nothing else; [`table_at`](TableMemory::table_at) maps the
/// `phys` of a page it returned to that page's `virt`.
pub unsafe trait TableMemory {
    /// A fresh zeroed table page.
    ///
    /// # Errors
    /// `Status::OutOfResources` when none is left.
    fn alloc_table(&mut self) -> Result<TablePage, Error>;

    /// The CPU address of the table page at `phys`, if this memory handed it out.
    fn table_at(&self, phys: u64) -> Option<usize>;
}

/// Table memory of one contiguous run of 4 KiB pages, handed out in order and never freed:
/// what a firmware usually sets aside for a GPUVM context's tables (a chunk of a carve-out,
/// or a static array of pages). Page `i` is at `phys + 4096 * i` for the GPU's page walker
/// and at `virt + 4096 * i` for the CPU.
#[derive(Debug)]
pub struct TableRegion {
    phys: u64,
    virt: usize,
    pages: usize,
    next: usize,
}

impl TableRegion {
    /// The `pages` pages from `phys` (GPU) / `virt` (CPU).
    ///
    /// # Safety
    /// The `4096 * pages` bytes at `virt` are zeroed, mapped read-write for the CPU for as
    /// long as the region (and a [`GpuVm`] over it) lives, used by nothing else meanwhile,
    /// and the GPU reads the same bytes at `phys`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the address that is not 4 KiB aligned, or the region
    /// when it passes the end of either address space.
    pub unsafe fn new(phys: u64, virt: usize, pages: usize) -> Result<TableRegion, Error> {
        let bad = Status::InvalidArgument;
        if phys % TABLE_BYTES as u64 != 0 || virt % TABLE_BYTES != 0 {
            hsa_core::bail!(
                bad,
                "table region: physical {phys:#x} or CPU address {virt:#x} is not 4 KiB aligned"
            );
        }
        let bytes = pages.checked_mul(TABLE_BYTES);
        let fits = bytes
            .is_some_and(|b| virt.checked_add(b).is_some() && phys.checked_add(b as u64).is_some());
        if !fits {
            hsa_core::bail!(
                bad,
                "table region of {pages} pages at {phys:#x} (CPU {virt:#x}) passes the end of \
                 the address space"
            );
        }
        Ok(TableRegion {
            phys,
            virt,
            pages,
            next: 0,
        })
    }

    /// Pages handed out so far.
    pub fn used(&self) -> usize {
        self.next
    }

    /// Pages in the region.
    pub fn pages(&self) -> usize {
        self.pages
    }
}

// SAFETY: `new`'s contract makes every page of the region zeroed, 4 KiB aligned (checked),
// mapped read-write at its CPU address and used by nothing else; each is handed out once (in
// order), and `table_at` answers only for the page-aligned physical address of a page handed
// out.
unsafe impl TableMemory for TableRegion {
    fn alloc_table(&mut self) -> Result<TablePage, Error> {
        if self.next == self.pages {
            hsa_core::bail!(
                Status::OutOfResources,
                "all {} page-table pages of the region at {:#x} are in use",
                self.pages,
                self.phys
            );
        }
        let i = self.next;
        self.next += 1;
        Ok(TablePage {
            phys: self.phys + (i * TABLE_BYTES) as u64,
            virt: self.virt + i * TABLE_BYTES,
        })
    }

    fn table_at(&self, phys: u64) -> Option<usize> {
        let off = phys.checked_sub(self.phys)?;
        let i = usize::try_from(off / TABLE_BYTES as u64).ok()?;
        (off % TABLE_BYTES as u64 == 0 && i < self.next).then(|| self.virt + i * TABLE_BYTES)
    }
}

/// A GPUVM context's page tables.
#[derive(Debug)]
pub struct GpuVm<M: TableMemory> {
    mem: M,
    root: TablePage,
    /// `SYSTEM | SNOOPED` on every PDE: the tables live in system memory.
    table_flags: PteFlags,
}

impl<M: TableMemory> GpuVm<M> {
    /// An empty tree (a zeroed PDB2) in `mem`; `tables_in_system_memory` when `mem`'s pages are
    /// system memory (the PDEs then say so, as `amdgpu_ttm_tt_pde_flags` does).
    ///
    /// # Errors
    /// `mem`'s, when it has no page for the root.
    pub fn new(mut mem: M, tables_in_system_memory: bool) -> Result<GpuVm<M>, Error> {
        let root = mem.alloc_table()?;
        let table_flags = if tables_in_system_memory {
            PteFlags::SYSTEM | PteFlags::SNOOPED
        } else {
            PteFlags::empty()
        };
        Ok(GpuVm {
            mem,
            root,
            table_flags,
        })
    }

    /// The root PDB2's entry value: what `MAP_PROCESS`' `vm_context_page_table_base_addr`
    /// takes (its address with `VALID`, and `SYSTEM | SNOOPED` for system-memory tables).
    pub fn root_pde(&self) -> u64 {
        self.root.phys | (PteFlags::VALID | self.table_flags).bits()
    }

    /// The table memory.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    fn table(&self, page: TablePage) -> Result<MmioRegion, Error> {
        // SAFETY: TableMemory's contract: a table page is mapped read-write at `virt` for
        // 4 KiB while the GpuVm lives.
        unsafe { MmioRegion::new(page.virt, TABLE_BYTES) }.map_err(Error::from)
    }

    /// The table an entry of level `level` (0 = PDB2) points at, when it is valid.
    fn next(&self, entry: u64) -> Result<Option<TablePage>, Error> {
        if entry & PteFlags::VALID.bits() == 0 {
            return Ok(None);
        }
        let phys = entry & PTE_ADDRESS_MASK;
        let Some(virt) = self.mem.table_at(phys) else {
            hsa_core::bail!(
                Status::Error,
                "page directory entry {entry:#x} names table {phys:#x}, which the table \
                 memory did not hand out"
            );
        };
        Ok(Some(TablePage { phys, virt }))
    }

    /// The PTE of `va`'s page (0 when unmapped): the walk the GPU's page walker makes.
    ///
    /// # Errors
    /// As a walk that meets a table the memory did not hand out (corrupted entries).
    pub fn translate(&self, va: GpuVa) -> Result<u64, Error> {
        let mut page = self.root;
        for (level, shift) in LEVEL_SHIFTS.into_iter().enumerate() {
            let i = ((va.get() >> shift) as usize) % TABLE_ENTRIES;
            let entry = self.table(page)?.read64(8 * i).map_err(Error::from)?;
            if level == LEVEL_SHIFTS.len() - 1 {
                return Ok(entry);
            }
            match self.next(entry)? {
                Some(p) => page = p,
                None => return Ok(0),
            }
        }
        Ok(0)
    }

    /// The PTB holding `va`'s entry, if the directories name one (nothing is made).
    fn find_ptb(&self, va: u64) -> Result<Option<TablePage>, Error> {
        let mut page = self.root;
        for shift in &LEVEL_SHIFTS[..3] {
            let i = ((va >> shift) as usize) % TABLE_ENTRIES;
            let entry = self.table(page)?.read64(8 * i).map_err(Error::from)?;
            match self.next(entry)? {
                Some(p) => page = p,
                None => return Ok(None),
            }
        }
        Ok(Some(page))
    }

    /// The PTB holding `va`'s entry, its tables made as needed.
    fn ptb_for(&mut self, va: u64) -> Result<TablePage, Error> {
        let mut page = self.root;
        for (level, shift) in LEVEL_SHIFTS[..3].iter().enumerate() {
            let i = ((va >> shift) as usize) % TABLE_ENTRIES;
            let table = self.table(page)?;
            let entry = table.read64(8 * i).map_err(Error::from)?;
            page = match self.next(entry)? {
                Some(p) => p,
                None => {
                    let fresh = self.mem.alloc_table()?;
                    let mut flags = PteFlags::VALID | self.table_flags;
                    if level == 2 {
                        flags |= PteFlags::TF;
                    }
                    table
                        .write64(8 * i, fresh.phys | flags.bits())
                        .map_err(Error::from)?;
                    fresh
                }
            };
        }
        Ok(page)
    }

    /// Calls `f` with each stretch of `[va, end)` that one PTB maps: its first address, its
    /// end and the index of its first entry in the PTB (a PTB maps 2 MiB).
    fn per_ptb(
        va: u64,
        end: u64,
        mut f: impl FnMut(u64, u64, usize) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let span = (TABLE_ENTRIES * TABLE_BYTES) as u64;
        let mut a = va;
        while a < end {
            let stop = ((a / span + 1) * span).min(end);
            f(a, stop, ((a >> 12) as usize) % TABLE_ENTRIES)?;
            a = stop;
        }
        Ok(())
    }

    /// Whether any page of `[va, end)` is mapped (`want_mapped` false) or unmapped (true):
    /// the first such address.
    fn first_page(&self, va: u64, end: u64, want_mapped: bool) -> Result<Option<u64>, Error> {
        let mut found = None;
        Self::per_ptb(va, end, |a, stop, first| {
            if found.is_some() {
                return Ok(());
            }
            let Some(ptb) = self.find_ptb(a)? else {
                if want_mapped {
                    found = Some(a);
                }
                return Ok(());
            };
            let table = self.table(ptb)?;
            for (k, page) in (a..stop).step_by(TABLE_BYTES).enumerate() {
                let valid =
                    table.read64(8 * (first + k)).map_err(Error::from)? & PteFlags::VALID.bits();
                if (valid != 0) != want_mapped {
                    found = Some(page);
                    break;
                }
            }
            Ok(())
        })?;
        Ok(found)
    }

    /// Maps `bytes` from GPU address `va` to `phys` with `flags` (`VALID` is added) and
    /// memory type `mtype`, 4 KiB pages, making the directory tables it needs. Each PTB is
    /// reached once per call.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the value when `va`, `phys` or `bytes` is not a
    /// multiple of 4 KiB, `bytes` is 0, the range passes 2^48, or a page of it is already
    /// mapped (nothing is written then); `Status::OutOfResources` when the table memory runs
    /// out (the pages this call mapped are unmapped again; tables it made stay, empty).
    pub fn map(
        &mut self,
        va: GpuVa,
        phys: u64,
        bytes: u64,
        flags: PteFlags,
        mtype: MType,
    ) -> Result<(), Error> {
        let end = self.check_range(va, bytes)?;
        if phys % TABLE_BYTES as u64 != 0
            || phys.checked_add(bytes).is_none_or(|e| e > 1 << VA_BITS)
        {
            hsa_core::bail!(
                Status::InvalidArgument,
                "physical address {phys:#x} (+{bytes:#x}) is not 4 KiB aligned or passes 2^48"
            );
        }
        if let Some(a) = self.first_page(va.get(), end, false)? {
            hsa_core::bail!(
                Status::InvalidArgument,
                "GPU address {a:#x} is already mapped"
            );
        }
        let mut done = va.get();
        let written = Self::per_ptb(va.get(), end, |a, stop, first| {
            let ptb = self.ptb_for(a)?;
            let table = self.table(ptb)?;
            for (k, page) in (a..stop).step_by(TABLE_BYTES).enumerate() {
                let value = pte(phys + (page - va.get()), flags | PteFlags::VALID, mtype);
                table.write64(8 * (first + k), value).map_err(Error::from)?;
            }
            done = stop;
            Ok(())
        });
        if let Err(e) = written {
            if done > va.get() {
                let _ = self.unmap(va, done - va.get());
            }
            return Err(e);
        }
        Ok(())
    }

    /// Unmaps `bytes` from `va` (their PTEs become 0; the tables stay).
    ///
    /// # Errors
    /// `Status::InvalidArgument` as [`map`](GpuVm::map) for the range, or when a page of it
    /// is not mapped (nothing is written then).
    pub fn unmap(&mut self, va: GpuVa, bytes: u64) -> Result<(), Error> {
        let end = self.check_range(va, bytes)?;
        if let Some(a) = self.first_page(va.get(), end, true)? {
            hsa_core::bail!(Status::InvalidArgument, "GPU address {a:#x} is not mapped");
        }
        Self::per_ptb(va.get(), end, |a, stop, first| {
            let Some(ptb) = self.find_ptb(a)? else {
                return Ok(()); // checked above: unreachable
            };
            let table = self.table(ptb)?;
            for k in 0..((stop - a) as usize / TABLE_BYTES) {
                table.write64(8 * (first + k), 0).map_err(Error::from)?;
            }
            Ok(())
        })
    }

    /// `va + bytes`, after the checks every range gets.
    fn check_range(&self, va: GpuVa, bytes: u64) -> Result<u64, Error> {
        let page = TABLE_BYTES as u64;
        let end = va.get().checked_add(bytes).filter(|&e| e <= 1 << VA_BITS);
        match end {
            Some(end) if va.get() % page == 0 && bytes % page == 0 && bytes > 0 => Ok(end),
            _ => Err(Error::lazy(
                Status::InvalidArgument,
                [va.get(), bytes],
                |&[va, bytes, ..], f| {
                    write!(
                        f,
                        "GPU range {va:#x} (+{bytes:#x}) is empty, not 4 KiB aligned or passes \
                         2^48"
                    )
                },
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;
    use std::vec::Vec;

    /// One zeroed, 4 KiB-aligned table page of a test buffer.
    #[derive(Clone)]
    #[repr(C, align(4096))]
    struct TestPage([u64; TABLE_ENTRIES]);

    /// A [`TableRegion`] over a test buffer; the GPU address of page `i` is
    /// `BASE + 4096 * i`. The buffer is reached through `base` alone (one pointer taken at
    /// creation), never through a reference, as the tables' writers and readers share it.
    struct Pages {
        _buf: Vec<TestPage>,
        base: *mut TestPage,
        region: TableRegion,
    }
    const BASE: u64 = 0x8_0000_0000;

    impl Pages {
        fn new(pages: usize) -> Pages {
            let mut buf = std::vec![TestPage([0; TABLE_ENTRIES]); pages];
            let base = buf.as_mut_ptr();
            // SAFETY: the buffer's pages are zeroed, 4 KiB aligned, owned by the Pages and
            // never moved (the Vec is not grown after creation, and only `base` reaches it);
            // no GPU reads them.
            let region = unsafe { TableRegion::new(BASE, base as usize, pages) }.unwrap();
            Pages {
                _buf: buf,
                base,
                region,
            }
        }

        fn virt(&self, page: usize) -> usize {
            self.base.wrapping_add(page) as usize
        }
    }

    // SAFETY: as the TableRegion it forwards to, over the Pages' own buffer.
    unsafe impl TableMemory for Pages {
        fn alloc_table(&mut self) -> Result<TablePage, Error> {
            self.region.alloc_table()
        }

        fn table_at(&self, phys: u64) -> Option<usize> {
            self.region.table_at(phys)
        }
    }

    /// A region hands its pages out in order at both addresses, answers `table_at` only for
    /// the page-aligned address of a page handed out, and names what is wrong with a bad one.
    #[test]
    fn a_table_region_hands_out_its_pages_in_order() {
        let mut p = Pages::new(3);
        let virt = p.virt(0);
        assert_eq!(p.table_at(BASE), None);
        for i in 0..3 {
            assert_eq!(
                p.alloc_table().unwrap(),
                TablePage {
                    phys: BASE + 0x1000 * i as u64,
                    virt: virt + 0x1000 * i,
                }
            );
        }
        assert_eq!((p.region.used(), p.region.pages()), (3, 3));
        let e = p.alloc_table().unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(e.to_string().contains("all 3 page-table pages"), "{e}");
        assert_eq!(p.table_at(BASE + 0x2000), Some(virt + 0x2000));
        assert_eq!(p.table_at(BASE + 0x3000), None);
        assert_eq!(p.table_at(BASE + 0x1008), None);
        assert_eq!(p.table_at(BASE - 0x1000), None);
        let bad = |phys, virt, pages| {
            // SAFETY: each of these is refused before any page is touched.
            unsafe { TableRegion::new(phys, virt, pages) }.unwrap_err()
        };
        let e = bad(BASE + 8, 0x10_0000, 1);
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.to_string().contains("not 4 KiB aligned"), "{e}");
        assert!(bad(BASE, 0x10_0800, 1)
            .to_string()
            .contains("not 4 KiB aligned"));
        let e = bad(BASE, usize::MAX - 0xfff, 1);
        assert!(e.to_string().contains("passes the end"), "{e}");
        assert!(bad(u64::MAX - 0xfff, 0x10_0000, 1)
            .to_string()
            .contains("passes the end"));
        assert!(bad(BASE, 0x10_0000, usize::MAX / 2)
            .to_string()
            .contains("passes the end"));
        // The last page below the end of both spaces is fine.
        // SAFETY: never handed out.
        assert!(unsafe { TableRegion::new(u64::MAX - 0x1fff, usize::MAX - 0x1fff, 1) }.is_ok());
    }

    fn vm(pages: usize) -> GpuVm<Pages> {
        GpuVm::new(Pages::new(pages), true).unwrap()
    }

    fn entry(vm: &GpuVm<Pages>, page: usize, i: usize) -> u64 {
        let p = vm.memory().virt(page) as *const u64;
        // SAFETY: entry `i` < 512 of a page of the live buffer.
        unsafe { p.wrapping_add(i).read_volatile() }
    }

    /// One page at 0x7f12_3456_7000: PDB2 index 0xfe (bits 39..48), PDB1 0x48, PDB0 0x1a2,
    /// PTB 0x167, worked out by hand; each PDE names the next table (pages 1, 2, 3) with
    /// VALID | SYSTEM | SNOOPED (7), PDB0's with TF (bit 56) too; the PTE holds the page
    /// with VALID | SYSTEM | SNOOPED | READABLE | WRITEABLE (0x67) and MTYPE_UC (3 << 57).
    #[test]
    fn one_page_walks_the_four_levels() {
        let mut vm = vm(8);
        let va = GpuVa(0x7f12_3456_7000);
        let flags = PteFlags::SYSTEM | PteFlags::SNOOPED | PteFlags::READABLE | PteFlags::WRITEABLE;
        vm.map(va, 0x1234_5000, 4096, flags, MType::Uc).unwrap();
        assert_eq!(vm.root_pde(), BASE | 7);
        assert_eq!(entry(&vm, 0, 0xfe), (BASE + 0x1000) | 7);
        assert_eq!(entry(&vm, 1, 0x48), (BASE + 0x2000) | 7);
        assert_eq!(entry(&vm, 2, 0x1a2), (BASE + 0x3000) | 7 | 1 << 56);
        let want = 0x1234_5000 | 0x67 | 3 << 57;
        assert_eq!(entry(&vm, 3, 0x167), want);
        assert_eq!(vm.translate(va).unwrap(), want);
        assert_eq!(vm.translate(GpuVa(0x7f12_3456_8000)).unwrap(), 0);
        assert_eq!(vm.translate(GpuVa(0x1000)).unwrap(), 0);
        // Every other entry of the four tables is 0.
        let nonzero: usize = (0..4)
            .map(|p| {
                (0..TABLE_ENTRIES)
                    .filter(|&i| entry(&vm, p, i) != 0)
                    .count()
            })
            .sum();
        assert_eq!(nonzero, 4);
        // VRAM tables: the PDEs say VALID only.
        let vram = GpuVm::new(Pages::new(1), false).unwrap();
        assert_eq!(vram.root_pde(), BASE | 1);
        assert_eq!(
            pte(0x1_0000_1000, PteFlags::VALID, MType::Cc),
            0x1_0000_1001 | 2 << 57
        );
    }

    /// A range across a PTB boundary (2 MiB) takes a second PTB; unmap clears the PTEs; a
    /// page mapped twice, or unmapped while unmapped, is refused with nothing written.
    #[test]
    fn ranges_cross_tables_and_bad_requests_are_refused() {
        let mut vm = vm(8);
        let va = GpuVa(0x20_0000 - 0x2000); // two pages before the 2 MiB boundary
        vm.map(va, 0x10_0000, 0x4000, PteFlags::READABLE, MType::Nc)
            .unwrap();
        for k in 0..4u64 {
            assert_eq!(
                vm.translate(GpuVa(va.get() + 0x1000 * k)).unwrap(),
                (0x10_0000 + 0x1000 * k) | 0x21
            );
        }
        // Root, PDB1, PDB0 and two PTBs.
        assert_eq!(vm.memory().region.used(), 5);
        let text = |e: Error| {
            assert_eq!(e.status(), Status::InvalidArgument);
            e.detail().to_string()
        };
        let e = vm
            .map(
                GpuVa(0x20_0000),
                0x90_0000,
                0x2000,
                PteFlags::READABLE,
                MType::Nc,
            )
            .unwrap_err();
        assert_eq!(text(e), "GPU address 0x200000 is already mapped");
        let e = vm
            .map(GpuVa(0x1800), 0, 4096, PteFlags::empty(), MType::Nc)
            .unwrap_err();
        assert!(text(e).contains("GPU range 0x1800"));
        let e = vm
            .map(GpuVa(0x1000), 0x800, 4096, PteFlags::empty(), MType::Nc)
            .unwrap_err();
        assert!(text(e).contains("physical address 0x800"));
        let e = vm
            .map(GpuVa(1 << 48), 0, 4096, PteFlags::empty(), MType::Nc)
            .unwrap_err();
        assert!(text(e).contains("passes 2^48"));
        let e = vm
            .map(GpuVa(0x1000), 0, 0, PteFlags::empty(), MType::Nc)
            .unwrap_err();
        assert!(text(e).contains("is empty"));
        // A physical range may end at 2^48 exactly, not past it.
        let top = (1u64 << 48) - 0x1000;
        let e = vm
            .map(GpuVa(0x40_0000), top, 0x2000, PteFlags::empty(), MType::Nc)
            .unwrap_err();
        assert!(text(e).contains("physical address 0xfffffffff000"));
        // VALID among the caller's flags stays set.
        vm.map(
            GpuVa(0x40_0000),
            top,
            0x1000,
            PteFlags::VALID | PteFlags::READABLE,
            MType::Nc,
        )
        .unwrap();
        assert_eq!(vm.translate(GpuVa(0x40_0000)).unwrap(), top | 0x21);
        vm.unmap(GpuVa(0x20_0000), 0x2000).unwrap();
        assert_eq!(vm.translate(GpuVa(0x20_0000)).unwrap(), 0);
        assert_ne!(vm.translate(va).unwrap(), 0);
        let e = vm.unmap(va, 0x3000).unwrap_err();
        assert_eq!(text(e), "GPU address 0x200000 is not mapped");
        assert_ne!(vm.translate(va).unwrap(), 0, "nothing unmapped");
    }

    /// Running out of table pages midway unmaps what the call mapped.
    #[test]
    fn out_of_table_pages_leaves_nothing_mapped() {
        let mut vm = vm(4); // root + 3: room for one PTB only
        let e = vm
            .map(
                GpuVa(0x1f_f000),
                0x1000,
                0x2000,
                PteFlags::READABLE,
                MType::Nc,
            )
            .unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(vm.translate(GpuVa(0x1f_f000)).unwrap(), 0);
        assert_eq!(vm.translate(GpuVa(0x20_0000)).unwrap(), 0);
    }
}
