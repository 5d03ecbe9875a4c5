//! ROCm 7's virtual-memory API (`hsa_amd_vmem_*`, ROCR 6.1 and later): reserving device
//! address ranges apart from the memory behind them, making physical allocations
//! ("handles"), mapping and unmapping them into reserved ranges, setting per-agent access,
//! and exporting and importing handles as dma-bufs.
//!
//! | ROCm 7 function | here |
//! |---|---|
//! | `hsa_amd_vmem_address_reserve`, `_reserve_align`, `_address_free` | [`VirtualMemory::reserve`], [`VirtualMemory::free`]: a range of the platform's address space with nothing behind it ([`VirtualAddressRanges::reserve_range`]); with `HSA_AMD_VMEM_ADDRESS_NO_REGISTER`, host address space only (an anonymous `mmap`, as ROCR 7) |
//! | `hsa_amd_vmem_handle_create`, `_handle_release` | [`VirtualMemory::create_handle`], [`VirtualMemory::release_handle`]: a chunk of its own from the pool's memory ([`Platform::allocate_memory`]) |
//! | `hsa_amd_vmem_map`, `_unmap` | [`VirtualMemory::map`], [`VirtualMemory::unmap`]: [`VirtualAddressRanges::map_range`] / `unmap_range` |
//! | `hsa_amd_vmem_set_access`, `_get_access` | [`VirtualMemory::set_access`], [`VirtualMemory::get_access`]: [`VirtualAddressRanges::set_range_access`] per mapping and agent |
//! | `hsa_amd_vmem_export_shareable_handle`, `_import_shareable_handle` | [`VirtualMemory::export`], [`VirtualMemory::import`]: a dma-buf descriptor ([`VirtualAddressRanges::export_chunk`] / `import_chunk`) |
//! | `hsa_amd_vmem_retain_alloc_handle`, `_get_alloc_properties_from_handle` | [`VirtualMemory::retain`], [`VirtualMemory::properties`] |
//!
//! [`Book`] is the part that needs no device: reserved ranges, physical handles with
//! reference and mapping counts, mappings that must lie inside one reservation and meet no
//! other, and ROCR 7's status for each misuse (its `Runtime::VMemory*` functions in
//! `runtime.cpp`, ROCm/rocm-systems). [`VirtualMemory`] keeps the book and has the platform
//! do what it decides.
//!
//! On a platform without [`VirtualAddressRanges`] (bare metal, a KFD older than 1.15)
//! [`VirtualMemory::supported`] is false, as ROCR answers
//! `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED` on such a driver, and the device side
//! fails as ROCR 7's does there (`INVALID_ARGUMENT` from its `IS_TRUE` checks); HIP then
//! keeps its own allocation path.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hsa_core::memory::AccessPermission;
use hsa_core::platform::{
    MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform, VirtualAddressRanges,
};
use hsa_core::runtime::{PoolHandle, Runtime};
use hsa_core::{bail, Error, NodeId, Status};

/// The host page size in bytes, the default alignment of a reservation (ROCR 7's
/// `VMemoryAddressReserve` takes `sysconf(_SC_PAGE_SIZE)` when the alignment is 0).
pub const PAGE_SIZE: u64 = 4096;

/// One reserved address range (ROCR 7's `AddressHandle`): `size` bytes as the caller asked,
/// `mappings` the number of mappings inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Bytes, as passed to `hsa_amd_vmem_address_reserve` (`hsa_amd_vmem_address_free` must
    /// pass the same).
    pub size: u64,
    /// Mappings inside the range; a range with mappings cannot be freed.
    pub mappings: u32,
}

/// One physical allocation (ROCR 7's `MemoryHandle`): `size` bytes, `refs` references (the
/// creation and each `hsa_amd_vmem_retain_alloc_handle`), `mappings` mappings of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleRecord {
    /// Bytes of memory behind the handle (a multiple of its pool's page size).
    pub size: u64,
    /// References not yet released.
    pub refs: u32,
    /// Mappings of the handle; its memory lives until both counts are 0.
    pub mappings: u32,
}

/// One mapping (ROCR 7's `MappedHandle`): `size` bytes of handle `handle` from byte
/// `offset`, inside the reservation starting at `reservation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Bytes mapped.
    pub size: u64,
    /// The handle mapped (its id in [`Book`]).
    pub handle: u64,
    /// Byte offset into the handle's memory.
    pub offset: u64,
    /// Start of the reservation holding the mapping.
    pub reservation: u64,
}

/// The bookkeeping of the virtual-memory API, apart from the memory behind it: reserved
/// ranges (where the platform placed them), physical handles with their reference and
/// mapping counts, and the mappings, with the statuses ROCR 7 returns for each misuse (its
/// `Runtime::VMemory*` functions in `runtime.cpp`, ROCm/rocm-systems). The platform places
/// and maps memory as the book decides.
#[derive(Debug, Default)]
pub struct Book {
    reservations: BTreeMap<u64, Reservation>,
    handles: BTreeMap<u64, HandleRecord>,
    mappings: BTreeMap<u64, Mapping>,
    next_handle: u64,
}

impl Book {
    /// An empty book.
    pub fn new() -> Book {
        Book {
            next_handle: 1,
            ..Book::default()
        }
    }

    /// Records the reservation of `size` bytes the platform made at `start`
    /// (`hsa_amd_vmem_address_reserve`).
    ///
    /// Errors: `InvalidArgument` for a size of 0 or a range that overflows or meets a
    /// reservation of the book (the platform gave out an address twice).
    pub fn adopt(&mut self, start: u64, size: u64) -> Result<(), Error> {
        let Some(end) = start.checked_add(size).filter(|_| size > 0) else {
            bail!(
                Status::InvalidArgument,
                "reserve: bad range {start:#x}+{size:#x}"
            );
        };
        let meets_before = self
            .reservations
            .range(..end)
            .next_back()
            .is_some_and(|(&s, r)| s.saturating_add(r.size) > start);
        if meets_before {
            bail!(
                Status::InvalidArgument,
                "reserve: {start:#x}+{size:#x} meets a reservation already made"
            );
        }
        self.reservations
            .insert(start, Reservation { size, mappings: 0 });
        Ok(())
    }

    /// Frees the reservation starting at `va` of `size` bytes
    /// (`hsa_amd_vmem_address_free`).
    ///
    /// Errors, as ROCR 7: `InvalidAllocation` when no reservation starts at `va`;
    /// `InvalidArgument` when `size` is not the reserved size; `ResourceFree` while a mapping
    /// is inside it.
    pub fn free(&mut self, va: u64, size: u64) -> Result<(), Error> {
        let Some(r) = self.reservations.get(&va) else {
            return Err(hsa_core::error!(
                Status::InvalidAllocation,
                "address_free: no reservation starts at {va:#x}"
            ));
        };
        if r.size != size {
            return Err(hsa_core::error!(
                Status::InvalidArgument,
                "address_free: {va:#x} was reserved with {:#x} bytes, not {size:#x}",
                r.size
            ));
        }
        if r.mappings > 0 {
            return Err(hsa_core::error!(
                Status::ResourceFree,
                "address_free: {} mapping(s) remain in the range at {va:#x}",
                r.mappings
            ));
        }
        self.reservations.remove(&va);
        Ok(())
    }

    /// Records a physical allocation of `size` bytes from a pool whose granule is
    /// `page_size` bytes and returns its handle id (`hsa_amd_vmem_handle_create`; the caller
    /// allocates the memory after this check and [`Book::forget_handle`]s on failure).
    ///
    /// Errors, as ROCR 7: `InvalidArgument` when `size` is 0 or not a multiple of
    /// `page_size`.
    pub fn create_handle(&mut self, size: u64, page_size: u64) -> Result<u64, Error> {
        if size == 0 || page_size == 0 || size % page_size != 0 {
            return Err(hsa_core::error!(
                Status::InvalidArgument,
                "handle_create: size {size:#x} is not a non-zero multiple of the pool's page size {page_size:#x}"
            ));
        }
        let id = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(
            id,
            HandleRecord {
                size,
                refs: 1,
                mappings: 0,
            },
        );
        Ok(id)
    }

    /// Drops the record of handle `id` (its allocation failed).
    pub fn forget_handle(&mut self, id: u64) {
        self.handles.remove(&id);
    }

    /// The record of handle `id`, if it lives.
    pub fn handle(&self, id: u64) -> Option<HandleRecord> {
        self.handles.get(&id).copied()
    }

    /// Adds a reference to handle `id` (`hsa_amd_vmem_retain_alloc_handle`).
    ///
    /// Errors: `InvalidAllocation` for an unknown handle.
    pub fn retain_handle(&mut self, id: u64) -> Result<(), Error> {
        let h = self.handles.get_mut(&id).ok_or_else(|| {
            hsa_core::error!(Status::InvalidAllocation, "retain: unknown handle {id:#x}")
        })?;
        h.refs = h.refs.saturating_add(1);
        Ok(())
    }

    /// Releases one reference of handle `id` (`hsa_amd_vmem_handle_release`). Returns true
    /// when the memory must be freed now (no reference and no mapping left); with mappings
    /// left it is freed by the last [`Book::unmap`].
    ///
    /// Errors, as ROCR 7: `InvalidAllocation` for an unknown handle or one already released.
    pub fn release_handle(&mut self, id: u64) -> Result<bool, Error> {
        let h = match self.handles.get_mut(&id) {
            Some(h) if h.refs > 0 => h,
            _ => {
                return Err(hsa_core::error!(
                    Status::InvalidAllocation,
                    "handle_release: unknown or released handle {id:#x}"
                ))
            }
        };
        h.refs -= 1;
        if h.refs == 0 && h.mappings == 0 {
            self.handles.remove(&id);
            return Ok(true);
        }
        Ok(false)
    }

    /// Records a mapping of `size` bytes of handle `id` from byte `offset` at `va`
    /// (`hsa_amd_vmem_map`).
    ///
    /// Errors, as ROCR 7: `InvalidArgument` when `[va, va + size)` is not inside one
    /// reservation, meets an existing mapping, or `id` is unknown (or released); and, ours,
    /// when `offset + size` passes the end of the handle's memory.
    pub fn map(&mut self, va: u64, size: u64, offset: u64, id: u64) -> Result<(), Error> {
        let end = va.checked_add(size).filter(|_| size != 0).ok_or_else(|| {
            hsa_core::error!(Status::InvalidArgument, "map: bad range {va:#x}+{size:#x}")
        })?;
        let reservation = match self.reservations.range(..=va).next_back() {
            Some((&s, r)) if end <= s.saturating_add(r.size) => s,
            _ => {
                return Err(hsa_core::error!(
                    Status::InvalidArgument,
                    "map: {va:#x}+{size:#x} is not inside a reserved range"
                ))
            }
        };
        if let Some((&s, m)) = self.mappings.range(..end).next_back() {
            if s.saturating_add(m.size) > va {
                return Err(hsa_core::error!(
                    Status::InvalidArgument,
                    "map: {va:#x}+{size:#x} meets the mapping at {s:#x}"
                ));
            }
        }
        let h = match self.handles.get_mut(&id) {
            Some(h) if h.refs > 0 => h,
            _ => {
                return Err(hsa_core::error!(
                    Status::InvalidArgument,
                    "map: unknown handle {id:#x}"
                ))
            }
        };
        if offset.checked_add(size).is_none_or(|e| e > h.size) {
            return Err(hsa_core::error!(
                Status::InvalidArgument,
                "map: {offset:#x}+{size:#x} passes the end of the handle's {:#x} bytes",
                h.size
            ));
        }
        h.mappings += 1;
        if let Some(r) = self.reservations.get_mut(&reservation) {
            r.mappings += 1;
        }
        self.mappings.insert(
            va,
            Mapping {
                size,
                handle: id,
                offset,
                reservation,
            },
        );
        Ok(())
    }

    /// Whether `[va, va + size)` lies inside one reservation (ROCR 7's first check of
    /// `hsa_amd_vmem_set_access`).
    pub fn reserved(&self, va: u64, size: u64) -> bool {
        let Some(end) = va.checked_add(size) else {
            return false;
        };
        self.reservations
            .range(..=va)
            .next_back()
            .is_some_and(|(&s, r)| end <= s.saturating_add(r.size))
    }

    /// The mapping holding byte `va`, with its start.
    pub fn mapping_at(&self, va: u64) -> Option<(u64, Mapping)> {
        let (&s, m) = self.mappings.range(..=va).next_back()?;
        (va < s.saturating_add(m.size)).then_some((s, *m))
    }

    /// The mappings that exactly tile `[va, va + size)`, with their starts (ROCR 7's walk in
    /// `hsa_amd_vmem_unmap` and `_set_access`).
    ///
    /// Errors, as ROCR 7: `InvalidAllocation` when the range is not a contiguous run of
    /// whole mappings starting at `va`.
    pub fn tiling(&self, va: u64, size: u64) -> Result<Vec<(u64, Mapping)>, Error> {
        let end = va.checked_add(size).filter(|_| size != 0).ok_or_else(|| {
            hsa_core::error!(Status::InvalidArgument, "bad range {va:#x}+{size:#x}")
        })?;
        let mut run = Vec::new();
        let mut at = va;
        while at < end {
            let Some(m) = self.mappings.get(&at) else {
                bail!(Status::InvalidAllocation, "no mapping starts at {at:#x}");
            };
            run.push((at, *m));
            at = at.saturating_add(m.size);
        }
        if at != end {
            bail!(
                Status::InvalidAllocation,
                "{va:#x}+{size:#x} ends inside the mapping at {:#x}",
                run.last().map_or(va, |r| r.0)
            );
        }
        Ok(run)
    }

    /// Removes the mappings that exactly tile `[va, va + size)` (`hsa_amd_vmem_unmap`).
    /// Returns them with their starts, and the handles whose memory must be freed now
    /// (released earlier, last mapping gone).
    ///
    /// Errors, as ROCR 7: `InvalidAllocation` when the range is not a contiguous run of whole
    /// mappings starting at `va` ([`Book::tiling`]); nothing is removed then.
    #[allow(clippy::type_complexity)]
    pub fn unmap(&mut self, va: u64, size: u64) -> Result<(Vec<(u64, Mapping)>, Vec<u64>), Error> {
        let run = self.tiling(va, size)?;
        let mut to_free = Vec::new();
        for (s, m) in &run {
            self.mappings.remove(s);
            if let Some(r) = self.reservations.get_mut(&m.reservation) {
                r.mappings -= 1;
            }
            if let Some(h) = self.handles.get_mut(&m.handle) {
                h.mappings -= 1;
                if h.mappings == 0 && h.refs == 0 {
                    self.handles.remove(&m.handle);
                    to_free.push(m.handle);
                }
            }
        }
        Ok((run, to_free))
    }
}

/// What `hsa_amd_pointer_info` reports of an address this API placed
/// ([`VirtualMemory::pointer_info`]; ROCR 7's `VMemoryPtrInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VmemPointer {
    /// Inside a mapping (`HSA_EXT_POINTER_TYPE_HSA_VMEM`): ROCR 7 reports the queried
    /// address itself as both base addresses, the mapping's size, the handle's owner and pool,
    /// and the agents given access.
    Mapped {
        /// Bytes of the mapping.
        size: u64,
        /// Node of the agent owning the handle's memory.
        owner: NodeId,
        /// The handle's pool (`hsa_amd_memory_pool_t`'s handle).
        pool: u64,
        /// The nodes with access set.
        access: Vec<NodeId>,
    },
    /// Inside a reservation with nothing mapped there (`HSA_EXT_POINTER_TYPE_RESERVED_ADDR`):
    /// no agent base address, the host base address of the reservation's mapping (for a
    /// host-only one, the `mmap`'s own start, before alignment), the reserved size.
    Reserved {
        /// The reservation's host base address.
        host_base: u64,
        /// Bytes reserved, as asked.
        size: u64,
        /// A device reservation (registered with the driver); false for a host-only one.
        registered: bool,
    },
}

/// `HSA_AMD_VMEM_ADDRESS_NO_REGISTER` (`hsa_amd_vmem_address_reserve_flag_t`): reserve host
/// address space only, registered with no driver.
pub const ADDRESS_NO_REGISTER: u64 = 1;

/// `hsa_amd_memory_type_t`'s `MEMORY_TYPE_NONE`: a handle of ordinary memory.
pub const MEMORY_TYPE_NONE: u32 = 0;
/// `hsa_amd_memory_type_t`'s `MEMORY_TYPE_PINNED`: a handle of memory that never migrates
/// (ROCR 7 adds `AllocatePinned`, libhsakmt `NoSubstitute`; amdkfd's buffer objects here never
/// migrate anyway).
pub const MEMORY_TYPE_PINNED: u32 = 1;

fn align_up(v: u64, a: u64) -> Option<u64> {
    v.checked_add(a - 1).map(|v| v & !(a - 1))
}

/// One host-only reservation (`HSA_AMD_VMEM_ADDRESS_NO_REGISTER`): the anonymous mapping
/// made for it and the size the caller asked.
#[derive(Clone, Copy, Debug)]
struct HostReservation {
    os_addr: u64,
    os_len: u64,
    size: u64,
}

/// The memory behind one handle: its chunk, the pool it came from (`hsa_amd_memory_pool_t`'s
/// handle, 0 for an import), its type, and the node of the agent that owns it.
#[derive(Clone, Copy, Debug)]
struct HandleMemory {
    chunk: MemoryChunk,
    pool: u64,
    memory_type: u32,
    owner: NodeId,
    /// Whether the owner is a GPU (ROCR 7 maps only memory a GPU owns).
    gpu_owned: bool,
}

#[derive(Debug)]
struct Inner {
    book: Book,
    memory: HashMap<u64, HandleMemory>,
}

/// The virtual-memory state of one runtime (module docs): the [`Book`] of device
/// reservations, handles and mappings, the memory behind each handle, and the host-only
/// reservations ROCR 7 makes with `HSA_AMD_VMEM_ADDRESS_NO_REGISTER` (anonymous `mmap`, no
/// driver involved), which work on every platform.
///
/// Without the platform's [`VirtualAddressRanges`], [`VirtualMemory::supported`] is false and
/// the device side answers as ROCR 7 answers when `VirtualMemApiSupported()` is false:
/// `hsa_amd_vmem_address_reserve` (without `NO_REGISTER`), `_address_reserve_align` and
/// `_handle_create` fail their `IS_TRUE` check with `INVALID_ARGUMENT`; no handle or mapping
/// can then exist, so the lookups fail as ROCR's do on an empty table (`INVALID_ALLOCATION`,
/// `INVALID_ARGUMENT` for a map into no reservation), and an import is
/// `INCOMPATIBLE_ARGUMENTS` (ROCR's status when libhsakmt cannot register the dma-buf).
pub struct VirtualMemory<P: Platform + 'static> {
    rt: Arc<Runtime<Arc<P>>>,
    inner: std::sync::Mutex<Inner>,
    host: std::sync::Mutex<BTreeMap<u64, HostReservation>>,
}

impl<P: Platform + 'static> std::fmt::Debug for VirtualMemory<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualMemory")
            .field("book", &self.inner().book)
            .finish_non_exhaustive()
    }
}

fn not_supported(what: &str) -> Error {
    hsa_core::error!(
        Status::InvalidArgument,
        "{what}: the virtual memory API is not supported on this platform \
         (HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED is false)"
    )
}

impl<P: Platform + 'static> VirtualMemory<P> {
    /// No reservation, no handle, over the platform of `rt`.
    pub fn new(rt: Arc<Runtime<Arc<P>>>) -> VirtualMemory<P> {
        VirtualMemory {
            rt,
            inner: std::sync::Mutex::new(Inner {
                book: Book::new(),
                memory: HashMap::new(),
            }),
            host: std::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED`: whether the device side of the
    /// `hsa_amd_vmem_*` functions works, which is whether the platform has
    /// [`VirtualAddressRanges`] (Linux: amdkfd 1.15 or later with a GPU, as ROCR 7's
    /// `CheckVirtualMemApiSupport`).
    pub fn supported(&self) -> bool {
        self.rt.platform().capabilities().virtual_ranges.is_some()
    }

    fn ranges(&self, what: &str) -> Result<&dyn VirtualAddressRanges, Error> {
        self.rt
            .platform_ref()
            .capabilities()
            .virtual_ranges
            .ok_or_else(|| not_supported(what))
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn host(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, HostReservation>> {
        self.host.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves `size` bytes of address space aligned to `alignment` (0: [`PAGE_SIZE`]), at
    /// `address` when that is aligned and free (`hsa_amd_vmem_address_reserve`,
    /// `_reserve_align`). With [`ADDRESS_NO_REGISTER`] in `flags` this is host address space
    /// as ROCR 7 makes it: an anonymous private mapping of `size + alignment - page` bytes
    /// (hinted at `address`), aligned up; without it, address space of the host and the
    /// agents alike ([`VirtualAddressRanges::reserve_range`]), which needs
    /// [`Self::supported`].
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a size of 0, an alignment that is not a power of two
    /// multiple of the page size, or device address space while unsupported (ROCR 7's
    /// `IS_TRUE(VirtualMemApiSupported())`); `Status::OutOfResources` when no range is found
    /// (ROCR 7's status when libhsakmt finds none) or `mmap` fails.
    pub fn reserve(
        &self,
        size: u64,
        address: u64,
        alignment: u64,
        flags: u64,
    ) -> Result<u64, Error> {
        if size == 0 {
            bail!(Status::InvalidArgument, "address_reserve: size is 0");
        }
        let alignment = if alignment == 0 { PAGE_SIZE } else { alignment };
        if !alignment.is_power_of_two() || alignment < PAGE_SIZE {
            bail!(
                Status::InvalidArgument,
                "address_reserve: alignment {alignment:#x} is not a power of two multiple of \
                 the page size"
            );
        }
        if flags & ADDRESS_NO_REGISTER == 0 {
            let ranges = self.ranges("address_reserve")?;
            let start = ranges.reserve_range(size, alignment, address)?;
            if let Err(e) = self.inner().book.adopt(start, size) {
                // SAFETY: the range was just made and handed to nobody.
                let _ = unsafe { ranges.release_range(start) };
                return Err(e);
            }
            return Ok(start);
        }
        let os_len = size
            .checked_add(alignment - PAGE_SIZE)
            .and_then(|l| align_up(l, PAGE_SIZE))
            .ok_or_else(|| {
                hsa_core::error!(
                    Status::OutOfResources,
                    "address_reserve: size {size:#x} too large"
                )
            })?;
        // SAFETY: a fresh anonymous private mapping; `address` is only a hint (no MAP_FIXED),
        // so no existing mapping is replaced.
        let mem = unsafe {
            rustix::mm::mmap_anonymous(
                address as *mut std::ffi::c_void,
                os_len as usize,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }
        .map_err(|e| {
            hsa_core::error!(
                Status::OutOfResources,
                "address_reserve: mmap of {os_len:#x} bytes: {e}"
            )
        })?;
        let os_addr = mem as u64;
        let aligned = align_up(os_addr, alignment).unwrap_or(os_addr);
        self.host().insert(
            aligned,
            HostReservation {
                os_addr,
                os_len,
                size,
            },
        );
        Ok(aligned)
    }

    /// Frees the reservation at `va` of `size` bytes (`hsa_amd_vmem_address_free`).
    ///
    /// # Errors
    /// As ROCR 7: `Status::InvalidAllocation` when no reservation starts at `va`;
    /// `Status::InvalidArgument` when `size` is not its size; `Status::ResourceFree` while a
    /// mapping is inside; `Status::Error` when the system refuses (`munmap`, or the platform;
    /// the reservation is then kept).
    pub fn free(&self, va: u64, size: u64) -> Result<(), Error> {
        let mut host = self.host();
        if let Some(r) = host.get(&va).copied() {
            if r.size != size {
                bail!(
                    Status::InvalidArgument,
                    "address_free: {va:#x} was reserved with {:#x} bytes, not {size:#x}",
                    r.size
                );
            }
            // SAFETY: the mapping this reservation made; nothing else lives in it.
            unsafe { rustix::mm::munmap(r.os_addr as *mut std::ffi::c_void, r.os_len as usize) }
                .map_err(|e| hsa_core::error!(Status::Error, "address_free: munmap: {e}"))?;
            host.remove(&va);
            return Ok(());
        }
        drop(host);
        let mut inner = self.inner();
        inner.book.free(va, size)?;
        // Reservations exist only where the platform has the capability.
        let ranges = self.ranges("address_free")?;
        // SAFETY: the book had the reservation with no mapping inside; the caller gives its
        // addresses back (hsa_amd_vmem_address_free's contract).
        if let Err(e) = unsafe { ranges.release_range(va) } {
            let _ = inner.book.adopt(va, size);
            return Err(e.with_status(Status::Error));
        }
        Ok(())
    }

    /// `hsa_amd_vmem_handle_create`: `size` bytes of physical memory from pool `pool`
    /// (`hsa_amd_memory_pool_t`'s handle) of type `memory_type` ([`MEMORY_TYPE_NONE`] or
    /// [`MEMORY_TYPE_PINNED`]); a chunk of its own, from the pool owner's memory
    /// ([`Platform::allocate_memory`], as ROCR 7 allocates a buffer object with
    /// `AllocateMemoryOnly`). Returns the handle.
    ///
    /// # Errors
    /// As ROCR 7: `Status::InvalidArgument` for a size of 0, while unsupported, for another
    /// memory type, an unknown pool (or one without runtime allocation), or a size that is not
    /// a multiple of the page; the platform's status when the memory cannot be allocated
    /// (`Status::OutOfResources`).
    pub fn create_handle(&self, pool: u64, size: u64, memory_type: u32) -> Result<u64, Error> {
        if size == 0 {
            bail!(Status::InvalidArgument, "handle_create: size is 0");
        }
        self.ranges("handle_create")?;
        if memory_type != MEMORY_TYPE_NONE && memory_type != MEMORY_TYPE_PINNED {
            bail!(
                Status::InvalidArgument,
                "handle_create: memory type {memory_type} is neither MEMORY_TYPE_NONE nor \
                 MEMORY_TYPE_PINNED"
            );
        }
        let p = self
            .rt
            .pool(PoolHandle(pool))
            .map_err(|e| e.with_status(Status::InvalidArgument))?;
        let info = p.info();
        if !info.runtime_alloc_allowed {
            bail!(
                Status::InvalidArgument,
                "handle_create: pool {pool:#x} does not allow runtime allocation"
            );
        }
        let owner_gpu = self.rt.agent(p.agent())?.is_gpu();
        let mut inner = self.inner();
        let id = inner.book.create_handle(size, PAGE_SIZE)?;
        let mut flags = info.chunk_flags;
        if info.memory_kind == MemoryKind::System {
            // Exportable (a GTT buffer object, not USERPTR pages): handles are dma-bufs.
            flags |= MemoryFlags::SHAREABLE;
        }
        let chunk = match self.rt.platform().allocate_memory(&MemoryRequest {
            node: info.owner,
            kind: info.memory_kind,
            size_bytes: size,
            align_bytes: PAGE_SIZE,
            flags,
        }) {
            Ok(c) => c,
            Err(e) => {
                inner.book.forget_handle(id);
                return Err(e);
            }
        };
        inner.memory.insert(
            id,
            HandleMemory {
                chunk,
                pool,
                memory_type,
                owner: info.owner,
                gpu_owned: owner_gpu,
            },
        );
        Ok(id)
    }

    /// Frees the memory of handle `id` (no reference, no mapping left).
    fn free_handle_memory(&self, inner: &mut Inner, id: u64) -> Result<(), Error> {
        if let Some(m) = inner.memory.remove(&id) {
            // SAFETY: the chunk is this handle's alone; the book says nothing maps or
            // references it any more, and it was never handed out but through mappings.
            unsafe { self.rt.platform().free_memory(&m.chunk) }?;
        }
        Ok(())
    }

    /// `hsa_amd_vmem_handle_release`: drops one reference of handle `id`; its memory goes
    /// with the last reference, or with its last mapping when mappings remain.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle or one with no reference left; the
    /// platform's status when the memory cannot be freed.
    pub fn release_handle(&self, id: u64) -> Result<(), Error> {
        let mut inner = self.inner();
        if inner.book.release_handle(id)? {
            self.free_handle_memory(&mut inner, id)?;
        }
        Ok(())
    }

    /// `hsa_amd_vmem_map`: maps `size` bytes of handle `id` from `offset` at `va`; no agent
    /// has access yet.
    ///
    /// # Errors
    /// As [`Book::map`]: `Status::InvalidArgument` for a range outside one reservation, an
    /// unknown handle, a size or offset that does not fit the handle, or a range meeting
    /// another mapping; as ROCR 7, `Status::InvalidAgent` for a handle of memory no GPU owns;
    /// the platform's status when the driver refuses.
    pub fn map(&self, va: u64, size: u64, offset: u64, id: u64) -> Result<(), Error> {
        let mut inner = self.inner();
        inner.book.map(va, size, offset, id)?;
        let undo = |inner: &mut Inner, e: Error| {
            let _ = inner.book.unmap(va, size);
            e
        };
        let Some(m) = inner.memory.get(&id).copied() else {
            return Err(undo(
                &mut inner,
                hsa_core::error!(Status::InvalidArgument, "map: unknown handle {id:#x}"),
            ));
        };
        if !m.gpu_owned {
            return Err(undo(
                &mut inner,
                hsa_core::error!(
                    Status::InvalidAgent,
                    "map: handle {id:#x} is memory of node {}, which is not a GPU",
                    m.owner.0
                ),
            ));
        }
        let r = self
            .ranges("map")
            .and_then(|r| r.map_range(va, size, &m.chunk, offset));
        if let Err(e) = r {
            return Err(undo(&mut inner, e));
        }
        Ok(())
    }

    /// `hsa_amd_vmem_unmap`: removes the mappings that tile `[va, va + size)` with every
    /// agent's access; a handle released meanwhile is freed with its last mapping.
    ///
    /// # Safety
    /// Neither the host nor any queue uses the range any more.
    ///
    /// # Errors
    /// As [`Book::unmap`]: `Status::InvalidAllocation` when the range is not a run of whole
    /// mappings (nothing changes); the platform's status when a mapping cannot be removed
    /// (the book forgets it all the same, as ROCR 7 does not).
    pub unsafe fn unmap(&self, va: u64, size: u64) -> Result<(), Error> {
        let mut inner = self.inner();
        let (run, to_free) = inner.book.unmap(va, size)?;
        let mut first_err = None;
        if let Ok(ranges) = self.ranges("unmap") {
            for (start, _) in &run {
                // SAFETY: the caller uses the range no more (this function's contract).
                if let Err(e) = unsafe { ranges.unmap_range(*start) } {
                    first_err.get_or_insert(e);
                }
            }
        }
        for id in to_free {
            if let Err(e) = self.free_handle_memory(&mut inner, id) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// `hsa_amd_vmem_set_access`: gives each `(node, permission)` of `access` to every
    /// mapping that tiles `[va, va + size)`, replacing what the node could do before
    /// (`None`, `HSA_ACCESS_PERMISSION_NONE`, removes it). The caller checked the agents (ROCR 7 checks
    /// them first: `INVALID_AGENT`).
    ///
    /// # Safety
    /// Where access is removed or changed, that agent (the host, for a CPU node) uses the
    /// range no more.
    ///
    /// # Errors
    /// As ROCR 7: `Status::InvalidArgument` for a range in no reservation (host-only
    /// reservations count); `Status::InvalidAllocation` when mappings do not tile it; the
    /// platform's status (`Status::Error`) when the driver refuses.
    pub unsafe fn set_access(
        &self,
        va: u64,
        size: u64,
        access: &[(NodeId, Option<AccessPermission>)],
    ) -> Result<(), Error> {
        let in_host = self
            .host()
            .range(..=va)
            .next_back()
            .is_some_and(|(&s, r)| va.checked_add(size).is_some_and(|e| e <= s + r.size));
        let inner = self.inner();
        if !in_host && !inner.book.reserved(va, size) {
            bail!(
                Status::InvalidArgument,
                "set_access: {va:#x}+{size:#x} is not inside a reserved range"
            );
        }
        let run = inner.book.tiling(va, size)?;
        let ranges = self.ranges("set_access")?;
        for (start, _) in run {
            for &(node, perm) in access {
                // SAFETY: the caller's contract (where access is removed or changed, that
                // agent uses the range no more).
                unsafe { ranges.set_range_access(start, node, perm) }?;
            }
        }
        Ok(())
    }

    /// `hsa_amd_vmem_get_access`: what the agent of `node` may do with the mapping holding
    /// `va` (`None` when its access was never set). The caller checked
    /// that the agent is a GPU (ROCR 7: `INVALID_AGENT` otherwise, after the lookup).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when nothing is mapped at `va`.
    pub fn get_access(&self, va: u64, node: NodeId) -> Result<Option<AccessPermission>, Error> {
        let Some((start, _)) = self.inner().book.mapping_at(va) else {
            bail!(
                Status::InvalidAllocation,
                "get_access: nothing is mapped at {va:#x}"
            );
        };
        self.ranges("get_access")?.range_access(start, node)
    }

    /// Whether the agent of `node` reaches all of `[va, va + len)` through mappings of this
    /// API: contiguous mappings cover it and each gave the node access (the copy engine's
    /// test before it hands the range to that GPU's SDMA engine).
    pub fn reachable(&self, va: u64, len: u64, node: NodeId) -> bool {
        let Some(end) = va.checked_add(len).filter(|_| len > 0) else {
            return false;
        };
        let Some(ranges) = self.rt.platform_ref().capabilities().virtual_ranges else {
            return false;
        };
        let inner = self.inner();
        let mut at = va;
        while at < end {
            let Some((start, m)) = inner.book.mapping_at(at) else {
                return false;
            };
            if ranges
                .range_access(start, node)
                .map_or(true, |p| p.is_none())
            {
                return false;
            }
            at = start.saturating_add(m.size);
        }
        true
    }

    /// What `hsa_amd_pointer_info` says of `va` when this API placed it (ROCR 7's
    /// `VMemoryPtrInfo`, asked before libhsakmt): inside a mapping,
    /// [`VmemPointer::Mapped`]; else inside a reservation, device or host-only (the end
    /// address counts, as ROCR 7's lookup), [`VmemPointer::Reserved`]; else `None`.
    pub fn pointer_info(&self, va: u64) -> Option<VmemPointer> {
        let inner = self.inner();
        if let Some((start, m)) = inner.book.mapping_at(va) {
            let mem = inner.memory.get(&m.handle)?;
            let ranges = self.rt.platform_ref().capabilities().virtual_ranges;
            let access = self
                .rt
                .agents()
                .iter()
                .map(|a| NodeId(a.node()))
                .filter(|&n| {
                    ranges.is_some_and(|r| r.range_access(start, n).is_ok_and(|p| p.is_some()))
                })
                .collect();
            return Some(VmemPointer::Mapped {
                size: m.size,
                owner: mem.owner,
                pool: mem.pool,
                access,
            });
        }
        if let Some((&start, r)) = inner.book.reservations.range(..=va).next_back() {
            if va - start <= r.size {
                return Some(VmemPointer::Reserved {
                    host_base: start,
                    size: r.size,
                    registered: true,
                });
            }
        }
        drop(inner);
        let host = self.host();
        let (&start, r) = host.range(..=va).next_back()?;
        (va - start <= r.size).then_some(VmemPointer::Reserved {
            host_base: r.os_addr,
            size: r.size,
            registered: false,
        })
    }

    /// Whether something is mapped at `va` (ROCR 7's first check of `_get_access`).
    pub fn is_mapped(&self, va: u64) -> bool {
        self.inner().book.mapping_at(va).is_some()
    }

    /// `hsa_amd_vmem_retain_alloc_handle`: the handle mapped at `va`, one more reference.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when no mapping starts at `va`.
    pub fn retain(&self, va: u64) -> Result<u64, Error> {
        let mut inner = self.inner();
        let Some((start, m)) = inner.book.mapping_at(va) else {
            bail!(
                Status::InvalidAllocation,
                "retain_alloc_handle: nothing is mapped at {va:#x}"
            );
        };
        if start != va {
            bail!(
                Status::InvalidAllocation,
                "retain_alloc_handle: {va:#x} is inside the mapping at {start:#x}"
            );
        }
        inner.book.retain_handle(m.handle)?;
        Ok(m.handle)
    }

    /// The record of handle `id`.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle.
    pub fn handle(&self, id: u64) -> Result<HandleRecord, Error> {
        self.inner().book.handle(id).ok_or_else(|| {
            hsa_core::error!(Status::InvalidAllocation, "unknown memory handle {id:#x}")
        })
    }

    /// `hsa_amd_vmem_get_alloc_properties_from_handle`: the pool handle `id` came from (for
    /// an import, the last pool of the owning GPU that allows runtime allocation, as ROCR 7
    /// picks) and its memory type.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle.
    pub fn properties(&self, id: u64) -> Result<(u64, u32), Error> {
        let inner = self.inner();
        match (inner.book.handle(id), inner.memory.get(&id)) {
            (Some(_), Some(m)) => Ok((m.pool, m.memory_type)),
            _ => bail!(Status::InvalidAllocation, "unknown memory handle {id:#x}"),
        }
    }

    /// `hsa_amd_vmem_export_shareable_handle`: a new dma-buf descriptor over handle `id`'s
    /// memory, which the caller owns.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle; the platform's status when the
    /// driver refuses.
    pub fn export(&self, id: u64) -> Result<i32, Error> {
        let chunk = {
            let inner = self.inner();
            match (inner.book.handle(id), inner.memory.get(&id)) {
                (Some(_), Some(m)) => m.chunk,
                _ => bail!(
                    Status::InvalidAllocation,
                    "export: unknown memory handle {id:#x}"
                ),
            }
        };
        self.ranges("export")?.export_chunk(&chunk)
    }

    /// `hsa_amd_vmem_import_shareable_handle` of dma-buf `fd` (the caller keeps `fd`): a new
    /// handle over its memory, owned by the GPU that holds it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a negative `fd`; `Status::IncompatibleArguments` while
    /// unsupported or for a descriptor the platform cannot import (ROCR 7's status when
    /// libhsakmt cannot register it); `Status::InvalidAllocation` when the owning GPU has no
    /// pool that allows runtime allocation (as ROCR 7).
    pub fn import(&self, fd: i32) -> Result<u64, Error> {
        if fd < 0 {
            bail!(
                Status::InvalidArgument,
                "import: dmabuf_fd {fd} is negative"
            );
        }
        let ranges = self.ranges("import").map_err(|_| {
            hsa_core::error!(
                Status::IncompatibleArguments,
                "import: dma-buf {fd} cannot become a memory handle: the virtual memory API \
                 is not supported on this platform"
            )
        })?;
        let (chunk, owner) = ranges.import_chunk(fd)?;
        let pool = self
            .rt
            .agents()
            .iter()
            .find(|a| a.node() == owner.0 && a.is_gpu())
            .and_then(|a| {
                self.rt
                    .agent_pools(a.handle())
                    .filter(|p| p.info().runtime_alloc_allowed)
                    .last()
                    .map(|p| p.handle().0)
            });
        let Some(pool) = pool else {
            // SAFETY: the chunk was just imported and handed to nobody.
            let _ = unsafe { self.rt.platform().free_memory(&chunk) };
            bail!(
                Status::InvalidAllocation,
                "import: node {} owning dma-buf {fd} has no pool for it",
                owner.0
            );
        };
        let mut inner = self.inner();
        let id = match inner.book.create_handle(chunk.size_bytes, PAGE_SIZE) {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: as above.
                let _ = unsafe { self.rt.platform().free_memory(&chunk) };
                return Err(e);
            }
        };
        inner.memory.insert(
            id,
            HandleMemory {
                chunk,
                pool,
                memory_type: MEMORY_TYPE_NONE,
                owner,
                gpu_owned: true,
            },
        );
        Ok(id)
    }
}

impl<P: Platform + 'static> Drop for VirtualMemory<P> {
    fn drop(&mut self) {
        for r in self.host().values() {
            // SAFETY: each host reservation's own mapping, unmapped once, at the end.
            let _ = unsafe {
                rustix::mm::munmap(r.os_addr as *mut std::ffi::c_void, r.os_len as usize)
            };
        }
        // The application is done with the runtime: what it left mapped, reserved or
        // allocated goes back, mappings first.
        let mut inner = self.inner();
        let mappings: Vec<(u64, u64)> = inner
            .book
            .mappings
            .iter()
            .map(|(&s, m)| (s, m.size))
            .collect();
        let ranges = self.rt.platform_ref().capabilities().virtual_ranges;
        for (s, size) in mappings {
            if let Some(r) = ranges {
                // SAFETY: the runtime is going; nothing uses its mappings any more.
                let _ = unsafe { r.unmap_range(s) };
            }
            let _ = inner.book.unmap(s, size);
        }
        let reservations: Vec<u64> = inner.book.reservations.keys().copied().collect();
        for s in reservations {
            if let Some(r) = ranges {
                // SAFETY: as above, and nothing is mapped in it now.
                let _ = unsafe { r.release_range(s) };
            }
        }
        for (_, m) in inner.memory.drain() {
            // SAFETY: as above: nothing maps or uses the handle's memory.
            let _ = unsafe { self.rt.platform().free_memory(&m.chunk) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W0: u64 = 0x10_0000_0000;

    fn st<T: std::fmt::Debug>(r: Result<T, Error>) -> Status {
        r.unwrap_err().status()
    }

    /// A book with one reservation of `size` bytes at `W0`.
    fn book(size: u64) -> (Book, u64) {
        let mut b = Book::new();
        b.adopt(W0, size).unwrap();
        (b, W0)
    }

    #[test]
    fn adopt_refuses_empty_overflowing_and_overlapping_ranges() {
        let (mut b, a) = book(0x3000);
        assert_eq!(st(b.adopt(a + 0x2000, 0x1000)), Status::InvalidArgument);
        assert_eq!(st(b.adopt(a - 0x1000, 0x2000)), Status::InvalidArgument);
        assert_eq!(st(b.adopt(a + 0x4000, 0)), Status::InvalidArgument);
        assert_eq!(
            st(b.adopt(u64::MAX - 0xfff, 0x2000)),
            Status::InvalidArgument
        );
        // Touching ranges are separate reservations.
        b.adopt(a + 0x3000, 0x1000).unwrap();
        b.adopt(a - 0x1000, 0x1000).unwrap();
        assert!(b.reserved(a - 0x1000, 0x1000));
        assert!(!b.reserved(a - 0x1000, 0x2000));
    }

    #[test]
    fn free_statuses_are_rocr_7s() {
        let (mut b, a) = book(0x4000);
        assert_eq!(st(b.free(a + 0x1000, 0x4000)), Status::InvalidAllocation);
        assert_eq!(st(b.free(a, 0x1000)), Status::InvalidArgument);
        let h = b.create_handle(0x2000, 0x1000).unwrap();
        b.map(a + 0x1000, 0x2000, 0, h).unwrap();
        assert_eq!(st(b.free(a, 0x4000)), Status::ResourceFree);
        b.unmap(a + 0x1000, 0x2000).unwrap();
        b.free(a, 0x4000).unwrap();
        assert_eq!(st(b.free(a, 0x4000)), Status::InvalidAllocation);
    }

    #[test]
    fn map_checks_range_overlap_and_handle() {
        let (mut b, a) = book(0x8000);
        assert_eq!(st(b.create_handle(0x1800, 0x1000)), Status::InvalidArgument);
        let h = b.create_handle(0x4000, 0x1000).unwrap();
        // Outside any reservation, or running past its end.
        assert_eq!(st(b.map(a + 0x9000, 0x1000, 0, h)), Status::InvalidArgument);
        assert_eq!(st(b.map(a + 0x6000, 0x4000, 0, h)), Status::InvalidArgument);
        assert_eq!(st(b.map(a, 0x1000, 0, h + 7)), Status::InvalidArgument);
        assert_eq!(st(b.map(a, 0x2000, 0x3000, h)), Status::InvalidArgument);
        b.map(a + 0x2000, 0x2000, 0, h).unwrap();
        assert_eq!(st(b.map(a + 0x1000, 0x2000, 0, h)), Status::InvalidArgument);
        assert_eq!(st(b.map(a + 0x3000, 0x1000, 0, h)), Status::InvalidArgument);
        b.map(a, 0x2000, 0x2000, h).unwrap();
        assert_eq!(b.mapping_at(a + 0x2fff).unwrap().0, a + 0x2000);
        assert_eq!(b.handle(h).unwrap().mappings, 2);
        // Unmap (and set_access's walk) must tile whole mappings.
        assert_eq!(st(b.tiling(a, 0x3000)), Status::InvalidAllocation);
        assert_eq!(b.tiling(a, 0x2000).unwrap().len(), 1);
        assert_eq!(st(b.unmap(a, 0x1000)), Status::InvalidAllocation);
        assert_eq!(st(b.unmap(a + 0x1000, 0x1000)), Status::InvalidAllocation);
        assert_eq!(st(b.unmap(a, 0x5000)), Status::InvalidAllocation);
        let (run, freed) = b.unmap(a, 0x4000).unwrap();
        assert_eq!(run.len(), 2);
        assert!(freed.is_empty());
    }

    #[test]
    fn handle_lives_until_last_reference_and_mapping() {
        let (mut b, a) = book(0x1000);
        let h = b.create_handle(0x1000, 0x1000).unwrap();
        b.retain_handle(h).unwrap();
        b.map(a, 0x1000, 0, h).unwrap();
        assert!(!b.release_handle(h).unwrap());
        assert!(!b.release_handle(h).unwrap());
        assert_eq!(st(b.release_handle(h)), Status::InvalidAllocation);
        assert_eq!(st(b.retain_handle(h + 1)), Status::InvalidAllocation);
        let (_, freed) = b.unmap(a, 0x1000).unwrap();
        assert_eq!(freed, vec![h]);
        assert_eq!(b.handle(h), None);
        assert_eq!(st(b.release_handle(h)), Status::InvalidAllocation);
    }

    /// Host-only reservations (`ADDRESS_NO_REGISTER`) are usable memory at the asked
    /// alignment and free with ROCR 7's statuses; on a platform without
    /// `VirtualAddressRanges` (the fake platform) the device side answers as ROCR 7 does
    /// while unsupported.
    #[test]
    fn host_reservations_and_the_unsupported_device_side() {
        let rt = Arc::new(
            Runtime::new(Arc::new(hsa_core::platform::fake::FakePlatform::new())).unwrap(),
        );
        let pool = rt.pools()[0].handle().0;
        let vm = VirtualMemory::new(rt);
        assert!(!vm.supported());
        assert_eq!(st(vm.reserve(0x1000, 0, 0, 0)), Status::InvalidArgument);
        assert_eq!(
            st(vm.reserve(0, 0, 0, ADDRESS_NO_REGISTER)),
            Status::InvalidArgument
        );
        assert_eq!(
            st(vm.reserve(0x1000, 0, 0x1800, ADDRESS_NO_REGISTER)),
            Status::InvalidArgument
        );
        let a = vm.reserve(0x3000, 0, 1 << 20, ADDRESS_NO_REGISTER).unwrap();
        assert_eq!(a % (1 << 20), 0);
        // SAFETY: the reservation's 0x3000 bytes are a fresh read-write mapping.
        unsafe {
            (a as *mut u8).write_bytes(0xa5, 0x3000);
            assert_eq!((a as *const u8).add(0x2fff).read(), 0xa5);
        }
        let rw = [(NodeId(0), Some(AccessPermission::ReadWrite))];
        // SAFETY: nothing is mapped, so no access changes.
        unsafe {
            assert_eq!(st(vm.set_access(a, 0x1000, &rw)), Status::InvalidAllocation);
            assert_eq!(
                st(vm.set_access(a + 0x3000, 0x1000, &rw)),
                Status::InvalidArgument
            );
        }
        assert_eq!(st(vm.free(a, 0x1000)), Status::InvalidArgument);
        assert_eq!(st(vm.free(a + 0x1000, 0x3000)), Status::InvalidAllocation);
        vm.free(a, 0x3000).unwrap();
        assert_eq!(st(vm.free(a, 0x3000)), Status::InvalidAllocation);
        assert_eq!(
            st(vm.create_handle(pool, 0x1000, 0)),
            Status::InvalidArgument
        );
        assert_eq!(st(vm.release_handle(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.handle(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.properties(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.export(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.retain(a)), Status::InvalidAllocation);
        assert_eq!(st(vm.get_access(a, NodeId(0))), Status::InvalidAllocation);
        // SAFETY: nothing is mapped.
        let unmapped = unsafe { vm.unmap(a, 0x1000) };
        assert_eq!(st(unmapped), Status::InvalidAllocation);
        assert_eq!(st(vm.import(-1)), Status::InvalidArgument);
        assert_eq!(st(vm.import(3)), Status::IncompatibleArguments);
    }
}
