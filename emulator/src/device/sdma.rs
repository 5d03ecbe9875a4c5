//! The emulated SDMA engine: one thread per SDMA queue (`CREATE_QUEUE` with
//! `KFD_IOC_QUEUE_TYPE_SDMA` or `_SDMA_XGMI`) running the SDMA 4.x packets that ROCR 5.2's
//! `BlitSdma` writes for gfx9 (and amdgpu's `sdma_v4_0.c` for the kernel's own rings).
//!
//! The queue, as amdkfd sets it up for ROCR (`kfd_ioctl.h`, libhsakmt `hsaKmtCreateQueue`):
//! a ring of `ring_size` bytes (a power of two) at `ring_base_address`, a 64-bit read pointer
//! at `read_pointer_address` and a 64-bit write pointer at `write_pointer_address`, both byte
//! offsets that only grow (gfx9's SDMA wraps them into the ring itself), and a doorbell: the
//! 8 bytes of the GPU's doorbell page at `doorbell_offset`. A producer writes packets at
//! `write pointer mod ring_size`, stores the new write pointer, then stores the same value to
//! the doorbell (ROCR's `UpdateWriteAndDoorbellRegister`). As the engine does, this one takes
//! the doorbell's value as the end of the work; the write pointer in memory is the producer's
//! own copy. After each packet it stores the read pointer (Release), which producers read to
//! reuse ring space.
//!
//! Packets (SDMA 4.x layouts: linux `drivers/gpu/drm/amd/amdgpu/vega10_sdma_pkt_open.h`, ROCR
//! `sdma_registers.h`; dword 0 holds the opcode in bits 0..8 and the sub-opcode in 8..16):
//!
//! - `NOP` (0): `1 + count` dwords (count in bits 16..30); a zero dword is a one-dword NOP
//!   (ROCR pads the ring's end with zeros).
//! - `COPY` (1), `LINEAR` (sub-op 0), 7 dwords: `count + 1` bytes (dword 1, a field of
//!   [`CountWidth`] bits: 22 on SDMA 4.0-4.2, 30 on SDMA 4.4) from the source (dwords 3, 4)
//!   to the destination (dwords 5, 6), as `memmove`.
//!   `LINEAR_RECT` (sub-op 4), 13 dwords: a sub-window of `rect_x + 1` elements by
//!   `rect_y + 1` rows by `rect_z + 1` slices, elements of `1 << element` bytes (bits 29..32
//!   of dword 0), each side's pitch and slice pitch in elements minus one.
//!   Byte swapping (`dst_swap`/`src_swap`) and broadcast copies are not emulated, nor a
//!   destination whose rows overlap (a pitch below `rect_x + 1`, or a slice pitch below
//!   `rect_y` pitches plus `rect_x + 1` with more than one slice: ROCR's
//!   `hsa_amd_memory_async_copy_rect` never asks for one): the engine would write the same
//!   bytes once per overlapping row, up to 2^25 rows of 256 KiB over a few pages, which the
//!   emulator does not spend its time on. With disjoint destination rows a packet writes at
//!   most the bytes mapped at its destination, row by row.
//! - `FENCE` (5), 4 dwords: stores the 32-bit data to the 4-byte aligned address.
//! - `TRAP` (6), 2 dwords: raises the engine's trap interrupt with the 28-bit `int_ctx`,
//!   which amdkfd turns into KFD events (`kfd_signal_event_interrupt(pasid, int_ctx, 28)`):
//!   the same path as the CP's `RELEASE_MEM` interrupt ([`SdmaMemory::trap`]).
//! - `POLL_REGMEM` (8), 6 dwords: with `mem_poll` (bit 31) waits until
//!   `(memory & mask) func value` holds for the 32-bit word at the address (`func`, bits
//!   28..31: 0 always, 1 `<`, 2 `<=`, 3 `==`, 4 `!=`, 5 `>=`, 6 `>`); the queue does not move
//!   meanwhile (ROCR's dependency waits; retry counts are not counted: ROCR retries forever).
//!   With `hdp_flush` (bit 26), or a register poll whose function is "always" (ROCR's
//!   `hdp_flush_cmd`), it is an HDP flush: the emulated device has no HDP, nothing to wait
//!   for. Any other register poll is an error.
//! - `ATOMIC` (10), 8 dwords: the TC atomic `operation` (bits 25..32) on the 32-bit or 64-bit
//!   word at the address with the source (dwords 3, 4) and compare (5, 6) data: swap
//!   (0x07/0x27), compare-swap (0x08/0x28), add (0x0f/0x2f, ROCR's signal decrement adds -1),
//!   sub, smin, umin, smax, umax, and, or, xor, inc, dec (0x10..0x19/0x30..0x39). The loop
//!   bit (16) makes a compare-swap retry until it succeeds (the queue waits meanwhile, as on
//!   a `POLL_REGMEM`).
//! - `CONST_FILL` (11), 5 dwords: with `fillsize` 2 (dwords, bits 30..32) fills
//!   `(count >> 2) + 1` dwords at the 4-byte aligned destination with the data (amdgpu
//!   writes `bytes - 1`, ROCR `bytes - 4`: the low two bits do not count); the count field
//!   is as wide as COPY LINEAR's.
//! - `TIMESTAMP` (13), `GET_GLOBAL_TIMESTAMP` (sub-op 2), 3 dwords: stores the GPU clock
//!   counter (the ticks of `GET_CLOCK_COUNTERS.gpu_clock_counter`) as 64 bits at the
//!   8-byte aligned address (ROCR's copy profiling: the signal's start and end times).
//!
//! Anything else — another opcode or sub-opcode, a field value the engine does not emulate,
//! a packet longer than what was written — stops the queue with `INVALID_PACKET_FORMAT`
//! naming the packet, its place in the ring and the value. A packet's memory range may cross
//! from one buffer object into the next, as on the engine, which needs only every page of it
//! mapped in the GPU's VM; a byte the GPU cannot reach is a `MEMORY_FAULT` naming the access
//! and that byte. A stopped SDMA queue goes into the device's log of queue errors; a memory
//! fault is reported as the compute queues' are (`Device::report_queue_error`: the KFD
//! memory event), anything else as amdkfd reports a hung engine, by a GPU reset
//! ([`report_hang`]). Nothing is skipped silently.
//!
//! The packets are read through [`hsa_core::wire::sdma`] (the layout hsa-core's producer
//! writes with), in the engine's [`SdmaFormat`]; the rules above are the engine's own.

use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hsa_core::platform::NodeProperties;
use hsa_core::{error, Error, Status};
use rustix::io::Errno;
use zerocopy::IntoBytes;

use hsa_core::wire::sdma::{
    Atomic, ConstFill, CopyLinear, CopyLinearRect, Packet, PollRegMem, RectSide, Repr, SdmaFormat,
    FILLSIZE_DWORDS, OP_COPY, OP_TIMESTAMP,
};
use hsa_core::wire::WireError;
use hsa_linux::kfd::abi::*;

use super::mem::{CopyFault, Region, RegionFault};
use super::memory::{Allocs, DeviceSpan, MemoryFault};
use super::queue::{IdlePoll, QueueCtl, BLOCKED_POLL};
use super::queue_manager::{free_queue_id, new_ctl, new_doorbell, start, Started};
use super::{lock, Device};

/// What the SDMA engine reaches: the GPU's view of memory, its clock and its interrupt line.
pub(crate) trait SdmaMemory {
    /// The live memory behind the device range `va..va + len`, which may cross from one
    /// allocation into the next (the engine needs every page mapped, nothing more).
    ///
    /// # Errors
    /// `Status::MemoryFault` naming the access (`what`) and the first byte of the range that
    /// is not memory the GPU reaches.
    fn span(&self, va: u64, len: u64, what: &str) -> Result<DeviceSpan, Error>;

    /// The GPU clock counter, in the ticks of `GET_CLOCK_COUNTERS.gpu_clock_counter`.
    fn gpu_clock(&self) -> u64;

    /// Raises the engine's trap interrupt with the 28-bit context `int_ctx`.
    fn trap(&self, int_ctx: u32);

    /// The memory fault of an access (`what`) that reached, at device address `va`, user
    /// memory its owner unmapped (a `USERPTR` buffer object whose pages went: amdgpu
    /// invalidates it, and the engine's access faults), recorded for the memory event.
    fn unmapped(&self, va: u64, what: &str) -> Error;
}

/// The width in bits of the byte-count fields of `COPY LINEAR` (dword 1) and `CONST_FILL`
/// (dword 4), which depends on the SDMA engine's version:
///
/// - SDMA 4.0 to 4.2 (gfx900 Vega 10 4.0.0, gfx906 Vega 20 4.2.0, gfx908 Arcturus 4.2.2,
///   gfx90c Renoir 4.1.2) and SDMA 5.0 (gfx101x): 22 bits. `vega10_sdma_pkt_open.h`'s
///   `SDMA_PKT_COPY_LINEAR_COUNT_count` mask 0x003FFFFF; amdgpu's `sdma_v4_0_buffer_funcs`
///   `copy_max_bytes`/`fill_max_bytes` `1 << 22`.
/// - SDMA 4.4 (gfx90a Aldebaran 4.4.0, gfx940/941/942 4.4.2, gfx950 4.4.5), SDMA 5.2
///   (gfx103x), SDMA 6 and 7 (gfx11, gfx12): 30 bits. amdgpu's `sdma_v4_4_buffer_funcs`
///   (IP 4.4.0 and later in `sdma_v4_0.c`), `sdma_v4_4_2_buffer_funcs` and
///   `sdma_v5_2_buffer_funcs` copy and fill up to `1 << 30` bytes ("SDMA 4.4.x has increased
///   transfer limits"); ROCR 7's `GpuAgent::CreateBlitSdma` uses `count_ext` (30 bits,
///   `sdma_registers.h`) for gfx90a and gfx9.4+ and for gfx10.3+, the 22-bit `count`
///   elsewhere.
///
/// A count with bits above the width is a packet the engine does not run.
///
/// The widths are the wire module's [`SdmaFormat`]s (`SDMA_4_0`, `SDMA_4_4`; the choice by
/// target is [`SdmaFormat::for_gfx_target_version`]); this is the engine's handle on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountWidth(&'static SdmaFormat);

impl CountWidth {
    /// 22 bits: SDMA 4.0-4.2 and 5.0.
    #[cfg(any(test, feature = "_fuzz"))]
    pub(crate) const SDMA_4_0: CountWidth = CountWidth(&hsa_core::wire::sdma::SDMA_4_0);
    /// 30 bits: SDMA 4.4, 5.2, 6 and 7.
    #[cfg(any(test, feature = "_fuzz"))]
    pub(crate) const SDMA_4_4: CountWidth = CountWidth(&hsa_core::wire::sdma::SDMA_4_4);

    /// The width on the GPU of `gfx_target_version` (the topology's `major * 10000 + minor *
    /// 100 + stepping`: 90010 for gfx90a).
    pub(crate) fn for_target(gfx_target_version: u32) -> CountWidth {
        CountWidth(SdmaFormat::for_gfx_target_version(gfx_target_version))
    }

    /// The width in bits.
    pub(crate) fn bits(self) -> u32 {
        self.0.count_bits
    }

    /// The packet format of an engine with this width.
    pub(crate) fn format(self) -> &'static SdmaFormat {
        self.0
    }

    /// `count` if it fits in the field, else an error naming the packet's dword.
    #[cfg(test)]
    fn check(self, packet: &str, dword: u32) -> Result<u32, Error> {
        if dword >> self.bits() != 0 {
            return Err(self.too_wide(packet, dword));
        }
        Ok(dword)
    }

    /// The error of a `packet` count dword with bits above the width.
    fn too_wide(self, packet: &str, dword: u32) -> Error {
        bad(format_args!(
            "{packet} count dword {dword:#010x} has bits above the {}-bit count of this SDMA \
             engine ({})",
            self.bits(),
            self.0.name
        ))
    }
}

/// What one packet did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The packet ran; it was this many dwords long.
    Done(u32),
    /// A `POLL_REGMEM` whose condition does not hold yet: nothing moved, try again later.
    Wait,
}

fn bad(what: std::fmt::Arguments<'_>) -> Error {
    error!(Status::InvalidPacketFormat, "{what}")
}

/// Runs the packet at the start of `dw` (the dwords written and not yet read, in ring
/// order) against `mem`, on an engine whose count fields are `width` wide (reading it as that
/// SDMA version lays it out, [`hsa_core::wire::sdma`]).
///
/// # Errors
/// `Status::InvalidPacketFormat` naming the packet and field for anything the engine does not
/// run (module docs), or for a packet longer than `dw`; `Status::MemoryFault` from `mem`.
pub(crate) fn execute(dw: &[u32], mem: &dyn SdmaMemory, width: CountWidth) -> Result<Step, Error> {
    let header = dw.first().copied().unwrap_or(0);
    let op = header & 0xff;
    let sub_op = (header >> 8) & 0xff;
    let packet = match Packet::new_checked(dw) {
        Ok(p) => p,
        Err(WireError::UnknownOpcode { .. }) => {
            return Err(match op {
                OP_COPY => bad(format_args!(
                    "COPY sub-opcode {sub_op} (header {header:#010x}) is not one the emulated \
                     SDMA engine runs (LINEAR 0, LINEAR_RECT 4)"
                )),
                OP_TIMESTAMP => bad(format_args!(
                    "TIMESTAMP sub-opcode {sub_op} (header {header:#010x}) is not one the \
                     emulated SDMA engine runs (GET_GLOBAL_TIMESTAMP 2)"
                )),
                _ => bad(format_args!(
                    "opcode {op} (header {header:#010x}) is not one the emulated SDMA engine \
                     runs (NOP 0, COPY 1, FENCE 5, TRAP 6, POLL_REGMEM 8, ATOMIC 10, \
                     CONST_FILL 11, TIMESTAMP 13)"
                )),
            });
        }
        Err(WireError::Truncated { needed: 1, .. }) => {
            return Err(bad(format_args!("no packet to run")))
        }
        Err(WireError::Truncated {
            needed, available, ..
        }) => {
            return Err(bad(format_args!(
                "packet {header:#010x} (opcode {op}) is {needed} dwords, but only {available} \
                 were written before the write pointer"
            )))
        }
        Err(e) => return Err(bad(format_args!("{e}"))),
    };
    let len = packet.len_dwords().unwrap_or(1) as u32;
    let repr = Repr::parse(&packet, width.format()).map_err(|e| match e {
        WireError::ReservedBits { field, dword, .. } => {
            width.too_wide(field.trim_end_matches(" count"), dword)
        }
        e => bad(format_args!("{e}")),
    })?;
    match repr {
        Repr::Nop { .. } => {}
        Repr::CopyLinear(c) => copy_linear(&c, header, mem)?,
        Repr::CopyLinearRect(r) => copy_rect(&r, mem)?,
        Repr::Fence { addr, data } => {
            // SeqCst (rmw32): after everything before it, before whoever polls the word.
            rmw32(mem, addr, "FENCE write", |_| Some(data))?;
        }
        Repr::Trap { int_context } => mem.trap(int_context),
        Repr::PollRegMem(p) => {
            if !poll_regmem(&p, header, mem)? {
                return Ok(Step::Wait);
            }
        }
        Repr::Atomic(a) => {
            if !atomic(&a, header, mem)? {
                return Ok(Step::Wait);
            }
        }
        Repr::ConstFill(c) => const_fill(&c, header, mem)?,
        Repr::Timestamp { addr } => {
            let now = mem.gpu_clock();
            rmw64(mem, addr, "TIMESTAMP write", |_| Some(now))?;
        }
    }
    Ok(Step::Done(len))
}

/// Read-modify-write of the aligned 32-bit word at `va` (SeqCst: the engine's accesses are
/// ordered with the host's and the other engines' accesses to the word, a signal's value):
/// `op(old)` is the new value, `None` to leave it; returns the old value. A word of user
/// memory whose owner unmapped it is a memory fault ([`SdmaMemory::unmapped`]).
fn rmw32(
    mem: &dyn SdmaMemory,
    va: u64,
    what: &str,
    mut op: impl FnMut(u32) -> Option<u32>,
) -> Result<u32, Error> {
    let misaligned = || bad(format_args!("{what} address {va:#x} is not 4-byte aligned"));
    if va % 4 != 0 {
        return Err(misaligned());
    }
    let r = mem.span(va, 4, what)?.single().ok_or_else(misaligned)?;
    let fault = |f: RegionFault| mem.unmapped(va + f.offset, what);
    let mut old = r
        .try_cas_u32(0, 0, 0)
        .map_err(fault)?
        .ok_or_else(misaligned)?;
    loop {
        let Some(new) = op(old) else {
            return Ok(old);
        };
        match r.try_cas_u32(0, old, new).map_err(fault)? {
            Some(v) if v == old => return Ok(old),
            Some(v) => old = v,
            None => return Err(misaligned()),
        }
    }
}

/// [`rmw32`] of the aligned 64-bit word at `va`.
fn rmw64(
    mem: &dyn SdmaMemory,
    va: u64,
    what: &str,
    mut op: impl FnMut(u64) -> Option<u64>,
) -> Result<u64, Error> {
    let misaligned = || bad(format_args!("{what} address {va:#x} is not 8-byte aligned"));
    if va % 8 != 0 {
        return Err(misaligned());
    }
    let r = mem.span(va, 8, what)?.single().ok_or_else(misaligned)?;
    let fault = |f: RegionFault| mem.unmapped(va + f.offset, what);
    let mut old = r
        .try_cas_u64(0, 0, 0)
        .map_err(fault)?
        .ok_or_else(misaligned)?;
    loop {
        let Some(new) = op(old) else {
            return Ok(old);
        };
        match r.try_cas_u64(0, old, new).map_err(fault)? {
            Some(v) if v == old => return Ok(old),
            Some(v) => old = v,
            None => return Err(misaligned()),
        }
    }
}

/// The memory fault of a copy whose side `f` faulted, the copy reading from `src` and
/// writing to `dst` (device addresses of the spans' starts).
fn copy_fault(mem: &dyn SdmaMemory, f: CopyFault, src: u64, dst: u64, what: &str) -> Error {
    match f {
        CopyFault::Source(o) => mem.unmapped(src + o.offset, &format!("{what} source read")),
        CopyFault::Destination(o) => {
            mem.unmapped(dst + o.offset, &format!("{what} destination write"))
        }
    }
}

fn copy_linear(c: &CopyLinear, header: u32, mem: &dyn SdmaMemory) -> Result<(), Error> {
    let bytes = u64::from(c.count) + 1;
    if c.dst_sw != 0 || c.src_sw != 0 {
        return Err(bad(format_args!(
            "COPY LINEAR byte swap (dst_sw {}, src_sw {}) is not emulated",
            c.dst_sw, c.src_sw
        )));
    }
    if c.broadcast {
        return Err(bad(format_args!(
            "COPY LINEAR broadcast (header {header:#010x}) is not emulated"
        )));
    }
    let s = mem.span(c.src, bytes, "COPY LINEAR source read")?;
    let d = mem.span(c.dst, bytes, "COPY LINEAR destination write")?;
    d.try_copy_from(&s)
        .map_err(|f| copy_fault(mem, f, c.src, c.dst, "COPY LINEAR"))
}

fn copy_rect(r: &CopyLinearRect, mem: &dyn SdmaMemory) -> Result<(), Error> {
    if r.element > 4 {
        return Err(bad(format_args!(
            "COPY LINEAR_RECT element size code {} is above 4 (16 bytes)",
            r.element
        )));
    }
    let element = 1u64 << r.element;
    if r.dst_sw != 0 || r.src_sw != 0 {
        return Err(bad(format_args!(
            "COPY LINEAR_RECT byte swap (dst_sw {}, src_sw {}) is not emulated",
            r.dst_sw, r.src_sw
        )));
    }
    let rx = u64::from(r.rect_x) + 1;
    let ry = u64::from(r.rect_y) + 1;
    let rz = u64::from(r.rect_z) + 1;
    let row_bytes = rx * element;
    // Disjoint destination rows bound the work by the memory written (see the module's doc).
    let (dst_pitch, dst_slice) = (u64::from(r.dst.pitch) + 1, u64::from(r.dst.slice_pitch) + 1);
    if ry > 1 && dst_pitch < rx {
        return Err(bad(format_args!(
            "COPY LINEAR_RECT destination pitch {dst_pitch} elements is below the rectangle's \
             width {rx}: overlapping destination rows are not emulated"
        )));
    }
    if rz > 1 && dst_slice < (ry - 1) * dst_pitch + rx {
        return Err(bad(format_args!(
            "COPY LINEAR_RECT destination slice pitch {dst_slice} elements is below the \
             {} elements of a slice's {ry} rows: overlapping destination slices are not \
             emulated",
            (ry - 1) * dst_pitch + rx
        )));
    }
    // One side's row y of slice z: base plus (x, y, z) offsets and pitches in elements.
    let at = |s: &RectSide, y: u64, z: u64| {
        let (pitch, slice) = (u64::from(s.pitch) + 1, u64::from(s.slice_pitch) + 1);
        let elems = u64::from(s.x) + (u64::from(s.y) + y) * pitch + (u64::from(s.z) + z) * slice;
        s.addr.checked_add(elems * element)
    };
    for z in 0..rz {
        for y in 0..ry {
            let (Some(s), Some(d)) = (at(&r.src, y, z), at(&r.dst, y, z)) else {
                return Err(bad(format_args!(
                    "COPY LINEAR_RECT row {y} of slice {z} lies past the end of the address space"
                )));
            };
            let sr = mem.span(s, row_bytes, "COPY LINEAR_RECT source read")?;
            let dr = mem.span(d, row_bytes, "COPY LINEAR_RECT destination write")?;
            dr.try_copy_from(&sr)
                .map_err(|f| copy_fault(mem, f, s, d, "COPY LINEAR_RECT"))?;
        }
    }
    Ok(())
}

/// Whether the `POLL_REGMEM` condition holds.
fn poll_regmem(p: &PollRegMem, header: u32, mem: &dyn SdmaMemory) -> Result<bool, Error> {
    let func = p.func;
    if p.hdp_flush || (!p.mem_poll && func == 0) {
        // An HDP flush: the emulated device has no HDP; every write is already visible.
        fence(Ordering::SeqCst);
        return Ok(true);
    }
    if !p.mem_poll {
        return Err(bad(format_args!(
            "POLL_REGMEM of register {:#x} (function {func}): the emulated SDMA engine has no \
             registers to poll",
            p.addr as u32
        )));
    }
    // SeqCst (rmw32 reading): ordered after the store of whoever changes the word.
    let v = rmw32(mem, p.addr, "POLL_REGMEM read", |_| None)? & p.mask;
    let reference = p.value;
    Ok(match func {
        0 => true,
        1 => v < reference,
        2 => v <= reference,
        3 => v == reference,
        4 => v != reference,
        5 => v >= reference,
        6 => v > reference,
        _ => {
            return Err(bad(format_args!(
                "POLL_REGMEM function 7 (header {header:#010x}) is reserved"
            )))
        }
    })
}

/// The result of TC atomic `op` (the 64-bit code; 32-bit operands are zero-extended) on
/// `old` with source `src` and compare `cmp`, for `bits` 32 or 64; `None` for an operation
/// the engine does not emulate.
fn atomic_result(op: u32, old: u64, src: u64, cmp: u64, bits: u32) -> Option<u64> {
    let mask = if bits == 32 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let signed = |v: u64| {
        if bits == 32 {
            i64::from(v as u32 as i32)
        } else {
            v as i64
        }
    };
    Some(
        match op {
            0x27 => src,
            0x28 => {
                if old == cmp {
                    src
                } else {
                    old
                }
            }
            0x2f => old.wrapping_add(src),
            0x30 => old.wrapping_sub(src),
            0x31 => {
                if signed(src) < signed(old) {
                    src
                } else {
                    old
                }
            }
            0x32 => old.min(src),
            0x33 => {
                if signed(src) > signed(old) {
                    src
                } else {
                    old
                }
            }
            0x34 => old.max(src),
            0x35 => old & src,
            0x36 => old | src,
            0x37 => old ^ src,
            0x38 => {
                if old >= src {
                    0
                } else {
                    old + 1
                }
            }
            0x39 => {
                if old == 0 || old > src {
                    src
                } else {
                    old - 1
                }
            }
            _ => return None,
        } & mask,
    )
}

/// Runs an `ATOMIC`; `false` for a looping compare-swap that did not swap yet (nothing was
/// written: the queue retries the packet, as it retries a `POLL_REGMEM`).
fn atomic(a: &Atomic, header: u32, mem: &dyn SdmaMemory) -> Result<bool, Error> {
    let op = u32::from(a.op);
    let looped = a.looped;
    let (va, src, cmp) = (a.addr, a.src_data, a.cmp_data);
    let (code, bits) = match op {
        0x07..=0x08 | 0x0f..=0x19 => (op + 0x20, 32),
        0x27..=0x28 | 0x2f..=0x39 => (op, 64),
        _ => (0, 0),
    };
    if bits == 0 || atomic_result(code, 0, 0, 0, bits).is_none() {
        return Err(bad(format_args!(
            "ATOMIC operation {op:#04x} (header {header:#010x}) is not one the emulated SDMA \
             engine runs (swap 0x07/0x27, cmpswap 0x08/0x28, add..dec 0x0f-0x19/0x2f-0x39)"
        )));
    }
    let done = if bits == 64 {
        let old = rmw64(mem, va, "ATOMIC", |old| {
            atomic_result(code, old, src, cmp, 64)
        })?;
        code != 0x28 || old == cmp
    } else {
        let (s, c) = (src & 0xffff_ffff, cmp & 0xffff_ffff);
        let old = rmw32(mem, va, "ATOMIC", |old| {
            atomic_result(code, u64::from(old), s, c, 32).map(|v| v as u32)
        })?;
        code != 0x28 || u64::from(old) == c
    };
    Ok(done || !looped)
}

fn const_fill(c: &ConstFill, header: u32, mem: &dyn SdmaMemory) -> Result<(), Error> {
    if u32::from(c.fillsize) != FILLSIZE_DWORDS {
        return Err(bad(format_args!(
            "CONST_FILL fillsize {} (header {header:#010x}): the emulated SDMA engine fills \
             dwords (2) only",
            c.fillsize
        )));
    }
    if c.sw != 0 {
        return Err(bad(format_args!(
            "CONST_FILL byte swap {} is not emulated",
            c.sw
        )));
    }
    let va = c.dst;
    if va % 4 != 0 {
        return Err(bad(format_args!(
            "CONST_FILL destination {va:#x} is not 4-byte aligned"
        )));
    }
    let dwords = u64::from(c.count >> 2) + 1;
    let r = mem.span(va, dwords * 4, "CONST_FILL write")?;
    let data = c.data.to_le_bytes().repeat(dwords as usize);
    r.try_write_from(&data)
        .map_err(|f| mem.unmapped(va + f.offset, "CONST_FILL write"))
}

/// What an SDMA queue's thread needs.
pub(crate) struct SdmaThread {
    pub(crate) device: Arc<Device>,
    pub(crate) ctl: Arc<QueueCtl>,
    /// The ring's memory (`ring_size` bytes), pinned while the queue lives.
    pub(crate) ring: Region,
    /// The 64-bit read pointer the engine writes back.
    pub(crate) rptr: Region,
    /// The queue's doorbell: its 8 bytes of the GPU's doorbell page.
    pub(crate) doorbell: Region,
    pub(crate) queue_id: u32,
    pub(crate) gpu_id: u32,
    /// The width of the GPU's SDMA count fields.
    pub(crate) count_width: CountWidth,
}

impl SdmaThread {
    fn doorbell(&self) -> u64 {
        // Acquire pairs with the producer's Release store of the doorbell (after its packet
        // and write-pointer stores).
        self.doorbell
            .atomic_u64(0)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Reads the dwords written between `rptr` and `end` (bytes, both growing) into `out`,
    /// in ring order (`out`'s earlier contents are dropped; its allocation is reused from one
    /// batch to the next).
    fn pending(&self, rptr: u64, end: u64, out: &mut Vec<u32>) -> Result<(), Error> {
        let size = self.ring_bytes();
        let n = end.wrapping_sub(rptr);
        if n > size || n % 4 != 0 || rptr % 4 != 0 {
            return Err(error!(
                Status::InvalidPacketFormat,
                "SDMA queue {}: doorbell (write pointer) {end:#x} against read pointer \
                 {rptr:#x}: not a whole number of dwords within the {size}-byte ring",
                self.queue_id
            ));
        }
        out.clear();
        out.resize((n / 4) as usize, 0);
        let bytes = out.as_mut_bytes();
        let mut at = rptr;
        let mut done = 0usize;
        while at != end {
            let off = at % size;
            let chunk = (size - off).min(end - at);
            if let Some(r) = self.ring.sub(off, chunk) {
                r.read_into(&mut bytes[done..done + chunk as usize]);
            }
            done += chunk as usize;
            at += chunk;
        }
        // The ring holds little-endian dwords (a no-op on x86).
        for d in out.iter_mut() {
            *d = u32::from_le(*d);
        }
        Ok(())
    }

    fn ring_bytes(&self) -> u64 {
        self.ring.len() as u64
    }

    fn store_rptr(&self, rptr: u64) {
        if let Some(w) = self.rptr.atomic_u64(0) {
            // Release pairs with the producer's Acquire load of the read pointer before it
            // reuses ring space.
            w.store(rptr, Ordering::Release);
        }
    }

    /// Runs what was written from `rptr` up to `end` (read into `dw`); returns the new read
    /// pointer and whether a `POLL_REGMEM` made it wait.
    fn run_pending(
        &self,
        mut rptr: u64,
        end: u64,
        dw: &mut Vec<u32>,
    ) -> Result<(u64, bool), (Error, Option<MemoryFault>)> {
        self.pending(rptr, end, dw).map_err(|e| (e, None))?;
        let allocs = self
            .device
            .allocs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let host = SdmaHost {
            device: &self.device,
            allocs: &allocs,
            gpu_id: self.gpu_id,
            fault: std::cell::Cell::new(None),
        };
        let mut i = 0usize;
        while i < dw.len() {
            match execute(&dw[i..], &host, self.count_width) {
                Ok(Step::Done(n)) => {
                    i += n as usize;
                    rptr += u64::from(n) * 4;
                    self.device
                        .stats
                        .sdma_packets
                        .fetch_add(1, Ordering::SeqCst);
                    self.store_rptr(rptr);
                }
                Ok(Step::Wait) => return Ok((rptr, true)),
                Err(e) => {
                    let ring_off = rptr % self.ring_bytes();
                    let e = error!(
                        e.status(),
                        "SDMA queue {} at ring offset {ring_off:#x} (read pointer {rptr:#x}): {}",
                        self.queue_id,
                        e.detail()
                    );
                    return Err((e, host.fault.get()));
                }
            }
        }
        Ok((rptr, false))
    }

    /// The thread body: runs packets until the queue is destroyed or a packet stops it.
    ///
    /// Between batches it watches the doorbell as the CP thread watches its queue, by the
    /// same [`IdlePoll`]: for [`IDLE_SPIN`](super::queue::IDLE_SPIN) after the last packet
    /// it reads the doorbell once per spin-loop hint, so a producer that submits again within
    /// that window is seen at once; then it sleeps [`POLL_MIN`](super::queue::POLL_MIN),
    /// doubling up to [`POLL_MAX`](super::queue::POLL_MAX), between reads.
    pub(crate) fn run(self) {
        self.store_rptr(0);
        let mut rptr = 0u64;
        let mut idle = IdlePoll::new();
        // The pending dwords of a batch; kept from one batch to the next.
        let mut dw = Vec::new();
        while !self.ctl.stop.load(Ordering::SeqCst) {
            let kicks = self.ctl.kicks();
            if self.ctl.halted() {
                self.ctl.sleep(kicks, Duration::from_secs(1));
                continue;
            }
            let end = self.doorbell();
            if end == rptr {
                idle.idle(&self.ctl, kicks);
                continue;
            }
            match self.run_pending(rptr, end, &mut dw) {
                Ok((r, waiting)) => {
                    let moved = r != rptr;
                    rptr = r;
                    if moved {
                        idle.active();
                    }
                    if waiting && !moved {
                        self.ctl.sleep(kicks, BLOCKED_POLL);
                    }
                }
                Err((e, fault)) => {
                    report_stop(&self.device, self.queue_id, self.gpu_id, &e, fault);
                    // Stopped: wait to be destroyed.
                    while !self.ctl.stop.load(Ordering::SeqCst) {
                        let k = self.ctl.kicks();
                        self.ctl.sleep(k, Duration::from_secs(1));
                    }
                    return;
                }
            }
        }
    }
}

/// Tells the process that SDMA queue `queue_id` stopped with `error`: a memory fault as the
/// CP's are ([`Device::report_queue_error`]: the KFD memory event with the address), anything
/// else by [`report_hang`].
fn report_stop(
    device: &Device,
    queue_id: u32,
    gpu_id: u32,
    error: &Error,
    fault: Option<MemoryFault>,
) {
    if error.status() == Status::MemoryFault {
        // An SDMA queue has no context save area: amdkfd has no exception to send for it.
        device.report_queue_error(queue_id, gpu_id, error, fault, false, 0);
        return;
    }
    log::error!(
        "SDMA queue {queue_id} stopped with {}: {}",
        error.status().c_name(),
        error.detail()
    );
    device.record_queue_error(queue_id, error);
    report_hang(device, gpu_id);
}

/// An SDMA engine that met a packet it does not run stops, and nothing in the queue tells
/// anyone: an SDMA queue has no `queue_inactive_signal`, and the copies' completion signals
/// are never decremented. On a GPU the scheduler finds the engine hung (its queue cannot be
/// preempted) and amdgpu resets the GPU; amdkfd then sets every `KFD_IOC_EVENT_HW_EXCEPTION`
/// event of the process with `kfd_signal_reset_event`'s data: the GPU, `memory_lost` 1, the
/// cause `KFD_HW_EXCEPTION_GPU_HANG`, and `reset_type` left 0 (whole-GPU reset). The emulated
/// device reports the stop so at once. ROCR's `Signal::WaitAny` (its exception handler's
/// wait) acts on a hardware-exception event only when `memory_lost` is set: it then aborts
/// with "HW Exception by GPU node-N ... reason :GPU Hang" instead of waiting for ever on the
/// copy; hsa-rt's queue monitor ends every queue of the GPU.
fn report_hang(device: &Device, gpu_id: u32) {
    use hsa_linux::kfd::abi::{
        HsaHwExceptionData, KFD_HW_EXCEPTION_GPU_HANG, KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
        KFD_IOC_EVENT_HW_EXCEPTION,
    };
    let d = HsaHwExceptionData {
        reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
        reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
        memory_lost: 1,
        gpu_id,
    };
    let mut data = [0u8; 32];
    data[..16].copy_from_slice(d.as_bytes());
    device
        .events
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .signal_type(KFD_IOC_EVENT_HW_EXCEPTION, data);
    device
        .smi
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .gpu_reset(gpu_id);
}

/// The [`SdmaMemory`] of one SDMA queue while it holds the allocation table's read lock.
struct SdmaHost<'a> {
    device: &'a Device,
    allocs: &'a Allocs,
    gpu_id: u32,
    fault: std::cell::Cell<Option<MemoryFault>>,
}

impl SdmaMemory for SdmaHost<'_> {
    fn span(&self, va: u64, len: u64, what: &str) -> Result<DeviceSpan, Error> {
        self.allocs
            .device_span(self.gpu_id, va, len, what)
            .map_err(|f| {
                self.fault.set(Some(MemoryFault::of(f.address, what)));
                f.error
            })
    }

    fn gpu_clock(&self) -> u64 {
        super::clock::monotonic_ns()
    }

    fn trap(&self, int_ctx: u32) {
        // amdkfd: kfd_signal_event_interrupt(pasid, int_ctx, 28); 28 bits name any signal
        // event id (KFD_SIGNAL_EVENT_LIMIT is 4096), so it is the CP's lookup. Waking the
        // events' waiters is the table's part.
        if let Some(sink) = self.device.event_sink(self.gpu_id) {
            return sink(int_ctx);
        }
        self.device
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .end_of_pipe_interrupt(int_ctx);
    }

    fn unmapped(&self, va: u64, what: &str) -> Error {
        self.fault.set(Some(MemoryFault::of(va, what)));
        error!(
            Status::MemoryFault,
            "memory fault on GPU {:#x}: {what} at {va:#x}: user memory that was unmapped",
            self.gpu_id
        )
    }
}

/// CREATE_QUEUE of an SDMA queue, after
/// [`queue_properties_from_user`](super::queue_manager::queue_properties_from_user)
/// (amdkfd `allocate_sdma_queue`, `kfd_queue_acquire_buffers`): the ring, read and write
/// pointers must lie in memory mapped to the GPU (the pointers 8-byte aligned: the engine
/// writes the 64-bit read pointer back); `ENOSPC` past the GPU's queues, `ENOMEM` when no
/// SDMA queue slot is free ([`SdmaTarget`]). EOP and context-save buffers are not used.
pub(crate) fn create_queue(
    device: &Arc<Device>,
    a: &mut CreateQueueArgs,
    target: SdmaTarget,
) -> Result<(), Errno> {
    create_queue_watching(device, a, SdmaDoorbell::Own, target)
}

/// Which SDMA queue slot a new queue takes (amdkfd's `allocate_sdma_queue`). A GPU has
/// `num_sdma_queues_per_engine` slots on each of its PCIe engines (`num_sdma_engines`) and on
/// each of its xGMI engines (`num_sdma_xgmi_engines`); slot `i` of a kind is queue
/// `i / engines` of that kind's engine `i % engines`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SdmaTarget {
    /// `KFD_IOC_QUEUE_TYPE_SDMA` (`false`) or `_SDMA_XGMI` (`true`): the lowest free slot of
    /// that kind.
    Kind(bool),
    /// `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID` (interface 1.17): a free slot on engine id `N`
    /// (the PCIe engines first, then the xGMI ones), the lowest queue on it; the queue is then
    /// of that engine's kind. The caller checked `N` against the engines.
    Engine(u32),
}

impl SdmaTarget {
    /// The target of an SDMA `queue_type` that is not by engine id.
    pub(crate) fn of(queue_type: u32) -> SdmaTarget {
        SdmaTarget::Kind(queue_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI)
    }

    /// The queue's kind (`KFD_IOC_QUEUE_TYPE_SDMA` or `_SDMA_XGMI`) and slot, given the
    /// slots of GPU `p` already taken (`taken(xgmi, slot)`); `None` when none is free.
    fn slot(self, p: &NodeProperties, taken: impl Fn(bool, u32) -> bool) -> Option<(u32, u32)> {
        let (xgmi, first, step) = match self {
            SdmaTarget::Kind(xgmi) => (xgmi, 0, 1),
            SdmaTarget::Engine(e) if e < p.num_sdma_engines => (false, e, p.num_sdma_engines),
            SdmaTarget::Engine(e) => (true, e - p.num_sdma_engines, p.num_sdma_xgmi_engines.max(1)),
        };
        let engines = if xgmi {
            p.num_sdma_xgmi_engines
        } else {
            p.num_sdma_engines
        };
        let slots = engines.saturating_mul(p.num_sdma_queues_per_engine);
        let kind = if xgmi {
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI
        } else {
            KFD_IOC_QUEUE_TYPE_SDMA
        };
        (first..slots)
            .step_by(step as usize)
            .find(|&i| !taken(xgmi, i))
            .map(|i| (kind, i))
    }
}

/// What an SDMA queue's engine takes as the end of the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SdmaDoorbell {
    /// Its doorbell in the GPU's doorbell page (CREATE_QUEUE's `doorbell_offset`), as the
    /// hardware does.
    Own,
    /// The write pointer in memory: for a host that gives the engine no doorbell (the model
    /// interface's, [`super::model`]). The producer stores the same value there before it
    /// rings (ROCR's `UpdateWriteAndDoorbellRegister`).
    WritePointer,
}

/// [`create_queue`], its engine watching `doorbell`.
pub(crate) fn create_queue_watching(
    device: &Arc<Device>,
    a: &mut CreateQueueArgs,
    doorbell: SdmaDoorbell,
    target: SdmaTarget,
) -> Result<(), Errno> {
    let gpu = device.gpu_by_id(a.gpu_id)?;
    if a.read_pointer_address % 8 != 0 || a.write_pointer_address % 8 != 0 {
        return Err(Errno::INVAL);
    }
    let props = device
        .topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id == gpu.gpu_id)
        .map(|n| n.properties.clone())
        .ok_or(Errno::INVAL)?;
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    let ring = allocs
        .device_region(gpu.gpu_id, a.ring_base_address, u64::from(a.ring_size))
        .ok_or(Errno::INVAL)?;
    let rptr = allocs
        .device_region(gpu.gpu_id, a.read_pointer_address, 8)
        .ok_or(Errno::FAULT)?;
    let wptr = allocs
        .device_region(gpu.gpu_id, a.write_pointer_address, 8)
        .ok_or(Errno::FAULT)?;
    let mut queues = lock(&device.queues);
    let qid = free_queue_id(&queues, gpu)?;
    let slot = target
        .slot(&props, |xgmi, i| {
            let kind = if xgmi {
                KFD_IOC_QUEUE_TYPE_SDMA_XGMI
            } else {
                KFD_IOC_QUEUE_TYPE_SDMA
            };
            queues
                .values()
                .any(|q| q.gpu_id == gpu.gpu_id && q.queue_type == kind && q.sdma_slot == Some(i))
        })
        .ok_or(Errno::NOMEM)?;
    let ctl = new_ctl(gpu, a);
    let engine = SdmaThread {
        device: device.clone(),
        ctl: ctl.clone(),
        ring,
        rptr,
        doorbell: match doorbell {
            SdmaDoorbell::Own => new_doorbell(gpu, qid)?,
            SdmaDoorbell::WritePointer => wptr,
        },
        queue_id: qid,
        gpu_id: gpu.gpu_id,
        count_width: gpu.sdma_count_width,
    };
    let pins = [
        a.ring_base_address,
        a.read_pointer_address,
        a.write_pointer_address,
    ];
    let started = Started {
        name: format!("emu-sdma-q{qid}"),
        ctl,
        pins: &pins,
        props: None,
        sdma: Some(slot),
    };
    start(
        device,
        &mut allocs,
        &mut queues,
        qid,
        a,
        started,
        move || engine.run(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_width_per_sdma_version() {
        // gfx_target_version as the topology writes it; SDMA IP versions from amdgpu's IP
        // discovery tables (Vega 10 4.0.0, Vega 20 4.2.0, Arcturus 4.2.2, Renoir 4.1.2,
        // Aldebaran 4.4.0, GC 9.4.3 4.4.2, GC 9.5.0 4.4.5, Navi 10 5.0, Navi 21 5.2).
        for (target, bits) in [
            (90000, 22),  // gfx900
            (90006, 22),  // gfx906
            (90008, 22),  // gfx908
            (90012, 22),  // gfx90c
            (90010, 30),  // gfx90a
            (90400, 30),  // gfx940
            (90402, 30),  // gfx942
            (90500, 30),  // gfx950
            (100100, 22), // gfx1010
            (100300, 30), // gfx1030
            (110000, 30), // gfx1100
            (120001, 30), // gfx1201
        ] {
            assert_eq!(CountWidth::for_target(target).bits(), bits, "{target}");
        }
    }

    #[test]
    fn count_width_checks_the_field() {
        // The largest counts each width holds: 0x003FFFFF (vega10_sdma_pkt_open.h's
        // SDMA_PKT_COPY_LINEAR_COUNT_count mask) and 0x3FFFFFFF (ROCR's count_ext, 30 bits).
        assert_eq!(
            CountWidth::SDMA_4_0
                .check("COPY LINEAR", 0x3f_ffff)
                .unwrap(),
            0x3f_ffff
        );
        assert_eq!(
            CountWidth::SDMA_4_0
                .check("COPY LINEAR", 0x40_0000)
                .unwrap_err()
                .detail(),
            "COPY LINEAR count dword 0x00400000 has bits above the 22-bit count of this SDMA \
             engine (SDMA 4.0-4.2)"
        );
        assert_eq!(
            CountWidth::SDMA_4_4
                .check("CONST_FILL", 0x3fff_ffff)
                .unwrap(),
            0x3fff_ffff
        );
        let e = CountWidth::SDMA_4_4
            .check("CONST_FILL", 0x4000_0000)
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "CONST_FILL count dword 0x40000000 has bits above the 30-bit count of this SDMA \
             engine (SDMA 4.4 and later)"
        );
    }
}
