//! The emulated amdkfd's process queue manager: the queues of the process, `CREATE_QUEUE`,
//! `DESTROY_QUEUE`, `UPDATE_QUEUE` and `SET_CU_MASK` (Ref: linux
//! `drivers/gpu/drm/amd/amdkfd/kfd_process_queue_manager.c`, `kfd_chardev.c`).
//!
//! An AQL compute queue gets a command-processor thread ([`CpThread`], the `queue` module)
//! running the core's packet processor over the ring; a PM4 compute queue
//! (`KFD_IOC_QUEUE_TYPE_COMPUTE`) one running the PM4 engine over its ring ([`Pm4Thread`]);
//! an SDMA queue
//! (`KFD_IOC_QUEUE_TYPE_SDMA`, `_SDMA_XGMI`) an SDMA engine thread
//! ([`sdma::create_queue`](super::sdma::create_queue)). A process may have 127 queues on a
//! GPU (255 on gfx94x/gfx950), as amdkfd; one more is `ENOSPC`. Queue ids are the lowest free
//! below [`MAX_QUEUES_PER_PROCESS`]; each queue's doorbell is its id's 8 bytes of the GPU's
//! doorbell page.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;

use hsa_core::packet_processor::PacketProcessor;
use hsa_core::wire::mqd::{ComputeQueueProperties, CtxSaveArea, HqdQueue, V9Mqd, XccMqd};
use hsa_core::GpuVa;
use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use hsa_linux::kfd::abi::*;

use super::mem::Region;
use super::memory::Allocs;
use super::queue::{CpThread, Pm4Thread, QueueCtl};
use super::{lock, mem, Device, Gpu, DOORBELL_PAGE_BYTES};

/// Most queues a process may have (`KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`).
pub const MAX_QUEUES_PER_PROCESS: u32 = 1024;

/// `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID` (`kfd_ioctl.h` 1.17): an SDMA queue on the engine
/// [`CreateQueueArgs17::sdma_engine_id`] names.
pub const KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID: u32 = 4;

/// `struct kfd_ioctl_create_queue_args` as interface 1.17 lays it out (96 bytes): 1.11's 88
/// bytes, then the SDMA engine id of [`KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`] and padding. A
/// caller with the shorter struct gets the id 0, as amdkfd zero-extends its argument.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct CreateQueueArgs17 {
    /// The 1.11 fields.
    pub args: CreateQueueArgs,
    /// To KFD: the engine of a `SDMA_BY_ENG_ID` queue (the PCIe engines from 0, then the xGMI
    /// ones).
    pub sdma_engine_id: u32,
    /// Padding.
    pub pad: u32,
}
const _: () = assert!(size_of::<CreateQueueArgs17>() == 96);

/// `AMDKFD_IOC_CREATE_QUEUE` of interface 1.17: `_IOWR('K', 0x02, struct
/// kfd_ioctl_create_queue_args)` of 96 bytes (gcc over the 1.17 header gives 0xc0604b02).
pub const AMDKFD_IOC_CREATE_QUEUE_17: u32 = ioc(
    IOC_READ | IOC_WRITE,
    AMDKFD_IOCTL_BASE,
    0x02,
    size_of::<CreateQueueArgs17>(),
);

/// CREATE_QUEUE of interface 1.17 (`kfd_ioctl_create_queue`): a `SDMA_BY_ENG_ID` queue, after
/// the checks of every type ([`queue_properties_from_user`]) and of the GPU (`EINVAL`), needs
/// an engine id below the GPU's PCIe and xGMI SDMA engines (`EINVAL`, "sdma_engine_id exceeds
/// maximum id") and a free queue slot on that engine (`ENOMEM`); it is then a queue of that
/// engine's kind. Every other type is [`create_queue`]'s.
///
/// While the debug trap is on, the new queue has `EC_QUEUE_NEW` pending and the debugger is
/// told when it takes it (`kfd_ioctl_create_queue`'s `kfd_dbg_ev_raise`).
pub(crate) fn create_queue_ioctl(
    device: &Arc<Device>,
    a: &mut CreateQueueArgs17,
) -> Result<(), Errno> {
    create_queue_17(device, a)?;
    super::debug::raise_queue_exception(
        device,
        a.args.queue_id,
        kfd_ec_mask(super::debug::EC_QUEUE_NEW),
    );
    Ok(())
}

/// [`create_queue_ioctl`] before the debugger is told.
fn create_queue_17(device: &Arc<Device>, a: &mut CreateQueueArgs17) -> Result<(), Errno> {
    if a.args.queue_type != KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID {
        return create_queue(device, &mut a.args);
    }
    queue_properties_from_user(&mut a.args)?;
    let gpu = device.gpu_by_id(a.args.gpu_id)?;
    let engines = device
        .topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id == gpu.gpu_id)
        .map_or(0, |n| {
            n.properties.num_sdma_engines + n.properties.num_sdma_xgmi_engines
        });
    if a.sdma_engine_id >= engines {
        return Err(Errno::INVAL);
    }
    super::sdma::create_queue(
        device,
        &mut a.args,
        super::sdma::SdmaTarget::Engine(a.sdma_engine_id),
    )
}

/// One queue of the process.
pub(crate) struct QueueEntry {
    pub(crate) gpu_id: u32,
    /// `KFD_IOC_QUEUE_TYPE_*`.
    pub(crate) queue_type: u32,
    pub(crate) ring_va: u64,
    pub(crate) ring_size: u32,
    /// CREATE_QUEUE's `write_pointer_address` and `read_pointer_address` (what `DBG_TRAP`'s
    /// queue snapshot reports).
    pub(crate) write_ptr: u64,
    /// See `write_ptr`.
    pub(crate) read_ptr: u64,
    /// CREATE_QUEUE's context save area: address and size, bytes.
    pub(crate) ctx_save: (u64, u32),
    /// Handles of the buffer objects the queue pins (ring, pointers).
    pub(crate) pinned: Vec<u64>,
    pub(crate) ctl: Arc<QueueCtl>,
    pub(crate) thread: Option<JoinHandle<()>>,
    /// A compute queue's properties, as amdkfd keeps them to update its MQD (`None` for an
    /// SDMA queue).
    pub(crate) props: Option<ComputeQueueProperties>,
    /// An SDMA queue's slot among its GPU's queues of its kind (amdkfd's `sdma_id`: engine
    /// `sdma_id % engines`, queue `sdma_id / engines`); `None` for a compute queue.
    pub(crate) sdma_slot: Option<u32>,
    /// The pages of the render-node mappings the queue's ring and pointers lie in, held
    /// until the queue is destroyed (after its engine stopped).
    pub(crate) held: Vec<Arc<super::mem::Backing>>,
    /// Whether the queue holds its GPU's global wave sync resources (`ALLOC_QUEUE_GWS`;
    /// amdkfd's `q->gws`). At most one queue of a GPU does.
    pub(crate) gws: bool,
}

/// CREATE_QUEUE as `kfd_ioctl_create_queue` and `pqm_create_queue`: first what every type
/// checks ([`queue_properties_from_user`]: `EINVAL`, `EFAULT`, the ring size raised to
/// 1024 bytes), then a queue type amdkfd does not know is [`ENOTSUPP`]. An SDMA queue goes
/// to [`sdma::create_queue`](super::sdma::create_queue), a PM4 compute queue to
/// [`create_pm4_queue`]; an AQL compute queue needs its pointers at
/// `amd_queue_t.write_dispatch_id` and `read_dispatch_id` of a 64-byte aligned `amd_queue_t`
/// (`EINVAL`), ring and `amd_queue_t` in memory mapped to the GPU (`EINVAL`, `EFAULT`);
/// `ENOSPC` past the GPU's queues. Returns the queue id and the doorbell's `/dev/kfd` mmap
/// offset.
pub(crate) fn create_queue(device: &Arc<Device>, a: &mut CreateQueueArgs) -> Result<(), Errno> {
    queue_properties_from_user(a)?;
    if !matches!(
        a.queue_type,
        KFD_IOC_QUEUE_TYPE_COMPUTE
            | KFD_IOC_QUEUE_TYPE_COMPUTE_AQL
            | KFD_IOC_QUEUE_TYPE_SDMA
            | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
    ) {
        return Err(ENOTSUPP);
    }
    if matches!(
        a.queue_type,
        KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI
    ) {
        return super::sdma::create_queue(device, a, super::sdma::SdmaTarget::of(a.queue_type));
    }
    if a.queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE {
        return create_pm4_queue(device, a);
    }
    let gpu = device.gpu_by_id(a.gpu_id)?;
    // AQL: the pointers are amd_queue_t.write_dispatch_id (56) and read_dispatch_id (128).
    let amd_queue = a.write_pointer_address.wrapping_sub(56);
    if a.read_pointer_address.wrapping_sub(128) != amd_queue || amd_queue % 64 != 0 {
        return Err(Errno::INVAL);
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    let ring_region = allocs
        .device_region(gpu.gpu_id, a.ring_base_address, u64::from(a.ring_size))
        .ok_or(Errno::INVAL)?;
    let queue_region = allocs
        .device_region(gpu.gpu_id, amd_queue, 256)
        .ok_or(Errno::FAULT)?;
    let mut queues = lock(&device.queues);
    let qid = free_queue_id(&queues, gpu)?;
    let ctl = new_ctl(gpu, a);
    let props = compute_properties(a, qid, true)?;
    // The CP runs the queue from its MQD: ring, pointers and doorbell come from there. The
    // MQD holds what CREATE_QUEUE gave (the regions checked above); a CP that read another
    // ring or amd_queue_t from it would be a bug of the MQD's encoding.
    let hqd = load_mqd("CREATE_QUEUE", &ctl, &props, xcc_mqd(gpu, a))?;
    if (
        hqd.ring,
        hqd.ring_size_bytes,
        hqd.write_ptr.wrapping_sub(56),
    ) != (a.ring_base_address, u64::from(a.ring_size), amd_queue)
    {
        log::warn!("CREATE_QUEUE: the MQD's ring or amd_queue_t differs from the arguments");
        return Err(Errno::INVAL);
    }
    let consumer = mem::ring_consumer(ring_region, (hqd.ring_size_bytes / 64) as u32, queue_region)
        .ok_or(Errno::INVAL)?;
    let mut processor = PacketProcessor::new(consumer);
    // The kernel's dispatch and queue pointers are device addresses, not the device's
    // own view of the memory the consumer reads through.
    processor.set_device_addresses(GpuVa(hqd.ring), GpuVa(amd_queue));
    let cp = CpThread {
        device: device.clone(),
        ctl: ctl.clone(),
        processor,
        doorbell: doorbell_at(gpu, hqd.doorbell_dword)?,
        queue_id: qid,
        gpu_id: gpu.gpu_id,
        lds_bytes: gpu.lds_bytes,
    };
    let pins = [a.ring_base_address, amd_queue];
    let started = Started {
        name: format!("emu-cp-q{qid}"),
        ctl,
        pins: &pins,
        props: Some(props),
        sdma: None,
    };
    start(
        device,
        &mut allocs,
        &mut queues,
        qid,
        a,
        started,
        move || cp.run(),
    )
}

/// CREATE_QUEUE of a PM4 compute queue (`KFD_IOC_QUEUE_TYPE_COMPUTE`), after
/// [`queue_properties_from_user`], as amdkfd checks it (`kfd_queue_acquire_buffers`): the
/// ring in memory mapped to the GPU (`EINVAL`), the read pointer (a 32-bit dword offset the
/// CP writes) and the write pointer (a 64-bit dword count the producer writes) 4- and 8-byte
/// aligned (`EINVAL`) in memory mapped to the GPU (`EFAULT`); `ENOSPC` past the GPU's
/// queues. Its command processor is a [`Pm4Thread`]; the doorbell is as an AQL queue's, and
/// carries the write pointer in dwords.
fn create_pm4_queue(device: &Arc<Device>, a: &mut CreateQueueArgs) -> Result<(), Errno> {
    let gpu = device.gpu_by_id(a.gpu_id)?;
    if a.read_pointer_address % 4 != 0 || a.write_pointer_address % 8 != 0 {
        return Err(Errno::INVAL);
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    allocs
        .device_region(gpu.gpu_id, a.ring_base_address, u64::from(a.ring_size))
        .ok_or(Errno::INVAL)?;
    allocs
        .device_region(gpu.gpu_id, a.read_pointer_address, 4)
        .ok_or(Errno::FAULT)?;
    allocs
        .device_region(gpu.gpu_id, a.write_pointer_address, 8)
        .ok_or(Errno::FAULT)?;
    let mut queues = lock(&device.queues);
    let qid = free_queue_id(&queues, gpu)?;
    let ctl = new_ctl(gpu, a);
    let props = compute_properties(a, qid, false)?;
    let hqd = load_mqd("CREATE_QUEUE", &ctl, &props, xcc_mqd(gpu, a))?;
    let cp = Pm4Thread {
        device: device.clone(),
        ctl: ctl.clone(),
        ring_va: hqd.ring,
        ring_dwords: hqd.ring_size_bytes / 4,
        read_pointer_va: hqd.read_ptr,
        write_pointer_va: hqd.write_ptr,
        doorbell: doorbell_at(gpu, hqd.doorbell_dword)?,
        queue_id: qid,
        gpu_id: gpu.gpu_id,
        lds_bytes: gpu.lds_bytes,
    };
    let pins = [
        a.ring_base_address,
        a.read_pointer_address,
        a.write_pointer_address,
    ];
    let started = Started {
        name: format!("emu-cp-pm4-q{qid}"),
        ctl,
        pins: &pins,
        props: Some(props),
        sdma: None,
    };
    start(
        device,
        &mut allocs,
        &mut queues,
        qid,
        a,
        started,
        move || cp.run(),
    )
}

/// amdkfd's `ENOTSUPP` (524, a kernel-internal errno that reaches user space as is): what
/// CREATE_QUEUE returns for a queue type it does not know (`set_queue_properties_from_user`).
pub(crate) const ENOTSUPP: Errno = Errno::from_raw_os_error(524);

/// The percentage in a `queue_percentage` field: its bits 0-7. Since amdkfd repurposed the
/// field, bits 8-15 name the XCC a PM4 queue's packets target (`pm4_target_xcc`), and the
/// bits above are ignored (`set_queue_properties_from_user`, `kfd_ioctl_update_queue`).
pub(crate) fn queue_percent(raw: u32) -> u32 {
    raw & 0xff
}

/// What CREATE_QUEUE checks of every queue type before it looks at the GPU, as amdkfd's
/// `set_queue_properties_from_user`: the percentage (bits 0-7 of `queue_percentage`) and
/// the priority within their maxima, and a ring size that is a power of two or 0
/// (`EINVAL`); a smaller ring size is raised to `KFD_MIN_QUEUE_RING_SIZE` (1024 bytes) and
/// written back, as the kernel does to the ioctl's arguments. A null ring, read or write
/// pointer is `EFAULT` (amdkfd finds no buffer object there).
pub(super) fn queue_properties_from_user(a: &mut CreateQueueArgs) -> Result<(), Errno> {
    if queue_percent(a.queue_percentage) > KFD_MAX_QUEUE_PERCENTAGE
        || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
        || (a.ring_size != 0 && !a.ring_size.is_power_of_two())
    {
        return Err(Errno::INVAL);
    }
    a.ring_size = a.ring_size.max(KFD_MIN_QUEUE_RING_SIZE);
    if a.ring_base_address == 0 || a.read_pointer_address == 0 || a.write_pointer_address == 0 {
        return Err(Errno::FAULT);
    }
    Ok(())
}

/// The lowest queue id the process has free, as `pqm_create_queue`: `ENOSPC` when the
/// process has `gpu.max_queues` queues on the GPU already, or [`MAX_QUEUES_PER_PROCESS`] in
/// all.
pub(super) fn free_queue_id(queues: &BTreeMap<u32, QueueEntry>, gpu: &Gpu) -> Result<u32, Errno> {
    let on_gpu = queues.values().filter(|q| q.gpu_id == gpu.gpu_id).count() as u32;
    if on_gpu >= gpu.max_queues {
        return Err(Errno::NOSPC);
    }
    (0..MAX_QUEUES_PER_PROCESS)
        .find(|i| !queues.contains_key(i))
        .ok_or(Errno::NOSPC)
}

/// Queue `qid`'s doorbell: its 8 bytes at `qid * 8` of the GPU's doorbell page (the offset
/// CREATE_QUEUE returns), set to 0 as a new queue's write pointer is (a destroyed queue's
/// value may be left there). `ENOSPC` past the page.
pub(super) fn new_doorbell(gpu: &Gpu, qid: u32) -> Result<Region, Errno> {
    doorbell_at(gpu, doorbell_dword(qid)).map_err(|_| Errno::NOSPC)
}

/// Queue `qid`'s doorbell as a dword offset in the GPU's doorbell aperture (amdkfd's
/// `doorbell_off`, which the MQD's `DOORBELL_OFFSET` holds): `2 * qid`.
///
/// A modelling choice, not amdkfd's numbering: amdkfd gives the process a doorbell page of
/// its own somewhere in the BAR (`kfd_get_doorbell_dw_offset_in_bar`: the page's index in the
/// BAR, times its dwords, plus the doorbell id's), and takes the doorbell id from the
/// process's doorbell bitmap. The emulated GPU has one process, whose page is the aperture's
/// first, and uses the queue id as the doorbell id: queue `qid` has its 64-bit doorbell at
/// byte `qid * 8` of the page, the offset CREATE_QUEUE returns.
pub(super) fn doorbell_dword(qid: u32) -> u32 {
    qid.saturating_mul(2)
}

/// The process's doorbell page as dword offsets in the doorbell aperture: what a queue's
/// `DOORBELL_OFFSET` must lie in.
pub(super) fn doorbell_page_dwords() -> std::ops::Range<u32> {
    0..(DOORBELL_PAGE_BYTES / 4) as u32
}

/// The doorbell at dword `dword` of the GPU's doorbell page (8 bytes), set to 0 as a new
/// queue's write pointer is. `EINVAL` past the page.
pub(super) fn doorbell_at(gpu: &Gpu, dword: u32) -> Result<Region, Errno> {
    let doorbell = gpu
        .doorbells
        .region()
        .sub(u64::from(dword) * 4, 8)
        .ok_or(Errno::INVAL)?;
    if let Some(w) = doorbell.atomic_u64(0) {
        w.store(0, Ordering::Release);
    }
    Ok(doorbell)
}

/// The properties amdkfd gives a new compute queue `qid` of CREATE_QUEUE `a` (AQL when
/// `aql`, else PM4) for its MQD: the ring, pointers, EOP buffer, priority and context save
/// area of `a` (the EOP size truncated to 32 bits, as amdkfd's `u32 eop_ring_buffer_size`
/// takes the ioctl's 64-bit `eop_buffer_size`); the doorbell [`doorbell_dword`]; VMID 0: on
/// a gfx9 dGPU amdkfd runs the hardware scheduler (`sched_policy` 0, HWS), whose
/// `create_queue_cpsch` never assigns a VMID (the HWS picks one when it maps the process);
/// a first-level trap handler on every queue (CWSR is on, and on a dGPU
/// `kfd_process_device_init_cwsr_dgpu` points every process's `tba_addr` at the CWSR trap
/// handler; SET_TRAP_HANDLER only adds a second level). `EINVAL` for a ring not 256-byte
/// aligned: the MQD keeps its address >> 8 (`cp_hqd_pq_base`), the CP would run another
/// ring.
fn compute_properties(
    a: &CreateQueueArgs,
    qid: u32,
    aql: bool,
) -> Result<ComputeQueueProperties, Errno> {
    if a.ring_base_address % 256 != 0 {
        log::warn!(
            "CREATE_QUEUE: ring_base_address {:#x} is not 256-byte aligned (the MQD's \
             cp_hqd_pq_base holds it >> 8)",
            a.ring_base_address
        );
        return Err(Errno::INVAL);
    }
    Ok(ComputeQueueProperties {
        aql,
        queue_address: a.ring_base_address,
        queue_size_bytes: u64::from(a.ring_size),
        read_ptr: a.read_pointer_address,
        write_ptr: a.write_pointer_address,
        doorbell_off: doorbell_dword(qid),
        eop_address: a.eop_buffer_address,
        eop_size_bytes: a.eop_buffer_size as u32,
        priority: a.queue_priority,
        vmid: 0,
        trap_handler: true,
        ctx_save: (a.ctx_save_restore_address != 0).then_some(CtxSaveArea {
            address: a.ctx_save_restore_address,
            size_bytes: a.ctx_save_restore_size,
            ctl_stack_size_bytes: a.ctl_stack_size,
        }),
        mqd_address: 0,
    })
}

/// The XCC slot and PM4 target XCC of a new compute queue's MQD on `gpu`, when its queues
/// have one MQD per XCC (GC 9.4.3, 9.4.4, 9.5.0): the master XCC's (index 0) of the
/// partition's XCCs, the GPU's next logical XCC start (amdkfd's `current_logical_xcc_start++`),
/// the stride amdkfd's `mqd_stride_v9` gives with CWSR enabled (as on every dGPU: the control
/// stack page-aligned plus the MQD's page), and `pm4_target_xcc` from bits 8-15 of
/// `queue_percentage`. The emulated GPU runs the queue as one XCC from that MQD.
fn xcc_mqd(gpu: &Gpu, a: &CreateQueueArgs) -> Option<(XccMqd, u32)> {
    let count = gpu.xccs?;
    let stride = u64::from(a.ctl_stack_size).next_multiple_of(4096) + 4096;
    Some((
        XccMqd {
            index: 0,
            count,
            logical_start: gpu.logical_xcc_start.fetch_add(1, Ordering::Relaxed),
            stride_bytes: u32::try_from(stride).unwrap_or(!4095),
        },
        pm4_target_xcc(a.queue_percentage),
    ))
}

/// The XCC a PM4 queue's packets target: bits 8-15 of `queue_percentage`
/// (`set_queue_properties_from_user`).
fn pm4_target_xcc(queue_percentage: u32) -> u32 {
    (queue_percentage >> 8) & 0xff
}

/// Fills the queue's MQD from `props` as amdkfd's `init_mqd` and `update_mqd` do
/// ([`V9Mqd::amdkfd_compute`]; its own address is where the device keeps it), on a GPU with
/// per-XCC MQDs as `init_mqd_v9_4_3` fills the `xcc` slot's ([`V9Mqd::amdkfd_xcc`]), and maps
/// it as the CP does ([`map_mqd`]): what the queue runs from. `EINVAL` (the reason logged
/// under `ioctl`, naming the MQD field) for an MQD the CP refuses.
fn load_mqd(
    ioctl: &str,
    ctl: &QueueCtl,
    props: &ComputeQueueProperties,
    xcc: Option<(XccMqd, u32)>,
) -> Result<HqdQueue, Errno> {
    let mut mqd = lock(&ctl.mqd);
    let props = ComputeQueueProperties {
        mqd_address: &*mqd as *const V9Mqd as u64,
        ..*props
    };
    let mut m = V9Mqd::amdkfd_compute(&props);
    if let Some((x, pm4_target)) = xcc {
        m.amdkfd_xcc(&x, props.aql, pm4_target).map_err(|e| {
            log::warn!("{ioctl}: {}", e.detail());
            Errno::INVAL
        })?;
    }
    *mqd = m;
    map_mqd(ioctl, &mqd, props.aql)
}

/// What the CP takes from `mqd` when it maps the queue ([`V9Mqd::load_compute`], the
/// doorbell in the process's page): `EINVAL` for an MQD it refuses, the reason (naming the
/// MQD field) logged under `ioctl`.
fn map_mqd(ioctl: &str, mqd: &V9Mqd, aql: bool) -> Result<HqdQueue, Errno> {
    mqd.load_compute(doorbell_page_dwords(), aql).map_err(|e| {
        log::warn!("{ioctl}: {}", e.detail());
        Errno::INVAL
    })
}

/// A new queue's controls: inactive when its percentage is 0 (amdkfd's `QUEUE_IS_ACTIVE`),
/// every CU of the GPU enabled.
pub(super) fn new_ctl(gpu: &Gpu, a: &CreateQueueArgs) -> Arc<QueueCtl> {
    let ctl = Arc::new(QueueCtl::default());
    ctl.inactive
        .store(queue_percent(a.queue_percentage) == 0, Ordering::SeqCst);
    *lock(&ctl.cu_enable) = gpu.layout.all_cus();
    ctl
}

/// What [`start`] needs of a queue besides its engine: the thread's name, the controls the
/// engine shares, and the addresses whose buffer objects the queue pins.
pub(super) struct Started<'a> {
    pub(crate) name: String,
    pub(crate) ctl: Arc<QueueCtl>,
    pub(crate) pins: &'a [u64],
    /// A compute queue's MQD properties (`None` for SDMA).
    pub(crate) props: Option<ComputeQueueProperties>,
    /// An SDMA queue's kind (`KFD_IOC_QUEUE_TYPE_SDMA` or `_SDMA_XGMI`: what amdkfd makes
    /// of `_SDMA_BY_ENG_ID`) and slot; `None` for a compute queue.
    pub(crate) sdma: Option<(u32, u32)>,
}

/// Starts a new queue's engine thread (`body`), pins the buffer objects under `pins`, records
/// the queue as `qid` of type `a.queue_type` and fills CREATE_QUEUE's outputs: the queue id
/// and the doorbell's `/dev/kfd` mmap offset. `ENOMEM` when the thread cannot start.
pub(super) fn start(
    device: &Device,
    allocs: &mut Allocs,
    queues: &mut BTreeMap<u32, QueueEntry>,
    qid: u32,
    a: &mut CreateQueueArgs,
    started: Started<'_>,
    body: impl FnOnce() + Send + 'static,
) -> Result<(), Errno> {
    let thread = std::thread::Builder::new()
        .name(started.name)
        .spawn(body)
        .map_err(|_| Errno::NOMEM)?;
    let mut pinned = Vec::new();
    let mut held = Vec::new();
    for &va in started.pins {
        if let Some(al) = allocs.mapped_containing_mut(a.gpu_id, va, 1) {
            if al.kind == super::memory::Kind::GemVa {
                // A GEM_VA mapping: the queue holds the pages (amdkfd's
                // kfd_queue_acquire_buffers takes a reference on the object), which an
                // UNMAP or GEM_CLOSE then cannot take from under the engine.
                held.extend(al.backing.clone());
            } else {
                al.pins += 1;
                pinned.push(al.handle);
            }
        }
    }
    queues.insert(
        qid,
        QueueEntry {
            gpu_id: a.gpu_id,
            queue_type: started.sdma.map_or(a.queue_type, |(kind, _)| kind),
            ring_va: a.ring_base_address,
            ring_size: a.ring_size,
            write_ptr: a.write_pointer_address,
            read_ptr: a.read_pointer_address,
            ctx_save: (a.ctx_save_restore_address, a.ctx_save_restore_size),
            pinned,
            ctl: started.ctl,
            thread: Some(thread),
            props: started.props,
            sdma_slot: started.sdma.map(|(_, slot)| slot),
            held,
            gws: false,
        },
    );
    lock(&device.queue_errors).remove(&qid);
    a.queue_id = qid;
    a.doorbell_offset = kfd_mmap_doorbell_offset(a.gpu_id) | (u64::from(qid) * 8);
    Ok(())
}

/// DESTROY_QUEUE: `EINVAL` for an unknown queue.
pub(crate) fn destroy_queue_ioctl(
    device: &Arc<Device>,
    a: &mut DestroyQueueArgs,
) -> Result<(), Errno> {
    destroy_queue(device, a.queue_id)
}

/// Stops queue `qid`'s engine thread, waits for it, and unpins its memory; `EINVAL` for an
/// unknown queue.
pub(crate) fn destroy_queue(device: &Device, qid: u32) -> Result<(), Errno> {
    let mut q = lock(&device.queues).remove(&qid).ok_or(Errno::INVAL)?;
    super::debug::queue_destroyed(device, qid);
    q.ctl.stop.store(true, Ordering::SeqCst);
    q.ctl.kick();
    if let Some(t) = q.thread.take() {
        let _ = t.join();
    }
    let mut allocs = device
        .allocs
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    for h in q.pinned {
        if let Some(a) = allocs.by_handle_mut(h) {
            a.pins = a.pins.saturating_sub(1);
        }
    }
    // The render-node pages the queue held go now that its engine has stopped.
    drop(std::mem::take(&mut q.held));
    Ok(())
}

/// UPDATE_QUEUE (`kfd_ioctl_update_queue`, `pqm_update_queue_properties`): percentage
/// and priority beyond their maxima are `EINVAL`, as is an unknown queue. The ring must
/// stay where it is (`EINVAL` otherwise; amdkfd would move the queue to a new ring, which
/// ROCR never asks). A `queue_percentage` of 0 makes the queue inactive, as amdkfd's
/// `QUEUE_IS_ACTIVE` does (ROCR's `AqlQueue::Suspend`): its engine takes no packet until
/// an update with a non-zero percentage.
pub(crate) fn update_queue(device: &Arc<Device>, a: &mut UpdateQueueArgs) -> Result<(), Errno> {
    if queue_percent(a.queue_percentage) > KFD_MAX_QUEUE_PERCENTAGE
        || a.queue_priority > KFD_MAX_QUEUE_PRIORITY
        || (a.ring_size != 0 && !a.ring_size.is_power_of_two())
    {
        return Err(Errno::INVAL);
    }
    let ring_size = a.ring_size.max(KFD_MIN_QUEUE_RING_SIZE);
    let queues = lock(&device.queues);
    let q = queues.get(&a.queue_id).ok_or(Errno::INVAL)?;
    if a.ring_base_address != q.ring_va || ring_size != q.ring_size {
        return Err(Errno::INVAL);
    }
    if let Some(props) = q.props {
        // amdkfd's update_mqd with the new priority; the CP keeps running the same ring.
        let props = ComputeQueueProperties {
            priority: a.queue_priority,
            ..props
        };
        let mut mqd = lock(&q.ctl.mqd);
        let mut updated = *mqd;
        updated.amdkfd_update_compute(&props);
        if device.gpu_by_id(q.gpu_id)?.xccs.is_some() {
            // update_mqd_v9_4_3: the master XCC's fields after update_mqd.
            updated.amdkfd_xcc_update(0, props.aql, pm4_target_xcc(a.queue_percentage));
        }
        map_mqd("UPDATE_QUEUE", &updated, props.aql)?;
        *mqd = updated;
    }
    q.ctl
        .inactive
        .store(queue_percent(a.queue_percentage) == 0, Ordering::SeqCst);
    q.ctl.kick();
    Ok(())
}

/// GET_QUEUE_WAVE_STATE (`kfd_ioctl_get_queue_wave_state`, `pqm_get_wave_state`, the DQM's
/// and gfx9 MQD manager's `get_wave_state`): what the last context save of an inactive
/// compute queue left in its context save area. `EFAULT` for an unknown queue (amdkfd's
/// `pqm_get_wave_state` answers so); `EINVAL` for an SDMA queue or an active one (only a
/// queue made inactive with UPDATE_QUEUE's percentage 0 has been saved); `EFAULT` when the
/// header cannot be written.
///
/// The answer is the MQD's: control stack in use `cp_hqd_cntl_stack_size -
/// cp_hqd_cntl_stack_offset`, save area in use `cp_hqd_wg_state_offset -
/// cp_hqd_cntl_stack_size` (bytes), and the header's `wave_state` (16 bytes: those
/// offsets and sizes, `struct kfd_context_save_area_header`) written at `ctl_stack_address`,
/// once per XCC at a stride of the area's size on GPUs with an MQD per XCC, then the control
/// stack's used part. The emulated CP saves no waves when a queue goes inactive (a dispatch
/// it has taken runs to its end), so its MQD keeps the offsets amdkfd's `init_mqd` set: both
/// sizes in use are 0 and only the headers are written.
pub(crate) fn get_queue_wave_state(
    device: &Arc<Device>,
    a: &mut GetQueueWaveStateArgs,
) -> Result<(), Errno> {
    let (mqd, area_bytes, xccs) = {
        let queues = lock(&device.queues);
        let q = queues.get(&a.queue_id).ok_or(Errno::FAULT)?;
        let Some(props) = q.props else {
            return Err(Errno::INVAL);
        };
        if !q.ctl.inactive.load(Ordering::SeqCst) {
            return Err(Errno::INVAL);
        }
        let xccs = device.gpu_by_id(q.gpu_id)?.xccs.unwrap_or(1);
        let area = props.ctx_save.map_or(0, |c| u64::from(c.size_bytes));
        let mqd = *lock(&q.ctl.mqd);
        (mqd, area, xccs)
    };
    let ctl_used = mqd
        .cp_hqd_cntl_stack_size
        .wrapping_sub(mqd.cp_hqd_cntl_stack_offset);
    let save_used = mqd
        .cp_hqd_wg_state_offset
        .wrapping_sub(mqd.cp_hqd_cntl_stack_size);
    let header = [
        mqd.cp_hqd_cntl_stack_offset,
        ctl_used,
        mqd.cp_hqd_wg_state_offset,
        save_used,
    ];
    for xcc in 0..u64::from(xccs) {
        let at = xcc
            .checked_mul(area_bytes)
            .and_then(|off| a.ctl_stack_address.checked_add(off))
            .ok_or(Errno::FAULT)?;
        device.user.write(at, header.as_bytes())?;
    }
    a.ctl_stack_used_size = ctl_used;
    a.save_area_used_size = save_used;
    Ok(())
}

/// ALLOC_QUEUE_GWS (`kfd_ioctl_alloc_queue_gws`, `pqm_set_gws`): `num_gws` non-zero gives the
/// queue its GPU's global wave sync resources, 0 takes them back. `EINVAL` for an unknown
/// queue; `ENODEV` when the GPU has no GWS (its topology node's `num_gws` is 0, as amdkfd
/// reports a GPU without them); `EBUSY` when another queue of the process on that GPU holds
/// them (amdkfd allows one per process and GPU); `EINVAL` to take them back from a process
/// that holds none on that GPU. `first_gws` is always 0. Destroying the queue gives them back.
/// The emulated GPU's shaders do not run the `ds_gws_*` instructions, so holding GWS changes
/// nothing in how the queue's dispatches run.
pub(crate) fn alloc_queue_gws(
    device: &Arc<Device>,
    a: &mut AllocQueueGwsArgs,
) -> Result<(), Errno> {
    let mut queues = lock(&device.queues);
    let gpu_id = queues.get(&a.queue_id).ok_or(Errno::INVAL)?.gpu_id;
    let node = device
        .topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id == gpu_id)
        .ok_or(Errno::INVAL)?;
    if node.properties.num_gws == 0 {
        return Err(Errno::NODEV);
    }
    let held = queues.values().any(|q| q.gpu_id == gpu_id && q.gws);
    let give = a.num_gws != 0;
    if give && held {
        return Err(Errno::BUSY);
    }
    if !give && !held {
        return Err(Errno::INVAL);
    }
    if let Some(q) = queues.get_mut(&a.queue_id) {
        q.gws = give;
    }
    a.first_gws = 0;
    Ok(())
}

/// SET_CU_MASK (`kfd_ioctl_set_cu_mask`, `pqm_update_mqd`): `num_cu_mask` must be a
/// non-zero multiple of 32 (`EINVAL`); at most 1024 bits are read (`EFAULT` when they are
/// not mapped); an unknown queue is `EINVAL`. A compute queue's HQD enable masks become
/// the mapped mask ([`ShaderLayout::map_cu_mask`](super::cu_mask::ShaderLayout::map_cu_mask)), used from its next dispatch
/// on. As amdkfd on gfx9, a mask that enables no CU of the GPU (all zero, or only bits
/// past its CU count) is accepted: the queue's dispatches then wait for a mask that
/// enables one (amdkfd's comment: such a queue hangs). An SDMA queue takes the mask and
/// ignores it (amdkfd's SDMA MQD manager has no CU mask).
pub(crate) fn set_cu_mask(device: &Arc<Device>, a: &mut SetCuMaskArgs) -> Result<(), Errno> {
    if a.num_cu_mask == 0 || a.num_cu_mask % 32 != 0 {
        return Err(Errno::INVAL);
    }
    // As the kernel, at most 1024 mask bits are read.
    let words = (a.num_cu_mask / 32).min(32) as usize;
    let mut raw = vec![0u8; words * 4];
    device.user.read(a.cu_mask_ptr, &mut raw)?;
    let mask: Vec<u32> = raw
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let queues = lock(&device.queues);
    let q = queues.get(&a.queue_id).ok_or(Errno::INVAL)?;
    if matches!(
        q.queue_type,
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL | KFD_IOC_QUEUE_TYPE_COMPUTE
    ) {
        let gpu = device.gpu_by_id(q.gpu_id)?;
        let se_mask = gpu.layout.map_cu_mask(&mask);
        if gpu.xccs.is_some() {
            // update_cu_mask on these GPUs: SE0-SE3 only (dwords 39-42 hold other fields);
            // the CP's own copy keeps every engine's.
            let [a, b, c, d, ..] = se_mask;
            lock(&q.ctl.mqd).set_xcc_cu_masks([a, b, c, d]);
        } else {
            lock(&q.ctl.mqd).set_cu_masks(se_mask);
        }
        *lock(&q.ctl.cu_enable) = se_mask;
        q.ctl.kick();
    }
    Ok(())
}

/// A compute queue's MQD ([`EmulatedKfd::mqd`](super::EmulatedKfd::mqd)).
pub(crate) fn mqd(device: &Device, queue_id: u32) -> Option<V9Mqd> {
    let queues = lock(&device.queues);
    let q = queues.get(&queue_id)?;
    q.props.is_some().then(|| *lock(&q.ctl.mqd))
}

/// A compute queue's `COMPUTE_STATIC_THREAD_MGMT_SE0..SE7` ([`EmulatedKfd::compute_static_thread_mgmt`](super::EmulatedKfd::compute_static_thread_mgmt)).
pub(crate) fn compute_static_thread_mgmt(device: &Device, queue_id: u32) -> Option<[u32; 8]> {
    let queues = lock(&device.queues);
    let q = queues.get(&queue_id)?;
    matches!(
        q.queue_type,
        KFD_IOC_QUEUE_TYPE_COMPUTE_AQL | KFD_IOC_QUEUE_TYPE_COMPUTE
    )
    .then(|| *lock(&q.ctl.cu_enable))
}
