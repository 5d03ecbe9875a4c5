//! The process's emulated device and the files that stand for it.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hsa_emu::EmulatedKfd;
use hsa_linux::topology::{Topology, DEFAULT_ROOT};
use rustix::io::Errno;

use crate::trace::Tracer;

/// Which device file a descriptor stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `/dev/kfd`.
    Kfd,
    /// `/dev/dri/renderD<minor>` of the GPU `gpu_id`.
    Render {
        /// The render node's minor.
        minor: i32,
        /// The GPU's `gpu_id`.
        gpu_id: u32,
    },
}

impl Target {
    /// The device file's path, for messages and the trace.
    pub(crate) fn path(&self) -> String {
        match self {
            Target::Kfd => "/dev/kfd".to_owned(),
            Target::Render { minor, .. } => format!("/dev/dri/renderD{minor}"),
        }
    }
}

/// What a path names: a device file the library emulates, or `None` for libc.
pub(crate) enum PathKind {
    /// `/dev/kfd`.
    Kfd,
    /// `/dev/dri/renderD<minor>`.
    Render(i32),
}

/// Classifies an absolute path.
pub(crate) fn classify(path: &[u8]) -> Option<PathKind> {
    if path == b"/dev/kfd" {
        return Some(PathKind::Kfd);
    }
    let minor = path.strip_prefix(b"/dev/dri/renderD")?;
    let minor = std::str::from_utf8(minor).ok()?.parse::<i32>().ok()?;
    Some(PathKind::Render(minor))
}

/// The emulated device and the memfds standing for its files.
pub(crate) struct State {
    pub(crate) kfd: Arc<EmulatedKfd>,
    /// `(st_dev, st_ino)` of each memfd → its device file; the `OwnedFd` keeps the inode.
    files: Mutex<HashMap<(u64, u64), (Target, OwnedFd)>>,
    /// The device files' mappings, `(address, length)`, for the trace of `munmap`.
    maps: Mutex<Vec<(u64, u64)>>,
    pub(crate) tracer: Option<Tracer>,
}

/// The process's device: the state of the process that made it, by pid. A forked child
/// inherits the parent's (a copy without its engine threads, its `/proc/self/mem` the
/// parent's); its first open of a device file makes the child a device of its own, as amdkfd
/// makes a forked child that opens `/dev/kfd` a process of its own. The parent's copy is
/// leaked in the child (its threads are gone; dropping it would join them). Read without a
/// lock: the interposed calls that look it up run in signal handlers too (the SIGSYS handler
/// of `syscall_mmap`), where a lock the interrupted thread holds would never be released.
static STATE: AtomicPtr<PerProcess> = AtomicPtr::new(std::ptr::null_mut());
/// Serialises the making of a device (never taken on the lookup path).
static MAKING: Mutex<()> = Mutex::new(());
/// Set once a device file was opened: until then no descriptor is looked up.
static ANY_OPEN: AtomicBool = AtomicBool::new(false);

/// A device and the process it belongs to.
struct PerProcess {
    pid: u32,
    state: Result<State, String>,
}

/// This process's device when it made one (never makes it).
#[allow(unsafe_code)]
fn current() -> Option<&'static PerProcess> {
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: STATE holds null or a pointer from `Box::leak` in `state`, never freed and
    // never written through after it was stored (Release, paired with this Acquire), so a
    // non-null one is a valid shared reference for 'static.
    let e = unsafe { p.as_ref() }?;
    (e.pid == std::process::id()).then_some(e)
}

/// The device, made at the first call in this process (see the crate docs for the
/// topology's path, and [`STATE`] for forked children).
///
/// # Errors
/// The message of the topology's or the device's error, said once on stderr.
pub(crate) fn state() -> Result<&'static State, &'static str> {
    if let Some(e) = current() {
        return e.state.as_ref().map_err(String::as_str);
    }
    let _g = MAKING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = current() {
        return e.state.as_ref().map_err(String::as_str);
    }
    let made: &'static mut PerProcess = Box::leak(Box::new(PerProcess {
        pid: std::process::id(),
        state: make_state(),
    }));
    STATE.store(made, Ordering::Release);
    current()
        .ok_or("the device just made is not this process's")?
        .state
        .as_ref()
        .map_err(String::as_str)
}

/// A new device for this process.
fn make_state() -> Result<State, String> {
    // The emulated device logs through `log` (queue errors with their detail, at error
    // level): printed on stderr at the level of HSA_RT_LOG, as the C library does; a bad
    // value is said and the default level kept.
    if let Err(e) = hsa_linux::logger::install_stderr_logger() {
        eprintln!("kfd-emu: {}", e.detail());
    }
    let root = std::env::var_os("KFD_EMU_TOPOLOGY")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_ROOT), PathBuf::from);
    let made = Topology::read(&root)
        .map_err(|e| format!("topology {}: {}", root.display(), e.detail()))
        .and_then(|t| EmulatedKfd::new(t).map_err(|e| format!("emulated device: {}", e.detail())))
        .map(|kfd| State {
            kfd,
            files: Mutex::new(HashMap::new()),
            maps: Mutex::new(Vec::new()),
            tracer: Tracer::from_env(),
        });
    if let Err(e) = &made {
        eprintln!("kfd-emu: {e}");
    }
    made
}

impl State {
    /// Opens a memfd standing for `kind`; returns a new descriptor (close-on-exec as asked).
    pub(crate) fn open(&self, kind: PathKind, cloexec: bool) -> Result<OwnedFd, Errno> {
        let target = match kind {
            PathKind::Kfd => Target::Kfd,
            PathKind::Render(minor) => {
                let (_, gpu_id) = self.kfd.render_node(minor).ok_or(Errno::NOENT)?;
                Target::Render { minor, gpu_id }
            }
        };
        let name = format!("kfd-emu {}", target.path());
        let pin = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
        let st = rustix::fs::fstat(&pin)?;
        let fd = if cloexec {
            rustix::io::fcntl_dupfd_cloexec(&pin, 0)?
        } else {
            rustix::io::dup(&pin)?
        };
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((st.st_dev, st.st_ino), (target, pin));
        ANY_OPEN.store(true, Ordering::Release);
        crate::syscall_mmap::install();
        if let Some(t) = &self.tracer {
            t.line(&format!("open {} = {}", target.path(), raw(&fd)));
        }
        Ok(fd)
    }

    /// Records a device file's mapping (for [`State::unmapped`]).
    pub(crate) fn mapped(&self, addr: u64, len: u64) {
        self.maps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((addr, len));
    }

    /// Whether `addr..addr+len` overlaps a device file's mapping; forgets the mappings it
    /// covers whole.
    pub(crate) fn unmapped(&self, addr: u64, len: u64) -> bool {
        let end = addr.saturating_add(len);
        let mut maps = self.maps.lock().unwrap_or_else(PoisonError::into_inner);
        let hit = maps
            .iter()
            .any(|&(a, l)| a < end && addr < a.saturating_add(l));
        maps.retain(|&(a, l)| !(addr <= a && a.saturating_add(l) <= end));
        hit
    }

    /// The device file `fd` stands for, by the file it refers to.
    pub(crate) fn target_of(&self, fd: std::os::fd::BorrowedFd<'_>) -> Option<Target> {
        let st = rustix::fs::fstat(fd).ok()?;
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(st.st_dev, st.st_ino))
            .map(|(t, _)| *t)
    }
}

/// Writes the device's execution counters to the trace (the `stats` line of [`crate::trace`]),
/// when the process made the device and traces; nothing otherwise (it never makes the device).
pub(crate) fn trace_stats() {
    let Some(PerProcess {
        state: Ok(state), ..
    }) = current()
    else {
        return;
    };
    if let Some(t) = &state.tracer {
        let s = state.kfd.execution_stats();
        t.line(&format!(
            "stats interpreted_dispatches={} host_dispatches={} pm4_packets={} sdma_packets={}",
            s.interpreted_dispatches, s.host_dispatches, s.pm4_packets, s.sdma_packets
        ));
    }
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_fd().as_raw_fd()
}

/// The device, once this process opened a device file (a forked child that has not is told
/// `None`: the descriptors it inherited belong to its parent's device).
pub(crate) fn opened() -> Option<&'static State> {
    if !ANY_OPEN.load(Ordering::Acquire) {
        return None;
    }
    current()?.state.as_ref().ok()
}

/// The device and `fd`'s device file, when `fd` stands for one of this process's device
/// files. A descriptor a forked child inherited from its parent is not one: it goes to the C
/// library (amdkfd refuses a `/dev/kfd` descriptor used by another process, `EBADF`, and the
/// runtimes open the device files again after a fork).
pub(crate) fn lookup(fd: std::os::fd::BorrowedFd<'_>) -> Option<(&'static State, Target)> {
    let s = opened()?;
    Some((s, s.target_of(fd)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(matches!(classify(b"/dev/kfd"), Some(PathKind::Kfd)));
        assert!(matches!(
            classify(b"/dev/dri/renderD128"),
            Some(PathKind::Render(128))
        ));
        assert!(classify(b"/dev/dri/renderD").is_none());
        assert!(classify(b"/dev/dri/card0").is_none());
        assert!(classify(b"/dev/kfd2").is_none());
        assert!(classify(b"dev/kfd").is_none());
    }
}
