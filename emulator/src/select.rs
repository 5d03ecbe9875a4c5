//! Which device backs the platform: `/dev/kfd` or the emulated device. This choice lives
//! above both: hsa-linux is the real KFD backend only, and the emulated device is one more
//! [`KfdDriver`] handed to [`LinuxPlatform::with_xnack`].
//!
//! `HSA_RT_DEVICE=kfd|emulated` forces one; otherwise `/dev/kfd` when it exists or opens
//! ([`kfd_opens`]: an interposed one counts), else the
//! emulated device, announced once (a `log::warn!` record: on stderr under the C library's and the
//! tools' logger). `HSA_RT_SYSFS=DIR` gives the emulated device a
//! captured KFD topology instead of its built-in profile, `HSA_RT_PROFILE=NAME` another of its
//! built-in profiles ([`crate::device::BUILTIN_PROFILES`]). `HSA_XNACK=0|1` sets the process's
//! XNACK mode on either. Values are read as [`hsa_linux::env`] says (empty means unset).

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hsa_core::{bail, Error, Status};
use hsa_linux::kfd::driver::KfdDriver;
use hsa_linux::kfd::ioctl::{DevKfd, KFD_PATH};
use hsa_linux::topology::Topology;
use hsa_linux::LinuxPlatform;

use crate::device::EmulatedKfd;

pub use hsa_linux::env::{DEVICE_ENV, PROFILE_ENV, SYSFS_ENV, XNACK_ENV};

/// The XNACK mode a value of `HSA_XNACK` (a choice, [`hsa_linux::env::parse_choice`]) asks for:
/// `Some(true)` for `1`, `Some(false)` for `0`, `None` (the kernel's mode) when unset or
/// empty.
///
/// # Errors
/// [`Status::InvalidArgument`] `"HSA_XNACK value 'x': expected '0' or '1' (empty or unset:
/// the default)"` for any other value.
pub fn xnack_request(value: Option<&OsStr>) -> Result<Option<bool>, Error> {
    hsa_linux::env::parse_choice(XNACK_ENV, value, &[("0", false), ("1", true)])
}

/// The device `HSA_RT_DEVICE` forces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceRequest {
    /// `kfd`: amdkfd through `/dev/kfd`.
    Kfd,
    /// `emulated`: the emulated device.
    Emulated,
}

/// The device a value of `HSA_RT_DEVICE` (a choice, [`hsa_linux::env::parse_choice`]) forces:
/// `None` when unset or empty.
///
/// # Errors
/// [`Status::InvalidArgument`] `"HSA_RT_DEVICE value 'x': expected 'kfd' or 'emulated'
/// (empty or unset: the default)"` for any other value.
pub fn device_request(value: Option<&OsStr>) -> Result<Option<DeviceRequest>, Error> {
    hsa_linux::env::parse_choice(
        DEVICE_ENV,
        value,
        &[
            ("kfd", DeviceRequest::Kfd),
            ("emulated", DeviceRequest::Emulated),
        ],
    )
}

/// What [`open_default`] and [`open_capture`] opened: the platform, and the emulated device
/// below it when that is what it runs on (to register host implementations of kernels with
/// [`EmulatedKfd::register_kernel`], read its log of queue errors with
/// [`EmulatedKfd::queue_error`], or its execution statistics).
pub struct SelectedDevice {
    /// The platform, over `/dev/kfd` or the emulated device.
    pub platform: LinuxPlatform,
    /// The emulated device under [`SelectedDevice::platform`]; `None` on `/dev/kfd`.
    pub emulated: Option<Arc<EmulatedKfd>>,
}

impl SelectedDevice {
    /// The platform over `emulated` with its topology (`LinuxPlatform::new(emulated,
    /// emulated.topology().clone())`), keeping the handle.
    ///
    /// # Errors
    /// As [`LinuxPlatform::new`].
    pub fn emulated(emulated: Arc<EmulatedKfd>) -> Result<SelectedDevice, Error> {
        let topology = emulated.topology().clone();
        let platform = LinuxPlatform::new(emulated.clone(), topology)?;
        Ok(SelectedDevice {
            platform,
            emulated: Some(emulated),
        })
    }
}

impl std::fmt::Debug for SelectedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectedDevice")
            .field("platform", &self.platform)
            .field("emulated", &self.emulated.is_some())
            .finish()
    }
}

/// The device [`choose_device`] picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceChoice {
    /// amdkfd through `/dev/kfd`.
    Kfd,
    /// The emulated device; `announce` when it was chosen because `/dev/kfd` is missing (not
    /// forced), which is logged once (warn).
    Emulated {
        /// Whether to log the fallback notice.
        announce: bool,
    },
}

/// Picks the device from what `HSA_RT_DEVICE` forces ([`device_request`]) and whether
/// `/dev/kfd` exists.
///
/// # Errors
/// [`Status::Error`] `"no AMD GPU driver: /dev/kfd missing"` when `kfd` is forced and
/// `/dev/kfd` does not exist.
pub fn choose_device(
    forced: Option<DeviceRequest>,
    kfd_present: bool,
) -> Result<DeviceChoice, Error> {
    match forced {
        Some(DeviceRequest::Kfd) if kfd_present => Ok(DeviceChoice::Kfd),
        Some(DeviceRequest::Kfd) => {
            bail!(Status::Error, "no AMD GPU driver: {KFD_PATH} missing")
        }
        Some(DeviceRequest::Emulated) => Ok(DeviceChoice::Emulated { announce: false }),
        None if kfd_present => Ok(DeviceChoice::Kfd),
        None => Ok(DeviceChoice::Emulated { announce: true }),
    }
}

/// The notice logged (warn) when falling back to the emulated device, naming the ISA of the
/// topology's first GPU: `"no /dev/kfd; using the emulated device (gfx90a)"` (the stderr
/// logger prints it after `hsa-rt: `).
pub fn emulated_notice(topology: &Topology) -> String {
    let isa = topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id != 0)
        .and_then(|n| n.processor())
        .map_or("no GPU", |p| p.name());
    format!("no {KFD_PATH}; using the emulated device ({isa})")
}

/// Whether `/dev/kfd` is there: present on the filesystem (so that a refused open, e.g. for
/// a user outside the render group, is reported by [`DevKfd::open`] rather than hidden by the
/// fallback), or, absent there, openable read-write as libhsakmt's `hsaKmtOpenKFD` opens it:
/// an `open` through the C library, so that an interposed `/dev/kfd` that exists on no
/// filesystem (kfd-emu's `LD_PRELOAD` library) counts. The probe's descriptor is closed;
/// [`DevKfd::open`] opens the device again.
pub fn kfd_opens() -> bool {
    Path::new(KFD_PATH).exists()
        || std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(KFD_PATH)
            .is_ok()
}

static ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Opens the platform the environment asks for (see the module docs). The emulated device is
/// built by the caller's constructors: `builtin_topology` (its built-in profile, used when
/// `HSA_RT_SYSFS` is unset) and `make_emulated` (its driver over a topology), e.g.
/// `open_with(device::builtin_topology, |t| Ok(device::EmulatedKfd::new(t)? as _))`;
/// [`open_default`] is that, keeping the emulated device's handle.
///
/// # Errors
/// As [`device_request`], [`choose_device`], [`xnack_request`] and [`profile_request`];
/// [`Status::InvalidArgument`] when both `HSA_RT_SYSFS` and `HSA_RT_PROFILE` are set; the
/// errors of
/// [`Topology::read`] (sysfs or `HSA_RT_SYSFS`), [`DevKfd::open`], `make_emulated` and
/// [`LinuxPlatform::with_xnack`].
pub fn open_with(
    builtin_topology: impl FnOnce() -> Topology,
    make_emulated: impl FnOnce(Topology) -> Result<Arc<dyn KfdDriver>, Error>,
) -> Result<LinuxPlatform, Error> {
    let forced = device_request(std::env::var_os(DEVICE_ENV).as_deref())?;
    let xnack = xnack_request(std::env::var_os(XNACK_ENV).as_deref())?;
    let kfd_present = kfd_opens();
    match choose_device(forced, kfd_present)? {
        DeviceChoice::Kfd => {
            let topology = Topology::read_default()?;
            let driver: Arc<dyn KfdDriver> = DevKfd::open(&topology)?;
            LinuxPlatform::with_xnack(driver, topology, xnack)
        }
        DeviceChoice::Emulated { announce } => {
            let profile = profile_request()?;
            let mut topology = match (hsa_linux::env::path(SYSFS_ENV), profile) {
                (Some(dir), Some(name)) => bail!(
                    Status::InvalidArgument,
                    "{SYSFS_ENV}={dir:?} and {PROFILE_ENV}={name} exclude each other"
                ),
                (Some(dir), None) => Topology::read(&dir).map_err(|e| {
                    hsa_core::error!(e.status(), "{SYSFS_ENV}={dir:?}: {}", e.detail())
                })?,
                (None, Some(name)) => crate::device::builtin_profile(name)?,
                (None, None) => builtin_topology(),
            };
            // Completed first (it may add a CPU node); a capture's CPU nodes are unnamed:
            // named as libhsakmt names them.
            crate::device::complete_capture(&mut topology);
            topology.name_cpus_from_host();
            if announce && !ANNOUNCED.swap(true, Ordering::Relaxed) {
                log::warn!("{}", emulated_notice(&topology));
            }
            let driver = make_emulated(topology.clone())?;
            LinuxPlatform::with_xnack(driver, topology, xnack)
        }
    }
}

/// The built-in profile `HSA_RT_PROFILE` names, `None` when it is unset or empty.
///
/// # Errors
/// [`Status::InvalidArgument`] naming the value and the profiles for any other value.
pub fn profile_request() -> Result<Option<&'static str>, Error> {
    let names = crate::device::BUILTIN_PROFILES.map(|(n, _)| (n, n));
    hsa_linux::env::choice(PROFILE_ENV, &names)
}

/// The emulated device over the captured topology at `dir` (`--sysfs` of hsainfo and the
/// vector_copy example), honouring the environment as [`open_with`] does: `HSA_XNACK`, and
/// `HSA_RT_DEVICE`, which must be unset or `emulated` (a capture has no driver behind it).
/// The capture's unnamed CPU nodes are named after this machine's processor
/// ([`Topology::name_cpus_from_host`]), as rocminfo names them over the same capture.
///
/// # Errors
/// [`Status::InvalidArgument`] for `HSA_RT_DEVICE=kfd` or any other value [`device_request`]
/// refuses, and for a bad `HSA_XNACK`; the errors of [`Topology::read`],
/// [`EmulatedKfd::new`] and [`LinuxPlatform::with_xnack`].
pub fn open_capture(dir: &Path) -> Result<SelectedDevice, Error> {
    match device_request(std::env::var_os(DEVICE_ENV).as_deref())? {
        None | Some(DeviceRequest::Emulated) => {}
        Some(DeviceRequest::Kfd) => bail!(
            Status::InvalidArgument,
            "{DEVICE_ENV}=kfd asks for {KFD_PATH}, but a captured topology runs on the \
             emulated device"
        ),
    }
    let xnack = xnack_request(std::env::var_os(XNACK_ENV).as_deref())?;
    let mut topology = Topology::read(dir)?;
    // Completed first (it may add a CPU node, as EmulatedKfd::new would); a capture's CPU
    // nodes are unnamed: named as libhsakmt names them, after this machine's processor
    // (rocminfo over the same capture prints that name).
    crate::device::complete_capture(&mut topology);
    topology.name_cpus_from_host();
    let emulated = EmulatedKfd::new(topology)?;
    let topology = emulated.topology().clone();
    let platform = LinuxPlatform::with_xnack(emulated.clone(), topology, xnack)?;
    Ok(SelectedDevice {
        platform,
        emulated: Some(emulated),
    })
}

/// The default device: `/dev/kfd` when present, else the emulated device over its built-in
/// profile (logged once, warn); `HSA_RT_DEVICE=kfd|emulated` forces one and
/// `HSA_RT_SYSFS=DIR` gives the emulated device a captured topology (see the module docs).
///
/// # Errors
/// `"no AMD GPU driver: /dev/kfd missing"` when `kfd` is forced without the driver; the
/// errors of opening `/dev/kfd` (permission: join the render group), of reading the
/// topology (file and line), of the emulated device's creation and of
/// [`LinuxPlatform::with_xnack`] (as [`open_with`]).
/// # Example
/// ```
/// let device = hsa_emu::open_default()?;
/// // "kfd" on a machine with /dev/kfd, else "emulated" (said once on stderr).
/// println!("running on {}", device.platform.device_kind());
/// assert_eq!(device.emulated.is_some(), device.platform.device_kind() == "emulated");
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub fn open_default() -> Result<SelectedDevice, Error> {
    let mut made = None;
    let platform = open_with(crate::device::builtin_topology, |topology| {
        let emulated = EmulatedKfd::new(topology)?;
        made = Some(emulated.clone());
        Ok(emulated as Arc<dyn KfdDriver>)
    })?;
    Ok(SelectedDevice {
        platform,
        emulated: made,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    /// `HSA_XNACK` is a choice: unset and empty leave the kernel's mode, `0` is not the same.
    #[test]
    fn hsa_xnack_values() {
        assert_eq!(xnack_request(None).unwrap(), None);
        assert_eq!(xnack_request(os("")).unwrap(), None);
        assert_eq!(xnack_request(os("1")).unwrap(), Some(true));
        assert_eq!(xnack_request(os("0\n")).unwrap(), Some(false));
        let e = xnack_request(os("yes")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "HSA_XNACK value 'yes': expected '0' or '1' (empty or unset: the default)"
        );
    }

    #[test]
    fn choice_table() {
        assert_eq!(device_request(None).unwrap(), None);
        assert_eq!(device_request(os("")).unwrap(), None);
        assert_eq!(device_request(os("kfd")).unwrap(), Some(DeviceRequest::Kfd));
        assert_eq!(
            device_request(os("emulated")).unwrap(),
            Some(DeviceRequest::Emulated)
        );
        let e = device_request(os("cuda")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "HSA_RT_DEVICE value 'cuda': expected 'kfd' or 'emulated' (empty or unset: the \
             default)"
        );
        assert_eq!(choose_device(None, true).unwrap(), DeviceChoice::Kfd);
        assert_eq!(
            choose_device(None, false).unwrap(),
            DeviceChoice::Emulated { announce: true }
        );
        assert_eq!(
            choose_device(Some(DeviceRequest::Emulated), true).unwrap(),
            DeviceChoice::Emulated { announce: false }
        );
        assert_eq!(
            choose_device(Some(DeviceRequest::Kfd), true).unwrap(),
            DeviceChoice::Kfd
        );
        let e = choose_device(Some(DeviceRequest::Kfd), false).unwrap_err();
        assert_eq!(e.detail(), "no AMD GPU driver: /dev/kfd missing");
    }

    #[test]
    fn notice_names_the_first_gpu_isa() {
        let mut node = hsa_linux::topology::TopologyNode {
            properties: Default::default(),
            memory_banks: vec![],
            caches: vec![],
            io_links: vec![],
        };
        node.properties.gpu_id = 1234;
        node.properties.simd_count = 416;
        node.properties.gfx_target_version = 90010;
        let cpu = hsa_linux::topology::TopologyNode {
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
            "no /dev/kfd; using the emulated device (gfx90a)"
        );
    }
}
