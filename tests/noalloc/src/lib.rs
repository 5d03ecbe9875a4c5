//! Tests of hsa-core built without `alloc`, the configuration firmware and unikernels run: the
//! sub-allocator's fixed record table (`N` records) and range table
//! ([`RANGE_CAPACITY`](hsa_core::memory::RANGE_CAPACITY) ranges). hsa-core's own tests always
//! build it with `alloc` (its dev-dependency on itself enables the fake platform), so the
//! fixed storage is tested here, in a package whose only dependency is hsa-core without
//! features. The tests are in `tests/`; this library only tells them whether the build they
//! run in really is without `alloc`.
#![no_std]

extern crate std;

use hsa_core::memory::SubAllocator;

/// Whether hsa-core is built without `alloc` here. When it is not (cargo unified the
/// features with a package that enables `alloc`, as `cargo test --workspace` does), prints a
/// `skipped: ...` line naming the test and the command that runs it, and returns `false`.
pub fn without_alloc(test: &str) -> bool {
    if SubAllocator::<u8, 2>::RECORD_CAPACITY.is_some() {
        return true;
    }
    std::println!(
        "skipped: {test}: hsa-core is built with `alloc` in this build (features unified \
         across the workspace); run `cargo test -p hsa-noalloc-tests`"
    );
    false
}
