//! Host memory the application already has, made reachable by the agents (`hsa_amd_memory_lock`,
//! `hsa_amd_memory_lock_to_pool`, `hsa_amd_memory_unlock`), and what the runtime keeps about its
//! own allocations for the application (`hsa_amd_pointer_info_set_userdata`,
//! `hsa_amd_register_deallocation_callback`): [`HostMemory`], one per runtime.
//!
//! A lock registers the pages holding the buffer with the platform's
//! [`HostMemoryRegistration`] capability (on Linux a KFD `USERPTR` buffer) for the GPU nodes it
//! names, as ROCR's `MemoryRegion::Lock` does; the agents reach them at the device address the
//! platform chose, so the agent pointer differs from the host pointer (as ROCR's on a discrete
//! GPU, which HIP 5.2 relies on). Locking the same page range again shares the registration
//! (reference-counted, as libhsakmt does), mapping it to the GPUs the new lock adds;
//! [`HostMemory::unlock`] undoes the most recent lock of a pointer. Memory the runtime allocated
//! itself is already reachable: locking it registers nothing and the agent pointer is the
//! pointer.
//!
//! The host copies of the runtime's services (the copy engine's host path, image import and
//! export) reach memory through [`HostMemory::host_range`]: a pool allocation's host mapping, a
//! lock's host pages for its agent range, or the application's own memory.
//!
//! No thread and no `std`: a `no_std` + `alloc` host (bare-metal firmware) keeps the same
//! records, and its platform without the capability refuses locks with `Status::Error`.
#![allow(unsafe_code)] // registration (an unsafe platform call), host pointers, byte copies

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ptr::NonNull;

use super::Runtime;
use crate::addr::{GpuVa, NodeId};
use crate::platform::{HostMemoryRegistration, MemoryChunk, Platform};
use crate::platform_ref::PlatformRef;
use crate::status::{Error, Result, Status};
use crate::{bail, error};

/// Page size of registrations, bytes.
const PAGE: u64 = 4096;

/// One registered page range.
struct Registered {
    /// First page and end (page-aligned) of the host range.
    start: u64,
    end: u64,
    chunk: MemoryChunk,
    /// The GPU nodes it is mapped to.
    gpus: Vec<NodeId>,
    /// Locks using it.
    refs: u32,
}

/// One lock of the application.
struct Locked {
    /// The locked host pointer and size, bytes.
    ptr: u64,
    size: u64,
    /// Where the agents reach `ptr`.
    agent_ptr: u64,
    /// The host range of the registration it uses (`None` for runtime memory).
    registration: Option<(u64, u64)>,
}

/// A deallocation callback: the pointer inside the allocation, the caller's key (what
/// [`HostMemory::deregister_deallocation_callback`] names it by) and the call.
struct Notifier {
    ptr: u64,
    key: usize,
    call: Box<dyn FnOnce(u64) + Send>,
}

#[derive(Default)]
struct Table {
    registrations: Vec<Registered>,
    locks: Vec<Locked>,
}

/// What [`HostMemory::locked_info`] reports about locked memory (`hsa_amd_pointer_info`'s
/// `HSA_EXT_POINTER_TYPE_LOCKED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedInfo {
    /// The locked host pointer.
    pub base: u64,
    /// Where the agents reach it.
    pub agent_base: u64,
    /// The locked size, bytes.
    pub size: u64,
    /// The user data set for the base ([`HostMemory::set_user_data`]).
    pub user_data: usize,
    /// The GPU nodes that reach it.
    pub gpus: Vec<NodeId>,
}

/// The host-memory records of one runtime: locks and their platform registrations, user data
/// of allocations, deallocation callbacks. Every method may be called from any thread.
#[derive(Default)]
pub struct HostMemory {
    table: spin::Mutex<Table>,
    /// Base address → user data.
    user_data: spin::Mutex<BTreeMap<u64, usize>>,
    notifiers: spin::Mutex<Vec<Notifier>>,
    /// Base addresses of allocations being freed (their callbacks running): to the
    /// application they are gone already, as in ROCR 5.2 (`Runtime::FreeMemory`).
    freeing: spin::Mutex<Vec<u64>>,
}

impl core::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let t = self.table.lock();
        f.debug_struct("HostMemory")
            .field("locks", &t.locks.len())
            .field("registrations", &t.registrations.len())
            .finish_non_exhaustive()
    }
}

/// The platform's host-memory registration, or ROCR's status when it has none.
fn registration<P: Platform + ?Sized>(
    platform: &P,
    ptr: u64,
    size: u64,
) -> Result<&dyn HostMemoryRegistration> {
    platform.capabilities().host_memory.ok_or_else(|| {
        error!(
            Status::Error,
            "{size} bytes at {ptr:#x}: the {} platform cannot register host memory",
            platform.device_name()
        )
    })
}

impl HostMemory {
    /// No lock, no user data, no callback.
    pub fn new() -> HostMemory {
        HostMemory::default()
    }

    /// Makes `size` bytes of the application's memory at `ptr` reachable by the GPU nodes
    /// `gpus` (see the module docs); returns the address agents use. Memory of `rt`'s own
    /// pools needs nothing: the agent pointer is `ptr`.
    ///
    /// # Safety
    /// Outside `rt`'s allocations, `[ptr, ptr + size)` is mapped read-write memory of this
    /// process that stays mapped until it is unlocked (or [`HostMemory::shut_down`]).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when the range wraps the address space or starts at page 0;
    /// `Status::Error` when the platform cannot register host memory or refuses it;
    /// `Status::OutOfResources` when it cannot map it (both with "locking N bytes at P").
    pub unsafe fn lock<H: PlatformRef>(
        &self,
        rt: &Runtime<H>,
        ptr: u64,
        size: u64,
        gpus: &[NodeId],
    ) -> Result<u64> {
        if rt.pointer_info(GpuVa(ptr)).is_ok() {
            // The runtime's own memory: already reachable, at its address.
            self.table.lock().locks.push(Locked {
                ptr,
                size,
                agent_ptr: ptr,
                registration: None,
            });
            return Ok(ptr);
        }
        let start = ptr / PAGE * PAGE;
        let end = ptr
            .checked_add(size)
            .and_then(|e| e.checked_next_multiple_of(PAGE))
            .ok_or_else(|| error!(Status::InvalidArgument, "{size} bytes at {ptr:#x} overflow"))?;
        let platform = rt.platform();
        let context = |e: Error| e.context(&alloc::format!("locking {size} bytes at {ptr:#x}"));
        let mut t = self.table.lock();
        let shared = t
            .registrations
            .iter_mut()
            .find(|r| r.start == start && r.end == end);
        let agent_base = match shared {
            Some(r) => {
                // The GPUs this lock adds reach the shared registration too (libhsakmt maps a
                // registered range again for the nodes asked).
                let more: Vec<NodeId> = gpus
                    .iter()
                    .copied()
                    .filter(|g| !r.gpus.contains(g))
                    .collect();
                if !more.is_empty() {
                    platform.map_memory(&r.chunk, &more).map_err(context)?;
                    r.gpus.extend(more);
                }
                r.refs += 1;
                r.chunk.gpu_va.0
            }
            None => {
                let host = NonNull::new(start as *mut u8)
                    .ok_or_else(|| error!(Status::InvalidArgument, "address 0"))?;
                let reg = registration(platform, ptr, size).map_err(context)?;
                // SAFETY: the application's memory, which it keeps mapped while locked (this
                // function's contract); the page range covers it.
                let chunk = unsafe { reg.register_host_memory(host, end - start, gpus) }
                    .map_err(context)?;
                let base = chunk.gpu_va.0;
                t.registrations.push(Registered {
                    start,
                    end,
                    chunk,
                    gpus: gpus.to_vec(),
                    refs: 1,
                });
                base
            }
        };
        let agent_ptr = agent_base + (ptr - start);
        t.locks.push(Locked {
            ptr,
            size,
            agent_ptr,
            registration: Some((start, end)),
        });
        Ok(agent_ptr)
    }

    /// Undoes the most recent lock of `ptr`, deregistering its pages when no lock uses them
    /// any more; whether there was a lock. A deregistration the platform refuses is logged.
    ///
    /// # Safety
    /// No agent uses the memory through the lock's agent pointer any more.
    pub unsafe fn unlock<H: PlatformRef>(&self, rt: &Runtime<H>, ptr: u64) -> bool {
        let mut t = self.table.lock();
        let Some(i) = t.locks.iter().rposition(|l| l.ptr == ptr) else {
            return false;
        };
        let l = t.locks.remove(i);
        let Some((start, end)) = l.registration else {
            return true;
        };
        let Some(j) = t
            .registrations
            .iter()
            .position(|r| r.start == start && r.end == end)
        else {
            return true;
        };
        t.registrations[j].refs -= 1;
        if t.registrations[j].refs == 0 {
            let r = t.registrations.remove(j);
            if let Some(reg) = rt.platform().capabilities().host_memory {
                // SAFETY: a registration of this platform that no lock uses any more; no
                // agent uses it (this function's contract).
                if let Err(e) = unsafe { reg.deregister_host_memory(&r.chunk) } {
                    log::info!("hsa_amd_memory_unlock: {e}");
                }
            }
        }
        true
    }

    /// Deregisters everything still registered and forgets every lock (the runtime is going).
    ///
    /// # Safety
    /// No agent uses locked memory any more (kernels using it have completed).
    pub unsafe fn shut_down<H: PlatformRef>(&self, rt: &Runtime<H>) {
        let mut t = self.table.lock();
        t.locks.clear();
        let registrations = core::mem::take(&mut t.registrations);
        drop(t);
        let Some(reg) = rt.platform().capabilities().host_memory else {
            return;
        };
        for r in registrations {
            // SAFETY: a registration of this platform, used by no lock any more; no agent uses
            // it (this function's contract).
            let _ = unsafe { reg.deregister_host_memory(&r.chunk) };
        }
    }

    /// The user data set for the allocation (or lock) at `base`, 0 when none.
    pub fn user_data(&self, base: u64) -> usize {
        self.user_data.lock().get(&base).copied().unwrap_or(0)
    }

    /// Sets the user data `hsa_amd_pointer_info` reports for the allocation or lock starting
    /// at `base` (`hsa_amd_pointer_info_set_userdata`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `base` is not the start of an allocation of `rt` or of
    /// locked memory (ROCR 5.2).
    pub fn set_user_data<H: PlatformRef>(
        &self,
        rt: &Runtime<H>,
        base: u64,
        data: usize,
    ) -> Result<()> {
        let is_base = rt
            .pointer_info(GpuVa(base))
            .is_ok_and(|p| p.allocation.va.0 == base)
            || self.locked_info(base).is_some_and(|l| l.base == base);
        if !is_base {
            bail!(
                Status::InvalidArgument,
                "{base:#x} is not the start of an allocation or of locked memory"
            );
        }
        self.user_data.lock().insert(base, data);
        Ok(())
    }

    /// Registers `call`, run with `ptr` when the allocation of `rt` holding `ptr` is freed
    /// through [`HostMemory::free`], before it is (`hsa_amd_register_deallocation_callback`).
    /// `key` names it for [`HostMemory::deregister_deallocation_callback`] (the C API: the
    /// callback's address).
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when `ptr` is not inside an allocation of `rt`.
    pub fn register_deallocation_callback<H: PlatformRef>(
        &self,
        rt: &Runtime<H>,
        ptr: u64,
        key: usize,
        call: Box<dyn FnOnce(u64) + Send>,
    ) -> Result<()> {
        if rt.pointer_info(GpuVa(ptr)).is_err() {
            bail!(
                Status::InvalidAllocation,
                "{ptr:#x} is not inside an allocation of this runtime"
            );
        }
        self.notifiers.lock().push(Notifier { ptr, key, call });
        Ok(())
    }

    /// Removes every deallocation callback registered for `ptr` under `key`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` when there is none.
    pub fn deregister_deallocation_callback(&self, ptr: u64, key: usize) -> Result<()> {
        let removed: Vec<Notifier> = {
            let mut n = self.notifiers.lock();
            let (gone, keep) = core::mem::take(&mut *n)
                .into_iter()
                .partition(|x| x.ptr == ptr && x.key == key);
            *n = keep;
            gone
        };
        if removed.is_empty() {
            bail!(
                Status::InvalidArgument,
                "no deallocation callback {key:#x} is registered for {ptr:#x}"
            );
        }
        Ok(())
    }

    /// Frees the allocation of `rt` starting at `va` as ROCR 5.2's `Runtime::FreeMemory`
    /// does (`hsa_memory_free`, `hsa_amd_memory_pool_free`): the allocation is gone to the
    /// application before its deallocation callbacks run (so a callback freeing it again is
    /// refused), then they run (with no lock held), its user data is forgotten, and then its
    /// memory goes.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` when `va` does not start a live allocation of `rt`, or it
    /// is being freed already (a callback of this free frees it again); the pool's error.
    pub fn free<H: PlatformRef>(&self, rt: &Runtime<H>, va: u64) -> Result<()> {
        let size = match rt.pointer_info(GpuVa(va)) {
            Ok(p) if p.allocation.va.0 == va => p.allocation.size_bytes,
            _ => bail!(
                Status::InvalidAllocation,
                "{va:#x} is not the start of a live allocation of this runtime"
            ),
        };
        {
            let mut f = self.freeing.lock();
            if f.contains(&va) {
                bail!(
                    Status::InvalidAllocation,
                    "{va:#x} is being freed already (a deallocation callback frees it again)"
                );
            }
            f.push(va);
        }
        let due: Vec<Notifier> = {
            let mut n = self.notifiers.lock();
            let (due, keep) = core::mem::take(&mut *n)
                .into_iter()
                .partition(|x| x.ptr >= va && x.ptr - va < size.max(1));
            *n = keep;
            due
        };
        self.user_data.lock().remove(&va);
        for x in due {
            (x.call)(x.ptr);
        }
        let freed = rt.free(GpuVa(va));
        self.freeing.lock().retain(|&b| b != va);
        freed
    }

    /// The lock whose host or agent range contains `ptr` (the most recent), for
    /// `hsa_amd_pointer_info`.
    pub fn locked_info(&self, ptr: u64) -> Option<LockedInfo> {
        let t = self.table.lock();
        let inside = |base: u64, size: u64| ptr >= base && ptr - base < size;
        let l = t.locks.iter().rev().find(|l| {
            l.registration.is_some() && (inside(l.ptr, l.size) || inside(l.agent_ptr, l.size))
        })?;
        let gpus = l
            .registration
            .and_then(|(start, end)| {
                t.registrations
                    .iter()
                    .find(|r| r.start == start && r.end == end)
            })
            .map(|r| r.gpus.clone())
            .unwrap_or_default();
        let (base, agent_base, size) = (l.ptr, l.agent_ptr, l.size);
        drop(t);
        Some(LockedInfo {
            base,
            agent_base,
            size,
            user_data: self.user_data(base),
            gpus,
        })
    }

    /// The host address of `len` bytes at `ptr` when they lie in a lock's agent range;
    /// `None` otherwise.
    pub fn agent_to_host(&self, ptr: u64, len: u64) -> Option<u64> {
        let t = self.table.lock();
        t.locks.iter().rev().find_map(|l| {
            let offset = ptr.checked_sub(l.agent_ptr)?;
            (l.registration.is_some() && offset.checked_add(len)? <= l.size)
                .then_some(l.ptr + offset)
        })
    }

    /// The host address of `len` bytes at `ptr`: inside an allocation of `rt`, its host
    /// mapping (checked to hold `len` bytes); inside the agent range of locked memory, the host
    /// memory locked there; outside both, `ptr` itself (the application's own memory).
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming `what` for a range that runs past its allocation, or
    /// device memory the host cannot reach ("this copy runs on the host").
    pub fn host_range<H: PlatformRef>(
        &self,
        rt: &Runtime<H>,
        ptr: u64,
        len: usize,
        what: &str,
    ) -> Result<*mut u8> {
        let Ok(info) = rt.pointer_info(GpuVa(ptr)) else {
            if let Some(host) = self.agent_to_host(ptr, len as u64) {
                return Ok(host as *mut u8);
            }
            return Ok(ptr as *mut u8);
        };
        let a = info.allocation;
        let offset = ptr - a.va.0;
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > a.size_bytes)
        {
            bail!(
                Status::InvalidArgument,
                "{what} {ptr:#x} + {len} bytes runs past its allocation ({:#x}, {} bytes)",
                a.va.0,
                a.size_bytes
            );
        }
        match a.host_ptr {
            // SAFETY: offset + len <= size_bytes (checked above): inside the host mapping.
            Some(h) => Ok(unsafe { h.as_ptr().add(offset as usize) }),
            None => bail!(
                Status::InvalidArgument,
                "{what} {ptr:#x} is device memory the host cannot reach (this copy runs on the \
                 host: only async copies between pool memory a GPU reaches use its SDMA queue)"
            ),
        }
    }

    /// Copies `len` bytes from `src` to `dst` (overlap allowed) through their host addresses
    /// ([`HostMemory::host_range`]): the host path of copies and image transfers.
    ///
    /// # Safety
    /// Outside `rt`'s allocations and locks, `dst` and `src` are valid for `len` bytes (the
    /// application's memory, as `hsa_amd_memory_async_copy` requires it to stay until the
    /// copy completes).
    ///
    /// # Errors
    /// As [`HostMemory::host_range`], naming `dst` or `src`.
    pub unsafe fn copy_bytes<H: PlatformRef>(
        &self,
        rt: &Runtime<H>,
        dst: u64,
        src: u64,
        len: usize,
    ) -> Result<()> {
        let d = self.host_range(rt, dst, len, "dst")?;
        let s = self.host_range(rt, src, len, "src")?;
        // SAFETY: both ranges hold `len` bytes: pool ranges were checked by host_range; other
        // memory per this function's contract.
        unsafe { core::ptr::copy(s, d, len) };
        Ok(())
    }
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;
    use crate::memory::GlobalFlags;
    use crate::platform::fake::FakePlatform;
    use core::sync::atomic::{AtomicU64, Ordering};

    /// Runtime memory locks at its own address; the fake cannot register other memory
    /// (`Status::Error`, ROCR's status); user data and deallocation callbacks follow ROCR's
    /// free: callbacks run once, before the memory goes, and a second free from one of them
    /// is refused.
    #[test]
    fn locks_user_data_and_deallocation_callbacks() {
        let plat = FakePlatform::new();
        let rt = Runtime::new(&plat).unwrap();
        let cpu = rt.first_cpu().unwrap().handle();
        let pool = rt
            .find_pool(cpu, GlobalFlags::FINE_GRAINED)
            .unwrap()
            .handle();
        let a = rt.allocate(pool, 8192).unwrap();
        let hm = HostMemory::new();
        // SAFETY: the runtime's own memory; nothing is registered.
        let locked = unsafe { hm.lock(&rt, a.va.0 + 16, 32, &[NodeId(1)]) };
        assert_eq!(locked, Ok(a.va.0 + 16));
        assert!(
            hm.locked_info(a.va.0 + 16).is_none(),
            "runtime memory is not LOCKED"
        );
        let mut page = [0u8; 64];
        // SAFETY: the fake refuses before touching the memory.
        let e = unsafe { hm.lock(&rt, page.as_mut_ptr() as u64, 64, &[NodeId(1)]) }.unwrap_err();
        assert_eq!(e.status(), Status::Error);
        assert!(e.detail().contains("cannot register host memory"), "{e}");
        // SAFETY: no agent uses it.
        assert!(unsafe { hm.unlock(&rt, a.va.0 + 16) });
        // SAFETY: as above.
        assert!(!unsafe { hm.unlock(&rt, a.va.0 + 16) });

        hm.set_user_data(&rt, a.va.0, 7).unwrap();
        assert_eq!(hm.user_data(a.va.0), 7);
        assert_eq!(
            hm.set_user_data(&rt, a.va.0 + 8, 7).unwrap_err().status(),
            Status::InvalidArgument
        );
        let called = alloc::sync::Arc::new(AtomicU64::new(0));
        let seen = called.clone();
        hm.register_deallocation_callback(
            &rt,
            a.va.0 + 100,
            1,
            Box::new(move |p| seen.store(p, Ordering::SeqCst)),
        )
        .unwrap();
        hm.register_deallocation_callback(&rt, a.va.0, 2, Box::new(|_| {}))
            .unwrap();
        hm.deregister_deallocation_callback(a.va.0, 2).unwrap();
        assert_eq!(
            hm.deregister_deallocation_callback(a.va.0, 2)
                .unwrap_err()
                .status(),
            Status::InvalidArgument
        );
        assert_eq!(
            hm.free(&rt, a.va.0 + 8).unwrap_err().status(),
            Status::InvalidAllocation
        );
        hm.free(&rt, a.va.0).unwrap();
        assert_eq!(called.load(Ordering::SeqCst), a.va.0 + 100);
        assert_eq!(hm.user_data(a.va.0), 0);
        assert_eq!(
            hm.free(&rt, a.va.0).unwrap_err().status(),
            Status::InvalidAllocation
        );
    }
}
