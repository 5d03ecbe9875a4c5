#![no_main]
//! Fuzz target `packet`: see `hsa_tests::fuzz_targets::packet`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::packet(data));
