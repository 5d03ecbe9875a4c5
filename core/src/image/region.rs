//! Texel math of image regions: where a texel of a linear image lies, which regions an image
//! holds, how the linear memory of an import or export is stepped, and the fill value of a
//! clear — what `hsa_ext_image_import`, `_export`, `_copy` and `_clear` compute on the host
//! (HSA Runtime Programmer's Reference Manual 1.2 §3.3 "Images and Samplers";
//! `hsa_ext_image.h`).
//!
//! Regions are in *region coordinates* (x, y, z): texels, rows and slices, except that a 1DA
//! image's y is its layer (the header: 1DA is "addressed by width and index coordinate", the
//! index second, as ROCR's blits and OpenCL's 1D-array origins read it). Addresses are device
//! addresses of the image's memory (`data`); every function here is arithmetic only, and
//! none overflows: a region is checked against the image first ([`check_region`]), whose
//! layout [`layout`](super::layout) bounded.

use super::{channel_order, channel_type, pack_texel, Descriptor, Format, Geometry, Layout};
use crate::bail;
use crate::status::{Result, Status};

/// An image region: its first texel and its extent in texels, in region coordinates
/// (`hsa_ext_image_region_t`: `offset` and `range`, each `hsa_dim3_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Region {
    /// First texel (x, y, z).
    pub offset: [u32; 3],
    /// Texels per dimension (x, y, z).
    pub range: [u32; 3],
}

/// The extent of an image of `desc` laid out as `layout`, in region coordinates: width, rows
/// and slices, except for a 1DA image: width, layers, 1.
pub fn region_dims(desc: &Descriptor, layout: &Layout) -> [u64; 3] {
    if desc.geometry == Geometry::D1Array {
        [desc.width, layout.slices, 1]
    } else {
        [desc.width, layout.rows, layout.slices]
    }
}

/// Checks that the region at `offset` of extent `range` lies inside the image and is not
/// empty.
///
/// # Errors
/// `Status::InvalidArgument` naming `what`, the region and the image's extent
/// ([`region_dims`]) when a range is 0 or the region runs past the image.
pub fn check_region(
    desc: &Descriptor,
    layout: &Layout,
    offset: [u32; 3],
    range: [u32; 3],
    what: &str,
) -> Result<()> {
    let dims = region_dims(desc, layout);
    let off = offset.map(u64::from);
    let rng = range.map(u64::from);
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

/// The device address of the texel at region coordinates (x, y, z) of the image at `data`
/// (a 1DA image's y is its layer). Inside a region [`check_region`] accepted, no overflow:
/// the result is below `data + layout.size`.
pub fn texel_address(data: u64, desc: &Descriptor, layout: &Layout, x: u64, y: u64, z: u64) -> u64 {
    let (row, slice) = if desc.geometry == Geometry::D1Array {
        (0, y)
    } else {
        (y, z)
    };
    data + slice * layout.slice_pitch
        + row * layout.row_pitch
        + x * u64::from(layout.info.element_bytes)
}

/// The linear memory's steps, bytes, between consecutive region rows (y) and slices (z) of an
/// import or export, from the application's pitches as the header defines them: a row pitch
/// below the region's row of texels is that row; a slice pitch below the row pitch times the
/// region's height is that product; for a 1DA image, whose region y counts layers
/// ([`region_dims`]), the slice pitch is the layers' step, and the row pitch where it is
/// smaller. Saturates rather than overflowing (the caller checks the memory's last byte).
pub fn memory_pitches(
    desc: &Descriptor,
    layout: &Layout,
    range: [u32; 3],
    row_pitch: u64,
    slice_pitch: u64,
) -> (u64, u64) {
    let e = u64::from(layout.info.element_bytes);
    let row = row_pitch.max(u64::from(range[0]) * e);
    if desc.geometry == Geometry::D1Array {
        let layer = slice_pitch.max(row);
        return (layer, layer.saturating_mul(u64::from(range[1])));
    }
    let slice = slice_pitch.max(row.saturating_mul(u64::from(range[1])));
    (row, slice)
}

/// The last byte, plus one, of linear memory at `memory` holding `range` at the pitches
/// `(row, slice)` ([`memory_pitches`]) with `row_bytes` per row; `None` when it would wrap the
/// address space.
pub fn memory_end(
    memory: u64,
    range: [u32; 3],
    row_bytes: u64,
    row: u64,
    slice: u64,
) -> Option<u64> {
    u64::from(range[2].checked_sub(1)?)
        .checked_mul(slice)?
        .checked_add(u64::from(range[1].checked_sub(1)?).checked_mul(row)?)?
        .checked_add(row_bytes)?
        .checked_add(memory)
}

/// Whether `f` has a depth channel order (one access component).
pub fn is_depth(f: Format) -> bool {
    matches!(
        f.channel_order,
        channel_order::DEPTH | channel_order::DEPTH_STENCIL
    )
}

/// Whether `f` has an sRGB ("s-form") channel order.
pub fn is_srgb(f: Format) -> bool {
    use channel_order as o;
    matches!(f.channel_order, o::SRGB | o::SRGBX | o::SRGBA | o::SBGRA)
}

/// Whether `hsa_ext_image_copy` may copy between images of formats `a` and `b`: the same
/// format, or sRGBA and RGBA unorm8 either way (the bytes are copied, not converted; ROCR's
/// blit converts between the colour spaces).
pub fn copy_compatible(a: Format, b: Format) -> bool {
    use channel_order as o;
    a == b
        || (a.channel_type == channel_type::UNORM_INT8
            && b.channel_type == channel_type::UNORM_INT8
            && matches!(
                (a.channel_order, b.channel_order),
                (o::SRGBA, o::RGBA) | (o::RGBA, o::SRGBA)
            ))
}

/// A linear colour component as its sRGB encoding, both in [0, 1] (HSA PRM 1.2 §7.1.4.1.2
/// "Standard RGB (s-Form)"): NaN is 0, values are clamped, then `12.92 l` below 0.0031308 and
/// `1.055 l^(1/2.4) - 0.055` above.
pub fn linear_to_srgb(l: f32) -> f32 {
    let l = if l.is_nan() {
        0.0
    } else {
        f64::from(l).clamp(0.0, 1.0)
    };
    let s = if l < 0.0031308 {
        12.92 * l
    } else {
        1.055 * libm_powf(l, 1.0 / 2.4) - 0.055
    };
    s as f32
}

/// `x^y` for `x` in [0.0031308, 1] (no_std has no `powf`): `exp(y ln x)` by range reduction
/// and series, exact to f64 rounding well below the f32 the result is cut to.
fn libm_powf(x: f64, y: f64) -> f64 {
    exp(y * ln(x))
}

/// Natural logarithm of `x` > 0: `x = m 2^k` with `m` in [1, 2), then
/// `ln m = 2 atanh((m - 1) / (m + 1))` by its series.
fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let k = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut term = t;
    let mut sum = 0.0;
    let mut n = 1.0;
    while magnitude(term) > 1e-18 {
        sum += term / n;
        term *= t2;
        n += 2.0;
    }
    2.0 * sum + k as f64 * core::f64::consts::LN_2
}

/// |x| (core's `f64::abs` needs a newer Rust than the crate's minimum).
fn magnitude(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// `e^x` for |x| below 30: `x = k ln 2 + r` with |r| <= ln 2 / 2, then the series of `e^r`.
fn exp(x: f64) -> f64 {
    let k = (x / core::f64::consts::LN_2 + if x < 0.0 { -0.5 } else { 0.5 }) as i64;
    let r = x - k as f64 * core::f64::consts::LN_2;
    let mut term: f64 = 1.0;
    let mut sum = 1.0;
    let mut n = 1.0;
    while magnitude(term) > 1e-18 {
        term *= r / n;
        sum += term;
        n += 1.0;
    }
    sum * f64::from_bits(((1023 + k) as u64) << 52)
}

/// The texel `hsa_ext_image_clear` stores for the colour `value` (four `float`s, `int32_t`s or
/// `uint32_t`s by the format's channel type, components R, G, B, A; a depth order reads one
/// component), converted as an image store converts it ([`pack_texel`]); for the sRGB orders
/// R, G and B are linear and stored sRGB-encoded (HSA PRM 1.2 §7.1.4.1.2, as ROCR stores them).
/// Returns the texel's bytes (its first `layout.info.element_bytes` count).
pub fn clear_texel(format: Format, layout: &Layout, value: [u32; 4]) -> [u8; 16] {
    let mut value = value;
    if is_depth(format) {
        value = [value[0], 0, 0, 0];
    }
    if is_srgb(format) {
        for v in &mut value[..3] {
            *v = linear_to_srgb(f32::from_bits(*v)).to_bits();
        }
    }
    pack_texel(&layout.info, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{layout, Format};

    fn rgba8(geometry: Geometry, width: u64, height: u64, depth: u64, array: u64) -> Descriptor {
        Descriptor {
            geometry,
            width,
            height,
            depth,
            array_size: array,
            format: Format {
                channel_type: channel_type::UNORM_INT8,
                channel_order: channel_order::RGBA,
            },
        }
    }

    /// A 2D image's texels are `row_pitch` apart by row; a 1DA image's region y is its layer,
    /// `slice_pitch` apart; regions outside or empty are refused, naming the image's extent.
    #[test]
    fn texels_and_regions_follow_the_geometry() {
        let d2 = rgba8(Geometry::D2, 10, 4, 0, 0);
        let l2 = layout(&d2, 0, 0).unwrap();
        assert_eq!((l2.row_pitch, l2.rows, l2.slices), (256, 4, 1));
        assert_eq!(region_dims(&d2, &l2), [10, 4, 1]);
        assert_eq!(
            texel_address(0x1000, &d2, &l2, 3, 2, 0),
            0x1000 + 2 * 256 + 12
        );
        check_region(&d2, &l2, [0, 0, 0], [10, 4, 1], "image").unwrap();
        let e = check_region(&d2, &l2, [1, 0, 0], [10, 4, 1], "image").unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "image region offset (1, 0, 0) range (10, 4, 1) is not inside the 10x4x1 image"
        );
        assert!(check_region(&d2, &l2, [0, 0, 0], [1, 0, 1], "image").is_err());

        let d1a = rgba8(Geometry::D1Array, 16, 0, 0, 5);
        let l1a = layout(&d1a, 0, 0).unwrap();
        assert_eq!(region_dims(&d1a, &l1a), [16, 5, 1]);
        assert_eq!(
            texel_address(0, &d1a, &l1a, 1, 3, 0),
            3 * l1a.slice_pitch + 4
        );
    }

    /// Pitches below the region's row or slice are the tight ones; a 1DA region steps by
    /// layers.
    #[test]
    fn memory_pitches_default_to_the_tight_ones() {
        let d2 = rgba8(Geometry::D2, 10, 4, 0, 0);
        let l2 = layout(&d2, 0, 0).unwrap();
        assert_eq!(memory_pitches(&d2, &l2, [3, 2, 1], 0, 0), (12, 24));
        assert_eq!(memory_pitches(&d2, &l2, [3, 2, 1], 100, 0), (100, 200));
        assert_eq!(memory_pitches(&d2, &l2, [3, 2, 1], 100, 1000), (100, 1000));
        let d1a = rgba8(Geometry::D1Array, 16, 0, 0, 5);
        let l1a = layout(&d1a, 0, 0).unwrap();
        assert_eq!(memory_pitches(&d1a, &l1a, [4, 3, 1], 0, 0), (16, 48));
        assert_eq!(memory_pitches(&d1a, &l1a, [4, 3, 1], 0, 64), (64, 192));
        assert_eq!(
            memory_end(0x1000, [3, 2, 1], 12, 100, 200),
            Some(0x1000 + 112)
        );
        assert_eq!(memory_end(u64::MAX - 8, [3, 1, 1], 12, 12, 12), None);
    }

    /// sRGB encoding at the PRM's breakpoints against the formula computed with std's powf.
    #[test]
    fn srgb_encoding_matches_the_formula() {
        for l in [0.0f32, 0.001, 0.0031308, 0.01, 0.2, 0.5, 0.73, 1.0] {
            let want = if f64::from(l) < 0.0031308 {
                12.92 * f64::from(l)
            } else {
                1.055 * std::primitive::f64::powf(f64::from(l), 1.0 / 2.4) - 0.055
            } as f32;
            assert_eq!(linear_to_srgb(l), want, "{l}");
        }
        // Every 2^-16 step of [0, 1] (every 2^-8 under miri): the same f32 as std's powf.
        let steps: u32 = if cfg!(miri) { 256 } else { 65536 };
        for i in 0..=steps {
            let l = i as f32 / steps as f32;
            let want = if f64::from(l) < 0.0031308 {
                12.92 * f64::from(l)
            } else {
                1.055 * std::primitive::f64::powf(f64::from(l), 1.0 / 2.4) - 0.055
            } as f32;
            assert_eq!(linear_to_srgb(l).to_bits(), want.to_bits(), "{l}");
        }
        assert_eq!(linear_to_srgb(f32::NAN), 0.0);
        assert_eq!(linear_to_srgb(2.0), linear_to_srgb(1.0));
        assert_eq!(linear_to_srgb(-1.0), 0.0);
        let a = Format {
            channel_type: channel_type::UNORM_INT8,
            channel_order: channel_order::SRGBA,
        };
        let b = Format {
            channel_order: channel_order::RGBA,
            ..a
        };
        assert!(copy_compatible(a, b) && copy_compatible(b, a));
        assert!(!copy_compatible(
            a,
            Format {
                channel_type: channel_type::UNORM_INT16,
                ..b
            }
        ));
    }
}
