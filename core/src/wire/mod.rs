//! The hardware formats the runtime writes and the GPU reads, one module each, smoltcp
//! `wire`-style: a checked view over the format's dwords (field getters and setters, reading
//! the positions of one `field` table) plus a typed `Repr` that `parse`s a view and `emit`s
//! into one.
//!
//! - [`sdma`]: SDMA engine packets (SDMA 4.x; the field widths that differ between SDMA
//!   versions are a [`sdma::SdmaFormat`]);
//! - [`pm4`]: PM4 type-3 packets of the command processor, and ROCR's PM4-IB jump;
//! - [`gfx9_rsrc`]: the gfx9 resource descriptors a kernel reads: the image resource (T#),
//!   the buffer resource (V#) and the sampler (S#);
//! - [`kiq`]: the queue-management PM4 packets of a MEC's interface queues (`MAP_QUEUES`,
//!   `UNMAP_QUEUES`, `QUERY_STATUS`, `SET_RESOURCES`, `MAP_PROCESS`, `RUN_LIST`,
//!   `INVALIDATE_TLBS`);
//! - [`mqd`]: the gfx9 memory queue descriptor (`struct v9_mqd`) a compute queue is loaded
//!   from, and [`cu_mask`]: how a queue's CU mask becomes its per-engine enable masks.
//!
//! Both sides use them: hsa-core and the backends produce (`crate::sdma`, `crate::image`,
//! `hsa_baremetal::mqd`), and the emulated device (hsa-emu) consumes through the same views.
//! One layout cannot make the two agree on a wrong bit by construction unnoticed: each
//! module's tests compare golden dwords written from the C headers' own values (linux
//! `vega10_sdma_pkt_open.h`, `soc15d.h`, `v9_structs.h`, the Vega ISA's descriptor tables),
//! and the emulated device's tests build their packets from those values by hand too, and
//! check what it does with them.
//!
//! # No-panic contract
//! No view method panics, whatever the dwords hold: `new_checked` rejects a buffer shorter
//! than the format needs, getters read fixed positions (0 past a shorter buffer given to
//! `new_unchecked`), setters write nothing past it, and `parse` reports every malformed field
//! as a [`WireError`] naming it. Nothing here allocates.

use core::fmt;

use crate::{Error, Status};

pub mod cu_mask;
pub mod gfx9_rsrc;
pub mod kiq;
pub mod mqd;
pub mod pm4;
pub mod sdma;

/// A bit field of a dword-addressed format: `bits` bits from bit `shift` of dword `dword`
/// (`<name>_offset`, `_shift` and the mask's width in the C headers' terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Dword index in the packet or descriptor.
    pub dword: usize,
    /// Lowest bit.
    pub shift: u32,
    /// Width, bits (1..=32).
    pub bits: u32,
}

impl Field {
    /// The field of `bits` bits at bit `shift` of dword `dword`.
    pub const fn new(dword: usize, shift: u32, bits: u32) -> Field {
        assert!(
            bits >= 1 && shift + bits <= 32,
            "a field lies inside its dword"
        );
        Field { dword, shift, bits }
    }

    /// The mask of the field's value (before the shift): `(1 << bits) - 1`.
    pub const fn mask(self) -> u32 {
        if self.bits == 32 {
            u32::MAX
        } else {
            (1 << self.bits) - 1
        }
    }

    /// The field's value in `dwords` (0 when the buffer is too short).
    pub fn get(self, dwords: &[u32]) -> u32 {
        dwords
            .get(self.dword)
            .map_or(0, |d| (d >> self.shift) & self.mask())
    }

    /// Stores the low `bits` bits of `value` into the field (nothing when the buffer is too
    /// short); the dword's other bits are kept.
    pub fn set(self, dwords: &mut [u32], value: u32) {
        if let Some(d) = dwords.get_mut(self.dword) {
            *d = (*d & !(self.mask() << self.shift)) | ((value & self.mask()) << self.shift);
        }
    }

    /// The register image `dword` with the field set to the low `bits` bits of `value`, its
    /// other bits kept (what [`Field::set`] does to one dword, by value).
    pub const fn with(self, dword: u32, value: u32) -> u32 {
        (dword & !(self.mask() << self.shift)) | ((value & self.mask()) << self.shift)
    }

    /// Whether `value` fits the field.
    pub const fn fits(self, value: u64) -> bool {
        value <= self.mask() as u64
    }
}

/// The 64-bit value of two consecutive dwords, low first (a `_LO`/`_HI` address pair); 0
/// past the buffer.
pub fn get_u64(dwords: &[u32], lo: usize) -> u64 {
    let d = |i: usize| u64::from(dwords.get(i).copied().unwrap_or(0));
    d(lo) | d(lo + 1) << 32
}

/// Stores `value` into two consecutive dwords, low first (nothing past the buffer).
pub fn set_u64(dwords: &mut [u32], lo: usize, value: u64) {
    if let Some(d) = dwords.get_mut(lo) {
        *d = value as u32;
    }
    if let Some(d) = dwords.get_mut(lo + 1) {
        *d = (value >> 32) as u32;
    }
}

/// What is wrong with a hardware format's dwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The buffer holds fewer dwords than the packet or descriptor needs.
    Truncated {
        /// The format (`"SDMA packet"`, `"PM4 packet"`, ...).
        what: &'static str,
        /// The first dword (the header).
        header: u32,
        /// Dwords it needs.
        needed: usize,
        /// Dwords there are.
        available: usize,
    },
    /// An opcode (and sub-opcode) this module does not know.
    UnknownOpcode {
        /// The format.
        what: &'static str,
        /// The header dword.
        header: u32,
    },
    /// A value with bits set above its field's width (a count too large for this version's
    /// field, or bits the format reserves).
    ReservedBits {
        /// The field's name, as the C header spells it.
        field: &'static str,
        /// The dword holding it.
        dword: u32,
        /// The field's width, bits.
        bits: u32,
    },
    /// A field whose value the format does not define.
    BadValue {
        /// The field's name, as the C header spells it.
        field: &'static str,
        /// The value.
        value: u64,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated {
                what,
                header,
                needed,
                available,
            } => write!(
                f,
                "{what} {header:#010x} is {needed} dwords, but only {available} were given"
            ),
            WireError::UnknownOpcode { what, header } => {
                write!(f, "{what} header {header:#010x}: unknown opcode")
            }
            WireError::ReservedBits { field, dword, bits } => {
                write!(
                    f,
                    "{field} dword {dword:#010x} has bits above the {bits}-bit field"
                )
            }
            WireError::BadValue { field, value } => write!(f, "{field} {value:#x} is not defined"),
        }
    }
}

impl From<WireError> for Error {
    /// [`Status::InvalidPacketFormat`] with the error's sentence.
    fn from(e: WireError) -> Error {
        crate::error!(Status::InvalidPacketFormat, "{e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_and_write_their_bits_only() {
        let f = Field::new(1, 13, 19);
        let mut d = [0u32, 0xffff_ffff];
        assert_eq!(f.get(&d), 0x7_ffff);
        f.set(&mut d, 5);
        assert_eq!(d[1], 0x1fff | 5 << 13);
        assert_eq!(f.mask(), 0x7_ffff);
        assert!(f.fits(0x7_ffff) && !f.fits(0x8_0000));
        // Past the buffer: 0, and nothing written.
        assert_eq!(Field::new(5, 0, 32).get(&d), 0);
        Field::new(5, 0, 32).set(&mut d, 1);
        assert_eq!(get_u64(&[1, 2], 0), 0x2_0000_0001);
        assert_eq!(get_u64(&[1], 0), 1);
        let mut d = [0u32; 3];
        set_u64(&mut d, 1, 0xaabb_ccdd_0011_2233);
        assert_eq!(d, [0, 0x0011_2233, 0xaabb_ccdd]);
    }
}
