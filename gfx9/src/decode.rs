//! GFX9 instruction decoder: bytes → [`Instruction`].
//!
//! Covers the encodings the compiler emits for ordinary compute kernels: SOP2, SOP1, SOPK,
//! SOPC, SOPP, SMEM, VOP1, VOP2, VOPC, VOP3 (a and b forms), VOP3P, DS, FLAT/GLOBAL/SCRATCH,
//! MUBUF, MTBUF and MIMG, with inline constants and 32-bit literals. The opcodes known are those of the generated table in
//! `opcodes.rs` (numbers of AMD's "Vega" (gfx900), "CDNA2" (gfx90a) and "CDNA3" (gfx942)
//! ISA reference guides). No-panic contract: any byte slice decodes to an `Instruction` or an
//! [`Error`] with [`Status::IllegalInstruction`] naming the encoding and the dword(s).
//!
//! Field layouts (Vega ISA §12 "Microcode Formats"; CDNA3 ISA §10 for the gfx940+ cache
//! bits `sc0`/`sc1`/`nt` that replace `glc`/`slc`).

use super::op::{Class, Fp, Op};
use super::opcodes::OPCODES;
use super::Gfx9Target;
use hsa_core::{Error, Result, Status};

/// A microcode format (encoding) of GFX9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Scalar ALU, two sources (`[31:30] = 0b10`).
    Sop2,
    /// Scalar ALU, one source (`[31:23] = 0x17D`).
    Sop1,
    /// Scalar ALU with a 16-bit immediate (`[31:28] = 0xB`).
    Sopk,
    /// Scalar compare (`[31:23] = 0x17E`).
    Sopc,
    /// Scalar program control (`[31:23] = 0x17F`).
    Sopp,
    /// Scalar memory (`[31:26] = 0x30`), 2 dwords.
    Smem,
    /// Vector ALU, one source (`[31:25] = 0x3F`).
    Vop1,
    /// Vector ALU, two sources (`[31] = 0`).
    Vop2,
    /// Vector compare (`[31:25] = 0x3E`).
    Vopc,
    /// Vector ALU, three sources, 2 dwords (`[31:26] = 0x34`).
    Vop3,
    /// Packed math (two 16-bit or 32-bit halves), 2 dwords (`[31:23] = 0x1A7`).
    Vop3p,
    /// Local data share (`[31:26] = 0x36`), 2 dwords.
    Ds,
    /// Flat, global and scratch memory (`[31:26] = 0x37`), 2 dwords.
    Flat,
    /// Untyped buffer memory through a buffer resource (`[31:26] = 0x38`), 2 dwords.
    Mubuf,
    /// Typed buffer memory: MUBUF with the data and numeric format in the instruction
    /// (`[31:26] = 0x3A`), 2 dwords.
    Mtbuf,
    /// Image memory through an image resource (T#) and, for sampling, a sampler (S#)
    /// (`[31:26] = 0x3C`), 2 dwords; gfx900..gfx90a (gfx940 has no image instructions).
    Mimg,
}

impl Encoding {
    /// Number of encodings (the enum's variants; Mimg is the last).
    const COUNT: usize = Encoding::Mimg as usize + 1;

    /// Upper-case name as in the ISA guides, e.g. `"VOP3"`.
    pub const fn name(self) -> &'static str {
        match self {
            Encoding::Sop2 => "SOP2",
            Encoding::Sop1 => "SOP1",
            Encoding::Sopk => "SOPK",
            Encoding::Sopc => "SOPC",
            Encoding::Sopp => "SOPP",
            Encoding::Smem => "SMEM",
            Encoding::Vop1 => "VOP1",
            Encoding::Vop2 => "VOP2",
            Encoding::Vopc => "VOPC",
            Encoding::Vop3 => "VOP3",
            Encoding::Vop3p => "VOP3P",
            Encoding::Ds => "DS",
            Encoding::Flat => "FLAT",
            Encoding::Mubuf => "MUBUF",
            Encoding::Mtbuf => "MTBUF",
            Encoding::Mimg => "MIMG",
        }
    }
}

/// Target bit: gfx900 (and gfx9-generic code, which only uses gfx900's instructions).
pub(crate) const T_GFX900: u8 = 1;
/// Target bit: gfx90a.
pub(crate) const T_GFX90A: u8 = 2;
/// Target bit: gfx942.
pub(crate) const T_GFX942: u8 = 4;
/// Target bit: gfx906.
pub(crate) const T_GFX906: u8 = 8;
/// Target bit: gfx908.
pub(crate) const T_GFX908: u8 = 16;
/// Target bit: gfx904.
pub(crate) const T_GFX904: u8 = 32;
/// Target bit: gfx950.
pub(crate) const T_GFX950: u8 = 64;
/// All seven targets.
pub(crate) const T_ALL: u8 = 127;

/// Flag: VOP2 with a carry-out in VCC (VOP3b when promoted).
pub(crate) const F_CO: u8 = 1;
/// Flag: VOP2 with carry-in and carry-out in VCC.
pub(crate) const F_CI: u8 = 2;
/// Flag: VOP2 reading VCC as a lane mask (`v_cndmask_b32`).
pub(crate) const F_CND: u8 = 4;
/// Flag: VOP3b (explicit SGPR-pair `sdst`).
pub(crate) const F_B: u8 = 8;
/// Flag: the destination is an SGPR (`v_readfirstlane_b32`, `v_readlane_b32`).
pub(crate) const F_SDST: u8 = 16;
/// Flag: VOP3-only opcode (no `_e64` suffix in the disassembly).
pub(crate) const F_NONAME: u8 = 32;
/// Flag: FLAT atomic (returns the old value only with `glc`/`sc0`).
pub(crate) const F_ATOMIC: u8 = 64;
/// Flag: an atomic with no returning form on the row's targets (gfx908's float atomics):
/// `glc` set is an illegal instruction.
pub(crate) const F_NORTN: u8 = 128;

/// One row of the opcode table: what an opcode of an encoding is on which targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The encoding the opcode number belongs to (VOP3 forms of VOP1/VOP2/VOPC opcodes are
    /// found through their native encoding).
    pub encoding: Encoding,
    /// The opcode field value.
    pub opcode: u16,
    pub(crate) targets: u8,
    /// The instruction (its attributes: [`Op::attrs`]).
    pub op: Op,
    /// Mnemonic without the `_e32`/`_e64` suffix, e.g. `"v_add_co_u32"`.
    pub name: &'static str,
    /// Operand widths in dwords: `[dst, src0, src1, src2]` (0 = no such operand).
    pub widths: [u8; 4],
    pub(crate) flags: u8,
}

impl OpInfo {
    pub(crate) const fn new(
        encoding: Encoding,
        opcode: u16,
        targets: u8,
        op: Op,
        name: &'static str,
        widths: [u8; 4],
        flags: u8,
    ) -> OpInfo {
        OpInfo {
            encoding,
            opcode,
            targets,
            op,
            name,
            widths,
            flags,
        }
    }

    pub(crate) const fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Whether the opcode is a matrix (MAI) instruction: `v_mfma_*`, `v_smfmac_*`,
    /// `v_accvgpr_*` (also the gfx950 MFMAs the interpreter does not run yet).
    pub fn is_mai(&self) -> bool {
        let a = self.op.attrs();
        matches!(a.class, super::op::Class::Mfma | super::op::Class::Accvgpr) || a.mfma.is_some()
    }
}

/// Opcode field values per encoding: VOP3's 10-bit field is the widest.
const OPCODE_SLOTS: usize = 1024;

/// The rows of [`OPCODES`] for each (encoding, opcode), built once: decoding is a table
/// index instead of a scan of the whole table (the interpreter decodes every instruction it
/// runs).
fn rows(encoding: Encoding, opcode: u16) -> &'static [u16] {
    static INDEX: std::sync::OnceLock<Vec<Vec<u16>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut v = vec![Vec::new(); Encoding::COUNT * OPCODE_SLOTS];
        for (i, o) in OPCODES.iter().enumerate() {
            v[o.encoding as usize * OPCODE_SLOTS + o.opcode as usize].push(i as u16);
        }
        v
    });
    index
        .get(encoding as usize * OPCODE_SLOTS + opcode as usize)
        .map_or(&[], Vec::as_slice)
}

/// Whether the opcode table has an instruction of this mnemonic (without an `_e32`, `_e64`,
/// `_sdwa` or `_dpp` suffix) on `target`: for telling apart, among words llvm-mc decodes and
/// [`decode`] rejects, instructions the decoder lacks from field values it refuses.
pub fn knows_mnemonic(name: &str, target: Gfx9Target) -> bool {
    let base = ["_e32", "_e64", "_sdwa", "_dpp"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    OPCODES
        .iter()
        .any(|o| o.name == base && o.targets & target.bit() != 0)
}

/// Looks up an opcode of an encoding for a target.
pub(crate) fn lookup(
    encoding: Encoding,
    opcode: u16,
    target: Gfx9Target,
) -> Option<&'static OpInfo> {
    lookup_where(encoding, opcode, target, |_| true)
}

/// Looks up an opcode of an encoding for a target among the rows `pick` accepts (FLAT's
/// segments share opcode numbers: the row whose mnemonic has the segment's prefix).
fn lookup_where(
    encoding: Encoding,
    opcode: u16,
    target: Gfx9Target,
    pick: impl Fn(&OpInfo) -> bool,
) -> Option<&'static OpInfo> {
    let bit = target.bit();
    rows(encoding, opcode)
        .iter()
        .map(|&i| &OPCODES[i as usize])
        .find(|o| o.targets & bit != 0 && pick(o))
}

/// An operand: a register range, a constant, or a special value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operand {
    /// No operand in this slot.
    None,
    /// Scalar register `index` (0..=127 of the operand encoding: SGPRs, VCC at 106, M0 at
    /// 124, EXEC at 126, trap temporaries at 108..=123), `count` dwords wide.
    Sreg {
        /// Operand-field value 0..=127.
        index: u8,
        /// Width in dwords.
        count: u8,
    },
    /// VGPR `index`, `count` dwords wide.
    Vgpr {
        /// VGPR number 0..=255.
        index: u8,
        /// Width in dwords.
        count: u8,
    },
    /// AGPR (accumulation register, gfx90a/gfx942) `index`, `count` dwords wide.
    Agpr {
        /// AGPR number 0..=255.
        index: u8,
        /// Width in dwords.
        count: u8,
    },
    /// An inline integer constant −16..=64 (operand codes 128..=208).
    InlineInt(i8),
    /// An inline float constant, operand code 240..=248 (0.5, −0.5, 1.0, −1.0, 2.0, −2.0,
    /// 4.0, −4.0, 1/(2π)).
    InlineFloat(u8),
    /// A 32-bit literal that followed the instruction (operand code 255).
    Literal(u32),
    /// Another special operand code (apertures 235..=238, `vccz` 251, `execz` 252, `scc`
    /// 253, `pops_exiting_wave_id` 239).
    Special(u16),
}

/// The bits of an instruction beyond its operands (what each means depends on the encoding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modifiers {
    /// VOP3 `abs` per source.
    pub abs: [bool; 3],
    /// VOP3 `neg` per source.
    pub neg: [bool; 3],
    /// VOP3 `clamp`.
    pub clamp: bool,
    /// VOP3 output modifier: 0 none, 1 ×2, 2 ×4, 3 ÷2.
    pub omod: u8,
    /// VOP3 `op_sel` bits (printed only, the interpreter rejects non-zero); VOP3P: per
    /// source, take the high half for the low result.
    pub op_sel: u8,
    /// VOP3P `op_sel_hi` per source (bit i): take the high half for the high result.
    pub op_sel_hi: u8,
    /// VOP3P `neg_hi` per source (bit i): negate the source of the high result (`neg` is
    /// VOP3P's `neg_lo`).
    pub neg_hi: u8,
    /// FLAT `glc` (gfx942: `sc0`).
    pub glc: bool,
    /// FLAT `slc` (gfx942: `nt`).
    pub slc: bool,
    /// FLAT bit 25: gfx942 `sc1`, gfx90a `scc`.
    pub sc1: bool,
    /// DS `gds`.
    pub gds: bool,
    /// SMEM `glc`.
    pub smem_glc: bool,
    /// SMEM `soe` with `imm`: the offset is the SGPR `src[1]` plus the immediate `imm`.
    pub smem_soe: bool,
    /// MUBUF `offen`: the VGPR address holds a byte offset.
    pub offen: bool,
    /// MUBUF `idxen`: the VGPR address holds an index (first, when both are set).
    pub idxen: bool,
    /// MUBUF `lds`: the data of a load goes to LDS (`buffer_store_lds_dword`: comes from
    /// LDS) at M0 + offset + lane × 4 instead of VGPRs.
    pub lds: bool,
    /// MTBUF `dfmt` (bits 3:0) and `nfmt` (bits 6:4): the buffer data and numeric format.
    pub format: u8,
    /// MIMG `dmask`: the components (X, Y, Z, W = bits 0..3) loaded, stored or sampled; an
    /// atomic's data (1 = 32-bit, 3 = 32-bit compare-swap pair).
    pub dmask: u8,
    /// MIMG `unorm`: the coordinates of a sample are in texels, not in [0, 1].
    pub unorm: bool,
    /// MIMG `da`: the image is an array (the last address component is the slice).
    pub da: bool,
    /// MIMG `a16` (gfx9's use of the `r128` bit): 16-bit address components.
    pub a16: bool,
    /// MIMG `tfe` (gfx900..gfx908; gfx90a reads the bit as `acc`): texture-fail status in
    /// one more VGPR.
    pub tfe: bool,
    /// MIMG `lwe`: LOD-warning status (with `tfe`).
    pub lwe: bool,
    /// MIMG `d16`: 16-bit data, two components per VGPR.
    pub d16: bool,
    /// VOP1/VOP2/VOPC in the SDWA form (sub-dword selects), with its fields.
    pub sdwa: Option<Sdwa>,
    /// VOP1/VOP2 in the DPP form (data-parallel lane moves of src0), with its fields.
    pub dpp: Option<Dpp>,
    /// MFMA `cbsz` (VOP3P-MAI bits `[10:8]`): A-matrix blocks broadcast in groups of
    /// 2^`cbsz`.
    pub cbsz: u8,
    /// MFMA `abid` (bits `[14:11]`): the block of each group whose A matrix is broadcast.
    pub abid: u8,
    /// MFMA `blgp` (bits `[63:61]`): the B-matrix lane-group pattern (gfx940 f64: `neg` of A,
    /// B, C).
    pub blgp: u8,
    /// gfx950's scaled MFMA: the scale operands (`None` for every other instruction).
    pub scale: Option<MfmaScale>,
}

/// The scale half of gfx950's 16-byte scaled MFMAs (`v_mfma_scale_f32_16x16x128_f8f6f4`,
/// `v_mfma_scale_f32_32x32x64_f8f6f4`: a `v_mfma_ld_scale_b32` word pair, then the f8f6f4
/// MFMA with `abid` 1; CDNA4 ISA §7.2.1): where A's and B's E8M0 scales come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MfmaScale {
    /// The VGPR holding A's scales (the prefix's `src0`).
    pub a: Operand,
    /// The VGPR holding B's scales (the prefix's `src1`).
    pub b: Operand,
    /// The prefix's `op_sel[1:0]`: the low bit of A's (bit 0) and B's (bit 1) byte select.
    pub op_sel: u8,
    /// The prefix's `op_sel_hi[1:0]`: the high bit of A's (bit 0) and B's (bit 1) byte
    /// select.
    pub op_sel_hi: u8,
}

impl MfmaScale {
    /// Which byte of the scale register matrix `m` (0 A, 1 B) uses: `{op_sel_hi[m],
    /// op_sel[m]}` (§7.2.1's 2-bit OPSEL code).
    pub fn byte(&self, m: u8) -> u32 {
        u32::from(self.op_sel_hi >> m & 1) << 1 | u32::from(self.op_sel >> m & 1)
    }
}

impl Modifiers {
    /// gfx950's `v_bitop3_b16/b32` truth table (8 bits, `bitop3:` in LLVM's text): bits 0..2
    /// sit in the VOP3 `neg` field, 3..5 in `abs`, 6..7 in `omod` (LLVM 22's gfx950 encoding;
    /// CDNA4 ISA, VOP3 `V_BITOP3_B32`). Result bit i of the instruction is this table's bit
    /// number `(a_i << 2) | (b_i << 1) | c_i`.
    pub fn bitop3_table(&self) -> u8 {
        let bits = |b: [bool; 3]| (0..3).fold(0u8, |a, k| a | u8::from(b[k]) << k);
        bits(self.neg) | bits(self.abs) << 3 | self.omod << 6
    }
}

/// A sub-dword selection of SDWA: which bits of a 32-bit register an operand or the result
/// is (Vega ISA §12.6 "SDWA": `SDWA_SEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdwaSel {
    /// Bits 7:0, 15:8, 23:16 or 31:24 (0..=3).
    Byte(u8),
    /// Bits 15:0 or 31:16 (0..=1).
    Word(u8),
    /// All 32 bits.
    Dword,
}

impl SdwaSel {
    fn from_field(v: u32) -> Option<SdwaSel> {
        Some(match v {
            0..=3 => SdwaSel::Byte(v as u8),
            4 | 5 => SdwaSel::Word(v as u8 - 4),
            6 => SdwaSel::Dword,
            _ => return None,
        })
    }

    /// (shift, bit count) of the selection.
    pub const fn bits(self) -> (u32, u32) {
        match self {
            SdwaSel::Byte(b) => (8 * b as u32, 8),
            SdwaSel::Word(h) => (16 * h as u32, 16),
            SdwaSel::Dword => (0, 32),
        }
    }
}

/// The SDWA second dword (Vega ISA §12.6): operand selects and sign extension, the result's
/// select and what happens to the destination bits outside it. `abs`/`neg`, `clamp` and
/// `omod` live in [`Modifiers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    /// Where the result goes in the destination (VOP1/VOP2).
    pub dst_sel: SdwaSel,
    /// The destination bits outside `dst_sel`: 0 pad with zeros, 1 sign-extend the result,
    /// 2 preserve.
    pub dst_unused: u8,
    /// Per source (0, 1): the selected bits.
    pub src_sel: [SdwaSel; 2],
    /// Per source: sign-extend (`sext`) the selected bits instead of zero-extending.
    pub sext: [bool; 2],
}

/// The DPP second dword (Vega ISA §12.7 "DPP"): which lane each lane's src0 comes from, and
/// which lanes write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    /// `DPP_CTRL`: quad_perm (0x00..=0xFF), row_shl/shr/ror (0x101.., 0x111.., 0x121..),
    /// wave_shl/rol/shr/ror (0x130/0x134/0x138/0x13C), row_mirror (0x140),
    /// row_half_mirror (0x141), row_bcast:15/31 (0x142/0x143), gfx90a row_newbcast
    /// (0x150..=0x15F).
    pub ctrl: u16,
    /// `BOUND_CTRL`: a source lane out of range or disabled reads 0 (else the lane keeps
    /// its destination).
    pub bound_ctrl: bool,
    /// Rows (16 lanes) whose lanes write.
    pub row_mask: u8,
    /// Banks (lanes 4k..4k+3 of each row) whose lanes write.
    pub bank_mask: u8,
    /// `src1_neg` (bit 22) of an integer second source (`v_ldexp_f16`'s i16 exponent), which
    /// llvm-mc decodes as `sext(...)`. The interpreter reads that source as an i16 anyway, so
    /// it changes nothing there.
    pub src1_sext: bool,
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The table entry: mnemonic and operand widths.
    pub info: &'static OpInfo,
    /// The encoding actually used (`Vop3` for a promoted VOP1/VOP2/VOPC opcode).
    pub encoding: Encoding,
    /// The target it was decoded for.
    pub target: Gfx9Target,
    /// Size in bytes: 4 or 8 (16 for gfx950's scaled MFMAs).
    pub size: u8,
    /// Destination (VGPR, SGPR, or `None`; DS/FLAT: the returned data).
    pub dst: Operand,
    /// Second destination: VOP3b/VOPC-promoted carry or mask SGPR pair; VOP2 carry forms: VCC.
    pub sdst: Operand,
    /// Sources. SMEM: base pair, offset; DS: address, data0, data1; FLAT: address (`None` =
    /// `off`), data, scalar base or offset (`None` = `off`); MUBUF: address (`None` = `off`),
    /// data (stores and atomics), the 4-SGPR buffer resource; MIMG: the first address VGPR
    /// (one register, as llvm-objdump prints it: how many the instruction reads follows the
    /// image's type in the T#), data (stores and atomics), the 8-SGPR image resource (T#).
    pub src: [Operand; 3],
    /// MUBUF: the scalar byte offset `soffset` (an SGPR or inline constant); MIMG
    /// `image_sample*`: the 4-SGPR sampler (S#); `None` otherwise.
    pub soffset: Operand,
    /// Modifier bits.
    pub mods: Modifiers,
    /// SOPP/SOPK 16-bit immediate; SMEM/FLAT byte offset; DS `offset0 | offset1 << 8`.
    pub imm: i32,
}

impl Instruction {
    /// The instruction (its attributes: [`Op::attrs`]).
    #[inline]
    pub fn op(&self) -> Op {
        self.info.op
    }

    /// The mnemonic without encoding suffix, e.g. `"v_add_co_u32"`.
    pub fn name(&self) -> &'static str {
        self.info.name
    }

    /// Where a branch at byte address `address` goes: for `s_branch` and the `s_cbranch_*`
    /// instructions, `address + 4 + simm16 * 4` (wrapping); `None` for every other
    /// instruction.
    ///
    /// Ref: Vega ISA §4.4 "Branching" and the SOPP table (`S_BRANCH`:
    /// `PC = PC + signext(SIMM16 * 4) + 4`).
    pub fn branch_target(&self, address: u64) -> Option<u64> {
        let name = self.info.name;
        let branch = self.encoding == Encoding::Sopp
            && (name == "s_branch" || name.starts_with("s_cbranch_"))
            || name == "s_call_b64";
        branch.then(|| {
            address
                .wrapping_add(4)
                .wrapping_add((i64::from(self.imm) * 4) as u64)
        })
    }
}

fn illegal(enc: &str, words: &[u32], why: &str) -> Error {
    match words {
        [a] => hsa_core::error!(Status::IllegalInstruction, "{enc} {a:#010x}: {why}"),
        [a, b, ..] => {
            hsa_core::error!(
                Status::IllegalInstruction,
                "{enc} {a:#010x} {b:#010x}: {why}"
            )
        }
        [] => hsa_core::error!(Status::IllegalInstruction, "{enc}: {why}"),
    }
}

fn word(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(i * 4..i * 4 + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes one instruction at the start of `bytes` for `target`.
///
/// # Errors
/// [`Status::IllegalInstruction`] naming the encoding and dword(s) when the bytes are too short
/// for the encoding, the encoding is not one of the supported formats (EXP, VINTRP), or
/// the opcode is not in the table for `target` (MIMG on gfx942 among them).
pub fn decode(bytes: &[u8], target: Gfx9Target) -> Result<Instruction> {
    let inst = decode_fields(bytes, target)?;
    check_vector_tuples(&inst, bytes)?;
    Ok(inst)
}

/// The vector-register ranges of a decoded instruction must lie in the 256-register file
/// (llvm-mc rejects a range past v255/a255). On gfx950 a VGPR tuple (two or more registers)
/// must also start at an even register, as LLVM 22 decodes gfx950 (its `*_Align2` register
/// classes; the gfx90a and later ISA guides ask even-aligned VGPR tuples), but for a buffer
/// instruction's address pair, which it decodes at any register. Odd-aligned tuples on
/// gfx90a/gfx942 are decoded, as LLVM 19's llvm-mc decodes them.
fn check_vector_tuples(inst: &Instruction, bytes: &[u8]) -> Result<()> {
    let ops = [inst.dst, inst.sdst, inst.src[0], inst.src[1], inst.src[2]];
    let aligned = inst.target == Gfx9Target::Gfx950;
    let buffer = matches!(inst.encoding, Encoding::Mubuf | Encoding::Mtbuf);
    for (k, op) in ops.into_iter().enumerate() {
        let (Operand::Vgpr { index, count } | Operand::Agpr { index, count }) = op else {
            continue;
        };
        // LLVM 22 asks even alignment of VGPR tuples but a buffer instruction's address pair
        // (src[0], `idxen offen`); it decodes odd AGPR tuples of memory data.
        let must_align =
            aligned && count >= 2 && matches!(op, Operand::Vgpr { .. }) && !(buffer && k == 2);
        let why = if u32::from(index) + u32::from(count) > 256 {
            "register range beyond the register file"
        } else if must_align && index % 2 == 1 {
            "odd-aligned register tuple (gfx950 needs even-aligned ones)"
        } else {
            continue;
        };
        let w: heapless::Vec<u32, 2> = (0..usize::from(inst.size) / 4)
            .filter_map(|i| word(bytes, i))
            .take(2)
            .collect();
        return Err(illegal(inst.encoding.name(), &w, why));
    }
    Ok(())
}

fn decode_fields(bytes: &[u8], target: Gfx9Target) -> Result<Instruction> {
    let Some(w0) = word(bytes, 0) else {
        return Err(hsa_core::error!(
            Status::IllegalInstruction,
            "truncated instruction: {} bytes left",
            bytes.len()
        ));
    };
    let w1 = word(bytes, 1);
    let need_w1 = |enc: &str| -> Result<u32> {
        w1.ok_or_else(|| illegal(enc, &[w0], "second dword missing"))
    };
    let mut inst = Instruction {
        info: &OPCODES[0],
        encoding: Encoding::Sopp,
        target,
        size: 4,
        dst: Operand::None,
        sdst: Operand::None,
        src: [Operand::None; 3],
        soffset: Operand::None,
        mods: Modifiers::default(),
        imm: 0,
    };
    let find = |enc: Encoding, op: u32, words: &[u32]| -> Result<&'static OpInfo> {
        lookup(enc, op as u16, target).ok_or_else(|| {
            let mut msg: heapless::String<48> = heapless::String::new();
            let _ = core::fmt::write(
                &mut msg,
                format_args!("unknown opcode {op} for {}", target.name()),
            );
            illegal(enc.name(), words, &msg)
        })
    };
    if w0 >> 30 == 0b10 {
        // Scalar ALU family.
        let top9 = w0 >> 23;
        if top9 == 0x17D {
            let info = find(Encoding::Sop1, (w0 >> 8) & 0xFF, &[w0])?;
            inst.info = info;
            inst.encoding = Encoding::Sop1;
            inst.dst = sreg_operand(info.widths[0], w0 >> 16 & 0x7F, "SOP1", w0)?;
            inst.src[0] = scalar_src(info.widths[1], w0 & 0xFF, w1, &mut inst.size, "SOP1", w0)?;
            let register_only = matches!(
                info.name,
                "s_setpc_b64" | "s_rfe_b64" | "s_movrels_b32" | "s_movrels_b64"
            );
            if register_only && !matches!(inst.src[0], Operand::Sreg { .. }) {
                // These read an SGPR (llvm-mc: "Invalid immediate" for a constant).
                return Err(illegal("SOP1", &[w0], "source is not an SGPR"));
            }
            // s_cbranch_join's SSRC0 is a 32-bit scalar register (llvm's SReg_32: SGPRs,
            // VCC, M0, EXEC, ttmps and the special sources vccz/execz/scc/apertures); a
            // constant or literal is "Invalid immediate" to llvm-mc.
            if info.name == "s_cbranch_join"
                && !matches!(inst.src[0], Operand::Sreg { .. } | Operand::Special(_))
            {
                return Err(illegal(
                    "SOP1",
                    &[w0],
                    "s_cbranch_join source is a constant",
                ));
            }
        } else if top9 == 0x17E {
            let info = find(Encoding::Sopc, (w0 >> 16) & 0x7F, &[w0])?;
            inst.info = info;
            inst.encoding = Encoding::Sopc;
            inst.src[0] = scalar_src(info.widths[1], w0 & 0xFF, w1, &mut inst.size, "SOPC", w0)?;
            if info.name == "s_set_gpr_idx_on" {
                // SSRC1 holds the raw operand mask (Vega ISA S_SET_GPR_IDX_ON: S1[0..3] =
                // VSRC0_REL, VSRC1_REL, VSRC2_REL, VDST_REL), not a source.
                inst.imm = (w0 >> 8 & 0xFF) as i32;
                return Ok(inst);
            }
            inst.src[1] = scalar_src(
                info.widths[2],
                w0 >> 8 & 0xFF,
                w1,
                &mut inst.size,
                "SOPC",
                w0,
            )?;
        } else if top9 == 0x17F {
            let info = find(Encoding::Sopp, (w0 >> 16) & 0x7F, &[w0])?;
            inst.info = info;
            inst.encoding = Encoding::Sopp;
            inst.imm = (w0 & 0xFFFF) as u16 as i16 as i32;
            let no_operand = matches!(
                info.name,
                "s_barrier"
                    | "s_endpgm_saved"
                    | "s_wakeup"
                    | "s_icache_inv"
                    | "s_ttracedata"
                    | "s_endpgm_ordered_ps_done"
                    | "s_set_gpr_idx_off"
                    | "s_code_end"
            );
            if no_operand && inst.imm != 0 {
                // No immediate operand: the field is 0 (llvm-mc rejects others).
                return Err(illegal(
                    "SOPP",
                    &[w0],
                    "immediate of an instruction without one",
                ));
            }
        } else if w0 >> 28 == 0xB {
            let info = find(Encoding::Sopk, (w0 >> 23) & 0x1F, &[w0])?;
            inst.info = info;
            inst.encoding = Encoding::Sopk;
            inst.imm = (w0 & 0xFFFF) as u16 as i16 as i32;
            match info.name {
                // The SDST field is the source of s_setreg_b32; s_setreg_imm32_b32 takes a
                // 32-bit literal instead (Vega ISA SOPK opcode table).
                "s_setreg_b32" => inst.src[0] = sreg_operand(1, w0 >> 16 & 0x7F, "SOPK", w0)?,
                "s_setreg_imm32_b32" => {
                    let lit = need_w1("SOPK")?;
                    // Values of inline constants are those constants (llvm-objdump prints
                    // them so: `3`, `-16`, `1.0`).
                    let f = super::exec::F32_CONST.iter().position(|&c| c == lit);
                    inst.src[0] = match (lit as i32, f) {
                        (v @ -16..=64, _) => Operand::InlineInt(v as i8),
                        (_, Some(k)) => Operand::InlineFloat(240 + k as u8),
                        _ => Operand::Literal(lit),
                    };
                    inst.size = 8;
                }
                // s_call_b64's is the SGPR pair that receives the return address.
                _ => inst.dst = sreg_operand(info.widths[0], w0 >> 16 & 0x7F, "SOPK", w0)?,
            }
        } else {
            let info = find(Encoding::Sop2, (w0 >> 23) & 0x7F, &[w0])?;
            inst.info = info;
            inst.encoding = Encoding::Sop2;
            inst.dst = sreg_operand(info.widths[0], w0 >> 16 & 0x7F, "SOP2", w0)?;
            inst.src[0] = scalar_src(info.widths[1], w0 & 0xFF, w1, &mut inst.size, "SOP2", w0)?;
            inst.src[1] = scalar_src(
                info.widths[2],
                w0 >> 8 & 0xFF,
                w1,
                &mut inst.size,
                "SOP2",
                w0,
            )?;
        }
        return Ok(inst);
    }
    if w0 >> 31 == 0 {
        // VOP1 / VOPC / VOP2 (32-bit VALU encodings).
        let (enc, op) = match w0 >> 25 {
            0x3F => (Encoding::Vop1, (w0 >> 9) & 0xFF),
            0x3E => (Encoding::Vopc, (w0 >> 17) & 0xFF),
            op => (Encoding::Vop2, op),
        };
        let src0 = w0 & 0x1FF;
        let info = find(enc, op, &[w0])?;
        inst.info = info;
        inst.encoding = enc;
        if info.name == "v_accvgpr_mov_b32" {
            // VOP1 only (no SDWA, DPP or VOP3 form): AGPR to AGPR.
            inst.src[0] = vector_range(src0, 1, true, &[w0], "v_accvgpr_mov_b32 source")?;
            inst.dst = Operand::Agpr {
                index: (w0 >> 17 & 0xFF) as u8,
                count: 1,
            };
            return Ok(inst);
        }
        if has_literal_k(info.name) {
            return vop2_literal_k(inst, w0, need_w1("VOP2")?);
        }
        if info.op == Op::VSwapB32 {
            // VOP1 only (no SDWA, DPP or VOP3 form), both operands VGPRs (llvm-mc: an SGPR
            // or constant source is an invalid register or immediate).
            if src0 < 0x100 {
                return Err(illegal("VOP1", &[w0], "source is not a VGPR"));
            }
            inst.src[0] = vgpr(1, src0 & 0xFF);
            inst.dst = vgpr(1, w0 >> 17 & 0xFF);
            return Ok(inst);
        }
        if src0 == 0xF9 || src0 == 0xFA {
            let w1 = need_w1(if src0 == 0xF9 { "SDWA" } else { "DPP" })?;
            sdwa_dpp(&mut inst, w0, w1, target)?;
        } else {
            inst.src[0] = vector_src(info.widths[1], src0, w1, &mut inst.size, enc.name(), w0)?;
        }
        match enc {
            Encoding::Vop1 => {
                if info.widths[0] == 0 && w0 & 0x01FE_01FF != 0 {
                    // v_nop and the like: no operands, the fields are 0.
                    return Err(illegal("VOP1", &[w0], "operand field of v_nop not 0"));
                }
                if info.has(F_SDST) && !matches!(inst.src[0], Operand::Vgpr { .. }) {
                    // v_readfirstlane_b32 reads a VGPR (llvm-mc: `VRegOrLds_32`).
                    return Err(illegal("VOP1", &[w0], "source is not a VGPR"));
                }
                if info.widths[0] > 0 {
                    inst.dst = if info.has(F_SDST) {
                        sreg_operand(1, w0 >> 17 & 0xFF, "VOP1", w0)?
                    } else {
                        vgpr(info.widths[0], w0 >> 17 & 0xFF)
                    };
                } else {
                    inst.src[0] = Operand::None;
                }
            }
            Encoding::Vopc => {
                if inst.sdst == Operand::None {
                    inst.sdst = Operand::Sreg {
                        index: 106,
                        count: 2,
                    };
                }
                if inst.src[1] == Operand::None {
                    inst.src[1] = vgpr(info.widths[2], w0 >> 9 & 0xFF);
                }
            }
            _ => {
                inst.dst = vgpr(info.widths[0], w0 >> 17 & 0xFF);
                if inst.src[1] == Operand::None {
                    inst.src[1] = vgpr(info.widths[2], w0 >> 9 & 0xFF);
                }
                if info.has(F_CO | F_CI) {
                    inst.sdst = Operand::Sreg {
                        index: 106,
                        count: 2,
                    };
                }
                if info.has(F_CI | F_CND) {
                    inst.src[2] = Operand::Sreg {
                        index: 106,
                        count: 2,
                    };
                }
            }
        }
        return Ok(inst);
    }
    match w0 >> 26 {
        0x30 => {
            let w1 = need_w1("SMEM")?;
            let info = find(Encoding::Smem, (w0 >> 18) & 0xFF, &[w0, w1])?;
            inst.info = info;
            inst.encoding = Encoding::Smem;
            inst.size = 8;
            // SOE (bit 14): an SGPR offset in w1[31:25] added to the immediate; only with IMM
            // (the form compilers emit, `s2 offset:0x4`); SOE without IMM, which llvm-mc-19
            // prints as the SGPR alone, ignoring the offset field, is refused.
            let soe = w0 >> 14 & 1 != 0;
            if soe && w0 >> 17 & 1 == 0 {
                return Err(illegal(
                    "SMEM",
                    &[w0, w1],
                    "soe (SGPR offset) without imm unsupported",
                ));
            }
            inst.dst = sreg_operand(info.widths[0], w0 >> 6 & 0x7F, "SMEM", w0)?;
            if let Operand::Sreg { index, count } = inst.dst {
                if u32::from(index) + u32::from(count) > 124 {
                    // Loads write neither m0 nor exec (llvm-mc: `SReg_32_XM0_XEXEC`).
                    return Err(illegal("SMEM", &[w0, w1], "destination is m0 or exec"));
                }
            }
            let probe = matches!(info.op, Op::SAtcProbe | Op::SAtcProbeBuffer);
            let discard = matches!(info.op, Op::SDcacheDiscard | Op::SDcacheDiscardX2);
            if probe {
                // The SDATA field is the probe level, an immediate 0..=127 (llvm-objdump
                // prints it as a number: decimal up to 64, hexadecimal above, as it prints
                // an inline constant and a literal).
                let level = w0 >> 6 & 0x7F;
                inst.dst = if level <= 64 {
                    Operand::InlineInt(level as i8)
                } else {
                    Operand::Literal(level)
                };
            }
            let class = info.op.attrs().class;
            if class == Class::SmemClock || class == Class::SmemCache && !probe && !discard {
                // No address: the sources stay None, the base and offset fields are ignored
                // (and s_dcache_*'s SDATA and GLC), but the IMM bit must be clear (llvm-mc-19
                // rejects the word otherwise).
                if w0 >> 17 & 1 != 0 {
                    return Err(illegal(
                        "SMEM",
                        &[w0, w1],
                        "IMM set on an instruction without an offset",
                    ));
                }
                return Ok(inst);
            }
            // SBASE: an SGPR pair (address), or a quad (V#) for the s_buffer_ forms.
            let base_dwords =
                if info.op.attrs().class == Class::SmemBuffer || info.op == Op::SAtcProbeBuffer {
                    4
                } else {
                    2
                };
            inst.src[0] = sreg_operand(base_dwords, (w0 & 0x3F) << 1, "SMEM", w0)?;
            // GLC is a cache policy of loads, stores and atomics; the probes and discards
            // ignore the bit (llvm-objdump prints no `glc` on them).
            inst.mods.smem_glc = w0 >> 16 & 1 != 0 && !probe && !discard;
            if w0 >> 17 & 1 != 0 {
                inst.imm = (w1 & 0xF_FFFF) as i32;
                // 21-bit signed offset on GFX9: bit 20 is the sign.
                if w1 & 0x10_0000 != 0 {
                    inst.imm = ((w1 & 0x1F_FFFF) | 0xFFE0_0000) as i32;
                }
                if soe {
                    inst.src[1] = sreg_operand(1, w1 >> 25, "SMEM", w0)?;
                    inst.mods.smem_soe = true;
                }
            } else {
                inst.src[1] = sreg_operand(1, w1 & 0xFF, "SMEM", w0)?;
            }
            Ok(inst)
        }
        0x34 => {
            let w1 = need_w1("VOP3")?;
            if w0 >> 23 == 0x1A7 {
                if w0 >> 16 & 0x7F == 44 && target == Gfx9Target::Gfx950 {
                    return mfma_ld_scale(inst, [w0, w1], word(bytes, 2).zip(word(bytes, 3)));
                }
                return vop3p(inst, w0, w1, target);
            }
            let op = (w0 >> 16) & 0x3FF;
            let (enc, sub) = match op {
                0..=0xFF => (Encoding::Vopc, op),
                0x100..=0x13F => (Encoding::Vop2, op - 0x100),
                0x140..=0x1BF => (Encoding::Vop1, op - 0x140),
                _ => (Encoding::Vop3, op),
            };
            let info = find(enc, sub, &[w0, w1])?;
            let pk_fmac_vop2_only = info.op == Op::VPkFmacF16 && target != Gfx9Target::Gfx950;
            if has_literal_k(info.name) || pk_fmac_vop2_only || info.op == Op::VSwapB32 {
                // VOP2 only (llvm-mc: "e64 variant of this instruction is not supported").
                // LLVM 22 decodes v_pk_fmac_f16's VOP3 form (`_e64`), LLVM 19 does not: gfx950
                // follows LLVM 22, the older targets LLVM 19.
                return Err(illegal("VOP3", &[w0, w1], "no VOP3 form of this opcode"));
            }
            if info.is_mai() {
                return Err(illegal(
                    "VOP3",
                    &[w0, w1],
                    "no VOP3 form of v_accvgpr_mov_b32",
                ));
            }
            inst.info = info;
            inst.encoding = Encoding::Vop3;
            inst.size = 8;
            let vop3b = info.has(F_B | F_CO | F_CI) || enc == Encoding::Vopc;
            let vdst = w0 & 0xFF;
            if enc == Encoding::Vopc {
                inst.sdst = sreg_operand(2, vdst, "VOP3", w0)?;
            } else if info.has(F_SDST) {
                inst.dst = sreg_operand(1, vdst, "VOP3", w0)?;
            } else if info.widths[0] > 0 {
                inst.dst = vgpr(info.widths[0], vdst);
            }
            if vop3b && enc != Encoding::Vopc {
                inst.sdst = sreg_operand(2, w0 >> 8 & 0x7F, "VOP3", w0)?;
            } else {
                // VOP3a, VOPC's included (its SGPR-pair destination is the vdst field): the
                // sources' abs bits.
                for i in 0..3 {
                    inst.mods.abs[i] = w0 >> (8 + i) & 1 != 0;
                }
                if enc != Encoding::Vopc {
                    inst.mods.op_sel = (w0 >> 11 & 0xF) as u8;
                }
            }
            inst.mods.clamp = w0 >> 15 & 1 != 0;
            inst.mods.omod = (w1 >> 27 & 3) as u8;
            for i in 0..3 {
                inst.mods.neg[i] = w1 >> (29 + i) & 1 != 0;
            }
            let mut size = 8u8;
            let nsrc = if enc == Encoding::Vop1 { 1 } else { 3 };
            for i in 0..3 {
                let code = w1 >> (9 * i) & 0x1FF;
                let mut width = info.widths[i + 1];
                if i >= nsrc || width == 0 {
                    // A source the opcode does not have: its field and modifiers are 0
                    // (llvm-mc rejects others), but for gfx950's v_pk_fmac_f16_e64, whose
                    // src2 field LLVM 22 ignores.
                    let ignored = info.op == Op::VPkFmacF16;
                    if code != 0 && !ignored || inst.mods.neg[i] || inst.mods.abs[i] {
                        return Err(illegal("VOP3", &[w0, w1], "unused source field not 0"));
                    }
                    continue;
                }
                if i == 2 && info.has(F_CND | F_CI) {
                    width = 2;
                }
                let op = vector_src(width, code, None, &mut size, "VOP3", w0)?;
                if matches!(op, Operand::Literal(_)) {
                    return Err(illegal("VOP3", &[w0, w1], "literal operand not allowed"));
                }
                inst.src[i] = op;
            }
            if info.has(F_CND | F_CI)
                && !matches!(inst.src[2], Operand::Sreg { index, .. } if index != 126)
            {
                // The carry-in or lane mask is an SGPR pair other than exec.
                return Err(illegal("VOP3", &[w0, w1], "lane mask is not an SGPR pair"));
            }
            // op_sel: the VOP3-only 16-bit opcodes but the gfx8 (legacy) ones, and those whose
            // `op_sel_operands` attribute says so (the FP8/BF8 packs, whose bits say where the
            // result goes, and gfx950's additions listed there); llvm-mc ignores the bits
            // of the others (and so does the decoder). With two sources op_sel[2] names no
            // operand (llvm-mc rejects the word) but for v_cvt_sr_* and gfx950's
            // v_cvt_scalef32_pk_fp4_{f16,bf16}, whose op_sel[3:2] are the result's byte.
            let op_sel_kept = match info.op {
                Op::VMadLegacyF16
                | Op::VMadLegacyU16
                | Op::VMadLegacyI16
                | Op::VFmaLegacyF16
                | Op::VDivFixupLegacyF16 => false,
                op if op.attrs().op_sel_operands => true,
                _ => info.has(F_NONAME) && super::disasm::sources16(info.name).is_some(),
            };
            if matches!(info.op, Op::VPermlane16SwapB32 | Op::VPermlane32SwapB32)
                && inst.mods.op_sel & 0xC != 0
            {
                return Err(illegal(
                    "VOP3",
                    &[w0, w1],
                    "op_sel[3:2] of a lane swap (only fi and bound_ctrl)",
                ));
            }
            if !op_sel_kept {
                inst.mods.op_sel = 0;
            } else if inst.src[2] == Operand::None
                && inst.mods.op_sel & 4 != 0
                && !matches!(
                    info.op,
                    Op::VCvtSrFp8F32
                        | Op::VCvtSrBf8F32
                        | Op::VCvtScalef32PkFp4F16
                        | Op::VCvtScalef32PkFp4Bf16
                )
            {
                return Err(illegal(
                    "VOP3",
                    &[w0, w1],
                    "op_sel[2] of a two-source opcode",
                ));
            }
            if info.op == Op::VCvtPkU8F32 {
                // S1 (the byte index) and S2 (the packed dword) are integers: llvm-mc ignores
                // their abs bits and reads their neg bits as `sext` (a no-op on a 32-bit
                // value; kept only to be printed), and refuses an output modifier.
                if inst.mods.omod != 0 {
                    return Err(illegal(
                        "VOP3",
                        &[w0, w1],
                        "output modifier on v_cvt_pk_u8_f32",
                    ));
                }
                inst.mods.abs[1] = false;
                inst.mods.abs[2] = false;
            }
            vop3_modifiers_allowed(&inst, enc, &[w0, w1])?;
            Ok(inst)
        }
        0x36 => {
            let w1 = need_w1("DS")?;
            let info = find(Encoding::Ds, (w0 >> 17) & 0xFF, &[w0, w1])?;
            inst.info = info;
            inst.encoding = Encoding::Ds;
            inst.size = 8;
            inst.imm = (w0 & 0xFFFF) as i32;
            inst.mods.gds = w0 >> 16 & 1 != 0;
            if inst.mods.gds && info.name.contains("permute") {
                // ds_permute/ds_bpermute have no GDS form (llvm-mc rejects the bit).
                return Err(illegal("DS", &[w0, w1], "gds on a lane permute"));
            }
            let acc = w0 >> 25 & 1 != 0 && target.has_acc_memory_operands();
            let data_reg = |w: u8, idx: u32| {
                if acc {
                    Operand::Agpr {
                        index: idx as u8,
                        count: w,
                    }
                } else {
                    vgpr(w, idx)
                }
            };
            // Fields of operands the opcode does not have must be 0 (llvm-mc rejects others).
            for (k, &w) in info.widths.iter().enumerate() {
                let shift = [24, 0, 8, 16][k];
                if w == 0 && w1 >> shift & 0xFF != 0 {
                    return Err(illegal("DS", &[w0, w1], "unused operand field not 0"));
                }
            }
            if info.widths[1] > 0 {
                inst.src[0] = vgpr(info.widths[1], w1 & 0xFF);
            }
            if info.op.attrs().class == Class::DsGws {
                // The GWS instructions are GDS ones whatever the bit says (llvm-mc decodes
                // them without it and prints `gds`).
                inst.mods.gds = true;
            }
            if info.widths[2] > 0 {
                inst.src[1] = data_reg(info.widths[2], w1 >> 8 & 0xFF);
            }
            if info.widths[3] > 0 {
                inst.src[2] = data_reg(info.widths[3], w1 >> 16 & 0xFF);
            }
            if info.widths[0] > 0 {
                inst.dst = data_reg(info.widths[0], w1 >> 24);
            }
            Ok(inst)
        }
        0x37 => {
            let w1 = need_w1("FLAT")?;
            let seg = w0 >> 14 & 3;
            let info = find(Encoding::Flat, (w0 >> 18) & 0x7F, &[w0, w1])?;
            let want = match seg {
                0 => "flat_",
                1 => "scratch_",
                2 => "global_",
                _ => return Err(illegal("FLAT", &[w0, w1], "reserved segment 3")),
            };
            // flat_ and global_ share opcode numbers: pick the row with the segment's prefix.
            let info = lookup_where(Encoding::Flat, info.opcode, target, |o| {
                o.name.starts_with(want)
            })
            .ok_or_else(|| illegal("FLAT", &[w0, w1], "unknown opcode for segment"))?;
            inst.info = info;
            inst.encoding = Encoding::Flat;
            inst.size = 8;
            // Bit 13: `lds` on gfx900/gfx90a; gfx940's scratch `sve` (a VGPR address is used).
            let sve = seg == 1 && target.is_gfx940() && w0 >> 13 & 1 != 0;
            if w0 >> 13 & 1 != 0 && !sve {
                return Err(illegal("FLAT", &[w0, w1], "lds bit unsupported"));
            }
            // 13-bit signed offset for global and scratch (GFX9); flat's is unsigned (llvm-mc
            // reads all 13 bits).
            inst.imm = if seg != 0 {
                (((w0 & 0x1FFF) << 19) as i32) >> 19
            } else {
                (w0 & 0x1FFF) as i32
            };
            if seg == 0 && w1 >> 16 & 0x7F != 0 {
                // Flat has no scalar address: the field is 0 (llvm-mc rejects others).
                return Err(illegal("FLAT", &[w0, w1], "saddr of flat not 0"));
            }
            inst.mods.glc = w0 >> 16 & 1 != 0;
            inst.mods.slc = w0 >> 17 & 1 != 0;
            inst.mods.sc1 = w0 >> 25 & 1 != 0 && target.has_acc_memory_operands();
            let acc = w1 >> 23 & 1 != 0 && target.has_acc_memory_operands();
            if acc && info.op.attrs().to_lds {
                // global_load_lds_*/scratch_load_lds_* write LDS: no VGPR/AGPR data for the
                // acc bit to select (llvm-mc rejects the word).
                return Err(illegal("FLAT", &[w0, w1], "acc bit on an LDS load"));
            }
            let saddr = w1 >> 16 & 0x7F;
            let has_saddr = seg != 0 && saddr != 0x7F;
            if seg == 1 {
                // Scratch: a 32-bit per-lane offset in a VGPR (gfx900/gfx90a: when there is no
                // SGPR offset; gfx942: when `sve` is set) and/or in an SGPR.
                let has_vaddr = if target.is_gfx940() { sve } else { !has_saddr };
                if has_vaddr {
                    inst.src[0] = vgpr(1, w1 & 0xFF);
                }
                if has_saddr {
                    inst.src[2] = sreg_operand(1, saddr, "FLAT", w0)?;
                }
            } else {
                inst.src[0] = vgpr(if has_saddr { 1 } else { 2 }, w1 & 0xFF);
                if has_saddr {
                    inst.src[2] = sreg_operand(2, saddr, "FLAT", w0)?;
                }
            }
            let data_reg = |w: u8, idx: u32| {
                if acc {
                    Operand::Agpr {
                        index: idx as u8,
                        count: w,
                    }
                } else {
                    vgpr(w, idx)
                }
            };
            if info.widths[1] > 0 {
                inst.src[1] = data_reg(info.widths[1], w1 >> 8 & 0xFF);
            }
            let float_atomic = info.has(F_ATOMIC) && info.op.attrs().src_fp != Fp::None;
            if float_atomic && target == Gfx9Target::Gfx90a && inst.mods.sc1 {
                // gfx90a's floating-point atomics have no scc bit (llvm-mc rejects it; the
                // integer ones take it).
                return Err(illegal("FLAT", &[w0, w1], "scc on a float atomic"));
            }
            if info.has(F_NORTN) && w1 >> 24 != 0 {
                // No returning form: the vdst field is 0 (llvm-mc rejects others).
                return Err(illegal(
                    "FLAT",
                    &[w0, w1],
                    "vdst of an atomic without return",
                ));
            }
            if info.has(F_NORTN) && inst.mods.glc {
                return Err(illegal(
                    "FLAT",
                    &[w0, w1],
                    "no returning form on this target",
                ));
            }
            let returns = !info.has(F_ATOMIC) || inst.mods.glc;
            if info.widths[0] > 0 && returns {
                inst.dst = data_reg(info.widths[0], w1 >> 24);
            }
            Ok(inst)
        }
        0x32 => Err(illegal("VINTRP", &[w0], "unsupported encoding")),
        0x31 => Err(illegal("EXP", &[w0], "unsupported encoding")),
        0x38 => {
            let w1 = need_w1("MUBUF")?;
            mubuf(inst, w0, w1, target)
        }
        0x3A => {
            let w1 = need_w1("MTBUF")?;
            mtbuf(inst, w0, w1, target)
        }
        0x3C => {
            let w1 = need_w1("MIMG")?;
            mimg(inst, w0, w1, target)
        }
        _ => Err(illegal("unknown", &[w0], "unknown encoding")),
    }
}

/// The SDWA (`src0` = 0xF9) or DPP (`src0` = 0xFA) second dword of a VOP1/VOP2/VOPC
/// instruction: sets `src[0]` (and an SGPR `src[1]` or VOPC `sdst` in SDWA), the size and
/// the modifiers. SDWA (Vega ISA §12.6): `src0` [7:0], `dst_sel` [10:8], `dst_unused`
/// [12:11], `clamp` [13], `omod` [15:14] (VOPC: `sdst` [14:8], `sd` [15]), `src0_sel` [18:16],
/// `src0_sext` [19], `src0_neg` [20], `src0_abs` [21], `s0` [23], `src1_sel` [26:24],
/// `src1_sext` [27], `src1_neg` [28], `src1_abs` [29], `s1` [31]. DPP (§12.7): `src0` [7:0],
/// `dpp_ctrl` [16:8], `bound_ctrl` [19], `src0_neg`/`abs` [20]/[21], `src1_neg`/`abs`
/// [22]/[23], `bank_mask` [27:24], `row_mask` [31:28].
fn sdwa_dpp(inst: &mut Instruction, w0: u32, w1: u32, target: Gfx9Target) -> Result<()> {
    let info = inst.info;
    let enc = inst.encoding;
    let dpp = w0 & 0x1FF == 0xFA;
    let kind = if dpp { "DPP" } else { "SDWA" };
    // The accumulating packed FMA has neither form, the accumulating dot products no SDWA
    // form (llvm-mc-19 rejects them; gfx908 ISA VOP2 opcodes 55..=60).
    if info.name == "v_pk_fmac_f16" || !dpp && info.name.starts_with("v_dot") {
        return Err(illegal(kind, &[w0, w1], "no such form of this opcode"));
    }
    // The gfx940 FP8/BF8 to f32 conversions: an SDWA form with the source select only (the
    // destination select must be DWORD; dst_unused is ignored; llvm-mc prints neither), a
    // 64-bit result for the packed ones, an 8-bit source taking `sext`, not `neg`/`abs`.
    let fp8_sdwa = matches!(
        info.op,
        Op::VCvtF32Fp8 | Op::VCvtF32Bf8 | Op::VCvtPkF32Fp8 | Op::VCvtPkF32Bf8
    );
    let dst_ok = enc == Encoding::Vopc || info.widths[0] <= 1 || fp8_sdwa && !dpp;
    if !dst_ok
        || info.widths[1..].iter().any(|&w| w > 1) && !info.has(F_CI | F_CND)
        || info.has(F_SDST)
        || info.widths[0] == 0 && enc == Encoding::Vop1
    {
        return Err(illegal(kind, &[w0, w1], "no such form of this opcode"));
    }
    inst.size = 8;
    if dpp {
        if enc == Encoding::Vopc {
            return Err(illegal(kind, &[w0, w1], "no DPP form of VOPC"));
        }
        let ctrl = (w1 >> 8 & 0x1FF) as u16;
        let valid = match ctrl {
            0x000..=0x0FF | 0x101..=0x10F | 0x111..=0x11F | 0x121..=0x12F => true,
            0x130 | 0x134 | 0x138 | 0x13C | 0x140..=0x143 => true,
            0x150..=0x15F => target == Gfx9Target::Gfx90a || target.is_gfx940(),
            _ => false,
        };
        if !valid {
            return Err(illegal(kind, &[w0, w1], "reserved dpp_ctrl"));
        }
        let float = float_sources(info.name);
        let vop1 = enc == Encoding::Vop1;
        // The integer v_dot*c accumulate: llvm-mc ignores their neg/abs bits (bits 23:20);
        // they change nothing (the mods stay clear below).
        let int_dot = matches!(
            info.op,
            Op::VDot2cI32I16 | Op::VDot4cI32I8 | Op::VDot8cI32I4
        );
        // VOP1 has no src1 modifiers; integer operands have no neg/abs (llvm-mc rejects
        // both; it ignores bits 18:17).
        if (vop1 && w1 >> 22 & 3 != 0) || (!float && !int_dot && w1 >> 20 & 0xF != 0) {
            return Err(illegal(
                kind,
                &[w0, w1],
                "neg/abs of an operand without them",
            ));
        }
        inst.src[0] = vgpr(1, w1 & 0xFF);
        // v_ldexp_f16's second source is an i16: llvm-mc decodes its neg bit as `sext` and
        // ignores its abs bit.
        let ldexp = info.name.starts_with("v_ldexp");
        let (float0, float1) = (!int_dot, !int_dot && !ldexp);
        inst.mods.neg = [
            float0 && w1 >> 20 & 1 != 0,
            float1 && w1 >> 22 & 1 != 0,
            false,
        ];
        inst.mods.abs = [
            float0 && w1 >> 21 & 1 != 0,
            float1 && w1 >> 23 & 1 != 0,
            false,
        ];
        inst.mods.dpp = Some(Dpp {
            ctrl,
            bound_ctrl: w1 >> 19 & 1 != 0,
            row_mask: (w1 >> 28) as u8,
            bank_mask: (w1 >> 24 & 0xF) as u8,
            src1_sext: ldexp && w1 >> 22 & 1 != 0,
        });
        return Ok(());
    }
    if info.name.starts_with("v_mac_")
        || info.name.starts_with("v_fmac_")
        || info.op == Op::VSatPkU8I16
    {
        // No SDWA form of the accumulating MACs and v_sat_pk_u8_i16 on GFX9 (llvm-mc
        // rejects it).
        return Err(illegal(kind, &[w0, w1], "no SDWA form of this opcode"));
    }
    let float = float_sources(info.name) && !fp8_sdwa;
    let vop1 = enc == Encoding::Vop1;
    // VOP1 has no src1 (its fields are 0); float operands have neg/abs and integer ones
    // sext; only float results have an output modifier (llvm-mc rejects the others).
    // The second source of v_cmp_class/v_ldexp is an integer.
    let float1 = float && !(info.name.contains("_class_") || info.name.starts_with("v_ldexp"));
    let bad = (vop1 && w1 >> 24 != 0)
        || (float && w1 & (1 << 19) != 0)
        || (float1 && w1 & (1 << 27) != 0)
        || (!float && w1 & (3 << 20) != 0)
        || (!float1 && w1 & (3 << 28) != 0)
        || (!float_result(info.name) && enc != Encoding::Vopc && w1 >> 14 & 3 != 0);
    if bad {
        return Err(illegal(
            kind,
            &[w0, w1],
            "modifier bits the operands do not have",
        ));
    }
    let sel = |v: u32| SdwaSel::from_field(v).ok_or_else(|| illegal(kind, &[w0, w1], "bad sel"));
    let mut size = 8u8;
    let src = |code: u32, scalar: bool, size: &mut u8| -> Result<Operand> {
        if scalar {
            match vector_src(1, code, None, size, kind, w0)? {
                Operand::Literal(_) => Err(illegal(kind, &[w0, w1], "literal not allowed")),
                op => Ok(op),
            }
        } else {
            Ok(vgpr(1, code))
        }
    };
    inst.src[0] = src(w1 & 0xFF, w1 >> 23 & 1 != 0, &mut size)?;
    if w1 >> 31 != 0 {
        if enc == Encoding::Vop1 {
            return Err(illegal(kind, &[w0, w1], "s1 set on VOP1"));
        }
        inst.src[1] = src(w0 >> 9 & 0xFF, true, &mut size)?;
    }
    inst.mods.neg = [w1 >> 20 & 1 != 0, w1 >> 28 & 1 != 0, false];
    inst.mods.abs = [w1 >> 21 & 1 != 0, w1 >> 29 & 1 != 0, false];
    let (dst_sel, dst_unused) = if enc == Encoding::Vopc {
        if w1 >> 15 & 1 != 0 {
            inst.sdst = sreg_operand(2, w1 >> 8 & 0x7F, kind, w0)?;
        }
        (SdwaSel::Dword, 0)
    } else {
        inst.mods.clamp = w1 >> 13 & 1 != 0;
        inst.mods.omod = (w1 >> 14 & 3) as u8;
        let unused = (w1 >> 11 & 3) as u8;
        if unused == 3 {
            return Err(illegal(kind, &[w0, w1], "reserved dst_unused"));
        }
        match sel(w1 >> 8 & 7)? {
            SdwaSel::Dword if fp8_sdwa => (SdwaSel::Dword, 0),
            _ if fp8_sdwa => {
                return Err(illegal(
                    kind,
                    &[w0, w1],
                    "dst_sel of an FP8 conversion not DWORD",
                ));
            }
            d => (d, unused),
        }
    };
    inst.mods.sdwa = Some(Sdwa {
        dst_sel,
        dst_unused,
        src_sel: [sel(w1 >> 16 & 7)?, sel(w1 >> 24 & 7)?],
        sext: [w1 >> 19 & 1 != 0, w1 >> 27 & 1 != 0],
    });
    Ok(())
}

/// Whether the VOP3 (a or b) modifiers of a decoded instruction are ones its operands have,
/// as llvm-mc decodes them: `neg`/`abs` only on
/// floating-point sources (`v_cndmask_b32` included; `v_ldexp`'s, `v_cmp_class`'s and
/// `v_trig_preop`'s second source is an integer); an output modifier only where a source or
/// the result is floating-point and never on a compare; `clamp` on floating-point
/// instructions (compares included) and the integer add/sub/mad/sad family.
fn vop3_modifiers_allowed(inst: &Instruction, enc: Encoding, w: &[u32]) -> Result<()> {
    let info = inst.info;
    let name = info.name;
    let m = &inst.mods;
    if matches!(info.op, Op::VBitop3B16 | Op::VBitop3B32) {
        // gfx950's v_bitop3_*: neg, abs and omod hold the truth table; no clamp.
        return if m.clamp {
            Err(illegal("VOP3", w, "clamp on v_bitop3"))
        } else {
            Ok(())
        };
    }
    let has_float = name.split('_').any(|t| matches!(t, "f16" | "f32" | "f64"));
    let float_src = |i: usize| {
        let second_int = i == 1
            && (name.starts_with("v_ldexp")
                || name.starts_with("v_cmp_class")
                || name.starts_with("v_cmpx_class")
                || name.starts_with("v_trig_preop"));
        // The lane mask / carry-in (third source of v_cndmask, v_addc) has no modifiers.
        let mask = i == 2 && info.has(F_CND | F_CI);
        !second_int && !mask && (name == "v_cndmask_b32" || (has_float && float_sources(name)))
    };
    let mut why = None;
    for i in 0..3 {
        if (m.neg[i] || m.abs[i]) && !float_src(i) {
            why = Some("neg/abs of an integer operand");
        }
    }
    if m.omod != 0 && (enc == Encoding::Vopc || !has_float) {
        why = Some("output modifier on an instruction without it");
    }
    let first = name.split('_').nth(1).unwrap_or("");
    let second = name.split('_').nth(2).unwrap_or("");
    let int_clamp = matches!(
        first,
        "add"
            | "sub"
            | "subrev"
            | "addc"
            | "subb"
            | "subbrev"
            | "mad"
            | "sad"
            | "msad"
            | "qsad"
            | "mqsad"
            | "dot2c"
            | "dot4c"
            | "dot8c"
    ) && second != "lshl";
    if m.clamp && !has_float && !int_clamp {
        why = Some("clamp on an instruction without it");
    }
    if info.has(F_SDST) && (m.clamp || m.omod != 0 || m.op_sel != 0) {
        why = Some("modifiers of v_readlane/v_writelane");
    }
    match why {
        Some(why) => Err(illegal("VOP3", w, why)),
        None => Ok(()),
    }
}

/// Whether an instruction's result is floating-point, by the first operand type of its
/// mnemonic (`v_cvt_f32_i32`: yes; `v_cvt_flr_i32_f32`, `v_cndmask_b32`: no); only such
/// results take an SDWA output modifier.
fn float_result(name: &str) -> bool {
    name.split('_')
        .find(|t| {
            let b = t.as_bytes();
            b.len() == 3 && matches!(b[0], b'f' | b'i' | b'u' | b'b') && b[1].is_ascii_digit()
        })
        .is_some_and(|t| t.starts_with('f'))
}

/// Whether an instruction's sources are floating-point (take `neg`/`abs` in SDWA and DPP)
/// rather than integers (take `sext`): by the mnemonic's last operand type, the source type
/// of conversions (`v_cvt_f32_i32` reads an integer); `v_cvt_f32_ubyte*` and
/// `v_cvt_off_f32_i4` read integers; `v_cndmask_b32` takes the float modifiers.
pub(crate) fn float_sources(name: &str) -> bool {
    if name == "v_cndmask_b32" {
        // A lane select with the float modifiers (llvm-mc decodes neg/abs on it).
        return true;
    }
    if name.contains("ubyte") || name == "v_cvt_off_f32_i4" {
        return false;
    }
    if name.ends_with("_fp8") || name.ends_with("_bf8") {
        // v_cvt_f32_fp8 and kin (gfx940) read FP8/BF8 bytes: no neg/abs in DPP or VOP3
        // (llvm-mc rejects the bits), sext in SDWA.
        return false;
    }
    name.split('_')
        .rev()
        .find(|t| {
            let b = t.as_bytes();
            b.len() == 3 && matches!(b[0], b'f' | b'i' | b'u' | b'b') && b[1].is_ascii_digit()
        })
        .is_some_and(|t| t.starts_with('f'))
}

/// VOP3P (Vega ISA §12.10 "VOP3P"): `vdst` [7:0], `neg_hi` [10:8], `op_sel` [13:11],
/// `op_sel_hi[2]` [14], `clamp` [15], `op` [22:16]; second dword: `src0..2` (9 bits each),
/// `op_sel_hi[1:0]` [28:27], `neg_lo` [31:29]. No literal operand on GFX9.
fn vop3p(mut inst: Instruction, w0: u32, w1: u32, target: Gfx9Target) -> Result<Instruction> {
    let op = (w0 >> 16) & 0x7F;
    let info = lookup(Encoding::Vop3p, op as u16, target).ok_or_else(|| {
        let mut msg: heapless::String<48> = heapless::String::new();
        let _ = core::fmt::write(
            &mut msg,
            format_args!("unknown opcode {op} for {}", target.name()),
        );
        illegal("VOP3P", &[w0, w1], &msg)
    })?;
    inst.info = info;
    inst.encoding = Encoding::Vop3p;
    inst.size = 8;
    if info.is_mai() {
        return mai(inst, w0, w1, target, false);
    }
    inst.dst = vgpr(info.widths[0], w0 & 0xFF);
    let mut size = 8u8;
    for i in 0..3 {
        let width = info.widths[i + 1];
        if width == 0 {
            // A source the opcode does not have: its field, neg_lo, neg_hi and op_sel bits
            // are 0 (llvm-mc rejects others).
            let mods = (w1 >> (29 + i) & 1) | (w0 >> (8 + i) & 1) | (w0 >> (11 + i) & 1);
            if w1 >> (9 * i) & 0x1FF != 0 || mods != 0 {
                return Err(illegal("VOP3P", &[w0, w1], "unused source field not 0"));
            }
            continue;
        }
        let op = vector_src(width, w1 >> (9 * i) & 0x1FF, None, &mut size, "VOP3P", w0)?;
        if matches!(op, Operand::Literal(_)) {
            return Err(illegal("VOP3P", &[w0, w1], "literal operand not allowed"));
        }
        inst.src[i] = op;
    }
    inst.mods.neg_hi = (w0 >> 8 & 7) as u8;
    inst.mods.op_sel = (w0 >> 11 & 7) as u8;
    inst.mods.op_sel_hi = (w1 >> 27 & 3) as u8 | ((w0 >> 14 & 1) as u8) << 2;
    inst.mods.clamp = w0 >> 15 & 1 != 0;
    for i in 0..3 {
        inst.mods.neg[i] = w1 >> (29 + i) & 1 != 0;
    }
    if info.name.starts_with("v_fma_mix") || info.name.starts_with("v_mad_mix") {
        // The mixed-precision FMAs read `neg_hi` as `abs` of each source.
        for i in 0..3 {
            inst.mods.abs[i] = inst.mods.neg_hi >> i & 1 != 0;
        }
        inst.mods.neg_hi = 0;
    }
    let int_dot = matches!(
        info.op,
        Op::VDot4I32I8 | Op::VDot4U32U8 | Op::VDot8I32I4 | Op::VDot8U32U4
    );
    if int_dot && target == Gfx9Target::Gfx950 && inst.mods.op_sel != 0 {
        // LLVM 22 rejects gfx950's integer dot products with op_sel bits (LLVM 19 decodes
        // them for the older processors).
        return Err(illegal("VOP3P", &[w0, w1], "op_sel of an integer dot"));
    }
    Ok(inst)
}

/// A VGPR or AGPR range from a 9-bit source field that must name a vector register (code
/// 256..=511), `count` dwords wide and inside the 256-register file.
fn vector_range(code: u32, count: u8, agpr: bool, w: &[u32], what: &str) -> Result<Operand> {
    if !(256..512).contains(&code) {
        return Err(mai_illegal(w, what, "not a vector register"));
    }
    let index = code - 256;
    if index + count as u32 > 256 {
        return Err(mai_illegal(
            w,
            what,
            "register range beyond the register file",
        ));
    }
    let index = index as u8;
    Ok(if agpr {
        Operand::Agpr { index, count }
    } else {
        Operand::Vgpr { index, count }
    })
}

fn mai_illegal(w: &[u32], what: &str, why: &str) -> Error {
    let mut msg: heapless::String<80> = heapless::String::new();
    let _ = core::fmt::write(&mut msg, format_args!("{what}: {why}"));
    illegal(if w.len() == 1 { "VOP1" } else { "VOP3P-MAI" }, w, &msg)
}

/// VOP3P-MAI (CDNA1/CDNA2/CDNA3 ISA "VOP3P-MAI"): `vdst` [7:0], `cbsz` [10:8], `abid`
/// [14:11], `acc_cd` [15] (gfx90a+: C and D are AGPRs; gfx908's are always AGPRs), `op`
/// [22:16]; second dword `src0` (A) [8:0], `src1` (B) [17:9], `src2` (C) [26:18], `acc`
/// [28:27] (A, B are AGPRs), `blgp` [31:29]. `v_accvgpr_read_b32`/`v_accvgpr_write_b32` use
/// the same encoding with `vdst` and `src0` only (their `op_sel_hi` and `clamp` bits are
/// ignored, as llvm-objdump ignores them; `neg`/`op_sel` bits are illegal).
fn mai(
    mut inst: Instruction,
    w0: u32,
    w1: u32,
    target: Gfx9Target,
    scaled: bool,
) -> Result<Instruction> {
    let info = inst.info;
    let w = &[w0, w1][..];
    let mut size = 8u8;
    match info.name {
        "v_accvgpr_read_b32" | "v_accvgpr_write_b32" => {
            if w0 >> 8 & 0x3F != 0 || w1 >> 29 != 0 {
                return Err(mai_illegal(w, info.name, "neg or op_sel bits set"));
            }
            if w1 >> 9 & 0x3_FFFF != 0 {
                // No src1/src2: their fields are 0 (llvm-mc rejects others).
                return Err(mai_illegal(w, info.name, "unused source field not 0"));
            }
            let code = w1 & 0x1FF;
            if info.name == "v_accvgpr_read_b32" {
                inst.dst = vgpr(1, w0 & 0xFF);
                inst.src[0] = vector_range(code, 1, true, w, "source")?;
            } else {
                inst.dst = Operand::Agpr {
                    index: (w0 & 0xFF) as u8,
                    count: 1,
                };
                inst.src[0] = match vector_src(1, code, None, &mut size, "VOP3P-MAI", w0)? {
                    Operand::Literal(_) | Operand::Special(_) => {
                        return Err(mai_illegal(w, info.name, "bad source operand"))
                    }
                    op => op,
                };
            }
            return Ok(inst);
        }
        _ => {}
    }
    let acc_cd = target == Gfx9Target::Gfx908 || w0 >> 15 & 1 != 0;
    let [wd, mut wa, mut wb, wc] = info.widths;
    if info
        .op
        .attrs()
        .mfma
        .is_some_and(|m| m.elem == crate::op::Elem::F8f6f4)
    {
        // gfx950's f8f6f4 MFMAs: A's registers follow its format in cbsz, B's in blgp (CDNA4
        // ISA §7.1.5: FP8/BF8 8, FP6/BF6 6, FP4 4; LLVM 22 decodes the undefined codes 5..7
        // with 8). abid (the scaled form's scale enable) must be 0: LLVM 22 rejects the word.
        let regs = |code: u32| match code {
            2 | 3 => 6,
            4 => 4,
            _ => 8,
        };
        wa = regs(w0 >> 8 & 7);
        wb = regs(w1 >> 29);
        // The scaled form's abid is 1 (its scale enable, §7.2.1), printed by no one.
        if w0 >> 11 & 0xF != u32::from(scaled) {
            return Err(mai_illegal(w, info.name, "abid of an f8f6f4 MFMA"));
        }
    }
    let vdst = w0 & 0xFF;
    inst.dst = vector_range(vdst + 256, wd, acc_cd, w, "vdst")?;
    inst.src[0] = vector_range(w1 & 0x1FF, wa, w1 >> 27 & 1 != 0, w, "src0 (A)")?;
    inst.src[1] = vector_range(w1 >> 9 & 0x1FF, wb, w1 >> 28 & 1 != 0, w, "src1 (B)")?;
    let c = w1 >> 18 & 0x1FF;
    let sparse = info.op.attrs().mfma.is_some_and(|m| m.sparse);
    if sparse && w1 >> 29 != 0 {
        // v_smfmac_* have cbsz and abid (the index select) but no blgp: llvm-mc rejects
        // the word.
        return Err(mai_illegal(w, info.name, "blgp of a sparse MFMA"));
    }
    inst.src[2] = match c {
        // The sparse forms' src2 is the compression index, a VGPR even when acc_cd makes
        // C/D AGPRs (llvm-objdump prints `v8` after `a[0:3]`), never a constant
        // (llvm-mc: "Invalid immediate").
        _ if sparse => vector_range(c, wc, false, w, "src2 (index)")?,
        128..=208 | 240..=248 => vector_src(wc, c, None, &mut size, "VOP3P-MAI", w0)?,
        _ => vector_range(c, wc, acc_cd, w, "src2 (C)")?,
    };
    inst.mods.cbsz = (w0 >> 8 & 7) as u8;
    inst.mods.abid = if scaled { 0 } else { (w0 >> 11 & 0xF) as u8 };
    inst.mods.blgp = (w1 >> 29) as u8;
    Ok(inst)
}

/// gfx950's `v_mfma_ld_scale_b32` (VOP3P opcode 44; CDNA4 ISA §7.2.1): `src0` [40:32] and
/// `src1` [49:41] hold A's and B's E8M0 scales, `op_sel[1:0]` [12:11] and `op_sel_hi[1:0]`
/// [60:59] pick their bytes. Followed by an f8f6f4 MFMA (VOP3P 45 or 46) whose `abid` is 1,
/// the four dwords are one instruction, `v_mfma_scale_f32_*_f8f6f4`, as LLVM 22 decodes
/// them (scales in VGPRs: LLVM prints a constant there as an invalid immediate, and this
/// decoder refuses it). Otherwise the first two are `v_mfma_ld_scale_b32` alone, decoded
/// and printed, not run.
fn mfma_ld_scale(
    mut inst: Instruction,
    [w0, w1]: [u32; 2],
    next: Option<(u32, u32)>,
) -> Result<Instruction> {
    let target = inst.target;
    let op_sel = (w0 >> 11 & 3) as u8;
    let op_sel_hi = (w1 >> 27 & 3) as u8;
    if let Some((w2, w3)) = next {
        if w2 >> 23 == 0x1A7 && matches!(w2 >> 16 & 0x7F, 45 | 46) && w2 >> 11 & 1 == 1 {
            let vgpr_only = |code: u32, what: &str| {
                if code >= 256 {
                    Ok(vgpr(1, code - 256))
                } else {
                    Err(illegal(
                        "VOP3P",
                        &[w0, w1],
                        if what == "a" {
                            "A's scale is not a VGPR"
                        } else {
                            "B's scale is not a VGPR"
                        },
                    ))
                }
            };
            let scale = MfmaScale {
                a: vgpr_only(w1 & 0x1FF, "a")?,
                b: vgpr_only(w1 >> 9 & 0x1FF, "b")?,
                op_sel,
                op_sel_hi,
            };
            let mut mfma = vop3p_mai_scaled(inst, w2, w3, target)?;
            mfma.size = 16;
            mfma.mods.scale = Some(scale);
            return Ok(mfma);
        }
    }
    let info = lookup(Encoding::Vop3p, 44, target)
        .ok_or_else(|| illegal("VOP3P", &[w0, w1], "unknown opcode 44"))?;
    inst.info = info;
    inst.encoding = Encoding::Vop3p;
    inst.size = 8;
    let mut size = 8u8;
    inst.src[0] = vector_src(1, w1 & 0x1FF, None, &mut size, "VOP3P", w0)?;
    inst.src[1] = vector_src(1, w1 >> 9 & 0x1FF, None, &mut size, "VOP3P", w0)?;
    if size != 8 {
        return Err(illegal("VOP3P", &[w0, w1], "literal scale operand"));
    }
    inst.mods.op_sel = op_sel;
    inst.mods.op_sel_hi = op_sel_hi;
    Ok(inst)
}

/// The f8f6f4 MFMA half of a scaled MFMA (its `abid` 1).
fn vop3p_mai_scaled(
    mut inst: Instruction,
    w0: u32,
    w1: u32,
    target: Gfx9Target,
) -> Result<Instruction> {
    let op = (w0 >> 16) & 0x7F;
    let info = lookup(Encoding::Vop3p, op as u16, target)
        .ok_or_else(|| illegal("VOP3P", &[w0, w1], "unknown scaled MFMA opcode"))?;
    inst.info = info;
    inst.encoding = Encoding::Vop3p;
    mai(inst, w0, w1, target, true)
}

/// MUBUF (Vega ISA §12.12 "MUBUF"): `offset` [11:0], `offen` [12], `idxen` [13], `glc`
/// (gfx940 `sc0`) [14], bit 15 (gfx90a `scc`, gfx940 `sc1`), `lds` [16], `slc` (gfx940 `nt`)
/// [17], `op` [24:18]; second dword: `vaddr` [7:0], `vdata` [15:8], `srsrc` [20:16] (SGPR
/// index / 4), `acc` [23] (gfx90a+), `soffset` [31:24].
fn mubuf(mut inst: Instruction, w0: u32, w1: u32, target: Gfx9Target) -> Result<Instruction> {
    let op = (w0 >> 18) & 0x7F;
    let info = lookup(Encoding::Mubuf, op as u16, target).ok_or_else(|| {
        let mut msg: heapless::String<48> = heapless::String::new();
        let _ = core::fmt::write(
            &mut msg,
            format_args!("unknown opcode {op} for {}", target.name()),
        );
        illegal("MUBUF", &[w0, w1], &msg)
    })?;
    inst.info = info;
    inst.encoding = Encoding::Mubuf;
    inst.size = 8;
    // `lds` (bit 16): the loads of a dword or less (and format_x) put their data in LDS, not
    // VGPRs; buffer_store_lds_dword exists only with it (llvm-mc decodes no other).
    inst.mods.lds = w0 >> 16 & 1 != 0;
    let lds_load = matches!(
        info.op,
        Op::BufferLoadFormatX
            | Op::BufferLoadUbyte
            | Op::BufferLoadSbyte
            | Op::BufferLoadUshort
            | Op::BufferLoadSshort
            | Op::BufferLoadDword
    );
    let store_lds = info.op == Op::BufferStoreLdsDword;
    if inst.mods.lds && !lds_load && !store_lds || store_lds && !inst.mods.lds {
        return Err(illegal(
            "MUBUF",
            &[w0, w1],
            "lds bit on an instruction without that form",
        ));
    }
    inst.imm = (w0 & 0xFFF) as i32;
    inst.mods.offen = w0 >> 12 & 1 != 0;
    inst.mods.idxen = w0 >> 13 & 1 != 0;
    inst.mods.glc = w0 >> 14 & 1 != 0;
    inst.mods.slc = w0 >> 17 & 1 != 0;
    inst.mods.sc1 = w0 >> 15 & 1 != 0 && target.has_acc_memory_operands();
    let float_atomic = info.has(F_ATOMIC) && info.op.attrs().src_fp != Fp::None;
    if info.has(F_NORTN) && inst.mods.glc {
        // gfx908's buffer_atomic_add_f32/pk_add_f16 have no returning form (llvm-mc
        // rejects glc).
        return Err(illegal(
            "MUBUF",
            &[w0, w1],
            "no returning form on this target",
        ));
    }
    if float_atomic && target == Gfx9Target::Gfx90a && w0 >> 15 & 1 != 0 {
        // gfx90a's floating-point buffer atomics have no scc bit (llvm-mc rejects the word;
        // the integer ones take it, and gfx940's take sc1).
        return Err(illegal("MUBUF", &[w0, w1], "scc on a float atomic"));
    }
    if w1 >> 23 & 1 != 0 && inst.mods.lds {
        // The data moves between memory and LDS: no VGPR/AGPR data operand for the acc
        // bit to select (bit 23 is tfe before gfx90a); llvm-mc rejects the word on every
        // target.
        return Err(illegal(
            "MUBUF",
            &[w0, w1],
            "acc (or tfe) bit on an LDS transfer",
        ));
    }
    if store_lds {
        // buffer_store_lds_dword: no VGPR address or data (the fields are ignored, as
        // llvm-mc ignores them); offen and idxen are illegal.
        if inst.mods.offen || inst.mods.idxen {
            return Err(illegal(
                "MUBUF",
                &[w0, w1],
                "VGPR address of buffer_store_lds_dword",
            ));
        }
        inst.src[2] = buffer_resource(w1, "MUBUF", w0)?;
        inst.soffset = mubuf_soffset(w0, w1)?;
        return Ok(inst);
    }
    if info.widths[0] == 0 && info.widths[1] == 0 {
        // Cache control: no operands. llvm-mc ignores the other fields but rejects offen,
        // idxen, glc and bit 15, except on buffer_wbl2 (gfx90a ignores those two bits,
        // gfx940 reads them as sc0/sc1) and gfx940's buffer_inv (sc0/sc1: the scope to
        // invalidate; LLVM's memory model emits `buffer_inv sc0 sc1` for a system-scope
        // acquire).
        let takes_sc = info.op == Op::BufferWbl2 || info.op == Op::BufferInv;
        let bits = if takes_sc { 0x3 } else { 0xF };
        if w0 >> 12 & bits != 0 || w1 >> 23 & 1 != 0 {
            return Err(illegal(
                "MUBUF",
                &[w0, w1],
                "cache control with address bits",
            ));
        }
        // Only gfx940's keep their sc0/sc1 bits (llvm-mc prints them).
        let keep = takes_sc && target.is_gfx940();
        inst.mods.glc &= keep;
        inst.mods.sc1 &= keep;
        inst.mods.slc = false;
        return Ok(inst);
    }
    if w1 >> 23 & 1 != 0 && !target.has_acc_memory_operands() {
        return Err(illegal(
            "MUBUF",
            &[w0, w1],
            "tfe (texture fail enable) unsupported",
        ));
    }
    let naddr = inst.mods.offen as u8 + inst.mods.idxen as u8;
    if naddr > 0 {
        inst.src[0] = vgpr(naddr, w1 & 0xFF);
    }
    let acc = w1 >> 23 & 1 != 0 && target.has_acc_memory_operands();
    let data_reg = |w: u8, idx: u32| {
        if acc {
            Operand::Agpr {
                index: idx as u8,
                count: w,
            }
        } else {
            vgpr(w, idx)
        }
    };
    let vdata = w1 >> 8 & 0xFF;
    if info.widths[1] > 0 {
        inst.src[1] = data_reg(info.widths[1], vdata);
    }
    let returns = !info.has(F_ATOMIC) || inst.mods.glc;
    if info.widths[0] > 0 && returns && !inst.mods.lds {
        inst.dst = data_reg(info.widths[0], vdata);
    }
    inst.src[2] = buffer_resource(w1, "MUBUF", w0)?;
    inst.soffset = mubuf_soffset(w0, w1)?;
    Ok(inst)
}

/// MUBUF `soffset` (w1 [31:24]): an SGPR or a constant (llvm-mc decodes inline floats and
/// the special sources too).
fn mubuf_soffset(w0: u32, w1: u32) -> Result<Operand> {
    let mut size = 8u8;
    match vector_src(1, w1 >> 24, None, &mut size, "MUBUF", w0)? {
        op @ (Operand::Sreg { .. }
        | Operand::InlineInt(_)
        | Operand::InlineFloat(_)
        | Operand::Special(_)) => Ok(op),
        _ => Err(illegal("MUBUF", &[w0, w1], "bad soffset")),
    }
}

/// MTBUF (Vega ISA §12.11; CDNA2/3 for the `acc`, `scc`/`sc1` bits): `offset` [11:0],
/// `offen` [12], `idxen` [13], `glc` [14], op [18:15], `dfmt` [22:19], `nfmt` [25:23];
/// `vaddr` [39:32], `vdata` [47:40], `srsrc` [52:48], `sc1` [53] (gfx90a+), `slc` [54],
/// `acc` [55] (gfx90a+), `soffset` [63:56]. The format goes to [`Modifiers::format`].
fn mtbuf(mut inst: Instruction, w0: u32, w1: u32, target: Gfx9Target) -> Result<Instruction> {
    let op = (w0 >> 15) & 0xF;
    let info = lookup(Encoding::Mtbuf, op as u16, target)
        .ok_or_else(|| illegal("MTBUF", &[w0, w1], "unknown opcode"))?;
    inst.info = info;
    inst.encoding = Encoding::Mtbuf;
    inst.size = 8;
    inst.imm = (w0 & 0xFFF) as i32;
    inst.mods.offen = w0 >> 12 & 1 != 0;
    inst.mods.idxen = w0 >> 13 & 1 != 0;
    inst.mods.glc = w0 >> 14 & 1 != 0;
    inst.mods.slc = w1 >> 22 & 1 != 0;
    inst.mods.sc1 = w1 >> 21 & 1 != 0 && target.has_acc_memory_operands();
    inst.mods.format = (w0 >> 19 & 0x7F) as u8;
    if w1 >> 23 & 1 != 0 && !target.has_acc_memory_operands() {
        return Err(illegal(
            "MTBUF",
            &[w0, w1],
            "tfe (texture fail enable) unsupported",
        ));
    }
    let naddr = inst.mods.offen as u8 + inst.mods.idxen as u8;
    if naddr > 0 {
        inst.src[0] = vgpr(naddr, w1 & 0xFF);
    }
    let acc = w1 >> 23 & 1 != 0 && target.has_acc_memory_operands();
    let vdata = w1 >> 8 & 0xFF;
    let data = |w: u8| {
        if acc {
            Operand::Agpr {
                index: vdata as u8,
                count: w,
            }
        } else {
            vgpr(w, vdata)
        }
    };
    if info.widths[1] > 0 {
        inst.src[1] = data(info.widths[1]);
    }
    if info.widths[0] > 0 {
        inst.dst = data(info.widths[0]);
    }
    inst.src[2] = buffer_resource(w1, "MTBUF", w0)?;
    let mut size = 8u8;
    inst.soffset = match vector_src(1, w1 >> 24, None, &mut size, "MTBUF", w0)? {
        // An SGPR or a constant (llvm-mc decodes inline floats and the special sources too).
        op @ (Operand::Sreg { .. }
        | Operand::InlineInt(_)
        | Operand::InlineFloat(_)
        | Operand::Special(_)) => op,
        _ => return Err(illegal("MTBUF", &[w0, w1], "bad soffset")),
    };
    Ok(inst)
}

/// MIMG (Vega ISA §12.13 "MIMG"; CDNA2 for gfx90a's `acc` and `scc`): bit 0 reserved (0),
/// bit 7 gfx90a `scc`, `dmask` [11:8], `unorm` [12], `glc` [13], `da` [14], `a16` (the
/// `r128` bit of older chips) [15], `tfe` [16] (gfx90a: `acc`, the data are AGPRs), `lwe`
/// [17], `op` [24:18], `slc` [25]; second dword: `vaddr` [7:0], `vdata` [15:8], `srsrc`
/// [20:16] (SGPR index / 4, 8 SGPRs), `ssamp` [25:21] (SGPR index / 4, 4 SGPRs; 0 unless
/// sampling), `d16` [31]. The data registers: one per `dmask` bit (at least one), halved
/// (rounded up) by `d16`, plus one for `tfe` (llvm-mc's sizing).
fn mimg(mut inst: Instruction, w0: u32, w1: u32, target: Gfx9Target) -> Result<Instruction> {
    let op = (w0 >> 18) & 0x7F;
    let words = [w0, w1];
    let info = lookup(Encoding::Mimg, op as u16, target).ok_or_else(|| {
        let mut msg: heapless::String<48> = heapless::String::new();
        let _ = core::fmt::write(
            &mut msg,
            format_args!("unknown opcode {op} for {}", target.name()),
        );
        illegal("MIMG", &words, &msg)
    })?;
    inst.info = info;
    inst.encoding = Encoding::Mimg;
    inst.size = 8;
    if w0 & 1 != 0 {
        return Err(illegal("MIMG", &words, "reserved bit 0 set"));
    }
    let m = &mut inst.mods;
    m.sc1 = w0 >> 7 & 1 != 0 && target == Gfx9Target::Gfx90a;
    m.dmask = (w0 >> 8 & 0xF) as u8;
    m.unorm = w0 >> 12 & 1 != 0;
    m.glc = w0 >> 13 & 1 != 0;
    m.da = w0 >> 14 & 1 != 0;
    m.a16 = w0 >> 15 & 1 != 0;
    let acc = w0 >> 16 & 1 != 0 && target.has_acc_memory_operands();
    m.tfe = w0 >> 16 & 1 != 0 && !acc;
    m.lwe = w0 >> 17 & 1 != 0;
    m.slc = w0 >> 25 & 1 != 0;
    m.d16 = w1 >> 31 != 0;
    let sample = info.name.starts_with("image_sample");
    if m.d16 && (info.has(F_ATOMIC) || info.name == "image_get_resinfo") {
        return Err(illegal(
            "MIMG",
            &words,
            "d16 on an atomic or image_get_resinfo",
        ));
    }
    if info.has(F_ATOMIC) {
        // 32- or 64-bit data: dmask 0x1 or 0x3, a compare-swap's pair 0x3 or 0xf.
        let ok = if info.name == "image_atomic_cmpswap" {
            matches!(m.dmask, 0x3 | 0xF)
        } else {
            matches!(m.dmask, 0x1 | 0x3)
        };
        if !ok {
            return Err(illegal(
                "MIMG",
                &words,
                "dmask of an atomic not 32- or 64-bit data",
            ));
        }
        if m.tfe {
            // (llvm-mc-19 sizes a 128-bit compare-swap with tfe as two VGPRs.)
            return Err(illegal("MIMG", &words, "tfe on an atomic unsupported"));
        }
    }
    let ssamp = (w1 >> 21 & 0x1F) << 2;
    if !sample && ssamp != 0 {
        return Err(illegal(
            "MIMG",
            &words,
            "ssamp of an instruction without a sampler",
        ));
    }
    let quad = |code: u32, count: u8| -> Result<Operand> {
        // SGPRs, or trap temporaries; not a range over flat_scratch/xnack/vcc/m0/exec.
        // llvm-mc names an aligned range ending at s103 (s[96:103], s[100:103]).
        let end = code + u32::from(count);
        if (code < 102 && end > 104) || (102..108).contains(&code) || end > 124 {
            return Err(illegal("MIMG", &words, "resource is not an SGPR range"));
        }
        Ok(Operand::Sreg {
            index: code as u8,
            count,
        })
    };
    inst.src[2] = quad((w1 >> 16 & 0x1F) << 2, 8)?;
    if sample {
        inst.soffset = quad(ssamp, 4)?;
    }
    let comps = m.dmask.count_ones().max(1) as u8;
    let data = if m.d16 { comps.div_ceil(2) } else { comps } + m.tfe as u8;
    let vdata = w1 >> 8 & 0xFF;
    let reg = if acc {
        Operand::Agpr {
            index: vdata as u8,
            count: data,
        }
    } else {
        vgpr(data, vdata)
    };
    if info.widths[1] > 0 {
        inst.src[1] = reg;
    }
    // An atomic returns the old value only with glc.
    if info.widths[0] > 0 && (!info.has(F_ATOMIC) || inst.mods.glc) {
        inst.dst = reg;
    }
    inst.src[0] = vgpr(1, w1 & 0xFF);
    Ok(inst)
}

/// An SGPR range's first register as the hardware reads it: 64-bit operands start at an even
/// register, wider ones at a multiple of 4 (the low bits of the field are ignored; Vega ISA
/// §3.3 "SGPRs": "64-bit SGPR pairs must be even-aligned", and llvm-mc decodes so).
///
/// The special registers have no such rounding: a range wider than one dword starting in
/// 102..=107 or 124..=127 must start at flat_scratch (102), xnack_mask (104), vcc (106) or
/// exec (126) and be a pair; anything else is returned as 125 (a code no operand may have).
fn align_sgpr(code: u32, width: u8) -> u32 {
    let special = (102..108).contains(&code) || code >= 124;
    match width {
        0 | 1 => code,
        2 | 3 if special => {
            if code & 1 == 0 && code != 124 {
                code
            } else {
                125
            }
        }
        _ if special => 125,
        2 | 3 => code & !1,
        // A wider range must stay inside s0..s101 or the ttmps.
        // (llvm-mc decodes ranges up to s103, e.g. s[88:103].)
        _ if code < 102 && (code & !3) + u32::from(width) > 104 => 125,
        _ if code >= 108 && (code & !3) + u32::from(width) > 124 => 125,
        _ => code & !3,
    }
}

/// A buffer resource (`srsrc` [52:48], the first SGPR / 4): four SGPRs from s0..s100 or
/// ttmps (the quads at xnack_mask (104) and m0 (124) are not registers of the operand's
/// class; llvm-mc rejects them).
fn buffer_resource(w1: u32, enc: &str, w0: u32) -> Result<Operand> {
    let srsrc = (w1 >> 16 & 0x1F) << 2;
    if srsrc == 104 || srsrc == 124 {
        return Err(illegal(enc, &[w0, w1], "srsrc is not an SGPR quad"));
    }
    sreg_operand(4, srsrc, enc, w0)
}

fn vgpr(width: u8, index: u32) -> Operand {
    Operand::Vgpr {
        index: index as u8,
        count: width.max(1),
    }
}

/// A scalar destination (7-bit SGPR field): SGPRs 0..=101, flat_scratch, xnack_mask, VCC,
/// ttmps, M0, EXEC.
fn sreg_operand(width: u8, code: u32, enc: &str, w0: u32) -> Result<Operand> {
    if width == 0 {
        return Ok(Operand::None);
    }
    let code = align_sgpr(code, width);
    if code > 127 || code == 125 || code + width as u32 > 128 {
        return Err(illegal(enc, &[w0], "bad scalar register field"));
    }
    Ok(Operand::Sreg {
        index: code as u8,
        count: width,
    })
}

/// An 8-bit scalar source field (SOP*): a register, inline constant, or literal.
fn scalar_src(
    width: u8,
    code: u32,
    next: Option<u32>,
    size: &mut u8,
    enc: &str,
    w0: u32,
) -> Result<Operand> {
    if width == 0 {
        return Ok(Operand::None);
    }
    vector_src(width, code, next, size, enc, w0).and_then(|op| match op {
        Operand::Vgpr { .. } => Err(illegal(enc, &[w0], "VGPR in a scalar operand")),
        other => Ok(other),
    })
}

/// Whether a VOP2 opcode carries a 32-bit constant K in the dword after the instruction
/// (`v_madmk_*`/`v_fmamk_f32`: D = S0 × K + VSRC1; `v_madak_*`/`v_fmaak_f32`:
/// D = S0 × VSRC1 + K; Vega ISA §6.2 "VOP2", VOP2 opcodes 23, 24, 36, 37).
pub(crate) fn has_literal_k(name: &str) -> bool {
    matches!(
        name,
        "v_madmk_f32"
            | "v_madak_f32"
            | "v_fmamk_f32"
            | "v_fmaak_f32"
            | "v_madmk_f16"
            | "v_madak_f16"
    )
}

/// The rest of a VOP2 instruction with a literal constant K (always 8 bytes: a literal src0
/// is that same dword, as llvm-mc-19 encodes it). The sources are laid out as those of a
/// three-source multiply-add, `src[0] × src[1] + src[2]`: K is `src[1]` of the `mk` forms
/// and `src[2]` of the `ak` forms. No SDWA or DPP form.
fn vop2_literal_k(mut inst: Instruction, w0: u32, k: u32) -> Result<Instruction> {
    let src0 = w0 & 0x1FF;
    if src0 == 0xF9 || src0 == 0xFA {
        return Err(illegal(
            "VOP2",
            &[w0, k],
            "no SDWA or DPP form of this opcode",
        ));
    }
    let mut size = 8;
    inst.src[0] = vector_src(1, src0, Some(k), &mut size, "VOP2", w0)?;
    inst.size = 8;
    inst.dst = vgpr(1, w0 >> 17 & 0xFF);
    let vsrc1 = vgpr(1, w0 >> 9 & 0xFF);
    if inst.info.name.contains("mk_") {
        inst.src[1] = Operand::Literal(k);
        inst.src[2] = vsrc1;
    } else {
        inst.src[1] = vsrc1;
        inst.src[2] = Operand::Literal(k);
    }
    Ok(inst)
}

/// A 9-bit source field (VOP*): register, VGPR (256+), inline constant, special, literal.
fn vector_src(
    width: u8,
    code: u32,
    next: Option<u32>,
    size: &mut u8,
    enc: &str,
    w0: u32,
) -> Result<Operand> {
    Ok(match code {
        0..=127 => {
            let code = align_sgpr(code, width);
            if code == 125 || code + width as u32 > 128 {
                return Err(illegal(enc, &[w0], "bad scalar source register"));
            }
            Operand::Sreg {
                index: code as u8,
                count: width,
            }
        }
        128..=192 => Operand::InlineInt((code - 128) as i8),
        193..=208 => Operand::InlineInt(-((code - 192) as i8)),
        240..=248 => Operand::InlineFloat(code as u8),
        255 => {
            let Some(lit) = next else {
                return Err(illegal(enc, &[w0], "literal missing"));
            };
            *size = 8;
            Operand::Literal(lit)
        }
        256..=511 => Operand::Vgpr {
            index: (code - 256) as u8,
            count: width,
        },
        235..=239 | 251..=253 => Operand::Special(code as u16),
        _ => return Err(illegal(enc, &[w0], "reserved source operand code")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(words: &[u32], t: Gfx9Target) -> Result<Instruction> {
        let mut b = [0u8; 8];
        for (i, w) in words.iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        decode(&b[..words.len() * 4], t)
    }

    /// gfx950 refuses odd-aligned VGPR tuples as LLVM 22 does (words of a seeded
    /// `gfx9_llvm_diff gfx950` run that it called invalid), but a buffer instruction's address
    /// pair, which LLVM 22 decodes at any register; gfx942 keeps LLVM 19's leniency.
    #[test]
    fn gfx950_vgpr_tuples_are_even_aligned() {
        // global_load_dwordx2 v[239:240], v194, s[62:63] offset:-3990 sc1
        let odd = [0xDE54_906A, 0xEF3E_8AC2];
        let e = dec(&odd, Gfx9Target::Gfx950).unwrap_err();
        assert!(e.detail().contains("odd-aligned register tuple"), "{e}");
        assert!(dec(&odd, Gfx9Target::Gfx942).is_ok());
        // The same with v[238:239].
        assert!(dec(&[0xDE54_906A, 0xEE3E_8AC2], Gfx9Target::Gfx950).is_ok());
        // tbuffer_load_format_x v64, v[3:4], ttmp[4:7], s90 ... idxen offen: decoded.
        let i = dec(&[0xE8D8_7895, 0x5A3C_4003], Gfx9Target::Gfx950).unwrap();
        assert_eq!(i.src[0], Operand::Vgpr { index: 3, count: 2 });
    }

    #[test]
    fn decodes_golden_words_from_llvm_objdump() {
        // s_and_b32 s4, s9, 0xffff : 8604FF09 0000FFFF
        let i = dec(&[0x8604FF09, 0x0000FFFF], Gfx9Target::Gfx900).unwrap();
        assert_eq!(i.name(), "s_and_b32");
        assert_eq!(i.size, 8);
        assert_eq!(i.src[1], Operand::Literal(0xFFFF));
        // global_load_dword v2, v[2:3], off : DC508000 027F0002
        let i = dec(&[0xDC508000, 0x027F0002], Gfx9Target::Gfx90a).unwrap();
        assert_eq!(i.name(), "global_load_dword");
        assert_eq!(i.dst, Operand::Vgpr { index: 2, count: 1 });
        assert_eq!(i.src[0], Operand::Vgpr { index: 2, count: 2 });
        assert_eq!(i.src[2], Operand::None);
        // v_lshl_add_u64 exists only on gfx942.
        assert!(dec(&[0xD2080002, 0x04010008], Gfx9Target::Gfx942).is_ok());
        let e = dec(&[0xD2080002, 0x04010008], Gfx9Target::Gfx900).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction);
        assert!(e.detail().to_string().contains("VOP3"), "{}", e.detail());
        assert!(
            e.detail().to_string().contains("0xd2080002"),
            "{}",
            e.detail()
        );
    }

    #[test]
    fn every_table_row_is_found_through_the_index() {
        let all = [
            Gfx9Target::Gfx900,
            Gfx9Target::Gfx906,
            Gfx9Target::Gfx908,
            Gfx9Target::Gfx90a,
            Gfx9Target::Gfx942,
        ];
        for row in OPCODES {
            for t in all.into_iter().filter(|t| row.targets & t.bit() != 0) {
                let found = lookup_where(row.encoding, row.opcode, t, |o| o.name == row.name);
                assert_eq!(found, Some(row), "{} on {}", row.name, t.name());
            }
        }
        assert_eq!(lookup(Encoding::Vop3, 1023, Gfx9Target::Gfx900), None);
    }

    /// No instruction is listed twice for a target, and no two mnemonics share an opcode of an
    /// encoding on a target (FLAT's segments excepted: its rows differ by the mnemonic's
    /// `flat_`/`global_`/`scratch_` prefix). Two branches adding the same row would otherwise
    /// go unseen: lookups return the first of equal rows.
    #[test]
    fn no_row_is_listed_twice_for_a_target() {
        for (i, a) in OPCODES.iter().enumerate() {
            for b in &OPCODES[i + 1..] {
                if a.targets & b.targets == 0 {
                    continue;
                }
                assert_ne!(a.name, b.name, "{} listed twice", a.name);
                let segment = |o: &OpInfo| o.name.split('_').next().unwrap_or("");
                let same_slot = a.encoding == b.encoding
                    && a.opcode == b.opcode
                    && (a.encoding != Encoding::Flat || segment(a) == segment(b));
                assert!(!same_slot, "{} and {} share an opcode", a.name, b.name);
            }
        }
    }

    #[test]
    fn branch_targets() {
        // llvm-objdump-19 -d kernels_more-gfx900-v5.hsaco: at 0x24b8
        // `s_cbranch_execnz 65526 // BF89FFF6 <loop_sum+0x94>` (0x2494), at 0x232c
        // `s_cbranch_execz 25 // BF880019 <branchy+0x94>` (0x2394).
        let t = Gfx9Target::Gfx900;
        assert_eq!(
            dec(&[0xBF89FFF6], t).unwrap().branch_target(0x24b8),
            Some(0x2494)
        );
        assert_eq!(
            dec(&[0xBF880019], t).unwrap().branch_target(0x232c),
            Some(0x2394)
        );
        assert_eq!(dec(&[0xBF820000], t).unwrap().branch_target(8), Some(12));
        // s_waitcnt and s_nop are SOPP but not branches; s_movk_i32 has a simm16 too.
        assert_eq!(dec(&[0xBF8CC07F], t).unwrap().branch_target(0), None);
        assert_eq!(dec(&[0xBF800000], t).unwrap().branch_target(0), None);
        assert_eq!(dec(&[0xB0000010], t).unwrap().branch_target(0), None);
        // `s_call_b64 s[10:11], k` at 4 calls k at 0 (llvm-mc-19: BA8AFFFE).
        assert_eq!(dec(&[0xBA8AFFFE], t).unwrap().branch_target(4), Some(0));
    }

    #[test]
    fn truncated_and_unknown_are_errors() {
        assert_eq!(
            decode(&[1, 2], Gfx9Target::Gfx900).unwrap_err().status(),
            Status::IllegalInstruction
        );
        // SMEM needs 2 dwords.
        assert!(dec(&[0xC0020242], Gfx9Target::Gfx900).is_err());
        // MUBUF opcode 127: not in the table (MTBUF's 16 opcodes all are).
        let e = dec(&[0xE1FC0000, 0], Gfx9Target::Gfx900).unwrap_err();
        assert!(e.detail().contains("MUBUF"));
        // MIMG: gfx940 has none; an opcode outside the table; bit 0 reserved; a sampler
        // field on an instruction without one; a resource range over flat_scratch.
        let e = dec(&[0xF0000F00, 0x0002_0004], Gfx9Target::Gfx942).unwrap_err();
        assert_eq!(
            e.detail(),
            "MIMG 0xf0000f00 0x00020004: unknown opcode 0 for gfx942"
        );
        let e = dec(&[0xF0080F00, 0x0002_0004], Gfx9Target::Gfx900).unwrap_err();
        assert_eq!(
            e.detail(),
            "MIMG 0xf0080f00 0x00020004: unknown opcode 2 for gfx900"
        );
        let e = dec(&[0xF0000F01, 0x0002_0004], Gfx9Target::Gfx900).unwrap_err();
        assert_eq!(e.detail(), "MIMG 0xf0000f01 0x00020004: reserved bit 0 set");
        let e = dec(&[0xF0000F00, 0x0022_0004], Gfx9Target::Gfx900).unwrap_err();
        assert_eq!(
            e.detail(),
            "MIMG 0xf0000f00 0x00220004: ssamp of an instruction without a sampler"
        );
        let e = dec(&[0xF0000F00, 0x0019_0004], Gfx9Target::Gfx900).unwrap_err();
        assert_eq!(
            e.detail(),
            "MIMG 0xf0000f00 0x00190004: resource is not an SGPR range"
        );
        // image_load v[0:3], v4, s[8:15] dmask:0xf unorm: the fields.
        let i = dec(&[0xF0001F00, 0x0002_0004], Gfx9Target::Gfx900).unwrap();
        assert_eq!(i.dst, Operand::Vgpr { index: 0, count: 4 });
        assert_eq!(i.src[0], Operand::Vgpr { index: 4, count: 1 });
        assert_eq!(i.src[2], Operand::Sreg { index: 8, count: 8 });
        assert_eq!((i.mods.dmask, i.mods.unorm, i.size), (0xF, true, 8));
    }
}
