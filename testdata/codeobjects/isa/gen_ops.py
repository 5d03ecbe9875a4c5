#!/usr/bin/env python3
"""Writes and assembles the `ops` and `dsops` families of gfx9 instruction test kernels
(ops-CPU.s/.hsaco, dsops-CPU.s/.hsaco) with gen.py's conventions (see its docstring): the
opcodes added for issue 19. `dsops` (the two-address and LDS-to-LDS DS forms, scalar scratch,
GPR index mode) is described above its generator, dsops(), below.

Kernel `<op>[_<variant>]`: lane i reads p1[i] into v2, p2[i] into v3, p3[i] into v4, sets
v5 = v4 (the accumulator of the MAC and dot forms), runs the instruction into v5 and stores
v5 to p4[i]. FLOAT_DENORM_MODE_32 3 (f32 denormals kept) and FLOAT_DENORM_MODE_16_64 3,
so that the forms that flush whatever the mode show it.
- `v_madak_f32_k<K>`, `v_madmk_f32_k<K>` (not gfx942), `v_fmaak_f32_k<K>`,
  `v_fmamk_f32_k<K>` (gfx942): K the f32 bits in hex; `v_madak_f16_k<K>`, `v_madmk_f16_k<K>`:
  K the f16 bits. madak/fmaak: v2 * v3 + K; madmk/fmamk: v2 * K + v3.
- `v_madak_f32_lit`: src0 a literal, the same dword as K (v_madak_f32 v5, K, v3, K).
- `v_mac_f16`, `v_mad_f16` and `v_mad_legacy_f32` (VOP3, v2 * v3 + v4; not gfx942),
  `v_mul_legacy_f32` (VOP2 on gfx900..gfx908, VOP3 on gfx90a/gfx942),
  `v_mul_legacy_f32_e64_omod` (VOP3 with mul:2; gfx900..gfx908 spell it `_e64`).
- gfx908+: `v_pk_fmac_f16`, `v_dot2c_f32_f16`, `v_dot2c_i32_i16`, `v_dot4c_i32_i8`,
  `v_dot8c_i32_i4`, their `_e64_clamp` forms, and `<op>_dpp` (`v_mac_f16`, `v_dot2c_f32_f16`,
  `v_dot4c_i32_i8`) with quad_perm:[1,0,3,2] (src0 from lane i ^ 1).
- gfx900: `v_mad_mix_f32` (f32 sources), `v_mad_mix_f32_h` (the low f16 halves),
  `v_mad_mix_f32_hsel_clamp` (-hi(v2) * |lo(v3)| + hi(v4), clamp), `v_mad_mixlo_f16` (low
  halves, into v5's low half), `v_mad_mixhi_f16_clamp` (lo(v2) * -hi(v3) + lo(v4), clamp,
  into v5's high half).
- `v_cvt_off_f32_i4` (v2's low 4 bits, signed, in sixteenths), `v_cvt_off_f32_i4_e64_omod`
  (the same, mul:4).
- `s_call_b64`: calls a subroutine before it and one after it (each returns with
  s_setpc_b64 and adds 16 or 256 to v5), and adds 1 and 2 when the saved return addresses
  are those of the instructions after the calls: p4[i] = 275.
- `smem_*`: scalar buffer loads, stores and atomics (see smem below).
- `ds_*`: the LDS atomics other than ds_add_u32's group (see lds below).
- `s_getreg_xcc_id` (gfx942): HW_REG_XCC_ID whole to p4[i], bits 3:0 to p5[i];
  `s_getreg_hwreg20` (the other targets): hardware register 20 to p4[i].

Usage: python3 gen_ops.py   (writes next to this file)
"""
from gen import Asm, build

K32 = ["41200000", "00400001", "ff800000", "80000000"]
K16 = ["4900", "0001", "fc00", "8000"]
DOTC = ["v_dot2c_f32_f16", "v_dot2c_i32_i16", "v_dot4c_i32_i8", "v_dot8c_i32_i4"]


def ops(cpu):
    a = Asm(cpu, keep_denormals=True)
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "global_load_dword v4, v20, s[10:11]", "s_waitcnt vmcnt(0)", "v_mov_b32 v5, v4"]
    tail = ["global_store_dword v20, v5, s[12:13]"]

    def k(name, ins):
        a.kernel(name, head + [ins] + tail)
    f32k = ("fmaak", "fmamk") if cpu == "gfx942" else ("madak", "madmk")
    for form in f32k:
        for kk in K32:
            op = "v_%s_f32" % form
            ins = ("%s v5, v2, v3, 0x%s" if "ak" in form else "%s v5, v2, 0x%s, v3") % (op, kk)
            k("%s_k%s" % (op, kk), ins)
    if cpu != "gfx942":
        k("v_madak_f32_lit", "v_madak_f32 v5, 0x3fc00000, v3, 0x3fc00000")
    for form in ("madak", "madmk"):
        for kk in K16:
            op = "v_%s_f16" % form
            ins = ("%s v5, v2, v3, 0x%s" if "ak" in form else "%s v5, v2, 0x%s, v3") % (op, kk)
            k("%s_k%s" % (op, kk), ins)
    k("v_mac_f16", "v_mac_f16 v5, v2, v3")
    k("v_mad_f16", "v_mad_f16 v5, v2, v3, v4")
    if cpu != "gfx942":
        k("v_mad_legacy_f32", "v_mad_legacy_f32 v5, v2, v3, v4")
    k("v_mul_legacy_f32", "v_mul_legacy_f32 v5, v2, v3")
    if cpu == "gfx900":
        # gfx900's unfused mixed-precision multiply-add (gfx906+ has v_fma_mix* there).
        k("v_mad_mix_f32", "v_mad_mix_f32 v5, v2, v3, v4")
        k("v_mad_mix_f32_h", "v_mad_mix_f32 v5, v2, v3, v4 op_sel_hi:[1,1,1]")
        k("v_mad_mix_f32_hsel_clamp",
          "v_mad_mix_f32 v5, -v2, |v3|, v4 op_sel:[1,0,1] op_sel_hi:[1,1,1] clamp")
        k("v_mad_mixlo_f16", "v_mad_mixlo_f16 v5, v2, v3, v4 op_sel_hi:[1,1,1]")
        k("v_mad_mixhi_f16_clamp",
          "v_mad_mixhi_f16 v5, v2, -v3, v4 op_sel:[0,1,0] op_sel_hi:[1,1,1] clamp")
    e64 = "" if cpu in ("gfx90a", "gfx942") else "_e64"
    k("v_mul_legacy_f32_e64_omod", "v_mul_legacy_f32%s v5, v2, v3 mul:2" % e64)
    k("v_cvt_off_f32_i4", "v_cvt_off_f32_i4 v5, v2")
    k("v_cvt_off_f32_i4_e64_omod", "v_cvt_off_f32_i4_e64 v5, v2 mul:4")
    if cpu in ("gfx908", "gfx90a", "gfx942"):
        k("v_pk_fmac_f16", "v_pk_fmac_f16 v5, v2, v3")
        for op in DOTC:
            k(op, "%s v5, v2, v3" % op)
            k(op + "_e64_clamp", "%s_e64 v5, v2, v3 clamp" % op)
        for op in ("v_mac_f16", "v_dot2c_f32_f16", "v_dot4c_i32_i8"):
            k(op + "_dpp", "%s_dpp v5, v2, v3 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf"
              % op)
    # s_call_b64 backward and forward; each subroutine adds to v5 and returns with
    # s_setpc_b64; bit 0/1 of the stored sum say the saved return address was the address
    # after the call (s_getpc_b64 there, minus 4).
    a.kernel("s_call_b64", [
        "v_mov_b32 v5, 0", "s_branch .Lcall_main",
        ".Lcall_back:", "v_add_u32 v5, 16, v5", "s_setpc_b64 s[30:31]",
        ".Lcall_main:", "s_call_b64 s[30:31], .Lcall_back", "s_getpc_b64 s[20:21]",
        "s_sub_u32 s20, s20, 4", "s_subb_u32 s21, s21, 0", "s_cmp_eq_u64 s[20:21], s[30:31]",
        "s_cselect_b32 s22, 1, 0",
        "s_call_b64 s[28:29], .Lcall_fwd", "s_getpc_b64 s[24:25]",
        "s_sub_u32 s24, s24, 4", "s_subb_u32 s25, s25, 0", "s_cmp_eq_u64 s[24:25], s[28:29]",
        "s_cselect_b32 s23, 2, 0", "s_or_b32 s22, s22, s23", "v_add_u32 v5, s22, v5",
        "global_store_dword v20, v5, s[12:13]", "s_endpgm",
        ".Lcall_fwd:", "v_add_u32 v5, 0x100, v5", "s_setpc_b64 s[28:29]"])
    smem(a)
    lds(a)
    if cpu != "gfx942":
        # Register 20 is not XCC_ID before gfx940 (not modelled: an error).
        a.kernel("s_getreg_hwreg20", ["s_getreg_b32 s20, hwreg(20)", "v_mov_b32 v5, s20",
                                      "global_store_dword v20, v5, s[12:13]"])
    if cpu == "gfx942":
        # HW_REG_XCC_ID (gfx940+): p4[i] = the register, p5[i] = its bits 3:0.
        a.kernel("s_getreg_xcc_id", ["s_getreg_b32 s20, hwreg(HW_REG_XCC_ID)",
                                     "s_getreg_b32 s21, hwreg(HW_REG_XCC_ID, 0, 4)",
                                     "v_mov_b32 v5, s20", "global_store_dword v20, v5, s[12:13]",
                                     "v_mov_b32 v5, s21", "global_store_dword v20, v5, s[14:15]"])
    return a


# ds_* kernels (one wave, 512 bytes of LDS): lane i writes p0[i] (a dword, or a qword for
# the 64-bit forms) to LDS at 4i (8i), runs the atomic there with DATA0 p1[i] and DATA1 p2[i],
# and stores the returned value (0xdeadbeef when the form returns nothing) to p4[i] and the
# LDS value afterwards to p5[i].
DS_OPS = ("sub rsub inc dec min_i32 max_i32 min_u32 max_u32 and or xor mskor cmpst cmpst_f32 "
          "min_f32 max_f32 wrxchg wrap add_f32").split()


def ds_names():
    names = []
    for wide in (False, True):
        for op in DS_OPS:
            if "_" in op:
                base, ty = op.split("_")
                if wide:
                    if base == "add":
                        continue
                    ty = ty.replace("32", "64")
            else:
                base = op
                ty = {"sub": "u", "rsub": "u", "inc": "u", "dec": "u"}.get(op, "b") + (
                    "64" if wide else "32")
            if base == "wrap" and wide:
                continue
            rtn_only = base in ("wrxchg", "wrap")
            if not rtn_only:
                names.append("ds_%s_%s" % (base, ty))
            names.append("ds_%s_rtn_%s" % (base, ty))
        if wide:
            names += ["ds_add_u64", "ds_add_rtn_u64"]
    return names


def lds(a):
    kd = "\t\t.amdhsa_group_segment_fixed_size 512"
    for n in ds_names():
        wide = n[-2:] == "64"
        two = "mskor" in n or "cmpst" in n or "wrap" in n
        rtn = "_rtn_" in n
        if wide:
            body = ["global_load_dwordx2 v[6:7], v21, s[4:5]",
                    "global_load_dwordx2 v[2:3], v21, s[6:7]",
                    "global_load_dwordx2 v[8:9], v21, s[8:9]", "s_waitcnt vmcnt(0)",
                    "v_mov_b32 v10, 0xdeadbeef", "v_mov_b32 v11, 0xdeadbeef",
                    "ds_write_b64 v21, v[6:7]", "s_waitcnt lgkmcnt(0)"]
            ops = (["v[10:11]"] if rtn else []) + ["v21", "v[2:3]"] + (["v[8:9]"] if two else [])
            body += ["%s %s" % (n, ", ".join(ops)), "s_waitcnt lgkmcnt(0)",
                     "ds_read_b64 v[12:13], v21", "s_waitcnt lgkmcnt(0)",
                     "global_store_dwordx2 v21, v[10:11], s[12:13]",
                     "global_store_dwordx2 v21, v[12:13], s[14:15]"]
        else:
            body = ["global_load_dword v6, v20, s[4:5]", "global_load_dword v2, v20, s[6:7]",
                    "global_load_dword v3, v20, s[8:9]", "s_waitcnt vmcnt(0)",
                    "v_mov_b32 v5, 0xdeadbeef", "ds_write_b32 v20, v6", "s_waitcnt lgkmcnt(0)"]
            ops = (["v5"] if rtn else []) + ["v20", "v2"] + (["v3"] if two else [])
            body += ["%s %s" % (n, ", ".join(ops)), "s_waitcnt lgkmcnt(0)",
                     "ds_read_b32 v7, v20", "s_waitcnt lgkmcnt(0)",
                     "global_store_dword v20, v5, s[12:13]", "global_store_dword v20, v7, s[14:15]"]
        a.kernel(n, body, extra=kd)


# smem_* kernels (one wave): p1 holds the data scalar loads read, p4 and p5 receive stores.
# - `smem_bload_nr<NR>_st<STRIDE>_sw<SWIZZLE>`: s_buffer_load_dwordx16 s[4:19] at byte 4 of
#   the V# {base p1, STRIDE, SWIZZLE_EN, NUM_RECORDS NR}; lane i stores s4..s19 to
#   p4[16i..16i+15] (s[4:19] zeroed before the load).
# - `smem_bload_soff`: s_buffer_load_dwordx4 s[4:7] at SGPR offset 0x13 (0x10 used) with
#   NUM_RECORDS 0x18, stored as above.
# - `smem_store`: s_store_dwordx4 of 0x11111111.. at p4 + 8, s_store_dword at p4 + 0x40,
#   s_store_dwordx2 at p4 + 0x80 (SGPR offset); s_buffer_store_dwordx4 at byte 8 of the V#
#   {p5, NUM_RECORDS 0x10} (its last two dwords out of range); then the s_dcache_* write-backs
#   and invalidations.
# - `smem_atomic_<op>[_x2]` (glc) and `smem_atomic_add_noglc`: s_atomic_* on the word at
#   p0 + 8 with SDATA s[24:27] = p1[0..4], then lane i stores s24..s27 to p4[4i..4i+3];
#   `smem_batomic_<op>_nr<NR>`: s_buffer_atomic_* at byte 8 of the V# {p0, NUM_RECORDS NR}.
def smem(a):
    save = ["s_mov_b64 s[20:21], s[6:7]", "s_mov_b64 s[2:3], s[12:13]",
            "s_mov_b64 s[28:29], s[14:15]", "v_lshlrev_b32 v22, 6, v1"]
    zero = ["s_mov_b64 s[%d:%d], 0" % (r, r + 1) for r in range(4, 20, 2)]
    def vsharp(nr, stride, swz, base="s[20:21]"):
        lo, hi = base[2:-1].split(":")
        return ["s_mov_b32 s22, 0x%x" % nr, "s_mov_b32 s23, 0",
                "s_and_b32 s21, s%s, 0xffff" % hi,
                "s_or_b32 s21, s21, 0x%x" % (stride << 16 | swz << 31)]
    def store16(n):
        out = []
        for k in range(n):
            out += ["v_mov_b32 v5, s%d" % (4 + k),
                    "global_store_dword v22, v5, s[2:3] offset:%d" % (4 * k)]
        return out
    for nr, st, sw in ((0x20, 0, 0), (4, 8, 1), (4, 8, 0), (0xFFFFFFFF, 0, 0), (0x21, 0, 0)):
        a.kernel("smem_bload_nr%x_st%d_sw%d" % (nr, st, sw),
                 save + zero + vsharp(nr, st, sw) +
                 ["s_buffer_load_dwordx16 s[4:19], s[20:23], 0x4", "s_waitcnt lgkmcnt(0)"] +
                 store16(16))
    a.kernel("smem_bload_soff", save + zero + vsharp(0x18, 0, 0) +
             ["s_movk_i32 s24, 0x13", "s_buffer_load_dwordx4 s[4:7], s[20:23], s24",
              "s_waitcnt lgkmcnt(0)"] + store16(16))
    # SOE: the SGPR offset plus the immediate (0x13 + 9 = 0x1c; 0x40 - 8 = 0x38).
    a.kernel("smem_load_soe", save + zero + [
        "s_movk_i32 s24, 0x13", "s_load_dwordx4 s[4:7], s[20:21], s24 offset:0x9",
        "s_waitcnt lgkmcnt(0)"] + store16(16))
    a.kernel("smem_load_soe_neg", save + zero + [
        "s_movk_i32 s24, 0x40", "s_load_dword s4, s[20:21], s24 offset:-0x8",
        "s_waitcnt lgkmcnt(0)"] + store16(16))
    a.kernel("smem_store", save + [
        "s_mov_b32 s24, 0x11111111", "s_mov_b32 s25, 0x22222222",
        "s_mov_b32 s26, 0x33333333", "s_mov_b32 s27, 0x44444444",
        "s_store_dwordx4 s[24:27], s[2:3], 0x8", "s_store_dword s25, s[2:3], 0x40",
        "s_movk_i32 s30, 0x80", "s_store_dwordx2 s[26:27], s[2:3], s30",
        "s_mov_b64 s[20:21], s[28:29]"] + vsharp(0x10, 0, 0) + [
        "s_buffer_store_dwordx4 s[24:27], s[20:23], 0x8", "s_waitcnt lgkmcnt(0)",
        "s_dcache_wb", "s_dcache_wb_vol", "s_dcache_inv", "s_dcache_inv_vol"])
    # Atomics: SDATA s[24:27] = p1[0..4]; the memory word is at p0 + 8; lane i stores
    # s24..s27 afterwards to p4[4i..4i+3]. (A tab before glc: SMEM keeps the name glc on
    # gfx940+, which Asm's cache_bits would rename.)
    ops = "swap cmpswap add sub smin umin smax umax and or xor inc dec".split()
    def data_regs(op):
        n = (2 if op.startswith("cmpswap") else 1) * (2 if op.endswith("_x2") else 1)
        return "s24" if n == 1 else "s[24:%d]" % (23 + n)
    head = ["s_load_dwordx4 s[24:27], s[6:7], 0x0", "s_waitcnt lgkmcnt(0)",
            "v_lshlrev_b32 v22, 4, v1"]
    tail = ["s_waitcnt lgkmcnt(0)"] + sum(
        (["v_mov_b32 v5, s%d" % (24 + k),
          "global_store_dword v22, v5, s[12:13] offset:%d" % (4 * k)] for k in range(4)), [])
    for op in ops + [o + "_x2" for o in ops]:
        a.kernel("smem_atomic_" + op, head +
                 ["s_atomic_%s %s, s[4:5], 0x8\tglc" % (op, data_regs(op))] + tail)
    a.kernel("smem_atomic_add_noglc", head + ["s_atomic_add s24, s[4:5], 0x8"] + tail)
    for op in ("add", "cmpswap_x2", "umax_x2"):
        for nr in (0x100, 8):
            a.kernel("smem_batomic_%s_nr%x" % (op, nr), head + [
                "s_mov_b64 s[20:21], s[4:5]"] + vsharp(nr, 0, 0) + [
                "s_buffer_atomic_%s %s, s[20:23], 0x8\tglc" % (op, data_regs(op))] + tail)


# --- dsops: the last DS and SMEM opcodes (issue 19) ---------------------------------------
# One wave, 2048 bytes of LDS. Lane i copies p0's bytes 32i..32i+31 to LDS at 32i (p0 is
# the whole initial LDS), sets v[30:33] = 0xdeadbeef, loads its address VGPR v3 = p3[i]
# (a dword), DATA0 v[24:25] = p1[i] and DATA1 v[26:27] = p2[i] (qwords; the 32-bit forms use
# the low dwords), runs the instruction, and stores v[30:33] (what it returned) to p4 at 16i
# and LDS bytes 32i..32i+31 afterwards to p5 at 32i (p5 is the whole final LDS).
# - `xchg2_<op>_o<O0>_<O1>`: ds_wrxchg2[st64]_rtn_b32/_b64 with offset0 O0, offset1 O1;
# - `condxchg_o<O>`: ds_condxchg32_rtn_b64 with offset O;
# - `src2_<op>_o<O>` (gfx900..gfx908): ds_<op>_src2_<type> with offset O.
# `gpr_idx_*` kernels: GPR index mode (see GPR_IDX).
# s_scratch kernels (the scratch launch state of gen.py's scratch family; p_k in
# s[12+2k:13+2k]); every lane stores the same values:
# - `s_scratch`: p1[0..8] into s[0:7]; s_scratch_store_dwordx4 s[0:3] at 0x40,
#   s_scratch_store_dword s4 at SGPR offset 0x87 (0x84 used), s_scratch_store_dwordx2
#   s[6:7] at 0x103 (0x100); then s_scratch_load_dwordx4 at 0x40, s_scratch_load_dword at
#   0x84, s_scratch_load_dwordx2 at 0x100 into s[0:6] (zeroed first), stored to p4 at 32i;
#   a global_load_dwordx4 of FLAT_SCRATCH + 0x40 and global_store_dwordx4 of p1[8..12] at
#   FLAT_SCRATCH + 0x200 (the scalar accesses' addresses seen by vector memory) put the former
#   to p5 at 32i, and an s_scratch_load_dwordx4 at 0x200 puts the latter to p5 at 32i + 16.
XCHG2 = [("ds_wrxchg2_rtn_b32", 0, 1), ("ds_wrxchg2_rtn_b32", 2, 3),
         ("ds_wrxchg2_rtn_b64", 0, 1), ("ds_wrxchg2_rtn_b64", 2, 3),
         ("ds_wrxchg2st64_rtn_b32", 0, 1), ("ds_wrxchg2st64_rtn_b32", 1, 2),
         ("ds_wrxchg2st64_rtn_b64", 0, 1), ("ds_wrxchg2st64_rtn_b64", 1, 2)]
SRC2 = ["%s_%s%s" % (o, t, w) for w in ("32", "64") for o, t in
        (("add", "u"), ("sub", "u"), ("rsub", "u"), ("inc", "u"), ("dec", "u"), ("min", "i"),
         ("max", "i"), ("min", "u"), ("max", "u"), ("and", "b"), ("or", "b"), ("xor", "b"),
         ("write", "b"), ("min", "f"), ("max", "f"))]
SRC2_OFFSETS = (4, 0x7FFC, 0x8000)
# `gpr_idx_<name>` (all targets): lane i sets v[10+k] = p1[i] ^ (0x11111111 * k), k < 8,
# v3 = p2[i], v[30:33] = 0xdeadbeef, runs the body and stores v[10:17] and v[30:33] to p4 at
# 48i.
GPR_IDX = [
    ("src0", ["s_mov_b32 m0, 0xabcd0000", "s_set_gpr_idx_on 3, gpr_idx(SRC0)",
              "v_mov_b32 v30, v10", "s_set_gpr_idx_off", "v_mov_b32 v31, m0",
              "v_mov_b32 v32, v10"]),
    ("dst_sgpr", ["s_movk_i32 s22, 0x105", "s_set_gpr_idx_on s22, gpr_idx(DST)",
                  "v_mov_b32 v10, v3", "s_set_gpr_idx_off"]),
    ("vop3", ["s_set_gpr_idx_on 1, gpr_idx(SRC1,SRC2)", "v_add3_u32 v30, v10, v11, v12",
              "s_set_gpr_idx_off"]),
    ("idx_mode", ["s_mov_b32 m0, -1", "s_set_gpr_idx_on 1, gpr_idx(SRC0)",
                  "s_set_gpr_idx_idx 6", "s_set_gpr_idx_mode gpr_idx(SRC1)",
                  "v_sub_u32 v30, v10, v11", "s_set_gpr_idx_off", "v_mov_b32 v31, m0"]),
    ("b64", ["s_set_gpr_idx_on 2, gpr_idx(SRC1,DST)", "v_lshlrev_b64 v[10:11], 1, v[10:11]",
             "s_set_gpr_idx_off"]),
    ("past_v255", ["s_set_gpr_idx_on 250, gpr_idx(SRC0)", "v_mov_b32 v30, v10",
                   "s_set_gpr_idx_off"]),
]


def dsops(cpu):
    from gen import scratch_prologue, scratch_directives
    a = Asm(cpu)
    kd = "\t\t.amdhsa_group_segment_fixed_size 2048"
    head = ["v_lshlrev_b32 v22, 5, v1", "v_lshlrev_b32 v23, 4, v1",
            "global_load_dwordx4 v[6:9], v22, s[4:5]",
            "global_load_dwordx4 v[10:13], v22, s[4:5] offset:16",
            "global_load_dword v3, v20, s[10:11]",
            "global_load_dwordx2 v[24:25], v21, s[6:7]",
            "global_load_dwordx2 v[26:27], v21, s[8:9]", "s_waitcnt vmcnt(0)",
            "ds_write_b128 v22, v[6:9]", "ds_write_b128 v22, v[10:13] offset:16",
            "s_waitcnt lgkmcnt(0)"] + ["v_mov_b32 v%d, 0xdeadbeef" % r for r in range(30, 34)]
    tail = ["s_waitcnt lgkmcnt(0)", "ds_read_b128 v[6:9], v22",
            "ds_read_b128 v[10:13], v22 offset:16", "s_waitcnt lgkmcnt(0)",
            "global_store_dwordx4 v23, v[30:33], s[12:13]",
            "global_store_dwordx4 v22, v[6:9], s[14:15]",
            "global_store_dwordx4 v22, v[10:13], s[14:15] offset:16"]
    for op, o0, o1 in XCHG2:
        if op.endswith("b64"):
            ins = "%s v[30:33], v3, v[24:25], v[26:27]" % op
        else:
            ins = "%s v[30:31], v3, v24, v26" % op
        ins += "".join(" offset%d:%d" % (k, o) for k, o in ((0, o0), (1, o1)) if o)
        a.kernel("xchg2_%s_o%d_%d" % (op[3:], o0, o1), head + [ins] + tail, extra=kd)
    for o in (0, 20):
        ins = "ds_condxchg32_rtn_b64 v[30:31], v3, v[24:25]" + (" offset:%d" % o if o else "")
        a.kernel("condxchg_o%d" % o, head + [ins] + tail, extra=kd)
    if cpu in ("gfx900", "gfx906", "gfx908"):
        for op in SRC2:
            base, ty = op.split("_")
            for o in SRC2_OFFSETS:
                a.kernel("src2_%s_o%x" % (op, o),
                         head + ["ds_%s_src2_%s v3 offset:%d" % (base, ty, o)] + tail, extra=kd)
    # GPR index mode.
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]",
            "s_waitcnt vmcnt(0)", "v_mul_u32_u24 v24, 48, v1"]
    head += ["v_xor_b32 v%d, 0x%x, v2" % (10 + k, 0x11111111 * k) for k in range(8)]
    head += ["v_mov_b32 v%d, 0xdeadbeef" % r for r in range(30, 34)]
    tail = ["global_store_dwordx4 v24, v[10:13], s[12:13]",
            "global_store_dwordx4 v24, v[14:17], s[12:13] offset:16",
            "global_store_dwordx4 v24, v[30:33], s[12:13] offset:32"]
    for name, body in GPR_IDX:
        a.kernel("gpr_idx_" + name, head + body + tail)
    # Scalar scratch.
    body = ["s_load_dwordx8 s[0:7], s[14:15], 0x0", "s_waitcnt lgkmcnt(0)",
            "s_scratch_store_dwordx4 s[0:3], s[0:1], 0x40",
            "s_movk_i32 s8, 0x87", "s_scratch_store_dword s4, s[0:1], s8",
            "s_scratch_store_dwordx2 s[6:7], s[0:1], 0x103", "s_waitcnt lgkmcnt(0)"]
    body += ["s_mov_b32 s%d, 0" % r for r in range(8)]
    body += ["s_scratch_load_dwordx4 s[0:3], s[8:9], 0x40",
             "s_scratch_load_dword s4, s[8:9], 0x84",
             "s_scratch_load_dwordx2 s[6:7], s[8:9], 0x100", "s_waitcnt lgkmcnt(0)",
             "v_lshlrev_b32 v22, 5, v1"]
    for r in range(8):
        body += ["v_mov_b32 v5, s%d" % r, "global_store_dword v22, v5, s[20:21] offset:%d" % (4 * r)]
    body += ["v_mov_b32 v40, flat_scratch_lo", "v_mov_b32 v41, flat_scratch_hi",
             "global_load_dwordx4 v[42:45], v[40:41], off offset:0x40",
             "v_mov_b32 v50, 0", "global_load_dwordx4 v[46:49], v50, s[14:15] offset:32",
             "s_waitcnt vmcnt(0)",
             "global_store_dwordx4 v22, v[42:45], s[22:23]"]
    # One lane writes the dwords the scalar load reads (all lanes write the same bytes).
    body += ["global_store_dwordx4 v[40:41], v[46:49], off offset:0x200", "s_waitcnt vmcnt(0)",
             "s_scratch_load_dwordx4 s[0:3], s[8:9], 0x200", "s_waitcnt lgkmcnt(0)"]
    for r in range(4):
        body += ["v_mov_b32 v5, s%d" % r,
                 "global_store_dword v22, v5, s[22:23] offset:%d" % (16 + 4 * r)]
    a.kernel("s_scratch", body, prologue=scratch_prologue(cpu), extra=scratch_directives(cpu))
    return a


if __name__ == "__main__":
    for cpu in ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]:
        build("ops", cpu, ops(cpu))
        build("dsops", cpu, dsops(cpu))
