//! Execution tests of the vector ALU, VOPC and memory opcodes of the gfx9 interpreter's table
//! that no other family ran (issue 19): the `vcov` kernels (assembled with `llvm-mc-19` and
//! `ld.lld-19` by `testdata/codeobjects/isa/gen_vcov.py`, which states their conventions) run
//! each instruction over edge-case inputs (NaNs, signed zeros, infinities, denormals, integer
//! limits) on every target that has it, and every lane is compared with a host reference
//! written from the ISA documents (AMD "Vega" ISA for gfx900/gfx906, "AMD Instinct MI100"
//! (CDNA1), "MI200" (CDNA2), "MI300" (CDNA3) for gfx908/gfx90a/gfx942): the opcode
//! descriptions of chapter 12 ("Instructions": VOP1, VOP2, VOPC, VOP3, MUBUF, FLAT, DS).

use std::collections::BTreeSet;

mod isa_harness;
use isa_harness::*;

fn prng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// f32 edge values: ±0, denormals, ±inf, quiet and signalling NaNs, the largest finite value,
/// halves, negative and positive ordinary values.
const F32E: [u32; 16] = [
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x807F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0xFFC0_0001,
    0x7F7F_FFFF,
    0x3F00_0000,
    0xBFC0_0000,
    0x3F80_0000,
    0xC0A0_0000,
    0x4B7F_FFFF,
    0xCF00_0001,
];

/// f64 edge values, as [`F32E`].
const F64E: [u64; 16] = [
    0,
    0x8000_0000_0000_0000,
    1,
    0x800F_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0xFFF8_0000_0000_0001,
    0x7FEF_FFFF_FFFF_FFFF,
    0x3FE0_0000_0000_0000,
    0xBFF8_0000_0000_0000,
    0x41EF_FFFF_FFE0_0000,
    0xC1E0_0000_0020_0000,
    0x41F0_0000_0000_0000,
    0xC1E0_0000_0000_0000,
];

/// Integer edge values (the 32-bit forms use the low dwords).
const IE: [u64; 16] = [
    0,
    1,
    2,
    0x1F,
    0x20,
    0x3F,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0x0080_0000,
    0x00FF_FFFF,
    0xFF80_0000,
    u64::MAX,
    1 << 63,
    0x7FFF_FFFF_FFFF_FFFF,
    0x1234_5678_9ABC_DEF0,
];

/// Class masks of V_CMP_CLASS_F32 (bit 0 signalling NaN, 1 quiet NaN, 2 −inf, 3 −normal,
/// 4 −denormal, 5 −0, 6 +0, 7 +denormal, 8 +normal, 9 +inf).
const CLASS_MASKS: [u64; 16] = [
    1, 2, 4, 8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0, 0x3FF, 0x3, 0x60, 0x90, 0x2AA,
];

fn is_nan32(x: u32) -> bool {
    x & 0x7FFF_FFFF > 0x7F80_0000
}
fn is_nan64(x: u64) -> bool {
    x & !(1 << 63) > 0x7FF0_0000_0000_0000
}

/// The class bit index of f32 bits `x` (V_CMP_CLASS_F32's table).
fn class32(x: u32) -> u32 {
    let neg = x >> 31 == 1;
    let e = x >> 23 & 0xFF;
    let m = x & 0x7F_FFFF;
    match (e, m) {
        (0xFF, 0) => {
            if neg {
                2
            } else {
                9
            }
        }
        (0xFF, m) => {
            if m >> 22 == 1 {
                1
            } else {
                0
            }
        }
        (0, 0) => {
            if neg {
                5
            } else {
                6
            }
        }
        (0, _) => {
            if neg {
                4
            } else {
                7
            }
        }
        _ => {
            if neg {
                3
            } else {
                8
            }
        }
    }
}

/// A float compare predicate over the IEEE ordering (unordered when a NaN is involved).
fn fpred(cond: &str, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    let (lt, eq, gt) = (o == Some(Less), o == Some(Equal), o == Some(Greater));
    match cond {
        "f" => false,
        "lt" => lt,
        "eq" => eq,
        "le" => lt || eq,
        "gt" => gt,
        "lg" => lt || gt,
        "ge" => gt || eq,
        "o" => o.is_some(),
        "u" => o.is_none(),
        "nge" => !(gt || eq),
        "nlg" => !(lt || gt),
        "ngt" => !gt,
        "nle" => !(lt || eq),
        "neq" => !eq,
        "nlt" => !lt,
        "tru" => true,
        _ => panic!("float predicate {cond}"),
    }
}

/// An integer compare predicate.
fn ipred(cond: &str, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match cond {
        "f" => false,
        "lt" => o == Less,
        "eq" => o == Equal,
        "le" => o != Greater,
        "gt" => o == Greater,
        "ne" => o != Equal,
        "ge" => o != Less,
        "t" => true,
        _ => panic!("integer predicate {cond}"),
    }
}

/// V_CMP(X)_<cond>_<type> of lane inputs `a`, `b` (bits; `b` the class mask for class).
fn cmp_ref(cond: &str, ty: &str, a: u64, b: u64) -> bool {
    match ty {
        "f32" if cond == "class" => b >> class32(a as u32) & 1 == 1,
        "f32" => fpred(
            cond,
            f32::from_bits(a as u32).partial_cmp(&f32::from_bits(b as u32)),
        ),
        "f64" => fpred(cond, f64::from_bits(a).partial_cmp(&f64::from_bits(b))),
        "i32" => ipred(cond, (a as i32).cmp(&(b as i32))),
        "u32" => ipred(cond, (a as u32).cmp(&(b as u32))),
        "i64" => ipred(cond, (a as i64).cmp(&(b as i64))),
        "u64" => ipred(cond, a.cmp(&b)),
        _ => panic!("compare type {ty}"),
    }
}

fn cpus() -> impl Iterator<Item = (&'static str, Isa)> {
    CPUS.iter()
        .map(|&(cpu, target)| (cpu, Isa::load("vcov", cpu, target)))
}

/// Every v_cmp_*/v_cmpx_* of f32/f64/i32/i64/u32/u64 and the f32 class compares, into VCC
/// and into an SGPR pair: every edge value against every other; the mask bit, the lanes
/// still active and (cmpx) EXEC per lane.
#[test]
fn vopc_compares_match_the_isa() {
    let n = 256;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for k in isa.kernels() {
            let Some(op) = k.strip_prefix("cmp_") else {
                continue;
            };
            let op = op.strip_suffix("_e64").unwrap_or(op);
            let parts: Vec<&str> = op.split('_').collect();
            let (x, cond, ty) = (parts[0], parts[1], parts[2]);
            let wide = ty.ends_with("64");
            let (ea, eb): (Vec<u64>, Vec<u64>) = match ty {
                "f32" => (F32E.map(u64::from).to_vec(), F32E.map(u64::from).to_vec()),
                "f64" => (F64E.to_vec(), F64E.to_vec()),
                _ => (IE.to_vec(), IE.to_vec()),
            };
            let eb = if cond == "class" {
                CLASS_MASKS.to_vec()
            } else {
                eb
            };
            let a: Vec<u64> = (0..n).map(|i| ea[i % 16]).collect();
            let b: Vec<u64> = (0..n).map(|i| eb[i / 16]).collect();
            let enc = |v: &[u64]| {
                if wide {
                    bytes64(v)
                } else {
                    bytes32(&v.iter().map(|&x| x as u32).collect::<Vec<_>>())
                }
            };
            let out = isa
                .run(
                    &k,
                    n as u32,
                    &[
                        vec![],
                        enc(&a),
                        enc(&b),
                        vec![],
                        vec![0; 4 * n],
                        vec![0; 4 * n],
                        vec![0; 4 * n],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            let (active, mask, exec) = (u32s(&out[4]), u32s(&out[5]), u32s(&out[6]));
            for i in 0..n {
                let p = cmp_ref(cond, ty, a[i], b[i]);
                let e = if x == "cmpx" { p } else { true };
                let want = (if e { 1 } else { 7 }, p as u32, e as u32);
                assert_eq!(
                    (active[i], mask[i], exec[i]),
                    want,
                    "{cpu} {k} lane {i}: a {:#x} b {:#x} (active, mask, exec)",
                    a[i],
                    b[i]
                );
            }
            seen += 1;
        }
        assert_eq!(seen, 260, "{cpu}: compare kernels");
    }
}

/// How an ALU kernel's result is compared.
#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    /// Bit for bit.
    Bits,
    /// As f32 bits in the low dword (any NaN for a NaN); the high dword bit for bit.
    F32,
    /// As f64 bits (any NaN for a NaN).
    F64,
    /// Two f16 halves in the low dword (any NaN for a NaN).
    F16x2,
}

/// What the mask bit after an ALU kernel must be.
#[derive(Clone, Copy)]
enum Mask {
    /// VCC (or the SGPR pair) keeps its value, p3[i] & 1.
    Kept,
    /// The carry or borrow out.
    Is(bool),
    /// Not compared (see the entry).
    Unchecked,
}

/// Inputs of an ALU kernel: the three qword columns.
struct In {
    a: Vec<u64>,
    b: Vec<u64>,
    c: Vec<u64>,
}

type AluRef = fn(&In, usize) -> (u64, Mask);

const DB: u64 = 0xDEAD_BEEF_0000_0000;

fn r32(v: u32) -> (u64, Mask) {
    (DB | u64::from(v), Mask::Kept)
}
fn f32r(v: f32) -> (u64, Mask) {
    r32(v.to_bits())
}
fn lo(v: u64) -> u32 {
    v as u32
}
fn fa(v: u64) -> f32 {
    f32::from_bits(v as u32)
}
fn sext24(v: u32) -> i64 {
    i64::from((v << 8) as i32 >> 8)
}

/// V_MIN_F32/V_MAX_F32 (and F64) in IEEE mode (the compute default): a signalling NaN gives
/// a quiet NaN, a quiet NaN gives the other operand, −0 is below +0.
fn fminmax64(a: f64, b: f64, max: bool) -> f64 {
    let snan = |x: f64| x.is_nan() && x.to_bits() & (1 << 51) == 0;
    if snan(a) || snan(b) {
        return f64::NAN;
    }
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    let key = |x: f64| (x, x.is_sign_positive());
    let (ka, kb) = (key(a), key(b));
    let a_less = ka.0 < kb.0 || (ka.0 == kb.0 && !ka.1 && kb.1);
    if a_less != max {
        a
    } else {
        b
    }
}
fn fminmax32(a: f32, b: f32, max: bool) -> f32 {
    if a.is_nan() && a.to_bits() & (1 << 22) == 0 || b.is_nan() && b.to_bits() & (1 << 22) == 0 {
        return f32::NAN;
    }
    fminmax64(f64::from(a), f64::from(b), max) as f32
}

/// f32 to f16 rounded toward zero (V_CVT_PKRTZ_F16_F32): a finite value never becomes an
/// infinity; f16 denormals are kept (FLOAT_DENORM_MODE_16_64 3).
fn f16_rtz(x: u32) -> u16 {
    let sign = ((x >> 16) & 0x8000) as u16;
    let e = (x >> 23 & 0xFF) as i32;
    let m = x & 0x7F_FFFF;
    if e == 0xFF {
        return sign | if m == 0 { 0x7C00 } else { 0x7E00 };
    }
    if e == 0 {
        return sign; // f32 denormals are below f16's smallest denormal
    }
    let ue = e - 127;
    if ue > 15 {
        return sign | 0x7BFF;
    }
    let sig = 0x80_0000 | m;
    if ue >= -14 {
        return sign | (((ue + 15) as u16) << 10) | (m >> 13) as u16;
    }
    // sig × 2^(ue − 23) in units of 2^−24.
    let shift = -(ue + 1);
    sign | if shift >= 32 {
        0
    } else {
        (sig >> shift) as u16
    }
}

fn alu_table() -> Vec<(&'static str, AluRef)> {
    vec![
        ("v_add_lshl_u32", |x, i| {
            r32(lo(x.a[i]).wrapping_add(lo(x.b[i])) << (lo(x.c[i]) & 31))
        }),
        ("v_and_or_b32", |x, i| {
            r32(lo(x.a[i]) & lo(x.b[i]) | lo(x.c[i]))
        }),
        ("v_ashrrev_i32", |x, i| {
            r32(((lo(x.b[i]) as i32) >> (lo(x.a[i]) & 31)) as u32)
        }),
        ("v_ashrrev_i64", |x, i| {
            (((x.b[i] as i64) >> (x.a[i] & 63)) as u64, Mask::Kept)
        }),
        ("v_lshrrev_b32", |x, i| r32(lo(x.b[i]) >> (lo(x.a[i]) & 31))),
        ("v_lshrrev_b64", |x, i| {
            (x.b[i] >> (x.a[i] & 63), Mask::Kept)
        }),
        ("v_bcnt_u32_b32", |x, i| {
            r32(lo(x.a[i]).count_ones().wrapping_add(lo(x.b[i])))
        }),
        // V_BFE: offset S1[4:0], width S2[4:0]; width 0 gives 0; the signed form is an
        // arithmetic extract: the field sign-extended, or S0 >> offset (arithmetic) when the
        // field reaches past bit 31.
        ("v_bfe_u32", |x, i| {
            let (v, o, w) = (lo(x.a[i]), lo(x.b[i]) & 31, lo(x.c[i]) & 31);
            r32(if w == 0 {
                0
            } else {
                (v >> o) & ((1u32 << w) - 1)
            })
        }),
        ("v_bfe_i32", |x, i| {
            let (v, o, w) = (lo(x.a[i]) as i32, lo(x.b[i]) & 31, lo(x.c[i]) & 31);
            r32(if w == 0 {
                0
            } else if o + w < 32 {
                ((v << (32 - o - w)) >> (32 - w)) as u32
            } else {
                (v >> o) as u32
            })
        }),
        ("v_bfrev_b32", |x, i| r32(lo(x.a[i]).reverse_bits())),
        // V_FFBH_I32: the number of bits after the sign bit equal to it, from the MSB; −1
        // when every bit equals it.
        ("v_ffbh_i32", |x, i| {
            let v = lo(x.a[i]);
            let t = if v >> 31 == 1 { !v } else { v };
            r32(if t == 0 { u32::MAX } else { t.leading_zeros() })
        }),
        ("v_ffbh_u32", |x, i| {
            let v = lo(x.a[i]);
            r32(if v == 0 { u32::MAX } else { v.leading_zeros() })
        }),
        ("v_ffbl_b32", |x, i| {
            let v = lo(x.a[i]);
            r32(if v == 0 { u32::MAX } else { v.trailing_zeros() })
        }),
        ("v_mad_i32_i24", |x, i| {
            r32((sext24(lo(x.a[i])) * sext24(lo(x.b[i])) + i64::from(lo(x.c[i]) as i32)) as u32)
        }),
        ("v_mad_u32_u24", |x, i| {
            r32(
                ((lo(x.a[i]) & 0xFF_FFFF).wrapping_mul(lo(x.b[i]) & 0xFF_FFFF))
                    .wrapping_add(lo(x.c[i])),
            )
        }),
        ("v_mad_u64_u32", |x, i| {
            let t = u128::from(lo(x.a[i])) * u128::from(lo(x.b[i])) + u128::from(x.c[i]);
            (t as u64, Mask::Is(t >> 64 != 0))
        }),
        // The carry out of the signed form is not compared (the ISA's {vcc_out, D} of a
        // signed sum does not say which bit it is).
        ("v_mad_i64_i32", |x, i| {
            let t = i128::from(lo(x.a[i]) as i32) * i128::from(lo(x.b[i]) as i32)
                + i128::from(x.c[i] as i64);
            (t as u64, Mask::Unchecked)
        }),
        // MI300 V_LSHL_ADD_U64: (S0 << S1[2:0]) + S2.
        ("v_lshl_add_u64", |x, i| {
            ((x.a[i] << (x.b[i] & 7)).wrapping_add(x.c[i]), Mask::Kept)
        }),
        ("v_max3_i32", |x, i| {
            r32((lo(x.a[i]) as i32)
                .max(lo(x.b[i]) as i32)
                .max(lo(x.c[i]) as i32) as u32)
        }),
        ("v_max3_u32", |x, i| {
            r32(lo(x.a[i]).max(lo(x.b[i])).max(lo(x.c[i])))
        }),
        ("v_min3_i32", |x, i| {
            r32((lo(x.a[i]) as i32)
                .min(lo(x.b[i]) as i32)
                .min(lo(x.c[i]) as i32) as u32)
        }),
        ("v_min3_u32", |x, i| {
            r32(lo(x.a[i]).min(lo(x.b[i])).min(lo(x.c[i])))
        }),
        ("v_med3_i32", |x, i| {
            let (a, b, c) = (lo(x.a[i]) as i32, lo(x.b[i]) as i32, lo(x.c[i]) as i32);
            r32(a.min(b).max(a.max(b).min(c)) as u32)
        }),
        ("v_med3_u32", |x, i| {
            let (a, b, c) = (lo(x.a[i]), lo(x.b[i]), lo(x.c[i]));
            r32(a.min(b).max(a.max(b).min(c)))
        }),
        ("v_max_u32", |x, i| r32(lo(x.a[i]).max(lo(x.b[i])))),
        ("v_min_i32", |x, i| {
            r32((lo(x.a[i]) as i32).min(lo(x.b[i]) as i32) as u32)
        }),
        ("v_min_u32", |x, i| r32(lo(x.a[i]).min(lo(x.b[i])))),
        ("v_or_b32", |x, i| r32(lo(x.a[i]) | lo(x.b[i]))),
        ("v_or3_b32", |x, i| {
            r32(lo(x.a[i]) | lo(x.b[i]) | lo(x.c[i]))
        }),
        // V_LSHL_OR_B32: (S0 << S1[4:0]) | S2.
        ("v_lshl_or_b32", |x, i| {
            r32(lo(x.a[i]) << (lo(x.b[i]) & 31) | lo(x.c[i]))
        }),
        ("v_xnor_b32", |x, i| r32(!(lo(x.a[i]) ^ lo(x.b[i])))),
        // V_MAC_F32: D = S0 * S1 + D, as V_MAD_F32: the product rounded, f32 denormals
        // flushed (sources, product, result) whatever the mode.
        ("v_mac_f32", |x, i| {
            let flush = |v: f32| {
                if v.is_subnormal() {
                    f32::from_bits(v.to_bits() & 0x8000_0000)
                } else {
                    v
                }
            };
            let p = flush(flush(fa(x.a[i])) * flush(fa(x.b[i])));
            f32r(flush(p + flush(fa(x.c[i]))))
        }),
        // V_MBCNT_LO/HI: the set bits of S0 at lanes below this one (bits 31:0 for lanes
        // 0..31 of the mask, 63:32 for the hi form), plus S1.
        ("v_mbcnt_lo_u32_b32", |x, i| {
            let below = (1u64 << (i % 64)) - 1;
            r32((u64::from(lo(x.a[i])) & below)
                .count_ones()
                .wrapping_add(lo(x.b[i])))
        }),
        ("v_mbcnt_hi_u32_b32", |x, i| {
            let below = ((1u128 << (i % 64)) - 1) as u64;
            r32((u64::from(lo(x.a[i])) & (below >> 32))
                .count_ones()
                .wrapping_add(lo(x.b[i])))
        }),
        ("v_mul_hi_i32", |x, i| {
            r32(((i64::from(lo(x.a[i]) as i32) * i64::from(lo(x.b[i]) as i32)) >> 32) as u32)
        }),
        ("v_mul_hi_u32", |x, i| {
            r32(((u64::from(lo(x.a[i])) * u64::from(lo(x.b[i]))) >> 32) as u32)
        }),
        ("v_mul_hi_i32_i24", |x, i| {
            r32(((sext24(lo(x.a[i])) * sext24(lo(x.b[i]))) >> 32) as u32)
        }),
        ("v_mul_hi_u32_u24", |x, i| {
            r32(
                ((u64::from(lo(x.a[i]) & 0xFF_FFFF) * u64::from(lo(x.b[i]) & 0xFF_FFFF)) >> 32)
                    as u32,
            )
        }),
        ("v_mul_i32_i24", |x, i| {
            r32((sext24(lo(x.a[i])) * sext24(lo(x.b[i]))) as u32)
        }),
        ("v_mul_lo_u32", |x, i| {
            r32(lo(x.a[i]).wrapping_mul(lo(x.b[i])))
        }),
        ("v_sad_u32", |x, i| {
            r32(lo(x.a[i]).abs_diff(lo(x.b[i])).wrapping_add(lo(x.c[i])))
        }),
        ("v_xad_u32", |x, i| {
            r32((lo(x.a[i]) ^ lo(x.b[i])).wrapping_add(lo(x.c[i])))
        }),
        ("v_sub_co_u32", |x, i| {
            let (a, b) = (lo(x.a[i]), lo(x.b[i]));
            (DB | u64::from(a.wrapping_sub(b)), Mask::Is(b > a))
        }),
        ("v_sub_co_u32_e64", |x, i| {
            let (a, b) = (lo(x.a[i]), lo(x.b[i]));
            (DB | u64::from(a.wrapping_sub(b)), Mask::Is(b > a))
        }),
        ("v_subrev_co_u32", |x, i| {
            let (a, b) = (lo(x.a[i]), lo(x.b[i]));
            (DB | u64::from(b.wrapping_sub(a)), Mask::Is(a > b))
        }),
        ("v_subb_co_u32", |x, i| {
            let (a, b, ci) = (lo(x.a[i]), lo(x.b[i]), (x.c[i] & 1) as u32);
            let r = u64::from(a).wrapping_sub(u64::from(b) + u64::from(ci));
            (
                DB | (r & 0xFFFF_FFFF),
                Mask::Is(u64::from(b) + u64::from(ci) > u64::from(a)),
            )
        }),
        ("v_subb_co_u32_e64", |x, i| {
            let (a, b, ci) = (lo(x.a[i]), lo(x.b[i]), (x.c[i] & 1) as u32);
            let r = u64::from(a).wrapping_sub(u64::from(b) + u64::from(ci));
            (
                DB | (r & 0xFFFF_FFFF),
                Mask::Is(u64::from(b) + u64::from(ci) > u64::from(a)),
            )
        }),
        ("v_subbrev_co_u32", |x, i| {
            let (a, b, ci) = (lo(x.a[i]), lo(x.b[i]), (x.c[i] & 1) as u32);
            let r = u64::from(b).wrapping_sub(u64::from(a) + u64::from(ci));
            (
                DB | (r & 0xFFFF_FFFF),
                Mask::Is(u64::from(a) + u64::from(ci) > u64::from(b)),
            )
        }),
        ("v_subrev_u32", |x, i| {
            r32(lo(x.b[i]).wrapping_sub(lo(x.a[i])))
        }),
        ("v_mov_b64", |x, i| (x.a[i], Mask::Kept)),
        ("v_nop", |_, _| (0xDEAD_BEEF_DEAD_BEEF, Mask::Kept)),
        // V_READLANE_B32: lane S1[5:0]'s S0 (37, and 0x47 → lane 7).
        ("v_readlane_b32", |x, i| r32(lo(x.a[i / 64 * 64 + 37]))),
        ("v_readlane_b32_sgpr", |x, i| r32(lo(x.a[i / 64 * 64 + 7]))),
        // V_WRITELANE_B32: lane S1[5:0] (13, and 0x4d → 13) gets S0 (lane 0's a via
        // v_readfirstlane); the other lanes keep the destination (b).
        ("v_writelane_b32", |x, i| {
            r32(lo(if i % 64 == 13 {
                x.a[i / 64 * 64]
            } else {
                x.b[i]
            }))
        }),
        ("v_writelane_b32_sgpr", |x, i| {
            r32(lo(if i % 64 == 13 {
                x.a[i / 64 * 64]
            } else {
                x.b[i]
            }))
        }),
        ("v_cvt_f32_ubyte0", |x, i| f32r((lo(x.a[i]) & 0xFF) as f32)),
        ("v_cvt_f32_ubyte1", |x, i| {
            f32r((lo(x.a[i]) >> 8 & 0xFF) as f32)
        }),
        ("v_cvt_f32_ubyte2", |x, i| {
            f32r((lo(x.a[i]) >> 16 & 0xFF) as f32)
        }),
        ("v_cvt_f32_ubyte3", |x, i| f32r((lo(x.a[i]) >> 24) as f32)),
        ("v_cvt_f64_f32", |x, i| {
            (f64::from(fa(x.a[i])).to_bits(), Mask::Kept)
        }),
        ("v_cvt_f64_u32", |x, i| {
            (f64::from(lo(x.a[i])).to_bits(), Mask::Kept)
        }),
        // Float to integer: saturated to the integer range, a NaN gives 0.
        ("v_cvt_flr_i32_f32", |x, i| {
            r32(fa(x.a[i]).floor() as i32 as u32)
        }),
        ("v_cvt_rpi_i32_f32", |x, i| {
            r32((fa(x.a[i]) + 0.5).floor() as i32 as u32)
        }),
        ("v_cvt_i32_f64", |x, i| {
            r32(f64::from_bits(x.a[i]) as i32 as u32)
        }),
        ("v_cvt_u32_f64", |x, i| r32(f64::from_bits(x.a[i]) as u32)),
        ("v_cvt_pkrtz_f16_f32", |x, i| {
            r32(u32::from(f16_rtz(lo(x.a[i]))) | u32::from(f16_rtz(lo(x.b[i]))) << 16)
        }),
        ("v_ceil_f32", |x, i| f32r(fa(x.a[i]).ceil())),
        ("v_floor_f32", |x, i| f32r(fa(x.a[i]).floor())),
        // V_FRACT_F32: S0 − floor(S0), at most the largest f32 below 1; NaN for ±inf.
        ("v_fract_f32", |x, i| {
            let v = fa(x.a[i]);
            if !v.is_finite() {
                return f32r(f32::NAN);
            }
            f32r((v - v.floor()).min(f32::from_bits(0x3F7F_FFFF)))
        }),
        ("v_rndne_f32", |x, i| f32r(fa(x.a[i]).round_ties_even())),
        ("v_trunc_f32", |x, i| f32r(fa(x.a[i]).trunc())),
        ("v_max_f64", |x, i| {
            let r = fminmax64(f64::from_bits(x.a[i]), f64::from_bits(x.b[i]), true);
            (r.to_bits(), Mask::Kept)
        }),
        ("v_min3_f32", |x, i| {
            let ab = fminmax32(fa(x.a[i]), fa(x.b[i]), false);
            f32r(fminmax32(ab, fa(x.c[i]), false))
        }),
        ("v_subrev_f32", |x, i| f32r(fa(x.b[i]) - fa(x.a[i]))),
    ]
}

fn cmp_kind(name: &str) -> Cmp {
    match name {
        "v_cvt_f64_f32" | "v_cvt_f64_u32" | "v_max_f64" => Cmp::F64,
        "v_cvt_pkrtz_f16_f32" => Cmp::F16x2,
        n if n.ends_with("_f32") && !n.starts_with("v_cvt_") => Cmp::F32,
        n if n.starts_with("v_cvt_f32_") => Cmp::F32,
        _ => Cmp::Bits,
    }
}

/// The edge values an ALU entry's inputs come from.
fn alu_edges(name: &str) -> Vec<u64> {
    match name {
        "v_cvt_i32_f64" | "v_cvt_u32_f64" | "v_max_f64" => F64E.to_vec(),
        n if n.ends_with("_f32") && !n.starts_with("v_cvt_f32_ubyte") => {
            F32E.map(u64::from).to_vec()
        }
        _ => IE.to_vec(),
    }
}

fn same(kind: Cmp, got: u64, want: u64) -> bool {
    match kind {
        Cmp::Bits => got == want,
        Cmp::F64 => got == want || is_nan64(got) && is_nan64(want),
        Cmp::F32 => {
            got >> 32 == want >> 32
                && (got as u32 == want as u32 || is_nan32(got as u32) && is_nan32(want as u32))
        }
        Cmp::F16x2 => {
            let nan = |h: u64| h & 0x7C00 == 0x7C00 && h & 0x3FF != 0;
            got >> 32 == want >> 32
                && [0, 16].iter().all(|&s| {
                    let (g, w) = (got >> s & 0xFFFF, want >> s & 0xFFFF);
                    g == w || nan(g) && nan(w)
                })
        }
    }
}

/// The VOP1/VOP2/VOP3 integer, bit and conversion ops and the float ops of the table: each
/// over every pair of its edge values (a third edge value per lane) and random bits, with
/// the carry/borrow out or the unchanged VCC.
#[test]
fn alu_ops_match_the_isa() {
    let n = 512;
    let table = alu_table();
    for (cpu, isa) in cpus() {
        let kernels = isa.kernels();
        let mut seen = 0;
        for k in kernels.iter().filter(|k| k.starts_with("alu_")) {
            let name = &k[4..];
            let f = table
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("no reference for {name}"))
                .1;
            let e = alu_edges(name);
            let f32in = e == F32E.map(u64::from);
            let mut r = prng(name.len() as u64 * 7919 + 1);
            let mut col = |k: usize| -> Vec<u64> {
                (0..n)
                    .map(|i| {
                        if i < 256 {
                            [e[i % 16], e[i / 16], e[(i + 5 * k + i / 16) % 16]][k]
                        } else if f32in {
                            r() & 0xFFFF_FFFF
                        } else {
                            r()
                        }
                    })
                    .collect()
            };
            let x = In {
                a: col(0),
                b: col(1),
                c: col(2),
            };
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[
                        vec![],
                        bytes64(&x.a),
                        bytes64(&x.b),
                        bytes64(&x.c),
                        vec![0; 8 * n],
                        vec![0; 4 * n],
                    ],
                )
                .unwrap_or_else(|err| panic!("{cpu} {k}: {err:?}"));
            let (res, mask) = (u64s(&out[4]), u32s(&out[5]));
            let kind = cmp_kind(name.trim_end_matches("_sgpr").trim_end_matches("_e64"));
            for i in 0..n {
                let (want, m) = f(&x, i);
                assert!(
                    same(kind, res[i], want),
                    "{cpu} {k} lane {i}: a {:#x} b {:#x} c {:#x}: got {:#x}, want {want:#x}",
                    x.a[i],
                    x.b[i],
                    x.c[i],
                    res[i]
                );
                let want_m = match m {
                    Mask::Kept => Some(x.c[i] & 1 == 1),
                    Mask::Is(b) => Some(b),
                    Mask::Unchecked => None,
                };
                if let Some(b) = want_m {
                    assert_eq!(mask[i], b as u32, "{cpu} {k} lane {i}: mask bit");
                }
            }
            seen += 1;
        }
        assert!(seen >= 60, "{cpu}: {seen} alu kernels");
    }
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = prng(seed);
    (0..n).map(|_| r() as u8).collect()
}

/// A byte or short at `off` of `m` extended to 32 bits: `ext` "s" signed, else zero.
fn sub_dword(m: &[u8], off: usize, short: bool, signed: bool) -> u32 {
    if short {
        let v = u16::from_le_bytes([m[off], m[off + 1]]);
        if signed {
            v as i16 as i32 as u32
        } else {
            u32::from(v)
        }
    } else if signed {
        m[off] as i8 as i32 as u32
    } else {
        u32::from(m[off])
    }
}

/// Buffer, global and flat loads of bytes and shorts (sign or zero extended, at bytes 4i + 1
/// and 4i + 2) and stores of the low byte or short (the other bytes kept); global_load_dwordx3.
#[test]
fn byte_and_short_loads_and_stores_match_the_isa() {
    let n = 128;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for k in isa.kernels().iter().filter(|k| k.starts_with("mem_")) {
            let p1 = random_bytes(16 * n, 1);
            let p2 = random_bytes(4 * n, 2);
            let p4 = random_bytes(16 * n, 3);
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[vec![], p1.clone(), p2.clone(), vec![], p4.clone()],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            let got = &out[4];
            let mut want = p4.clone();
            let op = k.rsplit('_').next().unwrap();
            if k == "mem_global_load_dwordx3" {
                for i in 0..n {
                    want[16 * i..16 * i + 12].copy_from_slice(&p1[16 * i..16 * i + 12]);
                    want[16 * i + 12..16 * i + 16].copy_from_slice(&p2[4 * i..4 * i + 4]);
                }
            } else if k.contains("_load_") {
                let short = op.contains("short");
                for i in 0..n {
                    let off = 4 * i + if short { 2 } else { 1 };
                    let v = sub_dword(&p1, off, short, op.starts_with('s'));
                    want[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
                }
            } else {
                let short = op == "short";
                for i in 0..n {
                    let d = &p1[4 * i..4 * i + 4];
                    if short {
                        want[4 * i + 2..4 * i + 4].copy_from_slice(&d[..2]);
                    } else {
                        want[4 * i + 1] = d[0];
                    }
                }
            }
            assert!(got == &want, "{cpu} {k}: p4 differs");
            seen += 1;
        }
        assert_eq!(seen, 19, "{cpu}: memory kernels");
    }
}

/// Scratch byte and short loads (extended, and the D16 forms: which half they write, what
/// they keep) and stores (the low byte/short, or bits 23:16 / 31:16 for `_d16_hi`).
#[test]
fn scratch_sub_dword_forms_match_the_isa() {
    let n = 128;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for k in isa.kernels().iter().filter(|k| k.starts_with("scr_")) {
            let p1 = random_bytes(4 * n, 4);
            let p2 = random_bytes(4 * n, 5);
            let p3 = random_bytes(4 * n, 6);
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[
                        vec![],
                        p1.clone(),
                        p2.clone(),
                        p3.clone(),
                        vec![0; 4 * n],
                        vec![0; 4 * n],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            let got = u32s(&out[4]);
            let (d1, d2, d3) = (u32s(&p1), u32s(&p2), u32s(&p3));
            let op = &k[4..];
            for i in 0..n {
                let m = &p1[4 * i..4 * i + 4];
                let want = if let Some(st) = op.strip_suffix("_st") {
                    let mut b = d3[i].to_le_bytes();
                    let v = d1[i];
                    match st {
                        "byte" => b[1] = v as u8,
                        "byte_d16_hi" => b[1] = (v >> 16) as u8,
                        "short" => b[2..4].copy_from_slice(&(v as u16).to_le_bytes()),
                        "short_d16_hi" => {
                            b[2..4].copy_from_slice(&((v >> 16) as u16).to_le_bytes())
                        }
                        _ => panic!("{k}"),
                    }
                    u32::from_le_bytes(b)
                } else {
                    let short = op.contains("short");
                    let off = if short { 2 } else { 1 };
                    let signed = op.starts_with('s') && op != "short_d16" && op != "short_d16_hi";
                    let v = sub_dword(m, off, short, signed);
                    if op.ends_with("_d16") {
                        d2[i] & 0xFFFF_0000 | v & 0xFFFF
                    } else if op.ends_with("_d16_hi") {
                        d2[i] & 0xFFFF | v << 16
                    } else {
                        v
                    }
                };
                assert_eq!(got[i], want, "{cpu} {k} lane {i}");
            }
            seen += 1;
        }
        assert_eq!(seen, 14, "{cpu}: scratch kernels");
    }
}

/// buffer_atomic_<op>[_x2]'s new memory value from the old one `m`, data `s`, compare `c`.
fn atomic_ref(op: &str, m: u64, s: u64, c: u64, wide: bool) -> u64 {
    let (sm, ss) = if wide {
        (m as i64, s as i64)
    } else {
        (i64::from(m as i32), i64::from(s as i32))
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
        "smin" => sm.min(ss) as u64,
        "smax" => sm.max(ss) as u64,
        "umin" => m.min(s),
        "umax" => m.max(s),
        "and" => m & s,
        "or" => m | s,
        "xor" => m ^ s,
        // INC: 0 once the old value reaches the data, else old + 1; DEC: the data when the
        // old value is 0 or above it, else old − 1.
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
        _ => panic!("atomic {op}"),
    };
    if wide {
        r
    } else {
        r & 0xFFFF_FFFF
    }
}

/// MUBUF atomics on a raw buffer: the memory afterwards, and the data VGPRs (the old value
/// with glc, the data kept without).
#[test]
fn buffer_atomics_match_the_isa() {
    let n = 256;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for k in isa.kernels().iter().filter(|k| k.starts_with("batomic_")) {
            let glc = k.ends_with("_glc");
            let name = k[8..].trim_end_matches("_glc");
            let wide = name.ends_with("_x2");
            let op = name.trim_end_matches("_x2");
            let e: Vec<u64> = if wide {
                IE.to_vec()
            } else {
                IE.iter().map(|&v| v & 0xFFFF_FFFF).collect()
            };
            let m: Vec<u64> = (0..n).map(|i| e[i % 16]).collect();
            let s: Vec<u64> = (0..n).map(|i| e[i / 16]).collect();
            let c: Vec<u64> = (0..n)
                .map(|i| if i % 2 == 0 { m[i] } else { s[i] })
                .collect();
            let enc = |v: &[u64]| {
                if wide {
                    bytes64(v)
                } else {
                    bytes32(&v.iter().map(|&x| x as u32).collect::<Vec<_>>())
                }
            };
            let dec = |b: &[u8]| -> Vec<u64> {
                if wide {
                    u64s(b)
                } else {
                    u32s(b).into_iter().map(u64::from).collect()
                }
            };
            let w = if wide { 8 } else { 4 };
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[enc(&m), enc(&s), enc(&c), vec![], vec![0; w * n]],
                )
                .unwrap_or_else(|err| panic!("{cpu} {k}: {err:?}"));
            let (mem, ret) = (dec(&out[0]), dec(&out[4]));
            for i in 0..n {
                let want = atomic_ref(op, m[i], s[i], c[i], wide);
                assert_eq!(mem[i], want, "{cpu} {k} lane {i}: memory");
                let want_ret = if glc { m[i] } else { s[i] };
                assert_eq!(ret[i], want_ret, "{cpu} {k} lane {i}: returned");
            }
            seen += 1;
        }
        assert_eq!(seen, 52, "{cpu}: buffer atomic kernels");
    }
}

/// The cache write-back/invalidate instructions as ordering points: a store before one is
/// seen by a load after it.
#[test]
fn cache_invalidations_order_memory() {
    let n = 64;
    for (cpu, isa) in cpus() {
        let names: BTreeSet<String> = isa
            .kernels()
            .into_iter()
            .filter(|k| k.starts_with("cache_"))
            .collect();
        let want: &[&str] = match cpu {
            "gfx90a" => &[
                "cache_buffer_invl2",
                "cache_buffer_wbinvl1",
                "cache_buffer_wbinvl1_vol",
                "cache_buffer_wbl2",
            ],
            "gfx942" => &[
                "cache_buffer_inv",
                "cache_buffer_wbinvl1",
                "cache_buffer_wbinvl1_vol",
                "cache_buffer_wbl2",
            ],
            _ => &["cache_buffer_wbinvl1", "cache_buffer_wbinvl1_vol"],
        };
        assert_eq!(
            names.iter().map(String::as_str).collect::<Vec<_>>(),
            want,
            "{cpu}"
        );
        for k in &names {
            let p1: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[
                        vec![],
                        bytes32(&p1),
                        vec![],
                        vec![],
                        vec![0; 4 * n],
                        vec![0; 4 * n],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            assert_eq!(u32s(&out[4]), p1, "{cpu} {k}");
            let plus: Vec<u32> = p1.iter().map(|v| v.wrapping_add(1)).collect();
            assert_eq!(u32s(&out[5]), plus, "{cpu} {k}");
        }
    }
}

/// The two-address LDS forms (offsets scaled by 4 or 8, by 256 or 512 for st64), the byte and
/// short LDS reads (extended) and writes, and ds_add_u32 (several lanes on one address) and
/// ds_add_rtn_u32: the returned values and the whole LDS afterwards.
#[test]
fn lds_forms_match_the_isa() {
    let n = 64;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for k in isa.kernels().iter().filter(|k| k.starts_with("lds_")) {
            let op = &k[4..];
            let p0 = random_bytes(2048, 7);
            let p1 = random_bytes(8 * n, 8);
            let p2 = random_bytes(8 * n, 9);
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[
                        p0.clone(),
                        p1.clone(),
                        p2.clone(),
                        vec![],
                        vec![0; 16 * n],
                        vec![0; 2048],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            let mut lds = p0.clone();
            let mut ret = vec![0xDEAD_BEEFu32; 4 * n];
            let (q1, q2) = (u64s(&p1), u64s(&p2));
            let rd = |l: &[u8], a: usize, w: usize| l[a..a + w].to_vec();
            for i in 0..n {
                let r = &mut ret[4 * i..4 * i + 4];
                if let Some(form) = op.strip_prefix("ds_read2") {
                    let b64 = form.ends_with("b64");
                    let w = if b64 { 8 } else { 4 };
                    let stride = if form.starts_with("st64") { 64 * w } else { w };
                    let (o0, o1) = if form.starts_with("st64") {
                        (2, 1)
                    } else {
                        (128, 64)
                    };
                    let mut v = rd(&lds, w * i + o0 * stride, w);
                    v.extend(rd(&lds, w * i + o1 * stride, w));
                    for (j, d) in u32s(&v).into_iter().enumerate() {
                        r[j] = d;
                    }
                } else if let Some(form) = op.strip_prefix("ds_write2") {
                    let b64 = form.ends_with("b64");
                    let w = if b64 { 8 } else { 4 };
                    let stride = if form.starts_with("st64") { 64 * w } else { w };
                    let (o0, o1) = if form.starts_with("st64") {
                        (2, 1)
                    } else {
                        (128, 64)
                    };
                    let a0 = w * i + o0 * stride;
                    let a1 = w * i + o1 * stride;
                    lds[a0..a0 + w].copy_from_slice(&q1[i].to_le_bytes()[..w]);
                    lds[a1..a1 + w].copy_from_slice(&q2[i].to_le_bytes()[..w]);
                } else if let Some(ty) = op.strip_prefix("ds_read_") {
                    let short = ty.ends_with("16");
                    let off = 4 * i + if short { 2 } else { 1 };
                    r[0] = sub_dword(&lds, off, short, ty.starts_with('i'));
                } else if op == "ds_write_b8" {
                    lds[4 * i + 1] = q1[i] as u8;
                } else if op == "ds_write_b16" {
                    lds[4 * i + 2..4 * i + 4].copy_from_slice(&(q1[i] as u16).to_le_bytes());
                } else {
                    let a = if op == "ds_add_u32" {
                        4 * (i % 8)
                    } else {
                        4 * i
                    };
                    let old = u32::from_le_bytes(lds[a..a + 4].try_into().unwrap());
                    lds[a..a + 4].copy_from_slice(&old.wrapping_add(q1[i] as u32).to_le_bytes());
                    if op == "ds_add_rtn_u32" {
                        r[0] = old;
                    }
                }
            }
            assert_eq!(u32s(&out[4]), ret, "{cpu} {k}: returned");
            assert!(out[5] == lds, "{cpu} {k}: LDS afterwards differs");
            seen += 1;
        }
        assert_eq!(seen, 16, "{cpu}: lds kernels");
    }
}

/// `buffer_load_dword[x2/x3/x4]` and `buffer_store_dword[x2/x3/x4]` (raw buffer, `offen`, the
/// vcov kernels `bufvec_x<N>`): lane i copies the first N dwords of p1's 16-byte element i to
/// p4's; the rest of p4 keeps its bytes.
#[test]
fn buffer_dword_vectors_copy() {
    let n = 128;
    for (cpu, isa) in cpus() {
        let mut seen = 0;
        for nd in [1usize, 2, 3, 4] {
            let k = format!("bufvec_x{nd}");
            if !isa.kernels().contains(&k) {
                continue;
            }
            let p1 = random_bytes(16 * n, 11);
            let p4 = random_bytes(16 * n, 12);
            let out = isa
                .run(
                    &k,
                    n as u32,
                    &[vec![], p1.clone(), vec![], vec![], p4.clone()],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e:?}"));
            let mut want = p4.clone();
            for i in 0..n {
                want[16 * i..16 * i + 4 * nd].copy_from_slice(&p1[16 * i..16 * i + 4 * nd]);
            }
            assert!(out[4] == want, "{cpu} {k}");
            seen += 1;
        }
        assert_eq!(seen, 4, "{cpu}: the four bufvec kernels");
    }
}
