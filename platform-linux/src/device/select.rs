//! Which device backs the platform: `/dev/kfd` or the emulated device.
//!
//! `HSA_RT_DEVICE=kfd|emulated` forces one; otherwise `/dev/kfd` when it exists, else the
//! emulated device, announced once on stderr. `HSA_RT_SYSFS=DIR` gives the emulated device a
//! captured KFD topology instead of its built-in profile. `HSA_XNACK=0|1` sets the process's
//! XNACK mode on either.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hsa_core::{bail, Error, Status};

use super::LinuxPlatform;
use crate::kfd::driver::KfdDriver;
use crate::kfd::ioctl::{DevKfd, KFD_PATH};
use crate::topology::Topology;

/// Environment variable forcing the device: `kfd` or `emulated`.
pub const DEVICE_ENV: &str = "HSA_RT_DEVICE";
/// Environment variable naming a captured topology root for the emulated device.
pub const SYSFS_ENV: &str = "HSA_RT_SYSFS";
/// Environment variable asking for the process's XNACK mode, as ROCR reads it: `1` on, `0`
/// off; unset leaves the kernel's default.
pub const XNACK_ENV: &str = "HSA_XNACK";

/// The XNACK mode a value of `HSA_XNACK` asks for: `Some(true)` for `1`, `Some(false)` for
/// `0`, `None` when unset.
///
/// # Errors
/// [`Status::InvalidArgument`] `"HSA_XNACK value 'x': expected '0' or '1'"` for any other
/// value.
pub fn xnack_request(value: Option<&str>) -> Result<Option<bool>, Error> {
    match value.map(str::trim) {
        None => Ok(None),
        Some("1") => Ok(Some(true)),
        Some("0") => Ok(Some(false)),
        Some(other) => bail!(
            Status::InvalidArgument,
            "{XNACK_ENV} value '{other}': expected '0' or '1'"
        ),
    }
}

/// The device [`choose_device`] picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// amdkfd through `/dev/kfd`.
    Kfd,
    /// The emulated device; `announce` when it was chosen because `/dev/kfd` is missing (not
    /// forced), which is said once on stderr.
    Emulated {
        /// Whether to print the fallback notice.
        announce: bool,
    },
}

/// Picks the device from the value of `HSA_RT_DEVICE` (`forced`) and whether `/dev/kfd`
/// exists.
///
/// # Errors
/// - [`Status::InvalidArgument`] for a `forced` value other than `kfd` or `emulated`
///   (`"HSA_RT_DEVICE value 'x': expected 'kfd' or 'emulated'"`).
/// - [`Status::Error`] `"no AMD GPU driver: /dev/kfd missing"` when `kfd` is forced and
///   `/dev/kfd` does not exist.
pub fn choose_device(forced: Option<&str>, kfd_present: bool) -> Result<DeviceChoice, Error> {
    match forced {
        Some("kfd") if kfd_present => Ok(DeviceChoice::Kfd),
        Some("kfd") => bail!(Status::Error, "no AMD GPU driver: {KFD_PATH} missing"),
        Some("emulated") => Ok(DeviceChoice::Emulated { announce: false }),
        Some(other) => bail!(
            Status::InvalidArgument,
            "{DEVICE_ENV} value '{other}': expected 'kfd' or 'emulated'"
        ),
        None if kfd_present => Ok(DeviceChoice::Kfd),
        None => Ok(DeviceChoice::Emulated { announce: true }),
    }
}

/// The notice printed when falling back to the emulated device, naming the ISA of the
/// topology's first GPU: `"hsa-rt: no /dev/kfd; using the emulated device (gfx90a)"`.
pub fn emulated_notice(topology: &Topology) -> String {
    let isa = topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id != 0)
        .and_then(|n| n.processor())
        .map_or("no GPU", |p| p.name());
    format!("hsa-rt: no {KFD_PATH}; using the emulated device ({isa})")
}

static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Opens the platform the environment asks for (see the module docs). The emulated device is
/// built by the caller's constructors: `builtin_topology` (its built-in profile, used when
/// `HSA_RT_SYSFS` is unset) and `make_emulated` (its driver over a topology), e.g.
/// `open_with(emulated::builtin_topology, |t| Ok(emulated::EmulatedKfd::new(t)? as _))`.
///
/// # Errors
/// As [`choose_device`] and [`xnack_request`]; the errors of [`Topology::read`] (sysfs or
/// `HSA_RT_SYSFS`), [`DevKfd::open`], `make_emulated` and [`LinuxPlatform::with_xnack`].
pub fn open_with(
    builtin_topology: impl FnOnce() -> Topology,
    make_emulated: impl FnOnce(Topology) -> Result<Arc<dyn KfdDriver>, Error>,
) -> Result<LinuxPlatform, Error> {
    let forced = std::env::var(DEVICE_ENV).ok();
    let xnack = xnack_request(std::env::var(XNACK_ENV).ok().as_deref())?;
    let kfd_present = Path::new(KFD_PATH).exists();
    match choose_device(forced.as_deref(), kfd_present)? {
        DeviceChoice::Kfd => {
            let topology = Topology::read_default()?;
            let driver: Arc<dyn KfdDriver> = Arc::new(DevKfd::open(&topology)?);
            LinuxPlatform::with_xnack(driver, topology, xnack)
        }
        DeviceChoice::Emulated { announce } => {
            let mut topology = match std::env::var_os(SYSFS_ENV) {
                Some(dir) => Topology::read(Path::new(&dir)).map_err(|e| {
                    hsa_core::error!(e.status(), "{SYSFS_ENV}={dir:?}: {}", e.detail())
                })?,
                None => builtin_topology(),
            };
            crate::emulated::complete_capture(&mut topology);
            if announce && !ANNOUNCED.swap(true, Ordering::Relaxed) {
                eprintln!("{}", emulated_notice(&topology));
            }
            let driver = make_emulated(topology.clone())?;
            LinuxPlatform::with_xnack(driver, topology, xnack)
        }
    }
}

/// The emulated device over the captured topology at `dir` (`--sysfs` of hsainfo and the
/// vector_copy example), honouring the environment as [`open_with`] does: `HSA_XNACK`, and
/// `HSA_RT_DEVICE`, which must be unset or `emulated` (a capture has no driver behind it).
///
/// # Errors
/// [`Status::InvalidArgument`] for `HSA_RT_DEVICE=kfd` or any other value [`choose_device`]
/// refuses, and for a bad `HSA_XNACK`; the errors of [`Topology::read`],
/// [`EmulatedKfd::new`](crate::emulated::EmulatedKfd::new) and
/// [`LinuxPlatform::with_xnack`].
pub fn open_capture(dir: &Path) -> Result<LinuxPlatform, Error> {
    match std::env::var(DEVICE_ENV).ok().as_deref() {
        None | Some("emulated") => {}
        Some("kfd") => bail!(
            Status::InvalidArgument,
            "{DEVICE_ENV}=kfd asks for {KFD_PATH}, but a captured topology runs on the \
             emulated device"
        ),
        Some(other) => {
            choose_device(Some(other), false)?;
        }
    }
    let xnack = xnack_request(std::env::var(XNACK_ENV).ok().as_deref())?;
    let emulated = crate::emulated::EmulatedKfd::new(Topology::read(dir)?)?;
    let topology = emulated.topology().clone();
    let mut platform = LinuxPlatform::with_xnack(emulated.clone(), topology, xnack)?;
    platform.emulated = Some(emulated);
    Ok(platform)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hsa_xnack_values() {
        assert_eq!(xnack_request(None).unwrap(), None);
        assert_eq!(xnack_request(Some("1")).unwrap(), Some(true));
        assert_eq!(xnack_request(Some("0\n")).unwrap(), Some(false));
        let e = xnack_request(Some("yes")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.detail(), "HSA_XNACK value 'yes': expected '0' or '1'");
    }

    #[test]
    fn choice_table() {
        assert_eq!(choose_device(None, true).unwrap(), DeviceChoice::Kfd);
        assert_eq!(
            choose_device(None, false).unwrap(),
            DeviceChoice::Emulated { announce: true }
        );
        assert_eq!(
            choose_device(Some("emulated"), true).unwrap(),
            DeviceChoice::Emulated { announce: false }
        );
        assert_eq!(choose_device(Some("kfd"), true).unwrap(), DeviceChoice::Kfd);
        let e = choose_device(Some("kfd"), false).unwrap_err();
        assert_eq!(e.detail(), "no AMD GPU driver: /dev/kfd missing");
        let e = choose_device(Some("cuda"), true).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().contains("'cuda'"), "{}", e.detail());
    }

    #[test]
    fn notice_names_the_first_gpu_isa() {
        let mut node = crate::topology::TopologyNode {
            properties: Default::default(),
            memory_banks: vec![],
            caches: vec![],
            io_links: vec![],
        };
        node.properties.gpu_id = 1234;
        node.properties.simd_count = 416;
        node.properties.gfx_target_version = 90010;
        let cpu = crate::topology::TopologyNode {
            properties: Default::default(),
            ..node.clone()
        };
        let t = Topology {
            generation_id: None,
            system: Default::default(),
            nodes: vec![cpu, node],
        };
        assert_eq!(
            emulated_notice(&t),
            "hsa-rt: no /dev/kfd; using the emulated device (gfx90a)"
        );
    }
}
