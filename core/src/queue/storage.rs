//! The memory of one AQL queue: a ring chunk (aligned to its size) and a descriptor chunk that
//! holds the `amd_queue_t` (offset 0), the doorbell signal (offset 256) and the queue-inactive
//! signal (offset 320). Both are System memory, host-accessible, fine-grained, uncached.
//!
//! Ref: ROCR `AqlQueue` allocates the ring and `amd_queue_t` in fine-grained system memory;
//! `amd_hsa_queue.h`, `amd_hsa_signal.h` layouts.
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::abi::packet::PACKET_SIZE_BYTES;
use crate::abi::queue::AmdQueue;
use crate::abi::signal::AmdSignal;
use crate::addr::{GpuVa, NodeId, QueueId};
use crate::platform::{
    HwQueue, MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform, QueueRequest,
};
use crate::signal::raw::RawSignal;
use crate::status::{show_host_ptr, Error, Result, Status};
use crate::sync::Ordering;

use super::ring::{Ring, INVALID_HEADER_WORD};
use super::scratch::{DispatchShape, ScratchLayout, DEFAULT_PRIVATE_SEGMENT_BYTES};

/// Bytes of the descriptor chunk.
pub(super) const DESCRIPTOR_BYTES: u64 = 4096;
/// Offset of the doorbell `amd_signal_t` in the descriptor chunk.
pub(super) const DOORBELL_SIGNAL_OFFSET: u64 = 256;
/// Offset of the queue-inactive `amd_signal_t` in the descriptor chunk.
pub(super) const INACTIVE_SIGNAL_OFFSET: u64 = 320;

/// One chunk with its checked host pointer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chunk {
    pub(super) chunk: MemoryChunk,
    pub(super) host: NonNull<u8>,
}

// SAFETY: a description of memory the queue owns; access goes through Ring/RawSignal atomics.
unsafe impl Send for Chunk {}
// SAFETY: as for Send.
unsafe impl Sync for Chunk {}

/// The ring and descriptor chunks of a queue. Not freed on drop: the queue frees them after the
/// platform has stopped using them ([`QueueMemory::free`]).
#[derive(Debug)]
pub(super) struct QueueMemory {
    pub(super) ring: Chunk,
    pub(super) desc: Chunk,
    /// The hardware queue over this memory, while it exists; a lock so that [`QueueMemory::destroy_queue`] can
    /// run through a shared reference (`AqlQueue::close`) exactly once.
    hw: spin::Mutex<Option<QueueId>>,
    /// Whether the chunks were given back (or abandoned).
    released: bool,
    /// The queue's scratch backing memory, if it has any (given back with the chunks); a
    /// lock because a scratch request is served through a shared reference
    /// ([`QueueMemory::replace_scratch`]), one server at a time.
    pub(super) scratch: spin::Mutex<Option<HeldScratch>>,
}

fn allocate<P: Platform>(platform: &P, node: NodeId, size_bytes: u64) -> Result<Chunk> {
    let request = MemoryRequest {
        node,
        kind: MemoryKind::System,
        size_bytes,
        align_bytes: size_bytes,
        flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED,
    };
    let chunk = platform.allocate_memory(&request)?;
    match chunk.host_ptr {
        Some(host)
            if chunk.size_bytes >= size_bytes
                && (host.as_ptr() as usize) % (size_bytes as usize) == 0
                && chunk.gpu_va.is_aligned(size_bytes) =>
        {
            Ok(Chunk { chunk, host })
        }
        _ => {
            // SAFETY: just allocated by this platform, never shared.
            let _ = unsafe { platform.free_memory(&chunk) };
            let host = chunk.host_ptr.map_or(0, |h| h.as_ptr().addr() as u64);
            Err(Error::lazy(
                Status::InvalidAllocation,
                [chunk.gpu_va.get(), host, chunk.size_bytes, size_bytes],
                |&[gpu_va, host, chunk_bytes, size_bytes, ..], f| {
                    write!(f, "platform chunk at {} (host_ptr ", GpuVa(gpu_va))?;
                    show_host_ptr(host, f)?;
                    write!(
                        f,
                        ", size_bytes {chunk_bytes}) is not a host-visible, {size_bytes}-aligned \
                         chunk of {size_bytes} bytes"
                    )
                },
            ))
        }
    }
}

/// A queue's scratch: its memory and the layout its `amd_queue_t` fields describe.
#[derive(Clone, Copy, Debug)]
pub(super) struct HeldScratch {
    chunk: MemoryChunk,
    layout: ScratchLayout,
}

/// The node's compute units, `max_slots_scratch_cu` and shader engines (`array_count` /
/// `simd_arrays_per_engine`, ROCR's `NumShaderBanks`); `None` for a node the platform does not
/// list.
fn scratch_geometry<P: Platform>(platform: &P, node: NodeId) -> Option<(u32, u32, u32)> {
    let props = (0..platform.node_count())
        .filter_map(|i| platform.node(i).ok())
        .find(|p| p.node_id == node.0)?;
    let cus = props.simd_count.checked_div(props.simd_per_cu).unwrap_or(0);
    let engines = props
        .array_count
        .checked_div(props.simd_arrays_per_engine)
        .unwrap_or(1);
    Some((cus, props.max_slots_scratch_cu, engines))
}

/// Device-local memory for `layout` on `node`: whole pages, 64 KiB-aligned (ROCR's scratch
/// pool alignment).
fn allocate_scratch_chunk<P: Platform>(
    platform: &P,
    node: NodeId,
    layout: &ScratchLayout,
) -> Result<MemoryChunk> {
    platform.allocate_memory(&MemoryRequest {
        node,
        kind: MemoryKind::DeviceLocal,
        size_bytes: layout.size_bytes.next_multiple_of(4096),
        align_bytes: 1 << 16,
        flags: MemoryFlags::empty(),
    })
}

impl QueueMemory {
    /// Allocates a ring of `size_packets` (a power of two; at least 4096 bytes are taken) and
    /// the descriptor chunk.
    pub(super) fn allocate<P: Platform>(
        platform: &P,
        node: NodeId,
        size_packets: u32,
    ) -> Result<QueueMemory> {
        let ring_bytes = (u64::from(size_packets) * PACKET_SIZE_BYTES as u64).max(4096);
        let ring = allocate(platform, node, ring_bytes)?;
        let desc = match allocate(platform, node, DESCRIPTOR_BYTES) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: just allocated, never shared.
                let _ = unsafe { platform.free_memory(&ring.chunk) };
                return Err(e);
            }
        };
        Ok(QueueMemory {
            ring,
            desc,
            hw: spin::Mutex::new(None),
            released: false,
            scratch: spin::Mutex::new(None),
        })
    }

    /// Device address of the `amd_queue_t`.
    pub(super) fn amd_queue_va(&self) -> GpuVa {
        self.desc.chunk.gpu_va
    }

    /// Device address of a signal slot in the descriptor chunk.
    pub(super) fn signal_va(&self, offset: u64) -> GpuVa {
        GpuVa(self.desc.chunk.gpu_va.get() + offset)
    }

    /// Writes the descriptor and the two signals, marks every ring header INVALID, and returns
    /// the ring view and the two signals. `&mut self`: nothing else sees the memory yet.
    pub(super) fn init(
        &mut self,
        size_packets: u32,
        amd_queue: &AmdQueue,
        doorbell: &AmdSignal,
        inactive: &AmdSignal,
    ) -> (Ring, RawSignal, RawSignal) {
        let base = self.desc.host.as_ptr();
        let q = base.cast::<AmdQueue>();
        let db = base
            .wrapping_add(DOORBELL_SIGNAL_OFFSET as usize)
            .cast::<AmdSignal>();
        let ia = base
            .wrapping_add(INACTIVE_SIGNAL_OFFSET as usize)
            .cast::<AmdSignal>();
        // SAFETY: the descriptor chunk is 4096 bytes, 4096-aligned, owned by this value and not
        // yet shared (no queue created); the three objects lie inside it at 64-aligned
        // offsets and do not overlap (0..256, 256..320, 320..384).
        unsafe {
            q.write(*amd_queue);
            db.write(*doorbell);
            ia.write(*inactive);
        }
        // SAFETY: ring chunk: size_packets * 64 bytes (or more), aligned to its size (so
        // 64-aligned), size_packets a power of two (checked by the caller); the amd_queue_t was
        // just written; both stay valid until `free`, which the queue calls only after the
        // platform stopped using them and no Ring copy is used any more.
        let ring = unsafe { Ring::new(self.ring.host, size_packets, NonNull::new_unchecked(q)) };
        for i in 0..u64::from(size_packets) {
            ring.header_word(i)
                .store(INVALID_HEADER_WORD, Ordering::Relaxed);
        }
        // SAFETY: live, 64-aligned amd_signal_t objects written above, valid until `free`;
        // accessed atomically from now on.
        let (db, ia) = unsafe {
            (
                RawSignal::from_ptr(NonNull::new_unchecked(db)),
                RawSignal::from_ptr(NonNull::new_unchecked(ia)),
            )
        };
        (ring, db, ia)
    }

    /// Asks the platform for a hardware queue over this memory (`request` must name it). On
    /// failure the memory is released at once.
    ///
    /// # Errors
    /// The platform's status from `create_queue`.
    pub(super) fn create_queue<P: Platform>(
        &mut self,
        platform: &P,
        request: &QueueRequest,
    ) -> Result<HwQueue<P::Doorbell>> {
        // SAFETY: the ring and amd_queue_t are freed only in `release`, which destroys the
        // hardware queue (and waits for destroy_queue to return) first.
        match unsafe { platform.create_queue(request) } {
            Ok(hw) => {
                *self.hw.lock() = Some(hw.id);
                Ok(hw)
            }
            Err(e) => {
                let _ = self.release(platform);
                Err(e)
            }
        }
    }

    /// Destroys the hardware queue, if there is one (`hsa_queue_inactivate`).
    ///
    /// # Errors
    /// The platform's status from `destroy_queue`; the queue is then still considered live.
    pub(super) fn destroy_queue<P: Platform>(&self, platform: &P) -> Result<()> {
        let mut hw = self.hw.lock();
        if let Some(id) = *hw {
            platform.destroy_queue(id)?;
            *hw = None;
        }
        Ok(())
    }

    /// Whether the hardware queue still exists (created, and not destroyed: a failed
    /// `destroy_queue` leaves it).
    #[cfg(feature = "alloc")]
    pub(super) fn hw_queue_live(&self) -> bool {
        self.hw.lock().is_some()
    }

    /// Destroys the hardware queue, then gives both chunks back; idempotent. The owner
    /// (`AqlQueue`) calls it only from its teardown, after which it uses no `Ring` or
    /// `RawSignal` over this memory (the queue never hands out a `Ring` except through an
    /// `unsafe` accessor whose caller promises the same).
    ///
    /// # Errors
    /// The platform's status from `destroy_queue` (the memory is then abandoned, never freed,
    /// because the processor may still use it), or from `free_memory`.
    pub(super) fn release<P: Platform>(&mut self, platform: &P) -> Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        self.destroy_queue(platform)?;
        // SAFETY: no hardware queue uses the memory (destroy_queue returned or none was
        // created); the owner uses no view of it any more (see above).
        let a = unsafe { platform.free_memory(&self.ring.chunk) };
        // SAFETY: as above.
        let b = unsafe { platform.free_memory(&self.desc.chunk) };
        let c = match self.scratch.get_mut().take() {
            // SAFETY: as above (the scratch is the hardware queue's alone).
            Some(s) => unsafe { platform.free_memory(&s.chunk) },
            None => Ok(()),
        };
        a.and(b).and(c)
    }

    /// Allocates the queue's scratch on `node` (device-local memory, mapped to the node),
    /// sized by [`ScratchLayout`] from the node's compute units and `max_slots_scratch_cu`
    /// and `private_segment_size` (see `QueueConfig::private_segment_size`); kept until
    /// [`release`](Self::release). `None`: the queue has no scratch.
    ///
    /// # Errors
    /// As [`ScratchLayout::new`]; the platform's status when an explicitly sized scratch
    /// cannot be allocated (ROCR: `OUT_OF_RESOURCES`), with the size in the message.
    pub(super) fn allocate_scratch<P: Platform>(
        &mut self,
        platform: &P,
        node: NodeId,
        private_segment_size: Option<u32>,
    ) -> Result<Option<(ScratchLayout, GpuVa)>> {
        let Some((cus, slots, _)) = scratch_geometry(platform, node) else {
            return Ok(None);
        };
        let lane_bytes = private_segment_size.unwrap_or(DEFAULT_PRIVATE_SEGMENT_BYTES);
        let Some(layout) = ScratchLayout::new(lane_bytes, cus, slots)? else {
            return Ok(None);
        };
        match allocate_scratch_chunk(platform, node, &layout) {
            Ok(chunk) => {
                let base = chunk.gpu_va;
                *self.scratch.get_mut() = Some(HeldScratch { chunk, layout });
                Ok(Some((layout, base)))
            }
            Err(e) if private_segment_size.is_none() => {
                log::warn!(
                    "queue on node {}: no scratch ({} bytes of device memory for {} waves of \
                     {} bytes: {}); dispatches with a private segment will stop the queue",
                    node.0,
                    layout.size_bytes,
                    layout.waves,
                    layout.wave_bytes(),
                    e.detail()
                );
                Ok(None)
            }
            Err(e) => Err(Error::lazy(
                e.status(),
                [layout.size_bytes, u64::from(layout.waves)],
                |&[bytes, waves, ..], f| {
                    write!(
                        f,
                        "allocating the queue's scratch ({bytes} bytes for {waves} waves)"
                    )
                },
            )),
        }
    }

    /// Serves the command processor's scratch request for the kernel dispatch at the read
    /// index (ROCR 5.2 `AqlQueue::DynamicScratchHandler`): gives the queue's scratch back,
    /// allocates the scratch [`ScratchLayout::for_request`] sizes for the packet on `node`,
    /// and writes its fields into `amd_queue_t` (`fill`). On failure the queue is left
    /// without scratch (its fields 0), as ROCR leaves it. The caller resumes the queue (or
    /// fails it) afterwards and holds no other view of the scratch fields.
    ///
    /// # Errors
    /// [`Status::OutOfResources`]: the slot at the read index holds no kernel dispatch, the
    /// request is one [`ScratchLayout::for_request`] refuses, the new scratch would be no
    /// larger than the one the queue holds (the packet's `private_segment_size` is below what
    /// its kernel needs: growing could never end the requests), or the platform cannot
    /// allocate it (its detail in the message).
    pub(super) fn replace_scratch<P: Platform>(
        &self,
        platform: &P,
        node: NodeId,
        ring: &Ring,
    ) -> Result<ScratchLayout> {
        let mut held = self.scratch.lock();
        let read = ring.read_index().load(Ordering::Acquire);
        let header = ring.header_word(read).load(Ordering::Acquire);
        if header & 0xff != crate::abi::packet::PacketType::KernelDispatch as u32 {
            return Err(Error::lazy(
                Status::OutOfResources,
                [read, u64::from(header & 0xff)],
                |&[read, ty, ..], f| {
                    write!(
                        f,
                        "scratch request for packet {read}, whose type {ty} is not a kernel \
                         dispatch (2)"
                    )
                },
            ));
        }
        // SAFETY: the packet processor published the slot (valid header seen with Acquire)
        // and is stopped on it until the inactive signal is 0 again: the producer no longer
        // writes its body and the processor neither writes nor releases it meanwhile.
        let packet = unsafe { ring.read_packet(read, header) };
        let shape = DispatchShape::from_packet(&packet);
        let (cus, slots, engines) = scratch_geometry(platform, node).unwrap_or((0, 0, 0));
        let layout = ScratchLayout::for_request(&shape, cus, slots, engines)?;
        let (held_lane, held_waves) = held
            .as_ref()
            .map_or((0, 0), |h| (h.layout.lane_bytes, h.layout.waves));
        if layout.lane_bytes <= held_lane && layout.waves <= held_waves {
            return Err(Error::lazy(
                Status::OutOfResources,
                [
                    read,
                    u64::from(shape.private_segment_size),
                    u64::from(held_lane),
                ],
                |&[read, private, held, ..], f| {
                    write!(
                        f,
                        "scratch request for packet {read} again: its private_segment_size \
                         {private} bytes per work-item fits the {held} the queue holds; the \
                         kernel needs more than its packet asks for"
                    )
                },
            ));
        }
        let cleared = AmdQueue::default();
        if let Some(HeldScratch { chunk, .. }) = held.take() {
            self.write_scratch_fields(&cleared);
            // SAFETY: the processor waits for the resume and reads the scratch fields (now 0)
            // only after it; no wave runs on this scratch (the request stops the queue before
            // a dispatch launches, and earlier dispatches completed).
            let _ = unsafe { platform.free_memory(&chunk) };
        }
        let chunk = allocate_scratch_chunk(platform, node, &layout).map_err(|e| {
            Error::lazy(
                Status::OutOfResources,
                [
                    layout.size_bytes,
                    u64::from(layout.waves),
                    e.status().raw().into(),
                ],
                |&[bytes, waves, status, ..], f| {
                    write!(
                        f,
                        "scratch request: allocating {bytes} bytes of device memory for {waves} \
                         wave slots failed ({})",
                        Status::from_raw(status as u32).map_or("?", Status::c_name)
                    )
                },
            )
        })?;
        let mut fields = AmdQueue::default();
        layout.fill(chunk.gpu_va.get(), &mut fields);
        self.write_scratch_fields(&fields);
        *held = Some(HeldScratch { chunk, layout });
        Ok(layout)
    }

    /// Copies the five scratch fields of `from` into the live `amd_queue_t`.
    fn write_scratch_fields(&self, from: &AmdQueue) {
        let q = self.desc.host.as_ptr().cast::<AmdQueue>();
        // SAFETY: the descriptor chunk holds a live amd_queue_t until `release`; these fields
        // are plain data that only the runtime writes and the processor reads after the
        // Release store that resumes the queue (or at creation); other fields, which others
        // access atomically, are not touched.
        unsafe {
            core::ptr::addr_of_mut!((*q).scratch_resource_descriptor)
                .write(from.scratch_resource_descriptor);
            core::ptr::addr_of_mut!((*q).compute_tmpring_size).write(from.compute_tmpring_size);
            core::ptr::addr_of_mut!((*q).scratch_backing_memory_location)
                .write(from.scratch_backing_memory_location);
            core::ptr::addr_of_mut!((*q).scratch_backing_memory_byte_size)
                .write(from.scratch_backing_memory_byte_size);
            core::ptr::addr_of_mut!((*q).scratch_wave64_lane_byte_size)
                .write(from.scratch_wave64_lane_byte_size);
        }
    }

    /// Bytes of scratch backing memory the queue holds now (0: none).
    pub(super) fn scratch_bytes(&self) -> u64 {
        self.scratch
            .lock()
            .as_ref()
            .map_or(0, |h| h.chunk.size_bytes)
    }

    /// A copy of the `amd_queue_t` (tests only: reads while nothing else writes).
    #[cfg(test)]
    pub(super) fn descriptor_snapshot(&self) -> AmdQueue {
        // SAFETY: test-only; the test platform never runs the queue, so nothing writes the
        // descriptor concurrently; the chunk is live (not released).
        unsafe { self.desc.host.as_ptr().cast::<AmdQueue>().read() }
    }

    /// A copy of a signal slot of the descriptor chunk (tests only).
    #[cfg(test)]
    pub(super) fn signal_snapshot(&self, offset: u64) -> AmdSignal {
        // SAFETY: as for descriptor_snapshot; offset is 256 or 320.
        unsafe {
            self.desc
                .host
                .as_ptr()
                .add(offset as usize)
                .cast::<AmdSignal>()
                .read()
        }
    }
}
