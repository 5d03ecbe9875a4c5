#![no_main]
//! Fuzz target `pm4`: see `hsa_tests::fuzz_targets::pm4`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::pm4(data));
