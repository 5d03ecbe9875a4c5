//! MIMG image instructions over linear gfx9 images: `image_load`, `image_load_mip`,
//! `image_store`, `image_store_mip`, `image_get_resinfo`, `image_sample`,
//! `image_sample_lz`, `image_sample_l` and the 32-bit `image_atomic_add`/`swap`/`cmpswap`.
//!
//! The image resource (T#, 8 SGPRs) is read through [`hsa_core::wire::gfx9_rsrc`] (the layout
//! hsa-core writes image objects with) as gfx9's SQ_IMG_RSRC_WORD0..7 (Vega ISA §8.2.4
//! "Image Resource"; the bit positions of ROCR's `image/resource_ai.h`): BASE_ADDRESS = the
//! address's bits 39:8 in word 0 and 47:40 in word 1 [7:0], DATA_FORMAT word 1 [25:20],
//! NUM_FORMAT word 1 [29:26], WIDTH−1 word 2 [13:0], HEIGHT−1 word 2 [27:14], DST_SEL_X/Y/Z/W
//! word 3 [2:0]/[5:3]/[8:6]/[11:9], BASE_LEVEL [15:12], LAST_LEVEL [19:16], SW_MODE [24:20],
//! TYPE [31:28] (8 1D, 9 2D, 10 3D, 12 1D array, 13 2D array), DEPTH−1 word 4 [12:0] (the
//! last slice of an array), PITCH−1 word 4 [28:13] (in texels). The sampler (S#, 4 SGPRs) is
//! SQ_IMG_SAMP_WORD0..3: CLAMP_X/Y/Z word 0 [2:0]/[5:3]/[8:6], FORCE_UNNORMALIZED [15],
//! XY_MAG_FILTER word 2 [21:20], XY_MIN_FILTER [23:22], Z_FILTER [25:24],
//! BORDER_COLOR_TYPE word 3 [31:30].
//!
//! Model and limits:
//! - Layouts: linear (SW_MODE 0): texel (x, y, z) (z the slice of an array) lies at
//!   `base + ((z · HEIGHT + y) · PITCH + x) · element bytes`; and the swizzled modes that
//!   AMD's addrlib lays images out in for ROCR (SW_MODE 1..=11 and 16..=27: the 256 B, 4 KiB
//!   and 64 KiB blocks' Z/S/D/R orders, their `_X` pipe/bank XOR and `_T` forms), addressed
//!   by [`crate::tiling`] from the T#'s PITCH, HEIGHT, TYPE and BASE_ADDRESS (whose bits
//!   below the block are the surface's pipe/bank XOR) and the GPU's `GB_ADDR_CONFIG`
//!   ([`super::DispatchState::gb_addr_config`]). Only mip level 0 (BASE_LEVEL 0) is
//!   addressed: a non-zero BASE_LEVEL, an `_mip` access of a level other than 0 and sampling
//!   an image with more than one level (LAST_LEVEL ≠ BASE_LEVEL) are errors naming the
//!   field, and so is a swizzled image with more than one level (its mip chain's placement
//!   is not modelled), a swizzled 1D image (addrlib lays 1D images out linearly only), a
//!   reserved SW_MODE and the combinations addrlib has no layout for (`tiling`).
//! - Address VGPRs (from `vaddr` on): x, then y (2D, 3D, 2D array), then z (3D), then the
//!   slice when the instruction's `da` (declare array) bit is set, then the mip level
//!   (`_mip`) or, for `image_sample_l`, the LOD (ignored: level 0 is sampled). With `a16`
//!   two components share a VGPR (low half first). The T#'s TYPE decides which components
//!   locate the texel, so `da` need not agree with it, as on hardware: ROCclr's blit kernels
//!   bind every image as `image2d_array_t` (`da` set, a slice component) whatever its type.
//!   A slice given to a non-array TYPE is ignored; an array TYPE without `da` reads slice 0.
//! - Loads and stores convert as the typed buffer instructions do (`format.rs`; the formats
//!   of ROCR's image table: 8-, 16- and 32-bit 1, 2 and 4 components, 32-bit 3 components,
//!   10_11_11 and friends, 2_10_10_10, and the image-only 5_6_5 and 1_5_5_5 UNORM).
//!   A load's four components then go through DST_SEL (0 → 0, 1 → 1 or 1.0, 4..=7 → X..W;
//!   2 and 3 are reserved: an error); `dmask` picks which of the swizzled components land in
//!   consecutive VGPRs (`d16`: two per VGPR, float-valued ones as binary16). A store takes
//!   the `dmask`ed components in order from consecutive VGPRs (DST_SEL does not apply) and
//!   writes only those (a packed format's element is written whole, the others as 0).
//!   `tfe` writes 0 (no fault) to the VGPR after the data; `lwe`, `glc` and `slc` change
//!   nothing (no LOD warnings arise; memory is coherent).
//! - Out-of-range coordinates (x ≥ width, y ≥ height, z ≥ depth or slice count): a load
//!   returns 0 in every component (before DST_SEL: SEL_1 components are 0 too), a store or
//!   atomic changes nothing and a returning atomic gets 0, as the hardware's bounds check
//!   does for buffers (the image chapter does not spell out the returned values).
//! - `image_get_resinfo` at mip level L (vaddr): x = max(width >> L, 1), y = max(height >>
//!   L, 1), z = depth (3D: max(depth >> L, 1)) or the slice count of an array, w = the
//!   number of levels (LAST_LEVEL − BASE_LEVEL + 1), as integers, picked by `dmask`.
//! - Sampling: coordinates are f32 in [0, 1] scaled by the size unless the instruction's
//!   `unorm` or the S#'s FORCE_UNNORMALIZED is set; an array slice is the coordinate
//!   rounded to nearest (ties to even) and clamped to the slices. Point filtering takes
//!   texel `floor(u)`; bilinear (XY_MAG_FILTER = XY_MIN_FILTER = 1) the four texels around
//!   `u − 0.5`, `v − 0.5` (the texel-centre convention), and for a 3D image with Z_FILTER 2
//!   (linear) the eight around `w − 0.5`. Weights are the exact fractions of those
//!   coordinates (computed in f64 and the blend rounded once to f32); the hardware quantizes
//!   the fractions (to 8 bits on GCN), so its results may differ from these in the last
//!   bits of a unorm8-sized step. Address modes per axis: wrap (0), mirror (1),
//!   clamp-last-texel (2), mirror-once-last-texel (3) and clamp-border (6); the half-border
//!   modes (4, 5, 7) are errors. A border texel is BORDER_COLOR_TYPE's transparent black
//!   (0, 0, 0, 0), opaque black (0, 0, 0, 1) or opaque white (1, 1, 1, 1) (1 is the integer
//!   1 for UINT/SINT formats) before DST_SEL; type 3 (border colour register) is an error.
//!   Bilinear filtering of a UINT/SINT format, anisotropic filters and a MIN filter unlike
//!   the MAG filter (level 0 is both minified and magnified) are errors.
//! - Atomics: `image_atomic_swap`, `add` (dmask 1) and `cmpswap` (dmask 3: data, then the
//!   compared value) on a 32-bit one-component UINT or SINT image, returning the old value
//!   with `glc`; the other atomics are "not implemented" errors.

use hsa_core::wire::gfx9_rsrc::{ImageRsrc, SamplerRsrc};

use super::{
    error, f16, not_implemented, read_global, set_vdst_dword, vsrc_dword, write_global,
    BufferFormat, Ctx, Instruction, Operand, Result, Status, Wave, WAVE_SIZE,
};
use crate::op::Op;
use crate::tiling::{self, AddrConfig, Dimension, SwizzleMode, TiledSurface};

/// T# TYPE values (SQ_RSRC_IMG_*).
const IMG_1D: u8 = 8;
const IMG_2D: u8 = 9;
const IMG_3D: u8 = 10;
const IMG_1D_ARRAY: u8 = 12;
const IMG_2D_ARRAY: u8 = 13;

/// A gfx9 image resource (T#), checked for what this interpreter supports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ImageResource {
    /// Byte address of texel (0, 0, 0) of level 0.
    pub(crate) base: u64,
    /// The element format.
    pub(crate) format: BufferFormat,
    /// Width, height and depth (3D) or slice count (arrays), in texels; 1 where the type
    /// has no such dimension.
    pub(crate) size: [u32; 3],
    /// Texels from one row to the next (PITCH + 1).
    pub(crate) pitch: u64,
    /// DST_SEL_X..W.
    pub(crate) dst_sel: [u8; 4],
    /// TYPE (8, 9, 10, 12 or 13).
    pub(crate) ty: u8,
    /// Mip levels of the view (LAST_LEVEL − BASE_LEVEL + 1).
    pub(crate) levels: u32,
    /// How level 0's texels are placed.
    pub(crate) layout: Layout,
}

/// Where an image's texels lie.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Layout {
    /// SW_MODE 0: rows of PITCH texels, slices of HEIGHT rows, from `base`.
    Linear,
    /// A swizzled mode: `base` (block-aligned) plus [`TiledSurface::offset`] with the
    /// pipe/bank XOR the T#'s base address carries.
    Tiled {
        /// The layout of level 0.
        surface: TiledSurface,
        /// The surface's pipe/bank XOR value.
        pipe_bank_xor: u32,
    },
}

impl ImageResource {
    /// Reads and checks the 8 dwords of a T# on a GPU whose `GB_ADDR_CONFIG` is
    /// `gb_addr_config`.
    ///
    /// # Errors
    /// A sentence naming the field and its value for what is unsupported: TYPE not one of
    /// 8, 9, 10, 12, 13; BASE_LEVEL not 0; DATA_FORMAT/NUM_FORMAT not an element format of
    /// `format.rs`; a DST_SEL of 2 or 3; a swizzled SW_MODE the layout does not model
    /// (module docs), or `GB_ADDR_CONFIG` naming no gfx9 pipe or bank count.
    pub(crate) fn from_words(
        w: [u32; 8],
        gb_addr_config: u32,
    ) -> core::result::Result<ImageResource, String> {
        // The fields, from the one layout hsa-core's image objects are written with.
        let t = ImageRsrc::parse(&w).map_err(|e| e.to_string())?;
        let ty = t.ty as u8;
        if !matches!(ty, IMG_1D | IMG_2D | IMG_3D | IMG_1D_ARRAY | IMG_2D_ARRAY) {
            return Err(format!(
                "T# TYPE {ty}: not an image type this interpreter supports (8 1D, 9 2D, 10 3D, 12 1D array, 13 2D array)"
            ));
        }
        let sw_mode = t.sw_mode;
        let mode = SwizzleMode::from_sw_mode(sw_mode).map_err(|why| format!("T# {why}"))?;
        let base_level = t.base_level;
        if base_level != 0 {
            return Err(format!(
                "T# BASE_LEVEL {base_level}: only mip level 0 is supported"
            ));
        }
        let last_level = t.last_level;
        let (dfmt, nfmt) = (t.data_format as u8, t.num_format as u8);
        let format = BufferFormat::image(dfmt, nfmt)
            .map_err(|why| format!("T# DATA_FORMAT {dfmt} NUM_FORMAT {nfmt}: {why}"))?;
        let dst_sel = t.dst_sel;
        if let Some(k) = dst_sel.iter().position(|&s| s == 2 || s == 3) {
            return Err(format!(
                "T# DST_SEL_{} {}: reserved (0, 1 or 4..=7)",
                ["X", "Y", "Z", "W"][k],
                dst_sel[k]
            ));
        }
        let (width, height, depth) = (t.width, t.height, t.depth);
        let size = match ty {
            IMG_1D => [width, 1, 1],
            IMG_2D => [width, height, 1],
            IMG_1D_ARRAY => [width, 1, depth],
            _ => [width, height, depth],
        };
        let mut base = t.base;
        let pitch = t.pitch;
        let levels = last_level.saturating_sub(base_level) + 1;
        let layout = match mode {
            None => Layout::Linear,
            Some(mode) => {
                let name = mode.name();
                if matches!(ty, IMG_1D | IMG_1D_ARRAY) {
                    return Err(format!(
                        "T# SW_MODE {sw_mode} ({name}) with TYPE {ty} (1D): addrlib lays 1D \
                         images out linearly only; a swizzled 1D layout is not modelled"
                    ));
                }
                if levels > 1 {
                    return Err(format!(
                        "T# LAST_LEVEL {last_level} with SW_MODE {sw_mode} ({name}): the mip \
                         chain of a swizzled image is not modelled (one level only)"
                    ));
                }
                let config = AddrConfig::from_gb_addr_config(gb_addr_config)?;
                let dimension = if ty == IMG_3D {
                    Dimension::Tex3d
                } else {
                    Dimension::Tex2d
                };
                let surface = TiledSurface::new(
                    mode,
                    dimension,
                    format.element_bytes(),
                    pitch,
                    height,
                    config,
                )
                .map_err(|why| format!("T# {why}"))?;
                let (aligned, pipe_bank_xor) =
                    tiling::pipe_bank_xor(&surface, base).map_err(|why| format!("T# {why}"))?;
                base = aligned;
                Layout::Tiled {
                    surface,
                    pipe_bank_xor,
                }
            }
        };
        Ok(ImageResource {
            base,
            format,
            size,
            pitch: u64::from(pitch),
            dst_sel,
            ty,
            levels,
            layout,
        })
    }

    /// Whether TYPE is an array (1D or 2D array).
    fn array(&self) -> bool {
        matches!(self.ty, IMG_1D_ARRAY | IMG_2D_ARRAY)
    }

    /// The number of coordinates that locate a texel: 1 (1D), 2 (2D, 1D array) or 3.
    fn coords(&self) -> usize {
        match self.ty {
            IMG_1D => 1,
            IMG_2D | IMG_1D_ARRAY => 2,
            _ => 3,
        }
    }

    /// The address components `given` of an instruction (its `da` bit says whether a slice
    /// follows the spatial ones) in this resource's order: the [`coords`](Self::coords)
    /// components that locate a texel (an array's slice 0 when `da` gave none), then the
    /// component after them (the mip level or LOD) at index `coords()`.
    fn canonical<T: Copy + Default>(&self, da: bool, given: [T; 4]) -> [T; 4] {
        let spatial = match self.ty {
            IMG_1D | IMG_1D_ARRAY => 1,
            IMG_2D | IMG_2D_ARRAY => 2,
            _ => 3,
        };
        let slice_given = da && self.ty != IMG_3D;
        let declared = spatial + usize::from(slice_given);
        let mut out = [T::default(); 4];
        out[..spatial].copy_from_slice(&given[..spatial]);
        if self.array() && slice_given {
            out[spatial] = given[spatial];
        }
        if declared < 4 && self.coords() < 4 {
            out[self.coords()] = given[declared];
        }
        out
    }

    /// Texel `(x, y, z)` of the address components `c` (in the order of `coords`).
    fn texel_of(&self, c: &[u32]) -> [u32; 3] {
        match self.ty {
            IMG_1D => [c[0], 0, 0],
            IMG_2D => [c[0], c[1], 0],
            IMG_1D_ARRAY => [c[0], 0, c[1]],
            _ => [c[0], c[1], c[2]],
        }
    }

    /// The byte address of texel `t`, or `None` outside the image.
    fn address(&self, t: [u32; 3]) -> Option<u64> {
        if (0..3).any(|d| t[d] >= self.size[d]) {
            return None;
        }
        let offset = match self.layout {
            Layout::Linear => {
                let [x, y, z] = t.map(u64::from);
                let height = u64::from(self.size[1]);
                ((z * height + y) * self.pitch + x) * self.format.element_bytes() as u64
            }
            Layout::Tiled {
                surface,
                pipe_bank_xor,
            } => surface.offset(t, pipe_bank_xor),
        };
        Some(self.base.wrapping_add(offset))
    }

    /// The four register values (before DST_SEL) of texel `t`, 0 outside the image.
    fn fetch(&self, ctx: &Ctx<'_, '_>, t: [u32; 3]) -> Result<[u32; 4]> {
        let Some(addr) = self.address(t) else {
            return Ok([0; 4]);
        };
        let mut b = [0u8; 16];
        let n = self.format.element_bytes();
        read_global(ctx, addr, &mut b[..n])?;
        let elem = u128::from_le_bytes(b);
        Ok(core::array::from_fn(|k| self.format.load(elem, k)))
    }

    /// `v` (the four components) through DST_SEL.
    fn swizzle(&self, v: [u32; 4]) -> [u32; 4] {
        let one = if self.format.is_integer() {
            1
        } else {
            1.0f32.to_bits()
        };
        self.dst_sel.map(|s| match s {
            0 => 0,
            1 => one,
            s => v[usize::from(s & 3)],
        })
    }
}

/// A gfx9 sampler (S#): the fields this interpreter uses.
#[derive(Clone, Copy, Debug)]
struct Sampler {
    /// CLAMP_X, CLAMP_Y, CLAMP_Z.
    clamp: [u8; 3],
    /// FORCE_UNNORMALIZED.
    unnormalized: bool,
    /// Bilinear XY filtering (XY_MAG_FILTER = XY_MIN_FILTER = 1); else point.
    bilinear: bool,
    /// Z_FILTER linear (2): a 3D image is filtered between slices too.
    z_linear: bool,
    /// BORDER_COLOR_TYPE 0..=2.
    border: u8,
}

impl Sampler {
    fn from_words(w: [u32; 4]) -> core::result::Result<Sampler, String> {
        let s = SamplerRsrc::parse(&w).map_err(|e| e.to_string())?;
        let clamp = s.clamp;
        if let Some(k) = clamp.iter().position(|&c| matches!(c, 4 | 5 | 7)) {
            return Err(format!(
                "S# CLAMP_{} {}: the half-border address modes are unsupported",
                ["X", "Y", "Z"][k],
                clamp[k]
            ));
        }
        let (mag, min) = (s.xy_mag_filter, s.xy_min_filter);
        if mag > 1 || min > 1 {
            return Err(format!(
                "S# XY_MAG_FILTER {mag} XY_MIN_FILTER {min}: anisotropic filtering is unsupported"
            ));
        }
        if mag != min {
            return Err(format!(
                "S# XY_MAG_FILTER {mag} XY_MIN_FILTER {min}: differing filters are unsupported"
            ));
        }
        let border = s.border_color_type as u8;
        if border == 3 {
            return Err("S# BORDER_COLOR_TYPE 3: the border colour register is unsupported".into());
        }
        Ok(Sampler {
            clamp,
            unnormalized: s.force_unnormalized,
            bilinear: mag == 1,
            z_linear: s.z_filter == 2,
            border,
        })
    }

    /// Texel index `i` on an axis of `n` texels through address mode `mode`; `None` for
    /// clamp-border outside the image.
    fn address(mode: u8, i: i64, n: i64) -> Option<i64> {
        match mode {
            0 => Some(i.rem_euclid(n)),
            1 => {
                let m = i.rem_euclid(2 * n);
                Some(if m >= n { 2 * n - 1 - m } else { m })
            }
            2 => Some(i.clamp(0, n - 1)),
            3 => Some((if i < 0 { -(i + 1) } else { i }).min(n - 1)),
            _ => (0..n).contains(&i).then_some(i),
        }
    }
}

/// The error for a bad resource or operand: `Status::IllegalInstruction` with the reason
/// (the interpreter prefixes the mnemonic and its offset).
fn bad(why: &str) -> hsa_core::Error {
    error!(Status::IllegalInstruction, "{why}")
}

/// Runs a MIMG instruction for every active lane.
pub(super) fn image(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let op = inst.op();
    let Operand::Sreg { index: r, .. } = inst.src[2] else {
        return Err(not_implemented(inst));
    };
    if w.exec() == 0 {
        // No lane runs: the descriptors are not read.
        return Ok(());
    }
    let r = usize::from(r);
    let words: [u32; 8] = core::array::from_fn(|k| w.sreg[r + k]);
    let res = ImageResource::from_words(words, ctx.gb_addr_config).map_err(|why| bad(&why))?;
    let m = inst.mods;
    let Operand::Vgpr { index: va, .. } = inst.src[0] else {
        return Err(not_implemented(inst));
    };
    let va = usize::from(va);
    // Address component k of a lane (a16: 16-bit halves, low first).
    let addr = |w: &Wave, lane: usize, k: usize| -> u32 {
        if m.a16 {
            w.v(va + k / 2, lane) >> (16 * (k % 2)) & 0xFFFF
        } else {
            w.v(va + k, lane)
        }
    };
    let exec = w.exec();
    let lanes = (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0);
    let fault =
        |lane: usize| move |e: hsa_core::Error| error!(e.status(), "lane {lane}: {}", e.detail());
    match op {
        Op::ImageGetResinfo => {
            for lane in lanes {
                let level = addr(w, lane, 0);
                let shift = |v: u32| v.checked_shr(level).unwrap_or(0).max(1);
                let z = if res.ty == IMG_3D {
                    shift(res.size[2])
                } else {
                    res.size[2]
                };
                let v = [shift(res.size[0]), shift(res.size[1]), z, res.levels];
                write_result(w, inst, lane, v, true);
            }
            Ok(())
        }
        Op::ImageLoad | Op::ImageLoadMip => {
            let n = res.coords();
            for lane in lanes {
                let c = res.canonical(m.da, core::array::from_fn(|k| addr(w, lane, k)));
                if op == Op::ImageLoadMip && c[n] != 0 {
                    return Err(bad(&format!(
                        "lane {lane}: mip level {}: only level 0 is supported",
                        c[n]
                    )));
                }
                let t = res.texel_of(&c);
                let v = if res.address(t).is_some() {
                    res.swizzle(res.fetch(ctx, t).map_err(fault(lane))?)
                } else {
                    [0; 4]
                };
                write_result(w, inst, lane, v, res.format.is_integer());
            }
            Ok(())
        }
        Op::ImageStore | Op::ImageStoreMip => {
            let n = res.coords();
            for lane in lanes {
                let c = res.canonical(m.da, core::array::from_fn(|k| addr(w, lane, k)));
                if op == Op::ImageStoreMip && c[n] != 0 {
                    return Err(bad(&format!(
                        "lane {lane}: mip level {}: only level 0 is supported",
                        c[n]
                    )));
                }
                let Some(at) = res.address(res.texel_of(&c)) else {
                    continue;
                };
                store(ctx, w, inst, &res, lane, at).map_err(fault(lane))?;
            }
            Ok(())
        }
        Op::ImageSample | Op::ImageSampleLz | Op::ImageSampleL => {
            let Operand::Sreg { index: s, .. } = inst.soffset else {
                return Err(not_implemented(inst));
            };
            let s = usize::from(s);
            let samp = Sampler::from_words(core::array::from_fn(|k| w.sreg[s + k]))
                .map_err(|why| bad(&why))?;
            if res.levels > 1 {
                return Err(bad(&format!(
                        "T# LAST_LEVEL {}: sampling an image with more than one mip level is unsupported",
                        res.levels - 1
                    ),
                ));
            }
            if samp.bilinear && res.format.is_integer() {
                return Err(bad(
                    "bilinear filtering of a UINT/SINT format is unsupported",
                ));
            }
            for lane in lanes {
                let given: [f64; 4] = core::array::from_fn(|k| {
                    let b = addr(w, lane, k);
                    if m.a16 {
                        f16::to_f64(b as u16)
                    } else {
                        f64::from(f32::from_bits(b))
                    }
                });
                let g = res.canonical(m.da, given);
                let c = [g[0], g[1], g[2]];
                let v = sample(ctx, &res, &samp, m.unorm || samp.unnormalized, c)
                    .map_err(fault(lane))?;
                write_result(w, inst, lane, res.swizzle(v), res.format.is_integer());
            }
            Ok(())
        }
        Op::ImageAtomicAdd | Op::ImageAtomicSwap | Op::ImageAtomicCmpswap => {
            let dfmt_ok = res.format.element_bytes() == 4
                && res.format.count() == 1
                && res.format.is_integer();
            if !dfmt_ok {
                return Err(bad(
                    "T# format: atomics need a 32-bit one-component UINT or SINT format",
                ));
            }
            let want = if op == Op::ImageAtomicCmpswap { 3 } else { 1 };
            if m.dmask != want {
                return Err(bad(&format!(
                    "dmask 0x{:x}: this atomic takes dmask 0x{want:x}",
                    m.dmask
                )));
            }
            for lane in lanes {
                let c = res.canonical(m.da, core::array::from_fn(|k| addr(w, lane, k)));
                let Some(at) = res.address(res.texel_of(&c)) else {
                    // Out of range: nothing changes, a returning atomic gets 0.
                    set_vdst_dword(w, &inst.dst, lane, 0, 0);
                    continue;
                };
                let data = vsrc_dword(w, &inst.src[1], lane, 0);
                let cmp = vsrc_dword(w, &inst.src[1], lane, 1);
                let old = ctx
                    .memory
                    .atomic_rmw_u32(at, &mut |old| match op {
                        Op::ImageAtomicAdd => old.wrapping_add(data),
                        Op::ImageAtomicSwap => data,
                        _ if old == cmp => data,
                        _ => old,
                    })
                    .map_err(fault(lane))?;
                if inst.dst != Operand::None {
                    set_vdst_dword(w, &inst.dst, lane, 0, old);
                }
            }
            Ok(())
        }
        _ => Err(not_implemented(inst)),
    }
}

/// Writes the `dmask`ed components of `v` to the lane's result VGPRs (`d16`: two per VGPR,
/// float-valued ones narrowed to binary16 (nearest even), integer ones to their low 16
/// bits), then a 0 status for `tfe`.
fn write_result(w: &mut Wave, inst: &Instruction, lane: usize, v: [u32; 4], integer: bool) {
    let m = inst.mods;
    let mut out = heapless::Vec::<u32, 4>::new();
    for (k, &x) in v.iter().enumerate() {
        if m.dmask >> k & 1 != 0 {
            let _ = out.push(x);
        }
    }
    let mut k = 0;
    if m.d16 {
        let half = |x: u32| {
            if integer {
                x & 0xFFFF
            } else {
                u32::from(f16::from_f64(f64::from(f32::from_bits(x))))
            }
        };
        for pair in out.chunks(2) {
            let lo = half(pair[0]);
            let hi = pair.get(1).map_or(0, |&x| half(x));
            set_vdst_dword(w, &inst.dst, lane, k, lo | hi << 16);
            k += 1;
        }
    } else {
        for &x in &out {
            set_vdst_dword(w, &inst.dst, lane, k, x);
            k += 1;
        }
    }
    if m.tfe {
        set_vdst_dword(w, &inst.dst, lane, k.max(1), 0);
    }
}

/// One lane of `image_store`: the `dmask`ed components from consecutive data VGPRs (`d16`:
/// two per VGPR) converted to the format at byte address `at`.
fn store(
    ctx: &mut Ctx<'_, '_>,
    w: &Wave,
    inst: &Instruction,
    res: &ImageResource,
    lane: usize,
    at: u64,
) -> Result<()> {
    let m = inst.mods;
    let f = &res.format;
    let mut elem = 0u128;
    let mut used = [false; 4];
    let mut next = 0;
    for (k, u) in used.iter_mut().enumerate() {
        if m.dmask >> k & 1 == 0 {
            continue;
        }
        let reg = vsrc_dword(w, &inst.src[1], lane, if m.d16 { next / 2 } else { next });
        if k < f.count() {
            elem |= if m.d16 {
                let h = if next % 2 == 1 { reg >> 16 } else { reg };
                f.store_d16(h as u16, k)
            } else {
                f.store(reg, k)
            };
            *u = true;
        }
        next += 1;
    }
    let bytes = elem.to_le_bytes();
    let n = f.element_bytes();
    if f.pieces(4).count() == 1 && f.pieces(4).next() == Some((0, n)) {
        // A packed format (or a one-component one): the element whole.
        if used.iter().any(|&u| u) {
            write_global(ctx, at, &bytes[..n])?;
        }
        return Ok(());
    }
    for (k, (off, len)) in f.pieces(4).enumerate() {
        if used[k] {
            write_global(ctx, at + off as u64, &bytes[off..off + len])?;
        }
    }
    Ok(())
}

/// The four filtered components (before DST_SEL) at coordinates `c` (x, y, then z or the
/// slice, as the image's type uses them); `unnormalized`: in texels.
fn sample(
    ctx: &Ctx<'_, '_>,
    res: &ImageResource,
    s: &Sampler,
    unnormalized: bool,
    c: [f64; 3],
) -> Result<[u32; 4]> {
    let n = res.coords();
    let array = res.array();
    // Filtered axes: x (and y unless 1D), z of a 3D image with Z_FILTER linear.
    let axes = if res.ty == IMG_3D {
        3
    } else {
        n - array as usize
    };
    let integer = res.format.is_integer();
    let border: [u32; 4] = {
        let (rgb, a) = match s.border {
            0 => (0, 0),
            1 => (0, 1),
            _ => (1, 1),
        };
        let val = |b: u32| {
            if integer {
                b
            } else {
                (b as f32).to_bits()
            }
        };
        [val(rgb), val(rgb), val(rgb), val(a)]
    };
    // Per axis: up to two (texel index or None for border, weight) taps.
    let mut taps: [[(Option<i64>, f64); 2]; 3] = [[(Some(0), 1.0), (None, 0.0)]; 3];
    for d in 0..axes {
        let size = i64::from(res.size[d]);
        let u = if unnormalized {
            c[d]
        } else {
            c[d] * size as f64
        };
        // NaN reads texel 0; infinities and huge values stop at ±2^30 texels (any address
        // mode maps those into the image or the border as the value itself would).
        let u = if u.is_nan() {
            0.0
        } else {
            u.clamp(-(2f64.powi(30)), 2f64.powi(30))
        };
        let linear = s.bilinear && (d < 2 || s.z_linear);
        taps[d] = if linear {
            let t = u - 0.5;
            let i = t.floor();
            let frac = t - i;
            let i = i as i64;
            [
                (Sampler::address(s.clamp[d], i, size), 1.0 - frac),
                (
                    Sampler::address(s.clamp[d], i.saturating_add(1), size),
                    frac,
                ),
            ]
        } else {
            let i = u.floor() as i64;
            [(Sampler::address(s.clamp[d], i, size), 1.0), (None, 0.0)]
        };
    }
    let slice = if array {
        let last = f64::from(res.size[2] - 1);
        Some(c[n - 1].round_ties_even().clamp(0.0, last) as i64)
    } else {
        None
    };
    let mut acc = [0f64; 4];
    let mut point = None;
    for (ix, wx) in taps[0] {
        for (iy, wy) in taps[1] {
            for (iz, wz) in taps[2] {
                let wt = wx * wy * wz;
                if wt == 0.0 && point.is_some() {
                    continue;
                }
                let idx = [ix, iy, iz];
                let mut t = [0u32; 3];
                let mut inside = true;
                for d in 0..3 {
                    if d < axes {
                        match idx[d] {
                            Some(i) => t[d] = i as u32,
                            None => inside = false,
                        }
                    }
                }
                if let Some(sl) = slice {
                    t[2] = sl as u32;
                }
                let v = if inside { res.fetch(ctx, t)? } else { border };
                if point.is_none() {
                    point = Some(v);
                }
                if !integer {
                    for k in 0..4 {
                        acc[k] += wt * f64::from(f32::from_bits(v[k]));
                    }
                }
            }
        }
    }
    if integer || !s.bilinear {
        return Ok(point.unwrap_or([0; 4]));
    }
    Ok(acc.map(|x| (x as f32).to_bits()))
}
