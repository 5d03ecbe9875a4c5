//! Instruction-level execution tests of the gfx9 interpreter: kernels assembled with
//! `llvm-mc-19` and linked with `ld.lld-19` (`testdata/codeobjects/isa/gen.py`, which states
//! the kernels' conventions) run one instruction over edge-case inputs, and each result is
//! compared with a host reference written from the ISA documents (AMD "Vega" ISA for gfx900,
//! "Vega 7nm" for gfx906, "AMD Instinct MI100" (CDNA1) for gfx908, "AMD Instinct MI200"
//! (CDNA2) for gfx90a, "AMD Instinct MI300" (CDNA3) for gfx942).

use std::path::PathBuf;

use hsa_core::Status;
use hsa_gfx9::hwid::WaveLaunch;
use hsa_gfx9::Gfx9Target;

mod isa_harness;
use isa_harness::*;

// --- atomics --------------------------------------------------------------------------------

/// Edge values of 32-bit integer operands.
const E32: [u32; 16] = [
    0,
    1,
    2,
    3,
    0x7F,
    0xFFFF,
    0x1234_5678,
    0x7FFF_FFFE,
    0x7FFF_FFFF,
    0x8000_0000,
    0x8000_0001,
    0xA5A5_A5A5,
    0xFFFF_FFFD,
    0xFFFF_FFFE,
    0xFFFF_FFFF,
    0x0001_0000,
];

/// Edge values of 64-bit integer operands.
const E64: [u64; 16] = [
    0,
    1,
    2,
    0xFFFF_FFFF,
    0x1_0000_0000,
    0x1_0000_0001,
    0x7FFF_FFFF_FFFF_FFFE,
    0x7FFF_FFFF_FFFF_FFFF,
    0x8000_0000_0000_0000,
    0x8000_0000_0000_0001,
    0xFFFF_FFFF_FFFF_FFFE,
    0xFFFF_FFFF_FFFF_FFFF,
    0x0123_4567_89AB_CDEF,
    0xFFFF_FFFF_0000_0000,
    0x8000_0000,
    0xDEAD_BEEF_0000_0001,
];

/// f32 edge values (bits): zeros, ones, denormals, extremes, infinities, NaNs.
const F32: [u32; 16] = [
    0x0000_0000,
    0x8000_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x0000_0001,
    0x8000_0001,
    0x007F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x3FC0_0000,
    0x4B80_0001,
];

/// f64 edge values (bits).
const F64: [u64; 16] = [
    0,
    0x8000_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    1,
    0x8000_0000_0000_0001,
    0x000F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0xFFEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0x3FF8_0000_0000_0000,
    0x4340_0000_0000_0001,
];

/// f16 pairs (bits) packed in u32: zeros, ones, denormals, max, infinities, NaNs.
const F16: [u16; 16] = [
    0x0000, 0x8000, 0x3C00, 0xBC00, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
    0x7E00, 0x7C01, 0x3E00, 0x3C01,
];

/// Items per atomic dispatch: every (memory, data) pair of 16 edge values, 4 waves.
const ITEMS: u32 = 256;

/// f32 with a denormal flushed to zero of the same sign.
/// IEEE minNum/maxNum with -0 < +0; a NaN loses to a number, two NaNs give the first
/// quieted (CDNA2 ISA §9.5.3, float atomics' NaN and signed-zero rules).
fn min_max_f64(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() && b.is_nan() {
        return f64::from_bits(a.to_bits() | 1 << 51);
    }
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        // Equal values differ only in the sign of zero.
        let (x, y) = (a.to_bits(), b.to_bits());
        return f64::from_bits(if max { x & y } else { x | y });
    }
    if (a < b) != max {
        a
    } else {
        b
    }
}

/// Host reference of atomic `op` (the mnemonic after `atomic_`): the new memory value from
/// the old `m`, the data `s` and the compare value `c`. From the ISA's FLAT opcode table.
fn atomic_ref(op: &str, m: u64, s: u64, c: u64) -> u64 {
    let wide = op.ends_with("_x2") || op.ends_with("_f64");
    let base = op.strip_suffix("_x2").unwrap_or(op);
    let (m32, s32, c32) = (m as u32, s as u32, c as u32);
    if !wide {
        return u64::from(match base {
            "swap" => s32,
            "cmpswap" => {
                if m32 == c32 {
                    s32
                } else {
                    m32
                }
            }
            "add" => m32.wrapping_add(s32),
            "sub" => m32.wrapping_sub(s32),
            "smin" => (m32 as i32).min(s32 as i32) as u32,
            "smax" => (m32 as i32).max(s32 as i32) as u32,
            "umin" => m32.min(s32),
            "umax" => m32.max(s32),
            "and" => m32 & s32,
            "or" => m32 | s32,
            "xor" => m32 ^ s32,
            "inc" => {
                if m32 >= s32 {
                    0
                } else {
                    m32 + 1
                }
            }
            "dec" => {
                if m32 == 0 || m32 > s32 {
                    s32
                } else {
                    m32 - 1
                }
            }
            "add_f32" => {
                let r = flush32(f32::from_bits(m32)) + flush32(f32::from_bits(s32));
                flush32(r).to_bits()
            }
            "pk_add_f16" => {
                let h = |x: u32, k: u32| half::f16::from_bits((x >> (16 * k)) as u16);
                let add = |k: u32| {
                    let (a, b) = (h(m32, k), h(s32, k));
                    if a.is_nan() || b.is_nan() {
                        // NaN inputs propagate quieted (the first NaN operand).
                        let n = if a.is_nan() { a } else { b };
                        return u32::from(n.to_bits() | 0x200);
                    }
                    u32::from(half::f16::from_f64(a.to_f64() + b.to_f64()).to_bits())
                };
                add(0) | add(1) << 16
            }
            _ => panic!("no reference for {op}"),
        });
    }
    match base {
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
        "smin" => (m as i64).min(s as i64) as u64,
        "smax" => (m as i64).max(s as i64) as u64,
        "umin" => m.min(s),
        "umax" => m.max(s),
        "and" => m & s,
        "or" => m | s,
        "xor" => m ^ s,
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
        "add_f64" => (f64::from_bits(m) + f64::from_bits(s)).to_bits(),
        "min_f64" => min_max_f64(f64::from_bits(m), f64::from_bits(s), false).to_bits(),
        "max_f64" => min_max_f64(f64::from_bits(m), f64::from_bits(s), true).to_bits(),
        _ => panic!("no reference for {op}"),
    }
}

/// The operands of item `i` for `op`: every (memory, data) pair of the op's edge values; the
/// compare value equals the memory value on every other item (so cmpswap both swaps and not).
fn atomic_inputs(op: &str, i: usize) -> (u64, u64, u64) {
    let (a, b) = (i % 16, i / 16 % 16);
    let (m, s) = match op {
        "add_f32" => (F32[a] as u64, F32[b] as u64),
        "pk_add_f16" => (
            (F16[a] as u64) | (F16[b] as u64) << 16,
            (F16[b] as u64) | (F16[(a + 5) % 16] as u64) << 16,
        ),
        o if o.ends_with("_f64") => (F64[a], F64[b]),
        o if o.ends_with("_x2") => (E64[a], E64[b]),
        _ => (E32[a] as u64, E32[b] as u64),
    };
    let c = if i % 2 == 0 { m } else { m ^ 1 };
    (m, s, c)
}

#[test]
fn flat_and_global_atomics_match_the_isa() {
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("atomics", cpu, target);
        for kernel in isa.kernels() {
            // `<form>_<op>[_rtn]`
            let (form, rest) = kernel.split_once('_').unwrap();
            let (op, rtn) = match rest.strip_suffix("_rtn") {
                Some(op) => (op, true),
                None => (rest, false),
            };
            let wide = op.ends_with("_x2") || op.ends_with("_f64");
            let n = ITEMS as usize;
            let ins: Vec<(u64, u64, u64)> = (0..n).map(|i| atomic_inputs(op, i)).collect();
            let bufs: Vec<Vec<u8>> = if wide {
                let col =
                    |k: usize| bytes64(&ins.iter().map(|t| [t.0, t.1, t.2][k]).collect::<Vec<_>>());
                vec![col(0), col(1), col(2), vec![0; n * 8], vec![0; n * 8]]
            } else {
                let col = |k: usize| {
                    bytes32(
                        &ins.iter()
                            .map(|t| [t.0, t.1, t.2][k] as u32)
                            .collect::<Vec<_>>(),
                    )
                };
                vec![col(0), col(1), col(2), vec![0; n * 4], vec![0; n * 4]]
            };
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let (mem, ret) = if wide {
                (u64s(&out[0]), u64s(&out[4]))
            } else {
                let w = |b: &[u8]| u32s(b).into_iter().map(u64::from).collect::<Vec<_>>();
                (w(&out[0]), w(&out[4]))
            };
            for (i, &(m, s, c)) in ins.iter().enumerate() {
                let want = atomic_ref(op, m, s, c);
                assert_eq!(
                    mem[i], want,
                    "{cpu} {kernel}[{i}]: memory {m:#x} data {s:#x} cmp {c:#x} ({form})"
                );
                let want_ret = if rtn {
                    m
                } else if wide {
                    0xDEAD_BEEF_DEAD_BEEF
                } else {
                    0xDEAD_BEEF
                };
                assert_eq!(ret[i], want_ret, "{cpu} {kernel}[{i}]: returned value");
            }
            ran += 1;
        }
    }
    // gfx900/gfx906: 26 integer ops x 3 forms x 2; gfx908 adds the non-returning global
    // add_f32/pk_add_f16; gfx90a 5 float ops (add_f32/pk_add_f16 global only); gfx942 has
    // flat f32/f16 too.
    assert_eq!(ran, 156 + 156 + 160 + 182 + 186);
}

// --- VOP3P packed math ------------------------------------------------------------------------

/// 16-bit integer edge values.
const E16: [u16; 16] = [
    0, 1, 2, 3, 15, 16, 0x7F, 0x00FF, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xA5A5, 0xFFFE, 0xFFFF,
    0x1234,
];

fn f16_nan(x: u16) -> bool {
    x & 0x7C00 == 0x7C00 && x & 0x3FF != 0
}

/// An f64 result (exact for f16 sums and products) rounded once to f16, NaN inputs giving the
/// first NaN operand quieted (IEEE 754 §6.2.3).
fn f16_op(ins: &[u16], f: impl Fn(&[f64]) -> f64) -> u16 {
    if let Some(n) = ins.iter().find(|&&x| f16_nan(x)) {
        return n | 0x200;
    }
    let v: Vec<f64> = ins
        .iter()
        .map(|&x| half::f16::from_bits(x).to_f64())
        .collect();
    f16_round(f(&v))
}

/// `x` rounded once to the nearest f16, ties to even (`half::f16::from_f64` rounds through
/// f32, which can round twice).
fn f16_round(x: f64) -> u16 {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return half::f16::from_f64(x).to_bits();
    }
    let e = ((x.abs().to_bits() >> 52) as i32 - 1023).max(-14);
    let quantum = (2.0f64).powi(e - 10);
    let r = (x / quantum).round_ties_even() * quantum;
    if r.abs() >= 65520.0 {
        return if x > 0.0 { 0x7C00 } else { 0xFC00 };
    }
    // r is an f16 value: the conversion is exact.
    half::f16::from_f64(r).to_bits()
}

/// IEEE-mode min/max of f16 (ISA `V_MIN_F16`/`V_MAX_F16`, MODE.IEEE = 1): sNaN → that NaN
/// quieted, a qNaN loses to the other operand, −0 < +0.
fn f16_min_max_ref(a: u16, b: u16, max: bool) -> u16 {
    let snan = |x: u16| f16_nan(x) && x & 0x200 == 0;
    if snan(a) {
        return a | 0x200;
    }
    if snan(b) {
        return b | 0x200;
    }
    if f16_nan(a) {
        return b;
    }
    if f16_nan(b) {
        return a;
    }
    let (x, y) = (half::f16::from_bits(a), half::f16::from_bits(b));
    if x == y {
        // ±0: the negative one is the minimum.
        let neg_a = a & 0x8000 != 0;
        return if neg_a != max { a } else { b };
    }
    if (x < y) != max {
        a
    } else {
        b
    }
}

/// One 16-bit result half of packed op `op` from the selected (and negated) halves.
fn pk16_ref(op: &str, x: [u16; 3], clamp: bool) -> u16 {
    let [a, b, c] = x;
    let (ai, bi, ci) = (a as i16 as i64, b as i16 as i64, c as i16 as i64);
    let (au, bu, cu) = (a as i64, b as i64, c as i64);
    let su = |v: i64| {
        if clamp {
            v.clamp(0, 0xFFFF) as u16
        } else {
            v as u16
        }
    };
    let si = |v: i64| {
        if clamp {
            v.clamp(-0x8000, 0x7FFF) as u16
        } else {
            v as u16
        }
    };
    let r = match op {
        "v_pk_mad_i16" => si(ai * bi + ci),
        "v_pk_mad_u16" => su(au * bu + cu),
        "v_pk_mul_lo_u16" => (au * bu) as u16,
        "v_pk_add_i16" => si(ai + bi),
        "v_pk_sub_i16" => si(ai - bi),
        "v_pk_add_u16" => su(au + bu),
        "v_pk_sub_u16" => su(au - bu),
        "v_pk_lshlrev_b16" => ((bu << (a & 15)) & 0xFFFF) as u16,
        "v_pk_lshrrev_b16" => (bu >> (a & 15)) as u16,
        "v_pk_ashrrev_i16" => (bi >> (a & 15)) as u16,
        "v_pk_max_i16" => ai.max(bi) as u16,
        "v_pk_min_i16" => ai.min(bi) as u16,
        "v_pk_max_u16" => a.max(b),
        "v_pk_min_u16" => a.min(b),
        "v_pk_fma_f16" => f16_op(&x, |v| v[0] * v[1] + v[2]),
        "v_pk_add_f16" => f16_op(&x[..2], |v| v[0] + v[1]),
        "v_pk_mul_f16" => f16_op(&x[..2], |v| v[0] * v[1]),
        "v_pk_min_f16" => f16_min_max_ref(a, b, false),
        "v_pk_max_f16" => f16_min_max_ref(a, b, true),
        _ => panic!("no reference for {op}"),
    };
    if clamp && op.ends_with("f16") {
        // clamp to [0, 1]: NaN and negatives (−0 too) give +0.
        if f16_nan(r) || r & 0x8000 != 0 {
            0
        } else {
            r.min(0x3C00)
        }
    } else {
        r
    }
}

/// One 32-bit result of packed f32 op `op`.
///
/// A NaN source gives the first NaN source, quieted: what the host's scalar SSE instructions
/// give for the operand order written here, stated outright because Rust leaves a NaN
/// result's payload unspecified and an optimized build of this test commuted `f(0) + f(1)`.
fn pk32_ref(op: &str, x: [u32; 3], clamp: bool) -> u32 {
    let f = |i: usize| f32::from_bits(x[i]);
    let sources = if op == "v_pk_fma_f32" { 3 } else { 2 };
    let first_nan = x[..sources].iter().find(|&&v| f32::from_bits(v).is_nan());
    let r = match (op, first_nan) {
        (_, Some(&nan)) => f32::from_bits(nan | 0x0040_0000),
        ("v_pk_fma_f32", None) => f(0).mul_add(f(1), f(2)),
        ("v_pk_mul_f32", None) => f(0) * f(1),
        ("v_pk_add_f32", None) => f(0) + f(1),
        _ => panic!("no reference for {op}"),
    };
    let r = if clamp {
        if r.is_nan() {
            0.0
        } else {
            r.clamp(0.0, 1.0)
        }
    } else {
        r
    };
    r.to_bits()
}

#[test]
fn vop3p_packed_math_matches_the_isa() {
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("vop3p", cpu, target);
        for kernel in isa.kernels() {
            let (op, digits) = kernel.split_once("__").unwrap();
            let d: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
            let (sel, hi, nl, nh, clamp, k) = (d[0], d[1], d[2], d[3], d[4] == 1, d[5] == 1);
            let wide = op.ends_with("f32") || op == "v_pk_mov_b32";
            let float = op.ends_with("f16") || op.ends_with("f32");
            let n = ITEMS as usize;
            let out = if wide {
                let e = |i: usize| F32[i % 16] as u64 | (F32[(i * 7 + 3) % 16] as u64) << 32;
                let srcs: Vec<Vec<u64>> = (0..3)
                    .map(|s| (0..n).map(|i| e(i / [1, 16, 5][s] + s)).collect())
                    .collect();
                let bufs = vec![
                    vec![],
                    bytes64(&srcs[0]),
                    bytes64(&srcs[1]),
                    bytes64(&srcs[2]),
                    vec![0; n * 8],
                ];
                let out = isa
                    .run(&kernel, ITEMS, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                let got = u64s(&out[4]);
                for i in 0..n {
                    let s = [srcs[0][i], srcs[1][i], srcs[2][i]];
                    let mut want = 0u64;
                    for h in 0..2 {
                        let (sl, ng) = if h == 0 { (sel, nl) } else { (hi, nh) };
                        let x: [u32; 3] = std::array::from_fn(|j| {
                            let v = (s[j] >> (32 * (sl >> j & 1))) as u32;
                            if ng >> j & 1 != 0 {
                                v ^ 0x8000_0000
                            } else {
                                v
                            }
                        });
                        let r = if op == "v_pk_mov_b32" {
                            // D.dword[h] = S_h.dword[op_sel[h]] (CDNA2 V_PK_MOV_B32).
                            (s[h] >> (32 * (sel >> h & 1))) as u32
                        } else {
                            pk32_ref(op, x, clamp)
                        };
                        want |= (r as u64) << (32 * h);
                    }
                    assert_eq!(got[i], want, "{cpu} {kernel}[{i}]: sources {s:x?}");
                }
                ran += 1;
                continue;
            } else {
                let e = |i: usize, s: usize| -> u32 {
                    let t = if float { &F16 } else { &E16 };
                    t[(i / [1, 16, 5][s] + s) % 16] as u32
                        | (t[(i * [3, 5, 7][s] + 1) % 16] as u32) << 16
                };
                let srcs: Vec<Vec<u32>> =
                    (0..3).map(|s| (0..n).map(|i| e(i, s)).collect()).collect();
                let bufs = vec![
                    vec![],
                    bytes32(&srcs[0]),
                    bytes32(&srcs[1]),
                    bytes32(&srcs[2]),
                    vec![0; n * 4],
                ];
                (
                    isa.run(&kernel, ITEMS, &bufs)
                        .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}")),
                    srcs,
                )
            };
            let (out, srcs) = out;
            let got = u32s(&out[4]);
            for i in 0..n {
                let mut s = [srcs[0][i], srcs[1][i], srcs[2][i]];
                if k {
                    // Inline constant in source 1: f16 1.0 in the low half and 0 above, or
                    // the integer -1 sign-extended to 32 bits.
                    s[1] = if float { 0x3C00 } else { 0xFFFF_FFFF };
                }
                let mut want = 0u32;
                for h in 0..2 {
                    let (sl, ng) = if h == 0 { (sel, nl) } else { (hi, nh) };
                    let x: [u16; 3] = std::array::from_fn(|j| {
                        let v = (s[j] >> (16 * (sl >> j & 1))) as u16;
                        if ng >> j & 1 != 0 {
                            v ^ 0x8000
                        } else {
                            v
                        }
                    });
                    want |= (pk16_ref(op, x, clamp) as u32) << (16 * h);
                }
                assert_eq!(got[i], want, "{cpu} {kernel}[{i}]: sources {s:x?}");
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 3 * 141 + 2 * 168);
}

// --- scratch (private segment) ---------------------------------------------------------------

/// Runs every `scratch` kernel (see gen.py) over 4 work-groups of 64 (4 waves, so each wave
/// has its own scratch offset) and checks what each lane read back from its private segment.
#[test]
fn private_segment_through_mubuf_scratch_and_flat() {
    let n = ITEMS as usize;
    let data: Vec<u32> = (0..n as u32 * 4)
        .map(|k| k.wrapping_mul(0x9E37_79B9) ^ 0x5A5A_0000)
        .collect();
    // A: a multiple of 16 below 128 (different lanes use different slots); B = A or A + 128.
    let a_off: Vec<u32> = (0..n as u32).map(|i| (i * 5 % 8) * 16).collect();
    let b_off: Vec<u32> = (0..n as u32)
        .map(|i| a_off[i as usize] + if i % 3 == 0 { 128 } else { 0 })
        .collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("scratch", cpu, target);
        for kernel in isa.kernels() {
            if kernel == "raw_buffer" {
                continue;
            }
            let bufs = vec![
                vec![],
                bytes32(&data),
                bytes32(&a_off),
                bytes32(&b_off),
                vec![0; n * 16],
                vec![0; n * 16],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let dwords: usize = match kernel.rsplit_once("_x") {
                Some((_, d)) => d.parse().unwrap(),
                None => 4,
            };
            let p4 = u32s(&out[4]);
            let p5 = u32s(&out[5]);
            for i in 0..n {
                for k in 0..4 {
                    let d = data[i * 4 + k];
                    let want = if k >= dwords {
                        0
                    } else if b_off[i] == a_off[i] {
                        d
                    } else {
                        !d
                    };
                    assert_eq!(p4[i * 4 + k], want, "{cpu} {kernel}[{i}] dword {k}");
                    if kernel == "cross_mubuf" {
                        assert_eq!(p5[i * 4 + k], want, "{cpu} {kernel}[{i}] flat dword {k}");
                    }
                }
            }
            ran += 1;
        }
    }
    // scratch_x1..4, flat_x1..4 on every target; mubuf_x1..4 and cross_mubuf on all but
    // gfx942 (architected flat scratch: no private segment buffer).
    assert_eq!(ran, 5 * 8 + 4 * 5);
}

/// A raw buffer resource (stride 0, no swizzle) over p0 with NUM_RECORDS bytes: loads past
/// the end read 0 and atomics there do nothing (Vega ISA §8.1.5 "Range checking").
#[test]
fn raw_buffer_loads_and_atomics_are_range_checked() {
    let n = ITEMS as usize;
    let mem: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
    let records = 100 * 4 + 2; // dword 100 straddles the end: out of range too
    for (cpu, target) in CPUS {
        let isa = Isa::load("scratch", cpu, target);
        let bufs = vec![
            bytes32(&mem),
            vec![],
            bytes32(&[records]),
            vec![],
            vec![0; n * 4],
            vec![0; n * 4],
        ];
        let out = isa
            .run("raw_buffer", ITEMS, &bufs)
            .unwrap_or_else(|e| panic!("{cpu}: {e}"));
        let (after, loaded, returned) = (u32s(&out[0]), u32s(&out[4]), u32s(&out[5]));
        for i in 0..n {
            let inside = (i as u32 + 1) * 4 <= records;
            let (want_load, want_after) = if inside {
                (mem[i], mem[i] + 1)
            } else {
                (0, mem[i])
            };
            assert_eq!(loaded[i], want_load, "{cpu} load [{i}]");
            assert_eq!(returned[i], want_load, "{cpu} atomic return [{i}]");
            assert_eq!(after[i], want_after, "{cpu} memory [{i}]");
        }
    }
}

// --- SDWA and DPP ----------------------------------------------------------------------------

/// (shift, bits) of an SDWA select field value (0..3 BYTE_n, 4/5 WORD_n, 6 DWORD).
fn sel_bits(sel: u8) -> (u32, u32) {
    match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => (0, 32),
    }
}

/// SDWA source select: the selected bits, zero- or sign-extended (Vega ISA §12.6).
fn sdwa_src(v: u32, sel: u8, sext: bool) -> u32 {
    let (sh, n) = sel_bits(sel);
    if n == 32 {
        return v;
    }
    let x = (v >> sh) & ((1 << n) - 1);
    if sext && x >> (n - 1) & 1 == 1 {
        x | !((1u32 << n) - 1)
    } else {
        x
    }
}

/// SDWA destination: the result's low bits at `dst_sel`; other bits 0 (PAD), the result's
/// sign above and 0 below (SEXT), or the old value's (PRESERVE).
fn sdwa_dst(r: u32, old: u32, sel: u8, unused: u8) -> u32 {
    let (sh, n) = sel_bits(sel);
    if n == 32 {
        return r;
    }
    let field = ((1u32 << n) - 1) << sh;
    let placed = (r << sh) & field;
    match unused {
        0 => placed,
        1 => {
            if r >> (n - 1) & 1 == 1 {
                placed | !(field | ((1u32 << sh) - 1))
            } else {
                placed
            }
        }
        _ => placed | (old & !field),
    }
}

/// The 32-bit result of a VOP2 integer op (16-bit ops on the low halves, zero-extended).
fn vop2_ref(op: &str, a: u32, b: u32) -> u32 {
    let (a16, b16) = (a as u16, b as u16);
    match op {
        "v_mul_lo_u16" => a16.wrapping_mul(b16) as u32,
        "v_add_u16" => a16.wrapping_add(b16) as u32,
        "v_sub_u16" => a16.wrapping_sub(b16) as u32,
        "v_subrev_u16" => b16.wrapping_sub(a16) as u32,
        "v_lshlrev_b16" => ((b16 as u32) << (a & 15)) & 0xFFFF,
        "v_lshrrev_b16" => (b16 >> (a & 15)) as u32,
        "v_ashrrev_i16" => ((b16 as i16) >> (a & 15)) as u16 as u32,
        "v_max_u16" => a16.max(b16) as u32,
        "v_max_i16" => (a16 as i16).max(b16 as i16) as u16 as u32,
        "v_min_u16" => a16.min(b16) as u32,
        "v_min_i16" => (a16 as i16).min(b16 as i16) as u16 as u32,
        "v_add_u32" => a.wrapping_add(b),
        "v_sub_u32" => a.wrapping_sub(b),
        "v_and_b32" => a & b,
        "v_max_i32" => (a as i32).max(b as i32) as u32,
        "v_mov_b32" => a,
        "v_cmp_eq_u32" => (a == b) as u32,
        "v_cmp_lt_i32" => ((a as i32) < (b as i32)) as u32,
        "v_cmp_gt_u32" => (a > b) as u32,
        _ => panic!("no reference for {op}"),
    }
}

/// The lane DPP control `ctrl` makes `lane` read, or `None` out of range (Vega ISA §12.7).
fn dpp_src_lane(ctrl: u32, lane: usize) -> Option<usize> {
    let (row, pos, n) = (lane / 16 * 16, lane % 16, (ctrl & 15) as usize);
    match ctrl {
        0..=0xFF => Some(lane / 4 * 4 + ((ctrl as usize >> (2 * (lane % 4))) & 3)),
        0x101..=0x10F => (pos + n <= 15).then(|| lane + n),
        0x111..=0x11F => (pos >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + (pos + 16 - n) % 16),
        0x130 => (lane < 63).then(|| lane + 1),
        0x134 => Some((lane + 1) % 64),
        0x138 => (lane > 0).then(|| lane - 1),
        0x13C => Some((lane + 63) % 64),
        0x140 => Some(row + 15 - pos),
        0x141 => Some(lane / 8 * 8 + 7 - lane % 8),
        0x142 => (lane >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        _ => panic!("ctrl {ctrl:#x}"),
    }
}

#[test]
fn sdwa_and_dpp_match_the_isa() {
    let n = ITEMS as usize;
    let a: Vec<u32> = (0..n)
        .map(|i| E32[i % 16] ^ (E16[i / 16 % 16] as u32) << 8)
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|i| E32[(i * 7 + 3) % 16].rotate_left(i as u32 % 13))
        .collect();
    let old: Vec<u32> = (0..n).map(|i| 0xC0DE_0000 | i as u32).collect();
    let on: Vec<u32> = (0..n).map(|i| (i % 7 != 3) as u32).collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("sdwa_dpp", cpu, target);
        for kernel in isa.kernels() {
            let bufs = vec![
                bytes32(&on),
                bytes32(&a),
                bytes32(&b),
                bytes32(&old),
                vec![0; n * 4],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            let (form, rest) = kernel.split_once('_').unwrap();
            let (op, args) = rest.split_once("__").unwrap_or((rest, ""));
            for i in 0..n {
                let want = match form {
                    "e32" => vop2_ref(op, a[i], b[i]),
                    "sdwa" => {
                        let d: Vec<u8> = args.bytes().map(|c| c - b'0').collect();
                        let x = sdwa_src(a[i], d[2], d[4] == 1);
                        let y = sdwa_src(b[i], d[3], d[5] == 1);
                        let r = vop2_ref(op, x, y);
                        if op.starts_with("v_cmp") {
                            r
                        } else {
                            sdwa_dst(r, old[i], d[0], d[1])
                        }
                    }
                    _ => {
                        let f: Vec<u32> = args
                            .split('_')
                            .map(|t| u32::from_str_radix(t, 16).unwrap())
                            .collect();
                        let (ctrl, rm, bm, bc) = (f[0], f[1], f[2], f[3] == 1);
                        let (lane, base) = (i % 64, i / 64 * 64);
                        let writes = on[i] == 1
                            && rm >> (lane / 16) & 1 == 1
                            && bm >> (lane % 16 / 4) & 1 == 1;
                        // A source lane out of range or off in EXEC: 0 with bound_ctrl, else
                        // the lane is not written.
                        let src = dpp_src_lane(ctrl, lane)
                            .filter(|&s| on[base + s] == 1)
                            .map(|s| a[base + s]);
                        // `_self`: src1 is src0's register, read in the lane itself.
                        let (op, b_i) = match op.strip_suffix("_self") {
                            Some(op) => (op, a[i]),
                            None => (op, b[i]),
                        };
                        match (writes, src) {
                            (false, _) => old[i],
                            (true, Some(x)) => vop2_ref(op, x, b_i),
                            (true, None) if bc => vop2_ref(op, 0, b_i),
                            (true, None) => old[i],
                        }
                    }
                };
                assert_eq!(
                    got[i], want,
                    "{cpu} {kernel}[{i}]: a {:#x} b {:#x} old {:#x}",
                    a[i], b[i], old[i]
                );
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5 * 294);
}

// --- mfma -----------------------------------------------------------------------------------

/// The MFMAs of each target with their D and A/B register counts per lane (CDNA1/CDNA2/CDNA3
/// ISA operand sizes; gen.py's MFMA table).
type MfmaList = &'static [(&'static str, usize, usize)];
const MFMA_OPS: [(&str, MfmaList); 3] = [
    (
        "gfx908",
        &[
            ("v_mfma_f32_32x32x1f32", 32, 1),
            ("v_mfma_f32_16x16x1f32", 16, 1),
            ("v_mfma_f32_4x4x1f32", 4, 1),
            ("v_mfma_f32_32x32x2f32", 16, 1),
            ("v_mfma_f32_16x16x4f32", 4, 1),
            ("v_mfma_f32_32x32x4f16", 32, 2),
            ("v_mfma_f32_16x16x4f16", 16, 2),
            ("v_mfma_f32_4x4x4f16", 4, 2),
            ("v_mfma_f32_32x32x8f16", 16, 2),
            ("v_mfma_f32_16x16x16f16", 4, 2),
            ("v_mfma_i32_32x32x4i8", 32, 1),
            ("v_mfma_i32_16x16x4i8", 16, 1),
            ("v_mfma_i32_4x4x4i8", 4, 1),
            ("v_mfma_i32_32x32x8i8", 16, 1),
            ("v_mfma_i32_16x16x16i8", 4, 1),
            ("v_mfma_f32_32x32x2bf16", 32, 1),
            ("v_mfma_f32_16x16x2bf16", 16, 1),
            ("v_mfma_f32_4x4x2bf16", 4, 1),
            ("v_mfma_f32_32x32x4bf16", 16, 1),
            ("v_mfma_f32_16x16x8bf16", 4, 1),
        ],
    ),
    (
        "gfx90a",
        &[
            ("v_mfma_f32_32x32x4bf16_1k", 32, 2),
            ("v_mfma_f32_16x16x4bf16_1k", 16, 2),
            ("v_mfma_f32_4x4x4bf16_1k", 4, 2),
            ("v_mfma_f32_32x32x8bf16_1k", 16, 2),
            ("v_mfma_f32_16x16x16bf16_1k", 4, 2),
            ("v_mfma_f64_16x16x4f64", 8, 2),
            ("v_mfma_f64_4x4x4f64", 2, 2),
        ],
    ),
    (
        "gfx942",
        &[
            ("v_mfma_f32_32x32x1_2b_f32", 32, 1),
            ("v_mfma_f32_16x16x1_4b_f32", 16, 1),
            ("v_mfma_f32_4x4x1_16b_f32", 4, 1),
            ("v_mfma_f32_32x32x2_f32", 16, 1),
            ("v_mfma_f32_16x16x4_f32", 4, 1),
            ("v_mfma_f32_32x32x4_2b_f16", 32, 2),
            ("v_mfma_f32_16x16x4_4b_f16", 16, 2),
            ("v_mfma_f32_4x4x4_16b_f16", 4, 2),
            ("v_mfma_f32_32x32x8_f16", 16, 2),
            ("v_mfma_f32_16x16x16_f16", 4, 2),
            ("v_mfma_i32_32x32x4_2b_i8", 32, 1),
            ("v_mfma_i32_16x16x4_4b_i8", 16, 1),
            ("v_mfma_i32_4x4x4_16b_i8", 4, 1),
            ("v_mfma_i32_32x32x16_i8", 16, 2),
            ("v_mfma_i32_16x16x32_i8", 4, 2),
            ("v_mfma_f32_32x32x4_2b_bf16", 32, 2),
            ("v_mfma_f32_16x16x4_4b_bf16", 16, 2),
            ("v_mfma_f32_4x4x4_16b_bf16", 4, 2),
            ("v_mfma_f32_32x32x8_bf16", 16, 2),
            ("v_mfma_f32_16x16x16_bf16", 4, 2),
            ("v_mfma_f64_16x16x4_f64", 8, 2),
            ("v_mfma_f64_4x4x4_4b_f64", 2, 2),
            ("v_mfma_f32_16x16x8_xf32", 4, 2),
            ("v_mfma_f32_32x32x4_xf32", 16, 2),
            ("v_mfma_f32_16x16x32_bf8_bf8", 4, 2),
            ("v_mfma_f32_16x16x32_bf8_fp8", 4, 2),
            ("v_mfma_f32_16x16x32_fp8_bf8", 4, 2),
            ("v_mfma_f32_16x16x32_fp8_fp8", 4, 2),
            ("v_mfma_f32_32x32x16_bf8_bf8", 16, 2),
            ("v_mfma_f32_32x32x16_bf8_fp8", 16, 2),
            ("v_mfma_f32_32x32x16_fp8_bf8", 16, 2),
            ("v_mfma_f32_32x32x16_fp8_fp8", 16, 2),
        ],
    ),
];

/// (D dwords, A/B dwords) per lane of `op` on `cpu` (gfx90a has gfx908's MFMAs too).
fn mfma_widths(cpu: &str, op: &str) -> (usize, usize) {
    let lists: &[&str] = match cpu {
        "gfx908" => &["gfx908"],
        "gfx90a" => &["gfx908", "gfx90a"],
        _ => &["gfx942"],
    };
    MFMA_OPS
        .iter()
        .filter(|(c, _)| lists.contains(c))
        .flat_map(|(_, ops)| ops.iter())
        .find(|(o, _, _)| *o == op)
        .map(|&(_, wd, wab)| (wd, wab))
        .unwrap_or_else(|| panic!("{cpu}: no MFMA {op}"))
}

/// Element kind of an MFMA's A/B: bits per element and the format.
#[derive(Clone, Copy, PartialEq, Debug)]
enum MfmaElem {
    F32,
    F16,
    Bf16,
    I8,
    F64,
    /// gfx940 XF32: f32 bits (the small integers here have no low mantissa bits to drop).
    Xf32,
    /// gfx940 FP8 (E4M3, bias 8, FNUZ) and BF8 (E5M2, bias 16, FNUZ).
    Fp8,
    Bf8,
}

/// Which matrix entry a (register, lane, element) of each operand holds, written from the
/// register-to-element equations of the CDNA ISA guides (AMD matrix instruction calculator,
/// "Register to matrix element mapping"), the inverse of the interpreter's direction.
struct MfmaLayout {
    m: usize,
    k: usize,
    blocks: usize,
    /// Elements of A/B per lane.
    kl: usize,
    elem: MfmaElem,
    /// B's kind (the FP8/BF8 pairs name A's, then B's).
    b_elem: MfmaElem,
}

impl MfmaLayout {
    fn new(op: &str, wd: usize, wab: usize) -> MfmaLayout {
        let rest = op.strip_prefix("v_mfma_").unwrap();
        let (out, rest) = rest.split_at(4);
        let mut it = rest.splitn(3, 'x');
        let m: usize = it.next().unwrap().parse().unwrap();
        let _n = it.next().unwrap();
        let kt = it.next().unwrap();
        let kend = kt.find(|c: char| !c.is_ascii_digit()).unwrap();
        let k: usize = kt[..kend].parse().unwrap();
        let tail = &kt[kend..];
        let f8 = |t: &str| {
            if t == "bf8" {
                MfmaElem::Bf8
            } else {
                MfmaElem::Fp8
            }
        };
        let pair: Vec<&str> = tail
            .split('_')
            .filter(|t| *t == "fp8" || *t == "bf8")
            .collect();
        let elem = if let [a, _] = pair[..] {
            f8(a)
        } else if tail.contains("xf32") {
            MfmaElem::Xf32
        } else if tail.contains("bf16") {
            MfmaElem::Bf16
        } else if tail.contains("f16") {
            MfmaElem::F16
        } else if tail.contains("i8") {
            MfmaElem::I8
        } else if tail.contains("f64") {
            MfmaElem::F64
        } else {
            MfmaElem::F32
        };
        let b_elem = if let [_, b] = pair[..] { f8(b) } else { elem };
        let bits = match elem {
            MfmaElem::F32 | MfmaElem::Xf32 => 32,
            MfmaElem::F16 | MfmaElem::Bf16 => 16,
            MfmaElem::I8 | MfmaElem::Fp8 | MfmaElem::Bf8 => 8,
            MfmaElem::F64 => 64,
        };
        let results = if out == "f64_" { wd / 2 } else { wd };
        MfmaLayout {
            m,
            k,
            blocks: results * 64 / (m * m),
            kl: wab * 32 / bits,
            elem,
            b_elem,
        }
    }

    /// (block, row or column, k) of element `e` of `lane` of A (or B).
    fn input(&self, lane: usize, e: usize) -> (usize, usize, usize) {
        if self.elem == MfmaElem::F64 {
            return if self.m == 4 {
                ((lane / 4) % 4, lane % 4, lane / 16)
            } else {
                (0, lane % 16, lane / 16)
            };
        }
        let groups = self.k / self.kl;
        (
            lane / (self.m * groups),
            lane % self.m,
            self.kl * ((lane / self.m) % groups) + e,
        )
    }

    /// (block, i, j) of result `r` (a dword, or a register pair for f64) of `lane` of C/D.
    fn output(&self, r: usize, lane: usize) -> (usize, usize, usize) {
        if self.elem == MfmaElem::F64 {
            return if self.m == 4 {
                ((lane / 4) % 4, lane / 16, lane % 4)
            } else {
                (0, 4 * r + lane / 16, lane % 16)
            };
        }
        match self.m {
            32 => (
                r / 16,
                (8 * (r / 4)) % 32 + 4 * (lane / 32) + r % 4,
                lane % 32,
            ),
            16 => (r / 4, 4 * (lane / 16) + r % 4, lane % 16),
            _ => (lane / 4, r, lane % 4),
        }
    }
}

/// A small integer for input `which` (0 = A, 1 = B, 2 = C) at (lane, index): exact in every
/// element type, and every sum of products stays exact in f32.
fn mfma_value(which: usize, lane: usize, idx: usize) -> i64 {
    let h = (lane as u64 * 0x9E37_79B9 + idx as u64 * 0x85EB_CA6B + which as u64 * 0xC2B2_AE35)
        .wrapping_mul(0x2545_F491_4F6C_DD1D);
    let span = if which == 2 { 101 } else { 9 };
    (h >> 40) as i64 % span - span / 2
}

/// The bits of integer `v` as one element of `elem`.
fn mfma_encode(v: i64, elem: MfmaElem) -> u64 {
    match elem {
        MfmaElem::F32 => u64::from((v as f32).to_bits()),
        MfmaElem::F16 => {
            // |v| <= 4: exponent and 10-bit mantissa by hand.
            if v == 0 {
                return 0;
            }
            let (s, a) = (u64::from(v < 0) << 15, v.unsigned_abs());
            let e = 63 - a.leading_zeros() as u64;
            s | (e + 15) << 10 | ((a << 10 >> e) & 0x3FF)
        }
        MfmaElem::Bf16 => u64::from((v as f32).to_bits() >> 16),
        MfmaElem::I8 => v as i8 as u8 as u64,
        MfmaElem::F64 => (v as f64).to_bits(),
        MfmaElem::Xf32 => u64::from((v as f32).to_bits()),
        MfmaElem::Fp8 | MfmaElem::Bf8 => {
            // |v| <= 4: 1.0 has exponent field 8 (FP8) or 16 (BF8); 3 mantissa bits or 2.
            if v == 0 {
                return 0;
            }
            let (mbits, bias) = if elem == MfmaElem::Fp8 {
                (3, 8)
            } else {
                (2, 16)
            };
            let a = v.unsigned_abs();
            let e = 63 - u64::from(a.leading_zeros());
            let m = (a << mbits >> e) & ((1 << mbits) - 1);
            u64::from(v < 0) << 7 | (e + bias) << mbits | m
        }
    }
}

#[test]
// (lane, element) loops mirror the ISA's layout equations.
#[allow(clippy::needless_range_loop)]
fn mfma_matches_a_host_matrix_multiply() {
    let mut ran = 0;
    for (cpu, target) in CPUS.into_iter().filter(|(_, t)| t.has_agprs()) {
        let isa = Isa::load("mfma", cpu, target);
        for kernel in isa.kernels() {
            if kernel == "accmov" {
                let src: Vec<u32> = (0..64).map(|i| 0xA000_0000 | i).collect();
                let on: Vec<u32> = (0..64).map(|i| (i % 5 != 2) as u32).collect();
                let old: Vec<u32> = (0..64).map(|i| 0x0B00_0000 | i).collect();
                let bufs = vec![
                    vec![0; 4],
                    bytes32(&src),
                    bytes32(&on),
                    bytes32(&old),
                    vec![0; 256],
                ];
                let out = isa.run(&kernel, 64, &bufs).unwrap();
                let want: Vec<u32> = (0..64)
                    .map(|i| if on[i] == 1 { src[i] } else { old[i] })
                    .collect();
                assert_eq!(u32s(&out[4]), want, "{cpu} accmov");
                ran += 1;
                continue;
            }
            let (op, var) = kernel.split_once("__").unwrap();
            let (wd, wab) = mfma_widths(cpu, op);
            let l = MfmaLayout::new(op, wd, wab);
            let f64_form = l.elem == MfmaElem::F64;
            // Inputs: per lane, wab dwords of A and B (elements packed low first), wd of C.
            let mut regs = [
                vec![0u32; 64 * wab],
                vec![0u32; 64 * wab],
                vec![0u32; 64 * wd],
            ];
            let ebits = 32 * wab / l.kl;
            let mut amat = vec![0i64; l.blocks * l.m * l.k];
            let mut bphys = vec![vec![0i64; l.kl]; 64];
            for lane in 0..64 {
                for e in 0..l.kl {
                    let (blk, i, k) = l.input(lane, e);
                    let (va, vb) = (mfma_value(0, lane, e), mfma_value(1, lane, e));
                    amat[(blk * l.m + i) * l.k + k] = va;
                    bphys[lane][e] = vb;
                    for (which, v) in [(0, va), (1, vb)] {
                        let bits = mfma_encode(v, if which == 0 { l.elem } else { l.b_elem });
                        let at = e * ebits;
                        let (d, sh) = (lane * wab + at / 32, at % 32);
                        regs[which][d] |= (bits << sh) as u32;
                        if ebits == 64 {
                            regs[which][d + 1] = (bits >> 32) as u32;
                        }
                    }
                }
            }
            let results = if f64_form { wd / 2 } else { wd };
            let mut cmat = vec![0i64; l.blocks * l.m * l.m];
            for lane in 0..64 {
                for r in 0..results {
                    let v = if var == "c0" {
                        0
                    } else {
                        mfma_value(2, lane, r)
                    };
                    let (blk, i, j) = l.output(r, lane);
                    cmat[(blk * l.m + i) * l.m + j] = v;
                    if f64_form {
                        let b = (v as f64).to_bits();
                        regs[2][lane * wd + 2 * r] = b as u32;
                        regs[2][lane * wd + 2 * r + 1] = (b >> 32) as u32;
                    } else if l.elem == MfmaElem::I8 {
                        regs[2][lane * wd + r] = v as i32 as u32;
                    } else {
                        regs[2][lane * wd + r] = (v as f32).to_bits();
                    }
                }
            }
            // Modifiers `m<cbsz><abid><blgp>` (gfx942 f64: neg bits).
            let (mut cbsz, mut abid, mut blgp) = (0usize, 0usize, 0usize);
            if let Some(d) = var.strip_prefix('m') {
                let d: Vec<usize> = d.bytes().map(|c| (c - b'0') as usize).collect();
                (cbsz, abid, blgp) = (d[0], d[1], d[2]);
            }
            let neg = if f64_form { blgp } else { 0 };
            let blgp = if f64_form { 0 } else { blgp };
            // The B matrix each lane sees: lane L reads lane src(L) under blgp (CDNA ISA
            // "BLGP").
            let src = |lane: usize| match blgp {
                1 => lane % 32,
                2 => 32 + lane % 32,
                3 => (lane + 16) % 64,
                4..=7 => 16 * (blgp - 4) + lane % 16,
                _ => lane,
            };
            let mut bmat = vec![0i64; l.blocks * l.k * l.m];
            for lane in 0..64 {
                for e in 0..l.kl {
                    let (blk, j, k) = l.input(lane, e);
                    bmat[(blk * l.k + k) * l.m + j] = bphys[src(lane)][e];
                }
            }
            let sgn = |v: i64, bit: usize| if neg >> bit & 1 == 1 { -v } else { v };
            let bufs = vec![
                vec![0; 4],
                bytes32(&regs[0]),
                bytes32(&regs[1]),
                bytes32(&regs[2]),
                vec![0; 64 * wd * 4],
            ];
            let out = isa
                .run(&kernel, 64, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            for lane in 0..64 {
                for r in 0..results {
                    let (blk, i, j) = l.output(r, lane);
                    // CBSZ/ABID: block blk multiplies the A of block
                    // floor(blk / 2^cbsz) * 2^cbsz + abid.
                    let ablk = blk >> cbsz << cbsz | abid;
                    let mut d = sgn(cmat[(blk * l.m + i) * l.m + j], 2);
                    for k in 0..l.k {
                        d += sgn(amat[(ablk * l.m + i) * l.k + k], 0)
                            * sgn(bmat[(blk * l.k + k) * l.m + j], 1);
                    }
                    let (want, have) = if f64_form {
                        let g = u64::from(got[lane * wd + 2 * r])
                            | u64::from(got[lane * wd + 2 * r + 1]) << 32;
                        ((d as f64).to_bits(), g)
                    } else if l.elem == MfmaElem::I8 {
                        (d as i32 as u32 as u64, u64::from(got[lane * wd + r]))
                    } else {
                        (
                            u64::from((d as f32).to_bits()),
                            u64::from(got[lane * wd + r]),
                        )
                    };
                    assert_eq!(
                        have, want,
                        "{cpu} {kernel}: D[{i}][{j}] of block {blk} (register {r}, lane {lane})"
                    );
                }
            }
            ran += 1;
        }
    }
    // gen.py: 35 gfx908, 72 gfx90a, 86 gfx942 kernels.
    assert_eq!(ran, 35 + 72 + 86);
}

/// The kernels of `mfma.cl` compiled by clang-19 (`testdata/codeobjects/build.sh`: the
/// `__builtin_amdgcn_mfma_*` builtins, with the compiler's own `v_accvgpr_write/read` moves
/// and, on gfx90a/gfx942, C/D in VGPRs or AGPRs as it allocates them): one wave computes
/// `C = A·B + C` for row-major A (M×K), B (K×N), C (M×N), compared with a host matrix
/// multiply.
#[test]
fn compiled_mfma_kernels_match_a_host_matrix_multiply() {
    // (kernel, M = N, K, element bytes, kind)
    let kernels: [(&str, usize, usize, usize, MfmaElem); 4] = [
        ("sgemm_32x32x2", 32, 8, 4, MfmaElem::F32),
        ("hgemm_16x16x16", 16, 32, 2, MfmaElem::F16),
        ("igemm_16x16", 16, 64, 1, MfmaElem::I8),
        ("dgemm_16x16x4", 16, 8, 8, MfmaElem::F64),
    ];
    let mut ran = 0;
    for (cpu, target) in CPUS.into_iter().filter(|(_, t)| t.has_agprs()) {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../testdata/codeobjects/isa/gemm-{cpu}-v5.hsaco"));
        let isa = Isa {
            data: std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")),
            target,
        };
        let names = isa.kernels();
        for (name, n, k, size, elem) in kernels {
            if !names.iter().any(|x| x == name) {
                // dgemm: no f64 MFMA on gfx908.
                assert_eq!((cpu, name), ("gfx908", "dgemm_16x16x4"));
                continue;
            }
            let a: Vec<i64> = (0..n * k).map(|x| mfma_value(0, x % 64, x / 64)).collect();
            let b: Vec<i64> = (0..k * n).map(|x| mfma_value(1, x % 64, x / 64)).collect();
            let c: Vec<i64> = (0..n * n).map(|x| mfma_value(2, x % 64, x / 64)).collect();
            let enc = |v: &[i64], el: MfmaElem, bytes: usize| -> Vec<u8> {
                v.iter()
                    .flat_map(|&x| {
                        let bits = match el {
                            MfmaElem::I8 if bytes == 4 => x as i32 as u32 as u64,
                            MfmaElem::F16 if bytes == 4 => u64::from((x as f32).to_bits()),
                            _ => mfma_encode(x, el),
                        };
                        bits.to_le_bytes()[..bytes].to_vec()
                    })
                    .collect()
            };
            // C/D: f32 for the f32 and f16 kernels, i32 for i8, f64 for f64.
            let csize = if elem == MfmaElem::F64 { 8 } else { 4 };
            let bufs = vec![
                enc(&a, elem, size),
                enc(&b, elem, size),
                enc(&c, elem, csize),
            ];
            let out = isa
                .run_with(name, 64, &bufs, &[(24, k as u32)])
                .unwrap_or_else(|e| panic!("{cpu} {name}: {e}"));
            for i in 0..n {
                for j in 0..n {
                    let d = c[i * n + j] + (0..k).map(|x| a[i * k + x] * b[x * n + j]).sum::<i64>();
                    let at = (i * n + j) * csize;
                    let got = &out[2][at..at + csize];
                    let want = match elem {
                        MfmaElem::F64 => (d as f64).to_le_bytes().to_vec(),
                        MfmaElem::I8 => (d as i32).to_le_bytes().to_vec(),
                        _ => (d as f32).to_le_bytes().to_vec(),
                    };
                    assert_eq!(got, &want[..], "{cpu} {name}: C[{i}][{j}] = {d}");
                }
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 3 + 4 + 4);
}

// --- vop3 byte ops --------------------------------------------------------------------------

/// `V_PERM_B32` from the Vega ISA's VOP3 table: result byte i is `byte_permute({S0, S1},
/// S2.byte[i])`: selectors 0..=7 pick a byte of the 64-bit `{S0, S1}` (S1 is bytes 0..=3),
/// 8..=11 the sign of byte 1, 3, 5, 7 as 0x00/0xFF, 12 gives 0x00, 13..=255 0xFF.
fn perm_ref(s0: u32, s1: u32, s2: u32) -> u32 {
    let bytes: Vec<u8> = s1
        .to_le_bytes()
        .into_iter()
        .chain(s0.to_le_bytes())
        .collect();
    let mut out = [0u8; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let sel = s2.to_le_bytes()[i] as usize;
        *o = match sel {
            0..=7 => bytes[sel],
            8..=11 => {
                if bytes[2 * (sel - 8) + 1] & 0x80 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        };
    }
    u32::from_le_bytes(out)
}

#[test]
fn vop3_byte_ops_match_the_isa() {
    let n = 64;
    let a: Vec<u32> = (0..n).map(|i| E32[i % 16] ^ 0x8100_8000).collect();
    let b: Vec<u32> = (0..n)
        .map(|i| E32[(i * 5 + 1) % 16].rotate_left(i as u32))
        .collect();
    // Selector bytes cover 0..=15 and the 0xFF end; shift amounts all of 0..=31.
    let c: Vec<u32> = (0..n as u32)
        .map(|i| {
            u32::from_le_bytes([
                (i % 16) as u8,
                (15 - i % 16) as u8,
                (i * 3 % 14) as u8,
                if i % 9 == 0 { 0xFF } else { (i / 4) as u8 },
            ])
        })
        .collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("vop3", cpu, target);
        for kernel in isa.kernels() {
            let bufs = vec![
                vec![0; 4],
                bytes32(&a),
                bytes32(&b),
                bytes32(&c),
                vec![0; n * 4],
            ];
            let out = isa.run(&kernel, 64, &bufs).unwrap();
            let got = u32s(&out[4]);
            for i in 0..n {
                let wide = u64::from(a[i]) << 32 | u64::from(b[i]);
                let want = match kernel.as_str() {
                    "v_perm_b32" => perm_ref(a[i], b[i], c[i]),
                    "v_alignbit_b32" => (wide >> (c[i] & 31)) as u32,
                    "v_alignbyte_b32" => (wide >> (8 * (c[i] & 3))) as u32,
                    "v_bfi_b32" => (a[i] & b[i]) | (!a[i] & c[i]),
                    k => panic!("unexpected kernel {k}"),
                };
                assert_eq!(
                    got[i], want,
                    "{cpu} {kernel}[{i}]: {:#x} {:#x} {:#x}",
                    a[i], b[i], c[i]
                );
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5 * 4);
}

// --- dot products and mixed-precision FMA (gfx906+) -----------------------------------------

/// An f16 with exponent −4..=6 and any mantissa and sign: products and sums of these (and of
/// [`nice_f32`] values) with an f32 are exact in f64, so rounding the f64 result once is the
/// exactly rounded result.
fn nice_f16(r: u32) -> u16 {
    ((r & 0x8000) | (11 + (r >> 16) % 11) << 10 | (r & 0x3FF)) as u16
}

/// An f32 with exponent −4..=6 and a 10-bit mantissa (see [`nice_f16`]).
fn nice_f32(r: u32) -> u32 {
    (r & 0x8000_0000) | (123 + (r >> 16) % 11) << 23 | (r & 0x3FF) << 13
}

/// The gfx906 integer dot products (Vega 7nm ISA VOP3P opcodes 38..=43): the sum over the
/// packed `bits`-wide fields of `a * b`, plus `c`, saturated to 32 bits with `clamp`, else
/// wrapped.
fn int_dot_ref(op: &str, a: u32, b: u32, c: u32, clamp: bool) -> u32 {
    let (bits, signed) = match op {
        "v_dot2_i32_i16" => (16, true),
        "v_dot2_u32_u16" => (16, false),
        "v_dot4_i32_i8" => (8, true),
        "v_dot4_u32_u8" => (8, false),
        "v_dot8_i32_i4" => (4, true),
        _ => (4, false),
    };
    let get = |v: u32, k: u32| -> i128 {
        let x = (v as u64 >> (k * bits)) & ((1u64 << bits) - 1);
        if signed && x >> (bits - 1) == 1 {
            x as i128 - (1i128 << bits)
        } else {
            x as i128
        }
    };
    let mut sum: i128 = if signed { c as i32 as i128 } else { c as i128 };
    for k in 0..32 / bits {
        sum += get(a, k) * get(b, k);
    }
    match (clamp, signed) {
        (true, true) => sum.clamp(i32::MIN as i128, i32::MAX as i128) as i32 as u32,
        (true, false) => sum.clamp(0, u32::MAX as i128) as u32,
        _ => sum as u32,
    }
}

#[test]
fn dot_products_and_fma_mix_match_the_isa() {
    let n = ITEMS as usize;
    let mut ran = 0;
    for (cpu, target) in CPUS.into_iter().filter(|(c, _)| *c != "gfx900") {
        let isa = Isa::load("dot", cpu, target);
        for kernel in isa.kernels() {
            let (op, digits) = kernel.split_once("__").unwrap();
            let d: Vec<u32> = digits.bytes().map(|c| u32::from(c - b'0')).collect();
            let mut r = prng(kernel.len() as u64 * 0x9E37 + d.iter().sum::<u32>() as u64);
            let int = !op.contains('f');
            // Per-source word: two f16 halves or one f32, as the kernel reads it.
            let f16_src = |i: usize| match op {
                "v_dot2_f32_f16" => i < 2,
                _ if op.starts_with("v_fma_mix") => d[1] >> i & 1 == 1,
                _ => false,
            };
            let mut src = |i: usize, k: usize| -> u32 {
                let x = r();
                if int {
                    // Edge values mixed with random bits.
                    if k % 3 == 0 {
                        E32[(k + i) % 16]
                    } else {
                        x
                    }
                } else if f16_src(i) {
                    u32::from(nice_f16(x)) | u32::from(nice_f16(x.rotate_left(13))) << 16
                } else {
                    nice_f32(x)
                }
            };
            let (a, b, c): (Vec<u32>, Vec<u32>, Vec<u32>) =
                (0..n).map(|k| (src(0, k), src(1, k), src(2, k))).fold(
                    (vec![], vec![], vec![]),
                    |(mut a, mut b, mut c), (x, y, z)| {
                        a.push(x);
                        b.push(y);
                        c.push(z);
                        (a, b, c)
                    },
                );
            let old: Vec<u32> = (0..n as u32).map(|k| 0xDEAD_0000 ^ (k * 0x0101)).collect();
            let bufs = vec![
                vec![0; 4],
                bytes32(&a),
                bytes32(&b),
                bytes32(&c),
                bytes32(&old),
                vec![0; n * 4],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[5]);
            let h =
                |v: u32, hi: bool| half::f16::from_bits((v >> (16 * hi as u32)) as u16).to_f64();
            for k in 0..n {
                let want = if int {
                    int_dot_ref(op, a[k], b[k], c[k], d[0] == 1)
                } else if op == "v_dot2_f32_f16" {
                    let (nl, nh) = (d[1], d[2]);
                    let s = |x: f64, neg: bool| if neg { -x } else { x };
                    let sum = s(h(a[k], false), nl & 1 == 1) * s(h(b[k], false), nl & 2 == 2)
                        + s(h(a[k], true), nh & 1 == 1) * s(h(b[k], true), nh & 2 == 2)
                        + s(f64::from(f32::from_bits(c[k])), nl & 4 == 4);
                    let mut r = sum as f32;
                    if d[0] == 1 {
                        r = if r.is_nan() || r <= 0.0 {
                            0.0
                        } else {
                            r.min(1.0)
                        };
                    }
                    r.to_bits()
                } else {
                    let (sel, neg, abs, clamp) = (d[0], d[2], d[3], d[4] == 1);
                    let x: Vec<f64> = [a[k], b[k], c[k]]
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| {
                            let mut x = if f16_src(i) {
                                h(v, sel >> i & 1 == 1)
                            } else {
                                f64::from(f32::from_bits(v))
                            };
                            if abs >> i & 1 == 1 {
                                x = x.abs();
                            }
                            if neg >> i & 1 == 1 {
                                x = -x;
                            }
                            x
                        })
                        .collect();
                    let exact = x[0] * x[1] + x[2];
                    if op == "v_fma_mix_f32" {
                        let r = exact as f32;
                        let r = if clamp {
                            if r <= 0.0 {
                                0.0
                            } else {
                                r.min(1.0)
                            }
                        } else {
                            r
                        };
                        r.to_bits()
                    } else {
                        let mut hb = f16_round(exact);
                        if clamp {
                            hb = if hb & 0x8000 != 0 { 0 } else { hb.min(0x3C00) };
                        }
                        if op == "v_fma_mixlo_f16" {
                            old[k] & 0xFFFF_0000 | u32::from(hb)
                        } else {
                            old[k] & 0xFFFF | u32::from(hb) << 16
                        }
                    }
                };
                assert_eq!(
                    got[k], want,
                    "{cpu} {kernel}[{k}]: {:#x} {:#x} {:#x} old {:#x}",
                    a[k], b[k], c[k], old[k]
                );
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 4 * 38);
}

// --- MODE register ---------------------------------------------------------------------------

#[test]
fn mode_register_from_the_descriptor_and_s_setreg() {
    let n = 64;
    for (cpu, target) in CPUS {
        let isa = Isa::load("mode", cpu, target);
        let bufs = || {
            vec![
                vec![0; 4],
                vec![0; 4],
                vec![0; 4],
                vec![0; 4],
                vec![0; n * 4],
                vec![0; n * 4],
            ]
        };
        // The descriptor: FLOAT_DENORM_MODE_32 0, _16_64 3, DX10_CLAMP, IEEE_MODE → MODE
        // FP_DENORM [7:4] = 0b1100, DX10_CLAMP [8], IEEE [9] (Vega ISA "Mode register").
        let out = isa.run("mode_launch", 64, &bufs()).unwrap();
        assert_eq!(u32s(&out[4]), vec![0x3C0; n], "{cpu} mode_launch");
        let out = isa.run("mode_set", 64, &bufs()).unwrap();
        assert_eq!(
            u32s(&out[4]),
            vec![0xF; n],
            "{cpu} mode_set: FP_DENORM after setreg"
        );
        assert_eq!(
            u32s(&out[5]),
            vec![0x1F0; n],
            "{cpu} mode_set: MODE with IEEE cleared"
        );
        // s_setreg makes FP_ROUND 0xf (toward zero): v_rcp_f32, an approximation the ISA
        // specifies by its precision, runs in any mode; of +0 and of the flushed denormals
        // (FLOAT_DENORM_MODE_32 0) the lanes' byte offsets are as floats, it is +inf.
        let out = isa
            .run("mode_rtz", 64, &bufs())
            .unwrap_or_else(|e| panic!("{cpu} mode_rtz: {e}"));
        assert_eq!(u32s(&out[4])[..64], [0x7F80_0000; 64], "{cpu} mode_rtz");
        // One CU, every id 0: HW_ID 0.
        let out = isa.run("mode_hw_id", 64, &bufs()).unwrap();
        assert_eq!(u32s(&out[4]), vec![0; n], "{cpu} mode_hw_id");
    }
}

/// `s_getreg_b32 hwreg(HW_REG_HW_ID)`: each work-group's waves read the CU the SPI placed the
/// work-group on (round robin over the enabled CUs, engines first) and their queue's ids, in
/// the layout of the ISA documents: WAVE_ID [3:0], SIMD_ID [5:4], PIPE_ID [7:6], CU_ID
/// [11:8], SH_ID [12], SE_ID [14:13] ([15:13] on gfx908/gfx90a), TG_ID [19:16], VM_ID
/// [23:20], QUEUE_ID [26:24], STATE_ID [29:27], ME_ID [31:30].
#[test]
fn hw_id_names_the_enabled_cu_of_each_work_group() {
    // Enabled: SE0 SH0 CU2, SE5 SH0 CU0, SE1 SH1 CU3 (bit 16 + 3).
    let mut cu_enable = [0u32; 8];
    cu_enable[0] = 1 << 2;
    cu_enable[5] = 1;
    cu_enable[1] = 1 << 19;
    let launch = WaveLaunch {
        cu_enable,
        me_id: 1,
        pipe_id: 2,
        queue_id: 3,
        vm_id: 8,
    };
    // The SPI's order: CU 0 of every array of every engine first, then CU 1, ...
    let order: [(u32, u32, u32); 3] = [(5, 0, 0), (0, 0, 2), (1, 1, 3)];
    let groups = 7usize;
    for (cpu, target) in CPUS {
        let isa = Isa::load("mode", cpu, target);
        let n = groups * 64;
        let bufs = vec![
            vec![0; 4],
            vec![0; 4],
            vec![0; 4],
            vec![0; 4],
            vec![0; n * 4],
        ];
        let out = isa
            .run_launch("mode_hw_id", n as u32, &bufs, &[], launch)
            .unwrap();
        let got = u32s(&out[4]);
        let se_bits = if matches!(target, Gfx9Target::Gfx908 | Gfx9Target::Gfx90a) {
            7
        } else {
            3
        };
        for g in 0..groups {
            let (se, sh, cu) = order[g % 3];
            // Wave 0 of its group: SIMD 0, slot 0; TG_ID and STATE_ID 0.
            let want =
                2 << 6 | cu << 8 | sh << 12 | (se & se_bits) << 13 | 8 << 20 | 3 << 24 | 1 << 30;
            assert!(
                got[g * 64..(g + 1) * 64].iter().all(|&v| v == want),
                "{cpu} group {g}: {:#x}, want {want:#x}",
                got[g * 64]
            );
        }
    }
}

// --- f16 VOP1/VOP2/VOP3 ---------------------------------------------------------------------

/// `x` with `abs` then `neg` applied to its f16 sign.
fn f16_mods(x: u16, neg: bool, abs: bool) -> u16 {
    let x = if abs { x & 0x7FFF } else { x };
    if neg {
        x ^ 0x8000
    } else {
        x
    }
}

/// An f16 (or f32) result of a float op clamped to [0, 1] (NaN and −0 → +0).
fn clamp16(x: u16) -> u16 {
    if f16_nan(x) || x & 0x8000 != 0 {
        0
    } else {
        x.min(0x3C00)
    }
}

/// One f16 VALU op (Vega ISA VOP1/VOP2/VOP3 opcode tables) on already-modified sources;
/// the 32-bit result (16-bit results zero-extended).
fn f16_ref(op: &str, a: u32, b: u32, c: u32) -> u32 {
    let (x, y, z) = (a as u16, b as u16, c as u16);
    let quiet = |x: u16| x | 0x200;
    let round = |f: fn(f64) -> f64| {
        if f16_nan(x) {
            quiet(x)
        } else {
            half::f16::from_f64(f(half::f16::from_bits(x).to_f64())).to_bits()
        }
    };
    let to_int = |lo: f64, hi: f64| {
        let v = half::f16::from_bits(x).to_f64();
        if v.is_nan() {
            0
        } else {
            v.trunc().clamp(lo, hi) as i32 as u16
        }
    };
    u32::from(match op {
        "v_add_f16" => f16_op(&[x, y], |v| v[0] + v[1]),
        "v_sub_f16" => f16_op(&[x, y], |v| v[0] - v[1]),
        "v_subrev_f16" => f16_op(&[y, x], |v| v[0] - v[1]),
        "v_mul_f16" => f16_op(&[x, y], |v| v[0] * v[1]),
        "v_fma_f16" => f16_op(&[x, y, z], |v| v[0].mul_add(v[1], v[2])),
        "v_max_f16" => f16_min_max_ref(x, y, true),
        "v_min_f16" => f16_min_max_ref(x, y, false),
        "v_cvt_f16_f32" => {
            let f = f32::from_bits(a);
            if f.is_nan() {
                ((a >> 16) as u16 & 0x8000) | 0x7E00 | ((a >> 13) as u16 & 0x3FF)
            } else {
                half::f16::from_f32(f).to_bits()
            }
        }
        "v_cvt_f32_f16" => {
            return if f16_nan(x) {
                u32::from(x >> 15) << 31 | 0x7FC0_0000 | u32::from(x & 0x3FF) << 13
            } else {
                half::f16::from_bits(x).to_f32().to_bits()
            };
        }
        "v_cvt_f16_u16" => half::f16::from_f64(f64::from(x)).to_bits(),
        "v_cvt_f16_i16" => half::f16::from_f64(f64::from(x as i16)).to_bits(),
        "v_cvt_u16_f16" => to_int(0.0, 65535.0),
        "v_cvt_i16_f16" => to_int(-32768.0, 32767.0),
        "v_trunc_f16" => round(f64::trunc),
        "v_ceil_f16" => round(f64::ceil),
        "v_floor_f16" => round(f64::floor),
        "v_rndne_f16" => round(f64::round_ties_even),
        _ => panic!("no reference for {op}"),
    })
}

#[test]
fn f16_valu_matches_the_isa() {
    let n = ITEMS as usize;
    let pair = |k: usize| u32::from(F16[k % 16]) | u32::from(F16[(k / 16 + 3) % 16]) << 16;
    // Ties for the rounding ops: 0.5, 2.5, −2.5, 1.5, and 1024.5's neighbour 0x6401.
    let ties = [0x3800u32, 0x4100, 0xC100, 0x3E00, 0x6401];
    let a: Vec<u32> = (0..n)
        .map(|k| {
            if k % 5 == 0 {
                pair(k) & 0xFFFF_0000 | ties[k / 5 % 5]
            } else {
                pair(k)
            }
        })
        .collect();
    let b: Vec<u32> = (0..n).map(|k| pair(k / 16 + 16 * (k % 16))).collect();
    let c: Vec<u32> = (0..n).map(|k| pair(k * 7 + 5)).collect();
    let old: Vec<u32> = (0..n as u32).map(|k| 0xABCD_0000 | k).collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("f16", cpu, target);
        for kernel in isa.kernels() {
            let (form, rest) = kernel.split_once('_').unwrap();
            let (op, var) = rest.split_once("__").unwrap_or((rest, "0000"));
            let d: Vec<u32> = var.bytes().map(|x| u32::from(x - b'0')).collect();
            let (neg, abs, clamp, omod) = (d[0], d[1], d[2] == 1, d[3]);
            // f32-source conversion: f32 edge values instead.
            let a_in: Vec<u32> = if op == "v_cvt_f16_f32" {
                (0..n).map(|k| F32[k % 16] ^ (k as u32 / 16)).collect()
            } else {
                a.clone()
            };
            let bufs = vec![
                vec![0; 4],
                bytes32(&a_in),
                bytes32(&b),
                bytes32(&c),
                bytes32(&old),
                vec![0; n * 4],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[5]);
            for k in 0..n {
                let want = match form {
                    "sdwa" => {
                        let r = f16_ref(op, a_in[k] >> 16, b[k] & 0xFFFF, 0);
                        (r & 0xFFFF) << 16 | old[k] & 0xFFFF
                    }
                    "k" => f16_ref(op, 0x4000, b[k], 0),
                    _ => {
                        let m = |v: u32, i: u32| {
                            if op == "v_cvt_f16_f32" {
                                let v = if abs >> i & 1 == 1 {
                                    v & 0x7FFF_FFFF
                                } else {
                                    v
                                };
                                if neg >> i & 1 == 1 {
                                    v ^ 0x8000_0000
                                } else {
                                    v
                                }
                            } else {
                                u32::from(f16_mods(v as u16, neg >> i & 1 == 1, abs >> i & 1 == 1))
                            }
                        };
                        let r = f16_ref(op, m(a_in[k], 0), m(b[k], 1), m(c[k], 2));
                        if op == "v_cvt_f32_f16" {
                            let f = f32::from_bits(r);
                            if clamp {
                                // The interpreter's f32 clamp (its VOP3 f32 path): NaN → +0,
                                // else [0, 1] by comparison (−0 stays −0).
                                (if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }).to_bits()
                            } else {
                                r
                            }
                        } else if op.starts_with("v_cvt_") && !op.starts_with("v_cvt_f16") {
                            r
                        } else {
                            let mut h = r as u16;
                            if omod != 0 {
                                let k = [1.0, 2.0, 4.0, 0.5][omod as usize];
                                h = f16_op(&[h], |v| v[0] * k);
                            }
                            if clamp {
                                h = clamp16(h);
                            }
                            u32::from(h)
                        }
                    }
                };
                // gfx9's VOP3-only v_fma_f16/v_mad_f16/v_div_fixup_f16 keep the destination's
                // high half (the ISA guides' op_sel[3] note); the other f16 results zero it.
                let want = if form == "e64"
                    && matches!(op, "v_fma_f16" | "v_mad_f16" | "v_div_fixup_f16")
                {
                    old[k] & 0xFFFF_0000 | want & 0xFFFF
                } else {
                    want
                };
                assert_eq!(
                    got[k], want,
                    "{cpu} {kernel}[{k}]: {:#x} {:#x} {:#x}",
                    a_in[k], b[k], c[k]
                );
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5 * (6 * 8 + 10 + 8 + 3));
}

// --- IEEE division and square root as clang compiles them -----------------------------------

/// f32 operands of the division kernels: the edge values, powers of two at the ends of the
/// range (where `v_div_scale` must scale: a subnormal or huge denominator, a quotient near
/// the largest value or below the smallest normal, a tiny numerator), and ordinary values.
const DIV_F32: [u32; 32] = [
    0x0000_0000,
    0x8000_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x0000_0001,
    0x8000_0003,
    0x007F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x3FC0_0000,
    0x4B80_0001,
    0x4040_0000, // 3
    0x4120_0000, // 10
    0x7F00_0000, // 2^127
    0x7E80_0000, // 2^126
    0x7EC0_0000, // 1.5 × 2^126
    0x0C00_0000, // 2^-103
    0x0B80_0000, // 2^-104
    0x1A80_0000, // 2^-74
    0x3400_0001, // ~2^-23
    0x6500_0000, // 2^75
    0x5F80_0000, // 2^64
    0x2000_0000, // 2^-63
    0x0040_0001, // subnormal
    0xC2F6_E979, // -123.456
    0x3DCC_CCCD, // 0.1
    0x0000_00FF, // subnormal
];

/// f64 operands of the division kernels (as [`DIV_F32`], at f64's range).
const DIV_F64: [u64; 30] = [
    0,
    0x8000_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    1,
    0x8000_0000_0000_0003,
    0x000F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0xFFEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0x3FF8_0000_0000_0000,
    0x4340_0000_0000_0001,
    0x4008_0000_0000_0000, // 3
    0x4024_0000_0000_0000, // 10
    0x7FE0_0000_0000_0000, // 2^1023
    0x7FD0_0000_0000_0000, // 2^1022
    0x7FD8_0000_0000_0000, // 1.5 × 2^1022
    0x0350_0000_0000_0000, // 2^-970
    0x0340_0000_0000_0000, // 2^-971
    0x2FF0_0000_0000_0000, // 2^-256
    0x3CB0_0000_0000_0001, // ~2^-52
    0x5000_0000_0000_0000, // 2^257
    0x43F0_0000_0000_0000, // 2^64
    0x0008_0000_0000_0001, // subnormal
    0xC05E_DD2F_1A9F_BE77, // -123.456
    0x3FB9_9999_9999_999A, // 0.1
];

/// Division operand pairs: every pair of `edges`, then `random` pairs of random bit patterns
/// (mostly huge or tiny ratios) and of values with nearby exponents.
fn div_pairs<T: Copy>(
    edges: &[T],
    random: usize,
    mut rnd: impl FnMut(bool) -> T,
) -> (Vec<T>, Vec<T>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in edges {
        for &y in edges {
            a.push(x);
            b.push(y);
        }
    }
    for i in 0..random {
        a.push(rnd(i % 2 == 0));
        b.push(rnd(i % 2 == 0));
    }
    (a, b)
}

/// The IEEE quotient's expected bits from the host's: a NaN operand gives the numerator's NaN
/// (else the denominator's) quieted; 0/0 and ∞/∞ give the ISA's default NaN (the host's is
/// negative).
fn div_expect(
    a_nan: bool,
    b_nan: bool,
    a_q: u64,
    b_q: u64,
    host: u64,
    host_nan: bool,
    dflt: u64,
) -> u64 {
    if a_nan {
        a_q
    } else if b_nan {
        b_q
    } else if host_nan {
        dflt
    } else {
        host
    }
}

/// The `fdiv.cl` kernels compiled by clang-19 (`-cl-fp32-correctly-rounded-divide-sqrt`): f32,
/// f64 and f16 `a / b` (`v_div_scale`, `v_rcp`, FMAs, `v_div_fmas`, `v_div_fixup`; f16 through
/// f32 and `v_div_fixup_f16`) and `sqrt` over edge values and random bit patterns give the
/// host's IEEE results bit for bit, on every target.
#[test]
fn compiled_division_and_sqrt_match_the_host() {
    let mut r = prng(0x5EED);
    let (a32, b32) = div_pairs(&DIV_F32, 8192, |wide| {
        let x = r();
        if wide {
            x
        } else {
            // Exponent within ±8 of 127: ordinary quotients with every mantissa.
            (x & 0x807F_FFFF) | (119 + (x >> 24) % 17) << 23
        }
    });
    let (a64, b64) = div_pairs(&DIV_F64, 8192, |wide| {
        let x = u64::from(r()) << 32 | u64::from(r());
        if wide {
            x
        } else {
            (x & 0x800F_FFFF_FFFF_FFFF) | (1015 + (x >> 53) % 17) << 52
        }
    });
    let (a16, b16): (Vec<u16>, Vec<u16>) = div_pairs(&F16, 4096, |_| r() as u16);
    let n32 = a32.len();
    let n64 = a64.len();
    let n16 = a16.len();
    let bytes16 = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    for (cpu, target) in CPUS {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../testdata/codeobjects/isa/fdiv-{cpu}-v5.hsaco"));
        let isa = Isa {
            data: std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")),
            target,
        };
        let run = |k: &str, a: Vec<u8>, b: Vec<u8>, n: usize, size: usize| -> Vec<u8> {
            let items = n.div_ceil(64) as u32 * 64;
            let bufs = vec![a, b, vec![0xEE; items as usize * size]];
            let out = isa
                .run_with(k, items, &bufs, &[(24, n as u32)])
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            out[2][..n * size].to_vec()
        };
        let got = u32s(&run("div_f32", bytes32(&a32), bytes32(&b32), n32, 4));
        for i in 0..n32 {
            let (x, y) = (f32::from_bits(a32[i]), f32::from_bits(b32[i]));
            let q = x / y;
            let want = div_expect(
                x.is_nan(),
                y.is_nan(),
                u64::from(a32[i] | 0x40_0000),
                u64::from(b32[i] | 0x40_0000),
                u64::from(q.to_bits()),
                q.is_nan(),
                0x7FC0_0000,
            );
            assert_eq!(
                u64::from(got[i]),
                want,
                "{cpu} div_f32 {:#010x} / {:#010x} ({x:e} / {y:e})",
                a32[i],
                b32[i]
            );
        }
        let got = u64s(&run("div_f64", bytes64(&a64), bytes64(&b64), n64, 8));
        for i in 0..n64 {
            let (x, y) = (f64::from_bits(a64[i]), f64::from_bits(b64[i]));
            let q = x / y;
            let quiet = 1 << 51;
            let want = div_expect(
                x.is_nan(),
                y.is_nan(),
                a64[i] | quiet,
                b64[i] | quiet,
                q.to_bits(),
                q.is_nan(),
                0x7FF8_0000_0000_0000,
            );
            assert_eq!(
                got[i], want,
                "{cpu} div_f64 {:#018x} / {:#018x} ({x:e} / {y:e})",
                a64[i], b64[i]
            );
        }
        let got = run("div_f16", bytes16(&a16), bytes16(&b16), n16, 2);
        for i in 0..n16 {
            let g = u16::from_le_bytes([got[2 * i], got[2 * i + 1]]);
            let (x, y) = (a16[i], b16[i]);
            let (xf, yf) = (
                half::f16::from_bits(x).to_f64(),
                half::f16::from_bits(y).to_f64(),
            );
            let q = xf / yf;
            let want = div_expect(
                f16_nan(x),
                f16_nan(y),
                u64::from(x | 0x200),
                u64::from(y | 0x200),
                u64::from(f16_round(q)),
                q.is_nan(),
                0x7E00,
            );
            assert_eq!(
                u64::from(g),
                want,
                "{cpu} div_f16 {x:#06x} / {y:#06x} ({xf:e} / {yf:e})"
            );
        }
        // sqrt: the host's square root; a NaN for negative operands and NaN inputs.
        let got = u32s(&run("sqrt_f32", bytes32(&a32), bytes32(&b32), n32, 4));
        for i in 0..n32 {
            let s = f32::from_bits(a32[i]).sqrt();
            if s.is_nan() {
                assert!(
                    f32::from_bits(got[i]).is_nan(),
                    "{cpu} sqrt_f32 {:#x}",
                    a32[i]
                );
            } else {
                assert_eq!(got[i], s.to_bits(), "{cpu} sqrt_f32 {:#010x}", a32[i]);
            }
        }
        let got = u64s(&run("sqrt_f64", bytes64(&a64), bytes64(&b64), n64, 8));
        for i in 0..n64 {
            let s = f64::from_bits(a64[i]).sqrt();
            if s.is_nan() {
                assert!(
                    f64::from_bits(got[i]).is_nan(),
                    "{cpu} sqrt_f64 {:#x}",
                    a64[i]
                );
            } else {
                assert_eq!(got[i], s.to_bits(), "{cpu} sqrt_f64 {:#018x}", a64[i]);
            }
        }
    }
}

// --- s_sendmsg ------------------------------------------------------------------------------

/// `s_sendmsg sendmsg(MSG_INTERRUPT)` raises the message interrupt with M0[22:0] (what
/// amdkfd's SQ interrupt handler passes to `kfd_signal_event_interrupt` with 23 valid bits),
/// once per wave, and the wave goes on; `s_sendmsghalt` halts the wave after its message (an
/// exception here); a message no compute wave sends is an illegal instruction naming it.
#[test]
fn sendmsg_raises_the_message_interrupt() {
    for (cpu, target) in CPUS {
        let isa = Isa::load("sendmsg", cpu, target);
        let p1: Vec<u32> = (0..128)
            .map(|i| 0x00AB_CD00 | (0x0100_0000 * (i / 64)) | i)
            .collect();
        let bufs = || {
            vec![
                vec![0; 512],
                bytes32(&p1),
                vec![0; 512],
                vec![0; 512],
                vec![0; 512],
            ]
        };
        INTERRUPTS.with(|v| v.borrow_mut().clear());
        let out = isa.run("interrupt", 128, &bufs()).unwrap();
        // M0 = 0x8000_0000 | the first lane's word: bits 31..23 are not the data.
        let got = INTERRUPTS.with(|v| v.borrow().clone());
        assert_eq!(got, [0x2B_CD00, 0x2B_CD40], "{cpu}");
        assert_eq!(u32s(&out[4]), p1, "{cpu}: the waves went on");
        INTERRUPTS.with(|v| v.borrow_mut().clear());
        let e = isa.run("halt", 64, &bufs()).unwrap_err();
        assert_eq!(e.status(), Status::Exception, "{cpu}: {e}");
        assert!(e.to_string().contains("s_sendmsghalt"), "{cpu}: {e}");
        assert_eq!(
            INTERRUPTS.with(|v| v.borrow().clone()),
            [0x2B_CD00],
            "{cpu}"
        );
        let e = isa.run("gs_alloc", 64, &bufs()).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}: {e}");
        assert!(e.to_string().contains("MSG_GS_ALLOC_REQ"), "{cpu}: {e}");
    }
}

// --- divide: division steps, reciprocal/square root, ldexp/frexp, f64 rounding ----------------

mod libm {
    //! glibc's `ldexp`/`frexp` (std links libm): IEEE host references independent of the
    //! interpreter's integer rounding.
    extern "C" {
        fn ldexpf(x: f32, n: i32) -> f32;
        fn ldexp(x: f64, n: i32) -> f64;
        fn frexpf(x: f32, e: *mut i32) -> f32;
        fn frexp(x: f64, e: *mut i32) -> f64;
    }
    pub fn ldexp32(x: f32, n: i32) -> f32 {
        // SAFETY: a pure libm function of two values.
        unsafe { ldexpf(x, n) }
    }
    pub fn ldexp64(x: f64, n: i32) -> f64 {
        // SAFETY: as ldexp32.
        unsafe { ldexp(x, n) }
    }
    pub fn frexp32(x: f32) -> (f32, i32) {
        let mut e = 0;
        // SAFETY: `e` is a valid i32 frexpf writes once.
        let m = unsafe { frexpf(x, &mut e) };
        (m, e)
    }
    pub fn frexp64(x: f64) -> (f64, i32) {
        let mut e = 0;
        // SAFETY: as frexp32.
        let m = unsafe { frexp(x, &mut e) };
        (m, e)
    }
}

/// The ISA's default NaN for an invalid operation on non-NaN inputs (the host's is negative).
fn canon32(x: f32, r: f32) -> u32 {
    if r.is_nan() && !x.is_nan() {
        0x7FC0_0000
    } else {
        r.to_bits()
    }
}
fn canon64(x: f64, r: f64) -> u64 {
    if r.is_nan() && !x.is_nan() {
        0x7FF8_0000_0000_0000
    } else {
        r.to_bits()
    }
}

/// `V_DIV_SCALE_F32/F64` from the Vega ISA's case list (see the interpreter's `fdiv.rs` for
/// the reading of its thresholds), in host floating point: `(s0 scaled, VCC)`. `e` is the
/// exponent field of a value, `k` the scale (64 or 128), `dl` the exponent-difference limit,
/// `tiny` the numerator exponent limit, `min` the smallest normal.
#[allow(clippy::too_many_arguments)]
fn div_scale_ref(
    s0: f64,
    s1: f64,
    s2: f64,
    e: impl Fn(f64) -> i32,
    k: i32,
    dl: i32,
    tiny: i32,
    min: f64,
    sub1: bool,
) -> (f64, bool) {
    let up = s0 * 2f64.powi(k);
    let down = s0 * 2f64.powi(-k);
    let rcp_sub = s1.abs() > 1.0 / min;
    let q_sub = (s2 / s1).abs() < min;
    if e(s2) - e(s1) >= dl {
        (if s0 == s1 { up } else { s0 }, true)
    } else if sub1 {
        (up, false)
    } else if rcp_sub && q_sub {
        (if s0 == s1 { down } else { s0 }, true)
    } else if rcp_sub {
        (down, false)
    } else if q_sub {
        (if s0 == s2 { up } else { s0 }, true)
    } else if e(s2) <= tiny {
        (up, false)
    } else {
        (s0, false)
    }
}

/// `V_DIV_FIXUP_*` from the Vega ISA's case list, on values as f64 (`q` the quotient, `d` the
/// denominator, `n` the numerator): `None` = the default NaN, else the result value; a NaN
/// operand's result is that operand quieted (checked by the caller on bits).
fn div_fixup_ref(q: f64, d: f64, n: f64) -> Option<f64> {
    let neg = d.is_sign_negative() != n.is_sign_negative();
    let sign = |x: f64| if neg { -x.abs() } else { x.abs() };
    if d == 0.0 && n == 0.0 || d.is_infinite() && n.is_infinite() {
        None
    } else if d == 0.0 || n.is_infinite() {
        Some(sign(f64::INFINITY))
    } else if d.is_infinite() || n == 0.0 {
        Some(sign(0.0))
    } else if q.is_nan() {
        Some(sign(f64::INFINITY))
    } else {
        Some(sign(q))
    }
}

/// 2/π in fdlibm's 24-bit chunks (`ipio2` of `__kernel_rem_pio2`, the first 1224 fraction
/// bits): the reference of `v_trig_preop_f64`, independent of the interpreter's table.
const IPIO2: [u32; 51] = [
    0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163,
    0xABDEBB, 0xC561B7, 0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129,
    0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C, 0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C,
    0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11, 0x8B5A0A, 0x6D1F6D, 0x367ECF,
    0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7, 0x8A5292,
    0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0,
];

/// `V_TRIG_PREOP_F64` from the Vega ISA's pseudocode: 53 bits of the 1201-bit fraction of
/// 2/π from bit `1200 − shift` down, `shift = 53·S1[4:0]` (+ `exponent − 1077` above 1077),
/// times `2^(−53 − shift)` (`2^128` more from exponent 1968), rounded toward zero.
fn trig_preop_ref(x: u64, s1: u32) -> u64 {
    let e = (x >> 52 & 0x7FF) as i32;
    let mut shift = (s1 & 31) as i32 * 53;
    if e > 1077 {
        shift += e - 1077;
    }
    let bit = |p: i32| -> u64 {
        // p = 0 is the first fraction bit; the fraction has 1201 bits.
        if p > 1200 {
            return 0;
        }
        u64::from(IPIO2[(p / 24) as usize] >> (23 - p % 24) & 1)
    };
    let seg = (0..53).fold(0u64, |acc, j| acc << 1 | bit(shift + j));
    let mut scale = -53 - shift;
    if e >= 1968 {
        scale += 128;
    }
    if seg == 0 {
        return 0;
    }
    let top = 63 - seg.leading_zeros() as i32 + scale;
    if top >= -1022 {
        // Normal: exact in two steps.
        ((seg as f64) * 2f64.powi(scale + 600) * 2f64.powi(-600)).to_bits()
    } else {
        // Subnormal: truncated to multiples of 2^-1074.
        let t = scale + 1074;
        if t >= 0 {
            seg << t
        } else if t <= -64 {
            0
        } else {
            seg >> -t
        }
    }
}

/// Encodes a column of operands as a kernel buffer.
type Encode<T> = fn(&[T]) -> Vec<u8>;

/// A value of `mant_bits` random mantissa bits, exponent in `exps`, random sign: sums and
/// products of a few of these are exact in f64.
fn nice(r: u32, mant_bits: u32, exps: std::ops::RangeInclusive<i32>) -> f64 {
    let span = (exps.end() - exps.start() + 1) as u32;
    let e = exps.start() + ((r >> 20) % span) as i32;
    let m = 1.0 + f64::from(r & ((1 << mant_bits) - 1)) / f64::from(1u32 << mant_bits);
    let v = m * 2f64.powi(e);
    if r >> 31 == 1 {
        -v
    } else {
        v
    }
}

/// Every instruction of the `divide` family against a host reference: `v_rcp`, `v_rsq`,
/// `v_sqrt` (correctly rounded: within the ISA's 1 ULP), `v_exp_f32`/`v_log_f32`, `v_frexp_*`
/// and `v_ldexp_*` (glibc's), f64 `trunc`/`ceil`/`floor`/`rndne`/`fract`, `v_fma_f64`,
/// `v_fmac_f64`, `v_div_scale` (value and VCC bit), `v_div_fmas` (VCC-scaled, rounded once,
/// into the subnormals too), `v_div_fixup` (f16/f32/f64) and `v_cmp(x)_class_f64`.
#[test]
fn division_steps_and_helpers_match_the_isa() {
    let mut r = prng(0xD1_5EED);
    let mut v32: Vec<u32> = DIV_F32.to_vec();
    v32.extend((0..96).map(|_| r()));
    let mut v64: Vec<u64> = DIV_F64.to_vec();
    v64.extend((0..98).map(|_| u64::from(r()) << 32 | u64::from(r())));
    let ints: [i32; 16] = [
        0,
        1,
        -1,
        10,
        -10,
        64,
        -64,
        126,
        -126,
        149,
        -150,
        300,
        -1100,
        2000,
        i32::MAX,
        i32::MIN,
    ];
    for (cpu, target) in CPUS {
        let isa = Isa::load("divide", cpu, target);
        let run = |k: &str, n: usize, mut bufs: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
            // Every kernel reads p5 (the VCC flags of div_fmas).
            while bufs.len() < 6 {
                bufs.push(vec![0u8; n * 8]);
            }
            // The f64 kernels read qwords from every input.
            for b in &mut bufs {
                b.resize(b.len().max(n * 8), 0);
            }
            isa.run(k, n as u32, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"))
        };
        let pad = |n: usize| vec![0u8; n * 8];
        // Unary f32.
        let n = v32.len();
        for op in [
            "v_rcp_f32",
            "v_rcp_iflag_f32",
            "v_rsq_f32",
            "v_sqrt_f32",
            "v_exp_f32",
            "v_log_f32",
            "v_frexp_mant_f32",
            "v_frexp_exp_i32_f32",
        ] {
            let out = run(op, n, vec![pad(n), bytes32(&v32), pad(n), pad(n), pad(n)]);
            let got = u32s(&out[4]);
            for (i, &b) in v32.iter().enumerate() {
                let x = f32::from_bits(b);
                let want = match op {
                    "v_rcp_f32" | "v_rcp_iflag_f32" => (1.0 / x).to_bits(),
                    "v_rsq_f32" => canon32(x, (1.0 / f64::from(x).sqrt()) as f32),
                    "v_sqrt_f32" => canon32(x, x.sqrt()),
                    "v_exp_f32" => (f64::from(x).exp2() as f32).to_bits(),
                    "v_log_f32" => canon32(x, f64::from(x).log2() as f32),
                    "v_frexp_mant_f32" if !x.is_finite() => b,
                    "v_frexp_mant_f32" => libm::frexp32(x).0.to_bits(),
                    "v_frexp_exp_i32_f32" if !x.is_finite() => 0,
                    _ => libm::frexp32(x).1 as u32,
                };
                assert_eq!(got[i], want, "{cpu} {op} {b:#010x} ({x:e})");
            }
        }
        // Unary f64.
        let n = v64.len();
        for op in [
            "v_rcp_f64",
            "v_rsq_f64",
            "v_sqrt_f64",
            "v_frexp_mant_f64",
            "v_fract_f64",
            "v_trunc_f64",
            "v_ceil_f64",
            "v_rndne_f64",
            "v_floor_f64",
            "v_frexp_exp_i32_f64",
        ] {
            let out = run(op, n, vec![pad(n), bytes64(&v64), pad(n), pad(n), pad(n)]);
            for (i, &b) in v64.iter().enumerate() {
                let x = f64::from_bits(b);
                let (got, want) = if op == "v_frexp_exp_i32_f64" {
                    let e = if x.is_finite() { libm::frexp64(x).1 } else { 0 };
                    (u64::from(u32s(&out[4])[i]), u64::from(e as u32))
                } else {
                    let want = match op {
                        "v_rcp_f64" => (1.0 / x).to_bits(),
                        "v_rsq_f64" => canon64(x, 1.0 / x.sqrt()),
                        "v_sqrt_f64" => canon64(x, x.sqrt()),
                        "v_frexp_mant_f64" if !x.is_finite() => b,
                        "v_frexp_mant_f64" => libm::frexp64(x).0.to_bits(),
                        "v_fract_f64" => {
                            // x − floor(x), below 1 (∞ − ∞ is the default NaN).
                            let f = x - x.floor();
                            canon64(
                                x,
                                if f >= 1.0 {
                                    f64::from_bits(0x3FEF_FFFF_FFFF_FFFF)
                                } else {
                                    f
                                },
                            )
                        }
                        "v_trunc_f64" => x.trunc().to_bits(),
                        "v_ceil_f64" => x.ceil().to_bits(),
                        "v_rndne_f64" => x.round_ties_even().to_bits(),
                        _ => x.floor().to_bits(),
                    };
                    (u64s(&out[4])[i], want)
                };
                assert_eq!(got, want, "{cpu} {op} {b:#018x} ({x:e})");
            }
        }
        // ldexp: every edge value with every exponent.
        let xs32: Vec<u32> = DIV_F32.iter().flat_map(|&x| [x; 16]).collect();
        let xs64: Vec<u64> = DIV_F64.iter().flat_map(|&x| [x; 16]).take(448).collect();
        let ns: Vec<u32> = (0..512).map(|i| ints[i % 16] as u32).collect();
        let out = run(
            "v_ldexp_f32",
            512,
            vec![pad(512), bytes32(&xs32), bytes32(&ns), pad(512), pad(512)],
        );
        for (i, (&x, &k)) in xs32.iter().zip(&ns).enumerate() {
            let want = libm::ldexp32(f32::from_bits(x), k as i32).to_bits();
            assert_eq!(
                u32s(&out[4])[i],
                want,
                "{cpu} v_ldexp_f32 {x:#x} {}",
                k as i32
            );
        }
        let out = run(
            "v_ldexp_f64",
            448,
            vec![
                pad(448),
                bytes64(&xs64),
                bytes32(&ns[..448]),
                pad(448),
                pad(448),
            ],
        );
        for (i, (&x, &k)) in xs64.iter().zip(&ns).enumerate() {
            let want = libm::ldexp64(f64::from_bits(x), k as i32).to_bits();
            assert_eq!(
                u64s(&out[4])[i],
                want,
                "{cpu} v_ldexp_f64 {x:#x} {}",
                k as i32
            );
        }
        // trig_preop: every segment for inputs below and above the exponent thresholds.
        let xs: [u64; 12] = [
            0x3FF0_0000_0000_0000,
            0x4630_0000_0000_0000, // 2^100
            0x5F30_0000_0000_0000, // 2^500
            0x4350_0000_0000_0000, // 2^54 (exponent 1077)
            0x4360_0000_0000_0000, // 2^55
            0x7830_0000_0000_0000, // 2^900
            0x7B00_0000_0000_0000, // exponent 1968
            0x7FEF_FFFF_FFFF_FFFF,
            0,
            1,
            0x7FF0_0000_0000_0000,
            0xC000_0000_0000_0000,
        ];
        let tx: Vec<u64> = (0..384).map(|i| xs[i / 32 % 12]).collect();
        let ts: Vec<u32> = (0..384)
            .map(|i| (i % 32) as u32 | (i as u32 / 32) << 8)
            .collect();
        let out = run(
            "v_trig_preop_f64",
            384,
            vec![pad(384), bytes64(&tx), bytes32(&ts)],
        );
        for i in 0..384 {
            let want = trig_preop_ref(tx[i], ts[i]);
            assert_eq!(
                u64s(&out[4])[i],
                want,
                "{cpu} v_trig_preop_f64 {:#x} {:#x}",
                tx[i],
                ts[i]
            );
        }
        // fma / fmac f64 over random finite triples.
        let t: Vec<[u64; 3]> = (0..256)
            .map(|_| [0; 3].map(|_| nice(r(), 20, -60..=60).to_bits()))
            .collect();
        let col = |k: usize| -> Vec<u64> { t.iter().map(|x| x[k]).collect() };
        for op in ["v_fma_f64", "v_fmac_f64"] {
            if op == "v_fmac_f64" && !matches!(cpu, "gfx90a" | "gfx942") {
                continue;
            }
            let out = run(
                op,
                256,
                vec![
                    pad(256),
                    bytes64(&col(0)),
                    bytes64(&col(1)),
                    bytes64(&col(2)),
                    pad(256),
                ],
            );
            for (i, x) in t.iter().enumerate() {
                let [a, b, c] = x.map(f64::from_bits);
                assert_eq!(
                    u64s(&out[4])[i],
                    a.mul_add(b, c).to_bits(),
                    "{cpu} {op} {x:x?}"
                );
            }
        }
        // div_scale: (s0, s1, s2) = (numerator or denominator, denominator, numerator).
        for (f64_op, edges) in [(false, DIV_F32.len()), (true, DIV_F64.len())] {
            let mut tri: Vec<[u64; 3]> = Vec::new();
            for i in 0..edges {
                for j in 0..edges {
                    let (nu, de) = if f64_op {
                        (DIV_F64[i], DIV_F64[j])
                    } else {
                        (u64::from(DIV_F32[i]), u64::from(DIV_F32[j]))
                    };
                    tri.push([de, de, nu]);
                    tri.push([nu, de, nu]);
                }
            }
            tri.truncate(tri.len() / 64 * 64);
            let n = tri.len();
            let col = |k: usize| -> Vec<u64> { tri.iter().map(|x| x[k]).collect() };
            let (op, enc): (&str, Encode<u64>) = if f64_op {
                ("v_div_scale_f64", |v| bytes64(v))
            } else {
                ("v_div_scale_f32", |v| {
                    bytes32(&v.iter().map(|&x| x as u32).collect::<Vec<_>>())
                })
            };
            let out = run(
                op,
                n,
                vec![
                    pad(n),
                    enc(&col(0)),
                    enc(&col(1)),
                    enc(&col(2)),
                    pad(n),
                    pad(n),
                ],
            );
            let masks = u64s(&out[5]);
            for (i, x) in tri.iter().enumerate() {
                let (got, (want, vcc)) = if f64_op {
                    let [s0, s1, s2] = x.map(f64::from_bits);
                    let want = if s1 == 0.0 || s2 == 0.0 {
                        (f64::from_bits(0x7FF8_0000_0000_0000), false)
                    } else if !s1.is_finite() || !s2.is_finite() {
                        (s0, false)
                    } else {
                        let e = |v: f64| (v.to_bits() >> 52 & 0x7FF) as i32;
                        div_scale_ref(
                            s0,
                            s1,
                            s2,
                            e,
                            128,
                            768,
                            53,
                            f64::MIN_POSITIVE,
                            s1.is_subnormal(),
                        )
                    };
                    (u64s(&out[4])[i], (want.0.to_bits(), want.1))
                } else {
                    let [s0, s1, s2] = x.map(|b| f32::from_bits(b as u32));
                    let want = if s1 == 0.0 || s2 == 0.0 {
                        (0x7FC0_0000, false)
                    } else if !s1.is_finite() || !s2.is_finite() {
                        (s0.to_bits(), false)
                    } else {
                        let e = |v: f64| ((v as f32).to_bits() >> 23 & 0xFF) as i32;
                        let (v, c) = div_scale_ref(
                            s0.into(),
                            s1.into(),
                            s2.into(),
                            e,
                            64,
                            96,
                            23,
                            f64::from(f32::MIN_POSITIVE),
                            s1.is_subnormal(),
                        );
                        ((v as f32).to_bits(), c)
                    };
                    (u64::from(u32s(&out[4])[i]), (u64::from(want.0), want.1))
                };
                assert_eq!(got, want, "{cpu} {op} {x:#x?}");
                assert_eq!(masks[i] >> (i % 64) & 1 == 1, vcc, "{cpu} {op} VCC {x:#x?}");
            }
        }
        // div_fmas: exact products and sums (nice values), VCC from p5; tiny triples whose
        // scaled result is subnormal.
        for f64_op in [false, true] {
            let (mb, big, tiny) = if f64_op {
                (20, 128, -470..=-440)
            } else {
                (10, 64, -40..=-30)
            };
            let n = 512;
            let mut tri = Vec::new();
            for i in 0..n {
                let exps = if i % 2 == 0 { -4..=6 } else { tiny.clone() };
                let (a, b) = (nice(r(), mb, exps.clone()), nice(r(), mb, exps));
                // c within 2^±6 of the product: a·b + c is exact in f64.
                let ep = (a * b).abs().log2().floor() as i32;
                let x = [a, b, nice(r(), mb, ep - 6..=ep + 6)];
                tri.push(x);
            }
            let flags: Vec<u32> = (0..n).map(|i| u32::from(i % 3 != 0)).collect();
            let (op, enc): (&str, Encode<f64>) = if f64_op {
                ("v_div_fmas_f64", |v| {
                    bytes64(&v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                })
            } else {
                ("v_div_fmas_f32", |v| {
                    bytes32(&v.iter().map(|&x| (x as f32).to_bits()).collect::<Vec<_>>())
                })
            };
            let col = |k: usize| -> Vec<f64> { tri.iter().map(|x: &[f64; 3]| x[k]).collect() };
            let out = run(
                op,
                n,
                vec![
                    pad(n),
                    enc(&col(0)),
                    enc(&col(1)),
                    enc(&col(2)),
                    pad(n),
                    bytes32(&flags),
                ],
            );
            for (i, &[a, b, c]) in tri.iter().enumerate() {
                // Exact in f64 (few mantissa bits), then scaled exactly, then rounded once.
                let exact = a * b + c;
                let k = if flags[i] == 0 {
                    0
                } else if c.abs() >= 2.0 {
                    big
                } else {
                    -big
                };
                let v = exact * 2f64.powi(k);
                let (got, want) = if f64_op {
                    (u64s(&out[4])[i], v.to_bits())
                } else {
                    (u64::from(u32s(&out[4])[i]), u64::from((v as f32).to_bits()))
                };
                assert_eq!(got, want, "{cpu} {op} {a:e} {b:e} {c:e} vcc {}", flags[i]);
            }
        }
        // VOPC in the VOP3 encoding with abs/neg on its sources (VOP3a: the abs bits).
        {
            let n = v32.len();
            let rev: Vec<u32> = v32.iter().rev().copied().collect();
            let out = run(
                "v_cmp_lt_f32_absneg",
                n,
                vec![pad(n), bytes32(&v32), bytes32(&rev)],
            );
            let masks = u64s(&out[5]);
            for i in 0..n {
                let (p, q) = (
                    f32::from_bits(v32[i] | 0x8000_0000),
                    f32::from_bits(rev[i] & 0x7FFF_FFFF),
                );
                assert_eq!(
                    masks[i] >> (i % 64) & 1 == 1,
                    p < q,
                    "{cpu} v_cmp_lt_f32 -|{:#x}|, |{:#x}|",
                    v32[i],
                    rev[i]
                );
            }
            let n = v64.len();
            let rev: Vec<u64> = v64.iter().rev().copied().collect();
            let out = run(
                "v_cmp_nlt_f64_abs",
                n,
                vec![pad(n), bytes64(&v64), bytes64(&rev)],
            );
            let masks = u64s(&out[5]);
            for i in 0..n {
                let (p, q) = (f64::from_bits(v64[i]).abs(), f64::from_bits(rev[i]));
                assert_eq!(
                    masks[i] >> (i % 64) & 1 == 1,
                    p.partial_cmp(&q) != Some(std::cmp::Ordering::Less),
                    "{cpu} v_cmp_nlt_f64 |{:#x}|, {:#x}",
                    v64[i],
                    rev[i]
                );
            }
        }
        // v_cndmask_b32_e64 with neg/abs: sign-bit operations on the selected operand.
        let n = v32.len();
        let flags: Vec<u32> = (0..n).map(|i| (i % 3 == 0) as u32).collect();
        let w32 = |v: &[u32]| bytes32(v);
        for (op, f) in [
            (
                "v_cndmask_b32_mods",
                (|a: u32, b: u32, c: bool| if c { b & 0x7FFF_FFFF } else { a ^ 0x8000_0000 })
                    as fn(u32, u32, bool) -> u32,
            ),
            ("v_cndmask_b32_negabs", |a, b, c| {
                if c {
                    b ^ 0x8000_0000
                } else {
                    a | 0x8000_0000
                }
            }),
        ] {
            let rev: Vec<u32> = v32.iter().rev().copied().collect();
            let out = run(
                op,
                n,
                vec![pad(n), w32(&v32), w32(&rev), pad(n), pad(n), w32(&flags)],
            );
            for i in 0..n {
                assert_eq!(
                    u32s(&out[4])[i],
                    f(v32[i], rev[i], flags[i] != 0),
                    "{cpu} {op} lane {i}"
                );
            }
        }
        // div_fixup: quotients (ordinary, NaN, inf) with every edge denominator/numerator.
        let qs32 = [0x3FC0_0000u32, 0xC000_0000, 0x7FC0_0000, 0x7F80_0000];
        let mut tri32 = Vec::new();
        for &q in &qs32 {
            for &d in &DIV_F32 {
                for &nu in &DIV_F32 {
                    tri32.push([q, d, nu]);
                }
            }
        }
        let n = tri32.len();
        let c32 = |k: usize| -> Vec<u32> { tri32.iter().map(|x| x[k]).collect() };
        let out = run(
            "v_div_fixup_f32",
            n,
            vec![
                pad(n),
                bytes32(&c32(0)),
                bytes32(&c32(1)),
                bytes32(&c32(2)),
                pad(n),
            ],
        );
        for (i, &[q, d, nu]) in tri32.iter().enumerate() {
            let (qf, df, nf) = (f32::from_bits(q), f32::from_bits(d), f32::from_bits(nu));
            let want = if nf.is_nan() {
                nu | 0x40_0000
            } else if df.is_nan() {
                d | 0x40_0000
            } else {
                div_fixup_ref(qf.into(), df.into(), nf.into())
                    .map_or(0x7FC0_0000, |v| (v as f32).to_bits())
            };
            assert_eq!(
                u32s(&out[4])[i],
                want,
                "{cpu} v_div_fixup_f32 {q:#x} {d:#x} {nu:#x}"
            );
        }
        let mut tri64 = Vec::new();
        for &q in &[
            0x3FF8_0000_0000_0000u64,
            0xC000_0000_0000_0000,
            0x7FF8_0000_0000_0000,
            0x7FF0_0000_0000_0000,
        ] {
            for &d in &DIV_F64 {
                for &nu in &DIV_F64 {
                    tri64.push([q, d, nu]);
                }
            }
        }
        tri64.truncate(tri64.len() / 64 * 64);
        let n = tri64.len();
        let c64 = |k: usize| -> Vec<u64> { tri64.iter().map(|x| x[k]).collect() };
        let out = run(
            "v_div_fixup_f64",
            n,
            vec![
                pad(n),
                bytes64(&c64(0)),
                bytes64(&c64(1)),
                bytes64(&c64(2)),
                pad(n),
            ],
        );
        for (i, &[q, d, nu]) in tri64.iter().enumerate() {
            let (qf, df, nf) = (f64::from_bits(q), f64::from_bits(d), f64::from_bits(nu));
            let want = if nf.is_nan() {
                nu | 1 << 51
            } else if df.is_nan() {
                d | 1 << 51
            } else {
                div_fixup_ref(qf, df, nf).map_or(0x7FF8_0000_0000_0000, f64::to_bits)
            };
            assert_eq!(
                u64s(&out[4])[i],
                want,
                "{cpu} v_div_fixup_f64 {q:#x} {d:#x} {nu:#x}"
            );
        }
        let mut tri16 = Vec::new();
        for &q in &[0x3E00u16, 0xC000, 0x7E00, 0x7C00] {
            for &d in &F16 {
                for &nu in &F16 {
                    tri16.push([q, d, nu].map(u32::from));
                }
            }
        }
        let n = tri16.len();
        let c16 = |k: usize| -> Vec<u32> { tri16.iter().map(|x| x[k]).collect() };
        let out = run(
            "v_div_fixup_f16",
            n,
            vec![
                pad(n),
                bytes32(&c16(0)),
                bytes32(&c16(1)),
                bytes32(&c16(2)),
                pad(n),
            ],
        );
        for (i, &[q, d, nu]) in tri16.iter().enumerate() {
            let h = |x: u32| half::f16::from_bits(x as u16).to_f64();
            let want = if f16_nan(nu as u16) {
                nu | 0x200
            } else if f16_nan(d as u16) {
                d | 0x200
            } else {
                div_fixup_ref(h(q), h(d), h(nu)).map_or(0x7E00, |v| u32::from(f16_round(v)))
            };
            assert_eq!(
                u32s(&out[4])[i] & 0xFFFF,
                want,
                "{cpu} v_div_fixup_f16 {q:#x} {d:#x} {nu:#x}"
            );
        }
        // cmp(x)_class_f64: each lane's value against a class mask.
        let vals: Vec<u64> = v64.iter().copied().take(128).collect();
        let cls: Vec<u32> = (0..128)
            .map(|i| {
                if i % 2 == 0 {
                    1 << (i / 2 % 10)
                } else {
                    r() & 0x3FF
                }
            })
            .collect();
        for op in ["v_cmp_class_f64", "v_cmpx_class_f64"] {
            let out = run(
                op,
                128,
                vec![
                    pad(128),
                    bytes64(&vals),
                    bytes32(&cls),
                    pad(128),
                    pad(128),
                    pad(128),
                ],
            );
            let masks = u64s(&out[5]);
            for (i, &b) in vals.iter().enumerate() {
                let x = f64::from_bits(b);
                let class = if x.is_nan() {
                    u32::from(b & 1 << 51 != 0)
                } else {
                    let k = if x.is_infinite() {
                        0
                    } else if x.is_normal() {
                        1
                    } else if x == 0.0 {
                        3
                    } else {
                        2
                    };
                    if x.is_sign_negative() {
                        2 + k
                    } else {
                        9 - k
                    }
                };
                let want = cls[i] >> class & 1 == 1;
                assert_eq!(
                    masks[i] >> (i % 64) & 1 == 1,
                    want,
                    "{cpu} {op} {b:#x} class mask {:#x}",
                    cls[i]
                );
            }
        }
    }
}

// --- lanes: ds_swizzle_b32, ds_permute_b32, ds_bpermute_b32; 16-bit compares ---------------

/// The lane whose data lane `lane` of a `ds_swizzle_b32` receives, as the Vega ISA's
/// `DS_SWIZZLE_B32` pseudo-code describes it, in the lane's 32-lane half (`id` = lane bits
/// 4:0): offset ≥ 0xE000 (FFT), `reverse_bits(id)` over 5 bits shifted right by the count of
/// ones in bits 4:0, ORed with `id & bits 4:0`; 0xC000.. (rotate), `(id & mask) | ((id +
/// r) & ~mask)` with r bits 9:5, negated by bit 10, over 5 bits; bit 15 set otherwise (quad
/// mode), the quad's lane that the 2-bit field of the lane's place in its quad names; bit 15
/// clear, `id` ANDed with bits 4:0, ORed with bits 9:5, XORed with bits 14:10.
fn swizzle_ref(offset: u32, lane: usize) -> usize {
    let id = lane as u32 % 32;
    let mask = offset & 31;
    let j = if offset >= 0xE000 {
        let mut rev = 0;
        for b in 0..5 {
            rev |= (id >> b & 1) << (4 - b);
        }
        (rev >> mask.count_ones()) | (id & mask)
    } else if offset >= 0xC000 {
        let amount = (offset >> 5) & 31;
        let r = if offset & (1 << 10) != 0 {
            32 - amount
        } else {
            amount
        };
        (id & mask) | (((id + r) % 32) & !mask & 31)
    } else if offset & 0x8000 != 0 {
        let field = offset >> (2 * (id % 4)) & 3;
        id / 4 * 4 + field
    } else {
        let or = (offset >> 5) & 31;
        let xor = (offset >> 10) & 31;
        ((id & mask) | or) ^ xor
    };
    j as usize + lane / 32 * 32
}

/// The lane whose data lane `lane` receives under LLVM's `swizzle(NAME, args)` macro, as
/// AMDGPUModifierSyntax describes the macros (within each 32-lane half):
/// `BROADCAST,size,l` every lane of a group of `size` gets the group's lane `l`;
/// `SWAP,size` neighbouring groups of `size` lanes swap; `REVERSE,size` the lanes of each
/// group of `size` in reverse order; `QUAD_PERM,a,b,c,d` lane k of each quad gets the quad's
/// lane of the k-th argument; `BITMASK_PERM,"m"` each lane id bit (the string's first
/// character is bit 4) forced to 0 or 1, preserved (`p`) or inverted (`i`).
fn swizzle_macro_ref(macro_: &str, lane: usize) -> usize {
    let (name, args) = macro_.split_once('_').unwrap();
    let (name, args) = if name == "QUAD" || name == "BITMASK" {
        let (rest, args) = args.split_once('_').unwrap();
        (format!("{name}_{rest}"), args)
    } else {
        (name.to_string(), args)
    };
    let nums: Vec<usize> = args.split('_').filter_map(|x| x.parse().ok()).collect();
    let id = lane % 32;
    let j = match name.as_str() {
        "BROADCAST" => id / nums[0] * nums[0] + nums[1],
        "SWAP" => id ^ nums[0],
        "REVERSE" => id / nums[0] * nums[0] + (nums[0] - 1 - id % nums[0]),
        "QUAD_PERM" => {
            let digits: Vec<usize> = args.split('_').map(|x| x.parse().unwrap()).collect();
            id / 4 * 4 + digits[id % 4]
        }
        "BITMASK_PERM" => {
            let mut j = 0;
            for (k, c) in args.chars().enumerate() {
                let bit = 4 - k;
                let v = id >> bit & 1;
                j |= match c {
                    '0' => 0,
                    '1' => 1,
                    'p' => v,
                    'i' => v ^ 1,
                    _ => panic!("{c}"),
                } << bit;
            }
            j
        }
        n => panic!("macro {n}"),
    };
    j + lane / 32 * 32
}

/// A 16-bit integer compare (`v_cmp_<cond>_<i16|u16>`) of the low halves of `a` and `b`.
fn cmp16_ref(op: &str, a: u32, b: u32) -> bool {
    let (cond, ty) = op
        .strip_prefix("v_cmp_")
        .and_then(|r| r.split_once('_'))
        .unwrap();
    let ord = if ty == "i16" {
        (a as u16 as i16).cmp(&(b as u16 as i16))
    } else {
        (a as u16).cmp(&(b as u16))
    };
    use std::cmp::Ordering::*;
    match cond {
        "f" => false,
        "lt" => ord == Less,
        "eq" => ord == Equal,
        "le" => ord != Greater,
        "gt" => ord == Greater,
        "ne" => ord != Equal,
        "ge" => ord != Less,
        "t" => true,
        c => panic!("condition {c}"),
    }
}

/// gen.py's `lanes` family against the Vega ISA's cross-lane DS instructions (a lane reads 0
/// from a lane outside EXEC; only EXEC's lanes are written; a permute's lane is
/// `(addr + offset) / 4 % 64`; `ds_swizzle_b32` in its four modes, bit-mask, quad, rotate
/// and FFT, by offset, and by LLVM's `swizzle()` macros against their documented meaning)
/// and the SDWA form of the 16-bit integer compares (src0's high
/// half against src1's low half; family cmp16 has their e32, e64 and cmpx forms), on every
/// target, with EXEC missing lanes of both halves.
#[test]
fn cross_lane_ds_and_16_bit_compares_match_the_isa() {
    let n = 64;
    let mut r = prng(77);
    let exec: Vec<u32> = (0..n as u32)
        .map(|i| u32::from(!matches!(i, 3 | 17 | 33 | 62)))
        .collect();
    let data: Vec<u32> = (0..n as u32).map(|i| 0x1000 + i * 0x11).collect();
    // Addresses of any lane, unaligned ones and some beyond 256 too.
    let addr: Vec<u32> = (0..n).map(|_| r() % 1024).collect();
    let old: Vec<u32> = (0..n as u32).map(|i| 0xDEAD_0000 + i).collect();
    // 16-bit operands: equal, signed/unsigned orderings differing, high halves to select.
    let (ca, cb): (Vec<u32>, Vec<u32>) = (0..n)
        .map(|i| {
            let x = r();
            let y = if i % 4 == 0 { x } else { r() };
            (x, y)
        })
        .unzip();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("lanes", cpu, target);
        for kernel in isa.kernels() {
            let cmp = kernel.starts_with("cmp");
            let (p1, p2) = if cmp { (&ca, &cb) } else { (&data, &addr) };
            let bufs = vec![
                bytes32(&exec),
                bytes32(p1),
                bytes32(p2),
                bytes32(&old),
                vec![0; n * 4],
            ];
            let out = isa
                .run(&kernel, 64, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            let on = |l: usize| exec[l] != 0;
            let (what, arg) = kernel.split_once("__").unwrap();
            let mut want = old.clone();
            match what {
                "swizzle" => {
                    let off = u32::from_str_radix(arg, 16).unwrap();
                    for l in (0..n).filter(|&l| on(l)) {
                        let s = swizzle_ref(off, l);
                        want[l] = if on(s) { data[s] } else { 0 };
                    }
                }
                "swizzlem" => {
                    for l in (0..n).filter(|&l| on(l)) {
                        let s = swizzle_macro_ref(arg, l);
                        want[l] = if on(s) { data[s] } else { 0 };
                    }
                }
                "bpermute" | "permute" => {
                    let off: u32 = arg.parse().unwrap();
                    let lane_of = |l: usize| ((addr[l] + off) / 4 % 64) as usize;
                    let mut moved = vec![0u32; n];
                    for l in 0..n {
                        if what == "bpermute" {
                            let s = lane_of(l);
                            moved[l] = if on(s) { data[s] } else { 0 };
                        } else if on(l) {
                            moved[lane_of(l)] = data[l];
                        }
                    }
                    for l in (0..n).filter(|&l| on(l)) {
                        want[l] = moved[l];
                    }
                }
                "cmp" => {
                    let (op, form) = arg.split_once("__").unwrap();
                    assert_eq!(form, "sdwa", "{kernel}");
                    for l in (0..n).filter(|&l| on(l)) {
                        want[l] = u32::from(cmp16_ref(op, ca[l] >> 16, cb[l]));
                    }
                }
                k => panic!("unexpected kernel {k}"),
            }
            for l in 0..n {
                assert_eq!(got[l], want[l], "{cpu} {kernel} lane {l}");
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5 * 64);
}

// --- d16: half-register loads and high-half stores ------------------------------------------

/// The D16 memory instructions of GLOBAL, FLAT, MUBUF and DS (Vega ISA §9.1.9 and the DS
/// opcode table): a `*_d16` load writes the 16-bit value (a byte zero- or sign-extended to 16
/// bits) into the low half of the VGPR, `*_d16_hi` into the high half, the other half
/// unchanged; `store_short_d16_hi`/`store_byte_d16_hi` (`ds_write_b16/b8_d16_hi`) store bits
/// 31:16 / 23:16 of the data. At byte offsets 0 and 2 (shorts) or 0 and 3 (bytes).
#[test]
fn d16_loads_and_stores_match_the_isa() {
    let n = 128usize;
    let mut r = prng(0xD16);
    let mem: Vec<u32> = (0..n).map(|_| r()).collect();
    let old: Vec<u32> = (0..n).map(|_| r()).collect();
    let fill: Vec<u32> = (0..n).map(|_| r()).collect();
    let mb: Vec<u8> = bytes32(&mem);
    for (cpu, target) in CPUS {
        let isa = Isa::load("d16", cpu, target);
        let mut ran = 0;
        for k in isa.kernels() {
            let (name, off) = k.rsplit_once("__").unwrap();
            let off: usize = off.parse().unwrap();
            let (_, op) = name.split_once('_').unwrap();
            let bufs = vec![
                vec![0; n * 4],
                bytes32(&mem),
                bytes32(&old),
                vec![0; n * 4],
                bytes32(&fill),
            ];
            let out = isa
                .run(&k, n as u32, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..n {
                let at = 4 * i + off;
                let want = if let Some(ty) = op.strip_prefix("load_") {
                    let h: u16 = if ty.starts_with("short") {
                        u16::from_le_bytes([mb[at], mb[at + 1]])
                    } else if ty.starts_with("sbyte") {
                        mb[at] as i8 as i16 as u16
                    } else {
                        u16::from(mb[at])
                    };
                    if ty.ends_with("_hi") {
                        old[i] & 0xFFFF | u32::from(h) << 16
                    } else {
                        old[i] & 0xFFFF_0000 | u32::from(h)
                    }
                } else {
                    // The filled word with the data's high half (bits 31:16, a byte 23:16)
                    // at the offset.
                    let mut b = fill[i].to_le_bytes();
                    let hi = (mem[i] >> 16).to_le_bytes();
                    let len = if op.contains("short") { 2 } else { 1 };
                    b[off..off + len].copy_from_slice(&hi[..len]);
                    u32::from_le_bytes(b)
                };
                assert_eq!(got[i], want, "{cpu} {k} lane {i}");
            }
            ran += 1;
        }
        assert_eq!(ran, 64, "{cpu}");
    }
}

// --- format: typed buffer loads and stores --------------------------------------------------

/// (bit offset, width) of each component of buffer data format `d`, X first (Vega ISA §8.1.8
/// "Buffer data formats"; the packed formats are named from the most significant field, so
/// X is the last-named field, in the low bits).
fn format_fields(d: u32) -> Vec<(u32, u32)> {
    let arr = |w: u32, n: u32| (0..n).map(|k| (k * w, w)).collect();
    match d {
        1 => arr(8, 1),
        2 => arr(16, 1),
        3 => arr(8, 2),
        4 => arr(32, 1),
        5 => arr(16, 2),
        6 => vec![(0, 11), (11, 11), (22, 10)],
        7 => vec![(0, 10), (10, 11), (21, 11)],
        8 => vec![(0, 2), (2, 10), (12, 10), (22, 10)],
        9 => vec![(0, 10), (10, 10), (20, 10), (30, 2)],
        10 => arr(8, 4),
        11 => arr(32, 2),
        12 => arr(16, 4),
        13 => arr(32, 3),
        14 => arr(32, 4),
        _ => panic!("data format {d}"),
    }
}

/// The value of an unsigned float field of `w` bits (5-bit exponent, bias 15, `w − 5`-bit
/// mantissa): `m · 2^−14 / 2^mb` for exponent 0, `(1 + m / 2^mb) · 2^(e−15)` otherwise,
/// infinity or NaN for exponent 31.
fn ufloat_value(c: u32, w: u32) -> f64 {
    let mb = w - 5;
    let (e, m) = (c >> mb, c & ((1 << mb) - 1));
    let frac = f64::from(m) / f64::from(1u32 << mb);
    match e {
        31 if m == 0 => f64::INFINITY,
        31 => f64::NAN,
        0 => frac * 2f64.powi(-14),
        _ => (1.0 + frac) * 2f64.powi(e as i32 - 15),
    }
}

/// The unsigned float field of `w` bits nearest to `x` (ties to the even code), found by
/// search over every finite code and infinity (as 2^16, the next exponent's first value):
/// negative values and −0 give 0, NaN a NaN (checked by the caller).
fn ufloat_nearest(x: f64, w: u32) -> u32 {
    let inf = 31 << (w - 5);
    if x <= 0.0 {
        return 0;
    }
    let val = |c: u32| {
        if c == inf {
            65536.0
        } else {
            ufloat_value(c, w)
        }
    };
    let mut best = 0;
    for c in 1..=inf {
        let (d, db) = ((val(c) - x).abs(), (val(best) - x).abs());
        if d < db || (d == db && c % 2 == 0) {
            best = c;
        }
    }
    best
}

/// The exact value a float-valued numeric format `nf` gives the `w`-bit field `c` (Vega ISA
/// §8.1.8 "Numeric formats"): UNORM `c / (2^w − 1)`, SNORM `c / (2^(w−1) − 1)` clamped at
/// −1, (U|S)SCALED the integer, FLOAT the f16/f32/unsigned-float value.
fn format_value(nf: u32, w: u32, c: u32) -> f64 {
    let max = |k: u32| ((1u64 << k) - 1) as f64;
    let signed = ((u64::from(c) << (64 - w)) as i64 >> (64 - w)) as f64;
    match nf {
        0 => f64::from(c) / max(w),
        1 => (signed / max(w - 1)).max(-1.0),
        2 => f64::from(c),
        3 => signed,
        7 => match w {
            32 => f64::from(f32::from_bits(c)),
            16 => half::f16::from_bits(c as u16).to_f64(),
            _ => ufloat_value(c, w),
        },
        _ => panic!("{nf}"),
    }
}

/// The `w`-bit field a store of the value `x` writes in float-valued numeric format `nf`:
/// UNORM/SNORM clamped to [0, 1] / [−1, 1] (NaN 0), scaled, rounded to nearest even;
/// (U|S)SCALED truncated and saturated (NaN 0); FLOAT rounded to nearest even.
fn format_field(nf: u32, w: u32, x: f64) -> u32 {
    let max = |k: u32| ((1u64 << k) - 1) as f64;
    let bits = |v: f64| (v as i64 as u64 & ((1u64 << w) - 1)) as u32;
    if x.is_nan() && nf != 7 {
        return 0;
    }
    match nf {
        0 => bits((x.clamp(0.0, 1.0) * max(w)).round_ties_even()),
        1 => bits((x.clamp(-1.0, 1.0) * max(w - 1)).round_ties_even()),
        2 => bits(x.trunc().clamp(0.0, max(w))),
        3 => bits(x.trunc().clamp(-max(w - 1) - 1.0, max(w - 1))),
        _ => match w {
            32 => (x as f32).to_bits(),
            16 => u32::from(half::f16::from_f64(x).to_bits()),
            _ => ufloat_nearest(x, w),
        },
    }
}

/// Whether the `w`-bit float field `c` (FLOAT: f32, f16 or unsigned float) is a NaN: all
/// exponent bits set and a nonzero mantissa.
fn field_is_nan(c: u32, w: u32) -> bool {
    let (eb, mb) = match w {
        32 => (8, 23),
        16 => (5, 10),
        _ => (5, w - 5),
    };
    let e = c >> mb & ((1 << eb) - 1);
    e == (1 << eb) - 1 && c & ((1 << mb) - 1) != 0
}

/// Per-lane inputs of the format kernels: the memory elements (16 bytes a lane) and the
/// store data (4 dwords a lane), edge cases first, then random.
fn format_inputs() -> (Vec<u8>, Vec<u32>) {
    let n = 64usize;
    let mut r = prng(0xF0F0);
    let mut mem = Vec::new();
    // Bytes: 0, max, the SNORM −1 codes, ±1 around the middle.
    for b in [0x00u8, 0xFF, 0x80, 0x7F, 0x81, 0x01, 0xFE, 0x55] {
        mem.extend_from_slice(&[b; 16]);
    }
    // 16-bit halves: the f16 edges (denormals, infinities, NaNs, −0) and the 16-bit
    // integer ends.
    for l in 0..8 {
        for k in 0..8 {
            mem.extend_from_slice(&F16[(l * 3 + k) % 16].to_le_bytes());
        }
    }
    // Dwords: f32 edges and the packed formats' fields at infinity, NaN, denormal, max.
    let dw: [u32; 32] = [
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0x7F80_0001,
        0x8000_0000,
        0x0000_0001,
        0x807F_FFFF,
        0x3F80_0000,
        0x7C0 | 0x7C1 << 11 | 0x3E0 << 22, // 10_11_11: inf, NaN, inf
        0x3E1 | 0x7C0 << 10 | 0x7FF << 21, // 11_11_10: NaN, inf, NaN
        0x001 | 0x03F << 11 | 0x040 << 22, // denormals, the smallest normal
        0x7BF | 0x7BF << 11 | 0x3DF << 22, // the largest finite values
        0x3C0 | 0x3C1 << 11 | 0x3C0 << 22, // around 1.0
        0x0000_0000,
        0xFFFF_FFFF,
        0x8000_0001,
        0x4000_0200 | 0x200 << 10,
        0x7FFF_FFFF,
        0xC020_0802,
        0x3FF0_0801,
        0xAAAA_AAAA,
        0x5555_5555,
        0x8020_0800,
        0x1FF7_FDFF,
        0x0000_FFFF,
        0xFFFF_0000,
        0x0000_8000,
        0x8000_8000,
        0x7FFF_7FFF,
        0x0001_0001,
        0x00FF_00FF,
        0xFF00_FF00,
    ];
    for d in dw {
        mem.extend_from_slice(&d.to_le_bytes());
    }
    while mem.len() < n * 16 {
        mem.extend_from_slice(&r().to_le_bytes());
    }
    // Store data: f32 edges (NaN, infinities, ±0, denormals), the clamp and rounding
    // boundaries of the 8/10/16-bit fields and f16/unsigned-float overflow; f16 pairs for
    // the D16 stores; then values in [−2, 2], wide values and raw bits.
    let f = |x: f32| x.to_bits();
    let mut data: Vec<u32> = vec![
        0x7FC0_0000,
        0xFFC0_0001,
        0x7F80_0000,
        0xFF80_0000,
        0x8000_0000,
        0,
        1,
        0x8000_0001,
        f(1.0),
        f(-1.0),
        f(1.0000001),
        f(-1.0000001),
        f(0.5),
        f(-0.5),
        f(2.5),
        f(-2.5),
        f(3.7),
        f(-3.7),
        f(255.5),
        f(256.0),
        f(127.5),
        f(-128.5),
        f(-129.0),
        f(1023.9),
        f(1e10),
        f(-1e10),
        f(65519.0),
        f(65520.0),
        f(65280.0),
        f(65279.0),
        f(65024.0),
        f(2f32.powi(-25)),
        f(3.0 * 2f32.powi(-25)),
        f(2f32.powi(-14)),
        f(1.0 + 2f32.powi(-7)),
        f(1.0 + 3.0 * 2f32.powi(-7)),
        f(1.0 + 2f32.powi(-6)),
        f(0.5 / 255.0),
        f(1.5 / 255.0),
        f(254.5 / 255.0),
        f(1.5 / 127.0),
        f(-126.5 / 127.0),
        f(4294967296.0),
        f(2147483648.0),
        f(-2147483904.0),
        f(1.0 / 3.0),
        f(-1.0 / 3.0),
        f(0.999),
    ];
    for k in 0..64 {
        data.push(u32::from(F16[k % 16]) | u32::from(F16[(k * 7 + 3) % 16]) << 16);
    }
    while data.len() < n * 4 {
        let x = r();
        data.push(match data.len() % 3 {
            0 => f(f32::from_bits(x >> 9 | 0x3F80_0000) * 4.0 - 6.0),
            1 => f((x as i32 as f32) / 32768.0),
            _ => x,
        });
    }
    (mem, data)
}

/// `buffer_*_format_*` (format from the resource's word 3) and `tbuffer_*_format_*` (from
/// the instruction), 32-bit and D16, for every DATA_FORMAT/NUM_FORMAT combination of gfx9,
/// against the Vega ISA's §8.1.8 conversions as the reference above writes them: a load
/// converts each field (UNORM/SNORM/SCALED/FLOAT to f32 (D16: f16, one rounding), UINT/SINT
/// extended (D16: low 16 bits)), gives missing components 0 and W 1 (1.0), writes only the
/// instruction's registers (D16: two components per VGPR, the unwritten half kept), and
/// reads 0 past NUM_RECORDS; a store converts with clamping and round-to-nearest-even
/// (SCALED truncating), writes a packed format's whole dword (missing fields 0) or the
/// instruction's components, and is dropped past NUM_RECORDS (bytes of a raw buffer,
/// records of a structured one).
#[test]
fn format_loads_and_stores_match_the_isa() {
    let n = 64usize;
    let records = 16 * 56 + 2;
    let (mem, data) = format_inputs();
    let mut r = prng(0xF111);
    let fill: Vec<u32> = (0..n * 4).map(|_| r()).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("format", cpu, target);
        let mut ran = 0;
        for k in isa.kernels() {
            let (name, fmt) = k.rsplit_once("__").unwrap();
            let (d, nf) = fmt.split_once('_').unwrap();
            let (d, nf): (u32, u32) = (d.parse().unwrap(), nf.parse().unwrap());
            let x = name.rsplit('_').next().unwrap();
            let comps = x.len();
            let (d16, hi) = (name.contains("_d16"), name.contains("_hi_"));
            let fields = format_fields(d);
            let packed = matches!(d, 6..=9);
            let int = matches!(nf, 4 | 5);
            let len = if packed {
                4
            } else {
                let (o, w) = fields[comps.min(fields.len()) - 1];
                ((o + w) / 8) as usize
            };
            let bufs = vec![
                vec![0; n * 16],
                mem.clone(),
                bytes32(&data),
                vec![0; n * 16],
                bytes32(&fill),
            ];
            let out = isa
                .run(&k, n as u32, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            let gotb = &out[4];
            // Where byte b of lane i's element is: 16i + b, or in a swizzled buffer (STRIDE
            // 16, ELEMENT_SIZE 4, INDEX_STRIDE 8; Vega ISA §8.1.5) `(index_msb * stride +
            // offset_msb * element_size) * index_stride + index_lsb * element_size +
            // offset_lsb`.
            let swz = k.starts_with("swz_");
            let addr = |i: usize, b: usize| {
                if swz {
                    (i / 8 * 16 + b / 4 * 4) * 8 + i % 8 * 4 + b % 4
                } else {
                    16 * i + b
                }
            };
            // What a store leaves in p4 (the fill where it writes nothing).
            let mut want_all = bytes32(&fill);
            for i in 0..n {
                // A structured buffer (`idx_`) bounds the record index, a raw one the bytes
                // (a swizzled one has no range check).
                let inside = if k.starts_with("idx_") {
                    i < 56
                } else if swz {
                    true
                } else {
                    16 * i + len <= records
                };
                let elem_at = |bytes: &[u8]| {
                    let e: Vec<u8> = (0..16).map(|b| bytes[addr(i, b)]).collect();
                    u128::from_le_bytes(e.try_into().unwrap())
                };
                let at = |c: usize| {
                    let (o, w) = fields[c];
                    ((elem_at(&mem) >> o) as u64 & ((1u64 << w) - 1)) as u32
                };
                if name.contains("_load_") {
                    // Each component's 32-bit or 16-bit result, None where any NaN will do.
                    let comp32 = |c: usize| -> Option<u32> {
                        if !inside {
                            return Some(0);
                        }
                        if c >= fields.len() {
                            return Some(match (c, int) {
                                (3, true) => 1,
                                (3, false) => 1.0f32.to_bits(),
                                _ => 0,
                            });
                        }
                        let (raw, w) = (at(c), fields[c].1);
                        let sx = ((u64::from(raw) << (64 - w)) as i64 >> (64 - w)) as u32;
                        Some(match nf {
                            4 => raw,
                            5 => sx,
                            7 if w == 32 => raw,
                            _ => {
                                let v = format_value(nf, w, raw);
                                if v.is_nan() {
                                    return None;
                                }
                                (v as f32).to_bits()
                            }
                        })
                    };
                    let comp16 = |c: usize| -> Option<u32> {
                        if !inside {
                            return Some(0);
                        }
                        if c >= fields.len() {
                            return Some(match (c, int) {
                                (3, true) => 1,
                                (3, false) => 0x3C00,
                                _ => 0,
                            });
                        }
                        if int {
                            return comp32(c).map(|v| v & 0xFFFF);
                        }
                        let v = format_value(nf, fields[c].1, at(c));
                        if v.is_nan() {
                            return None;
                        }
                        Some(u32::from(half::f16::from_f64(v).to_bits()))
                    };
                    let mut want = [Some(0xDEAD_BEEF_u32); 4];
                    if d16 {
                        for c in (0..comps).step_by(2) {
                            let lo = comp16(c);
                            let (l, h) = if hi {
                                (Some(0xBEEF), lo)
                            } else if c + 1 < comps {
                                (lo, comp16(c + 1))
                            } else {
                                (lo, Some(0xDEAD))
                            };
                            want[c / 2] = l.zip(h).map(|(l, h)| l | h << 16);
                            // A NaN half: check the other half and that this one is a NaN.
                            let g = got[4 * i + c / 2];
                            for (half, sh) in [(l, 0), (h, 16)] {
                                if half.is_none() {
                                    let b = half::f16::from_bits((g >> sh) as u16);
                                    assert!(b.is_nan(), "{cpu} {k} lane {i} c {c}: {g:#x}");
                                }
                            }
                            if want[c / 2].is_none() {
                                let m = |v: Option<u32>, sh: u32| v.map_or(0, |_| 0xFFFFu32 << sh);
                                let mask = m(l, 0) | m(h, 16);
                                let w = l.unwrap_or(0) | h.unwrap_or(0) << 16;
                                assert_eq!(g & mask, w & mask, "{cpu} {k} lane {i} c {c}");
                                want[c / 2] = Some(g);
                            }
                        }
                    } else {
                        for (c, wc) in want.iter_mut().enumerate().take(comps) {
                            *wc = comp32(c);
                            if wc.is_none() {
                                let g = got[4 * i + c];
                                assert!(f32::from_bits(g).is_nan(), "{cpu} {k} lane {i} c {c}");
                                *wc = Some(g);
                            }
                        }
                    }
                    for c in 0..4 {
                        assert_eq!(
                            got[4 * i + c],
                            want[c].unwrap(),
                            "{cpu} {k} lane {i} component {c}"
                        );
                    }
                } else if inside {
                    let mut elem = 0u128;
                    let mut nan_fields = Vec::new();
                    for c in 0..comps.min(fields.len()) {
                        let (o, w) = fields[c];
                        let v = if d16 {
                            let dw = data[4 * i + c / 2];
                            let h = if hi || c % 2 == 1 { dw >> 16 } else { dw } as u16;
                            match nf {
                                4 => u32::from(h),
                                5 => h as i16 as u32,
                                _ => {
                                    let x = half::f16::from_bits(h).to_f64();
                                    if nf == 7 && x.is_nan() {
                                        nan_fields.push(c);
                                    }
                                    format_field(nf, w, x)
                                }
                            }
                        } else {
                            let dw = data[4 * i + c];
                            let x = f64::from(f32::from_bits(dw));
                            if int || (nf == 7 && w == 32) {
                                dw
                            } else {
                                if nf == 7 && x.is_nan() {
                                    nan_fields.push(c);
                                }
                                format_field(nf, w, x)
                            }
                        };
                        let m = ((1u64 << w) - 1) as u32;
                        elem |= u128::from(v & m) << o;
                    }
                    let g = elem_at(gotb);
                    // A NaN field: any NaN; take the memory's bits for it.
                    for c in nan_fields {
                        let (o, w) = fields[c];
                        let m = ((1u128 << w) - 1) << o;
                        let gf = ((g & m) >> o) as u32;
                        assert!(field_is_nan(gf, w), "{cpu} {k} lane {i} c {c}: {gf:#x}");
                        elem = elem & !m | g & m;
                    }
                    for (b, &v) in elem.to_le_bytes()[..len].iter().enumerate() {
                        want_all[addr(i, b)] = v;
                    }
                }
            }
            if name.contains("_store_") {
                for j in 0..n {
                    let r = 16 * j..16 * j + 16;
                    assert_eq!(gotb[r.clone()], want_all[r], "{cpu} {k} bytes {}..", 16 * j);
                }
            }
            ran += 1;
        }
        assert_eq!(ran, 642, "{cpu}");
    }
}

// --- cmp16: 16-bit VOPC compares ------------------------------------------------------------

/// `v_cmp(x)_<cond>_{f16,i16,u16}` (e32 and e64) compare the low halves of their sources
/// (f16: IEEE ordered/unordered conditions, NaNs unordered), as the Vega ISA's VOPC table
/// gives them; the high halves do not matter.
#[test]
fn compares_of_16_bit_values_match_the_isa() {
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut r = prng(0xC16);
    for &x in &F16 {
        for &y in &F16 {
            a.push(u32::from(x) | r() << 16);
            b.push(u32::from(y) | r() << 16);
        }
    }
    let ints: [u16; 8] = [0, 1, 2, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234];
    for &x in &ints {
        for &y in &ints {
            a.push(u32::from(x) | r() << 16);
            b.push(u32::from(y) | r() << 16);
        }
    }
    let n = a.len();
    for (cpu, target) in CPUS {
        let isa = Isa::load("cmp16", cpu, target);
        for k in isa.kernels() {
            let name = k.strip_suffix("_e64").unwrap_or(&k);
            let mut parts = name.rsplitn(3, '_');
            let ty = parts.next().unwrap();
            let cond = parts.next().unwrap();
            let bufs = vec![
                vec![0; n * 4],
                bytes32(&a),
                bytes32(&b),
                vec![0; n * 4],
                vec![0; n * 4],
            ];
            let out = isa
                .run(&k, n as u32, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..n {
                let (x, y) = (a[i] as u16, b[i] as u16);
                let want = match ty {
                    "f16" => {
                        let (p, q) = (
                            half::f16::from_bits(x).to_f64(),
                            half::f16::from_bits(y).to_f64(),
                        );
                        let o = p.partial_cmp(&q);
                        use std::cmp::Ordering::*;
                        match cond {
                            "f" => false,
                            "lt" => o == Some(Less),
                            "eq" => o == Some(Equal),
                            "le" => matches!(o, Some(Less | Equal)),
                            "gt" => o == Some(Greater),
                            "lg" => matches!(o, Some(Less | Greater)),
                            "ge" => matches!(o, Some(Greater | Equal)),
                            "o" => o.is_some(),
                            "u" => o.is_none(),
                            "nge" => !matches!(o, Some(Greater | Equal)),
                            "nlg" => !matches!(o, Some(Less | Greater)),
                            "ngt" => o != Some(Greater),
                            "nle" => !matches!(o, Some(Less | Equal)),
                            "neq" => o != Some(Equal),
                            "nlt" => o != Some(Less),
                            _ => true,
                        }
                    }
                    _ => {
                        let (p, q) = if ty == "i16" {
                            (i32::from(x as i16), i32::from(y as i16))
                        } else {
                            (i32::from(x), i32::from(y))
                        };
                        match cond {
                            "f" => false,
                            "lt" => p < q,
                            "eq" => p == q,
                            "le" => p <= q,
                            "gt" => p > q,
                            "ne" => p != q,
                            "ge" => p >= q,
                            _ => true,
                        }
                    }
                };
                assert_eq!(got[i], u32::from(want), "{cpu} {k} {x:#06x} {y:#06x}");
            }
        }
    }
}

// --- trans: hardware sine/cosine, f16 transcendentals ---------------------------------------

/// An f16 operation as the ISA defines it, on the host: the f64 result of `op` rounded once
/// to f16; a NaN operand quieted, an invalid result the default NaN 0x7E00.
fn f16_unary_ref(x: u16, op: impl Fn(f64) -> f64) -> u16 {
    if f16_nan(x) {
        return x | 0x200;
    }
    let r = op(half::f16::from_bits(x).to_f64());
    if r.is_nan() {
        0x7E00
    } else {
        f16_round(r)
    }
}

/// `v_sin_f32`/`v_cos_f32` (`sin(2π·x)`, argument in revolutions), the f16 `v_rcp`, `v_sqrt`,
/// `v_rsq`, `v_log` (log2), `v_exp` (exp2), `v_sin`/`v_cos`, `v_fract`, `v_frexp_mant`,
/// `v_frexp_exp_i16` (glibc's `frexp` on the value), and `v_cmp(x)_class_f16`, against host
/// references from the Vega ISA's definitions.
#[test]
fn trig_and_f16_transcendentals_match_the_isa() {
    let mut r = prng(0x7A5);
    let mut f: Vec<u32> = DIV_F32.to_vec();
    f.extend((0..96).map(|_| (f32::from_bits(r() >> 9 | 0x3F80_0000) * 512.0 - 768.0).to_bits()));
    let mut h: Vec<u32> = F16.iter().map(|&x| u32::from(x) | 0xABCD_0000).collect();
    h.extend((0..112).map(|_| r() & 0xFFFF));
    let masks: Vec<u32> = (0..128)
        .map(|i| {
            if i % 2 == 0 {
                1 << (i / 2 % 10)
            } else {
                r() & 0x3FF
            }
        })
        .collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("trans", cpu, target);
        for k in isa.kernels() {
            let f32_op = k.ends_with("_f32");
            let input = if f32_op { &f } else { &h };
            let bufs = vec![
                vec![0; 512],
                bytes32(input),
                bytes32(&masks),
                vec![0; 512],
                vec![0; 512],
            ];
            let out = isa
                .run(&k, 128, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..128 {
                let x = input[i];
                let want = if f32_op {
                    let v = f64::from(f32::from_bits(x)) * std::f64::consts::TAU;
                    let y = if k == "v_sin_f32" { v.sin() } else { v.cos() };
                    canon32(f32::from_bits(x), y as f32)
                } else {
                    let x16 = x as u16;
                    let v = half::f16::from_bits(x16).to_f64();
                    u32::from(match k.as_str() {
                        "v_rcp_f16" => f16_unary_ref(x16, |x| 1.0 / x),
                        "v_sqrt_f16" => f16_unary_ref(x16, f64::sqrt),
                        "v_rsq_f16" => f16_unary_ref(x16, |x| 1.0 / x.sqrt()),
                        "v_log_f16" => f16_unary_ref(x16, f64::log2),
                        "v_exp_f16" => f16_unary_ref(x16, f64::exp2),
                        "v_sin_f16" => f16_unary_ref(x16, |x| (x * std::f64::consts::TAU).sin()),
                        "v_cos_f16" => f16_unary_ref(x16, |x| (x * std::f64::consts::TAU).cos()),
                        "v_fract_f16" => f16_unary_ref(x16, |x| {
                            (x - x.floor()).min(half::f16::from_bits(0x3BFF).to_f64())
                        }),
                        "v_frexp_mant_f16" if !v.is_finite() || v == 0.0 => x16,
                        "v_frexp_mant_f16" => f16_round(libm::frexp64(v).0),
                        "v_frexp_exp_i16_f16" if !v.is_finite() => 0,
                        "v_frexp_exp_i16_f16" => libm::frexp64(v).1 as i16 as u16,
                        _ => {
                            // cmp(x)_class: 0 sNaN, 1 qNaN, 2 −∞, 3 −normal, 4 −subnormal,
                            // 5 −0, 6 +0, 7 +subnormal, 8 +normal, 9 +∞.
                            let hv = half::f16::from_bits(x16);
                            let class = if hv.is_nan() {
                                u32::from(x16 & 0x200 != 0)
                            } else {
                                let k = if hv.is_infinite() {
                                    0
                                } else if hv.is_normal() {
                                    1
                                } else if v == 0.0 {
                                    3
                                } else {
                                    2
                                };
                                if hv.is_sign_negative() {
                                    2 + k
                                } else {
                                    9 - k
                                }
                            };
                            (masks[i] >> class & 1) as u16
                        }
                    })
                };
                assert_eq!(got[i], want, "{cpu} {k} {x:#x}");
            }
        }
    }
}

// --- MODE: denormal flushing, IEEE min/max, DX10 clamp, directed rounding --------------------
//
// References from the Vega ISA §3.8 "Mode register" (FP_DENORM 0 flush inputs and outputs,
// 1 flush outputs, 2 flush inputs, 3 keep both; FP_ROUND 0 nearest even, 1 +inf, 2 -inf,
// 3 toward zero; DX10_CLAMP: clamp turns NaN into 0; IEEE: min/max quiet a signaling NaN)
// and its `V_MIN_F32`/`V_MAX_F32` pseudocode; `v_mad_f32` flushes f32 denormals in every
// mode (LLVM selects it only with f32 denormals flushed).

/// A denormal of an IEEE format with `bits` total bits and `exp` exponent bits, as a zero
/// of its sign.
fn ftz(x: u64, bits: u32, frac: u32) -> u64 {
    let sign = 1u64 << (bits - 1);
    let exp_mask = (sign - 1) & !((1u64 << frac) - 1);
    if x & exp_mask == 0 {
        x & sign
    } else {
        x
    }
}

/// The `V_MIN_*`/`V_MAX_*` pseudocode: with IEEE a signaling NaN (src0 first) gives itself
/// quieted; a NaN gives the other source; −0 < +0; else the smaller (larger).
fn isa_min_max(a: u64, b: u64, bits: u32, frac: u32, max: bool, ieee: bool) -> u64 {
    let sign = 1u64 << (bits - 1);
    let quiet = 1u64 << (frac - 1);
    let nan = |x: u64| {
        let exp_mask = (sign - 1) & !((1u64 << frac) - 1);
        x & exp_mask == exp_mask && x & ((1u64 << frac) - 1) != 0
    };
    let snan = |x: u64| nan(x) && x & quiet == 0;
    if ieee && snan(a) {
        return a | quiet;
    }
    if ieee && snan(b) {
        return b | quiet;
    }
    if nan(a) {
        return b;
    }
    if nan(b) {
        return a;
    }
    let val = |x: u64| -> f64 {
        match bits {
            16 => half::f16::from_bits(x as u16).to_f64(),
            32 => f64::from(f32::from_bits(x as u32)),
            _ => f64::from_bits(x),
        }
    };
    let (va, vb) = (val(a), val(b));
    let a_first = if va == vb {
        // ±0: −0 is the smaller.
        (a & sign != 0) != max
    } else {
        (va < vb) != max
    };
    if a_first {
        a
    } else {
        b
    }
}

/// `±m × 2^e` (exact) rounded to f32 bits by FP_ROUND value `rm`, by integer arithmetic:
/// keep 24 significant bits (fewer below 2^-126, down to the 2^-149 step), look at the
/// dropped bits, step away from zero when the mode says so; overflow gives ∞ or the
/// largest finite value by the mode. `m` nonzero.
fn round_exact_f32(neg: bool, m: u128, e: i32, rm: u32) -> u32 {
    assert!(m != 0);
    let len = 128 - m.leading_zeros() as i32;
    let q = (e + len - 24).max(-149);
    let shift = q - e;
    let (mut mant, rest_nonzero, above_half, at_half) = if shift <= 0 {
        (m << -shift, false, false, false)
    } else if shift >= 128 {
        (0, true, false, false)
    } else {
        let rest = m & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        (m >> shift, rest != 0, rest > half, rest == half)
    };
    let away = match rm {
        0 => above_half || at_half && mant & 1 == 1,
        1 => rest_nonzero && !neg,
        2 => rest_nonzero && neg,
        _ => false,
    };
    let mut q = q;
    if away {
        mant += 1;
        if mant == 1 << 24 {
            mant >>= 1;
            q += 1;
        }
    }
    let sign = if neg { 0x8000_0000 } else { 0 };
    if mant >= 1 << 23 && q + 23 + 127 >= 255 {
        let inf = match rm {
            0 => true,
            1 => !neg,
            2 => neg,
            _ => false,
        };
        return sign | if inf { 0x7F80_0000 } else { 0x7F7F_FFFF };
    }
    if mant < 1 << 23 {
        sign | mant as u32
    } else {
        sign | ((q + 23 + 127) as u32) << 23 | (mant as u32 & 0x7F_FFFF)
    }
}

/// An f32 as `(negative, m, e)` with value `±m × 2^e`.
fn split_f32(x: f32) -> (bool, i128, i32) {
    let b = x.to_bits();
    let field = (b >> 23 & 0xFF) as i32;
    let frac = i128::from(b & 0x7F_FFFF);
    let (m, e) = if field == 0 {
        (frac, -149)
    } else {
        (frac | 1 << 23, field - 150)
    };
    (b >> 31 != 0, m, e)
}

/// The sum of signed terms `±m × 2^e` as a signed mantissa at the smallest exponent,
/// exact or with the same f32 rounding in every mode: zero terms are dropped, and a term
/// whose top bit is over 80 bits below the largest's becomes `±2^(top − 80)` (both lie
/// strictly inside the same gap between f32 values next to the larger term).
fn exact_sum(terms: &[(bool, i128, i32)]) -> (i128, i32) {
    let top = |t: &(bool, i128, i32)| t.2 + 128 - t.1.unsigned_abs().leading_zeros() as i32;
    let live: Vec<(bool, i128, i32)> = terms.iter().copied().filter(|t| t.1 != 0).collect();
    if live.is_empty() {
        return (0, 0);
    }
    let big = live.iter().map(top).max().unwrap();
    let live: Vec<(bool, i128, i32)> = live
        .into_iter()
        .map(|t| {
            if top(&t) < big - 80 {
                (t.0, 1, big - 80)
            } else {
                t
            }
        })
        .collect();
    let e0 = live.iter().map(|t| t.2).min().unwrap();
    let mut s = 0i128;
    for &(neg, m, e) in &live {
        let shift = (e - e0) as u32;
        assert!(
            shift < 120 && (m.unsigned_abs() << shift) >> shift == m.unsigned_abs(),
            "test inputs too far apart"
        );
        let v = m << shift;
        s += if neg { -v } else { v };
    }
    (s, e0)
}

/// f32 `a + b` (terms) rounded by `rm`; an exact zero sum is −0 toward −∞ unless both terms
/// are +0, else +0 unless both are −0 (IEEE 754 §6.3).
fn round_sum(terms: &[(bool, i128, i32)], rm: u32) -> u32 {
    let (s, e) = exact_sum(terms);
    if s == 0 {
        let all_neg = terms.iter().all(|t| t.0 && t.1 == 0);
        let all_pos_zero = terms.iter().all(|t| !t.0 && t.1 == 0);
        return if all_neg || rm == 2 && !all_pos_zero {
            0x8000_0000
        } else {
            0
        };
    }
    round_exact_f32(s < 0, s.unsigned_abs(), e, rm)
}

/// The exact product of two f32 as a term.
fn product(a: f32, b: f32) -> (bool, i128, i32) {
    let (na, ma, ea) = split_f32(a);
    let (nb, mb, eb) = split_f32(b);
    (na != nb, ma * mb, ea + eb)
}

/// f32 `op` of the `fpmode` family on `a`, `b`, `c` rounded by `rm` (denormals kept except
/// by `v_mad_f32`).
fn directed_ref(op: &str, a: f32, b: f32, c: f32, rm: u32) -> u32 {
    let t = split_f32;
    let neg = |x: f32| -x;
    match op {
        "add_f32" => round_sum(&[t(a), t(b)], rm),
        "sub_f32" => round_sum(&[t(a), t(neg(b))], rm),
        "mul_f32" => {
            let (n, m, e) = product(a, b);
            if m == 0 {
                return if n { 0x8000_0000 } else { 0 };
            }
            round_exact_f32(n, m.unsigned_abs(), e, rm)
        }
        "fma_f32" | "fmac_f32" => round_sum(&[product(a, b), t(c)], rm),
        "mad_f32" => {
            let f = |x: f32| f32::from_bits(ftz(u64::from(x.to_bits()), 32, 23) as u32);
            let p = f32::from_bits(directed_ref("mul_f32", f(a), f(b), 0.0, rm));
            if p.is_infinite() {
                return (p + f(c)).to_bits();
            }
            let r = round_sum(&[t(f(p)), t(f(c))], rm);
            ftz(u64::from(r), 32, 23) as u32
        }
        // A zero factor (after flushing) gives a +0 product whatever the other one is.
        "mad_legacy_f32" => {
            let f = |x: f32| f32::from_bits(ftz(u64::from(x.to_bits()), 32, 23) as u32);
            let (a, b) = if f(a) == 0.0 || f(b) == 0.0 {
                (0.0, 0.0)
            } else {
                (a, b)
            };
            directed_ref("mad_f32", a, b, c, rm)
        }
        _ => unreachable!("{op}"),
    }
}

#[test]
fn mode_denormals_ieee_clamp_and_rounding_match_the_isa() {
    // f32 sources: denormals of both signs, the smallest normal, ordinary values, and values
    // whose f16 conversion is an f16 denormal (6.1e-5 is f16's smallest normal).
    let v32: Vec<u32> = vec![
        0x0000_0001,
        0x807F_FFFF,
        0x0040_0000,
        0x0080_0000,
        0x8080_0000,
        0x3F80_0000,
        0xBF80_0000,
        0x0000_0000,
        0x8000_0000,
        0x3F00_0000,
        0x3727_C5AC, // 1e-5
        0xB5C6_BF95, // -1.48e-6
    ];
    let n = v32.len() * v32.len();
    let a32: Vec<u32> = (0..n).map(|i| v32[i / v32.len()]).collect();
    let b32: Vec<u32> = (0..n).map(|i| v32[i % v32.len()]).collect();
    let c32: Vec<u32> = (0..n).map(|i| v32[(i * 5 + 3) % v32.len()]).collect();
    let f = f32::from_bits;
    // f64 and f16 sources.
    let v64: Vec<u64> = vec![
        1,
        0x800F_FFFF_FFFF_FFFF,
        0x0010_0000_0000_0000,
        0x8010_0000_0000_0000,
        0x3FF0_0000_0000_0000,
        0,
        0x8000_0000_0000_0000,
    ];
    let n64 = v64.len() * v64.len();
    let a64: Vec<u64> = (0..n64).map(|i| v64[i / v64.len()]).collect();
    let b64: Vec<u64> = (0..n64).map(|i| v64[i % v64.len()]).collect();
    let v16: Vec<u32> = vec![
        0x0001, 0x83FF, 0x0400, 0x8400, 0x3C00, 0x0000, 0x8000, 0x0200,
    ];
    let n16 = v16.len() * v16.len();
    let a16: Vec<u32> = (0..n16).map(|i| v16[i / v16.len()]).collect();
    let b16: Vec<u32> = (0..n16).map(|i| v16[i % v16.len()]).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("fpmode", cpu, target);
        let kernels = isa.kernels();
        let run32 = |k: &str, a: &[u32], b: &[u32], c: &[u32]| -> Vec<u32> {
            let m = a.len();
            let out = isa
                .run(
                    k,
                    m as u32,
                    &[
                        vec![0; 4],
                        bytes32(a),
                        bytes32(b),
                        bytes32(c),
                        vec![0; m * 4],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            u32s(&out[4])
        };
        let run64 = |k: &str, a: &[u64], b: &[u64]| -> Vec<u64> {
            let m = a.len();
            let out = isa
                .run(
                    k,
                    m as u32,
                    &[
                        vec![0; 4],
                        bytes64(a),
                        bytes64(b),
                        vec![0; 4],
                        vec![0; m * 8],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            u64s(&out[4])
        };
        // FP_DENORM: flush sources when bit 0 is clear, results when bit 1 is clear.
        for d in 0..4u32 {
            let fin = |x: u32| -> u32 {
                if d & 1 == 0 {
                    ftz(u64::from(x), 32, 23) as u32
                } else {
                    x
                }
            };
            let fout = |x: u32| -> u32 {
                if d & 2 == 0 {
                    ftz(u64::from(x), 32, 23) as u32
                } else {
                    x
                }
            };
            for op in [
                "add_f32",
                "mul_f32",
                "fma_f32",
                "mad_f32",
                "max_f32",
                "cvt_f16_f32",
            ] {
                let k = format!("{op}_d{d}");
                if !kernels.contains(&k) {
                    assert!(op == "mad_f32" && cpu == "gfx942", "{cpu}: no {k}");
                    continue;
                }
                let got = run32(&k, &a32, &b32, &c32);
                for i in 0..n {
                    let (x, y, z) = (fin(a32[i]), fin(b32[i]), fin(c32[i]));
                    let want = match op {
                        "add_f32" => fout((f(x) + f(y)).to_bits()),
                        "mul_f32" => fout((f(x) * f(y)).to_bits()),
                        "fma_f32" => fout(f(x).mul_add(f(y), f(z)).to_bits()),
                        "max_f32" => {
                            fout(isa_min_max(x.into(), y.into(), 32, 23, true, true) as u32)
                        }
                        "cvt_f16_f32" => {
                            let h = u64::from(half::f16::from_f32(f(x)).to_bits());
                            if d & 2 == 0 {
                                ftz(h, 16, 10) as u32
                            } else {
                                h as u32
                            }
                        }
                        // v_mad_f32 flushes in every mode, its product too.
                        _ => directed_ref("mad_f32", f(a32[i]), f(b32[i]), f(c32[i]), 0),
                    };
                    let mask = if op == "cvt_f16_f32" {
                        0xFFFF
                    } else {
                        u32::MAX
                    };
                    assert_eq!(
                        got[i] & mask,
                        want,
                        "{cpu} {k} {:#x} {:#x} {:#x}",
                        a32[i],
                        b32[i],
                        c32[i]
                    );
                }
            }
            let got = run64(&format!("add_f64_d{d}"), &a64, &b64);
            for i in 0..n64 {
                let fl = |x: u64, on: bool| if on { ftz(x, 64, 52) } else { x };
                let (x, y) = (fl(a64[i], d & 1 == 0), fl(b64[i], d & 1 == 0));
                let want = fl(
                    (f64::from_bits(x) + f64::from_bits(y)).to_bits(),
                    d & 2 == 0,
                );
                assert_eq!(
                    got[i], want,
                    "{cpu} add_f64_d{d} {:#x} {:#x}",
                    a64[i], b64[i]
                );
            }
            let got = run32(&format!("add_f16_d{d}"), &a16, &b16, &a16);
            for i in 0..n16 {
                let fl = |x: u64, on: bool| if on { ftz(x, 16, 10) } else { x };
                let (x, y) = (fl(a16[i].into(), d & 1 == 0), fl(b16[i].into(), d & 1 == 0));
                let h = |x: u64| half::f16::from_bits(x as u16);
                let want = fl(u64::from((h(x) + h(y)).to_bits()), d & 2 == 0);
                assert_eq!(
                    u64::from(got[i] & 0xFFFF),
                    want,
                    "{cpu} add_f16_d{d} {:#x} {:#x}",
                    a16[i],
                    b16[i]
                );
            }
        }
        // IEEE mode: signaling NaNs quieted and returned (on) or losing to numbers (off).
        let nans32: Vec<u32> = vec![
            0x7F80_0001,
            0xFF80_0005,
            0x7FC0_0000,
            0xFFC0_0003,
            0x3F80_0000,
            0x8000_0000,
            0,
            0xFF80_0000,
            0x4000_0000,
        ];
        let m = nans32.len() * nans32.len();
        let na: Vec<u32> = (0..m).map(|i| nans32[i / nans32.len()]).collect();
        let nb: Vec<u32> = (0..m).map(|i| nans32[i % nans32.len()]).collect();
        let nc: Vec<u32> = (0..m).map(|i| nans32[(i * 7 + 2) % nans32.len()]).collect();
        let nans64: Vec<u64> = vec![
            0x7FF0_0000_0000_0001,
            0x7FF8_0000_0000_0000,
            0x3FF0_0000_0000_0000,
            0x8000_0000_0000_0000,
            0,
        ];
        let m64 = nans64.len() * nans64.len();
        let da: Vec<u64> = (0..m64).map(|i| nans64[i / nans64.len()]).collect();
        let db: Vec<u64> = (0..m64).map(|i| nans64[i % nans64.len()]).collect();
        let nans16: Vec<u32> = vec![0x7C01, 0xFE00, 0x3C00, 0x8000, 0x0000, 0xFC00];
        let m16 = nans16.len() * nans16.len();
        let ha: Vec<u32> = (0..m16).map(|i| nans16[i / nans16.len()]).collect();
        let hb: Vec<u32> = (0..m16).map(|i| nans16[i % nans16.len()]).collect();
        for ieee in [false, true] {
            let k = |op: &str| format!("{op}_ieee{}", ieee as u8);
            for (op, max) in [("min_f32", false), ("max_f32", true)] {
                let got = run32(&k(op), &na, &nb, &nc);
                for i in 0..m {
                    let want = isa_min_max(na[i].into(), nb[i].into(), 32, 23, max, ieee);
                    assert_eq!(
                        u64::from(got[i]),
                        want,
                        "{cpu} {} {:#x} {:#x}",
                        k(op),
                        na[i],
                        nb[i]
                    );
                }
            }
            let got = run32(&k("max3_f32"), &na, &nb, &nc);
            for i in 0..m {
                let ab = isa_min_max(na[i].into(), nb[i].into(), 32, 23, true, ieee);
                let want = isa_min_max(ab, nc[i].into(), 32, 23, true, ieee);
                assert_eq!(
                    u64::from(got[i]),
                    want,
                    "{cpu} max3 {:#x} {:#x} {:#x}",
                    na[i],
                    nb[i],
                    nc[i]
                );
            }
            let got = run32(&k("med3_f32"), &na, &nb, &nc);
            for i in 0..m {
                // V_MED3_F32: a NaN source gives MIN3; else the larger of the two sources
                // other than the (first) maximum.
                let (x, y, z) = (u64::from(na[i]), u64::from(nb[i]), u64::from(nc[i]));
                let mm = |p: u64, q: u64, max: bool| isa_min_max(p, q, 32, 23, max, ieee);
                let is_nan = |v: u64| f32::from_bits(v as u32).is_nan();
                let want = if is_nan(x) || is_nan(y) || is_nan(z) {
                    mm(mm(x, y, false), z, false)
                } else {
                    let max3 = mm(mm(x, y, true), z, true);
                    if max3 == x {
                        mm(y, z, true)
                    } else if max3 == y {
                        mm(x, z, true)
                    } else {
                        mm(x, y, true)
                    }
                };
                assert_eq!(
                    u64::from(got[i]),
                    want,
                    "{cpu} med3 {:#x} {:#x} {:#x}",
                    na[i],
                    nb[i],
                    nc[i]
                );
            }
            let got = run32(&k("max_f16"), &ha, &hb, &ha);
            for i in 0..m16 {
                let want = isa_min_max(ha[i].into(), hb[i].into(), 16, 10, true, ieee);
                assert_eq!(
                    u64::from(got[i] & 0xFFFF),
                    want,
                    "{cpu} max_f16 {:#x} {:#x}",
                    ha[i],
                    hb[i]
                );
            }
            let got = run64(&k("min_f64"), &da, &db);
            for i in 0..m64 {
                let want = isa_min_max(da[i], db[i], 64, 52, false, ieee);
                assert_eq!(got[i], want, "{cpu} min_f64 {:#x} {:#x}", da[i], db[i]);
            }
        }
        // DX10_CLAMP: clamp gives +0 for a NaN when set, the NaN when clear.
        let ca = vec![0x7FC0_0000u32, 0x4000_0000, 0xC040_0000, 0x3E80_0000];
        let cb = vec![0x3F80_0000u32, 0x3F00_0000, 0x3F80_0000, 0x3E80_0000];
        for dx10 in [false, true] {
            let got = run32(&format!("clamp_dx10_{}", dx10 as u8), &ca, &cb, &ca);
            let want: Vec<u32> = ca
                .iter()
                .zip(&cb)
                .map(|(&x, &y)| {
                    let s = f(x) + f(y);
                    if s.is_nan() {
                        if dx10 {
                            0
                        } else {
                            s.to_bits()
                        }
                    } else {
                        s.clamp(0.0, 1.0).to_bits()
                    }
                })
                .collect();
            assert_eq!(got, want, "{cpu} clamp_dx10_{}", dx10 as u8);
        }
        // FP_ROUND for f32: results against exact integer rounding. Sources within 2^±24
        // of each other (and products within reach of the addend) so the exact values fit
        // the reference's 128-bit arithmetic; plus overflow and underflow cases.
        let r32: Vec<u32> = vec![
            0x3F80_0000, // 1
            0x3F80_0001, // 1 + ulp
            0x3380_0000, // 2^-24
            0xB380_0000, // -2^-24
            0x3DCC_CCCD, // 0.1
            0xBE99_999A, // -0.3
            0x4040_0000, // 3
            0xC0A0_0000, // -5
            0x3EAA_AAAB, // 1/3
            0x0000_0000, // +0
            0x8000_0000, // -0
            0x4B80_0001, // 2^24 + 2
        ];
        let m = r32.len() * r32.len();
        let mut ra: Vec<u32> = (0..m).map(|i| r32[i / r32.len()]).collect();
        let mut rb: Vec<u32> = (0..m).map(|i| r32[i % r32.len()]).collect();
        let mut rc: Vec<u32> = (0..m).map(|i| r32[(i * 5 + 1) % r32.len()]).collect();
        // Overflow (MAX + MAX, MAX × 2 and their negatives) and tiny products (2^-70 ×
        // 2^-70·1.5, a denormal result with dropped bits).
        for (x, y, z) in [
            (0x7F7F_FFFFu32, 0x7F7F_FFFFu32, 0x7F7F_FFFFu32),
            (0xFF7F_FFFF, 0xFF7F_FFFF, 0xFF7F_FFFF),
            (0x1C80_0000, 0x1CC0_0000, 0x0000_0000),
            (0x9C80_0000, 0x1CC0_0001, 0x8000_0000),
        ] {
            ra.push(x);
            rb.push(y);
            rc.push(z);
        }
        let m = ra.len();
        for rm in 0..4u32 {
            for op in [
                "add_f32",
                "sub_f32",
                "mul_f32",
                "fma_f32",
                "fmac_f32",
                "mad_f32",
                "mad_legacy_f32",
            ] {
                let k = format!("{op}_r{rm}");
                if !kernels.contains(&k) {
                    continue;
                }
                let got = run32(&k, &ra, &rb, &rc);
                for i in 0..m {
                    let (x, y, z) = (f(ra[i]), f(rb[i]), f(rc[i]));
                    let want = directed_ref(op, x, y, z, rm);
                    assert_eq!(got[i], want, "{cpu} {k} {x:e} {y:e} {z:e}");
                }
            }
        }
        // s_setreg selects round toward −inf at run time.
        let got = run32("setreg_r2_add_f32", &ra, &rb, &rc);
        for i in 0..m {
            let want = directed_ref("add_f32", f(ra[i]), f(rb[i]), 0.0, 2);
            assert_eq!(
                got[i], want,
                "{cpu} setreg_r2_add_f32 {:#x} {:#x}",
                ra[i], rb[i]
            );
        }
        // An approximation (the ISA gives v_rcp_f32's precision, 1 ULP, not a rounding) runs
        // under round toward +inf with the default mode's result: 1/3 correctly rounded.
        let out = isa
            .run(
                "rcp_f32_r1",
                64,
                &[
                    vec![0; 4],
                    bytes32(&[3.0f32.to_bits(); 128]),
                    vec![0; 512],
                    vec![0; 256],
                    vec![0; 512],
                ],
            )
            .unwrap_or_else(|e| panic!("{cpu} rcp_f32_r1: {e}"));
        assert_eq!(
            u32s(&out[4])[..64],
            [(1.0f32 / 3.0).to_bits(); 64],
            "{cpu} rcp_f32_r1"
        );
    }
}

// --- s_memtime / s_memrealtime ----------------------------------------------------------------

/// The host's `CLOCK_MONOTONIC` in nanoseconds, read independently of the interpreter.
fn host_monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[test]
fn memtime_and_memrealtime_read_the_device_clock() {
    let n = 128;
    for (cpu, target) in CPUS {
        let isa = Isa::load("mode", cpu, target);
        let before = host_monotonic_ns();
        let out = isa
            .run(
                "clocks",
                n as u32,
                &[
                    vec![0; 4],
                    vec![0; 4],
                    vec![0; 4],
                    vec![0; 4],
                    vec![0; n * 24],
                ],
            )
            .unwrap_or_else(|e| panic!("{cpu}: {e}"));
        let after = host_monotonic_ns();
        let t = u64s(&out[4]);
        let mut last_memtime = 0;
        for lane in 0..n {
            let (real, t1, t2) = (t[3 * lane], t[3 * lane + 1], t[3 * lane + 2]);
            // s_memrealtime ticks the device timestamps' clock (1 GHz, CLOCK_MONOTONIC):
            // within the host's reads around the dispatch.
            assert!(
                before <= real && real <= after,
                "{cpu} lane {lane}: {before} {real} {after}"
            );
            // s_memtime: monotonic within a wave and across the waves run after it.
            assert!(
                t1 <= t2 && before <= t1 && t2 <= after,
                "{cpu} lane {lane}: {t1} {t2}"
            );
            if lane % 64 == 0 {
                assert!(
                    t1 >= last_memtime,
                    "{cpu} wave {}: {t1} < {last_memtime}",
                    lane / 64
                );
                last_memtime = t2;
            }
        }
    }
}

/// `V_LDEXP_F16`: `S0.f16 × 2^S1.i16` (Vega ISA VOP2), rounded once to nearest even; NaN
/// quieted.
fn ldexp16_ref(x: u16, n: u32) -> u16 {
    let h = half::f16::from_bits(x);
    if h.is_nan() {
        return x | 0x200;
    }
    // Beyond ±64 every finite f16 overflows or rounds to zero either way.
    let n = i32::from(n as u16 as i16).clamp(-64, 64);
    half::f16::from_f64(h.to_f64() * 2f64.powi(n)).to_bits()
}

#[test]
fn ldexp_f16_matches_the_isa() {
    let xs: [u16; 10] = [
        0x3C00, 0xBC00, 0x0001, 0x83FF, 0x7BFF, 0x7C00, 0xFC00, 0x7C01, 0x8000, 0x3555,
    ];
    let ns: [u32; 10] = [
        0,
        1,
        u32::MAX,
        15,
        0xFFFF_FFF1,
        30,
        0xFFFF_FFE7,
        0x7FFF,
        0xFFFF_8000,
        10,
    ];
    let n = xs.len() * ns.len();
    let a: Vec<u32> = (0..n).map(|i| u32::from(xs[i / ns.len()])).collect();
    let b: Vec<u32> = (0..n).map(|i| ns[i % ns.len()]).collect();
    for (cpu, target) in CPUS {
        let isa = Isa::load("fpmode", cpu, target);
        for k in ["ldexp_f16", "ldexp_f16_clamp"] {
            let out = isa
                .run(
                    k,
                    n as u32,
                    &[
                        vec![0; 4],
                        bytes32(&a),
                        bytes32(&b),
                        vec![0; n * 4],
                        vec![0; n * 4],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            for i in 0..n {
                let r = ldexp16_ref(a[i] as u16, b[i]);
                let want = if k.ends_with("clamp") { clamp16(r) } else { r };
                assert_eq!(
                    got[i] & 0xFFFF,
                    u32::from(want),
                    "{cpu} {k} {:#x} {}",
                    a[i],
                    b[i] as i32
                );
            }
        }
    }
}

#[test]
fn packed_math_under_the_mode_matches_the_isa() {
    // f16 pairs: denormals, normals, signaling and quiet NaNs, signed zeros in both halves.
    let h: [u32; 8] = [
        0x0001, 0x83FF, 0x3C00, 0x7C01, 0x7E00, 0x8000, 0x0000, 0x0400,
    ];
    let n = h.len() * h.len();
    let a: Vec<u32> = (0..n)
        .map(|i| h[i / h.len()] | h[i % h.len()] << 16)
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|i| h[i % h.len()] | h[(i + 3) % h.len()] << 16)
        .collect();
    let half = |x: u32| half::f16::from_bits(x as u16);
    let ftz16 = |x: u32, on: bool| if on { ftz(x.into(), 16, 10) as u32 } else { x };
    for (cpu, target) in CPUS {
        let isa = Isa::load("fpmode", cpu, target);
        let run32 = |k: &str, a: &[u32], b: &[u32]| -> Vec<u32> {
            let m = a.len();
            let out = isa
                .run(
                    k,
                    m as u32,
                    &[
                        vec![0; 4],
                        bytes32(a),
                        bytes32(b),
                        vec![0; m * 4],
                        vec![0; m * 4],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            u32s(&out[4])
        };
        for d in [0u32, 3] {
            let k = format!("pk_add_f16_d{d}");
            let got = run32(&k, &a, &b);
            for i in 0..n {
                let lane = |s: u32| {
                    let (x, y) = (
                        ftz16(a[i] >> s & 0xFFFF, d == 0),
                        ftz16(b[i] >> s & 0xFFFF, d == 0),
                    );
                    let r = half(x) + half(y);
                    // A NaN source gives itself quieted (f16 arithmetic's rule here).
                    let r = if half(x).is_nan() {
                        x | 0x200
                    } else if half(y).is_nan() {
                        y | 0x200
                    } else {
                        u32::from(r.to_bits())
                    };
                    ftz16(r, d == 0)
                };
                assert_eq!(
                    got[i],
                    lane(0) | lane(16) << 16,
                    "{cpu} {k} {:#x} {:#x}",
                    a[i],
                    b[i]
                );
            }
        }
        for ieee in [false, true] {
            let k = format!("pk_max_f16_ieee{}", ieee as u8);
            let got = run32(&k, &a, &b);
            for i in 0..n {
                let lane = |s: u32| {
                    isa_min_max(
                        (a[i] >> s & 0xFFFF).into(),
                        (b[i] >> s & 0xFFFF).into(),
                        16,
                        10,
                        true,
                        ieee,
                    ) as u32
                };
                assert_eq!(
                    got[i],
                    lane(0) | lane(16) << 16,
                    "{cpu} {k} {:#x} {:#x}",
                    a[i],
                    b[i]
                );
            }
        }
        if !matches!(cpu, "gfx90a" | "gfx942") {
            continue;
        }
        let v: [u32; 6] = [
            0x0000_0001,
            0x3F80_0000,
            0x0080_0000,
            0x3F00_0000,
            0x8040_0000,
            0x4000_0000,
        ];
        let m = v.len() * v.len();
        let x: Vec<u64> = (0..m)
            .map(|i| u64::from(v[i / v.len()]) | u64::from(v[i % v.len()]) << 32)
            .collect();
        let y: Vec<u64> = (0..m)
            .map(|i| u64::from(v[i % v.len()]) | u64::from(v[(i + 1) % v.len()]) << 32)
            .collect();
        for d in [0u32, 3] {
            let k = format!("pk_mul_f32_d{d}");
            let out = isa
                .run(
                    &k,
                    m as u32,
                    &[
                        vec![0; 4],
                        bytes64(&x),
                        bytes64(&y),
                        vec![0; 4],
                        vec![0; m * 8],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u64s(&out[4]);
            for i in 0..m {
                let lane = |s: u32| {
                    let fl = |z: u64| if d == 0 { ftz(z, 32, 23) } else { z };
                    let (p, q) = (fl(x[i] >> s & 0xFFFF_FFFF), fl(y[i] >> s & 0xFFFF_FFFF));
                    fl(u64::from(
                        (f32::from_bits(p as u32) * f32::from_bits(q as u32)).to_bits(),
                    ))
                };
                assert_eq!(
                    got[i],
                    lane(0) | lane(32) << 32,
                    "{cpu} {k} {:#x} {:#x}",
                    x[i],
                    y[i]
                );
            }
        }
    }
}

// --- FP_ROUND and MODE's other effects (the `round` family) -------------------------------------
//
// The references are the host's own IEEE arithmetic under each rounding mode, independent of
// the interpreter: the x86-64 SSE unit (and glibc's `fma`) round by MXCSR, which
// `fesetround` sets; f16 results go through F16C's `vcvtps2ph`, whose immediate selects the
// rounding. Rounding an exact (or already directed-rounded) f64 to f32 and then to f16 in
// the same direction is the same as rounding it to f16 once: each grid contains the next.

mod host_rounding {
    use std::hint::black_box;

    extern "C" {
        /// C99 `fesetround` (glibc's libm): sets the calling thread's rounding mode.
        fn fesetround(mode: i32) -> i32;
    }

    /// `<fenv.h>` on x86-64 for ISA FP_ROUND values 0 (nearest), 1 (+inf), 2 (-inf), 3
    /// (zero).
    const FE: [i32; 4] = [0, 0x800, 0x400, 0xC00];

    /// `f` run with the thread's rounding mode set to ISA FP_ROUND value `rm`, then reset
    /// to round to nearest.
    pub fn with_mode<T>(rm: u32, f: impl FnOnce() -> T) -> T {
        // SAFETY: fesetround changes only this thread's floating-point control state
        // (MXCSR and the x87 control word); every operation after it is meant to see it, and
        // the mode is reset before returning. The inputs and results pass through
        // black_box so the compiler neither folds them nor moves them across the calls.
        unsafe { assert_eq!(fesetround(FE[rm as usize]), 0) };
        let r = black_box(f());
        // SAFETY: as above; back to the default mode.
        unsafe { assert_eq!(fesetround(FE[0]), 0) };
        r
    }

    /// f64 `a + b`, `a × b` or `a × b + c` (`op` "add", "mul", "fma") under FP_ROUND `rm`.
    pub fn f64_op(op: &str, a: f64, b: f64, c: f64, rm: u32) -> f64 {
        let (a, b, c) = (black_box(a), black_box(b), black_box(c));
        with_mode(rm, || match op {
            "add" => black_box(a) + black_box(b),
            "sub" => black_box(a) - black_box(b),
            "mul" => black_box(a) * black_box(b),
            _ => black_box(a).mul_add(black_box(b), black_box(c)),
        })
    }

    /// f32 `a + b`, `a × b` or `a × b + c` (`op` "add", "mul", "fma": the SSE unit, and
    /// glibc's `fmaf`, under MXCSR) under FP_ROUND `rm`.
    pub fn f32_op(op: &str, a: f32, b: f32, c: f32, rm: u32) -> f32 {
        let (a, b, c) = (black_box(a), black_box(b), black_box(c));
        with_mode(rm, || match op {
            "add" => black_box(a) + black_box(b),
            "mul" => black_box(a) * black_box(b),
            _ => black_box(a).mul_add(black_box(b), black_box(c)),
        })
    }

    /// f64 `x` rounded to f32 by FP_ROUND `rm` (SSE `cvtsd2ss` under MXCSR).
    pub fn f32_of(x: f64, rm: u32) -> f32 {
        with_mode(rm, || black_box(black_box(x) as f32))
    }

    /// Integer `i` rounded to f32 by FP_ROUND `rm` (SSE `cvtsi2ss` under MXCSR).
    pub fn f32_of_int(i: i64, rm: u32) -> f32 {
        with_mode(rm, || black_box(black_box(i) as f32))
    }

    extern "C" {
        /// C99 `ldexp` (glibc's libm): `x × 2^n`, rounded by the current mode.
        fn ldexp(x: f64, n: i32) -> f64;
    }

    /// f64 `x × 2^n` rounded by FP_ROUND `rm` (glibc's `ldexp`).
    pub fn ldexp64(x: f64, n: i32, rm: u32) -> f64 {
        // SAFETY: ldexp is a pure libm function of two numbers.
        with_mode(rm, || unsafe { ldexp(black_box(x), black_box(n)) })
    }

    /// f64 `x` rounded to f16 bits by FP_ROUND `rm` (to f32 under the mode, then F16C).
    pub fn f16_of(x: f64, rm: u32) -> u16 {
        assert!(
            std::arch::is_x86_feature_detected!("f16c"),
            "the f16 reference needs F16C"
        );
        let s = with_mode(rm, || black_box(black_box(x) as f32));
        // SAFETY: F16C is present (checked above).
        unsafe { cvt_ph(s, rm) }
    }

    #[target_feature(enable = "f16c")]
    unsafe fn cvt_ph(x: f32, rm: u32) -> u16 {
        use std::arch::x86_64::{_mm_cvtps_ph, _mm_extract_epi16, _mm_set_ss};
        let v = _mm_set_ss(x);
        // vcvtps2ph imm8 [1:0]: 0 nearest, 1 down, 2 up, 3 toward zero (bit 2 clear: the
        // immediate, not MXCSR).
        let h = match rm {
            1 => _mm_cvtps_ph::<2>(v),
            2 => _mm_cvtps_ph::<1>(v),
            3 => _mm_cvtps_ph::<3>(v),
            _ => _mm_cvtps_ph::<0>(v),
        };
        _mm_extract_epi16::<0>(h) as u16
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn directed_rounding_of_f64_and_f16() {
    use host_rounding::{f16_of, f64_op};
    let d = |x: f64| x.to_bits();
    let v64: Vec<u64> = vec![
        d(1.0),
        d(1.0) + 1, // 1 + ulp
        d(2f64.powi(-60)),
        d(-(2f64.powi(-60))),
        d(0.1),
        d(-0.3),
        d(1.0 / 3.0),
        d(3.0),
        d(-5.0),
        0,
        1 << 63,
        1,                     // smallest denormal
        0x8000_0000_0000_0003, // -3 × smallest denormal
        d(f64::MIN_POSITIVE),
        d(f64::MAX),
        d(-f64::MAX),
        d(1e300),
        d(-1e-300),
        d(f64::INFINITY),
        d(1.5),
    ];
    let n = v64.len() * v64.len();
    let a64: Vec<u64> = (0..n).map(|i| v64[i / v64.len()]).collect();
    let b64: Vec<u64> = (0..n).map(|i| v64[i % v64.len()]).collect();
    let c64: Vec<u64> = (0..n).map(|i| v64[(i * 7 + 3) % v64.len()]).collect();
    // f16 (low half of each dword): 1, 1 + ulp, the smallest denormal and its negative,
    // the smallest normal, the largest finite value and its negative, 2^-11, 0.1, −0.3,
    // 1/3, 3, ±0, ∞, 1.5, 2048.
    let v16: Vec<u32> = vec![
        0x3C00, 0x3C01, 0x0001, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x1000, 0x2E66, 0xB4CD, 0x3555,
        0x4200, 0x0000, 0x8000, 0x7C00, 0x3E00, 0x6800,
    ];
    let n16 = v16.len() * v16.len();
    let a16: Vec<u32> = (0..n16).map(|i| v16[i / v16.len()]).collect();
    let b16: Vec<u32> = (0..n16).map(|i| v16[i % v16.len()]).collect();
    let c16: Vec<u32> = (0..n16).map(|i| v16[(i * 7 + 3) % v16.len()]).collect();
    let h = |x: u32| half::f16::from_bits(x as u16).to_f64();
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let kernels = isa.kernels();
        let run = |k: &str, a: Vec<u8>, b: Vec<u8>, c: Vec<u8>, width: usize, m: usize| {
            isa.run(k, m as u32, &[vec![0; 4], a, b, c, vec![0; m * width]])
                .map(|out| out[4].clone())
        };
        for rm in 0..4u32 {
            for op in ["add", "mul", "fma", "fmac"] {
                let k = format!("{op}_f64_r{rm}");
                if !kernels.contains(&k) {
                    continue;
                }
                let got = u64s(
                    &run(&k, bytes64(&a64), bytes64(&b64), bytes64(&c64), 8, n)
                        .unwrap_or_else(|e| panic!("{cpu} {k}: {e}")),
                );
                for i in 0..n {
                    let (x, y, z) = (
                        f64::from_bits(a64[i]),
                        f64::from_bits(b64[i]),
                        f64::from_bits(c64[i]),
                    );
                    let want = f64_op(if op == "fmac" { "fma" } else { op }, x, y, z, rm);
                    assert_eq!(got[i], want.to_bits(), "{cpu} {k} {x:e} {y:e} {z:e}");
                }
            }
            for op in ["add", "sub", "mul", "fma"] {
                let k = format!("{op}_f16_r{rm}");
                let got = u32s(
                    &run(&k, bytes32(&a16), bytes32(&b16), bytes32(&c16), 4, n16)
                        .unwrap_or_else(|e| panic!("{cpu} {k}: {e}")),
                );
                for i in 0..n16 {
                    let (x, y, z) = (h(a16[i]), h(b16[i]), h(c16[i]));
                    // Sums, differences and products of f16 values are exact in f64; the
                    // f64 fma is rounded once in the mode's direction (and skipped under
                    // round to nearest, where a second rounding to f16 could differ).
                    if op == "fma" && rm == 0 {
                        continue;
                    }
                    let exact = f64_op(op, x, y, z, rm);
                    let want = if rm == 0 {
                        half::f16::from_f64(exact).to_bits()
                    } else {
                        f16_of(exact, rm)
                    };
                    assert_eq!(
                        got[i] as u16, want,
                        "{cpu} {k} {:#x} {:#x} {:#x} ({x:e}, {y:e}, {z:e})",
                        a16[i], b16[i], c16[i]
                    );
                }
            }
        }
        // The unfused f16 multiply-adds: the product rounded to f16 and flushed, plus the
        // addend, rounded and flushed (f16 denormals flushed whatever FP_DENORM says), both
        // roundings by FP_ROUND [3:2].
        let fl16 = |x: u16| ftz(x.into(), 16, 10) as u16;
        let round16 = |x: f64, rm: u32| {
            if rm == 0 {
                half::f16::from_f64(x).to_bits()
            } else {
                f16_of(x, rm)
            }
        };
        for rm in 0..4u32 {
            for op in ["mad", "mac", "madak", "madmk"] {
                let k = format!("{op}_f16_r{rm}");
                let got = u32s(
                    &run(&k, bytes32(&a16), bytes32(&b16), bytes32(&c16), 4, n16)
                        .unwrap_or_else(|e| panic!("{cpu} {k}: {e}")),
                );
                for i in 0..n16 {
                    let (x, y, z) = match op {
                        "madak" => (a16[i], b16[i], 0x3C01),
                        "madmk" => (a16[i], 0x3555, b16[i]),
                        _ => (a16[i], b16[i], c16[i]),
                    };
                    let v = |w: u32| h(u32::from(fl16(w as u16)));
                    let p = fl16(round16(f64_op("mul", v(x), v(y), 0.0, rm), rm));
                    let sum = f64_op("add", h(u32::from(p)), v(z), 0.0, rm);
                    let want = fl16(round16(sum, rm));
                    let g = got[i] as u16;
                    assert!(
                        g == want || g & 0x7FFF > 0x7C00 && want & 0x7FFF > 0x7C00,
                        "{cpu} {k} {x:#x} {y:#x} {z:#x}: gave {g:#x}, want {want:#x}"
                    );
                }
            }
        }
        // s_setreg selects round toward zero for f64 at run time.
        let got = u64s(
            &run(
                "setreg_r3_mul_f64",
                bytes64(&a64),
                bytes64(&b64),
                bytes64(&c64),
                8,
                n,
            )
            .unwrap_or_else(|e| panic!("{cpu} setreg_r3_mul_f64: {e}")),
        );
        for i in 0..n {
            let (x, y) = (f64::from_bits(a64[i]), f64::from_bits(b64[i]));
            let want = f64_op("mul", x, y, 0.0, 3);
            assert_eq!(
                got[i],
                want.to_bits(),
                "{cpu} setreg_r3_mul_f64 {x:e} {y:e}"
            );
        }
        // An approximation (the ISA gives its precision, 1 ULP, not a rounding) runs under a
        // directed mode with the default mode's result: here the correctly rounded 1/x.
        let got = u64s(
            &run(
                "rcp_f64_r3",
                bytes64(&a64),
                bytes64(&b64),
                bytes64(&c64),
                8,
                n,
            )
            .unwrap_or_else(|e| panic!("{cpu} rcp_f64_r3: {e}")),
        );
        for i in 0..n {
            let x = f64::from_bits(a64[i]);
            let want = (1.0 / x).to_bits();
            assert!(
                same_or_nan(got[i], want, 64, 52),
                "{cpu} rcp_f64_r3 {x:e}: gave {:#x}, want {want:#x}",
                got[i]
            );
        }
    }
}

/// `got` equals `want`, or both are NaNs (whose payloads the host and the ISA choose
/// differently) of format `bits`/`frac`.
fn same_or_nan(got: u64, want: u64, bits: u32, frac: u32) -> bool {
    let nan = |x: u64| {
        let exp = ((1u64 << (bits - 1)) - 1) & !((1u64 << frac) - 1);
        x & exp == exp && x & ((1u64 << frac) - 1) != 0
    };
    got == want || nan(got) && nan(want)
}

/// Packed math (`v_pk_{add,mul,fma}_f16`, `v_pk_fmac_f16`, `v_pk_{add,mul,fma}_f32`) and the
/// fused mixed-precision `v_fma_mix*` under every FP_ROUND and FP_DENORM of their precision
/// (the other precision's fields set differently, so reading the wrong field shows), each half
/// against the host's IEEE arithmetic under `fesetround` (f16 through F16C).
#[test]
#[cfg(target_arch = "x86_64")]
fn directed_rounding_of_packed_and_mixed() {
    use host_rounding::{f16_of, f32_op, f64_op};
    let v16: Vec<u16> = vec![
        0x3C00, 0x3C01, 0x0001, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x1000, 0x9000, 0x2E66, 0xB4CD,
        0x3555, 0x4200, 0x0000, 0x8000, 0x7C00, 0x3E00, 0x6800, 0x03FF, 0x0200,
    ];
    let f = |x: f32| x.to_bits();
    let v32: Vec<u32> = vec![
        f(1.0),
        0x3F80_0001,
        0x3380_0000, // 2^-24: half an ulp of 1
        0xB380_0000,
        0x3080_0000,
        f(0.1),
        f(-0.3),
        f(1.0 / 3.0),
        f(3.0),
        f(-5.0),
        0,
        0x8000_0000,
        1,
        0x8000_0003,
        0x0040_0000,
        0x0080_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        f(1e30),
        f(-1e-30),
        0x7F80_0000,
        f(1.5),
        f(65520.0),  // halfway between the largest f16 and 2^16
        0x3300_0000, // 2^-25: half the smallest f16 denormal
        0x3880_0000, // 2^-14: the smallest f16 normal
    ];
    let h64 = |x: u16| half::f16::from_bits(x).to_f64();
    let f16_round = |x: f64, rm: u32| {
        if rm == 0 {
            half::f16::from_f64(x).to_bits()
        } else {
            f16_of(x, rm)
        }
    };
    let fl16 = |x: u16, flush: bool| {
        if flush {
            ftz(x.into(), 16, 10) as u16
        } else {
            x
        }
    };
    let fl32 = |x: u32, flush: bool| {
        if flush {
            ftz(x.into(), 32, 23) as u32
        } else {
            x
        }
    };
    // Lane i: half/dword 0 and 1 of each source cover every pair of values.
    let (n16, n32) = (v16.len(), v32.len());
    let pick16 = |i: usize, k: usize| -> u32 {
        let n = n16;
        let (lo, hi) = match k {
            0 => (v16[i / n], v16[i % n]),
            1 => (v16[i % n], v16[i / n]),
            _ => (v16[(i * 7 + 3) % n], v16[(i * 5 + 1) % n]),
        };
        u32::from(lo) | u32::from(hi) << 16
    };
    let pick32 = |i: usize, k: usize| -> u64 {
        let n = n32;
        let (lo, hi) = match k {
            0 => (v32[i / n], v32[i % n]),
            1 => (v32[i % n], v32[i / n]),
            _ => (v32[(i * 7 + 3) % n], v32[(i * 5 + 1) % n]),
        };
        u64::from(lo) | u64::from(hi) << 32
    };
    let m16 = n16 * n16;
    let s16: Vec<Vec<u32>> = (0..3)
        .map(|k| (0..m16).map(|i| pick16(i, k)).collect())
        .collect();
    let m32 = n32 * n32;
    let s64: Vec<Vec<u64>> = (0..3)
        .map(|k| (0..m32).map(|i| pick32(i, k)).collect())
        .collect();
    // f32 sources for the mix kernels: the low dwords of the packed f32 sources.
    let s32: Vec<Vec<u32>> = s64
        .iter()
        .map(|v| v.iter().map(|&x| x as u32).collect())
        .collect();
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let kernels = isa.kernels();
        let run = |k: &str, srcs: [Vec<u8>; 3], width: usize, m: usize| {
            let [a, b, c] = srcs;
            isa.run(k, m as u32, &[vec![0; 4], a, b, c, vec![0; m * width]])
                .map(|out| out[4].clone())
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"))
        };
        for rm in 0..4u32 {
            for d in 0..4u32 {
                let (fin, fout) = (d & 1 == 0, d & 2 == 0);
                for op in ["add", "mul", "fma", "fmac", "max"] {
                    let k = format!("pk_{op}_f16_r{rm}_d{d}");
                    if !kernels.contains(&k) {
                        continue;
                    }
                    let src = [0, 1, 2].map(|j| bytes32(&s16[j]));
                    let got = u32s(&run(&k, src, 4, m16));
                    for i in 0..m16 {
                        for half in 0..2 {
                            let x = |j: usize| fl16((s16[j][i] >> (16 * half)) as u16, fin);
                            // The f64 fma rounds once in the mode's direction; under round to
                            // nearest a second rounding to f16 could differ: not checked.
                            if op.starts_with("fma") && rm == 0 {
                                continue;
                            }
                            let hop = if op == "fmac" { "fma" } else { op };
                            let want = if op == "max" {
                                // The larger value, +0 above −0 (no NaN among the inputs);
                                // the same under every rounding mode.
                                let (p, q) = (h64(x(0)), h64(x(1)));
                                let m = if p > q || p == q && x(1) == 0x8000 {
                                    x(0)
                                } else {
                                    x(1)
                                };
                                fl16(m, fout)
                            } else {
                                let exact = f64_op(hop, h64(x(0)), h64(x(1)), h64(x(2)), rm);
                                fl16(f16_round(exact, rm), fout)
                            };
                            let g = (got[i] >> (16 * half)) as u16;
                            assert!(
                                same_or_nan(g.into(), want.into(), 16, 10),
                                "{cpu} {k} half {half}: {:#x} {:#x} {:#x} gave {g:#x}, want {want:#x}",
                                x(0),
                                x(1),
                                x(2)
                            );
                            checked += 1;
                        }
                    }
                }
                for op in ["add", "mul", "fma"] {
                    let k = format!("pk_{op}_f32_r{rm}_d{d}");
                    if !kernels.contains(&k) {
                        continue;
                    }
                    let src = [0, 1, 2].map(|j| bytes64(&s64[j]));
                    let got = u64s(&run(&k, src, 8, m32));
                    for i in 0..m32 {
                        for half in 0..2 {
                            let x = |j: usize| {
                                f32::from_bits(fl32((s64[j][i] >> (32 * half)) as u32, fin))
                            };
                            let want = fl32(f32_op(op, x(0), x(1), x(2), rm).to_bits(), fout);
                            let g = (got[i] >> (32 * half)) as u32;
                            assert!(
                                same_or_nan(g.into(), want.into(), 32, 23),
                                "{cpu} {k} dword {half}: {:e} {:e} {:e} gave {g:#x}, want {want:#x}",
                                x(0),
                                x(1),
                                x(2)
                            );
                            checked += 1;
                        }
                    }
                }
            }
            for d in [0u32, 3] {
                let fl = d == 0;
                for k in ["mix_f32_h", "mix_f32_s", "mixlo_f16_s", "mixhi_f16_h"] {
                    let kn = format!("{k}_r{rm}_d{d}");
                    if !kernels.contains(&kn) {
                        continue;
                    }
                    let f16_src = k.ends_with("_h");
                    let (m, src) = if f16_src {
                        (m16, [0, 1, 2].map(|j| bytes32(&s16[j])))
                    } else {
                        (m32, [0, 1, 2].map(|j| bytes32(&s32[j])))
                    };
                    let got = u32s(&run(&kn, src, 4, m));
                    for i in 0..m {
                        // Each source as f64 (exact), flushed by its own precision's mode.
                        let x = |j: usize| {
                            if f16_src {
                                h64(fl16(s16[j][i] as u16, fl))
                            } else {
                                f64::from(f32::from_bits(fl32(s32[j][i], fl)))
                            }
                        };
                        let want = if k.starts_with("mix_f32") {
                            // f16 and f32 sources are exact in f32.
                            let r = f32_op("fma", x(0) as f32, x(1) as f32, x(2) as f32, rm);
                            fl32(r.to_bits(), fl)
                        } else {
                            if rm == 0 {
                                continue;
                            }
                            let exact = f64_op("fma", x(0), x(1), x(2), rm);
                            let h = u32::from(fl16(f16_of(exact, rm), fl));
                            if k.starts_with("mixhi") {
                                h << 16
                            } else {
                                h
                            }
                        };
                        let (bits, frac, shift) = match k {
                            "mixhi_f16_h" => (16, 10, 16),
                            "mixlo_f16_s" => (16, 10, 0),
                            _ => (32, 23, 0),
                        };
                        assert!(
                            same_or_nan(
                                u64::from(got[i] >> shift),
                                u64::from(want >> shift),
                                bits,
                                frac
                            ) && (bits == 32 || got[i] & !(0xFFFF << shift) == 0),
                            "{cpu} {kn}: {:e} {:e} {:e} gave {:#x}, want {want:#x}",
                            x(0),
                            x(1),
                            x(2),
                            got[i]
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 100_000, "{checked} results checked");
}

/// The conversions that can be inexact (`v_cvt_f32_f64`, `v_cvt_f32_i32`, `v_cvt_f32_u32`,
/// `v_cvt_f16_f32`, `v_cvt_f16_u16`, `v_cvt_f16_i16`), `v_ldexp_f32/f16/f64` and
/// `v_div_fmas_f32/f64` under every FP_ROUND of their result's precision (the other field
/// set differently) and with denormals flushed or kept, against the host's conversions,
/// `ldexp` and `fma` under `fesetround` (f16 through F16C).
#[test]
#[cfg(target_arch = "x86_64")]
fn directed_rounding_of_conversions_ldexp_and_div_fmas() {
    use host_rounding::{f16_of, f32_of, f32_of_int, f64_op, ldexp64};
    let p2 = |n: i32| 2f64.powi(n);
    let f64s: Vec<f64> = vec![
        1.0,
        1.0 + p2(-24), // a tie between two f32
        1.0 + p2(-24) + p2(-52),
        1.0 + p2(-25),
        -(1.0 + p2(-24)),
        f64::from(f32::MAX),
        f64::from(f32::MAX) + p2(103), // halfway to 2^128
        1e39,
        -1e39,
        p2(-149),
        p2(-150),
        3.0 * p2(-151),
        -p2(-150),
        p2(-126) * (1.0 - p2(-24)),
        f64::from_bits(1),
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NAN,
        0.1,
        -0.3,
        1.0 / 3.0,
    ];
    let i32s: Vec<u32> = vec![
        0,
        1,
        u32::MAX, // -1, or 2^32 - 1
        16_777_217,
        16_777_219,
        (-16_777_217i32) as u32,
        i32::MAX as u32,
        i32::MIN as u32,
        0x7FFF_FFC0,
        123_456_789,
        (-123_456_789i32) as u32,
        0x8000_0001,
        0xFFFF_FF80,
        0x0100_0001,
    ];
    let f = |x: f32| x.to_bits();
    let f32s: Vec<u32> = vec![
        f(1.0),
        0x3F80_0001,
        0x3F80_1000, // 1 + 2^-11: a tie between two f16
        0x3F80_1001,
        0xBF80_1000,
        f(65504.0),
        f(65520.0),
        f(65519.99),
        f(-65520.0),
        0x3300_0000, // 2^-25: half the smallest f16 denormal
        0x3340_0000,
        0xB300_0000,
        0x3880_0000,
        0x387F_E000, // half way between the largest f16 denormal and 2^-14
        f(1e-10),
        f(1e10),
        1,
        0x8000_0003,
        0x0080_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0,
        0x8000_0000,
        0x7F80_0000,
        0x7FC0_0000,
        f(0.1),
        f(-0.3),
        f(1.0 / 3.0),
        f(3.0),
    ];
    let u16s: Vec<u32> = vec![
        0, 1, 2049, 2051, 4097, 65535, 65519, 65520, 32767, 0x8000, 0xF7FF, 0x8001, 0xFFFF,
    ];
    // ldexp: every value with every exponent.
    let n32: Vec<i32> = vec![
        0,
        1,
        -1,
        -126,
        -127,
        -149,
        -150,
        -151,
        -148,
        127,
        128,
        254,
        -300,
        300,
        i32::MIN,
        i32::MAX,
        -24,
        -23,
    ];
    let n16: Vec<i32> = vec![
        0, 1, -1, -14, -15, -24, -25, -26, 15, 16, 30, -40, 40, 32767, -32768,
    ];
    let n64: Vec<i32> = vec![
        0,
        1,
        -1,
        -1022,
        -1023,
        -1074,
        -1075,
        -1076,
        1023,
        1024,
        2046,
        -2100,
        2100,
        i32::MIN,
        i32::MAX,
        -52,
        -53,
    ];
    let v16: Vec<u32> = vec![
        0x3C00, 0x3C01, 0x0001, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x3E00, 0x0000, 0x8000, 0x7C00,
        0x7E00, 0x03FF, 0x3555, 0x4200,
    ];
    let x64s: Vec<f64> = vec![
        1.0,
        1.5,
        1.0 + f64::EPSILON,
        1.0 + 3.0 * f64::EPSILON,
        -3.0,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::from_bits(0x800F_FFFF_FFFF_FFFF),
        f64::MAX,
        -f64::MAX,
        0.0,
        -0.0,
        f64::INFINITY,
        0.1,
        1.0 / 3.0,
    ];
    let pairs = |xs: usize, ns: usize| (0..xs * ns).map(move |i| (i / ns, i % ns));
    let ftz32 = |x: u32, on: bool| if on { ftz(x.into(), 32, 23) as u32 } else { x };
    let ftz16 = |x: u16, on: bool| if on { ftz(x.into(), 16, 10) as u16 } else { x };
    let ftz64 = |x: u64, on: bool| if on { ftz(x, 64, 52) } else { x };
    let h64 = |x: u16| half::f16::from_bits(x).to_f64();
    let to_f16 = |x: f64, rm: u32| {
        if rm == 0 {
            half::f16::from_f64(x).to_bits()
        } else {
            f16_of(x, rm)
        }
    };
    // div_fmas: values in [2^-500, 2^500] (so the unscaled f64 fma neither overflows nor
    // underflows), every pair, S2 and VCC varying with the lane.
    let d32: Vec<u32> = vec![
        f(1.0),
        0x3F80_0001,
        f(3.0),
        f(1.0 / 3.0),
        f(-0.1),
        0x0080_0000,
        0x0000_0003,
        0x7F7F_FFFF,
        0xFF00_0001,
        0x2000_0000,
        0x5F80_0000,
        0,
        0x8000_0000,
        f(1.5),
    ];
    let d64: Vec<f64> = vec![
        1.0,
        1.0 + f64::EPSILON,
        3.0,
        1.0 / 3.0,
        -0.1,
        p2(500),
        -1.5 * p2(500),
        p2(-500),
        p2(-470) * (1.0 + f64::EPSILON),
        p2(-450),
        p2(450) * 1.75,
        0.0,
        -0.0,
        1.5,
    ];
    let mut checked = 0usize;
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let run = |k: &str, bufs: [Vec<u8>; 4], width: usize, m: usize| {
            // An unused source (empty) is zeros the kernel may still load.
            let [p0, p1, p2, p3] = bufs.map(|b| if b.is_empty() { vec![0; m * 8] } else { b });
            let out = isa
                .run(k, m as u32, &[p0, p1, p2, p3, vec![0; m * width]])
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            out[4].clone()
        };
        for rm in 0..4u32 {
            for d in [0u32, 3] {
                let fl = d == 0;
                let k = |op: &str| format!("{op}_r{rm}_d{d}");
                let mut check = |k: &str, got: u64, want: u64, bits: u32, frac: u32, what: &str| {
                    assert!(
                        same_or_nan(got, want, bits, frac),
                        "{cpu} {k} {what}: gave {got:#x}, want {want:#x}"
                    );
                    checked += 1;
                };
                // v_cvt_f32_f64.
                let src: Vec<u64> = f64s.iter().map(|x| x.to_bits()).collect();
                let got = u32s(&run(
                    &k("cvt_f32_f64"),
                    [vec![0; 4], bytes64(&src), vec![], vec![]],
                    4,
                    src.len(),
                ));
                for (i, &x) in src.iter().enumerate() {
                    let x = f64::from_bits(ftz64(x, fl));
                    let want = ftz32(f32_of(x, rm).to_bits(), fl);
                    check(
                        &k("cvt_f32_f64"),
                        got[i].into(),
                        want.into(),
                        32,
                        23,
                        &format!("{x:e}"),
                    );
                }
                // v_cvt_f32_i32 / _u32.
                for (op, signed) in [("cvt_f32_i32", true), ("cvt_f32_u32", false)] {
                    let got = u32s(&run(
                        &k(op),
                        [vec![0; 4], bytes32(&i32s), vec![], vec![]],
                        4,
                        i32s.len(),
                    ));
                    for (i, &x) in i32s.iter().enumerate() {
                        let v = if signed {
                            i64::from(x as i32)
                        } else {
                            i64::from(x)
                        };
                        let want = f32_of_int(v, rm).to_bits();
                        check(&k(op), got[i].into(), want.into(), 32, 23, &format!("{v}"));
                    }
                }
                // v_cvt_f16_f32.
                let got = u32s(&run(
                    &k("cvt_f16_f32"),
                    [vec![0; 4], bytes32(&f32s), vec![], vec![]],
                    4,
                    f32s.len(),
                ));
                for (i, &x) in f32s.iter().enumerate() {
                    let x = f64::from(f32::from_bits(ftz32(x, fl)));
                    let want = ftz16(to_f16(x, rm), fl);
                    check(
                        &k("cvt_f16_f32"),
                        (got[i] & 0xFFFF).into(),
                        want.into(),
                        16,
                        10,
                        &format!("{x:e}"),
                    );
                }
                // v_cvt_f16_u16 / _i16.
                for (op, signed) in [("cvt_f16_u16", false), ("cvt_f16_i16", true)] {
                    let got = u32s(&run(
                        &k(op),
                        [vec![0; 4], bytes32(&u16s), vec![], vec![]],
                        4,
                        u16s.len(),
                    ));
                    for (i, &x) in u16s.iter().enumerate() {
                        let v = if signed {
                            f64::from(x as u16 as i16)
                        } else {
                            f64::from(x as u16)
                        };
                        let want = to_f16(v, rm);
                        check(
                            &k(op),
                            (got[i] & 0xFFFF).into(),
                            want.into(),
                            16,
                            10,
                            &format!("{v}"),
                        );
                    }
                }
                // v_ldexp_f32.
                let (xs, ns): (Vec<u32>, Vec<u32>) = pairs(f32s.len(), n32.len())
                    .map(|(a, b)| (f32s[a], n32[b] as u32))
                    .unzip();
                let got = u32s(&run(
                    &k("ldexp_f32"),
                    [vec![0; 4], bytes32(&xs), bytes32(&ns), vec![]],
                    4,
                    xs.len(),
                ));
                for i in 0..xs.len() {
                    let x = f64::from(f32::from_bits(ftz32(xs[i], fl)));
                    let n = (ns[i] as i32).clamp(-400, 400);
                    let want = ftz32(f32_of(x * p2(n), rm).to_bits(), fl);
                    check(
                        &k("ldexp_f32"),
                        got[i].into(),
                        want.into(),
                        32,
                        23,
                        &format!("{x:e} 2^{}", ns[i] as i32),
                    );
                }
                // v_ldexp_f16 (the exponent a signed 16-bit value).
                let (xs, ns): (Vec<u32>, Vec<u32>) = pairs(v16.len(), n16.len())
                    .map(|(a, b)| (v16[a], u32::from(n16[b] as i16 as u16)))
                    .unzip();
                let got = u32s(&run(
                    &k("ldexp_f16"),
                    [vec![0; 4], bytes32(&xs), bytes32(&ns), vec![]],
                    4,
                    xs.len(),
                ));
                for i in 0..xs.len() {
                    let x = h64(ftz16(xs[i] as u16, fl));
                    let n = i32::from(ns[i] as u16 as i16).clamp(-100, 100);
                    let want = ftz16(to_f16(x * p2(n), rm), fl);
                    check(
                        &k("ldexp_f16"),
                        (got[i] & 0xFFFF).into(),
                        want.into(),
                        16,
                        10,
                        &format!("{x:e} 2^{n}"),
                    );
                }
                // v_ldexp_f64.
                let (xs, ns): (Vec<u64>, Vec<u32>) = pairs(x64s.len(), n64.len())
                    .map(|(a, b)| (x64s[a].to_bits(), n64[b] as u32))
                    .unzip();
                let got = u64s(&run(
                    &k("ldexp_f64"),
                    [vec![0; 4], bytes64(&xs), bytes32(&ns), vec![]],
                    8,
                    xs.len(),
                ));
                for i in 0..xs.len() {
                    let x = f64::from_bits(ftz64(xs[i], fl));
                    let want = ftz64(ldexp64(x, ns[i] as i32, rm).to_bits(), fl);
                    check(
                        &k("ldexp_f64"),
                        got[i],
                        want,
                        64,
                        52,
                        &format!("{x:e} 2^{}", ns[i] as i32),
                    );
                }
                // v_div_fmas: the f64 fma rounds once in the mode's direction, the scaling is
                // exact, the last rounding goes the same way (so under round to nearest,
                // where it could round twice, it is not checked).
                if rm == 0 {
                    continue;
                }
                let n = d32.len();
                let lanes = n * n;
                let a32: Vec<u32> = (0..lanes).map(|i| d32[i / n]).collect();
                let b32: Vec<u32> = (0..lanes).map(|i| d32[i % n]).collect();
                let c32: Vec<u32> = (0..lanes).map(|i| d32[(i * 7 + 3) % n]).collect();
                let vcc: Vec<u32> = (0..lanes).map(|i| (i as u32 / 3) & 1).collect();
                let got = u32s(&run(
                    &k("div_fmas_f32"),
                    [bytes32(&c32), bytes32(&a32), bytes32(&b32), bytes32(&vcc)],
                    4,
                    lanes,
                ));
                for i in 0..lanes {
                    let v = |x: u32| f64::from(f32::from_bits(ftz32(x, fl)));
                    let c = ftz32(c32[i], fl);
                    let scale = match (vcc[i], c >> 23 & 0xFF > 127) {
                        (0, _) => 0,
                        (_, true) => 64,
                        _ => -64,
                    };
                    let r = f64_op("fma", v(a32[i]), v(b32[i]), v(c), rm) * p2(scale);
                    let want = ftz32(f32_of(r, rm).to_bits(), fl);
                    let what = format!("{:e} {:e} {:e} vcc {}", v(a32[i]), v(b32[i]), v(c), vcc[i]);
                    check(
                        &k("div_fmas_f32"),
                        got[i].into(),
                        want.into(),
                        32,
                        23,
                        &what,
                    );
                }
                let n = d64.len();
                let lanes = n * n;
                let a64: Vec<u64> = (0..lanes).map(|i| d64[i / n].to_bits()).collect();
                let b64: Vec<u64> = (0..lanes).map(|i| d64[i % n].to_bits()).collect();
                let c64: Vec<u64> = (0..lanes).map(|i| d64[(i * 7 + 3) % n].to_bits()).collect();
                let vcc: Vec<u32> = (0..lanes).map(|i| (i as u32 / 3) & 1).collect();
                let got = u64s(&run(
                    &k("div_fmas_f64"),
                    [bytes64(&c64), bytes64(&a64), bytes64(&b64), bytes32(&vcc)],
                    8,
                    lanes,
                ));
                for i in 0..lanes {
                    let v = |x: u64| f64::from_bits(ftz64(x, fl));
                    let c = ftz64(c64[i], fl);
                    let scale = match (vcc[i], c >> 52 & 0x7FF > 1023) {
                        (0, _) => 0,
                        (_, true) => 128,
                        _ => -128,
                    };
                    let r = f64_op("fma", v(a64[i]), v(b64[i]), v(c), rm);
                    let want = ftz64(f64_op("mul", r, p2(scale), 0.0, rm).to_bits(), fl);
                    let what = format!("{:e} {:e} {:e} vcc {}", v(a64[i]), v(b64[i]), v(c), vcc[i]);
                    check(&k("div_fmas_f64"), got[i], want, 64, 52, &what);
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked} results checked");
}

/// MFMA and MODE: MI200's (gfx90a) f16 and bf16 MFMAs flush denormal inputs (A, B, C) and
/// outputs to zero whatever FP_DENORM says (AMD's MIOpen documentation, "MI200 matrix fused
/// multiply-add (MFMA) behavior specifics"); gfx908's and gfx942's keep them. Each block of a
/// 4x4 MFMA gets one case (every A element `x`, every B element `y`, C `c`), so each D element
/// is `K·x·y + c`, computed here in f64 (exact for these values).
#[test]
fn mfma_denormals_on_mi200() {
    // (x, y, c) per block: f16 (or bf16) bits of x and y, f32 bits of c.
    let f16_cases: [(u16, u16, u32); 8] = [
        (0x0001, 0x3C00, 0),           // a denormal f16 input
        (0x8001, 0x3C00, 0),           // its negative
        (0x03FF, 0x3C00, 0x3F80_0000), // the largest f16 denormal, plus 1
        (0x0000, 0x0000, 5),           // a denormal C
        (0x0000, 0x0000, 0x8040_0000), // a negative denormal C
        (0x3C00, 0x3C00, 0),
        (0x0400, 0x0400, 0),
        (0x3C00, 0x3800, 1),
    ];
    let bf16_cases: [(u16, u16, u32); 7] = [
        (0x0001, 0x3F80, 0),           // a denormal bf16 input (2^-133)
        (0x007F, 0x4B00, 0),           // the largest bf16 denormal × 2^23: a normal result
        (0x0080, 0x3E00, 0),           // normal inputs, a denormal sum (2^-126 · 2^-3 · K)
        (0x0000, 0x0000, 5),           // a denormal C
        (0x3F80, 0x3F80, 0x3F80_0000), // K + 1
        (0x8001, 0x3F80, 0x3F80_0000),
        (0x0100, 0x0100, 0),
    ];
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let kernels = isa.kernels();
        for (k, kk, bf) in [
            ("mfma_f16", 4, false),
            ("mfma_bf16", 2, true),
            ("mfma_bf16_1k", 4, true),
        ] {
            if !kernels.contains(&k.to_string()) {
                continue;
            }
            let cases: &[(u16, u16, u32)] = if bf { &bf16_cases } else { &f16_cases };
            let case = |lane: usize| cases[(lane / 4) % cases.len()];
            let a: Vec<u32> = (0..64).map(|l| u32::from(case(l).0)).collect();
            let b: Vec<u32> = (0..64).map(|l| u32::from(case(l).1)).collect();
            let c: Vec<u32> = (0..64).map(|l| case(l).2).collect();
            let out = isa
                .run(
                    k,
                    64,
                    &[
                        vec![0; 4],
                        bytes32(&a),
                        bytes32(&b),
                        bytes32(&c),
                        vec![0; 256],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            let got = u32s(&out[4]);
            let flush = cpu == "gfx90a";
            let ftz32 = |x: u32| {
                if flush {
                    ftz(x.into(), 32, 23) as u32
                } else {
                    x
                }
            };
            let value = |h: u16| {
                if bf {
                    f64::from(f32::from_bits(ftz32(u32::from(h) << 16)))
                } else {
                    let h = if flush {
                        ftz(h.into(), 16, 10) as u16
                    } else {
                        h
                    };
                    half::f16::from_bits(h).to_f64()
                }
            };
            for (lane, &g) in got.iter().enumerate() {
                let (x, y, cc) = case(lane);
                let sum =
                    f64::from(kk) * value(x) * value(y) + f64::from(f32::from_bits(ftz32(cc)));
                let want = ftz32((sum as f32).to_bits());
                assert_eq!(
                    g, want,
                    "{cpu} {k} lane {lane}: x {x:#x} y {y:#x} c {cc:#x}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5 * 64, "{checked}");
}

/// What the documents leave unspecified under a directed FP_ROUND stays refused, with an
/// error naming the instruction, the mode and why: `v_dot2_f32_f16` (no rounding stated for
/// the sum), an f16 MFMA (no rounding stated). An approximation the ISA specifies by its
/// precision (`v_sqrt_f32`, 1 ULP) runs, with the default mode's result: the host's
/// correctly rounded square root.
#[test]
fn refused_under_directed_rounding_says_why() {
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let kernels = isa.kernels();
        for (k, inst, mode, why) in [
            (
                "dot2_f32_f16_r1",
                "v_dot2_f32_f16",
                "toward +inf",
                "dot product",
            ),
            ("mfma_f16_r3", "v_mfma_f32_4x4x4", "toward zero", "MFMA"),
        ] {
            if !kernels.contains(&k.to_string()) {
                continue;
            }
            let e = isa
                .run(
                    k,
                    64,
                    &[
                        vec![0; 4],
                        vec![0; 256],
                        vec![0; 256],
                        vec![0; 256],
                        vec![0; 256],
                    ],
                )
                .unwrap_err();
            assert_eq!(e.status(), Status::IllegalInstruction, "{cpu} {k}");
            let msg = e.detail().to_string();
            assert!(
                msg.contains(inst) && msg.contains(mode) && msg.contains(why),
                "{cpu} {k}: {msg}"
            );
        }
        // v_sqrt_f32 under round toward -inf: 64 lanes of squares, non-squares (whose
        // correctly rounded roots differ from the rounded-down ones), a denormal, 0, -0, -1,
        // infinity.
        let xs: Vec<u32> = (0..64u32)
            .map(|i| match i {
                0 => 0,
                1 => 0x8000_0000,
                2 => (-1.0f32).to_bits(),
                3 => f32::INFINITY.to_bits(),
                4 => 1,
                _ => (2.0f32 + i as f32 * 0.37).to_bits(),
            })
            .collect();
        let out = isa
            .run(
                "sqrt_f32_r2",
                64,
                &[
                    vec![0; 4],
                    bytes32(&xs),
                    vec![0; 256],
                    vec![0; 256],
                    vec![0; 256],
                ],
            )
            .unwrap_or_else(|e| panic!("{cpu} sqrt_f32_r2: {e}"));
        for (i, &g) in u32s(&out[4]).iter().enumerate() {
            let want = f32::from_bits(xs[i]).sqrt().to_bits();
            assert!(
                g == want || f32::from_bits(g).is_nan() && f32::from_bits(want).is_nan(),
                "{cpu} sqrt_f32_r2 {:#x}: gave {g:#x}, want {want:#x}",
                xs[i]
            );
        }
    }
}

/// Conversions whose result no rounding mode changes run under every FP_ROUND: f32 → i32/u32
/// truncate and saturate (NaN gives 0: Vega ISA `V_CVT_I32_F32`, `V_CVT_U32_F32`), i32 → f64
/// is exact; the host's own conversions (Rust `as`) are the reference.
#[test]
fn mode_independent_conversions_run_under_every_rounding_mode() {
    let f = |x: f32| x.to_bits();
    let v: Vec<u32> = vec![
        f(1.5),
        f(-1.5),
        f(2.5),
        f(-0.999_999_9),
        f(0.999_999_9),
        f(2147483520.0),
        f(2147483648.0),
        f(-2147483648.0),
        f(-3e9),
        f(4294967040.0),
        f(5e9),
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        1,
        0x8000_0001,
        0,
        0x8000_0000,
        16_777_217,
        i32::MIN as u32,
        u32::MAX,
    ];
    for (cpu, target) in CPUS {
        let isa = Isa::load("round", cpu, target);
        let run = |k: &str, width: usize| {
            let out = isa
                .run(
                    k,
                    v.len() as u32,
                    &[
                        vec![0; 4],
                        bytes32(&v),
                        vec![0; 256],
                        vec![0; 256],
                        vec![0; v.len() * width],
                    ],
                )
                .unwrap_or_else(|e| panic!("{cpu} {k}: {e}"));
            out[4].clone()
        };
        for rm in 0..4 {
            let i = u32s(&run(&format!("cvt_i32_f32_r{rm}"), 4));
            let u = u32s(&run(&format!("cvt_u32_f32_r{rm}"), 4));
            let d = u64s(&run(&format!("cvt_f64_i32_r{rm}"), 8));
            for (k, &x) in v.iter().enumerate() {
                let xf = f32::from_bits(x);
                assert_eq!(i[k], xf as i32 as u32, "{cpu} cvt_i32_f32_r{rm} {xf:e}");
                assert_eq!(u[k], xf as u32, "{cpu} cvt_u32_f32_r{rm} {xf:e}");
                assert_eq!(
                    d[k],
                    f64::from(x as i32).to_bits(),
                    "{cpu} cvt_f64_i32_r{rm} {x:#x}"
                );
            }
        }
    }
}
