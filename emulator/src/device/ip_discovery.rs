//! The hardware IP versions of each emulated target: one table that both the render node's
//! `AMDGPU_INFO_HW_IP_INFO` answer ([`drm::hw_ip_info`](super::drm::hw_ip_info)) and the
//! `ip_discovery` sysfs tree kfd-emu writes (`/sys/class/drm/renderD<minor>/device/
//! ip_discovery/die/0/<hw_id>/0/{major,minor,revision}`) come from.
//!
//! Sources (linux `drivers/gpu/drm/amd/amdgpu/amdgpu_discovery.c`):
//! - the chips amdgpu still programs from a built-in table (`amdgpu_discovery_set_ip_blocks`,
//!   `case CHIP_VEGA10`, `CHIP_VEGA20`, `CHIP_ARCTURUS`, `CHIP_ALDEBARAN`: `ip_versions[GC_HWIP]`,
//!   `[SDMA0_HWIP]`, `[NBIO_HWIP]`): gfx900 GC 9.0.1 / SDMA 4.0.0 / NBIO 6.1.0, gfx906 GC 9.4.0 /
//!   SDMA 4.2.0 / NBIO 7.4.0, gfx908 GC 9.4.1 / SDMA 4.2.2 / NBIO 7.4.1, gfx90a GC 9.4.2 /
//!   SDMA 4.4.0 / NBIO 7.4.4. (amdgpu still reads those chips' discovery binary "for sysfs";
//!   the table is what the driver runs them as.)
//! - the chips amdgpu knows only through their discovery binary: gfx942 GC 9.4.3, SDMA 4.4.2
//!   (`sdma_v4_4_2.c`, the SDMA of GC 9.4.3 parts), NBIO 7.9.0 (`nbio_v7_9.c`, chosen for
//!   NBIO `IP_VERSION(7, 9, 0)`); gfx90c (Renoir) GC 9.3.0 and SDMA 4.1.2 (`sdma_v4_0.c`'s
//!   Renoir firmware case). Renoir's NBIO version is in no kernel source (its binary gives it),
//!   so the table has none for it and kfd-emu writes no NBIF directory for it.
//! - RDNA: gfx1030 (Sienna Cichlid) GC 10.3.0 (`kfd_device.c`, `kgd2kfd_probe`: GC 10.3.0 is
//!   target 100300) and SDMA 5.2.0 (`kfd_device.c`'s SDMA table names 5.2.0 SIENNA_CICHLID);
//!   gfx1100 (Navi31) GC 11.0.0 (`kgd2kfd_probe`: target 110000) and SDMA 6.0.0 (the SDMA
//!   firmware amdgpu loads for it, `sdma_6_0_0.bin`, beside `gc_11_0_0_*.bin`; linux-firmware
//!   packages them together for Navi31). Their NBIO versions are in no kernel source, so they
//!   have no NBIF directory either.
//!
//! hw_id numbers are `soc15_hw_ip.h`'s (`GC_HWID` 11, `SDMA0_HWID` 42, `NBIF_HWID` 108) and
//! the names amdgpu links beside them (`hw_id_names[]`: "GC", "SDMA0", "NBIF").
//!
//! Register segment bases (`base_addr`) are not part of the table: a client that takes its
//! register offsets from the kernel's `vega20_ip_offset.h` (tinygrad 0.14 does, for every gfx9
//! target: GC segments 0x2000/0xA000, NBIO segment 2 0xD20) gets the bases the emulated PM4
//! engine decodes (`device::pm4`); the real bases of gfx942 are in its discovery binary,
//! which no kernel source carries, so kfd-emu writes no `base_addr` file.

/// `GC_HWID` (`soc15_hw_ip.h`): the graphics and compute block.
pub const GC_HWID: u16 = 11;
/// `SDMA0_HWID` (`soc15_hw_ip.h`): the first SDMA block.
pub const SDMA0_HWID: u16 = 42;
/// `NBIF_HWID` (`soc15_hw_ip.h`): the NBIO/NBIF block (amdgpu's `NBIO_HWIP` maps to it).
pub const NBIF_HWID: u16 = 108;

/// A hardware IP version as amdgpu's `IP_VERSION(major, minor, revision)` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpVersion {
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Revision.
    pub revision: u8,
}

impl IpVersion {
    /// `IP_VERSION(major, minor, revision)`.
    pub const fn new(major: u8, minor: u8, revision: u8) -> IpVersion {
        IpVersion {
            major,
            minor,
            revision,
        }
    }

    /// `major << 16 | minor << 8 | revision`, the packing of
    /// `drm_amdgpu_info_hw_ip.ip_discovery_version` (`amdgpu_drm.h`).
    pub fn packed(self) -> u32 {
        u32::from(self.major) << 16 | u32::from(self.minor) << 8 | u32::from(self.revision)
    }
}

/// The IP versions of one target (module docs give each value's source).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetIps {
    /// The GC block (`GC_HWIP`).
    pub gc: IpVersion,
    /// The SDMA blocks (`SDMA0_HWIP` instance 0; every engine of these chips has it).
    pub sdma: IpVersion,
    /// The NBIO block (`NBIO_HWIP`, hw_id `NBIF`), where a kernel source gives it.
    pub nbio: Option<IpVersion>,
    /// Whether GC has a graphics ring (the compute-only chips, gfx908 onward, have none).
    pub graphics: bool,
}

impl TargetIps {
    /// The blocks of the `ip_discovery` tree: (hw_id, amdgpu's name for it, version), GC,
    /// SDMA0 and (where known) NBIF, in hw_id order.
    pub fn blocks(&self) -> impl Iterator<Item = (u16, &'static str, IpVersion)> {
        [
            Some((GC_HWID, "GC", self.gc)),
            Some((SDMA0_HWID, "SDMA0", self.sdma)),
            self.nbio.map(|v| (NBIF_HWID, "NBIF", v)),
        ]
        .into_iter()
        .flatten()
    }
}

/// The IP versions of the target `gfx_target_version` (90000 gfx900, 90006 gfx906, 90008
/// gfx908, 90010 gfx90a, 90012 gfx90c, 90402 gfx942, 100300 gfx1030, 110000 gfx1100); `None`
/// for any other target.
pub fn target_ips(gfx_target_version: u32) -> Option<TargetIps> {
    let v = IpVersion::new;
    let (gc, sdma, nbio, graphics) = match gfx_target_version {
        90000 => (v(9, 0, 1), v(4, 0, 0), Some(v(6, 1, 0)), true), // Vega10
        90006 => (v(9, 4, 0), v(4, 2, 0), Some(v(7, 4, 0)), true), // Vega20
        90008 => (v(9, 4, 1), v(4, 2, 2), Some(v(7, 4, 1)), false), // Arcturus
        90010 => (v(9, 4, 2), v(4, 4, 0), Some(v(7, 4, 4)), false), // Aldebaran
        90012 => (v(9, 3, 0), v(4, 1, 2), None, true),             // Renoir
        90402 => (v(9, 4, 3), v(4, 4, 2), Some(v(7, 9, 0)), false), // GC 9.4.3
        100300 => (v(10, 3, 0), v(5, 2, 0), None, true),           // Sienna Cichlid
        110000 => (v(11, 0, 0), v(6, 0, 0), None, true),           // Navi31
        _ => return None,
    };
    Some(TargetIps {
        gc,
        sdma,
        nbio,
        graphics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of amdgpu_discovery.c's tables (module docs), packed as the DRM answer
    /// packs them.
    #[test]
    fn versions_of_each_target() {
        let get = |t: u32| {
            let ips = target_ips(t).unwrap();
            (
                ips.gc.packed(),
                ips.sdma.packed(),
                ips.nbio.map(IpVersion::packed),
            )
        };
        assert_eq!(get(90000), (0x09_00_01, 0x04_00_00, Some(0x06_01_00)));
        assert_eq!(get(90006), (0x09_04_00, 0x04_02_00, Some(0x07_04_00)));
        assert_eq!(get(90008), (0x09_04_01, 0x04_02_02, Some(0x07_04_01)));
        assert_eq!(get(90010), (0x09_04_02, 0x04_04_00, Some(0x07_04_04)));
        assert_eq!(get(90012), (0x09_03_00, 0x04_01_02, None));
        assert_eq!(get(90402), (0x09_04_03, 0x04_04_02, Some(0x07_09_00)));
        assert_eq!(get(100300), (0x0a_03_00, 0x05_02_00, None));
        assert_eq!(get(110000), (0x0b_00_00, 0x06_00_00, None));
        assert_eq!(target_ips(100301), None);
        let blocks: Vec<_> = target_ips(90402).unwrap().blocks().collect();
        assert_eq!(
            blocks,
            [
                (11, "GC", IpVersion::new(9, 4, 3)),
                (42, "SDMA0", IpVersion::new(4, 4, 2)),
                (108, "NBIF", IpVersion::new(7, 9, 0)),
            ]
        );
    }
}
