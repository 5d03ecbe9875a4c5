//! The gfx9 resource descriptors a kernel's image and buffer instructions read from SGPRs:
//! the image resource (T#, 8 dwords, `SQ_IMG_RSRC_WORD0..7`), the buffer resource (V#, 4
//! dwords, `SQ_BUF_RSRC_WORD0..3`) and the image sampler (S#, 4 dwords,
//! `SQ_IMG_SAMP_WORD0..3`): a view over the dwords of each and a typed form (`parse`/`emit`).
//!
//! Layouts: "Vega" Instruction Set Architecture reference guide §8.2.1 "Image Resource",
//! §8.2.2 "Image Sampler", §9.1.5 "Buffer Resource" (field names kept); the bit positions of
//! ROCR's `image/resource_ai.h` (`SQ_IMG_RSRC_WORD*`, `SQ_BUF_RSRC_WORD*`,
//! `SQ_IMG_SAMP_WORD*`). Sizes are stored minus one (`WIDTH` holds width − 1); the typed forms
//! hold the sizes themselves.
//!
//! This module only reads and writes the fields: what a field's value means to the texture
//! unit (which formats exist, which modes the interpreter runs) is the producer's
//! ([`crate::image`]) and the consumer's business.
//!
//! The module doc of [`crate::wire`] states the no-panic contract.

use super::{Field, WireError};

/// T# `TYPE` values (`SQ_RSRC_IMG_*`).
pub mod img_type {
    /// `SQ_RSRC_IMG_1D`.
    pub const D1: u32 = 8;
    /// `SQ_RSRC_IMG_2D`.
    pub const D2: u32 = 9;
    /// `SQ_RSRC_IMG_3D`.
    pub const D3: u32 = 10;
    /// `SQ_RSRC_IMG_CUBE`.
    pub const CUBE: u32 = 11;
    /// `SQ_RSRC_IMG_1D_ARRAY`.
    pub const D1_ARRAY: u32 = 12;
    /// `SQ_RSRC_IMG_2D_ARRAY`.
    pub const D2_ARRAY: u32 = 13;
    /// `SQ_RSRC_IMG_2D_MSAA`.
    pub const D2_MSAA: u32 = 14;
    /// `SQ_RSRC_IMG_2D_MSAA_ARRAY`.
    pub const D2_MSAA_ARRAY: u32 = 15;
}

/// The fields of the three descriptors (dword, shift, width).
pub mod field {
    use super::Field;

    /// T#: `BASE_ADDRESS`, address bits 39:8.
    pub const IMG_BASE_ADDRESS: Field = Field::new(0, 0, 32);
    /// T#: `BASE_ADDRESS_HI`, address bits 47:40.
    pub const IMG_BASE_ADDRESS_HI: Field = Field::new(1, 0, 8);
    /// T#: `MIN_LOD`.
    pub const IMG_MIN_LOD: Field = Field::new(1, 8, 12);
    /// T#: `DATA_FORMAT` (`IMG_DATA_FORMAT_*`).
    pub const IMG_DATA_FORMAT: Field = Field::new(1, 20, 6);
    /// T#: `NUM_FORMAT` (`IMG_NUM_FORMAT_*`).
    pub const IMG_NUM_FORMAT: Field = Field::new(1, 26, 4);
    /// T#: `WIDTH`, texels minus one.
    pub const IMG_WIDTH: Field = Field::new(2, 0, 14);
    /// T#: `HEIGHT`, texels minus one.
    pub const IMG_HEIGHT: Field = Field::new(2, 14, 14);
    /// T#: `DST_SEL_X` (`SQ_SEL_*`; `_Y`, `_Z`, `_W` follow, 3 bits each).
    pub const IMG_DST_SEL_X: Field = Field::new(3, 0, 3);
    /// T#: `BASE_LEVEL`.
    pub const IMG_BASE_LEVEL: Field = Field::new(3, 12, 4);
    /// T#: `LAST_LEVEL`.
    pub const IMG_LAST_LEVEL: Field = Field::new(3, 16, 4);
    /// T#: `SW_MODE` (0 linear).
    pub const IMG_SW_MODE: Field = Field::new(3, 20, 5);
    /// T#: `TYPE` ([`img_type`](super::img_type)).
    pub const IMG_TYPE: Field = Field::new(3, 28, 4);
    /// T#: `DEPTH`: depth minus one (3D) or the last slice (arrays).
    pub const IMG_DEPTH: Field = Field::new(4, 0, 13);
    /// T#: `PITCH`, texels per row minus one.
    pub const IMG_PITCH: Field = Field::new(4, 13, 16);
    /// T#: `BASE_ARRAY`.
    pub const IMG_BASE_ARRAY: Field = Field::new(5, 0, 13);

    /// V#: `BASE_ADDRESS` bits 31:0.
    pub const BUF_BASE_ADDRESS: Field = Field::new(0, 0, 32);
    /// V#: `BASE_ADDRESS_HI`, bits 47:32.
    pub const BUF_BASE_ADDRESS_HI: Field = Field::new(1, 0, 16);
    /// V#: `STRIDE`, bytes.
    pub const BUF_STRIDE: Field = Field::new(1, 16, 14);
    /// V#: `CACHE_SWIZZLE`.
    pub const BUF_CACHE_SWIZZLE: Field = Field::new(1, 30, 1);
    /// V#: `SWIZZLE_EN`.
    pub const BUF_SWIZZLE_EN: Field = Field::new(1, 31, 1);
    /// V#: `NUM_RECORDS`.
    pub const BUF_NUM_RECORDS: Field = Field::new(2, 0, 32);
    /// V#: `DST_SEL_X` (`_Y`, `_Z`, `_W` follow, 3 bits each).
    pub const BUF_DST_SEL_X: Field = Field::new(3, 0, 3);
    /// V#: `NUM_FORMAT` (`BUF_NUM_FORMAT_*`).
    pub const BUF_NUM_FORMAT: Field = Field::new(3, 12, 3);
    /// V#: `DATA_FORMAT` (`BUF_DATA_FORMAT_*`).
    pub const BUF_DATA_FORMAT: Field = Field::new(3, 15, 4);
    /// V#: `ELEMENT_SIZE` (2 << n bytes: 0 is 2 bytes, 1 is 4, 2 is 8, 3 is 16), used with
    /// `ADD_TID_ENABLE` and swizzling.
    pub const BUF_ELEMENT_SIZE: Field = Field::new(3, 19, 2);
    /// V#: `INDEX_STRIDE` (8 << n elements).
    pub const BUF_INDEX_STRIDE: Field = Field::new(3, 21, 2);
    /// V#: `ADD_TID_ENABLE`.
    pub const BUF_ADD_TID_ENABLE: Field = Field::new(3, 23, 1);
    /// V#: `TYPE` (0 buffer).
    pub const BUF_TYPE: Field = Field::new(3, 30, 2);

    /// S#: `CLAMP_X` (`SQ_TEX_CLAMP`; `_Y`, `_Z` follow, 3 bits each).
    pub const SAMP_CLAMP_X: Field = Field::new(0, 0, 3);
    /// S#: `MAX_ANISO_RATIO`.
    pub const SAMP_MAX_ANISO_RATIO: Field = Field::new(0, 9, 3);
    /// S#: `DEPTH_COMPARE_FUNC`.
    pub const SAMP_DEPTH_COMPARE_FUNC: Field = Field::new(0, 12, 3);
    /// S#: `FORCE_UNNORMALIZED`.
    pub const SAMP_FORCE_UNNORMALIZED: Field = Field::new(0, 15, 1);
    /// S#: `MIN_LOD` (4.8 fixed point).
    pub const SAMP_MIN_LOD: Field = Field::new(1, 0, 12);
    /// S#: `MAX_LOD` (4.8 fixed point).
    pub const SAMP_MAX_LOD: Field = Field::new(1, 12, 12);
    /// S#: `XY_MAG_FILTER` (`SQ_TEX_XY_FILTER`: 0 point, 1 bilinear, 2, 3 anisotropic).
    pub const SAMP_XY_MAG_FILTER: Field = Field::new(2, 20, 2);
    /// S#: `XY_MIN_FILTER`.
    pub const SAMP_XY_MIN_FILTER: Field = Field::new(2, 22, 2);
    /// S#: `Z_FILTER` (`SQ_TEX_Z_FILTER`: 0 none, 1 point, 2 linear).
    pub const SAMP_Z_FILTER: Field = Field::new(2, 24, 2);
    /// S#: `MIP_FILTER`.
    pub const SAMP_MIP_FILTER: Field = Field::new(2, 26, 2);
    /// S#: `BORDER_COLOR_TYPE` (0 transparent black, 1 opaque black, 2 opaque white, 3 the
    /// border colour register).
    pub const SAMP_BORDER_COLOR_TYPE: Field = Field::new(3, 30, 2);
}

/// Destination selects (`SQ_SEL_*`, 3 bits each in `DST_SEL_X..W` of a T# or V#): what a
/// component of a read returns (Vega ISA §8.2.1, §9.1.5).
pub mod sq_sel {
    /// `SQ_SEL_0`: the constant 0.
    pub const ZERO: u8 = 0;
    /// `SQ_SEL_1`: the constant 1 (1.0 for float formats).
    pub const ONE: u8 = 1;
    /// `SQ_SEL_X`: the first stored channel.
    pub const X: u8 = 4;
    /// `SQ_SEL_Y`: the second stored channel.
    pub const Y: u8 = 5;
    /// `SQ_SEL_Z`: the third stored channel.
    pub const Z: u8 = 6;
    /// `SQ_SEL_W`: the fourth stored channel.
    pub const W: u8 = 7;
}

/// Numeric formats (`IMG_NUM_FORMAT` of a T#, `BUF_NUM_FORMAT` of a V#; the same numbers,
/// Vega ISA §8.2.1, §9.1.5): how a channel's bits become a value.
pub mod num_format {
    /// Unsigned, normalized to [0, 1].
    pub const UNORM: u32 = 0;
    /// Signed, normalized to [-1, 1].
    pub const SNORM: u32 = 1;
    /// Unsigned integer.
    pub const UINT: u32 = 4;
    /// Signed integer.
    pub const SINT: u32 = 5;
    /// IEEE float.
    pub const FLOAT: u32 = 7;
    /// sRGB-encoded, normalized.
    pub const SRGB: u32 = 9;
}

/// `BUF_DATA_FORMAT_32` (Vega ISA §9.1.5, `BUF_DATA_FORMAT`): one 32-bit channel.
pub const BUF_DATA_FORMAT_32: u32 = 4;

/// The `k`-th of four 3-bit selects starting at `first`.
const fn sel(first: Field, k: usize) -> Field {
    Field::new(first.dword, first.shift + 3 * k as u32, 3)
}

/// Dwords of a T#.
pub const IMG_RSRC_DWORDS: usize = 8;
/// Dwords of a V#.
pub const BUF_RSRC_DWORDS: usize = 4;
/// Dwords of an S#.
pub const SAMPLER_DWORDS: usize = 4;

fn check_len(what: &'static str, dw: &[u32], needed: usize) -> Result<(), WireError> {
    if dw.len() < needed {
        return Err(WireError::Truncated {
            what,
            header: dw.first().copied().unwrap_or(0),
            needed,
            available: dw.len(),
        });
    }
    Ok(())
}

/// A gfx9 image resource (T#), its fields decoded: sizes in texels, the base as a byte
/// address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageRsrc {
    /// Byte address of texel (0, 0, 0) of the base level (256-byte aligned: bits 7:0 are not
    /// stored).
    pub base: u64,
    /// `DATA_FORMAT`.
    pub data_format: u32,
    /// `NUM_FORMAT`.
    pub num_format: u32,
    /// Width, texels (`WIDTH` + 1; 1..=16384).
    pub width: u32,
    /// Height, texels (`HEIGHT` + 1).
    pub height: u32,
    /// `DEPTH` + 1: the depth of a 3D image, the slices of an array.
    pub depth: u32,
    /// Texels from one row to the next (`PITCH` + 1).
    pub pitch: u32,
    /// `DST_SEL_X..W`.
    pub dst_sel: [u8; 4],
    /// `BASE_LEVEL`.
    pub base_level: u32,
    /// `LAST_LEVEL`.
    pub last_level: u32,
    /// `SW_MODE`.
    pub sw_mode: u32,
    /// `TYPE`.
    pub ty: u32,
}

impl ImageRsrc {
    /// Reads the first 8 dwords of `dw`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] for fewer than 8 dwords.
    pub fn parse(dw: &[u32]) -> Result<ImageRsrc, WireError> {
        check_len("T#", dw, IMG_RSRC_DWORDS)?;
        use field::*;
        Ok(ImageRsrc {
            base: u64::from(IMG_BASE_ADDRESS.get(dw)) << 8
                | u64::from(IMG_BASE_ADDRESS_HI.get(dw)) << 40,
            data_format: IMG_DATA_FORMAT.get(dw),
            num_format: IMG_NUM_FORMAT.get(dw),
            width: IMG_WIDTH.get(dw) + 1,
            height: IMG_HEIGHT.get(dw) + 1,
            depth: IMG_DEPTH.get(dw) + 1,
            pitch: IMG_PITCH.get(dw) + 1,
            dst_sel: core::array::from_fn(|k| sel(IMG_DST_SEL_X, k).get(dw) as u8),
            base_level: IMG_BASE_LEVEL.get(dw),
            last_level: IMG_LAST_LEVEL.get(dw),
            sw_mode: IMG_SW_MODE.get(dw),
            ty: IMG_TYPE.get(dw),
        })
    }

    /// Writes the descriptor into the first 8 dwords of `dw` (fewer when shorter), the
    /// fields not held here 0. Values wider than their fields are cut to them; sizes of 0
    /// are written as 1.
    pub fn emit(&self, dw: &mut [u32]) {
        let n = dw.len().min(IMG_RSRC_DWORDS);
        dw[..n].fill(0);
        use field::*;
        IMG_BASE_ADDRESS.set(dw, (self.base >> 8) as u32);
        IMG_BASE_ADDRESS_HI.set(dw, (self.base >> 40) as u32);
        IMG_DATA_FORMAT.set(dw, self.data_format);
        IMG_NUM_FORMAT.set(dw, self.num_format);
        IMG_WIDTH.set(dw, self.width.saturating_sub(1));
        IMG_HEIGHT.set(dw, self.height.saturating_sub(1));
        for (k, &s) in self.dst_sel.iter().enumerate() {
            sel(IMG_DST_SEL_X, k).set(dw, s.into());
        }
        IMG_BASE_LEVEL.set(dw, self.base_level);
        IMG_LAST_LEVEL.set(dw, self.last_level);
        IMG_SW_MODE.set(dw, self.sw_mode);
        IMG_TYPE.set(dw, self.ty);
        IMG_DEPTH.set(dw, self.depth.saturating_sub(1));
        IMG_PITCH.set(dw, self.pitch.saturating_sub(1));
    }
}

/// A gfx9 buffer resource (V#), its fields decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferRsrc {
    /// Byte address (48 bits).
    pub base: u64,
    /// `STRIDE`, bytes.
    pub stride: u32,
    /// `SWIZZLE_EN`.
    pub swizzle_en: bool,
    /// `NUM_RECORDS`: bytes, or records when `STRIDE` is not 0.
    pub num_records: u32,
    /// `DST_SEL_X..W`.
    pub dst_sel: [u8; 4],
    /// `NUM_FORMAT`.
    pub num_format: u32,
    /// `DATA_FORMAT`.
    pub data_format: u32,
    /// `ELEMENT_SIZE` (the field's value: 2 << n bytes).
    pub element_size: u32,
    /// `INDEX_STRIDE`.
    pub index_stride: u32,
    /// `ADD_TID_ENABLE`.
    pub add_tid_enable: bool,
}

impl BufferRsrc {
    /// Reads the first 4 dwords of `dw`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] for fewer than 4 dwords.
    pub fn parse(dw: &[u32]) -> Result<BufferRsrc, WireError> {
        check_len("V#", dw, BUF_RSRC_DWORDS)?;
        use field::*;
        Ok(BufferRsrc {
            base: u64::from(BUF_BASE_ADDRESS.get(dw))
                | u64::from(BUF_BASE_ADDRESS_HI.get(dw)) << 32,
            stride: BUF_STRIDE.get(dw),
            swizzle_en: BUF_SWIZZLE_EN.get(dw) != 0,
            num_records: BUF_NUM_RECORDS.get(dw),
            dst_sel: core::array::from_fn(|k| sel(BUF_DST_SEL_X, k).get(dw) as u8),
            num_format: BUF_NUM_FORMAT.get(dw),
            data_format: BUF_DATA_FORMAT.get(dw),
            element_size: BUF_ELEMENT_SIZE.get(dw),
            index_stride: BUF_INDEX_STRIDE.get(dw),
            add_tid_enable: BUF_ADD_TID_ENABLE.get(dw) != 0,
        })
    }

    /// Writes the descriptor into the first 4 dwords of `dw`, other fields 0.
    pub fn emit(&self, dw: &mut [u32]) {
        let n = dw.len().min(BUF_RSRC_DWORDS);
        dw[..n].fill(0);
        use field::*;
        BUF_BASE_ADDRESS.set(dw, self.base as u32);
        BUF_BASE_ADDRESS_HI.set(dw, (self.base >> 32) as u32);
        BUF_STRIDE.set(dw, self.stride);
        BUF_SWIZZLE_EN.set(dw, self.swizzle_en.into());
        BUF_NUM_RECORDS.set(dw, self.num_records);
        for (k, &s) in self.dst_sel.iter().enumerate() {
            sel(BUF_DST_SEL_X, k).set(dw, s.into());
        }
        BUF_NUM_FORMAT.set(dw, self.num_format);
        BUF_DATA_FORMAT.set(dw, self.data_format);
        BUF_ELEMENT_SIZE.set(dw, self.element_size);
        BUF_INDEX_STRIDE.set(dw, self.index_stride);
        BUF_ADD_TID_ENABLE.set(dw, self.add_tid_enable.into());
    }
}

/// A gfx9 image sampler (S#), its fields decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplerRsrc {
    /// `CLAMP_X`, `CLAMP_Y`, `CLAMP_Z` (`SQ_TEX_CLAMP`).
    pub clamp: [u8; 3],
    /// `FORCE_UNNORMALIZED`.
    pub force_unnormalized: bool,
    /// `MIN_LOD` (4.8 fixed point).
    pub min_lod: u32,
    /// `MAX_LOD` (4.8 fixed point).
    pub max_lod: u32,
    /// `XY_MAG_FILTER`.
    pub xy_mag_filter: u32,
    /// `XY_MIN_FILTER`.
    pub xy_min_filter: u32,
    /// `Z_FILTER`.
    pub z_filter: u32,
    /// `MIP_FILTER`.
    pub mip_filter: u32,
    /// `BORDER_COLOR_TYPE`.
    pub border_color_type: u32,
}

impl SamplerRsrc {
    /// Reads the first 4 dwords of `dw`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] for fewer than 4 dwords.
    pub fn parse(dw: &[u32]) -> Result<SamplerRsrc, WireError> {
        check_len("S#", dw, SAMPLER_DWORDS)?;
        use field::*;
        Ok(SamplerRsrc {
            clamp: core::array::from_fn(|k| sel(SAMP_CLAMP_X, k).get(dw) as u8),
            force_unnormalized: SAMP_FORCE_UNNORMALIZED.get(dw) != 0,
            min_lod: SAMP_MIN_LOD.get(dw),
            max_lod: SAMP_MAX_LOD.get(dw),
            xy_mag_filter: SAMP_XY_MAG_FILTER.get(dw),
            xy_min_filter: SAMP_XY_MIN_FILTER.get(dw),
            z_filter: SAMP_Z_FILTER.get(dw),
            mip_filter: SAMP_MIP_FILTER.get(dw),
            border_color_type: SAMP_BORDER_COLOR_TYPE.get(dw),
        })
    }

    /// Writes the descriptor into the first 4 dwords of `dw`, other fields 0.
    pub fn emit(&self, dw: &mut [u32]) {
        let n = dw.len().min(SAMPLER_DWORDS);
        dw[..n].fill(0);
        use field::*;
        for (k, &c) in self.clamp.iter().enumerate() {
            sel(SAMP_CLAMP_X, k).set(dw, c.into());
        }
        SAMP_FORCE_UNNORMALIZED.set(dw, self.force_unnormalized.into());
        SAMP_MIN_LOD.set(dw, self.min_lod);
        SAMP_MAX_LOD.set(dw, self.max_lod);
        SAMP_XY_MAG_FILTER.set(dw, self.xy_mag_filter);
        SAMP_XY_MIN_FILTER.set(dw, self.xy_min_filter);
        SAMP_Z_FILTER.set(dw, self.z_filter);
        SAMP_MIP_FILTER.set(dw, self.mip_filter);
        SAMP_BORDER_COLOR_TYPE.set(dw, self.border_color_type);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden words from the Vega ISA tables (§8.2.1: BASE_ADDRESS word 0, BASE_ADDRESS_HI
    /// word 1 [7:0], DATA_FORMAT [25:20], NUM_FORMAT [29:26], WIDTH word 2 [13:0], HEIGHT
    /// [27:14], DST_SEL word 3 [11:0], SW_MODE [24:20], TYPE [31:28], DEPTH word 4 [12:0],
    /// PITCH [28:13]), composed by hand: a 2D array of 100 x 3 texels, 5 slices, RGBA8
    /// unorm (DATA_FORMAT 10), pitch 128 texels at 0xab12_3456_7800.
    #[test]
    fn image_resource_round_trips_through_the_isa_tables_positions() {
        let t = ImageRsrc {
            base: 0xab12_3456_7800,
            data_format: 10,
            num_format: 0,
            width: 100,
            height: 3,
            depth: 5,
            pitch: 128,
            dst_sel: [4, 5, 6, 7],
            base_level: 0,
            last_level: 0,
            sw_mode: 0,
            ty: img_type::D2_ARRAY,
        };
        let golden = [
            0x1234_5678,
            0xab | 10 << 20,
            99 | 2 << 14,
            4 | 5 << 3 | 6 << 6 | 7 << 9 | 13 << 28,
            4 | 127 << 13,
            0,
            0,
            0,
        ];
        let mut w = [u32::MAX; 8];
        t.emit(&mut w);
        assert_eq!(w, golden);
        assert_eq!(ImageRsrc::parse(&golden), Ok(t));
        assert!(ImageRsrc::parse(&golden[..7]).is_err());
    }

    /// §9.1.5: BASE_ADDRESS words 0 and 1 [15:0], STRIDE word 1 [29:16], NUM_RECORDS word
    /// 2, DST_SEL word 3 [11:0], NUM_FORMAT [14:12], DATA_FORMAT [18:15], ELEMENT_SIZE
    /// [20:19].
    #[test]
    fn buffer_resource_round_trips() {
        let v = BufferRsrc {
            base: 0x1_0000_1000,
            stride: 4,
            num_records: 400,
            dst_sel: [4, 5, 6, 7],
            num_format: 0,
            data_format: 10,
            element_size: 2,
            ..Default::default()
        };
        let golden = [
            0x1000,
            1 | 4 << 16,
            400,
            4 | 5 << 3 | 6 << 6 | 7 << 9 | 10 << 15 | 2 << 19,
        ];
        let mut w = [0u32; 4];
        v.emit(&mut w);
        assert_eq!(w, golden);
        assert_eq!(BufferRsrc::parse(&golden), Ok(v));
    }

    /// §8.2.2: CLAMP_X/Y/Z word 0 [8:0], FORCE_UNNORMALIZED [15], MAX_LOD word 1 [23:12],
    /// XY_MAG_FILTER word 2 [21:20], XY_MIN_FILTER [23:22], Z_FILTER [25:24],
    /// BORDER_COLOR_TYPE word 3 [31:30].
    #[test]
    fn sampler_round_trips() {
        let s = SamplerRsrc {
            clamp: [2, 2, 6],
            force_unnormalized: true,
            max_lod: 4095,
            xy_mag_filter: 1,
            xy_min_filter: 1,
            z_filter: 2,
            border_color_type: 2,
            ..Default::default()
        };
        let golden = [
            2 | 2 << 3 | 6 << 6 | 1 << 15,
            4095 << 12,
            1 << 20 | 1 << 22 | 2 << 24,
            2 << 30,
        ];
        let mut w = [0u32; 4];
        s.emit(&mut w);
        assert_eq!(w, golden);
        assert_eq!(SamplerRsrc::parse(&golden), Ok(s));
    }
}
