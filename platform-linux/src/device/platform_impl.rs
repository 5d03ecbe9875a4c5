//! The `unsafe impl` of [`Platform`] for [`LinuxPlatform`]: the trait is unsafe (its
//! implementer vouches for the memory and queue guarantees), so the impl lives in this module,
//! the one place of `device` allowed to write `unsafe`. Its one unsafe block is CREATE_QUEUE
//! ([`calls::create_queue`]), inside `create_queue`, whose own contract covers it.
#![allow(unsafe_code)]

use hsa_core::abi::queue::AmdQueue;
use hsa_core::addr::{EventId, GpuVa, NodeId, QueueId};
use hsa_core::platform::{
    Cache, Capabilities, Event, HostMemoryRegistration, HwQueue, IoLink, MemoryBank, MemoryChunk,
    MemoryFaultHandler, MemoryFaultReports, MemoryFlags, MemoryKind, MemoryRequest, MemorySharing,
    NodeProperties, Platform, QueueErrorCallback, QueueKind, QueueRequest, SdmaQueueRequest,
    SdmaQueues, SegmentApertures, SharedMemory, TopologySource, WaitOutcome,
};
use hsa_core::{bail, error, Error, Status};
use std::mem::offset_of;
use std::ptr::NonNull;
use zerocopy::IntoBytes;

use super::*;
use crate::kfd::abi::*;
use crate::kfd::calls::{self, call};
use crate::kfd::driver::MapTarget;

impl TopologySource for LinuxPlatform {
    fn device_name(&self) -> &str {
        self.driver.name()
    }

    fn node_count(&self) -> usize {
        self.topology.nodes.len()
    }

    fn node(&self, index: usize) -> Result<NodeProperties, Error> {
        Ok(self.topo_node(index)?.properties.clone())
    }

    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>, Error> {
        Ok(self.topo_node(index)?.memory_banks.get(bank).copied())
    }

    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>, Error> {
        Ok(self.topo_node(index)?.caches.get(cache).copied())
    }

    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>, Error> {
        Ok(self.topo_node(index)?.io_links.get(link).copied())
    }

    /// The mode KFD reported at open (see [`LinuxPlatform::with_xnack`]).
    fn xnack_enabled(&self) -> bool {
        self.xnack
    }

    /// The apertures `GET_PROCESS_APERTURES_NEW` reported for the node's GPU (`lds_base`,
    /// `scratch_base`); `None` for a CPU node, or when amdkfd reported none.
    fn segment_apertures(&self, node: NodeId) -> Option<SegmentApertures> {
        self.gpus
            .iter()
            .find(|g| g.node_id == node.get())
            .filter(|g| g.lds_base != 0 || g.scratch_base != 0)
            .map(|g| SegmentApertures {
                group_base: g.lds_base,
                private_base: g.scratch_base,
            })
    }
}

// SAFETY: chunks are carved from one reservation and never overlap while live; they are zeroed
// (host-visible ones written with zeros; device-only VRAM is wiped by amdgpu on release) and
// aligned as asked; queues are created over the caller's ring and amd_queue_t only; all state is
// behind mutexes and the driver is Send + Sync, so every method may run from any thread.
unsafe impl Platform for LinuxPlatform {
    type Doorbell = KfdDoorbell;

    /// System memory is host pages registered with KFD as USERPTR on the node's GPU (the
    /// first GPU for a CPU node, as ROCR does) and mapped to every GPU — or, when
    /// [`MemoryFlags::SHAREABLE`], a GTT buffer object there (mapped for the host from the
    /// render node), which KFD can export; device-local memory is
    /// VRAM of the node's GPU, mapped to it (and into the host at the same address when
    /// `HOST_ACCESS`). Chunks of 2 MiB or more are 2 MiB aligned.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for a size that is not a positive multiple of the page
    /// size, an alignment that is not a power of two ≥ 4096, an unknown node, or device-local
    /// memory of a CPU node; [`Status::OutOfResources`] when the reservation or KFD has no
    /// room; the failing ioctl's error otherwise.
    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        if self.node_by_id(request.node).is_none() {
            bail!(
                Status::InvalidArgument,
                "node {} does not exist",
                request.node.0
            );
        }
        let own_gpu = self.gpu_by_node(request.node).map(|g| g.gpu_id);
        match request.kind {
            MemoryKind::System => {
                let alloc_gpu = own_gpu.or_else(|| self.gpus.first().map(|g| g.gpu_id));
                let map_to = self.all_gpu_ids();
                let placement =
                    if request.flags.contains(MemoryFlags::SHAREABLE) && alloc_gpu.is_some() {
                        KfdPlacement::Gtt
                    } else {
                        KfdPlacement::UserPtr
                    };
                self.alloc_chunk(
                    alloc_gpu,
                    placement,
                    request.size_bytes,
                    request.align_bytes,
                    request.flags,
                    &map_to,
                )
            }
            MemoryKind::DeviceLocal => {
                let Some(gpu_id) = own_gpu else {
                    bail!(
                        Status::InvalidArgument,
                        "node {} is not a GPU: it has no device-local memory",
                        request.node.0
                    );
                };
                self.alloc_chunk(
                    Some(gpu_id),
                    KfdPlacement::Vram,
                    request.size_bytes,
                    request.align_bytes,
                    request.flags,
                    &[gpu_id],
                )
            }
        }
    }

    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        if self.chunk_is_user(chunk.gpu_va.0) == Some(true) {
            bail!(
                Status::InvalidArgument,
                "gpu_va {} is registered host memory: deregister it instead",
                chunk.gpu_va
            );
        }
        self.free_chunk(chunk.gpu_va.0)
    }

    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<(), Error> {
        let mut ids = Vec::new();
        for &n in nodes {
            if self.node_by_id(n).is_none() {
                bail!(Status::InvalidArgument, "node {} does not exist", n.0);
            }
            if let Some(g) = self.gpu_by_node(n) {
                if !ids.contains(&g.gpu_id) {
                    ids.push(g.gpu_id);
                }
            }
        }
        let va = chunk.gpu_va.0;
        let handle = {
            let st = lock(&self.state);
            let rec = st.chunks.get(&va).ok_or_else(|| {
                error!(Status::InvalidArgument, "no live chunk at gpu_va {va:#x}")
            })?;
            // Only GPUs it is not mapped to yet, as libhsakmt maps: amdkfd skips a GPU the
            // buffer is mapped to, after a sync and a TLB flush for nothing.
            ids.retain(|id| !rec.mapped_to.contains(id));
            rec.handle
        };
        let (Some(handle), false) = (handle, ids.is_empty()) else {
            return Ok(()); // CPU nodes only, or mapped already: the access is there
        };
        self.map_handle(handle, &ids)?;
        if let Some(rec) = lock(&self.state).chunks.get_mut(&va) {
            for id in ids {
                if !rec.mapped_to.contains(&id) {
                    rec.mapped_to.push(id);
                }
            }
        }
        Ok(())
    }

    /// Starts the queue-error monitor if this is the platform's first queue (its two KFD
    /// events), allocates the queue's EOP buffer (VRAM) and CWSR area (host memory, headers
    /// written), sized as amdkfd computes them from the topology ([`queue_buffer_sizes`]),
    /// creates an AQL queue at normal priority (7) and 100 %, and maps the GPU's doorbell page
    /// once.
    ///
    /// # Errors
    /// [`Status::InvalidAgent`] for an unknown node; [`Status::InvalidQueueCreation`] for a CPU
    /// node, a GPU before gfx9 (32-bit doorbells), a ring size that is not a power of two in
    /// `1024..=2^31` bytes, or a node whose CU counts are missing; the failing ioctl's or
    /// allocation's error (the monitor's: `"creating the KFD memory event that reports queue
    /// errors: ..."`).
    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue<KfdDoorbell>, Error> {
        let QueueKind::ComputeAql = request.kind;
        let Some(props) = self.node_by_id(request.node) else {
            bail!(
                Status::InvalidAgent,
                "node {} does not exist",
                request.node.0
            );
        };
        let Some(gpu) = self.gpu_by_node(request.node).copied() else {
            bail!(
                Status::InvalidQueueCreation,
                "node {} is not a GPU",
                request.node.0
            );
        };
        let ring = request.ring_size_bytes;
        if !ring.is_power_of_two() || ring < u64::from(KFD_MIN_QUEUE_RING_SIZE) || ring > 1 << 31 {
            bail!(
                Status::InvalidQueueCreation,
                "ring_size_bytes {ring} is not a power of two in {KFD_MIN_QUEUE_RING_SIZE}..=2^31"
            );
        }
        if gpu.gfx_target_version < 90000 {
            bail!(
                Status::InvalidQueueCreation,
                "node {}: gfx_target_version {} is before gfx9 (32-bit doorbells are not supported)",
                request.node.0,
                gpu.gfx_target_version
            );
        }
        let page = self.process.va.page_bytes();
        let Some(sizes) = queue_buffer_sizes(props, page) else {
            let cus = props.compute_unit_count();
            if cus == 0 {
                bail!(
                    Status::InvalidQueueCreation,
                    "node {}: simd_count {} / simd_per_cu {} give no compute units",
                    request.node.0,
                    props.simd_count,
                    props.simd_per_cu
                );
            }
            bail!(
                Status::InvalidQueueCreation,
                "node {}: the context save area of {cus} compute units (simd_count {} / \
                 simd_per_cu {}, {} XCCs) does not fit the 32-bit sizes of CREATE_QUEUE",
                request.node.0,
                props.simd_count,
                props.simd_per_cu,
                props.num_xcc.max(1)
            );
        };

        // The queue-error monitor before the queue can fail (its events are the process's
        // first on a platform that made no signal event yet).
        let monitor = self.monitor()?;
        let eop = if sizes.eop_buffer_bytes > 0 {
            Some(self.alloc_chunk(
                Some(gpu.gpu_id),
                KfdPlacement::Vram,
                sizes.eop_buffer_bytes.div_ceil(page) * page,
                4096,
                MemoryFlags::EXECUTABLE,
                &[gpu.gpu_id],
            )?)
        } else {
            None
        };
        let cwsr = match self.alloc_chunk(
            Some(gpu.gpu_id),
            KfdPlacement::UserPtr,
            sizes.cwsr_total_bytes,
            4096,
            MemoryFlags::HOST_ACCESS | MemoryFlags::EXECUTABLE,
            &[gpu.gpu_id],
        ) {
            Ok(c) => c,
            Err(e) => {
                if let Some(c) = eop {
                    let _ = self.free_chunk(c.gpu_va.0);
                }
                return Err(e);
            }
        };
        for xcc in 0..sizes.num_xcc {
            let h = context_save_area_header(&sizes, xcc);
            let at = cwsr.gpu_va.0 + u64::from(xcc) * u64::from(sizes.ctx_save_restore_bytes);
            self.process.va.write(at, h.as_bytes());
        }
        let rec = QueueRecord {
            eop,
            cwsr: Some(cwsr),
            ring: (request.ring.0, ring as u32),
        };

        let mut a = CreateQueueArgs {
            ring_base_address: request.ring.0,
            write_pointer_address: request.write_pointer.0,
            read_pointer_address: request.read_pointer.0,
            doorbell_offset: 0,
            ring_size: ring as u32,
            gpu_id: gpu.gpu_id,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
            queue_priority: QUEUE_PRIORITY_NORMAL,
            queue_id: 0,
            eop_buffer_address: eop.map_or(0, |c| c.gpu_va.0),
            eop_buffer_size: if eop.is_some() {
                sizes.eop_buffer_bytes
            } else {
                0
            },
            ctx_save_restore_address: cwsr.gpu_va.0,
            ctx_save_restore_size: sizes.ctx_save_restore_bytes,
            ctl_stack_size: sizes.ctl_stack_bytes,
        };
        // SAFETY: the ring and the amd_queue_t holding the two pointers are the caller's
        // (`Platform::create_queue`'s contract: chunks of this platform, mapped to the GPU, that
        // outlive the queue, their shared words accessed atomically by the core); the EOP
        // buffer and the context save area are chunks allocated above for the queue, mapped to
        // its GPU and freed only after DESTROY_QUEUE succeeded (`destroy_queue` keeps them
        // when it fails).
        if let Err(e) = unsafe { calls::create_queue(&*self.driver, &mut a) } {
            self.free_queue_buffers(&rec);
            return Err(e);
        }
        let mask = DOORBELL_PAGE_BYTES - 1;
        let within = a.doorbell_offset & mask;
        let page = match self.doorbell_page(gpu.gpu_id, a.doorbell_offset & !mask) {
            Ok(page) if within % 8 == 0 && within + 8 <= page.len_bytes() => page,
            r => {
                let e = r.err().unwrap_or_else(|| {
                    error!(
                        Status::Error,
                        "AMDKFD_IOC_CREATE_QUEUE returned doorbell_offset {:#x}, not 8-byte aligned \
                         inside the doorbell page",
                        a.doorbell_offset
                    )
                });
                let mut d = DestroyQueueArgs {
                    queue_id: a.queue_id,
                    pad: 0,
                };
                if call(&*self.driver, &mut d).is_ok() {
                    self.free_queue_buffers(&rec);
                } else {
                    // The queue may still run: keep its record and buffers, as `destroy_queue`
                    // does; the platform's drop retries DESTROY and frees them only after it
                    // succeeded.
                    lock(&self.state).queues.insert(a.queue_id, rec);
                }
                return Err(e);
            }
        };
        let doorbell = KfdDoorbell {
            page,
            offset: within,
        };
        lock(&self.state).queues.insert(a.queue_id, rec);
        {
            let m = monitor;
            // Without a callback the error is printed and the process aborts, as ROCR does.
            let callback = request.on_error.unwrap_or(QueueErrorCallback {
                func: abort_on_queue_error,
                data: 0,
            });
            // The handle the core put into amd_queue_t.queue_inactive_signal (0: none).
            let at = request.amd_queue.0 + offset_of!(AmdQueue, queue_inactive_signal) as u64;
            let inactive_signal = self.process.va.load_u64_acquire(at).unwrap_or(0);
            m.watch(
                a.queue_id,
                super::monitor::WatchedQueue {
                    gpu_id: gpu.gpu_id,
                    inactive_signal,
                    callback,
                    reported: false,
                },
            );
        }
        Ok(HwQueue {
            id: QueueId(a.queue_id),
            doorbell_address: doorbell.address(),
            doorbell,
        })
    }

    /// One release store of `write_index` to the queue's doorbell word ([`KfdDoorbell`]):
    /// the device (the GPU's command processor, or the emulated one) watches that word.
    fn ring_doorbell(&self, doorbell: &KfdDoorbell, write_index: u64) {
        doorbell.ring(write_index);
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<(), Error> {
        let rec = lock(&self.state)
            .queues
            .remove(&queue.0)
            .ok_or_else(|| error!(Status::InvalidQueue, "no queue with id {}", queue.0))?;
        // The monitor stops reading the queue's inactive signal before the caller may free it.
        let watched = self.monitor.get().and_then(|m| m.unwatch(queue.0));
        let mut d = DestroyQueueArgs {
            queue_id: queue.0,
            pad: 0,
        };
        // If DESTROY fails the queue may still run: keep its record and buffers (the CP may
        // write them) so that a later destroy, at the latest the platform's drop, retries.
        if let Err(e) = call(&*self.driver, &mut d) {
            lock(&self.state).queues.insert(queue.0, rec);
            if let (Some(m), Some(w)) = (self.monitor.get(), watched) {
                m.watch(queue.0, w);
            }
            return Err(e);
        }
        // An error the queue stored that no event reported yet (the destroy came first)
        // reaches its callback now, once: ROCR 5.2 runs the error handler before a queue's
        // destruction completes. The inactive signal is the caller's and still live.
        if let (Some(m), Some(w)) = (self.monitor.get(), &watched) {
            if let Some(e) = m.unreported(w) {
                super::monitor::deliver(&w.callback, &e, queue);
            }
        }
        self.free_queue_buffers(&rec);
        Ok(())
    }

    /// A KFD signal event, auto-reset. The process's first event (this one, or the
    /// queue-error monitor's memory event, made with the first queue) hands KFD the event page: a 32 KiB
    /// uncached GTT buffer object (amdkfd maps it into the kernel, which it refuses for
    /// USERPTR memory), mapped for the host from the render node and to every GPU (so the GPU
    /// can write mailboxes), its handle in `event_page_offset` (libhsakmt's dGPU path);
    /// without GPUs, KFD's own page is mapped from `/dev/kfd` at the returned offset.
    ///
    /// # Errors
    /// [`Status::OutOfResources`] when KFD has no more events (`ENOSPC`... mapped by
    /// [`crate::kfd::status_for_errno`]) or the page cannot be allocated.
    fn create_event(&self) -> Result<Event, Error> {
        let (a, mailbox) = self.create_kfd_event(KFD_IOC_EVENT_SIGNAL)?;
        lock(&self.state).events.insert(a.event_id);
        Ok(Event {
            id: EventId(a.event_id),
            mailbox: GpuVa(mailbox),
        })
    }

    fn destroy_event(&self, event: EventId) -> Result<(), Error> {
        if !lock(&self.state).events.remove(&event.0) {
            bail!(Status::InvalidArgument, "no event with id {}", event.0);
        }
        let mut d = DestroyEventArgs {
            event_id: event.0,
            pad: 0,
        };
        // A failed DESTROY leaves the event alive in KFD: keep it recorded so that a later
        // destroy, at the latest the platform's drop, retries.
        call(&*self.driver, &mut d).inspect_err(|_| {
            lock(&self.state).events.insert(event.0);
        })
    }

    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome, Error> {
        if !lock(&self.state).events.contains(&event.0) {
            bail!(Status::InvalidArgument, "no event with id {}", event.0);
        }
        let mut data = [EventData {
            event_id: event.0,
            ..EventData::default()
        }];
        let wait_result =
            calls::wait_events(&*self.driver, &mut data, true, wait_timeout_ms(timeout_ns))?;
        match wait_result {
            KFD_IOC_WAIT_RESULT_COMPLETE => Ok(WaitOutcome::Signaled),
            KFD_IOC_WAIT_RESULT_TIMEOUT => Ok(WaitOutcome::TimedOut),
            r => Err(error!(
                Status::Error,
                "AMDKFD_IOC_WAIT_EVENTS on event {}: wait_result {r} (KFD_IOC_WAIT_RESULT_FAIL is 2)",
                event.0
            )),
        }
    }

    /// One `AMDKFD_IOC_WAIT_EVENTS` over all of `events` with `wait_for_all` 0: amdkfd returns
    /// when any of them is signaled (`kfd_wait_on_events`), consuming those that were.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for an empty list, more than `KFD_SIGNAL_EVENT_LIMIT`
    /// events, or an event this platform did not create; the ioctl's error.
    fn wait_any_event(&self, events: &[EventId], timeout_ns: u64) -> Result<WaitOutcome, Error> {
        {
            let st = lock(&self.state);
            if let Some(e) = events.iter().find(|e| !st.events.contains(&e.0)) {
                bail!(Status::InvalidArgument, "no event with id {}", e.0);
            }
        }
        let mut data: Vec<EventData> = events
            .iter()
            .map(|e| EventData {
                event_id: e.0,
                ..EventData::default()
            })
            .collect();
        let wait_result =
            calls::wait_events(&*self.driver, &mut data, false, wait_timeout_ms(timeout_ns))?;
        match wait_result {
            KFD_IOC_WAIT_RESULT_COMPLETE => Ok(WaitOutcome::Signaled),
            KFD_IOC_WAIT_RESULT_TIMEOUT => Ok(WaitOutcome::TimedOut),
            r => Err(error!(
                Status::Error,
                "AMDKFD_IOC_WAIT_EVENTS on {} events: wait_result {r} (KFD_IOC_WAIT_RESULT_FAIL \
                 is 2)",
                events.len()
            )),
        }
    }

    fn signal_event(&self, event: EventId) -> Result<(), Error> {
        if !lock(&self.state).events.contains(&event.0) {
            bail!(Status::InvalidArgument, "no event with id {}", event.0);
        }
        let mut s = SetEventArgs {
            event_id: event.0,
            pad: 0,
        };
        call(&*self.driver, &mut s)
    }

    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` once this process registered for it
    /// (Linux 4.14+; decided on the first call, for the process's life); `None` where the
    /// kernel refuses the registration.
    fn process_barrier(&self) -> Option<fn()> {
        process_barrier()
    }

    fn timestamp_ticks(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        (t.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(t.tv_nsec as u64)
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }

    /// Every optional capability: SDMA queues, host-memory registration (`USERPTR`), sharing
    /// (dma-buf), memory-fault reports (the monitor).
    fn capabilities(&self) -> Capabilities<'_, KfdDoorbell> {
        Capabilities {
            sdma: Some(self),
            host_memory: Some(self),
            sharing: Some(self),
            memory_faults: Some(self),
            virtual_ranges: self.has_virtual_ranges().then_some(self as _),
        }
    }

    /// Sleeps the thread for `ns` (the scheduler runs others meanwhile, the emulated
    /// device's engine threads among them).
    fn relax(&self, ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

// SAFETY: as the `Platform` impl: the queue reads only the ring and pointers of the request.
unsafe impl SdmaQueues<KfdDoorbell> for LinuxPlatform {
    /// `CREATE_QUEUE` of `KFD_IOC_QUEUE_TYPE_SDMA` as ROCR 5.2's `BlitSdma::Initialize` asks
    /// libhsakmt for it: 100 %, the highest priority (15), the caller's ring and pointers, no
    /// EOP or context-save buffer; the GPU's doorbell page mapped once, as for compute queues.
    /// Queue errors of an SDMA engine reach the process as KFD memory and hardware-exception
    /// events (nothing to watch: it has no `queue_inactive_signal`), so the platform's first
    /// queue of either kind starts the queue-error monitor.
    ///
    /// # Errors
    /// [`Status::InvalidAgent`] for an unknown node; [`Status::InvalidQueueCreation`] for a CPU
    /// node, a GPU before gfx9 (32-bit SDMA pointers), or a ring size that is not a power of
    /// two in `1024..=2^31` bytes; the monitor's (`"creating the KFD memory event that reports
    /// queue errors: ..."`); the ioctl's error (`OutOfResources` for amdkfd's `ENOMEM`
    /// when the GPU's SDMA queues are all in use).
    unsafe fn create_sdma_queue(
        &self,
        request: &SdmaQueueRequest,
    ) -> Result<HwQueue<KfdDoorbell>, Error> {
        if self.node_by_id(request.node).is_none() {
            bail!(
                Status::InvalidAgent,
                "node {} does not exist",
                request.node.0
            );
        }
        let Some(gpu) = self.gpu_by_node(request.node).copied() else {
            bail!(
                Status::InvalidQueueCreation,
                "node {} is not a GPU",
                request.node.0
            );
        };
        let ring = request.ring_size_bytes;
        if !ring.is_power_of_two() || ring < u64::from(KFD_MIN_QUEUE_RING_SIZE) || ring > 1 << 31 {
            bail!(
                Status::InvalidQueueCreation,
                "ring_size_bytes {ring} is not a power of two in {KFD_MIN_QUEUE_RING_SIZE}..=2^31"
            );
        }
        if gpu.gfx_target_version < 90000 {
            bail!(
                Status::InvalidQueueCreation,
                "node {}: gfx_target_version {} is before gfx9 (32-bit SDMA pointers are not \
                 supported)",
                request.node.0,
                gpu.gfx_target_version
            );
        }
        // The queue-error monitor before the queue can fail: an SDMA engine's memory fault
        // reaches the process only through the KFD memory and hardware-exception events that
        // the monitor waits on.
        self.monitor()?;
        let mut a = CreateQueueArgs {
            ring_base_address: request.ring.0,
            write_pointer_address: request.write_pointer.0,
            read_pointer_address: request.read_pointer.0,
            ring_size: ring as u32,
            gpu_id: gpu.gpu_id,
            queue_type: KFD_IOC_QUEUE_TYPE_SDMA,
            queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
            queue_priority: KFD_MAX_QUEUE_PRIORITY,
            ..Default::default()
        };
        // SAFETY: the ring and both pointers are the caller's (`SdmaQueues::create_sdma_queue`'s
        // contract: chunks of this platform, mapped to the GPU, that outlive the queue, the
        // pointer words accessed atomically).
        unsafe { calls::create_queue(&*self.driver, &mut a) }?;
        let mask = DOORBELL_PAGE_BYTES - 1;
        let within = a.doorbell_offset & mask;
        let page = match self.doorbell_page(gpu.gpu_id, a.doorbell_offset & !mask) {
            Ok(page) if within % 8 == 0 && within + 8 <= page.len_bytes() => page,
            r => {
                let e = r.err().unwrap_or_else(|| {
                    error!(
                        Status::Error,
                        "AMDKFD_IOC_CREATE_QUEUE returned doorbell_offset {:#x}, not 8-byte aligned \
                         inside the doorbell page",
                        a.doorbell_offset
                    )
                });
                let rec = QueueRecord {
                    eop: None,
                    cwsr: None,
                    ring: (request.ring.0, ring as u32),
                };
                let mut d = DestroyQueueArgs {
                    queue_id: a.queue_id,
                    pad: 0,
                };
                if call(&*self.driver, &mut d).is_err() {
                    lock(&self.state).queues.insert(a.queue_id, rec);
                }
                return Err(e);
            }
        };
        lock(&self.state).queues.insert(
            a.queue_id,
            QueueRecord {
                eop: None,
                cwsr: None,
                ring: (request.ring.0, ring as u32),
            },
        );
        let doorbell = KfdDoorbell {
            page,
            offset: within,
        };
        Ok(HwQueue {
            id: QueueId(a.queue_id),
            doorbell_address: doorbell.address(),
            doorbell,
        })
    }
}

// SAFETY: a registration's chunk has the caller's host pointer and a fresh carved device
// address mapped to the GPUs named, until deregistered.
unsafe impl HostMemoryRegistration for LinuxPlatform {
    /// Registers the application's pages with KFD as a `USERPTR` buffer at a device address
    /// carved from the reservation (as libhsakmt gives registered memory an address of its
    /// GPUVM aperture: ROCR's "alternate VA"), allocated on the first GPU of `nodes` and mapped
    /// to every GPU of `nodes`; coherent (fine-grained), as the host writes the pages while
    /// kernels may read them. Only CPU nodes: nothing to register; the chunk's device address
    /// is then the host address (recorded without a KFD handle).
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for an address or size that is not page-aligned, a size of
    /// 0, an unknown node, or memory inside this platform's own reservation (already
    /// reachable); the ALLOC ioctl's error as `Status::Error` (ROCR's status when
    /// registration fails); `Status::OutOfResources` when MAP fails.
    unsafe fn register_host_memory(
        &self,
        host: NonNull<u8>,
        size_bytes: u64,
        nodes: &[NodeId],
    ) -> Result<MemoryChunk, Error> {
        let va = host.as_ptr() as u64;
        let page = self.process.va.page_bytes();
        if size_bytes == 0 || size_bytes % page != 0 || va % page != 0 {
            bail!(
                Status::InvalidArgument,
                "{size_bytes} bytes at {va:#x}: address and size must be multiples of the page \
                 size {page} (and the size not 0)"
            );
        }
        if va.checked_add(size_bytes).is_none() || self.in_reservation(va, size_bytes) {
            bail!(
                Status::InvalidArgument,
                "{size_bytes} bytes at {va:#x} overlap this platform's own memory"
            );
        }
        let mut gpu_ids = Vec::new();
        for &n in nodes {
            if self.node_by_id(n).is_none() {
                bail!(Status::InvalidArgument, "node {} does not exist", n.0);
            }
            if let Some(g) = self.gpu_by_node(n) {
                if !gpu_ids.contains(&g.gpu_id) {
                    gpu_ids.push(g.gpu_id);
                }
            }
        }
        let Some(&alloc_gpu) = gpu_ids.first() else {
            if lock(&self.state).chunks.contains_key(&va) {
                bail!(
                    Status::InvalidArgument,
                    "{size_bytes} bytes at {va:#x} are already registered for the host alone"
                );
            }
            self.record_user(va, size_bytes, None, Vec::new(), false);
            return Ok(MemoryChunk {
                gpu_va: GpuVa(va),
                host_ptr: Some(host),
                size_bytes,
                handle: 0,
            });
        };
        let gpu_va = self.process.va.carve(size_bytes, page).ok_or_else(|| {
            error!(
                Status::OutOfResources,
                "no address space left to register {size_bytes} bytes ({} of {} bytes free)",
                self.process.va.free_bytes(),
                self.process.va.len_bytes()
            )
        })?;
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: gpu_va,
            size: size_bytes,
            handle: 0,
            // USERPTR: the user address goes in mmap_offset (kfd_ioctl.h).
            mmap_offset: va,
            gpu_id: alloc_gpu,
            flags: kfd_alloc_flags_for(KfdPlacement::UserPtr, MemoryFlags::FINE_GRAINED),
        };
        // SAFETY: `[va, va + size_bytes)` is mapped read-write memory of this process that
        // stays mapped until deregister_host_memory returns (this function's contract); the
        // device address is a fresh carved range of the reservation, so no other buffer uses
        // it.
        if let Err(e) = unsafe { calls::alloc_userptr_memory_of_gpu(&*self.driver, &mut a) } {
            let _ = self.process.va.release(gpu_va);
            bail!(Status::Error, "{}", e.detail());
        }
        let handle = a.handle;
        if let Err(e) = self.map_handle(handle, &gpu_ids) {
            if call(&*self.driver, &mut FreeMemoryOfGpuArgs { handle }).is_err() {
                // KFD keeps the buffer: record it (its address stays carved) so that the
                // platform's drop retries.
                self.record_user(gpu_va, size_bytes, Some(handle), Vec::new(), true);
            } else {
                let _ = self.process.va.release(gpu_va);
            }
            bail!(Status::OutOfResources, "{}", e.detail());
        }
        self.record_user(gpu_va, size_bytes, Some(handle), gpu_ids, true);
        Ok(MemoryChunk {
            gpu_va: GpuVa(gpu_va),
            host_ptr: Some(host),
            size_bytes,
            handle,
        })
    }

    unsafe fn deregister_host_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        if self.chunk_is_user(chunk.gpu_va.0) != Some(true) {
            bail!(
                Status::InvalidArgument,
                "gpu_va {} is not registered host memory",
                chunk.gpu_va
            );
        }
        self.free_chunk(chunk.gpu_va.0)
    }
}

// SAFETY: an import is a KFD buffer object mapped for the host and the GPUs named, valid
// until freed.
unsafe impl MemorySharing for LinuxPlatform {
    /// KFD `EXPORT_DMABUF` of the chunk's buffer object, once; the description is this
    /// process's id, the dma-buf's descriptor (kept open until the chunk is freed) and its
    /// inode number.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] for an unknown chunk, registered host memory, USERPTR
    /// system memory (allocated without [`MemoryFlags::SHAREABLE`]: amdgpu refuses it,
    /// `EPERM`), or host memory of a machine without GPUs.
    fn export_memory(&self, chunk: &MemoryChunk) -> Result<SharedMemory, Error> {
        self.export_chunk(chunk.gpu_va.0)
    }

    /// Takes the exporter's dma-buf (`pidfd_open`, `pidfd_getfd`), checks it is still the
    /// export, KFD `IMPORT_DMABUF` at a fresh device address on the first GPU of `nodes`,
    /// mapped for the host through the dma-buf (the address is the host's too) and to the GPUs
    /// of `nodes`.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when the exporter is gone, the descriptor is closed or no
    /// longer the export (the memory was freed), ptrace access to the exporter is refused
    /// (`pidfd_getfd`'s `EPERM`), the size differs, KFD refuses the dma-buf, or a node is
    /// unknown; [`Status::OutOfResources`] without address space or when a mapping fails.
    fn import_memory(&self, shared: &SharedMemory, nodes: &[NodeId]) -> Result<MemoryChunk, Error> {
        self.import_chunk(shared, nodes)
    }
}

impl MemoryFaultReports for LinuxPlatform {
    /// The monitor calls `handler` for each `KFD_IOC_EVENT_MEMORY` event it sees (from its
    /// `kfd_hsa_memory_exception_data`: [`monitor::memory_fault`]),
    /// on its thread, before the callbacks of the queues the fault stopped. A machine without
    /// GPUs has no faults to report: the handler is accepted and never called.
    fn set_memory_fault_handler(&self, handler: Option<MemoryFaultHandler>) -> Result<(), Error> {
        let mut stored = lock(&self.monitor_start);
        *stored = handler;
        if let Some(m) = self.monitor.get() {
            m.set_fault_handler(handler);
        }
        Ok(())
    }
}

impl LinuxPlatform {
    /// `CREATE_EVENT` of an auto-reset event of `event_type`; the first event of the process
    /// hands KFD the event page (see [`Platform::create_event`]). Returns the reply and the
    /// event's mailbox address (0 unless a signal event with a slot in a mapped page).
    ///
    /// # Errors
    /// As [`Platform::create_event`].
    pub(super) fn create_kfd_event(
        &self,
        event_type: u32,
    ) -> Result<(CreateEventArgs, u64), Error> {
        let mut page = lock(&self.process.event_page);
        let mut new_chunk = None;
        let mut a = CreateEventArgs {
            event_type,
            auto_reset: 1,
            ..CreateEventArgs::default()
        };
        if page.is_none() && !self.gpus.is_empty() {
            let c = self.alloc_chunk(
                Some(self.gpus[0].gpu_id),
                KfdPlacement::Gtt,
                EVENT_PAGE_BYTES,
                4096,
                MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED,
                &self.all_gpu_ids(),
            )?;
            a.event_page_offset = c.handle;
            new_chunk = Some(c);
        }
        if let Err(e) = call(&*self.driver, &mut a) {
            if let Some(c) = new_chunk {
                let _ = self.free_chunk(c.gpu_va.0);
                if e.status() == Status::InvalidArgument {
                    // amdkfd keeps one event page per process (kfd_kmap_event_page: "Event
                    // page is already set"): another descriptor of this process's /dev/kfd
                    // handed it one already.
                    return Err(e.context(
                        "handing KFD the process's event page (amdkfd takes one per process; \
                         another open of /dev/kfd in this process may have set it)",
                    ));
                }
            }
            return Err(e);
        }
        if let Some(c) = new_chunk {
            *page = Some(super::process::EventPage { va: c.gpu_va.0 });
        } else if page.is_none() && a.event_page_offset != 0 {
            let len = EVENT_PAGE_BYTES.max(self.process.va.page_bytes());
            if let Some(va) = self.process.va.carve(len, self.process.va.page_bytes()) {
                match self.process.va.map_from_driver(
                    va,
                    &*self.driver,
                    MapTarget::Kfd,
                    a.event_page_offset,
                ) {
                    Ok(()) => *page = Some(super::process::EventPage { va }),
                    Err(_) => {
                        let _ = self.process.va.release(va);
                    }
                }
            }
        }
        let mailbox = match *page {
            Some(p)
                if event_type == KFD_IOC_EVENT_SIGNAL
                    && a.event_slot_index < KFD_SIGNAL_EVENT_LIMIT =>
            {
                p.va + u64::from(a.event_slot_index) * 8
            }
            _ => 0,
        };
        Ok((a, mailbox))
    }
}

/// The error policy of a queue created without an error callback (and the callback the C API
/// gives `hsa_queue_create` without one, whose `hsa_core::queue::AqlQueue` records the error
/// first): the error is printed on
/// stderr with what amdkfd reported (the status, the event data) and the process aborts, as
/// ROCR does for a queue error nobody listens to (a waiter on the queue's signals would
/// otherwise wait forever). When a `log` backend takes errors, the error line is the one
/// `monitor::deliver` logged just before, and only the abort is said here; otherwise
/// this prints the error itself. The device's own detail is in its log (the kernel log; the
/// emulated device's `log` records).
pub fn abort_on_queue_error(error: &Error, queue: QueueId, _data: usize) {
    if !log::log_enabled!(log::Level::Error) {
        eprintln!(
            "hsa-rt: queue {} stopped with {}: {}",
            queue.0,
            error.status().c_name(),
            error.detail()
        );
    }
    eprintln!(
        "hsa-rt: queue {} has no error callback; aborting, as ROCR does",
        queue.0
    );
    std::process::abort();
}

/// The process-wide barrier ([`Platform::process_barrier`]): registered once per process
/// (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`), then each call is one
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`. `None` when registration fails (kernels before 4.14,
/// or a seccomp filter refusing `membarrier`).
fn process_barrier() -> Option<fn()> {
    use rustix::thread::{membarrier, MembarrierCommand};
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let registered =
        *REGISTERED.get_or_init(|| membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok());
    registered.then_some(expedited_barrier as fn())
}

/// One process-wide barrier. The registration belongs to the address space; a kernel that
/// did not carry it into a forked child (which inherited the answer above) makes the
/// expedited command fail there, and the child registers and tries once more (Linux 6.18
/// carries it: `emulator/tests/signal_barrier.rs`). Should that fail too, the global
/// command (slower: it waits for an RCU grace period, and needs no registration) gives the
/// same guarantee; a waiter must not go on without one.
fn expedited_barrier() {
    use rustix::thread::{membarrier, MembarrierCommand};
    if membarrier(MembarrierCommand::PrivateExpedited).is_ok() {
        return;
    }
    if membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
        && membarrier(MembarrierCommand::PrivateExpedited).is_ok()
    {
        return;
    }
    let _ = membarrier(MembarrierCommand::Global);
}
