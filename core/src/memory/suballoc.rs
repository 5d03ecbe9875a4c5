//! A two-level segregated-fit (TLSF) sub-allocator over address ranges, with every block
//! record kept out of band.
//!
//! # Why out of band
//! The memory managed here may be device-local VRAM the CPU cannot map, or a host mapping
//! the GPU writes at any time. So the allocator never reads or writes the memory it manages:
//! it works on `u64` addresses only, and its bookkeeping (block records, free lists, the
//! address index) lives in host memory it owns. A pool over memory mapped `PROT_NONE`, or over
//! addresses with no mapping at all, works the same.
//!
//! # How (TLSF)
//! Each *range* (a chunk the platform handed over) is cut into physically contiguous
//! *blocks*, each free or used, linked to their physical neighbours inside the range. Free
//! blocks sit in segregated free lists indexed by two levels: the first level is
//! `floor(log2(size))`, the second splits each power-of-two interval into
//! [`SECOND_LEVEL_LISTS`] equal sub-intervals. Two bitmaps (one word for the first level, one
//! word per first-level class) say which lists are non-empty, so finding a list that is
//! guaranteed to fit a request is two "find first set" instructions: O(1). Allocation rounds
//! the request up to the next sub-interval boundary ("good fit") so any block of the list
//! found fits; it splits off alignment padding in front and the remainder behind as free
//! blocks. Free finds the block by address (see *Finding a block by address*), merges it with
//! free physical neighbours (O(1) through the neighbour links) and pushes the result on its
//! list. Adjacent free blocks never exist.
//!
//! # Finding a block by address
//! Without `alloc`, a hash map from each allocation's address to its record (O(1)), and a
//! scan of it for an interior address. With `alloc`, each range keeps a *directory*: the range
//! is cut into at most 2^14 equal granules (a power of two of at least 8 units each), and the
//! directory holds, per granule, the lowest block that starts in it (or none), with a bitmap
//! of the granules that have one. A block is found from its granule's entry by following the
//! physical links forward: at most the blocks that start in one granule (8 on a 2 MiB range of
//! 64-byte units). A split or a merge changes at most one entry, in O(1); the range is found
//! in a small B-tree of ranges by base. An interior address whose granule has no block start
//! is covered by the block before the next granule's first block (found in the bitmap), or by
//! the range's last block. (A B-tree over every allocation, which this replaced, cost two
//! tree updates per free + allocate: about half of the pool's time in BENCHMARKS.md's B5.)
//!
//! Only when the good-fit search finds nothing does allocation scan the lists between the
//! request's own class and the good-fit class for a block that happens to be big enough
//! (a slow path bounded by those lists' lengths), so memory is not left unused when the pool
//! cannot grow; the pool then asks the platform for a new chunk.
//!
//! # Storage
//! With the `alloc` feature, records grow in a `Vec` and each range has its directory.
//! Without it, records live in `heapless` storage: at most `N` block records (`N` must be a
//! power of two, at least 2) and [`RANGE_CAPACITY`] ranges; running out of records is
//! reported like running out of memory.
//!
//! Ref: M. Masmano, I. Ripoll, A. Crespo, J. Real, "TLSF: a New Dynamic Memory Allocator for
//! Real-Time Systems", ECRTS 2004. ROCR's `SmallHeap` keeps its metadata out of band for the
//! same reason (no code taken from either).

#[cfg(feature = "alloc")]
use alloc::{collections::BTreeMap, vec::Vec};

/// log2 of [`SECOND_LEVEL_LISTS`].
pub const SECOND_LEVEL_BITS: u32 = 4;
/// Free lists per power-of-two size class.
pub const SECOND_LEVEL_LISTS: usize = 1 << SECOND_LEVEL_BITS;
/// First-level classes (one per bit of a `u64` size).
const FIRST_LEVEL_CLASSES: usize = 64;
/// How many ranges a sub-allocator without `alloc` can hold.
pub const RANGE_CAPACITY: usize = 64;
/// The default record capacity `N` (block records and live allocations without `alloc`; an
/// initial capacity hint with it).
pub const DEFAULT_CAPACITY: usize = 1024;

const NIL: u32 = u32::MAX;

/// The handle of a range added with [`SubAllocator::add_range`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RangeId(pub u32);

/// Why a [`SubAllocator`] call failed. The sub-allocator's state is unchanged after any error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubAllocError {
    /// A size, alignment or address is 0, not a multiple of the unit, not a power of two, or
    /// overflows.
    BadArgument,
    /// No free block is big enough (the owner may add a range and retry).
    NoRoom,
    /// Record storage is full (no `alloc`): more ranges or blocks than the capacity.
    NoRecords,
    /// The address is not the base of a live allocation (never given, or already freed).
    NotAllocated,
    /// The range overlaps a range already added.
    Overlap,
    /// The range id is unknown or the range still holds allocations.
    RangeBusy,
}

impl SubAllocError {
    /// Every error, in declaration order: `ALL[e as usize] == e`.
    pub(crate) const ALL: [SubAllocError; 6] = [
        SubAllocError::BadArgument,
        SubAllocError::NoRoom,
        SubAllocError::NoRecords,
        SubAllocError::NotAllocated,
        SubAllocError::Overlap,
        SubAllocError::RangeBusy,
    ];
}

/// A block handed out by [`SubAllocator::allocate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Address of the first byte.
    pub addr: u64,
    /// Size, bytes: the request rounded up to the unit.
    pub size: u64,
    /// The range it lies in.
    pub range: RangeId,
}

/// What [`SubAllocator::free`] released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Freed<T> {
    /// Size of the freed block, bytes.
    pub size: u64,
    /// The range it lay in.
    pub range: RangeId,
    /// Whether the range holds no allocation any more (it may be removed).
    pub range_empty: bool,
    /// The user data the allocation carried.
    pub data: T,
}

/// A live allocation found by address ([`SubAllocator::find`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found<T> {
    /// Address of the allocation's first byte.
    pub addr: u64,
    /// Size, bytes.
    pub size: u64,
    /// The range it lies in.
    pub range: RangeId,
    /// Its user data.
    pub data: T,
}

/// Byte totals of a sub-allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubAllocStats {
    /// Bytes in used blocks.
    pub in_use_bytes: u64,
    /// Bytes in all ranges (used + free).
    pub total_bytes: u64,
    /// Size of the largest free block, bytes.
    pub largest_free_bytes: u64,
    /// Live allocations.
    pub allocations: usize,
    /// Ranges added and not removed.
    pub ranges: usize,
    /// Block records in use: one per free or used block. Without `alloc` this never exceeds
    /// the record capacity `N` ([`SubAllocator::RECORD_CAPACITY`]), so an embedder sizes `N`
    /// from it.
    pub records: usize,
}

#[derive(Clone, Copy, Debug)]
enum State<T> {
    Free,
    Used(T),
    /// A record slot not in use; holds the next vacant slot.
    Vacant(u32),
}

#[derive(Clone, Copy, Debug)]
struct Block<T> {
    addr: u64,
    size: u64,
    prev_phys: u32,
    next_phys: u32,
    prev_free: u32,
    next_free: u32,
    range: u32,
    state: State<T>,
}

#[derive(Clone, Copy, Debug)]
struct Range {
    base: u64,
    size: u64,
    /// The lowest block of the range: never released while the range lives (merges keep the
    /// lower record).
    first: u32,
    /// The highest block of the range.
    #[cfg(feature = "alloc")]
    last: u32,
}

/// log2 of the most granules a range's directory has.
#[cfg(feature = "alloc")]
const DIRECTORY_BITS: u32 = 14;

/// A range's directory (with `alloc`): per granule of `1 << shift` bytes from the range's
/// base, the lowest block that starts in it (`NIL`: none), and a bitmap of the granules that
/// have one. See the module doc.
#[cfg(feature = "alloc")]
#[derive(Debug, Default)]
struct Directory {
    shift: u32,
    first: Vec<u32>,
    occupied: Vec<u64>,
}

#[cfg(feature = "alloc")]
impl Directory {
    /// The directory of a range of `size` bytes (a multiple of `unit`, a power of two).
    fn new(size: u64, unit: u64) -> Directory {
        let unit_shift = unit.trailing_zeros();
        // ceil(log2(size)), for size >= 1.
        let size_bits = 64 - (size - 1).leading_zeros();
        let shift = (unit_shift + 3)
            .max(size_bits.saturating_sub(DIRECTORY_BITS))
            .min(63);
        let granules = ((size - 1) >> shift) as usize + 1;
        Directory {
            shift,
            first: alloc::vec![NIL; granules],
            occupied: alloc::vec![0; granules.div_ceil(64)],
        }
    }

    fn granule(&self, offset: u64) -> usize {
        (offset >> self.shift) as usize
    }

    fn set(&mut self, g: usize, idx: u32) {
        self.first[g] = idx;
        if idx == NIL {
            self.occupied[g / 64] &= !(1 << (g % 64));
        } else {
            self.occupied[g / 64] |= 1 << (g % 64);
        }
    }

    /// The first granule at or above `start` that has a block start.
    fn occupied_from(&self, start: usize) -> Option<usize> {
        let mut w = start / 64;
        if w >= self.occupied.len() {
            return None;
        }
        let mut bits = self.occupied[w] & (u64::MAX.checked_shl((start % 64) as u32).unwrap_or(0));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.occupied.get(w)?;
        }
    }
}

/// The TLSF sub-allocator (see the module doc). `T` is per-allocation user data returned by
/// [`find`](Self::find) and [`free`](Self::free); `N` is the record capacity without `alloc`.
///
/// Not thread-safe by itself: the pool wraps it in a lock.
#[derive(Debug)]
pub struct SubAllocator<T: Copy, const N: usize = DEFAULT_CAPACITY> {
    unit: u64,
    #[cfg(feature = "alloc")]
    blocks: Vec<Block<T>>,
    #[cfg(not(feature = "alloc"))]
    blocks: heapless::Vec<Block<T>, N>,
    #[cfg(feature = "alloc")]
    ranges: Vec<Option<Range>>,
    #[cfg(not(feature = "alloc"))]
    ranges: heapless::Vec<Option<Range>, RANGE_CAPACITY>,
    /// Each range's directory, at the range's index.
    #[cfg(feature = "alloc")]
    directories: Vec<Directory>,
    /// Live ranges by base address.
    #[cfg(feature = "alloc")]
    by_base: BTreeMap<u64, u32>,
    /// Live allocations.
    #[cfg(feature = "alloc")]
    live: usize,
    #[cfg(not(feature = "alloc"))]
    index: heapless::FnvIndexMap<u64, u32, N>,
    vacant: u32,
    vacant_count: usize,
    fl_bitmap: u64,
    sl_bitmap: [u32; FIRST_LEVEL_CLASSES],
    heads: [[u32; SECOND_LEVEL_LISTS]; FIRST_LEVEL_CLASSES],
    in_use_bytes: u64,
    total_bytes: u64,
}

/// (first level, second level) of a size: the list a block of that size lives in.
fn mapping_insert(size: u64) -> (usize, usize) {
    if size < SECOND_LEVEL_LISTS as u64 {
        (0, size as usize)
    } else {
        let f = 63 - size.leading_zeros();
        let sl = (size >> (f - SECOND_LEVEL_BITS)) as usize - SECOND_LEVEL_LISTS;
        ((f - SECOND_LEVEL_BITS + 1) as usize, sl)
    }
}

/// The first list whose every block is at least `size`; `None` when rounding overflows.
fn mapping_search(size: u64) -> Option<(usize, usize)> {
    if size < SECOND_LEVEL_LISTS as u64 {
        return Some(mapping_insert(size));
    }
    let f = 63 - size.leading_zeros();
    let rounded = size.checked_add((1u64 << (f - SECOND_LEVEL_BITS)) - 1)?;
    Some(mapping_insert(rounded))
}

fn round_up(v: u64, align: u64) -> Option<u64> {
    Some(v.checked_add(align - 1)? & !(align - 1))
}

impl<T: Copy, const N: usize> SubAllocator<T, N> {
    /// How many block records this sub-allocator can hold: `Some(N)` without `alloc` (fixed
    /// storage; when it is full, [`add_range`](Self::add_range) and
    /// [`allocate`](Self::allocate) return [`SubAllocError::NoRecords`]), `None` with `alloc`
    /// (records grow on the heap).
    pub const RECORD_CAPACITY: Option<usize> = if cfg!(feature = "alloc") {
        None
    } else {
        Some(N)
    };

    /// An empty sub-allocator whose sizes and addresses are multiples of `unit_bytes`.
    ///
    /// # Errors
    /// [`SubAllocError::BadArgument`] when `unit_bytes` is not a power of two.
    pub fn new(unit_bytes: u64) -> Result<Self, SubAllocError> {
        if !unit_bytes.is_power_of_two() {
            return Err(SubAllocError::BadArgument);
        }
        Ok(SubAllocator {
            unit: unit_bytes,
            #[cfg(feature = "alloc")]
            blocks: Vec::with_capacity(N.min(1 << 16)),
            #[cfg(not(feature = "alloc"))]
            blocks: heapless::Vec::new(),
            #[cfg(feature = "alloc")]
            ranges: Vec::new(),
            #[cfg(not(feature = "alloc"))]
            ranges: heapless::Vec::new(),
            #[cfg(feature = "alloc")]
            directories: Vec::new(),
            #[cfg(feature = "alloc")]
            by_base: BTreeMap::new(),
            #[cfg(feature = "alloc")]
            live: 0,
            #[cfg(not(feature = "alloc"))]
            index: heapless::FnvIndexMap::new(),
            vacant: NIL,
            vacant_count: 0,
            fl_bitmap: 0,
            sl_bitmap: [0; FIRST_LEVEL_CLASSES],
            heads: [[NIL; SECOND_LEVEL_LISTS]; FIRST_LEVEL_CLASSES],
            in_use_bytes: 0,
            total_bytes: 0,
        })
    }

    /// The unit every size and address is a multiple of, bytes.
    pub fn unit_bytes(&self) -> u64 {
        self.unit
    }

    // ---- record storage ----

    /// Whether `n` more block records can be had.
    fn records_available(&self, n: usize) -> bool {
        #[cfg(feature = "alloc")]
        {
            let _ = n;
            true
        }
        #[cfg(not(feature = "alloc"))]
        {
            self.vacant_count + (N - self.blocks.len()) >= n
        }
    }

    /// A record slot for `block`; callers check `records_available` first.
    fn new_record(&mut self, block: Block<T>) -> Result<u32, SubAllocError> {
        if self.vacant != NIL {
            let idx = self.vacant;
            let State::Vacant(next) = self.blocks[idx as usize].state else {
                return Err(SubAllocError::NoRecords);
            };
            self.vacant = next;
            self.vacant_count -= 1;
            self.blocks[idx as usize] = block;
            return Ok(idx);
        }
        let idx = u32::try_from(self.blocks.len()).map_err(|_| SubAllocError::NoRecords)?;
        if idx == NIL {
            return Err(SubAllocError::NoRecords);
        }
        #[cfg(feature = "alloc")]
        self.blocks.push(block);
        #[cfg(not(feature = "alloc"))]
        self.blocks
            .push(block)
            .map_err(|_| SubAllocError::NoRecords)?;
        Ok(idx)
    }

    fn release_record(&mut self, idx: u32) {
        self.blocks[idx as usize].state = State::Vacant(self.vacant);
        self.vacant = idx;
        self.vacant_count += 1;
    }

    // ---- free lists ----

    fn insert_free(&mut self, idx: u32) {
        let (fl, sl) = mapping_insert(self.blocks[idx as usize].size);
        let head = self.heads[fl][sl];
        {
            let b = &mut self.blocks[idx as usize];
            b.state = State::Free;
            b.prev_free = NIL;
            b.next_free = head;
        }
        if head != NIL {
            self.blocks[head as usize].prev_free = idx;
        }
        self.heads[fl][sl] = idx;
        self.fl_bitmap |= 1 << fl;
        self.sl_bitmap[fl] |= 1 << sl;
    }

    fn remove_free(&mut self, idx: u32) {
        let (prev, next, size) = {
            let b = &self.blocks[idx as usize];
            (b.prev_free, b.next_free, b.size)
        };
        if prev != NIL {
            self.blocks[prev as usize].next_free = next;
        }
        if next != NIL {
            self.blocks[next as usize].prev_free = prev;
        }
        let (fl, sl) = mapping_insert(size);
        if self.heads[fl][sl] == idx {
            self.heads[fl][sl] = next;
            if next == NIL {
                self.sl_bitmap[fl] &= !(1 << sl);
                if self.sl_bitmap[fl] == 0 {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
    }

    /// Head of the first non-empty list at or above (fl, sl).
    fn find_suitable(&self, fl: usize, sl: usize) -> Option<u32> {
        let mut fl = fl;
        let mut sl_map = self.sl_bitmap[fl] & (u32::MAX << sl);
        if sl_map == 0 {
            if fl + 1 >= FIRST_LEVEL_CLASSES {
                return None;
            }
            let fl_map = self.fl_bitmap & (u64::MAX << (fl + 1));
            if fl_map == 0 {
                return None;
            }
            fl = fl_map.trailing_zeros() as usize;
            sl_map = self.sl_bitmap[fl];
        }
        let sl = sl_map.trailing_zeros() as usize;
        let head = self.heads[fl][sl];
        (head != NIL).then_some(head)
    }

    /// Bytes needed in a free block at `addr` for `size` bytes aligned to `align`.
    fn fits(&self, idx: u32, size: u64, align: u64) -> Option<u64> {
        let b = &self.blocks[idx as usize];
        let aligned = round_up(b.addr, align)?;
        let pad = aligned - b.addr;
        (pad.checked_add(size)? <= b.size).then_some(aligned)
    }

    // ---- ranges ----

    /// Adds `[base, base + size)` as one free block. Ranges never merge with each other.
    ///
    /// # Errors
    /// [`SubAllocError::BadArgument`] when `base` or `size` is not a multiple of the unit, `size`
    /// is 0 or the end overflows; [`SubAllocError::Overlap`] when it overlaps a range already
    /// added; [`SubAllocError::NoRecords`] when storage is full.
    pub fn add_range(&mut self, base: u64, size: u64) -> Result<RangeId, SubAllocError> {
        if size == 0 || base % self.unit != 0 || size % self.unit != 0 {
            return Err(SubAllocError::BadArgument);
        }
        let end = base.checked_add(size).ok_or(SubAllocError::BadArgument)?;
        if self
            .ranges
            .iter()
            .flatten()
            .any(|r| base < r.base + r.size && r.base < end)
        {
            return Err(SubAllocError::Overlap);
        }
        let slot = self.ranges.iter().position(Option::is_none);
        if slot.is_none() && self.ranges.len() >= RANGE_CAPACITY && cfg!(not(feature = "alloc")) {
            return Err(SubAllocError::NoRecords);
        }
        if !self.records_available(1) {
            return Err(SubAllocError::NoRecords);
        }
        let range_idx = match slot {
            Some(i) => i,
            None => self.ranges.len(),
        };
        let range_u32 = u32::try_from(range_idx).map_err(|_| SubAllocError::NoRecords)?;
        let idx = self.new_record(Block {
            addr: base,
            size,
            prev_phys: NIL,
            next_phys: NIL,
            prev_free: NIL,
            next_free: NIL,
            range: range_u32,
            state: State::Free,
        })?;
        let rec = Some(Range {
            base,
            size,
            first: idx,
            #[cfg(feature = "alloc")]
            last: idx,
        });
        match slot {
            Some(i) => self.ranges[i] = rec,
            None => {
                #[cfg(feature = "alloc")]
                self.ranges.push(rec);
                #[cfg(not(feature = "alloc"))]
                if self.ranges.push(rec).is_err() {
                    self.release_record(idx);
                    return Err(SubAllocError::NoRecords);
                }
            }
        }
        #[cfg(feature = "alloc")]
        {
            let mut dir = Directory::new(size, self.unit);
            dir.set(0, idx);
            if range_idx < self.directories.len() {
                self.directories[range_idx] = dir;
            } else {
                self.directories.push(dir);
            }
            self.by_base.insert(base, range_u32);
        }
        self.insert_free(idx);
        self.total_bytes += size;
        Ok(RangeId(range_u32))
    }

    /// Removes a range that holds no allocation; returns its base and size.
    ///
    /// # Errors
    /// [`SubAllocError::RangeBusy`] when the id is unknown or the range has a live allocation.
    pub fn remove_range(&mut self, range: RangeId) -> Result<(u64, u64), SubAllocError> {
        let r = self.range(range).ok_or(SubAllocError::RangeBusy)?;
        let first = &self.blocks[r.first as usize];
        if !matches!(first.state, State::Free) || first.size != r.size {
            return Err(SubAllocError::RangeBusy);
        }
        self.remove_free(r.first);
        self.release_record(r.first);
        self.ranges[range.0 as usize] = None;
        #[cfg(feature = "alloc")]
        {
            self.directories[range.0 as usize] = Directory::default();
            self.by_base.remove(&r.base);
        }
        self.total_bytes -= r.size;
        Ok((r.base, r.size))
    }

    fn range(&self, range: RangeId) -> Option<Range> {
        self.ranges.get(range.0 as usize).copied().flatten()
    }

    /// Base and size of a range, bytes.
    pub fn range_bounds(&self, range: RangeId) -> Option<(u64, u64)> {
        self.range(range).map(|r| (r.base, r.size))
    }

    /// Whether the range holds no allocation.
    pub fn range_is_empty(&self, range: RangeId) -> bool {
        match self.range(range) {
            Some(r) => {
                let first = &self.blocks[r.first as usize];
                matches!(first.state, State::Free) && first.size == r.size
            }
            None => false,
        }
    }

    // ---- allocate / free ----

    /// Allocates `size` bytes (rounded up to the unit) at an address that is a multiple of
    /// `align` (raised to the unit), tagged with `data`.
    ///
    /// # Errors
    /// [`SubAllocError::BadArgument`] for size 0, an alignment that is not a power of two, or
    /// sizes that overflow; [`SubAllocError::NoRoom`] when no free block fits;
    /// [`SubAllocError::NoRecords`] when record storage is full.
    pub fn allocate(&mut self, size: u64, align: u64, data: T) -> Result<Grant, SubAllocError> {
        if size == 0 || !align.is_power_of_two() {
            return Err(SubAllocError::BadArgument);
        }
        let size = round_up(size, self.unit).ok_or(SubAllocError::BadArgument)?;
        let align = align.max(self.unit);
        let needed = size
            .checked_add(align - self.unit)
            .ok_or(SubAllocError::BadArgument)?;
        // Two records at most (front padding, remainder behind). Live allocations never
        // outnumber records, so the address index (capacity N) cannot be full here.
        if !self.records_available(2) {
            return Err(SubAllocError::NoRecords);
        }
        let found = mapping_search(needed)
            .and_then(|(fl, sl)| self.find_suitable(fl, sl))
            .or_else(|| self.scan_exact_class(size, needed, align));
        let Some(idx) = found else {
            return Err(SubAllocError::NoRoom);
        };
        let aligned = self.fits(idx, size, align).ok_or(SubAllocError::NoRoom)?;
        self.remove_free(idx);

        let b = self.blocks[idx as usize];
        // Front padding stays in `idx` (the lower record) as a free block.
        let mut used = idx;
        if aligned > b.addr {
            let pad = aligned - b.addr;
            let new = self.new_record(Block {
                addr: aligned,
                size: b.size - pad,
                prev_phys: idx,
                next_phys: b.next_phys,
                prev_free: NIL,
                next_free: NIL,
                range: b.range,
                state: State::Free,
            })?;
            if b.next_phys != NIL {
                self.blocks[b.next_phys as usize].prev_phys = new;
            }
            self.blocks[idx as usize].size = pad;
            self.blocks[idx as usize].next_phys = new;
            self.insert_free(idx);
            self.note_new_block(new);
            used = new;
        }
        // Remainder behind becomes a free block.
        let ub = self.blocks[used as usize];
        if ub.size > size {
            let tail = self.new_record(Block {
                addr: ub.addr + size,
                size: ub.size - size,
                prev_phys: used,
                next_phys: ub.next_phys,
                prev_free: NIL,
                next_free: NIL,
                range: ub.range,
                state: State::Free,
            })?;
            if ub.next_phys != NIL {
                self.blocks[ub.next_phys as usize].prev_phys = tail;
            }
            self.blocks[used as usize].size = size;
            self.blocks[used as usize].next_phys = tail;
            self.insert_free(tail);
            self.note_new_block(tail);
        }
        self.blocks[used as usize].state = State::Used(data);
        self.index_insert(aligned, used)?;
        self.in_use_bytes += size;
        Ok(Grant {
            addr: aligned,
            size,
            range: RangeId(ub.range),
        })
    }

    /// The fallback search: a block in the classes between the request's own class and the
    /// good-fit class (whose blocks may or may not fit) that happens to fit.
    fn scan_exact_class(&self, size: u64, needed: u64, align: u64) -> Option<u32> {
        let (fl0, sl0) = mapping_insert(size);
        let (fl1, sl1) =
            mapping_search(needed).unwrap_or((FIRST_LEVEL_CLASSES - 1, SECOND_LEVEL_LISTS - 1));
        let (start, end) = (
            fl0 * SECOND_LEVEL_LISTS + sl0,
            fl1 * SECOND_LEVEL_LISTS + sl1,
        );
        // `end` needs no clamp: `mapping_search` gives first levels up to 60 (64-bit sizes),
        // and the overflow default above is the last list.
        for k in start..=end {
            let (fl, sl) = (k / SECOND_LEVEL_LISTS, k % SECOND_LEVEL_LISTS);
            if self.sl_bitmap[fl] & (1 << sl) == 0 {
                continue;
            }
            let mut cur = self.heads[fl][sl];
            while cur != NIL {
                if self.fits(cur, size, align).is_some() {
                    return Some(cur);
                }
                cur = self.blocks[cur as usize].next_free;
            }
        }
        None
    }

    /// Frees the allocation whose first byte is `addr`, merging it with free neighbours.
    ///
    /// # Errors
    /// [`SubAllocError::NotAllocated`] when `addr` is not the base of a live allocation (never
    /// given, an interior address, or already freed); nothing changes then.
    pub fn free(&mut self, addr: u64) -> Result<Freed<T>, SubAllocError> {
        let idx = self.index_remove(addr).ok_or(SubAllocError::NotAllocated)?;
        let b = self.blocks[idx as usize];
        let State::Used(data) = b.state else {
            return Err(SubAllocError::NotAllocated);
        };
        self.in_use_bytes -= b.size;
        let mut cur = idx;
        // Merge with the next block: `cur` absorbs it.
        if b.next_phys != NIL && matches!(self.blocks[b.next_phys as usize].state, State::Free) {
            let next = b.next_phys;
            self.remove_free(next);
            let nb = self.blocks[next as usize];
            self.blocks[cur as usize].size += nb.size;
            self.blocks[cur as usize].next_phys = nb.next_phys;
            if nb.next_phys != NIL {
                self.blocks[nb.next_phys as usize].prev_phys = cur;
            }
            self.note_merged_block(next, nb, cur);
            self.release_record(next);
        }
        // Merge with the previous block: it absorbs `cur` (the lower record survives).
        if b.prev_phys != NIL && matches!(self.blocks[b.prev_phys as usize].state, State::Free) {
            let prev = b.prev_phys;
            self.remove_free(prev);
            let cb = self.blocks[cur as usize];
            self.blocks[prev as usize].size += cb.size;
            self.blocks[prev as usize].next_phys = cb.next_phys;
            if cb.next_phys != NIL {
                self.blocks[cb.next_phys as usize].prev_phys = prev;
            }
            self.note_merged_block(cur, cb, prev);
            self.release_record(cur);
            cur = prev;
        }
        self.insert_free(cur);
        let range = RangeId(b.range);
        Ok(Freed {
            size: b.size,
            range,
            range_empty: self.range_is_empty(range),
            data,
        })
    }

    /// The live allocation whose first byte is `addr`: O(1) without `alloc`; with it
    /// O(log ranges) plus at most the blocks that start in one granule.
    pub fn get(&self, addr: u64) -> Option<Found<T>> {
        let idx = self.index_get(addr)?;
        self.found(idx)
    }

    /// The live allocation containing `addr` (any byte of it). With `alloc`: O(log ranges)
    /// plus the blocks that start in one granule, plus, for an interior address of a block
    /// spanning granules, a scan of the directory's bitmap (a word per 64 granules); O(n)
    /// without.
    pub fn find(&self, addr: u64) -> Option<Found<T>> {
        #[cfg(feature = "alloc")]
        let idx = self.covering_block(addr)?;
        #[cfg(not(feature = "alloc"))]
        let idx = self
            .index
            .iter()
            .find(|(&base, &i)| base <= addr && addr - base < self.blocks[i as usize].size)
            .map(|(_, &i)| i)?;
        let f = self.found(idx)?;
        (addr - f.addr < f.size).then_some(f)
    }

    /// Replaces the user data of the live allocation at `addr`; returns the old data.
    ///
    /// # Errors
    /// [`SubAllocError::NotAllocated`] when `addr` is not the base of a live allocation.
    pub fn set_data(&mut self, addr: u64, data: T) -> Result<T, SubAllocError> {
        let idx = self.index_get(addr).ok_or(SubAllocError::NotAllocated)?;
        match &mut self.blocks[idx as usize].state {
            State::Used(d) => Ok(core::mem::replace(d, data)),
            _ => Err(SubAllocError::NotAllocated),
        }
    }

    fn found(&self, idx: u32) -> Option<Found<T>> {
        let b = &self.blocks[idx as usize];
        match b.state {
            State::Used(data) => Some(Found {
                addr: b.addr,
                size: b.size,
                range: RangeId(b.range),
                data,
            }),
            _ => None,
        }
    }

    /// Totals and the largest free block.
    pub fn stats(&self) -> SubAllocStats {
        let mut largest = 0;
        if self.fl_bitmap != 0 {
            let fl = 63 - self.fl_bitmap.leading_zeros() as usize;
            let sl = 31 - self.sl_bitmap[fl].leading_zeros() as usize;
            let mut cur = self.heads[fl][sl];
            while cur != NIL {
                largest = largest.max(self.blocks[cur as usize].size);
                cur = self.blocks[cur as usize].next_free;
            }
        }
        SubAllocStats {
            in_use_bytes: self.in_use_bytes,
            total_bytes: self.total_bytes,
            largest_free_bytes: largest,
            #[cfg(feature = "alloc")]
            allocations: self.live,
            #[cfg(not(feature = "alloc"))]
            allocations: self.index.len(),
            ranges: self.ranges.iter().flatten().count(),
            records: self.blocks.len() - self.vacant_count,
        }
    }

    /// Every live allocation as (address, size, range), in no particular order.
    #[cfg(not(feature = "alloc"))]
    pub fn allocations(&self) -> impl Iterator<Item = (u64, u64, RangeId)> + '_ {
        self.index.iter().map(|(&a, &i)| {
            (
                a,
                self.blocks[i as usize].size,
                RangeId(self.blocks[i as usize].range),
            )
        })
    }

    /// Every live allocation as (address, size, range), in no particular order.
    #[cfg(feature = "alloc")]
    pub fn allocations(&self) -> impl Iterator<Item = (u64, u64, RangeId)> + '_ {
        self.blocks.iter().filter_map(|b| match b.state {
            State::Used(_) => Some((b.addr, b.size, RangeId(b.range))),
            _ => None,
        })
    }

    // ---- address index ----

    #[cfg(not(feature = "alloc"))]
    fn index_insert(&mut self, addr: u64, idx: u32) -> Result<(), SubAllocError> {
        self.index
            .insert(addr, idx)
            .map_err(|_| SubAllocError::NoRecords)?;
        Ok(())
    }

    #[cfg(not(feature = "alloc"))]
    fn index_remove(&mut self, addr: u64) -> Option<u32> {
        self.index.remove(&addr)
    }

    #[cfg(not(feature = "alloc"))]
    fn index_get(&self, addr: u64) -> Option<u32> {
        self.index.get(&addr).copied()
    }

    /// Counts the allocation (its block is in the directory since it was made).
    #[cfg(feature = "alloc")]
    fn index_insert(&mut self, _addr: u64, _idx: u32) -> Result<(), SubAllocError> {
        self.live += 1;
        Ok(())
    }

    /// The used block at `addr`, uncounted (the caller frees it).
    #[cfg(feature = "alloc")]
    fn index_remove(&mut self, addr: u64) -> Option<u32> {
        let idx = self.index_get(addr)?;
        self.live -= 1;
        Some(idx)
    }

    /// The used block that starts at `addr`.
    #[cfg(feature = "alloc")]
    fn index_get(&self, addr: u64) -> Option<u32> {
        let idx = self.block_at(addr)?;
        matches!(self.blocks[idx as usize].state, State::Used(_)).then_some(idx)
    }

    /// The range containing `addr`, with its index.
    #[cfg(feature = "alloc")]
    fn range_of(&self, addr: u64) -> Option<(usize, Range)> {
        let (_, &ri) = self.by_base.range(..=addr).next_back()?;
        let r = self.ranges.get(ri as usize).copied().flatten()?;
        (addr - r.base < r.size).then_some((ri as usize, r))
    }

    /// The block (free or used) that starts at `addr`.
    #[cfg(feature = "alloc")]
    fn block_at(&self, addr: u64) -> Option<u32> {
        let (ri, r) = self.range_of(addr)?;
        let dir = &self.directories[ri];
        let mut cur = dir.first[dir.granule(addr - r.base)];
        while cur != NIL {
            let b = &self.blocks[cur as usize];
            if b.addr >= addr {
                return (b.addr == addr).then_some(cur);
            }
            cur = b.next_phys;
        }
        None
    }

    /// The block (free or used) that contains `addr`.
    #[cfg(feature = "alloc")]
    fn covering_block(&self, addr: u64) -> Option<u32> {
        let (ri, r) = self.range_of(addr)?;
        let dir = &self.directories[ri];
        let g = dir.granule(addr - r.base);
        let first = dir.first[g];
        // The lowest block starting after `addr`'s granule's start, or in a later granule;
        // the block before it covers `addr` when it starts above `addr`.
        let mut cur = if first != NIL && self.blocks[first as usize].addr <= addr {
            first
        } else {
            let above = if first != NIL {
                first
            } else {
                // `g` itself has none.
                match dir.occupied_from(g) {
                    Some(next) => dir.first[next],
                    None => return Some(r.last),
                }
            };
            return Some(self.blocks[above as usize].prev_phys).filter(|&p| p != NIL);
        };
        loop {
            let next = self.blocks[cur as usize].next_phys;
            if next == NIL || self.blocks[next as usize].addr > addr {
                return Some(cur);
            }
            cur = next;
        }
    }

    /// Records a block just made by a split (its record, address and links are set).
    #[cfg(feature = "alloc")]
    fn note_new_block(&mut self, idx: u32) {
        let b = self.blocks[idx as usize];
        let ri = b.range as usize;
        let Some(r) = self.ranges.get_mut(ri).and_then(Option::as_mut) else {
            return;
        };
        if b.next_phys == NIL {
            r.last = idx;
        }
        let base = r.base;
        let dir = &mut self.directories[ri];
        let g = dir.granule(b.addr - base);
        let first = dir.first[g];
        if first == NIL || self.blocks[first as usize].addr > b.addr {
            dir.set(g, idx);
        }
    }

    #[cfg(not(feature = "alloc"))]
    fn note_new_block(&mut self, _idx: u32) {}

    /// Forgets `gone` (block `b`, merged into `survivor`, the block below it, whose links are
    /// already updated) before its record is released.
    #[cfg(feature = "alloc")]
    fn note_merged_block(&mut self, gone: u32, b: Block<T>, survivor: u32) {
        let ri = b.range as usize;
        let Some(r) = self.ranges.get_mut(ri).and_then(Option::as_mut) else {
            return;
        };
        if r.last == gone {
            r.last = survivor;
        }
        let base = r.base;
        let dir = &mut self.directories[ri];
        let g = dir.granule(b.addr - base);
        if dir.first[g] == gone {
            // The next block up, if it starts in the same granule, is now its lowest.
            let next = b.next_phys;
            let same = next != NIL && dir.granule(self.blocks[next as usize].addr - base) == g;
            dir.set(g, if same { next } else { NIL });
        }
    }

    #[cfg(not(feature = "alloc"))]
    fn note_merged_block(&mut self, _gone: u32, _b: Block<T>, _survivor: u32) {}

    /// Checks every structural invariant; panics with a description on a violation. Test aid.
    /// The directory of range `ri` names, per granule, the lowest block starting in it, its
    /// bitmap agrees, and `last` is the range's last block. Test aid.
    #[cfg(all(test, feature = "alloc"))]
    fn check_directory(&self, ri: usize, r: &Range, last: u32) {
        assert_eq!(r.last, last, "range {ri}: last block");
        assert_eq!(
            self.by_base.get(&r.base),
            Some(&(ri as u32)),
            "range {ri} by base"
        );
        let dir = &self.directories[ri];
        // The shape the module doc gives: granules of at least 8 units, at most 2^14 of them.
        let granule_bytes = 1u64 << dir.shift;
        assert!(
            granule_bytes >= 8 * self.unit,
            "range {ri}: granule {granule_bytes}"
        );
        assert!(
            r.size.div_ceil(granule_bytes) <= 1 << 14,
            "range {ri}: granules"
        );
        assert!(
            granule_bytes == 8 * self.unit || r.size.div_ceil(granule_bytes / 2) > 1 << 14,
            "range {ri}: granule {granule_bytes} larger than needed"
        );
        let mut want = alloc::vec![NIL; r.size.div_ceil(granule_bytes) as usize];
        let mut cur = r.first;
        while cur != NIL {
            let b = &self.blocks[cur as usize];
            let g = ((b.addr - r.base) / granule_bytes) as usize;
            if want[g] == NIL {
                want[g] = cur;
            }
            cur = b.next_phys;
        }
        assert_eq!(dir.first, want, "range {ri}: directory entries");
        for (g, &f) in dir.first.iter().enumerate() {
            let bit = dir.occupied[g / 64] & (1 << (g % 64)) != 0;
            assert_eq!(bit, f != NIL, "range {ri}: bitmap of granule {g}");
        }
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut used = 0u64;
        let mut total = 0u64;
        let mut free_count = 0usize;
        for (ri, r) in self.ranges.iter().enumerate() {
            let Some(r) = r else { continue };
            total += r.size;
            let mut cur = r.first;
            let mut expect = r.base;
            let mut prev = NIL;
            let mut prev_free = false;
            while cur != NIL {
                let b = &self.blocks[cur as usize];
                assert_eq!(b.addr, expect, "blocks of range {ri} are not contiguous");
                assert_eq!(b.prev_phys, prev, "prev_phys link broken");
                assert_eq!(b.range as usize, ri);
                assert!(b.size > 0 && b.size % self.unit == 0 && b.addr % self.unit == 0);
                match b.state {
                    State::Free => {
                        assert!(!prev_free, "two adjacent free blocks at {:#x}", b.addr);
                        prev_free = true;
                        free_count += 1;
                        let (fl, sl) = mapping_insert(b.size);
                        assert!(self.sl_bitmap[fl] & (1 << sl) != 0);
                    }
                    State::Used(_) => {
                        prev_free = false;
                        used += b.size;
                        assert_eq!(
                            self.index_get(b.addr),
                            Some(cur),
                            "used block missing from index"
                        );
                    }
                    State::Vacant(_) => panic!("vacant record linked into range {ri}"),
                }
                expect = b.addr + b.size;
                prev = cur;
                cur = b.next_phys;
            }
            assert_eq!(expect, r.base + r.size, "range {ri} not fully covered");
            #[cfg(feature = "alloc")]
            self.check_directory(ri, r, prev);
        }
        let mut listed = 0usize;
        for fl in 0..FIRST_LEVEL_CLASSES {
            assert_eq!(self.fl_bitmap & (1 << fl) != 0, self.sl_bitmap[fl] != 0);
            for sl in 0..SECOND_LEVEL_LISTS {
                let mut cur = self.heads[fl][sl];
                assert_eq!(
                    cur != NIL,
                    self.sl_bitmap[fl] & (1 << sl) != 0,
                    "bitmap disagrees with list"
                );
                let mut prev = NIL;
                while cur != NIL {
                    let b = &self.blocks[cur as usize];
                    assert!(matches!(b.state, State::Free));
                    assert_eq!(mapping_insert(b.size), (fl, sl), "block in the wrong list");
                    assert_eq!(b.prev_free, prev);
                    listed += 1;
                    prev = cur;
                    cur = b.next_free;
                }
            }
        }
        assert_eq!(listed, free_count, "free lists and ranges disagree");
        assert_eq!(used, self.in_use_bytes);
        assert_eq!(total, self.total_bytes);
        // Every record is linked into a range or on the vacant chain, and the chain is as long
        // as its count says.
        let mut vacant = 0usize;
        let mut cur = self.vacant;
        while cur != NIL {
            let State::Vacant(next) = self.blocks[cur as usize].state else {
                panic!("record {cur} on the vacant chain is not vacant");
            };
            vacant += 1;
            cur = next;
        }
        assert_eq!(vacant, self.vacant_count, "vacant chain length");
        let linked = free_count + self.stats().allocations;
        #[cfg(feature = "alloc")]
        assert_eq!(
            self.by_base.len(),
            self.ranges.iter().flatten().count(),
            "range index"
        );
        assert_eq!(linked + vacant, self.blocks.len(), "records leaked");
        assert_eq!(self.stats().records, linked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec as StdVec;

    /// Errors shown from their discriminant (`Error::lazy` messages) name the right one.
    #[test]
    fn all_lists_every_error_at_its_discriminant() {
        for (i, e) in SubAllocError::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i, "{e:?}");
        }
        assert_eq!(
            SubAllocError::ALL[SubAllocError::RangeBusy as usize],
            SubAllocError::RangeBusy
        );
    }

    type Sa = SubAllocator<u32, 1024>;

    #[test]
    fn mapping_matches_the_tlsf_classes() {
        assert_eq!(mapping_insert(0), (0, 0));
        assert_eq!(mapping_insert(15), (0, 15));
        assert_eq!(mapping_insert(16), (1, 0));
        assert_eq!(mapping_insert(31), (1, 15));
        assert_eq!(mapping_insert(32), (2, 0));
        assert_eq!(mapping_insert(4096), (9, 0));
        assert_eq!(mapping_insert(4096 + 256), (9, 1));
        assert_eq!(mapping_insert(u64::MAX), (60, 15));
        // good fit rounds up to the next list boundary
        assert_eq!(mapping_search(4097), Some((9, 1)));
        assert_eq!(mapping_search(4096), Some((9, 0)));
        assert_eq!(mapping_search(u64::MAX), None);
    }

    #[test]
    fn allocate_split_free_merge() {
        let mut sa = Sa::new(16).unwrap();
        let r = sa.add_range(0x1000, 0x1000).unwrap();
        let a = sa.allocate(100, 16, 1).unwrap();
        assert_eq!(
            a,
            Grant {
                addr: 0x1000,
                size: 112,
                range: r
            }
        );
        let b = sa.allocate(16, 256, 2).unwrap();
        assert_eq!(b.addr, 0x1100);
        sa.check_invariants();
        let s = sa.stats();
        assert_eq!(s.in_use_bytes, 128);
        assert_eq!(s.total_bytes, 0x1000);
        assert_eq!(s.allocations, 2);
        assert_eq!(s.largest_free_bytes, 0x1000 - 0x110);
        assert_eq!(sa.find(0x1100 + 15).map(|f| f.data), Some(2));
        assert_eq!(sa.find(0x1100 + 16), None);
        assert_eq!(sa.get(0x1001), None);
        assert_eq!(sa.free(0x1000).unwrap().data, 1);
        assert!(!sa.range_is_empty(r));
        let f = sa.free(0x1100).unwrap();
        assert_eq!((f.size, f.range_empty, f.data), (16, true, 2));
        sa.check_invariants();
        assert_eq!(sa.stats().largest_free_bytes, 0x1000);
        assert_eq!(sa.remove_range(r), Ok((0x1000, 0x1000)));
        assert_eq!(sa.stats(), SubAllocStats::default());
    }

    #[test]
    fn bad_input_leaves_state_unchanged() {
        let mut sa = Sa::new(16).unwrap();
        assert_eq!(Sa::new(24).unwrap_err(), SubAllocError::BadArgument);
        assert_eq!(sa.add_range(8, 16), Err(SubAllocError::BadArgument));
        assert_eq!(sa.add_range(0, 0), Err(SubAllocError::BadArgument));
        assert_eq!(
            sa.add_range(u64::MAX - 15, 32),
            Err(SubAllocError::BadArgument)
        );
        let r = sa.add_range(0, 256).unwrap();
        assert_eq!(sa.add_range(128, 256), Err(SubAllocError::Overlap));
        assert_eq!(sa.allocate(0, 16, 0), Err(SubAllocError::BadArgument));
        assert_eq!(sa.allocate(16, 3, 0), Err(SubAllocError::BadArgument));
        assert_eq!(
            sa.allocate(u64::MAX, 16, 0),
            Err(SubAllocError::BadArgument)
        );
        assert_eq!(sa.allocate(512, 16, 0), Err(SubAllocError::NoRoom));
        let a = sa.allocate(32, 16, 7).unwrap();
        assert_eq!(sa.remove_range(r), Err(SubAllocError::RangeBusy));
        assert_eq!(sa.remove_range(RangeId(9)), Err(SubAllocError::RangeBusy));
        assert_eq!(sa.free(a.addr + 16), Err(SubAllocError::NotAllocated));
        assert_eq!(
            sa.set_data(a.addr + 16, 1),
            Err(SubAllocError::NotAllocated)
        );
        let before = sa.stats();
        sa.free(a.addr).unwrap();
        assert_eq!(sa.free(a.addr), Err(SubAllocError::NotAllocated));
        assert_eq!(sa.stats().in_use_bytes, before.in_use_bytes - 32);
        sa.check_invariants();
    }

    #[test]
    fn exact_class_fallback_uses_a_block_good_fit_skips() {
        // A 0x1080-byte free block sits in class (9, 0) with 0x1000; good fit for 0x1080
        // looks in (9, 1) and above and finds nothing; the fallback scan must find it.
        assert_eq!(mapping_insert(0x1080), (9, 0));
        assert_eq!(mapping_search(0x1080), Some((9, 1)));
        let mut sa = Sa::new(16).unwrap();
        sa.add_range(0, 0x1080).unwrap();
        let g = sa.allocate(0x1080, 16, 0).unwrap();
        assert_eq!(g.addr, 0);
        sa.check_invariants();
    }

    #[test]
    fn fallback_finds_an_aligned_fit_below_the_good_fit_class() {
        // One free block of 0x1800 at 0x1000 (class (9, 8)). A 0x1000 request aligned to
        // 0x1000 searches good fit for 0x1ff0 (class (10, 0)) and finds nothing; the request's
        // own class is (9, 0). Only the scan of the classes in between finds the block, which
        // is aligned already.
        assert_eq!(mapping_insert(0x1800), (9, 8));
        assert_eq!(mapping_search(0x1ff0), Some((10, 0)));
        let mut sa = Sa::new(16).unwrap();
        sa.add_range(0x1000, 0x1800).unwrap();
        let g = sa.allocate(0x1000, 0x1000, 0).unwrap();
        assert_eq!(g.addr, 0x1000);
        assert_eq!(sa.stats().largest_free_bytes, 0x800);
        sa.check_invariants();
    }

    #[test]
    fn the_exact_class_scan_starts_at_the_requests_own_list() {
        // Unit 1, so the smallest classes hold blocks. A 3-byte request aligned to 8 needs
        // 3 + 7 = 10 bytes for good fit (list (0, 10)); the only free block is 5 bytes at 8,
        // in list (0, 5), between the request's own list (0, 3) and good fit's: only the
        // scan from (0, 3) finds it.
        let mut sa = Sa::new(1).unwrap();
        sa.add_range(8, 5).unwrap();
        assert_eq!(sa.allocate(3, 8, 0).map(|g| g.addr), Ok(8));
        // The same on the first level 1: a 20-byte request aligned to 8 (good fit 27, list
        // (1, 11)); the block is 20 bytes, alone in the request's own list (1, 4).
        assert_eq!(mapping_insert(20), (1, 4));
        let mut sa = Sa::new(1).unwrap();
        sa.add_range(0x40, 20).unwrap();
        assert_eq!(sa.allocate(20, 8, 0).map(|g| g.addr), Ok(0x40));
        sa.check_invariants();
    }

    #[test]
    fn good_fit_asks_for_the_size_plus_the_alignment_slack() {
        // Unit 64: a 64-byte request aligned to 64 needs 64 + 64 - 64 = 64 bytes, so good fit
        // looks in the 64-byte block's own list (3, 0) and takes it, not the larger block
        // elsewhere that a larger (or smaller) slack would send it to.
        let mut sa = Sa::new(64).unwrap();
        sa.add_range(0x8000, 0x400).unwrap();
        sa.add_range(0x1000, 64).unwrap();
        assert_eq!(mapping_search(64), Some((3, 0)));
        assert_eq!(sa.allocate(64, 64, 0).map(|g| g.addr), Ok(0x1000));
        assert_eq!(sa.allocate(64, 64, 0).map(|g| g.addr), Ok(0x8000));
        sa.check_invariants();
    }

    #[test]
    fn a_request_too_large_for_any_list_is_no_room_not_a_panic() {
        // Good fit's rounding overflows (`mapping_search` -> None); the scan then runs from
        // the request's class to the last list.
        let mut sa = Sa::new(16).unwrap();
        sa.add_range(0, 0x1000).unwrap();
        for size in [u64::MAX - 0xfff, 1 << 63, (1 << 63) + (1 << 59)] {
            assert_eq!(
                sa.allocate(size, 16, 0),
                Err(SubAllocError::NoRoom),
                "{size:#x}"
            );
        }
        assert_eq!(mapping_search(u64::MAX - 0xfff), None);
        assert_eq!(sa.stats().in_use_bytes, 0);
        sa.check_invariants();
    }

    #[test]
    fn ranges_may_touch_but_not_overlap() {
        let mut sa = Sa::new(16).unwrap();
        sa.add_range(0x1000, 0x1000).unwrap();
        // Adjacent on either side: fine, and they stay separate ranges.
        let above = sa.add_range(0x2000, 0x1000).unwrap();
        let below = sa.add_range(0x800, 0x800).unwrap();
        assert_eq!(sa.range_bounds(above), Some((0x2000, 0x1000)));
        assert_eq!(sa.range_bounds(below), Some((0x800, 0x800)));
        assert_eq!(sa.stats().largest_free_bytes, 0x1000);
        // One unit into a neighbour: refused.
        assert_eq!(sa.add_range(0x2ff0, 0x20), Err(SubAllocError::Overlap));
        assert_eq!(sa.add_range(0x7f0, 0x20), Err(SubAllocError::Overlap));
        assert_eq!(sa.stats().ranges, 3);
    }

    #[test]
    fn a_range_whose_first_block_is_free_but_short_is_busy() {
        // [a free][b live][tail free]: the first block is free but is not the whole range.
        let mut sa = Sa::new(16).unwrap();
        let r = sa.add_range(0x1000, 0x1000).unwrap();
        let a = sa.allocate(0x100, 16, 1).unwrap();
        let b = sa.allocate(0x100, 16, 2).unwrap();
        assert_eq!((a.addr, b.addr), (0x1000, 0x1100));
        sa.free(a.addr).unwrap();
        assert_eq!(sa.remove_range(r), Err(SubAllocError::RangeBusy));
        assert_eq!(sa.get(b.addr).map(|f| f.data), Some(2));
        let live: StdVec<_> = sa.allocations().collect();
        assert_eq!(live, [(0x1100, 0x100, r)]);
        sa.free(b.addr).unwrap();
        assert_eq!(sa.allocations().count(), 0);
        assert_eq!(sa.remove_range(r), Ok((0x1000, 0x1000)));
        sa.check_invariants();
    }

    #[test]
    fn addresses_far_from_any_mapping_are_never_touched() {
        // The sub-allocator only does arithmetic: an unmapped range works.
        let mut sa = Sa::new(4096).unwrap();
        let base = 0xdead_0000_0000;
        sa.add_range(base, 64 << 20).unwrap();
        let mut live = StdVec::new();
        for i in 0..if cfg!(miri) { 50 } else { 2000 } {
            if i % 3 == 2 {
                let a: u64 = live.swap_remove(i % live.len());
                sa.free(a).unwrap();
            } else {
                live.push(
                    sa.allocate(4096 * (1 + i as u64 % 5), 4096, 0)
                        .unwrap()
                        .addr,
                );
            }
        }
        sa.check_invariants();
    }

    /// Lookups whose answer comes from the directory's other paths: an interior address of a
    /// block that spans granules with no block start (the next occupied granule's first
    /// block, or the range's last block), a merge that leaves the next block the lowest of its
    /// granule, and a range as large as a 47-bit address space (the directory stays at 2^14
    /// granules).
    #[cfg(feature = "alloc")]
    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code (this module has no unsafe), covered by the native run; minutes under miri"
    )]
    fn directory_answers_interior_addresses_and_follows_merges() {
        let mut sa = Sa::new(64).unwrap();
        let base = 0x10_0000u64;
        sa.add_range(base, 0x10_0000).unwrap();
        let a = sa.allocate(300 << 10, 64, 1).unwrap();
        let b = sa.allocate(64, 64, 2).unwrap();
        assert_eq!((a.addr, b.addr), (base, base + (300 << 10)));
        assert_eq!(sa.find(a.addr + (150 << 10)).map(|f| f.addr), Some(a.addr));
        assert_eq!(sa.find(b.addr).map(|f| f.data), Some(2));
        // Inside the free tail, past every block start: the range's last block, free.
        assert_eq!(sa.find(base + (900 << 10)), None);
        let rest = 0x10_0000 - (300 << 10) - 64;
        let c = sa.allocate(rest, 64, 3).unwrap();
        assert_eq!(c.addr, b.addr + 64);
        assert_eq!(sa.find(base + 0x10_0000 - 1).map(|f| f.data), Some(3));
        assert_eq!(sa.find(base + 0x10_0000), None);
        assert_eq!(sa.find(base - 1), None);
        sa.check_invariants();
        sa.free(b.addr).unwrap();
        assert_eq!(sa.find(b.addr), None);
        assert_eq!(sa.free(b.addr).unwrap_err(), SubAllocError::NotAllocated);
        // `a` absorbs the free block after it; `c` is now the lowest block of that granule.
        sa.free(a.addr).unwrap();
        sa.check_invariants();
        assert_eq!(sa.find(c.addr + 64).map(|f| f.data), Some(3));
        assert_eq!(sa.find(base), None);
        sa.free(c.addr).unwrap();
        sa.check_invariants();
        assert!(sa.range_is_empty(RangeId(0)));

        let mut big = SubAllocator::<u32, 16>::new(4096).unwrap();
        let r = big.add_range(0, 1 << 47).unwrap();
        let x = big.allocate(1 << 40, 4096, 7).unwrap();
        let y = big.allocate(4096, 4096, 8).unwrap();
        assert_eq!(big.find((1 << 40) - 1).map(|f| f.data), Some(7));
        assert_eq!(big.find(y.addr).map(|f| f.data), Some(8));
        assert_eq!(big.find((1 << 46) + 5), None);
        big.check_invariants();
        big.free(x.addr).unwrap();
        big.free(y.addr).unwrap();
        big.remove_range(r).unwrap();
        assert_eq!(big.find(0), None);
    }

    #[test]
    fn unit_bytes_is_the_unit_given() {
        assert_eq!(Sa::new(64).unwrap().unit_bytes(), 64);
        assert_eq!(Sa::new(4096).unwrap().unit_bytes(), 4096);
    }

    /// The TLSF list of a size computed the long way: log2 by shifting, then the list whose
    /// interval holds the size.
    fn class_of(size: u64) -> (usize, usize) {
        if size < 16 {
            return (0, size as usize);
        }
        let mut log2 = 0;
        while log2 < 63 && size >> (log2 + 1) != 0 {
            log2 += 1;
        }
        ((log2 - 3) as usize, ((size >> (log2 - 4)) - 16) as usize)
    }

    /// The smallest size list (fl, sl) holds.
    fn list_min(fl: usize, sl: usize) -> u64 {
        if fl == 0 {
            sl as u64
        } else {
            (16 + sl as u64) << (fl - 1)
        }
    }

    /// Good fit the long way: the first list whose every block is at least `size`.
    fn good_fit_of(size: u64) -> Option<(usize, usize)> {
        (0..=60)
            .flat_map(|fl| (0..16).map(move |sl| (fl, sl)))
            .find(|&(fl, sl)| list_min(fl, sl) >= size)
    }

    /// Every size below 64 and each list's lower bound, one below and one above it (under
    /// miri, a few of each kind: the first-level classes 1, 2, 9, 31 and 60, second-level 0,
    /// 1 and 15).
    fn boundary_sizes() -> StdVec<u64> {
        let miri = cfg!(miri);
        let mut sizes: StdVec<u64> = (1..64).step_by(if miri { 7 } else { 1 }).collect();
        for fl in (1..=60).filter(|fl| !miri || [1, 2, 9, 31, 60].contains(fl)) {
            for sl in (0..16).filter(|sl| !miri || [0, 1, 15].contains(sl)) {
                let m = list_min(fl, sl);
                sizes.extend([m - 1, m, m.saturating_add(1)]);
            }
        }
        sizes
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code (this module has no unsafe), covered by the native run; minutes under miri"
    )]
    fn every_class_boundary_maps_to_its_list_and_searches_to_the_next_fitting_one() {
        for size in boundary_sizes() {
            assert_eq!(mapping_insert(size), class_of(size), "insert {size:#x}");
            let (fl, sl) = mapping_insert(size);
            assert!(list_min(fl, sl) <= size, "{size:#x} below its list");
            assert_eq!(mapping_search(size), good_fit_of(size), "search {size:#x}");
        }
        // The largest sizes have no list whose every block fits them.
        assert_eq!(mapping_search(31 << 59), Some((60, 15)));
        assert_eq!(mapping_search((31 << 59) + 1), None);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code (this module has no unsafe), covered by the native run; minutes under miri"
    )]
    fn allocation_at_every_class_boundary_takes_an_exact_fit_and_skips_a_smaller_block() {
        // Unit 1, so sizes below 16 (first-level class 0) are reachable too.
        let sizes = boundary_sizes();
        for &size in sizes.iter().filter(|&&s| s <= 1 << 40) {
            // One block of exactly `size`: good fit or the fallback scan must take it whole.
            let mut sa = SubAllocator::<u32, 16>::new(1).unwrap();
            let r = sa.add_range(1 << 44, size).unwrap();
            let g = sa.allocate(size, 1, 7).unwrap();
            assert_eq!(
                g,
                Grant {
                    addr: 1 << 44,
                    size,
                    range: r
                },
                "exact {size:#x}"
            );
            assert_eq!(sa.stats().largest_free_bytes, 0);
            sa.free(g.addr).unwrap();
            assert_eq!(sa.allocate(size + 1, 1, 0), Err(SubAllocError::NoRoom));
            // A block one byte short sits in the same or the list below; a block 3x the size
            // lies above. The search must not stop at the short one.
            let mut sa = SubAllocator::<u32, 16>::new(1).unwrap();
            if size > 1 {
                sa.add_range(0, size - 1).unwrap();
            }
            let big = sa.add_range(1 << 44, 3 * size).unwrap();
            let g = sa.allocate(size, 1, 0).unwrap();
            assert_eq!((g.addr, g.size, g.range), (1 << 44, size, big), "{size:#x}");
            sa.check_invariants();
        }
    }

    #[test]
    fn records_are_counted_reused_and_given_back() {
        let mut sa = SubAllocator::<u32, 8>::new(16).unwrap();
        assert_eq!(sa.stats().records, 0);
        let r = sa.add_range(0x1000, 0x1000).unwrap();
        assert_eq!(sa.stats().records, 1);
        // Front padding, the allocation and the remainder behind: three records.
        let a = sa.allocate(0x100, 0x100, 1).unwrap();
        assert_eq!(a.addr, 0x1000);
        let b = sa.allocate(0x10, 0x800, 2).unwrap();
        assert_eq!(b.addr, 0x1800);
        // [a][pad 0x1100..0x1800][b][tail]: four blocks.
        assert_eq!(sa.stats().records, 4);
        sa.check_invariants();
        // Freeing b merges it with the padding and the tail: one free block after a.
        sa.free(b.addr).unwrap();
        assert_eq!(sa.stats().records, 2);
        sa.check_invariants();
        // The released records are reused, not new ones taken.
        let c = sa.allocate(0x10, 0x800, 3).unwrap();
        assert_eq!(c.addr, 0x1800);
        assert_eq!(sa.stats().records, 4);
        sa.check_invariants();
        sa.free(a.addr).unwrap();
        sa.free(c.addr).unwrap();
        assert_eq!(sa.stats().records, 1);
        assert_eq!(sa.remove_range(r), Ok((0x1000, 0x1000)));
        assert_eq!(sa.stats().records, 0);
        sa.check_invariants();
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe code (this module has no unsafe), covered by the native run; minutes under miri"
    )]
    fn with_alloc_ranges_are_not_limited_to_the_fixed_capacity() {
        assert_eq!(Sa::RECORD_CAPACITY, None);
        let mut sa = SubAllocator::<u32, 2>::new(16).unwrap();
        for i in 0..RANGE_CAPACITY as u64 + 36 {
            sa.add_range(i * 0x100, 0x100).unwrap();
        }
        for i in 0..RANGE_CAPACITY as u64 + 36 {
            assert_eq!(
                sa.allocate(0x100, 16, 0).map(|g| g.addr & 0xff),
                Ok(0),
                "{i}"
            );
        }
        assert_eq!(sa.stats().ranges, RANGE_CAPACITY + 36);
        sa.check_invariants();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc { size: u64, align_log2: u32 },
        Free { pick: usize },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (1u64..20_000, 0u32..13).prop_map(|(size, align_log2)| Op::Alloc { size, align_log2 }),
            2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 32 }, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        #[cfg_attr(miri, ignore = "safe code (this module has no unsafe), covered by the native run; minutes under miri")]
        fn random_ops_keep_blocks_disjoint_aligned_and_accounted(
            ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 40 } else { 600 })
        ) {
            let mut sa = SubAllocator::<u64, 4096>::new(64).unwrap();
            let ranges = [(0x10_0000u64, 0x4_0000u64), (0x80_0000, 0x10_0000)];
            for (b, s) in ranges { sa.add_range(b, s).unwrap(); }
            let mut live: StdVec<(u64, u64)> = StdVec::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Alloc { size, align_log2 } => {
                        let align = 1u64 << align_log2;
                        match sa.allocate(size, align, n as u64) {
                            Ok(g) => {
                                prop_assert_eq!(g.addr % align.max(64), 0);
                                prop_assert!(g.size >= size && g.size % 64 == 0);
                                let (rb, rs) = sa.range_bounds(g.range).unwrap();
                                prop_assert!(g.addr >= rb && g.addr + g.size <= rb + rs);
                                for &(a, s) in &live {
                                    prop_assert!(g.addr + g.size <= a || a + s <= g.addr, "overlap");
                                }
                                live.push((g.addr, g.size));
                            }
                            Err(e) => {
                                prop_assert_eq!(e, SubAllocError::NoRoom);
                                // Computed here from the ranges and the live set: no free
                                // gap holds the aligned request.
                                let (unit, align) = (64, align.max(64));
                                let need = size.div_ceil(unit) * unit;
                                let mut taken = live.clone();
                                taken.sort_unstable();
                                for (rb, rs) in ranges {
                                    let mut at = rb;
                                    let ends = taken.iter().filter(|l| l.0 >= rb && l.0 < rb + rs);
                                    for gap_end in ends.map(|l| l.0).chain([rb + rs]) {
                                        let start = at.div_ceil(align) * align;
                                        prop_assert!(start + need > gap_end, "NoRoom with room at {start:#x}");
                                        at = taken.iter().find(|l| l.0 == gap_end).map_or(gap_end, |l| l.0 + l.1);
                                    }
                                }
                            }
                        }
                    }
                    Op::Free { pick } => {
                        if !live.is_empty() {
                            let (a, s) = live.swap_remove(pick % live.len());
                            prop_assert_eq!(sa.free(a).unwrap().size, s);
                        }
                    }
                }
                let st = sa.stats();
                let mut listed: StdVec<(u64, u64)> = sa.allocations().map(|(a, s, _)| (a, s)).collect();
                listed.sort_unstable();
                let mut want = live.clone();
                want.sort_unstable();
                prop_assert_eq!(listed, want);
                prop_assert_eq!(st.in_use_bytes, live.iter().map(|l| l.1).sum::<u64>());
                prop_assert_eq!(st.allocations, live.len());
                // Lookups by address against the live set: each allocation's first, middle and
                // last byte, and the bytes just outside it (free, another allocation, or past
                // a range); an interior address is no allocation's base.
                let model = |x: u64| live.iter().find(|l| x >= l.0 && x - l.0 < l.1).copied();
                for &(a, s) in live.iter().take(24) {
                    for x in [a, a + s / 2, a + s - 1, a.wrapping_sub(1), a + s] {
                        let found = sa.find(x).map(|f| (f.addr, f.size));
                        prop_assert_eq!(found, model(x), "find({:#x})", x);
                    }
                    prop_assert_eq!(sa.get(a).map(|f| f.size), Some(s));
                    if s > 64 {
                        prop_assert!(sa.get(a + 64).is_none());
                        prop_assert_eq!(sa.free(a + 64).unwrap_err(), SubAllocError::NotAllocated);
                    }
                }
                sa.check_invariants();
            }
            sa.check_invariants();
            for (a, _) in live { sa.free(a).unwrap(); }
            prop_assert_eq!(sa.stats().largest_free_bytes, 0x10_0000);
            sa.check_invariants();
        }
    }
}
