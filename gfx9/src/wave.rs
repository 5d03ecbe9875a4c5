//! The architectural state of one wave64: scalar registers (SGPRs, VCC, M0, EXEC in one
//! 128-entry file indexed like the operand encoding), SCC, VGPRs (and AGPRs on gfx90a/gfx942),
//! and the program counter.
//!
//! Ref: Vega ISA §3 "Kernel State" (operand codes: VCC 106/107, M0 124, EXEC 126/127).

use alloc::vec;
use alloc::vec::Vec;

/// Lanes per wave.
pub const WAVE_SIZE: usize = 64;
/// VGPRs (and AGPRs) per lane the interpreter provides.
pub const NUM_VGPRS: usize = 256;
/// Operand code of FLAT_SCRATCH (low half; 103 is the high half).
pub const FLAT_SCRATCH: usize = 102;
/// Operand code of VCC (low half; 107 is the high half).
pub const VCC: usize = 106;
/// Operand code of M0.
pub const M0: usize = 124;
/// Operand code of EXEC (low half; 127 is the high half).
pub const EXEC: usize = 126;

/// Where a wave is in its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaveState {
    /// Executing.
    Running,
    /// Waiting at `s_barrier` for the other waves of its work-group.
    AtBarrier,
    /// Waiting in a GWS instruction (`ds_gws_sema_p`, `ds_gws_barrier`) for another wave's
    /// GWS instruction; it runs the instruction again when the others have run.
    Waiting,
    /// Reached `s_endpgm`.
    Ended,
}

/// One wave64's registers.
#[derive(Clone, Debug)]
pub struct Wave {
    /// Scalar register file by operand code 0..=127 (s0..s101, flat_scratch 102/103,
    /// xnack_mask 104/105, VCC 106/107, ttmp 108..=123, M0 124, EXEC 126/127).
    pub sreg: [u32; 128],
    /// Scalar condition code.
    pub scc: bool,
    /// The MODE hardware register (`HW_REG_MODE`): FP_ROUND `[3:0]`, FP_DENORM `[7:4]`,
    /// DX10_CLAMP `[8]`, IEEE `[9]` (Vega ISA §3.8 "Mode register"); set from the kernel
    /// descriptor at launch, read and written by `s_getreg_b32`/`s_setreg_*`. VALU
    /// instructions apply FP_DENORM, DX10_CLAMP and IEEE, and FP_ROUND's directed modes for
    /// f32 add/sub/mul/fma/mad; another float instruction under a non-default FP_ROUND is an
    /// illegal-instruction error (the interpreter's `mode` module).
    pub mode: u32,
    /// The HW_ID hardware register (`HW_REG_HW_ID`): where the SPI launched the wave and
    /// from which queue (layout in [`super::hwid`]); read-only for the wave.
    pub hw_id: u32,
    /// VGPRs, `vgpr[reg * 64 + lane]`.
    pub vgpr: Vec<u32>,
    /// AGPRs, `agpr[reg * 64 + lane]` (empty on gfx900).
    pub agpr: Vec<u32>,
    /// Address of the next instruction.
    pub pc: u64,
    /// Running, at a barrier, or ended.
    pub state: WaveState,
    /// Instructions executed so far.
    pub executed: u64,
    /// While the wave waits in a GWS instruction: the resource's generation when it began
    /// waiting (a release moves the generation on).
    pub gws_wait: Option<u32>,
    /// Whether the GPU runs with SRAM ECC on ([`crate::exec::DispatchState::sramecc`]): a
    /// D16 load then writes 0 to the half of the VGPR it does not load instead of keeping
    /// it (LLVM's `d16PreservesUnusedBits` is false with SRAMECC, and compilers OR the two
    /// halves of a `_d16`/`_d16_hi` pair together).
    pub sramecc: bool,
    /// The process's FLAT apertures ([`crate::exec::DispatchState::apertures`]): where FLAT
    /// addresses go and what `src_shared_base`/`src_private_base` read.
    pub apertures: crate::aperture::Apertures,
}

impl Wave {
    /// A wave with all registers zero, at `pc`, with AGPRs when `agprs` is set.
    pub fn new(pc: u64, agprs: bool) -> Wave {
        Wave {
            sreg: [0; 128],
            scc: false,
            mode: 0,
            hw_id: 0,
            vgpr: vec![0; NUM_VGPRS * WAVE_SIZE],
            agpr: if agprs {
                vec![0; NUM_VGPRS * WAVE_SIZE]
            } else {
                Vec::new()
            },
            pc,
            state: WaveState::Running,
            executed: 0,
            gws_wait: None,
            sramecc: false,
            apertures: crate::aperture::Apertures::AMDKFD_GFX9,
        }
    }

    /// Resets every register to zero and the wave to `pc`, reusing the allocations.
    pub fn reset(&mut self, pc: u64) {
        self.reset_below(pc, NUM_VGPRS, NUM_VGPRS);
    }

    /// [`Wave::reset`] for a wave that never wrote VGPRs from `vgprs` up nor AGPRs from
    /// `agprs` up (those are still zero): zeroes only the registers below them, which is most
    /// of the cost of starting a wave when a kernel uses few of the 2 x 256 registers.
    pub fn reset_below(&mut self, pc: u64, vgprs: usize, agprs: usize) {
        self.sreg = [0; 128];
        self.scc = false;
        self.mode = 0;
        self.hw_id = 0;
        let v = (vgprs * WAVE_SIZE).min(self.vgpr.len());
        self.vgpr[..v].fill(0);
        let a = (agprs * WAVE_SIZE).min(self.agpr.len());
        self.agpr[..a].fill(0);
        self.pc = pc;
        self.state = WaveState::Running;
        self.executed = 0;
        self.gws_wait = None;
    }

    /// The 64-bit value of scalar registers `index`, `index + 1`.
    pub fn sreg64(&self, index: usize) -> u64 {
        let lo = self.sreg.get(index).copied().unwrap_or(0) as u64;
        let hi = self.sreg.get(index + 1).copied().unwrap_or(0) as u64;
        lo | hi << 32
    }

    /// Sets scalar registers `index`, `index + 1` to a 64-bit value.
    pub fn set_sreg64(&mut self, index: usize, value: u64) {
        if let Some(r) = self.sreg.get_mut(index) {
            *r = value as u32;
        }
        if let Some(r) = self.sreg.get_mut(index + 1) {
            *r = (value >> 32) as u32;
        }
    }

    /// The EXEC mask.
    pub fn exec(&self) -> u64 {
        self.sreg64(EXEC)
    }

    /// Sets the EXEC mask.
    pub fn set_exec(&mut self, mask: u64) {
        self.set_sreg64(EXEC, mask);
    }

    /// The VCC mask.
    pub fn vcc(&self) -> u64 {
        self.sreg64(VCC)
    }

    /// VGPR `reg` of `lane` (0 for a register beyond [`NUM_VGPRS`]).
    pub fn v(&self, reg: usize, lane: usize) -> u32 {
        self.vgpr.get(reg * WAVE_SIZE + lane).copied().unwrap_or(0)
    }

    /// Sets VGPR `reg` of `lane` (ignored beyond [`NUM_VGPRS`]).
    pub fn set_v(&mut self, reg: usize, lane: usize, value: u32) {
        if let Some(r) = self.vgpr.get_mut(reg * WAVE_SIZE + lane) {
            *r = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_and_vcc_live_at_their_operand_codes() {
        let mut w = Wave::new(0x100, false);
        w.set_exec(0xFFFF_0000_0000_FFFF);
        assert_eq!(w.sreg[126], 0xFFFF);
        assert_eq!(w.sreg[127], 0xFFFF_0000);
        w.sreg[106] = 5;
        assert_eq!(w.vcc(), 5);
        w.set_v(3, 63, 7);
        assert_eq!(w.v(3, 63), 7);
        assert_eq!(w.v(NUM_VGPRS, 0), 0);
    }
}
