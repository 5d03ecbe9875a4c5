//! The emulated command processor's PM4 engine: what the MEC firmware does with the PM4
//! commands of an AMD PM4-IB vendor packet ([`DecodedPm4Ib`], ROCR's `amd_aql_pm4_ib`).
//!
//! ROCR 5.2 sends one after loading code on gfx9 and later: the packet holds an
//! `INDIRECT_BUFFER` pointing at an `ACQUIRE_MEM` that invalidates the instruction, scalar and
//! L2 caches (`GpuAgent::InvalidateCodeCaches`). The engine runs these PM4 type-3 packets
//! (header: type in bits 30..32, dword count minus 2 in bits 16..30, opcode in bits 8..16;
//! Ref: linux `drivers/gpu/drm/amd/amdgpu/soc15d.h`, `kfd_pm4_headers_ai.h`):
//!
//! - `NOP` (0x10): skips its body; a count of 0x3fff is a one-dword NOP (amdgpu's ring
//!   padding, `gfx_v9_0.c`). A type-2 packet (`0x8000_0000`) is a one-dword filler.
//! - `WRITE_DATA` (0x37): writes its data dwords to memory (`DST_SEL` 1 memory via GRBM,
//!   2 TC/L2, 5 memory), at consecutive dwords or all at one (`WR_ONE_ADDR`, bit 16); the
//!   address's bits 0..2 are not part of it (`DST_MEM_ADDR_LO` is bits 2..32).
//! - `INDIRECT_BUFFER` (0x3f, 4 dwords): runs `IB_SIZE` (bits 0..20 of dword 3) dwords at
//!   `IB_BASE` (bits 2..32 of dword 1, dword 2), then returns; with `CHAIN` (bit 20) the
//!   buffer it was in ends there. `VALID` (bit 23) must be set. Two levels nest, as on the CP
//!   (an IB1 may call an IB2; an IB inside an IB2 is an error).
//! - `RELEASE_MEM` (0x49, 8 dwords): at an end-of-pipe (`EVENT_INDEX` 5) or shader-done (6)
//!   event — everything before it has completed here, the engine runs in order — writes
//!   `DATA_SEL` 1 (32-bit data), 2 (64-bit data) or 3 (the GPU clock counter) to memory
//!   (`DST_SEL` 0 MC or 1 TC/L2) and, for `INT_SEL` 1 or 2, raises the end-of-pipe
//!   interrupt with `INT_CTXID` (dword 7), which amdkfd turns into KFD events
//!   (`kfd_signal_event_interrupt(pasid, ctxid, 32)`).
//! - `ACQUIRE_MEM` (0x58, 7 dwords on gfx9, 8 with `GCR_CNTL` on gfx10+): cache actions over
//!   a range. The emulated device has no caches — every access goes to the one coherent
//!   memory —, so it is a full memory fence.
//!
//! The caches' action bits are accepted and need no work, for the same reason. Anything else
//! — another opcode, a type-0 register write, a field value the engine does not emulate, a
//! packet that runs past its buffer — stops the queue with `INVALID_PACKET_FORMAT` naming
//! the packet, its place and the value; memory the GPU cannot reach is a `MEMORY_FAULT`
//! (an indirect buffer may cross from one buffer object into the next: the GPU needs its
//! pages mapped, nothing more).
//! Nothing is skipped silently.

use std::sync::atomic::{fence, Ordering};

use hsa_core::packet_processor::DecodedPm4Ib;
use hsa_core::wire::pm4::{
    field, Header, Packet, ACQUIRE_MEM_DWORDS_GFX9, OP_ACQUIRE_MEM, OP_INDIRECT_BUFFER, OP_NOP,
    OP_RELEASE_MEM, OP_WRITE_DATA, PACKET2,
};
use hsa_core::{error, Error, Status};

/// Deepest indirect buffer: the ring may call an IB1, an IB1 an IB2.
const MAX_IB_DEPTH: u32 = 2;

/// What the PM4 engine reads and writes: the GPU's view of memory, its clock and its
/// interrupt line.
pub(crate) trait Pm4Memory {
    /// Reads `out.len()` dwords at device address `va` (an indirect buffer).
    ///
    /// # Errors
    /// `Status::MemoryFault` naming the access when the range is not memory the GPU reaches.
    fn read_dwords(&self, va: u64, out: &mut [u32]) -> Result<(), Error>;

    /// Stores `value` at the 4-byte aligned device address `va` (Release).
    ///
    /// # Errors
    /// As [`Pm4Memory::read_dwords`].
    fn write_u32(&self, va: u64, value: u32) -> Result<(), Error>;

    /// Stores `value` at the 8-byte aligned device address `va` (Release).
    ///
    /// # Errors
    /// As [`Pm4Memory::read_dwords`].
    fn write_u64(&self, va: u64, value: u64) -> Result<(), Error>;

    /// The GPU clock counter (`RELEASE_MEM` `DATA_SEL` 3), in the ticks of
    /// `GET_CLOCK_COUNTERS.gpu_clock_counter`.
    fn gpu_clock(&self) -> u64;

    /// Raises the CP's end-of-pipe interrupt with context id `context_id`.
    fn end_of_pipe_interrupt(&self, context_id: u32);
}

/// How many PM4 packets of each kind one run executed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pm4Counts {
    /// `NOP` and type-2 filler packets.
    pub(crate) nop: u32,
    /// `WRITE_DATA` packets.
    pub(crate) write_data: u32,
    /// `INDIRECT_BUFFER` packets (each counted once, its contents apart).
    pub(crate) indirect_buffer: u32,
    /// `RELEASE_MEM` packets.
    pub(crate) release_mem: u32,
    /// `ACQUIRE_MEM` packets.
    pub(crate) acquire_mem: u32,
}

impl Pm4Counts {
    /// All packets.
    pub(crate) fn total(&self) -> u32 {
        self.nop + self.write_data + self.indirect_buffer + self.release_mem + self.acquire_mem
    }
}

/// Where a buffer of PM4 dwords lives, for messages.
#[derive(Clone, Copy)]
enum Place {
    /// The dwords inside the AQL packet.
    Packet,
    /// An indirect buffer at this device address, at this nesting level (1 or 2).
    Ib { va: u64, level: u32 },
}

impl Place {
    fn describe(self, index: usize) -> String {
        match self {
            Place::Packet => format!("PM4-IB packet dword {}", index + 1),
            Place::Ib { va, level } => {
                format!(
                    "IB{level} at {va:#x}, dword {index} ({:#x})",
                    va + index as u64 * 4
                )
            }
        }
    }

    fn level(self) -> u32 {
        match self {
            Place::Packet => 0,
            Place::Ib { level, .. } => level,
        }
    }
}

/// Runs the PM4 commands of `packet` against `mem`, as the CP does; returns what ran.
///
/// # Errors
/// `Status::InvalidPacketFormat` naming the PM4 packet, its place (packet dword, or IB
/// address and dword) and the field for anything the engine does not execute (see the module
/// docs); `Status::MemoryFault` from `mem` for an indirect buffer or a write target the GPU
/// cannot reach.
pub(crate) fn execute(packet: &DecodedPm4Ib, mem: &dyn Pm4Memory) -> Result<Pm4Counts, Error> {
    let mut counts = Pm4Counts::default();
    run(&packet.pm4, Place::Packet, mem, &mut counts)?;
    Ok(counts)
}

fn bad(place: Place, index: usize, what: std::fmt::Arguments<'_>) -> Error {
    error!(
        Status::InvalidPacketFormat,
        "PM4 at {}: {what}",
        place.describe(index)
    )
}

/// Runs one buffer of PM4 dwords (a chained IB ends it early).
fn run(
    dwords: &[u32],
    place: Place,
    mem: &dyn Pm4Memory,
    counts: &mut Pm4Counts,
) -> Result<(), Error> {
    let mut i = 0;
    while i < dwords.len() {
        let h = dwords[i];
        let header = Header::parse(h);
        let opcode = match header {
            Header::Type3 { opcode, .. } => opcode,
            Header::Filler => {
                counts.nop += 1;
                i += 1;
                continue;
            }
            Header::Reserved if h >> 30 == 2 => {
                return Err(bad(
                    place,
                    i,
                    format_args!(
                        "type-2 packet {h:#010x} has padding bits set; a filler is {PACKET2:#010x}"
                    ),
                ))
            }
            Header::Type0 { register } => {
                return Err(bad(
                    place,
                    i,
                    format_args!(
                        "type-0 packet {h:#010x} (register {register:#x}): the emulated CP has no \
                         registers to write"
                    ),
                ))
            }
            Header::Reserved => {
                return Err(bad(
                    place,
                    i,
                    format_args!("packet {h:#010x} is of the reserved type 1"),
                ))
            }
        };
        let len = header.packet_dwords().unwrap_or(1);
        if len == 1 {
            // The one-dword NOP (count 0x3fff).
            counts.nop += 1;
            i += 1;
            continue;
        }
        let Some(p) = dwords.get(i..i + len) else {
            return Err(bad(
                place,
                i,
                format_args!(
                    "packet {h:#010x} (opcode {opcode:#04x}) is {len} dwords, but its buffer \
                     ends after {}",
                    dwords.len() - i
                ),
            ));
        };
        match opcode {
            OP_NOP => counts.nop += 1,
            OP_WRITE_DATA => {
                write_data(p, place, i, mem)?;
                counts.write_data += 1;
            }
            OP_INDIRECT_BUFFER => {
                counts.indirect_buffer += 1;
                if indirect_buffer(p, place, i, mem, counts)? {
                    return Ok(());
                }
            }
            OP_RELEASE_MEM => {
                release_mem(p, place, i, mem)?;
                counts.release_mem += 1;
            }
            OP_ACQUIRE_MEM => {
                if len < ACQUIRE_MEM_DWORDS_GFX9 {
                    return Err(bad(
                        place,
                        i,
                        format_args!("ACQUIRE_MEM is {len} dwords; must be at least 7"),
                    ));
                }
                // The range's caches (I$, K$, L2) hold nothing of their own here: one
                // coherent memory. What remains is the ordering.
                fence(Ordering::SeqCst);
                counts.acquire_mem += 1;
            }
            other => {
                return Err(bad(
                    place,
                    i,
                    format_args!(
                        "opcode {other:#04x} (header {h:#010x}) is not one the emulated CP \
                         executes (NOP 0x10, WRITE_DATA 0x37, INDIRECT_BUFFER 0x3f, \
                         RELEASE_MEM 0x49, ACQUIRE_MEM 0x58)"
                    ),
                ))
            }
        }
        i += len;
    }
    Ok(())
}

/// `WRITE_DATA`: dword 1 control, 2..4 address, then the data.
fn write_data(p: &[u32], place: Place, i: usize, mem: &dyn Pm4Memory) -> Result<(), Error> {
    if p.len() < 5 {
        return Err(bad(
            place,
            i,
            format_args!("WRITE_DATA is {} dwords: it carries no data", p.len()),
        ));
    }
    let view = Packet::new_unchecked(p);
    let dst_sel = view.get(field::WRITE_DATA_DST_SEL);
    if !matches!(dst_sel, 1 | 2 | 5) {
        return Err(bad(
            place,
            i,
            format_args!(
                "WRITE_DATA DST_SEL is {dst_sel}; the emulated CP writes memory only (1, 2, 5), \
                 not a register (0), GDS (3) or another target"
            ),
        ));
    }
    let one_addr = view.get(field::WRITE_DATA_WR_ONE_ADDR) != 0;
    // DST_MEM_ADDR_LO is bits 2..32 of the address.
    let va = view.get_u64(field::WRITE_DATA_ADDR) & !3;
    for (k, &v) in p[field::WRITE_DATA_DATA..].iter().enumerate() {
        let at = if one_addr { va } else { va + 4 * k as u64 };
        mem.write_u32(at, v)?;
    }
    Ok(())
}

/// `INDIRECT_BUFFER`; returns whether it was chained (the calling buffer ends).
fn indirect_buffer(
    p: &[u32],
    place: Place,
    i: usize,
    mem: &dyn Pm4Memory,
    counts: &mut Pm4Counts,
) -> Result<bool, Error> {
    if p.len() != 4 {
        return Err(bad(
            place,
            i,
            format_args!("INDIRECT_BUFFER is {} dwords; must be 4", p.len()),
        ));
    }
    let view = Packet::new_unchecked(p);
    let swap = view.get(field::IB_SWAP);
    if swap != 0 {
        return Err(bad(
            place,
            i,
            format_args!(
                "INDIRECT_BUFFER IB_BASE_LO bits 0..2 (byte swap) are {swap}: not emulated"
            ),
        ));
    }
    let va = view.get_u64(field::IB_BASE);
    let control = p[3];
    let size_dwords = view.get(field::IB_SIZE);
    let chain = view.get(field::IB_CHAIN) != 0;
    if view.get(field::IB_VALID) == 0 {
        return Err(bad(
            place,
            i,
            format_args!("INDIRECT_BUFFER at {va:#x} lacks its VALID bit (23): {control:#010x}"),
        ));
    }
    let level = place.level() + 1;
    if level > MAX_IB_DEPTH {
        return Err(bad(
            place,
            i,
            format_args!(
                "INDIRECT_BUFFER at {va:#x} inside an IB{}: the CP nests two levels only",
                place.level()
            ),
        ));
    }
    let mut ib = vec![0u32; size_dwords as usize];
    mem.read_dwords(va, &mut ib)?;
    run(&ib, Place::Ib { va, level }, mem, counts)?;
    Ok(chain)
}

/// `RELEASE_MEM`: dword 1 event and cache actions, 2 selects, 3..5 address, 5..7 data,
/// 7 interrupt context id.
fn release_mem(p: &[u32], place: Place, i: usize, mem: &dyn Pm4Memory) -> Result<(), Error> {
    if p.len() != 8 {
        return Err(bad(
            place,
            i,
            format_args!("RELEASE_MEM is {} dwords; must be 8", p.len()),
        ));
    }
    let view = Packet::new_unchecked(p);
    let event_index = view.get(field::RELEASE_EVENT_INDEX);
    if !matches!(event_index, 5 | 6) {
        return Err(bad(
            place,
            i,
            format_args!(
                "RELEASE_MEM EVENT_INDEX is {event_index}; the emulated CP runs end-of-pipe (5) \
                 and shader-done (6) events"
            ),
        ));
    }
    let dst_sel = view.get(field::RELEASE_DST_SEL);
    let int_sel = view.get(field::RELEASE_INT_SEL);
    let data_sel = view.get(field::RELEASE_DATA_SEL);
    if dst_sel > 1 {
        return Err(bad(
            place,
            i,
            format_args!(
                "RELEASE_MEM DST_SEL is {dst_sel}; the emulated CP writes memory (0, 1), not a \
                 queue's write pointer"
            ),
        ));
    }
    if int_sel > 2 {
        return Err(bad(
            place,
            i,
            format_args!(
                "RELEASE_MEM INT_SEL is {int_sel}; the emulated CP sends none (0) or the \
                 interrupt (1, 2)"
            ),
        ));
    }
    // Everything before this packet completed (the engine runs in order): release it.
    fence(Ordering::SeqCst);
    let va = view.get_u64(field::RELEASE_ADDR);
    let data = view.get_u64(field::RELEASE_DATA);
    match data_sel {
        0 => {}
        1 => mem.write_u32(va & !3, data as u32)?,
        2 => mem.write_u64(va & !7, data)?,
        3 => mem.write_u64(va & !7, mem.gpu_clock())?,
        other => {
            return Err(bad(
                place,
                i,
                format_args!(
                    "RELEASE_MEM DATA_SEL is {other}; the emulated CP sends none (0), 32-bit (1) \
                     or 64-bit data (2) or the GPU clock (3), not performance counters or GDS"
                ),
            ))
        }
    }
    if int_sel != 0 {
        mem.end_of_pipe_interrupt(view.get(field::RELEASE_INT_CTXID));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_core::wire::pm4::NOP_ONE_DWORD_COUNT;
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;

    /// A PM4 type-3 header for `opcode` with `body_dwords` dwords after it (the count field
    /// is `body_dwords - 1`).
    const fn header(opcode: u8, body_dwords: u32) -> u32 {
        3 << 30 | ((body_dwords - 1) & 0x3fff) << 16 | (opcode as u32) << 8
    }

    /// Memory of dwords at device addresses, a clock and an interrupt log.
    #[derive(Default)]
    struct Mem {
        words: RefCell<BTreeMap<u64, u32>>,
        clock: Cell<u64>,
        interrupts: RefCell<Vec<u32>>,
    }

    impl Mem {
        fn put(&self, va: u64, dwords: &[u32]) {
            for (k, &d) in dwords.iter().enumerate() {
                self.words.borrow_mut().insert(va + 4 * k as u64, d);
            }
        }

        fn get(&self, va: u64) -> Option<u32> {
            self.words.borrow().get(&va).copied()
        }
    }

    impl Pm4Memory for Mem {
        fn read_dwords(&self, va: u64, out: &mut [u32]) -> Result<(), Error> {
            for (k, o) in out.iter_mut().enumerate() {
                let at = va + 4 * k as u64;
                *o = self
                    .get(at)
                    .ok_or_else(|| error!(Status::MemoryFault, "read at {at:#x}: nothing there"))?;
            }
            Ok(())
        }
        fn write_u32(&self, va: u64, value: u32) -> Result<(), Error> {
            assert_eq!(va % 4, 0);
            self.put(va, &[value]);
            Ok(())
        }
        fn write_u64(&self, va: u64, value: u64) -> Result<(), Error> {
            assert_eq!(va % 8, 0);
            self.put(va, &[value as u32, (value >> 32) as u32]);
            Ok(())
        }
        fn gpu_clock(&self) -> u64 {
            self.clock.get()
        }
        fn end_of_pipe_interrupt(&self, context_id: u32) {
            self.interrupts.borrow_mut().push(context_id);
        }
    }

    /// `INDIRECT_BUFFER` to `va` of `size` dwords, as ROCR's `amd_gpu_pm4.h` builds it.
    fn ib(va: u64, size: u32) -> [u32; 4] {
        [
            header(OP_INDIRECT_BUFFER, 3),
            (va as u32 >> 2) << 2,
            (va >> 32) as u32 & 0xffff,
            size | 1 << 23,
        ]
    }

    fn packet(pm4: [u32; 4]) -> DecodedPm4Ib {
        DecodedPm4Ib {
            pm4,
            completion_signal: hsa_core::abi::SignalHandle::NULL,
        }
    }

    /// ROCR 5.2's `GpuAgent::InvalidateCodeCaches` on gfx9: `ACQUIRE_MEM` (7 dwords) with
    /// COHER_CNTL = SH_ICACHE (29) | SH_KCACHE (27) | TC (23) | TC_WB (18), COHER_SIZE all
    /// ones, COHER_SIZE_HI 0xff, in an IB the AQL packet's `INDIRECT_BUFFER` calls.
    #[test]
    fn rocr_code_cache_invalidation_runs() {
        let m = Mem::default();
        let ib_va = 0x7f00_1234_5000;
        let acquire = [
            header(OP_ACQUIRE_MEM, 6),
            1 << 29 | 1 << 27 | 1 << 23 | 1 << 18,
            0xffff_ffff,
            0xff,
            0,
            0,
            0,
        ];
        assert_eq!(acquire[0], 0xc005_5800);
        m.put(ib_va, &acquire);
        let counts = execute(&packet(ib(ib_va, 7)), &m).unwrap();
        assert_eq!(
            counts,
            Pm4Counts {
                indirect_buffer: 1,
                acquire_mem: 1,
                ..Default::default()
            }
        );
        // Nothing written: the IB's 7 dwords are all memory holds.
        assert_eq!(m.words.borrow().len(), 7);
    }

    /// gfx10's form of the same: 8 dwords with GCR_CNTL.
    #[test]
    fn gfx10_acquire_mem_with_gcr_cntl_runs() {
        let m = Mem::default();
        let acquire = [
            header(OP_ACQUIRE_MEM, 7),
            0,
            0xffff_ffff,
            0xff,
            0,
            0,
            0,
            1 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14,
        ];
        m.put(0x1000, &acquire);
        assert_eq!(execute(&packet(ib(0x1000, 8)), &m).unwrap().acquire_mem, 1);
    }

    /// WRITE_DATA to memory: consecutive dwords, then three to one address (the last wins);
    /// the address's low two bits are not part of it.
    #[test]
    fn write_data_writes_consecutive_or_one_address() {
        let m = Mem::default();
        let stream = [
            header(OP_WRITE_DATA, 5),
            5 << 8 | 1 << 20, // DST_SEL memory, WR_CONFIRM
            0x2000,
            0x7f,
            0xaaaa_0001,
            0xaaaa_0002,
            header(OP_WRITE_DATA, 6),
            2 << 8 | 1 << 16, // DST_SEL TC_L2, WR_ONE_ADDR
            0x3003,           // bits 0..2 are not the address
            0,
            1,
            2,
            3,
        ];
        m.put(0x1000, &stream);
        let counts = execute(&packet(ib(0x1000, stream.len() as u32)), &m).unwrap();
        assert_eq!(counts.write_data, 2);
        assert_eq!(m.get(0x7f_0000_2000), Some(0xaaaa_0001));
        assert_eq!(m.get(0x7f_0000_2004), Some(0xaaaa_0002));
        assert_eq!(m.get(0x3000), Some(3));
        assert_eq!(m.get(0x3004), None);
    }

    /// RELEASE_MEM as amdgpu's `gfx_v9_0_ring_emit_fence` builds it: 64-bit data then the
    /// interrupt with its context id; 32-bit data; the GPU clock.
    #[test]
    fn release_mem_writes_data_and_raises_the_interrupt() {
        let m = Mem::default();
        m.clock.set(0x1234_5678_9abc);
        let rel = |sel: u32, int_sel: u32, addr: u64, data: u64, ctx: u32| {
            [
                header(OP_RELEASE_MEM, 7),
                0x14 | 5 << 8 | 1 << 15 | 1 << 19, // CACHE_FLUSH_AND_INV_TS, EOP, TC_WB, TC_NC
                sel << 29 | int_sel << 24,
                addr as u32,
                (addr >> 32) as u32,
                data as u32,
                (data >> 32) as u32,
                ctx,
            ]
        };
        let mut s = Vec::new();
        s.extend(rel(2, 2, 0x5008, 0x1122_3344_5566_7788, 42));
        s.extend(rel(1, 0, 0x6004, 0xdead_beef, 0));
        s.extend(rel(3, 0, 0x7000, 0, 0));
        s.extend(rel(0, 1, 0, 0, 7));
        m.put(0x1000, &s);
        let counts = execute(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!(counts.release_mem, 4);
        assert_eq!(m.get(0x5008), Some(0x5566_7788));
        assert_eq!(m.get(0x500c), Some(0x1122_3344));
        assert_eq!(m.get(0x6004), Some(0xdead_beef));
        assert_eq!(m.get(0x6008), None);
        assert_eq!(m.get(0x7000), Some(0x5678_9abc));
        assert_eq!(m.get(0x7004), Some(0x1234));
        assert_eq!(*m.interrupts.borrow(), [42, 7]);
    }

    /// NOPs of every form are skipped: a one-dword NOP (count 0x3fff), a NOP with a body, a
    /// type-2 filler; a chained IB ends the buffer it was in.
    #[test]
    fn nops_fillers_and_chained_ib() {
        let m = Mem::default();
        let ib2 = [header(OP_WRITE_DATA, 4), 5 << 8, 0x9000, 0, 77];
        m.put(0x2000, &ib2);
        let mut chain = ib(0x2000, 5);
        chain[3] |= 1 << 20;
        let mut s = vec![
            3 << 30 | NOP_ONE_DWORD_COUNT << 16 | (OP_NOP as u32) << 8,
            header(OP_NOP, 2),
            0xffff_ffff,
            0xffff_ffff,
            PACKET2,
        ];
        s.extend(chain);
        // Never reached: the chained IB replaced the rest of this one.
        s.extend([header(OP_WRITE_DATA, 4), 5 << 8, 0x9000, 0, 88]);
        m.put(0x1000, &s);
        let counts = execute(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!(counts.nop, 3);
        assert_eq!(counts.indirect_buffer, 2);
        assert_eq!(counts.write_data, 1);
        assert_eq!(m.get(0x9000), Some(77));
    }

    /// Each thing the engine does not execute stops it with a message naming it and its place.
    #[test]
    fn unknown_packets_and_fields_are_named() {
        let cases: Vec<(Vec<u32>, &str)> = vec![
            (
                vec![header(0x46, 1), 0], // EVENT_WRITE
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): opcode 0x46 (header 0xc0004600) is \
                 not one the emulated CP executes (NOP 0x10, WRITE_DATA 0x37, INDIRECT_BUFFER \
                 0x3f, RELEASE_MEM 0x49, ACQUIRE_MEM 0x58)",
            ),
            (
                vec![PACKET2, 0x0001_2345],
                "PM4 at IB1 at 0x1000, dword 1 (0x1004): type-0 packet 0x00012345 (register \
                 0x2345): the emulated CP has no registers to write",
            ),
            (
                vec![0x4000_0000],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): packet 0x40000000 is of the reserved \
                 type 1",
            ),
            (
                vec![header(OP_WRITE_DATA, 4), 0, 0x9000, 0],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): packet 0xc0033700 (opcode 0x37) is 5 \
                 dwords, but its buffer ends after 4",
            ),
            (
                vec![header(OP_WRITE_DATA, 4), 0, 0x9000, 0, 1],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): WRITE_DATA DST_SEL is 0; the emulated \
                 CP writes memory only (1, 2, 5), not a register (0), GDS (3) or another target",
            ),
            (
                vec![header(OP_RELEASE_MEM, 7), 7 << 8, 0, 0, 0, 0, 0, 0],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): RELEASE_MEM EVENT_INDEX is 7; the \
                 emulated CP runs end-of-pipe (5) and shader-done (6) events",
            ),
            (
                vec![header(OP_RELEASE_MEM, 7), 5 << 8, 4 << 29, 0, 0, 0, 0, 0],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): RELEASE_MEM DATA_SEL is 4; the emulated \
                 CP sends none (0), 32-bit (1) or 64-bit data (2) or the GPU clock (3), not \
                 performance counters or GDS",
            ),
            (
                vec![header(OP_ACQUIRE_MEM, 5), 0, 0, 0, 0, 0],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): ACQUIRE_MEM is 6 dwords; must be at \
                 least 7",
            ),
        ];
        for (stream, want) in cases {
            let m = Mem::default();
            m.put(0x1000, &stream);
            let e = execute(&packet(ib(0x1000, stream.len() as u32)), &m).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat, "{want}");
            assert_eq!(e.detail(), want);
        }
    }

    /// The IB itself: VALID bit, nesting deeper than IB2, memory the GPU cannot read.
    #[test]
    fn indirect_buffer_checks() {
        let m = Mem::default();
        let mut invalid = ib(0x1000, 1);
        invalid[3] &= !(1 << 23);
        let e = execute(&packet(invalid), &m).unwrap_err();
        assert_eq!(
            e.detail(),
            "PM4 at PM4-IB packet dword 1: INDIRECT_BUFFER at 0x1000 lacks its VALID bit (23): \
             0x00000001"
        );
        // IB1 at 0x1000 calls IB2 at 0x2000, which calls 0x3000.
        m.put(0x1000, &ib(0x2000, 4));
        m.put(0x2000, &ib(0x3000, 4));
        m.put(0x3000, &[PACKET2; 4]);
        let e = execute(&packet(ib(0x1000, 4)), &m).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "PM4 at IB2 at 0x2000, dword 0 (0x2000): INDIRECT_BUFFER at 0x3000 inside an IB2: \
             the CP nests two levels only"
        );
        let e = execute(&packet(ib(0x8000, 2)), &m).unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(e.detail(), "read at 0x8000: nothing there");
        // An IB1 calling an IB2 is fine.
        m.put(0x2000, &[PACKET2; 4]);
        let counts = execute(&packet(ib(0x1000, 4)), &m).unwrap();
        assert_eq!((counts.indirect_buffer, counts.nop), (2, 4));
    }
}
