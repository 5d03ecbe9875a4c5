//! A gfx9 GPU's shader engines, arrays and compute units, and how amdkfd turns a queue's CU
//! mask (`AMDKFD_IOC_SET_CU_MASK`, ROCR's `hsa_amd_queue_cu_set_mask`) into the HQD's
//! per-engine enable masks `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` (the MQD's
//! [`V9Mqd::set_cu_masks`](super::mqd::V9Mqd::set_cu_masks)): the emulated amdkfd and a
//! bare-metal host computing an MQD's masks use the same rule.
//!
//! The shape comes from the node's KFD topology properties: `array_count` shader arrays in
//! all, `simd_arrays_per_engine` of them per shader engine, `simd_count / simd_per_cu`
//! active CUs. A topology does not say which CUs a
//! chip has harvested; the layout spreads its active CUs evenly, the first
//! `active % arrays` arrays (engine-major order) having one more than the others (an MI210's
//! 104 CUs over 8 engines of 1 array: 13 each).
//!
//! The mapping is amdkfd's for gfx9 (`kfd_mqd_manager.c` `mqd_symmetrically_map_cu_mask`,
//! CU mode, one XCC): the user's bits beyond the active CU count are dropped, and bit `i`
//! (counting from bit 0 of word 0) names the `i`-th CU in the order "CU 0 of array 0 of every
//! engine, then CU 0 of array 1 of every engine, then CU 1, ...", skipping array slots that
//! have no such CU; it enables bit `cu + 16 * sh` of engine `se`'s word. A mask so spread over
//! the engines keeps a queue's work balanced whichever bits the user set.

use crate::platform::NodeProperties;

/// Most shader engines an HQD has enable masks for (`COMPUTE_STATIC_THREAD_MGMT_SE0..SE7`).
pub const MAX_SHADER_ENGINES: usize = 8;

/// Most shader arrays per engine a mask word covers (16 bits each).
pub const MAX_SHADER_ARRAYS_PER_ENGINE: usize = 2;

/// Most CUs per shader array a mask word covers.
pub const MAX_CUS_PER_SHADER_ARRAY: usize = 16;

/// The shader engines, arrays and CUs of one GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderLayout {
    /// Shader engines (`array_count / simd_arrays_per_engine`), at most 8.
    pub shader_engines: usize,
    /// Shader arrays per engine (`simd_arrays_per_engine`), at most 2.
    pub arrays_per_engine: usize,
    /// Active CUs of each array, `[se][sh]`, each at most 16.
    pub cus: [[u8; MAX_SHADER_ARRAYS_PER_ENGINE]; MAX_SHADER_ENGINES],
}

impl ShaderLayout {
    /// The layout of a GPU node (module docs: even spread of the active CUs). Counts beyond
    /// what an HQD's masks can name (8 engines, 2 arrays each, 16 CUs an array) are cut to
    /// those limits; a node with no arrays gets one engine of one array.
    pub fn from_properties(p: &NodeProperties) -> ShaderLayout {
        let per_engine = (p.simd_arrays_per_engine as usize).clamp(1, MAX_SHADER_ARRAYS_PER_ENGINE);
        let engines = (p.array_count as usize / per_engine).clamp(1, MAX_SHADER_ENGINES);
        let arrays = engines * per_engine;
        let active = p.simd_count.checked_div(p.simd_per_cu).unwrap_or(0) as usize;
        let mut cus = [[0u8; MAX_SHADER_ARRAYS_PER_ENGINE]; MAX_SHADER_ENGINES];
        for (k, slot) in (0..arrays).map(|k| (k, (k / per_engine, k % per_engine))) {
            let n = active / arrays + usize::from(k < active % arrays);
            cus[slot.0][slot.1] = n.min(MAX_CUS_PER_SHADER_ARRAY) as u8;
        }
        ShaderLayout {
            shader_engines: engines,
            arrays_per_engine: per_engine,
            cus,
        }
    }

    /// Active CUs in all.
    pub fn cu_count(&self) -> usize {
        self.cus.iter().flatten().map(|&n| usize::from(n)).sum()
    }

    /// The enable masks with every active CU enabled: a new queue's (amdkfd leaves the HQD's
    /// masks all-ones until a CU mask is set; the CUs a chip lacks never run anything).
    pub fn all_cus(&self) -> [u32; MAX_SHADER_ENGINES] {
        self.map_cu_mask(&[u32::MAX; 32])
    }

    /// The per-engine enable masks (`COMPUTE_STATIC_THREAD_MGMT_SE0..SE7`) for the user's CU
    /// mask `mask` (bit `i` of word `w` is the user's CU `32 * w + i`), by amdkfd's rule
    /// (module docs). Bits beyond the active CUs are ignored; a mask naming none of them
    /// gives all-zero words.
    pub fn map_cu_mask(&self, mask: &[u32]) -> [u32; MAX_SHADER_ENGINES] {
        let bits = (mask.len() * 32).min(self.cu_count());
        let mut out = [0u32; MAX_SHADER_ENGINES];
        let mut i = 0usize;
        for cu in 0..MAX_CUS_PER_SHADER_ARRAY {
            for sh in 0..self.arrays_per_engine {
                for (se, word) in out.iter_mut().enumerate().take(self.shader_engines) {
                    if usize::from(self.cus[se][sh]) <= cu {
                        continue;
                    }
                    if i >= bits {
                        return out;
                    }
                    if mask[i / 32] >> (i % 32) & 1 != 0 {
                        *word |= 1 << (cu + 16 * sh);
                    }
                    i += 1;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(arrays: u32, per_engine: u32, cus: u32) -> NodeProperties {
        NodeProperties {
            array_count: arrays,
            simd_arrays_per_engine: per_engine,
            simd_count: cus * 4,
            simd_per_cu: 4,
            ..NodeProperties::default()
        }
    }

    #[test]
    fn mi210_has_eight_engines_of_thirteen() {
        let l = ShaderLayout::from_properties(&props(8, 1, 104));
        assert_eq!((l.shader_engines, l.arrays_per_engine), (8, 1));
        assert!((0..8).all(|se| l.cus[se][0] == 13));
        assert_eq!(l.cu_count(), 104);
        assert_eq!(l.all_cus(), [0x1FFF; 8]);
    }

    #[test]
    fn uneven_arrays_take_one_more_first() {
        // 4 engines x 2 arrays, 60 CUs: arrays 0..3 (SE0 SH0, SE0 SH1, SE1 SH0, SE1 SH1) 8.
        let l = ShaderLayout::from_properties(&props(8, 2, 60));
        assert_eq!(l.cus[0], [8, 8]);
        assert_eq!(l.cus[1], [8, 8]);
        assert_eq!(l.cus[2], [7, 7]);
        assert_eq!(l.cus[3], [7, 7]);
        assert_eq!(l.cu_count(), 60);
    }
}
