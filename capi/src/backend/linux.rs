//! The Linux backend (feature `linux`): `LinuxPlatform` over `/dev/kfd`, or over the emulated
//! device where there is none (`hsa_emu::open_default`).

use std::sync::Arc;

use hsa_core::Error;
use hsa_emu::{EmulatedKfd, SelectedDevice};

/// The platform under the C API.
pub(crate) type Plat = hsa_linux::LinuxPlatform;

/// What the state keeps besides the platform: the emulated device under it, when that is
/// what it runs on (for `hsa_rt_emulated_register_kernel`).
pub(crate) struct Device {
    emulated: Option<Arc<EmulatedKfd>>,
}

/// What [`open`] found besides the platform: the emulated device, if chosen.
pub(crate) type Opened = Option<Arc<EmulatedKfd>>;

impl Device {
    /// The state's part for the device `open` returned, once the runtime shares `_platform`.
    pub(crate) fn new(emulated: Opened, _platform: &Arc<Plat>) -> Device {
        Device { emulated }
    }

    /// The emulated device under the platform; `None` on `/dev/kfd`.
    pub(crate) fn emulated(&self) -> Option<&Arc<EmulatedKfd>> {
        self.emulated.as_ref()
    }
}

/// The first `hsa_init`'s platform: installs the stderr logger at the level of `HSA_RT_LOG`
/// unless the process has a `log` backend (`hsa_linux::logger::install_stderr_logger`), then
/// opens the default device (`hsa_emu::open_default`: `/dev/kfd`, else the emulated device;
/// `HSA_RT_DEVICE`, `HSA_RT_SYSFS`, `HSA_XNACK`, `HSA_RT_EMULATION`); checks `HSA_ENABLE_SDMA`,
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

/// What a queue made by `hsa_queue_create` without a callback does on an error: print it and
/// abort the process, as ROCR does (`hsa_linux::device::abort_on_queue_error`; the queue
/// records the error first).
pub(crate) const QUEUE_ERROR_WITHOUT_CALLBACK: Option<hsa_core::platform::QueueErrorCallback> =
    Some(hsa_core::platform::QueueErrorCallback {
        func: hsa_linux::device::abort_on_queue_error,
        data: 0,
    });

/// The runtime services of the Linux build (`hsa-runtime`): copies use SDMA queues unless
/// `HSA_ENABLE_SDMA` is `0` (ROCR's switch; `open` refused another value), and a signal the
/// application destroyed (no longer in the state's registry under its handle) drops the async
/// handlers registered on it, as ROCR's `AsyncEventsLoop` does.
pub(crate) fn services(
    runtime: &Arc<hsa_core::runtime::Runtime<Arc<Plat>>>,
    host: &Arc<hsa_core::runtime::host_memory::HostMemory>,
    signals: &Arc<hsa_core::signal::SignalPool<Arc<Plat>>>,
) -> hsa_runtime::Services<Plat> {
    let config = hsa_runtime::ServicesConfig {
        copy: hsa_runtime::CopyConfig {
            sdma: hsa_linux::env::sdma_enabled().unwrap_or(true),
        },
    };
    let live: hsa_runtime::Liveness<Plat> = Arc::new(|s| {
        crate::state::state().is_ok_and(|st| {
            st.find_signal(s.handle().0)
                .is_some_and(|live| std::ptr::eq(&*live, s))
        })
    });
    hsa_runtime::Services::with_liveness(
        runtime.clone(),
        host.clone(),
        signals.clone(),
        config,
        live,
    )
}
