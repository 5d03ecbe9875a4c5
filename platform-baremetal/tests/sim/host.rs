//! The tests' host over ordinary memory (boxed atomics, so tests touch it without unsafe):
//! system memory identity-mapped for the "GPU", a doorbell "BAR", an IH ring, its write-pointer
//! word and a register block with the read-pointer register; a Condvar wait-for-interrupt that
//! counts how it slept and why it woke. `fake_host.rs` plays the GPU by hand, and
//! `simulated_device.rs` lets a [`SimDevice`](super::SimDevice) serve [`TestHost::link`]: the
//! host then maps queues and flushes TLBs through a KIQ ring in a firmware page of its own
//! ([`hsa_baremetal::kiq::Kiq`], as the unikernel's host does), whose doorbell the link's MEC
//! serves.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hsa_baremetal::kiq::{Kiq, KiqConfig};
use hsa_baremetal::{
    CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping, RegisterLocation,
};
use hsa_core::platform::NodeProperties;
use hsa_core::wire::kiq::KiqPacket;
use hsa_core::{DoorbellIndex, Error, GpuVa, NodeId, PhysAddr, Status};

use super::{lock, DeviceLink, SimHost, Window};

/// Doorbells granted to the platform, from [`HostConfig::first_doorbell`].
const DOORBELL_COUNT: u32 = 32;
/// Size of the register block holding the IH read-pointer register, bytes.
const IH_REGS_BYTES: usize = 256;
/// The KIQ ring, dwords (4 KiB), then its write-pointer poll word and its fence.
const KIQ_RING_DWORDS: u32 = 1024;
/// The firmware page block holding the KIQ, bytes.
const KIQ_BYTES: usize = 8192;
/// How long the host waits for a KIQ fence, ns.
const KIQ_TIMEOUT_NS: u64 = 5_000_000_000;

/// The sizes a test picks for its [`TestHost`].
#[derive(Clone, Copy, Debug)]
pub struct HostConfig {
    /// System-memory buffer, bytes; its page-aligned inside is node 0's carve-out.
    pub sys_bytes: usize,
    /// IH ring, bytes (a power of two, 32 bytes per entry).
    pub ih_bytes: usize,
    /// First doorbell index granted ([`DOORBELL_COUNT`] of them).
    pub first_doorbell: u32,
    /// Doorbell BAR, bytes (a multiple of 8).
    pub doorbell_bar_bytes: usize,
    /// Byte offset of `IH_RB_RPTR` in the register block (a multiple of 4).
    pub rptr_offset: usize,
    /// `cpu_cores_count` of the CPU node.
    pub cpu_cores: u32,
    /// Whether `map_queue`/`unmap_queue` also go through the KIQ to [`TestHost::link`]'s MEC
    /// (they are recorded either way); off to map queues the MEC refuses (two on one ring).
    pub forward_to_link: bool,
}

fn words(bytes: usize) -> Box<[AtomicU64]> {
    (0..bytes / 8).map(|_| AtomicU64::new(0)).collect()
}

/// A [`Host`] over boxes it owns: node 0 a CPU with the system carve-out, node 1 a gfx900 GPU
/// with 16 MiB of private VRAM at 0x8000_0000.
pub struct TestHost {
    config: HostConfig,
    /// Backs the system-memory carve-out.
    sys: Box<[AtomicU64]>,
    /// The doorbell aperture.
    pub doorbell_bar: Box<[AtomicU64]>,
    ih: Box<[AtomicU64]>,
    /// The IH write-pointer write-back (word 0: byte offset, bit 0 `RB_OVERFLOW`).
    pub ih_wptr: Box<[AtomicU64]>,
    ih_regs: Box<[AtomicU64]>,
    /// The firmware's KIQ block: ring, write-pointer poll word, fence.
    kiq_mem: Box<[AtomicU64]>,
    /// The KIQ this host writes (when it forwards to the link).
    kiq: Mutex<Option<Kiq>>,
    carve: Vec<CarveOut>,
    nodes: Vec<NodeProperties>,
    /// What `ih_overflow_clear` (and, if [`HostConfig::forward_to_link`], the KIQ's doorbell)
    /// calls.
    pub link: DeviceLink,
    /// Every mapping `map_queue` accepted, in order.
    pub mapped: Mutex<Vec<QueueMapping>>,
    /// The doorbell of every mapping `unmap_queue` removed, in order.
    pub unmapped: Mutex<Vec<DoorbellIndex>>,
    /// Count of `wake_waiters` calls; the lock is the "interrupts masked" of a real host.
    wakes: Mutex<u64>,
    cv: Condvar,
    /// Times a waiter actually went to sleep (still waiting after arming).
    pub sleeps: AtomicU64,
    /// Sleeps ended by `wake_waiters` (not by the deadline or spuriously).
    pub woken: AtomicU64,
    /// `ih_overflow_clear` calls.
    pub overflow_clears: AtomicU64,
    /// What `wait_spin_ns` returns; `u64::MAX`: the trait's default.
    pub spin_ns: AtomicU64,
    /// What `queue_vmid` returns (0 at first, the trait's default).
    pub queue_vmid: AtomicU8,
    /// What `mec_doorbell_range` returns (`None` at first, the trait's default).
    pub mec_range: Mutex<Option<(u32, u32)>>,
    start: Instant,
}

impl TestHost {
    /// A host with `config`'s sizes, everything zeroed. Panics when the doorbell grant does
    /// not fit the BAR or the read-pointer register its block (the `Host` contract needs both).
    pub fn new(config: HostConfig) -> TestHost {
        let (first, bar) = (config.first_doorbell, config.doorbell_bar_bytes);
        let end = first + DOORBELL_COUNT;
        assert!(
            bar % 8 == 0 && end as usize * 8 <= bar,
            "doorbells {first}..{end} do not fit a {bar}-byte BAR"
        );
        let rptr = config.rptr_offset;
        assert!(
            rptr % 4 == 0 && rptr + 4 <= IH_REGS_BYTES,
            "rptr_offset {rptr} is not a register of the {IH_REGS_BYTES}-byte block"
        );
        let sys = words(config.sys_bytes);
        let sys_addr = sys.as_ptr() as usize;
        // Page-align the carve-out inside the buffer.
        let virt = sys_addr.next_multiple_of(4096);
        let size = (config.sys_bytes - (virt - sys_addr)) as u64 & !4095;
        let carve = vec![
            CarveOut {
                node: NodeId(0),
                kind: CarveOutKind::SystemMemory,
                phys_base: PhysAddr(0x10_0000_0000),
                virt_base: Some(virt),
                gpu_va: GpuVa(virt as u64), // identity: HSA shares host pointers with the GPU
                size_bytes: size,
            },
            CarveOut {
                node: NodeId(1),
                kind: CarveOutKind::PrivateVram,
                phys_base: PhysAddr(0x8000_0000),
                virt_base: None,
                gpu_va: GpuVa(0x8000_0000),
                size_bytes: 1 << 24,
            },
        ];
        let cpu = NodeProperties {
            node_id: 0,
            cpu_cores_count: config.cpu_cores,
            ..Default::default()
        };
        let gpu = NodeProperties {
            node_id: 1,
            simd_count: 8,
            simd_per_cu: 4,
            gfx_target_version: 90010,
            ..Default::default()
        };
        let kiq_mem = words(KIQ_BYTES);
        let kiq_base = kiq_mem.as_ptr() as usize;
        let kiq_config =
            KiqConfig::identity_block(kiq_base, KIQ_RING_DWORDS).expect("the KIQ block");
        let link = DeviceLink::new();
        let kiq = config.forward_to_link.then(|| {
            // The firmware's step: the MEC reads this ring (GPU address = CPU address).
            let block = Window {
                gpu: kiq_base as u64,
                virt: kiq_base,
                size: KIQ_BYTES as u64,
            };
            // CP_MEC_DOORBELL_RANGE covers the grant.
            let dwords = 2 * first..2 * end;
            link.set_kiq(&carve, block, &kiq_config, dwords)
                .expect("the KIQ block");
            // SAFETY: the ring, poll word and fence lie in `kiq_mem`, a box this host owns
            // for its whole life (its address stays when the host moves), identity-mapped for
            // the device; only this Kiq writes the ring and the poll word.
            unsafe { Kiq::new(&kiq_config) }.expect("the KIQ config")
        });
        TestHost {
            config,
            sys,
            doorbell_bar: words(config.doorbell_bar_bytes),
            ih: words(config.ih_bytes),
            ih_wptr: words(8),
            ih_regs: words(IH_REGS_BYTES),
            kiq_mem,
            kiq: Mutex::new(kiq),
            carve,
            nodes: vec![cpu, gpu],
            link,
            mapped: Mutex::new(Vec::new()),
            unmapped: Mutex::new(Vec::new()),
            wakes: Mutex::new(0),
            cv: Condvar::new(),
            sleeps: AtomicU64::new(0),
            woken: AtomicU64::new(0),
            overflow_clears: AtomicU64::new(0),
            spin_ns: AtomicU64::new(u64::MAX),
            queue_vmid: AtomicU8::new(0),
            mec_range: Mutex::new(None),
            start: Instant::now(),
        }
    }

    /// The host with its GPU node's properties changed by `f` (before a platform is made).
    pub fn with_gpu(mut self, f: impl FnOnce(&mut NodeProperties)) -> TestHost {
        f(&mut self.nodes[1]);
        self
    }

    /// The value in doorbell slot `i` of the BAR.
    pub fn doorbell(&self, i: u32) -> u64 {
        self.doorbell_bar[i as usize].load(Ordering::SeqCst)
    }

    /// Writes the raw entry `bytes` at slot `slot` of the IH ring (as the IH block would).
    pub fn put_raw(&self, slot: usize, bytes: [u8; 32]) {
        for (i, c) in bytes.chunks_exact(8).enumerate() {
            self.ih[slot * 4 + i]
                .store(u64::from_le_bytes(c.try_into().unwrap()), Ordering::SeqCst);
        }
    }

    /// Sets the IH write-pointer write-back to `bytes` (bit 0: `RB_OVERFLOW`).
    pub fn set_wptr(&self, bytes: u32) {
        self.ih_wptr[0].store(u64::from(bytes), Ordering::SeqCst);
    }

    /// The value the platform last wrote to `IH_RB_RPTR`.
    pub fn rptr_register(&self) -> u32 {
        let off = self.config.rptr_offset;
        (self.ih_regs[off / 8].load(Ordering::SeqCst) >> (8 * (off % 8))) as u32
    }

    /// The 64-bit word of system memory at CPU address `virt` (8-aligned, inside `sys`).
    pub fn sys_word_at(&self, virt: usize) -> u64 {
        let i = (virt - self.sys.as_ptr() as usize) / 8;
        self.sys[i].load(Ordering::SeqCst)
    }

    /// Submits `packets` to the KIQ, rings its doorbell (the link's MEC serves them) and waits
    /// for the batch's fence.
    ///
    /// # Errors
    /// `status` with the MEC's message when it refused a packet of the batch (the fence is
    /// then never written); `Status::Error` when the host does not forward to the link; as
    /// `Kiq::submit` and `Kiq::wait`.
    pub fn kiq_packets(&self, packets: &[KiqPacket], status: Status) -> Result<(), Error> {
        self.kiq_batch(|kiq, ring| kiq.submit(packets, ring), status)
    }

    /// The KIQ's `INVALIDATE_TLBS` for `pasid` (legacy flush, the GFX hub), fenced.
    ///
    /// # Errors
    /// As [`kiq_packets`](TestHost::kiq_packets).
    pub fn invalidate_tlbs(&self, pasid: u16) -> Result<(), Error> {
        self.kiq_batch(
            |kiq, ring| kiq.invalidate_tlbs(pasid, 0, false, ring),
            Status::Error,
        )
    }

    fn kiq_batch(
        &self,
        submit: impl FnOnce(&mut Kiq, &dyn Fn(u64)) -> Result<u64, Error>,
        status: Status,
    ) -> Result<(), Error> {
        let mut kiq = lock(&self.kiq);
        let Some(kiq) = kiq.as_mut() else {
            hsa_core::bail!(
                Status::Error,
                "this host has no KIQ (forward_to_link is off)"
            );
        };
        let refused = self.link.refused().len();
        let seq = submit(kiq, &|_| self.link.kiq_doorbell())?;
        if let Some(m) = self.link.refused().get(refused) {
            hsa_core::bail!(status, "the MEC refused the KIQ batch: {m}");
        }
        kiq.wait(self, seq, KIQ_TIMEOUT_NS)
    }

    /// Nanoseconds since the host was made: its timestamp, at 1 GHz.
    pub fn ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

// SAFETY: every address handed out points into boxes this value owns for its whole life (the
// KIQ's block is not handed to the platform); the
// system carve-out is identity-mapped and inside `sys`, the VRAM carve-out has no CPU mapping
// and does not overlap it; the doorbell grant `first_doorbell .. first_doorbell + 32` fits the
// BAR and the read-pointer register fits its 256-byte block (`new` checks both); only the
// platform reads the IH ring.
unsafe impl Host for TestHost {
    fn carve_outs(&self) -> &[CarveOut] {
        &self.carve
    }
    fn clear_device_memory(&self, _gpu_va: GpuVa, _size_bytes: u64) -> Result<(), Error> {
        Ok(())
    }
    fn doorbells(&self) -> DoorbellAperture {
        DoorbellAperture {
            virt_base: self.doorbell_bar.as_ptr() as usize,
            size_bytes: self.doorbell_bar.len() * 8,
            first: DoorbellIndex(self.config.first_doorbell),
            count: DOORBELL_COUNT,
        }
    }
    unsafe fn map_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        if self.config.forward_to_link {
            // An HQD slot per granted doorbell: MEC1, pipe and queue from its index.
            let i = mapping
                .doorbell
                .get()
                .wrapping_sub(self.config.first_doorbell);
            let (pipe, queue) = (((i / 8) % 4) as u8, (i % 8) as u8);
            self.kiq_batch(
                |kiq, ring| kiq.map_queue(mapping, 1, pipe, queue, ring),
                Status::InvalidQueueCreation,
            )?;
        }
        lock(&self.mapped).push(*mapping);
        Ok(())
    }
    fn unmap_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        if self.config.forward_to_link {
            self.kiq_batch(
                |kiq, ring| kiq.unmap_queue(mapping, ring),
                Status::InvalidQueue,
            )?;
        }
        lock(&self.unmapped).push(mapping.doorbell);
        Ok(())
    }
    fn ih_ring(&self) -> IhRingConfig {
        IhRingConfig {
            ring_virt_base: self.ih.as_ptr() as usize,
            ring_size_bytes: self.config.ih_bytes as u32,
            wptr_virt: self.ih_wptr.as_ptr() as usize,
            rptr_register: RegisterLocation {
                block_virt_base: self.ih_regs.as_ptr() as usize,
                block_size_bytes: IH_REGS_BYTES,
                offset_bytes: self.config.rptr_offset,
            },
        }
    }
    fn mec_doorbell_range(&self) -> Option<(u32, u32)> {
        *lock(&self.mec_range)
    }
    fn queue_vmid(&self) -> u8 {
        self.queue_vmid.load(Ordering::SeqCst)
    }
    fn ih_overflow_clear(&self) {
        self.overflow_clears.fetch_add(1, Ordering::SeqCst);
        self.link.request_overflow_clear();
    }
    fn wait_spin_ns(&self) -> u64 {
        match self.spin_ns.load(Ordering::SeqCst) {
            u64::MAX => hsa_baremetal::WAIT_EVENT_SPIN_NS,
            ns => ns,
        }
    }

    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool) {
        // The lock is the "interrupts masked" of a real host: wake_waiters takes it too.
        let mut wakes = lock(&self.wakes);
        if !still_waiting() {
            return;
        }
        self.sleeps.fetch_add(1, Ordering::SeqCst);
        let seen = *wakes;
        // No cap: a lost wake-up makes the waiter sleep to its deadline and the test fail.
        loop {
            let now = self.ns();
            if now >= deadline_ticks {
                return;
            }
            wakes = self
                .cv
                .wait_timeout(wakes, Duration::from_nanos(deadline_ticks - now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if *wakes != seen {
                self.woken.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
    fn wake_waiters(&self) {
        let mut wakes = lock(&self.wakes);
        *wakes += 1;
        self.cv.notify_all();
    }
    fn timestamp_ticks(&self) -> u64 {
        self.ns()
    }
    fn timestamp_frequency_hz(&self) -> u64 {
        1_000_000_000
    }
    fn nodes(&self) -> &[NodeProperties] {
        &self.nodes
    }
}

impl SimHost for TestHost {
    fn link(&self) -> &DeviceLink {
        &self.link
    }
}
