#![no_main]
//! Fuzz target `image_descriptor`: see `hsa_tests::fuzz_targets::image_descriptor`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::image_descriptor(data));
