//! The doorbell signal of a queue: an `amd_signal_t` of kind `AMD_SIGNAL_KIND_DOORBELL`
//! whose value field holds the hardware doorbell's address (ROCR's `hardware_doorbell_ptr`
//! shares the offset with `value`). Storing a packet id to it rings the queue's doorbell
//! through [`Platform::ring_doorbell`] with the doorbell handle the platform gave the queue
//! (no lookup); the `value` field keeps the doorbell address, as the CP and ROCR-compatible
//! device code expect.
//!
//! Ref: `amd_hsa_signal.h` (`AMD_SIGNAL_KIND_DOORBELL`, `hardware_doorbell_ptr`); HSA Runtime
//! 1.2 §2.6 (`hsa_queue_t.doorbell_signal`: "the application writes the packet id to it").

use core::fmt;

use crate::abi::SignalHandle;
use crate::platform::Platform;
use crate::platform_ref::{DoorbellOf, PlatformRef};

use super::order::StoreOrder;
use super::raw::RawSignal;

/// A queue's doorbell signal. Made and owned by [`AqlQueue`](crate::queue::AqlQueue) (its
/// memory lives in the queue's descriptor chunk).
pub struct DoorbellSignal<H: PlatformRef> {
    raw: RawSignal,
    platform: H,
    doorbell: DoorbellOf<H>,
}

impl<H: PlatformRef> fmt::Debug for DoorbellSignal<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoorbellSignal")
            .field("handle", &self.raw.handle())
            .field("doorbell", &self.doorbell)
            .finish()
    }
}

impl<H: PlatformRef> DoorbellSignal<H> {
    #[cfg_attr(loom, allow(dead_code))] // used by AqlQueue, which loom builds leave out
    pub(crate) fn new(raw: RawSignal, platform: H, doorbell: DoorbellOf<H>) -> Self {
        DoorbellSignal {
            raw,
            platform,
            doorbell,
        }
    }

    /// The handle written into `hsa_queue_t.doorbell_signal`.
    pub fn handle(&self) -> SignalHandle {
        self.raw.handle()
    }

    /// The doorbell address the signal's `value` holds (`HwQueue::doorbell_address`).
    pub fn doorbell_address(&self) -> u64 {
        self.raw.value().load(crate::sync::Ordering::Relaxed) as u64
    }

    /// What rings this doorbell, detached from the queue (for a caller that must ring it
    /// without holding the queue: the C ABI's doorbell stores).
    pub fn ringer(&self) -> DoorbellRinger<H> {
        DoorbellRinger {
            platform: self.platform.clone(),
            doorbell: self.doorbell.clone(),
        }
    }

    /// Rings the doorbell with `packet_id` (`hsa_signal_store_relaxed` / `_screlease` on a
    /// doorbell signal). Packets up to `packet_id` must already be published; the platform
    /// orders the doorbell after them (store fence / HDP flush). No monotonicity check here:
    /// [`AqlQueue::ring_doorbell`](crate::queue::AqlQueue::ring_doorbell) does that. Takes no
    /// lock: one store through the queue's doorbell handle.
    pub fn store(&self, packet_id: u64, order: StoreOrder) {
        ring(&self.platform, &self.doorbell, packet_id, order);
    }
}

/// A queue's doorbell handle and the platform that rings it, without the queue: it stays
/// sound to ring after the queue is destroyed (a store then reaches a doorbell no live queue
/// depends on: [`Platform::Doorbell`]'s contract). Made by [`DoorbellSignal::ringer`].
#[derive(Clone)]
pub struct DoorbellRinger<H: PlatformRef> {
    platform: H,
    doorbell: DoorbellOf<H>,
}

impl<H: PlatformRef> fmt::Debug for DoorbellRinger<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoorbellRinger")
            .field("doorbell", &self.doorbell)
            .finish()
    }
}

impl<H: PlatformRef> DoorbellRinger<H> {
    /// Rings the doorbell with `packet_id`, as [`DoorbellSignal::store`] does.
    pub fn ring(&self, packet_id: u64, order: StoreOrder) {
        ring(&self.platform, &self.doorbell, packet_id, order);
    }
}

/// One doorbell store: a release fence first when asked (it pairs with the packet
/// processor's acquire of the doorbell value), then the platform's store.
fn ring<H: PlatformRef>(platform: &H, doorbell: &DoorbellOf<H>, packet_id: u64, order: StoreOrder) {
    if order == StoreOrder::Release {
        crate::sync::fence(crate::sync::Ordering::Release);
    }
    platform.ring_doorbell(doorbell, packet_id);
}
