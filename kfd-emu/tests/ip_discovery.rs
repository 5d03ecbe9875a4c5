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

/// The rest of the sysfs a program under kfd-emu sees about its GPU: the PCI function in
/// `/sys/bus/pci/devices` beside the host's own devices (hwloc looks the GPU up there by the
/// bus id ROCR reports; lspci, reading the same tree, names it), and `/sys/class/kfd/kfd`,
/// the class link to the KFD device directory, through which rocm-smi lists the topology;
/// a render node's descriptor is the character device 226:128, which `/sys/dev/char` leads
/// back to the GPU's function (libdrm tells GPUs apart that way).
#[test]
fn pci_function_and_kfd_class_link_in_the_namespace() {
    let host: Vec<String> = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let out = Command::new(env!("CARGO_BIN_EXE_kfd-emu"))
        .args(["--profile", "gfx90a", "--", "sh", "-c"])
        .arg(
            "ls /sys/bus/pci/devices; \
             echo class $(cat /sys/bus/pci/devices/0000:43:00.0/class); \
             echo gpu $(cat /sys/class/kfd/kfd/topology/nodes/1/gpu_id); \
             echo link $(readlink /sys/class/kfd/kfd); \
             echo drm $(ls /sys/dev/char/226:128/device/drm); \
             lspci -n -s 43:00.0 || echo no lspci; \
             python3 -c 'import os; s = os.fstat(os.open(\"/dev/dri/renderD128\", os.O_RDWR)); \
             print(\"rdev\", oct(s.st_mode & 0o170000), os.major(s.st_rdev), os.minor(s.st_rdev))' \
             || echo no python3",
        )
        .env("KFD_EMU_PRELOAD", common::preload_library())
        .env_remove("HSA_RT_SYSFS")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Every host device is still listed, and the GPU's function beside them.
    for h in &host {
        assert!(lines.contains(&h.as_str()), "{h} missing: {text}");
    }
    assert!(lines.contains(&"0000:43:00.0"), "{text}");
    assert!(lines.contains(&"class 0x038000"), "{text}");
    // The built-in profile's GPU node has gpu_id 4660 (0x1234), as the topology says.
    assert!(lines.contains(&"gpu 4660"), "{text}");
    assert!(
        lines.contains(&"link ../../devices/virtual/kfd/kfd"),
        "{text}"
    );
    // libdrm's way from the descriptor to the device: fstat's st_rdev, then
    // /sys/dev/char/226:<minor>/device/drm.
    assert!(lines.contains(&"drm card0 renderD128"), "{text}");
    if lines.contains(&"no python3") {
        println!("skipped: python3 is not installed (the render node's fstat)");
    } else {
        assert!(lines.contains(&"rdev 0o20000 226 128"), "{text}");
    }
    if lines.contains(&"no lspci") {
        println!("skipped: lspci (pciutils) is not installed; the files are checked above");
    } else {
        assert!(
            lines.contains(&"43:00.0 0380: 1002:740f (rev 02)"),
            "{text}"
        );
    }
}
