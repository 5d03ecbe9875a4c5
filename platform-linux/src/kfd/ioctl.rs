//! The system calls of the Linux backend, and the only `unsafe` code of its device layer:
//!
//! - [`DevKfd`]: the real [`KfdDriver`] — `/dev/kfd` and the render nodes
//!   `/dev/dri/renderD<drm_render_minor>`, ioctl through `rustix::ioctl`, mmap through
//!   `rustix::mm`.
//! - [`VaSpace`]: the process's reserved GPU/CPU virtual address range (an anonymous
//!   `PROT_NONE` mapping) carved into chunks, each backed by anonymous host memory or by a
//!   driver mapping; the checked host stores (zeroing, headers) go through it so that no
//!   store reaches memory the backend does not own, and driver mappings at an address
//!   ([`VaSpace::map_from_driver`]) land only on ranges it owns.
//! - [`OwnedMapping`]: a driver mapping of the space that the value owns (nobody can release
//!   or remap it while it lives), so its words take atomic stores without a lock: the
//!   doorbell pages, rung once per packet batch.
//!
//! The typed, safe way to issue an ioctl is [`super::calls`].
//!
//! Ref: linux `include/uapi/linux/kfd_ioctl.h`; `mmap(2)`; ROCT-Thunk-Interface `fmm.c`
//! (one reserved SVM range carved into GPU allocations at the same CPU address).
#![allow(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hsa_core::{error, Error, Status};
use rustix::io::Errno;
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use rustix::mm::{Advice, MapFlags, MprotectFlags, ProtFlags};

use super::driver::{KfdDriver, MapTarget};
use crate::device::va::FreeList;
use crate::topology::Topology;

/// The calls on the device files (`/dev/kfd`, render nodes, dma-bufs) through the C
/// library rather than rustix's direct system calls, as libhsakmt makes them: a process-level
/// interposer of `open`/`ioctl`/`mmap` (kfd-emu's `LD_PRELOAD` library, which serves an
/// emulated `/dev/kfd` that exists on no filesystem) then sees them, and without one they are
/// the same system calls.
mod libc_sys {
    use std::ffi::{c_void, CString};
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use rustix::io::Errno;

    use super::RawArg;

    fn last_errno() -> Errno {
        Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// `open(path, O_RDWR | O_CLOEXEC)`.
    ///
    /// # Errors
    /// `open`'s errno; `EINVAL` for a path with a NUL byte.
    pub(super) fn open_rw(path: &Path) -> Result<OwnedFd, Errno> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
        // SAFETY: `c` is a NUL-terminated path that lives across the call.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(last_errno());
        }
        // SAFETY: `fd` was just returned by open and is owned by no one else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// `ioctl(fd, opcode, buffer)`.
    ///
    /// # Safety
    /// As `rustix::ioctl::ioctl` for [`RawArg`]: the buffer is exactly the size the request
    /// encodes, and the memory its pointers name is valid for the kernel's accesses.
    pub(super) unsafe fn ioctl(fd: BorrowedFd<'_>, mut raw: RawArg<'_>) -> Result<(), Errno> {
        use rustix::ioctl::Ioctl;
        let opcode = raw.opcode() as libc::c_ulong;
        let arg = raw.as_ptr();
        // SAFETY: the caller's contract; `fd` is open for the call.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), opcode, arg) };
        if r < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }

    /// `mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED [| MAP_FIXED], fd, offset)`.
    ///
    /// # Safety
    /// With `fixed`, `[at, at + len)` is the caller's to replace.
    pub(super) unsafe fn mmap_shared_rw(
        at: *mut c_void,
        len: usize,
        fixed: bool,
        fd: BorrowedFd<'_>,
        offset: u64,
    ) -> Result<*mut c_void, Errno> {
        let mut flags = libc::MAP_SHARED;
        if fixed {
            flags |= libc::MAP_FIXED;
        }
        // The kernel takes the offset as an unsigned page offset: amdkfd's offsets carry their
        // type in bits 62-63 (`KFD_MMAP_TYPE_DOORBELL` is 3 << 62), so a doorbell's does not
        // fit a positive off_t and goes as its bits, as libhsakmt passes it.
        let offset = offset as libc::off_t;
        // SAFETY: the caller's contract for a fixed range; otherwise the kernel picks.
        let p = unsafe {
            libc::mmap(
                at,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd.as_raw_fd(),
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            Err(last_errno())
        } else {
            Ok(p)
        }
    }
}

/// Path of the amdkfd character device.
pub const KFD_PATH: &str = "/dev/kfd";

/// The argument size, bytes, encoded in an ioctl request number (`_IOC_SIZE`: bits 16..30).
pub const fn ioctl_arg_size(request: u32) -> usize {
    ((request >> 16) & 0x3fff) as usize
}

/// An ioctl argument as rustix wants it: the request number and a byte buffer of exactly the
/// size the number encodes.
struct RawArg<'a> {
    opcode: Opcode,
    arg: &'a mut [u8],
}

// SAFETY: `opcode` is an amdkfd request whose encoded argument size equals `arg.len()` (checked
// by `DevKfd::ioctl` before constructing this), so the kernel reads and writes the argument
// only within `arg`, which is exclusively borrowed for the call; memory that pointers inside
// `arg` refer to is the caller's contract (`KfdDriver::ioctl`'s `# Safety`), which
// `DevKfd::ioctl` passes on. IS_MUTATING is true: amdkfd writes results back. The output is the
// unit value; nothing is read from the returned pointer.
unsafe impl Ioctl for RawArg<'_> {
    type Output = ();
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg.as_mut_ptr().cast()
    }

    unsafe fn output_from_ptr(
        _out: IoctlOutput,
        _extract_output: *mut c_void,
    ) -> rustix::io::Result<()> {
        Ok(())
    }
}

/// The real amdkfd: `/dev/kfd` plus each GPU's render node, opened on first use.
///
/// A process opens `/dev/kfd` once, as libhsakmt does (`hsaKmtOpenKFD` keeps one descriptor
/// and counts its users): amdkfd keeps one `kfd_process` per address space however many
/// descriptors name it, with one event page for its whole life, which it refuses to replace
/// (`kfd_kmap_event_page`: "Event page is already set", `EINVAL`) and whose buffer objects
/// (the event page, which it will not free) stay in its address space until the process
/// exits. So [`DevKfd::open`] hands every caller of a process the same driver for the
/// process's whole life, and the platforms opened on it share its per-process state (the
/// address reservation and the event page): a runtime shut down and initialised again finds
/// the event page it handed amdkfd, and places nothing over the buffer objects amdkfd still
/// holds. A second descriptor, or a new one after the first closed, would hand amdkfd a second
/// event page.
///
/// Argument structs that carry user pointers (`WAIT_EVENTS.events_ptr`,
/// `MAP_MEMORY_TO_GPU.device_ids_array_ptr`, `GET_PROCESS_APERTURES_NEW`'s array, ...) are
/// passed to the kernel as they are, under [`KfdDriver::ioctl`]'s contract: the kernel's
/// `copy_{from,to}_user` stays within the lengths the argument gives and answers an unmapped
/// address with `EFAULT`. `mmap` with an address replaces whatever is mapped there
/// (`MAP_FIXED`), under [`KfdDriver::mmap`]'s contract.
#[derive(Debug)]
pub struct DevKfd {
    kfd: OwnedFd,
    /// The process that opened it: a forked child inherits the descriptor but not the amdkfd
    /// process (amdkfd refuses a child's calls on it), so the child opens its own.
    pid: u32,
    /// `gpu_id` → `drm_render_minor`, from the topologies it was opened for.
    render_minors: Mutex<HashMap<u32, i32>>,
    /// Render nodes opened so far; never closed before `self` drops (their numbers were
    /// given to ACQUIRE_VM and mappings refer to them).
    render_fds: Mutex<HashMap<u32, Arc<OwnedFd>>>,
}

/// The open device files of this process, by path: each is opened once and kept open for the
/// process's life, as amdkfd keeps its process ([`DevKfd::open_path`]).
static OPEN: Mutex<Vec<(std::path::PathBuf, Arc<DevKfd>)>> = Mutex::new(Vec::new());

impl DevKfd {
    /// The process's `/dev/kfd` (`O_RDWR | O_CLOEXEC`) for the GPUs of `topology`: the driver
    /// this process opened before when there is one (it learns `topology`'s render nodes
    /// too; it stays open for the process's life), else a new open.
    ///
    /// # Errors
    /// [`Status::Error`]: `"no AMD GPU driver: /dev/kfd missing"` when the file does not
    /// exist; `"permission denied on /dev/kfd: join the render group"` on `EACCES`/`EPERM`;
    /// `"open /dev/kfd: <errno>"` otherwise.
    pub fn open(topology: &Topology) -> Result<Arc<DevKfd>, Error> {
        DevKfd::open_path(Path::new(KFD_PATH), topology)
    }

    /// As [`DevKfd::open`] with another path for the device file (messages name `path`); one
    /// driver per path for the process's life.
    ///
    /// # Errors
    /// As [`DevKfd::open`].
    pub fn open_path(path: &Path, topology: &Topology) -> Result<Arc<DevKfd>, Error> {
        let minors = topology
            .nodes
            .iter()
            .filter(|n| n.properties.gpu_id != 0)
            .map(|n| (n.properties.gpu_id, n.properties.drm_render_minor));
        let mut open = lock(&OPEN);
        let pid = std::process::id();
        // A forked child's copy of its parent's driver is of no use to it (libhsakmt reopens
        // in a forked child likewise).
        open.retain(|(_, d)| d.pid == pid);
        if let Some((_, kfd)) = open.iter().find(|(p, _)| p == path) {
            lock(&kfd.render_minors).extend(minors);
            return Ok(kfd.clone());
        }
        let shown = path.display();
        let kfd = libc_sys::open_rw(path).map_err(|e| match e {
            Errno::NOENT | Errno::NODEV | Errno::NXIO => {
                error!(Status::Error, "no AMD GPU driver: {shown} missing")
            }
            Errno::ACCESS | Errno::PERM => error!(
                Status::Error,
                "permission denied on {shown}: join the render group"
            ),
            e => error!(Status::Error, "open {shown}: {e}"),
        })?;
        let kfd = Arc::new(DevKfd {
            kfd,
            pid,
            render_minors: Mutex::new(minors.collect()),
            render_fds: Mutex::new(HashMap::new()),
        });
        open.push((path.to_path_buf(), kfd.clone()));
        Ok(kfd)
    }

    /// The render node of `gpu_id`, opened on first use.
    fn render_fd(&self, gpu_id: u32) -> Result<Arc<OwnedFd>, Errno> {
        let mut fds = lock(&self.render_fds);
        if let Some(fd) = fds.get(&gpu_id) {
            return Ok(fd.clone());
        }
        let minor = *lock(&self.render_minors).get(&gpu_id).ok_or(Errno::NODEV)?;
        if minor <= 0 {
            return Err(Errno::NODEV);
        }
        let path = format!("/dev/dri/renderD{minor}");
        let fd = Arc::new(libc_sys::open_rw(Path::new(&path))?);
        fds.insert(gpu_id, fd.clone());
        Ok(fd)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl KfdDriver for DevKfd {
    fn name(&self) -> &str {
        "kfd"
    }

    /// `ioctl(2)` on `/dev/kfd`, retried on `EINTR` and `EAGAIN` as libhsakmt's `kmtIoctl`
    /// does.
    ///
    /// # Safety
    /// As [`KfdDriver::ioctl`]: the kernel dereferences the argument's pointers.
    #[allow(clippy::unnecessary_cast)] // Opcode is u32 or c_ulong depending on the backend
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if arg.len() != ioctl_arg_size(request) {
            return Err(Errno::INVAL);
        }
        loop {
            let raw = RawArg {
                opcode: request as Opcode,
                arg: &mut *arg,
            };
            // SAFETY: `raw` satisfies the `Ioctl` contract (see its impl): the buffer is exactly
            // the size the request encodes and exclusively borrowed; `self.kfd` is an open file;
            // the memory the argument's pointers name is valid as this function's caller
            // guarantees (KfdDriver::ioctl's `# Safety`), and the kernel's copies stay within
            // the lengths the argument gives.
            match unsafe { libc_sys::ioctl(self.kfd.as_fd(), raw) } {
                // libhsakmt's kmtIoctl retries these: a signal or a transient eviction.
                Err(Errno::INTR) | Err(Errno::AGAIN) => continue,
                r => return r,
            }
        }
    }

    /// `mmap(2)` of `/dev/kfd`, the GPU's render node or a dma-buf, `MAP_SHARED` (`| MAP_FIXED`
    /// at `addr`).
    ///
    /// # Safety
    /// As [`KfdDriver::mmap`].
    unsafe fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno> {
        if len == 0 || len % rustix::param::page_size() != 0 {
            return Err(Errno::INVAL);
        }
        let render;
        let fd = match target {
            MapTarget::Kfd => self.kfd.as_fd(),
            MapTarget::RenderNode(gpu_id) => {
                render = self.render_fd(gpu_id)?;
                render.as_fd()
            }
            // SAFETY: the descriptor is open in this process for the call (KfdDriver::mmap's
            // `# Safety`); the borrow ends with the call.
            MapTarget::DmaBuf(fd) if fd >= 0 => unsafe { BorrowedFd::borrow_raw(fd) },
            MapTarget::DmaBuf(_) => return Err(Errno::BADF),
        };
        let at = addr.map_or(ptr::null_mut(), |a| a.as_ptr().cast::<c_void>());
        // SAFETY: with `addr` the caller owns `[addr, addr + len)` and nothing else uses it
        // (KfdDriver::mmap's `# Safety`), so replacing its mapping invalidates nothing; without
        // `addr` the kernel picks unused addresses.
        let p = unsafe { libc_sys::mmap_shared_rw(at, len, addr.is_some(), fd, offset)? };
        NonNull::new(p.cast::<u8>()).ok_or(Errno::INVAL)
    }

    fn render_node_fd(&self, gpu_id: u32) -> Result<i32, Errno> {
        Ok(self.render_fd(gpu_id)?.as_raw_fd())
    }

    /// `ioctl(2)` on the GPU's render node, retried on `EINTR` and `EAGAIN` as libdrm's
    /// `drmIoctl` does.
    ///
    /// # Safety
    /// As [`KfdDriver::render_ioctl`]: the requests carry no pointer.
    #[allow(clippy::unnecessary_cast)] // Opcode is u32 or c_ulong depending on the backend
    unsafe fn render_ioctl(&self, gpu_id: u32, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if arg.len() != ioctl_arg_size(request) {
            return Err(Errno::INVAL);
        }
        let render = self.render_fd(gpu_id)?;
        loop {
            let raw = RawArg {
                opcode: request as Opcode,
                arg: &mut *arg,
            };
            // SAFETY: `raw` satisfies the `Ioctl` contract: the buffer is exactly the size the
            // request encodes and exclusively borrowed; `render` is an open render node; the
            // requests allowed here carry no pointer (KfdDriver::render_ioctl's `# Safety`).
            match unsafe { libc_sys::ioctl(render.as_fd(), raw) } {
                Err(Errno::INTR) | Err(Errno::AGAIN) => continue,
                r => return r,
            }
        }
    }
}

/// What backs a carved range of a [`VaSpace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Still the `PROT_NONE` reservation: no host access.
    Reserved,
    /// Anonymous private read-write host memory (zeroed by the kernel).
    Host,
    /// A driver mapping (`/dev/kfd` page or render-node buffer object), read-write.
    Driver,
    /// A reservation of the virtual-memory API: `PROT_NONE` except where its owner mapped
    /// parts of it ([`VaSpace::map_within`]); no store of this space reaches it.
    Partitioned,
}

/// One carved range.
#[derive(Clone, Copy, Debug)]
struct Carved {
    len: u64,
    backing: Backing,
    /// Its mapping is being replaced (by `back_with_host_memory` or `map_from_driver`, outside
    /// the lock): no store reaches it and it cannot be released or remapped until that ends.
    busy: bool,
    /// An [`OwnedMapping`] owns it: only that value's drop releases it.
    owned: bool,
}

#[derive(Debug)]
struct VaInner {
    free: FreeList,
    /// Carved ranges by start.
    live: BTreeMap<u64, Carved>,
}

/// The process's reserved address range: one anonymous `PROT_NONE`, `MAP_NORESERVE` mapping
/// carved into page-aligned ranges. A carved range has the same address for the host and the
/// GPUs (amdkfd SVM), starts out inaccessible, and is then backed by host memory or a driver
/// mapping; releasing it restores the reservation. Dropping the space unmaps everything.
#[derive(Debug)]
pub struct VaSpace {
    base: u64,
    len: u64,
    page: u64,
    inner: Mutex<VaInner>,
}

impl VaSpace {
    /// Reserves `len_bytes` (rounded up to pages) of address space, inaccessible and
    /// uncommitted.
    ///
    /// # Errors
    /// The errno of `mmap` (`ENOMEM` when the address space is exhausted).
    pub fn reserve(len_bytes: u64) -> Result<VaSpace, Errno> {
        let page = rustix::param::page_size() as u64;
        let len = len_bytes.div_ceil(page) * page;
        let len_usize = usize::try_from(len).map_err(|_| Errno::NOMEM)?;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks replaces nothing.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                ptr::null_mut(),
                len_usize,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )?
        };
        let base = p as u64;
        Ok(VaSpace {
            base,
            len,
            page,
            inner: Mutex::new(VaInner {
                free: FreeList::new(base, len),
                live: BTreeMap::new(),
            }),
        })
    }

    /// First address of the reservation.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size of the reservation, bytes.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// The system page size, bytes.
    pub fn page_bytes(&self) -> u64 {
        self.page
    }

    /// Free bytes left.
    pub fn free_bytes(&self) -> u64 {
        lock(&self.inner).free.free_bytes()
    }

    /// Carves `size_bytes` (a positive multiple of the page size) at a multiple of
    /// `align_bytes` (a power of two); the range is [`Backing::Reserved`]. `None` when no free
    /// range fits or the arguments are invalid.
    pub fn carve(&self, size_bytes: u64, align_bytes: u64) -> Option<u64> {
        if size_bytes == 0 || size_bytes % self.page != 0 {
            return None;
        }
        let mut inner = lock(&self.inner);
        let va = inner
            .free
            .allocate(size_bytes, align_bytes.max(self.page))?;
        inner.live.insert(
            va,
            Carved {
                len: size_bytes,
                backing: Backing::Reserved,
                busy: false,
                owned: false,
            },
        );
        Some(va)
    }

    /// Carves `size_bytes` (a positive multiple of the page size) at `hint` when that is a
    /// multiple of `align_bytes` (a power of two) and free, else wherever [`VaSpace::carve`]
    /// finds room, for the virtual-memory API: the range is [`Backing::Partitioned`], and only
    /// [`VaSpace::map_within`] and [`VaSpace::unmap_within`] change what is mapped in it.
    /// `None` when nothing fits or the arguments are invalid.
    pub fn carve_partitioned(&self, size_bytes: u64, align_bytes: u64, hint: u64) -> Option<u64> {
        if size_bytes == 0 || size_bytes % self.page != 0 || !align_bytes.is_power_of_two() {
            return None;
        }
        let align = align_bytes.max(self.page);
        let mut inner = lock(&self.inner);
        let va = if hint != 0 && hint % align == 0 && inner.free.take(hint, size_bytes) {
            hint
        } else {
            inner.free.allocate(size_bytes, align)?
        };
        inner.live.insert(
            va,
            Carved {
                len: size_bytes,
                backing: Backing::Partitioned,
                busy: false,
                owned: false,
            },
        );
        Some(va)
    }

    /// Checks that `[va, va + len)` is a page-aligned part of the partitioned range starting
    /// at `range`.
    fn within(inner: &VaInner, page: u64, range: u64, va: u64, len: u64) -> Result<(), Errno> {
        match inner.live.get(&range) {
            Some(c)
                if c.backing == Backing::Partitioned
                    && va >= range
                    && len > 0
                    && va % page == 0
                    && len % page == 0
                    && va.checked_add(len).is_some_and(|e| e <= range + c.len) =>
            {
                Ok(())
            }
            _ => Err(Errno::INVAL),
        }
    }

    /// Maps `len` bytes of `target` at `offset` over `[va, va + len)`, a part of the
    /// partitioned range starting at `range` ([`VaSpace::carve_partitioned`]), read-write or
    /// (`writable` false) read-only.
    ///
    /// The caller (the platform's virtual-memory bookkeeping) keeps the parts it mapped apart
    /// and uses none of them meanwhile: the mapping there is replaced.
    ///
    /// # Errors
    /// `EINVAL` when the part is not inside a partitioned range, or not whole pages; the
    /// driver's errno (the part is then `PROT_NONE` again); the errno of `mprotect`.
    #[allow(clippy::too_many_arguments)]
    pub fn map_within(
        &self,
        range: u64,
        va: u64,
        len: u64,
        driver: &dyn KfdDriver,
        target: MapTarget,
        offset: u64,
        writable: bool,
    ) -> Result<(), Errno> {
        let inner = lock(&self.inner);
        VaSpace::within(&inner, self.page, range, va, len)?;
        let at = NonNull::new(va as *mut u8).ok_or(Errno::INVAL)?;
        // SAFETY: `[va, va + len)` lies in a partitioned range of this reservation (checked
        // under the lock, held until the mapping is made, so the range is not released
        // meanwhile); its owner hands only parts it mapped nothing else over, and uses none
        // of them during the call (this function's contract): the space owns it and nobody
        // holds a reference into it, as KfdDriver::mmap requires for an address.
        match unsafe { driver.mmap(target, offset, len as usize, Some(at)) } {
            Ok(p) if p == at => {}
            r => {
                let _ = self.restore_reserved(va, len);
                return Err(r.err().unwrap_or(Errno::INVAL));
            }
        }
        if !writable {
            // SAFETY: the pages just mapped above, in a range the lock keeps; making them
            // read-only invalidates no Rust reference (none exists into the range).
            if let Err(e) = unsafe {
                rustix::mm::mprotect(va as *mut c_void, len as usize, MprotectFlags::READ)
            } {
                let _ = self.restore_reserved(va, len);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Puts the `PROT_NONE` reservation back over `[va, va + len)`, a part of the
    /// partitioned range starting at `range` that [`VaSpace::map_within`] mapped.
    ///
    /// # Errors
    /// `EINVAL` when the part is not inside a partitioned range, or not whole pages; the
    /// errno of `mmap`.
    pub fn unmap_within(&self, range: u64, va: u64, len: u64) -> Result<(), Errno> {
        let inner = lock(&self.inner);
        VaSpace::within(&inner, self.page, range, va, len)?;
        self.restore_reserved(va, len)
    }

    /// Length and backing of the carved range starting at `va` (while its mapping is being
    /// replaced, the backing it had before).
    pub fn range(&self, va: u64) -> Option<(u64, Backing)> {
        lock(&self.inner).live.get(&va).map(|c| (c.len, c.backing))
    }

    /// Marks the still reserved range at `va` busy for a mapping change; its length.
    fn begin_change(&self, va: u64) -> Result<u64, Errno> {
        let mut inner = lock(&self.inner);
        match inner.live.get_mut(&va) {
            Some(c) if c.backing == Backing::Reserved && !c.busy => {
                c.busy = true;
                Ok(c.len)
            }
            Some(c) if c.busy => Err(Errno::BUSY),
            _ => Err(Errno::INVAL),
        }
    }

    /// Ends the change [`VaSpace::begin_change`] began: the range is backed by `to` now.
    fn end_change(&self, va: u64, to: Backing) {
        if let Some(c) = lock(&self.inner).live.get_mut(&va) {
            c.backing = to;
            c.busy = false;
        }
    }

    /// Backs the reserved range at `va` with zeroed anonymous read-write host memory
    /// (`MAP_PRIVATE`, as libhsakmt allocates userptr memory).
    ///
    /// # Errors
    /// `EINVAL` when `va` is not a carved, still reserved range; `EBUSY` while another call
    /// is changing its mapping; the errno of `mmap`.
    pub fn back_with_host_memory(&self, va: u64) -> Result<(), Errno> {
        let len = self.begin_change(va)?;
        // SAFETY: `[va, va + len)` is a carved range of this reservation that was still
        // PROT_NONE and is now marked busy (so no other call stores to, remaps or releases it
        // until `end_change`): no reference into it exists and replacing it affects only
        // memory this space owns.
        let r = unsafe {
            rustix::mm::mmap_anonymous(
                va as *mut c_void,
                len as usize,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::FIXED,
            )
        };
        match r {
            Ok(_) => {
                self.end_change(va, Backing::Host);
                Ok(())
            }
            Err(e) => {
                self.end_change(va, Backing::Reserved);
                Err(e)
            }
        }
    }

    /// Maps `target` at `offset` over the whole reserved range at `va` through `driver`
    /// (`MAP_FIXED`).
    ///
    /// # Errors
    /// `EINVAL` when `va` is not a carved, still reserved range, or the driver mapped
    /// elsewhere; `EBUSY` while another call is changing its mapping; the driver's errno.
    pub fn map_from_driver(
        &self,
        va: u64,
        driver: &dyn KfdDriver,
        target: MapTarget,
        offset: u64,
    ) -> Result<(), Errno> {
        let len = self.begin_change(va)?;
        let Some(at) = NonNull::new(va as *mut u8) else {
            self.end_change(va, Backing::Reserved);
            return Err(Errno::INVAL);
        };
        // SAFETY: `[va, va + len)` is a carved range of this reservation that was still
        // PROT_NONE and is now marked busy, so no other call stores to, remaps or releases it
        // until `end_change`: the space owns it and nobody holds a reference into it, as
        // KfdDriver::mmap requires for an address.
        match unsafe { driver.mmap(target, offset, len as usize, Some(at)) } {
            Ok(p) if p == at => {
                self.end_change(va, Backing::Driver);
                Ok(())
            }
            r => {
                // Put the reservation back over whatever is (or is not) there.
                let _ = self.restore_reserved(va, len);
                self.end_change(va, Backing::Reserved);
                Err(r.err().unwrap_or(Errno::INVAL))
            }
        }
    }

    fn restore_reserved(&self, va: u64, len: u64) -> Result<(), Errno> {
        // SAFETY: `[va, va + len)` is a carved range of this reservation whose user has given
        // it back (release) or which was never handed out (a failed map); replacing it with
        // PROT_NONE touches nothing else.
        unsafe {
            rustix::mm::mmap_anonymous(
                va as *mut c_void,
                len as usize,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
            )
        }
        .map(|_| ())
    }

    /// The live host-accessible range containing `[addr, addr + len)`.
    fn accessible(inner: &VaInner, addr: u64, len: u64) -> bool {
        let Some((&start, c)) = inner.live.range(..=addr).next_back() else {
            return false;
        };
        c.backing != Backing::Reserved
            && c.backing != Backing::Partitioned
            && !c.busy
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= start + c.len)
    }

    /// Makes the host-accessible range at `va` read as zeros; `false` (nothing done) when
    /// `va` does not start a carved, backed range.
    ///
    /// A shared mapping of a file that can punch holes (a memfd, as the emulated device's
    /// buffer objects) is zeroed with `madvise(MADV_REMOVE)`, which frees its pages instead of
    /// touching them (madvise(2)); any other mapping (a render node's buffer object, which
    /// cannot: `ENODEV`) with plain stores.
    ///
    /// Only for a range nobody else reads or writes meanwhile: the platform zeroes a chunk
    /// before handing it out and before mapping it to a GPU. Memory the device or other
    /// threads access concurrently (rings, `amd_queue_t`, signals, doorbells) takes atomic
    /// stores ([`VaSpace::store_u64_release`]).
    pub fn zero(&self, va: u64) -> bool {
        let inner = lock(&self.inner);
        let Some(&Carved {
            len, backing, busy, ..
        }) = inner.live.get(&va)
        else {
            return false;
        };
        if backing == Backing::Reserved || backing == Backing::Partitioned || busy {
            return false;
        }
        if backing == Backing::Driver {
            // SAFETY: `[va, va + len)` is a live, page-aligned range of this space mapped
            // read-write (the lock is held, so it is not released meanwhile); MADV_REMOVE only
            // changes what it reads (zeros, as the stores below would), and nobody else uses
            // the range yet (this function's contract).
            let removed = unsafe {
                rustix::mm::madvise(va as *mut c_void, len as usize, Advice::LinuxRemove)
            };
            if removed.is_ok() {
                return true;
            }
        }
        // SAFETY: `[va, va + len)` is a live range of this space mapped read-write (backing is
        // Host or Driver); the lock is held, so it is not released meanwhile. The platform
        // zeroes a chunk before handing it out, when no other reference to it exists.
        unsafe { ptr::write_bytes(va as *mut u8, 0, len as usize) };
        true
    }

    /// Copies `bytes` to `addr` (plain stores); `false` (nothing written) unless the whole
    /// destination lies in one carved, backed range.
    ///
    /// Only for memory nobody else reads or writes meanwhile, as [`VaSpace::zero`]: the
    /// platform writes the context save area headers before CREATE_QUEUE hands the area to
    /// the command processor.
    pub fn write(&self, addr: u64, bytes: &[u8]) -> bool {
        let inner = lock(&self.inner);
        if !VaSpace::accessible(&inner, addr, bytes.len() as u64) {
            return false;
        }
        // SAFETY: the destination lies in a live read-write range of this space (checked with
        // the lock held, so it is not released meanwhile) that no Rust reference covers;
        // `copy` (memmove) keeps even an overlapping `bytes` defined.
        unsafe { ptr::copy(bytes.as_ptr(), addr as *mut u8, bytes.len()) };
        true
    }

    /// Rings a doorbell: one 64-bit atomic store of `value` to `addr` with release ordering
    /// (an 8-byte aligned address in a backed range, e.g. a doorbell page). `false` (no store)
    /// when `addr` is not such an address.
    ///
    /// Atomic because the doorbell's reader runs concurrently: the GPU's command processor,
    /// or the emulated device's, which loads it atomically. Release, because the reader
    /// reads the packets up to `value` after it sees the store (ROCR stores the doorbell with
    /// `memory_order_release`).
    pub fn store_u64_release(&self, addr: u64, value: u64) -> bool {
        if addr % 8 != 0 {
            return false;
        }
        let inner = lock(&self.inner);
        if !VaSpace::accessible(&inner, addr, 8) {
            return false;
        }
        // SAFETY: `addr` is 8-aligned (AtomicU64's alignment) inside a live read-write mapping
        // of this space (checked under the lock, so it is not released meanwhile); every
        // access to a doorbell is atomic (this store; the device's loads), so viewing it as an
        // AtomicU64 for one store races with nothing.
        let doorbell = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
        // Pairs with the processor's acquire of the doorbell: the packet's header store
        // (release, in the core) and everything before it are visible before it reads on.
        doorbell.store(value, Ordering::Release);
        true
    }

    /// One 64-bit atomic load of the word at `addr` with acquire ordering: an 8-byte aligned
    /// address in a backed range (checked under the lock, so the range is not released
    /// meanwhile). `None` (nothing read) otherwise.
    ///
    /// For words the device writes concurrently (a queue's `amd_queue_t`, its inactive
    /// signal's value), which the host reads only atomically.
    pub fn load_u64_acquire(&self, addr: u64) -> Option<u64> {
        if addr % 8 != 0 {
            return None;
        }
        let inner = lock(&self.inner);
        if !VaSpace::accessible(&inner, addr, 8) {
            return None;
        }
        // SAFETY: `addr` is 8-aligned (AtomicU64's alignment) inside a live read-write mapping
        // of this space (checked under the lock, held across the load, so it is not released
        // meanwhile); the words read this way are accessed atomically by everyone (the core,
        // the device), so viewing one as an AtomicU64 for one load races with nothing.
        let word = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
        // Pairs with the writer's release store (the packet processor's store of a queue's
        // status into its inactive signal).
        Some(word.load(Ordering::Acquire))
    }

    /// Gives the carved range at `va` back: its host or driver mapping is replaced by the
    /// `PROT_NONE` reservation and the addresses become free for the next carve.
    ///
    /// # Errors
    /// `EINVAL` when `va` is not a carved range; `EBUSY` while another call is changing its
    /// mapping or an [`OwnedMapping`] owns it; the errno of `mmap` (the range then stays
    /// carved and is never reused).
    pub fn release(&self, va: u64) -> Result<(), Errno> {
        self.release_range(va, false)
    }

    fn release_range(&self, va: u64, owner: bool) -> Result<(), Errno> {
        let mut inner = lock(&self.inner);
        let &Carved {
            len,
            backing,
            busy,
            owned,
        } = inner.live.get(&va).ok_or(Errno::INVAL)?;
        if busy || owned != owner {
            return Err(Errno::BUSY);
        }
        if backing != Backing::Reserved {
            self.restore_reserved(va, len)?;
        }
        inner.live.remove(&va);
        inner.free.free(va, len);
        Ok(())
    }
}

impl VaSpace {
    /// Carves `len_bytes` (a positive multiple of the page size) aligned to `align_bytes`,
    /// maps `target` at `offset` over it through `driver` ([`VaSpace::map_from_driver`]) and
    /// hands the range to the returned [`OwnedMapping`], which keeps the space alive and
    /// releases the range when it drops; until then [`VaSpace::release`] refuses it.
    ///
    /// # Errors
    /// `ENOMEM` when no free range fits (or the size is not a positive multiple of the page
    /// size); the errno of the mapping (the range is then released again).
    pub fn map_owned(
        self: &Arc<Self>,
        len_bytes: u64,
        align_bytes: u64,
        driver: &dyn KfdDriver,
        target: MapTarget,
        offset: u64,
    ) -> Result<OwnedMapping, Errno> {
        let va = self.carve(len_bytes, align_bytes).ok_or(Errno::NOMEM)?;
        if let Err(e) = self.map_from_driver(va, driver, target, offset) {
            let _ = self.release(va);
            return Err(e);
        }
        if let Some(c) = lock(&self.inner).live.get_mut(&va) {
            c.owned = true;
        }
        Ok(OwnedMapping {
            space: self.clone(),
            va,
            len: len_bytes,
        })
    }
}

/// A driver mapping in a [`VaSpace`] that this value owns: the range stays mapped, and nobody
/// else can release or remap it, until the value drops (which gives the range back). So its
/// words take atomic stores without a lock or a lookup: the GPU doorbell pages of
/// `/dev/kfd`, which [`crate::device::KfdDoorbell`] rings.
#[derive(Debug)]
pub struct OwnedMapping {
    space: Arc<VaSpace>,
    va: u64,
    len: u64,
}

impl OwnedMapping {
    /// First address of the mapping (the same for the host and the GPUs).
    pub fn va(&self) -> u64 {
        self.va
    }

    /// Size, bytes.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// One 64-bit atomic store of `value` with release ordering at byte `offset`: no lock.
    /// `false` (no store) unless `offset` is 8-aligned and the word lies inside the mapping.
    ///
    /// Atomic because the word's reader runs concurrently (the GPU's command processor, or
    /// the emulated device's, which loads it atomically); release because the reader reads
    /// what the caller wrote before (the packets up to a doorbell value) once it sees the
    /// store (ROCR stores its doorbells with `memory_order_release`).
    pub fn store_u64_release(&self, offset: u64, value: u64) -> bool {
        if offset % 8 != 0 || offset.checked_add(8).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: `va + offset` is 8-aligned (the range is page-aligned and `offset` a
        // multiple of 8; AtomicU64's alignment) and inside the driver mapping this value owns:
        // it stays mapped read-write until the value drops (`VaSpace::release` refuses it),
        // and every access to these words is atomic (this store; the device's loads), so
        // viewing the word as an AtomicU64 for one store races with nothing.
        let word = unsafe { AtomicU64::from_ptr((self.va + offset) as *mut u64) };
        // Pairs with the reader's acquire load of the word.
        word.store(value, Ordering::Release);
        true
    }
}

impl Drop for OwnedMapping {
    fn drop(&mut self) {
        // A failed release leaves the range carved (never reused), as `VaSpace::release`
        // documents.
        let _ = self.space.release_range(self.va, true);
    }
}

impl Drop for VaSpace {
    fn drop(&mut self) {
        // SAFETY: `[base, base + len)` is the reservation this space made; every mapping the
        // backend placed in it is inside it, and the space is being dropped, so nothing refers
        // to it any more.
        let _ = unsafe { rustix::mm::munmap(self.base as *mut c_void, self.len as usize) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_missing_device_names_the_cause() {
        let topo = Topology {
            generation_id: None,
            system: Default::default(),
            nodes: vec![],
        };
        let e = DevKfd::open_path(Path::new("/nonexistent/kfd"), &topo).unwrap_err();
        assert_eq!(e.detail(), "no AMD GPU driver: /nonexistent/kfd missing");
    }

    /// A process opens a device file once and keeps it, as amdkfd keeps one process per
    /// address space until it exits (two descriptors would be one amdkfd process handed two
    /// event pages); the second caller's render nodes are added to the first's; after the
    /// last user is gone the next open finds the same driver (a runtime shut down and
    /// initialised again). (`/dev/null` stands in for `/dev/kfd`: only the open is tested.)
    #[test]
    fn a_device_file_is_opened_once_per_process() {
        let gpu = |gpu_id: u32, minor: i32| crate::topology::TopologyNode {
            properties: hsa_core::platform::NodeProperties {
                gpu_id,
                simd_count: 4,
                drm_render_minor: minor,
                ..Default::default()
            },
            memory_banks: vec![],
            caches: vec![],
            io_links: vec![],
        };
        let topo = |nodes| Topology {
            generation_id: None,
            system: Default::default(),
            nodes,
        };
        let path = Path::new("/dev/null");
        let a = DevKfd::open_path(path, &topo(vec![gpu(7, 128)])).unwrap();
        let b = DevKfd::open_path(path, &topo(vec![gpu(9, 129)])).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "a second descriptor of the same device"
        );
        assert_eq!(a.kfd.as_raw_fd(), b.kfd.as_raw_fd());
        assert_eq!(*lock(&a.render_minors), HashMap::from([(7, 128), (9, 129)]));
        let fd = a.kfd.as_raw_fd();
        drop((a, b));
        let c = DevKfd::open_path(path, &topo(vec![])).unwrap();
        assert_eq!(c.kfd.as_raw_fd(), fd, "the same open after the last user");
        assert_eq!(*lock(&c.render_minors), HashMap::from([(7, 128), (9, 129)]));
    }

    /// A driver whose mmap does, while the space is changing the range's mapping, what
    /// another thread could do at that moment: release the range and store to it.
    #[derive(Default)]
    struct Meddler {
        space: std::sync::OnceLock<Arc<VaSpace>>,
        seen: Mutex<Vec<Seen>>,
    }

    /// What `release`, `store_u64_release` and `zero` answered from inside the mmap.
    type Seen = (Result<(), Errno>, bool, bool);

    impl KfdDriver for Meddler {
        fn name(&self) -> &str {
            "meddler"
        }

        unsafe fn ioctl(&self, _: u32, _: &mut [u8]) -> Result<(), Errno> {
            Err(Errno::NOTTY)
        }

        unsafe fn mmap(
            &self,
            _: MapTarget,
            _: u64,
            len: usize,
            addr: Option<NonNull<u8>>,
        ) -> Result<NonNull<u8>, Errno> {
            let at = addr.ok_or(Errno::INVAL)?;
            let space = self.space.get().expect("space set");
            let va = at.as_ptr() as u64;
            let released = space.release(va);
            let stored = space.store_u64_release(va, 1);
            let zeroed = space.zero(va);
            lock(&self.seen).push((released, stored, zeroed));
            // SAFETY: the caller (VaSpace::map_from_driver) owns `[at, at + len)` and gives it
            // up for this mapping (KfdDriver::mmap's contract).
            let p = unsafe {
                rustix::mm::mmap_anonymous(
                    at.as_ptr().cast(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED | MapFlags::FIXED,
                )?
            };
            NonNull::new(p.cast()).ok_or(Errno::INVAL)
        }
    }

    #[test]
    fn a_range_being_mapped_cannot_be_released_or_written() {
        let space = Arc::new(VaSpace::reserve(16 << 20).unwrap());
        let drv = Meddler::default();
        drv.space.set(space.clone()).ok().unwrap();
        let page = space.page_bytes();
        let a = space.carve(page, page).unwrap();
        space.map_from_driver(a, &drv, MapTarget::Kfd, 0).unwrap();
        // Before the fix the range counted as Driver-backed during the mmap: release gave it
        // back (and the mapping then landed on free addresses), and stores went to PROT_NONE.
        assert_eq!(lock(&drv.seen).clone(), [(Err(Errno::BUSY), false, false)]);
        assert_eq!(space.range(a), Some((page, Backing::Driver)));
        assert!(space.store_u64_release(a, 7));
        assert_eq!(
            space.map_from_driver(a, &drv, MapTarget::Kfd, 0),
            Err(Errno::INVAL)
        );
        space.release(a).unwrap();
        assert_eq!(space.free_bytes(), space.len_bytes());
    }

    /// A driver whose buffer objects are memfd pages (as the emulated device's).
    #[derive(Default)]
    struct Memfd {
        fds: Mutex<Vec<OwnedFd>>,
    }

    impl KfdDriver for Memfd {
        fn name(&self) -> &str {
            "memfd"
        }

        unsafe fn ioctl(&self, _: u32, _: &mut [u8]) -> Result<(), Errno> {
            Err(Errno::NOTTY)
        }

        unsafe fn mmap(
            &self,
            _: MapTarget,
            _: u64,
            len: usize,
            addr: Option<NonNull<u8>>,
        ) -> Result<NonNull<u8>, Errno> {
            let at = addr.ok_or(Errno::INVAL)?;
            let fd = rustix::fs::memfd_create("bo", rustix::fs::MemfdFlags::CLOEXEC)?;
            rustix::fs::ftruncate(&fd, len as u64)?;
            // SAFETY: the caller (VaSpace::map_from_driver) owns `[at, at + len)` and gives it
            // up for this mapping (KfdDriver::mmap's contract).
            let p = unsafe {
                rustix::mm::mmap(
                    at.as_ptr().cast(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED | MapFlags::FIXED,
                    &fd,
                    0,
                )?
            };
            lock(&self.fds).push(fd);
            NonNull::new(p.cast()).ok_or(Errno::INVAL)
        }
    }

    fn resident_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * rustix::param::page_size() as u64
    }

    /// `zero` of a buffer object that can punch holes frees its pages (reads give zeros, the
    /// process's resident memory drops) instead of storing 64 MiB of zeros; host memory is
    /// zeroed with stores.
    #[test]
    fn zero_punches_holes_in_memfd_buffer_objects() {
        let space = VaSpace::reserve(256 << 20).unwrap();
        let drv = Memfd::default();
        let len = 64u64 << 20;
        let a = space.carve(len, 2 << 20).unwrap();
        space
            .map_from_driver(a, &drv, MapTarget::RenderNode(1), 0)
            .unwrap();
        let ones = vec![0xffu8; len as usize];
        assert!(space.write(a, &ones));
        let filled = resident_bytes();
        assert!(space.zero(a));
        let zeroed = resident_bytes();
        assert!(
            filled - zeroed >= 60 << 20,
            "resident {filled} before zero, {zeroed} after"
        );
        // SAFETY: `[a, a + len)` is mapped read-write and nothing else uses it.
        let view = unsafe { std::slice::from_raw_parts(a as *const u8, len as usize) };
        assert!(view.iter().all(|&b| b == 0));

        let h = space.carve(2 * space.page_bytes(), 4096).unwrap();
        space.back_with_host_memory(h).unwrap();
        assert!(space.write(h + 100, &[9; 8]));
        assert!(space.zero(h));
        // SAFETY: as above, for the host range.
        assert_eq!(unsafe { (h as *const u64).add(13).read_unaligned() }, 0);
        space.release(h).unwrap();
        space.release(a).unwrap();
    }

    #[test]
    fn va_space_backing_and_checked_stores() {
        let va = VaSpace::reserve(64 << 20).unwrap();
        let page = va.page_bytes();
        let a = va.carve(2 * page, 2 << 20).unwrap();
        assert_eq!(a % (2 << 20), 0);
        assert!(
            !va.store_u64_release(a, 1),
            "reserved range is not writable"
        );
        assert_eq!(
            va.load_u64_acquire(a),
            None,
            "reserved range is not readable"
        );
        va.back_with_host_memory(a).unwrap();
        assert_eq!(va.back_with_host_memory(a), Err(Errno::INVAL));
        assert!(va.store_u64_release(a + 8, 0xdead_beef));
        assert!(!va.store_u64_release(a + 4, 1), "unaligned");
        assert!(
            !va.store_u64_release(a + 2 * page - 4, 1),
            "crosses the end"
        );
        assert_eq!(va.load_u64_acquire(a + 8), Some(0xdead_beef));
        assert_eq!(va.load_u64_acquire(a + 4), None, "unaligned");
        assert_eq!(va.load_u64_acquire(a + 2 * page), None, "past the range");
        assert!(va.write(a + 16, &[1, 2, 3]));
        assert!(va.zero(a));
        va.release(a).unwrap();
        assert_eq!(va.release(a), Err(Errno::INVAL));
        assert_eq!(va.free_bytes(), va.len_bytes());
        assert_eq!(va.carve(100, 4096), None);
    }

    /// An owned mapping: nobody else releases it, its stores are bounded to it, and its drop
    /// gives the range back.
    #[test]
    fn an_owned_mapping_is_released_only_by_its_drop() {
        let space = Arc::new(VaSpace::reserve(16 << 20).unwrap());
        let drv = Meddler::default();
        drv.space.set(space.clone()).ok().unwrap();
        let page = space.page_bytes();
        let m = space
            .map_owned(2 * page, 2 * page, &drv, MapTarget::Kfd, 0)
            .unwrap();
        assert_eq!(m.va() % (2 * page), 0);
        assert_eq!(m.len_bytes(), 2 * page);
        assert_eq!(space.release(m.va()), Err(Errno::BUSY), "owned");
        assert!(m.store_u64_release(8, 7));
        assert!(m.store_u64_release(2 * page - 8, 9));
        assert!(!m.store_u64_release(2 * page, 1), "past the end");
        assert!(!m.store_u64_release(4, 1), "unaligned");
        assert!(!m.store_u64_release(u64::MAX - 7, 1), "overflow");
        // SAFETY: the mapping is live and the word was stored above.
        assert_eq!(unsafe { ptr::read_volatile((m.va() + 8) as *const u64) }, 7);
        drop(m);
        assert_eq!(space.free_bytes(), space.len_bytes());
        assert_eq!(
            space
                .map_owned(page + 1, page, &drv, MapTarget::Kfd, 0)
                .unwrap_err(),
            Errno::NOMEM
        );
    }
}
