//! The emulated device's buffer objects: `ALLOC/FREE_MEMORY_OF_GPU`, `MAP/UNMAP_MEMORY_TO_GPU`
//! bookkeeping, and the translation of device addresses to live memory.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, PoisonError};

use hsa_core::{error, Error, Status};
use rustix::io::Errno;

use hsa_linux::kfd::abi::*;

use super::mem::{self, round_up_page, Backing, CopyFault, Region, RegionFault, PAGE_BYTES};
use super::{lock, Device, DOORBELL_PAGE_BYTES};

/// What backs an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `KFD_IOC_ALLOC_MEM_FLAGS_VRAM`: counts against the GPU's frame-buffer banks.
    Vram,
    /// `..._GTT`: counts against system memory.
    Gtt,
    /// `..._USERPTR`: the caller's own memory; counts against system memory.
    Userptr,
    /// `..._DOORBELL`: the GPU's doorbell page.
    Doorbell,
    /// `..._MMIO_REMAP`: one page standing in for the HDP flush registers.
    MmioRemap,
    /// `IMPORT_DMABUF`: another buffer object's pages (of this or another process's device);
    /// counted where its exporter allocated it, not here.
    Imported,
    /// Memory another KFD allocated and maps (the host of AMD's model interface,
    /// [`crate::model`]), reached at its alias in that host's aperture; counted there.
    Aliased,
    /// A render node's `GEM_VA` mapping of a GEM object's pages into one or more GPUs' VMs
    /// ([`super::gem`]); counted where the object was allocated. No KFD ioctl takes it.
    GemVa,
}

/// A device access that faulted: what the device reports to amdkfd's memory events
/// (`kfd_hsa_memory_exception_data`), as a GPU's VM fault reports the faulting address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemoryFault {
    /// The device address of the access.
    pub(crate) address: u64,
    /// Whether it was a write (or an atomic).
    pub(crate) write: bool,
}

impl MemoryFault {
    /// The fault of an access described as `what` ("read", "write", "atomic", "kernarg
    /// read", ...) at `address`.
    pub(crate) fn of(address: u64, what: &str) -> MemoryFault {
        MemoryFault {
            address,
            write: what.contains("write") || what.contains("atomic"),
        }
    }
}

/// One live buffer object.
#[derive(Debug)]
pub(crate) struct Alloc {
    /// GPU virtual address of the first byte.
    pub(crate) va: u64,
    /// Size, bytes (rounded up to pages).
    pub(crate) size: u64,
    /// The GPU it was allocated on.
    pub(crate) gpu_id: u32,
    /// The KFD handle.
    pub(crate) handle: u64,
    /// The render-node mmap offset (0 for USERPTR).
    pub(crate) mmap_offset: u64,
    pub(crate) kind: Kind,
    /// The memory the device sees (its own view of `backing`, or the user's pages).
    pub(crate) region: Region,
    pub(crate) backing: Option<Arc<Backing>>,
    /// GPUs it is mapped to (`MAP_MEMORY_TO_GPU`).
    pub(crate) mapped: BTreeSet<u32>,
    /// Users that must end before it may be freed (queues, the event page).
    pub(crate) pins: u32,
    /// Coarse-grained: VRAM, GTT or USERPTR allocated without `COHERENT`, `EXT_COHERENT` and
    /// `UNCACHED` (`kfd_ioctl.h`), which a GPU's L2 caches non-coherently (the cache model,
    /// [`super::l2`]).
    pub(crate) coarse: bool,
}

/// All live allocations of the process.
#[derive(Debug, Default)]
pub(crate) struct Allocs {
    by_va: BTreeMap<u64, Alloc>,
    /// Buffer objects allocated with no GPU address (`va_addr` 0: libhsakmt's "memory only"
    /// allocations behind ROCR's `hsa_amd_vmem_handle_create`), by KFD handle. They reach the
    /// GPU only through a `GEM_VA` mapping of their exported dma-buf.
    unaddressed: HashMap<u64, Alloc>,
    handles: HashMap<u64, u64>,
    offsets: HashMap<u64, u64>,
    next_id: u32,
    vram_used: HashMap<u32, u64>,
    system_used: u64,
    /// SVM ranges some GPU may access (`AMDKFD_IOC_SVM`), by first byte: (size in bytes, the
    /// gpu_ids). The device reaches them where no buffer object is.
    svm: BTreeMap<u64, (u64, Vec<u32>)>,
}

impl Allocs {
    /// Number of live allocations.
    pub(crate) fn len(&self) -> usize {
        self.by_va.len() + self.unaddressed.len()
    }

    /// VRAM bytes in use on `gpu_id`.
    pub(crate) fn vram_used(&self, gpu_id: u32) -> u64 {
        self.vram_used.get(&gpu_id).copied().unwrap_or(0)
    }

    /// System bytes in use (GTT and USERPTR).
    pub(crate) fn system_used(&self) -> u64 {
        self.system_used
    }

    /// Whether `va..va+size` overlaps a live allocation.
    pub(crate) fn overlaps(&self, va: u64, size: u64) -> bool {
        let end = va.saturating_add(size);
        if let Some((_, a)) = self.by_va.range(..end).next_back() {
            return a.va + a.size > va;
        }
        false
    }

    /// A fresh id for a handle (low 32 bits) and mmap offset.
    pub(crate) fn next_id(&mut self) -> u32 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.next_id
    }

    /// Inserts a new allocation (the caller checked overlap and limits).
    pub(crate) fn insert(&mut self, a: Alloc) {
        match a.kind {
            Kind::Vram => *self.vram_used.entry(a.gpu_id).or_insert(0) += a.size,
            Kind::Gtt | Kind::Userptr => self.system_used += a.size,
            Kind::Doorbell | Kind::MmioRemap | Kind::Imported | Kind::Aliased | Kind::GemVa => {}
        }
        if a.mmap_offset != 0 {
            self.offsets.insert(a.mmap_offset, a.handle);
        }
        if a.va == 0 {
            self.unaddressed.insert(a.handle, a);
            return;
        }
        // A GEM_VA mapping is no KFD buffer object: no KFD handle names it.
        if a.kind != Kind::GemVa {
            self.handles.insert(a.handle, a.va);
        }
        self.by_va.insert(a.va, a);
    }

    /// The `GEM_VA` mapping whose first byte is `va`.
    pub(crate) fn gem_va_mut(&mut self, va: u64) -> Option<&mut Alloc> {
        self.by_va.get_mut(&va).filter(|a| a.kind == Kind::GemVa)
    }

    /// Removes the `GEM_VA` mapping whose first byte is `va`.
    pub(crate) fn remove_gem_va(&mut self, va: u64) -> Option<Alloc> {
        self.gem_va_mut(va)?;
        self.by_va.remove(&va)
    }

    /// The allocation with KFD handle `handle`.
    pub(crate) fn by_handle(&self, handle: u64) -> Option<&Alloc> {
        match self.handles.get(&handle) {
            Some(va) => self.by_va.get(va),
            None => self.unaddressed.get(&handle),
        }
    }

    /// The allocation with KFD handle `handle`, mutably.
    pub(crate) fn by_handle_mut(&mut self, handle: u64) -> Option<&mut Alloc> {
        match self.handles.get(&handle) {
            Some(va) => self.by_va.get_mut(va),
            None => self.unaddressed.get_mut(&handle),
        }
    }

    /// The allocation whose render-node mmap offset is `offset`.
    pub(crate) fn by_mmap_offset(&self, offset: u64) -> Option<&Alloc> {
        self.offsets.get(&offset).and_then(|h| self.by_handle(*h))
    }

    /// Removes the allocation with `handle`.
    ///
    /// # Errors
    /// `EINVAL` for an unknown handle; `EBUSY` while a queue or the event page uses it.
    pub(crate) fn remove(&mut self, handle: u64) -> Result<Alloc, Errno> {
        let a = self.by_handle(handle).ok_or(Errno::INVAL)?;
        if a.pins > 0 {
            return Err(Errno::BUSY);
        }
        let a = match self.handles.remove(&handle) {
            Some(va) => self.by_va.remove(&va).ok_or(Errno::INVAL)?,
            None => self.unaddressed.remove(&handle).ok_or(Errno::INVAL)?,
        };
        if a.mmap_offset != 0 {
            self.offsets.remove(&a.mmap_offset);
        }
        match a.kind {
            Kind::Vram => {
                if let Some(u) = self.vram_used.get_mut(&a.gpu_id) {
                    *u -= a.size;
                }
            }
            Kind::Gtt | Kind::Userptr => self.system_used -= a.size,
            Kind::Doorbell | Kind::MmioRemap | Kind::Imported | Kind::Aliased | Kind::GemVa => {}
        }
        Ok(a)
    }

    /// The live allocation holding all of `va..va+len` (any mapping state).
    pub(crate) fn containing(&self, va: u64, len: u64) -> Option<&Alloc> {
        let (_, a) = self.by_va.range(..=va).next_back()?;
        let end = va.checked_add(len)?;
        (end <= a.va + a.size).then_some(a)
    }

    /// Replaces the SVM windows the GPUs may access: `(first byte, size in bytes, gpu_ids)`.
    pub(crate) fn set_svm_windows(
        &mut self,
        windows: impl IntoIterator<Item = (u64, u64, Vec<u32>)>,
    ) {
        self.svm = windows
            .into_iter()
            .map(|(va, size, g)| (va, (size, g)))
            .collect();
    }

    /// The user memory of the SVM window holding `va` that `gpu_id` may access, from `va` to
    /// the window's end or `end`, whichever is first.
    fn svm_piece(&self, gpu_id: u32, va: u64, end: u64) -> Option<Region> {
        let (&s, (size, gpus)) = self.svm.range(..=va).next_back()?;
        let wend = s.checked_add(*size)?;
        if va >= wend || !gpus.contains(&gpu_id) {
            return None;
        }
        mem::svm_region(va, end.min(wend) - va)
    }

    /// The allocation containing `va..va+len` if it is mapped to `gpu_id`.
    pub(crate) fn mapped_containing_mut(
        &mut self,
        gpu_id: u32,
        va: u64,
        len: u64,
    ) -> Option<&mut Alloc> {
        let key = self
            .containing(va, len)
            .filter(|a| a.mapped.contains(&gpu_id))?
            .va;
        self.by_va.get_mut(&key)
    }

    /// Translates the device access `va..va+len` of GPU `gpu_id` to live memory: the range must
    /// lie inside one live allocation mapped to that GPU.
    pub(crate) fn device_region(&self, gpu_id: u32, va: u64, len: u64) -> Option<Region> {
        let Some(a) = self.containing(va, len) else {
            // An SVM range the GPU may access, where no buffer object is.
            let end = va.checked_add(len)?;
            return self
                .svm_piece(gpu_id, va, end)
                .filter(|r| r.len() as u64 == len);
        };
        if !a.mapped.contains(&gpu_id) {
            return None;
        }
        a.region.sub(va - a.va, len)
    }

    /// Translates the device access `va..va+len` of GPU `gpu_id` to live memory that may span
    /// allocations: every byte must lie in a live allocation mapped to that GPU, as a copy
    /// engine, the CP or a wave needs only every page of its range mapped in the GPU's VM
    /// (adjacent buffer objects are one range to it). An empty range touches no byte and
    /// never faults.
    ///
    /// # Errors
    /// A [`SpanFault`] at the first byte that is in no live allocation, or in one that is not
    /// mapped to `gpu_id`: its error is [`Status::MemoryFault`] naming the access (`what`),
    /// the range and that byte.
    pub(crate) fn device_span(
        &self,
        gpu_id: u32,
        va: u64,
        len: u64,
        what: &str,
    ) -> Result<DeviceSpan, SpanFault> {
        if let Some(r) = self.device_region(gpu_id, va, len) {
            return Ok(DeviceSpan::One(r));
        }
        let fault = |at: u64, why: std::fmt::Arguments<'_>| SpanFault {
            address: at,
            error: error!(
                Status::MemoryFault,
                "memory fault on GPU {gpu_id:#x}: {what} at {va:#x} ({len} bytes): {why}"
            ),
        };
        let Some(end) = va.checked_add(len) else {
            return Err(fault(
                va,
                format_args!("the range runs past the end of the address space"),
            ));
        };
        let mut pieces = Vec::new();
        let mut at = va;
        while at < end {
            let Some(a) = self.containing(at, 1) else {
                if let Some(r) = self.svm_piece(gpu_id, at, end) {
                    at += r.len() as u64;
                    pieces.push(r);
                    continue;
                }
                return Err(fault(
                    at,
                    format_args!("byte {at:#x} is in no live allocation"),
                ));
            };
            if !a.mapped.contains(&gpu_id) {
                return Err(fault(
                    at,
                    format_args!(
                        "byte {at:#x} is in the allocation at {:#x}, which is not mapped to \
                         this GPU",
                        a.va
                    ),
                ));
            }
            let n = end.min(a.va + a.size) - at;
            let Some(r) = a.region.sub(at - a.va, n) else {
                return Err(fault(
                    at,
                    format_args!("byte {at:#x} lies past the allocation's memory"),
                ));
            };
            pieces.push(r);
            at += n;
        }
        Ok(match pieces[..] {
            [one] => DeviceSpan::One(one),
            _ => DeviceSpan::Many(pieces),
        })
    }

    /// As [`Allocs::device_region`], with a [`Status::MemoryFault`] error naming the access.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] when the range is not inside one live allocation mapped to
    /// `gpu_id`.
    pub(crate) fn device_region_or_fault(
        &self,
        gpu_id: u32,
        va: u64,
        len: u64,
        what: &str,
    ) -> Result<Region, Error> {
        self.device_region(gpu_id, va, len).ok_or_else(|| {
            let why = match self.containing(va, len) {
                Some(_) => "the allocation is not mapped to this GPU",
                None => "not inside one live allocation",
            };
            error!(
                Status::MemoryFault,
                "memory fault on GPU {gpu_id:#x}: {what} at {va:#x} ({len} bytes): {why}"
            )
        })
    }
}

/// A device access that [`Allocs::device_span`] refused: the error to report and the first
/// byte that faulted (what the device reports to amdkfd's memory event, as a GPU's VM fault
/// names the faulting address).
#[derive(Debug)]
pub(crate) struct SpanFault {
    /// The first device address of the range that is not reachable.
    pub(crate) address: u64,
    /// [`Status::MemoryFault`] naming the access, the range and that address.
    pub(crate) error: Error,
}

/// The live memory behind a device range ([`Allocs::device_span`]): the one region of the
/// allocation holding it, or the regions of the consecutive allocations it spans, in address
/// order. Valid while the allocation table's read lock that made it is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeviceSpan {
    /// The range lies inside one allocation.
    One(Region),
    /// The range crosses allocations: their pieces, in address order, at least two.
    Many(Vec<Region>),
}

impl DeviceSpan {
    /// The pieces, in address order.
    fn pieces(&self) -> &[Region] {
        match self {
            DeviceSpan::One(r) => std::slice::from_ref(r),
            DeviceSpan::Many(v) => v,
        }
    }

    /// The one region of a range inside one allocation (an aligned word always is: buffer
    /// objects are whole pages); `None` for a range that spans allocations.
    pub(crate) fn single(&self) -> Option<Region> {
        match self {
            DeviceSpan::One(r) => Some(*r),
            DeviceSpan::Many(_) => None,
        }
    }

    /// The range's length, bytes.
    pub(crate) fn len(&self) -> usize {
        self.pieces().iter().map(Region::len).sum()
    }

    /// Copies the range's bytes into `out` (at most the shorter length).
    pub(crate) fn read_into(&self, out: &mut [u8]) {
        let mut done = 0;
        for r in self.pieces() {
            let n = r.len().min(out.len() - done);
            r.read_into(&mut out[done..done + n]);
            done += n;
        }
    }

    /// Copies `data` into the range (at most the range's length).
    pub(crate) fn write_from(&self, data: &[u8]) {
        let mut done = 0;
        for r in self.pieces() {
            let n = r.len().min(data.len() - done);
            r.write_from(&data[done..done + n]);
            done += n;
        }
    }

    /// [`DeviceSpan::read_into`] for the GPU's engines ([`Region::try_read_at`]): a piece of
    /// user memory its owner unmapped faults.
    ///
    /// # Errors
    /// The offset, in the span, of the byte that faulted.
    pub(crate) fn try_read_into(&self, out: &mut [u8]) -> Result<(), RegionFault> {
        let mut done = 0;
        for r in self.pieces() {
            let n = r.len().min(out.len() - done);
            r.try_read_into(&mut out[done..done + n])
                .map_err(|f| RegionFault {
                    offset: done as u64 + f.offset,
                })?;
            done += n;
        }
        Ok(())
    }

    /// [`DeviceSpan::write_from`] for the GPU's engines (see [`DeviceSpan::try_read_into`]).
    ///
    /// # Errors
    /// As [`DeviceSpan::try_read_into`].
    pub(crate) fn try_write_from(&self, data: &[u8]) -> Result<(), RegionFault> {
        let mut done = 0;
        for r in self.pieces() {
            let n = r.len().min(data.len() - done);
            r.try_write_from(&data[done..done + n])
                .map_err(|f| RegionFault {
                    offset: done as u64 + f.offset,
                })?;
            done += n;
        }
        Ok(())
    }

    /// Whether a piece is user memory (a `USERPTR` buffer object).
    fn any_user(&self) -> bool {
        self.pieces().iter().any(Region::is_user)
    }

    /// [`DeviceSpan::copy_from`] for the GPU's engines: with a user piece on either side the
    /// copy goes through a bounce buffer read and written with [`DeviceSpan::try_read_into`]
    /// and [`DeviceSpan::try_write_from`] (memmove semantics whatever the overlap).
    ///
    /// # Errors
    /// The side and the offset, in that span, of the byte that faulted.
    pub(crate) fn try_copy_from(&self, src: &DeviceSpan) -> Result<(), CopyFault> {
        if !self.any_user() && !src.any_user() {
            self.copy_from(src);
            return Ok(());
        }
        if let (DeviceSpan::One(d), DeviceSpan::One(s)) = (self, src) {
            return d.try_copy_from(s);
        }
        let n = self.len().min(src.len());
        let mut bounce = vec![0u8; n];
        src.try_read_into(&mut bounce).map_err(CopyFault::Source)?;
        self.try_write_from(&bounce).map_err(CopyFault::Destination)
    }

    /// Copies `src`'s bytes into this range (at most the shorter length) as `memmove`: the
    /// result is as if all of `src` was read before anything was written, however the two
    /// overlap (an SDMA copy within one buffer, or across the same pages reached through two
    /// buffer objects).
    pub(crate) fn copy_from(&self, src: &DeviceSpan) {
        if let (DeviceSpan::One(d), DeviceSpan::One(s)) = (self, src) {
            d.copy_from(s);
            return;
        }
        let n = self.len().min(src.len());
        let host = |r: &Region| (r.addr(), r.addr() + r.len() as u64);
        let overlap = self.pieces().iter().any(|d| {
            let (d0, d1) = host(d);
            src.pieces().iter().any(|s| {
                let (s0, s1) = host(s);
                d0 < s1 && s0 < d1
            })
        });
        if overlap {
            // Pieces alias each other in an order the walk below could break: read first.
            let mut bounce = vec![0u8; n];
            src.read_into(&mut bounce);
            self.write_from(&bounce);
            return;
        }
        // No piece of one side touches a piece of the other: copy piece pair by piece pair.
        let (mut di, mut si) = (self.pieces().iter(), src.pieces().iter());
        let (mut d, mut s) = (di.next().copied(), si.next().copied());
        let mut left = n as u64;
        while left > 0 {
            let (Some(dr), Some(sr)) = (d, s) else { break };
            let k = (dr.len().min(sr.len()) as u64).min(left);
            if let (Some(dk), Some(sk)) = (dr.sub(0, k), sr.sub(0, k)) {
                dk.copy_from(&sk);
            }
            left -= k;
            d = if k == dr.len() as u64 {
                di.next().copied()
            } else {
                dr.sub(k, dr.len() as u64 - k)
            };
            s = if k == sr.len() as u64 {
                si.next().copied()
            } else {
                sr.sub(k, sr.len() as u64 - k)
            };
        }
    }
}

// ---- The ioctls (kfd_chardev.c's handlers) ----

/// `DRM_FILE_PAGE_OFFSET_START` of `drm_gem.h` on 64-bit kernels, in bytes: the first fake
/// offset a DRM driver (amdgpu) hands out for mmap of a buffer object through its render
/// node, `(0xffffffff >> PAGE_SHIFT) + 1` pages = 4 GiB.
pub(crate) const DRM_FILE_PAGE_OFFSET_START: u64 = 1 << 32;

/// The render-node mmap offset of the buffer object numbered `id` (bytes):
/// [`DRM_FILE_PAGE_OFFSET_START`] + `id << 24`, so every offset is at or above 4 GiB as
/// amdgpu's are (kfd-emu's preloaded library tells the device's mmaps from a file's by
/// that, `kfd-emu/src/preload/syscall_mmap.rs`), 16 MiB apart, and below `1 << 57` for
/// any `id`.
pub(crate) fn render_mmap_offset(id: u32) -> u64 {
    DRM_FILE_PAGE_OFFSET_START + (u64::from(id) << 24)
}

/// Most device ids `MAP/UNMAP_MEMORY_TO_GPU` accept in one call (more is `EINVAL`).
pub const MAX_MAP_DEVICES: u32 = 1024;

/// `AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED`.
const AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED: u64 = 1 << 0;
/// `AMDGPU_GEM_CREATE_NO_CPU_ACCESS`.
const AMDGPU_GEM_CREATE_NO_CPU_ACCESS: u64 = 1 << 1;
/// `AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS`.
const AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS: u64 = 1 << 5;
/// `AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE`.
const AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE: u64 = 1 << 9;
/// `AMDGPU_GEM_CREATE_COHERENT`.
const AMDGPU_GEM_CREATE_COHERENT: u64 = 1 << 13;
/// `AMDGPU_GEM_CREATE_UNCACHED`.
const AMDGPU_GEM_CREATE_UNCACHED: u64 = 1 << 14;
/// `AMDGPU_GEM_CREATE_EXT_COHERENT`.
const AMDGPU_GEM_CREATE_EXT_COHERENT: u64 = 1 << 15;
/// `KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT` (interface 1.15; `kfd_ioctl.h`).
const KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT: u32 = 1 << 24;
/// `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT` (interface 1.16; `kfd_ioctl.h`).
const KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT: u32 = 1 << 23;

/// The amdgpu creation flags (`AMDGPU_GEM_CREATE_*`) of the buffer object a KFD VRAM or GTT
/// allocation with `flags` makes on a dGPU (`amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu`): VRAM
/// is wiped on release and CPU-visible with `PUBLIC` (else no CPU access), contiguous with
/// `CONTIGUOUS_BEST_EFFORT`; both kinds take `COHERENT`, `EXT_COHERENT` and `UNCACHED` from the KFD flags
/// of the same names.
pub(crate) fn gem_create_flags(kind: Kind, flags: u32) -> u64 {
    let mut g = 0;
    if kind == Kind::Vram {
        g |= AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE;
        g |= if flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 {
            AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED
        } else {
            AMDGPU_GEM_CREATE_NO_CPU_ACCESS
        };
        if flags & KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT != 0 {
            g |= AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS;
        }
    }
    for (kfd, gem) in [
        (KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, AMDGPU_GEM_CREATE_COHERENT),
        (
            KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT,
            AMDGPU_GEM_CREATE_EXT_COHERENT,
        ),
        (KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED, AMDGPU_GEM_CREATE_UNCACHED),
    ] {
        if flags & kfd != 0 {
            g |= gem;
        }
    }
    g
}

/// ALLOC_MEMORY_OF_GPU as `kfd_ioctl_alloc_memory_of_gpu`: exactly one of the VRAM, GTT,
/// USERPTR, DOORBELL and MMIO_REMAP flags (`EINVAL` otherwise), a non-zero page-aligned
/// address whose range overlaps no buffer object (`EINVAL`) or, for VRAM and GTT, address 0
/// (an object with no GPU address, which MAP_MEMORY_TO_GPU refuses with `EINVAL` and the
/// render node's `GEM_VA` maps; amdkfd would map it at GPU address 0), a size rounded up to pages that
/// fits the GPU's VRAM or the system memory (`ENOMEM`); the doorbell and MMIO pages are the
/// GPU's own, one page each. A USERPTR range must be mapped readable (`EFAULT`). Returns the
/// handle (`gpu_id << 32 | id`) and the render node's mmap offset ([`render_mmap_offset`]:
/// at or above 4 GiB, as amdgpu's fake offsets are; `/dev/kfd`'s MMIO offset for MMIO_REMAP). Over an SVM range: `EADDRINUSE`, except for USERPTR, which
/// drops the ranges there as stale (see the comment in the body: amdkfd removes a range when
/// its memory is unmapped, which the emulated device does not always see).
pub(crate) fn alloc_memory_of_gpu(
    device: &Arc<Device>,
    a: &mut AllocMemoryOfGpuArgs,
) -> Result<(), Errno> {
    let gpu = device.gpu_by_id(a.gpu_id)?;
    let type_bits = a.flags
        & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | KFD_IOC_ALLOC_MEM_FLAGS_GTT
            | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
            | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
    let kind = match type_bits {
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM => Kind::Vram,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT => Kind::Gtt,
        KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Kind::Userptr,
        KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL => Kind::Doorbell,
        KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP => Kind::MmioRemap,
        _ => return Err(Errno::INVAL),
    };
    // Address 0: a buffer object with no GPU address, VRAM or GTT only (libhsakmt's
    // `NoAddress` allocations; amdkfd takes any address, and such an object reaches a GPU
    // only through the render node's GEM_VA).
    let unaddressed = a.va_addr == 0 && matches!(kind, Kind::Vram | Kind::Gtt);
    if a.size == 0 || (a.va_addr == 0 && !unaddressed) || a.va_addr % PAGE_BYTES != 0 {
        return Err(Errno::INVAL);
    }
    let size = round_up_page(a.size).ok_or(Errno::INVAL)?;
    if a.va_addr.checked_add(size).is_none() {
        return Err(Errno::INVAL);
    }
    // kfd_ioctl_alloc_memory_of_gpu: an address an SVM range holds is EADDRINUSE. (The SVM
    // lock is released before the allocations' one: SET_ATTR takes them in the other order.)
    //
    // Except where the range is stale. amdkfd drops an SVM range when the CPU pages under it
    // are unmapped (its MMU notifier); the emulated device lives in the process and cannot
    // see every unmap (the C library's `free` unmaps large blocks with its own internal
    // system call, which no interposer reaches). A USERPTR buffer object is the caller's own
    // memory, which must be mapped now (`EFAULT` below): over an SVM range it is memory
    // mapped anew (or, unmapped, a range as stale) where the range's memory was unmapped, as when HIP 7 grants the
    // GPU a freed `std::vector` for a pageable copy and the thunk maps a queue's ring at the
    // same address later (hip_check's `memcpy` section, issue 37). amdkfd would have removed
    // the range at the unmap and allocated: so does the emulated device, dropping the range
    // first ([`super::svm::cpu_unmapped`]). What this cannot tell apart: a program that
    // registers memory it still has as an SVM range as a USERPTR buffer object too, which
    // amdkfd refuses with EADDRINUSE and the emulated device allows. The other kinds live in
    // the thunk's reserved apertures, never at an address the C library reuses.
    if kind == Kind::Userptr {
        if super::svm::cpu_unmapped(device, a.va_addr, size) {
            log::debug!(
                "USERPTR buffer object at {:#x} (+{size:#x}) over SVM ranges: their memory was \
                 unmapped and mapped again; the ranges are dropped as amdkfd's MMU notifier does",
                a.va_addr
            );
        }
    } else if !unaddressed && lock(&device.svm).overlaps(a.va_addr, size) {
        return Err(Errno::ADDRINUSE);
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if !unaddressed && allocs.overlaps(a.va_addr, size) {
        return Err(Errno::INVAL);
    }
    match kind {
        Kind::Vram if allocs.vram_used(gpu.gpu_id).saturating_add(size) > gpu.vram_bytes => {
            return Err(Errno::NOMEM)
        }
        Kind::Gtt | Kind::Userptr
            if allocs.system_used().saturating_add(size) > device.system_bytes =>
        {
            return Err(Errno::NOMEM)
        }
        Kind::Doorbell if size != DOORBELL_PAGE_BYTES => return Err(Errno::INVAL),
        Kind::MmioRemap if size != PAGE_BYTES => return Err(Errno::INVAL),
        _ => {}
    }
    let id = allocs.next_id();
    let handle = (u64::from(gpu.gpu_id) << 32) | u64::from(id);
    let (backing, region, mmap_offset) = match kind {
        Kind::Userptr => {
            if a.mmap_offset % PAGE_BYTES != 0 {
                return Err(Errno::INVAL);
            }
            (None, device.user.user_region(a.mmap_offset, size)?, 0)
        }
        Kind::Doorbell => {
            let b = gpu.doorbells.clone();
            let r = b.region();
            (Some(b), r, render_mmap_offset(id))
        }
        // The GPU's one MMIO page, mapped through /dev/kfd (the offset below), not the
        // render node.
        Kind::MmioRemap => {
            let b = gpu.mmio.clone();
            let r = b.region();
            (Some(b), r, 0)
        }
        _ => {
            // amdgpu_amdkfd_get_dmabuf_info's flags: the preferred domain, and PUBLIC for
            // VRAM the CPU may reach (KFD allocates it CPU_ACCESS_REQUIRED).
            let dmabuf_flags = if kind == Kind::Vram {
                KFD_IOC_ALLOC_MEM_FLAGS_VRAM | (a.flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC)
            } else {
                KFD_IOC_ALLOC_MEM_FLAGS_GTT
            };
            let name = mem::export_name(gpu.gpu_id, dmabuf_flags, gem_create_flags(kind, a.flags));
            let b = Arc::new(Backing::new(&name, size)?);
            let r = b.region();
            (Some(b), r, render_mmap_offset(id))
        }
    };
    if mmap_offset != 0 {
        a.mmap_offset = mmap_offset;
    }
    // kfd_ioctl_alloc_memory_of_gpu: "MMIO is mapped through kfd device".
    if kind == Kind::MmioRemap {
        a.mmap_offset = KFD_MMAP_TYPE_MMIO | kfd_mmap_gpu_id(gpu.gpu_id);
    }
    a.handle = handle;
    allocs.insert(Alloc {
        va: a.va_addr,
        size,
        gpu_id: gpu.gpu_id,
        handle,
        mmap_offset,
        kind,
        region,
        backing,
        mapped: Default::default(),
        pins: 0,
        coarse: matches!(kind, Kind::Vram | Kind::Gtt | Kind::Userptr)
            && a.flags
                & (KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
                    | KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT
                    | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED)
                == 0,
    });
    Ok(())
}

/// Makes `va..va+size` of GPU `gpu_id` (bytes; `va` and `size` page multiples) reach the host
/// memory at `host..host+size`, mapped to that GPU, as [`Kind::Aliased`]: what the model
/// interface's `alloced_memory` registers ([`crate::model`]). The host pages need not be
/// mapped yet (the model's host maps them when the runtime maps the buffer to the GPU): an
/// access to an unmapped page faults as a GPU's VM fault would ([`super::mem::svm_region`]).
/// Returns the allocation's handle.
///
/// # Errors
/// `EINVAL` for an unknown GPU, a zero, unaligned or overflowing range, or one that overlaps
/// a live allocation.
pub(crate) fn insert_aliased(
    device: &Device,
    gpu_id: u32,
    va: u64,
    host: u64,
    size: u64,
) -> Result<u64, Errno> {
    let gpu = device.gpu_by_id(gpu_id)?;
    if size == 0 || va % PAGE_BYTES != 0 || host % PAGE_BYTES != 0 || size % PAGE_BYTES != 0 {
        return Err(Errno::INVAL);
    }
    va.checked_add(size).ok_or(Errno::INVAL)?;
    let region = super::mem::svm_region(host, size).ok_or(Errno::INVAL)?;
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if allocs.overlaps(va, size) {
        return Err(Errno::INVAL);
    }
    let id = allocs.next_id();
    let handle = (u64::from(gpu.gpu_id) << 32) | u64::from(id);
    allocs.insert(Alloc {
        va,
        size,
        gpu_id: gpu.gpu_id,
        handle,
        mmap_offset: 0,
        kind: Kind::Aliased,
        region,
        backing: None,
        mapped: [gpu.gpu_id].into_iter().collect(),
        pins: 0,
        coarse: false,
    });
    Ok(handle)
}

/// FREE_MEMORY_OF_GPU: `EINVAL` for an unknown handle, `EBUSY` while a queue uses the buffer
/// object, `EPERM` for the process's event page, which amdkfd frees only at process
/// termination ("Free signal BO is not allowed").
pub(crate) fn free_memory_of_gpu(
    device: &Arc<Device>,
    a: &mut FreeMemoryOfGpuArgs,
) -> Result<(), Errno> {
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    let is_event_page = lock(&device.events)
        .page
        .as_ref()
        .is_some_and(|p| p.user_handle == Some(a.handle));
    if is_event_page {
        return Err(Errno::PERM);
    }
    allocs.remove(a.handle).map(|_| ())
}

/// MAP_MEMORY_TO_GPU: makes the buffer object reachable by each GPU of the user's id array
/// from `n_success` on, counting them in `n_success` (a retry resumes there). `EINVAL` for no
/// ids, more than [`MAX_MAP_DEVICES`], `n_success` past them, an unknown handle or GPU;
/// `EFAULT` when the array is not mapped.
pub(crate) fn map_memory_to_gpu(
    device: &Arc<Device>,
    a: &mut MapMemoryToGpuArgs,
) -> Result<(), Errno> {
    map_or_unmap(
        device,
        a.handle,
        a.device_ids_array_ptr,
        a.n_devices,
        &mut a.n_success,
        true,
    )
}

/// UNMAP_MEMORY_FROM_GPU: as [`map_memory_to_gpu`] the other way; a GPU the buffer object is
/// not mapped to is `EINVAL`.
pub(crate) fn unmap_memory_from_gpu(
    device: &Arc<Device>,
    a: &mut UnmapMemoryFromGpuArgs,
) -> Result<(), Errno> {
    map_or_unmap(
        device,
        a.handle,
        a.device_ids_array_ptr,
        a.n_devices,
        &mut a.n_success,
        false,
    )
}

/// AVAILABLE_MEMORY: the GPU's VRAM not yet allocated, bytes; `EINVAL` for an unknown GPU.
pub(crate) fn available_memory(
    device: &Arc<Device>,
    a: &mut GetAvailableMemoryArgs,
) -> Result<(), Errno> {
    let g = device.gpu_by_id(a.gpu_id)?;
    let used = device
        .allocs
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .vram_used(g.gpu_id);
    a.available = g.vram_bytes.saturating_sub(used);
    Ok(())
}

fn map_or_unmap(
    device: &Device,
    handle: u64,
    ids_ptr: u64,
    n_devices: u32,
    n_success: &mut u32,
    map: bool,
) -> Result<(), Errno> {
    if n_devices == 0 || n_devices > MAX_MAP_DEVICES || *n_success > n_devices {
        return Err(Errno::INVAL);
    }
    let mut raw = vec![0u8; n_devices as usize * 4];
    device.user.read(ids_ptr, &mut raw)?;
    let ids: Vec<u32> = raw
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    // A buffer object with no GPU address is refused (amdkfd would map it at GPU address 0).
    if allocs.by_handle(handle).is_none_or(|a| a.va == 0) {
        return Err(Errno::INVAL);
    }
    for (i, &id) in ids.iter().enumerate().skip(*n_success as usize) {
        device.gpu_by_id(id)?;
        let a = allocs.by_handle_mut(handle).ok_or(Errno::INVAL)?;
        if map {
            a.mapped.insert(id);
        } else if !a.mapped.remove(&id) {
            return Err(Errno::INVAL);
        }
        *n_success = i as u32 + 1;
    }
    Ok(())
}
