//! The process-wide ioctls of the emulated amdkfd: the interface version, the apertures, memory
//! policy, scratch, ACQUIRE_VM, the trap handler, the tile configuration, the XNACK mode and
//! RUNTIME_ENABLE (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`, `kfd_flat_memory.c`,
//! `kfd_process.c`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustix::io::Errno;
use zerocopy::IntoBytes;

use hsa_linux::kfd::abi::*;

use super::{debug, lock, Device};

/// Entries of amdgpu's tile-mode array (`adev->gfx.config.tile_mode_array`), which
/// `AMDKFD_IOC_GET_TILE_CONFIG` returns at most.
pub const TILE_MODE_ENTRIES: u32 = 32;
/// Entries of amdgpu's macro-tile-mode array (`adev->gfx.config.macrotile_mode_array`).
pub const MACRO_TILE_MODE_ENTRIES: u32 = 16;

/// The `KFD_IOCTL_MINOR_VERSION` this device answers `GET_VERSION` with (major
/// [`KFD_IOCTL_MAJOR_VERSION`], 1): the interface whose promises it keeps. Past 1.11
/// (`kfd_ioctl.h`'s history; what clients do with each, see `docs/kfd-interface-version.md`):
/// - 1.12, `EXPORT_DMABUF`: served (`device::dmabuf`).
/// - 1.13, the debugger API: `RUNTIME_ENABLE` as amdkfd runs it (`process::runtime_enable`,
///   with `EC_PROCESS_RUNTIME` to a debugger when the debug trap is on); `DBG_TRAP` as amdkfd
///   answers it under the hardware scheduler, as the rest of the model answers
///   (`device::debug`): every operation, the waves' debug state as for GPUs whose waves
///   cannot be halted, trapped or watched.
/// - 1.14, event age: `WAIT_EVENTS` tracks `last_event_age` (`device::events`).
/// - 1.15, `DRM_IOCTL_AMDGPU_GEM_VA` manages mappings in the compute VM: the render node's
///   GEM objects, PRIME import/export, `GEM_VA` and `GEM_MMAP` are served (`device::gem`),
///   and a VRAM or GTT buffer object may have no GPU address (`va_addr` 0: what libhsakmt
///   allocates behind ROCR 7's virtual-memory API, which ROCR enables from 1.15).
/// - 1.16, `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT`: taken on any allocation (the
///   emulated memory of a buffer object is one piece).
/// - 1.17, `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`: the 96-byte CREATE_QUEUE argument with
///   `sdma_engine_id`, a queue slot of that engine (`queue_manager::create_queue_ioctl`,
///   `sdma::SdmaTarget`), and each IO link's `recommended_sdma_engine_id_mask`
///   (`profile::fill_recommended_sdma_engines`), which ROCR 7 reads with it.
pub const EMULATED_KFD_MINOR_VERSION: u32 = 17;

/// `AMDKFD_IOC_DBG_TRAP`: `_IOWR('K', 0x26, struct kfd_ioctl_dbg_trap_args)`, 32 bytes
/// (`kfd_ioctl.h` 1.13+; gcc over the 1.17 header gives 0xc0204b26).
pub const AMDKFD_IOC_DBG_TRAP: u32 = ioc(IOC_READ | IOC_WRITE, AMDKFD_IOCTL_BASE, 0x26, 32);

/// `kfd_ioctl_dbg_trap_args`: `pid`, `op` and a 24-byte union of the operations' arguments,
/// read and written as each operation's struct with `view` and `set_view` (`device::debug`:
/// `DbgTrapEnableArgs` and the others).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    zerocopy::FromBytes,
    IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(C)]
pub(crate) struct DbgTrapArgs {
    /// To KFD: the process to debug.
    pub(crate) pid: u32,
    /// To KFD: `KFD_IOC_DBG_TRAP_*`.
    pub(crate) op: u32,
    /// The operation's arguments.
    pub(crate) data: [u64; 3],
}

const _: () = assert!(size_of::<DbgTrapArgs>() == 32);

/// `GET_VERSION`: the interface version this device models ([`KFD_IOCTL_MAJOR_VERSION`],
/// [`EMULATED_KFD_MINOR_VERSION`]).
pub(crate) fn get_version(_device: &Arc<Device>, a: &mut GetVersionArgs) -> Result<(), Errno> {
    a.major_version = KFD_IOCTL_MAJOR_VERSION;
    a.minor_version = EMULATED_KFD_MINOR_VERSION;
    Ok(())
}

/// `SET_MEMORY_POLICY`: `EINVAL` for an unknown GPU or a policy that is neither coherent nor
/// non-coherent; the emulated device's memory is coherent whatever the policy.
pub(crate) fn set_memory_policy(
    device: &Arc<Device>,
    a: &mut SetMemoryPolicyArgs,
) -> Result<(), Errno> {
    device.gpu_by_id(a.gpu_id)?;
    let ok = |p| p == KFD_IOC_CACHE_POLICY_COHERENT || p == KFD_IOC_CACHE_POLICY_NONCOHERENT;
    if !ok(a.default_policy) || !ok(a.alternate_policy) {
        return Err(Errno::INVAL);
    }
    Ok(())
}

/// `SET_SCRATCH_BACKING_VA`: `EINVAL` for an unknown GPU; the address is not used (the
/// interpreter's scratch is its own memory).
pub(crate) fn set_scratch_backing_va(
    device: &Arc<Device>,
    a: &mut SetScratchBackingVaArgs,
) -> Result<(), Errno> {
    device.gpu_by_id(a.gpu_id).map(|_| ())
}

/// `ACQUIRE_VM`: `EINVAL` for an unknown GPU. The emulated device does not require it before
/// allocating (the module docs' emulation limits).
pub(crate) fn acquire_vm(device: &Arc<Device>, a: &mut AcquireVmArgs) -> Result<(), Errno> {
    device.gpu_by_id(a.gpu_id).map(|_| ())
}

/// `kfd_ioctl_set_trap_handler`: records the trap handler (TBA, TMA) of the GPU
/// ([`EmulatedKfd::trap_handler`](super::EmulatedKfd::trap_handler)); `EINVAL` for a GPU the
/// process has no data for.
pub(crate) fn set_trap_handler(
    device: &Arc<Device>,
    a: &mut SetTrapHandlerArgs,
) -> Result<(), Errno> {
    device.gpu_by_id(a.gpu_id)?;
    lock(&device.trap_handlers).insert(a.gpu_id, (a.tba_addr, a.tma_addr));
    Ok(())
}

/// `kfd_ioctl_get_tile_config`: the GPU's tiling configuration as amdgpu keeps it
/// (`amdgpu_amdkfd_get_tile_config`). A gfx9 and later GPU programs no tile-mode tables
/// (amdgpu leaves both arrays zero) and no `MC_ARB_RAMCFG` (banks and ranks 0);
/// `GB_ADDR_CONFIG` is the value amdgpu composes for the GPU
/// ([`super::profile::gb_addr_config`]), the one the interpreter addresses swizzled images
/// with. The arrays are written up to the caller's count, capped at
/// amdgpu's ([`TILE_MODE_ENTRIES`], [`MACRO_TILE_MODE_ENTRIES`]), and the counts come
/// back as written. `EINVAL` for an unknown GPU; `EFAULT` (counts 0) when an array is
/// not mapped.
pub(crate) fn get_tile_config(
    device: &Arc<Device>,
    a: &mut GetTileConfigArgs,
) -> Result<(), Errno> {
    a.gb_addr_config = device.gpu_by_id(a.gpu_id)?.gb_addr_config;
    a.num_banks = 0;
    a.num_ranks = 0;
    a.num_tile_configs = a.num_tile_configs.min(TILE_MODE_ENTRIES);
    a.num_macro_tile_configs = a.num_macro_tile_configs.min(MACRO_TILE_MODE_ENTRIES);
    let zeros = [0u8; 4 * TILE_MODE_ENTRIES as usize];
    let tiles = 4 * a.num_tile_configs as usize;
    if let Err(e) = device.user.write(a.tile_config_ptr, &zeros[..tiles]) {
        a.num_tile_configs = 0;
        return Err(e);
    }
    let macros = 4 * a.num_macro_tile_configs as usize;
    if let Err(e) = device.user.write(a.macro_tile_config_ptr, &zeros[..macros]) {
        a.num_macro_tile_configs = 0;
        return Err(e);
    }
    Ok(())
}

/// `GET_PROCESS_APERTURES_NEW`: with `num_of_nodes` 0 how many entries there are (one per
/// GPU); otherwise the apertures of the first `num_of_nodes` GPUs written to the user's
/// array and the count written: each GPU's LDS and scratch aperture from the process's
/// `SH_MEM_BASES` for it (the values the interpreter addresses FLAT memory with), and the
/// GPUVM range. `EFAULT` when the array is not mapped.
pub(crate) fn get_process_apertures_new(
    device: &Arc<Device>,
    a: &mut GetProcessAperturesNewArgs,
) -> Result<(), Errno> {
    let gpus = &device.gpus;
    if a.num_of_nodes == 0 {
        // As the kernel: report how many entries are needed.
        a.num_of_nodes = gpus.len() as u32;
        return Ok(());
    }
    let n = (a.num_of_nodes as usize).min(gpus.len());
    let entries: Vec<ProcessDeviceApertures> = gpus[..n].iter().map(apertures_of).collect();
    device.user.write(
        a.kfd_process_device_apertures_ptr,
        entries.as_slice().as_bytes(),
    )?;
    a.num_of_nodes = n as u32;
    Ok(())
}

/// One GPU's entry of `GET_PROCESS_APERTURES(_NEW)`: its LDS and scratch apertures and the
/// process's GPUVM range on it.
pub(super) fn apertures_of(g: &super::Gpu) -> ProcessDeviceApertures {
    ProcessDeviceApertures {
        lds_base: g.apertures.shared_base(),
        lds_limit: g.apertures.shared_limit(),
        scratch_base: g.apertures.private_base(),
        scratch_limit: g.apertures.private_limit(),
        gpuvm_base: 0x20_0000,
        gpuvm_limit: 0x7fff_ffff_ffff,
        gpu_id: g.gpu_id,
        pad: 0,
    }
}

/// `GET_PROCESS_APERTURES`, the fixed-size query `GET_PROCESS_APERTURES_NEW` replaced, as
/// `kfd_ioctl_get_process_apertures` still answers it: the entries of the first
/// [`NUM_OF_SUPPORTED_GPUS`] GPUs (the rest are left out) and their count. Never fails.
pub(crate) fn get_process_apertures(
    device: &Arc<Device>,
    a: &mut GetProcessAperturesArgs,
) -> Result<(), Errno> {
    let n = device.gpus.len().min(NUM_OF_SUPPORTED_GPUS);
    for (slot, g) in a.process_apertures.iter_mut().zip(&device.gpus) {
        *slot = apertures_of(g);
    }
    a.num_of_nodes = n as u32;
    Ok(())
}

/// The first debugger interface's four requests (`DBG_REGISTER`, `DBG_UNREGISTER`,
/// `DBG_ADDRESS_WATCH`, `DBG_WAVE_CONTROL`, all `_DEPRECATED`): amdkfd keeps their numbers
/// and answers `EPERM` since Linux 6.2 (`kfd_ioctl_dbg_register` and the others); the
/// debugger interface is `DBG_TRAP`.
pub(crate) fn dbg_deprecated<T>(_device: &Arc<Device>, _a: &mut T) -> Result<(), Errno> {
    Err(Errno::PERM)
}

/// `CRIU_OP`, reached only by a process that may checkpoint and restore, which the emulated
/// device never lets through ([`chardev::ioctl`](super::chardev) answers `EACCES` first, as
/// amdkfd answers a process without `CAP_CHECKPOINT_RESTORE` or `CAP_SYS_ADMIN`): `EACCES`.
pub(crate) fn criu_op(_device: &Arc<Device>, _a: &mut CriuArgs) -> Result<(), Errno> {
    Err(Errno::ACCESS)
}

/// `SET_XNACK_MODE`: a negative value queries; 0 or 1 sets the process's mode, `EBUSY` when
/// it would change while the process has queues (amdkfd refuses to switch a process with
/// queues). The mode comes back in the argument.
pub(crate) fn set_xnack_mode(device: &Arc<Device>, a: &mut SetXnackModeArgs) -> Result<(), Errno> {
    if a.xnack_enabled >= 0 {
        let want = i32::from(a.xnack_enabled != 0);
        if want != device.xnack.load(Ordering::SeqCst) && !lock(&device.queues).is_empty() {
            return Err(Errno::BUSY);
        }
        device.xnack.store(want, Ordering::SeqCst);
    }
    a.xnack_enabled = device.xnack.load(Ordering::SeqCst);
    Ok(())
}

/// `RUNTIME_ENABLE` as `kfd_ioctl_runtime_enable` runs it (`runtime_enable`,
/// `runtime_disable`): with `KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK`, `EBUSY` when the runtime
/// is already enabled and `EEXIST` when the process has queues, else the runtime is enabled
/// with the argument's `r_debug` and whether it asks for trap temporaries (TTMP setup: the
/// emulated GPU always sets them up for every wave), which `DBG_TRAP`'s
/// `kfd_runtime_info` reports; without it, the runtime is disabled (`r_debug` and TTMP setup
/// cleared; always succeeds). When the debug trap is on ([`super::debug`]), the debugger is
/// told `EC_PROCESS_RUNTIME` and the call waits until it answers with `DBG_TRAP`'s
/// `SEND_RUNTIME_EVENT` of `EC_PROCESS_RUNTIME` (an uninterruptible wait here). The argument
/// comes back as given (amdkfd writes none of it, `capabilities_mask` included).
pub(crate) fn runtime_enable(device: &Arc<Device>, a: &mut RuntimeEnableArgs) -> Result<(), Errno> {
    // Under the queue table's lock: no queue is created between the check and the enable.
    let queues = lock(&device.queues);
    let mut st = lock(&device.debug.state);
    let was_enabled = st.runtime.runtime_state == debug::DEBUG_RUNTIME_STATE_ENABLED;
    if a.mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK == 0 {
        st.runtime = debug::KfdRuntimeInfo::default();
        device.runtime_enabled.store(false, Ordering::SeqCst);
    } else {
        if st.runtime.runtime_state != debug::DEBUG_RUNTIME_STATE_DISABLED {
            return Err(Errno::BUSY);
        }
        if !queues.is_empty() {
            return Err(Errno::EXIST);
        }
        st.runtime = debug::KfdRuntimeInfo {
            r_debug: a.r_debug,
            runtime_state: debug::DEBUG_RUNTIME_STATE_ENABLED,
            ttmp_setup: u32::from(a.mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK != 0),
        };
        device.runtime_enabled.store(true, Ordering::SeqCst);
    }
    let wait = debug::runtime_changed(&mut st, &queues, was_enabled);
    drop(st);
    drop(queues);
    if wait {
        device.debug.wait_runtime_event();
    }
    Ok(())
}
