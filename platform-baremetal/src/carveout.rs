//! A first-fit allocator over the host's carve-outs, with its bookkeeping outside the managed
//! memory (fixed-capacity `heapless` lists), so it works for VRAM the CPU cannot touch.
//!
//! It hands out large chunks (pages and up); the core's memory pools sub-allocate inside them.
//! O(n) in the number of live chunks and free ranges per carve-out, which stay small.

use hsa_core::platform::{MemoryFlags, MemoryKind, MemoryRequest};
use hsa_core::{Error, GpuVa, NodeId, Status};

use crate::host::{CarveOut, CarveOutKind};

/// Most carve-outs one allocator manages.
pub const MAX_CARVE_OUTS: usize = 8;
/// Most free ranges and most live chunks per carve-out.
pub const MAX_RANGES: usize = 64;
/// The allocation granule, bytes.
pub const PAGE_BYTES: u64 = 4096;

/// A chunk handed out: which carve-out, where, how big.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarveOutBlock {
    /// Index of the carve-out in the host's list.
    pub carve_out: usize,
    /// Byte offset inside the carve-out.
    pub offset: u64,
    /// Size, bytes.
    pub size_bytes: u64,
    /// GPU address of the first byte.
    pub gpu_va: GpuVa,
    /// CPU virtual address of the first byte, when the CPU can touch it.
    pub virt: Option<usize>,
}

impl CarveOutBlock {
    /// An opaque 64-bit handle: carve-out index in bits \[63:56\], page number in \[55:0\].
    pub fn handle(&self) -> u64 {
        ((self.carve_out as u64) << 56) | (self.offset / PAGE_BYTES)
    }
}

#[derive(Debug, Default)]
struct Arena {
    free: heapless::Vec<(u64, u64), MAX_RANGES>,
    live: heapless::Vec<(u64, u64), MAX_RANGES>,
}

/// The allocator: one arena per carve-out, behind a spin lock (allocation is not on an
/// interrupt path).
#[derive(Debug)]
pub struct CarveOutAllocator {
    carve_outs: heapless::Vec<CarveOut, MAX_CARVE_OUTS>,
    arenas: spin::Mutex<heapless::Vec<Arena, MAX_CARVE_OUTS>>,
}

impl CarveOutAllocator {
    /// An allocator over `carve_outs`, all free.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for more than [`MAX_CARVE_OUTS`] carve-outs, or one whose
    /// size, GPU address or physical address is not a multiple of 4096, or whose size is 0.
    pub fn new(carve_outs: &[CarveOut]) -> Result<CarveOutAllocator, Error> {
        let mut cs = heapless::Vec::new();
        let mut arenas = heapless::Vec::new();
        for (i, c) in carve_outs.iter().enumerate() {
            if c.size_bytes == 0
                || c.size_bytes % PAGE_BYTES != 0
                || !c.gpu_va.is_aligned(PAGE_BYTES)
                || c.phys_base.get() % PAGE_BYTES != 0
            {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [i as u64, c.size_bytes, c.gpu_va.get(), c.phys_base.get()],
                    |&[i, size, gpu_va, phys, ..], f| {
                        write!(
                            f,
                            "carve-out {i}: size {size:#x}, gpu_va {gpu_va:#x}, phys {phys:#x} \
                             must be non-zero multiples of 4096"
                        )
                    },
                ));
            }
            let mut a = Arena::default();
            let _ = a.free.push((0, c.size_bytes));
            if cs.push(*c).is_err() || arenas.push(a).is_err() {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [carve_outs.len() as u64],
                    |&[n, ..], f| write!(f, "{n} carve-outs; at most {MAX_CARVE_OUTS}"),
                ));
            }
        }
        Ok(CarveOutAllocator {
            carve_outs: cs,
            arenas: spin::Mutex::new(arenas),
        })
    }

    /// The carve-outs managed.
    pub fn carve_outs(&self) -> &[CarveOut] {
        &self.carve_outs
    }

    /// Allocates a chunk for `request`, trying in order: for `System`, system-memory
    /// carve-outs; for `DeviceLocal`, host-visible VRAM first when `HOST_ACCESS` is asked,
    /// else private VRAM first then host-visible VRAM. Only carve-outs of `request.node`
    /// (system memory: any node) are used. The memory is not zeroed here.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a size of 0 or not a multiple of 4096, or an alignment
    /// not a power of two >= 4096; `Status::OutOfResources` when no carve-out has room (or
    /// the bookkeeping is full).
    pub fn allocate(&self, request: &MemoryRequest) -> Result<CarveOutBlock, Error> {
        let size = request.size_bytes;
        let align = request.align_bytes;
        if size == 0 || size % PAGE_BYTES != 0 {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [size],
                |&[size, ..], f| {
                    write!(f, "size_bytes {size:#x} is not a non-zero multiple of 4096")
                },
            ));
        }
        if !align.is_power_of_two() || align < PAGE_BYTES {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [align],
                |&[align, ..], f| write!(f, "align_bytes {align:#x} is not a power of two >= 4096"),
            ));
        }
        let host = request.flags.contains(MemoryFlags::HOST_ACCESS);
        let order: &[CarveOutKind] = match (request.kind, host) {
            (MemoryKind::System, _) => &[CarveOutKind::SystemMemory],
            (MemoryKind::DeviceLocal, true) => &[CarveOutKind::HostVisibleVram],
            (MemoryKind::DeviceLocal, false) => {
                &[CarveOutKind::PrivateVram, CarveOutKind::HostVisibleVram]
            }
        };
        let mut arenas = self.arenas.lock();
        for kind in order {
            for (i, c) in self.carve_outs.iter().enumerate() {
                if c.kind != *kind
                    || (c.kind != CarveOutKind::SystemMemory && c.node != request.node)
                {
                    continue;
                }
                if let Some(off) = take(&mut arenas[i], c.gpu_va.get(), size, align) {
                    return Ok(CarveOutBlock {
                        carve_out: i,
                        offset: off,
                        size_bytes: size,
                        gpu_va: GpuVa(c.gpu_va.get() + off),
                        virt: c.virt_base.map(|v| v + off as usize),
                    });
                }
            }
        }
        Err(Error::lazy(
            Status::OutOfResources,
            [
                u64::from(request.kind == MemoryKind::DeviceLocal),
                request.node.get().into(),
                size,
                align,
            ],
            |&[device_local, node, size, align, ..], f| {
                let kind = match device_local {
                    0 => MemoryKind::System,
                    _ => MemoryKind::DeviceLocal,
                };
                write!(
                    f,
                    "no {kind:?} carve-out of node {node} has {size:#x} free bytes aligned to \
                     {align:#x}"
                )
            },
        ))
    }

    /// Frees the chunk with `handle` and `size_bytes` (as [`CarveOutBlock::handle`] gave).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when the handle and size do not name a live chunk (never
    /// given, already freed, wrong size).
    pub fn free(&self, handle: u64, size_bytes: u64) -> Result<CarveOutBlock, Error> {
        let carve = (handle >> 56) as usize;
        let offset = (handle & ((1 << 56) - 1)).wrapping_mul(PAGE_BYTES);
        let mut arenas = self.arenas.lock();
        let Some(arena) = arenas.get_mut(carve) else {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [handle],
                |&[handle, ..], f| write!(f, "handle {handle:#x} names no carve-out"),
            ));
        };
        let Some(pos) = arena.live.iter().position(|&r| r == (offset, size_bytes)) else {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [handle, size_bytes],
                |&[handle, size_bytes, ..], f| {
                    write!(
                        f,
                        "handle {handle:#x} size {size_bytes:#x} is not a live chunk"
                    )
                },
            ));
        };
        arena.live.swap_remove(pos);
        give_back(arena, offset, size_bytes);
        let c = &self.carve_outs[carve];
        Ok(CarveOutBlock {
            carve_out: carve,
            offset,
            size_bytes,
            gpu_va: GpuVa(c.gpu_va.get() + offset),
            virt: c.virt_base.map(|v| v + offset as usize),
        })
    }

    /// Bytes free in carve-out `index` (0 for an unknown index).
    pub fn free_bytes(&self, index: usize) -> u64 {
        self.arenas
            .lock()
            .get(index)
            .map_or(0, |a| a.free.iter().map(|r| r.1).sum())
    }

    /// The system-memory carve-outs' node, for callers that need "some" node.
    pub fn any_system_node(&self) -> Option<NodeId> {
        self.carve_outs
            .iter()
            .find(|c| c.kind == CarveOutKind::SystemMemory)
            .map(|c| c.node)
    }
}

/// First fit: the first free range holding `size` bytes at a GPU address aligned to `align`.
fn take(a: &mut Arena, gpu_base: u64, size: u64, align: u64) -> Option<u64> {
    if a.live.is_full() {
        return None;
    }
    for i in 0..a.free.len() {
        let (start, len) = a.free[i];
        let addr = gpu_base.checked_add(start)?;
        let aligned = addr.checked_add(align - 1)? & !(align - 1);
        let pad = aligned - addr;
        if pad.checked_add(size)? > len {
            continue;
        }
        let tail = len - pad - size;
        // Splitting into two pieces needs one more slot.
        if pad > 0 && tail > 0 && a.free.is_full() {
            continue;
        }
        let off = start + pad;
        match (pad > 0, tail > 0) {
            (false, false) => {
                a.free.remove(i);
            }
            (true, false) => a.free[i] = (start, pad),
            (false, true) => a.free[i] = (off + size, tail),
            (true, true) => {
                a.free[i] = (start, pad);
                let _ = a.free.insert(i + 1, (off + size, tail));
            }
        }
        let _ = a.live.push((off, size));
        return Some(off);
    }
    None
}

/// Returns `[off, off + size)` to the sorted free list, merging neighbours.
fn give_back(a: &mut Arena, off: u64, size: u64) {
    let i = a
        .free
        .iter()
        .position(|r| r.0 > off)
        .unwrap_or(a.free.len());
    let merge_prev = i > 0 && a.free[i - 1].0 + a.free[i - 1].1 == off;
    let merge_next = i < a.free.len() && off + size == a.free[i].0;
    match (merge_prev, merge_next) {
        (true, true) => {
            a.free[i - 1].1 += size + a.free[i].1;
            a.free.remove(i);
        }
        (true, false) => a.free[i - 1].1 += size,
        (false, true) => a.free[i] = (off, size + a.free[i].1),
        (false, false) => {
            // There is always a slot here. Two free ranges never touch (they would have been
            // merged), so between any two lies at least one live chunk: free <= live + 1, and
            // `take` never lets the free list outgrow MAX_RANGES. With the free list full, the
            // live chunks and free ranges alternate (free = live + 1, or free = live with a
            // live chunk at one end), so every live chunk has a free neighbour and its return
            // merges. `gives_back_every_byte_under_random_traffic` checks this.
            let inserted = a.free.insert(i, (off, size));
            debug_assert!(
                inserted.is_ok(),
                "carve-out free list full on an unmerged return"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_core::PhysAddr;
    use std::string::ToString;

    fn carve(kind: CarveOutKind, node: u32, gpu: u64, size: u64, virt: Option<usize>) -> CarveOut {
        CarveOut {
            node: NodeId(node),
            kind,
            phys_base: PhysAddr(gpu),
            virt_base: virt,
            gpu_va: GpuVa(gpu),
            size_bytes: size,
        }
    }

    fn req(
        kind: MemoryKind,
        node: u32,
        size: u64,
        align: u64,
        flags: MemoryFlags,
    ) -> MemoryRequest {
        MemoryRequest {
            node: NodeId(node),
            kind,
            size_bytes: size,
            align_bytes: align,
            flags,
        }
    }

    #[test]
    fn allocates_by_kind_aligns_frees_and_merges() {
        let a = CarveOutAllocator::new(&[
            carve(
                CarveOutKind::SystemMemory,
                0,
                0x10_0000,
                0x10_0000,
                Some(0x7000_0000),
            ),
            carve(CarveOutKind::PrivateVram, 1, 0x8000_0000, 0x4_0000, None),
            carve(
                CarveOutKind::HostVisibleVram,
                1,
                0x9000_0000,
                0x4_0000,
                Some(0x6000_0000),
            ),
        ])
        .unwrap();
        let s = a
            .allocate(&req(
                MemoryKind::System,
                1,
                0x2000,
                0x1000,
                MemoryFlags::HOST_ACCESS,
            ))
            .unwrap();
        assert_eq!(
            (s.carve_out, s.offset, s.gpu_va, s.virt),
            (0, 0, GpuVa(0x10_0000), Some(0x7000_0000))
        );
        // 64 KiB alignment: 0x10_2000 rounds up to 0x11_0000
        let b = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x1000,
                0x1_0000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!(b.gpu_va, GpuVa(0x11_0000));
        assert_eq!(b.virt, Some(0x7001_0000));
        let v = a
            .allocate(&req(
                MemoryKind::DeviceLocal,
                1,
                0x1000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!((v.carve_out, v.virt), (1, None));
        let h = a
            .allocate(&req(
                MemoryKind::DeviceLocal,
                1,
                0x1000,
                0x1000,
                MemoryFlags::HOST_ACCESS,
            ))
            .unwrap();
        assert_eq!((h.carve_out, h.virt), (2, Some(0x6000_0000)));
        let e = a
            .allocate(&req(
                MemoryKind::DeviceLocal,
                2,
                0x1000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        let e = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x1001,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.detail().to_string().contains("0x1001"));
        let e = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x1000,
                0x3000,
                MemoryFlags::empty(),
            ))
            .unwrap_err();
        assert!(e.detail().to_string().contains("align_bytes 0x3000"));
        assert_eq!(a.free_bytes(0), 0x10_0000 - 0x3000);
        a.free(s.handle(), s.size_bytes).unwrap();
        a.free(b.handle(), b.size_bytes).unwrap();
        assert_eq!(a.free_bytes(0), 0x10_0000);
        // everything merged back into one range: a whole-carve-out allocation fits again
        let all = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x10_0000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!(all.offset, 0);
        let e = a.free(b.handle(), b.size_bytes).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(a.free(all.handle(), 0x1000).is_err());
        assert!(a.free(9 << 56, 0x1000).is_err());
        let e = a
            .allocate(&req(
                MemoryKind::DeviceLocal,
                1,
                0x8_0000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
    }

    /// The out-of-resources text names the kind and node asked for; a free gives back the
    /// block the allocation gave (same GPU and CPU addresses); `any_system_node` is the system
    /// carve-out's node, or none.
    #[test]
    fn errors_name_the_request_and_free_returns_the_block() {
        let a = CarveOutAllocator::new(&[
            carve(CarveOutKind::PrivateVram, 1, 0x8000_0000, 0x4_0000, None),
            carve(
                CarveOutKind::SystemMemory,
                3,
                0x10_0000,
                0x4_0000,
                Some(0x7000_0000),
            ),
        ])
        .unwrap();
        assert_eq!(a.any_system_node(), Some(NodeId(3)));
        let big = |kind, node| req(kind, node, 0x8_0000, 0x1000, MemoryFlags::empty());
        let e = a.allocate(&big(MemoryKind::System, 3)).unwrap_err();
        assert_eq!(
            e.detail().to_string(),
            "no System carve-out of node 3 has 0x80000 free bytes aligned to 0x1000"
        );
        let e = a.allocate(&big(MemoryKind::DeviceLocal, 1)).unwrap_err();
        assert_eq!(
            e.detail().to_string(),
            "no DeviceLocal carve-out of node 1 has 0x80000 free bytes aligned to 0x1000"
        );
        let _ = a
            .allocate(&req(
                MemoryKind::System,
                3,
                0x1000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        let b = a
            .allocate(&req(
                MemoryKind::System,
                3,
                0x2000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!((b.gpu_va, b.virt), (GpuVa(0x10_1000), Some(0x7000_1000)));
        assert_eq!(a.free(b.handle(), b.size_bytes).unwrap(), b);
        let vram_only = CarveOutAllocator::new(&[carve(
            CarveOutKind::PrivateVram,
            1,
            0x8000_0000,
            0x4_0000,
            None,
        )])
        .unwrap();
        assert_eq!(vram_only.any_system_node(), None);
    }

    /// With the free-range list full (64 ranges), an allocation that would split a range in
    /// two is refused rather than losing the second piece, while one that shrinks a range in
    /// place (no padding, or nothing left after it) still succeeds, and no zero-length range
    /// is ever recorded.
    /// A carve-out fragmented until its free list is full (63 one-page chunks aligned to 8 KiB
    /// from an odd page: 64 free ranges), then random allocations (1 or 2 pages, aligned to 1
    /// to 32 pages) and frees in random order: after every step the free ranges are sorted,
    /// never touch, never overlap a live chunk and with the live chunks cover every byte, so no
    /// return was dropped, also those made while the free list was full (counted: there must be
    /// some); freeing everything leaves one range of the whole carve-out.
    #[test]
    fn gives_back_every_byte_under_random_traffic() {
        const SIZE: u64 = 0x10_0000;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut frees_while_full = 0;
        // Miri interprets every step's check (two rounds of 400 took three minutes there): one
        // round of 100 steps.
        let (rounds, steps) = if cfg!(miri) { (1, 100) } else { (20, 400) };
        for _round in 0..rounds {
            let a = CarveOutAllocator::new(&[carve(
                CarveOutKind::SystemMemory,
                0,
                0x10_1000,
                SIZE,
                None,
            )])
            .unwrap();
            let mut live: std::vec::Vec<(u64, u64)> = std::vec::Vec::new();
            for _ in 0..63 {
                let b = a
                    .allocate(&req(
                        MemoryKind::System,
                        0,
                        0x1000,
                        0x2000,
                        MemoryFlags::empty(),
                    ))
                    .unwrap();
                live.push((b.handle(), 0x1000));
            }
            assert_eq!(a.arenas.lock()[0].free.len(), MAX_RANGES);
            for _step in 0..steps {
                if live.is_empty() || next() % 2 == 0 {
                    let size = (next() % 2 + 1) * PAGE_BYTES;
                    let align = PAGE_BYTES << (next() % 6);
                    if let Ok(b) = a.allocate(&req(
                        MemoryKind::System,
                        0,
                        size,
                        align,
                        MemoryFlags::empty(),
                    )) {
                        assert_eq!(b.gpu_va.get() % align, 0);
                        live.push((b.handle(), size));
                    }
                } else {
                    if a.arenas.lock()[0].free.is_full() {
                        frees_while_full += 1;
                    }
                    let (h, size) = live.swap_remove((next() % live.len() as u64) as usize);
                    a.free(h, size).unwrap();
                }
                let arenas = a.arenas.lock();
                let ar = &arenas[0];
                let mut all: std::vec::Vec<(u64, u64, bool)> = ar
                    .free
                    .iter()
                    .map(|&(o, l)| (o, l, true))
                    .chain(ar.live.iter().map(|&(o, l)| (o, l, false)))
                    .collect();
                all.sort_unstable();
                let mut at = 0;
                for w in &all {
                    assert_eq!(w.0, at, "a gap or overlap at {at:#x}: {all:x?}");
                    at += w.1;
                }
                assert_eq!(at, SIZE);
                for p in all.windows(2) {
                    assert!(!(p[0].2 && p[1].2), "free ranges touch: {all:x?}");
                }
                assert_eq!(ar.live.len(), live.len());
            }
            for (h, size) in live.drain(..) {
                a.free(h, size).unwrap();
            }
            assert_eq!(a.arenas.lock()[0].free.as_slice(), &[(0, SIZE)]);
        }
        assert!(frees_while_full > 0);
    }

    #[test]
    fn a_full_free_list_refuses_only_splits() {
        // Base at an odd page: each 1-page block aligned to 8 KiB leaves a 1-page pad, so 63
        // blocks make 63 pads plus the tail: 64 ranges. The tail starts at offset 126 pages
        // (an odd page) and is 130 pages long.
        let fragmented = || {
            let a = CarveOutAllocator::new(&[carve(
                CarveOutKind::SystemMemory,
                0,
                0x10_1000,
                0x10_0000,
                None,
            )])
            .unwrap();
            for _ in 0..63 {
                a.allocate(&req(
                    MemoryKind::System,
                    0,
                    0x1000,
                    0x2000,
                    MemoryFlags::empty(),
                ))
                .unwrap();
            }
            assert_eq!(a.arenas.lock()[0].free.len(), MAX_RANGES);
            assert_eq!(a.free_bytes(0), 0x10_0000 - 63 * 0x1000);
            a
        };
        let ranges = |a: &CarveOutAllocator| a.arenas.lock()[0].free.clone();
        let tail_off = 126 * 0x1000;
        let tail_len = 130 * 0x1000;

        // Pad 1 page and a tail after: needs a new range, none left.
        let a = fragmented();
        let e = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x2000,
                0x2000,
                MemoryFlags::empty(),
            ))
            .unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert_eq!(a.free_bytes(0), 0x10_0000 - 63 * 0x1000);

        // No pad, a tail after: the tail range shrinks in place.
        let a = fragmented();
        let b = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x2000,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!(b.offset, tail_off);
        assert_eq!(a.free_bytes(0), 0x10_0000 - 65 * 0x1000);
        assert_eq!(
            ranges(&a).last(),
            Some(&(tail_off + 0x2000, tail_len - 0x2000))
        );

        // A pad and nothing after: the pad stays, the list keeps its 64 ranges.
        let a = fragmented();
        let b = a
            .allocate(&req(
                MemoryKind::System,
                0,
                tail_len - 0x1000,
                0x2000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!(b.offset, tail_off + 0x1000);
        let r = ranges(&a);
        assert_eq!((r.len(), r.last()), (MAX_RANGES, Some(&(tail_off, 0x1000))));
        assert!(
            r.iter().all(|&(_, len)| len > 0),
            "no zero-length range: {r:?}"
        );

        // The same with room in the list: still one range, the pad, and nothing empty.
        let a = CarveOutAllocator::new(&[carve(
            CarveOutKind::SystemMemory,
            0,
            0x10_1000,
            0x3000,
            None,
        )])
        .unwrap();
        let b = a
            .allocate(&req(
                MemoryKind::System,
                0,
                0x2000,
                0x2000,
                MemoryFlags::empty(),
            ))
            .unwrap();
        assert_eq!(b.offset, 0x1000);
        assert_eq!(ranges(&a).as_slice(), &[(0, 0x1000)]);
    }

    /// Freeing the last chunks of a full carve-out: the first becomes a range of its own
    /// (nothing free after it), the second merges into it from behind (nothing free after
    /// either), leaving one range of the whole size.
    #[test]
    fn frees_at_the_end_merge_backwards() {
        let a = CarveOutAllocator::new(&[carve(
            CarveOutKind::SystemMemory,
            0,
            0x10_0000,
            0x3000,
            None,
        )])
        .unwrap();
        let one = |size| {
            a.allocate(&req(
                MemoryKind::System,
                0,
                size,
                0x1000,
                MemoryFlags::empty(),
            ))
            .unwrap()
        };
        let (x, y) = (one(0x1000), one(0x2000));
        assert_eq!(a.free_bytes(0), 0);
        a.free(x.handle(), x.size_bytes).unwrap();
        assert_eq!(a.arenas.lock()[0].free.as_slice(), &[(0, 0x1000)]);
        a.free(y.handle(), y.size_bytes).unwrap();
        assert_eq!(a.arenas.lock()[0].free.as_slice(), &[(0, 0x3000)]);
        // and the other order: the last chunk first, at the end of an empty list
        let (x, y) = (one(0x1000), one(0x2000));
        a.free(y.handle(), y.size_bytes).unwrap();
        assert_eq!(a.arenas.lock()[0].free.as_slice(), &[(0x1000, 0x2000)]);
        a.free(x.handle(), x.size_bytes).unwrap();
        assert_eq!(a.arenas.lock()[0].free.as_slice(), &[(0, 0x3000)]);
    }

    #[test]
    fn bad_carve_outs_are_rejected() {
        let e =
            CarveOutAllocator::new(&[carve(CarveOutKind::SystemMemory, 0, 0x1800, 0x1000, None)])
                .unwrap_err();
        assert!(e.detail().to_string().contains("gpu_va 0x1800"), "{e:?}");
    }
}
