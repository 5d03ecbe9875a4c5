//! gfx950's scaled conversions between f32/f16/bf16 and the OCP FP8, BF8 and FP4 formats
//! (CDNA4 ISA §12.11 `V_CVT_SCALEF32_*`, §7.3 tables 30 and 32 and "Converts with Scale").
//!
//! The scale operand is an f32 whose exponent field (bits 30:23) is read as an E8M0 scale
//! `2^(e - 127)` (§7.3: "the float exponent portion is used"). A conversion to a small
//! format divides by the scale, then rounds to nearest even ([`fp8::from_f64`], [`fp8::small::fp4_from_f64`]); a
//! conversion from one converts exactly, then multiplies by the scale and rounds to the wide
//! type. Both steps are exact in f64, so only the last rounding happens, once.
//!
//! Where the operands sit (the pseudocode of each instruction, and LLVM 22's encoding of the
//! `llvm.amdgcn.cvt.scalef32.*` intrinsics, which carry the previous destination for the
//! partial writes):
//! - to FP8/BF8: two f32 sources (S0, S1; scale S2) or S0's f16/bf16 pair (scale S1); the
//!   packed pair goes to D's word op_sel[3], the other word kept;
//! - to FP4: the same sources; the pair of nibbles goes to D's byte op_sel[3:2];
//! - from FP8/BF8 pairs: S0's word op_sel[0] (scale S1) to two f32 (D, D+1) or an f16/bf16
//!   pair; from one FP8/BF8: S0's byte op_sel[1:0] to an f32, or to the f16 half op_sel[3] of
//!   D (the other half kept);
//! - from FP4 pairs: S0's byte op_sel[1:0], low nibble first.
//!
//! Rules (§7.3): conversions from FP4/FP8 take no input modifiers; from f32, MODE's f32
//! input denormal mode applies; f16/bf16 inputs keep denormals (§7.4); to FP8/BF8
//! MODE.FP16_OVFL saturates; to FP4 a value beyond ±6 saturates and one below the smallest
//! denormal after rounding is a zero of its sign. Not modelled, and refused by name: a scale
//! whose exponent field is 0xFF (E8M0's NaN: what the hardware then writes is not
//! documented), a NaN converted to FP4 (FP4 has none, and the ISA does not say what it
//! becomes), `neg`/`abs` on a packed f16/bf16 source (whether they act on one half or both
//! is not documented), an inline float constant as a 16-bit or small-format source, op_sel
//! bits beyond the documented ones, `clamp` and `omod`. The stochastic-rounding forms
//! (`_sr_`) are not run: how their seed's bits enter the rounding of a scaled value is not
//! documented.

#[allow(unused_imports)]
use super::*;

/// A narrow format of the scaled conversions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Small {
    Fp8,
    Bf8,
    Fp4,
}

/// A wide type of the scaled conversions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wide {
    F32,
    F16,
    Bf16,
}

/// What a scaled conversion does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Two wide values to a packed small pair: f32 from S0 and S1 (scale S2), or f16/bf16
    /// from S0's halves (scale S1).
    Down(Wide, Small),
    /// A small pair from S0 to two wide values (scale S1).
    UpPair(Small, Wide),
    /// One small value from S0's byte op_sel[1:0] to one wide value (scale S1).
    UpOne(Small, Wide),
}

fn shape(op: Op) -> Option<Shape> {
    use Shape::*;
    use Small::{Bf8, Fp4, Fp8};
    use Wide::{Bf16, F16, F32};
    Some(match op {
        Op::VCvtScalef32PkFp8F32 => Down(F32, Fp8),
        Op::VCvtScalef32PkBf8F32 => Down(F32, Bf8),
        Op::VCvtScalef32PkFp4F32 => Down(F32, Fp4),
        Op::VCvtScalef32PkFp8F16 => Down(F16, Fp8),
        Op::VCvtScalef32PkBf8F16 => Down(F16, Bf8),
        Op::VCvtScalef32PkFp4F16 => Down(F16, Fp4),
        Op::VCvtScalef32PkFp8Bf16 => Down(Bf16, Fp8),
        Op::VCvtScalef32PkBf8Bf16 => Down(Bf16, Bf8),
        Op::VCvtScalef32PkFp4Bf16 => Down(Bf16, Fp4),
        Op::VCvtScalef32PkF32Fp8 => UpPair(Fp8, F32),
        Op::VCvtScalef32PkF32Bf8 => UpPair(Bf8, F32),
        Op::VCvtScalef32PkF32Fp4 => UpPair(Fp4, F32),
        Op::VCvtScalef32PkF16Fp8 => UpPair(Fp8, F16),
        Op::VCvtScalef32PkF16Bf8 => UpPair(Bf8, F16),
        Op::VCvtScalef32PkF16Fp4 => UpPair(Fp4, F16),
        Op::VCvtScalef32PkBf16Fp8 => UpPair(Fp8, Bf16),
        Op::VCvtScalef32PkBf16Bf8 => UpPair(Bf8, Bf16),
        Op::VCvtScalef32PkBf16Fp4 => UpPair(Fp4, Bf16),
        Op::VCvtScalef32F32Fp8 => UpOne(Fp8, F32),
        Op::VCvtScalef32F32Bf8 => UpOne(Bf8, F32),
        Op::VCvtScalef32F16Fp8 => UpOne(Fp8, F16),
        Op::VCvtScalef32F16Bf8 => UpOne(Bf8, F16),
        _ => return None,
    })
}

/// Whether [`scaled_cvt`] runs `op`.
pub(crate) fn is_scaled_cvt(op: Op) -> bool {
    shape(op).is_some()
}

/// A wide value of a lane as an f64: the f32 (`bits` its 32 bits), or the f16/bf16 in
/// `bits`' low half.
fn wide_to_f64(bits: u32, ty: Wide) -> f64 {
    match ty {
        Wide::F32 => f64::from(f32::from_bits(bits)),
        Wide::F16 => f16::to_f64(bits as u16),
        Wide::Bf16 => f64::from(f32::from_bits(bits << 16)),
    }
}

/// `x` (exact in f64) as the bits of `ty`, rounded to nearest even.
fn f64_to_wide(x: f64, ty: Wide) -> u32 {
    match ty {
        Wide::F32 => (x as f32).to_bits(),
        Wide::F16 => u32::from(f16::from_f64(x)),
        // Every value a small format times a power of two gives has at most four significant
        // bits, so its f32 is exact and is its bf16 too (a NaN stays quiet).
        Wide::Bf16 => (x as f32).to_bits() >> 16,
    }
}

/// A small code as an f64 (exact; a NaN code gives a NaN of its sign).
fn small_to_f64(code: u8, f: Small) -> f64 {
    match f {
        Small::Fp8 => f64::from(fp8::to_f32(code, fp8::Format::OcpFp8)),
        Small::Bf8 => f64::from(fp8::to_f32(code, fp8::Format::OcpBf8)),
        Small::Fp4 => fp8::small::fp4_to_f64(code & 0xF),
    }
}

/// Runs one of gfx950's scaled conversions ([`is_scaled_cvt`]) on the lanes of `lanes`
/// (see the module doc for the layout and the rules).
///
/// # Errors
/// [`Status::IllegalInstruction`] naming the instruction for what the module doc lists as
/// not modelled; nothing is written then (the check of a lane's scale and values comes
/// before any lane is written).
pub(crate) fn scaled_cvt(w: &mut Wave, inst: &Instruction, lanes: u64) -> Result<()> {
    let op = inst.op();
    let Some(shape) = shape(op) else {
        bail!(Status::IllegalInstruction, "{op}: not a scaled conversion");
    };
    let m = inst.mods;
    let op_sel_ok: u8 = match shape {
        Shape::Down(_, Small::Fp4) => 0xC,
        Shape::Down(..) => 0x8,
        Shape::UpPair(Small::Fp4, _) => 0x3,
        Shape::UpPair(..) => 0x1,
        Shape::UpOne(_, Wide::F16) => 0xB,
        Shape::UpOne(..) => 0x3,
    };
    let small_src = !matches!(shape, Shape::Down(..));
    let packed16 = matches!(shape, Shape::Down(Wide::F16 | Wide::Bf16, _));
    let f32_down = matches!(shape, Shape::Down(Wide::F32, _));
    // The sources holding values (the scale's modifiers do not touch its exponent).
    let value_srcs = if f32_down { 2 } else { 1 };
    if m.op_sel & !op_sel_ok != 0 {
        bail!(
            Status::IllegalInstruction,
            "{op}: op_sel {:#x} sets bits beyond the documented ones ({op_sel_ok:#x})",
            m.op_sel
        );
    }
    if m.clamp || m.omod != 0 || m.dpp.is_some() || m.sdwa.is_some() {
        bail!(
            Status::IllegalInstruction,
            "{op}: clamp, omod, DPP and SDWA are not defined for the scaled conversions"
        );
    }
    let modified = (0..value_srcs).any(|i| m.neg[i] || m.abs[i]);
    if modified && (small_src || packed16) {
        bail!(
            Status::IllegalInstruction,
            "{op}: neg/abs on a {} source is not modelled",
            if small_src {
                "small-format"
            } else {
                "packed 16-bit"
            }
        );
    }
    if !f32_down && matches!(inst.src[0], Operand::InlineFloat(_)) {
        bail!(
            Status::IllegalInstruction,
            "{op}: an inline float constant as a non-f32 source is not modelled"
        );
    }
    let scale_src = if f32_down { 2 } else { 1 };
    let flush_f32 = mode::f32_denorm(w.mode) & 1 == 0;
    let sat = mode::fp16_ovfl(w.mode);
    // Work out every lane's result first, so a refusal leaves the registers as they were.
    let mut out = [[0u32; 2]; WAVE_SIZE];
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        let e = vsrc(w, &inst.src[scale_src], lane, false, false) as u32 >> 23 & 0xFF;
        if e == 0xFF {
            bail!(
                Status::IllegalInstruction,
                "{op}: lane {lane}'s scale exponent is 0xFF (E8M0 NaN), whose result is not \
                 documented"
            );
        }
        let scale = 2f64.powi(e as i32 - 127);
        let src = |i: usize| vsrc(w, &inst.src[i], lane, false, false) as u32;
        out[lane] = match shape {
            Shape::Down(from, to) => {
                let vals: [f64; 2] = if from == Wide::F32 {
                    core::array::from_fn(|i| {
                        let mut b = src(i);
                        if m.abs[i] {
                            b &= 0x7FFF_FFFF;
                        }
                        if m.neg[i] {
                            b ^= 0x8000_0000;
                        }
                        if flush_f32 {
                            b = mode::flush(mode::Kind::F32, u64::from(b)) as u32;
                        }
                        wide_to_f64(b, from)
                    })
                } else {
                    let s = src(0);
                    [wide_to_f64(s & 0xFFFF, from), wide_to_f64(s >> 16, from)]
                };
                let d_old = w_dst(w, inst, lane);
                match to {
                    Small::Fp4 => {
                        let mut nib = [0u8; 2];
                        for (n, v) in nib.iter_mut().zip(vals) {
                            let Some(c) = fp8::small::fp4_from_f64(v / scale) else {
                                bail!(
                                    Status::IllegalInstruction,
                                    "{op}: lane {lane} converts a NaN to FP4, which has none \
                                     (the result is not documented)"
                                );
                            };
                            *n = c;
                        }
                        let sh = 8 * u32::from(m.op_sel >> 2 & 3);
                        let byte = u32::from(nib[1]) << 4 | u32::from(nib[0]);
                        [d_old & !(0xFF << sh) | byte << sh, 0]
                    }
                    _ => {
                        let f = fp8::Format::of(to == Small::Bf8, Gfx9Target::Gfx950);
                        let pk = u32::from(fp8::from_f64(vals[0] / scale, f, sat))
                            | u32::from(fp8::from_f64(vals[1] / scale, f, sat)) << 8;
                        let sh = 16 * u32::from(m.op_sel >> 3 & 1);
                        [d_old & !(0xFFFF << sh) | pk << sh, 0]
                    }
                }
            }
            Shape::UpPair(from, to) => {
                let s = src(0);
                let codes = if from == Small::Fp4 {
                    let byte = s >> (8 * (m.op_sel & 3)) & 0xFF;
                    [byte as u8 & 0xF, (byte >> 4) as u8]
                } else {
                    let word = s >> (16 * (m.op_sel & 1)) & 0xFFFF;
                    [word as u8, (word >> 8) as u8]
                };
                let r = codes.map(|c| f64_to_wide(small_to_f64(c, from) * scale, to));
                if to == Wide::F32 {
                    r
                } else {
                    [r[0] | r[1] << 16, 0]
                }
            }
            Shape::UpOne(from, to) => {
                let code = (src(0) >> (8 * (m.op_sel & 3))) as u8;
                let r = f64_to_wide(small_to_f64(code, from) * scale, to);
                if to == Wide::F16 {
                    let sh = 16 * u32::from(m.op_sel >> 3 & 1);
                    [w_dst(w, inst, lane) & !(0xFFFF << sh) | r << sh, 0]
                } else {
                    [r, 0]
                }
            }
        };
    }
    let dwords = if matches!(shape, Shape::UpPair(_, Wide::F32)) {
        2
    } else {
        1
    };
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        for (k, v) in out[lane].iter().enumerate().take(dwords) {
            set_vdst_dword(w, &inst.dst, lane, k, *v);
        }
    }
    Ok(())
}

/// The destination's present value in `lane` (the partial writes keep its other bits).
fn w_dst(w: &Wave, inst: &Instruction, lane: usize) -> u32 {
    vsrc_dword(w, &inst.dst, lane, 0)
}
