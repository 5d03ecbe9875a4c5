//! What the processor makes of one 64-byte packet it took off the ring.
//!
//! Parsing and validation belong to the shared wire layer: [`decode`] runs
//! [`AqlPacket::parse`] (header codec, the builders' field checks, allocation-free and without
//! formatting on success), so a bad packet is an `Error` with `Status::InvalidPacketFormat`
//! naming the field and its value, never a panic. Like the hardware, and unlike the builders,
//! `parse` accepts a kernel dispatch with a null kernarg address (`hsa.h`: "May be NULL").
//!
//! What stays here is what only the processor needs: a packet slot that is INVALID is an error
//! (the consumer only decodes slots it saw published), a kernel dispatch carries where it sits
//! in the queue ([`DecodedKernelDispatch`]), and a barrier-value condition becomes the runtime's
//! [`SignalCondition`].

use core::ops::Deref;

use crate::abi::packet::{KernelDispatchPacket, PACKET_SIZE_BYTES};
use crate::abi::SignalHandle;
use crate::addr::GpuVa;
use crate::packet::{self, AqlPacket, HeaderFlags, Packet};
use crate::signal::SignalCondition;
use crate::status::{Result, Status};
use zerocopy::FromBytes;

/// A validated kernel dispatch and where it sits in its queue: what a
/// [`ProcessorHost::execute_kernel`](super::ProcessorHost::execute_kernel) receives.
///
/// The packet's fields (grid and work-group sizes, segment sizes, kernel object, kernarg
/// address, completion signal, [`workgroup_count`](packet::KernelDispatch::workgroup_count))
/// are reached through `Deref` to the parsed [`packet::KernelDispatch`]; its `kernarg_address`
/// may be null (a kernel without arguments).
///
/// Ref: HSA PSA 1.2 §2.9.6 "Kernel dispatch packet" (`hsa_kernel_dispatch_packet_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedKernelDispatch {
    /// The packet as [`AqlPacket::parse`] validated it.
    pub packet: packet::KernelDispatch,
    /// Device address of the packet's 64-byte slot in the ring: what the kernel's dispatch
    /// pointer SGPRs hold (AMDGPUUsage "Initial Kernel Execution State", `dispatch_ptr`).
    /// Decoding leaves it 0; [`PacketProcessor`](super::PacketProcessor) fills it in.
    pub packet_address: GpuVa,
    /// Device address of the queue's `amd_queue_t` (the `queue_ptr` SGPRs). Decoding
    /// leaves it 0; the processor fills it in.
    pub queue_address: GpuVa,
    /// The dispatch id: the packet's index in the queue, packets (the `dispatch_id` SGPRs).
    /// Decoding leaves it 0; the processor fills it in.
    pub dispatch_id: u64,
}

impl Deref for DecodedKernelDispatch {
    type Target = packet::KernelDispatch;

    fn deref(&self) -> &packet::KernelDispatch {
        &self.packet
    }
}

/// A validated agent dispatch, as a
/// [`ProcessorHost::agent_dispatch`](super::ProcessorHost::agent_dispatch) receives it. The
/// processor does not touch `return_address`: the handler writes its result there if the
/// function has one.
///
/// Ref: HSA PSA 1.2 §2.9.7 "Agent dispatch packet" (`hsa_agent_dispatch_packet_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedAgentDispatch {
    /// The application-defined function id (`type`).
    pub function: u16,
    /// Where the function stores its result (may be null).
    pub return_address: GpuVa,
    /// The four 64-bit arguments.
    pub args: [u64; 4],
    /// Decremented at completion; null for none.
    pub completion_signal: SignalHandle,
}

impl From<&packet::AgentDispatch> for DecodedAgentDispatch {
    fn from(p: &packet::AgentDispatch) -> DecodedAgentDispatch {
        DecodedAgentDispatch {
            function: p.function_type,
            return_address: p.return_address,
            args: p.args,
            completion_signal: p.completion_signal,
        }
    }
}

/// What a packet asks the processor to do, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Command {
    /// Run a kernel.
    Kernel(DecodedKernelDispatch),
    /// Run an agent function.
    Agent(DecodedAgentDispatch),
    /// Wait for all non-null dependencies to reach 0 (null = satisfied).
    BarrierAnd(packet::BarrierAnd),
    /// Wait for any non-null dependency to reach 0 (null = never satisfies).
    BarrierOr(packet::BarrierOr),
    /// AMD barrier-value: wait until `(signal value & mask) cond value`, with the packet's
    /// raw `condition` as a [`SignalCondition`].
    BarrierValue(packet::BarrierValue, SignalCondition),
    /// AMD vendor packet of format `AMD_AQL_FORMAT_PM4_IB`: PM4 commands for the host's
    /// command processor ([`DecodedPm4Ib`](super::DecodedPm4Ib)).
    AmdPm4Ib(super::vendor::DecodedPm4Ib),
}

impl Command {
    /// The completion signal of any command.
    pub fn completion_signal(&self) -> SignalHandle {
        match self {
            Command::Kernel(k) => k.completion_signal,
            Command::Agent(a) => a.completion_signal,
            Command::BarrierAnd(b) => b.completion_signal,
            Command::BarrierOr(b) => b.completion_signal,
            Command::BarrierValue(b, _) => b.completion_signal,
            Command::AmdPm4Ib(p) => p.completion_signal,
        }
    }
}

/// Parses and validates a whole packet (header included) through [`AqlPacket::parse`] into
/// its header flags and a [`Command`]. Allocation-free; formats only on failure.
///
/// # Errors
/// `Status::InvalidPacketFormat` naming the field and value: every error of
/// [`AqlPacket::parse`] (undefined packet type, reserved fence scope, vendor packet that is not
/// AMD barrier-value, barrier-value with a null signal or a condition > 3, kernel dispatch with
/// dimensions outside 1..=3, a zero work-group or grid size, an unused dimension not 1, a grid
/// size below its work-group size, a kernel object null or not 64-byte aligned), and the
/// INVALID packet type (1); but a kernarg address need not be 16-byte aligned (the CP checks
/// no alignment there; `AqlPacket::parse` and the builders do); and, as the CP's
/// queue error codes and ROCR 5.2 (`amd_aql_queue.cpp`), a kernel dispatch's invalid
/// dimensions are `Status::IncompatibleArguments`, its null or misaligned kernel object
/// `Status::InvalidCodeObject`, and a work-group over [`MAX_WORKGROUP_ITEMS`] work-items
/// `Status::InvalidArgument`.
pub fn decode(bytes: &[u8; PACKET_SIZE_BYTES]) -> Result<(HeaderFlags, Command)> {
    if let Some(p) = kernel_dispatch(bytes) {
        let [x, y, z] = [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z];
        let items = u64::from(x) * u64::from(y) * u64::from(z);
        if items > u64::from(MAX_WORKGROUP_ITEMS) {
            crate::bail!(
                Status::InvalidArgument,
                "work-group size {x} x {y} x {z} is {items} work-items; must be <= \
                 {MAX_WORKGROUP_ITEMS}"
            );
        }
    }
    // The CP hands a kernel dispatch's kernarg_address to the kernel as it is (the kernarg
    // segment pointer's user SGPRs) and checks no alignment: HSA asks for 16 bytes, but
    // tinygrad, whose default on multi-XCC gfx942 (MI300X) is AQL, writes kernarg addresses
    // 8-byte aligned and runs there. The packet is checked with the address's low four bits
    // cleared and decoded with the address as written.
    let kernarg = kernel_dispatch(bytes).map(|p| p.kernarg_address);
    let mut checked = *bytes;
    if let Some(k) = kernarg {
        let at = core::mem::offset_of!(KernelDispatchPacket, kernarg_address);
        checked[at..at + 8].copy_from_slice(&(k & !15).to_le_bytes());
    }
    let packet = AqlPacket::from_array(checked)
        .parse()
        .map_err(|e| cp_status(bytes, e))?;
    let command = match packet {
        Packet::Invalid => {
            crate::bail!(Status::InvalidPacketFormat, "packet type is INVALID (1)")
        }
        Packet::KernelDispatch(mut k) => Command::Kernel(DecodedKernelDispatch {
            packet: {
                if let Some(a) = kernarg {
                    k.kernarg_address = GpuVa(a);
                }
                k
            },
            packet_address: GpuVa(0),
            queue_address: GpuVa(0),
            dispatch_id: 0,
        }),
        Packet::AgentDispatch(a) => Command::Agent(DecodedAgentDispatch::from(&a)),
        Packet::BarrierAnd(b) => Command::BarrierAnd(b),
        Packet::BarrierOr(b) => Command::BarrierOr(b),
        Packet::BarrierValue(b) => {
            // `parse` checked condition <= 3, so this conversion succeeds; an error would
            // still be a packet error, not a panic.
            let cond = SignalCondition::from_raw(b.condition).map_err(|e| {
                crate::error!(Status::InvalidPacketFormat, "barrier-value {}", e.detail())
            })?;
            Command::BarrierValue(b, cond)
        }
    };
    Ok((packet.flags(), command))
}

/// Work-items a work-group may have on every AMD GPU (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`
/// is 1024 on gfx8 to gfx12; larger is the CP's "group too large" queue error,
/// `INVALID_ARGUMENT`). Ref: ROCR `amd_gpu_agent.cpp`, `amd_aql_queue.cpp`.
pub const MAX_WORKGROUP_ITEMS: u32 = 1024;

/// The packet's fields when its header's type is KERNEL_DISPATCH (2), else `None`.
fn kernel_dispatch(bytes: &[u8; PACKET_SIZE_BYTES]) -> Option<KernelDispatchPacket> {
    let p = KernelDispatchPacket::read_from_bytes(&bytes[..]).ok()?;
    (p.header & 0xFF == crate::abi::packet::PacketType::KernelDispatch as u16).then_some(p)
}

/// The status of a kernel dispatch's parse error as the CP reports it: invalid dimensions are
/// `INCOMPATIBLE_ARGUMENTS` and a null or misaligned kernel object `INVALID_CODE_OBJECT` (the
/// queue error codes 2 and 8, [`crate::queue::inactive`]); every other error keeps its
/// status (`INVALID_PACKET_FORMAT`, code 32).
fn cp_status(bytes: &[u8; PACKET_SIZE_BYTES], e: crate::status::Error) -> crate::status::Error {
    let Some(p) = kernel_dispatch(bytes) else {
        return e;
    };
    if p.setup & 0x3 == 0 {
        e.with_status(Status::IncompatibleArguments)
    } else if p.kernel_object == 0 || p.kernel_object % 64 != 0 {
        e.with_status(Status::InvalidCodeObject)
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::packet::{
        BarrierValuePacket, FenceScope, KernelDispatchPacket, AMD_PACKET_TYPE_BARRIER_VALUE,
    };
    use zerocopy::IntoBytes;

    fn bytes_of<T: IntoBytes + zerocopy::Immutable>(p: &T) -> [u8; 64] {
        let mut out = [0u8; 64];
        out.copy_from_slice(p.as_bytes());
        out
    }

    fn dispatch() -> KernelDispatchPacket {
        KernelDispatchPacket {
            // type 2, barrier, acquire system (2 << 9), release system (2 << 11)
            header: 2 | 1 << 8 | 2 << 9 | 2 << 11,
            setup: 2,
            workgroup_size_x: 64,
            workgroup_size_y: 4,
            workgroup_size_z: 1,
            grid_size_x: 1000,
            grid_size_y: 8,
            grid_size_z: 1,
            kernel_object: 0x7f00_0000_1000,
            kernarg_address: 0x7f00_0000_2010,
            completion_signal: SignalHandle(0x40),
            ..Default::default()
        }
    }

    /// The largest work-group, 256 x 4 x 1 = 1024 work-items (MAX_WORKGROUP_ITEMS), decodes.
    #[test]
    fn a_work_group_of_exactly_1024_items_decodes() {
        let mut p = dispatch();
        p.workgroup_size_x = 256;
        let (_, c) = decode(&bytes_of(&p)).unwrap();
        assert!(matches!(c, Command::Kernel(k) if k.workgroup_size == [256, 4, 1]));
    }

    fn barrier_value() -> BarrierValuePacket {
        let mut p = BarrierValuePacket::default();
        p.header.header = 0;
        p.header.amd_format = AMD_PACKET_TYPE_BARRIER_VALUE;
        p.signal = SignalHandle(0x80);
        p.cond = 3;
        p.mask = -1;
        p
    }

    /// A mutation of a good packet and the exact message decoding it must give.
    type Case<T> = (fn(&mut T), &'static str);

    /// Decodes `good()` changed by each case's mutation and checks the exact message.
    fn assert_each_rejected<T: IntoBytes + zerocopy::Immutable>(
        good: fn() -> T,
        cases: &[Case<T>],
    ) {
        for &(mutate, want) in cases {
            let mut p = good();
            mutate(&mut p);
            let e = decode(&bytes_of(&p)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat, "{want}");
            assert_eq!(e.detail(), want);
        }
    }

    #[test]
    fn header_flags_follow_hsa_packet_header_t() {
        // 0x1502 is the header ROCR's samples use for a kernel dispatch with barrier and
        // system-scope fences: type 2 | 1<<8 | 2<<9 | 2<<11.
        let (flags, _) = decode(&bytes_of(&dispatch())).unwrap();
        assert_eq!(
            flags,
            HeaderFlags {
                barrier: true,
                acquire_fence_scope: FenceScope::System,
                release_fence_scope: FenceScope::System,
            }
        );
        let cases: [(u16, &str); 3] = [
            (
                0x0006,
                "packet type (header bits 0..8) is 6; must be in 0..=5",
            ),
            (
                2 | 3 << 9,
                "acquire fence scope (header bits 9..11) is 3; must be in 0..=2",
            ),
            (
                2 | 3 << 11,
                "release fence scope (header bits 11..13) is 3; must be in 0..=2",
            ),
        ];
        for (header, want) in cases {
            let mut p = dispatch();
            p.header = header;
            let e = decode(&bytes_of(&p)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat);
            assert_eq!(e.detail(), want);
        }
    }

    #[test]
    fn kernel_dispatch_decodes_and_counts_partial_workgroups() {
        let (_, c) = decode(&bytes_of(&dispatch())).unwrap();
        let Command::Kernel(k) = c else {
            panic!("not a kernel: {c:?}")
        };
        assert_eq!(k.dimensions, 2);
        assert_eq!(k.workgroup_size, [64, 4, 1]);
        assert_eq!(k.grid_size, [1000, 8, 1]);
        // ceil(1000 / 64) = 16, 8 / 4 = 2.
        assert_eq!(k.workgroup_count(), [16, 2, 1]);
        assert_eq!(k.kernel_object, GpuVa(0x7f00_0000_1000));
        assert_eq!(k.kernarg_address, GpuVa(0x7f00_0000_2010));
        assert_eq!(k.completion_signal, SignalHandle(0x40));
        assert_eq!((k.packet_address, k.queue_address), (GpuVa(0), GpuVa(0)));
        assert_eq!(k.dispatch_id, 0);
    }

    #[test]
    fn null_kernarg_address_is_accepted_as_hsa_h_allows() {
        let mut p = dispatch();
        p.kernarg_address = 0;
        let (_, c) = decode(&bytes_of(&p)).unwrap();
        let Command::Kernel(k) = c else {
            panic!("not a kernel: {c:?}")
        };
        assert!(k.kernarg_address.is_null());
        // The builder of the same packet is stricter.
        let e = k.packet.validate().unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "kernarg_address is null (0x0); must be non-null"
        );
    }

    #[test]
    fn kernel_dispatch_rejects_each_bad_field_by_name() {
        let cases: [Case<KernelDispatchPacket>; 5] = [
            (
                |p| p.workgroup_size_y = 0,
                "workgroup_size_y is 0; must be >= 1",
            ),
            (
                |p| p.workgroup_size_z = 2,
                "workgroup_size_z is 2; must be 1 when dimensions is 2",
            ),
            (|p| p.grid_size_x = 0, "grid_size_x is 0; must be >= 1"),
            (
                |p| p.grid_size_z = 5,
                "grid_size_z is 5; must be 1 when dimensions is 2",
            ),
            (
                |p| p.grid_size_y = 3,
                "grid_size_y is 3; must be >= workgroup_size_y (4)",
            ),
        ];
        assert_each_rejected(dispatch, &cases);
    }

    /// The CP takes a kernarg address of any alignment and passes it on unchanged (tinygrad's
    /// are 8-byte aligned); `AqlPacket::parse`, the spec-level check, still refuses it.
    #[test]
    fn kernel_dispatch_keeps_a_kernarg_address_of_any_alignment() {
        for addr in [0x1008u64, 0x7f0e_5500_0018, 0x1001] {
            let mut p = dispatch();
            p.kernarg_address = addr;
            let b = bytes_of(&p);
            let (_, command) = decode(&b).unwrap();
            let Command::Kernel(k) = command else {
                panic!("not a kernel dispatch")
            };
            assert_eq!(k.packet.kernarg_address, GpuVa(addr));
            assert_eq!(
                AqlPacket::from_array(b).parse().unwrap_err().detail(),
                std::format!("kernarg_address is {addr:#x}; must be 16-byte aligned")
            );
        }
    }

    /// The dispatch errors the CP reports with a queue error code of their own carry the
    /// status ROCR 5.2 gives that code (amd_aql_queue.cpp), as rocrtst's QueueValidation
    /// tests expect: invalid dimensions, a null or misaligned kernel object, a work-group
    /// over 1024 work-items.
    #[test]
    fn kernel_dispatch_errors_carry_the_cp_status() {
        /// A mutation, the status and the message it must give.
        type StatusCase = (fn(&mut KernelDispatchPacket), Status, &'static str);
        let cases: [StatusCase; 7] = [
            (
                |p| p.setup = 0,
                Status::IncompatibleArguments,
                "dimensions is 0; must be in 1..=3",
            ),
            // rocrtst's InvalidDimension: setup 4 (a reserved bit, 0 dimensions).
            (
                |p| p.setup = 4,
                Status::IncompatibleArguments,
                "dimensions is 0; must be in 1..=3",
            ),
            (
                |p| p.kernel_object = 0,
                Status::InvalidCodeObject,
                "kernel_object is null (0x0); must be non-null",
            ),
            (
                |p| p.kernel_object = 0x7f00_0000_1020,
                Status::InvalidCodeObject,
                "kernel_object is 0x7f0000001020; must be 64-byte aligned",
            ),
            (
                |p| p.workgroup_size_x = 0xFFFF,
                Status::InvalidArgument,
                "work-group size 65535 x 4 x 1 is 262140 work-items; must be <= 1024",
            ),
            (
                |p| p.workgroup_size_x = 257,
                Status::InvalidArgument,
                "work-group size 257 x 4 x 1 is 1028 work-items; must be <= 1024",
            ),
            (
                |p| {
                    p.setup = 3;
                    p.workgroup_size_y = 1;
                    p.workgroup_size_z = 0xFFFF;
                },
                Status::InvalidArgument,
                "work-group size 64 x 1 x 65535 is 4194240 work-items; must be <= 1024",
            ),
        ];
        for (mutate, status, want) in cases {
            let mut p = dispatch();
            mutate(&mut p);
            let e = decode(&bytes_of(&p)).unwrap_err();
            assert_eq!(e.status(), status, "{want}");
            assert_eq!(e.detail(), want);
        }
    }

    #[test]
    fn barrier_value_checks_format_signal_and_condition() {
        let p = barrier_value();
        let (_, c) = decode(&bytes_of(&p)).unwrap();
        let Command::BarrierValue(b, cond) = c else {
            panic!("not a barrier-value: {c:?}")
        };
        assert_eq!(cond, SignalCondition::Gte);
        assert_eq!((b.signal, b.mask, b.condition), (SignalHandle(0x80), -1, 3));
        // hsa_ext_amd.h: a 0 dependency signal is allowed (a satisfied dependency).
        let mut null = barrier_value();
        null.signal = SignalHandle::NULL;
        let (_, c) = decode(&bytes_of(&null)).unwrap();
        assert!(
            matches!(c, Command::BarrierValue(b, _) if b.signal.is_null()),
            "{c:?}"
        );
        let cases: [Case<BarrierValuePacket>; 2] = [
            (|p| p.cond = 4, "condition is 4; must be in 0..=3"),
            (
                |p| p.header.amd_format = 1,
                "AmdFormat (vendor packet byte 2) is 1; must be in 2..=2",
            ),
        ];
        assert_each_rejected(barrier_value, &cases);
    }

    #[test]
    fn barrier_value_conditions_map_to_signal_condition() {
        // hsa.h: HSA_SIGNAL_CONDITION_EQ 0, NE 1, LT 2, GTE 3.
        let want = [
            SignalCondition::Eq,
            SignalCondition::Ne,
            SignalCondition::Lt,
            SignalCondition::Gte,
        ];
        for (raw, want) in (0u32..).zip(want) {
            let mut p = barrier_value();
            p.cond = raw;
            let (_, c) = decode(&bytes_of(&p)).unwrap();
            assert!(
                matches!(c, Command::BarrierValue(_, got) if got == want),
                "{c:?}"
            );
        }
        // The processor compares `value & mask` signed.
        assert!(SignalCondition::Lt.holds(-1, 0));
        assert!(!SignalCondition::Gte.holds(-1, 0));
    }

    #[test]
    fn invalid_type_with_other_header_bits_is_an_error() {
        // A slot whose type byte is INVALID never reaches decode from the ring (peek stops
        // there), but decode on its own still refuses it.
        let mut b = [0u8; 64];
        b[0] = 1;
        b[1] = 0x01; // barrier bit
        let e = decode(&b).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(e.detail(), "packet type is INVALID (1)");
    }
}
