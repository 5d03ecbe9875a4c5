//! Every C type of the library's ABI, once: the structs, callback types, handle types and
//! enumerator values of `hsa.h`, `hsa_ext_amd.h`, `hsa_ext_image.h`, `hsa_ven_amd_loader.h`
//! (ROCR 5.2, Debian's `libhsa-runtime-dev`) and `include/hsa_rt_ext.h`, each with its layout
//! asserted where the header fixes it. `capi/src/ffi` converts between these and the Rust
//! APIs; nothing here has behaviour. `tests/c_abi.rs` compiles C against the headers that
//! checks the enumerators of [`ALL`] and the sizes and offsets; `tests/structure.rs` checks
//! that no C type is defined twice or outside this module.
#![allow(unsafe_code)] // `unsafe extern "C" fn` types; no unsafe blocks

mod baremetal;
mod callbacks;
mod enums;
mod image;
mod loader;
mod memory;
mod queue;
mod rt_ext;
mod signal;

pub use baremetal::*;
pub use callbacks::*;
pub use enums::*;
pub use image::*;
pub use loader::*;
pub use memory::*;
pub use queue::*;
pub use rt_ext::*;
pub use signal::*;

/// `hsa_status_t`.
pub type HsaStatus = u32;
