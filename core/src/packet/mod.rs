//! AQL packets on the wire: header encode/decode, typed builders that validate, and a checked
//! view that parses any 64 bytes (smoltcp `wire` style).
//!
//! - [`header`]: [`PacketHeader`] (type, barrier bit, fence scopes) and [`HeaderFlags`].
//! - [`builder`]: one struct per packet kind ([`KernelDispatch`], [`BarrierAnd`],
//!   [`BarrierOr`], [`AgentDispatch`], [`BarrierValue`]) and [`Packet`]; `emit` validates and
//!   encodes into an [`EncodedPacket`].
//! - [`view`]: [`AqlPacket`], a checked view whose `parse` never panics and applies the
//!   builders' checks, except that it accepts a null kernarg address as `hsa.h` does.
//!
//! Fields are little-endian; hsa-rt supports only little-endian hosts (as every AMD GPU is).

#[cfg(target_endian = "big")]
compile_error!("hsa-core encodes AQL packets little-endian; big-endian hosts are not supported");

pub mod builder;
pub mod header;
pub mod view;

pub use builder::{
    AgentDispatch, BarrierAnd, BarrierOr, BarrierValue, KernelDispatch, Packet,
    KERNARG_ALIGN_BYTES, KERNEL_OBJECT_ALIGN_BYTES, MAX_BARRIER_VALUE_CONDITION, MAX_DEP_SIGNALS,
};
pub use header::{HeaderFlags, PacketHeader};
pub use view::AqlPacket;

/// A packet ready to publish: the 64 bytes with an INVALID header (type 1 in the low byte),
/// plus the 32-bit `header | setup << 16` word the producer stores last, with release
/// ordering, so the packet processor never sees half a packet.
///
/// Ref: HSA PSA 1.2 §2.9.2 (a packet becomes valid when its header's type is written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedPacket {
    /// The packet with its first 16 bits set to an INVALID header.
    pub bytes: [u8; 64],
    /// `header | (setup or the second 16 bits) << 16`: the first 32 bits to publish.
    pub header_word: u32,
}
