//! `libhsa-runtime64`: the HSA runtime C API over hsa-rt.
//!
//! Built as a cdylib (`libhsa_runtime64.so`, soname `libhsa-runtime64.so.1`, every symbol under
//! the `ROCR_1` version node, as ROCR exports them: see `build.rs` and `hsa_runtime64.map`), a
//! staticlib (firmware builds) and an rlib (tests). The types and enumerator values are those
//! of ROCR 5.2's `hsa.h` / `hsa_ext_amd.h` (Debian's `libhsa-runtime-dev`); `tests/c_abi.rs`
//! checks them by compiling C against those headers.
//!
//! Only what is implemented over the Rust API is exported (no stubs): see the `ffi` modules
//! for the list. hsa-rt's own extension is declared in `include/hsa_rt_ext.h`.
//!
//! To run a ROCm application on it: `ln -s libhsa_runtime64.so DIR/libhsa-runtime64.so.1` and
//! `LD_LIBRARY_PATH=DIR`. The device is the default platform's (`/dev/kfd`, else the emulated
//! device; `HSA_RT_DEVICE=kfd|emulated`, `HSA_RT_SYSFS=DIR` for a captured topology).
#![deny(unsafe_code)]

pub mod abi;
mod extras;
pub mod ffi;
mod state;
