//! The GFX9 wave interpreter: runs a kernel dispatch's work-groups (sequentially, or a range
//! of them per call with [`run_workgroups`] so a host can spread them over threads), each
//! work-group's waves interleaved at `s_barrier`, over a [`DeviceMemory`].
//!
//! Launch state follows AMDGPUUsage "Initial Kernel Execution State": enabled user SGPRs in
//! order (private segment buffer 4, dispatch ptr 2, queue ptr 2, kernarg segment ptr 2,
//! dispatch id 2, flat scratch init 2, private segment size 1, then preloaded kernargs), then
//! at `user_sgpr_count` the system SGPRs (work-group id x/y/z as enabled, work-group info,
//! private segment wave offset), work-item ids in v0/v1/v2 (gfx900) or packed in v0
//! (gfx90a/gfx942: bits 0..9 x, 10..19 y, 20..29 z), EXEC = the wave's live lanes.
//!
//! Scratch (private segment) is the queue's, as the CP takes it from `amd_queue_t`
//! ([`QueueScratch`]): device memory the runtime allocated, one slot of
//! `COMPUTE_TMPRING_SIZE.WAVESIZE` KiB per live wave, swizzled per dword as the hardware's
//! scratch is; the launch state points at it as AMDGPUUsage describes (the queue's private
//! segment buffer V#, flat scratch init and the wave's offset on gfx900/gfx90a; FLAT_SCRATCH
//! itself on gfx942's architected flat scratch). A dispatch the queue's scratch cannot hold
//! fails with [`ScratchShort::error`] ([`scratch_request`]). FLAT addresses in the shared
//! and private apertures reach LDS and the lane's private segment.
//!
//! Semantics are those of the Vega/CDNA ISA guides with these documented limits: LDS
//! accesses outside the work-group's allocation read 0 and drop writes, as the hardware's
//! LDS bounds check does; fused multiply-adds round once; `v_rcp`, `v_rsq`, `v_sqrt`,
//! `v_exp_f32` and `v_log_f32` give the correctly rounded value (within the 1 ULP the ISA
//! allows); IEEE division's `v_div_scale`/`v_div_fmas`/`v_div_fixup` are in `fdiv.rs`;
//! `v_trig_preop_f64` gives 2/π's segments (`fdiv.rs`); `v_sin`/`v_cos` give the host's
//! `sin(2π·x)`/`cos(2π·x)` (the ISA states no exact bits for them). What the MODE register
//! does to float arithmetic (denormal flushing, IEEE-mode min/max, DX10 clamp, directed
//! rounding of f32 add/mul/fma) is in `mode.rs`.

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use super::decode::{
    decode, Dpp, Encoding, Instruction, Modifiers, Operand, SdwaSel, F_CI, F_CND, F_CO,
};
use super::f16;
use super::fast::{Done, Fast};
use super::fdiv;
use super::format::BufferFormat;
use super::fp8;
use super::hwid::{enabled_cus, hw_id, CuId, WaveLaunch};
use super::mode;
use super::op::{self, AtomicOp, Class, Cond, Fp, MemTy, Op, Ty};
use super::round;
use super::wave::{Wave, WaveState, FLAT_SCRATCH, M0, WAVE_SIZE};
use super::Gfx9Target;
use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::{bail, error, Result, Status};

/// What a cache-control instruction asks of the GPU's L2 (AMDGPUUsage, the gfx90a and gfx942
/// memory models), for a memory that models it ([`DeviceMemory::l2_action`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Action {
    /// Write every dirty line back to memory: `buffer_wbl2` (gfx90a; gfx942 with `sc1`, agent
    /// or system scope), a release beyond the agent.
    WriteBack,
    /// Drop every line that is not dirty, so later loads read memory: `buffer_invl2` (gfx90a),
    /// `buffer_inv sc1` (gfx942, agent or system scope), an acquire beyond the agent.
    Invalidate,
}

impl L2Action {
    /// The L2 action of buffer cache-control instruction `op` on `target` with its `sc1` bit
    /// (gfx942's scope: `sc1` agent, `sc0 sc1` system), or `None` when it acts on the L1
    /// alone (`buffer_wbinvl1*`, gfx942's `buffer_inv sc0`/`buffer_wbl2 sc0`, work-group
    /// scope).
    pub fn of(op: Op, target: Gfx9Target, sc1: bool) -> Option<L2Action> {
        let gfx942 = target.is_gfx940();
        match op {
            Op::BufferWbl2 if sc1 || !gfx942 => Some(L2Action::WriteBack),
            Op::BufferInvl2 => Some(L2Action::Invalidate),
            Op::BufferInv if sc1 => Some(L2Action::Invalidate),
            _ => None,
        }
    }
}

/// Device memory as the interpreter sees it: one flat 64-bit address space.
///
/// The emulated device implements it with bounds checks against its allocations.
pub trait DeviceMemory {
    /// Reads `buf.len()` bytes at device address `addr`.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the address when any byte is outside every allocation.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()>;

    /// Writes `data` at device address `addr`.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the address when any byte is outside every allocation.
    fn write(&self, addr: u64, data: &[u8]) -> Result<()>;

    /// Reads `n` bytes (at most 16) at `addrs[lane]` into `out[lane]` for each lane whose bit
    /// is set in `lanes`, lane by lane in increasing order: one wave-instruction's global
    /// loads. The provided implementation calls [`DeviceMemory::read`] per lane; memories
    /// override it to look their allocation up once when every lane's access falls in the
    /// same one (the common case), with the same results and faults.
    ///
    /// # Errors
    /// The first lane (in order) whose access [`DeviceMemory::read`] rejects, with that
    /// error; the lanes before it are read.
    fn read_lanes(
        &self,
        addrs: &[u64; WAVE_SIZE],
        lanes: u64,
        n: usize,
        out: &mut [[u8; 16]; WAVE_SIZE],
    ) -> core::result::Result<(), (usize, hsa_core::Error)> {
        for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
            self.read(addrs[lane], &mut out[lane][..n])
                .map_err(|e| (lane, e))?;
        }
        Ok(())
    }

    /// Writes `n` bytes (at most 16) of `data[lane]` at `addrs[lane]` for each lane whose bit
    /// is set in `lanes`, lane by lane in increasing order (a later lane's bytes win where
    /// accesses overlap): one wave-instruction's global stores. Provided and overridden as
    /// [`DeviceMemory::read_lanes`].
    ///
    /// # Errors
    /// The first lane (in order) whose access [`DeviceMemory::write`] rejects, with that
    /// error; the lanes before it are written.
    fn write_lanes(
        &self,
        addrs: &[u64; WAVE_SIZE],
        lanes: u64,
        n: usize,
        data: &[[u8; 16]; WAVE_SIZE],
    ) -> core::result::Result<(), (usize, hsa_core::Error)> {
        for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
            self.write(addrs[lane], &data[lane][..n])
                .map_err(|e| (lane, e))?;
        }
        Ok(())
    }

    /// Applies a cache-control instruction's action to the GPU's L2 ([`L2Action`]). The
    /// provided implementation does nothing: a memory without a cache model is coherent, and
    /// the instruction is only an ordering point there.
    ///
    /// # Errors
    /// None from the provided implementation; a memory that models the L2 may fail a
    /// write-back with [`Status::MemoryFault`].
    fn l2_action(&self, action: L2Action) -> Result<()> {
        let _ = action;
        Ok(())
    }

    /// Atomically replaces the little-endian u32 at `addr` by `op(old)` and returns `old`
    /// (global atomics). The provided implementation reads, then writes: atomic only when
    /// nothing else accesses the memory meanwhile. Memories shared with other threads (work-
    /// groups run in parallel, the host) override it with a real atomic operation.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the address when any byte is outside every allocation
    /// (or, for implementations with real atomics, `addr` is not 4-byte aligned).
    fn atomic_rmw_u32(&self, addr: u64, op: &mut dyn FnMut(u32) -> u32) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        let old = u32::from_le_bytes(b);
        self.write(addr, &op(old).to_le_bytes())?;
        Ok(old)
    }

    /// Atomically replaces the little-endian u64 at `addr` by `op(old)` and returns `old`
    /// (the 64-bit `_x2` and `_f64` atomics). The provided implementation reads, then
    /// writes, as [`DeviceMemory::atomic_rmw_u32`]'s does.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the address when any byte is outside every allocation
    /// (or, for implementations with real atomics, `addr` is not 8-byte aligned).
    fn atomic_rmw_u64(&self, addr: u64, op: &mut dyn FnMut(u64) -> u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        let old = u64::from_le_bytes(b);
        self.write(addr, &op(old).to_le_bytes())?;
        Ok(old)
    }

    /// Raises the shader sequencer's message interrupt of `s_sendmsg sendmsg(MSG_INTERRUPT)`
    /// with `data`, the low 23 bits of the wave's M0, as amdkfd receives it: its interrupt
    /// handler (`kfd_int_process_v9.c`, `SOC15_INTSRC_SQ_INTERRUPT_MSG`) calls
    /// `kfd_signal_event_interrupt(pasid, data, 23)`, which sets the signal event `data`
    /// when its mailbox slot was written, else every signal event whose slot was. HIP's
    /// hostcall (device printf) rings its doorbell signal this way (ROCm-Device-Libs ockl
    /// `__ockl_hsa_signal_add`: the event id into the signal's mailbox, then the message).
    ///
    /// # Errors
    /// The provided implementation is for memories with no interrupt handler behind them:
    /// [`Status::IllegalInstruction`] saying so (the kernel would wait for a host that is
    /// never told).
    fn message_interrupt(&self, data: u32) -> Result<()> {
        Err(error!(
            Status::IllegalInstruction,
            "{} sendmsg(MSG_INTERRUPT) (M0 data {data:#x}): this device has no interrupt \
             handler",
            Op::SSendmsg
        ))
    }

    /// The 64-bit clock counter `s_memtime` and `s_memrealtime` read, in the ticks of the
    /// device's timestamps (the emulated device: nanoseconds of `CLOCK_MONOTONIC`, 1 GHz, the
    /// clock of its other timestamps). The host supplies it: the ISA has no clock of its own.
    fn clock_counter(&self) -> u64;
}

/// A kernel's machine code: the bytes of (at least) its code, where they live on the device,
/// and the entry point.
#[derive(Clone, Copy, Debug)]
pub struct KernelCode<'a> {
    /// Device address of `bytes[0]`.
    pub base_address: u64,
    /// The code bytes (e.g. the whole loaded `.text` or code segment).
    pub bytes: &'a [u8],
    /// Device address of the first instruction (kernel descriptor address +
    /// `kernel_code_entry_byte_offset`).
    pub entry_address: u64,
}

/// A kernel's machine code in device memory: the interpreter reads it through the
/// [`DeviceMemory`] of the call, one code page (4 KiB and the 12 bytes past it) at a time, the
/// first time a wave reaches the page in the call ([`DecodeCache`]), rather than the whole
/// image up front: a dispatch reads only the code it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCode {
    /// Device address of the code's first byte (e.g. the start of the loaded image).
    pub base_address: u64,
    /// Code bytes from `base_address`, all readable through the call's memory: a pc at or
    /// past `base_address + len` is outside the code (an illegal instruction), and no
    /// instruction is read past it.
    pub len: u64,
    /// Device address of the first instruction (kernel descriptor address +
    /// `kernel_code_entry_byte_offset`).
    pub entry_address: u64,
}

/// Where the interpreter reads a kernel's code from: bytes the caller holds
/// ([`KernelCode`]), or device memory ([`DeviceCode`]).
#[derive(Clone, Copy, Debug)]
pub enum CodeSource<'a> {
    /// Code bytes in host memory (a code object's loaded image, a test's bytes).
    Host(KernelCode<'a>),
    /// Code in device memory, read a page at a time as waves reach it.
    Device(DeviceCode),
}

impl<'a> From<&KernelCode<'a>> for CodeSource<'a> {
    fn from(code: &KernelCode<'a>) -> CodeSource<'a> {
        CodeSource::Host(*code)
    }
}

impl<'a> From<KernelCode<'a>> for CodeSource<'a> {
    fn from(code: KernelCode<'a>) -> CodeSource<'a> {
        CodeSource::Host(code)
    }
}

impl From<DeviceCode> for CodeSource<'_> {
    fn from(code: DeviceCode) -> Self {
        CodeSource::Device(code)
    }
}

impl CodeSource<'_> {
    /// Device address of the code's first byte.
    pub fn base_address(&self) -> u64 {
        match self {
            CodeSource::Host(c) => c.base_address,
            CodeSource::Device(c) => c.base_address,
        }
    }

    /// Device address one past the code's last byte (saturating at `u64::MAX`).
    pub fn end_address(&self) -> u64 {
        match self {
            CodeSource::Host(c) => c.base_address.saturating_add(c.bytes.len() as u64),
            CodeSource::Device(c) => c.base_address.saturating_add(c.len),
        }
    }

    /// Device address of the first instruction.
    pub fn entry_address(&self) -> u64 {
        match self {
            CodeSource::Host(c) => c.entry_address,
            CodeSource::Device(c) => c.entry_address,
        }
    }

    /// Reads the code bytes at `addr..addr + buf.len()` (inside the code): a copy of the
    /// host bytes, or a read through `memory`.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] from `memory` (device code), the message naming the range.
    fn read(&self, addr: u64, buf: &mut [u8], memory: &dyn DeviceMemory) -> Result<()> {
        match self {
            CodeSource::Host(c) => {
                let off = (addr - c.base_address) as usize;
                buf.copy_from_slice(&c.bytes[off..off + buf.len()]);
                Ok(())
            }
            CodeSource::Device(_) => memory.read(addr, buf).map_err(|e| {
                error!(
                    e.status(),
                    "kernel code {addr:#x}..{:#x}: {}",
                    addr + buf.len() as u64,
                    e.detail()
                )
            }),
        }
    }
}

/// What a kernel dispatch packet and its queue tell the interpreter.
#[derive(Clone, Copy, Debug)]
pub struct DispatchState {
    /// Grid size per dimension, work-items.
    pub grid_size: [u32; 3],
    /// Work-group size per dimension, work-items.
    pub workgroup_size: [u16; 3],
    /// Device address of the AQL dispatch packet (dispatch ptr SGPRs).
    pub dispatch_packet_address: u64,
    /// Device address of the kernarg segment.
    pub kernarg_address: u64,
    /// Device address of the `amd_queue_t` (queue ptr SGPRs).
    pub queue_address: u64,
    /// Dispatch id (the packet's index in the queue).
    pub dispatch_id: u64,
    /// LDS per work-group, bytes (the descriptor's fixed size plus the packet's dynamic size).
    pub group_segment_size: u32,
    /// Private memory per work-item, bytes, from the packet (`private_segment_size`): what
    /// the queue's scratch must hold per lane ([`scratch_request`]).
    pub private_segment_size: u32,
    /// The queue's scratch, from its `amd_queue_t` ([`QueueScratch::from_amd_queue`]):
    /// where private memory is.
    pub scratch: QueueScratch,
    /// Instructions one wave may execute before the dispatch is aborted (a hang guard).
    pub max_instructions_per_wave: u64,
    /// The CUs the queue may use and the queue's ids: where work-groups run and what
    /// `HW_REG_HW_ID` reads ([`super::hwid`]).
    pub launch: WaveLaunch,
    /// The GPU's `GB_ADDR_CONFIG` register (pipes, banks, shader engines, pipe interleave):
    /// how the texture unit addresses a swizzled image's `_X` modes
    /// ([`crate::tiling::AddrConfig`]). The same value the GPU's driver reports
    /// (amdkfd's `GET_TILE_CONFIG`), which ROCR hands to addrlib to lay images out.
    pub gb_addr_config: u32,
    /// Where the waves' user SGPRs come from ([`UserSgprs`]).
    pub user_sgprs: UserSgprs,
    /// Whether an instruction naming a VGPR past the wave's allocation
    /// (`(COMPUTE_PGM_RSRC1.VGPRS + 1)` × [`Gfx9Target::vgpr_granule`]) stops the dispatch
    /// (set for a PM4 dispatch, whose RSRC1 comes from the queue's registers). The hardware
    /// does not check: such a wave reaches VGPRs the SPI did not give it (another wave's),
    /// which the interpreter cannot model; it stops with [`Status::IllegalInstruction`]
    /// naming the register and the allocation instead.
    pub check_vgpr_allocation: bool,
    /// Whether the GPU runs with SRAM ECC on (its topology node's `capability` has
    /// `HSA_CAP_SRAM_EDCSUPPORTED`: the `sramecc+` of its target id). With it, D16 loads
    /// (`buffer/global/flat/scratch_load_*_d16[_hi]`, `ds_read_*_d16[_hi]`, the D16 format
    /// loads) write 0 to the half of the VGPR they do not load; without it they keep it
    /// (AMDGPUUsage's target features; LLVM's `d16PreservesUnusedBits`).
    pub sramecc: bool,
    /// The queue's process's FLAT apertures on this GPU: the `SH_MEM_BASES` value amdkfd
    /// programs for the process ([`Apertures`](crate::aperture::Apertures)), the same
    /// bases `GET_PROCESS_APERTURES_NEW` reports to the runtime.
    pub apertures: crate::aperture::Apertures,
}

/// Where the SPI takes a wave's user SGPRs (`s0` up to `COMPUTE_PGM_RSRC2.USER_SGPR`) from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UserSgprs {
    /// An AQL dispatch: the CP fills them from the kernel descriptor's
    /// `kernel_code_properties` enables ([`aql_user_sgprs`], which the interpreter calls
    /// once per call of [`run_workgroups_preemptible`]).
    #[default]
    FromDescriptor,
    /// The values of `COMPUTE_USER_DATA_0..15`, loaded into `s0..` up to
    /// `COMPUTE_PGM_RSRC2.USER_SGPR` (at most 16): a PM4 dispatch's registers, or an AQL
    /// dispatch's once resolved ([`aql_user_sgprs`]). Every wave starts from these; the
    /// descriptor's `kernel_code_properties` are not read.
    Registers([u32; 16]),
}

impl DispatchState {
    /// A 1-dimensional dispatch with everything else zero and a limit of 10 million
    /// instructions per wave.
    pub const fn one_dimensional(
        grid_size_x: u32,
        workgroup_size_x: u16,
        dispatch_packet_address: u64,
        kernarg_address: u64,
    ) -> DispatchState {
        DispatchState {
            grid_size: [grid_size_x, 1, 1],
            workgroup_size: [workgroup_size_x, 1, 1],
            dispatch_packet_address,
            kernarg_address,
            queue_address: 0,
            dispatch_id: 0,
            group_segment_size: 0,
            private_segment_size: 0,
            scratch: QueueScratch {
                resource_descriptor: [0; 4],
                backing_memory_location: 0,
                backing_memory_byte_size: 0,
                compute_tmpring_size: 0,
                first_slot: 0,
            },
            max_instructions_per_wave: 10_000_000,
            launch: WaveLaunch::SINGLE_CU,
            gb_addr_config: 0,
            user_sgprs: UserSgprs::FromDescriptor,
            check_vgpr_allocation: false,
            sramecc: false,
            apertures: crate::aperture::Apertures::AMDKFD_GFX9,
        }
    }
}

/// Maximum LDS per work-group, bytes (64 KiB on GFX9).
pub const MAX_LDS_BYTES: u32 = 64 * 1024;

/// A queue's scratch as the command processor reads it from the queue's `amd_queue_t` when it
/// launches a dispatch (AMDGPUUsage "Private Segment Buffer", "Flat Scratch"; ROCR's
/// `AqlQueue::InitScratchSRD` fills these fields): the private segment buffer V# every wave
/// gets, the backing memory's device address (the flat scratch init value) and the
/// `COMPUTE_TMPRING_SIZE` that sets the bytes per wave slot and the number of slots. All zero
/// (the default) is a queue without scratch: a dispatch with a private segment then needs a
/// scratch request ([`scratch_request`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueScratch {
    /// `amd_queue_t.scratch_resource_descriptor` (offset 144): the V# the CP loads into a
    /// wave's private segment buffer SGPRs, verbatim.
    pub resource_descriptor: [u32; 4],
    /// `amd_queue_t.scratch_backing_memory_location` (offset 160): device address of the
    /// scratch backing memory; the flat scratch init value on gfx9 and the base of each
    /// wave's FLAT_SCRATCH on gfx940+.
    pub backing_memory_location: u64,
    /// `amd_queue_t.scratch_backing_memory_byte_size` (offset 168), bytes.
    pub backing_memory_byte_size: u64,
    /// `amd_queue_t.compute_tmpring_size` (offset 140): WAVES \[11:0\] (wave slots) and
    /// WAVESIZE \[24:12\] (bytes per slot in 1 KiB units).
    pub compute_tmpring_size: u32,
    /// The first wave slot the waves of this call take: the interpreter's host threads run
    /// work-groups at once, each thread on its own slots (thread `t` takes slots from
    /// `t * waves per group`), as the SPI gives each live wave its own slot.
    pub first_slot: u32,
}

impl QueueScratch {
    /// Reads the scratch fields of the 256-byte `amd_queue_t` image `amd_queue`
    /// (`hsa_core::abi::AmdQueue`'s offsets: 140, 144, 160, 168).
    pub fn from_amd_queue(amd_queue: &[u8; 256]) -> QueueScratch {
        let u32_at = |o: usize| {
            u32::from_le_bytes([
                amd_queue[o],
                amd_queue[o + 1],
                amd_queue[o + 2],
                amd_queue[o + 3],
            ])
        };
        let u64_at = |o: usize| u64::from(u32_at(o)) | u64::from(u32_at(o + 4)) << 32;
        QueueScratch {
            resource_descriptor: [u32_at(144), u32_at(148), u32_at(152), u32_at(156)],
            backing_memory_location: u64_at(160),
            backing_memory_byte_size: u64_at(168),
            compute_tmpring_size: u32_at(140),
            first_slot: 0,
        }
    }

    /// Wave slots: `COMPUTE_TMPRING_SIZE.WAVES`.
    pub const fn waves(&self) -> u32 {
        self.compute_tmpring_size & 0xFFF
    }

    /// Bytes of scratch per wave slot: `COMPUTE_TMPRING_SIZE.WAVESIZE` × 1 KiB.
    pub const fn wave_bytes(&self) -> u64 {
        (self.compute_tmpring_size >> 12 & 0x1FFF) as u64 * 1024
    }
}

/// Whether the queue's scratch ([`DispatchState::scratch`]) is too small for the dispatch, as
/// the CP decides before it launches waves: a private segment (the packet's
/// `private_segment_size`, or the kernel descriptor's fixed size when larger) needs wave slots
/// of at least 64 lanes × that size rounded up to 1 KiB (`COMPUTE_TMPRING_SIZE.WAVESIZE`'s
/// unit) and, for the waves of one work-group from `first_slot`, as many slots. `Some` says
/// what is short; the CP then stores its scratch-request queue error code into the queue's
/// inactive signal and waits for the runtime to grow the queue's scratch (ROCR's
/// `DynamicScratchHandler`, which sizes it from the packet's `private_segment_size`).
pub fn scratch_request(
    descriptor: &KernelDescriptor,
    dispatch: &DispatchState,
) -> Option<ScratchShort> {
    let private = descriptor
        .private_segment_fixed_size
        .max(dispatch.private_segment_size);
    if private == 0 {
        return None;
    }
    let s = &dispatch.scratch;
    let need = (u64::from(private) * WAVE_SIZE as u64).next_multiple_of(1024);
    let items: u64 = dispatch
        .workgroup_size
        .iter()
        .map(|&d| u64::from(d))
        .product();
    let slots = items.div_ceil(WAVE_SIZE as u64) + u64::from(s.first_slot);
    if s.wave_bytes() < need || u64::from(s.waves()) < slots {
        return Some(ScratchShort {
            wave_bytes_needed: need,
            slots_needed: slots,
            wave_bytes: s.wave_bytes(),
            slots: s.waves(),
        });
    }
    None
}

/// What [`scratch_request`] found short: the command processor's scratch request, typed
/// (hsa-core's type; its [`error`](ScratchShort::error) is the error a dispatch gets when
/// nobody grows the queue's scratch).
pub type ScratchShort = hsa_core::queue::inactive::ScratchRequest;

/// What the interpreter executed: counts for speed measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecStats {
    /// Work-groups run to completion.
    pub workgroups: u64,
    /// Waves launched.
    pub waves: u64,
    /// Instructions executed, counted once per wave (wave-instructions).
    pub instructions: u64,
    /// Sum over executed instructions of the active lanes (EXEC bits set when the instruction
    /// issued): lane-instructions, the work-item view of the work done.
    pub lane_instructions: u64,
}

impl ExecStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ExecStats) {
        self.workgroups += other.workgroups;
        self.waves += other.waves;
        self.instructions += other.instructions;
        self.lane_instructions += other.lane_instructions;
    }
}

/// Number of work-groups per dimension: `ceil(grid_size / workgroup_size)` (HSA PSA §2.9.6;
/// partial work-groups counted). A zero work-group size counts as 1 (rejected by
/// [`check_dispatch`]).
pub fn workgroup_counts(dispatch: &DispatchState) -> [u32; 3] {
    core::array::from_fn(|d| {
        dispatch.grid_size[d].div_ceil(u32::from(dispatch.workgroup_size[d].max(1)))
    })
}

/// Total number of work-groups of a dispatch (the product of [`workgroup_counts`]); the flat
/// work-group index of id (x, y, z) is `x + cx * (y + cy * z)`.
pub fn workgroup_total(dispatch: &DispatchState) -> u64 {
    workgroup_counts(dispatch)
        .iter()
        .map(|&c| u64::from(c))
        .product()
}

/// Checks that a dispatch can run: what [`run_dispatch`] checks before any work-group runs.
///
/// # Errors
/// [`Status::InvalidArgument`]: a zero grid or work-group dimension, a work-group of more
/// than 1024 work-items, LDS above [`MAX_LDS_BYTES`], a wave32 descriptor;
/// [`Status::OutOfResources`] ([`ScratchShort::error`]): a private segment the queue's
/// scratch ([`DispatchState::scratch`]) does not hold ([`scratch_request`]).
pub fn check_dispatch(descriptor: &KernelDescriptor, dispatch: &DispatchState) -> Result<()> {
    for d in 0..3 {
        if dispatch.grid_size[d] == 0 || dispatch.workgroup_size[d] == 0 {
            bail!(
                Status::InvalidArgument,
                "grid_size {:?} / workgroup_size {:?}: dimension {d} is 0",
                dispatch.grid_size,
                dispatch.workgroup_size
            );
        }
    }
    let wg_items: u32 = dispatch.workgroup_size.iter().map(|&s| s as u32).product();
    if wg_items > 1024 {
        bail!(
            Status::InvalidArgument,
            "workgroup_size {:?}: {wg_items} > 1024 work-items",
            dispatch.workgroup_size
        );
    }
    if dispatch.group_segment_size > MAX_LDS_BYTES {
        bail!(
            Status::InvalidArgument,
            "group_segment_size {} > {MAX_LDS_BYTES}",
            dispatch.group_segment_size
        );
    }
    if descriptor.wavefront_size32() {
        bail!(
            Status::InvalidArgument,
            "kernel descriptor enables wave32; GFX9 runs wave64"
        );
    }
    if let Some(short) = scratch_request(descriptor, dispatch) {
        return Err(short.error());
    }
    Ok(())
}

/// Runs every work-group of a dispatch to completion, in flat work-group order.
///
/// # Errors
/// - [`Status::InvalidArgument`]: as [`check_dispatch`].
/// - [`Status::IllegalInstruction`]: an instruction that does not decode or that the
///   interpreter does not implement (message: encoding, dword(s), kernel offset), or a PC
///   outside `code`.
/// - [`Status::MemoryFault`]: from `memory`, for an access outside every allocation.
/// - [`Status::Exception`]: a wave exceeded `max_instructions_per_wave`.
pub fn run_dispatch(
    code: &KernelCode<'_>,
    descriptor: &KernelDescriptor,
    target: Gfx9Target,
    dispatch: &DispatchState,
    memory: &dyn DeviceMemory,
) -> Result<()> {
    check_dispatch(descriptor, dispatch)?;
    let mut stats = ExecStats::default();
    run_workgroups(
        code,
        descriptor,
        target,
        dispatch,
        memory,
        0..workgroup_total(dispatch),
        &mut stats,
    )
}

/// Runs the work-groups whose flat indices (see [`workgroup_total`]) are in `groups`, one
/// after another, each to completion; indices past the last work-group are ignored. Several
/// calls over disjoint ranges may run concurrently on different threads (each has its own
/// LDS and waves), which is how a host spreads a dispatch over its cores: work-groups of one
/// dispatch are independent except through global memory, as on hardware. `stats`
/// accumulates what ran, also when an error stops the range.
///
/// Callers run [`check_dispatch`] first (once per dispatch); this function repeats only the
/// checks it needs to stay memory-safe.
///
/// # Errors
/// As [`run_dispatch`]; the first error stops the range.
pub fn run_workgroups(
    code: &KernelCode<'_>,
    descriptor: &KernelDescriptor,
    target: Gfx9Target,
    dispatch: &DispatchState,
    memory: &dyn DeviceMemory,
    groups: core::ops::Range<u64>,
    stats: &mut ExecStats,
) -> Result<()> {
    let never = AtomicBool::new(false);
    run_workgroups_preemptible(
        code.into(),
        descriptor,
        target,
        dispatch,
        memory,
        groups,
        stats,
        &never,
        &mut DecodeCache::new(),
    )
}

/// Instructions a wave runs between two looks at the preemption flag of
/// [`run_workgroups_preemptible`] (a power of two).
pub const PREEMPT_CHECK_INSTRUCTIONS: u64 = 4096;

/// [`run_workgroups`] for a device that can take the queue away while a kernel runs, as
/// amdkfd's DESTROY_QUEUE does on a GPU (the CP unmaps the queue and its waves end, however
/// long they would have run). Every wave looks at `preempt` every
/// [`PREEMPT_CHECK_INSTRUCTIONS`] instructions; once it is set, the range stops with an
/// error saying so. A wave that spins on memory forever (a kernel waiting for a host flag
/// that never comes) thus ends when its queue is destroyed rather than through a hang guard.
///
/// `cache` holds the decoded instructions and the thread's waves: pass the same one to every
/// call of one thread, for this dispatch and later ones (it checks the code bytes it decoded
/// against `code`'s, so other code at an address is decoded again: [`DecodeCache`]), and call
/// [`DecodeCache::begin_dispatch`] on it before each dispatch's first call on the thread (a
/// page is validated once per dispatch: without it, code changed since the last dispatch
/// would not be seen). Device code ([`CodeSource::Device`]) is read through `memory` a page
/// at a time, once per dispatch, as waves reach it.
///
/// # Errors
/// As [`run_workgroups`], and [`Status::Exception`] when `preempt` was seen set (the
/// message starts with `preempted`).
#[allow(clippy::too_many_arguments)]
pub fn run_workgroups_preemptible(
    code: CodeSource<'_>,
    descriptor: &KernelDescriptor,
    target: Gfx9Target,
    dispatch: &DispatchState,
    memory: &dyn DeviceMemory,
    groups: core::ops::Range<u64>,
    stats: &mut ExecStats,
    preempt: &AtomicBool,
    cache: &mut DecodeCache,
) -> Result<()> {
    check_dispatch(descriptor, dispatch)?;
    // The AQL dispatch's user SGPRs: the CP's COMPUTE_USER_DATA from the descriptor, once
    // for the call; from here an AQL and a PM4 dispatch launch their waves alike.
    let resolved;
    let dispatch = if dispatch.user_sgprs == UserSgprs::FromDescriptor {
        resolved = DispatchState {
            user_sgprs: UserSgprs::Registers(aql_user_sgprs(descriptor, dispatch, memory)?),
            ..*dispatch
        };
        &resolved
    } else {
        dispatch
    };
    cache.bind(target);
    // Work-group n runs on CU n mod k of the k enabled ones (hwid module docs).
    let ncus = cache.cus(&dispatch.launch.cu_enable).len();
    if ncus == 0 {
        bail!(
            Status::InvalidArgument,
            "the dispatch's queue has no compute unit enabled (COMPUTE_STATIC_THREAD_MGMT_SE* \
             all 0): no work-group can be launched"
        );
    }
    // The cache's buffers, zeroed as new ones would be (taken back below).
    let mut lds = core::mem::take(&mut cache.lds);
    lds.clear();
    lds.resize(dispatch.group_segment_size as usize, 0);
    let counts = workgroup_counts(dispatch);
    let end = groups.end.min(workgroup_total(dispatch));
    let mut waves = core::mem::take(&mut cache.waves);
    let mut ctx = Ctx {
        code,
        target,
        memory,
        lds: &mut lds,
        scratch: dispatch.scratch,
        instructions: 0,
        lane_instructions: 0,
        preempt,
        cu: CuId::default(),
        gb_addr_config: dispatch.gb_addr_config,
        gws: Gws::new(),
        vgpr_limit: if dispatch.check_vgpr_allocation {
            ((descriptor.compute_pgm_rsrc1 & 0x3f) as usize + 1) * target.vgpr_granule()
        } else {
            usize::MAX
        },
    };
    let (cx, cy) = (u64::from(counts[0]), u64::from(counts[1]));
    let mut result = Ok(());
    for flat in groups.start..end {
        let group = [
            (flat % cx) as u32,
            ((flat / cx) % cy) as u32,
            (flat / (cx * cy)) as u32,
        ];
        ctx.lds.fill(0);
        ctx.cu = cache.cus(&dispatch.launch.cu_enable)[(flat % ncus as u64) as usize];
        stats.waves += waves_in_group(dispatch, group) as u64;
        result = run_group(&mut ctx, cache, descriptor, dispatch, group, &mut waves);
        if result.is_err() {
            break;
        }
        stats.workgroups += 1;
    }
    stats.instructions += ctx.instructions;
    stats.lane_instructions += ctx.lane_instructions;
    // Kept for the next call within bounds (a queue's thread keeps its cache while the queue
    // lives): a few waves, the LDS (64 KiB at most), scratch up to 1 MiB.
    waves.truncate(DECODE_CACHE_KEPT_WAVES);
    cache.waves = waves;
    cache.lds = lds;
    result
}

/// Waves a [`DecodeCache`] keeps from one call to the next (each 64 KiB of VGPRs, and as many
/// AGPRs on gfx90a/gfx942): enough for small dispatches to allocate none.
const DECODE_CACHE_KEPT_WAVES: usize = 4;

/// Waves of work-group `group` (partial groups at the grid's edge have fewer work-items).
fn waves_in_group(dispatch: &DispatchState, group: [u32; 3]) -> usize {
    let items: u32 = (0..3)
        .map(|d| {
            let wg = dispatch.workgroup_size[d] as u32;
            (dispatch.grid_size[d] - group[d] * wg).min(wg)
        })
        .product();
    (items as usize).div_ceil(WAVE_SIZE)
}

pub(crate) struct Ctx<'a, 'c> {
    code: CodeSource<'c>,
    target: Gfx9Target,
    memory: &'a dyn DeviceMemory,
    lds: &'a mut [u8],
    /// The queue's scratch: wave `i` of a work-group has slot `first_slot + i`.
    scratch: QueueScratch,
    instructions: u64,
    lane_instructions: u64,
    /// Set when the device takes the queue away ([`run_workgroups_preemptible`]).
    preempt: &'a AtomicBool,
    /// The CU the running work-group was placed on.
    cu: CuId,
    /// The GPU's `GB_ADDR_CONFIG` ([`DispatchState::gb_addr_config`]).
    gb_addr_config: u32,
    /// The GWS resources of the waves this context runs.
    gws: Gws,
    /// VGPRs a wave has when [`DispatchState::check_vgpr_allocation`] is set, else
    /// `usize::MAX`.
    vgpr_limit: usize,
}

fn run_group(
    ctx: &mut Ctx<'_, '_>,
    cache: &mut DecodeCache,
    kd: &KernelDescriptor,
    dispatch: &DispatchState,
    group: [u32; 3],
    waves: &mut Vec<Wave>,
) -> Result<()> {
    // Actual (possibly partial) work-group size.
    let size: [u32; 3] = core::array::from_fn(|d| {
        let wg = dispatch.workgroup_size[d] as u32;
        (dispatch.grid_size[d] - group[d] * wg).min(wg)
    });
    let items = (size[0] * size[1] * size[2]) as usize;
    let nwaves = items.div_ceil(WAVE_SIZE);
    let agprs = ctx.target.has_agprs();
    // A new wave is already what `reset` makes of a used one (zeroed registers at the entry):
    // zeroing its register files (2 x 64 KiB on gfx90a) twice was most of a one-work-item
    // dispatch's time.
    let reused = waves.len().min(nwaves);
    while waves.len() < nwaves {
        waves.push(Wave::new(ctx.code.entry_address(), agprs));
    }
    for (wi, w) in waves.iter_mut().take(nwaves).enumerate() {
        if wi < reused {
            // Every register a wave of the cache's code wrote is below the bounds of the
            // instructions decoded since the cache was last emptied (they are decoded before
            // they run; emptying the cache drops its waves).
            w.reset_below(ctx.code.entry_address(), cache.vgpr_bound, cache.agpr_bound);
        }
        init_wave(ctx, kd, dispatch, group, size, wi, items, w)?;
    }
    let waves = &mut waves[..nwaves];
    loop {
        let before: u64 = waves.iter().map(|w| w.executed).sum();
        for w in waves.iter_mut() {
            while w.state == WaveState::Running {
                step(ctx, cache, w, dispatch.max_instructions_per_wave)?;
                if w.executed % PREEMPT_CHECK_INSTRUCTIONS == 0
                    && ctx.preempt.load(Ordering::Relaxed)
                {
                    bail!(
                        Status::Exception,
                        "preempted after {} instructions of this wave: the device took its \
                         queue away",
                        w.executed
                    );
                }
            }
        }
        if waves.iter().all(|w| w.state == WaveState::Ended) {
            return Ok(());
        }
        let at_barrier = waves.iter().any(|w| w.state == WaveState::AtBarrier);
        let waiting = waves
            .iter()
            .filter(|w| w.state == WaveState::Waiting)
            .count();
        let after: u64 = waves.iter().map(|w| w.executed).sum();
        if waiting > 0 && !at_barrier && after == before {
            // A round in which every live wave waited in a GWS instruction and none ran one
            // that could let another go.
            bail!(
                Status::Exception,
                "{waiting} wave(s) wait in GWS instructions no wave of the running \
                 work-group can satisfy (the interpreter runs one work-group at a time; a \
                 GWS barrier or semaphore across work-groups never completes here)"
            );
        }
        // Every live wave is at the barrier or waiting: release them.
        for w in waves.iter_mut() {
            if matches!(w.state, WaveState::AtBarrier | WaveState::Waiting) {
                w.state = WaveState::Running;
            }
        }
    }
}

/// The work-item ids `[x, y, z]` of the 64 flat work-item indices from `first` in a
/// work-group of `size` (x fastest): the first by division, each next by counting, so a
/// wave's setup divides once rather than per lane. Indices past the group continue the count
/// (callers stop at the group's items).
fn workitem_ids(first: u32, size: [u32; 3]) -> [[u32; 3]; WAVE_SIZE] {
    let (mut x, mut y, mut z) = (
        first % size[0],
        (first / size[0]) % size[1],
        first / (size[0] * size[1]),
    );
    core::array::from_fn(|lane| {
        if lane > 0 {
            x += 1;
            if x == size[0] {
                x = 0;
                y += 1;
                if y == size[1] {
                    y = 0;
                    z += 1;
                }
            }
        }
        [x, y, z]
    })
}

/// The user SGPRs of an AQL dispatch, as the CP fills `COMPUTE_USER_DATA_0..15` from the
/// kernel descriptor's `kernel_code_properties` (AMDGPUUsage "Initial Kernel Execution
/// State", in its order): the private segment buffer (the queue's V#, 4), dispatch ptr (2),
/// queue ptr (2), kernarg segment ptr (2), dispatch id (2), flat scratch init (the scratch
/// backing memory, 2), private segment size (1), then the preloaded kernargs up to
/// `USER_SGPR_COUNT` (at most 16). Registers past what is enabled are 0; the enables reach
/// 15 at most.
///
/// # Errors
/// [`Status::MemoryFault`] (context `kernarg preload`) for preloaded kernargs the memory
/// does not hold.
pub fn aql_user_sgprs(
    kd: &KernelDescriptor,
    dispatch: &DispatchState,
    memory: &dyn DeviceMemory,
) -> Result<[u32; 16]> {
    let mut v = [0u32; 16];
    let mut s = 0usize;
    let put64 = |v: &mut [u32; 16], s: &mut usize, x: u64| {
        v[*s] = x as u32;
        v[*s + 1] = (x >> 32) as u32;
        *s += 2;
    };
    if kd.enable_sgpr_private_segment_buffer() {
        // The queue's V# (amd_queue_t.scratch_resource_descriptor) as the CP loads it; the
        // kernel adds the wave offset (its soffset), as on silicon.
        v[..4].copy_from_slice(&dispatch.scratch.resource_descriptor);
        s += 4;
    }
    if kd.enable_sgpr_dispatch_ptr() {
        put64(&mut v, &mut s, dispatch.dispatch_packet_address);
    }
    if kd.enable_sgpr_queue_ptr() {
        put64(&mut v, &mut s, dispatch.queue_address);
    }
    if kd.enable_sgpr_kernarg_segment_ptr() {
        put64(&mut v, &mut s, dispatch.kernarg_address);
    }
    if kd.enable_sgpr_dispatch_id() {
        put64(&mut v, &mut s, dispatch.dispatch_id);
    }
    if kd.enable_sgpr_flat_scratch_init() {
        // amd_queue_t.scratch_backing_memory_location (AMDGPUUsage "Flat Scratch", GFX9):
        // the kernel's prologue adds its wave offset into FLAT_SCRATCH.
        put64(&mut v, &mut s, dispatch.scratch.backing_memory_location);
    }
    if kd.enable_sgpr_private_segment_size() {
        v[s] = dispatch.private_segment_size;
        s += 1;
    }
    let user = (kd.rsrc2().user_sgpr_count() as usize).min(16);
    let preload = kd.kernarg_preload_length_dwords() as usize;
    if preload > 0 {
        let off = kd.kernarg_preload_offset_dwords() as u64 * 4;
        let n = preload.min(user.saturating_sub(s));
        let mut buf = [0u8; 4];
        for i in 0..n {
            memory
                .read(dispatch.kernarg_address + off + i as u64 * 4, &mut buf)
                .map_err(|e| e.context("kernarg preload"))?;
            v[s + i] = u32::from_le_bytes(buf);
        }
    }
    Ok(v)
}

#[allow(clippy::too_many_arguments)]
fn init_wave(
    ctx: &Ctx<'_, '_>,
    kd: &KernelDescriptor,
    dispatch: &DispatchState,
    group: [u32; 3],
    size: [u32; 3],
    wave_index: usize,
    items: usize,
    w: &mut Wave,
) -> Result<()> {
    // MODE from COMPUTE_PGM_RSRC1 (AMDGPUUsage "compute_pgm_rsrc1"): FLOAT_ROUND_MODE_32/16_64
    // [15:12] and FLOAT_DENORM_MODE_32/16_64 [19:16] are MODE [7:0], ENABLE_DX10_CLAMP [21]
    // MODE.DX10_CLAMP [8], ENABLE_IEEE_MODE [23] MODE.IEEE [9].
    let rsrc1 = kd.compute_pgm_rsrc1;
    w.mode = (rsrc1 >> 12 & 0xFF) | (rsrc1 >> 21 & 1) << 8 | (rsrc1 >> 23 & 1) << 9;
    w.hw_id = hw_id(ctx.target, ctx.cu, wave_index, &dispatch.launch);
    w.sramecc = dispatch.sramecc;
    w.apertures = dispatch.apertures;
    // The wave's slot in the queue's scratch: the SPI gives each live wave one of
    // COMPUTE_TMPRING_SIZE.WAVES slots of WAVESIZE KiB; the private segment wave offset is
    // the slot's byte offset in the backing memory (AMDGPUUsage "Private Segment Buffer").
    let wave_offset =
        (u64::from(ctx.scratch.first_slot) + wave_index as u64) * ctx.scratch.wave_bytes();
    let rsrc2 = kd.rsrc2();
    let user = rsrc2.user_sgpr_count() as usize;
    let UserSgprs::Registers(data) = dispatch.user_sgprs else {
        bail!(
            Status::InvalidArgument,
            "the dispatch's user SGPRs were not resolved ({})",
            "run_workgroups_preemptible resolves them"
        );
    };
    if user > data.len() {
        bail!(
            Status::InvalidArgument,
            "COMPUTE_PGM_RSRC2.USER_SGPR {user} > 16: the SPI loads at most the 16 \
             COMPUTE_USER_DATA registers"
        );
    }
    // COMPUTE_USER_DATA_0..: as many as USER_SGPR says.
    w.sreg[..user].copy_from_slice(&data[..user]);
    let mut s = user;
    for (d, on) in [
        rsrc2.enable_sgpr_workgroup_id_x(),
        rsrc2.enable_sgpr_workgroup_id_y(),
        rsrc2.enable_sgpr_workgroup_id_z(),
    ]
    .into_iter()
    .enumerate()
    {
        if on {
            w.sreg[s] = group[d];
            s += 1;
        }
    }
    if rsrc2.enable_sgpr_workgroup_info() {
        w.sreg[s] = 0;
        s += 1;
    }
    if ctx.target.architected_flat_scratch() {
        // gfx940+: the hardware sets FLAT_SCRATCH to the wave's own scratch and there is no
        // wave offset SGPR (AMDGPUUsage "Flat Scratch", architected flat scratch).
        w.set_sreg64(
            FLAT_SCRATCH,
            ctx.scratch
                .backing_memory_location
                .wrapping_add(wave_offset),
        );
    } else if rsrc2.enable_private_segment() {
        w.sreg[s] = wave_offset as u32; // Private segment wave byte offset.
    }
    let ids = rsrc2.enable_vgpr_workitem_id();
    let mut exec = 0u64;
    let ids_of = workitem_ids((wave_index * WAVE_SIZE) as u32, size);
    for (lane, [x, y, z]) in ids_of.into_iter().enumerate() {
        let flat = wave_index * WAVE_SIZE + lane;
        if flat >= items {
            break;
        }
        exec |= 1 << lane;
        if ctx.target.packed_workitem_ids() {
            let mut v = x;
            if ids >= 1 {
                v |= y << 10;
            }
            if ids >= 2 {
                v |= z << 20;
            }
            w.set_v(0, lane, v);
        } else {
            w.set_v(0, lane, x);
            if ids >= 1 {
                w.set_v(1, lane, y);
            }
            if ids >= 2 {
                w.set_v(2, lane, z);
            }
        }
    }
    w.set_exec(exec);
    w.sreg[M0] = 0xFFFF_FFFF;
    Ok(())
}

pub(crate) enum Flow {
    Next,
    Jump(u64),
    Barrier,
    End,
    /// The wave waits in this instruction (GWS) and runs it again later.
    Wait,
}

/// [`DispatchState::check_vgpr_allocation`]: `inst`'s VGPR operands within the wave's
/// allocation.
fn check_vgprs(ctx: &Ctx<'_, '_>, w: &Wave, inst: &Instruction) -> Result<()> {
    for op in [
        &inst.dst,
        &inst.sdst,
        &inst.src[0],
        &inst.src[1],
        &inst.src[2],
    ] {
        if let Operand::Vgpr { index, count } = *op {
            let end = index as usize + count.max(1) as usize;
            if end > ctx.vgpr_limit {
                let kernel_off = w.pc.wrapping_sub(ctx.code.entry_address());
                bail!(
                    Status::IllegalInstruction,
                    "{} at kernel offset {kernel_off:#x} names v{} but the wave has {} VGPRs \
                     (COMPUTE_PGM_RSRC1.VGPRS {}): the SPI gave it no more",
                    inst.name(),
                    end - 1,
                    ctx.vgpr_limit,
                    ctx.vgpr_limit / ctx.target.vgpr_granule() - 1
                );
            }
        }
    }
    Ok(())
}

fn step(ctx: &mut Ctx<'_, '_>, cache: &mut DecodeCache, w: &mut Wave, limit: u64) -> Result<()> {
    let (inst, fast) = cache.get(&ctx.code, ctx.memory, ctx.target, w.pc)?;
    if ctx.vgpr_limit != usize::MAX {
        check_vgprs(ctx, w, inst)?;
    }
    w.executed += 1;
    ctx.instructions += 1;
    ctx.lane_instructions += u64::from(w.exec().count_ones());
    if w.executed > limit {
        let kernel_off = w.pc.wrapping_sub(ctx.code.entry_address());
        bail!(
            Status::Exception,
            "wave exceeded {limit} instructions (at kernel offset {kernel_off:#x})"
        );
    }
    let next = w.pc + inst.size as u64;
    if w.mode & MODE_VSKIP != 0
        && !matches!(
            inst.encoding,
            Encoding::Sop1
                | Encoding::Sop2
                | Encoding::Sopc
                | Encoding::Sopk
                | Encoding::Sopp
                | Encoding::Smem
        )
    {
        // MODE.VSKIP (s_setvskip): vector instructions are not issued.
        w.pc = next;
        return Ok(());
    }
    let indexed;
    let gpr_idx = w.mode & MODE_GPR_IDX_EN != 0
        && matches!(
            inst.encoding,
            Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 | Encoding::Vop3p
        );
    let inst = if gpr_idx {
        // GPR index mode: the VALU instruction runs with its operands moved, never through
        // the fast path (whose operands are fixed at decode).
        indexed = gpr_indexed(w, inst).map_err(|e| {
            let kernel_off = w.pc.wrapping_sub(ctx.code.entry_address());
            error!(
                e.status(),
                "{} at kernel offset {kernel_off:#x}: {}",
                inst.name(),
                e.detail()
            )
        })?;
        &indexed
    } else {
        inst
    };
    let r = if gpr_idx {
        Ok(Done::Slow)
    } else {
        super::fast::run(w, fast, ctx.memory, ctx.lds)
    }
    .map_err(|e| {
        let kernel_off = w.pc.wrapping_sub(ctx.code.entry_address());
        error!(
            e.status(),
            "{} at kernel offset {kernel_off:#x}: {}",
            inst.name(),
            e.detail()
        )
    })?;
    match r {
        Done::Next => {
            w.pc = next;
            return Ok(());
        }
        Done::Jump(t) => {
            w.pc = t;
            return Ok(());
        }
        Done::End => {
            w.state = WaveState::Ended;
            return Ok(());
        }
        Done::Barrier => {
            w.pc = next;
            w.state = WaveState::AtBarrier;
            return Ok(());
        }
        Done::Slow => {}
    }
    let flow = execute(ctx, w, inst, next).map_err(|e| {
        let kernel_off = w.pc.wrapping_sub(ctx.code.entry_address());
        error!(
            e.status(),
            "{} at kernel offset {kernel_off:#x}: {}",
            inst.name(),
            e.detail()
        )
    })?;
    match flow {
        Flow::Next => w.pc = next,
        Flow::Jump(t) => w.pc = t,
        Flow::Barrier => {
            w.pc = next;
            w.state = WaveState::AtBarrier;
        }
        Flow::End => w.state = WaveState::Ended,
        Flow::Wait => {
            w.state = WaveState::Waiting;
            w.executed -= 1;
            ctx.instructions -= 1;
            ctx.lane_instructions -= u64::from(w.exec().count_ones());
        }
    }
    Ok(())
}

fn not_implemented(inst: &Instruction) -> hsa_core::Error {
    error!(
        Status::IllegalInstruction,
        "{} ({}) not implemented by the interpreter",
        inst.name(),
        inst.encoding.name()
    )
}

mod image;

mod cache;
mod ds;
mod memory;
mod scalar;
mod scaled;
mod smem;
mod valu;
mod vop3p;
pub use cache::{DecodeCache, DECODE_CACHE_MAX_PAGES};

pub(crate) use ds::*;
use image::image;
pub(crate) use memory::*;
pub(crate) use scalar::*;
pub(crate) use scaled::*;
pub(crate) use smem::*;
pub(crate) use valu::*;
pub(crate) use vop3p::*;

pub(super) const F32_CONST: [u32; 9] = [
    0x3F00_0000,
    0xBF00_0000,
    0x3F80_0000,
    0xBF80_0000,
    0x4000_0000,
    0xC000_0000,
    0x4080_0000,
    0xC080_0000,
    0x3E22_F983,
];
pub(super) const F64_CONST: [u64; 9] = [
    0x3FE0_0000_0000_0000,
    0xBFE0_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    0x4000_0000_0000_0000,
    0xC000_0000_0000_0000,
    0x4010_0000_0000_0000,
    0xC010_0000_0000_0000,
    0x3FC4_5F30_6DC9_C882,
];

/// Reads a non-VGPR operand (scalar register, constant, literal, special), `wide` = 64-bit.
pub(super) fn scalar(w: &Wave, op: &Operand, wide: bool, f64_op: bool) -> u64 {
    match *op {
        Operand::Sreg { index, .. } => {
            let i = index as usize;
            if wide {
                w.sreg64(i)
            } else {
                w.sreg[i] as u64
            }
        }
        Operand::InlineInt(v) => {
            if wide {
                v as i64 as u64
            } else {
                v as i32 as u32 as u64
            }
        }
        // A 64-bit operand's float constant is the double, whatever the operation's type:
        // `s_mov_b64 s[0:1], 1.0` writes 0x3FF0000000000000 (LLVM encodes that value, as an
        // i64 operand too, with code 242; 0x3F800000 needs a literal).
        Operand::InlineFloat(c) => {
            let k = (c - 240) as usize;
            if wide {
                F64_CONST[k]
            } else {
                F32_CONST[k] as u64
            }
        }
        Operand::Literal(v) => {
            if wide && f64_op {
                (v as u64) << 32
            } else {
                v as u64
            }
        }
        Operand::Special(251) => (w.vcc() == 0) as u64,
        Operand::Special(252) => (w.exec() == 0) as u64,
        Operand::Special(253) => w.scc as u64,
        // src_shared_base/limit and src_private_base/limit, from the process's apertures: as
        // a 32-bit operand the high 32 bits, as a 64-bit one the whole address (LLVM 17+
        // reads `s_mov_b64 s[n:n+1], src_private_base` and uses s[n+1] as a flat pointer's
        // high half); a limit is its base + 4 GiB - 1, so its high 32 bits are the base's.
        Operand::Special(235) if wide => w.apertures.shared_base(),
        Operand::Special(236) if wide => w.apertures.shared_limit(),
        Operand::Special(237) if wide => w.apertures.private_base(),
        Operand::Special(238) if wide => w.apertures.private_limit(),
        Operand::Special(235 | 236) => w.apertures.shared_base() >> 32,
        Operand::Special(237 | 238) => w.apertures.private_base() >> 32,
        _ => 0,
    }
}

fn vsrc(w: &Wave, op: &Operand, lane: usize, wide: bool, f64_op: bool) -> u64 {
    match *op {
        Operand::Vgpr { index, .. } => {
            let r = index as usize;
            let lo = w.v(r, lane) as u64;
            if wide {
                lo | (w.v(r + 1, lane) as u64) << 32
            } else {
                lo
            }
        }
        Operand::Agpr { index, .. } => {
            let r = index as usize * WAVE_SIZE + lane;
            let lo = w.agpr.get(r).copied().unwrap_or(0) as u64;
            if wide {
                lo | (w.agpr.get(r + WAVE_SIZE).copied().unwrap_or(0) as u64) << 32
            } else {
                lo
            }
        }
        _ => scalar(w, op, wide, f64_op),
    }
}

fn set_sdst(w: &mut Wave, op: &Operand, v: u64) {
    if let Operand::Sreg { index, count } = *op {
        let i = index as usize;
        if count >= 2 {
            w.set_sreg64(i, v);
        } else {
            w.sreg[i] = v as u32;
        }
    }
}

fn set_vdst(w: &mut Wave, op: &Operand, lane: usize, v: u64, count: u8) {
    match *op {
        Operand::Vgpr { index, .. } => {
            let r = index as usize;
            w.set_v(r, lane, v as u32);
            for k in 1..count as usize {
                w.set_v(r + k, lane, (v >> (32 * k)) as u32);
            }
        }
        Operand::Agpr { index, .. } => {
            for k in 0..count.max(1) as usize {
                let i = (index as usize + k) * WAVE_SIZE + lane;
                if let Some(r) = w.agpr.get_mut(i) {
                    *r = (v >> (32 * k)) as u32;
                }
            }
        }
        _ => {}
    }
}

fn execute(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction, next: u64) -> Result<Flow> {
    let class = inst.op().attrs().class;
    if matches!(
        inst.encoding,
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 | Encoding::Vop3p
    ) && mode::fp_round(w.mode) != 0
        && mode::round_unsupported(w.mode, inst)
    {
        return Err(mode::round_error(w.mode, inst));
    }
    match class {
        Class::SetGprIdx => set_gpr_idx(w, inst),
        Class::Salu => return salu(w, inst, next),
        Class::Sopp => return sopp(ctx, w, inst, next),
        // The emulator has no scalar cache: its write-back and invalidation have nothing to do
        // (scalar stores write memory at once, loads read it).
        Class::SmemCache => {}
        Class::SmemClock => clock_counter(ctx, w, inst),
        Class::SmemScratch => scalar_scratch(ctx, w, inst)?,
        Class::SmemBuffer | Class::SmemAddr => scalar_memory(ctx, w, inst)?,
        Class::SmemLoad => scalar_load(ctx, w, inst)?,
        Class::Accvgpr => super::mai::accvgpr(w, inst),
        Class::Mfma => super::mai::mfma(w, inst)?,
        Class::Valu => match inst.mods.dpp {
            Some(d) => valu_dpp(w, inst, d)?,
            None => valu::<false>(w, inst, w.exec(), &NO_DPP_SRC0)?,
        },
        Class::Dot | Class::Mix | Class::Packed => vop3p(w, inst)?,
        Class::DsLane => ds_lanes(w, inst)?,
        Class::DsGws => return ds_gws(&mut ctx.gws, w, inst),
        Class::Ds | Class::DsSrc2 => ds(ctx, w, inst)?,
        Class::Flat | Class::Global | Class::Scratch => flat(ctx, w, inst)?,
        Class::Buffer | Class::BufferCache => mubuf(ctx, w, inst)?,
        Class::Image => image(ctx, w, inst)?,
        Class::NotRun => return Err(not_implemented(inst)),
    }
    Ok(Flow::Next)
}

// --- f32 helpers (core has no floor/trunc in no_std) ---

/// Sets dword `k` of a VGPR/AGPR destination range for `lane`.
pub(super) fn set_vdst_dword(w: &mut Wave, op: &Operand, lane: usize, k: usize, v: u32) {
    match *op {
        Operand::Vgpr { index, .. } => w.set_v(index as usize + k, lane, v),
        Operand::Agpr { index, .. } => {
            if let Some(r) = w.agpr.get_mut((index as usize + k) * WAVE_SIZE + lane) {
                *r = v;
            }
        }
        _ => {}
    }
}

/// Dword `k` of a VGPR/AGPR source range for `lane`.
pub(super) fn vsrc_dword(w: &Wave, op: &Operand, lane: usize, k: usize) -> u32 {
    match *op {
        Operand::Vgpr { index, .. } => w.v(index as usize + k, lane),
        Operand::Agpr { index, .. } => w
            .agpr
            .get((index as usize + k) * WAVE_SIZE + lane)
            .copied()
            .unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
pub(super) mod tests;
