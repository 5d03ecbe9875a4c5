#!/usr/bin/env python3
"""Writes and assembles the `vcov` family of gfx9 instruction test kernels (vcov-CPU.s/.hsaco)
with gen.py's conventions (see its docstring): the vector ALU and memory opcodes of the
interpreter's table (gfx9/src/opcodes.rs) that no other family ran (issue 19).
Each kernel exists on every target whose table row has its instruction. FLOAT_DENORM_MODE_32 3
(f32 denormals kept). gfx9/tests/gfx9_vcov.rs runs them against host references.

- `cmp_<op>` / `cmp_<op>_e64` (every v_cmp_*/v_cmpx_* below): lane i compares p1[i] with
  p2[i] (dwords; qwords into v[2:3]/v[4:5] for the 64-bit types) into VCC (`_e32`) or
  s[20:21] (`_e64`); v15 is 7 before and set to 1 after the compare (so 1 only where the
  lane is still active), then with EXEC all ones p4[i] = v15, p5[i] = the mask bit, p6[i] = the
  EXEC bit after the compare.
- `alu_<name>` (ALU table): lane i loads p1[i], p2[i], p3[i] (qwords) into v[8:9], v[10:11],
  v[12:13], sets VCC = p3[i] & 1 (the carry/borrow in), v[6:7] = 0xdeadbeef, runs the
  instruction (dword operands are the low dwords) and stores v[6:7] to p4[i] (qword) and
  VCC's bit (or the SGPR pair's for VOP3b forms) to p5[i].
- `mem_<op>`: buffer (raw resource over p1 or p4, NUM_RECORDS -1), global and flat byte and
  short loads (lane i reads p1's bytes at 4i + 1 (bytes) or 4i + 2 (shorts) into v10 = p2[i])
  and stores (p1[i] to p4 at 4i + 1 or 4i + 2; p4 prefilled by the test); the result v10 to
  p4[i]. `mem_global_load_dwordx3`: p1 at 16i into v[10:13] (all p2[i]) stored to p4 at 16i.
- `scr_<op>`: scratch (gen.py's scratch launch state, p_k in s[12+2k:13+2k]): loads store
  p1[i] at private byte 16 and load at 16 + 1 (bytes) or 16 + 2 (shorts) into v10 = p2[i];
  stores write the dword p3[i] at 16, then p1[i] with the instruction at 17 or 18; then the
  dword at 16 is loaded into v10; p4[i] = v10.
- `batomic_<op>[_glc]`: buffer_atomic_<op> on the raw resource over p0 at 4i (8i for _x2)
  with data p1[i] and compare p2[i]; the data VGPRs afterwards to p4[i].
- `cache_<op>`: p1[i] stored to p4[i], the cache instruction, p4[i] loaded back, plus 1,
  stored to p5[i].
- `lds_<op>` (one wave, 2048 bytes of LDS, lane i copies p0's bytes 32i..32i+31 to LDS 32i):
  ds_read2*: at 4i (b32) or 8i (b64) with the offsets of LDS2 into v[30:33] (0xdeadbeef)
  stored to p4 at 16i; ds_write2*: data p1[i], p2[i] (qwords; low dwords for b32) at the same
  addresses; ds_read_{u8,i8,u16,i16}: at 4i + 1 (bytes) or 4i + 2 into v30 (0xdeadbeef),
  to p4[i]; ds_write_b8/b16: p1[i] at 4i + 1 or 4i + 2; ds_add_u32: p1[i] at 4 * (i % 8);
  ds_add_rtn_u32: p1[i] at 4i, the returned value to p4[i]. Every lds kernel then stores LDS
  bytes 32i..32i+31 to p5 at 32i.

Usage: python3 gen_vcov.py   (writes next to this file)
"""
import os
import re

from gen import Asm, build, scratch_prologue, scratch_directives

HERE = os.path.dirname(os.path.abspath(__file__))
CPUS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]
TBITS = {"T_GFX900": "gfx900", "T_GFX906": "gfx906", "T_GFX908": "gfx908",
         "T_GFX90A": "gfx90a", "T_GFX942": "gfx942"}


def table():
    """mnemonic -> set of targets, from the interpreter's opcode table."""
    path = os.path.join(HERE, "../../../gfx9/src/opcodes.rs")
    out = {}
    for m in re.finditer(r'OpInfo::new\(Encoding::\w+, \d+, ([A-Z0-9_ |]+), Op::\w+, "(\w+)"',
                         open(path).read()):
        ts = set()
        for t in m.group(1).split("|"):
            t = t.strip()
            ts |= set(CPUS) if t == "T_ALL" else {TBITS[t]}
        out.setdefault(m.group(2), set()).update(ts)
    return out


CMP_TYPES = ["f32", "f64", "i32", "i64", "u32", "u64"]
FCONDS = "f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru".split()
ICONDS = "f lt eq le gt ne ge t".split()


def cmp_ops():
    ops = []
    for ty in CMP_TYPES:
        for c in (FCONDS if ty[0] == "f" else ICONDS):
            for x in ("cmp", "cmpx"):
                ops.append("v_%s_%s_%s" % (x, c, ty))
    return ops + ["v_cmp_class_f32", "v_cmpx_class_f32"]


# ALU kernels: name -> instruction (operands: a = v8 / v[8:9], b = v10 / v[10:11],
# c = v12 / v[12:13], the result v6 / v[6:7]).
ALU = [
    ("v_add_lshl_u32", "v_add_lshl_u32 v6, v8, v10, v12"),
    ("v_and_or_b32", "v_and_or_b32 v6, v8, v10, v12"),
    ("v_ashrrev_i32", "v_ashrrev_i32 v6, v8, v10"),
    ("v_ashrrev_i64", "v_ashrrev_i64 v[6:7], v8, v[10:11]"),
    ("v_lshrrev_b32", "v_lshrrev_b32 v6, v8, v10"),
    ("v_lshrrev_b64", "v_lshrrev_b64 v[6:7], v8, v[10:11]"),
    ("v_bcnt_u32_b32", "v_bcnt_u32_b32 v6, v8, v10"),
    ("v_bfe_i32", "v_bfe_i32 v6, v8, v10, v12"),
    ("v_bfe_u32", "v_bfe_u32 v6, v8, v10, v12"),
    ("v_bfrev_b32", "v_bfrev_b32 v6, v8"),
    ("v_ffbh_i32", "v_ffbh_i32 v6, v8"),
    ("v_ffbh_u32", "v_ffbh_u32 v6, v8"),
    ("v_ffbl_b32", "v_ffbl_b32 v6, v8"),
    ("v_mad_i32_i24", "v_mad_i32_i24 v6, v8, v10, v12"),
    ("v_mad_u32_u24", "v_mad_u32_u24 v6, v8, v10, v12"),
    ("v_mad_i64_i32", "v_mad_i64_i32 v[6:7], s[20:21], v8, v10, v[12:13]"),
    ("v_mad_u64_u32", "v_mad_u64_u32 v[6:7], s[20:21], v8, v10, v[12:13]"),
    ("v_lshl_add_u64", "v_lshl_add_u64 v[6:7], v[8:9], v10, v[12:13]"),
    ("v_max3_i32", "v_max3_i32 v6, v8, v10, v12"),
    ("v_max3_u32", "v_max3_u32 v6, v8, v10, v12"),
    ("v_min3_i32", "v_min3_i32 v6, v8, v10, v12"),
    ("v_min3_u32", "v_min3_u32 v6, v8, v10, v12"),
    ("v_med3_i32", "v_med3_i32 v6, v8, v10, v12"),
    ("v_med3_u32", "v_med3_u32 v6, v8, v10, v12"),
    ("v_max_u32", "v_max_u32 v6, v8, v10"),
    ("v_min_i32", "v_min_i32 v6, v8, v10"),
    ("v_min_u32", "v_min_u32 v6, v8, v10"),
    ("v_or_b32", "v_or_b32 v6, v8, v10"),
    ("v_or3_b32", "v_or3_b32 v6, v8, v10, v12"),
    ("v_lshl_or_b32", "v_lshl_or_b32 v6, v8, v10, v12"),
    ("v_xnor_b32", "v_xnor_b32 v6, v8, v10"),
    ("v_mac_f32", "v_mov_b32 v6, v12\n\tv_mac_f32 v6, v8, v10"),
    ("v_mbcnt_lo_u32_b32", "v_mbcnt_lo_u32_b32 v6, v8, v10"),
    ("v_mbcnt_hi_u32_b32", "v_mbcnt_hi_u32_b32 v6, v8, v10"),
    ("v_mul_hi_i32", "v_mul_hi_i32 v6, v8, v10"),
    ("v_mul_hi_u32", "v_mul_hi_u32 v6, v8, v10"),
    ("v_mul_hi_i32_i24", "v_mul_hi_i32_i24 v6, v8, v10"),
    ("v_mul_hi_u32_u24", "v_mul_hi_u32_u24 v6, v8, v10"),
    ("v_mul_i32_i24", "v_mul_i32_i24 v6, v8, v10"),
    ("v_mul_lo_u32", "v_mul_lo_u32 v6, v8, v10"),
    ("v_sad_u32", "v_sad_u32 v6, v8, v10, v12"),
    ("v_xad_u32", "v_xad_u32 v6, v8, v10, v12"),
    ("v_sub_co_u32", "v_sub_co_u32 v6, vcc, v8, v10"),
    ("v_subrev_co_u32", "v_subrev_co_u32 v6, vcc, v8, v10"),
    ("v_subb_co_u32", "v_subb_co_u32 v6, vcc, v8, v10, vcc"),
    ("v_subbrev_co_u32", "v_subbrev_co_u32 v6, vcc, v8, v10, vcc"),
    ("v_sub_co_u32_e64", "v_sub_co_u32_e64 v6, s[20:21], v8, v10"),
    ("v_subb_co_u32_e64", "v_subb_co_u32_e64 v6, s[20:21], v8, v10, vcc"),
    ("v_subrev_u32", "v_subrev_u32 v6, v8, v10"),
    ("v_mov_b64", "v_mov_b64 v[6:7], v[8:9]"),
    ("v_nop", "v_nop"),
    ("v_readlane_b32", "v_readlane_b32 s22, v8, 37\n\tv_mov_b32 v6, s22"),
    ("v_readlane_b32_sgpr", "s_movk_i32 s23, 0x47\n\tv_readlane_b32 s22, v8, s23\n\t"
     "v_mov_b32 v6, s22"),
    ("v_writelane_b32", "v_mov_b32 v6, v10\n\tv_readfirstlane_b32 s22, v8\n\t"
     "v_writelane_b32 v6, s22, 13"),
    ("v_writelane_b32_sgpr", "v_mov_b32 v6, v10\n\tv_readfirstlane_b32 s22, v8\n\t"
     "s_movk_i32 m0, 0x4d\n\tv_writelane_b32 v6, s22, m0"),
    # Conversions and float ops (f32 in the low dwords, f64 in the qwords).
    ("v_cvt_f32_ubyte0", "v_cvt_f32_ubyte0 v6, v8"),
    ("v_cvt_f32_ubyte1", "v_cvt_f32_ubyte1 v6, v8"),
    ("v_cvt_f32_ubyte2", "v_cvt_f32_ubyte2 v6, v8"),
    ("v_cvt_f32_ubyte3", "v_cvt_f32_ubyte3 v6, v8"),
    ("v_cvt_f64_f32", "v_cvt_f64_f32 v[6:7], v8"),
    ("v_cvt_f64_u32", "v_cvt_f64_u32 v[6:7], v8"),
    ("v_cvt_flr_i32_f32", "v_cvt_flr_i32_f32 v6, v8"),
    ("v_cvt_rpi_i32_f32", "v_cvt_rpi_i32_f32 v6, v8"),
    ("v_cvt_i32_f64", "v_cvt_i32_f64 v6, v[8:9]"),
    ("v_cvt_u32_f64", "v_cvt_u32_f64 v6, v[8:9]"),
    ("v_cvt_pkrtz_f16_f32", "v_cvt_pkrtz_f16_f32 v6, v8, v10"),
    ("v_ceil_f32", "v_ceil_f32 v6, v8"),
    ("v_floor_f32", "v_floor_f32 v6, v8"),
    ("v_fract_f32", "v_fract_f32 v6, v8"),
    ("v_rndne_f32", "v_rndne_f32 v6, v8"),
    ("v_trunc_f32", "v_trunc_f32 v6, v8"),
    ("v_max_f64", "v_max_f64 v[6:7], v[8:9], v[10:11]"),
    ("v_min3_f32", "v_min3_f32 v6, v8, v10, v12"),
    ("v_subrev_f32", "v_subrev_f32 v6, v8, v10"),
]

BUF_LOADS = ["sbyte", "ubyte", "sshort", "ushort"]
BUF_STORES = ["byte", "short"]
SCR_LOADS = BUF_LOADS + ["sbyte_d16", "sbyte_d16_hi", "ubyte_d16", "ubyte_d16_hi",
                         "short_d16", "short_d16_hi"]
SCR_STORES = BUF_STORES + ["byte_d16_hi", "short_d16_hi"]
ATOMICS = "swap cmpswap add sub smin umin smax umax and or xor inc dec".split()
CACHE = ["buffer_wbinvl1", "buffer_wbinvl1_vol", "buffer_inv", "buffer_invl2", "buffer_wbl2"]
# (op, offset0, offset1): ranges of the 64 lanes do not overlap (see the docstring).
LDS2 = [("ds_read2_b32", 128, 64), ("ds_read2st64_b32", 2, 1), ("ds_read2_b64", 128, 64),
        ("ds_read2st64_b64", 2, 1), ("ds_write2_b32", 128, 64), ("ds_write2st64_b32", 2, 1),
        ("ds_write2_b64", 128, 64), ("ds_write2st64_b64", 2, 1)]
LDS1 = ["ds_read_u8", "ds_read_i8", "ds_read_u16", "ds_read_i16", "ds_write_b8",
        "ds_write_b16", "ds_add_u32", "ds_add_rtn_u32"]


def sub_off(op):
    return 1 if "byte" in op or op.endswith("8") else 2


def vcov(cpu):
    t = table()
    has = lambda op: cpu in t.get(op, ())
    a = Asm(cpu, keep_denormals=True)
    # VOPC.
    for op in cmp_ops():
        if not has(op):
            continue
        wide = op[-2:] == "64"
        if wide:
            head = ["global_load_dwordx2 v[2:3], v21, s[6:7]",
                    "global_load_dwordx2 v[4:5], v21, s[8:9]"]
            srcs = "v[2:3], v[4:5]"
        else:
            head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]"]
            srcs = "v2, v3"
        head += ["s_waitcnt vmcnt(0)", "v_mov_b32 v15, 7"]
        for form, dst in (("_e32", "vcc"), ("_e64", "s[20:21]")):
            a.kernel("cmp_%s%s" % (op[2:], form if form == "_e64" else ""), head + [
                "%s%s %s, %s" % (op, form, dst, srcs), "v_mov_b32 v15, 1",
                "s_mov_b64 s[22:23], exec", "s_mov_b64 exec, -1",
                "v_cndmask_b32_e64 v6, 0, 1, %s" % dst,
                "v_cndmask_b32_e64 v7, 0, 1, s[22:23]",
                "global_store_dword v20, v15, s[12:13]", "global_store_dword v20, v6, s[14:15]",
                "global_store_dword v20, v7, s[16:17]"])
    # ALU.
    head = ["global_load_dwordx2 v[8:9], v21, s[6:7]", "global_load_dwordx2 v[10:11], v21, s[8:9]",
            "global_load_dwordx2 v[12:13], v21, s[10:11]", "s_waitcnt vmcnt(0)",
            "v_and_b32 v14, 1, v12", "v_cmp_ne_u32 vcc, 0, v14", "s_mov_b64 s[20:21], vcc",
            "v_mov_b32 v6, 0xdeadbeef", "v_mov_b32 v7, 0xdeadbeef"]
    for name, ins in ALU:
        op = name.replace("_sgpr", "").replace("_e64", "")
        if not has(op):
            continue
        mask = "s[20:21]" if "s[20:21]" in ins else "vcc"
        a.kernel("alu_" + name, head + [ins, "v_cndmask_b32_e64 v15, 0, 1, %s" % mask,
                                        "global_store_dwordx2 v21, v[6:7], s[12:13]",
                                        "global_store_dword v20, v15, s[14:15]"])
    # Buffer, global and flat bytes and shorts.
    vs = lambda lo, hi: ["s_mov_b32 s28, %s" % lo, "s_and_b32 s29, %s, 0xffff" % hi,
                         "s_mov_b32 s30, -1", "s_mov_b32 s31, 0x27000"]
    head = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v10, v20, s[8:9]",
            "s_waitcnt vmcnt(0)"]
    tail = ["s_waitcnt vmcnt(0)", "global_store_dword v20, v10, s[12:13]"]
    for seg in ("buffer", "global", "flat"):
        for x in BUF_LOADS + BUF_STORES:
            load = x in BUF_LOADS
            op = "%s_%s_%s" % (seg, "load" if load else "store", x)
            o = "offset:%d" % sub_off(x)
            base = ("s6", "s7") if load else ("s12", "s13")
            if seg == "buffer":
                body = vs(*base) + ["%s %s, v20, s[28:31], 0 offen %s" % (
                    op, "v10" if load else "v2", o)]
            elif seg == "global":
                body = ["%s %s, %s, s[%s:%s] %s" % (
                    op, "v10" if load else "v20", "v20" if load else "v2",
                    base[0][1:], base[1][1:], o)]
            else:
                body = ["v_mov_b32 v9, %s" % base[1], "v_add_co_u32 v8, vcc, %s, v20" % base[0],
                        "v_addc_co_u32 v9, vcc, 0, v9, vcc",
                        "%s %s %s" % (op, "v10, v[8:9]," if load else "v[8:9], v2,", o)]
                body[-1] = body[-1].replace(", offset", " offset")
            a.kernel("mem_" + op, head + body + (tail if load else ["s_waitcnt vmcnt(0)"]))
    a.kernel("mem_global_load_dwordx3", [
        "v_lshlrev_b32 v22, 4, v1", "global_load_dword v10, v20, s[8:9]", "s_waitcnt vmcnt(0)",
        "v_mov_b32 v11, v10", "v_mov_b32 v12, v10", "v_mov_b32 v13, v10",
        "global_load_dwordx3 v[10:12], v22, s[6:7]", "s_waitcnt vmcnt(0)",
        "global_store_dwordx4 v22, v[10:13], s[12:13]"])
    # MUBUF dwords: lane i copies dwords 0..N-1 of p1's 16-byte element i to p4's.
    for nd in (1, 2, 3, 4):
        x = "" if nd == 1 else "x%d" % nd
        if has("buffer_load_dword" + x) and has("buffer_store_dword" + x):
            regs = "v10" if nd == 1 else "v[10:%d]" % (9 + nd)
            a.kernel("bufvec_x%d" % nd, ["v_lshlrev_b32 v22, 4, v1"] + vs("s6", "s7") + [
                "buffer_load_dword%s %s, v22, s[28:31], 0 offen" % (x, regs),
                "s_waitcnt vmcnt(0)"] + vs("s12", "s13") + [
                "buffer_store_dword%s %s, v22, s[28:31], 0 offen" % (x, regs),
                "s_waitcnt vmcnt(0)"])
    # Scratch.
    pro, ext = scratch_prologue(cpu), scratch_directives(cpu)
    head = ["global_load_dword v2, v20, s[14:15]", "global_load_dword v10, v20, s[16:17]",
            "global_load_dword v3, v20, s[18:19]", "s_waitcnt vmcnt(0)", "v_mov_b32 v24, 16"]
    for x, load in [(x, True) for x in SCR_LOADS] + [(x, False) for x in SCR_STORES]:
        op = "scratch_%s_%s" % ("load" if load else "store", x)
        o = "offset:%d" % sub_off(x)
        if load:
            body = ["scratch_store_dword v24, v2, off", "s_waitcnt vmcnt(0)",
                    "%s v10, v24, off %s" % (op, o)]
        else:
            body = ["scratch_store_dword v24, v3, off", "s_waitcnt vmcnt(0)",
                    "%s v24, v2, off %s" % (op, o), "s_waitcnt vmcnt(0)",
                    "scratch_load_dword v10, v24, off"]
        a.kernel("scr_" + x + ("" if load else "_st"), head + body + [
            "s_waitcnt vmcnt(0)", "global_store_dword v20, v10, s[20:21]"],
            prologue=pro, extra=ext)
    # Buffer atomics.
    for op in ATOMICS:
        for wide in (False, True):
            name = "buffer_atomic_%s%s" % (op, "_x2" if wide else "")
            off = "v21" if wide else "v20"
            if wide:
                body = ["global_load_dwordx2 v[2:3], v21, s[6:7]",
                        "global_load_dwordx2 v[4:5], v21, s[8:9]"]
                data = "v[2:5]" if op == "cmpswap" else "v[2:3]"
                st = "global_store_dwordx2 v21, v[2:3], s[12:13]"
            else:
                body = ["global_load_dword v2, v20, s[6:7]", "global_load_dword v3, v20, s[8:9]"]
                data = "v[2:3]" if op == "cmpswap" else "v2"
                st = "global_store_dword v20, v2, s[12:13]"
            body += ["s_waitcnt vmcnt(0)"] + vs("s4", "s5")
            for glc in (False, True):
                a.kernel("batomic_%s%s%s" % (op, "_x2" if wide else "", "_glc" if glc else ""),
                         body + ["%s %s, %s, s[28:31], 0 offen%s" % (
                             name, data, off, " glc" if glc else ""), "s_waitcnt vmcnt(0)", st])
    # Cache write-back/invalidate as ordering points.
    for op in CACHE:
        if has(op):
            a.kernel("cache_" + op, [
                "global_load_dword v2, v20, s[6:7]", "s_waitcnt vmcnt(0)",
                "global_store_dword v20, v2, s[12:13]", "s_waitcnt vmcnt(0)", op,
                "global_load_dword v3, v20, s[12:13]", "s_waitcnt vmcnt(0)",
                "v_add_u32 v3, 1, v3", "global_store_dword v20, v3, s[14:15]"])
    # LDS.
    kd = "\t\t.amdhsa_group_segment_fixed_size 2048"
    head = ["v_lshlrev_b32 v22, 5, v1", "v_lshlrev_b32 v23, 4, v1",
            "global_load_dwordx4 v[40:43], v22, s[4:5]",
            "global_load_dwordx4 v[44:47], v22, s[4:5] offset:16",
            "global_load_dwordx2 v[24:25], v21, s[6:7]",
            "global_load_dwordx2 v[26:27], v21, s[8:9]", "s_waitcnt vmcnt(0)",
            "ds_write_b128 v22, v[40:43]", "ds_write_b128 v22, v[44:47] offset:16",
            "s_waitcnt lgkmcnt(0)"] + ["v_mov_b32 v%d, 0xdeadbeef" % r for r in range(30, 34)]
    tail = ["s_waitcnt lgkmcnt(0)", "ds_read_b128 v[40:43], v22",
            "ds_read_b128 v[44:47], v22 offset:16", "s_waitcnt lgkmcnt(0)",
            "global_store_dwordx4 v23, v[30:33], s[12:13]",
            "global_store_dwordx4 v22, v[40:43], s[14:15]",
            "global_store_dwordx4 v22, v[44:47], s[14:15] offset:16"]
    for op, o0, o1 in LDS2:
        b64 = op.endswith("b64")
        addr = "v21" if b64 else "v20"
        offs = "offset0:%d offset1:%d" % (o0, o1)
        if "read" in op:
            ins = "%s %s, %s %s" % (op, "v[30:33]" if b64 else "v[30:31]", addr, offs)
        elif b64:
            ins = "%s %s, v[24:25], v[26:27] %s" % (op, addr, offs)
        else:
            ins = "%s %s, v24, v26 %s" % (op, addr, offs)
        a.kernel("lds_" + op, head + [ins] + tail, extra=kd)
    for op in LDS1:
        if op.startswith("ds_read"):
            ins = ["%s v30, v20 offset:%d" % (op, sub_off(op))]
        elif op.startswith("ds_write"):
            ins = ["%s v20, v24 offset:%d" % (op, sub_off(op))]
        elif op == "ds_add_u32":
            ins = ["v_and_b32 v28, 7, v1", "v_lshlrev_b32 v28, 2, v28", "ds_add_u32 v28, v24"]
        else:
            ins = ["ds_add_rtn_u32 v30, v20, v24"]
        a.kernel("lds_" + op, head + ins + tail, extra=kd)
    return a


if __name__ == "__main__":
    for cpu in CPUS:
        build("vcov", cpu, vcov(cpu))
