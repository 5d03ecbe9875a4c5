//! The typed instruction: [`Op`] (one variant per mnemonic, generated into `opcodes.rs` by
//! `testdata/codeobjects/gfx9_opcodes.py` and `gfx9_ops.py`) and its [`OpAttrs`], the
//! properties the interpreter executes by: which routine runs it ([`Class`]), the float kind
//! of its sources and result ([`Fp`]), the compare it makes ([`Compare`]), the atomic
//! operation ([`Atomic`]), the memory access ([`Mem`]), how MODE's rounding applies
//! ([`Rounding`]), an MFMA's shape ([`Mfma`]) and the targets that have it. The generator
//! works them out from the mnemonic once, following the ISA documents' naming of types and
//! forms; the interpreter never looks at a name.
//!
//! Ref: AMD "Vega" ISA §12 (opcode tables), "AMD Instinct MI100/MI200/MI300" (CDNA1/2/3) ISA
//! guides.

pub use super::opcodes::Op;
use super::opcodes::ATTRS;
use super::Gfx9Target;

impl Op {
    /// The instruction's attributes.
    pub fn attrs(self) -> &'static OpAttrs {
        &ATTRS[self as usize]
    }

    /// The mnemonic without encoding suffix, e.g. `"v_add_co_u32"` (for disassembly and
    /// messages).
    pub fn name(self) -> &'static str {
        self.attrs().name
    }

    /// Whether `target` has the instruction (on some encoding).
    pub fn on(self, target: Gfx9Target) -> bool {
        self.attrs().targets & target.bit() != 0
    }
}

impl core::fmt::Display for Op {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which routine of the interpreter runs an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Class {
    /// Scalar ALU: SOP1, SOP2, SOPC, SOPK.
    Salu,
    /// `s_set_gpr_idx_on/off/idx/mode` (GPR index mode).
    SetGprIdx,
    /// Program control (SOPP).
    Sopp,
    /// Scalar loads through an address (`s_load_dword*`).
    SmemLoad,
    /// Scalar buffer loads, stores and atomics through a V# (`s_buffer_*`).
    SmemBuffer,
    /// Scalar stores and atomics through an address (`s_store_*`, `s_atomic_*`).
    SmemAddr,
    /// Scalar scratch loads and stores (`s_scratch_*`).
    SmemScratch,
    /// Scalar cache write-back and invalidation (`s_dcache_*`).
    SmemCache,
    /// The clock counters (`s_memtime`, `s_memrealtime`).
    SmemClock,
    /// VOP1/VOP2/VOPC/VOP3 vector ALU.
    Valu,
    /// `v_accvgpr_read/write/mov_b32`.
    Accvgpr,
    /// `v_mfma_*`.
    Mfma,
    /// The dot products `v_dot*` (VOP3P).
    Dot,
    /// The mixed-precision multiply-adds `v_fma_mix*`/`v_mad_mix*` (VOP3P).
    Mix,
    /// Other packed math (VOP3P).
    Packed,
    /// LDS reads, writes and atomics.
    Ds,
    /// The LDS-to-LDS forms `ds_*_src2_*`.
    DsSrc2,
    /// Lane moves without LDS: `ds_swizzle_b32`, `ds_permute_b32`, `ds_bpermute_b32`.
    DsLane,
    /// The global wave sync (GWS) resources: `ds_gws_init`, `ds_gws_sema_*`, `ds_gws_barrier`.
    DsGws,
    /// FLAT segment memory.
    Flat,
    /// GLOBAL segment memory.
    Global,
    /// SCRATCH segment memory.
    Scratch,
    /// MUBUF/MTBUF memory through a buffer resource.
    Buffer,
    /// Buffer cache control (`buffer_wbinvl1*`, `buffer_wbl2`, `buffer_inv*`).
    BufferCache,
    /// Image memory (MIMG).
    Image,
    /// Decoded and printed, not run: the interpreter stops with
    /// [`Status::IllegalInstruction`](hsa_core::Status::IllegalInstruction) naming it (gfx950
    /// additions it does not execute yet; `testdata/codeobjects/gfx9_opcodes.py`'s `notrun`
    /// rows).
    NotRun,
}

/// A float precision, or none (integer or bit data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp {
    /// Not a float.
    None,
    /// IEEE half.
    F16,
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
}

/// The operand type of a compare, as its mnemonic's suffix names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Ty {
    B32,
    B64,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
    F64,
}

/// A compare condition (VOPC `v_cmp[x]_<cond>_<type>`, SOPC `s_cmp_*`, SOPK `s_cmpk_*`):
/// the float conditions (`lg`, `o`, `u`, the negated `n*` forms, `tru`), the integer ones
/// (`ne`, `t`), the class test and the bit tests of `s_bitcmp0/1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Cond {
    F,
    Lt,
    Eq,
    Le,
    Gt,
    Lg,
    Ge,
    O,
    U,
    Nge,
    Nlg,
    Ngt,
    Nle,
    Neq,
    Nlt,
    Tru,
    Ne,
    T,
    Class,
    Bit0,
    Bit1,
}

/// What a compare instruction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compare {
    /// The condition.
    pub cond: Cond,
    /// The operand type.
    pub ty: Ty,
    /// `v_cmpx_*`: the result also goes to EXEC.
    pub exec: bool,
}

/// The read-modify-write of an atomic (FLAT/GLOBAL/MUBUF/SMEM/MIMG `*_atomic_<op>`, LDS
/// `ds_<op>[_rtn]_<type>`). Where LDS and memory atomics of one name differ in their
/// definition they are distinct variants (`DsAddF32`, `MinF`/`MaxF`, `Cmpst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Exchange (`swap`, LDS `wrxchg`).
    Swap,
    /// Compare-swap with the data first, then the compare value (memory `cmpswap`).
    CmpSwap,
    /// Integer add.
    Add,
    /// Integer subtract (`old - data`).
    Sub,
    /// Reverse subtract (`data - old`, LDS).
    Rsub,
    /// Signed minimum.
    Smin,
    /// Unsigned minimum.
    Umin,
    /// Signed maximum.
    Smax,
    /// Unsigned maximum.
    Umax,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Increment, wrapping to 0 at the data.
    Inc,
    /// Decrement, wrapping to the data at 0 or above it.
    Dec,
    /// Memory f32 add (flushes denormals: the L2's float atomics).
    AddF32,
    /// Memory (and gfx940 LDS) packed-f16 add.
    PkAddF16,
    /// gfx940 memory and LDS packed-bf16 add.
    PkAddBf16,
    /// Memory f64 add.
    AddF64,
    /// Memory f64 minimum.
    MinF64,
    /// Memory f64 maximum.
    MaxF64,
    /// LDS f32 add (denormals kept).
    DsAddF32,
    /// LDS float minimum (f32 or f64 by width).
    MinF,
    /// LDS float maximum.
    MaxF,
    /// LDS masked or: `(old & !data0) | data1`.
    Mskor,
    /// LDS compare-store: the compare value first (data0), then the new value (data1).
    Cmpst,
    /// LDS float compare-store.
    CmpstF,
    /// LDS wrap: `old >= data0 ? old - data0 : old + data1`.
    Wrap,
}

/// An atomic's operation and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Atomic {
    /// The operation.
    pub op: AtomicOp,
    /// 64-bit data.
    pub wide: bool,
}

/// The direction of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// A load.
    Load,
    /// A store.
    Store,
    /// An atomic read-modify-write.
    Atomic,
}

/// The data type of a FLAT/GLOBAL/SCRATCH or MUBUF/MTBUF load or store: the mnemonic's type
/// after `load_`/`store_`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemTy {
    /// An unsigned byte, zero-extended.
    Ubyte,
    /// A signed byte, sign-extended.
    Sbyte,
    /// An unsigned 16-bit value.
    Ushort,
    /// A signed 16-bit value.
    Sshort,
    /// A byte store.
    Byte,
    /// A 16-bit store.
    Short,
    /// Whole dwords (as many as the data registers).
    Dword,
    /// A 16-bit value into the low half of the VGPR.
    ShortD16,
    /// A 16-bit value into the high half.
    ShortD16Hi,
    /// A byte, zero-extended to 16 bits, into the low half.
    UbyteD16,
    /// ... into the high half.
    UbyteD16Hi,
    /// A byte, sign-extended to 16 bits, into the low half.
    SbyteD16,
    /// ... into the high half.
    SbyteD16Hi,
    /// A byte store of bits 23:16.
    ByteD16Hi,
    /// A format access of `comps` components (D16: 16-bit components; `hi`: the high half).
    Format {
        /// Components (1..=4).
        comps: u8,
        /// 16-bit components.
        d16: bool,
        /// The high half of the VGPR.
        hi: bool,
    },
}

impl MemTy {
    /// Bytes an access of this type moves with `dwords` data registers (format accesses:
    /// the format decides; `dwords * 4` here).
    pub const fn bytes(self, dwords: u8) -> usize {
        match self {
            MemTy::Ubyte
            | MemTy::Sbyte
            | MemTy::Byte
            | MemTy::UbyteD16
            | MemTy::UbyteD16Hi
            | MemTy::SbyteD16
            | MemTy::SbyteD16Hi
            | MemTy::ByteD16Hi => 1,
            MemTy::Ushort | MemTy::Sshort | MemTy::Short | MemTy::ShortD16 | MemTy::ShortD16Hi => 2,
            MemTy::Dword | MemTy::Format { .. } => dwords as usize * 4,
        }
    }
}

/// A memory instruction's access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mem {
    /// Load, store or atomic.
    pub dir: Dir,
    /// The data type (atomics: `Dword`).
    pub ty: MemTy,
}

/// Why a directed MODE.FP_ROUND is not modelled for an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmodelled {
    /// The dot products: the ISA gives no rounding of the sum.
    Dot,
    /// MFMA: the CDNA guides state no rounding.
    Mfma,
    /// gfx900's `v_mad_mix*`: which mode rounds the f32 product is not documented.
    MadMix,
    /// Only round to nearest even is modelled.
    Other,
}

/// How a directed MODE.FP_ROUND applies to an instruction (`mode::round_unsupported`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// The result does not depend on the rounding mode (compares, moves, min/max, integral
    /// rounding, exact conversions, the approximate functions specified in ULP).
    Exact,
    /// Rounded by the mode (`mode::FloatMode::directed`).
    Directed,
    /// `v_div_fmas_*`, rounded by the mode after its scaling (`mode::FloatMode::div_fmas`).
    ScaledFma,
    /// Not modelled under a directed mode, and why.
    Unmodelled(Unmodelled),
}

/// The element type of an MFMA's A and B matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Elem {
    F32,
    F16,
    Bf16,
    I8,
    F64,
    /// gfx940's XF32: an f32 whose low 13 mantissa bits the MFMA ignores.
    Xf32,
    /// 8-bit float with a 4-bit exponent (gfx940: E4M3 "FNUZ", bias 8, NaN 0x80; gfx950:
    /// OCP E4M3, bias 7).
    Fp8,
    /// 8-bit float with a 5-bit exponent (gfx940: E5M2 "FNUZ", bias 16, NaN 0x80; gfx950:
    /// OCP E5M2, bias 15).
    Bf8,
    /// gfx950's 6-bit float E2M3 (bias 1, no infinity or NaN; CDNA4 ISA §7.3 table 30).
    Fp6,
    /// gfx950's 6-bit float E3M2 (bias 3, no infinity or NaN).
    Bf6,
    /// gfx950's 4-bit float E2M1 (bias 1, no infinity or NaN).
    Fp4,
    /// gfx950's `v_mfma_*_f8f6f4`: A's format is chosen by `cbsz`, B's by `blgp` (0 FP8,
    /// 1 BF8, 2 FP6, 3 BF6, 4 FP4; CDNA4 ISA §7.1.5).
    F8f6f4,
}

/// An MFMA's dimensions (`v_mfma_<out>_<M>x<N>x<K>...<type>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mfma {
    /// Rows of A, C and D.
    pub m: u8,
    /// Columns of B, C and D.
    pub n: u8,
    /// Columns of A, rows of B.
    pub k: u8,
    /// A's element type.
    pub elem: Elem,
    /// B's element type (the FP8/BF8 forms may differ from A's).
    pub b_elem: Elem,
    /// An f64 result (register pairs).
    pub f64_out: bool,
    /// `v_smfmac_*`: A is 4:2 structured-sparse (half of K stored, with a compression index
    /// in src2), C and D are the destination registers.
    pub sparse: bool,
}

/// The properties of an instruction ([`Op::attrs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpAttrs {
    /// The mnemonic without encoding suffix.
    pub name: &'static str,
    /// Target bits of the processors that have it (`Gfx9Target::bit`).
    pub(crate) targets: u8,
    /// The routine that runs it.
    pub class: Class,
    /// The float kind of its sources: what `neg`/`abs`, inline float constants and
    /// MODE's input denormal flushing act on (a conversion's source type; `v_cndmask_b32`
    /// takes f32 `neg`/`abs`).
    pub src_fp: Fp,
    /// The result is an f16 (output modifier and clamp act on it as one).
    pub out_f16: bool,
    /// Output modifier and clamp act on the result as an f32.
    pub f32_result: bool,
    /// The result's precision for MODE's output denormal flushing.
    pub result_fp: Fp,
    /// A `v_cvt_*` conversion.
    pub cvt: bool,
    /// Bit 0: the mnemonic names f32; bit 1: f64 or f16 (the FP_ROUND fields that concern
    /// it).
    pub fp_names: u8,
    /// How a directed MODE.FP_ROUND applies.
    pub rounding: Rounding,
    /// The compare it makes.
    pub compare: Option<Compare>,
    /// The atomic operation.
    pub atomic: Option<Atomic>,
    /// The memory access (SMEM, FLAT/GLOBAL/SCRATCH, MUBUF/MTBUF).
    pub mem: Option<Mem>,
    /// The data moves between memory and LDS, not VGPRs (`global_load_lds_*`,
    /// `scratch_load_lds_*`, `buffer_store_lds_dword`).
    pub to_lds: bool,
    /// VOP3 `op_sel` is an operand field of this instruction although none of its operands
    /// is an f16 (the FP8/BF8 and scaled conversions, `v_ashr_pk_*`, gfx950's lane swaps
    /// where it holds `fi` and `bound_ctrl`); the decoder keeps it and the disassembler
    /// prints it (CDNA3/CDNA4 ISA, VOP3 op_sel).
    pub op_sel_operands: bool,
    /// An MFMA's shape (`None` for the MFMA types not modelled).
    pub mfma: Option<Mfma>,
}
