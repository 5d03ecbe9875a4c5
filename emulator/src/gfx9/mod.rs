//! GFX9 (wave64) machine code: decoder, disassembler text and a wave interpreter, so the
//! emulated device can run the real kernels of gfx900, gfx90a and gfx942 code objects.
//!
//! - [`decode()`]: bytes → [`Instruction`] (SOP1/SOP2/SOPK/SOPC/SOPP, SMEM, VOP1/VOP2/VOPC,
//!   VOP3a/b, DS, FLAT/GLOBAL); unknown encodings are [`Status::IllegalInstruction`](hsa_core::Status)
//!   errors, never panics.
//! - `Display` for [`Instruction`]: text in `llvm-objdump`'s syntax.
//! - [`exec`]: [`exec::run_dispatch`] runs every work-group of a dispatch over
//!   a [`exec::DeviceMemory`], with the launch state of AMDGPUUsage "Initial Kernel Execution
//!   State".
//!
//! Ref: AMD "Vega" Instruction Set Architecture (gfx900), "AMD Instinct MI200" (CDNA2, gfx90a)
//! and "AMD Instinct MI300" (CDNA3, gfx942) ISA reference guides; LLVM AMDGPUUsage.

pub mod decode;
mod disasm;
pub mod exec;
mod f16;
mod opcodes;
pub mod wave;

pub use decode::{decode, Dpp, Encoding, Instruction, Modifiers, OpInfo, Operand, Sdwa, SdwaSel};

use hsa_core::isa::Processor;

/// A GFX9 processor whose machine code this module runs. gfx9-generic code objects use
/// [`Gfx9Target::Gfx900`] (the generic target's instructions are gfx900's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gfx9Target {
    /// gfx900 (Vega 10), also used for gfx9-generic.
    Gfx900,
    /// gfx90a (MI200, CDNA2): packed work-item ids, AGPRs, `v_fmac_f32`.
    Gfx90a,
    /// gfx942 (MI300, CDNA3): packed work-item ids, `sc0`/`sc1`/`nt` cache bits,
    /// `v_lshl_add_u64`, `v_mov_b64`.
    Gfx942,
}

impl Gfx9Target {
    /// The interpreter's model of `processor` (a row of the crate's processor table, e.g. a
    /// code object's or an agent's
    /// [`TargetId::processor`](hsa_core::isa::TargetId::processor)): gfx900 and gfx9-generic
    /// → `Gfx900`, gfx90a, gfx942. `None` for any other processor.
    pub fn from_processor(processor: Processor) -> Option<Gfx9Target> {
        match processor {
            Processor::GFX900 | Processor::GFX9_GENERIC => Some(Gfx9Target::Gfx900),
            Processor::GFX90A => Some(Gfx9Target::Gfx90a),
            Processor::GFX942 => Some(Gfx9Target::Gfx942),
            _ => None,
        }
    }

    /// The processor whose machine code this model runs (gfx900 for gfx9-generic code too).
    pub const fn processor(self) -> Processor {
        match self {
            Gfx9Target::Gfx900 => Processor::GFX900,
            Gfx9Target::Gfx90a => Processor::GFX90A,
            Gfx9Target::Gfx942 => Processor::GFX942,
        }
    }

    /// The processor name, e.g. `"gfx90a"`.
    pub fn name(self) -> &'static str {
        self.processor().name()
    }

    /// Whether work-item ids are packed into v0 (bits 0..9 x, 10..19 y, 20..29 z):
    /// gfx90a and gfx942 (AMDGPUUsage "Initial Kernel Execution State").
    pub const fn packed_workitem_ids(self) -> bool {
        !matches!(self, Gfx9Target::Gfx900)
    }

    /// Whether the hardware initializes FLAT_SCRATCH to the wave's scratch ("architected
    /// flat scratch", gfx940+): no private segment buffer or wave offset SGPRs
    /// (AMDGPUUsage "Flat Scratch").
    pub const fn architected_flat_scratch(self) -> bool {
        matches!(self, Gfx9Target::Gfx942)
    }

    pub(crate) const fn bit(self) -> u8 {
        match self {
            Gfx9Target::Gfx900 => decode::T_GFX900,
            Gfx9Target::Gfx90a => decode::T_GFX90A,
            Gfx9Target::Gfx942 => decode::T_GFX942,
        }
    }
}
