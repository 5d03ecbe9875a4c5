//! The emulated GPU's render node (`/dev/dri/renderD<minor>`): the DRM queries
//! `libdrm_amdgpu` makes when a program (libhsakmt, through `amdgpu_device_initialize`)
//! opens a GPU, answered from the topology the device emulates.
//!
//! Answered, as the amdgpu kernel driver answers them (linux `drm_ioctl.c`,
//! `amdgpu_kms.c` `amdgpu_info_ioctl`; layouts from libdrm's `drm.h` and `amdgpu_drm.h`):
//! - `DRM_IOCTL_VERSION`: driver `amdgpu` 3.48.0, its date and description, copied into the
//!   caller's buffers up to their lengths; the lengths come back as the full lengths.
//! - `DRM_IOCTL_GET_CLIENT`: client 0 is the caller, authenticated; other indices `EINVAL`.
//! - `DRM_IOCTL_AMDGPU_INFO`: `ACCEL_WORKING` (1), `HW_IP_COUNT` ([`hw_ip_count`]), `HW_IP_INFO`
//!   ([`hw_ip_info`]), `DEV_INFO` (the node's PCI device id,
//!   family, shader engines, CUs, clocks, wavefront size, VRAM width, the GPU's address
//!   space) and `READ_MMR_REG` (`GB_ADDR_CONFIG`, dword 0x263e, which libdrm reads at
//!   start, is the value amdgpu composes for the GPU, `profile::gb_addr_config`, the
//!   one amdkfd's `GET_TILE_CONFIG` reports; every other register reads 0: the emulated GPU
//!   has no register file). At most
//!   `return_size` bytes go to `return_pointer`, as the kernel copies `min(size, return_size)`.
//!   Another query is `EINVAL`, as the kernel's default case.
//! - The GEM requests (PRIME import and export, `GEM_CLOSE`, `AMDGPU_GEM_MMAP`,
//!   `AMDGPU_GEM_VA`): [`super::gem`].
//! - Any other DRM request is `EINVAL` (`drm_ioctl`: a number outside the driver's table);
//!   a request whose type is not `'d'` is `ENOTTY`.
//!
//! User pointers inside the arguments (the version strings, `return_pointer`) are written
//! through `/proc/self/mem` as `copy_to_user` would: `EFAULT` when unmapped.

use hsa_core::platform::HeapType;
use hsa_linux::kfd::abi::{IOC_READ, IOC_WRITE};
use hsa_linux::topology::TopologyNode;
use rustix::io::Errno;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::mem::UserMemory;

/// The DRM ioctl type byte (`DRM_IOCTL_BASE`, `'d'`).
pub const DRM_IOCTL_BASE: u8 = b'd';
/// First driver-specific DRM ioctl number (`DRM_COMMAND_BASE`).
pub const DRM_COMMAND_BASE: u8 = 0x40;
/// `DRM_AMDGPU_INFO`, relative to [`DRM_COMMAND_BASE`].
pub const DRM_AMDGPU_INFO: u8 = 0x05;

/// `DRM_IOCTL_VERSION`: `_IOWR('d', 0x00, struct drm_version)`.
pub const DRM_IOCTL_VERSION: u32 = drm_ioc(IOC_READ | IOC_WRITE, 0x00, size_of::<DrmVersion>());
/// `DRM_IOCTL_GET_CLIENT`: `_IOWR('d', 0x05, struct drm_client)`.
pub const DRM_IOCTL_GET_CLIENT: u32 = drm_ioc(IOC_READ | IOC_WRITE, 0x05, size_of::<DrmClient>());
/// `DRM_IOCTL_AMDGPU_INFO`: `_IOW('d', 0x45, struct drm_amdgpu_info)`.
pub const DRM_IOCTL_AMDGPU_INFO: u32 = drm_ioc(
    IOC_WRITE,
    DRM_COMMAND_BASE + DRM_AMDGPU_INFO,
    size_of::<DrmAmdgpuInfo>(),
);

/// `AMDGPU_INFO_ACCEL_WORKING`: whether acceleration works (a `u32`).
pub const AMDGPU_INFO_ACCEL_WORKING: u32 = 0x00;
/// `AMDGPU_INFO_HW_IP_INFO`: `struct drm_amdgpu_info_hw_ip` of a hardware IP type.
pub const AMDGPU_INFO_HW_IP_INFO: u32 = 0x02;
/// `AMDGPU_INFO_HW_IP_COUNT`: how many instances of a hardware IP type (a `u32`).
pub const AMDGPU_INFO_HW_IP_COUNT: u32 = 0x03;
/// `AMDGPU_HW_IP_GFX`: the graphics engine.
pub const AMDGPU_HW_IP_GFX: u32 = 0;
/// `AMDGPU_HW_IP_COMPUTE`: the compute engines (amdgpu counts them as the GFX block).
pub const AMDGPU_HW_IP_COMPUTE: u32 = 1;
/// `AMDGPU_HW_IP_DMA`: the SDMA engines.
pub const AMDGPU_HW_IP_DMA: u32 = 2;
/// `AMDGPU_INFO_READ_MMR_REG`: read memory-mapped registers.
pub const AMDGPU_INFO_READ_MMR_REG: u32 = 0x15;

/// `GB_ADDR_CONFIG`'s dword offset, as libdrm reads it (`amdgpu_query_gpu_info_init`: gfx9's
/// `mmGB_ADDR_CONFIG` 0x063e in the GC block at 0x2000).
pub const GB_ADDR_CONFIG_DWORD: u32 = 0x263e;
/// `AMDGPU_INFO_DEV_INFO`: `struct drm_amdgpu_info_device`.
pub const AMDGPU_INFO_DEV_INFO: u32 = 0x16;

/// `AMDGPU_FAMILY_AI` (Vega: gfx900..gfx90a, gfx94x).
pub const AMDGPU_FAMILY_AI: u32 = 141;
/// `AMDGPU_FAMILY_RV` (Raven, Renoir: gfx902, gfx909, gfx90c).
pub const AMDGPU_FAMILY_RV: u32 = 142;
/// `AMDGPU_FAMILY_NV` (Navi: gfx10).
pub const AMDGPU_FAMILY_NV: u32 = 143;
/// `AMDGPU_FAMILY_GC_11_0_0` (gfx11).
pub const AMDGPU_FAMILY_GC_11_0_0: u32 = 145;
/// `AMDGPU_FAMILY_GC_12_0_0` (gfx12).
pub const AMDGPU_FAMILY_GC_12_0_0: u32 = 152;

/// The DRM driver version the render node reports (amdgpu 3.48, linux 6.x).
pub const AMDGPU_DRM_VERSION: (i32, i32, i32) = (3, 48, 0);

const fn drm_ioc(dir: u32, nr: u8, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((DRM_IOCTL_BASE as u32) << 8) | nr as u32
}

/// `struct drm_version` (64 bytes on LP64): the driver's version and the caller's buffers
/// for its name, date and description. Ref: libdrm `drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmVersion {
    /// Major version (from the kernel).
    pub version_major: i32,
    /// Minor version.
    pub version_minor: i32,
    /// Patch level.
    pub version_patchlevel: i32,
    /// Padding (C alignment of the next `size_t`).
    pub pad: u32,
    /// In: size of `name`'s buffer, bytes; out: length of the name.
    pub name_len: u64,
    /// User pointer to the name buffer.
    pub name: u64,
    /// In: size of `date`'s buffer; out: length of the date.
    pub date_len: u64,
    /// User pointer to the date buffer.
    pub date: u64,
    /// In: size of `desc`'s buffer; out: length of the description.
    pub desc_len: u64,
    /// User pointer to the description buffer.
    pub desc: u64,
}
const _: () = assert!(size_of::<DrmVersion>() == 64);

/// `struct drm_client` (40 bytes): a client of the DRM file. Ref: libdrm `drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmClient {
    /// In: which client (0 is the first).
    pub idx: i32,
    /// Out: whether it is authenticated.
    pub auth: i32,
    /// Out: its pid.
    pub pid: u64,
    /// Out: its uid.
    pub uid: u64,
    /// Out: its magic.
    pub magic: u64,
    /// Out: ioctls it issued.
    pub iocs: u64,
}
const _: () = assert!(size_of::<DrmClient>() == 40);

/// `struct drm_amdgpu_info` (32 bytes): one query. Ref: libdrm `amdgpu_drm.h`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuInfo {
    /// User pointer the answer is written to.
    pub return_pointer: u64,
    /// Bytes at `return_pointer`.
    pub return_size: u32,
    /// `AMDGPU_INFO_*`.
    pub query: u32,
    /// The query's union; for `READ_MMR_REG`: `dword_offset`, `count`, `instance`, `flags`.
    pub data: [u32; 4],
}
const _: () = assert!(size_of::<DrmAmdgpuInfo>() == 32);

/// `struct drm_amdgpu_info_device` (368 bytes), the answer to `AMDGPU_INFO_DEV_INFO`.
/// Ref: libdrm `amdgpu_drm.h`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DrmAmdgpuInfoDevice {
    /// PCI device id.
    pub device_id: u32,
    /// Internal chip revision.
    pub chip_rev: u32,
    /// External revision.
    pub external_rev: u32,
    /// PCI revision (selects the marketing name in `amdgpu.ids`).
    pub pci_rev: u32,
    /// `AMDGPU_FAMILY_*`.
    pub family: u32,
    /// Shader engines.
    pub num_shader_engines: u32,
    /// Shader arrays per engine.
    pub num_shader_arrays_per_engine: u32,
    /// GPU counter frequency, kHz.
    pub gpu_counter_freq: u32,
    /// Highest engine clock, kHz.
    pub max_engine_clock: u64,
    /// Highest memory clock, kHz.
    pub max_memory_clock: u64,
    /// Active compute units.
    pub cu_active_number: u32,
    /// Always-on CU mask.
    pub cu_ao_mask: u32,
    /// Active CUs per shader engine and array.
    pub cu_bitmap: [[u32; 4]; 4],
    /// Enabled render backends.
    pub enabled_rb_pipes_mask: u32,
    /// Render backends.
    pub num_rb_pipes: u32,
    /// Hardware graphics contexts.
    pub num_hw_gfx_contexts: u32,
    /// Padding.
    pub pad: u32,
    /// `AMDGPU_IDS_FLAGS_*`.
    pub ids_flags: u64,
    /// Start of the GPU virtual address space usable by user space.
    pub virtual_address_offset: u64,
    /// End of that space.
    pub virtual_address_max: u64,
    /// Alignment of virtual addresses, bytes.
    pub virtual_address_alignment: u32,
    /// PTE fragment size, bytes.
    pub pte_fragment_size: u32,
    /// GART page size, bytes.
    pub gart_page_size: u32,
    /// Constant-engine RAM size, bytes.
    pub ce_ram_size: u32,
    /// `AMDGPU_VRAM_TYPE_*`.
    pub vram_type: u32,
    /// VRAM bus width, bits.
    pub vram_bit_width: u32,
    /// VCE harvest configuration.
    pub vce_harvest_config: u32,
    /// Double off-chip LDS buffers (gfx9 tessellation).
    pub gc_double_offchip_lds_buf: u32,
    /// NGG primitive buffer address.
    pub prim_buf_gpu_addr: u64,
    /// NGG position buffer address.
    pub pos_buf_gpu_addr: u64,
    /// NGG control sideband buffer address.
    pub cntl_sb_buf_gpu_addr: u64,
    /// NGG parameter buffer address.
    pub param_buf_gpu_addr: u64,
    /// NGG primitive buffer size.
    pub prim_buf_size: u32,
    /// NGG position buffer size.
    pub pos_buf_size: u32,
    /// NGG control sideband size.
    pub cntl_sb_buf_size: u32,
    /// NGG parameter buffer size.
    pub param_buf_size: u32,
    /// Wavefront size, work-items.
    pub wave_front_size: u32,
    /// Shader-visible VGPRs.
    pub num_shader_visible_vgprs: u32,
    /// CUs per shader array.
    pub num_cu_per_sh: u32,
    /// L2 (TCC) blocks.
    pub num_tcc_blocks: u32,
    /// GS VGT table depth.
    pub gs_vgt_table_depth: u32,
    /// GS primitive buffer depth.
    pub gs_prim_buffer_depth: u32,
    /// GS waves per VGT.
    pub max_gs_waves_per_vgt: u32,
    /// Padding.
    pub pad1: u32,
    /// Always-on CU bitmap.
    pub cu_ao_bitmap: [[u32; 4]; 4],
    /// Start of the high virtual address range.
    pub high_va_offset: u64,
    /// End of the high virtual address range.
    pub high_va_max: u64,
    /// `PA_SC_TILE_STEERING_OVERRIDE`.
    pub pa_sc_tile_steering_override: u32,
    /// Padding (C alignment of the next `u64`).
    pub pad2: u32,
    /// Disabled TCC blocks.
    pub tcc_disabled_mask: u64,
}
const _: () = assert!(size_of::<DrmAmdgpuInfoDevice>() == 368);

/// PCI revisions of the products the built-in profiles and the test captures name, so that
/// `amdgpu.ids` (keyed by device id and revision) gives the product's name; another device
/// reports revision 0. Source: libdrm `data/amdgpu.ids` (MI210 `740F, 02`; MI25
/// `6860, 00`; MI300X `74A1, 00`; MI308X `74A2, 00`; RX 7900 XTX `744C, C8`; MI100
/// `738C, 01`; MI60 / MI50 `66A1, 02`).
const PCI_REVISIONS: [(u32, u32); 7] = [
    (0x740f, 0x02),
    (0x738c, 0x01),
    (0x66a1, 0x02),
    (0x6860, 0x00),
    (0x74a1, 0x00),
    (0x74a2, 0x00),
    (0x744c, 0xc8),
];

/// The `AMDGPU_FAMILY_*` of a GPU by its `gfx_target_version` (AMDGPUUsage processors and
/// amdgpu's families); 0 when unknown.
pub fn amdgpu_family(gfx_target_version: u32) -> u32 {
    match gfx_target_version / 10000 {
        9 => match gfx_target_version {
            // gfx902, gfx909, gfx90c: Raven and Renoir APUs.
            90002 | 90009 | 90012 => AMDGPU_FAMILY_RV,
            _ => AMDGPU_FAMILY_AI,
        },
        10 => AMDGPU_FAMILY_NV,
        11 => AMDGPU_FAMILY_GC_11_0_0,
        12 => AMDGPU_FAMILY_GC_12_0_0,
        _ => 0,
    }
}

/// `AMDGPU_INFO_DEV_INFO`'s answer for a GPU node: what amdgpu reports, from the node's
/// properties (device id, SIMD layout, clocks in kHz, wavefront size, VRAM width) and the
/// GPU's address space of 47 bits above 2 MiB (`AMDGPU_VA_RESERVED_SIZE`), with the high
/// range from `AMDGPU_GMC_HOLE_END`.
pub fn device_info(node: &TopologyNode) -> DrmAmdgpuInfoDevice {
    let p = &node.properties;
    let engines = p
        .array_count
        .checked_div(p.simd_arrays_per_engine)
        .unwrap_or(0);
    let cus = p.compute_unit_count();
    let vram = node.memory_banks.iter().find(|b| {
        matches!(
            b.heap_type,
            HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
        )
    });
    let mut info = DrmAmdgpuInfoDevice::new_zeroed();
    info.device_id = p.device_id;
    info.pci_rev = PCI_REVISIONS
        .iter()
        .find(|(id, _)| *id == p.device_id)
        .map_or(0, |&(_, rev)| rev);
    info.family = amdgpu_family(p.gfx_target_version);
    info.num_shader_engines = engines;
    info.num_shader_arrays_per_engine = p.simd_arrays_per_engine;
    info.gpu_counter_freq = 100_000;
    info.max_engine_clock = u64::from(p.max_engine_clk_fcompute) * 1000;
    info.max_memory_clock = vram.map_or(0, |b| u64::from(b.mem_clk_max_mhz) * 1000);
    info.cu_active_number = cus;
    info.num_hw_gfx_contexts = 8;
    info.virtual_address_offset = 0x20_0000;
    info.virtual_address_max = 0x8000_0000_0000;
    info.virtual_address_alignment = 4096;
    info.pte_fragment_size = 2 << 20;
    info.gart_page_size = 4096;
    info.vram_bit_width = vram.map_or(0, |b| b.width_bits);
    info.wave_front_size = p.wave_front_size;
    info.num_shader_visible_vgprs = 256;
    info.num_cu_per_sh = p.cu_per_simd_array;
    info.high_va_offset = 0xffff_8000_0000_0000;
    info.high_va_max = 0xffff_ffff_ffff_f000;
    info
}

/// Answers one DRM ioctl on the render node of `node` (a GPU node of the emulated topology).
/// `arg` is the kernel's copy of the argument (`_IOC_SIZE(request)` bytes); what the request
/// reads back (`_IOC_READ`) is written into it.
pub(crate) fn ioctl(
    node: &TopologyNode,
    user: &UserMemory,
    request: u32,
    arg: &mut [u8],
) -> Result<(), Errno> {
    if ((request >> 8) & 0xff) as u8 != DRM_IOCTL_BASE {
        return Err(Errno::NOTTY);
    }
    if ((request >> 16) & 0x3fff) as usize != arg.len() {
        return Err(Errno::INVAL);
    }
    match request {
        DRM_IOCTL_VERSION => {
            let mut v = DrmVersion::read_from_bytes(arg).map_err(|_| Errno::INVAL)?;
            (v.version_major, v.version_minor, v.version_patchlevel) = AMDGPU_DRM_VERSION;
            for (text, len, ptr) in [
                (&b"amdgpu"[..], &mut v.name_len, v.name),
                (&b"20150101"[..], &mut v.date_len, v.date),
                (&b"AMD GPU"[..], &mut v.desc_len, v.desc),
            ] {
                // drm_copy_field: copy up to the buffer's size, report the full length.
                let n = (*len as usize).min(text.len());
                if n > 0 {
                    user.write(ptr, &text[..n])?;
                }
                *len = text.len() as u64;
            }
            arg.copy_from_slice(v.as_bytes());
            Ok(())
        }
        DRM_IOCTL_GET_CLIENT => {
            let mut c = DrmClient::read_from_bytes(arg).map_err(|_| Errno::INVAL)?;
            if c.idx != 0 {
                return Err(Errno::INVAL);
            }
            c.auth = 1;
            c.pid = u64::from(rustix::process::getpid().as_raw_nonzero().get() as u32);
            c.uid = u64::from(rustix::process::getuid().as_raw());
            c.magic = 0;
            c.iocs = 0;
            arg.copy_from_slice(c.as_bytes());
            Ok(())
        }
        DRM_IOCTL_AMDGPU_INFO => {
            let q = DrmAmdgpuInfo::read_from_bytes(arg).map_err(|_| Errno::INVAL)?;
            let answer: Vec<u8> = match q.query {
                AMDGPU_INFO_ACCEL_WORKING => 1u32.to_ne_bytes().to_vec(),
                AMDGPU_INFO_DEV_INFO => device_info(node).as_bytes().to_vec(),
                AMDGPU_INFO_HW_IP_INFO => {
                    hw_ip_info(node, q.data[0], q.data[1])?.as_bytes().to_vec()
                }
                AMDGPU_INFO_HW_IP_COUNT => hw_ip_count(node, q.data[0])?.to_ne_bytes().to_vec(),
                AMDGPU_INFO_READ_MMR_REG => {
                    // amdgpu_info_ioctl: at most 128 registers per call.
                    let (first, count) = (q.data[0], q.data[1]);
                    if count > 128 {
                        return Err(Errno::INVAL);
                    }
                    (0..count)
                        .flat_map(|i| {
                            let v = if first.wrapping_add(i) == GB_ADDR_CONFIG_DWORD {
                                super::profile::gb_addr_config(&node.properties)
                            } else {
                                0
                            };
                            v.to_ne_bytes()
                        })
                        .collect()
                }
                _ => return Err(Errno::INVAL),
            };
            if q.return_pointer == 0 || q.return_size == 0 {
                return Err(Errno::INVAL);
            }
            let n = answer.len().min(q.return_size as usize);
            user.write(q.return_pointer, &answer[..n])
        }
        _ => Err(Errno::INVAL),
    }
}

/// `AMDGPU_INFO_HW_IP_COUNT` for `AMDGPU_HW_IP_*` type `ip` on a GPU node, as
/// `amdgpu_info_ioctl` counts (the IP block's instances): GFX and COMPUTE 1 (the one GFX
/// block), DMA the SDMA engines (`num_sdma_engines` + `num_sdma_xgmi_engines` of the node: amdkfd
/// splits amdgpu's `sdma.num_instances` into those two). `EINVAL` for the multimedia engines
/// (UVD, VCE, VCN, JPEG, VPE), which the emulated device has no block for, and for an unknown
/// type, as amdgpu answers a type whose IP block is absent.
pub fn hw_ip_count(node: &TopologyNode, ip: u32) -> Result<u32, Errno> {
    match ip {
        AMDGPU_HW_IP_GFX | AMDGPU_HW_IP_COMPUTE => Ok(1),
        AMDGPU_HW_IP_DMA => Ok(node
            .properties
            .num_sdma_engines
            .saturating_add(node.properties.num_sdma_xgmi_engines)),
        _ => Err(Errno::INVAL),
    }
}

/// `struct drm_amdgpu_info_hw_ip` (32 bytes), the answer to `AMDGPU_INFO_HW_IP_INFO`. Ref:
/// libdrm `amdgpu_drm.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct DrmAmdgpuInfoHwIp {
    /// The driver's IP block version, major.
    pub hw_ip_version_major: u32,
    /// The driver's IP block version, minor.
    pub hw_ip_version_minor: u32,
    /// `AMDGPU_HW_IP_*` capability bits (0: no user queues).
    pub capabilities_flags: u64,
    /// Alignment of an indirect buffer's start, bytes.
    pub ib_start_alignment: u32,
    /// Alignment of an indirect buffer's size, bytes.
    pub ib_size_alignment: u32,
    /// Bit i set: ring i of the IP is ready.
    pub available_rings: u32,
    /// The hardware's IP discovery version, `major << 16 | minor << 8 | revision`.
    pub ip_discovery_version: u32,
}

/// `AMDGPU_INFO_HW_IP_INFO` for `AMDGPU_HW_IP_*` type `ip`, instance `instance`, as
/// `amdgpu_hw_ip_info` fills it: GFX (block 9.0, or 9.4.3 on GC 9.4.3; a ring only where the
/// chip has graphics; IBs aligned to 32 bytes), COMPUTE (8 rings: amdgpu's default
/// `amdgpu_num_kcq`), DMA (one ring per SDMA engine, IBs aligned 256/4; block 4.4.2 on SDMA
/// 4.4.2, else 4.0), `ip_discovery_version` from the target's GC or SDMA version
/// ([`target_ips`](super::ip_discovery::target_ips), the table kfd-emu's `ip_discovery`
/// sysfs tree comes from too).
///
/// # Errors
/// `EINVAL` for an instance other than 0, an IP type [`hw_ip_count`] refuses, or a target
/// whose IP versions [`target_ips`](super::ip_discovery::target_ips) does not know.
pub fn hw_ip_info(node: &TopologyNode, ip: u32, instance: u32) -> Result<DrmAmdgpuInfoHwIp, Errno> {
    hw_ip_count(node, ip)?;
    if instance != 0 {
        return Err(Errno::INVAL);
    }
    let ips =
        super::ip_discovery::target_ips(node.properties.gfx_target_version).ok_or(Errno::INVAL)?;
    // The driver's IP blocks (amdgpu_discovery.c's choice by IP version): gfx_v9_0 (9.0),
    // gfx_v9_4_3 (9.4), gfx_v10_0 (10.0), gfx_v11_0 (11.0).
    let gfx_block = match (ips.gc.major, ips.gc.minor) {
        (9, 4) if ips.gc.revision == 3 => (9, 4),
        (major, _) => (u32::from(major), 0),
    };
    let mut info = DrmAmdgpuInfoHwIp::default();
    match ip {
        AMDGPU_HW_IP_GFX | AMDGPU_HW_IP_COMPUTE => {
            (info.hw_ip_version_major, info.hw_ip_version_minor) = gfx_block;
            info.ib_start_alignment = 32;
            info.ib_size_alignment = 32;
            info.available_rings = match ip {
                AMDGPU_HW_IP_GFX => u32::from(ips.graphics),
                _ => 0xff,
            };
            info.ip_discovery_version = ips.gc.packed();
        }
        _ => {
            (info.hw_ip_version_major, info.hw_ip_version_minor) =
                // sdma_v4_0 (4.0), sdma_v4_4_2 (4.4), sdma_v5_2 (5.2), sdma_v6_0 (6.0).
                match (ips.sdma.major, ips.sdma.minor) {
                    (4, 4) if ips.sdma.revision == 2 => (4, 4),
                    (4, _) => (4, 0),
                    (major, minor) => (u32::from(major), u32::from(minor)),
                };
            info.ib_start_alignment = 256;
            info.ib_size_alignment = 4;
            let n = hw_ip_count(node, ip)?.min(32);
            info.available_rings = if n == 32 { u32::MAX } else { (1 << n) - 1 };
            info.ip_discovery_version = ips.sdma.packed();
        }
    }
    Ok(info)
}

/// An mmap of GPU `gpu_id`'s render node: the buffer object whose `mmap_offset` is `offset`
/// (allocated on that GPU, at least `len` bytes), `EINVAL` otherwise (amdgpu's
/// `amdgpu_gem_mmap` finds the object by its fake offset).
///
/// # Safety
/// As [`KfdDriver::mmap`](hsa_linux::kfd::driver::KfdDriver::mmap).
#[allow(unsafe_code)]
pub(crate) unsafe fn mmap(
    device: &super::Device,
    gpu_id: u32,
    offset: u64,
    len: usize,
    addr: Option<std::ptr::NonNull<u8>>,
) -> Result<std::ptr::NonNull<u8>, Errno> {
    device.gpu_by_id(gpu_id)?;
    let allocs = device
        .allocs
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let bo = match allocs.by_mmap_offset(offset) {
        Some(a) => {
            if a.gpu_id != gpu_id || len as u64 > a.size {
                return Err(Errno::INVAL);
            }
            Some(a.backing.clone().ok_or(Errno::INVAL)?)
        }
        None => None,
    };
    drop(allocs);
    // Else a GEM object's offset (AMDGPU_GEM_MMAP; the GEM lock is taken before the
    // allocations' lock, never after); map_at refuses a length past its end.
    let backing = match bo {
        Some(b) => b,
        None => super::lock(&device.gem)
            .by_mmap_offset(gpu_id, offset)
            .ok_or(Errno::INVAL)?,
    };
    // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
    unsafe { backing.map_at(addr, len) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_topology;

    #[test]
    fn request_numbers_are_libdrms() {
        // From gcc over libdrm's drm.h / amdgpu_drm.h.
        assert_eq!(DRM_IOCTL_VERSION, 0xc040_6400);
        assert_eq!(DRM_IOCTL_GET_CLIENT, 0xc028_6405);
        assert_eq!(DRM_IOCTL_AMDGPU_INFO, 0x4020_6445);
    }

    #[test]
    fn device_info_of_the_builtin_mi210() {
        let t = builtin_topology();
        let i = device_info(&t.nodes[1]);
        assert_eq!(i.device_id, 0x740f);
        assert_eq!(i.pci_rev, 2);
        assert_eq!(i.family, AMDGPU_FAMILY_AI);
        assert_eq!(i.num_shader_engines, 8);
        assert_eq!(i.cu_active_number, 104);
        assert_eq!(i.wave_front_size, 64);
        assert_eq!(i.max_engine_clock, 1_700_000);
        assert_eq!(i.vram_bit_width, 4096);
        // The MI100 and MI60 profiles: the revisions amdgpu.ids names them by.
        for (version, rev) in [(90008, 1), (90006, 2)] {
            let t = crate::device::builtin_topology_for(version).unwrap();
            assert_eq!(device_info(&t.nodes[1]).pci_rev, rev, "{version}");
        }
    }

    /// `HW_IP_COUNT` counts as amdgpu: one GFX block for GFX and COMPUTE, the SDMA engines
    /// (KFD's PCIe and XGMI ones together: MI210 has 2 + 3 = amdgpu's 5 `sdma.num_instances`)
    /// for DMA; `EINVAL` for an IP the emulated GPU has no block for.
    #[test]
    fn hw_ip_count_counts_blocks_as_amdgpu() {
        let t = builtin_topology();
        let user = UserMemory::open().unwrap();
        let count = |node: &TopologyNode, ip: u32| {
            let mut out = 0xffff_ffffu32;
            let q = DrmAmdgpuInfo {
                return_pointer: &mut out as *mut u32 as u64,
                return_size: 4,
                query: AMDGPU_INFO_HW_IP_COUNT,
                data: [ip, 0, 0, 0],
            };
            let mut arg = q.as_bytes().to_vec();
            ioctl(node, &user, DRM_IOCTL_AMDGPU_INFO, &mut arg).map(|()| out)
        };
        assert_eq!(count(&t.nodes[1], AMDGPU_HW_IP_GFX), Ok(1));
        assert_eq!(count(&t.nodes[1], AMDGPU_HW_IP_COMPUTE), Ok(1));
        assert_eq!(count(&t.nodes[1], AMDGPU_HW_IP_DMA), Ok(2));
        let mut xgmi = t.nodes[1].clone();
        xgmi.properties.num_sdma_xgmi_engines = 3;
        assert_eq!(count(&xgmi, AMDGPU_HW_IP_DMA), Ok(5));
        for ip in [3, 4, 6, 8, 9, 99] {
            assert_eq!(count(&t.nodes[1], ip), Err(Errno::INVAL), "{ip}");
        }
    }

    /// `HW_IP_INFO` on the MI210 profile: GC 9.4.2 without a graphics ring, 8 compute
    /// rings, SDMA 4.4.0 with one ring per engine; refused for instance 1 and for VCN.
    #[test]
    fn hw_ip_info_answers_as_amdgpu_on_gfx90a() {
        let t = builtin_topology();
        let user = UserMemory::open().unwrap();
        let info = |ip: u32, instance: u32| {
            let mut out = DrmAmdgpuInfoHwIp::default();
            let q = DrmAmdgpuInfo {
                return_pointer: &mut out as *mut DrmAmdgpuInfoHwIp as u64,
                return_size: 32,
                query: AMDGPU_INFO_HW_IP_INFO,
                data: [ip, instance, 0, 0],
            };
            let mut arg = q.as_bytes().to_vec();
            ioctl(&t.nodes[1], &user, DRM_IOCTL_AMDGPU_INFO, &mut arg).map(|()| out)
        };
        let gfx = info(AMDGPU_HW_IP_GFX, 0).unwrap();
        assert_eq!((gfx.hw_ip_version_major, gfx.hw_ip_version_minor), (9, 0));
        assert_eq!(
            (gfx.available_rings, gfx.ip_discovery_version),
            (0, 0x09_04_02)
        );
        assert_eq!((gfx.ib_start_alignment, gfx.ib_size_alignment), (32, 32));
        assert_eq!(info(AMDGPU_HW_IP_COMPUTE, 0).unwrap().available_rings, 0xff);
        let dma = info(AMDGPU_HW_IP_DMA, 0).unwrap();
        assert_eq!(
            (dma.available_rings, dma.ip_discovery_version),
            (0b11, 0x04_04_00)
        );
        assert_eq!((dma.ib_start_alignment, dma.ib_size_alignment), (256, 4));
        assert_eq!(info(AMDGPU_HW_IP_GFX, 1), Err(Errno::INVAL));
        assert_eq!(info(6, 0), Err(Errno::INVAL));
    }

    /// `HW_IP_INFO` on the RDNA profiles: amdgpu's gfx_v10_0 / gfx_v11_0 and sdma_v5_2 /
    /// sdma_v6_0 blocks, with a graphics ring, the IP versions of `ip_discovery`.
    #[test]
    fn hw_ip_info_of_the_rdna_profiles() {
        let user = UserMemory::open().unwrap();
        for (target, gfx_block, gc, sdma_block, sdma) in [
            (100300, (10, 0), 0x0a_03_00, (5, 2), 0x05_02_00),
            (110000, (11, 0), 0x0b_00_00, (6, 0), 0x06_00_00),
        ] {
            let t = super::super::builtin_topology_for(target).unwrap();
            let info = |ip: u32| {
                let mut out = DrmAmdgpuInfoHwIp::default();
                let q = DrmAmdgpuInfo {
                    return_pointer: &mut out as *mut DrmAmdgpuInfoHwIp as u64,
                    return_size: 32,
                    query: AMDGPU_INFO_HW_IP_INFO,
                    data: [ip, 0, 0, 0],
                };
                let mut arg = q.as_bytes().to_vec();
                ioctl(&t.nodes[1], &user, DRM_IOCTL_AMDGPU_INFO, &mut arg).map(|()| out)
            };
            let gfx = info(AMDGPU_HW_IP_GFX).unwrap();
            assert_eq!(
                (gfx.hw_ip_version_major, gfx.hw_ip_version_minor),
                gfx_block
            );
            assert_eq!((gfx.available_rings, gfx.ip_discovery_version), (1, gc));
            let dma = info(AMDGPU_HW_IP_DMA).unwrap();
            assert_eq!(
                (dma.hw_ip_version_major, dma.hw_ip_version_minor),
                sdma_block
            );
            assert_eq!(dma.ip_discovery_version, sdma, "{target}");
        }
    }

    /// `READ_MMR_REG` reads `GB_ADDR_CONFIG` (dword 0x263e, as libdrm asks for it) as the
    /// GPU's composed value and every other register as 0.
    #[test]
    fn read_mmr_reg_reads_gb_addr_config() {
        let t = builtin_topology();
        let mut out = [0xffff_ffffu32; 3];
        let q = DrmAmdgpuInfo {
            return_pointer: out.as_mut_ptr() as u64,
            return_size: 12,
            query: AMDGPU_INFO_READ_MMR_REG,
            data: [GB_ADDR_CONFIG_DWORD - 1, 3, 0xffff_ffff, 0],
        };
        let mut arg = q.as_bytes().to_vec();
        let user = UserMemory::open().unwrap();
        let r = ioctl(&t.nodes[1], &user, DRM_IOCTL_AMDGPU_INFO, &mut arg);
        assert_eq!(r, Ok(()));
        assert_eq!(out, [0, 0x2219_4042, 0]);
    }

    #[test]
    fn families() {
        assert_eq!(amdgpu_family(90000), AMDGPU_FAMILY_AI);
        assert_eq!(amdgpu_family(90012), AMDGPU_FAMILY_RV);
        assert_eq!(amdgpu_family(90402), AMDGPU_FAMILY_AI);
        assert_eq!(amdgpu_family(100300), AMDGPU_FAMILY_NV);
        assert_eq!(amdgpu_family(110000), AMDGPU_FAMILY_GC_11_0_0);
        assert_eq!(amdgpu_family(70000), 0);
    }
}
