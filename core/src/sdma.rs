//! SDMA queues: the producer side of a GPU's system DMA engine, as ROCR 5.2's `BlitSdma`
//! drives it on gfx9 for `hsa_amd_memory_async_copy`.
//!
//! - [`packet`]: the SDMA 4.x packets the runtime writes, from the one layout of
//!   [`crate::wire::sdma`] (linux `drivers/gpu/drm/amd/amdgpu/vega10_sdma_pkt_open.h`, ROCR
//!   `sdma_registers.h`).
//! - [`SdmaQueue`]: one SDMA queue of a GPU node ([`SdmaQueues::create_sdma_queue`]): a byte
//!   ring in system memory the GPU reaches (1 MiB, as ROCR's `kQueueSize`), a 64-bit read
//!   pointer the engine writes back and a 64-bit write pointer, both growing byte offsets;
//!   [`SdmaQueue::submit`] writes a command at the write pointer (padding the ring's end with
//!   zero dwords — one-dword NOPs — when it would wrap, as ROCR's `PadRingToEnd`), waits for
//!   ring space, stores the write pointer, then rings the doorbell with it. A queue the
//!   runtime knows to be gone ([`SdmaQueue::mark_stopped`]: amdkfd evicts a process's queues
//!   on a GPU memory fault) takes no more commands: `submit` fails at once, and so does one
//!   waiting for ring space, instead of waiting for an engine that will never read the ring.
//! - [`copy_commands`] (with `alloc`): the command of one linear copy as ROCR 5.2's
//!   `SubmitCommand` builds it: two `POLL_REGMEM` per dependency signal (the value's high
//!   then low half equal to 0), a `TIMESTAMP` before and after when profiling, an HDP flush,
//!   the `COPY_LINEAR` packets (at most [`packet::COPY_LINEAR_MAX_BYTES`] each), the
//!   completion signal decremented by an `ATOMIC` add of -1 (ROCR on agents with 64-bit
//!   platform atomics), and, for a signal with an event mailbox, a `FENCE` of the event id
//!   into the mailbox and a `TRAP` with it (the interrupt that wakes the signal's waiters).
#![allow(unsafe_code)]

use core::ptr::NonNull;

use crate::addr::{GpuVa, NodeId};
#[allow(unused_imports)] // doc links
use crate::platform::SdmaQueues;
use crate::platform::{
    HwQueue, MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform, SdmaQueueRequest,
};
use crate::platform_ref::{PlatformOf, PlatformRef};
use crate::status::{Error, Result, Status};
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(feature = "alloc")]
use crate::wire::sdma::{CopyLinearRect, RectSide, Repr};

/// The SDMA 4.x packets the runtime writes, as dword arrays (`Repr`s of [`crate::wire::sdma`]
/// emitted in `SDMA_4_0`'s format).
pub mod packet {
    use crate::addr::GpuVa;
    use crate::wire::sdma::{Atomic, CopyLinear, PollRegMem, Repr};
    pub use crate::wire::sdma::{
        ATOMIC_ADD64, OP_ATOMIC, OP_COPY, OP_FENCE, OP_NOP, OP_POLL_REGMEM, OP_TIMESTAMP, OP_TRAP,
        SUBOP_TIMESTAMP_GET_GLOBAL,
    };

    /// The most bytes one `COPY_LINEAR` moves in ROCR 5.2 (`SDMA_PKT_COPY_LINEAR::kMaxSize_`;
    /// the 22-bit count holds `bytes - 1`).
    pub const COPY_LINEAR_MAX_BYTES: u64 = 0x3f_ffe0;
    const _: () =
        assert!(COPY_LINEAR_MAX_BYTES <= crate::wire::sdma::SDMA_4_0.copy_linear_max_bytes());

    /// `COPY` `LINEAR` (7 dwords) of `bytes` bytes, `1..=`[`COPY_LINEAR_MAX_BYTES`] (the
    /// count field is `bytes - 1` on SDMA 4; a larger value is cut to its 22 bits).
    pub fn copy_linear(dst: GpuVa, src: GpuVa, bytes: u32) -> [u32; 7] {
        Repr::CopyLinear(CopyLinear {
            count: bytes.saturating_sub(1),
            src: src.0,
            dst: dst.0,
            broadcast: false,
            dst_sw: 0,
            src_sw: 0,
        })
        .to_array()
    }

    /// `FENCE` (4 dwords): stores `data` to the 4-byte aligned `addr`.
    pub fn fence(addr: GpuVa, data: u32) -> [u32; 4] {
        Repr::Fence { addr: addr.0, data }.to_array()
    }

    /// `TRAP` (2 dwords): the engine's interrupt with the 28-bit context `int_ctx`.
    pub fn trap(int_ctx: u32) -> [u32; 2] {
        Repr::Trap {
            int_context: int_ctx,
        }
        .to_array()
    }

    /// `POLL_REGMEM` (6 dwords) of memory: waits until the 32-bit word at `addr` equals
    /// `value` (function 3, mask all ones), polling every 4 (units of the engine's clock),
    /// retrying forever (0xfff), as ROCR's `BuildPollCommand`.
    pub fn poll_mem_eq(addr: GpuVa, value: u32) -> [u32; 6] {
        Repr::PollRegMem(PollRegMem {
            hdp_flush: false,
            func: crate::wire::sdma::POLL_FUNC_EQUAL as u8,
            mem_poll: true,
            addr: addr.0,
            value,
            mask: u32::MAX,
            interval: 4,
            retry_count: 0xfff,
        })
        .to_array()
    }

    /// ROCR's HDP flush (`hdp_flush_cmd`): a `POLL_REGMEM` of a register whose function is
    /// "always" (6 dwords; dword 2, `ADDR_HI`, holds 0x8000_0000 as ROCR writes it).
    pub fn hdp_flush() -> [u32; 6] {
        Repr::PollRegMem(PollRegMem {
            hdp_flush: false,
            func: 0,
            mem_poll: false,
            addr: 0x8000_0000 << 32,
            value: 0,
            mask: 0,
            interval: 0,
            retry_count: 0,
        })
        .to_array()
    }

    /// `ATOMIC` (8 dwords) `ADD_RTN_64` of `value` to the 8-byte aligned `addr` (ROCR's
    /// signal decrement adds -1).
    pub fn atomic_add64(addr: GpuVa, value: i64) -> [u32; 8] {
        Repr::Atomic(Atomic {
            op: ATOMIC_ADD64 as u8,
            looped: false,
            addr: addr.0,
            src_data: value as u64,
            cmp_data: 0,
            loop_interval: 0,
        })
        .to_array()
    }

    /// `TIMESTAMP` `GET_GLOBAL_TIMESTAMP` (3 dwords): stores the GPU clock counter as 64 bits
    /// at the 8-byte aligned `addr`.
    pub fn timestamp(addr: GpuVa) -> [u32; 3] {
        Repr::Timestamp { addr: addr.0 }.to_array()
    }
}

/// Where a copy's completion goes: the completion signal's `amd_signal_t` fields, by device
/// address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaCompletion {
    /// `amd_signal_t.value` (decremented by 1).
    pub value: GpuVa,
    /// `event_mailbox_ptr` and `event_id`, when the signal has a mailbox.
    pub mailbox: Option<(GpuVa, u32)>,
    /// `start_ts` and `end_ts`, when the copy is profiled.
    pub timestamps: Option<(GpuVa, GpuVa)>,
}

/// Appends to `out` the command of one linear copy of `size` bytes from `src` to `dst` after
/// the signals whose values are at `deps` reach 0, completing `completion` (see the module
/// docs for the packets and their order, ROCR 5.2's). `size` 0 copies nothing but still
/// completes.
#[cfg(feature = "alloc")]
pub fn copy_commands(
    out: &mut alloc::vec::Vec<u32>,
    dst: GpuVa,
    src: GpuVa,
    size: u64,
    deps: &[GpuVa],
    completion: &SdmaCompletion,
) {
    wrap(out, deps, completion, |out| {
        let mut done = 0;
        while done < size {
            let n = (size - done).min(packet::COPY_LINEAR_MAX_BYTES);
            out.extend(packet::copy_linear(
                GpuVa(dst.0 + done),
                GpuVa(src.0 + done),
                n as u32,
            ));
            done += n;
        }
    });
}

/// The dependency polls, start stamp and HDP flush before `body`'s packets, the end stamp
/// and completion after them (ROCR 5.2's `SubmitCommand`).
#[cfg(feature = "alloc")]
fn wrap(
    out: &mut alloc::vec::Vec<u32>,
    deps: &[GpuVa],
    completion: &SdmaCompletion,
    body: impl FnOnce(&mut alloc::vec::Vec<u32>),
) {
    for d in deps {
        out.extend(packet::poll_mem_eq(GpuVa(d.0 + 4), 0));
        out.extend(packet::poll_mem_eq(*d, 0));
    }
    if let Some((start, _)) = completion.timestamps {
        out.extend(packet::timestamp(start));
    }
    out.extend(packet::hdp_flush());
    body(out);
    if let Some((_, end)) = completion.timestamps {
        out.extend(packet::timestamp(end));
    }
    out.extend(packet::atomic_add64(completion.value, -1));
    if let Some((mailbox, id)) = completion.mailbox {
        out.extend(packet::fence(mailbox, id));
        out.extend(packet::trap(id));
    }
}

/// One surface of a rect copy (`hsa_pitched_ptr_t` and its offset): the base, the row and
/// slice pitches in bytes, and the offset of the copied block (x bytes, y rows, z slices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RectSurface {
    /// First byte of the surface (device address).
    pub base: GpuVa,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Bytes from one slice to the next.
    pub slice: u64,
    /// The block's offset: x in bytes, y in rows, z in slices.
    pub offset: [u64; 3],
}

/// `COPY_LINEAR_RECT` limits, in elements (ROCR's `SDMA_PKT_COPY_LINEAR_RECT` field widths).
#[cfg(feature = "alloc")]
const RECT_MAX_PITCH: u64 = 1 << 19;
#[cfg(feature = "alloc")]
const RECT_MAX_SLICE: u64 = 1 << 28;
#[cfg(feature = "alloc")]
const RECT_MAX_XY: u64 = 1 << 14;
#[cfg(feature = "alloc")]
const RECT_MAX_Z: u64 = 1 << 11;

/// The log2 of the largest element (1 to 16 bytes) that divides `w`.
#[cfg(feature = "alloc")]
fn max_aligned_element(w: u64) -> u32 {
    (w | 16).trailing_zeros()
}

/// Appends to `out` the command of a rect copy of `range` (x bytes, y rows, z slices) from
/// `src` to `dst`, with the dependency waits and completion of [`copy_commands`]. The block
/// is cut into `COPY_LINEAR_RECT` tiles as ROCR 5.2's `BuildCopyRectCommand` cuts it: each
/// tile's element size (1 to 16 bytes) is the largest that the pitches (and slices, when
/// copying along z), the tile's width and its dword-aligned bases' offsets allow; a row
/// pitch beyond the packet's 19 bits with one slice becomes a copy along z (rows as
/// slices). The caller checked ROCR's other rect rules (dword-aligned bases and pitches,
/// the block inside its surfaces).
///
/// # Errors
/// `Status::InvalidArgument` when a pitch or slice pitch, in the smallest element the copy
/// needs, does not fit the packet (ROCR: "Copy rect pitch/slice out of limits").
#[cfg(feature = "alloc")]
pub fn copy_rect_commands(
    out: &mut alloc::vec::Vec<u32>,
    dst: &RectSurface,
    src: &RectSurface,
    range: [u64; 3],
    deps: &[GpuVa],
    completion: &SdmaCompletion,
) -> Result<()> {
    let (mut dst, mut src, mut range) = (*dst, *src, range);
    if range[2] == 1 && (src.pitch > RECT_MAX_PITCH || dst.pitch > RECT_MAX_PITCH) {
        for s in [&mut src, &mut dst] {
            s.base = GpuVa(s.base.0 + s.offset[2] * s.slice + s.offset[1] * s.pitch);
            s.offset = [s.offset[0], 0, 0];
            s.slice = s.pitch;
            s.pitch = 0;
        }
        range = [range[0], 1, range[1]];
    }
    let along_z = range[2] != 1;
    let mut max_ele = max_aligned_element(src.pitch).min(max_aligned_element(dst.pitch));
    if along_z {
        max_ele = max_ele
            .min(max_aligned_element(src.slice))
            .min(max_aligned_element(dst.slice));
    }
    let min_ele = max_ele
        .min(max_aligned_element(range[0]))
        .min(max_aligned_element(src.offset[0] % 4))
        .min(max_aligned_element(dst.offset[0] % 4));
    if (src.pitch >> min_ele) > RECT_MAX_PITCH || (dst.pitch >> min_ele) > RECT_MAX_PITCH {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [src.pitch, dst.pitch, 1 << min_ele],
            |&[s, d, e, ..], f| {
                write!(
                    f,
                    "rect copy pitches {s} and {d} bytes in {e}-byte elements exceed the SDMA \
                     packet's 2^19"
                )
            },
        ));
    }
    if along_z
        && ((src.slice >> min_ele) > RECT_MAX_SLICE || (dst.slice >> min_ele) > RECT_MAX_SLICE)
    {
        return Err(Error::lazy(
            Status::InvalidArgument,
            [src.slice, dst.slice, 1 << min_ele],
            |&[s, d, e, ..], f| {
                write!(
                    f,
                    "rect copy slice pitches {s} and {d} bytes in {e}-byte elements exceed the \
                     SDMA packet's 2^28"
                )
            },
        ));
    }
    let field =
        |bytes: u64, e: u32, bits: u32| ((bytes >> e).wrapping_sub(1) & ((1 << bits) - 1)) as u32;
    wrap(out, deps, completion, |out| {
        let mut z = 0;
        while z < range[2] {
            let mut y = 0;
            while y < range[1] {
                let mut x = 0;
                while x < range[0] {
                    let width = range[0] - x;
                    let aligned = max_aligned_element((src.offset[0] + x) % 4)
                        .min(max_aligned_element((dst.offset[0] + x) % 4))
                        .min(max_ele);
                    let mut element = max_aligned_element(width).min(aligned);
                    let mut xcount = width >> element;
                    if xcount > RECT_MAX_XY {
                        element = aligned;
                        xcount = (width >> element).min(RECT_MAX_XY);
                    }
                    let at = |s: &RectSurface| {
                        s.base.0
                            + s.offset[0]
                            + x
                            + (s.offset[1] + y) * s.pitch
                            + (s.offset[2] + z) * s.slice
                    };
                    let (sb, db) = (at(&src), at(&dst));
                    let (soff, doff) = (((sb % 4) >> element) as u32, ((db % 4) >> element) as u32);
                    let (sb, db) = (sb & !3, db & !3);
                    x += xcount << element;
                    let slice_field = |s: &RectSurface| {
                        if along_z {
                            field(s.slice, element, 28)
                        } else {
                            0
                        }
                    };
                    let rect_y = (range[1] - y).min(RECT_MAX_XY) - 1;
                    let rect_z = (range[2] - z).min(RECT_MAX_Z) - 1;
                    let side = |s: &RectSurface, base: u64, off: u32| RectSide {
                        addr: base,
                        x: off as u16,
                        y: 0,
                        z: 0,
                        pitch: field(s.pitch, element, 19),
                        slice_pitch: slice_field(s),
                    };
                    let rect = Repr::CopyLinearRect(CopyLinearRect {
                        element: element as u8,
                        src: side(&src, sb, soff),
                        dst: side(&dst, db, doff),
                        rect_x: (xcount - 1) as u16,
                        rect_y: rect_y as u16,
                        rect_z: rect_z as u16,
                        dst_sw: 0,
                        src_sw: 0,
                    });
                    out.extend(rect.to_array::<13>());
                }
                y += RECT_MAX_XY;
            }
            z += RECT_MAX_Z;
        }
    });
    Ok(())
}

/// Ring size of an [`SdmaQueue`], bytes (ROCR's `BlitSdmaBase::kQueueSize`).
pub const SDMA_RING_BYTES: u64 = 1 << 20;
/// The longest [`Platform::relax`] of [`SdmaQueue::submit`] waiting for ring space, ns
/// (1 ms: the most a waiting producer lags behind the engine freeing space).
pub const RING_FULL_RELAX_MAX_NS: u64 = 1_000_000;
/// Bytes after the ring holding the read pointer (at +0) and the write pointer (at +8).
const POINTER_PAGE_BYTES: u64 = 4096;

/// One SDMA queue of a GPU node (see the module docs).
pub struct SdmaQueue<H: PlatformRef> {
    platform: H,
    node: NodeId,
    chunk: MemoryChunk,
    host: NonNull<u8>,
    hw: HwQueue<<H::Target as Platform>::Doorbell>,
    /// The write pointer (bytes, growing); the lock orders submissions.
    wptr: spin::Mutex<u64>,
    /// [`SdmaQueue::mark_stopped`] was called.
    stopped: AtomicBool,
}

// SAFETY: `host` points into `chunk`, which the queue owns; the ring is written under the
// `wptr` lock and the pointer words are accessed atomically; the platform handle and
// doorbell are Send/Sync by their own bounds (PlatformRef's target is Sync, Doorbell is
// Send + Sync).
unsafe impl<H: PlatformRef + Send> Send for SdmaQueue<H> {}
// SAFETY: as for Send.
unsafe impl<H: PlatformRef + Sync> Sync for SdmaQueue<H> {}

impl<H: PlatformRef> core::fmt::Debug for SdmaQueue<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SdmaQueue")
            .field("node", &self.node)
            .field("queue", &self.hw.id)
            .field("ring", &self.chunk.gpu_va)
            .finish()
    }
}

impl<H: PlatformRef> SdmaQueue<H> {
    /// Creates an SDMA queue on GPU `node`: allocates its ring and pointers (system memory,
    /// host-accessible, uncached, as ROCR's `system_allocator` with `AllocateExecutable`) and
    /// asks the platform for the queue ([`SdmaQueues::create_sdma_queue`], the platform's
    /// optional capability).
    ///
    /// # Errors
    /// `Status::InvalidQueueCreation` naming the platform when it has no SDMA queues
    /// ([`Capabilities::sdma`](crate::platform::Capabilities::sdma) is `None`), before
    /// anything is allocated; the allocation's error; the platform's, after the memory was
    /// given back.
    pub fn create(platform: H, node: NodeId) -> Result<SdmaQueue<H>> {
        if platform.capabilities().sdma.is_none() {
            return Err(crate::error!(
                Status::InvalidQueueCreation,
                "node {}: the {} platform has no SDMA engine",
                node.0,
                crate::platform::TopologySource::device_name(&*platform)
            ));
        }
        let size_bytes = SDMA_RING_BYTES + POINTER_PAGE_BYTES;
        let chunk = platform.allocate_memory(&MemoryRequest {
            node,
            kind: MemoryKind::System,
            size_bytes,
            align_bytes: 4096,
            flags: MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED,
        })?;
        let host = match chunk.host_ptr {
            Some(h) if chunk.size_bytes >= size_bytes && h.as_ptr() as usize % 4096 == 0 => h,
            _ => {
                // SAFETY: just allocated by this platform, never shared.
                let _ = unsafe { platform.free_memory(&chunk) };
                return Err(crate::error!(
                    Status::InvalidAllocation,
                    "SDMA ring of {size_bytes} bytes: the platform's chunk at {:#x} has no \
                     page-aligned host mapping of that size",
                    chunk.gpu_va.0
                ));
            }
        };
        let request = SdmaQueueRequest {
            node,
            ring: chunk.gpu_va,
            ring_size_bytes: SDMA_RING_BYTES,
            read_pointer: GpuVa(chunk.gpu_va.0 + SDMA_RING_BYTES),
            write_pointer: GpuVa(chunk.gpu_va.0 + SDMA_RING_BYTES + 8),
        };
        // SAFETY: the ring and pointers are in `chunk`, which the queue owns and frees only
        // after destroy_queue returned (Drop); the pointer words are only accessed through
        // atomics here.
        let created = match platform.capabilities().sdma {
            // SAFETY: as above.
            Some(sdma) => unsafe { sdma.create_sdma_queue(&request) },
            None => Err(crate::error!(
                Status::InvalidQueueCreation,
                "node {}: the {} platform has no SDMA engine",
                node.0,
                crate::platform::TopologySource::device_name(&*platform)
            )),
        };
        let hw = match created {
            Ok(hw) => hw,
            Err(e) => {
                // SAFETY: no queue uses the chunk.
                let _ = unsafe { platform.free_memory(&chunk) };
                return Err(e);
            }
        };
        Ok(SdmaQueue {
            platform,
            node,
            chunk,
            host,
            hw,
            wptr: spin::Mutex::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    /// Marks the queue as stopped for good (the engine will read no more of its ring, e.g.
    /// amdkfd evicted the process's queues after a GPU memory fault): every later
    /// [`submit`](Self::submit), and one waiting for ring space, fails.
    pub fn mark_stopped(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// Whether [`mark_stopped`](Self::mark_stopped) was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn stopped_error(&self) -> Error {
        Error::lazy(
            Status::Error,
            [u64::from(self.node.0), u64::from(self.hw.id.0)],
            |&[n, q, ..], f| {
                write!(
                    f,
                    "the SDMA queue {q} of node {n} has stopped (a GPU memory fault ended it): \
                     its engine runs no more commands"
                )
            },
        )
    }

    /// The GPU node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    fn pointer(&self, offset: u64) -> &AtomicU64 {
        // SAFETY: offsets 0 and 8 of the page after the ring, inside the owned chunk, 8-aligned
        // (the chunk is page-aligned), only accessed atomically (here and by the engine).
        unsafe {
            &*self
                .host
                .as_ptr()
                .add((SDMA_RING_BYTES + offset) as usize)
                .cast::<AtomicU64>()
        }
    }

    /// The read pointer the engine wrote back (bytes, growing).
    pub fn read_pointer(&self) -> u64 {
        // Acquire pairs with the engine's Release store after it ran the packets before it.
        self.pointer(0).load(Ordering::Acquire)
    }

    fn ring_dword(&self, at: u64) -> &AtomicU32 {
        let off = (at % SDMA_RING_BYTES) as usize;
        // SAFETY: `off` is a 4-aligned offset inside the ring (callers keep `at` 4-aligned),
        // inside the owned chunk; ring dwords the engine may read are written atomically.
        unsafe { &*self.host.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// Writes `dwords` (whole packets) at the write pointer, then publishes it: the write
    /// pointer word, then the doorbell, each a Release store of the new byte offset. While the
    /// engine has not consumed enough of the ring it waits: it spins for the platform's
    /// [`wait_spin_ns`](Platform::wait_spin_ns), then gives the CPU away
    /// ([`Platform::relax`]) for 1 µs, doubling up to [`RING_FULL_RELAX_MAX_NS`], re-reading
    /// the read pointer in between (the engine raises no event for ring space).
    ///
    /// Returns the write pointer after the command (bytes, growing): the engine has run the
    /// command once its [`read_pointer`](Self::read_pointer) reaches it.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an empty command or one as large as the ring;
    /// `Status::Error` once the queue is [marked stopped](Self::mark_stopped), also while
    /// waiting for ring space.
    pub fn submit(&self, dwords: &[u32]) -> Result<u64> {
        let bytes = dwords.len() as u64 * 4;
        if bytes == 0 || bytes >= SDMA_RING_BYTES {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [bytes, SDMA_RING_BYTES],
                |&[b, r, ..], f| write!(f, "SDMA command of {b} bytes: must be 1..{r}"),
            ));
        }
        let mut w = self.wptr.lock();
        if self.is_stopped() {
            return Err(self.stopped_error());
        }
        // Pad the ring's end with one-dword NOPs when the command would wrap.
        let off = *w % SDMA_RING_BYTES;
        let pad = if off + bytes > SDMA_RING_BYTES {
            SDMA_RING_BYTES - off
        } else {
            0
        };
        let end = *w + pad + bytes;
        if end - self.read_pointer() > SDMA_RING_BYTES - 4 {
            let platform: &PlatformOf<H> = &self.platform;
            let clock = crate::signal::wait::Clock::start(platform);
            let spin_ns = platform.wait_spin_ns();
            let mut backoff = crate::signal::wait::Backoff::new();
            let mut relax_ns = 1_000;
            while end - self.read_pointer() > SDMA_RING_BYTES - 4 {
                if self.is_stopped() {
                    return Err(self.stopped_error());
                }
                if clock.elapsed_ns() < spin_ns {
                    backoff.spin();
                } else {
                    platform.relax(relax_ns);
                    relax_ns = (relax_ns * 2).min(RING_FULL_RELAX_MAX_NS);
                }
            }
        }
        let mut at = *w;
        for _ in 0..pad / 4 {
            self.ring_dword(at).store(0, Ordering::Relaxed);
            at += 4;
        }
        for &d in dwords {
            self.ring_dword(at).store(d, Ordering::Relaxed);
            at += 4;
        }
        *w = end;
        // Release: the packets above are visible to whoever acquires the pointer or the
        // doorbell (the engine's Acquire load of the doorbell).
        self.pointer(8).store(end, Ordering::Release);
        self.platform.ring_doorbell(&self.hw.doorbell, end);
        Ok(end)
    }
}

impl<H: PlatformRef> Drop for SdmaQueue<H> {
    fn drop(&mut self) {
        if self.platform.destroy_queue(self.hw.id).is_ok() {
            // SAFETY: the queue is destroyed: nothing reads the ring any more.
            let _ = unsafe { self.platform.free_memory(&self.chunk) };
        }
        // Otherwise the engine may still read the ring: the chunk is left allocated.
    }
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;
    use crate::platform::fake::FakePlatform;

    /// The packets as ROCR 5.2 fills them (`sdma_registers.h` bit fields, computed by hand):
    /// the atomic's header is `SDMA_OP_ATOMIC | SDMA_ATOMIC_ADD64 << 25`, the poll's
    /// `SDMA_OP_POLL_REGMEM | func 3 << 28 | mem_poll << 31`, the timestamp's
    /// `SDMA_OP_TIMESTAMP | GET_GLOBAL << 8`.
    #[test]
    fn packets_are_rocr_5_2s() {
        assert_eq!(
            packet::copy_linear(GpuVa(0x1_2345_6780), GpuVa(0xab_0000_0010), 4096),
            [1, 4095, 0, 0x10, 0xab, 0x2345_6780, 1]
        );
        assert_eq!(
            packet::atomic_add64(GpuVa(0x7f00_0000_0008), -1),
            [0x5e00_000a, 8, 0x7f00, 0xffff_ffff, 0xffff_ffff, 0, 0, 0]
        );
        assert_eq!(
            packet::poll_mem_eq(GpuVa(0x1000), 0),
            [0xb000_0008, 0x1000, 0, 0, 0xffff_ffff, 0x0fff_0004]
        );
        assert_eq!(packet::timestamp(GpuVa(0x20)), [0x20d, 0x20, 0]);
        assert_eq!(packet::fence(GpuVa(0x30), 9), [5, 0x30, 0, 9]);
        assert_eq!(packet::trap(0xf000_0003), [6, 3]);
        assert_eq!(packet::hdp_flush(), [8, 0, 0x8000_0000, 0, 0, 0]);
    }

    /// One dependency, profiling, a mailbox, and a copy just over one packet's maximum:
    /// polls (high half first), start stamp, HDP flush, two copies, end stamp, atomic, fence,
    /// trap — in that order.
    #[test]
    fn copy_commands_are_in_rocrs_order() {
        let mut out = alloc::vec::Vec::new();
        let size = packet::COPY_LINEAR_MAX_BYTES + 8;
        copy_commands(
            &mut out,
            GpuVa(0x10_0000),
            GpuVa(0x90_0000),
            size,
            &[GpuVa(0x2008)],
            &SdmaCompletion {
                value: GpuVa(0x3008),
                mailbox: Some((GpuVa(0x4000), 17)),
                timestamps: Some((GpuVa(0x3020), GpuVa(0x3028))),
            },
        );
        let mut want = alloc::vec::Vec::new();
        want.extend(packet::poll_mem_eq(GpuVa(0x200c), 0));
        want.extend(packet::poll_mem_eq(GpuVa(0x2008), 0));
        want.extend(packet::timestamp(GpuVa(0x3020)));
        want.extend(packet::hdp_flush());
        want.extend(packet::copy_linear(
            GpuVa(0x10_0000),
            GpuVa(0x90_0000),
            packet::COPY_LINEAR_MAX_BYTES as u32,
        ));
        want.extend(packet::copy_linear(
            GpuVa(0x10_0000 + packet::COPY_LINEAR_MAX_BYTES),
            GpuVa(0x90_0000 + packet::COPY_LINEAR_MAX_BYTES),
            8,
        ));
        want.extend(packet::timestamp(GpuVa(0x3028)));
        want.extend(packet::atomic_add64(GpuVa(0x3008), -1));
        want.extend(packet::fence(GpuVa(0x4000), 17));
        want.extend(packet::trap(17));
        assert_eq!(out, want);
    }

    /// A platform without SDMA queues refuses with `INVALID_QUEUE_CREATION` and allocates
    /// nothing.
    #[test]
    fn a_platform_without_sdma_refuses_and_frees_the_ring() {
        let p = FakePlatform::new();
        let e = SdmaQueue::create(&p, NodeId(1)).unwrap_err();
        assert_eq!(e.status(), Status::InvalidQueueCreation);
        assert!(e.detail().contains("has no SDMA engine"), "{e}");
        assert!(p.live_chunks().is_empty());
    }
}
