//! The process's emulated device and the files that stand for it.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

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

static STATE: OnceLock<Result<State, String>> = OnceLock::new();
/// Set once a device file was opened: until then no descriptor is looked up.
static ANY_OPEN: AtomicBool = AtomicBool::new(false);

/// The device, made at the first call (see the crate docs for the topology's path).
///
/// # Errors
/// The message of the topology's or the device's error, said once on stderr.
pub(crate) fn state() -> Result<&'static State, &'static str> {
    STATE
        .get_or_init(|| {
            // The emulated device logs through `log` (queue errors with their detail, at
            // error level): printed on stderr at the level of HSA_RT_LOG, as the C library
            // does; a bad value is said and the default level kept.
            if let Err(e) = hsa_linux::logger::install_stderr_logger() {
                eprintln!("kfd-emu: {}", e.detail());
            }
            let root = std::env::var_os("KFD_EMU_TOPOLOGY")
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(DEFAULT_ROOT), PathBuf::from);
            let made = Topology::read(&root)
                .map_err(|e| format!("topology {}: {}", root.display(), e.detail()))
                .and_then(|t| {
                    EmulatedKfd::new(t).map_err(|e| format!("emulated device: {}", e.detail()))
                })
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
        })
        .as_ref()
        .map_err(String::as_str)
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
    let Some(Ok(state)) = STATE.get() else {
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

/// The device, once a device file was opened.
pub(crate) fn opened() -> Option<&'static State> {
    if !ANY_OPEN.load(Ordering::Acquire) {
        return None;
    }
    state().ok()
}

/// The device and `fd`'s device file, when `fd` stands for one.
pub(crate) fn lookup(fd: std::os::fd::BorrowedFd<'_>) -> Option<(&'static State, Target)> {
    if !ANY_OPEN.load(Ordering::Acquire) {
        return None;
    }
    let s = state().ok()?;
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
