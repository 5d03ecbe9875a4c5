//! Vector ALU: VOP1, VOP2, VOPC and VOP3 with SDWA and DPP. Vega ISA §6 and §12.7..§12.9.

#[allow(unused_imports)]
use super::*;

pub(crate) fn trunc32(x: f32) -> f32 {
    if !x.is_finite() || x.abs() >= 8_388_608.0 {
        return x;
    }
    let t = (x as i32) as f32;
    f32::from_bits(t.to_bits() | (x.to_bits() & 0x8000_0000))
}

pub(crate) fn floor32(x: f32) -> f32 {
    let t = trunc32(x);
    if t > x {
        t - 1.0
    } else {
        t
    }
}

pub(crate) fn ceil32(x: f32) -> f32 {
    let t = trunc32(x);
    if t < x {
        t + 1.0
    } else {
        t
    }
}

pub(crate) fn rndne32(x: f32) -> f32 {
    if !x.is_finite() || x.abs() >= 8_388_608.0 {
        return x;
    }
    let f = floor32(x);
    let d = x - f;
    let r = if d > 0.5 {
        f + 1.0
    } else if d < 0.5 || (f as i64) % 2 == 0 {
        f
    } else {
        f + 1.0
    };
    f32::from_bits(r.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// Fused multiply-add with one rounding (the host's `fmaf`); a NaN source gives the first
/// NaN source quieted (`fma::nan_of3`).
pub(crate) fn fma32(a: f32, b: f32, c: f32) -> f32 {
    if let Some(nan) = crate::fma::nan_of3(a.to_bits(), b.to_bits(), c.to_bits()) {
        return f32::from_bits(nan);
    }
    a.mul_add(b, c)
}

/// An f32 result's bits, with a NaN made from non-NaN input `x` replaced by the ISA's
/// default NaN (0x7FC0_0000; the host's is negative).
pub(crate) fn canon32(x: u32, r: f32) -> u64 {
    if r.is_nan() && !f32::from_bits(x).is_nan() {
        0x7FC0_0000
    } else {
        u64::from(r.to_bits())
    }
}

/// An f16 operation computed in f64 and rounded once to f16: a NaN operand gives itself
/// quieted, an invalid operation the default NaN 0x7E00.
pub(crate) fn f16_unary(a: u64, op: impl Fn(f64) -> f64) -> u64 {
    let h = a as u16;
    if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
        return u64::from(h | 0x200);
    }
    let r = op(f16::to_f64(h));
    if r.is_nan() {
        0x7E00
    } else {
        u64::from(f16::from_f64(r))
    }
}

/// [`canon32`] for f64 (default NaN 0x7FF8_0000_0000_0000).
pub(crate) fn canon64(x: u64, r: f64) -> u64 {
    if r.is_nan() && !f64::from_bits(x).is_nan() {
        0x7FF8_0000_0000_0000
    } else {
        r.to_bits()
    }
}

/// `V_FRACT_F64`: `x − floor(x)`, at most the largest f64 below 1 (Vega ISA); ±∞ → NaN.
pub(crate) fn fract64(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let f = x - x.floor();
    if f >= 1.0 {
        f64::from_bits(0x3FEF_FFFF_FFFF_FFFF)
    } else {
        f
    }
}

/// `V_PERM_B32`: each result byte chosen by the matching selector byte of `sel` from the
/// 8 bytes of `{hi, lo}` (0..=7), or the sign of byte 1, 3, 5 or 7 spread over the byte
/// (8..=11), or 0x00 (12), or 0xFF (13 and above) (Vega ISA, VOP3 opcode table).
pub(crate) fn perm_b32(hi: u32, lo: u32, sel: u32) -> u32 {
    let data = u64::from(hi) << 32 | u64::from(lo);
    let byte = |s: u32| -> u32 {
        match s {
            0..=7 => (data >> (8 * s) & 0xFF) as u32,
            8..=11 => {
                let sign_byte = 2 * (s - 8) + 1;
                if data >> (8 * sign_byte + 7) & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        }
    };
    (0..4).fold(0, |acc, i| acc | byte(sel >> (8 * i) & 0xFF) << (8 * i))
}

/// The sum of the absolute differences of the four bytes of `a` and `b` (`v_sad_u8`).
pub(crate) fn sad_u8(a: u32, b: u32) -> u32 {
    (0..4)
        .map(|k| (a >> (8 * k) & 0xFF).abs_diff(b >> (8 * k) & 0xFF))
        .sum()
}

/// [`sad_u8`] leaving out the bytes whose reference (`b`) byte is 0 (`v_msad_u8`).
pub(crate) fn msad_u8(a: u32, b: u32) -> u32 {
    (0..4)
        .filter(|k| b >> (8 * k) & 0xFF != 0)
        .map(|k| (a >> (8 * k) & 0xFF).abs_diff(b >> (8 * k) & 0xFF))
        .sum()
}

/// V_CUBEID_F32, V_CUBESC_F32, V_CUBETC_F32, V_CUBEMA_F32 of the direction (x, y, z)
/// (Vega ISA VOP3 0x1c4..0x1c7): the major axis is z when |z| is at least |x| and |y|, else
/// y when |y| ≥ |x|, else x; the face id is 4/5 (z ≥ 0 / < 0), 2/3 (y) or 0/1 (x); sc and tc
/// the face's coordinates (z face: ±x and −y; y face: x and ±z; x face: ∓z and −y); ma twice
/// the major axis.
pub(crate) fn cube(op: Op, x: f32, y: f32, z: f32) -> f32 {
    let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
    let pick = |neg: bool, a: f32, b: f32| if neg { a } else { b };
    if az >= ax && az >= ay {
        match op {
            Op::VCubeidF32 => pick(z < 0.0, 5.0, 4.0),
            Op::VCubescF32 => pick(z < 0.0, -x, x),
            Op::VCubetcF32 => -y,
            _ => 2.0 * z,
        }
    } else if ay >= ax {
        match op {
            Op::VCubeidF32 => pick(y < 0.0, 3.0, 2.0),
            Op::VCubescF32 => x,
            Op::VCubetcF32 => pick(y < 0.0, -z, z),
            _ => 2.0 * y,
        }
    } else {
        match op {
            Op::VCubeidF32 => pick(x < 0.0, 1.0, 0.0),
            Op::VCubescF32 => pick(x < 0.0, z, -z),
            Op::VCubetcF32 => -y,
            _ => 2.0 * x,
        }
    }
}

/// The FP8 format of a gfx940/gfx950 conversion: FP8 (E4M3) or BF8 (E5M2) by its [`Op`],
/// FNUZ or OCP by the target ([`fp8::Format::of`]).
fn fp8_format(op: Op, target: crate::Gfx9Target) -> fp8::Format {
    let bf8 = matches!(
        op,
        Op::VCvtF32Bf8 | Op::VCvtPkF32Bf8 | Op::VCvtPkBf8F32 | Op::VCvtSrBf8F32
    );
    fp8::Format::of(bf8, target)
}

/// Whether a conversion to FP8/BF8 saturates on overflow: gfx940's follow the instruction's
/// `clamp` (CDNA3 ISA V_CVT_PK_FP8_F32), gfx950's ignore `clamp` and follow MODE.FP16_OVFL
/// (CDNA4 ISA §7.3 tables 31 and the FP16_OVFL rule).
fn fp8_saturate(mode: u32, inst: &Instruction) -> bool {
    if inst.target == crate::Gfx9Target::Gfx950 {
        mode::fp16_ovfl(mode)
    } else {
        inst.mods.clamp
    }
}

/// An f32 (bits) as a bf16, rounded to nearest even; a NaN stays a NaN of its sign, quieted.
fn f32_to_bf16(x: u32) -> u16 {
    if x & 0x7F80_0000 == 0x7F80_0000 && x & 0x7F_FFFF != 0 {
        return (x >> 16) as u16 | 0x40;
    }
    let round = 0x7FFF + (x >> 16 & 1);
    (x.wrapping_add(round) >> 16) as u16
}

pub(crate) fn sext24(v: u32) -> i64 {
    (((v << 8) as i32) >> 8) as i64
}

/// Whether VALU instruction `op` reads f32 and f64 sources: (f32 source, f64 source), its
/// [`op::OpAttrs::src_fp`].
pub(crate) fn float_input(op: Op) -> (bool, bool) {
    let fp = op.attrs().src_fp;
    (fp == Fp::F32, fp == Fp::F64)
}

/// An f16 rounded to an integral value by `round` (exact: every f16 integral value of the
/// range is an f16); NaN quieted.
pub(crate) fn round16(x: u16, round: fn(f64) -> f64) -> u16 {
    if x & 0x7C00 == 0x7C00 && x & 0x3FF != 0 {
        return x | 0x200;
    }
    f16::from_f64(round(f16::to_f64(x)))
}

/// An f16 converted to a 16-bit integer, truncating toward zero and saturating; NaN → 0
/// (Vega ISA `V_CVT_U16_F16`/`V_CVT_I16_F16`).
pub(crate) fn f16_to_int16(x: u16, signed: bool) -> u16 {
    let v = f16::to_f64(x);
    if v.is_nan() {
        return 0;
    }
    if signed {
        v.trunc().clamp(-32768.0, 32767.0) as i16 as u16
    } else {
        v.trunc().clamp(0.0, 65535.0) as u16
    }
}

/// A float compare condition on `a`, `b` (unordered when either is a NaN); `None` for a
/// condition that is not a float one.
pub(crate) fn fcmp(cond: Cond, a: f64, b: f64) -> Option<bool> {
    use core::cmp::Ordering::{Equal, Greater, Less};
    let o = a.partial_cmp(&b);
    Some(match cond {
        Cond::F => false,
        Cond::Lt => o == Some(Less),
        Cond::Eq => o == Some(Equal),
        Cond::Le => matches!(o, Some(Less | Equal)),
        Cond::Gt => o == Some(Greater),
        Cond::Lg => matches!(o, Some(Less | Greater)),
        Cond::Ge => matches!(o, Some(Greater | Equal)),
        Cond::O => o.is_some(),
        Cond::U => o.is_none(),
        Cond::Nge => !matches!(o, Some(Greater | Equal)),
        Cond::Nlg => !matches!(o, Some(Less | Greater)),
        Cond::Ngt => o != Some(Greater),
        Cond::Nle => !matches!(o, Some(Less | Equal)),
        Cond::Neq => o != Some(Equal),
        Cond::Nlt => o != Some(Less),
        Cond::Tru => true,
        _ => return None,
    })
}

/// An integer compare condition; `None` for a condition that is not an integer one.
pub(crate) fn icmp<T: Ord>(cond: Cond, a: T, b: T) -> Option<bool> {
    Some(match cond {
        Cond::F => false,
        Cond::Lt => a < b,
        Cond::Eq => a == b,
        Cond::Le => a <= b,
        Cond::Gt => a > b,
        Cond::Ne => a != b,
        Cond::Ge => a >= b,
        Cond::T => true,
        _ => return None,
    })
}

/// Source `i` of a VALU instruction for `lane`: the register or constant (64-bit where the
/// operand is), the SDWA select, then float `abs`/`neg`.
#[inline(always)]
pub(crate) fn read_operand(
    w: &Wave,
    inst: &Instruction,
    i: usize,
    lane: usize,
    f32_in: bool,
    f64_in: bool,
) -> u64 {
    let info = inst.info;
    let mods = &inst.mods;
    let width = if i == 2 && info.has(F_CI | F_CND) {
        2
    } else {
        info.widths[i + 1]
    };
    let f16_in = info.op.attrs().src_fp == Fp::F16;
    let mut v = match inst.src[i] {
        Operand::InlineFloat(c) if f16_in => u64::from(F16_CONST[(c - 240) as usize]),
        _ => vsrc(w, &inst.src[i], lane, width == 2, f64_in),
    };
    if let Some(sd) = mods.sdwa.filter(|_| i < 2) {
        v = sdwa_select(v as u32, sd.src_sel[i], sd.sext[i]) as u64;
    }
    if mods.op_sel >> i & 1 != 0 && !f32_in {
        // VOP3 op_sel of a 16-bit source (Vega ISA §12.9 "VOP3"; the decoder keeps the bits
        // only on the VOP3-only 16-bit opcodes): its high half.
        v = v >> 16 & 0xFFFF;
    }
    if f16_in {
        // The f16 is the low half; abs/neg act on its sign (bit 15).
        v &= 0xFFFF;
        if mods.abs[i] {
            v &= 0x7FFF;
        }
        if mods.neg[i] {
            v ^= 0x8000;
        }
    } else if f32_in && width == 1 && !(i > 0 && info.op == Op::VCvtPkU8F32) {
        // (v_cvt_pk_u8_f32's S1 and S2 are integers: their neg bit is `sext`, a no-op.)
        if mods.abs[i] {
            v &= 0x7FFF_FFFF;
        }
        if mods.neg[i] {
            v ^= 0x8000_0000;
        }
    } else if f64_in && width == 2 {
        if mods.abs[i] {
            v &= !(1 << 63);
        }
        if mods.neg[i] {
            v ^= 1 << 63;
        }
    }
    v
}

/// `t` saturated to `min..=max` (VOP3 `clamp` of an integer result), or wrapped to its low
/// `bits` bits.
fn sat_or_wrap(t: i64, min: i64, max: i64, clamp: bool, bits: u32) -> u64 {
    if clamp {
        t.clamp(min, max) as u64 & (u64::MAX >> (64 - bits))
    } else {
        t as u64 & (u64::MAX >> (64 - bits))
    }
}

/// Whether `op`'s result is 16 bits wide (where VOP3 `op_sel[3]` writes the high half).
fn result16(op: Op) -> bool {
    op.attrs().out_f16
        || matches!(
            op,
            Op::VMadU16
                | Op::VMadI16
                | Op::VAddI16
                | Op::VSubI16
                | Op::VMin3I16
                | Op::VMin3U16
                | Op::VMax3I16
                | Op::VMax3U16
                | Op::VMed3I16
                | Op::VMed3U16
        )
}

/// gfx9's VOP3-only 16-bit multiply-adds (`V_MAD_F16`, `V_MAD_U16`, `V_MAD_I16`,
/// `V_FMA_F16`, `V_DIV_FIXUP_F16`, VOP3 opcodes 515..519 in the CDNA ISA guides' numbering)
/// write a result with op_sel[3] clear into the low half and keep the high half: their
/// notes in the ISA guides ("hi 16 bits are preserved"), against their `_LEGACY` forms,
/// which write it as 0 ("this is different from V_MAD_U16"). Every other 16-bit result
/// without op_sel[3] zeroes the high half, as LLVM's `zeroesHigh16BitsOfDest` knows for gfx9.
fn keeps_high16(op: Op) -> bool {
    matches!(
        op,
        Op::VMadF16 | Op::VMadU16 | Op::VMadI16 | Op::VFmaF16 | Op::VDivFixupF16
    )
}

/// Src0 of no lane: what non-DPP instructions pass as `dpp_src0`.
pub(crate) const NO_DPP_SRC0: [u32; WAVE_SIZE] = [0; WAVE_SIZE];

/// A VALU instruction (VOP1/VOP2/VOPC/VOP3, SDWA included) over the lanes in `lanes` (EXEC,
/// or for DPP the lanes that write). With `DPP`, src0 of each lane is `dpp_src0[lane]` (the
/// value fetched from its source lane) with the instruction's modifiers; the other sources
/// are the lane's own. A const parameter, so the common path has no DPP test per lane.
pub(crate) fn valu<const DPP: bool>(
    w: &mut Wave,
    inst: &Instruction,
    lanes: u64,
    dpp_src0: &[u32; WAVE_SIZE],
) -> Result<()> {
    let op = inst.op();
    let info = inst.info;
    let wd = info.widths;
    let exec = w.exec();
    let mods = inst.mods;
    let (f32_in, f64_in) = float_input(op);
    let f16_in = op.attrs().src_fp == Fp::F16;
    let fm = mode::FloatMode::for_valu(w.mode, op, f32_in, f64_in, f16_in);
    let read = |w: &Wave, i: usize, lane: usize| read_operand(w, inst, i, lane, f32_in, f64_in);
    // Lane-crossing and scalar-destination ops.
    match op {
        // V_CLREXCP (Vega ISA VOP1 53) clears the wave's exception state (TRAPSTS.EXCP),
        // which the interpreter does not keep: nothing to do.
        Op::VNop | Op::VClrexcp => return Ok(()),
        Op::VPermlane16SwapB32 | Op::VPermlane32SwapB32 => return lane_swap(w, inst),
        op if is_scaled_cvt(op) => return scaled_cvt(w, inst, lanes),
        // What gfx950's packing conversions do with these is not documented.
        Op::VAshrPkI8I32 | Op::VAshrPkU8I32 if mods.op_sel & 7 != 0 => bail!(
            Status::IllegalInstruction,
            "{op}: op_sel {:#x} selects a half of a 32-bit source (not modelled)",
            mods.op_sel
        ),
        Op::VCvtPkF16F32 | Op::VCvtPkBf16F32 if mods.omod != 0 => bail!(
            Status::IllegalInstruction,
            "{op}: an output modifier on a packed 16-bit result is not modelled"
        ),
        Op::VCvtPkBf16F32 if mods.clamp => bail!(
            Status::IllegalInstruction,
            "{op}: clamp of a bf16 result is not modelled"
        ),
        Op::VMqsadU32U8 => {
            for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                let s0 = read(w, 0, lane);
                let s1 = read(w, 1, lane) as u32;
                for k in 0..4 {
                    let acc = vsrc_dword(w, &inst.src[2], lane, k);
                    let sad = msad_u8((s0 >> (8 * k)) as u32, s1);
                    let r = sat_or_wrap(
                        i64::from(sad) + i64::from(acc),
                        0,
                        i64::from(u32::MAX),
                        mods.clamp,
                        32,
                    );
                    set_vdst_dword(w, &inst.dst, lane, k, r as u32);
                }
            }
            return Ok(());
        }
        // V_SWAP_B32 (Vega ISA VOP1 opcode 81): tmp = D; D = S0; S0 = tmp, for the lanes of
        // EXEC. Both operands are VGPRs.
        Op::VSwapB32 => {
            if let (Operand::Vgpr { index: d, .. }, Operand::Vgpr { index: s0, .. }) =
                (inst.dst, inst.src[0])
            {
                for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
                    let (x, y) = (w.v(d.into(), lane), w.v(s0.into(), lane));
                    w.set_v(d.into(), lane, y);
                    w.set_v(s0.into(), lane, x);
                }
            }
            return Ok(());
        }
        Op::VReadfirstlaneB32 => {
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            let v = read(w, 0, lane);
            set_sdst(w, &inst.dst, v);
            return Ok(());
        }
        Op::VReadlaneB32 => {
            let lane = (scalar(w, &inst.src[1], false, false) & 63) as usize;
            let v = read(w, 0, lane);
            set_sdst(w, &inst.dst, v);
            return Ok(());
        }
        Op::VWritelaneB32 => {
            let lane = (scalar(w, &inst.src[1], false, false) & 63) as usize;
            let v = scalar(w, &inst.src[0], false, false);
            set_vdst(w, &inst.dst, lane, v, 1);
            return Ok(());
        }
        Op::VPkFmacF16
        | Op::VDot2cF32F16
        | Op::VDot2cI32I16
        | Op::VDot4cI32I8
        | Op::VDot8cI32I4 => return accumulate_packed::<DPP>(w, inst, lanes, dpp_src0),
        _ => {}
    }
    if let Some(cmp) = op.attrs().compare {
        let (cond, x) = (cmp.cond, cmp.exec);
        let mut mask = 0u64;
        for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
            let a = fm.src(0, read(w, 0, lane));
            let b = fm.src(1, read(w, 1, lane));
            let r = match cmp.ty {
                Ty::F32 if cond == Cond::Class => {
                    Some(b >> fdiv::class_index(fdiv::SINGLE, a & 0xFFFF_FFFF) & 1 != 0)
                }
                Ty::F64 if cond == Cond::Class => {
                    Some(b >> fdiv::class_index(fdiv::DOUBLE, a) & 1 != 0)
                }
                Ty::F16 if cond == Cond::Class => {
                    Some(b >> fdiv::class_index(fdiv::HALF, a & 0xFFFF) & 1 != 0)
                }
                Ty::F32 => fcmp(
                    cond,
                    f32::from_bits(a as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                ),
                Ty::F64 => fcmp(cond, f64::from_bits(a), f64::from_bits(b)),
                Ty::I32 => icmp(cond, a as u32 as i32, b as u32 as i32),
                Ty::U32 => icmp(cond, a as u32, b as u32),
                Ty::I64 => icmp(cond, a as i64, b as i64),
                Ty::U64 => icmp(cond, a, b),
                // 16-bit compares: the low halves (Vega ISA VOPC opcodes 0x20..0x3F, 0xA0..0xBF).
                Ty::F16 => fcmp(cond, f16::to_f64(a as u16), f16::to_f64(b as u16)),
                Ty::I16 => icmp(cond, a as u16 as i16, b as u16 as i16),
                Ty::U16 => icmp(cond, a as u16, b as u16),
                _ => None,
            };
            let Some(r) = r else {
                return Err(not_implemented(inst));
            };
            mask |= (r as u64) << lane;
        }
        set_sdst(w, &inst.sdst, mask);
        if x {
            w.set_exec(mask);
        }
        return Ok(());
    }
    let carry_mask = if info.has(F_CI | F_CND) {
        // Read before any lane writes the destination (which may alias it).
        Some(scalar(w, &inst.src[2], true, false))
    } else {
        None
    };
    let mut carry_out = 0u64;
    let writes_carry = info.has(F_CO | F_CI)
        || op == Op::VMadU64U32
        || op == Op::VMadI64I32
        || matches!(op, Op::VDivScaleF32 | Op::VDivScaleF64);
    // v_div_fmas reads VCC as its scale condition.
    let vcc_in = w.vcc();
    let out_w = wd[0];
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        let a = if DPP && f16_in {
            let v = u64::from(dpp_src0[lane]) & 0xFFFF;
            let v = if mods.abs[0] { v & 0x7FFF } else { v };
            if mods.neg[0] {
                v ^ 0x8000
            } else {
                v
            }
        } else if DPP {
            float_mods32(u64::from(dpp_src0[lane]), f32_in, mods.abs[0], mods.neg[0])
        } else {
            read(w, 0, lane)
        };
        let b = if wd[2] > 0 { read(w, 1, lane) } else { 0 };
        let c = if wd[3] > 0 && carry_mask.is_none() {
            read(w, 2, lane)
        } else {
            0
        };
        let ci = carry_mask.map(|m| m >> lane & 1).unwrap_or(0);
        let (a, b, c) = (fm.src(0, a), fm.src(1, b), fm.src(2, c));
        let (a32, b32, c32) = (a as u32, b as u32, c as u32);
        let (fa, fb, fc) = (
            f32::from_bits(a32),
            f32::from_bits(b32),
            f32::from_bits(c32),
        );
        let (da, db) = (f64::from_bits(a), f64::from_bits(b));
        let d_old = match inst.dst {
            Operand::Vgpr { index, .. } => w.v(index as usize, lane),
            _ => 0,
        };
        // The destination pair's value before the instruction: `v_fmac_f64`'s accumulator.
        let acc64 = |w: &Wave, lane: usize| match inst.dst {
            Operand::Vgpr { index, .. } => {
                let r = index as usize;
                u64::from(w.v(r, lane)) | u64::from(w.v(r + 1, lane)) << 32
            }
            _ => 0,
        };
        let mut co = false;
        let fr = |x: f32| x.to_bits() as u64;
        let r: u64 = match op {
            Op::VMovB32 | Op::VMovB64 => a,
            // gfx950: the bf16 in the low half as an f32 (exact; CDNA4 ISA §7.4: no denormal
            // flushing for inputs narrower than 32 bits).
            Op::VCvtF32Bf16 => u64::from(a32 & 0xFFFF) << 16,
            // gfx950: each result bit is the truth table's bit at {S0, S1, S2} of that bit
            // (the table in the neg, abs and omod fields; LLVM's encoding: S0 = 0xF0,
            // S1 = 0xCC, S2 = 0xAA).
            Op::VBitop3B32 => u64::from(bitop3(mods.bitop3_table(), a32, b32, c32)),
            Op::VCvtF32I32 => fr(a32 as i32 as f32),
            Op::VCvtF32U32 => fr(a32 as f32),
            Op::VCvtU32F32 => fa as u32 as u64,
            Op::VCvtI32F32 => fa as i32 as u32 as u64,
            Op::VCvtRpiI32F32 => floor32(fa + 0.5) as i32 as u32 as u64,
            Op::VCvtFlrI32F32 => floor32(fa) as i32 as u32 as u64,
            Op::VCvtF32Ubyte0 => fr((a32 & 0xFF) as f32),
            Op::VCvtF32Ubyte1 => fr((a32 >> 8 & 0xFF) as f32),
            Op::VCvtF32Ubyte2 => fr((a32 >> 16 & 0xFF) as f32),
            Op::VCvtF32Ubyte3 => fr((a32 >> 24) as f32),
            // A signed 4-bit integer in sixteenths: -0.5 for 0x8 to 0.4375 for 0x7 (Vega ISA
            // V_CVT_OFF_F32_I4; exact, so no rounding mode applies).
            Op::VCvtOffF32I4 => fr(((a32 << 28) as i32 >> 28) as f32 / 16.0),
            Op::VCvtF64F32 => (fa as f64).to_bits(),
            Op::VCvtF64I32 => (a32 as i32 as f64).to_bits(),
            Op::VCvtF64U32 => (a32 as f64).to_bits(),
            Op::VCvtF32F64 => fr(da as f32),
            Op::VCvtI32F64 => da as i32 as u32 as u64,
            Op::VCvtU32F64 => da as u32 as u64,
            Op::VFractF32 => {
                let f = fa - floor32(fa);
                fr(if f >= 1.0 {
                    f32::from_bits(0x3F7F_FFFF)
                } else {
                    f
                })
            }
            Op::VTruncF32 => fr(trunc32(fa)),
            Op::VCeilF32 => fr(ceil32(fa)),
            Op::VRndneF32 => fr(rndne32(fa)),
            Op::VFloorF32 => fr(floor32(fa)),
            Op::VNotB32 => !a32 as u64,
            Op::VBfrevB32 => a32.reverse_bits() as u64,
            // gfx950's V_PRNG_B32 (CDNA4 ISA VOP1 88): one step of a Galois LFSR, the input
            // shifted left once and XORed with 197 when its bit 31 was set.
            Op::VPrngB32 => u64::from(a32 << 1 ^ if a32 >> 31 != 0 { 197 } else { 0 }),
            Op::VFfbhU32 => {
                (if a32 == 0 {
                    u32::MAX
                } else {
                    a32.leading_zeros()
                }) as u64
            }
            Op::VFfblB32 => {
                (if a32 == 0 {
                    u32::MAX
                } else {
                    a32.trailing_zeros()
                }) as u64
            }
            Op::VFfbhI32 => {
                let v = a32 as i32;
                if v == 0 || v == -1 {
                    u32::MAX as u64
                } else {
                    (if v < 0 { !a32 } else { a32 }).leading_zeros() as u64
                }
            }
            Op::VAddF32 => fr(f32::from_bits(crate::fma::add32(a32, b32))),
            Op::VAddF16 => u64::from(f16::add(a as u16, b as u16)),
            Op::VSubF16 => u64::from(f16::sub(a as u16, b as u16)),
            Op::VSubrevF16 => u64::from(f16::sub(b as u16, a as u16)),
            Op::VMulF16 => u64::from(f16::mul(a as u16, b as u16)),
            Op::VFmaF16 => u64::from(f16::fma(a as u16, b as u16, c as u16)),
            Op::VMaxF16 => mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, true, fm.ieee),
            Op::VMinF16 => mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, false, fm.ieee),
            Op::VCvtF16F32 => u64::from(f16::from_f64(f64::from(fa))),
            Op::VCvtPkrtzF16F32 => {
                u64::from(f16::from_f32_rtz(a32)) | u64::from(f16::from_f32_rtz(b32)) << 16
            }
            Op::VCvtF32F16 => {
                let h = a as u16;
                if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
                    // NaN: sign and payload kept, quieted.
                    u64::from(u32::from(h >> 15) << 31 | 0x7FC0_0000 | u32::from(h & 0x3FF) << 13)
                } else {
                    fr(f16::to_f64(h) as f32)
                }
            }
            Op::VCvtF16U16 => u64::from(f16::from_f64(f64::from(a as u16))),
            Op::VCvtF16I16 => u64::from(f16::from_f64(f64::from(a as u16 as i16))),
            Op::VCvtU16F16 => u64::from(f16_to_int16(a as u16, false)),
            Op::VCvtI16F16 => u64::from(f16_to_int16(a as u16, true)),
            Op::VTruncF16 => u64::from(round16(a as u16, f64::trunc)),
            Op::VCeilF16 => u64::from(round16(a as u16, f64::ceil)),
            Op::VFloorF16 => u64::from(round16(a as u16, f64::floor)),
            Op::VRndneF16 => u64::from(round16(a as u16, f64::round_ties_even)),
            Op::VSubF32 => fr(f32::from_bits(crate::fma::sub32(a32, b32))),
            Op::VSubrevF32 => fr(f32::from_bits(crate::fma::sub32(b32, a32))),
            Op::VMulF32 => fr(f32::from_bits(crate::fma::mul32(a32, b32))),
            Op::VMinF32 => mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, false, fm.ieee),
            Op::VMaxF32 => mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, true, fm.ieee),
            Op::VMacF32 => {
                let acc = f32::from_bits(fm.src(2, u64::from(d_old)) as u32);
                fr(mode::mad32(fa, fb, acc, 0))
            }
            Op::VFmacF32 => fr(fma32(
                fa,
                fb,
                f32::from_bits(fm.src(2, u64::from(d_old)) as u32),
            )),
            Op::VMadF32 => fr(mode::mad32(fa, fb, fc, 0)),
            Op::VFmaF32 => fr(fma32(fa, fb, fc)),
            // VOP2 with a constant K (decoded as the sources of a three-source
            // multiply-add: src0 × src1 + src2) and the f16 MAC.
            Op::VMadmkF32 | Op::VMadakF32 => fr(mode::mad32(fa, fb, fc, 0)),
            Op::VFmamkF32 | Op::VFmaakF32 => fr(fma32(fa, fb, fc)),
            Op::VMadF16 | Op::VMadmkF16 | Op::VMadakF16 => {
                u64::from(mode::mad16(a as u16, b as u16, c as u16, 0))
            }
            // V_MAD_LEGACY_F32 (Vega ISA VOP3 opcode 0x1C0): v_mad_f32 whose product is +0
            // when a factor is 0 (DX9 rule, inf and NaN included).
            Op::VMadLegacyF32 => {
                let (x, y) = if fa == 0.0 || fb == 0.0 {
                    (0.0, 0.0)
                } else {
                    (fa, fb)
                };
                fr(mode::mad32(x, y, fc, 0))
            }
            Op::VMacF16 => {
                let acc = fm.src(2, u64::from(d_old) & 0xFFFF) as u16;
                u64::from(mode::mad16(a as u16, b as u16, acc, 0))
            }
            Op::VMulLegacyF32 => mode::mul_legacy32(fa, fb, 0).to_bits().into(),
            Op::VMin3F32 => {
                let ab = mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, false, fm.ieee);
                mode::min_max(mode::S, ab, c & 0xFFFF_FFFF, false, fm.ieee)
            }
            Op::VMax3F32 => {
                let ab = mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, true, fm.ieee);
                mode::min_max(mode::S, ab, c & 0xFFFF_FFFF, true, fm.ieee)
            }
            // gfx950 (CDNA4 ISA VOP3 680, 681): IEEE minimum/maximum of the three, NaN
            // propagating.
            Op::VMinimum3F32 | Op::VMaximum3F32 => {
                let max = op == Op::VMaximum3F32;
                let m = |x: u64, y: u64| mode::minimum_maximum(mode::S, x, y, max);
                m(m(a & 0xFFFF_FFFF, b & 0xFFFF_FFFF), c & 0xFFFF_FFFF)
            }
            // gfx950's V_CVT_PK_F16_F32 / V_CVT_PK_BF16_F32 (CDNA4 ISA VOP3 615, 616): S0 to
            // the low half, S1 to the high, rounded to nearest even whatever MODE says; the
            // f16 results clamped with `clamp` and their denormals flushed as MODE's f16
            // output mode says (V_CVT_F16_F32's rule). MODE has no bf16 field: bf16
            // denormals are kept (the clamp is refused for bf16 before the lanes).
            Op::VCvtPkF16F32 => {
                let keep = mode::f64_f16_denorm(w.mode) & 2 != 0;
                let half = |x: f32| {
                    let mut h = f16::from_f64(f64::from(x));
                    if mods.clamp {
                        h = fm.clamp16(h);
                    }
                    if keep {
                        h
                    } else {
                        mode::flush(mode::Kind::F16, u64::from(h)) as u16
                    }
                };
                u64::from(half(fa)) | u64::from(half(fb)) << 16
            }
            Op::VCvtPkBf16F32 => u64::from(f32_to_bf16(a32)) | u64::from(f32_to_bf16(b32)) << 16,
            // gfx950's V_ASHR_PK_I8_I32 / V_ASHR_PK_U8_I32 (CDNA4 ISA VOP3 613, 614): S0 and
            // S1 shifted right arithmetically by S2[4:0], each saturated to a byte, the pair
            // written to D's half op_sel[3], the other half kept (the pseudocode assigns
            // only D0[15:0]).
            Op::VAshrPkI8I32 | Op::VAshrPkU8I32 => {
                let sh = c32 & 31;
                let sat = |x: u32| {
                    let v = (x as i32) >> sh;
                    if op == Op::VAshrPkI8I32 {
                        v.clamp(-128, 127) as u8
                    } else {
                        v.clamp(0, 255) as u8
                    }
                };
                let pair = u32::from(sat(a32)) | u32::from(sat(b32)) << 8;
                u64::from(if mods.op_sel & 8 != 0 {
                    d_old & 0xFFFF | pair << 16
                } else {
                    d_old & 0xFFFF_0000 | pair
                })
            }
            Op::VMed3F32 => mode::med3(
                mode::S,
                a & 0xFFFF_FFFF,
                b & 0xFFFF_FFFF,
                c & 0xFFFF_FFFF,
                fm.ieee,
            ),
            Op::VAddF64 => (da + db).to_bits(),
            Op::VMulF64 => (da * db).to_bits(),
            Op::VMinF64 => mode::min_max(mode::D, a, b, false, fm.ieee),
            Op::VMaxF64 => mode::min_max(mode::D, a, b, true, fm.ieee),
            Op::VMulI32I24 => (sext24(a32) * sext24(b32)) as u32 as u64,
            Op::VMulHiI32I24 => ((sext24(a32) * sext24(b32)) >> 32) as u32 as u64,
            Op::VMulU32U24 => ((a32 & 0xFF_FFFF) as u64 * (b32 & 0xFF_FFFF) as u64) as u32 as u64,
            Op::VMulHiU32U24 => ((a32 & 0xFF_FFFF) as u64 * (b32 & 0xFF_FFFF) as u64) >> 32,
            Op::VMadI32I24 => sat_or_wrap(
                sext24(a32) * sext24(b32) + i64::from(c32 as i32),
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                mods.clamp,
                32,
            ),
            Op::VMadU32U24 => sat_or_wrap(
                i64::from(a32 & 0xFF_FFFF) * i64::from(b32 & 0xFF_FFFF) + i64::from(c32),
                0,
                i64::from(u32::MAX),
                mods.clamp,
                32,
            ),
            Op::VMinI32 => (a32 as i32).min(b32 as i32) as u32 as u64,
            Op::VMaxI32 => (a32 as i32).max(b32 as i32) as u32 as u64,
            Op::VMinU32 => a32.min(b32) as u64,
            Op::VMaxU32 => a32.max(b32) as u64,
            Op::VMin3I32 => (a32 as i32).min(b32 as i32).min(c32 as i32) as u32 as u64,
            Op::VMax3I32 => (a32 as i32).max(b32 as i32).max(c32 as i32) as u32 as u64,
            Op::VMin3U32 => a32.min(b32).min(c32) as u64,
            Op::VMax3U32 => a32.max(b32).max(c32) as u64,
            Op::VMed3I32 => {
                let (x, y, z) = (a32 as i32, b32 as i32, c32 as i32);
                x.min(y).max(x.max(y).min(z)) as u32 as u64
            }
            Op::VMed3U32 => a32.min(b32).max(a32.max(b32).min(c32)) as u64,
            Op::VLshrrevB32 => (b32 >> (a32 & 31)) as u64,
            Op::VAshrrevI32 => ((b32 as i32) >> (a32 & 31)) as u32 as u64,
            Op::VLshlrevB32 => (b32 << (a32 & 31)) as u64,
            Op::VLshlrevB64 => b << (a32 & 63),
            Op::VLshrrevB64 => b >> (a32 & 63),
            Op::VAshrrevI64 => ((b as i64) >> (a32 & 63)) as u64,
            Op::VAndB32 => (a32 & b32) as u64,
            Op::VOrB32 => (a32 | b32) as u64,
            Op::VXorB32 => (a32 ^ b32) as u64,
            Op::VXnorB32 => !(a32 ^ b32) as u64,
            // VOP3 `clamp` saturates the unsigned result (Vega ISA §6.2 "Integer clamp";
            // LLVM selects `v_add_u32_e64 ... clamp` for `uadd.sat`).
            Op::VAddU32 => sat_or_wrap(
                i64::from(a32) + i64::from(b32),
                0,
                i64::from(u32::MAX),
                mods.clamp,
                32,
            ),
            Op::VSubU32 => sat_or_wrap(
                i64::from(a32) - i64::from(b32),
                0,
                i64::from(u32::MAX),
                mods.clamp,
                32,
            ),
            Op::VSubrevU32 => sat_or_wrap(
                i64::from(b32) - i64::from(a32),
                0,
                i64::from(u32::MAX),
                mods.clamp,
                32,
            ),
            // The carry (borrow) out in VCC or SDST; VOP3 `clamp` also saturates the
            // unsigned result (Vega ISA §6.2 "Integer clamp").
            Op::VAddCoU32 | Op::VAddcCoU32 => {
                let t = i64::from(a32) + i64::from(b32) + ci as i64;
                co = t >> 32 != 0;
                sat_or_wrap(t, 0, i64::from(u32::MAX), mods.clamp, 32)
            }
            Op::VSubCoU32 | Op::VSubbCoU32 => {
                let t = i64::from(a32) - i64::from(b32) - ci as i64;
                co = t < 0;
                sat_or_wrap(t, 0, i64::from(u32::MAX), mods.clamp, 32)
            }
            Op::VSubrevCoU32 | Op::VSubbrevCoU32 => {
                let t = i64::from(b32) - i64::from(a32) - ci as i64;
                co = t < 0;
                sat_or_wrap(t, 0, i64::from(u32::MAX), mods.clamp, 32)
            }
            Op::VCndmaskB32 => {
                if ci != 0 {
                    b32 as u64
                } else {
                    a32 as u64
                }
            }
            // 16-bit integer ops: the low halves; the result zero-extended to 32 bits, or
            // (VOP3 clamp) saturated for add/sub (Vega ISA VOP2 opcodes 38..50).
            Op::VAddU16 | Op::VSubU16 | Op::VSubrevU16 => {
                let (x, y) = if op == Op::VSubrevU16 {
                    (b32 & 0xFFFF, a32 & 0xFFFF)
                } else {
                    (a32 & 0xFFFF, b32 & 0xFFFF)
                };
                let t = if op == Op::VAddU16 {
                    x as i64 + y as i64
                } else {
                    x as i64 - y as i64
                };
                if mods.clamp {
                    t.clamp(0, 0xFFFF) as u64
                } else {
                    t as u64 & 0xFFFF
                }
            }
            Op::VMulLoU16 => (a32 as u16).wrapping_mul(b32 as u16) as u64,
            Op::VLshlrevB16 => ((b32 as u16) << (a32 & 15)) as u64,
            Op::VLshrrevB16 => ((b32 as u16) >> (a32 & 15)) as u64,
            Op::VAshrrevI16 => ((b32 as i16) >> (a32 & 15)) as u16 as u64,
            Op::VMaxU16 => (a32 as u16).max(b32 as u16) as u64,
            Op::VMinU16 => (a32 as u16).min(b32 as u16) as u64,
            Op::VMaxI16 => (a32 as i16).max(b32 as i16) as u16 as u64,
            Op::VMinI16 => (a32 as i16).min(b32 as i16) as u16 as u64,
            Op::VMulLoU32 => a32.wrapping_mul(b32) as u64,
            Op::VMulHiU32 => (a32 as u64 * b32 as u64) >> 32,
            Op::VMulHiI32 => ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as u32 as u64,
            Op::VMadU64U32 => {
                let t = a32 as u128 * b32 as u128 + c as u128;
                co = t >> 64 != 0;
                if mods.clamp && co {
                    u64::MAX
                } else {
                    t as u64
                }
            }
            Op::VMadI64I32 => {
                let t = a32 as i32 as i128 * b32 as i32 as i128 + c as i64 as i128;
                co = t > i64::MAX as i128 || t < i64::MIN as i128;
                if mods.clamp {
                    t.clamp(i64::MIN.into(), i64::MAX.into()) as u64
                } else {
                    t as u64
                }
            }
            Op::VBfeU32 => bfe(a32 as u64, b32 & 31, c32 & 31, false, 32) as u32 as u64,
            // A field that reaches past bit 31 is S0 >> offset, arithmetic: the bits above
            // bit 31 are sign copies (gfx9 VALU BFE_I32, as D3D's ibfe; found by
            // gfx9_vcov's alu_ops_match_the_isa).
            Op::VBfeI32 if c32 & 31 != 0 && (b32 & 31) + (c32 & 31) > 32 => {
                ((a32 as i32) >> (b32 & 31)) as u32 as u64
            }
            Op::VBfeI32 => bfe(a32 as u64, b32 & 31, c32 & 31, true, 32) as u32 as u64,
            Op::VBfiB32 => ((a32 & b32) | (!a32 & c32)) as u64,
            Op::VAlignbitB32 => ((((a32 as u64) << 32) | b32 as u64) >> (c32 & 31)) as u32 as u64,
            Op::VPermB32 => u64::from(perm_b32(a32, b32, c32)),
            Op::VAlignbyteB32 => {
                ((((a32 as u64) << 32) | b32 as u64) >> (8 * (c32 & 3))) as u32 as u64
            }
            Op::VAdd3U32 => a32.wrapping_add(b32).wrapping_add(c32) as u64,
            Op::VLshlAddU32 => (a32 << (b32 & 31)).wrapping_add(c32) as u64,
            Op::VAddLshlU32 => (a32.wrapping_add(b32) << (c32 & 31)) as u64,
            Op::VLshlOrB32 => ((a32 << (b32 & 31)) | c32) as u64,
            Op::VAndOrB32 => ((a32 & b32) | c32) as u64,
            Op::VOr3B32 => (a32 | b32 | c32) as u64,
            Op::VXadU32 => (a32 ^ b32).wrapping_add(c32) as u64,
            // Vega ISA V_SAD_U32: the unsigned absolute difference plus S2.
            Op::VSadU32 => sat_or_wrap(
                i64::from(a32.abs_diff(b32)) + i64::from(c32),
                0,
                i64::from(u32::MAX),
                mods.clamp,
                32,
            ),
            Op::VLshlAddU64 => (a << (b32 & 7)).wrapping_add(c),
            Op::VBcntU32B32 => a32.count_ones().wrapping_add(b32) as u64,
            Op::VMbcntLoU32B32 => {
                let below = (1u64 << lane.min(32)) - 1;
                ((a32 as u64 & below).count_ones()).wrapping_add(b32) as u64
            }
            Op::VMbcntHiU32B32 => {
                let below = if lane <= 32 {
                    0
                } else {
                    (1u64 << (lane - 32)) - 1
                };
                ((a32 as u64 & below).count_ones()).wrapping_add(b32) as u64
            }
            // Division and its helpers (fdiv.rs); reciprocal, square root, exp2/log2:
            // correctly rounded, within the 1 ULP the ISA states; invalid operands give the
            // ISA's default NaN.
            Op::VRcpF32 | Op::VRcpIflagF32 => fr(1.0 / fa),
            Op::VRsqF32 => canon32(a32, (1.0 / f64::from(fa).sqrt()) as f32),
            Op::VSqrtF32 => canon32(a32, fa.sqrt()),
            Op::VExpF32 => fr(f64::from(fa).exp2() as f32),
            Op::VLogF32 => canon32(a32, f64::from(fa).log2() as f32),
            Op::VRcpF64 => (1.0 / da).to_bits(),
            Op::VRsqF64 => canon64(a, 1.0 / da.sqrt()),
            Op::VSqrtF64 => canon64(a, da.sqrt()),
            Op::VTruncF64 => da.trunc().to_bits(),
            Op::VCeilF64 => da.ceil().to_bits(),
            Op::VFloorF64 => da.floor().to_bits(),
            Op::VRndneF64 => da.round_ties_even().to_bits(),
            Op::VFractF64 => canon64(a, fract64(da)),
            Op::VFrexpMantF32 => fdiv::frexp_mant(fdiv::SINGLE, a32 as u64),
            Op::VFrexpExpI32F32 => fdiv::frexp_exp(fdiv::SINGLE, a32 as u64) as u32 as u64,
            Op::VFrexpMantF64 => fdiv::frexp_mant(fdiv::DOUBLE, a),
            Op::VFrexpExpI32F64 => fdiv::frexp_exp(fdiv::DOUBLE, a) as u32 as u64,
            Op::VLdexpF32 => fdiv::ldexp(fdiv::SINGLE, a32 as u64, b32 as i32),
            Op::VLdexpF64 => fdiv::ldexp(fdiv::DOUBLE, a, b32 as i32),
            // The exponent is src1's low 16 bits as an i16 (Vega ISA: `S0.f16 * 2 ** S1.i16`).
            Op::VLdexpF16 => fdiv::ldexp(fdiv::HALF, a & 0xFFFF, i32::from(b32 as u16 as i16)),
            Op::VTrigPreopF64 => fdiv::trig_preop(a, b32),
            // Hardware sine/cosine: the argument in revolutions, `sin(2π·x)` (Vega ISA VOP1;
            // its accuracy is stated for |x| ≤ 256; here the host's value everywhere, ±∞ the
            // default NaN).
            Op::VSinF32 => canon32(a32, (f64::from(fa) * core::f64::consts::TAU).sin() as f32),
            Op::VCosF32 => canon32(a32, (f64::from(fa) * core::f64::consts::TAU).cos() as f32),
            // f16 transcendentals and helpers: the f64 result rounded once to f16.
            Op::VRcpF16 => f16_unary(a, |x| 1.0 / x),
            Op::VSqrtF16 => f16_unary(a, f64::sqrt),
            Op::VRsqF16 => f16_unary(a, |x| 1.0 / x.sqrt()),
            Op::VLogF16 => f16_unary(a, f64::log2),
            Op::VExpF16 => f16_unary(a, f64::exp2),
            Op::VSinF16 => f16_unary(a, |x| (x * core::f64::consts::TAU).sin()),
            Op::VCosF16 => f16_unary(a, |x| (x * core::f64::consts::TAU).cos()),
            Op::VFractF16 => f16_unary(a, |x| (x - x.floor()).min(f16::to_f64(0x3BFF))),
            Op::VFrexpMantF16 => fdiv::frexp_mant(fdiv::HALF, a & 0xFFFF),
            Op::VFrexpExpI16F16 => u64::from(fdiv::frexp_exp(fdiv::HALF, a & 0xFFFF) as i16 as u16),
            Op::VFmaF64 => da.mul_add(db, f64::from_bits(c)).to_bits(),
            Op::VFmacF64 => da
                .mul_add(db, f64::from_bits(fm.src(2, acc64(w, lane))))
                .to_bits(),
            Op::VDivScaleF32 => {
                let (r, v) = fdiv::div_scale(fdiv::SINGLE, a32 as u64, b32 as u64, c32 as u64);
                co = v;
                r
            }
            Op::VDivScaleF64 => {
                let (r, v) = fdiv::div_scale(fdiv::DOUBLE, a, b, c);
                co = v;
                r
            }
            Op::VDivFmasF32 => {
                let v = vcc_in >> lane & 1 != 0;
                let (a, b, c) = (a32 as u64, b32 as u64, c32 as u64);
                let scale = fdiv::div_fmas_scale(fdiv::SINGLE, c, v);
                fm.div_fmas(op, a, b, c, scale)
                    .unwrap_or_else(|| fdiv::div_fmas(fdiv::SINGLE, a, b, c, v))
            }
            Op::VDivFmasF64 => {
                let v = vcc_in >> lane & 1 != 0;
                let scale = fdiv::div_fmas_scale(fdiv::DOUBLE, c, v);
                fm.div_fmas(op, a, b, c, scale)
                    .unwrap_or_else(|| fdiv::div_fmas(fdiv::DOUBLE, a, b, c, v))
            }
            Op::VDivFixupF32 => fdiv::div_fixup(fdiv::SINGLE, a32 as u64, b32 as u64, c32 as u64),
            Op::VDivFixupF64 => fdiv::div_fixup(fdiv::DOUBLE, a, b, c),
            Op::VDivFixupF16 => fdiv::div_fixup(fdiv::HALF, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF),
            // Issue 39: gfx9's VOP3-only integer, pack and byte ops (Vega ISA VOP3 opcode
            // table, 0x1d9..0x2a0; `clamp` saturates the integer results).
            Op::VAddI32 | Op::VSubI32 => {
                let (x, y) = (i64::from(a32 as i32), i64::from(b32 as i32));
                let t = if op == Op::VAddI32 { x + y } else { x - y };
                sat_or_wrap(t, i64::from(i32::MIN), i64::from(i32::MAX), mods.clamp, 32)
            }
            Op::VAddI16 | Op::VSubI16 => {
                let (x, y) = (i64::from(a32 as i16), i64::from(b32 as i16));
                let t = if op == Op::VAddI16 { x + y } else { x - y };
                sat_or_wrap(t, i64::from(i16::MIN), i64::from(i16::MAX), mods.clamp, 16)
            }
            Op::VMadU16 => {
                let t = i64::from(a32 as u16) * i64::from(b32 as u16) + i64::from(c32 as u16);
                sat_or_wrap(t, 0, 0xFFFF, mods.clamp, 16)
            }
            Op::VMadI16 => {
                let t = i64::from(a32 as i16) * i64::from(b32 as i16) + i64::from(c32 as i16);
                sat_or_wrap(t, i64::from(i16::MIN), i64::from(i16::MAX), mods.clamp, 16)
            }
            Op::VMadU32U16 => {
                let t = i64::from(a32 as u16) * i64::from(b32 as u16) + i64::from(c32);
                sat_or_wrap(t, 0, i64::from(u32::MAX), mods.clamp, 32)
            }
            Op::VMadI32I16 => {
                let t = i64::from(a32 as i16) * i64::from(b32 as i16) + i64::from(c32 as i32);
                sat_or_wrap(t, i64::from(i32::MIN), i64::from(i32::MAX), mods.clamp, 32)
            }
            Op::VPackB32F16 => (a & 0xFFFF) | (b & 0xFFFF) << 16,
            Op::VBfmB32 => (((1u64 << (a32 & 31)) - 1) << (b32 & 31)) & 0xFFFF_FFFF,
            Op::VMin3F16 => {
                let ab = mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, false, fm.ieee);
                mode::min_max(mode::H, ab, c & 0xFFFF, false, fm.ieee)
            }
            Op::VMax3F16 => {
                let ab = mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, true, fm.ieee);
                mode::min_max(mode::H, ab, c & 0xFFFF, true, fm.ieee)
            }
            Op::VMed3F16 => mode::med3(mode::H, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF, fm.ieee),
            Op::VMin3I16 => (a32 as i16).min(b32 as i16).min(c32 as i16) as u16 as u64,
            Op::VMax3I16 => (a32 as i16).max(b32 as i16).max(c32 as i16) as u16 as u64,
            Op::VMin3U16 => (a32 as u16).min(b32 as u16).min(c32 as u16) as u64,
            Op::VMax3U16 => (a32 as u16).max(b32 as u16).max(c32 as u16) as u64,
            Op::VMed3I16 => {
                let (x, y, z) = (a32 as i16, b32 as i16, c32 as i16);
                x.min(y).max(x.max(y).min(z)) as u16 as u64
            }
            Op::VMed3U16 => {
                let (x, y, z) = (a32 as u16, b32 as u16, c32 as u16);
                x.min(y).max(x.max(y).min(z)) as u64
            }
            Op::VSadU8 | Op::VSadHiU8 | Op::VMsadU8 => {
                // MSAD skips the bytes whose reference (S1) byte is 0.
                let sum = if op == Op::VMsadU8 {
                    msad_u8(a32, b32)
                } else {
                    sad_u8(a32, b32)
                };
                let sum = if op == Op::VSadHiU8 { sum << 16 } else { sum };
                sat_or_wrap(
                    i64::from(sum) + i64::from(c32),
                    0,
                    i64::from(u32::MAX),
                    mods.clamp,
                    32,
                )
            }
            Op::VSadU16 => {
                let sum = (a32 & 0xFFFF).abs_diff(b32 & 0xFFFF) + (a32 >> 16).abs_diff(b32 >> 16);
                sat_or_wrap(
                    i64::from(sum) + i64::from(c32),
                    0,
                    i64::from(u32::MAX),
                    mods.clamp,
                    32,
                )
            }
            Op::VLerpU8 => (0..4).fold(0u64, |acc, k| {
                let byte = |x: u32| x >> (8 * k) & 0xFF;
                let r = (byte(a32) + byte(b32) + (c32 >> (8 * k) & 1)) >> 1;
                acc | u64::from(r) << (8 * k)
            }),
            Op::VSatPkU8I16 => {
                let sat = |h: u32| (h as u16 as i16).clamp(0, 255) as u64;
                sat(a32) | sat(a32 >> 16) << 8
            }
            // Issue 39: the VOP1 normalized and legacy conversions (Vega ISA VOP1 75..78).
            Op::VCvtNormI16F16 => u64::from(fp8::to_snorm16(f16::to_f64(a as u16))),
            Op::VCvtNormU16F16 => u64::from(fp8::to_unorm16(f16::to_f64(a as u16))),
            // V_EXP_LEGACY_F32: 2^x of inputs from -126 up, 0 below (no denormal results
            // whatever FP_DENORM says); a NaN stays a NaN.
            Op::VExpLegacyF32 if fa.is_nan() => u64::from(a32 | 0x0040_0000),
            Op::VExpLegacyF32 if fa < -126.0 => 0,
            Op::VExpLegacyF32 => fr(f64::from(fa).exp2() as f32),
            // V_LOG_LEGACY_F32: a denormal input is read as 0 whatever FP_DENORM says (so
            // ±0 and the denormals give -∞), a negative one gives the negative default NaN,
            // a NaN itself quieted; log2(1) = 0.
            Op::VLogLegacyF32 if fa.is_subnormal() || fa == 0.0 => fr(f32::NEG_INFINITY),
            Op::VLogLegacyF32 if fa < 0.0 => 0xFFC0_0000,
            Op::VLogLegacyF32 if fa.is_nan() => u64::from(a32 | 0x0040_0000),
            Op::VLogLegacyF32 => fr(f64::from(fa).log2() as f32),
            // The gfx940 FP8/BF8 conversions (CDNA3 ISA VOP1 84..87, VOP3 0x2a2..0x2a5).
            // The source byte (word) is the one SDWA selects (llvm-mc-19 has no VOP3 op_sel
            // for them), else the low one.
            Op::VCvtF32Fp8 | Op::VCvtF32Bf8 => {
                fr(fp8::to_f32(a32 as u8, fp8_format(op, inst.target)))
            }
            Op::VCvtPkF32Fp8 | Op::VCvtPkF32Bf8 => {
                let word = a32;
                let f = fp8_format(op, inst.target);
                fr(fp8::to_f32(word as u8, f)) | fr(fp8::to_f32((word >> 8) as u8, f)) << 32
            }
            Op::VCvtPkFp8F32 | Op::VCvtPkBf8F32 => {
                let f = fp8_format(op, inst.target);
                let sat = fp8_saturate(w.mode, inst);
                let pk = u32::from(fp8::from_f32(fa, f, sat))
                    | u32::from(fp8::from_f32(fb, f, sat)) << 8;
                // op_sel[3]: the pair goes to D[31:16], else D[15:0]; the other half kept.
                u64::from(if mods.op_sel & 8 != 0 {
                    d_old & 0xFFFF | pk << 16
                } else {
                    d_old & 0xFFFF_0000 | pk
                })
            }
            Op::VCvtSrFp8F32 | Op::VCvtSrBf8F32 => {
                // op_sel[3:2]: the byte of D written; the others kept. S1 is the random
                // dword.
                let sh = 8 * u32::from(mods.op_sel >> 2 & 3);
                let f = fp8_format(op, inst.target);
                let v = fp8::stochastic(fa, b32, f, fp8_saturate(w.mode, inst));
                u64::from(d_old & !(0xFF << sh) | u32::from(v) << sh)
            }
            // Issue 39: the cube-map face and coordinates (Vega ISA VOP3 0x1c4..0x1c7).
            Op::VCubeidF32 | Op::VCubescF32 | Op::VCubetcF32 | Op::VCubemaF32 => {
                fr(cube(op, fa, fb, fc))
            }
            // V_CVT_PK_U8_F32: S0 to an unsigned byte into byte S1[1:0] of S2.
            Op::VCvtPkU8F32 => {
                let sh = 8 * (b32 & 3);
                u64::from(c32 & !(0xFF << sh) | fp8::to_u8_sat(fa) << sh)
            }
            // V_CVT_PKACCUM_U8_F32: the same into byte S1[1:0] of D.
            Op::VCvtPkaccumU8F32 => {
                let sh = 8 * (b32 & 3);
                u64::from(d_old & !(0xFF << sh) | fp8::to_u8_sat(fa) << sh)
            }
            Op::VCvtPknormI16F32 => {
                let n = |x: f32| u64::from(fp8::to_snorm16(f64::from(x)));
                n(fa) | n(fb) << 16
            }
            Op::VCvtPknormU16F32 => {
                let n = |x: f32| u64::from(fp8::to_unorm16(f64::from(x)));
                n(fa) | n(fb) << 16
            }
            Op::VCvtPknormI16F16 => {
                let n = |x: u64| u64::from(fp8::to_snorm16(f16::to_f64(x as u16)));
                n(a) | n(b) << 16
            }
            Op::VCvtPknormU16F16 => {
                let n = |x: u64| u64::from(fp8::to_unorm16(f16::to_f64(x as u16)));
                n(a) | n(b) << 16
            }
            // V_CVT_PK_I16_I32/V_CVT_PK_U16_U32: saturating 32- to 16-bit packs.
            Op::VCvtPkI16I32 => {
                let n = |x: u32| u64::from((x as i32).clamp(-32768, 32767) as i16 as u16);
                n(a32) | n(b32) << 16
            }
            Op::VCvtPkU16U32 => u64::from(a32.min(0xFFFF)) | u64::from(b32.min(0xFFFF)) << 16,
            // The gfx8 forms of the f16 and 16-bit mads (Vega ISA VOP3 0x1ea..0x1ef): the
            // same results as v_mad_f16, v_mad_u16, v_mad_i16, v_fma_f16, v_div_fixup_f16.
            Op::VMadLegacyF16 => u64::from(mode::mad16(a as u16, b as u16, c as u16, 0)),
            Op::VFmaLegacyF16 => u64::from(f16::fma(a as u16, b as u16, c as u16)),
            Op::VDivFixupLegacyF16 => {
                fdiv::div_fixup(fdiv::HALF, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF)
            }
            Op::VMadLegacyU16 => {
                let t = i64::from(a32 as u16) * i64::from(b32 as u16) + i64::from(c32 as u16);
                sat_or_wrap(t, 0, 0xFFFF, mods.clamp, 16)
            }
            Op::VMadLegacyI16 => {
                let t = i64::from(a32 as i16) * i64::from(b32 as i16) + i64::from(c32 as i16);
                sat_or_wrap(t, i64::from(i16::MIN), i64::from(i16::MAX), mods.clamp, 16)
            }
            // V_QSAD_PK_U16_U8 / V_MQSAD_PK_U16_U8: four (masked) SADs of S1 against the
            // byte windows S0[31:0], S0[39:8], S0[47:16], S0[55:24], each plus its 16-bit
            // accumulator of S2.
            Op::VQsadPkU16U8 | Op::VMqsadPkU16U8 => (0..4).fold(0u64, |acc, k| {
                let window = (a >> (8 * k)) as u32;
                let sad = if op == Op::VQsadPkU16U8 {
                    sad_u8(window, b32)
                } else {
                    msad_u8(window, b32)
                };
                let t = i64::from(sad) + i64::from((c >> (16 * k)) as u16);
                acc | sat_or_wrap(t, 0, 0xFFFF, mods.clamp, 16) << (16 * k)
            }),
            _ => return Err(not_implemented(inst)),
        };
        let r = if fm.directed_rounding() {
            let acc = match op {
                Op::VMacF32 | Op::VFmacF32 => fm.src(2, u64::from(d_old)),
                Op::VMacF16 => fm.src(2, u64::from(d_old) & 0xFFFF),
                Op::VFmacF64 => fm.src(2, acc64(w, lane)),
                _ => c,
            };
            fm.directed(op, a, b, acc).unwrap_or(r)
        } else {
            r
        };
        let r = if op.attrs().out_f16 {
            let mut h = r as u16;
            match mods.omod {
                1 => h = f16::mul(h, 0x4000),
                2 => h = f16::mul(h, 0x4400),
                3 => h = f16::mul(h, 0x3800),
                _ => {}
            }
            if mods.clamp {
                h = fm.clamp16(h);
            }
            u64::from(h)
        } else if op.attrs().f32_result {
            let mut x = f32::from_bits(r as u32);
            {
                match mods.omod {
                    1 => x *= 2.0,
                    2 => x *= 4.0,
                    3 => x *= 0.5,
                    _ => {}
                }
                if mods.clamp {
                    x = fm.clamp32(x);
                }
                if mods.omod != 0 || mods.clamp {
                    x.to_bits() as u64
                } else {
                    r
                }
            }
        } else if op.attrs().result_fp == Fp::F64 && (mods.omod != 0 || mods.clamp) {
            // An f64 result takes the output modifier and clamp as an f32 one does (they
            // were ignored before issue 39).
            let mut x = f64::from_bits(r);
            match mods.omod {
                1 => x *= 2.0,
                2 => x *= 4.0,
                3 => x *= 0.5,
                _ => {}
            }
            if mods.clamp {
                x = fm.clamp64(x);
            }
            x.to_bits()
        } else {
            r
        };
        let r = fm.result(r);
        let r = match mods.sdwa {
            // (An SDWA result is one dword but for the FP8 pair's two, which have no
            // destination select.)
            Some(sd) if inst.encoding != Encoding::Vop3 && out_w <= 1 => {
                sdwa_place(r as u32, d_old, sd.dst_sel, sd.dst_unused) as u64
            }
            _ => r,
        };
        let r = if mods.op_sel & 8 != 0 && result16(op) {
            // op_sel[3]: the 16-bit result goes to the high half, the low half is kept.
            u64::from(d_old & 0xFFFF) | (r & 0xFFFF) << 16
        } else if keeps_high16(op) {
            // op_sel[3] clear: the low half, the high half kept.
            u64::from(d_old & 0xFFFF_0000) | r & 0xFFFF
        } else {
            r
        };
        set_vdst(w, &inst.dst, lane, r, out_w);
        carry_out |= (co as u64) << lane;
    }
    if writes_carry {
        set_sdst(w, &inst.sdst, carry_out);
    }
    Ok(())
}

/// A three-input bitwise function by its truth table: result bit i is `table`'s bit number
/// `(a_i << 2) | (b_i << 1) | c_i`.
pub(crate) fn bitop3(table: u8, a: u32, b: u32, c: u32) -> u32 {
    (0..8u32).fold(0, |r, idx| {
        if table >> idx & 1 == 0 {
            return r;
        }
        let pick = |x: u32, bit: u32| if idx >> bit & 1 != 0 { x } else { !x };
        r | pick(a, 2) & pick(b, 1) & pick(c, 0)
    })
}

/// gfx950's `v_permlane16_swap_b32` (the odd 16-lane rows of the destination register swap
/// with the even rows of the source register) and `v_permlane32_swap_b32` (lanes 32..63 of
/// the destination with lanes 0..31 of the source); both registers are written. Both read
/// every value before writing, so one register named twice swaps with itself.
///
/// # Errors
/// [`Status::IllegalInstruction`] for an EXEC with a lane off, a DPP or SDWA form, or a
/// source that is no VGPR: what the hardware does then (`fi`, `bound_ctrl`) is not
/// modelled.
fn lane_swap(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let op = inst.op();
    let (Operand::Vgpr { index: d, .. }, Operand::Vgpr { index: s, .. }) = (inst.dst, inst.src[0])
    else {
        bail!(Status::IllegalInstruction, "{op}: the source is no VGPR");
    };
    if w.exec() != u64::MAX || inst.mods.dpp.is_some() || inst.mods.sdwa.is_some() {
        bail!(
            Status::IllegalInstruction,
            "{op} with EXEC {:#x} (or DPP/SDWA): only all 64 lanes on is modelled",
            w.exec()
        );
    }
    let (d, s) = (d as usize, s as usize);
    let old_d: [u32; WAVE_SIZE] = core::array::from_fn(|l| w.v(d, l));
    let old_s: [u32; WAVE_SIZE] = core::array::from_fn(|l| w.v(s, l));
    // (destination lane, source lane) pairs that trade values.
    let pairs: &mut dyn Iterator<Item = (usize, usize)> = match op {
        Op::VPermlane16SwapB32 => &mut [0usize, 32]
            .into_iter()
            .flat_map(|row| (0..16).map(move |l| (row + 16 + l, row + l))),
        _ => &mut (0..32).map(|l| (32 + l, l)),
    };
    for (dl, sl) in pairs {
        w.set_v(d, dl, old_s[sl]);
        w.set_v(s, sl, old_d[dl]);
    }
    Ok(())
}

/// The accumulating VOP2 forms of packed math (gfx908+, CDNA1 ISA VOP2 opcodes 55..=60):
/// `v_pk_fmac_f16` (each f16 half of D = S0 × S1 + D, fused, under MODE's f16 denormal mode
/// as `v_pk_fma_f16`) and `v_dot2c_f32_f16`, `v_dot2c_i32_i16`, `v_dot4c_i32_i8`,
/// `v_dot8c_i32_i4` (D = the dot product of S0 and S1 plus D, as [`dot`] computes
/// `v_dot2_f32_f16`, `v_dot2_i32_i16`, `v_dot4_i32_i8`, `v_dot8_i32_i4` with D as S2; the VOP3
/// form's `clamp` saturates the same way). With `DPP` src0 is `dpp_src0[lane]`.
///
/// # Errors
/// [`Status::IllegalInstruction`] for `neg`/`abs` on a dot product's packed f16 sources
/// (whether they act on one half or both is not modelled).
pub(crate) fn accumulate_packed<const DPP: bool>(
    w: &mut Wave,
    inst: &Instruction,
    lanes: u64,
    dpp_src0: &[u32; WAVE_SIZE],
) -> Result<()> {
    let op = inst.op();
    let m = inst.mods;
    if m.neg.iter().chain(&m.abs).any(|&b| b) {
        bail!(
            Status::IllegalInstruction,
            "{op}: neg/abs of a packed source: not modelled"
        );
    }
    if op == Op::VPkFmacF16 && (m.clamp || m.omod != 0) {
        // gfx950's v_pk_fmac_f16_e64 (LLVM 22 decodes it): what clamp and omod do to a
        // packed f16 result there is not documented.
        bail!(
            Status::IllegalInstruction,
            "{op}: clamp or omod of the VOP3 form: not modelled"
        );
    }
    let fm = mode::FloatMode::for_valu(w.mode, Op::VPkFmaF16, false, false, true);
    let kind = match op {
        Op::VDot2cF32F16 => Some((16, false, true)),
        Op::VDot2cI32I16 => Some((16, true, false)),
        Op::VDot4cI32I8 => Some((8, true, false)),
        Op::VDot8cI32I4 => Some((4, true, false)),
        _ => None,
    };
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        let a = if DPP {
            dpp_src0[lane]
        } else {
            pk_src(w, &inst.src[0], lane, false) as u32
        };
        let b = pk_src(w, &inst.src[1], lane, false) as u32;
        let d = match inst.dst {
            Operand::Vgpr { index, .. } => w.v(index as usize, lane),
            _ => 0,
        };
        let r = match kind {
            Some((bits, signed, float)) => dot_value(bits, signed, float, [a, b, d], &m),
            None => {
                let half = |v: u32, k: u32| fm.src(0, u64::from(v >> (16 * k) & 0xFFFF)) as u16;
                let h = |k: u32| {
                    let (x, y, z) = (half(a, k), half(b, k), half(d, k));
                    let r = u64::from(f16::fma(x, y, z));
                    let r = if fm.round64 != 0 {
                        let wide = |v: u16| u64::from(v);
                        fm.directed(op, wide(x), wide(y), wide(z)).unwrap_or(r)
                    } else {
                        r
                    };
                    fm.result(r) as u32
                };
                h(0) | h(1) << 16
            }
        };
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
    Ok(())
}

/// The bits `sel` of `v`, zero- or (`sext`) sign-extended to 32 bits (SDWA `SRC*_SEL`).
pub(crate) fn sdwa_select(v: u32, sel: SdwaSel, sext: bool) -> u32 {
    let (shift, n) = sel.bits();
    if n == 32 {
        return v;
    }
    let x = v >> shift & ((1 << n) - 1);
    if sext && x >> (n - 1) & 1 != 0 {
        x | !((1 << n) - 1)
    } else {
        x
    }
}

/// A 32-bit result `r` placed in the destination per SDWA `DST_SEL`: its low bits go to the
/// selected byte/word; the other bits are zeros (`dst_unused` 0), zeros below and the
/// result's sign above (1), or `old`'s (2).
pub(crate) fn sdwa_place(r: u32, old: u32, sel: SdwaSel, unused: u8) -> u32 {
    let (shift, n) = sel.bits();
    if n == 32 {
        return r;
    }
    let field = ((1u32 << n) - 1) << shift;
    let placed = (r << shift) & field;
    match unused {
        0 => placed,
        1 => {
            let below = (1u32 << shift) - 1;
            let above = !(field | below);
            if r >> (n - 1) & 1 != 0 {
                placed | above
            } else {
                placed
            }
        }
        _ => placed | old & !field,
    }
}

/// The lane whose src0 lane `lane` reads under DPP control `ctrl`, or `None` when that is
/// out of range (Vega ISA §12.7 "DPP_CTRL").
pub(crate) fn dpp_source(ctrl: u16, lane: usize) -> Option<usize> {
    let row = lane & !15;
    let pos = lane & 15;
    let n = (ctrl & 15) as usize;
    match ctrl {
        0x000..=0x0FF => Some((lane & !3) + (ctrl as usize >> (2 * (lane & 3)) & 3)),
        0x101..=0x10F => (pos + n < 16).then_some(lane + n),
        0x111..=0x11F => (pos >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + (pos + 16 - n) % 16),
        0x130 => (lane < 63).then_some(lane + 1),
        0x134 => Some((lane + 1) % 64),
        0x138 => lane.checked_sub(1),
        0x13C => Some((lane + 63) % 64),
        0x140 => Some(row + 15 - pos),
        0x141 => Some((lane & !7) + 7 - (lane & 7)),
        // row_bcast:15: row r > 0 reads the last lane of row r - 1.
        0x142 => (row > 0).then(|| row - 1),
        // row_bcast:31: rows 2 and 3 read lane 31.
        0x143 => (row >= 32).then_some(31),
        // gfx90a row_newbcast:n: every lane of a row reads lane n of its row.
        0x150..=0x15F => Some(row + n),
        _ => None,
    }
}

/// A DPP instruction: every lane's src0 is fetched from its source lane before any lane
/// writes; lanes masked by row/bank mask, or with no source lane and no `bound_ctrl`, keep
/// their destination.
pub(crate) fn valu_dpp(w: &mut Wave, inst: &Instruction, d: Dpp) -> Result<()> {
    let Operand::Vgpr { index, .. } = inst.src[0] else {
        return Err(not_implemented(inst));
    };
    let r = index as usize;
    let exec = w.exec();
    let mut src0 = [0u32; WAVE_SIZE];
    let mut lanes = 0u64;
    for lane in (0..WAVE_SIZE).filter(|&l| exec >> l & 1 != 0 && dpp_writes(d, l)) {
        src0[lane] = match dpp_source(d.ctrl, lane).filter(|&s| exec >> s & 1 != 0) {
            Some(s) => w.v(r, s),
            None if d.bound_ctrl => 0,
            None => continue,
        };
        lanes |= 1 << lane;
    }
    valu::<true>(w, inst, lanes, &src0)
}

/// `v` with a 32-bit float's `abs` then `neg` applied when `f32_in`.
pub(crate) fn float_mods32(mut v: u64, f32_in: bool, abs: bool, neg: bool) -> u64 {
    if f32_in {
        if abs {
            v &= 0x7FFF_FFFF;
        }
        if neg {
            v ^= 0x8000_0000;
        }
    }
    v
}

/// Whether DPP lets `lane` write: its row's bit in `row_mask` and its bank's (lanes 4k..4k+3
/// of the row) in `bank_mask`.
pub(crate) fn dpp_writes(d: Dpp, lane: usize) -> bool {
    d.row_mask >> (lane / 16) & 1 != 0 && d.bank_mask >> (lane % 16 / 4) & 1 != 0
}
