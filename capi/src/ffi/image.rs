//! The HSA image extension (`hsa_ext_image.h`, `HSA_EXTENSION_IMAGES` 1.0; HSA Runtime
//! Programmer's Reference Manual 1.2 §3.3 "Images and Samplers") and ROCR's image additions
//! (`hsa_amd_image_create`, `hsa_amd_image_get_info_max_dim`), on gfx9 GPU agents other than
//! gfx94x (ROCR reports no image support there either).
//!
//! - **Formats and layout** are [`hsa_core::image`]'s: every image is linear, rows padded to
//!   256 bytes, so the opaque layout and `HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR` are the same
//!   memory order (an application may read an image it made with either).
//! - **Handles.** An image handle is the address of its 48-byte image object (the T#, or V#
//!   for 1DB, then channel type, channel order and width), a sampler handle that of its
//!   32-byte sampler object (the S#), as in ROCR: a kernel takes the handle as its image or
//!   sampler argument, and ROCclr copies the descriptors from it for HIP's texture objects.
//!   The objects are in system memory (the CPU agent's kernarg pool), which every agent
//!   reaches and whose host and device addresses agree.
//! - **Import, export, copy and clear** run on the host, synchronously as the extension
//!   specifies: the image's memory must be host-reachable (system memory, or device memory
//!   the host maps, as the emulated device's is); device memory the host cannot map is refused
//!   with `INVALID_ARGUMENT` naming the range (ROCR runs blit kernels there). Regions are
//!   (x, y, z) texels; a 1DA image's y is its layer, as ROCR's blits read it. Copies may mix
//!   geometries (a 2D block into a slice of a 3D image). An image whose texels would run past
//!   the runtime allocation its memory starts in is refused at creation.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

use hsa_core::image::{self, Descriptor, Format, Geometry, Layout, SamplerDescriptor};
use hsa_core::memory::GlobalFlags;
use hsa_core::runtime::Agent;
use hsa_core::{bail, error, Error, Status};

use super::agent::agent_of;
use super::copy::copy_bytes;
use super::{guard, non_null, put, HsaStatus};
use crate::state::{self, lock, State};

/// `HSA_EXT_AGENT_INFO_IMAGE_1D_MAX_ELEMENTS`, the first image agent attribute.
pub const HSA_EXT_AGENT_INFO_IMAGE_1D_MAX_ELEMENTS: u32 = 0x3000;
/// `HSA_EXT_AGENT_INFO_IMAGE_1DA_MAX_ELEMENTS`.
pub const HSA_EXT_AGENT_INFO_IMAGE_1DA_MAX_ELEMENTS: u32 = 0x3001;
/// `HSA_EXT_AGENT_INFO_IMAGE_1DB_MAX_ELEMENTS`.
pub const HSA_EXT_AGENT_INFO_IMAGE_1DB_MAX_ELEMENTS: u32 = 0x3002;
/// `HSA_EXT_AGENT_INFO_IMAGE_2D_MAX_ELEMENTS` (`uint32_t[2]`).
pub const HSA_EXT_AGENT_INFO_IMAGE_2D_MAX_ELEMENTS: u32 = 0x3003;
/// `HSA_EXT_AGENT_INFO_IMAGE_2DA_MAX_ELEMENTS` (`uint32_t[2]`).
pub const HSA_EXT_AGENT_INFO_IMAGE_2DA_MAX_ELEMENTS: u32 = 0x3004;
/// `HSA_EXT_AGENT_INFO_IMAGE_2DDEPTH_MAX_ELEMENTS` (`uint32_t[2]`).
pub const HSA_EXT_AGENT_INFO_IMAGE_2DDEPTH_MAX_ELEMENTS: u32 = 0x3005;
/// `HSA_EXT_AGENT_INFO_IMAGE_2DADEPTH_MAX_ELEMENTS` (`uint32_t[2]`).
pub const HSA_EXT_AGENT_INFO_IMAGE_2DADEPTH_MAX_ELEMENTS: u32 = 0x3006;
/// `HSA_EXT_AGENT_INFO_IMAGE_3D_MAX_ELEMENTS` (`uint32_t[3]`).
pub const HSA_EXT_AGENT_INFO_IMAGE_3D_MAX_ELEMENTS: u32 = 0x3007;
/// `HSA_EXT_AGENT_INFO_IMAGE_ARRAY_MAX_LAYERS`.
pub const HSA_EXT_AGENT_INFO_IMAGE_ARRAY_MAX_LAYERS: u32 = 0x3008;
/// `HSA_EXT_AGENT_INFO_MAX_IMAGE_RD_HANDLES`.
pub const HSA_EXT_AGENT_INFO_MAX_IMAGE_RD_HANDLES: u32 = 0x3009;
/// `HSA_EXT_AGENT_INFO_MAX_IMAGE_RORW_HANDLES`.
pub const HSA_EXT_AGENT_INFO_MAX_IMAGE_RORW_HANDLES: u32 = 0x300A;
/// `HSA_EXT_AGENT_INFO_MAX_SAMPLER_HANDLERS`.
pub const HSA_EXT_AGENT_INFO_MAX_SAMPLER_HANDLERS: u32 = 0x300B;
/// `HSA_EXT_AGENT_INFO_IMAGE_LINEAR_ROW_PITCH_ALIGNMENT`.
pub const HSA_EXT_AGENT_INFO_IMAGE_LINEAR_ROW_PITCH_ALIGNMENT: u32 = 0x300C;

/// `HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR`.
const LAYOUT_LINEAR: u32 = 1;

/// The `_with_layout` functions' first check (ROCR's): the runtime is initialised and the
/// layout is `HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR`.
///
/// # Errors
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for another layout.
fn require_linear(image_data_layout: u32) -> Result<(), Error> {
    state::state()?;
    if image_data_layout != LAYOUT_LINEAR {
        bail!(
            Status::InvalidArgument,
            "image data layout {image_data_layout} is not LINEAR (1)"
        );
    }
    Ok(())
}

/// `hsa_ext_image_format_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageFormat {
    /// `hsa_ext_image_channel_type32_t`.
    pub channel_type: u32,
    /// `hsa_ext_image_channel_order32_t`.
    pub channel_order: u32,
}

/// `hsa_ext_image_descriptor_t`: 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageDescriptor {
    /// `hsa_ext_image_geometry_t`.
    pub geometry: u32,
    /// Width, texels.
    pub width: usize,
    /// Height, texels.
    pub height: usize,
    /// Depth (3D), slices.
    pub depth: usize,
    /// Layers (array geometries).
    pub array_size: usize,
    /// The format.
    pub format: ImageFormat,
}

const _: () = assert!(std::mem::size_of::<ImageDescriptor>() == 48);
const _: () = assert!(std::mem::offset_of!(ImageDescriptor, format) == 40);

/// `hsa_ext_image_data_info_t`: size and alignment, bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageDataInfo {
    /// Bytes of memory the image needs.
    pub size: usize,
    /// Alignment of that memory, bytes.
    pub alignment: usize,
}

/// `hsa_dim3_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Dim3 {
    /// X.
    pub x: u32,
    /// Y.
    pub y: u32,
    /// Z.
    pub z: u32,
}

/// `hsa_ext_image_region_t`: an offset and a range, texels (z: slices or layers).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageRegion {
    /// First texel.
    pub offset: Dim3,
    /// Texels per dimension.
    pub range: Dim3,
}

/// `hsa_ext_sampler_descriptor_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SamplerDesc {
    /// `hsa_ext_sampler_coordinate_mode32_t`.
    pub coordinate_mode: u32,
    /// `hsa_ext_sampler_filter_mode32_t`.
    pub filter_mode: u32,
    /// `hsa_ext_sampler_addressing_mode32_t`.
    pub address_mode: u32,
}

/// One image made by `hsa_ext_image_create*` / `hsa_amd_image_create`.
#[derive(Clone, Copy, Debug)]
struct ImageRec {
    agent: u64,
    desc: Descriptor,
    layout: Layout,
    /// Device address of the image's memory.
    data: u64,
}

/// The images and samplers of a runtime, by handle (the object's address).
#[derive(Default)]
pub(crate) struct Images {
    images: Mutex<HashMap<u64, ImageRec>>,
    samplers: Mutex<HashMap<u64, u64>>,
}

/// Whether `agent` provides the image extension: gfx9 GPUs other than gfx94x (ROCR 5.2's
/// image library covers gfx9 to gfx11; this runtime writes gfx9 descriptors only, and ROCR
/// reports no image support on gfx94x).
pub(crate) fn agent_has_images(agent: &Agent) -> bool {
    let Some(v) = agent.isa().and_then(|t| t.processor.gfx_target_version()) else {
        return false;
    };
    agent.is_gpu() && v / 10000 == 9 && (v / 100) % 100 != 4
}

/// The image attributes of `hsa_agent_get_info` (`0x3000..=0x300C`): maximum sizes per
/// geometry (2 or 3 `uint32_t`s for the 2D and 3D ones), 128 read-only and 64 read-write
/// image arguments, 16 samplers (ROCR's figures), a 256-byte linear row pitch alignment; all
/// 0 on an agent without images. `None` for any other attribute.
///
/// # Safety
/// `value` is as large as the attribute's type.
pub(crate) unsafe fn agent_info(agent: &Agent, attribute: u32, value: *mut c_void) -> Option<()> {
    let yes = agent_has_images(agent);
    let dims = |g: Geometry| if yes { g.max_dims() } else { [0; 4] };
    let n = |v: u32| if yes { v } else { 0 };
    // SAFETY: (all arms) per this function's contract.
    unsafe {
        match attribute {
            HSA_EXT_AGENT_INFO_IMAGE_1D_MAX_ELEMENTS => put::<u32>(value, dims(Geometry::D1)[0]),
            HSA_EXT_AGENT_INFO_IMAGE_1DA_MAX_ELEMENTS => {
                put::<u32>(value, dims(Geometry::D1Array)[0])
            }
            HSA_EXT_AGENT_INFO_IMAGE_1DB_MAX_ELEMENTS => {
                put::<u32>(value, dims(Geometry::D1Buffer)[0])
            }
            HSA_EXT_AGENT_INFO_IMAGE_2D_MAX_ELEMENTS => {
                let d = dims(Geometry::D2);
                put::<[u32; 2]>(value, [d[0], d[1]])
            }
            HSA_EXT_AGENT_INFO_IMAGE_2DA_MAX_ELEMENTS => {
                let d = dims(Geometry::D2Array);
                put::<[u32; 2]>(value, [d[0], d[1]])
            }
            HSA_EXT_AGENT_INFO_IMAGE_2DDEPTH_MAX_ELEMENTS => {
                let d = dims(Geometry::D2Depth);
                put::<[u32; 2]>(value, [d[0], d[1]])
            }
            HSA_EXT_AGENT_INFO_IMAGE_2DADEPTH_MAX_ELEMENTS => {
                let d = dims(Geometry::D2ArrayDepth);
                put::<[u32; 2]>(value, [d[0], d[1]])
            }
            HSA_EXT_AGENT_INFO_IMAGE_3D_MAX_ELEMENTS => {
                let d = dims(Geometry::D3);
                put::<[u32; 3]>(value, [d[0], d[1], d[2]])
            }
            HSA_EXT_AGENT_INFO_IMAGE_ARRAY_MAX_LAYERS => {
                put::<u32>(value, dims(Geometry::D2Array)[3])
            }
            HSA_EXT_AGENT_INFO_MAX_IMAGE_RD_HANDLES => put::<u32>(value, n(128)),
            HSA_EXT_AGENT_INFO_MAX_IMAGE_RORW_HANDLES => put::<u32>(value, n(64)),
            HSA_EXT_AGENT_INFO_MAX_SAMPLER_HANDLERS => put::<u32>(value, n(16)),
            HSA_EXT_AGENT_INFO_IMAGE_LINEAR_ROW_PITCH_ALIGNMENT => {
                put::<u32>(value, n(image::IMAGE_ALIGNMENT as u32))
            }
            _ => return None,
        }
    }
    Some(())
}

/// The agent of an image call: handle 0 is `INVALID_AGENT` before the other checks, as in
/// ROCR.
fn image_agent(st: &State, agent: u64) -> Result<&Agent, Error> {
    if agent == 0 {
        bail!(Status::InvalidAgent, "agent handle is 0");
    }
    agent_of(st, agent)
}

fn core_descriptor(d: &ImageDescriptor) -> Result<Descriptor, Error> {
    Ok(Descriptor {
        geometry: Geometry::from_raw(d.geometry)?,
        width: d.width as u64,
        height: d.height as u64,
        depth: d.depth as u64,
        array_size: d.array_size as u64,
        format: Format {
            channel_type: d.format.channel_type,
            channel_order: d.format.channel_order,
        },
    })
}

/// The layout of an image of `d` on `agent`; `pitches` are the application's linear-layout
/// pitches (`None`: the opaque layout; a row pitch of 0 means the width times the element
/// size, as the extension defines it).
fn image_layout(
    agent: &Agent,
    d: &Descriptor,
    pitches: Option<(usize, usize)>,
) -> Result<Layout, Error> {
    if !agent_has_images(agent) {
        bail!(
            Status::ImageFormatUnsupported,
            "agent {} has no image support in this runtime (gfx9 other than gfx94x only)",
            agent.name()
        );
    }
    let (row, slice) = match pitches {
        None => (0, 0),
        Some((0, slice)) => {
            let e = image::format_info(d.format, d.geometry).map_or(0, |i| i.element_bytes);
            (d.width.saturating_mul(u64::from(e)), slice as u64)
        }
        Some((row, slice)) => (row as u64, slice as u64),
    };
    image::layout(d, row, slice)
}

fn check_permission(access_permission: u32) -> Result<(), Error> {
    if !(1..=3).contains(&access_permission) {
        bail!(
            Status::InvalidArgument,
            "access permission {access_permission} is not RO (1), WO (2) or RW (3)"
        );
    }
    Ok(())
}

/// `hsa_ext_image_get_capability`: the access capability mask of `image_format` in
/// `geometry` on `agent` (read-only 1, write-only 2, read-write 4), 0 when unsupported
/// (always on CPU agents and on GPUs without images).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers or a geometry
/// outside `hsa_ext_image_geometry_t`.
///
/// # Safety
/// `image_format` is NULL or readable; `capability_mask` NULL or writable.
pub unsafe extern "C" fn hsa_ext_image_get_capability(
    agent: u64,
    geometry: u32,
    image_format: *const ImageFormat,
    capability_mask: *mut u32,
) -> HsaStatus {
    guard("hsa_ext_image_get_capability", || {
        // SAFETY: the caller's contract.
        unsafe { capability(agent, geometry, image_format, capability_mask) }
    })
}

/// `hsa_ext_image_get_capability_with_layout`: as [`hsa_ext_image_get_capability`]; the
/// layout must be `HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR` (1), whose capabilities are the same here.
///
/// # Errors (as status)
/// As [`hsa_ext_image_get_capability`]; `INVALID_ARGUMENT` for another layout (ROCR).
///
/// # Safety
/// As [`hsa_ext_image_get_capability`].
pub unsafe extern "C" fn hsa_ext_image_get_capability_with_layout(
    agent: u64,
    geometry: u32,
    image_format: *const ImageFormat,
    image_data_layout: u32,
    capability_mask: *mut u32,
) -> HsaStatus {
    guard("hsa_ext_image_get_capability_with_layout", || {
        require_linear(image_data_layout)?;
        // SAFETY: the caller's contract.
        unsafe { capability(agent, geometry, image_format, capability_mask) }
    })
}

unsafe fn capability(
    agent: u64,
    geometry: u32,
    image_format: *const ImageFormat,
    capability_mask: *mut u32,
) -> Result<Status, Error> {
    let st = state::state()?;
    let a = image_agent(&st, agent)?;
    non_null(image_format, "image_format")?;
    non_null(capability_mask, "capability_mask")?;
    let g = Geometry::from_raw(geometry)?;
    // SAFETY: non-NULL, readable per the caller's contract.
    let f = unsafe { image_format.read_unaligned() };
    let cap = if agent_has_images(a) {
        image::format_info(
            Format {
                channel_type: f.channel_type,
                channel_order: f.channel_order,
            },
            g,
        )
        .map_or(0, |i| i.capability)
    } else {
        0
    };
    // SAFETY: non-NULL, writable per the caller's contract.
    unsafe { capability_mask.write_unaligned(cap) };
    Ok(Status::Success)
}

/// `hsa_ext_image_data_get_info`: the size and alignment of the memory of an image of
/// `image_descriptor` in the opaque layout (linear here, rows padded to 256 bytes).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, a permission
/// outside RO/WO/RW or a bad geometry; `HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED`,
/// `..._SIZE_UNSUPPORTED` ([`hsa_core::image::layout`]).
///
/// # Safety
/// `image_descriptor` is NULL or readable; `image_data_info` NULL or writable.
pub unsafe extern "C" fn hsa_ext_image_data_get_info(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    access_permission: u32,
    image_data_info: *mut ImageDataInfo,
) -> HsaStatus {
    guard("hsa_ext_image_data_get_info", || {
        // SAFETY: the caller's contract.
        unsafe {
            data_info(
                agent,
                image_descriptor,
                access_permission,
                None,
                image_data_info,
            )
        }
    })
}

/// `hsa_ext_image_data_get_info_with_layout`: as [`hsa_ext_image_data_get_info`] for the
/// linear layout with the application's pitches (row pitch 0: width times element size;
/// slice pitch 0: row pitch times height).
///
/// # Errors (as status)
/// As [`hsa_ext_image_data_get_info`]; `INVALID_ARGUMENT` for a layout other than LINEAR;
/// `HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED` for pitches gfx9 cannot address.
///
/// # Safety
/// As [`hsa_ext_image_data_get_info`].
pub unsafe extern "C" fn hsa_ext_image_data_get_info_with_layout(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    access_permission: u32,
    image_data_layout: u32,
    image_data_row_pitch: usize,
    image_data_slice_pitch: usize,
    image_data_info: *mut ImageDataInfo,
) -> HsaStatus {
    guard("hsa_ext_image_data_get_info_with_layout", || {
        require_linear(image_data_layout)?;
        // SAFETY: the caller's contract.
        unsafe {
            data_info(
                agent,
                image_descriptor,
                access_permission,
                Some((image_data_row_pitch, image_data_slice_pitch)),
                image_data_info,
            )
        }
    })
}

unsafe fn data_info(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    access_permission: u32,
    pitches: Option<(usize, usize)>,
    image_data_info: *mut ImageDataInfo,
) -> Result<Status, Error> {
    let st = state::state()?;
    let a = image_agent(&st, agent)?;
    non_null(image_descriptor, "image_descriptor")?;
    non_null(image_data_info, "image_data_info")?;
    check_permission(access_permission)?;
    // SAFETY: non-NULL, readable per the caller's contract.
    let d = core_descriptor(&unsafe { image_descriptor.read_unaligned() })?;
    let l = image_layout(a, &d, pitches)?;
    let info = ImageDataInfo {
        size: l.size as usize,
        alignment: l.alignment as usize,
    };
    // SAFETY: non-NULL, writable per the caller's contract.
    unsafe { image_data_info.write_unaligned(info) };
    Ok(Status::Success)
}

/// Allocates an object of `dwords` dwords in system memory and writes `words` to it; its
/// address.
fn new_object(st: &State, words: &[u32]) -> Result<u64, Error> {
    let rt = st.rt();
    let cpu = rt
        .agents()
        .iter()
        .find(|a| !a.is_gpu())
        .ok_or_else(|| error!(Status::OutOfResources, "no CPU agent for image objects"))?;
    let pool = rt
        .find_pool(cpu.handle(), GlobalFlags::KERNARG)
        .ok_or_else(|| error!(Status::OutOfResources, "no kernarg pool for image objects"))?;
    let a = rt.allocate(pool.handle(), (words.len() * 4) as u64)?;
    let Some(host) = a.host_ptr else {
        let _ = rt.free(a.va);
        bail!(
            Status::OutOfResources,
            "the kernarg pool's memory at {:#x} has no host mapping",
            a.va.0
        );
    };
    // SAFETY: the allocation holds at least words.len() * 4 bytes, host-mapped at `host`,
    // aligned to the pool's alignment (at least 16 bytes).
    unsafe {
        std::ptr::copy_nonoverlapping(words.as_ptr(), host.as_ptr().cast::<u32>(), words.len())
    };
    Ok(a.va.0)
}

/// `hsa_ext_image_create`: an image of `image_descriptor` over the memory at `image_data`
/// (at least the size [`hsa_ext_image_data_get_info`] gives, aligned to its alignment); the
/// handle is the address of its image object (module doc).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, a permission
/// outside RO/WO/RW, a bad geometry, `image_data` not 256-byte aligned or inside a runtime
/// allocation the image's texels would run past; the
/// `HSA_EXT_STATUS_ERROR_IMAGE_*` statuses of [`hsa_ext_image_data_get_info`];
/// `OUT_OF_RESOURCES` when the object cannot be allocated.
///
/// # Safety
/// `image_descriptor` is NULL or readable; `image` NULL or writable.
pub unsafe extern "C" fn hsa_ext_image_create(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    image_data: *const c_void,
    access_permission: u32,
    image: *mut u64,
) -> HsaStatus {
    guard("hsa_ext_image_create", || {
        // SAFETY: the caller's contract.
        unsafe {
            create(
                agent,
                image_descriptor,
                image_data,
                access_permission,
                None,
                image,
            )
        }
    })
}

/// `hsa_ext_image_create_with_layout`: as [`hsa_ext_image_create`] for memory in the linear
/// layout with the application's pitches (as [`hsa_ext_image_data_get_info_with_layout`]).
///
/// # Errors (as status)
/// As [`hsa_ext_image_create`]; `INVALID_ARGUMENT` for a layout other than LINEAR;
/// `HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED`.
///
/// # Safety
/// As [`hsa_ext_image_create`].
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_ext_image_create_with_layout(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    image_data: *const c_void,
    access_permission: u32,
    image_data_layout: u32,
    image_data_row_pitch: usize,
    image_data_slice_pitch: usize,
    image: *mut u64,
) -> HsaStatus {
    guard("hsa_ext_image_create_with_layout", || {
        require_linear(image_data_layout)?;
        // SAFETY: the caller's contract.
        unsafe {
            create(
                agent,
                image_descriptor,
                image_data,
                access_permission,
                Some((image_data_row_pitch, image_data_slice_pitch)),
                image,
            )
        }
    })
}

unsafe fn create(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    image_data: *const c_void,
    access_permission: u32,
    pitches: Option<(usize, usize)>,
    image: *mut u64,
) -> Result<Status, Error> {
    let st = state::state()?;
    let a = image_agent(&st, agent)?;
    non_null(image_descriptor, "image_descriptor")?;
    non_null(image_data, "image_data")?;
    non_null(image, "image")?;
    check_permission(access_permission)?;
    // SAFETY: non-NULL, readable per the caller's contract.
    let d = core_descriptor(&unsafe { image_descriptor.read_unaligned() })?;
    let l = image_layout(a, &d, pitches)?;
    let data = image_data as u64;
    if data % l.alignment != 0 {
        bail!(
            Status::InvalidArgument,
            "image_data {data:#x} is not aligned to the image's {} bytes",
            l.alignment
        );
    }
    check_extent(&st, data, &d, &l)?;
    let rec = ImageRec {
        agent,
        desc: d,
        layout: l,
        data,
    };
    // SAFETY: `image` is non-NULL and writable per the caller's contract.
    unsafe { register(&st, rec, &image::image_object(&d, &l, data), image) }
}

/// Makes the object of image `rec` from `words`, records it and writes its handle to `image`.
///
/// # Errors
/// `OUT_OF_RESOURCES` when the object cannot be allocated.
///
/// # Safety
/// `image` is non-NULL and writable.
unsafe fn register(
    st: &State,
    rec: ImageRec,
    words: &[u32; image::IMAGE_OBJECT_DWORDS],
    image: *mut u64,
) -> Result<Status, Error> {
    let handle = new_object(st, words)?;
    lock(&st.ext.images.images).insert(handle, rec);
    // SAFETY: per this function's contract.
    unsafe { image.write_unaligned(handle) };
    Ok(Status::Success)
}

/// Refuses an image whose memory would wrap the address space, or whose texels would run past
/// the runtime allocation its memory starts in
/// (the last texel ends `(slices - 1) * slice_pitch + (rows - 1) * row_pitch + width *
/// element bytes` after `data`): the host copies would otherwise write past it. Memory the
/// runtime did not allocate is the application's to size.
fn check_extent(st: &State, data: u64, d: &Descriptor, l: &Layout) -> Result<(), Error> {
    if data.checked_add(l.size).is_none() {
        bail!(
            Status::InvalidArgument,
            "image_data {data:#x} + {} bytes runs past the end of the address space",
            l.size
        );
    }
    let Ok(info) = st.rt().pointer_info(hsa_core::GpuVa(data)) else {
        return Ok(());
    };
    let a = info.allocation;
    let extent = (l.slices - 1) * l.slice_pitch
        + (l.rows - 1) * l.row_pitch
        + d.width * u64::from(l.info.element_bytes);
    let offset = data - a.va.0;
    if offset + extent > a.size_bytes {
        bail!(
            Status::InvalidArgument,
            "image_data {data:#x}: the image's {extent} bytes run past its allocation ({:#x}, {} \
             bytes)",
            a.va.0,
            a.size_bytes
        );
    }
    Ok(())
}

/// `hsa_amd_image_descriptor_t`'s head: version 1, then `0x1002 << 16 | chip id`, then the 8
/// dwords of a T# another driver laid out (ROCR's `metadata_amd_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmdImageDescriptor {
    /// Must be 1.
    pub version: u32,
    /// `0x1002 << 16 | HSA_AMD_AGENT_INFO_CHIP_ID`.
    pub device_id: u32,
    /// The T# words.
    pub data: [u32; 8],
}

/// `hsa_amd_image_create`: an image over memory another driver laid out (graphics interop),
/// described by the T# words in `image_layout`. This runtime takes only linear layouts
/// (`SW_MODE` 0) without compression metadata; its T# keeps the layout's size, pitch and
/// levels and gets the base address, format and channel selects of `image_descriptor`, as
/// ROCR patches them.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, a 1DB
/// geometry, or `image_data` inside a runtime allocation the image's rows (at the layout's
/// PITCH) would run past; `INVALID_ALLOCATION` for `image_data` not 256-byte aligned;
/// `HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED` for a version other than 1, another
/// device's id, a swizzled or compressed layout, or an unsupported format.
///
/// # Safety
/// `image_descriptor` and `image_layout` are NULL or readable; `image` NULL or writable.
pub unsafe extern "C" fn hsa_amd_image_create(
    agent: u64,
    image_descriptor: *const ImageDescriptor,
    image_layout: *const AmdImageDescriptor,
    image_data: *const c_void,
    access_permission: u32,
    image: *mut u64,
) -> HsaStatus {
    guard("hsa_amd_image_create", || {
        let st = state::state()?;
        let a = image_agent(&st, agent)?;
        non_null(image_descriptor, "image_descriptor")?;
        non_null(image_layout, "image_layout")?;
        non_null(image_data, "image_data")?;
        non_null(image, "image")?;
        check_permission(access_permission)?;
        let data = image_data as u64;
        if data % image::IMAGE_ALIGNMENT != 0 {
            bail!(
                Status::InvalidAllocation,
                "image_data {data:#x} is not 256-byte aligned"
            );
        }
        // SAFETY: non-NULL, readable per the caller's contract.
        let meta = unsafe { image_layout.read_unaligned() };
        // SAFETY: non-NULL, readable per the caller's contract.
        let d = core_descriptor(&unsafe { image_descriptor.read_unaligned() })?;
        if d.geometry == Geometry::D1Buffer {
            bail!(
                Status::InvalidArgument,
                "a 1DB image has no T# layout to import"
            );
        }
        if meta.version != 1 {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout version {} is not 1",
                meta.version
            );
        }
        let id = 0x1002 << 16 | a.chip_id();
        if meta.device_id != id {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout is for device {:#x}, not this agent's {id:#x}",
                meta.device_id
            );
        }
        let w = meta.data;
        let sw_mode = (w[3] >> 20) & 0x1f;
        let compressed = (w[6] >> 21) & 1 != 0 || w[7] != 0;
        if sw_mode != 0 || compressed {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout has swizzle mode {sw_mode}{}: only linear, uncompressed layouts \
                 are supported",
                if compressed {
                    " with compression metadata"
                } else {
                    ""
                }
            );
        }
        // The layout this runtime would give, for the format's checks and the host copies.
        // (`self::`: the `image_layout` parameter shadows the function.)
        let mut l = self::image_layout(a, &d, None)?;
        let e = u64::from(l.info.element_bytes);
        let pitch_texels = u64::from((w[4] >> 13) & 0xffff) + 1;
        if pitch_texels < d.width {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout's PITCH of {pitch_texels} texels is below the width {}",
                d.width
            );
        }
        l.row_pitch = pitch_texels * e;
        l.slice_pitch = l.row_pitch * l.rows;
        l.size = l.slice_pitch * l.slices;
        check_extent(&st, data, &d, &l)?;
        let ours = image::image_object(&d, &l, data);
        let mut words = [0u32; image::IMAGE_OBJECT_DWORDS];
        words[..8].copy_from_slice(&w);
        words[0] = ours[0];
        // BASE_ADDRESS_HI, DATA_FORMAT, NUM_FORMAT.
        words[1] =
            (w[1] & !(0xff | 0x3f << 20 | 0xf << 26)) | (ours[1] & (0xff | 0x3f << 20 | 0xf << 26));
        // DST_SEL_X..W, TYPE.
        words[3] = (w[3] & !(0xfff | 0xf << 28)) | (ours[3] & (0xfff | 0xf << 28));
        words[8..].copy_from_slice(&ours[8..]);
        let rec = ImageRec {
            agent,
            desc: d,
            layout: l,
            data,
        };
        // SAFETY: `image` is non-NULL and writable per the caller's contract.
        unsafe { register(&st, rec, &words, image) }
    })
}

/// `hsa_amd_image_get_info_max_dim`: the image attributes of `hsa_agent_get_info`
/// (`HSA_EXT_AGENT_INFO_IMAGE_*_MAX_ELEMENTS`, `..._ARRAY_MAX_LAYERS`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a NULL `value` or another
/// attribute.
///
/// # Safety
/// `value` is NULL or as large as the attribute's type.
pub unsafe extern "C" fn hsa_amd_image_get_info_max_dim(
    agent: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_image_get_info_max_dim", || {
        let st = state::state()?;
        let a = image_agent(&st, agent)?;
        non_null(value, "value")?;
        if !(HSA_EXT_AGENT_INFO_IMAGE_1D_MAX_ELEMENTS..=HSA_EXT_AGENT_INFO_IMAGE_ARRAY_MAX_LAYERS)
            .contains(&attribute)
        {
            return Err(super::bad_attribute("image dimension", attribute));
        }
        // SAFETY: non-NULL, the attribute's size per the caller's contract.
        unsafe { agent_info(a, attribute, value) };
        Ok(Status::Success)
    })
}

/// `hsa_ext_image_destroy`: forgets the image and frees its object (not its memory, which is
/// the application's).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a handle that is not a live
/// image.
pub extern "C" fn hsa_ext_image_destroy(agent: u64, image: u64) -> HsaStatus {
    guard("hsa_ext_image_destroy", || {
        let st = state::state()?;
        image_agent(&st, agent)?;
        let Some(_) = lock(&st.ext.images.images).remove(&image) else {
            bail!(
                Status::InvalidArgument,
                "image {image:#x} is not a live image"
            );
        };
        st.rt().free(hsa_core::GpuVa(image))?;
        Ok(Status::Success)
    })
}

fn image_rec(st: &State, image: u64, what: &str) -> Result<ImageRec, Error> {
    lock(&st.ext.images.images)
        .get(&image)
        .copied()
        .ok_or_else(|| {
            error!(
                Status::InvalidArgument,
                "{what} {image:#x} is not a live image"
            )
        })
}

/// The extent of `img` in region coordinates (x, y, z): width, rows and slices, except that
/// a 1DA image's layers are its y (the header: 1DA is "addressed by width and index
/// coordinate", the index second, as ROCR's blits and OpenCL's 1D-array origins read it).
fn region_dims(img: &ImageRec) -> [u64; 3] {
    let l = &img.layout;
    if img.desc.geometry == Geometry::D1Array {
        [img.desc.width, l.slices, 1]
    } else {
        [img.desc.width, l.rows, l.slices]
    }
}

/// Checks that `region` lies inside `img` (in region coordinates, [`region_dims`]) and is not
/// empty.
fn check_region(img: &ImageRec, offset: Dim3, range: Dim3, what: &str) -> Result<(), Error> {
    let dims = region_dims(img);
    let off = [offset.x, offset.y, offset.z].map(u64::from);
    let rng = [range.x, range.y, range.z].map(u64::from);
    for k in 0..3 {
        if rng[k] == 0 || off[k] + rng[k] > dims[k] {
            bail!(
                Status::InvalidArgument,
                "{what} region offset ({}, {}, {}) range ({}, {}, {}) is not inside the \
                 {}x{}x{} image",
                off[0],
                off[1],
                off[2],
                rng[0],
                rng[1],
                rng[2],
                dims[0],
                dims[1],
                dims[2]
            );
        }
    }
    Ok(())
}

/// The device address of the texel at region coordinates (x, y, z) of `img`
/// ([`region_dims`]: a 1DA image's y is its layer).
fn texel_address(img: &ImageRec, x: u64, y: u64, z: u64) -> u64 {
    let l = &img.layout;
    let (row, slice) = if img.desc.geometry == Geometry::D1Array {
        (0, y)
    } else {
        (y, z)
    };
    img.data + slice * l.slice_pitch + row * l.row_pitch + x * u64::from(l.info.element_bytes)
}

/// Copies rows between an image region and linear memory on the host; `to_image` chooses the
/// direction. `mem_row`/`mem_slice` are the linear memory's pitches, bytes.
fn copy_rows(
    st: &State,
    img: &ImageRec,
    region: &ImageRegion,
    mem: u64,
    mem_row: u64,
    mem_slice: u64,
    to_image: bool,
) -> Result<(), Error> {
    let e = u64::from(img.layout.info.element_bytes);
    let row_bytes = u64::from(region.range.x) * e;
    for z in 0..u64::from(region.range.z) {
        for y in 0..u64::from(region.range.y) {
            let at = texel_address(
                img,
                u64::from(region.offset.x),
                u64::from(region.offset.y) + y,
                u64::from(region.offset.z) + z,
            );
            let m = mem + z * mem_slice + y * mem_row;
            let (dst, src) = if to_image { (at, m) } else { (m, at) };
            copy_bytes(st, dst, src, row_bytes as usize)?;
        }
    }
    Ok(())
}

/// The linear memory's steps, bytes, between consecutive region rows (y) and slices (z) of
/// an import or export, from the application's pitches as the header defines them: a row
/// pitch below the region's row of texels is that row; a slice pitch below the row pitch times
/// the region's height is that product; for a 1DA image, whose region y counts layers
/// ([`region_dims`]), the slice pitch is the layers' step, and the row pitch where it is
/// smaller.
fn memory_pitches(img: &ImageRec, region: &ImageRegion, row: usize, slice: usize) -> (u64, u64) {
    let e = u64::from(img.layout.info.element_bytes);
    let row = (row as u64).max(u64::from(region.range.x) * e);
    if img.desc.geometry == Geometry::D1Array {
        let layer = (slice as u64).max(row);
        return (layer, layer.saturating_mul(u64::from(region.range.y)));
    }
    let slice = (slice as u64).max(row.saturating_mul(u64::from(region.range.y)));
    (row, slice)
}

/// `hsa_ext_image_import`: copies `image_region` of `dst_image` from linear memory at
/// `src_memory` (`src_row_pitch`/`src_slice_pitch` bytes apart; a pitch below the region's
/// row or slice, 0 included, is the tight one, as the header says), now. The region is in
/// region coordinates (a 1DA image's y is its layer).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, a dead image,
/// a region outside the image or empty, memory whose last byte would wrap the address space,
/// or image memory the host cannot reach (module doc).
///
/// # Safety
/// `src_memory` holds the region at its pitches; `image_region` is NULL or readable.
pub unsafe extern "C" fn hsa_ext_image_import(
    agent: u64,
    src_memory: *const c_void,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_image: u64,
    image_region: *const ImageRegion,
) -> HsaStatus {
    guard("hsa_ext_image_import", || {
        // SAFETY: the caller's contract.
        unsafe {
            transfer(
                agent,
                src_memory as u64,
                src_row_pitch,
                src_slice_pitch,
                dst_image,
                image_region,
                true,
            )
        }
    })
}

/// `hsa_ext_image_export`: copies `image_region` of `src_image` to linear memory at
/// `dst_memory`, now (as [`hsa_ext_image_import`], the other way).
///
/// # Errors (as status)
/// As [`hsa_ext_image_import`].
///
/// # Safety
/// `dst_memory` holds the region at its pitches; `image_region` is NULL or readable.
pub unsafe extern "C" fn hsa_ext_image_export(
    agent: u64,
    src_image: u64,
    dst_memory: *mut c_void,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    image_region: *const ImageRegion,
) -> HsaStatus {
    guard("hsa_ext_image_export", || {
        // SAFETY: the caller's contract.
        unsafe {
            transfer(
                agent,
                dst_memory as u64,
                dst_row_pitch,
                dst_slice_pitch,
                src_image,
                image_region,
                false,
            )
        }
    })
}

unsafe fn transfer(
    agent: u64,
    memory: u64,
    row_pitch: usize,
    slice_pitch: usize,
    image: u64,
    image_region: *const ImageRegion,
    to_image: bool,
) -> Result<Status, Error> {
    let st = state::state()?;
    image_agent(&st, agent)?;
    let (mem_name, img_name) = if to_image {
        ("src_memory", "dst_image")
    } else {
        ("dst_memory", "src_image")
    };
    non_null(memory as *const c_void, mem_name)?;
    non_null(image_region, "image_region")?;
    let img = image_rec(&st, image, img_name)?;
    // SAFETY: non-NULL, readable per the caller's contract.
    let region = unsafe { image_region.read_unaligned() };
    check_region(&img, region.offset, region.range, img_name)?;
    let (row, slice) = memory_pitches(&img, &region, row_pitch, slice_pitch);
    let need_row = u64::from(region.range.x) * u64::from(img.layout.info.element_bytes);
    let rows = u64::from(region.range.y);
    // The last byte of the linear memory must be addressable.
    let last = u64::from(region.range.z - 1)
        .checked_mul(slice)
        .and_then(|v| v.checked_add((rows - 1).checked_mul(row)?))
        .and_then(|v| v.checked_add(need_row))
        .and_then(|v| v.checked_add(memory));
    if last.is_none() {
        bail!(
            Status::InvalidArgument,
            "{mem_name} {memory:#x} with pitches (row {row}, slice {slice} bytes) runs past the \
             end of the address space"
        );
    }
    copy_rows(&st, &img, &region, memory, row, slice, to_image)?;
    Ok(Status::Success)
}

/// `hsa_ext_image_copy`: copies `range` texels from `src_offset` in `src_image` to
/// `dst_offset` in `dst_image`, now. The geometries may differ (the header: any pair of
/// regions of the same size, e.g. a 2D block into a slice of a 3D image; offsets and range in
/// region coordinates, a 1DA image's y its layer). The formats must be the same, except that
/// sRGBA and RGBA unorm8 mix (the bytes are copied, not converted; ROCR's blit converts
/// between the colour spaces).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, dead images,
/// images of different agents or regions outside them; `INCOMPATIBLE_ARGUMENTS` for
/// different formats.
///
/// # Safety
/// `src_offset`, `dst_offset` and `range` are NULL or readable.
pub unsafe extern "C" fn hsa_ext_image_copy(
    agent: u64,
    src_image: u64,
    src_offset: *const Dim3,
    dst_image: u64,
    dst_offset: *const Dim3,
    range: *const Dim3,
) -> HsaStatus {
    guard("hsa_ext_image_copy", || {
        let st = state::state()?;
        image_agent(&st, agent)?;
        non_null(src_offset, "src_offset")?;
        non_null(dst_offset, "dst_offset")?;
        non_null(range, "range")?;
        let src = image_rec(&st, src_image, "src_image")?;
        let dst = image_rec(&st, dst_image, "dst_image")?;
        // SAFETY: non-NULL, readable per the caller's contract.
        let (so, d_o, r) = unsafe {
            (
                src_offset.read_unaligned(),
                dst_offset.read_unaligned(),
                range.read_unaligned(),
            )
        };
        if src.agent != dst.agent {
            bail!(
                Status::InvalidArgument,
                "src_image and dst_image belong to different agents ({:#x}, {:#x})",
                src.agent,
                dst.agent
            );
        }
        let srgb_pair = |a: Format, b: Format| {
            use image::{channel_order as o, channel_type as t};
            a.channel_type == t::UNORM_INT8
                && b.channel_type == t::UNORM_INT8
                && matches!(
                    (a.channel_order, b.channel_order),
                    (o::SRGBA, o::RGBA) | (o::RGBA, o::SRGBA)
                )
        };
        if src.desc.format != dst.desc.format && !srgb_pair(src.desc.format, dst.desc.format) {
            bail!(
                Status::IncompatibleArguments,
                "image formats differ: {:?} and {:?}",
                src.desc.format,
                dst.desc.format
            );
        }
        check_region(&src, so, r, "src_image")?;
        check_region(&dst, d_o, r, "dst_image")?;
        let row_bytes = u64::from(r.x) * u64::from(src.layout.info.element_bytes);
        for z in 0..u64::from(r.z) {
            for y in 0..u64::from(r.y) {
                let s = texel_address(&src, so.x.into(), u64::from(so.y) + y, u64::from(so.z) + z);
                let d = texel_address(
                    &dst,
                    d_o.x.into(),
                    u64::from(d_o.y) + y,
                    u64::from(d_o.z) + z,
                );
                copy_bytes(&st, d, s, row_bytes as usize)?;
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_ext_image_clear`: fills `image_region` of `image` with the colour at `data` (four
/// `float`s, `int32_t`s or `uint32_t`s by the format's channel type, components R, G, B, A;
/// one `float` for the depth orders, whose texels have one access component), converted to
/// the format as an image store converts it ([`hsa_core::image::pack_texel`]; for the sRGB
/// orders R, G and B are linear and stored sRGB-encoded, HSA PRM 1.2 §7.1.4.1.2, as ROCR
/// stores them), now.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for NULL pointers, a dead image, a
/// region outside it, or image memory the host cannot reach.
///
/// # Safety
/// `data` is NULL or readable for 16 bytes; `image_region` NULL or readable.
pub unsafe extern "C" fn hsa_ext_image_clear(
    agent: u64,
    image: u64,
    data: *const c_void,
    image_region: *const ImageRegion,
) -> HsaStatus {
    guard("hsa_ext_image_clear", || {
        let st = state::state()?;
        image_agent(&st, agent)?;
        non_null(data, "data")?;
        non_null(image_region, "image_region")?;
        let img = image_rec(&st, image, "image")?;
        // SAFETY: non-NULL, readable per the caller's contract.
        let region = unsafe { image_region.read_unaligned() };
        check_region(&img, region.offset, region.range, "image")?;
        let mut value = [0u32; 4];
        if is_depth(img.desc.format) {
            // One access component (the header: as many elements as the order has).
            // SAFETY: non-NULL, readable for 4 bytes per the caller's contract.
            value[0] = unsafe { data.cast::<u32>().read_unaligned() };
        } else {
            // SAFETY: non-NULL, readable for 16 bytes per the caller's contract.
            value = unsafe { data.cast::<[u32; 4]>().read_unaligned() };
        }
        if is_srgb(img.desc.format) {
            for v in &mut value[..3] {
                *v = linear_to_srgb(f32::from_bits(*v)).to_bits();
            }
        }
        let e = img.layout.info.element_bytes as usize;
        let texel = image::pack_texel(&img.layout.info, value);
        let row: Vec<u8> = texel[..e]
            .iter()
            .copied()
            .cycle()
            .take(e * region.range.x as usize)
            .collect();
        let row_addr = row.as_ptr() as u64;
        copy_rows(&st, &img, &region, row_addr, 0, 0, true)?;
        Ok(Status::Success)
    })
}

/// Whether `f` has a depth channel order (one access component).
fn is_depth(f: Format) -> bool {
    use image::channel_order as o;
    matches!(f.channel_order, o::DEPTH | o::DEPTH_STENCIL)
}

/// Whether `f` has an sRGB ("s-form") channel order.
fn is_srgb(f: Format) -> bool {
    use image::channel_order as o;
    matches!(f.channel_order, o::SRGB | o::SRGBX | o::SRGBA | o::SBGRA)
}

/// A linear colour component as its sRGB encoding, both in [0, 1] (HSA PRM 1.2 §7.1.4.1.2
/// "Standard RGB (s-Form)"): NaN is 0, values are clamped, then `12.92 l` below 0.0031308 and
/// `1.055 l^(1/2.4) - 0.055` above.
fn linear_to_srgb(l: f32) -> f32 {
    let l = if l.is_nan() {
        0.0
    } else {
        f64::from(l).clamp(0.0, 1.0)
    };
    let s = if l < 0.0031308 {
        12.92 * l
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    };
    s as f32
}

/// `hsa_ext_sampler_create`: a sampler of `sampler_descriptor` for `agent`; the handle is
/// the address of its sampler object (module doc).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` (handle 0, unknown, or an agent without images);
/// `INVALID_ARGUMENT` for NULL pointers; `HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED`
/// for modes outside `hsa_ext_image.h`'s; `OUT_OF_RESOURCES`.
///
/// # Safety
/// `sampler_descriptor` is NULL or readable; `sampler` NULL or writable.
pub unsafe extern "C" fn hsa_ext_sampler_create(
    agent: u64,
    sampler_descriptor: *const SamplerDesc,
    sampler: *mut u64,
) -> HsaStatus {
    guard("hsa_ext_sampler_create", || {
        let st = state::state()?;
        let a = image_agent(&st, agent)?;
        non_null(sampler_descriptor, "sampler_descriptor")?;
        non_null(sampler, "sampler")?;
        if !agent_has_images(a) {
            bail!(
                Status::InvalidAgent,
                "agent {} has no image support in this runtime",
                a.name()
            );
        }
        // SAFETY: non-NULL, readable per the caller's contract.
        let d = unsafe { sampler_descriptor.read_unaligned() };
        let words = image::sampler_object(&SamplerDescriptor {
            coordinate_mode: d.coordinate_mode,
            filter_mode: d.filter_mode,
            address_mode: d.address_mode,
        })?;
        let handle = new_object(&st, &words)?;
        lock(&st.ext.images.samplers).insert(handle, agent);
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { sampler.write_unaligned(handle) };
        Ok(Status::Success)
    })
}

/// `hsa_ext_sampler_destroy`: frees the sampler's object.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a handle that is not a live
/// sampler.
pub extern "C" fn hsa_ext_sampler_destroy(agent: u64, sampler: u64) -> HsaStatus {
    guard("hsa_ext_sampler_destroy", || {
        let st = state::state()?;
        image_agent(&st, agent)?;
        let Some(_) = lock(&st.ext.images.samplers).remove(&sampler) else {
            bail!(
                Status::InvalidArgument,
                "sampler {sampler:#x} is not a live sampler"
            );
        };
        st.rt().free(hsa_core::GpuVa(sampler))?;
        Ok(Status::Success)
    })
}

/// Signature of `hsa_ext_image_get_capability`.
type GetCapabilityFn = unsafe extern "C" fn(u64, u32, *const ImageFormat, *mut u32) -> u32;
/// Signature of `hsa_ext_image_data_get_info`.
type DataGetInfoFn =
    unsafe extern "C" fn(u64, *const ImageDescriptor, u32, *mut ImageDataInfo) -> u32;
/// Signature of `hsa_ext_image_create`.
type CreateFn =
    unsafe extern "C" fn(u64, *const ImageDescriptor, *const c_void, u32, *mut u64) -> u32;
/// Signature of `hsa_ext_image_copy`.
type CopyFn = unsafe extern "C" fn(u64, u64, *const Dim3, u64, *const Dim3, *const Dim3) -> u32;
/// Signature of `hsa_ext_image_import`.
type ImportFn =
    unsafe extern "C" fn(u64, *const c_void, usize, usize, u64, *const ImageRegion) -> u32;
/// Signature of `hsa_ext_image_export`.
type ExportFn =
    unsafe extern "C" fn(u64, u64, *mut c_void, usize, usize, *const ImageRegion) -> u32;
/// Signature of `hsa_ext_image_clear`.
type ClearFn = unsafe extern "C" fn(u64, u64, *const c_void, *const ImageRegion) -> u32;
/// Signature of `hsa_ext_sampler_create`.
type SamplerCreateFn = unsafe extern "C" fn(u64, *const SamplerDesc, *mut u64) -> u32;
/// Signature of `hsa_ext_image_get_capability_with_layout`.
type GetCapabilityLayoutFn =
    unsafe extern "C" fn(u64, u32, *const ImageFormat, u32, *mut u32) -> u32;
/// Signature of `hsa_ext_image_data_get_info_with_layout`.
type DataGetInfoLayoutFn = unsafe extern "C" fn(
    u64,
    *const ImageDescriptor,
    u32,
    u32,
    usize,
    usize,
    *mut ImageDataInfo,
) -> u32;
/// Signature of `hsa_ext_image_create_with_layout`.
type CreateLayoutFn = unsafe extern "C" fn(
    u64,
    *const ImageDescriptor,
    *const c_void,
    u32,
    u32,
    usize,
    usize,
    *mut u64,
) -> u32;

/// `hsa_ext_images_1_pfn_t`: the 13 functions in the header's order (the 1.00 table,
/// `hsa_ext_images_1_00_pfn_t`, is its first 10).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Images1 {
    /// `hsa_ext_image_get_capability`.
    pub get_capability: GetCapabilityFn,
    /// `hsa_ext_image_data_get_info`.
    pub data_get_info: DataGetInfoFn,
    /// `hsa_ext_image_create`.
    pub create: CreateFn,
    /// `hsa_ext_image_destroy`.
    pub destroy: extern "C" fn(u64, u64) -> u32,
    /// `hsa_ext_image_copy`.
    pub copy: CopyFn,
    /// `hsa_ext_image_import`.
    pub import: ImportFn,
    /// `hsa_ext_image_export`.
    pub export: ExportFn,
    /// `hsa_ext_image_clear`.
    pub clear: ClearFn,
    /// `hsa_ext_sampler_create`.
    pub sampler_create: SamplerCreateFn,
    /// `hsa_ext_sampler_destroy`.
    pub sampler_destroy: extern "C" fn(u64, u64) -> u32,
    /// `hsa_ext_image_get_capability_with_layout`.
    pub get_capability_with_layout: GetCapabilityLayoutFn,
    /// `hsa_ext_image_data_get_info_with_layout`.
    pub data_get_info_with_layout: DataGetInfoLayoutFn,
    /// `hsa_ext_image_create_with_layout`.
    pub create_with_layout: CreateLayoutFn,
}

/// The image table handed out by `hsa_system_get_major_extension_table`.
pub static IMAGES_1: Images1 = Images1 {
    get_capability: hsa_ext_image_get_capability,
    data_get_info: hsa_ext_image_data_get_info,
    create: hsa_ext_image_create,
    destroy: hsa_ext_image_destroy,
    copy: hsa_ext_image_copy,
    import: hsa_ext_image_import,
    export: hsa_ext_image_export,
    clear: hsa_ext_image_clear,
    sampler_create: hsa_ext_sampler_create,
    sampler_destroy: hsa_ext_sampler_destroy,
    get_capability_with_layout: hsa_ext_image_get_capability_with_layout,
    data_get_info_with_layout: hsa_ext_image_data_get_info_with_layout,
    create_with_layout: hsa_ext_image_create_with_layout,
};

const _: () = assert!(std::mem::size_of::<Images1>() == 13 * 8);

export!(
    hsa_ext_image_get_capability,
    hsa_ext_image_get_capability_with_layout,
    hsa_ext_image_data_get_info,
    hsa_ext_image_data_get_info_with_layout,
    hsa_ext_image_create,
    hsa_ext_image_create_with_layout,
    hsa_ext_image_import,
    hsa_ext_image_export,
    hsa_ext_image_copy,
    hsa_ext_image_clear,
    hsa_ext_image_destroy,
    hsa_ext_sampler_create,
    hsa_ext_sampler_destroy,
    hsa_amd_image_create,
    hsa_amd_image_get_info_max_dim,
);
