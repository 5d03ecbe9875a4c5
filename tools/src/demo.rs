//! The main job: the canonical HSA flow (vector_copy and friends) end to end, as the
//! `vector_copy` example runs it and the end-to-end tests check it.
//!
//! init → find a GPU agent → find the kernarg pool and a fine-grained pool → create a queue
//! → load the real AMDGPU code object built for the agent's ISA → get the kernel object and
//! kernarg size → allocate and fill the buffers → build the dispatch packet, publish it, ring
//! the doorbell → wait on the completion signal → verify every element.
//!
//! On the emulated device the kernels' real machine code runs in the GFX9 interpreter (gfx900,
//! gfx90a, gfx942 agents); the host implementations of their OpenCL C source
//! ([`hsa_emu::device::host_kernels`]) are registered as the fallback for other ISAs and for
//! `HSA_RT_EMULATION=host`. [`DemoOutcome::executor`] says which ran.
//!
//! The `unsafe` here is what every HSA application does: reading and writing fine-grained
//! and kernarg memory through the host pointers the pools return.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hsa_core::abi::SignalHandle;
use hsa_core::isa::TargetId;
use hsa_core::loader::executable::{Executable, KernelInfo};
use hsa_core::loader::CodeObject;
use hsa_core::memory::{Allocation, GlobalFlags};
use hsa_core::packet::{BarrierAnd, HeaderFlags, KernelDispatch};
use hsa_core::platform::MemoryKind;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, Signal, SignalCondition, SignalPool, WaitState};
use hsa_core::{bail, error, Error, NodeId, Status};

use hsa_emu::{ExecutionStats, SelectedDevice};
use hsa_linux::LinuxPlatform;

/// Which kernel of `kernels.cl` to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoKernel {
    /// `out[i] = in[i]`.
    VectorCopy,
    /// `c[i] = a[i] + b[i]`.
    VectorAdd,
    /// Each work-group's chunk reversed through LDS (group segment, barrier).
    LocalReverse,
}

impl DemoKernel {
    /// The kernel's symbol name.
    pub fn name(self) -> &'static str {
        match self {
            DemoKernel::VectorCopy => "vector_copy",
            DemoKernel::VectorAdd => "vector_add",
            DemoKernel::LocalReverse => "local_reverse",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// The kernel.
    pub kernel: DemoKernel,
    /// Elements (32-bit ints) per buffer; the grid size, work-items. Need not be a multiple of
    /// `workgroup_size`: the last work-group is then partial, and work-items beyond the grid
    /// do not run (HSA Programmer's Reference Manual, "Work-groups": partial work-groups; the
    /// AQL dispatch packet's `grid_size_x` need not be a multiple of `workgroup_size_x`).
    /// `local_reverse` needs full work-groups ([`validate_config`]). A grid smaller than one
    /// work-group is dispatched as one work-group of `elements` work-items
    /// ([`dispatch_workgroup_size`]).
    pub elements: u32,
    /// Work-group size asked for, work-items (1..=256 for local_reverse); see
    /// [`dispatch_workgroup_size`] for the size dispatched.
    pub workgroup_size: u16,
    /// Dispatches in a chain, each after a barrier-AND packet on the previous one's
    /// completion signal (1 = a single dispatch).
    pub chain: u32,
    /// The code object; `None` picks the one built for the agent's ISA from
    /// [`default_code_object_dir`].
    pub code_object: Option<PathBuf>,
    /// Which GPU agent runs the kernel: its index among the GPU agents, in the runtime's
    /// agent order (topology node order), counting from 0 (0 = the first GPU agent).
    pub agent: usize,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            kernel: DemoKernel::VectorCopy,
            elements: 1 << 20,
            workgroup_size: 256,
            chain: 1,
            code_object: None,
            agent: 0,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoOutcome {
    /// The GPU agent's name (e.g. `gfx90a`).
    pub agent: String,
    /// The GPU agent's topology node (`hsa_agent_get_info(HSA_AGENT_INFO_NODE)`).
    pub agent_node: u32,
    /// `kfd` or `emulated`.
    pub device: String,
    /// The code object loaded.
    pub code_object: PathBuf,
    /// Kernel dispatches completed.
    pub dispatches: u32,
    /// The work-group size dispatched, work-items ([`dispatch_workgroup_size`]): the
    /// configuration's, or `elements` when the grid is smaller than that.
    pub workgroup_size: u16,
    /// Elements checked against the host reference.
    pub elements_verified: u64,
    /// Elements past the grid checked to be untouched: each of the three buffers is padded to
    /// a whole number of work-groups with [`PAST_GRID_VALUES`], which no work-item may change
    /// (0 when `elements` is a multiple of the work-group size).
    pub elements_past_grid_verified: u64,
    /// What ran the kernels: `"gfx9 interpreter"` or `"host implementation"` on the emulated
    /// device (`"gfx9 interpreter and host implementation"` if both did), `"GPU"` on
    /// `/dev/kfd`.
    pub executor: String,
    /// On the emulated device, what its executors did during this run (instruction counts and
    /// interpreter time, for speed measurements).
    pub execution: Option<ExecutionStats>,
}

/// What the elements past the grid hold in buffers `a`, `b` and `c` (each buffer is padded
/// to a whole number of work-groups): three distinct values, none of which a copy or a sum
/// of the others gives, so a work-item that ran beyond the grid and wrote there is seen.
pub const PAST_GRID_VALUES: [i32; 3] = [0x5ea1_a000, 0x5ea1_b000, 0x5ea1_c000];

/// The project's test code objects (`testdata/codeobjects`).
pub fn default_code_object_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects")
}

/// The code object in `dir` for an agent: the `kernels-*.hsaco` files (not `kernels_ocl`,
/// the OpenCL builds with hidden arguments, which run only with `--code-object`) whose target runs on `agent`, the exact processor before a
/// generic target, the newest code object version first.
///
/// # Errors
/// `Status::InvalidIsa` naming the agent's ISA and the targets found when none matches;
/// `Status::InvalidFile` when `dir` cannot be read.
pub fn find_code_object(dir: &Path, agent: &TargetId) -> Result<PathBuf, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        error!(
            Status::InvalidFile,
            "code object directory {}: {e}",
            dir.display()
        )
    })?;
    let mut found = Vec::new();
    let mut seen = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("kernels-") && name.ends_with(".hsaco")) {
            continue;
        }
        let Ok(bytes) = crate::report::code_object::read_code_object_file(&path) else {
            continue;
        };
        let aligned = hsa_core::loader::code_object::AlignedBytes::new(&bytes);
        let Ok(co) = CodeObject::parse(aligned.as_bytes()) else {
            continue;
        };
        let target = co.target();
        seen.push(target.to_string());
        if target.check_runs_on(agent).is_ok() {
            found.push((
                target.processor != agent.processor,
                std::cmp::Reverse(co.version()),
                path,
            ));
        }
    }
    found.sort();
    match found.into_iter().next() {
        Some((_, _, path)) => Ok(path),
        None => {
            seen.sort();
            bail!(
                Status::InvalidIsa,
                "no code object in {} runs on {agent} (found: {})",
                dir.display(),
                seen.join(", ")
            )
        }
    }
}

/// Largest `--chain` (dispatches in a chain) accepted, dispatches. Each dispatch of a chain
/// has its own completion signal, an interrupt signal backed by a KFD event; amdkfd allows
/// 4096 signal events per process (`KFD_SIGNAL_EVENT_LIMIT`, kfd_priv.h), and a longer chain
/// fails in `AMDKFD_IOC_CREATE_EVENT` with `ENOSPC`. 96 events are left for the runtime's own
/// signals (queue error and interrupt signals) and the application's.
pub const MAX_CHAIN: u32 = 4000;

/// Checks a configuration before anything is allocated, naming the command-line option
/// (`--elements`, `--workgroup-size`, `--chain`) of a bad value.
///
/// A grid that is not a whole number of work-groups is valid (HSA runs a partial last
/// work-group; a grid smaller than one work-group is one smaller work-group,
/// [`dispatch_workgroup_size`]) except for `local_reverse`: its source (`kernels.cl`, and
/// `kernels_ocl.cl` built as OpenCL C 1.2, whose `get_local_size` is then the enqueued size)
/// writes `tile[lid]` and reads `tile[lsz - 1 - lid]` with `lsz` the dispatch's work-group
/// size, so the `r` work-items of a partial group read `tile[r..lsz]`, LDS no work-item of
/// that group wrote: an undefined result, not one to verify.
///
/// # Errors
/// `Status::InvalidArgument` when `elements`, `workgroup_size` or `chain` is 0, when `chain`
/// is above [`MAX_CHAIN`], and for `local_reverse` when `elements` is not a multiple of
/// `workgroup_size` (naming the kernel, both options and the LDS the partial group would
/// read unwritten).
pub fn validate_config(config: &DemoConfig) -> Result<(), Error> {
    validate_options(config)?;
    let wg = u32::from(dispatch_workgroup_size(config));
    let partial = config.elements % wg;
    if config.kernel == DemoKernel::LocalReverse && partial != 0 {
        bail!(
            Status::InvalidArgument,
            "local_reverse needs full work-groups: --elements {} is not a multiple of \
             --workgroup-size {wg}; its last work-group of {partial} work-items would read \
             tile[lsz-1-lid] with lsz = {wg}, LDS it never wrote (tile[{partial}..{wg}]): an \
             undefined result",
            config.elements,
        );
    }
    Ok(())
}

/// The work-group size dispatched, work-items: `workgroup_size`, or `elements` when the grid
/// is smaller than one work-group. A dispatch packet's `grid_size_x` "must not be smaller
/// than `workgroup_size_x`" (`hsa.h`, `hsa_kernel_dispatch_packet_t`; the packet builder and
/// the packet processor refuse it), so such a grid is one work-group of all its work-items,
/// as OpenCL runtimes clamp a local size larger than the global one. 0 stays 0 (refused by
/// [`validate_config`]).
pub fn dispatch_workgroup_size(config: &DemoConfig) -> u16 {
    match u16::try_from(config.elements) {
        Ok(e) if e < config.workgroup_size => e,
        _ => config.workgroup_size,
    }
}

/// The checks of [`validate_config`] that do not depend on the kernel.
fn validate_options(config: &DemoConfig) -> Result<(), Error> {
    if config.elements == 0 {
        bail!(
            Status::InvalidArgument,
            "--elements 0: the grid needs at least 1 element"
        );
    }
    if config.workgroup_size == 0 {
        bail!(
            Status::InvalidArgument,
            "--workgroup-size 0: a work-group needs at least 1 work-item"
        );
    }
    if config.chain == 0 {
        bail!(
            Status::InvalidArgument,
            "--chain 0: a chain needs at least 1 dispatch"
        );
    }
    if config.chain > MAX_CHAIN {
        bail!(
            Status::InvalidArgument,
            "--chain {} is above the limit of {MAX_CHAIN} dispatches (one completion signal \
             each; amdkfd allows 4096 signal events per process)",
            config.chain
        );
    }
    Ok(())
}

/// Checks the work-group size against the kernel's `.max_flat_workgroup_size` (AMDGPUUsage
/// code object metadata; the code is compiled for at most that many work-items) and the
/// agent's `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`.
///
/// # Errors
/// `Status::InvalidArgument` naming `--workgroup-size` and both limits when it is above either.
pub fn check_workgroup_size(
    config: &DemoConfig,
    kernel_max: Option<u32>,
    agent_max: u32,
) -> Result<(), Error> {
    let wg = u32::from(config.workgroup_size);
    let kernel_limit = kernel_max.unwrap_or(agent_max);
    if wg > kernel_limit || wg > agent_max {
        bail!(
            Status::InvalidArgument,
            "--workgroup-size {wg} is above the limit of {}: kernel {} has \
             .max_flat_workgroup_size {}, the agent's work-group max size is {agent_max}",
            kernel_limit.min(agent_max),
            config.kernel.name(),
            kernel_max.map_or("(not given)".to_string(), |m| m.to_string()),
        );
    }
    Ok(())
}

/// Elements per buffer: `elements` rounded up to a whole number of work-groups, so that a
/// work-item running past the grid would write inside the buffer, where the verification
/// sees it, instead of past its end.
pub fn padded_elements(config: &DemoConfig) -> u64 {
    u64::from(config.elements).next_multiple_of(u64::from(dispatch_workgroup_size(config).max(1)))
}

/// Checks that the three buffers ([`padded_elements`] × 4 bytes each) and the chain's kernarg
/// segments fit the pools, before any is allocated: each buffer against the fine-grained
/// pool's `alloc_max_size_bytes`, the buffers (plus the kernargs when both come from one pool)
/// against its `size_bytes`, the kernargs against the kernarg pool's.
///
/// # Errors
/// `Status::OutOfResources` naming `--elements` (or `--chain`), the bytes needed and the
/// pool's size.
pub fn check_memory(
    config: &DemoConfig,
    kernarg_bytes: u32,
    fine: &hsa_core::memory::PoolInfo,
    kernarg: &hsa_core::memory::PoolInfo,
) -> Result<(), Error> {
    let buffer = padded_elements(config) * 4;
    // Allocations are rounded to the pool's granule; kernarg segments to 4 KiB pages at most.
    let kernargs = u64::from(config.chain) * u64::from(kernarg_bytes).next_multiple_of(4096);
    let same_pool = fine.owner == kernarg.owner && fine.size_bytes == kernarg.size_bytes;
    let buffers = 3 * buffer;
    let total = buffers + if same_pool { kernargs } else { 0 };
    if buffer > fine.alloc_max_size_bytes || total > fine.size_bytes {
        bail!(
            Status::OutOfResources,
            "--elements {} needs {total} bytes (3 buffers of {buffer}{}); fine-grained pool: \
             {} bytes, {} per allocation",
            config.elements,
            if same_pool {
                format!(" + {kernargs} of kernargs")
            } else {
                String::new()
            },
            fine.size_bytes,
            fine.alloc_max_size_bytes
        );
    }
    if !same_pool && kernargs > kernarg.size_bytes {
        bail!(
            Status::OutOfResources,
            "--chain {} needs {kernargs} bytes of kernargs; the kernarg pool holds {} bytes",
            config.chain,
            kernarg.size_bytes
        );
    }
    Ok(())
}

/// The value of a hidden kernel argument (`.value_kind` `hidden_*`, AMDGPUUsage "Code Object
/// V4 Metadata" and "Code Object V5 Metadata") for a 1-D dispatch of `grid` work-items in
/// work-groups of `wg`, or `None` for a kind this demo does not fill (left 0).
///
/// Filled: `hidden_block_count_{x,y,z}` (u32, full work-groups per dimension: `grid / wg`, 1,
/// 1), `hidden_group_size_{x,y,z}` (u16: `wg`, 1, 1), `hidden_remainder_{x,y,z}` (u16,
/// work-items of the partial last work-group: `grid % wg`, 0, 0),
/// `hidden_global_offset_{x,y,z}` (u64, 0: no offset), `hidden_grid_dims` (u16, 1),
/// `hidden_dynamic_lds_size` (u32, 0: no dynamic LDS) and `hidden_none` (0).
///
/// Left 0 (the demo's kernels do not use them; a kernel that did would need runtime
/// services this flow does not set up): `hidden_printf_buffer`, `hidden_hostcall_buffer`,
/// `hidden_default_queue`, `hidden_completion_action`, `hidden_multigrid_sync_arg`,
/// `hidden_heap_v1`, `hidden_private_base`, `hidden_shared_base`, `hidden_queue_ptr`.
pub fn hidden_argument(kind: &str, grid: u32, wg: u16) -> Option<u64> {
    let wg32 = u32::from(wg);
    Some(match kind {
        "hidden_block_count_x" => u64::from(grid / wg32),
        "hidden_block_count_y" | "hidden_block_count_z" => 1,
        "hidden_group_size_x" => u64::from(wg),
        "hidden_group_size_y" | "hidden_group_size_z" => 1,
        "hidden_remainder_x" => u64::from(grid % wg32),
        "hidden_remainder_y" | "hidden_remainder_z" => 0,
        "hidden_global_offset_x" | "hidden_global_offset_y" | "hidden_global_offset_z" => 0,
        "hidden_grid_dims" => 1,
        "hidden_dynamic_lds_size" | "hidden_none" => 0,
        _ => return None,
    })
}

/// A hidden kernel argument of the kernel's metadata (`.value_kind` `hidden_*`, its
/// `.offset` and `.size` in bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
struct HiddenArg {
    kind: String,
    offset: u32,
    size: u32,
}

/// The kernarg segment of one dispatch: `size` bytes, the explicit arguments as consecutive
/// u64s from offset 0, each hidden argument at its `.offset` (little-endian, its `.size`
/// bytes; see [`hidden_argument`]), everything else 0.
fn kernarg_segment(
    size: u32,
    explicit: &[u64],
    hidden: &[HiddenArg],
    config: &DemoConfig,
) -> Result<Vec<u8>, Error> {
    let mut segment = vec![0u8; size as usize];
    let too_small = |end: usize| {
        error!(
            Status::InvalidCodeObject,
            "kernarg segment of {size} bytes cannot hold {end} bytes of arguments"
        )
    };
    let explicit_bytes: Vec<u8> = explicit.iter().flat_map(|v| v.to_le_bytes()).collect();
    segment
        .get_mut(..explicit_bytes.len())
        .ok_or_else(|| too_small(explicit_bytes.len()))?
        .copy_from_slice(&explicit_bytes);
    let wg = dispatch_workgroup_size(config);
    for arg in hidden {
        let value = hidden_argument(&arg.kind, config.elements, wg)
            .unwrap_or(0)
            .to_le_bytes();
        let start = arg.offset as usize;
        let end = start + arg.size as usize;
        let dst = segment.get_mut(start..end).ok_or_else(|| too_small(end))?;
        let n = dst.len().min(value.len());
        dst[..n].copy_from_slice(&value[..n]);
    }
    Ok(segment)
}

fn write_bytes(a: &Allocation, bytes: &[u8]) -> Result<(), Error> {
    let host = a.host_ptr.ok_or_else(|| {
        error!(
            Status::InvalidAllocation,
            "kernarg memory has no host pointer"
        )
    })?;
    if bytes.len() as u64 > a.size_bytes {
        bail!(
            Status::InvalidArgument,
            "kernarg segment of {} bytes cannot hold {} bytes",
            a.size_bytes,
            bytes.len()
        );
    }
    // SAFETY: `host` points to the allocation's `size_bytes` bytes, just allocated and owned
    // here; the length was checked above; nothing else uses the memory yet.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), host.as_ptr(), bytes.len()) };
    Ok(())
}

/// A host-visible buffer of `i32`s.
struct IntBuffer {
    allocation: Allocation,
    len: usize,
}

impl IntBuffer {
    fn as_slice(&self) -> &[i32] {
        let ptr = self
            .allocation
            .host_ptr
            .map_or(std::ptr::NonNull::dangling(), |p| p.cast::<i32>());
        // SAFETY: the allocation holds `len * 4` bytes at `ptr` (checked at creation), 4-byte
        // aligned (pool alignment 4096), alive as long as the runtime; the device writes it
        // only while a dispatch runs, and this is read after its completion signal.
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.len) }
    }

    fn fill(&self, f: impl Fn(usize) -> i32) {
        let Some(ptr) = self.allocation.host_ptr else {
            return;
        };
        for i in 0..self.len {
            // SAFETY: as in `as_slice`; no dispatch uses the buffer yet.
            unsafe { ptr.cast::<i32>().as_ptr().add(i).write(f(i)) };
        }
    }
}

/// The platform every object of a run holds (shared, so the steps' values own what they hold).
type Shared = Arc<LinuxPlatform>;

/// Step 1 of the main job, [`Job::set_up`]: the runtime over the device, the GPU and CPU
/// agents, the kernarg and fine-grained pools, the kernel's metadata from the code object
/// (its work-group limit and kernarg layout, read before anything is allocated), the checks
/// of the options against them, and an AQL queue of 1024 packets on the GPU. The later steps
/// are its methods, in order: [`Job::load`], [`Job::buffers`], [`Job::dispatches`],
/// [`Job::submit`], [`Job::wait`], [`Job::verify`], [`Job::finish`]; [`run`] is all of them.
/// A test composes them with its own corruption in between (a kernarg segment or a packet
/// changed in the [`Dispatches`]), without the main job knowing of it.
pub struct Job {
    // Dropped first: the queue, then the rest; the runtime last.
    queue: AqlQueue<Shared>,
    config: DemoConfig,
    emulated: Option<Arc<hsa_emu::EmulatedKfd>>,
    stats_before: Option<ExecutionStats>,
    device: String,
    gpu_name: String,
    gpu_node: NodeId,
    cpu_node: NodeId,
    target: TargetId,
    kernarg_pool: hsa_core::runtime::PoolHandle,
    fine_pool: hsa_core::runtime::PoolHandle,
    code_object: PathBuf,
    code_object_bytes: Vec<u8>,
    kernarg_bytes: u32,
    hidden: Vec<HiddenArg>,
    rt: Runtime<Shared>,
}

/// Step 2, [`Job::load`]: the code object loaded and frozen, and the kernel's symbol.
pub struct LoadedKernel {
    executable: Executable<Shared>,
    kernel: KernelInfo,
}

impl LoadedKernel {
    /// The kernel's kernel object (the device address of its kernel descriptor).
    pub fn kernel_object(&self) -> hsa_core::GpuVa {
        self.kernel.kernel_object
    }
}

/// Step 3, [`Job::buffers`]: buffers `a`, `b` and `c` of [`padded_elements`] ints each in
/// the fine-grained pool; `a` and `b` hold their inputs, `c` zeros, the padding past the grid
/// [`PAST_GRID_VALUES`].
pub struct Buffers {
    a: IntBuffer,
    b: IntBuffer,
    c: IntBuffer,
    expected_a: Vec<i32>,
    expected_b: Vec<i32>,
}

impl Buffers {
    /// The device addresses of `a`, `b` and `c`.
    pub fn addresses(&self) -> [u64; 3] {
        [&self.a, &self.b, &self.c].map(|b| b.allocation.va.0)
    }
}

/// Step 4, [`Job::dispatches`]: for each dispatch of the chain its completion signal, its
/// kernarg segment (written) and its kernel dispatch packet (not yet in the queue).
pub struct Dispatches {
    signals: Arc<SignalPool<Shared>>,
    completions: Vec<Signal<Shared>>,
    kernargs: Vec<Allocation>,
    packets: Vec<KernelDispatch>,
}

impl Dispatches {
    /// Dispatches in the chain.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether the chain is empty (it never is after [`Job::dispatches`]).
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The kernel dispatch packet of dispatch `k`, to change before [`Job::submit`].
    ///
    /// # Panics
    /// When `k` is not below [`Dispatches::len`].
    pub fn packet_mut(&mut self, k: usize) -> &mut KernelDispatch {
        &mut self.packets[k]
    }

    /// Writes `segment` over dispatch `k`'s kernarg segment (from its start).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `k` is past the chain or `segment` is longer than the
    /// kernarg segment.
    pub fn write_kernarg(&self, k: usize, segment: &[u8]) -> Result<(), Error> {
        let ka = self.kernargs.get(k).ok_or_else(|| {
            error!(
                Status::InvalidArgument,
                "dispatch {k} of a chain of {}",
                self.kernargs.len()
            )
        })?;
        write_bytes(ka, segment)
    }
}

/// What [`Job::verify`] checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Elements checked against the host reference.
    pub elements: u64,
    /// Elements past the grid checked to be untouched.
    pub past_grid: u64,
}

impl Job {
    /// Step 1 (see [`Job`]): checks the options ([`validate_config`]), makes the runtime over
    /// `device`, finds GPU agent `config.agent`, the CPU agent and its kernarg and
    /// fine-grained pools, reads the kernel's metadata from the code object (`config`'s, or
    /// [`find_code_object`]'s for the agent's ISA), checks the work-group size
    /// ([`check_workgroup_size`]) and the memory ([`check_memory`]), and creates the queue
    /// (its error callback records the error for [`Job::wait`]).
    ///
    /// # Errors
    /// As [`run`] for these steps.
    pub fn set_up(device: SelectedDevice, config: &DemoConfig) -> Result<Job, Error> {
        validate_config(config)?;
        let SelectedDevice { platform, emulated } = device;
        let stats_before = emulated.as_ref().map(|e| e.execution_stats());
        let device = platform.device_kind().to_string();
        let rt = Runtime::new(Arc::new(platform))?;
        let gpu = crate::report::agents::nth_gpu(&rt, config.agent)?;
        let cpu = rt
            .first_cpu()
            .ok_or_else(|| error!(Status::InvalidAgent, "no CPU agent"))?;
        let target = *gpu.isa().ok_or_else(|| {
            error!(
                Status::InvalidIsa,
                "GPU agent {} has no known ISA",
                gpu.name()
            )
        })?;
        let kernarg_pool = rt
            .find_pool(cpu.handle(), GlobalFlags::KERNARG)
            .ok_or_else(|| {
                error!(
                    Status::InvalidMemoryPool,
                    "no kernarg pool on the CPU agent"
                )
            })?;
        let (kernarg_pool, kernarg_info) = (kernarg_pool.handle(), kernarg_pool.info().clone());
        let fine_pool = rt
            .find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED)
            .ok_or_else(|| {
                error!(
                    Status::InvalidMemoryPool,
                    "no fine-grained pool on the CPU agent"
                )
            })?;
        let (fine_pool, fine_info) = (fine_pool.handle(), fine_pool.info().clone());

        // The code object's metadata, read before anything is allocated: the kernel's
        // work-group limit and kernarg layout (hidden arguments included).
        let path = match &config.code_object {
            Some(p) => p.clone(),
            None => find_code_object(&default_code_object_dir(), &target)?,
        };
        // The whole path, in front of the cause: with `alloc` an error keeps a long message
        // whole.
        let shown = path.display().to_string();
        let in_file = |e: Error| e.context(&shown);
        let bytes = crate::report::code_object::read_code_object_file(&path)?;
        let aligned = hsa_core::loader::code_object::AlignedBytes::new(&bytes);
        let co = CodeObject::parse(aligned.as_bytes()).map_err(in_file)?;
        let metadata = co.kernel(config.kernel.name()).map_err(in_file)?.metadata;
        let hidden = metadata
            .args()
            .collect::<Result<Vec<_>, Error>>()
            .map_err(in_file)?
            .iter()
            .filter(|a| a.is_hidden())
            .map(|a| HiddenArg {
                kind: a.value_kind.to_owned(),
                offset: a.offset,
                size: a.size,
            })
            .collect();
        check_workgroup_size(
            config,
            metadata.max_flat_workgroup_size,
            gpu.workgroup_max_size(),
        )?;
        // At least the three pointers of vector_add.
        let kernarg_bytes = metadata.kernarg_segment_size.max(24);
        check_memory(config, kernarg_bytes, &fine_info, &kernarg_info)?;

        let gpu_node = NodeId(gpu.node());
        // No error callback: the queue records why it stopped (`AqlQueue::error`).
        let queue_config =
            QueueConfig::new(gpu_node, 1024, gpu.queue_min_size(), gpu.queue_max_size());
        let queue = AqlQueue::create(rt.platform_ref().clone(), &queue_config)?;
        Ok(Job {
            config: config.clone(),
            emulated,
            stats_before,
            device,
            gpu_name: gpu.name().to_string(),
            gpu_node,
            cpu_node: NodeId(cpu.node()),
            target,
            kernarg_pool,
            fine_pool,
            code_object: path,
            code_object_bytes: bytes,
            kernarg_bytes,
            hidden,
            queue,
            rt,
        })
    }

    /// The configuration of the run.
    pub fn config(&self) -> &DemoConfig {
        &self.config
    }

    /// Step 2: loads the code object on the GPU agent, freezes the executable and finds the
    /// kernel's symbol; on the emulated device it registers the kernel's host implementation
    /// for its kernel object (the interpreter's fallback, and `HSA_RT_EMULATION=host`'s
    /// kernel).
    ///
    /// # Errors
    /// The loader's, in front of the code object's path; `Status::InvalidSymbolName` when the
    /// symbol is not a kernel.
    pub fn load(&self) -> Result<LoadedKernel, Error> {
        let shown = self.code_object.display().to_string();
        let in_file = |e: Error| e.context(&shown);
        let name = self.config.kernel.name();
        let mut executable = Executable::new(self.rt.platform_ref().clone());
        executable
            .load_code_object(
                self.gpu_node,
                &self.target,
                &self.code_object_bytes,
                MemoryKind::System,
            )
            .map_err(in_file)?;
        executable.freeze()?;
        let kernel = executable
            .symbol_by_name(name, Some(self.gpu_node))?
            .kernel
            .clone()
            .ok_or_else(|| error!(Status::InvalidSymbolName, "{name} is not a kernel"))?;
        if let Some(emulated) = &self.emulated {
            hsa_emu::device::host_kernels::register_test_kernel(
                emulated,
                kernel.kernel_object,
                name,
            )?;
        }
        Ok(LoadedKernel { executable, kernel })
    }

    /// Step 3: allocates and fills the three buffers (see [`Buffers`]).
    ///
    /// # Errors
    /// The pool's allocation error; `Status::InvalidAllocation` for fine-grained memory
    /// without a host pointer.
    pub fn buffers(&self) -> Result<Buffers, Error> {
        let n = self.config.elements as usize;
        let padded = padded_elements(&self.config) as usize;
        let buffer = |past_grid: i32, fill: &dyn Fn(usize) -> i32| -> Result<IntBuffer, Error> {
            let allocation = self.rt.allocate(self.fine_pool, padded as u64 * 4)?;
            if allocation.host_ptr.is_none() {
                bail!(
                    Status::InvalidAllocation,
                    "fine-grained memory at {:#x} has no host pointer",
                    allocation.va.0
                );
            }
            let b = IntBuffer {
                allocation,
                len: padded,
            };
            b.fill(|i| if i < n { fill(i) } else { past_grid });
            Ok(b)
        };
        let [past_a, past_b, past_c] = PAST_GRID_VALUES;
        let a = buffer(past_a, &|i| (i as i32).wrapping_mul(7).wrapping_sub(3))?;
        let b = buffer(past_b, &|i| (i as i32) ^ 0x5a5a)?;
        let c = buffer(past_c, &|_| 0)?;
        let expected_a = a.as_slice()[..n].to_vec();
        let expected_b = b.as_slice()[..n].to_vec();
        Ok(Buffers {
            a,
            b,
            c,
            expected_a,
            expected_b,
        })
    }

    /// The explicit kernel arguments of dispatch `k` of the chain: `a`, `b`, `c` for
    /// vector_add; for the others the source and destination, ping-ponging between `a` and
    /// `c` (even dispatches read `a` and write `c`, odd ones read `c` and write `a`).
    pub fn explicit_arguments(&self, k: usize, buffers: &Buffers) -> Vec<u64> {
        let [a, b, c] = buffers.addresses();
        match self.config.kernel {
            DemoKernel::VectorAdd => vec![a, b, c],
            _ if k % 2 == 0 => vec![a, c],
            _ => vec![c, a],
        }
    }

    /// The kernarg segment of a dispatch with explicit arguments `explicit`: the kernel's
    /// `.kernarg_segment_size` bytes (at least 24), the arguments as consecutive u64s from
    /// offset 0, the hidden arguments filled ([`hidden_argument`]).
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` when the arguments do not fit the segment.
    pub fn kernarg_segment(&self, explicit: &[u64]) -> Result<Vec<u8>, Error> {
        kernarg_segment(self.kernarg_bytes, explicit, &self.hidden, &self.config)
    }

    /// Step 4: for each dispatch of the chain, a completion signal (an interrupt signal of
    /// value 1), a kernarg segment allocated and written ([`Job::explicit_arguments`],
    /// [`Job::kernarg_segment`]) and its kernel dispatch packet: barrier bit, system-scope
    /// fences, 1-D, the work-group size of [`dispatch_workgroup_size`], a grid of `elements`.
    ///
    /// # Errors
    /// The signal's or the allocation's error; as [`Job::kernarg_segment`].
    pub fn dispatches(
        &self,
        kernel: &LoadedKernel,
        buffers: &Buffers,
    ) -> Result<Dispatches, Error> {
        let signals = Arc::new(SignalPool::new(
            self.rt.platform_ref().clone(),
            self.cpu_node,
        ));
        let mut d = Dispatches {
            signals,
            completions: Vec::new(),
            kernargs: Vec::new(),
            packets: Vec::new(),
        };
        for k in 0..self.config.chain as usize {
            let completion = d.signals.create_interrupt(1)?;
            let ka = self
                .rt
                .allocate(self.kernarg_pool, u64::from(self.kernarg_bytes))?;
            d.kernargs.push(ka);
            write_bytes(
                &ka,
                &self.kernarg_segment(&self.explicit_arguments(k, buffers))?,
            )?;
            d.packets.push(KernelDispatch {
                flags: HeaderFlags {
                    barrier: true,
                    ..HeaderFlags::SYSTEM
                },
                dimensions: 1,
                workgroup_size: [dispatch_workgroup_size(&self.config), 1, 1],
                grid_size: [self.config.elements, 1, 1],
                private_segment_size_bytes: kernel.kernel.private_segment_size,
                group_segment_size_bytes: kernel.kernel.group_segment_size,
                kernel_object: kernel.kernel.kernel_object,
                kernarg_address: ka.va,
                completion_signal: completion.handle(),
            });
            d.completions.push(completion);
        }
        Ok(d)
    }

    /// Step 5: writes the chain into the queue — each dispatch after the first behind a
    /// barrier-AND packet on the previous one's completion signal — and rings the doorbell
    /// after each dispatch.
    ///
    /// # Errors
    /// The packet builders' and the queue's errors.
    pub fn submit(&self, d: &Dispatches) -> Result<(), Error> {
        for (k, dispatch) in d.packets.iter().enumerate() {
            let mut reservation = self.queue.reserve(if k == 0 { 1 } else { 2 })?;
            if k > 0 {
                let barrier = BarrierAnd::new(
                    HeaderFlags::SYSTEM,
                    &[d.completions[k - 1].handle()],
                    SignalHandle::NULL,
                )?;
                reservation.write_next(&barrier.emit()?)?;
            }
            let last = reservation.write_next(&dispatch.emit()?)?;
            self.queue.ring_doorbell(last)?;
        }
        Ok(())
    }

    /// Step 6: waits until the last dispatch's completion signal drops below 1, calling
    /// `on_progress(done, total)` every 100 ms on the emulated device interpreting machine
    /// code (work-groups completed of all the chain's, from the device's own count).
    ///
    /// # Errors
    /// A queue error reported through the queue's callback (with the emulated device's
    /// detail when it has it); `Status::Error` after 60 s.
    pub fn wait(&self, d: &Dispatches, on_progress: &mut dyn FnMut(u64, u64)) -> Result<(), Error> {
        let last = d
            .completions
            .last()
            .ok_or_else(|| error!(Status::Error, "no dispatch"))?;
        let started = std::time::Instant::now();
        // The work-groups the interpreter will run: every dispatch's, from its grid and
        // work-group sizes (the device counts work-groups of every queue: this run's only).
        let counted = self
            .emulated
            .as_ref()
            .filter(|e| e.execution_mode() != hsa_emu::ExecutionMode::HostOnly)
            .zip(self.stats_before);
        let total_workgroups = u64::from(self.config.elements)
            .div_ceil(u64::from(dispatch_workgroup_size(&self.config)))
            * u64::from(self.config.chain);
        loop {
            if let Some((e, before)) = &counted {
                let done = e.execution_stats().workgroups - before.workgroups;
                on_progress(done.min(total_workgroups), total_workgroups);
            }
            let v = last.wait(
                SignalCondition::Lt,
                1,
                100_000_000,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
            if v < 1 {
                return Ok(());
            }
            // The queue starts without scratch: grow it when the CP asks (a failure stops
            // the queue, reported below).
            let _ = self.queue.serve_scratch_request();
            if let Some(e) = self.queue.error() {
                // The queue has what amdkfd reported (the status, the event's data); the
                // emulated device's log has what its packet processor and interpreter saw.
                let q = self.queue.hw_id().0;
                let e = e.context(&format!("queue {q}"));
                let detailed = self
                    .emulated
                    .as_ref()
                    .and_then(|d| d.queue_error(q))
                    .map(|d| d.context(&format!("queue {q}")));
                return Err(detailed.unwrap_or(e));
            }
            if started.elapsed().as_secs() >= 60 {
                bail!(
                    Status::Error,
                    "timed out after 60 s waiting for dispatch {} (signal value {v})",
                    self.config.chain
                );
            }
        }
    }

    /// Step 7: checks every element of the result against the host reference (the chain ends
    /// in `c` after an odd number of dispatches, in `a` after an even one; vector_add always
    /// in `c`), and that the elements past the grid of all three buffers still hold
    /// [`PAST_GRID_VALUES`].
    ///
    /// # Errors
    /// `Status::Error` naming the kernel, the first wrong element, its value and the
    /// expected one; or the buffer and element past the grid that changed.
    pub fn verify(&self, buffers: &Buffers) -> Result<Verified, Error> {
        let config = &self.config;
        let n = config.elements as usize;
        let (a, c) = (&buffers.a, &buffers.c);
        let (expected_a, expected_b) = (&buffers.expected_a, &buffers.expected_b);
        let result = if config.chain % 2 == 1 || config.kernel == DemoKernel::VectorAdd {
            c
        } else {
            a
        };
        let wg = usize::from(dispatch_workgroup_size(config));
        let reversals = if config.kernel == DemoKernel::LocalReverse {
            config.chain % 2
        } else {
            0
        };
        let mut verified = 0u64;
        for (i, got) in result.as_slice()[..n].iter().enumerate() {
            let want = match config.kernel {
                DemoKernel::VectorAdd => expected_a
                    .get(i)
                    .zip(expected_b.get(i))
                    .map(|(x, y)| x.wrapping_add(*y)),
                DemoKernel::VectorCopy => expected_a.get(i).copied(),
                DemoKernel::LocalReverse if reversals == 1 => {
                    let base = i / wg * wg;
                    // validate_config refuses a partial work-group for local_reverse: every
                    // element has its mirror in its group.
                    (base + wg)
                        .checked_sub(1 + (i - base))
                        .and_then(|j| expected_a.get(j).copied())
                }
                DemoKernel::LocalReverse => expected_a.get(i).copied(),
            };
            let Some(want) = want else {
                bail!(
                    Status::Error,
                    "{}: element {i} has no expected value (work-group of {wg} past the {} \
                     elements)",
                    config.kernel.name(),
                    expected_a.len()
                );
            };
            if *got != want {
                bail!(
                    Status::Error,
                    "{}: element {i} is {got}, expected {want}",
                    config.kernel.name()
                );
            }
            verified += 1;
        }
        let mut past_grid = 0u64;
        let [past_a, past_b, past_c] = PAST_GRID_VALUES;
        for (name, buf, want) in [
            ("a", &buffers.a, past_a),
            ("b", &buffers.b, past_b),
            ("c", &buffers.c, past_c),
        ] {
            for (i, got) in buf.as_slice().iter().enumerate().skip(n) {
                if *got != want {
                    bail!(
                        Status::Error,
                        "{}: element {i} of buffer {name}, past the grid of {n} work-items, \
                         is {got}, expected it untouched ({want}): a work-item beyond the grid \
                         ran",
                        config.kernel.name()
                    );
                }
                past_grid += 1;
            }
        }
        Ok(Verified {
            elements: verified,
            past_grid,
        })
    }

    /// Step 8: frees the kernarg segments and buffers, destroys the completion signals, the
    /// queue and the executable, and says what the run did.
    ///
    /// # Errors
    /// The runtime's error freeing memory or destroying the queue or the executable.
    pub fn finish(
        self,
        kernel: LoadedKernel,
        buffers: Buffers,
        dispatches: Dispatches,
        verified: Verified,
    ) -> Result<DemoOutcome, Error> {
        for ka in &dispatches.kernargs {
            self.rt.free(ka.va)?;
        }
        for buf in [&buffers.a, &buffers.b, &buffers.c] {
            self.rt.free(buf.allocation.va)?;
        }
        drop(dispatches);
        self.queue.destroy()?;
        kernel.executable.destroy()?;
        let execution = self
            .emulated
            .as_ref()
            .zip(self.stats_before)
            .map(|(e, before)| {
                let now = e.execution_stats();
                ExecutionStats {
                    interpreted_dispatches: now.interpreted_dispatches
                        - before.interpreted_dispatches,
                    host_dispatches: now.host_dispatches - before.host_dispatches,
                    workgroups: now.workgroups - before.workgroups,
                    instructions: now.instructions - before.instructions,
                    lane_instructions: now.lane_instructions - before.lane_instructions,
                    interpreter_ns: now.interpreter_ns - before.interpreter_ns,
                    pm4_packets: now.pm4_packets - before.pm4_packets,
                    sdma_packets: now.sdma_packets - before.sdma_packets,
                    decoded_instructions: now.decoded_instructions - before.decoded_instructions,
                    invalidated_code_pages: now.invalidated_code_pages
                        - before.invalidated_code_pages,
                    code_bytes_read: now.code_bytes_read - before.code_bytes_read,
                }
            });
        let executor = match execution {
            None => "GPU",
            Some(s) => match (s.interpreted_dispatches > 0, s.host_dispatches > 0) {
                (true, false) => "gfx9 interpreter",
                (false, true) => "host implementation",
                (true, true) => "gfx9 interpreter and host implementation",
                (false, false) => "nothing",
            },
        }
        .to_string();
        Ok(DemoOutcome {
            agent: self.gpu_name,
            agent_node: self.gpu_node.0,
            device: self.device,
            code_object: self.code_object,
            dispatches: self.config.chain,
            workgroup_size: dispatch_workgroup_size(&self.config),
            elements_verified: verified.elements,
            elements_past_grid_verified: verified.past_grid,
            executor,
            execution,
        })
    }
}

/// Runs the main job on `device`: [`Job::set_up`], [`Job::load`], [`Job::buffers`],
/// [`Job::dispatches`], [`Job::submit`], [`Job::wait`], [`Job::verify`], [`Job::finish`].
/// It registers the host implementation of the test kernel for its kernel object once
/// loaded, when the device is the emulated one (the fallback of its interpreter), verifies
/// every element, and that the elements past the grid (the padding of each buffer to whole
/// work-groups, [`padded_elements`]) still hold [`PAST_GRID_VALUES`].
///
/// The options are checked before anything is allocated ([`validate_config`]), then the
/// work-group size against the kernel's metadata and the agent ([`check_workgroup_size`]) and
/// the buffers against the pools ([`check_memory`]). The kernarg segment is the kernel's
/// `.kernarg_segment_size` bytes with its hidden arguments filled ([`hidden_argument`]).
///
/// # Errors
/// `InvalidArgument` / `OutOfResources` from the checks above, naming the option;
/// `InvalidFile` / `InvalidCodeObject` naming the code-object file;
/// whatever step fails, with its status: no GPU (`InvalidAgent`), no matching code object
/// (`InvalidIsa`), a queue error reported through the queue's callback, a timeout
/// (`Status::Error` after 60 s), a mismatch (`Status::Error` naming the first wrong
/// element, its value and the expected one), or an element past the grid changed
/// (`Status::Error` naming the buffer, the element and its value).
pub fn run(device: SelectedDevice, config: &DemoConfig) -> Result<DemoOutcome, Error> {
    run_with_progress(device, config, &mut |_, _| {})
}

/// [`run`], calling `on_progress(done, total)` about every 100 ms while it waits for the
/// dispatches, on the emulated device interpreting machine code: `done` work-groups of all
/// dispatches' `total` completed, read from the device's own count
/// ([`hsa_emu::ExecutionStats::workgroups`], live as work-groups complete). On `/dev/kfd`,
/// or with `HSA_RT_EMULATION=host`, nothing counts work-groups and it is never called.
///
/// # Errors
/// As [`run`].
pub fn run_with_progress(
    device: SelectedDevice,
    config: &DemoConfig,
    on_progress: &mut dyn FnMut(u64, u64),
) -> Result<DemoOutcome, Error> {
    let job = Job::set_up(device, config)?;
    let kernel = job.load()?;
    let buffers = job.buffers()?;
    let dispatches = job.dispatches(&kernel, &buffers)?;
    job.submit(&dispatches)?;
    job.wait(&dispatches, on_progress)?;
    let verified = job.verify(&buffers)?;
    job.finish(kernel, buffers, dispatches, verified)
}
