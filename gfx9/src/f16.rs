//! IEEE 754 binary16 (`f16`) arithmetic on raw bits, for the packed-math (VOP3P) and
//! packed-f16 atomic instructions: exact widening to f32/f64 and one correctly rounded
//! (round-to-nearest-even) narrowing, so every operation gives the bits of an IEEE f16 unit
//! with denormals kept (the gfx9 default for f16: MODE's FP16/FP64 denormal bits set, Vega
//! ISA §3.6 "Mode register").
//!
//! Sums and products of f16 values are exact in f64 (at most 11+11 significant bits within an
//! exponent span below 2^53), so `add`/`mul` round once. `fma` keeps the one rounding by
//! carrying the error of the f64 sum as a sticky bit into the narrowing.

/// A quiet NaN (the canonical one the hardware produces: sign 0, exponent all ones, MSB of
/// the mantissa set).
pub(crate) const QNAN: u16 = 0x7E00;

/// The exact f64 value of the f16 `bits`.
pub(crate) fn to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (bits >> 10 & 0x1F) as i32;
    let man = (bits & 0x3FF) as f64;
    if exp == 0x1F {
        if bits & 0x3FF == 0 {
            return sign * f64::INFINITY;
        }
        // Keep the payload and the quiet bit: f64 NaN with the f16 mantissa at the top.
        let payload = ((bits & 0x3FF) as u64) << 42;
        let s = ((bits >> 15) as u64) << 63;
        return f64::from_bits(s | 0x7FF0_0000_0000_0000 | payload);
    }
    if exp == 0 {
        return sign * man * f64::from_bits(0x3E70_0000_0000_0000); // 2^-24
    }
    sign * (1024.0 + man) * pow2(exp - 25)
}

fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `x` rounded to the nearest f16 (ties to even), with `sticky` the sign of what was lost
/// when `x` itself was rounded from an exact value (`exact = x + err`): a nonzero `sticky`
/// breaks a tie that `x` lands on exactly. NaN → [`QNAN`] with the sign and top payload bits
/// kept and the quiet bit set.
pub(crate) fn from_f64_sticky(x: f64, sticky: f64) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 63) as u16) << 15;
    if x.is_nan() {
        return sign | QNAN | ((b >> 42) as u16 & 0x3FF);
    }
    let a = x.abs();
    if a == f64::INFINITY {
        return sign | 0x7C00;
    }
    if a == 0.0 {
        // An exact zero with a lost part of the same sign can only round to zero anyway.
        return sign;
    }
    // The loss relative to |x|: positive when the exact magnitude is larger.
    let lost = if x > 0.0 { sticky } else { -sticky };
    // Quantum (ulp) of the f16 result: 2^-24 for subnormals, else 2^(e-10).
    let e = ((a.to_bits() >> 52) as i32) - 1023;
    let q_exp = if e < -14 { -24 } else { e - 10 };
    let q = pow2(q_exp);
    // a / q is exact (power-of-two scaling, no f64 underflow in this range).
    let scaled = a / q;
    let floor = scaled.floor();
    let frac = scaled - floor;
    let mut n = floor as u64;
    let up = if frac > 0.5 {
        true
    } else if frac < 0.5 {
        false
    } else if lost > 0.0 {
        true
    } else if lost < 0.0 {
        false
    } else {
        n & 1 == 1
    };
    if up {
        n += 1;
    }
    // Rebuild: value = n * 2^q_exp.
    let mut exp_field = (q_exp + 25) as i64; // biased exponent if n is in [1024, 2048)
    if e < -14 {
        // Subnormal range: n < 1024 is a subnormal mantissa, n == 1024 the smallest normal.
        if n < 1024 {
            return sign | n as u16;
        }
        exp_field = 1;
        n -= 1024;
        return sign | (exp_field as u16) << 10 | n as u16;
    }
    if n == 2048 {
        n = 1024;
        exp_field += 1;
    }
    if exp_field >= 0x1F {
        return sign | 0x7C00;
    }
    sign | (exp_field as u16) << 10 | (n - 1024) as u16
}

/// `x` rounded to the nearest f16, ties to even.
pub(crate) fn from_f64(x: f64) -> u16 {
    from_f64_sticky(x, 0.0)
}

/// f32 bits `x` to f16 rounded toward zero (Vega ISA `V_CVT_PKRTZ_F16_F32`): a finite value
/// never becomes an infinity (at most ±65504), an infinity stays one, a NaN gives a quiet NaN
/// with the sign and the top of the payload kept, and values below f16's denormals give ±0.
pub(crate) fn from_f32_rtz(x: u32) -> u16 {
    let sign = (x >> 16 & 0x8000) as u16;
    let exp = (x >> 23 & 0xFF) as i32;
    let frac = x & 0x7F_FFFF;
    if exp == 0xFF {
        return sign
            | if frac == 0 {
                0x7C00
            } else {
                0x7E00 | (frac >> 13) as u16
            };
    }
    if exp == 0 {
        return sign; // an f32 denormal is far below 2^-24
    }
    let e = exp - 127;
    if e > 15 {
        return sign | 0x7BFF;
    }
    if e >= -14 {
        return sign | ((e + 15) as u16) << 10 | (frac >> 13) as u16;
    }
    // (2^23 + frac) * 2^(e - 23), in units of the f16 denormal 2^-24, truncated.
    let shift = -(e + 1);
    sign | if shift >= 32 {
        0
    } else {
        ((0x80_0000 | frac) >> shift) as u16
    }
}

/// Quiets a NaN operand result the way IEEE arithmetic does (a NaN input propagates with the
/// quiet bit set); `None` when neither is a NaN.
fn nan2(a: u16, b: u16) -> Option<u16> {
    let is_nan = |x: u16| x & 0x7C00 == 0x7C00 && x & 0x3FF != 0;
    if is_nan(a) {
        Some(a | 0x200)
    } else if is_nan(b) {
        Some(b | 0x200)
    } else {
        None
    }
}

/// `a + b`, one rounding.
pub(crate) fn add(a: u16, b: u16) -> u16 {
    if let Some(n) = nan2(a, b) {
        return n;
    }
    from_f64(to_f64(a) + to_f64(b))
}

/// `a − b`, one rounding; a NaN operand propagates quieted with its own sign (as for `add`).
pub(crate) fn sub(a: u16, b: u16) -> u16 {
    if let Some(n) = nan2(a, b) {
        return n;
    }
    from_f64(to_f64(a) - to_f64(b))
}

/// `a * b`, one rounding.
pub(crate) fn mul(a: u16, b: u16) -> u16 {
    if let Some(n) = nan2(a, b) {
        return n;
    }
    from_f64(to_f64(a) * to_f64(b))
}

/// `a * b + c` with one rounding (the product is exact in f64; the sum's rounding error is
/// carried as a sticky bit).
pub(crate) fn fma(a: u16, b: u16, c: u16) -> u16 {
    if let Some(n) = nan2(a, b) {
        return n;
    }
    if let Some(n) = nan2(c, c) {
        return n;
    }
    let p = to_f64(a) * to_f64(b);
    let z = to_f64(c);
    let s = p + z;
    if !s.is_finite() {
        return from_f64(s);
    }
    // Two-sum: err = (p + z) - s exactly.
    let bb = s - p;
    let err = (p - (s - bb)) + (z - bb);
    from_f64_sticky(s, err)
}

/// `x` clamped to [0, 1] (the VOP3P `clamp` bit): NaN → +0, −0 → +0.
pub(crate) fn clamp01(x: u16) -> u16 {
    let nan = x & 0x7C00 == 0x7C00 && x & 0x3FF != 0;
    if nan || x & 0x8000 != 0 {
        0
    } else if x > 0x3C00 {
        0x3C00
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_f16() {
        for bits in 0..=u16::MAX {
            let x = to_f64(bits);
            let back = from_f64(x);
            if x.is_nan() {
                assert_eq!(back, bits | 0x200, "{bits:#06x}");
            } else {
                assert_eq!(back, bits, "{bits:#06x}");
            }
        }
    }

    #[test]
    fn rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1.0 (0x3C00) and 1 + 2^-10 (0x3C01): to even.
        assert_eq!(from_f64(1.0 + pow2(-11)), 0x3C00);
        assert_eq!(from_f64(1.0 + 3.0 * pow2(-11)), 0x3C02);
        // A sticky loss above the tie rounds up.
        assert_eq!(from_f64_sticky(1.0 + pow2(-11), 1e-30), 0x3C01);
        // 65520 rounds to infinity; 65519 to 65504.
        assert_eq!(from_f64(65520.0), 0x7C00);
        assert_eq!(from_f64(65519.0), 0x7BFF);
        // Half the smallest subnormal is a tie to 0; a bit more rounds to it.
        assert_eq!(from_f64(pow2(-25)), 0);
        assert_eq!(from_f64(pow2(-25) * 1.5), 1);
        // The largest subnormal plus a half quantum rounds (to even) to the smallest normal.
        assert_eq!(from_f64(1023.5 * pow2(-24)), 0x0400);
        assert_eq!(from_f64(-2.0), 0xC000);
        // The top of the smallest normal binade rounds up into the next binade.
        assert_eq!(from_f64(2047.75 * pow2(-24)), 0x0800);
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: one rounding gives 1 + 2^-9 (0x3C02).
        assert_eq!(fma(0x3C01, 0x3C01, 0), 0x3C02);
        // 1.5 * (1 + 2^-10) = 1.5 + 2^-10 + 2^-11 is a tie between 0x3E01 and 0x3E02: to
        // even alone, but the smallest subnormal added or subtracted decides it.
        assert_eq!(fma(0x3E00, 0x3C01, 0), 0x3E02);
        assert_eq!(fma(0x3E00, 0x3C01, 0x0001), 0x3E02);
        assert_eq!(fma(0x3E00, 0x3C01, 0x8001), 0x3E01);
        // inf + -inf is NaN; NaN inputs come back quiet.
        assert_eq!(add(0x7C00, 0xFC00) & 0x7E00, 0x7E00);
        assert_eq!(mul(0x7C01, 0x3C00), 0x7E01);
    }
}
