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
//! | [`VirtualAddressRanges`] | address ranges reserved apart from memory, chunks mapped into them | `hsa_amd_vmem_*`, `Runtime::VMemory*`; amdgpu `GEM_VA` | Linux (amdkfd 1.15 and later, the emulated device) |
#![allow(unsafe_code)] // unsafe traits with unsafe methods; no unsafe blocks here

use core::ptr::NonNull;

use super::{HwQueue, MemoryChunk, MemoryFaultHandler, SdmaQueueRequest, SharedMemory};
use crate::addr::NodeId;
use crate::memory::AccessPermission;
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
    /// Address ranges reserved apart from memory (`None`:
    /// `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED` is false and ROCm 7's
    /// `hsa_amd_vmem_*` functions fail with `Status::InvalidArgument`, as ROCR 7's do on a
    /// driver without the support).
    pub virtual_ranges: Option<&'a dyn VirtualAddressRanges>,
}

impl<D> Capabilities<'_, D> {
    /// No capability at all: the default of [`Platform::capabilities`].
    pub fn none() -> Self {
        Capabilities {
            sdma: None,
            host_memory: None,
            sharing: None,
            memory_faults: None,
            virtual_ranges: None,
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
            .field("virtual_ranges", &self.virtual_ranges.is_some())
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

/// Address ranges reserved apart from the memory behind them, chunks mapped into them, and
/// each agent's access to each mapping: what ROCm 7's virtual-memory API needs of the system
/// (`hsa_amd_vmem_*`, `hsa_ext_amd.h`; HIP's `hipMemAddressReserve`, `hipMemMap`,
/// `hipMemSetAccess`). ROCR 7 (`Runtime::VMemory*`, `runtime.cpp`) reserves with libhsakmt's
/// address-only allocation and maps through the GPU's render node from amdkfd 1.15 on: the
/// chunk's buffer object is exported as a dma-buf (`AMDKFD_IOC_EXPORT_DMABUF`), imported on
/// each agent's render node (`DRM_IOCTL_PRIME_FD_TO_HANDLE`), mapped into the agent's VM at
/// the range's address (`DRM_IOCTL_AMDGPU_GEM_VA`), and mapped for the host by an mmap of the
/// render node at the object's `AMDGPU_GEM_MMAP` offset.
///
/// The runtime (`hsa_runtime::VirtualMemory`) keeps the book: which ranges are reserved,
/// which chunk is mapped where, the reference counts and the statuses of misuse. The platform
/// only does what the book decided, and refuses what would break its own state.
///
/// # Implementation safety
/// A reserved range is address space the platform hands to nobody else (no chunk of
/// [`Platform::allocate_memory`], no other reservation) until it is released. While a node
/// of a CPU agent has read access to a mapping, `[va, va + size)` is valid host memory holding
/// the chunk's bytes from the mapping's offset (writable too with write access); a GPU node
/// with access reaches the same bytes at the same addresses.
pub unsafe trait VirtualAddressRanges: Send + Sync {
    /// Reserves `size_bytes` (rounded up to the page) of address space for the host and the
    /// agents alike, aligned to `align_bytes` (a power of two, at least the page; bytes), at
    /// `hint` when that is aligned and free, else where the platform finds room (ROCR 7 asks
    /// libhsakmt for the fixed address first, then for any). Returns the start. Nothing is
    /// behind it: the host faults on it, the agents fault on it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a size of 0 or a bad alignment;
    /// `Status::OutOfResources` when no range fits.
    fn reserve_range(&self, size_bytes: u64, align_bytes: u64, hint: u64) -> Result<u64>;

    /// Gives the reservation starting at `start` back.
    ///
    /// # Safety
    /// Nothing is mapped in it any more ([`unmap_range`](Self::unmap_range) of each mapping
    /// returned), and nothing uses its addresses.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when no reservation of this platform starts at `start`;
    /// `Status::Error` when the system refuses (the range is then never reused).
    unsafe fn release_range(&self, start: u64) -> Result<()>;

    /// Maps `size_bytes` of `chunk`'s memory from byte `offset` at `va`, inside one
    /// reservation (page-aligned, all of it). No agent has access yet
    /// (`hsa_amd_vmem_map`; access comes with [`set_range_access`](Self::set_range_access)).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a range that is not page-aligned, not inside one
    /// reservation, meets another mapping, or passes the chunk's end, or a chunk that is not
    /// a live allocation of this platform; `Status::InvalidAgent` for a chunk of system
    /// memory (ROCR 7 maps device memory only: the chunk's owner must be a GPU);
    /// `Status::Error` when the driver refuses.
    fn map_range(&self, va: u64, size_bytes: u64, chunk: &MemoryChunk, offset: u64) -> Result<()>;

    /// Sets what the agent of `node` may do with the mapping starting at `va`, replacing what
    /// it could before; `None` (`HSA_ACCESS_PERMISSION_NONE`, ROCm 7's `hsa.h`) removes its
    /// access. A write-only permission maps the pages readable too: neither amdgpu nor the
    /// host has write-only pages.
    ///
    /// # Safety
    /// When access is removed or changed, neither the host nor any queue uses the mapping
    /// through `node` any more.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when no mapping starts at `va`; `Status::InvalidAgent` for
    /// an unknown node; `Status::Error` when the driver refuses (ROCR 7's status when
    /// `EnableAccess` fails).
    unsafe fn set_range_access(
        &self,
        va: u64,
        node: NodeId,
        access: Option<AccessPermission>,
    ) -> Result<()>;

    /// The access [`set_range_access`](Self::set_range_access) gave the agent of `node` to
    /// the mapping starting at `va` (`None` when none was set).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when no mapping starts at `va`.
    fn range_access(&self, va: u64, node: NodeId) -> Result<Option<AccessPermission>>;

    /// A new dma-buf file descriptor over `chunk`'s memory, which the caller owns
    /// (`hsa_amd_vmem_export_shareable_handle`; amdkfd `EXPORT_DMABUF`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a chunk that is not a live allocation of this platform
    /// or has no exportable buffer object; `Status::OutOfResources` when the driver refuses
    /// (ROCR 7's status when libhsakmt's export fails other than for a bad argument).
    fn export_chunk(&self, chunk: &MemoryChunk) -> Result<i32>;

    /// A chunk over the memory of dma-buf `fd` (another process's export, or this one's),
    /// with the node of the agent that owns it: registered with the driver, mapped for nobody
    /// (`hsa_amd_vmem_import_shareable_handle`; amdkfd `GET_DMABUF_INFO`, then
    /// `IMPORT_DMABUF` on the owner's GPU, as libhsakmt's
    /// `hsaKmtRegisterGraphicsHandleToNodes`). The caller keeps `fd`;
    /// [`Platform::free_memory`] of the chunk ends the import.
    ///
    /// # Errors
    /// `Status::IncompatibleArguments` for a descriptor that is no dma-buf of this system's
    /// GPUs (ROCR 7's status when the registration fails); `Status::OutOfResources` when
    /// there is no address space.
    fn import_chunk(&self, fd: i32) -> Result<(MemoryChunk, NodeId)>;

    /// Removes the mapping starting at `va`: every agent's access, then the mapping.
    ///
    /// # Safety
    /// Neither the host nor any queue uses the mapping any more.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when no mapping starts at `va`; `Status::Error` when the
    /// driver refuses (the mapping is then kept, with whatever access could not be removed).
    unsafe fn unmap_range(&self, va: u64) -> Result<()>;
}
