#![no_main]
//! Fuzz target `ih_entry`: see `hsa_tests::fuzz_targets::ih_entry`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::ih_entry(data));
