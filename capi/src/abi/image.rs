//! The image extension's types (`hsa_ext_image.h`, `HSA_EXTENSION_IMAGES` 1.0) and ROCR's
//! `hsa_amd_image_descriptor_t`; the function table `hsa_ext_images_1_pfn_t`.

#[allow(unused_imports)]
use super::*;
use core::ffi::c_void;

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
pub const LAYOUT_LINEAR: u32 = 1;

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
const _: () = assert!(core::mem::size_of::<ImageDescriptor>() == 48);
const _: () = assert!(core::mem::offset_of!(ImageDescriptor, format) == 40);

/// `hsa_ext_image_data_info_t`: size and alignment, bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ImageDataInfo {
    /// Bytes of memory the image needs.
    pub size: usize,
    /// Alignment of that memory, bytes.
    pub alignment: usize,
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

/// `hsa_ext_sampler_descriptor_v2_t` (ROCR 7's `hsa_ext_image.h`): 20 bytes, an addressing
/// mode per axis.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SamplerDescV2 {
    /// `hsa_ext_sampler_coordinate_mode32_t`.
    pub coordinate_mode: u32,
    /// `hsa_ext_sampler_filter_mode32_t`.
    pub filter_mode: u32,
    /// X, Y, Z.
    pub address_modes: [u32; 3],
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

/// Signature of `hsa_ext_image_get_capability`.
pub type GetCapabilityFn = unsafe extern "C" fn(u64, u32, *const ImageFormat, *mut u32) -> u32;

/// Signature of `hsa_ext_image_data_get_info`.
pub type DataGetInfoFn =
    unsafe extern "C" fn(u64, *const ImageDescriptor, u32, *mut ImageDataInfo) -> u32;

/// Signature of `hsa_ext_image_create`.
pub type CreateFn =
    unsafe extern "C" fn(u64, *const ImageDescriptor, *const c_void, u32, *mut u64) -> u32;

/// Signature of `hsa_ext_image_copy`.
pub type CopyFn = unsafe extern "C" fn(u64, u64, *const Dim3, u64, *const Dim3, *const Dim3) -> u32;

/// Signature of `hsa_ext_image_import`.
pub type ImportFn =
    unsafe extern "C" fn(u64, *const c_void, usize, usize, u64, *const ImageRegion) -> u32;

/// Signature of `hsa_ext_image_export`.
pub type ExportFn =
    unsafe extern "C" fn(u64, u64, *mut c_void, usize, usize, *const ImageRegion) -> u32;

/// Signature of `hsa_ext_image_clear`.
pub type ClearFn = unsafe extern "C" fn(u64, u64, *const c_void, *const ImageRegion) -> u32;

/// Signature of `hsa_ext_sampler_create`.
pub type SamplerCreateFn = unsafe extern "C" fn(u64, *const SamplerDesc, *mut u64) -> u32;

/// Signature of `hsa_ext_image_get_capability_with_layout`.
pub type GetCapabilityLayoutFn =
    unsafe extern "C" fn(u64, u32, *const ImageFormat, u32, *mut u32) -> u32;

/// Signature of `hsa_ext_image_data_get_info_with_layout`.
pub type DataGetInfoLayoutFn = unsafe extern "C" fn(
    u64,
    *const ImageDescriptor,
    u32,
    u32,
    usize,
    usize,
    *mut ImageDataInfo,
) -> u32;

/// Signature of `hsa_ext_image_create_with_layout`.
pub type CreateLayoutFn = unsafe extern "C" fn(
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
const _: () = assert!(core::mem::size_of::<Images1>() == 13 * 8);
