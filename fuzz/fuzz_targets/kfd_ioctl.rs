#![no_main]
//! Fuzz target `kfd_ioctl`: see `hsa_tests::fuzz_targets::kfd_ioctl`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsa_tests::fuzz_targets::kfd_ioctl(data));
