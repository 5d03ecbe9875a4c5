//! Writes a [`Topology`] as amdkfd's sysfs tree (`<root>/generation_id`,
//! `system_properties`, `nodes/N/{gpu_id,name,properties}`, `nodes/N/mem_banks/M/properties`,
//! `caches/M/properties`, `io_links/M/properties`, `p2p_links/M/properties`), the files and
//! keys of `kfd_topology.c` (`node_show`, `mem_show`, `kfd_cache_show`, `iolink_show`), so
//! that libhsakmt reads back what the emulated device serves, and
//! [`Topology::read`](hsa_linux::topology::Topology::read) gives the same topology.
//!
//! Counts in `properties` (`mem_banks_count`, `caches_count`, `io_links_count`,
//! `p2p_links_count`) are those of the entries written. Values the topology does not keep
//! (cache associativity and latency, link latencies, `recommended_transfer_size`) are
//! written as 0, as amdkfd writes a value its CRAT did not give.

use std::fmt::Write as _;
use std::path::Path;

use hsa_core::platform::HeapType;
use hsa_linux::topology::Topology;

/// Writes `topology` under `root` (which must exist and be empty).
///
/// # Errors
/// The I/O error of the first file or directory that could not be written, with its path.
pub fn write_topology(topology: &Topology, root: &Path) -> Result<(), String> {
    let put = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mkdir =
        |path: &Path| std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()));
    put(
        &root.join("generation_id"),
        &format!("{}\n", topology.generation_id.unwrap_or(1)),
    )?;
    let s = &topology.system;
    put(
        &root.join("system_properties"),
        &format!(
            "platform_oem {}\nplatform_id {}\nplatform_rev {}\n",
            s.platform_oem, s.platform_id, s.platform_rev
        ),
    )?;
    for (i, node) in topology.nodes.iter().enumerate() {
        let dir = root.join("nodes").join(i.to_string());
        mkdir(&dir)?;
        let p = &node.properties;
        put(&dir.join("gpu_id"), &format!("{}\n", p.gpu_id))?;
        put(&dir.join("name"), &format!("{}\n", p.name))?;
        let io = node.io_links.iter().filter(|l| !l.p2p).count();
        let p2p = node.io_links.len() - io;
        let mut t = String::new();
        let mut kv = |k: &str, v: u64| {
            let _ = writeln!(t, "{k} {v}");
        };
        kv("cpu_cores_count", p.cpu_cores_count.into());
        kv("simd_count", p.simd_count.into());
        kv("mem_banks_count", node.memory_banks.len() as u64);
        kv("caches_count", node.caches.len() as u64);
        kv("io_links_count", io as u64);
        kv("p2p_links_count", p2p as u64);
        kv("cpu_core_id_base", p.cpu_core_id_base.into());
        kv("simd_id_base", p.simd_id_base.into());
        kv("max_waves_per_simd", p.max_waves_per_simd.into());
        kv("lds_size_in_kb", p.lds_size_in_kb.into());
        kv("gds_size_in_kb", p.gds_size_in_kb.into());
        kv("num_gws", p.num_gws.into());
        kv("wave_front_size", p.wave_front_size.into());
        kv("array_count", p.array_count.into());
        kv("simd_arrays_per_engine", p.simd_arrays_per_engine.into());
        kv("cu_per_simd_array", p.cu_per_simd_array.into());
        kv("simd_per_cu", p.simd_per_cu.into());
        kv("max_slots_scratch_cu", p.max_slots_scratch_cu.into());
        kv("gfx_target_version", p.gfx_target_version.into());
        kv("vendor_id", p.vendor_id.into());
        kv("device_id", p.device_id.into());
        kv("location_id", p.location_id.into());
        kv("domain", p.domain.into());
        // drm_render_minor is signed (-1 for a CPU on some kernels).
        let _ = writeln!(t, "drm_render_minor {}", p.drm_render_minor);
        let mut kv = |k: &str, v: u64| {
            let _ = writeln!(t, "{k} {v}");
        };
        kv("hive_id", p.hive_id);
        kv("num_sdma_engines", p.num_sdma_engines.into());
        kv("num_sdma_xgmi_engines", p.num_sdma_xgmi_engines.into());
        kv(
            "num_sdma_queues_per_engine",
            p.num_sdma_queues_per_engine.into(),
        );
        kv("num_cp_queues", p.num_cp_queues.into());
        kv("max_engine_clk_fcompute", p.max_engine_clk_fcompute.into());
        kv("local_mem_size", p.local_mem_size);
        kv("fw_version", p.fw_version.into());
        kv("capability", p.capability.into());
        kv("debug_prop", p.debug_prop.into());
        kv("sdma_fw_version", p.sdma_fw_version.into());
        kv("unique_id", p.unique_id);
        kv("num_xcc", p.num_xcc.into());
        kv("max_engine_clk_ccompute", p.max_engine_clk_ccompute.into());
        put(&dir.join("properties"), &t)?;

        for (m, b) in node.memory_banks.iter().enumerate() {
            let d = dir.join("mem_banks").join(m.to_string());
            mkdir(&d)?;
            put(
                &d.join("properties"),
                &format!(
                    "heap_type {}\nsize_in_bytes {}\nflags {}\nwidth {}\nmem_clk_max {}\n",
                    heap_type_raw(b.heap_type),
                    b.size_bytes,
                    b.flags,
                    b.width_bits,
                    b.mem_clk_max_mhz
                ),
            )?;
        }
        if node.memory_banks.is_empty() {
            mkdir(&dir.join("mem_banks"))?;
        }
        mkdir(&dir.join("caches"))?;
        for (m, c) in node.caches.iter().enumerate() {
            let d = dir.join("caches").join(m.to_string());
            mkdir(&d)?;
            put(
                &d.join("properties"),
                &format!(
                    "processor_id_low {}\nlevel {}\nsize {}\ncache_line_size {}\n\
                     cache_lines_per_tag 0\nassociation 0\nlatency 0\ntype {}\n",
                    c.processor_id_low, c.level, c.size_kib, c.cache_line_size_bytes, c.cache_type
                ),
            )?;
        }
        mkdir(&dir.join("io_links"))?;
        mkdir(&dir.join("p2p_links"))?;
        for p2p in [false, true] {
            let sub = if p2p { "p2p_links" } else { "io_links" };
            for (m, l) in node.io_links.iter().filter(|l| l.p2p == p2p).enumerate() {
                let d = dir.join(sub).join(m.to_string());
                mkdir(&d)?;
                put(
                    &d.join("properties"),
                    &format!(
                        "type {}\nversion_major 0\nversion_minor 0\nnode_from {}\nnode_to {}\n\
                         weight {}\nmin_latency 0\nmax_latency 0\nmin_bandwidth {}\n\
                         max_bandwidth {}\nrecommended_transfer_size 0\n\
                         recommended_sdma_engine_id_mask {}\nflags {}\n",
                        l.link_type,
                        l.node_from,
                        l.node_to,
                        l.weight,
                        l.min_bandwidth,
                        l.max_bandwidth,
                        l.rec_sdma_eng_id_mask,
                        l.flags
                    ),
                )?;
            }
        }
    }
    Ok(())
}

/// Writes amdgpu's module directory (`/sys/module/amdgpu`, kernel/module/sysfs.c) under
/// `dir`: `initstate` `live` (a module whose init has returned; rocminfo 7 reads it before
/// anything else and stops with "ROCk module is NOT live" otherwise) and `version`, which
/// only amdgpu's DKMS builds have (the in-tree module sets no MODULE_VERSION): here the
/// amdkfd ioctl interface version the emulated device answers AMDKFD_IOC_GET_VERSION with,
/// `major.minor`, so that rocminfo's "ROCk module version ... is loaded" names the interface
/// the program talks to. ROCR and libhsakmt 7.2 read nothing under `/sys/module`.
///
/// # Errors
/// The file that could not be written, with its path.
pub fn write_module(dir: &Path, interface_version: (u32, u32)) -> Result<(), String> {
    let put = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    put("initstate", "live\n".into())?;
    put(
        "version",
        format!("{}.{}\n", interface_version.0, interface_version.1),
    )
}

/// Writes amdgpu's IP discovery tree of each GPU node under `drm_class` (the fixture over
/// `/sys/class/drm`), as `amdgpu_discovery_sysfs_init` lays it out under the render node's
/// device: `renderD<drm_render_minor>/device/ip_discovery/die/0/<hw_id>/0/` holding `hw_id`,
/// `num_instance`, `major`, `minor`, `revision` (each `%d` and a newline) and `harvest`
/// (`0x0`: nothing harvested), and beside `<hw_id>` a link named as amdgpu names the block
/// (`GC` -> `11`). The blocks and versions are the target's row of
/// [`target_ips`](hsa_emu::device::ip_discovery::target_ips), the table the render node's
/// `AMDGPU_INFO_HW_IP_INFO` answer comes from (GC, SDMA0, NBIF: what tinygrad reads to choose
/// its register tables). Only instance 0 of each block is written, and neither
/// `num_base_addresses` nor `base_addr` (see that module: no kernel source gives every
/// target's segment bases); `die/0/num_ips` is not written either (it counts the discovery
/// binary's entries, which the emulated GPU has not). A GPU whose target has no row,
/// or whose render minor is negative, gets no tree; a render minor shared by two nodes
/// (partitions of one device) is written once.
///
/// # Errors
/// The path that could not be written.
pub fn write_ip_discovery(topology: &Topology, drm_class: &Path) -> Result<(), String> {
    let put = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    for node in &topology.nodes {
        let p = &node.properties;
        if p.simd_count == 0 || p.drm_render_minor < 0 {
            continue;
        }
        let Some(ips) = hsa_emu::device::ip_discovery::target_ips(p.gfx_target_version) else {
            continue;
        };
        let die = drm_class
            .join(format!("renderD{}", p.drm_render_minor))
            .join("device/ip_discovery/die/0");
        if die.exists() {
            continue;
        }
        for (hw_id, name, v) in ips.blocks() {
            let d = die.join(hw_id.to_string()).join("0");
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            put(&d.join("hw_id"), &format!("{hw_id}\n"))?;
            put(&d.join("num_instance"), "0\n")?;
            put(&d.join("major"), &format!("{}\n", v.major))?;
            put(&d.join("minor"), &format!("{}\n", v.minor))?;
            put(&d.join("revision"), &format!("{}\n", v.revision))?;
            put(&d.join("harvest"), "0x0\n")?;
            let link = die.join(name);
            std::os::unix::fs::symlink(hw_id.to_string(), &link)
                .map_err(|e| format!("{}: {e}", link.display()))?;
        }
    }
    Ok(())
}

/// The PCI class code (base class, subclass, programming interface: 24 bits) of an emulated
/// GPU's function: 0x038000 (display controller, other) for the Instinct-only targets (gfx908,
/// gfx90a, gfx94x, gfx950: no display engine, as `lspci -n` shows an MI100/MI210/MI300), else
/// 0x030000 (VGA-compatible controller).
pub fn pci_class(gfx_target_version: u32) -> u32 {
    match gfx_target_version {
        90008 | 90010 | 90400..=90402 | 90500 => 0x03_8000,
        _ => 0x03_0000,
    }
}

/// The PCI name `DDDD:BB:DD.F` of a GPU with KFD's `domain` and `location_id` (amdkfd's
/// `PCI_DEVID(bus, devfn)`: bus in bits 15:8, device in 7:3, function in 2:0).
pub fn pci_name(domain: u32, location_id: u32) -> String {
    format!(
        "{domain:04x}:{:02x}:{:02x}.{:x}",
        (location_id >> 8) & 0xff,
        (location_id >> 3) & 0x1f,
        location_id & 7
    )
}

/// The first 256 bytes of a GPU function's configuration space (PCI Local Bus 3.0 §6.1, type 0
/// header): vendor and device id, memory space and bus master enabled, the revision, the class
/// code, and the subsystem ids; no capability list.
pub fn pci_config(vendor: u16, device: u16, revision: u8, class: u32) -> [u8; 256] {
    let mut c = [0u8; 256];
    c[0..2].copy_from_slice(&vendor.to_le_bytes());
    c[2..4].copy_from_slice(&device.to_le_bytes());
    c[4..6].copy_from_slice(&0x0006u16.to_le_bytes());
    c[8] = revision;
    c[9..12].copy_from_slice(&class.to_le_bytes()[..3]);
    c[0x2c..0x2e].copy_from_slice(&vendor.to_le_bytes());
    c[0x2e..0x30].copy_from_slice(&device.to_le_bytes());
    c
}

/// Writes each GPU of `topology` as a PCI function, the files of `/sys/bus/pci/devices/<name>`
/// that hwloc and lspci read (`config`, `vendor`, `device`, `class`, `revision`,
/// `subsystem_vendor`, `subsystem_device`, `numa_node`, `local_cpus`), in a directory of
/// `store` named as [`pci_name`], and links it from `devices` (the fixture over
/// `/sys/bus/pci/devices`). So a client that looks the GPU up by the bus id ROCR reports
/// (`HSA_AMD_AGENT_INFO_BDFID` and `_DOMAIN`: rocrtst's copy benchmarks ask hwloc) finds a
/// device. Values: the node's `vendor_id` and `device_id`, the revision amdgpu would report
/// ([`device_info`](hsa_emu::device::drm::device_info)), [`pci_class`], the subsystem ids equal
/// to the vendor and device ids (KFD's topology does not carry them), `numa_node` 0 and
/// `local_cpus` the given mask (sysfs's comma-separated 32-bit hex groups). A bus id shared by
/// two nodes (partitions of one device) is written once. Returns the names written.
///
/// # Errors
/// The path that could not be written.
pub fn write_pci_devices(
    topology: &Topology,
    devices: &Path,
    store: &Path,
    local_cpus: &str,
) -> Result<Vec<String>, String> {
    let put = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut names = Vec::new();
    for node in &topology.nodes {
        let p = &node.properties;
        if p.simd_count == 0 {
            continue;
        }
        let name = pci_name(p.domain, p.location_id);
        if names.contains(&name) {
            continue;
        }
        let dir = store.join(&name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (vendor, device) = (p.vendor_id as u16, p.device_id as u16);
        let revision = hsa_emu::device::drm::device_info(node).pci_rev as u8;
        let class = pci_class(p.gfx_target_version);
        put(
            &dir.join("config"),
            &pci_config(vendor, device, revision, class),
        )?;
        put(&dir.join("vendor"), format!("{vendor:#06x}\n").as_bytes())?;
        put(&dir.join("device"), format!("{device:#06x}\n").as_bytes())?;
        put(
            &dir.join("subsystem_vendor"),
            format!("{vendor:#06x}\n").as_bytes(),
        )?;
        put(
            &dir.join("subsystem_device"),
            format!("{device:#06x}\n").as_bytes(),
        )?;
        put(&dir.join("class"), format!("{class:#08x}\n").as_bytes())?;
        put(
            &dir.join("revision"),
            format!("{revision:#04x}\n").as_bytes(),
        )?;
        put(&dir.join("numa_node"), b"0\n")?;
        put(
            &dir.join("local_cpus"),
            format!("{local_cpus}\n").as_bytes(),
        )?;
        let link = devices.join(&name);
        // A host device with the same bus id is hidden by the emulated one.
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).map_err(|e| format!("{}: {e}", link.display()))?;
        names.push(name);
    }
    Ok(names)
}

/// Writes each GPU's DRM nodes under its PCI function in `store` (made by
/// [`write_pci_devices`]) as amdgpu's sysfs has them: `drm/renderD<minor>` and
/// `drm/card<minor - 128>`, each with its `dev` (`226:<minor>`, DRM's major) and `device`
/// (the link back to the function), linked from `drm_class` (the fixture over
/// `/sys/class/drm`) and from `dev_char` (the fixture over `/sys/dev/char`, as
/// `226:<minor>`). libdrm resolves a render node's descriptor through them
/// (`/sys/dev/char/226:<minor>/device/drm`, whose `card*` entry names the device), so two
/// GPUs are two devices to it; tinygrad and ROCR read `/sys/class/drm/renderD<minor>/device`.
/// A node without a render minor gets none; a minor shared by two nodes (partitions of one
/// device) is written once. Call before [`write_ip_discovery`], which then writes into the
/// function's directory through these links.
///
/// # Errors
/// The path that could not be written.
pub fn write_drm_nodes(
    topology: &Topology,
    store: &Path,
    drm_class: &Path,
    dev_char: &Path,
) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    for node in &topology.nodes {
        let p = &node.properties;
        if p.simd_count == 0 || p.drm_render_minor < 128 {
            continue;
        }
        let function = store.join(pci_name(p.domain, p.location_id));
        let minor = p.drm_render_minor as u32;
        for (name, number) in [
            (format!("renderD{minor}"), minor),
            (format!("card{}", minor - 128), minor - 128),
        ] {
            let node_dir = function.join("drm").join(&name);
            if node_dir.exists() {
                continue;
            }
            std::fs::create_dir_all(&node_dir).map_err(|e| err(&node_dir, e))?;
            let dev = node_dir.join("dev");
            std::fs::write(&dev, format!("226:{number}\n")).map_err(|e| err(&dev, e))?;
            let device = node_dir.join("device");
            std::os::unix::fs::symlink("../..", &device).map_err(|e| err(&device, e))?;
            for link in [
                drm_class.join(&name),
                dev_char.join(format!("226:{number}")),
            ] {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(&node_dir, &link).map_err(|e| err(&link, e))?;
            }
        }
    }
    Ok(())
}

/// sysfs's CPU mask text (`local_cpus`, `cpumap`: 32-bit hex groups, most significant first,
/// comma-separated) of CPUs `0..cpus`.
pub fn cpu_mask(cpus: usize) -> String {
    let groups = cpus.div_ceil(32).max(1);
    (0..groups)
        .rev()
        .map(|g| {
            let n = cpus.saturating_sub(g * 32).min(32);
            let bits = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
            format!("{bits:08x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The raw `heap_type` of a [`HeapType`] (`HSA_HEAPTYPE_*`).
fn heap_type_raw(h: HeapType) -> u32 {
    match h {
        HeapType::System => 0,
        HeapType::FrameBufferPublic => 1,
        HeapType::FrameBufferPrivate => 2,
        HeapType::GpuGds => 3,
        HeapType::GpuLds => 4,
        HeapType::GpuScratch => 5,
        HeapType::Other(n) => n,
    }
}

/// A `/proc/cpuinfo` for the topology's CPU nodes, the one libhsakmt reads to name them (by
/// the `apicid` that is a node's `cpu_core_id_base`): `processors` entries (the number the
/// host's libc reports, so that libhsakmt accepts every entry), entry `i` standing for CPU
/// node `i` (the last one repeated), named as the node is (`kfd-emu` names a capture's CPU
/// nodes after this machine's processor first, as hsainfo does; a node still without a name
/// gets an empty `model name`, and ROCR then names the agent with nothing, as hsa-rt does).
pub fn cpuinfo(topology: &Topology, processors: usize) -> String {
    let cpus: Vec<_> = topology
        .nodes
        .iter()
        .filter(|n| n.properties.simd_count == 0 && n.properties.cpu_cores_count > 0)
        .collect();
    let mut out = String::new();
    for i in 0..processors.max(1) {
        let (apicid, name) = match cpus.get(i.min(cpus.len().saturating_sub(1))) {
            Some(n) => (n.properties.cpu_core_id_base, n.properties.name.as_str()),
            None => (0, ""),
        };
        let _ = write!(
            out,
            "processor\t: {i}\nvendor_id\t: AuthenticAMD\nmodel name\t: {name}\n\
             apicid\t\t: {apicid}\ninitial apicid\t: {apicid}\n\n"
        );
    }
    out
}

/// The CPU-cache tree libhsakmt 5.2 reads for each CPU node instead of the KFD topology's
/// (`topology_get_cpu_cache_props`: `/sys/devices/system/node/node<N>/cpu<P>/cache/index<K>`),
/// written under `root` (the fixture over `/sys/devices/system/node`): for CPU node `N`
/// (in KFD's numbering, which libhsakmt uses), one CPU `cpu<P>` — `P` the node's position
/// among the CPU nodes, the processor [`cpuinfo`] gives the node's `cpu_core_id_base` as
/// `apicid` — holding the node's caches (size, level, type, line size), or, for a node
/// without caches (every capture: amdkfd reports none for CPUs), a 32 KiB L1 data cache,
/// since ROCR 5.2 requires a CPU agent to have one (`CpuAgent::GetInfo`: "CPU cache info
/// missing").
///
/// # Errors
/// The path that could not be written.
pub fn write_cpu_caches(topology: &Topology, root: &Path) -> Result<(), String> {
    let put = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let cpus = topology
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.properties.simd_count == 0 && n.properties.cpu_cores_count > 0);
    for (position, (index, node)) in cpus.enumerate() {
        let dir = root
            .join(format!("node{index}"))
            .join(format!("cpu{position}"))
            .join("cache");
        let fixture = [hsa_core::platform::Cache {
            processor_id_low: node.properties.cpu_core_id_base,
            level: 1,
            size_kib: 32,
            cache_line_size_bytes: 64,
            cache_type: 1 | 4,
        }];
        let caches = if node.caches.is_empty() {
            &fixture[..]
        } else {
            &node.caches[..]
        };
        for (k, c) in caches.iter().enumerate() {
            let d = dir.join(format!("index{k}"));
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            let kind = match c.cache_type & 3 {
                1 => "Data",
                2 => "Instruction",
                _ => "Unified",
            };
            put(&d.join("level"), &format!("{}\n", c.level))?;
            put(&d.join("type"), &format!("{kind}\n"))?;
            put(&d.join("size"), &format!("{}K\n", c.size_kib))?;
            put(
                &d.join("coherency_line_size"),
                &format!("{}\n", c.cache_line_size_bytes),
            )?;
            put(&d.join("ways_of_associativity"), "0\n")?;
            put(&d.join("physical_line_partition"), "1\n")?;
            put(&d.join("shared_cpu_list"), &format!("{position}\n"))?;
            let mut map = vec![0u32; position / 32 + 1];
            map[position / 32] |= 1 << (position % 32);
            let map: Vec<String> = map.iter().rev().map(|w| format!("{w:08x}")).collect();
            put(&d.join("shared_cpu_map"), &format!("{}\n", map.join(",")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_emu::{builtin_topology, device::complete_capture};

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kfd-emu-sysfs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn builtin_round_trips() {
        let t = builtin_topology();
        let d = tmp("builtin");
        write_topology(&t, &d).unwrap();
        let back = Topology::read(&d).unwrap();
        // The reader derives the marketing name and ASIC revision from the device id (no sysfs
        // file holds them); the profile's name adds " (emulated)".
        let mut want = t.clone();
        want.nodes[1].properties.marketing_name = back.nodes[1].properties.marketing_name.clone();
        want.nodes[1].properties.asic_revision = back.nodes[1].properties.asic_revision;
        assert_eq!(back, want);
        assert_eq!(
            std::fs::read_to_string(d.join("nodes/1/gpu_id")).unwrap(),
            "4660\n"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn every_capture_round_trips_after_completion() {
        let Some(roots) = hsa_test_support::shared::topology_dumps() else {
            return;
        };
        let mut n = 0;
        for root in roots {
            let mut t = Topology::read(&root).unwrap();
            complete_capture(&mut t);
            let case = root
                .parent()
                .and_then(|c| c.file_name())
                .unwrap_or_default();
            let d = tmp(&case.to_string_lossy());
            write_topology(&t, &d).unwrap();
            let back = Topology::read(&d).unwrap();
            assert_eq!(back.nodes.len(), t.nodes.len());
            for (a, b) in back.nodes.iter().zip(&t.nodes) {
                // The counts written are those of the entries written (the MI300X capture
                // says p2p_links_count 31 and has no p2p_links).
                let mut b = b.clone();
                b.properties.mem_banks_count = b.memory_banks.len() as u32;
                b.properties.caches_count = b.caches.len() as u32;
                b.properties.io_links_count = b.io_links.iter().filter(|l| !l.p2p).count() as u32;
                b.properties.p2p_links_count = b.io_links.iter().filter(|l| l.p2p).count() as u32;
                assert_eq!(a, &b, "{}", root.display());
            }
            assert_eq!(back.system, t.system);
            // Completed: every GPU has a gpu_id and a frame-buffer bank, every CPU a
            // system bank, and system_properties exists.
            for node in &back.nodes {
                assert!(!node.memory_banks.is_empty(), "{}", root.display());
                if node.properties.simd_count > 0 {
                    assert_ne!(node.properties.gpu_id, 0);
                }
            }
            assert!(d.join("system_properties").is_file());
            let _ = std::fs::remove_dir_all(&d);
            n += 1;
        }
        assert_eq!(n, 4, "the four captures");
    }

    #[test]
    fn cpu_cache_fixture_for_each_cpu_node() {
        let t = builtin_topology();
        let d = tmp("cpu-caches");
        write_cpu_caches(&t, &d).unwrap();
        let idx = d.join("node0/cpu0/cache/index0");
        assert_eq!(std::fs::read_to_string(idx.join("size")).unwrap(), "32K\n");
        assert_eq!(std::fs::read_to_string(idx.join("type")).unwrap(), "Data\n");
        assert_eq!(
            std::fs::read_to_string(idx.join("shared_cpu_map")).unwrap(),
            "00000001\n"
        );
        assert!(!d.join("node1").exists(), "node 1 is the GPU");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn module_dir_says_live() {
        let d = tmp("module");
        write_module(&d, (1, 11)).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("initstate")).unwrap(),
            "live\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("version")).unwrap(),
            "1.11\n"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Reads back `major`, `minor`, `revision` of block `hw_id` of render node `minor`, the
    /// files tinygrad reads, exactly as written.
    fn ip_files(class: &Path, minor: i32, hw_id: u16) -> [String; 3] {
        let d = class.join(format!(
            "renderD{minor}/device/ip_discovery/die/0/{hw_id}/0"
        ));
        ["major", "minor", "revision"]
            .map(|f| std::fs::read_to_string(d.join(f)).unwrap_or_else(|e| format!("{f}: {e}")))
    }

    /// gfx942: GC 9.4.3, SDMA 4.4.2, NBIO 7.9.0; gfx90a: GC 9.4.2, SDMA 4.4.0, NBIO 7.4.4
    /// (amdgpu_discovery.c: the MI300 blocks' drivers, Aldebaran's table), each file the
    /// decimal and a newline as `sysfs_emit("%d\n")` writes it; the other files of an
    /// instance, the name links; the RDNA profiles GC and SDMA0 only.
    #[test]
    fn cpu_masks_in_sysfs_groups() {
        assert_eq!(cpu_mask(1), "00000001");
        assert_eq!(cpu_mask(2), "00000003");
        assert_eq!(cpu_mask(32), "ffffffff");
        assert_eq!(cpu_mask(33), "00000001,ffffffff");
        assert_eq!(cpu_mask(72), "000000ff,ffffffff,ffffffff");
    }

    #[test]
    fn pci_function_of_each_gpu() {
        // gfx90a (MI210): bus id 0x4300 in domain 0 is 0000:43:00.0, device 0x740f rev 2.
        let d = tmp("pci-90a");
        let (devices, store) = (d.join("bus/pci/devices"), d.join("store"));
        std::fs::create_dir_all(&devices).unwrap();
        let names = write_pci_devices(&builtin_topology(), &devices, &store, "00000003").unwrap();
        assert_eq!(names, ["0000:43:00.0"]);
        let f = devices.join("0000:43:00.0");
        let read = |n: &str| std::fs::read_to_string(f.join(n)).unwrap();
        assert_eq!(read("vendor"), "0x1002\n");
        assert_eq!(read("device"), "0x740f\n");
        assert_eq!(read("class"), "0x038000\n");
        assert_eq!(read("revision"), "0x02\n");
        assert_eq!(read("local_cpus"), "00000003\n");
        let config = std::fs::read(f.join("config")).unwrap();
        assert_eq!(config.len(), 256);
        // Vendor, device, command; revision and class; subsystem ids (PCI 3.0 type 0 header).
        assert_eq!(config[..6], [0x02, 0x10, 0x0f, 0x74, 0x06, 0x00]);
        assert_eq!(config[8..12], [0x02, 0x00, 0x80, 0x03]);
        assert_eq!(config[0x2c..0x30], [0x02, 0x10, 0x0f, 0x74]);
        // lspci (libpci's sysfs access, reading the tree as it reads /sys) names the same
        // function; an independent reader of the config space and the text files.
        match std::process::Command::new("lspci")
            .arg("-O")
            .arg(format!("sysfs.path={}", d.join("bus/pci").display()))
            .args(["-n", "-s", "43:00.0"])
            .output()
        {
            Ok(o) => assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                "43:00.0 0380: 1002:740f (rev 02)\n",
                "{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => println!("skipped: lspci (pciutils) is not installed: {e}"),
        }
        let _ = std::fs::remove_dir_all(&d);

        // The MI210 capture's eight GPUs: eight functions, their buses from location_id.
        let Some(roots) = hsa_test_support::shared::topology_dumps() else {
            return;
        };
        let Some(mi210) = roots.iter().find(|r| r.to_string_lossy().contains("mi210")) else {
            return;
        };
        let mut t = Topology::read(mi210).unwrap();
        complete_capture(&mut t);
        let d = tmp("pci-mi210");
        let (devices, store) = (d.join("devices"), d.join("store"));
        std::fs::create_dir_all(&devices).unwrap();
        let names = write_pci_devices(&t, &devices, &store, "ffffffff").unwrap();
        let want: Vec<String> = t
            .nodes
            .iter()
            .filter(|n| n.properties.simd_count != 0)
            .map(|n| pci_name(n.properties.domain, n.properties.location_id))
            .collect();
        assert_eq!(names, want);
        assert_eq!(names.len(), 8);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn drm_nodes_under_each_pci_function() {
        let d = tmp("drm-nodes");
        let (devices, store) = (d.join("devices"), d.join("store"));
        let (class, chars) = (d.join("class"), d.join("char"));
        for dir in [&devices, &class, &chars] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let t = builtin_topology();
        write_pci_devices(&t, &devices, &store, "00000003").unwrap();
        write_drm_nodes(&t, &store, &class, &chars).unwrap();
        write_ip_discovery(&t, &class).unwrap();
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap();
        // libdrm's way from a render node's st_rdev to its device: /sys/dev/char/226:128's
        // device/drm lists the primary node card0.
        let mut drm: Vec<_> = std::fs::read_dir(chars.join("226:128/device/drm"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        drm.sort();
        assert_eq!(drm, ["card0", "renderD128"]);
        assert_eq!(read(chars.join("226:128/dev")), "226:128\n");
        assert_eq!(read(chars.join("226:0/dev")), "226:0\n");
        // The class links reach the same PCI function, where the IP discovery tree now is.
        assert_eq!(read(class.join("renderD128/device/vendor")), "0x1002\n");
        assert_eq!(read(class.join("card0/device/device")), "0x740f\n");
        let gc = store.join("0000:43:00.0/ip_discovery/die/0/11/0/major");
        assert_eq!(read(gc), "9\n");
        let _ = std::fs::remove_dir_all(&d);

        // A GPU without a render node (drm_render_minor -1) gets a PCI function but no DRM
        // nodes, and nothing is linked.
        let mut t = builtin_topology();
        for n in &mut t.nodes {
            if n.properties.simd_count != 0 {
                n.properties.drm_render_minor = -1;
            }
        }
        for dir in [&devices, &class, &chars] {
            std::fs::create_dir_all(dir).unwrap();
        }
        write_pci_devices(&t, &devices, &store, "00000003").unwrap();
        write_drm_nodes(&t, &store, &class, &chars).unwrap();
        assert!(!store.join("0000:43:00.0/drm").exists());
        assert_eq!(std::fs::read_dir(&class).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(&chars).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn ip_discovery_tree_of_each_profile() {
        let s = |a: [&str; 3]| a.map(String::from);
        let d = tmp("ip-discovery-942");
        let t = hsa_emu::device::builtin_topology_for(90402).unwrap();
        write_ip_discovery(&t, &d).unwrap();
        assert_eq!(ip_files(&d, 128, 11), s(["9\n", "4\n", "3\n"]));
        assert_eq!(ip_files(&d, 128, 42), s(["4\n", "4\n", "2\n"]));
        assert_eq!(ip_files(&d, 128, 108), s(["7\n", "9\n", "0\n"]));
        let inst = d.join("renderD128/device/ip_discovery/die/0/42/0");
        assert_eq!(std::fs::read_to_string(inst.join("hw_id")).unwrap(), "42\n");
        assert_eq!(
            std::fs::read_to_string(inst.join("num_instance")).unwrap(),
            "0\n"
        );
        assert_eq!(
            std::fs::read_to_string(inst.join("harvest")).unwrap(),
            "0x0\n"
        );
        let die = d.join("renderD128/device/ip_discovery/die/0");
        for (name, id) in [("GC", "11"), ("SDMA0", "42"), ("NBIF", "108")] {
            assert_eq!(
                std::fs::read_link(die.join(name)).unwrap(),
                Path::new(id),
                "{name}"
            );
        }
        let mut names: Vec<_> = std::fs::read_dir(&die)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["108", "11", "42", "GC", "NBIF", "SDMA0"]);
        let _ = std::fs::remove_dir_all(&d);

        let d = tmp("ip-discovery-90a");
        write_ip_discovery(&builtin_topology(), &d).unwrap();
        assert_eq!(ip_files(&d, 128, 11), s(["9\n", "4\n", "2\n"]));
        assert_eq!(ip_files(&d, 128, 42), s(["4\n", "4\n", "0\n"]));
        assert_eq!(ip_files(&d, 128, 108), s(["7\n", "4\n", "4\n"]));
        let _ = std::fs::remove_dir_all(&d);

        // RDNA: GC and SDMA0 from the kernel's tables, no NBIF (module docs of ip_discovery).
        for (target, gc, sdma) in [
            (100300, ["10\n", "3\n", "0\n"], ["5\n", "2\n", "0\n"]),
            (110000, ["11\n", "0\n", "0\n"], ["6\n", "0\n", "0\n"]),
        ] {
            let d = tmp("ip-discovery-rdna");
            let t = hsa_emu::device::builtin_topology_for(target).unwrap();
            let minor = t.nodes[1].properties.drm_render_minor;
            write_ip_discovery(&t, &d).unwrap();
            assert_eq!(ip_files(&d, minor, 11), s(gc), "{target}");
            assert_eq!(ip_files(&d, minor, 42), s(sdma), "{target}");
            let nbif = d.join(format!("renderD{minor}/device/ip_discovery/die/0/108"));
            assert!(!nbif.exists(), "{target}");
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    /// Every GPU of every capture (MI25, MI210 x8, MI300X and MI308X partitions) gets its render
    /// node's tree with its target's GC version.
    #[test]
    fn ip_discovery_tree_of_every_capture_gpu() {
        let Some(roots) = hsa_test_support::shared::topology_dumps() else {
            return;
        };
        for root in roots {
            let mut t = Topology::read(&root).unwrap();
            complete_capture(&mut t);
            let d = tmp("ip-discovery-capture");
            write_ip_discovery(&t, &d).unwrap();
            for n in t.nodes.iter().filter(|n| n.properties.simd_count > 0) {
                let p = &n.properties;
                let want = hsa_emu::device::ip_discovery::target_ips(p.gfx_target_version)
                    .unwrap()
                    .gc;
                assert_eq!(
                    ip_files(&d, p.drm_render_minor, 11),
                    [want.major, want.minor, want.revision].map(|v| format!("{v}\n")),
                    "{}",
                    root.display()
                );
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    #[test]
    fn cpuinfo_names_cpu_nodes_by_apicid() {
        let t = builtin_topology();
        let text = cpuinfo(&t, 2);
        assert_eq!(text.matches("model name\t: Emulated host CPU").count(), 2);
        assert!(text.contains("processor\t: 1\n"));
        assert!(text.contains("apicid\t\t: 0\n"));
    }
}
