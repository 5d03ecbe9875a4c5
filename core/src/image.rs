//! Images and samplers of the HSA image extension on gfx9 (HSA Runtime Programmer's Reference
//! Manual 1.2, chapter 3 "HSA Extensions", "Images and Samplers"; `hsa_ext_image.h`): which
//! formats a gfx9 agent supports, the linear data layout of an image's memory, and the
//! hardware descriptors a kernel reads — the image resource (T#, "Vega ISA" §8.2.1 "Image
//! Resource", `SQ_IMG_RSRC_WORD0..7`), the buffer resource (V#, §9.1.5) of a 1DB image, and
//! the sampler (S#, §8.2.2 "Image Sampler", `SQ_IMG_SAMP_WORD0..3`).
//!
//! Every image here is linear (`SW_MODE` 0): rows of texels `row_pitch` bytes apart, slices
//! (array layers or 3D depth) `slice_pitch` bytes apart, a row pitch that is a multiple of 256
//! bytes (the base alignment and pitch granularity ROCR and ROCclr use for gfx9 images,
//! `imagePitchAlignment_`). The opaque layout is this same linear layout, which makes
//! `hsa_ext_image_import`/`export` plain rectangle copies and lets the host read an image.
//! The gfx9 formats are those of ROCR's gfx9 image table: 8-, 16- and 32-bit channels in 1,
//! 2 or 4 channel orders, the packed 5-5-5/5-6-5/10-10-10 RGB forms, 8-bit sRGBA (read only),
//! and 16-bit unorm / 32-bit float depth (read and write, not read-write).
//!
//! Besides the 8-dword T# the image object a kernel's handle points to carries three more
//! dwords that ROCm's device library reads for the OpenCL queries: the channel type (dword
//! 8), the channel order (dword 9) and the width (dword 10), as ROCR writes them
//! (`HSA_IMAGE_OBJECT_SIZE_DWORD` 12).

use crate::status::{Error, Result, Status};
use crate::wire::gfx9_rsrc::{
    img_type, num_format, sq_sel as sel, BufferRsrc, ImageRsrc, SamplerRsrc,
};
use crate::{bail, error};

pub mod region;
pub use region::Region;

/// `hsa_ext_image_geometry_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Geometry {
    /// `HSA_EXT_IMAGE_GEOMETRY_1D`.
    D1 = 0,
    /// `HSA_EXT_IMAGE_GEOMETRY_2D`.
    D2 = 1,
    /// `HSA_EXT_IMAGE_GEOMETRY_3D`.
    D3 = 2,
    /// `HSA_EXT_IMAGE_GEOMETRY_1DA`: an array of 1D images.
    D1Array = 3,
    /// `HSA_EXT_IMAGE_GEOMETRY_2DA`: an array of 2D images.
    D2Array = 4,
    /// `HSA_EXT_IMAGE_GEOMETRY_1DB`: a 1D image over a buffer.
    D1Buffer = 5,
    /// `HSA_EXT_IMAGE_GEOMETRY_2DDEPTH`.
    D2Depth = 6,
    /// `HSA_EXT_IMAGE_GEOMETRY_2DADEPTH`.
    D2ArrayDepth = 7,
}

impl Geometry {
    /// The geometry of a raw `hsa_ext_image_geometry_t`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the value when it is not one of `hsa_ext_image.h`'s eight.
    pub fn from_raw(raw: u32) -> Result<Geometry> {
        Ok(match raw {
            0 => Geometry::D1,
            1 => Geometry::D2,
            2 => Geometry::D3,
            3 => Geometry::D1Array,
            4 => Geometry::D2Array,
            5 => Geometry::D1Buffer,
            6 => Geometry::D2Depth,
            7 => Geometry::D2ArrayDepth,
            other => bail!(
                Status::InvalidArgument,
                "image geometry {other} is not an hsa_ext_image_geometry_t"
            ),
        })
    }

    /// Whether the geometry is an array of layers (`array_size` counts them).
    pub fn is_array(self) -> bool {
        matches!(
            self,
            Geometry::D1Array | Geometry::D2Array | Geometry::D2ArrayDepth
        )
    }

    /// Whether texels have a y coordinate (`height` counts rows).
    pub fn has_height(self) -> bool {
        matches!(
            self,
            Geometry::D2
                | Geometry::D3
                | Geometry::D2Array
                | Geometry::D2Depth
                | Geometry::D2ArrayDepth
        )
    }

    /// The largest width, height, depth and layer count of an image of this geometry on gfx9
    /// (what `HSA_EXT_AGENT_INFO_IMAGE_*_MAX_ELEMENTS` and `..._ARRAY_MAX_LAYERS` report):
    /// the T#'s 14-bit WIDTH-1 and HEIGHT-1 fields give 16384, its 13-bit DEPTH-1 8192 slices
    /// or layers; a 1DB image is bounded by its buffer resource's 32-bit record count.
    /// Unused dimensions are 1, as ROCR reports them.
    pub fn max_dims(self) -> [u32; 4] {
        const W: u32 = 16384;
        const L: u32 = 8192;
        match self {
            Geometry::D1 => [W, 1, 1, 1],
            Geometry::D2 | Geometry::D2Depth => [W, W, 1, 1],
            Geometry::D3 => [W, W, L, 1],
            Geometry::D1Array => [W, 1, 1, L],
            Geometry::D2Array | Geometry::D2ArrayDepth => [W, W, 1, L],
            Geometry::D1Buffer => [u32::MAX, 1, 1, 1],
        }
    }

    /// The T# `TYPE` (`SQ_RSRC_IMG_*`) of the geometry; the V# of a 1DB image has none.
    fn resource_type(self) -> u32 {
        match self {
            Geometry::D1 | Geometry::D1Buffer => img_type::D1,
            Geometry::D2 | Geometry::D2Depth => img_type::D2,
            Geometry::D3 => img_type::D3,
            Geometry::D1Array => img_type::D1_ARRAY,
            Geometry::D2Array | Geometry::D2ArrayDepth => img_type::D2_ARRAY,
        }
    }
}

/// `hsa_ext_image_capability_t` bits.
pub mod capability {
    /// `HSA_EXT_IMAGE_CAPABILITY_READ_ONLY`.
    pub const READ_ONLY: u32 = 0x1;
    /// `HSA_EXT_IMAGE_CAPABILITY_WRITE_ONLY`.
    pub const WRITE_ONLY: u32 = 0x2;
    /// `HSA_EXT_IMAGE_CAPABILITY_READ_WRITE`.
    pub const READ_WRITE: u32 = 0x4;
}

/// `hsa_ext_image_channel_type_t` values.
pub mod channel_type {
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_SNORM_INT8`.
    pub const SNORM_INT8: u32 = 0;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_SNORM_INT16`.
    pub const SNORM_INT16: u32 = 1;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8`.
    pub const UNORM_INT8: u32 = 2;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT16`.
    pub const UNORM_INT16: u32 = 3;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT24`.
    pub const UNORM_INT24: u32 = 4;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_SHORT_555`.
    pub const UNORM_SHORT_555: u32 = 5;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_SHORT_565`.
    pub const UNORM_SHORT_565: u32 = 6;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_SHORT_101010`.
    pub const UNORM_SHORT_101010: u32 = 7;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_SIGNED_INT8`.
    pub const SIGNED_INT8: u32 = 8;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_SIGNED_INT16`.
    pub const SIGNED_INT16: u32 = 9;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_SIGNED_INT32`.
    pub const SIGNED_INT32: u32 = 10;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT8`.
    pub const UNSIGNED_INT8: u32 = 11;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT16`.
    pub const UNSIGNED_INT16: u32 = 12;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT32`.
    pub const UNSIGNED_INT32: u32 = 13;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_HALF_FLOAT`.
    pub const HALF_FLOAT: u32 = 14;
    /// `HSA_EXT_IMAGE_CHANNEL_TYPE_FLOAT`.
    pub const FLOAT: u32 = 15;
}

/// `hsa_ext_image_channel_order_t` values.
pub mod channel_order {
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_A`.
    pub const A: u32 = 0;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_R`.
    pub const R: u32 = 1;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RX`.
    pub const RX: u32 = 2;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RG`.
    pub const RG: u32 = 3;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RGX`.
    pub const RGX: u32 = 4;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RA`.
    pub const RA: u32 = 5;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RGB`.
    pub const RGB: u32 = 6;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RGBX`.
    pub const RGBX: u32 = 7;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA`.
    pub const RGBA: u32 = 8;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_BGRA`.
    pub const BGRA: u32 = 9;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_ARGB`.
    pub const ARGB: u32 = 10;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_ABGR`.
    pub const ABGR: u32 = 11;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_SRGB`.
    pub const SRGB: u32 = 12;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_SRGBX`.
    pub const SRGBX: u32 = 13;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_SRGBA`.
    pub const SRGBA: u32 = 14;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_SBGRA`.
    pub const SBGRA: u32 = 15;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_INTENSITY`.
    pub const INTENSITY: u32 = 16;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_LUMINANCE`.
    pub const LUMINANCE: u32 = 17;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_DEPTH`.
    pub const DEPTH: u32 = 18;
    /// `HSA_EXT_IMAGE_CHANNEL_ORDER_DEPTH_STENCIL`.
    pub const DEPTH_STENCIL: u32 = 19;
}

/// `hsa_ext_image_format_t`: a channel type and a channel order (raw values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// `hsa_ext_image_channel_type_t`.
    pub channel_type: u32,
    /// `hsa_ext_image_channel_order_t`.
    pub channel_order: u32,
}

/// How a gfx9 agent stores an image format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatInfo {
    /// `hsa_ext_image_capability_t` mask of the accesses supported.
    pub capability: u32,
    /// Bytes of one texel.
    pub element_bytes: u32,
    /// `IMG_DATA_FORMAT` (`BUF_DATA_FORMAT` for a 1DB image; the same numbers).
    pub data_format: u32,
    /// `IMG_NUM_FORMAT`.
    pub num_format: u32,
    /// The destination selects X, Y, Z, W (`SQ_SEL_*`) mapping stored channels to the
    /// channel order's components.
    pub dst_sel: [u8; 4],
    /// Stored channels per texel (3 for the packed RGB formats, whose widths are
    /// [`FormatInfo::packed`]).
    pub channels: u32,
    /// Bits of each stored channel, low first, for the packed RGB formats (5-5-5-1,
    /// 5-6-5, 10-10-10-2); `None` for formats of equal-width channels.
    pub packed: Option<[u32; 4]>,
}

impl FormatInfo {
    /// Bits of each stored channel of an equal-width format.
    pub fn channel_bits(&self) -> u32 {
        (self.element_bytes * 8) / self.channels
    }
}

/// How a gfx9 agent stores `format` in an image of `geometry`, or `None` when it does not
/// support it (capability 0): the table ROCR's gfx9 image library reports (see the module
/// doc), with depth orders only in the depth geometries, and neither sRGB nor the 5-5-5/5-6-5
/// forms in a 1DB image (the buffer path cannot convert them).
pub fn format_info(format: Format, geometry: Geometry) -> Option<FormatInfo> {
    use channel_order as o;
    use channel_type as t;
    let order = format.channel_order;
    let ty = format.channel_type;
    let depth_geometry = matches!(geometry, Geometry::D2Depth | Geometry::D2ArrayDepth);
    let depth_order = matches!(order, o::DEPTH | o::DEPTH_STENCIL);
    if depth_geometry && !depth_order {
        return None;
    }
    if geometry == Geometry::D1Buffer
        && (matches!(order, o::SRGB | o::SRGBX | o::SRGBA | o::SBGRA)
            || matches!(ty, t::UNORM_SHORT_555 | t::UNORM_SHORT_565))
    {
        return None;
    }
    let rw = capability::READ_ONLY | capability::WRITE_ONLY | capability::READ_WRITE;

    // The packed RGB forms: stored channels are B, G, R (low to high) and an unused top.
    if order == o::RGB {
        let (bytes, data_format, bits) = match ty {
            t::UNORM_SHORT_555 => (2, 17, [5, 5, 5, 1]),
            t::UNORM_SHORT_565 => (2, 16, [5, 6, 5, 0]),
            t::UNORM_SHORT_101010 => (4, 9, [10, 10, 10, 2]),
            _ => return None,
        };
        return Some(FormatInfo {
            capability: rw,
            element_bytes: bytes,
            data_format,
            num_format: num_format::UNORM,
            dst_sel: [sel::Z, sel::Y, sel::X, sel::ONE],
            channels: 3,
            packed: Some(bits),
        });
    }

    // Bits and numeric format of one channel.
    let (bits, num) = match ty {
        t::SNORM_INT8 => (8, num_format::SNORM),
        t::SNORM_INT16 => (16, num_format::SNORM),
        t::UNORM_INT8 => (8, num_format::UNORM),
        t::UNORM_INT16 => (16, num_format::UNORM),
        t::SIGNED_INT8 => (8, num_format::SINT),
        t::SIGNED_INT16 => (16, num_format::SINT),
        t::SIGNED_INT32 => (32, num_format::SINT),
        t::UNSIGNED_INT8 => (8, num_format::UINT),
        t::UNSIGNED_INT16 => (16, num_format::UINT),
        t::UNSIGNED_INT32 => (32, num_format::UINT),
        t::HALF_FLOAT => (16, num_format::FLOAT),
        t::FLOAT => (32, num_format::FLOAT),
        _ => return None,
    };
    let integer = matches!(num, num_format::SINT | num_format::UINT);
    let eight_bit = bits == 8;
    let (channels, dst_sel, capability) = match order {
        o::A => (1, [sel::ZERO, sel::ZERO, sel::ZERO, sel::X], rw),
        o::R => (1, [sel::X, sel::ZERO, sel::ZERO, sel::ONE], rw),
        o::RG => (2, [sel::X, sel::Y, sel::ZERO, sel::ONE], rw),
        o::RA => (2, [sel::X, sel::ZERO, sel::ZERO, sel::Y], rw),
        o::RGBA => (4, [sel::X, sel::Y, sel::Z, sel::W], rw),
        o::BGRA if eight_bit => (4, [sel::Z, sel::Y, sel::X, sel::W], rw),
        o::ARGB if eight_bit => (4, [sel::Y, sel::Z, sel::W, sel::X], rw),
        o::INTENSITY if !integer => (1, [sel::X, sel::X, sel::X, sel::X], rw),
        o::LUMINANCE if !integer => (1, [sel::X, sel::X, sel::X, sel::ONE], rw),
        o::SRGBA if ty == t::UNORM_INT8 => {
            (4, [sel::X, sel::Y, sel::Z, sel::W], capability::READ_ONLY)
        }
        o::DEPTH if matches!(ty, t::UNORM_INT16 | t::FLOAT) => (
            1,
            [sel::X, sel::ZERO, sel::ZERO, sel::ZERO],
            capability::READ_ONLY | capability::WRITE_ONLY,
        ),
        _ => return None,
    };
    let data_format = match (channels, bits) {
        (1, 8) => 1,
        (1, 16) => 2,
        (1, _) => 4,
        (2, 8) => 3,
        (2, 16) => 5,
        (2, _) => 11,
        (_, 8) => 10,
        (_, 16) => 12,
        (_, _) => 14,
    };
    Some(FormatInfo {
        capability,
        element_bytes: channels * bits / 8,
        data_format,
        num_format: if order == o::SRGBA {
            num_format::SRGB
        } else {
            num
        },
        dst_sel,
        channels,
        packed: None,
    })
}

/// `hsa_ext_image_descriptor_t`: geometry, size in texels and format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The geometry.
    pub geometry: Geometry,
    /// Width, texels.
    pub width: u64,
    /// Height, texels (rows); 0 or 1 for geometries without a y coordinate.
    pub height: u64,
    /// Depth of a 3D image, slices; 0 otherwise.
    pub depth: u64,
    /// Layers of an array geometry; 0 otherwise.
    pub array_size: u64,
    /// The format.
    pub format: Format,
}

/// The linear data layout of an image's memory (`hsa_ext_image_data_info_t` plus pitches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// How the format is stored.
    pub info: FormatInfo,
    /// Bytes from one row to the next.
    pub row_pitch: u64,
    /// Bytes from one slice (layer or 3D depth slice) to the next.
    pub slice_pitch: u64,
    /// Rows per slice.
    pub rows: u64,
    /// Slices.
    pub slices: u64,
    /// Bytes of memory the image needs.
    pub size: u64,
    /// Alignment its memory needs, bytes.
    pub alignment: u64,
}

/// The base alignment and row-pitch granularity of every image, bytes.
pub const IMAGE_ALIGNMENT: u64 = 256;

/// Dwords of the object an image handle points to: the T# (or V#) and three dwords for the
/// device library (module doc).
pub const IMAGE_OBJECT_DWORDS: usize = 12;

/// Dwords of a sampler object: the S# and four unused dwords (ROCR's
/// `HSA_SAMPLER_OBJECT_SIZE_DWORD` 8).
pub const SAMPLER_OBJECT_DWORDS: usize = 8;

fn align_up(v: u64, a: u64) -> Option<u64> {
    v.checked_add(a - 1).map(|x| x / a * a)
}

/// The layout of an image of `desc`, with the application's row and slice pitches (0: the
/// default) for `hsa_ext_image_data_get_info_with_layout` / `_create_with_layout`.
///
/// # Errors
/// - `HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED`: the format is not supported in this
///   geometry ([`format_info`]).
/// - `HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED`: a width of 0, a height of 0 in a
///   geometry with rows, a 3D image of depth 0, or a dimension above
///   [`Geometry::max_dims`] (1 for a dimension the geometry does not use; or a 1DB image
///   above 4 GiB).
/// - `HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED`: a row pitch below a row's bytes, not a
///   multiple of 256 or above the T#'s 65536-texel PITCH; a slice pitch other than row pitch
///   times rows (gfx9's linear slices follow each other).
pub fn layout(desc: &Descriptor, row_pitch: u64, slice_pitch: u64) -> Result<Layout> {
    let g = desc.geometry;
    let Some(info) = format_info(desc.format, g) else {
        bail!(
            Status::ImageFormatUnsupported,
            "image format (channel type {}, channel order {}) is not supported in geometry {:?}",
            desc.format.channel_type,
            desc.format.channel_order,
            g
        );
    };
    let [max_w, max_h, max_d, max_l] = g.max_dims().map(u64::from);
    let too_big = |what: &str, v: u64, max: u64| -> Error {
        error!(
            Status::ImageSizeUnsupported,
            "image {what} {v} is outside 1..={max} for geometry {g:?}"
        )
    };
    if desc.width == 0 || desc.width > max_w {
        return Err(too_big("width", desc.width, max_w));
    }
    // A dimension the geometry does not use must be 0 (`hsa_ext_image_descriptor_t`); ROCR
    // takes 1 too (its maximum for it) and so does this.
    for (what, v, max) in [
        ("height", desc.height, max_h),
        ("depth", desc.depth, max_d),
        ("array size", desc.array_size, max_l),
    ] {
        if v > max {
            bail!(
                Status::ImageSizeUnsupported,
                "image {what} {v} is above {max} for geometry {g:?}"
            );
        }
    }
    let rows = if g.has_height() {
        if desc.height == 0 || desc.height > max_h {
            return Err(too_big("height", desc.height, max_h));
        }
        desc.height
    } else {
        1
    };
    let slices = if g == Geometry::D3 {
        if desc.depth == 0 || desc.depth > max_d {
            return Err(too_big("depth", desc.depth, max_d));
        }
        desc.depth
    } else if g.is_array() {
        if desc.array_size == 0 || desc.array_size > max_l {
            return Err(too_big("array size", desc.array_size, max_l));
        }
        desc.array_size
    } else {
        1
    };
    let e = u64::from(info.element_bytes);
    let row_bytes = desc.width * e;
    if g == Geometry::D1Buffer {
        if row_bytes > u64::from(u32::MAX) {
            bail!(
                Status::ImageSizeUnsupported,
                "1DB image of {} texels of {e} bytes is above the buffer resource's 4 GiB",
                desc.width
            );
        }
        return Ok(Layout {
            info,
            row_pitch: row_bytes,
            slice_pitch: row_bytes,
            rows: 1,
            slices: 1,
            size: align_up(row_bytes, IMAGE_ALIGNMENT).unwrap_or(row_bytes),
            alignment: IMAGE_ALIGNMENT,
        });
    }
    let row_pitch = if row_pitch == 0 {
        align_up(row_bytes, IMAGE_ALIGNMENT).unwrap_or(u64::MAX)
    } else {
        row_pitch
    };
    if row_pitch < row_bytes || row_pitch % IMAGE_ALIGNMENT != 0 || row_pitch / e > 65536 {
        bail!(
            Status::ImagePitchUnsupported,
            "row pitch {row_pitch} bytes: a linear gfx9 image of {} texels of {e} bytes needs a \
             multiple of {IMAGE_ALIGNMENT} from {row_bytes} to {} bytes",
            desc.width,
            65536 * e
        );
    }
    let natural_slice = row_pitch * rows;
    if slice_pitch != 0 && slice_pitch != natural_slice {
        bail!(
            Status::ImagePitchUnsupported,
            "slice pitch {slice_pitch} bytes: a linear gfx9 image's slices follow each other, \
             {natural_slice} bytes apart (row pitch {row_pitch} x {rows} rows)"
        );
    }
    Ok(Layout {
        info,
        row_pitch,
        slice_pitch: natural_slice,
        rows,
        slices,
        size: natural_slice * slices,
        alignment: IMAGE_ALIGNMENT,
    })
}

/// The image object of an image of `desc` with `layout` whose memory starts at device address
/// `address` (a multiple of [`IMAGE_ALIGNMENT`]): the T# (a V# for 1DB) and the three dwords
/// of the module doc.
pub fn image_object(
    desc: &Descriptor,
    layout: &Layout,
    address: u64,
) -> [u32; IMAGE_OBJECT_DWORDS] {
    let info = &layout.info;
    let mut w = [0u32; IMAGE_OBJECT_DWORDS];
    if desc.geometry == Geometry::D1Buffer {
        // V# (Vega ISA §9.1.5 "Vector Memory Buffer Instructions", buffer resource):
        // NUM_RECORDS in bytes (the layout checked they fit 32 bits).
        BufferRsrc {
            base: address,
            stride: info.element_bytes,
            num_records: layout.row_pitch as u32,
            dst_sel: info.dst_sel,
            num_format: info.num_format,
            data_format: info.data_format,
            ..BufferRsrc::default()
        }
        .emit(&mut w);
    } else {
        // T# (Vega ISA §8.2.1 "Image Resource"): BASE_LEVEL 0, LAST_LEVEL 0, SW_MODE 0
        // (linear).
        let depth = match desc.geometry {
            Geometry::D3 => desc.depth,
            g if g.is_array() => desc.array_size,
            _ => 1,
        };
        ImageRsrc {
            base: address,
            data_format: info.data_format,
            num_format: info.num_format,
            width: desc.width as u32,
            height: layout.rows as u32,
            depth: depth as u32,
            pitch: (layout.row_pitch / u64::from(info.element_bytes)) as u32,
            dst_sel: info.dst_sel,
            ty: desc.geometry.resource_type(),
            ..ImageRsrc::default()
        }
        .emit(&mut w);
    }
    w[8] = desc.format.channel_type;
    w[9] = desc.format.channel_order;
    w[10] = desc.width as u32;
    w
}

/// `hsa_ext_sampler_descriptor_t` (raw values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplerDescriptor {
    /// `hsa_ext_sampler_coordinate_mode_t`: 0 unnormalized, 1 normalized.
    pub coordinate_mode: u32,
    /// `hsa_ext_sampler_filter_mode_t`: 0 nearest, 1 linear.
    pub filter_mode: u32,
    /// `hsa_ext_sampler_addressing_mode_t`: 0 undefined, 1 clamp to edge, 2 clamp to
    /// border, 3 repeat, 4 mirrored repeat.
    pub address_mode: u32,
}

/// The sampler object (S#, Vega ISA §8.2.2 "Image Sampler", then four zero dwords) of `desc`:
/// the addressing mode in CLAMP_X/Y/Z (repeat for "undefined"), FORCE_UNNORMALIZED for
/// unnormalized coordinates, point or bilinear XY filters, no mip filter, MAX_LOD 4095
/// (every level), a transparent-black border.
///
/// # Errors
/// `HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED` naming a mode outside
/// `hsa_ext_image.h`'s values.
pub fn sampler_object(desc: &SamplerDescriptor) -> Result<[u32; SAMPLER_OBJECT_DWORDS]> {
    sampler_object_per_axis(desc, [desc.address_mode; 3])
}

/// The sampler object of `desc` with one addressing mode per axis (`address_modes` X, Y, Z,
/// `hsa_ext_sampler_descriptor_v2_t` of ROCR 7's `hsa_ext_sampler_create_v2`; `desc`'s own
/// `address_mode` is not used), each placed in its CLAMP_X/Y/Z field as
/// [`sampler_object`] places the one mode.
///
/// # Errors
/// As [`sampler_object`], naming the first mode outside `hsa_ext_image.h`'s values.
pub fn sampler_object_per_axis(
    desc: &SamplerDescriptor,
    address_modes: [u32; 3],
) -> Result<[u32; SAMPLER_OBJECT_DWORDS]> {
    // SQ_TEX_CLAMP: wrap 0, mirror 1, clamp to last texel 2, clamp to border 6.
    let clamp_of = |mode: u32| -> Result<u8> {
        Ok(match mode {
            0 | 3 => 0,
            1 => 2,
            2 => 6,
            4 => 1,
            other => bail!(
                Status::SamplerDescriptorUnsupported,
                "sampler addressing mode {other} is not an hsa_ext_sampler_addressing_mode_t"
            ),
        })
    };
    let clamp = [
        clamp_of(address_modes[0])?,
        clamp_of(address_modes[1])?,
        clamp_of(address_modes[2])?,
    ];
    let unnormalized = match desc.coordinate_mode {
        0 => true,
        1 => false,
        other => bail!(
            Status::SamplerDescriptorUnsupported,
            "sampler coordinate mode {other} is not an hsa_ext_sampler_coordinate_mode_t"
        ),
    };
    // SQ_TEX_XY_FILTER: point 0, bilinear 1.
    let filter = match desc.filter_mode {
        0 => 0,
        1 => 1,
        other => bail!(
            Status::SamplerDescriptorUnsupported,
            "sampler filter mode {other} is not an hsa_ext_sampler_filter_mode_t"
        ),
    };
    let mut w = [0u32; SAMPLER_OBJECT_DWORDS];
    // BORDER_COLOR_TYPE 0: transparent black.
    SamplerRsrc {
        clamp,
        force_unnormalized: unnormalized,
        max_lod: 4095,
        xy_mag_filter: filter,
        xy_min_filter: filter,
        ..SamplerRsrc::default()
    }
    .emit(&mut w);
    Ok(w)
}

/// The bytes of one texel of `info`, from the fill value of `hsa_ext_image_clear`: four
/// `float`s for normalized and float formats, four `int32_t`s for signed and four
/// `uint32_t`s for unsigned integer formats (HSA image extension, `hsa_ext_image_clear`),
/// given as the components R, G, B, A (the A order stores A, the depth order R), converted as a kernel's image store converts them:
/// normalized values clamped and rounded to nearest, integers saturated, half floats rounded
/// to nearest even.
pub fn pack_texel(info: &FormatInfo, value: [u32; 4]) -> [u8; 16] {
    let mut out = [0u8; 16];
    // The component each stored channel holds: invert the destination selects.
    let mut stored = [0u32; 4];
    for (ch, slot) in stored.iter_mut().enumerate().take(info.channels as usize) {
        let comp = info
            .dst_sel
            .iter()
            .position(|&s| s == sel::X + ch as u8)
            .unwrap_or(0);
        *slot = value[comp];
    }
    if let Some(bits) = info.packed {
        let mut word = 0u32;
        let mut shift = 0;
        for (ch, &b) in bits.iter().enumerate().take(3) {
            word |= unorm(f32::from_bits(stored[ch]), b) << shift;
            shift += b;
        }
        out[..info.element_bytes as usize]
            .copy_from_slice(&word.to_le_bytes()[..info.element_bytes as usize]);
        return out;
    }
    let bits = info.channel_bits();
    let bytes = (bits / 8) as usize;
    for (ch, &v) in stored.iter().enumerate().take(info.channels as usize) {
        let f = f32::from_bits(v);
        let enc: u32 = match info.num_format {
            num_format::UNORM | num_format::SRGB => unorm(f, bits),
            num_format::SNORM => snorm(f, bits),
            num_format::UINT => v.min(u32::MAX >> (32 - bits)),
            num_format::SINT => {
                let lim = (1i64 << (bits - 1)) - 1;
                (i64::from(v as i32)).clamp(-lim - 1, lim) as u32 & (u32::MAX >> (32 - bits))
            }
            _ if bits == 16 => u32::from(f32_to_f16(f)),
            _ => v,
        };
        out[ch * bytes..(ch + 1) * bytes].copy_from_slice(&enc.to_le_bytes()[..bytes]);
    }
    out
}

/// A float in [0, 1] as an unsigned normalized integer of `bits` bits (NaN is 0).
fn unorm(f: f32, bits: u32) -> u32 {
    let max = ((1u64 << bits) - 1) as f32;
    let c = if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) };
    rne(c * max) as u32
}

/// A float in [-1, 1] as a signed normalized integer of `bits` bits, two's complement.
fn snorm(f: f32, bits: u32) -> u32 {
    let max = ((1u64 << (bits - 1)) - 1) as f32;
    let c = if f.is_nan() { 0.0 } else { f.clamp(-1.0, 1.0) };
    (rne(c * max) as i32) as u32 & (u32::MAX >> (32 - bits))
}

/// `x` (|x| < 2^40) rounded to the nearest integer, ties to even (`f32::round_ties_even` is
/// not in `core` at the crate's minimum Rust version).
fn rne(x: f32) -> i64 {
    let i = x as i64; // toward zero
    let frac = x - i as f32;
    let step = if x < 0.0 { -1 } else { 1 };
    let a = frac.abs();
    if a > 0.5 || (a == 0.5 && i % 2 != 0) {
        i + step
    } else {
        i
    }
}

/// An f32 as an IEEE binary16, rounded to nearest even; overflow to infinity, NaN kept quiet.
fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let up = rem > mid || (rem == mid && half & 1 == 1);
        return sign | (half + u32::from(up)) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    let up = rem > 0x1000 || (rem == 0x1000 && half & 1 == 1);
    sign | (half + u32::from(up)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rgba8() -> Format {
        Format {
            channel_type: channel_type::UNORM_INT8,
            channel_order: channel_order::RGBA,
        }
    }

    fn desc(g: Geometry, w: u64, h: u64, d: u64, a: u64, f: Format) -> Descriptor {
        Descriptor {
            geometry: g,
            width: w,
            height: h,
            depth: d,
            array_size: a,
            format: f,
        }
    }

    #[test]
    fn the_format_table_matches_the_gfx9_encodings() {
        // IMG_DATA_FORMAT 10 = 8_8_8_8, IMG_NUM_FORMAT 0 = UNORM (Vega ISA §8.2.1).
        let i = format_info(rgba8(), Geometry::D2).unwrap();
        assert_eq!((i.element_bytes, i.data_format, i.num_format), (4, 10, 0));
        assert_eq!(i.capability, 7);
        // R32F: FMT_32 (4), FLOAT (7).
        let r32f = Format {
            channel_type: channel_type::FLOAT,
            channel_order: channel_order::R,
        };
        let i = format_info(r32f, Geometry::D1).unwrap();
        assert_eq!((i.element_bytes, i.data_format, i.num_format), (4, 4, 7));
        assert_eq!(i.dst_sel, [4, 0, 0, 1]);
        // RG16 sint: FMT_16_16 (5), SINT (5).
        let rg16i = Format {
            channel_type: channel_type::SIGNED_INT16,
            channel_order: channel_order::RG,
        };
        let i = format_info(rg16i, Geometry::D3).unwrap();
        assert_eq!((i.element_bytes, i.data_format, i.num_format), (4, 5, 5));
        // RGBA32 uint: FMT_32_32_32_32 (14), UINT (4), 16 bytes.
        let rgba32u = Format {
            channel_type: channel_type::UNSIGNED_INT32,
            channel_order: channel_order::RGBA,
        };
        let i = format_info(rgba32u, Geometry::D2Array).unwrap();
        assert_eq!((i.element_bytes, i.data_format, i.num_format), (16, 14, 4));
        // 5-6-5 RGB: FMT_5_6_5 (16), 2 bytes; not in a 1DB image.
        let rgb565 = Format {
            channel_type: channel_type::UNORM_SHORT_565,
            channel_order: channel_order::RGB,
        };
        assert_eq!(format_info(rgb565, Geometry::D2).unwrap().data_format, 16);
        assert_eq!(format_info(rgb565, Geometry::D1Buffer), None);
        // sRGBA is read-only, SRGB numeric format 9.
        let srgba = Format {
            channel_type: channel_type::UNORM_INT8,
            channel_order: channel_order::SRGBA,
        };
        let i = format_info(srgba, Geometry::D2).unwrap();
        assert_eq!((i.capability, i.num_format), (1, 9));
        // Unsupported: 24-bit unorm, integer intensity, 16-bit BGRA, a colour depth image.
        for (ty, order, g) in [
            (channel_type::UNORM_INT24, channel_order::R, Geometry::D2),
            (
                channel_type::SIGNED_INT8,
                channel_order::INTENSITY,
                Geometry::D2,
            ),
            (channel_type::UNORM_INT16, channel_order::BGRA, Geometry::D2),
            (channel_type::FLOAT, channel_order::R, Geometry::D2Depth),
            (channel_type::UNORM_INT8, channel_order::RGB, Geometry::D2),
        ] {
            let f = Format {
                channel_type: ty,
                channel_order: order,
            };
            assert_eq!(format_info(f, g), None, "{ty} {order} {g:?}");
        }
        // Depth: read and write, not read-write.
        let depth = Format {
            channel_type: channel_type::FLOAT,
            channel_order: channel_order::DEPTH,
        };
        assert_eq!(format_info(depth, Geometry::D2Depth).unwrap().capability, 3);
    }

    #[test]
    fn linear_layout_pads_rows_to_256_bytes() {
        // 100 texels of 4 bytes = 400 bytes, padded to 512; 3 rows; 5 layers.
        let l = layout(&desc(Geometry::D2Array, 100, 3, 0, 5, rgba8()), 0, 0).unwrap();
        assert_eq!(
            (l.row_pitch, l.slice_pitch, l.rows, l.slices),
            (512, 1536, 3, 5)
        );
        assert_eq!((l.size, l.alignment), (7680, 256));
        // A 1D array: one row per layer.
        let l = layout(&desc(Geometry::D1Array, 64, 0, 0, 4, rgba8()), 0, 0).unwrap();
        assert_eq!((l.row_pitch, l.slice_pitch, l.size), (256, 256, 1024));
        // A given pitch that is a multiple of 256 is kept.
        let l = layout(&desc(Geometry::D3, 10, 2, 3, 0, rgba8()), 1024, 2048).unwrap();
        assert_eq!((l.row_pitch, l.size), (1024, 6144));
        // 1DB: no padding of rows, size rounded to the alignment.
        let l = layout(&desc(Geometry::D1Buffer, 100, 0, 0, 0, rgba8()), 0, 0).unwrap();
        assert_eq!((l.row_pitch, l.size), (400, 512));
    }

    #[test]
    fn bad_descriptors_get_the_extension_statuses() {
        let st = |d: Descriptor, r, s| layout(&d, r, s).unwrap_err().status();
        assert_eq!(
            st(desc(Geometry::D2, 0, 4, 0, 0, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D2, 16385, 4, 0, 0, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D3, 4, 4, 0, 0, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D2Array, 4, 4, 0, 8193, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        // Unused dimensions: 0 or 1 (ROCR's maximum 1), not more.
        assert_eq!(
            st(desc(Geometry::D1, 4, 2, 0, 0, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D2, 4, 4, 3, 0, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D3, 4, 4, 4, 2, rgba8()), 0, 0),
            Status::ImageSizeUnsupported
        );
        assert!(layout(&desc(Geometry::D1Array, 4, 1, 1, 3, rgba8()), 0, 0).is_ok());
        // Pitch below a row, not a multiple of 256, slices not back to back.
        assert_eq!(
            st(desc(Geometry::D2, 100, 4, 0, 0, rgba8()), 256, 0),
            Status::ImagePitchUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D2, 100, 4, 0, 0, rgba8()), 400, 0),
            Status::ImagePitchUnsupported
        );
        assert_eq!(
            st(desc(Geometry::D3, 100, 4, 2, 0, rgba8()), 512, 4096),
            Status::ImagePitchUnsupported
        );
        let bad_format = Format {
            channel_type: 99,
            channel_order: channel_order::R,
        };
        let e = layout(&desc(Geometry::D2, 4, 4, 0, 0, bad_format), 0, 0).unwrap_err();
        assert_eq!(e.status(), Status::ImageFormatUnsupported);
        assert!(e.detail().contains("channel type 99"), "{}", e.detail());
        assert_eq!(
            Geometry::from_raw(8).unwrap_err().status(),
            Status::InvalidArgument
        );
    }

    #[test]
    fn the_image_resource_has_the_gfx9_fields() {
        let d = desc(Geometry::D2Array, 100, 3, 0, 5, rgba8());
        let l = layout(&d, 0, 0).unwrap();
        let w = image_object(&d, &l, 0x12_3456_7800);
        // BASE_ADDRESS: address bits 39:8, then 47:40 in word 1.
        assert_eq!(w[0], 0x1234_5678);
        assert_eq!(w[1] & 0xff, 0);
        assert_eq!((w[1] >> 20) & 0x3f, 10, "DATA_FORMAT 8_8_8_8");
        assert_eq!((w[1] >> 26) & 0xf, 0, "NUM_FORMAT unorm");
        assert_eq!(w[2] & 0x3fff, 99, "WIDTH-1");
        assert_eq!((w[2] >> 14) & 0x3fff, 2, "HEIGHT-1");
        assert_eq!(w[3] & 0xfff, 4 | 5 << 3 | 6 << 6 | 7 << 9, "DST_SEL XYZW");
        assert_eq!((w[3] >> 20) & 0x1f, 0, "SW_MODE linear");
        assert_eq!(w[3] >> 28, 13, "TYPE 2D array");
        assert_eq!(w[4] & 0x1fff, 4, "DEPTH-1 = layers-1");
        assert_eq!(
            (w[4] >> 13) & 0xffff,
            127,
            "PITCH-1 in texels (512 bytes / 4)"
        );
        assert_eq!(
            &w[8..11],
            &[channel_type::UNORM_INT8, channel_order::RGBA, 100]
        );
        // A high address reaches word 1's BASE_ADDRESS_HI.
        let w = image_object(&d, &l, 0xab00_0000_0100);
        assert_eq!((w[0], w[1] & 0xff), (0x0000_0001, 0xab));
        // 1DB: a buffer resource with stride and record count in bytes.
        let d = desc(Geometry::D1Buffer, 100, 0, 0, 0, rgba8());
        let l = layout(&d, 0, 0).unwrap();
        let w = image_object(&d, &l, 0x1_0000_1000);
        assert_eq!((w[0], w[1] & 0xffff, w[1] >> 16), (0x1000, 1, 4));
        assert_eq!(w[2], 400, "NUM_RECORDS: 100 texels of 4 bytes");
        assert_eq!(((w[3] >> 12) & 7, (w[3] >> 15) & 0xf), (0, 10));
    }

    #[test]
    fn the_sampler_has_the_gfx9_fields() {
        let w = sampler_object(&SamplerDescriptor {
            coordinate_mode: 1,
            filter_mode: 1,
            address_mode: 1,
        })
        .unwrap();
        assert_eq!(w[0] & 0x1ff, 2 | 2 << 3 | 2 << 6, "clamp to last texel");
        assert_eq!((w[0] >> 15) & 1, 0, "normalized");
        assert_eq!((w[2] >> 20) & 0xf, 0b0101, "bilinear mag and min");
        assert_eq!((w[1] >> 12) & 0xfff, 4095);
        let w = sampler_object(&SamplerDescriptor {
            coordinate_mode: 0,
            filter_mode: 0,
            address_mode: 4,
        })
        .unwrap();
        assert_eq!((w[0] & 7, (w[0] >> 15) & 1, (w[2] >> 20) & 0xf), (1, 1, 0));
        let e = sampler_object(&SamplerDescriptor {
            coordinate_mode: 0,
            filter_mode: 2,
            address_mode: 0,
        })
        .unwrap_err();
        assert_eq!(e.status(), Status::SamplerDescriptorUnsupported);
        assert!(e.detail().contains("filter mode 2"));
    }

    #[test]
    fn clear_values_are_packed_as_a_store_converts_them() {
        let f = |x: f32| x.to_bits();
        // RGBA8 unorm: 0.5 * 255 = 127.5 rounds to even 128; clamping above 1 and below 0.
        let i = format_info(rgba8(), Geometry::D2).unwrap();
        let t = pack_texel(&i, [f(0.5), f(2.0), f(-1.0), f(1.0)]);
        assert_eq!(&t[..4], &[128, 255, 0, 255]);
        // BGRA8: stored B, G, R, A.
        let bgra = Format {
            channel_type: channel_type::UNORM_INT8,
            channel_order: channel_order::BGRA,
        };
        let i = format_info(bgra, Geometry::D2).unwrap();
        let t = pack_texel(&i, [f(1.0), f(0.0), f(0.2), f(0.0)]);
        assert_eq!(&t[..4], &[51, 0, 255, 0]);
        // A8: the alpha component.
        let a8 = Format {
            channel_type: channel_type::UNORM_INT8,
            channel_order: channel_order::A,
        };
        let i = format_info(a8, Geometry::D2).unwrap();
        assert_eq!(pack_texel(&i, [0, 0, 0, f(1.0)])[0], 255);
        // RG16 sint saturates; R16F rounds to half.
        let rg16i = Format {
            channel_type: channel_type::SIGNED_INT16,
            channel_order: channel_order::RG,
        };
        let i = format_info(rg16i, Geometry::D2).unwrap();
        let t = pack_texel(&i, [70000, (-5i32) as u32, 0, 0]);
        assert_eq!(&t[..4], &[0xff, 0x7f, 0xfb, 0xff]);
        let r16f = Format {
            channel_type: channel_type::HALF_FLOAT,
            channel_order: channel_order::R,
        };
        let i = format_info(r16f, Geometry::D2).unwrap();
        assert_eq!(&pack_texel(&i, [f(1.5), 0, 0, 0])[..2], &[0x00, 0x3e]);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
        // 5-6-5: B in the low 5 bits, G 6, R 5 (R = 1.0, G = 0, B = 1.0).
        let rgb565 = Format {
            channel_type: channel_type::UNORM_SHORT_565,
            channel_order: channel_order::RGB,
        };
        let i = format_info(rgb565, Geometry::D2).unwrap();
        let t = pack_texel(&i, [f(1.0), f(0.0), f(1.0), 0]);
        assert_eq!(u16::from_le_bytes([t[0], t[1]]), 0xf81f);
    }
}
