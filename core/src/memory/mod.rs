//! Memory regions and memory pools: what they are ([`region`]), how their memory is
//! sub-allocated ([`suballoc`]), and the pool that ties backing chunks from the platform to the
//! sub-allocator ([`pool`]).
//!
//! - [`PoolInfo`] answers `hsa_region_get_info` / `hsa_amd_memory_pool_get_info` and
//!   `hsa_amd_agent_memory_pool_get_info`.
//! - [`MemoryPool`] allocates, frees, answers pointer info, allows access, assigns coarse-grained
//!   ownership and reports totals; it grows with platform chunks and gives empty ones back.
//! - [`SubAllocator`] is a pure TLSF allocator over `u64` addresses whose bookkeeping lives
//!   entirely outside the managed memory, so device memory the CPU cannot map is managed the
//!   same as host memory. O(1) allocate; free finds its block in O(1) (a hash map without
//!   `alloc`) or through the range's directory (with it: the blocks starting in one granule).
//! - [`raw`] holds the module's only `unsafe`: host copies and chunk release.
//!
//! Ref: HSA Runtime 1.2 §2.8 (regions, `hsa_memory_*`); `hsa_ext_amd.h` memory pools.

// `Error` carries its message inline (no allocator), so it is large by design; boxing it is
// not an option in no_std without `alloc`.
#![allow(clippy::result_large_err)]

pub mod pool;
pub mod raw;
pub mod region;
pub mod suballoc;

pub use crate::addr::{NodeMask, MAX_AGENTS};
pub use pool::{Allocation, Buffer, MemoryPool, PointerInfo, PoolStats, DEFAULT_CHUNK_BYTES};
pub use raw::copy;
pub use region::{AccessPermission, AgentAccess, GlobalFlags, PoolInfo, Segment};
pub use suballoc::{SubAllocError, SubAllocStats, SubAllocator, DEFAULT_CAPACITY, RANGE_CAPACITY};
