//! Decoding and validating one 64-byte packet the processor took off the ring.
//!
//! Packets are untrusted user input: every field the processor acts on is checked here and a
//! bad one becomes an `Error` naming the field and its value, never a panic. Decoding reads the
//! abi structs with zerocopy (`FromBytes::read_from_bytes`), so no `unsafe`.
//!
//! This is the processor's private stand-in for the shared checked view in `crate::packet`
//! (header codec and `AqlPacket<T>` view); once that lands, [`decode`] should parse through it
//! and keep only the processor-specific rules (kernarg alignment, barrier-value conditions).

use zerocopy::FromBytes;

use crate::abi::packet::{
    AgentDispatchPacket, BarrierPacket, BarrierValuePacket, FenceScope, KernelDispatchPacket,
    PacketType, AMD_PACKET_TYPE_BARRIER_VALUE, HEADER_ACQUIRE_FENCE_SCOPE_SHIFT,
    HEADER_BARRIER_SHIFT, HEADER_RELEASE_FENCE_SCOPE_SHIFT, PACKET_SIZE_BYTES,
};
use crate::abi::SignalHandle;
use crate::addr::GpuVa;
use crate::status::{Result, Status};

/// The fields of the 16-bit AQL header the processor obeys.
///
/// Ref: HSA PSA 1.2 §2.9.1 "Packet header" (`hsa_packet_header_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The packet type.
    pub packet_type: PacketType,
    /// The barrier bit: the packet may not launch before all earlier packets completed.
    pub barrier: bool,
    /// Scope of the acquire fence applied at launch.
    pub acquire: FenceScope,
    /// Scope of the release fence applied at completion.
    pub release: FenceScope,
}

/// Splits the 16-bit header.
///
/// # Errors
/// `Status::InvalidPacketFormat` for a type `hsa.h` does not define or a reserved fence scope
/// (3).
pub fn parse_header(header: u16) -> Result<Header> {
    let raw_type = (header & 0xff) as u8;
    let packet_type = PacketType::from_raw(raw_type).ok_or_else(|| {
        crate::error!(
            Status::InvalidPacketFormat,
            "packet type is {raw_type}; hsa_packet_type_t defines 0..=5"
        )
    })?;
    let scope = |shift: u32, name: &str| {
        let raw = ((header >> shift) & 0b11) as u8;
        FenceScope::from_raw(raw).ok_or_else(|| {
            crate::error!(
                Status::InvalidPacketFormat,
                "{name} fence scope is {raw} (reserved); must be 0, 1 or 2"
            )
        })
    };
    Ok(Header {
        packet_type,
        barrier: (header >> HEADER_BARRIER_SHIFT) & 1 == 1,
        acquire: scope(HEADER_ACQUIRE_FENCE_SCOPE_SHIFT, "acquire")?,
        release: scope(HEADER_RELEASE_FENCE_SCOPE_SHIFT, "release")?,
    })
}

/// A validated kernel dispatch: what a [`KernelExecutor`](super::ProcessorHost::execute_kernel)
/// receives.
///
/// Ref: HSA PSA 1.2 §2.9.6 "Kernel dispatch packet" (`hsa_kernel_dispatch_packet_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Grid dimensions: 1, 2 or 3.
    pub dimensions: u8,
    /// Work-group size (x, y, z), work-items; each >= 1, unused dimensions 1.
    pub workgroup_size: [u16; 3],
    /// Grid size (x, y, z), work-items; each >= 1, unused dimensions 1.
    pub grid_size: [u32; 3],
    /// Private segment bytes per work-item.
    pub private_segment_size_bytes: u32,
    /// Group segment (LDS) bytes per work-group.
    pub group_segment_size_bytes: u32,
    /// The kernel object: device address of the kernel descriptor; never null.
    pub kernel_object: GpuVa,
    /// Device address of the kernarg segment: 16-byte aligned, or null for a kernel without
    /// arguments.
    pub kernarg_address: GpuVa,
    /// Decremented at completion; null for none.
    pub completion_signal: SignalHandle,
    /// Device address of the packet's 64-byte slot in the ring: what the kernel's dispatch
    /// pointer SGPRs hold (AMDGPUUsage "Initial Kernel Execution State", `dispatch_ptr`).
    /// [`decode`] leaves it 0; [`PacketProcessor`](super::PacketProcessor) fills it in.
    pub packet_address: GpuVa,
    /// Device address of the queue's `amd_queue_t` (the `queue_ptr` SGPRs). [`decode`]
    /// leaves it 0; the processor fills it in.
    pub queue_address: GpuVa,
    /// The dispatch id: the packet's index in the queue, packets (the `dispatch_id` SGPRs).
    /// [`decode`] leaves it 0; the processor fills it in.
    pub dispatch_id: u64,
}

impl KernelDispatch {
    /// Number of work-groups in each dimension (partial work-groups counted), per HSA PSA
    /// §2.9.6: `ceil(grid_size / workgroup_size)`.
    pub fn workgroup_count(&self) -> [u32; 3] {
        let mut out = [0; 3];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.grid_size[i].div_ceil(u32::from(self.workgroup_size[i]));
        }
        out
    }
}

/// A validated agent dispatch. The processor does not touch `return_address`: the handler
/// writes its result there if the function has one.
///
/// Ref: HSA PSA 1.2 §2.9.7 "Agent dispatch packet" (`hsa_agent_dispatch_packet_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentDispatch {
    /// The application-defined function id (`type`).
    pub function: u16,
    /// Where the function stores its result (may be null).
    pub return_address: GpuVa,
    /// The four 64-bit arguments.
    pub args: [u64; 4],
    /// Decremented at completion; null for none.
    pub completion_signal: SignalHandle,
}

/// `hsa_signal_condition_t` as used by AMD's barrier-value packet.
///
/// Ref: `hsa.h` (`HSA_SIGNAL_CONDITION_EQ` 0, `NE` 1, `LT` 2, `GTE` 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `(value & mask) == compare`.
    Eq,
    /// `(value & mask) != compare`.
    Ne,
    /// `(value & mask) < compare`.
    Lt,
    /// `(value & mask) >= compare`.
    Gte,
}

impl Condition {
    /// Whether `lhs cond rhs` holds.
    pub fn holds(self, lhs: i64, rhs: i64) -> bool {
        match self {
            Condition::Eq => lhs == rhs,
            Condition::Ne => lhs != rhs,
            Condition::Lt => lhs < rhs,
            Condition::Gte => lhs >= rhs,
        }
    }
}

/// A validated barrier-value packet.
///
/// Ref: `hsa_amd_barrier_value_packet_t` (`hsa_ext_amd.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierValue {
    /// The signal compared; never null.
    pub signal: SignalHandle,
    /// The compare value.
    pub value: i64,
    /// ANDed with the signal value first.
    pub mask: i64,
    /// The comparison.
    pub cond: Condition,
    /// Decremented at completion; null for none.
    pub completion_signal: SignalHandle,
}

/// What a packet asks for, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run a kernel.
    Kernel(KernelDispatch),
    /// Run an agent function.
    Agent(AgentDispatch),
    /// Wait for all non-null dependencies to reach 0.
    BarrierAnd {
        /// Dependencies (null = satisfied).
        deps: [SignalHandle; 5],
        /// Decremented at completion; null for none.
        completion_signal: SignalHandle,
    },
    /// Wait for any non-null dependency to reach 0.
    BarrierOr {
        /// Dependencies (null = never satisfies).
        deps: [SignalHandle; 5],
        /// Decremented at completion; null for none.
        completion_signal: SignalHandle,
    },
    /// AMD barrier-value.
    BarrierValue(BarrierValue),
}

impl Command {
    /// The completion signal of any command.
    pub fn completion_signal(&self) -> SignalHandle {
        match self {
            Command::Kernel(k) => k.completion_signal,
            Command::Agent(a) => a.completion_signal,
            Command::BarrierAnd {
                completion_signal, ..
            }
            | Command::BarrierOr {
                completion_signal, ..
            } => *completion_signal,
            Command::BarrierValue(b) => b.completion_signal,
        }
    }
}

fn read<T: FromBytes>(bytes: &[u8; PACKET_SIZE_BYTES]) -> T {
    // The abi packet structs are exactly 64 bytes (asserted in abi::packet), so this cannot
    // fail; the fallback keeps the no-panic contract without an unwrap.
    T::read_from_bytes(bytes.as_slice()).unwrap_or_else(|_| T::new_zeroed())
}

/// Validates a kernel dispatch packet.
fn kernel(p: &KernelDispatchPacket) -> Result<KernelDispatch> {
    let dimensions = (p.setup & 0b11) as u8;
    if !(1..=3).contains(&dimensions) {
        crate::bail!(
            Status::InvalidPacketFormat,
            "kernel dispatch setup.dimensions is {dimensions}; must be 1, 2 or 3"
        );
    }
    let wg = [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z];
    let grid = [p.grid_size_x, p.grid_size_y, p.grid_size_z];
    const AXES: [&str; 3] = ["x", "y", "z"];
    for i in 0..3 {
        let used = i < usize::from(dimensions);
        if wg[i] == 0 || (!used && wg[i] != 1) {
            crate::bail!(
                Status::InvalidPacketFormat,
                "workgroup_size_{} is {} with {dimensions} dimension(s); must be {}",
                AXES[i],
                wg[i],
                if used { ">= 1" } else { "1 (unused)" }
            );
        }
        if grid[i] == 0 || (!used && grid[i] != 1) {
            crate::bail!(
                Status::InvalidPacketFormat,
                "grid_size_{} is {} with {dimensions} dimension(s); must be {}",
                AXES[i],
                grid[i],
                if used { ">= 1" } else { "1 (unused)" }
            );
        }
    }
    if p.kernel_object == 0 {
        crate::bail!(Status::InvalidPacketFormat, "kernel_object is null");
    }
    if p.kernarg_address % 16 != 0 {
        crate::bail!(
            Status::InvalidPacketFormat,
            "kernarg_address {:#x} is not 16-byte aligned",
            p.kernarg_address
        );
    }
    Ok(KernelDispatch {
        dimensions,
        workgroup_size: wg,
        grid_size: grid,
        private_segment_size_bytes: p.private_segment_size,
        group_segment_size_bytes: p.group_segment_size,
        kernel_object: GpuVa(p.kernel_object),
        kernarg_address: GpuVa(p.kernarg_address),
        completion_signal: p.completion_signal,
        packet_address: GpuVa(0),
        queue_address: GpuVa(0),
        dispatch_id: 0,
    })
}

/// Decodes and validates a whole packet (header included) into a [`Command`].
///
/// # Errors
/// `Status::InvalidPacketFormat` naming the field for: an undefined packet type, a reserved
/// fence scope, the INVALID type, a vendor packet that is not AMD barrier-value, a barrier-value
/// with a null signal or a condition > 3, a kernel dispatch with dimensions outside 1..=3, a
/// zero work-group or grid size, an unused dimension not 1, a null kernel object or a kernarg
/// address not 16-byte aligned.
pub fn decode(bytes: &[u8; PACKET_SIZE_BYTES]) -> Result<(Header, Command)> {
    let header = parse_header(u16::from_le_bytes([bytes[0], bytes[1]]))?;
    let command = match header.packet_type {
        PacketType::Invalid => {
            crate::bail!(Status::InvalidPacketFormat, "packet type is INVALID (1)")
        }
        PacketType::KernelDispatch => Command::Kernel(kernel(&read(bytes))?),
        PacketType::AgentDispatch => {
            let p: AgentDispatchPacket = read(bytes);
            Command::Agent(AgentDispatch {
                function: p.type_,
                return_address: GpuVa(p.return_address),
                args: p.arg,
                completion_signal: p.completion_signal,
            })
        }
        PacketType::BarrierAnd => {
            let p: BarrierPacket = read(bytes);
            Command::BarrierAnd {
                deps: p.dep_signal,
                completion_signal: p.completion_signal,
            }
        }
        PacketType::BarrierOr => {
            let p: BarrierPacket = read(bytes);
            Command::BarrierOr {
                deps: p.dep_signal,
                completion_signal: p.completion_signal,
            }
        }
        PacketType::VendorSpecific => {
            let p: BarrierValuePacket = read(bytes);
            if p.header.amd_format != AMD_PACKET_TYPE_BARRIER_VALUE {
                crate::bail!(
                    Status::InvalidPacketFormat,
                    "vendor packet AmdFormat is {}; only barrier-value ({}) is supported",
                    p.header.amd_format,
                    AMD_PACKET_TYPE_BARRIER_VALUE
                );
            }
            if p.signal.is_null() {
                crate::bail!(Status::InvalidPacketFormat, "barrier-value signal is null");
            }
            let cond = match p.cond {
                0 => Condition::Eq,
                1 => Condition::Ne,
                2 => Condition::Lt,
                3 => Condition::Gte,
                c => crate::bail!(
                    Status::InvalidPacketFormat,
                    "barrier-value cond is {c}; hsa_signal_condition_t defines 0..=3"
                ),
            };
            Command::BarrierValue(BarrierValue {
                signal: p.signal,
                value: p.value,
                mask: p.mask,
                cond,
                completion_signal: p.completion_signal,
            })
        }
    };
    Ok((header, command))
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn header_fields_follow_hsa_packet_header_t() {
        // 0x1502 is the header ROCR's samples use for a kernel dispatch with barrier and
        // system-scope fences: type 2 | 1<<8 | 2<<9 | 2<<11.
        let h = parse_header(0x1502).unwrap();
        assert_eq!(h.packet_type, PacketType::KernelDispatch);
        assert!(h.barrier);
        assert_eq!(h.acquire, FenceScope::System);
        assert_eq!(h.release, FenceScope::System);
        let e = parse_header(0x0006).unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert!(e.detail().contains("6"), "{}", e.detail());
        let e = parse_header(2 | 3 << 9).unwrap_err();
        assert!(
            e.detail().contains("acquire fence scope is 3"),
            "{}",
            e.detail()
        );
    }

    #[test]
    fn kernel_dispatch_decodes_and_counts_partial_workgroups() {
        let (h, c) = decode(&bytes_of(&dispatch())).unwrap();
        assert!(h.barrier);
        let Command::Kernel(k) = c else {
            panic!("not a kernel: {c:?}")
        };
        assert_eq!(k.dimensions, 2);
        assert_eq!(k.workgroup_size, [64, 4, 1]);
        assert_eq!(k.grid_size, [1000, 8, 1]);
        assert_eq!(k.workgroup_count(), [16, 2, 1]);
        assert_eq!(k.kernarg_address, GpuVa(0x7f00_0000_2010));
    }

    #[test]
    fn kernel_dispatch_rejects_each_bad_field_by_name() {
        type Case = (fn(&mut KernelDispatchPacket), &'static str);
        let cases: [Case; 7] = [
            (|p| p.setup = 0, "setup.dimensions is 0"),
            (|p| p.workgroup_size_y = 0, "workgroup_size_y is 0"),
            (|p| p.workgroup_size_z = 2, "workgroup_size_z is 2"),
            (|p| p.grid_size_x = 0, "grid_size_x is 0"),
            (|p| p.grid_size_z = 5, "grid_size_z is 5"),
            (|p| p.kernel_object = 0, "kernel_object is null"),
            (|p| p.kernarg_address = 0x1008, "kernarg_address 0x1008"),
        ];
        for (mutate, expect) in cases {
            let mut p = dispatch();
            mutate(&mut p);
            let e = decode(&bytes_of(&p)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat);
            assert!(e.detail().contains(expect), "{expect}: {}", e.detail());
        }
    }

    #[test]
    fn barrier_value_checks_format_signal_and_condition() {
        let mut p = BarrierValuePacket::default();
        p.header.header = 0;
        p.header.amd_format = AMD_PACKET_TYPE_BARRIER_VALUE;
        p.signal = SignalHandle(0x80);
        p.cond = 3;
        p.mask = -1;
        let (_, c) = decode(&bytes_of(&p)).unwrap();
        assert!(matches!(
            c,
            Command::BarrierValue(BarrierValue {
                cond: Condition::Gte,
                ..
            })
        ));
        p.cond = 4;
        assert!(decode(&bytes_of(&p))
            .unwrap_err()
            .detail()
            .contains("cond is 4"));
        p.cond = 0;
        p.signal = SignalHandle::NULL;
        assert!(decode(&bytes_of(&p))
            .unwrap_err()
            .detail()
            .contains("signal is null"));
        p.signal = SignalHandle(0x80);
        p.header.amd_format = 1;
        assert!(decode(&bytes_of(&p))
            .unwrap_err()
            .detail()
            .contains("AmdFormat is 1"));
    }

    #[test]
    fn conditions_compare_signed() {
        assert!(Condition::Lt.holds(-1, 0));
        assert!(!Condition::Gte.holds(-1, 0));
        assert!(Condition::Ne.holds(3, 4));
        assert!(Condition::Eq.holds(0, 0));
    }
}
