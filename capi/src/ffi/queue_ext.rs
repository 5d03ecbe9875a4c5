//! The AMD queue and profiling extensions (`hsa_ext_amd.h`): CU masks
//! (`hsa_amd_queue_cu_set_mask`, `_get_mask`), priorities (`hsa_amd_queue_set_priority`),
//! dispatch profiling (`hsa_amd_profiling_set_profiler_enabled`,
//! `hsa_amd_profiling_get_dispatch_time`) and the translation of agent ticks to the system
//! domain (`hsa_amd_profiling_convert_tick_to_system_domain`); and ROCR 7's queue attributes
//! (`hsa_amd_queue_get_info`).
//!
//! Dispatch timestamps are written by the packet processor into the completion signal
//! (`amd_signal_t.start_ts`/`end_ts`) while the queue's profiling bit is set, in the agent's
//! tick domain. The emulated device's command processor stamps the system timestamp itself
//! (`CLOCK_MONOTONIC` ns, `HSA_SYSTEM_INFO_TIMESTAMP`), so its ticks translate to themselves.
//! On `/dev/kfd` the command processor stamps the GPU's clock counter; ticks are translated as
//! ROCR 5.2 does (`GpuAgent::TranslateTime`): from two samples of the counter and the system
//! clock (`LinuxPlatform::clock_sample`, `AMDKFD_IOC_GET_CLOCK_COUNTERS`), the first taken at
//! the first translation for the agent, the second refreshed when a tick lies beyond it by more
//! than a quarter of their distance or is more than 1/16 s old (`State::system_ticks`).
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `vec!`.
use std::vec;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use hsa_core::abi::queue::AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
use hsa_core::{bail, Error, NodeId, Status};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{self, lock, read, QueueImpl, State};

/// `HSA_AMD_QUEUE_PRIORITY_LOW`, `_NORMAL`, `_HIGH` and the KFD priorities libhsakmt maps
/// them to (`HSA_QUEUE_PRIORITY_MINIMUM`, `_NORMAL`, `_MAXIMUM`: 0, 7, 15).
const PRIORITIES: [(u32, u32); 3] = [(0, 0), (1, 7), (2, 15)];

/// The AQL queue at `queue`, given to `f`.
fn with_aql<T>(
    st: &State,
    queue: *const c_void,
    f: impl FnOnce(&hsa_core::queue::AqlQueue<state::PlatRef>) -> Result<T, Error>,
) -> Result<T, Error> {
    non_null(queue, "queue")?;
    let q = st.queue(queue as u64)?;
    match &*q {
        QueueImpl::Aql(lock, _) => match read(lock).as_ref() {
            Some(aql) => f(aql),
            None => bail!(Status::InvalidQueue, "queue {queue:p} was destroyed"),
        },
        QueueImpl::Soft(_) => bail!(
            Status::InvalidQueue,
            "queue {queue:p} is a soft queue: no hardware runs it"
        ),
    }
}

/// The compute units of the agent an AQL queue runs on, and the 32-bit words of a mask of
/// them.
fn mask_words(st: &State, queue: *const c_void) -> Result<(u32, usize), Error> {
    let node = with_aql(st, queue, |q| Ok(q.node()))?;
    let cus = st
        .rt()
        .agents()
        .iter()
        .find(|a| a.node() == node.0)
        .map_or(0, |a| a.compute_unit_count());
    Ok((cus, cus.div_ceil(32) as usize))
}

/// `hsa_amd_queue_cu_set_mask`: runs the queue's work-groups only on the compute units whose
/// bits are set (bit `i` of word `w` is CU `32 * w + i`); `num_cu_mask_count` 0 resets the mask
/// to every CU. The mask is cut to the agent's CU count, as ROCR 5.2 does
/// (`AqlQueue::SetCUMasking`), and given to KFD (`SET_CU_MASK`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_QUEUE` for an unknown or soft queue; `INVALID_ARGUMENT` for a
/// NULL mask with a non-zero count, or a count that is not a multiple of 32; `ERROR` when KFD
/// refuses the mask (ROCR's status).
///
/// # Safety
/// `cu_mask` is NULL or holds `num_cu_mask_count / 32` words.
pub unsafe extern "C" fn hsa_amd_queue_cu_set_mask(
    queue: *const c_void,
    num_cu_mask_count: u32,
    cu_mask: *const u32,
) -> HsaStatus {
    guard("hsa_amd_queue_cu_set_mask", || {
        let st = state::state()?;
        with_aql(&st, queue, |_| Ok(()))?;
        if num_cu_mask_count != 0 {
            non_null(cu_mask, "cu_mask")?;
        }
        if num_cu_mask_count % 32 != 0 {
            bail!(
                Status::InvalidArgument,
                "num_cu_mask_count {num_cu_mask_count} is not a multiple of 32"
            );
        }
        let (cus, words) = mask_words(&st, queue)?;
        let mut mask: Vec<u32> = if num_cu_mask_count == 0 {
            vec![u32::MAX; words]
        } else {
            // SAFETY: non-NULL, `num_cu_mask_count / 32` words per the caller's contract.
            unsafe { std::slice::from_raw_parts(cu_mask, (num_cu_mask_count / 32) as usize) }
                .to_vec()
        };
        mask.resize(words, 0);
        if mask.len() == words && cus % 32 != 0 {
            if let Some(last) = mask.last_mut() {
                *last &= (1u32 << (cus % 32)) - 1;
            }
        }
        let id = with_aql(&st, queue, |q| Ok(q.hw_id()))?;
        st.platform_ref()
            .set_queue_cu_mask(id, &mask)
            .map_err(|e| hsa_core::error!(Status::Error, "{}", e.detail()))?;
        lock(&st.records.cu_masks).insert(queue as u64, mask);
        Ok(Status::Success)
    })
}

/// `hsa_amd_queue_cu_get_mask`: the queue's current CU mask into `num_cu_mask_count / 32`
/// words (words past the agent's CUs are 0; every CU of the agent is set while no mask was
/// given).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL mask or a count that is 0 or not a
/// multiple of 32; `INVALID_QUEUE` for an unknown or soft queue.
///
/// # Safety
/// `cu_mask` is NULL or writable for `num_cu_mask_count / 32` words.
pub unsafe extern "C" fn hsa_amd_queue_cu_get_mask(
    queue: *const c_void,
    num_cu_mask_count: u32,
    cu_mask: *mut u32,
) -> HsaStatus {
    guard("hsa_amd_queue_cu_get_mask", || {
        let st = state::state()?;
        non_null(cu_mask, "cu_mask")?;
        with_aql(&st, queue, |_| Ok(()))?;
        if num_cu_mask_count == 0 || num_cu_mask_count % 32 != 0 {
            bail!(
                Status::InvalidArgument,
                "num_cu_mask_count {num_cu_mask_count} is 0 or not a multiple of 32"
            );
        }
        let (cus, words) = mask_words(&st, queue)?;
        let current = lock(&st.records.cu_masks)
            .get(&(queue as u64))
            .cloned()
            .unwrap_or_else(|| {
                let mut m = vec![u32::MAX; words];
                if cus % 32 != 0 {
                    if let Some(last) = m.last_mut() {
                        *last = (1u32 << (cus % 32)) - 1;
                    }
                }
                m
            });
        // SAFETY: non-NULL, writable for `num_cu_mask_count / 32` words per the contract.
        let out =
            unsafe { std::slice::from_raw_parts_mut(cu_mask, (num_cu_mask_count / 32) as usize) };
        for (i, w) in out.iter_mut().enumerate() {
            *w = current.get(i).copied().unwrap_or(0);
        }
        Ok(Status::Success)
    })
}

/// `hsa_amd_queue_set_priority`: `HSA_AMD_QUEUE_PRIORITY_LOW`, `_NORMAL` or `_HIGH` for the
/// queue's scheduling (KFD `UPDATE_QUEUE` with priority 0, 7 or 15, as libhsakmt maps them).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL queue or an unknown priority;
/// `INVALID_QUEUE` for an unknown or soft queue; `OUT_OF_RESOURCES` when KFD refuses (ROCR's
/// status).
pub extern "C" fn hsa_amd_queue_set_priority(queue: *mut c_void, priority: u32) -> HsaStatus {
    guard("hsa_amd_queue_set_priority", || {
        let st = state::state()?;
        non_null(queue, "queue")?;
        let id = with_aql(&st, queue, |q| Ok(q.hw_id()))?;
        let Some(&(_, kfd)) = PRIORITIES.iter().find(|(p, _)| *p == priority) else {
            bail!(
                Status::InvalidArgument,
                "priority {priority} is not LOW (0), NORMAL (1) or HIGH (2)"
            );
        };
        st.platform_ref()
            .set_queue_priority(id, kfd)
            .map_err(|e| hsa_core::error!(Status::OutOfResources, "{}", e.detail()))?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_set_profiler_enabled`: whether the packets the queue's processor takes
/// from now on write their start and end timestamps into their completion signal (the
/// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING` bit of its `amd_queue_t`; on a soft queue just the
/// bit, for its own consumer).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL queue; `INVALID_QUEUE`.
pub extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    queue: *mut c_void,
    enable: i32,
) -> HsaStatus {
    guard("hsa_amd_profiling_set_profiler_enabled", || {
        let st = state::state()?;
        non_null(queue, "queue")?;
        let q = st.queue(queue as u64)?;
        match &*q {
            QueueImpl::Aql(lock, _) => match read(lock).as_ref() {
                Some(aql) => aql.set_profiling(enable != 0),
                None => bail!(Status::InvalidQueue, "queue {queue:p} was destroyed"),
            },
            QueueImpl::Soft(soft) => {
                let Some(host) = soft.descriptor.host_ptr else {
                    bail!(
                        Status::InvalidQueue,
                        "soft queue {queue:p} has no host mapping"
                    );
                };
                // SAFETY: offset 180 (queue_properties) of the soft queue's live 256-byte
                // amd_queue_t, 4-aligned; its consumer reads it atomically if at all.
                let word = unsafe { &*host.as_ptr().add(180).cast::<AtomicU32>() };
                if enable != 0 {
                    word.fetch_or(AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
                } else {
                    word.fetch_and(!AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, Ordering::AcqRel);
                }
            }
        }
        Ok(Status::Success)
    })
}

/// The GPU agent behind `agent` (ROCR's checks: `INVALID_AGENT` for unknown and CPU agents).
fn gpu_node(st: &State, agent: u64) -> Result<NodeId, Error> {
    let a = agent_of(st, agent)?;
    if !a.is_gpu() {
        bail!(
            Status::InvalidAgent,
            "agent {} is not a GPU agent",
            a.name()
        );
    }
    Ok(NodeId(a.node()))
}

/// `hsa_amd_profiling_get_dispatch_time`: when the profiled dispatch that completed `signal`
/// on `agent` started and ended, in the system domain (end translated first, as ROCR).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `time`; `INVALID_AGENT` for an unknown or
/// CPU agent; `INVALID_SIGNAL`; the clock ioctl's error on `/dev/kfd`.
///
/// # Safety
/// `time` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_profiling_get_dispatch_time(
    agent: u64,
    signal: u64,
    time: *mut DispatchTime,
) -> HsaStatus {
    guard("hsa_amd_profiling_get_dispatch_time", || {
        let st = state::state()?;
        non_null(time, "time")?;
        agent_of(&st, agent)?;
        let s = st.signal(signal)?;
        let node = gpu_node(&st, agent)?;
        let raw = s.raw();
        let (start, end) = (
            raw.start_ts().load(Ordering::Acquire),
            raw.end_ts().load(Ordering::Acquire),
        );
        let end = st.system_ticks(node, end)?;
        let start = st.system_ticks(node, start)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { time.write_unaligned(DispatchTime { start, end }) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_convert_tick_to_system_domain`: `agent_tick` of `agent` as a system
/// timestamp (see the module doc).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `system_tick`; `INVALID_AGENT` for an
/// unknown or CPU agent; the clock ioctl's error on `/dev/kfd`.
///
/// # Safety
/// `system_tick` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_profiling_convert_tick_to_system_domain(
    agent: u64,
    agent_tick: u64,
    system_tick: *mut u64,
) -> HsaStatus {
    guard("hsa_amd_profiling_convert_tick_to_system_domain", || {
        let st = state::state()?;
        non_null(system_tick, "system_tick")?;
        let node = gpu_node(&st, agent)?;
        let t = st.system_ticks(node, agent_tick)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { system_tick.write(t) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_queue_get_info` (ROCR 7): `HSA_AMD_QUEUE_INFO_AGENT` writes the agent the AQL
/// queue runs on (`hsa_agent_t`), `HSA_AMD_QUEUE_INFO_DOORBELL_ID` the address the queue's
/// doorbell signal rings (`uint64_t`: the mapped doorbell on `/dev/kfd`, the doorbell word of
/// the emulated device), as ROCR 7's `AqlQueue::GetInfo` answers `hardware_doorbell_ptr`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_QUEUE` for NULL, a queue that is not live, or a soft queue
/// (ROCR's `HostQueue` has no attributes); `INVALID_ARGUMENT` for another attribute or a NULL
/// `value`.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's size.
pub unsafe extern "C" fn hsa_amd_queue_get_info(
    queue: *const c_void,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_queue_get_info", || {
        let st = state::state()?;
        if queue.is_null() {
            bail!(Status::InvalidQueue, "queue is NULL");
        }
        let (node, doorbell) = with_aql(&st, queue, |q| {
            Ok((q.node(), q.hw_queue().doorbell_address))
        })?;
        non_null(value, "value")?;
        match attribute {
            HSA_AMD_QUEUE_INFO_AGENT => {
                let agent = st
                    .rt()
                    .agents()
                    .iter()
                    .find(|a| a.node() == node.0)
                    .map(|a| a.handle().0)
                    .ok_or_else(|| {
                        hsa_core::error!(
                            Status::InvalidQueue,
                            "queue {queue:p} runs on node {} that no agent has",
                            node.0
                        )
                    })?;
                // SAFETY: non-NULL, an hsa_agent_t per the caller's contract.
                unsafe { value.cast::<u64>().write_unaligned(agent) };
            }
            // SAFETY: non-NULL, a uint64_t per the caller's contract.
            HSA_AMD_QUEUE_INFO_DOORBELL_ID => unsafe {
                value.cast::<u64>().write_unaligned(doorbell)
            },
            other => bail!(
                Status::InvalidArgument,
                "queue attribute {other} is not an hsa_queue_info_attribute_t"
            ),
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_queue_get_info,
    hsa_amd_queue_cu_set_mask,
    hsa_amd_queue_cu_get_mask,
    hsa_amd_queue_set_priority,
    hsa_amd_profiling_set_profiler_enabled,
    hsa_amd_profiling_get_dispatch_time,
    hsa_amd_profiling_convert_tick_to_system_domain,
);
