//! `LinuxPlatform` against a recording fake `KfdDriver`: the exact argument structs it sends
//! for each Platform call (flags, gpu ids, addresses, sizes), what it does with the replies,
//! and its errors. No hardware: the fake answers like amdkfd and backs mmaps with anonymous
//! memory at the requested address. Its memory and hardware-exception events block in
//! WAIT_EVENTS until the test fires them (with their exception data) or destroys them, as
//! amdkfd's do.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hsa_core::addr::{EventId, GpuVa, NodeId, QueueId};
use hsa_core::platform::{
    HostMemoryRegistration, MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, NodeProperties,
    Platform, QueueKind, QueueRequest, SdmaQueueRequest, SdmaQueues, TopologySource, WaitOutcome,
};
use hsa_core::Status;
use hsa_linux::device::monitor::MONITOR_SLICE_MS;
use hsa_linux::device::{
    queue_buffer_sizes, wait_timeout_ms, ContextSaveAreaHeader, LinuxPlatform, DOORBELL_PAGE_BYTES,
    EVENT_PAGE_BYTES,
};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use hsa_linux::topology::{Topology, TopologyNode};
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};
use zerocopy::{FromBytes, IntoBytes};

const GPU_ID: u32 = 0xa1b2;
const GPU_NODE: NodeId = NodeId(1);
const CPU_NODE: NodeId = NodeId(0);

#[derive(Default)]
struct Log {
    /// Every ioctl: request and the argument bytes as sent.
    calls: Vec<(u32, Vec<u8>)>,
    /// Every successful ioctl: request and the argument bytes after the reply.
    replies: Vec<(u32, Vec<u8>)>,
    /// gpu ids read from each MAP_MEMORY_TO_GPU / UNMAP array, in order.
    map_ids: Vec<(u32, u64, Vec<u32>)>,
    mmaps: Vec<(MapTarget, u64, usize, Option<usize>)>,
    /// Every mmap fails with this errno while set.
    fail_mmap: Option<Errno>,
}

/// An mmap of `/dev/kfd` at `offset` that stops until the test lets it go: it says so on
/// `entered`, then waits on `release`.
struct Gate {
    offset: u64,
    entered: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Receiver<()>,
}

/// A memory or hardware-exception event of the fake.
#[derive(Clone, Copy, Debug)]
struct ExceptionEvent {
    event_type: u32,
    signaled: bool,
    /// The exception data WAIT_EVENTS copies back when it fired.
    data: [u8; 32],
}

struct Fake {
    version: (u32, u32),
    gate: Mutex<Option<Gate>>,
    /// Memory and hardware-exception events by id (not logged: the monitor's waits on them
    /// run on their own schedule).
    exceptions: Mutex<HashMap<u32, ExceptionEvent>>,
    exception_cv: Condvar,
    fail: Mutex<HashMap<u32, Errno>>,
    wait_result: Mutex<u32>,
    log: Mutex<Log>,
    next: Mutex<u32>,
}

impl Fake {
    fn new(version: (u32, u32)) -> Arc<Fake> {
        Arc::new(Fake {
            version,
            gate: Mutex::new(None),
            exceptions: Mutex::new(HashMap::new()),
            exception_cv: Condvar::new(),
            fail: Mutex::new(HashMap::new()),
            wait_result: Mutex::new(KFD_IOC_WAIT_RESULT_COMPLETE),
            log: Mutex::new(Log::default()),
            next: Mutex::new(1),
        })
    }

    /// What amdkfd does on a GPU fault or reset: sets every event of `event_type` with
    /// `data`; how many there were.
    fn fire(&self, event_type: u32, data: &[u8]) -> usize {
        let mut ev = self.exceptions.lock().unwrap();
        let mut n = 0;
        for e in ev.values_mut().filter(|e| e.event_type == event_type) {
            e.signaled = true;
            e.data = [0; 32];
            e.data[..data.len()].copy_from_slice(data);
            n += 1;
        }
        drop(ev);
        self.exception_cv.notify_all();
        n
    }

    /// WAIT_EVENTS on exception events, as `kfd_wait_on_events`: until one fired (its data is
    /// copied into its entry, it resets), one is destroyed (`FAIL`, `EIO`) or the timeout.
    ///
    /// # Safety
    /// `a.events_ptr` points to `a.num_events` entries (KfdDriver::ioctl's contract).
    unsafe fn wait_exceptions(&self, a: &mut WaitEventsArgs) -> Result<(), Errno> {
        let entries = a.events_ptr as *mut EventData;
        let deadline = Instant::now() + Duration::from_millis(u64::from(a.timeout));
        let mut ev = self.exceptions.lock().unwrap();
        loop {
            let mut fired = false;
            for i in 0..a.num_events as usize {
                // SAFETY: in bounds of the caller's array (this function's contract).
                let entry = unsafe { &mut *entries.add(i) };
                let Some(e) = ev.get_mut(&entry.event_id) else {
                    a.wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                    return Err(Errno::IO);
                };
                if e.signaled {
                    e.signaled = false;
                    entry.union_data = e.data;
                    fired = true;
                }
            }
            if fired {
                a.wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                a.wait_result = KFD_IOC_WAIT_RESULT_TIMEOUT;
                return Ok(());
            }
            ev = self
                .exception_cv
                .wait_timeout(ev, deadline - now)
                .unwrap()
                .0;
        }
    }

    fn next(&self) -> u32 {
        let mut n = self.next.lock().unwrap();
        *n += 1;
        *n
    }

    fn calls<T: FromBytes>(&self, request: u32) -> Vec<T> {
        self.log
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|c| c.0 == request)
            .map(|c| T::read_from_bytes(&c.1).unwrap())
            .collect()
    }

    fn replies<T: FromBytes>(&self, request: u32) -> Vec<T> {
        self.log
            .lock()
            .unwrap()
            .replies
            .iter()
            .filter(|c| c.0 == request)
            .map(|c| T::read_from_bytes(&c.1).unwrap())
            .collect()
    }

    fn last<T: FromBytes>(&self, request: u32) -> T {
        self.calls::<T>(request).pop().expect("no such call")
    }

    fn count(&self, request: u32) -> usize {
        self.log
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|c| c.0 == request)
            .count()
    }

    /// The `n` gpu ids at `ptr`.
    ///
    /// # Safety
    /// `ptr` points to `n` readable u32s (KfdDriver::ioctl's contract for MAP/UNMAP).
    unsafe fn read_ids(ptr: u64, n: u32) -> Vec<u32> {
        (0..n as u64)
            .map(|i| {
                // SAFETY: in bounds of the caller's array of `n` ids (this function's contract).
                unsafe { std::ptr::read((ptr + 4 * i) as *const u32) }
            })
            .collect()
    }
}

fn reply<T: zerocopy::IntoBytes + zerocopy::Immutable>(arg: &mut [u8], v: &T) {
    arg.copy_from_slice(v.as_bytes());
}

// The fake dereferences the argument's pointers directly (it does not meet the trait's "an
// unmapped pointer is EFAULT" rule): it is driven only by LinuxPlatform, through the typed
// wrappers, which pass live buffers.
impl KfdDriver for Fake {
    fn name(&self) -> &str {
        "fake"
    }

    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if request == AMDKFD_IOC_WAIT_EVENTS {
            let mut a = WaitEventsArgs::read_from_bytes(arg).unwrap();
            // SAFETY: events_ptr points to num_events live entries (the caller's contract).
            let first = unsafe { std::ptr::read(a.events_ptr as *const EventData) };
            if self
                .exceptions
                .lock()
                .unwrap()
                .contains_key(&first.event_id)
            {
                // SAFETY: as above.
                let r = unsafe { self.wait_exceptions(&mut a) };
                reply(arg, &a);
                return r;
            }
        }
        self.log.lock().unwrap().calls.push((request, arg.to_vec()));
        if let Some(&e) = self.fail.lock().unwrap().get(&request) {
            return Err(e);
        }
        match request {
            AMDKFD_IOC_GET_VERSION => reply(
                arg,
                &GetVersionArgs {
                    major_version: self.version.0,
                    minor_version: self.version.1,
                },
            ),
            AMDKFD_IOC_GET_PROCESS_APERTURES_NEW => {
                let mut a = GetProcessAperturesNewArgs::read_from_bytes(arg).unwrap();
                let ap = ProcessDeviceApertures {
                    gpuvm_base: 0x20_0000,
                    gpuvm_limit: 0x7fff_ffff_ffff,
                    gpu_id: GPU_ID,
                    ..Default::default()
                };
                assert!(a.num_of_nodes >= 1);
                // SAFETY: the caller (LinuxPlatform, through calls::get_process_apertures)
                // points kfd_process_device_apertures_ptr at a live array of num_of_nodes >= 1
                // entries for the duration of the ioctl (KfdDriver::ioctl's contract).
                unsafe {
                    std::ptr::write(
                        a.kfd_process_device_apertures_ptr as *mut ProcessDeviceApertures,
                        ap,
                    )
                };
                a.num_of_nodes = 1;
                reply(arg, &a);
            }
            AMDKFD_IOC_ALLOC_MEMORY_OF_GPU => {
                let mut a = AllocMemoryOfGpuArgs::read_from_bytes(arg).unwrap();
                a.handle = 0x100 + u64::from(self.next());
                if a.flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT) != 0 {
                    a.mmap_offset = a.handle << 20;
                }
                reply(arg, &a);
            }
            AMDKFD_IOC_MAP_MEMORY_TO_GPU | AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU => {
                let mut a = MapMemoryToGpuArgs::read_from_bytes(arg).unwrap();
                // SAFETY: the caller (calls::map_memory_to_gpu / unmap_memory_from_gpu) points
                // device_ids_array_ptr at n_devices live ids for the call.
                let ids = unsafe { Fake::read_ids(a.device_ids_array_ptr, a.n_devices) };
                self.log
                    .lock()
                    .unwrap()
                    .map_ids
                    .push((request, a.handle, ids));
                a.n_success = a.n_devices;
                reply(arg, &a);
            }
            AMDKFD_IOC_CREATE_QUEUE => {
                let mut a = CreateQueueArgs::read_from_bytes(arg).unwrap();
                a.queue_id = self.next();
                // SOC15: page offset | the doorbell's byte offset within the 8 KiB page.
                a.doorbell_offset =
                    kfd_mmap_doorbell_offset(a.gpu_id) | (8 * u64::from(a.queue_id));
                reply(arg, &a);
            }
            AMDKFD_IOC_CREATE_EVENT => {
                let mut a = CreateEventArgs::read_from_bytes(arg).unwrap();
                a.event_id = self.next();
                if a.event_type != KFD_IOC_EVENT_SIGNAL {
                    self.exceptions.lock().unwrap().insert(
                        a.event_id,
                        ExceptionEvent {
                            event_type: a.event_type,
                            signaled: false,
                            data: [0; 32],
                        },
                    );
                }
                a.event_slot_index = a.event_id;
                a.event_page_offset = KFD_MMAP_EVENTS_OFFSET;
                reply(arg, &a);
            }
            AMDKFD_IOC_WAIT_EVENTS => {
                let mut a = WaitEventsArgs::read_from_bytes(arg).unwrap();
                a.wait_result = *self.wait_result.lock().unwrap();
                reply(arg, &a);
            }
            AMDKFD_IOC_GET_CLOCK_COUNTERS => {
                let mut a = GetClockCountersArgs::read_from_bytes(arg).unwrap();
                if a.gpu_id != GPU_ID {
                    return Err(Errno::INVAL);
                }
                a.gpu_clock_counter = 0x1234_5678;
                a.system_clock_freq = 1_000_000_000;
                reply(arg, &a);
            }
            AMDKFD_IOC_DESTROY_EVENT => {
                let a = DestroyEventArgs::read_from_bytes(arg).unwrap();
                if self
                    .exceptions
                    .lock()
                    .unwrap()
                    .remove(&a.event_id)
                    .is_some()
                {
                    self.exception_cv.notify_all();
                }
            }
            _ => {}
        }
        self.log
            .lock()
            .unwrap()
            .replies
            .push((request, arg.to_vec()));
        Ok(())
    }

    unsafe fn mmap(
        &self,
        target: MapTarget,
        offset: u64,
        len: usize,
        addr: Option<NonNull<u8>>,
    ) -> Result<NonNull<u8>, Errno> {
        let mut log = self.log.lock().unwrap();
        log.mmaps
            .push((target, offset, len, addr.map(|a| a.as_ptr() as usize)));
        if let Some(e) = log.fail_mmap {
            return Err(e);
        }
        drop(log);
        let gate = {
            let mut g = self.gate.lock().unwrap();
            match &*g {
                Some(gate) if target == MapTarget::Kfd && gate.offset == offset => g.take(),
                _ => None,
            }
        };
        if let Some(gate) = gate {
            let _ = gate.entered.send(());
            let _ = gate.release.recv();
        }
        let at = addr.ok_or(Errno::INVAL)?;
        // SAFETY: the caller owns `[at, at + len)` and gives it up for this mapping
        // (KfdDriver::mmap's contract: the platform passes ranges of its own reservation);
        // anonymous shared memory stands in for the device's.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                at.as_ptr().cast(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
            )?
        };
        NonNull::new(p.cast()).ok_or(Errno::INVAL)
    }
}

fn node(props: NodeProperties) -> TopologyNode {
    TopologyNode {
        properties: props,
        memory_banks: vec![],
        caches: vec![],
        io_links: vec![],
    }
}

/// A CPU and an MI210 (numbers from the MI210 dump's nodes/2/properties).
fn topology() -> Topology {
    let cpu = NodeProperties {
        node_id: 0,
        cpu_cores_count: 16,
        ..Default::default()
    };
    let gpu = NodeProperties {
        node_id: 1,
        gpu_id: GPU_ID,
        simd_count: 416,
        simd_per_cu: 4,
        array_count: 8,
        simd_arrays_per_engine: 1,
        lds_size_in_kb: 64,
        max_waves_per_simd: 8,
        gfx_target_version: 90010,
        num_xcc: 1,
        drm_render_minor: 128,
        ..Default::default()
    };
    Topology {
        generation_id: Some(1),
        system: Default::default(),
        nodes: vec![node(cpu), node(gpu)],
    }
}

/// Opens the platform on a fresh fake, whose log then holds the open's calls (the queue-error
/// monitor's event page and events among them).
fn open_logged() -> (Arc<Fake>, LinuxPlatform) {
    let fake = Fake::new((1, 14));
    let p = LinuxPlatform::new(fake.clone(), topology()).unwrap();
    (fake, p)
}

/// [`open_logged`], the log emptied: it holds what the test does after.
fn open() -> (Arc<Fake>, LinuxPlatform) {
    let (fake, p) = open_logged();
    let mut log = fake.log.lock().unwrap();
    log.calls.clear();
    log.replies.clear();
    log.map_ids.clear();
    log.mmaps.clear();
    drop(log);
    (fake, p)
}

fn req(node: NodeId, kind: MemoryKind, size: u64, flags: MemoryFlags) -> MemoryRequest {
    MemoryRequest {
        node,
        kind,
        size_bytes: size,
        align_bytes: 4096,
        flags,
    }
}

#[test]
fn open_sequence() {
    let (fake, p) = open_logged();
    assert_eq!(p.kfd_version(), (1, 14));
    assert_eq!(p.device_name(), "fake");
    let order: Vec<u32> = fake.log.lock().unwrap().calls.iter().map(|c| c.0).collect();
    // Nothing but the version, the VM, XNACK and the apertures: no event, no event page
    // (the queue-error monitor's events come with the first queue, see
    // `the_first_queue_starts_the_monitor`), so a report on the topology needs neither.
    assert_eq!(
        order,
        [
            AMDKFD_IOC_GET_VERSION,
            AMDKFD_IOC_ACQUIRE_VM,
            AMDKFD_IOC_SET_XNACK_MODE,
            AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
        ]
    );
    assert_eq!(p.exception_events(), None);
    // XNACK: only queried (-1) when nothing is asked; the fake leaves -1, which reads as off.
    let x: SetXnackModeArgs = fake.last(AMDKFD_IOC_SET_XNACK_MODE);
    assert_eq!(x.xnack_enabled, -1);
    assert!(!p.xnack_enabled());
    let vm: AcquireVmArgs = fake.last(AMDKFD_IOC_ACQUIRE_VM);
    assert_eq!(vm.gpu_id, GPU_ID);
    assert_eq!(vm.drm_fd, u32::MAX, "the default render_node_fd is -1");
    let ap: GetProcessAperturesNewArgs = fake.last(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW);
    assert_eq!(ap.num_of_nodes, 1);
    assert_eq!(p.gpus()[0].gpuvm_base, 0x20_0000);
    assert_eq!(p.gpus()[0].gpuvm_limit, 0x7fff_ffff_ffff);
}

/// The first compute queue starts the queue-error monitor before anything of the queue is
/// made: the memory event first, handing KFD the event page (allocated and mapped to the
/// GPU), then the hardware-exception event, as ROCR makes them at start-up; a second queue
/// makes no more events.
#[test]
fn the_first_queue_starts_the_monitor() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    let before = fake.log.lock().unwrap().calls.len();
    // SAFETY: the ring and amd_queue_t chunks live until the platform drops, after the queue.
    unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    let order: Vec<u32> = fake.log.lock().unwrap().calls[before..]
        .iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(
        order[..4],
        [
            AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
            AMDKFD_IOC_MAP_MEMORY_TO_GPU,
            AMDKFD_IOC_CREATE_EVENT,
            AMDKFD_IOC_CREATE_EVENT,
        ],
        "{order:x?}"
    );
    let events: Vec<CreateEventArgs> = fake.calls(AMDKFD_IOC_CREATE_EVENT);
    let page = fake.replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)[2];
    assert_eq!(page.size, EVENT_PAGE_BYTES);
    assert_eq!(
        (
            events[0].event_type,
            events[0].auto_reset,
            events[0].event_page_offset
        ),
        (KFD_IOC_EVENT_MEMORY, 1, page.handle)
    );
    assert_eq!(
        (
            events[1].event_type,
            events[1].auto_reset,
            events[1].event_page_offset
        ),
        (KFD_IOC_EVENT_HW_EXCEPTION, 1, 0)
    );
    let ids: Vec<u32> = fake
        .replies::<CreateEventArgs>(AMDKFD_IOC_CREATE_EVENT)
        .iter()
        .map(|a| a.event_id)
        .collect();
    assert_eq!(p.exception_events(), Some((ids[0], ids[1])));
    let (ring2, amdq2) = queue_memory(&p);
    // SAFETY: as above.
    unsafe { p.create_queue(&queue_request(&ring2, &amdq2)) }.unwrap();
    assert_eq!(fake.count(AMDKFD_IOC_CREATE_EVENT), 2);
}

/// An SDMA queue starts the monitor too when it is the platform's first queue, before its
/// CREATE_QUEUE: an SDMA engine's memory fault reaches the process only through the monitor's
/// events (without them the C library's sdma_fault saw no fault event and its copy's signal
/// never went to -1).
#[test]
fn the_first_sdma_queue_starts_the_monitor() {
    let (fake, p) = open();
    let (ring, _amdq) = queue_memory(&p);
    let before = fake.log.lock().unwrap().calls.len();
    let request = SdmaQueueRequest {
        node: GPU_NODE,
        ring: ring.gpu_va,
        ring_size_bytes: 4096,
        read_pointer: GpuVa(ring.gpu_va.0 + 8192),
        write_pointer: GpuVa(ring.gpu_va.0 + 8200),
    };
    // SAFETY: the ring and pointer words are in `ring`, which lives until the platform drops.
    unsafe { p.create_sdma_queue(&request) }.unwrap();
    let order: Vec<u32> = fake.log.lock().unwrap().calls[before..]
        .iter()
        .map(|c| c.0)
        .collect();
    let first_create_queue = order
        .iter()
        .position(|&c| c == AMDKFD_IOC_CREATE_QUEUE)
        .expect("CREATE_QUEUE");
    let events: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == AMDKFD_IOC_CREATE_EVENT)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(events.len(), 2, "{order:x?}");
    assert!(events[1] < first_create_queue, "{order:x?}");
    let kinds: Vec<u32> = fake
        .calls::<CreateEventArgs>(AMDKFD_IOC_CREATE_EVENT)
        .iter()
        .map(|e| e.event_type)
        .collect();
    assert_eq!(kinds, [KFD_IOC_EVENT_MEMORY, KFD_IOC_EVENT_HW_EXCEPTION]);
    assert!(p.exception_events().is_some());
}

/// A monitor that cannot start (its event cannot be created) fails the queue, named, before
/// CREATE_QUEUE; the next queue tries again.
#[test]
fn a_monitor_that_cannot_start_fails_the_queue() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    fake.fail
        .lock()
        .unwrap()
        .insert(AMDKFD_IOC_CREATE_EVENT, Errno::NOSPC);
    // SAFETY: the ring and amd_queue_t chunks live until the platform drops.
    let e = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap_err();
    assert!(
        e.detail()
            .starts_with("creating the KFD memory event that reports queue errors: "),
        "{}",
        e.detail()
    );
    assert_eq!(fake.count(AMDKFD_IOC_CREATE_QUEUE), 0);
    assert_eq!(p.exception_events(), None);
    fake.fail.lock().unwrap().clear();
    // SAFETY: as above.
    unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    assert!(p.exception_events().is_some());
}

#[test]
fn version_2_is_refused() {
    let fake = Fake::new((2, 0));
    let e = LinuxPlatform::new(fake, topology()).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail().to_string().contains("kfd version 2.0"),
        "{}",
        e.detail()
    );
}

#[test]
fn topology_answers_and_bad_index() {
    let (_f, p) = open();
    assert_eq!(p.node_count(), 2);
    assert_eq!(p.node(1).unwrap().gpu_id, GPU_ID);
    assert_eq!(p.node(2).unwrap_err().status(), Status::InvalidIndex);
    assert_eq!(p.memory_bank(0, 0).unwrap(), None);
    assert_eq!(p.cache(5, 0).unwrap_err().status(), Status::InvalidIndex);
    assert_eq!(p.io_link(9, 0).unwrap_err().status(), Status::InvalidIndex);
}

/// `clock_sample` reads the GPU's counter with GET_CLOCK_COUNTERS (for its `gpu_id`) between
/// two reads of the system timestamp; a CPU node has no GPU counter.
#[test]
fn clock_sample_pairs_the_gpu_counter_with_the_system_time() {
    let (fake, p) = open();
    let before = p.timestamp_ticks();
    let s = p.clock_sample(GPU_NODE).unwrap();
    let after = p.timestamp_ticks();
    assert_eq!(s.gpu, 0x1234_5678);
    assert!(
        before <= s.system && s.system <= after,
        "{before} {} {after}",
        s.system
    );
    let a: GetClockCountersArgs = fake.last(AMDKFD_IOC_GET_CLOCK_COUNTERS);
    assert_eq!(a.gpu_id, GPU_ID);
    let e = p.clock_sample(CPU_NODE).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(e.detail(), "node 0 is not a GPU");
}

#[test]
fn system_memory_is_userptr_mapped_to_all_gpus() {
    let (fake, p) = open();
    let c = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            8192,
            MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        ))
        .unwrap();
    let a: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(
        a.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    );
    assert_eq!(
        a.gpu_id, GPU_ID,
        "a CPU node's memory is registered on the first GPU"
    );
    assert_eq!(a.size, 8192);
    assert_eq!(a.va_addr, c.gpu_va.0);
    assert_eq!(
        a.mmap_offset, c.gpu_va.0,
        "userptr: mmap_offset is the host address"
    );
    assert_eq!(c.gpu_va.0 % 4096, 0);
    assert_eq!(c.host_ptr.map(|h| h.as_ptr() as u64), Some(c.gpu_va.0));
    let replied = fake.replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(c.handle, replied.last().unwrap().handle);
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps,
        vec![(AMDKFD_IOC_MAP_MEMORY_TO_GPU, c.handle, vec![GPU_ID])]
    );
    // Host memory is really there, zeroed, and writable.
    let host = c.host_ptr.unwrap().as_ptr();
    // SAFETY: the chunk is 8192 bytes of live host memory at `host`, used only here.
    let bytes = unsafe { std::slice::from_raw_parts_mut(host, 8192) };
    assert!(bytes.iter().all(|&b| b == 0));
    bytes[8191] = 7;
    // SAFETY: nothing uses the chunk any more.
    unsafe { p.free_memory(&c) }.unwrap();
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps[1],
        (AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, c.handle, vec![GPU_ID])
    );
    assert_eq!(
        fake.last::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
            .handle,
        c.handle
    );
    // SAFETY: deliberately freeing a chunk twice: the platform must refuse, not touch it.
    let e = unsafe { p.free_memory(&c) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
}

/// Mapping a chunk again to a GPU it is mapped to makes no MAP_MEMORY_TO_GPU (amdkfd treats
/// it as done, after a sync and a TLB flush; libhsakmt maps a buffer object only to GPUs it is
/// not mapped to, so ROCR makes one call per buffer): `hsa_amd_agents_allow_access` on two
/// buffers of one chunk used to map the chunk three times.
#[test]
fn mapping_a_chunk_again_to_the_same_gpu_makes_no_ioctl() {
    let (fake, p) = open();
    let c = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            8192,
            MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED,
        ))
        .unwrap();
    p.map_memory(&c, &[GPU_NODE]).unwrap();
    p.map_memory(&c, &[GPU_NODE, CPU_NODE]).unwrap();
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps,
        vec![(AMDKFD_IOC_MAP_MEMORY_TO_GPU, c.handle, vec![GPU_ID])]
    );
    // SAFETY: nothing uses the chunk any more.
    unsafe { p.free_memory(&c) }.unwrap();
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps[1..],
        [(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, c.handle, vec![GPU_ID])]
    );
}

/// The application's pages registered with `register_host_memory`: one USERPTR buffer whose
/// device address is a fresh range of the reservation (not the host address: ROCR's agent
/// pointer of locked memory differs from the host pointer on a discrete GPU, and HIP relies
/// on it), coherent, mapped to the GPU; the same pages registered twice get two addresses;
/// deregistered with UNMAP + FREE; refused when misaligned, inside the platform's own memory,
/// or handed to the wrong release call; a CPU-only registration asks KFD for nothing.
#[test]
fn host_memory_is_registered_as_userptr_at_a_device_address_of_its_own() {
    let (fake, p) = open();
    // SAFETY: a fresh anonymous mapping, replacing nothing; unmapped at the end.
    let mem = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            3 * 4096,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }
    .unwrap();
    let host = NonNull::new(mem.cast::<u8>()).unwrap();
    let va = host.as_ptr() as u64;
    // SAFETY: (all registrations) the mapping stays until the end of the test, after every
    // deregistration.
    let c = unsafe { p.register_host_memory(host, 2 * 4096, &[GPU_NODE, CPU_NODE]) }.unwrap();
    assert_eq!((c.host_ptr, c.size_bytes), (Some(host), 8192));
    assert_ne!(c.gpu_va.0, va);
    assert_eq!(c.gpu_va.0 % 4096, 0);
    let a: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(
        (a.va_addr, a.mmap_offset, a.size, a.gpu_id),
        (c.gpu_va.0, va, 8192, GPU_ID)
    );
    assert_eq!(
        a.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    );
    let replied = fake.replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(c.handle, replied.last().unwrap().handle);
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps,
        vec![(AMDKFD_IOC_MAP_MEMORY_TO_GPU, c.handle, vec![GPU_ID])]
    );
    // SAFETY: as above.
    let again = unsafe { p.register_host_memory(host, 4096, &[GPU_NODE]) }.unwrap();
    assert_ne!(again.gpu_va, c.gpu_va);
    // SAFETY: refused before anything is freed.
    let e = unsafe { p.free_memory(&c) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    // SAFETY: nothing uses the registrations.
    unsafe { p.deregister_host_memory(&c) }.unwrap();
    assert_eq!(
        fake.last::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
            .handle,
        c.handle
    );
    // SAFETY: as above.
    unsafe { p.deregister_host_memory(&again) }.unwrap();
    // SAFETY: deliberately a second time: refused.
    let e = unsafe { p.deregister_host_memory(&c) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);

    let allocs = fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    // SAFETY: as above.
    let cpu_only = unsafe { p.register_host_memory(host, 4096, &[CPU_NODE]) }.unwrap();
    assert_eq!(
        cpu_only.gpu_va.0, va,
        "the host reaches its own memory at its address"
    );
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU), allocs);
    // SAFETY: as above.
    unsafe { p.deregister_host_memory(&cpu_only) }.unwrap();

    let odd = NonNull::new(host.as_ptr().wrapping_add(8)).unwrap();
    // SAFETY: refused before any ioctl.
    let e = unsafe { p.register_host_memory(odd, 4096, &[GPU_NODE]) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let own = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            4096,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    // SAFETY: refused before any ioctl (the platform's own chunk).
    let e =
        unsafe { p.register_host_memory(own.host_ptr.unwrap(), 4096, &[GPU_NODE]) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU), allocs + 1);
    // SAFETY: the mapping made above, no longer registered or used.
    unsafe { rustix::mm::munmap(mem, 3 * 4096) }.unwrap();
}

#[test]
fn device_local_flags_alignment_and_host_mapping() {
    let (fake, p) = open();
    let size = 4 << 20;
    let c = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            size,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    let a: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(
        a.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    );
    assert_eq!(a.gpu_id, GPU_ID);
    assert_eq!(a.va_addr, c.gpu_va.0);
    assert_eq!(
        a.va_addr % (2 << 20),
        0,
        "chunks >= 2 MiB are 2 MiB aligned"
    );
    let mm = fake.log.lock().unwrap().mmaps.clone();
    assert_eq!(
        mm,
        vec![(
            MapTarget::RenderNode(GPU_ID),
            c.handle << 20,
            size as usize,
            Some(c.gpu_va.0 as usize)
        )]
    );
    assert_eq!(c.host_ptr.map(|h| h.as_ptr() as u64), Some(c.gpu_va.0));

    // Device-only VRAM: no host mapping, no host pointer.
    let d = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap();
    assert_eq!(d.host_ptr, None);
    assert_eq!(fake.log.lock().unwrap().mmaps.len(), 1);
    let a: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(a.flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, 0);

    // Read-only, executable, uncached system memory on the GPU node.
    p.allocate_memory(&req(
        GPU_NODE,
        MemoryKind::System,
        4096,
        MemoryFlags::READ_ONLY | MemoryFlags::EXECUTABLE | MemoryFlags::UNCACHED,
    ))
    .unwrap();
    let a: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(
        a.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    );

    // A larger request alignment is honoured.
    let mut r = req(
        GPU_NODE,
        MemoryKind::DeviceLocal,
        4096,
        MemoryFlags::empty(),
    );
    r.align_bytes = 1 << 24;
    let e = p.allocate_memory(&r).unwrap();
    assert_eq!(e.gpu_va.0 % (1 << 24), 0);
}

#[test]
fn invalid_requests() {
    let (fake, p) = open();
    let bad = |r: MemoryRequest| p.allocate_memory(&r).unwrap_err();
    let e = bad(req(
        CPU_NODE,
        MemoryKind::System,
        1000,
        MemoryFlags::empty(),
    ));
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.detail().to_string().contains("1000"), "{}", e.detail());
    let mut r = req(CPU_NODE, MemoryKind::System, 4096, MemoryFlags::empty());
    r.align_bytes = 3;
    assert_eq!(bad(r).status(), Status::InvalidArgument);
    let e = bad(req(
        CPU_NODE,
        MemoryKind::DeviceLocal,
        4096,
        MemoryFlags::empty(),
    ));
    assert_eq!(e.status(), Status::InvalidArgument);
    let e = bad(req(
        NodeId(7),
        MemoryKind::System,
        4096,
        MemoryFlags::empty(),
    ));
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.detail().to_string().contains("node 7"), "{}", e.detail());
    let e = bad(req(
        CPU_NODE,
        MemoryKind::System,
        1 << 40,
        MemoryFlags::empty(),
    ));
    assert_eq!(e.status(), Status::OutOfResources);
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU), 0);
}

#[test]
fn ioctl_failure_is_named_and_releases_everything() {
    let (fake, p) = open();
    fake.fail
        .lock()
        .unwrap()
        .insert(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, Errno::NOMEM);
    let e = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap_err();
    assert_eq!(e.status(), Status::OutOfResources);
    assert!(
        e.detail()
            .to_string()
            .contains("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU"),
        "{}",
        e.detail()
    );
    let failed_va = fake
        .last::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)
        .va_addr;
    fake.fail.lock().unwrap().clear();

    // MAP failing frees the buffer it allocated.
    fake.fail
        .lock()
        .unwrap()
        .insert(AMDKFD_IOC_MAP_MEMORY_TO_GPU, Errno::INVAL);
    let e = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let handle = fake
        .replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)
        .last()
        .unwrap()
        .handle;
    assert_eq!(
        fake.last::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
            .handle,
        handle
    );
    fake.fail.lock().unwrap().clear();

    // The address space of the failed attempts was given back.
    let c = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap();
    assert_eq!(c.gpu_va.0, failed_va);
}

/// A buffer whose undo FREE fails (after MAP failed) is still KFD's, and for USERPTR memory
/// KFD keeps using the host pages: its addresses must not be carved for the next chunk, and
/// the platform's drop frees it again.
#[test]
fn a_buffer_kfd_would_not_free_keeps_its_addresses() {
    let (fake, p) = open();
    {
        let mut f = fake.fail.lock().unwrap();
        f.insert(AMDKFD_IOC_MAP_MEMORY_TO_GPU, Errno::NOMEM);
        f.insert(AMDKFD_IOC_FREE_MEMORY_OF_GPU, Errno::BUSY);
    }
    let system = || req(CPU_NODE, MemoryKind::System, 4096, MemoryFlags::HOST_ACCESS);
    let e = p.allocate_memory(&system()).unwrap_err();
    assert_eq!(e.status(), Status::OutOfResources);
    assert_eq!(
        e.detail(),
        "AMDKFD_IOC_MAP_MEMORY_TO_GPU: Cannot allocate memory (errno 12)"
    );
    let stuck = *fake
        .replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)
        .last()
        .unwrap();
    assert_eq!(stuck.mmap_offset, stuck.va_addr, "USERPTR");
    assert_eq!(
        fake.count(AMDKFD_IOC_FREE_MEMORY_OF_GPU),
        1,
        "the undo tried"
    );
    fake.fail.lock().unwrap().clear();

    let c = p.allocate_memory(&system()).unwrap();
    assert_ne!(
        c.gpu_va.0, stuck.va_addr,
        "the host pages KFD still holds were carved again"
    );
    drop(p);
    let frees: Vec<u64> = fake
        .calls::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
        .iter()
        .map(|f| f.handle)
        .collect();
    assert_eq!(
        frees.iter().filter(|&&h| h == stuck.handle).count(),
        2,
        "the drop frees it again: {frees:x?}"
    );
}

#[test]
fn map_memory_to_nodes() {
    let (fake, p) = open();
    let c = p
        .allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap();
    p.map_memory(&c, &[CPU_NODE, GPU_NODE]).unwrap();
    let maps = fake.log.lock().unwrap().map_ids.clone();
    assert_eq!(
        maps.last().unwrap(),
        &(AMDKFD_IOC_MAP_MEMORY_TO_GPU, c.handle, vec![GPU_ID])
    );
    assert_eq!(
        p.map_memory(&c, &[NodeId(9)]).unwrap_err().status(),
        Status::InvalidArgument
    );
    let ghost = MemoryChunk {
        gpu_va: GpuVa(0x1000),
        ..c
    };
    assert_eq!(
        p.map_memory(&ghost, &[GPU_NODE]).unwrap_err().status(),
        Status::InvalidArgument
    );
}

fn queue_memory(p: &LinuxPlatform) -> (MemoryChunk, MemoryChunk) {
    let ring = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            64 * 1024,
            MemoryFlags::HOST_ACCESS | MemoryFlags::UNCACHED,
        ))
        .unwrap();
    let amdq = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            4096,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    (ring, amdq)
}

fn queue_request(ring: &MemoryChunk, amdq: &MemoryChunk) -> QueueRequest {
    QueueRequest {
        node: GPU_NODE,
        kind: QueueKind::ComputeAql,
        ring: ring.gpu_va,
        ring_host: ring.host_ptr.unwrap(),
        ring_size_bytes: 64 * 1024,
        amd_queue: amdq.gpu_va,
        amd_queue_host: amdq.host_ptr.unwrap(),
        read_pointer: GpuVa(amdq.gpu_va.0 + 128),
        write_pointer: GpuVa(amdq.gpu_va.0 + 56),
        on_error: None,
    }
}

/// `set_queue_priority` is UPDATE_QUEUE with the queue's own ring, 100 percent and the
/// priority; `set_queue_cu_mask` is SET_CU_MASK with the mask's bits; both refuse a queue the
/// platform does not have, and an out-of-range priority before any ioctl.
#[test]
fn queue_priority_and_cu_mask_reach_kfd() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    // SAFETY: ring and amd_queue_t chunks outlive the queue (destroyed below).
    let q = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    p.set_queue_priority(q.id, 15).unwrap();
    let u: UpdateQueueArgs = fake.last(AMDKFD_IOC_UPDATE_QUEUE);
    assert_eq!(
        (u.queue_id, u.ring_base_address, u.ring_size),
        (q.id.0, ring.gpu_va.0, 64 * 1024)
    );
    assert_eq!((u.queue_percentage, u.queue_priority), (100, 15));
    let e = p.set_queue_priority(q.id, 16).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert_eq!(fake.count(AMDKFD_IOC_UPDATE_QUEUE), 1);

    let mask = [0x0000_00ffu32, 0x1];
    p.set_queue_cu_mask(q.id, &mask).unwrap();
    let m: SetCuMaskArgs = fake.last(AMDKFD_IOC_SET_CU_MASK);
    assert_eq!((m.queue_id, m.num_cu_mask), (q.id.0, 64));

    let gone = QueueId(q.id.0 + 100);
    assert_eq!(
        p.set_queue_priority(gone, 7).unwrap_err().status(),
        Status::InvalidQueue
    );
    assert_eq!(
        p.set_queue_cu_mask(gone, &mask).unwrap_err().status(),
        Status::InvalidQueue
    );
    p.destroy_queue(q.id).unwrap();
}

#[test]
fn create_ring_destroy_queue() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    let r = queue_request(&ring, &amdq);
    // SAFETY: ring and amd_queue_t chunks outlive the queue (destroyed below).
    let q = unsafe { p.create_queue(&r) }.unwrap();
    let a: CreateQueueArgs = *fake.replies(AMDKFD_IOC_CREATE_QUEUE).last().unwrap();
    assert_eq!(a.ring_base_address, ring.gpu_va.0);
    assert_eq!(a.ring_size, 64 * 1024);
    assert_eq!(a.read_pointer_address, amdq.gpu_va.0 + 128);
    assert_eq!(a.write_pointer_address, amdq.gpu_va.0 + 56);
    assert_eq!(a.queue_type, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
    assert_eq!(a.queue_percentage, 100);
    assert_eq!(a.queue_priority, 7);
    assert_eq!(a.gpu_id, GPU_ID);
    assert_eq!(q.id, QueueId(a.queue_id));

    // EOP: 4 KiB of VRAM; CWSR: host memory of the kernel's size, headers written.
    let sizes = queue_buffer_sizes(&p.node(1).unwrap(), 4096).unwrap();
    assert_eq!(a.eop_buffer_size, 4096);
    assert_eq!(a.ctx_save_restore_size, 0x9000 + 0x3c8_8000);
    assert_eq!(a.ctl_stack_size, 0x9000);
    let allocs: Vec<AllocMemoryOfGpuArgs> = fake.calls(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    let eop = allocs
        .iter()
        .find(|x| x.va_addr == a.eop_buffer_address)
        .unwrap();
    assert_eq!(eop.size, 4096);
    assert_ne!(eop.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0);
    let cwsr = allocs
        .iter()
        .find(|x| x.va_addr == a.ctx_save_restore_address)
        .unwrap();
    assert_eq!(cwsr.size, sizes.cwsr_total_bytes);
    assert_ne!(cwsr.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, 0);
    // SAFETY: the CWSR area is live host memory of the platform; read its 40-byte header.
    let hdr = unsafe { std::ptr::read(a.ctx_save_restore_address as *const ContextSaveAreaHeader) };
    assert_eq!(hdr.debug_offset, a.ctx_save_restore_size);
    assert_eq!(hdr.debug_size, 4096 * 32);

    // Doorbell: page = offset & !0x1fff mapped from /dev/kfd, doorbell at offset & 0x1fff.
    let mm = fake.log.lock().unwrap().mmaps.clone();
    let db: Vec<_> = mm.iter().filter(|m| m.0 == MapTarget::Kfd).collect();
    assert_eq!(db.len(), 1);
    assert_eq!(db[0].1, kfd_mmap_doorbell_offset(GPU_ID));
    assert_eq!(db[0].2 as u64, DOORBELL_PAGE_BYTES);
    let page = db[0].3.unwrap() as u64;
    assert_eq!(q.doorbell_address, page + 8 * u64::from(a.queue_id));

    assert_eq!(q.doorbell.address(), q.doorbell_address);
    p.ring_doorbell(&q.doorbell, 41);
    // SAFETY: the doorbell is an 8-byte slot of the fake's mapped doorbell page.
    let v = unsafe { std::ptr::read_volatile(q.doorbell_address as *const u64) };
    assert_eq!(v, 41);

    // A second queue reuses the doorbell page.
    // SAFETY: as above.
    let q2 = unsafe { p.create_queue(&r) }.unwrap();
    let kfd_maps = fake
        .log
        .lock()
        .unwrap()
        .mmaps
        .iter()
        .filter(|m| m.0 == MapTarget::Kfd)
        .count();
    assert_eq!(kfd_maps, 1);
    assert_eq!(q2.doorbell_address, page + 8 * u64::from(q2.id.0));

    let frees_before = fake.count(AMDKFD_IOC_FREE_MEMORY_OF_GPU);
    p.destroy_queue(q.id).unwrap();
    let d: DestroyQueueArgs = fake.last(AMDKFD_IOC_DESTROY_QUEUE);
    assert_eq!(d.queue_id, q.id.0);
    let freed: Vec<u64> = fake.calls::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
        [frees_before..]
        .iter()
        .map(|f| f.handle)
        .collect();
    assert_eq!(freed.len(), 2, "EOP and CWSR are freed");
    assert_eq!(
        p.destroy_queue(q.id).unwrap_err().status(),
        Status::InvalidQueue
    );
}

/// Ringing is one store through the queue's doorbell handle: it takes none of the platform's
/// locks. Here another thread holds the platform's state lock (it maps the doorbell page of a
/// second GPU, which happens under that lock, and the fake's mmap stops there) while this
/// one rings; before the handle, `ring_doorbell` looked the doorbell up under that lock and
/// blocked until the other thread was done.
#[test]
fn ringing_takes_no_platform_lock() {
    const GPU2: u32 = 0xc3d4;
    let mut t = topology();
    let mut gpu2 = t.nodes[1].clone();
    gpu2.properties.node_id = 2;
    gpu2.properties.gpu_id = GPU2;
    gpu2.properties.drm_render_minor = 129;
    t.nodes.push(gpu2);
    let fake = Fake::new((1, 14));
    let p = LinuxPlatform::new(fake.clone(), t).unwrap();
    let (ring, amdq) = queue_memory(&p);
    let (ring2, amdq2) = queue_memory(&p);
    // SAFETY: the chunks outlive the queues (the platform drops last).
    let q = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    *fake.gate.lock().unwrap() = Some(Gate {
        offset: kfd_mmap_doorbell_offset(GPU2),
        entered: entered_tx,
        release: release_rx,
    });
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let mut r2 = queue_request(&ring2, &amdq2);
            r2.node = NodeId(2);
            // SAFETY: as above.
            unsafe { p.create_queue(&r2) }.map(|q| q.id)
        });
        entered
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the second queue's doorbell page is being mapped");
        let (done_tx, done) = std::sync::mpsc::channel();
        let (p, doorbell) = (&p, &q.doorbell);
        let ringer = s.spawn(move || {
            for i in 0..1000 {
                p.ring_doorbell(doorbell, i);
            }
            let _ = done_tx.send(());
        });
        let rang = done.recv_timeout(std::time::Duration::from_secs(5));
        release.send(()).unwrap();
        ringer.join().unwrap();
        assert!(
            rang.is_ok(),
            "ringing blocked while another thread held the platform's state lock"
        );
        other.join().unwrap().unwrap();
    });
    // SAFETY: the doorbell is an 8-byte slot of the fake's mapped doorbell page.
    let v = unsafe { std::ptr::read_volatile(q.doorbell_address as *const u64) };
    assert_eq!(v, 999);
}

/// The doorbell handle keeps its page mapped: ringing a destroyed queue, or one whose platform
/// is gone, stores to the (now unused) doorbell word instead of to memory the addresses were
/// reused for.
#[test]
fn a_doorbell_handle_outlives_its_queue_and_platform() {
    let (_fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    // SAFETY: the chunks outlive the queue (destroyed below, before the platform drops).
    let q = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    p.destroy_queue(q.id).unwrap();
    p.ring_doorbell(&q.doorbell, 5);
    drop(p);
    let (_fake2, p2) = open();
    p2.ring_doorbell(&q.doorbell, 6);
    // SAFETY: the handle keeps the page mapped: its doorbell word is readable.
    let v = unsafe { std::ptr::read_volatile(q.doorbell.address() as *const u64) };
    assert_eq!(v, 6);
}

/// What the queue-error callbacks of the monitor tests were called with, by test (`data`).
static REPORTED: Mutex<Vec<(usize, u32, Status, String)>> = Mutex::new(Vec::new());

fn on_queue_error(e: &hsa_core::Error, q: QueueId, data: usize) {
    REPORTED
        .lock()
        .unwrap()
        .push((data, q.0, e.status(), e.detail().to_string()));
}

/// The reports of test `data` once there are `n` (10 s at most), sorted by queue id.
fn reports(data: usize, n: usize) -> Vec<(u32, Status, String)> {
    let started = Instant::now();
    loop {
        let mut got: Vec<_> = REPORTED
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.0 == data)
            .map(|r| (r.1, r.2, r.3.clone()))
            .collect();
        if got.len() >= n || started.elapsed() > Duration::from_secs(10) {
            got.sort_by_key(|r| r.0);
            return got;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A queue on the fake with the error callback of test `data`; the inactive signal its
/// `amd_queue_t` names lives in the same chunk, 256 bytes in (the layout the core gives it
/// does not matter to the platform). Returns the queue id and the inactive signal's value
/// word.
fn watched_queue(
    p: &LinuxPlatform,
    data: usize,
) -> (QueueId, &'static std::sync::atomic::AtomicI64) {
    let (ring, amdq) = queue_memory(p);
    let base = amdq.host_ptr.unwrap().as_ptr();
    let signal = amdq.gpu_va.0 + 256;
    // SAFETY: the amd_queue_t chunk is live, zeroed host memory of the platform, 4 KiB, that
    // the platform never frees before the test ends (it is not freed at all); its words are
    // accessed only atomically from here on.
    let (handle_word, value_word) = unsafe {
        (
            std::sync::atomic::AtomicU64::from_ptr(base.add(192).cast()),
            std::sync::atomic::AtomicI64::from_ptr(base.add(256 + 8).cast()),
        )
    };
    handle_word.store(signal, std::sync::atomic::Ordering::Release);
    let mut r = queue_request(&ring, &amdq);
    r.on_error = Some(hsa_core::platform::QueueErrorCallback {
        func: on_queue_error,
        data,
    });
    // SAFETY: the ring, the amd_queue_t and the signal stay live until the platform drops.
    let q = unsafe { p.create_queue(&r) }.unwrap();
    (q.id, value_word)
}

fn memory_exception(va: u64, gpu_id: u32) -> HsaMemoryExceptionData {
    HsaMemoryExceptionData {
        failure: MemoryExceptionFailure {
            not_present: 1,
            ..Default::default()
        },
        va,
        gpu_id,
        error_type: KFD_MEM_ERR_NO_RAS,
    }
}

/// The monitor: a queue whose packet processor stored an error status into its inactive
/// signal is reported once, through its callback, when a memory event fires — with the
/// status and what the event data says; a queue of the same GPU that did not stop is left
/// alone. Before the monitor, nothing listened to KFD's events: the error never reached the
/// callback.
#[test]
fn the_monitor_reports_a_stopped_queue_when_a_memory_event_fires() {
    let (fake, p) = open();
    let (bad, inactive) = watched_queue(&p, 1);
    let (good, _) = watched_queue(&p, 1);
    // What hsa-rt's packet processor stores: the CP's code and the status above it.
    let value = hsa_core::queue::inactive::encode(Status::MemoryFault, false);
    inactive.store(value, std::sync::atomic::Ordering::Release);
    let data = memory_exception(0xdead_0000_0000, GPU_ID);
    assert_eq!(fake.fire(KFD_IOC_EVENT_MEMORY, data.as_bytes()), 1);
    let got = reports(1, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    let (queue, status, detail) = &got[0];
    assert_eq!(*queue, bad.0);
    assert_eq!(*status, Status::MemoryFault);
    assert_eq!(
        *detail,
        format!(
            "queue_inactive_signal {value:#x}; KFD memory event: page not present at \
             0xdead00000000 on gpu_id 0xa1b2"
        )
    );
    // Once: another event does not report it again, nor the queue that did not stop.
    fake.fire(KFD_IOC_EVENT_MEMORY, data.as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        REPORTED.lock().unwrap().iter().filter(|r| r.0 == 1).count(),
        1
    );
    assert_ne!(good, bad);
}

/// A hardware exception that stopped no queue (a GPU reset) reports every queue of its GPU;
/// a memory event that stopped none (amdkfd evicts the process's queues after a page fault)
/// reports every queue left with MEMORY_FAULT.
#[test]
fn an_exception_no_queue_explains_reports_every_queue_of_its_gpu() {
    let (fake, p) = open();
    let (a, _) = watched_queue(&p, 2);
    let (b, _) = watched_queue(&p, 2);
    let reset = HsaHwExceptionData {
        reset_type: KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
        reset_cause: KFD_HW_EXCEPTION_ECC,
        memory_lost: 1,
        gpu_id: GPU_ID,
    };
    fake.fire(KFD_IOC_EVENT_HW_EXCEPTION, reset.as_bytes());
    let got = reports(2, 2);
    let detail = "KFD hardware exception event on gpu_id 0xa1b2: whole-GPU reset after an ECC \
                  error, device memory lost";
    assert_eq!(
        got,
        [a, b]
            .map(|q| (q.0, Status::Error, detail.to_owned()))
            .to_vec()
    );

    let (_f, p3) = open();
    let (c, _) = watched_queue(&p3, 3);
    // A per-engine reset ends only the queue that stored its error: none here.
    let engine = HsaHwExceptionData {
        reset_type: KFD_HW_EXCEPTION_PER_ENGINE_RESET,
        reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
        memory_lost: 0,
        gpu_id: GPU_ID,
    };
    _f.fire(KFD_IOC_EVENT_HW_EXCEPTION, engine.as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        REPORTED.lock().unwrap().iter().filter(|r| r.0 == 3).count(),
        0
    );
    let mut data = memory_exception(0, GPU_ID);
    data.failure = MemoryExceptionFailure {
        imprecise: 1,
        ..Default::default()
    };
    _f.fire(KFD_IOC_EVENT_MEMORY, data.as_bytes());
    assert_eq!(
        reports(3, 1),
        [(
            c.0,
            Status::MemoryFault,
            "KFD memory event: memory fault at an unknown address on gpu_id 0xa1b2".to_owned()
        )]
    );
}

/// On a real GPU the CP stores its queue error code alone (no status above it, as hsa-rt's
/// packet processor keeps): the monitor reads it as ROCR does — 0x100, a vendor packet the CP
/// does not support, is INVALID_PACKET_FORMAT (it read 0x100 as no hsa_status_t: ERROR).
#[test]
fn the_monitor_reads_a_real_cps_queue_error_code_as_rocr_does() {
    let (fake, p) = open();
    let (q, inactive) = watched_queue(&p, 4);
    inactive.store(0x100, std::sync::atomic::Ordering::Release);
    let engine = HsaHwExceptionData {
        reset_type: KFD_HW_EXCEPTION_PER_ENGINE_RESET,
        reset_cause: KFD_HW_EXCEPTION_GPU_HANG,
        memory_lost: 0,
        gpu_id: GPU_ID,
    };
    fake.fire(KFD_IOC_EVENT_HW_EXCEPTION, engine.as_bytes());
    let got = reports(4, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (q.0, Status::InvalidPacketFormat));
    assert!(
        got[0]
            .2
            .starts_with("queue_inactive_signal 0x100; KFD hardware exception event"),
        "{got:?}"
    );
}

/// A queue destroyed after its CP stored an error, before any event reached the monitor,
/// still gets its callback, once, before the destroy returns: ROCR 5.2 sequences the error
/// handler with the queue's destruction (`AqlQueue::~AqlQueue`), and rocrtst's
/// Queue_Validation_InvalidWorkGroupSize destroys each queue right after its bad dispatch.
#[test]
fn destroying_a_queue_reports_the_error_it_stored() {
    let (_fake, p) = open();
    let (q, inactive) = watched_queue(&p, 5);
    let status = Status::InvalidArgument;
    inactive.store(
        hsa_core::queue::inactive::encode(status, false),
        std::sync::atomic::Ordering::Release,
    );
    p.destroy_queue(q).unwrap();
    let got: Vec<_> = REPORTED
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == 5)
        .map(|r| (r.1, r.2))
        .collect();
    assert_eq!(got, [(q.0, status)]);
}

/// Dropping the platform ends the monitor's thread at once: destroying its events ends its
/// WAIT_EVENTS (no slice of MONITOR_SLICE_MS to wait out).
#[test]
fn dropping_the_platform_ends_the_monitor_at_once() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    // SAFETY: the chunks stay live until the platform drops, after the queue.
    unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
    let (memory, hw) = p.exception_events().unwrap();
    // Let the thread block in WAIT_EVENTS.
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    drop(p);
    assert!(
        started.elapsed() < Duration::from_millis(u64::from(MONITOR_SLICE_MS) / 2),
        "{:?}",
        started.elapsed()
    );
    let destroyed: Vec<u32> = fake
        .calls::<DestroyEventArgs>(AMDKFD_IOC_DESTROY_EVENT)
        .iter()
        .map(|d| d.event_id)
        .collect();
    assert_eq!(destroyed, [memory, hw]);
    assert!(fake.exceptions.lock().unwrap().is_empty());
}

#[test]
fn invalid_queue_requests() {
    let (fake, p) = open();
    let (ring, amdq) = queue_memory(&p);
    let mut r = queue_request(&ring, &amdq);
    r.ring_size_bytes = 1000;
    // SAFETY: rejected before anything uses the memory.
    let e = unsafe { p.create_queue(&r) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation);
    assert!(e.detail().to_string().contains("1000"), "{}", e.detail());
    let mut r = queue_request(&ring, &amdq);
    r.node = CPU_NODE;
    // SAFETY: as above.
    let e = unsafe { p.create_queue(&r) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation);
    r.node = NodeId(5);
    // SAFETY: as above.
    let e = unsafe { p.create_queue(&r) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidAgent);

    // CREATE_QUEUE failing frees the EOP and CWSR buffers.
    fake.fail
        .lock()
        .unwrap()
        .insert(AMDKFD_IOC_CREATE_QUEUE, Errno::NOSPC);
    let allocs = fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    let frees = fake.count(AMDKFD_IOC_FREE_MEMORY_OF_GPU);
    // SAFETY: as above.
    let e = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap_err();
    assert_eq!(e.status(), Status::OutOfResources);
    assert!(
        e.detail()
            .to_string()
            .starts_with("AMDKFD_IOC_CREATE_QUEUE"),
        "{}",
        e.detail()
    );
    // The event page (the monitor started with this first queue, and stays) and the EOP and
    // CWSR buffers; the last two are freed.
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU) - allocs, 3);
    assert_eq!(fake.count(AMDKFD_IOC_FREE_MEMORY_OF_GPU) - frees, 2);
}

/// The handles of the EOP and save-area buffers of the queue CREATE_QUEUE made last.
fn queue_buffer_handles(fake: &Fake) -> (u64, u64) {
    let q: CreateQueueArgs = *fake.replies(AMDKFD_IOC_CREATE_QUEUE).last().unwrap();
    let allocs = fake.replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    let at = |va: u64| allocs.iter().find(|a| a.va_addr == va).unwrap().handle;
    (at(q.eop_buffer_address), at(q.ctx_save_restore_address))
}

fn freed(fake: &Fake) -> Vec<u64> {
    fake.calls::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
        .iter()
        .map(|f| f.handle)
        .collect()
}

/// When the doorbell page cannot be mapped, CREATE_QUEUE is undone with DESTROY_QUEUE; if
/// that fails the queue may still run, so its EOP and save-area buffers (which its command
/// processor writes) are not freed: the drop retries DESTROY and frees them only after it
/// succeeded.
#[test]
fn a_queue_kfd_would_not_destroy_keeps_its_buffers() {
    for destroy_works_later in [true, false] {
        let (fake, p) = open();
        let (ring, amdq) = queue_memory(&p);
        // An event first: the event page is mapped before mmap fails (the queue's monitor then
        // needs no mapping).
        p.create_event().unwrap();
        fake.log.lock().unwrap().fail_mmap = Some(Errno::NOMEM);
        fake.fail
            .lock()
            .unwrap()
            .insert(AMDKFD_IOC_DESTROY_QUEUE, Errno::BUSY);
        // SAFETY: the ring and amd_queue_t chunks live until the platform drops.
        let e = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(
            e.detail()
                .to_string()
                .starts_with("mapping the doorbell page"),
            "{}",
            e.detail()
        );
        assert_eq!(fake.count(AMDKFD_IOC_DESTROY_QUEUE), 1);
        let (eop, cwsr) = queue_buffer_handles(&fake);
        assert!(
            !freed(&fake).contains(&eop) && !freed(&fake).contains(&cwsr),
            "freed under a queue KFD did not destroy"
        );
        let queue_id = fake
            .replies::<CreateQueueArgs>(AMDKFD_IOC_CREATE_QUEUE)
            .last()
            .unwrap()
            .queue_id;
        if destroy_works_later {
            fake.fail.lock().unwrap().clear();
        }
        drop(p);
        let destroys = fake.calls::<DestroyQueueArgs>(AMDKFD_IOC_DESTROY_QUEUE);
        assert_eq!(destroys.len(), 2, "the drop retries DESTROY");
        assert_eq!(destroys[1].queue_id, queue_id);
        let freed = freed(&fake);
        assert_eq!(
            freed.contains(&eop) && freed.contains(&cwsr),
            destroy_works_later,
            "EOP {eop:#x}, CWSR {cwsr:#x}, freed {freed:x?}"
        );
        let (r, q) = (ring.handle, amdq.handle);
        assert!(freed.contains(&r) && freed.contains(&q));
    }
}

/// A GPU whose compute units are too many for the 32-bit save-area sizes of CREATE_QUEUE (the
/// largest `simd_count` amdkfd can report, one SIMD per CU) is refused with that reason, not as
/// a GPU without compute units.
#[test]
fn queue_save_area_beyond_32_bits_is_named_as_such() {
    let mut t = topology();
    t.nodes[1].properties.simd_count = 65535;
    t.nodes[1].properties.simd_per_cu = 1;
    let p = LinuxPlatform::new(Fake::new((1, 14)), t).unwrap();
    let (ring, amdq) = queue_memory(&p);
    // SAFETY: rejected before anything uses the memory.
    let e = unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidQueueCreation);
    assert_eq!(
        e.detail(),
        "node 1: the context save area of 65535 compute units (simd_count 65535 / simd_per_cu \
         1, 1 XCCs) does not fit the 32-bit sizes of CREATE_QUEUE"
    );
}

#[test]
fn events_page_mailbox_wait_signal() {
    let (fake, p) = open_logged();
    let e1 = p.create_event().unwrap();
    // The process's first event (no queue yet, so no monitor) handed KFD the page.
    let first: CreateEventArgs = fake.calls(AMDKFD_IOC_CREATE_EVENT)[0];
    assert_eq!(fake.count(AMDKFD_IOC_CREATE_EVENT), 1);
    assert_eq!(first.event_type, KFD_IOC_EVENT_SIGNAL);
    assert_eq!(first.auto_reset, 1);
    // The event page: a 32 KiB uncached, coherent GTT buffer object whose handle goes to KFD
    // (amdkfd maps it into the kernel, which it refuses for USERPTR memory), mapped for the
    // host from the render node at its mmap_offset.
    let page: AllocMemoryOfGpuArgs = fake.last(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
    assert_eq!(page.size, EVENT_PAGE_BYTES);
    assert_eq!(page.size, 32768);
    assert_eq!(page.mmap_offset, 0, "GTT: KFD chooses the mmap offset");
    assert_eq!(
        page.flags,
        KFD_IOC_ALLOC_MEM_FLAGS_GTT
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
            | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    );
    let page_handle = fake
        .replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)
        .last()
        .unwrap()
        .handle;
    assert_eq!(first.event_page_offset, page_handle);
    assert_eq!(e1.mailbox.0, page.va_addr + 8 * u64::from(e1.id.0));
    let mm = fake.log.lock().unwrap().mmaps.clone();
    assert_eq!(
        mm.last(),
        Some(&(
            MapTarget::RenderNode(GPU_ID),
            page_handle << 20,
            EVENT_PAGE_BYTES as usize,
            Some(page.va_addr as usize)
        )),
        "the event page is mapped from the render node"
    );

    let e2 = p.create_event().unwrap();
    let second: CreateEventArgs = fake.last(AMDKFD_IOC_CREATE_EVENT);
    assert_eq!(second.event_page_offset, 0, "the page is handed over once");
    assert_eq!(e2.mailbox.0, page.va_addr + 8 * u64::from(e2.id.0));
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU), 1);

    assert_eq!(
        p.wait_event(e1.id, 1_500_000).unwrap(),
        WaitOutcome::Signaled
    );
    let w: WaitEventsArgs = fake.last(AMDKFD_IOC_WAIT_EVENTS);
    assert_eq!((w.num_events, w.wait_for_all, w.timeout), (1, 1, 2));
    *fake.wait_result.lock().unwrap() = KFD_IOC_WAIT_RESULT_TIMEOUT;
    assert_eq!(
        p.wait_event(e1.id, u64::MAX).unwrap(),
        WaitOutcome::TimedOut
    );
    assert_eq!(
        fake.last::<WaitEventsArgs>(AMDKFD_IOC_WAIT_EVENTS).timeout,
        0xffff_ffff
    );
    *fake.wait_result.lock().unwrap() = KFD_IOC_WAIT_RESULT_FAIL;
    assert_eq!(p.wait_event(e1.id, 0).unwrap_err().status(), Status::Error);

    p.signal_event(e2.id).unwrap();
    assert_eq!(
        fake.last::<SetEventArgs>(AMDKFD_IOC_SET_EVENT).event_id,
        e2.id.0
    );
    p.destroy_event(e2.id).unwrap();
    assert_eq!(
        fake.last::<DestroyEventArgs>(AMDKFD_IOC_DESTROY_EVENT)
            .event_id,
        e2.id.0
    );
    assert_eq!(
        p.destroy_event(e2.id).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        p.wait_event(EventId(999), 0).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        p.signal_event(EventId(999)).unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn wait_timeout_conversion() {
    assert_eq!(wait_timeout_ms(0), 0);
    assert_eq!(wait_timeout_ms(1), 1);
    assert_eq!(wait_timeout_ms(1_000_000), 1);
    assert_eq!(wait_timeout_ms(1_000_001), 2);
    assert_eq!(wait_timeout_ms(u64::MAX), 0xffff_ffff);
    assert_eq!(wait_timeout_ms(u64::MAX - 1), 0xffff_ffff);
}

#[test]
fn drop_releases_everything() {
    let fake = Fake::new((1, 14));
    let monitor_events;
    {
        let p = LinuxPlatform::new(fake.clone(), topology()).unwrap();
        let (ring, amdq) = queue_memory(&p);
        // SAFETY: the chunks stay live until the platform drops, after the queue.
        unsafe { p.create_queue(&queue_request(&ring, &amdq)) }.unwrap();
        monitor_events = p.exception_events().unwrap();
        p.create_event().unwrap();
        p.allocate_memory(&req(
            GPU_NODE,
            MemoryKind::DeviceLocal,
            4096,
            MemoryFlags::empty(),
        ))
        .unwrap();
    }
    assert_eq!(fake.count(AMDKFD_IOC_DESTROY_QUEUE), 1);
    // The signal event and the monitor's two (which ends its thread's wait).
    let destroyed: Vec<u32> = fake
        .calls::<DestroyEventArgs>(AMDKFD_IOC_DESTROY_EVENT)
        .iter()
        .map(|d| d.event_id)
        .collect();
    assert_eq!(destroyed.len(), 3);
    assert!(destroyed.contains(&monitor_events.0) && destroyed.contains(&monitor_events.1));
    let allocs: Vec<u64> = fake
        .replies::<AllocMemoryOfGpuArgs>(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU)
        .iter()
        .map(|a| a.handle)
        .collect();
    let mut frees: Vec<u64> = fake
        .calls::<FreeMemoryOfGpuArgs>(AMDKFD_IOC_FREE_MEMORY_OF_GPU)
        .iter()
        .map(|a| a.handle)
        .collect();
    frees.sort();
    assert_eq!(
        allocs.len(),
        6,
        "ring, amd_queue, EOP, CWSR, event page, VRAM"
    );
    // Every buffer object is freed but the event page, which amdkfd keeps for the process's
    // life and refuses to free (EPERM).
    let event_page = fake
        .calls::<CreateEventArgs>(AMDKFD_IOC_CREATE_EVENT)
        .first()
        .map(|a| a.event_page_offset)
        .unwrap();
    let mut expected: Vec<u64> = allocs
        .iter()
        .copied()
        .filter(|h| *h != event_page)
        .collect();
    expected.sort();
    assert_eq!(expected.len(), 5);
    assert_eq!(frees, expected);
}

#[test]
fn machine_without_gpus_gets_plain_host_memory() {
    let fake = Fake::new((1, 14));
    let mut t = topology();
    t.nodes.truncate(1);
    let p = LinuxPlatform::new(fake.clone(), t).unwrap();
    let c = p
        .allocate_memory(&req(
            CPU_NODE,
            MemoryKind::System,
            4096,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    assert_eq!(c.handle, 0);
    assert!(c.host_ptr.is_some());
    assert_eq!(fake.count(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU), 0);
    assert_eq!(fake.count(AMDKFD_IOC_ACQUIRE_VM), 0);
    // SAFETY: nothing uses the chunk.
    unsafe { p.free_memory(&c) }.unwrap();
    // Events fall back to KFD's own page, mapped from /dev/kfd.
    let e = p.create_event().unwrap();
    let mm = fake.log.lock().unwrap().mmaps.clone();
    assert_eq!(mm.len(), 1);
    assert_eq!(
        (mm[0].0, mm[0].1, mm[0].2 as u64),
        (MapTarget::Kfd, KFD_MMAP_EVENTS_OFFSET, EVENT_PAGE_BYTES)
    );
    assert_eq!(e.mailbox.0, mm[0].3.unwrap() as u64 + 8 * u64::from(e.id.0));
}

#[test]
fn timestamps_are_monotonic_ns() {
    let (_f, p) = open();
    assert_eq!(p.timestamp_frequency_hz(), 1_000_000_000);
    let a = p.timestamp_ticks();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = p.timestamp_ticks();
    assert!(b - a >= 2_000_000, "{a} {b}");
}
