//! A checked view over the 64 bytes of one AQL packet (smoltcp `wire` style).
//!
//! # No-panic contract
//! No method of [`AqlPacket`] panics, whatever the 64 bytes hold: [`AqlPacket::new_checked`]
//! rejects a buffer that is not exactly 64 bytes, the getters read fixed offsets of a fixed
//! 64-byte array, and [`AqlPacket::parse`] reports every malformed field as an [`Error`] with
//! [`Status::InvalidPacketFormat`] naming the field and value. (Should a buffer's `AsRef`
//! later return a shorter slice, getters read zeroes and setters do nothing.)
//!
//! [`AqlPacket::parse`] allocates nothing and formats nothing unless it fails: it is what the
//! software packet processor runs on every packet. It applies the builders' checks except
//! that it accepts a kernel dispatch with a null kernarg address, as `hsa.h` and the hardware
//! do (see [`builder`](super::builder)).
//!
//! # Reserved fields
//! Reserved header bits (13..16), reserved `setup` bits (2..16), the AMD vendor header's
//! reserved byte and every `reserved*` field are ignored when nonzero, as the CP firmware
//! ignores them; [`AqlPacket::parse`] accepts such packets. Builders always write zeroes.
//!
//! Ref: HSA PSA 1.2 §2.9; `hsa.h`, `hsa_ext_amd.h` packet structs (offsets through
//! [`crate::abi::packet`]).

use core::mem::offset_of;

use zerocopy::transmute;

use super::builder::{AgentDispatch, BarrierAnd, BarrierOr, BarrierValue, KernelDispatch, Packet};
use super::header::{PacketHeader, Rule, Violation};
use crate::abi::packet::{
    AgentDispatchPacket, AmdVendorPacketHeader, BarrierPacket, BarrierValuePacket,
    KernelDispatchPacket, PacketType, AMD_PACKET_TYPE_BARRIER_VALUE, PACKET_SIZE_BYTES,
    SETUP_DIMENSIONS_SHIFT, SETUP_DIMENSIONS_WIDTH,
};
use crate::abi::SignalHandle;
use crate::{Error, GpuVa, Result, Status};

/// Byte offsets of every field the view reads, from the `abi` layouts.
mod field {
    use super::*;

    pub const HEADER: usize = offset_of!(KernelDispatchPacket, header);
    pub const SETUP: usize = offset_of!(KernelDispatchPacket, setup);
    pub const WORKGROUP_SIZE_X: usize = offset_of!(KernelDispatchPacket, workgroup_size_x);
    pub const GRID_SIZE_X: usize = offset_of!(KernelDispatchPacket, grid_size_x);
    pub const PRIVATE_SEGMENT_SIZE: usize = offset_of!(KernelDispatchPacket, private_segment_size);
    pub const GROUP_SEGMENT_SIZE: usize = offset_of!(KernelDispatchPacket, group_segment_size);
    pub const KERNEL_OBJECT: usize = offset_of!(KernelDispatchPacket, kernel_object);
    pub const KERNARG_ADDRESS: usize = offset_of!(KernelDispatchPacket, kernarg_address);
    pub const COMPLETION_SIGNAL: usize = offset_of!(KernelDispatchPacket, completion_signal);
    pub const AGENT_TYPE: usize = offset_of!(AgentDispatchPacket, type_);
    pub const RETURN_ADDRESS: usize = offset_of!(AgentDispatchPacket, return_address);
    pub const ARG: usize = offset_of!(AgentDispatchPacket, arg);
    pub const DEP_SIGNAL: usize = offset_of!(BarrierPacket, dep_signal);
    pub const AMD_FORMAT: usize = offset_of!(AmdVendorPacketHeader, amd_format);
    pub const BV_SIGNAL: usize = offset_of!(BarrierValuePacket, signal);
    pub const BV_VALUE: usize = offset_of!(BarrierValuePacket, value);
    pub const BV_MASK: usize = offset_of!(BarrierValuePacket, mask);
    pub const BV_COND: usize = offset_of!(BarrierValuePacket, cond);

    const _: () = assert!(COMPLETION_SIGNAL == offset_of!(AgentDispatchPacket, completion_signal));
    const _: () = assert!(COMPLETION_SIGNAL == offset_of!(BarrierPacket, completion_signal));
    const _: () = assert!(COMPLETION_SIGNAL == offset_of!(BarrierValuePacket, completion_signal));
}

static ZEROES: [u8; PACKET_SIZE_BYTES] = [0; PACKET_SIZE_BYTES];

/// A view of one AQL packet over any byte buffer of exactly 64 bytes: field getters for every
/// packet kind (they read the offsets of the C structs regardless of the packet's type),
/// setters for mutable buffers, and [`AqlPacket::parse`] into a typed [`Packet`].
///
/// Multi-byte fields are little-endian, as on every AMD GPU and host hsa-rt supports.
///
/// Ref: HSA PSA 1.2 §2.9; `hsa.h`, `hsa_ext_amd.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AqlPacket<T> {
    /// Wraps `buffer` after checking its length.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] when `buffer` is not exactly 64 bytes; the message gives
    /// the length.
    pub fn new_checked(buffer: T) -> Result<AqlPacket<T>> {
        let len = buffer.as_ref().len();
        if len != PACKET_SIZE_BYTES {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [len as u64],
                |&[len, ..], f| {
                    write!(
                        f,
                        "AQL packet buffer is {len} bytes; must be {PACKET_SIZE_BYTES}"
                    )
                },
            ));
        }
        Ok(AqlPacket { buffer })
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 64 bytes (zeroes if the buffer shrank since [`AqlPacket::new_checked`]).
    pub fn as_bytes(&self) -> &[u8; PACKET_SIZE_BYTES] {
        match self.buffer.as_ref().try_into() {
            Ok(b) => b,
            Err(_) => &ZEROES,
        }
    }

    fn read<const N: usize>(&self, offset: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.as_bytes().get(offset..offset.saturating_add(N)) {
            out.copy_from_slice(src);
        }
        out
    }

    fn u16_at(&self, offset: usize) -> u16 {
        u16::from_le_bytes(self.read(offset))
    }

    fn u32_at(&self, offset: usize) -> u32 {
        u32::from_le_bytes(self.read(offset))
    }

    fn u64_at(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.read(offset))
    }

    /// The raw 16-bit header (bytes 0..2).
    pub fn header_raw(&self) -> u16 {
        self.u16_at(field::HEADER)
    }

    /// The first 32 bits: header and setup (or the agent dispatch `type`, or the AMD vendor
    /// header's format and reserved byte).
    pub fn header_word(&self) -> u32 {
        self.u32_at(field::HEADER)
    }

    /// The decoded header.
    ///
    /// # Errors
    /// [`Status::InvalidPacketFormat`] for an undefined type or a reserved fence scope, as
    /// [`PacketHeader::decode`].
    pub fn header(&self) -> Result<PacketHeader> {
        PacketHeader::decode(self.header_raw())
    }

    /// The raw packet type byte (header bits 0..8).
    pub fn packet_type_raw(&self) -> u8 {
        self.header_raw() as u8
    }

    /// The packet type, `None` if the type byte is not a `hsa_packet_type_t` value.
    pub fn packet_type(&self) -> Option<PacketType> {
        PacketType::from_raw(self.packet_type_raw())
    }

    /// Kernel dispatch: the raw `setup` field (bytes 2..4).
    pub fn setup(&self) -> u16 {
        self.u16_at(field::SETUP)
    }

    /// Kernel dispatch: the dimension count from `setup` bits 0..2 (0..=3; 0 is malformed).
    pub fn dimensions(&self) -> u8 {
        ((self.setup() >> SETUP_DIMENSIONS_SHIFT) & ((1 << SETUP_DIMENSIONS_WIDTH) - 1)) as u8
    }

    /// Kernel dispatch: work-group sizes x, y, z, work-items.
    pub fn workgroup_size(&self) -> [u16; 3] {
        let o = field::WORKGROUP_SIZE_X;
        [self.u16_at(o), self.u16_at(o + 2), self.u16_at(o + 4)]
    }

    /// Kernel dispatch: grid sizes x, y, z, work-items.
    pub fn grid_size(&self) -> [u32; 3] {
        let o = field::GRID_SIZE_X;
        [self.u32_at(o), self.u32_at(o + 4), self.u32_at(o + 8)]
    }

    /// Kernel dispatch: private segment bytes per work-item.
    pub fn private_segment_size_bytes(&self) -> u32 {
        self.u32_at(field::PRIVATE_SEGMENT_SIZE)
    }

    /// Kernel dispatch: group segment bytes per work-group.
    pub fn group_segment_size_bytes(&self) -> u32 {
        self.u32_at(field::GROUP_SEGMENT_SIZE)
    }

    /// Kernel dispatch: the kernel object (kernel descriptor address).
    pub fn kernel_object(&self) -> GpuVa {
        GpuVa(self.u64_at(field::KERNEL_OBJECT))
    }

    /// Kernel dispatch: the kernarg segment address.
    pub fn kernarg_address(&self) -> GpuVa {
        GpuVa(self.u64_at(field::KERNARG_ADDRESS))
    }

    /// Every packet kind: the completion signal (bytes 56..64).
    pub fn completion_signal(&self) -> SignalHandle {
        SignalHandle(self.u64_at(field::COMPLETION_SIGNAL))
    }

    /// Agent dispatch: the function id (`type`, bytes 2..4).
    pub fn agent_function_type(&self) -> u16 {
        self.u16_at(field::AGENT_TYPE)
    }

    /// Agent dispatch: the return address.
    pub fn return_address(&self) -> GpuVa {
        GpuVa(self.u64_at(field::RETURN_ADDRESS))
    }

    /// Agent dispatch: the four arguments.
    pub fn args(&self) -> [u64; 4] {
        let o = field::ARG;
        [
            self.u64_at(o),
            self.u64_at(o + 8),
            self.u64_at(o + 16),
            self.u64_at(o + 24),
        ]
    }

    /// Barrier-AND/OR: the five dependency signals (null entries unused).
    pub fn dep_signals(&self) -> [SignalHandle; 5] {
        let o = field::DEP_SIGNAL;
        [0, 1, 2, 3, 4].map(|i| SignalHandle(self.u64_at(o + 8 * i)))
    }

    /// AMD vendor packet: the `AmdFormat` byte (byte 2).
    pub fn amd_format(&self) -> u8 {
        self.read::<1>(field::AMD_FORMAT)[0]
    }

    /// Barrier-value: the compared signal.
    pub fn barrier_value_signal(&self) -> SignalHandle {
        SignalHandle(self.u64_at(field::BV_SIGNAL))
    }

    /// Barrier-value: the compare value.
    pub fn barrier_value_value(&self) -> i64 {
        self.u64_at(field::BV_VALUE) as i64
    }

    /// Barrier-value: the mask.
    pub fn barrier_value_mask(&self) -> i64 {
        self.u64_at(field::BV_MASK) as i64
    }

    /// Barrier-value: the raw condition (`hsa_signal_condition32_t`).
    pub fn barrier_value_condition(&self) -> u32 {
        self.u32_at(field::BV_COND)
    }

    /// Decodes and validates the packet into its typed form, with the same checks as the
    /// builders' `validate` (see [`KernelDispatch::validate`], [`BarrierValue::validate`]) but
    /// one: a kernel dispatch's null `kernarg_address` is accepted, as `hsa.h` allows ("May be
    /// NULL") and the command processor does; the builders are stricter there (see
    /// [`builder`](super::builder)). Reserved fields are ignored (module docs).
    /// Allocation-free; formats only on failure: the software packet processor parses every
    /// packet with it.
    ///
    /// # Errors
    /// [`Status::InvalidPacketFormat`] naming the field and value when: the header's type is
    /// undefined (6..=255) or a fence scope is 3; a vendor-specific packet's `AmdFormat` is not
    /// `HSA_AMD_PACKET_TYPE_BARRIER_VALUE` (2); or a check of the kind's builder fails
    /// (dimensions, work-group and grid sizes, kernel object, kernarg alignment for kernel
    /// dispatch; signal and condition for barrier-value).
    pub fn parse(&self) -> Result<Packet> {
        self.parse_checked()
            .map_err(|v| v.into_error(Status::InvalidPacketFormat))
    }

    fn parse_checked(&self) -> core::result::Result<Packet, Violation> {
        let header = PacketHeader::decode_checked(self.header_raw())?;
        let flags = header.flags();
        let bytes = *self.as_bytes();
        let packet = match header.packet_type() {
            PacketType::Invalid => Packet::Invalid,
            PacketType::KernelDispatch => {
                let p: KernelDispatchPacket = transmute!(bytes);
                Packet::KernelDispatch(KernelDispatch {
                    flags,
                    dimensions: self.dimensions(),
                    workgroup_size: [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z],
                    grid_size: [p.grid_size_x, p.grid_size_y, p.grid_size_z],
                    private_segment_size_bytes: p.private_segment_size,
                    group_segment_size_bytes: p.group_segment_size,
                    kernel_object: GpuVa(p.kernel_object),
                    kernarg_address: GpuVa(p.kernarg_address),
                    completion_signal: p.completion_signal,
                })
            }
            PacketType::BarrierAnd | PacketType::BarrierOr => {
                let p: BarrierPacket = transmute!(bytes);
                if header.packet_type() == PacketType::BarrierAnd {
                    Packet::BarrierAnd(BarrierAnd {
                        flags,
                        dep_signals: p.dep_signal,
                        completion_signal: p.completion_signal,
                    })
                } else {
                    Packet::BarrierOr(BarrierOr {
                        flags,
                        dep_signals: p.dep_signal,
                        completion_signal: p.completion_signal,
                    })
                }
            }
            PacketType::AgentDispatch => {
                let p: AgentDispatchPacket = transmute!(bytes);
                Packet::AgentDispatch(AgentDispatch {
                    flags,
                    function_type: p.type_,
                    return_address: GpuVa(p.return_address),
                    args: p.arg,
                    completion_signal: p.completion_signal,
                })
            }
            PacketType::VendorSpecific => {
                let p: BarrierValuePacket = transmute!(bytes);
                if p.header.amd_format != AMD_PACKET_TYPE_BARRIER_VALUE {
                    return Err(Violation::new(
                        "AmdFormat (vendor packet byte 2)",
                        p.header.amd_format.into(),
                        Rule::InRange(
                            AMD_PACKET_TYPE_BARRIER_VALUE.into(),
                            AMD_PACKET_TYPE_BARRIER_VALUE.into(),
                        ),
                    ));
                }
                Packet::BarrierValue(BarrierValue {
                    flags,
                    signal: p.signal,
                    value: p.value,
                    mask: p.mask,
                    condition: p.cond,
                    completion_signal: p.completion_signal,
                })
            }
        };
        packet.check_wire()?;
        Ok(packet)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AqlPacket<T> {
    fn write(&mut self, offset: usize, src: &[u8]) {
        let buf = self.buffer.as_mut();
        if buf.len() != PACKET_SIZE_BYTES {
            return;
        }
        if let Some(dst) = buf.get_mut(offset..offset.saturating_add(src.len())) {
            dst.copy_from_slice(src);
        }
    }

    /// Sets the raw 16-bit header. A queue producer publishes with one 32-bit release store
    /// instead (see [`crate::queue::ring`]); this is for buffers no consumer watches.
    pub fn set_header_raw(&mut self, header: u16) {
        self.write(field::HEADER, &header.to_le_bytes());
    }

    /// Sets the first 32 bits (header and setup) at once.
    pub fn set_header_word(&mut self, word: u32) {
        self.write(field::HEADER, &word.to_le_bytes());
    }

    /// Sets the header.
    pub fn set_header(&mut self, header: PacketHeader) {
        self.set_header_raw(header.raw());
    }

    /// Kernel dispatch: sets the raw `setup` field.
    pub fn set_setup(&mut self, setup: u16) {
        self.write(field::SETUP, &setup.to_le_bytes());
    }

    /// Kernel dispatch: sets the work-group sizes x, y, z.
    pub fn set_workgroup_size(&mut self, size: [u16; 3]) {
        for (i, s) in size.iter().enumerate() {
            self.write(field::WORKGROUP_SIZE_X + 2 * i, &s.to_le_bytes());
        }
    }

    /// Kernel dispatch: sets the grid sizes x, y, z.
    pub fn set_grid_size(&mut self, size: [u32; 3]) {
        for (i, s) in size.iter().enumerate() {
            self.write(field::GRID_SIZE_X + 4 * i, &s.to_le_bytes());
        }
    }

    /// Kernel dispatch: sets the private segment bytes per work-item.
    pub fn set_private_segment_size_bytes(&mut self, bytes: u32) {
        self.write(field::PRIVATE_SEGMENT_SIZE, &bytes.to_le_bytes());
    }

    /// Kernel dispatch: sets the group segment bytes per work-group.
    pub fn set_group_segment_size_bytes(&mut self, bytes: u32) {
        self.write(field::GROUP_SEGMENT_SIZE, &bytes.to_le_bytes());
    }

    /// Kernel dispatch: sets the kernel object.
    pub fn set_kernel_object(&mut self, addr: GpuVa) {
        self.write(field::KERNEL_OBJECT, &addr.get().to_le_bytes());
    }

    /// Kernel dispatch: sets the kernarg address.
    pub fn set_kernarg_address(&mut self, addr: GpuVa) {
        self.write(field::KERNARG_ADDRESS, &addr.get().to_le_bytes());
    }

    /// Every packet kind: sets the completion signal.
    pub fn set_completion_signal(&mut self, signal: SignalHandle) {
        self.write(field::COMPLETION_SIGNAL, &signal.0.to_le_bytes());
    }

    /// Agent dispatch: sets the function id (`type`).
    pub fn set_agent_function_type(&mut self, function_type: u16) {
        self.write(field::AGENT_TYPE, &function_type.to_le_bytes());
    }

    /// Agent dispatch: sets the return address.
    pub fn set_return_address(&mut self, addr: GpuVa) {
        self.write(field::RETURN_ADDRESS, &addr.get().to_le_bytes());
    }

    /// Agent dispatch: sets the four arguments.
    pub fn set_args(&mut self, args: [u64; 4]) {
        for (i, a) in args.iter().enumerate() {
            self.write(field::ARG + 8 * i, &a.to_le_bytes());
        }
    }

    /// Barrier-AND/OR: sets the five dependency signals.
    pub fn set_dep_signals(&mut self, deps: [SignalHandle; 5]) {
        for (i, d) in deps.iter().enumerate() {
            self.write(field::DEP_SIGNAL + 8 * i, &d.0.to_le_bytes());
        }
    }

    /// AMD vendor packet: sets the `AmdFormat` byte.
    pub fn set_amd_format(&mut self, format: u8) {
        self.write(field::AMD_FORMAT, &[format]);
    }

    /// Barrier-value: sets the compared signal.
    pub fn set_barrier_value_signal(&mut self, signal: SignalHandle) {
        self.write(field::BV_SIGNAL, &signal.0.to_le_bytes());
    }

    /// Barrier-value: sets the compare value.
    pub fn set_barrier_value_value(&mut self, value: i64) {
        self.write(field::BV_VALUE, &value.to_le_bytes());
    }

    /// Barrier-value: sets the mask.
    pub fn set_barrier_value_mask(&mut self, mask: i64) {
        self.write(field::BV_MASK, &mask.to_le_bytes());
    }

    /// Barrier-value: sets the raw condition.
    pub fn set_barrier_value_condition(&mut self, condition: u32) {
        self.write(field::BV_COND, &condition.to_le_bytes());
    }
}

impl AqlPacket<[u8; PACKET_SIZE_BYTES]> {
    /// A view over an owned 64-byte array; cannot fail.
    pub const fn from_array(bytes: [u8; PACKET_SIZE_BYTES]) -> Self {
        AqlPacket { buffer: bytes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::HeaderFlags;

    fn kernel() -> KernelDispatch {
        KernelDispatch {
            flags: HeaderFlags::SYSTEM,
            dimensions: 2,
            workgroup_size: [16, 16, 1],
            grid_size: [256, 32, 1],
            private_segment_size_bytes: 0,
            group_segment_size_bytes: 4096,
            kernel_object: GpuVa(0x1_0000),
            kernarg_address: GpuVa(0x2_0000),
            completion_signal: SignalHandle(0x3_0000),
        }
    }

    fn published(e: crate::packet::EncodedPacket) -> [u8; 64] {
        let mut b = e.bytes;
        b[..4].copy_from_slice(&e.header_word.to_le_bytes());
        b
    }

    #[test]
    fn length_is_checked() {
        let e = AqlPacket::new_checked(&[0u8; 63][..]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(e.detail(), "AQL packet buffer is 63 bytes; must be 64");
        assert!(AqlPacket::new_checked(&[0u8; 65][..]).is_err());
        assert!(AqlPacket::new_checked(&[0u8; 64][..]).is_ok());
    }

    #[test]
    fn getters_read_the_hsa_h_offsets() {
        let bytes = published(kernel().emit().unwrap());
        let v = AqlPacket::new_checked(&bytes[..]).unwrap();
        // KERNEL_DISPATCH 2 | acquire SYSTEM 0x400 | release SYSTEM 0x1000.
        assert_eq!(v.header_raw(), 0x1402);
        assert_eq!(v.header_word(), 0x0002_1402);
        assert_eq!(v.dimensions(), 2);
        assert_eq!(v.workgroup_size(), [16, 16, 1]);
        assert_eq!(v.grid_size(), [256, 32, 1]);
        assert_eq!(v.group_segment_size_bytes(), 4096);
        assert_eq!(v.kernel_object(), GpuVa(0x1_0000));
        assert_eq!(v.kernarg_address(), GpuVa(0x2_0000));
        assert_eq!(v.completion_signal(), SignalHandle(0x3_0000));
        assert_eq!(v.parse().unwrap(), Packet::KernelDispatch(kernel()));
    }

    /// Little-endian read of `n` bytes at `off`, written here without the view's helpers.
    fn le(b: &[u8; 64], off: usize, n: usize) -> u64 {
        (0..n).fold(0, |v, i| v | u64::from(b[off + i]) << (8 * i))
    }

    #[test]
    fn every_getter_reads_its_own_hsa_h_offset() {
        // Every byte different, so a getter reading the wrong offset, width or byte order
        // returns a different value. Offsets are `hsa.h`'s (hsa_kernel_dispatch_packet_t,
        // hsa_agent_dispatch_packet_t, hsa_barrier_and_packet_t) and `hsa_ext_amd.h`'s
        // (hsa_amd_barrier_value_packet_t), written out here, not taken from `field`.
        let b: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(0x11));
        let v = AqlPacket::from_array(b);
        assert_eq!(u64::from(v.header_raw()), le(&b, 0, 2));
        assert_eq!(u64::from(v.packet_type_raw()), u64::from(b[0]));
        assert_eq!(u64::from(v.setup()), le(&b, 2, 2));
        assert_eq!(u64::from(v.dimensions()), le(&b, 2, 2) & 3);
        let wg = v.workgroup_size().map(u64::from);
        assert_eq!(wg, [le(&b, 4, 2), le(&b, 6, 2), le(&b, 8, 2)]);
        let grid = v.grid_size().map(u64::from);
        assert_eq!(grid, [le(&b, 12, 4), le(&b, 16, 4), le(&b, 20, 4)]);
        assert_eq!(u64::from(v.private_segment_size_bytes()), le(&b, 24, 4));
        assert_eq!(u64::from(v.group_segment_size_bytes()), le(&b, 28, 4));
        assert_eq!(v.kernel_object(), GpuVa(le(&b, 32, 8)));
        assert_eq!(v.kernarg_address(), GpuVa(le(&b, 40, 8)));
        assert_eq!(v.completion_signal(), SignalHandle(le(&b, 56, 8)));
        // Agent dispatch: type at 2, return_address at 8, arg[0..4] at 16..48.
        assert_eq!(u64::from(v.agent_function_type()), le(&b, 2, 2));
        assert_eq!(v.return_address(), GpuVa(le(&b, 8, 8)));
        assert_eq!(
            v.args(),
            [le(&b, 16, 8), le(&b, 24, 8), le(&b, 32, 8), le(&b, 40, 8)]
        );
        // Barrier-AND/OR: dep_signal[0..5] at 8..48.
        let deps = [8, 16, 24, 32, 40].map(|o| SignalHandle(le(&b, o, 8)));
        assert_eq!(v.dep_signals(), deps);
        // AMD vendor header: AmdFormat at 2; barrier-value: signal 8, value 16, mask 24,
        // cond 32.
        assert_eq!(v.amd_format(), b[2]);
        assert_eq!(v.barrier_value_signal(), SignalHandle(le(&b, 8, 8)));
        assert_eq!(v.barrier_value_value() as u64, le(&b, 16, 8));
        assert_eq!(v.barrier_value_mask() as u64, le(&b, 24, 8));
        assert_eq!(u64::from(v.barrier_value_condition()), le(&b, 32, 4));
        // The type byte decodes (0x11 is no packet type).
        assert_eq!(v.packet_type(), None);
        let mut typed = b;
        typed[0] = 3; // HSA_PACKET_TYPE_BARRIER_AND
        let v = AqlPacket::from_array(typed);
        assert_eq!(v.packet_type_raw(), 3);
        assert_eq!(v.packet_type(), Some(PacketType::BarrierAnd));
    }

    #[test]
    fn every_setter_writes_only_its_own_hsa_h_bytes() {
        // Each setter on a zeroed packet must produce exactly the little-endian bytes at the
        // `hsa.h` / `hsa_ext_amd.h` offset (written out here) and leave every other byte 0.
        type Set = fn(&mut AqlPacket<[u8; 64]>);
        /// (offset, value, width in bytes) of each field a setter writes.
        type Fields = &'static [(usize, u64, usize)];
        let cases: [(Set, Fields); 20] = [
            (|v| v.set_header_raw(0x1502), &[(0, 0x1502, 2)]),
            (|v| v.set_header_word(0x0003_1502), &[(0, 0x0003_1502, 4)]),
            (
                |v| v.set_header(PacketHeader::decode(0x0205).unwrap()),
                &[(0, 0x0205, 2)],
            ),
            (|v| v.set_setup(0xa5c3), &[(2, 0xa5c3, 2)]),
            (
                |v| v.set_workgroup_size([0x0102, 0x0304, 0x0506]),
                &[(4, 0x0102, 2), (6, 0x0304, 2), (8, 0x0506, 2)],
            ),
            (
                |v| v.set_grid_size([0x0a0b_0c0d, 0x1a1b_1c1d, 0x2a2b_2c2d]),
                &[
                    (12, 0x0a0b_0c0d, 4),
                    (16, 0x1a1b_1c1d, 4),
                    (20, 0x2a2b_2c2d, 4),
                ],
            ),
            (
                |v| v.set_private_segment_size_bytes(0x1234_5678),
                &[(24, 0x1234_5678, 4)],
            ),
            (
                |v| v.set_group_segment_size_bytes(0x8765_4321),
                &[(28, 0x8765_4321, 4)],
            ),
            (
                |v| v.set_kernel_object(GpuVa(0x0102_0304_0506_0708)),
                &[(32, 0x0102_0304_0506_0708, 8)],
            ),
            (
                |v| v.set_kernarg_address(GpuVa(0x1112_1314_1516_1718)),
                &[(40, 0x1112_1314_1516_1718, 8)],
            ),
            (
                |v| v.set_completion_signal(SignalHandle(0x2122_2324_2526_2728)),
                &[(56, 0x2122_2324_2526_2728, 8)],
            ),
            (|v| v.set_agent_function_type(0xbeef), &[(2, 0xbeef, 2)]),
            (
                |v| v.set_return_address(GpuVa(0x3132_3334_3536_3738)),
                &[(8, 0x3132_3334_3536_3738, 8)],
            ),
            (
                |v| v.set_args([0x41, 0x4200, 0x43_0000, 0x4400_0000_0000]),
                &[
                    (16, 0x41, 8),
                    (24, 0x4200, 8),
                    (32, 0x43_0000, 8),
                    (40, 0x4400_0000_0000, 8),
                ],
            ),
            (
                |v| v.set_dep_signals([0x51, 0x52, 0x53, 0x54, 0x55].map(SignalHandle)),
                &[
                    (8, 0x51, 8),
                    (16, 0x52, 8),
                    (24, 0x53, 8),
                    (32, 0x54, 8),
                    (40, 0x55, 8),
                ],
            ),
            (|v| v.set_amd_format(0x66), &[(2, 0x66, 1)]),
            (
                |v| v.set_barrier_value_signal(SignalHandle(0x7172_7374)),
                &[(8, 0x7172_7374, 8)],
            ),
            (|v| v.set_barrier_value_value(-2), &[(16, u64::MAX - 1, 8)]),
            (|v| v.set_barrier_value_mask(0x0f0f), &[(24, 0x0f0f, 8)]),
            (
                |v| v.set_barrier_value_condition(0x8182_8384),
                &[(32, 0x8182_8384, 4)],
            ),
        ];
        for (i, (set, fields)) in cases.iter().enumerate() {
            let mut v = AqlPacket::from_array([0; 64]);
            set(&mut v);
            let mut want = [0u8; 64];
            for &(off, value, n) in *fields {
                want[off..off + n].copy_from_slice(&value.to_le_bytes()[..n]);
            }
            assert_eq!(v.as_bytes(), &want, "setter case {i}");
        }
    }

    #[test]
    fn setters_then_parse() {
        let mut v = AqlPacket::from_array([0; 64]);
        v.set_header(PacketHeader::new(
            PacketType::VendorSpecific,
            HeaderFlags::NONE,
        ));
        v.set_amd_format(AMD_PACKET_TYPE_BARRIER_VALUE);
        v.set_barrier_value_signal(SignalHandle(0x40));
        v.set_barrier_value_value(5);
        v.set_barrier_value_mask(-1);
        v.set_barrier_value_condition(2);
        v.set_completion_signal(SignalHandle(0x80));
        assert_eq!(
            v.parse().unwrap(),
            Packet::BarrierValue(BarrierValue {
                flags: HeaderFlags::NONE,
                signal: SignalHandle(0x40),
                value: 5,
                mask: -1,
                condition: 2,
                completion_signal: SignalHandle(0x80),
            })
        );
        v.set_amd_format(7);
        let e = v.parse().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "AmdFormat (vendor packet byte 2) is 7; must be in 2..=2"
        );
    }

    #[test]
    fn malformed_kernel_dispatch_is_invalid_packet_format() {
        let mut v = AqlPacket::from_array(published(kernel().emit().unwrap()));
        v.set_workgroup_size([16, 0, 1]);
        let e = v.parse().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(e.detail(), "workgroup_size_y is 0; must be >= 1");
        v.set_workgroup_size([16, 16, 1]);
        v.set_setup(0);
        assert_eq!(
            v.parse().unwrap_err().detail(),
            "dimensions is 0; must be in 1..=3"
        );
        // Reserved setup bits are ignored.
        v.set_setup(0xfffe);
        assert_eq!(v.parse().unwrap(), Packet::KernelDispatch(kernel()));
        v.set_header_raw(0x1407);
        assert_eq!(
            v.parse().unwrap_err().detail(),
            "packet type (header bits 0..8) is 7; must be in 0..=5"
        );
    }

    #[test]
    fn null_kernarg_address_parses_though_the_builder_refuses_it() {
        // `hsa.h`: kernarg_address "May be NULL" (a kernel without arguments).
        let mut v = AqlPacket::from_array(published(kernel().emit().unwrap()));
        v.set_kernarg_address(GpuVa(0));
        let want = KernelDispatch {
            kernarg_address: GpuVa(0),
            ..kernel()
        };
        assert_eq!(v.parse().unwrap(), Packet::KernelDispatch(want));
        assert_eq!(
            want.emit().unwrap_err().detail(),
            "kernarg_address is null (0x0); must be non-null"
        );
        // Alignment still applies to a non-null one.
        v.set_kernarg_address(GpuVa(0x2_0008));
        let e = v.parse().unwrap_err();
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "kernarg_address is 0x20008; must be 16-byte aligned"
        );
    }

    #[test]
    fn reserved_fields_are_ignored() {
        let mut bytes = published(kernel().emit().unwrap());
        bytes[10] = 0xaa; // reserved0
        bytes[48..56].fill(0xbb); // reserved2
        bytes[1] |= 0xe0; // reserved header bits 13..16
        let v = AqlPacket::new_checked(&bytes).unwrap();
        assert_eq!(v.parse().unwrap(), Packet::KernelDispatch(kernel()));
    }

    #[test]
    fn invalid_slot_parses_as_invalid() {
        let v = AqlPacket::from_array([0xff; 64]);
        assert!(v.parse().is_err());
        let mut b = [0xcc; 64];
        b[0] = 1;
        b[1] = 0;
        assert_eq!(AqlPacket::from_array(b).parse().unwrap(), Packet::Invalid);
    }
}
