//! AQL packets on the wire: header encode/decode, typed builders that validate, and a checked
//! view that parses any 64 bytes (smoltcp `wire` style).

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
