//! The device-pool allocator never touches the memory it manages: its chunks here are a
//! `PROT_NONE` mapping (as coarse-grained VRAM the CPU cannot reach), and thousands of
//! allocate/free operations run over them without one fault. A single read or write of the
//! managed memory by the allocator would kill this test with SIGSEGV.

use std::ptr::NonNull;
use std::sync::Mutex;

use hsa_core::addr::{EventId, GpuVa, NodeId, QueueId};
use hsa_core::memory::{GlobalFlags, MemoryPool, PoolInfo};
use hsa_core::platform::{
    Cache, Event, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest,
    NodeProperties, Platform, QueueRequest, TopologySource, WaitOutcome,
};
use hsa_core::{error, Error, Status};
use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};

const REGION_BYTES: usize = 64 << 20;

/// A platform whose only memory is one `PROT_NONE` region, handed out in chunks with no host
/// pointer.
struct ProtNonePlatform {
    base: NonNull<u8>,
    next: Mutex<usize>,
    freed: Mutex<Vec<(u64, u64)>>,
}

// SAFETY: the platform never dereferences `base`; it only hands out addresses inside the
// region, each chunk once, and the Mutexes make its bookkeeping thread-safe.
unsafe impl Send for ProtNonePlatform {}
// SAFETY: as for Send.
unsafe impl Sync for ProtNonePlatform {}

impl ProtNonePlatform {
    fn new() -> ProtNonePlatform {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses; nothing else
        // refers to it.
        let ptr = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                REGION_BYTES,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .expect("mmap PROT_NONE");
        ProtNonePlatform {
            base: NonNull::new(ptr.cast()).unwrap(),
            next: Mutex::new(0),
            freed: Mutex::new(Vec::new()),
        }
    }
}

impl Drop for ProtNonePlatform {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unused by anyone now.
        let _ = unsafe { munmap(self.base.as_ptr().cast(), REGION_BYTES) };
    }
}

impl TopologySource for ProtNonePlatform {
    fn device_name(&self) -> &str {
        "prot-none"
    }
    fn node_count(&self) -> usize {
        1
    }
    fn node(&self, _index: usize) -> Result<NodeProperties, Error> {
        Ok(NodeProperties {
            simd_count: 4,
            simd_per_cu: 4,
            wave_front_size: 64,
            ..NodeProperties::default()
        })
    }
    fn memory_bank(&self, _i: usize, _b: usize) -> Result<Option<MemoryBank>, Error> {
        Ok(None)
    }
    fn cache(&self, _i: usize, _c: usize) -> Result<Option<Cache>, Error> {
        Ok(None)
    }
    fn io_link(&self, _i: usize, _l: usize) -> Result<Option<IoLink>, Error> {
        Ok(None)
    }
}

// SAFETY: chunks never overlap (a bump pointer over the region), are aligned as asked, stay
// valid until the platform drops; there are no queues.
unsafe impl Platform for ProtNonePlatform {
    /// No queues, so no doorbells.
    type Doorbell = ();
    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        let mut next = self.next.lock().unwrap();
        let align = request.align_bytes.max(4096) as usize;
        let start = next.div_ceil(align) * align;
        let end = start + request.size_bytes as usize;
        if end > REGION_BYTES {
            return Err(error!(Status::OutOfResources, "PROT_NONE region exhausted"));
        }
        *next = end;
        let gpu_va = GpuVa(self.base.as_ptr() as u64 + start as u64);
        Ok(MemoryChunk {
            gpu_va,
            host_ptr: None,
            size_bytes: request.size_bytes,
            handle: start as u64,
        })
    }
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        self.freed
            .lock()
            .unwrap()
            .push((chunk.gpu_va.0, chunk.size_bytes));
        Ok(())
    }
    fn map_memory(&self, _chunk: &MemoryChunk, _nodes: &[NodeId]) -> Result<(), Error> {
        Ok(())
    }
    unsafe fn create_queue(&self, _r: &QueueRequest) -> Result<HwQueue<()>, Error> {
        Err(error!(Status::OutOfResources, "no queues"))
    }
    fn ring_doorbell(&self, _q: &(), _i: u64) {}
    fn destroy_queue(&self, _q: QueueId) -> Result<(), Error> {
        Err(error!(Status::InvalidQueue, "no queues"))
    }
    fn create_event(&self) -> Result<Event, Error> {
        Err(error!(Status::OutOfResources, "no events"))
    }
    fn destroy_event(&self, _e: EventId) -> Result<(), Error> {
        Err(error!(Status::InvalidArgument, "no events"))
    }
    fn wait_event(&self, _e: EventId, _t: u64) -> Result<WaitOutcome, Error> {
        Err(error!(Status::InvalidArgument, "no events"))
    }
    fn signal_event(&self, _e: EventId) -> Result<(), Error> {
        Err(error!(Status::InvalidArgument, "no events"))
    }
    fn timestamp_ticks(&self) -> u64 {
        0
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
}

#[test]
fn device_pool_runs_thousands_of_operations_over_prot_none_memory() {
    let platform = ProtNonePlatform::new();
    let mut info = PoolInfo::new(NodeId(0), GlobalFlags::COARSE_GRAINED, REGION_BYTES as u64);
    info.memory_kind = MemoryKind::DeviceLocal;
    info.chunk_flags = MemoryFlags::empty();
    let pool: MemoryPool<&ProtNonePlatform> = MemoryPool::new(&platform, info).unwrap();
    let base = platform.base.as_ptr() as u64;
    let mut live: Vec<(GpuVa, u64)> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut ops = 0;
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if live.len() < 500 && seed % 3 != 0 {
            let size = 64 + seed % 65_536;
            let a = pool.allocate(size).unwrap();
            assert!(
                a.host_ptr.is_none(),
                "device-local memory has no host pointer"
            );
            assert!(
                a.va.0 >= base && a.va.0 + size <= base + REGION_BYTES as u64,
                "{:#x} outside the region",
                a.va.0
            );
            assert_eq!(a.va.0 % 4096, 0, "pool alignment");
            live.push((a.va, size));
        } else if !live.is_empty() {
            let (va, _) = live.swap_remove((seed % live.len() as u64) as usize);
            pool.free(va).unwrap();
        }
        ops += 1;
    }
    // Live blocks never overlap.
    live.sort();
    for w in live.windows(2) {
        assert!(
            w[0].0 .0 + w[0].1 <= w[1].0 .0,
            "{:?} overlaps {:?}",
            w[0],
            w[1]
        );
    }
    assert_eq!(ops, 20_000);
    assert_eq!(
        pool.free(GpuVa(base + 1)).unwrap_err().status(),
        Status::InvalidArgument
    );
}
