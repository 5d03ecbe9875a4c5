//! Queues: creation, destruction, inactivation, index operations (HSA Runtime 1.2 §2.6).
//!
//! An `hsa_queue_t*` is the address of the queue's `amd_queue_t` (its first 40 bytes are the
//! `hsa_queue_t`), host-accessible at that address. Index operations look the queue up; on an
//! unknown queue they do nothing and return 0 (their C signatures carry no status).
#![allow(unsafe_code)]

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU64, Ordering};

use hsa_core::abi::queue::{AmdQueue, HsaQueue};
use hsa_core::abi::SignalHandle;
use hsa_core::memory::Segment;
use hsa_core::platform::QueueErrorCallback;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::PoolHandle;
use hsa_core::signal::{LoadOrder, MemoryOrder, StoreOrder};
use hsa_core::{bail, Error, NodeId, QueueId, Status};

use super::{guard, guard_value, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{
    self, hot_view, lock, read, write, AqlHot, Mutex, QueueImpl, RwLock, SoftQueue,
};

/// Byte offset of `write_dispatch_id` in `amd_queue_t`.
const WRITE_INDEX_OFFSET: usize = 56;
/// Byte offset of `read_dispatch_id` in `amd_queue_t`.
const READ_INDEX_OFFSET: usize = 128;
const _: () = assert!(core::mem::offset_of!(AmdQueue, write_dispatch_id) == WRITE_INDEX_OFFSET);
const _: () = assert!(core::mem::offset_of!(AmdQueue, read_dispatch_id) == READ_INDEX_OFFSET);

/// Soft queue ids, above any AQL queue id the core hands out.
static NEXT_SOFT_ID: AtomicU64 = AtomicU64::new(1 << 48);

/// A C queue-error callback (`hsa_queue_create`'s `callback` and `data`).
#[derive(Clone, Copy)]
struct QueueCallback {
    /// The callback.
    func: QueueErrorFn,
    /// Its `data`, as an address.
    data: usize,
    /// The `hsa_queue_t` address (0 until the queue exists).
    queue: u64,
}

/// Registered C queue-error callbacks by key (the core callback's `data`): what the trampoline
/// hands a queue's error to.
static QUEUE_CALLBACKS: Mutex<Vec<(usize, QueueCallback)>> = Mutex::new(Vec::new());

/// The core's queue-error callback of a queue made with a C callback: calls the C callback of
/// `key` with the status, the `hsa_queue_t*` and its data.
fn trampoline(error: &Error, _queue: QueueId, key: usize) {
    let cb = lock(&QUEUE_CALLBACKS)
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| *c);
    if let Some(cb) = cb {
        // SAFETY: the application's callback with the signature hsa_queue_create documents,
        // its data and the queue it was registered for.
        unsafe {
            (cb.func)(
                error.status().raw(),
                cb.queue as *mut c_void,
                cb.data as *mut c_void,
            )
        };
    }
}

/// `hsa_queue_create`: an AQL queue of `size` packets on a GPU agent. `callback` is called
/// with the error status when the packet processor stops the queue; when it is NULL the error
/// is printed on stderr with its full detail and the process aborts, as ROCR does.
/// `private_segment_size` is the queue's scratch per work-item (`UINT32_MAX`: hsa-core's
/// default, `DEFAULT_PRIVATE_SEGMENT_BYTES`, taken at creation; above 131056:
/// `OUT_OF_RESOURCES`); a dispatch needing more leaves the queue waiting on the CP's scratch
/// request, which the C API does not serve yet (hsa-core's `AqlQueue::serve_scratch_request`
/// would; no async handler on the inactive signal calls it, as ROCR's `DynamicScratchHandler`
/// is). `group_segment_size` is accepted and not used (LDS
/// comes from each dispatch packet).
///
/// # Safety
/// `callback` is NULL or a valid function; `queue` is NULL or a writable `hsa_queue_t*`.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_queue_create(
    agent: u64,
    size: u32,
    type_: u32,
    callback: Option<QueueErrorFn>,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut c_void,
) -> HsaStatus {
    // group_segment_size: LDS is per dispatch (the packet's), nothing to reserve per queue.
    let _ = group_segment_size;
    guard("hsa_queue_create", || {
        let st = state::state()?;
        let a = super::agent::agent_of(&st, agent)?;
        non_null(queue, "queue")?;
        if !a.is_gpu() {
            bail!(
                Status::InvalidQueueCreation,
                "agent {} is a CPU agent: it has no AQL queues",
                a.name()
            );
        }
        let mut config = QueueConfig::new(
            NodeId(a.node()),
            size,
            a.queue_min_size(),
            a.queue_max_size(),
        );
        config.agent_queue_type = a.queue_type();
        // The queue's scratch per work-item; UINT32_MAX: the runtime's default (ROCR's too).
        config.private_segment_size =
            (private_segment_size != u32::MAX).then_some(private_segment_size);
        // A C program waits on its completion signals (hsa_signal_wait_*), which does not
        // serve the CP's scratch request: the queue keeps hsa-core's fixed carve-out until an
        // async handler on the inactive signal serves it (ROCR's DynamicScratchHandler).
        config.grow_scratch = false;
        config.queue_type = type_;
        let key = st.next_id() as usize;
        config.on_error = crate::backend::QUEUE_ERROR_WITHOUT_CALLBACK;
        if let Some(func) = callback {
            lock(&QUEUE_CALLBACKS).push((
                key,
                QueueCallback {
                    func,
                    data: data as usize,
                    queue: 0,
                },
            ));
            config.on_error = Some(QueueErrorCallback {
                func: trampoline,
                data: key,
            });
        }
        let created = AqlQueue::create(st.platform_ref(), &config);
        let q = match created {
            Ok(q) => q,
            Err(e) => {
                lock(&QUEUE_CALLBACKS).retain(|(k, _)| *k != key);
                return Err(e);
            }
        };
        let address = q.amd_queue_address().0;
        if let Some((_, cb)) = lock(&QUEUE_CALLBACKS).iter_mut().find(|(k, _)| *k == key) {
            cb.queue = address;
        }
        let doorbell = q.doorbell_signal().handle().0;
        let hot = AqlHot::new(&q);
        st.queues.insert_aql(
            address,
            doorbell,
            Arc::new(QueueImpl::Aql(RwLock::new(Some(q)), hot)),
        );
        // SAFETY: non-NULL, the caller's hsa_queue_t* slot.
        unsafe { queue.write(address as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_soft_queue_create`: a queue whose descriptor and ring are allocated from `region`
/// (global, host-accessible, allocatable) and that no packet processor consumes: the
/// application does, ringing `doorbell_signal` (a live signal). `size` is a power of two.
///
/// # Safety
/// `queue` is NULL or a writable `hsa_queue_t*`.
pub unsafe extern "C" fn hsa_soft_queue_create(
    region: u64,
    size: u32,
    type_: u32,
    features: u32,
    doorbell_signal: u64,
    queue: *mut *mut c_void,
) -> HsaStatus {
    guard("hsa_soft_queue_create", || {
        let st = state::state()?;
        non_null(queue, "queue")?;
        let pool = st.rt().pool(PoolHandle(region))?;
        let info = pool.info();
        if info.segment != Segment::Global || !info.host_accessible() {
            bail!(
                Status::InvalidArgument,
                "region {region:#x} is not host-accessible global memory"
            );
        }
        if !size.is_power_of_two() {
            bail!(
                Status::InvalidArgument,
                "size {size} is 0 or not a power of two"
            );
        }
        if type_ > 2 {
            bail!(
                Status::InvalidArgument,
                "type {type_} is not an hsa_queue_type_t"
            );
        }
        if features == 0 || features & !3 != 0 {
            bail!(
                Status::InvalidArgument,
                "features {features:#x}: need KERNEL_DISPATCH (1) and/or AGENT_DISPATCH (2)"
            );
        }
        st.signal(doorbell_signal)?;
        let ring_bytes = u64::from(size) * 64;
        let descriptor = st.rt().allocate(PoolHandle(region), 256)?;
        let ring = match st.rt().allocate(PoolHandle(region), ring_bytes) {
            Ok(r) => r,
            Err(e) => {
                let _ = st.rt().free(descriptor.va);
                return Err(e);
            }
        };
        let (Some(desc_host), Some(ring_host)) = (descriptor.host_ptr, ring.host_ptr) else {
            let _ = st.rt().free(descriptor.va);
            let _ = st.rt().free(ring.va);
            bail!(
                Status::InvalidAllocation,
                "region memory has no host pointer"
            );
        };
        let amd = AmdQueue {
            hsa_queue: HsaQueue {
                type_,
                features,
                base_address: ring.va.0,
                doorbell_signal: SignalHandle(doorbell_signal),
                size,
                reserved1: 0,
                id: NEXT_SOFT_ID.fetch_add(1, Ordering::Relaxed),
            },
            ..AmdQueue::default()
        };
        // SAFETY: both allocations are fresh, host-mapped, at least 256 and `size * 64` bytes,
        // aligned to the pool's alignment (>= 64); nothing else uses them yet.
        unsafe {
            desc_host.cast::<AmdQueue>().as_ptr().write(amd);
            for i in 0..size as usize {
                // Header word of each packet: HSA_PACKET_TYPE_INVALID (1).
                ring_host.as_ptr().add(i * 64).cast::<u16>().write(1);
            }
        }
        let address = descriptor.va.0;
        st.queues.insert_soft(
            address,
            Arc::new(QueueImpl::Soft(SoftQueue { descriptor, ring })),
        );
        // SAFETY: non-NULL, the caller's hsa_queue_t* slot.
        unsafe { queue.write(address as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_queue_destroy`: destroys the queue and frees its memory.
pub extern "C" fn hsa_queue_destroy(queue: *mut c_void) -> HsaStatus {
    guard("hsa_queue_destroy", || {
        let st = state::state()?;
        non_null(queue, "queue")?;
        let Some(q) = st.queues.remove(queue as u64) else {
            bail!(
                Status::InvalidQueue,
                "queue {:#x} is not a live queue",
                queue as u64
            );
        };
        match &*q {
            QueueImpl::Aql(lock, _) => {
                // Close under the read lock first: a call still using the queue (it holds
                // the read lock) sees it destroyed and returns, so the write lock below
                // cannot wait on a thread that waits for this queue.
                if let Some(aql) = read(lock).as_ref() {
                    let _ = aql.close();
                }
                if let Some(aql) = write(lock).take() {
                    aql.destroy()?;
                }
            }
            QueueImpl::Soft(soft) => {
                st.rt().free(soft.ring.va)?;
                st.rt().free(soft.descriptor.va)?;
            }
        }
        crate::state::lock(&QUEUE_CALLBACKS).retain(|(_, c)| c.queue != queue as u64);
        Ok(Status::Success)
    })
}

/// `hsa_queue_inactivate`: the packet processor stops consuming packets; the queue stays
/// until destroyed. A soft queue has no processor: success.
pub extern "C" fn hsa_queue_inactivate(queue: *mut c_void) -> HsaStatus {
    guard("hsa_queue_inactivate", || {
        let st = state::state()?;
        non_null(queue, "queue")?;
        let q = st.queue(queue as u64)?;
        if let QueueImpl::Aql(lock, _) = &*q {
            if let Some(aql) = write(lock).as_mut() {
                if aql.is_active() {
                    aql.inactivate()?;
                }
            }
        }
        Ok(Status::Success)
    })
}

/// Runs `f` on the queue's write- or read-index atomic.
fn with_index<T>(
    name: &str,
    queue: *const c_void,
    read_index: bool,
    fallback: T,
    f: impl FnOnce(&AtomicU64) -> T,
) -> T {
    guard_value(name, fallback, || {
        state::with_state(|st, section| {
            let Some(q) = st.queues.get(queue as u64, section) else {
                bail!(
                    Status::InvalidQueue,
                    "queue {:#x} is not a live queue",
                    queue as u64
                );
            };
            if let Some(hot) = hot_view(&q) {
                return Ok(f(hot.index(read_index)));
            }
            match &*q {
                QueueImpl::Aql(lock, _) => {
                    let guard = read(lock);
                    let Some(aql) = guard.as_ref() else {
                        bail!(Status::InvalidQueue, "queue destroyed");
                    };
                    // SAFETY: the Ring is used only inside this call, while the read lock keeps
                    // the queue alive (destroy takes the write lock).
                    let ring = unsafe { aql.ring() };
                    Ok(f(if read_index {
                        ring.read_index()
                    } else {
                        ring.write_index()
                    }))
                }
                QueueImpl::Soft(soft) => {
                    let host = soft.descriptor.host_ptr.ok_or_else(|| {
                        hsa_core::error!(Status::InvalidQueue, "soft queue without host memory")
                    })?;
                    let offset = if read_index {
                        READ_INDEX_OFFSET
                    } else {
                        WRITE_INDEX_OFFSET
                    };
                    // SAFETY: the descriptor is a live 256-byte, 64-aligned allocation (kept by
                    // the registry entry `q` holds); offsets 56 and 128 are its 8-aligned index
                    // words, only ever accessed atomically.
                    let index = unsafe { &*host.as_ptr().add(offset).cast::<AtomicU64>() };
                    Ok(f(index))
                }
            }
        })
    })
}

macro_rules! load_index {
    ($name:ident, $read:expr, $order:expr) => {
        #[doc = concat!("`", stringify!($name), "`: loads the index (0 for an unknown queue).")]
        pub extern "C" fn $name(queue: *const c_void) -> u64 {
            with_index(stringify!($name), queue, $read, 0, |i| {
                i.load($order.ordering())
            })
        }
        export!($name);
    };
}
load_index!(
    hsa_queue_load_read_index_scacquire,
    true,
    LoadOrder::Acquire
);
load_index!(hsa_queue_load_read_index_relaxed, true, LoadOrder::Relaxed);
load_index!(
    hsa_queue_load_write_index_scacquire,
    false,
    LoadOrder::Acquire
);
load_index!(
    hsa_queue_load_write_index_relaxed,
    false,
    LoadOrder::Relaxed
);

macro_rules! store_index {
    ($name:ident, $read:expr, $order:expr) => {
        #[doc = concat!("`", stringify!($name), "`: stores the index.")]
        pub extern "C" fn $name(queue: *const c_void, value: u64) {
            with_index(stringify!($name), queue, $read, (), |i| {
                i.store(value, $order.ordering())
            })
        }
        export!($name);
    };
}
store_index!(
    hsa_queue_store_write_index_relaxed,
    false,
    StoreOrder::Relaxed
);
store_index!(
    hsa_queue_store_write_index_screlease,
    false,
    StoreOrder::Release
);
store_index!(
    hsa_queue_store_read_index_relaxed,
    true,
    StoreOrder::Relaxed
);
store_index!(
    hsa_queue_store_read_index_screlease,
    true,
    StoreOrder::Release
);

macro_rules! cas_index {
    ($($name:ident = $order:expr),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: compare-and-swap on the write index; returns the value observed.")]
                pub extern "C" fn $name(queue: *const c_void, expected: u64, value: u64) -> u64 {
            let order: MemoryOrder = $order;
            with_index(stringify!($name), queue, false, 0, |i| {
                match i.compare_exchange(expected, value, order.ordering(), order.failure_ordering()) {
                    Ok(v) | Err(v) => v,
                }
            })
        }
        export!($name);
    )*};
}
cas_index!(
    hsa_queue_cas_write_index_scacq_screl = MemoryOrder::AcqRel,
    hsa_queue_cas_write_index_scacquire = MemoryOrder::Acquire,
    hsa_queue_cas_write_index_relaxed = MemoryOrder::Relaxed,
    hsa_queue_cas_write_index_screlease = MemoryOrder::Release
);

macro_rules! add_index {
    ($($name:ident = $order:expr),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: adds to the write index; returns the previous value.")]
                pub extern "C" fn $name(queue: *const c_void, value: u64) -> u64 {
            let order: MemoryOrder = $order;
            with_index(stringify!($name), queue, false, 0, |i| i.fetch_add(value, order.ordering()))
        }
        export!($name);
    )*};
}
add_index!(
    hsa_queue_add_write_index_scacq_screl = MemoryOrder::AcqRel,
    hsa_queue_add_write_index_scacquire = MemoryOrder::Acquire,
    hsa_queue_add_write_index_relaxed = MemoryOrder::Relaxed,
    hsa_queue_add_write_index_screlease = MemoryOrder::Release
);

export!(
    hsa_queue_create,
    hsa_soft_queue_create,
    hsa_queue_destroy,
    hsa_queue_inactivate,
);

// The names HSA 1.1 renamed, which ROCR 5.2 still exports (see `deprecated`).
export_alias!(
    hsa_queue_load_read_index_acquire => hsa_queue_load_read_index_scacquire,
    hsa_queue_load_write_index_acquire => hsa_queue_load_write_index_scacquire,
    hsa_queue_store_read_index_release => hsa_queue_store_read_index_screlease,
    hsa_queue_store_write_index_release => hsa_queue_store_write_index_screlease,
    hsa_queue_cas_write_index_acq_rel => hsa_queue_cas_write_index_scacq_screl,
    hsa_queue_cas_write_index_acquire => hsa_queue_cas_write_index_scacquire,
    hsa_queue_cas_write_index_release => hsa_queue_cas_write_index_screlease,
    hsa_queue_add_write_index_acq_rel => hsa_queue_add_write_index_scacq_screl,
    hsa_queue_add_write_index_acquire => hsa_queue_add_write_index_scacquire,
    hsa_queue_add_write_index_release => hsa_queue_add_write_index_screlease,
);
