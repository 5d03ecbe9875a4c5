//! Execution tests of the gfx9 instructions the opcode census of issue 39 closed last: the
//! VOP1/VOP3 conversions, cube-map, legacy and quad-SAD instructions (`vop3y` kernels), the
//! gfx940 FP8/BF8 conversions (`fp8`), the new DS, buffer, global and scratch forms (`dsx`,
//! `memx`) and the scalar ones (`sopx`), built by `testdata/codeobjects/isa/gen_census.py`
//! (which states each kernel's convention). Every lane is compared with a host reference
//! written from the instruction's definition in AMD's ISA documents: the Vega ISA, the
//! CDNA3 ISA guide's pseudocode (FP8/BF8, DS_*_ADDTID, DS_APPEND) and, where those leave a
//! conversion's rounding open, the LLVM and LLPC uses that rely on it (see each reference).

mod isa_harness;
use isa_harness::*;

const N: usize = 256;

/// f32 edge values: zeros, ±1, ±0.5, ±∞, quiet and signaling NaNs, the largest finite
/// value, denormals, byte-range values and their halves, the exp/log limits.
const F32S: [u32; 24] = [
    0x0000_0000,
    0x8000_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x3F00_0000,
    0xBF00_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x7F7F_FFFF,
    0x0000_0001,
    0x8040_0000,
    0x4300_8000, // 128.5
    0x4301_8000, // 129.5
    0x437F_8000, // 255.5
    0x4380_0000, // 256
    0xC2FC_0000, // -126
    0xC2FE_0000, // -127
    0x42FE_0000, // 127
    0x3F7F_FFFF,
    0x4049_0FDB,
    0xC020_0000, // -2.5
    0x4100_0000, // 8
];

/// f16 edge values in both halves.
const F16S: [u16; 16] = [
    0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x83FF, 0x7BFF,
    0x3BFF, 0x4000, 0xC000, 0x3555,
];

/// Random f32 bits with a moderate exponent (about 2^-20 to 2^20), any sign.
fn nice_f32(x: u32) -> u32 {
    x & 0x807F_FFFF | (107 + (x >> 23 & 0x1F) * 2 / 3 + 6) << 23
}

/// The three input columns: f32 edges against each other, f16 edge pairs, then random bits
/// and moderate floats.
fn inputs() -> [Vec<u32>; 3] {
    let mut r = prng(0x39_0002);
    let mut v: [Vec<u32>; 3] = Default::default();
    for i in 0..N {
        for (k, col) in v.iter_mut().enumerate() {
            col.push(match i {
                0..=95 => F32S[(i / 24 * (k + 1) + i * (1 + 2 * k)) % 24],
                96..=159 => {
                    let h = |j: usize| u32::from(F16S[j % 16]);
                    h(i + 5 * k) | h(i / 4 + 3 * k) << 16
                }
                160..=207 => nice_f32(r()),
                _ => r(),
            });
        }
    }
    v
}

fn f32_of(x: u32) -> f32 {
    f32::from_bits(x)
}
fn lo(x: u32) -> u16 {
    x as u16
}
fn hi(x: u32) -> u16 {
    (x >> 16) as u16
}
fn h64(x: u16) -> f64 {
    half::f16::from_bits(x).to_f64()
}

/// Runs `kernel` over the three columns (p1..p3) into p4 (dwords).
fn run(isa: &Isa, kernel: &str, x: &[Vec<u32>; 3]) -> Vec<u32> {
    let out = isa
        .run(
            kernel,
            N as u32,
            &[
                vec![0; 4],
                bytes32(&x[0]),
                bytes32(&x[1]),
                bytes32(&x[2]),
                vec![0; N * 4],
            ],
        )
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    u32s(&out[4])
}

/// The value of a clamp with MODE.DX10_CLAMP (the launch default): [0, 1], NaN → 0.
fn clamp01(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// `f32_to_snorm`/`f16_to_snorm` (Vega ISA V_CVT_PKNORM_I16_F32, V_CVT_NORM_I16_F16): x ×
/// 32767 rounded to nearest even (LLPC's packSnorm2x16 relies on it: GLSL's `round`),
/// saturated to ±32767, NaN → 0.
fn snorm(x: f64) -> u32 {
    if x.is_nan() {
        0
    } else {
        u32::from((x * 32767.0).round_ties_even().clamp(-32767.0, 32767.0) as i16 as u16)
    }
}

/// `f32_to_unorm`/`f16_to_unorm`: x × 65535 rounded to nearest even, saturated to 0..65535.
fn unorm(x: f64) -> u32 {
    if x.is_nan() {
        0
    } else {
        (x * 65535.0).round_ties_even().clamp(0.0, 65535.0) as u32
    }
}

/// `f32_to_u8` of V_CVT_PK_U8_F32: rounded to nearest even (LLPC's packUnorm4x8 scales by
/// 255 and relies on it), saturated to 0..255, NaN → 0.
fn u8_sat(x: f32) -> u32 {
    if x.is_nan() {
        0
    } else {
        f64::from(x).round_ties_even().clamp(0.0, 255.0) as u32
    }
}

/// V_CUBEID/SC/TC/MA_F32 (Vega ISA; the RDNA3 guide's pseudocode): the major axis is z when
/// |z| ≥ |x| and |z| ≥ |y|, else y when |y| ≥ |x|, else x.
fn cube(op: &str, x: f32, y: f32, z: f32) -> f32 {
    let (zmaj, ymaj) = (z.abs() >= x.abs() && z.abs() >= y.abs(), y.abs() >= x.abs());
    match op {
        "v_cubeid_f32" if zmaj => {
            if z < 0.0 {
                5.0
            } else {
                4.0
            }
        }
        "v_cubeid_f32" if ymaj => {
            if y < 0.0 {
                3.0
            } else {
                2.0
            }
        }
        "v_cubeid_f32" => {
            if x < 0.0 {
                1.0
            } else {
                0.0
            }
        }
        "v_cubesc_f32" if zmaj => {
            if z < 0.0 {
                -x
            } else {
                x
            }
        }
        "v_cubesc_f32" if ymaj => x,
        "v_cubesc_f32" => {
            if x < 0.0 {
                z
            } else {
                -z
            }
        }
        "v_cubetc_f32" if zmaj => -y,
        "v_cubetc_f32" if ymaj => {
            if y < 0.0 {
                -z
            } else {
                z
            }
        }
        "v_cubetc_f32" => -y,
        _ if zmaj => z * 2.0,
        _ if ymaj => y * 2.0,
        _ => x * 2.0,
    }
}

/// V_EXP_LEGACY_F32 (Vega ISA VOP1 75; CLRX's measured description): 2^x for x ≥ −126, 0
/// below (never a denormal); a NaN quieted.
fn exp_legacy(x: u32) -> u32 {
    let f = f32_of(x);
    if f.is_nan() {
        x | 0x40_0000
    } else if f < -126.0 {
        0
    } else {
        (f64::from(f).exp2() as f32).to_bits()
    }
}

/// V_LOG_LEGACY_F32 (VOP1 76): denormal inputs read as 0 (→ −∞), a negative input the
/// negative default NaN, a NaN quieted, else log2.
fn log_legacy(x: u32) -> u32 {
    let f = f32_of(x);
    if f == 0.0 || f.is_subnormal() {
        f32::NEG_INFINITY.to_bits()
    } else if f < 0.0 {
        0xFFC0_0000
    } else if f.is_nan() {
        x | 0x40_0000
    } else {
        (f64::from(f).log2() as f32).to_bits()
    }
}

/// The SAD of the four bytes of `a` against `b`; `masked` leaves out the bytes whose `b`
/// byte is 0 (MSAD).
fn sad(a: u32, b: u32, masked: bool) -> u32 {
    (0..4)
        .filter(|k| !masked || b >> (8 * k) & 0xFF != 0)
        .map(|k| (a >> (8 * k) & 0xFF).abs_diff(b >> (8 * k) & 0xFF))
        .sum()
}

/// The reference of a one-dword `vop3y` kernel on (a, b, c); c is also the old destination.
fn reference(kernel: &str, a: u32, b: u32, c: u32) -> Option<u32> {
    let (fa, fb, fc) = (f32_of(a), f32_of(b), f32_of(c));
    Some(match kernel {
        "v_cvt_norm_i16_f16" => snorm(h64(lo(a))),
        "v_cvt_norm_u16_f16" => unorm(h64(lo(a))),
        "v_cvt_norm_i16_f16_sdwa" => c & 0xFFFF | snorm(h64(hi(a))) << 16,
        "v_exp_legacy_f32" => exp_legacy(a),
        "v_log_legacy_f32" => log_legacy(a),
        "v_exp_legacy_f32_neg_clamp" => clamp01(f32_of(exp_legacy(a ^ 0x8000_0000))).to_bits(),
        "v_log_legacy_f32_abs_mul2" => (f32_of(log_legacy(a & 0x7FFF_FFFF)) * 2.0).to_bits(),
        "v_cubeid_f32" | "v_cubesc_f32" | "v_cubetc_f32" | "v_cubema_f32" => {
            cube(kernel, fa, fb, fc).to_bits()
        }
        "v_cubesc_f32_neg" => cube("v_cubesc_f32", -fa, fb.abs(), fc).to_bits(),
        "v_cvt_pk_u8_f32" => {
            let sh = 8 * (b & 3);
            c & !(0xFF << sh) | u8_sat(fa) << sh
        }
        "v_cvt_pkaccum_u8_f32" => {
            let sh = 8 * (b & 3);
            c & !(0xFF << sh) | u8_sat(fa) << sh
        }
        "v_cvt_pknorm_i16_f32" => snorm(f64::from(fa)) | snorm(f64::from(fb)) << 16,
        "v_cvt_pknorm_u16_f32" => unorm(f64::from(fa)) | unorm(f64::from(fb)) << 16,
        "v_cvt_pknorm_i16_f16" => snorm(h64(lo(a))) | snorm(h64(lo(b))) << 16,
        "v_cvt_pknorm_u16_f16" => unorm(h64(lo(a))) | unorm(h64(lo(b))) << 16,
        "v_cvt_pknorm_i16_f16_opsel110" => snorm(h64(hi(a))) | snorm(h64(hi(b))) << 16,
        "v_cvt_pknorm_u16_f16_neg" => unorm(-h64(lo(a))) | unorm(h64(lo(b) & 0x7FFF)) << 16,
        "v_cvt_pk_i16_i32" => {
            let s = |x: u32| u32::from((x as i32).clamp(-32768, 32767) as i16 as u16);
            s(a) | s(b) << 16
        }
        "v_cvt_pk_u16_u32" => a.min(0xFFFF) | b.min(0xFFFF) << 16,
        // V_MAD_LEGACY_U16/I16: the 16-bit product plus S2 in 16 bits; with clamp saturated.
        "v_mad_legacy_u16" | "v_mad_legacy_u16_clamp" => {
            let t = u32::from(lo(a)) * u32::from(lo(b)) + u32::from(lo(c));
            if kernel.ends_with("clamp") {
                t.min(0xFFFF)
            } else {
                t & 0xFFFF
            }
        }
        "v_mad_legacy_i16" | "v_mad_legacy_i16_clamp" => {
            let t = i32::from(lo(a) as i16) * i32::from(lo(b) as i16) + i32::from(lo(c) as i16);
            let t = if kernel.ends_with("clamp") {
                t.clamp(-32768, 32767)
            } else {
                t
            };
            u32::from(t as i16 as u16)
        }
        _ => return None,
    })
}

/// Bits equal, or both f32 NaNs for the kernels with an f32 result.
fn same(kernel: &str, got: u32, want: u32) -> bool {
    let f32_result = kernel.starts_with("v_cube")
        || kernel.starts_with("v_exp_legacy")
        || kernel.starts_with("v_log_legacy");
    got == want || f32_result && f32_of(got).is_nan() && f32_of(want).is_nan()
}

#[test]
fn vop1_and_vop3_conversion_cube_legacy_and_sad_instructions_match_the_isa() {
    let x = inputs();
    for (cpu, target) in CPUS {
        let isa = Isa::load("vop3y", cpu, target);
        let mut ran = 0;
        for kernel in isa.kernels() {
            if kernel.starts_with("qsad_") || kernel == "v_clrexcp" {
                continue;
            }
            let got = run(&isa, &kernel, &x);
            // The legacy f16 forms: the results of their gfx9 namesakes (the same arithmetic
            // in the Vega ISA), which gfx9_ops.rs and gfx9_isa.rs check against host
            // references, but for the high half: the destination starts as c, the legacy form
            // writes its high half as 0 and the namesake keeps it (the ISA guides' op_sel
            // notes: "this is different from V_MAD_F16").
            let namesake = match kernel.as_str() {
                "v_mad_legacy_f16" => Some("v_mad_f16"),
                "v_fma_legacy_f16" => Some("v_fma_f16"),
                "v_div_fixup_legacy_f16" => Some("v_div_fixup_f16"),
                _ => None,
            };
            if let Some(n) = namesake {
                let theirs = run(&isa, n, &x);
                for lane in 0..N {
                    assert_eq!(
                        got[lane],
                        theirs[lane] & 0xFFFF,
                        "{cpu} {kernel} vs {n} lane {lane}"
                    );
                    assert_eq!(
                        theirs[lane] >> 16,
                        x[2][lane] >> 16,
                        "{cpu} {n} keeps c's high half, lane {lane}"
                    );
                }
                ran += 1;
                continue;
            }
            if matches!(
                kernel.as_str(),
                "v_mad_f16" | "v_fma_f16" | "v_div_fixup_f16"
            ) {
                continue;
            }
            for lane in 0..N {
                let (a, b, c) = (x[0][lane], x[1][lane], x[2][lane]);
                let want = reference(&kernel, a, b, c)
                    .unwrap_or_else(|| panic!("no reference for {kernel}"));
                assert!(
                    same(&kernel, got[lane], want),
                    "{cpu} {kernel} lane {lane}: a {a:#x} b {b:#x} c {c:#x}: got {:#x}, want \
                     {want:#x}",
                    got[lane]
                );
            }
            ran += 1;
        }
        assert_eq!(ran, 29, "{cpu}: kernels run");
    }
}

#[test]
fn quad_sads_match_the_isa() {
    let mut r = prng(0x5AD);
    // Bytes with many zeros (the masked forms skip them) and extremes.
    let mut byte = || match r() % 5 {
        0 => 0,
        1 => 0xFF,
        _ => r() & 0xFF,
    };
    let mut word = || (0..4).fold(0u32, |w, k| w | byte() << (8 * k));
    let s0: Vec<u64> = (0..N)
        .map(|_| u64::from(word()) | u64::from(word()) << 32)
        .collect();
    let s1: Vec<u32> = (0..N).map(|_| word()).collect();
    let mut r2 = prng(0xACC);
    // Accumulators: small, and near the top so that clamp saturates.
    let acc: Vec<u32> = (0..4 * N)
        .map(|i| {
            if i % 3 == 0 {
                0xFFFF_FF00 | r2() & 0xFF
            } else {
                r2()
            }
        })
        .collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("vop3y", cpu, target);
        for (kernel, op, clamp) in [
            ("qsad_v_qsad_pk_u16_u8", "qsad", false),
            ("qsad_v_qsad_pk_u16_u8_clamp", "qsad", true),
            ("qsad_v_mqsad_pk_u16_u8", "mqsad", false),
            ("qsad_v_mqsad_u32_u8", "mqsad_u32", false),
            ("qsad_v_mqsad_u32_u8_clamp", "mqsad_u32", true),
        ] {
            let wide = op == "mqsad_u32";
            let accbytes = if wide {
                bytes32(&acc)
            } else {
                bytes32(&acc[..2 * N])
            };
            let out = isa
                .run(
                    kernel,
                    N as u32,
                    &[
                        vec![0; 4],
                        bytes64(&s0),
                        bytes32(&s1),
                        accbytes,
                        vec![0; N * 16],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            for lane in 0..N {
                for k in 0..4 {
                    let window = (s0[lane] >> (8 * k)) as u32;
                    let sum = sad(window, s1[lane], op != "qsad");
                    let (want, have) = if wide {
                        let t = u64::from(sum) + u64::from(acc[4 * lane + k]);
                        let v = if clamp {
                            t.min(0xFFFF_FFFF)
                        } else {
                            t & 0xFFFF_FFFF
                        };
                        (v as u32, got[4 * lane + k])
                    } else {
                        let a16 = (u64::from(acc[2 * lane]) | u64::from(acc[2 * lane + 1]) << 32)
                            >> (16 * k)
                            & 0xFFFF;
                        let t = u64::from(sum) + a16;
                        let v = if clamp { t.min(0xFFFF) } else { t & 0xFFFF };
                        let g = u64::from(got[2 * lane]) | u64::from(got[2 * lane + 1]) << 32;
                        (v as u32, (g >> (16 * k) & 0xFFFF) as u32)
                    };
                    assert_eq!(have, want, "{cpu} {kernel} lane {lane} part {k}");
                }
            }
        }
        // v_clrexcp: both encodings run and the wave goes on.
        let got = run(&isa, "v_clrexcp", &inputs());
        assert_eq!(got, vec![7; N], "{cpu} v_clrexcp");
    }
}

// --- FP8 / BF8 (gfx942) ----------------------------------------------------------------------

/// The value of an 8-bit float of gfx940's FNUZ formats (CDNA3 ISA data types; LLVM's
/// Float8E4M3FNUZ and Float8E5M2FNUZ): FP8 = E4M3 with bias 8, BF8 = E5M2 with bias 16; no
/// infinities, 0x80 the one NaN.
fn fnuz(v: u8, bf8: bool) -> f64 {
    if v == 0x80 {
        return f64::NAN;
    }
    let (m, bias) = if bf8 { (2, 16) } else { (3, 8) };
    let e = i32::from(v & 0x7F) >> m;
    let f = f64::from(v & ((1 << m) - 1)) / f64::from(1 << m);
    let mag = if e == 0 {
        f * 2f64.powi(1 - bias)
    } else {
        (1.0 + f) * 2f64.powi(e - bias)
    };
    if v & 0x80 != 0 {
        -mag
    } else {
        mag
    }
}

/// f32 → FNUZ 8-bit: round to nearest even over the format's values (V_CVT_PK_FP8_F32's
/// pseudocode forces ROUND_NEAREST_EVEN); NaN → 0x80; past the largest finite value (after
/// rounding; ±∞ too) → 0x80, as hip_fp8's unsaturated conversion expects; ±0 → 0.
fn to_fnuz(x: f32, bf8: bool) -> u8 {
    if x.is_nan() {
        return 0x80;
    }
    let a = f64::from(x.abs());
    let mut best = 0u8;
    let mut best_err = f64::INFINITY;
    for c in 0..=0x7Fu8 {
        let err = (fnuz(c, bf8) - a).abs();
        if err < best_err || err == best_err && c & 1 == 0 {
            best = c;
            best_err = err;
        }
    }
    // Above the largest value: overflow when nearer the (missing) next one, or halfway.
    let max = fnuz(0x7F, bf8);
    let next = max + (max - fnuz(0x7E, bf8));
    if a >= (max + next) / 2.0 {
        return 0x80;
    }
    if best == 0 {
        0
    } else {
        best | if x.is_sign_negative() { 0x80 } else { 0 }
    }
}

/// `n` of a kernel name ending in `_b<n>`.
fn suffix_digit(kernel: &str) -> Option<u32> {
    let (rest, d) = kernel.split_at(kernel.len() - 1);
    rest.ends_with("_b").then(|| d.parse().ok()).flatten()
}

#[test]
// (lane loops index the three input columns at once)
#[allow(clippy::needless_range_loop)]
fn fp8_and_bf8_conversions_match_the_cdna3_isa() {
    let isa = Isa::load("fp8", "gfx942", hsa_gfx9::Gfx9Target::Gfx942);
    let mut x = inputs();
    // Every byte value in the first 64 lanes' bytes, and f32 values near FP8's and BF8's
    // rounding boundaries in the rest.
    for lane in 0..64 {
        x[0][lane] = (0..4).fold(0u32, |w, k| w | ((4 * lane + k) as u32 & 0xFF) << (8 * k));
    }
    let mut r = prng(0xF8);
    for lane in 64..N {
        if lane % 2 == 0 {
            let c = (r() & 0xFF) as u8;
            let bf8 = lane % 4 == 0;
            let v = fnuz(c, bf8);
            if v.is_finite() {
                let ulp = v.abs() * if bf8 { 0.25 } else { 0.125 } + 1e-6;
                x[0][lane] = ((v + ulp * (f64::from(r() % 5) / 4.0 - 0.5)) as f32).to_bits();
                x[1][lane] = ((-v + ulp * 0.5) as f32).to_bits();
            }
        }
    }
    let mut ran = 0;
    for kernel in isa.kernels() {
        let bf8 = kernel.contains("bf8");
        let out = isa
            .run(
                &kernel,
                N as u32,
                &[
                    vec![0; 4],
                    bytes32(&x[0]),
                    bytes32(&x[1]),
                    bytes32(&x[2]),
                    vec![0; N * 8],
                ],
            )
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let got = u32s(&out[4]);
        for lane in 0..N {
            let (a, b, c) = (x[0][lane], x[1][lane], x[2][lane]);
            let f = |v: u8| (fnuz(v, bf8) as f32).to_bits();
            let canon = |v: u32| if f32_of(v).is_nan() { 0x7FC0_0000 } else { v };
            let (want, have): (Vec<u32>, Vec<u32>) = if kernel.starts_with("v_cvt_f32_") {
                let byte = suffix_digit(&kernel).unwrap_or(0);
                (vec![canon(f((a >> (8 * byte)) as u8))], vec![got[lane]])
            } else if kernel.starts_with("v_cvt_pk_f32_") {
                let w = if kernel.ends_with("_w1") { a >> 16 } else { a };
                (
                    vec![canon(f(w as u8)), canon(f((w >> 8) as u8))],
                    got[2 * lane..2 * lane + 2].to_vec(),
                )
            } else if kernel.starts_with("v_cvt_pk_") {
                let (p, q) = if kernel.ends_with("_neg") {
                    (-f32_of(a), f32_of(b).abs())
                } else {
                    (f32_of(a), f32_of(b))
                };
                let pk = u32::from(to_fnuz(p, bf8)) | u32::from(to_fnuz(q, bf8)) << 8;
                let v = if kernel.ends_with("_hi") {
                    c & 0xFFFF | pk << 16
                } else {
                    c & 0xFFFF_0000 | pk
                };
                (vec![v], vec![got[lane]])
            } else {
                // V_CVT_SR_*_F32 (CDNA3 pseudocode): the mantissa plus S1[31:12], wrapping in
                // its 23 bits, then rounded as the packed conversion; into byte n of D.
                let n = suffix_digit(&kernel).unwrap();
                let m = (a & 0x7F_FFFF).wrapping_add(b >> 12) & 0x7F_FFFF;
                let v = to_fnuz(f32_of(a & 0xFF80_0000 | m), bf8);
                (
                    vec![c & !(0xFF << (8 * n)) | u32::from(v) << (8 * n)],
                    vec![got[lane]],
                )
            };
            let have: Vec<u32> =
                if kernel.starts_with("v_cvt_f32_") || kernel.starts_with("v_cvt_pk_f32_") {
                    have.into_iter().map(canon).collect()
                } else {
                    have
                };
            assert_eq!(
                have, want,
                "{kernel} lane {lane}: a {a:#x} b {b:#x} c {c:#x}"
            );
        }
        ran += 1;
    }
    assert_eq!(ran, 26);
}

// --- DS ----------------------------------------------------------------------------------

/// `bufs` of `n` zero bytes each after p0 (4 bytes).
fn zeros(k: usize, n: usize) -> Vec<Vec<u8>> {
    let mut v = vec![vec![0u8; 4]];
    v.extend((0..k).map(|_| vec![0u8; n]));
    v
}

#[test]
fn ds_b96_append_consume_and_addtid_match_the_isa() {
    let mut r = prng(0xD5);
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsx", cpu, target);
        // ds_write_b96/ds_read_b96 (and ds_nop between): each work-group's items reversed,
        // 12 bytes each.
        let items: Vec<u32> = (0..3 * N).map(|_| r()).collect();
        let mut bufs = zeros(4, 3 * N * 4);
        bufs[1] = bytes32(&items);
        let out = isa.run("ds_b96", N as u32, &bufs).unwrap();
        let got = u32s(&out[4]);
        for i in 0..N {
            let src = i / 64 * 64 + 63 - i % 64;
            assert_eq!(
                got[3 * i..3 * i + 3],
                items[3 * src..3 * src + 3],
                "{cpu} ds_b96 {i}"
            );
        }
        // ds_append/ds_consume: the counter's old value to every active lane, +/- the active
        // lanes' count (Vega ISA DS_APPEND/DS_CONSUME).
        for (mask, init) in [
            (u64::MAX, 5u32),
            (0x8000_0000_0000_0001, 0xFFFF_FFFF),
            (0x0F0F_0000_FFFF_1234, 1),
        ] {
            let mut bufs = zeros(7, 64 * 4);
            bufs[1] = bytes64(&[mask]);
            bufs[2] = bytes32(&[init]);
            let out = isa.run("ds_append_consume", 64, &bufs).unwrap();
            let n = mask.count_ones();
            for lane in 0..64 {
                let on = mask >> lane & 1 != 0;
                let (v5, v6) = if on { (init, init) } else { (0xDEAD, 0xBEEF) };
                assert_eq!(u32s(&out[4])[lane], v5, "{cpu} ds_append lane {lane}");
                assert_eq!(u32s(&out[5])[lane], v6, "{cpu} ds_consume lane {lane}");
                assert_eq!(
                    u32s(&out[6])[lane],
                    init.wrapping_add(n),
                    "{cpu} append counter"
                );
                assert_eq!(
                    u32s(&out[7])[lane],
                    init.wrapping_sub(n),
                    "{cpu} consume counter"
                );
            }
        }
        // ds_write/read_addtid_b32: LDS[M0[15:0] + offset + lane * 4].
        let vals: Vec<u32> = (0..N).map(|_| r()).collect();
        let mut bufs = zeros(5, N * 4);
        bufs[1] = bytes32(&vals);
        let out = isa.run("ds_addtid", N as u32, &bufs).unwrap();
        for i in 0..N {
            assert_eq!(u32s(&out[4])[i], vals[i ^ 1], "{cpu} addtid neighbour {i}");
            assert_eq!(u32s(&out[5])[i], vals[i], "{cpu} ds_read_addtid {i}");
        }
    }
}

#[test]
fn ds_float_adds_match_the_isa() {
    let mut r = prng(0xADD);
    let f64s: Vec<u64> = (0..N)
        .map(|i| match i % 8 {
            0 => [
                0.0,
                -0.0,
                1.5,
                f64::INFINITY,
                f64::NAN,
                5e-324,
                1e308,
                -2.25,
            ][i / 8 % 8]
                .to_bits(),
            _ => (f64::from(r() as i32) / 65536.0).to_bits(),
        })
        .collect();
    let g64: Vec<u64> = (0..N)
        .map(|i| (f64::from(r() as i32) * if i % 3 == 0 { 1e-310 } else { 1.0 }).to_bits())
        .collect();
    let d32: Vec<u32> = (0..N)
        .map(|i| {
            if i < 32 {
                u32::from(F16S[i % 16]) | u32::from(F16S[i / 2 % 16]) << 16
            } else {
                r()
            }
        })
        .collect();
    let e32: Vec<u32> = (0..N).map(|_| r()).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsx", cpu, target);
        for kernel in isa.kernels() {
            let rtn = kernel.contains("_rtn_");
            let out = if kernel.contains("f64") {
                let mut bufs = zeros(5, N * 8);
                bufs[1] = bytes64(&f64s);
                bufs[2] = bytes64(&g64);
                isa.run(&kernel, N as u32, &bufs).unwrap()
            } else if kernel.starts_with("ds_pk_add") {
                let mut bufs = zeros(5, N * 4);
                bufs[1] = bytes32(&d32);
                bufs[2] = bytes32(&e32);
                isa.run(&kernel, N as u32, &bufs).unwrap()
            } else {
                continue;
            };
            for i in 0..N {
                let old = if kernel.contains("f64") {
                    // f64 add, rounded to nearest even, denormals kept.
                    let s = f64::from_bits(g64[i]) + f64::from_bits(f64s[i]);
                    let (n, o) = (u64s(&out[4])[i], u64s(&out[5])[i]);
                    assert!(
                        n == s.to_bits() || f64::from_bits(n).is_nan() && s.is_nan(),
                        "{cpu} {kernel} {i}: {n:#x} want {s}"
                    );
                    o == if rtn { g64[i] } else { 0 }
                } else {
                    let bf16 = kernel.contains("bf16");
                    let half = |x: u32, y: u32| -> u32 {
                        let (x, y) = (x as u16, y as u16);
                        if bf16 {
                            // bf16 sum in f32 (exact), rounded to nearest even.
                            let s = f32::from_bits(u32::from(x) << 16)
                                + f32::from_bits(u32::from(y) << 16);
                            let b = s.to_bits();
                            if s.is_nan() {
                                u32::from((b >> 16) as u16 | 0x40)
                            } else {
                                b.wrapping_add(0x7FFF + (b >> 16 & 1)) >> 16
                            }
                        } else {
                            let s = h64(x) + h64(y);
                            if s.is_nan() {
                                0x7E00
                            } else {
                                u32::from(half::f16::from_f64(s).to_bits())
                            }
                        }
                    };
                    let want = half(e32[i], d32[i]) | half(e32[i] >> 16, d32[i] >> 16) << 16;
                    let n = u32s(&out[4])[i];
                    let nan16 = |v: u32| {
                        if bf16 {
                            v & 0x7F80 == 0x7F80 && v & 0x7F != 0
                        } else {
                            v & 0x7C00 == 0x7C00 && v & 0x3FF != 0
                        }
                    };
                    for k in [0, 16] {
                        let (g, w) = (n >> k & 0xFFFF, want >> k & 0xFFFF);
                        assert!(
                            g == w || nan16(g) && nan16(w),
                            "{cpu} {kernel} {i}: {e:#x} + {d:#x} got {n:#x} want {want:#x}",
                            e = e32[i],
                            d = d32[i]
                        );
                    }
                    u32s(&out[5])[i] == if rtn { e32[i] } else { 0 }
                };
                assert!(old, "{cpu} {kernel} {i}: returned value");
            }
        }
        if !matches!(cpu, "gfx900" | "gfx906" | "gfx908") {
            continue;
        }
        // ds_add_src2_f32: LDS[A] += LDS[A + 4 × 64] (f32, denormals kept).
        let x = inputs();
        let mut bufs = zeros(4, N * 4);
        bufs[1] = bytes32(&x[0]);
        bufs[2] = bytes32(&x[1]);
        let out = isa.run("ds_add_src2_f32", N as u32, &bufs).unwrap();
        for (i, ((a, b), g)) in x[0].iter().zip(&x[1]).zip(u32s(&out[4])).enumerate() {
            let s = f32_of(*a) + f32_of(*b);
            assert!(
                g == s.to_bits() || f32_of(g).is_nan() && s.is_nan(),
                "{cpu} ds_add_src2_f32 {i}"
            );
        }
    }
}

#[test]
fn gws_semaphores_and_barriers() {
    for (cpu, target) in CPUS {
        let isa = Isa::load("dsx", cpu, target);
        let out = isa.run("gws", 64, &zeros(4, 256)).unwrap();
        assert_eq!(u32s(&out[4]), vec![7; 64], "{cpu} gws");
        // A semaphore nothing signals: the wave waits for ever, which is an error here.
        let e = isa.run("gws_deadlock", 64, &zeros(4, 256)).unwrap_err();
        assert!(e.detail().contains("GWS"), "{cpu}: {}", e.detail());
        // Four waves meet at the GWS barrier: each sees every wave's flag.
        let out = isa
            .run_group_size("gws_barrier4", 256, 256, &zeros(4, 1024))
            .unwrap();
        assert_eq!(u32s(&out[4]), vec![4; 256], "{cpu} gws_barrier4");
    }
}

// --- SMFMAC (gfx942) ----------------------------------------------------------------------

/// One small integer per (which, lane, index), exact in every element type and in sums.
fn small(which: u64, lane: usize, idx: usize) -> i64 {
    let h = (lane as u64 * 0x9E37_79B9 + idx as u64 * 0x85EB_CA6B + which * 0xC2B2_AE35)
        .wrapping_mul(0x2545_F491_4F6C_DD1D);
    let span = if which == 2 { 101 } else { 9 };
    (h >> 40) as i64 % span - span / 2
}

/// The bits of small integer `v` as an element `kind` ("f16", "bf16", "i8", "fp8", "bf8").
fn encode(v: i64, kind: &str) -> u32 {
    match kind {
        "f16" => u32::from(half::f16::from_f64(v as f64).to_bits()),
        "bf16" => (v as f32).to_bits() >> 16,
        "i8" => u32::from(v as i8 as u8),
        _ => {
            let bf8 = kind == "bf8";
            u32::from(to_fnuz(v as f32, bf8))
        }
    }
}

#[test]
// (lane, element) loops follow the ISA's layout equations.
#[allow(clippy::needless_range_loop)]
fn sparse_mfma_matches_a_host_matrix_multiply() {
    let isa = Isa::load("smfmac", "gfx942", hsa_gfx9::Gfx9Target::Gfx942);
    let mut ran = 0;
    for kernel in isa.kernels() {
        let (op, abid) = kernel.split_once("__").unwrap();
        let abid: usize = abid.parse().unwrap();
        // v_smfmac_<out>_<M>x<N>x<K>_<a>[_<b>]
        let parts: Vec<&str> = op.split('_').collect();
        let dims: Vec<usize> = parts[3].split('x').map(|d| d.parse().unwrap()).collect();
        let (m, k) = (dims[0], dims[2]);
        let (ka, kb) = (parts[4], *parts.get(5).unwrap_or(&parts[4]));
        let int = ka == "i8";
        let bits = match ka {
            "f16" | "bf16" => 16,
            _ => 8,
        };
        // Per lane: B holds kl = 128 / bits elements (4 dwords); A the kl / 2 kept of them
        // (2 dwords); a lane group g (lanes i + M g) covers K positions g kl .. (g + 1) kl.
        let kl = 128 / bits;
        let groups = k / kl;
        assert_eq!(m * groups, 64, "{op}");
        let wd = m * m / 64;
        let (mut a, mut b, mut idx, mut c) = (
            vec![0u32; 64 * 2],
            vec![0u32; 64 * 4],
            vec![0u32; 64],
            vec![0u32; 64 * 16],
        );
        let mut amat = vec![0i64; m * k];
        let mut bmat = vec![0i64; k * m];
        for lane in 0..64 {
            let (i, g) = (lane % m, lane / m);
            for e in 0..kl {
                let v = small(1, lane, e);
                bmat[(g * kl + e) * m + i] = v;
                b[lane * 4 + e * bits / 32] |= encode(v, kb) << (e * bits % 32);
            }
            // Compression index set `abid` (of kl bits): for stored element e, its place in
            // its group of four (2 bits at bit 2e); the other sets hold decoys.
            let mut word = 0u32;
            for set in 0..32 / kl {
                for q in 0..kl / 4 {
                    let h = small(3, lane, 16 * set + q).unsigned_abs() as u32;
                    let (lo, hi) = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)][h as usize % 6];
                    word |= (lo | hi << 2) << (set * kl + 4 * q);
                    if set == abid {
                        for (half, place) in [(0, lo), (1, hi)] {
                            let e = 2 * q + half;
                            let v = small(0, lane, e);
                            amat[i * k + g * kl + 4 * q + place as usize] = v;
                            a[lane * 2 + e * bits / 32] |= encode(v, ka) << (e * bits % 32);
                        }
                    }
                }
            }
            idx[lane] = word;
        }
        // C/D: the dense MFMAs' output layout (16×16: register i % 4, lane 16 ⌊i/4⌋ + j;
        // 32×32: register 4 ⌊i/8⌋ + i % 4, lane 32 (⌊i/4⌋ % 2) + j).
        let at = |i: usize, j: usize| {
            if m == 16 {
                (i % 4, 16 * (i / 4) + j)
            } else {
                (4 * (i / 8) + i % 4, 32 * ((i / 4) % 2) + j)
            }
        };
        let mut cmat = vec![0i64; m * m];
        for i in 0..m {
            for j in 0..m {
                let v = small(2, i, j);
                cmat[i * m + j] = v;
                let (reg, lane) = at(i, j);
                c[lane * 16 + reg] = if int {
                    v as i32 as u32
                } else {
                    (v as f32).to_bits()
                };
            }
        }
        let out = isa
            .run(
                &kernel,
                64,
                &[
                    vec![0; 4],
                    bytes32(&a),
                    bytes32(&b),
                    bytes32(&idx),
                    bytes32(&c),
                    vec![0; 64 * 64],
                ],
            )
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let got = u32s(&out[5]);
        for i in 0..m {
            for j in 0..m {
                let d = cmat[i * m + j]
                    + (0..k)
                        .map(|kk| amat[i * k + kk] * bmat[kk * m + j])
                        .sum::<i64>();
                let want = if int {
                    d as i32 as u32
                } else {
                    (d as f32).to_bits()
                };
                let (reg, lane) = at(i, j);
                assert!(reg < wd);
                assert_eq!(got[lane * 16 + reg], want, "{kernel}: D[{i}][{j}]");
            }
        }
        ran += 1;
    }
    assert_eq!(ran, 36);
}

/// gfx940's xf32 MFMA reads its f32 inputs with the low 13 mantissa bits cleared (Tensile's
/// and rocBLAS's xf32 host references truncate so): 1 + 2^-23 is read as 1.
#[test]
fn xf32_mfma_truncates_its_inputs() {
    let isa = Isa::load("mfma", "gfx942", hsa_gfx9::Gfx9Target::Gfx942);
    // v_mfma_f32_16x16x8_xf32: A, B 2 dwords a lane, C/D 4; all A = 1 + 2^-23 (or + 2^-13,
    // which stays), B = 1, C = 0: D = 8 × A.
    for (a_bits, want) in [
        (0x3F80_0001u32, 8.0f32),
        (0x3F80_2000, 8.0 * (1.0 + 1.0 / 1024.0)),
    ] {
        let bufs = vec![
            vec![0; 4],
            bytes32(&[a_bits; 128]),
            bytes32(&[0x3F80_0000; 128]),
            vec![0; 64 * 16],
            vec![0; 64 * 16],
        ];
        let out = isa.run("v_mfma_f32_16x16x8_xf32__acc", 64, &bufs).unwrap();
        assert_eq!(u32s(&out[4]), vec![want.to_bits(); 256], "A = {a_bits:#x}");
    }
}

/// The floating-point buffer atomics (`memx`): gfx908's no-return `buffer_atomic_add_f32`
/// and `buffer_atomic_pk_add_f16`; on gfx90a and gfx942 those with and without return and
/// `buffer_atomic_add_f64`/`min_f64`/`max_f64` (CDNA2/CDNA3 ISA MUBUF opcodes 0x4d..0x51).
/// Every lane updates its own element of p4 through an `offen` VGPR offset; the host
/// reference is the IEEE sum (min, max) rounded to nearest even. The inputs are finite
/// and normal (no NaN, denormal or -0: those rules are the global float atomics' tests in
/// `gfx9_isa.rs`); with `glc` the data register returns the old value, without it stays the
/// data. `buffer_atomic_add_f32_idxen` addresses the same elements by index (stride 4).
/// Also gfx942's `global_load_lds_*` (memory to LDS, read back with `ds_read_b32`).
#[test]
fn buffer_float_atomics_and_global_load_lds_match_the_isa() {
    let mut r = prng(0xB0F);
    let f32v = |x: u32| (f64::from(x as i32) / 65536.0) as f32;
    let f16v = |x: u32| half::f16::from_f64(f64::from(x as u16 as i16) / 64.0).to_bits();
    let f64v = |x: u32| f64::from(x as i32) / 65536.0;
    for (cpu, target) in CPUS {
        if !matches!(cpu, "gfx908" | "gfx90a" | "gfx942") {
            continue;
        }
        let isa = Isa::load("memx", cpu, target);
        let kernels = isa.kernels();
        let want = match cpu {
            "gfx908" => 3,
            "gfx90a" => 11,
            _ => 17,
        };
        assert_eq!(kernels.len(), want, "{cpu}: {kernels:?}");
        for kernel in kernels {
            if let Some(ty) = kernel.strip_prefix("global_load_lds_") {
                // The lane's element (at p1 + 4i) into LDS dword M0 + offset + 4 × lane,
                // zero- or sign-extended to 32 bits (CDNA3 ISA "global_load_lds_*": LDS_ADDR
                // = M0 + inst_offset + TID × 4; Vega ISA §9.1.9 for the MUBUF form).
                // The offset applies to the memory address as well (`_off`: p1 + 4i + 4).
                let src: Vec<u32> = (0..=N).map(|_| r()).collect();
                let mut bufs = zeros(6, N * 4);
                bufs[1] = bytes32(&src);
                let out = isa.run(&kernel, N as u32, &bufs).unwrap();
                let skip = usize::from(kernel.ends_with("_off"));
                for (i, (&x, got)) in src[skip..].iter().zip(u32s(&out[5])).enumerate() {
                    let want = match ty.trim_end_matches("_off") {
                        "ubyte" => x & 0xFF,
                        "sbyte" => x as u8 as i8 as i32 as u32,
                        "ushort" => x & 0xFFFF,
                        "sshort" => x as u16 as i16 as i32 as u32,
                        "dword" => x,
                        t => unreachable!("{t}"),
                    };
                    assert_eq!(got, want, "{cpu} {kernel} {i}: {x:#x}");
                }
                continue;
            }
            let rtn = kernel.ends_with("_rtn");
            let op = kernel.trim_end_matches("_rtn").trim_end_matches("_idxen");
            let mut bufs = zeros(6, N * 8);
            if op.ends_with("f64") {
                let d: Vec<u64> = (0..N).map(|_| f64v(r()).to_bits()).collect();
                let m: Vec<u64> = (0..N).map(|_| f64v(r()).to_bits()).collect();
                bufs[1] = bytes64(&d);
                bufs[4] = bytes64(&m);
                let out = isa.run(&kernel, N as u32, &bufs).unwrap();
                let (mem, ret) = (u64s(&out[4]), u64s(&out[5]));
                for i in 0..N {
                    let (x, y) = (f64::from_bits(m[i]), f64::from_bits(d[i]));
                    let new = match op {
                        "buffer_atomic_add_f64" => x + y,
                        "buffer_atomic_min_f64" => x.min(y),
                        "buffer_atomic_max_f64" => x.max(y),
                        _ => unreachable!("{kernel}"),
                    };
                    assert_eq!(mem[i], new.to_bits(), "{cpu} {kernel} {i}: {x} {y}");
                    assert_eq!(ret[i], if rtn { m[i] } else { d[i] }, "{cpu} {kernel} {i}");
                }
            } else {
                let pk = op == "buffer_atomic_pk_add_f16";
                let gen = |r: &mut dyn FnMut() -> u32| {
                    if pk {
                        u32::from(f16v(r())) | u32::from(f16v(r())) << 16
                    } else {
                        f32v(r()).to_bits()
                    }
                };
                let d: Vec<u32> = (0..N).map(|_| gen(&mut r)).collect();
                let m: Vec<u32> = (0..N).map(|_| gen(&mut r)).collect();
                bufs[1] = bytes32(&d);
                bufs[4] = bytes32(&m);
                let out = isa.run(&kernel, N as u32, &bufs).unwrap();
                let (mem, ret) = (u32s(&out[4]), u32s(&out[5]));
                for i in 0..N {
                    let new = if pk {
                        // Each half: the f16 sum, exact in f64, rounded once to f16.
                        let h = |a: u32, b: u32| {
                            let s = h64(a as u16) + h64(b as u16);
                            u32::from(half::f16::from_f64(s).to_bits())
                        };
                        h(m[i], d[i]) | h(m[i] >> 16, d[i] >> 16) << 16
                    } else {
                        (f32::from_bits(m[i]) + f32::from_bits(d[i])).to_bits()
                    };
                    assert_eq!(mem[i], new, "{cpu} {kernel} {i}: {:#x} {:#x}", m[i], d[i]);
                    assert_eq!(ret[i], if rtn { m[i] } else { d[i] }, "{cpu} {kernel} {i}");
                }
            }
        }
    }
}
