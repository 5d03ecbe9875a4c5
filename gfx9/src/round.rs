//! Correctly rounded `a + b`, `a × b` and `a × b + c` in any of the four IEEE 754 rounding
//! modes, for the VALU's directed rounding (MODE FP_ROUND, Vega ISA §3.8; IEEE 754-2008
//! §4.3 and §6.3): the operands are finite f64 values (f16 and f32 operands convert to f64
//! exactly), the exact result is formed in integer arithmetic, and it is rounded once to
//! f16, f32 or f64.
//!
//! The exact value is `sign × m × 2^e` with a 128-bit `m`. A product of two f64 fractions
//! takes 106 bits; a sum aligns the smaller term to the larger one (its top bit at bit
//! [`TOP`]) and folds the bits shifted out into bit 0 (a "sticky" bit). That is exact
//! enough: the result keeps at least 53 + 2 bits above bit 0 whenever bits were shifted
//! out, so the sticky bit only ever decides whether a rounding is inexact, never which way
//! a tie goes.

/// FP_ROUND value: round to nearest, ties to even.
pub(super) const NEAREST: u32 = 0;
/// FP_ROUND value: round toward +∞.
pub(super) const UP: u32 = 1;
/// FP_ROUND value: round toward −∞.
pub(super) const DOWN: u32 = 2;
/// FP_ROUND value: round toward zero.
pub(super) const ZERO: u32 = 3;

/// Bit the larger term's top bit is aligned to before an addition (room for the carry
/// above it, and for the sticky bit and a guard bit below a 106-bit product).
const TOP: u32 = 125;

/// An IEEE 754 binary format: `p` bits of precision (the hidden bit included), `emin` the
/// exponent of the smallest normal number, `emax` of the largest.
#[derive(Clone, Copy, Debug)]
pub(super) struct Format {
    p: u32,
    emin: i32,
    emax: i32,
}

impl Format {
    /// Bits of the biased exponent field (its 2^bits values: zero/denormal, the normal
    /// exponents `emin..=emax`, infinity/NaN).
    fn exp_bits(self) -> u32 {
        (self.emax - self.emin + 3).ilog2()
    }

    /// The sign bit, a zero of sign `neg`.
    fn sign(self, neg: bool) -> u64 {
        u64::from(neg) << (self.p - 1 + self.exp_bits())
    }
}

/// binary16.
pub(super) const F16: Format = Format {
    p: 11,
    emin: -14,
    emax: 15,
};
/// binary32.
pub(super) const F32: Format = Format {
    p: 24,
    emin: -126,
    emax: 127,
};
/// binary64.
pub(super) const F64: Format = Format {
    p: 53,
    emin: -1022,
    emax: 1023,
};

/// A finite value `(-1)^neg × m × 2^e`, exact.
#[derive(Clone, Copy, Debug)]
struct Exact {
    neg: bool,
    m: u128,
    e: i32,
}

impl Exact {
    /// A finite f64 (NaN and infinities are the caller's).
    fn of(x: f64) -> Exact {
        let b = x.to_bits();
        let bexp = (b >> 52 & 0x7FF) as i32;
        let frac = u128::from(b & ((1 << 52) - 1));
        let (m, e) = if bexp == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, bexp - 1075)
        };
        Exact {
            neg: b >> 63 != 0,
            m,
            e,
        }
    }

    fn mul(self, o: Exact) -> Exact {
        Exact {
            neg: self.neg != o.neg,
            m: self.m * o.m,
            e: self.e + o.e,
        }
    }

    /// The nonzero `self` with its top bit at bit [`TOP`].
    fn aligned(self) -> Exact {
        let shift = TOP as i32 - (127 - self.m.leading_zeros() as i32);
        Exact {
            m: self.m << shift,
            e: self.e - shift,
            ..self
        }
    }
}

/// `x + y`, exact but for the sticky bit (see the module doc). `None` when the sum is
/// exactly zero.
fn add(x: Exact, y: Exact) -> Option<Exact> {
    if x.m == 0 && y.m == 0 {
        return None;
    }
    if x.m == 0 {
        return Some(y);
    }
    if y.m == 0 {
        return Some(x);
    }
    let (x, y) = (x.aligned(), y.aligned());
    let (big, small) = if (x.e, x.m) >= (y.e, y.m) {
        (x, y)
    } else {
        (y, x)
    };
    let shift = (big.e - small.e) as u32;
    let sm = if shift >= 128 {
        1 // all of it below bit 0: sticky
    } else {
        let kept = small.m >> shift;
        kept | u128::from(kept << shift != small.m)
    };
    let m = if big.neg == small.neg {
        big.m + sm
    } else {
        big.m - sm
    };
    (m != 0).then_some(Exact { m, ..big })
}

/// `x` rounded to format `f` by FP_ROUND value `rm`, as raw bits of `f`.
fn round(x: Exact, f: Format, rm: u32) -> u64 {
    let frac_bits = f.p - 1;
    let sign = f.sign(x.neg);
    let len = 128 - x.m.leading_zeros() as i32;
    let top = x.e + len - 1;
    // The exponent of the result's last fraction bit (the quantum).
    let q = top.max(f.emin) - frac_bits as i32;
    let (mut kept, rem_nonzero, above_half, half) = if q <= x.e {
        (x.m << (x.e - q) as u32, false, false, false)
    } else {
        let shift = (q - x.e) as u32;
        if shift > 128 {
            (0, true, false, false)
        } else if shift == 128 {
            let half = 1u128 << 127;
            (0, true, x.m > half, x.m == half)
        } else {
            let rem = x.m & ((1u128 << shift) - 1);
            let h = 1u128 << (shift - 1);
            (x.m >> shift, rem != 0, rem > h, rem == h)
        }
    };
    let up = match rm {
        NEAREST => above_half || half && kept & 1 != 0,
        UP => rem_nonzero && !x.neg,
        DOWN => rem_nonzero && x.neg,
        _ => false,
    };
    let mut q = q;
    if up {
        kept += 1;
        if kept == 1 << f.p {
            kept >>= 1;
            q += 1;
        }
    }
    if q + frac_bits as i32 > f.emax {
        // Overflow: to infinity, or to the largest finite value when the mode rounds
        // toward zero on this side.
        let to_max = match rm {
            ZERO => true,
            UP => x.neg,
            DOWN => !x.neg,
            _ => false,
        };
        let inf = ((1 << f.exp_bits()) - 1) << frac_bits;
        return sign | if to_max { inf - 1 } else { inf };
    }
    let kept = kept as u64;
    let bits = if kept >> frac_bits == 0 {
        kept // denormal (or zero): biased exponent 0
    } else {
        let biased = (q + frac_bits as i32 + f.emax) as u64;
        biased << frac_bits | kept & ((1 << frac_bits) - 1)
    };
    sign | bits
}

/// `a × b + c` (the product exact, one rounding) rounded to `f` by FP_ROUND value `rm`
/// (with `b` = 1 it is `a + c`). An exact zero result is −0
/// when both terms are −0 (or negative zeros' sum), +0 when their signs differ except
/// under round toward −∞, where it is −0 (IEEE 754 §6.3). `None` when an operand is
/// infinite or NaN: the result is then the same in every mode, and the caller's host
/// operation gives it.
pub(super) fn fma(a: f64, b: f64, c: f64, f: Format, rm: u32) -> Option<u64> {
    if !(a.is_finite() && b.is_finite() && c.is_finite()) {
        return None;
    }
    let p = Exact::of(a).mul(Exact::of(b));
    let c = Exact::of(c);
    Some(match add(p, c) {
        Some(x) => round(x, f, rm),
        None => {
            // Both terms zero, or opposite values.
            let both_zero = p.m == 0 && c.m == 0;
            let neg = if both_zero && p.neg == c.neg {
                p.neg
            } else {
                rm == DOWN
            };
            f.sign(neg)
        }
    })
}

/// `a + b` rounded to `f` by `rm` (see [`fma`]).
pub(super) fn add2(a: f64, b: f64, f: Format, rm: u32) -> Option<u64> {
    fma(a, 1.0, b, f, rm)
}

/// `a × b` rounded to `f` by `rm` (see [`fma`]); a zero product has the sign of the
/// product in every mode.
pub(super) fn mul(a: f64, b: f64, f: Format, rm: u32) -> Option<u64> {
    if !(a.is_finite() && b.is_finite()) {
        return None;
    }
    let p = Exact::of(a).mul(Exact::of(b));
    Some(if p.m == 0 {
        f.sign(p.neg)
    } else {
        round(p, f, rm)
    })
}

/// `(a × b + c) × 2^n` (the product, sum and scaling exact, one rounding) rounded to `f` by
/// `rm`: `V_DIV_FMAS`'s scaled fused multiply-add, and with `b` = 1, `c` = 0 the exact scaling
/// of `V_LDEXP` and the conversions (`n` = 0). A zero result keeps the sign [`fma`] gives
/// it. `None` when an operand is infinite or NaN (see [`fma`]).
pub(super) fn fma_scaled(a: f64, b: f64, c: f64, n: i32, f: Format, rm: u32) -> Option<u64> {
    if !(a.is_finite() && b.is_finite() && c.is_finite()) {
        return None;
    }
    let p = Exact::of(a).mul(Exact::of(b));
    match add(p, Exact::of(c)) {
        // Beyond ±4096 every finite nonzero value of every format overflows or underflows
        // alike; the clamp keeps the exponent arithmetic in range.
        Some(x) => Some(round(
            Exact {
                e: x.e + n.clamp(-4096, 4096),
                ..x
            },
            f,
            rm,
        )),
        None => fma(a, b, c, f, rm),
    }
}

/// `x × 2^n` rounded to `f` by `rm` (see [`fma_scaled`]); `n` = 0 rounds `x` to `f`, and a
/// zero keeps its sign.
pub(super) fn scaled(x: f64, n: i32, f: Format, rm: u32) -> Option<u64> {
    if x == 0.0 {
        return x.is_finite().then(|| f.sign(x.is_sign_negative()));
    }
    fma_scaled(x, 1.0, 0.0, n, f, rm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of f64 bit patterns biased toward edge cases (the tests
    /// need no outside randomness).
    fn values(n: usize, seed: u64) -> impl Iterator<Item = u64> {
        let mut s = seed;
        (0..n).map(move |_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        })
    }

    #[test]
    fn nearest_matches_the_host_in_every_format() {
        // Round to nearest even is what the host's arithmetic does: f64 directly, f32 and
        // f16 operands in f64 where the result is exact before one rounding (f32 products
        // and f16 sums and products are; f32 sums too).
        for (i, bits) in values(200_000, 0x9E37_79B9_7F4A_7C15).enumerate() {
            let k = (i % 7) as u32;
            let a = f64::from_bits(bits);
            let b = f64::from_bits(bits.rotate_left(17 + k) ^ 0x5555);
            let c = f64::from_bits(bits.rotate_right(9 + k));
            if let Some(r) = fma(a, b, c, F64, NEAREST) {
                let h = a.mul_add(b, c);
                assert!(
                    r == h.to_bits() || (h == 0.0 && f64::from_bits(r) == 0.0),
                    "fma({a:e}, {b:e}, {c:e}) = {:e}, host {h:e}",
                    f64::from_bits(r)
                );
            }
            if let Some(r) = add2(a, b, F64, NEAREST) {
                assert_eq!(r, (a + b).to_bits(), "{a:e} + {b:e}");
            }
            if let Some(r) = mul(a, b, F64, NEAREST) {
                assert_eq!(r, (a * b).to_bits(), "{a:e} * {b:e}");
            }
            let (x, y, z) = (
                f32::from_bits(bits as u32),
                f32::from_bits((bits >> 32) as u32),
                f32::from_bits((bits >> 16) as u32),
            );
            let (dx, dy, dz) = (f64::from(x), f64::from(y), f64::from(z));
            if let Some(r) = fma(dx, dy, dz, F32, NEAREST) {
                assert_eq!(
                    r as u32,
                    x.mul_add(y, z).to_bits(),
                    "fma32({x:e}, {y:e}, {z:e})"
                );
            }
            if let Some(r) = add2(dx, dy, F32, NEAREST) {
                assert_eq!(r as u32, (x + y).to_bits(), "{x:e} + {y:e}");
            }
            if let Some(r) = mul(dx, dy, F32, NEAREST) {
                assert_eq!(r as u32, (x * y).to_bits(), "{x:e} * {y:e}");
            }
        }
    }

    #[test]
    fn f16_nearest_matches_the_f16_module() {
        // Every f16 sum and product of a grid of operands, against f16.rs's own rounding.
        let grid: Vec<u16> = (0..=0xFFFFu16)
            .step_by(97)
            .chain([0, 0x8000, 1, 0x3C00, 0x7BFF])
            .collect();
        for &x in &grid {
            for &y in &grid {
                let (dx, dy) = (crate::f16::to_f64(x), crate::f16::to_f64(y));
                if let Some(r) = add2(dx, dy, F16, NEAREST) {
                    assert_eq!(r as u16, crate::f16::add(x, y), "{x:#x} + {y:#x}");
                }
                if let Some(r) = mul(dx, dy, F16, NEAREST) {
                    assert_eq!(r as u16, crate::f16::mul(x, y), "{x:#x} * {y:#x}");
                }
            }
        }
    }

    /// The f64 value next to finite `x` in direction `up`.
    fn step(x: f64, up: bool) -> f64 {
        if x == 0.0 {
            return if up {
                f64::from_bits(1)
            } else {
                -f64::from_bits(1)
            };
        }
        let b = x.to_bits();
        f64::from_bits(if (x > 0.0) == up { b + 1 } else { b - 1 })
    }

    #[test]
    fn directed_modes_bracket_the_exact_result() {
        // For f64 sums the exact result is RN + e (TwoSum, exact away from overflow): the
        // directed results are RN itself when e is 0, else the neighbour of RN on e's side
        // for the mode that rounds that way.
        for (i, bits) in values(200_000, 0x2545_F491_4F6C_DD1D).enumerate() {
            let a = f64::from_bits(bits);
            let b = f64::from_bits(bits.rotate_left(23 + (i % 5) as u32));
            let s = a + b;
            if !s.is_finite() || s.abs() > 1e300 || !a.is_finite() || !b.is_finite() {
                continue;
            }
            let bb = s - a;
            let e = (a - (s - bb)) + (b - bb);
            let ru = f64::from_bits(add2(a, b, F64, UP).unwrap());
            let rd = f64::from_bits(add2(a, b, F64, DOWN).unwrap());
            let rz = f64::from_bits(add2(a, b, F64, ZERO).unwrap());
            let (want_u, want_d) = if e > 0.0 {
                (step(s, true), s)
            } else if e < 0.0 {
                (s, step(s, false))
            } else {
                (s, s)
            };
            assert_eq!(ru, want_u, "{a:e} + {b:e} up");
            assert_eq!(rd, want_d, "{a:e} + {b:e} down");
            assert_eq!(
                rz,
                if s > 0.0 || want_u == 0.0 {
                    want_d
                } else {
                    want_u
                },
                "{a:e} + {b:e} zero"
            );
        }
    }

    #[test]
    fn worked_cases() {
        // 1 + 2^-60: inexact by a hair above 1.
        let tiny = 2f64.powi(-60);
        assert_eq!(add2(1.0, tiny, F64, UP), Some(step(1.0, true).to_bits()));
        assert_eq!(add2(1.0, tiny, F64, DOWN), Some(1f64.to_bits()));
        assert_eq!(add2(-1.0, -tiny, F64, ZERO), Some((-1f64).to_bits()));
        assert_eq!(
            add2(-1.0, -tiny, F64, DOWN),
            Some(step(-1.0, false).to_bits())
        );
        // The same far below: 1 + 2^-1074 (the sticky bit alone decides).
        let d = f64::from_bits(1);
        assert_eq!(add2(1.0, d, F64, UP), Some(step(1.0, true).to_bits()));
        assert_eq!(add2(1.0, -d, F64, UP), Some(1f64.to_bits()));
        assert_eq!(add2(1.0, -d, F64, ZERO), Some(step(1.0, false).to_bits()));
        // Exact zeros: x − x is +0 but −0 toward −∞; −0 + −0 is −0.
        assert_eq!(add2(3.0, -3.0, F64, UP), Some(0));
        assert_eq!(add2(3.0, -3.0, F64, DOWN), Some((-0f64).to_bits()));
        assert_eq!(add2(-0.0, -0.0, F64, UP), Some((-0f64).to_bits()));
        assert_eq!(mul(-0.0, 5.0, F64, UP), Some((-0f64).to_bits()));
        assert_eq!(mul(1.0, 0.0, F64, DOWN), Some(0));
        // Overflow: toward zero stops at the largest finite value.
        assert_eq!(mul(f64::MAX, 2.0, F64, ZERO), Some(f64::MAX.to_bits()));
        assert_eq!(mul(f64::MAX, 2.0, F64, DOWN), Some(f64::MAX.to_bits()));
        assert_eq!(
            mul(f64::MAX, -2.0, F64, DOWN),
            Some(f64::NEG_INFINITY.to_bits())
        );
        assert_eq!(mul(f64::MAX, -2.0, F64, UP), Some((-f64::MAX).to_bits()));
        // Underflow: the smallest denormal times a half rounds up to it, down to 0.
        assert_eq!(mul(d, 0.5, F64, UP), Some(1));
        assert_eq!(mul(d, 0.5, F64, DOWN), Some(0));
        assert_eq!(mul(d, 0.5, F64, NEAREST), Some(0)); // a tie, to even
        assert_eq!(mul(d, 0.75, F64, NEAREST), Some(1));
        // f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 (to even: 1), up: 0x3C01.
        let t = 2f64.powi(-11);
        assert_eq!(add2(1.0, t, F16, NEAREST), Some(0x3C00));
        assert_eq!(add2(1.0, t, F16, UP), Some(0x3C01));
        assert_eq!(add2(65504.0, 16.0, F16, ZERO), Some(0x7BFF));
        assert_eq!(add2(65504.0, 16.0, F16, UP), Some(0x7C00));
        // f32 fma whose f64 product + c would double-round: (1 + 2^-23)(1 − 2^-23) − 1
        // = −2^-46 exactly.
        let e = 2f64.powi(-23);
        assert_eq!(
            fma(1.0 + e, 1.0 - e, -1.0, F32, NEAREST),
            Some(u64::from((-(2f32.powi(-46))).to_bits()))
        );
    }

    #[test]
    fn scaled_rounds_only_at_the_ends_of_the_range() {
        let f32_bits = |x: f32| Some(u64::from(x.to_bits()));
        // In range: exact in every mode.
        for rm in [NEAREST, UP, DOWN, ZERO] {
            assert_eq!(scaled(1.5, 3, F32, rm), f32_bits(12.0));
            assert_eq!(scaled(-0.0, 100, F32, rm), f32_bits(-0.0));
        }
        // Below the smallest denormal: toward +inf the smallest denormal, else zero.
        assert_eq!(scaled(1.0, -160, F32, UP), Some(1));
        assert_eq!(scaled(1.0, -160, F32, ZERO), Some(0));
        assert_eq!(scaled(-1.0, -160, F32, DOWN), Some(0x8000_0001));
        assert_eq!(scaled(-1.0, -160, F32, UP), Some(0x8000_0000));
        // Half the smallest denormal: a tie, to even (zero) under round to nearest.
        assert_eq!(scaled(1.0, -150, F32, NEAREST), Some(0));
        assert_eq!(scaled(1.5, -150, F32, NEAREST), Some(1));
        // Overflow: toward zero the largest finite value; an exponent beyond i32's clamp.
        assert_eq!(scaled(1.0, 128, F32, ZERO), f32_bits(f32::MAX));
        assert_eq!(scaled(1.0, i32::MAX, F16, UP), Some(0x7C00));
        assert_eq!(scaled(-1.0, i32::MAX, F16, UP), Some(0xFBFF));
        assert_eq!(scaled(1.0, i32::MIN, F64, UP), Some(1));
        assert_eq!(scaled(f64::INFINITY, -5, F32, UP), None);
        // The scaled fma: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46, times 2^-100, rounds once.
        let e = 2f64.powi(-23);
        assert_eq!(
            fma_scaled(1.0 + e, 1.0 - e, -1.0, -100, F32, UP),
            Some(0x8000_0008) // -2^-146: -8 × the smallest denormal, exact
        );
        assert_eq!(
            fma_scaled(1.0 + e, 1.0 - e, -1.0, -110, F32, DOWN),
            Some(0x8000_0001)
        );
        assert_eq!(fma_scaled(1.0, -1.0, 1.0, 64, F32, DOWN), f32_bits(-0.0));
    }
}
