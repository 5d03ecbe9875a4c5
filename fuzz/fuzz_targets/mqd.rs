#![no_main]
//! Fuzz target `mqd`: see `hsa_tests::fuzz_targets::mqd`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::mqd(data));
