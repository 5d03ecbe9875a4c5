//! `AMDKFD_IOC_SVM`: shared virtual memory ranges' attributes, kept per range as amdkfd keeps
//! them (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` `kfd_ioctl_svm`,
//! `kfd_ioctl_svm_validate`; `kfd_svm.c` `svm_ioctl`, `svm_range_check_attr`,
//! `svm_range_set_attr`, `svm_range_get_attr`, `svm_range_set_default_attributes`;
//! `kfd_ioctl.h` `struct kfd_ioctl_svm_args`).
//!
//! The argument is the fixed head ([`SvmArgs`], 24 bytes) followed by `nattr`
//! [`SvmAttribute`]s; the caller adds their size to the request's `_IOC_SIZE`. Checks, each
//! with amdkfd's errno:
//! - `EINVAL`: an argument shorter than the head plus `nattr` attributes; a start or size that
//!   is zero or not page-aligned; an op other than SET_ATTR/GET_ATTR; an unknown attribute
//!   type; a gpu_id of no GPU of the process where the attribute names one (ACCESS,
//!   ACCESS_IN_PLACE, NO_ACCESS always; PREFERRED_LOC unless SYSMEM or UNDEFINED;
//!   PREFETCH_LOC unless SYSMEM); a range whose end overflows.
//! - `EADDRINUSE` (SET_ATTR): a range overlapping a buffer object of `ALLOC_MEMORY_OF_GPU`
//!   (amdkfd's `svm_range_check_vm`).
//!
//! SET_ATTR splits the ranges it overlaps at its ends, creates ranges with amdkfd's defaults
//! over the gaps (no preferred or prefetch location, granularity 9, flags HOST_ACCESS |
//! COHERENT, access for every GPU when XNACK is on, none when off), and applies the attributes
//! in order to each. GET_ATTR answers for the ranges inside the queried one as amdkfd
//! combines them (a location that differs between ranges is UNDEFINED, the smallest
//! granularity, SET_FLAGS the flags all have, CLR_FLAGS those none has, each access attribute
//! rewritten to the GPU's access over all of them), and amdkfd's defaults when none is there.
//!
//! What the GPU reaches: a range with ACCESS or ACCESS_IN_PLACE for a GPU (or, with XNACK on,
//! any range) is host memory that GPU's engines, CP and waves read and write in place where no
//! buffer object is (`Allocs::device_span`); an unmapped page there faults as a VM fault.
//! Not modelled: amdkfd's check that the range lies in the process's VMAs (`EFAULT`): the
//! emulated device does not see the host's mappings at ioctl time.
//!
//! Migration: each range keeps its actual location (amdkfd's `actual_loc`: 0 for system
//! memory, where a new range starts, else the gpu_id whose VRAM holds it), apart from its
//! prefetch and preferred locations, which GET_ATTR answers as set (amdkfd's
//! `svm_range_get_attr` never answers the actual location). After SET_ATTR applies its
//! attributes, every range it updated (all it covers, except an existing range mapped on a
//! GPU that the attributes leave unchanged, `svm_range_is_same_attrs`; a PREFETCH_LOC
//! attribute always counts as a change) migrates to its best prefetch location
//! (`svm_range_trigger_migration`, `svm_range_best_prefetch_location`): the prefetch
//! location, except system memory for an APU or when another GPU that reaches the range in
//! place is outside that GPU's XGMI hive; nothing for UNDEFINED or for system memory when
//! already there. Each migration raises `KFD_SMI_EVENT_MIGRATE_START` then `_END` (trigger
//! PREFETCH) on the GPU whose VRAM the pages enter or leave, with the range's first page and
//! page count, `from->to` (0 for system memory, else a gpu_id): to VRAM 0->gpu
//! (`svm_migrate_ram_to_vram`; again on every prefetch to the GPU holding it, as amdkfd walks
//! the range whether or not pages are left in system memory), to system memory gpu->0
//! (`svm_migrate_vram_to_ram`), from one GPU to another both, through system memory
//! (`svm_migrate_vram_to_vram`). The ranges go in amdkfd's update-list order (the new range
//! after the last existing one first, then backwards; see [`set_attr`]). Only the location
//! moves: the emulated VRAM and system memory are both host memory, so the bytes stay where
//! they are and the GPU reads the same pages; the location is bookkeeping and events.
//!
//! Not modelled in migration: amdkfd migrates VMA by VMA, one event pair per VMA, and caps a
//! new range at `max_svm_range_pages` (from the VRAM size); here a range is one piece, one
//! pair. No VRAM is reserved, so a prefetch never fails with `ENOSPC` and no page stays
//! behind (amdkfd's partial migration). Migration on a GPU retry fault to the preferred
//! location (XNACK on: `svm_range_restore_pages`, granularity-sized pieces, trigger
//! PAGEFAULT_GPU) and back on a CPU fault (PAGEFAULT_CPU) or TTM eviction: the emulated GPU
//! takes no retry faults and the CPU never faults on emulated VRAM (it is host memory), so
//! PREFERRED_LOC alone moves nothing. A CPU unmap drops the range as before, migrating
//! nothing (as amdkfd's `svm_range_unmap_from_cpu`). Whether a range is mapped on a GPU
//! (`mapped_to_gpu`, for the unchanged-range rule) is a model of
//! `svm_range_validate_and_map` ([`map_after_set_attr`]).
//!
//! Unmapping: amdkfd removes the part of a range whose CPU pages are unmapped (its MMU
//! notifier). The emulated device lives in the process and does not see every `munmap` (the
//! C library's `free` makes its own system call), so a range can outlive its memory; it is
//! dropped when a USERPTR buffer object is allocated over it ([`cpu_unmapped`], called by
//! `alloc_memory_of_gpu`: that memory is mapped now, so mapped anew), and until then the GPU
//! reaching its unmapped pages takes a VM fault (the accesses are guarded).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustix::io::Errno;
use zerocopy::FromBytes;

use hsa_linux::kfd::abi::*;

use super::{lock, Device, PAGE_BYTES};

/// amdkfd's default migration granularity, log2 of pages (`amdgpu_svm_default_granularity`).
pub const SVM_DEFAULT_GRANULARITY: u32 = 9;
/// The largest granularity SET_ATTR keeps (larger values are clamped to it).
pub const SVM_MAX_GRANULARITY: u32 = 0x3f;

/// One range's attributes (amdkfd's `struct svm_range`, the attribute part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SvmRange {
    /// Last page of the range (inclusive), page number.
    last: u64,
    preferred_loc: u32,
    prefetch_loc: u32,
    /// GPUs (gpu_id) that may access it.
    access: Vec<u32>,
    /// GPUs that may access it in place (also in `access`).
    access_in_place: Vec<u32>,
    flags: u32,
    granularity: u32,
    /// Where its pages are (amdkfd's `actual_loc`): 0 for system memory, else the gpu_id
    /// whose VRAM holds them. Bookkeeping only: the bytes stay in host memory (module docs).
    actual_loc: u32,
    /// Whether amdkfd would have it mapped on some GPU (`mapped_to_gpu`), as
    /// [`map_after_set_attr`] models it: a SET_ATTR that changes nothing in a mapped range
    /// leaves it out of the update (`svm_range_add`), so it does not migrate.
    mapped_to_gpu: bool,
}

/// The process's SVM ranges, by first page.
#[derive(Debug, Default)]
pub(crate) struct SvmRanges {
    by_start: BTreeMap<u64, SvmRange>,
}

impl SvmRanges {
    /// Splits the range holding `page` (not at its start) so that one begins at `page`.
    fn split_at(&mut self, page: u64) {
        let Some((&s, r)) = self.by_start.range(..page).next_back() else {
            return;
        };
        if s < page && r.last >= page {
            let mut tail = r.clone();
            let r = self.by_start.get_mut(&s).expect("range just found");
            r.last = page - 1;
            tail.last = tail.last.max(page);
            self.by_start.insert(page, tail);
        }
    }

    /// Whether a range overlaps bytes `va..va+size` (`size` > 0).
    pub(crate) fn overlaps(&self, va: u64, size: u64) -> bool {
        let first = va / PAGE_BYTES;
        let last = va.saturating_add(size - 1) / PAGE_BYTES;
        self.by_start
            .range(..=last)
            .next_back()
            .is_some_and(|(_, r)| r.last >= first)
    }

    /// Number of ranges (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_start.len()
    }
}

fn default_range(last: u64, xnack_gpus: &[u32]) -> SvmRange {
    SvmRange {
        last,
        preferred_loc: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        prefetch_loc: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        access: xnack_gpus.to_vec(),
        access_in_place: Vec::new(),
        flags: KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT,
        granularity: SVM_DEFAULT_GRANULARITY,
        actual_loc: KFD_IOCTL_SVM_LOCATION_SYSMEM,
        mapped_to_gpu: false,
    }
}

/// The `AMDKFD_IOC_SVM` handler (module docs): `arg` is the whole argument, head and
/// attributes, as the request's size says; answered in place.
pub(crate) fn svm_ioctl(device: &Arc<Device>, arg: &mut [u8]) -> Result<(), Errno> {
    // kfd_ioctl: a shorter argument is zero-extended to the head.
    let head_len = size_of::<SvmArgs>();
    let mut buf = vec![0u8; arg.len().max(head_len)];
    buf[..arg.len()].copy_from_slice(arg);
    let r = svm_on(device, &mut buf);
    let n = arg.len();
    arg.copy_from_slice(&buf[..n]);
    r
}

fn svm_on(device: &Arc<Device>, buf: &mut [u8]) -> Result<(), Errno> {
    let (head, rest) = buf.split_at_mut(size_of::<SvmArgs>());
    let args = SvmArgs::read_from_bytes(head).map_err(|_| Errno::INVAL)?;
    // kfd_ioctl_svm_validate: the buffer must hold nattr attributes.
    let nattr = args.nattr as usize;
    let attr_bytes = nattr
        .checked_mul(size_of::<SvmAttribute>())
        .ok_or(Errno::INVAL)?;
    if rest.len() < attr_bytes {
        return Err(Errno::INVAL);
    }
    if args.start_addr % PAGE_BYTES != 0 || args.size % PAGE_BYTES != 0 {
        return Err(Errno::INVAL);
    }
    if args.start_addr == 0 || args.size == 0 {
        return Err(Errno::INVAL);
    }
    let start = args.start_addr / PAGE_BYTES;
    let last = args
        .start_addr
        .checked_add(args.size - 1)
        .ok_or(Errno::INVAL)?
        / PAGE_BYTES;
    let attrs =
        <[SvmAttribute]>::mut_from_bytes(&mut rest[..attr_bytes]).map_err(|_| Errno::INVAL)?;
    match args.op {
        KFD_IOCTL_SVM_OP_SET_ATTR => {
            set_attr(device, args.start_addr, args.size, start, last, attrs)
        }
        KFD_IOCTL_SVM_OP_GET_ATTR => get_attr(device, start, last, attrs),
        _ => Err(Errno::INVAL),
    }
}

/// `svm_range_check_attr`.
fn check_attr(device: &Device, attrs: &[SvmAttribute]) -> Result<(), Errno> {
    for a in attrs {
        let names_gpu = match a.type_ {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => {
                a.value != KFD_IOCTL_SVM_LOCATION_SYSMEM
                    && a.value != KFD_IOCTL_SVM_LOCATION_UNDEFINED
            }
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => a.value != KFD_IOCTL_SVM_LOCATION_SYSMEM,
            KFD_IOCTL_SVM_ATTR_ACCESS
            | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
            | KFD_IOCTL_SVM_ATTR_NO_ACCESS => true,
            KFD_IOCTL_SVM_ATTR_SET_FLAGS
            | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
            | KFD_IOCTL_SVM_ATTR_GRANULARITY => false,
            _ => return Err(Errno::INVAL),
        };
        if names_gpu {
            device.gpu_by_id(a.value)?;
        }
    }
    Ok(())
}

fn xnack_gpus(device: &Device) -> Vec<u32> {
    if device.xnack.load(Ordering::SeqCst) != 0 {
        device.gpus.iter().map(|g| g.gpu_id).collect()
    } else {
        Vec::new()
    }
}

/// `svm_range_set_attr` (module docs).
fn set_attr(
    device: &Arc<Device>,
    va: u64,
    size: u64,
    start: u64,
    last: u64,
    attrs: &[SvmAttribute],
) -> Result<(), Errno> {
    check_attr(device, attrs)?;
    if device
        .allocs
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .overlaps(va, size)
    {
        return Err(Errno::ADDRINUSE);
    }
    let xnack = device.xnack.load(Ordering::SeqCst) != 0;
    let defaults = xnack_gpus(device);
    let mut svm = lock(&device.svm);
    svm.split_at(start);
    if let Some(end) = last.checked_add(1) {
        svm.split_at(end);
    }
    // svm_range_add: the ranges to update (first page of each), in the order amdkfd adds
    // them to its update list: each existing range (unless it is mapped and the attributes
    // would change nothing in it), then the new range filling the gap before it, and last
    // the new range after the final one.
    let mut update: Vec<u64> = Vec::new();
    let mut page = start;
    let covered: Vec<(u64, u64, bool)> = svm
        .by_start
        .range(start..=last)
        .map(|(&s, r)| (s, r.last, r.mapped_to_gpu && same_attrs(r, attrs)))
        .collect();
    for (s, l, unchanged) in covered {
        if !unchanged {
            update.push(s);
        }
        if s > page {
            svm.by_start.insert(page, default_range(s - 1, &defaults));
            update.push(page);
        }
        page = l.saturating_add(1);
    }
    if page <= last {
        svm.by_start.insert(page, default_range(last, &defaults));
        update.push(page);
    }
    for s in &update {
        if let Some(r) = svm.by_start.get_mut(s) {
            for a in attrs {
                apply(r, a);
            }
        }
    }
    // svm_range_apply_attrs asks for a mapping update for a flag, and for an access
    // attribute with XNACK off (with XNACK on the GPU's fault maps it).
    let update_mapping = !update.is_empty()
        && attrs.iter().any(|a| match a.type_ {
            KFD_IOCTL_SVM_ATTR_SET_FLAGS | KFD_IOCTL_SVM_ATTR_CLR_FLAGS => true,
            KFD_IOCTL_SVM_ATTR_ACCESS
            | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
            | KFD_IOCTL_SVM_ATTR_NO_ACCESS => !xnack,
            _ => false,
        });
    // Then each updated range migrates to its prefetch location and is mapped. amdkfd's
    // list takes each range at its head (`list_add`), so it walks them in reverse order.
    let mut smi = lock(&device.smi);
    for s in update.iter().rev() {
        if let Some(r) = svm.by_start.get_mut(s) {
            let migrated = trigger_migration(device, &mut smi, *s, r, xnack);
            map_after_set_attr(r, migrated, update_mapping, xnack);
        }
    }
    drop(smi);
    publish_windows(device, &svm);
    Ok(())
}

/// `svm_range_is_same_attrs`: whether applying `attrs` would leave `r` as it is. A
/// PREFETCH_LOC attribute never does (amdkfd migrates on every prefetch); an access
/// attribute compares the GPU's access kind, GRANULARITY the value as given (unclamped).
fn same_attrs(r: &SvmRange, attrs: &[SvmAttribute]) -> bool {
    attrs.iter().all(|a| match a.type_ {
        KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => r.preferred_loc == a.value,
        KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => false,
        KFD_IOCTL_SVM_ATTR_ACCESS => {
            r.access.contains(&a.value) && !r.access_in_place.contains(&a.value)
        }
        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => r.access_in_place.contains(&a.value),
        KFD_IOCTL_SVM_ATTR_NO_ACCESS => !r.access.contains(&a.value),
        KFD_IOCTL_SVM_ATTR_SET_FLAGS => r.flags & a.value == a.value,
        KFD_IOCTL_SVM_ATTR_CLR_FLAGS => r.flags & a.value == 0,
        KFD_IOCTL_SVM_ATTR_GRANULARITY => r.granularity == a.value,
        _ => false,
    })
}

/// Whether GPU `gpu_id` is an APU, whose "VRAM" is system memory, so amdkfd never migrates
/// to it (`svm_range_best_prefetch_location`'s APU test: `adev->gmc.is_app_apu`,
/// `AMD_IS_APU` or `apu_prefer_gtt` across 6.x): here a GPU whose topology node also has
/// CPU cores (the combined node amdkfd's CRAT gives an APU). Every emulated GPU has a
/// frame-buffer bank (`complete_capture` gives one to a node without), so that is not the
/// test.
fn is_apu(device: &Device, gpu_id: u32) -> bool {
    device
        .topology
        .nodes
        .iter()
        .any(|n| n.properties.gpu_id == gpu_id && n.properties.cpu_cores_count > 0)
}

/// `svm_nodes_in_same_hive`: the same GPU, or two GPUs of one XGMI hive (the same non-zero
/// `hive_id` in the topology).
fn same_hive(device: &Device, a: u32, b: u32) -> bool {
    let hive = |g: u32| {
        device
            .topology
            .nodes
            .iter()
            .find(|n| n.properties.gpu_id == g)
            .map_or(0, |n| n.properties.hive_id)
    };
    a == b || (hive(a) != 0 && hive(a) == hive(b))
}

/// `svm_range_best_prefetch_location`: where a prefetch puts `r`: its prefetch location
/// (SYSMEM, UNDEFINED or a gpu_id), except system memory (0) when that GPU is an APU
/// ([`is_apu`]) or when another GPU that must reach the range in place is outside the
/// GPU's XGMI hive (with XNACK off every GPU with access, with XNACK on those with
/// ACCESS_IN_PLACE): a GPU cannot map another GPU's VRAM coherently over PCIe.
fn best_prefetch_location(device: &Device, r: &SvmRange, xnack: bool) -> u32 {
    let best = r.prefetch_loc;
    if best == KFD_IOCTL_SVM_LOCATION_SYSMEM || best == KFD_IOCTL_SVM_LOCATION_UNDEFINED {
        return best;
    }
    if device.gpu(best).is_none() || is_apu(device, best) {
        return KFD_IOCTL_SVM_LOCATION_SYSMEM;
    }
    let others = if xnack { &r.access_in_place } else { &r.access };
    if others.iter().any(|&g| !same_hive(device, g, best)) {
        return KFD_IOCTL_SVM_LOCATION_SYSMEM;
    }
    best
}

/// `svm_range_trigger_migration` for range `r` (first page `start`) after SET_ATTR applied
/// its attributes: moves its [`actual_loc`](SvmRange::actual_loc) to its best prefetch
/// location ([`best_prefetch_location`]) and raises amdkfd's migration events through
/// `smi`. Nothing for UNDEFINED or for system memory when already there. To system memory:
/// `svm_migrate_vram_to_ram` from the GPU holding it. To a GPU: `svm_migrate_to_vram`,
/// which first takes it to system memory when another GPU holds it
/// (`svm_migrate_vram_to_vram`), then `svm_migrate_ram_to_vram` — also when that GPU holds
/// it already (amdkfd still walks the range, as part of it may be in system memory, and
/// raises the events though nothing moves). Returns whether a migration ran (amdkfd's
/// `migrated`). Never fails: the emulated VRAM is not reserved (see the module docs).
fn trigger_migration(
    device: &Device,
    smi: &mut super::smi::SmiClients,
    start: u64,
    r: &mut SvmRange,
    xnack: bool,
) -> bool {
    let best = best_prefetch_location(device, r, xnack);
    if best == KFD_IOCTL_SVM_LOCATION_UNDEFINED
        || (best == KFD_IOCTL_SVM_LOCATION_SYSMEM && r.actual_loc == KFD_IOCTL_SVM_LOCATION_SYSMEM)
    {
        return false;
    }
    if r.actual_loc != KFD_IOCTL_SVM_LOCATION_SYSMEM && r.actual_loc != best {
        migrate(smi, start, r, r.actual_loc, KFD_IOCTL_SVM_LOCATION_SYSMEM);
    }
    if best != KFD_IOCTL_SVM_LOCATION_SYSMEM {
        migrate(smi, start, r, KFD_IOCTL_SVM_LOCATION_SYSMEM, best);
    }
    true
}

/// One migration of the whole of `r` (first page `start`) from `from` to `to` (0 for
/// system memory, else a gpu_id; one of them is 0), as `svm_migrate_vma_to_vram` /
/// `svm_migrate_vma_to_ram` do it for one VMA: MIGRATE_START and MIGRATE_END (error 0) on
/// the GPU of the two, trigger PREFETCH, the range's first page and page count; then the
/// range is at `to`. amdkfd migrates VMA by VMA; the emulated device does not see the
/// host's mappings and takes the range as one VMA.
fn migrate(smi: &mut super::smi::SmiClients, start: u64, r: &mut SvmRange, from: u32, to: u32) {
    use super::smi::KFD_MIGRATE_TRIGGER_PREFETCH as PREFETCH;
    let gpu = from.max(to);
    let pages = r.last + 1 - start;
    smi.migrate_start(
        gpu,
        start,
        pages,
        from,
        to,
        r.prefetch_loc,
        r.preferred_loc,
        PREFETCH,
    );
    smi.migrate_end(gpu, start, pages, from, to, PREFETCH, 0);
    r.actual_loc = to;
}

/// What `svm_range_set_attr` does after a range's migration, for
/// [`mapped_to_gpu`](SvmRange::mapped_to_gpu): nothing when it migrated and is mapped
/// (XNACK off or `GPU_ALWAYS_MAPPED`: amdkfd's restore work remaps it) or when it neither
/// migrated nor had its access or flags changed; else `svm_range_validate_and_map` over
/// every GPU, which maps it when some GPU is to have it: with XNACK off each GPU with
/// access, with XNACK on those with ACCESS_IN_PLACE, the GPU holding it if that one has
/// access, and every GPU with access once mapped or `GPU_ALWAYS_MAPPED`. A model: the
/// emulated GPUs have no page tables to fill.
fn map_after_set_attr(r: &mut SvmRange, migrated: bool, update_mapping: bool, xnack: bool) {
    let always = r.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED != 0;
    if migrated && (!xnack || always) && r.mapped_to_gpu {
        return;
    }
    if !migrated && !update_mapping {
        return;
    }
    let some_gpu = if xnack {
        !r.access_in_place.is_empty()
            || (r.actual_loc != KFD_IOCTL_SVM_LOCATION_SYSMEM && r.access.contains(&r.actual_loc))
            || ((r.mapped_to_gpu || always) && !r.access.is_empty())
    } else {
        !r.access.is_empty()
    };
    if some_gpu {
        r.mapped_to_gpu = true;
    }
}

/// Hands the allocation table what the GPUs may now reach: every range some GPU has access
/// to. Called with the SVM lock held (the order `set_attr` takes the two locks in).
fn publish_windows(device: &Device, svm: &SvmRanges) {
    let windows: Vec<(u64, u64, Vec<u32>)> = svm
        .by_start
        .iter()
        .filter(|(_, r)| !r.access.is_empty())
        .map(|(&s, r)| {
            (
                s * PAGE_BYTES,
                (r.last + 1 - s) * PAGE_BYTES,
                r.access.clone(),
            )
        })
        .collect();
    device
        .allocs
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .set_svm_windows(windows);
}

/// The CPU mapping of bytes `va..va + size` (`size` > 0) is gone: the SVM ranges over those
/// pages go with it, split at the span's ends (amdkfd's MMU notifier:
/// `svm_range_cpu_invalidate_pagetables` on `MMU_NOTIFY_UNMAP` calls
/// `svm_range_unmap_from_cpu`, which removes the unmapped part of each range). The GPUs
/// reach those pages no more, and a buffer object may be allocated there again; each GPU that
/// had access to a removed piece is told through its SMI readers (`UNMAP_FROM_GPU`). Returns
/// whether any range was over the span.
pub(crate) fn cpu_unmapped(device: &Device, va: u64, size: u64) -> bool {
    let start = va / PAGE_BYTES;
    let last = va.saturating_add(size.max(1) - 1) / PAGE_BYTES;
    let mut svm = lock(&device.svm);
    if !svm.overlaps(va, size.max(1)) {
        return false;
    }
    svm.split_at(start);
    if let Some(end) = last.checked_add(1) {
        svm.split_at(end);
    }
    let gone: Vec<u64> = svm.by_start.range(start..=last).map(|(&s, _)| s).collect();
    let mut smi = lock(&device.smi);
    for s in gone {
        if let Some(r) = svm.by_start.remove(&s) {
            // svm_range_unmap_from_gpus: each GPU with access (or access in place) hears of
            // the unmap, trigger KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU.
            let mut gpus = r.access.clone();
            gpus.extend(r.access_in_place.iter().filter(|g| !r.access.contains(g)));
            for g in gpus {
                smi.unmap_from_gpu(
                    g,
                    s,
                    r.last,
                    super::smi::KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU,
                );
            }
        }
    }
    drop(smi);
    publish_windows(device, &svm);
    true
}

/// One attribute onto one range (`svm_range_apply_attrs`).
fn apply(r: &mut SvmRange, a: &SvmAttribute) {
    let remove = |v: &mut Vec<u32>, id: u32| v.retain(|&g| g != id);
    let add = |v: &mut Vec<u32>, id: u32| {
        if !v.contains(&id) {
            v.push(id);
        }
    };
    match a.type_ {
        KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => r.preferred_loc = a.value,
        KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => r.prefetch_loc = a.value,
        KFD_IOCTL_SVM_ATTR_ACCESS => {
            add(&mut r.access, a.value);
            remove(&mut r.access_in_place, a.value);
        }
        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => {
            add(&mut r.access, a.value);
            add(&mut r.access_in_place, a.value);
        }
        KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
            remove(&mut r.access, a.value);
            remove(&mut r.access_in_place, a.value);
        }
        KFD_IOCTL_SVM_ATTR_SET_FLAGS => r.flags |= a.value,
        KFD_IOCTL_SVM_ATTR_CLR_FLAGS => r.flags &= !a.value,
        KFD_IOCTL_SVM_ATTR_GRANULARITY => r.granularity = a.value.min(SVM_MAX_GRANULARITY),
        _ => {}
    }
}

/// `svm_range_get_attr` (module docs).
fn get_attr(
    device: &Arc<Device>,
    start: u64,
    last: u64,
    attrs: &mut [SvmAttribute],
) -> Result<(), Errno> {
    for a in attrs.iter() {
        match a.type_ {
            KFD_IOCTL_SVM_ATTR_ACCESS
            | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
            | KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                device.gpu_by_id(a.value)?;
            }
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC
            | KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
            | KFD_IOCTL_SVM_ATTR_SET_FLAGS
            | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
            | KFD_IOCTL_SVM_ATTR_GRANULARITY => {}
            _ => return Err(Errno::INVAL),
        }
    }
    let defaults = xnack_gpus(device);
    let svm = lock(&device.svm);
    // Ranges overlapping start..=last: the one starting before `start` too.
    let before = svm
        .by_start
        .range(..start)
        .next_back()
        .filter(|(_, r)| r.last >= start);
    let ranges: Vec<&SvmRange> = before
        .into_iter()
        .chain(svm.by_start.range(start..=last))
        .map(|(_, r)| r)
        .collect();
    let combined = match ranges.split_first() {
        None => {
            let d = default_range(last, &defaults);
            (d.clone(), d.flags, d.flags)
        }
        Some((first, rest)) => {
            let mut c = (*first).clone();
            let (mut and, mut or) = (first.flags, first.flags);
            for r in rest {
                if r.preferred_loc != c.preferred_loc {
                    c.preferred_loc = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
                }
                if r.prefetch_loc != c.prefetch_loc {
                    c.prefetch_loc = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
                }
                c.granularity = c.granularity.min(r.granularity);
                c.access.retain(|g| r.access.contains(g));
                c.access_in_place.retain(|g| r.access_in_place.contains(g));
                and &= r.flags;
                or |= r.flags;
            }
            (c, and, or)
        }
    };
    let (c, flags_and, flags_or) = combined;
    for a in attrs.iter_mut() {
        match a.type_ {
            KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => a.value = c.preferred_loc,
            KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => a.value = c.prefetch_loc,
            KFD_IOCTL_SVM_ATTR_ACCESS
            | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
            | KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                a.type_ = if c.access_in_place.contains(&a.value) {
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                } else if c.access.contains(&a.value) {
                    KFD_IOCTL_SVM_ATTR_ACCESS
                } else {
                    KFD_IOCTL_SVM_ATTR_NO_ACCESS
                };
            }
            KFD_IOCTL_SVM_ATTR_SET_FLAGS => a.value = flags_and,
            KFD_IOCTL_SVM_ATTR_CLR_FLAGS => a.value = !flags_or,
            KFD_IOCTL_SVM_ATTR_GRANULARITY => a.value = c.granularity,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::fd::{FromRawFd, OwnedFd};

    use zerocopy::IntoBytes;

    use super::super::profile::{builtin_topology, BUILTIN_GPU_ID};
    use super::super::EmulatedKfd;
    use super::*;
    use hsa_linux::topology::Topology;

    const G: u32 = BUILTIN_GPU_ID;
    const SECOND: u32 = 0x5678;
    /// The mask bits of MIGRATE_START (5) and MIGRATE_END (6).
    const MIGRATE_BITS: u64 = 0x30;
    const BASE: u64 = 0x7f00_0000_0000;

    /// The built-in topology with a second GPU (gpu_id [`SECOND`]), both in XGMI hive `hive`
    /// (0: none).
    fn two_gpus(hive: u64) -> Topology {
        let mut t = builtin_topology();
        let mut g = t.nodes[1].clone();
        g.properties.node_id = 2;
        g.properties.gpu_id = SECOND;
        g.properties.drm_render_minor += 1;
        for l in &mut g.io_links {
            l.node_from = 2;
        }
        t.nodes.push(g);
        t.nodes[1].properties.hive_id = hive;
        t.nodes[2].properties.hive_id = hive;
        t
    }

    /// One SVM request, as libhsakmt lays it out; the attributes come back as answered.
    fn svm(
        d: &EmulatedKfd,
        start: u64,
        pages: u64,
        op: u32,
        attrs: &mut [(u32, u32)],
    ) -> Result<(), Errno> {
        let head = SvmArgs {
            start_addr: start,
            size: pages * PAGE_BYTES,
            op,
            nattr: attrs.len() as u32,
        };
        let mut buf = head.as_bytes().to_vec();
        for &(t, v) in attrs.iter() {
            buf.extend_from_slice(SvmAttribute { type_: t, value: v }.as_bytes());
        }
        let r = svm_ioctl(&d.device, &mut buf);
        for (i, a) in attrs.iter_mut().enumerate() {
            let o = 24 + 8 * i;
            let got = SvmAttribute::read_from_bytes(&buf[o..o + 8]).unwrap();
            *a = (got.type_, got.value);
        }
        r
    }

    fn set(d: &EmulatedKfd, start: u64, pages: u64, attrs: &[(u32, u32)]) -> Result<(), Errno> {
        svm(
            d,
            start,
            pages,
            KFD_IOCTL_SVM_OP_SET_ATTR,
            &mut attrs.to_vec(),
        )
    }

    fn prefetch(d: &EmulatedKfd, start: u64, pages: u64, loc: u32) {
        assert_eq!(
            set(d, start, pages, &[(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, loc)]),
            Ok(())
        );
    }

    /// A reader of GPU `gpu`'s SMI events with `mask`, as `SMI_EVENTS` hands it out.
    #[allow(unsafe_code)]
    fn reader(d: &EmulatedKfd, gpu: u32, mask: u64) -> OwnedFd {
        let mut a = SmiEventsArgs {
            gpuid: gpu,
            anon_fd: 0,
        };
        super::super::smi::smi_events(&d.device, &mut a).unwrap();
        // SAFETY: SMI_EVENTS hands the caller a new descriptor it owns.
        let fd = unsafe { OwnedFd::from_raw_fd(a.anon_fd as i32) };
        assert_eq!(rustix::io::write(&fd, &mask.to_ne_bytes()), Ok(8));
        fd
    }

    /// What the reader has queued, as lines (empty when nothing: `EAGAIN`).
    fn lines(fd: &OwnedFd) -> Vec<String> {
        let mut buf = vec![0u8; 1 << 16];
        match rustix::io::read(fd, &mut buf) {
            Ok(n) => std::str::from_utf8(&buf[..n])
                .unwrap()
                .split_inclusive('\n')
                .map(str::to_owned)
                .collect(),
            Err(Errno::AGAIN) => Vec::new(),
            Err(e) => panic!("{e}"),
        }
    }

    /// A migration event line taken apart: event id, then the fields after the boot-time ns
    /// (checked positive), the pid checked to be this process's.
    fn fields(line: &str) -> (u32, String) {
        let (id, rest) = line.split_once(' ').unwrap();
        let (ns, rest) = rest.split_once(' ').unwrap();
        assert!(ns.parse::<i64>().unwrap() > 0, "{line:?}");
        let pid = format!("-{} ", std::process::id());
        let rest = rest
            .strip_prefix(pid.as_str())
            .unwrap_or_else(|| panic!("{line:?}"));
        (u32::from_str_radix(id, 16).unwrap(), rest.to_owned())
    }

    /// The pair of lines of one prefetch migration of `pages` pages from page `start`.
    fn pair(
        start: u64,
        pages: u64,
        from: u32,
        to: u32,
        prefetch: u32,
        preferred: u32,
    ) -> Vec<(u32, String)> {
        vec![
            (
                5,
                format!("@{start:x}({pages:x}) {from:x}->{to:x} {prefetch:x}:{preferred:x} 0\n"),
            ),
            (6, format!("@{start:x}({pages:x}) {from:x}->{to:x} 0 0\n")),
        ]
    }

    fn events(fd: &OwnedFd) -> Vec<(u32, String)> {
        lines(fd).iter().map(|l| fields(l)).collect()
    }

    fn actual_loc(d: &EmulatedKfd, page: u64) -> u32 {
        let svm = lock(&d.device.svm);
        let (_, r) = svm.by_start.range(..=page).next_back().unwrap();
        assert!(r.last >= page);
        r.actual_loc
    }

    /// A prefetch to a GPU moves a new range (in system memory) to its VRAM: MIGRATE_START
    /// then MIGRATE_END on that GPU, from 0 to the gpu_id, trigger PREFETCH (0), error 0. A
    /// prefetch to SYSMEM moves it back (from the gpu_id to 0), a second one finds it there
    /// and raises nothing; GET_ATTR answers the prefetch location as set. A second prefetch
    /// to the GPU that holds it raises the pair again, as amdkfd's does
    /// (`svm_range_trigger_migration` calls `svm_migrate_to_vram` whenever the best location is
    /// a GPU; `svm_migrate_vma_to_vram` raises both events though it collects no page).
    #[test]
    fn prefetch_migrates_and_raises_start_then_end() {
        let d = EmulatedKfd::new(builtin_topology()).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        let page = BASE / PAGE_BYTES;
        assert!(events(&r).is_empty());
        prefetch(&d, BASE, 3, G);
        let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
        assert_eq!(events(&r), pair(page, 3, 0, G, G, undef));
        assert_eq!(actual_loc(&d, page), G);
        prefetch(&d, BASE, 3, G);
        assert_eq!(events(&r), pair(page, 3, 0, G, G, undef));
        assert_eq!(actual_loc(&d, page), G);
        prefetch(&d, BASE, 3, KFD_IOCTL_SVM_LOCATION_SYSMEM);
        assert_eq!(events(&r), pair(page, 3, G, 0, 0, undef));
        assert_eq!(actual_loc(&d, page), 0);
        prefetch(&d, BASE, 3, KFD_IOCTL_SVM_LOCATION_SYSMEM);
        assert!(events(&r).is_empty());
        let mut get = [(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 7)];
        assert_eq!(
            svm(&d, BASE, 3, KFD_IOCTL_SVM_OP_GET_ATTR, &mut get),
            Ok(())
        );
        assert_eq!(get, [(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0)]);
    }

    /// No prefetch location (UNDEFINED, the default) moves nothing: a SET_ATTR of other
    /// attributes raises nothing, PREFERRED_LOC alone included (amdkfd migrates to the
    /// preferred location only on a GPU retry fault, which the emulated GPU does not take);
    /// PREFETCH_LOC UNDEFINED itself is `EINVAL` (`svm_range_check_attr`) and raises nothing.
    /// A reader whose mask lacks the migration bits hears nothing of a migration.
    #[test]
    fn undefined_moves_nothing_and_masks_filter() {
        let d = EmulatedKfd::new(builtin_topology()).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        let other = reader(&d, G, 1 << 10);
        assert_eq!(
            set(
                &d,
                BASE,
                2,
                &[
                    (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, G),
                    (KFD_IOCTL_SVM_ATTR_ACCESS, G)
                ]
            ),
            Ok(())
        );
        assert_eq!(
            set(
                &d,
                BASE,
                2,
                &[(
                    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
                    KFD_IOCTL_SVM_LOCATION_UNDEFINED
                )]
            ),
            Err(Errno::INVAL)
        );
        assert!(events(&r).is_empty());
        assert_eq!(actual_loc(&d, BASE / PAGE_BYTES), 0);
        prefetch(&d, BASE, 2, G);
        assert_eq!(events(&r).len(), 2);
        assert!(lines(&other).is_empty());
    }

    /// Every range SET_ATTR updates migrates to its prefetch location, not only on a
    /// PREFETCH_LOC attribute: PREFERRED_LOC alone over a range prefetched to the GPU raises
    /// the pair again (with the new preferred location); the same attribute again leaves the
    /// mapped range out of the update (`svm_range_is_same_attrs`) and raises nothing; a
    /// PREFETCH_LOC never counts as unchanged.
    #[test]
    fn any_update_of_a_prefetched_range_migrates_it() {
        let d = EmulatedKfd::new(builtin_topology()).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        let page = BASE / PAGE_BYTES;
        assert_eq!(
            set(
                &d,
                BASE,
                1,
                &[
                    (KFD_IOCTL_SVM_ATTR_ACCESS, G),
                    (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, G)
                ]
            ),
            Ok(())
        );
        let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
        assert_eq!(events(&r), pair(page, 1, 0, G, G, undef));
        let preferred = [(KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, G)];
        assert_eq!(set(&d, BASE, 1, &preferred), Ok(()));
        assert_eq!(events(&r), pair(page, 1, 0, G, G, G));
        assert_eq!(set(&d, BASE, 1, &preferred), Ok(()));
        assert!(events(&r).is_empty());
        // A prefetch is never "the same attributes": the mapped range migrates again.
        prefetch(&d, BASE, 1, G);
        assert_eq!(events(&r), pair(page, 1, 0, G, G, G));
    }

    /// The ranges a prefetch covers migrate one by one, each with its own pair, in amdkfd's
    /// update-list order: the new range after the last existing one, then the new range
    /// before that one, then that one (`svm_range_add` adds each at the list's head). Parts
    /// of a range outside the prefetch do not move.
    #[test]
    fn ranges_migrate_in_amdkfds_order() {
        let d = EmulatedKfd::new(builtin_topology()).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        let page = BASE / PAGE_BYTES;
        // One existing range, pages 1..=2, split by a prefetch of pages 0..=1: the piece
        // 1..=1 joins the list, then the new range 0..=0 before it; 0 migrates first.
        assert_eq!(
            set(
                &d,
                BASE + PAGE_BYTES,
                2,
                &[(KFD_IOCTL_SVM_ATTR_GRANULARITY, 4)]
            ),
            Ok(())
        );
        prefetch(&d, BASE, 2, G);
        let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
        let mut want = pair(page, 1, 0, G, G, undef);
        want.extend(pair(page + 1, 1, 0, G, G, undef));
        assert_eq!(events(&r), want);
        assert_eq!(actual_loc(&d, page + 2), 0);
        // Over pages 0..=4 the existing ranges 0, 1 and 2 join the list in that order, then
        // the new range 3..=4: walked in reverse.
        prefetch(&d, BASE, 5, G);
        let mut want = pair(page + 3, 2, 0, G, G, undef);
        want.extend(pair(page + 2, 1, 0, G, G, undef));
        want.extend(pair(page + 1, 1, 0, G, G, undef));
        want.extend(pair(page, 1, 0, G, G, undef));
        assert_eq!(events(&r), want);
    }

    /// With two GPUs: a prefetch to one GPU of a range the other also has access to stays in
    /// system memory unless both are in one XGMI hive; a prefetch from one GPU's VRAM to the
    /// other's goes through system memory, each half on its own GPU's readers.
    #[test]
    fn multi_gpu_prefetch_follows_the_hive_rule() {
        let d = EmulatedKfd::new(two_gpus(0)).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        let access = [
            (KFD_IOCTL_SVM_ATTR_ACCESS, G),
            (KFD_IOCTL_SVM_ATTR_ACCESS, SECOND),
        ];
        assert_eq!(set(&d, BASE, 1, &access), Ok(()));
        prefetch(&d, BASE, 1, G);
        assert!(events(&r).is_empty());
        assert_eq!(actual_loc(&d, BASE / PAGE_BYTES), 0);

        let d = EmulatedKfd::new(two_gpus(0xabc)).unwrap();
        let r1 = reader(&d, G, MIGRATE_BITS);
        let r2 = reader(&d, SECOND, MIGRATE_BITS);
        let page = BASE / PAGE_BYTES;
        assert_eq!(set(&d, BASE, 1, &access), Ok(()));
        prefetch(&d, BASE, 1, G);
        let undef = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
        assert_eq!(events(&r1), pair(page, 1, 0, G, G, undef));
        assert!(events(&r2).is_empty());
        prefetch(&d, BASE, 1, SECOND);
        assert_eq!(events(&r1), pair(page, 1, G, 0, SECOND, undef));
        assert_eq!(events(&r2), pair(page, 1, 0, SECOND, SECOND, undef));
        assert_eq!(actual_loc(&d, page), SECOND);
    }

    /// An APU (a GPU node with CPU cores) is never migrated to: its prefetch location is kept
    /// and answered, the range stays in system memory, nothing is raised.
    #[test]
    fn no_migration_to_an_apu() {
        let mut t = builtin_topology();
        t.nodes[1].properties.cpu_cores_count = 4;
        let d = EmulatedKfd::new(t).unwrap();
        let r = reader(&d, G, MIGRATE_BITS);
        prefetch(&d, BASE, 1, G);
        assert!(events(&r).is_empty());
        assert_eq!(actual_loc(&d, BASE / PAGE_BYTES), 0);
        let mut get = [(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 7)];
        assert_eq!(
            svm(&d, BASE, 1, KFD_IOCTL_SVM_OP_GET_ATTR, &mut get),
            Ok(())
        );
        assert_eq!(get, [(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, G)]);
    }
}
