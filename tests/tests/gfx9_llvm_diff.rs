//! The gfx9 decoder against `llvm-mc-19 --disassemble` (see `hsa_tests::llvm_diff` and
//! `docs/decoder-fuzz.md`).
//!
//! - `regressions_decode_as_llvm_mc_does`: words from the differential runs, one or more per
//!   class of mismatch that was fixed, with llvm-mc-19's text (or its rejection) checked in;
//!   no llvm needed.
//! - `checked_in_texts_are_llvm_mc_19s`: the same table through llvm-mc-19 (skips without it).
//! - `seeded_run_has_no_new_mismatch`: 20,000 seeded cases per target through both; fails on
//!   any ours-only or text-differs class not listed in
//!   `testdata/gfx9_llvm_diff/known_mismatches.txt`, and on any llvm-only word of a compute
//!   encoding whose instruction is not graphics-only (`testdata/gfx9_census/graphics.txt`)
//!   (skips without llvm-mc-19).

use std::collections::BTreeSet;

use hsa_gfx9::{decode, Gfx9Target};
use hsa_tests::llvm_diff::{self, Llvm, Verdict};

const TARGETS: [Gfx9Target; 5] = [
    Gfx9Target::Gfx900,
    Gfx9Target::Gfx906,
    Gfx9Target::Gfx908,
    Gfx9Target::Gfx90a,
    Gfx9Target::Gfx942,
];

fn target(name: &str) -> Gfx9Target {
    TARGETS.into_iter().find(|t| t.name() == name).unwrap()
}

/// (target, w0, w1, llvm-mc-19's text or `None` for a rejection). `w1` is 0 for 4-byte
/// instructions.
const REGRESSIONS: &[(&str, u32, u32, Option<&str>)] = &[
    // Issue 39: v_sat_pk_u8_i16's source is a packed pair (a literal prints its 32 bits);
    // v_swap_b32 has no SDWA, DPP or constant source; v_nop's VOP3 form prints no suffix.
    (
        "gfx900",
        0x7E289EFF,
        0xCAF185AE,
        Some("v_sat_pk_u8_i16_e32 v20, 0xcaf185ae"),
    ),
    ("gfx90a", 0x7E1AA2F9, 0xE5CAC965, None),
    ("gfx90a", 0x7E9AA2FA, 0x60713030, None),
    ("gfx942", 0x7E04A304, 0, Some("v_swap_b32 v2, v4")),
    ("gfx900", 0xD1400000, 0, Some("v_nop")),
    // VOP2 with a constant K: an f16 K prints all 32 bits of its dword, no _e32 suffix; a
    // literal of a packed 16-bit pair prints its 32 bits.
    (
        "gfx900",
        0x4A904196,
        0x67F3E72D,
        Some("v_madak_f16 v72, v150, v32, 0x67f3e72d"),
    ),
    (
        "gfx90a",
        0x7140C0FF,
        0x63424DE4,
        Some("v_dot2c_i32_i16_e32 v160, 0x63424de4, v96"),
    ),
    (
        "gfx942",
        0x794E8AFF,
        0x426B4E85,
        Some("v_pk_fmac_f16_e32 v167, 0x426b4e85, v69"),
    ),
    // A literal holding a value an inline constant could encode prints as that constant
    // (llvm-mc emits such literals for label differences): 32-bit integers -16..=64 and the
    // f32 constants (1/(2π) too) for any 32-bit operand, 0..=64 for a zero-extended 64-bit
    // integer, the f64 constants for a 64-bit float source (the literal is the high half).
    ("gfx900", 0x8000FF01, 0x0000000C, Some("s_add_u32 s0, s1, 12")),
    ("gfx900", 0x020002FF, 0xFFFFFFF0, Some("v_add_f32_e32 v0, -16, v1")),
    ("gfx900", 0x680002FF, 0x3F800000, Some("v_add_u32_e32 v0, 1.0, v1")),
    ("gfx90a", 0x7E0002FF, 0x3E22F983, Some("v_mov_b32_e32 v0, 0.15915494")),
    ("gfx90a", 0xBE8001FF, 0x00000040, Some("s_mov_b64 s[0:1], 64")),
    ("gfx90a", 0xBE8001FF, 0xFFFFFFF0, Some("s_mov_b64 s[0:1], 0xfffffff0")),
    ("gfx90a", 0x7E001EFF, 0xBFF00000, Some("v_cvt_f32_f64_e32 v0, -1.0")),
    ("gfx90a", 0x7E001EFF, 0x0000000C, Some("v_cvt_f32_f64_e32 v0, 0xc")),
    ("gfx90a", 0xBF00FF00, 0x00000040, Some("s_cmp_eq_i32 s0, 64")),
    // SMEM soe with imm: the SGPR in SOFFSET plus the signed 21-bit immediate.
    (
        "gfx90a",
        0xC0024000,
        0x04000004,
        Some("s_load_dword s0, s[0:1], s2 offset:0x4"),
    ),
    (
        "gfx900",
        0xC0024000,
        0x04100004,
        Some("s_load_dword s0, s[0:1], s2 offset:-0xffffc"),
    ),
    (
        "gfx900",
        0xC1224000,
        0x04000000,
        Some("s_buffer_atomic_and s0, s[0:3], s2 offset:0x0"),
    ),
    // v_cvt_off_f32_i4 reads an integer: no abs/neg in DPP (llvm-mc rejects them).
    ("gfx900", 0x7FAE1CFA, 0x2626113B, None),
    // s_memtime/s_memrealtime: base and offset fields ignored, the IMM bit rejected.
    ("gfx900", 0xC0900000, 0, Some("s_memtime s[0:1]")),
    ("gfx900", 0xC093B05F, 0x2D416F65, None),
    // 1/(2pi) as v_mfma_f64_16x16x4f64's 8-dword C prints in double precision.
    (
        "gfx90a",
        0xD3EE6FB0,
        0x33E355FB,
        Some("v_mfma_f64_16x16x4f64 v[176:183], v[251:252], a[170:171], 0.15915494309189532 cbsz:7 abid:13 blgp:1"),
    ),
    // v_ldexp_f16's i16 source: the DPP abs bit is ignored, the neg bit prints as sext.
    (
        "gfx90a",
        0x66F84AFA,
        0x7C60EB07,
        Some("v_ldexp_f16_dpp v124, |v7|, sext(v37) quad_perm:[3,2,2,3] row_mask:0x7 bank_mask:0xc"),
    ),
    (
        "gfx900",
        0x66C76AFA,
        0xDB88AEFB,
        Some("v_ldexp_f16_dpp v99, v251, v181 quad_perm:[2,3,2,2] row_mask:0xd bank_mask:0xb bound_ctrl:1"),
    ),
    // SGPR pairs and quads: the low bits of the field are ignored.
    (
        "gfx90a",
        0xBEF720A7,
        0,
        Some("s_and_saveexec_b64 ttmp[10:11], 39"),
    ),
    (
        "gfx900",
        0xC012B68F,
        0x55B86D8A,
        Some("s_load_dwordx16 s[88:103], s[30:31], -0x79276"),
    ),
    (
        "gfx900",
        0x7E1E1E39,
        0,
        Some("v_cvt_f32_f64_e32 v15, s[56:57]"),
    ),
    (
        "gfx90a",
        0xDD348B3B,
        0x01EDA904,
        Some("global_atomic_add_f32 v4, a169, ttmp[0:1] offset:2875"),
    ),
    // ... but special-register pairs must start at their even code.
    ("gfx900", 0xBEFF0111, 0, None),
    ("gfx900", 0xC00A1B3E, 0x296BBB57, None),
    // SMEM: a negative offset.
    (
        "gfx942",
        0xC0028107,
        0xC4791BE6,
        Some("s_load_dword s4, s[14:15], -0x6e41a"),
    ),
    // 16-bit operands: a literal's low half; an integer operand's inline float as f16 bits.
    (
        "gfx900",
        0x7F5494FF,
        0x1917BA99,
        Some("v_cos_f16_e32 v170, 0xba99"),
    ),
    (
        "gfx900",
        0x7EA274F4,
        0,
        Some("v_cvt_f16_i16_e32 v81, 0x4000"),
    ),
    (
        "gfx900",
        0x58350AF6,
        0,
        Some("v_ashrrev_i16_e32 v26, 0x4400, v133"),
    ),
    // SOPP immediates: decimal up to 64, else hex; none on s_barrier.
    ("gfx900", 0xBF803453, 0, Some("s_nop 0x3453")),
    ("gfx900", 0xBF800040, 0, Some("s_nop 64")),
    ("gfx900", 0xBF8A8765, 0, None),
    // gds is not printed on gfx90a.
    (
        "gfx90a",
        0xD8031B65,
        0x0000C30C,
        Some("ds_sub_u32 v12, v195 offset:7013"),
    ),
    (
        "gfx900",
        0xD8031B65,
        0x0000C30C,
        Some("ds_sub_u32 v12, v195 offset:7013 gds"),
    ),
    // Flat: a 13-bit offset, the saddr field 0; odd tuples decode on gfx90a.
    (
        "gfx90a",
        0xDD1D1422,
        0xE3807CEB,
        Some("flat_atomic_umax a227, v[235:236], a124 offset:5154 glc"),
    ),
    ("gfx900", 0xDC500000, 0x027F0002, None),
    (
        "gfx90a",
        0xDD8B163C,
        0xDC0051E1,
        Some("flat_atomic_add_x2 v[220:221], v[225:226], v[81:82] offset:5692 glc slc"),
    ),
    // DS: the field of an operand the opcode lacks is 0; no GDS lane permutes.
    ("gfx900", 0xD8402CEF, 0x0505A66C, None),
    ("gfx900", 0xD87F54C1, 0x2000C87C, None),
    (
        "gfx900",
        0xD87E54C1,
        0x2000C87C,
        Some("ds_bpermute_b32 v32, v124, v200 offset:21697"),
    ),
    // SMEM loads write neither m0 nor exec; v_cndmask's lane mask has no neg.
    ("gfx900", 0xC0033FE9, 0x57BEE922, None),
    ("gfx900", 0xD1007973, 0xE0B716B3, None),
    // SDWA: an output modifier only on a float result.
    ("gfx90a", 0x7F921AF9, 0x00B3CDA2, None),
    (
        "gfx90a",
        0x7F921AF9,
        0x00B32DA2,
        Some(
            "v_cvt_flr_i32_f32_sdwa v201, -|34| clamp dst_sel:WORD_1 dst_unused:UNUSED_SEXT \
             src0_sel:BYTE_3",
        ),
    ),
    // 1/(2π) as a 64-bit operand (SOP2, MFMA f64's C).
    (
        "gfx900",
        0x86D143F8,
        0,
        Some("s_and_b64 s[80:81], 0.15915494309189532, s[66:67]"),
    ),
    (
        "gfx90a",
        0xD3EF214A,
        0xC3E3596F,
        Some(
            "v_mfma_f64_4x4x4f64 v[74:75], v[111:112], v[172:173], 0.15915494309189532 \
             cbsz:1 abid:4 blgp:6",
        ),
    ),
    (
        "gfx90a",
        0xD3B072E7,
        0x3A7DF012,
        Some(
            "v_pk_fma_f32 v[231:232], s[18:19], 0.15915494, 31 op_sel:[0,1,1] \
             neg_lo:[1,0,0] neg_hi:[0,1,0]",
        ),
    ),
    // VOP3: op_sel bits of an opcode without op_sel are ignored.
    (
        "gfx900",
        0xD1CB5800,
        0x040E0501,
        Some("v_fma_f32 v0, v1, v2, v3"),
    ),
    // MUBUF: no buffer resource at xnack_mask.
    ("gfx900", 0xE108D667, 0x12FA4D10, None),
    // v_readfirstlane_b32 reads a VGPR; v_nop has no operand fields.
    ("gfx900", 0x7E220416, 0, None),
    ("gfx900", 0x7F86013A, 0, None),
    // SDWA: VOP1 has no src1 fields; DPP: integer operands have no neg/abs.
    ("gfx900", 0x7E243EF9, 0x6D04E35E, None),
    (
        "gfx900",
        0x7E243EF9,
        0x0004E35E,
        Some(
            "v_floor_f32_sdwa v18, v94 clamp div:2 dst_sel:BYTE_3 dst_unused:UNUSED_PAD \
             src0_sel:WORD_0",
        ),
    ),
    ("gfx900", 0x6943ACFA, 0x4C134268, None),
    (
        "gfx900",
        0x6943ACFA,
        0x4C034268,
        Some("v_add_u32_dpp v161, v104, v214 row_bcast:15 row_mask:0x4 bank_mask:0xc"),
    ),
    // Issue 39, the census commit's mismatches (seed 7): s_cbranch_join reads an SReg_32,
    // never a constant.
    ("gfx900", 0xBE802E80, 0, None),
    ("gfx90a", 0xBE802E04, 0, Some("s_cbranch_join s4")),
    ("gfx900", 0xBE802EFB, 0, Some("s_cbranch_join src_vccz")),
    // v_cvt_pk_u8_f32: S1/S2 are integers (abs ignored, neg printed as sext), no omod.
    (
        "gfx900",
        0xD1DD0600,
        0xC5E60501,
        Some("v_cvt_pk_u8_f32 v0, v1, sext(v2), sext(v121)"),
    ),
    (
        "gfx942",
        0xD1DD0100,
        0x24060501,
        Some("v_cvt_pk_u8_f32 v0, -|v1|, v2, v1"),
    ),
    ("gfx900", 0xD1DD0000, 0x0C060501, None),
    // The SMEM probes and discards ignore glc; a probe level above 64 prints in hex.
    ("gfx900", 0xC09B0040, 0x10, Some("s_atc_probe 1, s[0:1], 0x10")),
    (
        "gfx90a",
        0xC09F0000,
        0x10,
        Some("s_atc_probe_buffer 0, s[0:3], 0x10"),
    ),
    ("gfx908", 0xC0A30000, 0x10, Some("s_dcache_discard s[0:1], 0x10")),
    ("gfx942", 0xC0A70000, 0x10, Some("s_dcache_discard_x2 s[0:1], 0x10")),
    ("gfx900", 0xC09A1280, 0x10, Some("s_atc_probe 0x4a, s[0:1], 0x10")),
    ("gfx906", 0xC09A1000, 0x10, Some("s_atc_probe 64, s[0:1], 0x10")),
    // MUBUF lds: no acc (tfe) bit; buffer_store_lds_dword prints lds before the cache bits.
    ("gfx90a", 0xE2011000, 0x00800000, None),
    ("gfx942", 0xE2411000, 0x00800000, None),
    ("gfx900", 0xE2F70000, 0x00800000, None),
    (
        "gfx90a",
        0xE2019000,
        0,
        Some("buffer_load_format_x v0, s[0:3], s0 offen scc lds"),
    ),
    (
        "gfx90a",
        0xE2F5C000,
        0,
        Some("buffer_store_lds_dword s[0:3], s0 lds glc scc"),
    ),
    (
        "gfx942",
        0xE2F78000,
        0,
        Some("buffer_store_lds_dword s[0:3], s0 lds nt sc1"),
    ),
    (
        "gfx900",
        0xE2F5C000,
        0,
        Some("buffer_store_lds_dword s[0:3], s0 lds glc"),
    ),
    // gfx90a's float buffer atomics have no scc bit (the integer ones and gfx940's do).
    ("gfx90a", 0xE1348000, 0, None),
    ("gfx90a", 0xE13C8000, 0, None),
    ("gfx90a", 0xE1388000, 0, None),
    (
        "gfx942",
        0xE13C8000,
        0,
        Some("buffer_atomic_add_f64 v[0:1], off, s[0:3], s0 sc1"),
    ),
    (
        "gfx90a",
        0xE1088000,
        0,
        Some("buffer_atomic_add v0, off, s[0:3], s0 scc"),
    ),
    // global_load_lds_*/scratch_load_lds_*: no acc bit.
    ("gfx942", 0xDCA382D3, 0x00980073, None),
    ("gfx942", 0xDE9D40A2, 0x78A52818, None),
    (
        "gfx942",
        0xDCA382D3,
        0x00180073,
        Some("global_load_lds_ushort v115, s[24:25] offset:723 sc0 nt"),
    ),
    (
        "gfx942",
        0xDE9D40A2,
        0x78252818,
        Some("scratch_load_lds_sbyte off, s37 offset:162 sc0 sc1"),
    ),
    // Seeds 1-3: gfx908's float buffer atomics have no returning form (no glc); the FP8/BF8
    // sources of v_cvt_f32_fp8 and kin take no neg/abs (sext in SDWA).
    ("gfx908", 0xE1344000, 0, None),
    ("gfx908", 0xE1384000, 0, None),
    (
        "gfx908",
        0xE1340000,
        0,
        Some("buffer_atomic_add_f32 v0, off, s[0:3], s0"),
    ),
    ("gfx942", 0x7E42A8FA, 0xFF1000C3, None),
    ("gfx942", 0x7E42AAFA, 0xFF2000C3, None),
    (
        "gfx942",
        0x7E42A8FA,
        0xFF0000C3,
        Some("v_cvt_f32_fp8_dpp v33, v195 quad_perm:[0,0,0,0] row_mask:0xf bank_mask:0xf"),
    ),
    ("gfx942", 0xD1940021, 0x20000103, None),
    ("gfx942", 0xD1960121, 0x00000103, None),
    (
        "gfx942",
        0xD1940021,
        0x08000103,
        Some("v_cvt_f32_fp8_e64 v33, v3 mul:2"),
    ),
    (
        "gfx942",
        0x7E42A8F9,
        0x000E0603,
        Some("v_cvt_f32_fp8_sdwa v33, sext(v3) src0_sel:DWORD"),
    ),
    // gfx90a FLAT: the integer atomics take scc, the float ones do not (was: every atomic
    // refused with scc, an ours-rejects-known class).
    (
        "gfx90a",
        0xDF0C8000,
        0x007F0000,
        Some("global_atomic_sub v[0:1], v0, off scc"),
    ),
    (
        "gfx90a",
        0xDF880000,
        0,
        Some("flat_atomic_add_x2 v[0:1], v[0:1] scc"),
    ),
    ("gfx90a", 0xDF348000, 0x007F0000, None),
    ("gfx90a", 0xDF3C0000, 0, None),
    // The integer v_dot*c DPP forms ignore the neg/abs bits (llvm-mc decodes the word; was
    // an ours-rejects-known class); the f16 one keeps them.
    (
        "gfx90a",
        0x71B44AFA,
        0x06EECC2B,
        Some("v_dot2c_i32_i16_dpp v218, v43, v37 quad_perm:[0,3,0,3] row_mask:0x0 bank_mask:0x6 bound_ctrl:1"),
    ),
    (
        "gfx942",
        0x72057EFA,
        0x8390BB7C,
        Some("v_dot4c_i32_i8_dpp v2, v124, v191 quad_perm:[3,2,3,2] row_mask:0x8 bank_mask:0x3"),
    ),
    (
        "gfx908",
        0x74DB80FA,
        0x862CF8F5,
        Some("v_dot8c_i32_i4_dpp v109, v245, v192 quad_perm:[0,2,3,3] row_mask:0x8 bank_mask:0x6 bound_ctrl:1"),
    ),
    (
        "gfx908",
        0x6E551CFA,
        0xFF10E42B,
        Some("v_dot2c_f32_f16_dpp v42, -v43, v142 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf"),
    ),
    // v_smfmac_*: no blgp; the index (src2) is a VGPR, never a constant.
    ("gfx942", 0xD3E20000, 0x24020100, None),
    ("gfx942", 0xD3FD6692, 0x12FFC3CE, None),
    (
        "gfx942",
        0xD3E20800,
        0x04020100,
        Some("v_smfmac_f32_16x16x32_f16 v[0:3], v[0:1], v[0:3], v0 abid:1"),
    ),
    (
        "gfx942",
        0xD3E20000,
        0x0E020100,
        Some("v_smfmac_f32_16x16x32_f16 v[0:3], a[0:1], v[0:3], v128"),
    ),
];

fn bytes(w0: u32, w1: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&w0.to_le_bytes());
    b[4..].copy_from_slice(&w1.to_le_bytes());
    b
}

#[test]
fn regressions_decode_as_llvm_mc_does() {
    // Every differing word is listed (not only the first).
    let mut wrong = Vec::new();
    for &(t, w0, w1, want) in REGRESSIONS {
        let got = decode(&bytes(w0, w1), target(t)).map(|i| i.to_string());
        match (want, got) {
            (Some(w), Ok(g)) if g == w => {}
            (None, Err(_)) => {}
            (w, g) => wrong.push(format!("{t} {w0:08x} {w1:08x}: want {w:?}, got {g:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn checked_in_texts_are_llvm_mc_19s() {
    if !llvm_diff::llvm_mc_available() {
        println!("skipped: {} not found", llvm_diff::LLVM_MC);
        return;
    }
    for &(t, w0, w1, want) in REGRESSIONS {
        let got = llvm_diff::llvm_decode(&[bytes(w0, w1)], target(t)).unwrap();
        match (&got[0], want) {
            (Llvm::Text { text, .. }, Some(w)) => assert_eq!(text, w, "{t} {w0:08x}"),
            (Llvm::Reject | Llvm::Invalid(_), None) => {}
            (g, w) => panic!("{t} {w0:08x} {w1:08x}: checked in {w:?}, llvm-mc says {g:?}"),
        }
    }
}

/// The mismatch classes known today, one `target verdict class` line each.
fn known() -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/gfx9_llvm_diff/known_mismatches.txt"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// (processor, mnemonic) pairs an llvm-only compute word may have: the graphics-only
/// mnemonics (`testdata/gfx9_census/graphics.txt`) on every processor.
fn census_allowed() -> BTreeSet<(String, String)> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/gfx9_census");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let mut out = BTreeSet::new();
    for l in read("graphics.txt").lines().filter(|l| !l.starts_with('#')) {
        if let Some((m, _)) = l.split_once(':') {
            for t in TARGETS {
                out.insert((t.name().to_string(), m.trim().to_string()));
            }
        }
    }
    out
}

#[test]
fn seeded_run_has_no_new_mismatch() {
    if !llvm_diff::llvm_mc_available() {
        println!("skipped: {} not found", llvm_diff::LLVM_MC);
        return;
    }
    let known = known();
    let allowed = census_allowed();
    let mut new = Vec::new();
    let mut seen = BTreeSet::new();
    for t in TARGETS {
        let tally = llvm_diff::run(t, 20_000, 7, 20_000, |_| {}).unwrap();
        assert_eq!(tally.total, 20_000);
        // Every case was answered by llvm-mc (no crash outside the known SDWA words).
        assert_eq!(
            tally.verdicts.get(&Verdict::LlvmCrash),
            None,
            "{}",
            t.name()
        );
        for ((v, class), (_, examples)) in &tally.classes {
            // An llvm-only word of a compute encoding must be a listed gap of the census or
            // graphics-only (issue 39); graphics encodings are not counted.
            if *v == Verdict::LlvmOnly {
                let (enc, m) = class.split_once(' ').unwrap_or((class, ""));
                let graphics_encoding = ["MIMG", "EXP", "VINTRP", "unassigned"]
                    .iter()
                    .any(|g| enc.starts_with(g));
                let base = ["_e32", "_e64", "_sdwa", "_dpp"]
                    .iter()
                    .find_map(|s| m.strip_suffix(s))
                    .unwrap_or(m);
                if !graphics_encoding
                    && !allowed.contains(&(t.name().to_string(), base.to_string()))
                {
                    let e = &examples[0];
                    new.push(format!(
                        "{} llvm-only {class} (not a census gap nor graphics-only)\n    e.g. \
                         {:08x} {:08x}: ours {}, llvm {}",
                        t.name(),
                        e.words[0],
                        e.words[1],
                        e.ours,
                        e.llvm
                    ));
                }
                continue;
            }
            if !v.is_bug() {
                continue;
            }
            let line = format!("{} {} {class}", t.name(), v.name());
            if !known.contains(&line) {
                let e = &examples[0];
                new.push(format!(
                    "{line}\n    e.g. {:08x} {:08x}: ours {}, llvm {}",
                    e.words[0], e.words[1], e.ours, e.llvm
                ));
            }
            seen.insert(line);
        }
    }
    for gone in known.difference(&seen) {
        println!("known mismatch not seen any more (remove it from the list): {gone}");
    }
    assert!(new.is_empty(), "new mismatches:\n{}", new.join("\n"));
}
