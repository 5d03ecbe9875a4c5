//! PM4 packets of the command processor (gfx9 and later): the type-3 header, the packets an
//! AMD PM4-IB vendor packet carries on a compute queue (`NOP`, `WRITE_DATA`,
//! `INDIRECT_BUFFER`, `RELEASE_MEM`, `ACQUIRE_MEM`), a checked view ([`Packet`]) and the typed
//! packets ([`Repr`]: `parse`, `emit`).
//!
//! Layouts: linux `drivers/gpu/drm/amd/amdgpu/soc15d.h` (`PACKET3(op, n)` = type 3 in bits
//! 30..32, `n` = body dwords minus one in bits 16..30, the opcode in bits 8..16;
//! `PACKET3_*` opcodes and field macros), `amdkfd/kfd_pm4_headers_ai.h`, ROCR
//! `amd_gpu_pm4.h`. A type-2 packet (`0x8000_0000`) is a one-dword filler, and so is a `NOP`
//! whose count is 0x3fff (amdgpu's ring padding).
//!
//! The module doc of [`crate::wire`] states the no-panic contract.

use super::{get_u64, set_u64, Field, WireError};

/// `PACKET3_NOP`.
pub const OP_NOP: u8 = 0x10;
/// `PACKET3_WRITE_DATA`.
pub const OP_WRITE_DATA: u8 = 0x37;
/// `PACKET3_INDIRECT_BUFFER`.
pub const OP_INDIRECT_BUFFER: u8 = 0x3f;
/// `PACKET3_RELEASE_MEM`.
pub const OP_RELEASE_MEM: u8 = 0x49;
/// `PACKET3_ACQUIRE_MEM`.
pub const OP_ACQUIRE_MEM: u8 = 0x58;
/// `PACKET3_DISPATCH_DIRECT`: work-groups (or threads) per dimension, then
/// `COMPUTE_DISPATCH_INITIATOR`.
pub const OP_DISPATCH_DIRECT: u8 = 0x15;
/// `PACKET3_DISPATCH_INDIRECT`: on a compute queue, the address of the three dimensions, then
/// `COMPUTE_DISPATCH_INITIATOR`.
pub const OP_DISPATCH_INDIRECT: u8 = 0x16;
/// `PACKET3_WAIT_REG_MEM`.
pub const OP_WAIT_REG_MEM: u8 = 0x3c;
/// `PACKET3_COPY_DATA`.
pub const OP_COPY_DATA: u8 = 0x40;
/// `PACKET3_EVENT_WRITE`.
pub const OP_EVENT_WRITE: u8 = 0x46;
/// `PACKET3_SET_SH_REG`: its first body dword is a register's dword offset from
/// [`SET_SH_REG_START`].
pub const OP_SET_SH_REG: u8 = 0x76;
/// `PACKET3_SET_UCONFIG_REG`: offsets from [`SET_UCONFIG_REG_START`].
pub const OP_SET_UCONFIG_REG: u8 = 0x79;
/// `PACKET3_SET_SH_REG_START`: dword address of the first SH register (soc15d.h).
pub const SET_SH_REG_START: u32 = 0x2c00;
/// `PACKET3_SET_SH_REG_END`: one past the last SH register.
pub const SET_SH_REG_END: u32 = 0x3000;
/// `PACKET3_SET_UCONFIG_REG_START`: dword address of the first UCONFIG register.
pub const SET_UCONFIG_REG_START: u32 = 0xc000;

/// The one-dword type-2 filler packet (`PACKET_TYPE2`, `CP_PACKET2`).
pub const PACKET2: u32 = 0x8000_0000;
/// The count of a one-dword `NOP` (`PACKET3(PACKET3_NOP, 0x3FFF)`).
pub const NOP_ONE_DWORD_COUNT: u32 = 0x3fff;
/// Dwords of `ACQUIRE_MEM` on gfx9 (gfx10 and later add `GCR_CNTL`: 8).
pub const ACQUIRE_MEM_DWORDS_GFX9: usize = 7;

/// `PACKET3(op, n)`: a type-3 header for `body_dwords` dwords after it (1..=0x4000).
pub const fn packet3(op: u8, body_dwords: u32) -> u32 {
    3 << 30 | ((body_dwords.wrapping_sub(1)) & 0x3fff) << 16 | (op as u32) << 8
}

/// The fields, named as `soc15d.h` and `kfd_pm4_headers_ai.h` name them (dword, shift, width).
pub mod field {
    use super::Field;

    /// Header: packet type (bits 30..32).
    pub const TYPE: Field = Field::new(0, 30, 2);
    /// Header: body dwords minus one (type 3).
    pub const COUNT: Field = Field::new(0, 16, 14);
    /// Header: the type-3 opcode.
    pub const OPCODE: Field = Field::new(0, 8, 8);
    /// Header of a type-0 packet: the first register (dword offset).
    pub const TYPE0_REGISTER: Field = Field::new(0, 0, 16);

    /// `WRITE_DATA_DST_SEL(x)`: 0 register, 1 memory (GRBM), 2 TC/L2, 3 GDS, 5 memory.
    pub const WRITE_DATA_DST_SEL: Field = Field::new(1, 8, 4);
    /// `WR_ONE_ADDR`: every data dword to the one address.
    pub const WRITE_DATA_WR_ONE_ADDR: Field = Field::new(1, 16, 1);
    /// `WR_CONFIRM`.
    pub const WRITE_DATA_WR_CONFIRM: Field = Field::new(1, 20, 1);
    /// `ENGINE_SEL`.
    pub const WRITE_DATA_ENGINE_SEL: Field = Field::new(1, 30, 2);
    /// `DST_MEM_ADDR_LO` (bits 2..32 of the address; `_HI` is dword 3).
    pub const WRITE_DATA_ADDR: usize = 2;
    /// The first data dword.
    pub const WRITE_DATA_DATA: usize = 4;

    /// `IB_BASE_LO` bits 0..2: the IB's byte swap.
    pub const IB_SWAP: Field = Field::new(1, 0, 2);
    /// `IB_BASE_LO` (with `IB_BASE_HI` at dword 2).
    pub const IB_BASE: usize = 1;
    /// `IB_SIZE`: dwords of the IB.
    pub const IB_SIZE: Field = Field::new(3, 0, 20);
    /// `INDIRECT_BUFFER_CHAIN`: the calling buffer ends here.
    pub const IB_CHAIN: Field = Field::new(3, 20, 1);
    /// `INDIRECT_BUFFER_VALID`.
    pub const IB_VALID: Field = Field::new(3, 23, 1);
    /// `INDIRECT_BUFFER_VMID`.
    pub const IB_VMID: Field = Field::new(3, 24, 4);

    /// `EVENT_TYPE(x)` of `RELEASE_MEM` (e.g. 0x14 `CACHE_FLUSH_AND_INV_TS_EVENT`).
    pub const RELEASE_EVENT_TYPE: Field = Field::new(1, 0, 6);
    /// `EVENT_INDEX(x)`: 5 end of pipe, 6 shader done.
    pub const RELEASE_EVENT_INDEX: Field = Field::new(1, 8, 4);
    /// The cache-action bits of `RELEASE_MEM` dword 1 (`GCR_CNTL` on gfx10+, TC actions on
    /// gfx9): bits 12..32.
    pub const RELEASE_CACHE_ACTIONS: Field = Field::new(1, 12, 20);
    /// `DST_SEL(x)`: 0 memory controller, 1 TC/L2, 2 and 3 queue write pointers.
    pub const RELEASE_DST_SEL: Field = Field::new(2, 16, 2);
    /// `INT_SEL(x)`: 0 none, 1 and 2 send the interrupt.
    pub const RELEASE_INT_SEL: Field = Field::new(2, 24, 3);
    /// `DATA_SEL(x)`: 0 none, 1 32-bit, 2 64-bit data, 3 the GPU clock counter.
    pub const RELEASE_DATA_SEL: Field = Field::new(2, 29, 3);
    /// `ADDRESS_LO` (`_HI` at dword 4).
    pub const RELEASE_ADDR: usize = 3;
    /// `DATA_LO` (`_HI` at dword 6).
    pub const RELEASE_DATA: usize = 5;
    /// `INT_CTXID`.
    pub const RELEASE_INT_CTXID: Field = Field::new(7, 0, 32);

    /// `ACQUIRE_MEM` `COHER_CNTL`: the cache actions.
    pub const ACQUIRE_COHER_CNTL: Field = Field::new(1, 0, 32);
    /// `CP_COHER_SIZE` (with `_HI` at dword 3, 8 bits).
    pub const ACQUIRE_SIZE: Field = Field::new(2, 0, 32);
    /// `CP_COHER_SIZE_HI`.
    pub const ACQUIRE_SIZE_HI: Field = Field::new(3, 0, 8);
    /// `CP_COHER_BASE` (`_HI` at dword 5), in 256-byte units.
    pub const ACQUIRE_BASE: usize = 4;
    /// `POLL_INTERVAL`.
    pub const ACQUIRE_POLL_INTERVAL: Field = Field::new(6, 0, 16);
}

/// What the first dword of a PM4 packet says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A type-3 packet: `opcode` with `count + 2` dwords in all (or one, for the one-dword
    /// `NOP`).
    Type3 {
        /// The opcode.
        opcode: u8,
        /// Body dwords minus one.
        count: u32,
    },
    /// The type-2 filler (one dword).
    Filler,
    /// A type-0 packet: register writes from `register` on.
    Type0 {
        /// The first register's dword offset.
        register: u32,
    },
    /// A type-2 header with other bits set, or a type-1 header: the format defines neither.
    Reserved,
}

impl Header {
    /// Decodes the header dword `h`.
    pub fn parse(h: u32) -> Header {
        let d = [h];
        match field::TYPE.get(&d) {
            3 => Header::Type3 {
                opcode: field::OPCODE.get(&d) as u8,
                count: field::COUNT.get(&d),
            },
            2 if h == PACKET2 => Header::Filler,
            0 => Header::Type0 {
                register: field::TYPE0_REGISTER.get(&d),
            },
            _ => Header::Reserved,
        }
    }

    /// Dwords of the packet: 1 for a filler or a one-dword `NOP`, `count + 2` for another
    /// type-3 packet; `None` for type 0 and reserved headers (their length is not this
    /// module's).
    pub fn packet_dwords(self) -> Option<usize> {
        match self {
            Header::Filler => Some(1),
            Header::Type3 {
                opcode: OP_NOP,
                count: NOP_ONE_DWORD_COUNT,
            } => Some(1),
            Header::Type3 { count, .. } => Some(count as usize + 2),
            _ => None,
        }
    }
}

/// A view of one PM4 packet over dwords that start with its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u32]>> {
    buffer: T,
}

impl<T: AsRef<[u32]>> Packet<T> {
    /// Wraps `buffer` without any check (getters read 0 past its end).
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it starts with a type-3 or filler header and holds
    /// the whole packet.
    ///
    /// # Errors
    /// [`WireError::Truncated`] for an empty buffer or one shorter than the packet;
    /// [`WireError::UnknownOpcode`] for a type-0, type-1 or malformed type-2 header.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let dw = buffer.as_ref();
        let header = dw.first().copied().unwrap_or(0);
        let Some(needed) = Header::parse(header).packet_dwords() else {
            if dw.is_empty() {
                return Err(WireError::Truncated {
                    what: "PM4 packet",
                    header,
                    needed: 1,
                    available: 0,
                });
            }
            return Err(WireError::UnknownOpcode {
                what: "PM4 packet",
                header,
            });
        };
        if dw.len() < needed {
            return Err(WireError::Truncated {
                what: "PM4 packet",
                header,
                needed,
                available: dw.len(),
            });
        }
        Ok(Packet { buffer })
    }

    /// The dwords.
    pub fn dwords(&self) -> &[u32] {
        self.buffer.as_ref()
    }

    /// The header.
    pub fn header(&self) -> Header {
        Header::parse(self.dwords().first().copied().unwrap_or(0))
    }

    /// Field `f`.
    pub fn get(&self, f: Field) -> u32 {
        f.get(self.dwords())
    }

    /// The 64-bit value of dwords `lo` and `lo + 1`.
    pub fn get_u64(&self, lo: usize) -> u64 {
        get_u64(self.dwords(), lo)
    }
}

impl<T: AsRef<[u32]> + AsMut<[u32]>> Packet<T> {
    /// Stores `value` into field `f`.
    pub fn set(&mut self, f: Field, value: u32) {
        f.set(self.buffer.as_mut(), value);
    }

    /// Stores `value` into dwords `lo` and `lo + 1`.
    pub fn set_u64(&mut self, lo: usize, value: u64) {
        set_u64(self.buffer.as_mut(), lo, value);
    }
}

/// `INDIRECT_BUFFER`: run `size_dwords` dwords at `base`, then return (or, chained, end the
/// calling buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndirectBuffer {
    /// The IB's address (4-byte aligned: bits 0..2 are the swap field).
    pub base: u64,
    /// Dwords (20 bits).
    pub size_dwords: u32,
    /// `CHAIN`.
    pub chain: bool,
    /// `VALID` (the CP runs only valid IBs).
    pub valid: bool,
    /// `VMID` (4 bits; 0: the queue's).
    pub vmid: u8,
}

/// `RELEASE_MEM`: at an event, write data to memory and/or raise the interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMem {
    /// `EVENT_TYPE` (6 bits).
    pub event_type: u8,
    /// `EVENT_INDEX` (4 bits).
    pub event_index: u8,
    /// The cache-action bits 12..32 of dword 1.
    pub cache_actions: u32,
    /// `DST_SEL` (2 bits).
    pub dst_sel: u8,
    /// `INT_SEL` (3 bits).
    pub int_sel: u8,
    /// `DATA_SEL` (3 bits).
    pub data_sel: u8,
    /// The address written.
    pub addr: u64,
    /// The data (32 bits for `DATA_SEL` 1).
    pub data: u64,
    /// `INT_CTXID`.
    pub int_ctxid: u32,
}

/// `ACQUIRE_MEM` (gfx9's 7 dwords): cache actions over a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireMem {
    /// `COHER_CNTL`.
    pub coher_cntl: u32,
    /// `CP_COHER_SIZE` in 256-byte units (40 bits).
    pub size: u64,
    /// `CP_COHER_BASE` in 256-byte units.
    pub base: u64,
    /// `POLL_INTERVAL`.
    pub poll_interval: u16,
}

/// A typed PM4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr<'a> {
    /// A `NOP` of `body` dwords after its header (0x3fff: the one-dword `NOP`).
    Nop {
        /// Body dwords minus one, as the header's count.
        count: u32,
    },
    /// `WRITE_DATA` of `data` to memory at `addr`.
    WriteData {
        /// `DST_SEL`.
        dst_sel: u8,
        /// `WR_ONE_ADDR`.
        one_addr: bool,
        /// The address (4-byte aligned).
        addr: u64,
        /// The data dwords (at least one).
        data: &'a [u32],
    },
    /// `INDIRECT_BUFFER`.
    IndirectBuffer(IndirectBuffer),
    /// `RELEASE_MEM` (8 dwords).
    ReleaseMem(ReleaseMem),
    /// `ACQUIRE_MEM`.
    AcquireMem(AcquireMem),
}

impl<'a> Repr<'a> {
    /// Reads the type-3 packet `p` (its dwords exactly, or more after it).
    ///
    /// # Errors
    /// As [`Packet::new_checked`]; [`WireError::UnknownOpcode`] for an opcode other than
    /// the five; [`WireError::Truncated`] for a `WRITE_DATA` without data, an
    /// `INDIRECT_BUFFER` or `RELEASE_MEM` of another length than 4 or 8 dwords, or an
    /// `ACQUIRE_MEM` shorter than 7.
    pub fn parse(p: &Packet<&'a [u32]>) -> Result<Repr<'a>, WireError> {
        let p = Packet::new_checked(p.buffer)?;
        let Header::Type3 { opcode, count } = p.header() else {
            return Ok(Repr::Nop {
                count: NOP_ONE_DWORD_COUNT,
            });
        };
        let len = Header::parse(p.dwords()[0]).packet_dwords().unwrap_or(1);
        let d: &'a [u32] = p.buffer.get(..len).unwrap_or(&[]);
        let exact = |want: usize| -> Result<(), WireError> {
            if len == want {
                Ok(())
            } else {
                Err(WireError::Truncated {
                    what: "PM4 packet",
                    header: d[0],
                    needed: want,
                    available: len,
                })
            }
        };
        let p = Packet::new_unchecked(d);
        Ok(match opcode {
            OP_NOP => Repr::Nop { count },
            OP_WRITE_DATA => {
                if len <= field::WRITE_DATA_DATA {
                    return Err(WireError::Truncated {
                        what: "PM4 packet",
                        header: d[0],
                        needed: field::WRITE_DATA_DATA + 1,
                        available: len,
                    });
                }
                Repr::WriteData {
                    dst_sel: p.get(field::WRITE_DATA_DST_SEL) as u8,
                    one_addr: p.get(field::WRITE_DATA_WR_ONE_ADDR) != 0,
                    addr: p.get_u64(field::WRITE_DATA_ADDR) & !3,
                    data: &d[field::WRITE_DATA_DATA..],
                }
            }
            OP_INDIRECT_BUFFER => {
                exact(4)?;
                Repr::IndirectBuffer(IndirectBuffer {
                    base: p.get_u64(field::IB_BASE),
                    size_dwords: p.get(field::IB_SIZE),
                    chain: p.get(field::IB_CHAIN) != 0,
                    valid: p.get(field::IB_VALID) != 0,
                    vmid: p.get(field::IB_VMID) as u8,
                })
            }
            OP_RELEASE_MEM => {
                exact(8)?;
                Repr::ReleaseMem(ReleaseMem {
                    event_type: p.get(field::RELEASE_EVENT_TYPE) as u8,
                    event_index: p.get(field::RELEASE_EVENT_INDEX) as u8,
                    cache_actions: p.get(field::RELEASE_CACHE_ACTIONS),
                    dst_sel: p.get(field::RELEASE_DST_SEL) as u8,
                    int_sel: p.get(field::RELEASE_INT_SEL) as u8,
                    data_sel: p.get(field::RELEASE_DATA_SEL) as u8,
                    addr: p.get_u64(field::RELEASE_ADDR),
                    data: p.get_u64(field::RELEASE_DATA),
                    int_ctxid: p.get(field::RELEASE_INT_CTXID),
                })
            }
            OP_ACQUIRE_MEM => {
                if len < ACQUIRE_MEM_DWORDS_GFX9 {
                    return Err(WireError::Truncated {
                        what: "PM4 packet",
                        header: d[0],
                        needed: ACQUIRE_MEM_DWORDS_GFX9,
                        available: len,
                    });
                }
                Repr::AcquireMem(AcquireMem {
                    coher_cntl: p.get(field::ACQUIRE_COHER_CNTL),
                    size: u64::from(p.get(field::ACQUIRE_SIZE))
                        | u64::from(p.get(field::ACQUIRE_SIZE_HI)) << 32,
                    base: p.get_u64(field::ACQUIRE_BASE),
                    poll_interval: p.get(field::ACQUIRE_POLL_INTERVAL) as u16,
                })
            }
            _ => {
                return Err(WireError::UnknownOpcode {
                    what: "PM4 packet",
                    header: d[0],
                })
            }
        })
    }

    /// Dwords the packet takes.
    pub fn dwords(&self) -> usize {
        match self {
            Repr::Nop { count } if *count == NOP_ONE_DWORD_COUNT => 1,
            Repr::Nop { count } => *count as usize + 2,
            Repr::WriteData { data, .. } => field::WRITE_DATA_DATA + data.len(),
            Repr::IndirectBuffer(_) => 4,
            Repr::ReleaseMem(_) => 8,
            Repr::AcquireMem(_) => ACQUIRE_MEM_DWORDS_GFX9,
        }
    }

    /// Writes the packet into the first [`Repr::dwords`] dwords of `p` (a `NOP`'s body is
    /// left as it is).
    pub fn emit<T: AsRef<[u32]> + AsMut<[u32]>>(&self, p: &mut Packet<T>) {
        let n = self.dwords();
        let body = if matches!(self, Repr::Nop { .. }) {
            1
        } else {
            n
        };
        if let Some(d) = p.buffer.as_mut().get_mut(..body) {
            d.fill(0);
        }
        let (opcode, body_dwords) = match self {
            Repr::Nop { count } => (OP_NOP, count + 1),
            Repr::WriteData { .. } => (OP_WRITE_DATA, n as u32 - 1),
            Repr::IndirectBuffer(_) => (OP_INDIRECT_BUFFER, 3),
            Repr::ReleaseMem(_) => (OP_RELEASE_MEM, 7),
            Repr::AcquireMem(_) => (OP_ACQUIRE_MEM, ACQUIRE_MEM_DWORDS_GFX9 as u32 - 1),
        };
        if let Some(h) = p.buffer.as_mut().first_mut() {
            *h = packet3(opcode, body_dwords);
        }
        match *self {
            Repr::Nop { .. } => {}
            Repr::WriteData {
                dst_sel,
                one_addr,
                addr,
                data,
            } => {
                p.set(field::WRITE_DATA_DST_SEL, dst_sel.into());
                p.set(field::WRITE_DATA_WR_ONE_ADDR, one_addr.into());
                p.set_u64(field::WRITE_DATA_ADDR, addr & !3);
                if let Some(d) = p.buffer.as_mut().get_mut(field::WRITE_DATA_DATA..n) {
                    d.copy_from_slice(data);
                }
            }
            Repr::IndirectBuffer(ib) => {
                p.set_u64(field::IB_BASE, ib.base & !3);
                p.set(field::IB_SIZE, ib.size_dwords);
                p.set(field::IB_CHAIN, ib.chain.into());
                p.set(field::IB_VALID, ib.valid.into());
                p.set(field::IB_VMID, ib.vmid.into());
            }
            Repr::ReleaseMem(r) => {
                p.set(field::RELEASE_EVENT_TYPE, r.event_type.into());
                p.set(field::RELEASE_EVENT_INDEX, r.event_index.into());
                p.set(field::RELEASE_CACHE_ACTIONS, r.cache_actions);
                p.set(field::RELEASE_DST_SEL, r.dst_sel.into());
                p.set(field::RELEASE_INT_SEL, r.int_sel.into());
                p.set(field::RELEASE_DATA_SEL, r.data_sel.into());
                p.set_u64(field::RELEASE_ADDR, r.addr);
                p.set_u64(field::RELEASE_DATA, r.data);
                p.set(field::RELEASE_INT_CTXID, r.int_ctxid);
            }
            Repr::AcquireMem(a) => {
                p.set(field::ACQUIRE_COHER_CNTL, a.coher_cntl);
                p.set(field::ACQUIRE_SIZE, a.size as u32);
                p.set(field::ACQUIRE_SIZE_HI, (a.size >> 32) as u32);
                p.set_u64(field::ACQUIRE_BASE, a.base);
                p.set(field::ACQUIRE_POLL_INTERVAL, a.poll_interval.into());
            }
        }
    }
}

/// The `INDIRECT_BUFFER` ROCR 5.x puts in an AMD PM4-IB vendor packet (`ib_jump_cmd`,
/// `AqlQueue::ExecutePM4`): a valid, unchained IB of `size_dwords` dwords at `base`.
pub fn ib_jump(base: u64, size_dwords: u32) -> [u32; 4] {
    let mut d = [0u32; 4];
    Repr::IndirectBuffer(IndirectBuffer {
        base,
        size_dwords,
        chain: false,
        valid: true,
        vmid: 0,
    })
    .emit(&mut Packet::new_unchecked(&mut d[..]));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden dwords from `soc15d.h`'s values: `PACKET3(op, n)` = 3 << 30 | n << 16 | op << 8
    /// with `PACKET3_INDIRECT_BUFFER` 0x3F and `INDIRECT_BUFFER_VALID` (1 << 23): ROCR 5.2's
    /// `ib_jump_cmd` for an IB of 7 dwords at 0x7f12_3456_7000 is 0xc002_3f00, 0x3456_7000,
    /// 0x7f12, 0x0080_0007. `RELEASE_MEM` 0x49 with `EVENT_INDEX(5)` (<< 8),
    /// `DATA_SEL(1)` (<< 29), `INT_SEL(2)` (<< 24); `WRITE_DATA` 0x37 with
    /// `WRITE_DATA_DST_SEL(5)` (<< 8); `ACQUIRE_MEM` 0x58 of 7 dwords on gfx9.
    #[test]
    fn packets_round_trip_through_the_headers_values() {
        assert_eq!(
            ib_jump(0x7f12_3456_7000, 7),
            [0xc002_3f00, 0x3456_7000, 0x7f12, 0x0080_0007]
        );
        let data = [0x1111_1111, 0x2222_2222];
        let cases: [(Repr<'_>, &[u32]); 4] = [
            (
                Repr::WriteData {
                    dst_sel: 5,
                    one_addr: false,
                    addr: 0x1_0000_2000,
                    data: &data,
                },
                &[0xc004_3700, 5 << 8, 0x2000, 1, 0x1111_1111, 0x2222_2222],
            ),
            (
                Repr::ReleaseMem(ReleaseMem {
                    event_type: 0x14,
                    event_index: 5,
                    cache_actions: 0,
                    dst_sel: 0,
                    int_sel: 2,
                    data_sel: 1,
                    addr: 0x5000,
                    data: 7,
                    int_ctxid: 42,
                }),
                &[
                    0xc006_4900,
                    0x14 | 5 << 8,
                    2 << 24 | 1 << 29,
                    0x5000,
                    0,
                    7,
                    0,
                    42,
                ],
            ),
            (
                Repr::AcquireMem(AcquireMem {
                    coher_cntl: 0x2880_0000,
                    size: 0xff_ffff_ffff,
                    base: 0,
                    poll_interval: 4,
                }),
                &[0xc005_5800, 0x2880_0000, 0xffff_ffff, 0xff, 0, 0, 4],
            ),
            (Repr::Nop { count: 1 }, &[0xc001_1000]),
        ];
        for (repr, golden) in cases {
            let mut d = [0u32; 8];
            repr.emit(&mut Packet::new_unchecked(&mut d[..]));
            assert_eq!(&d[..golden.len()], golden, "{repr:?}");
            if !matches!(repr, Repr::Nop { .. }) {
                let p = Packet::new_checked(golden).unwrap();
                assert_eq!(Repr::parse(&p), Ok(repr));
            }
        }
        assert_eq!(Header::parse(PACKET2).packet_dwords(), Some(1));
        assert_eq!(
            Header::parse(packet3(OP_NOP, 0x4000)).packet_dwords(),
            Some(1)
        );
        assert_eq!(
            Header::parse(0x0000_1234),
            Header::Type0 { register: 0x1234 }
        );
        assert_eq!(Header::parse(0x4000_0000), Header::Reserved);
    }

    #[test]
    fn malformed_packets_are_named() {
        assert!(matches!(
            Packet::new_checked(&[0x0000_1234u32][..]),
            Err(WireError::UnknownOpcode { .. })
        ));
        assert!(matches!(
            Packet::new_checked(&[0xc002_3f00u32, 0][..]),
            Err(WireError::Truncated {
                needed: 4,
                available: 2,
                ..
            })
        ));
        let unknown = [packet3(0x2d, 1), 0];
        assert!(matches!(
            Repr::parse(&Packet::new_unchecked(&unknown[..])),
            Err(WireError::UnknownOpcode { .. })
        ));
        let short_ib = [packet3(OP_INDIRECT_BUFFER, 2), 0, 0];
        assert!(Repr::parse(&Packet::new_unchecked(&short_ib[..])).is_err());
        assert!(Packet::new_checked(&[][..]).is_err());
    }
}
