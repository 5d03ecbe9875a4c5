//! `FakePlatform`: a [`Platform`] in host memory for core's own tests and doc examples — a
//! recorder with memory and events, not a device; and [`FaultInjector`], a wrapper that makes
//! the n-th call of a chosen method fail (smoltcp's `FaultInjector` idea).
//!
//! - Topology: configurable ([`FakeTopology`]); by default one CPU node and one gfx90a GPU node
//!   with the properties amdkfd reports for an AMD Instinct MI210.
//! - Memory: zeroed host allocations; the device address is the host address. Live chunks are
//!   tracked, so freeing an unknown chunk is an error and a test can turn a device address
//!   back into a host pointer ([`FakePlatform::host_ptr`]). With [`FakeMemory::Unmapped`]
//!   chunks are instead made-up device addresses from [`UNMAPPED_BASE`] up with no host
//!   pointer, to prove that code never touches memory it only manages.
//! - Events: a `Mutex` + `Condvar`; a signaled event stays signaled until a wait consumes it.
//!   Each event has a 64-bit mailbox slot in the fake's event page.
//! - Time: nanoseconds since the platform was made (1 GHz).
//! - Queues: checked (a known node, a ring of 64 times a power of two bytes, ring and
//!   `amd_queue_t` 64-byte aligned inside live chunks, one queue per ring) and recorded, never
//!   run: nothing consumes a fake queue's ring, and [`Platform::ring_doorbell`] only records
//!   the write. A test that needs packets consumed plays the packet processor itself (a
//!   [`PacketProcessor`](crate::packet_processor::PacketProcessor) over the ring with its own
//!   [`ProcessorHost`](crate::packet_processor::ProcessorHost), as
//!   `core/tests/packet_processor.rs` does); kernels running on a device are the emulated
//!   device's (`hsa-emu`), not the fake's.
//! - Records: what tests assert on — successful allocations, the last [`MemoryRequest`],
//!   `map_memory` calls, doorbell writes, each live queue's [`QueueRecord`], and counts of
//!   `signal_event`/`wait_event` calls.
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::boxed::Box;
use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use std::vec::Vec;

use crate::addr::{EventId, GpuVa, NodeId, QueueId};
use crate::platform::{
    Cache, Capabilities, Event, HeapType, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryRequest,
    NodeProperties, Platform, QueueErrorCallback, QueueKind, QueueRequest, SdmaQueues,
    SegmentApertures, TopologySource, WaitOutcome,
};
use crate::status::{Result, Status};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Number of events (and mailbox slots) a fake platform has.
pub const EVENT_CAPACITY: usize = 256;

/// First device address of [`FakeMemory::Unmapped`] chunks (nothing is mapped there).
pub const UNMAPPED_BASE: u64 = 0xdead_0000_0000;

/// The doorbell address the fake reports for queue id 0; queue `id` gets `+ 8 * id`. Nothing
/// is mapped there: the fake's doorbell is [`Platform::ring_doorbell`].
pub const FAKE_DOORBELL_BASE: u64 = 0xd00b_e000;

/// Where a [`FakePlatform`]'s chunks come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FakeMemory {
    /// Zeroed host heap memory: `gpu_va` is the host address, `host_ptr` is set.
    #[default]
    Host,
    /// Device addresses from [`UNMAPPED_BASE`] up, aligned as asked, with a 4096-byte gap
    /// between chunks; `host_ptr` is `None` and no memory backs them.
    Unmapped,
}

/// What a live fake queue was created with: the `Send` parts of its [`QueueRequest`].
#[derive(Clone, Copy, Debug)]
pub struct QueueRecord {
    /// The node asked for.
    pub node: NodeId,
    /// The kind asked for.
    pub kind: QueueKind,
    /// Device address of the ring.
    pub ring: GpuVa,
    /// Address of the ring's host pointer (`ring_host` as an integer).
    pub ring_host_addr: u64,
    /// Ring size, bytes.
    pub ring_size_bytes: u64,
    /// Device address of the `amd_queue_t`.
    pub amd_queue: GpuVa,
    /// Device address of `amd_queue_t.read_dispatch_id`.
    pub read_pointer: GpuVa,
    /// Device address of `amd_queue_t.write_dispatch_id`.
    pub write_pointer: GpuVa,
    /// The error callback registered at creation.
    pub on_error: Option<QueueErrorCallback>,
}

/// One node of a fake topology: its properties, memory banks, caches and links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeNode {
    /// The node's properties (`*_count` fields should match the vectors).
    pub properties: NodeProperties,
    /// Memory banks.
    pub banks: Vec<MemoryBank>,
    /// Caches.
    pub caches: Vec<Cache>,
    /// IO and P2P links.
    pub links: Vec<IoLink>,
}

/// The topology a [`FakePlatform`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeTopology {
    /// Nodes, index = node id.
    pub nodes: Vec<FakeNode>,
}

fn name<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

impl FakeTopology {
    /// One 64-core CPU node (node 0, 256 GiB of system memory) and one AMD Instinct MI210
    /// (node 1, gfx90a): the GPU's properties are those amdkfd reports for an MI210 in
    /// `shared/testdata/kfd-topology/mi210-8gpu-xgmi-pcie-topology` (node 2 there) — 416 SIMDs,
    /// 4 per CU (104 CUs), wave 64, 64 KiB LDS, `gfx_target_version` 90010, device id 0x740f —
    /// except that it is alone (no XGMI hive, one PCIe link to the CPU); 64 GiB of VRAM and an
    /// 8 MiB L2 with 128-byte lines.
    pub fn mi210() -> FakeTopology {
        let cpu = NodeProperties {
            node_id: 0,
            name: name("AMD EPYC (fake)"),
            marketing_name: name("AMD EPYC (fake)"),
            cpu_cores_count: 64,
            mem_banks_count: 1,
            io_links_count: 1,
            max_engine_clk_ccompute: 2450,
            vendor_id: 0x1002,
            num_xcc: 1,
            ..NodeProperties::default()
        };
        let gpu = NodeProperties {
            node_id: 1,
            gpu_id: 0x4a2b,
            name: name("gfx90a"),
            marketing_name: name("AMD Instinct MI210"),
            simd_count: 416,
            mem_banks_count: 1,
            caches_count: 1,
            io_links_count: 1,
            simd_id_base: 2_147_487_744,
            max_waves_per_simd: 8,
            lds_size_in_kb: 64,
            num_gws: 64,
            wave_front_size: 64,
            array_count: 8,
            simd_arrays_per_engine: 1,
            cu_per_simd_array: 14,
            simd_per_cu: 4,
            max_slots_scratch_cu: 32,
            gfx_target_version: 90010,
            vendor_id: 0x1002,
            device_id: 0x740f,
            location_id: 25344,
            drm_render_minor: 128,
            num_sdma_engines: 2,
            num_sdma_xgmi_engines: 3,
            num_sdma_queues_per_engine: 8,
            num_cp_queues: 24,
            max_engine_clk_fcompute: 1700,
            max_engine_clk_ccompute: 2450,
            fw_version: 92,
            capability: 746_037_888,
            debug_prop: 470,
            sdma_fw_version: 9,
            num_xcc: 1,
            ..NodeProperties::default()
        };
        let link = |from: u32, to: u32| IoLink {
            link_type: 2, // HSA_IOLINKTYPE_PCIEXPRESS
            node_from: from,
            node_to: to,
            weight: 20,
            min_bandwidth: 0,
            max_bandwidth: 0,
            flags: 0,
            rec_sdma_eng_id_mask: 0,
            p2p: false,
        };
        FakeTopology {
            nodes: std::vec![
                FakeNode {
                    properties: cpu,
                    banks: std::vec![MemoryBank {
                        heap_type: HeapType::System,
                        size_bytes: 256 << 30,
                        flags: 0,
                        width_bits: 64,
                        mem_clk_max_mhz: 3200,
                    }],
                    caches: Vec::new(),
                    links: std::vec![link(0, 1)],
                },
                FakeNode {
                    properties: gpu,
                    banks: std::vec![MemoryBank {
                        heap_type: HeapType::FrameBufferPrivate,
                        size_bytes: 64 << 30,
                        flags: 0,
                        width_bits: 4096,
                        mem_clk_max_mhz: 1600,
                    }],
                    caches: std::vec![Cache {
                        processor_id_low: 2_147_487_744,
                        level: 2,
                        size_kib: 8192,
                        cache_line_size_bytes: 128,
                        cache_type: 1 | 8, // data | HSACU
                    }],
                    links: std::vec![link(1, 0)],
                },
            ],
        }
    }
}

impl Default for FakeTopology {
    fn default() -> FakeTopology {
        FakeTopology::mi210()
    }
}

struct Chunk {
    /// The host allocation and its layout; `None` for an unmapped chunk.
    host: Option<(NonNull<u8>, Layout)>,
    size_bytes: u64,
    handle: u64,
}

// SAFETY: a Chunk owns its allocation; it is only reached through the platform's Mutex and
// pointers derived from it are handed out under the Platform contract.
unsafe impl Send for Chunk {}

impl Chunk {
    fn to_memory_chunk(&self, va: u64) -> MemoryChunk {
        MemoryChunk {
            gpu_va: GpuVa(va),
            host_ptr: self.host.map(|(p, _)| p),
            size_bytes: self.size_bytes,
            handle: self.handle,
        }
    }
}

struct EventState {
    live: bool,
    signaled: bool,
}

/// A [`Platform`] in host memory that records what the core asks of it; its queues are
/// recorded, never run. See the module docs.
pub struct FakePlatform {
    topology: FakeTopology,
    epoch: Instant,
    /// [`Platform::timestamp_frequency_hz`] (1 GHz unless set).
    timestamp_hz: u64,
    /// [`Platform::process_barrier`] (none unless set).
    process_barrier: Option<fn()>,
    memory_limit_bytes: u64,
    memory: FakeMemory,
    chunks: Mutex<BTreeMap<u64, Chunk>>,
    allocated_bytes: AtomicU64,
    next_handle: AtomicU64,
    /// Next free unmapped address (only changed under the `chunks` lock).
    next_unmapped: AtomicU64,
    allocations: AtomicU64,
    last_request: Mutex<Option<MemoryRequest>>,
    maps: Mutex<Vec<(GpuVa, Vec<NodeId>)>>,
    queues: Mutex<BTreeMap<u32, QueueRecord>>,
    next_queue: AtomicU32,
    doorbells: Mutex<Vec<(QueueId, u64)>>,
    events: Mutex<Vec<EventState>>,
    event_cv: Condvar,
    event_signals: AtomicU64,
    event_waits: AtomicU64,
    mailboxes: Box<[AtomicU64]>,
}

impl core::fmt::Debug for FakePlatform {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FakePlatform")
            .field("nodes", &self.topology.nodes.len())
            .field(
                "allocated_bytes",
                &self.allocated_bytes.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding a lock leaves nothing the fake cannot go on with.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for FakePlatform {
    fn default() -> FakePlatform {
        FakePlatform::new()
    }
}

impl FakePlatform {
    /// A fake with the default topology ([`FakeTopology::mi210`]) and 1 GiB of memory.
    pub fn new() -> FakePlatform {
        FakePlatform::with_topology(FakeTopology::mi210())
    }

    /// A fake with `topology` and 1 GiB of memory.
    pub fn with_topology(topology: FakeTopology) -> FakePlatform {
        FakePlatform {
            topology,
            epoch: Instant::now(),
            timestamp_hz: 1_000_000_000,
            process_barrier: None,
            memory_limit_bytes: 1 << 30,
            memory: FakeMemory::Host,
            chunks: Mutex::new(BTreeMap::new()),
            allocated_bytes: AtomicU64::new(0),
            next_handle: AtomicU64::new(1),
            next_unmapped: AtomicU64::new(UNMAPPED_BASE),
            allocations: AtomicU64::new(0),
            last_request: Mutex::new(None),
            maps: Mutex::new(Vec::new()),
            queues: Mutex::new(BTreeMap::new()),
            next_queue: AtomicU32::new(1),
            doorbells: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
            event_cv: Condvar::new(),
            event_signals: AtomicU64::new(0),
            event_waits: AtomicU64::new(0),
            mailboxes: (0..EVENT_CAPACITY).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Sets the timestamp clock's frequency, Hz (default 1 GHz: ticks are ns); the ticks
    /// still count real time since the fake was made. A real GPU's is 100 MHz. 0 plays a
    /// platform that does not know its frequency: it reports 0 and counts ns.
    pub fn set_timestamp_frequency_hz(&mut self, hz: u64) {
        self.timestamp_hz = hz;
    }

    /// Sets what [`Platform::process_barrier`] answers (default `None`): a fake has no
    /// process-wide barrier of its own, so a test that gives it one (a function that counts
    /// its calls, or issues a `SeqCst` fence, which on one thread orders as much) sees which
    /// side of the signal protocol uses it.
    pub fn set_process_barrier(&mut self, barrier: Option<fn()>) {
        self.process_barrier = barrier;
    }

    /// Sets the total bytes of live chunks beyond which `allocate_memory` fails with
    /// `OUT_OF_RESOURCES`.
    pub fn set_memory_limit_bytes(&mut self, limit_bytes: u64) {
        self.memory_limit_bytes = limit_bytes;
    }

    /// Sets where later chunks come from ([`FakeMemory::Host`] by default).
    pub fn set_memory(&mut self, memory: FakeMemory) {
        self.memory = memory;
    }

    /// The live chunks, in device-address order.
    pub fn live_chunks(&self) -> Vec<MemoryChunk> {
        lock(&self.chunks)
            .iter()
            .map(|(&va, c)| c.to_memory_chunk(va))
            .collect()
    }

    /// How many `allocate_memory` calls succeeded.
    pub fn allocation_count(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// The request of the last `allocate_memory` call (failed ones included).
    pub fn last_memory_request(&self) -> Option<MemoryRequest> {
        *lock(&self.last_request)
    }

    /// Every successful `map_memory` call: the chunk's device address and the nodes, in call
    /// order.
    pub fn map_calls(&self) -> Vec<(GpuVa, Vec<NodeId>)> {
        lock(&self.maps).clone()
    }

    /// Every `ring_doorbell` call (queue, write index), in call order.
    pub fn doorbell_writes(&self) -> Vec<(QueueId, u64)> {
        lock(&self.doorbells).clone()
    }

    /// What live queue `queue` was created with; `None` for an unknown or destroyed queue.
    pub fn queue_request(&self, queue: QueueId) -> Option<QueueRecord> {
        lock(&self.queues).get(&queue.0).copied()
    }

    /// Number of live queues.
    pub fn live_queue_count(&self) -> usize {
        lock(&self.queues).len()
    }

    /// Number of live events.
    pub fn live_event_count(&self) -> usize {
        lock(&self.events).iter().filter(|e| e.live).count()
    }

    /// How many times [`Platform::signal_event`] was called (failed calls and the packet
    /// processor's calls included).
    pub fn signal_event_count(&self) -> u64 {
        self.event_signals.load(Ordering::Relaxed)
    }

    /// How many times [`Platform::wait_event`] was called (failed calls included).
    pub fn wait_event_count(&self) -> u64 {
        self.event_waits.load(Ordering::Relaxed)
    }

    /// Device (and host) address of `event`'s mailbox slot; `None` for an id outside the
    /// event page.
    pub fn mailbox_address(&self, event: EventId) -> Option<GpuVa> {
        let index = event.0 as usize;
        (index < EVENT_CAPACITY).then(|| GpuVa(self.slot_address(index)))
    }

    /// Bytes of live chunks.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes.load(Ordering::Relaxed)
    }

    /// Host pointer for `len_bytes` at device address `va`, derived from the live chunk that
    /// holds the whole range; `None` for a null address or a range outside every live chunk.
    pub fn host_ptr(&self, va: GpuVa, len_bytes: u64) -> Option<NonNull<u8>> {
        if va.is_null() {
            return None;
        }
        let chunks = lock(&self.chunks);
        let (&start, chunk) = chunks.range(..=va.0).next_back()?;
        let (base, _) = chunk.host?;
        let offset = va.0 - start;
        if offset.checked_add(len_bytes)? > chunk.size_bytes {
            return None;
        }
        // In bounds of the chunk's allocation (checked above), so the pointer keeps the
        // chunk's provenance.
        NonNull::new(base.as_ptr().wrapping_add(offset as usize))
    }

    /// Reads the 64-bit little-endian value at `va` (any alignment); `None` outside live
    /// memory.
    pub fn read_u64(&self, va: GpuVa) -> Option<u64> {
        let p = self.host_ptr(va, 8)?;
        let mut out = [0u8; 8];
        // SAFETY: `host_ptr` checked that 8 bytes at `p` lie in a live chunk; the chunk is
        // plain host memory, and a racing write is the user's own data race on their buffer,
        // which the HSA memory model leaves to them, as on hardware.
        unsafe { core::ptr::copy_nonoverlapping(p.as_ptr(), out.as_mut_ptr(), 8) };
        Some(u64::from_le_bytes(out))
    }

    /// The value in `event`'s mailbox slot (the last event id written there, Acquire); `None`
    /// for an id outside the event page.
    pub fn mailbox_value(&self, event: EventId) -> Option<u64> {
        let slot = self.mailboxes.get(event.0 as usize)?;
        Some(slot.load(Ordering::Acquire))
    }

    /// The event-page slot at `mailbox` — an address [`Platform::create_event`] handed out —
    /// for a test that plays the device and writes an event id there (as a packet processor
    /// does when it completes a packet whose completion signal has an event); `None` for any
    /// other address (outside the page, or not 8-byte aligned).
    pub fn mailbox_at(&self, mailbox: GpuVa) -> Option<&AtomicU64> {
        let offset = mailbox.0.checked_sub(self.slot_address(0))?;
        if offset % 8 != 0 {
            return None;
        }
        self.mailboxes.get(usize::try_from(offset / 8).ok()?)
    }

    fn event_index(&self, event: EventId) -> Result<usize> {
        let i = event.0 as usize;
        let events = lock(&self.events);
        match events.get(i) {
            Some(e) if e.live && i != 0 => Ok(i),
            _ => crate::bail!(
                Status::InvalidArgument,
                "event id {} is not a live event",
                event.0
            ),
        }
    }

    fn slot_address(&self, index: usize) -> u64 {
        core::ptr::from_ref(&self.mailboxes[index]) as usize as u64
    }

    /// Whether `chunk` is a live chunk of this platform (same address, handle and size).
    fn is_live(&self, chunk: &MemoryChunk) -> bool {
        lock(&self.chunks)
            .get(&chunk.gpu_va.0)
            .is_some_and(|c| c.handle == chunk.handle && c.size_bytes == chunk.size_bytes)
    }
}

impl Drop for FakePlatform {
    fn drop(&mut self) {
        let chunks = core::mem::take(&mut *lock(&self.chunks));
        for (_, c) in chunks {
            if let Some((base, layout)) = c.host {
                // SAFETY: the chunk came from `alloc_zeroed` with this layout and was not
                // freed (it was still in the table); nothing borrows the platform any more, and
                // its queues never touched memory.
                unsafe { std::alloc::dealloc(base.as_ptr(), layout) };
            }
        }
    }
}

fn node_index(p: &FakePlatform, index: usize) -> Result<&FakeNode> {
    p.topology.nodes.get(index).ok_or_else(|| {
        crate::error!(
            Status::InvalidIndex,
            "node index {index} is out of range (the fake has {} nodes)",
            p.topology.nodes.len()
        )
    })
}

impl TopologySource for FakePlatform {
    fn device_name(&self) -> &str {
        "fake"
    }

    fn node_count(&self) -> usize {
        self.topology.nodes.len()
    }

    fn node(&self, index: usize) -> Result<NodeProperties> {
        Ok(node_index(self, index)?.properties.clone())
    }

    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>> {
        Ok(node_index(self, index)?.banks.get(bank).copied())
    }

    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>> {
        Ok(node_index(self, index)?.caches.get(cache).copied())
    }

    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>> {
        Ok(node_index(self, index)?.links.get(link).copied())
    }

    /// amdkfd's gfx9 apertures on each GPU node (a node with SIMDs), as the fake's KFD would
    /// report them; `None` for a CPU node or an unknown one.
    fn segment_apertures(&self, node: NodeId) -> Option<SegmentApertures> {
        self.topology
            .nodes
            .iter()
            .find(|n| n.properties.node_id == node.get())
            .filter(|n| n.properties.simd_count > 0)
            .map(|_| SegmentApertures::AMDKFD_GFX9)
    }
}

// SAFETY: chunks come from `alloc_zeroed` with the asked size and alignment, are tracked until
// freed and never overlap (the allocator's guarantee); the device address is the host address.
// Queues read nothing at all (they are records). Every method synchronises through Mutexes or
// atomics, so the platform is Sync.
unsafe impl Platform for FakePlatform {
    /// The queue id: the fake has no doorbell to store to; ringing records the write.
    type Doorbell = QueueId;

    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk> {
        *lock(&self.last_request) = Some(*request);
        node_index(self, request.node.0 as usize)
            .map_err(|e| e.with_status(Status::InvalidArgument))?;
        if request.size_bytes == 0 || request.size_bytes % 4096 != 0 {
            crate::bail!(
                Status::InvalidArgument,
                "size_bytes {} is not a non-zero multiple of 4096",
                request.size_bytes
            );
        }
        if !request.align_bytes.is_power_of_two() || request.align_bytes < 4096 {
            crate::bail!(
                Status::InvalidArgument,
                "align_bytes {} is not a power of two >= 4096",
                request.align_bytes
            );
        }
        let used = self.allocated_bytes.load(Ordering::Relaxed);
        if used.saturating_add(request.size_bytes) > self.memory_limit_bytes {
            crate::bail!(
                Status::OutOfResources,
                "{} bytes requested with {used} of {} bytes in use",
                request.size_bytes,
                self.memory_limit_bytes
            );
        }
        if self.memory == FakeMemory::Unmapped {
            let mut chunks = lock(&self.chunks);
            let va = self
                .next_unmapped
                .load(Ordering::Relaxed)
                .next_multiple_of(request.align_bytes);
            // A gap between chunks, so that running off the end of one is not inside the next.
            self.next_unmapped
                .store(va + request.size_bytes + 4096, Ordering::Relaxed);
            let chunk = Chunk {
                host: None,
                size_bytes: request.size_bytes,
                handle: self.next_handle.fetch_add(1, Ordering::Relaxed),
            };
            let out = chunk.to_memory_chunk(va);
            chunks.insert(va, chunk);
            self.allocated_bytes
                .fetch_add(request.size_bytes, Ordering::Relaxed);
            self.allocations.fetch_add(1, Ordering::Relaxed);
            return Ok(out);
        }
        let layout = usize::try_from(request.size_bytes)
            .ok()
            .zip(usize::try_from(request.align_bytes).ok())
            .and_then(|(s, a)| Layout::from_size_align(s, a).ok())
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidArgument,
                    "size {} / align {} is not a valid host layout",
                    request.size_bytes,
                    request.align_bytes
                )
            })?;
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(raw).ok_or_else(|| {
            crate::error!(
                Status::OutOfResources,
                "host allocation of {} bytes failed",
                request.size_bytes
            )
        })?;
        let va = raw as usize as u64;
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.allocated_bytes
            .fetch_add(request.size_bytes, Ordering::Relaxed);
        lock(&self.chunks).insert(
            va,
            Chunk {
                host: Some((base, layout)),
                size_bytes: request.size_bytes,
                handle,
            },
        );
        self.allocations.fetch_add(1, Ordering::Relaxed);
        Ok(MemoryChunk {
            gpu_va: GpuVa(va),
            host_ptr: Some(base),
            size_bytes: request.size_bytes,
            handle,
        })
    }

    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<()> {
        let mut chunks = lock(&self.chunks);
        match chunks.get(&chunk.gpu_va.0) {
            Some(c) if c.handle == chunk.handle && c.size_bytes == chunk.size_bytes => {}
            _ => crate::bail!(
                Status::InvalidArgument,
                "chunk at {:#x} (handle {}, {} bytes) is not a live chunk of this platform",
                chunk.gpu_va.0,
                chunk.handle,
                chunk.size_bytes
            ),
        }
        let Some(c) = chunks.remove(&chunk.gpu_va.0) else {
            return Ok(());
        };
        drop(chunks);
        self.allocated_bytes
            .fetch_sub(c.size_bytes, Ordering::Relaxed);
        if let Some((base, layout)) = c.host {
            // SAFETY: the chunk came from `alloc_zeroed` with this layout and was live (in the
            // table); the caller guarantees nothing uses it any more.
            unsafe { std::alloc::dealloc(base.as_ptr(), layout) };
        }
        Ok(())
    }

    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<()> {
        for n in nodes {
            node_index(self, n.0 as usize).map_err(|e| e.with_status(Status::InvalidArgument))?;
        }
        if !self.is_live(chunk) {
            crate::bail!(
                Status::InvalidArgument,
                "chunk at {:#x} (handle {}, {} bytes) is not live",
                chunk.gpu_va.0,
                chunk.handle,
                chunk.size_bytes
            );
        }
        lock(&self.maps).push((chunk.gpu_va, nodes.to_vec()));
        Ok(())
    }

    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue<QueueId>> {
        node_index(self, request.node.0 as usize)
            .map_err(|e| e.with_status(Status::InvalidQueueCreation))?;
        let size_packets = request.ring_size_bytes / 64;
        if request.ring_size_bytes % 64 != 0
            || !size_packets.is_power_of_two()
            || size_packets > u64::from(u32::MAX / 2)
        {
            crate::bail!(
                Status::InvalidQueueCreation,
                "ring_size_bytes {} is not 64 times a power of two",
                request.ring_size_bytes
            );
        }
        let ring_ok = self
            .host_ptr(request.ring, request.ring_size_bytes)
            .is_some_and(|p| p == request.ring_host);
        let queue_ok = self
            .host_ptr(request.amd_queue, 256)
            .is_some_and(|p| p == request.amd_queue_host);
        if !ring_ok || !queue_ok || request.ring.0 % 64 != 0 || request.amd_queue.0 % 64 != 0 {
            crate::bail!(
                Status::InvalidQueueCreation,
                "ring {:#x} or amd_queue {:#x} is not 64-byte aligned memory of a live chunk",
                request.ring.0,
                request.amd_queue.0
            );
        }
        let mut queues = lock(&self.queues);
        if queues.values().any(|q| q.ring == request.ring) {
            crate::bail!(
                Status::InvalidQueueCreation,
                "ring {:#x} already has a queue",
                request.ring.0
            );
        }
        let id = QueueId(self.next_queue.fetch_add(1, Ordering::Relaxed));
        let record = QueueRecord {
            node: request.node,
            kind: request.kind,
            ring: request.ring,
            ring_host_addr: request.ring_host.as_ptr().addr() as u64,
            ring_size_bytes: request.ring_size_bytes,
            amd_queue: request.amd_queue,
            read_pointer: request.read_pointer,
            write_pointer: request.write_pointer,
            on_error: request.on_error,
        };
        queues.insert(id.0, record);
        Ok(HwQueue {
            id,
            doorbell_address: FAKE_DOORBELL_BASE + 8 * u64::from(id.0),
            doorbell: id,
        })
    }

    /// Records the write ([`FakePlatform::doorbell_writes`]), under a lock, unlike a real
    /// platform's ring; nothing consumes the ring.
    fn ring_doorbell(&self, doorbell: &QueueId, write_index: u64) {
        lock(&self.doorbells).push((*doorbell, write_index));
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<()> {
        match lock(&self.queues).remove(&queue.0) {
            Some(_) => Ok(()),
            None => crate::bail!(
                Status::InvalidQueue,
                "queue id {} is not a live queue",
                queue.0
            ),
        }
    }

    fn create_event(&self) -> Result<Event> {
        let mut events = lock(&self.events);
        if events.is_empty() {
            // Id 0 is never handed out (it reads as "no event").
            events.push(EventState {
                live: false,
                signaled: false,
            });
        }
        let index = match events.iter().skip(1).position(|e| !e.live) {
            Some(i) => i + 1,
            None if events.len() < EVENT_CAPACITY => {
                events.push(EventState {
                    live: false,
                    signaled: false,
                });
                events.len() - 1
            }
            None => crate::bail!(
                Status::OutOfResources,
                "all {} fake events are in use",
                EVENT_CAPACITY - 1
            ),
        };
        events[index] = EventState {
            live: true,
            signaled: false,
        };
        self.mailboxes[index].store(0, Ordering::Relaxed);
        Ok(Event {
            id: EventId(index as u32),
            mailbox: GpuVa(self.slot_address(index)),
        })
    }

    fn destroy_event(&self, event: EventId) -> Result<()> {
        let i = self.event_index(event)?;
        lock(&self.events)[i].live = false;
        self.event_cv.notify_all();
        Ok(())
    }

    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome> {
        self.event_waits.fetch_add(1, Ordering::Relaxed);
        let i = self.event_index(event)?;
        let deadline = Instant::now().checked_add(Duration::from_nanos(timeout_ns));
        let mut events = lock(&self.events);
        loop {
            let e = &mut events[i];
            if e.signaled {
                e.signaled = false;
                return Ok(WaitOutcome::Signaled);
            }
            if !e.live {
                return Ok(WaitOutcome::Signaled);
            }
            events = match deadline {
                None => self
                    .event_cv
                    .wait(events)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(WaitOutcome::TimedOut);
                    }
                    self.event_cv
                        .wait_timeout(events, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    fn process_barrier(&self) -> Option<fn()> {
        self.process_barrier
    }

    fn signal_event(&self, event: EventId) -> Result<()> {
        self.event_signals.fetch_add(1, Ordering::Relaxed);
        let i = self.event_index(event)?;
        lock(&self.events)[i].signaled = true;
        self.event_cv.notify_all();
        Ok(())
    }

    fn timestamp_ticks(&self) -> u64 {
        let ns = self.epoch.elapsed().as_nanos();
        // 0 Hz (a platform that does not know its clock): the ticks are ns.
        let hz = match self.timestamp_hz {
            0 => 1_000_000_000,
            hz => hz,
        };
        u64::try_from(ns * u128::from(hz) / 1_000_000_000).unwrap_or(u64::MAX)
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.timestamp_hz
    }
}

/// A [`Platform`] or [`TopologySource`] method that a [`FaultInjector`] can make fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultMethod {
    /// [`TopologySource::node`].
    Node,
    /// [`TopologySource::memory_bank`].
    MemoryBank,
    /// [`TopologySource::cache`].
    Cache,
    /// [`TopologySource::io_link`].
    IoLink,
    /// [`Platform::allocate_memory`].
    AllocateMemory,
    /// [`Platform::free_memory`] (the chunk then stays allocated in the inner platform).
    FreeMemory,
    /// [`Platform::map_memory`].
    MapMemory,
    /// [`Platform::create_queue`].
    CreateQueue,
    /// [`Platform::destroy_queue`].
    DestroyQueue,
    /// [`Platform::create_event`].
    CreateEvent,
    /// [`Platform::destroy_event`].
    DestroyEvent,
    /// [`Platform::wait_event`].
    WaitEvent,
    /// [`Platform::signal_event`].
    SignalEvent,
    /// [`Platform::relax`]: counted ([`FaultInjector::calls`]), never failed (it returns
    /// nothing).
    Relax,
    /// [`Platform::ring_doorbell`]: counted and holdable ([`FaultInjector::hold_next`]),
    /// never failed (it returns nothing; a planned failure is ignored).
    RingDoorbell,
}

/// A wrong-but-successful answer a [`FaultInjector`] can give once, to test how core copes
/// with a platform that breaks its promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tamper {
    /// The next successful [`Platform::allocate_memory`] returns its chunk with `host_ptr`
    /// `None` (the memory stays allocated in the inner platform until freed).
    HideHostPtr,
    /// The next successful [`Platform::create_event`] returns a mailbox address 4 bytes past
    /// the real one (not 8-byte aligned).
    MisalignMailbox,
    /// The next successful [`Platform::allocate_memory`] reports its chunk 4096 bytes shorter
    /// than the inner platform made it, or half as long when it is 4096 bytes or less (a
    /// platform that gave less than asked). Freeing the short chunk through the wrapper frees
    /// the whole one.
    ShortChunk,
    /// The next successful [`Platform::allocate_memory`] returns its chunk with `host_ptr`
    /// 32 bytes past the real mapping (host memory not aligned as asked; freeing goes by the
    /// GPU address, as before).
    MisalignHostPtr,
}

/// A call of the [`FaultInjector`] held at its start ([`FaultInjector::hold_next`]) until the
/// test releases it: lets a test act while a platform call is in flight, deterministically.
#[derive(Debug, Default)]
pub struct Hold {
    /// (the call arrived, the test released it)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Hold {
    /// Blocks until the held call has arrived (is waiting inside the wrapper).
    pub fn wait_arrival(&self) {
        let mut s = lock(&self.state);
        while !s.0 {
            s = self
                .changed
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Lets the held call go on (to the inner platform).
    pub fn release(&self) {
        lock(&self.state).1 = true;
        self.changed.notify_all();
    }

    /// The held call's side: announce arrival, wait for the release.
    fn arrive_and_wait(&self) {
        let mut s = lock(&self.state);
        s.0 = true;
        self.changed.notify_all();
        while !s.1 {
            s = self
                .changed
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// Wraps a [`Platform`] and makes the n-th call of a chosen method fail with a chosen status
/// (without calling the inner platform), or tampers with the next result of a call
/// ([`Tamper`]); all other calls pass through.
#[derive(Debug)]
pub struct FaultInjector<P> {
    inner: P,
    plan: Mutex<Vec<(FaultMethod, u32, Status)>>,
    calls: Mutex<HashMap<FaultMethod, u32>>,
    tampers: Mutex<Vec<Tamper>>,
    holds: Mutex<Vec<(FaultMethod, std::sync::Arc<Hold>)>>,
    /// Chunks reported short ([`Tamper::ShortChunk`]): address -> real size.
    shortened: Mutex<HashMap<u64, u64>>,
    /// Every event wait asked of this wrapper, in order ([`FaultInjector::event_waits`]).
    event_waits: Mutex<Vec<EventWait>>,
    /// Every memory request, in order ([`FaultInjector::memory_requests`]).
    memory_requests: Mutex<Vec<MemoryRequest>>,
}

/// One event wait a [`FaultInjector`] was asked for: the events, in the order given, and the
/// timeout, ns, as the caller passed them (before the inner platform shortens a multi-event
/// wait).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventWait {
    /// [`Platform::wait_event`]'s one event, or [`Platform::wait_any_event`]'s list.
    pub events: Vec<EventId>,
    /// The timeout asked for, ns (`u64::MAX`: none).
    pub timeout_ns: u64,
    /// Whether it was [`Platform::wait_any_event`].
    pub any: bool,
}

impl<P: Platform> FaultInjector<P> {
    /// Wraps `inner` with no faults planned.
    pub fn new(inner: P) -> FaultInjector<P> {
        FaultInjector {
            inner,
            plan: Mutex::new(Vec::new()),
            calls: Mutex::new(HashMap::new()),
            tampers: Mutex::new(Vec::new()),
            holds: Mutex::new(Vec::new()),
            shortened: Mutex::new(HashMap::new()),
            event_waits: Mutex::new(Vec::new()),
            memory_requests: Mutex::new(Vec::new()),
        }
    }

    /// Holds the next call of `method` at its start, before the inner platform sees it,
    /// until the returned [`Hold`] is released (from another thread than the call's).
    pub fn hold_next(&self, method: FaultMethod) -> std::sync::Arc<Hold> {
        let hold = std::sync::Arc::new(Hold::default());
        lock(&self.holds).push((method, hold.clone()));
        hold
    }

    /// Makes the next call of `method` fail with `status` (the next after those counted by
    /// [`calls`](Self::calls) so far).
    pub fn fail_next(&self, method: FaultMethod, status: Status) {
        self.fail_nth(method, self.calls(method) + 1, status);
    }

    /// Tampers with the next successful result that `tamper` names.
    pub fn tamper_next(&self, tamper: Tamper) {
        lock(&self.tampers).push(tamper);
    }

    /// Takes a pending `tamper`; true when there was one.
    fn take_tamper(&self, tamper: Tamper) -> bool {
        let mut tampers = lock(&self.tampers);
        match tampers.iter().position(|&t| t == tamper) {
            Some(i) => {
                tampers.remove(i);
                true
            }
            None => false,
        }
    }

    /// Makes call number `nth` (1-based, counted from the wrapper's creation) of `method`
    /// fail with `status`.
    pub fn fail_nth(&self, method: FaultMethod, nth: u32, status: Status) {
        lock(&self.plan).push((method, nth, status));
    }

    /// Every event wait asked of the wrapper so far ([`Platform::wait_event`] and
    /// [`Platform::wait_any_event`] calls, failed ones included), oldest first.
    pub fn event_waits(&self) -> Vec<EventWait> {
        lock(&self.event_waits).clone()
    }

    /// Every [`Platform::allocate_memory`] request made through the wrapper so far (failed
    /// ones included), oldest first.
    pub fn memory_requests(&self) -> Vec<MemoryRequest> {
        lock(&self.memory_requests).clone()
    }

    /// How many times `method` was called (failed calls included).
    pub fn calls(&self, method: FaultMethod) -> u32 {
        lock(&self.calls).get(&method).copied().unwrap_or(0)
    }

    /// The wrapped platform.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn check(&self, method: FaultMethod) -> Result<()> {
        let n = self.arrive(method);
        let mut plan = lock(&self.plan);
        if let Some(i) = plan.iter().position(|&(m, k, _)| m == method && k == n) {
            let (_, _, status) = plan.remove(i);
            crate::bail!(status, "injected fault: call {n} of {method:?}");
        }
        Ok(())
    }

    /// A call of `method` arrives: waits out a pending [`hold_next`](Self::hold_next), then
    /// counts the call; returns its 1-based number.
    fn arrive(&self, method: FaultMethod) -> u32 {
        let hold = {
            let mut holds = lock(&self.holds);
            let i = holds.iter().position(|(m, _)| *m == method);
            i.map(|i| holds.remove(i).1)
        };
        if let Some(hold) = hold {
            hold.arrive_and_wait();
        }
        let mut calls = lock(&self.calls);
        let c = calls.entry(method).or_insert(0);
        *c += 1;
        *c
    }
}

impl<P: Platform> TopologySource for FaultInjector<P> {
    fn device_name(&self) -> &str {
        self.inner.device_name()
    }
    fn node_count(&self) -> usize {
        self.inner.node_count()
    }
    fn node(&self, index: usize) -> Result<NodeProperties> {
        self.check(FaultMethod::Node)?;
        self.inner.node(index)
    }
    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>> {
        self.check(FaultMethod::MemoryBank)?;
        self.inner.memory_bank(index, bank)
    }
    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>> {
        self.check(FaultMethod::Cache)?;
        self.inner.cache(index, cache)
    }
    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>> {
        self.check(FaultMethod::IoLink)?;
        self.inner.io_link(index, link)
    }

    fn xnack_enabled(&self) -> bool {
        self.inner.xnack_enabled()
    }

    fn segment_apertures(&self, node: NodeId) -> Option<SegmentApertures> {
        self.inner.segment_apertures(node)
    }
}

// SAFETY: every method either fails before touching anything or delegates to `inner`, whose
// implementation guarantees carry over unchanged, except where a test asked for a `Tamper`:
// a hidden host pointer only withholds access, a short chunk reports less memory than the
// inner platform gave (a subset of it), and a misaligned mailbox is an address core must check
// before it uses it (which is what the tamper tests).
unsafe impl<P: Platform> Platform for FaultInjector<P> {
    type Doorbell = P::Doorbell;

    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk> {
        lock(&self.memory_requests).push(*request);
        self.check(FaultMethod::AllocateMemory)?;
        let mut chunk = self.inner.allocate_memory(request)?;
        if self.take_tamper(Tamper::HideHostPtr) {
            chunk.host_ptr = None;
        }
        if self.take_tamper(Tamper::MisalignHostPtr) {
            chunk.host_ptr = chunk.host_ptr.map(|p| {
                // A pointer 32 bytes into the same mapping (chunks are at least 4096 bytes).
                NonNull::new(p.as_ptr().wrapping_add(32)).unwrap_or(p)
            });
        }
        if chunk.size_bytes > 1 && self.take_tamper(Tamper::ShortChunk) {
            lock(&self.shortened).insert(chunk.gpu_va.0, chunk.size_bytes);
            chunk.size_bytes -= 4096.min(chunk.size_bytes / 2);
        }
        Ok(chunk)
    }
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<()> {
        self.check(FaultMethod::FreeMemory)?;
        let real = lock(&self.shortened).get(&chunk.gpu_va.0).copied();
        let whole = real.map(|size_bytes| MemoryChunk {
            size_bytes,
            ..*chunk
        });
        // SAFETY: the caller's guarantees are passed on unchanged; a chunk reported short is
        // handed back whole, as the inner platform made it.
        let r = unsafe { self.inner.free_memory(whole.as_ref().unwrap_or(chunk)) };
        if r.is_ok() && real.is_some() {
            lock(&self.shortened).remove(&chunk.gpu_va.0);
        }
        r
    }
    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<()> {
        self.check(FaultMethod::MapMemory)?;
        self.inner.map_memory(chunk, nodes)
    }
    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue<P::Doorbell>> {
        self.check(FaultMethod::CreateQueue)?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.create_queue(request) }
    }
    fn ring_doorbell(&self, doorbell: &P::Doorbell, write_index: u64) {
        self.arrive(FaultMethod::RingDoorbell);
        self.inner.ring_doorbell(doorbell, write_index)
    }
    fn destroy_queue(&self, queue: QueueId) -> Result<()> {
        self.check(FaultMethod::DestroyQueue)?;
        self.inner.destroy_queue(queue)
    }
    fn create_event(&self) -> Result<Event> {
        self.check(FaultMethod::CreateEvent)?;
        let mut event = self.inner.create_event()?;
        if self.take_tamper(Tamper::MisalignMailbox) {
            event.mailbox = GpuVa(event.mailbox.0 + 4);
        }
        Ok(event)
    }
    fn destroy_event(&self, event: EventId) -> Result<()> {
        self.check(FaultMethod::DestroyEvent)?;
        self.inner.destroy_event(event)
    }
    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome> {
        lock(&self.event_waits).push(EventWait {
            events: std::vec![event],
            timeout_ns,
            any: false,
        });
        self.check(FaultMethod::WaitEvent)?;
        self.inner.wait_event(event, timeout_ns)
    }
    fn wait_any_event(&self, events: &[EventId], timeout_ns: u64) -> Result<WaitOutcome> {
        lock(&self.event_waits).push(EventWait {
            events: events.to_vec(),
            timeout_ns,
            any: true,
        });
        self.check(FaultMethod::WaitEvent)?;
        self.inner.wait_any_event(events, timeout_ns)
    }
    fn signal_event(&self, event: EventId) -> Result<()> {
        self.check(FaultMethod::SignalEvent)?;
        self.inner.signal_event(event)
    }
    fn timestamp_ticks(&self) -> u64 {
        self.inner.timestamp_ticks()
    }
    fn process_barrier(&self) -> Option<fn()> {
        self.inner.process_barrier()
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.inner.timestamp_frequency_hz()
    }

    fn wait_spin_ns(&self) -> u64 {
        self.inner.wait_spin_ns()
    }

    fn relax(&self, ns: u64) {
        *lock(&self.calls).entry(FaultMethod::Relax).or_insert(0) += 1;
        self.inner.relax(ns)
    }

    /// The inner platform's capabilities, SDMA queues through this wrapper (their creation
    /// counts and fails as [`FaultMethod::CreateQueue`]).
    fn capabilities(&self) -> Capabilities<'_, P::Doorbell> {
        let inner = self.inner.capabilities();
        Capabilities {
            sdma: inner.sdma.map(|_| self as &dyn SdmaQueues<P::Doorbell>),
            ..inner
        }
    }
}

// SAFETY: creation fails before touching anything or delegates to the inner platform's SDMA
// queues, whose guarantees carry over unchanged.
unsafe impl<P: Platform> SdmaQueues<P::Doorbell> for FaultInjector<P> {
    unsafe fn create_sdma_queue(
        &self,
        request: &crate::platform::SdmaQueueRequest,
    ) -> Result<HwQueue<P::Doorbell>> {
        self.check(FaultMethod::CreateQueue)?;
        let Some(sdma) = self.inner.capabilities().sdma else {
            crate::bail!(
                Status::InvalidQueueCreation,
                "node {}: the {} platform has no SDMA engine",
                request.node.0,
                self.inner.device_name()
            );
        };
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { sdma.create_sdma_queue(request) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{MemoryFlags, MemoryKind};
    use std::string::ToString;

    fn request(node: u32, size_bytes: u64, align_bytes: u64) -> MemoryRequest {
        MemoryRequest {
            node: NodeId(node),
            kind: MemoryKind::DeviceLocal,
            size_bytes,
            align_bytes,
            flags: MemoryFlags::empty(),
        }
    }

    /// The fake keeps the trait's default: none of the optional capabilities (no SDMA
    /// queues, no host-memory registration, no sharing, no memory-fault reports), and the
    /// fault injector over it has none either.
    #[test]
    fn the_fake_has_no_optional_capability() {
        let p = FakePlatform::new();
        let c = p.capabilities();
        assert!(c.sdma.is_none());
        assert!(c.host_memory.is_none());
        assert!(c.sharing.is_none());
        assert!(c.memory_faults.is_none());
        let f = FaultInjector::new(FakePlatform::new());
        assert_eq!(
            std::format!("{:?}", f.capabilities()),
            "Capabilities { sdma: false, host_memory: false, sharing: false, memory_faults: false, virtual_ranges: false }"
        );
    }

    #[test]
    fn unmapped_chunks_are_aligned_spaced_and_have_no_host_memory() {
        let mut p = FakePlatform::new();
        p.set_memory(FakeMemory::Unmapped);
        let a = p.allocate_memory(&request(1, 8192, 4096)).unwrap();
        assert_eq!(a.gpu_va, GpuVa(UNMAPPED_BASE));
        assert_eq!(a.host_ptr, None);
        let b = p.allocate_memory(&request(1, 4096, 1 << 16)).unwrap();
        // After a's end plus the 4096-byte gap, rounded up to 64 KiB.
        assert_eq!(b.gpu_va, GpuVa(UNMAPPED_BASE + 0x1_0000));
        assert_eq!(p.host_ptr(a.gpu_va, 1), None);
        assert_eq!(p.allocated_bytes(), 12288);
        assert_eq!(p.allocation_count(), 2);
        assert_eq!(p.last_memory_request(), Some(request(1, 4096, 1 << 16)));
        assert_eq!(p.live_chunks(), [a, b]);
        p.map_memory(&b, &[NodeId(0), NodeId(1)]).unwrap();
        assert_eq!(p.map_calls(), [(b.gpu_va, std::vec![NodeId(0), NodeId(1)])]);
        let e = p.map_memory(&b, &[NodeId(2)]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        // SAFETY: nothing uses the chunk.
        unsafe { p.free_memory(&a).unwrap() };
        let e = p.map_memory(&a, &[NodeId(0)]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("not live"), "{e}");
        assert_eq!(p.map_calls().len(), 1, "failed maps are not recorded");
        assert_eq!(p.live_chunks(), [b]);
        assert_eq!(p.allocated_bytes(), 4096);
    }

    #[test]
    fn queues_are_recorded_and_their_rings_left_alone() {
        let p = FakePlatform::new();
        let ring = p.allocate_memory(&request(1, 4096, 4096)).unwrap();
        let amdq = p.allocate_memory(&request(1, 4096, 4096)).unwrap();
        // A KERNEL_DISPATCH header word in slot 0: a packet processor would consume it.
        let header = ring.host_ptr.unwrap().cast::<u32>();
        // SAFETY: the ring chunk is live, zeroed host memory, 4-aligned, owned by this test.
        unsafe { header.write(0x0001_1402) };
        let req = QueueRequest {
            node: NodeId(1),
            kind: QueueKind::ComputeAql,
            ring: ring.gpu_va,
            ring_host: ring.host_ptr.unwrap(),
            ring_size_bytes: 4096,
            amd_queue: amdq.gpu_va,
            amd_queue_host: amdq.host_ptr.unwrap(),
            read_pointer: GpuVa(amdq.gpu_va.0 + 128),
            write_pointer: GpuVa(amdq.gpu_va.0 + 56),
            on_error: None,
        };
        // SAFETY: ring and amd_queue memory stay live until the queue is destroyed below.
        let q = unsafe { p.create_queue(&req).unwrap() };
        assert_eq!(
            q.doorbell_address,
            FAKE_DOORBELL_BASE + 8 * u64::from(q.id.0)
        );
        assert_eq!(q.doorbell, q.id);
        p.ring_doorbell(&q.doorbell, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { header.read() }, 0x0001_1402, "slot 0 not consumed");
        assert_eq!(p.doorbell_writes(), [(q.id, 0)]);
        // A second queue over the same ring is refused; so is a ring outside live memory.
        // SAFETY: refused before anything is recorded.
        let e = unsafe { p.create_queue(&req) }.unwrap_err();
        assert_eq!(e.status(), Status::InvalidQueueCreation);
        assert_eq!(
            e.detail(),
            std::format!("ring {:#x} already has a queue", ring.gpu_va.0)
        );
        let outside = QueueRequest {
            ring: GpuVa(UNMAPPED_BASE),
            ..req
        };
        // SAFETY: as above.
        let e = unsafe { p.create_queue(&outside) }.unwrap_err();
        assert_eq!(e.status(), Status::InvalidQueueCreation);
        assert!(
            e.detail()
                .contains("not 64-byte aligned memory of a live chunk"),
            "{e}"
        );
        let rec = p.queue_request(q.id).unwrap();
        assert_eq!(rec.ring, ring.gpu_va);
        assert_eq!(rec.ring_host_addr, ring.gpu_va.0);
        assert_eq!(rec.read_pointer, GpuVa(amdq.gpu_va.0 + 128));
        assert_eq!(rec.kind, QueueKind::ComputeAql);
        assert_eq!(p.live_queue_count(), 1);
        p.destroy_queue(q.id).unwrap();
        assert_eq!(p.live_queue_count(), 0);
        assert!(p.queue_request(q.id).is_none());
        let e = p.destroy_queue(q.id).unwrap_err();
        assert_eq!(e.status(), Status::InvalidQueue);
        assert_eq!(
            e.detail(),
            std::format!("queue id {} is not a live queue", q.id.0)
        );
    }

    #[test]
    fn events_count_signals_and_waits() {
        let p = FakePlatform::new();
        let e = p.create_event().unwrap();
        assert_eq!(p.mailbox_address(e.id), Some(e.mailbox));
        assert_eq!(e.mailbox.0 % 8, 0);
        assert_eq!(p.mailbox_address(EventId(EVENT_CAPACITY as u32)), None);
        assert_eq!(p.live_event_count(), 1);
        p.signal_event(e.id).unwrap();
        assert_eq!(p.wait_event(e.id, 0).unwrap(), WaitOutcome::Signaled);
        assert_eq!(p.wait_event(e.id, 1000).unwrap(), WaitOutcome::TimedOut);
        p.destroy_event(e.id).unwrap();
        assert_eq!(
            p.signal_event(e.id).unwrap_err().status(),
            Status::InvalidArgument
        );
        assert_eq!((p.signal_event_count(), p.wait_event_count()), (2, 2));
        assert_eq!(p.live_event_count(), 0);
    }

    #[test]
    fn mailbox_at_finds_the_slots_of_the_event_page_only() {
        let p = FakePlatform::new();
        let e = p.create_event().unwrap();
        let slot = p.mailbox_at(e.mailbox).unwrap();
        slot.store(u64::from(e.id.0), Ordering::Release);
        assert_eq!(p.mailbox_value(e.id), Some(u64::from(e.id.0)));
        let last = p
            .mailbox_address(EventId(EVENT_CAPACITY as u32 - 1))
            .unwrap();
        assert!(p.mailbox_at(last).is_some());
        for wrong in [
            GpuVa(e.mailbox.0 + 4),
            GpuVa(last.0 + 8),
            GpuVa(p.mailbox_address(EventId(0)).unwrap().0 - 8),
            GpuVa(0),
        ] {
            assert!(p.mailbox_at(wrong).is_none(), "{wrong:?}");
        }
    }

    #[test]
    fn fault_injector_fails_next_and_tampers_once() {
        let f = FaultInjector::new(FakePlatform::new());
        let ok = f.allocate_memory(&request(0, 4096, 4096)).unwrap();
        f.fail_next(FaultMethod::AllocateMemory, Status::OutOfResources);
        let e = f.allocate_memory(&request(0, 4096, 4096)).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(
            e.detail().to_string().contains("call 2 of AllocateMemory"),
            "{e}"
        );
        f.tamper_next(Tamper::HideHostPtr);
        let hidden = f.allocate_memory(&request(0, 4096, 4096)).unwrap();
        assert_eq!(hidden.host_ptr, None);
        assert!(f.inner().host_ptr(hidden.gpu_va, 4096).is_some());
        assert!(f
            .allocate_memory(&request(0, 4096, 4096))
            .unwrap()
            .host_ptr
            .is_some());
        // SAFETY: nothing uses the chunks.
        unsafe {
            f.free_memory(&hidden).unwrap();
            f.free_memory(&ok).unwrap();
        }
        assert_eq!(f.inner().live_chunks().len(), 1);
        f.tamper_next(Tamper::MisalignMailbox);
        let e = f.create_event().unwrap();
        assert_eq!(e.mailbox.0, f.inner().mailbox_address(e.id).unwrap().0 + 4);
        assert_eq!(f.create_event().unwrap().mailbox.0 % 8, 0);
    }
}
