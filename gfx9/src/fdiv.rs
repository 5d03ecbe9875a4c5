//! IEEE division support of the gfx9 VALU: `v_div_scale`, `v_div_fmas`, `v_div_fixup`,
//! `v_ldexp`, `v_frexp_mant`/`v_frexp_exp`, and the exact rounding they need.
//!
//! clang lowers every IEEE f32/f64 `a / b` (LLVM `SITargetLowering::LowerFDIV32/64`) to:
//! `d' = div_scale(b, b, a)`, `n' = div_scale(a, b, a)` (VCC from the second), a reciprocal
//! `r ≈ 1/d'` refined by fused multiply-adds, a quotient `q ≈ n'·r` and remainder
//! `rem = fma(-d', q, n')`, then `div_fmas(rem, r, q)` = `q + rem·r` rescaled where VCC says
//! the scaling changed the quotient, and `div_fixup(result, b, a)` for zeros, infinities and
//! NaNs. The semantics here are those of the Vega ISA guide (§12.7 "VOP3", `V_DIV_SCALE_*`,
//! `V_DIV_FMAS_*`, `V_DIV_FIXUP_*`) with its thresholds (2^±64 / exponent difference 96 for
//! f32, 2^±128 / 768 for f64), read so that the whole sequence gives the correctly rounded
//! quotient (the point of the instructions):
//! - `div_scale` scales its first source (the numerator or the denominator) so that neither
//!   the reciprocal nor the remainders of the sequence leave the normal range, and sets VCC
//!   when the quotient itself changed by the scale (a huge ratio, where the denominator grows,
//!   or a subnormal quotient, where the numerator grows or a huge denominator shrinks);
//! - `div_fmas` computes `S0·S1 + S2` with one rounding, scaled when VCC is set by 2^+64
//!   (2^+128) if the quotient estimate `S2` is at least 2 (exponent above the bias), else by
//!   2^−64 (2^−128) — the rescaling happens before the single rounding, so a subnormal
//!   quotient is rounded once;
//! - `div_fixup` gives the IEEE results of the special operands from the original numerator
//!   and denominator (and ±∞ when the quotient overflowed into a NaN inside the sequence), and
//!   otherwise the magnitude of `S0` with the quotient's sign.

/// An IEEE 754 binary format: exponent and fraction field widths in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Format {
    exp: u32,
    frac: u32,
}

/// binary16 (f16).
pub(super) const HALF: Format = Format { exp: 5, frac: 10 };
/// binary32 (f32).
pub(super) const SINGLE: Format = Format { exp: 8, frac: 23 };
/// binary64 (f64).
pub(super) const DOUBLE: Format = Format { exp: 11, frac: 52 };

impl Format {
    const fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }
    const fn max_exp_field(self) -> u64 {
        (1 << self.exp) - 1
    }
    const fn sign_bit(self) -> u64 {
        1 << (self.exp + self.frac)
    }
    /// The biased exponent field of `bits`.
    pub(super) const fn exponent(self, bits: u64) -> i32 {
        ((bits >> self.frac) & self.max_exp_field()) as i32
    }
    const fn is_nan(self, bits: u64) -> bool {
        self.exponent(bits) as u64 == self.max_exp_field() && bits & ((1 << self.frac) - 1) != 0
    }
    const fn is_inf(self, bits: u64) -> bool {
        bits & !self.sign_bit() == self.max_exp_field() << self.frac
    }
    const fn is_zero(self, bits: u64) -> bool {
        bits & !self.sign_bit() == 0
    }
    const fn is_subnormal(self, bits: u64) -> bool {
        self.exponent(bits) == 0 && !self.is_zero(bits)
    }
    const fn quiet(self, bits: u64) -> u64 {
        bits | 1 << (self.frac - 1)
    }
    const fn default_nan(self) -> u64 {
        self.max_exp_field() << self.frac | 1 << (self.frac - 1)
    }
    const fn inf(self, neg: bool) -> u64 {
        self.max_exp_field() << self.frac | if neg { self.sign_bit() } else { 0 }
    }

    /// A finite value as (negative, integer significand, exponent): `±m × 2^e`.
    pub(super) const fn split(self, bits: u64) -> (bool, u64, i32) {
        let neg = bits & self.sign_bit() != 0;
        let field = self.exponent(bits);
        let frac = bits & ((1 << self.frac) - 1);
        let min_e = 1 - self.bias() - self.frac as i32;
        if field == 0 {
            (neg, frac, min_e)
        } else {
            (neg, frac | 1 << self.frac, min_e + field - 1)
        }
    }

    /// `±m × 2^e` rounded to nearest even in this format (overflow to ±∞, gradual underflow
    /// through the subnormals, a zero keeps the sign): the bits.
    pub(super) fn round(self, neg: bool, m: u128, e: i32) -> u64 {
        self.round_mode(neg, m, e, false)
    }

    /// `±m × 2^e` rounded toward zero (truncated) in this format; overflow gives ±∞.
    pub(super) fn round_toward_zero(self, neg: bool, m: u128, e: i32) -> u64 {
        self.round_mode(neg, m, e, true)
    }

    fn round_mode(self, neg: bool, m: u128, e: i32, rtz: bool) -> u64 {
        let sign = if neg { self.sign_bit() } else { 0 };
        if m == 0 {
            return sign;
        }
        let p = self.frac as i32 + 1;
        let emin = 1 - self.bias();
        let top = e + (128 - m.leading_zeros() as i32) - 1;
        let mut q = top.max(emin) - (p - 1);
        let sh = i64::from(q) - i64::from(e);
        let mut kept = if sh <= 0 {
            m << (-sh) as u32
        } else if sh > 128 {
            0
        } else if sh == 128 {
            u128::from(!rtz && m > 1 << 127)
        } else {
            let kept = m >> sh;
            let rem = m & ((1u128 << sh) - 1);
            let half = 1u128 << (sh - 1);
            kept + u128::from(!rtz && (rem > half || rem == half && kept & 1 == 1))
        };
        if kept >> p != 0 {
            kept >>= 1;
            q += 1;
        }
        if kept == 0 {
            return sign;
        }
        let kept = kept as u64;
        if kept >> (p - 1) == 0 {
            return sign | kept; // subnormal (q = emin - (p - 1))
        }
        let field = i64::from(q) + i64::from(p - 1) + i64::from(self.bias());
        if field >= self.max_exp_field() as i64 {
            return sign | self.inf(false);
        }
        sign | (field as u64) << self.frac | (kept & ((1 << self.frac) - 1))
    }
}

/// `S0·S1 + S2` exactly, times `2^scale`, rounded once to `f` (`a`, `b`, `c` are values of
/// format `f` given as bits). Infinities and NaNs follow IEEE fma (the default NaN for
/// ∞·0 and ∞−∞, else the first NaN operand quieted).
pub(super) fn fma_scaled(f: Format, a: u64, b: u64, c: u64, scale: i32) -> u64 {
    if f.is_nan(a) || f.is_nan(b) || f.is_nan(c) {
        let n = if f.is_nan(a) {
            a
        } else if f.is_nan(b) {
            b
        } else {
            c
        };
        return f.quiet(n);
    }
    let prod_neg = (a ^ b) & f.sign_bit() != 0;
    let c_neg = c & f.sign_bit() != 0;
    let (ai, bi, ci) = (f.is_inf(a), f.is_inf(b), f.is_inf(c));
    if ai || bi {
        if f.is_zero(a) || f.is_zero(b) || ci && c_neg != prod_neg {
            return f.default_nan();
        }
        return f.inf(prod_neg);
    }
    if ci {
        return c;
    }
    let (_, ma, ea) = f.split(a);
    let (_, mb, eb) = f.split(b);
    let (_, mc, ec) = f.split(c);
    let mp = u128::from(ma) * u128::from(mb);
    let ep = ea + eb;
    if mp == 0 && mc == 0 {
        // ±0 + ±0: −0 only when both are −0 (round to nearest).
        return if prod_neg && c_neg { f.sign_bit() } else { 0 };
    }
    // Both terms with their leading bit at bit 125; the smaller shifted right keeps a sticky
    // bit, which lies below every bit the rounding looks at.
    let norm = |m: u128, e: i32| -> (u128, i32) {
        if m == 0 {
            return (0, i32::MIN / 2);
        }
        let s = m.leading_zeros() as i32 - 2;
        (m << s, e - s)
    };
    let (mut x, mut ex, mut xn) = {
        let (m, e) = norm(mp, ep);
        (m, e, prod_neg)
    };
    let (mut y, mut ey, mut yn) = {
        let (m, e) = norm(u128::from(mc), ec);
        (m, e, c_neg)
    };
    if ey > ex || ey == ex && y > x {
        core::mem::swap(&mut x, &mut y);
        core::mem::swap(&mut ex, &mut ey);
        core::mem::swap(&mut xn, &mut yn);
    }
    let d = i64::from(ex) - i64::from(ey);
    let y = if y == 0 {
        0
    } else if d >= 127 {
        1
    } else {
        let lost = y & ((1u128 << d) - 1) != 0;
        (y >> d) | u128::from(lost)
    };
    let sum = if xn == yn { x + y } else { x - y };
    if sum == 0 {
        return 0; // exact cancellation: +0 in round to nearest
    }
    f.round(xn, sum, ex.saturating_add(scale))
}

/// `V_DIV_SCALE_F32/F64` for one lane: (result bits, VCC bit). `s0` is the value to scale
/// (the numerator or the denominator), `s1` the denominator, `s2` the numerator.
pub(super) fn div_scale(f: Format, s0: u64, s1: u64, s2: u64) -> (u64, bool) {
    let (big, diff_limit, tiny_num) = if f == DOUBLE {
        (128, 768, 53)
    } else {
        (64, 96, 23)
    };
    let ldexp_s0 = |k: i32| ldexp(f, s0, k);
    let finite = |x: u64| f.exponent(x) as u64 != f.max_exp_field();
    if f.is_zero(s1) || f.is_zero(s2) {
        return (f.default_nan(), false);
    }
    if !finite(s1) || !finite(s2) {
        // Infinities and NaNs: left to div_fixup, which sees the original operands.
        return (s0, false);
    }
    let (e1, e2) = (f.exponent(s1), f.exponent(s2));
    // Whether 1/S1 and S2/S1 are subnormal in the format (exact tests on exponents: the
    // quotient of significands in [1, 2) lies in (1/2, 2)).
    let (_, m1, x1) = f.split(s1);
    let (_, m2, x2) = f.split(s2);
    let top = |m: u64, x: i32| x + 63 - m.leading_zeros() as i32;
    let emin = 1 - f.bias();
    // |1/S1| < 2^emin: S1 above 2^-emin (a power of two exactly at it has a normal inverse).
    let t1 = top(m1, x1);
    let rcp_subnormal = -t1 - i32::from(m1 & (m1 - 1) != 0) < emin;
    let quot_subnormal = ratio_exponent(m2, x2, m1, x1) < emin;
    // S0 is S1 or S2 (finite, nonzero: equal bits are equal values).
    let same = |x: u64| s0 == x;
    if e2 - e1 >= diff_limit {
        // The quotient is near the largest finite value: grow the denominator.
        return (if same(s1) { ldexp_s0(big) } else { s0 }, true);
    }
    if f.is_subnormal(s1) {
        return (ldexp_s0(big), false);
    }
    if rcp_subnormal && quot_subnormal {
        // Huge denominator and a subnormal quotient: shrink the denominator only.
        return (if same(s1) { ldexp_s0(-big) } else { s0 }, true);
    }
    if rcp_subnormal {
        return (ldexp_s0(-big), false);
    }
    if quot_subnormal {
        // Subnormal quotient: grow the numerator only.
        return (if same(s2) { ldexp_s0(big) } else { s0 }, true);
    }
    if e2 <= tiny_num {
        return (ldexp_s0(big), false);
    }
    (s0, false)
}

/// The exponent of the leading bit of `(m2 × 2^x2) / (m1 × 2^x1)` (exact: floor(log2)).
fn ratio_exponent(m2: u64, x2: i32, m1: u64, x1: i32) -> i32 {
    let (l2, l1) = (
        63 - m2.leading_zeros() as i32,
        63 - m1.leading_zeros() as i32,
    );
    // Significands aligned to their leading bits: a / b in [1/2, 2).
    let a = u128::from(m2) << (64 - l2);
    let b = u128::from(m1) << (64 - l1);
    (x2 + l2) - (x1 + l1) - i32::from(a < b)
}

/// `V_DIV_FMAS_F32/F64` for one lane: `S0·S1 + S2` rounded once, scaled by 2^±64 (f32) or
/// 2^±128 (f64) when `vcc`: up when `S2` (the quotient estimate) has an exponent above the
/// bias, else down.
pub(super) fn div_fmas(f: Format, s0: u64, s1: u64, s2: u64, vcc: bool) -> u64 {
    fma_scaled(f, s0, s1, s2, div_fmas_scale(f, s2, vcc))
}

/// The power of two `V_DIV_FMAS_F32/F64` scales by (see [`div_fmas`]): 0 without `vcc`.
pub(super) fn div_fmas_scale(f: Format, s2: u64, vcc: bool) -> i32 {
    let big = if f == DOUBLE { 128 } else { 64 };
    if !vcc {
        0
    } else if f.exponent(s2) > f.bias() {
        big
    } else {
        -big
    }
}

/// `V_DIV_FIXUP_F16/F32/F64` for one lane: `s0` the quotient, `s1` the denominator, `s2`
/// the numerator.
pub(super) fn div_fixup(f: Format, s0: u64, s1: u64, s2: u64) -> u64 {
    let neg = (s1 ^ s2) & f.sign_bit() != 0;
    let sign = if neg { f.sign_bit() } else { 0 };
    if f.is_nan(s2) {
        return f.quiet(s2);
    }
    if f.is_nan(s1) {
        return f.quiet(s1);
    }
    if f.is_zero(s1) && f.is_zero(s2) || f.is_inf(s1) && f.is_inf(s2) {
        return f.default_nan();
    }
    if f.is_zero(s1) || f.is_inf(s2) {
        return f.inf(neg);
    }
    if f.is_inf(s1) || f.is_zero(s2) {
        return sign;
    }
    if f.is_nan(s0) {
        // The quotient overflowed inside the sequence (∞ − ∞ in a remainder).
        return f.inf(neg);
    }
    sign | (s0 & !f.sign_bit())
}

/// `V_LDEXP_F32/F64`: `x × 2^n` rounded once (NaN quieted, ±∞ and ±0 kept).
pub(super) fn ldexp(f: Format, x: u64, n: i32) -> u64 {
    if f.is_nan(x) {
        return f.quiet(x);
    }
    if f.is_inf(x) || f.is_zero(x) {
        return x;
    }
    let (neg, m, e) = f.split(x);
    f.round(
        neg,
        u128::from(m),
        e.saturating_add(n.clamp(-10_000, 10_000)),
    )
}

/// `V_FREXP_MANT_F32/F64`: the significand in [0.5, 1) with the sign of `x`; ±∞, NaN and
/// ±0 are returned unchanged.
pub(super) fn frexp_mant(f: Format, x: u64) -> u64 {
    if f.is_nan(x) || f.is_inf(x) || f.is_zero(x) {
        return x;
    }
    let (neg, m, _) = f.split(x);
    let l = 63 - m.leading_zeros() as i32;
    f.round(neg, u128::from(m), -l - 1)
}

/// `V_FREXP_EXP_I32_F32/F64`: the exponent `e` with `x = mant × 2^e`, mant in [0.5, 1);
/// 0 for ±0, ±∞ and NaN.
pub(super) fn frexp_exp(f: Format, x: u64) -> i32 {
    if f.is_nan(x) || f.is_inf(x) || f.is_zero(x) {
        return 0;
    }
    let (_, m, e) = f.split(x);
    e + 64 - m.leading_zeros() as i32
}

/// The first 1201 fraction bits of 2/π (`b_1200` … `b_0`, 2/π = 0.b_1200 b_1199 …), left-
/// aligned in 19 words (the last 15 bits zero). Computed with Machin's formula; the same digits
/// as fdlibm's `ipio2` table (`__kernel_rem_pio2`: 0xA2F983, 0x6E4E44, …).
const TWO_OVER_PI: [u64; 19] = [
    0xA2F9_836E_4E44_1529,
    0xFC27_57D1_F534_DDC0,
    0xDB62_9599_3C43_9041,
    0xFE51_63AB_DEBB_C561,
    0xB724_6E3A_424D_D2E0,
    0x0649_2EEA_09D1_921C,
    0xFE1D_EB1C_B129_A73E,
    0xE882_35F5_2EBB_4484,
    0xE99C_7026_B45F_7E41,
    0x3991_D639_8353_39F4,
    0x9C84_5F8B_BDF9_283B,
    0x1FF8_97FF_DE05_980F,
    0xEF2F_118B_5A0A_6D1F,
    0x6D36_7ECF_27CB_09B7,
    0x4F46_3F66_9E5F_EA2D,
    0x7527_BAC7_EBE5_F17B,
    0x3D07_39F7_8A52_92EA,
    0x6BFB_5FB1_1F8D_5D08,
    0x5603_3046_FC7B_0000,
];

/// `V_TRIG_PREOP_F64` (Vega ISA, VOP3): the 53-bit segment of 2/π that range reduction of
/// `x` needs, segment `sel` (S1[4:0]): `shift = 53·sel`, plus `exponent(x) − 1077` when the
/// exponent field is above 1077; the segment is bits `1200 − shift` down of 2/π (zeros past
/// the table) as an integer, times `2^(−53 − shift)` (`2^128` more when the exponent field
/// is at least 1968), rounded toward zero.
pub(super) fn trig_preop(x: u64, sel: u32) -> u64 {
    let e = DOUBLE.exponent(x);
    let mut shift = (sel & 31) as i32 * 53;
    if e > 1077 {
        shift += e - 1077;
    }
    let mut seg = 0u64;
    for j in 0..53 {
        let p = (shift + j) as usize; // 0 = b_1200
        let bit = if p <= 1200 {
            TWO_OVER_PI[p / 64] >> (63 - p % 64) & 1
        } else {
            0
        };
        seg = seg << 1 | bit;
    }
    let mut scale = -53 - shift;
    if e >= 1968 {
        scale += 128;
    }
    DOUBLE.round_toward_zero(false, u128::from(seg), scale)
}

/// The bit of `V_CMP_CLASS_F32/F64`'s class mask that `bits` belongs to: 0 signaling NaN,
/// 1 quiet NaN, 2 −∞, 3 −normal, 4 −subnormal, 5 −0, 6 +0, 7 +subnormal, 8 +normal, 9 +∞
/// (Vega ISA, VOPC).
pub(super) fn class_index(f: Format, bits: u64) -> u32 {
    let neg = bits & f.sign_bit() != 0;
    let pick = |n: u32, p: u32| if neg { n } else { p };
    if f.is_nan(bits) {
        u32::from(bits & 1 << (f.frac - 1) != 0)
    } else if f.is_inf(bits) {
        pick(2, 9)
    } else if f.is_zero(bits) {
        pick(5, 6)
    } else if f.is_subnormal(bits) {
        pick(4, 7)
    } else {
        pick(3, 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_matches_host_conversions() {
        // f64 → f32 through the integer path equals the host's conversion.
        for &x in &[
            1.0f64,
            1.0 + f64::EPSILON,
            3.0e38,
            3.5e38,
            1.0e-40,
            1.4e-45,
            7.0e-46,
            7.1e-46,
            -2.5e-42,
            0.1,
        ] {
            let (neg, m, e) = DOUBLE.split(x.to_bits());
            let r = SINGLE.round(neg, u128::from(m), e);
            assert_eq!(r, u64::from((x as f32).to_bits()), "{x:e}");
        }
    }

    #[test]
    fn fma_scaled_is_fused() {
        for &(a, b, c) in &[
            (1.0f64 + f64::EPSILON, 1.0 - f64::EPSILON, -1.0),
            (0.1, 10.0, -1.0),
            (3.0, 1.0 / 3.0, -1.0),
            (1e308, 10.0, -1e308),
            (2.0f64.powi(-1070), 0.75, 0.0),
        ] {
            let want = a.mul_add(b, c).to_bits();
            assert_eq!(
                fma_scaled(DOUBLE, a.to_bits(), b.to_bits(), c.to_bits(), 0),
                want,
                "{a} {b} {c}"
            );
        }
        // Scaled before rounding: 2^-1075 × 3 = 1.5 × 2^-1074 rounds once (to 2 × 2^-1074).
        let three = 3.0f64.to_bits();
        assert_eq!(fma_scaled(DOUBLE, three, 1.0f64.to_bits(), 0, -1075), 2);
    }

    #[test]
    fn round_toward_zero_truncates() {
        // 1.5 × 2^-1074: nearest-even gives 2 × 2^-1074, toward zero 1 × 2^-1074.
        assert_eq!(DOUBLE.round(false, 3, -1075), 2);
        assert_eq!(DOUBLE.round_toward_zero(false, 3, -1075), 1);
        // Normal values: the significand is cut, not rounded.
        let m = (1u128 << 54) - 1; // 54 ones
        assert_eq!(
            DOUBLE.round_toward_zero(false, m, 0),
            (2f64.powi(54) - 2.0).to_bits()
        );
        // trig_preop segment 0 of 1.0: 2/π cut to 53 bits (2/π rounded is 0x3FE45F306DC9C883).
        assert_eq!(trig_preop(1.0f64.to_bits(), 0), 0x3FE4_5F30_6DC9_C882);
    }

    #[test]
    fn ldexp_frexp() {
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(ldexp(SINGLE, f(1.5), -149), 2); // 1.5 × 2^-149 → 2^-148 (ties to even)
        assert_eq!(ldexp(SINGLE, f(1.0), 128), f(f32::INFINITY));
        assert_eq!(ldexp(SINGLE, 1, 149), f(1.0));
        assert_eq!(frexp_mant(SINGLE, f(-12.0)), f(-0.75));
        assert_eq!(frexp_exp(SINGLE, f(-12.0)), 4);
        assert_eq!(frexp_exp(SINGLE, 1), -148);
        assert_eq!(frexp_mant(SINGLE, 1), f(0.5));
    }
}
