//! Issue 10, core hot paths against their physical baselines, measured side by side in one run:
//!
//! - B1: submit one packet on a single-producer AQL queue (reserve, write, publish, doorbell)
//!   with the consumer on the other core, vs `crossbeam::queue::ArrayQueue` push of a 64-byte
//!   item with the same consumer. Per packet.
//! - B2: 2 producers, one per core, on a multi-producer queue vs ArrayQueue with 2 producers,
//!   in batches that fill the ring, drained between batches (see [`b2_batches`]). Per packet.
//! - B3: signal ping-pong between two threads in active wait vs a raw `AtomicI64` spin
//!   ping-pong. Per round trip.
//! - B5: memory pool free + allocate with 10,000 live blocks of random sizes 64..=4160 bytes,
//!   64-byte aligned (fixed seed), vs the system allocator and `linked_list_allocator::Heap`.
//!   Per free + allocate pair.
//!
//! The queues run on [`MmioPlatform`]: the fake platform's memory and events, but a doorbell
//! that is one Release store to a doorbell word (as an MMIO doorbell is), so the producer path
//! makes no syscall and the consumer runs on its own thread over [`RingConsumer`].
//!
//! Run: `cargo bench -p hsa-core --features fake --bench hot_paths`; `BENCHMARKS.md` is made
//! from criterion's output by `scripts/bench_report.py`.
#![allow(missing_docs)] // criterion_group! makes an undocumented pub fn
#![allow(unsafe_code)] // a Platform impl and the consumer role of a ring, as a packet processor

use std::alloc::Layout;
use std::hint::{black_box, spin_loop};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use crossbeam::queue::ArrayQueue;
use crossbeam::utils::CachePadded;
use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use hsa_core::abi::queue::QueueType;
use hsa_core::memory::{GlobalFlags, MemoryPool, PoolInfo};
use hsa_core::packet::EncodedPacket;
use hsa_core::packet_processor::RingConsumer;
use hsa_core::platform::fake::FakePlatform;
use hsa_core::platform::{
    Cache, Event, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryRequest, NodeProperties,
    Platform, QueueRequest, TopologySource, WaitOutcome,
};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, StoreOrder, WaitState};
use hsa_core::{Error, EventId, GpuVa, NodeId, QueueId};

/// The fake's GPU node.
const GPU: NodeId = NodeId(1);
/// The fake's CPU node.
const CPU: NodeId = NodeId(0);
/// Ring size for B1/B2 and ArrayQueue capacity of the baselines, packets.
const QUEUE_PACKETS: u32 = 256;
/// Most queues an [`MmioPlatform`] makes.
const MAX_QUEUES: usize = 8;

/// The fake platform with MMIO-like doorbells: `ring_doorbell` is one Release store.
struct MmioPlatform {
    fake: FakePlatform,
    doorbells: Box<[CachePadded<AtomicU64>; MAX_QUEUES]>,
    next_queue: AtomicU32,
}

impl MmioPlatform {
    fn new() -> Self {
        MmioPlatform {
            fake: FakePlatform::new(),
            doorbells: Box::new(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0)))),
            next_queue: AtomicU32::new(0),
        }
    }
}

impl TopologySource for MmioPlatform {
    fn device_name(&self) -> &str {
        "mmio-bench"
    }
    fn node_count(&self) -> usize {
        self.fake.node_count()
    }
    fn node(&self, index: usize) -> Result<NodeProperties, Error> {
        self.fake.node(index)
    }
    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>, Error> {
        self.fake.memory_bank(index, bank)
    }
    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>, Error> {
        self.fake.cache(index, cache)
    }
    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>, Error> {
        self.fake.io_link(index, link)
    }
}

// SAFETY: memory, topology and events are the fake's, which upholds the contract; queues here
// only hand out a doorbell word and never read the ring themselves (the bench's consumer
// thread does, through RingConsumer).
unsafe impl Platform for MmioPlatform {
    /// The doorbell word's index in `doorbells`.
    type Doorbell = usize;
    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        self.fake.allocate_memory(request)
    }
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        // SAFETY: forwarded with the caller's guarantee.
        unsafe { self.fake.free_memory(chunk) }
    }
    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<(), Error> {
        self.fake.map_memory(chunk, nodes)
    }
    unsafe fn create_queue(&self, _request: &QueueRequest) -> Result<HwQueue<usize>, Error> {
        let i = self.next_queue.fetch_add(1, Ordering::Relaxed) as usize;
        let Some(word) = self.doorbells.get(i) else {
            hsa_core::bail!(
                hsa_core::Status::OutOfResources,
                "MmioPlatform has {MAX_QUEUES} doorbells"
            );
        };
        Ok(HwQueue {
            id: QueueId(i as u32),
            doorbell_address: &**word as *const AtomicU64 as u64,
            doorbell: i,
        })
    }
    fn ring_doorbell(&self, doorbell: &usize, write_index: u64) {
        if let Some(word) = self.doorbells.get(*doorbell) {
            word.store(write_index, Ordering::Release);
        }
    }
    fn destroy_queue(&self, _queue: QueueId) -> Result<(), Error> {
        Ok(())
    }
    fn create_event(&self) -> Result<Event, Error> {
        self.fake.create_event()
    }
    fn destroy_event(&self, event: EventId) -> Result<(), Error> {
        self.fake.destroy_event(event)
    }
    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome, Error> {
        self.fake.wait_event(event, timeout_ns)
    }
    fn signal_event(&self, event: EventId) -> Result<(), Error> {
        self.fake.signal_event(event)
    }
    fn timestamp_ticks(&self) -> u64 {
        self.fake.timestamp_ticks()
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        self.fake.timestamp_frequency_hz()
    }
}

/// Pins the calling thread to `cpu` (the bench thread to 0, its peer to 1), so two threads
/// that wait for each other never share a core's time slices. Ignored where not allowed.
fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu % rustix::thread::CpuSet::MAX_CPU);
    let _ = rustix::thread::sched_setaffinity(None, &set);
}

/// A kernel-dispatch packet (barrier bit, system scopes, 1 dimension) with a marker byte.
fn packet() -> EncodedPacket {
    let mut bytes = [0u8; 64];
    bytes[0] = 1; // INVALID header until published
    bytes[8..12].copy_from_slice(&7u32.to_le_bytes());
    bytes[63] = 0xab;
    EncodedPacket {
        bytes,
        header_word: 0x0001_1402,
    }
}

fn queue_config(queue_type: QueueType) -> QueueConfig {
    let mut cfg = QueueConfig::new(GPU, QUEUE_PACKETS, 64, 1 << 17);
    cfg.queue_type = queue_type as u32;
    cfg
}

/// Runs `consume` (one attempt; returns whether it got an item) on another thread until
/// `body` returns.
fn with_consumer<C, B, R>(mut consume: C, body: B) -> R
where
    C: FnMut() -> bool + Send,
    B: FnOnce() -> R,
{
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            while !stop.load(Ordering::Relaxed) {
                if !consume() {
                    spin_loop();
                }
            }
        });
        let r = body();
        stop.store(true, Ordering::Relaxed);
        r
    })
}

/// The consumer of an AQL ring: copy the packet out, free the slot.
fn ring_consumer(ring: hsa_core::queue::ring::Ring) -> impl FnMut() -> bool + Send {
    // SAFETY: the bench's only consumer of this ring; the platform's queue never reads it.
    let mut consumer = unsafe { RingConsumer::new(ring) };
    move || match consumer.peek() {
        Some(p) => {
            black_box(p);
            consumer.release();
            true
        }
        None => false,
    }
}

fn array_consumer(q: &ArrayQueue<[u8; 64]>) -> impl FnMut() -> bool + Send + '_ {
    move || match q.pop() {
        Some(p) => {
            black_box(p);
            true
        }
        None => false,
    }
}

fn array_push(q: &ArrayQueue<[u8; 64]>, item: [u8; 64]) {
    let mut item = item;
    while let Err(back) = q.push(item) {
        item = back;
        spin_loop();
    }
}

/// Short runs: 30 samples over ~3 s after a 0.5 s warm-up per bench.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
}

fn b1_submit_spsc(c: &mut Criterion) {
    pin(0);
    let plat = MmioPlatform::new();
    let queue = AqlQueue::create(&plat, &queue_config(QueueType::Single)).expect("queue");
    let pkt = packet();
    let mut g = c.benchmark_group("B1_submit_spsc");
    // SAFETY: the ring is used only inside this function, before `queue` is dropped.
    let ring = unsafe { queue.ring() };
    with_consumer(ring_consumer(ring), || {
        g.bench_function("hsa_aql_queue", |b| {
            b.iter(|| {
                let mut r = queue.reserve(1).expect("reserve");
                let i = r.write_next(&pkt).expect("write");
                queue.ring_doorbell(i).expect("doorbell");
            })
        });
    });
    let aq = ArrayQueue::new(QUEUE_PACKETS as usize);
    with_consumer(array_consumer(&aq), || {
        g.bench_function("crossbeam_array_queue", |b| {
            b.iter(|| array_push(&aq, black_box(pkt.bytes)))
        });
    });
    g.finish();
}

/// Packets each of B2's two producers submits per batch: together they fill the ring (and
/// the ArrayQueue) exactly, so no producer ever waits for room.
const B2_PER_PRODUCER: u64 = QUEUE_PACKETS as u64 / 2;
/// The value of B2's start word that ends its second producer.
const B2_STOP: u64 = u64::MAX;

/// Sets B2's start word to [`B2_STOP`] when dropped, also while a panic unwinds, so the second
/// producer ends and the thread scope can return.
struct StopOnDrop<'a>(&'a AtomicU64);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(B2_STOP, Ordering::Release);
    }
}

/// B2's measurement of one queue, in batches: this thread (CPU 0) and a second producer
/// (CPU 1) each `produce` [`B2_PER_PRODUCER`] packets, started together through a shared
/// start word; the batch's time is from the start to the moment both are done. Then, not
/// timed, this thread `drain`s the batch (it must consume exactly that many packets) as the
/// consumer. Criterion's iterations are packets: a sample runs `ceil(iters / batch)` batches
/// and its time is the median batch's, scaled to `iters` packets.
///
/// Only the two producers run while time is taken, one per core. The bench used to start
/// the second producer per sample from this thread, so it inherited this thread's pinning to
/// CPU 0: both producers time-shared one core beside a spinning consumer, never contended,
/// and a producer preempted between taking a slot and publishing it (or holding the doorbell
/// lock) stalled the ring for a scheduler time slice (milliseconds), so the figure depended
/// on how many such preemptions a sample caught (107 ns to 1 us). A consumer spinning during
/// the batch would bring the same back: three spinning threads on two cores. The median batch bounds what preemptions by other processes
/// (this thread and the second producer spin on their cores) can do to a sample; a cost of
/// the queue's protocol is in every batch and stays in the median.
fn b2_batches<F, D>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    produce: F,
    mut drain: D,
) where
    F: Fn(u64) + Sync,
    D: FnMut(u64),
{
    let start = CachePadded::new(AtomicU64::new(0));
    let done = CachePadded::new(AtomicU64::new(0));
    thread::scope(|s| {
        let _stop = StopOnDrop(&start);
        let peer = s.spawn(|| {
            pin(1);
            let mut last = 0;
            loop {
                let batch = loop {
                    let v = start.load(Ordering::Acquire);
                    if v != last {
                        break v;
                    }
                    spin_loop();
                };
                if batch == B2_STOP {
                    return;
                }
                produce(B2_PER_PRODUCER);
                done.store(batch, Ordering::Release);
                last = batch;
            }
        });
        pin(0);
        let mut batch = 0u64;
        let mut times: Vec<Duration> = Vec::new();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per_batch = 2 * B2_PER_PRODUCER;
                let batches = iters.div_ceil(per_batch).max(1);
                times.clear();
                for _ in 0..batches {
                    batch += 1;
                    let t = Instant::now();
                    start.store(batch, Ordering::Release);
                    produce(B2_PER_PRODUCER);
                    while done.load(Ordering::Acquire) != batch {
                        assert!(!peer.is_finished(), "B2's second producer ended (panicked)");
                        spin_loop();
                    }
                    times.push(t.elapsed());
                    drain(per_batch);
                }
                // The sample's typical batch: a batch in which the OS preempted a producer
                // (a time slice, ~1000x a batch) moves the median only when it is more than
                // half of the sample's batches.
                times.sort_unstable();
                times[times.len() / 2].mul_f64(iters as f64 / per_batch as f64)
            })
        });
    });
}

fn b2_submit_mpsc(c: &mut Criterion) {
    let plat = MmioPlatform::new();
    let queue = AqlQueue::create(&plat, &queue_config(QueueType::Multi)).expect("queue");
    let pkt = packet();
    let mut g = c.benchmark_group("B2_submit_2_producers");
    // SAFETY: as in B1; this thread is the ring's only consumer, between batches.
    let mut consumer = unsafe { RingConsumer::new(queue.ring()) };
    b2_batches(
        &mut g,
        "hsa_aql_queue",
        |n| {
            for _ in 0..n {
                let mut r = queue.reserve(1).expect("reserve");
                let i = r.write_next(&pkt).expect("write");
                queue.ring_doorbell(i).expect("doorbell");
            }
        },
        |n| {
            for k in 0..n {
                let p = consumer
                    .peek()
                    .unwrap_or_else(|| panic!("B2: packet {k} of a batch of {n} not published"));
                black_box(p);
                consumer.release();
            }
        },
    );
    let aq = ArrayQueue::new(QUEUE_PACKETS as usize);
    b2_batches(
        &mut g,
        "crossbeam_array_queue",
        |n| {
            for _ in 0..n {
                array_push(&aq, black_box(pkt.bytes));
            }
        },
        |n| {
            for k in 0..n {
                let p = aq
                    .pop()
                    .unwrap_or_else(|| panic!("B2: item {k} of a batch of {n} not pushed"));
                black_box(p);
            }
        },
    );
    g.finish();
}

fn b3_signal_ping_pong(c: &mut Criterion) {
    let plat = MmioPlatform::new();
    let pool = SignalPool::new(&plat, CPU);
    let ping = pool.create(0).expect("signal");
    let pong = pool.create(0).expect("signal");
    let mut g = c.benchmark_group("B3_signal_ping_pong_active");
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut last = 0;
            loop {
                let v = ping.wait(
                    SignalCondition::Ne,
                    last,
                    u64::MAX,
                    WaitState::Active,
                    LoadOrder::Acquire,
                );
                if v < 0 {
                    return;
                }
                pong.store(v, StoreOrder::Release);
                last = v;
            }
        });
        let mut i = 0i64;
        g.bench_function("hsa_signal", |b| {
            b.iter(|| {
                i += 1;
                ping.store(i, StoreOrder::Release);
                pong.wait(
                    SignalCondition::Eq,
                    i,
                    u64::MAX,
                    WaitState::Active,
                    LoadOrder::Acquire,
                );
            })
        });
        ping.store(-1, StoreOrder::Release);
    });

    let ping = CachePadded::new(AtomicI64::new(0));
    let pong = CachePadded::new(AtomicI64::new(0));
    thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut last = 0;
            loop {
                let v = loop {
                    let v = ping.load(Ordering::Acquire);
                    if v != last {
                        break v;
                    }
                    spin_loop();
                };
                if v < 0 {
                    return;
                }
                pong.store(v, Ordering::Release);
                last = v;
            }
        });
        let mut i = 0i64;
        g.bench_function("atomic_i64_spin", |b| {
            b.iter(|| {
                i += 1;
                ping.store(i, Ordering::Release);
                while pong.load(Ordering::Acquire) != i {
                    spin_loop();
                }
            })
        });
        ping.store(-1, Ordering::Release);
    });
    g.finish();
}

/// Live blocks in B5.
const LIVE_BLOCKS: usize = 10_000;
/// The fixed seed of B5's sizes and victims.
const SEED: u64 = 0x4853_4152_5400_0010;

/// A size in 64..=4160 bytes.
fn random_size(rng: &mut ChaCha8Rng) -> usize {
    64 + (rng.next_u32() % (4160 - 64 + 1)) as usize
}

/// Drives one allocator through B5: `LIVE_BLOCKS` allocations, then per iteration free a
/// random live block and allocate a new random size in its place. `alloc` returns an address
/// and `free` takes it back with the size it was allocated with.
fn b5_run<A, F>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut alloc: A,
    mut free: F,
) where
    A: FnMut(usize) -> u64,
    F: FnMut(u64, usize),
{
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut live: Vec<(u64, usize)> = (0..LIVE_BLOCKS)
        .map(|_| {
            let size = random_size(&mut rng);
            (alloc(size), size)
        })
        .collect();
    g.bench_function(BenchmarkId::from_parameter(name), |b| {
        b.iter(|| {
            let k = rng.next_u32() as usize % LIVE_BLOCKS;
            let (addr, size) = live[k];
            free(addr, size);
            let size = random_size(&mut rng);
            live[k] = (black_box(alloc(size)), size);
        })
    });
    for (addr, size) in live {
        free(addr, size);
    }
}

fn b5_pool_free_allocate(c: &mut Criterion) {
    let mut g = c.benchmark_group("B5_free_allocate_10k_live");

    let fake = FakePlatform::new();
    let mut info = PoolInfo::new(CPU, GlobalFlags::FINE_GRAINED, 1 << 30);
    info.alloc_granule_bytes = 64;
    info.alloc_rec_granule_bytes = 64;
    info.alloc_alignment_bytes = 64;
    let pool: MemoryPool<&FakePlatform> = MemoryPool::new(&fake, info).expect("pool");
    b5_run(
        &mut g,
        "hsa_memory_pool",
        |size| pool.allocate(size as u64).expect("allocate").va.0,
        |addr, _| pool.free(GpuVa(addr)).expect("free"),
    );
    drop(pool);

    b5_run(
        &mut g,
        "system_allocator",
        |size| {
            let layout = Layout::from_size_align(size, 64).expect("layout");
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            assert!(!p.is_null(), "system allocator out of memory");
            p as u64
        },
        |addr, size| {
            let layout = Layout::from_size_align(size, 64).expect("layout");
            // SAFETY: `addr` came from `alloc` with this layout and is freed once.
            unsafe { std::alloc::dealloc(addr as *mut u8, layout) }
        },
    );

    // 10,000 blocks of 2112 bytes on average: 21 MB live; room for fragmentation.
    let heap_bytes = 96 << 20;
    let mut arena = vec![0u8; heap_bytes];
    // SAFETY: `arena` outlives the heap (dropped at the end of this function, after it) and
    // nothing else touches it.
    let heap = std::cell::RefCell::new(unsafe {
        linked_list_allocator::Heap::new(arena.as_mut_ptr(), heap_bytes)
    });
    g.sample_size(10);
    b5_run(
        &mut g,
        "linked_list_allocator",
        |size| {
            let layout = Layout::from_size_align(size, 64).expect("layout");
            heap.borrow_mut()
                .allocate_first_fit(layout)
                .expect("linked_list_allocator out of memory")
                .as_ptr() as u64
        },
        |addr, size| {
            let layout = Layout::from_size_align(size, 64).expect("layout");
            let p = NonNull::new(addr as *mut u8).expect("non-null");
            // SAFETY: `p` came from `allocate_first_fit` with this layout, freed once.
            unsafe { heap.borrow_mut().deallocate(p, layout) }
        },
    );
    g.finish();
    // `heap` (declared after `arena`) is dropped before the arena it points into.
}

criterion_group! {
    name = hot_paths;
    // The macro makes a `pub fn` without docs.
    config = config();
    targets = b1_submit_spsc, b2_submit_mpsc, b3_signal_ping_pong, b5_pool_free_allocate
}
criterion_main!(hot_paths);
