//! What amdkfd keeps per process, and so the user side must keep as long.
//!
//! amdkfd has one `kfd_process` per address space, whatever the number of opens of
//! `/dev/kfd` (`kfd_create_process` finds the existing one), and it lives until the process
//! exits. Its event page is set once (`kfd_kmap_event_page`: "Event page is already set" is
//! `EINVAL`) and cannot be freed (`kfd_ioctl_free_memory_of_gpu`: `EPERM`). Several
//! [`LinuxPlatform`](super::LinuxPlatform)s on one driver (a runtime shut down and opened
//! again, or two at once) therefore share one [`KfdProcess`]: the address reservation the
//! process's buffer objects live in, and the event page handed to KFD with its mapping, as
//! libhsakmt keeps its apertures and `events_page` process-wide.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use hsa_core::Error;

use crate::kfd::driver::KfdDriver;
use crate::kfd::ioctl::VaSpace;

/// The mapped event page: a chunk handed to KFD (dGPU path) or KFD's own page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventPage {
    /// Address of the page's first slot (GPU VA == CPU VA).
    pub(crate) va: u64,
}

/// The per-process state of one driver, shared by the platforms opened on it.
#[derive(Debug)]
pub(crate) struct KfdProcess {
    /// The address reservation every buffer object of the process lives in (shared with the
    /// doorbell pages' [`crate::kfd::ioctl::OwnedMapping`]s, which may outlive the platform).
    pub(crate) va: Arc<VaSpace>,
    /// The event page, once the first CREATE_EVENT handed it over; held across that call.
    pub(crate) event_page: Mutex<Option<EventPage>>,
}

type Registry = Vec<(Weak<dyn KfdDriver>, Arc<KfdProcess>)>;

/// Processes by driver, as long as their driver lives.
static PROCESSES: Mutex<Registry> = Mutex::new(Vec::new());

fn same_driver(a: &Weak<dyn KfdDriver>, b: &Arc<dyn KfdDriver>) -> bool {
    std::ptr::addr_eq(a.as_ptr(), Arc::as_ptr(b))
}

/// The process of `driver`: the one a platform already opened on it, or a new one whose
/// reservation `reserve` makes.
///
/// # Errors
/// `reserve`'s error.
pub(crate) fn process_of(
    driver: &Arc<dyn KfdDriver>,
    reserve: impl FnOnce() -> Result<VaSpace, Error>,
) -> Result<Arc<KfdProcess>, Error> {
    let mut all = PROCESSES.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|(d, _)| d.strong_count() > 0);
    if let Some((_, p)) = all.iter().find(|(d, _)| same_driver(d, driver)) {
        return Ok(p.clone());
    }
    let p = Arc::new(KfdProcess {
        va: Arc::new(reserve()?),
        event_page: Mutex::new(None),
    });
    all.push((Arc::downgrade(driver), p.clone()));
    Ok(p)
}

/// Forgets the process of `driver` when the caller holds the last reference to the driver
/// (the device is about to close: amdkfd's process state goes with it).
pub(crate) fn release(driver: &Arc<dyn KfdDriver>) {
    if Arc::strong_count(driver) > 1 {
        return;
    }
    let mut all = PROCESSES.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|(d, _)| d.strong_count() > 0 && !same_driver(d, driver));
}
