//! Where the SPI places a dispatch's work-groups, and what a wave reads in `HW_REG_HW_ID`.
//!
//! A gfx9 compute queue's HQD holds one enable mask per shader engine,
//! `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7`: bit `cu + 16 * sh` of the word of shader engine
//! `se` lets the queue's waves run on compute unit `cu` of shader array `sh` of that engine
//! (amdkfd writes them from the user's CU mask: `kfd_mqd_manager.c`
//! `mqd_symmetrically_map_cu_mask`). The SPI launches each work-group on one enabled CU,
//! spreading consecutive work-groups over the shader engines first. The interpreter models
//! that placement deterministically: work-group `n` (flat index, dispatch order) runs on
//! entry `n % k` of the `k` enabled CUs listed in the SPI's order ([`enabled_cus`]: CU 0 of
//! every array of every engine, then CU 1, ...), so every enabled CU is used once a dispatch
//! has at least `k` work-groups, and no disabled one ever is.
//!
//! `s_getreg_b32 hwreg(HW_REG_HW_ID)` (hardware register 4 on gfx9, LLVM's `HW_REG_HW_ID`)
//! then reads [`hw_id`], the "HW_ID" hardware register of the Vega and MI100/MI200/MI300 ISA
//! documents (the same table in ROCm-Device-Libs' `__smid`): WAVE_ID `[3:0]`, SIMD_ID `[5:4]`,
//! PIPE_ID `[7:6]`, CU_ID `[11:8]`, SH_ID `[12]`, SE_ID `[14:13]` (`[15:13]` on gfx908 and
//! gfx90a, whose chips have 8 shader engines; gfx942's XCCs have 4 and name the XCC in
//! `HW_REG_XCC_ID` instead), TG_ID `[19:16]`, VM_ID `[23:20]`, QUEUE_ID `[26:24]`,
//! STATE_ID `[29:27]` (graphics only: 0), ME_ID `[31:30]`. The SE_ID widths per target are
//! those ROCm's HIP headers use for `__smid()` (`amd_device_functions.h`). A gfx942 GPU
//! given more than 4 engines in one XCC (the built-in profile's MI210 shape under
//! `builtin_topology_for(90402)`) thus reads SE_ID modulo 4.
//!
//! `s_getreg_b32 hwreg(HW_REG_XCC_ID)` (hardware register 20, gfx940+ only) reads
//! [`XCC_ID`]: the emulated GPU is one XCC (its shader layout, `device::cu_mask`, is built
//! from the node's engines and CUs without splitting them by `num_xcc`, and every built-in
//! profile has `num_xcc` 1), so every wave runs on XCC 0.

use alloc::vec::Vec;

use super::Gfx9Target;

/// What `HW_REG_XCC_ID` (gfx940+ hardware register 20; XCC_ID in bits `[3:0]`, CDNA3 ISA
/// "Hardware registers") reads on the emulated GPU: 0, the one XCC it models (module docs).
pub const XCC_ID: u32 = 0;

/// The enable-mask limits of an HQD (`COMPUTE_STATIC_THREAD_MGMT_SE0..SE7`: 8 engines, 2
/// arrays of 16 CUs a word), defined with the CU mask rule in hsa-core.
pub use hsa_core::wire::cu_mask::{
    MAX_CUS_PER_SHADER_ARRAY, MAX_SHADER_ARRAYS_PER_ENGINE, MAX_SHADER_ENGINES,
};

/// One compute unit: shader engine, shader array within it, CU within the array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CuId {
    /// Shader engine (HW_ID.SE_ID).
    pub se: u8,
    /// Shader array within the engine (HW_ID.SH_ID).
    pub sh: u8,
    /// Compute unit within the array (HW_ID.CU_ID).
    pub cu: u8,
}

/// What the SPI knows when it launches a dispatch's waves: which CUs the queue may use and
/// which queue it is. Ref: `COMPUTE_STATIC_THREAD_MGMT_SE*` and the HQD's ME/pipe/queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveLaunch {
    /// `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7`: bit `cu + 16 * sh` of word `se` enables that CU.
    pub cu_enable: [u32; MAX_SHADER_ENGINES],
    /// Micro-engine of the queue (1: MEC1, where amdkfd's compute queues live).
    pub me_id: u8,
    /// Pipe of the MEC the queue is mapped to (0..3).
    pub pipe_id: u8,
    /// Queue slot within the pipe (0..7).
    pub queue_id: u8,
    /// VMID of the process's address space (amdkfd's compute VMIDs are 8..15 on gfx9).
    pub vm_id: u8,
}

impl WaveLaunch {
    /// A device of one CU (SE 0, SH 0, CU 0) with every id 0: for callers that have no queue
    /// (the interpreter run directly, a command processor outside the emulated amdkfd).
    pub const SINGLE_CU: WaveLaunch = WaveLaunch {
        cu_enable: [1, 0, 0, 0, 0, 0, 0, 0],
        me_id: 0,
        pipe_id: 0,
        queue_id: 0,
        vm_id: 0,
    };
}

impl Default for WaveLaunch {
    fn default() -> WaveLaunch {
        WaveLaunch::SINGLE_CU
    }
}

/// The CUs `cu_enable` enables, in the order the SPI spreads work-groups over them: CU 0 of
/// shader array 0 of every engine, then of array 1, then CU 1, and so on (the order amdkfd
/// numbers the user's mask bits in). Empty when no bit is set.
pub fn enabled_cus(cu_enable: &[u32; MAX_SHADER_ENGINES]) -> Vec<CuId> {
    let mut out = Vec::new();
    for cu in 0..MAX_CUS_PER_SHADER_ARRAY {
        for sh in 0..MAX_SHADER_ARRAYS_PER_ENGINE {
            for (se, word) in cu_enable.iter().enumerate() {
                if word >> (cu + 16 * sh) & 1 != 0 {
                    out.push(CuId {
                        se: se as u8,
                        sh: sh as u8,
                        cu: cu as u8,
                    });
                }
            }
        }
    }
    out
}

/// The HW_ID of wave `wave_in_group` of a work-group running on `cu` for `launch`'s queue,
/// on `target` (module docs: the layout). The work-group's waves go to the CU's 4 SIMDs in
/// turn (SIMD_ID = wave % 4, WAVE_ID = wave / 4, the wave's slot on its SIMD); the emulated
/// CU runs one work-group at a time, so TG_ID is 0.
pub fn hw_id(target: Gfx9Target, cu: CuId, wave_in_group: usize, launch: &WaveLaunch) -> u32 {
    let se_bits = match target {
        Gfx9Target::Gfx908 | Gfx9Target::Gfx90a => 0x7,
        _ => 0x3,
    };
    let w = wave_in_group as u32;
    ((w / 4) & 0xF)
        | (w % 4) << 4
        | u32::from(launch.pipe_id & 0x3) << 6
        | u32::from(cu.cu & 0xF) << 8
        | u32::from(cu.sh & 0x1) << 12
        | (u32::from(cu.se) & se_bits) << 13
        | u32::from(launch.vm_id & 0xF) << 20
        | u32::from(launch.queue_id & 0x7) << 24
        | u32::from(launch.me_id & 0x3) << 30
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spi_order_spreads_over_engines_first() {
        let mut m = [0u32; 8];
        m[0] = 0b11 | 1 << 16; // SE0: SH0 CU0, CU1; SH1 CU0
        m[3] = 0b10; // SE3: SH0 CU1
        let l = enabled_cus(&m);
        let id = |se, sh, cu| CuId { se, sh, cu };
        assert_eq!(
            l,
            [id(0, 0, 0), id(0, 1, 0), id(0, 0, 1), id(3, 0, 1)].to_vec()
        );
        assert!(enabled_cus(&[0; 8]).is_empty());
    }

    #[test]
    fn hw_id_fields_sit_where_the_isa_puts_them() {
        let launch = WaveLaunch {
            cu_enable: [0; 8],
            me_id: 1,
            pipe_id: 2,
            queue_id: 5,
            vm_id: 8,
        };
        let cu = CuId {
            se: 6,
            sh: 1,
            cu: 13,
        };
        // wave 6: SIMD 2, slot 1.
        let v = hw_id(Gfx9Target::Gfx90a, cu, 6, &launch);
        assert_eq!(v & 0xF, 1);
        assert_eq!(v >> 4 & 3, 2);
        assert_eq!(v >> 6 & 3, 2);
        assert_eq!(v >> 8 & 0xF, 13);
        assert_eq!(v >> 12 & 1, 1);
        assert_eq!(v >> 13 & 7, 6);
        assert_eq!(v >> 16 & 0xF, 0);
        assert_eq!(v >> 20 & 0xF, 8);
        assert_eq!(v >> 24 & 7, 5);
        assert_eq!(v >> 27 & 7, 0);
        assert_eq!(v >> 30, 1);
        assert_eq!(v, 0x4580_DDA1);
        // gfx900's SE_ID has 2 bits, bit 15 stays 0.
        let v = hw_id(Gfx9Target::Gfx900, cu, 6, &launch);
        assert_eq!(v >> 13 & 7, 2);
    }
}
