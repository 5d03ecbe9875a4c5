//! The Linux backend (feature `linux`): `LinuxPlatform` over `/dev/kfd`, or over the emulated
//! device where there is none (`hsa_emu::open_default`).

use std::sync::Arc;

use hsa_core::Error;
#[cfg(feature = "emulated")]
use hsa_emu::{EmulatedKfd, SelectedDevice};

/// The platform under the C API.
pub(crate) type Plat = hsa_linux::LinuxPlatform;

/// What the state keeps besides the platform: the emulated device under it, when that is
/// what it runs on (for `hsa_rt_emulated_register_kernel`).
pub(crate) struct Device {
    #[cfg(feature = "emulated")]
    emulated: Option<Arc<EmulatedKfd>>,
}

/// What [`open`] found besides the platform: the emulated device, if chosen.
#[cfg(feature = "emulated")]
pub(crate) type Opened = Option<Arc<EmulatedKfd>>;
/// What [`open`] found besides the platform: nothing (no emulated device in this build).
#[cfg(not(feature = "emulated"))]
pub(crate) type Opened = ();

impl Device {
    /// The state's part for the device `open` returned, once the runtime shares `_platform`.
    pub(crate) fn new(opened: Opened, _platform: &Arc<Plat>) -> Device {
        #[cfg(feature = "emulated")]
        return Device { emulated: opened };
        #[cfg(not(feature = "emulated"))]
        {
            let () = opened;
            Device {}
        }
    }

    /// The emulated device under the platform; `None` on `/dev/kfd`.
    #[cfg(feature = "emulated")]
    pub(crate) fn emulated(&self) -> Option<&Arc<EmulatedKfd>> {
        self.emulated.as_ref()
    }

    /// Whether the platform runs on the emulated device (whose command processor stamps the
    /// system timestamp itself).
    pub(crate) fn is_emulated(&self) -> bool {
        #[cfg(feature = "emulated")]
        return self.emulated.is_some();
        #[cfg(not(feature = "emulated"))]
        return false;
    }
}

/// The first `hsa_init`'s platform: installs the stderr logger at the level of `HSA_RT_LOG`
/// unless the process has a `log` backend (`hsa_linux::logger::install_stderr_logger`), then
/// opens the device: with feature `emulated`, the default device (`hsa_emu::open_default`:
/// `/dev/kfd`, else the emulated device; `HSA_RT_DEVICE`, `HSA_RT_SYSFS`, `HSA_XNACK`,
/// `HSA_RT_EMULATION`); without it, `/dev/kfd` ([`open_kfd`]). Checks `HSA_ENABLE_SDMA`,
/// which the copies read.
///
/// # Errors
/// `Status::InvalidArgument` naming `HSA_RT_LOG` and the accepted values when it is not a
/// log level (`hsa_linux::env::log_level`; the logger is then installed at `info`, so that
/// this error is printed), or naming `HSA_ENABLE_SDMA` when it is not `0` or `1`; the device
/// selection's errors.
pub(crate) fn open() -> Result<(Plat, Opened), Error> {
    hsa_linux::logger::install_stderr_logger()?;
    hsa_linux::env::sdma_enabled()?;
    #[cfg(feature = "emulated")]
    {
        let SelectedDevice { platform, emulated } = hsa_emu::open_default()?;
        log::info!(
            "hsa_init: running on {}",
            if emulated.is_some() {
                "the emulated device"
            } else {
                "/dev/kfd"
            }
        );
        Ok((platform, emulated))
    }
    #[cfg(not(feature = "emulated"))]
    {
        let platform = open_kfd()?;
        log::info!("hsa_init: running on /dev/kfd");
        Ok((platform, ()))
    }
}

/// `/dev/kfd` and the KFD sysfs topology, in a build without the emulated device: the device
/// selection of `hsa_emu::open_default` with only its `/dev/kfd` branch (`HSA_XNACK` read the
/// same way).
///
/// # Errors
/// `Status::Error` "no AMD GPU driver: /dev/kfd missing (this library was built without the
/// emulated device)" when there is none; `Status::InvalidArgument` for `HSA_RT_DEVICE=emulated`
/// (this build cannot) or a bad `HSA_RT_DEVICE`/`HSA_XNACK`; the errors of reading the
/// topology, opening `/dev/kfd` and `LinuxPlatform::with_xnack`.
#[cfg(not(feature = "emulated"))]
pub(crate) fn open_kfd() -> Result<Plat, Error> {
    use hsa_core::{bail, Status};
    use hsa_linux::env::{parse_choice, DEVICE_ENV, XNACK_ENV};
    use hsa_linux::kfd::ioctl::{DevKfd, KFD_PATH};
    let forced = parse_choice(
        DEVICE_ENV,
        std::env::var_os(DEVICE_ENV).as_deref(),
        &[("kfd", true), ("emulated", false)],
    )?;
    if forced == Some(false) {
        bail!(
            Status::InvalidArgument,
            "{DEVICE_ENV}=emulated: this library was built without the emulated device \
             (cargo feature `emulated`)"
        );
    }
    let xnack = parse_choice(
        XNACK_ENV,
        std::env::var_os(XNACK_ENV).as_deref(),
        &[("0", false), ("1", true)],
    )?;
    if !std::path::Path::new(KFD_PATH).exists() {
        bail!(
            Status::Error,
            "no AMD GPU driver: {KFD_PATH} missing (this library was built without the \
             emulated device)"
        );
    }
    let topology = hsa_linux::topology::Topology::read_default()?;
    let driver: Arc<dyn hsa_linux::kfd::driver::KfdDriver> = DevKfd::open(&topology)?;
    hsa_linux::LinuxPlatform::with_xnack(driver, topology, xnack)
}

/// What a queue made by `hsa_queue_create` without a callback does on an error: print it and
/// abort the process, as ROCR does (`hsa_linux::device::abort_on_queue_error`; the queue
/// records the error first).
pub(crate) const QUEUE_ERROR_WITHOUT_CALLBACK: Option<hsa_core::platform::QueueErrorCallback> =
    Some(hsa_core::platform::QueueErrorCallback {
        func: hsa_linux::device::abort_on_queue_error,
        data: 0,
    });

/// How the runtime services of the Linux build behave: copies use SDMA queues unless
/// `HSA_ENABLE_SDMA` is `0` (ROCR's switch; [`open`] refused another value).
pub(crate) fn services_config() -> hsa_runtime::ServicesConfig {
    hsa_runtime::ServicesConfig {
        copy: hsa_runtime::CopyConfig {
            sdma: hsa_linux::env::sdma_enabled().unwrap_or(true),
        },
    }
}
