//! Agent ISAs: the processor name from amdkfd's `gfx_target_version`, which target features
//! (SRAMECC, XNACK) a processor has, and the full ISA name in ROCR's form
//! (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
//!
//! Ref: LLVM AMDGPUUsage, "Processors" and "Target Features" tables, and "Target ID";
//! amdkfd `kfd_topology.c` (gfx_target_version = major * 10000 + minor * 100 + stepping).

use core::fmt::Write;

/// Capacity, bytes, of a processor name such as `gfx90a` or `gfx1100`.
pub const PROCESSOR_NAME_CAPACITY: usize = 16;
/// Capacity, bytes, of a full ISA name.
pub const ISA_NAME_CAPACITY: usize = 64;

/// A processor name, e.g. `gfx90a`.
pub type ProcessorName = heapless::String<PROCESSOR_NAME_CAPACITY>;
/// A full ISA name, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
pub type IsaName = heapless::String<ISA_NAME_CAPACITY>;

/// The processor name for a `gfx_target_version`: 90010 → `gfx90a`, 90402 → `gfx942`,
/// 110000 → `gfx1100`, 100300 → `gfx1030`. `None` for 0 or a version whose minor or stepping
/// does not fit one hex digit.
pub fn processor_from_gfx_target_version(version: u32) -> Option<ProcessorName> {
    let major = version / 10_000;
    let minor = (version / 100) % 100;
    let stepping = version % 100;
    if major == 0 || minor > 15 || stepping > 15 {
        return None;
    }
    let mut name = ProcessorName::new();
    write!(name, "gfx{major}{minor:x}{stepping:x}").ok()?;
    Some(name)
}

/// The `gfx_target_version` of a processor name: `gfx90a` → 90010. `None` when the name is not
/// `gfx` followed by a major number and two hex digits.
pub fn gfx_target_version_from_processor(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("gfx")?;
    if digits.len() < 3 || !digits.is_ascii() {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let major: u32 = major.parse().ok()?;
    let minor = u32::from_str_radix(&rest[..1], 16).ok()?;
    let stepping = u32::from_str_radix(&rest[1..], 16).ok()?;
    Some(major * 10_000 + minor * 100 + stepping)
}

/// Whether a processor supports the SRAMECC target feature (AMDGPUUsage "Processors" table:
/// gfx906, gfx908, gfx90a, gfx940, gfx941, gfx942, gfx950).
pub fn supports_sramecc(processor: &str) -> bool {
    matches!(
        processor,
        "gfx906" | "gfx908" | "gfx90a" | "gfx940" | "gfx941" | "gfx942" | "gfx950"
    )
}

/// Whether a processor supports the XNACK target feature (AMDGPUUsage: the GFX8 APUs, all of
/// GFX9, and gfx1010–gfx1013).
pub fn supports_xnack(processor: &str) -> bool {
    matches!(
        processor,
        "gfx801" | "gfx810" | "gfx1010" | "gfx1011" | "gfx1012" | "gfx1013"
    ) || (processor.starts_with("gfx9") && processor.len() == 6)
}

/// The wavefront sizes, in work-items (lanes), a processor can run, by `gfx_target_version`:
/// `[64]` for GFX6 to GFX9 (GCN and CDNA: gfx900, gfx90a, gfx942, gfx950, ...), `[32, 64]` for
/// GFX10, GFX11 and GFX12 up to gfx1201 (wave32 by default, wave64 with the `wavefrontsize64`
/// target feature), `[32]` for GFX12.5 (gfx1250 refuses `wavefrontsize64`); `None` for 0 and
/// for majors this table does not know.
///
/// Ref: LLVM AMDGPUUsage, "Target Features" (`wavefrontsize64`: GFX10 and later) and the GFX6-GFX9
/// generations' `FeatureWavefrontSize64` in `AMDGPU.td`; LLVM `TargetParser.cpp`
/// (`isWave32Capable`, gfx1250 wave32 only).
pub fn wavefront_sizes(gfx_target_version: u32) -> Option<&'static [u32]> {
    let major = gfx_target_version / 10_000;
    let minor = (gfx_target_version / 100) % 100;
    match (major, minor) {
        (6..=9, _) => Some(&[64]),
        (12, 5..) => Some(&[32]),
        (10..=12, _) => Some(&[32, 64]),
        _ => None,
    }
}

/// A target feature's setting in an agent's ISA (an agent is always on or off; "any" exists
/// only in code objects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature.
    Unsupported,
    /// Enabled (`+`).
    On,
    /// Disabled (`-`).
    Off,
}

/// An agent's ISA: processor plus SRAMECC and XNACK settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AgentIsa {
    /// Processor name, e.g. `gfx90a`.
    pub processor: ProcessorName,
    /// SRAMECC setting.
    pub sramecc: FeatureSetting,
    /// XNACK setting.
    pub xnack: FeatureSetting,
}

impl AgentIsa {
    /// The ISA of a processor with its settings: features the processor does not support are
    /// `Unsupported` whatever is asked.
    pub fn new(processor: ProcessorName, sramecc_on: bool, xnack_on: bool) -> AgentIsa {
        let setting = |supported: bool, on: bool| match (supported, on) {
            (false, _) => FeatureSetting::Unsupported,
            (true, true) => FeatureSetting::On,
            (true, false) => FeatureSetting::Off,
        };
        let sramecc = setting(supports_sramecc(&processor), sramecc_on);
        let xnack = setting(supports_xnack(&processor), xnack_on);
        AgentIsa {
            processor,
            sramecc,
            xnack,
        }
    }

    /// The target id: `gfx90a:sramecc+:xnack-` (features in AMDGPUUsage's order: sramecc
    /// before xnack; unsupported ones left out).
    pub fn target_id(&self) -> IsaName {
        let mut s = IsaName::new();
        let _ = s.push_str(&self.processor);
        for (name, setting) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            let sign = match setting {
                FeatureSetting::Unsupported => continue,
                FeatureSetting::On => '+',
                FeatureSetting::Off => '-',
            };
            let _ = write!(s, ":{name}{sign}");
        }
        s
    }

    /// The full ISA name as ROCR reports it (`HSA_ISA_INFO_NAME`):
    /// `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn name(&self) -> IsaName {
        let mut s = IsaName::new();
        let _ = write!(s, "amdgcn-amd-amdhsa--{}", self.target_id());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_target_versions_of_real_topologies() {
        assert_eq!(processor_from_gfx_target_version(90010).unwrap(), "gfx90a");
        assert_eq!(processor_from_gfx_target_version(90402).unwrap(), "gfx942");
        assert_eq!(processor_from_gfx_target_version(90000).unwrap(), "gfx900");
        assert_eq!(processor_from_gfx_target_version(90012).unwrap(), "gfx90c");
        assert_eq!(
            processor_from_gfx_target_version(110000).unwrap(),
            "gfx1100"
        );
        assert_eq!(
            processor_from_gfx_target_version(100300).unwrap(),
            "gfx1030"
        );
        assert_eq!(
            processor_from_gfx_target_version(120001).unwrap(),
            "gfx1201"
        );
        assert_eq!(processor_from_gfx_target_version(0), None);
        assert_eq!(processor_from_gfx_target_version(91600), None);
        for v in [90010, 90402, 110000, 100300, 90000] {
            let name = processor_from_gfx_target_version(v).unwrap();
            assert_eq!(gfx_target_version_from_processor(&name), Some(v));
        }
        assert_eq!(gfx_target_version_from_processor("gfx"), None);
        assert_eq!(gfx_target_version_from_processor("sm_90"), None);
    }

    #[test]
    fn wavefront_sizes_per_generation() {
        for v in [60000, 70002, 80003, 90000, 90010, 90402, 90500] {
            assert_eq!(wavefront_sizes(v), Some(&[64][..]), "{v}");
        }
        for v in [100100, 100300, 110000, 110501, 120001] {
            assert_eq!(wavefront_sizes(v), Some(&[32, 64][..]), "{v}");
        }
        assert_eq!(wavefront_sizes(120500), Some(&[32][..]));
        assert_eq!(wavefront_sizes(0), None);
        assert_eq!(wavefront_sizes(50000), None);
        assert_eq!(wavefront_sizes(130000), None);
    }

    #[test]
    fn isa_names_match_rocminfo() {
        let mi210 = AgentIsa::new(
            processor_from_gfx_target_version(90010).unwrap(),
            true,
            false,
        );
        assert_eq!(mi210.name(), "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        let apu = AgentIsa::new(
            processor_from_gfx_target_version(90012).unwrap(),
            true,
            false,
        );
        assert_eq!(apu.name(), "amdgcn-amd-amdhsa--gfx90c:xnack-");
        let navi = AgentIsa::new(
            processor_from_gfx_target_version(110000).unwrap(),
            true,
            true,
        );
        assert_eq!(navi.name(), "amdgcn-amd-amdhsa--gfx1100");
    }
}
