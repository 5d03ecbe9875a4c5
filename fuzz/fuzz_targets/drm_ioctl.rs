#![no_main]
//! Fuzz target `drm_ioctl`: see `hsa_tests::fuzz_targets::drm_ioctl`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::drm_ioctl(data));
