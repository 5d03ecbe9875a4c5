#![no_main]
//! Fuzz target `code_object`: see `hsa_tests::fuzz_targets::code_object`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::code_object(data));
