//! The only module that touches device-visible memory: [`MmioRegion`], a bounded window of
//! memory-mapped registers (or of memory shared with the device) reached through
//! `volatile::VolatilePtr`.
//!
//! No `&` or `&mut` reference to MMIO ever exists: every access builds a short-lived
//! `VolatilePtr` from the region's raw base plus a checked offset and does one volatile read
//! or write (Linux `Io`'s bounded offsets; safe-mmio's discipline). Offsets are checked at run
//! time (`read32`, `write64`, ...): out of range or misaligned gives an error, never a panic
//! and never an access.
#![allow(unsafe_code)]

#[cfg(test)]
extern crate alloc;

use core::fmt;
use core::ptr::NonNull;

use hsa_core::{Error, Status};
use volatile::VolatilePtr;

use crate::host::Host;

/// Why an MMIO access was refused. Carries the offending values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MmioError {
    /// `offset + width` lies past the region's end.
    OutOfBounds {
        /// Byte offset asked for.
        offset: usize,
        /// Access width, bytes.
        width: usize,
        /// Region size, bytes.
        size_bytes: usize,
    },
    /// The offset is not a multiple of the access width.
    Misaligned {
        /// Byte offset asked for.
        offset: usize,
        /// Access width, bytes.
        width: usize,
    },
    /// The base address is null or not aligned to 8 bytes.
    BadBase(usize),
}

impl fmt::Display for MmioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MmioError::OutOfBounds { offset, width, size_bytes } => write!(
                f,
                "MMIO offset {offset:#x} (+{width} bytes) is past the region's {size_bytes:#x} bytes"
            ),
            MmioError::Misaligned { offset, width } => {
                write!(f, "MMIO offset {offset:#x} is not a multiple of the access width {width}")
            }
            MmioError::BadBase(b) => write!(f, "MMIO base {b:#x} is null or not 8-byte aligned"),
        }
    }
}

impl MmioError {
    /// The error as integers, for an [`Error::lazy`] message: the variant (0, 1, 2), then its
    /// fields in declaration order.
    pub(crate) const fn to_values(self) -> [u64; 4] {
        match self {
            MmioError::OutOfBounds {
                offset,
                width,
                size_bytes,
            } => [0, offset as u64, width as u64, size_bytes as u64],
            MmioError::Misaligned { offset, width } => [1, offset as u64, width as u64, 0],
            MmioError::BadBase(b) => [2, b as u64, 0, 0],
        }
    }

    /// The error [`to_values`](Self::to_values) gave `v` for (`usize` fields came from
    /// `usize`, so the casts back are exact).
    pub(crate) const fn from_values(v: [u64; 4]) -> MmioError {
        match v[0] {
            0 => MmioError::OutOfBounds {
                offset: v[1] as usize,
                width: v[2] as usize,
                size_bytes: v[3] as usize,
            },
            1 => MmioError::Misaligned {
                offset: v[1] as usize,
                width: v[2] as usize,
            },
            _ => MmioError::BadBase(v[1] as usize),
        }
    }
}

impl From<MmioError> for Error {
    /// `InvalidArgument` with the error's message, formatted only when displayed.
    fn from(e: MmioError) -> Error {
        Error::lazy(
            Status::InvalidArgument,
            e.to_values(),
            |&[k, a, b, c, ..], f| write!(f, "{}", MmioError::from_values([k, a, b, c])),
        )
    }
}

/// A window of `size_bytes` bytes of memory-mapped I/O (or device-shared memory) starting at
/// a virtual address the host mapped.
///
/// Copying a region copies the address, not the registers.
#[derive(Clone, Copy)]
pub struct MmioRegion {
    base: NonNull<u8>,
    size_bytes: usize,
}

// SAFETY: an MmioRegion is an address and a size; every access through it is a single volatile
// load or store of at most 8 bytes, which the hardware (or, for shared memory, the platform's
// protocol) serialises. The creator promised (`new`) that the mapping is valid for the life of
// the region from any thread.
unsafe impl Send for MmioRegion {}
// SAFETY: as for Send: `&MmioRegion` only permits volatile accesses, no references.
unsafe impl Sync for MmioRegion {}

impl fmt::Debug for MmioRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MmioRegion({:#x}, {:#x} bytes)",
            self.base.as_ptr() as usize,
            self.size_bytes
        )
    }
}

impl MmioRegion {
    /// A region over `size_bytes` bytes at virtual address `base`.
    ///
    /// # Safety
    /// The caller guarantees that `[base, base + size_bytes)` is mapped (device registers, or
    /// memory shared with the device) for as long as the region or a copy of it is used, that
    /// volatile 1/4/8-byte loads and stores to it have no effect beyond the device's documented
    /// behaviour, and that no Rust reference to that memory exists while the region is used.
    ///
    /// # Errors
    /// [`MmioError::BadBase`] for a null base or one not aligned to 8 bytes.
    pub unsafe fn new(base: usize, size_bytes: usize) -> Result<MmioRegion, MmioError> {
        if base % 8 != 0 {
            return Err(MmioError::BadBase(base));
        }
        match NonNull::new(base as *mut u8) {
            Some(base) => Ok(MmioRegion { base, size_bytes }),
            None => Err(MmioError::BadBase(base)),
        }
    }

    /// Virtual address of the first byte.
    pub fn base_addr(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// Size, bytes.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    /// The sub-window `[offset, offset + size_bytes)`.
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] when it does not fit; [`MmioError::Misaligned`] for an
    /// offset that is not a multiple of 8.
    pub fn subregion(&self, offset: usize, size_bytes: usize) -> Result<MmioRegion, MmioError> {
        self.check(offset, size_bytes, 8)?;
        // SAFETY: in bounds of the region, checked above, so still inside the mapping.
        let base = unsafe { self.base.add(offset) };
        Ok(MmioRegion { base, size_bytes })
    }

    fn check(&self, offset: usize, width: usize, align: usize) -> Result<(), MmioError> {
        if offset % align != 0 {
            return Err(MmioError::Misaligned {
                offset,
                width: align,
            });
        }
        match offset.checked_add(width) {
            Some(end) if end <= self.size_bytes => Ok(()),
            _ => Err(MmioError::OutOfBounds {
                offset,
                width,
                size_bytes: self.size_bytes,
            }),
        }
    }

    fn ptr<T>(&self, offset: usize) -> Result<NonNull<T>, MmioError> {
        let width = core::mem::size_of::<T>();
        self.check(offset, width, width)?;
        // SAFETY: offset + width <= size_bytes (checked), so the pointer stays in the mapping.
        Ok(unsafe { self.base.add(offset) }.cast())
    }

    /// Volatile 32-bit load at `offset` bytes.
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] / [`MmioError::Misaligned`] for a bad offset.
    pub fn read32(&self, offset: usize) -> Result<u32, MmioError> {
        let p = self.ptr::<u32>(offset)?;
        // SAFETY: `p` is in bounds and 4-aligned (base is 8-aligned, offset checked); the
        // creator of the region promised the mapping is valid and unaliased by references.
        Ok(unsafe { VolatilePtr::new_read_only(p) }.read())
    }

    /// Volatile 32-bit store at `offset` bytes.
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] / [`MmioError::Misaligned`] for a bad offset.
    pub fn write32(&self, offset: usize, value: u32) -> Result<(), MmioError> {
        let p = self.ptr::<u32>(offset)?;
        // SAFETY: as in `read32`.
        unsafe { VolatilePtr::new(p) }.write(value);
        Ok(())
    }

    /// Volatile 64-bit load at `offset` bytes.
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] / [`MmioError::Misaligned`] for a bad offset.
    pub fn read64(&self, offset: usize) -> Result<u64, MmioError> {
        let p = self.ptr::<u64>(offset)?;
        // SAFETY: as in `read32`, 8-aligned.
        Ok(unsafe { VolatilePtr::new_read_only(p) }.read())
    }

    /// Volatile 64-bit store at `offset` bytes (one store instruction on 64-bit targets: what a
    /// doorbell needs).
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] / [`MmioError::Misaligned`] for a bad offset.
    pub fn write64(&self, offset: usize, value: u64) -> Result<(), MmioError> {
        let p = self.ptr::<u64>(offset)?;
        // SAFETY: as in `read32`, 8-aligned.
        unsafe { VolatilePtr::new(p) }.write(value);
        Ok(())
    }

    /// Reads `N` bytes at `offset` (a multiple of 4) with 32-bit volatile loads, little-endian.
    ///
    /// # Errors
    /// [`MmioError::OutOfBounds`] / [`MmioError::Misaligned`] for a bad offset or an `N` that is
    /// not a multiple of 4.
    pub fn read_bytes<const N: usize>(&self, offset: usize) -> Result<[u8; N], MmioError> {
        if N % 4 != 0 {
            return Err(MmioError::Misaligned {
                offset: N,
                width: 4,
            });
        }
        self.check(offset, N, 4)?;
        let mut out = [0u8; N];
        for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&self.read32(offset + 4 * i)?.to_le_bytes());
        }
        Ok(out)
    }

    /// Fills the whole region with zeros (8-byte volatile stores, then 4-byte stores for a
    /// tail). Used to clear device-shared memory handed out by the carve-out allocator.
    pub fn fill_zero(&self) {
        let mut off = 0;
        while off + 8 <= self.size_bytes {
            let _ = self.write64(off, 0);
            off += 8;
        }
        while off + 4 <= self.size_bytes {
            let _ = self.write32(off, 0);
            off += 4;
        }
    }
}

/// The doorbell aperture the host handed in, as a region.
///
/// # Errors
/// `Status::InvalidArgument` when the host's base is null or not 8-byte aligned.
pub fn host_doorbell_aperture<H: Host + ?Sized>(host: &H) -> Result<MmioRegion, Error> {
    let d = host.doorbells();
    // SAFETY: `Host` is an unsafe trait whose implementer guarantees the doorbell aperture is
    // mapped uncached for `size_bytes` for the host's whole life.
    Ok(unsafe { MmioRegion::new(d.virt_base, d.size_bytes) }?)
}

/// The host's IH ring, its write-pointer write-back (4 bytes) and the read-pointer register
/// block, as regions.
///
/// # Errors
/// `Status::InvalidArgument` when a base is null or not 8-byte aligned.
pub fn host_ih_regions<H: Host + ?Sized>(
    host: &H,
) -> Result<(MmioRegion, MmioRegion, MmioRegion), Error> {
    let c = host.ih_ring();
    // SAFETY: the `Host` implementer guarantees the ring, the write-back and the register
    // block are mapped and valid for the host's whole life, and only this runtime reads them.
    unsafe {
        Ok((
            MmioRegion::new(c.ring_virt_base, c.ring_size_bytes as usize)?,
            MmioRegion::new(c.wptr_virt, 4)?,
            MmioRegion::new(
                c.rptr_register.block_virt_base,
                c.rptr_register.block_size_bytes,
            )?,
        ))
    }
}

/// `[offset, offset + size_bytes)` of the host's carve-out `index`, when the CPU can touch it.
///
/// # Errors
/// `Status::InvalidArgument` for an unknown carve-out, one without a CPU mapping, or a range
/// past its end.
pub fn host_carve_out_window<H: Host + ?Sized>(
    host: &H,
    index: usize,
    offset: u64,
    size_bytes: u64,
) -> Result<MmioRegion, Error> {
    let Some(c) = host.carve_outs().get(index) else {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [index as u64],
            |&[index, ..], f| write!(f, "carve-out index {index} is unknown"),
        ));
    };
    let Some(virt) = c.virt_base else {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [index as u64],
            |&[index, ..], f| write!(f, "carve-out {index} has no CPU mapping"),
        ));
    };
    let end = offset
        .checked_add(size_bytes)
        .filter(|&e| e <= c.size_bytes);
    let (Some(_), Ok(off), Ok(size)) = (end, usize::try_from(offset), usize::try_from(size_bytes))
    else {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [offset, size_bytes, index as u64, c.size_bytes],
            |&[offset, size_bytes, index, carve_out_bytes, ..], f| {
                write!(
                    f,
                    "range {offset:#x}+{size_bytes:#x} is past carve-out {index}'s \
                     {carve_out_bytes:#x} bytes"
                )
            },
        ));
    };
    // SAFETY: the `Host` implementer guarantees the carve-out is mapped read-write for the CPU
    // over all of `size_bytes` and used by no one else; the range is inside it (checked).
    Ok(unsafe { MmioRegion::new(virt + off, size) }?)
}

/// Test helper: a region over `words.len() * 8` bytes of ordinary zeroed memory, and the
/// memory itself, which must outlive every use of the region (moving the `Vec` is fine: the
/// heap block stays put, and unlike a `Box` a moved `Vec` does not re-assert uniqueness over
/// it under Stacked Borrows).
#[cfg(test)]
pub(crate) fn test_region(
    words: usize,
) -> (MmioRegion, alloc::vec::Vec<core::sync::atomic::AtomicU64>) {
    let mem: alloc::vec::Vec<core::sync::atomic::AtomicU64> = (0..words)
        .map(|_| core::sync::atomic::AtomicU64::new(0))
        .collect();
    // SAFETY: the caller keeps `mem` alive while it uses the region; plain memory, accessed
    // only through volatile and atomic operations, never through references to non-atomic
    // data.
    let r = unsafe { MmioRegion::new(mem.as_ptr() as usize, words * 8) }.expect("aligned");
    (r, mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_accesses_hit_the_right_bytes_and_bad_offsets_are_refused() {
        let mut mem = [0u64; 4];
        let base = mem.as_mut_ptr() as usize;
        // SAFETY: `mem` outlives the region and is only accessed through it below.
        let r = unsafe { MmioRegion::new(base, 32) }.unwrap();
        r.write64(8, 0x1122_3344_5566_7788).unwrap();
        r.write32(16, 0xdead_beef).unwrap();
        assert_eq!(r.read64(8).unwrap(), 0x1122_3344_5566_7788);
        assert_eq!(r.read32(8).unwrap(), 0x5566_7788);
        assert_eq!(r.read32(12).unwrap(), 0x1122_3344);
        assert_eq!(
            r.read_bytes::<8>(16).unwrap(),
            [0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0]
        );
        assert_eq!(
            r.write64(32, 1),
            Err(MmioError::OutOfBounds {
                offset: 32,
                width: 8,
                size_bytes: 32
            })
        );
        assert_eq!(
            r.read64(4),
            Err(MmioError::Misaligned {
                offset: 4,
                width: 8
            })
        );
        assert_eq!(
            r.read32(usize::MAX - 3),
            Err(MmioError::OutOfBounds {
                offset: usize::MAX - 3,
                width: 4,
                size_bytes: 32
            })
        );
        let sub = r.subregion(8, 16).unwrap();
        assert_eq!(sub.read64(0).unwrap(), 0x1122_3344_5566_7788);
        assert!(sub.read64(16).is_err());
        sub.fill_zero();
        assert_eq!(r.read64(8).unwrap(), 0);
        let _ = r;
        assert_eq!(mem, [0, 0, 0, 0]);
        // SAFETY: refused before any access; never used.
        let null = unsafe { MmioRegion::new(0, 8) };
        assert_eq!(null.unwrap_err(), MmioError::BadBase(0));
        // SAFETY: refused before any access; never used.
        let odd = unsafe { MmioRegion::new(4, 8) };
        assert_eq!(odd.unwrap_err(), MmioError::BadBase(4));
    }
}
