//! The one ISA model: which processors exist and what each one is ([`Processor`], a row of
//! the processor table), and which variant of one an agent runs or a code object needs
//! ([`TargetId`]: processor plus SRAMECC and XNACK settings, `gfx90a:sramecc+:xnack-`).
//!
//! Everything that names an ISA uses these two types: agents ([`Agent::isa`], from amdkfd's
//! `gfx_target_version` through [`TargetId::of_node`]), the loader (a code object's
//! `e_flags` through [`TargetId::from_e_flags`], checked against the agent with
//! [`TargetId::check_runs_on`]), the C ABI's ISA names ([`TargetId::isa_name`]) and the
//! emulated device (its interpreter model comes from a [`Processor`]). Strings are only
//! produced for people and parsed only from outside ([`TargetId::parse`]).
//!
//! The table (module `processor`) holds per processor: its name, `EF_AMDGPU_MACH` value,
//! amdkfd `gfx_target_version`, wavefront sizes, XNACK and SRAMECC support and generic
//! family. Its sources are in [`Processor`]'s documentation; `core/tests/isa_table.rs`
//! checks it against `llvm-mc-19`, the code objects of `testdata/codeobjects` and the captured
//! topologies.
//!
//! Ref: LLVM AMDGPUUsage "Processors", "Generic Processors", "Target Features", "Target ID",
//! "`EF_AMDGPU_MACH` Values"; `llvm/BinaryFormat/ELF.h`; amdkfd `kfd_topology.c`,
//! `kfd_sysfs.h`.
//!
//! [`Agent::isa`]: crate::runtime::Agent::isa

mod processor;
mod target_id;

pub use processor::Processor;
pub use target_id::{
    FeatureSetting, IsaName, TargetId, EF_AMDGPU_FEATURE_SRAMECC_V4, EF_AMDGPU_FEATURE_XNACK_V4,
    EF_AMDGPU_GENERIC_VERSION, EF_AMDGPU_GENERIC_VERSION_OFFSET, EF_AMDGPU_MACH,
    HSA_CAP_OLD_SRAM_EDCSUPPORTED, HSA_CAP_SRAM_EDCSUPPORTED, ISA_NAME_CAPACITY, ISA_NAME_PREFIX,
};
