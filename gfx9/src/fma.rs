//! Fused multiply-add over 64 lanes of f32 bits, rounded once (IEEE 754 fusedMultiplyAdd,
//! what `v_fma_f32`, `v_fmac_f32` and `v_pk_fma_f32` compute): with the host's FMA
//! instructions when the CPU has them (checked once at run time), else `f32::mul_add`
//! per lane (a library call). Both give the same bits: a fused multiply-add has one correct
//! result.

use super::wave::WAVE_SIZE;

type Row = [u32; WAVE_SIZE];

/// The result of a three-source f32 operation with a NaN source: the first NaN of `a`, `b`,
/// `c`, quieted (bit 22 set), as bits; `None` without one. Rust leaves a NaN result's payload
/// unspecified, and the host's choice follows operand order, which the compiler may change:
/// an optimized build commuted a product's factors in one of the interpreter's two paths and
/// not in the other, and the host's FMA instructions order their sources unlike `fmaf`. The
/// interpreter fixes the choice here (the order x86's scalar SSE instructions and `fmaf`
/// apply to `a * b + c`).
#[inline]
pub(super) fn nan_of3(a: u32, b: u32, c: u32) -> Option<u32> {
    [a, b, c]
        .into_iter()
        .find(|&x| is_nan32(x))
        .map(|x| x | 0x0040_0000)
}

#[inline]
fn is_nan32(x: u32) -> bool {
    x & 0x7FFF_FFFF > 0x7F80_0000
}

/// `x + y` of f32 bits, a NaN source giving the first NaN source quieted (as [`nan_of3`]).
#[inline]
pub(super) fn add32(x: u32, y: u32) -> u32 {
    two(x, y, |a, b| a + b)
}

/// `x - y` of f32 bits, a NaN source giving the first NaN source quieted (as [`nan_of3`]).
#[inline]
pub(super) fn sub32(x: u32, y: u32) -> u32 {
    two(x, y, |a, b| a - b)
}

/// `x × y` of f32 bits, a NaN source giving the first NaN source quieted (as [`nan_of3`]).
#[inline]
pub(super) fn mul32(x: u32, y: u32) -> u32 {
    two(x, y, |a, b| a * b)
}

#[inline(always)]
fn two(x: u32, y: u32, op: impl Fn(f32, f32) -> f32) -> u32 {
    if is_nan32(x) {
        x | 0x0040_0000
    } else if is_nan32(y) {
        y | 0x0040_0000
    } else {
        op(f32::from_bits(x), f32::from_bits(y)).to_bits()
    }
}

/// `fma(a[l], b[l], c[l])` for every lane `l`, as f32 bits.
#[inline]
pub(super) fn fma_rows(a: &Row, b: &Row, c: &Row) -> Row {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has the `fma` and `avx2` features the function is compiled for
        // (checked just above); it only reads and returns arrays.
        return unsafe { fma_rows_x86(a, b, c) };
    }
    fma_rows_portable(a, b, c)
}

#[inline(always)]
fn fma_rows_portable(a: &Row, b: &Row, c: &Row) -> Row {
    core::array::from_fn(|l| {
        let r = f32::from_bits(a[l])
            .mul_add(f32::from_bits(b[l]), f32::from_bits(c[l]))
            .to_bits();
        if f32::from_bits(r).is_nan() {
            nan_of3(a[l], b[l], c[l]).unwrap_or(r)
        } else {
            r
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_rows_x86(a: &Row, b: &Row, c: &Row) -> Row {
    fma_rows_portable(a, b, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The NaN a NaN source gives is the first NaN source, quieted, whichever operation and
    /// however the compiler ordered the host's instruction: a signaling NaN in `a` wins over
    /// a quiet one in `b`, and the order is by source, not by kind.
    #[test]
    fn nan_sources_give_the_first_nan_source_quieted() {
        let (snan_a, qnan_b, qnan_c) = (0x7F80_0001u32, 0xFFC0_0002u32, 0x7FC0_0003u32);
        let one = 1.0f32.to_bits();
        assert_eq!(add32(snan_a, qnan_b), 0x7FC0_0001);
        assert_eq!(mul32(qnan_b, snan_a), 0xFFC0_0002);
        assert_eq!(sub32(one, snan_a), 0x7FC0_0001);
        assert_eq!(nan_of3(one, qnan_c, snan_a), Some(0x7FC0_0003));
        assert_eq!(nan_of3(one, one, one), None);
        let row = |x: u32| [x; WAVE_SIZE];
        assert_eq!(
            fma_rows(&row(one), &row(qnan_b), &row(snan_a)),
            row(0xFFC0_0002)
        );
        assert_eq!(
            fma_rows(&row(snan_a), &row(qnan_b), &row(qnan_c)),
            row(0x7FC0_0001)
        );
        // Without a NaN source, the operations' own results.
        assert_eq!(mul32(one, 2.0f32.to_bits()), 2.0f32.to_bits());
        assert_eq!(sub32(one, one), 0);
    }

    #[test]
    fn host_fma_instructions_and_the_library_agree() {
        // One rounding: (1 + 2^-23)^2 - (1 + 2^-22) is exactly 2^-46, which a separate
        // multiply (rounding the square to 1 + 2^-22) and add lose; plus NaN, infinity and
        // denormal lanes.
        let x = 1.0f32 + f32::EPSILON;
        let k = -(1.0f32 + 2.0 * f32::EPSILON);
        let mut a = [x.to_bits(); WAVE_SIZE];
        let mut b = [x.to_bits(); WAVE_SIZE];
        let mut c = [k.to_bits(); WAVE_SIZE];
        a[1] = f32::NAN.to_bits();
        b[2] = f32::INFINITY.to_bits();
        a[3] = 1;
        c[3] = 0;
        let r = fma_rows(&a, &b, &c);
        assert_eq!(r, fma_rows_portable(&a, &b, &c));
        assert_eq!(f32::from_bits(r[0]), 2f32.powi(-46));
        assert_eq!(x * x + k, 0.0);
    }
}
