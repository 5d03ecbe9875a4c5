//! The private mount namespace the command runs in: the KFD sysfs topology at
//! `/sys/devices/virtual/kfd/kfd/topology`, amdgpu's `/sys/module/amdgpu`, the render nodes'
//! `ip_discovery` trees under a fixture `/sys/class/drm`, a fixture `/proc/cpuinfo`, a fixture `/sys/devices/system/node` (libhsakmt reads CPU caches there),
//! the emulated GPUs' PCI functions among the host's in `/sys/bus/pci/devices` (hwloc looks
//! a GPU up there by its bus id) and a directory of helper programs (`lsmod`).
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
/// amdgpu's module directory, where rocminfo 7 reads `initstate` and `version`.
pub const MODULE_DIR: &str = "/sys/module/amdgpu";
/// DRM's device class, where tinygrad reads `renderD<minor>/device/ip_discovery`.
pub const DRM_CLASS_DIR: &str = "/sys/class/drm";
/// PCI's device list, where hwloc (and lspci) look a GPU up by its bus id.
pub const PCI_DEVICES_DIR: &str = "/sys/bus/pci/devices";
/// The character devices by number, where libdrm goes from a descriptor's `st_rdev` to its
/// device (`/sys/dev/char/226:<minor>`).
pub const DEV_CHAR_DIR: &str = "/sys/dev/char";
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

/// Makes every mount the program can reach private to the new namespace, so that nothing
/// kfd-emu mounts propagates back to the host (a new mount namespace made by root keeps the
/// host's shared peer groups).
///
/// The usual way is one recursive change at `/`. In a root that is not a mount point (a
/// chroot into a plain directory), `/` is a directory inside a mount whose own root lies
/// outside the process's root: the kernel refuses the change there with EINVAL, and that
/// mount cannot be named at all. Then each mount visible in `/proc/self/mountinfo` (those
/// under the root) is made private instead, and the ones kfd-emu mounts into, `/proc` and
/// `/sys`, must be among them: a mount made on the unreachable one could propagate out.
fn private() -> Result<(), String> {
    let all = MountPropagationFlags::PRIVATE | MountPropagationFlags::REC;
    match mount_change("/", all) {
        Ok(()) => return Ok(()),
        Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(format!("making / private in the new namespace: {e}")),
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let points = mount_points(&text);
    for need in ["/proc", "/sys"] {
        if !points.iter().any(|p| p == need) {
            return Err(format!(
                "/ is not a mount point here (a chroot into a plain directory?) and {need} is                  not a mount of its own either, so what kfd-emu mounts there could reach the                  host: mount {need} inside the root, or bind the root on itself (mount --bind                  ROOT ROOT) before entering it"
            ));
        }
    }
    for point in &points {
        mount_change(point.as_str(), all)
            .map_err(|e| format!("making {point} private in the new namespace: {e}"))?;
    }
    Ok(())
}

/// The mount points (field 5) of a `/proc/self/mountinfo` text, octal escapes (`\040` for a
/// space) decoded; a line too short to have one is skipped.
fn mount_points(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_octal)
        .collect()
}

/// Decodes mountinfo's `\NNN` octal escapes; a malformed escape is kept as written.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')));
        match code.and_then(|c| u8::try_from(c).ok()) {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    cover(KFD_DIR)?;
    std::fs::create_dir_all(TOPOLOGY_ROOT).map_err(|e| format!("{TOPOLOGY_ROOT}: {e}"))?;
    std::fs::create_dir_all(HELPER_DIR).map_err(|e| format!("{HELPER_DIR}: {e}"))?;
    Ok(PathBuf::from(TOPOLOGY_ROOT))
}

/// Makes [`MODULE_DIR`] an empty, writable directory, the same way as
/// [`make_topology_dir`]: a tmpfs over it when the host has amdgpu loaded, else over
/// `/sys/module` with each module's directory bound back in place.
///
/// # Errors
/// The mount or directory that failed.
pub fn make_module_dir() -> Result<PathBuf, String> {
    cover(MODULE_DIR)?;
    std::fs::create_dir_all(MODULE_DIR).map_err(|e| format!("{MODULE_DIR}: {e}"))?;
    Ok(PathBuf::from(MODULE_DIR))
}

/// Makes [`DRM_CLASS_DIR`] an empty, writable directory, the same way as
/// [`make_topology_dir`] (the host's own DRM devices, if any, are hidden: the emulated GPUs'
/// render nodes take their place).
///
/// # Errors
/// The mount or directory that failed.
pub fn make_drm_class_dir() -> Result<PathBuf, String> {
    cover(DRM_CLASS_DIR)?;
    std::fs::create_dir_all(DRM_CLASS_DIR).map_err(|e| format!("{DRM_CLASS_DIR}: {e}"))?;
    Ok(PathBuf::from(DRM_CLASS_DIR))
}

/// `/sys/class/kfd`, the device class amdkfd registers its character device in.
pub const KFD_CLASS_DIR: &str = "/sys/class/kfd";

/// Makes `/sys/class/kfd/kfd` the link to the KFD device directory that amdkfd's class
/// registration makes (`../../devices/virtual/kfd/kfd`), where rocm-smi and amd-smi list
/// the topology (`/sys/class/kfd/kfd/topology/nodes`). A host's own `/sys/class/kfd` is
/// hidden; where there is none, it is made the way [`make_topology_dir`] makes its own.
/// Call after [`make_drm_class_dir`]: both may cover `/sys/class`.
///
/// # Errors
/// The mount, directory or link that failed.
pub fn make_kfd_class_link() -> Result<(), String> {
    let dir = Path::new(KFD_CLASS_DIR);
    if dir.is_dir() {
        tmpfs(KFD_CLASS_DIR)?;
    } else if std::fs::create_dir(dir).is_err() {
        cover(KFD_CLASS_DIR)?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{KFD_CLASS_DIR}: {e}"))?;
    }
    let link = dir.join("kfd");
    std::os::unix::fs::symlink("../../devices/virtual/kfd/kfd", &link)
        .map_err(|e| format!("{}: {e}", link.display()))
}

/// A writable, empty `dir` in the namespace: a tmpfs over it when it exists; else a tmpfs
/// over its parent (which must exist) with each of the parent's subdirectories bound back
/// in place, so that `dir` can then be made in the tmpfs.
fn cover(dir: &str) -> Result<(), String> {
    if Path::new(dir).is_dir() {
        return tmpfs(dir);
    }
    let parent = Path::new(dir)
        .parent()
        .and_then(Path::to_str)
        .ok_or_else(|| format!("{dir} has no parent"))?;
    // Keep a handle on the directory being covered, to bind its entries back from it.
    let old = rustix::fs::open(parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| format!("{parent}: {e}"))?;
    let entries: Vec<_> = std::fs::read_dir(parent)
        .map_err(|e| format!("{parent}: {e}"))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name())
        .collect();
    tmpfs(parent)?;
    for name in entries {
        let to = Path::new(parent).join(&name);
        std::fs::create_dir(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        let from = format!(
            "/proc/self/fd/{}/{}",
            old.as_raw_fd(),
            name.to_string_lossy()
        );
        mount_bind_recursive(from.as_str(), &to)
            .map_err(|e| format!("binding {} back: {e}", to.display()))?;
    }
    Ok(())
}

/// Makes [`PCI_DEVICES_DIR`] writable with the host's devices still listed
/// ([`relinked`]). The emulated GPUs' functions are then linked in beside the host's
/// (`sysfs::write_pci_devices`).
///
/// # Errors
/// The entry, mount or directory that failed.
pub fn make_pci_devices_dir() -> Result<PathBuf, String> {
    relinked(PCI_DEVICES_DIR)
}

/// Makes [`DEV_CHAR_DIR`] writable with the host's devices still listed ([`relinked`]); the
/// emulated GPUs' DRM nodes are then linked in as `226:<minor>` (`sysfs::write_drm_nodes`).
///
/// # Errors
/// The entry, mount or directory that failed.
pub fn make_dev_char_dir() -> Result<PathBuf, String> {
    relinked(DEV_CHAR_DIR)
}

/// A sysfs directory of links made writable with its entries kept: a tmpfs over it with each
/// entry made again (a symbolic link with the same target, which resolves as before since
/// the path is the same; a directory bound back in place). Where the directory is absent,
/// it is made the way [`make_topology_dir`] makes its own (its parent, and the parent's
/// parent if need be, covered).
fn relinked(path: &str) -> Result<PathBuf, String> {
    let dir = Path::new(path);
    if !dir.is_dir() {
        let parent = dir
            .parent()
            .and_then(Path::to_str)
            .ok_or_else(|| format!("{path} has no parent"))?;
        if !Path::new(parent).is_dir() {
            cover(parent)?;
            std::fs::create_dir_all(parent).map_err(|e| format!("{parent}: {e}"))?;
        }
        cover(path)?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{path}: {e}"))?;
        return Ok(dir.to_path_buf());
    }
    let old = rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| format!("{path}: {e}"))?;
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir)
        .map_err(|e| format!("{path}: {e}"))?
        .flatten()
    {
        let link = std::fs::read_link(e.path()).ok();
        entries.push((e.file_name(), link));
    }
    tmpfs(path)?;
    for (name, link) in entries {
        let to = dir.join(&name);
        match link {
            Some(target) => std::os::unix::fs::symlink(&target, &to)
                .map_err(|e| format!("{}: {e}", to.display()))?,
            None => {
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
    }
    Ok(dir.to_path_buf())
}

/// A `/dev/kfd` that opens read-write, for `--model`: rocminfo 7.2.4 refuses to start when
/// it cannot open `/dev/kfd` read-write, before it initialises ROCR, whose libhsakmt in model
/// mode then never opens it. An existing `/dev/kfd` gets an empty regular file bound over
/// it; otherwise `/dev` gets a tmpfs with each of its entries bound back in place (devices,
/// files and directories bound, recursively for directories; symbolic links made again) and
/// an empty `/dev/kfd` of mode 0666 beside them.
///
/// # Errors
/// The entry, mount or file that failed.
pub fn stand_in_dev_kfd() -> Result<(), String> {
    let stand_in = Path::new(HELPER_DIR).join("kfd");
    std::fs::write(&stand_in, "").map_err(|e| format!("{}: {e}", stand_in.display()))?;
    if Path::new("/dev/kfd").exists() {
        return bind_file(&stand_in, "/dev/kfd");
    }
    // Keep a handle on /dev, to bind its entries back from it once covered.
    let old = rustix::fs::open("/dev", OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| format!("/dev: {e}"))?;
    let entries: Vec<(std::ffi::OsString, std::fs::FileType)> = std::fs::read_dir("/dev")
        .map_err(|e| format!("/dev: {e}"))?
        .map(|e| {
            let e = e.map_err(|e| format!("/dev: {e}"))?;
            let t = e
                .file_type()
                .map_err(|err| format!("/dev/{}: {err}", e.file_name().to_string_lossy()))?;
            Ok((e.file_name(), t))
        })
        .collect::<Result<_, String>>()?;
    tmpfs("/dev")?;
    for (name, t) in entries {
        let to = Path::new("/dev").join(&name);
        let from = format!(
            "/proc/self/fd/{}/{}",
            old.as_raw_fd(),
            name.to_string_lossy()
        );
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            format!("re-creating {} in /dev: {what}: {e}", to.display())
        };
        if t.is_symlink() {
            let target = std::fs::read_link(&from).map_err(|e| failed("reading the link", &e))?;
            std::os::unix::fs::symlink(&target, &to).map_err(|e| failed("linking", &e))?;
            continue;
        }
        if t.is_dir() {
            std::fs::create_dir(&to).map_err(|e| failed("mkdir", &e))?;
        } else {
            std::fs::write(&to, "").map_err(|e| failed("creating", &e))?;
        }
        mount_bind_recursive(from.as_str(), &to).map_err(|e| failed("binding back", &e))?;
    }
    std::fs::write("/dev/kfd", "").map_err(|e| format!("/dev/kfd: {e}"))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions("/dev/kfd", std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("/dev/kfd: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_of_mountinfo() {
        // Lines of a chroot's mountinfo (the root itself not a mount point: no "/" line).
        let text = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
                    23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n\
                    40 23 0:40 / /mnt/a\\040b rw - tmpfs tmpfs rw\n\
                    41 23 0:41 / /mnt/bad\\09 rw - tmpfs tmpfs rw\n\
                    short line\n";
        assert_eq!(
            mount_points(text),
            ["/proc", "/sys", "/mnt/a b", "/mnt/bad\\09"]
        );
    }
}
