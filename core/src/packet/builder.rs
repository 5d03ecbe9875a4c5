//! Typed packets (smoltcp `Repr` style): a plain struct of fields per packet kind, validated by
//! `emit`, which writes the 64 bytes of [`EncodedPacket`]. [`AqlPacket::parse`] returns the same
//! structs and applies the same checks, so `parse(emit(p)) == p` for every valid `p`.
//!
//! # Builders are stricter than the wire format in one rule
//! `hsa.h` says a kernel dispatch's `kernarg_address` "May be NULL" (a kernel without
//! arguments), and the command processor runs such a packet. The builders still reject a null
//! kernarg address, because hsa-rt always passes a kernarg segment (the AMDGPU ABI places the
//! hidden arguments there) and a null one from our own code is a bug; [`AqlPacket::parse`], the
//! consumer of packets anyone may have written, accepts it. Every other rule is the same on
//! both paths.
//!
//! Validation failures from the builders are [`Status::InvalidArgument`]; the same rule broken
//! by a packet read from a queue is [`Status::InvalidPacketFormat`]. Either way the message
//! names the field and its value, e.g. `"workgroup_size_y is 0; must be >= 1"`.
//!
//! Ref: HSA PSA 1.2 §2.9.6–2.9.9; `hsa.h` (field rules in the comments of
//! `hsa_kernel_dispatch_packet_t`); `hsa_ext_amd.h` (`hsa_amd_barrier_value_packet_t`);
//! AMDGPUUsage "Kernel Descriptor" (64-byte alignment) and "Kernel Argument" (16-byte
//! kernarg alignment).
//!
//! [`AqlPacket::parse`]: super::AqlPacket::parse

use zerocopy::transmute;

use super::header::{HeaderFlags, PacketHeader, Rule, Violation};
use super::EncodedPacket;
use crate::abi::packet::{
    AgentDispatchPacket, AmdVendorPacketHeader, BarrierPacket, BarrierValuePacket,
    KernelDispatchPacket, PacketType, AMD_PACKET_TYPE_BARRIER_VALUE, PACKET_SIZE_BYTES,
};
use crate::abi::SignalHandle;
use crate::{GpuVa, Result, Status};

/// Maximum number of dependency signals of a barrier-AND or barrier-OR packet.
pub const MAX_DEP_SIGNALS: usize = 5;

/// Required alignment of a kernel object (the kernel descriptor), bytes. Ref: AMDGPUUsage
/// "Kernel Descriptor": 64-byte aligned.
pub const KERNEL_OBJECT_ALIGN_BYTES: u64 = 64;

/// Required alignment of a kernarg segment address, bytes. Ref: AMDGPUUsage "Kernel
/// Argument": the kernarg segment is 16-byte aligned.
pub const KERNARG_ALIGN_BYTES: u64 = 16;

/// Highest `hsa_signal_condition_t` value a barrier-value packet accepts (GTE, 3).
pub const MAX_BARRIER_VALUE_CONDITION: u32 = 3;

const WORKGROUP_NAMES: [&str; 3] = ["workgroup_size_x", "workgroup_size_y", "workgroup_size_z"];
const GRID_NAMES: [&str; 3] = ["grid_size_x", "grid_size_y", "grid_size_z"];

/// Packs the finished packet bytes into an [`EncodedPacket`]: the header word is taken out and
/// the first 32 bits are replaced by an INVALID header (type 1, second 16 bits 0).
fn encode(mut bytes: [u8; PACKET_SIZE_BYTES]) -> EncodedPacket {
    let header_word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    bytes[..4].copy_from_slice(&u32::from(PacketHeader::INVALID.raw()).to_le_bytes());
    EncodedPacket { bytes, header_word }
}

/// A kernel dispatch packet: launch `kernel_object` over a 1- to 3-dimensional grid.
///
/// Ref: HSA PSA 1.2 §2.9.6; `hsa_kernel_dispatch_packet_t` in `hsa.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelDispatch {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// Number of grid dimensions, 1..=3 (`setup` bits 0..2).
    pub dimensions: u8,
    /// Work-group size per dimension (x, y, z), work-items; each >= 1, and exactly 1 in the
    /// dimensions the grid does not use.
    pub workgroup_size: [u16; 3],
    /// Grid size per dimension (x, y, z), work-items; each >= 1 and >= the work-group size in
    /// that dimension, and exactly 1 in the dimensions the grid does not use.
    pub grid_size: [u32; 3],
    /// Private (scratch) memory per work-item, bytes.
    pub private_segment_size_bytes: u32,
    /// Group (LDS) memory per work-group, bytes.
    pub group_segment_size_bytes: u32,
    /// Device address of the kernel descriptor; non-null and 64-byte aligned.
    pub kernel_object: GpuVa,
    /// Device address of the kernarg segment; 16-byte aligned. `hsa.h` allows NULL for
    /// kernels without arguments and [`AqlPacket::parse`](super::AqlPacket::parse) accepts it, but the builder
    /// requires a non-null address (module docs: builders are stricter than the wire format).
    pub kernarg_address: GpuVa,
    /// Signal decremented at completion; [`SignalHandle::NULL`] for none.
    pub completion_signal: SignalHandle,
}

impl KernelDispatch {
    /// A 1-dimensional dispatch of `grid_size_x` work-items in work-groups of
    /// `workgroup_size_x`, with system-scope fences and no completion signal or segment sizes.
    pub const fn one_dimensional(
        kernel_object: GpuVa,
        kernarg_address: GpuVa,
        workgroup_size_x: u16,
        grid_size_x: u32,
    ) -> KernelDispatch {
        KernelDispatch {
            flags: HeaderFlags::SYSTEM,
            dimensions: 1,
            workgroup_size: [workgroup_size_x, 1, 1],
            grid_size: [grid_size_x, 1, 1],
            private_segment_size_bytes: 0,
            group_segment_size_bytes: 0,
            kernel_object,
            kernarg_address,
            completion_signal: SignalHandle::NULL,
        }
    }

    /// Number of work-groups in each dimension, partial work-groups counted:
    /// `ceil(grid_size / workgroup_size)` (HSA PSA 1.2 §2.9.6). A work-group size of 0 (only in
    /// an unvalidated value) counts as 1, so this never divides by zero.
    pub fn workgroup_count(&self) -> [u32; 3] {
        let mut out = [0; 3];
        for (o, (grid, wg)) in out
            .iter_mut()
            .zip(self.grid_size.iter().zip(self.workgroup_size))
        {
            *o = grid.div_ceil(u32::from(wg.max(1)));
        }
        out
    }

    /// The builder's checks: the wire format's ([`KernelDispatch::check_wire`]) and a non-null
    /// kernarg address.
    pub(crate) fn check(&self) -> core::result::Result<(), Violation> {
        self.check_wire()?;
        if self.kernarg_address.is_null() {
            return Err(Violation::new("kernarg_address", 0, Rule::NonNull));
        }
        Ok(())
    }

    /// What every kernel dispatch on the wire must satisfy, the checks `AqlPacket::parse`
    /// applies: as [`KernelDispatch::check`] but a null kernarg address is allowed (`hsa.h`:
    /// "May be NULL").
    pub(crate) fn check_wire(&self) -> core::result::Result<(), Violation> {
        let dims = self.dimensions;
        if !(1..=3).contains(&dims) {
            return Err(Violation::new(
                "dimensions",
                dims.into(),
                Rule::InRange(1, 3),
            ));
        }
        let axes = WORKGROUP_NAMES.iter().zip(self.workgroup_size);
        for (i, (&name, wg)) in axes.enumerate() {
            let used = i < usize::from(dims);
            let wg = u64::from(wg);
            if wg == 0 {
                return Err(Violation::new(name, 0, Rule::AtLeast(1)));
            }
            if !used && wg != 1 {
                let rule = Rule::OneWhenUnused { dimensions: dims };
                return Err(Violation::new(name, wg, rule));
            }
        }
        let axes = GRID_NAMES
            .iter()
            .zip(self.grid_size)
            .zip(WORKGROUP_NAMES.iter().zip(self.workgroup_size));
        for (i, ((&name, grid), (&wg_name, wg))) in axes.enumerate() {
            let used = i < usize::from(dims);
            let grid = u64::from(grid);
            if grid == 0 {
                return Err(Violation::new(name, 0, Rule::AtLeast(1)));
            }
            if !used && grid != 1 {
                let rule = Rule::OneWhenUnused { dimensions: dims };
                return Err(Violation::new(name, grid, rule));
            }
            if grid < u64::from(wg) {
                let rule = Rule::NotBelow {
                    other: wg_name,
                    other_value: wg.into(),
                };
                return Err(Violation::new(name, grid, rule));
            }
        }
        check_address(
            "kernel_object",
            self.kernel_object,
            KERNEL_OBJECT_ALIGN_BYTES,
        )?;
        if self.kernarg_address.is_null() {
            return Ok(());
        }
        check_address("kernarg_address", self.kernarg_address, KERNARG_ALIGN_BYTES)
    }

    /// Checks the fields without encoding.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] naming the field and value when: `dimensions` is not in
    /// 1..=3; a `workgroup_size_*` or `grid_size_*` is 0, or is not 1 in a dimension the grid
    /// does not use; a `grid_size_*` is below its `workgroup_size_*`; `kernel_object` is null
    /// or not 64-byte aligned; `kernarg_address` is null or not 16-byte aligned.
    pub fn validate(&self) -> Result<()> {
        self.check()
            .map_err(|v| v.into_error(Status::InvalidArgument))
    }

    /// Validates and encodes the packet.
    ///
    /// # Errors
    /// As [`KernelDispatch::validate`]: [`Status::InvalidArgument`] naming the bad field.
    pub fn emit(&self) -> Result<EncodedPacket> {
        self.validate()?;
        let p = KernelDispatchPacket {
            header: PacketHeader::new(PacketType::KernelDispatch, self.flags).raw(),
            setup: u16::from(self.dimensions),
            workgroup_size_x: self.workgroup_size[0],
            workgroup_size_y: self.workgroup_size[1],
            workgroup_size_z: self.workgroup_size[2],
            reserved0: 0,
            grid_size_x: self.grid_size[0],
            grid_size_y: self.grid_size[1],
            grid_size_z: self.grid_size[2],
            private_segment_size: self.private_segment_size_bytes,
            group_segment_size: self.group_segment_size_bytes,
            kernel_object: self.kernel_object.get(),
            kernarg_address: self.kernarg_address.get(),
            reserved2: 0,
            completion_signal: self.completion_signal,
        };
        let bytes: [u8; PACKET_SIZE_BYTES] = transmute!(p);
        Ok(encode(bytes))
    }
}

fn check_address(
    field: &'static str,
    addr: GpuVa,
    align_bytes: u64,
) -> core::result::Result<(), Violation> {
    if addr.is_null() {
        return Err(Violation::new(field, 0, Rule::NonNull));
    }
    if !addr.is_aligned(align_bytes) {
        return Err(Violation::new(
            field,
            addr.get(),
            // The alignments are 16 and 64 (`KERNARG_ALIGN_BYTES`, `KERNEL_OBJECT_ALIGN_BYTES`).
            Rule::Aligned(u32::try_from(align_bytes).unwrap_or(u32::MAX)),
        ));
    }
    Ok(())
}

fn deps_from_slice(deps: &[SignalHandle]) -> Result<[SignalHandle; MAX_DEP_SIGNALS]> {
    let mut out = [SignalHandle::NULL; MAX_DEP_SIGNALS];
    if deps.len() > MAX_DEP_SIGNALS {
        return Err(Violation::new(
            "dependency signal count",
            deps.len() as u64,
            Rule::AtMost(MAX_DEP_SIGNALS as u32),
        )
        .into_error(Status::InvalidArgument));
    }
    out[..deps.len()].copy_from_slice(deps);
    Ok(out)
}

macro_rules! barrier_repr {
    ($(#[$doc:meta])* $name:ident, $ty:expr, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            /// Barrier bit and fence scopes.
            pub flags: HeaderFlags,
            /// The dependency signals; [`SignalHandle::NULL`] entries are unused.
            pub dep_signals: [SignalHandle; MAX_DEP_SIGNALS],
            /// Signal decremented when the barrier resolves; [`SignalHandle::NULL`] for none.
            pub completion_signal: SignalHandle,
        }

        impl $name {
            #[doc = concat!("A ", $what, " packet waiting on `deps` (the remaining slots null).")]
            ///
            /// # Errors
            /// [`Status::InvalidArgument`] when `deps` holds more than [`MAX_DEP_SIGNALS`] (5)
            /// signals; the message gives the count.
            pub fn new(
                flags: HeaderFlags,
                deps: &[SignalHandle],
                completion_signal: SignalHandle,
            ) -> Result<$name> {
                Ok($name { flags, dep_signals: deps_from_slice(deps)?, completion_signal })
            }

            /// The non-null dependency signals, in slot order.
            pub fn deps(&self) -> impl Iterator<Item = SignalHandle> + '_ {
                self.dep_signals.iter().copied().filter(|s| !s.is_null())
            }

            pub(crate) fn check(&self) -> core::result::Result<(), Violation> {
                // Every combination of the typed fields is a valid packet.
                Ok(())
            }

            /// Checks the fields without encoding.
            ///
            /// # Errors
            /// None today: every value of the typed fields is valid (the dependency count is
            /// checked by the constructor). Kept for a uniform builder API.
            pub fn validate(&self) -> Result<()> {
                self.check().map_err(|v| v.into_error(Status::InvalidArgument))
            }

            /// Encodes the packet.
            ///
            /// # Errors
            /// As [`Self::validate`].
            pub fn emit(&self) -> Result<EncodedPacket> {
                self.validate()?;
                let p = BarrierPacket {
                    header: PacketHeader::new($ty, self.flags).raw(),
                    reserved0: 0,
                    reserved1: 0,
                    dep_signal: self.dep_signals,
                    reserved2: 0,
                    completion_signal: self.completion_signal,
                };
                let bytes: [u8; PACKET_SIZE_BYTES] = transmute!(p);
                Ok(encode(bytes))
            }
        }
    };
}

barrier_repr!(
    /// A barrier-AND packet: completes when every non-null dependency signal is 0.
    ///
    /// Ref: HSA PSA 1.2 §2.9.8; `hsa_barrier_and_packet_t` in `hsa.h`.
    BarrierAnd,
    PacketType::BarrierAnd,
    "barrier-AND"
);
barrier_repr!(
    /// A barrier-OR packet: completes when any non-null dependency signal is 0.
    ///
    /// Ref: HSA PSA 1.2 §2.9.9; `hsa_barrier_or_packet_t` in `hsa.h`.
    BarrierOr,
    PacketType::BarrierOr,
    "barrier-OR"
);

/// An agent dispatch packet: ask the agent to run the function it registered as
/// `function_type`.
///
/// Ref: HSA PSA 1.2 §2.9.7; `hsa_agent_dispatch_packet_t` in `hsa.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AgentDispatch {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// The application-defined function id (`type` in `hsa.h`).
    pub function_type: u16,
    /// Where the function stores its result; may be null.
    pub return_address: GpuVa,
    /// The four 64-bit arguments.
    pub args: [u64; 4],
    /// Signal decremented at completion; [`SignalHandle::NULL`] for none.
    pub completion_signal: SignalHandle,
}

impl AgentDispatch {
    /// Checks the fields without encoding: there is nothing to check, `hsa.h`
    /// (`hsa_agent_dispatch_packet_t`) puts no constraint on `type` (application-defined),
    /// `return_address` or the arguments. Kept for a uniform builder API.
    ///
    /// # Errors
    /// None: every value of the fields is valid.
    pub fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// Encodes the packet.
    ///
    /// # Errors
    /// As [`AgentDispatch::validate`].
    pub fn emit(&self) -> Result<EncodedPacket> {
        self.validate()?;
        let p = AgentDispatchPacket {
            header: PacketHeader::new(PacketType::AgentDispatch, self.flags).raw(),
            type_: self.function_type,
            reserved0: 0,
            return_address: self.return_address.get(),
            arg: self.args,
            reserved2: 0,
            completion_signal: self.completion_signal,
        };
        let bytes: [u8; PACKET_SIZE_BYTES] = transmute!(p);
        Ok(encode(bytes))
    }
}

/// AMD's barrier-value packet (vendor-specific, format `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`):
/// completes when `(signal.value & mask) <condition> value` holds, or at once when `signal`
/// is null: `hsa_ext_amd.h` makes a 0 handle a satisfied dependency (HIP 7 puts such a
/// packet on the queue at `hipEventRecord`).
///
/// Ref: `hsa_amd_barrier_value_packet_t` in `hsa_ext_amd.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BarrierValue {
    /// Barrier bit and fence scopes.
    pub flags: HeaderFlags,
    /// The signal whose value is compared; [`SignalHandle::NULL`] for a satisfied
    /// dependency.
    pub signal: SignalHandle,
    /// The value compared against.
    pub value: i64,
    /// ANDed with the signal's value before comparing.
    pub mask: i64,
    /// `hsa_signal_condition_t`: EQ 0, NE 1, LT 2, GTE 3.
    pub condition: u32,
    /// Signal decremented when the condition holds; [`SignalHandle::NULL`] for none.
    pub completion_signal: SignalHandle,
}

impl BarrierValue {
    pub(crate) fn check(&self) -> core::result::Result<(), Violation> {
        if self.condition > MAX_BARRIER_VALUE_CONDITION {
            return Err(Violation::new(
                "condition",
                self.condition.into(),
                Rule::InRange(0, MAX_BARRIER_VALUE_CONDITION),
            ));
        }
        Ok(())
    }

    /// Checks the fields without encoding.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when `condition` is above 3.
    pub fn validate(&self) -> Result<()> {
        self.check()
            .map_err(|v| v.into_error(Status::InvalidArgument))
    }

    /// Validates and encodes the packet. The header word's upper 16 bits are
    /// `AmdFormat | reserved << 8` = 2.
    ///
    /// # Errors
    /// As [`BarrierValue::validate`].
    pub fn emit(&self) -> Result<EncodedPacket> {
        self.validate()?;
        let p = BarrierValuePacket {
            header: AmdVendorPacketHeader {
                header: PacketHeader::new(PacketType::VendorSpecific, self.flags).raw(),
                amd_format: AMD_PACKET_TYPE_BARRIER_VALUE,
                reserved: 0,
            },
            reserved0: 0,
            signal: self.signal,
            value: self.value,
            mask: self.mask,
            cond: self.condition,
            reserved1: 0,
            reserved2: 0,
            reserved3: 0,
            completion_signal: self.completion_signal,
        };
        let bytes: [u8; PACKET_SIZE_BYTES] = transmute!(p);
        Ok(encode(bytes))
    }
}

/// Any packet: what [`AqlPacket::parse`](super::AqlPacket::parse) returns and
/// [`Packet::emit`] encodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Packet {
    /// Type INVALID (1): the slot holds no packet. Its other header bits and body are ignored.
    Invalid,
    /// A kernel dispatch.
    KernelDispatch(KernelDispatch),
    /// A barrier-AND.
    BarrierAnd(BarrierAnd),
    /// A barrier-OR.
    BarrierOr(BarrierOr),
    /// An agent dispatch.
    AgentDispatch(AgentDispatch),
    /// AMD's barrier-value (vendor-specific) packet.
    BarrierValue(BarrierValue),
}

impl Packet {
    /// The packet's type.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            Packet::Invalid => PacketType::Invalid,
            Packet::KernelDispatch(_) => PacketType::KernelDispatch,
            Packet::BarrierAnd(_) => PacketType::BarrierAnd,
            Packet::BarrierOr(_) => PacketType::BarrierOr,
            Packet::AgentDispatch(_) => PacketType::AgentDispatch,
            Packet::BarrierValue(_) => PacketType::VendorSpecific,
        }
    }

    /// The completion signal ([`SignalHandle::NULL`] for [`Packet::Invalid`] or none).
    pub const fn completion_signal(&self) -> SignalHandle {
        match self {
            Packet::Invalid => SignalHandle::NULL,
            Packet::KernelDispatch(p) => p.completion_signal,
            Packet::BarrierAnd(p) => p.completion_signal,
            Packet::BarrierOr(p) => p.completion_signal,
            Packet::AgentDispatch(p) => p.completion_signal,
            Packet::BarrierValue(p) => p.completion_signal,
        }
    }

    /// The barrier bit and fence scopes ([`HeaderFlags::NONE`] for [`Packet::Invalid`]).
    pub const fn flags(&self) -> HeaderFlags {
        match self {
            Packet::Invalid => HeaderFlags::NONE,
            Packet::KernelDispatch(p) => p.flags,
            Packet::BarrierAnd(p) => p.flags,
            Packet::BarrierOr(p) => p.flags,
            Packet::AgentDispatch(p) => p.flags,
            Packet::BarrierValue(p) => p.flags,
        }
    }

    /// The checks [`AqlPacket::parse`](super::AqlPacket::parse) applies: each kind's builder
    /// checks, except that a kernel dispatch may have a null kernarg address.
    pub(crate) fn check_wire(&self) -> core::result::Result<(), Violation> {
        match self {
            Packet::Invalid => Ok(()),
            Packet::KernelDispatch(p) => p.check_wire(),
            Packet::BarrierAnd(p) => p.check(),
            Packet::BarrierOr(p) => p.check(),
            // Every agent dispatch is valid on the wire (see `AgentDispatch::validate`).
            Packet::AgentDispatch(_) => Ok(()),
            Packet::BarrierValue(p) => p.check(),
        }
    }

    /// Validates and encodes the packet; [`Packet::Invalid`] encodes as all zeroes with header
    /// word 1.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] naming the field, as the kind's own `validate`.
    pub fn emit(&self) -> Result<EncodedPacket> {
        match self {
            Packet::Invalid => Ok(encode({
                let mut b = [0u8; PACKET_SIZE_BYTES];
                b[0] = PacketType::Invalid as u8;
                b
            })),
            Packet::KernelDispatch(p) => p.emit(),
            Packet::BarrierAnd(p) => p.emit(),
            Packet::BarrierOr(p) => p.emit(),
            Packet::AgentDispatch(p) => p.emit(),
            Packet::BarrierValue(p) => p.emit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::packet::FenceScope;

    fn kd() -> KernelDispatch {
        KernelDispatch {
            flags: HeaderFlags {
                barrier: true,
                ..HeaderFlags::SYSTEM
            },
            dimensions: 3,
            workgroup_size: [64, 2, 1],
            grid_size: [1024, 4, 3],
            private_segment_size_bytes: 0x10,
            group_segment_size_bytes: 0x200,
            kernel_object: GpuVa(0x7f00_1234_5640),
            kernarg_address: GpuVa(0x7f00_aaaa_0010),
            completion_signal: SignalHandle(0x7f00_5555_0040),
        }
    }

    /// Golden bytes, computed by hand from the offsets of `hsa_kernel_dispatch_packet_t` in
    /// `hsa.h` (header 0, setup 2, workgroup 4/6/8, reserved0 10, grid 12/16/20, private 24,
    /// group 28, kernel_object 32, kernarg 40, reserved2 48, completion_signal 56).
    #[test]
    fn kernel_dispatch_golden_bytes() {
        let e = kd().emit().unwrap();
        #[rustfmt::skip]
        let want: [u8; 64] = [
            0x01, 0x00, 0x00, 0x00,             // INVALID header, setup 0 until published
            0x40, 0x00, 0x02, 0x00, 0x01, 0x00, // workgroup 64, 2, 1
            0x00, 0x00,                         // reserved0
            0x00, 0x04, 0x00, 0x00,             // grid_size_x 1024
            0x04, 0x00, 0x00, 0x00,             // grid_size_y 4
            0x03, 0x00, 0x00, 0x00,             // grid_size_z 3
            0x10, 0x00, 0x00, 0x00,             // private_segment_size
            0x00, 0x02, 0x00, 0x00,             // group_segment_size
            0x40, 0x56, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, // kernel_object
            0x10, 0x00, 0xaa, 0xaa, 0x00, 0x7f, 0x00, 0x00, // kernarg_address
            0, 0, 0, 0, 0, 0, 0, 0,             // reserved2
            0x40, 0x00, 0x55, 0x55, 0x00, 0x7f, 0x00, 0x00, // completion_signal
        ];
        assert_eq!(e.bytes, want);
        // header 2 | barrier 0x100 | acquire SYSTEM 2<<9 | release SYSTEM 2<<11 = 0x1502;
        // setup = 3 dimensions.
        assert_eq!(e.header_word, 0x0003_1502);
    }

    #[test]
    fn barrier_value_golden_bytes() {
        let p = BarrierValue {
            flags: HeaderFlags {
                barrier: false,
                acquire_fence_scope: FenceScope::Agent,
                release_fence_scope: FenceScope::None,
            },
            signal: SignalHandle(0x1000),
            value: -1,
            mask: 0xff,
            condition: 3,
            completion_signal: SignalHandle::NULL,
        };
        let e = p.emit().unwrap();
        // Vendor type 0, acquire AGENT 1<<9 = 0x0200; AmdFormat 2 at byte 2.
        assert_eq!(e.header_word, 0x0002_0200);
        assert_eq!(&e.bytes[..4], &[1, 0, 0, 0]);
        assert_eq!(&e.bytes[8..16], &0x1000u64.to_le_bytes());
        assert_eq!(&e.bytes[16..24], &[0xff; 8]);
        assert_eq!(&e.bytes[24..32], &0xffu64.to_le_bytes());
        assert_eq!(&e.bytes[32..36], &3u32.to_le_bytes());
        assert!(e.bytes[36..].iter().all(|&b| b == 0));
    }

    #[test]
    fn barrier_and_or_golden_bytes() {
        let deps = [SignalHandle(0x10), SignalHandle(0x20)];
        let a = BarrierAnd::new(HeaderFlags::NONE, &deps, SignalHandle(0x30)).unwrap();
        let e = a.emit().unwrap();
        assert_eq!(e.header_word, 3);
        assert_eq!(&e.bytes[8..16], &0x10u64.to_le_bytes());
        assert_eq!(&e.bytes[16..24], &0x20u64.to_le_bytes());
        assert_eq!(&e.bytes[24..48], &[0; 24]);
        assert_eq!(&e.bytes[56..64], &0x30u64.to_le_bytes());
        assert_eq!(a.deps().count(), 2);
        let o = BarrierOr::new(HeaderFlags::SYSTEM, &deps, SignalHandle::NULL).unwrap();
        // 5 | 2<<9 | 2<<11.
        assert_eq!(o.emit().unwrap().header_word, 0x1405);
        let six = [SignalHandle(1); 6];
        let err = BarrierAnd::new(HeaderFlags::NONE, &six, SignalHandle::NULL).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument);
        assert_eq!(err.detail(), "dependency signal count is 6; must be <= 5");
    }

    #[test]
    fn agent_dispatch_golden_bytes() {
        let p = AgentDispatch {
            flags: HeaderFlags::NONE,
            function_type: 0x8001,
            return_address: GpuVa(0xdead_0000),
            args: [1, 2, 3, u64::MAX],
            completion_signal: SignalHandle(0x40),
        };
        let e = p.emit().unwrap();
        assert_eq!(e.header_word, 0x8001_0004);
        assert_eq!(&e.bytes[8..16], &0xdead_0000u64.to_le_bytes());
        assert_eq!(&e.bytes[16..24], &1u64.to_le_bytes());
        assert_eq!(&e.bytes[40..48], &[0xff; 8]);
        assert_eq!(&e.bytes[56..64], &0x40u64.to_le_bytes());
    }

    #[test]
    fn kernel_dispatch_errors_name_field_and_value() {
        type Case = (fn(&mut KernelDispatch), &'static str);
        let cases: [Case; 11] = [
            (|k| k.dimensions = 0, "dimensions is 0; must be in 1..=3"),
            (|k| k.dimensions = 4, "dimensions is 4; must be in 1..=3"),
            (
                |k| k.workgroup_size[1] = 0,
                "workgroup_size_y is 0; must be >= 1",
            ),
            (|k| k.grid_size[0] = 0, "grid_size_x is 0; must be >= 1"),
            (
                |k| {
                    k.dimensions = 1;
                    k.grid_size[1] = 1;
                },
                "workgroup_size_y is 2; must be 1 when dimensions is 1",
            ),
            (
                |k| {
                    k.dimensions = 2;
                    k.grid_size[2] = 7;
                },
                "grid_size_z is 7; must be 1 when dimensions is 2",
            ),
            (
                |k| k.grid_size[0] = 63,
                "grid_size_x is 63; must be >= workgroup_size_x (64)",
            ),
            (
                |k| k.kernel_object = GpuVa(0),
                "kernel_object is null (0x0); must be non-null",
            ),
            (
                |k| k.kernel_object = GpuVa(0x1010),
                "kernel_object is 0x1010; must be 64-byte aligned",
            ),
            (
                |k| k.kernarg_address = GpuVa(0),
                "kernarg_address is null (0x0); must be non-null",
            ),
            (
                |k| k.kernarg_address = GpuVa(0x1008),
                "kernarg_address is 0x1008; must be 16-byte aligned",
            ),
        ];
        for (mutate, want) in cases {
            let mut k = kd();
            mutate(&mut k);
            let e = k.emit().unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument, "{want}");
            assert_eq!(e.detail(), want);
        }
    }

    #[test]
    fn barrier_value_errors() {
        let mut p = BarrierValue {
            flags: HeaderFlags::NONE,
            signal: SignalHandle::NULL,
            value: 0,
            mask: -1,
            condition: 0,
            completion_signal: SignalHandle::NULL,
        };
        // hsa_ext_amd.h: a 0 signal handle is a satisfied dependency, not an error.
        let e = p.emit().unwrap();
        assert_eq!(e.bytes[8..16], [0; 8], "signal at byte 8 is 0");
        p.signal = SignalHandle(0x40);
        p.condition = 4;
        let e = p.emit().unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.detail(), "condition is 4; must be in 0..=3");
    }

    #[test]
    fn workgroup_count_counts_partial_workgroups() {
        // grid 1024 x 4 x 3 in work-groups of 64 x 2 x 1: 16 x 2 x 3.
        assert_eq!(kd().workgroup_count(), [16, 2, 3]);
        let k = KernelDispatch::one_dimensional(GpuVa(0x40), GpuVa(0x10), 64, 1000);
        // ceil(1000 / 64) = 16: the last work-group is partial.
        assert_eq!(k.workgroup_count(), [16, 1, 1]);
        // An unvalidated 0 work-group size counts as 1 instead of dividing by zero.
        let k = KernelDispatch {
            workgroup_size: [0, 1, 1],
            ..k
        };
        assert_eq!(k.workgroup_count(), [1000, 1, 1]);
    }

    #[test]
    fn null_kernarg_passes_the_wire_checks_only() {
        let k = KernelDispatch {
            kernarg_address: GpuVa(0),
            ..kd()
        };
        assert_eq!(k.check_wire(), Ok(()));
        assert_eq!(
            k.check(),
            Err(Violation::new("kernarg_address", 0, Rule::NonNull))
        );
        assert_eq!(Packet::KernelDispatch(k).check_wire(), Ok(()));
        // A misaligned one fails both.
        let k = KernelDispatch {
            kernarg_address: GpuVa(0x18),
            ..kd()
        };
        let want = Err(Violation::new("kernarg_address", 0x18, Rule::Aligned(16)));
        assert_eq!(k.check_wire(), want);
        assert_eq!(k.check(), want);
    }

    #[test]
    fn invalid_packet_encodes_header_one() {
        let e = Packet::Invalid.emit().unwrap();
        assert_eq!(e.header_word, 1);
        assert_eq!(e.bytes[0], 1);
        assert!(e.bytes[1..].iter().all(|&b| b == 0));
    }
}
