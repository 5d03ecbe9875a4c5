//! The copy engine: asynchronous copies between memory the runtime or the application holds,
//! what `hsa_amd_memory_async_copy`, `hsa_amd_memory_async_copy_rect`,
//! `hsa_amd_svm_prefetch_async` and `hsa_amd_memory_fill` do (`hsa_ext_amd.h`), and copy
//! profiling (`hsa_amd_profiling_async_copy_enable`, `hsa_amd_profiling_get_async_copy_time`).
//!
//! **SDMA.** A copy runs on an SDMA queue of its copy node (a GPU) when SDMA is enabled
//! ([`CopyConfig::sdma`], ROCR's `HSA_ENABLE_SDMA`), the platform has SDMA queues
//! ([`SdmaQueues`]) and both ranges are memory the copy node reaches (its own pool, a system
//! pool, or a pool it was allowed), as ROCR 5.2 runs it (`BlitSdma`). The queue is made at the
//! first such copy ([`SdmaQueue`]: `CREATE_QUEUE` of `KFD_IOC_QUEUE_TYPE_SDMA`, a 1 MiB ring).
//! The command is ROCR's ([`copy_commands`], [`copy_rect_commands`]): the engine itself waits
//! for the dependency signals, copies, decrements the completion signal and, when the signal
//! has an event mailbox, writes the event id there and raises the interrupt; with profiling on,
//! `TIMESTAMP` packets write the start and end into the completion signal, in the GPU's clock.
//! The call returns once the command is in the ring.
//!
//! **Engines.** The SDMA queues are kept per node and per [`CopyEngineId`], in-flight commands
//! per engine: today every copy takes [`CopyEngineId::DEFAULT`], as ROCR 5.2 does. ROCm 7's
//! engine selection adds methods over the same tables: `hsa_amd_memory_get_preferred_copy_engine`
//! (which engines a node pair prefers), `hsa_amd_memory_async_copy_on_engine` (a copy on a
//! given engine: the `engine` argument of [`CopyEngine::submit_sdma`]) and
//! `hsa_amd_memory_copy_engine_status` (which engines have nothing in flight:
//! [`CopyEngine::engines_in_use`]).
//!
//! **Host copies.** Otherwise — no GPU, the application's own memory, no SDMA queue (creating
//! one failed: said once at debug level) — the copy runs on the host (`memmove` between the
//! host mappings of the two ranges, [`HostMemory::copy_bytes`]; ROCR does the same between CPU
//! agents), in submission order, as an SDMA engine runs its ring: a copy starts once every
//! dependency signal has been observed at 0 and every earlier host copy has completed; then
//! the completion signal is decremented (or set to -1 when the copy failed, as
//! `hsa_ext_amd.h` says). A copy whose dependencies are already satisfied, submitted while no
//! other host copy is pending, runs at once in the caller's thread; the others run on a copy
//! thread that exits when nothing is pending.
//!
//! **Faults.** A GPU memory fault ends the GPU's SDMA queues (amdkfd evicts the process's
//! queues, `kfd_dqm_evict_pasid`): [`CopyEngine::on_gpu_memory_fault`] sets the completion
//! signal of each copy on them that had not completed to -1 and marks them stopped, so later
//! copies on them fail with `ERROR` rather than wait for an engine that is gone.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hsa_core::addr::{GpuVa, NodeId};
use hsa_core::platform::{MemoryFault, Platform};
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::{Agent, Runtime};
use hsa_core::sdma::{copy_commands, copy_rect_commands, RectSurface, SdmaCompletion, SdmaQueue};
use hsa_core::signal::{LoadOrder, MemoryOrder, SignalCondition, StoreOrder, WaitState};
use hsa_core::{bail, Error, Status};

#[allow(unused_imports)] // doc links
use hsa_core::platform::SdmaQueues;

use crate::events::{FaultSink, MemoryFaults};
use crate::{lock, Sig};

/// One SDMA engine of a GPU node, as ROCm 7 numbers them (`hsa_amd_sdma_engine_id_t`: bit
/// `n` of a mask is engine `n`); ROCR 5.2 and this runtime use one per node, the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CopyEngineId(pub u32);

impl CopyEngineId {
    /// The engine every copy takes today.
    pub const DEFAULT: CopyEngineId = CopyEngineId(0);
}

/// Where the copy engine writes its SDMA log lines (ROCm 7's `hsa_amd_enable_logging` with
/// `HSA_AMD_LOG_FLAG_SDMA`): called with one line, no newline, per command submitted.
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How the copy engine behaves, fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyConfig {
    /// Whether copies may use SDMA queues (ROCR's `HSA_ENABLE_SDMA`, default on).
    pub sdma: bool,
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig { sdma: true }
    }
}

/// One side of a rect copy: a base, its pitches and the rect's offset on it (x bytes, y rows,
/// z slices), as `hsa_pitched_ptr_t` and an `hsa_dim3_t` give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PitchedSurface {
    /// First byte of the surface.
    pub base: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Bytes from one slice to the next (0: one slice).
    pub slice: u64,
    /// The rect's first byte: x (bytes), y (rows), z (slices).
    pub offset: [u32; 3],
}

impl PitchedSurface {
    fn rect(&self) -> RectSurface {
        RectSurface {
            base: GpuVa(self.base),
            pitch: self.pitch,
            slice: self.slice,
            offset: self.offset.map(u64::from),
        }
    }

    /// Address of row `y`, slice `z` of the rect.
    fn row(&self, y: u32, z: u32) -> u64 {
        self.base
            + u64::from(self.offset[0])
            + (u64::from(self.offset[1]) + u64::from(y)) * self.pitch
            + (u64::from(self.offset[2]) + u64::from(z)) * self.slice
    }
}

/// When a profiled copy started and ended: ticks of the clock that stamped them (`node`'s GPU
/// clock for an SDMA copy; the system timestamp for a host copy, `node` `None`). The C API
/// translates GPU ticks to the system domain as it does dispatch times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyTime {
    /// When the copy started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
    /// The GPU whose SDMA engine stamped the times; `None`: the host, in system ticks.
    pub node: Option<NodeId>,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// `hsa_amd_svm_prefetch_async`: nothing to move.
    Prefetch,
    Linear {
        dst: u64,
        src: u64,
        size: usize,
    },
    Rect {
        dst: PitchedSurface,
        src: PitchedSurface,
        range: [u32; 3],
    },
}

struct Job<P: Platform + 'static> {
    /// Keeps the runtime (and so the signals' pool and the memory) alive until the copy ends.
    rt: Arc<Runtime<Arc<P>>>,
    host: Arc<HostMemory>,
    deps: Vec<Arc<Sig<P>>>,
    /// `None` only for a prefetch without a completion signal.
    completion: Option<Arc<Sig<P>>>,
    op: Op,
    /// Write start/end timestamps into the completion signal.
    profile: bool,
}

struct Pending<P: Platform + 'static> {
    jobs: VecDeque<Job<P>>,
    /// A copy thread is running (it takes the jobs in order).
    running: bool,
}

/// An SDMA command that may not have run yet: the queue's write pointer after it, and its
/// copy's completion signal.
type InFlight<P> = (u64, Weak<Sig<P>>);

/// One SDMA engine of one GPU: the node id and the engine.
type EngineKey = (u32, CopyEngineId);

/// An SDMA queue of the copy engine.
type Queue<P> = Arc<SdmaQueue<Arc<P>>>;

/// A profiled copy's completion signal and the GPU node whose SDMA engine stamped its times
/// (`None`: the host).
type Profiled<P> = (Weak<Sig<P>>, Option<NodeId>);

/// The copy engine of one runtime (module docs). Every method may be called from any thread.
pub struct CopyEngine<P: Platform + 'static> {
    rt: Arc<Runtime<Arc<P>>>,
    host: Arc<HostMemory>,
    faults: Arc<MemoryFaults<P>>,
    config: CopyConfig,
    pending: Arc<Mutex<Pending<P>>>,
    /// Copies profile (`hsa_amd_profiling_async_copy_enable`).
    profiling: AtomicBool,
    /// Completion signals of profiled copies, by handle (the weak reference tells a signal
    /// from a later one at the same address).
    profiled: Mutex<HashMap<u64, Profiled<P>>>,
    /// SDMA queues by GPU node and engine, made at the first copy that uses one; `None` when
    /// the platform refused (that engine's copies stay on the host).
    sdma: Mutex<HashMap<EngineKey, Option<Queue<P>>>>,
    /// SDMA commands submitted that may not have run yet, by GPU node and engine.
    in_flight: Mutex<HashMap<EngineKey, Vec<InFlight<P>>>>,
    /// The SDMA log's sink, when on ([`CopyEngine::set_sdma_log`]).
    sdma_log: Mutex<Option<LogSink>>,
    /// The virtual-memory API's mappings, which GPUs reach without a pool allocation.
    vmem: Arc<crate::VirtualMemory<P>>,
}

impl<P: Platform + 'static> std::fmt::Debug for CopyEngine<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyEngine")
            .field("config", &self.config)
            .field("sdma_queues", &lock(&self.sdma).len())
            .finish_non_exhaustive()
    }
}

impl<P: Platform + 'static> CopyEngine<P> {
    /// The copy engine of `rt`, reaching locked memory through `host` and starting to watch
    /// GPU memory faults through `faults` at its first SDMA queue.
    pub fn new(
        rt: Arc<Runtime<Arc<P>>>,
        host: Arc<HostMemory>,
        faults: Arc<MemoryFaults<P>>,
        vmem: Arc<crate::VirtualMemory<P>>,
        config: CopyConfig,
    ) -> Arc<CopyEngine<P>> {
        let engine = Arc::new(CopyEngine {
            vmem,
            rt,
            host,
            faults,
            config,
            pending: Arc::new(Mutex::new(Pending {
                jobs: VecDeque::new(),
                running: false,
            })),
            profiling: AtomicBool::new(false),
            profiled: Mutex::new(HashMap::new()),
            sdma: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            sdma_log: Mutex::new(None),
        });
        let sink: Weak<dyn FaultSink> = Arc::downgrade(&engine) as Weak<dyn FaultSink>;
        engine.faults.set_after(sink);
        engine
    }

    /// Whether copies submitted from now on record their start and end times in their
    /// completion signal (`hsa_amd_profiling_async_copy_enable`).
    pub fn set_profiling(&self, enable: bool) {
        self.profiling.store(enable, Ordering::Release);
    }

    /// Turns the SDMA log on (`Some`: each SDMA command submitted from now on is written to
    /// the sink as one line, `SDMA node N engine E: K dwords:` and the dwords in hex) or off
    /// (`None`); ROCm 7's `hsa_amd_enable_logging` with `HSA_AMD_LOG_FLAG_SDMA`.
    pub fn set_sdma_log(&self, sink: Option<LogSink>) {
        *lock(&self.sdma_log) = sink;
    }

    /// The device address of `len` bytes at `ptr` when they lie in one pool allocation that
    /// GPU `node` reaches (its own pool, a system (CPU agent's) pool, or one it was allowed),
    /// in the agent range of memory locked for `node`, or in mappings of the virtual-memory
    /// API that gave `node` access.
    fn gpu_range(&self, ptr: u64, len: u64, node: NodeId) -> Option<GpuVa> {
        let Ok(info) = self.rt.pointer_info(GpuVa(ptr)) else {
            // Locked host memory through its agent pointer, for the GPUs it was registered
            // with (ROCR's copy agent reaches locked memory so: `hsa_amd_memory_lock`).
            if let Some(l) = self.host.locked_info(ptr) {
                let inside = ptr
                    .checked_sub(l.agent_base)
                    .and_then(|o| o.checked_add(len))
                    .is_some_and(|end| end <= l.size);
                return (inside && l.gpus.contains(&node)).then_some(GpuVa(ptr));
            }
            // Memory of the virtual-memory API: the GPU reaches it where its access is set.
            return self.vmem.reachable(ptr, len, node).then_some(GpuVa(ptr));
        };
        let a = info.allocation;
        let end = (ptr - a.va.0).checked_add(len)?;
        if end > a.size_bytes {
            return None;
        }
        let owner_is_cpu = self
            .rt
            .agents()
            .iter()
            .any(|ag| ag.node() == info.pool_owner.0 && !ag.is_gpu());
        (info.pool_owner == node || owner_is_cpu || info.allowed_nodes.contains(node))
            .then_some(GpuVa(ptr))
    }

    /// The device range a rect copy touches on one surface, when GPU `node` reaches all of it.
    fn rect_reachable(&self, s: &PitchedSurface, range: [u32; 3], node: NodeId) -> Option<()> {
        let first = s
            .base
            .checked_add(u64::from(s.offset[0]))?
            .checked_add(u64::from(s.offset[1]).checked_mul(s.pitch)?)?
            .checked_add(u64::from(s.offset[2]).checked_mul(s.slice)?)?;
        let len = u64::from(range[0])
            .checked_add(u64::from(range[1] - 1).checked_mul(s.pitch)?)?
            .checked_add(u64::from(range[2] - 1).checked_mul(s.slice)?)?;
        self.gpu_range(first, len, node).map(|_| ())
    }

    /// The SDMA queue of GPU `node`'s `engine`, made at the first call; `None` when the
    /// platform has none (said once, at debug level). The first queue made also starts
    /// watching GPU memory faults, which end it ([`CopyEngine::on_gpu_memory_fault`]).
    fn sdma_queue(&self, node: NodeId, engine: CopyEngineId) -> Option<Queue<P>> {
        let mut made = false;
        let queue = lock(&self.sdma)
            .entry((node.0, engine))
            .or_insert_with(
                || match SdmaQueue::create(self.rt.platform_ref().clone(), node) {
                    Ok(q) => {
                        made = true;
                        Some(Arc::new(q))
                    }
                    Err(e) => {
                        log::debug!(
                            "node {}: no SDMA queue ({}); copies run on the host",
                            node.0,
                            e.detail()
                        );
                        None
                    }
                },
            )
            .clone();
        if made {
            // After the queue map's lock is released: the fault handler takes it.
            self.faults.watch();
        }
        queue
    }

    /// A GPU memory fault on `node`: amdkfd evicts the process's queues of that GPU
    /// (`kfd_dqm_evict_pasid`), its SDMA queues included, so the engines run no more of their
    /// rings. Each queue is marked stopped (later copies on it fail with `ERROR` instead of
    /// waiting for ever), and every copy submitted to it that had not completed gets its
    /// completion signal set to -1, the error `hsa_ext_amd.h` gives for a failed copy.
    pub fn on_gpu_memory_fault(&self, node: NodeId) {
        let queues: Vec<(CopyEngineId, Queue<P>)> = lock(&self.sdma)
            .iter()
            .filter(|((n, _), _)| *n == node.0)
            .filter_map(|((_, e), q)| Some((*e, q.clone()?)))
            .collect();
        for (engine, queue) in queues {
            queue.mark_stopped();
            let stuck = self.take_in_flight(&queue, engine);
            // The report is written before any completion signal changes: a program that
            // sees -1 and exits at once must not lose it.
            log::error!(
                "node {}: a GPU memory fault ended its SDMA queue; {} copies on it did \
                 not complete (completion signals set to -1), later ones fail",
                node.0,
                stuck.len()
            );
            for sig in stuck {
                sig.store(-1, StoreOrder::Release);
            }
        }
    }

    /// Takes the commands of `queue` past its read pointer off the in-flight list and returns
    /// the completion signals of those still above 0 (the queue has stopped, so none of them
    /// can complete any more).
    fn take_in_flight(&self, queue: &SdmaQueue<Arc<P>>, engine: CopyEngineId) -> Vec<Arc<Sig<P>>> {
        let read = queue.read_pointer();
        let stuck: Vec<Weak<Sig<P>>> = {
            let mut in_flight = lock(&self.in_flight);
            let list = in_flight.entry((queue.node().0, engine)).or_default();
            let (stuck, _done): (Vec<_>, Vec<_>) = list.drain(..).partition(|(end, _)| *end > read);
            stuck.into_iter().map(|(_, s)| s).collect()
        };
        stuck
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|sig| sig.load(LoadOrder::Acquire) > 0)
            .collect()
    }

    /// The engines of GPU `node` with commands that may not have run yet (ROCm 7's
    /// `hsa_amd_memory_copy_engine_status` answers the complement): bit `n` for engine `n`.
    /// A command counts while the engine's read pointer has not passed it and its completion
    /// signal is above 0 (the engine decrements the signal as the command's last step, before
    /// it moves the read pointer: a program that saw its copy complete finds the engine free).
    pub fn engines_in_use(&self, node: NodeId) -> u32 {
        let queues: Vec<(CopyEngineId, Queue<P>)> = lock(&self.sdma)
            .iter()
            .filter(|((n, _), _)| *n == node.0)
            .filter_map(|((_, e), q)| Some((*e, q.clone()?)))
            .collect();
        let in_flight = lock(&self.in_flight);
        queues
            .iter()
            .filter(|(e, q)| {
                let read = q.read_pointer();
                in_flight.get(&(node.0, *e)).is_some_and(|l| {
                    l.iter().any(|(end, sig)| {
                        *end > read
                            && sig
                                .upgrade()
                                .is_some_and(|s| s.load(LoadOrder::Acquire) > 0)
                    })
                })
            })
            .fold(0, |mask, (e, _)| mask | 1u32.checked_shl(e.0).unwrap_or(0))
    }

    /// Submits a copy to the SDMA queue of `engine` on GPU `node` when it can (module docs):
    /// `build` appends the command given the dependency values and the completion;
    /// `Ok(false)` when the copy must run on the host instead (SDMA disabled, or no queue).
    ///
    /// # Errors
    /// `build`'s error; the queue's (`Status::Error` for a queue a memory fault stopped).
    pub fn submit_sdma(
        &self,
        node: NodeId,
        engine: CopyEngineId,
        deps: &[Arc<Sig<P>>],
        completion: &Arc<Sig<P>>,
        build: impl FnOnce(&mut Vec<u32>, &[GpuVa], &SdmaCompletion) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        if !self.config.sdma {
            return Ok(false);
        }
        let Some(queue) = self.sdma_queue(node, engine) else {
            return Ok(false);
        };
        let value_of = |sig: &Sig<P>| GpuVa(sig.raw().as_ptr() as u64 + 8);
        let dep_values: Vec<GpuVa> = deps.iter().map(|d| value_of(d)).collect();
        let raw = completion.raw();
        let base = raw.as_ptr() as u64;
        let mailbox = raw.event_mailbox_ptr().load(Ordering::Acquire);
        let profile = self.profiling.load(Ordering::Acquire);
        let target = SdmaCompletion {
            value: value_of(completion),
            mailbox: (mailbox != 0).then(|| (GpuVa(mailbox), raw.event_id())),
            timestamps: profile.then_some((GpuVa(base + 32), GpuVa(base + 40))),
        };
        let mut cmd = Vec::new();
        build(&mut cmd, &dep_values, &target)?;
        let sink = lock(&self.sdma_log).clone();
        if let Some(sink) = sink {
            let words: Vec<String> = cmd.iter().map(|w| format!("{w:08x}")).collect();
            sink(&format!(
                "SDMA node {} engine {}: {} dwords: {}",
                node.0,
                engine.0,
                cmd.len(),
                words.join(" ")
            ));
        }
        let end = queue.submit(&cmd)?;
        if profile {
            lock(&self.profiled).insert(
                completion.handle().0,
                (Arc::downgrade(completion), Some(node)),
            );
        }
        {
            let read = queue.read_pointer();
            let mut in_flight = lock(&self.in_flight);
            let list = in_flight.entry((node.0, engine)).or_default();
            list.retain(|(e, _)| *e > read);
            list.push((end, Arc::downgrade(completion)));
        }
        // A fault handler that stopped the queue between the submit and the entry above
        // did not see this copy.
        if queue.is_stopped() {
            for sig in self.take_in_flight(&queue, engine) {
                sig.store(-1, StoreOrder::Release);
            }
        }
        Ok(true)
    }

    /// Copies `size` bytes from `src` to `dst` once every dependency signal is 0, then
    /// decrements `completion` (`hsa_amd_memory_async_copy`; module docs for how and where).
    /// `copy_node` is ROCR's copy agent: the destination's when it is a GPU, else the
    /// source's; `None` (two CPU agents) copies on the host. `size` 0 copies nothing and leaves
    /// the signal alone, as ROCR 5.2.
    ///
    /// # Safety
    /// Outside the runtime's allocations and locks, `dst` and `src` are valid for `size` bytes
    /// until `completion` is decremented.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a host copy of a range the host cannot reach, named,
    /// before the copy is queued; `Status::Error` for an SDMA queue a memory fault stopped;
    /// `Status::OutOfResources` when the copy thread cannot start.
    pub unsafe fn copy(
        &self,
        dst: u64,
        src: u64,
        size: usize,
        copy_node: Option<NodeId>,
        deps: Vec<Arc<Sig<P>>>,
        completion: Arc<Sig<P>>,
    ) -> Result<(), Error> {
        if size == 0 {
            return Ok(());
        }
        if let Some(node) = copy_node {
            let ranges = (
                self.gpu_range(dst, size as u64, node),
                self.gpu_range(src, size as u64, node),
            );
            if let (Some(d), Some(s)) = ranges {
                let build = |cmd: &mut Vec<u32>, deps: &[GpuVa], target: &SdmaCompletion| {
                    copy_commands(cmd, d, s, size as u64, deps, target);
                    Ok(())
                };
                if self.submit_sdma(node, CopyEngineId::DEFAULT, &deps, &completion, build)? {
                    return Ok(());
                }
            }
        }
        self.host.host_range(&self.rt, dst, size, "dst")?;
        self.host.host_range(&self.rt, src, size, "src")?;
        self.enqueue(deps, Some(completion), Op::Linear { dst, src, size })
    }

    /// The copy agent's SDMA engines ROCR 7 would offer for a copy from `src` to `dst`
    /// (`hsa_amd_memory_copy_engine_status`, ROCR's `GpuAgent::DmaCopyStatus`), as a mask of
    /// `hsa_amd_sdma_engine_id_t` bits (bit `n`: engine `n`, [`CopyEngineId`]), each engine
    /// counted only while nothing it was given is still in flight:
    /// - between two GPUs of one xGMI hive whose copy agent has xGMI SDMA engines: those
    ///   (bits 2 and up);
    /// - otherwise engine 0 (ROCR's host-to-device engine; on gfx90a only for a copy from a
    ///   CPU to a GPU, ROCR's RAS limit), engine 1 (device-to-host; engine 0 when the GPU has
    ///   one SDMA engine), and the xGMI engines.
    ///
    /// The copy agent is the source's when it is a GPU, else the destination's (ROCR's).
    ///
    /// # Errors
    /// `Status::InvalidAgent` for an unknown node, a copy between an agent and itself, or two
    /// CPUs (ROCR: `INVALID_AGENT` from `Runtime::CopyMemoryStatus`); `Status::OutOfResources`
    /// when no engine is free (ROCR's status then).
    pub fn engine_status(&self, dst: NodeId, src: NodeId) -> Result<u32, Error> {
        let (copy, is_xgmi, h2d) = self.direction(dst, src)?;
        let engines = copy.sdma_engines();
        let xgmi = copy.sdma_xgmi_engines();
        let copy_node = NodeId(copy.node());
        let busy = self.engines_in_use(copy_node);
        let free = |n: u32| busy & (1u32 << n) == 0;
        let mut mask = 0u32;
        if is_xgmi {
            for i in 0..xgmi {
                if free(2 + i) {
                    mask |= 1 << (2 + i);
                }
            }
        } else {
            let gfx90a = copy.node_properties().gfx_target_version == 90010;
            if engines > 0 && free(0) && (h2d || !gfx90a) {
                mask |= 1;
            }
            if engines > 1 && free(1) {
                mask |= 2;
            } else if engines == 1 && free(0) {
                mask |= 1;
            }
            for i in 0..xgmi {
                if free(2 + i) {
                    mask |= 1 << (2 + i);
                }
            }
        }
        if mask == 0 {
            bail!(
                Status::OutOfResources,
                "node {}: no free SDMA engine for a copy from node {} to node {} \
                 ({engines} SDMA and {xgmi} xGMI SDMA engines, in use {busy:#x})",
                copy.node(),
                src.0,
                dst.0
            );
        }
        Ok(mask)
    }

    /// The engines ROCR 7 recommends for a copy from `src` to `dst`
    /// (`hsa_amd_memory_get_preferred_copy_engine`, ROCR's `GpuAgent::DmaPreferredEngine`):
    /// ROCR answers the GPU-to-GPU link's `recommended_sdma_engine_id_mask` (amdkfd 1.17+,
    /// `hsa_core::platform::IoLink::rec_sdma_eng_id_mask`) on gfx94x when it names one
    /// engine, else 0. This runtime answers 0, "no preference", always: it does not take the
    /// mask from the link yet.
    ///
    /// # Errors
    /// As [`CopyEngine::engine_status`]'s agent checks.
    pub fn preferred_engines(&self, dst: NodeId, src: NodeId) -> Result<u32, Error> {
        self.direction(dst, src)?;
        Ok(0)
    }

    /// The copy agent of a copy from `src` to `dst` (the source when it is a GPU, else the
    /// destination), whether the copy is between GPUs of one xGMI hive with xGMI SDMA engines,
    /// and whether it goes from a CPU to a GPU.
    fn direction(&self, dst: NodeId, src: NodeId) -> Result<(&Agent, bool, bool), Error> {
        let agent = |n: NodeId| {
            self.rt
                .agents()
                .iter()
                .find(|a| a.node() == n.0)
                .ok_or_else(|| hsa_core::error!(Status::InvalidAgent, "no agent of node {}", n.0))
        };
        let (d, s) = (agent(dst)?, agent(src)?);
        if dst == src {
            bail!(
                Status::InvalidAgent,
                "source and destination are the same agent (node {})",
                dst.0
            );
        }
        let copy = if s.is_gpu() { s } else { d };
        if !copy.is_gpu() {
            bail!(
                Status::InvalidAgent,
                "nodes {} and {} are both CPUs: no copy engine",
                src.0,
                dst.0
            );
        }
        let hive = |a: &Agent| a.node_properties().hive_id;
        let is_xgmi = s.is_gpu()
            && d.is_gpu()
            && hive(d) != 0
            && hive(s) == hive(d)
            && copy.sdma_xgmi_engines() > 0;
        Ok((copy, is_xgmi, !s.is_gpu() && d.is_gpu()))
    }

    /// Copies as [`CopyEngine::copy`], on SDMA engine `engine` of `copy_node`
    /// (`hsa_amd_memory_async_copy_on_engine`, ROCR's `GpuAgent::DmaCopyOnEngine`): a copy
    /// within one GPU runs as [`CopyEngine::copy`] runs it unless `force_sdma`; a copy the
    /// engine cannot reach (memory outside the copy node's reach) runs on the host, as
    /// [`CopyEngine::copy`]'s do.
    ///
    /// # Safety
    /// As [`CopyEngine::copy`].
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an `engine` past the copy node's SDMA and xGMI SDMA
    /// engines, a non-xGMI engine for a copy between GPUs of one hive, engine 0 on a gfx90a
    /// for a copy not from a CPU to a GPU (ROCR's checks); `Status::InvalidAgent` as
    /// [`CopyEngine::engine_status`] for unknown nodes or two CPUs; as [`CopyEngine::copy`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_on_engine(
        &self,
        dst: u64,
        dst_node: NodeId,
        src: u64,
        src_node: NodeId,
        size: usize,
        engine: CopyEngineId,
        force_sdma: bool,
        deps: Vec<Arc<Sig<P>>>,
        completion: Arc<Sig<P>>,
    ) -> Result<(), Error> {
        let same = dst_node == src_node;
        let (copy_node, gfx90a, engines, xgmi_engines, is_xgmi, h2d) = if same {
            let a = self
                .rt
                .agents()
                .iter()
                .find(|a| a.node() == dst_node.0)
                .ok_or_else(|| {
                    hsa_core::error!(Status::InvalidAgent, "no agent of node {}", dst_node.0)
                })?;
            if !a.is_gpu() {
                // Two CPU agents: ROCR's CPU agent copies on the host.
                // SAFETY: the caller's contract.
                return unsafe { self.copy(dst, src, size, None, deps, completion) };
            }
            (
                NodeId(a.node()),
                a.node_properties().gfx_target_version == 90010,
                a.sdma_engines(),
                a.sdma_xgmi_engines(),
                false,
                false,
            )
        } else {
            let (c, x, h) = self.direction(dst_node, src_node)?;
            (
                NodeId(c.node()),
                c.node_properties().gfx_target_version == 90010,
                c.sdma_engines(),
                c.sdma_xgmi_engines(),
                x,
                h,
            )
        };
        let n = engine.0;
        if n >= engines + xgmi_engines || (is_xgmi && n < 2) || (!h2d && !same && gfx90a && n == 0)
        {
            bail!(
                Status::InvalidArgument,
                "SDMA engine {n} cannot take a copy from node {} to node {} (node {} has \
                 {engines} SDMA and {xgmi_engines} xGMI SDMA engines)",
                src_node.0,
                dst_node.0,
                copy_node.0
            );
        }
        if same && !force_sdma {
            // SAFETY: the caller's contract.
            return unsafe { self.copy(dst, src, size, Some(copy_node), deps, completion) };
        }
        if size == 0 {
            return Ok(());
        }
        let ranges = (
            self.gpu_range(dst, size as u64, copy_node),
            self.gpu_range(src, size as u64, copy_node),
        );
        if let (Some(d), Some(s)) = ranges {
            let build = |cmd: &mut Vec<u32>, deps: &[GpuVa], target: &SdmaCompletion| {
                copy_commands(cmd, d, s, size as u64, deps, target);
                Ok(())
            };
            if self.submit_sdma(copy_node, engine, &deps, &completion, build)? {
                return Ok(());
            }
        }
        self.host.host_range(&self.rt, dst, size, "dst")?;
        self.host.host_range(&self.rt, src, size, "src")?;
        self.enqueue(deps, Some(completion), Op::Linear { dst, src, size })
    }

    /// Copies `range` (x bytes by y rows by z slices) from `src` to `dst` on GPU `copy_node`'s
    /// SDMA queue in `COPY_LINEAR_RECT` tiles, or on the host (`hsa_amd_memory_async_copy_rect`),
    /// after ROCR 5.2's checks (`BlitSdma::SubmitCopyRectCommand`). An empty range copies
    /// nothing.
    ///
    /// # Safety
    /// As [`CopyEngine::copy`], for the rect's rows on both surfaces.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for bases, pitches or slices not 4-byte aligned, a rect past
    /// a surface's pitch or slice, more than one slice without both slice pitches; as
    /// [`CopyEngine::copy`].
    pub unsafe fn copy_rect(
        &self,
        dst: &PitchedSurface,
        src: &PitchedSurface,
        range: [u32; 3],
        copy_node: NodeId,
        deps: Vec<Arc<Sig<P>>>,
        completion: Arc<Sig<P>>,
    ) -> Result<(), Error> {
        if range.contains(&0) {
            return Ok(());
        }
        check_rect(dst, src, range)?;
        if self.rect_reachable(dst, range, copy_node).is_some()
            && self.rect_reachable(src, range, copy_node).is_some()
        {
            let (ds, ss) = (dst.rect(), src.rect());
            let extent = range.map(u64::from);
            let build = |cmd: &mut Vec<u32>, deps: &[GpuVa], target: &SdmaCompletion| {
                copy_rect_commands(cmd, &ds, &ss, extent, deps, target)
            };
            if self.submit_sdma(copy_node, CopyEngineId::DEFAULT, &deps, &completion, build)? {
                return Ok(());
            }
        }
        self.enqueue(
            deps,
            Some(completion),
            Op::Rect {
                dst: *dst,
                src: *src,
                range,
            },
        )
    }

    /// Decrements `completion` (when given) once the dependencies are 0, in order with the
    /// host copies (`hsa_amd_svm_prefetch_async`: this runtime has no SVM migration, the
    /// memory stays where it is, as ROCR 5.2 decrements the signal after its failing KFD call).
    ///
    /// # Errors
    /// `Status::OutOfResources` when the copy thread cannot start.
    pub fn prefetch(
        &self,
        deps: Vec<Arc<Sig<P>>>,
        completion: Option<Arc<Sig<P>>>,
    ) -> Result<(), Error> {
        self.enqueue(deps, completion, Op::Prefetch)
    }

    /// Stores `value` into `count` consecutive 32-bit words at `ptr`, now, by the host
    /// (`hsa_amd_memory_fill`: ROCR 5.2 fills device memory with a blit kernel and host memory
    /// from the host, synchronously either way).
    ///
    /// # Safety
    /// Outside the runtime's allocations and locks, `ptr` is valid for `count * 4` bytes.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a `ptr` that is 0 or not 4-byte aligned, a count that
    /// overflows, or a range the host cannot reach.
    pub unsafe fn fill(&self, ptr: u64, value: u32, count: usize) -> Result<(), Error> {
        if ptr == 0 || ptr % 4 != 0 {
            bail!(
                Status::InvalidArgument,
                "ptr {ptr:#x} is NULL or not 4-byte aligned"
            );
        }
        if count == 0 {
            return Ok(());
        }
        let bytes = count.checked_mul(4).ok_or_else(|| {
            hsa_core::error!(Status::InvalidArgument, "count {count} words overflow")
        })?;
        let h = self
            .host
            .host_range(&self.rt, ptr, bytes, "ptr")?
            .cast::<u32>();
        // SAFETY: `bytes` bytes at `h` are reachable (pool ranges checked by host_range,
        // others by the caller's contract); `ptr` is 4-aligned and the host mapping keeps the
        // offset, so `h` is too.
        unsafe { std::slice::from_raw_parts_mut(h, count) }.fill(value);
        Ok(())
    }

    /// When the profiled copy that completes `signal` started and ended.
    ///
    /// # Errors
    /// `Status::Error` when no profiled copy has completed `signal` (ROCR 5.2: the signal has
    /// no copy agent).
    pub fn copy_time(&self, signal: &Arc<Sig<P>>) -> Result<CopyTime, Error> {
        let handle = signal.handle().0;
        let profiled = lock(&self.profiled)
            .get(&handle)
            .and_then(|(w, node)| Some((w.upgrade()?, *node)))
            .filter(|(p, _)| Arc::ptr_eq(p, signal))
            .map(|(_, node)| node);
        let Some(node) = profiled else {
            bail!(
                Status::Error,
                "signal {handle:#x} has not completed a profiled copy \
                 (hsa_amd_profiling_async_copy_enable)"
            );
        };
        let raw = signal.raw();
        Ok(CopyTime {
            start: raw.start_ts().load(Ordering::Acquire),
            end: raw.end_ts().load(Ordering::Acquire),
            node,
        })
    }

    fn enqueue(
        &self,
        deps: Vec<Arc<Sig<P>>>,
        completion: Option<Arc<Sig<P>>>,
        op: Op,
    ) -> Result<(), Error> {
        let profile = self.profiling.load(Ordering::Acquire) && !matches!(op, Op::Prefetch);
        if let (true, Some(c)) = (profile, &completion) {
            lock(&self.profiled).insert(c.handle().0, (Arc::downgrade(c), None));
        }
        let job = Job {
            rt: self.rt.clone(),
            host: self.host.clone(),
            deps,
            completion,
            op,
            profile,
        };
        let mut p = lock(&self.pending);
        let ready = job.deps.iter().all(|d| d.load(LoadOrder::Acquire) == 0);
        if p.jobs.is_empty() && !p.running && ready {
            drop(p);
            run(job);
            return Ok(());
        }
        p.jobs.push_back(job);
        if !p.running {
            let pending = self.pending.clone();
            let spawned = std::thread::Builder::new()
                .name("hsa-rt copy".into())
                .spawn(move || worker(&pending));
            if let Err(e) = spawned {
                p.jobs.pop_back();
                bail!(Status::OutOfResources, "starting the copy thread: {e}");
            }
            p.running = true;
        }
        Ok(())
    }
}

impl<P: Platform + 'static> FaultSink for CopyEngine<P> {
    fn on_memory_fault(&self, fault: &MemoryFault) {
        self.on_gpu_memory_fault(fault.node);
    }
}

/// ROCR 5.2's rect checks (`BlitSdma::SubmitCopyRectCommand`).
fn check_rect(dst: &PitchedSurface, src: &PitchedSurface, range: [u32; 3]) -> Result<(), Error> {
    if dst.base % 4 != 0 || src.base % 4 != 0 {
        bail!(
            Status::InvalidArgument,
            "rect copy bases {:#x} and {:#x} must be 4-byte aligned",
            dst.base,
            src.base
        );
    }
    if dst.pitch % 4 != 0 || src.pitch % 4 != 0 || dst.slice % 4 != 0 || src.slice % 4 != 0 {
        bail!(
            Status::InvalidArgument,
            "rect copy pitches ({}, {}) and slices ({}, {}) must be multiples of 4",
            dst.pitch,
            src.pitch,
            dst.slice,
            src.slice
        );
    }
    let x = u64::from(range[0]);
    if u64::from(src.offset[0]) + x > src.pitch || u64::from(dst.offset[0]) + x > dst.pitch {
        bail!(
            Status::InvalidArgument,
            "rect copy width {} at x {} / {} runs past the pitch {} / {}",
            range[0],
            src.offset[0],
            dst.offset[0],
            src.pitch,
            dst.pitch
        );
    }
    for (p, what) in [(src, "src"), (dst, "dst")] {
        if p.slice != 0
            && p.pitch != 0
            && u64::from(p.offset[1]) + u64::from(range[1]) > p.slice / p.pitch
        {
            bail!(
                Status::InvalidArgument,
                "rect copy height {} at row {} runs past the {} rows of a {what} slice",
                range[1],
                p.offset[1],
                p.slice / p.pitch
            );
        }
    }
    if range[2] > 1 && (src.slice == 0 || dst.slice == 0) {
        bail!(
            Status::InvalidArgument,
            "rect copy of {} slices needs both slice pitches",
            range[2]
        );
    }
    Ok(())
}

/// The copy thread: runs the pending copies in order, exits when there are none.
fn worker<P: Platform + 'static>(pending: &Mutex<Pending<P>>) {
    loop {
        let job = {
            let mut p = lock(pending);
            match p.jobs.pop_front() {
                Some(j) => j,
                None => {
                    p.running = false;
                    return;
                }
            }
        };
        for d in &job.deps {
            d.wait(
                SignalCondition::Eq,
                0,
                u64::MAX,
                WaitState::Blocked,
                LoadOrder::Acquire,
            );
        }
        // Dropping the job may drop the last reference to the runtime: nothing of it is used
        // after this.
        run(job);
    }
}

/// Runs one copy whose dependencies are satisfied and completes its signal.
fn run<P: Platform + 'static>(job: Job<P>) {
    let start = job.rt.timestamp_ticks();
    let result = copy_on_host(&job);
    let Some(completion) = &job.completion else {
        return;
    };
    if job.profile {
        let raw = completion.raw();
        raw.start_ts().store(start, Ordering::Relaxed);
        raw.end_ts()
            .store(job.rt.timestamp_ticks().max(start), Ordering::Relaxed);
    }
    match result {
        Ok(()) => {
            completion.subtract(1, MemoryOrder::Release);
        }
        Err(e) => {
            log::info!("hsa_amd_memory_async_copy (at run time): {e}");
            completion.store(-1, StoreOrder::Release);
        }
    }
}

fn copy_on_host<P: Platform + 'static>(job: &Job<P>) -> Result<(), Error> {
    let (rt, host) = (&*job.rt, &*job.host);
    match job.op {
        Op::Prefetch => Ok(()),
        // SAFETY: the submitter's contract (CopyEngine::copy): the application's ranges stay
        // valid until the completion signal is decremented, which is after this.
        Op::Linear { dst, src, size } => unsafe { host.copy_bytes(rt, dst, src, size) },
        Op::Rect { dst, src, range } => {
            for z in 0..range[2] {
                for y in 0..range[1] {
                    // SAFETY: as above (CopyEngine::copy_rect).
                    unsafe {
                        host.copy_bytes(rt, dst.row(y, z), src.row(y, z), range[0] as usize)?
                    };
                }
            }
            Ok(())
        }
    }
}
