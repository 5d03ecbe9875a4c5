//! Buffer data and numeric formats: the conversions of the typed buffer instructions
//! (`buffer_load/store_format_*` with the format in the buffer resource's word 3,
//! `tbuffer_load/store_format_*` with it in the MTBUF instruction, and their `_d16` forms)
//! between an element in memory and 32-bit (or, for D16, 16-bit) register values.
//!
//! Ref: Vega ISA §8.1.8 "Buffer Resource" (DATA_FORMAT [18:15], NUM_FORMAT [14:12] of word 3)
//! and the MTBUF `DFMT`/`NFMT` fields (§12.11); the same fields in the CDNA2 (MI200) and CDNA3
//! (MI300) ISA guides (gfx940 keeps the split DFMT/NFMT encoding; the unified format is
//! gfx10's). The names are those of LLVM's `format:[BUF_DATA_FORMAT_*,BUF_NUM_FORMAT_*]`.
//!
//! Layout: the packed formats are named from the most significant field down, the first
//! component (X) in the low bits: `10_11_11` is X [10:0], Y [21:11], Z [31:22];
//! `11_11_10` is X [9:0], Y [20:10], Z [31:21]; `10_10_10_2` is X [1:0], Y [11:2],
//! Z [21:12], W [31:22]; `2_10_10_10` is X [9:0], Y [19:10], Z [29:20], W [31:30]. The other
//! formats are arrays of 1, 2, 3 or 4 components of 8, 16 or 32 bits, X at the lowest
//! address (little endian).
//!
//! Conversions (every one is on the raw bits and exact where the result can hold the value):
//! - loads, to the 32-bit register: UNORM `c / (2^n − 1)`, SNORM
//!   `max(c / (2^(n−1) − 1), −1)` (the most negative code is −1 like the one above it),
//!   USCALED/SSCALED the integer as an f32, UINT/SINT the integer zero-/sign-extended, FLOAT
//!   32-bit as is, 16-bit (IEEE binary16) and the 11-/10-bit unsigned floats (5-bit
//!   exponent, 6-/5-bit mantissa, no sign; denormals, infinity and NaN as in binary16)
//!   widened exactly to f32.
//! - Components the format lacks read 0, except W, which reads 1 (1.0 for the float-valued
//!   numeric formats, the integer 1 for UINT/SINT): the (0, 0, 0, 1) fill of typed fetches.
//!   The buffer chapter does not spell the values out; this is the texture convention.
//! - stores, from the 32-bit register: UNORM/SNORM clamp to [0, 1] / [−1, 1] (NaN → 0), scale
//!   by `2^n − 1` / `2^(n−1) − 1` and round to the nearest integer, ties to even (the scale
//!   is odd, so only ±0.5 lands on a tie: e.g. 127.5 → 128 for UNORM8, but 0.5 → 0 for a
//!   2-bit SNORM field);
//!   USCALED/SSCALED truncate toward zero and saturate to the field's range (NaN → 0), as
//!   `v_cvt_u32_f32`/`v_cvt_i32_f32` do; UINT/SINT keep the low `n` bits (the ISA states
//!   neither the SCALED rounding nor whether integer stores saturate: these two are the
//!   interpreter's choice, untested against hardware); FLOAT 16-bit and
//!   the 11-/10-bit unsigned floats round to nearest even (negative values and −0 to +0, NaN
//!   stays NaN with the quiet bit set, a value past the largest finite one to +inf, denormals
//!   kept).
//! - D16 (`*_format_d16_*`): the load converts the component to 16 bits: the float-valued
//!   results are rounded once (to nearest even) from the exact value to binary16, UINT/SINT
//!   keep the low 16 bits; the store takes each 16-bit half as binary16 (float-valued
//!   formats) or as a 16-bit integer zero-/sign-extended (UINT/SINT) and converts it as a
//!   32-bit store would.
//!
//! Invalid combinations (DATA_FORMAT INVALID or 15, NUM_FORMAT 6 (reserved on gfx9), FLOAT
//! with 8-bit fields or with the 10_10_10_2/2_10_10_10 fields) are refused by
//! [`BufferFormat::new`].

use super::f16;

/// A buffer element format: where each component lies and how its bits are read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufferFormat {
    /// NUM_FORMAT: 0 UNORM, 1 SNORM, 2 USCALED, 3 SSCALED, 4 UINT, 5 SINT, 7 FLOAT.
    nfmt: u8,
    /// (bit offset, width in bits) of X, Y, Z, W in the element; `count` of them are used.
    fields: [(u32, u32); 4],
    /// Number of components of the format.
    count: usize,
    /// Whether the components are fields of one dword (the 10/11-bit and 2-bit formats) or,
    /// for the image formats 5_6_5 and 1_5_5_5, of one 16-bit word.
    packed: bool,
    /// Bytes of a packed element: 4, or 2 for 5_6_5 and 1_5_5_5.
    packed_bytes: usize,
}

impl BufferFormat {
    /// The format of DATA_FORMAT `dfmt` (4 bits) and NUM_FORMAT `nfmt` (3 bits).
    ///
    /// # Errors
    /// A sentence naming what is invalid for a combination the gfx9 ISA does not define.
    pub(crate) fn new(dfmt: u8, nfmt: u8) -> Result<BufferFormat, &'static str> {
        let arr = |bits: u32, count: usize| {
            let mut f = [(0, 0); 4];
            for (k, x) in f.iter_mut().enumerate().take(count) {
                *x = (bits * k as u32, bits);
            }
            (f, count, false)
        };
        let (fields, count, packed) = match dfmt {
            1 => arr(8, 1),
            2 => arr(16, 1),
            3 => arr(8, 2),
            4 => arr(32, 1),
            5 => arr(16, 2),
            6 => ([(0, 11), (11, 11), (22, 10), (0, 0)], 3, true),
            7 => ([(0, 10), (10, 11), (21, 11), (0, 0)], 3, true),
            8 => ([(0, 2), (2, 10), (12, 10), (22, 10)], 4, true),
            9 => ([(0, 10), (10, 10), (20, 10), (30, 2)], 4, true),
            10 => arr(8, 4),
            11 => arr(32, 2),
            12 => arr(16, 4),
            13 => arr(32, 3),
            14 => arr(32, 4),
            _ => return Err("invalid data format"),
        };
        match nfmt {
            6 => return Err("reserved numeric format 6"),
            7 if !matches!(dfmt, 2 | 4 | 5 | 6 | 7 | 11..=14) => {
                return Err("no float form of this data format")
            }
            _ => {}
        }
        Ok(BufferFormat {
            nfmt,
            fields,
            count,
            packed,
            packed_bytes: 4,
        })
    }

    /// The format of an image resource's (T#'s) DATA_FORMAT `dfmt` (6 bits) and NUM_FORMAT
    /// `nfmt` (4 bits): the buffer formats 1..=14 with NUM_FORMAT 0..=7, and the 16-bit
    /// packed image formats 5_6_5 (16: X [4:0], Y [10:5], Z [15:11]) and 1_5_5_5 (17:
    /// X [4:0], Y [9:5], Z [14:10], W [15]) with UNORM, the only numeric format ROCR's image
    /// table pairs them with (gfx9 IMG_DATA_FORMAT/IMG_NUM_FORMAT numbers, as ROCR's
    /// `resource_ai.h` lists them).
    ///
    /// # Errors
    /// A sentence naming what is unsupported: NUM_FORMAT 8 and above (SRGB 9 among them),
    /// DATA_FORMAT 0, 15 and 18 and above, 5_6_5/1_5_5_5 with anything but UNORM, or an
    /// invalid buffer combination.
    pub(crate) fn image(dfmt: u8, nfmt: u8) -> Result<BufferFormat, &'static str> {
        if nfmt > 7 {
            return Err("unsupported numeric format (only UNORM, SNORM, USCALED, SSCALED, UINT, SINT, FLOAT)");
        }
        let (fields, count) = match dfmt {
            1..=14 => return BufferFormat::new(dfmt, nfmt),
            16 => ([(0, 5), (5, 6), (11, 5), (0, 0)], 3),
            17 => ([(0, 5), (5, 5), (10, 5), (15, 1)], 4),
            _ => return Err("unsupported data format"),
        };
        if nfmt != 0 {
            return Err("only UNORM with this data format");
        }
        Ok(BufferFormat {
            nfmt,
            fields,
            count,
            packed: true,
            packed_bytes: 2,
        })
    }

    /// Bytes of one element (all of its components).
    pub(crate) fn element_bytes(&self) -> usize {
        self.bytes(4)
    }

    /// Whether the component values are integers (UINT, SINT), not float-valued.
    pub(crate) fn is_integer(&self) -> bool {
        self.integer()
    }

    /// Bytes of memory an access of the first `comps` components touches (from the start of
    /// the element): the whole dword for the packed formats.
    pub(crate) fn bytes(&self, comps: usize) -> usize {
        if self.packed {
            self.packed_bytes
        } else {
            let k = comps.min(self.count);
            if k == 0 {
                0
            } else {
                ((self.fields[k - 1].0 + self.fields[k - 1].1) / 8) as usize
            }
        }
    }

    /// The byte ranges (start, length) in the element that an access of the first `comps`
    /// components moves, each a unit the memory sees as contiguous: one per component, or
    /// the whole dword of a packed format. A swizzled buffer places each at its own address.
    pub(crate) fn pieces(&self, comps: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = if self.packed {
            1
        } else {
            comps.min(self.count)
        };
        (0..n).map(move |k| {
            if self.packed {
                (0, self.packed_bytes)
            } else {
                let (off, w) = self.fields[k];
                ((off / 8) as usize, (w / 8) as usize)
            }
        })
    }

    /// The number of components of the format.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Whether a component's bits are an integer register value (UINT, SINT).
    fn integer(&self) -> bool {
        matches!(self.nfmt, 4 | 5)
    }

    /// The raw bits of component `k` (< count) of the element `elem` (little endian).
    fn field(&self, elem: u128, k: usize) -> u32 {
        let (off, n) = self.fields[k];
        (elem >> off) as u32 & mask(n)
    }

    /// The exact value of the float-valued component `k` of `elem` (not UINT/SINT).
    fn value(&self, elem: u128, k: usize) -> f64 {
        let c = self.field(elem, k);
        let n = self.fields[k].1;
        match self.nfmt {
            0 => f64::from(c) / f64::from(mask(n)),
            1 => (f64::from(sext(c, n)) / f64::from(mask(n - 1))).max(-1.0),
            2 => f64::from(c),
            3 => f64::from(sext(c, n)),
            _ => match n {
                32 => f64::from(f32::from_bits(c)),
                16 => f16::to_f64(c as u16),
                _ => ufloat_to_f64(c, n - 5),
            },
        }
    }

    /// The 32-bit register value of component `k` (0..4) of `elem`, a missing one as the
    /// module doc says.
    pub(crate) fn load(&self, elem: u128, k: usize) -> u32 {
        if k >= self.count {
            return match (k, self.integer()) {
                (3, true) => 1,
                (3, false) => 1.0f32.to_bits(),
                _ => 0,
            };
        }
        let c = self.field(elem, k);
        let n = self.fields[k].1;
        match (self.nfmt, n) {
            (4, _) => c,
            (5, _) => sext(c, n) as u32,
            (7, 32) => c,
            // Every other value is exactly an f32 (UNORM/SNORM: one rounding of the quotient,
            // which f64 holds to 53 bits and narrows once more; both round to nearest).
            _ => (self.value(elem, k) as f32).to_bits(),
        }
    }

    /// The 16-bit register value (D16) of component `k` (0..4) of `elem`.
    pub(crate) fn load_d16(&self, elem: u128, k: usize) -> u16 {
        if k >= self.count {
            return match (k, self.integer()) {
                (3, true) => 1,
                (3, false) => 0x3C00,
                _ => 0,
            };
        }
        if self.integer() {
            return self.load(elem, k) as u16;
        }
        f16::from_f64(self.value(elem, k))
    }

    /// The field bits (in place in the element) of component `k` (< count) stored from the
    /// 32-bit register value `v`.
    pub(crate) fn store(&self, v: u32, k: usize) -> u128 {
        let n = self.fields[k].1;
        let c = match self.nfmt {
            4 | 5 => v & mask(n),
            7 if n == 32 => v,
            _ => self.encode(f64::from(f32::from_bits(v)), n),
        };
        u128::from(c) << self.fields[k].0
    }

    /// The field bits of component `k` (< count) stored from the 16-bit register value `h`
    /// (D16).
    pub(crate) fn store_d16(&self, h: u16, k: usize) -> u128 {
        let n = self.fields[k].1;
        let c = match self.nfmt {
            4 => u32::from(h) & mask(n),
            5 => h as i16 as u32 & mask(n),
            _ => self.encode(f16::to_f64(h), n),
        };
        u128::from(c) << self.fields[k].0
    }

    /// The `n`-bit field of the float-valued numeric formats for the value `x` (exact: an
    /// f32 or f16 widened).
    fn encode(&self, x: f64, n: u32) -> u32 {
        match self.nfmt {
            0 => {
                if x.is_nan() {
                    0
                } else {
                    (x.clamp(0.0, 1.0) * f64::from(mask(n))).round_ties_even() as u32
                }
            }
            1 => {
                if x.is_nan() {
                    0
                } else {
                    let q = (x.clamp(-1.0, 1.0) * f64::from(mask(n - 1))).round_ties_even();
                    q as i64 as u32 & mask(n)
                }
            }
            2 => {
                if x.is_nan() {
                    0
                } else {
                    x.trunc().clamp(0.0, f64::from(mask(n))) as u32
                }
            }
            3 => {
                if x.is_nan() {
                    0
                } else {
                    let hi = f64::from(mask(n - 1));
                    x.trunc().clamp(-hi - 1.0, hi) as i64 as u32 & mask(n)
                }
            }
            _ => match n {
                32 => (x as f32).to_bits(),
                16 => u32::from(f16::from_f64(x)),
                _ => f64_to_ufloat(x, n - 5),
            },
        }
    }
}

/// The low `n` bits set (`n` in 1..=32).
fn mask(n: u32) -> u32 {
    u32::MAX >> (32 - n)
}

/// The `n`-bit two's complement `c` sign-extended.
fn sext(c: u32, n: u32) -> i32 {
    ((c << (32 - n)) as i32) >> (32 - n)
}

/// The value of an unsigned float with a 5-bit exponent (bias 15) and an `m`-bit mantissa
/// (the 11-bit (m = 6) and 10-bit (m = 5) components of `10_11_11`/`11_11_10`): exact; NaN
/// keeps its mantissa at the top of the f64's.
fn ufloat_to_f64(c: u32, m: u32) -> f64 {
    let (e, man) = (c >> m & 0x1F, c & mask(m));
    if e == 0x1F {
        if man == 0 {
            return f64::INFINITY;
        }
        return f64::from_bits(0x7FF0_0000_0000_0000 | u64::from(man) << (52 - m));
    }
    // Denormal (e = 0): man · 2^(−14−m); normal: (2^m + man) · 2^(e−15−m).
    let (sig, exp) = if e == 0 {
        (man, -14 - m as i32)
    } else {
        (man | 1 << m, e as i32 - 15 - m as i32)
    };
    f64::from(sig) * 2f64.powi(exp)
}

/// `x` rounded (to nearest, ties to even) to an unsigned float with a 5-bit exponent and an
/// `m`-bit mantissa: negative values and −0 give +0, NaN a quiet NaN (the mantissa's top bit
/// set, the rest from the top of `x`'s), values past the largest finite one +inf.
fn f64_to_ufloat(x: f64, m: u32) -> u32 {
    let inf = 0x1F << m;
    if x.is_nan() {
        let payload = (x.to_bits() >> (52 - m)) as u32 & mask(m);
        return inf | 1 << (m - 1) | payload;
    }
    if x <= 0.0 {
        return 0;
    }
    if x == f64::INFINITY {
        return inf;
    }
    // The spacing of representable values at x: 2^(e−m) for x in [2^e, 2^(e+1)), at least
    // the denormal spacing 2^(−14−m). Scaling by a power of two is exact.
    let e = (x.log2().floor() as i32).max(-14);
    // log2 of a value just below a power of two may round up: correct e from the value.
    let e = if 2f64.powi(e) > x && e > -14 {
        e - 1
    } else {
        e
    };
    let q = (x * 2f64.powi(m as i32 - e)).round_ties_even();
    let v = q * 2f64.powi(e - m as i32);
    if v >= 2f64.powi(16) {
        return inf;
    }
    if v < 2f64.powi(-14) {
        // Denormal (or 0): the mantissa counts units of 2^(−14−m).
        return (v * 2f64.powi(14 + m as i32)) as u32;
    }
    let e = {
        let e = v.log2().floor() as i32;
        if 2f64.powi(e) > v {
            e - 1
        } else {
            e
        }
    };
    let man = (v * 2f64.powi(m as i32 - e)) as u32 - (1 << m);
    ((e + 15) as u32) << m | man
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_floats_round_trip_and_round_to_even() {
        for m in [5, 6] {
            for c in 0..(0x1F << m) {
                assert_eq!(f64_to_ufloat(ufloat_to_f64(c, m), m), c, "m {m} c {c:#x}");
            }
        }
        // 11-bit: 1.0 = 0x3C0; halfway between 1.0 and 1 + 2^-6 rounds to even (1.0);
        // halfway above that rounds up to the odd neighbour's even one.
        assert_eq!(f64_to_ufloat(1.0 + 2f64.powi(-7), 6), 0x3C0);
        assert_eq!(f64_to_ufloat(1.0 + 3.0 * 2f64.powi(-7), 6), 0x3C2);
        assert_eq!(f64_to_ufloat(-1.0, 6), 0);
        // The largest finite 11-bit value is 65024 (0x7BF); the tie with 65536 (2^16, the
        // exponent past the largest) rounds to the even code: infinity.
        assert_eq!(f64_to_ufloat(65_000.0, 6), 0x7BF);
        assert_eq!(f64_to_ufloat(65_279.0, 6), 0x7BF);
        assert_eq!(f64_to_ufloat(65_280.0, 6), 0x7C0);
        assert_eq!(f64_to_ufloat(f64::NAN, 5) >> 5, 0x1F);
    }

    #[test]
    fn invalid_combinations_are_refused() {
        assert!(BufferFormat::new(0, 4).is_err());
        assert!(BufferFormat::new(15, 4).is_err());
        assert!(BufferFormat::new(4, 6).is_err());
        assert!(BufferFormat::new(1, 7).is_err());
        assert!(BufferFormat::new(9, 7).is_err());
        assert!(BufferFormat::new(6, 7).is_ok());
    }
}
