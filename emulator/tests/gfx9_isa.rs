//! Instruction-level execution tests of the gfx9 interpreter: kernels assembled with
//! `llvm-mc-19` and linked with `ld.lld-19` (`testdata/codeobjects/isa/gen.py`, which states
//! the kernels' conventions) run one instruction over edge-case inputs, and each result is
//! compared with a host reference written from the ISA documents (AMD "Vega" ISA for gfx900,
//! "Vega 7nm" for gfx906, "AMD Instinct MI100" (CDNA1) for gfx908, "AMD Instinct MI200"
//! (CDNA2) for gfx90a, "AMD Instinct MI300" (CDNA3) for gfx942).

use std::cell::RefCell;
use std::path::PathBuf;

use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::{Result, Status};
use hsa_emu::gfx9::exec::{run_dispatch, DeviceMemory, DispatchState, KernelCode};
use hsa_emu::gfx9::Gfx9Target;
use object::{Object, ObjectSection, ObjectSymbol};
use zerocopy::FromBytes;

/// A flat device address space made of a few allocations (8-aligned bases).
struct TestMemory {
    allocs: RefCell<Vec<(u64, Vec<u8>)>>,
}

impl TestMemory {
    fn new() -> TestMemory {
        TestMemory {
            allocs: RefCell::new(Vec::new()),
        }
    }
    fn add(&self, addr: u64, bytes: Vec<u8>) {
        self.allocs.borrow_mut().push((addr, bytes));
    }
    fn get(&self, addr: u64) -> Vec<u8> {
        let a = self.allocs.borrow();
        a.iter().find(|(b, _)| *b == addr).unwrap().1.clone()
    }
}

impl DeviceMemory for TestMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        for (base, bytes) in self.allocs.borrow().iter() {
            if addr >= *base && addr + buf.len() as u64 <= base + bytes.len() as u64 {
                let o = (addr - base) as usize;
                buf.copy_from_slice(&bytes[o..o + buf.len()]);
                return Ok(());
            }
        }
        Err(hsa_core::error!(
            Status::MemoryFault,
            "read of {} bytes at {addr:#x}",
            buf.len()
        ))
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        for (base, bytes) in self.allocs.borrow_mut().iter_mut() {
            if addr >= *base && addr + data.len() as u64 <= *base + bytes.len() as u64 {
                let o = (addr - *base) as usize;
                bytes[o..o + data.len()].copy_from_slice(data);
                return Ok(());
            }
        }
        Err(hsa_core::error!(
            Status::MemoryFault,
            "write of {} bytes at {addr:#x}",
            data.len()
        ))
    }
}

const LOAD_BASE: u64 = 0x7000_0000_0000;
const KERNARG: u64 = 0x2000;
/// Where pointer argument `i` points.
const fn buf(i: usize) -> u64 {
    0x10_0000 * (i as u64 + 1)
}

const CPUS: [(&str, Gfx9Target); 5] = [
    ("gfx900", Gfx9Target::Gfx900),
    ("gfx906", Gfx9Target::Gfx906),
    ("gfx908", Gfx9Target::Gfx908),
    ("gfx90a", Gfx9Target::Gfx90a),
    ("gfx942", Gfx9Target::Gfx942),
];

/// One assembled code object of `isa/`.
struct Isa {
    data: Vec<u8>,
    target: Gfx9Target,
}

impl Isa {
    fn load(family: &str, cpu: &str, target: Gfx9Target) -> Isa {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/codeobjects/isa")
            .join(format!("{family}-{cpu}.hsaco"));
        Isa {
            data: std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")),
            target,
        }
    }

    /// The kernels of the file (symbols with a `.kd` descriptor).
    fn kernels(&self) -> Vec<String> {
        let elf = object::File::parse(&*self.data).unwrap();
        let mut v: Vec<String> = elf
            .symbols()
            .filter_map(|s| s.name().ok()?.strip_suffix(".kd").map(str::to_string))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Runs `kernel` over `items` work-items (work-groups of 64) with pointer arguments to
    /// `bufs` (placed at [`buf`]`(i)`), and returns the buffers afterwards.
    fn run(&self, kernel: &str, items: u32, bufs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        let elf = object::File::parse(&*self.data).unwrap();
        let kd_sym = elf
            .symbols()
            .find(|s| s.name() == Ok(&format!("{kernel}.kd")))
            .unwrap_or_else(|| panic!("no kernel {kernel}"));
        let rodata = elf
            .section_by_index(kd_sym.section_index().unwrap())
            .unwrap();
        let off = (kd_sym.address() - rodata.address()) as usize;
        let kd = KernelDescriptor::read_from_bytes(&rodata.data().unwrap()[off..off + 64]).unwrap();
        let text = elf.section_by_name(".text").unwrap();
        let code = KernelCode {
            base_address: LOAD_BASE + text.address(),
            bytes: text.data().unwrap(),
            entry_address: (LOAD_BASE + kd_sym.address())
                .wrapping_add(kd.kernel_code_entry_byte_offset as u64),
        };
        let mem = TestMemory::new();
        let mut args = Vec::new();
        for i in 0..8 {
            args.extend_from_slice(&buf(i).to_le_bytes());
        }
        mem.add(KERNARG, args);
        for (i, b) in bufs.iter().enumerate() {
            mem.add(buf(i), b.clone());
        }
        let mut st = DispatchState::one_dimensional(items, 64, 0, KERNARG);
        st.group_segment_size = kd.group_segment_fixed_size;
        st.private_segment_size = kd.private_segment_fixed_size;
        run_dispatch(&code, &kd, self.target, &st, &mem)?;
        Ok((0..bufs.len()).map(|i| mem.get(buf(i))).collect())
    }
}

fn bytes32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

// --- atomics --------------------------------------------------------------------------------

/// Edge values of 32-bit integer operands.
const E32: [u32; 16] = [
    0,
    1,
    2,
    3,
    0x7F,
    0xFFFF,
    0x1234_5678,
    0x7FFF_FFFE,
    0x7FFF_FFFF,
    0x8000_0000,
    0x8000_0001,
    0xA5A5_A5A5,
    0xFFFF_FFFD,
    0xFFFF_FFFE,
    0xFFFF_FFFF,
    0x0001_0000,
];

/// Edge values of 64-bit integer operands.
const E64: [u64; 16] = [
    0,
    1,
    2,
    0xFFFF_FFFF,
    0x1_0000_0000,
    0x1_0000_0001,
    0x7FFF_FFFF_FFFF_FFFE,
    0x7FFF_FFFF_FFFF_FFFF,
    0x8000_0000_0000_0000,
    0x8000_0000_0000_0001,
    0xFFFF_FFFF_FFFF_FFFE,
    0xFFFF_FFFF_FFFF_FFFF,
    0x0123_4567_89AB_CDEF,
    0xFFFF_FFFF_0000_0000,
    0x8000_0000,
    0xDEAD_BEEF_0000_0001,
];

/// f32 edge values (bits): zeros, ones, denormals, extremes, infinities, NaNs.
const F32: [u32; 16] = [
    0x0000_0000,
    0x8000_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x0000_0001,
    0x8000_0001,
    0x007F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x3FC0_0000,
    0x4B80_0001,
];

/// f64 edge values (bits).
const F64: [u64; 16] = [
    0,
    0x8000_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    1,
    0x8000_0000_0000_0001,
    0x000F_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0xFFEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0x3FF8_0000_0000_0000,
    0x4340_0000_0000_0001,
];

/// f16 pairs (bits) packed in u32: zeros, ones, denormals, max, infinities, NaNs.
const F16: [u16; 16] = [
    0x0000, 0x8000, 0x3C00, 0xBC00, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
    0x7E00, 0x7C01, 0x3E00, 0x3C01,
];

/// Items per atomic dispatch: every (memory, data) pair of 16 edge values, 4 waves.
const ITEMS: u32 = 256;

/// f32 with a denormal flushed to zero of the same sign.
fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// IEEE minNum/maxNum with -0 < +0; a NaN loses to a number, two NaNs give the first
/// quieted (CDNA2 ISA §9.5.3, float atomics' NaN and signed-zero rules).
fn min_max_f64(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() && b.is_nan() {
        return f64::from_bits(a.to_bits() | 1 << 51);
    }
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        // Equal values differ only in the sign of zero.
        let (x, y) = (a.to_bits(), b.to_bits());
        return f64::from_bits(if max { x & y } else { x | y });
    }
    if (a < b) != max {
        a
    } else {
        b
    }
}

/// Host reference of atomic `op` (the mnemonic after `atomic_`): the new memory value from
/// the old `m`, the data `s` and the compare value `c`. From the ISA's FLAT opcode table.
fn atomic_ref(op: &str, m: u64, s: u64, c: u64) -> u64 {
    let wide = op.ends_with("_x2") || op.ends_with("_f64");
    let base = op.strip_suffix("_x2").unwrap_or(op);
    let (m32, s32, c32) = (m as u32, s as u32, c as u32);
    if !wide {
        return u64::from(match base {
            "swap" => s32,
            "cmpswap" => {
                if m32 == c32 {
                    s32
                } else {
                    m32
                }
            }
            "add" => m32.wrapping_add(s32),
            "sub" => m32.wrapping_sub(s32),
            "smin" => (m32 as i32).min(s32 as i32) as u32,
            "smax" => (m32 as i32).max(s32 as i32) as u32,
            "umin" => m32.min(s32),
            "umax" => m32.max(s32),
            "and" => m32 & s32,
            "or" => m32 | s32,
            "xor" => m32 ^ s32,
            "inc" => {
                if m32 >= s32 {
                    0
                } else {
                    m32 + 1
                }
            }
            "dec" => {
                if m32 == 0 || m32 > s32 {
                    s32
                } else {
                    m32 - 1
                }
            }
            "add_f32" => {
                let r = flush32(f32::from_bits(m32)) + flush32(f32::from_bits(s32));
                flush32(r).to_bits()
            }
            "pk_add_f16" => {
                let h = |x: u32, k: u32| half::f16::from_bits((x >> (16 * k)) as u16);
                let add = |k: u32| {
                    let (a, b) = (h(m32, k), h(s32, k));
                    if a.is_nan() || b.is_nan() {
                        // NaN inputs propagate quieted (the first NaN operand).
                        let n = if a.is_nan() { a } else { b };
                        return u32::from(n.to_bits() | 0x200);
                    }
                    u32::from(half::f16::from_f64(a.to_f64() + b.to_f64()).to_bits())
                };
                add(0) | add(1) << 16
            }
            _ => panic!("no reference for {op}"),
        });
    }
    match base {
        "swap" => s,
        "cmpswap" => {
            if m == c {
                s
            } else {
                m
            }
        }
        "add" => m.wrapping_add(s),
        "sub" => m.wrapping_sub(s),
        "smin" => (m as i64).min(s as i64) as u64,
        "smax" => (m as i64).max(s as i64) as u64,
        "umin" => m.min(s),
        "umax" => m.max(s),
        "and" => m & s,
        "or" => m | s,
        "xor" => m ^ s,
        "inc" => {
            if m >= s {
                0
            } else {
                m + 1
            }
        }
        "dec" => {
            if m == 0 || m > s {
                s
            } else {
                m - 1
            }
        }
        "add_f64" => (f64::from_bits(m) + f64::from_bits(s)).to_bits(),
        "min_f64" => min_max_f64(f64::from_bits(m), f64::from_bits(s), false).to_bits(),
        "max_f64" => min_max_f64(f64::from_bits(m), f64::from_bits(s), true).to_bits(),
        _ => panic!("no reference for {op}"),
    }
}

/// The operands of item `i` for `op`: every (memory, data) pair of the op's edge values; the
/// compare value equals the memory value on every other item (so cmpswap both swaps and not).
fn atomic_inputs(op: &str, i: usize) -> (u64, u64, u64) {
    let (a, b) = (i % 16, i / 16 % 16);
    let (m, s) = match op {
        "add_f32" => (F32[a] as u64, F32[b] as u64),
        "pk_add_f16" => (
            (F16[a] as u64) | (F16[b] as u64) << 16,
            (F16[b] as u64) | (F16[(a + 5) % 16] as u64) << 16,
        ),
        o if o.ends_with("_f64") => (F64[a], F64[b]),
        o if o.ends_with("_x2") => (E64[a], E64[b]),
        _ => (E32[a] as u64, E32[b] as u64),
    };
    let c = if i % 2 == 0 { m } else { m ^ 1 };
    (m, s, c)
}

#[test]
fn flat_and_global_atomics_match_the_isa() {
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("atomics", cpu, target);
        for kernel in isa.kernels() {
            // `<form>_<op>[_rtn]`
            let (form, rest) = kernel.split_once('_').unwrap();
            let (op, rtn) = match rest.strip_suffix("_rtn") {
                Some(op) => (op, true),
                None => (rest, false),
            };
            let wide = op.ends_with("_x2") || op.ends_with("_f64");
            let n = ITEMS as usize;
            let ins: Vec<(u64, u64, u64)> = (0..n).map(|i| atomic_inputs(op, i)).collect();
            let bufs: Vec<Vec<u8>> = if wide {
                let col =
                    |k: usize| bytes64(&ins.iter().map(|t| [t.0, t.1, t.2][k]).collect::<Vec<_>>());
                vec![col(0), col(1), col(2), vec![0; n * 8], vec![0; n * 8]]
            } else {
                let col = |k: usize| {
                    bytes32(
                        &ins.iter()
                            .map(|t| [t.0, t.1, t.2][k] as u32)
                            .collect::<Vec<_>>(),
                    )
                };
                vec![col(0), col(1), col(2), vec![0; n * 4], vec![0; n * 4]]
            };
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let (mem, ret) = if wide {
                (u64s(&out[0]), u64s(&out[4]))
            } else {
                let w = |b: &[u8]| u32s(b).into_iter().map(u64::from).collect::<Vec<_>>();
                (w(&out[0]), w(&out[4]))
            };
            for (i, &(m, s, c)) in ins.iter().enumerate() {
                let want = atomic_ref(op, m, s, c);
                assert_eq!(
                    mem[i], want,
                    "{cpu} {kernel}[{i}]: memory {m:#x} data {s:#x} cmp {c:#x} ({form})"
                );
                let want_ret = if rtn {
                    m
                } else if wide {
                    0xDEAD_BEEF_DEAD_BEEF
                } else {
                    0xDEAD_BEEF
                };
                assert_eq!(ret[i], want_ret, "{cpu} {kernel}[{i}]: returned value");
            }
            ran += 1;
        }
    }
    // gfx900/gfx906: 26 integer ops x 3 forms x 2; gfx908 adds the non-returning global
    // add_f32/pk_add_f16; gfx90a 5 float ops (add_f32/pk_add_f16 global only); gfx942 has
    // flat f32/f16 too.
    assert_eq!(ran, 156 + 156 + 160 + 182 + 186);
}

// --- VOP3P packed math ------------------------------------------------------------------------

/// 16-bit integer edge values.
const E16: [u16; 16] = [
    0, 1, 2, 3, 15, 16, 0x7F, 0x00FF, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xA5A5, 0xFFFE, 0xFFFF,
    0x1234,
];

fn f16_nan(x: u16) -> bool {
    x & 0x7C00 == 0x7C00 && x & 0x3FF != 0
}

/// An f64 result (exact for f16 sums and products) rounded once to f16, NaN inputs giving the
/// first NaN operand quieted (IEEE 754 §6.2.3).
fn f16_op(ins: &[u16], f: impl Fn(&[f64]) -> f64) -> u16 {
    if let Some(n) = ins.iter().find(|&&x| f16_nan(x)) {
        return n | 0x200;
    }
    let v: Vec<f64> = ins
        .iter()
        .map(|&x| half::f16::from_bits(x).to_f64())
        .collect();
    half::f16::from_f64(f(&v)).to_bits()
}

/// IEEE-mode min/max of f16 (ISA `V_MIN_F16`/`V_MAX_F16`, MODE.IEEE = 1): sNaN → that NaN
/// quieted, a qNaN loses to the other operand, −0 < +0.
fn f16_min_max_ref(a: u16, b: u16, max: bool) -> u16 {
    let snan = |x: u16| f16_nan(x) && x & 0x200 == 0;
    if snan(a) {
        return a | 0x200;
    }
    if snan(b) {
        return b | 0x200;
    }
    if f16_nan(a) {
        return b;
    }
    if f16_nan(b) {
        return a;
    }
    let (x, y) = (half::f16::from_bits(a), half::f16::from_bits(b));
    if x == y {
        // ±0: the negative one is the minimum.
        let neg_a = a & 0x8000 != 0;
        return if neg_a != max { a } else { b };
    }
    if (x < y) != max {
        a
    } else {
        b
    }
}

/// One 16-bit result half of packed op `op` from the selected (and negated) halves.
fn pk16_ref(op: &str, x: [u16; 3], clamp: bool) -> u16 {
    let [a, b, c] = x;
    let (ai, bi, ci) = (a as i16 as i64, b as i16 as i64, c as i16 as i64);
    let (au, bu, cu) = (a as i64, b as i64, c as i64);
    let su = |v: i64| {
        if clamp {
            v.clamp(0, 0xFFFF) as u16
        } else {
            v as u16
        }
    };
    let si = |v: i64| {
        if clamp {
            v.clamp(-0x8000, 0x7FFF) as u16
        } else {
            v as u16
        }
    };
    let r = match op {
        "v_pk_mad_i16" => si(ai * bi + ci),
        "v_pk_mad_u16" => su(au * bu + cu),
        "v_pk_mul_lo_u16" => (au * bu) as u16,
        "v_pk_add_i16" => si(ai + bi),
        "v_pk_sub_i16" => si(ai - bi),
        "v_pk_add_u16" => su(au + bu),
        "v_pk_sub_u16" => su(au - bu),
        "v_pk_lshlrev_b16" => ((bu << (a & 15)) & 0xFFFF) as u16,
        "v_pk_lshrrev_b16" => (bu >> (a & 15)) as u16,
        "v_pk_ashrrev_i16" => (bi >> (a & 15)) as u16,
        "v_pk_max_i16" => ai.max(bi) as u16,
        "v_pk_min_i16" => ai.min(bi) as u16,
        "v_pk_max_u16" => a.max(b),
        "v_pk_min_u16" => a.min(b),
        "v_pk_fma_f16" => f16_op(&x, |v| v[0] * v[1] + v[2]),
        "v_pk_add_f16" => f16_op(&x[..2], |v| v[0] + v[1]),
        "v_pk_mul_f16" => f16_op(&x[..2], |v| v[0] * v[1]),
        "v_pk_min_f16" => f16_min_max_ref(a, b, false),
        "v_pk_max_f16" => f16_min_max_ref(a, b, true),
        _ => panic!("no reference for {op}"),
    };
    if clamp && op.ends_with("f16") {
        // clamp to [0, 1]: NaN and negatives (−0 too) give +0.
        if f16_nan(r) || r & 0x8000 != 0 {
            0
        } else {
            r.min(0x3C00)
        }
    } else {
        r
    }
}

/// One 32-bit result of packed f32 op `op`.
fn pk32_ref(op: &str, x: [u32; 3], clamp: bool) -> u32 {
    let f = |i: usize| f32::from_bits(x[i]);
    let r = match op {
        "v_pk_fma_f32" => f(0).mul_add(f(1), f(2)),
        "v_pk_mul_f32" => f(0) * f(1),
        "v_pk_add_f32" => f(0) + f(1),
        _ => panic!("no reference for {op}"),
    };
    let r = if clamp {
        if r.is_nan() {
            0.0
        } else {
            r.clamp(0.0, 1.0)
        }
    } else {
        r
    };
    r.to_bits()
}

#[test]
fn vop3p_packed_math_matches_the_isa() {
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("vop3p", cpu, target);
        for kernel in isa.kernels() {
            let (op, digits) = kernel.split_once("__").unwrap();
            let d: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
            let (sel, hi, nl, nh, clamp, k) = (d[0], d[1], d[2], d[3], d[4] == 1, d[5] == 1);
            let wide = op.ends_with("f32") || op == "v_pk_mov_b32";
            let float = op.ends_with("f16") || op.ends_with("f32");
            let n = ITEMS as usize;
            let out = if wide {
                let e = |i: usize| F32[i % 16] as u64 | (F32[(i * 7 + 3) % 16] as u64) << 32;
                let srcs: Vec<Vec<u64>> = (0..3)
                    .map(|s| (0..n).map(|i| e(i / [1, 16, 5][s] + s)).collect())
                    .collect();
                let bufs = vec![
                    vec![],
                    bytes64(&srcs[0]),
                    bytes64(&srcs[1]),
                    bytes64(&srcs[2]),
                    vec![0; n * 8],
                ];
                let out = isa
                    .run(&kernel, ITEMS, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                let got = u64s(&out[4]);
                for i in 0..n {
                    let s = [srcs[0][i], srcs[1][i], srcs[2][i]];
                    let mut want = 0u64;
                    for h in 0..2 {
                        let (sl, ng) = if h == 0 { (sel, nl) } else { (hi, nh) };
                        let x: [u32; 3] = std::array::from_fn(|j| {
                            let v = (s[j] >> (32 * (sl >> j & 1))) as u32;
                            if ng >> j & 1 != 0 {
                                v ^ 0x8000_0000
                            } else {
                                v
                            }
                        });
                        let r = if op == "v_pk_mov_b32" {
                            // D.dword[h] = S_h.dword[op_sel[h]] (CDNA2 V_PK_MOV_B32).
                            (s[h] >> (32 * (sel >> h & 1))) as u32
                        } else {
                            pk32_ref(op, x, clamp)
                        };
                        want |= (r as u64) << (32 * h);
                    }
                    assert_eq!(got[i], want, "{cpu} {kernel}[{i}]: sources {s:x?}");
                }
                ran += 1;
                continue;
            } else {
                let e = |i: usize, s: usize| -> u32 {
                    let t = if float { &F16 } else { &E16 };
                    t[(i / [1, 16, 5][s] + s) % 16] as u32
                        | (t[(i * [3, 5, 7][s] + 1) % 16] as u32) << 16
                };
                let srcs: Vec<Vec<u32>> =
                    (0..3).map(|s| (0..n).map(|i| e(i, s)).collect()).collect();
                let bufs = vec![
                    vec![],
                    bytes32(&srcs[0]),
                    bytes32(&srcs[1]),
                    bytes32(&srcs[2]),
                    vec![0; n * 4],
                ];
                (
                    isa.run(&kernel, ITEMS, &bufs)
                        .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}")),
                    srcs,
                )
            };
            let (out, srcs) = out;
            let got = u32s(&out[4]);
            for i in 0..n {
                let mut s = [srcs[0][i], srcs[1][i], srcs[2][i]];
                if k {
                    // Inline constant in source 1: f16 1.0 in the low half and 0 above, or
                    // the integer -1 sign-extended to 32 bits.
                    s[1] = if float { 0x3C00 } else { 0xFFFF_FFFF };
                }
                let mut want = 0u32;
                for h in 0..2 {
                    let (sl, ng) = if h == 0 { (sel, nl) } else { (hi, nh) };
                    let x: [u16; 3] = std::array::from_fn(|j| {
                        let v = (s[j] >> (16 * (sl >> j & 1))) as u16;
                        if ng >> j & 1 != 0 {
                            v ^ 0x8000
                        } else {
                            v
                        }
                    });
                    want |= (pk16_ref(op, x, clamp) as u32) << (16 * h);
                }
                assert_eq!(got[i], want, "{cpu} {kernel}[{i}]: sources {s:x?}");
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 3 * 141 + 2 * 168);
}

// --- scratch (private segment) ---------------------------------------------------------------

/// Runs every `scratch` kernel (see gen.py) over 4 work-groups of 64 (4 waves, so each wave
/// has its own scratch offset) and checks what each lane read back from its private segment.
#[test]
fn private_segment_through_mubuf_scratch_and_flat() {
    let n = ITEMS as usize;
    let data: Vec<u32> = (0..n as u32 * 4)
        .map(|k| k.wrapping_mul(0x9E37_79B9) ^ 0x5A5A_0000)
        .collect();
    // A: a multiple of 16 below 128 (different lanes use different slots); B = A or A + 128.
    let a_off: Vec<u32> = (0..n as u32).map(|i| (i * 5 % 8) * 16).collect();
    let b_off: Vec<u32> = (0..n as u32)
        .map(|i| a_off[i as usize] + if i % 3 == 0 { 128 } else { 0 })
        .collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("scratch", cpu, target);
        for kernel in isa.kernels() {
            if kernel == "raw_buffer" {
                continue;
            }
            let bufs = vec![
                vec![],
                bytes32(&data),
                bytes32(&a_off),
                bytes32(&b_off),
                vec![0; n * 16],
                vec![0; n * 16],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let dwords: usize = match kernel.rsplit_once("_x") {
                Some((_, d)) => d.parse().unwrap(),
                None => 4,
            };
            let p4 = u32s(&out[4]);
            let p5 = u32s(&out[5]);
            for i in 0..n {
                for k in 0..4 {
                    let d = data[i * 4 + k];
                    let want = if k >= dwords {
                        0
                    } else if b_off[i] == a_off[i] {
                        d
                    } else {
                        !d
                    };
                    assert_eq!(p4[i * 4 + k], want, "{cpu} {kernel}[{i}] dword {k}");
                    if kernel == "cross_mubuf" {
                        assert_eq!(p5[i * 4 + k], want, "{cpu} {kernel}[{i}] flat dword {k}");
                    }
                }
            }
            ran += 1;
        }
    }
    // scratch_x1..4, flat_x1..4 on every target; mubuf_x1..4 and cross_mubuf on all but
    // gfx942 (architected flat scratch: no private segment buffer).
    assert_eq!(ran, 5 * 8 + 4 * 5);
}

/// A raw buffer resource (stride 0, no swizzle) over p0 with NUM_RECORDS bytes: loads past
/// the end read 0 and atomics there do nothing (Vega ISA §8.1.5 "Range checking").
#[test]
fn raw_buffer_loads_and_atomics_are_range_checked() {
    let n = ITEMS as usize;
    let mem: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
    let records = 100 * 4 + 2; // dword 100 straddles the end: out of range too
    for (cpu, target) in CPUS {
        let isa = Isa::load("scratch", cpu, target);
        let bufs = vec![
            bytes32(&mem),
            vec![],
            bytes32(&[records]),
            vec![],
            vec![0; n * 4],
            vec![0; n * 4],
        ];
        let out = isa
            .run("raw_buffer", ITEMS, &bufs)
            .unwrap_or_else(|e| panic!("{cpu}: {e}"));
        let (after, loaded, returned) = (u32s(&out[0]), u32s(&out[4]), u32s(&out[5]));
        for i in 0..n {
            let inside = (i as u32 + 1) * 4 <= records;
            let (want_load, want_after) = if inside {
                (mem[i], mem[i] + 1)
            } else {
                (0, mem[i])
            };
            assert_eq!(loaded[i], want_load, "{cpu} load [{i}]");
            assert_eq!(returned[i], want_load, "{cpu} atomic return [{i}]");
            assert_eq!(after[i], want_after, "{cpu} memory [{i}]");
        }
    }
}

// --- SDWA and DPP ----------------------------------------------------------------------------

/// (shift, bits) of an SDWA select field value (0..3 BYTE_n, 4/5 WORD_n, 6 DWORD).
fn sel_bits(sel: u8) -> (u32, u32) {
    match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => (0, 32),
    }
}

/// SDWA source select: the selected bits, zero- or sign-extended (Vega ISA §12.6).
fn sdwa_src(v: u32, sel: u8, sext: bool) -> u32 {
    let (sh, n) = sel_bits(sel);
    if n == 32 {
        return v;
    }
    let x = (v >> sh) & ((1 << n) - 1);
    if sext && x >> (n - 1) & 1 == 1 {
        x | !((1u32 << n) - 1)
    } else {
        x
    }
}

/// SDWA destination: the result's low bits at `dst_sel`; other bits 0 (PAD), the result's
/// sign above and 0 below (SEXT), or the old value's (PRESERVE).
fn sdwa_dst(r: u32, old: u32, sel: u8, unused: u8) -> u32 {
    let (sh, n) = sel_bits(sel);
    if n == 32 {
        return r;
    }
    let field = ((1u32 << n) - 1) << sh;
    let placed = (r << sh) & field;
    match unused {
        0 => placed,
        1 => {
            if r >> (n - 1) & 1 == 1 {
                placed | !(field | ((1u32 << sh) - 1))
            } else {
                placed
            }
        }
        _ => placed | (old & !field),
    }
}

/// The 32-bit result of a VOP2 integer op (16-bit ops on the low halves, zero-extended).
fn vop2_ref(op: &str, a: u32, b: u32) -> u32 {
    let (a16, b16) = (a as u16, b as u16);
    match op {
        "v_mul_lo_u16" => a16.wrapping_mul(b16) as u32,
        "v_add_u16" => a16.wrapping_add(b16) as u32,
        "v_sub_u16" => a16.wrapping_sub(b16) as u32,
        "v_subrev_u16" => b16.wrapping_sub(a16) as u32,
        "v_lshlrev_b16" => ((b16 as u32) << (a & 15)) & 0xFFFF,
        "v_lshrrev_b16" => (b16 >> (a & 15)) as u32,
        "v_ashrrev_i16" => ((b16 as i16) >> (a & 15)) as u16 as u32,
        "v_max_u16" => a16.max(b16) as u32,
        "v_max_i16" => (a16 as i16).max(b16 as i16) as u16 as u32,
        "v_min_u16" => a16.min(b16) as u32,
        "v_min_i16" => (a16 as i16).min(b16 as i16) as u16 as u32,
        "v_add_u32" => a.wrapping_add(b),
        "v_sub_u32" => a.wrapping_sub(b),
        "v_and_b32" => a & b,
        "v_max_i32" => (a as i32).max(b as i32) as u32,
        "v_mov_b32" => a,
        "v_cmp_eq_u32" => (a == b) as u32,
        "v_cmp_lt_i32" => ((a as i32) < (b as i32)) as u32,
        "v_cmp_gt_u32" => (a > b) as u32,
        _ => panic!("no reference for {op}"),
    }
}

/// The lane DPP control `ctrl` makes `lane` read, or `None` out of range (Vega ISA §12.7).
fn dpp_src_lane(ctrl: u32, lane: usize) -> Option<usize> {
    let (row, pos, n) = (lane / 16 * 16, lane % 16, (ctrl & 15) as usize);
    match ctrl {
        0..=0xFF => Some(lane / 4 * 4 + ((ctrl as usize >> (2 * (lane % 4))) & 3)),
        0x101..=0x10F => (pos + n <= 15).then(|| lane + n),
        0x111..=0x11F => (pos >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + (pos + 16 - n) % 16),
        0x130 => (lane < 63).then(|| lane + 1),
        0x134 => Some((lane + 1) % 64),
        0x138 => (lane > 0).then(|| lane - 1),
        0x13C => Some((lane + 63) % 64),
        0x140 => Some(row + 15 - pos),
        0x141 => Some(lane / 8 * 8 + 7 - lane % 8),
        0x142 => (lane >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        _ => panic!("ctrl {ctrl:#x}"),
    }
}

#[test]
fn sdwa_and_dpp_match_the_isa() {
    let n = ITEMS as usize;
    let a: Vec<u32> = (0..n)
        .map(|i| E32[i % 16] ^ (E16[i / 16 % 16] as u32) << 8)
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|i| E32[(i * 7 + 3) % 16].rotate_left(i as u32 % 13))
        .collect();
    let old: Vec<u32> = (0..n).map(|i| 0xC0DE_0000 | i as u32).collect();
    let on: Vec<u32> = (0..n).map(|i| (i % 7 != 3) as u32).collect();
    let mut ran = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("sdwa_dpp", cpu, target);
        for kernel in isa.kernels() {
            let bufs = vec![
                bytes32(&on),
                bytes32(&a),
                bytes32(&b),
                bytes32(&old),
                vec![0; n * 4],
            ];
            let out = isa
                .run(&kernel, ITEMS, &bufs)
                .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
            let got = u32s(&out[4]);
            let (form, rest) = kernel.split_once('_').unwrap();
            let (op, args) = rest.split_once("__").unwrap_or((rest, ""));
            for i in 0..n {
                let want = match form {
                    "e32" => vop2_ref(op, a[i], b[i]),
                    "sdwa" => {
                        let d: Vec<u8> = args.bytes().map(|c| c - b'0').collect();
                        let x = sdwa_src(a[i], d[2], d[4] == 1);
                        let y = sdwa_src(b[i], d[3], d[5] == 1);
                        let r = vop2_ref(op, x, y);
                        if op.starts_with("v_cmp") {
                            r
                        } else {
                            sdwa_dst(r, old[i], d[0], d[1])
                        }
                    }
                    _ => {
                        let f: Vec<u32> = args
                            .split('_')
                            .map(|t| u32::from_str_radix(t, 16).unwrap())
                            .collect();
                        let (ctrl, rm, bm, bc) = (f[0], f[1], f[2], f[3] == 1);
                        let (lane, base) = (i % 64, i / 64 * 64);
                        let writes = on[i] == 1
                            && rm >> (lane / 16) & 1 == 1
                            && bm >> (lane % 16 / 4) & 1 == 1;
                        // A source lane out of range or off in EXEC: 0 with bound_ctrl, else
                        // the lane is not written.
                        let src = dpp_src_lane(ctrl, lane)
                            .filter(|&s| on[base + s] == 1)
                            .map(|s| a[base + s]);
                        // `_self`: src1 is src0's register, read in the lane itself.
                        let (op, b_i) = match op.strip_suffix("_self") {
                            Some(op) => (op, a[i]),
                            None => (op, b[i]),
                        };
                        match (writes, src) {
                            (false, _) => old[i],
                            (true, Some(x)) => vop2_ref(op, x, b_i),
                            (true, None) if bc => vop2_ref(op, 0, b_i),
                            (true, None) => old[i],
                        }
                    }
                };
                assert_eq!(
                    got[i], want,
                    "{cpu} {kernel}[{i}]: a {:#x} b {:#x} old {:#x}",
                    a[i], b[i], old[i]
                );
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5 * 294);
}
