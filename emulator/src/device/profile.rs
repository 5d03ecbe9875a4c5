//! The emulated device's built-in topology profile.
//!
//! **A built-in profile, not a capture**: the GPU node's numbers are those of an AMD Instinct
//! MI210 (gfx90a) as amdkfd reports them in `nodes/N/properties` of a real MI210 machine (the
//! dump in `shared/testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology`, node 3), reduced to one
//! GPU without XGMI; the memory banks, caches, links and the CPU node are made up to look like
//! a small host. To emulate a real machine, read a captured dump with
//! [`Topology::read`](hsa_linux::topology::Topology::read) and pass it to
//! [`EmulatedKfd::new`](super::EmulatedKfd::new) instead.

use hsa_core::platform::{Cache, HeapType, IoLink, MemoryBank, NodeProperties};

use hsa_linux::topology::{SystemProperties, Topology, TopologyNode};

/// `gpu_id` of the built-in GPU (amdkfd derives it from a hash of the PCI location; any
/// non-zero value will do).
pub const BUILTIN_GPU_ID: u32 = 0x1234;

/// Bytes of VRAM of the built-in GPU (64 GiB, an MI210's HBM2e).
pub const BUILTIN_VRAM_BYTES: u64 = 64 << 30;

/// Bytes of system memory of the built-in CPU node (16 GiB).
pub const BUILTIN_SYSTEM_BYTES: u64 = 16 << 30;

/// `HSA_IOLINKTYPE_PCIEXPRESS` (`hsakmttypes.h`).
const IOLINK_TYPE_PCIE: u32 = 2;

/// `HSA_CACHE_TYPE_DATA | HSA_CACHE_TYPE_HSACU` (`hsakmttypes.h`: data 1, HSACU 8).
const CACHE_TYPE_GPU_DATA: u32 = 1 | 8;

/// The built-in profile: node 0 a CPU (2 cores, one 16 GiB system bank), node 1 a gfx90a GPU
/// like an MI210 (104 CUs: 416 SIMDs at 4 a CU, 64 KiB LDS, wave64, 24 CP queues, 64 GiB
/// `FB_PUBLIC` VRAM, 16 KiB L1 and 8 MiB L2), linked by PCIe (each link recommending the GPU's
/// two PCIe SDMA engines, as amdkfd 1.17 does).
pub fn builtin_topology() -> Topology {
    let mut t = builtin_base();
    fill_recommended_sdma_engines(&mut t);
    t
}

/// [`builtin_topology`] before its links' recommended SDMA engines.
fn builtin_base() -> Topology {
    let mut cpu = NodeProperties {
        node_id: 0,
        cpu_cores_count: 2,
        mem_banks_count: 1,
        io_links_count: 1,
        max_engine_clk_ccompute: 2450,
        ..NodeProperties::default()
    };
    let _ = cpu.name.push_str("Emulated host CPU");
    let _ = cpu.marketing_name.push_str("Emulated host CPU");

    let mut gpu = NodeProperties {
        node_id: 1,
        gpu_id: BUILTIN_GPU_ID,
        simd_count: 416,
        mem_banks_count: 1,
        caches_count: 2,
        io_links_count: 1,
        simd_id_base: 2_147_487_744,
        max_waves_per_simd: 8,
        lds_size_in_kb: 64,
        num_gws: 64,
        wave_front_size: 64,
        array_count: 8,
        simd_arrays_per_engine: 1,
        cu_per_simd_array: 14,
        simd_per_cu: 4,
        max_slots_scratch_cu: 32,
        gfx_target_version: 90010,
        vendor_id: 4098,
        device_id: 29711,
        location_id: 0x4300,
        drm_render_minor: 128,
        num_sdma_engines: 2,
        num_sdma_queues_per_engine: 8,
        num_cp_queues: 24,
        max_engine_clk_fcompute: 1700,
        max_engine_clk_ccompute: 2450,
        fw_version: 92,
        capability: 0x2c77_a280,
        debug_prop: 470,
        sdma_fw_version: 9,
        num_xcc: 1,
        ..NodeProperties::default()
    };
    let _ = gpu.name.push_str("gfx90a");
    let _ = gpu.marketing_name.push_str("AMD Instinct MI210 (emulated)");

    Topology {
        generation_id: Some(1),
        system: SystemProperties::default(),
        nodes: vec![
            TopologyNode {
                properties: cpu,
                memory_banks: vec![MemoryBank {
                    heap_type: HeapType::System,
                    size_bytes: BUILTIN_SYSTEM_BYTES,
                    flags: 0,
                    width_bits: 64,
                    mem_clk_max_mhz: 3200,
                }],
                caches: Vec::new(),
                io_links: vec![pcie_link(0, 1)],
            },
            TopologyNode {
                properties: gpu,
                memory_banks: vec![MemoryBank {
                    heap_type: HeapType::FrameBufferPublic,
                    size_bytes: BUILTIN_VRAM_BYTES,
                    flags: 0,
                    width_bits: 4096,
                    mem_clk_max_mhz: 1600,
                }],
                caches: vec![
                    Cache {
                        processor_id_low: 2_147_487_744,
                        level: 1,
                        size_kib: 16,
                        cache_line_size_bytes: 64,
                        cache_type: CACHE_TYPE_GPU_DATA,
                    },
                    Cache {
                        processor_id_low: 2_147_487_744,
                        level: 2,
                        size_kib: 8192,
                        cache_line_size_bytes: 128,
                        cache_type: CACHE_TYPE_GPU_DATA,
                    },
                ],
                io_links: vec![pcie_link(1, 0)],
            },
        ],
    }
}

/// PCI device ids [`builtin_topology_for`] gives a GPU of each `gfx_target_version`: a real
/// product of that ISA (linux `amdgpu_drv.c` `pciidlist`; the device ids of our test data).
const DEVICE_IDS: [(u32, u32); 7] = [
    (90000, 0x6860),  // gfx900: Radeon Instinct MI25
    (90006, 0x66a1),  // gfx906: AMD Instinct MI60 / MI50
    (90008, 0x738c),  // gfx908: AMD Instinct MI100
    (90010, 0x740f),  // gfx90a: AMD Instinct MI210
    (90402, 0x74a1),  // gfx942: AMD Instinct MI300X
    (100300, 0x73bf), // gfx1030: Radeon RX 6800/6900 (Navi 21)
    (110000, 0x744c), // gfx1100: Radeon RX 7900 XTX
];

/// Vega 10's (gfx900) `GB_ADDR_CONFIG` as amdgpu programs it
/// (`VEGA10_GB_ADDR_CONFIG_GOLDEN`, `gfx_v9_0.c`): 4 pipes, 256 B pipe interleave, 16 banks,
/// 4 shader engines, 4 render backends per engine.
pub const VEGA10_GB_ADDR_CONFIG: u32 = 0x2a11_4042;

/// The fields amdgpu sets in `GB_ADDR_CONFIG` on Vega 20 (gfx906), Arcturus (gfx908) and
/// Aldebaran (gfx90a) over the register's reset value (`gfx_v9_0_gpu_early_init`: the
/// register's bits outside `0xf3e777ff` are kept, this value ORed in): 4 pipes (NUM_PIPES
/// 2), 256 B pipe interleave, 2 compressed fragments, 16 banks (NUM_BANKS 4), a shader
/// engine tile size of 1, multi-GPU tile size 2, row size 2.
pub const GFX9_GB_ADDR_CONFIG_FIXED: u32 = 0x2201_4042;

/// The `GB_ADDR_CONFIG` register value of a gfx9 GPU node, as amdgpu reports it to amdkfd
/// (`adev->gfx.config.gb_addr_config`, which `GET_TILE_CONFIG` returns and from which ROCR's
/// addrlib lays images out): gfx900 [`VEGA10_GB_ADDR_CONFIG`]; gfx906, gfx908 and gfx90a
/// [`GFX9_GB_ADDR_CONFIG_FIXED`] with NUM_SHADER_ENGINES (bits 20:19) the log2 of the node's
/// shader engines (`array_count / simd_arrays_per_engine`, at most 8), the field the
/// register supplies; its NUM_RB_PER_SE (bits 27:26), which no node property tells and no
/// image layout reads, stays 0. Every other node (gfx942, whose amdgpu reads the whole
/// register from the hardware, and non-gfx9 GPUs) gets 0, as the emulated GPU has no
/// register file; the interpreter then lays `_X` modes out without pipe/bank XOR, as addrlib
/// does for that value.
pub fn gb_addr_config(p: &NodeProperties) -> u32 {
    match p.gfx_target_version {
        90000 => VEGA10_GB_ADDR_CONFIG,
        90006 | 90008 | 90010 => {
            let engines = (p.array_count / p.simd_arrays_per_engine.max(1)).clamp(1, 8);
            GFX9_GB_ADDR_CONFIG_FIXED | engines.ilog2() << 19
        }
        _ => 0,
    }
}

/// The names of the built-in profiles ([`builtin_profile`]) and the `gfx_target_version` of
/// each (`builtin`: the MI210-like gfx90a of [`builtin_topology`]).
pub const BUILTIN_PROFILES: [(&str, u32); 8] = [
    ("builtin", 90010),
    ("gfx900", 90000),
    ("gfx906", 90006),
    ("gfx908", 90008),
    ("gfx90a", 90010),
    ("gfx942", 90402),
    ("gfx1030", 100300),
    ("gfx1100", 110000),
];

/// The built-in profile called `name` (one of [`BUILTIN_PROFILES`]: `builtin`, `gfx900`,
/// `gfx906`, `gfx908`, `gfx90a`, `gfx942`, `gfx1030`, `gfx1100`): `builtin` is
/// [`builtin_topology`], the others [`builtin_topology_for`] their `gfx_target_version`.
/// `kfd-emu --profile NAME` and `HSA_RT_PROFILE=NAME` choose one.
///
/// # Errors
/// [`Status::InvalidArgument`](hsa_core::Status) naming `name` and the profiles when it is
/// none of them.
pub fn builtin_profile(name: &str) -> Result<Topology, hsa_core::Error> {
    match BUILTIN_PROFILES.iter().find(|(n, _)| *n == name) {
        Some(("builtin", _)) => Ok(builtin_topology()),
        Some(&(_, version)) => builtin_topology_for(version),
        None => Err(hsa_core::error!(
            hsa_core::Status::InvalidArgument,
            "profile {name:?}: the built-in profiles are builtin, gfx900, gfx906, gfx908, \
             gfx90a, gfx942, gfx1030 and gfx1100"
        )),
    }
}

/// The built-in profile with its GPU's ISA changed to `gfx_target_version` (e.g. 90000 for
/// gfx900, 90402 for gfx942): the node's `gfx_target_version`, `device_id` (a product of that
/// ISA, see `DEVICE_IDS`), `name` (the ISA name) and `marketing_name` change. For 90006 and
/// 90008 the GPU node is that product's as amdkfd reports it (an MI60 and an MI100: compute units, shader engines, waves per SIMD, clock, firmware, VRAM);
/// for the others everything else stays the MI210-like profile (to test code for several
/// targets on one shape of machine).
///
/// # Errors
/// [`Status::InvalidArgument`](hsa_core::Status) naming the value when it is not one of
/// 90000, 90006, 90008, 90010, 90402, 100300, 110000.
pub fn builtin_topology_for(gfx_target_version: u32) -> Result<Topology, hsa_core::Error> {
    let device_id = DEVICE_IDS
        .iter()
        .find(|(v, _)| *v == gfx_target_version)
        .map(|&(_, id)| id)
        .ok_or_else(|| {
            hsa_core::error!(
                hsa_core::Status::InvalidArgument,
                "gfx_target_version {gfx_target_version}: the built-in profile knows 90000, \
                 90006, 90008, 90010, 90402, 100300 and 110000"
            )
        })?;
    let mut t = builtin_base();
    match gfx_target_version {
        90006 => mi60_gfx906(&mut t.nodes[1]),
        90008 => mi100_gfx908(&mut t.nodes[1]),
        _ => {}
    }
    let gpu = &mut t.nodes[1].properties;
    gpu.gfx_target_version = gfx_target_version;
    gpu.device_id = device_id;
    let name = hsa_core::isa::Processor::from_gfx_target_version(gfx_target_version)
        .map_or("", hsa_core::isa::Processor::name);
    gpu.name.clear();
    let _ = gpu.name.push_str(name);
    gpu.marketing_name.clear();
    let marketing = hsa_linux::isa::marketing_name_from_device_id(device_id).unwrap_or("AMD GPU");
    let _ = gpu.marketing_name.push_str(marketing);
    let _ = gpu.marketing_name.push_str(" (emulated)");
    fill_recommended_sdma_engines(&mut t);
    Ok(t)
}

/// Makes `gpu` an AMD Instinct MI60 (gfx906, Vega 20) as amdkfd reports it: 64 CUs in 4
/// shader engines of one array of 16 CU slots, 4 SIMDs a CU, 10 waves a SIMD (rocminfo's "Max
/// Waves Per CU: 40"), 1725 MHz, CP firmware 471 and SDMA firmware 145, 32 GiB of HBM2 (4096
/// bits), a 16 KiB L1 and an 8 MiB L2 as rocminfo lists them. No public `properties` file of
/// an MI50/MI60 was found; these are the values a public rocminfo of an MI60 prints
/// (lamikr/rocm_sdk_builder issue 180; 64 CUs and 4x1 engines also in ROCm's
/// legacy-rocm-build issue 1441), which libhsakmt read from that file.
/// `testdata/kfd-topology/mi60-gfx906/topology` is this profile written out
/// (its README cites the sources).
fn mi60_gfx906(gpu: &mut TopologyNode) {
    let p = &mut gpu.properties;
    p.simd_count = 64 * 4;
    p.array_count = 4;
    p.simd_arrays_per_engine = 1;
    p.cu_per_simd_array = 16;
    p.simd_per_cu = 4;
    p.max_waves_per_simd = 10;
    p.max_engine_clk_fcompute = 1725;
    p.fw_version = 471;
    p.sdma_fw_version = 145;
    gpu.memory_banks[0].size_bytes = 32 << 30;
    gpu.memory_banks[0].mem_clk_max_mhz = 1000;
}

/// Makes `gpu` an AMD Instinct MI100 (gfx908, Arcturus) from AMD's public specifications (no
/// public `properties` file of an MI100 was found): 120 CUs in 8 shader engines of one array
/// of 16 CU slots, 4 SIMDs a CU, 10 waves a SIMD, 1502 MHz peak engine clock, 32 GiB of HBM2
/// (4096 bits, 1200 MHz), a 16 KiB L1 and an 8 MiB L2 (the built-in profile's caches).
fn mi100_gfx908(gpu: &mut TopologyNode) {
    let p = &mut gpu.properties;
    p.simd_count = 120 * 4;
    p.array_count = 8;
    p.simd_arrays_per_engine = 1;
    p.cu_per_simd_array = 16;
    p.simd_per_cu = 4;
    p.max_waves_per_simd = 10;
    p.max_engine_clk_fcompute = 1502;
    gpu.memory_banks[0].size_bytes = 32 << 30;
    gpu.memory_banks[0].mem_clk_max_mhz = 1200;
}

fn pcie_link(from: u32, to: u32) -> IoLink {
    IoLink {
        link_type: IOLINK_TYPE_PCIE,
        node_from: from,
        node_to: to,
        weight: 20,
        min_bandwidth: 312,
        max_bandwidth: 64_000,
        flags: 1,
        rec_sdma_eng_id_mask: 0,
        p2p: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_core::isa::Processor;

    /// Both PCIe links of the built-in profile recommend its two PCIe engines (amdkfd 1.17);
    /// an xGMI link between GPUs recommends the xGMI engines, which come after them; a GPU
    /// with none falls back to the PCIe ones.
    #[test]
    fn links_recommend_sdma_engines_as_amdkfd() {
        let t = builtin_topology();
        let masks: Vec<u32> = t
            .nodes
            .iter()
            .flat_map(|n| &n.io_links)
            .map(|l| l.rec_sdma_eng_id_mask)
            .collect();
        assert_eq!(masks, [0b11, 0b11]);
        let mut g = t.nodes[1].properties.clone();
        g.num_sdma_xgmi_engines = 3;
        assert_eq!(recommended_sdma_engines(&g, 11, true), 0b11100);
        assert_eq!(recommended_sdma_engines(&g, 11, false), 0b11);
        assert_eq!(recommended_sdma_engines(&g, 2, true), 0b11);
        g.num_sdma_xgmi_engines = 0;
        assert_eq!(recommended_sdma_engines(&g, 11, true), 0b11);
        g.num_sdma_engines = 40;
        assert_eq!(recommended_sdma_engines(&g, 2, false), u32::MAX);
    }

    #[test]
    fn builtin_profile_is_an_mi210_like_gfx90a() {
        let t = builtin_topology();
        assert_eq!(t.cpu_count(), 1);
        assert_eq!(t.gpu_count(), 1);
        let g = &t.nodes[1];
        assert_eq!(g.properties.compute_unit_count(), 104);
        assert_eq!(g.processor(), Some(Processor::GFX90A));
        assert_eq!(g.local_memory_bytes(), 64 << 30);
        assert_eq!(g.properties.device_id, 0x740f);
        assert_eq!(g.properties.capability, 746_037_888); // the real MI210 dump's value
        assert_eq!(t.nodes[0].properties.gpu_id, 0);
        assert_eq!(t.nodes[0].memory_banks[0].size_bytes, 16 << 30);
    }

    #[test]
    fn builtin_profile_for_other_targets() {
        let t = builtin_topology_for(90000).unwrap();
        let g = &t.nodes[1];
        assert_eq!(g.processor(), Some(Processor::GFX900));
        assert_eq!(g.properties.device_id, 0x6860);
        assert_eq!(g.properties.name.as_str(), "gfx900");
        let t = builtin_topology_for(90402).unwrap();
        assert_eq!(t.nodes[1].processor(), Some(Processor::GFX942));
        assert_eq!(t.nodes[1].properties.device_id, 0x74a1);
        assert!(t.nodes[1]
            .properties
            .marketing_name
            .as_str()
            .starts_with("AMD Instinct MI300X"));
        assert_eq!(
            builtin_topology_for(90010).unwrap(),
            builtin_topology_with_name()
        );
        let e = builtin_topology_for(90007).unwrap_err();
        assert!(e.detail().to_string().contains("90007"), "{}", e.detail());
    }

    /// The built-in profile with the marketing name builtin_topology_for gives it.
    fn builtin_topology_with_name() -> Topology {
        let mut t = builtin_topology();
        t.nodes[1].properties.marketing_name.clear();
        let _ = t.nodes[1]
            .properties
            .marketing_name
            .push_str("AMD Instinct MI210 (emulated)");
        t
    }
}

/// Size of the nominal frame-buffer bank [`complete_capture`] gives a GPU node whose capture
/// has none and no `local_mem_size`, bytes.
pub const NOMINAL_VRAM_BYTES: u64 = 16 << 30;

/// Fills in what a captured topology lacks for the emulated device to run it, and returns a
/// note for each change:
/// - a GPU node (SIMDs > 0) without a `gpu_id`, or with the `gpu_id` of an earlier node (the
///   2018 MI25 capture's node 2 is a copy of node 1), gets a synthetic `gpu_id`
///   (`0xe000 + node id`, or the next free value);
/// - an IO or P2P link whose `node_from` is not the node that lists it (that copy's link is
///   "from" node 1) is made from that node: amdkfd lists a node's links under it
///   (`kfd_topology.c`), and libhsakmt refuses any other (`topology_sysfs_get_iolink_props`:
///   `HSAKMT_STATUS_INVALID_NODE_UNIT`, so ROCR 5.2 found no agent at all);
/// - a CPU node without a system memory bank gets one of
///   [`hsa_core::runtime::pools::NOMINAL_SYSTEM_MEMORY_BYTES`] (16 GiB), so that kernarg and
///   fine-grained memory exist (the runtime gives such nodes the same nominal size);
/// - a GPU node without a frame-buffer bank gets one of its `local_mem_size`, or
///   16 GiB (`NOMINAL_VRAM_BYTES`) when that is 0 too, so that queue buffers (EOP,
///   context save area) and device-local pools exist;
/// - a GPU node without caches (the 8×MI210 capture has no `caches` directories; amdkfd
///   always reports a GPU's caches from its CRAT) gets a 16 KiB L1 (64-byte lines) and an
///   8 MiB L2 (128-byte lines), an MI210's, for its `simd_id_base`: ROCR 5.2 refuses a GPU
///   agent without caches (`GpuAgent::GetInfo`: "GPU cache info missing");
/// - a topology of GPU nodes only gets a CPU node 0 and its GPUs follow it (every node id,
///   and every link's ends, one higher): amdkfd always reports the CPUs first
///   (`kfd_topology_init` parses the ACPI CRAT, or makes a virtual one for the CPUs when
///   there is none, before any GPU is added), so such a tree is a partial copy, not a
///   machine. The node is what the virtual CRAT gives (`kfd_create_vcrat_image_cpu`): this
///   host's logical CPUs as its cores (`cpu_core_id_base` 0), no name (the callers name CPU
///   nodes after this host's processor, as libhsakmt does), the GPUs' `max_engine_clk_ccompute`
///   (amdkfd shows the same CPU clock on every node), a system bank (the CPU-node rule above gives it
///   the nominal 16 GiB), and a PCIe link to each GPU and back, as amdkfd links a PCIe GPU
///   to its CPU node (`kfd_fill_gpu_direct_io_link_to_cpu` and the reverse link
///   `kfd_parse_subtype_iolink` adds). Without it there would be no system memory: neither
///   kernarg and fine-grained pools for hsa-rt nor the system allocator ROCR 5.2 asserts on
///   ("Shared object allocator is not set"), and amdkfd's own limit on GTT and USERPTR memory
///   (`amdgpu_amdkfd_gpuvm_init_mem_limits`: the machine's RAM) would be 0 on the device.
///
/// Idempotent: a completed topology is returned unchanged.
pub fn complete_capture(topology: &mut Topology) -> Vec<String> {
    let mut notes = Vec::new();
    if !topology.nodes.is_empty() && topology.nodes.iter().all(|n| n.properties.simd_count > 0) {
        notes.push(add_cpu_node(topology));
    }
    let mut seen: Vec<u32> = Vec::new();
    for n in &mut topology.nodes {
        let id = n.properties.node_id;
        for (k, l) in n.io_links.iter_mut().enumerate() {
            if l.node_from != id {
                notes.push(format!(
                    "node {id}: {} link {k} from node {} made from node {id}, which lists it",
                    if l.p2p { "P2P" } else { "IO" },
                    l.node_from
                ));
                l.node_from = id;
            }
        }
        let p = &mut n.properties;
        if p.simd_count > 0 {
            if p.gpu_id == 0 || seen.contains(&p.gpu_id) {
                let mut id = 0xe000 + p.node_id;
                while seen.contains(&id) {
                    id += 1;
                }
                notes.push(format!(
                    "node {}: gpu_id {:#x} replaced by synthetic {id:#x}",
                    p.node_id, p.gpu_id
                ));
                p.gpu_id = id;
            }
            seen.push(p.gpu_id);
            let has_vram = n.memory_banks.iter().any(|b| {
                matches!(
                    b.heap_type,
                    HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
                )
            });
            if !has_vram {
                let size = if p.local_mem_size > 0 {
                    p.local_mem_size
                } else {
                    NOMINAL_VRAM_BYTES
                };
                n.memory_banks.push(MemoryBank {
                    heap_type: HeapType::FrameBufferPublic,
                    size_bytes: size,
                    flags: 0,
                    width_bits: 0,
                    mem_clk_max_mhz: 0,
                });
                p.mem_banks_count = n.memory_banks.len() as u32;
                notes.push(format!(
                    "node {}: no frame-buffer bank; {size} bytes",
                    p.node_id
                ));
            }
            if n.caches.is_empty() {
                for (level, size_kib, line) in [(1, 16, 64), (2, 8192, 128)] {
                    n.caches.push(Cache {
                        processor_id_low: p.simd_id_base,
                        level,
                        size_kib,
                        cache_line_size_bytes: line,
                        cache_type: CACHE_TYPE_GPU_DATA,
                    });
                }
                p.caches_count = n.caches.len() as u32;
                notes.push(format!(
                    "node {}: no caches; a nominal 16 KiB L1 and 8 MiB L2",
                    p.node_id
                ));
            }
        } else if !n
            .memory_banks
            .iter()
            .any(|b| b.heap_type == HeapType::System)
        {
            n.memory_banks.push(MemoryBank {
                heap_type: HeapType::System,
                size_bytes: hsa_core::runtime::pools::NOMINAL_SYSTEM_MEMORY_BYTES,
                flags: 0,
                width_bits: 0,
                mem_clk_max_mhz: 0,
            });
            p.mem_banks_count = n.memory_banks.len() as u32;
            notes.push(format!(
                "node {}: no system memory bank; nominal 16 GiB",
                p.node_id
            ));
        }
    }
    let filled = fill_recommended_sdma_engines(topology);
    if filled > 0 {
        notes.push(format!(
            "{filled} IO links: recommended_sdma_engine_id_mask as amdkfd 1.17 sets it"
        ));
    }
    notes
}

/// `HSA_IOLINK_TYPE_XGMI` (`hsakmttypes.h`).
const IOLINK_TYPE_XGMI: u32 = 11;

/// The `recommended_sdma_engine_id_mask` amdkfd 1.17 gives an IO link one of whose ends is
/// GPU `gpu` (`kfd_set_recommended_sdma_engines`, outside the 8-GPU MI300 hive in SPX mode,
/// whose fixed table needs the sockets' physical ids, which the topology does not show): an
/// xGMI link between two GPUs on a GPU with xGMI SDMA engines recommends those (engine ids
/// `num_sdma_engines ..`), any other link the PCIe engines (`0 .. num_sdma_engines`).
pub fn recommended_sdma_engines(gpu: &NodeProperties, link_type: u32, gpu_to_gpu: bool) -> u32 {
    let (first, count) =
        if link_type == IOLINK_TYPE_XGMI && gpu.num_sdma_xgmi_engines > 0 && gpu_to_gpu {
            (gpu.num_sdma_engines, gpu.num_sdma_xgmi_engines)
        } else {
            (0, gpu.num_sdma_engines)
        };
    (first..first.saturating_add(count))
        .filter(|&i| i < 32)
        .fold(0, |m, i| m | 1 << i)
}

/// Gives each IO link (not the P2P links, which amdkfd fills elsewhere and which are left as
/// they are) that has no
/// `recommended_sdma_engine_id_mask` the one amdkfd 1.17 sets ([`recommended_sdma_engines`],
/// from the link's GPU: its `node_from` when that is a GPU, else its `node_to`). Returns how
/// many links it set.
pub fn fill_recommended_sdma_engines(topology: &mut Topology) -> usize {
    let props: Vec<NodeProperties> = topology
        .nodes
        .iter()
        .map(|n| n.properties.clone())
        .collect();
    let node = |id: u32| props.iter().find(|p| p.node_id == id);
    let is_gpu = |p: Option<&NodeProperties>| p.is_some_and(|p| p.simd_count > 0);
    let mut filled = 0;
    for n in &mut topology.nodes {
        for l in n.io_links.iter_mut().filter(|l| !l.p2p) {
            if l.rec_sdma_eng_id_mask != 0 {
                continue;
            }
            let (from, to) = (node(l.node_from), node(l.node_to));
            let gpu = if is_gpu(from) { from } else { to };
            let Some(gpu) = gpu.filter(|g| g.simd_count > 0) else {
                continue;
            };
            let mask = recommended_sdma_engines(gpu, l.link_type, is_gpu(from) && is_gpu(to));
            if mask != 0 {
                l.rec_sdma_eng_id_mask = mask;
                filled += 1;
            }
        }
    }
    filled
}

/// Puts a CPU node (as amdkfd's virtual CRAT makes it) before the GPU nodes of a topology that
/// has none, renumbering them; see [`complete_capture`]. Returns the note.
fn add_cpu_node(topology: &mut Topology) -> String {
    for n in &mut topology.nodes {
        n.properties.node_id += 1;
        for l in &mut n.io_links {
            l.node_from += 1;
            l.node_to += 1;
        }
    }
    let gpus: Vec<u32> = topology
        .nodes
        .iter()
        .map(|n| n.properties.node_id)
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = NodeProperties {
        node_id: 0,
        cpu_cores_count: u32::try_from(cores).unwrap_or(u32::MAX),
        io_links_count: gpus.len() as u32,
        max_engine_clk_ccompute: topology.nodes[0].properties.max_engine_clk_ccompute,
        ..NodeProperties::default()
    };
    for n in &mut topology.nodes {
        n.io_links.insert(0, pcie_link(n.properties.node_id, 0));
        n.properties.io_links_count = n.io_links.iter().filter(|l| !l.p2p).count() as u32;
    }
    topology.nodes.insert(
        0,
        TopologyNode {
            properties: cpu,
            memory_banks: Vec::new(),
            caches: Vec::new(),
            io_links: gpus.iter().map(|&g| pcie_link(0, g)).collect(),
        },
    );
    format!(
        "no CPU node (amdkfd always reports one): node 0 is a CPU of {cores} cores linked to \
         the GPUs, which are now nodes 1..={}",
        gpus.len()
    )
}

#[cfg(test)]
mod capture_tests {
    use super::*;

    /// The 2018 MI25 capture's node 2 (a copy of node 1) lists an IO link "from" node 1; amdkfd
    /// lists a node's links under that node, and libhsakmt refuses a link whose `node_from` is
    /// not its node (`topology_sysfs_get_iolink_props`: INVALID_NODE_UNIT), so ROCR found no
    /// agent at all on that capture. The link is from its node once completed.
    #[test]
    fn a_link_is_from_the_node_that_lists_it() {
        let Some(root) = hsa_test_support::shared::topology_dump("mi25-gfx900-2018-topology")
        else {
            return;
        };
        let mut t = Topology::read(&root).unwrap();
        let links = |t: &Topology| -> Vec<(u32, u32, u32)> {
            t.nodes
                .iter()
                .flat_map(|n| {
                    n.io_links
                        .iter()
                        .map(|l| (n.properties.node_id, l.node_from, l.node_to))
                })
                .collect()
        };
        assert_eq!(links(&t), [(0, 0, 1), (1, 1, 0), (2, 1, 0)]);
        let notes = complete_capture(&mut t);
        assert_eq!(links(&t), [(0, 0, 1), (1, 1, 0), (2, 2, 0)]);
        assert!(
            notes.contains(
                &"node 2: IO link 0 from node 1 made from node 2, which lists it".to_owned()
            ),
            "{notes:?}"
        );
        assert!(complete_capture(&mut t).is_empty());
    }

    /// The GPU-only tree (`testdata/kfd-topology/mi100-gpu-only`: one gfx908 node, no CPU
    /// node) is completed as amdkfd would present the machine: a CPU node 0 with a system bank
    /// and a PCIe link to the GPU, the GPU renumbered to node 1 with a link back, a nominal
    /// frame-buffer bank (`local_mem_size 0`, no `mem_banks/`) and caches; once.
    #[test]
    fn a_gpu_only_tree_gets_the_cpu_node_amdkfd_always_reports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/kfd-topology/mi100-gpu-only/topology");
        let mut t = Topology::read(&root).unwrap();
        assert_eq!((t.nodes.len(), t.cpu_count()), (1, 0));
        let notes = complete_capture(&mut t);
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert_eq!(
            notes[4],
            "2 IO links: recommended_sdma_engine_id_mask as amdkfd 1.17 sets it"
        );
        assert!(
            notes[0].starts_with("no CPU node (amdkfd always reports one)"),
            "{notes:?}"
        );
        assert_eq!((t.nodes.len(), t.cpu_count(), t.gpu_count()), (2, 1, 1));
        let (cpu, gpu) = (&t.nodes[0], &t.nodes[1]);
        assert_eq!(cpu.properties.node_id, 0);
        assert_eq!(
            cpu.properties.cpu_cores_count as usize,
            std::thread::available_parallelism().unwrap().get()
        );
        assert_eq!(cpu.properties.simd_count, 0);
        assert_eq!(cpu.properties.gpu_id, 0);
        assert_eq!(
            cpu.memory_banks,
            [MemoryBank {
                heap_type: HeapType::System,
                size_bytes: 16 << 30,
                flags: 0,
                width_bits: 0,
                mem_clk_max_mhz: 0,
            }]
        );
        assert_eq!(cpu.properties.mem_banks_count, 1);
        // Both links recommend the GPU's two PCIe SDMA engines (amdkfd 1.17).
        assert_eq!(
            cpu.io_links,
            [IoLink {
                rec_sdma_eng_id_mask: 0b11,
                ..pcie_link(0, 1)
            }]
        );
        assert_eq!(cpu.properties.io_links_count, 1);
        assert_eq!(gpu.properties.node_id, 1);
        assert_eq!(gpu.properties.gpu_id, 4660);
        assert_eq!(gpu.properties.gfx_target_version, 90008);
        // Both links recommend the GPU's two PCIe SDMA engines (amdkfd 1.17).
        assert_eq!(
            gpu.io_links,
            [IoLink {
                rec_sdma_eng_id_mask: 0b11,
                ..pcie_link(1, 0)
            }]
        );
        assert_eq!(gpu.properties.io_links_count, 1);
        assert_eq!(gpu.local_memory_bytes(), NOMINAL_VRAM_BYTES);
        assert_eq!(gpu.caches.len(), 2);
        assert!(complete_capture(&mut t).is_empty());
    }

    #[test]
    fn completes_missing_and_duplicate_gpu_ids_once() {
        let mut t = builtin_topology();
        t.nodes[0].memory_banks.clear();
        let mut copy = t.nodes[1].clone();
        copy.properties.node_id = 2;
        let mut copy3 = copy.clone();
        copy3.properties.node_id = 3;
        t.nodes.push(copy);
        t.nodes.push(copy3);
        t.nodes[1].properties.gpu_id = 0;
        t.nodes[3].caches.clear();
        let notes = complete_capture(&mut t);
        // The copies' IO links, "from" node 1, are made theirs too.
        assert_eq!(notes.len(), 6, "{notes:?}");
        assert_eq!(t.nodes[3].caches.len(), 2);
        assert_eq!(t.nodes[3].caches[1].size_kib, 8192);
        t.nodes[2].memory_banks.clear();
        assert_eq!(complete_capture(&mut t).len(), 1);
        assert_eq!(t.nodes[2].memory_banks[0].size_bytes, NOMINAL_VRAM_BYTES);
        assert_eq!(t.nodes[1].properties.gpu_id, 0xe001);
        assert_eq!(t.nodes[2].properties.gpu_id, BUILTIN_GPU_ID);
        assert_eq!(t.nodes[3].properties.gpu_id, 0xe003);
        assert_eq!(t.nodes[0].memory_banks[0].size_bytes, 16 << 30);
        assert!(complete_capture(&mut t).is_empty());
    }
}

#[cfg(test)]
mod gb_addr_config_tests {
    use super::*;

    /// `GB_ADDR_CONFIG` as amdgpu composes it per built-in profile (`gfx_v9_0.c`): Vega 10's
    /// golden value; 0x22014042 with NUM_SHADER_ENGINES (bits 20:19) the log2 of the
    /// profile's engines for the MI60 (4), MI100 (8) and MI210 (8); 0 for gfx942 (amdgpu
    /// reads the register whole) and the gfx10/gfx11 profiles.
    #[test]
    fn gb_addr_config_per_profile() {
        let of = |v| gb_addr_config(&builtin_topology_for(v).unwrap().nodes[1].properties);
        assert_eq!(of(90000), 0x2a11_4042);
        assert_eq!(of(90006), 0x2211_4042);
        assert_eq!(of(90008), 0x2219_4042);
        assert_eq!(of(90010), 0x2219_4042);
        assert_eq!(of(90402), 0);
        assert_eq!(of(100300), 0);
        assert_eq!(of(110000), 0);
        // A captured node with 2 engines of 2 arrays each.
        let mut p = builtin_topology().nodes[1].properties.clone();
        (p.array_count, p.simd_arrays_per_engine) = (4, 2);
        assert_eq!(gb_addr_config(&p), 0x2209_4042);
    }
}

#[cfg(test)]
mod mi60_tests {
    use super::*;
    use hsa_core::isa::Processor;

    /// The gfx906 profile is an MI60 as rocminfo reports one (64 CUs, 4x1 shader engines,
    /// 40 waves a CU, 1725 MHz, 32 GiB; `testdata/kfd-topology/mi60-gfx906/README.md`), and
    /// the checked-in tree reads back as that profile.
    #[test]
    fn gfx906_profile_is_the_checked_in_mi60_tree() {
        let t = builtin_topology_for(90006).unwrap();
        let g = &t.nodes[1];
        assert_eq!(g.processor(), Some(Processor::GFX906));
        assert_eq!(g.properties.compute_unit_count(), 64);
        assert_eq!(g.properties.array_count, 4);
        assert_eq!(
            g.properties.max_waves_per_simd * g.properties.simd_per_cu,
            40
        );
        assert_eq!(g.properties.device_id, 0x66a1);
        assert_eq!(g.local_memory_bytes(), 32 << 30);
        assert_eq!(
            g.properties.marketing_name.as_str(),
            "AMD Instinct MI60 / MI50 (emulated)"
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/kfd-topology/mi60-gfx906/topology");
        let mut read = Topology::read(&root).unwrap();
        assert!(complete_capture(&mut read).is_empty());
        // What sysfs does not carry as the profile holds it: the marketing name (libhsakmt's
        // and Topology::read's comes from the device id, without " (emulated)") and the ASIC
        // revision (read from `capability`).
        let mut want = t.nodes[1].clone();
        want.properties.marketing_name = read.nodes[1].properties.marketing_name.clone();
        want.properties.asic_revision = read.nodes[1].properties.asic_revision;
        assert_eq!(read.nodes[1], want);
        assert_eq!(read.nodes.len(), 2);
    }

    /// The gfx908 profile is an MI100 from AMD's specifications: 120 CUs in 8 engines, 32 GiB.
    #[test]
    fn gfx908_profile_is_an_mi100() {
        let t = builtin_topology_for(90008).unwrap();
        let g = &t.nodes[1];
        assert_eq!(g.processor(), Some(Processor::GFX908));
        assert_eq!(g.properties.compute_unit_count(), 120);
        assert_eq!(g.properties.array_count, 8);
        assert_eq!(g.properties.device_id, 0x738c);
        assert_eq!(g.local_memory_bytes(), 32 << 30);
        assert_eq!(
            g.properties.marketing_name.as_str(),
            "AMD Instinct MI100 (emulated)"
        );
    }

    #[test]
    fn profiles_by_name() {
        for (name, version) in BUILTIN_PROFILES {
            let t = builtin_profile(name).unwrap();
            assert_eq!(t.nodes[1].properties.gfx_target_version, version, "{name}");
        }
        assert_eq!(builtin_profile("builtin").unwrap(), builtin_topology());
        let e = builtin_profile("mi50").unwrap_err();
        assert_eq!(e.status(), hsa_core::Status::InvalidArgument);
        assert!(
            e.detail().to_string().contains("\"mi50\""),
            "{}",
            e.detail()
        );
    }
}
