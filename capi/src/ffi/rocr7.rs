//! The functions ROCR 7 added that HIP 7.2.4 imports, apart from the copy engines
//! (`ffi::copy`) and sampler v2 (`ffi::image`): logging control, the async scratch limit,
//! AIS file I/O, dma-buf export, and the virtual memory API (`hsa_ext_amd.h` of ROCR 7.2.4).
//! Each checks its arguments in ROCR 7's order (`hsa_ext_amd.cpp`: `IS_OPEN`, `IS_BAD_PTR`,
//! `IS_ZERO`, ...) and calls the runtime service that does the work (`hsa_runtime::vmem`,
//! `hsa_runtime::ais`, the copy engine's SDMA log).
//!
//! | function | here |
//! |---|---|
//! | `hsa_amd_enable_logging` | SDMA flag: each SDMA command the copy engine submits is written to the stream, one line; AQL flag: nothing (this runtime enqueues no internal AQL packets, ROCR's blit kernels); INFO: nothing more than the `log` crate's output |
//! | `hsa_amd_agent_set_async_scratch_limit` | `INVALID_ARGUMENT` for a GPU: this runtime never reclaims scratch asynchronously (ROCR's status when async reclaim is off; `SCRATCH_LIMIT_CURRENT` answers 0 likewise) |
//! | `hsa_amd_ais_file_read`, `_write` | `pread`/`pwrite` through the allocation's host mapping (`hsa_runtime::ais`) |
//! | `hsa_amd_portable_export_dmabuf`, `_v2` | KFD `EXPORT_DMABUF` of the chunk holding the range (`LinuxPlatform::export_dmabuf`); v2's mapping flags change nothing, as in ROCR 7 |
//! | `hsa_amd_portable_close_dmabuf` | `close(2)` of the descriptor |
//! | `hsa_amd_vmem_*` | `hsa_runtime::VirtualMemory` over the platform's `VirtualAddressRanges` (Linux: amdkfd 1.15 and later, the render node's `GEM_VA`); where the platform lacks it, host-only reservations work and the device side answers as ROCR 7 does while `VIRTUAL_MEM_API_SUPPORTED` is false |
#![allow(unsafe_code)]

// A Linux-build module (std): the std prelude, as in a std crate.
#[allow(unused_imports)]
use std::prelude::rust_2021::*;
use std::{eprintln, format};

use std::ffi::c_void;
use std::os::fd::IntoRawFd;

use hsa_core::addr::GpuVa;
use hsa_core::memory::AccessPermission;
use hsa_core::{bail, NodeId, Status};
use hsa_runtime::ais::{self, Direction};

use super::agent::agent_of;
use super::{guard, non_null, HsaStatus};
use crate::state;

/// `HSA_AMD_LOG_FLAG_SDMA`: bit 1 of the 64-bit flag set.
const LOG_FLAG_SDMA: u64 = 1 << 1;

extern "C" {
    fn fwrite(ptr: *const c_void, size: usize, n: usize, stream: *mut c_void) -> usize;
    fn fflush(stream: *mut c_void) -> i32;
}

/// A C `FILE*` the application handed to `hsa_amd_enable_logging` (it keeps it open while
/// logging is on, the header's contract).
struct Stream(*mut c_void);
// SAFETY: C streams lock themselves (`fwrite` is thread-safe in glibc); the pointer is only
// passed to `fwrite`/`fflush`.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

/// `hsa_amd_enable_logging` (ROCR 7): sets the log flags (`uint8_t[8]`, `hsa_amd_log_flag_t`
/// bits) and the stream (`FILE*`; NULL: stderr), replacing earlier ones; flags all 0 turn
/// logging off. What is logged: module docs.
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for a NULL `flags` (ROCR would read through it); `NOT_INITIALIZED`.
///
/// # Safety
/// `flags` is NULL or 8 readable bytes; `file` is NULL or a `FILE*` open while logging is on.
pub unsafe extern "C" fn hsa_amd_enable_logging(flags: *const u8, file: *mut c_void) -> HsaStatus {
    guard("hsa_amd_enable_logging", || {
        non_null(flags, "flags")?;
        let st = state::state()?;
        // SAFETY: non-NULL, 8 bytes per the caller's contract.
        let bits = u64::from_le_bytes(unsafe { flags.cast::<[u8; 8]>().read_unaligned() });
        let sink: Option<hsa_runtime::copy::LogSink> = (bits & LOG_FLAG_SDMA != 0).then(|| {
            let stream = Stream(file);
            let sink: hsa_runtime::copy::LogSink = std::sync::Arc::new(move |line: &str| {
                let s = &stream;
                if s.0.is_null() {
                    eprintln!("{line}");
                } else {
                    let text = format!("{line}\n");
                    // SAFETY: the application's open FILE* (the contract above).
                    unsafe {
                        fwrite(text.as_ptr().cast(), 1, text.len(), s.0);
                        fflush(s.0);
                    }
                }
            });
            sink
        });
        st.services().copy().set_sdma_log(sink);
        Ok(Status::Success)
    })
}

/// `hsa_amd_agent_set_async_scratch_limit` (ROCR 7): this runtime gives each queue its
/// scratch at creation and never reclaims it asynchronously, which is ROCR's state with
/// async reclaim off, and answers as ROCR then does.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_AGENT` for an unknown or CPU agent; `INVALID_ARGUMENT` for a
/// GPU (async scratch reclaim is not enabled).
pub extern "C" fn hsa_amd_agent_set_async_scratch_limit(agent: u64, threshold: usize) -> HsaStatus {
    guard("hsa_amd_agent_set_async_scratch_limit", || {
        let st = state::state()?;
        let a = agent_of(&st, agent).map_err(|e| e.with_status(Status::InvalidAgent))?;
        if !a.is_gpu() {
            bail!(Status::InvalidAgent, "agent {agent:#x} is not a GPU agent");
        }
        bail!(
            Status::InvalidArgument,
            "threshold {threshold}: async scratch reclaim is not enabled on {} (queues keep \
             the scratch they were created with)",
            a.name()
        )
    })
}

/// The AIS calls' common part: the file descriptor of the handle (`hsa_amd_ais_file_handle_t`,
/// 8 bytes, Linux: the `int fd` in its low 4), the transfer, `*size_copied` and `*status`
/// (the last `errno`, 0 when none) written when given.
unsafe fn ais_call(
    handle: u64,
    ptr: *mut c_void,
    size: u64,
    file_offset: i64,
    size_copied: *mut u64,
    status: *mut i32,
    dir: Direction,
) -> Result<Status, hsa_core::Error> {
    let st = state::state()?;
    let fd = handle as u32 as i32;
    // SAFETY: the caller's contract (fd open, no concurrent writer).
    let (n, errno) =
        unsafe { ais::file_io(st.rt(), st.host(), fd, ptr as u64, size, file_offset, dir) }?;
    if !size_copied.is_null() {
        // SAFETY: non-NULL, the caller's uint64_t.
        unsafe { size_copied.write(n) };
    }
    if !status.is_null() {
        // SAFETY: non-NULL, the caller's int32_t.
        unsafe { status.write(errno) };
    }
    Ok(Status::Success)
}

/// `hsa_amd_ais_file_read` (ROCR 7, experimental): reads `size` bytes of the file at
/// `file_offset` into the allocation at `devicePtr` (`hsa_runtime::ais`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for a negative fd or offset, NULL `devicePtr`, size
/// 0, or memory the host cannot reach; `INVALID_ALLOCATION` when `devicePtr` is not in an
/// allocation of this runtime or the range runs past it; `ERROR` when the read fails.
///
/// # Safety
/// `size_copied` and `status` are NULL or writable; the fd stays open for the call.
pub unsafe extern "C" fn hsa_amd_ais_file_read(
    handle: u64,
    device_ptr: *mut c_void,
    size: u64,
    file_offset: i64,
    size_copied: *mut u64,
    status: *mut i32,
) -> HsaStatus {
    guard("hsa_amd_ais_file_read", || {
        // SAFETY: the caller's contract.
        unsafe {
            ais_call(
                handle,
                device_ptr,
                size,
                file_offset,
                size_copied,
                status,
                Direction::Read,
            )
        }
    })
}

/// `hsa_amd_ais_file_write` (ROCR 7, experimental): writes `size` bytes of the allocation at
/// `devicePtr` to the file at `file_offset`.
///
/// # Errors (as status)
/// As [`hsa_amd_ais_file_read`] (`ERROR` when the write fails).
///
/// # Safety
/// As [`hsa_amd_ais_file_read`].
pub unsafe extern "C" fn hsa_amd_ais_file_write(
    handle: u64,
    device_ptr: *mut c_void,
    size: u64,
    file_offset: i64,
    size_copied: *mut u64,
    status: *mut i32,
) -> HsaStatus {
    guard("hsa_amd_ais_file_write", || {
        // SAFETY: the caller's contract.
        unsafe {
            ais_call(
                handle,
                device_ptr,
                size,
                file_offset,
                size_copied,
                status,
                Direction::Write,
            )
        }
    })
}

/// `hsa_amd_portable_export_dmabuf` (ROCR 7): a new dma-buf file descriptor over the GPU
/// memory holding `size` bytes at `ptr`, and `ptr`'s offset in it
/// (`LinuxPlatform::export_dmabuf`); the caller closes it.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `ptr`, `dmabuf` or `offset`, or size 0;
/// `INVALID_ALLOCATION` when the range is not inside one allocation of this runtime;
/// `INVALID_AGENT` when the allocation is a CPU agent's (ROCR 7 exports GPU memory only);
/// `ERROR` when KFD refuses the export. `*dmabuf` and `*offset` are left alone on failure.
///
/// # Safety
/// `dmabuf` and `offset` are NULL or writable.
pub unsafe extern "C" fn hsa_amd_portable_export_dmabuf(
    ptr: *const c_void,
    size: usize,
    dmabuf: *mut i32,
    offset: *mut u64,
) -> HsaStatus {
    // SAFETY: the caller's contract, passed on.
    unsafe { export_dmabuf("hsa_amd_portable_export_dmabuf", ptr, size, dmabuf, offset) }
}

/// `hsa_amd_portable_export_dmabuf_v2` (ROCR 7): [`hsa_amd_portable_export_dmabuf`] with
/// `flags`, an `hsa_amd_dma_buf_mapping_type_t`. `HSA_AMD_DMABUF_MAPPING_TYPE_PCIE` asks that
/// an importer map the memory over PCIe; ROCR 7 refuses it (`HSA_STATUS_ERROR_NOT_SUPPORTED`)
/// only for a GPU without a link from the first CPU, and every agent here has one (amdkfd's
/// `io_links`), so, as ROCR 7 does, the flags do not change the export itself.
///
/// # Errors (as status)
/// Those of [`hsa_amd_portable_export_dmabuf`].
///
/// # Safety
/// As [`hsa_amd_portable_export_dmabuf`].
pub unsafe extern "C" fn hsa_amd_portable_export_dmabuf_v2(
    ptr: *const c_void,
    size: usize,
    dmabuf: *mut i32,
    offset: *mut u64,
    flags: u64,
) -> HsaStatus {
    let _ = flags;
    // SAFETY: the caller's contract, passed on.
    unsafe {
        export_dmabuf(
            "hsa_amd_portable_export_dmabuf_v2",
            ptr,
            size,
            dmabuf,
            offset,
        )
    }
}

/// `hsa_amd_portable_close_dmabuf` (ROCR 7): closes a dma-buf file descriptor that
/// [`hsa_amd_portable_export_dmabuf`] returned (`close(2)`, as ROCR's `Runtime::DmaBufClose`).
///
/// # Errors (as status)
/// `RESOURCE_FREE` when `close` fails (a descriptor that is not open, -1), as ROCR 7. Like
/// ROCR 7, it does not ask whether the runtime is initialised.
pub extern "C" fn hsa_amd_portable_close_dmabuf(dmabuf: i32) -> HsaStatus {
    extern "C" {
        /// The C library's `close(2)`.
        fn close(fd: i32) -> i32;
    }
    guard("hsa_amd_portable_close_dmabuf", || {
        // SAFETY: close(2) takes any int; a descriptor that is not open is EBADF. Closing a
        // descriptor the caller owns is the call's purpose.
        if unsafe { close(dmabuf) } != 0 {
            bail!(
                Status::ResourceFree,
                "close({dmabuf}): {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Status::Success)
    })
}

/// The body of both exports: checks in ROCR 7's order, then KFD's `EXPORT_DMABUF`.
///
/// # Safety
/// As [`hsa_amd_portable_export_dmabuf`].
unsafe fn export_dmabuf(
    function: &str,
    ptr: *const c_void,
    size: usize,
    dmabuf: *mut i32,
    offset: *mut u64,
) -> HsaStatus {
    guard(function, || {
        let st = state::state()?;
        non_null(ptr, "ptr")?;
        non_null(dmabuf, "dmabuf")?;
        non_null(offset, "offset")?;
        if size == 0 {
            bail!(Status::InvalidArgument, "size is 0");
        }
        let va = ptr as u64;
        let info = st.rt().pointer_info(GpuVa(va)).map_err(|_| {
            hsa_core::error!(
                Status::InvalidAllocation,
                "{va:#x} is not in an allocation of this runtime"
            )
        })?;
        let a = info.allocation;
        if (va - a.va.0)
            .checked_add(size as u64)
            .is_none_or(|e| e > a.size_bytes)
        {
            bail!(
                Status::InvalidAllocation,
                "{size} bytes at {va:#x} run past the allocation at {:#x} ({} bytes)",
                a.va.0,
                a.size_bytes
            );
        }
        let owner_gpu = st
            .rt()
            .agents()
            .iter()
            .any(|ag| ag.node() == info.pool_owner.0 && ag.is_gpu());
        if !owner_gpu {
            bail!(
                Status::InvalidAgent,
                "the allocation at {:#x} is system memory of node {}: only GPU memory is exported",
                a.va.0,
                info.pool_owner.0
            );
        }
        let (fd, off) = st.platform_ref().export_dmabuf(va, size as u64)?;
        // SAFETY: non-NULL, the caller's int and uint64_t.
        unsafe {
            dmabuf.write(fd.into_raw_fd());
            offset.write(off);
        }
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_address_reserve` (ROCR 7): as [`hsa_amd_vmem_address_reserve_align`] with
/// the page alignment, except that with `HSA_AMD_VMEM_ADDRESS_NO_REGISTER` the support
/// check is skipped, as ROCR 7 skips it.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for size 0, NULL `va`, or device address space
/// while the virtual memory API is not supported; `OUT_OF_RESOURCES` when no range is found.
///
/// # Safety
/// `va` is NULL or a writable `void*`.
pub unsafe extern "C" fn hsa_amd_vmem_address_reserve(
    va: *mut *mut c_void,
    size: usize,
    address: u64,
    flags: u64,
) -> HsaStatus {
    guard("hsa_amd_vmem_address_reserve", || {
        let st = state::state()?;
        if size == 0 {
            bail!(Status::InvalidArgument, "size is 0");
        }
        non_null(va, "va")?;
        let at = st
            .services()
            .vmem()
            .reserve(size as u64, address, 0, flags)?;
        // SAFETY: non-NULL, the caller's void*.
        unsafe { va.write(at as *mut c_void) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_address_reserve_align` (ROCR 7): reserves `size` bytes of address space
/// aligned to `alignment` (0: the page), at `address` when free (`hsa_runtime::VirtualMemory::
/// reserve`: host-only with `HSA_AMD_VMEM_ADDRESS_NO_REGISTER`).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for size 0 or NULL `va`, and while
/// `VIRTUAL_MEM_API_SUPPORTED` is false (ROCR 7 checks support here whatever the flags), or a
/// bad alignment; `OUT_OF_RESOURCES`.
///
/// # Safety
/// `va` is NULL or a writable `void*`.
pub unsafe extern "C" fn hsa_amd_vmem_address_reserve_align(
    va: *mut *mut c_void,
    size: usize,
    address: u64,
    alignment: u64,
    flags: u64,
) -> HsaStatus {
    guard("hsa_amd_vmem_address_reserve_align", || {
        let st = state::state()?;
        if size == 0 {
            bail!(Status::InvalidArgument, "size is 0");
        }
        let vmem = st.services().vmem();
        if !vmem.supported() {
            bail!(
                Status::InvalidArgument,
                "the virtual memory API is not supported on this platform"
            );
        }
        non_null(va, "va")?;
        let at = vmem.reserve(size as u64, address, alignment, flags)?;
        // SAFETY: non-NULL, the caller's void*.
        unsafe { va.write(at as *mut c_void) };
        Ok(Status::Success)
    })
}

/// The checks ROCR 7 makes first on a `(va, size)` range argument: `INVALID_ARGUMENT` for a
/// NULL `va` (naming it) or a size of 0 bytes.
fn va_range(va: *mut c_void, size: usize) -> Result<(), hsa_core::Error> {
    non_null(va, "va")?;
    if size == 0 {
        bail!(Status::InvalidArgument, "size is 0");
    }
    Ok(())
}

/// `hsa_amd_vmem_address_free` (ROCR 7).
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `va`, size 0, or a size other than the
/// reserved one; `INVALID_ALLOCATION` when no reservation starts at `va`; `RESOURCE_FREE`
/// while mappings remain in it; `ERROR` when the system refuses.
pub extern "C" fn hsa_amd_vmem_address_free(va: *mut c_void, size: usize) -> HsaStatus {
    guard("hsa_amd_vmem_address_free", || {
        let st = state::state()?;
        va_range(va, size)?;
        st.services().vmem().free(va as u64, size as u64)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_handle_create` (ROCR 7): `size` bytes of physical memory from `pool`, of
/// type `type_` (`MEMORY_TYPE_NONE` 0 or `MEMORY_TYPE_PINNED` 1), in `*memory_handle`
/// (`hsa_runtime::VirtualMemory::create_handle`); `flags` is unused, as in ROCR 7.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for size 0, while `VIRTUAL_MEM_API_SUPPORTED` is
/// false (ROCR 7's support check comes before the pool and type checks), for another type, an
/// unknown pool, a size that is not whole pages, or (ours: ROCR 7 writes through it) a NULL
/// `memory_handle`; `OUT_OF_RESOURCES` when the memory cannot be allocated.
///
/// # Safety
/// `memory_handle` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_handle_create(
    pool: u64,
    size: usize,
    type_: u32,
    flags: u64,
    memory_handle: *mut u64,
) -> HsaStatus {
    let _ = flags;
    guard("hsa_amd_vmem_handle_create", || {
        let st = state::state()?;
        non_null(memory_handle, "memory_handle")?;
        let h = st
            .services()
            .vmem()
            .create_handle(pool, size as u64, type_)?;
        // SAFETY: non-NULL, the caller's hsa_amd_vmem_alloc_handle_t.
        unsafe { memory_handle.write(h) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_handle_release` (ROCR 7): one reference less; the memory goes with the last
/// reference, or with the last mapping when mappings remain.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ALLOCATION` for an unknown handle.
pub extern "C" fn hsa_amd_vmem_handle_release(memory_handle: u64) -> HsaStatus {
    guard("hsa_amd_vmem_handle_release", || {
        let st = state::state()?;
        st.services().vmem().release_handle(memory_handle)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_map` (ROCR 7): `size` bytes of `memory_handle` from byte `in_offset` at
/// `va`, inside one reservation; no agent has access until `hsa_amd_vmem_set_access`.
/// `flags` is unused, as in ROCR 7.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `va`, size 0, a range outside one
/// reservation or meeting a mapping, an unknown handle, or a size or offset the handle does
/// not have; `INVALID_AGENT` for memory of a CPU pool (ROCR 7 maps GPU memory only);
/// `ERROR` when the driver refuses.
pub extern "C" fn hsa_amd_vmem_map(
    va: *mut c_void,
    size: usize,
    in_offset: usize,
    memory_handle: u64,
    flags: u64,
) -> HsaStatus {
    let _ = flags;
    guard("hsa_amd_vmem_map", || {
        let st = state::state()?;
        va_range(va, size)?;
        st.services()
            .vmem()
            .map(va as u64, size as u64, in_offset as u64, memory_handle)?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_unmap` (ROCR 7): removes the mappings that tile `[va, va + size)`, with
/// every agent's access.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `va` or size 0; `INVALID_ALLOCATION` when
/// the range is not a run of whole mappings; `ERROR` when the driver refuses.
pub extern "C" fn hsa_amd_vmem_unmap(va: *mut c_void, size: usize) -> HsaStatus {
    guard("hsa_amd_vmem_unmap", || {
        let st = state::state()?;
        va_range(va, size)?;
        // SAFETY: the application no longer uses the range (hsa_amd_vmem_unmap's contract).
        unsafe { st.services().vmem().unmap(va as u64, size as u64) }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_set_access` (ROCR 7): gives each agent of `desc` its permission to every
/// mapping that tiles `[va, va + size)` (`HSA_ACCESS_PERMISSION_NONE` removes the agent's
/// access); a CPU agent's access maps the memory for the host at `va`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `va` or `desc`, size or `desc_cnt` 0, a
/// permission outside 0..=3 (ours: ROCR 7 passes it on unchecked), or a range outside one
/// reservation; `INVALID_AGENT` for an unknown agent in `desc` (all checked first);
/// `INVALID_ALLOCATION` when mappings do not tile the range; `ERROR` when the driver refuses.
///
/// # Safety
/// `desc` is NULL or holds `desc_cnt` entries.
pub unsafe extern "C" fn hsa_amd_vmem_set_access(
    va: *mut c_void,
    size: usize,
    desc: *const crate::abi::HsaAmdMemoryAccessDesc,
    desc_cnt: usize,
) -> HsaStatus {
    guard("hsa_amd_vmem_set_access", || {
        let st = state::state()?;
        va_range(va, size)?;
        non_null(desc, "desc")?;
        if desc_cnt == 0 {
            bail!(Status::InvalidArgument, "desc_cnt is 0");
        }
        // SAFETY: non-NULL, `desc_cnt` entries per the caller's contract.
        let descs = unsafe { std::slice::from_raw_parts(desc, desc_cnt) };
        let mut access = Vec::with_capacity(descs.len());
        for d in descs {
            let a =
                agent_of(&st, d.agent_handle).map_err(|e| e.with_status(Status::InvalidAgent))?;
            access.push((NodeId(a.node()), d.permissions));
        }
        let access = access
            .into_iter()
            .map(|(node, raw)| match raw {
                // HSA_ACCESS_PERMISSION_NONE (ROCm 7's hsa.h): no access.
                0 => Ok((node, None)),
                _ => AccessPermission::from_raw(raw).map(|p| (node, Some(p))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: where the application removes or changes an agent's access, that agent no
        // longer uses the range (hsa_amd_vmem_set_access's contract).
        unsafe {
            st.services()
                .vmem()
                .set_access(va as u64, size as u64, &access)
        }?;
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_get_access` (ROCR 7): `*perms` is `HSA_ACCESS_PERMISSION_NONE` (0) unless a
/// mapping's access was set for the agent.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `va` or `perms`; `INVALID_ALLOCATION` when
/// nothing is mapped at `va`; `INVALID_AGENT` for an unknown or CPU agent.
///
/// # Safety
/// `perms` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_get_access(
    va: *mut c_void,
    perms: *mut u32,
    agent_handle: u64,
) -> HsaStatus {
    guard("hsa_amd_vmem_get_access", || {
        let st = state::state()?;
        non_null(va, "va")?;
        non_null(perms, "perms")?;
        // SAFETY: non-NULL, the caller's hsa_access_permission_t.
        unsafe { perms.write(0) };
        let vmem = st.services().vmem();
        if !vmem.is_mapped(va as u64) {
            bail!(
                Status::InvalidAllocation,
                "get_access: nothing is mapped at {va:p}"
            );
        }
        let a = agent_of(&st, agent_handle).map_err(|e| e.with_status(Status::InvalidAgent))?;
        if !a.is_gpu() {
            bail!(Status::InvalidAgent, "agent {agent_handle:#x} is not a GPU");
        }
        let p = vmem.get_access(va as u64, NodeId(a.node()))?;
        // SAFETY: as above.
        unsafe { perms.write(p.map_or(0, |p| p as u32)) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_export_shareable_handle` (ROCR 7): a new dma-buf descriptor over the
/// handle's memory in `*dmabuf_fd` (the caller owns it), -1 unless it succeeds; `flags` is
/// unused, as in ROCR 7.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `dmabuf_fd`; `INVALID_ALLOCATION` for an
/// unknown handle; `OUT_OF_RESOURCES` when the driver refuses the export.
///
/// # Safety
/// `dmabuf_fd` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_export_shareable_handle(
    dmabuf_fd: *mut i32,
    handle: u64,
    flags: u64,
) -> HsaStatus {
    let _ = flags;
    guard("hsa_amd_vmem_export_shareable_handle", || {
        let st = state::state()?;
        non_null(dmabuf_fd, "dmabuf_fd")?;
        // SAFETY: non-NULL, the caller's int.
        unsafe { dmabuf_fd.write(-1) };
        let fd = st.services().vmem().export(handle)?;
        // SAFETY: as above.
        unsafe { dmabuf_fd.write(fd) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_import_shareable_handle` (ROCR 7): a new handle in `*handle` over the
/// memory of dma-buf `dmabuf_fd` (the caller keeps the descriptor).
///
/// # Errors (as status)
/// `INVALID_ARGUMENT` for NULL `handle` or a negative fd (checked before `NOT_INITIALIZED`,
/// as ROCR 7 has no `IS_OPEN` here); `INCOMPATIBLE_ARGUMENTS` while the virtual memory API
/// is not supported or for a descriptor that is no dma-buf of this system's GPUs;
/// `INVALID_ALLOCATION` when the owning GPU has no pool for it
/// (`hsa_runtime::VirtualMemory::import`).
///
/// # Safety
/// `handle` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_import_shareable_handle(
    dmabuf_fd: i32,
    handle: *mut u64,
) -> HsaStatus {
    guard("hsa_amd_vmem_import_shareable_handle", || {
        non_null(handle, "handle")?;
        if dmabuf_fd < 0 {
            bail!(Status::InvalidArgument, "dmabuf_fd {dmabuf_fd} is negative");
        }
        let st = state::state()?;
        let h = st.services().vmem().import(dmabuf_fd)?;
        // SAFETY: non-NULL, the caller's handle.
        unsafe { handle.write(h) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_retain_alloc_handle` (ROCR 7): the handle mapped at `addr`, with one more
/// reference.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `addr` or `memory_handle`;
/// `INVALID_ALLOCATION` when no mapping starts at `addr`.
///
/// # Safety
/// `memory_handle` is NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_retain_alloc_handle(
    memory_handle: *mut u64,
    addr: *mut c_void,
) -> HsaStatus {
    guard("hsa_amd_vmem_retain_alloc_handle", || {
        let st = state::state()?;
        non_null(addr, "addr")?;
        non_null(memory_handle, "memory_handle")?;
        let h = st.services().vmem().retain(addr as u64)?;
        // SAFETY: non-NULL, the caller's handle.
        unsafe { memory_handle.write(h) };
        Ok(Status::Success)
    })
}

/// `hsa_amd_vmem_get_alloc_properties_from_handle` (ROCR 7): the pool the handle's memory
/// came from in `*pool` and its type (`MEMORY_TYPE_NONE` 0, `_PINNED` 1) in `*type_`.
///
/// # Errors (as status)
/// `NOT_INITIALIZED`; `INVALID_ARGUMENT` for NULL `pool` or `type_`; `INVALID_ALLOCATION`
/// for an unknown handle.
///
/// # Safety
/// `pool` and `type_` are NULL or writable.
pub unsafe extern "C" fn hsa_amd_vmem_get_alloc_properties_from_handle(
    memory_handle: u64,
    pool: *mut u64,
    type_: *mut u32,
) -> HsaStatus {
    guard("hsa_amd_vmem_get_alloc_properties_from_handle", || {
        let st = state::state()?;
        non_null(pool, "pool")?;
        non_null(type_, "type")?;
        let (p, t) = st.services().vmem().properties(memory_handle)?;
        // SAFETY: non-NULL, the caller's hsa_amd_memory_pool_t and hsa_amd_memory_type_t.
        unsafe {
            pool.write(p);
            type_.write(t);
        }
        Ok(Status::Success)
    })
}

export!(
    hsa_amd_enable_logging,
    hsa_amd_agent_set_async_scratch_limit,
    hsa_amd_ais_file_read,
    hsa_amd_ais_file_write,
    hsa_amd_portable_export_dmabuf,
    hsa_amd_portable_export_dmabuf_v2,
    hsa_amd_portable_close_dmabuf,
    hsa_amd_vmem_address_reserve,
    hsa_amd_vmem_address_reserve_align,
    hsa_amd_vmem_address_free,
    hsa_amd_vmem_handle_create,
    hsa_amd_vmem_handle_release,
    hsa_amd_vmem_map,
    hsa_amd_vmem_unmap,
    hsa_amd_vmem_set_access,
    hsa_amd_vmem_get_access,
    hsa_amd_vmem_export_shareable_handle,
    hsa_amd_vmem_import_shareable_handle,
    hsa_amd_vmem_retain_alloc_handle,
    hsa_amd_vmem_get_alloc_properties_from_handle,
);
