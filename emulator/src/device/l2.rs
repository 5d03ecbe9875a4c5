//! The cache model (issue 38 item 5): each emulated GPU's L2, as far as it decides what a
//! kernel and the host see of coarse-grained memory. Off by default
//! ([`EmulatedKfd::set_cache_model`](super::EmulatedKfd::set_cache_model), or
//! `HSA_RT_CACHE_MODEL=1`): without it every store is visible to every reader at once, so a
//! missing fence goes unnoticed. With it, a program that forgets a fence reads stale data here
//! as it would on silicon.
//!
//! What it models, from AMDGPUUsage's memory model for gfx90a and gfx942 and LLVM's
//! `SIMemoryLegalizer` (the same rules the compiler's fences rely on):
//! - Fine-grained memory (a buffer object allocated `COHERENT`, `EXT_COHERENT` or `UNCACHED`:
//!   MTYPE UC/CC), doorbells, MMIO, imported dma-bufs, GEM_VA mappings and SVM ranges are not
//!   cached: every access reaches memory ([`Caching::Uncached`]).
//! - Coarse-grained VRAM of the GPU itself (MTYPE RW, [`Caching::Local`]): a store stays in
//!   the L2, dirty, until a write-back; a load sees memory (the local-memory probes invalidate
//!   a line when another agent or the host writes it: "local VMEM data with MTYPE RW and CC
//!   will never be stale") with the GPU's own dirty bytes over it.
//! - Other coarse-grained memory (system memory, another GPU's VRAM: MTYPE NC,
//!   [`Caching::NonCoherent`]): a load fills the line from memory and later loads hit it until
//!   an invalidate, so the host's later stores go unseen; stores stay dirty until a write-back.
//!
//! What makes it coherent: an invalidate ([`L2::invalidate`]: the CP's system-scope acquire
//! fence of a packet, `buffer_invl2` on gfx90a, `buffer_inv sc1` on gfx942) drops every byte
//! that is not dirty; a write-back ([`L2::write_back`]: a system-scope release fence,
//! `buffer_wbl2`) writes the dirty bytes to memory. A line keeps a dirty mask per byte, as
//! gfx9's L2 does, so a write-back never overwrites bytes another agent wrote meanwhile.
//! Atomics execute at memory: the lines they touch are written back and dropped first
//! ([`L2::atomic`]). The SDMA engines and the host reach memory directly, never through a
//! GPU's L2, so a copy of what a kernel wrote needs the kernel's system-scope release first.
//!
//! Not modelled: the per-CU L1 and scalar caches (coherence between work-groups of one agent),
//! gfx942's L2 per XCC (one L2 per GPU here), the `sc0 sc1` write-through of a gfx942
//! system-scope store (it stays dirty until a write-back), and the hardware's replacement
//! policy: the cache holds [`CAPACITY_LINES`] lines and a new line past them evicts an
//! arbitrary one (written back when dirty). Accesses that cross from one buffer object into
//! the next go to memory uncached. Each line remembers the buffer object (KFD handle) it caches; when the
//! address belongs to another one (the memory was freed and the address reused), the line is
//! dropped, dirty bytes included: the memory they were written to no longer exists.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::mem::Region;
use super::memory::{Alloc, Kind};

/// Bytes per L2 line on gfx90a and gfx942 (the unit a fill and the masks cover).
pub(crate) const LINE_BYTES: u64 = 128;

/// Lines an [`L2`] holds: 8 MiB, an MI210's L2 (an MI300X XCD has 4 MiB). A new line past it
/// evicts one, written back first when dirty, as the hardware makes room.
pub(crate) const CAPACITY_LINES: usize = (8 << 20) / LINE_BYTES as usize;

/// Finds the buffer object at a device address now, for a write-back ([`L2::write_back`], an
/// eviction); `None` when no live one holds it.
pub(crate) type Resolve<'a> = &'a dyn Fn(u64) -> Option<Placement>;

/// How a GPU's L2 treats a buffer object (the MTYPE amdgpu maps it with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caching {
    /// Not cached (fine-grained or uncached memory, and everything that is no buffer object
    /// of its own).
    Uncached,
    /// Coarse-grained VRAM of this GPU (MTYPE RW): stores are cached, loads see memory.
    Local,
    /// Coarse-grained memory the GPU does not own (MTYPE NC): loads and stores are cached.
    NonCoherent,
}

impl Caching {
    /// How GPU `gpu_id` caches allocation `a`.
    pub(crate) fn of(a: &Alloc, gpu_id: u32) -> Caching {
        match a.kind {
            _ if !a.coarse => Caching::Uncached,
            Kind::Vram if a.gpu_id == gpu_id => Caching::Local,
            Kind::Vram | Kind::Gtt | Kind::Userptr => Caching::NonCoherent,
            _ => Caching::Uncached,
        }
    }
}

/// Where an access lies, for the cache: its buffer object's whole memory and first device
/// address, the object's KFD handle, and how the GPU caches it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement {
    /// The buffer object's whole memory.
    pub(crate) whole: Region,
    /// The device address of `whole`'s first byte.
    pub(crate) va: u64,
    /// The buffer object's KFD handle: what a line remembers.
    pub(crate) owner: u64,
    pub(crate) caching: Caching,
}

impl Placement {
    /// The placement of allocation `a` for GPU `gpu_id`.
    pub(crate) fn of(a: &Alloc, gpu_id: u32) -> Placement {
        Placement {
            whole: a.region,
            va: a.va,
            owner: a.handle,
            caching: Caching::of(a, gpu_id),
        }
    }

    /// The bytes of the line at `line` (a multiple of [`LINE_BYTES`]) that lie in the buffer
    /// object, as offsets in the line.
    fn window(&self, line: u64) -> (usize, usize) {
        let end = self.va + self.whole.len() as u64;
        let lo = line.max(self.va) - line;
        let hi = (line + LINE_BYTES).min(end).saturating_sub(line);
        (lo as usize, hi.max(lo) as usize)
    }

    /// Reads `out` from device address `addr` in memory; the faulting device address when
    /// the buffer object's user pages are gone.
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), u64> {
        self.whole
            .try_read_at(addr - self.va, out)
            .map_err(|f| self.va + f.offset)
    }

    /// Writes `data` at device address `addr` in memory (see [`Placement::read`]).
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), u64> {
        self.whole
            .try_write_at(addr - self.va, data)
            .map_err(|f| self.va + f.offset)
    }
}

/// The mask of bytes `off..off + n` of a line.
fn mask(off: usize, n: usize) -> u128 {
    if n == 0 {
        return 0;
    }
    let ones = if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    };
    ones << off
}

/// One cached line.
#[derive(Clone, Debug)]
struct Line {
    /// The KFD handle of the buffer object the line caches.
    owner: u64,
    data: [u8; LINE_BYTES as usize],
    /// Bytes that hold the line's value (filled from memory or written).
    valid: u128,
    /// Bytes written and not yet written back (a subset of `valid`).
    dirty: u128,
}

impl Line {
    fn new(owner: u64) -> Line {
        Line {
            owner,
            data: [0; LINE_BYTES as usize],
            valid: 0,
            dirty: 0,
        }
    }

    /// Writes the dirty bytes to memory through `p` (the runs of set bits, each one write),
    /// and marks them clean.
    fn write_back(&mut self, line: u64, p: &Placement) -> Result<(), u64> {
        let mut bits = self.dirty;
        while bits != 0 {
            let start = bits.trailing_zeros() as usize;
            let run = (bits >> start).trailing_ones() as usize;
            p.write(line + start as u64, &self.data[start..start + run])?;
            bits &= !mask(start, run);
        }
        self.dirty = 0;
        Ok(())
    }
}

/// What one emulated GPU's L2 did since the device was made (the cache model,
/// [`EmulatedKfd::cache_stats`](super::EmulatedKfd::cache_stats)); counts, not bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lines filled (or completed) from memory by a wave's load of non-coherent memory.
    pub fills: u64,
    /// Lines whose dirty bytes a write-back or an atomic wrote to memory.
    pub written_back: u64,
    /// Invalidates (each drops every byte that is not dirty).
    pub invalidates: u64,
    /// Lines dropped with dirty bytes that reached no memory: their buffer object was freed
    /// (or another took its address), or its user pages were unmapped.
    pub discarded_dirty: u64,
    /// Lines evicted to make room (the L2 holds 8 MiB of lines); the dirty ones were written
    /// back first.
    pub evicted: u64,
}

/// One GPU's L2 (see the module docs). Shared by the threads that run the GPU's work-groups
/// and its queues' command processors: one lock over all lines.
#[derive(Debug, Default)]
pub(crate) struct L2 {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The cached lines, by device address / [`LINE_BYTES`].
    lines: HashMap<u64, Line>,
    stats: CacheStats,
}

/// Splits `addr..addr + len` into the pieces each line holds: (line address, offset in the
/// line, length, offset in the access).
fn pieces(addr: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut done = 0usize;
    core::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let a = addr + done as u64;
        let line = a & !(LINE_BYTES - 1);
        let off = (a - line) as usize;
        let n = (LINE_BYTES as usize - off).min(len - done);
        let item = (line, off, n, done);
        done += n;
        Some(item)
    })
}

/// The line at `line` for buffer object `owner`, made (empty) when absent, after evicting one
/// when the cache is full; a line of another buffer object there is dropped (its memory is
/// gone), its dirty bytes counted as discarded.
fn line_for<'s>(
    lines: &'s mut HashMap<u64, Line>,
    stats: &mut CacheStats,
    line: u64,
    owner: u64,
    resolve: Resolve<'_>,
) -> &'s mut Line {
    if !lines.contains_key(&line) && lines.len() >= CAPACITY_LINES {
        evict_one(lines, stats, resolve);
    }
    let l = lines.entry(line).or_insert_with(|| Line::new(owner));
    if l.owner != owner {
        if l.dirty != 0 {
            stats.discarded_dirty += 1;
        }
        *l = Line::new(owner);
    }
    l
}

/// Evicts one line (the first the table yields: an arbitrary one, as a real L2's replacement
/// is to a program), writing its dirty bytes back when its buffer object is still there.
fn evict_one(lines: &mut HashMap<u64, Line>, stats: &mut CacheStats, resolve: Resolve<'_>) {
    let Some(&victim) = lines.keys().next() else {
        return;
    };
    let Some(mut l) = lines.remove(&victim) else {
        return;
    };
    stats.evicted += 1;
    if l.dirty == 0 {
        return;
    }
    match resolve(victim).filter(|p| p.owner == l.owner) {
        Some(p) if l.write_back(victim, &p).is_ok() => stats.written_back += 1,
        _ => stats.discarded_dirty += 1,
    }
}

impl L2 {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the cache did so far.
    pub(crate) fn stats(&self) -> CacheStats {
        self.state().stats
    }

    /// Lines held now.
    #[cfg(test)]
    pub(crate) fn lines(&self) -> usize {
        self.state().lines.len()
    }

    /// A wave's load of `out.len()` bytes at `addr`, inside the buffer object `p` (cached:
    /// not [`Caching::Uncached`]); `resolve` serves an eviction.
    ///
    /// # Errors
    /// The device address of the first byte that faulted (user pages gone).
    pub(crate) fn read(
        &self,
        p: &Placement,
        addr: u64,
        out: &mut [u8],
        resolve: Resolve<'_>,
    ) -> Result<(), u64> {
        let mut s = self.state();
        let State { lines, stats } = &mut *s;
        for (line, off, n, at) in pieces(addr, out.len()) {
            let chunk = &mut out[at..at + n];
            if p.caching == Caching::Local {
                // Memory, with this GPU's dirty bytes over it.
                p.read(line + off as u64, chunk)?;
                match lines.get(&line) {
                    Some(l) if l.owner == p.owner => {
                        for (i, b) in chunk.iter_mut().enumerate() {
                            if l.dirty >> (off + i) & 1 != 0 {
                                *b = l.data[off + i];
                            }
                        }
                    }
                    Some(_) => drop_stale(lines, stats, line),
                    None => {}
                }
                continue;
            }
            let l = line_for(lines, stats, line, p.owner, resolve);
            let want = mask(off, n);
            if l.valid & want != want {
                // Fill the line's bytes in the buffer object that it does not hold.
                let (lo, hi) = p.window(line);
                let mut fresh = [0u8; LINE_BYTES as usize];
                p.read(line + lo as u64, &mut fresh[lo..hi])?;
                for (i, (d, f)) in l.data.iter_mut().zip(fresh).enumerate().take(hi).skip(lo) {
                    if l.valid >> i & 1 == 0 {
                        *d = f;
                    }
                }
                l.valid |= mask(lo, hi - lo);
                stats.fills += 1;
            }
            chunk.copy_from_slice(&l.data[off..off + n]);
        }
        Ok(())
    }

    /// A wave's store of `data` at `addr`, inside the buffer object `p` (cached): the bytes
    /// stay in the L2, dirty, until a write-back or the line's eviction; `resolve` serves an
    /// eviction.
    pub(crate) fn write(&self, p: &Placement, addr: u64, data: &[u8], resolve: Resolve<'_>) {
        let mut s = self.state();
        let State { lines, stats } = &mut *s;
        for (line, off, n, at) in pieces(addr, data.len()) {
            let l = line_for(lines, stats, line, p.owner, resolve);
            l.data[off..off + n].copy_from_slice(&data[at..at + n]);
            let m = mask(off, n);
            l.valid |= m;
            l.dirty |= m;
        }
    }

    /// Runs `op` (an atomic on memory at `addr..addr + len`, inside `p`) after writing back
    /// and dropping the lines it touches, with the cache locked, so no wave's cached store to
    /// those bytes lands between the two and none of them is stale after it: atomics execute
    /// at memory.
    ///
    /// # Errors
    /// The device address of the first byte a write-back could not reach (user pages gone).
    pub(crate) fn atomic<R>(
        &self,
        p: &Placement,
        addr: u64,
        len: usize,
        op: impl FnOnce() -> R,
    ) -> Result<R, u64> {
        let mut s = self.state();
        let State { lines, stats } = &mut *s;
        for (line, ..) in pieces(addr, len) {
            if let Some(mut l) = lines.remove(&line) {
                if l.owner == p.owner && l.dirty != 0 {
                    l.write_back(line, p)?;
                    stats.written_back += 1;
                }
            }
        }
        Ok(op())
    }

    /// An invalidate: every byte that is not dirty is dropped, so the next load of it reads
    /// memory (the CP's acquire at system scope; `buffer_invl2`, gfx942's `buffer_inv sc1`).
    pub(crate) fn invalidate(&self) {
        let mut s = self.state();
        s.stats.invalidates += 1;
        s.lines.retain(|_, l| {
            l.valid = l.dirty;
            l.valid != 0
        });
    }

    /// A write-back: every dirty byte goes to memory (the CP's release at system scope;
    /// `buffer_wbl2`). `resolve` finds the buffer object at a line's address now; a line whose
    /// object is gone (or is another one) is dropped, as is one whose user pages are gone,
    /// each counted and logged. Clean lines of non-coherent memory stay; lines of local VRAM
    /// hold nothing once written back and go.
    pub(crate) fn write_back(&self, resolve: Resolve<'_>) {
        let mut s = self.state();
        let State { lines, stats } = &mut *s;
        lines.retain(|&line, l| {
            if l.dirty == 0 {
                return true;
            }
            let Some(p) = resolve(line).filter(|p| p.owner == l.owner) else {
                stats.discarded_dirty += 1;
                log::debug!(
                    "L2: dirty line {line:#x} dropped: its buffer object (handle {:#x}) is gone",
                    l.owner
                );
                return false;
            };
            if let Err(at) = l.write_back(line, &p) {
                stats.discarded_dirty += 1;
                log::warn!(
                    "L2: dirty line {line:#x} dropped: write-back faulted at {at:#x} (the user \
                     pages of handle {:#x} are gone)",
                    l.owner
                );
                return false;
            }
            stats.written_back += 1;
            if p.caching == Caching::Local {
                l.valid = 0;
            }
            l.valid != 0
        });
    }
}

/// Drops a line whose buffer object is another one now, counting lost dirty bytes.
fn drop_stale(lines: &mut HashMap<u64, Line>, stats: &mut CacheStats, line: u64) {
    if let Some(l) = lines.remove(&line) {
        if l.dirty != 0 {
            stats.discarded_dirty += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::mem::Backing;

    /// A buffer object of `pages` pages at `va` with `handle`, cached as `caching`.
    fn object(
        va: u64,
        pages: u64,
        handle: u64,
        caching: Caching,
    ) -> (std::sync::Arc<Backing>, Placement) {
        let b = std::sync::Arc::new(Backing::new("l2-test", pages * 4096).unwrap());
        let p = Placement {
            whole: b.region(),
            va,
            owner: handle,
            caching,
        };
        (b, p)
    }

    fn host_write(p: &Placement, addr: u64, data: &[u8]) {
        p.whole.write_at(addr - p.va, data);
    }

    fn host_read(p: &Placement, addr: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        p.whole.read_at(addr - p.va, &mut v);
        v
    }

    fn gpu_read(l2: &L2, p: &Placement, addr: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        l2.read(p, addr, &mut v, &|_| None).unwrap();
        v
    }

    #[test]
    fn masks_cover_the_bytes_asked() {
        assert_eq!(mask(0, 0), 0);
        assert_eq!(mask(0, 1), 1);
        assert_eq!(mask(3, 2), 0b11000);
        assert_eq!(mask(0, 128), u128::MAX);
        assert_eq!(mask(127, 1), 1 << 127);
        let p: Vec<_> = pieces(0x1078, 0x90).collect();
        assert_eq!(
            p,
            [
                (0x1000, 0x78, 8, 0),
                (0x1080, 0, 0x80, 8),
                (0x1100, 0, 8, 0x88)
            ]
        );
    }

    /// Non-coherent memory: a load keeps the line, so the host's later store is not seen
    /// until an invalidate; bytes next to it in the same line are filled once.
    #[test]
    fn a_non_coherent_line_stays_stale_until_an_invalidate() {
        let l2 = L2::default();
        let (_b, p) = object(0x10_0000, 1, 7, Caching::NonCoherent);
        host_write(&p, 0x10_0040, &[1, 2, 3, 4]);
        assert_eq!(gpu_read(&l2, &p, 0x10_0040, 4), [1, 2, 3, 4]);
        host_write(&p, 0x10_0040, &[9, 9, 9, 9]);
        host_write(&p, 0x10_0044, &[5]);
        assert_eq!(
            gpu_read(&l2, &p, 0x10_0040, 5),
            [1, 2, 3, 4, 0],
            "stale line"
        );
        assert_eq!(l2.stats().fills, 1);
        l2.invalidate();
        assert_eq!(gpu_read(&l2, &p, 0x10_0040, 5), [9, 9, 9, 9, 5]);
        assert_eq!(l2.stats().fills, 2);
    }

    /// Stores stay in the L2 until a write-back; an invalidate keeps them (dirty bytes are
    /// not dropped), and the write-back writes only the bytes written, not the whole line.
    #[test]
    fn stores_reach_memory_at_the_write_back_and_only_the_dirty_bytes() {
        let l2 = L2::default();
        let (_b, p) = object(0x20_0000, 1, 8, Caching::NonCoherent);
        l2.write(&p, 0x20_0010, &[0xAA; 4], &|_| None);
        assert_eq!(host_read(&p, 0x20_0010, 4), [0; 4], "not yet in memory");
        // The host writes the next bytes of the same line meanwhile.
        host_write(&p, 0x20_0014, &[0x55; 4]);
        l2.invalidate();
        assert_eq!(
            gpu_read(&l2, &p, 0x20_0010, 8),
            [0xAA, 0xAA, 0xAA, 0xAA, 0x55, 0x55, 0x55, 0x55]
        );
        let resolve = |line: u64| (line >= p.va && line < p.va + 4096).then_some(p);
        l2.write_back(&resolve);
        assert_eq!(
            host_read(&p, 0x20_0010, 8),
            [0xAA, 0xAA, 0xAA, 0xAA, 0x55, 0x55, 0x55, 0x55]
        );
        assert_eq!(l2.stats().written_back, 1);
        // Clean now: a host store after the write-back survives a second write-back.
        host_write(&p, 0x20_0010, &[1]);
        l2.write_back(&resolve);
        assert_eq!(host_read(&p, 0x20_0010, 1), [1]);
    }

    /// Local VRAM: loads see the host's stores (probes), with the GPU's dirty bytes over
    /// them; after the write-back the line is gone.
    #[test]
    fn local_vram_reads_memory_under_the_dirty_bytes() {
        let l2 = L2::default();
        let (_b, p) = object(0x30_0000, 1, 9, Caching::Local);
        assert_eq!(gpu_read(&l2, &p, 0x30_0000, 2), [0, 0]);
        host_write(&p, 0x30_0000, &[3, 4]);
        assert_eq!(
            gpu_read(&l2, &p, 0x30_0000, 2),
            [3, 4],
            "no stale local line"
        );
        l2.write(&p, 0x30_0001, &[7], &|_| None);
        host_write(&p, 0x30_0000, &[5, 6]);
        assert_eq!(gpu_read(&l2, &p, 0x30_0000, 2), [5, 7]);
        assert_eq!(host_read(&p, 0x30_0000, 2), [5, 6], "the host sees memory");
        l2.write_back(&|_| Some(p));
        assert_eq!(host_read(&p, 0x30_0000, 2), [5, 7]);
        assert_eq!(l2.lines(), 0);
    }

    /// An atomic writes its line back first and leaves no copy behind.
    #[test]
    fn an_atomic_writes_its_line_back_and_drops_it() {
        let l2 = L2::default();
        let (_b, p) = object(0x40_0000, 1, 10, Caching::NonCoherent);
        l2.write(&p, 0x40_0000, &5u32.to_le_bytes(), &|_| None);
        let old = l2
            .atomic(&p, 0x40_0000, 4, || {
                let v = u32::from_le_bytes(host_read(&p, 0x40_0000, 4).try_into().unwrap());
                host_write(&p, 0x40_0000, &(v + 1).to_le_bytes());
                v
            })
            .unwrap();
        assert_eq!(old, 5);
        assert_eq!(l2.lines(), 0);
        assert_eq!(gpu_read(&l2, &p, 0x40_0000, 4), 6u32.to_le_bytes());
    }

    /// A line of a freed buffer object is not written into the object allocated at its
    /// address later, and a load of the new object does not hit it.
    #[test]
    fn lines_of_a_freed_object_never_reach_the_next_one() {
        let l2 = L2::default();
        let (_b1, old) = object(0x50_0000, 1, 11, Caching::NonCoherent);
        host_write(&old, 0x50_0000, &[1]);
        assert_eq!(gpu_read(&l2, &old, 0x50_0000, 1), [1]);
        l2.write(&old, 0x50_0008, &[2], &|_| None);
        let (_b2, new) = object(0x50_0000, 1, 12, Caching::NonCoherent);
        host_write(&new, 0x50_0000, &[3]);
        assert_eq!(gpu_read(&l2, &new, 0x50_0000, 1), [3]);
        assert_eq!(l2.stats().discarded_dirty, 1);
        l2.write(&old, 0x50_0100, &[4], &|_| None);
        l2.write_back(&|_| Some(new));
        assert_eq!(host_read(&new, 0x50_0100, 1), [0]);
        assert_eq!(l2.stats().discarded_dirty, 2);
    }

    /// Past [`CAPACITY_LINES`] a new line evicts one, and a dirty line evicted reaches
    /// memory: after a store to every line of twice the capacity, every byte is in memory or
    /// in the cache, the cache holds exactly its capacity, and a write-back leaves nothing
    /// unwritten.
    #[test]
    fn a_full_cache_evicts_and_writes_dirty_lines_back() {
        let lines = 2 * CAPACITY_LINES as u64;
        let pages = lines * LINE_BYTES / 4096;
        let (_b, p) = object(0x100_0000, pages, 14, Caching::Local);
        let l2 = L2::default();
        let resolve = |_: u64| Some(p);
        for i in 0..lines {
            l2.write(&p, p.va + i * LINE_BYTES, &[(i % 251) as u8 + 1], &resolve);
        }
        assert_eq!(l2.lines(), CAPACITY_LINES);
        let stats = l2.stats();
        assert_eq!(stats.evicted, lines - CAPACITY_LINES as u64);
        assert_eq!(stats.written_back, stats.evicted);
        l2.write_back(&resolve);
        for i in (0..lines).step_by(997) {
            assert_eq!(
                host_read(&p, p.va + i * LINE_BYTES, 1),
                [(i % 251) as u8 + 1],
                "line {i}"
            );
        }
        // An evicted line whose object is gone is discarded, not written anywhere.
        let l2 = L2::default();
        for i in 0..=CAPACITY_LINES as u64 {
            l2.write(&p, p.va + i * LINE_BYTES, &[0xEE], &|_| None);
        }
        assert_eq!((l2.stats().evicted, l2.stats().discarded_dirty), (1, 1));
    }

    /// A line at an object's end fills only the object's bytes.
    #[test]
    fn a_fill_stays_inside_the_object() {
        let (_b, p) = object(0x60_0000, 1, 13, Caching::NonCoherent);
        let short = Placement {
            whole: p.whole.sub(0, 0x50).unwrap(),
            ..p
        };
        assert_eq!(short.window(0x60_0000), (0, 0x50));
        assert_eq!(short.window(0x60_0080), (0, 0));
        let l2 = L2::default();
        host_write(&p, 0x60_0000, &[8; 0x50]);
        assert_eq!(gpu_read(&l2, &short, 0x60_0040, 0x10), [8; 0x10]);
    }
}
