//! Prints, as JSON, the static memory of a no-alloc runtime with one AQL queue and 64 signals:
//! `size_of` of the host structures (hsa-core built without `alloc`) and the platform memory
//! they own (ring, queue descriptor, signal slab). Run by `scripts/bench_report.py`.

use core::mem::size_of;

use hsa_core::platform::{
    Cache, Event, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryRequest, NodeProperties,
    Platform, QueueRequest, TopologySource, WaitOutcome,
};
use hsa_core::queue::AqlQueue;
use hsa_core::signal::{Signal, SignalPool, SLAB_BYTES, SLOTS_PER_SLAB};
use hsa_core::{Error, EventId, NodeId, QueueId, Status};

/// A platform type to name the generic structures with (they hold it by reference only, so
/// their size does not depend on it). Never called.
struct Sizing;

fn none() -> Error {
    hsa_core::error!(Status::Error, "the sizing platform does nothing")
}

impl TopologySource for Sizing {
    fn device_name(&self) -> &str {
        "sizing"
    }
    fn node_count(&self) -> usize {
        0
    }
    fn node(&self, _: usize) -> Result<NodeProperties, Error> {
        Err(none())
    }
    fn memory_bank(&self, _: usize, _: usize) -> Result<Option<MemoryBank>, Error> {
        Err(none())
    }
    fn cache(&self, _: usize, _: usize) -> Result<Option<Cache>, Error> {
        Err(none())
    }
    fn io_link(&self, _: usize, _: usize) -> Result<Option<IoLink>, Error> {
        Err(none())
    }
}

// SAFETY: returns no memory, queues or events at all.
unsafe impl Platform for Sizing {
    /// No queues, so no doorbells.
    type Doorbell = ();
    fn allocate_memory(&self, _: &MemoryRequest) -> Result<MemoryChunk, Error> {
        Err(none())
    }
    unsafe fn free_memory(&self, _: &MemoryChunk) -> Result<(), Error> {
        Err(none())
    }
    fn map_memory(&self, _: &MemoryChunk, _: &[NodeId]) -> Result<(), Error> {
        Err(none())
    }
    unsafe fn create_queue(&self, _: &QueueRequest) -> Result<HwQueue<()>, Error> {
        Err(none())
    }
    fn ring_doorbell(&self, _: &(), _: u64) {}
    fn destroy_queue(&self, _: QueueId) -> Result<(), Error> {
        Err(none())
    }
    fn create_event(&self) -> Result<Event, Error> {
        Err(none())
    }
    fn destroy_event(&self, _: EventId) -> Result<(), Error> {
        Err(none())
    }
    fn wait_event(&self, _: EventId, _: u64) -> Result<WaitOutcome, Error> {
        Err(none())
    }
    fn signal_event(&self, _: EventId) -> Result<(), Error> {
        Err(none())
    }
    fn timestamp_ticks(&self) -> u64 {
        0
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1
    }
}

fn main() {
    let signals = 64usize;
    // hsa_queue_create's smallest queue on amdkfd (ROCR's minimum 4096 bytes = 64 packets).
    let ring_packets = 64u64;
    let queue = size_of::<AqlQueue<&'static Sizing>>();
    let pool = size_of::<SignalPool<&'static Sizing>>();
    let signal = size_of::<Signal<&'static Sizing>>();
    let slabs = signals.div_ceil(SLOTS_PER_SLAB) as u64;
    let host = queue + pool + signals * signal;
    let device = ring_packets * 64 + 4096 + slabs * SLAB_BYTES;
    println!(
        "{{\"aql_queue_bytes\": {queue}, \"signal_pool_bytes\": {pool}, \"signal_bytes\": {signal}, \
         \"signals\": {signals}, \"host_structs_bytes\": {host}, \"ring_bytes\": {}, \
         \"queue_descriptor_bytes\": 4096, \"signal_slab_bytes\": {}, \"platform_memory_bytes\": {device}}}",
        ring_packets * 64,
        slabs * SLAB_BYTES
    );
}
