#![no_main]
//! Fuzz target `sdma`: see `hsa_tests::fuzz_targets::sdma`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::sdma(data));
