//! Where a texel of a swizzled (tiled) gfx9 image lies: the byte offset of element (x, y, z)
//! in the layouts of the gfx9 `SW_MODE`s, as AMD's address library (addrlib, `Gfx9Lib`) lays
//! them out for ROCR's image manager and as the texture unit reads them.
//!
//! A pure function of the T#'s layout fields and the GPU's address configuration: no memory,
//! no state. The image instructions (`exec/image.rs`) use it for every `SW_MODE` but 0
//! (linear).
//!
//! # The layout
//! Facts from addrlib's gfx9 model (ROCR's `image/addrlib`, `gfx9addrlib.cpp` and
//! `addrlib2.cpp`; the same library in Mesa), restated here:
//!
//! - **Swizzle modes** ([`SwizzleMode`], the T#'s `SW_MODE`, SQ_IMG_RSRC_WORD3 bits 24:20):
//!   0 linear; 1..=3 the 256 B block's S (standard), D (display) and R (rotated) modes;
//!   4..=7 the 4 KiB block's Z, S, D, R; 8..=11 the 64 KiB block's; 16..=19 the 64 KiB
//!   `_T` modes (PRT: XOR within the block only); 20..=23 the 4 KiB `_X` modes and 24..=27
//!   the 64 KiB `_X` ones (pipe/bank XOR). 12..=15 and 28..=31 are reserved (28..=31 are the
//!   variable-block modes addrlib never uses on gfx9).
//! - **Blocks.** The image is cut into blocks of the mode's size, stored row-major
//!   (x fastest, then y, then the slice or the 3D block layer), each block one contiguous
//!   256 B, 4 KiB or 64 KiB. A *thin* block holds a 2D tile of one slice: 2D images, 2D
//!   arrays (one slice per block layer) and 3D images in a D mode. Its size in elements is
//!   `2^n` with `n = log2(block bytes) − log2(element bytes)`, width `2^⌈n/2⌉` and height
//!   `2^⌊n/2⌋` (a 4-byte element: 8×8 in 256 B, 32×32 in 4 KiB, 128×128 in 64 KiB). A *thick*
//!   block holds a 3D brick (3D images in a Z or S mode): the 1 KiB micro brick of the
//!   element size (1 B 16×8×8, 2 B 8×8×8, 4 B 8×8×4, 8 B 8×4×4, 16 B 4×4×4) doubled along
//!   x, y and z in turn (4 KiB: ×1×2×2; 64 KiB: ×4×4×4).
//! - **Inside a block**, the low 8 bits (thin S/D/R: the 256 B micro tile; thin Z: the low
//!   6 bits) or 10 bits (thick: the 1 KiB micro brick) of the offset take element-coordinate
//!   bits in a fixed order per mode and element size ([`micro_bits`]); the bits above
//!   interleave the remaining coordinate bits: thin y, x, y, x... (an even offset bit takes
//!   y), thick z, y, x, z, y, x... (offset bit `i` takes z when `i % 3 == 1`, y when 2, x
//!   when 0).
//! - **XOR** (`_X` and `_T` modes). With `p` pipe bits (`min(block bits − interleave bits,
//!   log2 pipes + log2 shader engines)`) and `b` bank bits (`min(block bits − p − interleave
//!   bits, log2 banks)`), offset bit `interleave + i` (i < p) is XORed with the un-XORed
//!   offset bit `interleave + 2p − 1 − i`, and bank bit `interleave + p + i` (i < b) with bit
//!   `interleave + p + 2b − 1 − i` (thin); a thick block XORs each with two bits,
//!   `start + 3k − 1 − 2i` and `start + 3k − 2 − 2i` (`k` = p or b, `start` the field's
//!   first bit). The bits named may lie above the block (they continue the interleave of
//!   coordinate bits); `_T` modes take them as 0. A thin `_X` block also XORs its slice
//!   (array layer, or the 3D slice) into those fields: pipe bit `i` with slice bit `p − 1 −
//!   i`, bank bit `i` with slice bit `p + b − 1 − i`. Finally the surface's pipe/bank XOR
//!   value (the T# base address's bits from the pipe interleave up, see [`pipe_bank_xor`])
//!   is XORed into the pipe field and the bank field above it.
//! - **Padding.** Rows of blocks are `pitch / block width` blocks (the T#'s `PITCH`, a
//!   multiple of the block width: addrlib pads the pitch to it); a slice is `align(height,
//!   block height) / block height` rows; a 3D thick image's layers of blocks are
//!   `block depth` slices deep.
//!
//! # The address configuration
//! The pipe and bank counts are the GPU's `GB_ADDR_CONFIG` register ([`AddrConfig`]), which
//! ROCR hands to addrlib from `hsaKmtGetTileConfig` (amdkfd's `GET_TILE_CONFIG`, which
//! copies amdgpu's `gfx.config.gb_addr_config`) and which the texture unit reads.
//!
//! # Not modelled
//! Mip levels other than 0 of a swizzled image (the mip chain's placement and mip tail) and
//! multisampled surfaces; [`TiledSurface::new`] refuses the combinations addrlib refuses
//! (1D images, element sizes that are not a power of two, R modes of 3D images or of 16-byte
//! elements, Z modes of 16-byte 2D elements, 256 B blocks of 3D images).

use alloc::format;
use alloc::string::String;

/// The pipe and bank layout of a gfx9 GPU's memory, from its `GB_ADDR_CONFIG` register (the
/// fields addrlib reads: NUM_PIPES bits 2:0, PIPE_INTERLEAVE_SIZE bits 5:3, NUM_BANKS bits 14:12,
/// NUM_SHADER_ENGINES bits 20:19; `gfx9_gb_reg.h`). Each count is a power of two, stored as
/// its base-2 logarithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrConfig {
    /// log2 of the number of pipes (0..=5).
    pub pipes_log2: u32,
    /// log2 of the pipe interleave in bytes: 8 (256 B), the one interleave addrlib's gfx9
    /// model lays surfaces out for (its pipe/bank XOR value sits at address bit 8).
    pub pipe_interleave_log2: u32,
    /// log2 of the number of banks (0..=4).
    pub banks_log2: u32,
    /// log2 of the number of shader engines (0..=3).
    pub shader_engines_log2: u32,
}

impl AddrConfig {
    /// Decodes `GB_ADDR_CONFIG`.
    ///
    /// # Errors
    /// A sentence naming the field when NUM_PIPES is above 5 (32 pipes), NUM_BANKS above 4
    /// (16 banks) or PIPE_INTERLEAVE_SIZE not 0 (256 B): values addrlib has no layout for
    /// (`Gfx9Lib::HwlInitGlobalParams` asserts them).
    pub fn from_gb_addr_config(value: u32) -> Result<AddrConfig, String> {
        let pipes_log2 = value & 7;
        let banks_log2 = value >> 12 & 7;
        let interleave = value >> 3 & 7;
        if interleave != 0 {
            return Err(format!(
                "GB_ADDR_CONFIG {value:#x}: PIPE_INTERLEAVE_SIZE {interleave}: addrlib's gfx9 \
                 layouts need a 256-byte pipe interleave (0)"
            ));
        }
        if pipes_log2 > 5 {
            return Err(format!(
                "GB_ADDR_CONFIG {value:#x}: NUM_PIPES {pipes_log2} is not a gfx9 pipe count (0..=5)"
            ));
        }
        if banks_log2 > 4 {
            return Err(format!(
                "GB_ADDR_CONFIG {value:#x}: NUM_BANKS {banks_log2} is not a gfx9 bank count (0..=4)"
            ));
        }
        Ok(AddrConfig {
            pipes_log2,
            pipe_interleave_log2: 8,
            banks_log2,
            shader_engines_log2: value >> 19 & 3,
        })
    }

    /// Pipe (and shader engine) XOR bits of a block of `2^block_log2` bytes.
    pub fn pipe_xor_bits(&self, block_log2: u32) -> u32 {
        block_log2
            .saturating_sub(self.pipe_interleave_log2)
            .min(self.pipes_log2 + self.shader_engines_log2)
    }

    /// Bank XOR bits of a block of `2^block_log2` bytes.
    pub fn bank_xor_bits(&self, block_log2: u32) -> u32 {
        block_log2
            .saturating_sub(self.pipe_xor_bits(block_log2) + self.pipe_interleave_log2)
            .min(self.banks_log2)
    }
}

/// How elements are ordered inside a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Z order (Morton), the depth/MSAA modes.
    Z,
    /// Standard: the texture modes.
    S,
    /// Display.
    D,
    /// Rotated.
    R,
}

/// A gfx9 swizzle mode other than linear: the T#'s `SW_MODE` decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwizzleMode {
    /// The `SW_MODE` value (1..=11, 16..=27).
    pub value: u32,
    /// log2 of the block size in bytes: 8 (256 B), 12 (4 KiB) or 16 (64 KiB).
    pub block_log2: u32,
    /// Element order in the block.
    pub swizzle: Swizzle,
    /// Pipe/bank XOR (`_X` and `_T` modes).
    pub xor: bool,
    /// The `_T` (PRT) modes: XOR with bits inside the block only, no slice XOR.
    pub prt: bool,
}

impl SwizzleMode {
    /// Decodes `SW_MODE`: `Ok(None)` for 0 (linear).
    ///
    /// # Errors
    /// A sentence naming the value for the reserved modes (12..=15, 28..=31).
    pub fn from_sw_mode(value: u32) -> Result<Option<SwizzleMode>, String> {
        let swizzle = [Swizzle::Z, Swizzle::S, Swizzle::D, Swizzle::R][(value & 3) as usize];
        let (block_log2, xor, prt) = match value {
            0 => return Ok(None),
            1..=3 => (8, false, false),
            4..=7 => (12, false, false),
            8..=11 => (16, false, false),
            16..=19 => (16, true, true),
            20..=23 => (12, true, false),
            24..=27 => (16, true, false),
            _ => {
                return Err(format!(
                    "SW_MODE {value}: reserved on gfx9 (12..=15 and 28..=31 name no layout)"
                ))
            }
        };
        Ok(Some(SwizzleMode {
            value,
            block_log2,
            swizzle,
            xor,
            prt,
        }))
    }

    /// The mode's name as addrlib spells it (`SW_4KB_D_X`).
    pub fn name(&self) -> String {
        let block = match self.block_log2 {
            8 => "256B",
            12 => "4KB",
            _ => "64KB",
        };
        let suffix = match (self.xor, self.prt) {
            (true, true) => "_T",
            (true, false) => "_X",
            _ => "",
        };
        format!("SW_{block}_{:?}{suffix}", self.swizzle)
    }
}

/// The kind of image a T# describes, as the layout sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    /// 2D images and 2D arrays (the third coordinate is the array slice).
    Tex2d,
    /// 3D images (the third coordinate is the depth).
    Tex3d,
}

/// One offset bit's source: coordinate `axis` (0 x, 1 y, 2 z) bit `bit` (of the element
/// coordinate; x counted in elements).
type Src = (u8, u8);

const X0: Src = (0, 0);
const X1: Src = (0, 1);
const X2: Src = (0, 2);
const X3: Src = (0, 3);
const Y0: Src = (1, 0);
const Y1: Src = (1, 1);
const Y2: Src = (1, 2);
const Y3: Src = (1, 3);
const Z0: Src = (2, 0);
const Z1: Src = (2, 1);
const Z2: Src = (2, 2);

/// The coordinate bits of the low offset bits of a block, from bit `log2(element bytes)`
/// up: the 256 B micro tile of a thin S/D/R block (up to bit 7), the 1 KiB micro brick of
/// a thick block (up to bit 9), the low 6 bits of a thin Z block. `swizzle` is the order
/// as the layout applies it (a 3D image's D mode is thin with the S micro tile).
/// `None` for a combination addrlib has no layout for.
pub fn micro_bits(swizzle: Swizzle, thick: bool, element_log2: u32) -> Option<&'static [Src]> {
    use Swizzle::*;
    let bits: &'static [Src] = match (thick, swizzle, element_log2) {
        // Thin, standard: the element's bytes of x fill bits 0..3, then y.
        (false, S, 0) => &[X0, X1, X2, X3, Y0, Y1, Y2, Y3],
        (false, S, 1) => &[X0, X1, X2, Y0, Y1, Y2, X3],
        (false, S, 2) => &[X0, X1, Y0, Y1, Y2, X2],
        (false, S, 3) => &[X0, Y0, Y1, X1, X2],
        (false, S, 4) => &[Y0, Y1, X0, X1],
        // Thin, display.
        (false, D, 0) => &[X0, X1, X2, Y1, Y0, Y2, X3, Y3],
        (false, D, 1) => &[X0, X1, X2, Y0, Y1, Y2, X3],
        (false, D, 2) => &[X0, X1, Y0, X2, Y1, Y2],
        (false, D, 3) => &[X0, Y0, X1, X2, Y1],
        (false, D, 4) => &[X0, Y0, X1, Y1],
        // Thin, rotated (no 16-byte elements).
        (false, R, 0) => &[Y0, Y1, Y2, X1, X0, X2, X3, Y3],
        (false, R, 1) => &[Y0, Y1, Y2, X0, X1, X2, X3],
        (false, R, 2) => &[Y0, Y1, X0, Y2, X1, X2],
        (false, R, 3) => &[Y0, X0, Y1, X1, X2],
        // Thin, Z order: x and y alternate up to bit 5 (no 16-byte elements).
        (false, Z, 0) => &[X0, Y0, X1, Y1, X2, Y2],
        (false, Z, 1) => &[X0, Y0, X1, Y1, X2],
        (false, Z, 2) => &[X0, Y0, X1, Y1],
        (false, Z, 3) => &[X0, Y0, X1],
        // Thick, standard: x bytes, y, z, then the element size's extra bits.
        (true, S, 0) => &[X0, X1, X2, X3, Y0, Y1, Z0, Z1, Z2, Y2],
        (true, S, 1) => &[X0, X1, X2, Y0, Y1, Z0, Z1, Z2, Y2],
        (true, S, 2) => &[X0, X1, Y0, Y1, Z0, Z1, Y2, X2],
        (true, S, 3) => &[X0, Y0, Y1, Z0, Z1, X1, X2],
        (true, S, 4) => &[Y0, Y1, Z0, Z1, X0, X1],
        // Thick, Z order.
        (true, Z, 0) => &[X0, Y0, X1, Y1, Z0, Z1, X2, Z2, Y2, X3],
        (true, Z, 1) => &[X0, Y0, X1, Y1, Z0, Z1, Z2, Y2, X2],
        (true, Z, 2) => &[X0, Y0, X1, Z0, Y1, Z1, Y2, X2],
        (true, Z, 3) => &[X0, Y0, Z0, X1, Z1, Y1, X2],
        (true, Z, 4) => &[X0, Y0, Z0, Z1, Y1, X1],
        _ => return None,
    };
    Some(bits)
}

/// A swizzled image's level 0 as the texture unit addresses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledSurface {
    /// The swizzle mode.
    pub mode: SwizzleMode,
    /// 2D (and 2D array) or 3D.
    pub dimension: Dimension,
    /// log2 of the element size in bytes (0..=4).
    pub element_log2: u32,
    /// Elements from one row of blocks' first element to the next row's (the T#'s
    /// `PITCH + 1`), a multiple of the block width.
    pub pitch: u32,
    /// Rows of elements of a slice (the T#'s `HEIGHT + 1`), before padding.
    pub height: u32,
    /// The GPU's pipe and bank layout.
    pub config: AddrConfig,
    /// Whether a block is a 3D brick (3D images in a Z or S mode) rather than a 2D tile.
    thick: bool,
    /// Block width, height and depth in elements.
    block: [u32; 3],
    /// The bits of the micro tile or brick above the element's bytes.
    micro: &'static [Src],
}

impl TiledSurface {
    /// The layout of level 0 of an image of `element_bytes`-byte elements.
    ///
    /// # Errors
    /// A sentence naming what addrlib has no layout for: an element size that is not 1, 2,
    /// 4, 8 or 16 bytes; an R mode of a 3D image or of 16-byte elements; a Z mode of 16-byte
    /// 2D elements; a 256 B block of a 3D image; a `pitch` that is not a multiple of the
    /// block width (the T#'s `PITCH` is named).
    pub fn new(
        mode: SwizzleMode,
        dimension: Dimension,
        element_bytes: usize,
        pitch: u32,
        height: u32,
        config: AddrConfig,
    ) -> Result<TiledSurface, String> {
        let name = mode.name();
        if !element_bytes.is_power_of_two() || element_bytes > 16 {
            return Err(format!(
                "{name} (SW_MODE {}): {element_bytes}-byte elements are laid out linearly only",
                mode.value
            ));
        }
        let element_log2 = element_bytes.trailing_zeros();
        let tex3d = dimension == Dimension::Tex3d;
        let thick = tex3d && matches!(mode.swizzle, Swizzle::Z | Swizzle::S);
        // A 3D image's D mode is thin with the standard micro tile.
        let swizzle = if tex3d && mode.swizzle == Swizzle::D {
            Swizzle::S
        } else {
            mode.swizzle
        };
        let refused = tex3d && (mode.swizzle == Swizzle::R || mode.block_log2 == 8);
        let micro = if refused {
            None
        } else {
            micro_bits(swizzle, thick, element_log2)
        };
        let Some(micro) = micro else {
            return Err(format!(
                "{name} (SW_MODE {}): no {} layout for {element_bytes}-byte elements",
                mode.value,
                if tex3d { "3D" } else { "2D" }
            ));
        };
        let block = block_dimensions(mode.block_log2, element_log2, thick);
        if pitch == 0 || pitch % block[0] != 0 {
            return Err(format!(
                "PITCH {} (a pitch of {pitch} elements): not a multiple of {name}'s block \
                 width of {} elements",
                pitch.wrapping_sub(1),
                block[0]
            ));
        }
        Ok(TiledSurface {
            mode,
            dimension,
            element_log2,
            pitch,
            height,
            config,
            thick,
            block,
            micro,
        })
    }

    /// Block width, height and depth in elements.
    pub fn block(&self) -> [u32; 3] {
        self.block
    }

    /// The offset bits of element `(x, y, z)` of a block-aligned surface whose pipe/bank XOR
    /// is `pipe_bank_xor` (module docs; 0 for the modes without XOR), in bytes from the
    /// surface's block-aligned base; `z` is the slice of a 2D array or the depth of a 3D
    /// image. Coordinates outside the image are the caller's to refuse: they address the
    /// padding or the next slice.
    pub fn offset(&self, [x, y, z]: [u32; 3], pipe_bank_xor: u32) -> u64 {
        let e = self.element_log2;
        let blk = self.mode.block_log2;
        let coord = [x, y, z];
        // Coordinate bits taken so far per axis.
        let mut used = [0u32; 3];
        // The un-XORed offset, extended past the block (up to bit 47) with the interleave
        // of the coordinates' remaining bits, which the XOR reads.
        let mut raw: u64 = 0;
        let mut bit = e;
        for &(axis, b) in self.micro {
            raw |= u64::from(coord[axis as usize] >> b & 1) << bit;
            used[axis as usize] = used[axis as usize].max(u32::from(b) + 1);
            bit += 1;
        }
        while bit < 48 {
            let axis = if self.thick {
                [0, 2, 1][(bit % 3) as usize]
            } else if bit % 2 == 0 {
                1
            } else {
                0
            };
            let v = coord[axis].checked_shr(used[axis]).unwrap_or(0) & 1;
            raw |= u64::from(v) << bit;
            used[axis] += 1;
            bit += 1;
        }
        let mask = (1u64 << blk) - 1;
        let mut inner = raw & mask;
        if self.mode.xor {
            let source = if self.mode.prt { raw & mask } else { raw };
            let c = &self.config;
            let start = c.pipe_interleave_log2;
            let p = c.pipe_xor_bits(blk);
            let b = c.bank_xor_bits(blk);
            let at = |n: u32| source >> n & 1;
            let mut fold = |first: u32, k: u32| {
                for i in 0..k {
                    let v = if self.thick {
                        at(first + 3 * k - 1 - 2 * i) ^ at(first + 3 * k - 2 - 2 * i)
                    } else {
                        at(first + 2 * k - 1 - i)
                    };
                    inner ^= v << (first + i);
                }
            };
            fold(start, p);
            fold(start + p, b);
            if !self.mode.prt && !self.thick {
                for i in 0..p {
                    inner ^= u64::from(z >> (p - 1 - i) & 1) << (start + i);
                }
                for i in 0..b {
                    inner ^= u64::from(z >> (p + b - 1 - i) & 1) << (start + p + i);
                }
            }
            let field = (1u64 << (p + b)) - 1;
            inner ^= (u64::from(pipe_bank_xor) & field) << start;
            inner &= mask;
        }
        let [bw, bh, bd] = self.block;
        let pitch_blocks = u64::from(self.pitch / bw);
        let slice_blocks = pitch_blocks * u64::from(self.height.div_ceil(bh));
        let layer = u64::from(z / bd);
        let index = layer * slice_blocks + u64::from(y / bh) * pitch_blocks + u64::from(x / bw);
        (index << blk) | inner
    }
}

/// Block width, height and depth in elements (module docs).
fn block_dimensions(block_log2: u32, element_log2: u32, thick: bool) -> [u32; 3] {
    if thick {
        // The 1 KiB micro brick per element size, doubled along x, y, z in turn.
        let micro = [[16, 8, 8], [8, 8, 8], [8, 8, 4], [8, 4, 4], [4, 4, 4]][element_log2 as usize];
        let amp = block_log2 - 10;
        let (all, rest) = (amp / 3, amp % 3);
        [
            micro[0] << all,
            micro[1] << (all + rest / 2),
            micro[2] << (all + u32::from(rest != 0)),
        ]
    } else {
        let n = block_log2 - element_log2;
        let w = n.div_ceil(2);
        [1 << w, 1 << (n - w), 1]
    }
}

/// The pipe/bank XOR a swizzled image's base address carries, and the block-aligned base:
/// addrlib's pipe/bank XOR value is ORed into the base address from the pipe interleave up
/// (`Gfx9Lib::HwlComputePipeBankXor`), so the bits of `base` below the block are that value
/// (for the `_X`/`_T` modes) and must lie in its `pipe + bank` bits. Returns `(aligned
/// base, pipe_bank_xor)`.
///
/// # Errors
/// A sentence naming BASE_ADDRESS when `base` has bits below the block outside the pipe/bank
/// XOR field of an XOR mode (a placement addrlib never gives such a surface); a mode without
/// XOR keeps any 256-byte-aligned base (`(base, 0)`).
pub fn pipe_bank_xor(surface: &TiledSurface, base: u64) -> Result<(u64, u32), String> {
    if !surface.mode.xor {
        return Ok((base, 0));
    }
    let blk = surface.mode.block_log2;
    let c = &surface.config;
    let start = c.pipe_interleave_log2;
    let bits = c.pipe_xor_bits(blk) + c.bank_xor_bits(blk);
    let low = base & ((1u64 << blk) - 1);
    let field = ((1u64 << bits) - 1) << start;
    if low & !field != 0 {
        return Err(format!(
            "BASE_ADDRESS {base:#x}: {} needs a base aligned to its {} KiB block but for the \
             pipe/bank XOR bits {start}..{} (the block offset is {low:#x})",
            surface.mode.name(),
            (1u64 << blk) / 1024,
            start + bits,
        ));
    }
    Ok((base & !((1u64 << blk) - 1), (low >> start) as u32))
}

#[cfg(test)]
mod tests;
