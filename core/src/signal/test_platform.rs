//! A minimal `Platform` for the signal and queue unit tests: host memory from the global
//! allocator (GPU VA = host address), events as flags under a std `Mutex`/`Condvar`, a
//! timestamp from `std::time::Instant` (1 GHz), doorbells recorded, and one-shot failure
//! injection. Not the project's `FakePlatform` (`platform/fake.rs`), which also runs queues.
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;
use std::vec::Vec;

use crate::addr::{EventId, GpuVa, QueueId};
use crate::platform::*;
use crate::status::{Error, Status};

const MAILBOXES: usize = 64;

/// A chunk's pointer kept with its provenance (miri's strict provenance).
struct SendPtr(*mut u8);
// SAFETY: only the platform dereferences it (to free), under its mutex.
unsafe impl Send for SendPtr {}

/// What `create_queue` was asked for (the Send parts of a `QueueRequest`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordedQueue {
    pub(crate) node: crate::addr::NodeId,
    pub(crate) ring: GpuVa,
    pub(crate) ring_host: usize,
    pub(crate) ring_size_bytes: u64,
    pub(crate) amd_queue: GpuVa,
    pub(crate) read_pointer: GpuVa,
    pub(crate) write_pointer: GpuVa,
    pub(crate) on_error: Option<QueueErrorCallback>,
}

/// See the module doc.
pub(crate) struct TestPlatform {
    start: Instant,
    chunks: Mutex<HashMap<u64, (SendPtr, Layout)>>,
    next_handle: AtomicU64,
    last_request: Mutex<Option<MemoryRequest>>,
    events: Mutex<Vec<Option<bool>>>,
    cv: Condvar,
    mailboxes: Box<[AtomicU64; MAILBOXES]>,
    signals: AtomicUsize,
    waits: AtomicUsize,
    queues: Mutex<Vec<(QueueId, RecordedQueue)>>,
    next_queue: AtomicU64,
    pub(crate) doorbells: Mutex<Vec<(QueueId, u64)>>,
    fail_alloc: AtomicBool,
    no_host_ptr: AtomicBool,
    fail_event: AtomicBool,
    misalign_mailbox: AtomicBool,
    fail_queue: AtomicBool,
}

use std::boxed::Box;

impl TestPlatform {
    pub(crate) fn new() -> Self {
        TestPlatform {
            start: Instant::now(),
            chunks: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
            last_request: Mutex::new(None),
            events: Mutex::new(Vec::new()),
            cv: Condvar::new(),
            mailboxes: Box::new([const { AtomicU64::new(0) }; MAILBOXES]),
            signals: AtomicUsize::new(0),
            waits: AtomicUsize::new(0),
            queues: Mutex::new(Vec::new()),
            next_queue: AtomicU64::new(7),
            doorbells: Mutex::new(Vec::new()),
            fail_alloc: AtomicBool::new(false),
            no_host_ptr: AtomicBool::new(false),
            fail_event: AtomicBool::new(false),
            misalign_mailbox: AtomicBool::new(false),
            fail_queue: AtomicBool::new(false),
        }
    }
    pub(crate) fn fail_next_allocation(&self) {
        self.fail_alloc.store(true, Ordering::SeqCst);
    }
    pub(crate) fn no_host_ptr_next_allocation(&self) {
        self.no_host_ptr.store(true, Ordering::SeqCst);
    }
    pub(crate) fn fail_next_event(&self) {
        self.fail_event.store(true, Ordering::SeqCst);
    }
    pub(crate) fn misalign_next_mailbox(&self) {
        self.misalign_mailbox.store(true, Ordering::SeqCst);
    }
    pub(crate) fn fail_next_queue(&self) {
        self.fail_queue.store(true, Ordering::SeqCst);
    }
    pub(crate) fn signal_count(&self) -> usize {
        self.signals.load(Ordering::SeqCst)
    }
    pub(crate) fn wait_count(&self) -> usize {
        self.waits.load(Ordering::SeqCst)
    }
    pub(crate) fn live_events(&self) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.is_some())
            .count()
    }
    pub(crate) fn live_chunks(&self) -> usize {
        self.chunks.lock().unwrap().len()
    }
    pub(crate) fn live_queues(&self) -> usize {
        self.queues.lock().unwrap().len()
    }
    pub(crate) fn queue_request(&self, id: QueueId) -> Option<RecordedQueue> {
        self.queues
            .lock()
            .unwrap()
            .iter()
            .find(|q| q.0 == id)
            .map(|q| q.1)
    }
    pub(crate) fn last_request(&self) -> Option<MemoryRequest> {
        *self.last_request.lock().unwrap()
    }
    pub(crate) fn mailbox_address(&self, ev: EventId) -> u64 {
        &self.mailboxes[ev.get() as usize] as *const AtomicU64 as usize as u64
    }
    pub(crate) fn mailbox_value(&self, ev: EventId) -> u64 {
        self.mailboxes[ev.get() as usize].load(Ordering::SeqCst)
    }
    /// Doorbell value, ns-clock tick.
    pub(crate) fn doorbell_writes(&self) -> Vec<(QueueId, u64)> {
        self.doorbells.lock().unwrap().clone()
    }
}

impl Drop for TestPlatform {
    fn drop(&mut self) {
        for (_, (ptr, layout)) in self.chunks.get_mut().unwrap().drain() {
            // SAFETY: allocated in allocate_memory with this layout and not freed.
            unsafe { std::alloc::dealloc(ptr.0, layout) };
        }
    }
}

fn err(status: Status, msg: &str) -> Error {
    Error::new(status, msg)
}

// SAFETY: chunks are zeroed, aligned as asked, unique and valid until freed; every method is
// thread-safe (mutexes and atomics). Queues are only recorded, never run.
unsafe impl Platform for TestPlatform {
    type Error = Error;
    fn device_name(&self) -> &str {
        "test"
    }
    fn node_count(&self) -> usize {
        1
    }
    fn node(&self, index: usize) -> Result<NodeProperties, Error> {
        if index == 0 {
            Ok(NodeProperties::default())
        } else {
            Err(err(Status::InvalidIndex, "node"))
        }
    }
    fn memory_bank(&self, _: usize, _: usize) -> Result<Option<MemoryBank>, Error> {
        Ok(None)
    }
    fn cache(&self, _: usize, _: usize) -> Result<Option<Cache>, Error> {
        Ok(None)
    }
    fn io_link(&self, _: usize, _: usize) -> Result<Option<IoLink>, Error> {
        Ok(None)
    }
    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        *self.last_request.lock().unwrap() = Some(*request);
        if self.fail_alloc.swap(false, Ordering::SeqCst) {
            return Err(err(Status::OutOfResources, "injected allocation failure"));
        }
        let layout =
            Layout::from_size_align(request.size_bytes as usize, request.align_bytes as usize)
                .map_err(|_| err(Status::InvalidArgument, "layout"))?;
        // SAFETY: size is non-zero (callers ask for >= 4096).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let host = NonNull::new(ptr).ok_or_else(|| err(Status::OutOfResources, "oom"))?;
        let handle = self.next_handle.fetch_add(1, Ordering::SeqCst);
        self.chunks
            .lock()
            .unwrap()
            .insert(handle, (SendPtr(ptr), layout));
        let no_host = self.no_host_ptr.swap(false, Ordering::SeqCst);
        Ok(MemoryChunk {
            gpu_va: GpuVa(ptr as usize as u64),
            host_ptr: if no_host { None } else { Some(host) },
            size_bytes: request.size_bytes,
            handle,
        })
    }
    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        let (ptr, layout) = self
            .chunks
            .lock()
            .unwrap()
            .remove(&chunk.handle)
            .ok_or_else(|| err(Status::ResourceFree, "unknown chunk"))?;
        // SAFETY: allocated in allocate_memory with this layout; removed from the table once.
        unsafe { std::alloc::dealloc(ptr.0, layout) };
        Ok(())
    }
    fn map_memory(&self, _: &MemoryChunk, _: &[crate::addr::NodeId]) -> Result<(), Error> {
        Ok(())
    }
    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue, Error> {
        if self.fail_queue.swap(false, Ordering::SeqCst) {
            return Err(err(
                Status::OutOfResources,
                "injected: no free hardware queue",
            ));
        }
        let id = QueueId(self.next_queue.fetch_add(1, Ordering::SeqCst) as u32);
        self.queues.lock().unwrap().push((
            id,
            RecordedQueue {
                node: request.node,
                ring: request.ring,
                ring_host: request.ring_host.as_ptr() as usize,
                ring_size_bytes: request.ring_size_bytes,
                amd_queue: request.amd_queue,
                read_pointer: request.read_pointer,
                write_pointer: request.write_pointer,
                on_error: request.on_error,
            },
        ));
        Ok(HwQueue {
            id,
            doorbell_address: 0xd00b_e000 + 8 * u64::from(id.get()),
        })
    }
    fn ring_doorbell(&self, queue: QueueId, write_index: u64) {
        self.doorbells.lock().unwrap().push((queue, write_index));
    }
    fn destroy_queue(&self, queue: QueueId) -> Result<(), Error> {
        let mut q = self.queues.lock().unwrap();
        let pos = q
            .iter()
            .position(|x| x.0 == queue)
            .ok_or_else(|| err(Status::InvalidQueue, "unknown queue"))?;
        q.remove(pos);
        Ok(())
    }
    fn create_event(&self) -> Result<Event, Error> {
        if self.fail_event.swap(false, Ordering::SeqCst) {
            return Err(err(Status::OutOfResources, "injected: no more events"));
        }
        let mut events = self.events.lock().unwrap();
        let id = match events.iter().position(|e| e.is_none()) {
            Some(i) => i,
            None => {
                events.push(None);
                events.len() - 1
            }
        };
        if id >= MAILBOXES {
            return Err(err(Status::OutOfResources, "no more events"));
        }
        events[id] = Some(false);
        let ev = EventId(id as u32);
        let mut mailbox = self.mailbox_address(ev);
        if self.misalign_mailbox.swap(false, Ordering::SeqCst) {
            mailbox += 4;
        }
        Ok(Event {
            id: ev,
            mailbox: GpuVa(mailbox),
        })
    }
    fn destroy_event(&self, event: EventId) -> Result<(), Error> {
        let mut events = self.events.lock().unwrap();
        match events.get_mut(event.get() as usize) {
            Some(e @ Some(_)) => {
                *e = None;
                self.cv.notify_all();
                Ok(())
            }
            _ => Err(err(Status::InvalidArgument, "unknown event")),
        }
    }
    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome, Error> {
        self.waits.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now().checked_add(std::time::Duration::from_nanos(timeout_ns));
        let mut events = self.events.lock().unwrap();
        loop {
            match events.get_mut(event.get() as usize) {
                Some(Some(flag)) => {
                    if *flag {
                        *flag = false;
                        return Ok(WaitOutcome::Signaled);
                    }
                }
                _ => return Err(err(Status::InvalidArgument, "unknown event")),
            }
            match deadline {
                None => events = self.cv.wait(events).unwrap(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(WaitOutcome::TimedOut);
                    }
                    events = self.cv.wait_timeout(events, d - now).unwrap().0;
                }
            }
        }
    }
    fn signal_event(&self, event: EventId) -> Result<(), Error> {
        self.signals.fetch_add(1, Ordering::SeqCst);
        let mut events = self.events.lock().unwrap();
        match events.get_mut(event.get() as usize) {
            Some(Some(flag)) => {
                *flag = true;
                self.cv.notify_all();
                Ok(())
            }
            _ => Err(err(Status::InvalidArgument, "unknown event")),
        }
    }
    fn timestamp_ticks(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
}
