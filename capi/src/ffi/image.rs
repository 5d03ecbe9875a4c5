//! The HSA image extension (`hsa_ext_image.h`, `HSA_EXTENSION_IMAGES` 1.0; HSA Runtime
//! Programmer's Reference Manual 1.2 §3.3 "Images and Samplers") and ROCR's image additions
//! (`hsa_amd_image_create`, `hsa_amd_image_get_info_max_dim`), on gfx9 GPU agents other than
//! gfx94x (ROCR reports no image support there either).
//!
//! The images and samplers themselves, their registry and the host transfers are
//! `hsa_runtime::images` (the texel math `hsa_core::image`); these functions check and
//! convert the C arguments, in ROCR 5.2's order.
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

use std::ffi::c_void;

use hsa_core::image::region::{check_region, is_depth, Region};
use hsa_core::image::{self, Descriptor, Format, Geometry, SamplerDescriptor};
use hsa_core::runtime::Agent;
use hsa_core::{bail, Error, Status};
use hsa_runtime::images::{self, ForeignLayout, ImageHandle, SamplerHandle};

use super::agent::agent_of;
use super::{guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{self, State};

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

/// The image attributes of `hsa_agent_get_info` (`0x3000..=0x300C`): maximum sizes per
/// geometry (2 or 3 `uint32_t`s for the 2D and 3D ones), 128 read-only and 64 read-write
/// image arguments, 16 samplers (ROCR's figures), a 256-byte linear row pitch alignment; all
/// 0 on an agent without images. `None` for any other attribute.
///
/// # Safety
/// `value` is as large as the attribute's type.
pub(crate) unsafe fn agent_info(agent: &Agent, attribute: u32, value: *mut c_void) -> Option<()> {
    let yes = images::agent_has_images(agent);
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

/// `hsa_ext_image_format_t` as the core's format.
fn format(f: &ImageFormat) -> Format {
    Format {
        channel_type: f.channel_type,
        channel_order: f.channel_order,
    }
}

/// `hsa_ext_image_descriptor_t` as the core's descriptor.
///
/// # Errors
/// `Status::InvalidArgument` for a geometry outside `hsa_ext_image_geometry_t`.
fn core_descriptor(d: &ImageDescriptor) -> Result<Descriptor, Error> {
    Ok(Descriptor {
        geometry: Geometry::from_raw(d.geometry)?,
        width: d.width as u64,
        height: d.height as u64,
        depth: d.depth as u64,
        array_size: d.array_size as u64,
        format: format(&d.format),
    })
}

/// `hsa_dim3_t` as x, y, z.
fn dim(d: &Dim3) -> [u32; 3] {
    [d.x, d.y, d.z]
}

/// `hsa_ext_image_region_t` as the core's region.
fn region(r: &ImageRegion) -> Region {
    Region {
        offset: dim(&r.offset),
        range: dim(&r.range),
    }
}

/// ROCR's check of an access permission: RO (1), WO (2) or RW (3).
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
    let cap = images::capability(a, g, format(&f));
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
    let l = images::data_layout(a, &d, pitches.map(|(r, s)| (r as u64, s as u64)))?;
    let info = ImageDataInfo {
        size: l.size as usize,
        alignment: l.alignment as usize,
    };
    // SAFETY: non-NULL, writable per the caller's contract.
    unsafe { image_data_info.write_unaligned(info) };
    Ok(Status::Success)
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
    let pitches = pitches.map(|(r, s)| (r as u64, s as u64));
    let handle = st
        .services()
        .images()
        .create(a, &d, image_data as u64, pitches)?;
    // SAFETY: non-NULL, writable per the caller's contract.
    unsafe { image.write_unaligned(handle.0) };
    Ok(Status::Success)
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
        // SAFETY: non-NULL, readable per the caller's contract.
        let meta = unsafe { image_layout.read_unaligned() };
        // SAFETY: non-NULL, readable per the caller's contract.
        let d = core_descriptor(&unsafe { image_descriptor.read_unaligned() })?;
        let foreign = ForeignLayout {
            version: meta.version,
            device_id: meta.device_id,
            words: meta.data,
        };
        let handle =
            st.services()
                .images()
                .create_from_layout(a, &d, &foreign, image_data as u64)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { image.write_unaligned(handle.0) };
        Ok(Status::Success)
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
        st.services().images().destroy(ImageHandle(image))?;
        Ok(Status::Success)
    })
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
    let names = if to_image {
        ("src_memory", "dst_image")
    } else {
        ("dst_memory", "src_image")
    };
    non_null(memory as *const c_void, names.0)?;
    non_null(image_region, "image_region")?;
    let images = st.services().images();
    images.image(ImageHandle(image), names.1)?;
    // SAFETY: non-NULL, readable per the caller's contract.
    let r = unsafe { image_region.read_unaligned() };
    // SAFETY: the caller's contract: the memory holds the region at its pitches.
    unsafe {
        images.transfer(
            ImageHandle(image),
            memory,
            row_pitch as u64,
            slice_pitch as u64,
            &region(&r),
            to_image,
            names,
        )
    }?;
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
        // SAFETY: non-NULL, readable per the caller's contract.
        let (so, d_o, r) = unsafe {
            (
                src_offset.read_unaligned(),
                dst_offset.read_unaligned(),
                range.read_unaligned(),
            )
        };
        st.services().images().copy(
            ImageHandle(src_image),
            dim(&so),
            ImageHandle(dst_image),
            dim(&d_o),
            dim(&r),
        )?;
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
        let images = st.services().images();
        let img = images.image(ImageHandle(image), "image")?;
        // SAFETY: non-NULL, readable per the caller's contract.
        let r = region(&unsafe { image_region.read_unaligned() });
        check_region(&img.desc, &img.layout, r.offset, r.range, "image")?;
        let mut value = [0u32; 4];
        if is_depth(img.desc.format) {
            // One access component (the header: as many elements as the order has).
            // SAFETY: non-NULL, readable for 4 bytes per the caller's contract.
            value[0] = unsafe { data.cast::<u32>().read_unaligned() };
        } else {
            // SAFETY: non-NULL, readable for 16 bytes per the caller's contract.
            value = unsafe { data.cast::<[u32; 4]>().read_unaligned() };
        }
        images.clear(ImageHandle(image), value, &r)?;
        Ok(Status::Success)
    })
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
        if !images::agent_has_images(a) {
            bail!(
                Status::InvalidAgent,
                "agent {} has no image support in this runtime",
                a.name()
            );
        }
        // SAFETY: non-NULL, readable per the caller's contract.
        let d = unsafe { sampler_descriptor.read_unaligned() };
        let handle = st.services().images().create_sampler(
            a,
            &SamplerDescriptor {
                coordinate_mode: d.coordinate_mode,
                filter_mode: d.filter_mode,
                address_mode: d.address_mode,
            },
        )?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { sampler.write_unaligned(handle.0) };
        Ok(Status::Success)
    })
}

/// `hsa_ext_sampler_create_v2` (ROCR 7): as [`hsa_ext_sampler_create`], with an addressing
/// mode per axis (`hsa_ext_sampler_descriptor_v2_t`).
///
/// # Errors (as status)
/// As [`hsa_ext_sampler_create`], naming the first unsupported axis mode.
///
/// # Safety
/// `sampler_descriptor` is NULL or readable (20 bytes); `sampler` NULL or writable.
pub unsafe extern "C" fn hsa_ext_sampler_create_v2(
    agent: u64,
    sampler_descriptor: *const SamplerDescV2,
    sampler: *mut u64,
) -> HsaStatus {
    guard("hsa_ext_sampler_create_v2", || {
        let st = state::state()?;
        let a = image_agent(&st, agent)?;
        non_null(sampler_descriptor, "sampler_descriptor")?;
        non_null(sampler, "sampler")?;
        // SAFETY: non-NULL, readable per the caller's contract.
        let d = unsafe { sampler_descriptor.read_unaligned() };
        let handle = st.services().images().create_sampler_per_axis(
            a,
            &SamplerDescriptor {
                coordinate_mode: d.coordinate_mode,
                filter_mode: d.filter_mode,
                address_mode: d.address_modes[0],
            },
            d.address_modes,
        )?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { sampler.write_unaligned(handle.0) };
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
        st.services()
            .images()
            .destroy_sampler(SamplerHandle(sampler))?;
        Ok(Status::Success)
    })
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
    hsa_ext_sampler_create_v2,
    hsa_ext_sampler_destroy,
    hsa_amd_image_create,
    hsa_amd_image_get_info_max_dim,
);
