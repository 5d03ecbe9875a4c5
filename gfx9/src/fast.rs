//! The interpreter's fast path: the instructions kernels run most, classified once when the
//! decode cache first decodes them ([`classify`]) into a compact [`Fast`] operation that
//! [`run`] executes without looking at the mnemonic. VALU operations compute all 64 lanes
//! in plain loops over register rows (which the host compiler vectorizes), then keep the
//! results of the EXEC lanes only, so masked lanes cost nothing but the blend.
//!
//! Only the plain forms are classified: VOP1/VOP2/VOPC (e32) and VOP3 without `abs`, `neg`,
//! `clamp`, `omod`, `op_sel`, SDWA or DPP, 32-bit VGPR/SGPR/constant sources; everything
//! else (and every instruction not listed) stays [`Fast::Slow`] and runs through the general
//! interpreter in `exec.rs`, whose semantics these operations repeat exactly (the same host
//! operations per lane; the ISA tests run both).

use super::decode::{Encoding, Instruction, Operand};
use super::exec::{
    canon32, DeviceMemory, F32_CONST, PRIVATE_APERTURE_BASE, SCRATCH_BACKING_BASE,
    SHARED_APERTURE_BASE,
};
use super::mode::{self, Kind};
use hsa_core::{error, Result};

/// Bytes of the scratch backing window above [`SCRATCH_BACKING_BASE`] (`exec.rs`'s
/// `read_global`/`write_global`): accesses there take the general path.
const SCRATCH_WINDOW: u64 = 1 << 40;
use super::wave::{Wave, WAVE_SIZE};

/// A 32-bit source of a fast VALU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Src {
    /// VGPR `n`.
    V(u8),
    /// Scalar register `n` (operand code 0..=127), the same value in every lane.
    S(u8),
    /// A constant (inline or literal), the same in every lane.
    K(u32),
}

/// VALU operations with one 32-bit result per lane from up to three 32-bit sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VOp {
    Mov,
    AddU32,
    SubU32,
    SubrevU32,
    MulLoU32,
    MulHiU32,
    MulU32U24,
    And,
    Or,
    Xor,
    Not,
    LshlrevB32,
    LshrrevB32,
    AshrrevI32,
    MinI32,
    MaxI32,
    MinU32,
    MaxU32,
    AddF32,
    SubF32,
    SubrevF32,
    MulF32,
    MinF32,
    MaxF32,
    CvtF32I32,
    CvtF32U32,
    /// `v_rsq_f32`: 1/sqrt(a) computed in f64 and rounded once, the ISA's default NaN for a
    /// NaN made from a non-NaN input (as the general path).
    RsqF32,
    /// `d = a * b + d` (two roundings), the destination read as the third source.
    MacF32,
    /// `a * b + c`, two roundings.
    MadF32,
    /// `fma(a, b, c)`, one rounding; `v_fmac_f32` has the destination as `c`.
    FmaF32,
    MadU32U24,
    Add3U32,
    LshlAddU32,
    AddLshlU32,
    LshlOrB32,
    AndOrB32,
    Or3B32,
    XadU32,
    BfeU32,
    BfiB32,
    AlignbitB32,
}

impl VOp {
    /// Whether MODE.FP_ROUND applies (a float operation: the general path then reports the
    /// rounding mode it does not model).
    fn is_float(self) -> bool {
        use VOp::*;
        matches!(
            self,
            AddF32
                | SubF32
                | SubrevF32
                | MulF32
                | MinF32
                | MaxF32
                | CvtF32I32
                | CvtF32U32
                | RsqF32
                | MacF32
                | MadF32
                | FmaF32
        )
    }
}

/// Whether the fast form of float operation `op` computes what MODE `mode` asks: round to
/// nearest even (FP_ROUND 0) and, but for `v_mad`/`v_mac_f32` (which always flush) and the
/// conversions from integers (no denormal result), f32 denormals kept in and out (FP_DENORM
/// `[5:4]` 3, what clang sets for HIP and OpenCL on gfx9). IEEE mode is applied in the
/// operation (`v_min`/`v_max_f32`). Any other mode runs the general path.
fn plain_f32_mode(mode: u32, op: VOp) -> bool {
    use VOp::*;
    mode::fp_round(mode) == 0
        && (matches!(op, MacF32 | MadF32 | CvtF32I32 | CvtF32U32)
            || mode::f32_denorm(mode) == mode::DENORM_KEEP)
}

/// Carry-out (and carry-in) VALU operations: the result to a VGPR, the carry to a mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum COp {
    AddCo,
    SubCo,
    SubrevCo,
    Addc,
    Subb,
}

/// 32-bit compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cmp {
    Lt,
    Eq,
    Le,
    Gt,
    Ne,
    Ge,
}

/// Compare operand types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CmpTy {
    I32,
    U32,
}

/// f32 compare conditions (the VOPC float conditions but `f`/`tru` and `class`): which
/// orderings of (a, b) give true, bit 0 less, 1 equal, 2 greater, 3 unordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FCond(u8);

impl FCond {
    fn of(c: &str) -> Option<FCond> {
        const L: u8 = 1;
        const E: u8 = 2;
        const G: u8 = 4;
        const U: u8 = 8;
        Some(FCond(match c {
            "lt" => L,
            "eq" => E,
            "le" => L | E,
            "gt" => G,
            "lg" => L | G,
            "ge" => G | E,
            "o" => L | E | G,
            "u" => U,
            "nge" => L | U,
            "nlg" => E | U,
            "ngt" => L | E | U,
            "nle" => G | U,
            "neq" => L | G | U,
            "nlt" => E | G | U,
            _ => return None,
        }))
    }

    #[inline(always)]
    fn holds(self, a: f32, b: f32) -> bool {
        let bit = if a < b {
            1
        } else if a == b {
            2
        } else if a > b {
            4
        } else {
            8
        };
        self.0 & bit != 0
    }
}

/// Scalar ALU operations on 32-bit (or, `wide`, 64-bit) values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SOp {
    Mov,
    AddU32,
    SubU32,
    AddI32,
    SubI32,
    AddcU32,
    MulI32,
    And,
    Or,
    Xor,
    Andn2,
    LshlB32,
    LshrB32,
    LshlB64,
    Cselect,
}

/// Conditions of `s_cbranch_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cond {
    Always,
    Scc0,
    Scc1,
    Vccz,
    Vccnz,
    Execz,
    Execnz,
}

/// Packed f32 operations (gfx90a/gfx942 VOP3P `v_pk_*_f32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PkOp {
    Fma,
    Mul,
    Add,
}

/// An instruction as the fast path runs it, or [`Fast::Slow`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fast {
    /// Not classified: the general interpreter runs it.
    Slow,
    /// `s_nop`, `s_waitcnt`: nothing.
    Nop,
    /// `s_endpgm`.
    End,
    /// `s_branch`/`s_cbranch_*` to this address.
    Branch(Cond, u64),
    /// A VALU operation into VGPR `dst`.
    V { op: VOp, dst: u8, src: [Src; 3] },
    /// `v_lshlrev_b64 v[dst:dst+1], shift, v[b:b+1]`.
    LshlrevB64 { dst: u8, shift: Src, b: u8 },
    /// A carry operation into VGPR `dst`, carry-in mask at scalar `cin` (ignored unless
    /// `Addc`/`Subb`), carry-out mask to scalar pair `cout`.
    C {
        op: COp,
        dst: u8,
        a: Src,
        b: Src,
        cin: u8,
        cout: u8,
    },
    /// `v_cndmask_b32`: `mask` lane bit ? b : a.
    Cndmask { dst: u8, a: Src, b: Src, mask: u8 },
    /// `v_cmp(x)_<cond>_<ty>` into scalar pair `sdst` (and EXEC for `v_cmpx`).
    Cmp {
        cond: Cmp,
        ty: CmpTy,
        a: Src,
        b: Src,
        sdst: u8,
        x: bool,
    },
    /// `v_cmp(x)_<cond>_f32` into scalar pair `sdst` (and EXEC for `v_cmpx`).
    FCmp {
        cond: FCond,
        a: Src,
        b: Src,
        sdst: u8,
        x: bool,
    },
    /// A scalar ALU operation; a 32-bit one sets SCC as the general path does.
    S {
        op: SOp,
        wide: bool,
        dst: u8,
        a: Src,
        b: Src,
    },
    /// `v_pk_{fma,mul,add}_f32` on VGPR pairs: half `h` of source `i` is the pair's high
    /// dword when bit `i` of `sel[h]` is set (`op_sel`, `op_sel_hi`), negated when bit `i` of
    /// `neg[h]` is (`neg_lo`, `neg_hi`).
    Pk {
        op: PkOp,
        dst: u8,
        src: [u8; 3],
        sel: [u8; 2],
        neg: [u8; 2],
    },
    /// `global_load_dword{,x2,x3,x4}` into VGPRs `dst..`, or (`store`) `global_store_dword*`
    /// from VGPRs `data..`: per lane the address is `saddr` (a scalar pair) + the VGPR
    /// `vaddr`, or the VGPR pair `vaddr` without `saddr`, plus `offset`. `flat`: the same
    /// forms of `flat_load`/`flat_store`, run here only when no active lane's address is in
    /// the shared or private aperture.
    Global {
        flat: bool,
        store: bool,
        dwords: u8,
        reg: u8,
        vaddr: u8,
        saddr: Option<u8>,
        offset: i32,
    },
    /// `ds_read_b32`/`ds_read_b64` into VGPRs `reg..`, or (`store`) `ds_write_b32`/`b64`
    /// from VGPRs `reg..`: per lane at LDS byte address VGPR `addr` + `offset`; an access
    /// not wholly inside the work-group's LDS reads zeros or is dropped (as the general path).
    Ds {
        store: bool,
        dwords: u8,
        reg: u8,
        addr: u8,
        offset: u16,
    },
    /// `s_load_dword{,x2,x4,x8,x16}` into SGPRs `dst..` from the scalar pair `base` + the
    /// byte offset `offset`, the address rounded down to a dword (as the general path).
    SLoad {
        dwords: u8,
        dst: u8,
        base: u8,
        offset: i32,
    },
    /// `s_barrier`.
    Barrier,
    /// `s_cmp_<cond>_<ty>` (32-bit) into SCC.
    SCmp {
        cond: Cmp,
        ty: CmpTy,
        a: Src,
        b: Src,
    },
}

/// A 32-bit source: a VGPR, a scalar register or a constant; `None` for anything else
/// (AGPRs, 64-bit operands, special operands).
fn src32(op: &Operand) -> Option<Src> {
    Some(match *op {
        Operand::Vgpr { index, count: 1 } => Src::V(index),
        Operand::Sreg { index, count: 1 } => Src::S(index),
        Operand::InlineInt(v) => Src::K(v as i32 as u32),
        Operand::InlineFloat(c) => Src::K(F32_CONST[(c - 240) as usize]),
        Operand::Literal(v) => Src::K(v),
        _ => return None,
    })
}

/// A scalar register pair (a lane mask).
fn pair(op: &Operand) -> Option<u8> {
    match *op {
        Operand::Sreg { index, count: 2 } if index < 127 => Some(index),
        _ => None,
    }
}

fn vdst(op: &Operand) -> Option<u8> {
    match *op {
        Operand::Vgpr { index, count: 1 } => Some(index),
        _ => None,
    }
}

fn sdst32(op: &Operand) -> Option<u8> {
    match *op {
        Operand::Sreg { index, count: 1 } => Some(index),
        _ => None,
    }
}

/// The fast form of `inst` at byte address `pc`, or [`Fast::Slow`].
pub(super) fn classify(inst: &Instruction, pc: u64) -> Fast {
    classify_inner(inst, pc).unwrap_or(Fast::Slow)
}

fn classify_inner(inst: &Instruction, pc: u64) -> Option<Fast> {
    let name = inst.name();
    match inst.encoding {
        Encoding::Sopp => {
            let target = pc
                .wrapping_add(u64::from(inst.size))
                .wrapping_add((i64::from(inst.imm) * 4) as u64);
            let cond = match name {
                "s_nop" | "s_waitcnt" => return Some(Fast::Nop),
                "s_endpgm" => return Some(Fast::End),
                "s_barrier" => return Some(Fast::Barrier),
                "s_branch" => Cond::Always,
                "s_cbranch_scc0" => Cond::Scc0,
                "s_cbranch_scc1" => Cond::Scc1,
                "s_cbranch_vccz" => Cond::Vccz,
                "s_cbranch_vccnz" => Cond::Vccnz,
                "s_cbranch_execz" => Cond::Execz,
                "s_cbranch_execnz" => Cond::Execnz,
                _ => return None,
            };
            Some(Fast::Branch(cond, target))
        }
        Encoding::Sop2 | Encoding::Sop1 => salu(inst),
        Encoding::Sopc => {
            let (cond, ty) = name.strip_prefix("s_cmp_")?.split_once('_')?;
            Some(Fast::SCmp {
                cond: cmp_cond(cond)?,
                ty: cmp_ty(ty)?,
                a: src32(&inst.src[0])?,
                b: src32(&inst.src[1])?,
            })
        }
        Encoding::Vop3p => packed(inst),
        Encoding::Flat => global(inst),
        Encoding::Ds => ds(inst),
        Encoding::Smem => sload(inst),
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 => {
            let m = &inst.mods;
            if m.abs != [false; 3]
                || m.neg != [false; 3]
                || m.clamp
                || m.omod != 0
                || m.op_sel != 0
                || m.sdwa.is_some()
                || m.dpp.is_some()
                || inst.info.is_mai()
            {
                return None;
            }
            valu(inst)
        }
        _ => None,
    }
}

fn cmp_cond(c: &str) -> Option<Cmp> {
    Some(match c {
        "lt" => Cmp::Lt,
        "eq" => Cmp::Eq,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "lg" | "ne" => Cmp::Ne,
        "ge" => Cmp::Ge,
        _ => return None,
    })
}

fn cmp_ty(t: &str) -> Option<CmpTy> {
    Some(match t {
        "i32" => CmpTy::I32,
        "u32" => CmpTy::U32,
        _ => return None,
    })
}

fn salu(inst: &Instruction) -> Option<Fast> {
    let name = inst.name();
    let (op, wide) = match name {
        "s_mov_b32" => (SOp::Mov, false),
        "s_mov_b64" => (SOp::Mov, true),
        "s_add_u32" => (SOp::AddU32, false),
        "s_sub_u32" => (SOp::SubU32, false),
        "s_add_i32" => (SOp::AddI32, false),
        "s_sub_i32" => (SOp::SubI32, false),
        "s_addc_u32" => (SOp::AddcU32, false),
        "s_mul_i32" => (SOp::MulI32, false),
        "s_and_b32" => (SOp::And, false),
        "s_or_b32" => (SOp::Or, false),
        "s_xor_b32" => (SOp::Xor, false),
        "s_andn2_b32" => (SOp::Andn2, false),
        "s_and_b64" => (SOp::And, true),
        "s_or_b64" => (SOp::Or, true),
        "s_xor_b64" => (SOp::Xor, true),
        "s_andn2_b64" => (SOp::Andn2, true),
        "s_lshl_b32" => (SOp::LshlB32, false),
        "s_lshr_b32" => (SOp::LshrB32, false),
        "s_lshl_b64" => (SOp::LshlB64, true),
        "s_cselect_b32" => (SOp::Cselect, false),
        "s_cselect_b64" => (SOp::Cselect, true),
        _ => return None,
    };
    let wd = inst.info.widths;
    // 64-bit operands: scalar pairs only (constants of 64-bit operands stay general).
    let src = |i: usize| -> Option<Src> {
        if wd[i + 1] == 2 {
            pair(&inst.src[i]).map(Src::S)
        } else {
            src32(&inst.src[i])
        }
    };
    let dst = if wide {
        pair(&inst.dst)?
    } else {
        sdst32(&inst.dst)?
    };
    let a = src(0)?;
    let b = if inst.encoding == Encoding::Sop2 {
        src(1)?
    } else {
        Src::K(0)
    };
    if matches!(a, Src::V(_)) || matches!(b, Src::V(_)) {
        return None;
    }
    Some(Fast::S {
        op,
        wide,
        dst,
        a,
        b,
    })
}

fn ds(inst: &Instruction) -> Option<Fast> {
    if inst.mods.gds {
        return None;
    }
    let (store, dwords) = match inst.name() {
        "ds_read_b32" => (false, 1),
        "ds_read_b64" => (false, 2),
        "ds_write_b32" => (true, 1),
        "ds_write_b64" => (true, 2),
        _ => return None,
    };
    let addr = vdst(&inst.src[0])?;
    let reg = match if store { inst.src[1] } else { inst.dst } {
        Operand::Vgpr { index, count }
            if count == dwords && (index as usize) + (dwords as usize) <= 256 =>
        {
            index
        }
        _ => return None,
    };
    Some(Fast::Ds {
        store,
        dwords,
        reg,
        addr,
        offset: u16::try_from(inst.imm).ok()?,
    })
}

fn sload(inst: &Instruction) -> Option<Fast> {
    let dwords = match inst.name() {
        "s_load_dword" => 1,
        "s_load_dwordx2" => 2,
        "s_load_dwordx4" => 4,
        "s_load_dwordx8" => 8,
        "s_load_dwordx16" => 16,
        _ => return None,
    };
    let dst = match inst.dst {
        // Destinations below the special registers (VCC, TTMPs, M0, EXEC stay general).
        Operand::Sreg { index, count }
            if count == dwords && index as usize + count as usize <= 102 =>
        {
            index
        }
        _ => return None,
    };
    let base = pair(&inst.src[0])?;
    if inst.src[1] != Operand::None || inst.info.widths[0] != dwords {
        return None;
    }
    Some(Fast::SLoad {
        dwords,
        dst,
        base,
        offset: inst.imm,
    })
}

fn global(inst: &Instruction) -> Option<Fast> {
    let name = inst.name();
    let (flat, name) = match name.strip_prefix("flat_") {
        Some(rest) => (true, rest),
        None => (false, name.strip_prefix("global_")?),
    };
    let (store, ty) = match name.strip_prefix("load_") {
        Some(t) => (false, t),
        None => (true, name.strip_prefix("store_")?),
    };
    let dwords = match ty {
        "dword" => 1,
        "dwordx2" => 2,
        "dwordx3" => 3,
        "dwordx4" => 4,
        _ => return None,
    };
    let reg = match if store { inst.src[1] } else { inst.dst } {
        Operand::Vgpr { index, count }
            if count == dwords && (index as usize) + (dwords as usize) <= 256 =>
        {
            index
        }
        _ => return None,
    };
    let (vaddr, saddr) = match (inst.src[0], inst.src[2]) {
        (Operand::Vgpr { index, count: 1 }, Operand::Sreg { index: s, count: 2 }) if s < 127 => {
            (index, Some(s))
        }
        (Operand::Vgpr { index, count: 2 }, Operand::None) if index < u8::MAX => (index, None),
        _ => return None,
    };
    if flat && saddr.is_some() {
        return None;
    }
    Some(Fast::Global {
        flat,
        store,
        dwords,
        reg,
        vaddr,
        saddr,
        offset: inst.imm,
    })
}

fn packed(inst: &Instruction) -> Option<Fast> {
    let op = match inst.name() {
        "v_pk_fma_f32" => PkOp::Fma,
        "v_pk_mul_f32" => PkOp::Mul,
        "v_pk_add_f32" => PkOp::Add,
        _ => return None,
    };
    let m = &inst.mods;
    if m.clamp || inst.info.is_mai() {
        return None;
    }
    let pair = |o: &Operand| match *o {
        Operand::Vgpr { index, count: 2 } if index < u8::MAX => Some(index),
        _ => None,
    };
    let n = if op == PkOp::Fma { 3 } else { 2 };
    let mut src = [0u8; 3];
    for (i, s) in src.iter_mut().enumerate().take(n) {
        *s = pair(&inst.src[i])?;
    }
    let neg_lo = m
        .neg
        .iter()
        .enumerate()
        .fold(0u8, |b, (i, &n)| b | (n as u8) << i);
    Some(Fast::Pk {
        op,
        dst: pair(&inst.dst)?,
        src,
        sel: [m.op_sel, m.op_sel_hi],
        neg: [neg_lo, m.neg_hi],
    })
}

fn valu(inst: &Instruction) -> Option<Fast> {
    let name = inst.name();
    if let Some(rest) = name.strip_prefix("v_cmp") {
        let (x, rest) = match rest.strip_prefix("x_") {
            Some(r) => (true, r),
            None => (false, rest.strip_prefix('_')?),
        };
        let (cond, ty) = rest.rsplit_once('_')?;
        if ty == "f32" {
            return Some(Fast::FCmp {
                cond: FCond::of(cond)?,
                a: src32(&inst.src[0])?,
                b: src32(&inst.src[1])?,
                sdst: pair(&inst.sdst)?,
                x,
            });
        }
        return Some(Fast::Cmp {
            cond: cmp_cond(cond)?,
            ty: cmp_ty(ty)?,
            a: src32(&inst.src[0])?,
            b: src32(&inst.src[1])?,
            sdst: pair(&inst.sdst)?,
            x,
        });
    }
    let c_op = match name {
        "v_add_co_u32" => Some(COp::AddCo),
        "v_sub_co_u32" => Some(COp::SubCo),
        "v_subrev_co_u32" => Some(COp::SubrevCo),
        "v_addc_co_u32" => Some(COp::Addc),
        "v_subb_co_u32" => Some(COp::Subb),
        _ => None,
    };
    if let Some(op) = c_op {
        let cin = if matches!(op, COp::Addc | COp::Subb) {
            pair(&inst.src[2])?
        } else {
            0
        };
        return Some(Fast::C {
            op,
            dst: vdst(&inst.dst)?,
            a: src32(&inst.src[0])?,
            b: src32(&inst.src[1])?,
            cin,
            cout: pair(&inst.sdst)?,
        });
    }
    if name == "v_cndmask_b32" {
        return Some(Fast::Cndmask {
            dst: vdst(&inst.dst)?,
            a: src32(&inst.src[0])?,
            b: src32(&inst.src[1])?,
            mask: pair(&inst.src[2])?,
        });
    }
    if name == "v_lshlrev_b64" {
        let Operand::Vgpr { index, count: 2 } = inst.src[1] else {
            return None;
        };
        let Operand::Vgpr {
            index: dst,
            count: 2,
        } = inst.dst
        else {
            return None;
        };
        if dst == u8::MAX || index == u8::MAX {
            return None;
        }
        return Some(Fast::LshlrevB64 {
            dst,
            shift: src32(&inst.src[0])?,
            b: index,
        });
    }
    use VOp::*;
    let op = match name {
        "v_mov_b32" => Mov,
        "v_add_u32" => AddU32,
        "v_sub_u32" => SubU32,
        "v_subrev_u32" => SubrevU32,
        "v_mul_lo_u32" => MulLoU32,
        "v_mul_hi_u32" => MulHiU32,
        "v_mul_u32_u24" => MulU32U24,
        "v_and_b32" => And,
        "v_or_b32" => Or,
        "v_xor_b32" => Xor,
        "v_not_b32" => Not,
        "v_lshlrev_b32" => LshlrevB32,
        "v_lshrrev_b32" => LshrrevB32,
        "v_ashrrev_i32" => AshrrevI32,
        "v_min_i32" => MinI32,
        "v_max_i32" => MaxI32,
        "v_min_u32" => MinU32,
        "v_max_u32" => MaxU32,
        "v_add_f32" => AddF32,
        "v_sub_f32" => SubF32,
        "v_subrev_f32" => SubrevF32,
        "v_mul_f32" => MulF32,
        "v_min_f32" => MinF32,
        "v_max_f32" => MaxF32,
        "v_cvt_f32_i32" => CvtF32I32,
        "v_cvt_f32_u32" => CvtF32U32,
        "v_rsq_f32" => RsqF32,
        "v_mac_f32" => MacF32,
        "v_mad_f32" => MadF32,
        "v_fma_f32" | "v_fmac_f32" => FmaF32,
        "v_mad_u32_u24" => MadU32U24,
        "v_add3_u32" => Add3U32,
        "v_lshl_add_u32" => LshlAddU32,
        "v_add_lshl_u32" => AddLshlU32,
        "v_lshl_or_b32" => LshlOrB32,
        "v_and_or_b32" => AndOrB32,
        "v_or3_b32" => Or3B32,
        "v_xad_u32" => XadU32,
        "v_bfe_u32" => BfeU32,
        "v_bfi_b32" => BfiB32,
        "v_alignbit_b32" => AlignbitB32,
        _ => return None,
    };
    let dst = vdst(&inst.dst)?;
    let wd = inst.info.widths;
    if wd[0] != 1 || wd[1..].iter().any(|&w| w > 1) {
        return None;
    }
    let mut src = [Src::K(0); 3];
    for (i, s) in src.iter_mut().enumerate() {
        if wd[i + 1] == 1 {
            *s = src32(&inst.src[i])?;
        }
    }
    // The accumulating forms read their destination as the third source.
    if matches!(name, "v_mac_f32" | "v_fmac_f32") {
        src[2] = Src::V(dst);
    }
    Some(Fast::V { op, dst, src })
}

/// What [`run`] did.
pub(super) enum Done {
    /// Go on at the next instruction.
    Next,
    /// Go on at this address.
    Jump(u64),
    /// The wave ended.
    End,
    /// The wave waits at `s_barrier` (then goes on at the next instruction).
    Barrier,
    /// Not run: the general path must (e.g. a float operation under a rounding mode the
    /// general path reports).
    Slow,
}

type Row = [u32; WAVE_SIZE];

#[inline(always)]
fn row(w: &Wave, s: Src) -> Row {
    match s {
        Src::V(r) => {
            let r = r as usize * WAVE_SIZE;
            let mut out = [0; WAVE_SIZE];
            out.copy_from_slice(&w.vgpr[r..r + WAVE_SIZE]);
            out
        }
        Src::S(i) => [w.sreg[i as usize]; WAVE_SIZE],
        Src::K(k) => [k; WAVE_SIZE],
    }
}

/// A source row without a copy of VGPR sources: borrowed from the VGPR file, or a scalar or
/// constant repeated 64 times.
// The splat lives on the stack on purpose: boxing it would cost more than the copy it saves.
#[allow(clippy::large_enum_variant)]
enum RowRef<'a> {
    Borrowed(&'a Row),
    Splat(Row),
}

impl core::ops::Deref for RowRef<'_> {
    type Target = Row;

    #[inline(always)]
    fn deref(&self) -> &Row {
        match self {
            RowRef::Borrowed(r) => r,
            RowRef::Splat(r) => r,
        }
    }
}

#[inline(always)]
fn rref(w: &Wave, s: Src) -> RowRef<'_> {
    match s {
        Src::V(r) => {
            let r = r as usize * WAVE_SIZE;
            RowRef::Borrowed(
                w.vgpr[r..r + WAVE_SIZE]
                    .try_into()
                    .expect("a VGPR row is 64 lanes"),
            )
        }
        Src::S(i) => RowRef::Splat([w.sreg[i as usize]; WAVE_SIZE]),
        Src::K(k) => RowRef::Splat([k; WAVE_SIZE]),
    }
}

#[inline(always)]
fn scalar(w: &Wave, s: Src, wide: bool) -> u64 {
    match s {
        Src::S(i) if wide => w.sreg64(i as usize),
        Src::S(i) => u64::from(w.sreg[i as usize]),
        Src::K(k) => u64::from(k),
        Src::V(_) => 0,
    }
}

/// Writes `r` into VGPR `dst` for the lanes of `exec`.
#[inline(always)]
fn put(w: &mut Wave, dst: u8, r: &Row, exec: u64) {
    let d = dst as usize * WAVE_SIZE;
    let d = &mut w.vgpr[d..d + WAVE_SIZE];
    if exec == u64::MAX {
        d.copy_from_slice(r);
    } else {
        // The live lanes only (a one-work-item dispatch has one).
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            d[l] = r[l];
            m &= m - 1;
        }
    }
}

#[inline(always)]
fn map1(a: &Row, f: impl Fn(u32) -> u32) -> Row {
    core::array::from_fn(|l| f(a[l]))
}

#[inline(always)]
fn map2(a: &Row, b: &Row, f: impl Fn(u32, u32) -> u32) -> Row {
    core::array::from_fn(|l| f(a[l], b[l]))
}

#[inline(always)]
fn map3(a: &Row, b: &Row, c: &Row, f: impl Fn(u32, u32, u32) -> u32) -> Row {
    core::array::from_fn(|l| f(a[l], b[l], c[l]))
}

/// Lane bits where `f` holds.
#[inline(always)]
fn mask2(a: &Row, b: &Row, f: impl Fn(u32, u32) -> bool) -> u64 {
    let mut m = 0u64;
    for l in 0..WAVE_SIZE {
        m |= u64::from(f(a[l], b[l])) << l;
    }
    m
}

/// Lane bits where `f` holds, of three rows.
#[inline(always)]
fn mask3(a: &Row, b: &Row, c: &Row, f: impl Fn(u32, u32, u32) -> bool) -> u64 {
    let mut m = 0u64;
    for l in 0..WAVE_SIZE {
        m |= u64::from(f(a[l], b[l], c[l])) << l;
    }
    m
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

fn cmp<T: Ord>(c: Cmp, a: T, b: T) -> bool {
    match c {
        Cmp::Lt => a < b,
        Cmp::Eq => a == b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ne => a != b,
        Cmp::Ge => a >= b,
    }
}

/// Runs `fast` on `w` over `memory`.
///
/// # Errors
/// A global access's memory fault, as the general path reports it (`lane N: ...`, the lanes
/// before it done).
#[inline]
pub(super) fn run(
    w: &mut Wave,
    fast: &Fast,
    memory: &dyn DeviceMemory,
    lds: &mut [u8],
) -> Result<Done> {
    let exec = w.exec();
    match *fast {
        Fast::Ds {
            store,
            dwords,
            reg,
            addr,
            offset,
        } => {
            let n = dwords as usize * 4;
            let a = addr as usize * WAVE_SIZE;
            let reg = reg as usize * WAVE_SIZE;
            for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
                // The general path's address: the VGPR as u32 plus the offset, in u64.
                let at = w.vgpr[a + lane] as usize + offset as usize;
                if store {
                    if let Some(d) = lds.get_mut(at..at + n) {
                        for k in 0..dwords as usize {
                            let v = w.vgpr[reg + k * WAVE_SIZE + lane];
                            d[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                } else {
                    let s = lds.get(at..at + n);
                    for k in 0..dwords as usize {
                        let v = s.map_or(0, |s| {
                            u32::from_le_bytes([s[k * 4], s[k * 4 + 1], s[k * 4 + 2], s[k * 4 + 3]])
                        });
                        w.vgpr[reg + k * WAVE_SIZE + lane] = v;
                    }
                }
            }
        }
        Fast::SLoad {
            dwords,
            dst,
            base,
            offset,
        } => {
            let addr = w
                .sreg64(base as usize)
                .wrapping_add(i64::from(offset) as u64)
                & !3;
            let n = dwords as usize;
            let mut buf = [0u8; 64];
            memory.read(addr, &mut buf[..n * 4])?;
            for k in 0..n {
                let b = &buf[k * 4..k * 4 + 4];
                w.sreg[dst as usize + k] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Fast::Barrier => return Ok(Done::Barrier),
        Fast::Global {
            flat,
            store,
            dwords,
            reg,
            vaddr,
            saddr,
            offset,
        } => {
            let lo = row(w, Src::V(vaddr));
            let base: [u64; WAVE_SIZE] = match saddr {
                Some(s) => {
                    let s = w.sreg64(s as usize);
                    core::array::from_fn(|l| s.wrapping_add(u64::from(lo[l])))
                }
                None => {
                    let hi = row(w, Src::V(vaddr + 1));
                    core::array::from_fn(|l| u64::from(hi[l]) << 32 | u64::from(lo[l]))
                }
            };
            let addr: [u64; WAVE_SIZE] =
                core::array::from_fn(|l| base[l].wrapping_add(i64::from(offset) as u64));
            // The interpreter's scratch backing is the general path's.
            let scratch = |a: u64| {
                a.checked_sub(SCRATCH_BACKING_BASE)
                    .is_some_and(|o| o < SCRATCH_WINDOW)
            };
            // FLAT addresses in the shared or private aperture: LDS or scratch (general path).
            let aperture = |a: u64| {
                flat && [SHARED_APERTURE_BASE, PRIVATE_APERTURE_BASE]
                    .iter()
                    .any(|&b| a.checked_sub(b).is_some_and(|o| o >> 32 == 0))
            };
            if (0..WAVE_SIZE).any(|l| exec >> l & 1 != 0 && (scratch(addr[l]) || aperture(addr[l])))
            {
                return Ok(Done::Slow);
            }
            let n = dwords as usize;
            let lane_err =
                |lane: usize, e: hsa_core::Error| error!(e.status(), "lane {lane}: {}", e.detail());
            let reg = reg as usize * WAVE_SIZE;
            let mut b = [[0u8; 16]; WAVE_SIZE];
            if store {
                for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
                    for k in 0..n {
                        let v = w.vgpr[reg + k * WAVE_SIZE + lane];
                        b[lane][k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
                    }
                }
                memory
                    .write_lanes(&addr, exec, n * 4, &b)
                    .map_err(|(lane, e)| lane_err(lane, e))?;
            } else {
                let r = memory.read_lanes(&addr, exec, n * 4, &mut b);
                // The lanes before a faulting one are loaded (as the general path).
                let done = match r {
                    Ok(()) => exec,
                    Err((lane, _)) => exec & ((1u64 << lane) - 1),
                };
                for k in 0..n {
                    let row = &mut w.vgpr[reg + k * WAVE_SIZE..reg + (k + 1) * WAVE_SIZE];
                    for (lane, (v, b)) in row.iter_mut().zip(&b).enumerate() {
                        if done >> lane & 1 != 0 {
                            *v = u32::from_le_bytes([
                                b[k * 4],
                                b[k * 4 + 1],
                                b[k * 4 + 2],
                                b[k * 4 + 3],
                            ]);
                        }
                    }
                }
                r.map_err(|(lane, e)| lane_err(lane, e))?;
            }
        }
        Fast::Slow => return Ok(Done::Slow),
        Fast::Nop => {}
        Fast::End => return Ok(Done::End),
        Fast::Branch(cond, target) => {
            let taken = match cond {
                Cond::Always => true,
                Cond::Scc0 => !w.scc,
                Cond::Scc1 => w.scc,
                Cond::Vccz => w.vcc() == 0,
                Cond::Vccnz => w.vcc() != 0,
                Cond::Execz => exec == 0,
                Cond::Execnz => exec != 0,
            };
            if taken {
                return Ok(Done::Jump(target));
            }
        }
        Fast::V { op, dst, src } => {
            if op.is_float() && !plain_f32_mode(w.mode, op) {
                return Ok(Done::Slow);
            }
            let ieee = mode::ieee(w.mode);
            let a = rref(w, src[0]);
            use VOp::*;
            let r = match op {
                Mov => *a,
                Not => map1(&a, |x| !x),
                CvtF32I32 => map1(&a, |x| (x as i32 as f32).to_bits()),
                CvtF32U32 => map1(&a, |x| (x as f32).to_bits()),
                RsqF32 => map1(&a, |x| {
                    canon32(x, (1.0 / f64::from(f(x)).sqrt()) as f32) as u32
                }),
                _ => {
                    let b = rref(w, src[1]);
                    match op {
                        AddU32 => map2(&a, &b, u32::wrapping_add),
                        SubU32 => map2(&a, &b, u32::wrapping_sub),
                        SubrevU32 => map2(&a, &b, |x, y| y.wrapping_sub(x)),
                        MulLoU32 => map2(&a, &b, u32::wrapping_mul),
                        MulHiU32 => map2(&a, &b, |x, y| ((x as u64 * y as u64) >> 32) as u32),
                        MulU32U24 => {
                            map2(&a, &b, |x, y| (x & 0xFF_FFFF).wrapping_mul(y & 0xFF_FFFF))
                        }
                        And => map2(&a, &b, |x, y| x & y),
                        Or => map2(&a, &b, |x, y| x | y),
                        Xor => map2(&a, &b, |x, y| x ^ y),
                        LshlrevB32 => map2(&a, &b, |x, y| y << (x & 31)),
                        LshrrevB32 => map2(&a, &b, |x, y| y >> (x & 31)),
                        AshrrevI32 => map2(&a, &b, |x, y| ((y as i32) >> (x & 31)) as u32),
                        MinI32 => map2(&a, &b, |x, y| (x as i32).min(y as i32) as u32),
                        MaxI32 => map2(&a, &b, |x, y| (x as i32).max(y as i32) as u32),
                        MinU32 => map2(&a, &b, u32::min),
                        MaxU32 => map2(&a, &b, u32::max),
                        AddF32 => map2(&a, &b, |x, y| (f(x) + f(y)).to_bits()),
                        SubF32 => map2(&a, &b, |x, y| (f(x) - f(y)).to_bits()),
                        SubrevF32 => map2(&a, &b, |x, y| (f(y) - f(x)).to_bits()),
                        MulF32 => map2(&a, &b, |x, y| (f(x) * f(y)).to_bits()),
                        MinF32 => map2(&a, &b, |x, y| {
                            mode::min_max(mode::S, x.into(), y.into(), false, ieee) as u32
                        }),
                        MaxF32 => map2(&a, &b, |x, y| {
                            mode::min_max(mode::S, x.into(), y.into(), true, ieee) as u32
                        }),
                        _ => {
                            let c = rref(w, src[2]);
                            match op {
                                // V_MAD_F32/V_MAC_F32 flush f32 denormals whatever
                                // MODE says (the `mode` module): sources, product, result.
                                MacF32 | MadF32 => map3(&a, &b, &c, |x, y, z| {
                                    let fl = |v: u32| mode::flush(Kind::F32, v.into()) as u32;
                                    fl(mode::mad32(f(fl(x)), f(fl(y)), f(fl(z)), 0).to_bits())
                                }),
                                FmaF32 => super::fma::fma_rows(&a, &b, &c),
                                MadU32U24 => map3(&a, &b, &c, |x, y, z| {
                                    (x & 0xFF_FFFF).wrapping_mul(y & 0xFF_FFFF).wrapping_add(z)
                                }),
                                Add3U32 => {
                                    map3(&a, &b, &c, |x, y, z| x.wrapping_add(y).wrapping_add(z))
                                }
                                LshlAddU32 => {
                                    map3(&a, &b, &c, |x, y, z| (x << (y & 31)).wrapping_add(z))
                                }
                                AddLshlU32 => {
                                    map3(&a, &b, &c, |x, y, z| x.wrapping_add(y) << (z & 31))
                                }
                                LshlOrB32 => map3(&a, &b, &c, |x, y, z| (x << (y & 31)) | z),
                                AndOrB32 => map3(&a, &b, &c, |x, y, z| (x & y) | z),
                                Or3B32 => map3(&a, &b, &c, |x, y, z| x | y | z),
                                XadU32 => map3(&a, &b, &c, |x, y, z| (x ^ y).wrapping_add(z)),
                                BfeU32 => map3(&a, &b, &c, |x, y, z| {
                                    let (off, width) = (y & 31, z & 31);
                                    if width == 0 {
                                        0
                                    } else {
                                        (x >> off) & ((1u32 << width) - 1)
                                    }
                                }),
                                BfiB32 => map3(&a, &b, &c, |x, y, z| (x & y) | (!x & z)),
                                AlignbitB32 => map3(&a, &b, &c, |x, y, z| {
                                    ((((x as u64) << 32) | y as u64) >> (z & 31)) as u32
                                }),
                                _ => unreachable!("three-source ops are listed above"),
                            }
                        }
                    }
                }
            };
            put(w, dst, &r, exec);
        }
        Fast::Pk {
            op,
            dst,
            src,
            sel,
            neg,
        } => {
            if mode::fp_round(w.mode) != 0 || mode::f32_denorm(w.mode) != mode::DENORM_KEEP {
                return Ok(Done::Slow);
            }
            let n = if op == PkOp::Fma { 3 } else { 2 };
            let mut halves = [[0u32; WAVE_SIZE]; 2];
            for (h, out) in halves.iter_mut().enumerate() {
                let x: [Row; 3] = core::array::from_fn(|i| {
                    if i >= n {
                        return [0; WAVE_SIZE];
                    }
                    let reg = src[i] + (sel[h] >> i & 1);
                    let r = row(w, Src::V(reg));
                    if neg[h] >> i & 1 != 0 {
                        map1(&r, |v| v ^ 0x8000_0000)
                    } else {
                        r
                    }
                });
                *out = match op {
                    PkOp::Fma => super::fma::fma_rows(&x[0], &x[1], &x[2]),
                    PkOp::Mul => map2(&x[0], &x[1], |a, b| (f(a) * f(b)).to_bits()),
                    PkOp::Add => map2(&x[0], &x[1], |a, b| (f(a) + f(b)).to_bits()),
                };
            }
            put(w, dst, &halves[0], exec);
            put(w, dst + 1, &halves[1], exec);
        }
        Fast::LshlrevB64 { dst, shift, b } => {
            let s = rref(w, shift);
            let lo = rref(w, Src::V(b));
            let hi = rref(w, Src::V(b.wrapping_add(1)));
            let v: [u64; WAVE_SIZE] = core::array::from_fn(|l| {
                (u64::from(hi[l]) << 32 | u64::from(lo[l])) << (s[l] & 63)
            });
            let rl = core::array::from_fn(|l| v[l] as u32);
            let rh = core::array::from_fn(|l| (v[l] >> 32) as u32);
            put(w, dst, &rl, exec);
            put(w, dst.wrapping_add(1), &rh, exec);
        }
        Fast::C {
            op,
            dst,
            a,
            b,
            cin,
            cout,
        } => {
            let (a, b) = (rref(w, a), rref(w, b));
            let ci = if matches!(op, COp::Addc | COp::Subb) {
                w.sreg64(cin as usize)
            } else {
                0
            };
            let ci: Row = core::array::from_fn(|l| (ci >> l & 1) as u32);
            let r = match op {
                COp::AddCo => map2(&a, &b, u32::wrapping_add),
                COp::SubCo => map2(&a, &b, u32::wrapping_sub),
                COp::SubrevCo => map2(&a, &b, |x, y| y.wrapping_sub(x)),
                COp::Addc => map3(&a, &b, &ci, |x, y, c| x.wrapping_add(y).wrapping_add(c)),
                COp::Subb => map3(&a, &b, &ci, |x, y, c| x.wrapping_sub(y).wrapping_sub(c)),
            };
            // The operation chosen once, not per lane.
            let w64 = u64::from;
            let co = match op {
                COp::AddCo => mask2(&a, &b, |x, y| w64(x) + w64(y) > 0xFFFF_FFFF),
                COp::SubCo => mask2(&a, &b, |x, y| y > x),
                COp::SubrevCo => mask2(&a, &b, |x, y| x > y),
                COp::Addc => mask3(&a, &b, &ci, |x, y, c| {
                    w64(x) + w64(y) + w64(c) > 0xFFFF_FFFF
                }),
                COp::Subb => mask3(&a, &b, &ci, |x, y, c| w64(y) + w64(c) > w64(x)),
            };
            put(w, dst, &r, exec);
            w.set_sreg64(cout as usize, co & exec);
        }
        Fast::Cndmask { dst, a, b, mask } => {
            let m = w.sreg64(mask as usize);
            let (a, b) = (rref(w, a), rref(w, b));
            let r = core::array::from_fn(|l| if m >> l & 1 != 0 { b[l] } else { a[l] });
            put(w, dst, &r, exec);
        }
        Fast::Cmp {
            cond,
            ty,
            a,
            b,
            sdst,
            x,
        } => {
            let (a, b) = (rref(w, a), rref(w, b));
            let m = match ty {
                CmpTy::I32 => mask2(&a, &b, |x, y| cmp(cond, x as i32, y as i32)),
                CmpTy::U32 => mask2(&a, &b, |x, y| cmp(cond, x, y)),
            } & exec;
            w.set_sreg64(sdst as usize, m);
            if x {
                w.set_exec(m);
            }
        }
        Fast::FCmp {
            cond,
            a,
            b,
            sdst,
            x,
        } => {
            // A MODE that flushes f32 denormal inputs compares them as zeros: general path.
            if mode::f32_denorm(w.mode) != mode::DENORM_KEEP {
                return Ok(Done::Slow);
            }
            let (a, b) = (rref(w, a), rref(w, b));
            let m = mask2(&a, &b, |x, y| cond.holds(f(x), f(y))) & exec;
            w.set_sreg64(sdst as usize, m);
            if x {
                w.set_exec(m);
            }
        }
        Fast::S {
            op,
            wide,
            dst,
            a,
            b,
        } => {
            let (a, b) = (scalar(w, a, wide), scalar(w, b, wide));
            let (a32, b32) = (a as u32, b as u32);
            let mut scc = w.scc;
            let r = match op {
                SOp::Mov => a,
                SOp::AddU32 => {
                    let (r, c) = a32.overflowing_add(b32);
                    scc = c;
                    u64::from(r)
                }
                SOp::SubU32 => {
                    let (r, c) = a32.overflowing_sub(b32);
                    scc = c;
                    u64::from(r)
                }
                SOp::AddI32 => {
                    let (r, o) = (a32 as i32).overflowing_add(b32 as i32);
                    scc = o;
                    u64::from(r as u32)
                }
                SOp::SubI32 => {
                    let (r, o) = (a32 as i32).overflowing_sub(b32 as i32);
                    scc = o;
                    u64::from(r as u32)
                }
                SOp::AddcU32 => {
                    let t = u64::from(a32) + u64::from(b32) + u64::from(w.scc);
                    scc = t >> 32 != 0;
                    u64::from(t as u32)
                }
                SOp::MulI32 => u64::from(a32.wrapping_mul(b32)),
                SOp::Cselect => {
                    if w.scc {
                        a
                    } else {
                        b
                    }
                }
                SOp::And
                | SOp::Or
                | SOp::Xor
                | SOp::Andn2
                | SOp::LshlB32
                | SOp::LshrB32
                | SOp::LshlB64 => {
                    let r = match op {
                        SOp::And => a & b,
                        SOp::Or => a | b,
                        SOp::Xor => a ^ b,
                        SOp::Andn2 => a & !b,
                        SOp::LshlB32 => u64::from(a32 << (b32 & 31)),
                        SOp::LshrB32 => u64::from(a32 >> (b32 & 31)),
                        _ => a << (b32 & 63),
                    };
                    let r = if wide { r } else { u64::from(r as u32) };
                    scc = r != 0;
                    r
                }
            };
            if wide {
                w.set_sreg64(dst as usize, r);
            } else {
                w.sreg[dst as usize] = r as u32;
            }
            w.scc = scc;
        }
        Fast::SCmp { cond, ty, a, b } => {
            let (a, b) = (scalar(w, a, false) as u32, scalar(w, b, false) as u32);
            w.scc = match ty {
                CmpTy::I32 => cmp(cond, a as i32, b as i32),
                CmpTy::U32 => cmp(cond, a, b),
            };
        }
    }
    Ok(Done::Next)
}

#[cfg(test)]
mod tests {
    use super::super::exec::tests::general_step;
    use super::*;
    use crate::{decode, Gfx9Target};
    use std::cell::RefCell;
    use std::process::{Command, Stdio};

    /// Every instruction form the fast path takes, in `llvm-mc` syntax (gfx90a).
    const FORMS: &[&str] = &[
        "v_mov_b32 v1, v2",
        "v_mov_b32 v1, s5",
        "v_mov_b32 v1, -7",
        "v_add_u32 v1, v2, v3",
        "v_add_u32 v1, s5, v3",
        "v_add_u32 v1, 0x12345, v2",
        "v_add_u32 v1, 1.0, v2",
        "v_add_u32_e64 v1, s5, 17",
        "v_sub_u32 v1, v2, v3",
        "v_subrev_u32 v1, v2, v3",
        "v_mul_lo_u32 v1, v2, v3",
        "v_mul_hi_u32 v1, v2, s5",
        "v_mul_u32_u24 v1, v2, v3",
        "v_and_b32 v1, v2, v3",
        "v_or_b32 v1, v2, v3",
        "v_xor_b32 v1, v2, v3",
        "v_not_b32 v1, v2",
        "v_lshlrev_b32 v1, v2, v3",
        "v_lshrrev_b32 v1, v2, v3",
        "v_ashrrev_i32 v1, v2, v3",
        "v_min_i32 v1, v2, v3",
        "v_max_i32 v1, v2, v3",
        "v_min_u32 v1, v2, v3",
        "v_max_u32 v1, v2, v3",
        "v_add_f32 v1, v2, v3",
        "v_add_f32 v1, 0.5, v2",
        "v_sub_f32 v1, v2, v3",
        "v_subrev_f32 v1, v2, v3",
        "v_mul_f32 v1, v2, v3",
        "v_mul_f32_e64 v1, v2, s5",
        "v_min_f32 v1, v2, v3",
        "v_max_f32 v1, v2, v3",
        "v_cvt_f32_i32 v1, v2",
        "v_cvt_f32_u32 v1, v2",
        "v_rsq_f32 v1, v2",
        "v_mac_f32 v1, v2, v3",
        "v_mad_f32 v1, v2, v3, v4",
        "v_fma_f32 v1, v2, v3, v4",
        "v_fmac_f32 v1, v2, v3",
        "v_mad_u32_u24 v1, v2, v3, v4",
        "v_add3_u32 v1, v2, v3, v4",
        "v_lshl_add_u32 v1, v2, v3, v4",
        "v_add_lshl_u32 v1, v2, v3, v4",
        "v_lshl_or_b32 v1, v2, v3, v4",
        "v_and_or_b32 v1, v2, v3, v4",
        "v_or3_b32 v1, v2, v3, v4",
        "v_xad_u32 v1, v2, v3, v4",
        "v_bfe_u32 v1, v2, v3, v4",
        "v_bfe_u32 v1, v2, 8, 5",
        "v_bfi_b32 v1, v2, v3, v4",
        "v_alignbit_b32 v1, v2, v3, v4",
        "v_add_co_u32 v1, vcc, v2, v3",
        "v_add_co_u32_e64 v1, s[6:7], v2, v3",
        "v_sub_co_u32 v1, vcc, v2, v3",
        "v_subrev_co_u32 v1, vcc, v2, v3",
        "v_addc_co_u32 v1, vcc, v2, v3, vcc",
        "v_addc_co_u32_e64 v1, s[6:7], v2, v3, s[8:9]",
        "v_subb_co_u32 v1, vcc, v2, v3, vcc",
        "v_cndmask_b32 v1, v2, v3, vcc",
        "v_cndmask_b32_e64 v1, v2, v3, s[6:7]",
        "v_cmp_lt_i32 vcc, v2, v3",
        "v_cmp_eq_u32_e64 s[6:7], v2, v3",
        "v_cmp_ne_u32 vcc, s5, v3",
        "v_cmp_ge_i32 vcc, v2, v3",
        "v_cmp_le_u32 vcc, v2, v3",
        "v_cmp_gt_u32 vcc, v2, v3",
        "v_cmpx_gt_u32 vcc, v2, v3",
        "v_cmpx_eq_i32_e64 s[6:7], v2, v3",
        "v_cmp_lt_f32 vcc, v2, v3",
        "v_cmp_eq_f32 vcc, v2, v3",
        "v_cmp_le_f32 vcc, s5, v3",
        "v_cmp_gt_f32_e64 s[6:7], v2, v3",
        "v_cmp_lg_f32 vcc, v2, v3",
        "v_cmp_ge_f32 vcc, v2, v3",
        "v_cmp_o_f32 vcc, v2, v3",
        "v_cmp_u_f32 vcc, v2, v3",
        "v_cmp_nge_f32 vcc, v2, v3",
        "v_cmp_nlg_f32 vcc, v2, v3",
        "v_cmp_ngt_f32 vcc, v2, v3",
        "v_cmp_nle_f32 vcc, v2, v3",
        "v_cmp_neq_f32 vcc, v2, v3",
        "v_cmp_nlt_f32 vcc, 1.0, v3",
        "v_cmpx_gt_f32 vcc, v2, v3",
        "v_lshlrev_b64 v[4:5], v2, v[6:7]",
        "v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]",
        "v_pk_fma_f32 v[6:7], v[2:3], v[4:5], v[6:7] op_sel_hi:[1,0,1]",
        "v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[0:1] op_sel:[1,0,1] neg_lo:[1,0,0] neg_hi:[0,1,1]",
        "v_pk_mul_f32 v[0:1], v[2:3], v[4:5] op_sel:[0,1]",
        "v_pk_add_f32 v[4:5], v[2:3], v[4:5] neg_hi:[1,0]",
        "v_lshlrev_b64 v[6:7], 3, v[6:7]",
        "s_mov_b32 s4, s5",
        "s_mov_b32 s4, 0x1234567",
        "s_mov_b64 s[4:5], s[8:9]",
        "s_add_u32 s4, s5, s8",
        "s_add_u32 s4, s5, 0x7fffffff",
        "s_sub_u32 s4, s5, s8",
        "s_add_i32 s4, s5, s8",
        "s_sub_i32 s4, s5, s8",
        "s_addc_u32 s4, s5, s8",
        "s_mul_i32 s4, s5, s8",
        "s_and_b32 s4, s5, s8",
        "s_or_b32 s4, s5, s8",
        "s_xor_b32 s4, s5, s8",
        "s_andn2_b32 s4, s5, s8",
        "s_and_b64 s[4:5], s[8:9], exec",
        "s_or_b64 s[4:5], s[8:9], s[10:11]",
        "s_xor_b64 s[4:5], s[8:9], s[10:11]",
        "s_andn2_b64 exec, exec, s[8:9]",
        "s_lshl_b32 s4, s5, s8",
        "s_lshl_b32 s4, s5, 3",
        "s_lshr_b32 s4, s5, s8",
        "s_lshl_b64 s[4:5], s[8:9], s10",
        "s_cselect_b32 s4, s5, s8",
        "s_cselect_b64 s[4:5], s[8:9], s[10:11]",
        "s_cmp_eq_u32 s4, s5",
        "s_cmp_lg_u32 s4, s5",
        "s_cmp_lg_i32 s4, 0",
        "s_cmp_lt_i32 s4, s5",
        "s_cmp_gt_u32 s4, s5",
        "s_cmp_ge_i32 s4, s5",
        "s_cmp_le_u32 s4, s5",
        "s_nop 0",
        "s_waitcnt vmcnt(0)",
        "s_endpgm",
        "s_branch 5",
        "s_cbranch_scc0 -3",
        "s_cbranch_scc1 4",
        "s_cbranch_vccz 4",
        "s_cbranch_vccnz 4",
        "s_cbranch_execz 4",
        "s_cbranch_execnz 4",
        "s_barrier",
        "ds_read_b32 v1, v2",
        "ds_read_b32 v1, v2 offset:1020",
        "ds_read_b32 v2, v2 offset:4",
        "ds_read_b64 v[4:5], v2 offset:8",
        "ds_read_b64 v[2:3], v2",
        "ds_write_b32 v2, v3",
        "ds_write_b32 v2, v3 offset:2044",
        "ds_write_b64 v2, v[4:5] offset:16",
        "s_load_dword s8, s[4:5], 0x10",
        "s_load_dwordx2 s[8:9], s[4:5], 0x0",
        "s_load_dwordx4 s[8:11], s[4:5], 0x23",
        "s_load_dwordx8 s[8:15], s[4:5], 0x40",
        "s_load_dwordx16 s[16:31], s[4:5], 0xfc0",
        "s_load_dword s8, s[4:5], -0x4",
        "global_load_dword v1, v2, s[4:5] offset:4",
        "global_load_dwordx2 v[2:3], v[6:7], off",
        "global_load_dwordx4 v[0:3], v[6:7], off offset:-16",
        "global_store_dword v2, v3, s[4:5]",
        "global_store_dwordx3 v[6:7], v[2:4], off offset:8",
        "flat_load_dword v1, v[6:7]",
        "flat_load_dwordx2 v[6:7], v[6:7] offset:8",
        "flat_load_dwordx4 v[0:3], v[6:7]",
        "flat_store_dword v[6:7], v3",
        "flat_store_dwordx2 v[6:7], v[2:3] offset:4",
    ];

    /// Bytes of the test memory and of the test LDS.
    const MEMORY_BYTES: usize = 4096;
    const LDS_BYTES: usize = 2048;
    /// Where the test memory starts (scalar pair s[4:5] holds it).
    const MEMORY_BASE: u64 = 0x7000_0000;

    /// One allocation of [`MEMORY_BYTES`] at [`MEMORY_BASE`]; an access not wholly inside it
    /// faults naming its address.
    struct TestMemory(RefCell<Vec<u8>>);

    impl DeviceMemory for TestMemory {
        fn clock_counter(&self) -> u64 {
            0
        }

        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
            let m = self.0.borrow();
            let o = addr.wrapping_sub(MEMORY_BASE) as usize;
            match m.get(o..o.wrapping_add(buf.len())) {
                Some(s) if o < MEMORY_BYTES => buf.copy_from_slice(s),
                _ => hsa_core::bail!(hsa_core::Status::MemoryFault, "read at {addr:#x}"),
            }
            Ok(())
        }
        fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
            let mut m = self.0.borrow_mut();
            let o = addr.wrapping_sub(MEMORY_BASE) as usize;
            match m.get_mut(o..o.wrapping_add(data.len())) {
                Some(s) if o < MEMORY_BYTES => s.copy_from_slice(data),
                _ => hsa_core::bail!(hsa_core::Status::MemoryFault, "write at {addr:#x}"),
            }
            Ok(())
        }
    }

    /// Instruction bytes of `forms` from `llvm-mc-19 -show-encoding`, or `None` without it.
    fn assemble(forms: &[&str]) -> Option<Vec<Vec<u8>>> {
        let mut child = Command::new("llvm-mc-19")
            .args(["-arch=amdgcn", "-mcpu=gfx90a", "-show-encoding"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        use std::io::Write;
        child
            .stdin
            .take()?
            .write_all(forms.join("\n").as_bytes())
            .ok()?;
        let out = child.wait_with_output().ok()?;
        assert!(out.status.success(), "llvm-mc-19 failed");
        let text = String::from_utf8(out.stdout).unwrap();
        let codes: Vec<Vec<u8>> = text
            .lines()
            .filter_map(|l| l.split_once("encoding: [")?.1.split_once(']'))
            .map(|(bytes, _)| {
                bytes
                    .split(',')
                    .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(codes.len(), forms.len(), "llvm-mc-19 output: {text}");
        Some(codes)
    }

    /// Values that find the edges: zero, all ones, sign bits, float specials, denormals.
    const EDGES: [u32; 12] = [
        0,
        1,
        u32::MAX,
        0x8000_0000,
        0x7FFF_FFFF,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0001,
        0x0000_0001,
        0x3F80_0000,
        0xBF00_0000,
        0x00FF_FFFF,
    ];

    /// Each fast form against the general interpreter over random and edge-case registers and
    /// EXEC masks (all, none, random): the same registers, SCC and next pc.
    #[test]
    fn fast_path_matches_the_general_interpreter() {
        let Some(codes) = assemble(FORMS) else {
            println!("skipped: llvm-mc-19 not found");
            return;
        };
        let target = Gfx9Target::Gfx90a;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (form, bytes) in FORMS.iter().zip(&codes) {
            let inst = decode(bytes, target).unwrap();
            let pc = 0x1000;
            let fast = classify(&inst, pc);
            assert_ne!(fast, Fast::Slow, "{form}: not on the fast path");
            for round in 0..40 {
                let mut w = Wave::new(pc, true);
                for v in w.vgpr.iter_mut().take(8 * WAVE_SIZE) {
                    let r = next();
                    *v = if r % 3 == 0 {
                        EDGES[(r >> 8) as usize % EDGES.len()]
                    } else {
                        (r >> 16) as u32
                    };
                }
                for s in w.sreg.iter_mut() {
                    let r = next();
                    *s = if r % 4 == 0 {
                        EDGES[(r >> 8) as usize % EDGES.len()]
                    } else {
                        (r >> 16) as u32
                    };
                }
                w.scc = next() & 1 != 0;
                // What clang sets for HIP (f32 denormals kept, IEEE, DX10 clamp), the same
                // with IEEE off, and modes that flush f32 denormals, where the float forms
                // must decline (or, v_mad/v_mac and the integer conversions, still match).
                const MODES: [u32; 4] = [0x3F0, 0x0F0, 0x2C0, 0x000];
                w.mode = MODES[(round / 4) % MODES.len()];
                let exec = match round % 4 {
                    0 => u64::MAX,
                    1 => 0,
                    _ => next(),
                };
                // Addresses of memory forms: mostly inside the test memory and LDS, some
                // past their ends (faults; LDS zeros and dropped writes), some in a FLAT
                // aperture (the fast path declines).
                let is_mem = ["ds_", "s_load", "global_", "flat_"]
                    .iter()
                    .any(|p| form.starts_with(p));
                if is_mem {
                    let rare = if round % 5 == 4 { 8 } else { 2000 };
                    for l in 0..WAVE_SIZE {
                        let r = next();
                        let over = r % rare == 0;
                        let off = (r >> 16) as usize % if over { 64 } else { 1 };
                        let in_mem = ((r >> 24) as usize % (MEMORY_BYTES - 12)) & !3;
                        let (mem_off, lds_off) = if over {
                            (MEMORY_BYTES - 8 + off, LDS_BYTES - 8 + off)
                        } else {
                            (in_mem, (r >> 40) as usize % (LDS_BYTES - 12))
                        };
                        let a = MEMORY_BASE + mem_off as u64;
                        let a = if form.starts_with("flat_") && r % 97 == 1 && round % 5 == 4 {
                            SHARED_APERTURE_BASE + 16
                        } else {
                            a
                        };
                        if form.starts_with("ds_") {
                            w.vgpr[2 * WAVE_SIZE + l] = lds_off as u32;
                        } else if form.contains("s[4:5]") && form.starts_with("global_") {
                            w.vgpr[2 * WAVE_SIZE + l] = mem_off as u32;
                        } else {
                            w.vgpr[6 * WAVE_SIZE + l] = a as u32;
                            w.vgpr[7 * WAVE_SIZE + l] = (a >> 32) as u32;
                        }
                    }
                    let base = if form.starts_with("s_load") && round % 5 == 4 {
                        MEMORY_BASE + MEMORY_BYTES as u64 - 32
                    } else {
                        MEMORY_BASE
                    };
                    w.set_sreg64(4, base);
                }
                let bytes: Vec<u8> = (0..MEMORY_BYTES).map(|_| next() as u8).collect();
                let lds: Vec<u8> = (0..LDS_BYTES).map(|_| next() as u8).collect();
                let (gm, fm) = (
                    TestMemory(RefCell::new(bytes.clone())),
                    TestMemory(RefCell::new(bytes)),
                );
                let (mut glds, mut flds) = (lds.clone(), lds);
                w.set_exec(exec);
                let aperture = form.starts_with("flat_")
                    && (0..WAVE_SIZE).any(|l| {
                        exec >> l & 1 != 0
                            && w.vgpr[7 * WAVE_SIZE + l] == (SHARED_APERTURE_BASE >> 32) as u32
                    });
                let mut general = w.clone();
                let flow = general_step(&mut general, &inst, pc, &gm, &mut glds);
                let done = run(&mut w, &fast, &fm, &mut flds);
                let (flow, done) = match (flow, done) {
                    (Ok(f), Ok(d)) => (f, d),
                    (Err(_), Ok(Done::Slow)) if aperture => continue,
                    (Err(g), Ok(Done::Slow)) => {
                        panic!("{form}: general path failed ({g}), fast path declined")
                    }
                    (Err(g), Err(f)) => {
                        assert_eq!(f.status(), g.status(), "{form}: error status");
                        assert_eq!(f.detail(), g.detail(), "{form}: error (round {round})");
                        assert!(w.vgpr == general.vgpr, "{form}: VGPRs after the fault");
                        assert_eq!(w.sreg, general.sreg, "{form}: SGPRs after the fault");
                        assert!(*fm.0.borrow() == *gm.0.borrow(), "{form}: memory");
                        continue;
                    }
                    (g, f) => panic!(
                        "{form}: general {:?}, fast {:?} (round {round})",
                        g.err(),
                        f.err()
                    ),
                };
                let (want_pc, want_end) = match flow {
                    None => (pc + u64::from(inst.size), false),
                    Some(Some(t)) => (t, false),
                    Some(None) => (pc, true),
                };
                match done {
                    Done::Next | Done::Barrier => w.pc = pc + u64::from(inst.size),
                    Done::Jump(t) => w.pc = t,
                    Done::End => {}
                    Done::Slow if mode::f32_denorm(w.mode) != mode::DENORM_KEEP && !is_mem => {
                        continue
                    }
                    Done::Slow if aperture => continue,
                    Done::Slow => panic!("{form}: fast path declined (MODE {:#x})", w.mode),
                }
                assert!(!aperture, "{form}: an aperture address on the fast path");
                assert!(
                    *fm.0.borrow() == *gm.0.borrow(),
                    "{form}: memory differs (round {round})"
                );
                assert!(flds == glds, "{form}: LDS differs (round {round})");
                assert_eq!(matches!(done, Done::End), want_end, "{form}: end");
                assert_eq!(w.pc, want_pc, "{form}: next pc");
                assert_eq!(w.scc, general.scc, "{form}: SCC (round {round})");
                assert_eq!(w.sreg, general.sreg, "{form}: SGPRs (round {round})");
                assert!(
                    w.vgpr == general.vgpr,
                    "{form}: VGPRs differ (round {round})"
                );
            }
        }
    }
}
