//! The soc15 interrupt-handler (IH) ring: entry decode and the ring reader.
//!
//! An entry is 32 bytes = 8 little-endian dwords:
//!
//! | dword | bits | field |
//! |---|---|---|
//! | 0 | \[7:0\] | `client_id` (`soc15_ih_clientid`) |
//! | 0 | \[15:8\] | `source_id` |
//! | 0 | \[23:16\] | `ring_id` |
//! | 0 | \[27:24\] | `vmid` |
//! | 0 | \[31\] | `vmid_type` (`vmid_src`: 0 GFX hub, 1 MM hub) |
//! | 1 | \[31:0\] | timestamp \[31:0\] |
//! | 2 | \[15:0\] | timestamp \[47:32\] |
//! | 2 | \[31\] | `timestamp_src` |
//! | 3 | \[15:0\] | `pasid` |
//! | 3 | \[23:16\] | `node_id` |
//! | 4..7 | | `src_data[0..4]` (KFD's `context_id0..3`) |
//!
//! Ref: linux `amdgpu/amdgpu_ih.c` (`amdgpu_ih_decode_iv_helper`), `amdkfd/soc15_int.h`
//! (`SOC15_*_FROM_IH_ENTRY`), `include/soc15_ih_clientid.h`.
//!
//! No-panic contract: [`IhEntry::decode`] and [`IhRing::drain`] never panic on any bytes or
//! pointer values; bad input becomes an [`IhError`].

use core::fmt;
use core::sync::atomic::{fence, Ordering};

use crate::mmio::{MmioError, MmioRegion};

/// Bytes per soc15 IH entry.
pub const IH_ENTRY_BYTES: u32 = 32;
/// `IH_RB_WPTR.RB_OVERFLOW` (bit 0 of the write pointer; the offset itself is 32-aligned).
///
/// Ref: `vega10_ih_get_wptr` (`REG_GET_FIELD(wptr, IH_RB_WPTR, RB_OVERFLOW)`).
pub const WPTR_OVERFLOW: u32 = 1;

/// dword 0 bits \[30:28\], which no soc15 field uses.
const DW0_RESERVED: u32 = 0x7000_0000;
/// dword 2 bits \[30:16\], which no soc15 field uses.
const DW2_RESERVED: u32 = 0x7fff_0000;
/// dword 3 bits \[31:24\], which no soc15 field uses.
const DW3_RESERVED: u32 = 0xff00_0000;

/// What was wrong with an entry or with the ring pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IhError {
    /// Bits no soc15 field uses were set (Linux ignores them; here they mark a torn or
    /// corrupt entry): which dword and its value.
    ReservedBits {
        /// The dword (0..8).
        dword: u8,
        /// Its whole value.
        value: u32,
    },
    /// The write pointer is not a multiple of 32 bytes (after masking the overflow bit).
    MisalignedWptr(u32),
    /// An MMIO access failed (the host's ring description is inconsistent).
    Mmio(MmioError),
}

impl fmt::Display for IhError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IhError::ReservedBits { dword, value } => {
                write!(
                    f,
                    "IH entry dword {dword} = {value:#010x} has reserved bits set"
                )
            }
            IhError::MisalignedWptr(w) => {
                write!(f, "IH write pointer {w:#x} is not a multiple of 32")
            }
            IhError::Mmio(e) => write!(f, "IH ring access: {e}"),
        }
    }
}

impl IhError {
    /// The error as integers, for an [`Error::lazy`](hsa_core::Error::lazy) message: the
    /// variant (0, 1, 2), then its fields ([`MmioError`]'s own values for `Mmio`).
    pub(crate) const fn to_values(self) -> [u64; 5] {
        match self {
            IhError::ReservedBits { dword, value } => [0, dword as u64, value as u64, 0, 0],
            IhError::MisalignedWptr(w) => [1, w as u64, 0, 0, 0],
            IhError::Mmio(e) => {
                let [k, a, b, c] = e.to_values();
                [2, k, a, b, c]
            }
        }
    }

    /// The error [`to_values`](Self::to_values) gave `v` for (the casts back are exact).
    pub(crate) const fn from_values(v: [u64; 5]) -> IhError {
        match v[0] {
            0 => IhError::ReservedBits {
                dword: v[1] as u8,
                value: v[2] as u32,
            },
            1 => IhError::MisalignedWptr(v[1] as u32),
            _ => IhError::Mmio(MmioError::from_values([v[1], v[2], v[3], v[4]])),
        }
    }
}

impl From<MmioError> for IhError {
    fn from(e: MmioError) -> IhError {
        IhError::Mmio(e)
    }
}

/// One decoded soc15 IH entry (`struct amdgpu_iv_entry` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IhEntry {
    /// `client_id`: which IP block raised it (e.g. 0x14 `SOC15_IH_CLIENTID_GRBM_CP`).
    pub client_id: u8,
    /// `src_id`: which source inside the client (e.g. 181 CP end-of-pipe).
    pub source_id: u8,
    /// `ring_id`: me/pipe/queue for CP sources.
    pub ring_id: u8,
    /// `vmid`.
    pub vmid: u8,
    /// `vmid_src`: 0 GFX hub, 1 MM hub.
    pub vmid_type: bool,
    /// 48-bit timestamp.
    pub timestamp: u64,
    /// `timestamp_src`.
    pub timestamp_src: bool,
    /// `pasid`.
    pub pasid: u16,
    /// `node_id`.
    pub node_id: u8,
    /// `src_data[0..4]` (KFD `context_id0..3`).
    pub src_data: [u32; 4],
}

impl IhEntry {
    /// Decodes a 32-byte entry.
    ///
    /// # Errors
    /// [`IhError::ReservedBits`] when dword 0 bits \[30:28\], dword 2 bits \[30:16\] or dword 3
    /// bits \[31:24\] are non-zero.
    pub fn decode(bytes: &[u8; 32]) -> Result<IhEntry, IhError> {
        let mut dw = [0u32; 8];
        for (d, c) in dw.iter_mut().zip(bytes.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        for (i, mask) in [(0u8, DW0_RESERVED), (2, DW2_RESERVED), (3, DW3_RESERVED)] {
            let v = dw[i as usize];
            if v & mask != 0 {
                return Err(IhError::ReservedBits { dword: i, value: v });
            }
        }
        Ok(IhEntry {
            client_id: dw[0] as u8,
            source_id: (dw[0] >> 8) as u8,
            ring_id: (dw[0] >> 16) as u8,
            vmid: ((dw[0] >> 24) & 0xf) as u8,
            vmid_type: dw[0] >> 31 != 0,
            timestamp: u64::from(dw[1]) | (u64::from(dw[2] & 0xffff) << 32),
            timestamp_src: dw[2] >> 31 != 0,
            pasid: dw[3] as u16,
            node_id: (dw[3] >> 16) as u8,
            src_data: [dw[4], dw[5], dw[6], dw[7]],
        })
    }

    /// Encodes the entry as the hardware would write it (the inverse of [`decode`](Self::decode);
    /// for tests, simulators and fuzzing). The timestamp is cut to 48 bits, `vmid` to 4.
    pub fn encode(&self) -> [u8; 32] {
        let dw = [
            u32::from(self.client_id)
                | u32::from(self.source_id) << 8
                | u32::from(self.ring_id) << 16
                | u32::from(self.vmid & 0xf) << 24
                | u32::from(self.vmid_type) << 31,
            self.timestamp as u32,
            ((self.timestamp >> 32) as u32 & 0xffff) | u32::from(self.timestamp_src) << 31,
            u32::from(self.pasid) | u32::from(self.node_id) << 16,
            self.src_data[0],
            self.src_data[1],
            self.src_data[2],
            self.src_data[3],
        ];
        let mut out = [0u8; 32];
        for (c, d) in out.chunks_exact_mut(4).zip(dw) {
            c.copy_from_slice(&d.to_le_bytes());
        }
        out
    }
}

/// What one pass over the ring saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Entries read (decoded or not).
    pub entries: u32,
    /// Entries that failed to decode.
    pub malformed: u32,
    /// Whether the write pointer reported an overflow.
    pub overflow: bool,
    /// Whether the write pointer itself was malformed (entries between were skipped).
    pub bad_wptr: bool,
}

/// The IH ring reader: the ring, the write-pointer write-back and the read-pointer register,
/// plus the read pointer (bytes) it keeps.
///
/// Not `Sync`-safe by itself for concurrent drains: [`crate::irq`] serialises callers.
#[derive(Debug)]
pub struct IhRing {
    ring: MmioRegion,
    wptr: MmioRegion,
    rptr_reg: MmioRegion,
    rptr_offset: usize,
    ptr_mask: u32,
    rptr: u32,
    /// The raw write pointer (overflow bit set) whose overflow was already handled, so that a
    /// second drain before the IH writes again does not restart and re-read the ring.
    overflow_handled: Option<u32>,
}

impl IhRing {
    /// A reader over `ring` (`size_bytes` = `ring.size_bytes()`, a power of two >= 32), the
    /// 4-byte write-pointer write-back `wptr`, and the read-pointer register at
    /// `rptr_offset` in `rptr_reg`. The read pointer starts at 0.
    ///
    /// # Errors
    /// [`IhError::Mmio`] with `OutOfBounds`/`Misaligned` when the ring size is not a power of
    /// two >= 32 or does not fit 32 bits, or the registers do not fit their regions.
    pub fn new(
        ring: MmioRegion,
        wptr: MmioRegion,
        rptr_reg: MmioRegion,
        rptr_offset: usize,
    ) -> Result<IhRing, IhError> {
        let size = ring.size_bytes();
        if !size.is_power_of_two() || size < IH_ENTRY_BYTES as usize || u32::try_from(size).is_err()
        {
            return Err(IhError::Mmio(MmioError::Misaligned {
                offset: size,
                width: 32,
            }));
        }
        wptr.read32(0)?;
        if rptr_offset % 4 != 0
            || rptr_offset
                .checked_add(4)
                .is_none_or(|e| e > rptr_reg.size_bytes())
        {
            return Err(IhError::Mmio(MmioError::OutOfBounds {
                offset: rptr_offset,
                width: 4,
                size_bytes: rptr_reg.size_bytes(),
            }));
        }
        Ok(IhRing {
            ring,
            wptr,
            rptr_reg,
            rptr_offset,
            ptr_mask: size as u32 - 1,
            rptr: 0,
            overflow_handled: None,
        })
    }

    /// The current read pointer, bytes.
    pub fn rptr(&self) -> u32 {
        self.rptr
    }

    /// Ring size, bytes.
    pub fn size_bytes(&self) -> u32 {
        self.ptr_mask + 1
    }

    /// Reads every entry from the read pointer up to the write pointer, calling `f` with each
    /// decode result, then writes the read pointer back to the register. Handles wrap-around;
    /// on overflow (`RB_OVERFLOW`) restarts at `wptr + 32`, the oldest entry not overwritten,
    /// as Linux does — once per overflowed write-pointer value: a drain that finds the same
    /// overflowed value again (a spurious or repeated interrupt before the IH wrote anew) does
    /// not restart, so no entry is read twice. Never blocks, never allocates.
    ///
    /// Ordering: an Acquire fence after the write-pointer load orders it before the entry
    /// loads (Linux `amdgpu_ih_process`: `rmb()` "Order reading of wptr vs. reading of IH ring
    /// data"), pairing with the writer's Release between entry and write-pointer stores.
    pub fn drain(&mut self, mut f: impl FnMut(Result<IhEntry, IhError>)) -> DrainStats {
        let mut stats = DrainStats::default();
        let raw = match self.wptr.read32(0) {
            Ok(w) => w,
            Err(_) => return stats,
        };
        fence(Ordering::Acquire);
        let wptr = raw & !WPTR_OVERFLOW & self.ptr_mask;
        if raw & WPTR_OVERFLOW != 0 {
            if self.overflow_handled != Some(raw) {
                stats.overflow = true;
                self.overflow_handled = Some(raw);
                self.rptr = (wptr + IH_ENTRY_BYTES) & self.ptr_mask;
            }
        } else {
            self.overflow_handled = None;
        }
        if wptr % IH_ENTRY_BYTES != 0 {
            stats.bad_wptr = true;
            f(Err(IhError::MisalignedWptr(raw)));
            self.rptr = wptr & !(IH_ENTRY_BYTES - 1);
        }
        // Bounded without a counter: the read pointer starts at 0 and every value it takes
        // is a multiple of 32 below the ring size, as is `wptr` here, so stepping by 32
        // modulo the size reaches `wptr` within size / 32 - 1 entries, whatever the
        // register said. (A separate budget was dead code: cargo-mutants changed its
        // arithmetic and nothing could tell.)
        let wptr = wptr & !(IH_ENTRY_BYTES - 1);
        while self.rptr != wptr {
            stats.entries += 1;
            let r = self
                .ring
                .read_bytes::<32>(self.rptr as usize)
                .map_err(IhError::from);
            let r = r.and_then(|b| IhEntry::decode(&b));
            if r.is_err() {
                stats.malformed += 1;
            }
            f(r);
            self.rptr = (self.rptr + IH_ENTRY_BYTES) & self.ptr_mask;
        }
        let _ = self.rptr_reg.write32(self.rptr_offset, self.rptr);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_matches_hand_built_dwords() {
        let dw: [u32; 8] = [
            0x8a05_b514, // vmid_type 1, vmid 0xa, ring 5, src 0xb5 (181), client 0x14
            0x89ab_cdef,
            0x8000_1234, // timestamp_src 1, ts hi 0x1234
            0x0003_beef, // node 3, pasid 0xbeef
            42,
            0x1111_1111,
            0x2222_2222,
            0xffff_ffff,
        ];
        let mut b = [0u8; 32];
        for (c, d) in b.chunks_exact_mut(4).zip(dw) {
            c.copy_from_slice(&d.to_le_bytes());
        }
        let e = IhEntry::decode(&b).unwrap();
        assert_eq!(e.client_id, 0x14);
        assert_eq!(e.source_id, 181);
        assert_eq!(e.ring_id, 5);
        assert_eq!(e.vmid, 0xa);
        assert!(e.vmid_type);
        assert_eq!(e.timestamp, 0x1234_89ab_cdef);
        assert!(e.timestamp_src);
        assert_eq!(e.pasid, 0xbeef);
        assert_eq!(e.node_id, 3);
        assert_eq!(e.src_data, [42, 0x1111_1111, 0x2222_2222, 0xffff_ffff]);
        assert_eq!(e.encode(), b);
    }

    /// Every error survives the integers an `Error::lazy` message keeps, extreme values too.
    #[test]
    fn errors_round_trip_through_their_values() {
        let all = [
            IhError::ReservedBits {
                dword: 7,
                value: u32::MAX,
            },
            IhError::MisalignedWptr(0x8000_0004),
            IhError::Mmio(MmioError::OutOfBounds {
                offset: usize::MAX,
                width: 8,
                size_bytes: 0x1000,
            }),
            IhError::Mmio(MmioError::Misaligned {
                offset: 0x1002,
                width: 4,
            }),
            IhError::Mmio(MmioError::BadBase(0x7)),
        ];
        for e in all {
            assert_eq!(IhError::from_values(e.to_values()), e);
            if let IhError::Mmio(m) = e {
                assert_eq!(MmioError::from_values(m.to_values()), m);
            }
        }
    }

    /// The texts a host's log shows for each error (the fields in the format the docs give).
    #[test]
    fn errors_display_what_is_wrong() {
        let t = |e: IhError| std::format!("{e}");
        assert_eq!(
            t(IhError::ReservedBits {
                dword: 3,
                value: 0x8000_0000
            }),
            "IH entry dword 3 = 0x80000000 has reserved bits set"
        );
        assert_eq!(
            t(IhError::MisalignedWptr(0x8000_0004)),
            "IH write pointer 0x80000004 is not a multiple of 32"
        );
        let m = MmioError::Misaligned {
            offset: 0x1002,
            width: 4,
        };
        assert_eq!(t(IhError::Mmio(m)), std::format!("IH ring access: {m}"));
        assert!(t(IhError::Mmio(m)).len() > "IH ring access: ".len());
    }

    /// The ring's size is the region's: 128 bytes here (4 entries), 64 KiB as amdgpu sizes
    /// the IH ring of a soc15 GPU.
    #[test]
    fn size_bytes_is_the_rings_size() {
        let (r, _ring) = crate::mmio::test_region(16);
        let (w, _wptr) = crate::mmio::test_region(1);
        let (rp, _rptr) = crate::mmio::test_region(1);
        assert_eq!(IhRing::new(r, w, rp, 0).unwrap().size_bytes(), 128);
        let (r, _ring) = crate::mmio::test_region(8192);
        assert_eq!(IhRing::new(r, w, rp, 0).unwrap().size_bytes(), 65536);
    }

    #[test]
    fn reserved_bits_are_errors_naming_the_dword() {
        let mut b = IhEntry {
            client_id: 0x14,
            source_id: 181,
            ..Default::default()
        }
        .encode();
        b[3] |= 0x10; // dword 0 bit 28
        assert_eq!(
            IhEntry::decode(&b),
            Err(IhError::ReservedBits {
                dword: 0,
                value: 0x1000_b514
            })
        );
        let mut b = IhEntry::default().encode();
        b[10] = 1; // dword 2 bit 16
        assert_eq!(
            IhEntry::decode(&b),
            Err(IhError::ReservedBits {
                dword: 2,
                value: 0x0001_0000
            })
        );
        let mut b = IhEntry::default().encode();
        b[15] = 0x80; // dword 3 bit 31
        assert_eq!(
            IhEntry::decode(&b),
            Err(IhError::ReservedBits {
                dword: 3,
                value: 0x8000_0000
            })
        );
    }

    #[test]
    fn ring_drains_wraps_and_handles_overflow() {
        let (r, _ring) = crate::mmio::test_region(16); // 128 bytes = 4 entries
        let (w, _wptr) = crate::mmio::test_region(1);
        let (rp, _rptr) = crate::mmio::test_region(1);
        let mut ih = IhRing::new(r, w, rp, 4).unwrap();
        let put = |slot: usize, data: u32| {
            let e = IhEntry {
                client_id: 0x14,
                source_id: 181,
                src_data: [data, 0, 0, 0],
                ..Default::default()
            };
            for (i, c) in e.encode().chunks_exact(4).enumerate() {
                r.write32(
                    slot * 32 + i * 4,
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                )
                .unwrap();
            }
        };
        let mut seen = [0u32; 8];
        let mut n = 0;
        put(0, 10);
        put(1, 11);
        put(2, 12);
        w.write32(0, 96).unwrap();
        let s = ih.drain(|e| {
            seen[n] = e.unwrap().src_data[0];
            n += 1;
        });
        assert_eq!((s.entries, s.malformed, s.overflow), (3, 0, false));
        assert_eq!(&seen[..3], &[10, 11, 12]);
        assert_eq!(rp.read32(4).unwrap(), 96);
        // wrap: slots 3, 0
        put(3, 13);
        put(0, 14);
        w.write32(0, 32).unwrap();
        let s = ih.drain(|e| {
            seen[n] = e.unwrap().src_data[0];
            n += 1;
        });
        assert_eq!(s.entries, 2);
        assert_eq!(&seen[3..5], &[13, 14]);
        assert_eq!(ih.rptr(), 32);
        // overflow at wptr 64: restart at 96 (oldest kept entry), read slots 3, 0, 1
        put(3, 23);
        put(0, 20);
        put(1, 21);
        w.write32(0, 64 | WPTR_OVERFLOW).unwrap();
        let s = ih.drain(|e| {
            seen[n] = e.unwrap().src_data[0];
            n += 1;
        });
        assert!(s.overflow);
        assert_eq!(s.entries, 3);
        assert_eq!(&seen[5..8], &[23, 20, 21]);
        assert_eq!(rp.read32(4).unwrap(), 64);
        // the same overflowed write pointer again (a repeated interrupt): nothing is re-read
        let s = ih.drain(|_| panic!("no entry may be read twice"));
        assert_eq!((s.entries, s.overflow), (0, false));
        assert_eq!(ih.rptr(), 64);
        // a misaligned write pointer is reported, and nothing is read past it
        w.write32(0, 70).unwrap();
        let mut errs = 0;
        let s = ih.drain(|e| {
            if e.is_err() {
                errs += 1;
            }
        });
        assert!(s.bad_wptr);
        assert_eq!((errs, s.entries), (1, 0));
        assert_eq!(ih.rptr(), 64);
    }
}
