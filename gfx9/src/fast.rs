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
use super::exec::{canon32, DeviceMemory, F32_CONST};
use super::mode::{self, Kind};
use super::op::{self, Class, Dir, Mem, MemTy, Op, Ty};
use hsa_core::{error, Result};

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
    fn of(c: op::Cond) -> Option<FCond> {
        const L: u8 = 1;
        const E: u8 = 2;
        const G: u8 = 4;
        const U: u8 = 8;
        Some(FCond(match c {
            op::Cond::Lt => L,
            op::Cond::Eq => E,
            op::Cond::Le => L | E,
            op::Cond::Gt => G,
            op::Cond::Lg => L | G,
            op::Cond::Ge => G | E,
            op::Cond::O => L | E | G,
            op::Cond::U => U,
            op::Cond::Nge => L | U,
            op::Cond::Nlg => E | U,
            op::Cond::Ngt => L | E | U,
            op::Cond::Nle => G | U,
            op::Cond::Neq => L | G | U,
            op::Cond::Nlt => E | G | U,
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
    let op = inst.op();
    match inst.encoding {
        Encoding::Sopp => {
            let target = pc
                .wrapping_add(u64::from(inst.size))
                .wrapping_add((i64::from(inst.imm) * 4) as u64);
            let cond = match op {
                Op::SNop | Op::SWaitcnt => return Some(Fast::Nop),
                Op::SEndpgm => return Some(Fast::End),
                Op::SBarrier => return Some(Fast::Barrier),
                Op::SBranch => Cond::Always,
                Op::SCbranchScc0 => Cond::Scc0,
                Op::SCbranchScc1 => Cond::Scc1,
                Op::SCbranchVccz => Cond::Vccz,
                Op::SCbranchVccnz => Cond::Vccnz,
                Op::SCbranchExecz => Cond::Execz,
                Op::SCbranchExecnz => Cond::Execnz,
                _ => return None,
            };
            Some(Fast::Branch(cond, target))
        }
        Encoding::Sop2 | Encoding::Sop1 => salu(inst),
        Encoding::Sopc => {
            let c = op.attrs().compare?;
            Some(Fast::SCmp {
                cond: cmp_cond(c.cond)?,
                ty: cmp_ty(c.ty)?,
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

fn cmp_cond(c: op::Cond) -> Option<Cmp> {
    Some(match c {
        op::Cond::Lt => Cmp::Lt,
        op::Cond::Eq => Cmp::Eq,
        op::Cond::Le => Cmp::Le,
        op::Cond::Gt => Cmp::Gt,
        op::Cond::Lg | op::Cond::Ne => Cmp::Ne,
        op::Cond::Ge => Cmp::Ge,
        _ => return None,
    })
}

fn cmp_ty(t: Ty) -> Option<CmpTy> {
    Some(match t {
        Ty::I32 => CmpTy::I32,
        Ty::U32 => CmpTy::U32,
        _ => return None,
    })
}

fn salu(inst: &Instruction) -> Option<Fast> {
    let which = inst.op();
    let (op, wide) = match which {
        Op::SMovB32 => (SOp::Mov, false),
        Op::SMovB64 => (SOp::Mov, true),
        Op::SAddU32 => (SOp::AddU32, false),
        Op::SSubU32 => (SOp::SubU32, false),
        Op::SAddI32 => (SOp::AddI32, false),
        Op::SSubI32 => (SOp::SubI32, false),
        Op::SAddcU32 => (SOp::AddcU32, false),
        Op::SMulI32 => (SOp::MulI32, false),
        Op::SAndB32 => (SOp::And, false),
        Op::SOrB32 => (SOp::Or, false),
        Op::SXorB32 => (SOp::Xor, false),
        Op::SAndn2B32 => (SOp::Andn2, false),
        Op::SAndB64 => (SOp::And, true),
        Op::SOrB64 => (SOp::Or, true),
        Op::SXorB64 => (SOp::Xor, true),
        Op::SAndn2B64 => (SOp::Andn2, true),
        Op::SLshlB32 => (SOp::LshlB32, false),
        Op::SLshrB32 => (SOp::LshrB32, false),
        Op::SLshlB64 => (SOp::LshlB64, true),
        Op::SCselectB32 => (SOp::Cselect, false),
        Op::SCselectB64 => (SOp::Cselect, true),
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
    let (store, dwords) = match inst.op() {
        Op::DsReadB32 => (false, 1),
        Op::DsReadB64 => (false, 2),
        Op::DsWriteB32 => (true, 1),
        Op::DsWriteB64 => (true, 2),
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
    let dwords = match inst.op() {
        Op::SLoadDword => 1,
        Op::SLoadDwordx2 => 2,
        Op::SLoadDwordx4 => 4,
        Op::SLoadDwordx8 => 8,
        Op::SLoadDwordx16 => 16,
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
    let op = inst.op();
    let attrs = op.attrs();
    let flat = match attrs.class {
        Class::Flat => true,
        Class::Global => false,
        _ => return None,
    };
    let store = match attrs.mem? {
        Mem {
            dir: Dir::Load,
            ty: MemTy::Dword,
        } => false,
        Mem {
            dir: Dir::Store,
            ty: MemTy::Dword,
        } => true,
        _ => return None,
    };
    let dwords = inst.info.widths[if store { 1 } else { 0 }];
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
    let op = match inst.op() {
        Op::VPkFmaF32 => PkOp::Fma,
        Op::VPkMulF32 => PkOp::Mul,
        Op::VPkAddF32 => PkOp::Add,
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
    let which = inst.op();
    if let Some(c) = which.attrs().compare {
        let (cond, ty, x) = (c.cond, c.ty, c.exec);
        if ty == Ty::F32 {
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
    let c_op = match which {
        Op::VAddCoU32 => Some(COp::AddCo),
        Op::VSubCoU32 => Some(COp::SubCo),
        Op::VSubrevCoU32 => Some(COp::SubrevCo),
        Op::VAddcCoU32 => Some(COp::Addc),
        Op::VSubbCoU32 => Some(COp::Subb),
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
    if which == Op::VCndmaskB32 {
        return Some(Fast::Cndmask {
            dst: vdst(&inst.dst)?,
            a: src32(&inst.src[0])?,
            b: src32(&inst.src[1])?,
            mask: pair(&inst.src[2])?,
        });
    }
    if which == Op::VLshlrevB64 {
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
    let op = match which {
        Op::VMovB32 => Mov,
        Op::VAddU32 => AddU32,
        Op::VSubU32 => SubU32,
        Op::VSubrevU32 => SubrevU32,
        Op::VMulLoU32 => MulLoU32,
        Op::VMulHiU32 => MulHiU32,
        Op::VMulU32U24 => MulU32U24,
        Op::VAndB32 => And,
        Op::VOrB32 => Or,
        Op::VXorB32 => Xor,
        Op::VNotB32 => Not,
        Op::VLshlrevB32 => LshlrevB32,
        Op::VLshrrevB32 => LshrrevB32,
        Op::VAshrrevI32 => AshrrevI32,
        Op::VMinI32 => MinI32,
        Op::VMaxI32 => MaxI32,
        Op::VMinU32 => MinU32,
        Op::VMaxU32 => MaxU32,
        Op::VAddF32 => AddF32,
        Op::VSubF32 => SubF32,
        Op::VSubrevF32 => SubrevF32,
        Op::VMulF32 => MulF32,
        Op::VMinF32 => MinF32,
        Op::VMaxF32 => MaxF32,
        Op::VCvtF32I32 => CvtF32I32,
        Op::VCvtF32U32 => CvtF32U32,
        Op::VRsqF32 => RsqF32,
        Op::VMacF32 => MacF32,
        Op::VMadF32 => MadF32,
        Op::VFmaF32 | Op::VFmacF32 => FmaF32,
        Op::VMadU32U24 => MadU32U24,
        Op::VAdd3U32 => Add3U32,
        Op::VLshlAddU32 => LshlAddU32,
        Op::VAddLshlU32 => AddLshlU32,
        Op::VLshlOrB32 => LshlOrB32,
        Op::VAndOrB32 => AndOrB32,
        Op::VOr3B32 => Or3B32,
        Op::VXadU32 => XadU32,
        Op::VBfeU32 => BfeU32,
        Op::VBfiB32 => BfiB32,
        Op::VAlignbitB32 => AlignbitB32,
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
    if matches!(which, Op::VMacF32 | Op::VFmacF32) {
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
                // The general path's address: the 32-bit sum of the VGPR and the offset.
                let at = w.vgpr[a + lane].wrapping_add(u32::from(offset)) as usize;
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
            // FLAT addresses that are not plain GPUVM addresses (the shared or private
            // aperture, or the hole): the general path.
            let aperture = |a: u64| {
                flat && !matches!(
                    w.apertures.resolve(a),
                    crate::aperture::FlatTarget::Global(_)
                )
            };
            if (0..WAVE_SIZE).any(|l| exec >> l & 1 != 0 && aperture(addr[l])) {
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
                        AddF32 => map2(&a, &b, super::fma::add32),
                        SubF32 => map2(&a, &b, super::fma::sub32),
                        SubrevF32 => map2(&a, &b, |x, y| super::fma::sub32(y, x)),
                        MulF32 => map2(&a, &b, super::fma::mul32),
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
                    PkOp::Mul => map2(&x[0], &x[1], super::fma::mul32),
                    PkOp::Add => map2(&x[0], &x[1], super::fma::add32),
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
mod tests;
