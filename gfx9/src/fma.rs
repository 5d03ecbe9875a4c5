//! Fused multiply-add over 64 lanes of f32 bits, rounded once (IEEE 754 fusedMultiplyAdd,
//! what `v_fma_f32`, `v_fmac_f32` and `v_pk_fma_f32` compute): with the host's FMA
//! instructions when the CPU has them (checked once at run time), else `f32::mul_add`
//! per lane (a library call). Both give the same bits: a fused multiply-add has one correct
//! result.

use super::wave::WAVE_SIZE;

type Row = [u32; WAVE_SIZE];

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
        f32::from_bits(a[l])
            .mul_add(f32::from_bits(b[l]), f32::from_bits(c[l]))
            .to_bits()
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
