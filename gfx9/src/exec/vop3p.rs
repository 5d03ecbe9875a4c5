//! Packed math (VOP3P): the packed 16-bit and 32-bit operations, dot products and the
//! mixed-precision multiply-adds. Vega ISA §12.10, Vega 7nm ISA, CDNA2 ISA.

#[allow(unused_imports)]
use super::*;

/// f16 bits of the inline float constants 240..=248 (0.5, −0.5, 1, −1, 2, −2, 4, −4,
/// 1/(2π)) as a 16-bit packed operand reads them.
pub(crate) const F16_CONST: [u16; 9] = [
    0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118,
];

/// A VOP3P source as 64 bits: for 16-bit packed ops the low 32 bits are the two halves (an
/// inline float constant is its f16 value in the low half and 0 in the high half, an inline
/// integer its 32-bit sign extension); for the packed f32 ops the two dwords (an inline
/// constant or a single SGPR gives the same 32-bit value in both).
///
/// Ref: Vega ISA §6.2.2 "Packed math" and LLVM AMDGPU's pre-gfx11 packed inline-constant
/// rule (f16 constant in bits 15:0, zero above).
pub(crate) fn pk_src(w: &Wave, op: &Operand, lane: usize, wide: bool) -> u64 {
    match *op {
        Operand::InlineFloat(c) if !wide => u64::from(F16_CONST[(c - 240) as usize]),
        Operand::InlineFloat(_) | Operand::InlineInt(_) | Operand::Special(_) if wide => {
            let v = scalar(w, op, false, false) & 0xFFFF_FFFF;
            v | v << 32
        }
        _ => vsrc(w, op, lane, wide, false),
    }
}

/// The gfx906+ dot products: `v_dot2_f32_f16` (two f16 products plus an f32), and the
/// integer `v_dot2_{i32_i16,u32_u16}`, `v_dot4_{i32_i8,u32_u8}`, `v_dot8_{i32_i4,u32_u4}`
/// (the sum of the products of the packed elements plus a 32-bit integer; `clamp` saturates
/// the 32-bit result, else it wraps). The f16 form computes the exact sum (products of f16
/// values are exact in f64) and rounds it once to f32, then `clamp` limits it to [0, 1].
///
/// Ref: Vega 7nm (gfx906) ISA, VOP3P opcodes 35..=43; AMDGPUUsage dot1/dot2-insts.
///
/// # Errors
/// [`Status::IllegalInstruction`] when `op_sel`, `op_sel_hi` or the `neg` bits differ from
/// their defaults on an integer form (the ISA gives them no meaning there), or `op_sel`/
/// `op_sel_hi` do on the f16 form: not modelled.
pub(crate) fn dot(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let op = inst.op();
    let m = inst.mods;
    let float = op == Op::VDot2F32F16;
    let negs = m.neg.iter().any(|&n| n) || m.neg_hi != 0;
    if m.op_sel != 0 || m.op_sel_hi != 7 || (!float && negs) {
        bail!(
            Status::IllegalInstruction,
            "{op}: op_sel {:#x} op_sel_hi {:#x} neg_lo/neg_hi set: not modelled",
            m.op_sel,
            m.op_sel_hi
        );
    }
    let (bits, signed) = match op {
        Op::VDot2I32I16 => (16, true),
        Op::VDot2U32U16 => (16, false),
        Op::VDot4I32I8 => (8, true),
        Op::VDot4U32U8 => (8, false),
        Op::VDot8I32I4 => (4, true),
        Op::VDot8U32U4 => (4, false),
        _ => (16, false),
    };
    let exec = w.exec();
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let abc = core::array::from_fn(|i| vsrc(w, &inst.src[i], lane, false, false) as u32);
        let r = dot_value(bits, signed, float, abc, &m);
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
    Ok(())
}

/// One lane's dot product of `a` and `b` (packed elements of `bits` bits, signed or not, or
/// f16 pairs with `float`) plus `c`, under `m`'s `neg`/`neg_hi` (f16 form) and `clamp`.
pub(crate) fn dot_value(
    bits: u32,
    signed: bool,
    float: bool,
    [a, b, c]: [u32; 3],
    m: &Modifiers,
) -> u32 {
    {
        if float {
            let half = |v: u32, hi: bool, i: usize| {
                let x = f16::to_f64((v >> (16 * hi as u32)) as u16);
                let neg = if hi { m.neg_hi >> i & 1 != 0 } else { m.neg[i] };
                if neg {
                    -x
                } else {
                    x
                }
            };
            let sum = half(a, false, 0) * half(b, false, 1)
                + half(a, true, 0) * half(b, true, 1)
                + f64::from(f32::from_bits(c)) * if m.neg[2] { -1.0 } else { 1.0 };
            let mut r = sum as f32;
            if m.clamp {
                r = clamp01_f32(r);
            }
            r.to_bits()
        } else {
            let field = |v: u32, k: u32| -> i64 {
                let x = (v >> (k * bits)) & ((1 << bits) - 1);
                if signed {
                    i64::from((x << (32 - bits)) as i32 >> (32 - bits))
                } else {
                    i64::from(x)
                }
            };
            let acc = if signed {
                i64::from(c as i32)
            } else {
                i64::from(c)
            };
            let sum = (0..32 / bits).fold(acc, |s, k| s + field(a, k) * field(b, k));
            match (m.clamp, signed) {
                (true, true) => sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
                (true, false) => sum.clamp(0, i64::from(u32::MAX)) as u32,
                _ => sum as u32,
            }
        }
    }
}

/// `x` clamped to [0, 1] (the VOP3 `clamp` bit): NaN and −0 give +0.
pub(crate) fn clamp01_f32(x: f32) -> f32 {
    if x.is_nan() || x <= 0.0 {
        0.0
    } else {
        x.min(1.0)
    }
}

/// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16` (gfx906+): a fused multiply-add
/// whose sources are each an f32 (`op_sel_hi` bit 0) or the low/high f16 half (`op_sel_hi`
/// bit 1, `op_sel` picking the half), with `abs` (the `neg_hi` bits) then `neg`. `_f32`
/// writes the f32 result; `mixlo`/`mixhi` round the exact result once to f16 into the low or
/// high half, keeping the other half. `clamp` limits the result to [0, 1].
///
/// `v_mad_mix_f32`, `v_mad_mixlo_f16`, `v_mad_mixhi_f16` (gfx900, the same opcodes and
/// operands): not fused. The product is rounded to f32 first, and f32 denormals (sources,
/// product, `_f32`'s result) are flushed whatever MODE says, as for `v_mad_f32`: LLVM selects
/// them for `fmad` only when f32 denormals are flushed, and Mesa's ACO treats Vega 10's mix
/// instructions as unfused. The sum is then rounded once to the result's precision. An f16
/// source is exact in f32, so with f16 sources only the sum's rounding differs from fma.
///
/// MODE (the fused forms): each source is flushed when it is a denormal of its own precision
/// (f32 or f16) and that precision's FP_DENORM flushes inputs; the result is rounded by the
/// FP_ROUND of the destination's precision (`[1:0]` for `_f32`, `[3:2]` for `mixlo`/`mixhi`)
/// and flushed by that precision's output denormal mode, as every VALU float operation
/// (Vega ISA §3.8 "Mode register" gives FP_ROUND and FP_DENORM per precision of the
/// operation). The unfused gfx900 forms keep their fixed flushing above and are refused under
/// a directed FP_ROUND ([`mode::round_unsupported`]): which mode rounds their f32 product
/// when the result is f16 is not documented.
///
/// Ref: Vega ISA and Vega 7nm ISA, VOP3P opcodes 32..=34.
pub(crate) fn fma_mix(w: &mut Wave, inst: &Instruction) {
    let m = inst.mods;
    let op = inst.op();
    let fused = matches!(op, Op::VFmaMixF32 | Op::VFmaMixloF16 | Op::VFmaMixhiF16);
    let exec = w.exec();
    let to_f16 = !matches!(op, Op::VFmaMixF32 | Op::VMadMixF32);
    let (keep32, keep16) = (mode::f32_denorm(w.mode), mode::f64_f16_denorm(w.mode));
    let (rm, fmt, keep_out) = if to_f16 {
        (mode::fp_round(w.mode) >> 2, round::F16, keep16 & 2 != 0)
    } else {
        (mode::fp_round(w.mode) & 3, round::F32, keep32 & 2 != 0)
    };
    let rm = if fused { rm } else { round::NEAREST };
    let keep_out = !fused && to_f16 || fused && keep_out;
    let fl = |x: f32| -> f32 {
        if fused && keep32 & 1 != 0 {
            x
        } else {
            f32::from_bits(mode::flush(mode::Kind::F32, u64::from(x.to_bits())) as u32)
        }
    };
    let fl16 = |h: u16| -> u16 {
        if fused && keep16 & 1 == 0 {
            mode::flush(mode::Kind::F16, u64::from(h)) as u16
        } else {
            h
        }
    };
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let x: [f32; 3] = core::array::from_fn(|i| {
            let v = vsrc(w, &inst.src[i], lane, false, false) as u32;
            let mut x = if m.op_sel_hi >> i & 1 != 0 {
                let h = if m.op_sel >> i & 1 != 0 { v >> 16 } else { v };
                f16::to_f64(fl16(h as u16)) as f32
            } else {
                fl(f32::from_bits(v))
            };
            if m.abs[i] {
                x = x.abs();
            }
            if m.neg[i] {
                x = -x;
            }
            x
        });
        let old = vsrc_dword(w, &inst.dst, lane, 0);
        // The product: exact in f64 for fma; rounded to f32 and flushed for mad.
        let p = if fused {
            f64::from(x[0]) * f64::from(x[1])
        } else {
            f64::from(fl(x[0] * x[1]))
        };
        let directed = if rm != round::NEAREST {
            let [a, b, c] = x.map(f64::from);
            round::fma(a, b, c, fmt, rm)
        } else {
            None
        };
        let r = if !to_f16 {
            let mut r = if fused {
                directed.map_or_else(|| fma32(x[0], x[1], x[2]), |d| f32::from_bits(d as u32))
            } else {
                fl(p as f32 + x[2])
            };
            if !keep_out {
                r = f32::from_bits(mode::flush(mode::Kind::F32, u64::from(r.to_bits())) as u32);
            }
            if m.clamp {
                r = clamp01_f32(r);
            }
            r.to_bits()
        } else {
            // Both products are exact in f64 and so is the sum's rounding error (two-sum):
            // the f16 rounding sees the exact result.
            let c = f64::from(x[2]);
            let s = p + c;
            let bb = s - p;
            let err = (p - (s - bb)) + (c - bb);
            let mut h = directed.map_or_else(|| f16::from_f64_sticky(s, err), |d| d as u16);
            if !keep_out {
                h = mode::flush(mode::Kind::F16, u64::from(h)) as u16;
            }
            if m.clamp {
                h = f16::clamp01(h);
            }
            let h = u32::from(h);
            if matches!(op, Op::VFmaMixloF16 | Op::VMadMixloF16) {
                old & 0xFFFF_0000 | h
            } else {
                old & 0xFFFF | h << 16
            }
        };
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
}

/// Packed math: each result half (16-bit ops) or dword (`_f32`/`_b32` ops) computed from the
/// halves of the sources that `op_sel` (low result) and `op_sel_hi` (high result) select,
/// with `neg_lo`/`neg_hi` negating float sources, then `clamp` ([0, 1] for floats,
/// saturation for integer add/sub/mad).
///
/// Ref: Vega ISA §12.10 "VOP3P" and the VOP3P opcode table; CDNA2 ISA for `V_PK_FMA_F32`,
/// `V_PK_MUL_F32`, `V_PK_ADD_F32` and `V_PK_MOV_B32`.
pub(crate) fn vop3p(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let op = inst.op();
    match op.attrs().class {
        Class::Dot => return dot(w, inst),
        Class::Mix => {
            fma_mix(w, inst);
            return Ok(());
        }
        _ => {}
    }
    let mods = inst.mods;
    let wide = inst.info.widths[0] == 2;
    let nsrc = inst.src.iter().filter(|o| **o != Operand::None).count();
    let exec = w.exec();
    let float = matches!(op.attrs().result_fp, Fp::F16 | Fp::F32);
    let fm = mode::FloatMode::for_valu(w.mode, op, wide && float, false, !wide && float);
    if !float && (mods.neg.iter().any(|&n| n) || mods.neg_hi != 0) && op != Op::VPkMovB32 {
        return Err(error!(
            Status::IllegalInstruction,
            "{op}: neg_lo/neg_hi on an integer packed op"
        ));
    }
    let int_clamp_ok = matches!(
        op,
        Op::VPkAddU16
            | Op::VPkSubU16
            | Op::VPkAddI16
            | Op::VPkSubI16
            | Op::VPkMadU16
            | Op::VPkMadI16
    );
    if mods.clamp && !float && !int_clamp_ok {
        return Err(error!(
            Status::IllegalInstruction,
            "{op}: clamp not implemented for this op"
        ));
    }
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let raw: [u64; 3] = core::array::from_fn(|i| {
            if i < nsrc {
                pk_src(w, &inst.src[i], lane, wide)
            } else {
                0
            }
        });
        let mut out = [0u64; 2];
        for (h, slot) in out.iter_mut().enumerate() {
            let sel = if h == 0 { mods.op_sel } else { mods.op_sel_hi };
            let neg = |i: usize| {
                if h == 0 {
                    mods.neg[i]
                } else {
                    mods.neg_hi >> i & 1 != 0
                }
            };
            if wide {
                let x: [u32; 3] = core::array::from_fn(|i| {
                    let v = (raw[i] >> (32 * (sel >> i & 1) as u32)) as u32;
                    let v = if neg(i) && op != Op::VPkMovB32 {
                        v ^ 0x8000_0000
                    } else {
                        v
                    };
                    fm.src(i, u64::from(v)) as u32
                });
                let f = |i: usize| f32::from_bits(x[i]);
                let r = match op {
                    Op::VPkFmaF32 => fma32(f(0), f(1), f(2)),
                    Op::VPkMulF32 => {
                        f32::from_bits(crate::fma::mul32(f(0).to_bits(), f(1).to_bits()))
                    }
                    Op::VPkAddF32 => {
                        f32::from_bits(crate::fma::add32(f(0).to_bits(), f(1).to_bits()))
                    }
                    Op::VPkMovB32 => {
                        // D.lo = op_sel[0] ? S0.hi : S0.lo; D.hi = op_sel[1] ? S1.hi : S1.lo.
                        let v = (raw[h] >> (32 * (mods.op_sel >> h & 1) as u32)) as u32;
                        *slot = u64::from(v);
                        continue;
                    }
                    _ => return Err(not_implemented(inst)),
                };
                let r = if fm.round32 != 0 {
                    let bits = |i: usize| u64::from(x[i]);
                    fm.directed(op, bits(0), bits(1), bits(2))
                        .map_or(r, |d| f32::from_bits(d as u32))
                } else {
                    r
                };
                let r = if mods.clamp { fm.clamp32(r) } else { r };
                *slot = fm.result(u64::from(r.to_bits()));
                continue;
            }
            let x: [u16; 3] = core::array::from_fn(|i| {
                let v = (raw[i] >> (16 * (sel >> i & 1) as u32)) as u16;
                let v = if float && neg(i) { v ^ 0x8000 } else { v };
                fm.src(i, u64::from(v)) as u16
            });
            let (a, b, c) = (x[0], x[1], x[2]);
            let (ai, bi, ci) = (a as i16 as i64, b as i16 as i64, c as i16 as i64);
            let (au, bu, cu) = (a as i64, b as i64, c as i64);
            let sat_u = |v: i64| -> u16 {
                if mods.clamp {
                    v.clamp(0, 0xFFFF) as u16
                } else {
                    v as u16
                }
            };
            let sat_i = |v: i64| -> u16 {
                if mods.clamp {
                    v.clamp(-0x8000, 0x7FFF) as u16
                } else {
                    v as u16
                }
            };
            let r: u16 = match op {
                Op::VPkMadI16 => sat_i(ai * bi + ci),
                Op::VPkMadU16 => sat_u(au * bu + cu),
                Op::VPkMulLoU16 => a.wrapping_mul(b),
                Op::VPkAddI16 => sat_i(ai + bi),
                Op::VPkSubI16 => sat_i(ai - bi),
                Op::VPkAddU16 => sat_u(au + bu),
                Op::VPkSubU16 => sat_u(au - bu),
                Op::VPkLshlrevB16 => b << (a & 15),
                Op::VPkLshrrevB16 => b >> (a & 15),
                Op::VPkAshrrevI16 => ((b as i16) >> (a & 15)) as u16,
                Op::VPkMaxI16 => ai.max(bi) as u16,
                Op::VPkMinI16 => ai.min(bi) as u16,
                Op::VPkMaxU16 => a.max(b),
                Op::VPkMinU16 => a.min(b),
                Op::VPkFmaF16 => f16::fma(a, b, c),
                Op::VPkAddF16 => f16::add(a, b),
                Op::VPkMulF16 => f16::mul(a, b),
                Op::VPkMinF16 => mode::min_max(mode::H, a.into(), b.into(), false, fm.ieee) as u16,
                Op::VPkMaxF16 => mode::min_max(mode::H, a.into(), b.into(), true, fm.ieee) as u16,
                // gfx950 (CDNA4 ISA VOP3P 27, 28): IEEE minimum/maximum of the three halves.
                Op::VPkMinimum3F16 | Op::VPkMaximum3F16 => {
                    let max = op == Op::VPkMaximum3F16;
                    let m = |x: u64, y: u64| mode::minimum_maximum(mode::H, x, y, max);
                    m(m(a.into(), b.into()), c.into()) as u16
                }
                _ => return Err(not_implemented(inst)),
            };
            let r = if float && fm.round64 != 0 {
                let d = fm.directed(op, a.into(), b.into(), c.into());
                d.map_or(r, |d| d as u16)
            } else {
                r
            };
            let r = if float && mods.clamp {
                fm.clamp16(r)
            } else {
                r
            };
            *slot = fm.result(u64::from(r));
        }
        if wide {
            set_vdst(w, &inst.dst, lane, out[0] | out[1] << 32, 2);
        } else {
            set_vdst(w, &inst.dst, lane, out[0] | out[1] << 16, 1);
        }
    }
    Ok(())
}
