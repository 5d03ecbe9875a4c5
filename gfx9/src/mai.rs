//! Matrix (MAI) instructions of gfx908, gfx90a and gfx940+: `v_mfma_*` over the whole wave,
//! and `v_accvgpr_read_b32`/`v_accvgpr_write_b32`/`v_accvgpr_mov_b32` moves between the VGPR
//! and AGPR files.
//!
//! An MFMA computes, for each block `b` of its `B` blocks, `D[b] = A[b'] · B[b] + C[b]` with
//! `A` an `M×K`, `B` a `K×N` and `C`/`D` `M×N` matrices whose elements are spread over the
//! lanes and registers of the wave. The element ↔ (register, lane) layout is the one of the
//! CDNA1/CDNA2/CDNA3 ISA guides ("Dependent Matrix Multiply" / "Matrix Fused Multiply-Add"
//! sections, also given by AMD's matrix instruction calculator):
//! - A and B (f32, f16, bf16, i8; `kl` = elements per lane, packed low bits first):
//!   `A[i][k]` of block `b` is element `k % kl` of lane `i + M·(k / kl + (K / kl)·b)`
//!   (B: `j` in place of `i`);
//! - C and D (f32, i32): 32×32 blocks: register `16b + 4⌊i/8⌋ + i%4`, lane
//!   `32(⌊i/4⌋ % 2) + j`; 16×16: register `4b + i%4`, lane `16⌊i/4⌋ + j`; 4×4: register `i`,
//!   lane `4b + j`;
//! - f64 (gfx90a+): A/B lane `16k + i` (4×4×4: `16k + 4b + i`); D register pair `⌊i/4⌋`
//!   (4×4×4: pair 0), lane `16(i%4) + j` (4×4×4: `16(i%4) + 4b + j`).
//!
//! Modifiers: `cbsz`/`abid` make block `b` read A from block `⌊b/2^cbsz⌋·2^cbsz + abid`;
//! `blgp` makes lane `l` read B from another lane (1: `l % 32`, 2: `32 + l % 32`, 3:
//! `(l + 16) % 64`, 4..=7: `16(blgp − 4) + l % 16`); gfx940's f64 forms read the `blgp` bits
//! as `neg` of A, B and C. gfx90a's f64 forms have none of these.
//!
//! Arithmetic: the products and their sum with C are computed in f64 (every product of two
//! f32, f16 or bf16 values is exact there) and rounded once to f32 (round to nearest even); the
//! f64 forms accumulate with one fused multiply-add per `k` in order; i8 forms are exact
//! wrapping i32 sums. The ISA guides do not state the accumulation order of the hardware, so
//! results agree with it bit for bit whenever the exact sum is representable.
//!
//! MODE: the MFMAs ignore FP_DENORM. On MI200 (gfx90a) the f16 and bf16 forms (`bf16_1k`
//! included) flush denormal input and output data to zero (AMD's MIOpen documentation, "MI200
//! matrix fused multiply-add (MFMA) behavior specifics"): here a denormal A or B element, a
//! denormal C and a denormal D become zeros of their sign. The other forms and targets keep
//! denormals. FP_ROUND: the CDNA ISA guides state no rounding for MFMA, so a directed mode is
//! refused before an MFMA runs ([`super::mode::round_unsupported`]).

use super::decode::{Instruction, Operand};
use super::exec::{set_vdst_dword, vsrc_dword, F32_CONST, F64_CONST};
use super::f16;
use super::fp8;
use super::mode::{self, Kind};
use super::op::{Elem, Mfma};
use super::wave::{Wave, WAVE_SIZE};
use super::Gfx9Target;
use alloc::vec;
use hsa_core::{bail, Result, Status};

/// Bits of an MFMA element type.
const fn bits(elem: Elem) -> u32 {
    match elem {
        Elem::F32 | Elem::Xf32 => 32,
        Elem::F16 | Elem::Bf16 => 16,
        Elem::I8 | Elem::Fp8 | Elem::Bf8 | Elem::F8f6f4 => 8,
        Elem::Fp6 | Elem::Bf6 => 6,
        Elem::Fp4 => 4,
        Elem::F64 => 64,
    }
}

/// The format of an f8f6f4 MFMA's matrix by its `cbsz` (A) or `blgp` (B) code (CDNA4 ISA
/// §7.1.5: 0 E4M3, 1 E5M2, 2 E2M3, 3 E3M2, 4 E2M1); `None` for 5..7.
fn f8f6f4_format(code: u8) -> Option<Elem> {
    Some(match code {
        0 => Elem::Fp8,
        1 => Elem::Bf8,
        2 => Elem::Fp6,
        3 => Elem::Bf6,
        4 => Elem::Fp4,
        _ => return None,
    })
}

/// The dimensions of an MFMA, from its mnemonic and operand widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    m: usize,
    n: usize,
    k: usize,
    blocks: usize,
    /// Elements of B per lane: the K positions one lane of A and B covers (a sparse A
    /// stores half of them).
    kl: usize,
    elem: Elem,
    b_elem: Elem,
    sparse: bool,
    /// gfx950's `v_mfma_*_f8f6f4`: `elem`/`b_elem` come from `cbsz`/`blgp`, which broadcast
    /// nothing, and each format has its own layout ([`Shape::input_at_in`]).
    f8f6f4: bool,
}

impl Shape {
    /// The shape of MFMA `inst`: its [`Mfma`] attributes (`v_mfma_<out>_<M>x<N>x<K>…<type>`
    /// in both the gfx908/gfx90a and the gfx940 spellings) and its operand widths.
    fn of(inst: &Instruction) -> Option<Shape> {
        let Mfma {
            m,
            n,
            k,
            elem,
            b_elem,
            f64_out,
            sparse,
        } = inst.op().attrs().mfma?;
        let (m, n, k) = (usize::from(m), usize::from(n), usize::from(k));
        let [wd, _, wb, _] = inst.info.widths;
        let out_dwords = if f64_out {
            wd as usize / 2
        } else {
            wd as usize
        };
        let blocks = out_dwords * WAVE_SIZE / (m * n).max(1);
        let f8f6f4 = elem == Elem::F8f6f4;
        let (elem, b_elem, kl) = if f8f6f4 {
            // 32 values of each matrix per lane whatever the format (K / (64 / M)).
            (
                f8f6f4_format(inst.mods.cbsz)?,
                f8f6f4_format(inst.mods.blgp)?,
                32,
            )
        } else {
            (elem, b_elem, wb as usize * 32 / bits(elem) as usize)
        };
        let shape = Shape {
            m,
            n,
            k,
            blocks,
            kl,
            elem,
            b_elem,
            sparse,
            f8f6f4,
        };
        // Every lane holds one (row, k-group, block) of A: the layout covers the wave.
        let groups = k / kl.max(1);
        (kl > 0 && k % kl == 0 && m * groups * blocks == WAVE_SIZE && m == n).then_some(shape)
    }

    /// Lane and element index of `A[i][k]` (or `B[k][i]`) of block `b` when that matrix's
    /// elements are `elem`s: an f8f6f4 MFMA's layout depends on the format (CDNA4 ISA
    /// §7.1.5.1's tables, K values per lane group `g = lane / M`): FP8/BF8 hold K positions
    /// `16g..16g+16` in their first four registers and `K/2 + 16g..` in the next four,
    /// FP6/BF6/FP4 hold `32g..32g+32` in order; the other MFMAs follow [`Shape::input_at`].
    fn input_at_in(&self, i: usize, k: usize, b: usize, elem: Elem) -> (usize, usize) {
        if !self.f8f6f4 {
            return self.input_at(i, k, b);
        }
        let (g, e) = match elem {
            Elem::Fp8 | Elem::Bf8 if k < self.k / 2 => (k / 16, k % 16),
            Elem::Fp8 | Elem::Bf8 => ((k - self.k / 2) / 16, 16 + (k - self.k / 2) % 16),
            _ => (k / 32, k % 32),
        };
        (i + self.m * g, e)
    }

    /// Lane and element index of `A[i][k]` (or `B[k][i]`) of block `b`.
    fn input_at(&self, i: usize, k: usize, b: usize) -> (usize, usize) {
        if self.elem == Elem::F64 {
            return (16 * k + self.m * b + i, 0);
        }
        let groups = self.k / self.kl;
        (i + self.m * (k / self.kl + groups * b), k % self.kl)
    }

    /// Register (in elements of the output type) and lane of `D[i][j]` of block `b`.
    fn output_at(&self, i: usize, j: usize, b: usize) -> (usize, usize) {
        if self.elem == Elem::F64 {
            return if self.m == 4 {
                (0, 16 * (i % 4) + 4 * b + j)
            } else {
                (i / 4, 16 * (i % 4) + j)
            };
        }
        match self.n {
            32 => (16 * b + 4 * (i / 8) + i % 4, 32 * ((i / 4) % 2) + j),
            16 => (4 * b + i % 4, 16 * (i / 4) + j),
            _ => (i, 4 * b + j),
        }
    }
}

/// Element `e` of `lane`'s operand `op` as an f64 (i8: its integer value); with `flush` a
/// denormal f16 or bf16 element is a zero of its sign. An XF32 element is its f32 with the
/// low 13 mantissa bits cleared (the ones the gfx940 MFMA ignores: Tensile's and rocBLAS's
/// host references for xf32 GEMMs truncate so); FP8/BF8 are `target`'s formats (FNUZ on
/// gfx940-942, OCP on gfx950: CDNA4 ISA §7.3).
fn element(
    w: &Wave,
    op: &Operand,
    lane: usize,
    e: usize,
    elem: Elem,
    flush: bool,
    target: Gfx9Target,
) -> f64 {
    let bits = bits(elem) as usize;
    let dword = e * bits / 32;
    let shift = (e * bits % 32) as u32;
    let v = vsrc_dword(w, op, lane, dword);
    let fl = |kind: Kind, x: u64| if flush { mode::flush(kind, x) } else { x };
    match elem {
        Elem::F32 => f64::from(f32::from_bits(v)),
        Elem::F16 => f16::to_f64(fl(Kind::F16, u64::from(v >> shift & 0xFFFF)) as u16),
        Elem::Bf16 => {
            let x = fl(Kind::F32, u64::from((v >> shift) << 16));
            f64::from(f32::from_bits(x as u32))
        }
        Elem::I8 => f64::from((v >> shift) as u8 as i8),
        Elem::Xf32 => f64::from(f32::from_bits(v & 0xFFFF_E000)),
        Elem::Fp8 => f64::from(fp8::to_f32(
            (v >> shift) as u8,
            fp8::Format::of(false, target),
        )),
        Elem::Bf8 => f64::from(fp8::to_f32(
            (v >> shift) as u8,
            fp8::Format::of(true, target),
        )),
        Elem::F64 => {
            let hi = vsrc_dword(w, op, lane, dword + 1);
            f64::from_bits(u64::from(v) | u64::from(hi) << 32)
        }
        // Packed little-endian across the registers: a 6-bit element may span two.
        Elem::Fp6 | Elem::Bf6 => {
            let hi = if shift > 26 {
                vsrc_dword(w, op, lane, dword + 1)
            } else {
                0
            };
            let code = ((u64::from(v) | u64::from(hi) << 32) >> shift) as u8 & 0x3F;
            fp8::small::fp6_to_f64(code, elem == Elem::Bf6)
        }
        Elem::Fp4 => fp8::small::fp4_to_f64((v >> shift) as u8 & 0xF),
        // Resolved by Shape::of.
        Elem::F8f6f4 => f64::NAN,
    }
}

/// Row `i` of a sparse MFMA's A (`v_smfmac_*`, CDNA3 ISA "Sparse matrix multiply"; the
/// layout of AMD's matrix instruction calculator): A holds 2 of every 4 K positions. Lane
/// `i + M·g` stores, as elements 0..kl/2 of src0, the kept values of K positions
/// `g·kl .. (g+1)·kl`; the compression index in the same lane of the src2 VGPR gives each
/// stored element `e` its place within its group of 4 (`4·⌊e/2⌋ + idx`) in 2 bits at bit
/// `2e`, of the index set `abid` (sets of `kl` bits; set 0 when `cbsz` is not 0). The other
/// positions are 0.
fn sparse_row(w: &Wave, inst: &Instruction, s: &Shape, i: usize, row: &mut [f64]) {
    let set = if inst.mods.cbsz == 0 {
        usize::from(inst.mods.abid) * s.kl
    } else {
        0
    };
    for g in 0..s.k / s.kl {
        let lane = i + s.m * g;
        let index = vsrc_dword(w, &inst.src[2], lane, 0);
        for e in 0..s.kl / 2 {
            let idx = (index >> ((set + 2 * e) % 32) & 3) as usize;
            let k = g * s.kl + 4 * (e / 2) + idx;
            row[k] += element(w, &inst.src[0], lane, e, s.elem, false, inst.target);
        }
    }
}

/// The lane whose B value lane `lane` reads under `blgp`.
fn blgp_lane(lane: usize, blgp: u8) -> usize {
    match blgp {
        1 => lane % 32,
        2 => 32 + lane % 32,
        3 => (lane + 16) % 64,
        4..=7 => 16 * (blgp as usize - 4) + lane % 16,
        _ => lane,
    }
}

/// Runs `v_mfma_*` `inst` on `w`.
///
/// # Errors
/// [`Status::IllegalInstruction`] naming the instruction when EXEC is not all 64 lanes (the
/// ISA guides do not define an MFMA with lanes off; the compiler never emits one), when
/// `cbsz`/`abid` name a block outside the instruction's blocks, when an f64 form on gfx90a
/// has `cbsz`, `abid` or `blgp` set (CDNA2 has none for f64) or on gfx940 `cbsz`/`abid`, or
/// when the mnemonic is an MFMA the interpreter does not model (xf32, fp8/bf8).
pub(super) fn mfma(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    let m = inst.mods;
    if inst
        .op()
        .attrs()
        .mfma
        .is_some_and(|x| x.elem == Elem::F8f6f4)
        && (f8f6f4_format(m.cbsz).is_none() || f8f6f4_format(m.blgp).is_none())
    {
        bail!(
            Status::IllegalInstruction,
            "{name}: cbsz {} blgp {}: format codes above 4 name no format (CDNA4 ISA §7.1.5)",
            m.cbsz,
            m.blgp
        );
    }
    let Some(s) = Shape::of(inst) else {
        bail!(
            Status::IllegalInstruction,
            "{name}: this matrix instruction is not modelled by the interpreter"
        );
    };
    let exec = w.exec();
    if exec != u64::MAX {
        bail!(
            Status::IllegalInstruction,
            "{name} with EXEC {exec:#x}: an MFMA with lanes off is not modelled"
        );
    }
    let mut neg = [false; 3];
    let mut blgp = m.blgp;
    if s.elem == Elem::F64 {
        if inst.target.is_gfx940() {
            neg = [blgp & 1 != 0, blgp & 2 != 0, blgp & 4 != 0];
            blgp = 0;
        }
        if m.cbsz != 0 || m.abid != 0 || blgp != 0 {
            bail!(
                Status::IllegalInstruction,
                "{name}: cbsz {}, abid {}, blgp {}: the f64 MFMA has no block or lane \
                 broadcast",
                m.cbsz,
                m.abid,
                m.blgp
            );
        }
    }
    if s.f8f6f4 {
        // cbsz and blgp name the formats; nothing is broadcast. abid (the scale enable of
        // the scaled form) is 0: the decoder refuses it, as LLVM does.
        blgp = 0;
    }
    let group = if s.f8f6f4 { 1 } else { 1usize << m.cbsz };
    let abid = if s.f8f6f4 { 0 } else { m.abid as usize };
    if !s.sparse && (group > s.blocks || abid >= group) {
        bail!(
            Status::IllegalInstruction,
            "{name}: cbsz {} abid {}: no such A block among the {} blocks",
            m.cbsz,
            m.abid,
            s.blocks
        );
    }
    // MI200's f16/bf16 MFMAs flush denormal inputs and outputs (see the module doc).
    let flush = inst.target == Gfx9Target::Gfx90a && matches!(s.elem, Elem::F16 | Elem::Bf16);
    let fl32 = |x: u64| if flush { mode::flush(Kind::F32, x) } else { x };
    let (mm, nn, kk, bb) = (s.m, s.n, s.k, s.blocks);
    let mut a = vec![0f64; bb * mm * kk];
    let mut b = vec![0f64; bb * kk * nn];
    for blk in 0..bb {
        for i in 0..mm {
            for k in 0..kk {
                let (lane, e) = s.input_at_in(i, k, blk, s.elem);
                if !s.sparse {
                    a[(blk * mm + i) * kk + k] =
                        element(w, &inst.src[0], lane, e, s.elem, flush, inst.target);
                }
                let (lane, e) = s.input_at_in(i, k, blk, s.b_elem);
                b[(blk * kk + k) * nn + i] = element(
                    w,
                    &inst.src[1],
                    blgp_lane(lane, blgp),
                    e,
                    s.b_elem,
                    flush,
                    inst.target,
                );
            }
            if s.sparse {
                sparse_row(w, inst, &s, i, &mut a[i * kk..(i + 1) * kk]);
            }
        }
    }
    // gfx950's scaled MFMA (CDNA4 ISA §7.2): one E8M0 scale per 32 K positions of each row
    // of A and each column of B, 2^(e - 127), from byte `MfmaScale::byte` of the scale VGPR
    // in lane `row + M * (k / 32)` (§7.2.1's scale layouts); applied to each 32-long partial
    // dot product before the sum. The E8M0 NaN (0xFF) is refused: what the hardware gives
    // then is not documented.
    let kb = kk / 32;
    let mut scales = [vec![1f64; mm * kb.max(1)], vec![1f64; nn * kb.max(1)]];
    if let Some(sc) = m.scale {
        for (which, (op, dim)) in [(sc.a, mm), (sc.b, nn)].into_iter().enumerate() {
            let byte = sc.byte(which as u8);
            for r in 0..dim {
                for g in 0..kb {
                    let e = vsrc_dword(w, &op, r + dim * g, 0) >> (8 * byte) & 0xFF;
                    if e == 0xFF {
                        bail!(
                            Status::IllegalInstruction,
                            "{name}: lane {}'s {} scale is 0xFF (E8M0 NaN), whose result is \
                             not documented",
                            r + dim * g,
                            if which == 0 { "A" } else { "B" }
                        );
                    }
                    scales[which][r * kb + g] = 2f64.powi(e as i32 - 127);
                }
            }
        }
    }
    let out_f64 = s.elem == Elem::F64;
    let int = s.elem == Elem::I8;
    // C: registers or an inline constant (a float constant for the float forms); the
    // destination itself for the sparse forms.
    let c_op = if s.sparse { inst.dst } else { inst.src[2] };
    let c_const: Option<u64> = match c_op {
        Operand::InlineInt(v) if int => Some(v as i32 as u32 as u64),
        Operand::InlineInt(v) if out_f64 => Some(f64::from(v).to_bits()),
        Operand::InlineInt(v) => Some(u64::from((v as f32).to_bits())),
        Operand::InlineFloat(c) if out_f64 => Some(F64_CONST[(c - 240) as usize]),
        Operand::InlineFloat(c) => Some(u64::from(F32_CONST[(c - 240) as usize])),
        _ => None,
    };
    let mut out = vec![0u64; bb * mm * nn];
    for blk in 0..bb {
        // The sparse forms' abid picks an index set (sparse_row), not an A block.
        let ablk = if s.sparse {
            blk
        } else {
            (blk / group) * group + abid
        };
        for i in 0..mm {
            for j in 0..nn {
                let (reg, lane) = s.output_at(i, j, blk);
                let c = c_const.unwrap_or_else(|| {
                    if out_f64 {
                        let lo = vsrc_dword(w, &c_op, lane, 2 * reg);
                        let hi = vsrc_dword(w, &c_op, lane, 2 * reg + 1);
                        u64::from(lo) | u64::from(hi) << 32
                    } else {
                        u64::from(vsrc_dword(w, &c_op, lane, reg))
                    }
                });
                let arow = &a[(ablk * mm + i) * kk..][..kk];
                let bcol = |k: usize| b[(blk * kk + k) * nn + j];
                let d = if int {
                    let mut acc = c as u32 as i32;
                    for (k, x) in arow.iter().enumerate() {
                        acc = acc.wrapping_add((*x as i32).wrapping_mul(bcol(k) as i32));
                    }
                    u64::from(acc as u32)
                } else if out_f64 {
                    let sign = |x: f64, n: bool| if n { -x } else { x };
                    let mut acc = sign(f64::from_bits(c), neg[2]);
                    for (k, x) in arow.iter().enumerate() {
                        acc = sign(*x, neg[0]).mul_add(sign(bcol(k), neg[1]), acc);
                    }
                    acc.to_bits()
                } else {
                    let mut acc = f64::from(f32::from_bits(fl32(c) as u32));
                    if m.scale.is_some() {
                        for g in 0..kb {
                            let part: f64 = (32 * g..32 * g + 32).map(|k| arow[k] * bcol(k)).sum();
                            acc += part * scales[0][i * kb + g] * scales[1][j * kb + g];
                        }
                    } else {
                        for (k, x) in arow.iter().enumerate() {
                            acc += x * bcol(k);
                        }
                    }
                    fl32(u64::from((acc as f32).to_bits()))
                };
                out[(blk * mm + i) * nn + j] = d;
            }
        }
    }
    for blk in 0..bb {
        for i in 0..mm {
            for j in 0..nn {
                let (reg, lane) = s.output_at(i, j, blk);
                let d = out[(blk * mm + i) * nn + j];
                if out_f64 {
                    set_vdst_dword(w, &inst.dst, lane, 2 * reg, d as u32);
                    set_vdst_dword(w, &inst.dst, lane, 2 * reg + 1, (d >> 32) as u32);
                } else {
                    set_vdst_dword(w, &inst.dst, lane, reg, d as u32);
                }
            }
        }
    }
    Ok(())
}

/// `v_accvgpr_read_b32` (AGPR → VGPR), `v_accvgpr_write_b32` (VGPR, SGPR or inline constant
/// → AGPR) and `v_accvgpr_mov_b32` (AGPR → AGPR, gfx90a+), in the lanes EXEC enables.
pub(super) fn accvgpr(w: &mut Wave, inst: &Instruction) {
    let exec = w.exec();
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let v = match inst.src[0] {
            op @ (Operand::Vgpr { .. } | Operand::Agpr { .. }) => vsrc_dword(w, &op, lane, 0),
            op => super::exec::scalar(w, &op, false, false) as u32,
        };
        set_vdst_dword(w, &inst.dst, lane, 0, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;

    fn shape(words: [u32; 2], t: Gfx9Target) -> Shape {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&words[0].to_le_bytes());
        b[4..].copy_from_slice(&words[1].to_le_bytes());
        Shape::of(&decode(&b, t).unwrap()).unwrap()
    }

    #[test]
    fn shapes_from_both_spellings() {
        // llvm-mc-19 -show-encoding: v_mfma_f32_32x32x1f32 a[0:31], v0, v1, a[0:31] (gfx90a)
        // = v_mfma_f32_32x32x1_2b_f32 on gfx942; v_mfma_f32_32x32x8f16; v_mfma_f64_4x4x4f64.
        let s = shape([0xD3C08000, 0x04020300], Gfx9Target::Gfx90a);
        assert_eq!((s.m, s.k, s.blocks, s.kl, s.elem), (32, 1, 2, 1, Elem::F32));
        let s = shape([0xD3C08000, 0x04020300], Gfx9Target::Gfx942);
        assert_eq!((s.m, s.k, s.blocks, s.kl, s.elem), (32, 1, 2, 1, Elem::F32));
        let s = shape([0xD3CC8000, 0x04020500], Gfx9Target::Gfx908);
        assert_eq!((s.m, s.k, s.blocks, s.kl, s.elem), (32, 8, 1, 4, Elem::F16));
        let s = shape([0xD3EF8000, 0x04020500], Gfx9Target::Gfx90a);
        assert_eq!((s.m, s.k, s.blocks, s.kl, s.elem), (4, 4, 4, 1, Elem::F64));
        // gfx908 bf16 (2 per dword) vs gfx942's renamed bf16_1k (4 per register pair).
        let s = shape([0xD3E80000, 0x04020300], Gfx9Target::Gfx908);
        assert_eq!((s.k, s.blocks, s.kl, s.elem), (2, 2, 2, Elem::Bf16));
        let s = shape([0xD3DD8000, 0x04020500], Gfx9Target::Gfx942);
        assert_eq!((s.k, s.blocks, s.kl, s.elem), (4, 2, 4, Elem::Bf16));
    }

    #[test]
    fn layouts_cover_every_register_and_lane_once() {
        // Every (block, i, j) of D lands on a distinct (register, lane), and every lane holds
        // one (block, i, k-group) of A.
        let cases: [([u32; 2], Gfx9Target); 6] = [
            ([0xD3C08000, 0x04020300], Gfx9Target::Gfx90a),
            ([0xD3C18000, 0x04020300], Gfx9Target::Gfx90a),
            ([0xD3C28000, 0x04020300], Gfx9Target::Gfx90a),
            ([0xD3CD8000, 0x04020500], Gfx9Target::Gfx90a),
            ([0xD3EE8000, 0x04020500], Gfx9Target::Gfx90a),
            ([0xD3EF8000, 0x04020500], Gfx9Target::Gfx90a),
        ];
        for (words, t) in cases {
            let s = shape(words, t);
            let mut seen = std::collections::HashSet::new();
            for b in 0..s.blocks {
                for i in 0..s.m {
                    for j in 0..s.n {
                        assert!(seen.insert(s.output_at(i, j, b)), "{s:?} D[{i}][{j}].{b}");
                    }
                }
            }
            let mut seen = std::collections::HashSet::new();
            for b in 0..s.blocks {
                for i in 0..s.m {
                    for k in 0..s.k {
                        assert!(seen.insert(s.input_at(i, k, b)), "{s:?} A[{i}][{k}].{b}");
                    }
                }
            }
            assert!(seen.iter().all(|&(lane, e)| lane < 64 && e < s.kl));
        }
        assert_eq!(blgp_lane(5, 3), 21);
        assert_eq!(blgp_lane(60, 3), 12);
        assert_eq!(blgp_lane(40, 5), 24);
    }
}
