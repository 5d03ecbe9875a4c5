//! `amd_signal_t`: the 64-byte signal object the packet processor decrements and the host
//! waits on. A signal's handle is the address of its `amd_signal_t`.
//!
//! Ref: `amd_hsa_signal.h` (kind 0, value 8, event_mailbox_ptr 16, event_id 24,
//! start_ts 32, end_ts 40, queue_ptr 48).

use core::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `amd_signal_kind_t`: `AMD_SIGNAL_KIND_INVALID` (0).
pub const AMD_SIGNAL_KIND_INVALID: i64 = 0;
/// `AMD_SIGNAL_KIND_USER` (1): a memory-backed signal whose `value` is the signal value.
pub const AMD_SIGNAL_KIND_USER: i64 = 1;
/// `AMD_SIGNAL_KIND_DOORBELL` (-1): `value` holds the address of a 64-bit hardware doorbell.
pub const AMD_SIGNAL_KIND_DOORBELL: i64 = -1;
/// `AMD_SIGNAL_KIND_LEGACY_DOORBELL` (-2): `value` holds the address of a 32-bit doorbell.
pub const AMD_SIGNAL_KIND_LEGACY_DOORBELL: i64 = -2;

/// `amd_signal_t`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct AmdSignal {
    /// `amd_signal_kind64_t`: one of the `AMD_SIGNAL_KIND_*` constants.
    pub kind: i64,
    /// The signal value (USER), or the hardware doorbell's address (DOORBELL).
    pub value: i64,
    /// Address of the 64-bit event mailbox; 0 when the signal raises no interrupt.
    pub event_mailbox_ptr: u64,
    /// The event id written to the mailbox after the value changes.
    pub event_id: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Start timestamp of the packet that completed the signal (profiling), ticks.
    pub start_ts: u64,
    /// End timestamp of the packet that completed the signal (profiling), ticks.
    pub end_ts: u64,
    /// For a doorbell signal: its queue's `amd_queue_t` address.
    pub queue_ptr: u64,
    /// Reserved.
    pub reserved3: [u32; 2],
}

const _: () = assert!(size_of::<AmdSignal>() == 64);
const _: () = assert!(core::mem::align_of::<AmdSignal>() == 64);
const _: () = assert!(offset_of!(AmdSignal, kind) == 0);
const _: () = assert!(offset_of!(AmdSignal, value) == 8);
const _: () = assert!(offset_of!(AmdSignal, event_mailbox_ptr) == 16);
const _: () = assert!(offset_of!(AmdSignal, event_id) == 24);
const _: () = assert!(offset_of!(AmdSignal, reserved1) == 28);
const _: () = assert!(offset_of!(AmdSignal, start_ts) == 32);
const _: () = assert!(offset_of!(AmdSignal, end_ts) == 40);
const _: () = assert!(offset_of!(AmdSignal, queue_ptr) == 48);
const _: () = assert!(offset_of!(AmdSignal, reserved3) == 56);
