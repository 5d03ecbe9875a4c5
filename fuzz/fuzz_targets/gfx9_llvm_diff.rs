#![no_main]
//! Fuzz target `gfx9_llvm_diff`: see `hsa_tests::fuzz_targets::gfx9_llvm_diff`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::gfx9_llvm_diff(data));
