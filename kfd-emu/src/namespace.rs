//! The private mount namespace the command runs in: the KFD sysfs topology at
//! `/sys/devices/virtual/kfd/kfd/topology`, a fixture `/proc/cpuinfo`, a fixture
//! `/sys/devices/system/node` (libhsakmt reads CPU caches there) and a directory of helper
//! programs (`lsmod`).
//!
//! Root gets a new mount namespace (`unshare(CLONE_NEWNS)`); anyone else a new user
//! namespace too, in which their uid and gid map to themselves. Nothing outside the
//! namespace changes: every mount is private to it, and nothing is written outside the
//! tmpfs mounts it makes.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{mount, mount_bind_recursive, mount_change, MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;

/// Where libhsakmt reads the topology.
pub const KFD_DIR: &str = "/sys/devices/virtual/kfd";
/// The topology root inside [`KFD_DIR`].
pub const TOPOLOGY_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";
/// The directory (in the namespace's tmpfs) of helper programs and fixtures.
pub const HELPER_DIR: &str = "/sys/devices/virtual/kfd/kfd-emu";

/// Enters a new mount namespace (and user namespace when not root) with private mounts.
///
/// # Errors
/// A message that says which of root and user namespaces was tried and why each failed.
pub fn enter() -> Result<(), String> {
    let uid = rustix::process::getuid();
    let gid = rustix::process::getgid();
    let root_err = if rustix::process::geteuid().is_root() {
        match unshare(UnshareFlags::NEWNS) {
            Ok(()) => return private(),
            Err(e) => Some(e),
        }
    } else {
        None
    };
    if let Err(e) = unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) {
        let root = match root_err {
            Some(r) => format!("as root, unshare(CLONE_NEWNS) failed: {r}; "),
            None => "not root; ".to_owned(),
        };
        return Err(format!(
            "kfd-emu needs a private mount namespace to show the program a KFD topology, and \
             cannot make one: {root}unshare(CLONE_NEWUSER | CLONE_NEWNS) failed: {e} (user \
             namespaces are unavailable: see sysctl kernel.unprivileged_userns_clone, \
             user.max_user_namespaces, or the container's seccomp policy). Run as root or \
             where user namespaces are allowed."
        ));
    }
    let write =
        |path: &str, text: String| std::fs::write(path, text).map_err(|e| format!("{path}: {e}"));
    write("/proc/self/setgroups", "deny".into())?;
    write(
        "/proc/self/uid_map",
        format!("{} {} 1\n", uid.as_raw(), uid.as_raw()),
    )?;
    write(
        "/proc/self/gid_map",
        format!("{} {} 1\n", gid.as_raw(), gid.as_raw()),
    )?;
    private()
}

/// `unshare(2)` of namespaces only.
#[allow(unsafe_code)]
fn unshare(flags: UnshareFlags) -> rustix::io::Result<()> {
    // SAFETY: only namespace flags are passed (never CLONE_FILES or CLONE_FS, which could
    // invalidate descriptors or paths other code holds), and kfd-emu calls this before it
    // starts any thread (CLONE_NEWUSER requires a single-threaded process anyway).
    unsafe { rustix::thread::unshare_unsafe(flags) }
}

fn private() -> Result<(), String> {
    mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("making / private in the new namespace: {e}"))
}

fn tmpfs(at: &str) -> Result<(), String> {
    mount(
        "tmpfs",
        at,
        "tmpfs",
        MountFlags::empty(),
        Some(c"mode=0755"),
    )
    .map_err(|e| format!("mounting a tmpfs on {at}: {e}"))
}

/// Makes [`TOPOLOGY_ROOT`] an empty, writable directory: a tmpfs over
/// `/sys/devices/virtual/kfd` when the host has one (a machine with amdgpu: its topology is
/// hidden), else over `/sys/devices/virtual` with each of its entries bound back in place.
///
/// # Errors
/// The mount or directory that failed.
pub fn make_topology_dir() -> Result<PathBuf, String> {
    let virt = "/sys/devices/virtual";
    if Path::new(KFD_DIR).is_dir() {
        tmpfs(KFD_DIR)?;
    } else {
        // Keep a handle on the directory being covered, to bind its entries back from it.
        let old = rustix::fs::open(virt, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .map_err(|e| format!("{virt}: {e}"))?;
        let entries: Vec<_> = std::fs::read_dir(virt)
            .map_err(|e| format!("{virt}: {e}"))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name())
            .collect();
        tmpfs(virt)?;
        for name in entries {
            let to = Path::new(virt).join(&name);
            std::fs::create_dir(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            let from = format!(
                "/proc/self/fd/{}/{}",
                old.as_raw_fd(),
                name.to_string_lossy()
            );
            mount_bind_recursive(from.as_str(), &to)
                .map_err(|e| format!("binding {} back: {e}", to.display()))?;
        }
    }
    std::fs::create_dir_all(TOPOLOGY_ROOT).map_err(|e| format!("{TOPOLOGY_ROOT}: {e}"))?;
    std::fs::create_dir_all(HELPER_DIR).map_err(|e| format!("{HELPER_DIR}: {e}"))?;
    Ok(PathBuf::from(TOPOLOGY_ROOT))
}

/// Binds `file` over `target` (a fixture over a host file).
///
/// # Errors
/// The mount that failed.
pub fn bind_file(file: &Path, target: &str) -> Result<(), String> {
    rustix::mount::mount_bind(file, target)
        .map_err(|e| format!("binding {} over {target}: {e}", file.display()))
}

/// An empty tmpfs over `dir` when it exists (nothing when it does not); whether it did.
///
/// # Errors
/// The mount that failed.
pub fn hide_dir(dir: &str) -> Result<bool, String> {
    if Path::new(dir).is_dir() {
        tmpfs(dir)?;
        return Ok(true);
    }
    Ok(false)
}
