//! Target ids: the processor and the XNACK/SRAMECC settings a code object was built for, as
//! encoded in the ELF `e_flags` and spelled in ISA names (`gfx90a:sramecc+:xnack-`).
//!
//! Ref: LLVM AMDGPUUsage, "Processors", "Target Features", "Target ID", "Code Object Target
//! Identification", table "AMDGPU ELF Header e_flags for Code Object V4 and After" and the
//! `EF_AMDGPU_MACH_*` list of `llvm/BinaryFormat/ELF.h` (values checked with
//! `llvm-readelf-19 -h` on patched headers).

use core::fmt;

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

/// The prefix of a full ISA name: architecture, vendor, OS and (empty) environment.
///
/// Ref: AMDGPUUsage "Target Triples"; HSA `HSA_ISA_INFO_NAME`.
pub const ISA_NAME_PREFIX: &str = "amdgcn-amd-amdhsa--";

/// A family of processors a generic target covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Generic {
    None,
    Gfx9,
    Gfx94,
    Gfx101,
    Gfx103,
    Gfx11,
    Gfx12,
}

/// One row of the processor table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct ProcessorInfo {
    mach: u8,
    name: &'static str,
    xnack: bool,
    sramecc: bool,
    /// The generic family this processor belongs to (for a specific processor), or that it
    /// is (for a generic target).
    family: Generic,
    is_generic: bool,
}

const fn p(
    mach: u8,
    name: &'static str,
    xnack: bool,
    sramecc: bool,
    family: Generic,
) -> ProcessorInfo {
    ProcessorInfo {
        mach,
        name,
        xnack,
        sramecc,
        family,
        is_generic: false,
    }
}
const fn g(
    mach: u8,
    name: &'static str,
    xnack: bool,
    sramecc: bool,
    family: Generic,
) -> ProcessorInfo {
    ProcessorInfo {
        mach,
        name,
        xnack,
        sramecc,
        family,
        is_generic: true,
    }
}

/// `EF_AMDGPU_MACH_AMDGCN_*` values with the processor name, its XNACK and SRAMECC support,
/// and the generic family (AMDGPUUsage "AMDGPU Processors" and "AMDGPU Generic Processors").
const PROCESSORS: &[ProcessorInfo] = &[
    p(0x20, "gfx600", false, false, Generic::None),
    p(0x21, "gfx601", false, false, Generic::None),
    p(0x3a, "gfx602", false, false, Generic::None),
    p(0x22, "gfx700", false, false, Generic::None),
    p(0x23, "gfx701", false, false, Generic::None),
    p(0x24, "gfx702", false, false, Generic::None),
    p(0x25, "gfx703", false, false, Generic::None),
    p(0x26, "gfx704", false, false, Generic::None),
    p(0x3b, "gfx705", false, false, Generic::None),
    p(0x28, "gfx801", true, false, Generic::None),
    p(0x29, "gfx802", false, false, Generic::None),
    p(0x2a, "gfx803", false, false, Generic::None),
    p(0x3c, "gfx805", false, false, Generic::None),
    p(0x2b, "gfx810", true, false, Generic::None),
    p(0x2c, "gfx900", true, false, Generic::Gfx9),
    p(0x2d, "gfx902", true, false, Generic::Gfx9),
    p(0x2e, "gfx904", true, false, Generic::Gfx9),
    p(0x2f, "gfx906", true, true, Generic::Gfx9),
    p(0x30, "gfx908", true, true, Generic::None),
    p(0x31, "gfx909", true, false, Generic::Gfx9),
    p(0x32, "gfx90c", true, false, Generic::Gfx9),
    p(0x3f, "gfx90a", true, true, Generic::None),
    p(0x40, "gfx940", true, true, Generic::Gfx94),
    p(0x4b, "gfx941", true, true, Generic::Gfx94),
    p(0x4c, "gfx942", true, true, Generic::Gfx94),
    p(0x4f, "gfx950", true, true, Generic::Gfx94),
    p(0x33, "gfx1010", true, false, Generic::Gfx101),
    p(0x34, "gfx1011", true, false, Generic::Gfx101),
    p(0x35, "gfx1012", true, false, Generic::Gfx101),
    p(0x42, "gfx1013", true, false, Generic::Gfx101),
    p(0x36, "gfx1030", false, false, Generic::Gfx103),
    p(0x37, "gfx1031", false, false, Generic::Gfx103),
    p(0x38, "gfx1032", false, false, Generic::Gfx103),
    p(0x39, "gfx1033", false, false, Generic::Gfx103),
    p(0x3e, "gfx1034", false, false, Generic::Gfx103),
    p(0x3d, "gfx1035", false, false, Generic::Gfx103),
    p(0x45, "gfx1036", false, false, Generic::Gfx103),
    p(0x41, "gfx1100", false, false, Generic::Gfx11),
    p(0x46, "gfx1101", false, false, Generic::Gfx11),
    p(0x47, "gfx1102", false, false, Generic::Gfx11),
    p(0x44, "gfx1103", false, false, Generic::Gfx11),
    p(0x43, "gfx1150", false, false, Generic::Gfx11),
    p(0x4a, "gfx1151", false, false, Generic::Gfx11),
    p(0x55, "gfx1152", false, false, Generic::Gfx11),
    p(0x58, "gfx1153", false, false, Generic::Gfx11),
    p(0x48, "gfx1200", false, false, Generic::Gfx12),
    p(0x4e, "gfx1201", false, false, Generic::Gfx12),
    g(0x51, "gfx9-generic", true, false, Generic::Gfx9),
    g(0x5f, "gfx9-4-generic", true, true, Generic::Gfx94),
    g(0x52, "gfx10-1-generic", true, false, Generic::Gfx101),
    g(0x53, "gfx10-3-generic", false, false, Generic::Gfx103),
    g(0x54, "gfx11-generic", false, false, Generic::Gfx11),
    g(0x59, "gfx12-generic", false, false, Generic::Gfx12),
];

/// A processor (`gfx90a`) or generic target (`gfx9-generic`) known to this loader.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Processor(&'static ProcessorInfo);

impl Processor {
    /// The processor for an `EF_AMDGPU_MACH_*` value (the low byte of `e_flags`).
    ///
    /// # Errors
    /// `Status::InvalidIsa` naming the value when it is not a known AMDGCN processor.
    pub fn from_mach(mach: u32) -> Result<Processor> {
        PROCESSORS
            .iter()
            .find(|p| u32::from(p.mach) == mach)
            .map(Processor)
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidIsa,
                    "EF_AMDGPU_MACH {mach:#x} is not a known AMDGCN processor"
                )
            })
    }

    /// The processor named `name` (`"gfx942"`, `"gfx11-generic"`).
    ///
    /// # Errors
    /// `Status::InvalidIsaName` when the name is unknown.
    pub fn from_name(name: &str) -> Result<Processor> {
        PROCESSORS
            .iter()
            .find(|p| p.name == name)
            .map(Processor)
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidIsaName,
                    "processor {name:?} is not a known AMDGCN processor"
                )
            })
    }

    /// The processor's name, as in ISA names.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Its `EF_AMDGPU_MACH_*` value.
    pub fn mach(self) -> u32 {
        u32::from(self.0.mach)
    }

    /// Whether this is a generic target (`gfx9-generic`, ...), which only runs on the
    /// processors it covers.
    pub fn is_generic(self) -> bool {
        self.0.is_generic
    }

    /// Whether the processor has the XNACK (page-fault replay) feature.
    pub fn supports_xnack(self) -> bool {
        self.0.xnack
    }

    /// Whether the processor has the SRAMECC feature.
    pub fn supports_sramecc(self) -> bool {
        self.0.sramecc
    }

    /// Whether code for `self` (a generic target) can run on `processor` (a specific one):
    /// true when `self` is generic and its family (AMDGPUUsage "AMDGPU Generic Processors"
    /// table) contains `processor`.
    pub fn generic_covers(self, processor: Processor) -> bool {
        self.is_generic()
            && !processor.is_generic()
            && processor.0.family != Generic::None
            && processor.0.family == self.0.family
    }

    /// The lowest generic version of this processor's generic family that can run on it
    /// (AMDGPUUsage: every processor listed in the generic table needs version 1 or later).
    pub fn min_generic_version(self) -> u32 {
        1
    }
}

impl fmt::Debug for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Processor({})", self.0.name)
    }
}

impl fmt::Display for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// The setting of a target feature (XNACK or SRAMECC) in a target id.
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
/// Display gives the target-id form (`gfx90a:sramecc+:xnack-`, features sorted, "any" and
/// "unsupported" omitted); [`TargetId::isa_name`] the full ISA name.
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
    /// A target id for `processor` with both features "any" where supported.
    pub fn new(processor: Processor) -> TargetId {
        TargetId {
            processor,
            xnack: if processor.supports_xnack() {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            },
            sramecc: if processor.supports_sramecc() {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            },
            generic_version: 0,
        }
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
    /// (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`). An absent feature is "any" when the
    /// processor supports it, else "unsupported". The generic version is 0 (a string does not
    /// carry it).
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

    /// The full ISA name, `amdgcn-amd-amdhsa--` followed by the target id.
    pub fn isa_name(&self) -> IsaName {
        IsaName(*self)
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

/// A full ISA name (`amdgcn-amd-amdhsa--gfx90a:xnack-`), formatted on demand so no allocator
/// is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsaName(pub TargetId);

impl fmt::Display for IsaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ISA_NAME_PREFIX}{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn mach_values_match_llvm_readelf() {
        // Values from `llvm-readelf-19 -h` on headers patched with each EF_AMDGPU_MACH.
        for (mach, name) in [
            (0x2c, "gfx900"),
            (0x2f, "gfx906"),
            (0x30, "gfx908"),
            (0x3f, "gfx90a"),
            (0x40, "gfx940"),
            (0x4b, "gfx941"),
            (0x4c, "gfx942"),
            (0x33, "gfx1010"),
            (0x42, "gfx1013"),
            (0x36, "gfx1030"),
            (0x45, "gfx1036"),
            (0x41, "gfx1100"),
            (0x44, "gfx1103"),
            (0x43, "gfx1150"),
            (0x4a, "gfx1151"),
            (0x48, "gfx1200"),
            (0x4e, "gfx1201"),
            (0x51, "gfx9-generic"),
            (0x52, "gfx10-1-generic"),
            (0x53, "gfx10-3-generic"),
            (0x54, "gfx11-generic"),
            (0x59, "gfx12-generic"),
            (0x5f, "gfx9-4-generic"),
        ] {
            assert_eq!(Processor::from_mach(mach).unwrap().name(), name);
            assert_eq!(Processor::from_name(name).unwrap().mach(), mach);
        }
        let e = Processor::from_mach(0x27).unwrap_err();
        assert_eq!(e.status(), Status::InvalidIsa);
        assert!(e.detail().contains("0x27"), "{e}");
        // Every mach value appears once.
        for (i, a) in PROCESSORS.iter().enumerate() {
            for b in &PROCESSORS[i + 1..] {
                assert_ne!(a.mach, b.mach, "{} {}", a.name, b.name);
                assert_ne!(a.name, b.name);
            }
        }
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
        assert_eq!(
            t.isa_name().to_string(),
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        );
        // Generic without a version, and a feature the processor lacks.
        assert_eq!(
            TargetId::from_e_flags(0x151).unwrap_err().status(),
            Status::InvalidCodeObject
        );
        let e = TargetId::from_e_flags(0x336).unwrap_err();
        assert!(e.detail().contains("XNACK"), "{e}");
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
            assert!(e.detail().contains(frag), "{bad}: {e}");
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
            e.detail().contains("amdgcn-amd-amdhsa--gfx90a:xnack+"),
            "{e}"
        );
        assert!(
            e.detail()
                .contains("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            "{e}"
        );
        assert!(e.detail().contains("xnack differs"), "{e}");
        let e = co("gfx942").check_runs_on(&co("gfx90a")).unwrap_err();
        assert!(e.detail().contains("processor differs"), "{e}");
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
}
