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
from gen import Asm, build

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


if __name__ == "__main__":
    for cpu in ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]:
        build("vop3x", cpu, vop3x(cpu))
