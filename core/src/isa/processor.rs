//! The processor table: one row per AMDGCN processor and generic target, with everything the
//! runtime, the loader and the emulated device know about it. Sources: see [`Processor`].

use core::fmt;

use crate::status::{Result, Status};

/// A family of processors one generic target covers (AMDGPUUsage "Generic Processors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Family {
    /// In no generic target's list.
    None,
    /// `gfx9-generic`.
    Gfx9,
    /// `gfx9-4-generic`.
    Gfx94,
    /// `gfx10-1-generic`.
    Gfx101,
    /// `gfx10-3-generic`.
    Gfx103,
    /// `gfx11-generic`.
    Gfx11,
    /// `gfx12-generic`.
    Gfx12,
}

/// One row of the processor table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Row {
    name: &'static str,
    mach: u8,
    /// 0 for a generic target.
    gfx_target_version: u32,
    wavefront_sizes: &'static [u32],
    xnack: bool,
    sramecc: bool,
    /// The family this processor belongs to (specific) or covers (generic).
    family: Family,
    generic: bool,
}

/// Wave64 only (GFX6-GFX9).
const W64: &[u32] = &[64];
/// Wave32 by default, wave64 with `wavefrontsize64` (GFX10-GFX12).
const W32_64: &[u32] = &[32, 64];
/// Wave32 only (gfx1250).
const W32: &[u32] = &[32];

/// Target features a row supports.
const NONE: (bool, bool) = (false, false);
const XNACK: (bool, bool) = (true, false);
const XNACK_SRAMECC: (bool, bool) = (true, true);

const fn p(
    name: &'static str,
    mach: u8,
    gfx_target_version: u32,
    wavefront_sizes: &'static [u32],
    (xnack, sramecc): (bool, bool),
    family: Family,
) -> Row {
    Row {
        name,
        mach,
        gfx_target_version,
        wavefront_sizes,
        xnack,
        sramecc,
        family,
        generic: false,
    }
}

const fn g(
    name: &'static str,
    mach: u8,
    wavefront_sizes: &'static [u32],
    (xnack, sramecc): (bool, bool),
    family: Family,
) -> Row {
    Row {
        name,
        mach,
        gfx_target_version: 0,
        wavefront_sizes,
        xnack,
        sramecc,
        family,
        generic: true,
    }
}

/// The table (sources in the module documentation). Compile-time copy; [`ROWS`] is the one
/// `Processor` points into.
const TABLE: [Row; 54] = [
    // GFX6 (Southern Islands).
    p("gfx600", 0x20, 60000, W64, NONE, Family::None),
    p("gfx601", 0x21, 60001, W64, NONE, Family::None),
    p("gfx602", 0x3a, 60002, W64, NONE, Family::None),
    // GFX7 (Sea Islands).
    p("gfx700", 0x22, 70000, W64, NONE, Family::None),
    p("gfx701", 0x23, 70001, W64, NONE, Family::None),
    p("gfx702", 0x24, 70002, W64, NONE, Family::None),
    p("gfx703", 0x25, 70003, W64, NONE, Family::None),
    p("gfx704", 0x26, 70004, W64, NONE, Family::None),
    p("gfx705", 0x3b, 70005, W64, NONE, Family::None),
    // GFX8 (Volcanic Islands).
    p("gfx801", 0x28, 80001, W64, XNACK, Family::None),
    p("gfx802", 0x29, 80002, W64, NONE, Family::None),
    p("gfx803", 0x2a, 80003, W64, NONE, Family::None),
    p("gfx805", 0x3c, 80005, W64, NONE, Family::None),
    p("gfx810", 0x2b, 80100, W64, XNACK, Family::None),
    // GFX9 (Vega, CDNA 1-3).
    p("gfx900", 0x2c, 90000, W64, XNACK, Family::Gfx9),
    p("gfx902", 0x2d, 90002, W64, XNACK, Family::Gfx9),
    p("gfx904", 0x2e, 90004, W64, XNACK, Family::Gfx9),
    p("gfx906", 0x2f, 90006, W64, XNACK_SRAMECC, Family::Gfx9),
    p("gfx908", 0x30, 90008, W64, XNACK_SRAMECC, Family::None),
    p("gfx909", 0x31, 90009, W64, XNACK, Family::Gfx9),
    p("gfx90a", 0x3f, 90010, W64, XNACK_SRAMECC, Family::None),
    p("gfx90c", 0x32, 90012, W64, XNACK, Family::Gfx9),
    p("gfx940", 0x40, 90400, W64, XNACK_SRAMECC, Family::Gfx94),
    p("gfx941", 0x4b, 90401, W64, XNACK_SRAMECC, Family::Gfx94),
    p("gfx942", 0x4c, 90402, W64, XNACK_SRAMECC, Family::Gfx94),
    p("gfx950", 0x4f, 90500, W64, XNACK_SRAMECC, Family::Gfx94),
    // GFX10.1 (RDNA 1).
    p("gfx1010", 0x33, 100100, W32_64, XNACK, Family::Gfx101),
    p("gfx1011", 0x34, 100101, W32_64, XNACK, Family::Gfx101),
    p("gfx1012", 0x35, 100102, W32_64, XNACK, Family::Gfx101),
    p("gfx1013", 0x42, 100103, W32_64, XNACK, Family::Gfx101),
    // GFX10.3 (RDNA 2).
    p("gfx1030", 0x36, 100300, W32_64, NONE, Family::Gfx103),
    p("gfx1031", 0x37, 100301, W32_64, NONE, Family::Gfx103),
    p("gfx1032", 0x38, 100302, W32_64, NONE, Family::Gfx103),
    p("gfx1033", 0x39, 100303, W32_64, NONE, Family::Gfx103),
    p("gfx1034", 0x3e, 100304, W32_64, NONE, Family::Gfx103),
    p("gfx1035", 0x3d, 100305, W32_64, NONE, Family::Gfx103),
    p("gfx1036", 0x45, 100306, W32_64, NONE, Family::Gfx103),
    // GFX11 (RDNA 3, 3.5).
    p("gfx1100", 0x41, 110000, W32_64, NONE, Family::Gfx11),
    p("gfx1101", 0x46, 110001, W32_64, NONE, Family::Gfx11),
    p("gfx1102", 0x47, 110002, W32_64, NONE, Family::Gfx11),
    p("gfx1103", 0x44, 110003, W32_64, NONE, Family::Gfx11),
    p("gfx1150", 0x43, 110500, W32_64, NONE, Family::Gfx11),
    p("gfx1151", 0x4a, 110501, W32_64, NONE, Family::Gfx11),
    p("gfx1152", 0x55, 110502, W32_64, NONE, Family::Gfx11),
    p("gfx1153", 0x58, 110503, W32_64, NONE, Family::Gfx11),
    // GFX12 (RDNA 4) and GFX12.5.
    p("gfx1200", 0x48, 120000, W32_64, NONE, Family::Gfx12),
    p("gfx1201", 0x4e, 120001, W32_64, NONE, Family::Gfx12),
    p("gfx1250", 0x49, 120500, W32, NONE, Family::None),
    // Generic targets (code object v6 and later).
    g("gfx9-generic", 0x51, W64, XNACK, Family::Gfx9),
    g("gfx9-4-generic", 0x5f, W64, XNACK_SRAMECC, Family::Gfx94),
    g("gfx10-1-generic", 0x52, W32_64, XNACK, Family::Gfx101),
    g("gfx10-3-generic", 0x53, W32_64, NONE, Family::Gfx103),
    g("gfx11-generic", 0x54, W32_64, NONE, Family::Gfx11),
    g("gfx12-generic", 0x59, W32_64, NONE, Family::Gfx12),
];

/// The rows `Processor` indexes (a `static`, so a row's fields can be borrowed for `'static`).
static ROWS: [Row; TABLE.len()] = TABLE;

/// Longest processor name in the table, bytes (sizes [`IsaName`](super::IsaName)).
// Read only by target_id's compile-time assertion, which rustc 1.85 does not count as a use.
#[allow(dead_code)]
pub(crate) const MAX_NAME_BYTES: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < TABLE.len() {
        if TABLE[i].name.len() > max {
            max = TABLE[i].name.len();
        }
        i += 1;
    }
    max
};

/// Whether two strings are equal, in a const context.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The table index of `name`; a compile error when a named constant names no row.
const fn index_of(name: &str) -> u8 {
    let mut i = 0;
    while i < TABLE.len() {
        if same(TABLE[i].name, name) {
            return i as u8;
        }
        i += 1;
    }
    panic!("processor constant names no row of the table")
}

// Every name and every mach value appears once (a table mistake is a compile error).
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        let mut j = i + 1;
        while j < TABLE.len() {
            assert!(
                TABLE[i].mach != TABLE[j].mach,
                "two rows share a mach value"
            );
            assert!(!same(TABLE[i].name, TABLE[j].name), "two rows share a name");
            j += 1;
        }
        i += 1;
    }
    assert!(TABLE.len() <= u8::MAX as usize);
};

/// An AMDGCN processor (`gfx90a`) or generic target (`gfx9-generic`): a row of the processor
/// table. Every value is a row (there is no "unknown" processor), so each accessor answers
/// from the table.
///
/// Obtain one from an `EF_AMDGPU_MACH` value ([`Processor::from_mach`]), amdkfd's
/// `gfx_target_version` ([`Processor::from_gfx_target_version`]), a name
/// ([`Processor::from_name`]), or a named constant ([`Processor::GFX90A`]).
///
/// The table's sources, per column:
/// - name and `EF_AMDGPU_MACH`: LLVM AMDGPUUsage, table "AMDGPU `EF_AMDGPU_MACH` Values"
///   (llvmorg-20.1.0), and `EF_AMDGPU_MACH_AMDGCN_*` of `llvm/BinaryFormat/ELF.h`; every value
///   llvm-19 knows is also the `e_flags` that `llvm-mc-19 -mcpu=<name>` writes (checked by
///   `core/tests/isa_table.rs`). gfx1250 (0x49) is from ELF.h after llvmorg-20.
/// - `gfx_target_version`: amdkfd's encoding of the same processor number,
///   `major * 10000 + minor * 100 + stepping`, where the name spells minor and stepping as
///   one hex digit each (linux `kfd_device.c`/`kfd_topology.c`: gfx90a is 90010, gfx90c 90012,
///   gfx942 90402). Generic targets have none: amdkfd never reports one.
/// - wavefront sizes: AMDGPUUsage "Processors" (GFX6-GFX9 run wave64 only; GFX10 to GFX12
///   list the `wavefrontsize64` target feature, so wave32 by default and wave64 on request;
///   gfx1250 lists no `wavefrontsize64`: wave32 only).
/// - XNACK and SRAMECC: the "Target Features Supported" column of AMDGPUUsage "Processors"
///   and "Generic Processors".
/// - generic family: the "Supported Processors" column of AMDGPUUsage "Generic Processors"
///   (every processor there needs generic version 1, "Generic Processor Versioning").
///
/// Ref: LLVM AMDGPUUsage "Processors", "Generic Processors", "`EF_AMDGPU_MACH` Values".
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Processor(u8);

impl Processor {
    /// gfx900 (Vega 10: Radeon Instinct MI25, RX Vega).
    pub const GFX900: Processor = Processor(index_of("gfx900"));
    /// gfx904 (Vega 12: Radeon Pro Vega 20 (Vega Mobile)).
    pub const GFX904: Processor = Processor(index_of("gfx904"));
    /// gfx906 (Vega 20: Radeon Instinct MI50/MI60, Radeon VII).
    pub const GFX906: Processor = Processor(index_of("gfx906"));
    /// gfx908 (CDNA 1: AMD Instinct MI100).
    pub const GFX908: Processor = Processor(index_of("gfx908"));
    /// gfx90a (CDNA 2: AMD Instinct MI210, MI250, MI250X).
    pub const GFX90A: Processor = Processor(index_of("gfx90a"));
    /// gfx90c (Renoir/Cezanne APUs: Ryzen 4000G/5000G).
    pub const GFX90C: Processor = Processor(index_of("gfx90c"));
    /// gfx942 (CDNA 3: AMD Instinct MI300A, MI300X, MI308X, MI325X).
    pub const GFX942: Processor = Processor(index_of("gfx942"));
    /// gfx950 (CDNA 4: AMD Instinct MI350X, MI355X).
    pub const GFX950: Processor = Processor(index_of("gfx950"));
    /// gfx1030 (RDNA 2: Radeon RX 6800/6900).
    pub const GFX1030: Processor = Processor(index_of("gfx1030"));
    /// gfx1100 (RDNA 3: Radeon RX 7900 XTX).
    pub const GFX1100: Processor = Processor(index_of("gfx1100"));
    /// gfx1200 (RDNA 4: Radeon RX 9060).
    pub const GFX1200: Processor = Processor(index_of("gfx1200"));
    /// The `gfx9-generic` target (gfx900, gfx902, gfx904, gfx906, gfx909, gfx90c).
    pub const GFX9_GENERIC: Processor = Processor(index_of("gfx9-generic"));

    fn row(self) -> &'static Row {
        // Every `Processor` holds an index of `ROWS` (made only by `index_of` and the lookups
        // below), so this is always `Some`; gfx600, the first row, is the unreachable
        // fallback rather than a panic.
        ROWS.get(usize::from(self.0)).unwrap_or(&ROWS[0])
    }

    fn find(pred: impl Fn(&Row) -> bool) -> Option<Processor> {
        ROWS.iter().position(pred).map(|i| Processor(i as u8))
    }

    /// Every row of the table, in table order (by generation; generic targets last).
    pub fn all() -> impl Iterator<Item = Processor> {
        (0..ROWS.len()).map(|i| Processor(i as u8))
    }

    /// The processor of an `EF_AMDGPU_MACH` value (the low byte of a code object's `e_flags`).
    ///
    /// # Errors
    /// `Status::InvalidIsa` naming the value when no row has it (R600 processors, reserved
    /// values, processors newer than the table).
    pub fn from_mach(mach: u32) -> Result<Processor> {
        Processor::find(|r| u32::from(r.mach) == mach).ok_or_else(|| {
            crate::error!(
                Status::InvalidIsa,
                "EF_AMDGPU_MACH {mach:#x} is not a known AMDGCN processor"
            )
        })
    }

    /// The processor named `name` (`"gfx942"`, `"gfx11-generic"`), as in target ids.
    ///
    /// # Errors
    /// `Status::InvalidIsaName` naming `name` when no row has it.
    pub fn from_name(name: &str) -> Result<Processor> {
        Processor::find(|r| r.name == name).ok_or_else(|| {
            crate::error!(
                Status::InvalidIsaName,
                "processor {name:?} is not a known AMDGCN processor"
            )
        })
    }

    /// The processor amdkfd reports as `gfx_target_version` (a topology node's property):
    /// 90010 → gfx90a, 90402 → gfx942, 110000 → gfx1100. `None` for 0 (a CPU node, or a
    /// kernel that did not report it) and for a value no row has.
    pub fn from_gfx_target_version(gfx_target_version: u32) -> Option<Processor> {
        if gfx_target_version == 0 {
            return None;
        }
        Processor::find(|r| r.gfx_target_version == gfx_target_version)
    }

    /// The name, e.g. `"gfx90a"` (`HSA_AGENT_INFO_NAME` of a GPU agent; the processor part
    /// of a target id).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Its `EF_AMDGPU_MACH_AMDGCN_*` value, e.g. 0x3f for gfx90a.
    pub fn mach(self) -> u32 {
        u32::from(self.row().mach)
    }

    /// amdkfd's `gfx_target_version` (`major * 10000 + minor * 100 + stepping`, e.g. 90010
    /// for gfx90a); `None` for a generic target.
    pub fn gfx_target_version(self) -> Option<u32> {
        match self.row().gfx_target_version {
            0 => None,
            v => Some(v),
        }
    }

    /// The wavefront sizes, in work-items (lanes), the processor runs: `[64]` for GFX6-GFX9,
    /// `[32, 64]` for GFX10-GFX12 (wave32 by default), `[32]` for gfx1250.
    pub fn wavefront_sizes(self) -> &'static [u32] {
        self.row().wavefront_sizes
    }

    /// Whether the processor has the XNACK (page-fault replay) target feature.
    pub fn supports_xnack(self) -> bool {
        self.row().xnack
    }

    /// Whether the processor has the SRAMECC target feature.
    pub fn supports_sramecc(self) -> bool {
        self.row().sramecc
    }

    /// Whether this is a generic target (`gfx9-generic`, ...), whose code runs only on the
    /// processors it covers and which no agent is.
    pub fn is_generic(self) -> bool {
        self.row().generic
    }

    /// The generic target whose "Supported Processors" list holds this processor
    /// (AMDGPUUsage "Generic Processors": gfx900, gfx902, gfx904, gfx906, gfx909 and gfx90c
    /// → `gfx9-generic`; gfx940, gfx941, gfx942 and gfx950 → `gfx9-4-generic`; ...); `None`
    /// for a processor in no list (gfx908, gfx90a) and for a generic target. ROCR 7 lists it
    /// as an agent's second ISA (`GpuAgent`'s `supported_isas_`).
    pub fn generic_target(self) -> Option<Processor> {
        if self.is_generic() {
            return None;
        }
        Processor::all().find(|g| g.generic_covers(self))
    }

    /// Whether code for `self` (a generic target) can run on `processor` (a specific one):
    /// `self` is generic and `processor` is in its "Supported Processors" list.
    pub fn generic_covers(self, processor: Processor) -> bool {
        let (g, p) = (self.row(), processor.row());
        g.generic && !p.generic && p.family != Family::None && p.family == g.family
    }

    /// The lowest generic version of its generic target that runs on this processor
    /// (AMDGPUUsage "Generic Processor Versioning": every processor the table lists was in
    /// its generic target from version 1).
    pub fn min_generic_version(self) -> u32 {
        1
    }
}

impl fmt::Debug for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Processor({})", self.name())
    }
}

impl fmt::Display for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    /// The generic target of each processor, as ROCR 7.2.4's ISA registry pairs them.
    #[test]
    fn generic_targets_of_processors() {
        let generic = |name: &str| {
            Processor::from_name(name)
                .unwrap()
                .generic_target()
                .map(|g| g.name())
        };
        for name in ["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"] {
            assert_eq!(generic(name), Some("gfx9-generic"), "{name}");
        }
        for name in ["gfx942", "gfx950"] {
            assert_eq!(generic(name), Some("gfx9-4-generic"), "{name}");
        }
        assert_eq!(generic("gfx908"), None);
        assert_eq!(generic("gfx90a"), None);
        assert_eq!(generic("gfx1030"), Some("gfx10-3-generic"));
        assert_eq!(generic("gfx1100"), Some("gfx11-generic"));
        assert_eq!(generic("gfx9-generic"), None);
    }

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
        assert!(e.detail().to_string().contains("0x27"), "{e}");
    }

    #[test]
    fn gfx_target_versions_of_real_topologies() {
        let name = |v| Processor::from_gfx_target_version(v).map(Processor::name);
        assert_eq!(name(90010), Some("gfx90a"));
        assert_eq!(name(90402), Some("gfx942"));
        assert_eq!(name(90000), Some("gfx900"));
        assert_eq!(name(90012), Some("gfx90c"));
        assert_eq!(name(110000), Some("gfx1100"));
        assert_eq!(name(100300), Some("gfx1030"));
        assert_eq!(name(120001), Some("gfx1201"));
        assert_eq!(name(0), None);
        assert_eq!(name(91600), None);
        for v in [90010, 90402, 110000, 100300, 90000] {
            let p = Processor::from_gfx_target_version(v).unwrap();
            assert_eq!(p.gfx_target_version(), Some(v));
        }
        assert_eq!(Processor::GFX9_GENERIC.gfx_target_version(), None);
        assert_eq!(
            Processor::from_name("gfx").unwrap_err().status(),
            Status::InvalidIsaName
        );
        assert!(Processor::from_name("sm_90").is_err());
    }

    /// `gfx_target_version` is the processor number the name spells: `gfx` + major (decimal)
    /// + minor and stepping (one hex digit each).
    #[test]
    fn gfx_target_version_is_the_name_spelled_in_decimal() {
        for p in Processor::all() {
            let Some(v) = p.gfx_target_version() else {
                assert!(p.is_generic(), "{p}");
                continue;
            };
            let (major, minor, stepping) = (v / 10_000, v / 100 % 100, v % 100);
            assert_eq!(
                p.name(),
                std::format!("gfx{major}{minor:x}{stepping:x}"),
                "{v}"
            );
        }
    }

    #[test]
    fn wavefront_sizes_per_generation() {
        let sizes = |v| Processor::from_gfx_target_version(v).map(Processor::wavefront_sizes);
        for v in [60000, 70002, 80003, 90000, 90010, 90402, 90500] {
            assert_eq!(sizes(v), Some(&[64][..]), "{v}");
        }
        for v in [100100, 100300, 110000, 110501, 120001] {
            assert_eq!(sizes(v), Some(&[32, 64][..]), "{v}");
        }
        assert_eq!(sizes(120500), Some(&[32][..]));
        assert_eq!(sizes(0), None);
        assert_eq!(sizes(50000), None);
        assert_eq!(sizes(130000), None);
    }

    #[test]
    fn feature_support_and_generic_families() {
        let sramecc: std::vec::Vec<&str> = Processor::all()
            .filter(|p| p.supports_sramecc() && !p.is_generic())
            .map(Processor::name)
            .collect();
        assert_eq!(
            sramecc,
            ["gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"]
        );
        let xnack = |n| Processor::from_name(n).unwrap().supports_xnack();
        assert!(xnack("gfx801") && xnack("gfx90c") && xnack("gfx1013"));
        assert!(!xnack("gfx803") && !xnack("gfx1030") && !xnack("gfx1100"));
        let g9 = Processor::GFX9_GENERIC;
        assert!(g9.generic_covers(Processor::GFX906));
        assert!(g9.generic_covers(Processor::GFX90C));
        assert!(!g9.generic_covers(Processor::GFX90A));
        assert!(!g9.generic_covers(g9));
        assert!(!Processor::GFX900.generic_covers(Processor::GFX900));
        let g94 = Processor::from_name("gfx9-4-generic").unwrap();
        assert!(g94.generic_covers(Processor::GFX942));
        assert!(g94.generic_covers(Processor::from_name("gfx950").unwrap()));
        let g11 = Processor::from_name("gfx11-generic").unwrap();
        assert!(g11.generic_covers(Processor::from_name("gfx1153").unwrap()));
        assert!(!g11.generic_covers(Processor::GFX1200));
    }

    #[test]
    fn named_constants_are_their_rows() {
        for (p, name) in [
            (Processor::GFX900, "gfx900"),
            (Processor::GFX906, "gfx906"),
            (Processor::GFX908, "gfx908"),
            (Processor::GFX90A, "gfx90a"),
            (Processor::GFX90C, "gfx90c"),
            (Processor::GFX942, "gfx942"),
            (Processor::GFX1030, "gfx1030"),
            (Processor::GFX1100, "gfx1100"),
            (Processor::GFX1200, "gfx1200"),
            (Processor::GFX9_GENERIC, "gfx9-generic"),
        ] {
            assert_eq!(Processor::from_name(name).unwrap(), p);
            assert_eq!(std::format!("{p}"), name);
        }
        assert_eq!(Processor::all().count(), 54);
    }
}
