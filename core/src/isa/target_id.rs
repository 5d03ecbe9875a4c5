//! Target ids: a processor with its XNACK and SRAMECC settings (`gfx90a:sramecc+:xnack-`), as
//! an agent runs it, as a code object's `e_flags` encode it, and as ISA names spell it.
//!
//! Ref: LLVM AMDGPUUsage "Target ID", "Target Features", "Code Object Target Identification",
//! table "AMDGPU ELF Header `e_flags` for Code Object V4 and After"; `llvm/BinaryFormat/ELF.h`
//! (`EF_AMDGPU_FEATURE_*_V4`, `EF_AMDGPU_GENERIC_VERSION`); amdkfd `kfd_sysfs.h`
//! (`HSA_CAP_SRAM_EDCSUPPORTED`).

use core::fmt::{self, Write as _};
use core::ops::Deref;

use super::processor::{Processor, MAX_NAME_BYTES};
use crate::platform::{DeviceType, NodeProperties};
use crate::status::{Result, Status};

/// `EF_AMDGPU_MACH`: mask of the processor in `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0x0ff;
/// `EF_AMDGPU_FEATURE_XNACK_V4`: mask of the XNACK setting (code object v4+).
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// `EF_AMDGPU_FEATURE_SRAMECC_V4`: mask of the SRAMECC setting (code object v4+).
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// `EF_AMDGPU_GENERIC_VERSION`: mask of the generic version (code object v6+), bits 24-31.
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;
/// Shift of `EF_AMDGPU_GENERIC_VERSION`.
pub const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// `HSA_CAP_SRAM_EDCSUPPORTED` of `kfd_sysfs.h`: a node's `capability` bit saying SRAM ECC
/// is enabled.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u32 = 0x0400_0000;
/// `HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED` of `kfd_sysfs.h`: the bit kernels before
/// [`HSA_CAP_SRAM_EDCSUPPORTED`] set for SRAM ECC.
pub const HSA_CAP_OLD_SRAM_EDCSUPPORTED: u32 = 0x0008_0000;

/// The prefix of a full ISA name: architecture, vendor, OS and (empty) environment.
///
/// Ref: AMDGPUUsage "Target Triples"; HSA `HSA_ISA_INFO_NAME`.
pub const ISA_NAME_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// Capacity, bytes, of an [`IsaName`]: the longest is the prefix, the longest processor name
/// and both features (`...--gfx10-3-generic:sramecc+:xnack+` would be 50).
pub const ISA_NAME_CAPACITY: usize = 64;

const _: () =
    assert!(ISA_NAME_PREFIX.len() + MAX_NAME_BYTES + ":sramecc+:xnack+".len() <= ISA_NAME_CAPACITY);

/// The setting of a target feature (XNACK or SRAMECC) in a target id.
///
/// An agent's setting is `On`, `Off` or `Unsupported`; `Any` exists only in code objects.
///
/// Ref: AMDGPUUsage "Target Features" and "Target ID": `feature+` on, `feature-` off, absent
/// any; "unsupported" when the processor lacks the feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature.
    Unsupported,
    /// Code works with the feature either on or off.
    Any,
    /// Feature off (`xnack-`).
    Off,
    /// Feature on (`xnack+`).
    On,
}

impl FeatureSetting {
    /// From the two-bit field of `e_flags` (already shifted down): 0 unsupported, 1 any,
    /// 2 off, 3 on.
    pub const fn from_bits(bits: u32) -> FeatureSetting {
        match bits & 3 {
            0 => FeatureSetting::Unsupported,
            1 => FeatureSetting::Any,
            2 => FeatureSetting::Off,
            _ => FeatureSetting::On,
        }
    }

    /// An agent's setting: `Unsupported` when the processor lacks the feature, else on or
    /// off.
    pub const fn of_agent(supported: bool, on: bool) -> FeatureSetting {
        match (supported, on) {
            (false, _) => FeatureSetting::Unsupported,
            (true, true) => FeatureSetting::On,
            (true, false) => FeatureSetting::Off,
        }
    }

    /// Whether code built with `self` runs on an agent whose feature is `agent`: "any" and
    /// "unsupported" in the code match any agent setting, on/off must equal the agent's.
    ///
    /// Ref: AMDGPUUsage "Target ID" (compatibility of target ids).
    pub fn runs_on(self, agent: FeatureSetting) -> bool {
        match self {
            FeatureSetting::Any | FeatureSetting::Unsupported => true,
            FeatureSetting::On | FeatureSetting::Off => self == agent,
        }
    }
}

/// A target id: processor plus XNACK and SRAMECC settings, plus the generic version for a
/// generic target of code object v6.
///
/// The one ISA value of the crate: a GPU agent's ISA ([`Agent::isa`], built by
/// [`TargetId::of_node`]), a code object's target ([`TargetId::from_e_flags`]) and what the
/// loader compares them with ([`TargetId::check_runs_on`]); the emulated device picks its
/// interpreter from [`TargetId::processor`].
///
/// Display gives the target-id form (`gfx90a:sramecc+:xnack-`, features in alphabetical
/// order, "any" and "unsupported" omitted); [`TargetId::isa_name`] the full ISA name.
///
/// [`Agent::isa`]: crate::runtime::Agent::isa
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// The processor or generic target.
    pub processor: Processor,
    /// XNACK setting.
    pub xnack: FeatureSetting,
    /// SRAMECC setting.
    pub sramecc: FeatureSetting,
    /// `EF_AMDGPU_GENERIC_VERSION` (0 when not a generic code object).
    pub generic_version: u32,
}

impl TargetId {
    /// A target id for `processor` with both features "any" where supported (what a code
    /// object built for `-mcpu=<processor>` says).
    pub fn new(processor: Processor) -> TargetId {
        let any = |supported: bool| {
            if supported {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            }
        };
        TargetId {
            processor,
            xnack: any(processor.supports_xnack()),
            sramecc: any(processor.supports_sramecc()),
            generic_version: 0,
        }
    }

    /// An agent's target id: `processor` with SRAMECC and XNACK on or off as given, and
    /// `Unsupported` for a feature the processor lacks whatever is asked.
    pub fn of_agent(processor: Processor, sramecc_on: bool, xnack_on: bool) -> TargetId {
        TargetId {
            processor,
            xnack: FeatureSetting::of_agent(processor.supports_xnack(), xnack_on),
            sramecc: FeatureSetting::of_agent(processor.supports_sramecc(), sramecc_on),
            generic_version: 0,
        }
    }

    /// The target id of a GPU topology node in a process whose XNACK mode is `xnack_on`
    /// (XNACK is per process: KFD `SET_XNACK_MODE`, not a node property): the processor of
    /// its `gfx_target_version`, SRAMECC on when `capability` has
    /// [`HSA_CAP_SRAM_EDCSUPPORTED`] or the older [`HSA_CAP_OLD_SRAM_EDCSUPPORTED`].
    ///
    /// `None` for a CPU node (`simd_count` 0) and for a `gfx_target_version` the processor
    /// table does not have (0 included).
    ///
    /// Ref: amdkfd `kfd_topology.c` (`gfx_target_version`, `capability`), `kfd_sysfs.h`;
    /// ROCR decides SRAMECC from `HsaNodeProperties.Capability.SRAM_EDCSupport` likewise.
    pub fn of_node(node: &NodeProperties, xnack_on: bool) -> Option<TargetId> {
        if node.device_type() != DeviceType::Gpu {
            return None;
        }
        let processor = Processor::from_gfx_target_version(node.gfx_target_version)?;
        let ecc = HSA_CAP_SRAM_EDCSUPPORTED | HSA_CAP_OLD_SRAM_EDCSUPPORTED;
        Some(TargetId::of_agent(
            processor,
            node.capability & ecc != 0,
            xnack_on,
        ))
    }

    /// Decodes `e_flags` of a code object v4+ (`EI_ABIVERSION` 2, 3 or 4).
    ///
    /// # Errors
    /// `Status::InvalidIsa` naming the value for an unknown `EF_AMDGPU_MACH`;
    /// `Status::InvalidCodeObject` for a feature setting the processor does not support, or a
    /// generic target without a generic version (or a generic version on a specific target).
    pub fn from_e_flags(e_flags: u32) -> Result<TargetId> {
        let processor = Processor::from_mach(e_flags & EF_AMDGPU_MACH)?;
        let xnack = FeatureSetting::from_bits((e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8);
        let sramecc = FeatureSetting::from_bits((e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10);
        let generic_version =
            (e_flags & EF_AMDGPU_GENERIC_VERSION) >> EF_AMDGPU_GENERIC_VERSION_OFFSET;
        if !processor.supports_xnack() && xnack != FeatureSetting::Unsupported {
            crate::bail!(
                Status::InvalidCodeObject,
                "e_flags {e_flags:#x}: XNACK is {xnack:?} but {processor} has no XNACK"
            );
        }
        if !processor.supports_sramecc() && sramecc != FeatureSetting::Unsupported {
            crate::bail!(
                Status::InvalidCodeObject,
                "e_flags {e_flags:#x}: SRAMECC is {sramecc:?} but {processor} has no SRAMECC"
            );
        }
        if processor.is_generic() && generic_version == 0 {
            crate::bail!(
                Status::InvalidCodeObject,
                "e_flags {e_flags:#x}: generic target {processor} with generic version 0"
            );
        }
        Ok(TargetId {
            processor,
            xnack,
            sramecc,
            generic_version,
        })
    }

    /// Parses a target id (`gfx90a:sramecc+:xnack-`) or a full ISA name
    /// (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`) given from outside (a command line, a
    /// test). An absent feature is "any" when the processor supports it, else "unsupported".
    /// The generic version is 0 (a string does not carry it).
    ///
    /// # Errors
    /// `Status::InvalidIsaName` naming the part for an unknown processor, an unknown or
    /// repeated feature, a feature the processor lacks, or a feature without `+`/`-`.
    pub fn parse(s: &str) -> Result<TargetId> {
        let id = s.strip_prefix(ISA_NAME_PREFIX).unwrap_or(s);
        let mut parts = id.split(':');
        let name = parts.next().unwrap_or("");
        let mut t = TargetId::new(Processor::from_name(name)?);
        let (mut seen_xnack, mut seen_sramecc) = (false, false);
        for feature in parts {
            let (fname, setting) = if let Some(f) = feature.strip_suffix('+') {
                (f, FeatureSetting::On)
            } else if let Some(f) = feature.strip_suffix('-') {
                (f, FeatureSetting::Off)
            } else {
                crate::bail!(
                    Status::InvalidIsaName,
                    "{s:?}: feature {feature:?} lacks '+' or '-'"
                );
            };
            let (seen, supported, slot) = match fname {
                "xnack" => (&mut seen_xnack, t.processor.supports_xnack(), &mut t.xnack),
                "sramecc" => (
                    &mut seen_sramecc,
                    t.processor.supports_sramecc(),
                    &mut t.sramecc,
                ),
                _ => crate::bail!(Status::InvalidIsaName, "{s:?}: unknown feature {fname:?}"),
            };
            if *seen {
                crate::bail!(
                    Status::InvalidIsaName,
                    "{s:?}: feature {fname:?} given twice"
                );
            }
            if !supported {
                crate::bail!(
                    Status::InvalidIsaName,
                    "{s:?}: {name} does not support {fname}"
                );
            }
            *seen = true;
            *slot = setting;
        }
        Ok(t)
    }

    /// The full ISA name as ROCR reports it (`HSA_ISA_INFO_NAME`): `amdgcn-amd-amdhsa--`
    /// followed by the target id, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn isa_name(&self) -> IsaName {
        let mut s = heapless::String::new();
        // Cannot fail: ISA_NAME_CAPACITY holds the longest name (asserted above).
        let _ = write!(s, "{ISA_NAME_PREFIX}{self}");
        IsaName(s)
    }

    /// The generic ISA an agent of this ISA also supports, as ROCR 7 lists it after the
    /// agent's own (`hsa_agent_iterate_isas`; its ISA registry): the processor's generic
    /// target ([`Processor::generic_target`]) with each of XNACK and SRAMECC as the agent has
    /// it where the generic target has the feature (`gfx942:sramecc+:xnack-` →
    /// `gfx9-4-generic:sramecc+:xnack-`, `gfx906:sramecc+:xnack-` → `gfx9-generic:xnack-`),
    /// generic version 1; `None` when the processor is in no generic target's list.
    pub fn generic(&self) -> Option<TargetId> {
        let processor = self.processor.generic_target()?;
        let keep = |supported: bool, setting: FeatureSetting| {
            if supported {
                setting
            } else {
                FeatureSetting::Unsupported
            }
        };
        Some(TargetId {
            processor,
            xnack: keep(processor.supports_xnack(), self.xnack),
            sramecc: keep(processor.supports_sramecc(), self.sramecc),
            generic_version: 1,
        })
    }

    /// Whether a code object for `self` can be loaded on an agent whose ISA is `agent`.
    ///
    /// Rules (AMDGPUUsage "Target ID", "Generic Processor Versioning"): the processors are
    /// equal, or `self` is a generic target covering the agent's processor with a generic
    /// version at least the processor's minimum; and each of XNACK and SRAMECC is "any" (or
    /// unsupported) in the code object, or equal to the agent's setting.
    ///
    /// # Errors
    /// `Status::IncompatibleArguments` naming both ISAs and what differs.
    pub fn check_runs_on(&self, agent: &TargetId) -> Result<()> {
        let processor_ok = self.processor == agent.processor
            || (self.processor.generic_covers(agent.processor)
                && self.generic_version >= agent.processor.min_generic_version());
        let why = if !processor_ok {
            "processor"
        } else if !self.xnack.runs_on(agent.xnack) {
            "xnack"
        } else if !self.sramecc.runs_on(agent.sramecc) {
            "sramecc"
        } else {
            return Ok(());
        };
        Err(crate::error!(
            Status::IncompatibleArguments,
            "code object ISA {} (generic version {}) does not run on agent ISA {}: {why} differs",
            self.isa_name(),
            self.generic_version,
            agent.isa_name()
        ))
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.processor.name())?;
        // Features in alphabetical order, as LLVM prints them.
        for (name, setting) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            match setting {
                FeatureSetting::On => write!(f, ":{name}+")?,
                FeatureSetting::Off => write!(f, ":{name}-")?,
                FeatureSetting::Any | FeatureSetting::Unsupported => {}
            }
        }
        Ok(())
    }
}

/// A full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`) in a fixed buffer, so no
/// allocator is needed; derefs to `str`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IsaName(heapless::String<ISA_NAME_CAPACITY>);

impl IsaName {
    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for IsaName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IsaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IsaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for IsaName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for IsaName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    /// An agent's generic ISA as ROCR 7.2.4's rocminfo prints it ("ISA 2"): the features the
    /// generic target has, set as the agent's; its code objects run on the agent.
    #[test]
    fn generic_isa_of_an_agent() {
        let name = |agent: &str| {
            TargetId::parse(agent)
                .unwrap()
                .generic()
                .map(|g| g.isa_name().to_string())
        };
        assert_eq!(
            name("gfx942:sramecc+:xnack-").as_deref(),
            Some("amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-")
        );
        assert_eq!(
            name("gfx900:xnack-").as_deref(),
            Some("amdgcn-amd-amdhsa--gfx9-generic:xnack-")
        );
        assert_eq!(
            name("gfx906:sramecc+:xnack+").as_deref(),
            Some("amdgcn-amd-amdhsa--gfx9-generic:xnack+")
        );
        assert_eq!(name("gfx90a:sramecc+:xnack-"), None);
        let agent = TargetId::parse("gfx942:sramecc+:xnack-").unwrap();
        assert!(agent.generic().unwrap().check_runs_on(&agent).is_ok());
    }

    #[test]
    fn e_flags_of_test_files() {
        // e_flags from testdata/codeobjects/README.md (llvm-readelf-19 -h).
        let t = TargetId::from_e_flags(0x53f).unwrap();
        assert_eq!(t.processor.name(), "gfx90a");
        assert_eq!(
            (t.xnack, t.sramecc),
            (FeatureSetting::Any, FeatureSetting::Any)
        );
        assert_eq!(t.to_string(), "gfx90a");
        assert_eq!(t, TargetId::new(Processor::GFX90A));
        let t = TargetId::from_e_flags(0x12c).unwrap();
        assert_eq!(
            (t.xnack, t.sramecc),
            (FeatureSetting::Any, FeatureSetting::Unsupported)
        );
        let t = TargetId::from_e_flags(0x36).unwrap();
        assert_eq!(
            (t.xnack, t.sramecc),
            (FeatureSetting::Unsupported, FeatureSetting::Unsupported)
        );
        let t = TargetId::from_e_flags(0x0100_0151).unwrap();
        assert_eq!(t.processor.name(), "gfx9-generic");
        assert_eq!(t.generic_version, 1);
        let t = TargetId::from_e_flags(0xe3f).unwrap();
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(t.isa_name(), "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
        assert_eq!(t, TargetId::of_agent(Processor::GFX90A, true, false));
        // Generic without a version, and a feature the processor lacks.
        assert_eq!(
            TargetId::from_e_flags(0x151).unwrap_err().status(),
            Status::InvalidCodeObject
        );
        let e = TargetId::from_e_flags(0x336).unwrap_err();
        assert!(e.detail().to_string().contains("XNACK"), "{e}");
    }

    #[test]
    fn parse_and_display_round_trip() {
        for s in [
            "gfx90a:sramecc+:xnack-",
            "gfx942:xnack+",
            "gfx1030",
            "gfx900:xnack-",
            "gfx9-generic",
        ] {
            assert_eq!(TargetId::parse(s).unwrap().to_string(), s);
        }
        let t = TargetId::parse("amdgcn-amd-amdhsa--gfx90a:xnack-:sramecc+").unwrap();
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(
            TargetId::parse("gfx90a").unwrap().xnack,
            FeatureSetting::Any
        );
        assert_eq!(
            TargetId::parse("gfx1100").unwrap().xnack,
            FeatureSetting::Unsupported
        );
        for (bad, frag) in [
            ("gfx9000", "gfx9000"),
            ("gfx90a:xnack", "lacks"),
            ("gfx90a:foo+", "foo"),
            ("gfx90a:xnack+:xnack-", "twice"),
            ("gfx1030:xnack+", "does not support"),
            ("", "\"\""),
        ] {
            let e = TargetId::parse(bad).unwrap_err();
            assert_eq!(e.status(), Status::InvalidIsaName);
            assert!(e.detail().to_string().contains(frag), "{bad}: {e}");
        }
    }

    #[test]
    fn compatibility() {
        let co = |s: &str| TargetId::parse(s).unwrap();
        // "any" runs on on and off.
        co("gfx90a")
            .check_runs_on(&co("gfx90a:sramecc+:xnack-"))
            .unwrap();
        co("gfx90a:xnack-")
            .check_runs_on(&co("gfx90a:sramecc+:xnack-"))
            .unwrap();
        let e = co("gfx90a:xnack+")
            .check_runs_on(&co("gfx90a:sramecc+:xnack-"))
            .unwrap_err();
        assert_eq!(e.status(), Status::IncompatibleArguments);
        assert!(
            e.detail()
                .to_string()
                .contains("amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "{e}"
        );
        assert!(
            e.detail()
                .to_string()
                .contains("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            "{e}"
        );
        assert!(e.detail().to_string().contains("xnack differs"), "{e}");
        let e = co("gfx942").check_runs_on(&co("gfx90a")).unwrap_err();
        assert!(e.detail().to_string().contains("processor differs"), "{e}");
        // Generic targets.
        let g9 = TargetId::from_e_flags(0x0100_0151).unwrap();
        g9.check_runs_on(&co("gfx900:xnack-")).unwrap();
        g9.check_runs_on(&co("gfx906:sramecc+:xnack-")).unwrap();
        assert!(g9.check_runs_on(&co("gfx90a")).is_err());
        assert!(g9.check_runs_on(&co("gfx1030")).is_err());
        let g11 = TargetId::from_e_flags(0x0100_0054).unwrap();
        g11.check_runs_on(&co("gfx1151")).unwrap();
        assert!(g11.check_runs_on(&co("gfx1200")).is_err());
        // A specific code object never runs on a generic "agent".
        assert!(co("gfx900").check_runs_on(&g9).is_err());
    }

    #[test]
    fn isa_names_match_rocminfo() {
        // rocminfo of the 4×MI210 workstation, the Ryzen 5600G (gfx90c), the RX 7900 XTX.
        let mi210 = TargetId::of_agent(Processor::GFX90A, true, false);
        assert_eq!(
            mi210.isa_name(),
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        );
        let apu = TargetId::of_agent(Processor::GFX90C, true, false);
        assert_eq!(apu.isa_name(), "amdgcn-amd-amdhsa--gfx90c:xnack-");
        let navi = TargetId::of_agent(Processor::GFX1100, true, true);
        assert_eq!(navi.isa_name(), "amdgcn-amd-amdhsa--gfx1100");
        assert_eq!(navi.isa_name().as_str(), "amdgcn-amd-amdhsa--gfx1100");
    }

    #[test]
    fn node_target_ids() {
        let node = |gfx_target_version, capability| NodeProperties {
            simd_count: 8,
            gfx_target_version,
            capability,
            ..NodeProperties::default()
        };
        // The MI210 dump's capability 0x2c77a280 has HSA_CAP_SRAM_EDCSUPPORTED.
        let t = TargetId::of_node(&node(90010, 0x2c77_a280), false).unwrap();
        assert_eq!(t.to_string(), "gfx90a:sramecc+:xnack-");
        let t = TargetId::of_node(&node(90006, HSA_CAP_OLD_SRAM_EDCSUPPORTED), true).unwrap();
        assert_eq!(t.to_string(), "gfx906:sramecc+:xnack+");
        let t = TargetId::of_node(&node(90402, 0), false).unwrap();
        assert_eq!(t.to_string(), "gfx942:sramecc-:xnack-");
        // The MI25's capability 0x2280: gfx900 has no SRAMECC at all.
        let t = TargetId::of_node(&node(90000, 0x2280), true).unwrap();
        assert_eq!(t.isa_name(), "amdgcn-amd-amdhsa--gfx900:xnack+");
        assert_eq!(TargetId::of_node(&node(0, 0), false), None);
        assert_eq!(TargetId::of_node(&node(91600, 0), false), None);
        let cpu = NodeProperties {
            gfx_target_version: 90010,
            ..NodeProperties::default()
        };
        assert_eq!(TargetId::of_node(&cpu, false), None);
    }
}
