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
//! Locations and prefetches are kept and answered but move nothing: the emulated device's
//! VRAM and system memory are both host memory, so migration would not change what the GPU
//! reads. Not modelled: amdkfd's check that the range lies in the process's VMAs (`EFAULT`):
//! the emulated device does not see the host's mappings at ioctl time.
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
    let defaults = xnack_gpus(device);
    let mut svm = lock(&device.svm);
    svm.split_at(start);
    if let Some(end) = last.checked_add(1) {
        svm.split_at(end);
    }
    // Fill the gaps with default ranges.
    let mut page = start;
    let covered: Vec<(u64, u64)> = svm
        .by_start
        .range(start..=last)
        .map(|(&s, r)| (s, r.last))
        .collect();
    for (s, l) in covered {
        if s > page {
            svm.by_start.insert(page, default_range(s - 1, &defaults));
        }
        page = l.saturating_add(1);
    }
    if page <= last {
        svm.by_start.insert(page, default_range(last, &defaults));
    }
    for (_, r) in svm.by_start.range_mut(start..=last) {
        for a in attrs {
            apply(r, a);
        }
    }
    publish_windows(device, &svm);
    Ok(())
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
