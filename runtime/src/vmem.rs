//! The place of ROCm 7's virtual-memory API (`hsa_amd_vmem_*`, ROCR 6.1 and later): reserving
//! device address ranges apart from the memory behind them, making physical allocations
//! ("handles"), mapping and unmapping them into reserved ranges, setting per-agent access,
//! and exporting handles as dma-bufs.
//!
//! | ROCm 7 function | what it will do here |
//! |---|---|
//! | `hsa_amd_vmem_address_reserve`, `_address_free` | carve a range of the platform's address space (Linux: the reserved VA range of `hsa_linux::kfd::ioctl::VaSpace`), no memory behind it |
//! | `hsa_amd_vmem_handle_create`, `_handle_release` | a platform chunk of a pool's kind with no mapping (KFD `ALLOC_MEMORY_OF_GPU` without `MAP_MEMORY_TO_GPU`) |
//! | `hsa_amd_vmem_map`, `_unmap` | map a handle at an offset of a reserved range (KFD allocates at a given `va_addr`, so the mapping is a fresh buffer object at that address over the handle's memory) |
//! | `hsa_amd_vmem_set_access`, `_get_access` | `MAP_MEMORY_TO_GPU` / `UNMAP_MEMORY_FROM_GPU` for the agents named |
//! | `hsa_amd_vmem_export_shareable_handle`, `_import_shareable_handle` | the dma-buf path [`MemorySharing`](hsa_core::platform::MemorySharing) already takes for IPC |
//! | `hsa_amd_vmem_retain_alloc_handle`, `_get_alloc_properties_from_handle` | lookups in the table this module will keep |
//!
//! [`Book`] is the part that needs no device: reserved ranges carved from a window of GPU
//! virtual addresses with their alignment, physical handles with reference and mapping
//! counts, mappings that must lie inside one reservation and meet no other, and ROCR 7's
//! status for each misuse. The memory behind it is the platform's.
//!
//! Each function needs the platform to place memory at an address the caller chose, which
//! [`Platform`](hsa_core::platform::Platform) does not offer; it will be a capability of its
//! own (as `SdmaQueues` is), and [`VirtualMemory::supported`] answers
//! `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED` until then: false, as ROCR answers on a
//! driver without it, which makes HIP keep its own allocation path.

use std::collections::BTreeMap;

use hsa_core::{bail, Error, Status};

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
/// ranges of a GPU virtual address window, physical handles with their reference and mapping
/// counts, and the mappings, with the statuses ROCR 7 returns for each misuse (its
/// `Runtime::VMemory*` functions in `runtime.cpp`, ROCm/rocm-systems). The platform
/// places and maps memory as the book decides.
#[derive(Debug)]
pub struct Book {
    /// First byte of the window reservations are carved from.
    window_start: u64,
    /// One past its last byte.
    window_end: u64,
    reservations: BTreeMap<u64, Reservation>,
    handles: BTreeMap<u64, HandleRecord>,
    mappings: BTreeMap<u64, Mapping>,
    next_handle: u64,
}

fn align_up(v: u64, a: u64) -> Option<u64> {
    v.checked_add(a - 1).map(|v| v & !(a - 1))
}

impl Book {
    /// A book carving reservations from `[window_start, window_end)` (bytes of GPU virtual
    /// address space, Linux: the range `hsa_linux::kfd::ioctl::VaSpace` keeps for them).
    pub fn new(window_start: u64, window_end: u64) -> Book {
        Book {
            window_start,
            window_end,
            reservations: BTreeMap::new(),
            handles: BTreeMap::new(),
            mappings: BTreeMap::new(),
            next_handle: 1,
        }
    }

    /// Whether `[start, start + len)` is inside the window and meets no reservation.
    fn free_at(&self, start: u64, len: u64) -> bool {
        let Some(end) = start.checked_add(len) else {
            return false;
        };
        if start < self.window_start || end > self.window_end {
            return false;
        }
        if let Some((&s, r)) = self.reservations.range(..end).next_back() {
            if s.saturating_add(r.size) > start {
                return false;
            }
        }
        true
    }

    /// Reserves `size` bytes aligned to `alignment` (0: [`PAGE_SIZE`]), at `address` if that
    /// is free and aligned, else at the lowest free aligned address, as ROCR 7 tries the
    /// fixed address first and then any (`hsa_amd_vmem_address_reserve_align`). Returns the
    /// start.
    ///
    /// Errors: `InvalidArgument` for a size of 0 (ROCR's `IS_ZERO`) or an alignment that is
    /// not a power of two multiple of the page size (ours: the thunk cannot honour it);
    /// `OutOfResources` when no aligned range of the window is free (ROCR's status when the
    /// thunk finds no address).
    pub fn reserve(&mut self, size: u64, address: u64, alignment: u64) -> Result<u64, Error> {
        let alignment = if alignment == 0 { PAGE_SIZE } else { alignment };
        if size == 0 {
            return Err(hsa_core::error!(
                Status::InvalidArgument,
                "reserve: size is 0"
            ));
        }
        if !alignment.is_power_of_two() || alignment < PAGE_SIZE {
            return Err(hsa_core::error!(
                Status::InvalidArgument,
                "reserve: alignment {alignment:#x} is not a power of two multiple of the page size"
            ));
        }
        let len = align_up(size, PAGE_SIZE).ok_or_else(|| {
            hsa_core::error!(Status::OutOfResources, "reserve: size {size:#x} too large")
        })?;
        let start = if address != 0 && address % alignment == 0 && self.free_at(address, len) {
            address
        } else {
            self.first_fit(len, alignment).ok_or_else(|| {
                hsa_core::error!(
                    Status::OutOfResources,
                    "reserve: no free range of {len:#x} bytes aligned to {alignment:#x}"
                )
            })?
        };
        self.reservations
            .insert(start, Reservation { size, mappings: 0 });
        Ok(start)
    }

    fn first_fit(&self, len: u64, alignment: u64) -> Option<u64> {
        let mut cand = align_up(self.window_start, alignment)?;
        for (&s, r) in &self.reservations {
            let end = s.saturating_add(align_up(r.size, PAGE_SIZE).unwrap_or(u64::MAX));
            if end <= cand {
                continue;
            }
            if cand.checked_add(len)? <= s {
                break;
            }
            cand = align_up(end, alignment)?;
        }
        (cand.checked_add(len)? <= self.window_end).then_some(cand)
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

    /// Removes the mappings that exactly tile `[va, va + size)` (`hsa_amd_vmem_unmap`).
    /// Returns them with their starts, and the handles whose memory must be freed now
    /// (released earlier, last mapping gone).
    ///
    /// Errors, as ROCR 7: `InvalidAllocation` when the range is not a contiguous run of whole
    /// mappings starting at `va`; nothing is removed then.
    #[allow(clippy::type_complexity)]
    pub fn unmap(&mut self, va: u64, size: u64) -> Result<(Vec<(u64, Mapping)>, Vec<u64>), Error> {
        let end = va.checked_add(size).filter(|_| size != 0).ok_or_else(|| {
            hsa_core::error!(
                Status::InvalidArgument,
                "unmap: bad range {va:#x}+{size:#x}"
            )
        })?;
        let mut run = Vec::new();
        let mut at = va;
        while at < end {
            let Some(m) = self.mappings.get(&at) else {
                return Err(hsa_core::error!(
                    Status::InvalidAllocation,
                    "unmap: no mapping starts at {at:#x}"
                ));
            };
            run.push((at, *m));
            at = at.saturating_add(m.size);
        }
        if at != end {
            return Err(hsa_core::error!(
                Status::InvalidAllocation,
                "unmap: {va:#x}+{size:#x} ends inside the mapping at {:#x}",
                run.last().map_or(va, |r| r.0)
            ));
        }
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

/// `HSA_AMD_VMEM_ADDRESS_NO_REGISTER` (`hsa_amd_vmem_address_reserve_flag_t`): reserve host
/// address space only, registered with no driver.
pub const ADDRESS_NO_REGISTER: u64 = 1;

/// One host-only reservation (`HSA_AMD_VMEM_ADDRESS_NO_REGISTER`): the anonymous mapping
/// made for it and the size the caller asked.
#[derive(Clone, Copy, Debug)]
struct HostReservation {
    os_addr: u64,
    os_len: u64,
    size: u64,
}

/// The virtual-memory state of one runtime (module docs): the [`Book`] of device
/// reservations, handles and mappings, and the host-only reservations ROCR 7 makes with
/// `HSA_AMD_VMEM_ADDRESS_NO_REGISTER` (anonymous `mmap`, no driver involved), which work on
/// every platform.
///
/// Without a platform capability to place memory at a chosen device address (module docs),
/// [`VirtualMemory::supported`] is false and the device side answers as ROCR 7 answers when
/// `VirtualMemApiSupported()` is false: `hsa_amd_vmem_address_reserve` (without
/// `NO_REGISTER`), `_address_reserve_align` and `_handle_create` fail their `IS_TRUE` check
/// with `INVALID_ARGUMENT`; no handle or mapping can then exist, so the lookups fail as
/// ROCR's do on an empty table (`INVALID_ALLOCATION`, `INVALID_ARGUMENT` for a map into no
/// reservation), and an import, which ROCR hands to the thunk's graphics-handle
/// registration, is `INCOMPATIBLE_ARGUMENTS` (ROCR's status when that fails).
#[derive(Debug)]
pub struct VirtualMemory {
    book: std::sync::Mutex<Book>,
    host: std::sync::Mutex<BTreeMap<u64, HostReservation>>,
}

impl Default for VirtualMemory {
    fn default() -> Self {
        VirtualMemory::new()
    }
}

fn not_supported(what: &str) -> Error {
    hsa_core::error!(
        Status::InvalidArgument,
        "{what}: the virtual memory API is not supported on this platform \
         (HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED is false)"
    )
}

impl VirtualMemory {
    /// No reservation, no handle.
    pub fn new() -> VirtualMemory {
        VirtualMemory {
            book: std::sync::Mutex::new(Book::new(0, 0)),
            host: std::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// `HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED`: whether the device side of the
    /// `hsa_amd_vmem_*` functions works. False: no platform offers placing memory at a chosen
    /// address yet (module docs).
    pub fn supported(&self) -> bool {
        false
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn host(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, HostReservation>> {
        self.host.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves `size` bytes of address space aligned to `alignment` (0: [`PAGE_SIZE`]), at
    /// `address` when the system can (`hsa_amd_vmem_address_reserve`, `_reserve_align`).
    /// With [`ADDRESS_NO_REGISTER`] in `flags` this is host address space as ROCR 7 makes it:
    /// an anonymous private mapping of `size + alignment - page` bytes (hinted at `address`),
    /// aligned up; without it, device address space, which needs [`Self::supported`].
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a size of 0, an alignment that is not a power of two
    /// multiple of the page size, or device address space while unsupported (ROCR 7's
    /// `IS_TRUE(VirtualMemApiSupported())`); `Status::OutOfResources` when `mmap` fails.
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
        if flags & ADDRESS_NO_REGISTER == 0 {
            if !self.supported() {
                return Err(not_supported("address_reserve"));
            }
            return self.book().reserve(size, address, alignment);
        }
        let alignment = if alignment == 0 { PAGE_SIZE } else { alignment };
        if !alignment.is_power_of_two() || alignment < PAGE_SIZE {
            bail!(
                Status::InvalidArgument,
                "address_reserve: alignment {alignment:#x} is not a power of two multiple of \
                 the page size"
            );
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
    /// mapping is inside; `Status::Error` when `munmap` fails.
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
        self.book().free(va, size)
    }

    /// `hsa_amd_vmem_handle_create`: physical memory of `size` bytes from a pool.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a size of 0 and, while [`Self::supported`] is false,
    /// always (ROCR 7's `IS_TRUE(VirtualMemApiSupported())`).
    pub fn create_handle(&self, size: u64) -> Result<u64, Error> {
        if size == 0 {
            bail!(Status::InvalidArgument, "handle_create: size is 0");
        }
        Err(not_supported("handle_create"))
    }

    /// `hsa_amd_vmem_handle_release`: drops one reference of handle `id`.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle or one with no reference left.
    pub fn release_handle(&self, id: u64) -> Result<(), Error> {
        self.book().release_handle(id).map(|_| ())
    }

    /// `hsa_amd_vmem_map`: maps `size` bytes of handle `id` from `offset` at `va`.
    ///
    /// # Errors
    /// As [`Book::map`]: `Status::InvalidArgument` for a range outside one reservation, an
    /// unknown handle, a size or offset that does not fit the handle, or a range meeting
    /// another mapping.
    pub fn map(&self, va: u64, size: u64, offset: u64, id: u64) -> Result<(), Error> {
        self.book().map(va, size, offset, id)
    }

    /// `hsa_amd_vmem_unmap`.
    ///
    /// # Errors
    /// As [`Book::unmap`]: `Status::InvalidAllocation` when the range is not a run of whole
    /// mappings.
    pub fn unmap(&self, va: u64, size: u64) -> Result<(), Error> {
        self.book().unmap(va, size).map(|_| ())
    }

    /// `hsa_amd_vmem_set_access` for a range (the caller checked the agents): ROCR 7 needs
    /// the range inside one reservation, then whole mappings over it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a range in no reservation (host-only reservations
    /// count); `Status::InvalidAllocation` when mappings do not cover it.
    pub fn set_access(&self, va: u64, size: u64) -> Result<(), Error> {
        let in_host = self
            .host()
            .range(..=va)
            .next_back()
            .is_some_and(|(&s, r)| va.checked_add(size).is_some_and(|e| e <= s + r.size));
        let book = self.book();
        if !in_host && !book.reserved(va, size) {
            bail!(
                Status::InvalidArgument,
                "set_access: {va:#x}+{size:#x} is not inside a reserved range"
            );
        }
        if book.mapping_at(va).is_none() {
            bail!(
                Status::InvalidAllocation,
                "set_access: nothing is mapped at {va:#x}"
            );
        }
        Err(not_supported("set_access"))
    }

    /// `hsa_amd_vmem_get_access`.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when nothing is mapped at `va`.
    pub fn get_access(&self, va: u64) -> Result<u32, Error> {
        if self.book().mapping_at(va).is_none() {
            bail!(
                Status::InvalidAllocation,
                "get_access: nothing is mapped at {va:#x}"
            );
        }
        Err(not_supported("get_access"))
    }

    /// `hsa_amd_vmem_retain_alloc_handle`: the handle mapped at `va`, one more reference.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when no mapping starts at `va`.
    pub fn retain(&self, va: u64) -> Result<u64, Error> {
        let mut book = self.book();
        let Some((start, m)) = book.mapping_at(va) else {
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
        book.retain_handle(m.handle)?;
        Ok(m.handle)
    }

    /// The record of handle `id` (`hsa_amd_vmem_export_shareable_handle`,
    /// `_get_alloc_properties_from_handle` look it up first).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for an unknown handle.
    pub fn handle(&self, id: u64) -> Result<HandleRecord, Error> {
        self.book().handle(id).ok_or_else(|| {
            hsa_core::error!(Status::InvalidAllocation, "unknown memory handle {id:#x}")
        })
    }

    /// `hsa_amd_vmem_import_shareable_handle` of dma-buf `fd`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a negative `fd`; otherwise, while unsupported,
    /// `Status::IncompatibleArguments` (ROCR 7's status when the thunk cannot register the
    /// dma-buf).
    pub fn import(&self, fd: i32) -> Result<u64, Error> {
        if fd < 0 {
            bail!(
                Status::InvalidArgument,
                "import: dmabuf_fd {fd} is negative"
            );
        }
        bail!(
            Status::IncompatibleArguments,
            "import: dma-buf {fd} cannot become a memory handle: the virtual memory API is \
             not supported on this platform"
        )
    }
}

impl Drop for VirtualMemory {
    fn drop(&mut self) {
        for r in self.host().values() {
            // SAFETY: each host reservation's own mapping, unmapped once, at the end.
            let _ = unsafe {
                rustix::mm::munmap(r.os_addr as *mut std::ffi::c_void, r.os_len as usize)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W0: u64 = 0x10_0000_0000;
    const W1: u64 = 0x10_4000_0000;

    fn st<T: std::fmt::Debug>(r: Result<T, Error>) -> Status {
        r.unwrap_err().status()
    }

    #[test]
    fn reserve_aligns_and_avoids_overlap() {
        let mut b = Book::new(W0 + 0x1000, W1);
        let a = b.reserve(0x3000, 0, 0x20_0000).unwrap();
        assert_eq!(a, W0 + 0x20_0000);
        // The requested address overlaps `a`: the next aligned free range instead.
        let c = b.reserve(0x1000, a + 0x1000, 0x1000).unwrap();
        assert_eq!(c, W0 + 0x1000);
        let d = b.reserve(0x1000, a + 0x2000, 0x1000).unwrap();
        assert_eq!(d, W0 + 0x2000);
        // A free, aligned requested address is honoured.
        let e = b.reserve(0x1000, W0 + 0x100_0000, 0).unwrap();
        assert_eq!(e, W0 + 0x100_0000);
        // After `a` (0x3000 bytes), the next 2 MiB boundary.
        let f = b.reserve(0x1000, 0, 0x20_0000).unwrap();
        assert_eq!(f, W0 + 0x40_0000);
        assert_eq!(st(b.reserve(0, 0, 0)), Status::InvalidArgument);
        assert_eq!(st(b.reserve(0x1000, 0, 0x3000)), Status::InvalidArgument);
        assert_eq!(st(b.reserve(W1 - W0, 0, 0)), Status::OutOfResources);
    }

    #[test]
    fn free_statuses_are_rocr_7s() {
        let mut b = Book::new(W0, W1);
        let a = b.reserve(0x4000, 0, 0).unwrap();
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
        let mut b = Book::new(W0, W1);
        let a = b.reserve(0x8000, 0, 0).unwrap();
        assert_eq!(st(b.create_handle(0x1800, 0x1000)), Status::InvalidArgument);
        let h = b.create_handle(0x4000, 0x1000).unwrap();
        // Outside any reservation, or running past its end.
        assert_eq!(
            st(b.map(W1 - 0x1000, 0x1000, 0, h)),
            Status::InvalidArgument
        );
        assert_eq!(st(b.map(a + 0x6000, 0x4000, 0, h)), Status::InvalidArgument);
        assert_eq!(st(b.map(a, 0x1000, 0, h + 7)), Status::InvalidArgument);
        assert_eq!(st(b.map(a, 0x2000, 0x3000, h)), Status::InvalidArgument);
        b.map(a + 0x2000, 0x2000, 0, h).unwrap();
        assert_eq!(st(b.map(a + 0x1000, 0x2000, 0, h)), Status::InvalidArgument);
        assert_eq!(st(b.map(a + 0x3000, 0x1000, 0, h)), Status::InvalidArgument);
        b.map(a, 0x2000, 0x2000, h).unwrap();
        assert_eq!(b.mapping_at(a + 0x2fff).unwrap().0, a + 0x2000);
        assert_eq!(b.handle(h).unwrap().mappings, 2);
        // Unmap must tile whole mappings.
        assert_eq!(st(b.unmap(a, 0x1000)), Status::InvalidAllocation);
        assert_eq!(st(b.unmap(a + 0x1000, 0x1000)), Status::InvalidAllocation);
        assert_eq!(st(b.unmap(a, 0x5000)), Status::InvalidAllocation);
        let (run, freed) = b.unmap(a, 0x4000).unwrap();
        assert_eq!(run.len(), 2);
        assert!(freed.is_empty());
    }

    #[test]
    fn handle_lives_until_last_reference_and_mapping() {
        let mut b = Book::new(W0, W1);
        let a = b.reserve(0x1000, 0, 0).unwrap();
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
    /// alignment and free with ROCR 7's statuses; the device side answers as ROCR 7 does
    /// while unsupported.
    #[test]
    fn host_reservations_and_the_unsupported_device_side() {
        let vm = VirtualMemory::new();
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
        assert_eq!(st(vm.set_access(a, 0x1000)), Status::InvalidAllocation);
        assert_eq!(
            st(vm.set_access(a + 0x3000, 0x1000)),
            Status::InvalidArgument
        );
        assert_eq!(st(vm.free(a, 0x1000)), Status::InvalidArgument);
        assert_eq!(st(vm.free(a + 0x1000, 0x3000)), Status::InvalidAllocation);
        vm.free(a, 0x3000).unwrap();
        assert_eq!(st(vm.free(a, 0x3000)), Status::InvalidAllocation);
        assert_eq!(st(vm.create_handle(0x1000)), Status::InvalidArgument);
        assert_eq!(st(vm.release_handle(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.handle(1)), Status::InvalidAllocation);
        assert_eq!(st(vm.retain(a)), Status::InvalidAllocation);
        assert_eq!(st(vm.get_access(a)), Status::InvalidAllocation);
        assert_eq!(st(vm.unmap(a, 0x1000)), Status::InvalidAllocation);
        assert_eq!(st(vm.import(-1)), Status::InvalidArgument);
        assert_eq!(st(vm.import(3)), Status::IncompatibleArguments);
    }
}
