//! `hsa_queue_t` and AMD's `amd_queue_t` around it: the queue descriptor shared by the host,
//! the packet processor (CP firmware) and the kernels (through the queue pointer).
//!
//! Ref: HSA Runtime 1.2 §2.6 `hsa_queue_t` (`hsa.h`); `amd_hsa_queue.h` (`amd_queue_t`,
//! 256 bytes, 64-byte aligned; `write_dispatch_id` at 56, `read_dispatch_id` at 128).

use core::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::SignalHandle;

/// `hsa_queue_type_t`: who may produce packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum QueueType {
    /// `HSA_QUEUE_TYPE_MULTI` (0): several producers; the write index is reserved with an
    /// atomic add.
    Multi = 0,
    /// `HSA_QUEUE_TYPE_SINGLE` (1): one producer at a time.
    Single = 1,
    /// `HSA_QUEUE_TYPE_COOPERATIVE` (2): a multi-producer queue shared across agents.
    Cooperative = 2,
}

impl QueueType {
    /// From the raw value; `None` for values `hsa.h` does not define.
    pub const fn from_raw(raw: u32) -> Option<QueueType> {
        Some(match raw {
            0 => QueueType::Multi,
            1 => QueueType::Single,
            2 => QueueType::Cooperative,
            _ => return None,
        })
    }
}

/// `HSA_QUEUE_FEATURE_KERNEL_DISPATCH`: the queue accepts kernel dispatch packets.
pub const QUEUE_FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `HSA_QUEUE_FEATURE_AGENT_DISPATCH`: the queue accepts agent dispatch packets.
pub const QUEUE_FEATURE_AGENT_DISPATCH: u32 = 2;

/// `AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER` bit of `amd_queue_t.queue_properties`.
pub const AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER: u32 = 1 << 0;
/// `AMD_QUEUE_PROPERTIES_IS_PTR64`: pointers are 64-bit (always set on x86_64 hosts).
pub const AMD_QUEUE_PROPERTIES_IS_PTR64: u32 = 1 << 1;
/// `AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS`.
pub const AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS: u32 = 1 << 2;
/// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`: the packet processor writes start/end timestamps
/// into completion signals.
pub const AMD_QUEUE_PROPERTIES_ENABLE_PROFILING: u32 = 1 << 3;
/// `AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE`.
pub const AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE: u32 = 1 << 4;

/// `hsa_queue_t`: the user-visible queue descriptor (40 bytes, little-endian large model).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct HsaQueue {
    /// `hsa_queue_type32_t`.
    pub type_: u32,
    /// `HSA_QUEUE_FEATURE_*` bits.
    pub features: u32,
    /// Device address of the ring (`size * 64` bytes, aligned to its size).
    pub base_address: u64,
    /// The doorbell signal.
    pub doorbell_signal: SignalHandle,
    /// Ring size, packets (a power of two).
    pub size: u32,
    /// Must be 0.
    pub reserved1: u32,
    /// Queue id, unique in the process.
    pub id: u64,
}

/// `amd_queue_t`: AMD's queue descriptor, with the dispatch ids the CP reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C, align(64))]
pub struct AmdQueue {
    /// The `hsa_queue_t` (offset 0).
    pub hsa_queue: HsaQueue,
    /// Reserved.
    pub reserved1: [u32; 4],
    /// The write index (packets), offset 56: the CP polls it.
    pub write_dispatch_id: u64,
    /// High 32 bits of the group segment aperture base.
    pub group_segment_aperture_base_hi: u32,
    /// High 32 bits of the private segment aperture base.
    pub private_segment_aperture_base_hi: u32,
    /// Highest CU id.
    pub max_cu_id: u32,
    /// Highest wave id per CU.
    pub max_wave_id: u32,
    /// Legacy doorbell bookkeeping.
    pub max_legacy_doorbell_dispatch_id_plus_1: u64,
    /// Legacy doorbell lock.
    pub legacy_doorbell_lock: u32,
    /// Reserved.
    pub reserved2: [u32; 9],
    /// The read index (packets), offset 128: the CP reports it.
    pub read_dispatch_id: u64,
    /// Byte offset of `read_dispatch_id` from the start of the structure.
    pub read_dispatch_id_field_base_byte_offset: u32,
    /// `COMPUTE_TMPRING_SIZE` register value for scratch.
    pub compute_tmpring_size: u32,
    /// Scratch buffer resource descriptor (V#).
    pub scratch_resource_descriptor: [u32; 4],
    /// Device address of scratch backing memory.
    pub scratch_backing_memory_location: u64,
    /// Size of scratch backing memory, bytes.
    pub scratch_backing_memory_byte_size: u64,
    /// Scratch bytes per lane for wave64.
    pub scratch_wave64_lane_byte_size: u32,
    /// `AMD_QUEUE_PROPERTIES_*` bits.
    pub queue_properties: u32,
    /// Reserved.
    pub reserved3: [u32; 2],
    /// Signal set when the queue becomes inactive (error).
    pub queue_inactive_signal: SignalHandle,
    /// Reserved.
    pub reserved4: [u32; 14],
}

impl Default for AmdQueue {
    fn default() -> Self {
        zerocopy::FromZeros::new_zeroed()
    }
}

const _: () = assert!(size_of::<HsaQueue>() == 40);
const _: () = assert!(offset_of!(HsaQueue, type_) == 0);
const _: () = assert!(offset_of!(HsaQueue, features) == 4);
const _: () = assert!(offset_of!(HsaQueue, base_address) == 8);
const _: () = assert!(offset_of!(HsaQueue, doorbell_signal) == 16);
const _: () = assert!(offset_of!(HsaQueue, size) == 24);
const _: () = assert!(offset_of!(HsaQueue, reserved1) == 28);
const _: () = assert!(offset_of!(HsaQueue, id) == 32);

const _: () = assert!(size_of::<AmdQueue>() == 256);
const _: () = assert!(core::mem::align_of::<AmdQueue>() == 64);
const _: () = assert!(offset_of!(AmdQueue, hsa_queue) == 0);
const _: () = assert!(offset_of!(AmdQueue, reserved1) == 40);
const _: () = assert!(offset_of!(AmdQueue, write_dispatch_id) == 56);
const _: () = assert!(offset_of!(AmdQueue, group_segment_aperture_base_hi) == 64);
const _: () = assert!(offset_of!(AmdQueue, private_segment_aperture_base_hi) == 68);
const _: () = assert!(offset_of!(AmdQueue, max_cu_id) == 72);
const _: () = assert!(offset_of!(AmdQueue, max_wave_id) == 76);
const _: () = assert!(offset_of!(AmdQueue, max_legacy_doorbell_dispatch_id_plus_1) == 80);
const _: () = assert!(offset_of!(AmdQueue, legacy_doorbell_lock) == 88);
const _: () = assert!(offset_of!(AmdQueue, reserved2) == 92);
const _: () = assert!(offset_of!(AmdQueue, read_dispatch_id) == 128);
const _: () = assert!(offset_of!(AmdQueue, read_dispatch_id_field_base_byte_offset) == 136);
const _: () = assert!(offset_of!(AmdQueue, compute_tmpring_size) == 140);
const _: () = assert!(offset_of!(AmdQueue, scratch_resource_descriptor) == 144);
const _: () = assert!(offset_of!(AmdQueue, scratch_backing_memory_location) == 160);
const _: () = assert!(offset_of!(AmdQueue, scratch_backing_memory_byte_size) == 168);
const _: () = assert!(offset_of!(AmdQueue, scratch_wave64_lane_byte_size) == 176);
const _: () = assert!(offset_of!(AmdQueue, queue_properties) == 180);
const _: () = assert!(offset_of!(AmdQueue, reserved3) == 184);
const _: () = assert!(offset_of!(AmdQueue, queue_inactive_signal) == 192);
const _: () = assert!(offset_of!(AmdQueue, reserved4) == 200);
