//! Execution tests of the scalar instructions of `testdata/codeobjects/isa/gen_sop.py`'s `sop`
//! family (issue 19): every SOP1, SOP2, SOPK and SOPC ALU instruction, the conditional
//! branches, `s_swappc_b64`, `s_setprio`, `s_sleep`, `s_barrier`, `s_trap`, `s_endpgm_saved`
//! and the scalar buffer loads, stores and atomics the other families leave out, assembled
//! with `llvm-mc-19` and linked with `ld.lld-19`, run over edge-case inputs and compared with
//! host references written from the descriptions of AMD's "Vega" Instruction Set
//! Architecture (sections 12.1 SOP2, 12.2 SOPK, 12.3 SOP1, 12.4 SOPC, 12.5 SOPP, 12.6 SMEM;
//! the later gfx9 guides describe these instructions the same way). The harness is
//! `gfx9_isa.rs`'s (`isa_harness`).

use hsa_core::Status;

mod isa_harness;
use isa_harness::*;

/// Source values: 0, 1, -1, INT_MIN/INT_MAX of 32 and 64 bits, shift amounts below, at and
/// above 32 and 64, bit-field descriptors (offset in bits 5:0, width in bits 22:16) at the
/// edges, and a few patterns whose halves differ.
const VALUES: [u64; 24] = [
    0,
    1,
    u64::MAX,
    0x8000_0000,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
    0x8000_0000_0000_0000,
    0x7FFF_FFFF_FFFF_FFFF,
    0x1_0000_0000,
    31,
    32,
    33,
    63,
    64,
    0xFFFF_FFFF_8000_0000,
    0x0020_0000,
    0x0001_001F,
    0x0008_0018,
    0x0010_0008,
    0x0040_0000,
    0x0001_003F,
    0x0007_0020,
    0x1234_5678_9ABC_DEF0,
    0x0000_FFFF_FFFF_0001,
];

/// One case of an ALU kernel: sources A and B, the destination's value before, SCC in.
#[derive(Clone, Copy, Debug)]
struct Case {
    a: u64,
    b: u64,
    d: u64,
    scc: bool,
}

/// The cases of one dispatch: every value against every value (one wave each), the
/// destination's old value and SCC varying with them.
fn cases() -> Vec<Case> {
    let n = VALUES.len();
    (0..n * n)
        .map(|i| Case {
            a: VALUES[i / n],
            b: VALUES[i % n],
            d: VALUES[(i * 7 + 3) % n] ^ 0xD0D0_0000_0000_0000,
            scc: (i / n + i % n) % 2 == 1,
        })
        .collect()
}

/// What an ALU kernel leaves: the destination (64 bits; a 32-bit destination keeps its high
/// half), SCC and EXEC. `None` when the ISA leaves the result undefined for this input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Out {
    d: u64,
    scc: bool,
    exec: u64,
}

fn lo(v: u64) -> u32 {
    v as u32
}

/// Bit-field extract of `bits`-bit data (S_BFE_*: offset S1[4:0] or S1[5:0], width
/// S1[22:16]); `None` when the field passes the data's top bit (not described).
fn bfe(data: u64, desc: u32, bits: u32, signed: bool) -> Option<u64> {
    let off = desc & (bits - 1);
    let width = desc >> 16 & 0x7F;
    if off + width > bits {
        return None;
    }
    if width == 0 {
        return Some(0);
    }
    let field = (data >> off)
        & if width == 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        };
    let v = if signed && field >> (width - 1) & 1 == 1 && width < 64 {
        field | !((1u64 << width) - 1)
    } else {
        field
    };
    Some(if bits == 32 { u64::from(v as u32) } else { v })
}

/// The 64 bits' whole-quad mode: every nibble with a bit set becomes 0xF (S_WQM_B64).
fn wqm(v: u64) -> u64 {
    (0..16).fold(0, |r, k| {
        if v >> (4 * k) & 0xF != 0 {
            r | 0xF << (4 * k)
        } else {
            r
        }
    })
}

/// First bit (from the LSB) equal to `one`, or -1 (S_FF0/S_FF1).
fn ff(v: u64, bits: u32, one: bool) -> u32 {
    (0..bits)
        .find(|&k| (v >> k & 1 == 1) == one)
        .unwrap_or(u32::MAX)
}

/// Bits from the MSB before the first 1 (S_FLBIT_I32_B32/B64), or before the first bit that
/// differs from the sign (S_FLBIT_I32/I64); -1 when there is none.
fn flbit(v: u64, bits: u32, signed: bool) -> u32 {
    let sign = signed && v >> (bits - 1) & 1 == 1;
    (0..bits)
        .find(|&k| (v >> (bits - 1 - k) & 1 == 1) != sign)
        .unwrap_or(u32::MAX)
}

/// The ISA's result of `op` (K: the SOPK immediate) on `c` with EXEC all ones; `None` when
/// undefined. A 32-bit destination's high half stays `c.d`'s.
fn reference(op: &str, k: Option<u16>, c: Case) -> Option<Out> {
    let (a, b, scc) = (c.a, c.b, c.scc);
    let (a32, b32, d32) = (lo(a), lo(b), lo(c.d));
    let keep = |r: u32| c.d & !0xFFFF_FFFF | u64::from(r);
    let out = |d: u64, scc: bool| {
        Some(Out {
            d,
            scc,
            exec: u64::MAX,
        })
    };
    // 32-bit result, SCC = result != 0.
    let nz32 = |r: u32| out(keep(r), r != 0);
    let nz64 = |r: u64| out(r, r != 0);
    let same32 = |r: u32| out(keep(r), scc);
    let cmp = |s: bool| out(c.d, s);
    let ksx = k.map(|k| k as i16 as i32 as u32);
    let kzx = k.map(u32::from);
    if let Some(n) = op
        .strip_prefix("s_lshl")
        .and_then(|r| r.strip_suffix("_add_u32"))
    {
        // D = (S0 << N) + S1; SCC = the sum (of 64 bits) is at least 2^32.
        let n: u32 = n.parse().unwrap();
        let sum = (u64::from(a32) << n) + u64::from(b32);
        return out(keep(sum as u32), sum >> 32 != 0);
    }
    match op {
        // SOP2
        "s_add_u32" => {
            let (r, c) = a32.overflowing_add(b32);
            out(keep(r), c)
        }
        "s_addc_u32" => {
            let sum = u64::from(a32) + u64::from(b32) + u64::from(scc);
            out(keep(sum as u32), sum >> 32 != 0)
        }
        "s_add_i32" => {
            let (r, o) = (a32 as i32).overflowing_add(b32 as i32);
            out(keep(r as u32), o)
        }
        "s_sub_i32" => {
            let (r, o) = (a32 as i32).overflowing_sub(b32 as i32);
            out(keep(r as u32), o)
        }
        // SCC = 1 when S0 is the one chosen.
        "s_min_i32" => {
            let s = (a32 as i32) < (b32 as i32);
            out(keep(if s { a32 } else { b32 }), s)
        }
        "s_min_u32" => out(keep(a32.min(b32)), a32 < b32),
        "s_max_i32" => {
            let s = (a32 as i32) > (b32 as i32);
            out(keep(if s { a32 } else { b32 }), s)
        }
        "s_max_u32" => out(keep(a32.max(b32)), a32 > b32),
        "s_andn2_b32" => nz32(a32 & !b32),
        "s_orn2_b32" => nz32(a32 | !b32),
        "s_nand_b32" => nz32(!(a32 & b32)),
        "s_nor_b32" => nz32(!(a32 | b32)),
        "s_xnor_b32" => nz32(!(a32 ^ b32)),
        "s_xor_b32" => nz32(a32 ^ b32),
        "s_lshl_b32" => nz32(a32 << (b32 & 31)),
        "s_lshr_b32" => nz32(a32 >> (b32 & 31)),
        "s_ashr_i32" => nz32(((a32 as i32) >> (b32 & 31)) as u32),
        "s_bfm_b32" => same32(((1u32 << (a32 & 31)) - 1) << (b32 & 31)),
        "s_mul_i32" => same32(a32.wrapping_mul(b32)),
        "s_bfe_u32" => nz32(bfe(u64::from(a32), b32, 32, false)? as u32),
        "s_bfe_i32" => nz32(bfe(u64::from(a32), b32, 32, true)? as u32),
        "s_absdiff_i32" => nz32((a32 as i32).wrapping_sub(b32 as i32).unsigned_abs()),
        "s_mul_hi_u32" => same32(((u64::from(a32) * u64::from(b32)) >> 32) as u32),
        "s_mul_hi_i32" => same32(((i64::from(a32 as i32) * i64::from(b32 as i32)) >> 32) as u32),
        "s_pack_ll_b32_b16" => same32(a32 & 0xFFFF | b32 << 16),
        "s_pack_lh_b32_b16" => same32(a32 & 0xFFFF | b32 & 0xFFFF_0000),
        "s_pack_hh_b32_b16" => same32(a32 >> 16 | b32 & 0xFFFF_0000),
        "s_cselect_b64" => out(if scc { a } else { b }, scc),
        "s_and_b64" => nz64(a & b),
        "s_or_b64" => nz64(a | b),
        "s_xor_b64" => nz64(a ^ b),
        "s_andn2_b64" => nz64(a & !b),
        "s_orn2_b64" => nz64(a | !b),
        "s_nand_b64" => nz64(!(a & b)),
        "s_nor_b64" => nz64(!(a | b)),
        "s_xnor_b64" => nz64(!(a ^ b)),
        "s_lshl_b64" => nz64(a << (b32 & 63)),
        "s_lshr_b64" => nz64(a >> (b32 & 63)),
        "s_ashr_i64" => nz64(((a as i64) >> (b32 & 63)) as u64),
        "s_bfe_u64" => nz64(bfe(a, b32, 64, false)?),
        "s_bfe_i64" => nz64(bfe(a, b32, 64, true)?),
        "s_bfm_b64" => out(((1u64 << (a32 & 63)) - 1) << (b32 & 63), scc),
        // SOP1
        "s_cmov_b32" => same32(if scc { a32 } else { d32 }),
        "s_cmov_b64" => out(if scc { a } else { c.d }, scc),
        "s_not_b32" => nz32(!a32),
        "s_not_b64" => nz64(!a),
        "s_wqm_b32" => nz32(wqm(u64::from(a32)) as u32),
        "s_wqm_b64" => nz64(wqm(a)),
        "s_brev_b32" => same32(a32.reverse_bits()),
        "s_brev_b64" => out(a.reverse_bits(), scc),
        "s_bcnt0_i32_b32" => nz32(32 - a32.count_ones()),
        "s_bcnt1_i32_b32" => nz32(a32.count_ones()),
        "s_bcnt0_i32_b64" => nz32(64 - a.count_ones()),
        "s_bcnt1_i32_b64" => nz32(a.count_ones()),
        "s_ff0_i32_b32" => same32(ff(u64::from(a32), 32, false)),
        "s_ff1_i32_b32" => same32(ff(u64::from(a32), 32, true)),
        "s_ff0_i32_b64" => same32(ff(a, 64, false)),
        "s_ff1_i32_b64" => same32(ff(a, 64, true)),
        "s_flbit_i32_b32" => same32(flbit(u64::from(a32), 32, false)),
        "s_flbit_i32" => same32(flbit(u64::from(a32), 32, true)),
        "s_flbit_i32_b64" => same32(flbit(a, 64, false)),
        "s_flbit_i32_i64" => same32(flbit(a, 64, true)),
        "s_sext_i32_i8" => same32(a32 as u8 as i8 as i32 as u32),
        "s_sext_i32_i16" => same32(a32 as u16 as i16 as i32 as u32),
        "s_bitset0_b32" => same32(d32 & !(1 << (a32 & 31))),
        "s_bitset1_b32" => same32(d32 | 1 << (a32 & 31)),
        "s_bitset0_b64" => out(c.d & !(1u64 << (a32 & 63)), scc),
        "s_bitset1_b64" => out(c.d | 1u64 << (a32 & 63), scc),
        "s_abs_i32" => nz32((a32 as i32).unsigned_abs()),
        // SOPC
        "s_cmp_eq_i32" | "s_cmp_eq_u32" => cmp(a32 == b32),
        "s_cmp_lg_i32" | "s_cmp_lg_u32" => cmp(a32 != b32),
        "s_cmp_gt_i32" => cmp(a32 as i32 > b32 as i32),
        "s_cmp_ge_i32" => cmp(a32 as i32 >= b32 as i32),
        "s_cmp_lt_i32" => cmp((a32 as i32) < b32 as i32),
        "s_cmp_le_i32" => cmp(a32 as i32 <= b32 as i32),
        "s_cmp_gt_u32" => cmp(a32 > b32),
        "s_cmp_ge_u32" => cmp(a32 >= b32),
        "s_cmp_lt_u32" => cmp(a32 < b32),
        "s_cmp_le_u32" => cmp(a32 <= b32),
        "s_cmp_lg_u64" => cmp(a != b),
        "s_bitcmp0_b32" => cmp(a32 >> (b32 & 31) & 1 == 0),
        "s_bitcmp1_b32" => cmp(a32 >> (b32 & 31) & 1 == 1),
        "s_bitcmp0_b64" => cmp(a >> (b32 & 63) & 1 == 0),
        "s_bitcmp1_b64" => cmp(a >> (b32 & 63) & 1 == 1),
        // SOPK: the compares read the register in the SDST field (here s20 = A).
        "s_cmpk_eq_i32" => cmp(a32 == ksx?),
        "s_cmpk_lg_i32" => cmp(a32 != ksx?),
        "s_cmpk_gt_i32" => cmp(a32 as i32 > ksx? as i32),
        "s_cmpk_ge_i32" => cmp(a32 as i32 >= ksx? as i32),
        "s_cmpk_lt_i32" => cmp((a32 as i32) < ksx? as i32),
        "s_cmpk_le_i32" => cmp(a32 as i32 <= ksx? as i32),
        "s_cmpk_eq_u32" => cmp(a32 == kzx?),
        "s_cmpk_lg_u32" => cmp(a32 != kzx?),
        "s_cmpk_gt_u32" => cmp(a32 > kzx?),
        "s_cmpk_ge_u32" => cmp(a32 >= kzx?),
        "s_cmpk_lt_u32" => cmp(a32 < kzx?),
        "s_cmpk_le_u32" => cmp(a32 <= kzx?),
        "s_addk_i32" => {
            let (r, o) = (d32 as i32).overflowing_add(ksx? as i32);
            out(keep(r as u32), o)
        }
        "s_mulk_i32" => same32(d32.wrapping_mul(ksx?)),
        "s_cmovk_i32" => same32(if scc { ksx? } else { d32 }),
        _ => exec_reference(op, c),
    }
}

/// The EXEC-writing SOP1 instructions with EXEC = B before: `*_saveexec_b64` write the old
/// EXEC to D, `*_wrexec_b64` the new one; SCC = the new EXEC != 0.
fn exec_reference(op: &str, c: Case) -> Option<Out> {
    let (s, e) = (c.a, c.b);
    let base = op.strip_prefix("s_")?;
    let new = match base
        .strip_suffix("_saveexec_b64")
        .or(base.strip_suffix("_wrexec_b64"))?
    {
        "or" => s | e,
        "xor" => s ^ e,
        "andn2" => s & !e,
        "orn2" => s | !e,
        "nand" => !(s & e),
        "nor" => !(s | e),
        "xnor" => !(s ^ e),
        "andn1" => !s & e,
        "orn1" => !s | e,
        _ => panic!("{op}"),
    };
    let d = if op.ends_with("_wrexec_b64") { new } else { e };
    Some(Out {
        d,
        scc: new != 0,
        exec: new,
    })
}

/// Runs one ALU or branch kernel over [`cases`]; the records of every wave.
fn run_cases(isa: &Isa, cpu: &str, kernel: &str, cases: &[Case]) -> Vec<Out> {
    let mut rec = Vec::new();
    for c in cases {
        rec.extend_from_slice(&[lo(c.d), (c.d >> 32) as u32, u32::from(c.scc), 0]);
    }
    let a: Vec<u64> = cases.iter().map(|c| c.a).collect();
    let b: Vec<u64> = cases.iter().map(|c| c.b).collect();
    let bufs = [
        vec![0u8; 64],
        bytes64(&a),
        bytes64(&b),
        bytes32(&rec),
        vec![0xEEu8; 32 * cases.len()],
    ];
    let out = isa
        .run(kernel, 64 * cases.len() as u32, &bufs)
        .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
    u32s(&out[4])
        .chunks(8)
        .map(|r| Out {
            d: u64::from(r[0]) | u64::from(r[1]) << 32,
            scc: match r[2] {
                0 => false,
                1 => true,
                x => panic!("{cpu} {kernel}: SCC record {x:#x}"),
            },
            exec: u64::from(r[3]) | u64::from(r[4]) << 32,
        })
        .collect()
}

/// Splits a kernel name `<op>[_k<K>]` into the mnemonic and the SOPK immediate.
fn split_k(kernel: &str) -> (&str, Option<u16>) {
    match kernel.rsplit_once("_k") {
        Some((op, k)) if op.starts_with("s_") && u16::from_str_radix(k, 16).is_ok() => {
            (op, Some(u16::from_str_radix(k, 16).unwrap()))
        }
        _ => (kernel, None),
    }
}

const OTHER: [&str; 8] = [
    "s_swappc_b64",
    "s_nop",
    "s_setprio",
    "s_sleep",
    "s_barrier",
    "s_trap_3",
    "s_trap_2",
    "s_endpgm_saved",
];

#[test]
fn scalar_alu_matches_the_isa() {
    let cases = cases();
    let mut kernels = 0;
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("sop", cpu, target);
        for kernel in isa.kernels() {
            if kernel.starts_with("smem_")
                || kernel.starts_with("s_cbranch_")
                || OTHER.contains(&kernel.as_str())
            {
                continue;
            }
            let (op, k) = split_k(&kernel);
            let got = run_cases(&isa, cpu, &kernel, &cases);
            for (c, g) in cases.iter().zip(&got) {
                let Some(want) = reference(op, k, *c) else {
                    continue;
                };
                assert_eq!(*g, want, "{cpu} {kernel} {c:x?}");
                checked += 1;
            }
            kernels += 1;
        }
    }
    // Per target: 31 + 9 + 5 + 1 SOP2, 15 + 4 + 6 + 2 + 11 SOP1, 14 + 1 + 2 SOPC, and
    // (12 s_cmpk_* + 3) x 5 immediates.
    assert_eq!(kernels, (46 + 38 + 17 + 75) * 5);
    assert!(
        checked > kernels * (cases.len() - 40),
        "{checked} cases checked"
    );
}

#[test]
fn scalar_branches_match_the_isa() {
    let cases = cases();
    for (cpu, target) in CPUS {
        let isa = Isa::load("sop", cpu, target);
        for op in [
            "s_cbranch_scc0",
            "s_cbranch_scc1",
            "s_cbranch_vccz",
            "s_cbranch_vccnz",
            "s_cbranch_execz",
            "s_cbranch_execnz",
        ] {
            let got = run_cases(&isa, cpu, op, &cases);
            for (c, g) in cases.iter().zip(&got) {
                // S_CBRANCH_<cond>: PC = PC + 4 + SIMM16 * 4 when the condition holds.
                let taken = match op {
                    "s_cbranch_scc0" => !c.scc,
                    "s_cbranch_scc1" => c.scc,
                    "s_cbranch_vccz" | "s_cbranch_execz" => c.b == 0,
                    _ => c.b != 0,
                };
                let exec = if op.contains("exec") { c.b } else { u64::MAX };
                let want = Out {
                    d: c.d & !0xFFFF_FFFF | if taken { 1 } else { 2 },
                    scc: c.scc,
                    exec,
                };
                assert_eq!(*g, want, "{cpu} {op} {c:x?}");
            }
        }
    }
}

#[test]
fn program_control_matches_the_isa() {
    let one = [Case {
        a: 0,
        b: 0,
        d: 0x1234_5678_0000_0000,
        scc: false,
    }];
    for (cpu, target) in CPUS {
        let isa = Isa::load("sop", cpu, target);
        // S_SWAPPC_B64: D = PC + 4 (the next instruction), PC = S0; the subroutine set
        // s25 = 0x5ab and returned through D.
        let got = run_cases(&isa, cpu, "s_swappc_b64", &one)[0];
        assert_eq!(got.d, 0x5ab_0000_0001, "{cpu} s_swappc_b64");
        // s_nop, s_setprio, s_sleep, s_barrier (a one-wave work-group) and trap 3 (llvm.debugtrap,
        // no debugger: the handler returns) go on to the next instruction.
        for k in ["s_nop", "s_setprio", "s_sleep", "s_barrier", "s_trap_3"] {
            let got = run_cases(&isa, cpu, k, &one)[0];
            assert_eq!(got.d, 0x1234_5678_0000_600d, "{cpu} {k}");
        }
        // s_endpgm_saved ends the wave: the second store does not happen.
        let got = run_cases(&isa, cpu, "s_endpgm_saved", &one)[0];
        assert_eq!(got.d, 0x1234_5678_0000_600d, "{cpu} s_endpgm_saved");
        // Any other trap needs a trap handler, which the emulator has not: the dispatch
        // fails with the wave trap's HSA_STATUS_ERROR_EXCEPTION.
        let bufs: Vec<Vec<u8>> = (0..5).map(|_| vec![0u8; 64]).collect();
        let err = isa.run("s_trap_2", 64, &bufs).unwrap_err();
        assert_eq!(err.status(), Status::Exception, "{cpu} s_trap 2: {err}");
    }
}

/// Buffer bytes the scalar buffer kernels' V#s cover, and their initial dwords.
fn pattern(n: usize, tag: u32) -> Vec<u32> {
    (0..n as u32).map(|i| tag | (i * 0x0101)).collect()
}

#[test]
fn scalar_buffer_loads_and_stores_match_the_isa() {
    let data = pattern(64, 0xA000_0000);
    for (cpu, target) in CPUS {
        let isa = Isa::load("sop", cpu, target);
        for (n, dwords) in [("dword", 1), ("dwordx2", 2), ("dwordx8", 8)] {
            for nr in [0x100u32, 0xC, 0] {
                let kernel = format!("smem_bload_{n}_nr{nr:x}");
                let bufs = [
                    vec![0u8; 64],
                    bytes32(&data),
                    vec![0u8; 64],
                    vec![0u8; 64],
                    vec![0xEEu8; 32 * 64],
                ];
                let out = isa
                    .run(&kernel, 64, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                // S_BUFFER_LOAD_DWORD*: dword k at byte 4 + 4k of the buffer; a dword at or
                // past NUM_RECORDS (stride 0: bytes) reads 0. The registers past the load
                // keep 0xdeadbeef.
                let want: Vec<u32> = (0..8)
                    .map(|k| {
                        let o = 4 + 4 * k as u32;
                        if k >= dwords {
                            0xDEAD_BEEF
                        } else if o >= nr {
                            0
                        } else {
                            data[o as usize / 4]
                        }
                    })
                    .collect();
                let got = u32s(&out[4]);
                for lane in 0..64 {
                    assert_eq!(
                        got[lane * 8..lane * 8 + 8],
                        want,
                        "{cpu} {kernel} lane {lane}"
                    );
                }
            }
        }
        for (n, dwords) in [("dword", 1), ("dwordx2", 2)] {
            for nr in [0x100u32, 0xC] {
                let kernel = format!("smem_bstore_{n}_nr{nr:x}");
                let mut bufs: Vec<Vec<u8>> = (0..5).map(|_| vec![0u8; 64]).collect();
                bufs.push(bytes32(&pattern(16, 0x5000_0000)));
                let out = isa
                    .run(&kernel, 64, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                // S_BUFFER_STORE_DWORD*: dword k to byte 8 + 4k, dropped at or past
                // NUM_RECORDS.
                let mut want = pattern(16, 0x5000_0000);
                for k in 0..dwords {
                    let o = 8 + 4 * k as u32;
                    if o < nr {
                        want[o as usize / 4] = 0x1111_1111 * (k as u32 + 1);
                    }
                }
                assert_eq!(u32s(&out[5]), want, "{cpu} {kernel}");
            }
        }
    }
}

/// The memory value after an SMEM atomic `op` (Vega ISA SMEM opcode table) on memory value
/// `m` with data `s` and compare value `c`, 32 or (`wide`) 64 bits.
fn atomic(op: &str, m: u64, s: u64, c: u64, wide: bool) -> u64 {
    let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
    let (m, s, c) = (m & mask, s & mask, c & mask);
    let sx = |x: u64| {
        if wide {
            x as i64
        } else {
            i64::from(x as u32 as i32)
        }
    };
    let r = match op {
        "swap" => s,
        // CMPSWAP: DATA[0] is the source, DATA[1] the compare value.
        "cmpswap" => {
            if m == c {
                s
            } else {
                m
            }
        }
        "add" => m.wrapping_add(s),
        "sub" => m.wrapping_sub(s),
        "smin" => sx(m).min(sx(s)) as u64,
        "smax" => sx(m).max(sx(s)) as u64,
        "umin" => m.min(s),
        "umax" => m.max(s),
        "and" => m & s,
        "or" => m | s,
        "xor" => m ^ s,
        // INC: m >= s ? 0 : m + 1; DEC: m == 0 || m > s ? s : m - 1.
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
        _ => panic!("{op}"),
    };
    r & mask
}

#[test]
fn scalar_buffer_atomics_match_the_isa() {
    const M: [u64; 6] = [
        0,
        1,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF_FFFF_FFFF,
        0x1_0000_0005,
    ];
    let mut checked = 0;
    for (cpu, target) in CPUS {
        let isa = Isa::load("sop", cpu, target);
        for kernel in isa.kernels() {
            let Some(rest) = kernel.strip_prefix("smem_batomic_") else {
                continue;
            };
            let (op, nr) = rest.rsplit_once("_nr").unwrap();
            let nr = u64::from_str_radix(nr, 16).unwrap();
            let wide = op.ends_with("_x2");
            let base = op.trim_end_matches("_x2");
            let dw = if wide { 2 } else { 1 };
            let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
            for (i, &m) in M.iter().enumerate() {
                let s = M[(i + 2) % 6];
                let c = if i % 2 == 0 { m } else { M[(i + 1) % 6] };
                let mut sdata = [0u32; 4];
                for k in 0..dw {
                    sdata[k] = (s >> (32 * k)) as u32;
                    sdata[dw + k] = (c >> (32 * k)) as u32;
                }
                let mut mem = vec![0x5A5A_5A5Au32; 8];
                mem[2] = m as u32;
                mem[3] = (m >> 32) as u32;
                let bufs = [
                    bytes32(&mem),
                    bytes32(&sdata),
                    vec![0u8; 64],
                    vec![0u8; 64],
                    vec![0u8; 64 * 16],
                ];
                let out = isa
                    .run(&kernel, 64, &bufs)
                    .unwrap_or_else(|e| panic!("{cpu} {kernel}: {e}"));
                // Out of range (the data's last byte past NUM_RECORDS): no access, and the
                // returned value (glc) is 0.
                let in_range = 8 + 4 * dw as u64 <= nr;
                let want = if in_range {
                    atomic(base, m, s, c, wide)
                } else {
                    m & mask
                };
                let after = u32s(&out[0]);
                let got = u64::from(after[2]) | if wide { u64::from(after[3]) << 32 } else { 0 };
                assert_eq!(got, want, "{cpu} {kernel} m {m:#x} s {s:#x} c {c:#x}");
                if !wide {
                    assert_eq!(after[3], (m >> 32) as u32, "{cpu} {kernel}: the next dword");
                }
                let old = if in_range { m & mask } else { 0 };
                let mut regs = sdata;
                for (k, r) in regs.iter_mut().take(dw).enumerate() {
                    *r = (old >> (32 * k)) as u32;
                }
                let got = u32s(&out[4]);
                for lane in 0..64 {
                    assert_eq!(
                        got[lane * 4..lane * 4 + 4],
                        regs,
                        "{cpu} {kernel} lane {lane} m {m:#x} s {s:#x} c {c:#x}: SDATA"
                    );
                }
                checked += 1;
            }
        }
    }
    // 26 atomics x 2 NUM_RECORDS x 6 values x 5 targets.
    assert_eq!(checked, 26 * 2 * 6 * 5);
}
