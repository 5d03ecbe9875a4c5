//! GPU ISA names and product names from what KFD topology reports.
//!
//! - [`isa_name_from_gfx_target_version`]: `gfx_target_version` (e.g. 90010) to the LLVM
//!   processor name ("gfx90a"). The kernel encodes `major * 10000 + minor * 100 + stepping`
//!   (linux `kfd_topology.c`, `node_props.gfx_target_version`); LLVM spells minor and stepping as
//!   one hex digit each (AMDGPUUsage "Processors": gfx90a is 9.0.10, gfx90c is 9.0.12).
//! - [`gfx_target_version_from_device_id`]: a fallback for kernels older than the
//!   `gfx_target_version` property (before linux 5.13), by PCI device id.
//! - [`full_isa_name`]: ROCR's ISA name `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-` with target
//!   features (AMDGPUUsage "Target Features", "Target ID").
//! - [`marketing_name_from_device_id`]: the product name for the GPUs of our test data.
//!
//! Everything here is a pure function of its arguments: unknown input gives `None`, never a panic.

use core::fmt::Write as _;

/// Splits a `gfx_target_version` into (major, minor, stepping).
///
/// Returns `None` when `v` is 0, or minor or stepping does not fit one hex digit (the LLVM name
/// could not spell it).
pub fn split_gfx_target_version(v: u32) -> Option<(u32, u32, u32)> {
    let major = v / 10000;
    let minor = (v / 100) % 100;
    let stepping = v % 100;
    if major == 0 || minor > 0xf || stepping > 0xf {
        return None;
    }
    Some((major, minor, stepping))
}

/// The LLVM processor name for a KFD `gfx_target_version`: 90010 → "gfx90a", 90402 →
/// "gfx942", 100300 → "gfx1030", 110000 → "gfx1100", 120000 → "gfx1200".
///
/// Ref: AMDGPUUsage "Processors"; linux `kfd_topology.c` (`gfx_target_version` =
/// `major * 10000 + minor * 100 + stepping`).
///
/// Returns `None` for 0 (not reported) and for values whose minor or stepping exceed 15.
pub fn isa_name_from_gfx_target_version(v: u32) -> Option<String> {
    let (major, minor, stepping) = split_gfx_target_version(v)?;
    Some(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// PCI device ids whose `gfx_target_version` is known, for kernels that did not report it.
///
/// Sources: linux `drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c` (`pciidlist`: CHIP_VEGA10,
/// CHIP_VEGA20, CHIP_ARCTURUS, CHIP_ALDEBARAN) and `amdgpu_discovery.c` IP versions; the device
/// ids of our test data (MI25 0x6860, MI210 0x740f, MI250X 0x7408, MI300X 0x74a1, MI308X 0x74a2,
/// RX 7900 XTX 0x744c, Ryzen 5600G 0x1638). Ranges are inclusive.
const DEVICE_ID_TABLE: &[(u32, u32, u32)] = &[
    // Vega 10 (gfx900): MI25, Vega 56/64, Frontier Edition.
    (0x6860, 0x686f, 90000),
    (0x687f, 0x687f, 90000),
    // Vega 20 (gfx906): MI50, MI60, Radeon VII.
    (0x66a0, 0x66a7, 90006),
    (0x66af, 0x66af, 90006),
    // Arcturus (gfx908): MI100.
    (0x7388, 0x7388, 90008),
    (0x738c, 0x738c, 90008),
    (0x738e, 0x738e, 90008),
    // Aldebaran (gfx90a): MI250X, MI250, MI210.
    (0x7408, 0x7408, 90010),
    (0x740c, 0x740c, 90010),
    (0x740f, 0x740f, 90010),
    // Renoir / Cezanne APUs (gfx90c).
    (0x1636, 0x1636, 90012),
    (0x1638, 0x1638, 90012),
    // Aqua Vanjaram (gfx942): MI300A, MI300X, MI308X, MI325X.
    (0x74a0, 0x74a2, 90402),
    (0x74a5, 0x74a5, 90402),
    // Navi 31 (gfx1100): RX 7900 XTX / XT, W7900.
    (0x744c, 0x744c, 110000),
];

/// The `gfx_target_version` of a GPU by PCI `device_id`, for dumps from kernels that did not
/// report it (e.g. the 2018 MI25 dump: device 0x6860 → 90000, gfx900).
///
/// The table is small on purpose (see `DEVICE_ID_TABLE` in the source): the GPUs of the test
/// data and their close siblings. Returns `None` for an unknown id.
pub fn gfx_target_version_from_device_id(device_id: u32) -> Option<u32> {
    DEVICE_ID_TABLE
        .iter()
        .find(|(lo, hi, _)| (*lo..=*hi).contains(&device_id))
        .map(|&(_, _, v)| v)
}

/// Marketing names by PCI device id, as rocminfo prints them for the GPUs of our test data
/// (`/work/shared/testdata/rocminfo`) and as libdrm's `amdgpu.ids` lists them (revision
/// ignored).
const MARKETING_NAMES: &[(u32, &str)] = &[
    (0x6860, "AMD Radeon Instinct MI25"),
    (0x7408, "AMD Instinct MI250X"),
    (0x740c, "AMD Instinct MI250X / MI250"),
    (0x740f, "AMD Instinct MI210"),
    (0x74a0, "AMD Instinct MI300A"),
    (0x74a1, "AMD Instinct MI300X"),
    (0x74a2, "AMD Instinct MI308X"),
    (0x74a5, "AMD Instinct MI325X"),
    (0x744c, "Radeon RX 7900 XTX"),
];

/// The marketing name of a GPU by PCI device id ("AMD Instinct MI210" for 0x740f); `None` when
/// unknown (rocminfo then prints an empty name, as for the Ryzen 5600G's gfx90c).
pub fn marketing_name_from_device_id(device_id: u32) -> Option<&'static str> {
    MARKETING_NAMES
        .iter()
        .find(|(id, _)| *id == device_id)
        .map(|&(_, n)| n)
}

/// Whether the target supports the `sramecc` feature (AMDGPUUsage "Processors" table:
/// gfx906, gfx908, gfx90a, gfx940, gfx941, gfx942, gfx950).
pub fn supports_sramecc(gfx_target_version: u32) -> bool {
    matches!(
        gfx_target_version,
        90006 | 90008 | 90010 | 90400 | 90401 | 90402 | 90500
    )
}

/// Whether the target supports the `xnack` feature (AMDGPUUsage "Processors" table: gfx8
/// APUs gfx801/gfx810, every gfx9 target, gfx10.1 (gfx1010..gfx1013); not gfx10.3+ or gfx11+).
pub fn supports_xnack(gfx_target_version: u32) -> bool {
    match split_gfx_target_version(gfx_target_version) {
        Some((8, 0, 1)) | Some((8, 1, 0)) => true,
        Some((9, _, _)) => true,
        Some((10, 1, s)) => s <= 3,
        _ => false,
    }
}

/// `HSA_CAP_SRAM_EDCSUPPORTED` of `kfd_sysfs.h`: the kernel says SRAM ECC is enabled.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u32 = 0x0400_0000;

/// The full ISA name as ROCR reports it (`hsa_isa_get_info` `HSA_ISA_INFO_NAME`), e.g.
/// `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
///
/// - `:sramecc+`/`:sramecc-` only for targets that support it ([`supports_sramecc`]); `+` when
///   `capability` has [`HSA_CAP_SRAM_EDCSUPPORTED`] (bit 26), as ROCR decides from
///   `HsaNodeProperties.Capability.SRAM_EDCSupport`.
/// - `:xnack+`/`:xnack-` only for targets that support it ([`supports_xnack`]); XNACK is a
///   per-process mode (KFD `SET_XNACK_MODE`, `HSA_XNACK` env), not in topology: `xnack` says
///   what the process runs with, `None` meaning the kernel default, off (`xnack-`), which is what
///   the rocminfo outputs of the test data show (MI210, MI250X, gfx90c).
///
/// Returns `None` when `gfx_target_version` has no name.
pub fn full_isa_name(
    gfx_target_version: u32,
    capability: u32,
    xnack: Option<bool>,
) -> Option<String> {
    let base = isa_name_from_gfx_target_version(gfx_target_version)?;
    let mut s = format!("amdgcn-amd-amdhsa--{base}");
    if supports_sramecc(gfx_target_version) {
        let on = capability & HSA_CAP_SRAM_EDCSUPPORTED != 0;
        let _ = write!(s, ":sramecc{}", if on { '+' } else { '-' });
    }
    if supports_xnack(gfx_target_version) {
        let _ = write!(
            s,
            ":xnack{}",
            if xnack.unwrap_or(false) { '+' } else { '-' }
        );
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_gfx_target_version() {
        let cases = [
            (90000, "gfx900"),
            (90006, "gfx906"),
            (90008, "gfx908"),
            (90010, "gfx90a"),
            (90012, "gfx90c"),
            (90400, "gfx940"),
            (90402, "gfx942"),
            (100300, "gfx1030"),
            (110000, "gfx1100"),
            (110501, "gfx1151"),
            (120000, "gfx1200"),
            (120001, "gfx1201"),
        ];
        for (v, name) in cases {
            assert_eq!(
                isa_name_from_gfx_target_version(v).as_deref(),
                Some(name),
                "{v}"
            );
        }
        assert_eq!(isa_name_from_gfx_target_version(0), None);
        assert_eq!(isa_name_from_gfx_target_version(91600), None); // minor 16
        assert_eq!(isa_name_from_gfx_target_version(90016), None); // stepping 16
        assert_eq!(isa_name_from_gfx_target_version(99), None); // major 0
        assert_eq!(isa_name_from_gfx_target_version(u32::MAX), None);
    }

    #[test]
    fn full_names_match_rocminfo() {
        // MI210 dump capability 746037888 = 0x2c77a280 has bit 26: rocminfo says sramecc+.
        assert_eq!(
            full_isa_name(90010, 746037888, None).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")
        );
        assert_eq!(
            full_isa_name(90012, 0, None).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx90c:xnack-")
        );
        assert_eq!(
            full_isa_name(110000, 0, None).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx1100")
        );
        // MI25 capability 0x2280: gfx900 has no sramecc feature at all.
        assert_eq!(
            full_isa_name(90000, 0x2280, Some(true)).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx900:xnack+")
        );
        assert_eq!(
            full_isa_name(90402, 0, Some(false)).as_deref(),
            Some("amdgcn-amd-amdhsa--gfx942:sramecc-:xnack-")
        );
        assert_eq!(full_isa_name(0, 0, None), None);
    }

    #[test]
    fn device_id_tables() {
        assert_eq!(gfx_target_version_from_device_id(0x6860), Some(90000));
        assert_eq!(gfx_target_version_from_device_id(0x740f), Some(90010));
        assert_eq!(gfx_target_version_from_device_id(0x74a2), Some(90402));
        assert_eq!(gfx_target_version_from_device_id(0x744c), Some(110000));
        assert_eq!(gfx_target_version_from_device_id(0), None);
        assert_eq!(
            marketing_name_from_device_id(0x740f),
            Some("AMD Instinct MI210")
        );
        assert_eq!(
            marketing_name_from_device_id(0x744c),
            Some("Radeon RX 7900 XTX")
        );
        assert_eq!(marketing_name_from_device_id(0x1638), None);
    }
}
