//! AMD vendor-specific packets that carry PM4 commands (`AmdFormat` 1, `AMD_AQL_FORMAT_PM4_IB`).
//!
//! ROCR 5.x submits one on gfx9 and later GPUs to run PM4 commands on a compute queue — after
//! loading code, an `ACQUIRE_MEM` that invalidates the instruction and scalar caches
//! (`GpuAgent::InvalidateCodeCaches` → `AqlQueue::ExecutePM4`). The packet's four PM4 dwords
//! (ROCR: one `INDIRECT_BUFFER` pointing at the commands) are the command processor's to run:
//! decoding here only checks the AQL side (header, `AmdFormat`, `dw_cnt_remain`) and hands
//! them to [`ProcessorHost::execute_pm4`](super::ProcessorHost::execute_pm4); a host whose
//! device has no PM4 engine keeps the default, which stops the queue with
//! `INVALID_PACKET_FORMAT`, as a command processor does with a vendor packet it does not
//! support.
//!
//! Ref: ROCR `core/runtime/amd_aql_queue.cpp` (`AqlQueue::ExecutePM4`, `struct amd_aql_pm4_ib`,
//! ROCm 5.2 and 6.x); the layout is [`AmdAqlPm4IbPacket`].

use zerocopy::transmute;

use super::decode::Command;
use crate::abi::packet::{
    AmdAqlPm4IbPacket, PacketType, AMD_AQL_FORMAT_PM4_IB, AMD_AQL_PM4_IB_DW_CNT_REMAIN,
    PACKET_SIZE_BYTES,
};
use crate::abi::SignalHandle;
use crate::packet::{HeaderFlags, PacketHeader};
use crate::status::{Result, Status};

/// A validated PM4-IB vendor packet, as
/// [`ProcessorHost::execute_pm4`](super::ProcessorHost::execute_pm4) receives it.
///
/// Ref: [`AmdAqlPm4IbPacket`] (ROCR's `amd_aql_pm4_ib`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedPm4Ib {
    /// The PM4 dwords the command processor runs in the queue's ring context (ROCR: one
    /// `INDIRECT_BUFFER` packet). Not checked here: they are the host's PM4 engine's to
    /// decode.
    pub pm4: [u32; 4],
    /// Decremented when the commands completed; null for none.
    pub completion_signal: SignalHandle,
}

/// `Some` when `bytes` is an AMD vendor packet of format `AMD_AQL_FORMAT_PM4_IB`: its header
/// flags and [`Command::AmdPm4Ib`], or the error that makes it malformed; `None` for any other
/// packet (for [`decode::decode`](super::decode::decode)). Allocation-free; formats only on
/// failure. Reserved dwords are ignored, as the command processor ignores them.
///
/// # Errors
/// `Status::InvalidPacketFormat` when a fence scope in the header is 3 (reserved), or when
/// `dw_cnt_remain` is not 10 (the dwords after it: reserved and completion signal, the only
/// layout ROCR writes).
pub(crate) fn decode_pm4_ib(
    bytes: &[u8; PACKET_SIZE_BYTES],
) -> Option<Result<(HeaderFlags, Command)>> {
    if bytes[0] != PacketType::VendorSpecific as u8 || bytes[2] != AMD_AQL_FORMAT_PM4_IB {
        return None;
    }
    let p: AmdAqlPm4IbPacket = transmute!(*bytes);
    Some(decode_checked(&p))
}

fn decode_checked(p: &AmdAqlPm4IbPacket) -> Result<(HeaderFlags, Command)> {
    let header = PacketHeader::decode(p.header.header)?;
    if p.dw_cnt_remain != AMD_AQL_PM4_IB_DW_CNT_REMAIN {
        crate::bail!(
            Status::InvalidPacketFormat,
            "PM4-IB vendor packet: dw_cnt_remain (dword 5) is {}; must be \
             {AMD_AQL_PM4_IB_DW_CNT_REMAIN} (the reserved dwords and the completion signal)",
            p.dw_cnt_remain
        );
    }
    Ok((
        header.flags(),
        Command::AmdPm4Ib(DecodedPm4Ib {
            pm4: p.ib_jump_cmd,
            completion_signal: p.completion_signal,
        }),
    ))
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;
    use crate::abi::packet::{AmdVendorPacketHeader, FenceScope};
    use zerocopy::IntoBytes;

    /// ROCR 5.2's `ib_jump_cmd` for an IB at 0x7f12_3456_7000 of 7 dwords: PM4 type 3, opcode
    /// 0x3f (`INDIRECT_BUFFER`), count 2; base low (bits 2..32), base high (16 bits); size 7
    /// with the VALID bit (23) (`amd_gpu_pm4.h`).
    pub(crate) fn rocr_pm4() -> [u32; 4] {
        let ib: u64 = 0x7f12_3456_7000;
        [
            3 << 30 | 2 << 16 | 0x3f << 8,
            (ib as u32 >> 2) << 2,
            (ib >> 32) as u32 & 0xffff,
            7 | 1 << 23,
        ]
    }

    /// The packet ROCR 5.2's `AqlQueue::ExecutePM4` writes on gfx9 for an IB at
    /// 0x7f12_3456_7000 of 7 dwords: header 0 (vendor, no barrier, no fences), `ven_hdr` 1,
    /// [`rocr_pm4`], `dw_cnt_remain` 0xa.
    pub(crate) fn rocr_packet() -> [u8; 64] {
        let p = AmdAqlPm4IbPacket {
            header: AmdVendorPacketHeader {
                header: 0,
                amd_format: 1,
                reserved: 0,
            },
            ib_jump_cmd: rocr_pm4(),
            dw_cnt_remain: 0xa,
            reserved: [0; 8],
            completion_signal: SignalHandle::NULL,
        };
        let mut b = [0u8; 64];
        b.copy_from_slice(p.as_bytes());
        b
    }

    #[test]
    fn rocr_pm4_ib_packet_decodes_to_its_pm4_dwords() {
        let b = rocr_packet();
        // The bytes ROCR's struct puts there: ven_hdr (u16) 1 is AmdFormat byte 2.
        assert_eq!(&b[..4], &[0, 0, 1, 0]);
        let (flags, c) = decode_pm4_ib(&b).unwrap().unwrap();
        assert_eq!(flags, HeaderFlags::NONE);
        assert_eq!(
            c,
            Command::AmdPm4Ib(DecodedPm4Ib {
                pm4: [0xc002_3f00, 0x3456_7000, 0x7f12, 0x0080_0007],
                completion_signal: SignalHandle::NULL,
            })
        );
        assert_eq!(c.completion_signal(), SignalHandle::NULL);
    }

    #[test]
    fn fences_and_completion_signal_come_through() {
        // ROCm 6's form: system-scope fences and a completion signal.
        let mut b = rocr_packet();
        b[..2].copy_from_slice(&(2u16 << 9 | 2 << 11).to_le_bytes());
        b[56..].copy_from_slice(&0x7f00_0000_0040u64.to_le_bytes());
        let (flags, c) = decode_pm4_ib(&b).unwrap().unwrap();
        assert_eq!(flags.acquire_fence_scope, FenceScope::System);
        assert_eq!(flags.release_fence_scope, FenceScope::System);
        assert_eq!(c.completion_signal(), SignalHandle(0x7f00_0000_0040));
    }

    #[test]
    fn other_packets_are_not_pm4_ib() {
        let mut b = rocr_packet();
        b[2] = 2; // barrier-value
        assert!(decode_pm4_ib(&b).is_none());
        let mut b = rocr_packet();
        b[0] = 2; // kernel dispatch with byte 2 = 1
        assert!(decode_pm4_ib(&b).is_none());
    }

    #[test]
    fn bad_fence_scope_and_dw_cnt_remain_are_named() {
        let mut b = rocr_packet();
        b[..2].copy_from_slice(&(3u16 << 11).to_le_bytes());
        let e = decode_pm4_ib(&b).unwrap().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "release fence scope (header bits 11..13) is 3; must be in 0..=2"
        );
        let mut b = rocr_packet();
        b[20..24].copy_from_slice(&9u32.to_le_bytes());
        let e = decode_pm4_ib(&b).unwrap().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "PM4-IB vendor packet: dw_cnt_remain (dword 5) is 9; must be 10 (the reserved \
             dwords and the completion signal)"
        );
    }
}
