"""The typed side of the GFX9 opcode table (used by gfx9_opcodes.py): one `Op` per mnemonic and
the attributes the interpreter executes by (operand types, compare condition, atomic kind,
float-input kind, memory access, execution class, MODE rounding class, MFMA shape), worked out
here from the mnemonic once so that the interpreter never looks at a name.

Each attribute follows the ISA documents' naming rules for the mnemonic (Vega ISA §12 opcode
tables, CDNA1/2/3 ISA guides): the type suffixes name the source and result types
(`v_cvt_<dst>_<src>`, `v_<op>_<type>`), `_rtn` marks returning LDS atomics, `_x2` 64-bit
atomics, `d16`/`d16_hi` half-register memory forms.
"""


def camel(name):
    """`v_add_co_u32` -> `VAddCoU32`."""
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


# --- float kinds ---------------------------------------------------------------------------

def src_fp(name):
    """The float precision of a VALU instruction's sources (what neg/abs, inline float
    constants and denormal flushing act on): F32/F64 by the type in the name (a conversion's
    source type is its last), F16 for f16 sources; `v_cndmask_b32` takes f32 neg/abs."""
    if name == "v_cndmask_b32":
        t = "f32"
    elif name.startswith("v_cvt_"):
        t = name[len("v_cvt_"):].rsplit("_", 1)[-1]
    elif "_f64" in name:
        t = "f64"
    elif "_f32" in name:
        t = "f32"
    else:
        t = ""
    if t == "f32":
        return "F32"
    if t == "f64":
        return "F64"
    rest = name[len("v_cvt_"):] if name.startswith("v_cvt_") else None
    f16 = rest.endswith("_f16") if rest is not None else name.endswith("_f16")
    return "F16" if f16 else "None"


def out_f16(name):
    """Whether the result is an f16 (output modifiers and clamp act on it as an f16);
    `v_pack_b32_f16`'s result is a pair of them, its bits."""
    if name == "v_pack_b32_f16":
        return False
    if name.startswith("v_cvt_"):
        return name[len("v_cvt_"):].startswith("f16_")
    return name.endswith("_f16")


def result_fp(name):
    """The precision of the result for MODE's denormal flushing: the type the mnemonic ends in
    (for conversions the one after `v_cvt_`); none for compares and `v_frexp_exp`."""
    if name == "v_cvt_f32_bf16":
        # CDNA4 ISA §7.4: instructions that take floats narrower than 32 bits ignore
        # MODE.denorm and do not flush (a bf16 denormal stays an f32 denormal).
        t = ""
    elif name.startswith("v_cvt_"):
        t = name[len("v_cvt_"):].split("_")[0]
    elif name.startswith("v_cmp") or name.startswith("v_frexp_exp") or name == "v_pack_b32_f16":
        t = ""
    else:
        t = name.rsplit("_", 1)[-1]
    return {"f16": "F16", "f32": "F32", "f64": "F64"}.get(t, "None")


def f32_result(name):
    """Whether output modifiers and clamp act on the result as an f32: f32 arithmetic (by its
    sources or its name) other than a conversion, and the conversions to f32."""
    cvt_to_f32 = name.startswith("v_cvt_f32") or name == "v_cvt_off_f32_i4"
    if name.startswith("v_cvt_"):
        return cvt_to_f32
    return src_fp(name) == "F32" or name.endswith("_f32")


# --- compares ------------------------------------------------------------------------------

FCONDS = "f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru".split()
ICONDS = "f lt eq le gt ne ge t".split()


def compare(name):
    """`Some(Compare { cond, ty, exec })` of a VOPC compare (`v_cmp[x]_<cond>_<type>`) or a
    SOPC/SOPK compare (`s_cmp[k]_<cond>_<type>`, `s_bitcmp0/1_<type>`)."""
    if name.startswith("v_cmp"):
        rest = name[len("v_cmp"):]
        x = rest.startswith("x_")
        rest = rest[2:] if x else rest[1:]
        cond, ty = rest.rsplit("_", 1)
    elif name.startswith("s_cmp_") or name.startswith("s_cmpk_"):
        x = False
        cond, ty = name.split("_", 2)[2].split("_")
    elif name.startswith("s_bitcmp"):
        x = False
        cond, ty = "bit" + name[len("s_bitcmp")], name.rsplit("_", 1)[1]
    else:
        return "None"
    c = {"bit0": "Bit0", "bit1": "Bit1", "class": "Class"}.get(cond, camel(cond))
    return "Some(Compare { cond: Cond::%s, ty: Ty::%s, exec: %s })" % (
        c, camel(ty), "true" if x else "false")


# --- atomics -------------------------------------------------------------------------------

def atomic(enc, name):
    """`Some(Atomic { op, wide })` of an atomic: FLAT/GLOBAL/MUBUF/SMEM/MIMG `*_atomic_<op>[_x2]`
    and the LDS atomics `ds_<op>[_rtn]_<type>` (also their `_src2_` forms)."""
    if "_atomic_" in name or name.startswith("image_atomic_"):
        ty = name.split("atomic_", 1)[1]
        wide = ty.endswith("_x2") or ty in ("add_f64", "min_f64", "max_f64")
        base = ty[:-3] if ty.endswith("_x2") else ty
        op = {"swap": "Swap", "cmpswap": "CmpSwap", "add": "Add", "sub": "Sub",
              "smin": "Smin", "umin": "Umin", "smax": "Smax", "umax": "Umax", "and": "And",
              "or": "Or", "xor": "Xor", "inc": "Inc", "dec": "Dec", "add_f32": "AddF32",
              "pk_add_f16": "PkAddF16", "pk_add_bf16": "PkAddBf16", "add_f64": "AddF64",
              "min_f64": "MinF64", "max_f64": "MaxF64"}.get(base)
        if op is None:
            return "None"
        return "Some(Atomic { op: AtomicOp::%s, wide: %s })" % (op, "true" if wide else "false")
    if enc != "DS":
        return "None"
    rest = name[len("ds_"):].replace("_rtn", "").replace("_src2", "")
    packed = {"pk_add_f16": "PkAddF16", "pk_add_bf16": "PkAddBf16"}.get(rest)
    if packed:
        return "Some(Atomic { op: AtomicOp::%s, wide: false })" % packed
    if rest == "add_f64":
        return "Some(Atomic { op: AtomicOp::AddF64, wide: true })"
    if "_" not in rest:
        return "None"
    op, ty = rest.rsplit("_", 1)
    if ty in ("u32", "i32", "b32", "f32"):
        wide = False
    elif ty in ("u64", "i64", "b64", "f64"):
        wide = True
    else:
        return "None"
    kind = ty[0]
    table = {("add", "u"): "Add", ("sub", "u"): "Sub", ("rsub", "u"): "Rsub",
             ("inc", "u"): "Inc", ("dec", "u"): "Dec", ("min", "i"): "Smin",
             ("max", "i"): "Smax", ("min", "u"): "Umin", ("max", "u"): "Umax",
             ("min", "f"): "MinF", ("max", "f"): "MaxF", ("and", "b"): "And", ("or", "b"): "Or",
             ("xor", "b"): "Xor", ("mskor", "b"): "Mskor", ("cmpst", "b"): "Cmpst",
             ("cmpst", "f"): "CmpstF", ("wrxchg", "b"): "Swap"}
    a = table.get((op, kind))
    if (op, kind) == ("add", "f") and not wide:
        a = "DsAddF32"
    if (op, kind) == ("wrap", "b") and not wide:
        a = "Wrap"
    if "_src2_" in name and (op, kind) == ("write", "b"):
        a = "Swap"
    if a is None:
        return "None"
    return "Some(Atomic { op: AtomicOp::%s, wide: %s })" % (a, "true" if wide else "false")


# --- memory types --------------------------------------------------------------------------

MEM_TYPES = {"ubyte": "Ubyte", "sbyte": "Sbyte", "ushort": "Ushort", "sshort": "Sshort",
             "byte": "Byte", "short": "Short", "dword": "Dword", "dwordx2": "Dword",
             "dwordx3": "Dword", "dwordx4": "Dword", "short_d16": "ShortD16",
             "short_d16_hi": "ShortD16Hi", "ubyte_d16": "UbyteD16",
             "ubyte_d16_hi": "UbyteD16Hi", "sbyte_d16": "SbyteD16",
             "sbyte_d16_hi": "SbyteD16Hi", "byte_d16_hi": "ByteD16Hi"}


def mem(enc, name):
    """`Some(Mem { dir, ty })` of a FLAT/GLOBAL/SCRATCH or MUBUF/MTBUF access: a load, store or
    atomic and the type after `load_`/`store_` (format forms: components, d16, d16_hi); SMEM
    loads, stores and atomics (dwords)."""
    if enc == "SMEM":
        if "_atomic_" in name or name.startswith("s_atomic_"):
            return "Some(Mem { dir: Dir::Atomic, ty: MemTy::Dword })"
        if "_store_" in name:
            return "Some(Mem { dir: Dir::Store, ty: MemTy::Dword })"
        if "_load_" in name:
            return "Some(Mem { dir: Dir::Load, ty: MemTy::Dword })"
        return "None"
    if enc == "FLAT":
        rest = name.split("_", 1)[1]
    elif enc in ("MUBUF", "MTBUF"):
        rest = name.split("buffer_", 1)[1]
    else:
        return "None"
    if rest.startswith("atomic_"):
        return "Some(Mem { dir: Dir::Atomic, ty: MemTy::Dword })"
    # The LDS forms (`*_load_lds_<type>`, `buffer_store_lds_dword`): the type after `lds_`.
    rest = rest.replace("_lds_", "_")
    for d in ("load", "store"):
        if rest.startswith(d + "_"):
            ty = rest[len(d) + 1:]
            if ty.startswith("format_"):
                comps = len(ty.rsplit("_", 1)[1])
                mt = "Format { comps: %d, d16: %s, hi: %s }" % (
                    comps, "true" if "d16" in ty else "false",
                    "true" if "d16_hi" in ty else "false")
            else:
                mt = MEM_TYPES[ty]
            return "Some(Mem { dir: Dir::%s, ty: MemTy::%s })" % (camel(d), mt)
    return "None"


# --- execution class -----------------------------------------------------------------------

def to_lds(name):
    """Whether a memory instruction moves data between memory and LDS instead of VGPRs
    (`global_load_lds_*`, `scratch_load_lds_*`, `buffer_store_lds_dword`)."""
    return "_load_lds_" in name or name == "buffer_store_lds_dword"


def op_sel_operands(name):
    """Whether a VOP3 instruction with no f16 operands keeps VOP3 op_sel as an operand field
    (LLVM prints it; the interpreter reads it): the FP8/BF8 packs and stochastic-rounding
    conversions select the result's word (gfx940), and on gfx950 the scaled conversions and
    the f16/bf16 stochastic-rounding conversions select halves or bytes, `v_ashr_pk_*`
    selects the result's half, and the lane swaps hold `fi` (bit 0) and `bound_ctrl`
    (bit 1) there (CDNA3/CDNA4 ISA, VOP3 op_sel)."""
    return (name.startswith("v_cvt_scalef32_")
            or name in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32", "v_cvt_sr_fp8_f32",
                        "v_cvt_sr_bf8_f32", "v_cvt_sr_f16_f32", "v_cvt_sr_bf16_f32",
                        "v_ashr_pk_i8_i32", "v_ashr_pk_u8_i32", "v_permlane16_swap_b32",
                        "v_permlane32_swap_b32"))


def op_class(enc, name, flags):
    """Which routine of the interpreter runs the instruction."""
    if "notrun" in flags.split():
        return "NotRun"
    if name.startswith("s_set_gpr_idx_"):
        return "SetGprIdx"
    if enc in ("SOP1", "SOP2", "SOPC", "SOPK"):
        return "Salu"
    if enc == "SOPP":
        return "Sopp"
    if enc == "SMEM":
        if name.startswith(("s_dcache_", "s_atc_probe")):
            return "SmemCache"
        if name in ("s_memtime", "s_memrealtime"):
            return "SmemClock"
        if name.startswith("s_scratch_"):
            return "SmemScratch"
        if name.startswith("s_buffer_"):
            return "SmemBuffer"
        if name.startswith(("s_store_", "s_atomic_")):
            return "SmemAddr"
        return "SmemLoad"
    if name.startswith(("v_mfma_", "v_smfmac_")):
        return "Mfma"
    if name.startswith("v_accvgpr_"):
        return "Accvgpr"
    if enc == "VOP3P":
        if name.startswith("v_dot"):
            return "Dot"
        if name.startswith("v_fma_mix") or name.startswith("v_mad_mix"):
            return "Mix"
        return "Packed"
    if enc in ("VOP1", "VOP2", "VOPC", "VOP3"):
        return "Valu"
    if enc == "DS":
        if name in ("ds_swizzle_b32", "ds_permute_b32", "ds_bpermute_b32"):
            return "DsLane"
        if name.startswith("ds_gws_"):
            return "DsGws"
        if "_src2_" in name:
            return "DsSrc2"
        return "Ds"
    if enc == "FLAT":
        return {"flat": "Flat", "global": "Global", "scratch": "Scratch"}[name.split("_")[0]]
    if enc in ("MUBUF", "MTBUF"):
        if name.startswith(("buffer_wb", "buffer_inv")):
            return "BufferCache"
        return "Buffer"
    if enc == "MIMG":
        return "Image"
    raise ValueError(name)


# --- MODE rounding -------------------------------------------------------------------------

DIRECTED = set("""v_add_f32 v_sub_f32 v_subrev_f32 v_mul_f32 v_fma_f32 v_fmac_f32 v_mad_f32
v_mac_f32 v_madmk_f32 v_madak_f32 v_fmamk_f32 v_fmaak_f32 v_mul_legacy_f32 v_add_f64 v_mul_f64
v_fma_f64 v_fmac_f64 v_add_f16 v_sub_f16 v_subrev_f16 v_mul_f16 v_fma_f16 v_pk_add_f16
v_pk_mul_f16 v_pk_fma_f16 v_pk_fmac_f16 v_pk_add_f32 v_pk_mul_f32 v_pk_fma_f32 v_fma_mix_f32
v_fma_mixlo_f16 v_fma_mixhi_f16 v_cvt_f32_f64 v_cvt_f32_i32 v_cvt_f32_u32 v_cvt_f16_f32
v_cvt_f16_u16 v_cvt_f16_i16 v_ldexp_f32 v_ldexp_f64 v_ldexp_f16 v_mad_f16 v_mac_f16
v_madmk_f16 v_madak_f16 v_mad_legacy_f32""".split())
SCALED_FMA = {"v_div_fmas_f32", "v_div_fmas_f64"}
APPROXIMATE = ("v_rcp", "v_rsq", "v_sqrt", "v_exp", "v_log", "v_sin", "v_cos")
MODE_INDEPENDENT = set("""v_cvt_f64_i32 v_cvt_off_f32_i4 v_cvt_f64_u32 v_cvt_i32_f32
v_cvt_u32_f32 v_cvt_i32_f64 v_cvt_u32_f64 v_cvt_i16_f16 v_cvt_u16_f16 v_cvt_rpi_i32_f32
v_cvt_flr_i32_f32 v_cvt_pkrtz_f16_f32 v_pk_min_f16 v_pk_max_f16 v_pack_b32_f16""".split())


def rounding(name):
    """How a directed MODE.FP_ROUND applies: `Exact` (the result is the same in every mode),
    `Directed`/`ScaledFma` (rounded by the mode), or `Unmodelled` with the reason."""
    exact = (name.startswith(("v_cmp", "v_min", "v_max", "v_med3", "v_mov", "v_cndmask",
                              "v_accvgpr", "v_frexp", "v_div_scale_", "v_div_fixup_",
                              "v_cvt_f32_ubyte", "v_cube", "v_cvt_f32_fp8", "v_cvt_f32_bf8",
                              "v_cvt_pk_f32_fp8", "v_cvt_pk_f32_bf8", "v_cvt_pk_fp8",
                              "v_cvt_pk_bf8", "v_cvt_sr_", "v_cvt_scalef32_", "v_prng_",
                              "v_cvt_pk_f16_f32", "v_cvt_pk_bf16_f32", "v_ashr_pk_",
                              "v_pk_minimum3_", "v_pk_maximum3_"))
             or name in MODE_INDEPENDENT or name.startswith(APPROXIMATE)
             or name.startswith(("v_floor", "v_ceil", "v_trunc", "v_rndne", "v_cvt_f64_f32",
                                 "v_cvt_f32_f16")))
    if exact:
        return "Exact"
    if name in DIRECTED:
        return "Directed"
    if name in SCALED_FMA:
        return "ScaledFma"
    if name.startswith("v_dot"):
        return "Unmodelled(Unmodelled::Dot)"
    if name.startswith(("v_mfma", "v_smfmac")):
        return "Unmodelled(Unmodelled::Mfma)"
    if name.startswith("v_mad_mix"):
        return "Unmodelled(Unmodelled::MadMix)"
    return "Unmodelled(Unmodelled::Other)"


def fp_names(name):
    """Bit 0: the mnemonic names f32; bit 1: it names f64 or f16 (which FP_ROUND field a
    directed mode must leave at nearest for it)."""
    return (1 if "f32" in name else 0) | (2 if ("f64" in name or "f16" in name) else 0)


# --- MFMA shape ----------------------------------------------------------------------------

def mfma(name, widths):
    """`Some(Mfma { m, n, k, elem, b_elem, f64_out, sparse })` parsed from
    `v_mfma_<out>_<M>x<N>x<K>...<type>` (gfx908/gfx90a and gfx940 spellings, `<a>_<b>` for the
    FP8/BF8 pairs) and `v_smfmac_<out>_<M>x<N>x<K>_<type>` (4:2-sparse A); `None` for other
    instructions."""
    sparse = name.startswith("v_smfmac_")
    if not name.startswith("v_mfma_") and not sparse:
        return "None"
    rest = name[len("v_smfmac_" if sparse else "v_mfma_"):]
    out, rest = rest[:4], rest[4:]
    dims = []
    tail = rest
    for d in range(3):
        i = 0
        while i < len(tail) and tail[i].isdigit():
            i += 1
        if i == 0:
            return "None"
        dims.append(int(tail[:i]))
        tail = tail[i:]
        if d < 2:
            if not tail.startswith("x"):
                return "None"
            tail = tail[1:]
    f8 = [t for t in tail.split("_") if t in ("fp8", "bf8")]
    if tail.endswith("_f8f6f4"):
        # gfx950: each matrix's format comes from cbsz (A) and blgp (B) at run time.
        elem = b_elem = "F8f6f4"
    elif len(f8) == 2:
        elem, b_elem = ("Fp8" if f8[0] == "fp8" else "Bf8"), ("Fp8" if f8[1] == "fp8" else "Bf8")
    else:
        for t, e in (("xf32", "Xf32"), ("bf16", "Bf16"), ("f16", "F16"), ("i8", "I8"),
                     ("f64", "F64"), ("f32", "F32")):
            if t in tail:
                elem = e
                break
        else:
            return "None"
        b_elem = elem
    return ("Some(Mfma { m: %d, n: %d, k: %d, elem: Elem::%s, b_elem: Elem::%s, f64_out: %s, "
            "sparse: %s })" % (dims[0], dims[1], dims[2], elem, b_elem,
                               "true" if out == "f64_" else "false",
                               "true" if sparse else "false"))


def emit(out, rows, targets_of, bits):
    """Writes the `Op` enum and the attribute table for `rows` (encoding, name, widths,
    flags), `targets_of[name]` the CPUs that have the mnemonic."""
    names = []
    first = {}
    for e, n, w, f in rows:
        if n not in first:
            first[n] = (e, w, f)
            names.append(n)
    variants = [camel(n) for n in names]
    assert len(set(variants)) == len(variants), "two mnemonics give one Op name"
    out.write("\n/// Every GFX9 instruction the decoder knows: one variant per mnemonic (without the\n")
    out.write("/// `_e32`/`_e64`/`_sdwa`/`_dpp` suffix), in table order. Its attributes:\n")
    out.write("/// [`Op::attrs`].\n")
    out.write("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\n")
    out.write("#[repr(u16)]\n#[non_exhaustive]\n#[allow(missing_docs)]\npub enum Op {\n")
    for n, v in zip(names, variants):
        out.write("    %s,\n" % v)
    out.write("}\n\n")
    out.write("impl Op {\n    /// Number of instructions.\n    pub const COUNT: usize = %d;\n" % len(names))
    out.write("    /// Every instruction, in table order.\n    pub const ALL: [Op; Op::COUNT] = [\n")
    for v in variants:
        out.write("        Op::%s,\n" % v)
    out.write("    ];\n}\n\n")
    out.write("/// The attributes of each [`Op`], indexed by `op as usize`.\n")
    out.write("#[rustfmt::skip]\npub(crate) static ATTRS: [OpAttrs; Op::COUNT] = [\n")
    for n in names:
        e, w, f = first[n]
        t = targets_of.get(n, [])
        tb = " | ".join(bits[c] for c in t) or "0"
        out.write("    OpAttrs { name: \"%s\", targets: %s, class: Class::%s, src_fp: Fp::%s, "
                  "out_f16: %s, f32_result: %s, result_fp: Fp::%s, cvt: %s, fp_names: %d, "
                  "rounding: Rounding::%s, compare: %s, atomic: %s, mem: %s, to_lds: %s, "
                  "op_sel_operands: %s, mfma: %s },\n"
                  % (n, tb, op_class(e, n, f), src_fp(n), "true" if out_f16(n) else "false",
                     "true" if f32_result(n) else "false", result_fp(n),
                     "true" if n.startswith("v_cvt_") else "false", fp_names(n), rounding(n),
                     compare(n), atomic(e, n), mem(e, n), "true" if to_lds(n) else "false",
                     "true" if op_sel_operands(n) else "false", mfma(n, w)))
    out.write("];\n")
    return dict(zip(names, variants))
