//! Doorbells: 64-bit volatile stores into the doorbell BAR at `aperture + index * 8`, after a
//! fence that makes the ring's packets visible first.
//!
//! Ref: soc15 64-bit doorbells (`amdgpu_doorbell.h`, `AMDGPU_DOORBELL64_*`); ROCR
//! `AqlQueue::StoreRelaxed` on the hardware doorbell; tinygrad `signal_doorbell`.

use core::sync::atomic::{fence, Ordering};

use hsa_core::{DoorbellIndex, Error, Status};

use crate::mmio::MmioRegion;

/// Bytes between two doorbells.
pub const DOORBELL_STRIDE_BYTES: usize = 8;

/// The doorbells this runtime was granted: `count` slots from `first` in the aperture.
#[derive(Clone, Copy, Debug)]
pub struct Doorbells {
    aperture: MmioRegion,
    first: u32,
    count: u32,
}

impl Doorbells {
    /// Doorbells `first .. first + count` of `aperture`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `(first + count) * 8` exceeds the aperture's size.
    pub fn new(aperture: MmioRegion, first: DoorbellIndex, count: u32) -> Result<Doorbells, Error> {
        let end = u64::from(first.get()) + u64::from(count);
        if end * DOORBELL_STRIDE_BYTES as u64 > aperture.size_bytes() as u64 {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [first.get().into(), end, aperture.size_bytes() as u64],
                |&[first, end, aperture, ..], f| {
                    write!(
                        f,
                        "doorbells {first}..{end} do not fit the {aperture:#x}-byte aperture"
                    )
                },
            ));
        }
        Ok(Doorbells {
            aperture,
            first: first.get(),
            count,
        })
    }

    /// The first granted index.
    pub fn first(&self) -> DoorbellIndex {
        DoorbellIndex(self.first)
    }

    /// How many doorbells were granted.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether `index` was granted.
    pub fn contains(&self, index: DoorbellIndex) -> bool {
        index
            .get()
            .checked_sub(self.first)
            .is_some_and(|i| i < self.count)
    }

    /// CPU virtual address of doorbell `index` (what ROCR keeps in
    /// `amd_signal_t.hardware_doorbell_ptr`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an index outside the grant.
    pub fn address(&self, index: DoorbellIndex) -> Result<u64, Error> {
        self.offset(index)
            .map(|o| (self.aperture.base_addr() + o) as u64)
    }

    fn offset(&self, index: DoorbellIndex) -> Result<usize, Error> {
        if !self.contains(index) {
            return Err(Error::lazy(
                Status::InvalidArgument,
                [
                    index.get().into(),
                    self.first.into(),
                    u64::from(self.first) + u64::from(self.count),
                ],
                |&[index, first, end, ..], f| {
                    write!(
                        f,
                        "doorbell index {index} is outside the granted {first}..{end}"
                    )
                },
            ));
        }
        Ok(index.get() as usize * DOORBELL_STRIDE_BYTES)
    }

    /// Rings doorbell `index` with `value` (an AQL queue's last valid packet index): a
    /// sequentially consistent fence, so every store to the ring and `amd_queue_t` before
    /// this call is ordered before the doorbell store, then one 64-bit volatile store.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for an index outside the grant (nothing is written).
    pub fn ring(&self, index: DoorbellIndex, value: u64) -> Result<(), Error> {
        let off = self.offset(index)?;
        // Orders the packet stores (the header's release store in the core's queue) before
        // the MMIO store; on x86 also an mfence against write-combining buffers.
        fence(Ordering::SeqCst);
        self.aperture.write64(off, value)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn ring_stores_at_index_times_8_and_checks_the_grant() {
        let (ap, bar) = crate::mmio::test_region(16);
        let bar = |i: usize| bar[i].load(core::sync::atomic::Ordering::SeqCst);
        let db = Doorbells::new(ap, DoorbellIndex(4), 8).unwrap();
        db.ring(DoorbellIndex(5), 0x1234_5678_9abc_def0).unwrap();
        db.ring(DoorbellIndex(11), 7).unwrap();
        assert_eq!(
            db.address(DoorbellIndex(5)).unwrap(),
            ap.base_addr() as u64 + 40
        );
        let e = db.ring(DoorbellIndex(3), 1).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        // The error names the index and the grant's exact half-open range (4 + 8 = 12).
        assert_eq!(
            e.detail().to_string(),
            "doorbell index 3 is outside the granted 4..12"
        );
        assert!(db.ring(DoorbellIndex(12), 1).is_err());
        assert!(Doorbells::new(ap, DoorbellIndex(10), 7).is_err());
        assert_eq!(bar(5), 0x1234_5678_9abc_def0);
        assert_eq!(bar(11), 7);
        assert_eq!((0..16).filter(|&i| bar(i) != 0).count(), 2);
    }
}
