//! The 16-bit AQL packet header: packet type (bits 0..8), barrier bit (8), acquire fence scope
//! (9..11), release fence scope (11..13); bits 13..16 are reserved.
//!
//! Ref: HSA PSA 1.2 §2.9.1 "Packet header"; `hsa_packet_header_t` and
//! `hsa_packet_header_width_t` in `hsa.h`.

use core::fmt;

use crate::abi::packet::{
    FenceScope, PacketType, HEADER_ACQUIRE_FENCE_SCOPE_SHIFT, HEADER_ACQUIRE_FENCE_SCOPE_WIDTH,
    HEADER_BARRIER_SHIFT, HEADER_RELEASE_FENCE_SCOPE_SHIFT, HEADER_RELEASE_FENCE_SCOPE_WIDTH,
    HEADER_TYPE_SHIFT, HEADER_TYPE_WIDTH,
};
pub(crate) use crate::status::{Rule, Violation};
use crate::{Error, Result, Status};

/// Mask of the header bits hsa.h defines (0..13); bits 13..16 are reserved.
pub const HEADER_DEFINED_BITS: u16 = (1 << 13) - 1;

const fn field(raw: u16, shift: u32, width: u32) -> u16 {
    (raw >> shift) & ((1 << width) - 1)
}

/// The header flags every packet kind carries besides its type: the barrier bit and the two
/// fence scopes.
///
/// Ref: HSA PSA 1.2 §2.9.1; `HSA_PACKET_HEADER_BARRIER`, `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE`,
/// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE` in `hsa.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeaderFlags {
    /// When set, the packet processor does not launch this packet until every earlier packet
    /// of the queue has completed.
    pub barrier: bool,
    /// Acquire fence applied before the packet starts.
    pub acquire_fence_scope: FenceScope,
    /// Release fence applied after the packet completes, before its completion signal.
    pub release_fence_scope: FenceScope,
}

impl HeaderFlags {
    /// No barrier, no fences.
    pub const NONE: HeaderFlags = HeaderFlags {
        barrier: false,
        acquire_fence_scope: FenceScope::None,
        release_fence_scope: FenceScope::None,
    };

    /// System-scope acquire and release fences, no barrier: what ROCR's blit kernels and most
    /// HIP dispatches use.
    pub const SYSTEM: HeaderFlags = HeaderFlags {
        barrier: false,
        acquire_fence_scope: FenceScope::System,
        release_fence_scope: FenceScope::System,
    };
}

impl Default for HeaderFlags {
    /// [`HeaderFlags::NONE`].
    fn default() -> Self {
        HeaderFlags::NONE
    }
}

/// An AQL packet header whose type and fence scopes are values `hsa.h` defines.
///
/// Encode with [`PacketHeader::new`], decode with [`PacketHeader::decode`]. The reserved bits
/// 13..16 are ignored by the packet processor, and [`PacketHeader::decode`] clears them, so
/// two headers that differ only there compare equal.
///
/// Ref: HSA PSA 1.2 §2.9.1 "Packet header"; `hsa_packet_header_t` in `hsa.h`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct PacketHeader(u16);

impl PacketHeader {
    /// The header of an empty slot: type INVALID (1), no barrier, no fences.
    pub const INVALID: PacketHeader = PacketHeader::new(PacketType::Invalid, HeaderFlags::NONE);

    /// Encodes a header from its type and flags.
    pub const fn new(packet_type: PacketType, flags: HeaderFlags) -> PacketHeader {
        PacketHeader(
            ((packet_type as u16) << HEADER_TYPE_SHIFT)
                | ((flags.barrier as u16) << HEADER_BARRIER_SHIFT)
                | ((flags.acquire_fence_scope as u16) << HEADER_ACQUIRE_FENCE_SCOPE_SHIFT)
                | ((flags.release_fence_scope as u16) << HEADER_RELEASE_FENCE_SCOPE_SHIFT),
        )
    }

    /// Decodes a raw header (the first 16 bits of a packet, little-endian).
    ///
    /// # Errors
    /// [`Status::InvalidPacketFormat`] when the type byte (bits 0..8) is not a
    /// `hsa_packet_type_t` value (6..=255), or when either fence scope (bits 9..11, 11..13) is
    /// 3, which `hsa_fence_scope_t` leaves reserved. The message names the bits and the value.
    pub fn decode(raw: u16) -> Result<PacketHeader> {
        Self::decode_checked(raw).map_err(|v| v.into_error(Status::InvalidPacketFormat))
    }

    /// [`PacketHeader::decode`] without formatting: the violation on failure.
    pub(crate) const fn decode_checked(raw: u16) -> core::result::Result<PacketHeader, Violation> {
        let ty = field(raw, HEADER_TYPE_SHIFT, HEADER_TYPE_WIDTH);
        if PacketType::from_raw(ty as u8).is_none() {
            return Err(Violation::new(
                "packet type (header bits 0..8)",
                ty as u64,
                Rule::InRange(0, 5),
            ));
        }
        let acq = field(
            raw,
            HEADER_ACQUIRE_FENCE_SCOPE_SHIFT,
            HEADER_ACQUIRE_FENCE_SCOPE_WIDTH,
        );
        if FenceScope::from_raw(acq as u8).is_none() {
            return Err(Violation::new(
                "acquire fence scope (header bits 9..11)",
                acq as u64,
                Rule::InRange(0, 2),
            ));
        }
        let rel = field(
            raw,
            HEADER_RELEASE_FENCE_SCOPE_SHIFT,
            HEADER_RELEASE_FENCE_SCOPE_WIDTH,
        );
        if FenceScope::from_raw(rel as u8).is_none() {
            return Err(Violation::new(
                "release fence scope (header bits 11..13)",
                rel as u64,
                Rule::InRange(0, 2),
            ));
        }
        Ok(PacketHeader(raw & HEADER_DEFINED_BITS))
    }

    /// The encoded 16 bits (reserved bits 13..16 are 0).
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// The packet type.
    pub const fn packet_type(self) -> PacketType {
        match PacketType::from_raw(field(self.0, HEADER_TYPE_SHIFT, HEADER_TYPE_WIDTH) as u8) {
            Some(t) => t,
            // Unreachable: `new` and `decode` only build headers with a defined type.
            None => PacketType::Invalid,
        }
    }

    /// The barrier bit.
    pub const fn barrier(self) -> bool {
        (self.0 >> HEADER_BARRIER_SHIFT) & 1 == 1
    }

    /// The acquire fence scope.
    pub const fn acquire_fence_scope(self) -> FenceScope {
        scope(field(
            self.0,
            HEADER_ACQUIRE_FENCE_SCOPE_SHIFT,
            HEADER_ACQUIRE_FENCE_SCOPE_WIDTH,
        ))
    }

    /// The release fence scope.
    pub const fn release_fence_scope(self) -> FenceScope {
        scope(field(
            self.0,
            HEADER_RELEASE_FENCE_SCOPE_SHIFT,
            HEADER_RELEASE_FENCE_SCOPE_WIDTH,
        ))
    }

    /// The barrier bit and fence scopes.
    pub const fn flags(self) -> HeaderFlags {
        HeaderFlags {
            barrier: self.barrier(),
            acquire_fence_scope: self.acquire_fence_scope(),
            release_fence_scope: self.release_fence_scope(),
        }
    }
}

const fn scope(raw: u16) -> FenceScope {
    match FenceScope::from_raw(raw as u8) {
        Some(s) => s,
        // Unreachable: `new` and `decode` only build headers with defined scopes.
        None => FenceScope::None,
    }
}

impl From<PacketHeader> for u16 {
    fn from(h: PacketHeader) -> u16 {
        h.raw()
    }
}

impl TryFrom<u16> for PacketHeader {
    type Error = Error;
    /// [`PacketHeader::decode`].
    fn try_from(raw: u16) -> Result<PacketHeader> {
        PacketHeader::decode(raw)
    }
}

impl fmt::Debug for PacketHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketHeader")
            .field("raw", &format_args!("{:#06x}", self.0))
            .field("packet_type", &self.packet_type())
            .field("barrier", &self.barrier())
            .field("acquire_fence_scope", &self.acquire_fence_scope())
            .field("release_fence_scope", &self.release_fence_scope())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_bits_of_hsa_h() {
        // Kernel dispatch (2), barrier, acquire SYSTEM (2 << 9), release SYSTEM (2 << 11):
        // 2 | 0x100 | 0x400 | 0x1000 = 0x1502.
        let h = PacketHeader::new(
            PacketType::KernelDispatch,
            HeaderFlags {
                barrier: true,
                ..HeaderFlags::SYSTEM
            },
        );
        assert_eq!(h.raw(), 0x1502);
        // Barrier-OR (5), acquire AGENT (1 << 9), release NONE.
        let h = PacketHeader::new(
            PacketType::BarrierOr,
            HeaderFlags {
                barrier: false,
                acquire_fence_scope: FenceScope::Agent,
                release_fence_scope: FenceScope::None,
            },
        );
        assert_eq!(h.raw(), 0x0205);
        assert_eq!(PacketHeader::INVALID.raw(), 1);
        // The `u16` conversion is the raw bits too.
        assert_eq!(u16::from(h), 0x0205);
        assert_eq!(u16::from(PacketHeader::INVALID), 1);
    }

    #[test]
    fn debug_names_every_field() {
        let h = PacketHeader::decode(0x1502).unwrap();
        assert_eq!(
            std::format!("{h:?}"),
            "PacketHeader { raw: 0x1502, packet_type: KernelDispatch, barrier: true, \
             acquire_fence_scope: System, release_fence_scope: System }"
        );
    }

    #[test]
    fn decodes_every_valid_header_and_round_trips() {
        let mut valid = 0;
        // Under miri (~10^4 times slower) only the 256 headers with a type below 8 and the
        // reserved bits 13..16 clear: every type, barrier and scope pattern.
        let all = (0..=u16::MAX).filter(|raw| cfg!(not(miri)) || raw & 0xe0f8 == 0);
        for raw in all {
            if let Ok(h) = PacketHeader::decode(raw) {
                valid += 1;
                assert_eq!(h.raw(), raw & 0x1fff);
                assert_eq!(PacketHeader::new(h.packet_type(), h.flags()), h);
                assert_eq!(h.packet_type() as u16, raw & 0xff);
                assert_eq!(h.barrier(), raw & 0x100 != 0);
            }
        }
        // 6 types * 2 barrier * 3 * 3 scopes * 8 reserved-bit patterns (1 under miri).
        let reserved_patterns = if cfg!(miri) { 1 } else { 8 };
        assert_eq!(valid, 6 * 2 * 3 * 3 * reserved_patterns);
    }

    #[test]
    fn decode_errors_name_the_bad_bits() {
        let e = PacketHeader::decode(0x0006).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "packet type (header bits 0..8) is 6; must be in 0..=5"
        );
        let e = PacketHeader::decode(0x0602).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "acquire fence scope (header bits 9..11) is 3; must be in 0..=2"
        );
        let e = PacketHeader::decode(0x1802).unwrap_err();
        assert_eq!(
            e.detail(),
            "release fence scope (header bits 11..13) is 3; must be in 0..=2"
        );
    }
}
