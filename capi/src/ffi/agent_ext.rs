//! The rest of the agent and ISA API ROCR 5.2 exports: caches (`hsa_agent_iterate_caches`,
//! `hsa_cache_get_info`), ISAs by name (`hsa_isa_from_name`), exception policies and rounding
//! (`hsa_isa_get_exception_policies`, `hsa_isa_get_round_method`), wavefronts
//! (`hsa_isa_iterate_wavefronts`, `hsa_wavefront_get_info`) and the coherency type of a GPU
//! agent (`hsa_amd_coherency_get_type`, `hsa_amd_coherency_set_type`).
//!
//! Cache handles are a tag with the agent's index and the cache's position; wavefront handles a
//! tag with the ISA's agent index (each ISA has one wavefront, 64 work-items). ISA handles
//! belong to the agents (`agent`): `hsa_isa_from_name` knows the ISAs of the agents present,
//! not every ISA ROCR's registry lists.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
// Named: the 2021 prelude of Rust 1.85 (the rust-version) does not re-export `format!`.
use std::format;

use std::ffi::{c_char, c_void, CStr, CString};

use hsa_core::platform::TopologySource;
use hsa_core::runtime::Agent;
use hsa_core::{bail, Error, Status};

use super::agent::{agent_of, callback_result, isa_agent, isa_handles};
use super::{bad_attribute, guard, non_null, put, HsaStatus};
use crate::abi::*;
use crate::state::{self, lock, untag, State};

/// Tag of cache handles (`hsa_cache_t`): base | agent index << 8 | cache position.
pub const CACHE_BASE: u64 = 0x4853_4300_0000_0000;
/// Tag of wavefront handles (`hsa_wavefront_t`): base | agent index.
pub const WAVEFRONT_BASE: u64 = 0x4853_5700_0000_0000;

/// `hsa_cache_info_t`.
const HSA_CACHE_INFO_NAME_LENGTH: u32 = 0;
const HSA_CACHE_INFO_NAME: u32 = 1;
const HSA_CACHE_INFO_LEVEL: u32 = 2;
const HSA_CACHE_INFO_SIZE: u32 = 3;
/// `HSA_WAVEFRONT_INFO_SIZE`.
const HSA_WAVEFRONT_INFO_SIZE: u32 = 0;
/// `HSA_ROUND_METHOD_SINGLE`.
const HSA_ROUND_METHOD_SINGLE: u32 = 1;
/// `HSA_AMD_COHERENCY_TYPE_COHERENT`, `_NONCOHERENT`.
const COHERENCY_TYPES: [u32; 2] = [0, 1];
/// `HSA_AMD_COHERENCY_TYPE_NONCOHERENT`: a base-profile GPU's type until set (ROCR 5.2).
const COHERENCY_NONCOHERENT: u32 = 1;

/// `kfd_sysfs.h` cache types: `HSA_CACHE_TYPE_INSTRUCTION`, `_CPU`, `_HSACU`.
const CACHE_TYPE_INSTRUCTION: u32 = 2;
const CACHE_TYPE_CPU: u32 = 4;
const CACHE_TYPE_HSACU: u32 = 8;

/// One cache of an agent, as `hsa_cache_get_info` reports it.
struct AgentCache {
    level: u32,
    /// What `HSA_CACHE_INFO_SIZE` answers: KFD's KiB for a GPU cache, bytes for a CPU cache
    /// (libhsakmt reads a CPU's cache sizes from sysfs in bytes and ROCR passes both through).
    size: u32,
}

/// The data caches of an agent ROCR 5.2 lists (`GpuAgent::InitCacheList`,
/// `CpuAgent::InitCacheList`): a GPU's caches with the HSACU type, a CPU's with the CPU type,
/// no instruction caches; in topology order.
fn caches(st: &State, a: &Agent) -> Vec<AgentCache> {
    let Some(index) = a.handle().index() else {
        return Vec::new();
    };
    let wanted = if a.is_gpu() {
        CACHE_TYPE_HSACU
    } else {
        CACHE_TYPE_CPU
    };
    (0..)
        .map_while(|c| st.rt().platform().cache(index, c).ok().flatten())
        .filter(|c| c.cache_type & wanted != 0 && c.cache_type & CACHE_TYPE_INSTRUCTION == 0)
        .map(|c| AgentCache {
            level: c.level,
            size: if a.is_gpu() {
                c.size_kib
            } else {
                c.size_kib.saturating_mul(1024)
            },
        })
        .collect()
}

/// The agent and cache behind a cache handle.
fn cache_of(st: &State, handle: u64) -> Result<(&Agent, AgentCache), Error> {
    let found = untag(handle, CACHE_BASE).and_then(|raw| {
        let a = st.rt().agents().get((raw >> 8) as usize)?;
        let c = caches(st, a).into_iter().nth((raw & 0xff) as usize)?;
        Some((a, c))
    });
    match found {
        Some(f) => Ok(f),
        None => bail!(
            Status::InvalidCache,
            "cache handle {handle:#x} is not a cache"
        ),
    }
}

/// `hsa_agent_iterate_caches`: the agent's data caches, as ROCR 5.2 lists them: a GPU's caches
/// of the HSACU type, a CPU's of the CPU type, no instruction caches; in topology order.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT`; `INVALID_ARGUMENT` for a NULL callback; a status
/// other than SUCCESS from the callback stops the iteration and is returned.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_agent_iterate_caches(
    agent: u64,
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_agent_iterate_caches", || {
        let st = state::state()?;
        let a = agent_of(&st, agent)?;
        let index = a.handle().index().unwrap_or(0) as u64;
        let handles: Vec<u64> = (0..caches(&st, a).len() as u64)
            .map(|i| CACHE_BASE | index << 8 | i)
            .collect();
        drop(st);
        super::agent::iterate(&handles, callback, data)
    })
}

/// `hsa_cache_get_info`: `NAME_LENGTH`, `NAME`, `LEVEL` (`uint8_t`), `SIZE` (`uint32_t`), as ROCR
/// 5.2 to 7.2 answer them: `NAME` is a `const char*` to `"<agent name> L<level>"` and `SIZE`
/// is the thunk's figure: KFD's KiB for a GPU cache, bytes for a CPU cache (libhsakmt reads
/// those from the host's sysfs in bytes). `hsa.h` documents a character array and bytes;
/// applications written against ROCR read what ROCR writes.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_CACHE`; `INVALID_ARGUMENT` for a NULL `value` or an unknown
/// attribute.
///
/// # Safety
/// `value` is NULL or points to memory of the attribute's size.
pub unsafe extern "C" fn hsa_cache_get_info(
    cache: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_cache_get_info", || {
        let st = state::state()?;
        let (a, c) = cache_of(&st, cache)?;
        non_null(value, "value")?;
        let name = format!("{} L{}", a.name(), c.level);
        // SAFETY: (all arms) `value` is non-NULL and as large as the attribute's type.
        unsafe {
            match attribute {
                HSA_CACHE_INFO_NAME_LENGTH => put::<u32>(value, name.len() as u32),
                HSA_CACHE_INFO_NAME => {
                    let mut names = lock(&st.records.cache_names);
                    let s = names
                        .entry(cache)
                        .or_insert_with(|| CString::new(name).unwrap_or_default());
                    put::<*const c_char>(value, s.as_ptr())
                }
                HSA_CACHE_INFO_LEVEL => put::<u8>(value, c.level as u8),
                HSA_CACHE_INFO_SIZE => put::<u32>(value, c.size),
                other => return Err(bad_attribute("cache", other)),
            }
        }
        Ok(Status::Success)
    })
}

/// `hsa_isa_from_name`: the ISA handle of the agent whose ISA has exactly this name (e.g.
/// `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL arguments; `INVALID_ISA_NAME` when no
/// agent has that ISA.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `isa` is NULL or writable.
pub unsafe extern "C" fn hsa_isa_from_name(name: *const c_char, isa: *mut u64) -> HsaStatus {
    guard("hsa_isa_from_name", || {
        let st = state::state()?;
        non_null(name, "name")?;
        non_null(isa, "isa")?;
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        let wanted = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        // Every agent's ISAs, its own and its generic one ([`isa_handles`]).
        let found = st.rt().agents().iter().find_map(|a| {
            isa_handles(a).into_iter().find(|&h| {
                super::agent::isa_of(&st, h).is_ok_and(|(_, t)| *t.isa_name() == *wanted)
            })
        });
        let Some(handle) = found else {
            bail!(
                Status::InvalidIsaName,
                "no agent has the ISA {wanted:?} (known: {})",
                st.rt()
                    .agents()
                    .iter()
                    .filter_map(|a| a.isa().map(|i| i.isa_name().to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { isa.write(handle) };
        Ok(Status::Success)
    })
}

/// Checks an `hsa_profile_t`.
fn check_profile(profile: u32) -> Result<(), Error> {
    if profile > 1 {
        bail!(
            Status::InvalidArgument,
            "profile {profile} is not BASE (0) or FULL (1)"
        );
    }
    Ok(())
}

/// `hsa_isa_get_exception_policies`: 0 (no exception policy is supported, as ROCR 5.2).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a bad profile or a NULL `mask`; `INVALID_ISA`.
///
/// # Safety
/// `mask` is NULL or writable.
pub unsafe extern "C" fn hsa_isa_get_exception_policies(
    isa: u64,
    profile: u32,
    mask: *mut u16,
) -> HsaStatus {
    guard("hsa_isa_get_exception_policies", || {
        let st = state::state()?;
        check_profile(profile)?;
        non_null(mask, "mask")?;
        isa_agent(&st, isa)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { mask.write(0) };
        Ok(Status::Success)
    })
}

/// `hsa_isa_get_round_method`: `HSA_ROUND_METHOD_SINGLE` for every type and flush mode (as ROCR
/// 5.2's `Isa::GetRoundMethod`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a `fp_type` other than 16/32/64, a flush mode
/// other than FTZ/NON_FTZ, or a NULL `round_method`; `INVALID_ISA`.
///
/// # Safety
/// `round_method` is NULL or writable.
pub unsafe extern "C" fn hsa_isa_get_round_method(
    isa: u64,
    fp_type: u32,
    flush_mode: u32,
    round_method: *mut u32,
) -> HsaStatus {
    guard("hsa_isa_get_round_method", || {
        let st = state::state()?;
        if ![1, 2, 4].contains(&fp_type) {
            bail!(
                Status::InvalidArgument,
                "fp_type {fp_type} is not 1, 2 or 4"
            );
        }
        if ![1, 2].contains(&flush_mode) {
            bail!(
                Status::InvalidArgument,
                "flush_mode {flush_mode} is not FTZ (1) or NON_FTZ (2)"
            );
        }
        non_null(round_method, "round_method")?;
        isa_agent(&st, isa)?;
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { round_method.write(HSA_ROUND_METHOD_SINGLE) };
        Ok(Status::Success)
    })
}

/// `hsa_isa_iterate_wavefronts`: the ISA's one wavefront (64 work-items).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL callback; `INVALID_ISA`; the callback's
/// status.
///
/// # Safety
/// `callback` is NULL or a valid function of the documented signature.
pub unsafe extern "C" fn hsa_isa_iterate_wavefronts(
    isa: u64,
    callback: Option<HandleCallback>,
    data: *mut c_void,
) -> HsaStatus {
    guard("hsa_isa_iterate_wavefronts", || {
        let st = state::state()?;
        let Some(callback) = callback else {
            bail!(Status::InvalidArgument, "callback is NULL");
        };
        let a = isa_agent(&st, isa)?;
        let handle = WAVEFRONT_BASE | a.handle().index().unwrap_or(0) as u64;
        drop(st);
        // SAFETY: the application's callback with its documented signature.
        let raw = unsafe { callback(handle, data) };
        callback_result(raw).unwrap_or(Ok(Status::Success))
    })
}

/// `hsa_wavefront_get_info`: `HSA_WAVEFRONT_INFO_SIZE` (`uint32_t`): 64.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a NULL `value` or another attribute;
/// `INVALID_WAVEFRONT`.
///
/// # Safety
/// `value` is NULL or writable for a `uint32_t`.
pub unsafe extern "C" fn hsa_wavefront_get_info(
    wavefront: u64,
    attribute: u32,
    value: *mut c_void,
) -> HsaStatus {
    guard("hsa_wavefront_get_info", || {
        let st = state::state()?;
        non_null(value, "value")?;
        let agent = untag(wavefront, WAVEFRONT_BASE)
            .and_then(|i| st.rt().agents().get(i as usize))
            .filter(|a| a.isa().is_some());
        let Some(a) = agent else {
            bail!(
                Status::InvalidWavefront,
                "wavefront handle {wavefront:#x} is not a wavefront"
            );
        };
        match attribute {
            // SAFETY: non-NULL, writable for a uint32_t per the caller's contract.
            HSA_WAVEFRONT_INFO_SIZE => unsafe { put::<u32>(value, a.wavefront_size()) },
            other => return Err(bad_attribute("wavefront", other)),
        }
        Ok(Status::Success)
    })
}

/// The GPU agent behind `agent` for the coherency calls.
fn coherency_agent(st: &State, agent: u64) -> Result<u64, Error> {
    let a = agent_of(st, agent)?;
    if !a.is_gpu() {
        bail!(
            Status::InvalidAgent,
            "agent {} is not a GPU agent",
            a.name()
        );
    }
    Ok(agent)
}

/// `hsa_amd_coherency_get_type`: the GPU agent's coherency type: NONCOHERENT until set (ROCR
/// 5.2's default for a base-profile agent).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for an unknown or CPU agent; `INVALID_ARGUMENT` for a
/// NULL `type`.
///
/// # Safety
/// `type_` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_coherency_get_type(agent: u64, type_: *mut u32) -> HsaStatus {
    guard("hsa_amd_coherency_get_type", || {
        let st = state::state()?;
        agent_of(&st, agent)?;
        non_null(type_, "type")?;
        let agent = coherency_agent(&st, agent)?;
        let t = lock(&st.records.coherency)
            .get(&agent)
            .copied()
            .unwrap_or(COHERENCY_NONCOHERENT);
        // SAFETY: non-NULL, writable per the caller's contract.
        unsafe { type_.write(t) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_coherency_set_type`: records the GPU agent's coherency type, as ROCR 5.2 does for
/// every GPU but Kaveri (it changes nothing else: fine- and coarse-grained memory is chosen by
/// the pool).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for an unknown or CPU agent; `INVALID_ARGUMENT` for a
/// type that is not COHERENT (0) or NONCOHERENT (1).
pub extern "C" fn hsa_amd_coherency_set_type(agent: u64, type_: u32) -> HsaStatus {
    guard("hsa_amd_coherency_set_type", || {
        let st = state::state()?;
        agent_of(&st, agent)?;
        if !COHERENCY_TYPES.contains(&type_) {
            bail!(
                Status::InvalidArgument,
                "type {type_} is not COHERENT (0) or NONCOHERENT (1)"
            );
        }
        let agent = coherency_agent(&st, agent)?;
        lock(&st.records.coherency).insert(agent, type_);
        Ok(Status::Success)
    })
}

export!(
    hsa_agent_iterate_caches,
    hsa_cache_get_info,
    hsa_isa_from_name,
    hsa_isa_get_exception_policies,
    hsa_isa_get_round_method,
    hsa_isa_iterate_wavefronts,
    hsa_wavefront_get_info,
    hsa_amd_coherency_get_type,
    hsa_amd_coherency_set_type,
);
