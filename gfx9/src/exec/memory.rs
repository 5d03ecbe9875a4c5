//! Vector memory: FLAT/GLOBAL/SCRATCH (Vega ISA §9) and MUBUF/MTBUF (§8) loads, stores and
//! atomics, the buffer resource, format conversions.

#[allow(unused_imports)]
use super::*;
use crate::aperture::FlatTarget;

/// Where one lane's access goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Space {
    /// A device address (the queue's scratch backing included).
    Global(u64),
    /// A byte offset in the work-group's LDS.
    Lds(u64),
    /// A lane-relative private offset in the wave's scratch at `base` (FLAT_SCRATCH: an
    /// address in the queue's scratch backing), swizzled per dword with the lane.
    Private { base: u64, offset: u32 },
}

/// The address of byte `offset` of lane `lane`'s private segment in a wave's swizzled
/// scratch: dword `offset / 4` of the 64 lanes is one 256-byte row (Vega ISA §9.3.3 "Scratch
/// (private) buffer": element size 4, index stride 64).
pub(crate) fn swizzle(base: u64, offset: u32, lane: usize) -> u64 {
    base.wrapping_add(u64::from(offset / 4) * 256 + lane as u64 * 4 + u64::from(offset % 4))
}

/// Reads `buf.len()` bytes at `addr` of device memory (the queue's scratch backing is device
/// memory too).
pub(crate) fn read_global(ctx: &Ctx<'_, '_>, addr: u64, buf: &mut [u8]) -> Result<()> {
    ctx.memory.read(addr, buf)
}

/// Writes `data` at `addr` of device memory.
pub(crate) fn write_global(ctx: &mut Ctx<'_, '_>, addr: u64, data: &[u8]) -> Result<()> {
    ctx.memory.write(addr, data)
}

/// Reads `buf.len()` bytes of lane `lane` at `space`.
pub(crate) fn space_read(
    ctx: &Ctx<'_, '_>,
    space: Space,
    lane: usize,
    buf: &mut [u8],
) -> Result<()> {
    match space {
        Space::Global(a) => read_global(ctx, a, buf),
        Space::Lds(o) => {
            lds_read(ctx.lds, o, buf);
            Ok(())
        }
        Space::Private { base, offset } => {
            // Contiguous within a dword, scattered across dwords.
            let mut k = 0;
            while k < buf.len() {
                let o = offset.wrapping_add(k as u32);
                let n = (4 - (o % 4) as usize).min(buf.len() - k);
                read_global(ctx, swizzle(base, o, lane), &mut buf[k..k + n])?;
                k += n;
            }
            Ok(())
        }
    }
}

/// Writes `data` for lane `lane` at `space`.
pub(crate) fn space_write(
    ctx: &mut Ctx<'_, '_>,
    space: Space,
    lane: usize,
    data: &[u8],
) -> Result<()> {
    match space {
        Space::Global(a) => write_global(ctx, a, data),
        Space::Lds(o) => {
            lds_write(ctx.lds, o, data);
            Ok(())
        }
        Space::Private { base, offset } => {
            let mut k = 0;
            while k < data.len() {
                let o = offset.wrapping_add(k as u32);
                let n = (4 - (o % 4) as usize).min(data.len() - k);
                write_global(ctx, swizzle(base, o, lane), &data[k..k + n])?;
                k += n;
            }
            Ok(())
        }
    }
}

/// Atomically applies `f` (old → new) to the u32 or u64 (`wide`) of lane `lane` at `space`
/// and returns the old value: device memory through [`DeviceMemory`]'s atomics, LDS and
/// private (swizzled scratch) by read-modify-write.
pub(crate) fn space_atomic(
    ctx: &mut Ctx<'_, '_>,
    space: Space,
    lane: usize,
    wide: bool,
    f: &mut dyn FnMut(u64) -> u64,
) -> Result<u64> {
    if let Space::Global(a) = space {
        return if wide {
            ctx.memory.atomic_rmw_u64(a, f)
        } else {
            ctx.memory
                .atomic_rmw_u32(a, &mut |old| f(u64::from(old)) as u32)
                .map(u64::from)
        };
    }
    let n = if wide { 8 } else { 4 };
    let mut b = [0u8; 8];
    space_read(ctx, space, lane, &mut b[..n])?;
    let old = u64::from_le_bytes(b);
    let new = f(old);
    space_write(ctx, space, lane, &new.to_le_bytes()[..n])?;
    Ok(old)
}

/// Writes the bytes a load of type `ty` read (`b[..n]`) to the destination registers of
/// lane `lane` (sign- or zero-extending sub-dword loads).
pub(crate) fn load_result(
    w: &mut Wave,
    dst: &Operand,
    lane: usize,
    ty: MemTy,
    b: &[u8; 16],
    n: usize,
) {
    let v = match ty {
        MemTy::Ubyte => u64::from(b[0]),
        MemTy::Sbyte => b[0] as i8 as i32 as u32 as u64,
        MemTy::Ushort => u64::from(u16::from_le_bytes([b[0], b[1]])),
        MemTy::Sshort => u16::from_le_bytes([b[0], b[1]]) as i16 as i32 as u32 as u64,
        // D16 loads (Vega ISA §9.1.9 "16-bit memory operations"): the 16-bit value (a byte
        // zero- or sign-extended to 16 bits) replaces the low or (`_hi`) the high half of the
        // VGPR; the other half keeps its value, or is 0 with SRAM ECC on.
        MemTy::ShortD16
        | MemTy::ShortD16Hi
        | MemTy::UbyteD16
        | MemTy::UbyteD16Hi
        | MemTy::SbyteD16
        | MemTy::SbyteD16Hi => {
            let h = match ty {
                MemTy::SbyteD16 | MemTy::SbyteD16Hi => b[0] as i8 as i16 as u16,
                MemTy::UbyteD16 | MemTy::UbyteD16Hi => u16::from(b[0]),
                _ => u16::from_le_bytes([b[0], b[1]]),
            };
            let old = if w.sramecc {
                0
            } else {
                vsrc_dword(w, dst, lane, 0)
            };
            let v = if matches!(
                ty,
                MemTy::ShortD16Hi | MemTy::UbyteD16Hi | MemTy::SbyteD16Hi
            ) {
                old & 0xFFFF | u32::from(h) << 16
            } else {
                old & 0xFFFF_0000 | u32::from(h)
            };
            set_vdst_dword(w, dst, lane, 0, v);
            return;
        }
        _ => {
            for k in 0..n / 4 {
                let v = u32::from_le_bytes([b[k * 4], b[k * 4 + 1], b[k * 4 + 2], b[k * 4 + 3]]);
                set_vdst_dword(w, dst, lane, k, v);
            }
            return;
        }
    };
    set_vdst_dword(w, dst, lane, 0, v as u32);
}

/// A load, store or atomic of one lane at `space`, for the FLAT/GLOBAL/SCRATCH and MUBUF
/// instructions (the instruction's [`op::Mem`] and [`op::Atomic`]).
pub(crate) fn lane_access(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
    lane: usize,
    space: Space,
) -> Result<()> {
    let attrs = inst.op().attrs();
    let Some(mem) = attrs.mem else {
        return Err(not_implemented(inst));
    };
    let mut b = [0u8; 16];
    if attrs.to_lds || inst.mods.lds {
        return lds_lane_access(ctx, w, inst, lane, space, mem);
    }
    match mem.dir {
        op::Dir::Load => {
            let n = mem.ty.bytes(inst.info.widths[0]);
            space_read(ctx, space, lane, &mut b[..n])?;
            load_result(w, &inst.dst, lane, mem.ty, &b, n);
        }
        op::Dir::Store => {
            let data_w = inst.info.widths[1] as usize;
            for k in 0..data_w {
                b[k * 4..k * 4 + 4]
                    .copy_from_slice(&vsrc_dword(w, &inst.src[1], lane, k).to_le_bytes());
            }
            if matches!(mem.ty, MemTy::ShortD16Hi | MemTy::ByteD16Hi) {
                // The high half of the data VGPR: bits 31:16 (a byte store: 23:16).
                b.copy_within(2..4, 0);
            }
            let n = mem.ty.bytes(data_w as u8);
            space_write(ctx, space, lane, &b[..n])?;
        }
        op::Dir::Atomic => {
            let Some(atomic) = attrs.atomic else {
                return Err(not_implemented(inst));
            };
            let wide = inst.info.widths[0] == 2;
            let Some(f) = atomic_op(atomic.op) else {
                return Err(not_implemented(inst));
            };
            // Data: the operand (cmpswap: the new value, then the compare value).
            let dw = if wide { 2 } else { 1 };
            let get = |k: usize| {
                let lo = u64::from(vsrc_dword(w, &inst.src[1], lane, k));
                if wide {
                    lo | u64::from(vsrc_dword(w, &inst.src[1], lane, k + 1)) << 32
                } else {
                    lo
                }
            };
            let src = get(0);
            let cmp = if atomic.op == AtomicOp::CmpSwap {
                get(dw)
            } else {
                0
            };
            let old = space_atomic(ctx, space, lane, wide, &mut |old| f(old, src, cmp, wide))?;
            let old = if wide { old } else { old & 0xFFFF_FFFF };
            // Returns the old value only with glc (sc0): the decoder leaves dst None otherwise.
            for k in 0..dw {
                set_vdst_dword(w, &inst.dst, lane, k, (old >> (32 * k)) as u32);
            }
        }
    }
    Ok(())
}

/// The LDS address of lane `lane` of a load into LDS or a store from it
/// (`global_load_lds_*`, `scratch_load_lds_*`, MUBUF loads with `lds`,
/// `buffer_store_lds_dword`): M0 + the instruction offset + lane × 4 (the LDS base the
/// kernel sets in M0; the offset applies to both addresses, as LLVM's AMDGPU backend
/// compiles `llvm.amdgcn.global.load.lds` and `llvm.amdgcn.raw.buffer.load.lds`).
pub(crate) fn lds_lane_address(w: &Wave, inst: &Instruction, lane: usize) -> u64 {
    u64::from(
        w.sreg[M0]
            .wrapping_add(inst.imm as u32)
            .wrapping_add(4 * lane as u32),
    )
}

/// One lane of a load into LDS (a dword per lane: a byte or short zero- or sign-extended as
/// its type says) or of `buffer_store_lds_dword` (the lane's LDS dword stored at `space`).
fn lds_lane_access(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
    lane: usize,
    space: Space,
    mem: op::Mem,
) -> Result<()> {
    let lds_addr = lds_lane_address(w, inst, lane);
    let mut b = [0u8; 4];
    if mem.dir == op::Dir::Store {
        lds_read(ctx.lds, lds_addr, &mut b);
        return space_write(ctx, space, lane, &b);
    }
    let n = mem.ty.bytes(1);
    space_read(ctx, space, lane, &mut b[..n])?;
    let v = match mem.ty {
        MemTy::Sbyte => b[0] as i8 as i32 as u32,
        MemTy::Sshort => u16::from_le_bytes([b[0], b[1]]) as i16 as i32 as u32,
        _ => u32::from_le_bytes(b),
    };
    lds_write(ctx.lds, lds_addr, &v.to_le_bytes());
    Ok(())
}

/// FLAT, GLOBAL and SCRATCH instructions (Vega ISA §9.3 "Flat, global and scratch"): a FLAT
/// address in the shared or private aperture goes to LDS or the lane's private segment
/// (through FLAT_SCRATCH), anything else to device memory; GLOBAL addresses are device
/// addresses; SCRATCH addresses are private offsets (VGPR and/or SGPR plus the instruction
/// offset) from FLAT_SCRATCH.
pub(crate) fn flat(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let class = inst.op().attrs().class;
    let exec = w.exec();
    let flat_scratch = w.sreg64(FLAT_SCRATCH);
    let saddr = match inst.src[2] {
        Operand::Sreg { index, count } if count >= 2 => Some(w.sreg64(index as usize)),
        Operand::Sreg { index, .. } => Some(u64::from(w.sreg[index as usize])),
        _ => None,
    };
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let space = if class == Class::Scratch {
            let v = match inst.src[0] {
                Operand::Vgpr { index, .. } => w.v(index as usize, lane),
                _ => 0,
            };
            let off = v
                .wrapping_add(saddr.unwrap_or(0) as u32)
                .wrapping_add(inst.imm as u32);
            Space::Private {
                base: flat_scratch,
                offset: off,
            }
        } else {
            let addr = match saddr {
                Some(s) => s.wrapping_add(vsrc(w, &inst.src[0], lane, false, false)),
                None => vsrc(w, &inst.src[0], lane, true, false),
            }
            .wrapping_add(inst.imm as i64 as u64);
            if class != Class::Flat {
                Space::Global(addr)
            } else {
                match w.apertures.resolve(addr) {
                    FlatTarget::Lds(o) => Space::Lds(u64::from(o)),
                    FlatTarget::Private(offset) => Space::Private {
                        base: flat_scratch,
                        offset,
                    },
                    FlatTarget::Global(a) => Space::Global(a),
                    FlatTarget::Hole => bail!(
                        Status::MemoryApertureViolation,
                        "lane {lane}: FLAT address {addr:#x} is in neither the shared aperture \
                         ({:#x}..={:#x}) nor the private one ({:#x}..={:#x}) and outside the \
                         48-bit GPUVM range: a memory violation",
                        w.apertures.shared_base(),
                        w.apertures.shared_limit(),
                        w.apertures.private_base(),
                        w.apertures.private_limit()
                    ),
                }
            }
        };
        lane_access(ctx, w, inst, lane, space)
            .map_err(|e| error!(e.status(), "lane {lane}: {}", e.detail()))?;
    }
    Ok(())
}

/// The fields of a buffer resource (V#) that untyped MUBUF addressing uses (Vega ISA §8.1.8
/// "Buffer resource").
pub(crate) struct BufferResource {
    pub(super) base: u64,
    pub(super) stride: u64,
    pub(super) swizzle: bool,
    pub(super) num_records: u64,
    pub(super) element_size: u64,
    pub(super) index_stride: u64,
    pub(super) add_tid: bool,
}

impl BufferResource {
    pub(super) fn from_words(v: [u32; 4]) -> BufferResource {
        BufferResource {
            base: u64::from(v[0]) | u64::from(v[1] & 0xFFFF) << 32,
            stride: u64::from(v[1] >> 16 & 0x3FFF),
            swizzle: v[1] >> 31 != 0,
            num_records: u64::from(v[2]),
            element_size: 2 << (v[3] >> 19 & 3),
            index_stride: 8 << (v[3] >> 21 & 3),
            add_tid: v[3] >> 23 & 1 != 0,
        }
    }

    /// The byte offset in the buffer of byte `offset` of record `index` (Vega ISA §8.1.5
    /// "Buffer addressing"; swizzled: `(index_msb * stride + offset_msb * element_size) *
    /// index_stride + index_lsb * element_size + offset_lsb`).
    pub(super) fn buffer_offset(&self, index: u64, offset: u64) -> u64 {
        if self.swizzle {
            let (imsb, ilsb) = (index / self.index_stride, index % self.index_stride);
            let (omsb, olsb) = (offset / self.element_size, offset % self.element_size);
            (imsb * self.stride + omsb * self.element_size) * self.index_stride
                + ilsb * self.element_size
                + olsb
        } else {
            index * self.stride + offset
        }
    }

    /// Whether an access of `len` bytes at record `index`, byte `offset` (the VGPR offset
    /// plus the instruction's), with `soffset` from the SGPR, is out of range (a load
    /// returns 0, a store is dropped). Raw buffers (stride 0) check the whole byte offset,
    /// SGPR offset included, against NUM_RECORDS bytes: out of range when `soffset + offset +
    /// len > NUM_RECORDS`. Tensile's GEMM kernels rely on the SGPR offset counting: they step
    /// through K with it and expect the rows past the matrix to read 0 (as gem5's Vega model
    /// and Triton's CDNA buffer descriptors describe the hardware). Structured ones check the
    /// index against NUM_RECORDS records. Swizzled (scratch) buffers are bounded by the
    /// backing instead.
    pub(super) fn out_of_range(&self, index: u64, soffset: u64, offset: u64, len: u64) -> bool {
        if self.swizzle {
            false
        } else if self.stride == 0 {
            soffset + offset + len > self.num_records
        } else {
            index >= self.num_records
        }
    }

    /// For a raw buffer (stride 0, not swizzled), how many leading dwords of a `len`-byte
    /// access (`len` a multiple of 4, over 4) at `soffset + offset` are in range: the Vega
    /// ISA range-checks `load/store_dwordx{2,3,4}` per component, so an access that crosses
    /// NUM_RECORDS moves its first dwords and reads 0 for (or drops) the rest. `None` for
    /// other buffers and accesses, which are in or out as a whole.
    pub(super) fn dwords_in_range(&self, soffset: u64, offset: u64, len: u64) -> Option<u64> {
        if self.swizzle || self.stride != 0 || len <= 4 || len % 4 != 0 {
            return None;
        }
        let start = soffset + offset;
        Some((self.num_records.saturating_sub(start) / 4).min(len / 4))
    }
}

/// MUBUF loads, stores, atomics and cache control (Vega ISA §8.1 "Vector memory buffer
/// instructions"): address = base + soffset + buffer offset of (index, vaddr offset +
/// instruction offset), the index from the VGPR (`idxen`) plus the lane (ADD_TID).
pub(crate) fn mubuf(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let op = inst.op();
    let Operand::Sreg { index: r, .. } = inst.src[2] else {
        // buffer_wbinvl1(_vol), buffer_wbl2, buffer_invl2/buffer_inv: the interpreter has no
        // L1 (a wave's accesses reach the memory in order), so only what reaches the L2 acts,
        // on a memory that models it (the emulated device's cache model); elsewhere these are
        // ordering points with nothing to do.
        return match op.attrs().class {
            Class::BufferCache => match L2Action::of(op, ctx.target, inst.mods.sc1) {
                Some(action) => ctx.memory.l2_action(action),
                None => Ok(()),
            },
            _ => Err(not_implemented(inst)),
        };
    };
    let Some(mem) = op.attrs().mem else {
        return Err(not_implemented(inst));
    };
    let r = r as usize;
    let rsrc = BufferResource::from_words([w.sreg[r], w.sreg[r + 1], w.sreg[r + 2], w.sreg[r + 3]]);
    let soffset = scalar(w, &inst.soffset, false, false) & 0xFFFF_FFFF;
    let exec = w.exec();
    // Format loads and stores: the data and numeric format from the instruction (MTBUF) or
    // the resource's word 3 (MUBUF: NUM_FORMAT [14:12], DATA_FORMAT [18:15]).
    let format = if let MemTy::Format { .. } = mem.ty {
        let (dfmt, nfmt) = if inst.encoding == Encoding::Mtbuf {
            (inst.mods.format & 0xF, inst.mods.format >> 4 & 7)
        } else {
            let w3 = w.sreg[r + 3];
            ((w3 >> 15 & 0xF) as u8, (w3 >> 12 & 7) as u8)
        };
        let f = BufferFormat::new(dfmt, nfmt).map_err(|why| {
            error!(
                Status::IllegalInstruction,
                "{op}: format [BUF_DATA_FORMAT_{},BUF_NUM_FORMAT_{}]: {why}",
                crate::disasm::DATA_FORMATS[usize::from(dfmt)],
                crate::disasm::NUM_FORMATS[usize::from(nfmt)]
            )
        })?;
        Some(f)
    } else {
        None
    };
    let to_lds = inst.mods.lds || op.attrs().to_lds;
    let len = match (format, mem.dir) {
        (_, _) if to_lds => mem.ty.bytes(1),
        (Some(f), _) => f.bytes(format_components(mem.ty).0),
        (None, op::Dir::Load) => mem.ty.bytes(inst.info.widths[0]),
        (None, op::Dir::Store) => mem.ty.bytes(inst.info.widths[1]),
        (None, op::Dir::Atomic) => inst.info.widths[0] as usize * 4,
    };
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let (mut index, mut voff) = (0u64, 0u64);
        if let Operand::Vgpr { index: a, .. } = inst.src[0] {
            let a = a as usize;
            match (inst.mods.idxen, inst.mods.offen) {
                (true, true) => {
                    index = u64::from(w.v(a, lane));
                    voff = u64::from(w.v(a + 1, lane));
                }
                (true, false) => index = u64::from(w.v(a, lane)),
                _ => voff = u64::from(w.v(a, lane)),
            }
        }
        if rsrc.add_tid {
            index += lane as u64;
        }
        let offset = voff + inst.imm as u64;
        // Per-component range check of a multi-dword raw load or store crossing the end.
        let partial = match (format, mem.dir) {
            (None, op::Dir::Load | op::Dir::Store) if !to_lds => rsrc
                .dwords_in_range(soffset, offset, len as u64)
                .filter(|&n| n > 0 && n < len as u64 / 4),
            _ => None,
        };
        if let Some(n) = partial {
            let addr = rsrc.base.wrapping_add(soffset).wrapping_add(offset);
            let fault = |e: hsa_core::Error| error!(e.status(), "lane {lane}: {}", e.detail());
            if mem.dir == op::Dir::Load {
                let mut b = [0u8; 16];
                for k in 0..n as usize {
                    read_global(ctx, addr + k as u64 * 4, &mut b[k * 4..k * 4 + 4])
                        .map_err(fault)?;
                }
                load_result(w, &inst.dst, lane, mem.ty, &b, len);
            } else {
                for k in 0..n as usize {
                    let v = vsrc_dword(w, &inst.src[1], lane, k).to_le_bytes();
                    write_global(ctx, addr + k as u64 * 4, &v).map_err(fault)?;
                }
            }
            continue;
        }
        if rsrc.out_of_range(index, soffset, offset, len as u64) {
            // Out of range: loads (and returning atomics) get zeros, stores are dropped.
            if to_lds {
                if mem.dir == op::Dir::Load {
                    lds_write(ctx.lds, lds_lane_address(w, inst, lane), &[0; 4]);
                }
                continue;
            }
            if format.is_some() {
                format_out_of_range(w, inst, lane);
                continue;
            }
            if mem.dir == op::Dir::Load {
                // A load of zeros: a D16 load writes its half only (the other kept, or 0
                // with SRAM ECC on), as in range.
                load_result(w, &inst.dst, lane, mem.ty, &[0; 16], len);
                continue;
            }
            for k in 0..inst.info.widths[0] as usize {
                set_vdst_dword(w, &inst.dst, lane, k, 0);
            }
            continue;
        }
        let fault = |e: hsa_core::Error| error!(e.status(), "lane {lane}: {}", e.detail());
        let addr_of = |k: u64| {
            rsrc.base
                .wrapping_add(soffset)
                .wrapping_add(rsrc.buffer_offset(index, offset + k))
        };
        if let (Some(f), false) = (format, to_lds) {
            format_access(ctx, w, inst, lane, f, &addr_of).map_err(fault)?;
            continue;
        }
        if rsrc.swizzle && len > 4 {
            // Each element (dword) of a multi-dword access lands in its own swizzled place.
            let mut b = [0u8; 16];
            if mem.dir == op::Dir::Load {
                for k in 0..len / 4 {
                    read_global(ctx, addr_of(k as u64 * 4), &mut b[k * 4..k * 4 + 4])
                        .map_err(fault)?;
                }
                load_result(w, &inst.dst, lane, mem.ty, &b, len);
            } else if mem.dir == op::Dir::Store {
                for k in 0..len / 4 {
                    let v = vsrc_dword(w, &inst.src[1], lane, k).to_le_bytes();
                    write_global(ctx, addr_of(k as u64 * 4), &v).map_err(fault)?;
                }
            } else {
                return Err(error!(
                    Status::IllegalInstruction,
                    "{op}: 64-bit atomic on a swizzled buffer not implemented"
                ));
            }
            continue;
        }
        lane_access(ctx, w, inst, lane, Space::Global(addr_of(0))).map_err(fault)?;
    }
    Ok(())
}

/// The components a format instruction of memory type `ty` moves, and whether it is a D16
/// form and its `d16_hi` variant: `load_format_xyz` → (3, false, false),
/// `store_format_d16_hi_x` → (1, true, true); (0, false, false) for other types.
pub(crate) fn format_components(ty: MemTy) -> (usize, bool, bool) {
    match ty {
        MemTy::Format { comps, d16, hi } => (usize::from(comps), d16, hi),
        _ => (0, false, false),
    }
}

/// One lane of a format load or store out of the buffer's range: every component the
/// instruction loads reads 0 (a D16 form writes its halves and keeps the others, as in
/// range); a store does nothing.
pub(crate) fn format_out_of_range(w: &mut Wave, inst: &Instruction, lane: usize) {
    let Some(mem) = inst.op().attrs().mem else {
        return;
    };
    let (comps, d16, hi) = format_components(mem.ty);
    if inst.info.widths[0] == 0 {
        return;
    }
    if !d16 {
        for k in 0..comps {
            set_vdst_dword(w, &inst.dst, lane, k, 0);
        }
        return;
    }
    for k in (0..comps).step_by(2) {
        let old = if w.sramecc {
            0
        } else {
            vsrc_dword(w, &inst.dst, lane, k / 2)
        };
        let v = if hi {
            old & 0xFFFF
        } else if k + 1 < comps {
            0
        } else {
            old & 0xFFFF_0000
        };
        set_vdst_dword(w, &inst.dst, lane, k / 2, v);
    }
}

/// One lane of a format load or store (`buffer_/tbuffer_load/store_format_[d16_][hi_]x..xyzw`,
/// Vega ISA §8.1.8; the conversions are [`BufferFormat`]'s). A 32-bit form moves one
/// component per VGPR. A D16 form packs two per VGPR (gfx9's packed D16): X in bits 15:0 of
/// the first, Y in 31:16, Z and W likewise in the second; a load leaves the half it does not
/// write as it was (`d16_x`, `d16_xyz`: the high half of the last VGPR; `d16_hi_x` writes
/// the high half and keeps the low one, as `buffer_load_short_d16_hi` does), a `d16_hi_x`
/// store takes X from the high half. A packed format (10/11/2-bit fields) is one dword: a
/// load reads it whole, a store writes it whole with the components the instruction lacks
/// as 0. Other formats move only the components the instruction names.
pub(crate) fn format_access(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
    lane: usize,
    f: BufferFormat,
    addr_of: &dyn Fn(u64) -> u64,
) -> Result<()> {
    let load = inst.info.widths[0] > 0;
    let ty = inst.op().attrs().mem.map_or(MemTy::Dword, |m| m.ty);
    let (comps, d16, hi) = format_components(ty);
    let mut b = [0u8; 16];
    if load {
        for (at, n) in f.pieces(comps) {
            read_global(ctx, addr_of(at as u64), &mut b[at..at + n])?;
        }
        let elem = u128::from_le_bytes(b);
        if d16 {
            for k in (0..comps).step_by(2) {
                let x = u32::from(f.load_d16(elem, k));
                let old = if w.sramecc {
                    0
                } else {
                    vsrc_dword(w, &inst.dst, lane, k / 2)
                };
                let v = if hi {
                    old & 0xFFFF | x << 16
                } else if k + 1 < comps {
                    x | u32::from(f.load_d16(elem, k + 1)) << 16
                } else {
                    old & 0xFFFF_0000 | x
                };
                set_vdst_dword(w, &inst.dst, lane, k / 2, v);
            }
        } else {
            for k in 0..comps {
                set_vdst_dword(w, &inst.dst, lane, k, f.load(elem, k));
            }
        }
    } else {
        let mut elem = 0u128;
        for k in 0..comps.min(f.count()) {
            elem |= if d16 {
                let v = vsrc_dword(w, &inst.src[1], lane, k / 2);
                let h = if hi || k % 2 == 1 { v >> 16 } else { v };
                f.store_d16(h as u16, k)
            } else {
                f.store(vsrc_dword(w, &inst.src[1], lane, k), k)
            };
        }
        let bytes = elem.to_le_bytes();
        for (at, n) in f.pieces(comps) {
            write_global(ctx, addr_of(at as u64), &bytes[at..at + n])?;
        }
    }
    Ok(())
}

/// The new memory value of a FLAT/GLOBAL atomic `ty` (the mnemonic after `atomic_`) from
/// the old value `old`, the data `src` and (cmpswap) the compare value `cmp`; `wide` for the
/// 64-bit (`_x2`, `_f64`) forms, else the values are the low 32 bits. `None` for an
/// operation the interpreter does not know.
///
/// Ref: Vega ISA §9.2 "FLAT ... Atomic operations" (`INC`: `tmp >= src ? 0 : tmp + 1`;
/// `DEC`: `tmp == 0 || tmp > src ? src : tmp - 1`; `CMPSWAP`: `tmp == cmp ? src : tmp`);
/// CDNA2 ISA §9.1 for `ADD_F32`, `PK_ADD_F16`, `ADD_F64`, `MIN_F64`, `MAX_F64`.
pub(crate) type AtomicFn = fn(u64, u64, u64, bool) -> u64;

/// `x` with a denormal flushed to a zero of the same sign.
pub(crate) fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// IEEE 754 `minNum` with −0 below +0: a NaN operand loses to a number; two NaNs give the
/// first, quieted. The float atomics' and `v_min_f64`'s IEEE-mode selection (CDNA2 ISA
/// §9.5.3 "NaN, signed zero and min/max").
pub(crate) fn f64_min(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::from_bits(a.to_bits() | 0x0008_0000_0000_0000),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f64::from_bits(a.to_bits() | b.to_bits()),
        _ => a.min(b),
    }
}

/// IEEE 754 `maxNum` with +0 above −0; NaNs as [`f64_min`].
pub(crate) fn f64_max(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::from_bits(a.to_bits() | 0x0008_0000_0000_0000),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f64::from_bits(a.to_bits() & b.to_bits()),
        _ => a.max(b),
    }
}

/// A bf16 as an f32 (exact).
pub(crate) fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// An f32 rounded to nearest even to a bf16; a NaN quieted, keeping its sign.
pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return (b >> 16) as u16 | 0x40;
    }
    let round = 0x7FFF + (b >> 16 & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// The packed-bf16 add of the gfx940 `*_pk_add_bf16` atomics (CDNA3 ISA: each half the bf16
/// sum, rounded to nearest even; denormals kept).
pub(crate) fn pk_add_bf16(a: u32, b: u32) -> u32 {
    let half =
        |x: u32, y: u32| u32::from(f32_to_bf16(bf16_to_f32(x as u16) + bf16_to_f32(y as u16)));
    half(a, b) | half(a >> 16, b >> 16) << 16
}

/// The read-modify-write of a memory atomic (FLAT/GLOBAL/MUBUF/SMEM; `None` for the LDS-only
/// operations).
pub(crate) fn atomic_op(op: AtomicOp) -> Option<AtomicFn> {
    Some(match op {
        AtomicOp::Swap => |_, s, _, _| s,
        AtomicOp::CmpSwap => |o, s, c, wide| {
            let eq = if wide { o == c } else { o as u32 == c as u32 };
            if eq {
                s
            } else {
                o
            }
        },
        AtomicOp::Add => |o, s, _, _| o.wrapping_add(s),
        AtomicOp::Sub => |o, s, _, _| o.wrapping_sub(s),
        AtomicOp::Smin => |o, s, _, wide| {
            if wide {
                (o as i64).min(s as i64) as u64
            } else {
                (o as i32).min(s as i32) as u32 as u64
            }
        },
        AtomicOp::Smax => |o, s, _, wide| {
            if wide {
                (o as i64).max(s as i64) as u64
            } else {
                (o as i32).max(s as i32) as u32 as u64
            }
        },
        AtomicOp::Umin => |o, s, _, wide| {
            if wide {
                o.min(s)
            } else {
                (o as u32).min(s as u32) as u64
            }
        },
        AtomicOp::Umax => |o, s, _, wide| {
            if wide {
                o.max(s)
            } else {
                (o as u32).max(s as u32) as u64
            }
        },
        AtomicOp::And => |o, s, _, _| o & s,
        AtomicOp::Or => |o, s, _, _| o | s,
        AtomicOp::Xor => |o, s, _, _| o ^ s,
        AtomicOp::Inc => |o, s, _, wide| {
            let (o, s) = if wide {
                (o, s)
            } else {
                (o as u32 as u64, s as u32 as u64)
            };
            if o >= s {
                0
            } else {
                o + 1
            }
        },
        AtomicOp::Dec => |o, s, _, wide| {
            let (o, s) = if wide {
                (o, s)
            } else {
                (o as u32 as u64, s as u32 as u64)
            };
            if o == 0 || o > s {
                s
            } else {
                o - 1
            }
        },
        // L2 float atomics: ADD_F32 flushes denormal inputs and results (CDNA2 ISA §9.5
        // table "floating point atomics denormal behavior"); PK_ADD_F16 and ADD_F64 keep them.
        AtomicOp::AddF32 => |o, s, _, _| {
            let r = flush32(f32::from_bits(o as u32)) + flush32(f32::from_bits(s as u32));
            flush32(r).to_bits() as u64
        },
        AtomicOp::PkAddF16 => |o, s, _, _| {
            let lo = f16::add(o as u16, s as u16);
            let hi = f16::add((o >> 16) as u16, (s >> 16) as u16);
            (lo as u64) | (hi as u64) << 16
        },
        AtomicOp::PkAddBf16 => |o, s, _, _| pk_add_bf16(o as u32, s as u32).into(),
        AtomicOp::AddF64 => |o, s, _, _| (f64::from_bits(o) + f64::from_bits(s)).to_bits(),
        AtomicOp::MinF64 => |o, s, _, _| f64_min(f64::from_bits(o), f64::from_bits(s)).to_bits(),
        AtomicOp::MaxF64 => |o, s, _, _| f64_max(f64::from_bits(o), f64::from_bits(s)).to_bits(),
        _ => return None,
    })
}
