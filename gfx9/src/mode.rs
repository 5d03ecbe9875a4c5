//! What the MODE register does to VALU float arithmetic: denormal flushing (FP_DENORM),
//! the directed rounding modes (FP_ROUND) of f32 add/multiply/fused multiply-add, NaN
//! handling of `v_min`/`v_max` with IEEE mode on or off (IEEE), and the `clamp` modifier's
//! NaN rule (DX10_CLAMP).
//!
//! MODE fields (Vega ISA §3.8 "Mode register"; the same on CDNA1/2/3):
//! - FP_ROUND `[3:0]`: `[1:0]` f32, `[3:2]` f64 and f16; 0 round to nearest even, 1 toward
//!   +∞, 2 toward −∞, 3 toward zero.
//! - FP_DENORM `[7:4]`: `[5:4]` f32, `[7:6]` f64 and f16; 0 flush input and output
//!   denormals, 1 keep input denormals and flush output ones, 2 flush input denormals and
//!   keep output ones, 3 keep both. A flushed denormal becomes a zero of its sign.
//! - DX10_CLAMP `[8]`: the `clamp` output modifier turns a NaN into +0 when set, passes it
//!   through when clear.
//! - IEEE `[9]`: `v_min_*`/`v_max_*` (and their 3-operand forms) quiet a signaling NaN
//!   input and return it when set; when clear a signaling NaN is an ordinary NaN, which
//!   loses to a number.
//!
//! Which instructions honour FP_DENORM here: every VALU instruction with float sources or
//! a float result, except those that only move or classify bits (`v_mov_*`,
//! `v_cndmask_b32`, `v_cmp*_class_*`); only the float sources are flushed
//! (`v_ldexp_*`'s and `v_trig_preop_f64`'s second source is an integer).
//! `v_mad_f32`/`v_mac_f32`/`v_madmk_f32`/`v_madak_f32` flush f32 denormals (sources, the
//! product and the result) whatever the mode: LLVM's AMDGPU backend selects them for
//! `fmuladd` only when f32 denormals are flushed, as they do not support denormals; the f16
//! `v_mac_f16`/`v_madmk_f16`/`v_madak_f16` likewise flush f16 denormals. Packed math (VOP3P
//! `v_pk_*`) flushes, quiets and clamps per component as the VOP1/2/3 forms do; the fused
//! `v_fma_mix*` flush each source by its own precision's mode and the result by the
//! destination's; gfx900's `v_mad_mix*` flush f32 denormals as `v_mad_f32` does. MFMA
//! ignores FP_DENORM (gfx90a's f16/bf16 forms always flush, the `mai` module); the dot
//! products keep denormals (not covered: the ISA does not say).
//!
//! Directed rounding: `v_add`/`v_sub`/`v_subrev`/`v_mul`/`v_fma`/`v_fmac` of f32, f64 and
//! f16 (those the target has), their packed forms, the fused `v_fma_mix*`, the unfused f32
//! and f16 `v_mad`/`v_mac` (each of their two roundings), `v_div_fmas_*`, `v_ldexp_*` and the conversions that can be inexact form their
//! exact result in integer arithmetic and round it once by the mode of their result's
//! precision (the `round` module). Float operations whose result does not depend on rounding
//! run under any mode; any other float instruction under a non-default FP_ROUND for its
//! precision is an illegal-instruction error naming the instruction, the mode and why
//! ([`round_unsupported`] lists them, [`round_error`]).

use super::decode::Instruction;
use super::op::{Cond, Fp, Op, Rounding, Unmodelled};
use super::round;
use hsa_core::{error, Error, Status};

/// MODE FP_DENORM pair value: keep input and output denormals.
pub(super) const DENORM_KEEP: u32 = 3;

/// MODE FP_ROUND `[3:0]`: the f32 (`[1:0]`) and f64/f16 (`[3:2]`) rounding modes; 0 is
/// round to nearest even for both.
#[inline]
pub(super) const fn fp_round(mode: u32) -> u32 {
    mode & 0xF
}

/// MODE FP_DENORM `[5:4]`: the f32 denormal mode (0 to 3, [`DENORM_KEEP`] keeps both).
#[inline]
pub(super) const fn f32_denorm(mode: u32) -> u32 {
    mode >> 4 & 3
}

/// MODE FP_DENORM `[7:6]`: the f64 and f16 denormal mode (0 to 3).
#[inline]
pub(super) const fn f64_f16_denorm(mode: u32) -> u32 {
    mode >> 6 & 3
}

/// MODE DX10_CLAMP `[8]`.
#[inline]
pub(super) const fn dx10_clamp(mode: u32) -> bool {
    mode >> 8 & 1 != 0
}

/// MODE IEEE `[9]`.
#[inline]
pub(super) const fn ieee(mode: u32) -> bool {
    mode >> 9 & 1 != 0
}

/// MODE FP16_OVFL `[23]` (Vega ISA §3.8 MODE; CDNA4 ISA §7.3: gfx950's conversions to
/// FP8/BF8 saturate to the largest finite value when it is set).
#[inline]
pub(super) const fn fp16_ovfl(mode: u32) -> bool {
    mode >> 23 & 1 != 0
}

/// The float precision of a source or result, for FP_DENORM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Not a float (or not flushed).
    None,
    /// f16, MODE FP_DENORM `[7:6]`.
    F16,
    /// f32, MODE FP_DENORM `[5:4]`.
    F32,
    /// f64, MODE FP_DENORM `[7:6]`.
    F64,
}

/// `bits` (of precision `kind`) with a denormal replaced by a zero of its sign.
#[inline]
pub(super) fn flush(kind: Kind, bits: u64) -> u64 {
    match kind {
        Kind::None => bits,
        Kind::F16 if bits & 0x7C00 == 0 => bits & !0x7FFF,
        Kind::F32 if bits & 0x7F80_0000 == 0 => bits & !0x7FFF_FFFF,
        Kind::F64 if bits & 0x7FF0_0000_0000_0000 == 0 => bits & 1 << 63,
        _ => bits,
    }
}

/// What MODE asks of one VALU instruction, worked out once per instruction
/// ([`FloatMode::for_valu`]) and applied per lane.
#[derive(Clone, Copy, Debug)]
pub(super) struct FloatMode {
    /// Flush denormal float sources of this precision.
    pub flush_in: Kind,
    /// Which sources (bit i: source i) are floats of `flush_in`'s precision.
    pub float_srcs: u8,
    /// Flush a denormal result of this precision.
    pub flush_out: Kind,
    /// MODE.IEEE.
    pub ieee: bool,
    /// MODE.DX10_CLAMP.
    pub dx10_clamp: bool,
    /// MODE FP_ROUND `[1:0]`, the f32 rounding mode.
    pub round32: u32,
    /// MODE FP_ROUND `[3:2]`, the f64 and f16 rounding mode.
    pub round64: u32,
}

impl FloatMode {
    /// The mode for VALU instruction `op` (whose sources are f32, f64 or f16 as the flags
    /// say) under MODE register value `mode`.
    pub(super) fn for_valu(mode: u32, op: Op, f32_in: bool, f64_in: bool, f16_in: bool) -> Self {
        let bits_only = matches!(op, Op::VMovB32 | Op::VMovB64 | Op::VCndmaskB32)
            || op.attrs().compare.is_some_and(|c| c.cond == Cond::Class);
        let mad32 = matches!(
            op,
            Op::VMadF32 | Op::VMacF32 | Op::VMadLegacyF32 | Op::VMadmkF32 | Op::VMadakF32
        );
        let mad16 = matches!(
            op,
            Op::VMadF16 | Op::VMacF16 | Op::VMadmkF16 | Op::VMadakF16
        );
        // Keep flags: FP_DENORM bit 0 of a precision's pair keeps input denormals, bit 1
        // keeps output denormals.
        let d32 = if mad32 { 0 } else { f32_denorm(mode) };
        let d64 = if mad16 { 0 } else { f64_f16_denorm(mode) };
        let in_kind = if bits_only {
            Kind::None
        } else if f32_in {
            Kind::F32
        } else if f64_in {
            Kind::F64
        } else if f16_in {
            Kind::F16
        } else {
            Kind::None
        };
        let keep_in = match in_kind {
            Kind::F32 => d32 & 1 != 0,
            Kind::F64 | Kind::F16 => d64 & 1 != 0,
            Kind::None => true,
        };
        let out_kind = if bits_only {
            Kind::None
        } else {
            kind(op.attrs().result_fp)
        };
        let keep_out = match out_kind {
            Kind::F32 => d32 & 2 != 0,
            Kind::F64 | Kind::F16 => d64 & 2 != 0,
            Kind::None => true,
        };
        let float_srcs = if matches!(
            op,
            Op::VLdexpF16 | Op::VLdexpF32 | Op::VLdexpF64 | Op::VTrigPreopF64
        ) {
            0b001
        } else {
            0b111
        };
        FloatMode {
            flush_in: if keep_in { Kind::None } else { in_kind },
            float_srcs,
            flush_out: if keep_out { Kind::None } else { out_kind },
            ieee: ieee(mode),
            dx10_clamp: dx10_clamp(mode),
            round32: mode & 3,
            round64: fp_round(mode) >> 2,
        }
    }

    /// Source `i`'s value `v` as the instruction sees it (flushed when it is a float
    /// denormal the mode flushes).
    #[inline]
    pub(super) fn src(&self, i: usize, v: u64) -> u64 {
        if self.flush_in != Kind::None && self.float_srcs >> i & 1 != 0 {
            flush(self.flush_in, v)
        } else {
            v
        }
    }

    /// The result `r` as written (flushed when it is a denormal the mode flushes).
    #[inline]
    pub(super) fn result(&self, r: u64) -> u64 {
        flush(self.flush_out, r)
    }

    /// An f32 result with the `clamp` modifier: [0, 1], −0 → +0, NaN → +0 with DX10_CLAMP
    /// set and NaN unchanged with it clear.
    pub(super) fn clamp32(&self, x: f32) -> f32 {
        if x.is_nan() {
            if self.dx10_clamp {
                0.0
            } else {
                x
            }
        } else {
            x.clamp(0.0, 1.0)
        }
    }

    /// An f64 result with the `clamp` modifier, NaN as [`FloatMode::clamp32`].
    pub(super) fn clamp64(&self, x: f64) -> f64 {
        if x.is_nan() {
            if self.dx10_clamp {
                0.0
            } else {
                x
            }
        } else {
            x.clamp(0.0, 1.0)
        }
    }

    /// An f16 result (bits) with the `clamp` modifier, NaN as [`FloatMode::clamp32`].
    pub(super) fn clamp16(&self, h: u16) -> u16 {
        if !self.dx10_clamp && h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
            h
        } else {
            super::f16::clamp01(h)
        }
    }

    /// Whether a directed FP_ROUND is in force for f32 (`round32`) or for f64 and f16
    /// (`round64`).
    #[inline]
    pub(super) fn directed_rounding(&self) -> bool {
        self.round32 != 0 || self.round64 != 0
    }

    /// The result bits of `op` on source bits `a`, `b`, `c` (`c` is the accumulator of
    /// `v_mac`/`v_fmac`) rounded by the non-default FP_ROUND of its precision (f32 `[1:0]`,
    /// f64 and f16 `[3:2]`); `None` when that mode is round-to-nearest-even, the
    /// instruction is not one rounded here ([`Rounding::Directed`]), or an operand is infinite or
    /// NaN (the result is then the same in every mode).
    pub(super) fn directed(&self, op: Op, a: u64, b: u64, c: u64) -> Option<u64> {
        // Conversions that can be inexact and `v_ldexp_*`: the exact value (times 2^S1)
        // rounded once to the destination's precision by its mode. For `v_cvt_f16_f32` that
        // is FP_ROUND [3:2], the field LLVM's AMDGPU backend sets around it to lower
        // `llvm.fptrunc.round` (an f32 source, an f16 result); `v_cvt_f32_f64` and the
        // integer sources follow the same rule, which no document states.
        let h = |v: u64| super::f16::to_f64(v as u16);
        let f = |v: u64| f64::from(f32::from_bits(v as u32));
        let (r32, r64) = (self.round32, self.round64);
        let exact = match op {
            Op::VCvtF32F64 => Some((f64::from_bits(a), 0, round::F32, r32)),
            Op::VCvtF32I32 => Some((f64::from(a as u32 as i32), 0, round::F32, r32)),
            Op::VCvtF32U32 => Some((f64::from(a as u32), 0, round::F32, r32)),
            Op::VCvtF16F32 => Some((f(a), 0, round::F16, r64)),
            Op::VCvtF16U16 => Some((f64::from(a as u16), 0, round::F16, r64)),
            Op::VCvtF16I16 => Some((f64::from(a as u16 as i16), 0, round::F16, r64)),
            Op::VLdexpF32 => Some((f(a), b as u32 as i32, round::F32, r32)),
            Op::VLdexpF64 => Some((f64::from_bits(a), b as u32 as i32, round::F64, r64)),
            Op::VLdexpF16 => Some((h(a), i32::from(b as u16 as i16), round::F16, r64)),
            _ => None,
        };
        if let Some((x, n, fmt, rm)) = exact {
            return if rm == round::NEAREST {
                None
            } else {
                round::scaled(x, n, fmt, rm)
            };
        }
        let (fmt, rm, x, y, z) = match op.attrs().result_fp {
            Fp::F32 => {
                let f = |v: u64| f64::from(f32::from_bits(v as u32));
                (round::F32, self.round32, f(a), f(b), f(c))
            }
            Fp::F64 => {
                let f = f64::from_bits;
                (round::F64, self.round64, f(a), f(b), f(c))
            }
            Fp::F16 => {
                let f = |v: u64| super::f16::to_f64(v as u16);
                (round::F16, self.round64, f(a), f(b), f(c))
            }
            Fp::None => return None,
        };
        if rm == round::NEAREST {
            return None;
        }
        match op {
            Op::VAddF32 | Op::VAddF64 | Op::VAddF16 | Op::VPkAddF16 | Op::VPkAddF32 => {
                round::add2(x, y, fmt, rm)
            }
            Op::VSubF32 | Op::VSubF16 => round::add2(x, -y, fmt, rm),
            Op::VSubrevF32 | Op::VSubrevF16 => round::add2(y, -x, fmt, rm),
            Op::VMulF32 | Op::VMulF64 | Op::VMulF16 | Op::VPkMulF16 | Op::VPkMulF32 => {
                round::mul(x, y, fmt, rm)
            }
            Op::VFmaF32
            | Op::VFmacF32
            | Op::VFmamkF32
            | Op::VFmaakF32
            | Op::VFmaF64
            | Op::VFmacF64
            | Op::VFmaF16
            | Op::VPkFmaF16
            | Op::VPkFmacF16
            | Op::VPkFmaF32
            | Op::VFmaMixF32
            | Op::VFmaMixloF16
            | Op::VFmaMixhiF16 => round::fma(x, y, z, fmt, rm),
            Op::VMadF32 | Op::VMacF32 | Op::VMadmkF32 | Op::VMadakF32
                if [x, y, z].iter().all(|v| v.is_finite()) =>
            {
                Some(u64::from(mad32(x as f32, y as f32, z as f32, rm).to_bits()))
            }
            // V_MAD_LEGACY_F32: a zero factor makes the product +0 (infinity and NaN
            // included), then as v_mad_f32.
            Op::VMadLegacyF32 => {
                let (x, y) = if x == 0.0 || y == 0.0 {
                    (0.0, 0.0)
                } else {
                    (x, y)
                };
                [x, y, z]
                    .iter()
                    .all(|v| v.is_finite())
                    .then(|| u64::from(mad32(x as f32, y as f32, z as f32, rm).to_bits()))
            }
            Op::VMulLegacyF32 => Some(u64::from(mul_legacy32(x as f32, y as f32, rm).to_bits())),
            Op::VMadF16 | Op::VMacF16 | Op::VMadmkF16 | Op::VMadakF16 => {
                Some(u64::from(mad16(a as u16, b as u16, c as u16, rm)))
            }
            _ => None,
        }
    }
}

impl FloatMode {
    /// `V_DIV_FMAS_F32/F64` (`op`) of source bits `a`, `b`, `c` scaled by 2^`scale`,
    /// rounded once by the directed FP_ROUND of its precision; `None` under round to
    /// nearest or with an infinite or NaN operand (as [`FloatMode::directed`]).
    pub(super) fn div_fmas(&self, op: Op, a: u64, b: u64, c: u64, scale: i32) -> Option<u64> {
        let (fmt, rm, [x, y, z]) = if op == Op::VDivFmasF64 {
            (round::F64, self.round64, [a, b, c].map(f64::from_bits))
        } else {
            let f = |v: u64| f64::from(f32::from_bits(v as u32));
            (round::F32, self.round32, [a, b, c].map(f))
        };
        if rm == round::NEAREST {
            return None;
        }
        round::fma_scaled(x, y, z, scale, fmt, rm)
    }
}

/// The MODE precision of a float kind.
fn kind(fp: Fp) -> Kind {
    match fp {
        Fp::F16 => Kind::F16,
        Fp::F32 => Kind::F32,
        Fp::F64 => Kind::F64,
        Fp::None => Kind::None,
    }
}

/// Whether instruction `inst` cannot run under MODE `mode`'s FP_ROUND: false when the
/// rounding mode of each float precision it names is round-to-nearest-even, when its
/// result does not depend on rounding, or when it is an operation [`FloatMode::directed`]
/// or [`FloatMode::div_fmas`] rounds (without an output multiplier or SDWA).
///
/// Mode-independent here: compares, min/max/med3 (and the packed f16 min/max), moves, `v_frexp_*`, `v_floor`/`v_ceil`/
/// `v_trunc`/`v_rndne` (integral results), widening float conversions, the conversions from
/// 32-bit integers to f64 (exact), from floats to integers (Vega ISA `V_CVT_I32_F32` and kin:
/// `(int)S0`, truncation, and the `_rpi`/`_flr` forms round as named), `v_cvt_pkrtz_f16_f32`
/// (always toward zero), `v_cvt_f32_ubyte*` and `v_cvt_off_f32_i4` (exact), `v_div_scale_*` (scales by a power of
/// two, exactly) and `v_div_fixup_*` (special cases of the quotient it is given).
///
/// The approximate functions (`v_rcp*`, `v_rsq*`, `v_sqrt*`, `v_exp*`,
/// `v_log*`, `v_sin*`, `v_cos*`, `v_rcp_iflag`) also run under every mode: the Vega and CDNA
/// ISA documents specify them by their precision in ULP (1 ULP for `v_rcp_f32`, `v_sqrt_f32`
/// and kin), not by a rounding, and the result the model gives in the default mode (the
/// correctly rounded value where the host has one) is within that precision whatever
/// FP_ROUND says. A GPU may round such a result differently in a directed mode; the documents
/// do not say, and no document promises a kernel more than the precision.
///
/// Still refused under a directed mode, because the documents leave it unspecified:
/// - the dot products (`v_dot*` with a float result): the ISA documents give their
///   operation, not how or how often the sum is rounded nor which MODE fields they honour;
/// - MFMA (`v_mfma_*`): the CDNA ISA documents do not state a rounding for them; AMD's
///   MIOpen documentation ("MI200 MFMA behavior specifics") says only that on MI200 the
///   f16/bf16 MFMAs flush denormal inputs and outputs;
/// - the gfx900 `v_mad_mix*` (which mode rounds the f32 product of an f16 result is not
///   documented), and every other float instruction not named above.
pub(super) fn round_unsupported(mode: u32, inst: &Instruction) -> bool {
    let a = inst.op().attrs();
    let round = fp_round(mode);
    let exact = a.rounding == Rounding::Exact;
    let directed = matches!(a.rounding, Rounding::Directed | Rounding::ScaledFma)
        && inst.mods.omod == 0
        && inst.mods.sdwa.is_none();
    let bad32 = a.fp_names & 1 != 0 && round & 3 != 0 && !exact && !directed;
    let bad64 = a.fp_names & 2 != 0 && round >> 2 != 0 && !exact && !directed;
    bad32 || bad64
}

/// The error for an instruction [`round_unsupported`] refuses: [`Status::IllegalInstruction`]
/// naming the instruction, the FP_ROUND value and why it is not modelled.
pub(super) fn round_error(mode: u32, inst: &Instruction) -> Error {
    let round = fp_round(mode);
    let a = inst.op().attrs();
    let rm = if a.fp_names & 1 != 0 && round & 3 != 0 {
        round & 3
    } else {
        round >> 2
    };
    let why = match a.rounding {
        Rounding::Unmodelled(Unmodelled::Dot) => {
            "the ISA does not state how a dot product rounds its sum or which MODE fields it honours"
        }
        Rounding::Unmodelled(Unmodelled::Mfma) => {
            "the CDNA ISA does not state how MFMA results are rounded"
        }
        Rounding::Unmodelled(Unmodelled::MadMix) => {
            "the ISA does not state which mode rounds the unfused mix product"
        }
        _ if inst.mods.omod != 0 || inst.mods.sdwa.is_some() => {
            "directed rounding is modelled without an output modifier or SDWA only"
        }
        _ => "only round to nearest even is modelled for it",
    };
    error!(
        Status::IllegalInstruction,
        "{} under MODE.FP_ROUND {round:#x} (round {}): {why}",
        inst.name(),
        round_name(rm)
    )
}

fn round_name(rm: u32) -> &'static str {
    match rm {
        round::UP => "toward +inf",
        round::DOWN => "toward -inf",
        round::ZERO => "toward zero",
        _ => "nearest even",
    }
}

/// `V_MAD_F32`: `a × b` rounded by FP_ROUND value `rm` and flushed, plus `c`, rounded by
/// `rm` (the caller flushes the sources and the result).
/// A NaN source gives the first NaN source quieted (`fma::nan_of3`: an optimized build
/// commuted the product's factors in one caller and not in another, so two paths of the
/// interpreter disagreed on `v_mad_f32` of two NaNs).
pub(super) fn mad32(a: f32, b: f32, c: f32, rm: u32) -> f32 {
    if let Some(nan) = super::fma::nan_of3(a.to_bits(), b.to_bits(), c.to_bits()) {
        return f32::from_bits(nan);
    }
    let f32_of = |bits: u64| f32::from_bits(bits as u32);
    let p = if rm == round::NEAREST {
        a * b
    } else {
        round::mul(a.into(), b.into(), round::F32, rm).map_or(a * b, f32_of)
    };
    let p = f32::from_bits(flush(Kind::F32, u64::from(p.to_bits())) as u32);
    if rm == round::NEAREST {
        return p + c;
    }
    round::add2(p.into(), c.into(), round::F32, rm).map_or(p + c, f32_of)
}

/// `V_MUL_LEGACY_F32` (Vega ISA VOP2 opcode 4; CDNA2/3 VOP3 opcode 0x2A1): `a × b` rounded
/// by `rm`, except that a zero factor gives +0 whatever the other is (infinity and NaN
/// included), the DX9 rule.
pub(super) fn mul_legacy32(a: f32, b: f32, rm: u32) -> f32 {
    if a == 0.0 || b == 0.0 {
        return 0.0;
    }
    if rm == round::NEAREST {
        return a * b;
    }
    round::mul(a.into(), b.into(), round::F32, rm).map_or(a * b, |r| f32::from_bits(r as u32))
}

/// The f16 `V_MAD_F16`/`V_MAC_F16`/`V_MADAK_F16`/`V_MADMK_F16` (Vega ISA VOP3 opcode 0x203,
/// VOP2 opcodes 35..=37): `a × b` rounded to f16, then `+ c` rounded to f16 (not fused), f16
/// denormals flushed (sources, product and result) whatever the mode, as `v_mad_f32` does for f32
/// (LLVM's AMDGPU backend selects them only when f16 denormals are flushed). Both roundings
/// follow FP_ROUND value `rm` (the f16 field, `[3:2]`), as [`mad32`]'s do.
pub(super) fn mad16(a: u16, b: u16, c: u16, rm: u32) -> u16 {
    use super::f16;
    let fl = |h: u16| flush(Kind::F16, u64::from(h)) as u16;
    let (a, b, c) = (fl(a), fl(b), fl(c));
    if rm == round::NEAREST {
        return fl(f16::add(fl(f16::mul(a, b)), c));
    }
    let h = |x: u16| f16::to_f64(x);
    let p = round::mul(h(a), h(b), round::F16, rm).map_or(f16::mul(a, b), |r| r as u16);
    let p = fl(p);
    let s = round::add2(h(p), h(c), round::F16, rm).map_or(f16::add(p, c), |r| r as u16);
    fl(s)
}

/// Bits of an f16, f32 or f64 (`sign` its sign bit, `quiet` its quiet-NaN bit).
#[derive(Clone, Copy)]
pub(super) struct Fmt {
    sign: u64,
    quiet: u64,
}

/// f16.
pub(super) const H: Fmt = Fmt {
    sign: 1 << 15,
    quiet: 1 << 9,
};
/// f32.
pub(super) const S: Fmt = Fmt {
    sign: 1 << 31,
    quiet: 1 << 22,
};
/// f64.
pub(super) const D: Fmt = Fmt {
    sign: 1 << 63,
    quiet: 1 << 51,
};

impl Fmt {
    fn is_nan(self, x: u64) -> bool {
        let mag = x & (self.sign - 1);
        // Exponent all ones (the bits between the quiet bit's field and the sign) and a
        // nonzero fraction.
        let exp_mask = (self.sign - 1) & !((self.quiet << 1) - 1);
        mag & exp_mask == exp_mask && mag & ((self.quiet << 1) - 1) != 0
    }

    /// Total order key of a non-NaN value: negative values reversed, −0 below +0.
    fn key(self, x: u64) -> i128 {
        let mag = i128::from(x & (self.sign - 1));
        if x & self.sign != 0 {
            -mag - 1
        } else {
            mag
        }
    }
}

/// `V_MIN_*` (`max` false) or `V_MAX_*` of float bits `a`, `b` in format `f` (Vega ISA
/// VOP2 `V_MIN_F32`/`V_MAX_F32`, the same rule for F16/F64): with IEEE mode a signaling
/// NaN source (src0 first) gives itself quieted; then a NaN source gives the other source;
/// −0 is below +0; otherwise the smaller (larger) value.
pub(super) fn min_max(f: Fmt, a: u64, b: u64, max: bool, ieee: bool) -> u64 {
    let snan = |x: u64| f.is_nan(x) && x & f.quiet == 0;
    if ieee && snan(a) {
        return a | f.quiet;
    }
    if ieee && snan(b) {
        return b | f.quiet;
    }
    if f.is_nan(a) {
        return b;
    }
    if f.is_nan(b) {
        return a;
    }
    if (f.key(a) < f.key(b)) != max {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 `minimum`/`maximum` of float bits `a`, `b` (gfx950's `V_MINIMUM3_F32`,
/// `V_MAXIMUM3_F32`, `V_PK_MINIMUM3_F16`, `V_PK_MAXIMUM3_F16`: CDNA4 ISA, "the IEEE
/// minimum()", "a signaling NaN in either argument is propagated", the IEEE mode bit
/// ignored): a NaN source gives a NaN, quieted (`a`'s first); −0 is below +0; otherwise the
/// smaller (larger) value.
pub(super) fn minimum_maximum(f: Fmt, a: u64, b: u64, max: bool) -> u64 {
    if f.is_nan(a) {
        return a | f.quiet;
    }
    if f.is_nan(b) {
        return b | f.quiet;
    }
    if (f.key(a) < f.key(b)) != max {
        a
    } else {
        b
    }
}

/// `V_MED3_*` of float bits `a`, `b`, `c` (Vega ISA VOP3 `V_MED3_F32`): with a NaN source
/// the [`min_max`] minimum of the three; otherwise the larger of the two sources other than
/// the maximum (the first of them that equals the maximum when several do).
pub(super) fn med3(f: Fmt, a: u64, b: u64, c: u64, ieee: bool) -> u64 {
    if f.is_nan(a) || f.is_nan(b) || f.is_nan(c) {
        let ab = min_max(f, a, b, false, ieee);
        return min_max(f, ab, c, false, ieee);
    }
    let max3 = min_max(f, min_max(f, a, b, true, ieee), c, true, ieee);
    if max3 == a {
        min_max(f, b, c, true, ieee)
    } else if max3 == b {
        min_max(f, a, c, true, ieee)
    } else {
        min_max(f, a, b, true, ieee)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_keeps_the_sign_and_only_touches_denormals() {
        assert_eq!(flush(Kind::F32, 0x8000_0001), 0x8000_0000);
        assert_eq!(flush(Kind::F32, 0x007F_FFFF), 0);
        assert_eq!(flush(Kind::F32, 0x0080_0000), 0x0080_0000);
        assert_eq!(flush(Kind::F16, 0x83FF), 0x8000);
        assert_eq!(flush(Kind::F16, 0x0400), 0x0400);
        assert_eq!(flush(Kind::F64, 1), 0);
        assert_eq!(flush(Kind::F64, 0x8000_0000_0000_0001), 1 << 63);
        assert_eq!(flush(Kind::None, 1), 1);
    }

    #[test]
    fn modes_decode_per_precision() {
        // FP_DENORM f32 = 2 (flush in, keep out), f64/f16 = 1 (keep in, flush out).
        let m = FloatMode::for_valu(0b01_10 << 4, Op::VAddF32, true, false, false);
        assert_eq!((m.flush_in, m.flush_out), (Kind::F32, Kind::None));
        let m = FloatMode::for_valu(0b01_10 << 4, Op::VAddF64, false, true, false);
        assert_eq!((m.flush_in, m.flush_out), (Kind::None, Kind::F64));
        // v_mad_f32 flushes in every mode.
        let m = FloatMode::for_valu(0xF0, Op::VMadF32, true, false, false);
        assert_eq!((m.flush_in, m.flush_out), (Kind::F32, Kind::F32));
        // Bit moves do not flush; ldexp's exponent is not a float.
        let m = FloatMode::for_valu(0, Op::VCndmaskB32, true, false, false);
        assert_eq!((m.flush_in, m.flush_out), (Kind::None, Kind::None));
        let m = FloatMode::for_valu(0, Op::VLdexpF32, true, false, false);
        assert_eq!(m.src(1, 1), 1);
        assert_eq!(m.src(0, 1), 0);
        let m = FloatMode::for_valu(0, Op::VCvtF16F32, true, false, false);
        assert_eq!((m.flush_in, m.flush_out), (Kind::F32, Kind::F16));
        let m = FloatMode::for_valu(0, Op::VCvtI32F32, true, false, false);
        assert_eq!(m.flush_out, Kind::None);
    }

    #[test]
    fn directed_rounding_of_f32() {
        use round::{DOWN as ROUND_DOWN, UP as ROUND_UP, ZERO as ROUND_ZERO};
        // Through FloatMode as the VALU uses it: MODE FP_ROUND [1:0], f32 denormals kept.
        let d = |op: Op, a: f32, b: f32, c: f32, rm: u32| {
            let fm = FloatMode::for_valu(0xF0 | rm, op, true, false, false);
            let bits = |x: f32| u64::from(x.to_bits());
            fm.directed(op, bits(a), bits(b), bits(c))
                .map(|r| f32::from_bits(r as u32))
        };
        let add32 = |a, b, rm| d(Op::VAddF32, a, b, 0.0, rm).unwrap();
        let next_up = |x: f32| f32::from_bits(x.to_bits() + 1);
        let next_down = |x: f32| f32::from_bits(x.to_bits() - 1);
        let one = 1.0f32;
        let tiny = f32::from_bits(0x3380_0000); // 2^-24: half an ulp of 1
        assert_eq!(d(Op::VAddF32, one, tiny, 0.0, 0), None);
        assert_eq!(add32(one, tiny, ROUND_UP), next_up(one));
        assert_eq!(add32(one, tiny, ROUND_DOWN), one);
        assert_eq!(add32(-one, -tiny, ROUND_DOWN), -next_up(one));
        assert_eq!(add32(-one, -tiny, ROUND_ZERO), -one);
        assert_eq!(add32(one, -tiny, ROUND_ZERO), next_down(one));
        // x + (−x) is −0 only toward −∞.
        assert_eq!(add32(one, -one, ROUND_DOWN).to_bits(), 0x8000_0000);
        assert_eq!(add32(one, -one, ROUND_UP).to_bits(), 0);
        assert_eq!(add32(0.0, 0.0, ROUND_DOWN).to_bits(), 0);
        // Overflow: toward zero gives MAX, toward +∞ of a negative gives −MAX.
        assert_eq!(add32(f32::MAX, f32::MAX, ROUND_ZERO), f32::MAX);
        assert_eq!(add32(-f32::MAX, -f32::MAX, ROUND_UP), -f32::MAX);
        assert_eq!(add32(-f32::MAX, -f32::MAX, ROUND_DOWN), f32::NEG_INFINITY);
        // Underflow of a product: toward +∞ the smallest denormal, toward zero +0.
        let m = f32::MIN_POSITIVE;
        let mul = |a, b, rm| d(Op::VMulF32, a, b, 0.0, rm).unwrap().to_bits();
        assert_eq!(mul(m, m, ROUND_UP), 1);
        assert_eq!(mul(m, m, ROUND_ZERO), 0);
        assert_eq!(mul(-m, m, ROUND_DOWN), 0x8000_0001);
        // fma: 1 × 1 + 2^-30 rounds up only toward +∞.
        let e = f32::from_bits(0x3080_0000);
        let fma = |c, rm| d(Op::VFmaF32, one, one, c, rm).unwrap();
        assert_eq!(fma(e, ROUND_UP), next_up(one));
        assert_eq!(fma(e, ROUND_ZERO), one);
        assert_eq!(fma(-e, ROUND_ZERO), next_down(one));
        // The literal-constant forms round as their three-operand siblings; the legacy
        // multiply keeps its zero rule in every mode.
        assert_eq!(d(Op::VFmaakF32, one, one, e, ROUND_UP), Some(next_up(one)));
        assert_eq!(d(Op::VMadmkF32, one, one, e, ROUND_UP), Some(next_up(one)));
        let legacy = |a, b, rm| d(Op::VMulLegacyF32, a, b, 0.0, rm).unwrap().to_bits();
        assert_eq!(legacy(0.0, f32::INFINITY, ROUND_DOWN), 0);
        assert_eq!(legacy(-0.0, 3.0, ROUND_DOWN), 0);
        assert_eq!(legacy(m, m, ROUND_UP), 1);
        // f64 and f16 follow FP_ROUND [3:2], not [1:0].
        let fm = FloatMode::for_valu(0xF0 | 1 << 2, Op::VAddF64, false, true, false);
        let t = 2f64.powi(-60);
        let up = fm.directed(Op::VAddF64, 1f64.to_bits(), t.to_bits(), 0);
        assert_eq!(up, Some(1f64.to_bits() + 1));
        assert_eq!(d(Op::VAddF32, one, tiny, 0.0, 0), None);
        let fm = FloatMode::for_valu(0xF0 | 3 << 2, Op::VAddF16, false, false, true);
        // 65504 + 16: beyond the largest f16 but rounded toward zero stays there.
        assert_eq!(fm.directed(Op::VAddF16, 0x7BFF, 0x4C00, 0), Some(0x7BFF));
        assert_eq!(fm.directed(Op::VMaxF16, 0x7BFF, 0x4C00, 0), None);
    }

    #[test]
    fn every_directed_instruction_is_rounded_by_directed() {
        // round_unsupported lets the Rounding::Directed instructions run under a directed FP_ROUND; each must
        // then be rounded by `directed` (None would leave the round-to-nearest result).
        let mode = 0xF0 | round::UP | round::UP << 2;
        let rounded = |r: Rounding| Op::ALL.into_iter().filter(move |o| o.attrs().rounding == r);
        for op in rounded(Rounding::Directed) {
            let one = match op.attrs().result_fp {
                Fp::F64 => 1f64.to_bits(),
                Fp::F16 => 0x3C00,
                _ => u64::from(1f32.to_bits()),
            };
            let fm = FloatMode::for_valu(mode, op, true, false, false);
            assert!(fm.directed(op, one, one, one).is_some(), "{op}");
        }
        for op in rounded(Rounding::ScaledFma) {
            let one = if op == Op::VDivFmasF64 {
                1f64.to_bits()
            } else {
                u64::from(1f32.to_bits())
            };
            let fm = FloatMode::for_valu(mode, op, true, false, false);
            assert!(fm.div_fmas(op, one, one, one, 64).is_some(), "{op}");
        }
    }

    #[test]
    fn min_max_nan_rules() {
        let snan = 0x7F80_0001u64;
        let qnan = 0x7FC0_0000u64;
        let two = 2f32.to_bits() as u64;
        assert_eq!(min_max(S, snan, two, false, true), 0x7FC0_0001);
        assert_eq!(min_max(S, two, snan, true, true), 0x7FC0_0001);
        assert_eq!(min_max(S, snan, two, false, false), two);
        assert_eq!(min_max(S, qnan, two, true, true), two);
        assert_eq!(min_max(S, 0x8000_0000, 0, false, true), 0x8000_0000);
        assert_eq!(min_max(S, 0, 0x8000_0000, true, true), 0);
        assert_eq!(min_max(H, 0x7C01, 0x3C00, false, true), 0x7E01);
        assert_eq!(min_max(D, 0x7FF0_0000_0000_0001, 0, true, false), 0);
    }
}
