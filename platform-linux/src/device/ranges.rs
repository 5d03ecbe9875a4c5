//! The virtual-memory API's side of the Linux platform ([`VirtualAddressRanges`]): ranges of
//! the process's reservation set apart ([`VaSpace::carve_partitioned`]), chunks mapped into
//! them, and each agent's access, the way ROCR 7 makes them from amdkfd 1.15 on
//! (`Runtime::VMemoryHandleMap`, `MappedHandleAllowedAgent`, `KfdDriver::Map`):
//!
//! - **map**: the chunk's buffer object is exported as a dma-buf (`AMDKFD_IOC_EXPORT_DMABUF`)
//!   and imported on the render node of the GPU that holds it (`DRM_IOCTL_PRIME_FD_TO_HANDLE`);
//!   its render-node mmap offset is read (`DRM_IOCTL_AMDGPU_GEM_MMAP`). No agent has access.
//! - **access for a GPU**: the object is imported on that GPU's render node (once) and mapped
//!   into its VM at the range's address (`DRM_IOCTL_AMDGPU_GEM_VA`, `AMDGPU_VA_OP_MAP`) with
//!   the pages readable, writable as the permission says, and executable. ROCR 7 asks for
//!   the permission's bits through libdrm's `amdgpu_bo_va_op`, which maps every page
//!   readable, writable and executable whatever it is given; this platform asks amdgpu for
//!   what the permission says (plus executable, as libdrm), so a read-only mapping is one.
//! - **access for the host**: the render node is mapped at the range's address
//!   (`MAP_SHARED | MAP_FIXED`), read-only for `HSA_ACCESS_PERMISSION_RO`.
//! - **a change of access** removes the old access first (`AMDGPU_VA_OP_UNMAP`, or the
//!   `PROT_NONE` reservation put back over the host's pages), then grants the new one, as
//!   ROCR 7's `RemoveAccess` and `EnableAccess`.
//! - **unmap** removes every access, then closes the GEM handles (`DRM_IOCTL_GEM_CLOSE`).
//!
//! The runtime's book (`hsa_runtime::vmem::Book`) decides what may be mapped where and keeps
//! ROCR 7's statuses for misuse; this module checks again what would break its own state
//! (ranges, overlaps, the chunk's end) and answers as the trait says.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::AsRawFd;

use hsa_core::memory::AccessPermission;
use hsa_core::platform::{MemoryChunk, VirtualAddressRanges};
use hsa_core::{bail, error, Error, NodeId, Status};
use rustix::io::Errno;

use super::{lock, LinuxPlatform};
use crate::kfd::calls;
use crate::kfd::driver::MapTarget;
use crate::kfd::drm::{
    self, AMDGPU_VA_OP_MAP, AMDGPU_VA_OP_UNMAP, AMDGPU_VM_PAGE_EXECUTABLE, AMDGPU_VM_PAGE_READABLE,
    AMDGPU_VM_PAGE_WRITEABLE,
};

/// One chunk mapped into a reserved range.
#[derive(Debug)]
struct Mapping {
    /// Bytes mapped.
    size: u64,
    /// Byte offset in the chunk's buffer object.
    offset: u64,
    /// Start of the reservation holding it.
    range: u64,
    /// The chunk's KFD handle (exported again for each GPU's import).
    kfd_handle: u64,
    /// The GPU holding the buffer object, on whose render node it was imported at map time.
    owner_gpu: u32,
    /// The object's render-node mmap offset on `owner_gpu`.
    mmap_offset: u64,
    /// GEM handle of the object on each GPU's render node where it was imported.
    gem: HashMap<u32, u32>,
    /// Access set, by node id (no access: no entry).
    access: BTreeMap<u32, AccessPermission>,
}

/// The ranges and mappings of one platform.
#[derive(Debug, Default)]
pub(super) struct Ranges {
    /// Reservations by start: their length in bytes.
    reserved: BTreeMap<u64, u64>,
    /// Mappings by start.
    mappings: BTreeMap<u64, Mapping>,
    /// References to each GEM handle, by (gpu_id, handle): a render node gives a buffer
    /// object imported again the handle it has already, and closing it removes all of its
    /// mappings on that GPU, so a handle is closed when its last mapping lets go of it (as
    /// libdrm counts the references of its `amdgpu_bo`).
    gem_refs: HashMap<(u32, u32), u32>,
}

fn driver_error(what: &str, e: Errno) -> Error {
    error!(Status::Error, "{what}: {e} (errno {})", e.raw_os_error())
}

/// The page flags of a GPU mapping with `access` (ROCR 7's `drm_perm`, plus executable as
/// libdrm's `amdgpu_bo_va_op` always adds).
fn page_flags(access: AccessPermission) -> u32 {
    let rw = match access {
        AccessPermission::ReadOnly => AMDGPU_VM_PAGE_READABLE,
        // amdgpu has no write-only pages: a write-only mapping is readable too.
        AccessPermission::WriteOnly | AccessPermission::ReadWrite => {
            AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE
        }
    };
    rw | AMDGPU_VM_PAGE_EXECUTABLE
}

impl LinuxPlatform {
    /// Whether this platform offers [`VirtualAddressRanges`]: amdkfd 1.15 or later (ROCR 7's
    /// `CheckVirtualMemApiSupport`: from that version KFD manages the compute VM's mappings
    /// with the render node's `GEM_VA`) and at least one GPU.
    pub(super) fn has_virtual_ranges(&self) -> bool {
        self.version >= (1, 15) && !self.gpus.is_empty()
    }

    /// Imports the buffer object `kfd_handle` on GPU `gpu_id`'s render node (export as a
    /// dma-buf, PRIME import, close the descriptor) and counts the reference.
    fn import_on(
        &self,
        refs: &mut HashMap<(u32, u32), u32>,
        kfd_handle: u64,
        gpu_id: u32,
    ) -> Result<u32, Error> {
        let fd = calls::export_dmabuf(&*self.driver, kfd_handle)
            .map_err(|e| e.with_status(Status::Error))?;
        let h = drm::prime_fd_to_handle(&*self.driver, gpu_id, fd.as_raw_fd())
            .map_err(|e| driver_error(&format!("importing on GPU {gpu_id}'s render node"), e))?;
        *refs.entry((gpu_id, h)).or_insert(0) += 1;
        Ok(h)
    }

    /// Lets go of one reference to GEM handle `handle` on GPU `gpu_id`, closing it with the
    /// last.
    fn release_gem(&self, refs: &mut HashMap<(u32, u32), u32>, gpu_id: u32, handle: u32) {
        let n = refs.entry((gpu_id, handle)).or_insert(1);
        *n -= 1;
        if *n == 0 {
            refs.remove(&(gpu_id, handle));
            // A handle amdgpu would not close holds only the object's reference: nothing is
            // mapped through it any more.
            if let Err(e) = drm::gem_close(&*self.driver, gpu_id, handle) {
                log::warn!("closing GEM handle {handle} on GPU {gpu_id}: {e}");
            }
        }
    }

    /// Removes `node`'s access to mapping `m` at `va`.
    fn remove_access(&self, va: u64, m: &mut Mapping, node: u32) -> Result<(), Error> {
        if !m.access.contains_key(&node) {
            return Ok(());
        }
        match self.gpus.iter().find(|g| g.node_id == node) {
            Some(g) => {
                let handle = m.gem.get(&g.gpu_id).copied().ok_or_else(|| {
                    error!(
                        Status::Error,
                        "no GEM handle on GPU {} for {va:#x}", g.gpu_id
                    )
                })?;
                drm::gem_va(
                    &*self.driver,
                    g.gpu_id,
                    AMDGPU_VA_OP_UNMAP,
                    handle,
                    0,
                    va,
                    m.offset,
                    m.size,
                )
                .map_err(|e| {
                    driver_error(&format!("unmapping {va:#x} from GPU {}", g.gpu_id), e)
                })?;
            }
            None => self
                .process
                .va
                .unmap_within(m.range, va, m.size)
                .map_err(|e| driver_error(&format!("unmapping {va:#x} from the host"), e))?,
        }
        m.access.remove(&node);
        Ok(())
    }

    /// Gives `node` `access` to mapping `m` at `va`.
    fn grant_access(
        &self,
        refs: &mut HashMap<(u32, u32), u32>,
        va: u64,
        m: &mut Mapping,
        node: u32,
        access: AccessPermission,
    ) -> Result<(), Error> {
        match self.gpus.iter().find(|g| g.node_id == node) {
            Some(g) => {
                let handle = match m.gem.get(&g.gpu_id) {
                    Some(&h) => h,
                    None => {
                        let h = self.import_on(refs, m.kfd_handle, g.gpu_id)?;
                        m.gem.insert(g.gpu_id, h);
                        h
                    }
                };
                drm::gem_va(
                    &*self.driver,
                    g.gpu_id,
                    AMDGPU_VA_OP_MAP,
                    handle,
                    page_flags(access),
                    va,
                    m.offset,
                    m.size,
                )
                .map_err(|e| driver_error(&format!("mapping {va:#x} on GPU {}", g.gpu_id), e))?;
            }
            None => {
                let offset = m
                    .mmap_offset
                    .checked_add(m.offset)
                    .ok_or_else(|| error!(Status::Error, "mmap offset of {va:#x} overflows"))?;
                self.process
                    .va
                    .map_within(
                        m.range,
                        va,
                        m.size,
                        &*self.driver,
                        MapTarget::RenderNode(m.owner_gpu),
                        offset,
                        access != AccessPermission::ReadOnly,
                    )
                    .map_err(|e| driver_error(&format!("mapping {va:#x} for the host"), e))?;
            }
        }
        m.access.insert(node, access);
        Ok(())
    }

    /// Removes every access to the mapping at `va` and closes its GEM handles; on an error
    /// the mapping stays, with what could not be removed.
    fn unmap_all(&self, ranges: &mut Ranges, va: u64) -> Result<(), Error> {
        let Some(m) = ranges.mappings.get_mut(&va) else {
            bail!(Status::InvalidAllocation, "no mapping starts at {va:#x}");
        };
        let nodes: Vec<u32> = m.access.keys().copied().collect();
        for node in nodes {
            self.remove_access(va, m, node)?;
        }
        if let Some(m) = ranges.mappings.remove(&va) {
            for (gpu_id, handle) in m.gem {
                self.release_gem(&mut ranges.gem_refs, gpu_id, handle);
            }
        }
        Ok(())
    }

    /// Unmaps every mapping and releases every reservation (the platform is going).
    pub(super) fn drop_ranges(&self) {
        let mut ranges = lock(&self.ranges);
        let vas: Vec<u64> = ranges.mappings.keys().copied().collect();
        for va in vas {
            let _ = self.unmap_all(&mut ranges, va);
        }
        for (start, _) in std::mem::take(&mut ranges.reserved) {
            let _ = self.process.va.release(start);
        }
    }
}

#[allow(unsafe_code)] // the trait's unsafe methods; no unsafe blocks
                      // SAFETY: a reservation is a range carved from the process's reservation and marked
                      // partitioned, handed to nobody else until released; host access maps the render node's
                      // pages of the chunk's buffer object at exactly the range's address (`VaSpace::map_within`),
                      // and GPU access maps the same object at the same address with GEM_VA.
unsafe impl VirtualAddressRanges for LinuxPlatform {
    fn reserve_range(&self, size_bytes: u64, align_bytes: u64, hint: u64) -> Result<u64, Error> {
        let page = self.process.va.page_bytes();
        if size_bytes == 0 {
            bail!(Status::InvalidArgument, "reserve_range: size is 0");
        }
        if !align_bytes.is_power_of_two() || align_bytes < page {
            bail!(
                Status::InvalidArgument,
                "reserve_range: alignment {align_bytes:#x} is not a power of two of at least \
                 the page ({page:#x})"
            );
        }
        let len = size_bytes.div_ceil(page).checked_mul(page).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "reserve_range: {size_bytes:#x} bytes is too large"
            )
        })?;
        let start = self
            .process
            .va
            .carve_partitioned(len, align_bytes, hint)
            .ok_or_else(|| {
                error!(
                    Status::OutOfResources,
                    "no address space left for {len:#x} bytes aligned to {align_bytes:#x} \
                     ({} of {} bytes free)",
                    self.process.va.free_bytes(),
                    self.process.va.len_bytes()
                )
            })?;
        lock(&self.ranges).reserved.insert(start, len);
        Ok(start)
    }

    unsafe fn release_range(&self, start: u64) -> Result<(), Error> {
        let mut ranges = lock(&self.ranges);
        let Some(&len) = ranges.reserved.get(&start) else {
            bail!(
                Status::InvalidArgument,
                "no reserved range starts at {start:#x}"
            );
        };
        if ranges.mappings.range(start..start + len).next().is_some() {
            bail!(
                Status::InvalidArgument,
                "the range at {start:#x} still holds mappings"
            );
        }
        self.process
            .va
            .release(start)
            .map_err(|e| driver_error(&format!("releasing the range at {start:#x}"), e))?;
        ranges.reserved.remove(&start);
        Ok(())
    }

    fn map_range(
        &self,
        va: u64,
        size_bytes: u64,
        chunk: &MemoryChunk,
        offset: u64,
    ) -> Result<(), Error> {
        let page = self.process.va.page_bytes();
        if size_bytes == 0 || va % page != 0 || size_bytes % page != 0 || offset % page != 0 {
            bail!(
                Status::InvalidArgument,
                "map_range: {va:#x}+{size_bytes:#x} from offset {offset:#x} is not whole pages"
            );
        }
        let Some(end) = va.checked_add(size_bytes) else {
            bail!(
                Status::InvalidArgument,
                "map_range: {va:#x}+{size_bytes:#x} overflows"
            );
        };
        let (kfd_handle, owner_gpu, chunk_size) = {
            let st = lock(&self.state);
            let Some(rec) = st.chunks.get(&chunk.gpu_va.0).filter(|r| !r.user) else {
                bail!(
                    Status::InvalidArgument,
                    "map_range: no chunk of this platform at {}",
                    chunk.gpu_va
                );
            };
            let (Some(h), Some(g)) = (rec.handle, rec.gpu) else {
                bail!(
                    Status::InvalidArgument,
                    "map_range: the chunk at {} has no buffer object",
                    chunk.gpu_va
                );
            };
            (h, g, rec.size)
        };
        if offset
            .checked_add(size_bytes)
            .is_none_or(|e| e > chunk_size)
        {
            bail!(
                Status::InvalidArgument,
                "map_range: {offset:#x}+{size_bytes:#x} passes the end of the chunk's \
                 {chunk_size:#x} bytes"
            );
        }
        let mut ranges = lock(&self.ranges);
        let range = match ranges.reserved.range(..=va).next_back() {
            Some((&s, &l)) if end <= s + l => s,
            _ => bail!(
                Status::InvalidArgument,
                "map_range: {va:#x}+{size_bytes:#x} is not inside one reserved range"
            ),
        };
        if let Some((&s, m)) = ranges.mappings.range(..end).next_back() {
            if s + m.size > va {
                bail!(
                    Status::InvalidArgument,
                    "map_range: {va:#x}+{size_bytes:#x} meets the mapping at {s:#x}"
                );
            }
        }
        let gem = self.import_on(&mut ranges.gem_refs, kfd_handle, owner_gpu)?;
        let mmap_offset = match drm::gem_mmap_offset(&*self.driver, owner_gpu, gem) {
            Ok(o) => o,
            Err(e) => {
                self.release_gem(&mut ranges.gem_refs, owner_gpu, gem);
                return Err(driver_error("reading the render-node mmap offset", e));
            }
        };
        ranges.mappings.insert(
            va,
            Mapping {
                size: size_bytes,
                offset,
                range,
                kfd_handle,
                owner_gpu,
                mmap_offset,
                gem: HashMap::from([(owner_gpu, gem)]),
                access: BTreeMap::new(),
            },
        );
        Ok(())
    }

    unsafe fn set_range_access(
        &self,
        va: u64,
        node: NodeId,
        access: Option<AccessPermission>,
    ) -> Result<(), Error> {
        if self.node_by_id(node).is_none() {
            bail!(Status::InvalidAgent, "node {} does not exist", node.0);
        }
        let mut ranges = lock(&self.ranges);
        let Ranges {
            mappings, gem_refs, ..
        } = &mut *ranges;
        let Some(m) = mappings.get_mut(&va) else {
            bail!(Status::InvalidAllocation, "no mapping starts at {va:#x}");
        };
        if m.access.get(&node.0).copied() == access {
            return Ok(());
        }
        self.remove_access(va, m, node.0)?;
        if let Some(access) = access {
            self.grant_access(gem_refs, va, m, node.0, access)?;
        }
        Ok(())
    }

    fn range_access(&self, va: u64, node: NodeId) -> Result<Option<AccessPermission>, Error> {
        let ranges = lock(&self.ranges);
        let Some(m) = ranges.mappings.get(&va) else {
            bail!(Status::InvalidAllocation, "no mapping starts at {va:#x}");
        };
        Ok(m.access.get(&node.0).copied())
    }

    fn export_chunk(&self, chunk: &MemoryChunk) -> Result<i32, Error> {
        let handle = {
            let st = lock(&self.state);
            match st.chunks.get(&chunk.gpu_va.0) {
                Some(r) if !r.user && r.handle.is_some() => r.handle.unwrap_or_default(),
                _ => bail!(
                    Status::InvalidArgument,
                    "export: no buffer object of this platform at {}",
                    chunk.gpu_va
                ),
            }
        };
        let fd = calls::export_dmabuf(&*self.driver, handle)
            .map_err(|e| e.with_status(Status::OutOfResources))?;
        Ok(std::os::fd::IntoRawFd::into_raw_fd(fd))
    }

    fn import_chunk(&self, fd: i32) -> Result<(MemoryChunk, NodeId), Error> {
        let incompatible = |e: Error| e.with_status(Status::IncompatibleArguments);
        let (size, gpu_id, _) = calls::get_dmabuf_info(&*self.driver, fd).map_err(incompatible)?;
        let Some(gpu) = self.gpus.iter().find(|g| g.gpu_id == gpu_id) else {
            bail!(
                Status::IncompatibleArguments,
                "dma-buf {fd} belongs to gpu_id {gpu_id}, which this platform does not have"
            );
        };
        let page = self.process.va.page_bytes();
        if size == 0 || size % page != 0 {
            bail!(
                Status::IncompatibleArguments,
                "dma-buf {fd} holds {size} bytes: not whole pages"
            );
        }
        let va = self.process.va.carve(size, page).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "no address space left to import {size} bytes"
            )
        })?;
        let mut a = crate::kfd::abi::ImportDmabufArgs {
            va_addr: va,
            handle: 0,
            gpu_id,
            dmabuf_fd: fd as u32,
        };
        if let Err(e) = calls::call(&*self.driver, &mut a) {
            let _ = self.process.va.release(va);
            return Err(incompatible(e));
        }
        self.record(va, size, Some(a.handle), Some(gpu_id), Vec::new());
        Ok((self.chunk(va, size, a.handle), NodeId(gpu.node_id)))
    }

    unsafe fn unmap_range(&self, va: u64) -> Result<(), Error> {
        let mut ranges = lock(&self.ranges);
        self.unmap_all(&mut ranges, va)
    }
}
