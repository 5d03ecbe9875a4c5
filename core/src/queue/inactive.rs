//! What a packet processor stores into `amd_queue_t.queue_inactive_signal` when it stops a
//! queue, and how a runtime reads it back.
//!
//! The command processor's firmware stores a bit mask there, its *queue error code*, which
//! ROCR 5.x decodes in `AqlQueue::DynamicScratchHandler` (in this order: exactly 512 is a
//! scratch reclaim; `0x401` a scratch request; 2 invalid dimensions; 4 invalid group memory;
//! 8 invalid or null code; 32 invalid packet format, generic, or 256, a vendor packet; 64
//! group too large; 128 out of VGPRs; `0x2000_0000` memory violation; `0x4000_0000` illegal
//! instruction; `0x8000_0000` debug trap; anything else asserts). hsa-rt's software packet
//! processor — the emulated CP under ROCR (`kfd-emu`), the fake platform, soft queues —
//! stores such a code too, so that ROCR reads the error it means, and keeps its exact
//! `hsa_status_t` in the upper 32 bits, which a real CP leaves 0 and ROCR's decoder never
//! looks at (every status a processor stores has a code bit set below them).
//!
//! [`decode`] reads both: the upper half when it holds a status, else the code as ROCR maps it
//! (a real GPU's CP). Statuses without a code of their own go to the code whose ROCR status is
//! nearest: `MEMORY_FAULT` to the memory violation (on a GPU a VM fault leaves the signal alone
//! and reaches ROCR as a KFD memory event, on which ROCR aborts anyway), every other status to
//! the generic invalid-packet code.
//!
//! Ref: ROCR `core/runtime/amd_aql_queue.cpp` (`DynamicScratchHandler`, ROCm 5.2).

use crate::status::{Error, Status};

/// Queue error code: a scratch request of a wave64 dispatch (not an error).
pub const CP_SCRATCH_WAVE64: u32 = 0x1;
/// Queue error code: invalid dispatch dimensions (`INCOMPATIBLE_ARGUMENTS`).
pub const CP_INVALID_DIM: u32 = 0x2;
/// Queue error code: invalid group segment size (`INVALID_ALLOCATION`).
pub const CP_INVALID_GROUP_MEMORY: u32 = 0x4;
/// Queue error code: invalid or null kernel code (`INVALID_CODE_OBJECT`).
pub const CP_INVALID_CODE: u32 = 0x8;
/// Queue error code: invalid packet format, generic (`INVALID_PACKET_FORMAT`).
pub const CP_INVALID_FORMAT: u32 = 0x20;
/// Queue error code: work-group too large (`INVALID_ARGUMENT`).
pub const CP_GROUP_TOO_LARGE: u32 = 0x40;
/// Queue error code: out of VGPRs (`INVALID_ISA`).
pub const CP_OUT_OF_VGPRS: u32 = 0x80;
/// Queue error code: a vendor-specific packet the CP does not support
/// (`INVALID_PACKET_FORMAT`; `EC_QUEUE_PACKET_VENDOR_UNSUPPORTED`).
pub const CP_VENDOR_PACKET: u32 = 0x100;
/// Queue error code: a scratch request of a wave32 dispatch (not an error).
pub const CP_SCRATCH_WAVE32: u32 = 0x400;
/// Queue error code: memory violation beyond 48 bits (`MEMORY_APERTURE_VIOLATION`).
pub const CP_MEMORY_VIOLATION: u32 = 0x2000_0000;
/// Queue error code: illegal instruction (`ILLEGAL_INSTRUCTION`).
pub const CP_ILLEGAL_INSTRUCTION: u32 = 0x4000_0000;
/// Queue error code: debug trap (`EXCEPTION`).
pub const CP_DEBUG_TRAP: u32 = 0x8000_0000;

/// The command processor's scratch request, typed: what a dispatch needs of the queue's
/// scratch and what `amd_queue_t` gives (the CP compares the dispatch's private segment with
/// `COMPUTE_TMPRING_SIZE` before it launches waves). A packet processor host returns it from
/// [`ProcessorHost::scratch_request`](crate::packet_processor::ProcessorHost::scratch_request)
/// after a kernel execution it refused for this reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchRequest {
    /// Bytes per wave the dispatch needs (64 lanes × its private segment, whole KiB).
    pub wave_bytes_needed: u64,
    /// Wave slots one work-group needs (from the first slot the call uses).
    pub slots_needed: u64,
    /// Bytes per wave slot the queue has (`COMPUTE_TMPRING_SIZE.WAVESIZE` × 1 KiB).
    pub wave_bytes: u64,
    /// Wave slots the queue has (`COMPUTE_TMPRING_SIZE.WAVES`).
    pub slots: u32,
}

impl ScratchRequest {
    /// The error a dispatch gets when nobody grows the queue's scratch:
    /// [`Status::OutOfResources`] (ROCR's status when it cannot give the scratch), naming the
    /// sizes (the message starts with `scratch request`).
    pub fn error(&self) -> Error {
        Error::lazy(
            Status::OutOfResources,
            [
                self.wave_bytes_needed,
                self.slots_needed,
                self.wave_bytes,
                u64::from(self.slots),
            ],
            |&[need, slots_needed, have, slots, ..], f| {
                write!(
                    f,
                    "scratch request: the dispatch needs {need} bytes of scratch per wave in \
                     {slots_needed} wave slots; the queue's amd_queue_t gives {have} bytes per \
                     slot in {slots} slots (compute_tmpring_size)"
                )
            },
        )
    }
}

/// The queue error code for `status` (`vendor_packet`: the packet that failed was an AMD
/// vendor-specific packet); see the module docs.
pub const fn cp_code(status: Status, vendor_packet: bool) -> u32 {
    match status {
        Status::InvalidPacketFormat if vendor_packet => CP_VENDOR_PACKET,
        Status::IncompatibleArguments => CP_INVALID_DIM,
        Status::InvalidAllocation => CP_INVALID_GROUP_MEMORY,
        Status::InvalidCodeObject => CP_INVALID_CODE,
        Status::InvalidArgument => CP_GROUP_TOO_LARGE,
        Status::InvalidIsa => CP_OUT_OF_VGPRS,
        Status::MemoryApertureViolation | Status::MemoryFault => CP_MEMORY_VIOLATION,
        Status::IllegalInstruction => CP_ILLEGAL_INSTRUCTION,
        Status::Exception => CP_DEBUG_TRAP,
        _ => CP_INVALID_FORMAT,
    }
}

/// The value a packet processor stores into `queue_inactive_signal` when `status` stops the
/// queue: the queue error code in bits 0..32, `status` in bits 32..64 (positive).
pub const fn encode(status: Status, vendor_packet: bool) -> i64 {
    (status.raw() as i64) << 32 | cp_code(status, vendor_packet) as i64
}

/// The status ROCR 7 reports for an amdkfd exception code (`enum
/// kfd_dbg_trap_exception_code`, the `ecode` of `KFD_EC_MASK(ecode)`), as its
/// `AqlQueue::ExceptionHandler` table maps them: wave abort, trap and math error
/// `EXCEPTION`; illegal instruction `ILLEGAL_INSTRUCTION`; wave memory violation
/// `MEMORY_FAULT`; aperture and device memory violation `MEMORY_APERTURE_VIOLATION`; the CP's
/// packet errors (16 dimensions, 17 group segment, 18 code, 20 and 23 unsupported packets, 21
/// work-group size, 22 registers) as [`decode`] maps the queue error codes; anything else
/// (preemption error, RAS, fatal halt, ...) `ERROR`. A bare-metal platform reads the code from
/// a `CP_BAD_OPCODE` interrupt (`KFD_DEBUG_CP_BAD_OP_ECODE`).
pub const fn exception_status(ecode: u32) -> Status {
    match ecode {
        1..=3 => Status::Exception,
        4 => Status::IllegalInstruction,
        5 => Status::MemoryFault,
        6 | 33 => Status::MemoryApertureViolation,
        16 => Status::IncompatibleArguments,
        17 => Status::InvalidAllocation,
        18 => Status::InvalidCodeObject,
        20 | 23 => Status::InvalidPacketFormat,
        21 => Status::InvalidArgument,
        22 => Status::InvalidIsa,
        _ => Status::Error,
    }
}

/// The amdkfd exception code a command processor reports for a queue it stopped with
/// `status` (what its `CP_BAD_OPCODE` interrupt carries, `KFD_DEBUG_CP_BAD_OP_ECODE`): the
/// inverse of [`exception_status`] for the statuses one code stands for (`INVALID_PACKET_FORMAT`
/// as `EC_QUEUE_PACKET_UNSUPPORTED`, 20; `EXCEPTION` as `EC_QUEUE_WAVE_TRAP`, 2). `None` for
/// `MEMORY_FAULT` (on a GPU a VM fault, which amdkfd reports as a memory event, not a CP
/// error) and statuses no code stands for.
pub const fn exception_code(status: Status) -> Option<u32> {
    Some(match status {
        Status::IncompatibleArguments => 16,
        Status::InvalidAllocation => 17,
        Status::InvalidCodeObject => 18,
        Status::InvalidPacketFormat => 20,
        Status::InvalidArgument => 21,
        Status::InvalidIsa => 22,
        Status::IllegalInstruction => 4,
        Status::MemoryApertureViolation => 6,
        Status::Exception => 2,
        _ => return None,
    })
}

/// The status a positive `queue_inactive_signal` value stands for: hsa-rt's status in the
/// upper half when it holds one, else the queue error code as ROCR maps it, with a scratch
/// request or reclaim as `OUT_OF_RESOURCES` (what it comes to for a reader that does not
/// serve it; [`AqlQueue::serve_scratch_request`](super::AqlQueue::serve_scratch_request)
/// serves a request by growing the queue's scratch, as ROCR does) and a code ROCR does not define (it asserts) as
/// `ERROR`. `None` for 0 (the queue runs) and negative values (ROCR and
/// [`AqlQueue::close`](super::AqlQueue::close) store `0x8000_0000_0000_0000` when they destroy
/// the queue).
pub fn decode(value: i64) -> Option<Status> {
    if value <= 0 {
        return None;
    }
    if let Ok(status) = Status::from_raw((value >> 32) as u32) {
        if status != Status::Success && status != Status::InfoBreak {
            return Some(status);
        }
    }
    let code = value as u32;
    Some(
        if code == 512 || code & (CP_SCRATCH_WAVE64 | CP_SCRATCH_WAVE32) != 0 {
            Status::OutOfResources
        } else if code & CP_INVALID_DIM != 0 {
            Status::IncompatibleArguments
        } else if code & CP_INVALID_GROUP_MEMORY != 0 {
            Status::InvalidAllocation
        } else if code & CP_INVALID_CODE != 0 {
            Status::InvalidCodeObject
        } else if code & (CP_INVALID_FORMAT | CP_VENDOR_PACKET) != 0 {
            Status::InvalidPacketFormat
        } else if code & CP_GROUP_TOO_LARGE != 0 {
            Status::InvalidArgument
        } else if code & CP_OUT_OF_VGPRS != 0 {
            Status::InvalidIsa
        } else if code & CP_MEMORY_VIOLATION != 0 {
            Status::MemoryApertureViolation
        } else if code & CP_ILLEGAL_INSTRUCTION != 0 {
            Status::IllegalInstruction
        } else if code & CP_DEBUG_TRAP != 0 {
            Status::Exception
        } else {
            Status::Error
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROCR 5.2's `DynamicScratchHandler`, restated: the status it reports for a value, or
    /// `None` where it does not report an error (scratch) or asserts (an undefined code).
    fn rocr(error_code: i64) -> Option<Status> {
        if error_code == 512 || error_code & 0x401 != 0 {
            return None;
        }
        let bits = [
            (2, Status::IncompatibleArguments),
            (4, Status::InvalidAllocation),
            (8, Status::InvalidCodeObject),
            (32 | 256, Status::InvalidPacketFormat),
            (64, Status::InvalidArgument),
            (128, Status::InvalidIsa),
            (0x2000_0000, Status::MemoryApertureViolation),
            (0x4000_0000, Status::IllegalInstruction),
            (0x8000_0000, Status::Exception),
        ];
        bits.iter()
            .find(|(b, _)| error_code & b != 0)
            .map(|&(_, s)| s)
    }

    /// Every status a packet processor stops a queue with reaches ROCR as a defined error
    /// (never a scratch request, never its assertion), the one ROCR maps its code to; and
    /// hsa-rt reads back the exact status.
    /// ROCR 7's `AqlQueue::ExceptionHandler` rows, code by code, and codes it has no row for.
    #[test]
    fn exception_codes_map_as_rocr_7_maps_them() {
        let rows = [
            (1, Status::Exception),
            (2, Status::Exception),
            (3, Status::Exception),
            (4, Status::IllegalInstruction),
            (5, Status::MemoryFault),
            (6, Status::MemoryApertureViolation),
            (16, Status::IncompatibleArguments),
            (17, Status::InvalidAllocation),
            (18, Status::InvalidCodeObject),
            (20, Status::InvalidPacketFormat),
            (21, Status::InvalidArgument),
            (22, Status::InvalidIsa),
            (23, Status::InvalidPacketFormat),
            (31, Status::Error),
            (33, Status::MemoryApertureViolation),
            (34, Status::Error),
            (50, Status::Error),
            (0, Status::Error),
            (7, Status::Error),
            (15, Status::Error),
            (19, Status::Error),
            (24, Status::Error),
            (32, Status::Error),
        ];
        for (code, want) in rows {
            assert_eq!(exception_status(code), want, "exception code {code}");
        }
        // The inverse, for every status one code stands for; none for a memory fault.
        for (status, code) in [
            (Status::IncompatibleArguments, 16),
            (Status::InvalidAllocation, 17),
            (Status::InvalidCodeObject, 18),
            (Status::InvalidPacketFormat, 20),
            (Status::InvalidArgument, 21),
            (Status::InvalidIsa, 22),
            (Status::IllegalInstruction, 4),
            (Status::MemoryApertureViolation, 6),
            (Status::Exception, 2),
        ] {
            assert_eq!(exception_code(status), Some(code), "{status:?}");
            assert_eq!(exception_status(code), status);
        }
        assert_eq!(exception_code(Status::MemoryFault), None);
        assert_eq!(exception_code(Status::Error), None);
        assert_eq!(exception_code(Status::OutOfResources), None);
    }

    #[test]
    fn every_status_is_a_defined_rocr_error_and_round_trips() {
        let want = [
            (
                Status::InvalidPacketFormat,
                false,
                Status::InvalidPacketFormat,
                0x20,
            ),
            (
                Status::InvalidPacketFormat,
                true,
                Status::InvalidPacketFormat,
                0x100,
            ),
            (
                Status::IncompatibleArguments,
                false,
                Status::IncompatibleArguments,
                2,
            ),
            (
                Status::InvalidAllocation,
                false,
                Status::InvalidAllocation,
                4,
            ),
            (
                Status::InvalidCodeObject,
                false,
                Status::InvalidCodeObject,
                8,
            ),
            (Status::InvalidArgument, false, Status::InvalidArgument, 64),
            (Status::InvalidIsa, false, Status::InvalidIsa, 128),
            (
                Status::MemoryFault,
                false,
                Status::MemoryApertureViolation,
                0x2000_0000,
            ),
            (
                Status::IllegalInstruction,
                false,
                Status::IllegalInstruction,
                0x4000_0000,
            ),
            (Status::Exception, false, Status::Exception, 0x8000_0000),
            (
                Status::InvalidSignal,
                false,
                Status::InvalidPacketFormat,
                0x20,
            ),
            (Status::Error, false, Status::InvalidPacketFormat, 0x20),
        ];
        for (status, vendor, rocr_status, code) in want {
            let v = encode(status, vendor);
            assert_eq!(v as u32, code, "{status:?}");
            assert_eq!(v >> 32, i64::from(status.raw()), "{status:?}");
            assert!(v > 0);
            assert_eq!(rocr(v), Some(rocr_status), "{status:?} {v:#x}");
            assert_eq!(decode(v), Some(status), "{status:?}");
        }
        // The value ROCR 5.2 got before: the bare hsa_status_t, whose bit 0 reads as a
        // scratch request (0x1009 INVALID_PACKET_FORMAT, 0x2b MEMORY_FAULT).
        assert_eq!(rocr(0x1009), None);
        assert_eq!(rocr(0x2b), None);
    }

    /// A real CP's codes (upper half 0) decode as ROCR decodes them.
    #[test]
    fn a_real_cps_codes_decode_as_rocr_decodes_them() {
        for code in [
            2i64,
            4,
            8,
            32,
            256,
            64,
            128,
            0x2000_0000,
            0x4000_0000,
            0x8000_0000,
        ] {
            assert_eq!(decode(code), rocr(code), "{code:#x}");
        }
        assert_eq!(decode(0x100 | 0x20), Some(Status::InvalidPacketFormat));
        // Running or destroyed.
        for v in [0, i64::MIN, -1] {
            assert_eq!(decode(v), None, "{v:#x}");
        }
        // A scratch request or reclaim, for a reader that does not serve it.
        for v in [1, 0x400, 512] {
            assert_eq!(decode(v), Some(Status::OutOfResources), "{v:#x}");
        }
        // An undefined code (ROCR asserts) is a generic error here.
        assert_eq!(decode(0x1000), Some(Status::Error));
    }
}
