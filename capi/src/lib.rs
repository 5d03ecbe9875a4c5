//! `libhsa-runtime64`: the HSA runtime C API over hsa-rt.
//!
//! Built as a cdylib (`libhsa_runtime64.so`, soname `libhsa-runtime64.so.1`, every symbol under
//! the `ROCR_1` version node, as ROCR exports them: see `build.rs` and `hsa_runtime64.map`), a
//! staticlib (firmware builds) and an rlib (tests). The types and enumerator values are those
//! of ROCR 5.2's `hsa.h` / `hsa_ext_amd.h` (Debian's `libhsa-runtime-dev`); `tests/c_abi.rs`
//! checks them by compiling C against those headers.
//!
//! Every function ROCR 5.2 exports is exported: implemented over the Rust API, or, for a
//! feature this runtime does not provide (the finalizer, interop, SVM, ...), with
//! ROCR's checks and the status ROCR returns when that feature is absent (`ffi::unsupported`;
//! the table in `README.md` lists each function). The image extension (`hsa_ext_image.h`) is
//! provided on gfx9 agents other than gfx94x, over linear images (`ffi::image`). hsa-rt's own
//! extension is declared in
//! `include/hsa_rt_ext.h`.
//!
//! Installed with `cargo cinstall -p hsa-capi` (cargo-c: `libhsa-runtime64.so.1` and its
//! links, `hsa-runtime64.pc`, `hsa_rt_ext.h`; `README.md`), C and HIP programs link with
//! `pkg-config --libs hsa-runtime64`. The device is the default platform's (`/dev/kfd`, else
//! the emulated device with the default feature `emulated`; `HSA_RT_DEVICE=kfd|emulated`,
//! `HSA_RT_SYSFS=DIR` for a captured topology).
//!
//! Layers: [`ffi`] holds the exported functions, which check and convert their arguments and
//! call the Rust APIs (the core runtime, the runtime services of `hsa-runtime`, the registries
//! of the state); [`abi`] every C type, once; nothing outside `ffi` imports from it.
//!
//! The platform is the [`backend`]'s, chosen by feature: `linux` (the default) or
//! `baremetal` (firmware written in C registers its machine with
//! `hsa_rt_baremetal_init`). The crate is `no_std` + `alloc`; it links std only for a target
//! with an OS (`target_os` other than `none`), so the bare-metal build also builds for
//! `x86_64-unknown-none`.
#![no_std]
#![deny(unsafe_code)]

extern crate alloc;
#[cfg(not(target_os = "none"))]
extern crate std;

pub mod abi;
#[macro_use]
pub mod ffi;
pub mod backend;
mod handle_map;
mod locks;
mod rcu;
mod state;
