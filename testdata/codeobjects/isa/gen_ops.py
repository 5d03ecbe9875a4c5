#!/usr/bin/env python3
"""Writes and assembles the `ops` family of gfx9 instruction test kernels (ops-CPU.s,
ops-CPU.hsaco) with gen.py's conventions (see its docstring): the opcodes added for issue 19.

Kernel `<op>[_<variant>]`: lane i reads p1[i] into v2, p2[i] into v3, p3[i] into v4, sets
v5 = v4 (the accumulator of the MAC and dot forms), runs the instruction into v5 and stores
v5 to p4[i]. FLOAT_DENORM_MODE_32 3 (f32 denormals kept) and FLOAT_DENORM_MODE_16_64 3,
so that the forms that flush whatever the mode show it.
- `v_madak_f32_k<K>`, `v_madmk_f32_k<K>` (not gfx942), `v_fmaak_f32_k<K>`,
  `v_fmamk_f32_k<K>` (gfx942): K the f32 bits in hex; `v_madak_f16_k<K>`, `v_madmk_f16_k<K>`:
  K the f16 bits. madak/fmaak: v2 * v3 + K; madmk/fmamk: v2 * K + v3.
- `v_madak_f32_lit`: src0 a literal, the same dword as K (v_madak_f32 v5, K, v3, K).
- `v_mac_f16`, `v_mul_legacy_f32` (VOP2 on gfx900..gfx908, VOP3 on gfx90a/gfx942),
  `v_mul_legacy_f32_e64_omod` (VOP3 with mul:2; gfx900..gfx908 spell it `_e64`).
- gfx908+: `v_pk_fmac_f16`, `v_dot2c_f32_f16`, `v_dot2c_i32_i16`, `v_dot4c_i32_i8`,
  `v_dot8c_i32_i4`, their `_e64_clamp` forms, and `<op>_dpp` (`v_mac_f16`, `v_dot2c_f32_f16`,
  `v_dot4c_i32_i8`) with quad_perm:[1,0,3,2] (src0 from lane i ^ 1).
- `s_call_b64`: calls a subroutine before it and one after it (each returns with
  s_setpc_b64 and adds 16 or 256 to v5), and adds 1 and 2 when the saved return addresses
  are those of the instructions after the calls: p4[i] = 275.

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
    k("v_mul_legacy_f32", "v_mul_legacy_f32 v5, v2, v3")
    e64 = "" if cpu in ("gfx90a", "gfx942") else "_e64"
    k("v_mul_legacy_f32_e64_omod", "v_mul_legacy_f32%s v5, v2, v3 mul:2" % e64)
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
    return a


if __name__ == "__main__":
    for cpu in ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]:
        build("ops", cpu, ops(cpu))
