//! What a platform may be able to do beyond [`Platform`]'s methods, each capability a trait of
//! its own, reached through [`Platform::capabilities`].
//!
//! A platform that has a capability implements its trait and hands itself out in
//! [`Capabilities`]; one that does not leaves the field `None`, and the caller that needs it
//! returns the status ROCR returns when the driver lacks it (each trait's doc names it). The
//! split keeps [`Platform`] to what every backend has (memory, queues, events, time) and lets
//! a wrapper such as the fake platform's `FaultInjector` forward one method instead of every
//! optional one by hand.
//!
//! | capability | what | ROCR / amdkfd | who has it |
//! |---|---|---|---|
//! | [`SdmaQueues`] | SDMA queues for the copy engine | `BlitSdma`, `KFD_IOC_QUEUE_TYPE_SDMA` | Linux (`/dev/kfd`, the emulated device) |
//! | [`HostMemoryRegistration`] | the application's pages reachable by agents | `hsa_amd_memory_lock`, KFD `USERPTR` | Linux |
//! | [`MemorySharing`] | memory exported to and imported from other processes | `hsa_amd_ipc_memory_*`, KFD `EXPORT_DMABUF`/`IMPORT_DMABUF` | Linux |
//! | [`MemoryFaultReports`] | GPU memory faults told to the runtime | `Runtime::VMFaultHandler`, `KFD_IOC_EVENT_MEMORY` | Linux, bare metal (IH ring) |
#![allow(unsafe_code)] // unsafe traits with unsafe methods; no unsafe blocks here

use core::ptr::NonNull;

use super::{HwQueue, MemoryChunk, MemoryFaultHandler, SdmaQueueRequest, SharedMemory};
use crate::addr::NodeId;
use crate::status::Result;

#[allow(unused_imports)] // doc links
use super::Platform;

/// The optional capabilities of one platform ([`Platform::capabilities`]); `D` is the
/// platform's [`Platform::Doorbell`]. Each field is the platform itself seen through that
/// capability's trait, or `None` when it lacks it.
pub struct Capabilities<'a, D> {
    /// SDMA queues (`None`: copies run on the host).
    pub sdma: Option<&'a dyn SdmaQueues<D>>,
    /// Registration of memory the host already has (`None`: `hsa_amd_memory_lock` is
    /// `Status::Error`, ROCR's status when the driver refuses).
    pub host_memory: Option<&'a dyn HostMemoryRegistration>,
    /// Memory shared with other processes (`None`: `hsa_amd_ipc_*` is
    /// `Status::InvalidArgument`, ROCR's status when the driver cannot share).
    pub sharing: Option<&'a dyn MemorySharing>,
    /// GPU memory-fault reports (`None`: the runtime learns of no faults; system event handlers
    /// are kept and never called).
    pub memory_faults: Option<&'a dyn MemoryFaultReports>,
}

impl<D> Capabilities<'_, D> {
    /// No capability at all: the default of [`Platform::capabilities`].
    pub fn none() -> Self {
        Capabilities {
            sdma: None,
            host_memory: None,
            sharing: None,
            memory_faults: None,
        }
    }
}

impl<D> Clone for Capabilities<'_, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for Capabilities<'_, D> {}

impl<D> core::fmt::Debug for Capabilities<'_, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Capabilities")
            .field("sdma", &self.sdma.is_some())
            .field("host_memory", &self.host_memory.is_some())
            .field("sharing", &self.sharing.is_some())
            .field("memory_faults", &self.memory_faults.is_some())
            .finish()
    }
}

/// SDMA queues: rings of SDMA packets an SDMA engine of a GPU consumes (amdkfd
/// `KFD_IOC_QUEUE_TYPE_SDMA`; ROCR's `BlitSdma`). `D` is the platform's doorbell handle: the
/// queue returned is rung with [`Platform::ring_doorbell`] and destroyed with
/// [`Platform::destroy_queue`]. A platform without it keeps the copies on the host
/// ([`SdmaQueue::create`](crate::sdma::SdmaQueue::create) is then
/// `Status::InvalidQueueCreation`, "no SDMA engine").
///
/// # Implementation safety
/// A queue created reads only the ring and writes only the read pointer named in the request;
/// as for [`Platform`], every method may be called from any thread at once.
pub unsafe trait SdmaQueues<D>: Send + Sync {
    /// Creates an SDMA queue over the ring and pointers of `request`, which the core has
    /// zeroed (Ref: ROCR `BlitSdma::Initialize`, `hsaKmtCreateQueue(HSA_QUEUE_SDMA)`). The
    /// returned doorbell is rung with [`Platform::ring_doorbell`] and the new write pointer in
    /// bytes; [`Platform::destroy_queue`] destroys it. May block.
    ///
    /// # Safety
    /// The caller guarantees the ring and the two pointer words stay valid and are not freed
    /// until `destroy_queue` has returned for this queue, and that the pointer words are
    /// accessed atomically.
    ///
    /// # Errors
    /// `Status::InvalidQueueCreation` when the node has no SDMA engine or the request is
    /// malformed; `Status::OutOfResources` when the node has no free SDMA queue.
    unsafe fn create_sdma_queue(&self, request: &SdmaQueueRequest) -> Result<HwQueue<D>>;
}

/// Registration of memory the host already has, so that agents reach it
/// (`hsa_amd_memory_lock`; KFD `ALLOC_MEMORY_OF_GPU` with `USERPTR`, then
/// `MAP_MEMORY_TO_GPU`). A platform without it cannot lock memory it did not allocate: the C
/// API then returns `Status::Error`, ROCR's status when the driver refuses the registration
/// (`MemoryRegion::Lock`).
///
/// # Implementation safety
/// A chunk returned by [`register_host_memory`](Self::register_host_memory) has `host_ptr`
/// equal to the host address given and reaches the same pages at `gpu_va` for the nodes
/// named, until it is deregistered.
pub unsafe trait HostMemoryRegistration: Send + Sync {
    /// Makes `size_bytes` of memory the host already has at `host` reachable by the agents of
    /// `nodes`. The chunk returned has `host_ptr` equal to `host` and `gpu_va` where the
    /// agents reach the pages, which the platform chooses: a fresh device address, as ROCR's
    /// `agent_ptr` for locked memory on a discrete GPU (HIP relies on the two differing).
    /// [`deregister_host_memory`](Self::deregister_host_memory) gives it back. A CPU node in
    /// `nodes` needs nothing (the host reaches its own memory).
    ///
    /// # Safety
    /// The caller guarantees that `[host, host + size_bytes)` is mapped read-write memory of
    /// this process and stays mapped until `deregister_host_memory` of the chunk has
    /// returned. (The same pages may be registered more than once, each time at another
    /// device address.)
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an address or size that is not page-aligned, a size of 0
    /// or an unknown node; `Status::Error` when the memory cannot be registered;
    /// `Status::OutOfResources` when it cannot be mapped to an agent.
    unsafe fn register_host_memory(
        &self,
        host: NonNull<u8>,
        size_bytes: u64,
        nodes: &[NodeId],
    ) -> Result<MemoryChunk>;

    /// Ends a registration of [`register_host_memory`](Self::register_host_memory): the agents
    /// no longer reach the memory; the host memory itself stays the caller's.
    ///
    /// # Safety
    /// The caller guarantees that `chunk` was returned by this platform's
    /// `register_host_memory`, has not been deregistered, and that no queue uses it any more.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a chunk that is not a live registration;
    /// `Status::ResourceFree` when the driver would not release it.
    unsafe fn deregister_host_memory(&self, chunk: &MemoryChunk) -> Result<()>;
}

/// Memory shared between processes (`hsa_amd_ipc_memory_create`, `_attach`; KFD
/// `EXPORT_DMABUF` and `IMPORT_DMABUF`). A platform without other processes to share with
/// lacks it: the C API then returns `Status::InvalidArgument`, ROCR's status when the driver
/// cannot share memory (`hsaKmtShareMemory` failing in `IPCCreate`).
///
/// # Implementation safety
/// A chunk returned by [`import_memory`](Self::import_memory) is valid for its whole size at
/// `host_ptr` and `gpu_va` until freed with [`Platform::free_memory`]; it holds what its
/// exporter wrote (not zeros), and other processes may write it concurrently.
pub unsafe trait MemorySharing: Send + Sync {
    /// Makes `chunk` (from [`Platform::allocate_memory`]) importable by other processes:
    /// returns what [`import_memory`](Self::import_memory) in another process (or this one)
    /// needs. The export lasts until the chunk is freed; exporting a chunk again returns the
    /// same description.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when the chunk is not a live allocation of this platform or
    /// its memory cannot be exported (registered host memory; system memory allocated
    /// without [`MemoryFlags::SHAREABLE`](super::MemoryFlags::SHAREABLE)).
    fn export_memory(&self, chunk: &MemoryChunk) -> Result<SharedMemory>;

    /// Maps a chunk another process (or this one) exported into this process: a new chunk over
    /// the same memory, reachable by the agents of `nodes` and by the host (`host_ptr` set), at
    /// a device address of this platform's choosing. [`Platform::free_memory`] of the returned
    /// chunk ends the import (the memory stays the exporter's).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a description that names no live export (the exporter
    /// freed the chunk or exited, the words are not an export of this platform's kind, the
    /// size differs), or an unknown node; `Status::OutOfResources` when there is no address
    /// space or the mapping cannot be made.
    fn import_memory(&self, shared: &SharedMemory, nodes: &[NodeId]) -> Result<MemoryChunk>;
}

/// GPU memory-fault reports: the platform tells the runtime of every GPU memory fault it
/// learns of (ROCR `Runtime::VMFaultHandler`, which hands each fault to the handlers of
/// `hsa_amd_register_system_event_handler`). A platform without it learns of no faults.
pub trait MemoryFaultReports: Send + Sync {
    /// Installs the function the platform calls on every GPU memory fault it learns of
    /// (`None`: none from now on), replacing the one before. The handler runs on a thread of
    /// the platform's choosing — Linux: the event monitor's, on each `KFD_IOC_EVENT_MEMORY`
    /// event (its `kfd_hsa_memory_exception_data`); bare metal: the host's IH interrupt
    /// handler — and, for a fault that stopped queues, before their
    /// [`QueueRequest::on_error`](super::QueueRequest::on_error) callbacks, as ROCR's
    /// memory-fault handler runs before the queue's error handler. It may call back into the
    /// platform. Never blocks.
    ///
    /// # Errors
    /// `Status::Error` when the platform cannot report memory faults after all (no GPU).
    fn set_memory_fault_handler(&self, handler: Option<MemoryFaultHandler>) -> Result<()>;
}
