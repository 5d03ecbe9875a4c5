//! `hsa_core::platform::Platform` for [`BaremetalPlatform`].
#![allow(unsafe_code)] // the unsafe impl and the trait's unsafe fns; one unsafe call (map_queue)

use core::sync::atomic::Ordering;
use hsa_core::platform::{
    Cache, Capabilities, Event, HwQueue, IoLink, MemoryBank, MemoryChunk, MemoryFaultHandler,
    MemoryFaultReports, MemoryRequest, NodeProperties, Platform, QueueKind, QueueRequest,
    SegmentApertures, TopologySource, WaitOutcome,
};

use hsa_core::{DoorbellIndex, Error, EventId, NodeId, QueueId, Status};

use crate::host::{Host, QueueMapping};
use crate::mqd::{ComputeMqd, MqdParams, XccMqd, ALL_CUS, MQD_BYTES, NORMAL_PRIORITY};
use crate::{BaremetalPlatform, ErrorWatch, QueueSlot, EOP_BYTES};

impl<H: Host, const W: usize> BaremetalPlatform<H, W> {
    fn node_index(&self, index: usize) -> Result<(), Error> {
        if index < self.host.nodes().len() {
            Ok(())
        } else {
            Err(Error::lazy(
                Status::InvalidIndex,
                [index as u64, self.host.nodes().len() as u64],
                |&[index, count, ..], f| write!(f, "node index {index} >= node count {count}"),
            ))
        }
    }

    /// Which XCC's MQD a queue of `node` gets: `None` before GC 9.4.3 (one MQD per queue);
    /// XCC 0 of 1 on a GC 9.4.3, 9.4.4 or 9.5.0 node whose partition has one XCC (`num_xcc`
    /// 1: CPX mode, or a single-XCC part).
    ///
    /// # Errors
    /// `Status::InvalidQueueCreation` for a partition of several XCCs: its queues need one MQD
    /// per XCC, each mapped on its own XCC's KIQ, which [`Host::map_queue`]'s one mapping cannot
    /// carry.
    fn xcc_mqd(&self, node: NodeId) -> Result<Option<XccMqd>, Error> {
        let Some(n) = self.host.nodes().iter().find(|n| n.node_id == node.get()) else {
            return Ok(None);
        };
        if !crate::mqd::has_xcc_mqds(n.gfx_target_version) {
            return Ok(None);
        }
        if n.num_xcc > 1 {
            return Err(Error::lazy(
                Status::InvalidQueueCreation,
                [node.get().into(), n.num_xcc.into()],
                |&[node, xccs, ..], f| {
                    write!(
                        f,
                        "node {node} is a partition of {xccs} XCCs: its queues need one MQD \
                         per XCC, each mapped on that XCC's KIQ; this backend maps queues of \
                         single-XCC partitions only"
                    )
                },
            ));
        }
        Ok(Some(XccMqd {
            index: 0,
            count: 1,
            logical_start: 0,
            stride_bytes: MQD_BYTES,
        }))
    }

    /// `create_queue` past its checks: takes a slot and a doorbell, builds the MQD, maps the
    /// queue.
    ///
    /// # Safety
    /// As `Platform::create_queue`.
    unsafe fn create_queue_locked(
        &self,
        request: &QueueRequest,
        watch: Option<ErrorWatch>,
    ) -> Result<HwQueue<DoorbellIndex>, Error> {
        let xcc = self.xcc_mqd(request.node)?;
        let mut slots = self.queues.lock();
        let Some(slot) = slots.iter().position(Option::is_none) else {
            return Err(Error::lazy(
                Status::OutOfResources,
                [slots.len() as u64],
                |&[n, ..], f| write!(f, "all {n} queue slots are in use"),
            ));
        };
        let Some(doorbell) = self.pick_doorbell(&slots[..]) else {
            return Err(Error::lazy(
                Status::OutOfResources,
                [self.doorbells.count().into()],
                |&[n, ..], f| write!(f, "all {n} granted doorbells are in use"),
            ));
        };
        let eop = self.allocate_eop(request.node)?;
        let mqd_block = match self.allocate_mqd(request.node) {
            Ok(b) => b,
            Err(e) => {
                let _ = self.memory.free(eop.handle(), eop.size_bytes);
                return Err(e);
            }
        };
        let give_back = || {
            let _ = self.memory.free(mqd_block.handle(), mqd_block.size_bytes);
            let _ = self.memory.free(eop.handle(), eop.size_bytes);
        };
        let built = ComputeMqd::new(&MqdParams {
            ring: request.ring,
            ring_size_bytes: request.ring_size_bytes,
            rptr_report: request.read_pointer,
            wptr_poll: request.write_pointer,
            doorbell,
            eop: eop.gpu_va,
            eop_size_bytes: EOP_BYTES,
            mqd_address: mqd_block.gpu_va,
            vmid: self.host.queue_vmid().into(),
            priority: NORMAL_PRIORITY,
            cu_masks: ALL_CUS,
            xcc,
        })
        .and_then(|mqd| {
            self.write_mqd(&mqd_block, &mqd)?;
            let address = self.doorbells.address(doorbell)?;
            Ok((mqd, address))
        });
        let (mqd, doorbell_address) = match built {
            Ok(v) => v,
            Err(e) => {
                give_back();
                return Err(e);
            }
        };
        let mapping = QueueMapping {
            node: request.node,
            ring: request.ring,
            ring_size_bytes: request.ring_size_bytes,
            doorbell,
            read_pointer: request.read_pointer,
            write_pointer: request.write_pointer,
            amd_queue: request.amd_queue,
            eop: eop.gpu_va,
            eop_size_bytes: EOP_BYTES,
            mqd_address: mqd_block.gpu_va,
            mqd_virt: mqd_block.virt.unwrap_or(0),
            mqd,
        };
        // SAFETY: our caller guaranteed (Platform::create_queue) that the ring and amd_queue_t
        // stay valid until destroy_queue returns, which calls unmap_queue first; the EOP
        // buffer and the MQD are freed only after unmap_queue.
        if let Err(e) = unsafe { self.host.map_queue(&mapping) } {
            give_back();
            return Err(e);
        }
        slots[slot] = Some(QueueSlot {
            mapping,
            eop,
            mqd: mqd_block,
            watch,
        });
        Ok(HwQueue {
            id: QueueId(slot as u32),
            doorbell_address,
            doorbell,
        })
    }

    /// `destroy_queue` under the queue table's lock.
    fn destroy_queue_locked(&self, queue: QueueId) -> Result<(), Error> {
        let mut slots = self.queues.lock();
        let Some(entry) = slots.get_mut(queue.get() as usize) else {
            return Err(Error::lazy(
                Status::InvalidQueue,
                [queue.get().into()],
                |&[id, ..], f| write!(f, "queue id {id} is out of range"),
            ));
        };
        let Some(q) = entry.as_ref() else {
            return Err(Error::lazy(
                Status::InvalidQueue,
                [queue.get().into()],
                |&[id, ..], f| write!(f, "queue id {id} is not live"),
            ));
        };
        self.host.unmap_queue(&q.mapping)?;
        let (eop, mqd) = (q.eop, q.mqd);
        *entry = None;
        drop(slots);
        let freed_mqd = self.memory.free(mqd.handle(), mqd.size_bytes);
        self.memory.free(eop.handle(), eop.size_bytes)?;
        freed_mqd?;
        Ok(())
    }
}

impl<H: Host, const W: usize> TopologySource for BaremetalPlatform<H, W> {
    fn device_name(&self) -> &str {
        "baremetal"
    }

    fn node_count(&self) -> usize {
        self.host.nodes().len()
    }

    fn node(&self, index: usize) -> Result<NodeProperties, Error> {
        self.node_index(index)?;
        Ok(self.host.nodes()[index].clone())
    }

    fn memory_bank(&self, index: usize, bank: usize) -> Result<Option<MemoryBank>, Error> {
        self.node_index(index)?;
        Ok(self.host.memory_bank(index, bank))
    }

    fn cache(&self, index: usize, cache: usize) -> Result<Option<Cache>, Error> {
        self.node_index(index)?;
        Ok(self.host.cache(index, cache))
    }

    fn io_link(&self, index: usize, link: usize) -> Result<Option<IoLink>, Error> {
        self.node_index(index)?;
        Ok(self.host.io_link(index, link))
    }

    /// The apertures of the host's `SH_MEM_BASES` ([`Host::sh_mem_bases`]) on each GPU node
    /// (a node with SIMDs); `None` for a CPU node or an unknown one.
    fn segment_apertures(&self, node: NodeId) -> Option<SegmentApertures> {
        self.host
            .nodes()
            .iter()
            .find(|n| n.node_id == node.get() && n.simd_count > 0)
            .map(|_| SegmentApertures::from_sh_mem_bases(self.host.sh_mem_bases()))
    }
}

// SAFETY: chunks come from the carve-out allocator, which never hands out overlapping ranges
// of carve-outs the host guaranteed valid and exclusive; they are zeroed before being returned
// and aligned as asked; queues are mapped with exactly the request's ring and amd_queue_t; all
// state is behind atomics or spin locks, so every method may be called from any thread.
unsafe impl<H: Host, const W: usize> Platform for BaremetalPlatform<H, W> {
    /// The queue's doorbell index in the aperture, checked against the grant at creation.
    type Doorbell = DoorbellIndex;

    fn allocate_memory(&self, request: &MemoryRequest) -> Result<MemoryChunk, Error> {
        self.allocate_chunk(request)
    }

    unsafe fn free_memory(&self, chunk: &MemoryChunk) -> Result<(), Error> {
        self.free_chunk(chunk)
    }

    fn map_memory(&self, chunk: &MemoryChunk, nodes: &[NodeId]) -> Result<(), Error> {
        for n in nodes {
            self.check_node(*n)?;
        }
        self.host.map_memory(chunk.gpu_va, chunk.size_bytes, nodes)
    }

    unsafe fn create_queue(&self, request: &QueueRequest) -> Result<HwQueue<DoorbellIndex>, Error> {
        self.check_node(request.node)?;
        let QueueKind::ComputeAql = request.kind;
        let watch = self.error_watch(request)?;
        // SAFETY: our caller's guarantees (Platform::create_queue) are passed on unchanged.
        let created = unsafe { self.create_queue_locked(request, watch) };
        // An ISR that found the table locked left its look to us.
        self.report_queue_errors();
        created
    }

    /// A fence, then one 64-bit MMIO store to the doorbell ([`crate::doorbell::Doorbells::ring`]);
    /// no lock. A destroyed queue's doorbell is a slot of the grant no HQD reads (until a new
    /// queue takes it: a spurious wake-up).
    fn ring_doorbell(&self, doorbell: &DoorbellIndex, write_index: u64) {
        // The index was checked against the grant when the queue was made, so this cannot
        // fail; a store outside the grant is refused (nothing written) all the same.
        let _ = self.doorbells.ring(*doorbell, write_index);
    }

    fn destroy_queue(&self, queue: QueueId) -> Result<(), Error> {
        let destroyed = self.destroy_queue_locked(queue);
        if destroyed.is_ok() {
            // A call of the queue's error callback another CPU began before the slot was
            // freed ends before this returns (QueueRequest::on_error's contract). Acquire pairs
            // with the Release of report_queue_errors after the call.
            let delivering = &self.delivering[queue.get() as usize];
            while delivering.load(Ordering::Acquire) != 0 {
                core::hint::spin_loop();
            }
        }
        self.report_queue_errors();
        destroyed
    }

    fn create_event(&self) -> Result<Event, Error> {
        let Some(id) = self.events.allocate() else {
            return Err(Error::lazy(Status::OutOfResources, [], |_, f| {
                write!(f, "all {} events are in use", Self::EVENT_CAPACITY)
            }));
        };
        let mailbox = self.event_mailbox(id)?;
        let off = self.event_page.offset + 8 * u64::from(id.get());
        crate::mmio::host_carve_out_window(&self.host, self.event_page.carve_out, off, 8)?
            .fill_zero();
        Ok(Event { id, mailbox })
    }

    fn destroy_event(&self, event: EventId) -> Result<(), Error> {
        if !self.events.free(event) {
            return Err(crate::event_not_allocated(event));
        }
        self.host.wake_waiters();
        Ok(())
    }

    fn wait_event(&self, event: EventId, timeout_ns: u64) -> Result<WaitOutcome, Error> {
        self.wait(event, timeout_ns)
    }

    /// One wait over all of `events`: returns as soon as any is pending (consuming the first
    /// pending one; the caller re-reads its signals, as after a KFD wait-any), sleeping in
    /// [`Host::wait_for_interrupt`] until the caller's deadline while none is. No event waits
    /// for another's turn (the trait's default waits on the first for at most 1 ms).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an empty list or an event that is not allocated.
    fn wait_any_event(&self, events: &[EventId], timeout_ns: u64) -> Result<WaitOutcome, Error> {
        self.wait_any(events, timeout_ns)
    }

    fn signal_event(&self, event: EventId) -> Result<(), Error> {
        if !self.events.set_pending(event) {
            return Err(crate::event_not_allocated(event));
        }
        self.host.wake_waiters();
        Ok(())
    }

    fn timestamp_ticks(&self) -> u64 {
        self.host.timestamp_ticks()
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.host.timestamp_frequency_hz().max(1)
    }

    /// [`Host::wait_spin_ns`].
    fn wait_spin_ns(&self) -> u64 {
        self.host.wait_spin_ns()
    }

    /// Memory-fault reports (the IH ring's VM-fault entries); no SDMA queues, no host-memory
    /// registration, no sharing (no other processes).
    fn capabilities(&self) -> Capabilities<'_, DoorbellIndex> {
        Capabilities {
            memory_faults: Some(self),
            ..Capabilities::none()
        }
    }
}

impl<H: Host, const W: usize> MemoryFaultReports for BaremetalPlatform<H, W> {
    /// The handler runs from the host's ISR ([`BaremetalPlatform::on_interrupt`]) for each
    /// page-fault entry of a VM client in the IH ring (`VMC`, `VMC1`, `UTCL2`; see
    /// [`crate::irq`]), before that interrupt reports the queues the fault stopped; it must
    /// not block. The fault is the host's first GPU node's.
    fn set_memory_fault_handler(&self, handler: Option<MemoryFaultHandler>) -> Result<(), Error> {
        *self.fault_handler.lock() = handler;
        Ok(())
    }
}
