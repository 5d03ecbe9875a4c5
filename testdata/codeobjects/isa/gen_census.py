#!/usr/bin/env python3
"""Writes and assembles the `vop3x` family of gfx9 instruction test kernels (vop3x-CPU.s and
.hsaco) with gen.py's conventions (see its docstring): the instructions the opcode census of
issue 39 found missing (gfx9's VOP3-only integer, 16-bit, pack and byte operations, and the
VOP1 `v_swap_b32`, `v_sat_pk_u8_i16`) and the integer clamp of `v_add/sub/subrev_u32_e64`.
gfx9/tests/gfx9_census_ops.rs runs them against host references.

Kernel `<name>`: lane i reads p1[i] into v2, p2[i] into v3, p3[i] into v4, sets v5 = v4 (the
destination's other half for the op_sel:[...,1] forms), runs the instruction into v5 and
stores v5 to p4[i]; `v_swap_b32` also stores the swapped source register (v6, which held
p2[i]) to p5[i]. FLOAT_DENORM_MODE_16_64 3 (f16 denormals kept, as clang sets it), IEEE mode
on (the default). The names: `<mnemonic>` plain, `_clamp` with clamp, `_opsel<bits>` with
op_sel (one digit per operand, destination last), `_neg` with -src0 and |src1|.

Usage: python3 gen_census.py   (writes next to this file)
"""
from gen import Asm, build, load_regs, rng, store_regs

THREE = ["v_mad_u16", "v_mad_i16", "v_mad_u32_u16", "v_mad_i32_i16", "v_min3_f16",
         "v_min3_i16", "v_min3_u16", "v_max3_f16", "v_max3_i16", "v_max3_u16", "v_med3_f16",
         "v_med3_i16", "v_med3_u16", "v_sad_u8", "v_sad_hi_u8", "v_sad_u16", "v_msad_u8",
         "v_lerp_u8"]
TWO = ["v_add_i32", "v_sub_i32", "v_add_i16", "v_sub_i16", "v_pack_b32_f16", "v_bfm_b32"]
CLAMP = ["v_add_i32", "v_sub_i32", "v_add_i16", "v_sub_i16", "v_mad_u16", "v_mad_i16",
         "v_mad_u32_u16", "v_mad_i32_i16", "v_sad_u8", "v_sad_hi_u8", "v_sad_u16",
         "v_msad_u8"]


def vop3x(cpu):
    a = Asm(cpu)
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "global_load_dword v4, v20, s[10:11]", "s_waitcnt vmcnt(0)", "v_mov_b32 v5, v4"]
    tail = ["global_store_dword v20, v5, s[12:13]"]
    extra = "\t\t.amdhsa_float_denorm_mode_16_64 3"

    def k(name, ins):
        a.kernel(name, head + [ins] + tail, extra=extra)
    for op in TWO:
        k(op, "%s v5, v2, v3" % op)
    for op in THREE:
        k(op, "%s v5, v2, v3, v4" % op)
    for op in CLAMP:
        srcs = "v2, v3, v4" if op in THREE else "v2, v3"
        k(op + "_clamp", "%s v5, %s clamp" % (op, srcs))
    # op_sel: the high halves of the sources, the result into the high half.
    k("v_add_i16_opsel110", "v_add_i16 v5, v2, v3 op_sel:[1,1,0]")
    k("v_add_i16_opsel001", "v_add_i16 v5, v2, v3 op_sel:[0,0,1]")
    k("v_pack_b32_f16_opsel110", "v_pack_b32_f16 v5, v2, v3 op_sel:[1,1,0]")
    k("v_pack_b32_f16_neg", "v_pack_b32_f16 v5, -v2, |v3|")
    k("v_mad_u16_opsel1101", "v_mad_u16 v5, v2, v3, v4 op_sel:[1,1,0,1]")
    k("v_med3_f16_opsel0011", "v_med3_f16 v5, v2, v3, v4 op_sel:[0,0,1,1]")
    k("v_max3_f16_neg", "v_max3_f16 v5, -v2, |v3|, v4")
    # The unsigned add/sub of gfx9 saturate with clamp (LLVM's uadd.sat/usub.sat).
    for op in ("v_add_u32", "v_sub_u32", "v_subrev_u32"):
        k(op + "_e64_clamp", "%s_e64 v5, v2, v3 clamp" % op)
    # The carry forms, the 24-bit mads and v_sad_u32 saturate too with clamp (silently
    # ignored before issue 39).
    for op in ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32"):
        k(op + "_e64_clamp", "%s_e64 v5, s[20:21], v2, v3 clamp" % op)
    for op in ("v_mad_u32_u24", "v_mad_i32_i24", "v_sad_u32"):
        k(op + "_clamp", "%s v5, v2, v3, v4 clamp" % op)
    # f64 results with clamp and an output modifier (ignored before issue 39): p1/p2 hold
    # f64 pairs, read with global_load_dwordx2.
    for name, ins in (("v_add_f64_clamp", "v_add_f64 v[8:9], v[6:7], v[10:11] clamp"),
                      ("v_mul_f64_omod2", "v_mul_f64 v[8:9], v[6:7], v[10:11] mul:2"),
                      ("v_fma_f64_omod4_clamp",
                       "v_fma_f64 v[8:9], v[6:7], v[10:11], v[6:7] clamp mul:4"),
                      ("v_add_f64_div2", "v_add_f64 v[8:9], v[6:7], v[10:11] div:2")):
        a.kernel(name, ["global_load_dwordx2 v[6:7], v21, s[6:7]",
                        "global_load_dwordx2 v[10:11], v21, s[8:9]", "s_waitcnt vmcnt(0)", ins,
                        "global_store_dwordx2 v21, v[8:9], s[12:13]"], extra=extra)
    k("v_sat_pk_u8_i16", "v_sat_pk_u8_i16 v5, v2")
    k("v_sat_pk_u8_i16_e64", "v_sat_pk_u8_i16_e64 v5, v2")
    a.kernel("v_swap_b32", head + ["v_mov_b32 v6, v3", "v_swap_b32 v5, v6"] + tail
             + ["global_store_dword v20, v6, s[14:15]"], extra=extra)
    # Scalar: p1's first dword(s) through the instruction; p4[i] = D's low dword, p5[i] =
    # its high dword (or SCC for the 32-bit quad mask), p6[i] = SCC of the 64-bit one.
    def scalar(name, load, ins, outs):
        body = [load, "s_waitcnt lgkmcnt(0)", ins, "s_cselect_b32 s24, 1, 0"]
        for reg, ptr in outs:
            body += ["v_mov_b32 v5, %s" % reg, "global_store_dword v20, v5, %s" % ptr]
        a.kernel(name, body, extra=extra)
    scalar("s_quadmask_b32", "s_load_dword s20, s[6:7], 0x0", "s_quadmask_b32 s22, s20",
           [("s22", "s[12:13]"), ("s24", "s[14:15]")])
    scalar("s_quadmask_b64", "s_load_dwordx2 s[20:21], s[6:7], 0x0",
           "s_quadmask_b64 s[22:23], s[20:21]",
           [("s22", "s[12:13]"), ("s23", "s[14:15]"), ("s24", "s[16:17]")])
    # SCC set before, kept by s_bitreplicate (p6 = 1).
    scalar("s_bitreplicate_b64_b32", "s_load_dword s20, s[6:7], 0x0",
           "s_cmp_eq_u32 0, 0\n\ts_bitreplicate_b64_b32 s[22:23], s20",
           [("s22", "s[12:13]"), ("s23", "s[14:15]"), ("s24", "s[16:17]")])
    # The program-control instructions with nothing to do: the wave goes on (p4[i] = 7).
    a.kernel("sopp_noops", ["s_icache_inv", "s_wakeup", "s_incperflevel 1",
                            "s_decperflevel 1", "s_ttracedata", "v_mov_b32 v5, 7",
                            "global_store_dword v20, v5, s[12:13]"], extra=extra)
    return a



# --- vop3y: the VALU instructions the census closed last (issue 39) -----------------------
# Kernel `<name>` (gen_census's vop3x conventions: v2, v3, v4 = p1[i], p2[i], p3[i]; v5 = v4;
# the instruction writes v5; p4[i] = v5), f32, f16 and f64 denormals kept:
# - VOP1 `v_cvt_norm_i16_f16`, `v_cvt_norm_u16_f16`, `v_exp_legacy_f32`,
#   `v_log_legacy_f32`; `v_cvt_norm_i16_f16_sdwa` (src0_sel:WORD_1, dst_sel:WORD_1 with the
#   low half preserved); `v_exp_legacy_f32_neg_clamp` (-v2 clamp), `v_log_legacy_f32_abs_mul2`
#   (|v2| mul:2);
# - VOP3 `v_cube{id,sc,tc,ma}_f32`, `v_cvt_pk_u8_f32`, the legacy mads and div_fixup (v2, v3,
#   v4); `v_cubesc_f32_neg` (-v2, |v3|, v4); `v_mad_legacy_u16_clamp`, `v_mad_legacy_i16_clamp`;
# - VOP3 two sources (v2, v3): `v_cvt_pkaccum_u8_f32` (into v5, which held p3[i]), the
#   pknorm and saturating packs; `v_cvt_pknorm_i16_f16_opsel110`, `v_cvt_pknorm_u16_f16_neg`
#   (-v2, |v3|);
# - references: `v_mad_f16`, `v_fma_f16`, `v_div_fixup_f16` (the legacy ones must equal them);
# - `qsad_<op>[_clamp]`: v[2:3] = p1 as qwords, v4 = p2[i], the accumulator v[8:9] (p3 as
#   qwords; v_mqsad_u32_u8: v[8:11], p3 as 16-byte rows), the result (v[12:13] / v[12:15]) to
#   p4 in the same layout;
# - `v_clrexcp`: both encodings, then p4[i] = 7.
LEGACY = ("v_mad_legacy_f16", "v_mad_legacy_u16", "v_mad_legacy_i16", "v_fma_legacy_f16",
          "v_div_fixup_legacy_f16")
CUBE = ("v_cubeid_f32", "v_cubesc_f32", "v_cubetc_f32", "v_cubema_f32")
PACKS = ("v_cvt_pkaccum_u8_f32", "v_cvt_pknorm_i16_f32", "v_cvt_pknorm_u16_f32",
         "v_cvt_pknorm_i16_f16", "v_cvt_pknorm_u16_f16", "v_cvt_pk_i16_i32", "v_cvt_pk_u16_u32")
KEEP = "\t\t.amdhsa_float_denorm_mode_16_64 3\n\t\t.amdhsa_float_denorm_mode_32 3"


def vop3y(cpu):
    a = Asm(cpu)
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "global_load_dword v4, v20, s[10:11]", "s_waitcnt vmcnt(0)", "v_mov_b32 v5, v4"]
    tail = ["global_store_dword v20, v5, s[12:13]"]

    def k(name, ins):
        a.kernel(name, head + [ins] + tail, extra=KEEP)
    for op in ("v_cvt_norm_i16_f16", "v_cvt_norm_u16_f16", "v_exp_legacy_f32",
               "v_log_legacy_f32"):
        k(op, "%s v5, v2" % op)
    k("v_cvt_norm_i16_f16_sdwa", "v_cvt_norm_i16_f16_sdwa v5, v2 dst_sel:WORD_1 "
      "dst_unused:UNUSED_PRESERVE src0_sel:WORD_1")
    k("v_exp_legacy_f32_neg_clamp", "v_exp_legacy_f32_e64 v5, -v2 clamp")
    k("v_log_legacy_f32_abs_mul2", "v_log_legacy_f32_e64 v5, |v2| mul:2")
    for op in CUBE + ("v_cvt_pk_u8_f32",) + LEGACY + ("v_mad_f16", "v_fma_f16",
                                                       "v_div_fixup_f16"):
        k(op, "%s v5, v2, v3, v4" % op)
    k("v_cubesc_f32_neg", "v_cubesc_f32 v5, -v2, |v3|, v4")
    k("v_mad_legacy_u16_clamp", "v_mad_legacy_u16 v5, v2, v3, v4 clamp")
    k("v_mad_legacy_i16_clamp", "v_mad_legacy_i16 v5, v2, v3, v4 clamp")
    for op in PACKS:
        k(op, "%s v5, v2, v3" % op)
    k("v_cvt_pknorm_i16_f16_opsel110", "v_cvt_pknorm_i16_f16 v5, v2, v3 op_sel:[1,1,0]")
    k("v_cvt_pknorm_u16_f16_neg", "v_cvt_pknorm_u16_f16 v5, -v2, |v3|")
    for op, clamp in (("v_qsad_pk_u16_u8", ""), ("v_qsad_pk_u16_u8", " clamp"),
                      ("v_mqsad_pk_u16_u8", ""), ("v_mqsad_u32_u8", ""),
                      ("v_mqsad_u32_u8", " clamp")):
        wide = op == "v_mqsad_u32_u8"
        body = ["global_load_dwordx2 v[2:3], v21, s[6:7]", "global_load_dword v4, v20, s[8:9]",
                "v_lshlrev_b32 v22, 4, v1"]
        if wide:
            body += ["global_load_dwordx4 v[8:11], v22, s[10:11]", "s_waitcnt vmcnt(0)",
                     "%s v[12:15], v[2:3], v4, v[8:11]%s" % (op, clamp),
                     "global_store_dwordx4 v22, v[12:15], s[12:13]"]
        else:
            body += ["global_load_dwordx2 v[8:9], v21, s[10:11]", "s_waitcnt vmcnt(0)",
                     "%s v[12:13], v[2:3], v4, v[8:9]%s" % (op, clamp),
                     "global_store_dwordx2 v21, v[12:13], s[12:13]"]
        a.kernel("qsad_%s%s" % (op, clamp.replace(" ", "_")), body, extra=KEEP)
    a.kernel("v_clrexcp", ["v_clrexcp", "v_clrexcp_e64", "v_mov_b32 v5, 7"] + tail, extra=KEEP)
    return a


# --- fp8 (gfx942): the FP8/BF8 conversions --------------------------------------------------
# Kernel `<name>` (vop3y's conventions):
# - `v_cvt_f32_<f>`: p4[i] = the f32 of byte 0 of p1[i]; `_b<n>`: SDWA src0_sel:BYTE_n;
# - `v_cvt_pk_f32_<f>`: v[6:7] = the two f32 of p1[i]'s low word (`_w1`: SDWA WORD_1), to
#   p4 as qwords;
# - `v_cvt_pk_<f>_f32`: the pair (v2, v3) into v5's low word (p3[i] held), `_hi` op_sel:[0,0,1]
#   its high word, `_neg` (-v2, |v3|);
# - `v_cvt_sr_<f>_f32_b<n>`: v2 rounded with the random dword v3 into byte n of v5 (op_sel
#   [3:2] = n).
def fp8(cpu):
    if cpu != "gfx942":
        return None
    a = Asm(cpu)
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "global_load_dword v4, v20, s[10:11]", "s_waitcnt vmcnt(0)", "v_mov_b32 v5, v4"]
    tail = ["global_store_dword v20, v5, s[12:13]"]
    tail64 = ["global_store_dwordx2 v21, v[6:7], s[12:13]"]
    for f in ("fp8", "bf8"):
        a.kernel("v_cvt_f32_%s" % f, head + ["v_cvt_f32_%s v5, v2" % f] + tail, extra=KEEP)
        for b in (1, 2, 3):
            a.kernel("v_cvt_f32_%s_b%d" % (f, b),
                     head + ["v_cvt_f32_%s_sdwa v5, v2 src0_sel:BYTE_%d" % (f, b)] + tail,
                     extra=KEEP)
        a.kernel("v_cvt_pk_f32_%s" % f, head + ["v_cvt_pk_f32_%s v[6:7], v2" % f] + tail64,
                 extra=KEEP)
        a.kernel("v_cvt_pk_f32_%s_w1" % f,
                 head + ["v_cvt_pk_f32_%s_sdwa v[6:7], v2 src0_sel:WORD_1" % f] + tail64,
                 extra=KEEP)
        a.kernel("v_cvt_pk_%s_f32" % f, head + ["v_cvt_pk_%s_f32 v5, v2, v3" % f] + tail,
                 extra=KEEP)
        a.kernel("v_cvt_pk_%s_f32_hi" % f,
                 head + ["v_cvt_pk_%s_f32 v5, v2, v3 op_sel:[0,0,1]" % f] + tail, extra=KEEP)
        a.kernel("v_cvt_pk_%s_f32_neg" % f,
                 head + ["v_cvt_pk_%s_f32 v5, -v2, |v3|" % f] + tail, extra=KEEP)
        for b in range(4):
            sel = "" if b == 0 else " op_sel:[0,0,%d,%d]" % (b & 1, b >> 1)
            a.kernel("v_cvt_sr_%s_f32_b%d" % (f, b),
                     head + ["v_cvt_sr_%s_f32 v5, v2, v3%s" % (f, sel)] + tail, extra=KEEP)
    return a


# --- smfmac (gfx942): the sparse MFMAs -------------------------------------------------------
# Kernel `<op>__<abid>`: lane l loads 2 dwords of A (compressed) from p1 (8 bytes a lane),
# 4 of B from p2 (16 bytes), the compression index from p3 (a dword), C/D (4 or 16 dwords)
# from p4 (64 bytes a lane) into a[0:3]/a[0:15], runs `<op> a[..], v[2:3], v[4:7], v8
# abid:<abid>` and stores D to p5 in p4's layout.
SMFMAC = [("v_smfmac_f32_16x16x32_f16", 4), ("v_smfmac_f32_32x32x16_f16", 16),
          ("v_smfmac_f32_16x16x32_bf16", 4), ("v_smfmac_f32_32x32x16_bf16", 16),
          ("v_smfmac_i32_16x16x64_i8", 4), ("v_smfmac_i32_32x32x32_i8", 16)] + [
    ("v_smfmac_f32_%s_%s_%s" % (s, a, b), w) for s, w in (("16x16x64", 4), ("32x32x32", 16))
    for a in ("bf8", "fp8") for b in ("bf8", "fp8")]


def smfmac(cpu):
    if cpu != "gfx942":
        return None
    a = Asm(cpu)
    for op, wd in SMFMAC:
        sets = 4 if ("f16" in op or "bf16" in op) else 2
        for abid in range(sets):
            body = ["v_lshlrev_b32 v22, 4, v1", "v_lshlrev_b32 v23, 6, v1",
                    "global_load_dwordx2 v[2:3], v21, s[6:7]",
                    "global_load_dwordx4 v[4:7], v22, s[8:9]",
                    "global_load_dword v8, v20, s[10:11]"]
            body += load_regs(64, wd, "v23", "s[12:13]")
            body.append("s_waitcnt vmcnt(0)")
            body += ["v_accvgpr_write_b32 a%d, v%d" % (k, 64 + k) for k in range(wd)]
            mods = " abid:%d" % abid if abid else ""
            body.append("%s %s, v[2:3], v[4:7], v8%s" % (op, rng("a", 0, wd), mods))
            body += ["s_nop 7", "s_nop 7"]
            body += ["v_accvgpr_read_b32 v%d, a%d" % (100 + k, k) for k in range(wd)]
            body += store_regs(100, wd, "v23", "s[14:15]")
            a.kernel("%s__%d" % (op, abid), body, vgprs=136, agprs=16)
    return a


# --- dsx: the DS instructions the census closed (issue 39) ---------------------------------
# One wave per work-group unless said; LDS 4 KiB.
# - `ds_b96`: lane l writes p1's 12 bytes of its item at LDS 16 + 12 l (ds_write_b96), runs
#   ds_nop, reads lane 63 − l's back (ds_read_b96) into p4 (12 bytes an item).
# - `ds_append_consume`: M0 = 0x100; lane 0 sets the counters at 0x100 and 0x104 to p2[0];
#   with EXEC = p1's qword, ds_append into v5 (else 0xdead) and ds_consume (offset:4) into v6
#   (else 0xbeef); p4 = v5, p5 = v6, p6/p7 = the counters afterwards.
# - `ds_addtid`: M0 = 0x40: ds_write_addtid_b32 of p1 at offset 8; p4 = the dword lane l ^ 1
#   wrote (ds_read_b32 at 0x48 + 4 (l ^ 1)), p5 = ds_read_addtid_b32 offset:8.
# - `ds_add_f64`/`ds_add_rtn_f64` (gfx90a+): LDS[8 l] = p2's qword, += p1's; p4 = the new
#   value read back, p5 = the returned one (0 without return). `ds_pk_add_<f16|bf16>[_rtn]`
#   (gfx942): the same on dwords.
# - `ds_add_src2_f32` (gfx900..gfx908): LDS[4 l] = p1, LDS[256 + 4 l] = p2, then
#   ds_add_src2_f32 at 4 l offset:64 (B = A + 256); p4 = LDS[4 l].
# - `gws`: one wave through every GWS instruction (semaphore 3 of M0[21:16] = 0 and offset
#   3: init 1, p, v, br 2, p ×3; barrier 5 of one wave); p4 = 7 when it got through.
# - `gws_deadlock`: ds_gws_sema_p on a semaphore of value 0: never satisfied.
# - `gws_barrier4` (work-groups of 256, 4 waves): wave 0 inits barrier 0 for 4 waves; each
#   wave sets its flag in LDS, waits at ds_gws_barrier, then p4 = the sum of the 4 flags.
def dsx(cpu):
    a = Asm(cpu)
    lds = "\t\t.amdhsa_group_segment_fixed_size 4096"
    a.kernel("ds_b96", ["v_mul_u32_u24 v22, 12, v1", "global_load_dwordx3 v[2:4], v22, s[6:7]",
                        "v_mul_u32_u24 v23, 12, v0", "s_waitcnt vmcnt(0)",
                        "ds_write_b96 v23, v[2:4] offset:16", "s_waitcnt lgkmcnt(0)", "ds_nop",
                        "v_sub_u32 v24, 63, v0", "v_mul_u32_u24 v24, 12, v24",
                        "ds_read_b96 v[6:8], v24 offset:16", "s_waitcnt lgkmcnt(0)",
                        "global_store_dwordx3 v22, v[6:8], s[12:13]"], extra=lds)
    a.kernel("ds_append_consume", [
        "s_mov_b32 m0, 0x100", "v_mov_b32 v11, 0x100",
        "s_load_dwordx2 s[20:21], s[6:7], 0x0", "s_load_dword s22, s[8:9], 0x0",
        "s_waitcnt lgkmcnt(0)", "v_mov_b32 v12, s22", "s_mov_b64 s[24:25], exec",
        "s_mov_b64 exec, 1", "ds_write_b32 v11, v12", "ds_write_b32 v11, v12 offset:4",
        "s_mov_b64 exec, s[24:25]", "s_waitcnt lgkmcnt(0)",
        "v_mov_b32 v5, 0xdead", "v_mov_b32 v6, 0xbeef",
        "s_and_b64 exec, exec, s[20:21]", "ds_append v5", "ds_consume v6 offset:4",
        "s_mov_b64 exec, s[24:25]", "s_waitcnt lgkmcnt(0)",
        "ds_read_b32 v7, v11", "ds_read_b32 v8, v11 offset:4", "s_waitcnt lgkmcnt(0)",
        "global_store_dword v20, v5, s[12:13]", "global_store_dword v20, v6, s[14:15]",
        "global_store_dword v20, v7, s[16:17]", "global_store_dword v20, v8, s[18:19]"],
        extra=lds)
    a.kernel("ds_addtid", [
        "global_load_dword v2, v20, s[6:7]", "s_waitcnt vmcnt(0)", "s_mov_b32 m0, 0x40",
        "ds_write_addtid_b32 v2 offset:8", "s_waitcnt lgkmcnt(0)",
        "v_xor_b32 v9, 1, v0", "v_lshlrev_b32 v9, 2, v9", "ds_read_b32 v6, v9 offset:72",
        "ds_read_addtid_b32 v7 offset:8", "s_waitcnt lgkmcnt(0)",
        "global_store_dword v20, v6, s[12:13]", "global_store_dword v20, v7, s[14:15]"],
        extra=lds)
    adds = []
    if cpu in ("gfx90a", "gfx942"):
        adds += [("ds_add_f64", 2, False), ("ds_add_rtn_f64", 2, True)]
    if cpu == "gfx942":
        adds += [("ds_pk_add_f16", 1, False), ("ds_pk_add_rtn_f16", 1, True),
                 ("ds_pk_add_bf16", 1, False), ("ds_pk_add_rtn_bf16", 1, True)]
    for op, n, rtn in adds:
        off, sh = ("v21", 3) if n == 2 else ("v20", 2)
        ld = "global_load_dwordx2" if n == 2 else "global_load_dword"
        st = "global_store_dwordx2" if n == 2 else "global_store_dword"
        rd = "ds_read_b64" if n == 2 else "ds_read_b32"
        wr = "ds_write_b64" if n == 2 else "ds_write_b32"
        data, got, old, new = (rng("v", 2, n), rng("v", 4, n), rng("v", 10, n),
                               rng("v", 12, n))
        ins = "%s %s, v9, %s" % (op, old, data) if rtn else "%s v9, %s" % (op, data)
        a.kernel(op, ["v_lshlrev_b32 v9, %d, v0" % sh, "%s %s, %s, s[6:7]" % (ld, data, off),
                      "%s %s, %s, s[8:9]" % (ld, got, off), "v_mov_b32 v10, 0",
                      "v_mov_b32 v11, 0", "s_waitcnt vmcnt(0)", "%s v9, %s" % (wr, got),
                      "s_waitcnt lgkmcnt(0)", ins, "s_waitcnt lgkmcnt(0)",
                      "%s %s, v9" % (rd, new), "s_waitcnt lgkmcnt(0)",
                      "%s %s, %s, s[12:13]" % (st, off, new),
                      "%s %s, %s, s[14:15]" % (st, off, old)], extra=lds)
    if cpu in ("gfx900", "gfx906", "gfx908"):
        a.kernel("ds_add_src2_f32", [
            "global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "v_lshlrev_b32 v9, 2, v0", "s_waitcnt vmcnt(0)", "ds_write_b32 v9, v2",
            "ds_write_b32 v9, v3 offset:256", "s_waitcnt lgkmcnt(0)",
            "ds_add_src2_f32 v9 offset:64", "s_waitcnt lgkmcnt(0)", "ds_read_b32 v5, v9",
            "s_waitcnt lgkmcnt(0)", "global_store_dword v20, v5, s[12:13]"], extra=lds)
    a.kernel("gws", [
        "s_mov_b32 m0, 0", "v_mov_b32 v10, 1", "ds_gws_init v10 offset:3 gds",
        "ds_gws_sema_p offset:3 gds", "ds_gws_sema_v offset:3 gds", "v_mov_b32 v10, 2",
        "ds_gws_sema_br v10 offset:3 gds", "ds_gws_sema_p offset:3 gds",
        "ds_gws_sema_p offset:3 gds", "ds_gws_sema_p offset:3 gds",
        "ds_gws_sema_release_all offset:3 gds", "v_mov_b32 v10, 0",
        "ds_gws_init v10 offset:5 gds", "ds_gws_barrier v10 offset:5 gds",
        "s_waitcnt lgkmcnt(0)", "v_mov_b32 v5, 7", "global_store_dword v20, v5, s[12:13]"],
        extra=lds)
    a.kernel("gws_deadlock", [
        "s_mov_b32 m0, 0", "v_mov_b32 v10, 0", "ds_gws_init v10 offset:1 gds",
        "ds_gws_sema_p offset:1 gds", "v_mov_b32 v5, 7", "global_store_dword v20, v5, s[12:13]"],
        extra=lds)
    a.kernel("gws_barrier4", [
        "s_mov_b32 m0, 0", "v_readfirstlane_b32 s20, v0", "s_cmp_eq_u32 s20, 0",
        "s_cbranch_scc0 .Lgws_skip_%s" % cpu, "v_mov_b32 v10, 3", "ds_gws_init v10 gds",
        ".Lgws_skip_%s:" % cpu, "s_waitcnt lgkmcnt(0)", "s_barrier",
        "v_lshrrev_b32 v11, 6, v0", "v_lshlrev_b32 v11, 2, v11", "v_mov_b32 v12, 1",
        "ds_write_b32 v11, v12", "s_waitcnt lgkmcnt(0)", "ds_gws_barrier v10 gds",
        "v_mov_b32 v13, 0", "ds_read_b128 v[14:17], v13", "s_waitcnt lgkmcnt(0)",
        "v_add3_u32 v5, v14, v15, v16", "v_add_u32 v5, v5, v17",
        "v_lshlrev_b32 v20, 2, v0", "global_store_dword v20, v5, s[12:13]"], extra=lds)
    return a


def memx(cpu):
    """The floating-point buffer atomics (gfx908: buffer_atomic_add_f32/pk_add_f16 without
    return; gfx90a/gfx942: those with and without return and the f64 add/min/max).

    Kernel `<mnemonic>` (`_rtn` with glc): a V# over p4 (stride 0, NUM_RECORDS 0xffffffff)
    in s[20:23]; lane i loads its data from p1[i] (8-byte elements for f64, else 4), runs
    the atomic on p4[i] through an offen VGPR offset, and stores its data register v10
    (v[10:11]) to p5[i]: the old value with return, the data unchanged without.
    `buffer_atomic_add_f32_idxen`: the no-return f32 add addressed by index (stride 4).
    gfx942's `global_load_lds_<type>[_off]`: see the comment below."""
    if cpu not in ("gfx908", "gfx90a", "gfx942"):
        return None
    a = Asm(cpu)
    ops = [("buffer_atomic_add_f32", 1), ("buffer_atomic_pk_add_f16", 1)]
    if cpu != "gfx908":
        ops += [("buffer_atomic_add_f64", 2), ("buffer_atomic_min_f64", 2),
                ("buffer_atomic_max_f64", 2)]
    vs = ["s_mov_b64 s[20:21], s[12:13]", "s_and_b32 s21, s21, 0xffff",
          "s_mov_b32 s22, 0xffffffff", "s_mov_b32 s23, 0"]
    for op, n in ops:
        off = "v21" if n == 2 else "v20"
        ld = "global_load_dwordx2" if n == 2 else "global_load_dword"
        st = "global_store_dwordx2" if n == 2 else "global_store_dword"
        for rtn in ([False] if cpu == "gfx908" else [False, True]):
            data = rng("v", 10, n)
            a.kernel(op + ("_rtn" if rtn else ""),
                     vs + ["%s %s, %s, s[6:7]" % (ld, data, off), "s_waitcnt vmcnt(0)",
                           "%s %s, %s, s[20:23], 0 offen%s" % (op, data, off,
                                                          " glc" if rtn else ""),
                      "s_waitcnt vmcnt(0)", "%s %s, %s, s[14:15]" % (st, off, data)])
    if cpu == "gfx942":
        # global_load_lds_*: lane i's element at p1 + 4i into LDS at M0 (0) + offset + 4 ×
        # lane, read back with ds_read_b32 and stored to p5[i] (`_off`: offset:4).
        lds = "\t\t.amdhsa_group_segment_fixed_size 4096"
        for t, off in (("ubyte", 0), ("sbyte", 0), ("ushort", 0), ("sshort", 0), ("dword", 0),
                       ("dword", 4)):
            a.kernel("global_load_lds_%s%s" % (t, "_off" if off else ""), [
                "s_mov_b32 m0, 0", "v_mov_b32 v5, 0xdead", "v_lshlrev_b32 v9, 2, v0",
                "ds_write_b32 v9, v5 offset:%d" % off, "s_waitcnt lgkmcnt(0)",
                "global_load_lds_%s v20, s[6:7]%s" % (t, " offset:%d" % off if off else ""),
                "s_waitcnt vmcnt(0)", "ds_read_b32 v5, v9 offset:%d" % off,
                "s_waitcnt lgkmcnt(0)", "global_store_dword v20, v5, s[14:15]"], extra=lds)
    # The same add through idxen: a V# with stride 4, the work-item id as the index.
    a.kernel("buffer_atomic_add_f32_idxen",
             vs + ["s_or_b32 s21, s21, 0x40000", "global_load_dword v10, v20, s[6:7]",
                   "s_waitcnt vmcnt(0)", "buffer_atomic_add_f32 v10, v1, s[20:23], 0 idxen",
                   "s_waitcnt vmcnt(0)", "global_store_dword v20, v10, s[14:15]"])
    return a


if __name__ == "__main__":
    for cpu in ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]:
        build("vop3x", cpu, vop3x(cpu))
        build("vop3y", cpu, vop3y(cpu))
        build("dsx", cpu, dsx(cpu))
        for fam, gen in (("fp8", fp8), ("smfmac", smfmac), ("memx", memx)):
            f = gen(cpu)
            if f is not None:
                build(fam, cpu, f)
