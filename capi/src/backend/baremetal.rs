//! The bare-metal backend (feature `baremetal`): `hsa_baremetal::BaremetalPlatform` over a
//! host that firmware written in C describes with a struct of function pointers and tables,
//! `hsa_rt_baremetal_host_t` (`include/hsa_rt_ext.h`), registered with
//! `hsa_rt_baremetal_init` before `hsa_init`. The firmware's ISR for the IH interrupt calls
//! `hsa_rt_baremetal_interrupt`.
//!
//! Everything the host struct says is copied and checked when it is registered (the tables
//! need not outlive the call); its callbacks and `context` must stay valid until the last
//! `hsa_shut_down` has returned. The struct mirrors [`hsa_baremetal::Host`], whose
//! implementation-safety contract the firmware takes on (the header says it in C terms).
#![allow(unsafe_code)] // the C host's callbacks and tables

use alloc::ffi::CString;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::{c_char, c_void, CStr};
use core::sync::atomic::{AtomicBool, Ordering};

use hsa_baremetal::irq::IhFilter;
use hsa_baremetal::{
    BaremetalPlatform, CarveOut, CarveOutKind, DoorbellAperture, Host, IhRingConfig, QueueMapping,
    RegisterLocation,
};
use hsa_core::platform::{HeapType, MemoryBank, NodeProperties, NAME_CAPACITY};
use hsa_core::{bail, error, DoorbellIndex, Error, GpuVa, NodeId, PhysAddr, Status};

use crate::abi::*;

/// A `Send + Sync` copy of the host's `context` pointer.
#[derive(Clone, Copy, Debug)]
struct Context(*mut c_void);

// SAFETY: the header makes the firmware promise that every callback may be called with
// `context` from any thread (and, where it says so, from interrupt context); the runtime
// never dereferences `context` itself.
unsafe impl Send for Context {}
// SAFETY: as for Send.
unsafe impl Sync for Context {}

/// The registered host, checked and copied: what [`CHost`] serves from.
#[derive(Debug)]
struct HostConfig {
    raw: HsaRtBaremetalHost,
    /// The version-2 fields (zero for a version-1 host).
    gpu: GpuContext,
    context: Context,
    carve_outs: Vec<CarveOut>,
    nodes: Vec<NodeProperties>,
    banks: Vec<Vec<MemoryBank>>,
}

// SAFETY: `raw` holds the firmware's callbacks and `context`, callable from any thread (see
// `Context`); its table pointers are never read after registration (the tables are copied).
unsafe impl Send for HostConfig {}
// SAFETY: as for Send.
unsafe impl Sync for HostConfig {}

/// The host registered by `hsa_rt_baremetal_init`; the next first `hsa_init` builds the
/// platform over it.
static HOST: spin::RwLock<Option<Arc<HostConfig>>> = spin::RwLock::new(None);

/// The platform under the C API.
pub(crate) type Plat = BaremetalPlatform<CHost>;

/// [`hsa_baremetal::Host`] over the registered C host.
#[derive(Debug)]
pub struct CHost {
    config: Arc<HostConfig>,
}

impl CHost {
    fn context(&self) -> *mut c_void {
        self.config.context.0
    }
}

/// The status a host callback returned, as an error naming the callback.
fn host_status(callback: &str, raw: u32) -> Result<(), Error> {
    match Status::from_raw(raw) {
        Ok(Status::Success) => Ok(()),
        Ok(s) => bail!(s, "host {callback} returned {s}"),
        Err(_) => bail!(
            Status::Error,
            "host {callback} returned {raw:#x}, not an hsa_status_t"
        ),
    }
}

fn mapping_to_c(m: &QueueMapping) -> HsaRtQueueMapping {
    let q = m.mqd.v9_mqd();
    HsaRtQueueMapping {
        node: m.node.0,
        doorbell: m.doorbell.get(),
        ring: m.ring.get(),
        ring_size_bytes: m.ring_size_bytes,
        read_pointer: m.read_pointer.get(),
        write_pointer: m.write_pointer.get(),
        amd_queue: m.amd_queue.get(),
        eop: m.eop.get(),
        eop_size_bytes: m.eop_size_bytes,
        mqd: HsaRtMqd {
            cp_hqd_pq_base_lo: q.cp_hqd_pq_base_lo,
            cp_hqd_pq_base_hi: q.cp_hqd_pq_base_hi,
            cp_hqd_pq_control: q.cp_hqd_pq_control,
            cp_hqd_pq_rptr_report_addr_lo: q.cp_hqd_pq_rptr_report_addr_lo,
            cp_hqd_pq_rptr_report_addr_hi: q.cp_hqd_pq_rptr_report_addr_hi,
            cp_hqd_pq_wptr_poll_addr_lo: q.cp_hqd_pq_wptr_poll_addr_lo,
            cp_hqd_pq_wptr_poll_addr_hi: q.cp_hqd_pq_wptr_poll_addr_hi,
            cp_hqd_pq_doorbell_control: q.cp_hqd_pq_doorbell_control,
            cp_hqd_aql_control: q.cp_hqd_aql_control,
            cp_hqd_eop_base_addr_lo: q.cp_hqd_eop_base_addr_lo,
            cp_hqd_eop_base_addr_hi: q.cp_hqd_eop_base_addr_hi,
            cp_hqd_eop_control: q.cp_hqd_eop_control,
        },
        mqd_address: m.mqd_address.get(),
        mqd_virt: m.mqd_virt as u64,
    }
}

/// `still_waiting` for the C host: `waiter` is the `&&dyn Fn() -> bool` of the wait.
unsafe extern "C" fn still_waiting_trampoline(waiter: *mut c_void) -> bool {
    // SAFETY: `waiter` is the address of the `&dyn Fn() -> bool` that `wait_for_interrupt`
    // below passed, alive for the whole host call that may call this.
    let check = unsafe { &*waiter.cast::<&dyn Fn() -> bool>() };
    check()
}

// SAFETY: `hsa_rt_baremetal_init`'s caller vouches for the host struct as the header says,
// which is this trait's implementation-safety contract in C terms: carve-outs mapped and
// unused by anyone else, never overlapping; the doorbell aperture mapped uncached and the
// granted doorbells fitting in it; the IH ring, write-back and read-pointer register mapped
// and read by this runtime only; callbacks callable from any thread (and `ih_overflow_clear`,
// `wake_waiters` from interrupt context). `carve_outs` and `nodes` return the copies made at
// registration, the same slices every call.
unsafe impl Host for CHost {
    fn carve_outs(&self) -> &[CarveOut] {
        &self.config.carve_outs
    }

    fn map_memory(&self, gpu_va: GpuVa, size_bytes: u64, nodes: &[NodeId]) -> Result<(), Error> {
        let Some(f) = self.config.raw.map_memory else {
            return Ok(());
        };
        let ids: Vec<u32> = nodes.iter().map(|n| n.0).collect();
        let count = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        // SAFETY: the firmware's callback with the header's signature; `ids` lives across
        // the call.
        host_status("map_memory", unsafe {
            f(
                self.context(),
                gpu_va.get(),
                size_bytes,
                ids.as_ptr(),
                count,
            )
        })
    }

    fn clear_device_memory(&self, gpu_va: GpuVa, size_bytes: u64) -> Result<(), Error> {
        let Some(f) = self.config.raw.clear_device_memory else {
            bail!(
                Status::InvalidAllocation,
                "the host has no clear_device_memory to zero private VRAM at {gpu_va}"
            );
        };
        // SAFETY: the firmware's callback with the header's signature.
        host_status("clear_device_memory", unsafe {
            f(self.context(), gpu_va.get(), size_bytes)
        })
    }

    fn doorbells(&self) -> DoorbellAperture {
        let d = self.config.raw.doorbells;
        DoorbellAperture {
            virt_base: d.virt_base as usize,
            size_bytes: d.size_bytes as usize,
            first: DoorbellIndex::new(d.first),
            count: d.count,
        }
    }

    unsafe fn map_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        let Some(f) = self.config.raw.map_queue else {
            bail!(Status::InvalidQueueCreation, "the host has no map_queue");
        };
        let c = mapping_to_c(mapping);
        // SAFETY: the firmware's callback with the header's signature; `c` lives across the
        // call; the ring, amd_queue_t and EOP buffer stay valid until unmap_queue (this
        // function's caller's promise, passed on).
        host_status("map_queue", unsafe { f(self.context(), &c) })
    }

    fn unmap_queue(&self, mapping: &QueueMapping) -> Result<(), Error> {
        let Some(f) = self.config.raw.unmap_queue else {
            bail!(Status::ResourceFree, "the host has no unmap_queue");
        };
        let c = mapping_to_c(mapping);
        // SAFETY: as for map_queue.
        host_status("unmap_queue", unsafe { f(self.context(), &c) })
    }

    fn ih_ring(&self) -> IhRingConfig {
        let r = self.config.raw.ih_ring;
        IhRingConfig {
            ring_virt_base: r.ring_virt_base as usize,
            ring_size_bytes: r.ring_size_bytes,
            wptr_virt: r.wptr_virt as usize,
            rptr_register: RegisterLocation {
                block_virt_base: r.rptr_block_virt_base as usize,
                block_size_bytes: r.rptr_block_size_bytes as usize,
                offset_bytes: r.rptr_offset_bytes as usize,
            },
        }
    }

    fn ih_filter(&self) -> IhFilter {
        ih_filter(self.config.raw.ih_filter).unwrap_or(IhFilter::ANY)
    }

    fn queue_vmid(&self) -> u8 {
        self.config.gpu.queue_vmid
    }

    fn sh_mem_bases(&self) -> u32 {
        self.config
            .gpu
            .sh_mem_bases
            .unwrap_or(hsa_core::platform::SegmentApertures::AMDKFD_GFX9.sh_mem_bases())
    }

    fn mec_doorbell_range(&self) -> Option<(u32, u32)> {
        self.config.gpu.mec_doorbell_range
    }

    fn ih_overflow_clear(&self) {
        if let Some(f) = self.config.raw.ih_overflow_clear {
            // SAFETY: the firmware's callback with the header's signature (interrupt context
            // allowed).
            unsafe { f(self.context()) }
        }
    }

    fn wait_for_interrupt(&self, deadline_ticks: u64, still_waiting: &dyn Fn() -> bool) {
        let Some(f) = self.config.raw.wait_for_interrupt else {
            return; // checked at registration: unreachable; a spurious return is allowed
        };
        let mut check: &dyn Fn() -> bool = still_waiting;
        let waiter = (&raw mut check).cast::<c_void>();
        // SAFETY: the firmware's callback with the header's signature; `waiter` points to
        // `check`, which lives across the call, and the trampoline reads it as such.
        unsafe {
            f(
                self.context(),
                deadline_ticks,
                still_waiting_trampoline,
                waiter,
            )
        }
    }

    fn wake_waiters(&self) {
        if let Some(f) = self.config.raw.wake_waiters {
            // SAFETY: the firmware's callback with the header's signature.
            unsafe { f(self.context()) }
        }
    }

    fn timestamp_ticks(&self) -> u64 {
        match self.config.raw.timestamp_ticks {
            // SAFETY: the firmware's callback with the header's signature.
            Some(f) => unsafe { f(self.context()) },
            None => 0, // checked at registration: unreachable
        }
    }

    fn timestamp_frequency_hz(&self) -> u64 {
        self.config.raw.timestamp_frequency_hz
    }

    fn nodes(&self) -> &[NodeProperties] {
        &self.config.nodes
    }

    fn memory_bank(&self, node: usize, bank: usize) -> Option<MemoryBank> {
        self.config.banks.get(node)?.get(bank).copied()
    }
}

/// A NUL-terminated UTF-8 name of a C node, as a `heapless` string.
fn node_name(
    raw: &[c_char; NAME_CAPACITY],
    index: usize,
    field: &str,
) -> Result<heapless::String<NAME_CAPACITY>, Error> {
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
    let Ok(text) = CStr::from_bytes_until_nul(&bytes) else {
        bail!(
            Status::InvalidArgument,
            "host nodes[{index}].{field} is not NUL-terminated within {NAME_CAPACITY} bytes"
        );
    };
    let Ok(text) = text.to_str() else {
        bail!(
            Status::InvalidArgument,
            "host nodes[{index}].{field} is not UTF-8"
        );
    };
    let mut out = heapless::String::new();
    // Fits: shorter than NAME_CAPACITY bytes (the NUL was found inside).
    let _ = out.push_str(text);
    Ok(out)
}

/// The C table `ptr[..count]`, copied.
///
/// # Safety
/// `ptr` is NULL (then `count` must be 0) or valid for reads of `count` elements.
unsafe fn table<T: Copy>(ptr: *const T, count: u32, what: &str) -> Result<Vec<T>, Error> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        bail!(
            Status::InvalidArgument,
            "host {what} is NULL with a count of {count}"
        );
    }
    // SAFETY: per this function's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, count as usize) }.to_vec())
}

/// A version-2 host's GPU context, checked: what `queue_vmid`, `sh_mem_bases` and
/// `mec_doorbell_range` answer.
#[derive(Clone, Copy, Debug, Default)]
struct GpuContext {
    queue_vmid: u8,
    sh_mem_bases: Option<u32>,
    mec_doorbell_range: Option<(u32, u32)>,
}

impl GpuContext {
    fn from_c(v2: Option<&HsaRtBaremetalHostV2>) -> Result<GpuContext, Error> {
        let Some(v2) = v2 else {
            return Ok(GpuContext::default());
        };
        if v2.queue_vmid > 15 {
            bail!(
                Status::InvalidArgument,
                "host queue_vmid {} is past 15",
                v2.queue_vmid
            );
        }
        let (lower, upper) = (v2.mec_doorbell_range_lower, v2.mec_doorbell_range_upper);
        if (lower, upper) != (0, 0) && lower & 0x0FFF_FFFC > upper & 0x0FFF_FFFC {
            bail!(
                Status::InvalidArgument,
                "host mec_doorbell_range_lower {lower:#x} is above mec_doorbell_range_upper \
                 {upper:#x}"
            );
        }
        Ok(GpuContext {
            queue_vmid: v2.queue_vmid as u8,
            sh_mem_bases: (v2.sh_mem_bases != 0).then_some(v2.sh_mem_bases),
            mec_doorbell_range: ((lower, upper) != (0, 0)).then_some((lower, upper)),
        })
    }
}

/// The IH filter a C host's `ih_filter` word describes (see [`HsaRtBaremetalHost::ih_filter`]).
///
/// # Errors
/// `Status::InvalidArgument` naming the word for set bits 24..31 or bits without
/// [`IH_FILTER_ON`], and for a first VMID past the last.
fn ih_filter(word: u32) -> Result<IhFilter, Error> {
    if word == 0 {
        return Ok(IhFilter::ANY);
    }
    let (first, last, pasid) = (word & 0xf, (word >> 4) & 0xf, (word >> 8) & 0xffff);
    if word & IH_FILTER_ON == 0 || word & 0x7f00_0000 != 0 || first > last {
        bail!(
            Status::InvalidArgument,
            "host ih_filter {word:#x} is not 0 or HSA_RT_BAREMETAL_IH_FILTER(first VMID, last \
             VMID at or above it, PASID)"
        );
    }
    Ok(IhFilter {
        first_vmid: first as u8,
        last_vmid: last as u8,
        pasid: (pasid != 0).then_some(pasid as u16),
    })
}

impl HostConfig {
    /// Checks and copies a C host.
    ///
    /// # Safety
    /// The struct's table pointers are valid for their counts (the header's contract).
    unsafe fn from_c(
        raw: &HsaRtBaremetalHost,
        v2: Option<&HsaRtBaremetalHostV2>,
    ) -> Result<HostConfig, Error> {
        if raw.version != HOST_VERSION && raw.version != 1 {
            bail!(
                Status::InvalidArgument,
                "host version {} is not HSA_RT_BAREMETAL_HOST_VERSION {HOST_VERSION} (or 1)",
                raw.version
            );
        }
        let gpu = GpuContext::from_c(v2)?;
        let required = [
            ("map_queue", raw.map_queue.is_some()),
            ("unmap_queue", raw.unmap_queue.is_some()),
            ("wait_for_interrupt", raw.wait_for_interrupt.is_some()),
            ("timestamp_ticks", raw.timestamp_ticks.is_some()),
        ];
        for (name, given) in required {
            if !given {
                bail!(Status::InvalidArgument, "host {name} is NULL");
            }
        }
        if raw.timestamp_frequency_hz == 0 {
            bail!(Status::InvalidArgument, "host timestamp_frequency_hz is 0");
        }
        ih_filter(raw.ih_filter)?;
        #[cfg(target_os = "none")]
        no_os::install_heap(raw)?;
        // SAFETY: the caller's contract.
        let c_carve_outs = unsafe { table(raw.carve_outs, raw.carve_out_count, "carve_outs") }?;
        let mut carve_outs = Vec::with_capacity(c_carve_outs.len());
        for (i, c) in c_carve_outs.iter().enumerate() {
            let kind = match c.kind {
                SYSTEM_MEMORY => CarveOutKind::SystemMemory,
                HOST_VISIBLE_VRAM => CarveOutKind::HostVisibleVram,
                PRIVATE_VRAM => CarveOutKind::PrivateVram,
                other => bail!(
                    Status::InvalidArgument,
                    "host carve_outs[{i}].kind {other} is not SYSTEM_MEMORY 0, \
                     HOST_VISIBLE_VRAM 1 or PRIVATE_VRAM 2"
                ),
            };
            if kind == CarveOutKind::PrivateVram && raw.clear_device_memory.is_none() {
                bail!(
                    Status::InvalidArgument,
                    "host carve_outs[{i}] is PRIVATE_VRAM but clear_device_memory is NULL"
                );
            }
            let virt_base = match (kind, c.virt_base) {
                (CarveOutKind::PrivateVram, 0) => None,
                (CarveOutKind::PrivateVram, v) => bail!(
                    Status::InvalidArgument,
                    "host carve_outs[{i}] is PRIVATE_VRAM but virt_base is {v:#x}, not 0"
                ),
                (_, 0) => bail!(
                    Status::InvalidArgument,
                    "host carve_outs[{i}] is CPU-visible but virt_base is 0"
                ),
                (_, v) => Some(usize::try_from(v).map_err(|_| {
                    error!(
                        Status::InvalidArgument,
                        "host carve_outs[{i}].virt_base {v:#x} exceeds the address space"
                    )
                })?),
            };
            carve_outs.push(CarveOut {
                node: NodeId(c.node),
                kind,
                phys_base: PhysAddr::new(c.phys_base),
                virt_base,
                gpu_va: GpuVa(c.gpu_va),
                size_bytes: c.size_bytes,
            });
        }
        // SAFETY: the caller's contract.
        let c_nodes = unsafe { table(raw.nodes, raw.node_count, "nodes") }?;
        let mut nodes = Vec::with_capacity(c_nodes.len());
        let mut banks = Vec::with_capacity(c_nodes.len());
        for (i, n) in c_nodes.iter().enumerate() {
            let what = alloc::format!("nodes[{i}].mem_banks");
            // SAFETY: the caller's contract covers the nodes' bank tables too.
            let node_banks = unsafe { table(n.mem_banks, n.mem_banks_count, &what) }?;
            banks.push(
                node_banks
                    .iter()
                    .map(|b| MemoryBank {
                        heap_type: HeapType::from_raw(b.heap_type),
                        size_bytes: b.size_bytes,
                        flags: b.flags,
                        width_bits: b.width_bits,
                        mem_clk_max_mhz: b.mem_clk_max_mhz,
                    })
                    .collect(),
            );
            nodes.push(NodeProperties {
                node_id: n.node_id,
                gpu_id: n.gpu_id,
                name: node_name(&n.name, i, "name")?,
                marketing_name: node_name(&n.marketing_name, i, "marketing_name")?,
                cpu_cores_count: n.cpu_cores_count,
                simd_count: n.simd_count,
                mem_banks_count: n.mem_banks_count,
                caches_count: 0,
                io_links_count: 0,
                p2p_links_count: 0,
                cpu_core_id_base: n.cpu_core_id_base,
                simd_id_base: n.simd_id_base,
                max_waves_per_simd: n.max_waves_per_simd,
                lds_size_in_kb: n.lds_size_in_kb,
                gds_size_in_kb: n.gds_size_in_kb,
                num_gws: n.num_gws,
                wave_front_size: n.wave_front_size,
                array_count: n.array_count,
                simd_arrays_per_engine: n.simd_arrays_per_engine,
                cu_per_simd_array: n.cu_per_simd_array,
                simd_per_cu: n.simd_per_cu,
                max_slots_scratch_cu: n.max_slots_scratch_cu,
                gfx_target_version: n.gfx_target_version,
                vendor_id: n.vendor_id,
                device_id: n.device_id,
                location_id: n.location_id,
                domain: n.domain,
                drm_render_minor: -1,
                hive_id: n.hive_id,
                unique_id: n.unique_id,
                num_sdma_engines: n.num_sdma_engines,
                num_sdma_xgmi_engines: n.num_sdma_xgmi_engines,
                num_sdma_queues_per_engine: n.num_sdma_queues_per_engine,
                num_cp_queues: n.num_cp_queues,
                max_engine_clk_fcompute: n.max_engine_clk_fcompute,
                max_engine_clk_ccompute: n.max_engine_clk_ccompute,
                local_mem_size: n.local_mem_size,
                fw_version: n.fw_version,
                capability: n.capability,
                debug_prop: n.debug_prop,
                sdma_fw_version: n.sdma_fw_version,
                num_xcc: n.num_xcc,
                asic_revision: n.asic_revision,
            });
        }
        Ok(HostConfig {
            raw: *raw,
            gpu,
            context: Context(raw.context),
            carve_outs,
            nodes,
            banks,
        })
    }
}

/// What [`open`] found besides the platform: nothing.
/// A queue made by `hsa_queue_create` without a callback records its error and goes on: the
/// firmware has no process to abort (ROCR's policy on Linux).
pub(crate) const QUEUE_ERROR_WITHOUT_CALLBACK: Option<hsa_core::platform::QueueErrorCallback> =
    None;

pub(crate) type Opened = ();

/// The platform the IH interrupt goes to (`hsa_rt_baremetal_interrupt`), while a runtime
/// exists. The ISR only ever tries a read lock; a thread holding the write lock (to set or
/// clear it) handles an interrupt that arrived meanwhile itself ([`ISR_PENDING`]).
static ISR_PLATFORM: spin::RwLock<Option<Arc<Plat>>> = spin::RwLock::new(None);
/// An interrupt arrived while [`ISR_PLATFORM`] was being changed.
static ISR_PENDING: AtomicBool = AtomicBool::new(false);

/// Runs an interrupt that arrived while [`ISR_PLATFORM`] was write-locked.
fn run_pending() {
    if ISR_PENDING.swap(false, Ordering::AcqRel) {
        if let Some(p) = ISR_PLATFORM.try_read().as_deref().and_then(Option::as_ref) {
            p.on_interrupt();
        }
    }
}

/// What the state keeps besides the platform: the interrupt path's registration, ended when
/// the state goes.
pub(crate) struct Device {
    _registered: (),
}

impl Device {
    /// Points the interrupt path at `platform`.
    pub(crate) fn new(_opened: Opened, platform: &Arc<Plat>) -> Device {
        *ISR_PLATFORM.write() = Some(platform.clone());
        run_pending();
        Device { _registered: () }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let platform = ISR_PLATFORM.write().take();
        // An interrupt that raced the change has nothing left to go to (or went to the
        // platform, which outlives it only while objects still hold it).
        if ISR_PENDING.swap(false, Ordering::AcqRel) {
            if let Some(p) = &platform {
                p.on_interrupt();
            }
        }
        drop(platform);
    }
}

/// The first `hsa_init`'s platform: `BaremetalPlatform` over the host
/// `hsa_rt_baremetal_init` registered.
///
/// # Errors
/// `Status::InvalidRuntimeState` when no host is registered; `BaremetalPlatform::new`'s
/// errors (`Status::InvalidArgument` naming what the host described inconsistently,
/// `Status::OutOfResources` when no system memory holds the event page).
pub(crate) fn open() -> Result<(Plat, Opened), Error> {
    let Some(config) = HOST.read().clone() else {
        bail!(
            Status::InvalidRuntimeState,
            "no host: call hsa_rt_baremetal_init before hsa_init"
        );
    };
    install_host_logger(&config.raw);
    Ok((BaremetalPlatform::new(CHost { config })?, ()))
}

/// The `log` backend of the bare-metal library: each record, as `hsa-rt: <message>`, to the
/// host's `log` callback (up to info level: failing calls' errors, queue errors, warnings).
struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            log_line(&alloc::format!("hsa-rt: {}", record.args()));
        }
    }

    fn flush(&self) {}
}

/// The logger [`open`] installs.
static HOST_LOGGER: HostLogger = HostLogger;

/// Makes [`HostLogger`] the `log` backend at info level when the host takes log lines (its
/// `log` is not NULL) and no other backend is installed (a Rust firmware linking the
/// staticlib may have its own): at the registration (`hsa_rt_baremetal_init`, so that a
/// later registration's refusal reaches the host registered before) and at `hsa_init`.
/// Installing happens once; a later host without `log` gets nothing, as [`log_line`] checks.
fn install_host_logger(host: &HsaRtBaremetalHost) {
    if host.log.is_some() && log::set_logger(&HOST_LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

/// Hands one line of the runtime's log to the host's `log` (NUL bytes in it become spaces).
fn log_line(line: &str) {
    let Some(host) = HOST.read().clone() else {
        return;
    };
    let Some(f) = host.raw.log else {
        return;
    };
    let text: Vec<u8> = line
        .bytes()
        .map(|b| if b == 0 { b' ' } else { b })
        .collect();
    let Ok(text) = CString::new(text) else {
        return; // no NUL left: unreachable
    };
    // SAFETY: the firmware's callback with the header's signature; `text` lives across it.
    unsafe { f(host.context.0, text.as_ptr()) }
}

/// Registers the host the next first `hsa_init` builds the runtime over
/// (`hsa_rt_baremetal_init`): checks it and copies its tables, installs its logger, replaces
/// an earlier registration.
///
/// # Errors
/// `Status::InvalidArgument` for what `hsa_rt_baremetal_init` documents (the message names
/// the field and index).
///
/// # Safety
/// `host`'s tables are valid for their counts and it keeps the promises `hsa_rt_ext.h` lists.
pub(crate) unsafe fn register(
    host: &HsaRtBaremetalHost,
    v2: Option<&HsaRtBaremetalHostV2>,
) -> Result<(), Error> {
    // SAFETY: the caller's contract covers the struct and its tables.
    let config = unsafe { HostConfig::from_c(host, v2) }?;
    install_host_logger(&config.raw);
    *HOST.write() = Some(Arc::new(config));
    Ok(())
}

/// The IH interrupt (`hsa_rt_baremetal_interrupt`): drains the IH ring of the registered
/// platform (`BaremetalPlatform::on_interrupt`); the number of events signaled, 0 when no
/// runtime exists. Never blocks, never allocates.
pub(crate) fn interrupt() -> u64 {
    match ISR_PLATFORM.try_read() {
        Some(slot) => slot.as_ref().map_or(0, |p| p.on_interrupt()),
        None => {
            // The slot is being set or cleared: its writer runs this interrupt.
            ISR_PENDING.store(true, Ordering::Release);
            0
        }
    }
}

/// What a build without an OS (`x86_64-unknown-none`) needs from the firmware besides the
/// platform: the heap (the host's `allocate`/`deallocate`) and what a panic does (log it, then
/// the host's `abort`).
#[cfg(target_os = "none")]
mod no_os {
    use core::alloc::{GlobalAlloc, Layout};
    use core::ffi::c_char;
    use core::fmt::Write;

    use hsa_core::{bail, Error, Status};

    use super::{Context, HOST};
    use crate::abi::{HostAllocateFn, HostDeallocateFn, HsaRtBaremetalHost};

    /// The heap the first registration installed.
    struct Heap {
        allocate: HostAllocateFn,
        deallocate: HostDeallocateFn,
        context: Context,
    }

    static HEAP: spin::Once<Heap> = spin::Once::new();

    /// Installs the host's heap at the first registration; a later one must name the same
    /// functions (what was allocated is given back through them).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `allocate` or `deallocate` is NULL, or differs from the
    /// first registration's.
    pub(super) fn install_heap(raw: &HsaRtBaremetalHost) -> Result<(), Error> {
        let (Some(allocate), Some(deallocate)) = (raw.allocate, raw.deallocate) else {
            bail!(
                Status::InvalidArgument,
                "host allocate or deallocate is NULL: a build without an OS allocates through \
                 them"
            );
        };
        let heap = HEAP.call_once(|| Heap {
            allocate,
            deallocate,
            context: Context(raw.context),
        });
        if heap.allocate as usize != allocate as usize
            || heap.deallocate as usize != deallocate as usize
        {
            bail!(
                Status::InvalidArgument,
                "host allocate and deallocate differ from the first registration's, which \
                 still own the library's heap"
            );
        }
        Ok(())
    }

    /// The global allocator: the host's heap; NULL (an allocation failure) before the first
    /// registration.
    struct HostHeap;

    // SAFETY: forwards to the firmware's allocator, which hsa_rt_ext.h makes promise what
    // `GlobalAlloc` asks: `size` bytes aligned to `align`, or NULL; `deallocate` takes back
    // exactly what `allocate` gave, with the same layout (which `GlobalAlloc`'s callers pass).
    unsafe impl GlobalAlloc for HostHeap {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let Some(h) = HEAP.get() else {
                return core::ptr::null_mut();
            };
            // SAFETY: the firmware's callback with the header's signature.
            let p = unsafe { (h.allocate)(h.context.0, layout.size(), layout.align()) };
            p.cast()
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if let Some(h) = HEAP.get() {
                // SAFETY: `ptr` came from `alloc` above with this layout (GlobalAlloc's
                // contract), so from the same installed `allocate`.
                unsafe { (h.deallocate)(h.context.0, ptr.cast(), layout.size(), layout.align()) }
            }
        }
    }

    #[global_allocator]
    static ALLOCATOR: HostHeap = HostHeap;

    /// A NUL-terminated message in a fixed buffer (a panic may come from a failed
    /// allocation: it must not allocate).
    struct Message {
        bytes: [u8; 256],
        len: usize,
    }

    impl Write for Message {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            for &b in s.as_bytes() {
                if self.len + 1 < self.bytes.len() {
                    self.bytes[self.len] = if b == 0 { b' ' } else { b };
                    self.len += 1;
                }
            }
            Ok(())
        }
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        let mut message = Message {
            bytes: [0; 256],
            len: 0,
        };
        let _ = write!(message, "hsa-rt: panic: {}", info.message());
        if let Some(l) = info.location() {
            let _ = write!(message, " at {}:{}", l.file(), l.line());
        }
        let text = message.bytes.as_ptr().cast::<c_char>();
        // Never wait for a lock here: the panicking code may hold it.
        if let Some(slot) = HOST.try_read() {
            if let Some(host) = slot.as_ref() {
                if let Some(log) = host.raw.log {
                    // SAFETY: the firmware's callback; `text` is NUL-terminated (the buffer's
                    // last byte is never written).
                    unsafe { log(host.context.0, text) }
                }
                if let Some(abort) = host.raw.abort {
                    // SAFETY: as above; the firmware's abort does not return.
                    unsafe { abort(host.context.0, text) }
                }
            }
        }
        loop {
            core::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod ih_filter_tests {
    use super::*;
    use alloc::string::ToString;

    /// The word of `HSA_RT_BAREMETAL_IH_FILTER(8, 9, 0x8001)` (0x8080_0198) and others, and
    /// the words refused, by name.
    #[test]
    fn the_hosts_ih_filter_word_decodes_and_bad_ones_are_refused() {
        assert_eq!(ih_filter(0).unwrap(), IhFilter::ANY);
        assert_eq!(
            ih_filter(0x8080_0198).unwrap(),
            IhFilter {
                first_vmid: 8,
                last_vmid: 9,
                pasid: Some(0x8001),
            }
        );
        assert_eq!(
            ih_filter(IH_FILTER_ON | 0xf5).unwrap(),
            IhFilter {
                first_vmid: 5,
                last_vmid: 15,
                pasid: None,
            }
        );
        assert_eq!(
            ih_filter(IH_FILTER_ON | 0x33).unwrap(),
            IhFilter {
                first_vmid: 3,
                last_vmid: 3,
                pasid: None,
            }
        );
        for bad in [0x0080_0198, IH_FILTER_ON | 0x19, IH_FILTER_ON | 1 << 24, 1] {
            let e = ih_filter(bad).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(
                e.detail()
                    .to_string()
                    .starts_with(&alloc::format!("host ih_filter {bad:#x} is not 0")),
                "{e}"
            );
        }
    }
}
