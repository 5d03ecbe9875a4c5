//! AMDGPU code objects (ELF + MessagePack metadata note) and executables.
//!
//! - Target ids (`gfx90a:sramecc+:xnack-`) from `e_flags` and the code-object-to-agent
//!   compatibility rule are the crate's one ISA model, [`crate::isa::TargetId`].
//! - [`code_object`]: the checked, borrowed reader ([`CodeObject`]); no allocation, no panics.
//! - [`metadata`]: `amdhsa.*` metadata, read lazily; [`msgpack`]: the MessagePack walker.
//! - [`reloc`]: `R_AMDGPU_*` dynamic relocations.
//! - `executable` (feature `alloc`): loading into platform memory, symbols, freeze, destroy.
//!
//! Ref: LLVM AMDGPUUsage ("ELF Code Object", "Code Object Metadata", "Kernel Descriptor",
//! "Relocation Records"); HSA Runtime 1.2 §2.9.

// `Error` keeps its message inline (no allocator, by design of `status`), so every
// `Result<_, Error>` is large; that is the crate's chosen trade-off, not a loader accident.
#![allow(clippy::result_large_err)]

pub mod code_object;
#[cfg(feature = "alloc")]
pub mod executable;
#[cfg(feature = "alloc")]
mod image;
pub mod metadata;
pub mod msgpack;
pub mod reloc;

#[cfg(feature = "alloc")]
pub use code_object::AlignedBytes;
pub use code_object::{
    CodeObject, DynRelocation, Kernel, KernelCode, LoadSegment, TextSection, Variable,
};
#[cfg(feature = "alloc")]
pub use executable::{
    Executable, ExternalVariable, KernelInfo, LoadedCodeObject, Symbol, SymbolKind,
};
pub use metadata::{KernelArg, KernelMetadata, Metadata};
