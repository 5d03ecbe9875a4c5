//! The locks of the C API's registries: std's where there is an OS (a blocked caller sleeps),
//! spin locks on a target without one (`x86_64-unknown-none`), behind one set of names.

pub(crate) use imp::{lock, read, write, Mutex, RwLock};

/// The registries' locks: std's where there is an OS (a blocked caller sleeps), spin locks
/// on a target without one (`x86_64-unknown-none`).
#[cfg(not(target_os = "none"))]
mod imp {
    use std::sync::PoisonError;
    pub(crate) use std::sync::{Mutex, RwLock};
    use std::sync::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    /// Locks a mutex, taking the data of a poisoned one (a panic in another call was caught
    /// and reported as `HSA_STATUS_ERROR`; the registries stay consistent because every
    /// update is a single insert or remove).
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read access to an `RwLock`, poison ignored as for [`lock`].
    pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        m.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Write access to an `RwLock`, poison ignored as for [`lock`].
    pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        m.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The registries' locks without an OS: spin locks (a panic aborts there, so nothing is
/// poisoned).
#[cfg(target_os = "none")]
mod imp {
    pub(crate) use spin::{Mutex, RwLock};
    use spin::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    /// Locks a mutex.
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock()
    }

    /// Read access to an `RwLock`.
    pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        m.read()
    }

    /// Write access to an `RwLock`.
    pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        m.write()
    }
}
