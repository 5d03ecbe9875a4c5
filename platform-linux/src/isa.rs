//! What KFD topology does not say about a GPU, by PCI device id: its ISA on kernels older
//! than the `gfx_target_version` property, and its product name.
//!
//! - [`gfx_target_version_from_device_id`]: a fallback for kernels older than the
//!   `gfx_target_version` property (before linux 5.13), by PCI device id.
//! - [`marketing_name_from_device_id`]: the product name for the GPUs of our test data.
//!
//! Everything else about an ISA (processor names, `gfx_target_version`, target features, ISA
//! names) is hsa-core's one model, [`hsa_core::isa`]: a node's target id is
//! [`TopologyNode::target_id`](crate::topology::TopologyNode::target_id).
//!
//! Everything here is a pure function of its arguments: unknown input gives `None`, never a panic.

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
    (0x66a1, "AMD Instinct MI60 / MI50"),
    (0x738c, "AMD Instinct MI100"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_core::isa::{Processor, TargetId};
    use hsa_core::platform::NodeProperties;

    fn isa_name_from_gfx_target_version(v: u32) -> Option<&'static str> {
        Processor::from_gfx_target_version(v).map(Processor::name)
    }

    /// The ISA name of a GPU node (hsa-core's derivation, as agents and topology nodes use it).
    fn full_isa_name(
        gfx_target_version: u32,
        capability: u32,
        xnack: Option<bool>,
    ) -> Option<String> {
        let node = NodeProperties {
            simd_count: 4,
            gfx_target_version,
            capability,
            ..NodeProperties::default()
        };
        TargetId::of_node(&node, xnack.unwrap_or(false)).map(|t| t.isa_name().to_string())
    }

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
            assert_eq!(isa_name_from_gfx_target_version(v), Some(name), "{v}");
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
        // Every ISA the fallback table gives is a row of hsa-core's processor table.
        for &(lo, hi, v) in DEVICE_ID_TABLE {
            assert!(
                Processor::from_gfx_target_version(v).is_some(),
                "{lo:#x}..={hi:#x}: {v}"
            );
        }
    }
}
