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
//! Scratch (private segment): each work-group that runs gets its own backing at
//! [`SCRATCH_BACKING_BASE`], 64 lanes × the private size per wave, swizzled per dword as
//! the hardware's scratch is; the launch state points at it as AMDGPUUsage describes
//! (private segment buffer V#, flat scratch init and the wave's offset on gfx900/gfx90a;
//! FLAT_SCRATCH itself on gfx942's architected flat scratch). FLAT addresses in the shared
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
use super::hwid::{enabled_cus, hw_id, CuId, WaveLaunch};
use super::mode;
use super::round;
use super::wave::{Wave, WaveState, FLAT_SCRATCH, M0, WAVE_SIZE};
use super::Gfx9Target;
use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::{bail, error, Result, Status};

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
            "s_sendmsg sendmsg(MSG_INTERRUPT) (M0 data {data:#x}): this device has no \
             interrupt handler"
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
/// [`DeviceMemory`] of the call, one code page (4 KiB and the 4 bytes past it) at a time, the
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
    /// Private memory per work-item, bytes, from the packet (`private_segment_size`); the
    /// interpreter backs the larger of this and the descriptor's fixed size.
    pub private_segment_size: u32,
    /// Instructions one wave may execute before the dispatch is aborted (a hang guard).
    pub max_instructions_per_wave: u64,
    /// The CUs the queue may use and the queue's ids: where work-groups run and what
    /// `HW_REG_HW_ID` reads ([`super::hwid`]).
    pub launch: WaveLaunch,
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
            max_instructions_per_wave: 10_000_000,
            launch: WaveLaunch::SINGLE_CU,
        }
    }
}

/// Maximum LDS per work-group, bytes (64 KiB on GFX9).
pub const MAX_LDS_BYTES: u32 = 64 * 1024;

/// Base of the shared (LDS) aperture: a FLAT address `SHARED_APERTURE_BASE + o` (o < 4 GiB)
/// is byte `o` of the work-group's LDS. The gfx9 value amdkfd gives (`kfd_flat_memory.c`
/// MAKE_LDS_APP_BASE_V9), which the emulated device reports too; `src_shared_base` reads its
/// high 32 bits.
pub const SHARED_APERTURE_BASE: u64 = 0x1_0000_0000_0000;

/// Base of the private (scratch) aperture: a FLAT address `PRIVATE_APERTURE_BASE + o`
/// (o < 4 GiB) is byte `o` of the lane's private segment (amdkfd's SCRATCH_V9 base);
/// `src_private_base` reads its high 32 bits.
pub const PRIVATE_APERTURE_BASE: u64 = 0x2_0000_0000_0000;

/// Device address of the scratch backing memory the interpreter gives each dispatch: the
/// base of the private segment buffer descriptor, the flat scratch init value and (gfx942)
/// each wave's FLAT_SCRATCH are in `SCRATCH_BACKING_BASE..+waves * 64 * private bytes`.
/// Accesses there go to the running work-group's own backing (work-groups on other host
/// threads have theirs), never to device memory. Above every GPUVM address (amdkfd's gfx9
/// GPUVM limit is 2^47), below both apertures, and within the 48 bits a buffer resource's
/// base holds; the window is 2^40 bytes.
pub const SCRATCH_BACKING_BASE: u64 = 0xF000_0000_0000;

/// Largest private segment per work-item the interpreter backs, bytes: gfx9's per-wave
/// scratch limit (COMPUTE_TMPRING_SIZE.WAVESIZE, 13 bits of 1 KiB: 8 MiB per wave) over 64
/// lanes. A work-group of 1024 work-items then takes at most 128 MiB of host memory.
pub const MAX_PRIVATE_SEGMENT_BYTES: u32 = 128 * 1024;

/// Private bytes per work-item a dispatch gets: the larger of the descriptor's fixed size and
/// the packet's `private_segment_size` (which covers dynamic stacks), rounded up to a dword.
fn private_bytes(descriptor: &KernelDescriptor, dispatch: &DispatchState) -> u32 {
    descriptor
        .private_segment_fixed_size
        .max(dispatch.private_segment_size)
        .next_multiple_of(4)
}

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
/// than 1024 work-items, LDS above [`MAX_LDS_BYTES`], a wave32 descriptor, or a private
/// segment above [`MAX_PRIVATE_SEGMENT_BYTES`] per work-item.
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
    if private_bytes(descriptor, dispatch) > MAX_PRIVATE_SEGMENT_BYTES {
        bail!(
            Status::InvalidArgument,
            "private segment: descriptor private_segment_fixed_size {} / packet \
             private_segment_size {} > {MAX_PRIVATE_SEGMENT_BYTES} bytes per work-item",
            descriptor.private_segment_fixed_size,
            dispatch.private_segment_size
        );
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
    // Scratch: 64 lanes' private segments per wave, for the most waves a group has.
    let scratch_per_wave = u64::from(private_bytes(descriptor, dispatch)) * WAVE_SIZE as u64;
    let wg_items: usize = dispatch
        .workgroup_size
        .iter()
        .map(|&d| d as usize)
        .product();
    let mut scratch = core::mem::take(&mut cache.scratch);
    scratch.clear();
    scratch.resize(scratch_per_wave as usize * wg_items.div_ceil(WAVE_SIZE), 0);
    let mut ctx = Ctx {
        code,
        target,
        memory,
        lds: &mut lds,
        scratch: &mut scratch,
        scratch_per_wave,
        instructions: 0,
        lane_instructions: 0,
        preempt,
        cu: CuId::default(),
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
    if scratch.capacity() <= DECODE_CACHE_KEPT_SCRATCH_BYTES {
        cache.scratch = scratch;
    }
    result
}

/// Waves a [`DecodeCache`] keeps from one call to the next (each 64 KiB of VGPRs, and as many
/// AGPRs on gfx90a/gfx942): enough for small dispatches to allocate none.
const DECODE_CACHE_KEPT_WAVES: usize = 4;

/// Most scratch backing, bytes, a [`DecodeCache`] keeps from one call to the next.
const DECODE_CACHE_KEPT_SCRATCH_BYTES: usize = 1 << 20;

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

struct Ctx<'a, 'c> {
    code: CodeSource<'c>,
    target: Gfx9Target,
    memory: &'a dyn DeviceMemory,
    lds: &'a mut [u8],
    /// The running work-group's scratch backing, at [`SCRATCH_BACKING_BASE`]: one swizzled
    /// region of `scratch_per_wave` bytes per wave.
    scratch: &'a mut [u8],
    scratch_per_wave: u64,
    instructions: u64,
    lane_instructions: u64,
    /// Set when the device takes the queue away ([`run_workgroups_preemptible`]).
    preempt: &'a AtomicBool,
    /// The CU the running work-group was placed on.
    cu: CuId,
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
        // Every live wave is at the barrier: release them.
        for w in waves.iter_mut() {
            if w.state == WaveState::AtBarrier {
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
    let mut s = 0usize;
    let put64 = |w: &mut Wave, s: &mut usize, v: u64| {
        w.set_sreg64(*s, v);
        *s += 2;
    };
    let scratch_len = ctx.scratch.len() as u64;
    let wave_offset = wave_index as u64 * ctx.scratch_per_wave;
    if kd.enable_sgpr_private_segment_buffer() {
        // The private segment buffer V# as ROCR sets it up: the backing's base, stride 0,
        // swizzled with 4-byte elements over 64 lanes (ADD_TID), NUM_RECORDS its size
        // (Vega ISA §8.1.8 "Buffer resource"; the wave adds its byte offset to the base).
        let words = [
            SCRATCH_BACKING_BASE as u32,
            (SCRATCH_BACKING_BASE >> 32) as u32 & 0xFFFF | 1 << 31,
            scratch_len.min(u64::from(u32::MAX)) as u32,
            // DST_SEL xyzw, NUM_FORMAT float, DATA_FORMAT 32, ELEMENT_SIZE 4 bytes (1),
            // INDEX_STRIDE 64 (3), ADD_TID_ENABLE.
            0xFAC | 7 << 12 | 4 << 15 | 1 << 19 | 3 << 21 | 1 << 23,
        ];
        for (k, v) in words.into_iter().enumerate() {
            w.sreg[s + k] = v;
        }
        s += 4;
    }
    if kd.enable_sgpr_dispatch_ptr() {
        put64(w, &mut s, dispatch.dispatch_packet_address);
    }
    if kd.enable_sgpr_queue_ptr() {
        put64(w, &mut s, dispatch.queue_address);
    }
    if kd.enable_sgpr_kernarg_segment_ptr() {
        put64(w, &mut s, dispatch.kernarg_address);
    }
    if kd.enable_sgpr_dispatch_id() {
        put64(w, &mut s, dispatch.dispatch_id);
    }
    if kd.enable_sgpr_flat_scratch_init() {
        // The queue's scratch base; the kernel adds its wave offset into FLAT_SCRATCH.
        put64(w, &mut s, SCRATCH_BACKING_BASE);
    }
    if kd.enable_sgpr_private_segment_size() {
        w.sreg[s] = dispatch.private_segment_size;
        s += 1;
    }
    let rsrc2 = kd.rsrc2();
    let user = rsrc2.user_sgpr_count() as usize;
    let preload = kd.kernarg_preload_length_dwords() as usize;
    if preload > 0 {
        let off = kd.kernarg_preload_offset_dwords() as u64 * 4;
        let n = preload.min(user.saturating_sub(s));
        let mut buf = [0u8; 4];
        for i in 0..n {
            ctx.memory
                .read(dispatch.kernarg_address + off + i as u64 * 4, &mut buf)
                .map_err(|e| e.context("kernarg preload"))?;
            w.sreg[s + i] = u32::from_le_bytes(buf);
        }
    }
    let mut s = user;
    if s > 102 {
        bail!(Status::InvalidArgument, "user_sgpr_count {user} > 102");
    }
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
        w.set_sreg64(FLAT_SCRATCH, SCRATCH_BACKING_BASE + wave_offset);
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

enum Flow {
    Next,
    Jump(u64),
    Barrier,
    End,
}

/// Code bytes per page of a [`DecodeCache`] (a power of two).
const CACHE_PAGE_BYTES: u64 = 4096;

/// Code bytes past a page's end that an instruction starting in it may cover: the longest
/// gfx9 encoding is 8 bytes (a 32-bit encoding with a literal, or a 64-bit one), so one
/// starting at the page's last dword ends 4 bytes into the next page.
const CACHE_PAGE_TAIL_BYTES: u64 = 4;

/// Most code pages a [`DecodeCache`] keeps (256 KiB of code); past it, the page validated
/// longest ago is dropped. A page costs its raw bytes (4 KiB), its slot index (4 KiB) and
/// the instructions decoded in it.
pub const DECODE_CACHE_MAX_PAGES: usize = 64;

/// One code page of a [`DecodeCache`].
#[derive(Debug)]
struct CachePage {
    /// Page number (device address / [`CACHE_PAGE_BYTES`]).
    number: u64,
    /// Device address of `raw[0]`.
    raw_start: u64,
    /// The code bytes the page's instructions were decoded from: the page and
    /// [`CACHE_PAGE_TAIL_BYTES`] past it, clipped to the code they came from.
    raw: Vec<u8>,
    /// One slot per dword: 0 = not decoded, else index + 1 into `insts`.
    slots: Vec<u32>,
    /// Each decoded instruction with its fast-path form.
    insts: Vec<(Instruction, Fast)>,
    /// The [`DecodeCache::generation`] the page was last validated in.
    checked: u64,
}

impl CachePage {
    /// The device addresses of the code bytes page `number` covers (its raw window: the page
    /// and [`CACHE_PAGE_TAIL_BYTES`] past it, clipped to `code`); empty when the page holds
    /// none of the code.
    fn window(number: u64, code: &CodeSource<'_>) -> (u64, u64) {
        let start = number * CACHE_PAGE_BYTES;
        let lo = start.max(code.base_address());
        let hi = start
            .saturating_add(CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES)
            .min(code.end_address());
        (lo, hi.max(lo))
    }
}

/// The decoded instructions of the code a thread runs, kept across dispatches: each
/// instruction is decoded the first time a wave reaches it and served from here afterwards,
/// by every later dispatch of the same kernel (issue 19: "decode each kernel once").
///
/// Never stale: entries are keyed by device address, but every page (4 KiB of code) keeps
/// the raw bytes its instructions were decoded from, and the first time a page is used in a
/// dispatch (after [`DecodeCache::begin_dispatch`]) it is compared with the code bytes of
/// that dispatch's code source: for [`DeviceCode`], the page is read from device memory then,
/// once per dispatch, and only the pages waves reach are read, never the whole image. When
/// they differ — a loader put other code at that address, a program rewrote its code — the
/// page's instructions are dropped and decoded again from the new bytes. This is validation
/// by content, so it holds for any runtime, also one that never invalidates an instruction
/// cache (no PM4 ACQUIRE_MEM, no free/unmap notification is needed). Within one dispatch the
/// code is immutable, as a GPU's instruction cache assumes while a dispatch runs. A page's window includes the 4 bytes
/// past it (the rest of an 8-byte instruction starting on its last dword) and where the code
/// ends, so an instruction crossing into the next page or ending at the code's end is
/// revalidated with everything it was decoded from.
///
/// Bounded: at most [`DECODE_CACHE_MAX_PAGES`] pages; another page evicts the one validated
/// longest ago. Another [`Gfx9Target`] empties the cache.
///
/// It also keeps the thread's first few waves (their register files, 64 KiB of VGPRs each,
/// and as many AGPRs on gfx90a/gfx942), LDS and scratch buffers (up to 1 MiB) from one call
/// to the next, so a small dispatch allocates nothing: a reused wave's registers are zeroed
/// below the highest register any instruction decoded since the cache was last emptied
/// names (no wave running code of this cache writes above it), so every dispatch still
/// starts from zeroed registers, as a new wave would.
///
/// Make one per host thread that runs work-groups and pass it to every call on that thread
/// (the emulated device keeps one per queue and worker thread).
#[derive(Debug, Default)]
pub struct DecodeCache {
    /// The target the entries were decoded for.
    target: Option<Gfx9Target>,
    /// Counts [`DecodeCache::begin_dispatch`] calls: a page is validated once per generation.
    generation: u64,
    pages: Vec<CachePage>,
    /// Index into `pages` of the page last looked up.
    last: usize,
    /// The instruction at the last unaligned pc (not cached).
    unaligned: Option<(Instruction, Fast)>,
    /// One past the highest VGPR / AGPR any instruction decoded since the cache was emptied
    /// names (at least the three work-item id VGPRs): no wave running this code writes a
    /// register at or above it.
    vgpr_bound: usize,
    agpr_bound: usize,
    /// Instructions decoded over the cache's life.
    decoded: u64,
    /// Pages whose bytes had changed when they were validated, over the cache's life.
    invalidated: u64,
    /// Code bytes read from device memory ([`CodeSource::Device`]), over the cache's life.
    code_bytes_read: u64,
    /// The waves, LDS and scratch of the last call, reused by the next.
    waves: Vec<Wave>,
    lds: Vec<u8>,
    scratch: Vec<u8>,
    /// The CUs of the last CU enable masks seen (`enabled_cus` of them).
    cus: Option<([u32; super::hwid::MAX_SHADER_ENGINES], Vec<CuId>)>,
}

impl DecodeCache {
    /// An empty cache.
    pub fn new() -> DecodeCache {
        DecodeCache::default()
    }

    /// Instructions held decoded now.
    pub fn len(&self) -> usize {
        self.pages.iter().map(|p| p.insts.len()).sum()
    }

    /// Whether no instruction is held decoded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Instructions decoded over the cache's life (each decode of an instruction counts,
    /// also one of an instruction decoded again because its bytes changed).
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Pages found changed (their instructions dropped) over the cache's life.
    pub fn invalidated_pages(&self) -> u64 {
        self.invalidated
    }

    /// Code bytes read from device memory ([`CodeSource::Device`]) over the cache's life:
    /// each page a call's waves reach, once per call (4 KiB and the 4 bytes past it, clipped
    /// to the code). Host bytes ([`CodeSource::Host`]) are compared in place and not counted.
    pub fn code_bytes_read(&self) -> u64 {
        self.code_bytes_read
    }

    /// Code pages held now (at most [`DECODE_CACHE_MAX_PAGES`]).
    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// Starts a dispatch: every page is validated again on its first use after this (device
    /// code read again), once, however many [`run_workgroups_preemptible`] calls run the
    /// dispatch's work-groups with this cache. Call it before a dispatch's first call on the
    /// thread: the code may have changed since the last dispatch.
    pub fn begin_dispatch(&mut self) {
        self.generation += 1;
    }

    /// Starts a call that runs `target` code: empties the cache when its entries are for
    /// another target.
    fn bind(&mut self, target: Gfx9Target) {
        if self.target != Some(target) {
            self.target = Some(target);
            self.pages.clear();
            self.waves.clear();
            self.last = 0;
            self.unaligned = None;
            self.vgpr_bound = 3;
            self.agpr_bound = 0;
        }
    }

    /// Decodes the instruction at `pc` of `code` from the bytes of its page `p` (validated in
    /// this generation); an unaligned pc within 8 bytes of the page's window end (only
    /// `s_setpc_b64` makes one, decoded each time it runs) is read from `code`.
    ///
    /// # Errors
    /// As [`DecodeCache::get`].
    #[cold]
    #[inline(never)]
    fn decode_at(
        &mut self,
        p: usize,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
        target: Gfx9Target,
        pc: u64,
    ) -> Result<Instruction> {
        let (base, end) = (code.base_address(), code.end_address());
        if pc < base || pc >= end {
            bail!(
                Status::IllegalInstruction,
                "pc {pc:#x} outside the kernel code ({base:#x}..+{:#x})",
                end - base
            );
        }
        // The longest encoding is 8 bytes; none is read past the code's end.
        let n = (end - pc).min(8) as usize;
        let pg = &self.pages[p];
        let off = (pc - pg.raw_start) as usize;
        let mut buf = [0u8; 8];
        let bytes = match pg.raw.get(off..off + n) {
            Some(b) => b,
            None => {
                code.read(pc, &mut buf[..n], memory)?;
                if let CodeSource::Device(_) = code {
                    self.code_bytes_read += n as u64;
                }
                &buf[..n]
            }
        };
        let kernel_off = pc.wrapping_sub(code.entry_address());
        decode(bytes, target)
            .map_err(|e| error!(e.status(), "kernel offset {kernel_off:#x}: {}", e.detail()))
    }

    /// The CUs `cu_enable` enables ([`enabled_cus`], computed once per mask).
    fn cus(&mut self, cu_enable: &[u32; super::hwid::MAX_SHADER_ENGINES]) -> &[CuId] {
        if self.cus.as_ref().is_none_or(|(m, _)| m != cu_enable) {
            self.cus = Some((*cu_enable, enabled_cus(cu_enable)));
        }
        self.cus.as_ref().map_or(&[], |(_, cus)| cus.as_slice())
    }

    /// The index of page `number`, validated against `code` in this generation (its
    /// instructions dropped when its bytes changed), added when absent.
    ///
    /// # Errors
    /// [`Status::MemoryFault`]: reading device code failed.
    #[inline]
    fn page(
        &mut self,
        number: u64,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
    ) -> Result<usize> {
        let p = match self.pages.get(self.last) {
            Some(pg) if pg.number == number => self.last,
            _ => match self.pages.iter().position(|pg| pg.number == number) {
                Some(p) => p,
                None => {
                    if self.pages.len() >= DECODE_CACHE_MAX_PAGES {
                        let oldest = (0..self.pages.len())
                            .min_by_key(|&i| self.pages[i].checked)
                            .unwrap_or(0);
                        self.pages.swap_remove(oldest);
                    }
                    // Filled by the validation below.
                    self.pages.push(CachePage {
                        number,
                        raw_start: u64::MAX,
                        raw: Vec::new(),
                        slots: vec![0; (CACHE_PAGE_BYTES / 4) as usize],
                        insts: Vec::new(),
                        checked: self.generation.wrapping_sub(1),
                    });
                    self.pages.len() - 1
                }
            },
        };
        self.last = p;
        if self.pages[p].checked != self.generation {
            self.validate(p, code, memory)?;
        }
        Ok(p)
    }

    /// Validates page `p` against `code` for this generation: compares the code bytes of its
    /// window now (device code read through `memory`) with those it was decoded from, and
    /// drops its instructions when they differ.
    ///
    /// # Errors
    /// [`Status::MemoryFault`]: reading device code failed (the page stays unvalidated).
    #[cold]
    #[inline(never)]
    fn validate(
        &mut self,
        p: usize,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
    ) -> Result<()> {
        let pg = &mut self.pages[p];
        let (lo, hi) = CachePage::window(pg.number, code);
        let mut buf = [0u8; (CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES) as usize];
        let now: &[u8] = match code {
            CodeSource::Host(c) => {
                let off = (lo - c.base_address) as usize;
                c.bytes.get(off..off + (hi - lo) as usize).unwrap_or(&[])
            }
            CodeSource::Device(_) => {
                let now = &mut buf[..(hi - lo) as usize];
                if !now.is_empty() {
                    code.read(lo, now, memory)?;
                    self.code_bytes_read += now.len() as u64;
                }
                now
            }
        };
        if lo != pg.raw_start || now != pg.raw.as_slice() {
            if !pg.insts.is_empty() {
                self.invalidated += 1;
            }
            pg.raw_start = lo;
            pg.raw.clear();
            pg.raw.extend_from_slice(now);
            pg.slots.fill(0);
            pg.insts.clear();
        }
        pg.checked = self.generation;
        Ok(())
    }

    /// The instruction at `pc` of `code`, decoded now if it is not yet (device code is read
    /// through `memory`).
    ///
    /// # Errors
    /// - [`Status::IllegalInstruction`]: `pc` outside the code, or the bytes there do not
    ///   decode (the message names the kernel offset).
    /// - [`Status::MemoryFault`]: reading device code failed.
    #[inline]
    fn get(
        &mut self,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
        target: Gfx9Target,
        pc: u64,
    ) -> Result<&(Instruction, Fast)> {
        let p = self.page(pc / CACHE_PAGE_BYTES, code, memory)?;
        let slot = (pc % CACHE_PAGE_BYTES / 4) as usize;
        let i = self.pages[p].slots[slot];
        if i != 0 {
            return Ok(&self.pages[p].insts[i as usize - 1]);
        }
        let inst = self.decode_at(p, code, memory, target, pc)?;
        self.decoded += 1;
        let name = inst.name();
        // An s_setreg of HW_REG_MODE (id 1) whose field covers bit 27 (GPR_IDX_EN) can turn
        // GPR index mode on as s_set_gpr_idx_on does.
        let hwreg = inst.imm as u16 as u32;
        let (id, offset, size) = (hwreg & 0x3F, hwreg >> 6 & 0x1F, (hwreg >> 11) + 1);
        let sets_gpr_idx = matches!(name, "s_setreg_b32" | "s_setreg_imm32_b32")
            && id == 1
            && offset <= 27
            && 27 < offset + size;
        if name.starts_with("s_set_gpr_idx") || name.starts_with("v_movrel") || sets_gpr_idx {
            // Indexed VGPR addressing (GPR index mode, M0-relative moves) reaches VGPRs past
            // the ones the operands name: reused waves are then zeroed whole.
            self.vgpr_bound = super::wave::NUM_VGPRS;
        }
        for op in [
            &inst.dst,
            &inst.sdst,
            &inst.src[0],
            &inst.src[1],
            &inst.src[2],
        ] {
            match *op {
                Operand::Vgpr { index, count } => {
                    self.vgpr_bound = self.vgpr_bound.max(index as usize + count.max(1) as usize)
                }
                Operand::Agpr { index, count } => {
                    self.agpr_bound = self.agpr_bound.max(index as usize + count.max(1) as usize)
                }
                _ => {}
            }
        }
        let inst = (inst, super::fast::classify(&inst, pc));
        if pc % 4 != 0 {
            // A slot is a dword: an unaligned pc (only `s_setpc_b64` makes one) is decoded
            // each time it runs.
            return Ok(self.unaligned.insert(inst));
        }
        let pg = &mut self.pages[p];
        pg.insts.push(inst);
        pg.slots[slot] = pg.insts.len() as u32;
        Ok(&pg.insts[pg.insts.len() - 1])
    }
}

/// Whether conversion `name` has an f32 result (the output modifiers apply to it).
fn cvt_to_f32(name: &str) -> bool {
    name.starts_with("v_cvt_f32") || name == "v_cvt_off_f32_i4"
}

/// The byte offset an SMEM instruction adds to its base (Vega ISA "Scalar Memory
/// Operations"): the SGPR `OFFSET` names (zero-extended), the signed 21-bit immediate, or
/// with `soe` the SGPR in SOFFSET plus the immediate.
fn smem_offset(w: &Wave, inst: &Instruction) -> u64 {
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

fn step(ctx: &mut Ctx<'_, '_>, cache: &mut DecodeCache, w: &mut Wave, limit: u64) -> Result<()> {
    let (inst, fast) = cache.get(&ctx.code, ctx.memory, ctx.target, w.pc)?;
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
use image::image;

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
        Operand::InlineFloat(c) => {
            let k = (c - 240) as usize;
            if wide && f64_op {
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
        // src_shared_base / src_private_base: the apertures' high 32 bits; the limits are
        // base + 4 GiB - 1 (high 32 bits equal the base's).
        Operand::Special(235 | 236) => SHARED_APERTURE_BASE >> 32,
        Operand::Special(237 | 238) => PRIVATE_APERTURE_BASE >> 32,
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
    match inst.encoding {
        Encoding::Sop1 | Encoding::Sopc | Encoding::Sopp
            if inst.name().starts_with("s_set_gpr_idx_") =>
        {
            set_gpr_idx(w, inst);
            Ok(Flow::Next)
        }
        Encoding::Sop2 | Encoding::Sop1 | Encoding::Sopc | Encoding::Sopk => salu(w, inst, next),
        Encoding::Sopp => sopp(ctx, w, inst, next),
        // The emulator has no scalar cache: its write-back and invalidation have nothing to do
        // (scalar stores write memory at once, loads read it).
        Encoding::Smem if inst.name().starts_with("s_dcache_") => Ok(Flow::Next),
        Encoding::Smem if inst.src[0] == Operand::None => {
            clock_counter(ctx, w, inst);
            Ok(Flow::Next)
        }
        Encoding::Smem if inst.name().starts_with("s_scratch_") => {
            scalar_scratch(ctx, w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Smem
            if inst.name().starts_with("s_buffer_")
                || inst.name().starts_with("s_store_")
                || inst.name().starts_with("s_atomic_") =>
        {
            scalar_memory(ctx, w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Smem => {
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
            Ok(Flow::Next)
        }
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 | Encoding::Vop3p
            if mode::fp_round(w.mode) != 0 && mode::round_unsupported(w.mode, inst) =>
        {
            Err(mode::round_error(w.mode, inst))
        }
        Encoding::Vop1 if inst.info.is_mai() => {
            super::mai::accvgpr(w, inst);
            Ok(Flow::Next)
        }
        Encoding::Vop3p if inst.info.is_mai() => {
            if inst.name().starts_with("v_mfma_") {
                super::mai::mfma(w, inst)?;
            } else {
                super::mai::accvgpr(w, inst);
            }
            Ok(Flow::Next)
        }
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 => {
            match inst.mods.dpp {
                Some(d) => valu_dpp(w, inst, d)?,
                None => valu::<false>(w, inst, w.exec(), &NO_DPP_SRC0)?,
            }
            Ok(Flow::Next)
        }
        Encoding::Vop3p => {
            vop3p(w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Ds if ds_lane_op(inst.name()) => {
            ds_lanes(w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Ds => {
            ds(ctx, w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Flat => {
            flat(ctx, w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Mubuf | Encoding::Mtbuf => {
            mubuf(ctx, w, inst)?;
            Ok(Flow::Next)
        }
        Encoding::Mimg => {
            image(ctx, w, inst)?;
            Ok(Flow::Next)
        }
    }
}

/// MODE bit 27, GPR_IDX_EN: VALU instructions address VGPRs relative to M0[7:0] (Vega ISA
/// MODE register table and S_SET_GPR_IDX_ON).
pub(super) const MODE_GPR_IDX_EN: u32 = 1 << 27;

/// `s_set_gpr_idx_on`, `_off`, `_idx` and `_mode` (Vega ISA SOPC opcode 17, SOPP opcodes 28
/// and 29, SOP1 opcode 50; the same in the CDNA1/2/3 guides): `on` sets MODE.GPR_IDX_EN,
/// M0[7:0] = S0[7:0] and M0[15:12] = the SSRC1 field's bits 3:0 (VSRC0_REL, VSRC1_REL,
/// VSRC2_REL, VDST_REL); `off` clears MODE.GPR_IDX_EN; `idx` sets M0[7:0] = S0[7:0]; `mode`
/// sets M0[15:12] = SIMM16[3:0]. The other bits of M0 are kept.
fn set_gpr_idx(w: &mut Wave, inst: &Instruction) {
    let m0 = w.sreg[M0];
    let s0 = scalar(w, &inst.src[0], false, false) as u32;
    let mask = (inst.imm as u32 & 0xF) << 12;
    match inst.name() {
        "s_set_gpr_idx_on" => {
            w.mode |= MODE_GPR_IDX_EN;
            w.sreg[M0] = m0 & !0xF0FF | mask | s0 & 0xFF;
        }
        "s_set_gpr_idx_off" => w.mode &= !MODE_GPR_IDX_EN,
        "s_set_gpr_idx_idx" => w.sreg[M0] = m0 & !0xFF | s0 & 0xFF,
        _ => w.sreg[M0] = m0 & !0xF000 | mask,
    }
}

/// `inst` with the GPR index applied, for a VALU instruction while MODE.GPR_IDX_EN is set:
/// M0[7:0] added to the VGPR number of src0, src1, src2 and the destination whose bit
/// M0[12], M0[13], M0[14], M0[15] is set (Vega ISA S_SET_GPR_IDX_ON; the whole range of a
/// 64-bit operand moves). SGPR, constant and AGPR operands are not indexed.
///
/// # Errors
/// [`Status::IllegalInstruction`] when an indexed range would end past v255.
fn gpr_indexed(w: &Wave, inst: &Instruction) -> Result<Instruction> {
    let m0 = w.sreg[M0];
    let index = m0 & 0xFF;
    let mut out = *inst;
    let [s0, s1, s2] = &mut out.src;
    for (k, op) in [s0, s1, s2, &mut out.dst].into_iter().enumerate() {
        if m0 >> (12 + k) & 1 == 0 {
            continue;
        }
        if let Operand::Vgpr { index: v, count } = *op {
            let first = u32::from(v) + index;
            if first + u32::from(count.max(1)) > 256 {
                return Err(error!(
                    Status::IllegalInstruction,
                    "GPR index mode: v{v} + M0[7:0] {index} is past v255"
                ));
            }
            *op = Operand::Vgpr {
                index: first as u8,
                count,
            };
        }
    }
    Ok(out)
}

/// `s_memtime` and `s_memrealtime`: the 64-bit counter into the destination SGPR pair,
/// both from [`DeviceMemory::clock_counter`] (Vega ISA SMEM: `s_memtime` returns the shader
/// clock counter, `s_memrealtime` the real-time "REFCLK" counter; the emulated device has
/// one clock for both).
fn clock_counter(ctx: &Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) {
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
fn scalar_memory(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    let Operand::Sreg { index: sbase, .. } = inst.src[0] else {
        return Err(not_implemented(inst));
    };
    let sbase = usize::from(sbase);
    let off = smem_offset(w, inst) & !3;
    let (base, limit) = if name.starts_with("s_buffer_") {
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
    if let Some(ty) = name.split_once("atomic_").map(|(_, t)| t) {
        let f = atomic_op(ty).ok_or_else(|| not_implemented(inst))?;
        let wide = ty.ends_with("_x2");
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
    let store = name.contains("_store_");
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
/// swizzle: the bytes are at that address of the scratch backing, as a `global_` access of
/// FLAT_SCRATCH + offset sees them (outside the running group's backing: reads 0, writes
/// dropped, as [`read_global`] and [`write_global`] do for every private access).
///
/// # Errors
/// The memory's error for an access at a FLAT_SCRATCH outside the scratch backing and the
/// device's memory.
fn scalar_scratch(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let Operand::Sreg { index: data, .. } = inst.dst else {
        return Err(not_implemented(inst));
    };
    let data = usize::from(data);
    let off = smem_offset(w, inst) & !3;
    let base = w.sreg64(FLAT_SCRATCH).wrapping_add(off);
    let store = inst.name().starts_with("s_scratch_store");
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

fn sopp(ctx: &Ctx<'_, '_>, w: &mut Wave, inst: &Instruction, next: u64) -> Result<Flow> {
    let target = next.wrapping_add((inst.imm as i64 * 4) as u64);
    let taken = match inst.name() {
        "s_nop" | "s_waitcnt" | "s_setprio" => return Ok(Flow::Next),
        // A sleeping wave lets others run: here the host thread gives up its time slice (a
        // kernel polling memory the host writes, such as hostcall's, waits this way).
        "s_sleep" => {
            std::thread::yield_now();
            return Ok(Flow::Next);
        }
        "s_sendmsg" | "s_sendmsghalt" => {
            send_message(ctx, w, inst)?;
            if inst.name() == "s_sendmsghalt" {
                return Err(error!(
                    Status::Exception,
                    "s_sendmsghalt: the wave halted after its message (nothing resumes a \
                     halted wave here)"
                ));
            }
            return Ok(Flow::Next);
        }
        "s_endpgm" | "s_endpgm_saved" => return Ok(Flow::End),
        "s_barrier" => return Ok(Flow::Barrier),
        // `llvm.debugtrap` (trap id 3) with no debugger attached: the trap handler returns at
        // once and the wave goes on (AMDGPUUsage, "Trap Handler ABI").
        "s_trap" if inst.imm as u16 & 0xFF == 3 => return Ok(Flow::Next),
        // No trap handler runs here: any other trap stops the dispatch as the CP reports a
        // wave trap to ROCR, the debug-trap queue error (0x8000_0000), which ROCR 5.2 turns
        // into HSA_STATUS_ERROR_EXCEPTION (amd_aql_queue.cpp). Trap id 2 is
        // `__builtin_trap` (AMDGPUUsage, "Trap Handler ABI").
        "s_trap" => {
            return Err(error!(
                Status::Exception,
                "s_trap {}: the wave trapped (no trap handler runs in the emulator)",
                inst.imm as u16 & 0xFF
            ))
        }
        "s_branch" => true,
        "s_cbranch_scc0" => !w.scc,
        "s_cbranch_scc1" => w.scc,
        "s_cbranch_vccz" => w.vcc() == 0,
        "s_cbranch_vccnz" => w.vcc() != 0,
        "s_cbranch_execz" => w.exec() == 0,
        "s_cbranch_execnz" => w.exec() != 0,
        _ => return Err(not_implemented(inst)),
    };
    Ok(if taken {
        Flow::Jump(target)
    } else {
        Flow::Next
    })
}

/// `s_sendmsg`'s message (SIMM16[3:0]; Vega ISA §4.4 "Send Message Types"): compute waves
/// send `MSG_INTERRUPT`, an interrupt to the host with M0[22:0] as data
/// ([`DeviceMemory::message_interrupt`]). The others (geometry-shader messages, the trap
/// handler's `MSG_SAVEWAVE`, `MSG_SYSMSG`, ...) are no compute kernel's: an error naming the
/// message.
fn send_message(ctx: &Ctx<'_, '_>, w: &Wave, inst: &Instruction) -> Result<()> {
    let imm = inst.imm as u16;
    match imm & 0xF {
        1 => ctx.memory.message_interrupt(w.sreg[M0] & 0x7F_FFFF),
        id => Err(error!(
            Status::IllegalInstruction,
            "{} message {} (SIMM16 {imm:#x}) is not one the interpreter delivers (only \
             MSG_INTERRUPT)",
            inst.name(),
            super::disasm::sendmsg_name(id).unwrap_or("with no gfx9 name")
        )),
    }
}

fn bfe(v: u64, off: u32, width: u32, signed: bool, bits: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let r = v >> (off % bits);
    if width >= bits {
        return r;
    }
    let mask = (1u64 << width) - 1;
    let r = r & mask;
    if signed && r >> (width - 1) & 1 != 0 {
        r | !mask
    } else {
        r
    }
}

fn salu(w: &mut Wave, inst: &Instruction, next: u64) -> Result<Flow> {
    let name = inst.name();
    let wd = inst.info.widths;
    let a = scalar(w, &inst.src[0], wd[1] == 2, false);
    let b = scalar(w, &inst.src[1], wd[2] == 2, false);
    let (a32, b32) = (a as u32, b as u32);
    let scc = w.scc;
    let mut new_scc = scc;
    let nz = |r: u64| r != 0;
    let imm = inst.imm;
    let d_old = scalar(w, &inst.dst, false, false) as u32;
    let result: Option<u64> = match inst.encoding {
        Encoding::Sopc => {
            new_scc = match name {
                "s_cmp_eq_i32" | "s_cmp_eq_u32" => a32 == b32,
                "s_cmp_lg_i32" | "s_cmp_lg_u32" => a32 != b32,
                "s_cmp_gt_i32" => (a32 as i32) > (b32 as i32),
                "s_cmp_ge_i32" => (a32 as i32) >= (b32 as i32),
                "s_cmp_lt_i32" => (a32 as i32) < (b32 as i32),
                "s_cmp_le_i32" => (a32 as i32) <= (b32 as i32),
                "s_cmp_gt_u32" => a32 > b32,
                "s_cmp_ge_u32" => a32 >= b32,
                "s_cmp_lt_u32" => a32 < b32,
                "s_cmp_le_u32" => a32 <= b32,
                "s_cmp_eq_u64" => a == b,
                "s_cmp_lg_u64" => a != b,
                "s_bitcmp0_b32" => a32 >> (b32 & 31) & 1 == 0,
                "s_bitcmp1_b32" => a32 >> (b32 & 31) & 1 == 1,
                "s_bitcmp0_b64" => a >> (b32 & 63) & 1 == 0,
                "s_bitcmp1_b64" => a >> (b32 & 63) & 1 == 1,
                _ => return Err(not_implemented(inst)),
            };
            None
        }
        Encoding::Sopk => {
            let k = imm as u32; // sign-extended
            let ku = imm as u16 as u32;
            let d = d_old;
            match name {
                "s_movk_i32" => Some(k as u64),
                "s_cmovk_i32" => Some(if scc { k } else { d } as u64),
                "s_addk_i32" => {
                    let (r, o) = (d as i32).overflowing_add(k as i32);
                    new_scc = o;
                    Some(r as u32 as u64)
                }
                "s_mulk_i32" => Some(d.wrapping_mul(k) as u64),
                // S_CALL_B64 (Vega ISA SOPK opcode 21): D = the address of the next
                // instruction, PC = that + simm16 × 4.
                "s_call_b64" => {
                    set_sdst(w, &inst.dst, next);
                    return Ok(Flow::Jump(next.wrapping_add((i64::from(imm) * 4) as u64)));
                }
                "s_getreg_b32" | "s_setreg_b32" | "s_setreg_imm32_b32" => {
                    let (id, offset, size) = (ku & 0x3F, ku >> 6 & 0x1F, (ku >> 11) + 1);
                    let mask = (((1u64 << size) - 1) << offset) as u32;
                    // HW_REG_HW_ID (4) is read-only: the SPI sets it at launch (hwid module).
                    // HW_REG_XCC_ID (20, gfx940+) too: the XCC the wave runs on.
                    let xcc = id == 20 && inst.target == super::Gfx9Target::Gfx942;
                    if id == 4 && name == "s_getreg_b32" {
                        Some(u64::from((w.hw_id & mask) >> offset))
                    } else if xcc && name == "s_getreg_b32" {
                        Some(u64::from((super::hwid::XCC_ID & mask) >> offset))
                    } else if id != 1 {
                        bail!(
                            Status::IllegalInstruction,
                            "{name} of hardware register {id}: only HW_REG_MODE (1), and \
                             s_getreg_b32 of HW_REG_HW_ID (4) and gfx942's HW_REG_XCC_ID \
                             (20), are modelled"
                        );
                    } else if name == "s_getreg_b32" {
                        Some(u64::from((w.mode & mask) >> offset))
                    } else {
                        w.mode = w.mode & !mask | (a32 << offset) & mask;
                        None
                    }
                }
                _ => {
                    new_scc = match name {
                        "s_cmpk_eq_i32" => d == k,
                        "s_cmpk_lg_i32" => d != k,
                        "s_cmpk_gt_i32" => (d as i32) > (k as i32),
                        "s_cmpk_ge_i32" => (d as i32) >= (k as i32),
                        "s_cmpk_lt_i32" => (d as i32) < (k as i32),
                        "s_cmpk_le_i32" => (d as i32) <= (k as i32),
                        "s_cmpk_eq_u32" => d == ku,
                        "s_cmpk_lg_u32" => d != ku,
                        "s_cmpk_gt_u32" => d > ku,
                        "s_cmpk_ge_u32" => d >= ku,
                        "s_cmpk_lt_u32" => d < ku,
                        "s_cmpk_le_u32" => d <= ku,
                        _ => return Err(not_implemented(inst)),
                    };
                    None
                }
            }
        }
        Encoding::Sop1 => {
            let exec = w.exec();
            let saveexec = |f: u64| (f, f != 0);
            let r: u64 = match name {
                "s_mov_b32" | "s_mov_b64" => a,
                "s_cmov_b32" | "s_cmov_b64" => {
                    if !scc {
                        return Ok(Flow::Next);
                    }
                    a
                }
                "s_not_b32" => {
                    let r = !a32 as u64;
                    new_scc = nz(r);
                    r
                }
                "s_not_b64" => {
                    new_scc = nz(!a);
                    !a
                }
                "s_brev_b32" => a32.reverse_bits() as u64,
                "s_brev_b64" => a.reverse_bits(),
                "s_bcnt0_i32_b32" | "s_bcnt1_i32_b32" | "s_bcnt0_i32_b64" | "s_bcnt1_i32_b64" => {
                    let ones = if wd[1] == 2 {
                        a.count_ones()
                    } else {
                        a32.count_ones()
                    };
                    let bits = if wd[1] == 2 { 64 } else { 32 };
                    let r = if name.starts_with("s_bcnt0") {
                        bits - ones
                    } else {
                        ones
                    } as u64;
                    new_scc = nz(r);
                    r
                }
                "s_ff1_i32_b32" => {
                    (if a32 == 0 {
                        u32::MAX
                    } else {
                        a32.trailing_zeros()
                    }) as u64
                }
                "s_ff0_i32_b32" => {
                    (if a32 == u32::MAX {
                        u32::MAX
                    } else {
                        a32.trailing_ones()
                    }) as u64
                }
                "s_ff1_i32_b64" => (if a == 0 { u32::MAX } else { a.trailing_zeros() }) as u64,
                "s_ff0_i32_b64" => {
                    (if a == u64::MAX {
                        u32::MAX
                    } else {
                        a.trailing_ones()
                    }) as u64
                }
                "s_flbit_i32_b32" => {
                    (if a32 == 0 {
                        u32::MAX
                    } else {
                        a32.leading_zeros()
                    }) as u64
                }
                "s_flbit_i32_b64" => (if a == 0 { u32::MAX } else { a.leading_zeros() }) as u64,
                "s_flbit_i32" => {
                    let v = a32 as i32;
                    if v == 0 || v == -1 {
                        u32::MAX as u64
                    } else {
                        (if v < 0 { !a32 } else { a32 }).leading_zeros() as u64
                    }
                }
                // S_FLBIT_I32_I64 (Vega ISA SOP1 opcode 21): s_flbit_i32 of 64 bits.
                "s_flbit_i32_i64" => {
                    if a == 0 || a == u64::MAX {
                        u32::MAX as u64
                    } else {
                        (if (a as i64) < 0 { !a } else { a }).leading_zeros() as u64
                    }
                }
                // S_WQM_B32/B64 (Vega ISA SOP1 opcodes 6, 7): each nibble with a bit set
                // becomes 0xF; SCC = D != 0.
                "s_wqm_b32" | "s_wqm_b64" => {
                    let r = (0..16).fold(0u64, |r, k| {
                        if a >> (4 * k) & 0xF != 0 {
                            r | 0xF << (4 * k)
                        } else {
                            r
                        }
                    });
                    let r = if wd[0] == 2 { r } else { r & 0xFFFF_FFFF };
                    new_scc = nz(r);
                    r
                }
                "s_sext_i32_i8" => a32 as i8 as i32 as u32 as u64,
                "s_sext_i32_i16" => a32 as i16 as i32 as u32 as u64,
                "s_bitset0_b32" => (d_old & !(1 << (a32 & 31))) as u64,
                "s_bitset1_b32" => (d_old | 1 << (a32 & 31)) as u64,
                // S_BITSET0/1_B64 (Vega ISA SOP1 opcodes 25, 27): D.u64[S0.u[5:0]] = 0 / 1.
                "s_bitset0_b64" => scalar(w, &inst.dst, true, false) & !(1u64 << (a32 & 63)),
                "s_bitset1_b64" => scalar(w, &inst.dst, true, false) | 1u64 << (a32 & 63),
                "s_abs_i32" => {
                    let r = (a32 as i32).unsigned_abs() as u64;
                    new_scc = nz(r);
                    r
                }
                "s_getpc_b64" => next,
                "s_setpc_b64" => return Ok(Flow::Jump(a)),
                "s_swappc_b64" => {
                    set_sdst(w, &inst.dst, next);
                    return Ok(Flow::Jump(a));
                }
                "s_and_saveexec_b64"
                | "s_or_saveexec_b64"
                | "s_xor_saveexec_b64"
                | "s_andn2_saveexec_b64"
                | "s_orn2_saveexec_b64"
                | "s_nand_saveexec_b64"
                | "s_nor_saveexec_b64"
                | "s_xnor_saveexec_b64"
                | "s_andn1_saveexec_b64"
                | "s_orn1_saveexec_b64" => {
                    let (e, s) = saveexec(match name {
                        "s_and_saveexec_b64" => a & exec,
                        "s_or_saveexec_b64" => a | exec,
                        "s_xor_saveexec_b64" => a ^ exec,
                        "s_andn2_saveexec_b64" => a & !exec,
                        "s_orn2_saveexec_b64" => a | !exec,
                        "s_nand_saveexec_b64" => !(a & exec),
                        "s_nor_saveexec_b64" => !(a | exec),
                        "s_xnor_saveexec_b64" => !(a ^ exec),
                        "s_andn1_saveexec_b64" => !a & exec,
                        _ => !a | exec,
                    });
                    w.set_exec(e);
                    new_scc = s;
                    exec
                }
                "s_andn1_wrexec_b64" | "s_andn2_wrexec_b64" => {
                    let e = if name == "s_andn1_wrexec_b64" {
                        !a & exec
                    } else {
                        a & !exec
                    };
                    w.set_exec(e);
                    new_scc = e != 0;
                    e
                }
                _ => return Err(not_implemented(inst)),
            };
            Some(r)
        }
        _ => {
            let wide = wd[0] == 2;
            let r: u64 = match name {
                "s_add_u32" => {
                    let (r, c) = a32.overflowing_add(b32);
                    new_scc = c;
                    r as u64
                }
                "s_sub_u32" => {
                    let (r, c) = a32.overflowing_sub(b32);
                    new_scc = c;
                    r as u64
                }
                "s_add_i32" => {
                    let (r, o) = (a32 as i32).overflowing_add(b32 as i32);
                    new_scc = o;
                    r as u32 as u64
                }
                "s_sub_i32" => {
                    let (r, o) = (a32 as i32).overflowing_sub(b32 as i32);
                    new_scc = o;
                    r as u32 as u64
                }
                "s_addc_u32" => {
                    let t = a32 as u64 + b32 as u64 + scc as u64;
                    new_scc = t >> 32 != 0;
                    t as u32 as u64
                }
                "s_subb_u32" => {
                    let t = (a32 as u64).wrapping_sub(b32 as u64 + scc as u64);
                    new_scc = b32 as u64 + scc as u64 > a32 as u64;
                    t as u32 as u64
                }
                "s_min_i32" | "s_min_u32" | "s_max_i32" | "s_max_u32" => {
                    let lt = if name.ends_with("i32") {
                        (a32 as i32) < (b32 as i32)
                    } else {
                        a32 < b32
                    };
                    let gt = if name.ends_with("i32") {
                        (a32 as i32) > (b32 as i32)
                    } else {
                        a32 > b32
                    };
                    if name.starts_with("s_min") {
                        new_scc = lt;
                        if lt {
                            a
                        } else {
                            b
                        }
                    } else {
                        new_scc = gt;
                        if gt {
                            a
                        } else {
                            b
                        }
                    }
                }
                "s_cselect_b32" | "s_cselect_b64" => {
                    if scc {
                        a
                    } else {
                        b
                    }
                }
                "s_and_b32" | "s_and_b64" => a & b,
                "s_or_b32" | "s_or_b64" => a | b,
                "s_xor_b32" | "s_xor_b64" => a ^ b,
                "s_andn2_b32" | "s_andn2_b64" => a & !b,
                "s_orn2_b32" | "s_orn2_b64" => a | !b,
                "s_nand_b32" | "s_nand_b64" => !(a & b),
                "s_nor_b32" | "s_nor_b64" => !(a | b),
                "s_xnor_b32" | "s_xnor_b64" => !(a ^ b),
                "s_lshl_b32" => (a32 << (b32 & 31)) as u64,
                "s_lshr_b32" => (a32 >> (b32 & 31)) as u64,
                "s_ashr_i32" => ((a32 as i32) >> (b32 & 31)) as u32 as u64,
                "s_lshl_b64" => a << (b32 & 63),
                "s_lshr_b64" => a >> (b32 & 63),
                "s_ashr_i64" => ((a as i64) >> (b32 & 63)) as u64,
                "s_bfm_b32" => (1u32.wrapping_shl(a32 & 31).wrapping_sub(1) << (b32 & 31)) as u64,
                "s_bfm_b64" => 1u64.wrapping_shl(a32 & 63).wrapping_sub(1) << (b32 & 63),
                "s_mul_i32" => a32.wrapping_mul(b32) as u64,
                "s_mul_hi_u32" => (a32 as u64 * b32 as u64) >> 32,
                "s_mul_hi_i32" => ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as u32 as u64,
                "s_bfe_u32" => bfe(a32 as u64, b32 & 31, b32 >> 16 & 0x7F, false, 32) as u32 as u64,
                "s_bfe_i32" => {
                    bfe(a32 as u64, b32 & 31, (b32 >> 16 & 0x7F).min(32), true, 32) as u32 as u64
                }
                "s_bfe_u64" => bfe(a, b32 & 63, b32 >> 16 & 0x7F, false, 64),
                "s_bfe_i64" => bfe(a, b32 & 63, (b32 >> 16 & 0x7F).min(64), true, 64),
                "s_absdiff_i32" => (a32 as i32).wrapping_sub(b32 as i32).unsigned_abs() as u64,
                "s_lshl1_add_u32" | "s_lshl2_add_u32" | "s_lshl3_add_u32" | "s_lshl4_add_u32" => {
                    let n = name.as_bytes()[6] - b'0';
                    let t = ((a32 as u64) << n) + b32 as u64;
                    new_scc = t >> 32 != 0;
                    t as u32 as u64
                }
                "s_pack_ll_b32_b16" => ((a32 & 0xFFFF) | b32 << 16) as u64,
                "s_pack_lh_b32_b16" => ((a32 & 0xFFFF) | (b32 & 0xFFFF_0000)) as u64,
                "s_pack_hh_b32_b16" => ((a32 >> 16) | (b32 & 0xFFFF_0000)) as u64,
                _ => return Err(not_implemented(inst)),
            };
            let r = if wide { r } else { r as u32 as u64 };
            let sets_scc_nz = matches!(
                name.split('_').nth(1),
                Some("and" | "or" | "xor" | "andn2" | "orn2" | "nand" | "nor" | "xnor")
            ) || name.starts_with("s_lshl_")
                || name.starts_with("s_lshr_")
                || name.starts_with("s_ashr_")
                || name.starts_with("s_bfe_")
                || name == "s_absdiff_i32";
            if sets_scc_nz {
                new_scc = r != 0;
            }
            Some(r)
        }
    };
    if let Some(r) = result {
        set_sdst(w, &inst.dst, r);
    }
    w.scc = new_scc;
    Ok(Flow::Next)
}

// --- f32 helpers (core has no floor/trunc in no_std) ---

fn trunc32(x: f32) -> f32 {
    if !x.is_finite() || x.abs() >= 8_388_608.0 {
        return x;
    }
    let t = (x as i32) as f32;
    f32::from_bits(t.to_bits() | (x.to_bits() & 0x8000_0000))
}

fn floor32(x: f32) -> f32 {
    let t = trunc32(x);
    if t > x {
        t - 1.0
    } else {
        t
    }
}

fn ceil32(x: f32) -> f32 {
    let t = trunc32(x);
    if t < x {
        t + 1.0
    } else {
        t
    }
}

fn rndne32(x: f32) -> f32 {
    if !x.is_finite() || x.abs() >= 8_388_608.0 {
        return x;
    }
    let f = floor32(x);
    let d = x - f;
    let r = if d > 0.5 {
        f + 1.0
    } else if d < 0.5 || (f as i64) % 2 == 0 {
        f
    } else {
        f + 1.0
    };
    f32::from_bits(r.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// Fused multiply-add with one rounding (the host's `fmaf`).
fn fma32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// An f32 result's bits, with a NaN made from non-NaN input `x` replaced by the ISA's
/// default NaN (0x7FC0_0000; the host's is negative).
pub(super) fn canon32(x: u32, r: f32) -> u64 {
    if r.is_nan() && !f32::from_bits(x).is_nan() {
        0x7FC0_0000
    } else {
        u64::from(r.to_bits())
    }
}

/// An f16 operation computed in f64 and rounded once to f16: a NaN operand gives itself
/// quieted, an invalid operation the default NaN 0x7E00.
fn f16_unary(a: u64, op: impl Fn(f64) -> f64) -> u64 {
    let h = a as u16;
    if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
        return u64::from(h | 0x200);
    }
    let r = op(f16::to_f64(h));
    if r.is_nan() {
        0x7E00
    } else {
        u64::from(f16::from_f64(r))
    }
}

/// [`canon32`] for f64 (default NaN 0x7FF8_0000_0000_0000).
fn canon64(x: u64, r: f64) -> u64 {
    if r.is_nan() && !f64::from_bits(x).is_nan() {
        0x7FF8_0000_0000_0000
    } else {
        r.to_bits()
    }
}

/// `V_FRACT_F64`: `x − floor(x)`, at most the largest f64 below 1 (Vega ISA); ±∞ → NaN.
fn fract64(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    let f = x - x.floor();
    if f >= 1.0 {
        f64::from_bits(0x3FEF_FFFF_FFFF_FFFF)
    } else {
        f
    }
}

/// `V_PERM_B32`: each result byte chosen by the matching selector byte of `sel` from the
/// 8 bytes of `{hi, lo}` (0..=7), or the sign of byte 1, 3, 5 or 7 spread over the byte
/// (8..=11), or 0x00 (12), or 0xFF (13 and above) (Vega ISA, VOP3 opcode table).
fn perm_b32(hi: u32, lo: u32, sel: u32) -> u32 {
    let data = u64::from(hi) << 32 | u64::from(lo);
    let byte = |s: u32| -> u32 {
        match s {
            0..=7 => (data >> (8 * s) & 0xFF) as u32,
            8..=11 => {
                let sign_byte = 2 * (s - 8) + 1;
                if data >> (8 * sign_byte + 7) & 1 != 0 {
                    0xFF
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xFF,
        }
    };
    (0..4).fold(0, |acc, i| acc | byte(sel >> (8 * i) & 0xFF) << (8 * i))
}

fn sext24(v: u32) -> i64 {
    (((v << 8) as i32) >> 8) as i64
}

/// Whether VALU instruction `name` reads f32 and f64 sources: (f32 source, f64 source).
pub(super) fn float_input(name: &str) -> (bool, bool) {
    // (f32 source, f64 source)
    let src_ty = if name == "v_cndmask_b32" {
        // Its VOP3 `neg`/`abs` act on the sign bit as on an f32 (LLVM folds fneg/fabs of a
        // select into them: ocml's cosf negates with `v_cndmask_b32_e64 v3, -v3, v5, vcc`).
        "f32"
    } else if let Some(rest) = name.strip_prefix("v_cvt_") {
        rest.rsplit('_').next().unwrap_or("")
    } else if name.contains("_f64") {
        "f64"
    } else if name.contains("_f32") {
        "f32"
    } else {
        ""
    };
    (src_ty == "f32", src_ty == "f64")
}

/// Whether a VALU mnemonic's sources are f16 (`v_add_f16`, `v_cvt_f32_f16`; not
/// `v_cvt_f16_f32`, whose source is f32).
fn f16_input(name: &str) -> bool {
    match name.strip_prefix("v_cvt_") {
        Some(rest) => rest.ends_with("_f16"),
        None => name.ends_with("_f16"),
    }
}

/// Whether a VALU mnemonic's result is an f16 (output modifiers act on it as an f16).
fn f16_output(name: &str) -> bool {
    match name.strip_prefix("v_cvt_") {
        Some(rest) => rest.starts_with("f16_"),
        None => name.ends_with("_f16"),
    }
}

/// An f16 rounded to an integral value by `round` (exact: every f16 integral value of the
/// range is an f16); NaN quieted.
fn round16(x: u16, round: fn(f64) -> f64) -> u16 {
    if x & 0x7C00 == 0x7C00 && x & 0x3FF != 0 {
        return x | 0x200;
    }
    f16::from_f64(round(f16::to_f64(x)))
}

/// An f16 converted to a 16-bit integer, truncating toward zero and saturating; NaN → 0
/// (Vega ISA `V_CVT_U16_F16`/`V_CVT_I16_F16`).
fn f16_to_int16(x: u16, signed: bool) -> u16 {
    let v = f16::to_f64(x);
    if v.is_nan() {
        return 0;
    }
    if signed {
        v.trunc().clamp(-32768.0, 32767.0) as i16 as u16
    } else {
        v.trunc().clamp(0.0, 65535.0) as u16
    }
}

fn fcmp(cond: &str, a: f64, b: f64) -> Option<bool> {
    use core::cmp::Ordering::{Equal, Greater, Less};
    let o = a.partial_cmp(&b);
    Some(match cond {
        "f" => false,
        "lt" => o == Some(Less),
        "eq" => o == Some(Equal),
        "le" => matches!(o, Some(Less | Equal)),
        "gt" => o == Some(Greater),
        "lg" => matches!(o, Some(Less | Greater)),
        "ge" => matches!(o, Some(Greater | Equal)),
        "o" => o.is_some(),
        "u" => o.is_none(),
        "nge" => !matches!(o, Some(Greater | Equal)),
        "nlg" => !matches!(o, Some(Less | Greater)),
        "ngt" => o != Some(Greater),
        "nle" => !matches!(o, Some(Less | Equal)),
        "neq" => o != Some(Equal),
        "nlt" => o != Some(Less),
        "tru" => true,
        _ => return None,
    })
}

fn icmp<T: Ord>(cond: &str, a: T, b: T) -> Option<bool> {
    Some(match cond {
        "f" => false,
        "lt" => a < b,
        "eq" => a == b,
        "le" => a <= b,
        "gt" => a > b,
        "ne" => a != b,
        "ge" => a >= b,
        "t" => true,
        _ => return None,
    })
}

/// Source `i` of a VALU instruction for `lane`: the register or constant (64-bit where the
/// operand is), the SDWA select, then float `abs`/`neg`.
#[inline(always)]
fn read_operand(
    w: &Wave,
    inst: &Instruction,
    i: usize,
    lane: usize,
    f32_in: bool,
    f64_in: bool,
) -> u64 {
    let info = inst.info;
    let mods = &inst.mods;
    let width = if i == 2 && info.has(F_CI | F_CND) {
        2
    } else {
        info.widths[i + 1]
    };
    let f16_in = !f32_in && !f64_in && f16_input(info.name);
    let mut v = match inst.src[i] {
        Operand::InlineFloat(c) if f16_in => u64::from(F16_CONST[(c - 240) as usize]),
        _ => vsrc(w, &inst.src[i], lane, width == 2, f64_in),
    };
    if let Some(sd) = mods.sdwa.filter(|_| i < 2) {
        v = sdwa_select(v as u32, sd.src_sel[i], sd.sext[i]) as u64;
    }
    if f16_in {
        // The f16 is the low half; abs/neg act on its sign (bit 15).
        v &= 0xFFFF;
        if mods.abs[i] {
            v &= 0x7FFF;
        }
        if mods.neg[i] {
            v ^= 0x8000;
        }
    } else if f32_in && width == 1 {
        if mods.abs[i] {
            v &= 0x7FFF_FFFF;
        }
        if mods.neg[i] {
            v ^= 0x8000_0000;
        }
    } else if f64_in && width == 2 {
        if mods.abs[i] {
            v &= !(1 << 63);
        }
        if mods.neg[i] {
            v ^= 1 << 63;
        }
    }
    v
}

/// Src0 of no lane: what non-DPP instructions pass as `dpp_src0`.
const NO_DPP_SRC0: [u32; WAVE_SIZE] = [0; WAVE_SIZE];

/// A VALU instruction (VOP1/VOP2/VOPC/VOP3, SDWA included) over the lanes in `lanes` (EXEC,
/// or for DPP the lanes that write). With `DPP`, src0 of each lane is `dpp_src0[lane]` (the
/// value fetched from its source lane) with the instruction's modifiers; the other sources
/// are the lane's own. A const parameter, so the common path has no DPP test per lane.
fn valu<const DPP: bool>(
    w: &mut Wave,
    inst: &Instruction,
    lanes: u64,
    dpp_src0: &[u32; WAVE_SIZE],
) -> Result<()> {
    let name = inst.name();
    let info = inst.info;
    let wd = info.widths;
    let exec = w.exec();
    let mods = inst.mods;
    if mods.op_sel != 0 {
        return Err(error!(
            Status::IllegalInstruction,
            "{name}: op_sel not implemented"
        ));
    }
    let (f32_in, f64_in) = float_input(name);
    let f16_in = !f32_in && !f64_in && f16_input(name);
    let fm = mode::FloatMode::for_valu(w.mode, name, f32_in, f64_in, f16_in);
    let read = |w: &Wave, i: usize, lane: usize| read_operand(w, inst, i, lane, f32_in, f64_in);
    // Lane-crossing and scalar-destination ops.
    match name {
        "v_nop" => return Ok(()),
        "v_readfirstlane_b32" => {
            let lane = if exec == 0 {
                0
            } else {
                exec.trailing_zeros() as usize
            };
            let v = read(w, 0, lane);
            set_sdst(w, &inst.dst, v);
            return Ok(());
        }
        "v_readlane_b32" => {
            let lane = (scalar(w, &inst.src[1], false, false) & 63) as usize;
            let v = read(w, 0, lane);
            set_sdst(w, &inst.dst, v);
            return Ok(());
        }
        "v_writelane_b32" => {
            let lane = (scalar(w, &inst.src[1], false, false) & 63) as usize;
            let v = scalar(w, &inst.src[0], false, false);
            set_vdst(w, &inst.dst, lane, v, 1);
            return Ok(());
        }
        "v_pk_fmac_f16" | "v_dot2c_f32_f16" | "v_dot2c_i32_i16" | "v_dot4c_i32_i8"
        | "v_dot8c_i32_i4" => return accumulate_packed::<DPP>(w, inst, lanes, dpp_src0),
        _ => {}
    }
    if let Some(rest) = name.strip_prefix("v_cmp") {
        let (x, rest) = match rest.strip_prefix("x_") {
            Some(r) => (true, r),
            None => (false, &rest[1..]),
        };
        let (cond, ty) = rest.rsplit_once('_').unwrap_or((rest, ""));
        let mut mask = 0u64;
        for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
            let a = fm.src(0, read(w, 0, lane));
            let b = fm.src(1, read(w, 1, lane));
            let r = match ty {
                "f32" if cond == "class" => {
                    Some(b >> fdiv::class_index(fdiv::SINGLE, a & 0xFFFF_FFFF) & 1 != 0)
                }
                "f64" if cond == "class" => Some(b >> fdiv::class_index(fdiv::DOUBLE, a) & 1 != 0),
                "f16" if cond == "class" => {
                    Some(b >> fdiv::class_index(fdiv::HALF, a & 0xFFFF) & 1 != 0)
                }
                "f32" => fcmp(
                    cond,
                    f32::from_bits(a as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                ),
                "f64" => fcmp(cond, f64::from_bits(a), f64::from_bits(b)),
                "i32" => icmp(cond, a as u32 as i32, b as u32 as i32),
                "u32" => icmp(cond, a as u32, b as u32),
                "i64" => icmp(cond, a as i64, b as i64),
                "u64" => icmp(cond, a, b),
                // 16-bit compares: the low halves (Vega ISA VOPC opcodes 0x20..0x3F, 0xA0..0xBF).
                "f16" => fcmp(cond, f16::to_f64(a as u16), f16::to_f64(b as u16)),
                "i16" => icmp(cond, a as u16 as i16, b as u16 as i16),
                "u16" => icmp(cond, a as u16, b as u16),
                _ => None,
            };
            let Some(r) = r else {
                return Err(not_implemented(inst));
            };
            mask |= (r as u64) << lane;
        }
        set_sdst(w, &inst.sdst, mask);
        if x {
            w.set_exec(mask);
        }
        return Ok(());
    }
    let carry_mask = if info.has(F_CI | F_CND) {
        // Read before any lane writes the destination (which may alias it).
        Some(scalar(w, &inst.src[2], true, false))
    } else {
        None
    };
    let mut carry_out = 0u64;
    let writes_carry = info.has(F_CO | F_CI)
        || name == "v_mad_u64_u32"
        || name == "v_mad_i64_i32"
        || name.starts_with("v_div_scale_");
    // v_div_fmas reads VCC as its scale condition.
    let vcc_in = w.vcc();
    let out_w = wd[0];
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        let a = if DPP && f16_in {
            let v = u64::from(dpp_src0[lane]) & 0xFFFF;
            let v = if mods.abs[0] { v & 0x7FFF } else { v };
            if mods.neg[0] {
                v ^ 0x8000
            } else {
                v
            }
        } else if DPP {
            float_mods32(u64::from(dpp_src0[lane]), f32_in, mods.abs[0], mods.neg[0])
        } else {
            read(w, 0, lane)
        };
        let b = if wd[2] > 0 { read(w, 1, lane) } else { 0 };
        let c = if wd[3] > 0 && carry_mask.is_none() {
            read(w, 2, lane)
        } else {
            0
        };
        let ci = carry_mask.map(|m| m >> lane & 1).unwrap_or(0);
        let (a, b, c) = (fm.src(0, a), fm.src(1, b), fm.src(2, c));
        let (a32, b32, c32) = (a as u32, b as u32, c as u32);
        let (fa, fb, fc) = (
            f32::from_bits(a32),
            f32::from_bits(b32),
            f32::from_bits(c32),
        );
        let (da, db) = (f64::from_bits(a), f64::from_bits(b));
        let d_old = match inst.dst {
            Operand::Vgpr { index, .. } => w.v(index as usize, lane),
            _ => 0,
        };
        // The destination pair's value before the instruction: `v_fmac_f64`'s accumulator.
        let acc64 = |w: &Wave, lane: usize| match inst.dst {
            Operand::Vgpr { index, .. } => {
                let r = index as usize;
                u64::from(w.v(r, lane)) | u64::from(w.v(r + 1, lane)) << 32
            }
            _ => 0,
        };
        let mut co = false;
        let fr = |x: f32| x.to_bits() as u64;
        let r: u64 = match name {
            "v_mov_b32" | "v_mov_b64" => a,
            "v_cvt_f32_i32" => fr(a32 as i32 as f32),
            "v_cvt_f32_u32" => fr(a32 as f32),
            "v_cvt_u32_f32" => fa as u32 as u64,
            "v_cvt_i32_f32" => fa as i32 as u32 as u64,
            "v_cvt_rpi_i32_f32" => floor32(fa + 0.5) as i32 as u32 as u64,
            "v_cvt_flr_i32_f32" => floor32(fa) as i32 as u32 as u64,
            "v_cvt_f32_ubyte0" => fr((a32 & 0xFF) as f32),
            "v_cvt_f32_ubyte1" => fr((a32 >> 8 & 0xFF) as f32),
            "v_cvt_f32_ubyte2" => fr((a32 >> 16 & 0xFF) as f32),
            "v_cvt_f32_ubyte3" => fr((a32 >> 24) as f32),
            // A signed 4-bit integer in sixteenths: -0.5 for 0x8 to 0.4375 for 0x7 (Vega ISA
            // V_CVT_OFF_F32_I4; exact, so no rounding mode applies).
            "v_cvt_off_f32_i4" => fr(((a32 << 28) as i32 >> 28) as f32 / 16.0),
            "v_cvt_f64_f32" => (fa as f64).to_bits(),
            "v_cvt_f64_i32" => (a32 as i32 as f64).to_bits(),
            "v_cvt_f64_u32" => (a32 as f64).to_bits(),
            "v_cvt_f32_f64" => fr(da as f32),
            "v_cvt_i32_f64" => da as i32 as u32 as u64,
            "v_cvt_u32_f64" => da as u32 as u64,
            "v_fract_f32" => {
                let f = fa - floor32(fa);
                fr(if f >= 1.0 {
                    f32::from_bits(0x3F7F_FFFF)
                } else {
                    f
                })
            }
            "v_trunc_f32" => fr(trunc32(fa)),
            "v_ceil_f32" => fr(ceil32(fa)),
            "v_rndne_f32" => fr(rndne32(fa)),
            "v_floor_f32" => fr(floor32(fa)),
            "v_not_b32" => !a32 as u64,
            "v_bfrev_b32" => a32.reverse_bits() as u64,
            "v_ffbh_u32" => {
                (if a32 == 0 {
                    u32::MAX
                } else {
                    a32.leading_zeros()
                }) as u64
            }
            "v_ffbl_b32" => {
                (if a32 == 0 {
                    u32::MAX
                } else {
                    a32.trailing_zeros()
                }) as u64
            }
            "v_ffbh_i32" => {
                let v = a32 as i32;
                if v == 0 || v == -1 {
                    u32::MAX as u64
                } else {
                    (if v < 0 { !a32 } else { a32 }).leading_zeros() as u64
                }
            }
            "v_add_f32" => fr(fa + fb),
            "v_add_f16" => u64::from(f16::add(a as u16, b as u16)),
            "v_sub_f16" => u64::from(f16::sub(a as u16, b as u16)),
            "v_subrev_f16" => u64::from(f16::sub(b as u16, a as u16)),
            "v_mul_f16" => u64::from(f16::mul(a as u16, b as u16)),
            "v_fma_f16" => u64::from(f16::fma(a as u16, b as u16, c as u16)),
            "v_max_f16" => mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, true, fm.ieee),
            "v_min_f16" => mode::min_max(mode::H, a & 0xFFFF, b & 0xFFFF, false, fm.ieee),
            "v_cvt_f16_f32" => u64::from(f16::from_f64(f64::from(fa))),
            "v_cvt_pkrtz_f16_f32" => {
                u64::from(f16::from_f32_rtz(a32)) | u64::from(f16::from_f32_rtz(b32)) << 16
            }
            "v_cvt_f32_f16" => {
                let h = a as u16;
                if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 {
                    // NaN: sign and payload kept, quieted.
                    u64::from(u32::from(h >> 15) << 31 | 0x7FC0_0000 | u32::from(h & 0x3FF) << 13)
                } else {
                    fr(f16::to_f64(h) as f32)
                }
            }
            "v_cvt_f16_u16" => u64::from(f16::from_f64(f64::from(a as u16))),
            "v_cvt_f16_i16" => u64::from(f16::from_f64(f64::from(a as u16 as i16))),
            "v_cvt_u16_f16" => u64::from(f16_to_int16(a as u16, false)),
            "v_cvt_i16_f16" => u64::from(f16_to_int16(a as u16, true)),
            "v_trunc_f16" => u64::from(round16(a as u16, f64::trunc)),
            "v_ceil_f16" => u64::from(round16(a as u16, f64::ceil)),
            "v_floor_f16" => u64::from(round16(a as u16, f64::floor)),
            "v_rndne_f16" => u64::from(round16(a as u16, f64::round_ties_even)),
            "v_sub_f32" => fr(fa - fb),
            "v_subrev_f32" => fr(fb - fa),
            "v_mul_f32" => fr(fa * fb),
            "v_min_f32" => mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, false, fm.ieee),
            "v_max_f32" => mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, true, fm.ieee),
            "v_mac_f32" => {
                let acc = f32::from_bits(fm.src(2, u64::from(d_old)) as u32);
                fr(mode::mad32(fa, fb, acc, 0))
            }
            "v_fmac_f32" => fr(fma32(
                fa,
                fb,
                f32::from_bits(fm.src(2, u64::from(d_old)) as u32),
            )),
            "v_mad_f32" => fr(mode::mad32(fa, fb, fc, 0)),
            "v_fma_f32" => fr(fma32(fa, fb, fc)),
            // VOP2 with a constant K (decoded as the sources of a three-source
            // multiply-add: src0 × src1 + src2) and the f16 MAC.
            "v_madmk_f32" | "v_madak_f32" => fr(mode::mad32(fa, fb, fc, 0)),
            "v_fmamk_f32" | "v_fmaak_f32" => fr(fma32(fa, fb, fc)),
            "v_mad_f16" | "v_madmk_f16" | "v_madak_f16" => {
                u64::from(mode::mad16(a as u16, b as u16, c as u16, 0))
            }
            // V_MAD_LEGACY_F32 (Vega ISA VOP3 opcode 0x1C0): v_mad_f32 whose product is +0
            // when a factor is 0 (DX9 rule, inf and NaN included).
            "v_mad_legacy_f32" => {
                let (x, y) = if fa == 0.0 || fb == 0.0 {
                    (0.0, 0.0)
                } else {
                    (fa, fb)
                };
                fr(mode::mad32(x, y, fc, 0))
            }
            "v_mac_f16" => {
                let acc = fm.src(2, u64::from(d_old) & 0xFFFF) as u16;
                u64::from(mode::mad16(a as u16, b as u16, acc, 0))
            }
            "v_mul_legacy_f32" => mode::mul_legacy32(fa, fb, 0).to_bits().into(),
            "v_min3_f32" => {
                let ab = mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, false, fm.ieee);
                mode::min_max(mode::S, ab, c & 0xFFFF_FFFF, false, fm.ieee)
            }
            "v_max3_f32" => {
                let ab = mode::min_max(mode::S, a & 0xFFFF_FFFF, b & 0xFFFF_FFFF, true, fm.ieee);
                mode::min_max(mode::S, ab, c & 0xFFFF_FFFF, true, fm.ieee)
            }
            "v_med3_f32" => mode::med3(
                mode::S,
                a & 0xFFFF_FFFF,
                b & 0xFFFF_FFFF,
                c & 0xFFFF_FFFF,
                fm.ieee,
            ),
            "v_add_f64" => (da + db).to_bits(),
            "v_mul_f64" => (da * db).to_bits(),
            "v_min_f64" => mode::min_max(mode::D, a, b, false, fm.ieee),
            "v_max_f64" => mode::min_max(mode::D, a, b, true, fm.ieee),
            "v_mul_i32_i24" => (sext24(a32) * sext24(b32)) as u32 as u64,
            "v_mul_hi_i32_i24" => ((sext24(a32) * sext24(b32)) >> 32) as u32 as u64,
            "v_mul_u32_u24" => ((a32 & 0xFF_FFFF) as u64 * (b32 & 0xFF_FFFF) as u64) as u32 as u64,
            "v_mul_hi_u32_u24" => ((a32 & 0xFF_FFFF) as u64 * (b32 & 0xFF_FFFF) as u64) >> 32,
            "v_mad_i32_i24" => (sext24(a32) * sext24(b32) + c32 as i32 as i64) as u32 as u64,
            "v_mad_u32_u24" => {
                ((a32 & 0xFF_FFFF)
                    .wrapping_mul(b32 & 0xFF_FFFF)
                    .wrapping_add(c32)) as u64
            }
            "v_min_i32" => (a32 as i32).min(b32 as i32) as u32 as u64,
            "v_max_i32" => (a32 as i32).max(b32 as i32) as u32 as u64,
            "v_min_u32" => a32.min(b32) as u64,
            "v_max_u32" => a32.max(b32) as u64,
            "v_min3_i32" => (a32 as i32).min(b32 as i32).min(c32 as i32) as u32 as u64,
            "v_max3_i32" => (a32 as i32).max(b32 as i32).max(c32 as i32) as u32 as u64,
            "v_min3_u32" => a32.min(b32).min(c32) as u64,
            "v_max3_u32" => a32.max(b32).max(c32) as u64,
            "v_med3_i32" => {
                let (x, y, z) = (a32 as i32, b32 as i32, c32 as i32);
                x.min(y).max(x.max(y).min(z)) as u32 as u64
            }
            "v_med3_u32" => a32.min(b32).max(a32.max(b32).min(c32)) as u64,
            "v_lshrrev_b32" => (b32 >> (a32 & 31)) as u64,
            "v_ashrrev_i32" => ((b32 as i32) >> (a32 & 31)) as u32 as u64,
            "v_lshlrev_b32" => (b32 << (a32 & 31)) as u64,
            "v_lshlrev_b64" => b << (a32 & 63),
            "v_lshrrev_b64" => b >> (a32 & 63),
            "v_ashrrev_i64" => ((b as i64) >> (a32 & 63)) as u64,
            "v_and_b32" => (a32 & b32) as u64,
            "v_or_b32" => (a32 | b32) as u64,
            "v_xor_b32" => (a32 ^ b32) as u64,
            "v_xnor_b32" => !(a32 ^ b32) as u64,
            "v_add_u32" => a32.wrapping_add(b32) as u64,
            "v_sub_u32" => a32.wrapping_sub(b32) as u64,
            "v_subrev_u32" => b32.wrapping_sub(a32) as u64,
            "v_add_co_u32" => {
                let t = a32 as u64 + b32 as u64;
                co = t >> 32 != 0;
                t as u32 as u64
            }
            "v_sub_co_u32" => {
                co = b32 > a32;
                a32.wrapping_sub(b32) as u64
            }
            "v_subrev_co_u32" => {
                co = a32 > b32;
                b32.wrapping_sub(a32) as u64
            }
            "v_addc_co_u32" => {
                let t = a32 as u64 + b32 as u64 + ci;
                co = t >> 32 != 0;
                t as u32 as u64
            }
            "v_subb_co_u32" => {
                co = b32 as u64 + ci > a32 as u64;
                (a32 as u64).wrapping_sub(b32 as u64 + ci) as u32 as u64
            }
            "v_subbrev_co_u32" => {
                co = a32 as u64 + ci > b32 as u64;
                (b32 as u64).wrapping_sub(a32 as u64 + ci) as u32 as u64
            }
            "v_cndmask_b32" => {
                if ci != 0 {
                    b32 as u64
                } else {
                    a32 as u64
                }
            }
            // 16-bit integer ops: the low halves; the result zero-extended to 32 bits, or
            // (VOP3 clamp) saturated for add/sub (Vega ISA VOP2 opcodes 38..50).
            "v_add_u16" | "v_sub_u16" | "v_subrev_u16" => {
                let (x, y) = if name == "v_subrev_u16" {
                    (b32 & 0xFFFF, a32 & 0xFFFF)
                } else {
                    (a32 & 0xFFFF, b32 & 0xFFFF)
                };
                let t = if name == "v_add_u16" {
                    x as i64 + y as i64
                } else {
                    x as i64 - y as i64
                };
                if mods.clamp {
                    t.clamp(0, 0xFFFF) as u64
                } else {
                    t as u64 & 0xFFFF
                }
            }
            "v_mul_lo_u16" => (a32 as u16).wrapping_mul(b32 as u16) as u64,
            "v_lshlrev_b16" => ((b32 as u16) << (a32 & 15)) as u64,
            "v_lshrrev_b16" => ((b32 as u16) >> (a32 & 15)) as u64,
            "v_ashrrev_i16" => ((b32 as i16) >> (a32 & 15)) as u16 as u64,
            "v_max_u16" => (a32 as u16).max(b32 as u16) as u64,
            "v_min_u16" => (a32 as u16).min(b32 as u16) as u64,
            "v_max_i16" => (a32 as i16).max(b32 as i16) as u16 as u64,
            "v_min_i16" => (a32 as i16).min(b32 as i16) as u16 as u64,
            "v_mul_lo_u32" => a32.wrapping_mul(b32) as u64,
            "v_mul_hi_u32" => (a32 as u64 * b32 as u64) >> 32,
            "v_mul_hi_i32" => ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as u32 as u64,
            "v_mad_u64_u32" => {
                let t = a32 as u128 * b32 as u128 + c as u128;
                co = t >> 64 != 0;
                t as u64
            }
            "v_mad_i64_i32" => {
                let t = a32 as i32 as i128 * b32 as i32 as i128 + c as i64 as i128;
                co = t > i64::MAX as i128 || t < i64::MIN as i128;
                t as u64
            }
            "v_bfe_u32" => bfe(a32 as u64, b32 & 31, c32 & 31, false, 32) as u32 as u64,
            // A field that reaches past bit 31 is S0 >> offset, arithmetic: the bits above
            // bit 31 are sign copies (gfx9 VALU BFE_I32, as D3D's ibfe; found by
            // gfx9_vcov's alu_ops_match_the_isa).
            "v_bfe_i32" if c32 & 31 != 0 && (b32 & 31) + (c32 & 31) > 32 => {
                ((a32 as i32) >> (b32 & 31)) as u32 as u64
            }
            "v_bfe_i32" => bfe(a32 as u64, b32 & 31, c32 & 31, true, 32) as u32 as u64,
            "v_bfi_b32" => ((a32 & b32) | (!a32 & c32)) as u64,
            "v_alignbit_b32" => ((((a32 as u64) << 32) | b32 as u64) >> (c32 & 31)) as u32 as u64,
            "v_perm_b32" => u64::from(perm_b32(a32, b32, c32)),
            "v_alignbyte_b32" => {
                ((((a32 as u64) << 32) | b32 as u64) >> (8 * (c32 & 3))) as u32 as u64
            }
            "v_add3_u32" => a32.wrapping_add(b32).wrapping_add(c32) as u64,
            "v_lshl_add_u32" => (a32 << (b32 & 31)).wrapping_add(c32) as u64,
            "v_add_lshl_u32" => (a32.wrapping_add(b32) << (c32 & 31)) as u64,
            "v_lshl_or_b32" => ((a32 << (b32 & 31)) | c32) as u64,
            "v_and_or_b32" => ((a32 & b32) | c32) as u64,
            "v_or3_b32" => (a32 | b32 | c32) as u64,
            "v_xad_u32" => (a32 ^ b32).wrapping_add(c32) as u64,
            // Vega ISA V_SAD_U32: the unsigned absolute difference plus S2.
            "v_sad_u32" => a32.abs_diff(b32).wrapping_add(c32) as u64,
            "v_lshl_add_u64" => (a << (b32 & 7)).wrapping_add(c),
            "v_bcnt_u32_b32" => a32.count_ones().wrapping_add(b32) as u64,
            "v_mbcnt_lo_u32_b32" => {
                let below = (1u64 << lane.min(32)) - 1;
                ((a32 as u64 & below).count_ones()).wrapping_add(b32) as u64
            }
            "v_mbcnt_hi_u32_b32" => {
                let below = if lane <= 32 {
                    0
                } else {
                    (1u64 << (lane - 32)) - 1
                };
                ((a32 as u64 & below).count_ones()).wrapping_add(b32) as u64
            }
            // Division and its helpers (fdiv.rs); reciprocal, square root, exp2/log2:
            // correctly rounded, within the 1 ULP the ISA states; invalid operands give the
            // ISA's default NaN.
            "v_rcp_f32" | "v_rcp_iflag_f32" => fr(1.0 / fa),
            "v_rsq_f32" => canon32(a32, (1.0 / f64::from(fa).sqrt()) as f32),
            "v_sqrt_f32" => canon32(a32, fa.sqrt()),
            "v_exp_f32" => fr(f64::from(fa).exp2() as f32),
            "v_log_f32" => canon32(a32, f64::from(fa).log2() as f32),
            "v_rcp_f64" => (1.0 / da).to_bits(),
            "v_rsq_f64" => canon64(a, 1.0 / da.sqrt()),
            "v_sqrt_f64" => canon64(a, da.sqrt()),
            "v_trunc_f64" => da.trunc().to_bits(),
            "v_ceil_f64" => da.ceil().to_bits(),
            "v_floor_f64" => da.floor().to_bits(),
            "v_rndne_f64" => da.round_ties_even().to_bits(),
            "v_fract_f64" => canon64(a, fract64(da)),
            "v_frexp_mant_f32" => fdiv::frexp_mant(fdiv::SINGLE, a32 as u64),
            "v_frexp_exp_i32_f32" => fdiv::frexp_exp(fdiv::SINGLE, a32 as u64) as u32 as u64,
            "v_frexp_mant_f64" => fdiv::frexp_mant(fdiv::DOUBLE, a),
            "v_frexp_exp_i32_f64" => fdiv::frexp_exp(fdiv::DOUBLE, a) as u32 as u64,
            "v_ldexp_f32" => fdiv::ldexp(fdiv::SINGLE, a32 as u64, b32 as i32),
            "v_ldexp_f64" => fdiv::ldexp(fdiv::DOUBLE, a, b32 as i32),
            // The exponent is src1's low 16 bits as an i16 (Vega ISA: `S0.f16 * 2 ** S1.i16`).
            "v_ldexp_f16" => fdiv::ldexp(fdiv::HALF, a & 0xFFFF, i32::from(b32 as u16 as i16)),
            "v_trig_preop_f64" => fdiv::trig_preop(a, b32),
            // Hardware sine/cosine: the argument in revolutions, `sin(2π·x)` (Vega ISA VOP1;
            // its accuracy is stated for |x| ≤ 256; here the host's value everywhere, ±∞ the
            // default NaN).
            "v_sin_f32" => canon32(a32, (f64::from(fa) * core::f64::consts::TAU).sin() as f32),
            "v_cos_f32" => canon32(a32, (f64::from(fa) * core::f64::consts::TAU).cos() as f32),
            // f16 transcendentals and helpers: the f64 result rounded once to f16.
            "v_rcp_f16" => f16_unary(a, |x| 1.0 / x),
            "v_sqrt_f16" => f16_unary(a, f64::sqrt),
            "v_rsq_f16" => f16_unary(a, |x| 1.0 / x.sqrt()),
            "v_log_f16" => f16_unary(a, f64::log2),
            "v_exp_f16" => f16_unary(a, f64::exp2),
            "v_sin_f16" => f16_unary(a, |x| (x * core::f64::consts::TAU).sin()),
            "v_cos_f16" => f16_unary(a, |x| (x * core::f64::consts::TAU).cos()),
            "v_fract_f16" => f16_unary(a, |x| (x - x.floor()).min(f16::to_f64(0x3BFF))),
            "v_frexp_mant_f16" => fdiv::frexp_mant(fdiv::HALF, a & 0xFFFF),
            "v_frexp_exp_i16_f16" => {
                u64::from(fdiv::frexp_exp(fdiv::HALF, a & 0xFFFF) as i16 as u16)
            }
            "v_fma_f64" => da.mul_add(db, f64::from_bits(c)).to_bits(),
            "v_fmac_f64" => da
                .mul_add(db, f64::from_bits(fm.src(2, acc64(w, lane))))
                .to_bits(),
            "v_div_scale_f32" => {
                let (r, v) = fdiv::div_scale(fdiv::SINGLE, a32 as u64, b32 as u64, c32 as u64);
                co = v;
                r
            }
            "v_div_scale_f64" => {
                let (r, v) = fdiv::div_scale(fdiv::DOUBLE, a, b, c);
                co = v;
                r
            }
            "v_div_fmas_f32" => {
                let v = vcc_in >> lane & 1 != 0;
                let (a, b, c) = (a32 as u64, b32 as u64, c32 as u64);
                let scale = fdiv::div_fmas_scale(fdiv::SINGLE, c, v);
                fm.div_fmas(name, a, b, c, scale)
                    .unwrap_or_else(|| fdiv::div_fmas(fdiv::SINGLE, a, b, c, v))
            }
            "v_div_fmas_f64" => {
                let v = vcc_in >> lane & 1 != 0;
                let scale = fdiv::div_fmas_scale(fdiv::DOUBLE, c, v);
                fm.div_fmas(name, a, b, c, scale)
                    .unwrap_or_else(|| fdiv::div_fmas(fdiv::DOUBLE, a, b, c, v))
            }
            "v_div_fixup_f32" => fdiv::div_fixup(fdiv::SINGLE, a32 as u64, b32 as u64, c32 as u64),
            "v_div_fixup_f64" => fdiv::div_fixup(fdiv::DOUBLE, a, b, c),
            "v_div_fixup_f16" => fdiv::div_fixup(fdiv::HALF, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF),
            _ => return Err(not_implemented(inst)),
        };
        let r = if fm.directed_rounding() {
            let acc = match name {
                "v_mac_f32" | "v_fmac_f32" => fm.src(2, u64::from(d_old)),
                "v_mac_f16" => fm.src(2, u64::from(d_old) & 0xFFFF),
                "v_fmac_f64" => fm.src(2, acc64(w, lane)),
                _ => c,
            };
            fm.directed(name, a, b, acc).unwrap_or(r)
        } else {
            r
        };
        let r = if f16_output(name) {
            let mut h = r as u16;
            match mods.omod {
                1 => h = f16::mul(h, 0x4000),
                2 => h = f16::mul(h, 0x4400),
                3 => h = f16::mul(h, 0x3800),
                _ => {}
            }
            if mods.clamp {
                h = fm.clamp16(h);
            }
            u64::from(h)
        } else if f32_in
            || name.ends_with("_f32") && !name.starts_with("v_cvt_")
            || cvt_to_f32(name)
        {
            let mut x = f32::from_bits(r as u32);
            if name.starts_with("v_cvt_") && !cvt_to_f32(name) {
                r
            } else {
                match mods.omod {
                    1 => x *= 2.0,
                    2 => x *= 4.0,
                    3 => x *= 0.5,
                    _ => {}
                }
                if mods.clamp {
                    x = fm.clamp32(x);
                }
                if mods.omod != 0 || mods.clamp {
                    x.to_bits() as u64
                } else {
                    r
                }
            }
        } else {
            r
        };
        let r = fm.result(r);
        let r = match mods.sdwa {
            Some(sd) if inst.encoding != Encoding::Vop3 => {
                sdwa_place(r as u32, d_old, sd.dst_sel, sd.dst_unused) as u64
            }
            _ => r,
        };
        set_vdst(w, &inst.dst, lane, r, out_w);
        carry_out |= (co as u64) << lane;
    }
    if writes_carry {
        set_sdst(w, &inst.sdst, carry_out);
    }
    Ok(())
}

/// f16 bits of the inline float constants 240..=248 (0.5, −0.5, 1, −1, 2, −2, 4, −4,
/// 1/(2π)) as a 16-bit packed operand reads them.
const F16_CONST: [u16; 9] = [
    0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118,
];

/// A VOP3P source as 64 bits: for 16-bit packed ops the low 32 bits are the two halves (an
/// inline float constant is its f16 value in the low half and 0 in the high half, an inline
/// integer its 32-bit sign extension); for the packed f32 ops the two dwords (an inline
/// constant or a single SGPR gives the same 32-bit value in both).
///
/// Ref: Vega ISA §6.2.2 "Packed math" and LLVM AMDGPU's pre-gfx11 packed inline-constant
/// rule (f16 constant in bits 15:0, zero above).
fn pk_src(w: &Wave, op: &Operand, lane: usize, wide: bool) -> u64 {
    match *op {
        Operand::InlineFloat(c) if !wide => u64::from(F16_CONST[(c - 240) as usize]),
        Operand::InlineFloat(_) | Operand::InlineInt(_) | Operand::Special(_) if wide => {
            let v = scalar(w, op, false, false) & 0xFFFF_FFFF;
            v | v << 32
        }
        _ => vsrc(w, op, lane, wide, false),
    }
}

/// The accumulating VOP2 forms of packed math (gfx908+, CDNA1 ISA VOP2 opcodes 55..=60):
/// `v_pk_fmac_f16` (each f16 half of D = S0 × S1 + D, fused, under MODE's f16 denormal mode
/// as `v_pk_fma_f16`) and `v_dot2c_f32_f16`, `v_dot2c_i32_i16`, `v_dot4c_i32_i8`,
/// `v_dot8c_i32_i4` (D = the dot product of S0 and S1 plus D, as [`dot`] computes
/// `v_dot2_f32_f16`, `v_dot2_i32_i16`, `v_dot4_i32_i8`, `v_dot8_i32_i4` with D as S2; the VOP3
/// form's `clamp` saturates the same way). With `DPP` src0 is `dpp_src0[lane]`.
///
/// # Errors
/// [`Status::IllegalInstruction`] for `neg`/`abs` on a dot product's packed f16 sources
/// (whether they act on one half or both is not modelled).
fn accumulate_packed<const DPP: bool>(
    w: &mut Wave,
    inst: &Instruction,
    lanes: u64,
    dpp_src0: &[u32; WAVE_SIZE],
) -> Result<()> {
    let name = inst.name();
    let m = inst.mods;
    if m.neg.iter().chain(&m.abs).any(|&b| b) {
        bail!(
            Status::IllegalInstruction,
            "{name}: neg/abs of a packed source: not modelled"
        );
    }
    let fm = mode::FloatMode::for_valu(w.mode, "v_pk_fma_f16", false, false, true);
    let kind = match name {
        "v_dot2c_f32_f16" => Some((16, false, true)),
        "v_dot2c_i32_i16" => Some((16, true, false)),
        "v_dot4c_i32_i8" => Some((8, true, false)),
        "v_dot8c_i32_i4" => Some((4, true, false)),
        _ => None,
    };
    for lane in (0..WAVE_SIZE).filter(|l| lanes >> l & 1 != 0) {
        let a = if DPP {
            dpp_src0[lane]
        } else {
            pk_src(w, &inst.src[0], lane, false) as u32
        };
        let b = pk_src(w, &inst.src[1], lane, false) as u32;
        let d = match inst.dst {
            Operand::Vgpr { index, .. } => w.v(index as usize, lane),
            _ => 0,
        };
        let r = match kind {
            Some((bits, signed, float)) => dot_value(bits, signed, float, [a, b, d], &m),
            None => {
                let half = |v: u32, k: u32| fm.src(0, u64::from(v >> (16 * k) & 0xFFFF)) as u16;
                let h = |k: u32| {
                    let (x, y, z) = (half(a, k), half(b, k), half(d, k));
                    let r = u64::from(f16::fma(x, y, z));
                    let r = if fm.round64 != 0 {
                        let wide = |v: u16| u64::from(v);
                        fm.directed(name, wide(x), wide(y), wide(z)).unwrap_or(r)
                    } else {
                        r
                    };
                    fm.result(r) as u32
                };
                h(0) | h(1) << 16
            }
        };
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
    Ok(())
}

/// The gfx906+ dot products: `v_dot2_f32_f16` (two f16 products plus an f32), and the
/// integer `v_dot2_{i32_i16,u32_u16}`, `v_dot4_{i32_i8,u32_u8}`, `v_dot8_{i32_i4,u32_u4}`
/// (the sum of the products of the packed elements plus a 32-bit integer; `clamp` saturates
/// the 32-bit result, else it wraps). The f16 form computes the exact sum (products of f16
/// values are exact in f64) and rounds it once to f32, then `clamp` limits it to [0, 1].
///
/// Ref: Vega 7nm (gfx906) ISA, VOP3P opcodes 35..=43; AMDGPUUsage dot1/dot2-insts.
///
/// # Errors
/// [`Status::IllegalInstruction`] when `op_sel`, `op_sel_hi` or the `neg` bits differ from
/// their defaults on an integer form (the ISA gives them no meaning there), or `op_sel`/
/// `op_sel_hi` do on the f16 form: not modelled.
fn dot(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    let m = inst.mods;
    let float = name == "v_dot2_f32_f16";
    let negs = m.neg.iter().any(|&n| n) || m.neg_hi != 0;
    if m.op_sel != 0 || m.op_sel_hi != 7 || (!float && negs) {
        bail!(
            Status::IllegalInstruction,
            "{name}: op_sel {:#x} op_sel_hi {:#x} neg_lo/neg_hi set: not modelled",
            m.op_sel,
            m.op_sel_hi
        );
    }
    let (bits, signed) = match name {
        "v_dot2_i32_i16" => (16, true),
        "v_dot2_u32_u16" => (16, false),
        "v_dot4_i32_i8" => (8, true),
        "v_dot4_u32_u8" => (8, false),
        "v_dot8_i32_i4" => (4, true),
        "v_dot8_u32_u4" => (4, false),
        _ => (16, false),
    };
    let exec = w.exec();
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let abc = core::array::from_fn(|i| vsrc(w, &inst.src[i], lane, false, false) as u32);
        let r = dot_value(bits, signed, float, abc, &m);
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
    Ok(())
}

/// One lane's dot product of `a` and `b` (packed elements of `bits` bits, signed or not, or
/// f16 pairs with `float`) plus `c`, under `m`'s `neg`/`neg_hi` (f16 form) and `clamp`.
fn dot_value(bits: u32, signed: bool, float: bool, [a, b, c]: [u32; 3], m: &Modifiers) -> u32 {
    {
        if float {
            let half = |v: u32, hi: bool, i: usize| {
                let x = f16::to_f64((v >> (16 * hi as u32)) as u16);
                let neg = if hi { m.neg_hi >> i & 1 != 0 } else { m.neg[i] };
                if neg {
                    -x
                } else {
                    x
                }
            };
            let sum = half(a, false, 0) * half(b, false, 1)
                + half(a, true, 0) * half(b, true, 1)
                + f64::from(f32::from_bits(c)) * if m.neg[2] { -1.0 } else { 1.0 };
            let mut r = sum as f32;
            if m.clamp {
                r = clamp01_f32(r);
            }
            r.to_bits()
        } else {
            let field = |v: u32, k: u32| -> i64 {
                let x = (v >> (k * bits)) & ((1 << bits) - 1);
                if signed {
                    i64::from((x << (32 - bits)) as i32 >> (32 - bits))
                } else {
                    i64::from(x)
                }
            };
            let acc = if signed {
                i64::from(c as i32)
            } else {
                i64::from(c)
            };
            let sum = (0..32 / bits).fold(acc, |s, k| s + field(a, k) * field(b, k));
            match (m.clamp, signed) {
                (true, true) => sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
                (true, false) => sum.clamp(0, i64::from(u32::MAX)) as u32,
                _ => sum as u32,
            }
        }
    }
}

/// `x` clamped to [0, 1] (the VOP3 `clamp` bit): NaN and −0 give +0.
fn clamp01_f32(x: f32) -> f32 {
    if x.is_nan() || x <= 0.0 {
        0.0
    } else {
        x.min(1.0)
    }
}

/// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16` (gfx906+): a fused multiply-add
/// whose sources are each an f32 (`op_sel_hi` bit 0) or the low/high f16 half (`op_sel_hi`
/// bit 1, `op_sel` picking the half), with `abs` (the `neg_hi` bits) then `neg`. `_f32`
/// writes the f32 result; `mixlo`/`mixhi` round the exact result once to f16 into the low or
/// high half, keeping the other half. `clamp` limits the result to [0, 1].
///
/// `v_mad_mix_f32`, `v_mad_mixlo_f16`, `v_mad_mixhi_f16` (gfx900, the same opcodes and
/// operands): not fused. The product is rounded to f32 first, and f32 denormals (sources,
/// product, `_f32`'s result) are flushed whatever MODE says, as for `v_mad_f32`: LLVM selects
/// them for `fmad` only when f32 denormals are flushed, and Mesa's ACO treats Vega 10's mix
/// instructions as unfused. The sum is then rounded once to the result's precision. An f16
/// source is exact in f32, so with f16 sources only the sum's rounding differs from fma.
///
/// MODE (the fused forms): each source is flushed when it is a denormal of its own precision
/// (f32 or f16) and that precision's FP_DENORM flushes inputs; the result is rounded by the
/// FP_ROUND of the destination's precision (`[1:0]` for `_f32`, `[3:2]` for `mixlo`/`mixhi`)
/// and flushed by that precision's output denormal mode, as every VALU float operation
/// (Vega ISA §3.8 "Mode register" gives FP_ROUND and FP_DENORM per precision of the
/// operation). The unfused gfx900 forms keep their fixed flushing above and are refused under
/// a directed FP_ROUND ([`mode::round_unsupported`]): which mode rounds their f32 product
/// when the result is f16 is not documented.
///
/// Ref: Vega ISA and Vega 7nm ISA, VOP3P opcodes 32..=34.
fn fma_mix(w: &mut Wave, inst: &Instruction) {
    let m = inst.mods;
    let name = inst.name();
    let fused = name.starts_with("v_fma_mix");
    let exec = w.exec();
    let to_f16 = !name.ends_with("mix_f32");
    let (keep32, keep16) = (mode::f32_denorm(w.mode), mode::f64_f16_denorm(w.mode));
    let (rm, fmt, keep_out) = if to_f16 {
        (mode::fp_round(w.mode) >> 2, round::F16, keep16 & 2 != 0)
    } else {
        (mode::fp_round(w.mode) & 3, round::F32, keep32 & 2 != 0)
    };
    let rm = if fused { rm } else { round::NEAREST };
    let keep_out = !fused && to_f16 || fused && keep_out;
    let fl = |x: f32| -> f32 {
        if fused && keep32 & 1 != 0 {
            x
        } else {
            f32::from_bits(mode::flush(mode::Kind::F32, u64::from(x.to_bits())) as u32)
        }
    };
    let fl16 = |h: u16| -> u16 {
        if fused && keep16 & 1 == 0 {
            mode::flush(mode::Kind::F16, u64::from(h)) as u16
        } else {
            h
        }
    };
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let x: [f32; 3] = core::array::from_fn(|i| {
            let v = vsrc(w, &inst.src[i], lane, false, false) as u32;
            let mut x = if m.op_sel_hi >> i & 1 != 0 {
                let h = if m.op_sel >> i & 1 != 0 { v >> 16 } else { v };
                f16::to_f64(fl16(h as u16)) as f32
            } else {
                fl(f32::from_bits(v))
            };
            if m.abs[i] {
                x = x.abs();
            }
            if m.neg[i] {
                x = -x;
            }
            x
        });
        let old = vsrc_dword(w, &inst.dst, lane, 0);
        // The product: exact in f64 for fma; rounded to f32 and flushed for mad.
        let p = if fused {
            f64::from(x[0]) * f64::from(x[1])
        } else {
            f64::from(fl(x[0] * x[1]))
        };
        let directed = if rm != round::NEAREST {
            let [a, b, c] = x.map(f64::from);
            round::fma(a, b, c, fmt, rm)
        } else {
            None
        };
        let r = if name.ends_with("mix_f32") {
            let mut r = if fused {
                directed.map_or_else(|| x[0].mul_add(x[1], x[2]), |d| f32::from_bits(d as u32))
            } else {
                fl(p as f32 + x[2])
            };
            if !keep_out {
                r = f32::from_bits(mode::flush(mode::Kind::F32, u64::from(r.to_bits())) as u32);
            }
            if m.clamp {
                r = clamp01_f32(r);
            }
            r.to_bits()
        } else {
            // Both products are exact in f64 and so is the sum's rounding error (two-sum):
            // the f16 rounding sees the exact result.
            let c = f64::from(x[2]);
            let s = p + c;
            let bb = s - p;
            let err = (p - (s - bb)) + (c - bb);
            let mut h = directed.map_or_else(|| f16::from_f64_sticky(s, err), |d| d as u16);
            if !keep_out {
                h = mode::flush(mode::Kind::F16, u64::from(h)) as u16;
            }
            if m.clamp {
                h = f16::clamp01(h);
            }
            let h = u32::from(h);
            if name.ends_with("mixlo_f16") {
                old & 0xFFFF_0000 | h
            } else {
                old & 0xFFFF | h << 16
            }
        };
        set_vdst_dword(w, &inst.dst, lane, 0, r);
    }
}

/// Packed math: each result half (16-bit ops) or dword (`_f32`/`_b32` ops) computed from the
/// halves of the sources that `op_sel` (low result) and `op_sel_hi` (high result) select,
/// with `neg_lo`/`neg_hi` negating float sources, then `clamp` ([0, 1] for floats,
/// saturation for integer add/sub/mad).
///
/// Ref: Vega ISA §12.10 "VOP3P" and the VOP3P opcode table; CDNA2 ISA for `V_PK_FMA_F32`,
/// `V_PK_MUL_F32`, `V_PK_ADD_F32` and `V_PK_MOV_B32`.
fn vop3p(w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    if name.starts_with("v_dot") {
        return dot(w, inst);
    }
    if name.starts_with("v_fma_mix") || name.starts_with("v_mad_mix") {
        fma_mix(w, inst);
        return Ok(());
    }
    let mods = inst.mods;
    let wide = inst.info.widths[0] == 2;
    let nsrc = inst.src.iter().filter(|o| **o != Operand::None).count();
    let exec = w.exec();
    let float = name.ends_with("f16") || name.ends_with("f32");
    let fm = mode::FloatMode::for_valu(w.mode, name, wide && float, false, !wide && float);
    if !float && (mods.neg.iter().any(|&n| n) || mods.neg_hi != 0) && name != "v_pk_mov_b32" {
        return Err(error!(
            Status::IllegalInstruction,
            "{name}: neg_lo/neg_hi on an integer packed op"
        ));
    }
    let int_clamp_ok = matches!(
        name,
        "v_pk_add_u16"
            | "v_pk_sub_u16"
            | "v_pk_add_i16"
            | "v_pk_sub_i16"
            | "v_pk_mad_u16"
            | "v_pk_mad_i16"
    );
    if mods.clamp && !float && !int_clamp_ok {
        return Err(error!(
            Status::IllegalInstruction,
            "{name}: clamp not implemented for this op"
        ));
    }
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let raw: [u64; 3] = core::array::from_fn(|i| {
            if i < nsrc {
                pk_src(w, &inst.src[i], lane, wide)
            } else {
                0
            }
        });
        let mut out = [0u64; 2];
        for (h, slot) in out.iter_mut().enumerate() {
            let sel = if h == 0 { mods.op_sel } else { mods.op_sel_hi };
            let neg = |i: usize| {
                if h == 0 {
                    mods.neg[i]
                } else {
                    mods.neg_hi >> i & 1 != 0
                }
            };
            if wide {
                let x: [u32; 3] = core::array::from_fn(|i| {
                    let v = (raw[i] >> (32 * (sel >> i & 1) as u32)) as u32;
                    let v = if neg(i) && name != "v_pk_mov_b32" {
                        v ^ 0x8000_0000
                    } else {
                        v
                    };
                    fm.src(i, u64::from(v)) as u32
                });
                let f = |i: usize| f32::from_bits(x[i]);
                let r = match name {
                    "v_pk_fma_f32" => f(0).mul_add(f(1), f(2)),
                    "v_pk_mul_f32" => f(0) * f(1),
                    "v_pk_add_f32" => f(0) + f(1),
                    "v_pk_mov_b32" => {
                        // D.lo = op_sel[0] ? S0.hi : S0.lo; D.hi = op_sel[1] ? S1.hi : S1.lo.
                        let v = (raw[h] >> (32 * (mods.op_sel >> h & 1) as u32)) as u32;
                        *slot = u64::from(v);
                        continue;
                    }
                    _ => return Err(not_implemented(inst)),
                };
                let r = if fm.round32 != 0 {
                    let bits = |i: usize| u64::from(x[i]);
                    fm.directed(name, bits(0), bits(1), bits(2))
                        .map_or(r, |d| f32::from_bits(d as u32))
                } else {
                    r
                };
                let r = if mods.clamp { fm.clamp32(r) } else { r };
                *slot = fm.result(u64::from(r.to_bits()));
                continue;
            }
            let x: [u16; 3] = core::array::from_fn(|i| {
                let v = (raw[i] >> (16 * (sel >> i & 1) as u32)) as u16;
                let v = if float && neg(i) { v ^ 0x8000 } else { v };
                fm.src(i, u64::from(v)) as u16
            });
            let (a, b, c) = (x[0], x[1], x[2]);
            let (ai, bi, ci) = (a as i16 as i64, b as i16 as i64, c as i16 as i64);
            let (au, bu, cu) = (a as i64, b as i64, c as i64);
            let sat_u = |v: i64| -> u16 {
                if mods.clamp {
                    v.clamp(0, 0xFFFF) as u16
                } else {
                    v as u16
                }
            };
            let sat_i = |v: i64| -> u16 {
                if mods.clamp {
                    v.clamp(-0x8000, 0x7FFF) as u16
                } else {
                    v as u16
                }
            };
            let r: u16 = match name {
                "v_pk_mad_i16" => sat_i(ai * bi + ci),
                "v_pk_mad_u16" => sat_u(au * bu + cu),
                "v_pk_mul_lo_u16" => a.wrapping_mul(b),
                "v_pk_add_i16" => sat_i(ai + bi),
                "v_pk_sub_i16" => sat_i(ai - bi),
                "v_pk_add_u16" => sat_u(au + bu),
                "v_pk_sub_u16" => sat_u(au - bu),
                "v_pk_lshlrev_b16" => b << (a & 15),
                "v_pk_lshrrev_b16" => b >> (a & 15),
                "v_pk_ashrrev_i16" => ((b as i16) >> (a & 15)) as u16,
                "v_pk_max_i16" => ai.max(bi) as u16,
                "v_pk_min_i16" => ai.min(bi) as u16,
                "v_pk_max_u16" => a.max(b),
                "v_pk_min_u16" => a.min(b),
                "v_pk_fma_f16" => f16::fma(a, b, c),
                "v_pk_add_f16" => f16::add(a, b),
                "v_pk_mul_f16" => f16::mul(a, b),
                "v_pk_min_f16" => mode::min_max(mode::H, a.into(), b.into(), false, fm.ieee) as u16,
                "v_pk_max_f16" => mode::min_max(mode::H, a.into(), b.into(), true, fm.ieee) as u16,
                _ => return Err(not_implemented(inst)),
            };
            let r = if float && fm.round64 != 0 {
                let d = fm.directed(name, a.into(), b.into(), c.into());
                d.map_or(r, |d| d as u16)
            } else {
                r
            };
            let r = if float && mods.clamp {
                fm.clamp16(r)
            } else {
                r
            };
            *slot = fm.result(u64::from(r));
        }
        if wide {
            set_vdst(w, &inst.dst, lane, out[0] | out[1] << 32, 2);
        } else {
            set_vdst(w, &inst.dst, lane, out[0] | out[1] << 16, 1);
        }
    }
    Ok(())
}

/// The bits `sel` of `v`, zero- or (`sext`) sign-extended to 32 bits (SDWA `SRC*_SEL`).
fn sdwa_select(v: u32, sel: SdwaSel, sext: bool) -> u32 {
    let (shift, n) = sel.bits();
    if n == 32 {
        return v;
    }
    let x = v >> shift & ((1 << n) - 1);
    if sext && x >> (n - 1) & 1 != 0 {
        x | !((1 << n) - 1)
    } else {
        x
    }
}

/// A 32-bit result `r` placed in the destination per SDWA `DST_SEL`: its low bits go to the
/// selected byte/word; the other bits are zeros (`dst_unused` 0), zeros below and the
/// result's sign above (1), or `old`'s (2).
fn sdwa_place(r: u32, old: u32, sel: SdwaSel, unused: u8) -> u32 {
    let (shift, n) = sel.bits();
    if n == 32 {
        return r;
    }
    let field = ((1u32 << n) - 1) << shift;
    let placed = (r << shift) & field;
    match unused {
        0 => placed,
        1 => {
            let below = (1u32 << shift) - 1;
            let above = !(field | below);
            if r >> (n - 1) & 1 != 0 {
                placed | above
            } else {
                placed
            }
        }
        _ => placed | old & !field,
    }
}

/// The lane whose src0 lane `lane` reads under DPP control `ctrl`, or `None` when that is
/// out of range (Vega ISA §12.7 "DPP_CTRL").
fn dpp_source(ctrl: u16, lane: usize) -> Option<usize> {
    let row = lane & !15;
    let pos = lane & 15;
    let n = (ctrl & 15) as usize;
    match ctrl {
        0x000..=0x0FF => Some((lane & !3) + (ctrl as usize >> (2 * (lane & 3)) & 3)),
        0x101..=0x10F => (pos + n < 16).then_some(lane + n),
        0x111..=0x11F => (pos >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + (pos + 16 - n) % 16),
        0x130 => (lane < 63).then_some(lane + 1),
        0x134 => Some((lane + 1) % 64),
        0x138 => lane.checked_sub(1),
        0x13C => Some((lane + 63) % 64),
        0x140 => Some(row + 15 - pos),
        0x141 => Some((lane & !7) + 7 - (lane & 7)),
        // row_bcast:15: row r > 0 reads the last lane of row r - 1.
        0x142 => (row > 0).then(|| row - 1),
        // row_bcast:31: rows 2 and 3 read lane 31.
        0x143 => (row >= 32).then_some(31),
        // gfx90a row_newbcast:n: every lane of a row reads lane n of its row.
        0x150..=0x15F => Some(row + n),
        _ => None,
    }
}

/// A DPP instruction: every lane's src0 is fetched from its source lane before any lane
/// writes; lanes masked by row/bank mask, or with no source lane and no `bound_ctrl`, keep
/// their destination.
fn valu_dpp(w: &mut Wave, inst: &Instruction, d: Dpp) -> Result<()> {
    let Operand::Vgpr { index, .. } = inst.src[0] else {
        return Err(not_implemented(inst));
    };
    let r = index as usize;
    let exec = w.exec();
    let mut src0 = [0u32; WAVE_SIZE];
    let mut lanes = 0u64;
    for lane in (0..WAVE_SIZE).filter(|&l| exec >> l & 1 != 0 && dpp_writes(d, l)) {
        src0[lane] = match dpp_source(d.ctrl, lane).filter(|&s| exec >> s & 1 != 0) {
            Some(s) => w.v(r, s),
            None if d.bound_ctrl => 0,
            None => continue,
        };
        lanes |= 1 << lane;
    }
    valu::<true>(w, inst, lanes, &src0)
}

/// `v` with a 32-bit float's `abs` then `neg` applied when `f32_in`.
fn float_mods32(mut v: u64, f32_in: bool, abs: bool, neg: bool) -> u64 {
    if f32_in {
        if abs {
            v &= 0x7FFF_FFFF;
        }
        if neg {
            v ^= 0x8000_0000;
        }
    }
    v
}

/// Whether DPP lets `lane` write: its row's bit in `row_mask` and its bank's (lanes 4k..4k+3
/// of the row) in `bank_mask`.
fn dpp_writes(d: Dpp, lane: usize) -> bool {
    d.row_mask >> (lane / 16) & 1 != 0 && d.bank_mask >> (lane % 16 / 4) & 1 != 0
}

fn lds_read(lds: &[u8], addr: u64, buf: &mut [u8]) {
    let n = buf.len();
    match usize::try_from(addr)
        .ok()
        .and_then(|a| lds.get(a..a.checked_add(n)?))
    {
        Some(src) => buf.copy_from_slice(src),
        None => buf.fill(0),
    }
}

fn lds_write(lds: &mut [u8], addr: u64, data: &[u8]) {
    let n = data.len();
    if let Some(dst) = usize::try_from(addr).ok().and_then(|a| {
        let end = a.checked_add(n)?;
        lds.get_mut(a..end)
    }) {
        dst.copy_from_slice(data);
    }
}

fn ds(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    if inst.mods.gds {
        return Err(error!(
            Status::IllegalInstruction,
            "{}: GDS not implemented",
            inst.name()
        ));
    }
    let name = inst.name();
    let exec = w.exec();
    let o0 = (inst.imm & 0xFF) as u64;
    let o1 = (inst.imm >> 8 & 0xFF) as u64;
    let offset = inst.imm as u64;
    let wd = inst.info.widths;
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let base = vsrc(w, &inst.src[0], lane, false, false) as u32 as u64;
        let d0 = vsrc(w, &inst.src[1], lane, wd[2] == 2, false);
        let d1 = vsrc(w, &inst.src[2], lane, wd[3] == 2, false);
        let mut b = [0u8; 16];
        match name {
            "ds_write_b8" => lds_write(ctx.lds, base + offset, &[d0 as u8]),
            "ds_write_b16" => lds_write(ctx.lds, base + offset, &(d0 as u16).to_le_bytes()),
            "ds_write_b32" => lds_write(ctx.lds, base + offset, &(d0 as u32).to_le_bytes()),
            "ds_write_b64" => lds_write(ctx.lds, base + offset, &d0.to_le_bytes()),
            "ds_write_b128" => {
                let r = match inst.src[1] {
                    Operand::Vgpr { index, .. } => index as usize,
                    _ => 0,
                };
                for k in 0..4 {
                    b[k * 4..k * 4 + 4].copy_from_slice(&w.v(r + k, lane).to_le_bytes());
                }
                lds_write(ctx.lds, base + offset, &b);
            }
            "ds_write2_b32" | "ds_write2st64_b32" | "ds_write2_b64" | "ds_write2st64_b64" => {
                let size = if name.ends_with("b64") { 8 } else { 4 };
                let scale = if name.contains("st64") {
                    size * 64
                } else {
                    size
                };
                let (v0, v1) = (d0.to_le_bytes(), d1.to_le_bytes());
                lds_write(ctx.lds, base + o0 * scale, &v0[..size as usize]);
                lds_write(ctx.lds, base + o1 * scale, &v1[..size as usize]);
            }
            "ds_read_b32" | "ds_read_u8" | "ds_read_i8" | "ds_read_u16" | "ds_read_i16"
            | "ds_read_b64" | "ds_read_b128" => {
                let n = match name {
                    "ds_read_u8" | "ds_read_i8" => 1,
                    "ds_read_u16" | "ds_read_i16" => 2,
                    "ds_read_b32" => 4,
                    "ds_read_b64" => 8,
                    _ => 16,
                };
                lds_read(ctx.lds, base + offset, &mut b[..n]);
                let lo = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
                let v = match name {
                    "ds_read_i8" => lo as u8 as i8 as i32 as u32 as u64,
                    "ds_read_i16" => lo as u16 as i16 as i32 as u32 as u64,
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
            "ds_read2_b32" | "ds_read2st64_b32" | "ds_read2_b64" | "ds_read2st64_b64" => {
                let size = if name.ends_with("b64") { 8usize } else { 4 };
                let scale = if name.contains("st64") {
                    size as u64 * 64
                } else {
                    size as u64
                };
                lds_read(ctx.lds, base + o0 * scale, &mut b[..size]);
                let (lo, hi) = b.split_at_mut(size);
                lds_read(ctx.lds, base + o1 * scale, &mut hi[..size]);
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
            "ds_add_u32" | "ds_sub_u32" | "ds_min_u32" | "ds_max_u32" | "ds_and_b32"
            | "ds_or_b32" | "ds_xor_b32" | "ds_add_rtn_u32" => {
                let addr = base + offset;
                lds_read(ctx.lds, addr, &mut b[..4]);
                let old = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let v = d0 as u32;
                let new = match name {
                    "ds_add_u32" | "ds_add_rtn_u32" => old.wrapping_add(v),
                    "ds_sub_u32" => old.wrapping_sub(v),
                    "ds_min_u32" => old.min(v),
                    "ds_max_u32" => old.max(v),
                    "ds_and_b32" => old & v,
                    "ds_or_b32" => old | v,
                    _ => old ^ v,
                };
                lds_write(ctx.lds, addr, &new.to_le_bytes());
                set_vdst(w, &inst.dst, lane, old as u64, 1);
            }
            // D16 forms (Vega ISA DS opcodes 84..91): the high half of the data is stored; a
            // read replaces one half of the VGPR, keeping the other.
            "ds_write_b8_d16_hi" => lds_write(ctx.lds, base + offset, &[(d0 >> 16) as u8]),
            "ds_write_b16_d16_hi" => {
                lds_write(ctx.lds, base + offset, &((d0 >> 16) as u16).to_le_bytes())
            }
            "ds_read_u8_d16" | "ds_read_u8_d16_hi" | "ds_read_i8_d16" | "ds_read_i8_d16_hi"
            | "ds_read_u16_d16" | "ds_read_u16_d16_hi" => {
                let wide = name.starts_with("ds_read_u16");
                lds_read(ctx.lds, base + offset, &mut b[..if wide { 2 } else { 1 }]);
                let h = if wide {
                    u16::from_le_bytes([b[0], b[1]])
                } else if name.starts_with("ds_read_i8") {
                    b[0] as i8 as i16 as u16
                } else {
                    u16::from(b[0])
                };
                let old = vsrc_dword(w, &inst.dst, lane, 0);
                let v = if name.ends_with("_hi") {
                    old & 0xFFFF | u32::from(h) << 16
                } else {
                    old & 0xFFFF_0000 | u32::from(h)
                };
                set_vdst_dword(w, &inst.dst, lane, 0, v);
            }
            "ds_wrxchg2_rtn_b32"
            | "ds_wrxchg2st64_rtn_b32"
            | "ds_wrxchg2_rtn_b64"
            | "ds_wrxchg2st64_rtn_b64" => {
                // Two exchanges, each address scaled as ds_write2[st64]'s; the old values go
                // to the destination in offset order (dword pair or qword pair).
                let size = if name.ends_with("b64") { 8usize } else { 4 };
                let scale = size as u64 * if name.contains("st64") { 64 } else { 1 };
                for (k, (o, d)) in [(o0, d0), (o1, d1)].into_iter().enumerate() {
                    let addr = base + o * scale;
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
            "ds_condxchg32_rtn_b64" => {
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
            _ if name.contains("_src2_") => ds_src2(ctx.lds, inst, base)?,
            _ => {
                let (op, wide) = ds_atomic_kind(name).ok_or_else(|| not_implemented(inst))?;
                let addr = base + offset;
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
fn ds_src2(lds: &mut [u8], inst: &Instruction, a: u64) -> Result<()> {
    let name = inst.name();
    let rest = name
        .strip_prefix("ds_")
        .unwrap_or(name)
        .replace("_src2", "");
    let (op, wide) = match ds_atomic_kind(&format!("ds_{rest}")) {
        Some(k) => k,
        None if rest == "write_b32" => ("wrxchg", false),
        None if rest == "write_b64" => ("wrxchg", true),
        None => return Err(not_implemented(inst)),
    };
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

/// The operation and width (64-bit: true) of an LDS atomic mnemonic other than the
/// `ds_add_u32` group `ds` handles itself: `ds_<op>[_rtn]_<type>`, e.g. `("min_i", false)` for
/// `ds_min_rtn_i32`; `None` for any other DS instruction.
fn ds_atomic_kind(name: &str) -> Option<(&'static str, bool)> {
    let rest = name.strip_prefix("ds_")?.replace("_rtn", "");
    let (op, ty) = rest.rsplit_once('_')?;
    let wide = match ty {
        "u32" | "i32" | "b32" | "f32" => false,
        "u64" | "i64" | "b64" | "f64" => true,
        _ => return None,
    };
    let kind = ty.as_bytes()[0];
    Some(match (op, kind) {
        ("add", b'u') => "add",
        ("add", b'f') if !wide => "add_f",
        ("sub", b'u') => "sub",
        ("rsub", b'u') => "rsub",
        ("inc", b'u') => "inc",
        ("dec", b'u') => "dec",
        ("min", b'i') => "min_i",
        ("max", b'i') => "max_i",
        ("min", b'u') => "min_u",
        ("max", b'u') => "max_u",
        ("min", b'f') => "min_f",
        ("max", b'f') => "max_f",
        ("and", b'b') => "and",
        ("or", b'b') => "or",
        ("xor", b'b') => "xor",
        ("mskor", b'b') => "mskor",
        ("cmpst", b'b') => "cmpst",
        ("cmpst", b'f') => "cmpst_f",
        ("wrxchg", b'b') => "wrxchg",
        ("wrap", b'b') if !wide => "wrap",
        _ => return None,
    })
    .map(|op| (op, wide))
}

/// The new LDS value of atomic `op` ([`ds_atomic_kind`]) on the old value `old` with the
/// instruction's DATA0 `d0` and DATA1 `d1`, 32 or (`wide`) 64 bits (Vega ISA §12.13 "DS"
/// opcode descriptions): `rsub` is `d0 − old`; `inc` wraps to 0 when `old ≥ d0`, `dec` to
/// `d0` when `old` is 0 or above `d0`; `mskor` is `(old & !d0) | d1`; `cmpst` stores `d1`
/// when `old` equals `d0` (the compare value first, the opposite of the MUBUF/FLAT
/// `cmpswap` order; the f32/f64 forms compare as floats: −0 equals +0, a NaN nothing);
/// `wrap` is `old ≥ d0 ? old − d0 : old + d1`; f32/f64 min/max follow IEEE 754 minNum/maxNum
/// with −0 below +0 (a NaN loses to a number; two NaNs keep the old value); `add_f` is an
/// f32 add rounded to nearest even, denormals kept.
fn ds_atomic_value(op: &str, wide: bool, old: u64, d0: u64, d1: u64) -> u64 {
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
        "add" => o.wrapping_add(a),
        "sub" => o.wrapping_sub(a),
        "rsub" => a.wrapping_sub(o),
        "inc" => {
            if o >= a {
                0
            } else {
                o + 1
            }
        }
        "dec" => {
            if o == 0 || o > a {
                a
            } else {
                o - 1
            }
        }
        "min_i" => signed(o).min(signed(a)) as u64,
        "max_i" => signed(o).max(signed(a)) as u64,
        "min_u" => o.min(a),
        "max_u" => o.max(a),
        "min_f" => min_max(false),
        "max_f" => min_max(true),
        "add_f" => u64::from((f32::from_bits(o as u32) + f32::from_bits(a as u32)).to_bits()),
        "and" => o & a,
        "or" => o | a,
        "xor" => o ^ a,
        "mskor" => (o & !a) | b,
        "cmpst" => {
            if o == a {
                b
            } else {
                o
            }
        }
        "cmpst_f" => {
            if float(o) == float(a) {
                b
            } else {
                o
            }
        }
        "wrxchg" => a,
        "wrap" => {
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

/// Whether `name` is one of the DS instructions that move data between the lanes of a wave
/// without touching LDS (Vega ISA §12.13 "LDS and GDS instructions": `DS_SWIZZLE_B32`,
/// `DS_PERMUTE_B32`, `DS_BPERMUTE_B32`).
fn ds_lane_op(name: &str) -> bool {
    matches!(
        name,
        "ds_swizzle_b32" | "ds_permute_b32" | "ds_bpermute_b32"
    )
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
fn swizzle_source(offset: u32, lane: usize) -> usize {
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
fn ds_lanes(w: &mut Wave, inst: &Instruction) -> Result<()> {
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
    match inst.name() {
        "ds_swizzle_b32" => {
            for (lane, o) in out.iter_mut().enumerate() {
                let src = swizzle_source(offset, lane);
                if active(src) {
                    *o = vsrc(w, &inst.src[0], src, false, false) as u32;
                }
            }
        }
        "ds_bpermute_b32" => {
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

/// Where one lane's access goes.
#[derive(Clone, Copy, Debug)]
enum Space {
    /// A device address (the scratch backing window included).
    Global(u64),
    /// A byte offset in the work-group's LDS.
    Lds(u64),
    /// A lane-relative private offset in the wave's scratch at `base` (an address in the
    /// scratch backing window), swizzled per dword with the lane.
    Private { base: u64, offset: u32 },
}

/// The address of byte `offset` of lane `lane`'s private segment in a wave's swizzled
/// scratch: dword `offset / 4` of the 64 lanes is one 256-byte row (Vega ISA §9.3.3 "Scratch
/// (private) buffer": element size 4, index stride 64).
fn swizzle(base: u64, offset: u32, lane: usize) -> u64 {
    base.wrapping_add(u64::from(offset / 4) * 256 + lane as u64 * 4 + u64::from(offset % 4))
}

/// Reads `buf.len()` bytes at `addr` of device memory, or of the running group's scratch
/// backing when `addr` is in its window (outside the backing: zeros, as scratch's bounds
/// check returns).
fn read_global(ctx: &Ctx<'_, '_>, addr: u64, buf: &mut [u8]) -> Result<()> {
    if let Some(o) = addr.checked_sub(SCRATCH_BACKING_BASE) {
        if o < 1 << 40 {
            let src = usize::try_from(o)
                .ok()
                .and_then(|o| ctx.scratch.get(o..o.checked_add(buf.len())?));
            match src {
                Some(src) => buf.copy_from_slice(src),
                None => buf.fill(0),
            }
            return Ok(());
        }
    }
    ctx.memory.read(addr, buf)
}

/// Writes `data` at `addr` of device memory or of the group's scratch backing (dropped
/// outside the backing).
fn write_global(ctx: &mut Ctx<'_, '_>, addr: u64, data: &[u8]) -> Result<()> {
    if let Some(o) = addr.checked_sub(SCRATCH_BACKING_BASE) {
        if o < 1 << 40 {
            let n = data.len();
            if let Some(dst) = usize::try_from(o)
                .ok()
                .and_then(|o| ctx.scratch.get_mut(o..o.checked_add(n)?))
            {
                dst.copy_from_slice(data);
            }
            return Ok(());
        }
    }
    ctx.memory.write(addr, data)
}

/// Reads `buf.len()` bytes of lane `lane` at `space`.
fn space_read(ctx: &Ctx<'_, '_>, space: Space, lane: usize, buf: &mut [u8]) -> Result<()> {
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
fn space_write(ctx: &mut Ctx<'_, '_>, space: Space, lane: usize, data: &[u8]) -> Result<()> {
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
/// scratch (private to the running work-group) by read-modify-write.
fn space_atomic(
    ctx: &mut Ctx<'_, '_>,
    space: Space,
    lane: usize,
    wide: bool,
    f: &mut dyn FnMut(u64) -> u64,
) -> Result<u64> {
    if let Space::Global(a) = space {
        let in_scratch = a
            .checked_sub(SCRATCH_BACKING_BASE)
            .is_some_and(|o| o < 1 << 40);
        if !in_scratch {
            return if wide {
                ctx.memory.atomic_rmw_u64(a, f)
            } else {
                ctx.memory
                    .atomic_rmw_u32(a, &mut |old| f(u64::from(old)) as u32)
                    .map(u64::from)
            };
        }
    }
    let n = if wide { 8 } else { 4 };
    let mut b = [0u8; 8];
    space_read(ctx, space, lane, &mut b[..n])?;
    let old = u64::from_le_bytes(b);
    let new = f(old);
    space_write(ctx, space, lane, &new.to_le_bytes()[..n])?;
    Ok(old)
}

/// Bytes a load or store of type `ty` (the mnemonic after `load_`/`store_`) moves, with
/// `dwords` data registers.
fn access_bytes(ty: &str, dwords: u8) -> usize {
    // The sub-dword types, with or without the `_d16`/`_d16_hi` half-register forms.
    if ty.starts_with("ubyte") || ty.starts_with("sbyte") || ty.starts_with("byte") {
        1
    } else if ty.starts_with("ushort") || ty.starts_with("sshort") || ty.starts_with("short") {
        2
    } else {
        dwords as usize * 4
    }
}

/// Writes the bytes a load of type `ty` read (`b[..n]`) to the destination registers of
/// lane `lane` (sign- or zero-extending sub-dword loads).
fn load_result(w: &mut Wave, dst: &Operand, lane: usize, ty: &str, b: &[u8; 16], n: usize) {
    let v = match ty {
        "ubyte" => u64::from(b[0]),
        "sbyte" => b[0] as i8 as i32 as u32 as u64,
        "ushort" => u64::from(u16::from_le_bytes([b[0], b[1]])),
        "sshort" => u16::from_le_bytes([b[0], b[1]]) as i16 as i32 as u32 as u64,
        // D16 loads (Vega ISA §9.1.9 "16-bit memory operations"): the 16-bit value (a byte
        // zero- or sign-extended to 16 bits) replaces the low or (`_hi`) the high half of the
        // VGPR; the other half keeps its value.
        "short_d16" | "short_d16_hi" | "ubyte_d16" | "ubyte_d16_hi" | "sbyte_d16"
        | "sbyte_d16_hi" => {
            let h = if ty.starts_with("sbyte") {
                b[0] as i8 as i16 as u16
            } else if ty.starts_with("ubyte") {
                u16::from(b[0])
            } else {
                u16::from_le_bytes([b[0], b[1]])
            };
            let old = vsrc_dword(w, dst, lane, 0);
            let v = if ty.ends_with("_hi") {
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

/// A load, store or atomic of one lane at `space`, for the FLAT/GLOBAL/SCRATCH and MUBUF
/// instructions; `op` is the mnemonic after the segment prefix (`load_dword`, `atomic_add`).
fn lane_access(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
    op: &str,
    lane: usize,
    space: Space,
) -> Result<()> {
    let mut b = [0u8; 16];
    if let Some(ty) = op.strip_prefix("load_") {
        let n = access_bytes(ty, inst.info.widths[0]);
        space_read(ctx, space, lane, &mut b[..n])?;
        load_result(w, &inst.dst, lane, ty, &b, n);
    } else if let Some(ty) = op.strip_prefix("store_") {
        let data_w = inst.info.widths[1] as usize;
        for k in 0..data_w {
            b[k * 4..k * 4 + 4]
                .copy_from_slice(&vsrc_dword(w, &inst.src[1], lane, k).to_le_bytes());
        }
        if ty.ends_with("_d16_hi") {
            // The high half of the data VGPR: bits 31:16 (a byte store: 23:16).
            b.copy_within(2..4, 0);
        }
        let n = access_bytes(ty, data_w as u8);
        space_write(ctx, space, lane, &b[..n])?;
    } else if let Some(ty) = op.strip_prefix("atomic_") {
        let wide = inst.info.widths[0] == 2;
        let Some(f) = atomic_op(ty) else {
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
        let cmp = if ty.starts_with("cmpswap") {
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
    } else {
        return Err(not_implemented(inst));
    }
    Ok(())
}

/// FLAT, GLOBAL and SCRATCH instructions (Vega ISA §9.3 "Flat, global and scratch"): a FLAT
/// address in the shared or private aperture goes to LDS or the lane's private segment
/// (through FLAT_SCRATCH), anything else to device memory; GLOBAL addresses are device
/// addresses; SCRATCH addresses are private offsets (VGPR and/or SGPR plus the instruction
/// offset) from FLAT_SCRATCH.
fn flat(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    let exec = w.exec();
    let (seg, op) = name.split_once('_').unwrap_or(("", ""));
    let flat_scratch = w.sreg64(FLAT_SCRATCH);
    let saddr = match inst.src[2] {
        Operand::Sreg { index, count } if count >= 2 => Some(w.sreg64(index as usize)),
        Operand::Sreg { index, .. } => Some(u64::from(w.sreg[index as usize])),
        _ => None,
    };
    for lane in (0..WAVE_SIZE).filter(|l| exec >> l & 1 != 0) {
        let space = if seg == "scratch" {
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
            let aperture = |base: u64| addr.checked_sub(base).filter(|o| *o >> 32 == 0);
            match (
                seg,
                aperture(SHARED_APERTURE_BASE),
                aperture(PRIVATE_APERTURE_BASE),
            ) {
                ("flat", Some(o), _) => Space::Lds(o),
                ("flat", _, Some(o)) => Space::Private {
                    base: flat_scratch,
                    offset: o as u32,
                },
                _ => Space::Global(addr),
            }
        };
        lane_access(ctx, w, inst, op, lane, space)
            .map_err(|e| error!(e.status(), "lane {lane}: {}", e.detail()))?;
    }
    Ok(())
}

/// The fields of a buffer resource (V#) that untyped MUBUF addressing uses (Vega ISA §8.1.8
/// "Buffer resource").
struct BufferResource {
    base: u64,
    stride: u64,
    swizzle: bool,
    num_records: u64,
    element_size: u64,
    index_stride: u64,
    add_tid: bool,
}

impl BufferResource {
    fn from_words(v: [u32; 4]) -> BufferResource {
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
    fn buffer_offset(&self, index: u64, offset: u64) -> u64 {
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

    /// Whether an access of `len` bytes at record `index`, byte `offset` is out of range (a
    /// load returns 0, a store is dropped): raw buffers (stride 0) check the byte offset
    /// against NUM_RECORDS bytes, structured ones the index against NUM_RECORDS records.
    /// Swizzled (scratch) buffers are bounded by the backing instead.
    fn out_of_range(&self, index: u64, offset: u64, len: u64) -> bool {
        if self.swizzle {
            false
        } else if self.stride == 0 {
            offset + len > self.num_records
        } else {
            index >= self.num_records
        }
    }
}

/// MUBUF loads, stores, atomics and cache control (Vega ISA §8.1 "Vector memory buffer
/// instructions"): address = base + soffset + buffer offset of (index, vaddr offset +
/// instruction offset), the index from the VGPR (`idxen`) plus the lane (ADD_TID).
fn mubuf(ctx: &mut Ctx<'_, '_>, w: &mut Wave, inst: &Instruction) -> Result<()> {
    let name = inst.name();
    let Operand::Sreg { index: r, .. } = inst.src[2] else {
        // buffer_wbinvl1(_vol), buffer_wbl2, buffer_invl2/buffer_inv: every access of this
        // interpreter is already visible to all (memory is coherent), so these are ordering
        // points with nothing to do.
        return match name {
            "buffer_wbinvl1" | "buffer_wbinvl1_vol" | "buffer_wbl2" | "buffer_invl2"
            | "buffer_inv" => Ok(()),
            _ => Err(not_implemented(inst)),
        };
    };
    let r = r as usize;
    let rsrc = BufferResource::from_words([w.sreg[r], w.sreg[r + 1], w.sreg[r + 2], w.sreg[r + 3]]);
    let soffset = scalar(w, &inst.soffset, false, false) & 0xFFFF_FFFF;
    let op = name
        .strip_prefix("buffer_")
        .or_else(|| name.strip_prefix("tbuffer_"))
        .unwrap_or("");
    let exec = w.exec();
    // Format loads and stores: the data and numeric format from the instruction (MTBUF) or
    // the resource's word 3 (MUBUF: NUM_FORMAT [14:12], DATA_FORMAT [18:15]).
    let format = if op.starts_with("load_format") || op.starts_with("store_format") {
        let (dfmt, nfmt) = if inst.encoding == Encoding::Mtbuf {
            (inst.mods.format & 0xF, inst.mods.format >> 4 & 7)
        } else {
            let w3 = w.sreg[r + 3];
            ((w3 >> 15 & 0xF) as u8, (w3 >> 12 & 7) as u8)
        };
        let f = BufferFormat::new(dfmt, nfmt).map_err(|why| {
            error!(
                Status::IllegalInstruction,
                "{name}: format [BUF_DATA_FORMAT_{},BUF_NUM_FORMAT_{}]: {why}",
                super::disasm::DATA_FORMATS[usize::from(dfmt)],
                super::disasm::NUM_FORMATS[usize::from(nfmt)]
            )
        })?;
        Some(f)
    } else {
        None
    };
    let len = if let Some(f) = format {
        f.bytes(format_components(op).0)
    } else if let Some(ty) = op.strip_prefix("load_") {
        access_bytes(ty, inst.info.widths[0])
    } else if let Some(ty) = op.strip_prefix("store_") {
        access_bytes(ty, inst.info.widths[1])
    } else {
        inst.info.widths[0] as usize * 4
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
        if rsrc.out_of_range(index, offset, len as u64) {
            // Out of range: loads (and returning atomics) get zeros, stores are dropped.
            if format.is_some() {
                format_out_of_range(w, inst, lane);
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
        if let Some(f) = format {
            format_access(ctx, w, inst, lane, f, &addr_of).map_err(fault)?;
            continue;
        }
        if rsrc.swizzle && len > 4 {
            // Each element (dword) of a multi-dword access lands in its own swizzled place.
            let mut b = [0u8; 16];
            if let Some(ty) = op.strip_prefix("load_") {
                for k in 0..len / 4 {
                    read_global(ctx, addr_of(k as u64 * 4), &mut b[k * 4..k * 4 + 4])
                        .map_err(fault)?;
                }
                load_result(w, &inst.dst, lane, ty, &b, len);
            } else if op.starts_with("store_") {
                for k in 0..len / 4 {
                    let v = vsrc_dword(w, &inst.src[1], lane, k).to_le_bytes();
                    write_global(ctx, addr_of(k as u64 * 4), &v).map_err(fault)?;
                }
            } else {
                return Err(error!(
                    Status::IllegalInstruction,
                    "{name}: 64-bit atomic on a swizzled buffer not implemented"
                ));
            }
            continue;
        }
        lane_access(ctx, w, inst, op, lane, Space::Global(addr_of(0))).map_err(fault)?;
    }
    Ok(())
}

/// The components a format instruction (`op` the mnemonic after `buffer_`/`tbuffer_`)
/// moves, and whether it is a D16 form and its `d16_hi` variant: `load_format_xyz` → (3,
/// false, false), `store_format_d16_hi_x` → (1, true, true).
fn format_components(op: &str) -> (usize, bool, bool) {
    let comps = op.rsplit('_').next().map_or(0, str::len);
    (comps, op.contains("_d16"), op.contains("_d16_hi"))
}

/// One lane of a format load or store out of the buffer's range: every component the
/// instruction loads reads 0 (a D16 form writes its halves and keeps the others, as in
/// range); a store does nothing.
fn format_out_of_range(w: &mut Wave, inst: &Instruction, lane: usize) {
    let op = inst.name().split_once("buffer_").map_or("", |(_, o)| o);
    let (comps, d16, hi) = format_components(op);
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
        let old = vsrc_dword(w, &inst.dst, lane, k / 2);
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
fn format_access(
    ctx: &mut Ctx<'_, '_>,
    w: &mut Wave,
    inst: &Instruction,
    lane: usize,
    f: BufferFormat,
    addr_of: &dyn Fn(u64) -> u64,
) -> Result<()> {
    let load = inst.info.widths[0] > 0;
    let op = inst.name().split_once("buffer_").map_or("", |(_, o)| o);
    let (comps, d16, hi) = format_components(op);
    let mut b = [0u8; 16];
    if load {
        for (at, n) in f.pieces(comps) {
            read_global(ctx, addr_of(at as u64), &mut b[at..at + n])?;
        }
        let elem = u128::from_le_bytes(b);
        if d16 {
            for k in (0..comps).step_by(2) {
                let x = u32::from(f.load_d16(elem, k));
                let old = vsrc_dword(w, &inst.dst, lane, k / 2);
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
type AtomicFn = fn(u64, u64, u64, bool) -> u64;

/// `x` with a denormal flushed to a zero of the same sign.
fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// IEEE 754 `minNum` with −0 below +0: a NaN operand loses to a number; two NaNs give the
/// first, quieted. The float atomics' and `v_min_f64`'s IEEE-mode selection (CDNA2 ISA
/// §9.5.3 "NaN, signed zero and min/max").
fn f64_min(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::from_bits(a.to_bits() | 0x0008_0000_0000_0000),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f64::from_bits(a.to_bits() | b.to_bits()),
        _ => a.min(b),
    }
}

/// IEEE 754 `maxNum` with +0 above −0; NaNs as [`f64_min`].
fn f64_max(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::from_bits(a.to_bits() | 0x0008_0000_0000_0000),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => f64::from_bits(a.to_bits() & b.to_bits()),
        _ => a.max(b),
    }
}

fn atomic_op(ty: &str) -> Option<AtomicFn> {
    let base = ty.strip_suffix("_x2").unwrap_or(ty);
    Some(match base {
        "swap" => |_, s, _, _| s,
        "cmpswap" => |o, s, c, wide| {
            let eq = if wide { o == c } else { o as u32 == c as u32 };
            if eq {
                s
            } else {
                o
            }
        },
        "add" => |o, s, _, _| o.wrapping_add(s),
        "sub" => |o, s, _, _| o.wrapping_sub(s),
        "smin" => |o, s, _, wide| {
            if wide {
                (o as i64).min(s as i64) as u64
            } else {
                (o as i32).min(s as i32) as u32 as u64
            }
        },
        "smax" => |o, s, _, wide| {
            if wide {
                (o as i64).max(s as i64) as u64
            } else {
                (o as i32).max(s as i32) as u32 as u64
            }
        },
        "umin" => |o, s, _, wide| {
            if wide {
                o.min(s)
            } else {
                (o as u32).min(s as u32) as u64
            }
        },
        "umax" => |o, s, _, wide| {
            if wide {
                o.max(s)
            } else {
                (o as u32).max(s as u32) as u64
            }
        },
        "and" => |o, s, _, _| o & s,
        "or" => |o, s, _, _| o | s,
        "xor" => |o, s, _, _| o ^ s,
        "inc" => |o, s, _, wide| {
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
        "dec" => |o, s, _, wide| {
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
        "add_f32" => |o, s, _, _| {
            let r = flush32(f32::from_bits(o as u32)) + flush32(f32::from_bits(s as u32));
            flush32(r).to_bits() as u64
        },
        "pk_add_f16" => |o, s, _, _| {
            let lo = f16::add(o as u16, s as u16);
            let hi = f16::add((o >> 16) as u16, (s >> 16) as u16);
            (lo as u64) | (hi as u64) << 16
        },
        "add_f64" => |o, s, _, _| (f64::from_bits(o) + f64::from_bits(s)).to_bits(),
        "min_f64" => |o, s, _, _| f64_min(f64::from_bits(o), f64::from_bits(s)).to_bits(),
        "max_f64" => |o, s, _, _| f64_max(f64::from_bits(o), f64::from_bits(s)).to_bits(),
        _ => return None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Runs `inst` at `pc` through the general interpreter (not the fast path) over `memory`
    /// and `lds`: `None` to go on at the next instruction, `Some(Some(target))` for a jump,
    /// `Some(None)` at the end (a barrier counts as going on), or its error.
    pub(crate) fn general_step(
        w: &mut Wave,
        inst: &Instruction,
        pc: u64,
        memory: &dyn DeviceMemory,
        lds: &mut [u8],
    ) -> Result<Option<Option<u64>>> {
        let code = KernelCode {
            base_address: pc,
            bytes: &[],
            entry_address: pc,
        };
        let never = AtomicBool::new(false);
        let mut ctx = Ctx {
            code: code.into(),
            target: inst.target,
            memory,
            lds,
            scratch: &mut [],
            scratch_per_wave: 0,
            instructions: 0,
            lane_instructions: 0,
            preempt: &never,
            cu: CuId::default(),
        };
        Ok(
            match execute(&mut ctx, w, inst, pc + u64::from(inst.size))? {
                Flow::Next | Flow::Barrier => None,
                Flow::Jump(t) => Some(Some(t)),
                Flow::End => Some(None),
            },
        )
    }

    #[test]
    fn decode_cache_decodes_once_and_never_serves_other_code() {
        // s_nop 0; s_endpgm (Vega ISA SOPP opcodes 0 and 1).
        let a = [0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x81, 0xBF];
        let code = KernelCode {
            base_address: 0x1000,
            bytes: &a,
            entry_address: 0x1000,
        };
        let mut cache = DecodeCache::new();
        let t = Gfx9Target::Gfx90a;
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, 0x1000)
                .unwrap()
                .0
                .name(),
            "s_nop"
        );
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, 0x1004)
                .unwrap()
                .0
                .name(),
            "s_endpgm"
        );
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, 0x1000)
                .unwrap()
                .0
                .name(),
            "s_nop"
        );
        assert_eq!(cache.len(), 2, "each instruction decoded once");
        assert_eq!(cache.decoded(), 2);
        let e = cache
            .get(&(&code).into(), &NoMemory, t, 0x1008)
            .unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction);
        // The same code in the next call: served as decoded.
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, 0x1000)
                .unwrap()
                .0
                .name(),
            "s_nop"
        );
        assert_eq!(cache.decoded(), 2);
        // Other code loaded at the same address: the page is decoded again.
        let b = [0x00, 0x00, 0x81, 0xBF];
        let other = KernelCode { bytes: &b, ..code };
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(
            cache
                .get(&(&other).into(), &NoMemory, t, 0x1000)
                .unwrap()
                .0
                .name(),
            "s_endpgm"
        );
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.invalidated_pages(), 1);
        // Another target empties it.
        cache.bind(Gfx9Target::Gfx900);
        assert!(cache.is_empty());
    }

    /// An instruction that starts on a page's last dword and ends on the next page: a change
    /// of its second dword alone (on the next page) is seen.
    #[test]
    fn decode_cache_sees_a_change_past_the_page_end() {
        // s_mov_b32 s0, literal (SOP1 0xBE80_00FF + literal), the literal in the next page.
        let mut bytes = vec![0u8; 8];
        bytes[..4].copy_from_slice(&0xBE80_00FFu32.to_le_bytes());
        bytes[4..].copy_from_slice(&7u32.to_le_bytes());
        let code = KernelCode {
            base_address: 0x1FFC,
            bytes: &bytes,
            entry_address: 0x1FFC,
        };
        let t = Gfx9Target::Gfx90a;
        let mut cache = DecodeCache::new();
        cache.begin_dispatch();
        cache.bind(t);
        let first = cache.get(&(&code).into(), &NoMemory, t, 0x1FFC).unwrap().0;
        assert_eq!(first.size, 8);
        assert_eq!(first.src[0], Operand::Literal(7));
        bytes[4..].copy_from_slice(&9u32.to_le_bytes());
        let code = KernelCode {
            base_address: 0x1FFC,
            bytes: &bytes,
            entry_address: 0x1FFC,
        };
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, 0x1FFC)
                .unwrap()
                .0
                .src[0],
            Operand::Literal(9)
        );
        assert_eq!(cache.decoded(), 2);
    }

    /// Device memory over `bytes` from `base` that counts the bytes read.
    struct CountingMemory {
        base: u64,
        bytes: core::cell::RefCell<Vec<u8>>,
        read: core::cell::Cell<u64>,
    }

    impl DeviceMemory for CountingMemory {
        fn clock_counter(&self) -> u64 {
            0
        }

        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
            let b = self.bytes.borrow();
            let src = usize::try_from(addr.wrapping_sub(self.base))
                .ok()
                .and_then(|o| b.get(o..o.checked_add(buf.len())?))
                .ok_or_else(|| error!(Status::MemoryFault, "read at {addr:#x}"))?;
            buf.copy_from_slice(src);
            self.read.set(self.read.get() + buf.len() as u64);
            Ok(())
        }
        fn write(&self, addr: u64, _data: &[u8]) -> Result<()> {
            bail!(Status::MemoryFault, "write at {addr:#x}")
        }
    }

    /// Device code is read through the memory a page (4 KiB and the 4 bytes past it) at a
    /// time, only the pages reached, once per dispatch: not again within the dispatch, again
    /// (and checked) in the next one, where a change past a page's end is seen; a pc outside
    /// the code, an instruction cut by the code's end and a page the memory cannot read are
    /// the errors host bytes give, or a memory fault naming the address.
    #[test]
    fn decode_cache_reads_device_code_a_page_once_per_dispatch() {
        const BASE: u64 = 0x10_0000;
        let mut bytes = vec![0u8; 3 * CACHE_PAGE_BYTES as usize];
        // s_nop 0; s_endpgm at the start; s_mov_b32 s0, 7 (literal on the next page) on the
        // second page's last dword.
        bytes[..8].copy_from_slice(&[0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x81, 0xBF]);
        bytes[0x1FFC..0x2000].copy_from_slice(&0xBE80_00FFu32.to_le_bytes());
        bytes[0x2000..0x2004].copy_from_slice(&7u32.to_le_bytes());
        let mem = CountingMemory {
            base: BASE,
            bytes: core::cell::RefCell::new(bytes),
            read: core::cell::Cell::new(0),
        };
        let code: CodeSource<'_> = DeviceCode {
            base_address: BASE,
            len: 3 * CACHE_PAGE_BYTES,
            entry_address: BASE,
        }
        .into();
        let t = Gfx9Target::Gfx90a;
        let mut cache = DecodeCache::new();
        let window = CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES;
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(cache.get(&code, &mem, t, BASE).unwrap().0.name(), "s_nop");
        assert_eq!(mem.read.get(), window);
        assert_eq!(
            cache.get(&code, &mem, t, BASE + 4).unwrap().0.name(),
            "s_endpgm"
        );
        let lit = |cache: &mut DecodeCache| cache.get(&code, &mem, t, BASE + 0x1FFC).unwrap().0;
        assert_eq!(lit(&mut cache).src[0], Operand::Literal(7));
        assert_eq!(mem.read.get(), 2 * window, "the pages reached, each once");
        assert_eq!(cache.code_bytes_read(), 2 * window);
        // The next dispatch reads a page again on its first use, and decodes nothing again.
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(cache.get(&code, &mem, t, BASE).unwrap().0.name(), "s_nop");
        assert_eq!(mem.read.get(), 3 * window);
        assert_eq!(cache.decoded(), 3);
        // The literal rewritten (on the page after the instruction's): seen by the next
        // dispatch, which decodes it again.
        mem.bytes.borrow_mut()[0x2000..0x2004].copy_from_slice(&9u32.to_le_bytes());
        cache.begin_dispatch();
        cache.bind(t);
        assert_eq!(lit(&mut cache).src[0], Operand::Literal(9));
        assert_eq!((cache.decoded(), cache.invalidated_pages()), (4, 1));
        // Within the dispatch the page is not read again.
        let read = mem.read.get();
        mem.bytes.borrow_mut()[0x2000..0x2004].copy_from_slice(&11u32.to_le_bytes());
        assert_eq!(lit(&mut cache).src[0], Operand::Literal(9));
        assert_eq!(mem.read.get(), read);

        // Errors: the same as over the same bytes in host memory.
        let host_bytes = mem.bytes.borrow().clone();
        for (len, pc) in [
            // A pc at the code's end, and far past it.
            (3 * CACHE_PAGE_BYTES, BASE + 3 * CACHE_PAGE_BYTES),
            (3 * CACHE_PAGE_BYTES, BASE + 0x10_0000),
            // A pc on the address space's last page (a branch there): no overflow.
            (3 * CACHE_PAGE_BYTES, u64::MAX - 3),
            // s_mov_b32 with its literal past the code's end.
            (0x2000, BASE + 0x1FFC),
        ] {
            let device: CodeSource<'_> = DeviceCode {
                base_address: BASE,
                len,
                entry_address: BASE,
            }
            .into();
            let host: CodeSource<'_> = KernelCode {
                base_address: BASE,
                bytes: &host_bytes[..len as usize],
                entry_address: BASE,
            }
            .into();
            let (mut dc, mut hc) = (DecodeCache::new(), DecodeCache::new());
            dc.bind(t);
            hc.bind(t);
            let d = dc.get(&device, &mem, t, pc).unwrap_err();
            let h = hc.get(&host, &NoMemory, t, pc).unwrap_err();
            assert_eq!(d.status(), Status::IllegalInstruction, "{}", d.detail());
            assert_eq!((d.status(), d.detail()), (h.status(), h.detail()));
        }
        // Code the memory does not hold: a memory fault naming the address.
        let short: CodeSource<'_> = DeviceCode {
            base_address: BASE,
            len: 4 * CACHE_PAGE_BYTES,
            entry_address: BASE,
        }
        .into();
        let mut c = DecodeCache::new();
        c.bind(t);
        let e = c
            .get(&short, &mem, t, BASE + 3 * CACHE_PAGE_BYTES)
            .unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(
            e.detail(),
            "kernel code 0x103000..0x104000: read at 0x103000"
        );
    }

    /// The cache holds at most DECODE_CACHE_MAX_PAGES pages, dropping the one validated
    /// longest ago.
    #[test]
    fn decode_cache_is_bounded() {
        // s_endpgm at the start of every page.
        let pages = DECODE_CACHE_MAX_PAGES + 3;
        let mut bytes = vec![0u8; pages * CACHE_PAGE_BYTES as usize];
        for p in 0..pages {
            let o = p * CACHE_PAGE_BYTES as usize;
            bytes[o..o + 4].copy_from_slice(&0xBF81_0000u32.to_le_bytes());
        }
        let code = KernelCode {
            base_address: 0x10_0000,
            bytes: &bytes,
            entry_address: 0x10_0000,
        };
        let t = Gfx9Target::Gfx90a;
        let mut cache = DecodeCache::new();
        for p in 0..pages as u64 {
            cache.begin_dispatch();
            cache.bind(t);
            let pc = 0x10_0000 + p * CACHE_PAGE_BYTES;
            assert_eq!(
                cache
                    .get(&(&code).into(), &NoMemory, t, pc)
                    .unwrap()
                    .0
                    .name(),
                "s_endpgm"
            );
        }
        assert_eq!(cache.pages(), DECODE_CACHE_MAX_PAGES);
        assert_eq!(cache.len(), DECODE_CACHE_MAX_PAGES);
        // The last page is still there; the first was dropped and is decoded again.
        cache.begin_dispatch();
        cache.bind(t);
        let last = 0x10_0000 + (pages as u64 - 1) * CACHE_PAGE_BYTES;
        cache.get(&(&code).into(), &NoMemory, t, last).unwrap();
        assert_eq!(cache.decoded(), pages as u64);
        cache.get(&(&code).into(), &NoMemory, t, 0x10_0000).unwrap();
        assert_eq!(cache.decoded(), pages as u64 + 1);
    }

    /// Counted work-item ids equal the division formula (flat = x + X*(y + Y*z)) for 1-, 2-
    /// and 3-dimensional groups, from every wave of the group.
    #[test]
    fn workitem_ids_count_as_division() {
        for size in [
            [64, 1, 1],
            [256, 1, 1],
            [4, 3, 5],
            [7, 9, 2],
            [1, 1, 64],
            [1, 2, 40],
            [16, 16, 4],
        ] {
            let items = size[0] * size[1] * size[2];
            for first in (0..items).step_by(WAVE_SIZE) {
                let ids = workitem_ids(first, size);
                for (lane, id) in ids.iter().enumerate() {
                    let f = first + lane as u32;
                    if f >= items {
                        break;
                    }
                    let want = [f % size[0], f / size[0] % size[1], f / (size[0] * size[1])];
                    assert_eq!(*id, want, "size {size:?}, flat {f}");
                }
            }
        }
    }

    #[test]
    fn float_rounding_helpers() {
        assert_eq!(floor32(-1.5), -2.0);
        assert_eq!(floor32(1.5), 1.0);
        assert_eq!(ceil32(1.25), 2.0);
        assert_eq!(trunc32(-2.75), -2.0);
        assert_eq!(rndne32(2.5), 2.0);
        assert_eq!(rndne32(3.5), 4.0);
        assert_eq!(rndne32(-0.4).to_bits(), 0x8000_0000);
    }

    /// `s_buffer_atomic_add` whose offset, the signed immediate -4 (alone, or with `soe` added
    /// to an SGPR holding 0), lies below the buffer: out of range, so memory is untouched
    /// (`NoMemory` would fail any access), as a scalar buffer load of that offset reads 0; it
    /// once overflowed adding the access size to the offset.
    #[test]
    fn scalar_buffer_atomic_below_the_buffer_is_out_of_range() {
        // s_buffer_atomic_add s5, s[8:11], -0x4; the same with soe (s2 offset:-0x4); and
        // s_buffer_atomic_add_x2 s[4:5], s[8:11], s2 offset:-0x4 (llvm-mc-19's words).
        for (w0, w1) in [
            (0xC10A_0144u32, 0x001F_FFFCu32),
            (0xC10A_4144, 0x041F_FFFC),
            (0xC18A_4104, 0x041F_FFFC),
        ] {
            let mut bytes = w0.to_le_bytes().to_vec();
            bytes.extend_from_slice(&w1.to_le_bytes());
            let inst = decode(&bytes, Gfx9Target::Gfx900).unwrap();
            let mut w = Wave::new(0x1000, false);
            // V#: base 0x100000, stride 0, NUM_RECORDS 64; s2 = 0; s4/s5 hold the data.
            w.sreg[8..12].copy_from_slice(&[0x10_0000, 0, 64, 0]);
            w.sreg[2] = 0;
            w.sreg[4] = 7;
            w.sreg[5] = 9;
            general_step(&mut w, &inst, 0x1000, &NoMemory, &mut [])
                .unwrap_or_else(|e| panic!("{inst}: {e}"));
        }
    }

    /// An `s_setreg` of HW_REG_MODE whose field covers bit 27 (GPR_IDX_EN) can turn GPR index
    /// mode on: the cache then zeroes reused waves whole, as for `s_set_gpr_idx_on`; a setreg
    /// of the denormal bits alone does not.
    #[test]
    fn setreg_of_gpr_idx_en_raises_the_vgpr_bound() {
        let t = Gfx9Target::Gfx900;
        // s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0xf; then hwreg(HW_REG_MODE), whole.
        for (w0, whole) in [(0xBA00_1901u32, false), (0xBA00_F801, true)] {
            let mut a = w0.to_le_bytes().to_vec();
            a.extend_from_slice(&0xFu32.to_le_bytes());
            let code = KernelCode {
                base_address: 0x1000,
                bytes: &a,
                entry_address: 0x1000,
            };
            let mut cache = DecodeCache::new();
            cache.begin_dispatch();
            cache.bind(t);
            cache.get(&(&code).into(), &NoMemory, t, 0x1000).unwrap();
            assert_eq!(cache.vgpr_bound == crate::wave::NUM_VGPRS, whole, "{w0:#x}");
        }
    }

    pub(crate) struct NoMemory;

    impl DeviceMemory for NoMemory {
        fn clock_counter(&self) -> u64 {
            0
        }

        fn read(&self, addr: u64, _buf: &mut [u8]) -> Result<()> {
            bail!(Status::MemoryFault, "read at {addr:#x}")
        }
        fn write(&self, addr: u64, _data: &[u8]) -> Result<()> {
            bail!(Status::MemoryFault, "write at {addr:#x}")
        }
    }

    /// `s_endpgm` alone over a 200-item grid of 64-item groups: 4 groups (the last of 8
    /// items), 4 waves, 4 instructions, 200 lane-instructions; split ranges add up to the
    /// whole dispatch, and a range past the end runs nothing.
    #[test]
    fn workgroup_ranges_partition_the_dispatch_and_count() {
        let bytes = 0xBF81_0000u32.to_le_bytes();
        let code = KernelCode {
            base_address: 0x1000,
            bytes: &bytes,
            entry_address: 0x1000,
        };
        let kd = KernelDescriptor::default();
        let st = DispatchState::one_dimensional(200, 64, 0, 0);
        assert_eq!(workgroup_counts(&st), [4, 1, 1]);
        assert_eq!(workgroup_total(&st), 4);
        let mut all = ExecStats::default();
        run_workgroups(
            &code,
            &kd,
            Gfx9Target::Gfx900,
            &st,
            &NoMemory,
            0..4,
            &mut all,
        )
        .unwrap();
        assert_eq!(
            all,
            ExecStats {
                workgroups: 4,
                waves: 4,
                instructions: 4,
                lane_instructions: 200
            }
        );
        let mut parts = ExecStats::default();
        for r in [0..1, 1..3, 3..9, 9..12] {
            run_workgroups(
                &code,
                &kd,
                Gfx9Target::Gfx90a,
                &st,
                &NoMemory,
                r,
                &mut parts,
            )
            .unwrap();
        }
        assert_eq!(parts, all);
        let bad = KernelCode {
            entry_address: 0x2000,
            ..code
        };
        let mut s = ExecStats::default();
        let e = run_workgroups(&bad, &kd, Gfx9Target::Gfx900, &st, &NoMemory, 0..4, &mut s)
            .unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction);
        assert_eq!((s.workgroups, s.waves), (0, 1));
        let mut zero = st;
        zero.workgroup_size = [0, 1, 1];
        assert_eq!(
            check_dispatch(&kd, &zero).unwrap_err().status(),
            Status::InvalidArgument
        );
    }

    #[test]
    fn perm_selects_bytes_signs_and_constants() {
        // {hi, lo} = 0x8877_6655_4433_2211: selectors 0..=7 pick bytes, 8..=11 the sign of
        // byte 1/3/5/7 (0x22, 0x44 positive; 0x66 positive; 0x88 negative), 12 zero, 13+ 0xFF.
        let (hi, lo) = (0x8877_6655, 0x4433_2211);
        assert_eq!(perm_b32(hi, lo, 0x0706_0100), 0x8877_2211);
        assert_eq!(perm_b32(hi, lo, 0x0B0A_0908), 0xFF00_0000);
        assert_eq!(perm_b32(hi, lo, 0x0C0D_FF03), 0x00FF_FF44);
    }

    #[test]
    fn bitfield_extract() {
        // s_bfe_i64 s[4:5], s[6:7], 0x100000: sign-extend the low 16 bits.
        assert_eq!(bfe(0x8000, 0, 16, true, 64), 0xFFFF_FFFF_FFFF_8000);
        assert_eq!(bfe(0xABCD, 4, 8, false, 32), 0xBC);
        assert_eq!(bfe(0xFF, 0, 0, false, 32), 0);
    }
}
