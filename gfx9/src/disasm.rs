//! Disassembly text of an [`Instruction`] in `llvm-objdump`'s AMDGPU syntax, e.g.
//! `global_load_dword v1, v[0:1], s[2:3]`, `s_load_dwordx4 s[0:3], s[4:5], 0x0`,
//! `v_add_co_u32_e32 v0, vcc, s0, v0`. Branch targets print as the raw `simm16` (unsigned),
//! as llvm-objdump does before its `<symbol+off>` comment.

use core::fmt;

use super::decode::{Dpp, Encoding, Instruction, Operand, Sdwa, SdwaSel, F_NONAME, F_SDST};
use super::op::Op as OpKind;
use super::Gfx9Target;

struct Op<'a>(&'a Operand);

fn range(f: &mut fmt::Formatter<'_>, prefix: &str, index: u32, count: u8) -> fmt::Result {
    if count <= 1 {
        write!(f, "{prefix}{index}")
    } else {
        write!(f, "{prefix}[{index}:{}]", index + count as u32 - 1)
    }
}

impl fmt::Display for Op<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.0 {
            Operand::None => Ok(()),
            Operand::Sreg { index, count } => {
                let pair = count == 2;
                match index {
                    0..=101 => range(f, "s", index as u32, count),
                    102 if pair => f.write_str("flat_scratch"),
                    102 => f.write_str("flat_scratch_lo"),
                    103 => f.write_str("flat_scratch_hi"),
                    104 if pair => f.write_str("xnack_mask"),
                    104 => f.write_str("xnack_mask_lo"),
                    105 => f.write_str("xnack_mask_hi"),
                    106 if pair => f.write_str("vcc"),
                    106 => f.write_str("vcc_lo"),
                    107 => f.write_str("vcc_hi"),
                    108..=123 => range(f, "ttmp", index as u32 - 108, count),
                    124 => f.write_str("m0"),
                    126 if pair => f.write_str("exec"),
                    126 => f.write_str("exec_lo"),
                    127 => f.write_str("exec_hi"),
                    _ => write!(f, "<reg{index}>"),
                }
            }
            Operand::Vgpr { index, count } => range(f, "v", index as u32, count),
            Operand::Agpr { index, count } => range(f, "a", index as u32, count),
            Operand::InlineInt(v) => write!(f, "{v}"),
            Operand::InlineFloat(code) => f.write_str(match code {
                240 => "0.5",
                241 => "-0.5",
                242 => "1.0",
                243 => "-1.0",
                244 => "2.0",
                245 => "-2.0",
                246 => "4.0",
                247 => "-4.0",
                _ => "0.15915494",
            }),
            Operand::Literal(v) => write!(f, "0x{v:x}"),
            Operand::Special(code) => f.write_str(match code {
                235 => "src_shared_base",
                236 => "src_shared_limit",
                237 => "src_private_base",
                238 => "src_private_limit",
                239 => "src_pops_exiting_wave_id",
                251 => "src_vccz",
                252 => "src_execz",
                _ => "src_scc",
            }),
        }
    }
}

/// The `hwreg(...)` operand of `s_getreg`/`s_setreg` as llvm-objdump prints it: SIMM16 `id`
/// [5:0], `offset` [10:6], `size − 1` [15:11]; the register by name where the target has
/// one, and `offset, size` unless the whole register (0, 32).
struct Hwreg(u16, Gfx9Target);

impl fmt::Display for Hwreg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Hwreg(v, target) = *self;
        let (id, offset, size) = (v & 0x3F, v >> 6 & 0x1F, (v >> 11) + 1);
        let gfx940 = target.is_gfx940();
        let name = match id {
            1 => Some("MODE"),
            2 => Some("STATUS"),
            3 => Some("TRAPSTS"),
            4 => Some("HW_ID"),
            5 => Some("GPR_ALLOC"),
            6 => Some("LDS_ALLOC"),
            7 => Some("IB_STS"),
            15 => Some("SH_MEM_BASES"),
            16 => Some("TBA_LO"),
            17 => Some("TBA_HI"),
            18 => Some("TMA_LO"),
            19 => Some("TMA_HI"),
            20 if gfx940 => Some("XCC_ID"),
            21 if gfx940 => Some("SQ_PERF_SNAPSHOT_DATA"),
            22 if gfx940 => Some("SQ_PERF_SNAPSHOT_DATA1"),
            23 if gfx940 => Some("SQ_PERF_SNAPSHOT_PC_LO"),
            24 if gfx940 => Some("SQ_PERF_SNAPSHOT_PC_HI"),
            _ => None,
        };
        f.write_str("hwreg(")?;
        match name {
            Some(n) => write!(f, "HW_REG_{n}")?,
            None => write!(f, "{id}")?,
        }
        if (offset, size) != (0, 32) {
            write!(f, ", {offset}, {size}")?;
        }
        f.write_str(")")
    }
}

/// A VOP3 source with its `neg`/`abs` modifiers.
struct Src<'a>(&'a Instruction, usize);

/// Whether an operand type token of a mnemonic (`f16`, `u32`, `b64`, ...) is a 16-bit one:
/// `Some(true)` for f16, `Some(false)` for i16/u16/b16, `None` otherwise.
fn type16(token: &str) -> Option<bool> {
    match token {
        "f16" => Some(true),
        "i16" | "u16" | "b16" => Some(false),
        _ => None,
    }
}

/// Whether the sources of a VOP1/VOP2/VOPC/VOP3 instruction are 16-bit, by its mnemonic's
/// last operand type (the source type of conversions, `v_cvt_f32_f16`): `Some(true)` f16,
/// `Some(false)` integer. llvm-objdump prints a 16-bit operand's literal as its low 16 bits,
/// and an inline float constant of an integer one as the f16 bit pattern.
pub(super) fn sources16(name: &str) -> Option<bool> {
    if name.starts_with("v_pk_") || name.starts_with("v_dot2c_") || name == "v_sat_pk_u8_i16" {
        // Packed pairs of 16-bit values: a literal prints as its 32 bits.
        return None;
    }
    let last = name
        .split('_')
        .rev()
        .find(|t| t.len() == 3 && matches!(t.as_bytes()[0], b'f' | b'i' | b'u' | b'b'))?;
    type16(last)
}

/// The f16 bit patterns of the inline float constants 240..=248.
const F16_CONSTS: [u16; 9] = [
    0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118,
];

/// An operand in the text of `inst`'s source `i`.
struct SrcOp<'a>(&'a Instruction, usize);

impl fmt::Display for SrcOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SrcOp(inst, i) = *self;
        let op = &inst.src[i];
        let vop = matches!(
            inst.encoding,
            Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3
        );
        match (vop.then(|| sources16(inst.info.name)).flatten(), *op) {
            // The constant K of v_madak/v_madmk prints as its 32 bits in hex, an f16 one's
            // too (llvm-objdump-19 decodes it as a KImm operand, never an inline value).
            (_, Operand::Literal(v)) if i > 0 && super::decode::has_literal_k(inst.info.name) => {
                write!(f, "0x{v:x}")
            }
            (Some(float), Operand::Literal(v)) => {
                // A literal whose low half is an inline constant prints as that constant.
                let h = v as u16;
                match F16_CONSTS.iter().position(|&c| c == h) {
                    _ if float && (-16..=64).contains(&(h as i16)) => write!(f, "{}", h as i16),
                    Some(k) if float => Op(&Operand::InlineFloat(240 + k as u8)).fmt(f),
                    _ => write!(f, "0x{h:x}"),
                }
            }
            (Some(false), Operand::InlineFloat(c)) => {
                write!(f, "0x{:x}", F16_CONSTS[usize::from(c - 240).min(8)])
            }
            (_, Operand::InlineFloat(248)) if inst.info.widths[i + 1] == 2 => {
                f.write_str(INV_2PI_F64)
            }
            (_, Operand::Literal(v))
                if !inst.info.name.starts_with("v_pk_")
                    && !inst.info.name.starts_with("v_dot2c_") =>
            {
                let wide = inst.info.widths[i + 1] == 2;
                let f64_source = wide && vop && super::exec::float_input(inst.op()).1;
                literal(f, v, wide, f64_source)
            }
            _ => Op(op).fmt(f),
        }
    }
}

/// A 32-bit literal operand as llvm-objdump-19 prints it: a value an inline constant could
/// have encoded prints as that constant (an integer -16..=64, or one of the float constants,
/// 1/(2π) included, for a 32-bit operand), anything else in hex. A 64-bit float source reads
/// the literal as the high half of the double (`wide`, `f64_source`); a 64-bit integer source
/// zero-extends it, so only 0..=64 print as integers.
fn literal(f: &mut fmt::Formatter<'_>, v: u32, wide: bool, f64_source: bool) -> fmt::Result {
    use super::exec::{F32_CONST, F64_CONST};
    let inline_float = |f: &mut fmt::Formatter<'_>, k: usize| {
        fmt::Display::fmt(&Op(&Operand::InlineFloat(240 + k as u8)), f)
    };
    if !wide {
        if (-16..=64).contains(&(v as i32)) {
            return write!(f, "{}", v as i32);
        }
        if let Some(k) = F32_CONST.iter().position(|&c| c == v) {
            return inline_float(f, k);
        }
    } else if f64_source {
        let value = u64::from(v) << 32;
        if value == 0 {
            return f.write_str("0");
        }
        if let Some(k) = F64_CONST[..8].iter().position(|&c| c == value) {
            return inline_float(f, k);
        }
    } else if v <= 64 {
        return write!(f, "{v}");
    }
    write!(f, "0x{v:x}")
}

/// 1/(2π) as llvm-objdump prints the inline constant 248 for a 64-bit operand.
const INV_2PI_F64: &str = "0.15915494309189532";

impl fmt::Display for Src<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Src(inst, i) = *self;
        let op = SrcOp(inst, i);
        let extended = inst.mods.sdwa.is_some() || inst.mods.dpp.is_some();
        let mix = inst.encoding == Encoding::Vop3p && is_mix(inst.info.name);
        if inst.encoding != Encoding::Vop3 && !extended && !mix {
            return op.fmt(f);
        }
        if i < 2 && inst.mods.sdwa.is_some_and(|s| s.sext[i])
            || i == 1 && inst.mods.dpp.is_some_and(|d| d.src1_sext)
            || i > 0 && inst.mods.neg[i] && inst.info.op == OpKind::VCvtPkU8F32
        {
            return write!(f, "sext({op})");
        }
        let (neg, abs) = (inst.mods.neg[i], inst.mods.abs[i]);
        let constant = matches!(
            inst.src[i],
            Operand::InlineInt(_) | Operand::InlineFloat(_) | Operand::Literal(_)
        );
        match (neg, abs) {
            (false, false) => op.fmt(f),
            // A negated constant prints as neg(..), not to be read as a negative constant.
            (true, false) if constant => write!(f, "neg({op})"),
            (true, false) => write!(f, "-{op}"),
            (false, true) => write!(f, "|{op}|"),
            (true, true) => write!(f, "-|{op}|"),
        }
    }
}

/// The operand mask of `s_set_gpr_idx_on`/`s_set_gpr_idx_mode` as llvm-objdump prints it:
/// `gpr_idx(SRC0,SRC1,SRC2,DST)` listing the set bits 0..=3, or the raw value in hex when
/// bits above 3 are set.
struct GprIdx(u16);

impl fmt::Display for GprIdx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 > 15 {
            return write!(f, "0x{:x}", self.0);
        }
        f.write_str("gpr_idx(")?;
        let mut sep = "";
        for (k, n) in ["SRC0", "SRC1", "SRC2", "DST"].iter().enumerate() {
            if self.0 >> k & 1 != 0 {
                write!(f, "{sep}{n}")?;
                sep = ",";
            }
        }
        f.write_str(")")
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let info = self.info;
        let name = info.name;
        match self.encoding {
            Encoding::Sopc if name == "s_set_gpr_idx_on" => {
                write!(
                    f,
                    "{name} {}, {}",
                    Op(&self.src[0]),
                    GprIdx(self.imm as u16)
                )
            }
            Encoding::Sopp if name == "s_set_gpr_idx_mode" => {
                write!(f, "{name} {}", GprIdx(self.imm as u16))
            }
            Encoding::Sopp if name == "s_set_gpr_idx_off" => f.write_str(name),
            Encoding::Sop2 | Encoding::Sop1 | Encoding::Sopc => {
                f.write_str(name)?;
                let mut sep = " ";
                for (k, op) in [&self.dst, &self.src[0], &self.src[1]]
                    .into_iter()
                    .enumerate()
                {
                    if *op == Operand::None {
                        continue;
                    }
                    if *op == Operand::InlineFloat(248) && k > 0 && info.widths[k] == 2 {
                        write!(f, "{sep}{INV_2PI_F64}")?;
                    } else if let Operand::Literal(v) = *op {
                        f.write_str(sep)?;
                        literal(f, v, info.widths[k] == 2, false)?;
                    } else {
                        write!(f, "{sep}{}", Op(op))?;
                    }
                    sep = ", ";
                }
                Ok(())
            }
            Encoding::Sopk if name.starts_with("s_getreg") || name.starts_with("s_setreg") => {
                let hw = Hwreg(self.imm as u16, self.target);
                match name {
                    "s_getreg_b32" => write!(f, "{name} {}, {hw}", Op(&self.dst)),
                    _ => write!(f, "{name} {hw}, {}", Op(&self.src[0])),
                }
            }
            // The call's and the fork's offset print as the raw simm16, unsigned, as a
            // branch's.
            Encoding::Sopk if matches!(info.op, OpKind::SCallB64 | OpKind::SCbranchIFork) => {
                write!(f, "{name} {}, {}", Op(&self.dst), self.imm as u16)
            }
            Encoding::Sopk => {
                let imm = self.imm as u16;
                write!(f, "{name} {}, 0x{imm:x}", Op(&self.dst))
            }
            Encoding::Sopp => {
                let imm = self.imm as u16;
                match name {
                    "s_endpgm" | "s_barrier" | "s_endpgm_saved" | "s_icache_inv" | "s_wakeup"
                    | "s_ttracedata"
                        if imm == 0 =>
                    {
                        f.write_str(name)
                    }
                    "s_waitcnt" => {
                        let vm = (imm & 0xF) | (imm >> 14 & 3) << 4;
                        let exp = imm >> 4 & 7;
                        let lgkm = imm >> 8 & 0xF;
                        f.write_str(name)?;
                        let mut any = false;
                        if vm != 63 {
                            write!(f, " vmcnt({vm})")?;
                            any = true;
                        }
                        if exp != 7 {
                            write!(f, " expcnt({exp})")?;
                            any = true;
                        }
                        if lgkm != 15 {
                            write!(f, " lgkmcnt({lgkm})")?;
                            any = true;
                        }
                        if !any {
                            write!(f, " vmcnt(63) expcnt(7) lgkmcnt(15)")?;
                        }
                        Ok(())
                    }
                    "s_sendmsg" | "s_sendmsghalt" => {
                        write!(f, "{name} ")?;
                        sendmsg_text(f, imm)
                    }
                    _ if name == "s_branch"
                        || name.starts_with("s_cbranch")
                        || name == "s_endpgm" =>
                    {
                        write!(f, "{name} {imm}")
                    }
                    // Other immediates: decimal up to 64 (an inline constant), else hex.
                    _ if imm <= 64 => write!(f, "{name} {imm}"),
                    _ => write!(f, "{name} 0x{imm:x}"),
                }
            }
            Encoding::Smem if self.src[0] == Operand::None && self.dst == Operand::None => {
                f.write_str(name)
            }
            Encoding::Smem if self.src[0] == Operand::None => {
                write!(f, "{name} {}", Op(&self.dst))
            }
            Encoding::Smem => {
                if self.dst == Operand::None {
                    // s_dcache_discard*: an address, no data.
                    write!(f, "{name} {}, ", Op(&self.src[0]))?;
                } else {
                    write!(f, "{name} {}, {}, ", Op(&self.dst), Op(&self.src[0]))?;
                }
                if self.mods.smem_soe {
                    write!(f, "{} offset:", Op(&self.src[1]))?;
                }
                if self.src[1] != Operand::None && !self.mods.smem_soe {
                    write!(f, "{}", Op(&self.src[1]))?;
                } else if self.imm < 0 {
                    write!(f, "-0x{:x}", self.imm.unsigned_abs())?;
                } else {
                    write!(f, "0x{:x}", self.imm)?;
                }
                if self.mods.smem_glc {
                    f.write_str(" glc")?;
                }
                Ok(())
            }
            Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 => {
                let e64 = self.encoding == Encoding::Vop3;
                f.write_str(name)?;
                if self.mods.sdwa.is_some() {
                    f.write_str("_sdwa")?;
                } else if self.mods.dpp.is_some() {
                    f.write_str("_dpp")?;
                } else if !info.has(F_NONAME | F_SDST)
                    && !info.is_mai()
                    && !super::decode::has_literal_k(name)
                    && info.op != OpKind::VSwapB32
                    && (!self.encoding_is_vop1_form() || info.widths[0] != 0)
                {
                    // (v_readfirstlane_b32, v_swap_b32 and the VOP2 forms with a constant K
                    // have only their 32-bit encoding: llvm-objdump prints no suffix; nor does
                    // it for v_nop and v_clrexcp, which have no operands, in either encoding.)
                    f.write_str(if e64 { "_e64" } else { "_e32" })?;
                }
                let mut ops: heapless::Vec<Operand, 6> = heapless::Vec::new();
                let mut idx: heapless::Vec<Option<usize>, 6> = heapless::Vec::new();
                let mut push = |o: Operand, i: Option<usize>| {
                    if o != Operand::None {
                        let _ = ops.push(o);
                        let _ = idx.push(i);
                    }
                };
                push(self.dst, None);
                push(self.sdst, None);
                for i in 0..3 {
                    // e32 carry-in / cndmask VCC is printed last like a source.
                    push(self.src[i], Some(i));
                }
                // gfx950's v_bitop3_*: the truth table's eight bits sit in the neg (bits 0..2),
                // abs (3..5) and omod (6..7) fields, printed as `bitop3:` (decimal up to 10,
                // as llvm-objdump prints it), not as source modifiers.
                let bitop3 = e64 && matches!(info.op, OpKind::VBitop3B16 | OpKind::VBitop3B32);
                let mut sep = " ";
                for (o, i) in ops.iter().zip(idx.iter()) {
                    match i {
                        Some(i) if !bitop3 => write!(f, "{sep}{}", Src(self, *i))?,
                        _ => write!(f, "{sep}{}", Op(o))?,
                    }
                    sep = ", ";
                }
                if bitop3 {
                    let imm = self.mods.bitop3_table();
                    match imm {
                        0 => {}
                        1..=10 => write!(f, " bitop3:{imm}")?,
                        _ => write!(f, " bitop3:{imm:#x}")?,
                    }
                }
                if let Some(sd) = self.mods.sdwa {
                    return self.sdwa_text(f, sd);
                }
                if let Some(d) = self.mods.dpp {
                    return dpp_text(f, d);
                }
                let swap = matches!(
                    info.op,
                    OpKind::VPermlane16SwapB32 | OpKind::VPermlane32SwapB32
                );
                if e64 && swap {
                    // gfx950's lane swaps keep `bound_ctrl` and `fi` in op_sel bits 1 and 0.
                    if self.mods.op_sel & 2 != 0 {
                        f.write_str(" bound_ctrl:1")?;
                    }
                    if self.mods.op_sel & 1 != 0 {
                        f.write_str(" fi:1")?;
                    }
                } else if e64 {
                    if self.mods.op_sel != 0 {
                        let b = self.mods.op_sel;
                        // (v_cvt_sr_* and gfx950's v_cvt_scalef32_pk_fp4_{f16,bf16}:
                        // op_sel[3:2] is the result byte, all four printed.)
                        let sr = matches!(
                            info.op,
                            OpKind::VCvtSrFp8F32
                                | OpKind::VCvtSrBf8F32
                                | OpKind::VCvtScalef32PkFp4F16
                                | OpKind::VCvtScalef32PkFp4Bf16
                        );
                        let n = if self.src[2] != Operand::None || sr {
                            3
                        } else {
                            2
                        };
                        f.write_str(" op_sel:[")?;
                        for k in 0..n {
                            write!(f, "{}{}", if k > 0 { "," } else { "" }, b >> k & 1)?;
                        }
                        write!(f, ",{}]", b >> 3 & 1)?;
                    }
                    if self.mods.clamp {
                        f.write_str(" clamp")?;
                    }
                    match if bitop3 { 0 } else { self.mods.omod } {
                        1 => f.write_str(" mul:2")?,
                        2 => f.write_str(" mul:4")?,
                        3 => f.write_str(" div:2")?,
                        _ => {}
                    }
                }
                Ok(())
            }
            Encoding::Vop3p => {
                if is_mix(name) {
                    return self.mix_text(f);
                }
                if self.mods.scale.is_some() {
                    // gfx950's scaled MFMA: `v_mfma_scale_` and the f8f6f4 MFMA's shape.
                    write!(f, "v_mfma_scale_{}", &name["v_mfma_".len()..])?;
                } else {
                    f.write_str(name)?;
                }
                let mut sep = " ";
                for (k, o) in [&self.dst, &self.src[0], &self.src[1], &self.src[2]]
                    .into_iter()
                    .enumerate()
                {
                    if *o == Operand::None {
                        continue;
                    }
                    // k 3 is C: of v_mfma_f64_16x16x4f64 8 dwords, still f64 elements.
                    let f64_operand = info.is_mai()
                        && (info.widths[k] == 2 || k == 3 && name.starts_with("v_mfma_f64"));
                    if *o == Operand::InlineFloat(248) && k > 0 && f64_operand {
                        // MFMA f64's C: 1/(2π) as a double (packed f32 pairs keep the
                        // single-precision text).
                        write!(f, "{sep}{INV_2PI_F64}")?;
                    } else {
                        write!(f, "{sep}{}", Op(o))?;
                    }
                    sep = ", ";
                }
                if info.is_mai() {
                    return self.mai_text(f);
                }
                // llvm-objdump prints each packed modifier that differs from its default
                // (op_sel 0, op_sel_hi 1, neg_lo/neg_hi 0), one entry per source.
                let n = self.src.iter().filter(|o| **o != Operand::None).count();
                let neg_lo = (0..3).fold(0u8, |b, i| b | (self.mods.neg[i] as u8) << i);
                let full = (1u8 << n) - 1;
                // gfx950: LLVM 22 prints no op_sel_hi for the integer dot products (LLVM 19,
                // the older targets' reference, prints it when not all 1).
                let int_dot = self.target == Gfx9Target::Gfx950
                    && matches!(
                        info.op,
                        OpKind::VDot4I32I8
                            | OpKind::VDot4U32U8
                            | OpKind::VDot8I32I4
                            | OpKind::VDot8U32U4
                    );
                let hi = if int_dot { full } else { self.mods.op_sel_hi };
                for (label, bits, default) in [
                    ("op_sel", self.mods.op_sel, 0),
                    ("op_sel_hi", hi, full),
                    ("neg_lo", neg_lo, 0),
                    ("neg_hi", self.mods.neg_hi, 0),
                ] {
                    if bits & full != default {
                        write!(f, " {label}:[")?;
                        for k in 0..n {
                            let sep = if k > 0 { "," } else { "" };
                            write!(f, "{sep}{}", bits >> k & 1)?;
                        }
                        f.write_str("]")?;
                    }
                }
                if self.mods.clamp {
                    f.write_str(" clamp")?;
                }
                Ok(())
            }
            Encoding::Ds => {
                f.write_str(name)?;
                let mut sep = " ";
                for o in [&self.dst, &self.src[0], &self.src[1], &self.src[2]] {
                    if *o != Operand::None {
                        write!(f, "{sep}{}", Op(o))?;
                        sep = ", ";
                    }
                }
                let (o0, o1) = (self.imm & 0xFF, self.imm >> 8 & 0xFF);
                if name == "ds_swizzle_b32" {
                    if self.imm != 0 {
                        write!(f, " offset:{}", Swizzle(self.imm as u16))?;
                    }
                } else if ["ds_read2", "ds_write2", "ds_wrxchg2"]
                    .iter()
                    .any(|p| name.starts_with(p))
                {
                    if o0 != 0 {
                        write!(f, " offset0:{o0}")?;
                    }
                    if o1 != 0 {
                        write!(f, " offset1:{o1}")?;
                    }
                } else if self.imm != 0 {
                    write!(f, " offset:{}", self.imm)?;
                }
                // gfx90a and gfx942 have no GDS: llvm-objdump does not print the bit, but for
                // the GWS instructions, which are always GDS ones.
                let gws = info.op.attrs().class == super::op::Class::DsGws;
                if self.mods.gds && (gws || !self.target.has_acc_memory_operands()) {
                    f.write_str(" gds")?;
                }
                Ok(())
            }
            Encoding::Flat => {
                f.write_str(name)?;
                let scratch = name.starts_with("scratch_");
                let has_saddr = scratch || name.starts_with("global_");
                let mut sep = " ";
                if self.dst != Operand::None {
                    write!(f, "{sep}{}", Op(&self.dst))?;
                    sep = ", ";
                }
                match self.src[0] {
                    Operand::None => write!(f, "{sep}off")?,
                    ref a => write!(f, "{sep}{}", Op(a))?,
                }
                if self.src[1] != Operand::None {
                    write!(f, ", {}", Op(&self.src[1]))?;
                }
                if has_saddr {
                    match self.src[2] {
                        Operand::None => f.write_str(", off")?,
                        ref s => write!(f, ", {}", Op(s))?,
                    }
                }
                if self.imm != 0 {
                    write!(f, " offset:{}", self.imm)?;
                }
                self.cache_bits(f)
            }
            Encoding::Mubuf | Encoding::Mtbuf => {
                f.write_str(name)?;
                if self.src[2] == Operand::None {
                    return self.cache_bits(f);
                }
                if info.op == OpKind::BufferStoreLdsDword {
                    // No VGPRs: the resource, soffset, offset, `lds` (part of the mnemonic's
                    // syntax: llvm-objdump prints it before the cache bits), cache bits.
                    write!(f, " {}, {}", Op(&self.src[2]), Op(&self.soffset))?;
                    if self.imm != 0 {
                        write!(f, " offset:{}", self.imm)?;
                    }
                    f.write_str(" lds")?;
                    return self.cache_bits(f);
                }
                if self.mods.lds {
                    // A load into LDS: no vdata; vaddr or `off` first.
                    match self.src[0] {
                        Operand::None => f.write_str(" off")?,
                        ref a => write!(f, " {}", Op(a))?,
                    }
                    write!(f, ", {}, {}", Op(&self.src[2]), Op(&self.soffset))?;
                    if self.mods.idxen {
                        f.write_str(" idxen")?;
                    }
                    if self.mods.offen {
                        f.write_str(" offen")?;
                    }
                    if self.imm != 0 {
                        write!(f, " offset:{}", self.imm)?;
                    }
                    self.cache_bits(f)?;
                    return f.write_str(" lds");
                }
                // vdata (loads: the destination; stores and atomics: the data register, which
                // a returning atomic also writes), vaddr or `off`, srsrc, soffset.
                let vdata = if self.src[1] != Operand::None {
                    &self.src[1]
                } else {
                    &self.dst
                };
                write!(f, " {}, ", Op(vdata))?;
                match self.src[0] {
                    Operand::None => f.write_str("off")?,
                    ref a => write!(f, "{}", Op(a))?,
                }
                write!(f, ", {}, {}", Op(&self.src[2]), Op(&self.soffset))?;
                if self.encoding == Encoding::Mtbuf {
                    format_text(f, self.mods.format)?;
                }
                if self.mods.idxen {
                    f.write_str(" idxen")?;
                }
                if self.mods.offen {
                    f.write_str(" offen")?;
                }
                if self.imm != 0 {
                    write!(f, " offset:{}", self.imm)?;
                }
                self.cache_bits(f)
            }
            Encoding::Mimg => {
                // vdata (a store's or atomic's data, else the result), vaddr, srsrc, ssamp,
                // then the modifiers in llvm-objdump's order.
                let vdata = if self.src[1] != Operand::None {
                    &self.src[1]
                } else {
                    &self.dst
                };
                write!(
                    f,
                    "{name} {}, {}, {}",
                    Op(vdata),
                    Op(&self.src[0]),
                    Op(&self.src[2])
                )?;
                if self.soffset != Operand::None {
                    write!(f, ", {}", Op(&self.soffset))?;
                }
                let m = &self.mods;
                if m.dmask != 0 {
                    write!(f, " dmask:0x{:x}", m.dmask)?;
                }
                if m.unorm {
                    f.write_str(" unorm")?;
                }
                self.cache_bits(f)?;
                for (on, text) in [
                    (m.a16, " a16"),
                    (m.tfe, " tfe"),
                    (m.lwe, " lwe"),
                    (m.da, " da"),
                    (m.d16, " d16"),
                ] {
                    if on {
                        f.write_str(text)?;
                    }
                }
                Ok(())
            }
        }
    }
}

fn sel_name(s: SdwaSel) -> &'static str {
    match s {
        SdwaSel::Byte(0) => "BYTE_0",
        SdwaSel::Byte(1) => "BYTE_1",
        SdwaSel::Byte(2) => "BYTE_2",
        SdwaSel::Byte(_) => "BYTE_3",
        SdwaSel::Word(0) => "WORD_0",
        SdwaSel::Word(_) => "WORD_1",
        SdwaSel::Dword => "DWORD",
    }
}

/// The DPP control and masks as llvm-objdump prints them.
fn dpp_text(f: &mut fmt::Formatter<'_>, d: Dpp) -> fmt::Result {
    let c = d.ctrl;
    match c {
        0x000..=0x0FF => write!(
            f,
            " quad_perm:[{},{},{},{}]",
            c & 3,
            c >> 2 & 3,
            c >> 4 & 3,
            c >> 6 & 3
        )?,
        0x101..=0x10F => write!(f, " row_shl:{}", c & 0xF)?,
        0x111..=0x11F => write!(f, " row_shr:{}", c & 0xF)?,
        0x121..=0x12F => write!(f, " row_ror:{}", c & 0xF)?,
        0x130 => f.write_str(" wave_shl:1")?,
        0x134 => f.write_str(" wave_rol:1")?,
        0x138 => f.write_str(" wave_shr:1")?,
        0x13C => f.write_str(" wave_ror:1")?,
        0x140 => f.write_str(" row_mirror")?,
        0x141 => f.write_str(" row_half_mirror")?,
        0x142 => f.write_str(" row_bcast:15")?,
        0x143 => f.write_str(" row_bcast:31")?,
        _ => write!(f, " row_newbcast:{}", c & 0xF)?,
    }
    write!(
        f,
        " row_mask:0x{:x} bank_mask:0x{:x}",
        d.row_mask, d.bank_mask
    )?;
    if d.bound_ctrl {
        f.write_str(" bound_ctrl:1")?;
    }
    Ok(())
}

impl Instruction {
    /// Whether the instruction's opcode is a VOP1 one (in its VOP1 or VOP3 encoding).
    fn encoding_is_vop1_form(&self) -> bool {
        self.info.encoding == Encoding::Vop1
    }

    /// The SDWA modifiers as llvm-objdump prints them: clamp, omod, then the selects (VOPC:
    /// the source selects only).
    fn sdwa_text(&self, f: &mut fmt::Formatter<'_>, sd: Sdwa) -> fmt::Result {
        if self.mods.clamp {
            f.write_str(" clamp")?;
        }
        match self.mods.omod {
            1 => f.write_str(" mul:2")?,
            2 => f.write_str(" mul:4")?,
            3 => f.write_str(" div:2")?,
            _ => {}
        }
        let fp8 = matches!(
            self.info.op,
            OpKind::VCvtF32Fp8 | OpKind::VCvtF32Bf8 | OpKind::VCvtPkF32Fp8 | OpKind::VCvtPkF32Bf8
        );
        if self.encoding != Encoding::Vopc && !fp8 {
            let unused = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"];
            write!(
                f,
                " dst_sel:{} dst_unused:{}",
                sel_name(sd.dst_sel),
                unused[sd.dst_unused.min(2) as usize]
            )?;
        }
        write!(f, " src0_sel:{}", sel_name(sd.src_sel[0]))?;
        if self.encoding != Encoding::Vop1 {
            write!(f, " src1_sel:{}", sel_name(sd.src_sel[1]))?;
        }
        Ok(())
    }

    /// The FLAT/MUBUF cache bits as llvm-objdump prints them: gfx940 `sc0 nt sc1`, else
    /// `glc slc` and gfx90a's `scc`.
    /// `v_fma_mix*` and `v_mad_mix*` as llvm-objdump prints them: sources with `-`/`|…|` (the `neg_lo`/`neg_hi`
    /// bits are neg/abs), then `op_sel` and `op_sel_hi` when non-zero (their default is 0:
    /// f32 sources), then `clamp`.
    fn mix_text(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info.name)?;
        write!(f, " {}", Op(&self.dst))?;
        for i in 0..3 {
            write!(f, ", {}", Src(self, i))?;
        }
        for (label, bits) in [
            ("op_sel", self.mods.op_sel),
            ("op_sel_hi", self.mods.op_sel_hi),
        ] {
            if bits != 0 {
                write!(
                    f,
                    " {label}:[{},{},{}]",
                    bits & 1,
                    bits >> 1 & 1,
                    bits >> 2 & 1
                )?;
            }
        }
        if self.mods.clamp {
            f.write_str(" clamp")?;
        }
        Ok(())
    }

    /// The MFMA modifiers as llvm-objdump prints them: `cbsz`, `abid`, `blgp` when non-zero;
    /// on gfx940+ the f64 forms' `blgp` bits are `neg:[A,B,C]`.
    fn mai_text(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.mods;
        if let Some(sc) = m.scale {
            // gfx950's scaled MFMA: the two scale VGPRs, then the prefix's op_sel (when
            // set) and op_sel_hi (always), each with a third entry 0, as LLVM 22 prints
            // them.
            write!(f, ", {}, {}", Op(&sc.a), Op(&sc.b))?;
            if sc.op_sel != 0 {
                write!(f, " op_sel:[{},{},0]", sc.op_sel & 1, sc.op_sel >> 1)?;
            }
            write!(
                f,
                " op_sel_hi:[{},{},0]",
                sc.op_sel_hi & 1,
                sc.op_sel_hi >> 1
            )?;
        }
        if m.cbsz != 0 {
            write!(f, " cbsz:{}", m.cbsz)?;
        }
        if m.abid != 0 {
            write!(f, " abid:{}", m.abid)?;
        }
        if m.blgp != 0 {
            if self.target.is_gfx940() && self.info.name.starts_with("v_mfma_f64") {
                let b = m.blgp;
                write!(f, " neg:[{},{},{}]", b & 1, b >> 1 & 1, b >> 2 & 1)?;
            } else {
                write!(f, " blgp:{}", m.blgp)?;
            }
        }
        Ok(())
    }

    fn cache_bits(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = if self.target.is_gfx940() {
            [
                (self.mods.glc, " sc0"),
                (self.mods.slc, " nt"),
                (self.mods.sc1, " sc1"),
            ]
        } else {
            [
                (self.mods.glc, " glc"),
                (self.mods.slc, " slc"),
                (self.mods.sc1, " scc"),
            ]
        };
        for (on, text) in bits {
            if on {
                f.write_str(text)?;
            }
        }
        Ok(())
    }
}

/// The gfx9 message names of `s_sendmsg`'s SIMM16[3:0] (Vega ISA §4.4 "Send Message
/// Types"): `None` where gfx9 has no message.
pub(super) fn sendmsg_name(id: u16) -> Option<&'static str> {
    Some(match id {
        1 => "MSG_INTERRUPT",
        2 => "MSG_GS",
        3 => "MSG_GS_DONE",
        4 => "MSG_SAVEWAVE",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        7 => "MSG_ORDERED_PS_DONE",
        8 => "MSG_EARLY_PRIM_DEALLOC",
        9 => "MSG_GS_ALLOC_REQ",
        10 => "MSG_GET_DOORBELL",
        15 => "MSG_SYSMSG",
        _ => return None,
    })
}

/// `s_sendmsg`'s operand as llvm-objdump prints it: `sendmsg(MSG, OP[, STREAM])` when the
/// message (bits 3:0), operation (6:4) and GS stream (9:8) are a valid gfx9 combination, else
/// `sendmsg(id, op, stream)` when those fields make up the whole immediate, else the
/// immediate in decimal.
fn sendmsg_text(f: &mut fmt::Formatter<'_>, imm: u16) -> fmt::Result {
    let (id, op, stream) = (imm & 0xF, imm >> 4 & 7, imm >> 8 & 3);
    const GS_OPS: [&str; 4] = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"];
    const SYS_OPS: [&str; 5] = [
        "",
        "SYSMSG_OP_ECC_ERR_INTERRUPT",
        "SYSMSG_OP_REG_RD",
        "",
        "SYSMSG_OP_TTRACE_PC",
    ];
    match (id, sendmsg_name(id)) {
        (2, Some(n)) if (1..=3).contains(&op) => {
            return write!(f, "sendmsg({n}, {}, {stream})", GS_OPS[op as usize]);
        }
        (3, Some(n)) if (1..=3).contains(&op) => {
            return write!(f, "sendmsg({n}, {}, {stream})", GS_OPS[op as usize]);
        }
        (3, Some(n)) if op == 0 && stream == 0 => return write!(f, "sendmsg({n}, GS_OP_NOP)"),
        (15, Some(n)) if stream == 0 && matches!(op, 1 | 2 | 4) => {
            return write!(f, "sendmsg({n}, {})", SYS_OPS[op as usize]);
        }
        (2 | 3 | 15, _) => {}
        (_, Some(n)) if op == 0 && stream == 0 => return write!(f, "sendmsg({n})"),
        _ => {}
    }
    if id | op << 4 | stream << 8 == imm {
        write!(f, "sendmsg({id}, {op}, {stream})")
    } else {
        write!(f, "{imm}")
    }
}

/// A `ds_swizzle_b32` offset as LLVM's AMDGPU assembler syntax spells it
/// (AMDGPUModifierSyntax, `swizzle pattern`): `swizzle(QUAD_PERM,a,b,c,d)` when
/// `offset[15:8]` is 0x80; in bit-mask mode (`offset[15]` clear) `swizzle(SWAP,n)` (and mask
/// 0x1F, no or mask, one xor bit), `swizzle(REVERSE,n)` (and mask 0x1F, no or mask, xor mask
/// n - 1), `swizzle(BROADCAST,n,lane)` (groups of n, the and mask clearing the low bits,
/// or mask the lane, no xor mask) or `swizzle(BITMASK_PERM,"…")` (one character per lane-id
/// bit, high first, by what the bit becomes: `0`/`1` always that, `p` kept, `i` inverted);
/// anything else in decimal.
struct Swizzle(u16);

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v & 0xFF00 == 0x8000 {
            return write!(
                f,
                "swizzle(QUAD_PERM,{},{},{},{})",
                v & 3,
                v >> 2 & 3,
                v >> 4 & 3,
                v >> 6 & 3
            );
        }
        if v & 0x8000 != 0 {
            return write!(f, "{v}");
        }
        let (and, or, xor) = (v & 0x1F, v >> 5 & 0x1F, v >> 10 & 0x1F);
        if and == 0x1F && or == 0 && xor.count_ones() == 1 {
            return write!(f, "swizzle(SWAP,{xor})");
        }
        if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
            return write!(f, "swizzle(REVERSE,{})", xor + 1);
        }
        let group = 0x20 - and;
        if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
            return write!(f, "swizzle(BROADCAST,{group},{or})");
        }
        f.write_str("swizzle(BITMASK_PERM,\"")?;
        // What each lane-id bit becomes for a source bit of 0 and of 1.
        let (zero, one) = ((or ^ xor), ((0x1F & and) | or) ^ xor);
        for bit in (0..5).rev() {
            let c = match (zero >> bit & 1, one >> bit & 1) {
                (0, 0) => '0',
                (1, 1) => '1',
                (0, _) => 'p',
                _ => 'i',
            };
            write!(f, "{c}")?;
        }
        f.write_str("\")")
    }
}

/// The MTBUF data formats (`dfmt`, Vega ISA §8.1.8 "Buffer data formats") as llvm-objdump
/// names them.
pub(super) const DATA_FORMATS: [&str; 16] = [
    "INVALID",
    "8",
    "16",
    "8_8",
    "32",
    "16_16",
    "10_11_11",
    "11_11_10",
    "10_10_10_2",
    "2_10_10_10",
    "8_8_8_8",
    "32_32",
    "16_16_16_16",
    "32_32_32",
    "32_32_32_32",
    "RESERVED_15",
];

/// The MTBUF numeric formats (`nfmt`) as llvm-objdump names them.
pub(super) const NUM_FORMATS: [&str; 8] = [
    "UNORM",
    "SNORM",
    "USCALED",
    "SSCALED",
    "UINT",
    "SINT",
    "RESERVED_6",
    "FLOAT",
];

/// ` format:[BUF_DATA_FORMAT_d,BUF_NUM_FORMAT_n]`, leaving out the default data format 8
/// and numeric format UNORM (nothing at all for both defaults), as llvm-objdump prints it.
fn format_text(f: &mut fmt::Formatter<'_>, format: u8) -> fmt::Result {
    let (d, n) = (format & 0xF, format >> 4 & 7);
    match (d, n) {
        (1, 0) => Ok(()),
        (_, 0) => write!(f, " format:[BUF_DATA_FORMAT_{}]", DATA_FORMATS[d as usize]),
        (1, _) => write!(f, " format:[BUF_NUM_FORMAT_{}]", NUM_FORMATS[n as usize]),
        _ => write!(
            f,
            " format:[BUF_DATA_FORMAT_{},BUF_NUM_FORMAT_{}]",
            DATA_FORMATS[d as usize], NUM_FORMATS[n as usize]
        ),
    }
}

/// Whether `name` is a mixed-precision multiply-add (`v_fma_mix*`, gfx906+; `v_mad_mix*`,
/// gfx900), whose VOP3P `neg_hi` bits are `abs` and whose `op_sel_hi` bits choose f16
/// sources.
fn is_mix(name: &str) -> bool {
    name.starts_with("v_fma_mix") || name.starts_with("v_mad_mix")
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use crate::{decode, Gfx9Target};

    fn text(words: &[u32], t: Gfx9Target) -> alloc::string::String {
        let mut b = alloc::vec::Vec::new();
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        decode(&b, t).unwrap().to_string()
    }

    #[test]
    fn hwreg_and_setreg_text_from_llvm_mc() {
        // llvm-mc-19 --disassemble: the SIMM16 hwreg fields and s_setreg_imm32_b32's literal
        // (inline-constant values print as constants); register 20 is named on gfx940 only.
        let t = Gfx9Target::Gfx900;
        let imm = |v: u32| text(&[0xBA000901, v], t);
        assert_eq!(
            imm(0xFFFF_FFF0),
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), -16"
        );
        assert_eq!(
            imm(0x41),
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0x41"
        );
        assert_eq!(
            imm(0x3F80_0000),
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 1.0"
        );
        assert_eq!(
            text(&[0xB881F802], t),
            "s_getreg_b32 s1, hwreg(HW_REG_STATUS)"
        );
        assert_eq!(text(&[0xB8811800], t), "s_getreg_b32 s1, hwreg(0, 0, 4)");
        assert_eq!(text(&[0xB8811054], t), "s_getreg_b32 s1, hwreg(20, 1, 3)");
        assert_eq!(
            text(&[0xB8811054], Gfx9Target::Gfx942),
            "s_getreg_b32 s1, hwreg(HW_REG_XCC_ID, 1, 3)"
        );
        assert_eq!(
            text(&[0xB9030901], t),
            "s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s3"
        );
    }

    #[test]
    fn golden_text_from_llvm_objdump() {
        let t = Gfx9Target::Gfx900;
        assert_eq!(text(&[0xC0020242, 4], t), "s_load_dword s9, s[4:5], 0x4");
        assert_eq!(text(&[0x7E020280], t), "v_mov_b32_e32 v1, 0");
        assert_eq!(text(&[0xBF8CC07F], t), "s_waitcnt lgkmcnt(0)");
        assert_eq!(text(&[0x32040000], t), "v_add_co_u32_e32 v2, vcc, s0, v0");
        assert_eq!(
            text(&[0x38060303], t),
            "v_addc_co_u32_e32 v3, vcc, v3, v1, vcc"
        );
        assert_eq!(
            text(&[0xD28F0000, 0x00020082], t),
            "v_lshlrev_b64 v[0:1], 2, v[0:1]"
        );
        assert_eq!(
            text(&[0xDC708000, 0x007F0200], t),
            "global_store_dword v[0:1], v2, off"
        );
        assert_eq!(text(&[0xD81A0000, 0x00000304], t), "ds_write_b32 v4, v3");
        assert_eq!(
            text(&[0xD1050103, 0x00000D02], t),
            "v_mul_f32_e64 v3, |v2|, s6"
        );
        // llvm-mc-19 -show-encoding: the cache bits in llvm-objdump's order (gfx942: sc0 nt
        // sc1; gfx90a: glc slc scc), MUBUF operands, VOP3P modifiers.
        assert_eq!(
            text(&[0xDE538000, 0x017F0002], Gfx9Target::Gfx942),
            "global_load_dword v1, v[2:3], off sc0 nt sc1"
        );
        assert_eq!(
            text(&[0xDE538000, 0x017F0002], Gfx9Target::Gfx90a),
            "global_load_dword v1, v[2:3], off glc slc scc"
        );
        assert_eq!(
            text(&[0xE05E7008, 0x80010001], t),
            "buffer_load_dwordx4 v[0:3], v[1:2], s[4:7], 0 idxen offen offset:8 glc slc"
        );
        assert_eq!(
            text(&[0xE0500004, 0x02010100], t),
            "buffer_load_dword v1, off, s[4:7], s2 offset:4"
        );
        assert_eq!(
            text(&[0xD38E6000, 0x0C0E0501], t),
            "v_pk_fma_f16 v0, v1, v2, v3 op_sel:[0,0,1] op_sel_hi:[1,0,1]"
        );
        assert_eq!(
            text(&[0xD38FC200, 0x38020501], t),
            "v_pk_add_f16 v0, v1, v2 neg_lo:[1,0] neg_hi:[0,1] clamp"
        );
        // rocrtst's signal_st_rlx_kernel (gfx90a) zeroes a register pair with this.
        assert_eq!(
            text(&[0xD3B34000, 0x18010080], Gfx9Target::Gfx90a),
            "v_pk_mov_b32 v[0:1], 0, 0"
        );
    }

    /// Where LLVM 22 (gfx950's reference) prints or decodes gfx942's instructions unlike
    /// LLVM 19 (the older processors' reference): no `op_sel_hi` on the integer dot
    /// products, and `v_pk_fmac_f16_e64`, whose src2 field it ignores.
    #[test]
    fn gfx950_follows_llvm22_where_it_differs_from_llvm19() {
        let dot = [0xD3A8_0002, 0x040E_0501]; // v_dot4_i32_i8 v2, v1, v2, v3, op_sel_hi 0
        assert_eq!(
            text(&dot, Gfx9Target::Gfx950),
            "v_dot4_i32_i8 v2, v1, v2, v3"
        );
        assert_eq!(
            text(&dot, Gfx9Target::Gfx942),
            "v_dot4_i32_i8 v2, v1, v2, v3 op_sel_hi:[0,0,0]"
        );
        // With op_sel set (d3a87e00 24e71145 from the seeded differential run): LLVM 22
        // rejects the word for gfx950, LLVM 19 decodes it for gfx942.
        let b: alloc::vec::Vec<u8> = [0xD3A8_7E00u32, 0x24E7_1145]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert!(crate::decode(&b, Gfx9Target::Gfx950).is_err());
        assert!(crate::decode(&b, Gfx9Target::Gfx942).is_ok());
        let fmac = [0xD13C_0002, 0x040E_0501];
        assert_eq!(
            text(&fmac, Gfx9Target::Gfx950),
            "v_pk_fmac_f16_e64 v2, v1, v2"
        );
        let b: alloc::vec::Vec<u8> = fmac.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert!(crate::decode(&b, Gfx9Target::Gfx942).is_err());
    }

    /// gfx950's f8f6f4 MFMAs as LLVM 22 disassembles them: A's registers follow cbsz, B's
    /// blgp (FP8/BF8 8, FP6/BF6 6, FP4 4; the undefined codes 5..7 decode with 8); abid
    /// set is refused, as LLVM 22 refuses it.
    #[test]
    fn gfx950_f8f6f4_operand_widths() {
        let t = Gfx9Target::Gfx950;
        for (w, want) in [
            (
                [0xD3AD_0000, 0x0402_1904],
                "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]",
            ),
            (
                [0xD3AD_0200, 0x8402_1904],
                "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:9], v[12:15], v[0:3] cbsz:2 blgp:4",
            ),
            (
                [0xD3AE_0400, 0x6202_2910],
                "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:19], v[20:25], 0 cbsz:4 blgp:3",
            ),
            (
                [0xD3AD_8100, 0x2402_1904],
                "v_mfma_f32_16x16x128_f8f6f4 a[0:3], v[4:11], v[12:19], a[0:3] cbsz:1 blgp:1",
            ),
            (
                [0xD3AD_0500, 0x0402_1904],
                "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3] cbsz:5",
            ),
        ] {
            assert_eq!(text(&w, t), want, "{w:08x?}");
        }
        let bytes =
            |w: &[u32]| -> alloc::vec::Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let e = crate::decode(&bytes(&[0xD3AD_0800, 0x0402_1904]), t).unwrap_err();
        assert!(e.to_string().contains("abid of an f8f6f4 MFMA"), "{e}");
        // v_mfma_ld_scale_b32 before an f8f6f4 MFMA whose abid is 1: one 16-byte scaled
        // MFMA; before anything else, or alone, itself (LLVM 22's texts).
        for (w, want, size) in [
            (
                &[0xD3AC_0000u32, 0x0002_2B14, 0xD3AD_0800, 0x0402_1904][..],
                "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21 \
                 op_sel_hi:[0,0,0]",
                16,
            ),
            (
                &[0xD3AC_1800, 0x1802_2B14, 0xD3AD_0A00, 0x8402_1904],
                "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:9], v[12:15], v[0:3], v20, v21 \
                 op_sel:[1,1,0] op_sel_hi:[1,1,0] cbsz:2 blgp:4",
                16,
            ),
            (
                &[0xD3AC_0000, 0x0002_2B14, 0xD3AD_0000, 0x0402_1904],
                "v_mfma_ld_scale_b32 v20, v21 op_sel_hi:[0,0]",
                8,
            ),
            (
                &[0xD3AC_0000, 0x1802_28F2],
                "v_mfma_ld_scale_b32 1.0, v20",
                8,
            ),
            (
                &[0xD3AC_1800, 0x0002_2B14],
                "v_mfma_ld_scale_b32 v20, v21 op_sel:[1,1] op_sel_hi:[0,0]",
                8,
            ),
        ] {
            let inst = crate::decode(&bytes(w), t).unwrap();
            assert_eq!(
                (inst.to_string().as_str(), inst.size),
                (want, size),
                "{w:08x?}"
            );
        }
        // A scale that is no VGPR: LLVM 22 prints an invalid immediate; refused here.
        let e = crate::decode(
            &bytes(&[0xD3AC_0000, 0x0001_E4F2, 0xD3AD_0800, 0x0402_1904]),
            t,
        )
        .unwrap_err();
        assert!(e.to_string().contains("A's scale is not a VGPR"), "{e}");
    }

    /// gfx950's operands that live in other fields, as LLVM 22's llvm-mc encodes and prints
    /// them (`llvm-mc -mcpu=gfx950 -show-encoding`): v_bitop3's truth table in neg/abs/omod,
    /// the lane swaps' `bound_ctrl`/`fi` in op_sel.
    #[test]
    fn gfx950_bitop3_and_lane_swap_fields() {
        let t = Gfx9Target::Gfx950;
        let cases: [([u32; 2], &str); 6] = [
            (
                [0xD234_0002, 0x240E_0501],
                "v_bitop3_b32 v2, v1, v2, v3 bitop3:1",
            ),
            (
                [0xD234_0102, 0x440E_0501],
                "v_bitop3_b32 v2, v1, v2, v3 bitop3:10",
            ),
            (
                [0xD234_0102, 0xE40E_0501],
                "v_bitop3_b32 v2, v1, v2, v3 bitop3:0xf",
            ),
            (
                [0xD234_0402, 0x040E_0501],
                "v_bitop3_b32 v2, v1, v2, v3 bitop3:0x20",
            ),
            (
                [0xD234_0002, 0x140E_0501],
                "v_bitop3_b32 v2, v1, v2, v3 bitop3:0x80",
            ),
            (
                [0xD233_7F02, 0xFC0E_0501],
                "v_bitop3_b16 v2, v1, v2, v3 bitop3:0xff op_sel:[1,1,1,1]",
            ),
        ];
        for (w, want) in cases {
            assert_eq!(text(&w, t), want, "{w:08x?}");
        }
        assert_eq!(
            text(&[0xD199_1802, 0x0000_0101], t),
            "v_permlane16_swap_b32_e64 v2, v1 bound_ctrl:1 fi:1"
        );
        assert_eq!(
            text(&[0xD199_0802, 0x0000_0101], t),
            "v_permlane16_swap_b32_e64 v2, v1 fi:1"
        );
        assert_eq!(
            text(&[0xD19A_1002, 0x0000_0101], t),
            "v_permlane32_swap_b32_e64 v2, v1 bound_ctrl:1"
        );
        // op_sel of the scaled conversions, the stochastic-rounding packs, v_ashr_pk; source
        // modifiers and clamp of v_cvt_pk_f16_f32.
        for (w, want) in [
            (
                [0xD235_4002, 0x040E_0501],
                "v_cvt_scalef32_pk_fp8_f32 v2, v1, v2, v3 op_sel:[0,0,0,1]",
            ),
            (
                [0xD23B_1802, 0x0002_0501],
                "v_cvt_scalef32_f32_fp8 v2, v1, v2 op_sel:[1,1,0]",
            ),
            (
                [0xD237_6002, 0x040E_0501],
                "v_cvt_scalef32_sr_fp8_f32 v2, v1, v2, v3 op_sel:[0,0,1,1]",
            ),
            (
                [0xD23F_1802, 0x0002_0501],
                "v_cvt_scalef32_pk_f32_fp4 v[2:3], v1, v2 op_sel:[1,1,0]",
            ),
            (
                [0xD265_4002, 0x040E_0501],
                "v_ashr_pk_i8_i32 v2, v1, v2, v3 op_sel:[0,0,0,1]",
            ),
            // Two sources, but op_sel[3:2] is the result byte: all four bits printed (LLVM
            // 22's disassembly of these words; llc emits them for the intrinsic's byte 1).
            (
                [0xD24C_2001, 0x0002_0702],
                "v_cvt_scalef32_pk_fp4_f16 v1, v2, v3 op_sel:[0,0,1,0]",
            ),
            (
                [0xD24C_4001, 0x0002_0702],
                "v_cvt_scalef32_pk_fp4_f16 v1, v2, v3 op_sel:[0,0,0,1]",
            ),
            (
                [0xD2A6_4002, 0x0002_0501],
                "v_cvt_sr_f16_f32 v2, v1, v2 op_sel:[0,0,1]",
            ),
            (
                [0xD267_8202, 0x2002_0501],
                "v_cvt_pk_f16_f32 v2, -v1, |v2| clamp",
            ),
        ] {
            assert_eq!(text(&w, t), want, "{w:08x?}");
        }
        // Not on gfx942.
        let b: alloc::vec::Vec<u8> = [0xD234_0002u32, 0x240E_0501]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert!(decode(&b, Gfx9Target::Gfx942).is_err());
    }
}
