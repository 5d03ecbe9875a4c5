//! A first-fit free list over one virtual address range: the bookkeeping behind the backend's
//! VA reservation ([`crate::kfd::ioctl::VaSpace`]). Pure arithmetic, no system calls.
//!
//! Ranges are `(start, len)` in bytes. The list keeps free ranges sorted by start and merges
//! neighbours on free, so a freed range is whole again for the next large request.

/// Free ranges of an address span, sorted, never adjacent or overlapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeList {
    ranges: Vec<(u64, u64)>,
}

impl FreeList {
    /// A list whose whole span `[base, base + len)` is free.
    pub fn new(base: u64, len: u64) -> FreeList {
        let ranges = if len == 0 {
            Vec::new()
        } else {
            vec![(base, len)]
        };
        FreeList { ranges }
    }

    /// Takes `size` bytes starting at a multiple of `align` (a power of two) from the first
    /// free range that fits; `None` when none does (or for `size` 0 or an `align` that is not
    /// a power of two).
    pub fn allocate(&mut self, size: u64, align: u64) -> Option<u64> {
        if size == 0 || !align.is_power_of_two() {
            return None;
        }
        for i in 0..self.ranges.len() {
            let (start, len) = self.ranges[i];
            let end = start + len;
            let Some(aligned) = start.checked_add(align - 1).map(|v| v & !(align - 1)) else {
                continue;
            };
            let Some(alloc_end) = aligned.checked_add(size) else {
                continue;
            };
            if alloc_end > end {
                continue;
            }
            // Split into what stays free before and after the allocation.
            let before = (start, aligned - start);
            let after = (alloc_end, end - alloc_end);
            self.ranges.remove(i);
            let mut at = i;
            for r in [before, after] {
                if r.1 > 0 {
                    self.ranges.insert(at, r);
                    at += 1;
                }
            }
            return Some(aligned);
        }
        None
    }

    /// Takes exactly `[start, start + size)` when all of it is free; `false` (nothing taken)
    /// otherwise, or for `size` 0.
    pub fn take(&mut self, start: u64, size: u64) -> bool {
        let Some(end) = start.checked_add(size).filter(|_| size > 0) else {
            return false;
        };
        let i = self.ranges.partition_point(|&(s, _)| s <= start);
        if i == 0 {
            return false;
        }
        let (fs, fl) = self.ranges[i - 1];
        let fe = fs + fl;
        if end > fe {
            return false;
        }
        self.ranges.remove(i - 1);
        let mut at = i - 1;
        for r in [(fs, start - fs), (end, fe - end)] {
            if r.1 > 0 {
                self.ranges.insert(at, r);
                at += 1;
            }
        }
        true
    }

    /// Returns `[start, start + size)` to the list, merging it with free neighbours. The range
    /// must have come from [`FreeList::allocate`] and not have been freed since; a range that
    /// overlaps a free one is ignored and `false` returned.
    pub fn free(&mut self, start: u64, size: u64) -> bool {
        if size == 0 {
            return false;
        }
        let Some(end) = start.checked_add(size) else {
            return false;
        };
        let i = self.ranges.partition_point(|&(s, _)| s < start);
        if i > 0 {
            let (ps, pl) = self.ranges[i - 1];
            if ps + pl > start {
                return false;
            }
        }
        if let Some(&(ns, _)) = self.ranges.get(i) {
            if ns < end {
                return false;
            }
        }
        self.ranges.insert(i, (start, size));
        // Merge with the next, then with the previous.
        if i + 1 < self.ranges.len() && self.ranges[i].0 + self.ranges[i].1 == self.ranges[i + 1].0
        {
            self.ranges[i].1 += self.ranges[i + 1].1;
            self.ranges.remove(i + 1);
        }
        if i > 0 && self.ranges[i - 1].0 + self.ranges[i - 1].1 == self.ranges[i].0 {
            self.ranges[i - 1].1 += self.ranges[i].1;
            self.ranges.remove(i);
        }
        true
    }

    /// Free bytes in total.
    pub fn free_bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.1).sum()
    }

    /// The free ranges, sorted by start.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB2: u64 = 2 << 20;

    #[test]
    fn aligned_first_fit_and_merge() {
        let base = 0x7f00_0000_1000; // deliberately not 2 MiB aligned
        let mut fl = FreeList::new(base, 64 * MIB2);
        let a = fl.allocate(4096, MIB2).unwrap();
        assert_eq!(a % MIB2, 0);
        assert_eq!(a, 0x7f00_0020_0000);
        let b = fl.allocate(3 * MIB2, MIB2).unwrap();
        assert_eq!(b, a + MIB2);
        let c = fl.allocate(8192, 4096).unwrap();
        assert_eq!(c, base); // the gap before the first aligned block
        assert!(fl.free(a, 4096));
        assert!(!fl.free(a, 4096), "double free is refused");
        assert!(fl.free(b, 3 * MIB2));
        assert!(fl.free(c, 8192));
        assert_eq!(fl.ranges(), &[(base, 64 * MIB2)]);
    }

    #[test]
    fn take_claims_exactly_a_free_range() {
        let mut f = FreeList::new(0x10000, 0x10000);
        assert!(f.take(0x14000, 0x2000));
        assert_eq!(f.ranges(), &[(0x10000, 0x4000), (0x16000, 0xa000)]);
        // Taken already, partly free, past the end, empty.
        assert!(!f.take(0x14000, 0x1000));
        assert!(!f.take(0x13000, 0x2000));
        assert!(!f.take(0x1f000, 0x2000));
        assert!(!f.take(0x10000, 0));
        assert!(!f.take(0x8000, 0x1000));
        // A whole free range, and its start.
        assert!(f.take(0x10000, 0x4000));
        assert_eq!(f.ranges(), &[(0x16000, 0xa000)]);
        assert!(f.free(0x14000, 0x2000));
        assert_eq!(f.ranges(), &[(0x14000, 0xc000)]);
    }

    #[test]
    fn exhaustion_and_bad_arguments() {
        let mut fl = FreeList::new(0x10000, 0x4000);
        assert_eq!(fl.allocate(0x5000, 0x1000), None);
        assert_eq!(fl.allocate(0, 0x1000), None);
        assert_eq!(fl.allocate(0x1000, 3), None);
        assert_eq!(fl.allocate(0x4000, 0x1000), Some(0x10000));
        assert_eq!(fl.allocate(0x1000, 0x1000), None);
        assert_eq!(fl.free_bytes(), 0);
    }

    proptest! {
        #[test]
        fn allocations_never_overlap_and_free_restores(sizes in proptest::collection::vec((1u64..64, 0u32..6), 1..40)) {
            let base = 0x1000_0000;
            let span = 1u64 << 24;
            let mut fl = FreeList::new(base, span);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (pages, align_log) in sizes {
                let size = pages * 4096;
                let align = 4096u64 << align_log;
                if let Some(a) = fl.allocate(size, align) {
                    prop_assert_eq!(a % align, 0);
                    prop_assert!(a >= base && a + size <= base + span);
                    for &(s, l) in &live {
                        prop_assert!(a + size <= s || s + l <= a);
                    }
                    live.push((a, size));
                }
            }
            let used: u64 = live.iter().map(|r| r.1).sum();
            prop_assert_eq!(fl.free_bytes() + used, span);
            for (s, l) in live {
                prop_assert!(fl.free(s, l));
            }
            prop_assert_eq!(fl.ranges(), &[(base, span)][..]);
        }
    }
}
