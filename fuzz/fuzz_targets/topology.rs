#![no_main]
//! Fuzz target `topology`: see `hsa_tests::fuzz_targets::topology`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::topology(data));
