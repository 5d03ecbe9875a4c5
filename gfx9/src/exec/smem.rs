//! Scalar memory (SMEM): loads, scalar buffer loads/stores/atomics through a V#, scalar
//! scratch, the clock counters. Vega ISA §4.3 "Scalar memory operations", §12.6.

#[allow(unused_imports)]
use super::*;

/// The byte offset an SMEM instruction adds to its base (Vega ISA "Scalar Memory
/// Operations"): the SGPR `OFFSET` names (zero-extended), the signed 21-bit immediate, or
/// with `soe` the SGPR in SOFFSET plus the immediate.
pub(crate) fn smem_offset(w: &Wave, inst: &Instruction) -> u64 {
    if inst.src[1] == Operand::None {
        return inst.imm as i64 as u64;
    }
    let sgpr = scalar(w, &inst.src[1], false, false) as u32 as u64;
    if inst.mods.smem_soe {
        sgpr.wrapping_add(inst.imm as i64 as u64)
    } else {
        sgpr
    }
}

/// `s_memtime` and `s_memrealtime`: the 64-bit counter into the destination SGPR pair,
/// both from [`DeviceMemory::clock_counter`] (Vega ISA SMEM: `s_memtime` returns the shader
/// clock counter, `s_memrealtime` the real-time "REFCLK" counter; the emulated device has
/// one clock for both).
pub(crate) fn clock_counter(ctx: &Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) {
    let t = ctx.memory.clock_counter();
    set_sdst(w, &inst.dst, t);
}

/// Scalar buffer loads, scalar stores and scalar atomics through an address or a V# (Vega
/// ISA §4.3 "Scalar memory operations", SMEM opcodes 8..=12, 16..=18, 24..=26, 64..=76,
/// 96..=108, 128..=140, 160..=172).
///
/// Atomics operate on the dword (qword for `_x2`) at the address as the FLAT/MUBUF atomics
/// of the same name do; the data is SDATA (for `cmpswap` the source, then the compare value);
/// with GLC the pre-op value is written back to SDATA's first dword(s). A buffer atomic is
/// range-checked all or nothing (out of range: memory untouched, 0 returned).
///
/// The byte offset is the immediate or the SGPR offset, the low two bits cleared. `s_store_*`
/// write the SDATA registers at SBASE (an SGPR pair) + offset. The `s_buffer_*` forms take the
/// base address from V# bits 47:0 and bound the access by NUM_RECORDS: the buffer's size in
/// bytes is NUM_RECORDS when STRIDE is 0 or SWIZZLE_EN clear, else NUM_RECORDS × STRIDE; each
/// dword whose byte offset is at or beyond it reads as 0 (a load) or is not written (a store).
/// There is no scalar cache in the emulator: stores write memory at once, loads read it.
///
/// # Errors
/// The memory's error for an access outside the device's memory.
pub(crate) fn scalar_memory(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let Operand::Sreg { index: sbase, .. } = inst.src[0] else {
        return Err(not_implemented(inst));
    };
    let sbase = usize::from(sbase);
    let off = smem_offset(w, inst) & !3;
    let attrs = inst.op().attrs();
    let (base, limit) = if attrs.class == Class::SmemBuffer {
        let v: [u32; 4] = core::array::from_fn(|k| w.sreg.get(sbase + k).copied().unwrap_or(0));
        let stride = u64::from(v[1] >> 16 & 0x3FFF);
        let swizzle = v[1] >> 31 != 0;
        let records = u64::from(v[2]);
        let bytes = if stride == 0 || !swizzle {
            records
        } else {
            records * stride
        };
        (
            u64::from(v[0]) | u64::from(v[1] & 0xFFFF) << 32,
            Some(bytes),
        )
    } else {
        (w.sreg64(sbase), None)
    };
    let Operand::Sreg { index: data, .. } = inst.dst else {
        return Err(not_implemented(inst));
    };
    let data = usize::from(data);
    if let Some(atomic) = attrs.atomic {
        let f = atomic_op(atomic.op).ok_or_else(|| not_implemented(inst))?;
        let wide = atomic.wide;
        let dw = if wide { 2 } else { 1 };
        let reg = |k: usize| u64::from(w.sreg.get(data + k).copied().unwrap_or(0));
        let pair = |k: usize| reg(k) | if wide { reg(k + 1) << 32 } else { 0 };
        let (src, cmp) = (pair(0), pair(dw));
        // All or nothing: out of range, memory is untouched and the value returned is 0.
        let in_range =
            limit.is_none_or(|l| off.checked_add(4 * dw as u64).is_some_and(|end| end <= l));
        let addr = base.wrapping_add(off);
        let old = if !in_range {
            0
        } else if wide {
            ctx.memory
                .atomic_rmw_u64(addr, &mut |o| f(o, src, cmp, true))?
        } else {
            let old = ctx
                .memory
                .atomic_rmw_u32(addr, &mut |o| f(u64::from(o), src, cmp, false) as u32)?;
            u64::from(old)
        };
        if inst.mods.smem_glc {
            for k in 0..dw {
                if let Some(r) = w.sreg.get_mut(data + k) {
                    *r = (old >> (32 * k)) as u32;
                }
            }
        }
        return Ok(());
    }
    let n = usize::from(inst.info.widths[0]);
    let store = attrs.mem.is_some_and(|m| m.dir == op::Dir::Store);
    for k in 0..n {
        let o = off.wrapping_add(4 * k as u64);
        let in_range = limit.is_none_or(|l| o < l);
        let addr = base.wrapping_add(o);
        if store {
            let v = w.sreg.get(data + k).copied().unwrap_or(0);
            if in_range {
                ctx.memory.write(addr, &v.to_le_bytes())?;
            }
        } else {
            let mut b = [0u8; 4];
            if in_range {
                ctx.memory.read(addr, &mut b)?;
            }
            if let Some(r) = w.sreg.get_mut(data + k) {
                *r = u32::from_le_bytes(b);
            }
        }
    }
    Ok(())
}

/// `s_scratch_load_dword[x2,x4]` and `s_scratch_store_dword[x2,x4]` (Vega ISA SMEM opcodes
/// 5..=7, 21..=23): SDATA's dwords from or to the wave's scratch at FLAT_SCRATCH plus the
/// immediate or SGPR byte offset, its low two bits cleared. The SBASE field is not used (the
/// hardware supplies FLAT_SCRATCH instead: AMDGPU's assembler reference, gfx9 `sbase` of the
/// scalar scratch instructions). The access is one per wave, so there is no per-lane
/// swizzle: the bytes are at that address of the queue's scratch backing, as a `global_`
/// access of FLAT_SCRATCH + offset sees them.
///
/// # Errors
/// The memory's error for an address outside the device's memory.
pub(crate) fn scalar_scratch(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
) -> Result<()> {
    let Operand::Sreg { index: data, .. } = inst.dst else {
        return Err(not_implemented(inst));
    };
    let data = usize::from(data);
    let off = smem_offset(w, inst) & !3;
    let base = w.sreg64(FLAT_SCRATCH).wrapping_add(off);
    let store = inst
        .op()
        .attrs()
        .mem
        .is_some_and(|m| m.dir == op::Dir::Store);
    for k in 0..usize::from(inst.info.widths[0]) {
        let addr = base.wrapping_add(4 * k as u64);
        if store {
            let v = w.sreg.get(data + k).copied().unwrap_or(0);
            write_global(ctx, addr, &v.to_le_bytes())?;
        } else {
            let mut b = [0u8; 4];
            read_global(ctx, addr, &mut b)?;
            if let Some(r) = w.sreg.get_mut(data + k) {
                *r = u32::from_le_bytes(b);
            }
        }
    }
    Ok(())
}

/// `s_load_dword[x2..x16]` (Vega ISA SMEM opcodes 0..=4): `n` dwords at the SGPR-pair base
/// plus the offset ([`smem_offset`]), the low two bits cleared, into SDATA.
///
/// # Errors
/// The memory's error for an access outside the device's memory.
pub(crate) fn scalar_load(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let base = w.sreg64(match inst.src[0] {
        Operand::Sreg { index, .. } => index as usize,
        _ => 0,
    });
    let off = smem_offset(w, inst);
    let addr = base.wrapping_add(off) & !3;
    let n = inst.info.widths[0] as usize;
    let mut buf = [0u8; 64];
    ctx.memory.read(addr, &mut buf[..n * 4])?;
    if let Operand::Sreg { index, .. } = inst.dst {
        for k in 0..n {
            let b = &buf[k * 4..k * 4 + 4];
            if let Some(r) = w.sreg.get_mut(index as usize + k) {
                *r = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
    }
    Ok(())
}
