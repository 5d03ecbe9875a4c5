#!/usr/bin/env python3
"""Writes and assembles the `sop` family of gfx9 instruction test kernels (sop-CPU.s/.hsaco)
with gen.py's conventions (see its docstring): the scalar ALU, branch, program-control and
scalar buffer instructions issue 19 left untested. gfx9/tests/gfx9_sop.rs checks them.

ALU kernels `<op>` and `<op>_k<K>` (SOPK, K the 16-bit immediate in hex): one case per wave,
64 work-items a wave. Wave w (= the work-group id) loads A = p1[w] into s[20:21], B = p2[w]
into s[22:23] (qwords), and the record p3[4w..4w+4] into s[24:27]: D (the destination's
value before the instruction, a qword) and the SCC input (SCC = p3[4w+2] != 0). The
instruction runs with its sources A (s20 or s[20:21]) and B (s22 or s[22:23]) and its
destination s24 or s[24:25] (SOPK: `s_cmpk_*` compare s20 with K; `s_addk_i32`,
`s_mulk_i32`, `s_cmovk_i32` update s24). The `*saveexec*`/`*wrexec*` kernels set EXEC = B
first (their source is A). Then every lane stores the record [D lo, D hi, SCC, EXEC lo,
EXEC hi] (EXEC read before it is set back to all ones) to p4 at byte 32w.

Branch kernels `<s_cbranch_*>`: with the same inputs, VCC = B (`*vcc*`) or EXEC = B (`*exec*`)
(SCC from the record), D lo = 1 when the branch (a backward one) is taken, 2 when not; stored
as above.

Other kernels (one wave, records as above):
- `s_swappc_b64`: s_swappc_b64 s[30:31] to a subroutine that sets s25 = 0x5ab and returns
  with s_setpc_b64 s[30:31]; D lo = 1 when s[30:31] was the address after the s_swappc_b64.
- `s_nop`, `s_setprio`, `s_sleep`, `s_barrier`, `s_trap_3` (llvm.debugtrap's id): the
  instruction, then D lo = 0x600d.
- `s_trap_2` (`__builtin_trap`'s id): the instruction; the dispatch must fail (no trap
  handler), D lo = 0xbad if it went on.
- `s_endpgm_saved`: stores the record with D lo = 0x600d, then s_endpgm_saved, then stores
  D lo = 0xbad.
- `smem_bload_<n>_nr<NR>`: s_buffer_load_dword<n> (n = 1 dword, x2, x8) into s[24:31] (all
  0xdeadbeef before) at byte offset 4 of the V# {base p1, stride 0, NUM_RECORDS NR}; every
  lane stores s24..s31 to p4 at byte 32 * lane.
- `smem_bstore_<n>_nr<NR>`: s_buffer_store_dword<n> (n = 1, x2) of s24 = 0x11111111,
  s25 = 0x22222222 at byte offset 8 of the V# {base p5, NUM_RECORDS NR}, then s_dcache_wb.
- `smem_batomic_<op>_nr<NR>` (glc): s_buffer_atomic_<op> of SDATA s[24:27] = p1[0..4] at byte
  offset 8 of the V# {base p0, NUM_RECORDS NR}; lane i stores s24..s27 to p4 at byte 16i
  (gen_ops.py's smem_atomic_* convention).

Usage: python3 gen_sop.py   (writes next to this file)
"""
from gen import Asm, build

SOP2_32 = ("s_add_u32 s_addc_u32 s_add_i32 s_sub_i32 s_min_i32 s_min_u32 s_max_i32 "
           "s_max_u32 s_andn2_b32 s_orn2_b32 s_nand_b32 s_nor_b32 s_xnor_b32 s_xor_b32 "
           "s_lshl_b32 s_lshr_b32 s_ashr_i32 s_bfm_b32 s_mul_i32 s_bfe_u32 s_bfe_i32 "
           "s_absdiff_i32 s_lshl1_add_u32 s_lshl2_add_u32 s_lshl3_add_u32 s_lshl4_add_u32 "
           "s_mul_hi_u32 s_mul_hi_i32 s_pack_ll_b32_b16 s_pack_lh_b32_b16 "
           "s_pack_hh_b32_b16").split()
SOP2_64 = ("s_cselect_b64 s_and_b64 s_or_b64 s_xor_b64 s_andn2_b64 s_orn2_b64 s_nand_b64 "
           "s_nor_b64 s_xnor_b64").split()
# 64-bit data, 32-bit second source.
SOP2_64_32 = "s_lshl_b64 s_lshr_b64 s_ashr_i64 s_bfe_u64 s_bfe_i64".split()
SOP1_32 = ("s_cmov_b32 s_not_b32 s_wqm_b32 s_brev_b32 s_bcnt0_i32_b32 s_bcnt1_i32_b32 "
           "s_ff0_i32_b32 s_ff1_i32_b32 s_flbit_i32_b32 s_flbit_i32 s_sext_i32_i8 "
           "s_sext_i32_i16 s_bitset0_b32 s_bitset1_b32 s_abs_i32").split()
SOP1_64 = "s_cmov_b64 s_not_b64 s_wqm_b64 s_brev_b64".split()
# 32-bit result of a 64-bit source.
SOP1_32_64 = ("s_bcnt0_i32_b64 s_bcnt1_i32_b64 s_ff0_i32_b64 s_ff1_i32_b64 s_flbit_i32_b64 "
              "s_flbit_i32_i64").split()
EXEC_OPS = ("s_or_saveexec_b64 s_xor_saveexec_b64 s_andn2_saveexec_b64 s_orn2_saveexec_b64 "
            "s_nand_saveexec_b64 s_nor_saveexec_b64 s_xnor_saveexec_b64 s_andn1_saveexec_b64 "
            "s_orn1_saveexec_b64 s_andn1_wrexec_b64 s_andn2_wrexec_b64").split()
SOPC_32 = ["s_cmp_%s_%s" % (c, t) for t in ("i32", "u32")
           for c in ("eq", "lg", "gt", "ge", "lt", "le")] + ["s_bitcmp0_b32", "s_bitcmp1_b32"]
SOPC_64 = ["s_cmp_lg_u64"]
SOPC_64_32 = ["s_bitcmp0_b64", "s_bitcmp1_b64"]
CMPK = ["s_cmpk_%s_%s" % (c, t) for t in ("i32", "u32")
        for c in ("eq", "lg", "gt", "ge", "lt", "le")]
K16 = [0x0, 0x1, 0x7FFF, 0x8000, 0xFFFF]
BRANCHES = ("s_cbranch_scc0 s_cbranch_scc1 s_cbranch_vccz s_cbranch_vccnz s_cbranch_execz "
            "s_cbranch_execnz").split()
ATOMICS = "swap cmpswap add sub smin umin smax umax and or xor inc dec".split()

HEAD = ["s_lshl_b32 s3, s2, 3", "s_load_dwordx2 s[20:21], s[6:7], s3",
        "s_load_dwordx2 s[22:23], s[8:9], s3", "s_lshl_b32 s3, s2, 4",
        "s_load_dwordx4 s[24:27], s[10:11], s3", "v_mov_b32 v22, s2",
        "v_lshlrev_b32 v22, 5, v22", "s_waitcnt lgkmcnt(0)", "s_cmp_lg_u32 s26, 0"]
TAIL = ["s_cselect_b32 s26, 1, 0", "s_mov_b64 s[28:29], exec", "s_mov_b64 exec, -1",
        "v_mov_b32 v6, s24", "v_mov_b32 v7, s25", "v_mov_b32 v8, s26", "v_mov_b32 v9, s28",
        "v_mov_b32 v10, s29", "global_store_dwordx4 v22, v[6:9], s[12:13]",
        "global_store_dword v22, v10, s[12:13] offset:16"]


def alu(a):
    def k(name, lines):
        a.kernel(name, HEAD + lines + TAIL)
    for op in SOP2_32:
        k(op, ["%s s24, s20, s22" % op])
    for op in SOP2_64:
        k(op, ["%s s[24:25], s[20:21], s[22:23]" % op])
    for op in SOP2_64_32:
        k(op, ["%s s[24:25], s[20:21], s22" % op])
    k("s_bfm_b64", ["s_bfm_b64 s[24:25], s20, s22"])
    for op in SOP1_32:
        k(op, ["%s s24, s20" % op])
    for op in SOP1_64:
        k(op, ["%s s[24:25], s[20:21]" % op])
    for op in SOP1_32_64:
        k(op, ["%s s24, s[20:21]" % op])
    for op in ("s_bitset0_b64", "s_bitset1_b64"):
        k(op, ["%s s[24:25], s20" % op])
    for op in EXEC_OPS:
        k(op, ["s_mov_b64 exec, s[22:23]", "%s s[24:25], s[20:21]" % op])
    for op in SOPC_32:
        k(op, ["%s s20, s22" % op])
    for op in SOPC_64:
        k(op, ["%s s[20:21], s[22:23]" % op])
    for op in SOPC_64_32:
        k(op, ["%s s[20:21], s22" % op])
    for kk in K16:
        for op in CMPK:
            k("%s_k%x" % (op, kk), ["%s s20, 0x%x" % (op, kk)])
        for op in ("s_addk_i32", "s_mulk_i32", "s_cmovk_i32"):
            k("%s_k%x" % (op, kk), ["%s s24, 0x%x" % (op, kk)])


def branches(a):
    for op in BRANCHES:
        setup = []
        if "vcc" in op:
            setup = ["s_mov_b64 vcc, s[22:23]"]
        elif "exec" in op:
            setup = ["s_mov_b64 exec, s[22:23]"]
        t, m, d = (".L%s_%s" % (op, s) for s in ("taken", "main", "done"))
        a.kernel(op, HEAD + setup + [
            "s_branch " + m, t + ":", "s_mov_b32 s24, 1", "s_branch " + d,
            m + ":", "s_mov_b32 s24, 2", "%s %s" % (op, t), d + ":"] + TAIL)


def misc(a):
    s, m, p, r = (".Lswappc_%s" % x for x in ("sub", "main", "pc", "ret"))
    a.kernel("s_swappc_b64", HEAD + [
        "s_branch " + m, s + ":", "s_movk_i32 s25, 0x5ab", "s_setpc_b64 s[30:31]",
        m + ":", "s_getpc_b64 s[20:21]", p + ":",
        # The distance back to the subroutine, as a literal above the inline range (llvm-mc
        # writes the fixed-up expression as a literal; llvm-objdump prints a literal of an
        # inline value as that value, the emulator's disassembler in hex).
        "s_add_u32 s20, s20, 0x1000-(%s-%s)" % (p, s), "s_addc_u32 s21, s21, 0",
        "s_sub_u32 s20, s20, 0x1000", "s_subb_u32 s21, s21, 0",
        "s_swappc_b64 s[30:31], s[20:21]", r + ":", "s_getpc_b64 s[28:29]",
        "s_sub_u32 s28, s28, 4", "s_subb_u32 s29, s29, 0", "s_cmp_eq_u64 s[28:29], s[30:31]",
        "s_cselect_b32 s24, 1, 0"] + TAIL)
    for name, ins in (("s_nop", "s_nop 7"), ("s_setprio", "s_setprio 3"),
                      ("s_sleep", "s_sleep 1"), ("s_barrier", "s_barrier"),
                      ("s_trap_3", "s_trap 3")):
        a.kernel(name, HEAD + [ins, "s_movk_i32 s24, 0x600d"] + TAIL)
    a.kernel("s_trap_2", HEAD + ["s_trap 2", "s_movk_i32 s24, 0xbad"] + TAIL)
    a.kernel("s_endpgm_saved", HEAD + ["s_movk_i32 s24, 0x600d"] + TAIL + [
        "s_endpgm_saved", "s_movk_i32 s24, 0xbad"] + TAIL)


def vsharp(base, nr):
    """V# {base, stride 0, NUM_RECORDS nr} in s[20:23] from the pointer s[base:base+1]."""
    return ["s_mov_b64 s[20:21], s[%d:%d]" % (base, base + 1), "s_mov_b32 s22, 0x%x" % nr,
            "s_mov_b32 s23, 0", "s_and_b32 s21, s21, 0xffff"]


def smem(a):
    out = ["v_lshlrev_b32 v22, 5, v1"]
    for r in range(8):
        out += ["v_mov_b32 v5, s%d" % (24 + r),
                "global_store_dword v22, v5, s[12:13] offset:%d" % (4 * r)]
    for n, regs in (("dword", "s24"), ("dwordx2", "s[24:25]"), ("dwordx8", "s[24:31]")):
        for nr in (0x100, 0xc, 0):
            a.kernel("smem_bload_%s_nr%x" % (n, nr),
                     ["s_mov_b32 s%d, 0xdeadbeef" % r for r in range(24, 32)] + vsharp(6, nr) +
                     ["s_buffer_load_%s %s, s[20:23], 0x4" % (n, regs), "s_waitcnt lgkmcnt(0)"]
                     + out)
    for n, regs in (("dword", "s24"), ("dwordx2", "s[24:25]")):
        for nr in (0x100, 0xc):
            a.kernel("smem_bstore_%s_nr%x" % (n, nr),
                     ["s_mov_b32 s24, 0x11111111", "s_mov_b32 s25, 0x22222222"] +
                     vsharp(14, nr) +
                     ["s_buffer_store_%s %s, s[20:23], 0x8" % (n, regs), "s_waitcnt lgkmcnt(0)",
                      "s_dcache_wb", "s_waitcnt lgkmcnt(0)"])
    head = ["s_load_dwordx4 s[24:27], s[6:7], 0x0", "s_waitcnt lgkmcnt(0)",
            "v_lshlrev_b32 v22, 4, v1"]
    tail = ["s_waitcnt lgkmcnt(0)"] + sum(
        (["v_mov_b32 v5, s%d" % (24 + k),
          "global_store_dword v22, v5, s[12:13] offset:%d" % (4 * k)] for k in range(4)), [])
    for op in ATOMICS + [o + "_x2" for o in ATOMICS]:
        n = (2 if op.startswith("cmpswap") else 1) * (2 if op.endswith("_x2") else 1)
        data = "s24" if n == 1 else "s[24:%d]" % (23 + n)
        for nr in (0x100, 0xc):
            # A tab before glc: SMEM keeps the name glc on gfx940+ (see gen_ops.py).
            a.kernel("smem_batomic_%s_nr%x" % (op, nr), head + vsharp(4, nr) + [
                "s_buffer_atomic_%s %s, s[20:23], 0x8\tglc" % (op, data)] + tail)


def sop(cpu):
    a = Asm(cpu)
    alu(a)
    branches(a)
    misc(a)
    smem(a)
    return a


if __name__ == "__main__":
    for cpu in ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942"]:
        build("sop", cpu, sop(cpu))
