//! Local data share (DS): LDS reads, writes, atomics, the src2 forms and the lane moves.
//! Vega ISA §11 and §12.13.

#[allow(unused_imports)]
use super::*;

pub(crate) fn lds_read(lds: &[u8], addr: u64, buf: &mut [u8]) {
    let n = buf.len();
    match usize::try_from(addr)
        .ok()
        .and_then(|a| lds.get(a..a.checked_add(n)?))
    {
        Some(src) => buf.copy_from_slice(src),
        None => buf.fill(0),
    }
}

pub(crate) fn lds_write(lds: &mut [u8], addr: u64, data: &[u8]) {
    let n = data.len();
    if let Some(dst) = usize::try_from(addr).ok().and_then(|a| {
        let end = a.checked_add(n)?;
        lds.get_mut(a..end)
    }) {
        dst.copy_from_slice(data);
    }
}

pub(crate) fn ds(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    if inst.mods.gds {
        return Err(error!(
            Status::IllegalInstruction,
            "{}: GDS not implemented",
            inst.name()
        ));
    }
    let op = inst.op();
    let exec = w.exec();
    let o0 = (inst.imm & 0xFF) as u64;
    let o1 = (inst.imm >> 8 & 0xFF) as u64;
    let offset = inst.imm as u64;
    let wd = inst.info.widths;
    // M0[15:0]: the LDS address base of the append/consume counters and the lane-indexed
    // accesses (CDNA3 ISA DS_READ_ADDTID_B32 pseudocode; Vega ISA DS_APPEND).
    let m0_base = u64::from(w.sreg[M0] & 0xFFFF);
    match op {
        Op::DsNop => return Ok(()),
        // DS_APPEND / DS_CONSUME (Vega ISA DS 190, 189): the dword at M0[15:0] + offset is
        // incremented (decremented) by the number of active lanes, and every active lane
        // gets its value from before.
        Op::DsAppend | Op::DsConsume => {
            let addr = m0_base + offset;
            let mut b = [0u8; 4];
            lds_read(ctx.lds, addr, &mut b);
            let old = u32::from_le_bytes(b);
            let n = exec.count_ones();
            let new = if op == Op::DsAppend {
                old.wrapping_add(n)
            } else {
                old.wrapping_sub(n)
            };
            if exec != 0 {
                lds_write(ctx.lds, addr, &new.to_le_bytes());
            }
            for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
                set_vdst(w, &inst.dst, lane, u64::from(old), 1);
            }
            return Ok(());
        }
        _ => {}
    }
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let base = vsrc(w, &inst.src[0], lane, false, false) as u32 as u64;
        // The LDS address is the 32-bit sum of ADDR and the offset: a negative ADDR (LLVM
        // folds `base - 8` into `offset:256` on gfx9, where DS offsets are usable with any
        // base) wraps into the work-group's LDS.
        let at = move |o: u64| u64::from((base as u32).wrapping_add(o as u32));
        let d0 = vsrc(w, &inst.src[1], lane, wd[2] == 2, false);
        let d1 = vsrc(w, &inst.src[2], lane, wd[3] == 2, false);
        let mut b = [0u8; 16];
        match op {
            Op::DsWriteB8 => lds_write(ctx.lds, at(offset), &[d0 as u8]),
            // 96-bit accesses (Vega ISA DS 222, 254): three dwords.
            Op::DsWriteB96 => {
                for k in 0..3 {
                    let v = vsrc_dword(w, &inst.src[1], lane, k);
                    b[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
                }
                lds_write(ctx.lds, at(offset), &b[..12]);
            }
            Op::DsReadB96 => {
                lds_read(ctx.lds, at(offset), &mut b[..12]);
                for k in 0..3 {
                    let v =
                        u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
                    set_vdst_dword(w, &inst.dst, lane, k, v);
                }
            }
            // The lane-indexed accesses (Vega ISA DS 29, 182): the dword at M0[15:0] +
            // offset + lane × 4.
            Op::DsWriteAddtidB32 => {
                let addr = m0_base + offset + 4 * lane as u64;
                lds_write(ctx.lds, addr, &(d0 as u32).to_le_bytes());
            }
            Op::DsReadAddtidB32 => {
                let addr = m0_base + offset + 4 * lane as u64;
                lds_read(ctx.lds, addr, &mut b[..4]);
                set_vdst(
                    w,
                    &inst.dst,
                    lane,
                    u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    1,
                );
            }
            Op::DsWriteB16 => lds_write(ctx.lds, at(offset), &(d0 as u16).to_le_bytes()),
            Op::DsWriteB32 => lds_write(ctx.lds, at(offset), &(d0 as u32).to_le_bytes()),
            Op::DsWriteB64 => lds_write(ctx.lds, at(offset), &d0.to_le_bytes()),
            Op::DsWriteB128 => {
                let r = match inst.src[1] {
                    Operand::Vgpr { index, .. } => index as usize,
                    _ => 0,
                };
                for k in 0..4 {
                    b[k * 4..k * 4 + 4].copy_from_slice(&w.v(r + k, lane).to_le_bytes());
                }
                lds_write(ctx.lds, at(offset), &b);
            }
            Op::DsWrite2B32 | Op::DsWrite2st64B32 | Op::DsWrite2B64 | Op::DsWrite2st64B64 => {
                let size = if matches!(op, Op::DsWrite2B64 | Op::DsWrite2st64B64) {
                    8
                } else {
                    4
                };
                let scale = if matches!(op, Op::DsWrite2st64B32 | Op::DsWrite2st64B64) {
                    size * 64
                } else {
                    size
                };
                let (v0, v1) = (d0.to_le_bytes(), d1.to_le_bytes());
                lds_write(ctx.lds, at(o0 * scale), &v0[..size as usize]);
                lds_write(ctx.lds, at(o1 * scale), &v1[..size as usize]);
            }
            Op::DsReadB32
            | Op::DsReadU8
            | Op::DsReadI8
            | Op::DsReadU16
            | Op::DsReadI16
            | Op::DsReadB64
            | Op::DsReadB128 => {
                let n = match op {
                    Op::DsReadU8 | Op::DsReadI8 => 1,
                    Op::DsReadU16 | Op::DsReadI16 => 2,
                    Op::DsReadB32 => 4,
                    Op::DsReadB64 => 8,
                    _ => 16,
                };
                lds_read(ctx.lds, at(offset), &mut b[..n]);
                let lo = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
                let v = match op {
                    Op::DsReadI8 => lo as u8 as i8 as i32 as u32 as u64,
                    Op::DsReadI16 => lo as u16 as i16 as i32 as u32 as u64,
                    _ => lo,
                };
                set_vdst(w, &inst.dst, lane, v, (n as u8).div_ceil(4).min(2));
                if n == 16 {
                    let hi = u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
                    if let Operand::Vgpr { index, .. } = inst.dst {
                        w.set_v(index as usize + 2, lane, hi as u32);
                        w.set_v(index as usize + 3, lane, (hi >> 32) as u32);
                    }
                }
            }
            Op::DsRead2B32 | Op::DsRead2st64B32 | Op::DsRead2B64 | Op::DsRead2st64B64 => {
                let size = if matches!(op, Op::DsRead2B64 | Op::DsRead2st64B64) {
                    8usize
                } else {
                    4
                };
                let scale = if matches!(op, Op::DsRead2st64B32 | Op::DsRead2st64B64) {
                    size as u64 * 64
                } else {
                    size as u64
                };
                lds_read(ctx.lds, at(o0 * scale), &mut b[..size]);
                let (lo, hi) = b.split_at_mut(size);
                lds_read(ctx.lds, at(o1 * scale), &mut hi[..size]);
                let _ = lo;
                if let Operand::Vgpr { index, .. } = inst.dst {
                    for k in 0..(2 * size / 4) {
                        let v = u32::from_le_bytes([
                            b[k * 4],
                            b[k * 4 + 1],
                            b[k * 4 + 2],
                            b[k * 4 + 3],
                        ]);
                        w.set_v(index as usize + k, lane, v);
                    }
                }
            }
            Op::DsAddU32
            | Op::DsSubU32
            | Op::DsMinU32
            | Op::DsMaxU32
            | Op::DsAndB32
            | Op::DsOrB32
            | Op::DsXorB32
            | Op::DsAddRtnU32 => {
                let addr = at(offset);
                lds_read(ctx.lds, addr, &mut b[..4]);
                let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let v = d0 as u32;
                let new = match op {
                    Op::DsAddU32 | Op::DsAddRtnU32 => old.wrapping_add(v),
                    Op::DsSubU32 => old.wrapping_sub(v),
                    Op::DsMinU32 => old.min(v),
                    Op::DsMaxU32 => old.max(v),
                    Op::DsAndB32 => old & v,
                    Op::DsOrB32 => old | v,
                    _ => old ^ v,
                };
                lds_write(ctx.lds, addr, &new.to_le_bytes());
                set_vdst(w, &inst.dst, lane, old as u64, 1);
            }
            // D16 forms (Vega ISA DS opcodes 84..91): the high half of the data is stored; a
            // read replaces one half of the VGPR, keeping the other.
            Op::DsWriteB8D16Hi => lds_write(ctx.lds, at(offset), &[(d0 >> 16) as u8]),
            Op::DsWriteB16D16Hi => {
                lds_write(ctx.lds, at(offset), &((d0 >> 16) as u16).to_le_bytes())
            }
            Op::DsReadU8D16
            | Op::DsReadU8D16Hi
            | Op::DsReadI8D16
            | Op::DsReadI8D16Hi
            | Op::DsReadU16D16
            | Op::DsReadU16D16Hi => {
                let wide = matches!(op, Op::DsReadU16D16 | Op::DsReadU16D16Hi);
                lds_read(ctx.lds, at(offset), &mut b[..if wide { 2 } else { 1 }]);
                let h = if wide {
                    u16::from_le_bytes([b[0], b[1]])
                } else if matches!(op, Op::DsReadI8D16 | Op::DsReadI8D16Hi) {
                    b[0] as i8 as i16 as u16
                } else {
                    u16::from(b[0])
                };
                let old = if w.sramecc {
                    0
                } else {
                    vsrc_dword(w, &inst.dst, lane, 0)
                };
                let v = if matches!(
                    op,
                    Op::DsReadU8D16Hi | Op::DsReadI8D16Hi | Op::DsReadU16D16Hi
                ) {
                    old & 0xFFFF | u32::from(h) << 16
                } else {
                    old & 0xFFFF_0000 | u32::from(h)
                };
                set_vdst_dword(w, &inst.dst, lane, 0, v);
            }
            Op::DsWrxchg2RtnB32
            | Op::DsWrxchg2st64RtnB32
            | Op::DsWrxchg2RtnB64
            | Op::DsWrxchg2st64RtnB64 => {
                // Two exchanges, each address scaled as ds_write2[st64]'s; the old values go
                // to the destination in offset order (dword pair or qword pair).
                let size = if matches!(op, Op::DsWrxchg2RtnB64 | Op::DsWrxchg2st64RtnB64) {
                    8usize
                } else {
                    4
                };
                let st64 = matches!(op, Op::DsWrxchg2st64RtnB32 | Op::DsWrxchg2st64RtnB64);
                let scale = size as u64 * if st64 { 64 } else { 1 };
                for (k, (o, d)) in [(o0, d0), (o1, d1)].into_iter().enumerate() {
                    let addr = at(o * scale);
                    let mut old = [0u8; 8];
                    lds_read(ctx.lds, addr, &mut old[..size]);
                    lds_write(ctx.lds, addr, &d.to_le_bytes()[..size]);
                    for j in 0..size / 4 {
                        let v = u32::from_le_bytes([
                            old[4 * j],
                            old[4 * j + 1],
                            old[4 * j + 2],
                            old[4 * j + 3],
                        ]);
                        set_vdst_dword(w, &inst.dst, lane, k * size / 4 + j, v);
                    }
                }
            }
            Op::DsCondxchg32RtnB64 => {
                // Two dwords at (ADDR + {OFFSET1, OFFSET0}) & 0xFFF8 and 4 bytes above; each
                // returned, and replaced by the matching data dword with bit 31 cleared when
                // that dword's bit 31 is set (the pseudocode of AMD's CDNA4 ISA guide, DS
                // opcode 126 there as on every gfx9 target).
                let addr0 = (base as u32).wrapping_add(offset as u32) as u64 & 0xFFF8;
                for k in 0..2 {
                    let addr = addr0 + 4 * k as u64;
                    lds_read(ctx.lds, addr, &mut b[..4]);
                    let data = (d0 >> (32 * k)) as u32;
                    if data >> 31 != 0 {
                        lds_write(ctx.lds, addr, &(data & 0x7FFF_FFFF).to_le_bytes());
                    }
                    let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    set_vdst_dword(w, &inst.dst, lane, k, old);
                }
            }
            _ if op.attrs().class == Class::DsSrc2 => ds_src2(ctx.lds, inst, base)?,
            _ => {
                let atomic = op.attrs().atomic.ok_or_else(|| not_implemented(inst))?;
                let (op, wide) = (atomic.op, atomic.wide);
                let addr = at(offset);
                let n = if wide { 8 } else { 4 };
                lds_read(ctx.lds, addr, &mut b[..n]);
                let old = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
                let new = ds_atomic_value(op, wide, old, d0, d1);
                lds_write(ctx.lds, addr, &new.to_le_bytes()[..n]);
                set_vdst(w, &inst.dst, lane, old, if wide { 2 } else { 1 });
            }
        }
    }
    Ok(())
}

/// The global wave sync (GWS) resources of the waves running here (Vega ISA §12.13 "DS":
/// DS_GWS_INIT, DS_GWS_SEMA_V/BR/P/RELEASE_ALL, DS_GWS_BARRIER): 64 resources, each a
/// semaphore value (a barrier's: its wave count minus one), the waves arrived at its
/// barrier, and a generation counting its barrier releases and release-alls.
#[derive(Clone, Debug)]
pub(crate) struct Gws {
    value: [u32; 64],
    arrived: [u32; 64],
    generation: [u32; 64],
}

impl Gws {
    pub(crate) const fn new() -> Gws {
        Gws {
            value: [0; 64],
            arrived: [0; 64],
            generation: [0; 64],
        }
    }
}

/// A GWS instruction (class `DsGws`): the resource is M0[21:16] + OFFSET0[5:0] (mod 64), the
/// data the address VGPR of the first active lane (LLVM AMDGPUUsage: uniform). `init` sets
/// the value (a barrier's wave count minus one) and clears the arrivals; `sema_v` adds 1,
/// `sema_br` the data; `sema_p` takes 1, waiting while the value is 0; `sema_release_all`
/// lets every wave waiting in `sema_p` go; `barrier` waits until value + 1 waves arrived.
/// A waiting wave returns [`Flow::Wait`] and runs the instruction again later; it stays
/// at it until another wave's GWS instruction lets it go.
///
/// # Errors
/// [`Status::IllegalInstruction`] when the `gds` bit is clear (the GWS forms exist only
/// with it).
pub(crate) fn ds_gws(gws: &mut Gws, w: &mut Wave, inst: &Instruction) -> Result<Flow> {
    if !inst.mods.gds {
        bail!(
            Status::IllegalInstruction,
            "{}: a GWS instruction without the gds bit",
            inst.name()
        );
    }
    let exec = w.exec();
    if exec == 0 {
        return Ok(Flow::Next);
    }
    let first = exec.trailing_zeros() as usize;
    let data = vsrc(w, &inst.src[0], first, false, false) as u32;
    let id = ((w.sreg[M0] >> 16 & 0x3F) + (inst.imm as u32 & 0x3F)) as usize % 64;
    match inst.op() {
        Op::DsGwsInit => {
            gws.value[id] = data;
            gws.arrived[id] = 0;
        }
        Op::DsGwsSemaV => gws.value[id] = gws.value[id].wrapping_add(1),
        Op::DsGwsSemaBr => gws.value[id] = gws.value[id].wrapping_add(data),
        Op::DsGwsSemaReleaseAll => gws.generation[id] = gws.generation[id].wrapping_add(1),
        Op::DsGwsSemaP => {
            if w.gws_wait.is_some_and(|g| g != gws.generation[id]) {
                // Released by a release-all while waiting.
                w.gws_wait = None;
            } else if gws.value[id] > 0 {
                gws.value[id] -= 1;
                w.gws_wait = None;
            } else {
                w.gws_wait = Some(gws.generation[id]);
                return Ok(Flow::Wait);
            }
        }
        _ => {
            // DS_GWS_BARRIER.
            match w.gws_wait {
                Some(g) if g != gws.generation[id] => w.gws_wait = None,
                Some(_) => return Ok(Flow::Wait),
                None => {
                    gws.arrived[id] += 1;
                    if gws.arrived[id] > gws.value[id] {
                        gws.arrived[id] = 0;
                        gws.generation[id] = gws.generation[id].wrapping_add(1);
                    } else {
                        w.gws_wait = Some(gws.generation[id]);
                        return Ok(Flow::Wait);
                    }
                }
            }
        }
    }
    Ok(Flow::Next)
}

/// `ds_<op>_src2_<type>` (gfx900, gfx906, gfx908; Vega ISA DS opcodes 128..=147, 192..=211):
/// `DS[A] = DS[A] op DS[B]` with both operands in LDS, for one lane whose address VGPR holds
/// `a`. The Vega ISA's rule: `A = ADDR_BASE`; `B = A + 4 * (offset1[7] ? {A[31], A[31:17]} :
/// {offset1[6], offset1[6:0], offset0})`, both braces a 16-bit two's-complement dword count
/// (bit 15 repeats the sign) — taken here sign-extended, so B is A − 65536..=A + 65532.
/// The 64-bit forms read and write a qword at A and B with the same B rule. `write` stores
/// DS[B]; the others are the atomics of the same name with DS[B] as DATA0
/// ([`ds_atomic_value`]). With offset1[7] set, A's bits 31:17 are the offset and stay part
/// of A as the document writes it: such an A lies past any LDS and, as every out-of-range LDS
/// access here, reads 0 and is not written.
///
/// # Errors
/// [`Status::IllegalInstruction`] for a `_src2_` mnemonic the interpreter does not know.
pub(crate) fn ds_src2(lds: &mut [u8], inst: &Instruction, a: u64) -> Result<()> {
    let atomic = inst
        .op()
        .attrs()
        .atomic
        .ok_or_else(|| not_implemented(inst))?;
    let (op, wide) = (atomic.op, atomic.wide);
    let field = inst.imm as u32 & 0xFFFF;
    let dwords = if field & 0x8000 != 0 {
        (a as u32 >> 17 & 0x7FFF) | (a as u32 >> 16 & 0x8000)
    } else {
        (field & 0x7FFF) | (field << 1 & 0x8000)
    } as u16 as i16;
    let b = (a as u32).wrapping_add((i32::from(dwords) * 4) as u32) as u64;
    let n = if wide { 8 } else { 4 };
    let mut x = [0u8; 8];
    let mut y = [0u8; 8];
    lds_read(lds, a, &mut x[..n]);
    lds_read(lds, b, &mut y[..n]);
    let (old, src) = (u64::from_le_bytes(x), u64::from_le_bytes(y));
    let new = ds_atomic_value(op, wide, old, src, 0);
    lds_write(lds, a, &new.to_le_bytes()[..n]);
    Ok(())
}

/// The new LDS value of atomic `op` (an LDS instruction's [`op::Atomic`]) on the old value `old` with the
/// instruction's DATA0 `d0` and DATA1 `d1`, 32 or (`wide`) 64 bits (Vega ISA §12.13 "DS"
/// opcode descriptions): `rsub` is `d0 − old`; `inc` wraps to 0 when `old ≥ d0`, `dec` to
/// `d0` when `old` is 0 or above `d0`; `mskor` is `(old & !d0) | d1`; `cmpst` stores `d1`
/// when `old` equals `d0` (the compare value first, the opposite of the MUBUF/FLAT
/// `cmpswap` order; the f32/f64 forms compare as floats: −0 equals +0, a NaN nothing);
/// `wrap` is `old ≥ d0 ? old − d0 : old + d1`; f32/f64 min/max follow IEEE 754 minNum/maxNum
/// with −0 below +0 (a NaN loses to a number; two NaNs keep the old value); `add_f` is an
/// f32 add rounded to nearest even, denormals kept.
pub(crate) fn ds_atomic_value(op: AtomicOp, wide: bool, old: u64, d0: u64, d1: u64) -> u64 {
    let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
    let (o, a, b) = (old & mask, d0 & mask, d1 & mask);
    let signed = |x: u64| {
        if wide {
            x as i64
        } else {
            i64::from(x as u32 as i32)
        }
    };
    let float = |x: u64| {
        if wide {
            f64::from_bits(x)
        } else {
            f64::from(f32::from_bits(x as u32))
        }
    };
    let min_max = |max: bool| {
        let (x, y) = (float(o), float(a));
        match (x.is_nan(), y.is_nan()) {
            (true, false) => a,
            (_, true) => o,
            _ if x == y => {
                // ±0: the max of the two is +0 unless both are −0 (and the min −0 unless both +0).
                if max {
                    o & a
                } else {
                    o | a
                }
            }
            _ if (y > x) == max => a,
            _ => o,
        }
    };
    let r = match op {
        AtomicOp::Add => o.wrapping_add(a),
        AtomicOp::Sub => o.wrapping_sub(a),
        AtomicOp::Rsub => a.wrapping_sub(o),
        AtomicOp::Inc => {
            if o >= a {
                0
            } else {
                o + 1
            }
        }
        AtomicOp::Dec => {
            if o == 0 || o > a {
                a
            } else {
                o - 1
            }
        }
        AtomicOp::Smin => signed(o).min(signed(a)) as u64,
        AtomicOp::Smax => signed(o).max(signed(a)) as u64,
        AtomicOp::Umin => o.min(a),
        AtomicOp::Umax => o.max(a),
        AtomicOp::MinF => min_max(false),
        AtomicOp::MaxF => min_max(true),
        AtomicOp::DsAddF32 => {
            u64::from((f32::from_bits(o as u32) + f32::from_bits(a as u32)).to_bits())
        }
        // ds_add_f64 (gfx90a+), ds_pk_add_f16/bf16 (gfx940+): denormals kept.
        AtomicOp::AddF64 => (f64::from_bits(o) + f64::from_bits(a)).to_bits(),
        AtomicOp::PkAddF16 => {
            let lo = f16::add(o as u16, a as u16);
            let hi = f16::add((o >> 16) as u16, (a >> 16) as u16);
            u64::from(lo) | u64::from(hi) << 16
        }
        AtomicOp::PkAddBf16 => u64::from(pk_add_bf16(o as u32, a as u32)),
        AtomicOp::And => o & a,
        AtomicOp::Or => o | a,
        AtomicOp::Xor => o ^ a,
        AtomicOp::Mskor => (o & !a) | b,
        AtomicOp::Cmpst => {
            if o == a {
                b
            } else {
                o
            }
        }
        AtomicOp::CmpstF => {
            if float(o) == float(a) {
                b
            } else {
                o
            }
        }
        AtomicOp::Swap => a,
        AtomicOp::Wrap => {
            if o >= a {
                o - a
            } else {
                o.wrapping_add(b)
            }
        }
        _ => o,
    };
    r & mask
}

/// The lane whose value lane `lane` of a `DS_SWIZZLE_B32` with 16-bit `offset` receives
/// (Vega ISA, `DS_SWIZZLE_B32`; the same four modes in the CDNA1/2/3 guides). Every mode
/// works within the lane's 32-lane half (lane bit 5 is kept), `i` below being the lane's
/// bits 4:0:
/// - `offset >= 0xE000`, FFT: with `mask = offset[4:0]`, the 5-bit bit reversal of `i`
///   shifted right by the number of ones in `mask`, ORed with `i & mask`;
/// - `0xC000..0xE000`, rotate: with `mask = offset[4:0]` and `r = offset[9:5]` (negated when
///   `offset[10]` is set), `(i & mask) | ((i + r) & !mask)`, the sum taken modulo 32 (the
///   ISA's pseudo-code adds in a wider integer; only bits 4:0 name a lane of the half);
/// - `offset[15]` set below 0xC000, quad mode: the lane of its quad that `offset[2k+1:2k]`
///   names, k the lane's place in the quad (`offset[14:8]` are zero in what LLVM emits);
/// - `offset[15]` clear, bit-mask mode: `((i & and_mask) | or_mask) ^ xor_mask`, the masks
///   being `offset[4:0]`, `offset[9:5]` and `offset[14:10]`.
///
/// llvm-mc-19 has no `swizzle(FFT, …)`/`swizzle(ROTATE, …)` macro for gfx9 (it writes and
/// prints those offsets as plain numbers); its BROADCAST, SWAP, REVERSE and BITMASK_PERM
/// macros encode bit-mask mode, QUAD_PERM quad mode.
pub(crate) fn swizzle_source(offset: u32, lane: usize) -> usize {
    let i = lane as u32 & 0x1F;
    let half = lane & 0x20;
    let mask = offset & 0x1F;
    let j = if offset >= 0xE000 {
        let rev = i.reverse_bits() >> 27;
        (rev >> mask.count_ones()) | (i & mask)
    } else if offset >= 0xC000 {
        let r = offset >> 5 & 0x1F;
        let r = if offset & 0x400 != 0 {
            r.wrapping_neg()
        } else {
            r
        };
        (i & mask) | (i.wrapping_add(r) & !mask & 0x1F)
    } else if offset & 0x8000 != 0 {
        (i & !3) | (offset >> (2 * (i & 3)) & 3)
    } else {
        let (and, or, xor) = (mask, offset >> 5 & 0x1F, offset >> 10 & 0x1F);
        (i & and | or) ^ xor
    };
    j as usize | half
}

/// `DS_SWIZZLE_B32`, `DS_PERMUTE_B32` and `DS_BPERMUTE_B32` (Vega ISA §12.13): every
/// source is read before any lane is written; a lane reads 0 from a lane EXEC leaves out;
/// only the lanes of EXEC are written. The permutes take lane `((addr + offset) / 4) % 64`:
/// `ds_bpermute_b32` gives each lane that lane's `data0` (a gather), `ds_permute_b32` sends
/// each active lane's `data0` there (a scatter; of several lanes sending to one, the highest
/// wins; a lane nothing is sent to gets 0).
pub(crate) fn ds_lanes(w: &mut Wave, inst: &Instruction) -> Result<()> {
    if inst.mods.gds {
        return Err(error!(
            Status::IllegalInstruction,
            "{}: GDS not implemented",
            inst.name()
        ));
    }
    let exec = w.exec();
    let active = |l: usize| exec >> l & 1 != 0;
    let offset = inst.imm as u32 & 0xFFFF;
    let mut out = [0u32; WAVE_SIZE];
    match inst.op() {
        Op::DsSwizzleB32 => {
            for (lane, o) in out.iter_mut().enumerate() {
                let src = swizzle_source(offset, lane);
                if active(src) {
                    *o = vsrc(w, &inst.src[0], src, false, false) as u32;
                }
            }
        }
        Op::DsBpermuteB32 => {
            for (lane, o) in out.iter_mut().enumerate() {
                let addr = vsrc(w, &inst.src[0], lane, false, false) as u32;
                let src = (addr.wrapping_add(offset) / 4 % WAVE_SIZE as u32) as usize;
                if active(src) {
                    *o = vsrc(w, &inst.src[1], src, false, false) as u32;
                }
            }
        }
        _ => {
            for lane in (0..WAVE_SIZE).filter(|&l| active(l)) {
                let addr = vsrc(w, &inst.src[0], lane, false, false) as u32;
                let dst = (addr.wrapping_add(offset) / 4 % WAVE_SIZE as u32) as usize;
                out[dst] = vsrc(w, &inst.src[1], lane, false, false) as u32;
            }
        }
    }
    for (lane, &v) in out.iter().enumerate().filter(|&(l, _)| active(l)) {
        set_vdst(w, &inst.dst, lane, u64::from(v), 1);
    }
    Ok(())
}
