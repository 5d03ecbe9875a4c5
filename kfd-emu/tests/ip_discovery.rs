//! The render node's IP discovery tree as a program under kfd-emu sees it: tinygrad reads
//! `/sys/class/drm/renderD<minor>/device/ip_discovery/die/0/<hw_id>/0/{major,minor,revision}`
//! for GC (11), SDMA0 (42) and NBIF (108) to choose its register tables. kfd-emu writes the
//! tree in its namespace (over `/sys/class/drm`, absent on this machine) from the table the
//! render node's `AMDGPU_INFO_HW_IP_INFO` answer comes from.

mod common;

use std::process::Command;

/// `hw_id: major.minor.revision` of each block, read by a shell under kfd-emu.
fn versions_under(profile: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kfd-emu"))
        .args(["--profile", profile, "--", "sh", "-c"])
        .arg(
            "D=/sys/class/drm/renderD128/device/ip_discovery/die/0; \
             for h in 11 42 108; do \
             echo $h: $(cat $D/$h/0/major).$(cat $D/$h/0/minor).$(cat $D/$h/0/revision); done",
        )
        .env("KFD_EMU_PRELOAD", common::preload_library())
        .env_remove("HSA_RT_SYSFS")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// gfx942: GC 9.4.3, SDMA 4.4.2, NBIO 7.9.0 (what tinygrad 0.14 needs for gfx942); gfx90a:
/// GC 9.4.2, SDMA 4.4.0, NBIO 7.4.4 (amdgpu_discovery.c's Aldebaran table).
#[test]
fn ip_discovery_versions_in_the_namespace() {
    assert_eq!(
        versions_under("gfx942"),
        "11: 9.4.3\n42: 4.4.2\n108: 7.9.0\n"
    );
    assert_eq!(
        versions_under("gfx90a"),
        "11: 9.4.2\n42: 4.4.0\n108: 7.4.4\n"
    );
}
