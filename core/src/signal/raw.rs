//! The one place that turns a signal handle into memory access: a checked pointer to an
//! [`AmdSignal`] and atomic views of its fields.
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::abi::signal::AmdSignal;
use crate::abi::SignalHandle;
use crate::status::{Error, Result, Status};
use crate::sync::{AtomicI64, AtomicU64};

/// A pointer to a live `amd_signal_t`, made from a signal handle (its address).
///
/// Holding a `RawSignal` is a promise by whoever made it (see [`RawSignal::from_handle`]) that
/// the signal memory stays valid; all access goes through atomics, so any number of threads
/// and packet processors may use it at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSignal(NonNull<AmdSignal>);

// SAFETY: every access through a RawSignal is atomic (value, mailbox) or to fields written
// once before the handle is shared (kind, event_id, event_mailbox_ptr); the creator of the
// RawSignal guarantees the memory outlives all users.
unsafe impl Send for RawSignal {}
// SAFETY: as for Send.
unsafe impl Sync for RawSignal {}

impl RawSignal {
    /// Makes a `RawSignal` from a handle (the address of an `amd_signal_t`).
    ///
    /// # Safety
    /// The caller guarantees that `handle` is the host address of a live `amd_signal_t`,
    /// 64-byte aligned, that stays valid for as long as the `RawSignal` (and copies) are used,
    /// and that nothing accesses its `value` except atomically.
    ///
    /// # Errors
    /// `Status::InvalidSignal` for a null or misaligned handle.
    pub unsafe fn from_handle(handle: SignalHandle) -> Result<RawSignal> {
        if handle.is_null() || handle.0 % 64 != 0 {
            return Err(Error::lazy(
                Status::InvalidSignal,
                [handle.0],
                |&[handle, ..], f| {
                    write!(
                        f,
                        "signal handle {handle:#x} is null or not 64-byte aligned"
                    )
                },
            ));
        }
        let ptr = NonNull::new(handle.0 as usize as *mut AmdSignal).ok_or_else(|| {
            Error::lazy(Status::InvalidSignal, [handle.0], |&[handle, ..], f| {
                write!(f, "signal handle {handle:#x} does not fit a pointer")
            })
        })?;
        Ok(RawSignal(ptr))
    }

    /// Makes a `RawSignal` from a pointer.
    ///
    /// # Safety
    /// As for [`RawSignal::from_handle`].
    pub unsafe fn from_ptr(ptr: NonNull<AmdSignal>) -> RawSignal {
        RawSignal(ptr)
    }

    /// The handle: the signal's address.
    pub fn handle(self) -> SignalHandle {
        SignalHandle(self.0.as_ptr() as usize as u64)
    }

    /// The raw pointer.
    pub fn as_ptr(self) -> *mut AmdSignal {
        self.0.as_ptr()
    }

    fn field_ptr<T>(self, offset: usize) -> *mut T {
        // Offsets come from the compile-time-asserted amd_signal_t layout; `wrapping_byte_add`
        // stays inside the 64-byte object.
        self.0
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(offset)
            .cast::<T>()
    }

    /// The signal value as an atomic (`amd_signal_t.value`, offset 8).
    pub fn value(&self) -> &AtomicI64 {
        // SAFETY: from_handle's contract: the object is live and aligned (offset 8 of a
        // 64-aligned object is 8-aligned) and only accessed atomically; AtomicI64 has the
        // layout of i64.
        unsafe { &*self.field_ptr::<AtomicI64>(8) }
    }

    /// `amd_signal_t.kind` (offset 0).
    pub fn kind(&self) -> &AtomicI64 {
        // SAFETY: as for `value`; offset 0.
        unsafe { &*self.field_ptr::<AtomicI64>(0) }
    }

    /// `amd_signal_t.event_mailbox_ptr` (offset 16).
    pub fn event_mailbox_ptr(&self) -> &AtomicU64 {
        // SAFETY: as for `value`; offset 16 is 8-aligned.
        unsafe { &*self.field_ptr::<AtomicU64>(16) }
    }

    /// `amd_signal_t.event_id` (offset 24), read as part of the 64-bit word at 24 (the high
    /// half is `reserved1`).
    pub fn event_id(&self) -> u32 {
        // SAFETY: as for `value`; offset 24 is 8-aligned.
        let word = unsafe { &*self.field_ptr::<AtomicU64>(24) };
        word.load(crate::sync::Ordering::Acquire) as u32
    }

    /// `amd_signal_t.start_ts` (offset 32).
    pub fn start_ts(&self) -> &AtomicU64 {
        // SAFETY: as for `value`; offset 32.
        unsafe { &*self.field_ptr::<AtomicU64>(32) }
    }

    /// `amd_signal_t.end_ts` (offset 40).
    pub fn end_ts(&self) -> &AtomicU64 {
        // SAFETY: as for `value`; offset 40.
        unsafe { &*self.field_ptr::<AtomicU64>(40) }
    }

    /// `amd_signal_t.queue_ptr` (offset 48).
    pub fn queue_ptr(&self) -> &AtomicU64 {
        // SAFETY: as for `value`; offset 48.
        unsafe { &*self.field_ptr::<AtomicU64>(48) }
    }

    /// Writes the signal's event id into its event mailbox, if it has one, and returns the id
    /// so the caller can wake the platform event. The mailbox is a 64-bit slot in
    /// host-visible memory (KFD event page).
    ///
    /// # Safety
    /// The caller guarantees `event_mailbox_ptr`, when non-zero, is the address of a live,
    /// 8-byte aligned, 64-bit mailbox slot (the platform made it with the event).
    pub unsafe fn notify_mailbox(&self) -> Option<u32> {
        let mailbox = self
            .event_mailbox_ptr()
            .load(crate::sync::Ordering::Acquire);
        if mailbox == 0 || mailbox % 8 != 0 {
            return None;
        }
        let id = self.event_id();
        // SAFETY: the caller's guarantee: a live, aligned 64-bit slot, written atomically.
        let slot = unsafe { &*(mailbox as usize as *const AtomicU64) };
        // Release pairs with the waiter's Acquire load of the mailbox before it re-reads the
        // signal value.
        slot.store(u64::from(id), crate::sync::Ordering::Release);
        Some(id)
    }
}

/// An event mailbox: the 64-bit slot (KFD event page) that a signal's changer writes the event
/// id into before it raises the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mailbox(NonNull<AtomicU64>);

// SAFETY: the slot is only ever accessed atomically; `from_address`'s caller guarantees its
// lifetime.
unsafe impl Send for Mailbox {}
// SAFETY: as for Send.
unsafe impl Sync for Mailbox {}

impl Mailbox {
    /// The mailbox at `address`; `None` for 0 (the platform has no mailbox for the event).
    ///
    /// # Safety
    /// The caller guarantees a non-zero `address` is the host address of a live 64-bit slot,
    /// accessed only atomically, valid while the `Mailbox` is used: the `mailbox` of an
    /// [`Event`](crate::platform::Event) the platform created, until the event is destroyed.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an address that is not 8-byte aligned.
    pub unsafe fn from_address(address: u64) -> Result<Option<Mailbox>> {
        if address == 0 {
            return Ok(None);
        }
        if address % 8 != 0 {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [address],
                |&[address, ..], f| {
                    write!(
                        f,
                        "event mailbox address {address:#x} is not 8-byte aligned"
                    )
                },
            ));
        }
        Ok(NonNull::new(address as usize as *mut AtomicU64).map(Mailbox))
    }

    /// The mailbox's address.
    pub fn address(self) -> u64 {
        self.0.as_ptr() as usize as u64
    }

    /// Writes `event_id` into the slot with Release (pairs with the interrupt handler's or
    /// waiter's Acquire read of the mailbox).
    pub fn post(&self, event_id: u32) {
        // SAFETY: from_address's contract: a live, aligned slot accessed only atomically.
        let slot = unsafe { self.0.as_ref() };
        slot.store(u64::from(event_id), crate::sync::Ordering::Release);
    }

    /// The slot's current value (Acquire).
    pub fn load(&self) -> u64 {
        // SAFETY: as for post.
        let slot = unsafe { self.0.as_ref() };
        slot.load(crate::sync::Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mailbox is the slot at the address it was made from: its address, the event id
    /// posted into it, 0 for none, and a misaligned address refused.
    #[test]
    fn a_mailbox_is_the_slot_at_its_address() {
        let slot = AtomicU64::new(0);
        let address = &slot as *const AtomicU64 as usize as u64;
        // SAFETY: `slot` is a live, aligned 64-bit slot, accessed only atomically, and
        // outlives the mailbox.
        let m = unsafe { Mailbox::from_address(address) }.unwrap().unwrap();
        assert_eq!(m.address(), address);
        m.post(0x1234);
        assert_eq!(m.load(), 0x1234);
        assert_eq!(slot.load(crate::sync::Ordering::Relaxed), 0x1234);
        // SAFETY: 0 is never dereferenced (no mailbox).
        assert!(unsafe { Mailbox::from_address(0) }.unwrap().is_none());
        // SAFETY: refused before any use (misaligned).
        let e = unsafe { Mailbox::from_address(address + 4) }.err().unwrap();
        assert_eq!(e.status(), crate::status::Status::InvalidArgument);
    }
}
