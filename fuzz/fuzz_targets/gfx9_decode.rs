#![no_main]
//! Fuzz target `gfx9_decode`: see `hsa_tests::fuzz_targets::gfx9_decode`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::gfx9_decode(data));
