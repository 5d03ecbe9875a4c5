//! PCI through the configuration ports (mechanism #1: address at 0xcf8, data at 0xcfc):
//! enumeration, BAR sizing and assignment (qboot leaves BARs unassigned), the command
//! register, and MSI-X.
//!
//! Ref: PCI Local Bus Specification 3.0 §3.2.2.3.2 (configuration mechanism #1), §6.2.5
//! (base address registers), §6.8.2 (MSI-X capability and table).
#![allow(unsafe_code)]

use crate::arch::{inl, outl};

const CONFIG_ADDRESS: u16 = 0xcf8;
const CONFIG_DATA: u16 = 0xcfc;

/// Where the unikernel puts BARs the firmware left unassigned: inside the 32-bit PCI hole of
/// both `pc` (above RAM) and `q35` (above its 0xb0000000 MMCONFIG window), below the IOAPIC.
pub const BAR_WINDOW: (u64, u64) = (0xc000_0000, 0xfe00_0000);

/// Command register bits.
const CMD_MEMORY: u16 = 1 << 1;
const CMD_BUS_MASTER: u16 = 1 << 2;
const CMD_INTX_DISABLE: u16 = 1 << 10;
/// Capability id of MSI-X.
const CAP_MSIX: u8 = 0x11;

/// A function's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bdf {
    /// Bus.
    pub bus: u8,
    /// Device (0..32).
    pub device: u8,
    /// Function (0..8).
    pub function: u8,
}

impl core::fmt::Display for Bdf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.bus, self.device, self.function)
    }
}

impl Bdf {
    fn address(self, offset: u8) -> u32 {
        0x8000_0000
            | u32::from(self.bus) << 16
            | u32::from(self.device) << 11
            | u32::from(self.function) << 8
            | u32::from(offset & 0xfc)
    }

    /// Reads the configuration dword at `offset` (rounded down to 4).
    pub fn read32(self, offset: u8) -> u32 {
        outl(CONFIG_ADDRESS, self.address(offset));
        inl(CONFIG_DATA)
    }

    /// Writes the configuration dword at `offset` (rounded down to 4).
    pub fn write32(self, offset: u8, value: u32) {
        outl(CONFIG_ADDRESS, self.address(offset));
        outl(CONFIG_DATA, value);
    }

    /// Reads the configuration word at `offset` (2-aligned).
    pub fn read16(self, offset: u8) -> u16 {
        (self.read32(offset) >> ((offset & 2) * 8)) as u16
    }

    /// Writes the configuration word at `offset` (2-aligned), keeping the other half.
    pub fn write16(self, offset: u8, value: u16) {
        let shift = (offset & 2) * 8;
        let old = self.read32(offset) & !(0xffff << shift);
        self.write32(offset, old | u32::from(value) << shift);
    }

    /// (vendor id, device id); vendor 0xffff when nothing answers.
    pub fn ids(self) -> (u16, u16) {
        let v = self.read32(0);
        (v as u16, (v >> 16) as u16)
    }
}

/// Finds the first function with `vendor:device`, scanning every bus, device and function.
pub fn find(vendor: u16, device: u16) -> Option<Bdf> {
    for bus in 0..=255u8 {
        for dev in 0..32u8 {
            let f0 = Bdf {
                bus,
                device: dev,
                function: 0,
            };
            if f0.ids().0 == 0xffff {
                continue;
            }
            let multi = f0.read32(0x0c) & (0x80 << 16) != 0;
            for function in 0..if multi { 8 } else { 1 } {
                let bdf = Bdf {
                    bus,
                    device: dev,
                    function,
                };
                if bdf.ids() == (vendor, device) {
                    return Some(bdf);
                }
            }
        }
    }
    None
}

/// One memory BAR as found (and, where needed, assigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// Physical address.
    pub address: u64,
    /// Size, bytes (a power of two).
    pub size_bytes: u64,
    /// Whether the firmware had assigned it (else the unikernel did).
    pub by_firmware: bool,
}

/// What went wrong bringing a PCI function up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciError {
    /// BAR `n` is an I/O BAR or has a reserved type.
    NotMemoryBar(u8),
    /// BAR `n` reads back no size.
    EmptyBar(u8),
    /// The BAR window is full: BAR `n` of `size` bytes does not fit.
    NoRoom(u8, u64),
    /// The function has no MSI-X capability.
    NoMsix,
    /// The MSI-X table has fewer entries than asked for: (entries, asked).
    FewMsixVectors(u16, u16),
}

impl core::fmt::Display for PciError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            PciError::NotMemoryBar(n) => write!(f, "BAR{n} is not a memory BAR"),
            PciError::EmptyBar(n) => write!(f, "BAR{n} reads back no size"),
            PciError::NoRoom(n, s) => {
                write!(f, "BAR{n} ({s:#x} bytes) does not fit the BAR window")
            }
            PciError::NoMsix => write!(f, "no MSI-X capability"),
            PciError::FewMsixVectors(have, want) => {
                write!(f, "MSI-X table has {have} entries, {want} needed")
            }
        }
    }
}

/// Assigns BAR addresses from [`BAR_WINDOW`] (a bump allocator: one device).
pub struct BarAllocator {
    next: u64,
}

impl Default for BarAllocator {
    fn default() -> Self {
        BarAllocator { next: BAR_WINDOW.0 }
    }
}

impl BarAllocator {
    fn take(&mut self, n: u8, size: u64) -> Result<u64, PciError> {
        let at = self.next.next_multiple_of(size);
        if at + size > BAR_WINDOW.1 {
            return Err(PciError::NoRoom(n, size));
        }
        self.next = at + size;
        Ok(at)
    }
}

/// Sizes memory BAR `n` of `bdf` and keeps the firmware's address when it gave one below
/// 4 GiB (the unikernel's identity map ends there), else assigns one from `alloc`. Memory
/// decoding must be off (the caller's order in [`enable`]).
pub fn setup_bar(bdf: Bdf, n: u8, alloc: &mut BarAllocator) -> Result<Bar, PciError> {
    let off = 0x10 + 4 * n;
    let lo = bdf.read32(off);
    if lo & 1 != 0 {
        return Err(PciError::NotMemoryBar(n));
    }
    let is64 = match (lo >> 1) & 3 {
        0 => false,
        2 => true,
        _ => return Err(PciError::NotMemoryBar(n)),
    };
    let hi = if is64 { bdf.read32(off + 4) } else { 0 };
    let current = u64::from(hi) << 32 | u64::from(lo & !0xf);
    // Size: write all ones, read back the writable bits.
    bdf.write32(off, 0xffff_ffff);
    let mask_lo = bdf.read32(off) & !0xf;
    let mut mask = u64::from(mask_lo) | 0xffff_ffff_0000_0000;
    if is64 {
        bdf.write32(off + 4, 0xffff_ffff);
        mask = u64::from(bdf.read32(off + 4)) << 32 | u64::from(mask_lo);
    }
    let size = (!mask).wrapping_add(1);
    if mask_lo == 0 || size == 0 {
        bdf.write32(off, lo);
        if is64 {
            bdf.write32(off + 4, hi);
        }
        return Err(PciError::EmptyBar(n));
    }
    let keep = current != 0 && current + size <= 1 << 32;
    let address = if keep { current } else { alloc.take(n, size)? };
    bdf.write32(off, (address as u32) | (lo & 0xf));
    if is64 {
        bdf.write32(off + 4, (address >> 32) as u32);
    }
    Ok(Bar {
        address,
        size_bytes: size,
        by_firmware: keep,
    })
}

/// Turns memory decoding off (before BARs are sized).
pub fn disable_decoding(bdf: Bdf) {
    let cmd = bdf.read16(0x04);
    bdf.write16(0x04, cmd & !(CMD_MEMORY | CMD_BUS_MASTER));
}

/// Turns memory decoding and bus mastering on and INTx off.
pub fn enable(bdf: Bdf) {
    let cmd = bdf.read16(0x04);
    bdf.write16(0x04, cmd | CMD_MEMORY | CMD_BUS_MASTER | CMD_INTX_DISABLE);
}

/// The MSI-X capability of a function.
#[derive(Clone, Copy, Debug)]
pub struct Msix {
    bdf: Bdf,
    cap: u8,
    /// Table entries.
    pub entries: u16,
    /// Address of the table (its BAR's address plus the table offset).
    pub table: u64,
}

/// Finds the MSI-X capability; `bars` gives each BAR's address (for the table's BIR).
pub fn msix(bdf: Bdf, bars: &[Option<Bar>; 6]) -> Result<Msix, PciError> {
    if bdf.read16(0x06) & (1 << 4) == 0 {
        return Err(PciError::NoMsix);
    }
    let mut cap = bdf.read32(0x34) as u8 & 0xfc;
    let mut guard = 0;
    while cap != 0 && guard < 48 {
        let head = bdf.read32(cap);
        if head as u8 == CAP_MSIX {
            let control = (head >> 16) as u16;
            let table = bdf.read32(cap + 4);
            let bir = (table & 7) as usize;
            let Some(bar) = bars.get(bir).copied().flatten() else {
                return Err(PciError::NoMsix);
            };
            return Ok(Msix {
                bdf,
                cap,
                entries: (control & 0x7ff) + 1,
                table: bar.address + u64::from(table & !7),
            });
        }
        cap = (head >> 8) as u8 & 0xfc;
        guard += 1;
    }
    Err(PciError::NoMsix)
}

impl Msix {
    /// Programs entries `0..vectors.len()` to deliver fixed, edge-triggered interrupt
    /// `vectors[i]` to the local APIC `apic_id` (address 0xfee00000 | id << 12), unmasked,
    /// then enables MSI-X with the function unmasked.
    ///
    /// # Errors
    /// [`PciError::FewMsixVectors`] when the table is smaller than `vectors`.
    pub fn program(&self, apic_id: u32, vectors: &[u8]) -> Result<(), PciError> {
        if usize::from(self.entries) < vectors.len() {
            return Err(PciError::FewMsixVectors(self.entries, vectors.len() as u16));
        }
        // Function mask on while the table changes.
        let control_off = self.cap + 2;
        let control = self.bdf.read16(control_off);
        self.bdf.write16(control_off, control | 1 << 14);
        for (i, &v) in vectors.iter().enumerate() {
            let entry = self.table + 16 * i as u64;
            let words = [0xfee0_0000 | (apic_id & 0xff) << 12, 0, u32::from(v), 0];
            for (k, w) in words.iter().enumerate() {
                // SAFETY: the MSI-X table lies in a BAR the unikernel assigned (or kept) below
                // 4 GiB, identity-mapped uncached; entries 0..entries are 16 bytes each.
                unsafe { core::ptr::write_volatile((entry + 4 * k as u64) as *mut u32, *w) };
            }
        }
        self.bdf
            .write16(control_off, (control | 1 << 15) & !(1 << 14));
        Ok(())
    }
}
