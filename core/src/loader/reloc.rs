//! AMDGPU dynamic relocations: types and how each patches a loaded image.
//!
//! Ref: LLVM AMDGPUUsage, "Relocation Records" (table "AMDGPU ELF Relocation Records"):
//! `A` addend, `B` load base, `G` GOT entry offset, `GOT` GOT address, `P` address of the
//! place patched, `S` symbol address.

use super::code_object::DynRelocation;
use crate::status::{Result, Status};

/// `R_AMDGPU_NONE`: no relocation.
pub const R_AMDGPU_NONE: u32 = 0;
/// `R_AMDGPU_ABS32_LO` (word32): `(S + A) & 0xFFFFFFFF`.
pub const R_AMDGPU_ABS32_LO: u32 = 1;
/// `R_AMDGPU_ABS32_HI` (word32): `(S + A) >> 32`.
pub const R_AMDGPU_ABS32_HI: u32 = 2;
/// `R_AMDGPU_ABS64` (word64): `S + A`.
pub const R_AMDGPU_ABS64: u32 = 3;
/// `R_AMDGPU_REL32` (word32): `S + A - P`.
pub const R_AMDGPU_REL32: u32 = 4;
/// `R_AMDGPU_REL64` (word64): `S + A - P`.
pub const R_AMDGPU_REL64: u32 = 5;
/// `R_AMDGPU_ABS32` (word32): `S + A`.
pub const R_AMDGPU_ABS32: u32 = 6;
/// `R_AMDGPU_GOTPCREL` (word32): `G + GOT + A - P`.
pub const R_AMDGPU_GOTPCREL: u32 = 7;
/// `R_AMDGPU_GOTPCREL32_LO` (word32): `(G + GOT + A - P) & 0xFFFFFFFF`.
pub const R_AMDGPU_GOTPCREL32_LO: u32 = 8;
/// `R_AMDGPU_GOTPCREL32_HI` (word32): `(G + GOT + A - P) >> 32`.
pub const R_AMDGPU_GOTPCREL32_HI: u32 = 9;
/// `R_AMDGPU_REL32_LO` (word32): `(S + A - P) & 0xFFFFFFFF`.
pub const R_AMDGPU_REL32_LO: u32 = 10;
/// `R_AMDGPU_REL32_HI` (word32): `(S + A - P) >> 32`.
pub const R_AMDGPU_REL32_HI: u32 = 11;
/// `R_AMDGPU_RELATIVE64` (word64): `B + A`.
pub const R_AMDGPU_RELATIVE64: u32 = 13;
/// `R_AMDGPU_REL16` (word16): `((S + A - P) - 4) / 4`.
pub const R_AMDGPU_REL16: u32 = 14;

/// The name of a relocation type, for messages.
pub fn relocation_name(r_type: u32) -> &'static str {
    match r_type {
        R_AMDGPU_NONE => "R_AMDGPU_NONE",
        R_AMDGPU_ABS32_LO => "R_AMDGPU_ABS32_LO",
        R_AMDGPU_ABS32_HI => "R_AMDGPU_ABS32_HI",
        R_AMDGPU_ABS64 => "R_AMDGPU_ABS64",
        R_AMDGPU_REL32 => "R_AMDGPU_REL32",
        R_AMDGPU_REL64 => "R_AMDGPU_REL64",
        R_AMDGPU_ABS32 => "R_AMDGPU_ABS32",
        R_AMDGPU_GOTPCREL => "R_AMDGPU_GOTPCREL",
        R_AMDGPU_GOTPCREL32_LO => "R_AMDGPU_GOTPCREL32_LO",
        R_AMDGPU_GOTPCREL32_HI => "R_AMDGPU_GOTPCREL32_HI",
        R_AMDGPU_REL32_LO => "R_AMDGPU_REL32_LO",
        R_AMDGPU_REL32_HI => "R_AMDGPU_REL32_HI",
        R_AMDGPU_RELATIVE64 => "R_AMDGPU_RELATIVE64",
        R_AMDGPU_REL16 => "R_AMDGPU_REL16",
        _ => "unknown",
    }
}

/// Applies one dynamic relocation to a loaded image.
///
/// `image` holds the bytes of the loaded image whose first byte has file vaddr
/// `image_start_vaddr`; `load_base` is `B` (the device address that file vaddr 0 maps to);
/// `symbol_address` is `S` (already including the load base; 0 when the relocation names no
/// symbol). `P` is `load_base + r.offset`.
///
/// # Errors
/// `Status::InvalidCodeObject` naming the relocation for an unknown type, a GOT-relative type
/// (these are resolved by the static linker and cannot appear in `DT_RELA`), a patch place
/// outside `image`, or a value that does not fit its field (REL16).
pub fn apply_relocation(
    image: &mut [u8],
    image_start_vaddr: u64,
    load_base: u64,
    r: &DynRelocation,
    symbol_address: u64,
) -> Result<()> {
    let (s, a, b) = (symbol_address, r.addend as u64, load_base);
    let p = load_base.wrapping_add(r.offset);
    let sa = s.wrapping_add(a);
    let sap = sa.wrapping_sub(p);
    let (value, width): (u64, usize) = match r.r_type {
        R_AMDGPU_NONE => return Ok(()),
        R_AMDGPU_ABS32_LO => (sa & 0xffff_ffff, 4),
        R_AMDGPU_ABS32_HI => (sa >> 32, 4),
        R_AMDGPU_ABS64 => (sa, 8),
        R_AMDGPU_REL32 => (sap & 0xffff_ffff, 4),
        R_AMDGPU_REL64 => (sap, 8),
        R_AMDGPU_ABS32 => (sa & 0xffff_ffff, 4),
        R_AMDGPU_REL32_LO => (sap & 0xffff_ffff, 4),
        R_AMDGPU_REL32_HI => (sap >> 32, 4),
        R_AMDGPU_RELATIVE64 => (b.wrapping_add(a), 8),
        R_AMDGPU_REL16 => {
            let words = (sap as i64).wrapping_sub(4) / 4;
            let v = i16::try_from(words).map_err(|_| {
                crate::error!(
                    Status::InvalidCodeObject,
                    "relocation R_AMDGPU_REL16 at {:#x}: branch distance {words} words does not fit 16 bits",
                    r.offset
                )
            })?;
            (u64::from(v as u16), 2)
        }
        t @ (R_AMDGPU_GOTPCREL | R_AMDGPU_GOTPCREL32_LO | R_AMDGPU_GOTPCREL32_HI) => crate::bail!(
            Status::InvalidCodeObject,
            "relocation {} ({t}) at {:#x} needs a GOT entry; GOT-relative relocations are not valid in DT_RELA",
            relocation_name(t),
            r.offset
        ),
        t => crate::bail!(Status::InvalidCodeObject, "relocation at {:#x} has unknown type {t}", r.offset),
    };
    let place = r
        .offset
        .checked_sub(image_start_vaddr)
        .and_then(|o| usize::try_from(o).ok())
        .and_then(|o| image.get_mut(o..o.checked_add(width)?))
        .ok_or_else(|| {
            crate::error!(
                Status::InvalidCodeObject,
                "relocation {} at {:#x} ({width} bytes) lies outside the loaded image",
                relocation_name(r.r_type),
                r.offset
            )
        })?;
    place.copy_from_slice(&value.to_le_bytes()[..width]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn rel(offset: u64, r_type: u32, addend: i64) -> DynRelocation {
        DynRelocation {
            offset,
            r_type,
            symbol: 1,
            addend,
        }
    }

    #[test]
    fn each_type_computes_its_formula() {
        let base = 0x7f00_1234_0000u64;
        let s = base + 0x2000; // a symbol at vaddr 0x2000
        let mut img = [0u8; 64];
        let read = |img: &[u8], o: usize, w: usize| {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&img[o..o + w]);
            u64::from_le_bytes(b)
        };
        apply_relocation(&mut img, 0x1000, base, &rel(0x1000, R_AMDGPU_ABS64, 8), s).unwrap();
        assert_eq!(read(&img, 0, 8), base + 0x2008);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x1008, R_AMDGPU_ABS32_LO, 8),
            s,
        )
        .unwrap();
        assert_eq!(read(&img, 8, 4), (base + 0x2008) & 0xffff_ffff);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x100c, R_AMDGPU_ABS32_HI, 8),
            s,
        )
        .unwrap();
        assert_eq!(read(&img, 12, 4), (base + 0x2008) >> 32);
        apply_relocation(&mut img, 0x1000, base, &rel(0x1010, R_AMDGPU_REL64, 0), s).unwrap();
        assert_eq!(read(&img, 16, 8), 0x2000 - 0x1010);
        apply_relocation(&mut img, 0x1000, base, &rel(0x1018, R_AMDGPU_REL32, 4), s).unwrap();
        assert_eq!(read(&img, 24, 4), 0x2004 - 0x1018);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x101c, R_AMDGPU_REL32_LO, 0),
            base,
        )
        .unwrap();
        assert_eq!(read(&img, 28, 4), (-0x101ci64 as u64) & 0xffff_ffff);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x1020, R_AMDGPU_REL32_HI, 0),
            base,
        )
        .unwrap();
        assert_eq!(read(&img, 32, 4), 0xffff_ffff);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x1024, R_AMDGPU_ABS32, 0),
            0x1234_5678,
        )
        .unwrap();
        assert_eq!(read(&img, 36, 4), 0x1234_5678);
        apply_relocation(
            &mut img,
            0x1000,
            base,
            &rel(0x1028, R_AMDGPU_RELATIVE64, 0x3000),
            0,
        )
        .unwrap();
        assert_eq!(read(&img, 40, 8), base + 0x3000);
        // REL16: branch from P to S+A: ((S + A - P) - 4) / 4 = (0x2000 - 0x1030 - 4) / 4.
        apply_relocation(&mut img, 0x1000, base, &rel(0x1030, R_AMDGPU_REL16, 0), s).unwrap();
        assert_eq!(read(&img, 48, 2), (0x2000 - 0x1030 - 4) / 4);
        apply_relocation(&mut img, 0x1000, base, &rel(0x1032, R_AMDGPU_NONE, 0), s).unwrap();
    }

    #[test]
    fn bad_relocations_are_errors() {
        let mut img = [0u8; 16];
        for (r, frag) in [
            (rel(0x1000, 12, 0), "unknown type 12"),
            (rel(0x1000, 99, 0), "unknown type 99"),
            (rel(0x1000, R_AMDGPU_GOTPCREL, 0), "R_AMDGPU_GOTPCREL (7)"),
            (rel(0x100c, R_AMDGPU_ABS64, 0), "outside"),
            (rel(0x0ff8, R_AMDGPU_ABS64, 0), "outside"),
            (rel(u64::MAX, R_AMDGPU_ABS32, 0), "outside"),
            (rel(0x1000, R_AMDGPU_REL16, 0x100000), "16 bits"),
        ] {
            let e = apply_relocation(&mut img, 0x1000, 0x10_0000, &r, 0x10_0000).unwrap_err();
            assert_eq!(e.status(), Status::InvalidCodeObject);
            assert!(e.detail().to_string().contains(frag), "{frag}: {e}");
        }
        assert_eq!(img, [0u8; 16]);
    }
}
