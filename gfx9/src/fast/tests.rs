use super::super::exec::tests::general_step;
use super::*;
use crate::aperture::Apertures;
use crate::{decode, Gfx9Target};
use std::cell::RefCell;
use std::process::{Command, Stdio};

/// Every instruction form the fast path takes, in `llvm-mc` syntax (gfx90a).
const FORMS: &[&str] = &[
    "v_mov_b32 v1, v2",
    "v_mov_b32 v1, s5",
    "v_mov_b32 v1, -7",
    "v_add_u32 v1, v2, v3",
    "v_add_u32 v1, s5, v3",
    "v_add_u32 v1, 0x12345, v2",
    "v_add_u32 v1, 1.0, v2",
    "v_add_u32_e64 v1, s5, 17",
    "v_sub_u32 v1, v2, v3",
    "v_subrev_u32 v1, v2, v3",
    "v_mul_lo_u32 v1, v2, v3",
    "v_mul_hi_u32 v1, v2, s5",
    "v_mul_u32_u24 v1, v2, v3",
    "v_and_b32 v1, v2, v3",
    "v_or_b32 v1, v2, v3",
    "v_xor_b32 v1, v2, v3",
    "v_not_b32 v1, v2",
    "v_lshlrev_b32 v1, v2, v3",
    "v_lshrrev_b32 v1, v2, v3",
    "v_ashrrev_i32 v1, v2, v3",
    "v_min_i32 v1, v2, v3",
    "v_max_i32 v1, v2, v3",
    "v_min_u32 v1, v2, v3",
    "v_max_u32 v1, v2, v3",
    "v_add_f32 v1, v2, v3",
    "v_add_f32 v1, 0.5, v2",
    "v_sub_f32 v1, v2, v3",
    "v_subrev_f32 v1, v2, v3",
    "v_mul_f32 v1, v2, v3",
    "v_mul_f32_e64 v1, v2, s5",
    "v_min_f32 v1, v2, v3",
    "v_max_f32 v1, v2, v3",
    "v_cvt_f32_i32 v1, v2",
    "v_cvt_f32_u32 v1, v2",
    "v_rsq_f32 v1, v2",
    "v_mac_f32 v1, v2, v3",
    "v_mad_f32 v1, v2, v3, v4",
    "v_fma_f32 v1, v2, v3, v4",
    "v_fmac_f32 v1, v2, v3",
    "v_mad_u32_u24 v1, v2, v3, v4",
    "v_add3_u32 v1, v2, v3, v4",
    "v_lshl_add_u32 v1, v2, v3, v4",
    "v_add_lshl_u32 v1, v2, v3, v4",
    "v_lshl_or_b32 v1, v2, v3, v4",
    "v_and_or_b32 v1, v2, v3, v4",
    "v_or3_b32 v1, v2, v3, v4",
    "v_xad_u32 v1, v2, v3, v4",
    "v_bfe_u32 v1, v2, v3, v4",
    "v_bfe_u32 v1, v2, 8, 5",
    "v_bfi_b32 v1, v2, v3, v4",
    "v_alignbit_b32 v1, v2, v3, v4",
    "v_add_co_u32 v1, vcc, v2, v3",
    "v_add_co_u32_e64 v1, s[6:7], v2, v3",
    "v_sub_co_u32 v1, vcc, v2, v3",
    "v_subrev_co_u32 v1, vcc, v2, v3",
    "v_addc_co_u32 v1, vcc, v2, v3, vcc",
    "v_addc_co_u32_e64 v1, s[6:7], v2, v3, s[8:9]",
    "v_subb_co_u32 v1, vcc, v2, v3, vcc",
    "v_cndmask_b32 v1, v2, v3, vcc",
    "v_cndmask_b32_e64 v1, v2, v3, s[6:7]",
    "v_cmp_lt_i32 vcc, v2, v3",
    "v_cmp_eq_u32_e64 s[6:7], v2, v3",
    "v_cmp_ne_u32 vcc, s5, v3",
    "v_cmp_ge_i32 vcc, v2, v3",
    "v_cmp_le_u32 vcc, v2, v3",
    "v_cmp_gt_u32 vcc, v2, v3",
    "v_cmpx_gt_u32 vcc, v2, v3",
    "v_cmpx_eq_i32_e64 s[6:7], v2, v3",
    "v_cmp_lt_f32 vcc, v2, v3",
    "v_cmp_eq_f32 vcc, v2, v3",
    "v_cmp_le_f32 vcc, s5, v3",
    "v_cmp_gt_f32_e64 s[6:7], v2, v3",
    "v_cmp_lg_f32 vcc, v2, v3",
    "v_cmp_ge_f32 vcc, v2, v3",
    "v_cmp_o_f32 vcc, v2, v3",
    "v_cmp_u_f32 vcc, v2, v3",
    "v_cmp_nge_f32 vcc, v2, v3",
    "v_cmp_nlg_f32 vcc, v2, v3",
    "v_cmp_ngt_f32 vcc, v2, v3",
    "v_cmp_nle_f32 vcc, v2, v3",
    "v_cmp_neq_f32 vcc, v2, v3",
    "v_cmp_nlt_f32 vcc, 1.0, v3",
    "v_cmpx_gt_f32 vcc, v2, v3",
    "v_lshlrev_b64 v[4:5], v2, v[6:7]",
    "v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]",
    "v_pk_fma_f32 v[6:7], v[2:3], v[4:5], v[6:7] op_sel_hi:[1,0,1]",
    "v_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[0:1] op_sel:[1,0,1] neg_lo:[1,0,0] neg_hi:[0,1,1]",
    "v_pk_mul_f32 v[0:1], v[2:3], v[4:5] op_sel:[0,1]",
    "v_pk_add_f32 v[4:5], v[2:3], v[4:5] neg_hi:[1,0]",
    "v_lshlrev_b64 v[6:7], 3, v[6:7]",
    "s_mov_b32 s4, s5",
    "s_mov_b32 s4, 0x1234567",
    "s_mov_b64 s[4:5], s[8:9]",
    "s_add_u32 s4, s5, s8",
    "s_add_u32 s4, s5, 0x7fffffff",
    "s_sub_u32 s4, s5, s8",
    "s_add_i32 s4, s5, s8",
    "s_sub_i32 s4, s5, s8",
    "s_addc_u32 s4, s5, s8",
    "s_mul_i32 s4, s5, s8",
    "s_and_b32 s4, s5, s8",
    "s_or_b32 s4, s5, s8",
    "s_xor_b32 s4, s5, s8",
    "s_andn2_b32 s4, s5, s8",
    "s_and_b64 s[4:5], s[8:9], exec",
    "s_or_b64 s[4:5], s[8:9], s[10:11]",
    "s_xor_b64 s[4:5], s[8:9], s[10:11]",
    "s_andn2_b64 exec, exec, s[8:9]",
    "s_lshl_b32 s4, s5, s8",
    "s_lshl_b32 s4, s5, 3",
    "s_lshr_b32 s4, s5, s8",
    "s_lshl_b64 s[4:5], s[8:9], s10",
    "s_cselect_b32 s4, s5, s8",
    "s_cselect_b64 s[4:5], s[8:9], s[10:11]",
    "s_cmp_eq_u32 s4, s5",
    "s_cmp_lg_u32 s4, s5",
    "s_cmp_lg_i32 s4, 0",
    "s_cmp_lt_i32 s4, s5",
    "s_cmp_gt_u32 s4, s5",
    "s_cmp_ge_i32 s4, s5",
    "s_cmp_le_u32 s4, s5",
    "s_nop 0",
    "s_waitcnt vmcnt(0)",
    "s_endpgm",
    "s_branch 5",
    "s_cbranch_scc0 -3",
    "s_cbranch_scc1 4",
    "s_cbranch_vccz 4",
    "s_cbranch_vccnz 4",
    "s_cbranch_execz 4",
    "s_cbranch_execnz 4",
    "s_barrier",
    "ds_read_b32 v1, v2",
    "ds_read_b32 v1, v2 offset:1020",
    "ds_read_b32 v2, v2 offset:4",
    "ds_read_b64 v[4:5], v2 offset:8",
    "ds_read_b64 v[2:3], v2",
    "ds_write_b32 v2, v3",
    "ds_write_b32 v2, v3 offset:2044",
    "ds_write_b64 v2, v[4:5] offset:16",
    "s_load_dword s8, s[4:5], 0x10",
    "s_load_dwordx2 s[8:9], s[4:5], 0x0",
    "s_load_dwordx4 s[8:11], s[4:5], 0x23",
    "s_load_dwordx8 s[8:15], s[4:5], 0x40",
    "s_load_dwordx16 s[16:31], s[4:5], 0xfc0",
    "s_load_dword s8, s[4:5], -0x4",
    "global_load_dword v1, v2, s[4:5] offset:4",
    "global_load_dwordx2 v[2:3], v[6:7], off",
    "global_load_dwordx4 v[0:3], v[6:7], off offset:-16",
    "global_store_dword v2, v3, s[4:5]",
    "global_store_dwordx3 v[6:7], v[2:4], off offset:8",
    "flat_load_dword v1, v[6:7]",
    "flat_load_dwordx2 v[6:7], v[6:7] offset:8",
    "flat_load_dwordx4 v[0:3], v[6:7]",
    "flat_store_dword v[6:7], v3",
    "flat_store_dwordx2 v[6:7], v[2:3] offset:4",
];

/// Bytes of the test memory and of the test LDS.
const MEMORY_BYTES: usize = 4096;
const LDS_BYTES: usize = 2048;
/// Where the test memory starts (scalar pair s[4:5] holds it).
const MEMORY_BASE: u64 = 0x7000_0000;

/// One allocation of [`MEMORY_BYTES`] at [`MEMORY_BASE`]; an access not wholly inside it
/// faults naming its address.
struct TestMemory(RefCell<Vec<u8>>);

impl DeviceMemory for TestMemory {
    fn clock_counter(&self) -> u64 {
        0
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let m = self.0.borrow();
        let o = addr.wrapping_sub(MEMORY_BASE) as usize;
        match m.get(o..o.wrapping_add(buf.len())) {
            Some(s) if o < MEMORY_BYTES => buf.copy_from_slice(s),
            _ => hsa_core::bail!(hsa_core::Status::MemoryFault, "read at {addr:#x}"),
        }
        Ok(())
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        let mut m = self.0.borrow_mut();
        let o = addr.wrapping_sub(MEMORY_BASE) as usize;
        match m.get_mut(o..o.wrapping_add(data.len())) {
            Some(s) if o < MEMORY_BYTES => s.copy_from_slice(data),
            _ => hsa_core::bail!(hsa_core::Status::MemoryFault, "write at {addr:#x}"),
        }
        Ok(())
    }
}

/// Instruction bytes of `forms` from `llvm-mc-19 -show-encoding`, or `None` without it.
fn assemble(forms: &[&str]) -> Option<Vec<Vec<u8>>> {
    let mut child = Command::new("llvm-mc-19")
        .args(["-arch=amdgcn", "-mcpu=gfx90a", "-show-encoding"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child
        .stdin
        .take()?
        .write_all(forms.join("\n").as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(out.status.success(), "llvm-mc-19 failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let codes: Vec<Vec<u8>> = text
        .lines()
        .filter_map(|l| l.split_once("encoding: [")?.1.split_once(']'))
        .map(|(bytes, _)| {
            bytes
                .split(',')
                .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap())
                .collect()
        })
        .collect();
    assert_eq!(codes.len(), forms.len(), "llvm-mc-19 output: {text}");
    Some(codes)
}

/// Values that find the edges: zero, all ones, sign bits, float specials, denormals.
const EDGES: [u32; 12] = [
    0,
    1,
    u32::MAX,
    0x8000_0000,
    0x7FFF_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0001,
    0x0000_0001,
    0x3F80_0000,
    0xBF00_0000,
    0x00FF_FFFF,
];

/// Each fast form against the general interpreter over random and edge-case registers and
/// EXEC masks (all, none, random): the same registers, SCC and next pc.
#[test]
fn fast_path_matches_the_general_interpreter() {
    let Some(codes) = assemble(FORMS) else {
        println!("skipped: llvm-mc-19 not found");
        return;
    };
    let target = Gfx9Target::Gfx90a;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (form, bytes) in FORMS.iter().zip(&codes) {
        let inst = decode(bytes, target).unwrap();
        let pc = 0x1000;
        let fast = classify(&inst, pc);
        assert_ne!(fast, Fast::Slow, "{form}: not on the fast path");
        for round in 0..40 {
            let mut w = Wave::new(pc, true);
            for v in w.vgpr.iter_mut().take(8 * WAVE_SIZE) {
                let r = next();
                *v = if r % 3 == 0 {
                    EDGES[(r >> 8) as usize % EDGES.len()]
                } else {
                    (r >> 16) as u32
                };
            }
            for s in w.sreg.iter_mut() {
                let r = next();
                *s = if r % 4 == 0 {
                    EDGES[(r >> 8) as usize % EDGES.len()]
                } else {
                    (r >> 16) as u32
                };
            }
            w.scc = next() & 1 != 0;
            // What clang sets for HIP (f32 denormals kept, IEEE, DX10 clamp), the same
            // with IEEE off, and modes that flush f32 denormals, where the float forms
            // must decline (or, v_mad/v_mac and the integer conversions, still match).
            const MODES: [u32; 4] = [0x3F0, 0x0F0, 0x2C0, 0x000];
            w.mode = MODES[(round / 4) % MODES.len()];
            let exec = match round % 4 {
                0 => u64::MAX,
                1 => 0,
                _ => next(),
            };
            // Addresses of memory forms: mostly inside the test memory and LDS, some
            // past their ends (faults; LDS zeros and dropped writes), some in a FLAT
            // aperture (the fast path declines).
            let is_mem = ["ds_", "s_load", "global_", "flat_"]
                .iter()
                .any(|p| form.starts_with(p));
            if is_mem {
                let rare = if round % 5 == 4 { 8 } else { 2000 };
                for l in 0..WAVE_SIZE {
                    let r = next();
                    let over = r % rare == 0;
                    let off = (r >> 16) as usize % if over { 64 } else { 1 };
                    let in_mem = ((r >> 24) as usize % (MEMORY_BYTES - 12)) & !3;
                    let (mem_off, lds_off) = if over {
                        (MEMORY_BYTES - 8 + off, LDS_BYTES - 8 + off)
                    } else {
                        (in_mem, (r >> 40) as usize % (LDS_BYTES - 12))
                    };
                    let a = MEMORY_BASE + mem_off as u64;
                    let a = if form.starts_with("flat_") && r % 97 == 1 && round % 5 == 4 {
                        Apertures::AMDKFD_GFX9.shared_base() + 16
                    } else {
                        a
                    };
                    if form.starts_with("ds_") {
                        // Some lanes with a negative base: the offset wraps it into LDS.
                        w.vgpr[2 * WAVE_SIZE + l] = if r % 7 == 3 {
                            0u32.wrapping_sub(((r >> 44) as u32 % 4 + 1) * 4)
                        } else {
                            lds_off as u32
                        };
                    } else if form.contains("s[4:5]") && form.starts_with("global_") {
                        w.vgpr[2 * WAVE_SIZE + l] = mem_off as u32;
                    } else {
                        w.vgpr[6 * WAVE_SIZE + l] = a as u32;
                        w.vgpr[7 * WAVE_SIZE + l] = (a >> 32) as u32;
                    }
                }
                let base = if form.starts_with("s_load") && round % 5 == 4 {
                    MEMORY_BASE + MEMORY_BYTES as u64 - 32
                } else {
                    MEMORY_BASE
                };
                w.set_sreg64(4, base);
            }
            let bytes: Vec<u8> = (0..MEMORY_BYTES).map(|_| next() as u8).collect();
            let lds: Vec<u8> = (0..LDS_BYTES).map(|_| next() as u8).collect();
            let (gm, fm) = (
                TestMemory(RefCell::new(bytes.clone())),
                TestMemory(RefCell::new(bytes)),
            );
            let (mut glds, mut flds) = (lds.clone(), lds);
            w.set_exec(exec);
            let aperture = form.starts_with("flat_")
                && (0..WAVE_SIZE).any(|l| {
                    exec >> l & 1 != 0
                        && w.vgpr[7 * WAVE_SIZE + l]
                            == (Apertures::AMDKFD_GFX9.shared_base() >> 32) as u32
                });
            let mut general = w.clone();
            let flow = general_step(&mut general, &inst, pc, &gm, &mut glds);
            let done = run(&mut w, &fast, &fm, &mut flds);
            let (flow, done) = match (flow, done) {
                (Ok(f), Ok(d)) => (f, d),
                (Err(_), Ok(Done::Slow)) if aperture => continue,
                (Err(g), Ok(Done::Slow)) => {
                    panic!("{form}: general path failed ({g}), fast path declined")
                }
                (Err(g), Err(f)) => {
                    assert_eq!(f.status(), g.status(), "{form}: error status");
                    assert_eq!(f.detail(), g.detail(), "{form}: error (round {round})");
                    assert!(w.vgpr == general.vgpr, "{form}: VGPRs after the fault");
                    assert_eq!(w.sreg, general.sreg, "{form}: SGPRs after the fault");
                    assert!(*fm.0.borrow() == *gm.0.borrow(), "{form}: memory");
                    continue;
                }
                (g, f) => panic!(
                    "{form}: general {:?}, fast {:?} (round {round})",
                    g.err(),
                    f.err()
                ),
            };
            let (want_pc, want_end) = match flow {
                None => (pc + u64::from(inst.size), false),
                Some(Some(t)) => (t, false),
                Some(None) => (pc, true),
            };
            match done {
                Done::Next | Done::Barrier => w.pc = pc + u64::from(inst.size),
                Done::Jump(t) => w.pc = t,
                Done::End => {}
                Done::Slow if mode::f32_denorm(w.mode) != mode::DENORM_KEEP && !is_mem => continue,
                Done::Slow if aperture => continue,
                Done::Slow => panic!("{form}: fast path declined (MODE {:#x})", w.mode),
            }
            assert!(!aperture, "{form}: an aperture address on the fast path");
            assert!(
                *fm.0.borrow() == *gm.0.borrow(),
                "{form}: memory differs (round {round})"
            );
            assert!(flds == glds, "{form}: LDS differs (round {round})");
            assert_eq!(matches!(done, Done::End), want_end, "{form}: end");
            assert_eq!(w.pc, want_pc, "{form}: next pc");
            assert_eq!(w.scc, general.scc, "{form}: SCC (round {round})");
            assert_eq!(w.sreg, general.sreg, "{form}: SGPRs (round {round})");
            assert!(
                w.vgpr == general.vgpr,
                "{form}: VGPRs differ (round {round})"
            );
        }
    }
}
