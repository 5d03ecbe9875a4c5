//! MIMG image instructions in the gfx9 interpreter: the `isa/image-<cpu>` kernels
//! (`testdata/codeobjects/isa/gen.py`, family `image`) run over images whose resource (T#)
//! and sampler (S#) descriptors the tests build from the field positions of the Vega ISA
//! guide (§8.2.4 "Image Resource", §8.2.5 "Sampler Descriptor"; the same bits as ROCR's
//! `image/resource_ai.h`), and every result is compared with a value computed on the host
//! (unorm8 → x / 255, the bilinear mix of the four texels, ...).

// Lane and component numbers index several arrays at once in the references.
#![allow(clippy::needless_range_loop)]

use hsa_core::Status;
use hsa_gfx9::Gfx9Target;

mod isa_harness;
use isa_harness::*;

/// The targets with image instructions (gfx940+ has none).
const IMAGE_CPUS: [(&str, Gfx9Target); 4] = [
    ("gfx900", Gfx9Target::Gfx900),
    ("gfx906", Gfx9Target::Gfx906),
    ("gfx908", Gfx9Target::Gfx908),
    ("gfx90a", Gfx9Target::Gfx90a),
];

/// Where the kernels find the texels: pointer argument 5.
const TEXELS: u64 = buf(5);

/// T# TYPE values (SQ_RSRC_IMG_1D ...).
const T1D: u32 = 8;
const T2D: u32 = 9;
const T3D: u32 = 10;
const T1DA: u32 = 12;
const T2DA: u32 = 13;

/// DST_SEL values: 0, 1, X, Y, Z, W.
const SEL_XYZW: [u32; 4] = [4, 5, 6, 7];

/// An image resource's fields.
#[derive(Clone, Copy)]
struct TDesc {
    base: u64,
    dfmt: u32,
    nfmt: u32,
    width: u32,
    height: u32,
    depth: u32,
    pitch: u32,
    sel: [u32; 4],
    ty: u32,
    sw_mode: u32,
    base_level: u32,
    last_level: u32,
}

impl TDesc {
    fn new(ty: u32, dfmt: u32, nfmt: u32, size: [u32; 3]) -> TDesc {
        TDesc {
            base: TEXELS,
            dfmt,
            nfmt,
            width: size[0],
            height: size[1],
            depth: size[2],
            pitch: size[0],
            sel: SEL_XYZW,
            ty,
            sw_mode: 0,
            base_level: 0,
            last_level: 0,
        }
    }

    /// The 8 dwords (SQ_IMG_RSRC_WORD0..7).
    fn words(&self) -> [u32; 8] {
        [
            (self.base >> 8) as u32,
            (self.base >> 40) as u32 & 0xFF | self.dfmt << 20 | self.nfmt << 26,
            (self.width - 1) | (self.height - 1) << 14,
            self.sel[0]
                | self.sel[1] << 3
                | self.sel[2] << 6
                | self.sel[3] << 9
                | self.base_level << 12
                | self.last_level << 16
                | self.sw_mode << 20
                | self.ty << 28,
            (self.depth - 1) | (self.pitch - 1) << 13,
            0,
            0,
            0,
        ]
    }
}

/// A sampler's fields: CLAMP_X/Y/Z, FORCE_UNNORMALIZED, XY_MAG/MIN_FILTER, Z_FILTER,
/// BORDER_COLOR_TYPE.
#[derive(Clone, Copy)]
struct SDesc {
    clamp: [u32; 3],
    unnormalized: bool,
    filter: u32,
    min_filter: u32,
    z_filter: u32,
    border: u32,
}

impl SDesc {
    fn new(clamp: u32, filter: u32) -> SDesc {
        SDesc {
            clamp: [clamp; 3],
            unnormalized: false,
            filter,
            min_filter: filter,
            z_filter: 0,
            border: 0,
        }
    }

    fn words(&self) -> [u32; 4] {
        [
            self.clamp[0]
                | self.clamp[1] << 3
                | self.clamp[2] << 6
                | (self.unnormalized as u32) << 15,
            0,
            self.filter << 20 | self.min_filter << 22 | self.z_filter << 24,
            self.border << 30,
        ]
    }
}

/// One target's run: the results (4 dwords a lane) and the texels afterwards.
type Outcome = hsa_core::Result<(Vec<[u32; 4]>, Vec<u8>)>;

/// One target's successful run: (cpu, results, texels).
type Ran = (&'static str, Vec<[u32; 4]>, Vec<u8>);

/// Runs `kernel` on every image target over 64 lanes: T# `t`, S# `s`, per-lane address
/// components `addr` and data `data` (4 dwords each), the image `texels`; returns the
/// results (4 dwords a lane) and the texels afterwards, per target.
fn run(
    kernel: &str,
    t: &TDesc,
    s: &SDesc,
    addr: &[[u32; 4]],
    data: &[[u32; 4]],
    texels: &[u8],
) -> Vec<(&'static str, Outcome)> {
    let mut out = Vec::new();
    for (cpu, target) in IMAGE_CPUS {
        let isa = Isa::load("image", cpu, target);
        if !isa.kernels().iter().any(|k| k == kernel) {
            continue;
        }
        let lanes = |v: &[[u32; 4]]| {
            let mut b: Vec<u32> = v.iter().flatten().copied().collect();
            b.resize(64 * 4, 0);
            bytes32(&b)
        };
        let bufs = vec![
            bytes32(&t.words()),
            bytes32(&s.words()),
            lanes(addr),
            lanes(data),
            vec![0u8; 64 * 16],
            texels.to_vec(),
        ];
        let r = isa.run(kernel, 64, &bufs).map(|b| {
            let res = u32s(&b[4])
                .chunks(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect();
            (res, b[5].clone())
        });
        out.push((cpu, r));
    }
    assert!(!out.is_empty(), "no target has kernel {kernel}");
    out
}

/// `run`, every target succeeding: (cpu, results, texels).
fn run_ok(
    kernel: &str,
    t: &TDesc,
    s: &SDesc,
    addr: &[[u32; 4]],
    data: &[[u32; 4]],
    texels: &[u8],
) -> Vec<Ran> {
    run(kernel, t, s, addr, data, texels)
        .into_iter()
        .map(|(cpu, r)| {
            let (res, tex) = r.unwrap_or_else(|e| panic!("{cpu} {kernel}: {}", e.detail()));
            (cpu, res, tex)
        })
        .collect()
}

/// `run`'s error detail on every target (each must fail with `IllegalInstruction`).
fn run_err(kernel: &str, t: &TDesc, s: &SDesc, addr: &[[u32; 4]]) -> String {
    let mut msg = None;
    for (cpu, r) in run(kernel, t, s, addr, &[], &[0u8; 4096]) {
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{cpu} {kernel}: no error"));
        assert_eq!(e.status(), Status::IllegalInstruction, "{cpu}");
        let d = e.detail().to_string();
        if let Some(m) = &msg {
            assert_eq!(&d, m, "{cpu}");
        }
        msg = Some(d);
    }
    msg.unwrap()
}

fn f(x: f32) -> u32 {
    x.to_bits()
}

const DEADBEEF: u32 = 0xDEAD_BEEF;

/// A deterministic RGBA8 image of `n` texels: texel i = (i, 2i+1, 255 − i, 7i) mod 256.
fn rgba8(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| [i as u8, (2 * i + 1) as u8, (255 - i) as u8, (7 * i) as u8])
        .collect()
}

/// The unorm8 value of texel `i` of [`rgba8`] as the f32 bits a load returns.
fn rgba8_value(i: usize) -> [u32; 4] {
    let t = &rgba8(i + 1)[i * 4..i * 4 + 4];
    [0, 1, 2, 3].map(|k| f(t[k] as f32 / 255.0))
}

/// `image_load` of every type: texel (x, y, z) at ((z · height + y) · pitch + x) (a pitch
/// wider than the width), out-of-range coordinates (each axis, and negative) read 0.
#[test]
fn image_load_reads_every_image_type() {
    // (type, size, da kernel, coordinates per lane → texel index or None).
    let (w, h, d, pitch) = (5u32, 3u32, 4u32, 8u32);
    let cases: [(u32, [u32; 3], &str); 5] = [
        (T1D, [w, 1, 1], "load_mf"),
        (T2D, [w, h, 1], "load_mf"),
        (T3D, [w, h, d], "load_mf"),
        (T1DA, [w, 1, d], "load_da_mf"),
        (T2DA, [w, h, d], "load_da_mf"),
    ];
    for (ty, size, kernel) in cases {
        let mut t = TDesc::new(ty, 10, 0, size);
        t.pitch = pitch;
        let texels = rgba8((pitch * size[1] * size[2]) as usize);
        let mut addr = Vec::new();
        let mut want = Vec::new();
        for lane in 0..64u32 {
            let (x, y, z) = (lane % 7, lane / 7 % 4, lane / 28);
            let (x, y, z) = if lane == 63 {
                (u32::MAX, 0, 0)
            } else {
                (x, y, z)
            };
            let c = match ty {
                T1D => [x, 0, 0, 0],
                T2D => [x, y, 0, 0],
                T1DA => [x, z, 0, 0],
                _ => [x, y, z, 0],
            };
            addr.push(c);
            // The texel the lane names (1D arrays: the slice is the second component).
            let (ty_, tz) = match ty {
                T1D => (0, 0),
                T2D => (y, 0),
                T1DA => (0, z),
                _ => (y, z),
            };
            let inside = x < size[0] && ty_ < size[1] && tz < size[2];
            want.push(if inside {
                rgba8_value(((tz * size[1] + ty_) * pitch + x) as usize)
            } else {
                [0; 4]
            });
        }
        for (cpu, got, _) in run_ok(kernel, &t, &SDesc::new(0, 0), &addr, &[], &texels) {
            assert_eq!(got, want, "{cpu} type {ty}");
        }
    }
}

/// The T#'s TYPE, not the instruction's `da` bit, decides which address components locate a
/// texel, as ROCclr's blit kernels need (they bind every image as `image2d_array_t`): a
/// `da` load of a 2D image ignores the slice component, a load without `da` of a 2D array
/// reads slice 0.
#[test]
fn the_resource_type_not_da_locates_the_texel() {
    let (w, h, d) = (6u32, 3u32, 2u32);
    let texels = rgba8((w * h * d) as usize);
    let t2d = TDesc::new(T2D, 10, 0, [w, h, 1]);
    let addr: Vec<[u32; 4]> = (0..64u32).map(|l| [l % w, l / w % h, 7 + l, 0]).collect();
    let want: Vec<[u32; 4]> = (0..64u32)
        .map(|l| rgba8_value(((l / w % h) * w + l % w) as usize))
        .collect();
    for (cpu, got, _) in run_ok("load_da_mf", &t2d, &SDesc::new(0, 0), &addr, &[], &texels) {
        assert_eq!(got, want, "{cpu}: da load of a 2D image");
    }
    let t2da = TDesc::new(T2DA, 10, 0, [w, h, d]);
    let addr: Vec<[u32; 4]> = (0..64u32).map(|l| [l % w, l / w % h, 1, 0]).collect();
    for (cpu, got, _) in run_ok("load_mf", &t2da, &SDesc::new(0, 0), &addr, &[], &texels) {
        assert_eq!(
            got, want,
            "{cpu}: load without da of a 2D array reads slice 0"
        );
    }
}

/// Each unsupported or malformed T#/S# field, an `_mip` access of level 1 and the atomics the
/// interpreter lacks fail the dispatch with
/// `IllegalInstruction` and this exact text (the instruction, the field, its value).
#[test]
fn bad_descriptors_are_errors_naming_the_field() {
    let t = TDesc::new(T2D, 10, 0, [4, 4, 1]);
    let s = SDesc::new(0, 0);
    let z = [0u32; 4];
    let tw = |g: &dyn Fn(&mut TDesc)| {
        let mut t = t;
        g(&mut t);
        t
    };
    let sw = |g: &dyn Fn(&mut SDesc)| {
        let mut s = s;
        g(&mut s);
        s
    };
    let r32 = TDesc::new(T1D, 4, 4, [16, 1, 1]);
    let cases: Vec<(&str, TDesc, SDesc, [u32; 4], &str)> = vec![
        ("load_mf", tw(&|t| t.sw_mode = 12), s, z,
         "image_load: T# SW_MODE 12: reserved on gfx9 (12..=15 and 28..=31 name no layout)"),
        ("store_mf", tw(&|t| (t.sw_mode, t.ty) = (22, T1D)), s, z,
         "image_store: T# SW_MODE 22 (SW_4KB_D_X) with TYPE 8 (1D): addrlib lays 1D images out linearly only; a swizzled 1D layout is not modelled"),
        ("load_mf", tw(&|t| (t.sw_mode, t.pitch, t.last_level) = (22, 32, 1)), s, z,
         "image_load: T# LAST_LEVEL 1 with SW_MODE 22 (SW_4KB_D_X): the mip chain of a swizzled image is not modelled (one level only)"),
        ("load_mf", tw(&|t| t.sw_mode = 22), s, z,
         "image_load: T# PITCH 3 (a pitch of 4 elements): not a multiple of SW_4KB_D_X's block width of 32 elements"),
        ("load_mf", tw(&|t| (t.sw_mode, t.ty, t.pitch) = (27, T3D, 128)), s, z,
         "image_load: T# SW_64KB_R_X (SW_MODE 27): no 3D layout for 4-byte elements"),
        ("load_mf", tw(&|t| (t.sw_mode, t.dfmt, t.nfmt, t.pitch) = (22, 13, 4, 32)), s, z,
         "image_load: T# SW_4KB_D_X (SW_MODE 22): 12-byte elements are laid out linearly only"),
        ("load_mf", tw(&|t| (t.sw_mode, t.pitch, t.base) = (22, 32, TEXELS + 0x100)), s, z,
         "image_load: T# BASE_ADDRESS 0x600100: SW_4KB_D_X needs a base aligned to its 4 KiB block but for the pipe/bank XOR bits 8..8 (the block offset is 0x100)"),
        ("load_mf", tw(&|t| t.ty = 0), s, z,
         "image_load: T# TYPE 0: not an image type this interpreter supports (8 1D, 9 2D, 10 3D, 12 1D array, 13 2D array)"),
        ("load_mf", tw(&|t| t.ty = 11), s, z,
         "image_load: T# TYPE 11: not an image type this interpreter supports (8 1D, 9 2D, 10 3D, 12 1D array, 13 2D array)"),
        ("load_mf", tw(&|t| t.dfmt = 15), s, z,
         "image_load: T# DATA_FORMAT 15 NUM_FORMAT 0: unsupported data format"),
        ("load_mf", tw(&|t| t.dfmt = 0), s, z,
         "image_load: T# DATA_FORMAT 0 NUM_FORMAT 0: unsupported data format"),
        ("load_mf", tw(&|t| t.nfmt = 9), s, z,
         "image_load: T# DATA_FORMAT 10 NUM_FORMAT 9: unsupported numeric format (only UNORM, SNORM, USCALED, SSCALED, UINT, SINT, FLOAT)"),
        ("load_mf", tw(&|t| t.nfmt = 7), s, z,
         "image_load: T# DATA_FORMAT 10 NUM_FORMAT 7: no float form of this data format"),
        ("load_mf", tw(&|t| (t.dfmt, t.nfmt) = (16, 4)), s, z,
         "image_load: T# DATA_FORMAT 16 NUM_FORMAT 4: only UNORM with this data format"),
        ("load_mf", tw(&|t| t.sel[2] = 2), s, z,
         "image_load: T# DST_SEL_Z 2: reserved (0, 1 or 4..=7)"),
        ("load_mf", tw(&|t| t.base_level = 1), s, z,
         "image_load: T# BASE_LEVEL 1: only mip level 0 is supported"),
        ("load_mip_mf", t, s, [0, 0, 1, 0],
         "image_load_mip: lane 0: mip level 1: only level 0 is supported"),
        ("store_mip_mf", t, s, [0, 0, 2, 0],
         "image_store_mip: lane 0: mip level 2: only level 0 is supported"),
        ("sample_mf", t, sw(&|s| s.clamp[1] = 4), z,
         "image_sample: S# CLAMP_Y 4: the half-border address modes are unsupported"),
        ("sample_mf", t, sw(&|s| s.filter = 2), z,
         "image_sample: S# XY_MAG_FILTER 2 XY_MIN_FILTER 0: anisotropic filtering is unsupported"),
        ("sample_mf", t, sw(&|s| s.min_filter = 1), z,
         "image_sample: S# XY_MAG_FILTER 0 XY_MIN_FILTER 1: differing filters are unsupported"),
        ("sample_mf", t, sw(&|s| s.border = 3), z,
         "image_sample: S# BORDER_COLOR_TYPE 3: the border colour register is unsupported"),
        ("sample_mf", tw(&|t| t.last_level = 2), s, z,
         "image_sample: T# LAST_LEVEL 2: sampling an image with more than one mip level is unsupported"),
        ("sample_mf", tw(&|t| t.nfmt = 4), SDesc::new(0, 1), z,
         "image_sample: bilinear filtering of a UINT/SINT format is unsupported"),
        ("atomic_add_rtn", t, s, z,
         "image_atomic_add: T# format: atomics need a 32-bit one-component UINT or SINT format"),
        ("atomic_sub", r32, s, z,
         "image_atomic_sub (MIMG) not implemented by the interpreter"),
    ];
    for (kernel, t, s, a, want) in cases {
        let got = run_err(kernel, &t, &s, &[a]);
        if want.ends_with("not implemented by the interpreter") {
            assert!(got.contains(want), "{kernel}: {got}");
            continue;
        }
        let (inst, why) = want.split_once(": ").unwrap();
        assert!(
            got.starts_with(&format!("{inst} at kernel offset 0x"))
                && got.ends_with(&format!(": {why}")),
            "{kernel}: {got}\nwant {want}"
        );
    }
}

/// A format of ROCR's image table: DATA_FORMAT, NUM_FORMAT, (bit offset, width) of each
/// component, bytes per texel.
struct Fmt {
    dfmt: u32,
    nfmt: u32,
    fields: &'static [(u32, u32)],
    bytes: usize,
}

const F8: &[(u32, u32)] = &[(0, 8)];
const F16: &[(u32, u32)] = &[(0, 16)];
const F32: &[(u32, u32)] = &[(0, 32)];
const F8_8: &[(u32, u32)] = &[(0, 8), (8, 8)];
const F16_16: &[(u32, u32)] = &[(0, 16), (16, 16)];
const F32_32: &[(u32, u32)] = &[(0, 32), (32, 32)];
const F8X4: &[(u32, u32)] = &[(0, 8), (8, 8), (16, 8), (24, 8)];
const F16X4: &[(u32, u32)] = &[(0, 16), (16, 16), (32, 16), (48, 16)];
const F32X4: &[(u32, u32)] = &[(0, 32), (32, 32), (64, 32), (96, 32)];
// Packed: named from the most significant field, X in the low bits.
const F2_10_10_10: &[(u32, u32)] = &[(0, 10), (10, 10), (20, 10), (30, 2)];
const F5_6_5: &[(u32, u32)] = &[(0, 5), (5, 6), (11, 5)];
const F1_5_5_5: &[(u32, u32)] = &[(0, 5), (5, 5), (10, 5), (15, 1)];

/// Every (data format, numeric format) pair of ROCR's gfx9 image table (`image_lut_kv.cpp`).
fn rocr_formats() -> Vec<Fmt> {
    let mut v = Vec::new();
    // 8-, 16-, 32-bit with 1, 2, 4 components: (dfmt, fields, bytes).
    let arrays = [
        (1, F8, 1),
        (2, F16, 2),
        (4, F32, 4),
        (3, F8_8, 2),
        (5, F16_16, 4),
        (11, F32_32, 8),
        (10, F8X4, 4),
        (12, F16X4, 8),
        (14, F32X4, 16),
    ];
    for (dfmt, fields, bytes) in arrays {
        let width = fields[0].1;
        // UNORM/SNORM of 8 and 16 bits; UINT/SINT all; FLOAT of 16 and 32 bits.
        let nfmts: &[u32] = match width {
            8 => &[0, 1, 4, 5],
            16 => &[0, 1, 4, 5, 7],
            _ => &[4, 5, 7],
        };
        for &nfmt in nfmts {
            v.push(Fmt {
                dfmt,
                nfmt,
                fields,
                bytes,
            });
        }
    }
    v.push(Fmt {
        dfmt: 9,
        nfmt: 0,
        fields: F2_10_10_10,
        bytes: 4,
    });
    v.push(Fmt {
        dfmt: 16,
        nfmt: 0,
        fields: F5_6_5,
        bytes: 2,
    });
    v.push(Fmt {
        dfmt: 17,
        nfmt: 0,
        fields: F1_5_5_5,
        bytes: 2,
    });
    v
}

/// The register value a load gives for component `k` of `texel` in format `f` (host
/// reference: UNORM c / (2^n − 1), SNORM max(c / (2^(n−1) − 1), −1), UINT/SINT zero-/sign-
/// extended, FLOAT 32-bit as is and 16-bit widened; a missing component 0, W 1).
fn load_ref(f: &Fmt, texel: &[u8], k: usize) -> u32 {
    let int = matches!(f.nfmt, 4 | 5);
    let Some(&(off, n)) = f.fields.get(k) else {
        return match (k, int) {
            (3, true) => 1,
            (3, false) => 1f32.to_bits(),
            _ => 0,
        };
    };
    let mut b = [0u8; 16];
    b[..texel.len()].copy_from_slice(texel);
    let c = (u128::from_le_bytes(b) >> off) as u64 & ((1u64 << n) - 1);
    let sx = ((c << (64 - n)) as i64) >> (64 - n);
    match (f.nfmt, n) {
        (0, _) => ((c as f64 / ((1u64 << n) - 1) as f64) as f32).to_bits(),
        (1, _) => ((sx as f64 / ((1u64 << (n - 1)) - 1) as f64).max(-1.0) as f32).to_bits(),
        (4, _) => c as u32,
        (5, _) => sx as u32,
        (_, 32) => c as u32,
        _ => half::f16::from_bits(c as u16).to_f32().to_bits(),
    }
}

/// `image_load` (dmask 0xf) of every ROCR image format over 64 pseudo-random texels of a
/// 1D image gives each component as the host reference converts it (NaNs compared as NaN).
#[test]
fn image_load_converts_every_rocr_format() {
    let mut rng = prng(7);
    for f in rocr_formats() {
        let mut texels: Vec<u8> = (0..64 * f.bytes).map(|_| rng() as u8).collect();
        if f.dfmt == 12 || f.dfmt == 5 || f.dfmt == 2 {
            // Some exact halves (1.0, −2.0) among the random ones.
            texels[..4].copy_from_slice(&[0x00, 0x3C, 0x00, 0xC0]);
        }
        let t = TDesc::new(T1D, f.dfmt, f.nfmt, [64, 1, 1]);
        let addr: Vec<[u32; 4]> = (0..64).map(|i| [i, 0, 0, 0]).collect();
        for (cpu, got, _) in run_ok("load_mf", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
            for lane in 0..64 {
                let texel = &texels[lane * f.bytes..(lane + 1) * f.bytes];
                for k in 0..4 {
                    let want = load_ref(&f, texel, k);
                    let g = got[lane][k];
                    let both_nan =
                        f.nfmt == 7 && f32::from_bits(want).is_nan() && f32::from_bits(g).is_nan();
                    assert!(
                        g == want || both_nan,
                        "{cpu} dfmt {} nfmt {} lane {lane} comp {k}: {g:#x} want {want:#x}",
                        f.dfmt,
                        f.nfmt
                    );
                }
            }
        }
    }
}

/// DST_SEL swizzles the loaded components (BGRA's (Z, Y, X, W), R's (X, 0, 0, 1),
/// intensity's (X, X, X, X)), and `dmask` picks which of the swizzled ones land in
/// consecutive VGPRs (the others keep 0xdeadbeef); `tfe` adds a 0 status dword; an integer
/// format's SEL_1 is the integer 1.
#[test]
fn dst_sel_and_dmask_pick_components() {
    let texels = rgba8(16);
    let addr: Vec<[u32; 4]> = (0..16).map(|i| [i, 0, 0, 0]).collect();
    let sels: [[u32; 4]; 3] = [[6, 5, 4, 7], [4, 0, 0, 1], [4, 4, 4, 4]];
    for sel in sels {
        let mut t = TDesc::new(T1D, 10, 0, [16, 1, 1]);
        t.sel = sel;
        for (kernel, mask) in [
            ("load_mf", 0xF),
            ("load_m1", 0x1),
            ("load_m3", 0x3),
            ("load_m5", 0x5),
            ("load_mc", 0xC),
        ] {
            for (cpu, got, _) in run_ok(kernel, &t, &SDesc::new(0, 0), &addr, &[], &texels) {
                for lane in 0..16 {
                    let v = rgba8_value(lane);
                    let swz = sel.map(|s| match s {
                        0 => 0,
                        1 => f(1.0),
                        s => v[(s - 4) as usize],
                    });
                    let mut want = [DEADBEEF; 4];
                    let mut n = 0;
                    for k in 0..4 {
                        if mask >> k & 1 != 0 {
                            want[n] = swz[k];
                            n += 1;
                        }
                    }
                    assert_eq!(got[lane], want, "{cpu} {kernel} sel {sel:?} lane {lane}");
                }
            }
        }
    }
    // UINT: SEL_1 is 1; tfe writes a 0 status after the data (gfx90a reads the bit as acc).
    let mut t = TDesc::new(T1D, 10, 4, [16, 1, 1]);
    t.sel = [4, 1, 0, 1];
    for (cpu, got, _) in run_ok("load_mf", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        assert_eq!(got[3], [3, 1, 0, 1], "{cpu}");
    }
    let t = TDesc::new(T1D, 10, 0, [16, 1, 1]);
    for (cpu, got, _) in run_ok("load_m1_tfe", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        assert_eq!(got[5], [rgba8_value(5)[0], 0, DEADBEEF, DEADBEEF], "{cpu}");
    }
}

/// The bytes `image_store` writes for register value `v` into an `n`-bit field of numeric
/// format `nfmt` (host reference: UNORM/SNORM clamp, scale by 2^n − 1 / 2^(n−1) − 1, round
/// to nearest even, NaN → 0; UINT/SINT the low n bits; FLOAT16 the nearest binary16).
fn store_ref(nfmt: u32, n: u32, v: u32) -> u64 {
    let x = f64::from(f32::from_bits(v));
    let mask = (1u64 << n) - 1;
    match nfmt {
        0 if x.is_nan() => 0,
        0 => (x.clamp(0.0, 1.0) * mask as f64).round_ties_even() as u64,
        1 if x.is_nan() => 0,
        1 => ((x.clamp(-1.0, 1.0) * (mask >> 1) as f64).round_ties_even() as i64 as u64) & mask,
        4 | 5 => u64::from(v) & mask,
        _ if n == 16 => u64::from(half::f16::from_f32(f32::from_bits(v)).to_bits()),
        _ => u64::from(v),
    }
}

/// `image_store` converts each component to the format (unorm/snorm clamping and rounding,
/// the tie 0.5 · 255 = 127.5 → 128, NaN → 0, integer low bits, f16 rounding), writes only
/// the `dmask`ed components (the others keep their bytes), drops out-of-range texels, and
/// a store-then-load gives the value back; on a 2D array (`da`) the slice selects the rows.
#[test]
fn image_store_converts_clamps_and_masks() {
    let vals: Vec<u32> = [
        -0.5f32,
        0.0,
        0.25,
        0.5 / 255.0 * 255.0 / 255.0,
        127.5 / 255.0,
        1.0,
        1.5,
        f32::NAN,
        f32::INFINITY,
        -1.0,
        -0.3,
        0.75,
        1.0 / 3.0,
        2.0 / 255.0,
        100.0,
        -100.0,
    ]
    .iter()
    .map(|x| x.to_bits())
    .chain([0x1_23, 0xFFFF_FF80, 0x7F, 0x8000_0001])
    .collect();
    let mut rng = prng(11);
    let data: Vec<[u32; 4]> = (0..64)
        .map(|_| [0; 4].map(|_| vals[rng() as usize % vals.len()]))
        .collect();
    let old: Vec<u8> = (0..64 * 8).map(|i| (i * 37 % 251) as u8).collect();
    // (dfmt, nfmt, bits per component, bytes per texel) over 4 components.
    for (dfmt, nfmt, n, bytes) in [
        (10, 0, 8, 4),
        (10, 1, 8, 4),
        (10, 4, 8, 4),
        (10, 5, 8, 4),
        (12, 7, 16, 8),
        (12, 0, 16, 8),
    ] {
        let t = TDesc::new(T1D, dfmt, nfmt, [60, 1, 1]);
        let addr: Vec<[u32; 4]> = (0..64).map(|i| [i, 0, 0, 0]).collect();
        for (kernel, mask) in [("store_mf", 0xF), ("store_m5", 0x5), ("store_mc", 0xC)] {
            let texels = &old[..64 * bytes];
            for (cpu, _, tex) in run_ok(kernel, &t, &SDesc::new(0, 0), &addr, &data, texels) {
                for lane in 0..64 {
                    let mut want = texels[lane * bytes..(lane + 1) * bytes].to_vec();
                    if lane < 60 {
                        let mut next = 0;
                        for k in 0..4 {
                            if mask >> k & 1 == 0 {
                                continue;
                            }
                            let c = store_ref(nfmt, n, data[lane][next]);
                            next += 1;
                            let nb = (n / 8) as usize;
                            want[k * nb..(k + 1) * nb].copy_from_slice(&c.to_le_bytes()[..nb]);
                        }
                    }
                    assert_eq!(
                        &tex[lane * bytes..(lane + 1) * bytes],
                        &want[..],
                        "{cpu} {kernel} dfmt {dfmt} nfmt {nfmt} lane {lane} data {:x?}",
                        data[lane]
                    );
                }
            }
        }
    }
    // 2D array 3x2, 3 slices, pitch 4: store at (x, y, slice) then load it back.
    let mut t = TDesc::new(T2DA, 10, 4, [3, 2, 3]);
    t.pitch = 4;
    // Lanes 18.. store out of range (x 3): dropped.
    let addr: Vec<[u32; 4]> = (0..64)
        .map(|i| {
            if i < 18 {
                [i % 3, i / 3 % 2, i / 6, 0]
            } else {
                [3, 0, 0, 0]
            }
        })
        .collect();
    let data: Vec<[u32; 4]> = (0..18).map(|i| [i, 100 + i, 200 + i, 7]).collect();
    let zero = vec![0u8; 4 * 4 * 2 * 3];
    for (cpu, _, tex) in run_ok("store_da_mf", &t, &SDesc::new(0, 0), &addr, &data, &zero) {
        for i in 0..18usize {
            let (x, y, z) = (i % 3, i / 3 % 2, i / 6);
            let at = ((z * 2 + y) * 4 + x) * 4;
            assert_eq!(
                &tex[at..at + 4],
                &[i as u8, 100 + i as u8, 200 + i as u8, 7],
                "{cpu} {i}"
            );
        }
        for (cpu2, got, _) in run_ok("load_da_mf", &t, &SDesc::new(0, 0), &addr, &[], &tex) {
            for i in 0..18u32 {
                assert_eq!(
                    got[i as usize],
                    [i, 100 + i, 200 + i, 7],
                    "{cpu}/{cpu2} {i}"
                );
            }
        }
    }
}

/// The packed formats store whole: 5_6_5 and 2_10_10_10 UNORM fields at their bit
/// positions (X low), rounded as UNORM.
#[test]
fn image_store_packs_5_6_5_and_2_10_10_10() {
    let data: Vec<[u32; 4]> = (0..64)
        .map(|i| {
            [
                i as f32 / 63.0,
                1.0 - i as f32 / 63.0,
                0.5,
                (i % 4) as f32 / 3.0,
            ]
            .map(f)
        })
        .collect();
    let addr: Vec<[u32; 4]> = (0..64).map(|i| [i, 0, 0, 0]).collect();
    for (dfmt, fields, bytes) in [(16, F5_6_5, 2), (9, F2_10_10_10, 4), (17, F1_5_5_5, 2)] {
        let t = TDesc::new(T1D, dfmt, 0, [64, 1, 1]);
        for (cpu, _, tex) in run_ok(
            "store_mf",
            &t,
            &SDesc::new(0, 0),
            &addr,
            &data,
            &vec![0; 64 * bytes],
        ) {
            for lane in 0..64 {
                let mut want = 0u64;
                for (k, &(off, n)) in fields.iter().enumerate() {
                    want |= store_ref(0, n, data[lane][k]) << off;
                }
                let mut b = [0u8; 8];
                b[..bytes].copy_from_slice(&tex[lane * bytes..(lane + 1) * bytes]);
                assert_eq!(u64::from_le_bytes(b), want, "{cpu} dfmt {dfmt} lane {lane}");
            }
        }
    }
}

/// `image_get_resinfo` gives width, height, depth or slices and the level count as integers
/// (`dmask` 0x5: width and depth), shifted by the mip level in the address VGPR.
#[test]
fn resinfo_reports_the_size() {
    let cases: [(u32, [u32; 3]); 5] = [
        (T1D, [13, 1, 1]),
        (T2D, [13, 7, 1]),
        (T3D, [13, 7, 5]),
        (T1DA, [13, 1, 6]),
        (T2DA, [13, 7, 6]),
    ];
    for (ty, size) in cases {
        let mut t = TDesc::new(ty, 10, 0, size);
        t.last_level = 3;
        let addr: Vec<[u32; 4]> = (0..4).map(|l| [l, 0, 0, 0]).collect();
        for (cpu, got, _) in run_ok("resinfo_mf", &t, &SDesc::new(0, 0), &addr, &[], &[0; 16]) {
            for l in 0..4usize {
                let sh = |v: u32| (v >> l).max(1);
                let z = if ty == T3D { sh(size[2]) } else { size[2] };
                assert_eq!(
                    got[l],
                    [sh(size[0]), sh(size[1]), z, 4],
                    "{cpu} type {ty} level {l}"
                );
            }
        }
        for (cpu, got, _) in run_ok("resinfo_m5", &t, &SDesc::new(0, 0), &addr, &[], &[0; 16]) {
            assert_eq!(
                got[0],
                [size[0], size[2], DEADBEEF, DEADBEEF],
                "{cpu} type {ty}"
            );
        }
    }
}

/// D16: a load packs two binary16 components a VGPR (an odd count leaves the last high half
/// 0), a store takes them from the halves; A16: x and y are the halves of one VGPR.
#[test]
fn d16_data_and_a16_addresses() {
    let texels = rgba8(64);
    let t = TDesc::new(T1D, 10, 0, [64, 1, 1]);
    let addr: Vec<[u32; 4]> = (0..64).map(|i| [i, 0, 0, 0]).collect();
    let h = |x: u32| u32::from(half::f16::from_f64(f64::from(x) / 255.0).to_bits());
    for (cpu, got, _) in run_ok("load_mf_d16", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        for lane in 0..64 {
            let b = &texels[lane * 4..lane * 4 + 4];
            let b = [0, 1, 2, 3].map(|k| u32::from(b[k]));
            assert_eq!(
                got[lane],
                [
                    h(b[0]) | h(b[1]) << 16,
                    h(b[2]) | h(b[3]) << 16,
                    DEADBEEF,
                    DEADBEEF
                ],
                "{cpu} {lane}"
            );
        }
    }
    for (cpu, got, _) in run_ok("load_m7_d16", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        let b = [9u32, 19, 246, 63];
        assert_eq!(
            got[9],
            [h(b[0]) | h(b[1]) << 16, h(b[2]), DEADBEEF, DEADBEEF],
            "{cpu}"
        );
    }
    let data: Vec<[u32; 4]> = (0..64)
        .map(|i| {
            let x = |v: f32| u32::from(half::f16::from_f32(v).to_bits());
            [
                x(i as f32 / 64.0) | x(0.5) << 16,
                x(1.0) | x(-1.0) << 16,
                0,
                0,
            ]
        })
        .collect();
    for (cpu, _, tex) in run_ok(
        "store_mf_d16",
        &t,
        &SDesc::new(0, 0),
        &addr,
        &data,
        &[0; 256],
    ) {
        for lane in 0..64 {
            let want = [store_ref(0, 8, f(lane as f32 / 64.0)) as u8, 128, 255, 0];
            assert_eq!(&tex[lane * 4..lane * 4 + 4], &want, "{cpu} {lane}");
        }
    }
    let t2 = TDesc::new(T2D, 10, 0, [8, 8, 1]);
    let addr: Vec<[u32; 4]> = (0..64)
        .map(|i| [(i % 8) | (i / 8) << 16, 0, 0, 0])
        .collect();
    for (cpu, got, _) in run_ok("load_mf_a16", &t2, &SDesc::new(0, 0), &addr, &[], &texels) {
        for lane in 0..64 {
            assert_eq!(got[lane], rgba8_value(lane), "{cpu} {lane}");
        }
    }
}

/// Texel index `i` on an axis of `n` texels under CLAMP mode `mode` (host reference):
/// `None` for a border texel.
fn wrap_ref(mode: u32, i: i64, n: i64) -> Option<i64> {
    match mode {
        0 => Some(((i % n) + n) % n),
        1 => {
            let p = ((i % (2 * n)) + 2 * n) % (2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p })
        }
        2 => Some(i.max(0).min(n - 1)),
        3 => Some(if i < 0 { -1 - i } else { i }.min(n - 1)),
        _ => {
            if i < 0 || i >= n {
                None
            } else {
                Some(i)
            }
        }
    }
}

/// The sample of a 2D (or, with `h` = 1, 1D) RGBA8 UNORM image (pitch = width `w`) at
/// texel-space coordinates (u, v) (host reference): point takes texel (⌊u⌋, ⌊v⌋); bilinear
/// mixes the texels around (u − ½, v − ½) by the fractions; a border texel is `border`.
fn sample_ref(
    tex: &[u8],
    (w, h): (i64, i64),
    mode: u32,
    bilinear: bool,
    border: [f64; 4],
    (u, v): (f64, f64),
) -> [u32; 4] {
    let texel = |x: Option<i64>, y: Option<i64>| -> [f64; 4] {
        match (x, y) {
            (Some(x), Some(y)) => {
                let at = ((y * w + x) * 4) as usize;
                [0, 1, 2, 3].map(|k| f64::from(tex[at + k]) / 255.0)
            }
            _ => border,
        }
    };
    if !bilinear {
        let t = texel(
            wrap_ref(mode, u.floor() as i64, w),
            wrap_ref(mode, v.floor() as i64, h),
        );
        return t.map(|x| (x as f32).to_bits());
    }
    let (us, vs) = (u - 0.5, if h == 1 { 0.5 } else { v - 0.5 });
    let (i0, j0) = (us.floor(), vs.floor());
    let (a, b) = (us - i0, vs - j0);
    let mut acc = [0f64; 4];
    for (di, wx) in [(0, 1.0 - a), (1, a)] {
        for (dj, wy) in [(0, 1.0 - b), (1, b)] {
            let t = texel(
                wrap_ref(mode, i0 as i64 + di, w),
                wrap_ref(mode, j0 as i64 + dj, h),
            );
            for k in 0..4 {
                acc[k] += wx * wy * t[k];
            }
        }
    }
    acc.map(|x| (x as f32).to_bits())
}

/// Whether two f32 results agree to 1 ULP (the blend's sums may round in another order).
fn close(a: [u32; 4], b: [u32; 4]) -> bool {
    (0..4).all(|k| (a[k] as i64 - b[k] as i64).abs() <= 1)
}

/// `image_sample` (and `_lz`, `_l`, whose LOD is ignored on single-level images) of a 5x3
/// RGBA8 UNORM image at pseudo-random normalized coordinates in [−0.6, 1.6], for each
/// address mode (wrap, mirror, clamp-last-texel, mirror-once, clamp-border with the three
/// border colours) with point and bilinear filtering, against the host reference; the same
/// in texel coordinates through the instruction's `unorm` and the S#'s FORCE_UNNORMALIZED.
#[test]
fn image_sample_point_and_bilinear_match_the_reference() {
    let (w, h) = (5i64, 3i64);
    let texels = rgba8(15);
    let t = TDesc::new(T2D, 10, 0, [5, 3, 1]);
    let mut rng = prng(5);
    let coord = |r: u32| -0.6 + 2.2 * f64::from(r % 10_000) / 10_000.0;
    let mut addr: Vec<[u32; 4]> = (0..64)
        .map(|_| [f(coord(rng()) as f32), f(coord(rng()) as f32), 0, 0])
        .collect();
    // Texel centres and edges exactly.
    addr[0] = [f(0.1), f(0.5 / 3.0), 0, 0];
    addr[1] = [f(0.0), f(0.0), 0, 0];
    addr[2] = [f(1.0), f(1.0), 0, 0];
    for (mode, border) in [(0, 0), (1, 0), (2, 0), (3, 0), (6, 0), (6, 1), (6, 2)] {
        let bcol = match border {
            0 => [0.0; 4],
            1 => [0.0, 0.0, 0.0, 1.0],
            _ => [1.0; 4],
        };
        for filter in [0, 1] {
            let mut s = SDesc::new(mode, filter);
            s.border = border;
            for kernel in ["sample_mf", "sample_lz_mf", "sample_l_mf"] {
                for (cpu, got, _) in run_ok(kernel, &t, &s, &addr, &[], &texels) {
                    for lane in 0..64 {
                        let (u, v) = (
                            f64::from(f32::from_bits(addr[lane][0])) * w as f64,
                            f64::from(f32::from_bits(addr[lane][1])) * h as f64,
                        );
                        let want = sample_ref(&texels, (w, h), mode, filter == 1, bcol, (u, v));
                        assert!(
                            close(got[lane], want),
                            "{cpu} {kernel} mode {mode} border {border} filter {filter} lane {lane} ({u}, {v}): {:x?} want {want:x?}",
                            got[lane]
                        );
                    }
                }
            }
            // Texel coordinates: the instruction's unorm, or the sampler's.
            let taddr: Vec<[u32; 4]> = addr
                .iter()
                .map(|a| {
                    let x = f32::from_bits(a[0]) * 5.0;
                    let y = f32::from_bits(a[1]) * 3.0;
                    [f(x), f(y), 0, 0]
                })
                .collect();
            let mut su = s;
            su.unnormalized = true;
            for (kernel, s) in [("sample_mf_unorm", s), ("sample_mf", su)] {
                for (cpu, got, _) in run_ok(kernel, &t, &s, &taddr, &[], &texels) {
                    for lane in 0..64 {
                        let (u, v) = (
                            f64::from(f32::from_bits(taddr[lane][0])),
                            f64::from(f32::from_bits(taddr[lane][1])),
                        );
                        let want = sample_ref(&texels, (w, h), mode, filter == 1, bcol, (u, v));
                        assert!(
                            close(got[lane], want),
                            "{cpu} {kernel} unnormalized lane {lane}"
                        );
                    }
                }
            }
        }
    }
}

/// A 2D array samples the slice nearest its third coordinate (ties to even, clamped to the
/// slices); a 1D image filters along x only; DST_SEL applies to the filtered value.
#[test]
fn image_sample_slices_1d_and_swizzle() {
    // 2x2 texels, 3 slices: slice z is texel values 10z + i.
    let tex: Vec<u8> = (0..12u8)
        .flat_map(|i| [10 * (i / 4) + i % 4, 0, 0, 255])
        .collect();
    let t = TDesc::new(T2DA, 10, 0, [2, 2, 3]);
    let slices = [0.4f32, 0.5, 0.6, 1.5, 2.5, -3.0, 9.0];
    let want_slice = [0u8, 0, 1, 2, 2, 0, 2];
    let addr: Vec<[u32; 4]> = slices
        .iter()
        .map(|&z| [f(0.25), f(0.75), f(z), 0])
        .collect();
    for (cpu, got, _) in run_ok("sample_da_mf", &t, &SDesc::new(2, 0), &addr, &[], &tex) {
        for (k, &z) in want_slice.iter().enumerate() {
            // (0.25, 0.75) of 2x2 is texel (0, 1): index 2.
            assert_eq!(
                got[k][0],
                f(f32::from(10 * z + 2) / 255.0),
                "{cpu} slice coord {}",
                slices[k]
            );
        }
    }
    let t = TDesc::new(T1D, 10, 0, [15, 1, 1]);
    let texels = rgba8(15);
    let addr: Vec<[u32; 4]> = (0..64)
        .map(|i| [f(i as f32 / 50.0), f(123.0), 0, 0])
        .collect();
    for (cpu, got, _) in run_ok("sample_mf", &t, &SDesc::new(2, 1), &addr, &[], &texels) {
        for lane in 0..64 {
            let u = f64::from(f32::from_bits(addr[lane][0])) * 15.0;
            let want = sample_ref(&texels, (15, 1), 2, true, [0.0; 4], (u, 0.0));
            assert!(close(got[lane], want), "{cpu} 1D lane {lane}");
        }
    }
    let mut t = TDesc::new(T1D, 10, 0, [15, 1, 1]);
    t.sel = [6, 5, 4, 1];
    for (cpu, got, _) in run_ok("sample_mf", &t, &SDesc::new(2, 0), &addr, &[], &texels) {
        let v = rgba8_value(3);
        // lane 10: u = 0.2 · 15 = 3 → texel 3.
        assert_eq!(got[10], [v[2], v[1], v[0], f(1.0)], "{cpu}");
    }
}

/// A 3D image with Z_FILTER linear mixes the two nearest slices too (trilinear); with
/// Z_FILTER point it takes the nearest one.
#[test]
fn image_sample_3d_filters_between_slices() {
    // 2x2x2: slice 0 all 0, slice 1 all 255 (every component).
    let tex: Vec<u8> = (0..8)
        .flat_map(|i| [if i < 4 { 0 } else { 255 }; 4])
        .collect();
    let t = TDesc::new(T3D, 10, 0, [2, 2, 2]);
    let zs = [0.25f32, 0.375, 0.5, 0.625, 0.75, 0.1];
    let addr: Vec<[u32; 4]> = zs.iter().map(|&z| [f(0.5), f(0.5), f(z), 0]).collect();
    let mut s = SDesc::new(2, 1);
    s.z_filter = 2;
    for (cpu, got, _) in run_ok("sample_mf", &t, &s, &addr, &[], &tex) {
        for (k, &z) in zs.iter().enumerate() {
            let frac = (f64::from(z) * 2.0 - 0.5).clamp(0.0, 1.0);
            assert_eq!(got[k][0], f(frac as f32), "{cpu} z {z}");
        }
    }
    s.z_filter = 1;
    for (cpu, got, _) in run_ok("sample_mf", &t, &s, &addr, &[], &tex) {
        for (k, &z) in zs.iter().enumerate() {
            let want = if z * 2.0 >= 1.0 { 1.0 } else { 0.0 };
            assert_eq!(got[k][0], f(want), "{cpu} z {z}");
        }
    }
}

/// `image_atomic_add`, `swap` and `cmpswap` on a 32-bit UINT image: each lane's texel
/// changes as the operation says, `glc` returns the old value (without it the result VGPR
/// keeps 0xdeadbeef), lanes sharing a texel apply in lane order, an out-of-range lane
/// changes nothing and gets 0 back.
#[test]
fn image_atomics_add_swap_cmpswap() {
    let t = TDesc::new(T2D, 4, 4, [8, 4, 1]);
    let init: Vec<u32> = (0..32).map(|i| 1000 + i * 3).collect();
    // Lane i → texel i % 32 (lanes 32..63 hit the same texels again); lane 63 out of range.
    let addr: Vec<[u32; 4]> = (0..64u32)
        .map(|i| {
            if i == 63 {
                [8, 0, 0, 0]
            } else {
                [i % 8, i / 8 % 4, 0, 0]
            }
        })
        .collect();
    let data: Vec<[u32; 4]> = (0..64u32)
        .map(|i| [i * 7 + 1, 1000 + (i % 32) * 3, 0, 0])
        .collect();
    for kernel in [
        "atomic_add_rtn",
        "atomic_add",
        "atomic_swap_rtn",
        "atomic_swap",
        "atomic_cmpswap_rtn",
    ] {
        for (cpu, got, tex) in run_ok(kernel, &t, &SDesc::new(0, 0), &addr, &data, &bytes32(&init))
        {
            let mut mem = init.clone();
            for lane in 0..64 {
                if lane == 63 {
                    let want = if kernel.ends_with("_rtn") {
                        0
                    } else {
                        DEADBEEF
                    };
                    assert_eq!(got[lane][0], want, "{cpu} {kernel} out of range");
                    continue;
                }
                let at = lane % 32;
                let old = mem[at];
                let d = data[lane];
                mem[at] = match kernel {
                    "atomic_add_rtn" | "atomic_add" => old.wrapping_add(d[0]),
                    "atomic_swap_rtn" | "atomic_swap" => d[0],
                    _ if old == d[1] => d[0],
                    _ => old,
                };
                let want = if kernel.ends_with("_rtn") {
                    old
                } else {
                    DEADBEEF
                };
                assert_eq!(got[lane][0], want, "{cpu} {kernel} lane {lane}");
            }
            assert_eq!(u32s(&tex), mem, "{cpu} {kernel}");
        }
    }
}

/// NaN, infinite and huge sample coordinates run through every address mode and filter
/// without a fault: NaN samples texel 0, ±inf and ±3e38 the image's far edges (or the
/// border), every result a value of the image or the border (in [0, 1]).
#[test]
fn odd_sample_coordinates_stay_in_the_image() {
    let texels = rgba8(15);
    let t = TDesc::new(T2D, 10, 0, [5, 3, 1]);
    let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e38, -3e38, 0.5];
    let addr: Vec<[u32; 4]> = odd
        .iter()
        .flat_map(|&x| odd.iter().map(move |&y| [f(x), f(y), 0, 0]))
        .collect();
    for mode in [0, 1, 2, 3, 6] {
        for filter in [0, 1] {
            for (cpu, got, _) in run_ok(
                "sample_mf",
                &t,
                &SDesc::new(mode, filter),
                &addr,
                &[],
                &texels,
            ) {
                for (lane, g) in got.iter().take(addr.len()).enumerate() {
                    for &c in g {
                        let x = f32::from_bits(c);
                        assert!(
                            (0.0..=1.0).contains(&x),
                            "{cpu} mode {mode} filter {filter} lane {lane}: {x}"
                        );
                    }
                }
                // (NaN, NaN) point-samples texel (0, 0) in every mode.
                if filter == 0 {
                    assert_eq!(got[0], rgba8_value(0), "{cpu} mode {mode}");
                }
            }
        }
    }
}

/// The clang-built OpenCL kernels of `isa/image_ocl-<cpu>.hsaco` (`image.cl`, ROCm
/// device-libs): read_imagef/write_imagef copy an RGBA8 UNORM 8x8 image into an RGBA16
/// FLOAT one (each texel x / 255 rounded to binary16), read_imageui/write_imageui add
/// (1, 2, 3, 4) across 2D arrays, and read_imagef with a constant clamp-to-edge linear
/// sampler matches the host reference. The image arguments point at T#s; the v5 hidden
/// arguments the kernels read are set: group size x 64 at byte 28, global offset x 0 at 56.
#[test]
fn opencl_image_builtins_run() {
    let hidden = [(28usize, 64u32), (56, 0), (60, 0)];
    let desc = |t: &TDesc| {
        let mut w = t.words().to_vec();
        w.resize(12, 0);
        bytes32(&w)
    };
    for (cpu, target) in [
        ("gfx900", Gfx9Target::Gfx900),
        ("gfx90a", Gfx9Target::Gfx90a),
    ] {
        let isa = Isa::load("image_ocl", cpu, target);
        // copy_f: src at buf(2), dst at buf(3).
        let mut src = TDesc::new(T2D, 10, 0, [8, 8, 1]);
        src.base = buf(2);
        let mut dst = TDesc::new(T2D, 12, 7, [8, 8, 1]);
        dst.base = buf(3);
        let texels = rgba8(64);
        let bufs = vec![desc(&src), desc(&dst), texels.clone(), vec![0u8; 64 * 8]];
        let out = isa
            .run_with("copy_f", 64, &bufs, &hidden)
            .unwrap_or_else(|e| panic!("{cpu} copy_f: {}", e.detail()));
        for i in 0..64 * 4 {
            let h = u16::from_le_bytes([out[3][2 * i], out[3][2 * i + 1]]);
            let want = half::f16::from_f64(f64::from(texels[i]) / 255.0).to_bits();
            assert_eq!(h, want, "{cpu} copy_f component {i}");
        }
        // copy_ui_array: 4x4 texels, 4 slices, RGBA8 UINT into RGBA16 UINT.
        let mut src = TDesc::new(T2DA, 10, 4, [4, 4, 4]);
        src.base = buf(2);
        let mut dst = TDesc::new(T2DA, 12, 4, [4, 4, 4]);
        dst.base = buf(3);
        let bufs = vec![desc(&src), desc(&dst), texels.clone(), vec![0u8; 64 * 8]];
        let out = isa
            .run_with("copy_ui_array", 64, &bufs, &hidden)
            .unwrap_or_else(|e| panic!("{cpu} copy_ui_array: {}", e.detail()));
        for i in 0..64 * 4 {
            let h = u16::from_le_bytes([out[3][2 * i], out[3][2 * i + 1]]);
            assert_eq!(
                h,
                u16::from(texels[i]) + 1 + (i % 4) as u16,
                "{cpu} copy_ui_array {i}"
            );
        }
        // sample_f: a 16x4 RGBA8 UNORM image through the kernel's constant sampler (the
        // S# device-libs builds: CLAMP_X/Y/Z 2, XY_MAG/MIN_FILTER 1), normalized.
        let mut img = TDesc::new(T2D, 10, 0, [16, 4, 1]);
        img.base = buf(3);
        let bufs = vec![desc(&img), vec![0u8; 64 * 16], vec![], texels.clone()];
        let out = isa
            .run_with("sample_f", 64, &bufs, &hidden)
            .unwrap_or_else(|e| panic!("{cpu} sample_f: {}", e.detail()));
        let got = u32s(&out[1]);
        for lane in 0..64 {
            let (u, v) = (
                f64::from(lane as f32 / 64.0) * 16.0,
                f64::from(0.3f32) * 4.0,
            );
            let want = sample_ref(&texels, (16, 4), 2, true, [0.0; 4], (u, v));
            let g = [0, 1, 2, 3].map(|k| got[lane * 4 + k]);
            assert!(
                close(g, want),
                "{cpu} sample_f lane {lane}: {g:x?} want {want:x?}"
            );
        }
    }
}

/// `image_load_mip`/`image_store_mip` at level 0 are `image_load`/`image_store` (the level is
/// the component after the coordinates); gfx90a's `acc` form moves the data through AGPRs;
/// `a16` sampling takes x and y as the binary16 halves of one VGPR.
#[test]
fn mip_level_0_acc_data_and_a16_sampling() {
    let texels = rgba8(24);
    let t = TDesc::new(T2D, 10, 0, [6, 4, 1]);
    let addr: Vec<[u32; 4]> = (0..64).map(|i| [i % 6, i / 6 % 4, 0, 0]).collect();
    for (cpu, got, _) in run_ok("load_mip_mf", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        for lane in 0..64 {
            assert_eq!(
                got[lane],
                rgba8_value(lane % 24),
                "{cpu} load_mip lane {lane}"
            );
        }
    }
    let data: Vec<[u32; 4]> = (0..64).map(|i| [i, 2 * i, 3 * i, 4 * i]).collect();
    let u = TDesc::new(T2D, 10, 4, [6, 4, 1]);
    let addr24: Vec<[u32; 4]> = (0..64)
        .map(|i| {
            if i < 24 {
                [i % 6, i / 6, 0, 0]
            } else {
                [6, 0, 0, 0]
            }
        })
        .collect();
    for kernel in ["store_mip_mf", "store_mf_acc"] {
        for (cpu, _, tex) in run_ok(kernel, &u, &SDesc::new(0, 0), &addr24, &data, &[0; 96]) {
            for i in 0..24usize {
                let want = [i, 2 * i, 3 * i, 4 * i].map(|x| x as u8);
                assert_eq!(&tex[i * 4..i * 4 + 4], &want, "{cpu} {kernel} texel {i}");
            }
        }
    }
    for (cpu, got, _) in run_ok("load_mf_acc", &t, &SDesc::new(0, 0), &addr, &[], &texels) {
        assert_eq!(cpu, "gfx90a");
        for lane in 0..64 {
            assert_eq!(got[lane], rgba8_value(lane % 24), "{cpu} acc lane {lane}");
        }
    }
    // a16: (x, y) = the texel centres as binary16 halves; point filtering.
    let h = |x: f32| u32::from(half::f16::from_f32(x).to_bits());
    let addr: Vec<[u32; 4]> = (0..24)
        .map(|i| {
            let (x, y) = ((i % 6) as f32 + 0.5, (i / 6) as f32 + 0.5);
            [h(x / 6.0) | h(y / 4.0) << 16, 0, 0, 0]
        })
        .collect();
    for (cpu, got, _) in run_ok("sample_mf_a16", &t, &SDesc::new(2, 0), &addr, &[], &texels) {
        for i in 0..24 {
            assert_eq!(got[i], rgba8_value(i), "{cpu} a16 sample {i}");
        }
    }
}

/// With EXEC 0 an image instruction reads no descriptor: even a T# the interpreter refuses
/// does not fail the dispatch, and the result VGPRs keep their values.
#[test]
fn no_active_lane_reads_no_descriptor() {
    let mut t = TDesc::new(T2D, 10, 0, [4, 4, 1]);
    t.sw_mode = 9;
    for (cpu, got, _) in run_ok(
        "load_mf_exec0",
        &t,
        &SDesc::new(0, 0),
        &[[0; 4]],
        &[],
        &[0; 64],
    ) {
        assert_eq!(got[0], [DEADBEEF; 4], "{cpu}");
    }
}

/// Swizzled (tiled) images: each lane stores its texel through a T# in a mode ROCR's addrlib
/// lays images out in (4 KiB_D_X for a small 2D image, 64 KiB_D_X for a larger 2D array,
/// 4 KiB_Z_X for a 3D image, on the emulated MI210's `GB_ADDR_CONFIG` 0x22194042: 4 pipes,
/// 16 banks, 8 shader engines), and a 64 KiB_S image at a base off its block (no XOR,
/// `GB_ADDR_CONFIG` 0). The bytes land at the offsets AMD's addrlib gives for those texels
/// (ROCR 5.2.3's `Addr2ComputeSurfaceAddrFromCoord` with the pipe/bank XOR the T#'s base
/// address carries in its bits below the block, computed off the tree), and `image_load`
/// reads texels placed at those offsets back.
#[test]
fn tiled_images_land_where_addrlib_puts_them() {
    /// Lanes whose texels are checked.
    const LANES: [u32; 8] = [0, 9, 17, 26, 33, 42, 51, 63];
    struct Case {
        gb_addr_config: u32,
        ty: u32,
        dfmt: u32,
        bytes: usize,
        size: [u32; 3],
        pitch: u32,
        sw_mode: u32,
        /// Bits of the T#'s base address below the block (the pipe/bank XOR of an `_X`
        /// mode).
        base_low: u64,
        /// Where addrlib puts lane `LANES[i]`'s texel, bytes from `TEXELS`.
        offsets: [u64; 8],
    }
    #[rustfmt::skip]
    let cases = [
        Case { gb_addr_config: 0x2219_4042, ty: T2D, dfmt: 4, bytes: 4, size: [100, 7, 1],
               pitch: 128, sw_mode: 22, base_low: 0xa00,
               offsets: [0xa1c, 0x1e60, 0x1ec0, 0x2b04, 0x0, 0x1414, 0x2148, 0x1e18] },
        Case { gb_addr_config: 0x2219_4042, ty: T2DA, dfmt: 1, bytes: 1, size: [300, 20, 3],
               pitch: 512, sw_mode: 26, base_low: 0x5c00,
               offsets: [0x5c13, 0x5404, 0x45c80, 0x46439, 0x5e60, 0x5659, 0x6e4a, 0xe0ea] },
        Case { gb_addr_config: 0x2219_4042, ty: T3D, dfmt: 14, bytes: 16, size: [40, 3, 2],
               pitch: 40, sw_mode: 20, base_low: 0x300,
               offsets: [0x130, 0x4260, 0x8240, 0x1a10, 0x6660, 0x9b30, 0x2560, 0x3d60] },
        Case { gb_addr_config: 0, ty: T2D, dfmt: 2, bytes: 2, size: [300, 5, 1],
               pitch: 512, sw_mode: 9, base_low: 0x300,
               offsets: [0x316, 0xb08, 0xb30, 0x2322, 0x5c0, 0xdb2, 0x25a4, 0xabc4] },
    ];
    for c in &cases {
        let [w, h, d] = c.size;
        let mut t = TDesc::new(c.ty, c.dfmt, 4, c.size);
        t.pitch = c.pitch;
        t.sw_mode = c.sw_mode;
        t.base = TEXELS + c.base_low;
        let addr: Vec<[u32; 4]> = (0..64)
            .map(|l| [(l * 37 + 3) % w, (l * 11 + 1) % h, l % d, 0])
            .collect();
        let mut distinct = addr.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 64, "every lane has its own texel");
        // Lane l's components: 8- and 16-bit formats keep the low bits.
        let value = |l: u32, k: u32| match c.bytes {
            1 => l + 1,
            2 => 0x100 + l,
            4 => 0x1000_0000 + l,
            _ => 0x100 * k + l,
        };
        let data: Vec<[u32; 4]> = (0..64).map(|l| [0, 1, 2, 3].map(|k| value(l, k))).collect();
        let comps = if c.bytes == 16 { 4 } else { 1 };
        let element = |l: u32| -> Vec<u8> {
            (0..comps)
                .flat_map(|k| value(l, k).to_le_bytes()[..c.bytes.min(4)].to_vec())
                .collect()
        };
        let span = 0x8_0000;
        let (store, load) = if c.ty == T2D {
            ("store_mf", "load_mf")
        } else {
            ("store_da_mf", "load_da_mf")
        };
        let lanes = |v: &[[u32; 4]]| bytes32(&v.iter().flatten().copied().collect::<Vec<_>>());
        for (cpu, target) in IMAGE_CPUS {
            let isa = Isa::load("image", cpu, target);
            let bufs = vec![
                bytes32(&t.words()),
                bytes32(&SDesc::new(0, 0).words()),
                lanes(&addr),
                lanes(&data),
                vec![0u8; 64 * 16],
                vec![0u8; span],
            ];
            let after = isa
                .run_addr_config(store, 64, &bufs, c.gb_addr_config)
                .unwrap_or_else(|e| panic!("{cpu} SW_MODE {}: {}", c.sw_mode, e.detail()));
            for (i, &l) in LANES.iter().enumerate() {
                let at = c.offsets[i] as usize;
                assert_eq!(
                    after[5][at..at + c.bytes],
                    element(l)[..],
                    "{cpu} SW_MODE {}: lane {l}'s texel {:?} at {at:#x}",
                    c.sw_mode,
                    addr[l as usize]
                );
            }
            // Loads: the checked texels placed at addrlib's offsets, the rest 0.
            let mut texels = vec![0u8; span];
            for (i, &l) in LANES.iter().enumerate() {
                let at = c.offsets[i] as usize;
                texels[at..at + c.bytes].copy_from_slice(&element(l));
            }
            let mut bufs = bufs;
            bufs[5] = texels;
            let after = isa
                .run_addr_config(load, 64, &bufs, c.gb_addr_config)
                .unwrap_or_else(|e| panic!("{cpu} SW_MODE {}: {}", c.sw_mode, e.detail()));
            let got = u32s(&after[4]);
            for &l in &LANES {
                let want: Vec<u32> = (0..comps).map(|k| value(l, k)).collect();
                let l = l as usize;
                assert_eq!(
                    got[4 * l..4 * l + comps as usize],
                    want[..],
                    "{cpu} SW_MODE {}: load of lane {l}'s texel",
                    c.sw_mode
                );
            }
        }
    }
}
