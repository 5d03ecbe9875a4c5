//! [`FlatMemory`]: device memory of regions at fixed addresses.

use std::cell::RefCell;

use hsa_core::{error, Result, Status};

/// Device memory as a test builds it: a few regions, each a byte vector at a device address,
/// in one flat 64-bit address space. An access (read or write) must lie wholly inside one
/// region, else it is a [`Status::MemoryFault`] naming its size and address, as the emulated
/// device's bounds checks report it. Message interrupts a kernel raises
/// (`s_sendmsg sendmsg(MSG_INTERRUPT)`) are kept in order ([`FlatMemory::interrupts`]).
///
/// Not `Sync`: one dispatch on one thread, as the interpreter's tests run it.
#[derive(Debug, Default)]
pub struct FlatMemory {
    regions: RefCell<Vec<(u64, Vec<u8>)>>,
    interrupts: RefCell<Vec<u32>>,
}

impl FlatMemory {
    /// Memory with no region.
    pub fn new() -> FlatMemory {
        FlatMemory::default()
    }

    /// Adds a region of `bytes` at `addr` (regions must not overlap; the first that holds an
    /// access serves it).
    pub fn add(&self, addr: u64, bytes: Vec<u8>) {
        self.regions.borrow_mut().push((addr, bytes));
    }

    /// The `len` bytes at `addr`.
    ///
    /// # Panics
    /// When they are not inside one region (a test's own mistake).
    pub fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        if let Err(e) = self.read(addr, &mut v) {
            panic!("FlatMemory::get: {e}");
        }
        v
    }

    /// The whole region that starts at `addr`.
    ///
    /// # Panics
    /// When no region starts there.
    pub fn region(&self, addr: u64) -> Vec<u8> {
        let r = self.regions.borrow();
        match r.iter().find(|(b, _)| *b == addr) {
            Some((_, bytes)) => bytes.clone(),
            None => panic!("FlatMemory::region: no region starts at {addr:#x}"),
        }
    }

    /// The data of every message interrupt raised so far, in order.
    pub fn interrupts(&self) -> Vec<u32> {
        self.interrupts.borrow().clone()
    }

    /// Records a message interrupt with `data`.
    pub fn raise_interrupt(&self, data: u32) {
        self.interrupts.borrow_mut().push(data);
    }

    /// Reads `buf.len()` bytes at `addr`.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the size and address when they are not inside one
    /// region.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        for (base, bytes) in self.regions.borrow().iter() {
            if let Some(o) = offset_in(*base, bytes.len(), addr, buf.len()) {
                buf.copy_from_slice(&bytes[o..o + buf.len()]);
                return Ok(());
            }
        }
        Err(error!(
            Status::MemoryFault,
            "read of {} bytes at {addr:#x}",
            buf.len()
        ))
    }

    /// Writes `data` at `addr`.
    ///
    /// # Errors
    /// As [`FlatMemory::read`].
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        for (base, bytes) in self.regions.borrow_mut().iter_mut() {
            if let Some(o) = offset_in(*base, bytes.len(), addr, data.len()) {
                bytes[o..o + data.len()].copy_from_slice(data);
                return Ok(());
            }
        }
        Err(error!(
            Status::MemoryFault,
            "write of {} bytes at {addr:#x}",
            data.len()
        ))
    }

    /// The base of the one region holding every access of `n` bytes at `addrs[lane]` for the
    /// lanes set in `lanes`; `None` when they span several (or none).
    #[cfg(feature = "device-memory")]
    fn lanes_region(&self, addrs: &[u64; 64], lanes: u64, n: usize) -> Option<u64> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for (lane, &a) in addrs.iter().enumerate() {
            if lanes >> lane & 1 != 0 {
                lo = lo.min(a);
                hi = hi.max(a.checked_add(n as u64)?);
            }
        }
        let regions = self.regions.borrow();
        regions
            .iter()
            .find(|(b, bytes)| {
                lo < hi && offset_in(*b, bytes.len(), lo, (hi - lo) as usize).is_some()
            })
            .map(|(b, _)| *b)
    }
}

/// The offset of `len` bytes at `addr` in a region of `size` bytes at `base`, when they lie
/// wholly inside it.
fn offset_in(base: u64, size: usize, addr: u64, len: usize) -> Option<usize> {
    let o = addr.checked_sub(base)?;
    let end = o.checked_add(len as u64)?;
    (end <= size as u64).then_some(o as usize)
}

#[cfg(feature = "device-memory")]
mod device_memory {
    use hsa_gfx9::exec::DeviceMemory;

    use super::{offset_in, FlatMemory};

    impl DeviceMemory for FlatMemory {
        fn read(&self, addr: u64, buf: &mut [u8]) -> hsa_core::Result<()> {
            FlatMemory::read(self, addr, buf)
        }

        fn write(&self, addr: u64, data: &[u8]) -> hsa_core::Result<()> {
            FlatMemory::write(self, addr, data)
        }

        // One region lookup per wave-instruction when every lane's access is in one region
        // (as the emulated device's memory does); else lane by lane, with the same results.
        fn read_lanes(
            &self,
            addrs: &[u64; 64],
            lanes: u64,
            n: usize,
            out: &mut [[u8; 16]; 64],
        ) -> Result<(), (usize, hsa_core::Error)> {
            let active = || (0..64).filter(move |l| lanes >> l & 1 != 0);
            let Some(base) = self.lanes_region(addrs, lanes, n) else {
                for lane in active() {
                    FlatMemory::read(self, addrs[lane], &mut out[lane][..n])
                        .map_err(|e| (lane, e))?;
                }
                return Ok(());
            };
            let regions = self.regions.borrow();
            let bytes = regions
                .iter()
                .find(|(b, _)| *b == base)
                .map(|(_, bytes)| bytes)
                .ok_or((
                    0,
                    hsa_core::error!(hsa_core::Status::Error, "region vanished"),
                ))?;
            for lane in active() {
                let o = offset_in(base, bytes.len(), addrs[lane], n).unwrap_or(0);
                out[lane][..n].copy_from_slice(&bytes[o..o + n]);
            }
            Ok(())
        }

        fn write_lanes(
            &self,
            addrs: &[u64; 64],
            lanes: u64,
            n: usize,
            data: &[[u8; 16]; 64],
        ) -> Result<(), (usize, hsa_core::Error)> {
            let active = || (0..64).filter(move |l| lanes >> l & 1 != 0);
            let Some(base) = self.lanes_region(addrs, lanes, n) else {
                for lane in active() {
                    FlatMemory::write(self, addrs[lane], &data[lane][..n])
                        .map_err(|e| (lane, e))?;
                }
                return Ok(());
            };
            let mut regions = self.regions.borrow_mut();
            let Some((_, bytes)) = regions.iter_mut().find(|(b, _)| *b == base) else {
                return Err((
                    0,
                    hsa_core::error!(hsa_core::Status::Error, "region vanished"),
                ));
            };
            for lane in active() {
                let o = offset_in(base, bytes.len(), addrs[lane], n).unwrap_or(0);
                bytes[o..o + n].copy_from_slice(&data[lane][..n]);
            }
            Ok(())
        }

        fn message_interrupt(&self, data: u32) -> hsa_core::Result<()> {
            self.raise_interrupt(data);
            Ok(())
        }

        /// The host's `CLOCK_MONOTONIC` in nanoseconds (the emulated device's clock).
        fn clock_counter(&self) -> u64 {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
            (t.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(t.tv_nsec as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_inside_one_region_only() {
        let m = FlatMemory::new();
        m.add(0x1000, vec![1, 2, 3, 4]);
        m.add(0x1004, vec![5, 6, 7, 8]);
        assert_eq!(m.get(0x1002, 2), [3, 4]);
        // Two regions side by side are still two: an access across them faults.
        let e = m.read(0x1002, &mut [0; 4]).unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault);
        assert_eq!(e.detail(), "read of 4 bytes at 0x1002");
        m.write(0x1005, &[9]).unwrap();
        assert_eq!(m.region(0x1004), [5, 9, 7, 8]);
        let e = m.write(u64::MAX, &[0; 2]).unwrap_err();
        assert_eq!(e.detail(), "write of 2 bytes at 0xffffffffffffffff");
        m.raise_interrupt(7);
        assert_eq!(m.interrupts(), [7]);
    }
}
