//! Execution tests of the gfx9 opcodes added for issue 19 (VOP2 with a literal constant,
//! `v_mac_f16`, `v_mul_legacy_f32`, the accumulating packed FMA and dot products, ...):
//! kernels assembled with `llvm-mc-19` and linked with `ld.lld-19`
//! (`testdata/codeobjects/isa/gen_ops.py`, which states their conventions) run each
//! instruction over edge-case inputs, and every result is compared with a host reference
//! written from the ISA documents (AMD "Vega" ISA for gfx900, "Vega 7nm" for gfx906, "AMD
//! Instinct MI100" (CDNA1) for gfx908, "MI200" (CDNA2) for gfx90a, "MI300" (CDNA3) for gfx942).
//! The harness is `gfx9_isa.rs`'s (`isa_harness`).

use hsa_core::Status;
use hsa_gfx9::Gfx9Target;

mod isa_harness;
use isa_harness::*;

/// f32 edge values: zeros, denormals, infinities, NaNs (quiet and signaling), the largest
/// finite value, values that overflow when multiplied, and ordinary ones.
const EDGE32: [u32; 16] = [
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x807F_FFFF,
    0x0040_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x7F7F_FFFF,
    0x6000_0000,
    0x3F80_0000,
    0xC040_0000,
    0x3EAA_AAAB,
    0x0080_0000,
    0x1F80_0000,
];

/// f16 edge values, as [`EDGE32`].
const EDGE16: [u16; 16] = [
    0x0000, 0x8000, 0x0001, 0x83FF, 0x0200, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x7BFF, 0x5C00, 0x3C00,
    0xC200, 0x3555, 0x0400, 0x2400,
];

/// `n` inputs: every edge value against every other (by lane), then random bits.
fn inputs32(n: usize, seed: u64) -> [Vec<u32>; 3] {
    let mut r = prng(seed);
    let mut v: [Vec<u32>; 3] = Default::default();
    for i in 0..n {
        for (k, col) in v.iter_mut().enumerate() {
            let x = if i < 256 {
                EDGE32[((i >> (4 * k.min(1))) ^ (k * 5)) % 16]
            } else {
                r()
            };
            col.push(x);
        }
    }
    v
}

/// `n` inputs of two f16 halves each from [`EDGE16`], then random bits.
fn inputs16(n: usize, seed: u64) -> [Vec<u32>; 3] {
    let mut r = prng(seed);
    let mut v: [Vec<u32>; 3] = Default::default();
    for i in 0..n {
        for (k, col) in v.iter_mut().enumerate() {
            let x = if i < 256 {
                let lo = EDGE16[((i >> (4 * k.min(1))) ^ (k * 5)) % 16];
                let hi = EDGE16[(i + 3 * k + 7) % 16];
                u32::from(lo) | u32::from(hi) << 16
            } else {
                r()
            };
            col.push(x);
        }
    }
    v
}

fn f16_is_nan(h: u16) -> bool {
    h & 0x7C00 == 0x7C00 && h & 0x3FF != 0
}

/// The f16 value `m × 2^e` (`m` signed) rounded to nearest even, with `neg_zero` the sign
/// of an exact zero: written from IEEE 754 binary16 (5-bit exponent, bias 15, 10-bit
/// fraction, denormals down to 2^-24).
fn f16_from_scaled(m: i128, e: i32, neg_zero: bool) -> u16 {
    if m == 0 {
        return if neg_zero { 0x8000 } else { 0 };
    }
    let sign = if m < 0 { 0x8000u16 } else { 0 };
    let mag = m.unsigned_abs();
    let top = 127 - mag.leading_zeros() as i32 + e; // exponent of the leading bit
    let q = (top - 10).max(-24); // the quantum of the result
    let shift = q - e;
    let mut r = if shift <= 0 {
        mag << -shift
    } else if shift >= 128 {
        0
    } else {
        let t = mag >> shift;
        let rem = mag & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        if rem > half || rem == half && t & 1 == 1 {
            t + 1
        } else {
            t
        }
    };
    let mut q = q;
    if r == 2048 {
        r = 1024;
        q += 1;
    }
    if r == 0 {
        return sign;
    }
    if r < 1024 {
        return sign | r as u16; // denormal (q = -24)
    }
    let exp = q + 25;
    if exp >= 31 {
        return sign | 0x7C00;
    }
    sign | (exp as u16) << 10 | (r as u16 - 1024)
}

/// A finite f16 as an integer multiple of 2^-24.
fn f16_scaled(h: u16) -> i128 {
    let exp = i32::from(h >> 10 & 0x1F);
    let frac = i128::from(h & 0x3FF);
    let mag = if exp == 0 {
        frac
    } else {
        (frac | 1024) << (exp - 1)
    };
    if h & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

fn f16_to_f64(h: u16) -> f64 {
    if h & 0x7C00 == 0x7C00 {
        let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        return if h & 0x3FF != 0 {
            f64::NAN
        } else {
            s * f64::INFINITY
        };
    }
    let m = (f16_scaled(h) as f64 * 2f64.powi(-24)).abs();
    if h & 0x8000 != 0 {
        -m
    } else {
        m
    }
}

/// `a × b + c` on f16 with the product rounded first unless `fused`; NaN as 0x7E00 (the
/// comparison only checks that the result is a NaN).
fn f16_muladd(a: u16, b: u16, c: u16, fused: bool) -> u16 {
    let (x, y, z) = (f16_to_f64(a), f16_to_f64(b), f16_to_f64(c));
    let special = |v: f64| v.is_nan() || v.is_infinite();
    if special(x) || special(y) || special(z) {
        let r = x * y + z;
        return if r.is_nan() {
            0x7E00
        } else if r > 0.0 {
            0x7C00
        } else {
            0xFC00
        };
    }
    let prod_neg = (a ^ b) & 0x8000 != 0;
    let p = f16_scaled(a) * f16_scaled(b); // units of 2^-48
    let (p, pneg) = if fused {
        (p, prod_neg)
    } else {
        let h = f16_from_scaled(p, -48, prod_neg);
        if h & 0x7C00 == 0x7C00 {
            return f16_muladd(h, 0x3C00, c, true); // the product overflowed
        }
        (f16_scaled(h) << 24, h & 0x8000 != 0)
    };
    let sum = p + (f16_scaled(c) << 24);
    // An exact zero sum is +0 unless both terms are -0 (round to nearest).
    f16_from_scaled(sum, -48, pneg && c & 0x8000 != 0)
}

fn flush16(h: u16) -> u16 {
    if h & 0x7C00 == 0 {
        h & 0x8000
    } else {
        h
    }
}

/// f32 results compare bit for bit, NaNs as NaNs (the payload is not checked).
fn same32(got: u32, want: u32) -> bool {
    got == want || f32::from_bits(got).is_nan() && f32::from_bits(want).is_nan()
}

/// 16-bit halves compare bit for bit, NaNs as NaNs.
fn same16(got: u16, want: u16) -> bool {
    got == want || f16_is_nan(got) && f16_is_nan(want)
}

/// gfx900's `v_mad_mix*` kernels (gen_ops.py): each source an f32 (f32 denormals flushed) or
/// an f16 half, the product rounded to f32 and flushed, then the sum rounded once: to f32
/// (flushed) for `_f32`, to f16 for `mixlo`/`mixhi` (their kernels take f16 sources, so the
/// product is a multiple of 2^-48 below 2^33 and the sum exact in units of 2^-48).
fn mad_mix(name: &str, a: u32, b: u32, c: u32) -> u32 {
    let half = |v: u32, hi: bool| f16_to_f64((if hi { v >> 16 } else { v }) as u16) as f32;
    let (x, y, z) = match name {
        "v_mad_mix_f32" => (
            flush32(f32::from_bits(a)),
            flush32(f32::from_bits(b)),
            flush32(f32::from_bits(c)),
        ),
        "v_mad_mix_f32_h" | "v_mad_mixlo_f16" => (half(a, false), half(b, false), half(c, false)),
        "v_mad_mix_f32_hsel_clamp" => (-half(a, true), half(b, false).abs(), half(c, true)),
        "v_mad_mixhi_f16_clamp" => (half(a, false), -half(b, true), half(c, false)),
        _ => unreachable!("{name}"),
    };
    let clamp = name.ends_with("_clamp");
    let p = flush32(x * y);
    if name.starts_with("v_mad_mix_f32") {
        let r = flush32(p + z);
        let r = if clamp && (r.is_nan() || r <= 0.0) {
            0.0
        } else if clamp {
            r.min(1.0)
        } else {
            r
        };
        return r.to_bits();
    }
    let h = if !p.is_finite() || !z.is_finite() {
        let r = f64::from(p) + f64::from(z);
        if r.is_nan() {
            0x7E00
        } else if r > 0.0 {
            0x7C00
        } else {
            0xFC00
        }
    } else {
        let scaled = |v: f32| (f64::from(v) * 2f64.powi(48)) as i128; // exact, see above
        let neg_zero = p.is_sign_negative() && z.is_sign_negative();
        f16_from_scaled(scaled(p) + scaled(z), -48, neg_zero)
    };
    let h = if clamp {
        if f16_is_nan(h) || h & 0x8000 != 0 {
            0
        } else if f16_to_f64(h) > 1.0 {
            0x3C00
        } else {
            h
        }
    } else {
        h
    };
    if name.starts_with("v_mad_mixlo") {
        c & 0xFFFF_0000 | u32::from(h)
    } else {
        c & 0xFFFF | u32::from(h) << 16
    }
}

/// The reference of one lane of an `ops` kernel (gen_ops.py): `a`, `b`, `c` are p1, p2, p3
/// (`c` also the accumulator v5 held), `a_dpp` the src0 a DPP form reads.
fn reference(kernel: &str, a: u32, b: u32, c: u32, a_dpp: u32) -> Option<u32> {
    let (fa, fb, fc) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
    let k_of = |s: &str| u32::from_str_radix(s.rsplit("_k").next().unwrap(), 16).unwrap();
    // V_MAD_F32 and kin: product rounded, then the sum; f32 denormals flushed (sources,
    // product, result) whatever the mode.
    let mad32 = |x: f32, y: f32, z: f32| {
        let p = flush32(flush32(x) * flush32(y));
        flush32(p + flush32(z)).to_bits()
    };
    // Fused, denormals kept (the kernels' mode).
    let fma32 = |x: f32, y: f32, z: f32| x.mul_add(y, z).to_bits();
    // V_MAD_F16: the same on f16 with f16 denormals flushed; the high half 0.
    let mad16 = |x: u32, y: u32, z: u32| {
        let p = f16_muladd(flush16(x as u16), flush16(y as u16), 0x8000, false);
        let p = flush16(p);
        u32::from(flush16(f16_muladd(p, 0x3C00, flush16(z as u16), true)))
    };
    let legacy = |x: f32, y: f32| {
        if x == 0.0 || y == 0.0 {
            0
        } else {
            (x * y).to_bits()
        }
    };
    let name = kernel;
    Some(match name {
        _ if name.starts_with("v_madak_f32_k") => mad32(fa, fb, f32::from_bits(k_of(name))),
        _ if name.starts_with("v_madmk_f32_k") => mad32(fa, f32::from_bits(k_of(name)), fb),
        _ if name.starts_with("v_fmaak_f32_k") => fma32(fa, fb, f32::from_bits(k_of(name))),
        _ if name.starts_with("v_fmamk_f32_k") => fma32(fa, f32::from_bits(k_of(name)), fb),
        "v_madak_f32_lit" => mad32(1.5, fb, 1.5),
        _ if name.starts_with("v_madak_f16_k") => mad16(a, b, k_of(name)),
        _ if name.starts_with("v_madmk_f16_k") => mad16(a, k_of(name), b),
        "v_mac_f16" => mad16(a, b, c),
        // VOP3-only v_mad_f16 keeps the destination's (c's) high half (the ISA guides' op_sel
        // note); v_mac_f16 (VOP2) zeroes it.
        "v_mad_f16" => c & 0xFFFF_0000 | mad16(a, b, c) & 0xFFFF,
        "v_mad_legacy_f32" => {
            let (x, y) = (flush32(fa), flush32(fb));
            if x == 0.0 || y == 0.0 {
                flush32(0.0 + flush32(fc)).to_bits()
            } else {
                mad32(fa, fb, fc)
            }
        }
        "v_mac_f16_dpp" => mad16(a_dpp, b, c),
        _ if name.starts_with("v_mad_mix") => mad_mix(name, a, b, c),
        "s_call_b64" => 16 + 256 + 3,
        "v_mul_legacy_f32" => legacy(fa, fb),
        "v_mul_legacy_f32_e64_omod" => (f32::from_bits(legacy(fa, fb)) * 2.0).to_bits(),
        // The Vega ISA's table for V_CVT_OFF_F32_I4: 0x8 is -0.5, 0xF -0.0625, 0x7 0.4375.
        "v_cvt_off_f32_i4" | "v_cvt_off_f32_i4_e64_omod" => {
            let nibble = a & 0xF;
            let x = if nibble >= 8 {
                -0.5 + (nibble - 8) as f32 * 0.0625
            } else {
                nibble as f32 * 0.0625
            };
            let scale = if name.ends_with("_omod") { 4.0 } else { 1.0 };
            (x * scale).to_bits()
        }
        "v_pk_fmac_f16" => {
            let h = |k: u32| {
                let x = |v: u32| (v >> (16 * k)) as u16;
                u32::from(f16_muladd(x(a), x(b), x(c), true))
            };
            h(0) | h(1) << 16
        }
        _ if name.starts_with("v_dot") => {
            let clamp = name.ends_with("_clamp");
            let x = if name.ends_with("_dpp") { a_dpp } else { a };
            if name.starts_with("v_dot2c_f32_f16") {
                // Exact in f64 for the inputs `dot_inputs` makes; rounded once to f32.
                let h = |v: u32, k: u32| f16_to_f64((v >> (16 * k)) as u16);
                let s = h(x, 0) * h(b, 0) + h(x, 1) * h(b, 1) + f64::from(fc);
                let r = s as f32;
                let r = if clamp {
                    if r.is_nan() || r <= 0.0 {
                        0.0
                    } else {
                        r.min(1.0)
                    }
                } else {
                    r
                };
                return Some(r.to_bits());
            }
            let bits = match &name[5..6] {
                "2" => 16,
                "4" => 8,
                _ => 4,
            };
            let field = |v: u32, k: u32| -> i64 {
                let f = v >> (k * bits) & ((1 << bits) - 1);
                i64::from(((f << (32 - bits)) as i32) >> (32 - bits))
            };
            let s = (0..32 / bits).fold(i64::from(c as i32), |s, k| s + field(x, k) * field(b, k));
            if clamp {
                s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32
            } else {
                s as u32
            }
        }
        _ => return None,
    })
}

/// Inputs for the f16 dot product: f16 values with exponents -4..=6 (and every sign), an f32
/// accumulator with 11 significant bits in the same range, so that the sum is exact in f64;
/// edge values (infinities, NaN, zeros) in the first lanes.
fn dot_inputs(n: usize) -> [Vec<u32>; 3] {
    let mut r = prng(99);
    let mut nice16 = || {
        let x = r();
        let exp = 11 + x % 11; // biased 11..=21: 2^-4..2^6
        (x >> 8 & 0x8000 | exp << 10 | x >> 12 & 0x3FF) & 0xFFFF
    };
    let mut v: [Vec<u32>; 3] = Default::default();
    for i in 0..n {
        let a = nice16() | nice16() << 16;
        let b = nice16() | nice16() << 16;
        let c = f32::from_bits(nice16() << 13 | 0x3000_0000).to_bits();
        let (a, b, c) = match i {
            0 => (0x7C00_3C00, 0x3C00_3C00, 0),
            1 => (0x7C00_3C00, 0x0000_3C00, 0),
            2 => (0x7E00_3C00, 0x3C00_3C00, 0),
            3 => (a, b, 0x7F80_0000),
            4 => (0x8000_8000, 0x3C00_3C00, 0x8000_0000),
            5 => (0x7BFF_7BFF, 0x7BFF_7BFF, 0x7F7F_FFFF),
            _ => (a, b, c),
        };
        v[0].push(a);
        v[1].push(b);
        v[2].push(c);
    }
    v
}

#[test]
fn issue_19_opcodes_match_the_isa() {
    const N: usize = 512;
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("ops", cpu, target);
        for kernel in isa.kernels() {
            if kernel.starts_with("smem_")
                || kernel.starts_with("ds_")
                || kernel.starts_with("s_getreg")
            {
                continue; // the scalar memory and LDS tests below
            }
            let f16 = kernel.contains("f16") && !kernel.starts_with("v_dot2c_f32");
            let ins = if kernel.starts_with("v_dot2c_f32_f16") {
                dot_inputs(N)
            } else if f16 || kernel.starts_with("v_dot") || kernel.starts_with("v_mad_mix_f32_") {
                inputs16(N, 7)
            } else {
                inputs32(N, 3)
            };
            let bufs = [
                vec![0u8; 4 * N],
                bytes32(&ins[0]),
                bytes32(&ins[1]),
                bytes32(&ins[2]),
                vec![0u8; 4 * N],
            ];
            let out = isa
                .run(&kernel, N as u32, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..N {
                let a_dpp = ins[0][i ^ 1];
                let want = reference(&kernel, ins[0][i], ins[1][i], ins[2][i], a_dpp)
                    .unwrap_or_else(|| panic!("no reference for {kernel}"));
                let ok = if f16 {
                    same16(got[i] as u16, want as u16)
                        && same16((got[i] >> 16) as u16, (want >> 16) as u16)
                } else {
                    same32(got[i], want)
                };
                assert!(
                    ok,
                    "{cpu} {kernel} lane {i}: {:#010x} {:#010x} {:#010x} (dpp src0 {a_dpp:#010x}): got {:#010x}, want {want:#010x}",
                    ins[0][i],
                    ins[1][i],
                    ins[2][i],
                    got[i]
                );
                checked += 1;
            }
        }
    }
    // 30 kernels on gfx900 (5 of them v_mad_mix*), 25 on gfx906, 37 on gfx908/gfx90a, 35 on
    // gfx942.
    assert_eq!(checked, (30 + 25 + 37 + 37 + 35) * N);
}

/// What `smem_bload_*` leaves in s4..s19: dword k of a load at byte offset `off` from a V#
/// whose buffer is `limit` bytes, `None` when the load has fewer dwords.
fn scalar_buffer_ref(data: &[u32], off: u64, limit: u64, k: usize, dwords: usize) -> u32 {
    let o = off + 4 * k as u64;
    if k >= dwords || o >= limit {
        0
    } else {
        data[(o / 4) as usize]
    }
}

#[test]
fn scalar_buffer_loads_and_scalar_stores_match_the_isa() {
    let data: Vec<u32> = (0..64u32).map(|i| 0xA000_0000 | (i * 0x0101)).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("ops", cpu, target);
        // (kernel, byte offset, buffer size in bytes (NUM_RECORDS, or × STRIDE when
        // swizzled), dwords loaded)
        let loads = [
            ("smem_bload_nr20_st0_sw0", 4, 0x20, 16),
            ("smem_bload_nr4_st8_sw1", 4, 32, 16),
            ("smem_bload_nr4_st8_sw0", 4, 4, 16),
            ("smem_bload_nrffffffff_st0_sw0", 4, u64::from(u32::MAX), 16),
            ("smem_bload_nr21_st0_sw0", 4, 0x21, 16),
            ("smem_bload_soff", 0x10, 0x18, 4),
            // s_load with SOE: SGPR offset plus immediate (0x13 + 9, 0x40 - 8), dword-aligned.
            ("smem_load_soe", 0x1C, 256, 4),
            ("smem_load_soe_neg", 0x38, 256, 1),
        ];
        for (kernel, off, limit, dwords) in loads {
            let bufs = [
                vec![0u8; 256],
                bytes32(&data),
                vec![0u8; 256],
                vec![0u8; 256],
                vec![0xEEu8; 64 * 64],
            ];
            let out = isa
                .run(kernel, 64, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            for lane in 0..64 {
                for k in 0..16 {
                    let want = scalar_buffer_ref(&data, off, limit, k, dwords);
                    assert_eq!(
                        got[lane * 16 + k],
                        want,
                        "{cpu} {kernel} lane {lane} s{}",
                        4 + k
                    );
                }
            }
        }
        let bufs: Vec<Vec<u8>> = (0..6).map(|_| vec![0u8; 256]).collect();
        let out = isa
            .run("smem_store", 64, &bufs)
            .unwrap_or_else(|e| panic!("{cpu} smem_store: {e}"));
        let v = [0x1111_1111, 0x2222_2222, 0x3333_3333, 0x4444_4444];
        let mut want4 = vec![0u32; 64];
        want4[2..6].copy_from_slice(&v);
        want4[0x10] = v[1];
        want4[0x20] = v[2];
        want4[0x21] = v[3];
        assert_eq!(u32s(&out[4]), want4, "{cpu} s_store_dword*");
        // NUM_RECORDS 0x10: the dwords at bytes 8 and 12 are written, 16 and 20 dropped.
        let mut want5 = vec![0u32; 64];
        want5[2..4].copy_from_slice(&v[..2]);
        assert_eq!(u32s(&out[5]), want5, "{cpu} s_buffer_store_dwordx4");
    }
}

/// The ISA's atomic operations (Vega ISA FLAT/SMEM atomic opcode tables) on a memory value
/// `m` with data `s` and compare value `c`, 32 or (`wide`) 64 bits: the new memory value.
fn atomic_ref(op: &str, m: u64, s: u64, c: u64, wide: bool) -> u64 {
    let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
    let (m, s, c) = (m & mask, s & mask, c & mask);
    let signed = |x: u64| {
        if wide {
            x as i64
        } else {
            i64::from(x as u32 as i32)
        }
    };
    let r = match op {
        "swap" => s,
        "cmpswap" => {
            if m == c {
                s
            } else {
                m
            }
        }
        "add" => m.wrapping_add(s),
        "sub" => m.wrapping_sub(s),
        "smin" => signed(m).min(signed(s)) as u64,
        "smax" => signed(m).max(signed(s)) as u64,
        "umin" => m.min(s),
        "umax" => m.max(s),
        "and" => m & s,
        "or" => m | s,
        "xor" => m ^ s,
        // INC: tmp >= src ? 0 : tmp + 1; DEC: tmp == 0 || tmp > src ? src : tmp - 1.
        "inc" => {
            if m >= s {
                0
            } else {
                m + 1
            }
        }
        "dec" => {
            if m == 0 || m > s {
                s
            } else {
                m - 1
            }
        }
        _ => panic!("{op}"),
    };
    r & mask
}

#[test]
fn scalar_atomics_match_the_isa() {
    const VALUES: [u64; 6] = [
        0,
        1,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF_FFFF_FFFF,
        0x1_0000_0005,
    ];
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("ops", cpu, target);
        for kernel in isa.kernels() {
            let Some(rest) = kernel
                .strip_prefix("smem_atomic_")
                .or_else(|| kernel.strip_prefix("smem_batomic_"))
            else {
                continue;
            };
            let (op, nr) = match rest.rsplit_once("_nr") {
                Some((op, nr)) => (op, u64::from_str_radix(nr, 16).unwrap()),
                None => (rest, u64::MAX),
            };
            let glc = !op.ends_with("_noglc");
            let op = op.trim_end_matches("_noglc");
            let wide = op.ends_with("_x2");
            let base = op.trim_end_matches("_x2");
            let dw = if wide { 2 } else { 1 };
            for (i, &m) in VALUES.iter().enumerate() {
                let s = VALUES[(i + 2) % 6];
                let c = if i % 2 == 0 { m } else { VALUES[(i + 1) % 6] };
                // SDATA s[24:27]: the data, then (cmpswap) the compare value.
                let mut sdata = [0u32; 4];
                for k in 0..dw {
                    sdata[k] = (s >> (32 * k)) as u32;
                    sdata[dw + k] = (c >> (32 * k)) as u32;
                }
                let mut mem = vec![0x5A5A_5A5Au32; 8];
                mem[2] = m as u32;
                mem[3] = (m >> 32) as u32;
                let bufs = [
                    bytes32(&mem),
                    bytes32(&sdata),
                    vec![0u8; 64],
                    vec![0u8; 64],
                    vec![0u8; 64 * 16],
                ];
                let out = isa
                    .run(&kernel, 64, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                let in_range = 8 + 4 * dw as u64 <= nr;
                let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
                let want_mem = if in_range {
                    atomic_ref(base, m, s, c, wide)
                } else {
                    m & mask
                };
                let mem_after = u32s(&out[0]);
                let got_mem = u64::from(mem_after[2])
                    | if wide {
                        u64::from(mem_after[3]) << 32
                    } else {
                        0
                    };
                assert_eq!(
                    got_mem, want_mem,
                    "{cpu} {kernel} m {m:#x} s {s:#x} c {c:#x}"
                );
                if !wide {
                    assert_eq!(mem_after[3], (m >> 32) as u32, "{cpu} {kernel}: next dword");
                }
                let mut want_regs = sdata;
                if glc {
                    let old = if in_range { m & mask } else { 0 };
                    for (k, r) in want_regs.iter_mut().take(dw).enumerate() {
                        *r = (old >> (32 * k)) as u32;
                    }
                }
                let regs = u32s(&out[4]);
                for lane in 0..64 {
                    assert_eq!(
                        regs[lane * 4..lane * 4 + 4],
                        want_regs,
                        "{cpu} {kernel} lane {lane} m {m:#x} s {s:#x} c {c:#x}: SDATA"
                    );
                }
                checked += 1;
            }
        }
    }
    // 33 kernels (26 s_atomic_*, the no-glc add, 6 s_buffer_atomic_*) x 6 values x 5 targets.
    assert_eq!(checked, 33 * 6 * 5);
}

/// IEEE 754 minNum/maxNum of two floats given as bits (`wide`: f64, else f32) with −0 below
/// +0; a NaN loses to a number, and of two NaNs the first is kept.
fn min_max_bits(x: u64, y: u64, wide: bool, max: bool) -> u64 {
    let f = |b: u64| {
        if wide {
            f64::from_bits(b)
        } else {
            f64::from(f32::from_bits(b as u32))
        }
    };
    let (a, b) = (f(x), f(y));
    if b.is_nan() {
        return x;
    }
    if a.is_nan() {
        return y;
    }
    // Order with -0 < +0: compare (value, sign) pairs.
    let key = |v: f64| (v, !v.is_sign_negative());
    let (ka, kb) = (key(a), key(b));
    let b_wins = if max {
        kb.0 > ka.0 || kb.0 == ka.0 && kb.1 && !ka.1
    } else {
        kb.0 < ka.0 || kb.0 == ka.0 && !kb.1 && ka.1
    };
    if b_wins {
        y
    } else {
        x
    }
}

/// The LDS value after `ds_<op>[_rtn]_<type>` on `m` with DATA0 `d0` and DATA1 `d1` (Vega
/// ISA DS opcode descriptions; the compare-store takes the compare value in DATA0).
fn ds_ref(name: &str, m: u64, d0: u64, d1: u64) -> u64 {
    let rest = name.strip_prefix("ds_").unwrap().replace("_rtn", "");
    let (op, ty) = rest.rsplit_once('_').unwrap();
    let wide = ty.ends_with("64");
    let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
    let (m, a, b) = (m & mask, d0 & mask, d1 & mask);
    let sx = |x: u64| {
        if wide {
            x as i64
        } else {
            i64::from(x as u32 as i32)
        }
    };
    let r = match (op, &ty[..1]) {
        ("add", "f") => u64::from((f32::from_bits(m as u32) + f32::from_bits(a as u32)).to_bits()),
        ("min" | "max", "f") => min_max_bits(m, a, wide, op == "max"),
        ("cmpst", "f") => {
            let eq = if wide {
                f64::from_bits(m) == f64::from_bits(a)
            } else {
                f32::from_bits(m as u32) == f32::from_bits(a as u32)
            };
            if eq {
                b
            } else {
                m
            }
        }
        ("min", "i") => sx(m).min(sx(a)) as u64,
        ("max", "i") => sx(m).max(sx(a)) as u64,
        ("min", _) => m.min(a),
        ("max", _) => m.max(a),
        ("add", _) => m.wrapping_add(a),
        ("sub", _) => m.wrapping_sub(a),
        ("rsub", _) => a.wrapping_sub(m),
        ("inc", _) => {
            if m >= a {
                0
            } else {
                m + 1
            }
        }
        ("dec", _) => {
            if m == 0 || m > a {
                a
            } else {
                m - 1
            }
        }
        ("and", _) => m & a,
        ("or", _) => m | a,
        ("xor", _) => m ^ a,
        ("mskor", _) => (m & !a) | b,
        ("cmpst", _) => {
            if m == a {
                b
            } else {
                m
            }
        }
        ("wrxchg", _) => a,
        ("wrap", _) => {
            if m >= a {
                m - a
            } else {
                m.wrapping_add(b)
            }
        }
        _ => panic!("{name}"),
    };
    r & mask
}

#[test]
fn lds_atomics_match_the_isa() {
    const V32: [u32; 12] = [
        0,
        1,
        5,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF,
        0x3F80_0000,
        0xBF80_0000,
        0x7FC0_0000,
        0x7F80_0000,
        0x0000_0003,
        0x8000_0000,
    ];
    const V64: [u64; 12] = [
        0,
        1,
        5,
        0x7FFF_FFFF_FFFF_FFFF,
        0x8000_0000_0000_0000,
        u64::MAX,
        0x3FF0_0000_0000_0000,
        0xBFF0_0000_0000_0000,
        0x7FF8_0000_0000_0000,
        0x7FF0_0000_0000_0000,
        0x1_0000_0000,
        0x0000_0000_FFFF_FFFF,
    ];
    let mut kernels = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("ops", cpu, target);
        for kernel in isa.kernels().into_iter().filter(|k| k.starts_with("ds_")) {
            let wide = kernel.ends_with("64");
            let rtn = kernel.contains("_rtn_");
            // Lane i: memory V[i % 12], DATA0 V[i / 12], DATA1 V[i / 7 % 12]; a second run
            // shifts DATA0 by 5 and DATA1 by 10 places.
            for shift in [0usize, 5] {
                let pick = |i: usize, k: usize| (i / [1, 12, 7][k] + shift * k) % 12;
                let col = |k: usize| -> Vec<u64> {
                    (0..64)
                        .map(|i| {
                            if wide {
                                V64[pick(i, k)]
                            } else {
                                u64::from(V32[pick(i, k)])
                            }
                        })
                        .collect()
                };
                let (m, d0, d1) = (col(0), col(1), col(2));
                let enc = |v: &[u64]| -> Vec<u8> {
                    if wide {
                        v.iter().flat_map(|x| x.to_le_bytes()).collect()
                    } else {
                        v.iter().flat_map(|x| (*x as u32).to_le_bytes()).collect()
                    }
                };
                let size = if wide { 8 * 64 } else { 4 * 64 };
                let bufs = [
                    enc(&m),
                    enc(&d0),
                    enc(&d1),
                    vec![0u8; 64],
                    vec![0u8; size],
                    vec![0u8; size],
                ];
                let out = isa
                    .run(&kernel, 64, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                let read = |b: &[u8], i: usize| -> u64 {
                    if wide {
                        u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap())
                    } else {
                        u64::from(u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()))
                    }
                };
                for i in 0..64 {
                    let want = ds_ref(&kernel, m[i], d0[i], d1[i]);
                    let ctx = format!(
                        "{cpu} {kernel} lane {i}: m {:#x} d0 {:#x} d1 {:#x}",
                        m[i], d0[i], d1[i]
                    );
                    assert_eq!(read(&out[5], i), want, "{ctx}: LDS");
                    let ret = if rtn {
                        m[i]
                    } else if wide {
                        0xDEAD_BEEF_DEAD_BEEF
                    } else {
                        0xDEAD_BEEF
                    };
                    assert_eq!(read(&out[4], i), ret, "{ctx}: returned");
                }
            }
            kernels += 1;
        }
    }
    assert_eq!(kernels, 71 * 5);
}

#[test]
fn xcc_id_reads_the_one_modelled_xcc() {
    // The emulated GPU is one XCC (hwid module docs): every wave reads XCC_ID 0, whole or
    // as the field [3:0].
    let isa = Isa::load("ops", "gfx942", Gfx9Target::Gfx942);
    let bufs: Vec<Vec<u8>> = (0..6).map(|_| vec![0xEE; 4 * 128]).collect();
    let out = isa.run("s_getreg_xcc_id", 128, &bufs).unwrap();
    assert_eq!(u32s(&out[4]), vec![hsa_gfx9::hwid::XCC_ID; 128]);
    assert_eq!(u32s(&out[5]), vec![0; 128]);
    // Register 20 is no XCC_ID before gfx940 (llvm-mc-19 has no such name there): reading
    // it stays an illegal-instruction error naming the register.
    for (cpu, target) in &CPUS[..4] {
        let isa = Isa::load("ops", cpu, *target);
        let e = isa.run("s_getreg_hwreg20", 64, &bufs).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        assert!(e.detail().contains("hardware register 20"), "{cpu}: {e}");
    }
}

/// 64-bit LDS values for the `dsops` kernels: zeros, extremes, ±1.0 and NaN/infinity bit
/// patterns (as f64 and in each f32 half), values with and without bit 31/63 set.
const DS_VALUES: [u64; 12] = [
    0,
    1,
    0x7FFF_FFFF_FFFF_FFFF,
    0x8000_0000_0000_0000,
    u64::MAX,
    0x3FF0_0000_3F80_0000,
    0xBFF0_0000_BF80_0000,
    0x7FF8_0000_7FC0_0000,
    0xFFF0_0000_FF80_0000,
    0x8000_0005_0000_0003,
    0x0000_0003_8000_0005,
    0x1234_5678_9ABC_DEF0,
];

/// Runs `dsops` kernel `kernel` (gen_ops.py's convention): the whole LDS (2048 bytes) starts
/// as `lds`, lane i gets address `addr[i]`, DATA0 `d0[i]` and DATA1 `d1[i]`; returns what
/// each lane's v[30:33] held afterwards and the final LDS.
fn run_dsops(
    isa: &Isa,
    kernel: &str,
    lds: &[u8],
    addr: &[u32],
    d0: &[u64],
    d1: &[u64],
) -> (Vec<[u32; 4]>, Vec<u8>) {
    let bufs = [
        lds.to_vec(),
        bytes64(d0),
        bytes64(d1),
        bytes32(addr),
        vec![0u8; 16 * 64],
        vec![0u8; 2048],
    ];
    let out = isa
        .run(kernel, 64, &bufs)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    let ret = u32s(&out[4])
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    (ret, out[5].clone())
}

fn lds_get(lds: &[u8], addr: u64, n: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = usize::try_from(addr)
        .ok()
        .and_then(|a| lds.get(a..a.checked_add(n)?))
    {
        b[..n].copy_from_slice(s);
    }
    u64::from_le_bytes(b)
}

fn lds_put(lds: &mut [u8], addr: u64, n: usize, v: u64) {
    if let Some(s) = usize::try_from(addr)
        .ok()
        .and_then(|a| lds.get_mut(a..a.checked_add(n)?))
    {
        s.copy_from_slice(&v.to_le_bytes()[..n]);
    }
}

/// The initial LDS of a `dsops` run: qword q is `DS_VALUES[(7q + q / 11 + shift) % 12]`.
fn ds_image(shift: usize) -> Vec<u8> {
    (0..256)
        .flat_map(|q| DS_VALUES[(7 * q + q / 11 + shift) % 12].to_le_bytes())
        .collect()
}

#[test]
fn wrxchg2_exchanges_two_locations() {
    // Vega ISA DS_WRXCHG2[ST64]_RTN_B32/B64: ADDR + OFFSET0 * s and ADDR + OFFSET1 * s, s the
    // element size (x64 for st64), each swapped with DATA0/DATA1, the old values returned in
    // that order. Lane addresses keep the 64 lanes' locations apart.
    let mut kernels = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsops", cpu, target);
        for kernel in isa
            .kernels()
            .into_iter()
            .filter(|k| k.starts_with("xchg2_"))
        {
            let (name, offs) = kernel["xchg2_".len()..].split_once("_o").unwrap();
            let (o0, o1) = offs.split_once('_').unwrap();
            let (o0, o1): (u64, u64) = (o0.parse().unwrap(), o1.parse().unwrap());
            let size = if name.ends_with("b64") { 8usize } else { 4 };
            let st64 = name.contains("st64");
            let scale = size as u64 * if st64 { 64 } else { 1 };
            let addr: Vec<u32> = (0..64u32)
                .map(|i| if st64 { i * size as u32 } else { 16 * i })
                .collect();
            for shift in [0, 5] {
                let lds0 = ds_image(shift);
                let d0: Vec<u64> = (0..64).map(|i| DS_VALUES[(i + shift) % 12]).collect();
                let d1: Vec<u64> = (0..64).map(|i| DS_VALUES[(i / 12 + 3) % 12]).collect();
                let (ret, lds) = run_dsops(&isa, &kernel, &lds0, &addr, &d0, &d1);
                let mut want = lds0.clone();
                for i in 0..64 {
                    let mut r = [0xDEAD_BEEFu32; 4];
                    for (k, (o, d)) in [(o0, d0[i]), (o1, d1[i])].into_iter().enumerate() {
                        let a = u64::from(addr[i]) + o * scale;
                        let old = lds_get(&want, a, size);
                        lds_put(&mut want, a, size, d);
                        for j in 0..size / 4 {
                            r[k * size / 4 + j] = (old >> (32 * j)) as u32;
                        }
                    }
                    assert_eq!(ret[i], r, "{cpu} {kernel} lane {i}: returned");
                }
                assert!(lds == want, "{cpu} {kernel}: final LDS differs");
            }
            kernels += 1;
        }
    }
    // 8 kernels on each of the five targets.
    assert_eq!(kernels, 8 * 5);
}

#[test]
fn condxchg32_writes_each_flagged_half() {
    // DS_CONDXCHG32_RTN_B64 as the pseudocode of AMD's CDNA4 ISA guide gives it (same
    // opcode, 126, on every gfx9 target): ADDR0 = (ADDR + offset) & 0xFFF8, ADDR1 = ADDR0 + 4; both old
    // dwords returned; dword k of DATA, bit 31 cleared, written at ADDRk iff its bit 31 is
    // set. Lane i's address is 8i plus 0, 3 (cleared by the mask), 0x10000 or 0x7FFF0000
    // (bits above 15 dropped).
    let mut kernels = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsops", cpu, target);
        for kernel in isa
            .kernels()
            .into_iter()
            .filter(|k| k.starts_with("condxchg_"))
        {
            let offset: u32 = kernel["condxchg_o".len()..].parse().unwrap();
            let addr: Vec<u32> = (0..64u32)
                .map(|i| 8 * i + [0, 3, 0x10000, 0x7FFF_0000][i as usize % 4])
                .collect();
            for shift in [0, 7] {
                let lds0 = ds_image(shift);
                let d0: Vec<u64> = (0..64).map(|i| DS_VALUES[(i + shift) % 12]).collect();
                let (ret, lds) = run_dsops(&isa, &kernel, &lds0, &addr, &d0, &d0);
                let mut want = lds0.clone();
                for i in 0..64 {
                    let a0 = u64::from(addr[i].wrapping_add(offset) & 0xFFF8);
                    let mut r = [0xDEAD_BEEFu32; 4];
                    for (k, rk) in r.iter_mut().enumerate().take(2) {
                        let a = a0 + 4 * k as u64;
                        *rk = lds_get(&want, a, 4) as u32;
                        let d = (d0[i] >> (32 * k)) as u32;
                        if d >> 31 != 0 {
                            lds_put(&mut want, a, 4, u64::from(d & 0x7FFF_FFFF));
                        }
                    }
                    assert_eq!(ret[i], r, "{cpu} {kernel} lane {i}: returned");
                }
                assert!(lds == want, "{cpu} {kernel}: final LDS differs");
            }
            kernels += 1;
        }
    }
    assert_eq!(kernels, 2 * 5);
}

#[test]
fn src2_forms_combine_two_lds_locations() {
    // Vega ISA DS_<OP>_SRC2_<TYPE>: A = ADDR; B = A + 4 * (offset1[7] ? {A[31], A[31:17]} :
    // {offset1[6], offset1[6:0], offset0}), a 16-bit two's-complement dword count; DS[A] =
    // DS[A] op DS[B] (write: DS[B]), the op that of the LDS atomic of the same name with
    // DS[B] as its data. Offsets 4 (B = A + 16), 0x7FFC (B = A − 16) and 0x8000 with A below
    // 2^17 (B = A); lane i's A = 32i + 16, so no lane's B is another lane's A. gfx900..gfx908
    // only (llvm-mc-19 rejects the forms on gfx90a and gfx942).
    let mut kernels = 0;
    for (cpu, target) in &CPUS[..3] {
        let isa = Isa::load("dsops", cpu, *target);
        for kernel in isa.kernels().into_iter().filter(|k| k.starts_with("src2_")) {
            let (op, off) = kernel["src2_".len()..].rsplit_once("_o").unwrap();
            let off = u32::from_str_radix(off, 16).unwrap();
            let (base, ty) = op.split_once('_').unwrap();
            let wide = ty.ends_with("64");
            let n = if wide { 8 } else { 4 };
            let addr: Vec<u32> = (0..64u32).map(|i| 32 * i + 16).collect();
            for shift in [0, 3, 8] {
                let lds0 = ds_image(shift);
                let (ret, lds) = run_dsops(&isa, &kernel, &lds0, &addr, &[0; 64], &[0; 64]);
                let mut want = lds0.clone();
                for (i, &a) in addr.iter().enumerate() {
                    let dwords = if off & 0x8000 != 0 {
                        ((a >> 17 & 0x7FFF) | (a >> 16 & 0x8000)) as u16 as i16
                    } else {
                        ((off & 0x7FFF) | (off << 1 & 0x8000)) as u16 as i16
                    };
                    let b = (i64::from(a) + 4 * i64::from(dwords)) as u64;
                    let (x, y) = (lds_get(&want, a.into(), n), lds_get(&want, b, n));
                    let r = if base == "write" {
                        y
                    } else {
                        ds_ref(&format!("ds_{base}_{ty}"), x, y, 0)
                    };
                    lds_put(&mut want, a.into(), n, r);
                    assert_eq!(ret[i], [0xDEAD_BEEF; 4], "{cpu} {kernel} lane {i}");
                }
                for q in 0..256 {
                    assert_eq!(
                        lds_get(&lds, 8 * q, 8),
                        lds_get(&want, 8 * q, 8),
                        "{cpu} {kernel} shift {shift}: LDS qword {q}"
                    );
                }
            }
            kernels += 1;
        }
    }
    // 30 forms x 3 offsets on each of gfx900, gfx906, gfx908.
    assert_eq!(kernels, 30 * 3 * 3);
    // gfx90a and gfx942 have none of them.
    for (cpu, target) in &CPUS[3..] {
        let isa = Isa::load("dsops", cpu, *target);
        assert!(
            !isa.kernels().iter().any(|k| k.starts_with("src2_")),
            "{cpu}"
        );
    }
}

#[test]
fn scalar_scratch_accesses_flat_scratch_plus_offset() {
    // s_scratch_store/load at FLAT_SCRATCH + offset (SBASE ignored), the offset's low two bits
    // cleared, an SGPR offset too; the bytes are those a global access of FLAT_SCRATCH +
    // offset sees (gen_ops.py's `s_scratch`).
    let data: Vec<u32> = (0..12)
        .map(|k| 0x1111_1111u32.wrapping_mul(k + 1) ^ 0x8000_0001)
        .collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsops", cpu, target);
        let bufs = [
            vec![0u8; 64],
            bytes32(&data),
            vec![0u8; 64],
            vec![0u8; 64],
            vec![0u8; 32 * 64],
            vec![0u8; 32 * 64],
        ];
        let out = isa
            .run("s_scratch", 64, &bufs)
            .unwrap_or_else(|e| panic!("{cpu}: {e}"));
        let (p4, p5) = (u32s(&out[4]), u32s(&out[5]));
        for i in 0..64 {
            // s[0:3] from 0x40, s4 from 0x84, s5 untouched (0), s[6:7] from 0x100.
            let want4 = [
                data[0], data[1], data[2], data[3], data[4], 0, data[6], data[7],
            ];
            assert_eq!(p4[8 * i..8 * i + 8], want4, "{cpu} lane {i}: scalar loads");
            // The global view of FLAT_SCRATCH + 0x40, then the scalar load of what a global
            // store put at FLAT_SCRATCH + 0x200.
            let want5 = [
                data[0], data[1], data[2], data[3], data[8], data[9], data[10], data[11],
            ];
            assert_eq!(p5[8 * i..8 * i + 8], want5, "{cpu} lane {i}: global view");
        }
    }
}

#[test]
fn malformed_new_ds_and_smem_words_are_errors() {
    use hsa_gfx9::decode;
    let words = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    // ds_add_src2_u32 v1 (llvm-mc-19: [0x00,0x00,0x00,0xd9,0x01,0x00,0x00,0x00]).
    let src2 = [0xD900_0000, 0x0000_0001];
    for (cpu, target) in CPUS {
        let ok = decode(&words(&src2), target);
        if matches!(target, Gfx9Target::Gfx90a | Gfx9Target::Gfx942) {
            // No such opcode there (llvm-mc-19: "instruction not supported on this GPU").
            let e = ok.unwrap_err();
            assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        } else {
            assert_eq!(ok.unwrap().to_string(), "ds_add_src2_u32 v1", "{cpu}");
            // A VDATA0, VDATA1 or VDST field the form does not have must be 0.
            for field in [8, 16, 24] {
                let e = decode(&words(&[src2[0], src2[1] | 5 << field]), target).unwrap_err();
                assert_eq!(e.status(), Status::IllegalInstruction, "{cpu} {field}");
                assert!(e.detail().contains("unused operand field"), "{cpu}: {e}");
            }
        }
        // ds_condxchg32_rtn_b64 has no DATA1: a nonzero VDATA1 field is refused.
        let cx = [0xD8FC_0000, 0x0400_0201];
        assert!(decode(&words(&cx), target).is_ok(), "{cpu}");
        let e = decode(&words(&[cx[0], cx[1] | 6 << 16]), target).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        // s_scratch_load_dword s4, s[2:3], 0x4 truncated to one word, with SOE set (the SGPR
        // in SOFFSET plus the immediate, as llvm-mc-19 prints it), and with SOE but no IMM
        // (refused).
        let sl = [0xC016_0101, 0x0000_0004];
        assert_eq!(
            decode(&words(&sl), target).unwrap().to_string(),
            "s_scratch_load_dword s4, s[2:3], 0x4",
            "{cpu}"
        );
        let e = decode(&words(&sl[..1]), target).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        assert_eq!(
            decode(&words(&[sl[0] | 1 << 14, sl[1]]), target)
                .unwrap()
                .to_string(),
            "s_scratch_load_dword s4, s[2:3], s0 offset:0x4",
            "{cpu}"
        );
        let e = decode(&words(&[(sl[0] | 1 << 14) & !(1 << 17), sl[1]]), target).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        assert!(e.detail().contains("soe"), "{cpu}: {e}");
        // s_set_gpr_idx_off has no immediate (llvm-mc-19: invalid encoding when it is not 0);
        // s_set_gpr_idx_on takes a constant source, and a literal needs its second dword.
        let e = decode(&words(&[0xBF9C_0001]), target).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        assert_eq!(
            decode(&words(&[0xBF11_0F81]), target).unwrap().to_string(),
            "s_set_gpr_idx_on 1, gpr_idx(SRC0,SRC1,SRC2,DST)",
            "{cpu}"
        );
        let e = decode(&words(&[0xBF11_0100 | 0xFF]), target).unwrap_err();
        assert_eq!(
            e.status(),
            Status::IllegalInstruction,
            "{cpu}: a literal with no dword"
        );
    }
}

#[test]
fn gpr_index_mode_moves_the_flagged_vgpr_operands() {
    // Vega ISA S_SET_GPR_IDX_ON/OFF/IDX/MODE (the same in the CDNA1/2/3 guides): with
    // MODE.GPR_IDX_EN set, VALU operands whose M0[15:12] bit (src0, src1, src2, dst) is set
    // address VGPR n + M0[7:0]; `on` writes M0[7:0] and M0[15:12], `idx` M0[7:0], `mode`
    // M0[15:12], keeping M0's other bits. gen_ops.py's `gpr_idx_*` kernels.
    let p1: Vec<u32> = (0..64u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x8000_0001)
        .collect();
    let p2: Vec<u32> = (0..64u32).map(|i| 0x0F0F_0000 | i).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsops", cpu, target);
        let bufs = [
            vec![0u8; 64],
            bytes32(&p1),
            bytes32(&p2),
            vec![0u8; 64],
            vec![0u8; 48 * 64],
        ];
        for kernel in ["src0", "dst_sgpr", "vop3", "idx_mode", "b64"] {
            let out = isa
                .run(&format!("gpr_idx_{kernel}"), 64, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} gpr_idx_{kernel}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..64 {
                let mut v: Vec<u32> = (0..8u32)
                    .map(|k| p1[i] ^ 0x1111_1111u32.wrapping_mul(k))
                    .collect();
                let mut r = [0xDEAD_BEEFu32; 4];
                match kernel {
                    "src0" => {
                        r[0] = v[3];
                        r[1] = 0xABCD_1003;
                        r[2] = v[0];
                    }
                    "dst_sgpr" => v[5] = p2[i],
                    "vop3" => r[0] = v[0].wrapping_add(v[2]).wrapping_add(v[3]),
                    "idx_mode" => {
                        r[0] = v[0].wrapping_sub(v[7]);
                        r[1] = 0xFFFF_2F06;
                    }
                    _ => {
                        let x = (u64::from(v[3]) << 32 | u64::from(v[2])) << 1;
                        v[2] = x as u32;
                        v[3] = (x >> 32) as u32;
                    }
                }
                v.extend_from_slice(&r);
                assert_eq!(
                    got[12 * i..12 * i + 12],
                    v[..],
                    "{cpu} gpr_idx_{kernel} lane {i}"
                );
            }
        }
        // An index that moves an operand past v255 is refused, naming the mode.
        let e = isa.run("gpr_idx_past_v255", 64, &bufs).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        assert!(e.detail().contains("GPR index mode"), "{cpu}: {e}");
    }
}
