//! `_amdgpu_r_debug`: the list of loaded GPU code objects a debugger reads, as ROCR exports it.
//!
//! ROCR's loader keeps a glibc-style `struct r_debug` (`crate::abi::RDebug`) whose `r_map`
//! heads a `link_map` list with one entry per loaded code object of every frozen executable:
//! `l_addr` the load delta, `l_name` the code object's URI (AMDGPUUsage "Code Object URI",
//! the URI `hsa_ven_amd_loader_loaded_code_object_get_info` reports). Around each change it
//! sets `r_state` to `RT_ADD` or `RT_DELETE`, calls the function `r_brk` names (a debugger
//! stops there), relinks, sets `RT_CONSISTENT` and calls it again. Entries are added when an
//! executable is frozen and removed when it is destroyed; at the last `hsa_shut_down` the
//! list is empty again. This module does the same, rebuilding the list from the live
//! executables after each change (`refresh`).
//!
//! The symbol is exported under `ROCR_1` as a data object of 40 bytes (`hsa_runtime64.map`).
//! ROCR 7 also hands its address to amdkfd (`AMDKFD_IOC_RUNTIME_ENABLE`), where a debugger
//! attaching through amdkfd finds it; this library does not enable the runtime in amdkfd, so a
//! debugger finds the list through the symbol only.
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;

use core::cell::UnsafeCell;
use core::sync::atomic::{fence, AtomicI32, Ordering};
use std::ffi::CString;
use std::sync::Mutex;

use crate::abi::{LinkMap, RDebug, AMDGPU_R_DEBUG_VERSION, RT_ADD, RT_CONSISTENT, RT_DELETE};
use crate::state;

/// The exported `r_debug`, written only under the lock of this module's entry list.
#[repr(transparent)]
pub struct SharedRDebug(UnsafeCell<RDebug>);

// SAFETY: every write happens under `ENTRIES`' lock (`publish`); other readers are a
// debugger that reads it while the process is stopped, and tests that read it after the
// change returned.
unsafe impl Sync for SharedRDebug {}

/// `_amdgpu_r_debug` (see the module docs).
pub static AMDGPU_R_DEBUG: SharedRDebug = SharedRDebug(UnsafeCell::new(RDebug {
    r_version: AMDGPU_R_DEBUG_VERSION,
    r_map: core::ptr::null_mut(),
    r_brk: loader_debug_state,
    r_state: RT_CONSISTENT,
    r_ldbase: 0,
}));

// A data object of `RDebug`'s size, under its C name (the `export!` macro makes functions).
core::arch::global_asm!(
    ".globl _amdgpu_r_debug",
    ".type _amdgpu_r_debug,@object",
    ".size _amdgpu_r_debug, 40",
    ".set _amdgpu_r_debug, {d}",
    d = sym AMDGPU_R_DEBUG,
);

/// The breakpoint function `r_brk` names: called before and after each change to the list.
/// Its body has a side effect so that no call is optimised away.
#[inline(never)]
pub extern "C" fn loader_debug_state() {
    static CALLS: AtomicI32 = AtomicI32::new(0);
    CALLS.fetch_add(1, Ordering::Relaxed);
}

/// One entry: the `link_map` and the URI its `l_name` points to.
struct Entry {
    map: LinkMap,
    _name: CString,
}

// SAFETY: the raw pointers in `map` point into this list's own boxes and strings, which only
// the lock's holder touches.
unsafe impl Send for Entry {}

/// The entries `r_map` heads, in list order. Their addresses are in the list: a vector is
/// filled once, linked, and then only moved whole (its buffer stays where it is) or dropped.
static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Rebuilds the list from the loaded code objects of the frozen executables of the live
/// runtime (none when it is not initialised), in executable-id and load order. `adding`
/// chooses the state shown during the change (`RT_ADD` or `RT_DELETE`).
pub(crate) fn refresh(adding: bool) {
    let objects: Vec<(i64, String)> = match state::state() {
        Ok(st) => super::amd_loader::all_loaded(&st)
            .into_iter()
            .filter(|l| l.frozen)
            .map(|l| (l.delta, l.reader.uri.clone()))
            .collect(),
        Err(_) => Vec::new(),
    };
    publish(&objects, if adding { RT_ADD } else { RT_DELETE });
}

/// Replaces the list by `objects` (load delta, URI), announcing the change as `change`.
fn publish(objects: &[(i64, String)], change: i32) {
    let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    let d = AMDGPU_R_DEBUG.0.get();
    // SAFETY: (every access to `*d` below) the static is valid for the process's life, and
    // only this lock's holder writes it.
    unsafe { core::ptr::addr_of_mut!((*d).r_state).write_volatile(change) };
    fence(Ordering::SeqCst);
    loader_debug_state();
    fence(Ordering::SeqCst);
    let mut fresh: Vec<Entry> = objects
        .iter()
        .map(|(delta, uri)| {
            let name = CString::new(uri.replace('\0', "%00")).unwrap_or_default();
            Entry {
                map: LinkMap {
                    l_addr: *delta as usize,
                    l_name: name.as_ptr(),
                    l_ld: core::ptr::null(),
                    l_next: core::ptr::null_mut(),
                    l_prev: core::ptr::null_mut(),
                },
                _name: name,
            }
        })
        .collect();
    let addresses: Vec<*mut LinkMap> = fresh
        .iter_mut()
        .map(|e| core::ptr::addr_of_mut!(e.map))
        .collect();
    for (i, e) in fresh.iter_mut().enumerate() {
        e.map.l_prev = if i == 0 {
            core::ptr::null_mut()
        } else {
            addresses[i - 1]
        };
        e.map.l_next = addresses
            .get(i + 1)
            .copied()
            .unwrap_or(core::ptr::null_mut());
    }
    let head = addresses.first().copied().unwrap_or(core::ptr::null_mut());
    // SAFETY: as above; the old entries stay alive until `r_map` no longer leads to them.
    unsafe { core::ptr::addr_of_mut!((*d).r_map).write_volatile(head) };
    *entries = fresh;
    fence(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { core::ptr::addr_of_mut!((*d).r_state).write_volatile(RT_CONSISTENT) };
    loader_debug_state();
}
