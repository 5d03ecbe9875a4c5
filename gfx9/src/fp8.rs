//! The 8-bit float formats of the gfx940 and gfx950 FP8/BF8 conversions and MFMAs, and the
//! normalized and saturating integer conversions of the VOP3 pack instructions.
//!
//! gfx940, gfx941 and gfx942 use AMD's "FNUZ" formats (CDNA3 ISA "Data types"; LLVM's
//! `Float8E4M3FNUZ`/`Float8E5M2FNUZ`): FP8 is E4M3 with exponent bias 8, BF8 is E5M2 with
//! bias 16; neither has infinities nor a negative zero, and the one NaN is 0x80. Their
//! largest finite values are 240 (0x7F) and 57344 (0x7F).
//!
//! gfx950 uses the OCP formats instead (CDNA4 ISA §7.3 table 30; LLVM's
//! `Float8E4M3FN`/`Float8E5M2`): FP8 is E4M3 with bias 7, a signed zero, no infinity and the
//! NaNs 0x7F/0xFF, largest 448 (0x7E); BF8 is E5M2 with bias 15, infinities 0x7C/0xFC and
//! the NaNs 0x7D..0x7F (and their negatives), largest 57344 (0x7B).
//!
//! Conversions from f32 round to nearest even (the CDNA3 ISA's V_CVT_PK_FP8_F32 pseudocode
//! forces ROUND_NEAREST_EVEN; CDNA4 table 31 says RNE). A value beyond the largest finite
//! one after rounding (±∞ included):
//! - FNUZ: 0x80 (NaN), or with the instruction's `clamp` the largest finite value of its
//!   sign; a result that rounds to zero is 0x00 (there is no −0); a NaN gives 0x80.
//! - OCP (CDNA4 ISA §7.3, "FP16_OVFL rule"): with MODE.FP16_OVFL the largest finite value of
//!   its sign; without it FP8 gives NaN and BF8 gives ±∞. Zero keeps its sign. A NaN gives a
//!   NaN: the ISA does not say which, and this model keeps the sign with the quiet pattern
//!   (FP8 0x7F, BF8 0x7E, the top bits of an f16 quiet NaN), as IEEE conversions keep it.

/// An 8-bit float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// E4M3, bias 8 (gfx940 FP8, FNUZ).
    Fp8,
    /// E5M2, bias 16 (gfx940 BF8, FNUZ).
    Bf8,
    /// E4M3, bias 7 (gfx950 FP8, OCP E4M3FN).
    OcpFp8,
    /// E5M2, bias 15 (gfx950 BF8, OCP E5M2).
    OcpBf8,
}

impl Format {
    /// The FP8 (`bf8` false) or BF8 format of `target`: OCP on gfx950, FNUZ before it.
    pub(crate) fn of(bf8: bool, target: crate::Gfx9Target) -> Format {
        match (bf8, target == crate::Gfx9Target::Gfx950) {
            (false, false) => Format::Fp8,
            (true, false) => Format::Bf8,
            (false, true) => Format::OcpFp8,
            (true, true) => Format::OcpBf8,
        }
    }

    /// (mantissa bits, exponent bias).
    const fn layout(self) -> (u32, i32) {
        match self {
            Format::Fp8 => (3, 8),
            Format::Bf8 => (2, 16),
            Format::OcpFp8 => (3, 7),
            Format::OcpBf8 => (2, 15),
        }
    }

    /// The magnitude code of the largest finite value.
    const fn max_code(self) -> u8 {
        match self {
            Format::Fp8 | Format::Bf8 => 0x7F,
            Format::OcpFp8 => 0x7E,
            Format::OcpBf8 => 0x7B,
        }
    }

    const fn ocp(self) -> bool {
        matches!(self, Format::OcpFp8 | Format::OcpBf8)
    }
}

/// The value of the 7-bit magnitude `m` (0..=0x7F) of `format`, read as a finite number.
fn magnitude(m: u8, format: Format) -> f64 {
    let (mbits, bias) = format.layout();
    let e = i32::from(m >> mbits);
    let f = f64::from(m & ((1 << mbits) - 1)) / f64::from(1u32 << mbits);
    if e == 0 {
        f * 2f64.powi(1 - bias)
    } else {
        (1.0 + f) * 2f64.powi(e - bias)
    }
}

/// `bits` of `format` as an f32 (exact). A NaN code gives the quiet NaN 0x7FC0_0000 with the
/// code's sign (FNUZ's only NaN, 0x80, gives 0x7FC0_0000).
pub(crate) fn to_f32(bits: u8, format: Format) -> f32 {
    let m = bits & 0x7F;
    let neg = bits & 0x80 != 0;
    let nan = |neg: bool| f32::from_bits(0x7FC0_0000 | u32::from(neg) << 31);
    let v = match format {
        Format::Fp8 | Format::Bf8 if bits == 0x80 => return nan(false),
        Format::OcpFp8 if m == 0x7F => return nan(neg),
        Format::OcpBf8 if m > 0x7C => return nan(neg),
        Format::OcpBf8 if m == 0x7C => f32::INFINITY,
        _ => magnitude(m, format) as f32,
    };
    if neg {
        -v
    } else {
        v
    }
}

/// `x` in `format`, rounded to nearest even; `sat` is the instruction's `clamp` (FNUZ) or
/// MODE.FP16_OVFL (OCP) (see the module doc for NaN, overflow and zero).
pub(crate) fn from_f32(x: f32, format: Format, sat: bool) -> u8 {
    from_f64(f64::from(x), format, sat)
}

/// [`from_f32`] of an f64 (the scaled conversions divide by their scale exactly in f64
/// first, so a value that would be an f32 denormal loses no bits before this rounding).
pub(crate) fn from_f64(x: f64, format: Format, sat: bool) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    if x.is_nan() {
        return match format {
            Format::Fp8 | Format::Bf8 => 0x80,
            Format::OcpFp8 => sign | 0x7F,
            Format::OcpBf8 => sign | 0x7E,
        };
    }
    let a = x.abs();
    let top = format.max_code();
    let max = magnitude(top, format);
    // Half an ulp of the top binade: the largest value and the next one the format would
    // have are that far from their midpoint; a tie there goes to the even code, so it
    // overflows when the largest code is odd.
    let half_ulp = (max - magnitude(top - 1, format)) / 2.0;
    let m: u8 = if a >= max {
        let overflow = a > max + half_ulp || (a == max + half_ulp && top & 1 == 1);
        if !overflow || sat {
            top
        } else {
            return match format {
                Format::Fp8 | Format::Bf8 => 0x80,
                Format::OcpFp8 => sign | 0x7F,
                Format::OcpBf8 => sign | 0x7C,
            };
        }
    } else {
        // The largest code whose value is at most `a`, then the nearer of it and the next.
        let mut lo = 0u8;
        let mut hi = top;
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if magnitude(mid, format) <= a {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let (below, above) = (magnitude(lo, format), magnitude(lo + 1, format));
        let (db, da) = (a - below, above - a);
        if db < da || (db == da && lo & 1 == 0) {
            lo
        } else {
            lo + 1
        }
    };
    if m == 0 && !format.ocp() {
        0
    } else {
        sign | m
    }
}

/// gfx950's 6-bit and 4-bit floats (CDNA4 ISA §7.3 table 30): FP6 E2M3 (bias 1, largest
/// 7.5), BF6 E3M2 (bias 3, largest 28), FP4 E2M1 (bias 1: 0, 0.5, 1, 1.5, 2, 3, 4, 6); no
/// infinity, no NaN; the top bit is the sign.
pub(crate) mod small {
    /// The value of a magnitude `m` of `mbits` mantissa bits and exponent bias `bias`.
    fn magnitude(m: u8, mbits: u32, bias: i32) -> f64 {
        let (e, f) = (i32::from(m >> mbits), f64::from(m & ((1 << mbits) - 1)));
        let f = f / f64::from(1u32 << mbits);
        if e == 0 {
            f * 2f64.powi(1 - bias)
        } else {
            (1.0 + f) * 2f64.powi(e - bias)
        }
    }

    fn signed(code: u8, width: u32, v: f64) -> f64 {
        if code >> (width - 1) & 1 != 0 {
            -v
        } else {
            v
        }
    }

    /// A 6-bit FP6 (E2M3; `bf6`: BF6, E3M2) code as an f64 (exact).
    pub(crate) fn fp6_to_f64(code: u8, bf6: bool) -> f64 {
        let m = code & 0x1F;
        let v = if bf6 {
            magnitude(m, 2, 3)
        } else {
            magnitude(m, 3, 1)
        };
        signed(code, 6, v)
    }

    /// The value of an FP4 magnitude (3 bits).
    pub(crate) fn fp4_magnitude(m: u8) -> f64 {
        magnitude(m & 7, 1, 1)
    }

    /// A 4-bit FP4 (E2M1) code as an f64 (exact).
    pub(crate) fn fp4_to_f64(code: u8) -> f64 {
        signed(code, 4, fp4_magnitude(code))
    }

    /// `x` in FP4, rounded to nearest even, saturated to ±6, a zero keeping its sign; `None`
    /// for a NaN (FP4 has none).
    pub(crate) fn fp4_from_f64(x: f64) -> Option<u8> {
        if x.is_nan() {
            return None;
        }
        let sign = if x.is_sign_negative() { 8 } else { 0 };
        let a = x.abs();
        let mut m = 0u8;
        while m < 7 && fp4_magnitude(m + 1) <= a {
            m += 1;
        }
        if m < 7 {
            let (db, da) = (a - fp4_magnitude(m), fp4_magnitude(m + 1) - a);
            if da < db || (da == db && m & 1 == 1) {
                m += 1;
            }
        }
        Some(sign | m)
    }
}

/// `V_CVT_SR_FP8_F32`/`V_CVT_SR_BF8_F32`'s value before its conversion: `x`'s mantissa
/// plus the random dword's top bits, wrapping within the 23 mantissa bits, with `x`'s sign
/// and exponent; then rounded as [`from_f32`]. The bits added are `rnd[31:12]` (CDNA3 ISA
/// pseudocode, kept for gfx940-942's formats), and on gfx950 `rnd[31:12]` for FP8 and
/// `rnd[31:11]` for BF8, the 20 or 21 mantissa bits each format drops (CDNA4 ISA VOP3
/// opcodes 676 and 677).
pub(crate) fn stochastic(x: f32, rnd: u32, format: Format, clamp: bool) -> u8 {
    let b = x.to_bits();
    let shift = if format == Format::OcpBf8 { 11 } else { 12 };
    let mant = (b & 0x7F_FFFF).wrapping_add(rnd >> shift) & 0x7F_FFFF;
    from_f32(f32::from_bits(b & 0xFF80_0000 | mant), format, clamp)
}

/// `f32_to_snorm`/`f16_to_snorm` (Vega ISA V_CVT_PKNORM_I16_F32, V_CVT_NORM_I16_F16): `x`
/// × 32767 rounded to nearest even, saturated to −32767..=32767; NaN → 0.
pub(crate) fn to_snorm16(x: f64) -> u16 {
    if x.is_nan() {
        return 0;
    }
    (x * 32767.0).round_ties_even().clamp(-32767.0, 32767.0) as i16 as u16
}

/// `f32_to_unorm`/`f16_to_unorm`: `x` × 65535 rounded to nearest even, saturated to
/// 0..=65535; NaN → 0.
pub(crate) fn to_unorm16(x: f64) -> u16 {
    if x.is_nan() {
        return 0;
    }
    (x * 65535.0).round_ties_even().clamp(0.0, 65535.0) as u16
}

/// `f32_to_u8` of V_CVT_PK_U8_F32 and V_CVT_PKACCUM_U8_F32: `x` rounded to nearest even,
/// saturated to 0..=255; NaN → 0.
pub(crate) fn to_u8_sat(x: f32) -> u32 {
    if x.is_nan() {
        return 0;
    }
    f64::from(x).round_ties_even().clamp(0.0, 255.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnuz_values_and_rounding() {
        // E4M3FNUZ: 1.0 = exponent 8 → 0x40; the largest 240 = 0x7F; the smallest denormal
        // 2^-10 = 0x01. E5M2FNUZ: 1.0 = 0x40, 57344 = 0x7F.
        assert_eq!(to_f32(0x40, Format::Fp8), 1.0);
        assert_eq!(to_f32(0x7F, Format::Fp8), 240.0);
        assert_eq!(to_f32(0x01, Format::Fp8), 2f32.powi(-10));
        assert_eq!(to_f32(0xC0, Format::Fp8), -1.0);
        assert!(to_f32(0x80, Format::Fp8).is_nan());
        assert_eq!(to_f32(0x40, Format::Bf8), 1.0);
        assert_eq!(to_f32(0x7F, Format::Bf8), 57344.0);
        assert_eq!(from_f32(1.0, Format::Fp8, false), 0x40);
        assert_eq!(from_f32(-0.0, Format::Fp8, false), 0);
        // 1 + 1/16 is halfway between 1.0 (0x40) and 1.125 (0x41): to even 0x40; 1 + 3/16
        // between 0x41 and 0x42: 0x42.
        assert_eq!(from_f32(1.0625, Format::Fp8, false), 0x40);
        assert_eq!(from_f32(1.1875, Format::Fp8, false), 0x42);
        // 247.9 stays 240; 248 overflows: NaN, or 240 with clamp.
        assert_eq!(from_f32(247.9, Format::Fp8, false), 0x7F);
        assert_eq!(from_f32(248.0, Format::Fp8, false), 0x80);
        assert_eq!(from_f32(-1e9, Format::Fp8, true), 0xFF);
        assert_eq!(from_f32(f32::INFINITY, Format::Bf8, false), 0x80);
        assert_eq!(from_f32(f32::NAN, Format::Bf8, true), 0x80);
        // Half the smallest denormal rounds to 0 (even), a bit more to 0x01.
        assert_eq!(from_f32(2f32.powi(-11), Format::Fp8, false), 0);
        assert_eq!(from_f32(2f32.powi(-11) * 1.01, Format::Fp8, false), 1);
        // Every code converts back to itself.
        for c in 0..=255u8 {
            for f in [Format::Fp8, Format::Bf8] {
                if c != 0x80 {
                    assert_eq!(from_f32(to_f32(c, f), f, false), if c == 0 { 0 } else { c });
                }
            }
        }
    }

    /// CDNA4 ISA §7.3 table 30's facts for gfx950's OCP formats, and its FP16_OVFL rule.
    #[test]
    fn ocp_values_overflow_and_rounding() {
        let (f, b) = (Format::OcpFp8, Format::OcpBf8);
        // E4M3 bias 7: 1.0 = 0x38, max 448 = 0x7E, min normal 2^-6 = 0x08, min denormal
        // 2^-9 = 0x01; NaN 0x7F/0xFF; -0 = 0x80.
        assert_eq!(to_f32(0x38, f), 1.0);
        assert_eq!(to_f32(0x7E, f), 448.0);
        assert_eq!(to_f32(0x08, f), 2f32.powi(-6));
        assert_eq!(to_f32(0x01, f), 2f32.powi(-9));
        assert!(to_f32(0x7F, f).is_nan() && to_f32(0xFF, f).is_nan());
        assert_eq!(to_f32(0x80, f).to_bits(), (-0.0f32).to_bits());
        // E5M2 bias 15: 1.0 = 0x3C, max 57344 = 0x7B, inf 0x7C/0xFC, NaN 0x7D..0x7F,
        // min normal 2^-14 = 0x04, min denormal 2^-16 = 0x01.
        assert_eq!(to_f32(0x3C, b), 1.0);
        assert_eq!(to_f32(0x7B, b), 57344.0);
        assert_eq!(to_f32(0x7C, b), f32::INFINITY);
        assert_eq!(to_f32(0xFC, b), f32::NEG_INFINITY);
        assert!((0x7D..=0x7F).all(|c| to_f32(c, b).is_nan()));
        assert_eq!(to_f32(0x04, b), 2f32.powi(-14));
        assert_eq!(to_f32(0x01, b), 2f32.powi(-16));
        // Overflow: FP16_OVFL clamps to ±max; without it FP8 gives NaN and BF8 ±inf.
        assert_eq!(from_f32(1e6, f, true), 0x7E);
        assert_eq!(from_f32(-1e6, f, false), 0xFF);
        assert_eq!(from_f32(f32::INFINITY, f, true), 0x7E);
        assert_eq!(from_f32(f32::NEG_INFINITY, b, false), 0xFC);
        assert_eq!(from_f32(1e6, b, true), 0x7B);
        // 464 is halfway between 448 (0x7E, even) and the missing 480: stays 448; BF8's
        // 61440 is halfway between 57344 (0x7B, odd) and 65536 (inf, even): overflows.
        assert_eq!(from_f32(464.0, f, false), 0x7E);
        assert_eq!(from_f32(465.0, f, false), 0x7F);
        assert_eq!(from_f32(61440.0, b, false), 0x7C);
        assert_eq!(from_f32(61439.0, b, false), 0x7B);
        // NaN keeps its sign; -0 stays -0.
        assert_eq!(from_f32(f32::NAN, f, true), 0x7F);
        assert_eq!(from_f32(-f32::NAN, b, true), 0xFE);
        assert_eq!(from_f32(-0.0, f, false), 0x80);
        assert_eq!(from_f32(-2f32.powi(-20), b, false), 0x80);
        // Every finite code converts back to itself.
        for c in 0..=255u8 {
            for (fmt, finite) in [(f, c & 0x7F != 0x7F), (b, c & 0x7F < 0x7C)] {
                if finite {
                    assert_eq!(from_f32(to_f32(c, fmt), fmt, false), c, "{fmt:?} {c:#x}");
                }
            }
        }
        assert_eq!(Format::of(false, crate::Gfx9Target::Gfx950), f);
        assert_eq!(Format::of(true, crate::Gfx9Target::Gfx942), Format::Bf8);
    }

    /// Table 30's largest and smallest values of FP6, BF6 and FP4 (the literals grouped as
    /// sign, exponent, mantissa).
    #[test]
    #[allow(clippy::unusual_byte_groupings)]
    fn six_and_four_bit_values() {
        use super::small::*;
        // FP6 S.11.111 = 7.5, S.01.000 = 1.0, S.00.001 = 0.125; BF6 S.111.11 = 28,
        // S.001.00 = 0.25; FP4 S.11.1 = 6, S.01.0 = 1, S.0.01 = 0.5. (Table 30 gives BF6's
        // smallest denormal as "S.000.11 = 0.0675"; by the format S.000.01 is 2^-4 = 0.0625
        // and S.000.11 is 0.1875.)
        assert_eq!(fp6_to_f64(0b0_000_01, true), 0.0625);
        assert_eq!(fp6_to_f64(0b0_11_111, false), 7.5);
        assert_eq!(fp6_to_f64(0b1_01_000, false), -1.0);
        assert_eq!(fp6_to_f64(0b0_00_001, false), 0.125);
        assert_eq!(fp6_to_f64(0b0_111_11, true), 28.0);
        assert_eq!(fp6_to_f64(0b0_001_00, true), 0.25);
        assert_eq!(fp6_to_f64(0b1_000_11, true), -0.1875);
        assert_eq!(fp4_to_f64(0b0111), 6.0);
        assert_eq!(fp4_to_f64(0b1010), -1.0);
        assert_eq!(fp4_to_f64(0b0001), 0.5);
        assert_eq!(fp4_from_f64(5.0), Some(6)); // the tie 5 goes to 4 (even code 6)
        assert_eq!(fp4_from_f64(-100.0), Some(0xF));
        assert_eq!(fp4_from_f64(f64::NAN), None);
    }

    #[test]
    fn normalized_conversions() {
        assert_eq!(to_snorm16(1.0), 32767);
        assert_eq!(to_snorm16(-1.0), 0x8001);
        assert_eq!(to_snorm16(-2.0), 0x8001);
        assert_eq!(to_snorm16(f64::NAN), 0);
        assert_eq!(to_unorm16(0.5), 32768);
        assert_eq!(to_unorm16(-0.5), 0);
        assert_eq!(to_u8_sat(128.5), 128);
        assert_eq!(to_u8_sat(129.5), 130);
        assert_eq!(to_u8_sat(300.0), 255);
        assert_eq!(to_u8_sat(-3.0), 0);
    }
}
