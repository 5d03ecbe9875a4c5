//! The TLSF sub-allocator without `alloc`: the record table holds `N` block records, the range
//! table [`RANGE_CAPACITY`] ranges, and running out of either is
//! [`SubAllocError::NoRecords`] with the state unchanged (hsa-core's
//! `core/src/memory/suballoc.rs`). Every count here is worked out by hand in the comments.

use hsa_core::memory::{SubAllocError, SubAllocator, RANGE_CAPACITY};
use hsa_noalloc_tests::without_alloc;
use proptest::prelude::*;

type Sa8 = SubAllocator<u32, 8>;

#[test]
fn the_capacity_is_the_record_count_n() {
    if !without_alloc("the_capacity_is_the_record_count_n") {
        return;
    }
    assert_eq!(Sa8::RECORD_CAPACITY, Some(8));
    assert_eq!(SubAllocator::<u32, 1024>::RECORD_CAPACITY, Some(1024));
}

#[test]
fn exhausting_the_record_table_gives_no_records_and_merges_give_records_back() {
    if !without_alloc("exhausting_the_record_table_gives_no_records_and_merges_give_records_back") {
        return;
    }
    let mut sa = Sa8::new(16).unwrap();
    sa.add_range(0, 0x1000).unwrap();
    assert_eq!(sa.stats().records, 1);
    // Each 16-byte allocation from the front of the free tail adds one record (used block +
    // the rest). An allocation needs two records free (front padding and tail), so it is
    // refused once 7 of the 8 are in use: records 1 -> 7 takes six allocations.
    for i in 0..6u64 {
        let g = sa.allocate(16, 16, i as u32).unwrap();
        assert_eq!(g.addr, 16 * i);
        assert_eq!(sa.stats().records, i as usize + 2);
    }
    let full = sa.stats();
    assert_eq!(
        (full.records, full.allocations, full.in_use_bytes),
        (7, 6, 96)
    );
    assert_eq!(sa.allocate(16, 16, 9), Err(SubAllocError::NoRecords));
    assert_eq!(sa.stats(), full, "a refused call changes nothing");
    // A range needs one record: the eighth and last.
    let extra = sa.add_range(0x10_0000, 0x1000).unwrap();
    assert_eq!(sa.stats().records, 8);
    let at_capacity = sa.stats();
    assert_eq!(
        sa.add_range(0x20_0000, 0x1000),
        Err(SubAllocError::NoRecords)
    );
    assert_eq!(sa.allocate(16, 16, 9), Err(SubAllocError::NoRecords));
    assert_eq!(sa.stats(), at_capacity);
    assert_eq!(sa.remove_range(extra), Ok((0x10_0000, 0x1000)));
    assert_eq!(sa.stats(), full);

    // Freeing the block at 0 merges with nothing (its neighbour is used): no record back.
    assert_eq!(sa.free(0).unwrap().size, 16);
    assert_eq!(sa.stats().records, 7);
    assert_eq!(sa.allocate(16, 16, 9), Err(SubAllocError::NoRecords));
    // Freeing 16 merges it into the free block at 0: one record vacant, two available.
    assert_eq!(sa.free(16).unwrap().size, 16);
    assert_eq!(sa.stats().records, 6);
    // The 32-byte block at 0 is the smallest list that fits: the vacant record is reused for
    // its remainder.
    let g = sa.allocate(16, 16, 9).unwrap();
    assert_eq!(g.addr, 0);
    assert_eq!(sa.stats().records, 7);
    assert_eq!(sa.allocate(16, 16, 9), Err(SubAllocError::NoRecords));

    // Everything freed: one block again, and the table holds as much as at the start.
    for a in [0, 32, 48, 64, 80] {
        sa.free(a).unwrap();
    }
    let empty = sa.stats();
    assert_eq!(
        (empty.records, empty.allocations, empty.in_use_bytes),
        (1, 0, 0)
    );
    assert_eq!(empty.largest_free_bytes, 0x1000);
    for i in 0..6u64 {
        assert_eq!(sa.allocate(16, 16, 0).map(|g| g.addr), Ok(16 * i));
    }
    assert_eq!(sa.allocate(16, 16, 0), Err(SubAllocError::NoRecords));
}

#[test]
fn many_alloc_free_cycles_reuse_records() {
    if !without_alloc("many_alloc_free_cycles_reuse_records") {
        return;
    }
    // Without reuse, every cycle would take two records and the ninth would fail.
    let mut sa = Sa8::new(64).unwrap();
    sa.add_range(0x4000, 0x4000).unwrap();
    for i in 0..100u32 {
        let g = sa.allocate(64 * (1 + u64::from(i % 7)), 256, i).unwrap();
        assert_eq!(g.addr % 256, 0);
        assert_eq!(sa.free(g.addr).unwrap().data, i);
        assert_eq!(sa.stats().records, 1, "cycle {i}");
    }
}

#[test]
fn the_range_table_holds_range_capacity_ranges() {
    if !without_alloc("the_range_table_holds_range_capacity_ranges") {
        return;
    }
    let mut sa = SubAllocator::<u32, 128>::new(16).unwrap();
    for i in 0..RANGE_CAPACITY as u64 {
        assert_eq!(sa.add_range(i * 0x100, 0x100).map(|r| r.0 as u64), Ok(i));
    }
    let before = sa.stats();
    assert_eq!(
        (before.ranges, before.records),
        (RANGE_CAPACITY, RANGE_CAPACITY)
    );
    assert_eq!(sa.add_range(1 << 32, 0x100), Err(SubAllocError::NoRecords));
    assert_eq!(sa.stats(), before);
    // A removed range's slot is taken again.
    let r = hsa_core::memory::suballoc::RangeId(5);
    assert_eq!(sa.remove_range(r), Ok((0x500, 0x100)));
    assert_eq!(sa.add_range(1 << 32, 0x100), Ok(r));
    assert_eq!(sa.range_bounds(r), Some((1 << 32, 0x100)));
    assert_eq!(sa.add_range(2 << 32, 0x100), Err(SubAllocError::NoRecords));
}

#[test]
fn find_in_the_fixed_index_answers_interior_bytes_only() {
    if !without_alloc("find_in_the_fixed_index_answers_interior_bytes_only") {
        return;
    }
    // Eight adjacent 0x100-byte allocations, the fourth freed: each byte answers the block
    // it lies in, whatever order the hash index iterates in (a block's end is the next
    // block's base).
    let mut sa = SubAllocator::<u32, 16>::new(16).unwrap();
    sa.add_range(0x1000, 0x1000).unwrap();
    for i in 0..8u32 {
        let g = sa.allocate(0x100, 0x100, i).unwrap();
        assert_eq!(g.addr, 0x1000 + 0x100 * u64::from(i));
    }
    sa.free(0x1300).unwrap();
    let at = |a: u64| sa.find(a).map(|f| (f.addr, f.size, f.data));
    assert_eq!(at(0), None);
    assert_eq!(at(0xfff), None);
    for i in (0..8u32).filter(|&i| i != 3) {
        let base = 0x1000 + 0x100 * u64::from(i);
        assert_eq!(at(base), Some((base, 0x100, i)), "base of {i}");
        assert_eq!(at(base + 0x80), Some((base, 0x100, i)), "middle of {i}");
        assert_eq!(at(base + 0xff), Some((base, 0x100, i)), "last byte of {i}");
    }
    assert_eq!(at(0x1300), None, "freed");
    assert_eq!(at(0x13ff), None, "freed");
    assert_eq!(at(0x1800), None, "one past the last allocation");
    assert_eq!(at(u64::MAX), None);
    // `get` and `set_data` take a base only, through the hash index.
    assert_eq!(sa.get(0x1200).map(|f| (f.addr, f.data)), Some((0x1200, 2)));
    assert_eq!(sa.get(0x1201), None, "interior byte");
    assert_eq!(sa.get(0x1300), None, "freed");
    assert_eq!(sa.set_data(0x1700, 70), Ok(7));
    assert_eq!(sa.get(0x1700).map(|f| f.data), Some(70));
    assert_eq!(sa.set_data(0x1300, 1), Err(SubAllocError::NotAllocated));
    // Every live allocation, from the fixed index.
    let mut listed: std::vec::Vec<(u64, u64, u32)> =
        sa.allocations().map(|(a, s, r)| (a, s, r.0)).collect();
    listed.sort_unstable();
    let want: std::vec::Vec<(u64, u64, u32)> = (0..8u64)
        .filter(|&i| i != 3)
        .map(|i| (0x1000 + 0x100 * i, 0x100, 0))
        .collect();
    assert_eq!(listed, want);
}

#[derive(Clone, Debug)]
enum Op {
    Alloc { size: u64, align_log2: u32 },
    Free { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..4096, 0u32..10).prop_map(|(size, align_log2)| Op::Alloc { size, align_log2 }),
        2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 64 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    /// Random allocations and frees in a 16-record table: NoRecords exactly when fewer than
    /// two records are free, NoRoom otherwise, never anything else; nothing overlaps; and
    /// freeing everything leaves one record per range.
    #[test]
    fn random_ops_respect_the_record_table(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 30 } else { 300 })
    ) {
        if !without_alloc("random_ops_respect_the_record_table") {
            return Ok(());
        }
        let mut sa = SubAllocator::<u64, 16>::new(16).unwrap();
        sa.add_range(0x1_0000, 0x8000).unwrap();
        sa.add_range(0x10_0000, 0x2000).unwrap();
        let mut live: Vec<(u64, u64)> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc { size, align_log2 } => {
                    let before = sa.stats();
                    match sa.allocate(size, 1 << align_log2, size) {
                        Ok(g) => {
                            prop_assert!(before.records + 2 <= 16);
                            prop_assert_eq!(g.addr % (1u64 << align_log2).max(16), 0);
                            for &(a, s) in &live {
                                prop_assert!(g.addr + g.size <= a || a + s <= g.addr);
                            }
                            live.push((g.addr, g.size));
                        }
                        Err(SubAllocError::NoRecords) => {
                            prop_assert!(before.records + 2 > 16);
                            prop_assert_eq!(sa.stats(), before);
                        }
                        Err(e) => {
                            prop_assert_eq!(e, SubAllocError::NoRoom);
                            prop_assert_eq!(sa.stats(), before);
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
            prop_assert!(st.records <= 16);
            prop_assert_eq!(st.allocations, live.len());
            prop_assert_eq!(st.in_use_bytes, live.iter().map(|l| l.1).sum::<u64>());
        }
        for (a, _) in live {
            sa.free(a).unwrap();
        }
        let st = sa.stats();
        prop_assert_eq!((st.records, st.allocations, st.largest_free_bytes), (2, 0, 0x8000));
    }
}
