//! The kernel interface queue (KIQ) as amdgpu drives it: a PM4 ring in memory that the MEC
//! reads queue-management packets from (`MAP_QUEUES`, `UNMAP_QUEUES`, `SET_RESOURCES`, ...,
//! [`hsa_core::wire::kiq`]), each batch followed by a `QUERY_STATUS` fence that the CP writes
//! once the packets before it are done.
//!
//! A [`Host`] whose firmware brought the KIQ up (its MQD loaded, its doorbell
//! enabled: amdgpu's `gfx_v9_0_kiq_init_queue`) maps this runtime's queues through it:
//! [`Kiq::map_queue`] writes what amdgpu's gfx9 `kiq_map_queues` writes for the queue's MQD
//! (`QueueMapping::mqd_address`), [`Kiq::unmap_queue`] what `kiq_unmap_queues` writes, and
//! [`Kiq::wait`] polls the fence.
//!
//! The write pointer counts dwords (a PM4 ring's `SLOT_BASED_WPTR` is 0); it is stored to the
//! ring's write-pointer poll address, then handed to the caller's doorbell (amdgpu:
//! `atomic64_set(wptr_cpu_addr, wptr)`, then `WDOORBELL64(doorbell_index, wptr)`). Packets
//! wrap around the ring's end dword by dword, as the CP reads them. A batch is written only
//! when the dwords the CP has not yet passed (those after the newest completed fence) leave
//! room for it.
//!
//! Ref: linux `amdgpu/gfx_v9_0.c` (`gfx_v9_0_kiq_map_queues`, `_unmap_queues`,
//! `_query_status`), `amdgpu/amdgpu_ring.c` (`amdgpu_ring_commit`),
//! `amdkfd/kfd_packet_manager.c` (`pm_send_query_status`: the fence after the packets).
#![allow(unsafe_code)] // `Kiq::new` takes the KIQ's memory on the caller's word: one block

use heapless::Deque;
use hsa_core::wire::kiq::{
    InvalidateTlbs, KiqPacket, MapQueues, QueryStatus, UnmapAction, UnmapQueues,
};
use hsa_core::{Error, GpuVa, Status};

use crate::host::{Host, QueueMapping};
use crate::mmio::MmioRegion;

/// Batches whose fence may still be outstanding (older ones are forgotten once a newer fence
/// completed, which means the CP passed them too).
pub const PENDING_BATCHES: usize = 16;

/// Dwords of the largest batch [`Kiq::submit`] takes: the packets and the fence.
pub const MAX_BATCH_DWORDS: usize = 256;

/// Where the host's firmware put the KIQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KiqConfig {
    /// CPU virtual address of the ring (4-byte aligned).
    pub ring_virt: usize,
    /// Ring size, dwords: a power of two, at least 64 (`CP_HQD_PQ_CONTROL.QUEUE_SIZE` + 1 is
    /// its log2).
    pub ring_dwords: u32,
    /// CPU virtual address of the 64-bit write pointer (dwords) the CP polls
    /// (`cp_hqd_pq_wptr_poll_addr`; 8-byte aligned).
    pub wptr_poll_virt: usize,
    /// CPU virtual address of the 64-bit fence the CP writes (8-byte aligned).
    pub fence_virt: usize,
    /// GPU address of the same fence (what `QUERY_STATUS` names).
    pub fence_gpu_va: GpuVa,
}

impl KiqConfig {
    /// Bytes of a KIQ block of [`KiqConfig::identity_block`] with a ring of `ring_dwords`: the
    /// ring, the 8-byte write-pointer poll word and the 8-byte fence.
    pub const fn identity_block_bytes(ring_dwords: u32) -> usize {
        4 * ring_dwords as usize + 16
    }

    /// The KIQ of one block of memory the GPU reaches at its CPU address (identity-mapped, as
    /// a firmware's own pages often are): the ring of `ring_dwords` dwords at `base`, then the
    /// write-pointer poll word, then the fence ([`KiqConfig::identity_block_bytes`] bytes in
    /// all). `None` when the block would pass the end of the address space. The sizes and
    /// alignments are [`Kiq::new`]'s to check.
    pub const fn identity_block(base: usize, ring_dwords: u32) -> Option<KiqConfig> {
        let Some(end) = base.checked_add(Self::identity_block_bytes(ring_dwords)) else {
            return None;
        };
        let wptr = end - 16;
        Some(KiqConfig {
            ring_virt: base,
            ring_dwords,
            wptr_poll_virt: wptr,
            fence_virt: wptr + 8,
            fence_gpu_va: GpuVa((wptr + 8) as u64),
        })
    }
}

/// A KIQ ring this runtime writes (one writer: the caller serializes).
#[derive(Debug)]
pub struct Kiq {
    ring: MmioRegion,
    ring_dwords: u32,
    wptr_poll: MmioRegion,
    fence: MmioRegion,
    fence_gpu_va: GpuVa,
    /// Dwords written since the ring was set up (the ring offset is this modulo the size).
    wptr: u64,
    /// The sequence number of the newest batch.
    seq: u64,
    /// `(fence sequence, write pointer after the batch)` of the batches not yet seen done.
    pending: Deque<(u64, u64), PENDING_BATCHES>,
    /// The write pointer the CP has certainly passed (after the newest completed fence).
    consumed: u64,
}

impl Kiq {
    /// The KIQ of `config`, starting at write pointer 0 with the fence at 0 (the CP's
    /// read pointer at 0: a freshly loaded KIQ).
    ///
    /// # Safety
    /// The ring (`4 * ring_dwords` bytes), the write-pointer poll word and the fence are
    /// mapped read-write for as long as the value lives, the fence is `fence_gpu_va` for the
    /// GPU, and no one else writes the ring or the write pointer.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the field: a ring size that is not a power of two of
    /// at least 64 dwords (or whose bytes overflow the address space), a misaligned or null
    /// address, a fence GPU address not 8-byte aligned.
    pub unsafe fn new(config: &KiqConfig) -> Result<Kiq, Error> {
        let bad = Status::InvalidArgument;
        let n = config.ring_dwords;
        if !n.is_power_of_two() || n < 64 {
            return Err(Error::lazy(bad, [n.into()], |&[n, ..], f| {
                write!(
                    f,
                    "KIQ ring of {n} dwords is not a power of two of at least 64"
                )
            }));
        }
        let words = [
            ("KIQ ring", config.ring_virt, 4),
            ("KIQ write-pointer poll address", config.wptr_poll_virt, 8),
            ("KIQ fence address", config.fence_virt, 8),
        ];
        for (what, addr, align) in words {
            if addr == 0 || addr % align != 0 {
                hsa_core::bail!(bad, "{what} {addr:#x} is null or not {align}-byte aligned");
            }
        }
        if !config.fence_gpu_va.is_aligned(8) {
            return Err(Error::lazy(
                bad,
                [config.fence_gpu_va.get()],
                |&[a, ..], f| write!(f, "KIQ fence GPU address {a:#x} is not 8-byte aligned"),
            ));
        }
        let region = |addr: usize, bytes: usize| {
            // SAFETY: the caller guarantees the mapping of each block for our life.
            unsafe { MmioRegion::new(addr, bytes) }.map_err(Error::from)
        };
        let ring = region(config.ring_virt, 4 * n as usize)?;
        let wptr_poll = region(config.wptr_poll_virt, 8)?;
        let fence = region(config.fence_virt, 8)?;
        Ok(Kiq {
            ring,
            ring_dwords: n,
            wptr_poll,
            fence,
            fence_gpu_va: config.fence_gpu_va,
            wptr: 0,
            seq: 0,
            pending: Deque::new(),
            consumed: 0,
        })
    }

    /// The write pointer, dwords since setup.
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// The fence value the CP wrote last: the sequence number of the newest batch done.
    pub fn completed(&self) -> u64 {
        self.fence.read64(0).unwrap_or(0)
    }

    /// Forgets the batches the fence says are done, advancing what the CP has passed.
    fn retire(&mut self) {
        let done = self.completed();
        while let Some(&(seq, end)) = self.pending.front() {
            if seq > done {
                break;
            }
            self.consumed = end;
            self.pending.pop_front();
        }
    }

    /// Writes `packets` and a `QUERY_STATUS` fence of the next sequence number into the
    /// ring, publishes the write pointer to the poll address (Release), then calls `doorbell`
    /// with it (dwords), and returns the sequence number [`wait`](Kiq::wait) waits for.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when a packet does not encode (its field named) or the batch
    /// is longer than [`MAX_BATCH_DWORDS`]; `Status::OutOfResources` when the ring lacks the
    /// room (the CP has not passed enough earlier batches) or [`PENDING_BATCHES`] batches are
    /// outstanding. Nothing is written then.
    pub fn submit(
        &mut self,
        packets: &[KiqPacket],
        doorbell: impl FnOnce(u64),
    ) -> Result<u64, Error> {
        self.retire();
        let seq = self.seq + 1;
        let fence = KiqPacket::QueryStatus(QueryStatus::fence(self.fence_gpu_va.get(), seq));
        let mut batch = [0u32; MAX_BATCH_DWORDS];
        let mut n = 0;
        for p in packets.iter().chain(core::iter::once(&fence)) {
            let out = batch.get_mut(n..).unwrap_or(&mut []);
            n += p
                .emit(out)
                .map_err(|e| hsa_core::error!(Status::InvalidArgument, "KIQ batch: {e}"))?;
        }
        let in_flight = self.wptr - self.consumed;
        if in_flight + n as u64 > u64::from(self.ring_dwords) || self.pending.is_full() {
            return Err(Error::lazy(
                Status::OutOfResources,
                [n as u64, in_flight, self.ring_dwords.into()],
                |&[n, in_flight, size, ..], f| {
                    write!(
                        f,
                        "KIQ ring full: a {n}-dword batch with {in_flight} of {size} dwords \
                         not yet passed by the CP"
                    )
                },
            ));
        }
        let mask = u64::from(self.ring_dwords - 1);
        for (i, &d) in batch[..n].iter().enumerate() {
            let at = ((self.wptr + i as u64) & mask) as usize * 4;
            self.ring.write32(at, d).map_err(Error::from)?;
        }
        self.wptr += n as u64;
        self.seq = seq;
        // Cannot fail: the capacity was checked above.
        let _ = self.pending.push_back((seq, self.wptr));
        // The packets before the write pointer the CP polls, and both before the doorbell.
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        self.wptr_poll.write64(0, self.wptr).map_err(Error::from)?;
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        doorbell(self.wptr);
        Ok(seq)
    }

    /// Maps `m`'s queue into MEC `mec` (1 or 2), pipe `pipe`, queue slot `queue`: amdgpu's
    /// `kiq_map_queues` for the MQD at `m.mqd_address`, the doorbell's dword offset, and
    /// `m.write_pointer` as the write-pointer poll address. Returns the fence's sequence
    /// number.
    ///
    /// # Errors
    /// As [`submit`](Kiq::submit); `Status::InvalidArgument` for a slot the packet cannot
    /// name (MEC past 2, pipe past 3, queue past 7).
    pub fn map_queue(
        &mut self,
        m: &QueueMapping,
        mec: u8,
        pipe: u8,
        queue: u8,
        doorbell: impl FnOnce(u64),
    ) -> Result<u64, Error> {
        if !(1..=2).contains(&mec) {
            hsa_core::bail!(
                Status::InvalidArgument,
                "KIQ map_queue: MEC {mec} is not 1 or 2"
            );
        }
        let packet = MapQueues::amdgpu_kiq(
            mec,
            pipe,
            queue,
            m.doorbell.get().saturating_mul(2),
            m.mqd_address.get(),
            m.write_pointer.get(),
        );
        self.submit(&[KiqPacket::MapQueues(packet)], doorbell)
    }

    /// Unmaps `m`'s queue (preempting it, its state saved to its MQD): amdgpu's
    /// `kiq_unmap_queues` with `PREEMPT_QUEUES` for the queue's doorbell. Returns the fence's
    /// sequence number.
    ///
    /// # Errors
    /// As [`submit`](Kiq::submit).
    pub fn unmap_queue(
        &mut self,
        m: &QueueMapping,
        doorbell: impl FnOnce(u64),
    ) -> Result<u64, Error> {
        let packet = UnmapQueues::amdgpu_kiq(
            UnmapAction::PreemptQueues,
            m.doorbell.get().saturating_mul(2),
        );
        self.submit(&[KiqPacket::UnmapQueues(packet)], doorbell)
    }

    /// Flushes the GPU TLBs of `pasid` after its page tables changed: amdgpu's gfx9
    /// `kiq_invalidate_tlbs` (`flush_type` 0 legacy, 1 lightweight, 2 heavyweight; `all_hub`:
    /// the MM hub's too). Returns the fence's sequence number.
    ///
    /// # Errors
    /// As [`submit`](Kiq::submit); `Status::InvalidArgument` for a `flush_type` past 7.
    pub fn invalidate_tlbs(
        &mut self,
        pasid: u16,
        flush_type: u8,
        all_hub: bool,
        doorbell: impl FnOnce(u64),
    ) -> Result<u64, Error> {
        let packet = InvalidateTlbs::amdgpu_kiq(pasid, flush_type, all_hub);
        self.submit(&[KiqPacket::InvalidateTlbs(packet)], doorbell)
    }

    /// Polls the fence until it reaches `seq` or `timeout_ns` passed on `host`'s clock
    /// ([`Host::timestamp_ticks`], [`Host::timestamp_frequency_hz`]).
    ///
    /// # Errors
    /// As [`wait_with_clock`](Kiq::wait_with_clock).
    pub fn wait<H: Host + ?Sized>(&self, host: &H, seq: u64, timeout_ns: u64) -> Result<(), Error> {
        self.wait_with_clock(
            seq,
            timeout_ns,
            || host.timestamp_ticks(),
            host.timestamp_frequency_hz(),
        )
    }

    /// Polls the fence until it reaches `seq` or `timeout_ns` passed on the clock `now`
    /// (ticks of `frequency_hz`; 0 is taken as 1).
    ///
    /// # Errors
    /// `Status::Error` naming the sequence numbers when the time passed first (the MEC did
    /// not get through the batch: a hung KIQ, or a packet the firmware refused).
    pub fn wait_with_clock(
        &self,
        seq: u64,
        timeout_ns: u64,
        now: impl Fn() -> u64,
        frequency_hz: u64,
    ) -> Result<(), Error> {
        let freq = frequency_hz.max(1);
        let ticks = u64::try_from(u128::from(timeout_ns) * u128::from(freq) / 1_000_000_000)
            .unwrap_or(u64::MAX);
        let deadline = now().saturating_add(ticks);
        loop {
            let done = self.completed();
            if done >= seq {
                return Ok(());
            }
            if now() >= deadline {
                return Err(Error::lazy(
                    Status::Error,
                    [seq, done, timeout_ns],
                    |&[seq, done, t, ..], f| {
                        write!(
                            f,
                            "KIQ fence {seq} not written within {t} ns (the fence says {done})"
                        )
                    },
                ));
            }
            core::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_core::wire::kiq::dwords;
    use hsa_core::{DoorbellIndex, NodeId};
    use std::string::ToString;
    use std::vec::Vec;

    /// A ring of 64 dwords (kept in `u64`s: the ring's MMIO window is 8-byte aligned), its
    /// write-pointer poll word and fence.
    struct Mem {
        ring: Vec<u64>,
        words: Vec<u64>,
    }

    impl Mem {
        /// The ring's dwords (little-endian halves of the words).
        fn dwords(&self) -> Vec<u32> {
            self.ring
                .iter()
                .flat_map(|w| [*w as u32, (*w >> 32) as u32])
                .collect()
        }
    }

    fn kiq(mem: &mut Mem) -> Kiq {
        let config = KiqConfig {
            ring_virt: mem.ring.as_mut_ptr() as usize,
            ring_dwords: 2 * mem.ring.len() as u32,
            wptr_poll_virt: mem.words.as_mut_ptr() as usize,
            fence_virt: mem.words.as_mut_ptr().wrapping_add(1) as usize,
            fence_gpu_va: GpuVa(0x7000_0008),
        };
        // SAFETY: `mem` outlives the Kiq in every test, and nothing else writes it while the
        // Kiq does.
        unsafe { Kiq::new(&config) }.unwrap()
    }

    fn mem() -> Mem {
        Mem {
            ring: std::vec![0; 32],
            words: std::vec![0; 2],
        }
    }

    fn mapping() -> QueueMapping {
        let mqd = crate::mqd::ComputeMqd::new(&crate::mqd::MqdParams {
            ring: GpuVa(0x10_0000),
            ring_size_bytes: 4096,
            rptr_report: GpuVa(0x20_0080),
            wptr_poll: GpuVa(0x20_0038),
            doorbell: DoorbellIndex(5),
            eop: GpuVa(0x30_0000),
            eop_size_bytes: 4096,
            mqd_address: GpuVa(0x40_0000),
            vmid: 0,
            priority: crate::mqd::NORMAL_PRIORITY,
            cu_masks: crate::mqd::ALL_CUS,
            xcc: None,
        })
        .unwrap();
        QueueMapping {
            node: NodeId(1),
            ring: GpuVa(0x10_0000),
            ring_size_bytes: 4096,
            doorbell: DoorbellIndex(5),
            read_pointer: GpuVa(0x20_0080),
            write_pointer: GpuVa(0x20_0038),
            amd_queue: GpuVa(0x20_0000),
            eop: GpuVa(0x30_0000),
            eop_size_bytes: 4096,
            mqd_address: GpuVa(0x40_0000),
            mqd_virt: 0,
            mqd,
        }
    }

    /// MAP_QUEUES as amdgpu writes it for MEC1 pipe 1 queue 3 (doorbell 5: dword 10), then
    /// the QUERY_STATUS fence of sequence 1; the write pointer (14 dwords) is in the poll
    /// word and handed to the doorbell.
    #[test]
    fn map_queue_writes_amdgpus_packet_and_a_fence() {
        let mut mem = mem();
        let mut k = kiq(&mut mem);
        let mut rang = None;
        let seq = k
            .map_queue(&mapping(), 1, 1, 3, |w| rang = Some(w))
            .unwrap();
        assert_eq!(seq, 1);
        assert_eq!(rang, Some(14));
        drop(k);
        assert_eq!(mem.words[0], 14);
        assert_eq!(
            mem.dwords()[..14],
            [
                0xc005_a200,
                1 << 29 | 1 << 16 | 3 << 13,
                10 << 2,
                0x40_0000,
                0,
                0x20_0038,
                0,
                0xc005_a400,
                2 << 30,
                0,
                0x7000_0008,
                0,
                1,
                0
            ]
        );
        assert!(mem.dwords()[14..].iter().all(|&d| d == 0));
    }

    /// UNMAP_QUEUES (PREEMPT_QUEUES, one queue by doorbell) then the fence; packets wrap
    /// around the ring's end; a full ring is refused until the fence says the CP passed.
    #[test]
    fn unmap_queue_wraps_and_the_ring_fills_until_the_fence_moves() {
        let mut mem = mem();
        let fence = mem.words.as_mut_ptr().wrapping_add(1);
        let mut k = kiq(&mut mem);
        let m = mapping();
        // Four maps: 56 dwords of 64.
        for i in 1..=4 {
            assert_eq!(k.map_queue(&m, 2, 0, 0, |_| {}).unwrap(), i);
        }
        let e = k.unmap_queue(&m, |_| panic!("no doorbell")).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources);
        assert!(e.detail().to_string().contains("56 of 64 dwords"), "{e}");
        // The CP passed batch 2 (28 dwords).
        // SAFETY: the fence word of `mem`, alive; the test is the "CP".
        unsafe { fence.write_volatile(2) };
        let seq = k.unmap_queue(&m, |_| {}).unwrap();
        assert_eq!(seq, 5);
        assert_eq!(k.wptr(), 56 + dwords::UNMAP_QUEUES as u64 + 7);
        drop(k);
        // The UNMAP_QUEUES starts at dword 56; dwords 64.. wrap to 0.
        assert_eq!(
            mem.dwords()[56..62],
            [0xc004_a300, 1 << 29, 10 << 2, 0, 0, 0]
        );
        assert_eq!(mem.dwords()[62..64], [0xc005_a400, 2 << 30]);
        assert_eq!(mem.dwords()[..5], [0, 0x7000_0008, 0, 5, 0]);
        assert_eq!(mem.words[0], 69);
    }

    /// INVALIDATE_TLBS as amdgpu writes it (`PACKET3(0x98, 0)`, DST_SEL 1, ALL_HUB bit 4, the
    /// PASID from bit 5, FLUSH_TYPE from bit 29), then the fence; a flush type past 3 bits is
    /// refused.
    #[test]
    fn invalidate_tlbs_writes_amdgpus_packet() {
        let mut mem = mem();
        let mut k = kiq(&mut mem);
        assert_eq!(k.invalidate_tlbs(0x8001, 2, true, |_| {}).unwrap(), 1);
        let e = k.invalidate_tlbs(1, 8, false, |_| {}).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(
            e.detail()
                .to_string()
                .contains("INVALIDATE_TLBS flush_type"),
            "{e}"
        );
        drop(k);
        assert_eq!(
            mem.dwords()[..4],
            [
                0xc000_9800,
                1 | 1 << 4 | 0x8001 << 5 | 2 << 29,
                0xc005_a400,
                2 << 30
            ]
        );
        assert_eq!(mem.words[0], 9);
    }

    /// A fence equal to a batch's sequence number frees that batch's dwords: after four
    /// 14-dword maps (56 of 64), fence 1 makes room for a fifth.
    #[test]
    fn the_fenced_batch_itself_is_retired() {
        let mut mem = mem();
        let fence = mem.words.as_mut_ptr().wrapping_add(1);
        let mut k = kiq(&mut mem);
        let m = mapping();
        for _ in 0..4 {
            k.map_queue(&m, 1, 0, 0, |_| {}).unwrap();
        }
        assert!(k.map_queue(&m, 1, 0, 0, |_| {}).is_err());
        // SAFETY: the fence word of `mem`, alive; the test is the "CP".
        unsafe { fence.write_volatile(1) };
        assert_eq!(k.map_queue(&m, 1, 0, 0, |_| {}).unwrap(), 5);
        assert_eq!(k.wptr(), 70);
    }

    /// The wait polls until the fence reaches the sequence number, for as long as the timeout
    /// in the clock's ticks (100 MHz here: 100 ticks for 1 µs): a fence written at tick 50
    /// ends it, one written at tick 150 is too late, and the error names both numbers.
    #[test]
    fn wait_polls_the_fence_until_the_deadline() {
        let mut mem = mem();
        let fence = mem.words.as_mut_ptr().wrapping_add(1);
        let k = kiq(&mut mem);
        let clock = |at: u64, value: u64| {
            let t = core::cell::Cell::new(0u64);
            move || {
                t.set(t.get() + 1);
                if t.get() == at {
                    // SAFETY: the fence word of `mem`, alive; the clock plays the CP.
                    unsafe { fence.write_volatile(value) };
                }
                t.get()
            }
        };
        k.wait_with_clock(3, 1_000, clock(50, 3), 100_000_000)
            .unwrap();
        // SAFETY: as above.
        unsafe { fence.write_volatile(0) };
        let e = k
            .wait_with_clock(4, 1_000, clock(150, 4), 100_000_000)
            .unwrap_err();
        assert_eq!(e.status(), Status::Error);
        assert_eq!(
            e.detail().to_string(),
            "KIQ fence 4 not written within 1000 ns (the fence says 0)"
        );
        // A fence already at or past the number returns at once.
        // SAFETY: as above.
        unsafe { fence.write_volatile(9) };
        k.wait_with_clock(9, 0, || 0, 0).unwrap();
    }

    /// Batches that fill the ring to its last dword fit: three maps (42), an unmap (13) and a
    /// TLB flush (9) are the 64 dwords of the ring; one dword more does not.
    #[test]
    fn the_ring_fills_to_its_last_dword() {
        let mut mem = mem();
        let mut k = kiq(&mut mem);
        let m = mapping();
        for _ in 0..3 {
            k.map_queue(&m, 1, 0, 0, |_| {}).unwrap();
        }
        k.unmap_queue(&m, |_| {}).unwrap();
        assert_eq!(k.invalidate_tlbs(1, 0, false, |_| {}).unwrap(), 5);
        assert_eq!(k.wptr(), 64);
        assert!(k.invalidate_tlbs(1, 0, false, |_| {}).is_err());
    }

    /// An identity block: the ring at the base, the poll word right after its 4 KiB, the
    /// fence 8 bytes on, at the same GPU address; a block past the address space's end is
    /// none.
    #[test]
    fn an_identity_block_lays_the_ring_then_the_words() {
        let c = KiqConfig::identity_block(0x10_0000, 1024).unwrap();
        assert_eq!(
            (c.ring_virt, c.ring_dwords, c.wptr_poll_virt, c.fence_virt),
            (0x10_0000, 1024, 0x10_1000, 0x10_1008)
        );
        assert_eq!(c.fence_gpu_va, GpuVa(0x10_1008));
        assert_eq!(KiqConfig::identity_block_bytes(1024), 0x1010);
        assert_eq!(KiqConfig::identity_block(usize::MAX - 0x100f, 1024), None);
        assert!(KiqConfig::identity_block(usize::MAX - 0x1010, 1024).is_some());
    }

    #[test]
    fn bad_configs_and_slots_are_named() {
        let mut mem = mem();
        let mut c = KiqConfig {
            ring_virt: mem.ring.as_mut_ptr() as usize,
            ring_dwords: 48,
            wptr_poll_virt: mem.words.as_mut_ptr() as usize,
            fence_virt: mem.words.as_mut_ptr().wrapping_add(1) as usize,
            fence_gpu_va: GpuVa(0x7000_0008),
        };
        let text = |c: &KiqConfig| {
            // SAFETY: refused before any access.
            let e = unsafe { Kiq::new(c) }.unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            e.detail().to_string()
        };
        assert!(text(&c).contains("48 dwords is not a power of two"));
        c.ring_dwords = 32;
        assert!(text(&c).contains("32 dwords"));
        c.ring_dwords = 64;
        c.fence_virt += 4;
        assert!(text(&c).contains("KIQ fence address"));
        c.fence_virt -= 4;
        c.fence_gpu_va = GpuVa(0x7000_0004);
        assert!(text(&c).contains("fence GPU address 0x70000004"));
        let mut k = kiq(&mut mem);
        let e = k.map_queue(&mapping(), 3, 0, 0, |_| {}).unwrap_err();
        assert!(e.detail().to_string().contains("MEC 3"));
        let e = k.map_queue(&mapping(), 1, 4, 0, |_| {}).unwrap_err();
        assert!(e.detail().to_string().contains("MAP_QUEUES pipe"), "{e}");
        assert_eq!(k.wptr(), 0);
    }
}
