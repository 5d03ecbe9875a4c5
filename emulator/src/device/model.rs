//! The emulated GPU behind AMD's model interface: what libhsakmt's model mode (ROCR 7.2.4's
//! thunk, `hsakmtmodeliface.h` interface 0.4) asks of a GPU model library, answered by this
//! crate's command processors, SDMA engines and interpreter.
//!
//! In model mode (`HSA_MODEL_TOPOLOGY` set) libhsakmt answers the KFD ioctls itself: it
//! reads the topology from `$HSA_MODEL_TOPOLOGY` (amdkfd's sysfs layout; each GPU node's
//! `gpu_id` must be its node index + 1), keeps the event table, backs every buffer object
//! with one memfd, and for each GPU node reserves a 256 GiB *global aperture* in the process
//! in which a GPU virtual address `va` is the CPU address `aperture + va` (it maps a buffer
//! object there when the runtime maps it to the GPU). It loads the model library named by
//! `HSA_MODEL_LIB`, and drives one model instance per GPU node, in node order:
//!
//! - `create`, then `set_global_aperture(base, size)` and `set_set_event(fn, data)`;
//! - `alloced_memory(va, size, flags)` / `freed_memory(va, size)` for each buffer object of
//!   the node ([`ModelGpu::alloced_memory`]);
//! - `register_queue` for each AQL or SDMA queue, with the ring, read and write pointers as
//!   GPU virtual addresses, and `destroy_queue` ([`ModelGpu::register_queue`]).
//!
//! The GPU then runs as under the emulated amdkfd: a queue's command processor watches its
//! write pointer (`amd_queue_t.write_dispatch_id`; libhsakmt gives the model no doorbell),
//! reads packets, kernel objects, kernargs and signals at their GPU addresses, which reach
//! the host's aperture, and hands each signal event id to the host's `set_event`. The FLAT
//! apertures are the ones libhsakmt's model reports to the runtime
//! (`GET_PROCESS_APERTURES_NEW`: [`MODEL_LDS_APERTURE_BASE`],
//! [`MODEL_SCRATCH_APERTURE_BASE`]), so `src_shared_base` and `src_private_base` agree with
//! what ROCR and the compiler assume.
//!
//! What the interface cannot carry, and so the model does not do:
//! - a buffer object is visible to the GPU it was allocated on only (libhsakmt tells a model
//!   nothing of mappings to other GPUs, whose apertures differ);
//! - libhsakmt's model delivers no memory or hardware-exception events: a queue error stops
//!   the queue (an AQL queue's inactive signal says why, and its event reaches the host), and
//!   a memory fault ends the process with the fault's detail on stderr, as ROCR ends it on a
//!   GPU memory fault (an SDMA queue's fault would otherwise leave the runtime waiting for
//!   ever);
//! - ROCR 7.2.4's model mode itself aborts on `SET_TRAP_HANDLER` and `RUNTIME_ENABLE`, which
//!   its libhsakmt does not implement: only GPUs for which ROCR installs no trap handler
//!   without the debugger (gfx940-942, gfx950, gfx11 and later) get through its
//!   initialisation, with `DebugSupportedFirmware` (capability bit 29) clear in the topology
//!   (`kfd-emu --model` writes such a topology).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use hsa_core::{error, Error, Status};
use hsa_linux::kfd::abi::{
    CreateQueueArgs, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, KFD_IOC_QUEUE_TYPE_SDMA,
};
use hsa_linux::topology::Topology;

use super::memory::insert_aliased;
use super::{queue_manager, sdma, EmulatedKfd};
use crate::gfx9::aperture::Apertures;

/// The model interface version this library implements (`HSAKMT_MODEL_INTERFACE_VERSION_
/// MAJOR`/`_MINOR` of ROCR 7.2.4's `hsakmtmodeliface.h`); libhsakmt accepts a model of the
/// same major version and at least its minor one.
pub const INTERFACE_VERSION: (u32, u32) = (0, 4);

/// The LDS aperture base libhsakmt's model mode reports to the runtime
/// (`GET_PROCESS_APERTURES_NEW`'s `lds_base`), bytes; the aperture spans 4 GiB.
pub const MODEL_LDS_APERTURE_BASE: u64 = 0x4000_0000_0000_0000;

/// The scratch aperture base libhsakmt's model mode reports (`scratch_base`), bytes.
pub const MODEL_SCRATCH_APERTURE_BASE: u64 = 0x5000_0000_0000_0000;

/// The environment variable naming the model topology directory (libhsakmt's).
pub const TOPOLOGY_ENV: &str = "HSA_MODEL_TOPOLOGY";

/// One process's emulated GPUs, as the model library's instances share them: one
/// [`EmulatedKfd`] over the model topology, whose GPUs the instances take in node order.
pub struct ModelProcess {
    kfd: Arc<EmulatedKfd>,
    /// The GPUs' `gpu_id`s in node order, and how many instances took one.
    gpus: Mutex<(Vec<u32>, usize)>,
}

impl std::fmt::Debug for ModelProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelProcess")
            .field("gpus", &self.gpus)
            .finish()
    }
}

impl ModelProcess {
    /// The emulated GPUs of the model topology at `dir` (amdkfd's sysfs topology layout:
    /// `dir/nodes/N/...`), with libhsakmt's model apertures.
    ///
    /// # Errors
    /// The topology's read error (naming the file); [`Status::InvalidArgument`] when a GPU
    /// node's `gpu_id` is not its index + 1 (libhsakmt's model refuses such a topology too)
    /// or there is no GPU; [`EmulatedKfd::new`]'s errors.
    pub fn open(dir: &Path) -> Result<ModelProcess, Error> {
        ModelProcess::new(Topology::read(dir)?).map_err(|e| {
            error!(
                e.status(),
                "model topology {}: {}",
                dir.display(),
                e.detail()
            )
        })
    }

    /// The emulated GPUs of `topology` (libhsakmt's model topology, as read), with
    /// libhsakmt's model apertures.
    ///
    /// # Errors
    /// As [`ModelProcess::open`], but for reading.
    pub fn new(topology: Topology) -> Result<ModelProcess, Error> {
        let mut gpus = Vec::new();
        for (i, n) in topology.nodes.iter().enumerate() {
            let gpu_id = n.properties.gpu_id;
            if gpu_id == 0 {
                continue;
            }
            if u64::from(gpu_id) != i as u64 + 1 {
                return Err(error!(
                    Status::InvalidArgument,
                    "node {i} has gpu_id {gpu_id}; libhsakmt's model needs {} (the node \
                     index + 1)",
                    i + 1
                ));
            }
            gpus.push(gpu_id);
        }
        let kfd = EmulatedKfd::with_apertures(
            topology,
            Apertures::from_bases(MODEL_LDS_APERTURE_BASE, MODEL_SCRATCH_APERTURE_BASE),
        )?;
        Ok(ModelProcess {
            kfd,
            gpus: Mutex::new((gpus, 0)),
        })
    }

    /// [`ModelProcess::open`] of `$HSA_MODEL_TOPOLOGY`.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when the variable is unset; [`ModelProcess::open`]'s.
    pub fn from_env() -> Result<ModelProcess, Error> {
        let dir = std::env::var_os(TOPOLOGY_ENV).ok_or_else(|| {
            error!(
                Status::InvalidArgument,
                "{TOPOLOGY_ENV} is not set: libhsakmt's model mode sets it"
            )
        })?;
        ModelProcess::open(Path::new(&dir))
    }

    /// The emulated device the instances share.
    pub fn kfd(&self) -> &Arc<EmulatedKfd> {
        &self.kfd
    }

    /// The model instance of the next GPU node (libhsakmt's `create`, called once per GPU node
    /// in node order).
    ///
    /// # Errors
    /// [`Status::OutOfResources`] when every GPU of the topology has an instance already.
    pub fn create_gpu(&self) -> Result<ModelGpu, Error> {
        let mut g = self.gpus.lock().unwrap_or_else(PoisonError::into_inner);
        let (gpus, taken) = &mut *g;
        let gpu_id = *gpus.get(*taken).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "model: create called {} times for a topology of {} GPUs",
                *taken + 1,
                gpus.len()
            )
        })?;
        *taken += 1;
        Ok(ModelGpu {
            kfd: self.kfd.clone(),
            gpu_id,
            state: Mutex::new(GpuState::default()),
        })
    }
}

/// A model instance: one GPU node of the process.
pub struct ModelGpu {
    kfd: Arc<EmulatedKfd>,
    gpu_id: u32,
    state: Mutex<GpuState>,
}

impl std::fmt::Debug for ModelGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelGpu")
            .field("gpu_id", &self.gpu_id)
            .finish()
    }
}

#[derive(Default)]
struct GpuState {
    /// The global aperture: its CPU base and size, bytes.
    aperture: Option<(u64, u64)>,
    /// The buffer objects registered: GPU address -> (size, handle in the emulated device).
    buffers: BTreeMap<u64, (u64, u64)>,
}

/// A queue the host registered ([`ModelGpu::register_queue`]), as libhsakmt's
/// `hsakmt_model_queue_info` describes it: addresses are GPU virtual addresses (in the
/// global aperture).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueInfo {
    /// The ring's first byte.
    pub ring_base_address: u64,
    /// The write pointer (an AQL queue's `amd_queue_t.write_dispatch_id`).
    pub write_pointer_address: u64,
    /// The read pointer (an AQL queue's `amd_queue_t.read_dispatch_id`).
    pub read_pointer_address: u64,
    /// The ring's size, bytes.
    pub ring_size: u32,
    /// `KFD_IOC_QUEUE_TYPE_COMPUTE_AQL` (2) or `KFD_IOC_QUEUE_TYPE_SDMA` (1).
    pub queue_type: u32,
}

/// A registered queue: the emulated device's queue id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelQueue(u32);

impl ModelQueue {
    /// The emulated device's id of the queue.
    pub fn queue_id(self) -> u32 {
        self.0
    }
}

impl ModelGpu {
    /// The GPU's `gpu_id` in the topology.
    pub fn gpu_id(&self) -> u32 {
        self.gpu_id
    }

    /// `set_global_aperture`: GPU virtual address `va` is CPU address `base + va`, for `va`
    /// below `size` (bytes).
    pub fn set_global_aperture(&self, base: u64, size: u64) {
        self.state().aperture = Some((base, size));
    }

    /// `set_set_event`: the signal events of this GPU's queues go to `sink` (the event id),
    /// not to the emulated amdkfd's event table.
    pub fn set_event_sink(&self, sink: Box<dyn Fn(u32) + Send + Sync>) {
        self.kfd
            .device
            .event_sinks
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.gpu_id, Arc::from(sink));
    }

    /// `alloced_memory`: the host allocated the buffer object `va..va+size` (bytes, page
    /// multiples) on this GPU with KFD allocation `flags`; the GPU reaches it at its alias in
    /// the global aperture from now on (the host maps the pages there before the runtime
    /// uses the buffer on the GPU).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`], naming the range, before `set_global_aperture`, for a
    /// range outside the aperture or not page-aligned, or one overlapping a registered buffer.
    pub fn alloced_memory(&self, va: u64, size: u64, flags: u32) -> Result<(), Error> {
        let mut state = self.state();
        let bad = |why: &str| {
            error!(
                Status::InvalidArgument,
                "model alloced_memory {va:#x} (+{size:#x}, flags {flags:#x}) on GPU {}: {why}",
                self.gpu_id
            )
        };
        let (base, aperture_size) = state
            .aperture
            .ok_or_else(|| bad("no global aperture was set"))?;
        if va.checked_add(size).is_none_or(|end| end > aperture_size) {
            return Err(bad(&format!(
                "outside the global aperture of {aperture_size:#x} bytes"
            )));
        }
        let host = base
            .checked_add(va)
            .ok_or_else(|| bad("the alias overflows"))?;
        let handle =
            insert_aliased(&self.kfd.device, self.gpu_id, va, host, size).map_err(|e| {
                bad(&format!(
                    "not a page-aligned range free in the GPU's VM ({e})"
                ))
            })?;
        state.buffers.insert(va, (size, handle));
        Ok(())
    }

    /// `freed_memory`: the host freed the buffer object at `va` (`size` bytes).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for a `va`/`size` no `alloced_memory` registered;
    /// [`Status::Error`] while a queue of the GPU uses the buffer (its ring or `amd_queue_t`).
    pub fn freed_memory(&self, va: u64, size: u64) -> Result<(), Error> {
        let mut state = self.state();
        match state.buffers.get(&va) {
            Some(&(s, handle)) if s == size => {
                self.kfd
                    .device
                    .allocs
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(handle)
                    .map_err(|e| {
                        error!(
                            Status::Error,
                            "model freed_memory {va:#x} (+{size:#x}): a queue still uses it \
                             ({e})"
                        )
                    })?;
                state.buffers.remove(&va);
                Ok(())
            }
            _ => Err(error!(
                Status::InvalidArgument,
                "model freed_memory {va:#x} (+{size:#x}) on GPU {}: no such buffer was \
                 allocated",
                self.gpu_id
            )),
        }
    }

    /// `register_queue`: starts the GPU's command processor (AQL) or an SDMA engine on the
    /// queue `info` describes, as the emulated amdkfd's CREATE_QUEUE does (the same checks:
    /// the ring and pointers in registered buffers, the ring a power of two of at least
    /// 1 KiB). The queue is processed from the moment this returns.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] naming the queue for a type other than AQL or SDMA, or for
    /// what CREATE_QUEUE refuses (with its errno).
    pub fn register_queue(&self, info: &QueueInfo) -> Result<ModelQueue, Error> {
        let mut a = CreateQueueArgs {
            ring_base_address: info.ring_base_address,
            write_pointer_address: info.write_pointer_address,
            read_pointer_address: info.read_pointer_address,
            ring_size: info.ring_size,
            gpu_id: self.gpu_id,
            queue_type: info.queue_type,
            queue_percentage: 100,
            // KFD_QUEUE_PRIORITY normal, as ROCR asks for a default queue.
            queue_priority: 7,
            ..Default::default()
        };
        let device = &self.kfd.device;
        let r = match info.queue_type {
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => queue_manager::create_queue(device, &mut a),
            // No doorbell reaches the model: the engine takes the write pointer in memory,
            // which ROCR stores before it rings.
            KFD_IOC_QUEUE_TYPE_SDMA => sdma::create_queue_watching(
                device,
                &mut a,
                sdma::SdmaDoorbell::WritePointer,
                sdma::SdmaTarget::of(info.queue_type),
            ),
            t => {
                return Err(error!(
                    Status::InvalidArgument,
                    "model register_queue: queue type {t} (only AQL, 2, and SDMA, 1, reach a \
                     model)"
                ))
            }
        };
        r.map_err(|e| {
            error!(
                Status::InvalidArgument,
                "model register_queue {info:?} on GPU {}: refused as CREATE_QUEUE would ({e})",
                self.gpu_id
            )
        })?;
        Ok(ModelQueue(a.queue_id))
    }

    /// `destroy_queue`: stops the queue and forgets it.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for a queue that is not live.
    pub fn destroy_queue(&self, queue: ModelQueue) -> Result<(), Error> {
        queue_manager::destroy_queue(&self.kfd.device, queue.0).map_err(|e| {
            error!(
                Status::InvalidArgument,
                "model destroy_queue {}: {e}", queue.0
            )
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GpuState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
