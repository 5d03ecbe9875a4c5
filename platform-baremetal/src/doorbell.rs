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

/// Slots of one doorbell page (64-bit doorbells, 8 KiB): amdkfd's
/// `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`.
pub const DOORBELL_PAGE_SLOTS: u32 = 1024;
/// Different reserved-slot layouts a grant can carry ([`Doorbells::with_reserved`]).
pub const MAX_LAYOUTS: usize = 4;

/// amdkfd's `KFD_QUEUE_DOORBELL_MIRROR_OFFSET`: a page's reserved slots repeat this far up.
pub const DOORBELL_MIRROR_OFFSET: u32 = 512;

/// The slots `first..=last` of each doorbell page that amdgpu assigns on a gfx9 ASIC to
/// engines other than the MEC (SDMA, IH, VCN/UVD/VCE: its layout's
/// `first_non_cp..=last_non_cp`), which amdkfd gives no compute queue, nor their mirrors
/// [`DOORBELL_MIRROR_OFFSET`] slots up (`init_doorbell_bitmap`): vega10's layout
/// (`AMDGPU_DOORBELL64_*`, 0xF0..=0xFF) on gfx900, gfx902, gfx904, gfx909 and gfx90c
/// (`vega10_doorbell_index_init`), vega20's (`AMDGPU_VEGA20_DOORBELL_*`, 0x100..=0x18F) on
/// gfx906, gfx908 and gfx90a (`vega20_doorbell_index_init`), GC 9.4.3's "layout 1"
/// (`AMDGPU_DOORBELL_LAYOUT1_*`: SDMA from 0x100 to VCN's end 0x1E8) on gfx940, gfx941 and
/// gfx942 (`aqua_vanjaram_doorbell_index_init`). `None` for other targets (gfx950's layout is
/// not confirmed here: nothing is reserved).
///
/// Ref: linux `amdgpu/amdgpu_doorbell.h`, `amdgpu/soc15.c`, `amdkfd/kfd_process.c`.
pub const fn reserved_non_cp_slots(gfx_target_version: u32) -> Option<(u32, u32)> {
    match gfx_target_version {
        90000 | 90002 | 90004 | 90009 | 90012 => Some((0xF0, 0xFF)),
        90006 | 90008 | 90010 => Some((0x100, 0x18F)),
        90400..=90402 => Some((0x100, 0x1E8)),
        _ => None,
    }
}

/// The doorbells this runtime was granted: `count` slots from `first` in the aperture, of
/// which the slots a gfx9 doorbell page reserves for other engines are not used.
#[derive(Clone, Copy, Debug)]
pub struct Doorbells {
    aperture: MmioRegion,
    first: u32,
    count: u32,
    /// [`reserved_non_cp_slots`] of the GPUs that reserve any (each layout once; gfx9 has
    /// two).
    reserved: [Option<(u32, u32)>; MAX_LAYOUTS],
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
            reserved: [None; MAX_LAYOUTS],
        })
    }

    /// The same grant on a GPU whose doorbell pages reserve `reserved` (see
    /// [`reserved_non_cp_slots`]): those slots and their mirrors are never used, besides the
    /// slots earlier calls reserved (GPUs of different layouts sharing the grant).
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the grant and the reserved slots when every granted
    /// doorbell is reserved, or when more than [`MAX_LAYOUTS`] different layouts were given.
    pub fn with_reserved(self, reserved: (u32, u32)) -> Result<Doorbells, Error> {
        let mut d = self;
        if !d.reserved.contains(&Some(reserved)) {
            let Some(free) = d.reserved.iter_mut().find(|r| r.is_none()) else {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [MAX_LAYOUTS as u64],
                    |&[n, ..], f| write!(f, "more than {n} doorbell layouts reserve slots"),
                ));
            };
            *free = Some(reserved);
        }
        if (d.first..d.first.saturating_add(d.count)).any(|i| d.usable(DoorbellIndex(i))) {
            return Ok(d);
        }
        Err(Error::lazy(
            Status::InvalidArgument,
            [
                d.first.into(),
                u64::from(d.first) + u64::from(d.count),
                reserved.0.into(),
                reserved.1.into(),
            ],
            |&[first, end, lo, hi, ..], f| {
                write!(
                    f,
                    "every granted doorbell {first}..{end} is a slot the GPU's doorbell pages \
                     reserve for SDMA, IH and VCN ({lo:#x}..={hi:#x} and their mirrors 512 up)"
                )
            },
        ))
    }

    /// Checks the grant against the MEC's doorbell range: the values `lower` and `upper`
    /// the host programmed into `CP_MEC_DOORBELL_RANGE_LOWER` and `_UPPER` (byte offsets into
    /// the doorbell aperture of the first and the last doorbell dword the MEC takes, as
    /// amdgpu's `gfx_v9_0_kiq_init_register` writes `(index * 2) << 2`; bits 1:0 and 31:28
    /// are not part of the fields). A doorbell outside it never reaches the MEC: its queue
    /// would never run.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the grant and the range when a granted doorbell lies
    /// outside it.
    pub fn within_mec_range(self, lower: u32, upper: u32) -> Result<Doorbells, Error> {
        const FIELD: u32 = 0x0FFF_FFFC;
        let (lo, hi) = (u64::from(lower & FIELD), u64::from(upper & FIELD));
        let stride = DOORBELL_STRIDE_BYTES as u64;
        let first = u64::from(self.first) * stride;
        let last = (u64::from(self.first) + u64::from(self.count)).saturating_sub(1) * stride;
        if self.count == 0 || (lo <= first && last <= hi) {
            return Ok(self);
        }
        Err(Error::lazy(
            Status::InvalidArgument,
            [
                self.first.into(),
                u64::from(self.first) + u64::from(self.count),
                lo,
                hi,
            ],
            |&[first, end, lo, hi, ..], f| {
                write!(
                    f,
                    "granted doorbells {first}..{end} (bytes {:#x}..={:#x}) leave the MEC's \
                     doorbell range {lo:#x}..={hi:#x} (CP_MEC_DOORBELL_RANGE_LOWER/UPPER): \
                     their queues would never run",
                    first * 8,
                    end.saturating_sub(1) * 8
                )
            },
        ))
    }

    /// Whether `index` may serve a compute queue: granted, and not a reserved slot.
    pub fn usable(&self, index: DoorbellIndex) -> bool {
        let slot = index.get() % DOORBELL_PAGE_SLOTS % DOORBELL_MIRROR_OFFSET;
        let reserved = self
            .reserved
            .iter()
            .flatten()
            .any(|&(lo, hi)| lo <= slot && slot <= hi);
        self.contains(index) && !reserved
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

    /// vega10's reserved slots 0xF0..=0xFF, vega20's 0x100..=0x18F and GC 9.4.3's
    /// 0x100..=0x1E8 (layout 1's SDMA start and VCN end), in every page and
    /// mirrored 512 up; the rest of a page is usable.
    #[test]
    fn reserved_slots_follow_the_asics_doorbell_layout() {
        assert_eq!(reserved_non_cp_slots(90000), Some((0xF0, 0xFF)));
        for v in [90002, 90004, 90009, 90012] {
            assert_eq!(reserved_non_cp_slots(v), Some((0xF0, 0xFF)), "{v}");
        }
        for v in [90006, 90008, 90010] {
            assert_eq!(reserved_non_cp_slots(v), Some((0x100, 0x18F)), "{v}");
        }
        for v in [90400, 90401, 90402] {
            assert_eq!(reserved_non_cp_slots(v), Some((0x100, 0x1E8)), "{v}");
        }
        for v in [90403, 90500, 100300, 0] {
            assert_eq!(reserved_non_cp_slots(v), None, "{v}");
        }
        let (ap, _bar) = crate::mmio::test_region(4096);
        let all = Doorbells::new(ap, DoorbellIndex(0), 2048).unwrap();
        assert!(all.usable(DoorbellIndex(0x18F)), "nothing reserved yet");
        let vega20 = all.with_reserved((0x100, 0x18F)).unwrap();
        let usable = |d: &Doorbells, i: u32| d.usable(DoorbellIndex(i));
        for i in [
            0, 0xFF, 0x190, 0x1FF, 0x200, 0x2FF, 0x390, 0x3FF, 0x400, 0x4FF, 0x590,
        ] {
            assert!(usable(&vega20, i), "{i:#x}");
        }
        for i in [
            0x100, 0x18F, 0x150, 0x300, 0x38F, 0x500, 0x58F, 0x700, 0x78F,
        ] {
            assert!(!usable(&vega20, i), "{i:#x}");
        }
        assert!(!usable(&vega20, 2048), "outside the grant");
        let vega10 = all.with_reserved((0xF0, 0xFF)).unwrap();
        assert!(usable(&vega10, 0xEF) && !usable(&vega10, 0xF0) && !usable(&vega10, 0xFF));
        assert!(usable(&vega10, 0x100) && !usable(&vega10, 0x2F0) && usable(&vega10, 0x2EF));
        // A grant of reserved slots only is refused, naming both ranges; one usable slot
        // is enough.
        let e = Doorbells::new(ap, DoorbellIndex(0x300), 0x90)
            .unwrap()
            .with_reserved((0x100, 0x18F))
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail().to_string(),
            "every granted doorbell 768..912 is a slot the GPU's doorbell pages reserve for \
             SDMA, IH and VCN (0x100..=0x18f and their mirrors 512 up)"
        );
        assert!(Doorbells::new(ap, DoorbellIndex(0x300), 0x91)
            .unwrap()
            .with_reserved((0x100, 0x18F))
            .is_ok());
        // A vega10 and a vega20 sharing the grant: both layouts' slots are kept out, in either
        // order, and a layout given twice counts once.
        for both in [
            all.with_reserved((0xF0, 0xFF))
                .and_then(|d| d.with_reserved((0x100, 0x18F)))
                .unwrap(),
            vega20
                .with_reserved((0xF0, 0xFF))
                .and_then(|d| d.with_reserved((0x100, 0x18F)))
                .unwrap(),
        ] {
            for i in [0xF0, 0xFF, 0x100, 0x18F, 0x2F0, 0x38F] {
                assert!(!usable(&both, i), "{i:#x}");
            }
            for i in [0xEF, 0x190, 0x1FF, 0x200] {
                assert!(usable(&both, i), "{i:#x}");
            }
        }
        let mut d = all;
        for k in 0..MAX_LAYOUTS as u32 {
            d = d.with_reserved((k, k)).unwrap();
        }
        let e = d.with_reserved((9, 9)).unwrap_err();
        assert_eq!(
            e.detail().to_string(),
            "more than 4 doorbell layouts reserve slots"
        );
    }

    /// The grant must lie in the MEC's range, each doorbell's byte offset between the two
    /// registers' fields (both ends taken); bits outside the fields do not count.
    #[test]
    fn the_grant_must_lie_in_the_mec_doorbell_range() {
        let (ap, _bar) = crate::mmio::test_region(256);
        let grant = |first, count| Doorbells::new(ap, DoorbellIndex(first), count).unwrap();
        // amdgpu's vega10 range: KIQ 0x00 to USERQUEUE_END 0x8A, (index * 2) << 2.
        let (lower, upper) = (0, (0x8A * 2) << 2);
        assert!(grant(0x0B, 0x8A - 0x0B + 1)
            .within_mec_range(lower, upper)
            .is_ok());
        assert!(grant(0, 1).within_mec_range(lower, upper).is_ok());
        let e = grant(0x0B, 0x8A - 0x0B + 2)
            .within_mec_range(lower, upper)
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail().to_string(),
            "granted doorbells 11..140 (bytes 0x58..=0x458) leave the MEC's doorbell range \
             0x0..=0x450 (CP_MEC_DOORBELL_RANGE_LOWER/UPPER): their queues would never run"
        );
        // Below the lower end; and bits 31:28 and 1:0 of the registers are ignored.
        assert!(grant(4, 2).within_mec_range(0x28, 0x100).is_err());
        assert!(grant(5, 2)
            .within_mec_range(0xF000_002B, 0x3000_0030)
            .is_ok());
        assert!(grant(5, 3)
            .within_mec_range(0xF000_002B, 0x3000_0030)
            .is_err());
    }
}
