//! The copy functions of the C API: `hsa_amd_memory_async_copy`, `hsa_amd_memory_async_copy_rect`,
//! `hsa_amd_svm_prefetch_async`, `hsa_amd_memory_fill` and copy profiling
//! (`hsa_amd_profiling_async_copy_enable`, `hsa_amd_profiling_get_async_copy_time`;
//! `hsa_ext_amd.h`), over the copy engine of `hsa_runtime::copy` (SDMA queues on the copy
//! agent's GPU, host copies otherwise: see there). These check the arguments as ROCR 5.2 does
//! and look up agents and signals.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use std::ffi::c_void;
use std::sync::Arc;

use hsa_core::addr::NodeId;
use hsa_core::{bail, Error, Status};
use hsa_runtime::PitchedSurface;

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::abi::*;
use crate::state::{self, Sig, State};

/// The dependency signals of a copy, with ROCR 5.2's argument checks.
fn dependencies(st: &State, count: u32, signals: *const u64) -> Result<Vec<Arc<Sig>>, Error> {
    if (count == 0) != signals.is_null() {
        bail!(
            Status::InvalidArgument,
            "num_dep_signals is {count} but dep_signals is {}",
            if signals.is_null() {
                "NULL"
            } else {
                "not NULL"
            }
        );
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: non-NULL, `count` handles per the caller's contract.
    let handles = unsafe { std::slice::from_raw_parts(signals, count as usize) };
    handles.iter().map(|h| st.signal(*h)).collect()
}

/// `hsa_amd_memory_async_copy`: copies `size` bytes from `src` to `dst` once every
/// dependency signal is 0, then decrements `completion_signal` (see `hsa_runtime::copy` for
/// how and where; the copy agent is the destination's when it is a GPU, else the source's, as
/// ROCR's). `size` 0 copies nothing and leaves the signal alone, as ROCR 5.2.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `dst`/`src`, a dependency count that does
/// not match `dep_signals`, or a range the host cannot reach (checked before the copy is
/// queued); `INVALID_AGENT`; `INVALID_SIGNAL` for an unknown dependency or completion signal;
/// `OUT_OF_RESOURCES` when the copy thread cannot start.
///
/// # Safety
/// `dep_signals` is NULL or holds `num_dep_signals` handles; outside runtime allocations,
/// `dst` and `src` are valid for `size` bytes until the completion signal is decremented.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: u64,
    src: *const c_void,
    src_agent: u64,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    guard("hsa_amd_memory_async_copy", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        agent_of(&st, dst_agent)?;
        agent_of(&st, src_agent)?;
        let completion = st.signal(completion_signal)?;
        // ROCR's copy agent: the destination's when it is a GPU, else the source's.
        let copy_node = [dst_agent, src_agent]
            .into_iter()
            .filter_map(|h| agent_of(&st, h).ok())
            .find(|a| a.is_gpu())
            .map(|a| NodeId(a.node()));
        // SAFETY: the caller's contract.
        unsafe {
            st.services()
                .copy()
                .copy(dst as u64, src as u64, size, copy_node, deps, completion)
        }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_async_copy_rect`: copies `range` (x bytes by y rows by z slices) from
/// `src` at `src_offset` to `dst` at `dst_offset` on `copy_agent`'s SDMA queue (or the host),
/// as [`hsa_amd_memory_async_copy`]. An empty range copies nothing.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL pointers, a dependency count that does not
/// match, `hsaHostToHost`, and the checks of ROCR 5.2's SDMA rect copy (bases, pitches and
/// slices 4-byte aligned; the rect inside both surfaces' pitch and slice; a slice pitch for
/// more than one slice); `INVALID_AGENT` for an unknown or CPU `copy_agent`; `INVALID_SIGNAL`.
///
/// # Safety
/// The pointer arguments are NULL or readable; `dep_signals` holds `num_dep_signals` handles;
/// the surfaces are valid for the rect until the completion signal is decremented.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy_rect(
    dst: *const PitchedPtr,
    dst_offset: *const Dim3,
    src: *const PitchedPtr,
    src_offset: *const Dim3,
    range: *const Dim3,
    copy_agent: u64,
    dir: u32,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    guard("hsa_amd_memory_async_copy_rect", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        non_null(dst_offset, "dst_offset")?;
        non_null(src_offset, "src_offset")?;
        non_null(range, "range")?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        if dir == HSA_HOST_TO_HOST {
            bail!(
                Status::InvalidArgument,
                "dir is hsaHostToHost, which the rect copy does not do"
            );
        }
        let a = agent_of(&st, copy_agent)?;
        if !a.is_gpu() {
            bail!(
                Status::InvalidAgent,
                "copy_agent {copy_agent:#x} is not a GPU agent"
            );
        }
        let node = NodeId(a.node());
        let completion = st.signal(completion_signal)?;
        // SAFETY: all non-NULL, readable per the caller's contract.
        let (d, s, d_off, s_off, r) = unsafe {
            (
                dst.read_unaligned(),
                src.read_unaligned(),
                dst_offset.read_unaligned(),
                src_offset.read_unaligned(),
                range.read_unaligned(),
            )
        };
        let surface = |p: &PitchedPtr, o: &Dim3| PitchedSurface {
            base: p.base as u64,
            pitch: p.pitch as u64,
            slice: p.slice as u64,
            offset: [o.x, o.y, o.z],
        };
        // SAFETY: the caller's contract.
        unsafe {
            st.services().copy().copy_rect(
                &surface(&d, &d_off),
                &surface(&s, &s_off),
                [r.x, r.y, r.z],
                node,
                deps,
                completion,
            )
        }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_fill`: stores `value` into `count` consecutive 32-bit words at `ptr`, now,
/// by the host (`hsa_runtime::CopyEngine::fill`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL or not 4-byte aligned `ptr`, or a range
/// the host cannot reach.
///
/// # Safety
/// Outside runtime allocations, `ptr` is valid for `count * 4` bytes.
pub unsafe extern "C" fn hsa_amd_memory_fill(
    ptr: *mut c_void,
    value: u32,
    count: usize,
) -> HsaStatus {
    guard("hsa_amd_memory_fill", || {
        let st = state::state()?;
        // SAFETY: the caller's contract.
        unsafe { st.services().copy().fill(ptr as u64, value, count) }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_async_copy_enable`: whether copies submitted from now on record their
/// start and end times in their completion signal.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`.
pub extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> HsaStatus {
    guard("hsa_amd_profiling_async_copy_enable", || {
        let st = state::state()?;
        st.services().copy().set_profiling(enable);
        Ok(Status::Success)
    })
}

/// `hsa_amd_profiling_get_async_copy_time`: when the profiled copy that completes `signal`
/// started and ended, system timestamp ticks (`HSA_SYSTEM_INFO_TIMESTAMP`): an SDMA copy's
/// `TIMESTAMP` packets stamp the GPU clock, translated as dispatch times are
/// (`hsa_amd_profiling_convert_tick_to_system_domain`, ROCR's `TranslateTime`); a host copy
/// stamps system ticks itself.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `time`; `INVALID_SIGNAL`; `ERROR` when no
/// profiled copy has completed `signal` (ROCR 5.2: the signal has no copy agent).
///
/// # Safety
/// `time` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: u64,
    time: *mut AsyncCopyTime,
) -> HsaStatus {
    guard("hsa_amd_profiling_get_async_copy_time", || {
        let st = state::state()?;
        non_null(time, "time")?;
        let s = st.signal(signal)?;
        let t = st.services().copy().copy_time(&s)?;
        let mut out = AsyncCopyTime {
            start: t.start,
            end: t.end,
        };
        if let Some(node) = t.node {
            out = AsyncCopyTime {
                start: st.system_ticks(node, t.start)?,
                end: st.system_ticks(node, t.end)?,
            };
        }
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { time.write_unaligned(out) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_svm_prefetch_async`: a prefetch is a hint and this runtime has no SVM migration
/// (`HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED` is false): the memory stays where it is; the
/// completion signal (when not 0) is decremented once the dependencies are 0, in order with
/// the copies, as ROCR 5.2 decrements it after its (there failing) KFD call.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a dependency count that does
/// not match `dep_signals`; `INVALID_SIGNAL` for an unknown dependency or completion signal.
///
/// # Safety
/// `dep_signals` is NULL or holds `num_dep_signals` handles.
pub unsafe extern "C" fn hsa_amd_svm_prefetch_async(
    ptr: *mut c_void,
    size: usize,
    agent: u64,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
) -> HsaStatus {
    let _ = (ptr, size);
    guard("hsa_amd_svm_prefetch_async", || {
        let st = state::state()?;
        agent_of(&st, agent)?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        let completion = match completion_signal {
            0 => None,
            h => Some(st.signal(h)?),
        };
        st.services().copy().prefetch(deps, completion)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_async_copy_on_engine` (ROCR 7): as [`hsa_amd_memory_async_copy`], on the
/// SDMA engine `engine_id` names (`hsa_amd_sdma_engine_id_t`, one bit) of the copy agent (the
/// source's when it is a GPU, else the destination's); a copy within one GPU runs as
/// `hsa_amd_memory_async_copy` does unless `force_copy_on_sdma` (`hsa_runtime::CopyEngine::
/// copy_on_engine`). `size` 0 copies nothing.
///
/// # Errors (as status)
/// As [`hsa_amd_memory_async_copy`]; `INVALID_ARGUMENT` for an `engine_id` of no bit or more
/// than one, or an engine the copy cannot take (ROCR 7's checks: past the agent's SDMA and
/// xGMI SDMA engines, a non-xGMI engine between GPUs of one hive, engine 0 on gfx90a for a
/// copy that is not host to device); `INVALID_AGENT` for two CPU agents.
///
/// # Safety
/// As [`hsa_amd_memory_async_copy`].
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy_on_engine(
    dst: *mut c_void,
    dst_agent: u64,
    src: *const c_void,
    src_agent: u64,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const u64,
    completion_signal: u64,
    engine_id: u32,
    force_copy_on_sdma: bool,
) -> HsaStatus {
    guard("hsa_amd_memory_async_copy_on_engine", || {
        let st = state::state()?;
        non_null(dst, "dst")?;
        non_null(src, "src")?;
        let deps = dependencies(&st, num_dep_signals, dep_signals)?;
        let d = NodeId(agent_of(&st, dst_agent)?.node());
        let s = NodeId(agent_of(&st, src_agent)?.node());
        let completion = st.signal(completion_signal)?;
        if size == 0 {
            return Ok(Status::Success);
        }
        if !engine_id.is_power_of_two() {
            bail!(
                Status::InvalidArgument,
                "engine_id {engine_id:#x} must name exactly one SDMA engine"
            );
        }
        let engine = hsa_runtime::CopyEngineId(engine_id.trailing_zeros());
        // SAFETY: the caller's contract.
        unsafe {
            st.services().copy().copy_on_engine(
                dst as u64,
                d,
                src as u64,
                s,
                size,
                engine,
                force_copy_on_sdma,
                deps,
                completion,
            )
        }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_copy_engine_status` (ROCR 7): in `*engine_ids_mask`, the SDMA engines of
/// the copy agent free for a copy from `src_agent` to `dst_agent`
/// (`hsa_runtime::CopyEngine::engine_status`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for an unknown agent, the same agent twice, or two CPU
/// agents; `OUT_OF_RESOURCES` when no engine is free (`*engine_ids_mask` then 0);
/// `INVALID_ARGUMENT` for a NULL `engine_ids_mask` (ROCR would write through it).
///
/// # Safety
/// `engine_ids_mask` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn hsa_amd_memory_copy_engine_status(
    dst_agent: u64,
    src_agent: u64,
    engine_ids_mask: *mut u32,
) -> HsaStatus {
    guard("hsa_amd_memory_copy_engine_status", || {
        let st = state::state()?;
        let d = NodeId(agent_of(&st, dst_agent)?.node());
        let s = NodeId(agent_of(&st, src_agent)?.node());
        non_null(engine_ids_mask, "engine_ids_mask")?;
        let r = st.services().copy().engine_status(d, s);
        // SAFETY: non-NULL, the caller's uint32_t.
        unsafe { engine_ids_mask.write(*r.as_ref().unwrap_or(&0)) };
        r?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_memory_get_preferred_copy_engine` (ROCR 7): in `*recommended_ids_mask`, the
/// engines recommended for a copy from `src_agent` to `dst_agent`: 0, no preference (see
/// `hsa_runtime::CopyEngine::preferred_engines`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for an unknown agent, the same agent twice, or two CPU
/// agents; `INVALID_ARGUMENT` for a NULL `recommended_ids_mask`.
///
/// # Safety
/// `recommended_ids_mask` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn hsa_amd_memory_get_preferred_copy_engine(
    dst_agent: u64,
    src_agent: u64,
    recommended_ids_mask: *mut u32,
) -> HsaStatus {
    guard("hsa_amd_memory_get_preferred_copy_engine", || {
        let st = state::state()?;
        let d = NodeId(agent_of(&st, dst_agent)?.node());
        let s = NodeId(agent_of(&st, src_agent)?.node());
        non_null(recommended_ids_mask, "recommended_ids_mask")?;
        let mask = st.services().copy().preferred_engines(d, s)?;
        // SAFETY: non-NULL, the caller's uint32_t.
        unsafe { recommended_ids_mask.write(mask) };
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_svm_prefetch_async,
    hsa_amd_memory_async_copy_on_engine,
    hsa_amd_memory_copy_engine_status,
    hsa_amd_memory_get_preferred_copy_engine,
    hsa_amd_memory_async_copy,
    hsa_amd_memory_async_copy_rect,
    hsa_amd_memory_fill,
    hsa_amd_profiling_async_copy_enable,
    hsa_amd_profiling_get_async_copy_time,
);
