//! hsa-tests: end-to-end tests of hsa-rt; the tests themselves are in `tests/tests/`.
//!
//! [`fuzz_targets`] holds the bodies of the `cargo fuzz` targets in `fuzz/`, so that the fuzz
//! crate and `cargo test` (which replays the checked-in corpus and every crash input) call the
//! same code.

pub mod census;
pub mod fuzz_targets;
pub mod llvm_diff;
