#![no_main]
//! Fuzz target `ih_ring`: see `hsa_tests::fuzz_targets::ih_ring`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::ih_ring(data));
