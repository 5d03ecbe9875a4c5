//! hsainfo's report of the system and its agents, in rocminfo's labels and layout, built only
//! from the runtime's public API.
//!
//! Layout (as rocminfo prints it): a label padded to 25 columns after an indent of two spaces
//! per level, then the value; numbers that rocminfo shows twice as `N(0xN)`. Trailing
//! padding that rocminfo adds after values is left out, so compare lines with trailing
//! whitespace trimmed.

use std::fmt::Write;

use hsa_core::memory::{GlobalFlags, PoolInfo, Segment};
use hsa_core::platform::DeviceType;
use hsa_core::runtime::agent::{AgentFeature, Profile};
use hsa_core::runtime::{Agent, Runtime};
use hsa_core::{bail, Error, PlatformRef, Status};

fn line(out: &mut String, indent: usize, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "{:indent$}{:<25}{}",
        "",
        label,
        value,
        indent = indent * 2
    );
}

fn header(out: &mut String, indent: usize, label: &str) {
    let _ = writeln!(out, "{:indent$}{}", "", label, indent = indent * 2);
}

struct Hex(u64);

impl std::fmt::Display for Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({:#x})", self.0, self.0)
    }
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "TRUE"
    } else {
        "FALSE"
    }
}

/// The whole report: system attributes, then every agent with its pools and ISAs.
pub fn report<H: PlatformRef>(rt: &Runtime<H>) -> String {
    report_agents(rt, |_| true)
}

/// The report with one agent only: system attributes, then GPU agent `gpu_index` (counting
/// GPU agents from 0, as [`nth_gpu`]) under its number in the whole report (`Agent k`).
///
/// # Errors
/// As [`nth_gpu`]: `Status::InvalidAgent` naming the index and the number of GPU agents.
pub fn gpu_agent_report<H: PlatformRef>(
    rt: &Runtime<H>,
    gpu_index: usize,
) -> Result<String, Error> {
    let handle = nth_gpu(rt, gpu_index)?.handle();
    Ok(report_agents(rt, |a| a.handle() == handle))
}

fn report_agents<H: PlatformRef>(rt: &Runtime<H>, keep: impl Fn(&Agent) -> bool) -> String {
    let mut out = String::new();
    system(&mut out, rt);
    let _ = writeln!(out, "==========\nHSA Agents\n==========");
    for (i, agent) in rt.agents().iter().enumerate() {
        if !keep(agent) {
            continue;
        }
        let _ = writeln!(out, "*******\nAgent {}\n*******", i + 1);
        agent_report(&mut out, rt, agent);
    }
    let _ = writeln!(out, "*** Done ***");
    out
}

/// The GPU agent `index` of `rt` (counting GPU agents only, from 0, in agent order).
///
/// # Errors
/// `Status::InvalidAgent` naming the index and how many GPU agents there are when `index` is
/// not below that count (or there is no GPU agent).
pub fn nth_gpu<H: PlatformRef>(rt: &Runtime<H>, index: usize) -> Result<&Agent, Error> {
    let gpus: Vec<&Agent> = rt.agents().iter().filter(|a| a.is_gpu()).collect();
    match (gpus.get(index), gpus.len()) {
        (Some(a), _) => Ok(a),
        (None, 0) => bail!(
            Status::InvalidAgent,
            "agent {index} asked for, but the device has no GPU agent"
        ),
        (None, n) => bail!(
            Status::InvalidAgent,
            "agent {index} asked for, but the device has {n} GPU agent(s): 0 to {}",
            n - 1
        ),
    }
}

/// The version of AMD's extension interface (`hsa_ext_amd.h`'s
/// `HSA_AMD_INTERFACE_VERSION_MAJOR`/`_MINOR`) this runtime implements, major and minor:
/// libhsa-runtime64 exports the `hsa_amd_*` functions of ROCR 5.2.3, whose `hsa_ext_amd.h`
/// states interface version 1.0. rocminfo prints it as `Runtime Ext Version:`.
pub const AMD_EXT_INTERFACE_VERSION: (u16, u16) = (1, 0);

/// Address watch points of an agent (rocminfo's `WatchPts on Addr. Ranges:`, ROCR's
/// `HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS`): 2^`WatchPointsTotalBits`, the 4-bit field
/// of the node's sysfs `capability` at bits 8..12 (`kfd_sysfs.h`
/// `HSA_CAP_WATCH_POINTS_TOTALBITS_MASK` 0xf00, shift 8). A CPU node has none of those bits
/// set, so 1, which is what rocminfo prints for a CPU agent.
pub fn watch_points(agent: &Agent) -> u32 {
    1u32 << ((agent.node_properties().capability >> 8) & 0xf)
}

fn system<H: PlatformRef>(out: &mut String, rt: &Runtime<H>) {
    let info = rt.system_info();
    let _ = writeln!(
        out,
        "=====================\nHSA System Attributes\n====================="
    );
    line(
        out,
        0,
        "Runtime Version:",
        format_args!("{}.{}", info.version.0, info.version.1),
    );
    line(
        out,
        0,
        "Runtime Ext Version:",
        format_args!(
            "{}.{}",
            AMD_EXT_INTERFACE_VERSION.0, AMD_EXT_INTERFACE_VERSION.1
        ),
    );
    line(
        out,
        0,
        "System Timestamp Freq.:",
        format_args!("{:.6}MHz", info.timestamp_frequency_hz as f64 / 1e6),
    );
    line(
        out,
        0,
        "Sig. Max Wait Duration:",
        format_args!(
            "{} ({:#X}) (timestamp count)",
            info.signal_max_wait_ticks, info.signal_max_wait_ticks
        )
        .to_string()
        .replace("0X", "0x"),
    );
    line(out, 0, "Machine Model:", "LARGE");
    line(
        out,
        0,
        "System Endianness:",
        if info.endianness == hsa_core::runtime::Endianness::Little {
            "LITTLE"
        } else {
            "BIG"
        },
    );
    // The runtime never waits with MONITORX/MWAITX (ROCR's HSA_ENABLE_MWAITX), so DISABLED.
    line(out, 0, "Mwaitx:", "DISABLED");
    // No hsa_amd_portable_export_dmabuf (not in ROCR 5.2's API), so NO.
    line(out, 0, "DMAbuf Support:", "NO");
    let _ = writeln!(out);
}

fn agent_report<H: PlatformRef>(out: &mut String, rt: &Runtime<H>, a: &Agent) {
    line(out, 1, "Name:", a.name());
    line(out, 1, "Uuid:", a.uuid());
    line(out, 1, "Marketing Name:", a.marketing_name());
    line(out, 1, "Vendor Name:", a.vendor_name());
    let feature = if a.feature().contains(AgentFeature::KERNEL_DISPATCH) {
        "KERNEL_DISPATCH"
    } else if a.feature().contains(AgentFeature::AGENT_DISPATCH) {
        "AGENT_DISPATCH"
    } else {
        "None specified"
    };
    line(out, 1, "Feature:", feature);
    line(
        out,
        1,
        "Profile:",
        if a.profile() == Profile::Base {
            "BASE_PROFILE"
        } else {
            "FULL_PROFILE"
        },
    );
    line(out, 1, "Float Round Mode:", "NEAR");
    line(out, 1, "Max Queue Number:", Hex(a.queues_max().into()));
    line(out, 1, "Queue Min Size:", Hex(a.queue_min_size().into()));
    line(out, 1, "Queue Max Size:", Hex(a.queue_max_size().into()));
    line(out, 1, "Queue Type:", "MULTI");
    line(out, 1, "Node:", a.node());
    line(
        out,
        1,
        "Device Type:",
        if a.device_type() == DeviceType::Gpu {
            "GPU"
        } else {
            "CPU"
        },
    );
    header(out, 1, "Cache Info:");
    for (level, size) in a.cache_sizes_bytes().iter().enumerate() {
        if *size > 0 {
            line(
                out,
                2,
                &format!("L{}:", level + 1),
                format_args!("{} KB", Hex(u64::from(size / 1024))),
            );
        }
    }
    line(out, 1, "Chip ID:", Hex(a.chip_id().into()));
    line(out, 1, "ASIC Revision:", Hex(a.asic_revision().into()));
    line(out, 1, "Cacheline Size:", Hex(a.cacheline_size().into()));
    line(out, 1, "Max Clock Freq. (MHz):", a.max_clock_mhz());
    line(out, 1, "BDFID:", a.bdfid());
    line(out, 1, "Internal Node ID:", a.driver_node_id());
    line(out, 1, "Compute Unit:", a.compute_unit_count());
    line(out, 1, "SIMDs per CU:", a.simds_per_cu());
    line(out, 1, "Shader Engines:", a.shader_engines());
    line(
        out,
        1,
        "Shader Arrs. per Eng.:",
        a.shader_arrays_per_engine(),
    );
    line(out, 1, "WatchPts on Addr. Ranges:", watch_points(a));
    if a.is_gpu() {
        line(
            out,
            1,
            "Coherent Host Access:",
            bool_text(a.coherent_host_access()),
        );
    }
    header(out, 1, "Memory Properties:");
    line(
        out,
        1,
        "Features:",
        if a.is_gpu() {
            "KERNEL_DISPATCH"
        } else {
            "None"
        },
    );
    if a.is_gpu() {
        line(out, 1, "Fast F16 Operation:", bool_text(a.fast_f16()));
        line(out, 1, "Wavefront Size:", Hex(a.wavefront_size().into()));
        line(
            out,
            1,
            "Workgroup Max Size:",
            Hex(a.workgroup_max_size().into()),
        );
        header(out, 1, "Workgroup Max Size per Dimension:");
        for (axis, v) in ["x", "y", "z"].iter().zip(a.workgroup_max_dim()) {
            line(out, 2, axis, Hex(v.into()));
        }
        line(
            out,
            1,
            "Max Waves Per CU:",
            Hex(a.max_waves_per_cu().into()),
        );
        line(
            out,
            1,
            "Max Work-item Per CU:",
            Hex(a.max_work_items_per_cu().into()),
        );
        line(out, 1, "Grid Max Size:", Hex(a.grid_max_size().into()));
        header(out, 1, "Grid Max Size per Dimension:");
        for (axis, v) in ["x", "y", "z"].iter().zip(a.grid_max_dim()) {
            line(out, 2, axis, Hex(v.into()));
        }
        line(out, 1, "Max fbarriers/Workgrp:", a.fbarrier_max_size());
        line(
            out,
            1,
            "Packet Processor uCode::",
            a.packet_processor_ucode(),
        );
        line(out, 1, "SDMA engine uCode::", a.sdma_ucode());
        line(out, 1, "IOMMU Support::", "None");
    }
    header(out, 1, "Pool Info:");
    for (i, pool) in rt.agent_pools(a.handle()).enumerate() {
        header(out, 2, &format!("Pool {}", i + 1));
        pool_report(out, pool.info());
    }
    header(out, 1, "ISA Info:");
    if let Some(isa) = a.isa() {
        header(out, 2, "ISA 1");
        line(out, 3, "Name:", isa.isa_name());
        line(out, 3, "Machine Models:", "HSA_MACHINE_MODEL_LARGE");
        line(out, 3, "Profiles:", "HSA_PROFILE_BASE");
        line(out, 3, "Default Rounding Mode:", "NEAR");
        line(out, 3, "Default Rounding Mode:", "NEAR");
        line(out, 3, "Fast f16:", bool_text(a.fast_f16()));
        line(
            out,
            3,
            "Workgroup Max Size:",
            Hex(a.workgroup_max_size().into()),
        );
        header(out, 3, "Workgroup Max Size per Dimension:");
        for (axis, v) in ["x", "y", "z"].iter().zip(a.workgroup_max_dim()) {
            line(out, 4, axis, Hex(v.into()));
        }
        line(out, 3, "Grid Max Size:", Hex(a.grid_max_size().into()));
        header(out, 3, "Grid Max Size per Dimension:");
        for (axis, v) in ["x", "y", "z"].iter().zip(a.grid_max_dim()) {
            line(out, 4, axis, Hex(v.into()));
        }
        line(out, 3, "FBarrier Max Size:", a.fbarrier_max_size());
    }
}

fn pool_report(out: &mut String, pool: &PoolInfo) {
    let segment = match pool.segment {
        Segment::Global => {
            let mut flags = Vec::new();
            for (flag, text) in [
                (GlobalFlags::KERNARG, "KERNARG"),
                (GlobalFlags::FINE_GRAINED, "FINE GRAINED"),
                (
                    GlobalFlags::EXTENDED_SCOPE_FINE_GRAINED,
                    "EXTENDED FINE GRAINED",
                ),
                (GlobalFlags::COARSE_GRAINED, "COARSE GRAINED"),
            ] {
                if pool.global_flags.contains(flag) {
                    flags.push(text);
                }
            }
            format!("GLOBAL; FLAGS: {}", flags.join(", "))
        }
        Segment::Readonly => "READONLY".into(),
        Segment::Private => "PRIVATE".into(),
        Segment::Group => "GROUP".into(),
        Segment::Kernarg => "KERNARG".into(),
    };
    line(out, 3, "Segment:", segment);
    line(
        out,
        3,
        "Size:",
        format_args!("{} KB", Hex(pool.size_bytes / 1024)),
    );
    line(
        out,
        3,
        "Allocatable:",
        bool_text(pool.runtime_alloc_allowed),
    );
    line(
        out,
        3,
        "Alloc Granule:",
        format_args!("{}KB", pool.alloc_granule_bytes / 1024),
    );
    line(
        out,
        3,
        "Alloc Recommended Granule:",
        format_args!("{}KB", pool.alloc_rec_granule_bytes / 1024),
    );
    line(
        out,
        3,
        "Alloc Alignment:",
        format_args!("{}KB", pool.alloc_alignment_bytes / 1024),
    );
    line(
        out,
        3,
        "Accessible by all:",
        bool_text(pool.accessible_by_all),
    );
}
