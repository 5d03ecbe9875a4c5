//! The AQL packet formats: four 64-byte HSA packets and AMD's vendor-specific barrier-value
//! packet, plus the header field constants.
//!
//! Ref: HSA Platform System Architecture Specification 1.2 §2.9 "Architected Queuing
//! Language"; `hsa.h` (`hsa_kernel_dispatch_packet_t`, `hsa_agent_dispatch_packet_t`,
//! `hsa_barrier_and_packet_t`, `hsa_barrier_or_packet_t`, `hsa_packet_header_t`);
//! `hsa_ext_amd.h` (`hsa_amd_vendor_packet_header_t`, `hsa_amd_barrier_value_packet_t`).

use core::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::SignalHandle;

/// Size of every AQL packet, bytes.
pub const PACKET_SIZE_BYTES: usize = 64;

/// `HSA_PACKET_HEADER_TYPE`: bit offset of the packet type in the header.
pub const HEADER_TYPE_SHIFT: u32 = 0;
/// `HSA_PACKET_HEADER_WIDTH_TYPE`: bits of the packet type.
pub const HEADER_TYPE_WIDTH: u32 = 8;
/// `HSA_PACKET_HEADER_BARRIER`: bit offset of the barrier bit.
pub const HEADER_BARRIER_SHIFT: u32 = 8;
/// `HSA_PACKET_HEADER_WIDTH_BARRIER`.
pub const HEADER_BARRIER_WIDTH: u32 = 1;
/// `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE`: bit offset of the acquire fence scope.
pub const HEADER_ACQUIRE_FENCE_SCOPE_SHIFT: u32 = 9;
/// `HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE`.
pub const HEADER_ACQUIRE_FENCE_SCOPE_WIDTH: u32 = 2;
/// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE`: bit offset of the release fence scope.
pub const HEADER_RELEASE_FENCE_SCOPE_SHIFT: u32 = 11;
/// `HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE`.
pub const HEADER_RELEASE_FENCE_SCOPE_WIDTH: u32 = 2;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`: bit offset of the dimension count in `setup`.
pub const SETUP_DIMENSIONS_SHIFT: u32 = 0;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS`.
pub const SETUP_DIMENSIONS_WIDTH: u32 = 2;

/// `hsa_packet_type_t`: what the packet processor does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// `HSA_PACKET_TYPE_VENDOR_SPECIFIC` (0): AMD's vendor packets (barrier-value).
    VendorSpecific = 0,
    /// `HSA_PACKET_TYPE_INVALID` (1): the slot holds no packet yet (or any more).
    Invalid = 1,
    /// `HSA_PACKET_TYPE_KERNEL_DISPATCH` (2).
    KernelDispatch = 2,
    /// `HSA_PACKET_TYPE_BARRIER_AND` (3).
    BarrierAnd = 3,
    /// `HSA_PACKET_TYPE_AGENT_DISPATCH` (4).
    AgentDispatch = 4,
    /// `HSA_PACKET_TYPE_BARRIER_OR` (5).
    BarrierOr = 5,
}

impl PacketType {
    /// From the header's type byte; `None` for a value `hsa.h` does not define.
    pub const fn from_raw(raw: u8) -> Option<PacketType> {
        Some(match raw {
            0 => PacketType::VendorSpecific,
            1 => PacketType::Invalid,
            2 => PacketType::KernelDispatch,
            3 => PacketType::BarrierAnd,
            4 => PacketType::AgentDispatch,
            5 => PacketType::BarrierOr,
            _ => return None,
        })
    }
}

/// `hsa_fence_scope_t`: how far an acquire or release fence reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FenceScope {
    /// `HSA_FENCE_SCOPE_NONE` (0): no fence.
    None = 0,
    /// `HSA_FENCE_SCOPE_AGENT` (1): the agent executing the packet.
    Agent = 1,
    /// `HSA_FENCE_SCOPE_SYSTEM` (2): all agents and the host.
    System = 2,
}

impl FenceScope {
    /// From the two header bits; `None` for 3 (reserved).
    pub const fn from_raw(raw: u8) -> Option<FenceScope> {
        Some(match raw {
            0 => FenceScope::None,
            1 => FenceScope::Agent,
            2 => FenceScope::System,
            _ => return None,
        })
    }
}

/// `hsa_amd_packet_type_t`: the AMD format byte of a vendor-specific packet.
pub const AMD_PACKET_TYPE_BARRIER_VALUE: u8 = 2;

/// `hsa_kernel_dispatch_packet_t`: launch a kernel over a 1- to 3-dimensional grid.
///
/// Ref: HSA PSA 1.2 §2.9.6 "Kernel dispatch packet"; `hsa.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct KernelDispatchPacket {
    /// Packet header (type, barrier bit, fence scopes).
    pub header: u16,
    /// Dimensions in bits 0..2 (1, 2 or 3).
    pub setup: u16,
    /// Work-group size in x, work-items.
    pub workgroup_size_x: u16,
    /// Work-group size in y, work-items (1 when unused).
    pub workgroup_size_y: u16,
    /// Work-group size in z, work-items (1 when unused).
    pub workgroup_size_z: u16,
    /// Must be 0.
    pub reserved0: u16,
    /// Grid size in x, work-items.
    pub grid_size_x: u32,
    /// Grid size in y, work-items (1 when unused).
    pub grid_size_y: u32,
    /// Grid size in z, work-items (1 when unused).
    pub grid_size_z: u32,
    /// Private segment bytes per work-item.
    pub private_segment_size: u32,
    /// Group segment bytes per work-group.
    pub group_segment_size: u32,
    /// The kernel object: device address of the kernel descriptor.
    pub kernel_object: u64,
    /// Device address of the kernarg segment (16-byte aligned).
    pub kernarg_address: u64,
    /// Must be 0.
    pub reserved2: u64,
    /// Decremented when the kernel completes; null for none.
    pub completion_signal: SignalHandle,
}

/// `hsa_agent_dispatch_packet_t`: ask an agent to run a function it registered under `type_`.
///
/// Ref: HSA PSA 1.2 §2.9.7 "Agent dispatch packet"; `hsa.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct AgentDispatchPacket {
    /// Packet header.
    pub header: u16,
    /// The application-defined function id.
    pub type_: u16,
    /// Must be 0.
    pub reserved0: u32,
    /// Where the function stores its result.
    pub return_address: u64,
    /// Arguments.
    pub arg: [u64; 4],
    /// Must be 0.
    pub reserved2: u64,
    /// Decremented when the function completes; null for none.
    pub completion_signal: SignalHandle,
}

/// `hsa_barrier_and_packet_t` and `hsa_barrier_or_packet_t` (the same layout): wait until all
/// (AND) or any (OR) of up to five dependency signals reach 0. Null dependencies are ignored
/// (AND) or never satisfy (OR).
///
/// Ref: HSA PSA 1.2 §2.9.8–2.9.9 "Barrier-AND / Barrier-OR packet"; `hsa.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct BarrierPacket {
    /// Packet header.
    pub header: u16,
    /// Must be 0.
    pub reserved0: u16,
    /// Must be 0.
    pub reserved1: u32,
    /// Dependency signals.
    pub dep_signal: [SignalHandle; 5],
    /// Must be 0.
    pub reserved2: u64,
    /// Decremented when the barrier resolves; null for none.
    pub completion_signal: SignalHandle,
}

/// `hsa_barrier_and_packet_t`.
pub type BarrierAndPacket = BarrierPacket;
/// `hsa_barrier_or_packet_t`.
pub type BarrierOrPacket = BarrierPacket;

/// `hsa_amd_vendor_packet_header_t`: the first 32 bits of an AMD vendor-specific packet.
///
/// Ref: `hsa_ext_amd.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct AmdVendorPacketHeader {
    /// The AQL header (type VENDOR_SPECIFIC).
    pub header: u16,
    /// `AmdFormat`: [`AMD_PACKET_TYPE_BARRIER_VALUE`].
    pub amd_format: u8,
    /// Must be 0.
    pub reserved: u8,
}

/// `hsa_amd_barrier_value_packet_t`: wait until `(signal.value & mask) cond value` holds.
///
/// Ref: `hsa_ext_amd.h`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct BarrierValuePacket {
    /// AMD vendor header.
    pub header: AmdVendorPacketHeader,
    /// Must be 0.
    pub reserved0: u32,
    /// The signal whose value is compared.
    pub signal: SignalHandle,
    /// The compare value.
    pub value: i64,
    /// ANDed with the signal's value before comparing.
    pub mask: i64,
    /// `hsa_signal_condition32_t` (EQ 0, NE 1, LT 2, GTE 3).
    pub cond: u32,
    /// Must be 0.
    pub reserved1: u32,
    /// Must be 0.
    pub reserved2: u64,
    /// Must be 0.
    pub reserved3: u64,
    /// Decremented when the condition holds; null for none.
    pub completion_signal: SignalHandle,
}

/// The AMD format byte of a vendor-specific packet that carries PM4 commands for the command
/// processor (`AMD_AQL_FORMAT_PM4_IB`): ROCR 5.x on gfx9 and later submits one to invalidate
/// the GPU's caches after loading code (`AqlQueue::ExecutePM4`, called by
/// `GpuAgent::InvalidateCodeCaches`).
///
/// Ref: ROCR `core/runtime/amd_aql_queue.cpp` (ROCm 5.2).
pub const AMD_AQL_FORMAT_PM4_IB: u8 = 1;

/// Dwords of an [`AmdAqlPm4IbPacket`] after its `dw_cnt_remain` field (the reserved dwords
/// and the completion signal), the only value ROCR writes there.
pub const AMD_AQL_PM4_IB_DW_CNT_REMAIN: u32 = 10;

/// `amd_aql_pm4_ib`: an AMD vendor-specific packet of format [`AMD_AQL_FORMAT_PM4_IB`]. The
/// command processor executes the four PM4 dwords in `ib_jump_cmd` (ROCR puts one
/// `INDIRECT_BUFFER` packet there, pointing at the PM4 commands to run), skips the
/// `dw_cnt_remain` dwords after that field, and completes the packet as any other: release
/// fence, completion signal decremented (ROCm 6 waits on it; ROCm 5.2 leaves it null and
/// waits for the read index to pass the packet).
///
/// Ref: ROCR `core/runtime/amd_aql_queue.cpp` (`AqlQueue::ExecutePM4`, ROCm 5.2 and 6.x).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(64))]
pub struct AmdAqlPm4IbPacket {
    /// AMD vendor header: AQL header of type VENDOR_SPECIFIC, `AmdFormat`
    /// [`AMD_AQL_FORMAT_PM4_IB`] (ROCR writes it as the 16-bit `ven_hdr`).
    pub header: AmdVendorPacketHeader,
    /// PM4 commands run in the queue's ring context (ROCR: one 4-dword `INDIRECT_BUFFER`).
    pub ib_jump_cmd: [u32; 4],
    /// Dwords left in the packet after this one ([`AMD_AQL_PM4_IB_DW_CNT_REMAIN`]).
    pub dw_cnt_remain: u32,
    /// Must be 0.
    pub reserved: [u32; 8],
    /// Decremented when the commands completed; null for none.
    pub completion_signal: SignalHandle,
}

macro_rules! assert_layout {
    ($t:ty, $size:expr, $( $field:ident @ $off:expr ),* $(,)?) => {
        const _: () = assert!(size_of::<$t>() == $size);
        $( const _: () = assert!(offset_of!($t, $field) == $off); )*
    };
}

assert_layout!(KernelDispatchPacket, 64,
    header @ 0, setup @ 2, workgroup_size_x @ 4, workgroup_size_y @ 6, workgroup_size_z @ 8,
    reserved0 @ 10, grid_size_x @ 12, grid_size_y @ 16, grid_size_z @ 20,
    private_segment_size @ 24, group_segment_size @ 28, kernel_object @ 32,
    kernarg_address @ 40, reserved2 @ 48, completion_signal @ 56);
assert_layout!(AgentDispatchPacket, 64,
    header @ 0, type_ @ 2, reserved0 @ 4, return_address @ 8, arg @ 16, reserved2 @ 48,
    completion_signal @ 56);
assert_layout!(BarrierPacket, 64,
    header @ 0, reserved0 @ 2, reserved1 @ 4, dep_signal @ 8, reserved2 @ 48,
    completion_signal @ 56);
assert_layout!(AmdVendorPacketHeader, 4, header @ 0, amd_format @ 2, reserved @ 3);
assert_layout!(BarrierValuePacket, 64,
    header @ 0, reserved0 @ 4, signal @ 8, value @ 16, mask @ 24, cond @ 32, reserved1 @ 36,
    reserved2 @ 40, reserved3 @ 48, completion_signal @ 56);
assert_layout!(AmdAqlPm4IbPacket, 64,
    header @ 0, ib_jump_cmd @ 4, dw_cnt_remain @ 20, reserved @ 24, completion_signal @ 56);
const _: () = assert!(core::mem::align_of::<KernelDispatchPacket>() == 64);
