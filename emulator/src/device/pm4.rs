//! The emulated command processor's PM4 engine: what the MEC firmware does with PM4
//! commands, one engine for both places they come from:
//!
//! - a PM4 compute queue's ring (`KFD_IOC_QUEUE_TYPE_COMPUTE`, the queue module's
//!   `Pm4Thread`), as tinygrad's `AMDComputeQueue` and amdgpu's own compute rings use one;
//! - the AMD PM4-IB vendor packet of an AQL queue ([`DecodedPm4Ib`], ROCR's `amd_aql_pm4_ib`):
//!   ROCR 5.2 sends one after loading code on gfx9 and later (an `INDIRECT_BUFFER` pointing at
//!   an `ACQUIRE_MEM` that invalidates the caches, `GpuAgent::InvalidateCodeCaches`), and
//!   tinygrad with `AMD_AQL=1` its command buffers.
//!
//! Each queue keeps its compute register state ([`Pm4State`]) from packet to packet, as the
//! HQD's pipe does. The engine runs these PM4 type-3 packets (header: type in bits 30..32,
//! dword count minus 2 in bits 16..30, opcode in bits 8..16; Ref: linux
//! `drivers/gpu/drm/amd/amdgpu/soc15d.h`, `kfd_pm4_headers_ai.h`; register offsets from
//! `asic_reg/gc/gc_9_4_3_offset.h`, fields from `gc_9_4_3_sh_mask.h`):
//!
//! - `NOP` (0x10): skips its body; a count of 0x3fff is a one-dword NOP (amdgpu's ring
//!   padding, `gfx_v9_0.c`). A type-2 packet (`0x8000_0000`) is a one-dword filler.
//! - `SET_SH_REG` (0x76): dword 1 the first register's offset from 0x2c00 (bits 16..32 must
//!   be 0), then one value per register, into the compute registers of [`reg`]:
//!   `COMPUTE_START_X/Y/Z`, `COMPUTE_NUM_THREAD_X/Y/Z`, `COMPUTE_PIPELINESTAT_ENABLE`,
//!   `COMPUTE_PERFCOUNT_ENABLE` (kept, no counters), `COMPUTE_PGM_LO/HI`,
//!   `COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI`, `COMPUTE_PGM_RSRC1/2/3`, `COMPUTE_RESOURCE_LIMITS`
//!   (scheduling only), `COMPUTE_TMPRING_SIZE`, `COMPUTE_RESTART_X/Y/Z`,
//!   `COMPUTE_USER_DATA_0..15`. Any other SH register is refused.
//! - `SET_UCONFIG_REG` (0x79): offsets from 0xc000; only `GRBM_GFX_INDEX` with its three
//!   broadcast bits (`0xe000_0000`), tinygrad's `set_grbm()`, the only value a GPU with one
//!   shader engine view has.
//! - `DISPATCH_DIRECT` (0x15, 5 dwords: x, y, z, `COMPUTE_DISPATCH_INITIATOR`) and
//!   `DISPATCH_INDIRECT` (0x16, the compute form: 4 dwords, `ADDR_LO`, `ADDR_HI` of the three
//!   dimensions, initiator): launches waves from the registers, as the SPI does — code at
//!   `COMPUTE_PGM << 8`; user SGPRs `s0..` from `COMPUTE_USER_DATA_*`, as many as
//!   `RSRC2.USER_SGPR` (at most 16); then the work-group ids as `RSRC2`'s `TGID_X/Y/Z_EN`
//!   enable them and the work-group info SGPR for `TG_SIZE_EN` (the interpreter's 0 there, as
//!   for an AQL dispatch), the scratch wave offset after them when
//!   `SCRATCH_EN` (gfx90a and older; gfx942's FLAT_SCRATCH is set instead); work-item ids in
//!   VGPRs per `TIDIG_COMP_CNT`; MODE from `RSRC1`'s float and IEEE/DX10 bits; `RSRC1.VGPRS`
//!   the wave's VGPR allocation (an instruction naming a VGPR past it stops the dispatch,
//!   `IllegalInstruction`); LDS `RSRC2.LDS_SIZE` × 512 bytes; scratch at
//!   `COMPUTE_DISPATCH_SCRATCH_BASE << 8` in `COMPUTE_TMPRING_SIZE`'s slots (`WAVES` of
//!   `WAVESIZE` KiB; nothing else). The work-group size is `NUM_THREAD_*.NUM_THREAD_FULL`; the
//!   packet's dimensions count work-groups, or threads when the initiator's
//!   `USE_THREAD_DIMENSIONS` (bit 5) is set (tinygrad sends work-groups with
//!   `COMPUTE_SHADER_EN` and `FORCE_START_AT_000`); a zero dimension launches nothing. The
//!   dispatch ends before the next packet runs. Refused: an initiator without
//!   `COMPUTE_SHADER_EN` or with ordered append, `RESTORE` or bits 15..; a non-zero
//!   `COMPUTE_START_*` without `FORCE_START_AT_000`, a non-zero `COMPUTE_RESTART_*`, a zero
//!   `NUM_THREAD_FULL`, `USER_SGPR` above 16, `RSRC2`'s `TRAP_PRESENT`, `EXCP_EN`,
//!   `EXCP_EN_MSB` or `SKIP_USGPR0`, `RSRC3`'s `TRAP_ON_START`/`_END` (no trap handler here).
//! - `WAIT_REG_MEM` (0x3c, 7 dwords): with `MEM_SPACE` 1 and `OPERATION` 0 polls the dword at
//!   the address until `(value & MASK)` compares to `REFERENCE` by `FUNCTION` (0 always, 1 <,
//!   2 <=, 3 ==, 4 !=, 5 >=, 6 >), sleeping between polls, until the queue is destroyed;
//!   with `MEM_SPACE` 0 and `OPERATION` 1 (write, wait) on the GPU's
//!   `BIF_BX_PF0_GPU_HDP_FLUSH_REQ`/`_DONE` (NBIO segment 2 at [`NBIO_SEGMENT2`] + 0x106/0x107,
//!   amdgpu's and tinygrad's HDP flush) the flush is done at once: `_DONE` reads what was
//!   written to `_REQ`. `ENGINE_SEL` must be 0 (the ME). Other registers are refused.
//! - `EVENT_WRITE` (0x46): `CS_PARTIAL_FLUSH` (event type 7, index 4): a full fence (every
//!   dispatch before it has ended). Other events are refused.
//! - `COPY_DATA` (0x40, 6 dwords): from memory (`SRC_SEL` 1, 2), immediate data (5) or the GPU
//!   clock (9) to memory (`DST_SEL` 2, 5), 32 or 64 bits (`COUNT_SEL`). Registers,
//!   performance counters, GDS and atomic return data are refused.
//! - `WRITE_DATA` (0x37): writes its data dwords to memory (`DST_SEL` 1 memory via GRBM,
//!   2 TC/L2, 5 memory), at consecutive dwords or all at one (`WR_ONE_ADDR`, bit 16); the
//!   address's bits 0..2 are not part of it (`DST_MEM_ADDR_LO` is bits 2..32).
//! - `INDIRECT_BUFFER` (0x3f, 4 dwords): runs `IB_SIZE` (bits 0..20 of dword 3) dwords at
//!   `IB_BASE` (bits 2..32 of dword 1, dword 2), then returns; with `CHAIN` (bit 20) the
//!   buffer it was in ends there (on a ring it returns as a call). `VALID` (bit 23) must be
//!   set. Two levels nest, as on the CP (an IB1 may call an IB2; an IB inside an IB2 is an
//!   error).
//! - `RELEASE_MEM` (0x49, 8 dwords): at an end-of-pipe (`EVENT_INDEX` 5) or shader-done (6)
//!   event — everything before it has completed here, the engine runs in order — writes
//!   `DATA_SEL` 1 (32-bit data), 2 (64-bit data) or 3 (the GPU clock counter) to memory
//!   (`DST_SEL` 0 MC or 1 TC/L2) and, for `INT_SEL` 1 or 2, raises the end-of-pipe
//!   interrupt with `INT_CTXID` (dword 7), which amdkfd turns into KFD events
//!   (`kfd_signal_event_interrupt(pasid, ctxid, 32)`).
//! - `ACQUIRE_MEM` (0x58, 7 dwords on gfx9, 8 with `GCR_CNTL` on gfx10+): cache actions over
//!   a range. A full memory fence; with the cache model on ([`super::l2`]) the L2 actions of
//!   gfx9's `CP_COHER_CNTL` act on the GPU's whole L2 (`TC_WB_ACTION_ENA` writes it back,
//!   `TC_ACTION_ENA` invalidates it), as do `RELEASE_MEM`'s (dword 1 bits 15 and 17) before
//!   its write.
//!
//! The other caches' action bits (instruction, scalar, L1; gfx10's `GCR_CNTL`) are accepted
//! and need no work: those caches are not modelled. Anything else
//! — another opcode, a type-0 register write, a field value the engine does not emulate, a
//! packet that runs past its buffer (on a ring: waits for the rest) — stops the queue with
//! `INVALID_PACKET_FORMAT` naming the packet, its place and the value; memory the GPU cannot
//! reach is a `MEMORY_FAULT` (an indirect buffer may cross from one buffer object into the
//! next: the GPU needs its pages mapped, nothing more); a dispatch's waves end the queue with
//! the interpreter's error. Nothing is skipped silently.

use std::sync::atomic::{fence, Ordering};

use crate::gfx9::exec::L2Action;
use hsa_core::packet_processor::DecodedPm4Ib;
use hsa_core::wire::pm4::{
    field, Header, Packet, ACQUIRE_MEM_DWORDS_GFX9, OP_ACQUIRE_MEM, OP_COPY_DATA,
    OP_DISPATCH_DIRECT, OP_DISPATCH_INDIRECT, OP_EVENT_WRITE, OP_INDIRECT_BUFFER, OP_NOP,
    OP_RELEASE_MEM, OP_SET_SH_REG, OP_SET_UCONFIG_REG, OP_WAIT_REG_MEM, OP_WRITE_DATA, PACKET2,
    SET_SH_REG_END, SET_SH_REG_START, SET_UCONFIG_REG_START,
};
use hsa_core::{error, Error, Status};

/// `ACQUIRE_MEM` `CP_COHER_CNTL.TC_WB_ACTION_ENA`: write the L2 back (gfx9 `soc15d.h`).
const ACQUIRE_TC_WB_ACTION_ENA: u32 = 18;
/// `ACQUIRE_MEM` `CP_COHER_CNTL.TC_ACTION_ENA`: invalidate the L2.
const ACQUIRE_TC_ACTION_ENA: u32 = 23;
/// `RELEASE_MEM` dword 1 `TC_WB_ACTION_ENA` (`EOP_TC_WB_ACTION_EN`): write the L2 back.
const RELEASE_TC_WB_ACTION_ENA: u32 = 15;
/// `RELEASE_MEM` dword 1 `TC_ACTION_ENA`: invalidate the L2.
const RELEASE_TC_ACTION_ENA: u32 = 17;

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

    /// Applies an L2 cache action of `ACQUIRE_MEM` or `RELEASE_MEM` (the cache model,
    /// [`super::l2`]). The default does nothing: a memory without a cache is coherent.
    fn l2_action(&self, action: L2Action) {
        let _ = action;
    }

    /// Launches the waves of `dispatch` and returns when all have ended (the engine runs in
    /// order: a `DISPATCH_DIRECT` completes before the next packet).
    ///
    /// # Errors
    /// The queue error the dispatch ends with: `Status::MemoryFault`, `IllegalInstruction`,
    /// `InvalidAllocation` (LDS beyond the GPU's), `InvalidIsa` (no interpreter for the GPU).
    fn dispatch(&self, dispatch: &ComputeDispatch) -> Result<(), Error>;

    /// Waits one poll interval of a `WAIT_REG_MEM` whose condition does not hold yet.
    ///
    /// # Errors
    /// `Status::Exception` (`preempted ...`) once the queue is being destroyed: the wait ends.
    fn poll_interval(&self) -> Result<(), Error>;
}

/// Dword offsets from [`SET_SH_REG_START`] of the compute SH registers the engine keeps:
/// each `regCOMPUTE_*` of linux `asic_reg/gc/gc_9_4_3_offset.h` (`0x0eNN`, `BASE_IDX` 0:
/// GC segment 0 at dword 0x2000, so dword address `0x2eNN`) less 0x2c00. gc_9_0's are the
/// same where it has the register.
pub(crate) mod reg {
    /// `regCOMPUTE_START_X` (then `_Y`, `_Z`): the first work-group id.
    pub(crate) const COMPUTE_START_X: u32 = 0x204;
    /// `regCOMPUTE_NUM_THREAD_X` (then `_Y`, `_Z`): `NUM_THREAD_FULL` \[15:0\] is the
    /// work-group size, `NUM_THREAD_PARTIAL` \[31:16\] that of the partial group.
    pub(crate) const COMPUTE_NUM_THREAD_X: u32 = 0x207;
    /// `regCOMPUTE_PIPELINESTAT_ENABLE`: pipeline statistics counting (none kept here).
    pub(crate) const COMPUTE_PIPELINESTAT_ENABLE: u32 = 0x20a;
    /// `regCOMPUTE_PERFCOUNT_ENABLE`: performance counting (none kept here).
    pub(crate) const COMPUTE_PERFCOUNT_ENABLE: u32 = 0x20b;
    /// `regCOMPUTE_PGM_LO`: bits 8..40 of the kernel's first instruction's address.
    pub(crate) const COMPUTE_PGM_LO: u32 = 0x20c;
    /// `regCOMPUTE_PGM_HI`: bits 40..48 of it.
    pub(crate) const COMPUTE_PGM_HI: u32 = 0x20d;
    /// `regCOMPUTE_DISPATCH_SCRATCH_BASE_LO`: bits 8..40 of the scratch base (gfx940+).
    pub(crate) const COMPUTE_DISPATCH_SCRATCH_BASE_LO: u32 = 0x210;
    /// `regCOMPUTE_DISPATCH_SCRATCH_BASE_HI`: bits 40..64 of it.
    pub(crate) const COMPUTE_DISPATCH_SCRATCH_BASE_HI: u32 = 0x211;
    /// `regCOMPUTE_PGM_RSRC1`.
    pub(crate) const COMPUTE_PGM_RSRC1: u32 = 0x212;
    /// `regCOMPUTE_PGM_RSRC2`.
    pub(crate) const COMPUTE_PGM_RSRC2: u32 = 0x213;
    /// `regCOMPUTE_RESOURCE_LIMITS`: wave limits per SH and CU; scheduling only.
    pub(crate) const COMPUTE_RESOURCE_LIMITS: u32 = 0x215;
    /// `regCOMPUTE_TMPRING_SIZE`: `WAVES` \[11:0\], `WAVESIZE` \[24:12\] (1 KiB units).
    pub(crate) const COMPUTE_TMPRING_SIZE: u32 = 0x218;
    /// `regCOMPUTE_RESTART_X` (then `_Y`, `_Z`): where a restored dispatch resumes.
    pub(crate) const COMPUTE_RESTART_X: u32 = 0x21b;
    /// `regCOMPUTE_PGM_RSRC3` (gc_9_4_3): `ACCUM_OFFSET`, `TRAP_ON_START`/`_END`, `TG_SPLIT`.
    pub(crate) const COMPUTE_PGM_RSRC3: u32 = 0x22d;
    /// `regCOMPUTE_USER_DATA_0` (to `_15` at 0x24f).
    pub(crate) const COMPUTE_USER_DATA_0: u32 = 0x240;
    /// `regGRBM_GFX_INDEX` as a [`SET_UCONFIG_REG_START`](super::SET_UCONFIG_REG_START)
    /// offset (gc_9_4_3 `0x2200`, `BASE_IDX` 1: GC segment 1 at 0xa000).
    pub(crate) const GRBM_GFX_INDEX: u32 = 0x2200 + 0xa000 - 0xc000;
    /// `GRBM_GFX_INDEX` with `INSTANCE_`, `SH_` and `SE_BROADCAST_WRITES` (bits 30, 29, 31).
    pub(crate) const GRBM_GFX_INDEX_BROADCAST: u32 = 0xe000_0000;
}

/// The SH registers an engine keeps (`SET_SH_REG_START..SET_SH_REG_END`).
const SH_REGS: usize = (SET_SH_REG_END - SET_SH_REG_START) as usize;

/// A compute queue's register state as its PM4 engine keeps it from packet to packet (the
/// HQD's pipe state): the SH registers `SET_SH_REG` wrote (0 until written, their reset
/// value), and where the GPU's HDP flush registers are.
pub(crate) struct Pm4State {
    sh: Box<[u32; SH_REGS]>,
    /// Dword addresses of `BIF_BX_PF0_GPU_HDP_FLUSH_REQ` and `_DONE` (NBIO), the registers of
    /// the write-then-wait form of `WAIT_REG_MEM`.
    hdp_flush: (u32, u32),
    /// What `_DONE` reads: the bits last written to `_REQ` (each client's flush completes
    /// at once: there is no HDP cache).
    hdp_flush_done: u32,
}

/// NBIO's register segment 2 (vega20_ip_offset.h `NBIO_BASE`, the same on gfx94x), where
/// nbio 7.x has `regBIF_BX_PF0_GPU_HDP_FLUSH_REQ` at 0x106 and `_DONE` at 0x107.
pub(crate) const NBIO_SEGMENT2: u32 = 0xd20;

impl Default for Pm4State {
    fn default() -> Pm4State {
        Pm4State {
            sh: Box::new([0; SH_REGS]),
            hdp_flush: (NBIO_SEGMENT2 + 0x106, NBIO_SEGMENT2 + 0x107),
            hdp_flush_done: 0,
        }
    }
}

impl Pm4State {
    fn sh(&self, offset: u32) -> u32 {
        self.sh[offset as usize]
    }
}

/// What a `DISPATCH_DIRECT`/`_INDIRECT` launches, from the queue's compute registers: all a
/// wave's launch state ([`crate::gfx9::exec`]'s, user SGPRs from the registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ComputeDispatch {
    /// Device address of the first instruction (`COMPUTE_PGM_HI:LO` << 8).
    pub(crate) entry: u64,
    /// `COMPUTE_PGM_RSRC1`, `_RSRC2`, `_RSRC3`.
    pub(crate) rsrc: [u32; 3],
    /// `COMPUTE_USER_DATA_0..15`.
    pub(crate) user_data: [u32; 16],
    /// Work-group size per dimension, work-items (`COMPUTE_NUM_THREAD_*.NUM_THREAD_FULL`).
    pub(crate) workgroup_size: [u16; 3],
    /// Grid size per dimension, work-items.
    pub(crate) grid_size: [u32; 3],
    /// LDS per work-group, bytes (`RSRC2.LDS_SIZE` × 512).
    pub(crate) lds_bytes: u32,
    /// `COMPUTE_TMPRING_SIZE`.
    pub(crate) tmpring_size: u32,
    /// Scratch base, bytes (`COMPUTE_DISPATCH_SCRATCH_BASE_HI:LO` << 8).
    pub(crate) scratch_base: u64,
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
    /// `SET_SH_REG` and `SET_UCONFIG_REG` packets.
    pub(crate) set_reg: u32,
    /// `DISPATCH_DIRECT` and `DISPATCH_INDIRECT` packets.
    pub(crate) dispatch: u32,
    /// `WAIT_REG_MEM` packets.
    pub(crate) wait_reg_mem: u32,
    /// `EVENT_WRITE` packets.
    pub(crate) event_write: u32,
    /// `COPY_DATA` packets.
    pub(crate) copy_data: u32,
}

impl Pm4Counts {
    /// All packets.
    pub(crate) fn total(&self) -> u32 {
        self.nop
            + self.write_data
            + self.indirect_buffer
            + self.release_mem
            + self.acquire_mem
            + self.set_reg
            + self.dispatch
            + self.wait_reg_mem
            + self.event_write
            + self.copy_data
    }
}

/// Where a buffer of PM4 dwords lives, for messages.
#[derive(Clone, Copy)]
enum Place {
    /// The dwords inside the AQL packet.
    Packet,
    /// An indirect buffer at this device address, at this nesting level (1 or 2).
    Ib { va: u64, level: u32 },
    /// A PM4 queue's ring at `va` of `dwords` dwords, from its (unwrapped) dword `first`.
    Ring { va: u64, dwords: u64, first: u64 },
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
            Place::Ring { va, dwords, first } => {
                let at = (first + index as u64) % dwords.max(1);
                format!(
                    "ring at {va:#x}, write pointer {} (dword {at}, {:#x})",
                    first + index as u64,
                    va + at * 4
                )
            }
        }
    }

    fn level(self) -> u32 {
        match self {
            Place::Packet | Place::Ring { .. } => 0,
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
pub(crate) fn execute(
    packet: &DecodedPm4Ib,
    state: &mut Pm4State,
    mem: &dyn Pm4Memory,
) -> Result<Pm4Counts, Error> {
    let mut counts = Pm4Counts::default();
    run(&packet.pm4, Place::Packet, state, mem, &mut counts)?;
    Ok(counts)
}

/// Runs the PM4 packets of a compute queue's ring: `dwords` were read from the ring at
/// `ring_va` (of `ring_dwords` dwords) from the unwrapped read pointer `first` up to the
/// write pointer. Returns how many dwords of whole packets ran: a packet that runs past
/// `dwords` is not complete yet and waits for the next write pointer.
///
/// # Errors
/// As [`execute`].
pub(crate) fn execute_ring(
    dwords: &[u32],
    ring_va: u64,
    ring_dwords: u64,
    first: u64,
    state: &mut Pm4State,
    mem: &dyn Pm4Memory,
    counts: &mut Pm4Counts,
) -> Result<usize, Error> {
    let place = Place::Ring {
        va: ring_va,
        dwords: ring_dwords,
        first,
    };
    run(dwords, place, state, mem, counts)
}

fn bad(place: Place, index: usize, what: std::fmt::Arguments<'_>) -> Error {
    error!(
        Status::InvalidPacketFormat,
        "PM4 at {}: {what}",
        place.describe(index)
    )
}

/// Runs one buffer of PM4 dwords (a chained IB ends it early); returns the dwords run (all
/// of them, but on a ring, where an incomplete last packet waits).
fn run(
    dwords: &[u32],
    place: Place,
    state: &mut Pm4State,
    mem: &dyn Pm4Memory,
    counts: &mut Pm4Counts,
) -> Result<usize, Error> {
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
            if matches!(place, Place::Ring { .. }) {
                // The producer has not written (or rung for) the rest yet.
                return Ok(i);
            }
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
                if indirect_buffer(p, place, i, state, mem, counts)?
                    && !matches!(place, Place::Ring { .. })
                {
                    // A chained IB ends the buffer it was in (on the ring it is a call).
                    return Ok(dwords.len());
                }
            }
            OP_SET_SH_REG | OP_SET_UCONFIG_REG => {
                set_reg(p, opcode, place, i, state)?;
                counts.set_reg += 1;
            }
            OP_DISPATCH_DIRECT => {
                if len != 5 {
                    return Err(bad(
                        place,
                        i,
                        format_args!("DISPATCH_DIRECT is {len} dwords; must be 5"),
                    ));
                }
                dispatch(state, [p[1], p[2], p[3]], p[4], place, i, mem)?;
                counts.dispatch += 1;
            }
            OP_DISPATCH_INDIRECT => {
                if len != 4 {
                    return Err(bad(
                        place,
                        i,
                        format_args!(
                            "DISPATCH_INDIRECT is {len} dwords; the emulated CP runs the compute \
                             queue's form of 4 (ADDR_LO, ADDR_HI, DISPATCH_INITIATOR), not the \
                             data-offset form that needs SET_BASE"
                        ),
                    ));
                }
                let va = u64::from(p[1]) | u64::from(p[2]) << 32;
                if va % 4 != 0 {
                    return Err(bad(
                        place,
                        i,
                        format_args!("DISPATCH_INDIRECT address {va:#x} is not 4-byte aligned"),
                    ));
                }
                let mut dims = [0u32; 3];
                mem.read_dwords(va, &mut dims)?;
                dispatch(state, dims, p[3], place, i, mem)?;
                counts.dispatch += 1;
            }
            OP_WAIT_REG_MEM => {
                wait_reg_mem(p, place, i, state, mem)?;
                counts.wait_reg_mem += 1;
            }
            OP_EVENT_WRITE => {
                event_write(p, place, i)?;
                counts.event_write += 1;
            }
            OP_COPY_DATA => {
                copy_data(p, place, i, mem)?;
                counts.copy_data += 1;
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
                // The L2's actions of CP_COHER_CNTL (gfx9; the range is taken as the whole
                // cache, as amdgpu's and ROCR's packets ask): TC_WB_ACTION_ENA (bit 18) writes
                // it back, TC_ACTION_ENA (bit 23) invalidates it, the write-back first. The
                // other caches (I$, K$, L1) are not modelled: what remains is the ordering.
                fence(Ordering::SeqCst);
                let coher_cntl = p[1];
                if coher_cntl >> ACQUIRE_TC_WB_ACTION_ENA & 1 != 0 {
                    mem.l2_action(L2Action::WriteBack);
                }
                if coher_cntl >> ACQUIRE_TC_ACTION_ENA & 1 != 0 {
                    mem.l2_action(L2Action::Invalidate);
                }
                counts.acquire_mem += 1;
            }
            other => {
                return Err(bad(
                    place,
                    i,
                    format_args!(
                        "opcode {other:#04x} (header {h:#010x}) is not one the emulated CP \
                         executes ({OPCODES})"
                    ),
                ))
            }
        }
        i += len;
    }
    Ok(dwords.len())
}

/// The opcodes the engine runs, for messages.
const OPCODES: &str = "NOP 0x10, DISPATCH_DIRECT 0x15, DISPATCH_INDIRECT 0x16, WRITE_DATA \
                       0x37, WAIT_REG_MEM 0x3c, INDIRECT_BUFFER 0x3f, COPY_DATA 0x40, \
                       EVENT_WRITE 0x46, RELEASE_MEM 0x49, ACQUIRE_MEM 0x58, SET_SH_REG 0x76, \
                       SET_UCONFIG_REG 0x79";

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
    state: &mut Pm4State,
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
    run(&ib, Place::Ib { va, level }, state, mem, counts)?;
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
    // Everything before this packet completed (the engine runs in order): release it, with
    // the L2's actions of dword 1 (gfx9) first: TC_WB_ACTION_ENA (bit 15) writes the L2 back,
    // TC_ACTION_ENA (bit 17) invalidates it after.
    if p[1] >> RELEASE_TC_WB_ACTION_ENA & 1 != 0 {
        mem.l2_action(L2Action::WriteBack);
    }
    if p[1] >> RELEASE_TC_ACTION_ENA & 1 != 0 {
        mem.l2_action(L2Action::Invalidate);
    }
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

/// The SH registers `SET_SH_REG` may write: the compute registers of a dispatch.
fn sh_register_name(offset: u32) -> Option<String> {
    use reg::*;
    let name = match offset {
        o if (COMPUTE_START_X..COMPUTE_START_X + 3).contains(&o) => {
            format!(
                "COMPUTE_START_{}",
                ["X", "Y", "Z"][(o - COMPUTE_START_X) as usize]
            )
        }
        o if (COMPUTE_NUM_THREAD_X..COMPUTE_NUM_THREAD_X + 3).contains(&o) => format!(
            "COMPUTE_NUM_THREAD_{}",
            ["X", "Y", "Z"][(o - COMPUTE_NUM_THREAD_X) as usize]
        ),
        o if (COMPUTE_RESTART_X..COMPUTE_RESTART_X + 3).contains(&o) => format!(
            "COMPUTE_RESTART_{}",
            ["X", "Y", "Z"][(o - COMPUTE_RESTART_X) as usize]
        ),
        o if (COMPUTE_USER_DATA_0..COMPUTE_USER_DATA_0 + 16).contains(&o) => {
            format!("COMPUTE_USER_DATA_{}", o - COMPUTE_USER_DATA_0)
        }
        COMPUTE_PIPELINESTAT_ENABLE => "COMPUTE_PIPELINESTAT_ENABLE".into(),
        COMPUTE_PERFCOUNT_ENABLE => "COMPUTE_PERFCOUNT_ENABLE".into(),
        COMPUTE_PGM_LO => "COMPUTE_PGM_LO".into(),
        COMPUTE_PGM_HI => "COMPUTE_PGM_HI".into(),
        COMPUTE_DISPATCH_SCRATCH_BASE_LO => "COMPUTE_DISPATCH_SCRATCH_BASE_LO".into(),
        COMPUTE_DISPATCH_SCRATCH_BASE_HI => "COMPUTE_DISPATCH_SCRATCH_BASE_HI".into(),
        COMPUTE_PGM_RSRC1 => "COMPUTE_PGM_RSRC1".into(),
        COMPUTE_PGM_RSRC2 => "COMPUTE_PGM_RSRC2".into(),
        COMPUTE_PGM_RSRC3 => "COMPUTE_PGM_RSRC3".into(),
        COMPUTE_RESOURCE_LIMITS => "COMPUTE_RESOURCE_LIMITS".into(),
        COMPUTE_TMPRING_SIZE => "COMPUTE_TMPRING_SIZE".into(),
        _ => return None,
    };
    Some(name)
}

/// `SET_SH_REG` / `SET_UCONFIG_REG`: dword 1 the first register's offset (bits 0..16; gfx10's
/// `INDEX` bits 28..32 must be 0), then one value per consecutive register.
fn set_reg(
    p: &[u32],
    opcode: u8,
    place: Place,
    i: usize,
    state: &mut Pm4State,
) -> Result<(), Error> {
    let sh = opcode == OP_SET_SH_REG;
    let what = if sh { "SET_SH_REG" } else { "SET_UCONFIG_REG" };
    if p.len() < 3 {
        return Err(bad(
            place,
            i,
            format_args!("{what} is {} dwords: it writes no register", p.len()),
        ));
    }
    if p[1] >> 16 != 0 {
        return Err(bad(
            place,
            i,
            format_args!(
                "{what} dword 1 is {:#010x}: bits 16..32 (INDEX) are not emulated",
                p[1]
            ),
        ));
    }
    let first = p[1];
    for (k, &value) in p[2..].iter().enumerate() {
        let offset = first + k as u32;
        if sh {
            if sh_register_name(offset).is_none() {
                return Err(bad(
                    place,
                    i,
                    format_args!(
                        "SET_SH_REG of register {:#x} (offset {offset:#x}) = {value:#x}: not a \
                         compute register the emulated CP keeps (COMPUTE_START_*, \
                         NUM_THREAD_*, PIPELINESTAT_ENABLE, PERFCOUNT_ENABLE, PGM_LO/HI, DISPATCH_SCRATCH_BASE_LO/HI, PGM_RSRC1/2/3, \
                         RESOURCE_LIMITS, TMPRING_SIZE, RESTART_*, USER_DATA_0..15)",
                        SET_SH_REG_START + offset
                    ),
                ));
            }
            state.sh[offset as usize] = value;
        } else if offset != reg::GRBM_GFX_INDEX || value != reg::GRBM_GFX_INDEX_BROADCAST {
            return Err(bad(
                place,
                i,
                format_args!(
                    "SET_UCONFIG_REG of register {:#x} (offset {offset:#x}) = {value:#x}: the \
                     emulated CP takes GRBM_GFX_INDEX ({:#x}) with every broadcast bit \
                     ({:#x}) only",
                    SET_UCONFIG_REG_START + offset,
                    SET_UCONFIG_REG_START + reg::GRBM_GFX_INDEX,
                    reg::GRBM_GFX_INDEX_BROADCAST
                ),
            ));
        }
    }
    Ok(())
}

/// `COMPUTE_DISPATCH_INITIATOR` bits the engine refuses: `ORDERED_APPEND_ENBL` (3),
/// `ORDERED_APPEND_MODE` (4), `RESTORE` (14), gfx10's `CS_W32_EN` (15) and above.
const INITIATOR_REFUSED: u32 = 1 << 3 | 1 << 4 | 0xffff_c000;

/// `DISPATCH_DIRECT`/`_INDIRECT` of `dims` with `initiator`: the launch state from the
/// queue's registers, checked as the module docs say, then [`Pm4Memory::dispatch`].
fn dispatch(
    state: &Pm4State,
    dims: [u32; 3],
    initiator: u32,
    place: Place,
    i: usize,
    mem: &dyn Pm4Memory,
) -> Result<(), Error> {
    use reg::*;
    let fail =
        |what: std::fmt::Arguments<'_>| bad(place, i, format_args!("dispatch {dims:?}: {what}"));
    if initiator & 1 == 0 {
        return Err(fail(format_args!(
            "COMPUTE_DISPATCH_INITIATOR {initiator:#x} lacks COMPUTE_SHADER_EN (bit 0)"
        )));
    }
    if initiator & INITIATOR_REFUSED != 0 {
        return Err(fail(format_args!(
            "COMPUTE_DISPATCH_INITIATOR {initiator:#x}: ordered append (bits 3, 4), RESTORE \
             (14) and bits 15.. are not emulated"
        )));
    }
    let force_start_at_000 = initiator >> 2 & 1 != 0;
    let thread_dimensions = initiator >> 5 & 1 != 0;
    for d in 0..3u32 {
        let start = state.sh(COMPUTE_START_X + d);
        if start != 0 && !force_start_at_000 {
            return Err(fail(format_args!(
                "COMPUTE_START_{} is {start}: a dispatch starting past work-group 0 is not \
                 emulated",
                ["X", "Y", "Z"][d as usize]
            )));
        }
        let restart = state.sh(COMPUTE_RESTART_X + d);
        if restart != 0 {
            return Err(fail(format_args!(
                "COMPUTE_RESTART_{} is {restart}: restoring a dispatch is not emulated",
                ["X", "Y", "Z"][d as usize]
            )));
        }
    }
    let mut workgroup_size = [0u16; 3];
    let mut grid_size = [0u32; 3];
    for d in 0..3 {
        let full = state.sh(COMPUTE_NUM_THREAD_X + d as u32) & 0xffff;
        if full == 0 {
            return Err(fail(format_args!(
                "COMPUTE_NUM_THREAD_{} NUM_THREAD_FULL is 0",
                ["X", "Y", "Z"][d]
            )));
        }
        workgroup_size[d] = full as u16;
        grid_size[d] = if thread_dimensions {
            dims[d]
        } else {
            dims[d].checked_mul(full).ok_or_else(|| {
                fail(format_args!(
                    "{} work-groups of {full} work-items in dimension {d}: more than 2^32 \
                     work-items",
                    dims[d]
                ))
            })?
        };
    }
    if grid_size.contains(&0) {
        // Nothing to launch: the CP moves on.
        return Ok(());
    }
    let rsrc1 = state.sh(COMPUTE_PGM_RSRC1);
    let rsrc2 = state.sh(COMPUTE_PGM_RSRC2);
    let rsrc3 = state.sh(COMPUTE_PGM_RSRC3);
    let user_sgprs = rsrc2 >> 1 & 0x1f;
    if user_sgprs > 16 {
        return Err(fail(format_args!(
            "COMPUTE_PGM_RSRC2 {rsrc2:#x}: USER_SGPR is {user_sgprs}; there are 16 \
             COMPUTE_USER_DATA registers"
        )));
    }
    // TRAP_PRESENT (6), EXCP_EN_MSB (13..15), EXCP_EN (24..31), SKIP_USGPR0 (31).
    if rsrc2 & (1 << 6 | 3 << 13 | 0xff << 24) != 0 {
        return Err(fail(format_args!(
            "COMPUTE_PGM_RSRC2 {rsrc2:#x}: a trap handler (TRAP_PRESENT, EXCP_EN, EXCP_EN_MSB) \
             and SKIP_USGPR0 are not emulated"
        )));
    }
    // TRAP_ON_START (10), TRAP_ON_END (11).
    if rsrc3 & (3 << 10) != 0 {
        return Err(fail(format_args!(
            "COMPUTE_PGM_RSRC3 {rsrc3:#x}: TRAP_ON_START/TRAP_ON_END are not emulated"
        )));
    }
    let entry =
        (u64::from(state.sh(COMPUTE_PGM_HI)) << 32 | u64::from(state.sh(COMPUTE_PGM_LO))) << 8;
    let scratch_base = (u64::from(state.sh(COMPUTE_DISPATCH_SCRATCH_BASE_HI)) << 32
        | u64::from(state.sh(COMPUTE_DISPATCH_SCRATCH_BASE_LO)))
        << 8;
    let mut user_data = [0u32; 16];
    for (k, u) in user_data.iter_mut().enumerate() {
        *u = state.sh(COMPUTE_USER_DATA_0 + k as u32);
    }
    // LDS_SIZE: bits 15..24, in 128-dword (512-byte) granules on gfx9.
    let lds_bytes = (rsrc2 >> 15 & 0x1ff) * 512;
    mem.dispatch(&ComputeDispatch {
        entry,
        rsrc: [rsrc1, rsrc2, rsrc3],
        user_data,
        workgroup_size,
        grid_size,
        lds_bytes,
        tmpring_size: state.sh(COMPUTE_TMPRING_SIZE),
        scratch_base,
    })
}

/// `WAIT_REG_MEM`: dword 1 `FUNCTION` (0..3), `MEM_SPACE` (4..6), `OPERATION` (6..8),
/// `ENGINE_SEL` (8..10); 2..4 the poll address (memory) or the two registers; 4 the
/// reference; 5 the mask; 6 the poll interval.
fn wait_reg_mem(
    p: &[u32],
    place: Place,
    i: usize,
    state: &mut Pm4State,
    mem: &dyn Pm4Memory,
) -> Result<(), Error> {
    if p.len() != 7 {
        return Err(bad(
            place,
            i,
            format_args!("WAIT_REG_MEM is {} dwords; must be 7", p.len()),
        ));
    }
    let control = p[1];
    let function = control & 7;
    let mem_space = control >> 4 & 3;
    let operation = control >> 6 & 3;
    let engine = control >> 8 & 3;
    let (reference, mask) = (p[4], p[5]);
    let holds = |v: u32| {
        let v = v & mask;
        match function {
            0 => true,
            1 => v < reference,
            2 => v <= reference,
            3 => v == reference,
            4 => v != reference,
            5 => v >= reference,
            _ => v > reference,
        }
    };
    if function == 7 || engine != 0 {
        return Err(bad(
            place,
            i,
            format_args!(
                "WAIT_REG_MEM control {control:#x}: FUNCTION {function} (7 is reserved) / \
                 ENGINE_SEL {engine} (a compute queue has the ME only, 0)"
            ),
        ));
    }
    match (mem_space, operation) {
        (1, 0) => {
            let va = u64::from(p[2] & !3) | u64::from(p[3]) << 32;
            loop {
                let mut v = [0u32];
                mem.read_dwords(va, &mut v)?;
                if holds(v[0]) {
                    return Ok(());
                }
                mem.poll_interval().map_err(|e| {
                    error!(
                        e.status(),
                        "{}: WAIT_REG_MEM on {va:#x} (value {:#x}, mask {mask:#x}, function \
                         {function}, reference {reference:#x}): {}",
                        place.describe(i),
                        v[0],
                        e.detail()
                    )
                })?;
            }
        }
        (0, 1) if (p[2], p[3]) == state.hdp_flush => {
            // Write REQ, wait on DONE: the flush of every client asked for is done at once.
            state.hdp_flush_done = reference;
            if holds(state.hdp_flush_done) {
                return Ok(());
            }
            Err(bad(
                place,
                i,
                format_args!(
                    "WAIT_REG_MEM writes {reference:#x} to HDP_FLUSH_REQ ({:#x}) and waits for \
                     HDP_FLUSH_DONE ({:#x}) & {mask:#x} to pass function {function}: it never \
                     does (DONE reads what REQ was written)",
                    p[2], p[3]
                ),
            ))
        }
        _ => Err(bad(
            place,
            i,
            format_args!(
                "WAIT_REG_MEM MEM_SPACE {mem_space} OPERATION {operation} on {:#x}/{:#x}: the \
                 emulated CP polls memory (MEM_SPACE 1, OPERATION 0) and runs the write-then-wait \
                 on the HDP flush registers ({:#x}/{:#x}), no other register",
                p[2], p[3], state.hdp_flush.0, state.hdp_flush.1
            ),
        )),
    }
}

/// `EVENT_WRITE`: dword 1 `EVENT_TYPE` (0..6) and `EVENT_INDEX` (8..12).
fn event_write(p: &[u32], place: Place, i: usize) -> Result<(), Error> {
    let event_type = p[1] & 0x3f;
    let event_index = p[1] >> 8 & 0xf;
    // CS_PARTIAL_FLUSH (soc15's VGT_EVENT_TYPE 7) at EVENT_INDEX 4: every dispatch before
    // it has ended, as here they all have (the engine runs in order).
    if (event_type, event_index, p.len()) == (7, 4, 2) {
        fence(Ordering::SeqCst);
        return Ok(());
    }
    Err(bad(
        place,
        i,
        format_args!(
            "EVENT_WRITE of event type {event_type}, index {event_index} ({} dwords): the \
             emulated CP runs CS_PARTIAL_FLUSH (7, index 4, 2 dwords) only",
            p.len()
        ),
    ))
}

/// `COPY_DATA`: dword 1 `SRC_SEL` (0..4), `DST_SEL` (8..12), `COUNT_SEL` (16: 64-bit);
/// 2..4 the source address (or immediate data), 4..6 the destination address.
fn copy_data(p: &[u32], place: Place, i: usize, mem: &dyn Pm4Memory) -> Result<(), Error> {
    if p.len() != 6 {
        return Err(bad(
            place,
            i,
            format_args!("COPY_DATA is {} dwords; must be 6", p.len()),
        ));
    }
    let control = p[1];
    let src_sel = control & 0xf;
    let dst_sel = control >> 8 & 0xf;
    let wide = control >> 16 & 1 != 0;
    let src = u64::from(p[2]) | u64::from(p[3]) << 32;
    let dst = u64::from(p[4]) | u64::from(p[5]) << 32;
    if !matches!(dst_sel, 2 | 5) {
        return Err(bad(
            place,
            i,
            format_args!(
                "COPY_DATA DST_SEL is {dst_sel}; the emulated CP copies to memory (2 TC_L2, 5 \
                 memory), not to a register (0), GDS (3) or a performance counter (4)"
            ),
        ));
    }
    let align = if wide { 8 } else { 4 };
    let value = match src_sel {
        1 | 2 => {
            let mut v = [0u32; 2];
            let n = if wide { 2 } else { 1 };
            mem.read_dwords(src & !(align - 1), &mut v[..n])?;
            u64::from(v[0]) | u64::from(v[1]) << 32
        }
        5 => src,
        9 => mem.gpu_clock(),
        other => {
            return Err(bad(
                place,
                i,
                format_args!(
                    "COPY_DATA SRC_SEL is {other}; the emulated CP copies memory (1, 2), \
                     immediate data (5) or the GPU clock (9), not a register (0), GDS (3), a \
                     performance counter (4) or atomic return data"
                ),
            ))
        }
    };
    if wide {
        mem.write_u64(dst & !7, value)
    } else {
        mem.write_u32(dst & !3, value as u32)
    }
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
        dispatches: RefCell<Vec<ComputeDispatch>>,
        polls_left: Cell<u32>,
        write_after_poll: Cell<Option<(u64, u32)>>,
        l2: RefCell<Vec<L2Action>>,
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
        fn l2_action(&self, action: L2Action) {
            self.l2.borrow_mut().push(action);
        }
        fn dispatch(&self, dispatch: &ComputeDispatch) -> Result<(), Error> {
            self.dispatches.borrow_mut().push(*dispatch);
            Ok(())
        }
        fn poll_interval(&self) -> Result<(), Error> {
            let left = self.polls_left.get();
            if left == 0 {
                return Err(error!(Status::Exception, "preempted while waiting"));
            }
            self.polls_left.set(left - 1);
            // The host's write arrives after the first interval.
            if let Some((va, v)) = self.write_after_poll.take() {
                self.put(va, &[v]);
            }
            Ok(())
        }
    }

    fn execute_fresh(packet: &DecodedPm4Ib, m: &Mem) -> Result<Pm4Counts, Error> {
        execute(packet, &mut Pm4State::default(), m)
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
        let counts = execute_fresh(&packet(ib(ib_va, 7)), &m).unwrap();
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
        // TC_WB then TC: the L2 written back, then invalidated (the cache model's actions).
        assert_eq!(*m.l2.borrow(), [L2Action::WriteBack, L2Action::Invalidate]);
    }

    /// `ACQUIRE_MEM` asks the L2 for what its `CP_COHER_CNTL` bits say and nothing else: the
    /// instruction and scalar caches and the L1 (bits 29, 27, 22) are not the L2's.
    #[test]
    fn acquire_mem_acts_on_the_l2_by_its_bits() {
        for (cntl, want) in [
            (1 << 18, &[L2Action::WriteBack][..]),
            (1 << 23, &[L2Action::Invalidate][..]),
            (1 << 29 | 1 << 27 | 1 << 22, &[][..]),
        ] {
            let m = Mem::default();
            let acquire = [header(OP_ACQUIRE_MEM, 6), cntl, 0xffff_ffff, 0xff, 0, 0, 0];
            m.put(0x4000, &acquire);
            execute_fresh(&packet(ib(0x4000, 7)), &m).unwrap();
            assert_eq!(*m.l2.borrow(), want, "CP_COHER_CNTL {cntl:#x}");
        }
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
        assert_eq!(
            execute_fresh(&packet(ib(0x1000, 8)), &m)
                .unwrap()
                .acquire_mem,
            1
        );
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
        let counts = execute_fresh(&packet(ib(0x1000, stream.len() as u32)), &m).unwrap();
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
        let counts = execute_fresh(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!(counts.release_mem, 4);
        assert_eq!(m.get(0x5008), Some(0x5566_7788));
        assert_eq!(m.get(0x500c), Some(0x1122_3344));
        assert_eq!(m.get(0x6004), Some(0xdead_beef));
        assert_eq!(m.get(0x6008), None);
        assert_eq!(m.get(0x7000), Some(0x5678_9abc));
        assert_eq!(m.get(0x7004), Some(0x1234));
        assert_eq!(*m.interrupts.borrow(), [42, 7]);
        // TC_WB_ACTION_ENA (bit 15) in each: four write-backs, no invalidate (bit 17 clear).
        assert_eq!(*m.l2.borrow(), [L2Action::WriteBack; 4]);
        // TC_ACTION_ENA (bit 17) alone invalidates; neither bit: nothing.
        for (dw1, want) in [
            (5 << 8 | 1 << 17, &[L2Action::Invalidate][..]),
            (5 << 8 | 1 << 19, &[][..]),
        ] {
            let m = Mem::default();
            m.put(0x1000, &[header(OP_RELEASE_MEM, 7), dw1, 0, 0, 0, 0, 0, 0]);
            execute_fresh(&packet(ib(0x1000, 8)), &m).unwrap();
            assert_eq!(*m.l2.borrow(), want, "dword 1 {dw1:#x}");
        }
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
        let counts = execute_fresh(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!(counts.nop, 3);
        assert_eq!(counts.indirect_buffer, 2);
        assert_eq!(counts.write_data, 1);
        assert_eq!(m.get(0x9000), Some(77));
    }

    /// Each thing the engine does not execute stops it with a message naming it and its place.
    #[test]
    fn unknown_packets_and_fields_are_named() {
        let cases: Vec<(Vec<u32>, &str)> =
            vec![
            (
                vec![header(0x11, 1), 0], // SET_BASE
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): opcode 0x11 (header 0xc0001100) is \
                 not one the emulated CP executes (NOP 0x10, DISPATCH_DIRECT 0x15, \
                 DISPATCH_INDIRECT 0x16, WRITE_DATA 0x37, WAIT_REG_MEM 0x3c, INDIRECT_BUFFER \
                 0x3f, COPY_DATA 0x40, EVENT_WRITE 0x46, RELEASE_MEM 0x49, ACQUIRE_MEM 0x58, \
                 SET_SH_REG 0x76, SET_UCONFIG_REG 0x79)",
            ),
            (
                vec![header(OP_EVENT_WRITE, 1), 0x35], // THREAD_TRACE_MARKER
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): EVENT_WRITE of event type 53, index 0 \
                 (2 dwords): the emulated CP runs CS_PARTIAL_FLUSH (7, index 4, 2 dwords) only",
            ),
            (
                vec![header(OP_SET_UCONFIG_REG, 2), 0x200, 0x4000_0001],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): SET_UCONFIG_REG of register 0xc200 \
                 (offset 0x200) = 0x40000001: the emulated CP takes GRBM_GFX_INDEX (0xc200) \
                 with every broadcast bit (0xe0000000) only",
            ),
            (
                vec![header(OP_COPY_DATA, 5), 4 | 2 << 8, 0x3400, 0, 0x2000, 0],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): COPY_DATA SRC_SEL is 4; the emulated \
                 CP copies memory (1, 2), immediate data (5) or the GPU clock (9), not a \
                 register (0), GDS (3), a performance counter (4) or atomic return data",
            ),
            (
                vec![header(OP_WAIT_REG_MEM, 6), 1 << 6 | 3, 0x2e0c, 0x2e0d, 0, 0, 4],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): WAIT_REG_MEM MEM_SPACE 0 OPERATION 1 \
                 on 0x2e0c/0x2e0d: the emulated CP polls memory (MEM_SPACE 1, OPERATION 0) and \
                 runs the write-then-wait on the HDP flush registers (0xe26/0xe27), no other \
                 register",
            ),
            (
                vec![header(OP_DISPATCH_DIRECT, 4), 1, 1, 1, 4],
                "PM4 at IB1 at 0x1000, dword 0 (0x1000): dispatch [1, 1, 1]: \
                 COMPUTE_DISPATCH_INITIATOR 0x4 lacks COMPUTE_SHADER_EN (bit 0)",
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
            let e = execute_fresh(&packet(ib(0x1000, stream.len() as u32)), &m).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat, "{want}");
            assert_eq!(e.detail(), want);
        }
    }

    /// The launch state a DISPATCH_DIRECT hands the SPI, from tinygrad's register writes:
    /// code address `PGM << 8`, RSRC1-3, USER_DATA, work-group size from NUM_THREAD_*, the
    /// grid in work-groups (× size), or in threads with USE_THREAD_DIMENSIONS (bit 5), LDS in
    /// 512-byte granules, scratch base `<< 8`; the registers stay for the next dispatch.
    #[test]
    fn dispatch_direct_launches_from_the_registers() {
        let m = Mem::default();
        let set = |offset: u32, values: &[u32]| {
            let mut v = vec![header(OP_SET_SH_REG, values.len() as u32 + 1), offset];
            v.extend_from_slice(values);
            v
        };
        let mut s = Vec::new();
        s.extend(set(reg::COMPUTE_PGM_LO, &[0x1234_5678, 0x7f]));
        s.extend(set(
            reg::COMPUTE_PGM_RSRC1,
            &[0x00af_0041, 4 << 1 | 1 << 7 | 3 << 15],
        ));
        s.extend(set(reg::COMPUTE_PGM_RSRC3, &[5]));
        s.extend(set(reg::COMPUTE_TMPRING_SIZE, &[8 << 12 | 16]));
        s.extend(set(reg::COMPUTE_DISPATCH_SCRATCH_BASE_LO, &[0x40_0000, 0]));
        s.extend(set(reg::COMPUTE_USER_DATA_0, &[1, 2, 3, 4]));
        s.extend(set(reg::COMPUTE_START_X, &[0, 0, 0, 64, 2, 1, 0, 0]));
        s.extend([header(OP_DISPATCH_DIRECT, 4), 3, 5, 1, 1 | 1 << 2]);
        s.extend([header(OP_DISPATCH_DIRECT, 4), 100, 7, 1, 1 | 1 << 5]);
        s.extend([header(OP_DISPATCH_DIRECT, 4), 0, 7, 1, 1]);
        m.put(0x1000, &s);
        let counts = execute_fresh(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!((counts.set_reg, counts.dispatch), (7, 3));
        let first = ComputeDispatch {
            entry: 0x7f_1234_5678 << 8,
            rsrc: [0x00af_0041, 4 << 1 | 1 << 7 | 3 << 15, 5],
            user_data: [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            workgroup_size: [64, 2, 1],
            grid_size: [192, 10, 1],
            lds_bytes: 3 * 512,
            tmpring_size: 8 << 12 | 16,
            scratch_base: 0x4000_0000,
        };
        let threads = ComputeDispatch {
            grid_size: [100, 7, 1],
            ..first
        };
        // The third has a zero dimension: nothing launches.
        assert_eq!(*m.dispatches.borrow(), [first, threads]);
    }

    /// What a dispatch refuses, named: too many user SGPRs, a trap handler, a start past
    /// work-group 0, a zero work-group size.
    #[test]
    fn dispatch_refuses_what_it_does_not_emulate() {
        let cases: [(u32, u32, &str); 4] = [
            (
                reg::COMPUTE_PGM_RSRC2,
                17 << 1,
                "COMPUTE_PGM_RSRC2 0x22: USER_SGPR is 17; there are 16 COMPUTE_USER_DATA \
                 registers",
            ),
            (
                reg::COMPUTE_PGM_RSRC2,
                1 << 6,
                "COMPUTE_PGM_RSRC2 0x40: a trap handler (TRAP_PRESENT, EXCP_EN, EXCP_EN_MSB) \
                 and SKIP_USGPR0 are not emulated",
            ),
            (
                reg::COMPUTE_START_X + 1,
                2,
                "COMPUTE_START_Y is 2: a dispatch starting past work-group 0 is not emulated",
            ),
            (
                reg::COMPUTE_NUM_THREAD_X + 2,
                0x10000,
                "COMPUTE_NUM_THREAD_Z NUM_THREAD_FULL is 0",
            ),
        ];
        for (offset, value, want) in cases {
            let m = Mem::default();
            let mut s = vec![
                header(OP_SET_SH_REG, 4),
                reg::COMPUTE_NUM_THREAD_X,
                64,
                1,
                1,
            ];
            s.extend([header(OP_SET_SH_REG, 2), offset, value]);
            s.extend([header(OP_DISPATCH_DIRECT, 4), 1, 1, 1, 1]);
            m.put(0x1000, &s);
            let e = execute_fresh(&packet(ib(0x1000, s.len() as u32)), &m).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat);
            assert_eq!(
                e.detail(),
                format!("PM4 at IB1 at 0x1000, dword 8 (0x1020): dispatch [1, 1, 1]: {want}")
            );
            assert!(m.dispatches.borrow().is_empty());
        }
    }

    /// COPY_DATA of immediate data (32-bit) and the GPU clock (64-bit); WAIT_REG_MEM on
    /// memory polls until the value comes, and ends with the queue's preemption.
    #[test]
    fn copy_data_and_wait_reg_mem() {
        let m = Mem::default();
        m.clock.set(0x1_2345_6789);
        let s = [
            header(OP_COPY_DATA, 5),
            5 | 5 << 8,
            0xabcd,
            0,
            0x2000,
            0,
            header(OP_COPY_DATA, 5),
            9 | 2 << 8 | 1 << 16,
            0,
            0,
            0x2008,
            0,
            // WAIT_REG_MEM: memory, function 5 (>=), reference 10 at 0x3000.
            header(OP_WAIT_REG_MEM, 6),
            1 << 4 | 5,
            0x3000,
            0,
            10,
            0xffff_ffff,
            4,
        ];
        m.put(0x1000, &s);
        m.put(0x3000, &[9]);
        m.polls_left.set(5);
        m.write_after_poll.set(Some((0x3000, 11)));
        let counts = execute_fresh(&packet(ib(0x1000, s.len() as u32)), &m).unwrap();
        assert_eq!((counts.copy_data, counts.wait_reg_mem), (2, 1));
        assert_eq!(m.get(0x2000), Some(0xabcd));
        assert_eq!((m.get(0x2008), m.get(0x200c)), (Some(0x2345_6789), Some(1)));
        assert_eq!(m.polls_left.get(), 4, "one poll interval");
        // A value that never comes: the wait ends when the queue is taken away.
        m.put(0x3000, &[9]);
        m.polls_left.set(2);
        let e = execute_fresh(&packet(ib(0x1000 + 12 * 4, 7)), &m).unwrap_err();
        assert_eq!(e.status(), Status::Exception);
        assert_eq!(
            e.detail(),
            "IB1 at 0x1030, dword 0 (0x1030): WAIT_REG_MEM on 0x3000 (value 0x9, mask \
             0xffffffff, function 5, reference 0xa): preempted while waiting"
        );
    }

    /// The IB itself: VALID bit, nesting deeper than IB2, memory the GPU cannot read.
    #[test]
    fn indirect_buffer_checks() {
        let m = Mem::default();
        let mut invalid = ib(0x1000, 1);
        invalid[3] &= !(1 << 23);
        let e = execute_fresh(&packet(invalid), &m).unwrap_err();
        assert_eq!(
            e.detail(),
            "PM4 at PM4-IB packet dword 1: INDIRECT_BUFFER at 0x1000 lacks its VALID bit (23): \
             0x00000001"
        );
        // IB1 at 0x1000 calls IB2 at 0x2000, which calls 0x3000.
        m.put(0x1000, &ib(0x2000, 4));
        m.put(0x2000, &ib(0x3000, 4));
        m.put(0x3000, &[PACKET2; 4]);
        let e = execute_fresh(&packet(ib(0x1000, 4)), &m).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "PM4 at IB2 at 0x2000, dword 0 (0x2000): INDIRECT_BUFFER at 0x3000 inside an IB2: \
             the CP nests two levels only"
        );
        let e = execute_fresh(&packet(ib(0x8000, 2)), &m).unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(e.detail(), "read at 0x8000: nothing there");
        // An IB1 calling an IB2 is fine.
        m.put(0x2000, &[PACKET2; 4]);
        let counts = execute_fresh(&packet(ib(0x1000, 4)), &m).unwrap();
        assert_eq!((counts.indirect_buffer, counts.nop), (2, 4));
    }
}
