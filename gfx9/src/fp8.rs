//! The 8-bit float formats of the gfx940 FP8/BF8 conversions and MFMAs, and the normalized
//! and saturating integer conversions of the VOP3 pack instructions.
//!
//! gfx940, gfx941 and gfx942 use AMD's "FNUZ" formats (CDNA3 ISA "Data types"; LLVM's
//! `Float8E4M3FNUZ`/`Float8E5M2FNUZ`): FP8 is E4M3 with exponent bias 8, BF8 is E5M2 with
//! bias 16; neither has infinities nor a negative zero, and the one NaN is 0x80. Their
//! largest finite values are 240 (0x7F) and 57344 (0x7F).
//!
//! Conversions from f32 round to nearest even (the CDNA3 ISA's V_CVT_PK_FP8_F32 pseudocode
//! forces ROUND_NEAREST_EVEN); a NaN gives 0x80; a value beyond the largest finite one after
//! rounding (±∞ included) gives 0x80, or with the instruction's `clamp` the largest finite
//! value of its sign; a result that rounds to zero is 0x00 (there is no −0).

/// An 8-bit float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// E4M3, bias 8 (gfx940 FP8).
    Fp8,
    /// E5M2, bias 16 (gfx940 BF8).
    Bf8,
}

impl Format {
    /// (mantissa bits, exponent bias).
    const fn layout(self) -> (u32, i32) {
        match self {
            Format::Fp8 => (3, 8),
            Format::Bf8 => (2, 16),
        }
    }
}

/// The value of the 7-bit magnitude `m` (0..=0x7F) of `format`.
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

/// `bits` of `format` as an f32 (exact); 0x80 is the default NaN 0x7FC0_0000.
pub(crate) fn to_f32(bits: u8, format: Format) -> f32 {
    if bits == 0x80 {
        return f32::from_bits(0x7FC0_0000);
    }
    let v = magnitude(bits & 0x7F, format) as f32;
    if bits & 0x80 != 0 {
        -v
    } else {
        v
    }
}

/// `x` in `format`, rounded to nearest even (see the module doc for NaN, overflow and
/// `clamp`).
pub(crate) fn from_f32(x: f32, format: Format, clamp: bool) -> u8 {
    if x.is_nan() {
        return 0x80;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = f64::from(x.abs());
    let max = magnitude(0x7F, format);
    // Half an ulp of the top binade: the largest value and the next one the format would
    // have are that far from their midpoint.
    let half_ulp = (max - magnitude(0x7E, format)) / 2.0;
    let m: u8 = if a >= max {
        // Ties go to the even (missing) code, so exactly halfway overflows.
        if a < max + half_ulp || clamp {
            0x7F
        } else {
            return 0x80;
        }
    } else {
        // The largest code whose value is at most `a`, then the nearer of it and the next.
        let mut lo = 0u8;
        let mut hi = 0x7Fu8;
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
    if m == 0 {
        0
    } else {
        sign | m
    }
}

/// `V_CVT_SR_FP8_F32`/`V_CVT_SR_BF8_F32`'s value before its conversion (CDNA3 ISA
/// pseudocode): `x`'s mantissa plus `rnd[31:12]`, wrapping within the 23 mantissa bits,
/// with `x`'s sign and exponent; then rounded as [`from_f32`].
pub(crate) fn stochastic(x: f32, rnd: u32, format: Format, clamp: bool) -> u8 {
    let b = x.to_bits();
    let mant = (b & 0x7F_FFFF).wrapping_add(rnd >> 12) & 0x7F_FFFF;
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
