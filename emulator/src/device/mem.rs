//! The emulated device's only `unsafe`: backing memory (memfd pages mapped for the device's own
//! view and at the user's addresses), raw access to regions of live allocations, and the
//! construction of the core's [`Ring`], [`RingConsumer`] and [`RawSignal`] over them.
//!
//! # The invariant everything here rests on
//! A [`Region`] is only made by this module, from
//! - a [`Backing`] this module mapped (in bounds of that mapping), or
//! - user memory (`USERPTR` allocations) whose every page lay in a readable mapping of the
//!   process (`/proc/self/maps`) when it was registered; the `KfdDriver` contract (as the kernel's page
//!   pinning) is that the caller keeps such memory mapped until `FREE_MEMORY_OF_GPU`. An
//!   application that breaks it (unmaps memory it locked while a kernel or a copy reads it)
//!   must get the GPU's answer, a memory fault, not a crash: such a region is marked `user`,
//!   and the `try_*` accesses the GPU's engines use (a kernel's loads, stores and atomics,
//!   SDMA and PM4 accesses) reach it through [`super::guarded`], which reports an unmapped
//!   page as a fault. Queue rings, `amd_queue_t`, signals and the event page are the
//!   runtime's, mapped for the queue's or the process's life, and are accessed directly.
//!
//! The owner of a region's allocation (the allocation table in `super`) keeps the memory alive
//! while anyone uses the region: device access happens under the table's read lock, and
//! memory behind a live queue or the event page cannot be freed (`EBUSY`). Device and host may
//! access the same bytes concurrently, as GPU and CPU do on hardware; shared words used for
//! synchronisation (signals, indices, mailboxes, headers) are only touched atomically.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hsa_core::abi::queue::AmdQueue;
use hsa_core::abi::signal::AmdSignal;
use hsa_core::packet_processor::RingConsumer;
use hsa_core::queue::ring::Ring;
use hsa_core::signal::raw::RawSignal;
use rustix::fs::{MemfdFlags, OFlags};
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};
use zerocopy::{FromBytes, IntoBytes};

/// Page size the emulation uses for rounding and alignment checks, bytes.
pub(crate) const PAGE_BYTES: u64 = 4096;

/// Zeroed, shareable backing memory: a memfd of `len` bytes, mapped once for the device's own
/// view. [`Backing::map_at`] maps the same pages again where the user asks (what mmap of a
/// render-node offset or `/dev/kfd` does on hardware).
#[derive(Debug)]
pub(crate) struct Backing {
    fd: OwnedFd,
    view: NonNull<u8>,
    len: usize,
}

// SAFETY: a Backing owns its fd and its view mapping; the view is only reached through
// Regions, whose access is atomic or raw copies (no references held across threads by this
// type itself).
unsafe impl Send for Backing {}
// SAFETY: as for Send.
unsafe impl Sync for Backing {}

impl Backing {
    /// Creates `len` bytes (rounded up to whole pages) of zeroed memfd memory and maps it.
    ///
    /// # Errors
    /// `ENOMEM` for a zero or unrepresentable size; the errno of memfd_create, ftruncate or mmap.
    pub(crate) fn new(name: &str, len: u64) -> Result<Backing, Errno> {
        let len = round_up_page(len).ok_or(Errno::NOMEM)?;
        let len_usize = usize::try_from(len).map_err(|_| Errno::NOMEM)?;
        if len_usize == 0 {
            return Err(Errno::NOMEM);
        }
        let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, len)?;
        // SAFETY: a fresh shared mapping of our own memfd at an address the kernel picks: it
        // replaces nothing and aliases no Rust object.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len_usize,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )?
        };
        let view = NonNull::new(ptr.cast::<u8>()).ok_or(Errno::NOMEM)?;
        Ok(Backing {
            fd,
            view,
            len: len_usize,
        })
    }

    /// The backing of a dma-buf another device exported ([`Backing::export`]): its descriptor
    /// `raw_fd` in this process is duplicated (the device's own reference, as the kernel's
    /// `dma_buf_get`) and its pages mapped for the device's view.
    ///
    /// # Errors
    /// `EBADF` for a number that is not an open descriptor; `EINVAL` for a descriptor that is
    /// not memory an emulated device exported (amdgpu refuses a foreign dma-buf so) or whose
    /// size is not whole pages; the errno of fstat or mmap.
    pub(crate) fn import(raw_fd: u32) -> Result<Backing, Errno> {
        let (fd, _, len) = open_export(raw_fd)?;
        let len_usize = usize::try_from(len).map_err(|_| Errno::NOMEM)?;
        // SAFETY: a fresh shared mapping of our own duplicate at an address the kernel picks:
        // it replaces nothing and aliases no Rust object.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len_usize,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )?
        };
        let view = NonNull::new(ptr.cast::<u8>()).ok_or(Errno::NOMEM)?;
        Ok(Backing {
            fd,
            view,
            len: len_usize,
        })
    }

    /// What a render node set in the buffer object these pages are (its metadata, tiling
    /// flags and preferred domains), read from the memfd's [`BO_STATE_XATTR`]; the default
    /// when nothing was set.
    ///
    /// # Errors
    /// `EOPNOTSUPP` where the host's memfds take no user extended attributes (Linux before
    /// 6.6); `EINVAL` for a record this device did not write; the errno of `fgetxattr`.
    pub(crate) fn bo_state(&self) -> Result<BoState, Errno> {
        bo_state_of(&self.fd)
    }

    /// What the buffer object these pages are is ([`dmabuf_info`] of one of its
    /// descriptors).
    ///
    /// # Errors
    /// `EINVAL` for pages that are no buffer object's.
    pub(crate) fn info(&self) -> Result<DmabufInfo, Errno> {
        parse_export_name(&export_name_of(&self.fd)?, self.len as u64)
    }

    /// Stores `state` as the buffer object's ([`Backing::bo_state`]).
    ///
    /// # Errors
    /// `EINVAL` for more than 256 bytes of metadata; `EOPNOTSUPP` where the host's memfds take
    /// no user extended attributes; the errno of `fsetxattr`.
    pub(crate) fn set_bo_state(&self, state: &BoState) -> Result<(), Errno> {
        if state.data.len() > 256 {
            return Err(Errno::INVAL);
        }
        rustix::fs::fsetxattr(
            &self.fd,
            BO_STATE_XATTR,
            &state.encode(),
            rustix::fs::XattrFlags::empty(),
        )
    }

    /// A new descriptor for these pages, which the caller owns (`EXPORT_DMABUF`: what the
    /// emulated device hands out as a dma-buf).
    ///
    /// # Errors
    /// The errno of fcntl (`EMFILE`).
    pub(crate) fn export(&self) -> Result<OwnedFd, Errno> {
        rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)
    }

    /// What names these pages whichever descriptor reaches them: the memfd's device and
    /// inode numbers (the kernel's dma-buf identity, as `drm_prime_lookup_buf_handle` finds an
    /// object imported before).
    ///
    /// # Errors
    /// The errno of fstat.
    pub(crate) fn identity(&self) -> Result<(u64, u64), Errno> {
        let st = rustix::fs::fstat(&self.fd)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Size of the backing, bytes (whole pages).
    pub(crate) fn len(&self) -> u64 {
        self.len as u64
    }

    /// The region of the whole view.
    pub(crate) fn region(&self) -> Region {
        Region {
            base: self.view.as_ptr() as usize,
            len: self.len,
            user: false,
        }
    }

    /// Maps the first `len` bytes (rounded up to pages) again, shared and read-write: at exactly
    /// `addr` (`MAP_FIXED`) when given, else where the kernel picks. The mapping belongs to the
    /// caller (the user unmaps it, as with a real device file).
    ///
    /// # Errors
    /// `EINVAL` for a zero length, a length beyond the backing or a misaligned `addr`; the
    /// errno of mmap.
    ///
    /// # Safety
    /// As [`hsa_linux::kfd::driver::KfdDriver::mmap`]: with `addr`, the caller owns
    /// `[addr, addr + len)` (rounded up to pages) and nothing else uses it.
    pub(crate) unsafe fn map_at(
        &self,
        addr: Option<NonNull<u8>>,
        len: usize,
    ) -> Result<NonNull<u8>, Errno> {
        // SAFETY: this function's contract is map_fd_at's.
        unsafe { map_fd_at(self.fd.as_fd(), self.len, addr, len) }
    }
}

/// The memfd name of backing memory that may be exported ([`Backing::import`] accepts only
/// these); a buffer object's memory is named [`export_name`].
pub(crate) const EXPORT_NAME: &str = "hsa-emulated-bo";

/// The memfd name of a buffer object's memory: [`EXPORT_NAME`], then the GPU it was
/// allocated on, what `GET_DMABUF_INFO` answers of it (`KFD_IOC_ALLOC_MEM_FLAGS_VRAM` or
/// `_GTT`, `_PUBLIC`) and the amdgpu creation flags its buffer object has
/// (`AMDGPU_GEM_CREATE_*`, what `AMDGPU_GEM_OP_GET_GEM_CREATE_INFO` answers), each as hex
/// digits after a colon. The name travels with the pages into every process a dma-buf of
/// them reaches, as amdgpu finds the buffer object behind any descriptor of its dma-buf.
pub(crate) fn export_name(gpu_id: u32, dmabuf_flags: u32, gem_flags: u64) -> String {
    format!("{EXPORT_NAME}:{gpu_id:08x}:{dmabuf_flags:08x}:{gem_flags:016x}")
}

/// The extended attribute of a buffer object's memfd that holds what amdgpu keeps in the
/// buffer object itself and a render node may change: its metadata and tiling flags
/// (`AMDGPU_GEM_METADATA`) and its preferred domains (`AMDGPU_GEM_OP_SET_PLACEMENT`). On the
/// memfd, every process that reaches the pages sees the same record, as every importer of a
/// dma-buf sees the one buffer object.
const BO_STATE_XATTR: &str = "user.hsa-emu.amdgpu-bo";

/// What amdgpu keeps in a buffer object that a render node may change (see
/// [`Backing::bo_state`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BoState {
    /// `AMDGPU_TILING_*` flags (`amdgpu_bo_set_tiling_flags`).
    pub(crate) tiling_info: u64,
    /// The metadata's flags (`metadata_flags`).
    pub(crate) flags: u64,
    /// The preferred domains `SET_PLACEMENT` gave (`AMDGPU_GEM_DOMAIN_*`); 0: as created.
    pub(crate) domains: u64,
    /// The metadata (at most 256 bytes; `amdgpu_bo_set_metadata`).
    pub(crate) data: Vec<u8>,
}

impl BoState {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24 + self.data.len());
        v.extend_from_slice(&self.tiling_info.to_le_bytes());
        v.extend_from_slice(&self.flags.to_le_bytes());
        v.extend_from_slice(&self.domains.to_le_bytes());
        v.extend_from_slice(&self.data);
        v
    }

    fn decode(b: &[u8]) -> Option<BoState> {
        let word = |i: usize| {
            Some(u64::from_le_bytes(
                b.get(8 * i..8 * i + 8)?.try_into().ok()?,
            ))
        };
        Some(BoState {
            tiling_info: word(0)?,
            flags: word(1)?,
            domains: word(2)?,
            data: b.get(24..)?.to_vec(),
        })
    }
}

/// What a dma-buf descriptor of an emulated device's buffer object says of it
/// ([`dmabuf_info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DmabufInfo {
    /// Size, bytes (whole pages).
    pub(crate) size: u64,
    /// The GPU the buffer object was allocated on.
    pub(crate) gpu_id: u32,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_VRAM` or `_GTT`, with `_PUBLIC`.
    pub(crate) flags: u32,
    /// The buffer object's amdgpu creation flags (`AMDGPU_GEM_CREATE_*`).
    pub(crate) gem_flags: u64,
}

/// A duplicate of descriptor `raw_fd` (the device's own reference, as the kernel's
/// `dma_buf_get`), with its memfd name and size, when it is a dma-buf an emulated device
/// exported: `EBADF` for a number that is not an open descriptor; `EINVAL` for other files
/// (amdgpu refuses a foreign dma-buf so) or a size that is not whole pages; the errno of fstat.
fn open_export(raw_fd: u32) -> Result<(OwnedFd, String, u64), Errno> {
    // A number past i32::MAX names no descriptor.
    let raw = i32::try_from(raw_fd).map_err(|_| Errno::BADF)?;
    // SAFETY: the number is only borrowed to duplicate it (fcntl F_DUPFD_CLOEXEC), as the
    // kernel's fget takes a reference to whatever the number names; a number that names
    // nothing is EBADF, and the borrow ends here, closing nothing.
    let fd = rustix::io::fcntl_dupfd_cloexec(unsafe { BorrowedFd::borrow_raw(raw) }, 0)?;
    let name = export_name_of(&fd)?;
    let len = rustix::fs::fstat(&fd)?.st_size;
    let len = u64::try_from(len).map_err(|_| Errno::INVAL)?;
    if len == 0 || len % PAGE_BYTES != 0 {
        return Err(Errno::INVAL);
    }
    Ok((fd, name, len))
}

/// The memfd name of descriptor `fd` when it names exported memory ([`EXPORT_NAME`] first);
/// `EINVAL` for any other file.
fn export_name_of(fd: &OwnedFd) -> Result<String, Errno> {
    let link = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(fd)
    ))
    .map_err(|_| Errno::INVAL)?;
    let link = link.to_string_lossy();
    link.strip_prefix("/memfd:")
        .map(|n| n.strip_suffix(" (deleted)").unwrap_or(n))
        .filter(|n| n.starts_with(EXPORT_NAME))
        .map(str::to_owned)
        .ok_or(Errno::INVAL)
}

/// What a buffer object's memfd name ([`export_name`]) says, with its size `size` (bytes).
fn parse_export_name(name: &str, size: u64) -> Result<DmabufInfo, Errno> {
    let mut fields = name[EXPORT_NAME.len()..].split(':').skip(1);
    let mut hex = || {
        fields
            .next()
            .and_then(|f| u64::from_str_radix(f, 16).ok())
            .ok_or(Errno::INVAL)
    };
    let gpu_id = u32::try_from(hex()?).map_err(|_| Errno::INVAL)?;
    let flags = u32::try_from(hex()?).map_err(|_| Errno::INVAL)?;
    let gem_flags = hex()?;
    Ok(DmabufInfo {
        size,
        gpu_id,
        flags,
        gem_flags,
    })
}

/// The [`BoState`] of the buffer object whose memfd `fd` is ([`Backing::bo_state`]).
fn bo_state_of(fd: &OwnedFd) -> Result<BoState, Errno> {
    let mut buf = [0u8; 24 + 256];
    match rustix::fs::fgetxattr(fd, BO_STATE_XATTR, &mut buf[..]) {
        Ok(n) => BoState::decode(&buf[..n]).ok_or(Errno::INVAL),
        Err(Errno::NODATA) => Ok(BoState::default()),
        Err(e) => Err(e),
    }
}

/// [`dmabuf_info`] with the buffer object's [`BoState`] (its metadata).
///
/// # Errors
/// As [`dmabuf_info`]'s and [`Backing::bo_state`]'s.
pub(crate) fn dmabuf_info_and_state(raw_fd: u32) -> Result<(DmabufInfo, BoState), Errno> {
    let (fd, name, size) = open_export(raw_fd)?;
    Ok((parse_export_name(&name, size)?, bo_state_of(&fd)?))
}

/// What descriptor `raw_fd` names, when it is a dma-buf of an emulated device's buffer object
/// (amdgpu's `amdgpu_amdkfd_get_dmabuf_info`): its size, GPU and memory flags, read from its
/// pages' memfd name ([`export_name`]). Errors as [`Backing::import`]'s, and `EINVAL` for
/// exported memory that is no buffer object's (the name has no GPU).
#[cfg(test)]
pub(crate) fn dmabuf_info(raw_fd: u32) -> Result<DmabufInfo, Errno> {
    let (_, name, size) = open_export(raw_fd)?;
    parse_export_name(&name, size)
}

/// Maps the first `len` bytes (rounded up to pages) of `fd`, which holds `max_len` bytes, as
/// [`Backing::map_at`] does (the mmap of an imported dma-buf maps the descriptor itself).
///
/// # Errors
/// As [`Backing::map_at`].
///
/// # Safety
/// As [`Backing::map_at`].
pub(crate) unsafe fn map_fd_at(
    fd: BorrowedFd<'_>,
    max_len: usize,
    addr: Option<NonNull<u8>>,
    len: usize,
) -> Result<NonNull<u8>, Errno> {
    let len = round_up_page(len as u64).ok_or(Errno::INVAL)? as usize;
    if len == 0 || len > max_len {
        return Err(Errno::INVAL);
    }
    let (hint, flags) = match addr {
        Some(a) if (a.as_ptr() as u64) % PAGE_BYTES != 0 => return Err(Errno::INVAL),
        Some(a) => (
            a.as_ptr().cast::<c_void>(),
            MapFlags::SHARED | MapFlags::FIXED,
        ),
        None => (std::ptr::null_mut(), MapFlags::SHARED),
    };
    // SAFETY: with MAP_FIXED this replaces whatever the caller has at `addr..addr+len`,
    // which this function's contract (KfdDriver::mmap's) says the caller owns and nobody
    // uses, as with mmap(2) on the real device file. Without an address the kernel picks
    // free space. Either way no Rust object of ours is affected.
    let ptr =
        unsafe { rustix::mm::mmap(hint, len, ProtFlags::READ | ProtFlags::WRITE, flags, fd, 0)? };
    NonNull::new(ptr.cast::<u8>()).ok_or(Errno::NOMEM)
}

/// Maps a dma-buf descriptor `raw_fd` of this process (`mmap` of an imported buffer object's
/// dma-buf), as [`map_fd_at`], its whole size at most.
///
/// # Errors
/// `EBADF` for a number that names no open descriptor; as [`map_fd_at`].
///
/// # Safety
/// As [`Backing::map_at`]; and the descriptor stays open for the call.
pub(crate) unsafe fn map_dmabuf_at(
    raw_fd: i32,
    addr: Option<NonNull<u8>>,
    len: usize,
) -> Result<NonNull<u8>, Errno> {
    if raw_fd < 0 {
        return Err(Errno::BADF);
    }
    // SAFETY: open for the call (this function's contract); only borrowed.
    let fd = unsafe { BorrowedFd::borrow_raw(raw_fd) };
    let size = usize::try_from(rustix::fs::fstat(fd)?.st_size).map_err(|_| Errno::INVAL)?;
    // SAFETY: this function's contract is map_fd_at's.
    unsafe { map_fd_at(fd, size, addr, len) }
}

impl Drop for Backing {
    fn drop(&mut self) {
        // SAFETY: `view..view+len` is the mapping `new` made and nothing else unmapped it; all
        // Regions over it are dead (the owner's lifetime rules, see module docs).
        let _ = unsafe { rustix::mm::munmap(self.view.as_ptr().cast(), self.len) };
    }
}

/// `len` rounded up to whole pages; `None` on overflow.
pub(crate) fn round_up_page(len: u64) -> Option<u64> {
    len.checked_add(PAGE_BYTES - 1)
        .map(|v| v & !(PAGE_BYTES - 1))
}

/// A byte range of live device-visible memory, as the device's own (host) address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    base: usize,
    len: usize,
    /// User memory (a `USERPTR` buffer object) that its owner may unmap: the `try_*`
    /// accesses go through [`super::guarded`].
    user: bool,
}

/// A `try_*` access of a [`Region`] reached a page that is not mapped (user memory the
/// application unmapped): the offset, in the region, of the byte that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegionFault {
    /// Bytes from the region's start to the faulting byte.
    pub(crate) offset: u64,
}

/// Which side of a [`Region::try_copy_from`] faulted, and where in that region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyFault {
    /// The source: the offset in the source region.
    Source(RegionFault),
    /// The destination: the offset in the destination region.
    Destination(RegionFault),
}

impl Region {
    /// The host address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.base as u64
    }

    /// The sub-range `offset..offset + len`, or `None` when it does not fit.
    pub(crate) fn sub(&self, offset: u64, len: u64) -> Option<Region> {
        let end = offset.checked_add(len)?;
        if end > self.len as u64 {
            return None;
        }
        Some(Region {
            base: self.base + offset as usize,
            len: len as usize,
            user: self.user,
        })
    }

    /// The region's length, bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is user memory (a `USERPTR` buffer object) that its owner may unmap.
    pub(crate) fn is_user(&self) -> bool {
        self.user
    }

    /// Copies `src`'s bytes into this region (at most the shorter length), as `memmove`:
    /// the two may overlap (an SDMA copy within one buffer).
    pub(crate) fn copy_from(&self, src: &Region) {
        let n = src.len.min(self.len);
        // SAFETY: the module invariant: both ranges are live mapped memory, `n` is within
        // both; `ptr::copy` allows overlap; the destination is writable (as for write_from).
        unsafe { std::ptr::copy(src.base as *const u8, self.base as *mut u8, n) };
    }

    /// Copies the region's bytes into `out` (whose length must equal the region's).
    pub(crate) fn read_into(&self, out: &mut [u8]) {
        let n = out.len().min(self.len);
        // SAFETY: the module invariant: `base..base+len` is live mapped memory; `n <= len`;
        // `out` is a distinct Rust buffer (device memory never aliases our heap).
        unsafe { std::ptr::copy(self.base as *const u8, out.as_mut_ptr(), n) };
    }

    /// Copies `data` into the region (at most the region's length).
    pub(crate) fn write_from(&self, data: &[u8]) {
        let n = data.len().min(self.len);
        // SAFETY: as for read_into; the memory is writable (mapped read-write or user memory
        // registered as GPU-writable).
        unsafe { std::ptr::copy(data.as_ptr(), self.base as *mut u8, n) };
    }

    /// Copies the `out.len()` bytes at `offset` into `out`.
    ///
    /// # Panics
    /// When `offset..offset + out.len()` is not inside the region (a caller's bug).
    #[inline(always)]
    pub(crate) fn read_at(&self, offset: u64, out: &mut [u8]) {
        let n = out.len();
        assert!(offset
            .checked_add(n as u64)
            .is_some_and(|e| e <= self.len as u64));
        // SAFETY: the module invariant: `base..base+len` is live mapped memory, and
        // `offset..offset+n` is inside it (checked above); `out` is a distinct Rust buffer.
        unsafe {
            std::ptr::copy(
                (self.base + offset as usize) as *const u8,
                out.as_mut_ptr(),
                n,
            )
        };
    }

    /// Copies `data` to the bytes at `offset`.
    ///
    /// # Panics
    /// When `offset..offset + data.len()` is not inside the region (a caller's bug).
    #[inline(always)]
    pub(crate) fn write_at(&self, offset: u64, data: &[u8]) {
        let n = data.len();
        assert!(offset
            .checked_add(n as u64)
            .is_some_and(|e| e <= self.len as u64));
        // SAFETY: as for read_at; the memory is writable (as for write_from).
        unsafe { std::ptr::copy(data.as_ptr(), (self.base + offset as usize) as *mut u8, n) };
    }

    /// The 64-bit word at `offset` as an atomic; `None` when out of bounds or misaligned.
    pub(crate) fn atomic_u64(&self, offset: u64) -> Option<&AtomicU64> {
        let r = self.sub(offset, 8)?;
        if r.base % 8 != 0 {
            return None;
        }
        // SAFETY: in bounds, 8-aligned, live (module invariant); AtomicU64 has u64's layout
        // and shared words are only accessed atomically.
        Some(unsafe { &*(r.base as *const AtomicU64) })
    }

    /// The 32-bit word at `offset` as an atomic; `None` when out of bounds or misaligned.
    pub(crate) fn atomic_u32(&self, offset: u64) -> Option<&AtomicU32> {
        let r = self.sub(offset, 4)?;
        if r.base % 4 != 0 {
            return None;
        }
        // SAFETY: in bounds, 4-aligned, live (module invariant); AtomicU32 has u32's layout.
        // Other accesses to the word may be plain copies (device and host share memory, as on
        // hardware); atomicity holds between the atomic operations.
        Some(unsafe { &*(r.base as *const AtomicU32) })
    }

    /// The region as `count` values of `T`, mutably; `None` when it is too small or misaligned.
    /// The borrow of `self` bounds the slice's life.
    pub(crate) fn as_mut_slice<T: FromBytes + IntoBytes>(
        &mut self,
        count: usize,
    ) -> Option<&mut [T]> {
        let bytes = count.checked_mul(size_of::<T>())?;
        if bytes > self.len || self.base % align_of::<T>() != 0 {
            return None;
        }
        // SAFETY: in bounds, aligned, live (module invariant); every bit pattern is a valid T
        // (FromBytes) and any T may be stored (IntoBytes). The slice lives as long as the
        // `&mut self` borrow of this Region, which its owner keeps unique.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base as *mut T, count) })
    }

    /// The fault of a guarded access to this region at `host_address`, as an offset in it.
    fn fault(&self, f: super::guarded::UserFault) -> RegionFault {
        RegionFault {
            offset: f
                .host_address
                .saturating_sub(self.base as u64)
                .min(self.len as u64),
        }
    }

    /// [`Region::read_at`] for the GPU's engines: a user region is read through
    /// [`super::guarded`], so a page its owner unmapped is a fault, not a crash.
    ///
    /// # Errors
    /// The faulting byte, for a user region whose page is no longer mapped.
    ///
    /// # Panics
    /// As [`Region::read_at`].
    #[inline(always)]
    pub(crate) fn try_read_at(&self, offset: u64, out: &mut [u8]) -> Result<(), RegionFault> {
        if !self.user {
            self.read_at(offset, out);
            return Ok(());
        }
        let n = out.len();
        assert!(offset
            .checked_add(n as u64)
            .is_some_and(|e| e <= self.len as u64));
        // SAFETY: `offset..offset+n` is inside the registered user range (checked), which is
        // mapped or, if its owner unmapped it, not mapped at all (the guarded copy faults);
        // `out` is a distinct Rust buffer.
        unsafe {
            super::guarded::copy(
                out.as_mut_ptr(),
                (self.base + offset as usize) as *const u8,
                n,
            )
        }
        .map_err(|f| self.fault(f))
    }

    /// [`Region::write_at`] for the GPU's engines (see [`Region::try_read_at`]).
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    ///
    /// # Panics
    /// As [`Region::write_at`].
    #[inline(always)]
    pub(crate) fn try_write_at(&self, offset: u64, data: &[u8]) -> Result<(), RegionFault> {
        if !self.user {
            self.write_at(offset, data);
            return Ok(());
        }
        let n = data.len();
        assert!(offset
            .checked_add(n as u64)
            .is_some_and(|e| e <= self.len as u64));
        // SAFETY: as for try_read_at; the user registered the memory GPU-writable.
        unsafe { super::guarded::copy((self.base + offset as usize) as *mut u8, data.as_ptr(), n) }
            .map_err(|f| self.fault(f))
    }

    /// [`Region::read_into`] for the GPU's engines (see [`Region::try_read_at`]).
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_read_into(&self, out: &mut [u8]) -> Result<(), RegionFault> {
        let n = out.len().min(self.len);
        self.try_read_at(0, &mut out[..n])
    }

    /// [`Region::write_from`] for the GPU's engines (see [`Region::try_read_at`]).
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_write_from(&self, data: &[u8]) -> Result<(), RegionFault> {
        let n = data.len().min(self.len);
        self.try_write_at(0, &data[..n])
    }

    /// [`Region::copy_from`] for the GPU's engines (see [`Region::try_read_at`]): `memmove`
    /// of `src` into this region; a user side is reached through [`super::guarded`].
    ///
    /// # Errors
    /// The side and byte that faulted.
    pub(crate) fn try_copy_from(&self, src: &Region) -> Result<(), CopyFault> {
        if !self.user && !src.user {
            self.copy_from(src);
            return Ok(());
        }
        let n = src.len.min(self.len);
        let (d0, s0) = (self.base, src.base);
        if d0 < s0 + n && s0 < d0 + n {
            // Overlapping (the guarded copy runs forward): through a bounce buffer.
            let mut bounce = vec![0u8; n];
            src.try_read_at(0, &mut bounce).map_err(CopyFault::Source)?;
            return self
                .try_write_at(0, &bounce)
                .map_err(CopyFault::Destination);
        }
        // SAFETY: both ranges are live device memory or registered user memory (mapped, or
        // unmapped by its owner: the guarded copy faults); `n` is within both; they do not
        // overlap (checked).
        unsafe { super::guarded::copy(d0 as *mut u8, s0 as *const u8, n) }.map_err(|f| {
            let at = f.host_address;
            if (s0 as u64..(s0 + n) as u64).contains(&at) {
                CopyFault::Source(src.fault(f))
            } else {
                CopyFault::Destination(self.fault(f))
            }
        })
    }

    /// Compare-and-swap of the little-endian u32 at `offset` (SeqCst, as the device's
    /// atomics): the value it held, or `None` when out of bounds or not 4-aligned. A user
    /// region goes through [`super::guarded`].
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_cas_u32(
        &self,
        offset: u64,
        expected: u32,
        new: u32,
    ) -> Result<Option<u32>, RegionFault> {
        if !self.user {
            return Ok(self.atomic_u32(offset).map(|a| {
                a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                    .unwrap_or_else(|v| v)
            }));
        }
        let Some(r) = self.sub(offset, 4).filter(|r| r.base % 4 == 0) else {
            return Ok(None);
        };
        // SAFETY: in bounds of the registered range and 4-aligned (checked); mapped or, once
        // unmapped by its owner, faulting in the guarded routine.
        unsafe { super::guarded::cas32(r.base as *mut u32, expected, new) }
            .map(Some)
            .map_err(|f| self.fault(f))
    }

    /// [`Region::try_cas_u32`] for the 8-aligned u64 at `offset`.
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_cas_u64(
        &self,
        offset: u64,
        expected: u64,
        new: u64,
    ) -> Result<Option<u64>, RegionFault> {
        if !self.user {
            return Ok(self.atomic_u64(offset).map(|a| {
                a.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                    .unwrap_or_else(|v| v)
            }));
        }
        let Some(r) = self.sub(offset, 8).filter(|r| r.base % 8 == 0) else {
            return Ok(None);
        };
        // SAFETY: as for try_cas_u32, 8-aligned.
        unsafe { super::guarded::cas64(r.base as *mut u64, expected, new) }
            .map(Some)
            .map_err(|f| self.fault(f))
    }

    /// Atomically replaces the u32 at `offset` by `op(old)` (SeqCst) and returns `old`; `None`
    /// when out of bounds or misaligned. Through [`Region::try_cas_u32`].
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_rmw_u32(
        &self,
        offset: u64,
        mut op: impl FnMut(u32) -> u32,
    ) -> Result<Option<u32>, RegionFault> {
        let Some(mut old) = self.try_cas_u32(offset, 0, 0)? else {
            return Ok(None);
        };
        loop {
            match self.try_cas_u32(offset, old, op(old))? {
                Some(v) if v == old => return Ok(Some(old)),
                Some(v) => old = v,
                None => return Ok(None),
            }
        }
    }

    /// [`Region::try_rmw_u32`] for the u64 at `offset`.
    ///
    /// # Errors
    /// As [`Region::try_read_at`].
    pub(crate) fn try_rmw_u64(
        &self,
        offset: u64,
        mut op: impl FnMut(u64) -> u64,
    ) -> Result<Option<u64>, RegionFault> {
        let Some(mut old) = self.try_cas_u64(offset, 0, 0)? else {
            return Ok(None);
        };
        loop {
            match self.try_cas_u64(offset, old, op(old))? {
                Some(v) if v == old => return Ok(Some(old)),
                Some(v) => old = v,
                None => return Ok(None),
            }
        }
    }

    /// A [`RawSignal`] over this region (64 bytes, 64-aligned); `None` otherwise.
    pub(crate) fn raw_signal(&self) -> Option<RawSignal> {
        if self.len < size_of::<AmdSignal>() || self.base % 64 != 0 {
            return None;
        }
        let ptr = NonNull::new(self.base as *mut AmdSignal)?;
        // SAFETY: a live, 64-aligned amd_signal_t-sized region (module invariant); the caller
        // uses the RawSignal only while it holds the allocation table's read lock.
        Some(unsafe { RawSignal::from_ptr(ptr) })
    }
}

/// Makes the consumer of an AQL ring: `ring` holds `size_packets` 64-byte slots (64-aligned),
/// `queue` is the `amd_queue_t` (256 bytes, 64-aligned); `None` otherwise.
///
/// The queue's creator pins both allocations (they cannot be freed while the queue lives) and
/// this consumer is the only one (one processor thread per queue).
pub(crate) fn ring_consumer(
    ring: Region,
    size_packets: u32,
    queue: Region,
) -> Option<RingConsumer> {
    if !size_packets.is_power_of_two()
        || ring.len < size_packets as usize * 64
        || ring.base % 64 != 0
        || queue.len < size_of::<AmdQueue>()
        || queue.base % 64 != 0
    {
        return None;
    }
    let base = NonNull::new(ring.base as *mut u8)?;
    let q = NonNull::new(queue.base as *mut AmdQueue)?;
    // SAFETY: both regions are live and pinned for the queue's life (see above), sized and
    // aligned as Ring::new requires; slot headers and dispatch ids are accessed atomically by
    // the producer (the user) and this consumer.
    let ring = unsafe { Ring::new(base, size_packets, q) };
    // SAFETY: the emulated device makes exactly one consumer per queue.
    Some(unsafe { RingConsumer::new(ring) })
}

/// Copies to and from arbitrary user addresses the way `copy_from_user`/`copy_to_user` do:
/// through `/proc/self/mem`, so an unmapped address is an `EFAULT`, never a crash.
#[derive(Debug)]
pub(crate) struct UserMemory {
    fd: OwnedFd,
}

impl UserMemory {
    /// Opens `/proc/self/mem`.
    ///
    /// # Errors
    /// The errno of open.
    pub(crate) fn open() -> Result<UserMemory, Errno> {
        let fd = rustix::fs::open(
            "/proc/self/mem",
            OFlags::RDWR | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        Ok(UserMemory { fd })
    }

    /// Reads `out.len()` bytes at user address `addr`.
    ///
    /// # Errors
    /// `EFAULT` for a null address or when any byte is not mapped readable.
    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Errno> {
        if addr == 0
            || addr
                .checked_add(out.len() as u64)
                .is_none_or(|e| e > i64::MAX as u64)
        {
            return Err(Errno::FAULT);
        }
        let mut done = 0;
        while done < out.len() {
            match rustix::io::pread(&self.fd, &mut out[done..], addr + done as u64) {
                Ok(0) | Err(_) => return Err(Errno::FAULT),
                Ok(n) => done += n,
            }
        }
        Ok(())
    }

    /// Writes `data` at user address `addr`.
    ///
    /// # Errors
    /// `EFAULT` for a null address or when any byte is not mapped.
    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        if addr == 0
            || addr
                .checked_add(data.len() as u64)
                .is_none_or(|e| e > i64::MAX as u64)
        {
            return Err(Errno::FAULT);
        }
        let mut done = 0;
        while done < data.len() {
            match rustix::io::pwrite(&self.fd, &data[done..], addr + done as u64) {
                Ok(0) | Err(_) => return Err(Errno::FAULT),
                Ok(n) => done += n,
            }
        }
        Ok(())
    }

    /// Registers `len` bytes of user memory at `addr` (a `USERPTR` allocation) after checking
    /// that every page of it lies in a readable mapping of the process (`/proc/self/maps`),
    /// as amdkfd's registration faults every page in. The check reads no page of the range:
    /// untouched memory stays untouched (probing one byte per page through `/proc/self/mem`
    /// took 0.4 s per GiB).
    ///
    /// # Errors
    /// `EFAULT` when a page is not mapped readable, or `/proc/self/maps` cannot be read;
    /// `EINVAL` for a zero or unrepresentable size.
    pub(crate) fn user_region(&self, addr: u64, len: u64) -> Result<Region, Errno> {
        let end = addr.checked_add(len).ok_or(Errno::INVAL)?;
        if len == 0 || usize::try_from(end).is_err() {
            return Err(Errno::INVAL);
        }
        let maps = std::fs::read_to_string("/proc/self/maps").map_err(|_| Errno::FAULT)?;
        if !readable_mapped(&maps, addr & !(PAGE_BYTES - 1), end) {
            return Err(Errno::FAULT);
        }
        Ok(Region {
            base: addr as usize,
            len: len as usize,
            user: true,
        })
    }
}

/// The region of user memory `addr..addr+len` without checking that it is mapped: for an SVM
/// range the GPU was granted access to (`AMDKFD_IOC_SVM`), which amdkfd maps at the access,
/// not at the ioctl. Its `try_*` accesses go through [`super::guarded`] and fault on an
/// unmapped page as a GPU's VM fault would. `None` for a zero or unrepresentable range.
pub(crate) fn svm_region(addr: u64, len: u64) -> Option<Region> {
    let end = addr.checked_add(len)?;
    if len == 0 || usize::try_from(end).is_err() {
        return None;
    }
    Some(Region {
        base: addr as usize,
        len: len as usize,
        user: true,
    })
}

/// Whether `[start, end)` is covered, without a gap, by mappings with read permission in
/// `maps` (the text of `/proc/<pid>/maps`: one `start-end perms ...` line per mapping, in
/// address order, addresses in hex; proc(5)). A line that does not parse ends the cover.
fn readable_mapped(maps: &str, start: u64, end: u64) -> bool {
    let mut next = start;
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            return false;
        };
        let Some((a, b)) = range.split_once('-') else {
            return false;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            return false;
        };
        if b <= next {
            continue;
        }
        if a > next || !perms.starts_with('r') {
            return false;
        }
        next = b;
        if next >= end {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer object's memory carries its GPU and dma-buf flags in its memfd's name, which
    /// `dmabuf_info` reads back through any descriptor of it; memory of the export name with
    /// no fields (or unparsable ones), a size that is not whole pages or zero, and a number
    /// past `i32::MAX` are refused as amdgpu refuses what is not its dma-buf.
    #[test]
    fn dmabuf_info_reads_the_memfd_name() {
        use std::os::fd::AsRawFd;
        let b = Backing::new(&export_name(0x1234, 0x4, 0x2201), 8192).unwrap();
        let fd = b.export().unwrap();
        let want = DmabufInfo {
            size: 8192,
            gpu_id: 0x1234,
            flags: 4,
            gem_flags: 0x2201,
        };
        assert_eq!(dmabuf_info(fd.as_raw_fd() as u32), Ok(want));
        assert_eq!(b.info(), Ok(want));
        assert_eq!(
            export_name(0xabcd, 0x24, 0x200),
            "hsa-emulated-bo:0000abcd:00000024:0000000000000200"
        );
        let two = Backing::new("hsa-emulated-bo:00001234:00000004", 4096)
            .unwrap()
            .export()
            .unwrap();
        assert_eq!(
            dmabuf_info(two.as_raw_fd() as u32),
            Err(Errno::INVAL),
            "no creation flags"
        );
        let bare = Backing::new(EXPORT_NAME, 4096).unwrap().export().unwrap();
        assert_eq!(dmabuf_info(bare.as_raw_fd() as u32), Err(Errno::INVAL));
        let bad = Backing::new("hsa-emulated-bo:xyz:1", 4096)
            .unwrap()
            .export()
            .unwrap();
        assert_eq!(dmabuf_info(bad.as_raw_fd() as u32), Err(Errno::INVAL));
        for len in [0, 5000] {
            let m = rustix::fs::memfd_create(export_name(1, 4, 0).as_str(), MemfdFlags::CLOEXEC)
                .unwrap();
            rustix::fs::ftruncate(&m, len).unwrap();
            assert_eq!(
                dmabuf_info(m.as_raw_fd() as u32),
                Err(Errno::INVAL),
                "{len} bytes"
            );
        }
        assert_eq!(dmabuf_info(u32::MAX), Err(Errno::BADF));
    }

    /// The state a render node sets in a buffer object lives on its memfd: every descriptor
    /// of the pages, in any process, reads what one of them wrote; none written reads as the
    /// default; more than 256 bytes of metadata are refused.
    #[test]
    fn bo_state_is_shared_by_every_descriptor_of_the_pages() {
        use std::os::fd::AsRawFd;
        let a = Backing::new(&export_name(1, 4, 0), 4096).unwrap();
        assert_eq!(a.bo_state(), Ok(BoState::default()));
        let s = BoState {
            tiling_info: 0x1234_5678_9abc,
            flags: 7,
            domains: 2,
            data: vec![0x23, 0x09, 0x49, 0x5a],
        };
        a.set_bo_state(&s).unwrap();
        let fd = a.export().unwrap();
        let b = Backing::import(fd.as_raw_fd() as u32).unwrap();
        assert_eq!(b.bo_state(), Ok(s));
        let big = BoState {
            data: vec![0; 257],
            ..BoState::default()
        };
        assert_eq!(b.set_bo_state(&big), Err(Errno::INVAL));
    }

    #[test]
    fn backing_is_zeroed_and_shared_between_mappings() {
        let b = Backing::new("t", 5000).unwrap();
        let r = b.region();
        assert!(r.sub(8191, 1).is_some() && r.sub(8192, 1).is_none());
        let mut buf = [1u8; 16];
        r.read_into(&mut buf);
        assert_eq!(buf, [0u8; 16]);
        // SAFETY: no address: the kernel picks free space.
        let second = unsafe { b.map_at(None, 4096) }.unwrap();
        r.write_from(&[7, 8, 9]);
        let um = UserMemory::open().unwrap();
        let mut got = [0u8; 3];
        um.read(second.as_ptr() as u64, &mut got).unwrap();
        assert_eq!(got, [7, 8, 9]);
        // SAFETY: as above (and refused: beyond the backing).
        assert_eq!(unsafe { b.map_at(None, 3 * 4096) }, Err(Errno::INVAL));
    }

    #[test]
    fn user_memory_faults_instead_of_crashing() {
        let um = UserMemory::open().unwrap();
        let mut b = [0u8; 8];
        assert_eq!(um.read(0, &mut b), Err(Errno::FAULT));
        assert_eq!(um.read(8, &mut b), Err(Errno::FAULT)); // page 0 is never mapped
        let v = 0x1122_3344_5566_7788u64;
        um.read(&v as *const u64 as u64, &mut b).unwrap();
        assert_eq!(u64::from_ne_bytes(b), v);
        assert_eq!(um.user_region(16, 8), Err(Errno::FAULT));
    }

    #[test]
    fn user_regions_must_lie_in_readable_mappings() {
        let maps = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n\
                    00652000-00655000 rw-p 00052000 08:02 173521 /usr/bin/x\n\
                    00655000-00656000 ---p 00000000 00:00 0\n\
                    00656000-00700000 rw-p 00000000 00:00 0 [heap]\n";
        assert!(readable_mapped(maps, 0x40_0000, 0x45_2000));
        assert!(readable_mapped(maps, 0x40_1000, 0x40_1001));
        // A gap between 0x452000 and 0x652000.
        assert!(!readable_mapped(maps, 0x45_1000, 0x65_3000));
        assert!(readable_mapped(maps, 0x65_2000, 0x65_5000));
        // A PROT_NONE page in the middle.
        assert!(!readable_mapped(maps, 0x65_4000, 0x65_7000));
        // Past the last mapping.
        assert!(!readable_mapped(maps, 0x6f_f000, 0x70_1000));
        assert!(!readable_mapped("garbage\n", 0x40_0000, 0x40_1000));

        // The real thing: a fresh anonymous mapping is registered without touching it, a
        // PROT_NONE one is not.
        let um = UserMemory::open().unwrap();
        let len = 64 << 20;
        // SAFETY: fresh anonymous mappings at addresses the kernel picks replace nothing.
        let (rw, none) = unsafe {
            (
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::PRIVATE,
                )
                .unwrap(),
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    4096,
                    ProtFlags::empty(),
                    MapFlags::PRIVATE,
                )
                .unwrap(),
            )
        };
        let r = um.user_region(rw as u64, len as u64).unwrap();
        assert_eq!(r.len, len);
        assert_eq!(um.user_region(none as u64, 4096), Err(Errno::FAULT));
        assert_eq!(um.user_region(rw as u64, 0), Err(Errno::INVAL));
        // SAFETY: the two mappings made above; nothing refers to them any more.
        unsafe {
            rustix::mm::munmap(rw, len).unwrap();
            rustix::mm::munmap(none, 4096).unwrap();
        }
        assert_eq!(um.user_region(rw as u64, 4096), Err(Errno::FAULT));
    }

    #[test]
    fn region_bounds() {
        let b = Backing::new("t", 4096).unwrap();
        let r = b.region();
        assert!(r.sub(4090, 6).is_some());
        assert!(r.sub(4090, 7).is_none());
        assert!(r.sub(u64::MAX, 2).is_none());
        assert!(r.atomic_u64(4).is_none());
        assert!(r.atomic_u64(4088).is_some());
        assert!(r.atomic_u32(4094).is_none());
        assert!(r.atomic_u32(2).is_none());
        let w = r.atomic_u32(4092).unwrap();
        w.store(0x0102_0304, std::sync::atomic::Ordering::Relaxed);
        let mut got = [0u8; 4];
        r.sub(4092, 4).unwrap().read_into(&mut got);
        assert_eq!(u32::from_ne_bytes(got), 0x0102_0304);
        assert!(r.sub(64, 64).unwrap().raw_signal().is_some());
        assert!(r.sub(8, 64).unwrap().raw_signal().is_none());
    }
}
