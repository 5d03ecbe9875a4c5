//! # hsa-gfx9
//!
//! GFX9 (wave64) machine code: decoder, disassembler text and a wave interpreter, so the
//! emulated device (`hsa-emu`), hsainfo's disassembler, the fuzz targets and a VM's device
//! model run and print the real kernels of gfx900, gfx90a and gfx942 code objects. It depends
//! on `hsa-core` only (for `Status`, the kernel descriptor and the processor table): whatever
//! it needs from a host (device memory, the message interrupt, the clock counter) comes in
//! through [`exec::DeviceMemory`].
//!
//! - [`decode()`]: bytes → [`Instruction`] (SOP1/SOP2/SOPK/SOPC/SOPP, SMEM, VOP1/VOP2/VOPC
//!   with SDWA/DPP, VOP3a/b, VOP3P and VOP3P-MAI (`v_mfma_*`, `v_accvgpr_*` on gfx908+), DS,
//!   FLAT/GLOBAL/SCRATCH, MUBUF, MTBUF, MIMG (gfx900..gfx90a)); unknown encodings are [`Status::IllegalInstruction`](hsa_core::Status)
//!   errors, never panics.
//! - [`Op`]: the typed instruction, one variant per mnemonic, with its [`OpAttrs`] (execution
//!   class, operand float kinds, compare, atomic, memory access, MODE rounding class, MFMA
//!   shape, targets), generated with the opcode table (`opcodes.rs`) by
//!   `testdata/codeobjects/gfx9_opcodes.py`; the interpreter executes by `Op` and its
//!   attributes, never by the mnemonic.
//! - `Display` for [`Instruction`]: text in `llvm-objdump`'s syntax.
//! - [`exec`]: [`exec::run_dispatch`] runs every work-group of a dispatch over
//!   a [`exec::DeviceMemory`], with the launch state of AMDGPUUsage "Initial Kernel Execution
//!   State"; one module per encoding family (`exec/scalar.rs` SOP*, `smem.rs`, `valu.rs`
//!   VOP1/VOP2/VOPC/VOP3 with SDWA/DPP, `vop3p.rs`, `ds.rs`, `memory.rs` FLAT/MUBUF/MTBUF,
//!   `image.rs` MIMG; `cache.rs` the decode cache).
//!
//! Ref: AMD "Vega" Instruction Set Architecture (gfx900), "AMD Instinct MI200" (CDNA2, gfx90a)
//! and "AMD Instinct MI300" (CDNA3, gfx942) ISA reference guides; LLVM AMDGPUUsage.

#![deny(unsafe_code)]

extern crate alloc;

pub mod aperture;
pub mod decode;
mod disasm;
pub mod exec;
mod f16;
mod fast;
mod fdiv;
mod fma;
mod format;
mod fp8;
pub mod hwid;
mod mai;
mod mode;
pub mod op;
mod opcodes;
mod round;
pub mod tiling;
pub mod wave;

pub use decode::{decode, Dpp, Encoding, Instruction, Modifiers, OpInfo, Operand, Sdwa, SdwaSel};
pub use op::{Op, OpAttrs};

use hsa_core::isa::Processor;

/// A GFX9 processor whose machine code this module runs. gfx9-generic code objects and the
/// gfx900 variants gfx902, gfx909 and gfx90c (the same instructions: AMDGPUUsage's processor
/// table lists no ISA feature of theirs beyond gfx900's) use [`Gfx9Target::Gfx900`]; gfx904,
/// which has the fused `v_fma_mix*` where gfx900 has `v_mad_mix*` (LLVM's
/// FeatureISAVersion9_0_4: fma-mix-insts, no mad-mix-insts), has a model of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Gfx9Target {
    /// gfx900 (Vega 10), also used for gfx9-generic and gfx902/gfx909/gfx90c.
    Gfx900,
    /// gfx904 (Vega 12): gfx900's instructions with `v_fma_mix_f32`, `v_fma_mixlo_f16` and
    /// `v_fma_mixhi_f16` (one rounding) at the opcodes of gfx900's `v_mad_mix*`.
    Gfx904,
    /// gfx906 (Vega 20, MI50/MI60): gfx900 plus the dot-product, `v_fma_mix` and
    /// `v_fmac_f32` instructions (AMDGPUUsage: dl-insts, dot*-insts), sramecc.
    Gfx906,
    /// gfx908 (MI100, CDNA1): gfx906 plus AGPRs and MFMA, and the non-returning
    /// `global_atomic_add_f32`/`global_atomic_pk_add_f16`.
    Gfx908,
    /// gfx90a (MI200, CDNA2): packed work-item ids, AGPRs in the unified register file and as
    /// memory operands, packed f32 math, returning float atomics and f64 atomics.
    Gfx90a,
    /// gfx942 (MI300, CDNA3): packed work-item ids, `sc0`/`sc1`/`nt` cache bits,
    /// architected flat scratch, `v_lshl_add_u64`, `v_mov_b64`. Also runs gfx940 and gfx941
    /// code: the same instruction set (LLVM's GFX940 subtarget); those two only differ in
    /// what the compiler emits (every store with `sc0 sc1`, AMDGPUUsage's memory model for
    /// them), which this model runs as written.
    Gfx942,
    /// gfx950 (MI350, CDNA4): gfx942's instruction set without the xf32 MFMAs,
    /// `buffer_wbinvl1*` and `buffer_store_lds_dword`, plus CDNA4's (AMD's "CDNA4 ISA"
    /// guide; LLVM's FeatureGFX950Insts): the larger f16/bf16/i8 MFMAs and SMFMACs, the
    /// f8f6f4 and scaled MFMAs, the scaled FP8/FP6/FP4 conversions, `v_prng_b32`,
    /// `v_permlane16/32_swap_b32`, `v_bitop3_*`, the transposing LDS reads and the wider
    /// loads to LDS. The decoder and disassembler know every instruction LLVM 22 decodes for
    /// it except those `testdata/gfx9_census/gfx950_gaps.txt` lists. Its FP8/BF8 are the OCP
    /// formats (CDNA4 ISA §7.3), not gfx942's FNUZ ones. Of the additions the interpreter
    /// runs `v_bitop3_b32`, `v_cvt_f32_bf16`, the lane swaps, `v_prng_b32`, the scaled
    /// FP8/BF8/FP4 conversions but the stochastic-rounding ones (`exec/scaled.rs`),
    /// `v_minimum3_f32`/`v_maximum3_f32`, `v_pk_minimum3_f16`/`v_pk_maximum3_f16`,
    /// `v_cvt_pk_f16_f32`/`v_cvt_pk_bf16_f32`, `v_ashr_pk_i8_i32`/`v_ashr_pk_u8_i32`,
    /// `buffer_atomic_pk_add_bf16`, the dense f16/bf16/i8 MFMAs with twice gfx942's K and
    /// the f8f6f4 MFMAs (A's and B's formats in cbsz/blgp) with and without their E8M0
    /// scales (`v_mfma_scale_*`, 16 bytes), and stops at the others with an
    /// illegal-instruction error naming them.
    Gfx950,
}

impl Gfx9Target {
    /// The interpreter's model of `processor` (a row of the crate's processor table, e.g. a
    /// code object's or an agent's
    /// [`TargetId::processor`](hsa_core::isa::TargetId::processor)): gfx900, its variants
    /// gfx902/gfx904/gfx909/gfx90c and gfx9-generic → `Gfx900`; gfx906, gfx908, gfx90a;
    /// gfx904; gfx940, gfx941 and gfx942 → `Gfx942`. `None` for any other processor.
    pub fn from_processor(processor: Processor) -> Option<Gfx9Target> {
        Some(match processor.name() {
            "gfx900" | "gfx902" | "gfx909" | "gfx90c" | "gfx9-generic" => Gfx9Target::Gfx900,
            "gfx904" => Gfx9Target::Gfx904,
            "gfx906" => Gfx9Target::Gfx906,
            "gfx908" => Gfx9Target::Gfx908,
            "gfx90a" => Gfx9Target::Gfx90a,
            "gfx940" | "gfx941" | "gfx942" => Gfx9Target::Gfx942,
            "gfx950" => Gfx9Target::Gfx950,
            _ => return None,
        })
    }

    /// The processor whose machine code this model runs (gfx900 for its variants and for
    /// gfx9-generic code too).
    pub const fn processor(self) -> Processor {
        match self {
            Gfx9Target::Gfx900 => Processor::GFX900,
            Gfx9Target::Gfx904 => Processor::GFX904,
            Gfx9Target::Gfx906 => Processor::GFX906,
            Gfx9Target::Gfx908 => Processor::GFX908,
            Gfx9Target::Gfx90a => Processor::GFX90A,
            Gfx9Target::Gfx942 => Processor::GFX942,
            Gfx9Target::Gfx950 => Processor::GFX950,
        }
    }

    /// The processor name, e.g. `"gfx90a"`.
    pub fn name(self) -> &'static str {
        self.processor().name()
    }

    /// VGPRs per unit of `COMPUTE_PGM_RSRC1.VGPRS` (AMDGPUUsage "compute_pgm_rsrc1",
    /// GRANULATED_WORKITEM_VGPR_COUNT): 8 on gfx90a, gfx942 and gfx950 (the unified VGPR and
    /// AGPR file), 4 before.
    pub const fn vgpr_granule(self) -> usize {
        if matches!(
            self,
            Gfx9Target::Gfx90a | Gfx9Target::Gfx942 | Gfx9Target::Gfx950
        ) {
            8
        } else {
            4
        }
    }

    /// Whether work-item ids are packed into v0 (bits 0..9 x, 10..19 y, 20..29 z):
    /// gfx90a, gfx942 and gfx950 (AMDGPUUsage "Initial Kernel Execution State").
    pub const fn packed_workitem_ids(self) -> bool {
        matches!(
            self,
            Gfx9Target::Gfx90a | Gfx9Target::Gfx942 | Gfx9Target::Gfx950
        )
    }

    /// Whether waves have AGPRs (accumulation registers): gfx908, gfx90a, gfx942, gfx950.
    pub const fn has_agprs(self) -> bool {
        matches!(
            self,
            Gfx9Target::Gfx908 | Gfx9Target::Gfx90a | Gfx9Target::Gfx942 | Gfx9Target::Gfx950
        )
    }

    /// Whether DS, FLAT and MUBUF instructions can name AGPRs as data (the `acc` bit) and
    /// carry a third cache bit (gfx90a `scc`, gfx940 `sc1`): gfx90a, gfx942 and gfx950.
    pub const fn has_acc_memory_operands(self) -> bool {
        matches!(
            self,
            Gfx9Target::Gfx90a | Gfx9Target::Gfx942 | Gfx9Target::Gfx950
        )
    }

    /// Whether the hardware initializes FLAT_SCRATCH to the wave's scratch ("architected
    /// flat scratch", gfx940+): no private segment buffer or wave offset SGPRs
    /// (AMDGPUUsage "Flat Scratch").
    pub const fn architected_flat_scratch(self) -> bool {
        self.is_gfx940()
    }

    /// Whether this is a gfx940-family model (LLVM's GFX940 subtarget features: the
    /// `sc0`/`sc1`/`nt` cache bits, architected flat scratch, the FP8 instructions, the renamed
    /// MFMAs and the gfx940 hardware registers): gfx942 and gfx950.
    pub const fn is_gfx940(self) -> bool {
        matches!(self, Gfx9Target::Gfx942 | Gfx9Target::Gfx950)
    }

    /// The target's bit in the opcode table's target masks.
    pub(crate) const fn bit(self) -> u8 {
        match self {
            Gfx9Target::Gfx900 => decode::T_GFX900,
            Gfx9Target::Gfx904 => decode::T_GFX904,
            Gfx9Target::Gfx906 => decode::T_GFX906,
            Gfx9Target::Gfx908 => decode::T_GFX908,
            Gfx9Target::Gfx90a => decode::T_GFX90A,
            Gfx9Target::Gfx942 => decode::T_GFX942,
            Gfx9Target::Gfx950 => decode::T_GFX950,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processors_map_to_their_models() {
        let of = |name: &str| Gfx9Target::from_processor(Processor::from_name(name).unwrap());
        for v in ["gfx900", "gfx902", "gfx909", "gfx90c", "gfx9-generic"] {
            assert_eq!(of(v), Some(Gfx9Target::Gfx900), "{v}");
        }
        assert_eq!(of("gfx904"), Some(Gfx9Target::Gfx904));
        assert_eq!(of("gfx906"), Some(Gfx9Target::Gfx906));
        assert_eq!(of("gfx908"), Some(Gfx9Target::Gfx908));
        assert_eq!(of("gfx90a"), Some(Gfx9Target::Gfx90a));
        for v in ["gfx940", "gfx941", "gfx942"] {
            assert_eq!(of(v), Some(Gfx9Target::Gfx942), "{v}");
        }
        assert_eq!(of("gfx950"), Some(Gfx9Target::Gfx950));
        // Not modelled here: the gfx9-4 generic target (the loader runs its code objects as
        // the agent's processor), gfx10+.
        for v in ["gfx9-4-generic", "gfx1030"] {
            assert_eq!(of(v), None, "{v}");
        }
        // Feature differences (AMDGPUUsage): AGPRs from gfx908, packed work-item ids and AGPR
        // memory operands from gfx90a, architected flat scratch on gfx940+.
        let t = [
            Gfx9Target::Gfx900,
            Gfx9Target::Gfx904,
            Gfx9Target::Gfx906,
            Gfx9Target::Gfx908,
            Gfx9Target::Gfx90a,
            Gfx9Target::Gfx942,
            Gfx9Target::Gfx950,
        ];
        let agprs: Vec<bool> = t.iter().map(|t| t.has_agprs()).collect();
        assert_eq!(agprs, [false, false, false, true, true, true, true]);
        let packed: Vec<bool> = t.iter().map(|t| t.packed_workitem_ids()).collect();
        assert_eq!(packed, [false, false, false, false, true, true, true]);
        let arch: Vec<bool> = t.iter().map(|t| t.architected_flat_scratch()).collect();
        assert_eq!(arch, [false, false, false, false, false, true, true]);
        let granule: Vec<usize> = t.iter().map(|t| t.vgpr_granule()).collect();
        assert_eq!(granule, [4, 4, 4, 4, 8, 8, 8]);
        let acc: Vec<bool> = t.iter().map(|t| t.has_acc_memory_operands()).collect();
        assert_eq!(acc, [false, false, false, false, true, true, true]);
        assert_eq!(Gfx9Target::Gfx908.name(), "gfx908");
    }
}
