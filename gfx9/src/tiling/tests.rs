//! The layouts against golden offsets: each row's offset is what AMD's addrlib (ROCR
//! 5.2.3's `Addr2ComputeSurfaceAddrFromCoord`, gfx9) returns for that surface and element,
//! and what addrlib's bit equations for the mode (`HwlComputeThinEquation`,
//! `HwlComputeThickEquation`, evaluated bit by bit) give: two derivations, computed once off
//! the tree and agreeing on every row (and on 73,000 random ones), neither of them this
//! module's code.

use super::*;

/// 2D (and 2D array) surface.
const D2: Dimension = Dimension::Tex2d;
/// 3D surface.
const D3: Dimension = Dimension::Tex3d;

/// `(GB_ADDR_CONFIG, dimension, SW_MODE, element bytes, pitch, height, [x, y, z],
/// pipe/bank XOR, byte offset)`. The configurations: 0x22194042 (the emulated MI210: 4
/// pipes, 16 banks, 8 shader engines), 0x22114042 (4 engines, the MI60), 0x2a114042 (Vega
/// 10) and 0 (one pipe, one bank); every swizzle mode, 2D and 3D, all five element sizes.
/// One row of [`GOLDEN`].
type Golden = (u32, Dimension, u32, usize, u32, u32, [u32; 3], u32, u64);

#[rustfmt::skip]
const GOLDEN: [Golden; 48] = [
    (0x0, D2, 1, 8, 24, 2, [2, 1, 8], 0x0, 0x1850),
    (0x2a114042, D2, 2, 1, 48, 11, [37, 5, 6], 0x0, 0x1435),
    (0x2a114042, D2, 3, 4, 24, 10, [15, 9, 7], 0x0, 0x2ed4),
    (0x22114042, D2, 4, 1, 192, 126, [36, 55, 9], 0x0, 0x36d3a),
    (0x22114042, D3, 4, 1, 32, 24, [1, 4, 8], 0x0, 0x501),
    (0x22194042, D2, 5, 4, 32, 17, [29, 2, 2], 0x0, 0x2aa4),
    (0x0, D3, 5, 4, 24, 12, [11, 7, 7], 0x0, 0x15fc),
    (0x0, D2, 6, 4, 96, 34, [22, 27, 5], 0x0, 0x1ed78),
    (0x22114042, D3, 6, 4, 32, 31, [15, 9, 1], 0x0, 0x139c),
    (0x22114042, D2, 7, 8, 32, 24, [4, 0, 9], 0x0, 0x12080),
    (0x2a114042, D2, 8, 1, 256, 387, [74, 350, 8], 0x0, 0x1131ec),
    (0x22194042, D3, 8, 2, 96, 6, [69, 3, 1], 0x0, 0x20236),
    (0x22114042, D2, 9, 8, 128, 68, [50, 4, 6], 0x0, 0xc2940),
    (0x2a114042, D3, 9, 1, 64, 60, [26, 18, 5], 0x0, 0x516a),
    (0x22114042, D2, 10, 8, 128, 6, [76, 5, 4], 0x0, 0x48350),
    (0x0, D3, 10, 1, 256, 80, [226, 78, 7], 0x0, 0x7b8e2),
    (0x2a114042, D2, 11, 1, 512, 267, [419, 241, 8], 0x0, 0x21dd19),
    (0x22194042, D2, 16, 4, 128, 111, [103, 72, 2], 0x0, 0x2fd94),
    (0x22194042, D3, 16, 4, 96, 36, [21, 1, 11], 0x0, 0xbaac),
    (0x22194042, D2, 17, 2, 256, 159, [35, 45, 10], 0x18, 0x140156),
    (0x22194042, D3, 17, 8, 64, 4, [51, 3, 11], 0x66, 0x1dff8),
    (0x22194042, D2, 18, 2, 768, 181, [277, 27, 3], 0x0, 0x13073a),
    (0x22194042, D3, 18, 16, 192, 67, [87, 13, 11], 0x0, 0x4337d0),
    (0x22194042, D2, 19, 1, 768, 394, [335, 129, 6], 0x0, 0x257879),
    (0x22194042, D2, 20, 8, 32, 27, [27, 14, 11], 0x0, 0x16268),
    (0x2a114042, D2, 20, 2, 64, 47, [17, 29, 11], 0x0, 0x16a46),
    (0x22194042, D3, 20, 4, 16, 15, [13, 11, 2], 0x0, 0x12cc),
    (0x2a114042, D3, 20, 8, 24, 10, [8, 9, 3], 0x0, 0x4cb0),
    (0x22194042, D2, 21, 1, 64, 2, [31, 1, 5], 0x0, 0x581f),
    (0x22194042, D3, 21, 1, 16, 32, [1, 18, 1], 0x0, 0x1461),
    (0x22194042, D2, 22, 1, 192, 107, [167, 87, 11], 0x0, 0x47d3f),
    (0x22114042, D2, 22, 8, 32, 12, [10, 2, 6], 0x0, 0x64a0),
    (0x22194042, D3, 22, 8, 96, 14, [15, 2, 5], 0x0, 0xf8e8),
    (0x2a114042, D3, 22, 1, 192, 115, [183, 64, 1], 0x0, 0xbb07),
    (0x22194042, D2, 23, 4, 32, 2, [17, 1, 1], 0x0, 0x1014),
    (0x22194042, D2, 24, 2, 768, 9, [273, 4, 9], 0xa3, 0x1cf242),
    (0x22114042, D2, 24, 1, 768, 438, [390, 75, 10], 0x0, 0x3ddc5e),
    (0x22194042, D3, 24, 4, 32, 26, [11, 18, 5], 0x0, 0x4474),
    (0x2a114042, D3, 24, 16, 48, 6, [1, 0, 5], 0x52, 0x5650),
    (0x22194042, D2, 25, 2, 768, 149, [551, 66, 5], 0x0, 0x20542e),
    (0x22114042, D2, 25, 4, 256, 167, [124, 26, 2], 0x0, 0x8aea0),
    (0x22194042, D3, 25, 4, 32, 19, [3, 10, 11], 0x47, 0x7fec),
    (0x0, D3, 25, 2, 96, 27, [75, 24, 3], 0x0, 0x258c6),
    (0x22194042, D2, 26, 16, 64, 101, [32, 3, 1], 0x0, 0x294a0),
    (0x22114042, D2, 26, 8, 256, 109, [94, 60, 1], 0x91, 0x44d60),
    (0x22194042, D3, 26, 8, 128, 30, [111, 12, 11], 0xad, 0xb04c8),
    (0x22114042, D3, 26, 16, 192, 64, [10, 5, 1], 0x0, 0x30190),
    (0x22194042, D2, 27, 1, 256, 351, [124, 312, 6], 0x0, 0xdb1e0),
];

/// `(dimension, SW_MODE, element bytes, [x, y, z], byte offset)` inside one block of the
/// 4 KiB Z, S, D and R modes (no XOR, `GB_ADDR_CONFIG` 0) of every element size, in a surface
/// one block wide and high: the order of the micro tile (2D) or brick (3D) and the
/// interleave above it, per mode (addrlib's offsets, as for [`GOLDEN`]).
#[rustfmt::skip]
const MICRO: [(Dimension, u32, usize, [u32; 3], u64); 132] = [
    (D2, 4, 1, [5, 3, 1], 0x101b),
    (D2, 4, 1, [10, 12, 0], 0xe4),
    (D2, 4, 1, [63, 63, 1], 0x1fff),
    (D2, 4, 1, [33, 18, 1], 0x1909),
    (D2, 4, 2, [5, 3, 1], 0x1036),
    (D2, 4, 2, [10, 12, 0], 0x1c8),
    (D2, 4, 2, [63, 31, 1], 0x1ffe),
    (D2, 4, 2, [33, 10, 1], 0x1912),
    (D2, 4, 4, [5, 3, 1], 0x10ac),
    (D2, 4, 4, [10, 12, 0], 0x350),
    (D2, 4, 4, [31, 31, 1], 0x1ffc),
    (D2, 4, 4, [17, 10, 1], 0x1924),
    (D2, 4, 8, [5, 3, 1], 0x10d8),
    (D2, 4, 8, [10, 12, 0], 0x720),
    (D2, 4, 8, [31, 15, 1], 0x1ff8),
    (D2, 4, 8, [17, 6, 1], 0x1948),
    (D3, 4, 1, [5, 3, 1], 0x5b),
    (D3, 4, 1, [10, 12, 6], 0xba4),
    (D3, 4, 1, [15, 15, 15], 0xfff),
    (D3, 4, 1, [9, 6, 8], 0x709),
    (D3, 4, 2, [5, 3, 1], 0x236),
    (D3, 4, 2, [2, 12, 6], 0x9c8),
    (D3, 4, 2, [7, 15, 15], 0xffe),
    (D3, 4, 2, [5, 6, 8], 0x712),
    (D3, 4, 4, [5, 3, 1], 0x26c),
    (D3, 4, 4, [2, 12, 6], 0xd90),
    (D3, 4, 4, [7, 15, 7], 0xffc),
    (D3, 4, 4, [5, 6, 4], 0x744),
    (D3, 4, 8, [5, 3, 1], 0x338),
    (D3, 4, 8, [2, 4, 6], 0xcc0),
    (D3, 4, 8, [7, 7, 7], 0xff8),
    (D3, 4, 8, [5, 4, 4], 0xe08),
    (D3, 4, 16, [1, 3, 1], 0x170),
    (D3, 4, 16, [2, 4, 6], 0xe80),
    (D3, 4, 16, [3, 7, 7], 0xff0),
    (D3, 4, 16, [3, 4, 4], 0xe10),
    (D2, 5, 1, [5, 3, 1], 0x1035),
    (D2, 5, 1, [10, 12, 0], 0xca),
    (D2, 5, 1, [63, 63, 1], 0x1fff),
    (D2, 5, 1, [33, 18, 1], 0x1921),
    (D2, 5, 2, [5, 3, 1], 0x103a),
    (D2, 5, 2, [10, 12, 0], 0x1c4),
    (D2, 5, 2, [63, 31, 1], 0x1ffe),
    (D2, 5, 2, [33, 10, 1], 0x1922),
    (D2, 5, 4, [5, 3, 1], 0x10b4),
    (D2, 5, 4, [10, 12, 0], 0x348),
    (D2, 5, 4, [31, 31, 1], 0x1ffc),
    (D2, 5, 4, [17, 10, 1], 0x1924),
    (D2, 5, 8, [5, 3, 1], 0x10b8),
    (D2, 5, 8, [10, 12, 0], 0x740),
    (D2, 5, 8, [31, 15, 1], 0x1ff8),
    (D2, 5, 8, [17, 6, 1], 0x1928),
    (D2, 5, 16, [5, 3, 1], 0x1270),
    (D2, 5, 16, [10, 12, 0], 0xd80),
    (D2, 5, 16, [15, 15, 1], 0x1ff0),
    (D2, 5, 16, [9, 6, 1], 0x1960),
    (D3, 5, 1, [5, 3, 1], 0x75),
    (D3, 5, 1, [10, 12, 6], 0xb8a),
    (D3, 5, 1, [15, 15, 15], 0xfff),
    (D3, 5, 1, [9, 6, 8], 0x629),
    (D3, 5, 2, [5, 3, 1], 0x7a),
    (D3, 5, 2, [2, 12, 6], 0xb84),
    (D3, 5, 2, [7, 15, 15], 0xffe),
    (D3, 5, 2, [5, 6, 8], 0x62a),
    (D3, 5, 4, [5, 3, 1], 0x274),
    (D3, 5, 4, [2, 12, 6], 0xd88),
    (D3, 5, 4, [7, 15, 7], 0xffc),
    (D3, 5, 4, [5, 6, 4], 0x724),
    (D3, 5, 8, [5, 3, 1], 0x278),
    (D3, 5, 8, [2, 4, 6], 0xd80),
    (D3, 5, 8, [7, 7, 7], 0xff8),
    (D3, 5, 8, [5, 4, 4], 0xe08),
    (D3, 5, 16, [1, 3, 1], 0x170),
    (D3, 5, 16, [2, 4, 6], 0xe80),
    (D3, 5, 16, [3, 7, 7], 0xff0),
    (D3, 5, 16, [3, 4, 4], 0xf00),
    (D2, 6, 1, [5, 3, 1], 0x101d),
    (D2, 6, 1, [10, 12, 0], 0xe2),
    (D2, 6, 1, [63, 63, 1], 0x1fff),
    (D2, 6, 1, [33, 18, 1], 0x1909),
    (D2, 6, 2, [5, 3, 1], 0x103a),
    (D2, 6, 2, [10, 12, 0], 0x1c4),
    (D2, 6, 2, [63, 31, 1], 0x1ffe),
    (D2, 6, 2, [33, 10, 1], 0x1922),
    (D2, 6, 4, [5, 3, 1], 0x1074),
    (D2, 6, 4, [10, 12, 0], 0x388),
    (D2, 6, 4, [31, 31, 1], 0x1ffc),
    (D2, 6, 4, [17, 10, 1], 0x1944),
    (D2, 6, 8, [5, 3, 1], 0x10d8),
    (D2, 6, 8, [10, 12, 0], 0x720),
    (D2, 6, 8, [31, 15, 1], 0x1ff8),
    (D2, 6, 8, [17, 6, 1], 0x1988),
    (D2, 6, 16, [5, 3, 1], 0x12b0),
    (D2, 6, 16, [10, 12, 0], 0xd40),
    (D2, 6, 16, [15, 15, 1], 0x1ff0),
    (D2, 6, 16, [9, 6, 1], 0x1990),
    (D3, 6, 1, [5, 3, 1], 0x1035),
    (D3, 6, 1, [10, 12, 0], 0xca),
    (D3, 6, 1, [63, 63, 1], 0x1fff),
    (D3, 6, 1, [33, 18, 1], 0x1921),
    (D3, 6, 2, [5, 3, 1], 0x103a),
    (D3, 6, 2, [10, 12, 0], 0x1c4),
    (D3, 6, 2, [63, 31, 1], 0x1ffe),
    (D3, 6, 2, [33, 10, 1], 0x1922),
    (D3, 6, 4, [5, 3, 1], 0x10b4),
    (D3, 6, 4, [10, 12, 0], 0x348),
    (D3, 6, 4, [31, 31, 1], 0x1ffc),
    (D3, 6, 4, [17, 10, 1], 0x1924),
    (D3, 6, 8, [5, 3, 1], 0x10b8),
    (D3, 6, 8, [10, 12, 0], 0x740),
    (D3, 6, 8, [31, 15, 1], 0x1ff8),
    (D3, 6, 8, [17, 6, 1], 0x1928),
    (D3, 6, 16, [5, 3, 1], 0x1270),
    (D3, 6, 16, [10, 12, 0], 0xd80),
    (D3, 6, 16, [15, 15, 1], 0x1ff0),
    (D3, 6, 16, [9, 6, 1], 0x1960),
    (D2, 7, 1, [5, 3, 1], 0x1033),
    (D2, 7, 1, [10, 12, 0], 0xcc),
    (D2, 7, 1, [63, 63, 1], 0x1fff),
    (D2, 7, 1, [33, 18, 1], 0x1912),
    (D2, 7, 2, [5, 3, 1], 0x1056),
    (D2, 7, 2, [10, 12, 0], 0x1a8),
    (D2, 7, 2, [63, 31, 1], 0x1ffe),
    (D2, 7, 2, [33, 10, 1], 0x1914),
    (D2, 7, 4, [5, 3, 1], 0x109c),
    (D2, 7, 4, [10, 12, 0], 0x360),
    (D2, 7, 4, [31, 31, 1], 0x1ffc),
    (D2, 7, 4, [17, 10, 1], 0x1918),
    (D2, 7, 8, [5, 3, 1], 0x10b8),
    (D2, 7, 8, [10, 12, 0], 0x740),
    (D2, 7, 8, [31, 15, 1], 0x1ff8),
    (D2, 7, 8, [17, 6, 1], 0x1930),
];

#[test]
fn micro_tiles_and_bricks_match_addrlib() {
    let config = AddrConfig::from_gb_addr_config(0).unwrap();
    for (dim, sw, bytes, at, want) in MICRO {
        let mode = SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
        let w = width_of(sw, dim, bytes);
        let h = TiledSurface::new(mode, dim, bytes, w, 1, config)
            .unwrap()
            .block()[1];
        let s = TiledSurface::new(mode, dim, bytes, w, h, config).unwrap();
        assert_eq!(
            s.offset(at, 0),
            want,
            "{} {dim:?} {bytes} B {at:?}",
            mode.name()
        );
    }
}

#[test]
fn offsets_match_addrlib() {
    for (gb, dim, sw, bytes, pitch, height, at, pbx, want) in GOLDEN {
        let config = AddrConfig::from_gb_addr_config(gb).unwrap();
        let mode = SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
        let s = TiledSurface::new(mode, dim, bytes, pitch, height, config).unwrap();
        assert_eq!(
            s.offset(at, pbx),
            want,
            "{} {dim:?} {bytes} B, pitch {pitch} height {height}, {at:?}, GB_ADDR_CONFIG {gb:#x}, \
             pipe/bank XOR {pbx:#x}",
            mode.name()
        );
    }
}

/// Every element of a small 2D array and a 3D image of each mode lands on its own bytes:
/// the layout is a bijection onto the padded blocks (no two texels share an address, none
/// lies outside the surface's blocks).
#[test]
fn every_element_has_its_own_bytes() {
    let config = AddrConfig::from_gb_addr_config(0x2219_4042).unwrap();
    for sw in (1..=11).chain(16..=27) {
        let mode = SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
        for dim in [D2, D3] {
            let sizes: &[usize] = if mode.block_log2 == 16 {
                &[16]
            } else {
                &[1, 4, 16]
            };
            for &bytes in sizes {
                let Ok(s) =
                    TiledSurface::new(mode, dim, bytes, width_of(sw, dim, bytes), 1, config)
                else {
                    continue;
                };
                let [bw, bh, bd] = s.block();
                // Two blocks wide, one and a half high (padded to two), slices to fill two
                // layers of blocks.
                let (w, h, d) = (bw * 2, bh + bh / 2, (bd * 2).max(2));
                let s = TiledSurface::new(mode, dim, bytes, w, h, config).unwrap();
                let span =
                    (u64::from(w / bw) * u64::from(h.div_ceil(bh)) * u64::from(d.div_ceil(bd)))
                        << mode.block_log2;
                let mut seen = vec![false; (span / bytes as u64) as usize];
                for z in 0..d {
                    for y in 0..h {
                        for x in 0..w {
                            let o = s.offset([x, y, z], 0);
                            assert_eq!(o % bytes as u64, 0, "{} {dim:?}", mode.name());
                            let slot = (o / bytes as u64) as usize;
                            assert!(
                                slot < seen.len(),
                                "{} {dim:?} {bytes} B: {o:#x} outside",
                                mode.name()
                            );
                            assert!(
                                !seen[slot],
                                "{} {dim:?} {bytes} B: {o:#x} twice",
                                mode.name()
                            );
                            seen[slot] = true;
                        }
                    }
                }
            }
        }
    }
}

/// The block width of `SW_MODE` `sw` for `bytes`-byte elements of a `dim` image.
fn width_of(sw: u32, dim: Dimension, bytes: usize) -> u32 {
    let m = SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
    let thick = dim == D3 && matches!(m.swizzle, Swizzle::Z | Swizzle::S) && m.block_log2 > 8;
    block_dimensions(m.block_log2, bytes.trailing_zeros(), thick)[0]
}

#[test]
fn gb_addr_config_fields() {
    // The emulated MI210's value: 4 pipes, 16 banks, 8 shader engines, 256 B interleave.
    let c = AddrConfig::from_gb_addr_config(0x2219_4042).unwrap();
    assert_eq!(
        c,
        AddrConfig {
            pipes_log2: 2,
            pipe_interleave_log2: 8,
            banks_log2: 4,
            shader_engines_log2: 3,
        }
    );
    // 64 KiB: 5 pipe bits (4 pipes × 8 engines), the 3 bits left below the block for banks;
    // 4 KiB: the 4 bits above the interleave all go to pipes, none to banks.
    assert_eq!((c.pipe_xor_bits(16), c.bank_xor_bits(16)), (5, 3));
    assert_eq!((c.pipe_xor_bits(12), c.bank_xor_bits(12)), (4, 0));
    let zero = AddrConfig::from_gb_addr_config(0).unwrap();
    assert_eq!((zero.pipe_xor_bits(16), zero.bank_xor_bits(16)), (0, 0));
    assert_eq!(
        AddrConfig::from_gb_addr_config(6).unwrap_err(),
        "GB_ADDR_CONFIG 0x6: NUM_PIPES 6 is not a gfx9 pipe count (0..=5)"
    );
    assert_eq!(
        AddrConfig::from_gb_addr_config(0x5000).unwrap_err(),
        "GB_ADDR_CONFIG 0x5000: NUM_BANKS 5 is not a gfx9 bank count (0..=4)"
    );
    assert_eq!(
        AddrConfig::from_gb_addr_config(0x8).unwrap_err(),
        "GB_ADDR_CONFIG 0x8: PIPE_INTERLEAVE_SIZE 1: addrlib's gfx9 layouts need a 256-byte \
         pipe interleave (0)"
    );
}

#[test]
fn swizzle_modes_and_blocks() {
    assert_eq!(SwizzleMode::from_sw_mode(0), Ok(None));
    let names: Vec<String> = (1..=11)
        .chain(16..=27)
        .map(|v| SwizzleMode::from_sw_mode(v).unwrap().unwrap().name())
        .collect();
    assert_eq!(
        names.join(" "),
        "SW_256B_S SW_256B_D SW_256B_R SW_4KB_Z SW_4KB_S SW_4KB_D SW_4KB_R SW_64KB_Z SW_64KB_S \
         SW_64KB_D SW_64KB_R SW_64KB_Z_T SW_64KB_S_T SW_64KB_D_T SW_64KB_R_T SW_4KB_Z_X \
         SW_4KB_S_X SW_4KB_D_X SW_4KB_R_X SW_64KB_Z_X SW_64KB_S_X SW_64KB_D_X SW_64KB_R_X"
    );
    for v in (12..=15).chain(28..=31) {
        assert_eq!(
            SwizzleMode::from_sw_mode(v).unwrap_err(),
            format!("SW_MODE {v}: reserved on gfx9 (12..=15 and 28..=31 name no layout)")
        );
    }
    // Block dimensions addrlib gives (ComputeSurfaceInfo's blockWidth/Height/Slices).
    let c = AddrConfig::from_gb_addr_config(0).unwrap();
    let dims = |sw, dim, bytes| {
        let m = SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
        TiledSurface::new(m, dim, bytes, width_of(sw, dim, bytes), 1, c)
            .unwrap()
            .block()
    };
    assert_eq!(dims(22, D2, 4), [32, 32, 1]);
    assert_eq!(dims(26, D2, 1), [256, 256, 1]);
    assert_eq!(dims(26, D2, 2), [256, 128, 1]);
    assert_eq!(dims(2, D2, 16), [4, 4, 1]);
    assert_eq!(dims(20, D3, 4), [8, 16, 8]);
    assert_eq!(dims(24, D3, 16), [16, 16, 16]);
    assert_eq!(dims(22, D3, 4), [32, 32, 1]);
}

#[test]
fn layouts_addrlib_refuses_are_errors() {
    let c = AddrConfig::from_gb_addr_config(0x2219_4042).unwrap();
    let new = |sw, dim, bytes, pitch| {
        TiledSurface::new(
            SwizzleMode::from_sw_mode(sw).unwrap().unwrap(),
            dim,
            bytes,
            pitch,
            8,
            c,
        )
        .unwrap_err()
    };
    assert_eq!(
        new(23, D3, 4, 32),
        "SW_4KB_R_X (SW_MODE 23): no 3D layout for 4-byte elements"
    );
    assert_eq!(
        new(1, D3, 4, 8),
        "SW_256B_S (SW_MODE 1): no 3D layout for 4-byte elements"
    );
    assert_eq!(
        new(24, D2, 16, 128),
        "SW_64KB_Z_X (SW_MODE 24): no 2D layout for 16-byte elements"
    );
    assert_eq!(
        new(27, D2, 16, 64),
        "SW_64KB_R_X (SW_MODE 27): no 2D layout for 16-byte elements"
    );
    assert_eq!(
        new(22, D2, 12, 64),
        "SW_4KB_D_X (SW_MODE 22): 12-byte elements are laid out linearly only"
    );
    assert_eq!(
        new(22, D2, 4, 48),
        "PITCH 47 (a pitch of 48 elements): not a multiple of SW_4KB_D_X's block width of 32 \
         elements"
    );
}

#[test]
fn base_address_carries_the_pipe_bank_xor() {
    let c = AddrConfig::from_gb_addr_config(0x2219_4042).unwrap();
    let mode = |sw| SwizzleMode::from_sw_mode(sw).unwrap().unwrap();
    let s = TiledSurface::new(mode(26), D2, 4, 128, 128, c).unwrap();
    // 64 KiB_D_X: 5 pipe and 3 bank bits, address bits 8..16.
    assert_eq!(pipe_bank_xor(&s, 0x7_0000_ab00), Ok((0x7_0000_0000, 0xab)));
    assert_eq!(pipe_bank_xor(&s, 0x7_0000_0000), Ok((0x7_0000_0000, 0)));
    // Without XOR any 256-byte-aligned base is the base.
    let plain = TiledSurface::new(mode(10), D2, 4, 128, 128, c).unwrap();
    assert_eq!(pipe_bank_xor(&plain, 0x7_0000_ab00), Ok((0x7_0000_ab00, 0)));
    // With one pipe and one bank there are no XOR bits: the base must be block-aligned.
    let zero = TiledSurface::new(
        mode(22),
        D2,
        4,
        32,
        32,
        AddrConfig::from_gb_addr_config(0).unwrap(),
    )
    .unwrap();
    assert_eq!(
        pipe_bank_xor(&zero, 0x7_0000_0100).unwrap_err(),
        "BASE_ADDRESS 0x700000100: SW_4KB_D_X needs a base aligned to its 4 KiB block but for \
         the pipe/bank XOR bits 8..8 (the block offset is 0x100)"
    );
}
