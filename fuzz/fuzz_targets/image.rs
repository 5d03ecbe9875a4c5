#![no_main]
//! Fuzz target `image`: see `hsa_tests::fuzz_targets::image`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::image(data));
