//! `AMDKFD_IOC_DBG_TRAP` (0x26), the debugger interface of KFD 1.13+, as amdkfd answers it under
//! the hardware scheduler (`sched_policy` 0 or 1, HWS) for the process that opened the device
//! (Ref: linux 6.x `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c` `kfd_ioctl_set_debug_trap`,
//! `runtime_enable`/`runtime_disable`; `kfd_debug.c`; `kfd_device_queue_manager.c`
//! `suspend_queues`/`resume_queues`/`set_queue_snapshot_entry`;
//! `kfd_process_queue_manager.c` `pqm_get_queue_snapshot`; `include/uapi/linux/kfd_ioctl.h`).
//!
//! [`dbg_trap`] checks what the kernel checks, in its order:
//! 1. the target `pid` ([`target_of`]): this process (its pid or one of its threads' ids) is
//!    the target; a pid with no process, or a process without memory (a kernel thread, a
//!    zombie: `get_task_mm` fails) is `ESRCH`. The emulated device cannot see other
//!    processes' KFD processes — the one approximation —, so it takes any other live process
//!    to have one whose debug trap is off: `EPERM` when it is not ptraced by this process
//!    (every operation but `DISABLE`), `EINVAL` for `DISABLE` and for every operation on one
//!    it ptraces but `ENABLE`, and `ENABLE` on a tracee, which amdkfd would run on that
//!    process's own devices, `ESRCH`;
//! 2. any operation but `ENABLE` while the debug trap is off: `EINVAL`;
//! 3. the operations that program the waves' debug state (`SET_WAVE_LAUNCH_OVERRIDE`,
//!    `SET_WAVE_LAUNCH_MODE`, `SUSPEND_QUEUES`, `RESUME_QUEUES`, `SET/CLEAR_NODE_ADDRESS_WATCH`,
//!    `SET_FLAGS`) while the runtime is not enabled (`RUNTIME_ENABLE`): `EPERM`;
//! 4. the address-watch operations on a GPU the process has no data for: `ENODEV`;
//! 5. then the operation (each [`dbg_trap`] names its answer); an unknown one is `EINVAL`.
//!
//! What the emulated GPU cannot do: its waves cannot be halted, trapped, single-stepped or
//! watched. So no wave-launch trap can be overridden (the supported mask is 0), only the
//! normal launch mode is taken, and the GPUs have no free address-watch slot; a suspended
//! queue's engine takes no further packet, but a dispatch it has taken runs to its end (no
//! context save). Exceptions the debugger sees: `EC_QUEUE_NEW` on every queue created while
//! the debug trap is on, the queue errors the CP stops a queue with
//! ([`Device::report_queue_error`](super::Device::report_queue_error)), GPU memory faults
//! (`EC_DEVICE_MEMORY_VIOLATION`) and `EC_PROCESS_RUNTIME` on `RUNTIME_ENABLE`.
//!
//! Not modelled: `EC_DEVICE_QUEUE_DELETE` and `EC_DEVICE_NEW` are never raised; SUSPEND
//! writes no wave-state header into the queues' context save areas (the CP saved no
//! waves); SUSPEND/RESUME return 0 where amdkfd's ioctl returns the count of queues (the
//! per-queue status bits in the array carry the answer); `RUNTIME_ENABLE`'s wait for the
//! debugger cannot be interrupted by a signal (amdkfd's `EINTR` and retry).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::process::DbgTrapArgs;
use super::{lock, Device};

/// `KFD_IOC_DBG_TRAP_ENABLE` (`enum kfd_dbg_trap_operations`): enable the debug trap.
pub const KFD_IOC_DBG_TRAP_ENABLE: u32 = 0;
/// `KFD_IOC_DBG_TRAP_DISABLE`: disable it.
pub const KFD_IOC_DBG_TRAP_DISABLE: u32 = 1;
/// `KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT`: hand exceptions to the runtime.
pub const KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT: u32 = 2;
/// `KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED`: the exceptions the debugger is told of.
pub const KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED: u32 = 3;
/// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE`: override the waves' trap mask.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE: u32 = 4;
/// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE`: launch waves normal, halted or in debug mode.
pub const KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE: u32 = 5;
/// `KFD_IOC_DBG_TRAP_SUSPEND_QUEUES`.
pub const KFD_IOC_DBG_TRAP_SUSPEND_QUEUES: u32 = 6;
/// `KFD_IOC_DBG_TRAP_RESUME_QUEUES`.
pub const KFD_IOC_DBG_TRAP_RESUME_QUEUES: u32 = 7;
/// `KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH`.
pub const KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH: u32 = 8;
/// `KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH`.
pub const KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH: u32 = 9;
/// `KFD_IOC_DBG_TRAP_SET_FLAGS`.
pub const KFD_IOC_DBG_TRAP_SET_FLAGS: u32 = 10;
/// `KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT`.
pub const KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT: u32 = 11;
/// `KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO`.
pub const KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO: u32 = 12;
/// `KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`.
pub const KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT: u32 = 13;
/// `KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`.
pub const KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT: u32 = 14;

/// Exception code `EC_QUEUE_NEW` (`enum kfd_dbg_trap_exception_code`): a queue was created.
pub const EC_QUEUE_NEW: u32 = 31;
/// Exception code `EC_DEVICE_MEMORY_VIOLATION`: a GPU memory fault.
pub const EC_DEVICE_MEMORY_VIOLATION: u32 = 33;
/// Exception code `EC_PROCESS_RUNTIME`: the runtime was enabled or disabled.
pub const EC_PROCESS_RUNTIME: u32 = 48;

/// `KFD_EC_MASK_QUEUE`: the exception codes that belong to a queue (1-6, 16-23, 30, 31).
pub const KFD_EC_MASK_QUEUE: u64 = 0x3f | (0xff << 15) | (0b11 << 29);
/// `KFD_EC_MASK_DEVICE`: the exception codes that belong to a GPU (32-36).
pub const KFD_EC_MASK_DEVICE: u64 = 0x1f << 31;
/// `KFD_EC_MASK_PROCESS`: the exception codes that belong to the process (48, 49).
pub const KFD_EC_MASK_PROCESS: u64 = 0b11 << 47;

/// `DEBUG_RUNTIME_STATE_DISABLED` (`enum kfd_dbg_runtime_state`).
pub const DEBUG_RUNTIME_STATE_DISABLED: u32 = 0;
/// `DEBUG_RUNTIME_STATE_ENABLED`.
pub const DEBUG_RUNTIME_STATE_ENABLED: u32 = 1;

/// `KFD_DBG_QUEUE_INVALID_MASK`: bit 31 of a queue id in SUSPEND/RESUME's array: not a queue
/// of the process, or one that could not be suspended now (a new queue). (Bit 30,
/// `KFD_DBG_QUEUE_ERROR_MASK`, marks a queue the scheduler failed to preempt or map: the
/// emulated CP never fails to.)
pub const KFD_DBG_QUEUE_INVALID_MASK: u32 = 1 << 31;

/// `KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP` (`enum kfd_dbg_trap_flags`): precise memory operations.
pub const KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP: u32 = 1;
/// `KFD_DBG_TRAP_OVERRIDE_OR` (`enum kfd_dbg_trap_override_mode`).
pub const KFD_DBG_TRAP_OVERRIDE_OR: u32 = 0;
/// `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL` (`enum kfd_dbg_trap_wave_launch_mode`).
pub const KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL: u32 = 0;
/// `HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED` (`kfd_sysfs.h`): a node
/// `capability` bit, which `SET_FLAGS` requires for [`KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP`].
pub const HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED: u32 = 0x0004_0000;

/// `KFD_EC_MASK(ec)` of an exception code 1..=64.
const fn ec_mask(ec: u32) -> u64 {
    1 << (ec - 1)
}

macro_rules! abi_struct {
    ($(#[$m:meta])* $name:ident ($c:literal, $size:literal) { $($(#[$fm:meta])* $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[doc = concat!("\n\n`struct ", $c, "` (`kfd_ioctl.h` 1.13+), ", stringify!($size), " bytes.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
        #[repr(C)]
        pub struct $name { $($(#[$fm])* pub $f: $t,)* }
        const _: () = assert!(size_of::<$name>() == $size);
    };
}

abi_struct! {
    /// `ENABLE`'s arguments.
    DbgTrapEnableArgs("kfd_ioctl_dbg_trap_enable_args", 24) {
        /// To KFD: the exceptions to report ([`KFD_EC_MASK_QUEUE`] and the others' bits).
        exception_mask: u64,
        /// To KFD: where the `kfd_runtime_info` goes.
        rinfo_ptr: u64,
        /// To KFD: bytes at `rinfo_ptr`; from KFD: `sizeof(struct kfd_runtime_info)` (16).
        rinfo_size: u32,
        /// To KFD: the descriptor KFD writes a byte to on each reported exception.
        dbg_fd: u32,
    }
}

abi_struct! {
    /// `SEND_RUNTIME_EVENT`'s arguments.
    DbgTrapSendRuntimeEventArgs("kfd_ioctl_dbg_trap_send_runtime_event_args", 16) {
        /// To KFD: the exceptions to hand to the runtime.
        exception_mask: u64,
        /// To KFD: the GPU (for `EC_DEVICE_MEMORY_VIOLATION`).
        gpu_id: u32,
        /// To KFD: the queue (for queue exceptions).
        queue_id: u32,
    }
}

abi_struct! {
    /// `SET_EXCEPTIONS_ENABLED`'s argument.
    DbgTrapSetExceptionsEnabledArgs("kfd_ioctl_dbg_trap_set_exceptions_enabled_args", 8) {
        /// To KFD: the exceptions to report from now on.
        exception_mask: u64,
    }
}

abi_struct! {
    /// `SET_WAVE_LAUNCH_OVERRIDE`'s arguments.
    DbgTrapSetWaveLaunchOverrideArgs("kfd_ioctl_dbg_trap_set_wave_launch_override_args", 16) {
        /// To KFD: `KFD_DBG_TRAP_OVERRIDE_OR` (0) or `_REPLACE` (1).
        override_mode: u32,
        /// To KFD: the trap bits to set; from KFD: the previous bits (on success).
        enable_mask: u32,
        /// To KFD: the bits to change; from KFD: the bits the GPUs support.
        support_request_mask: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `SET_WAVE_LAUNCH_MODE`'s arguments.
    DbgTrapSetWaveLaunchModeArgs("kfd_ioctl_dbg_trap_set_wave_launch_mode_args", 8) {
        /// To KFD: `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_*` (0 normal, 1 halt, 3 debug).
        launch_mode: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `SUSPEND_QUEUES`'s arguments.
    DbgTrapSuspendQueuesArgs("kfd_ioctl_dbg_trap_suspend_queues_args", 24) {
        /// To KFD: the exceptions to clear on the queues suspended.
        exception_mask: u64,
        /// To KFD: `num_queues` queue ids; from KFD: each with its status bits.
        queue_array_ptr: u64,
        /// To KFD: entries at `queue_array_ptr`.
        num_queues: u32,
        /// To KFD: the preemption grace period (unused: the emulated CP preempts at once).
        grace_period: u32,
    }
}

abi_struct! {
    /// `RESUME_QUEUES`'s arguments.
    DbgTrapResumeQueuesArgs("kfd_ioctl_dbg_trap_resume_queues_args", 16) {
        /// To KFD: `num_queues` queue ids (null: every queue); from KFD: with status bits.
        queue_array_ptr: u64,
        /// To KFD: entries at `queue_array_ptr`.
        num_queues: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `SET_NODE_ADDRESS_WATCH`'s arguments.
    DbgTrapSetNodeAddressWatchArgs("kfd_ioctl_dbg_trap_set_node_address_watch_args", 24) {
        /// To KFD: the address to watch.
        address: u64,
        /// To KFD: `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`.
        mode: u32,
        /// To KFD: the address bits compared.
        mask: u32,
        /// To KFD: the GPU.
        gpu_id: u32,
        /// From KFD: the watch slot.
        id: u32,
    }
}

abi_struct! {
    /// `CLEAR_NODE_ADDRESS_WATCH`'s arguments.
    DbgTrapClearNodeAddressWatchArgs("kfd_ioctl_dbg_trap_clear_node_address_watch_args", 8) {
        /// To KFD: the GPU.
        gpu_id: u32,
        /// To KFD: the watch slot.
        id: u32,
    }
}

abi_struct! {
    /// `SET_FLAGS`'s arguments.
    DbgTrapSetFlagsArgs("kfd_ioctl_dbg_trap_set_flags_args", 8) {
        /// To KFD: `KFD_DBG_TRAP_FLAG_*`; from KFD: the previous flags.
        flags: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `QUERY_DEBUG_EVENT`'s arguments.
    DbgTrapQueryDebugEventArgs("kfd_ioctl_dbg_trap_query_debug_event_args", 16) {
        /// To KFD: the exceptions to clear; from KFD: the pending exceptions of the source.
        exception_mask: u64,
        /// From KFD: the GPU of the source (0 for the process).
        gpu_id: u32,
        /// From KFD: the queue of the source (0 for a GPU or the process).
        queue_id: u32,
    }
}

abi_struct! {
    /// `QUERY_EXCEPTION_INFO`'s arguments.
    DbgTrapQueryExceptionInfoArgs("kfd_ioctl_dbg_trap_query_exception_info_args", 24) {
        /// To KFD: where the exception's data goes.
        info_ptr: u64,
        /// To KFD: bytes at `info_ptr`; from KFD: the data's size.
        info_size: u32,
        /// To KFD: the queue id, gpu id or (process exceptions) anything.
        source_id: u32,
        /// To KFD: the exception code.
        exception_code: u32,
        /// To KFD: non-zero clears the exception.
        clear_exception: u32,
    }
}

abi_struct! {
    /// `GET_QUEUE_SNAPSHOT`'s and `GET_DEVICE_SNAPSHOT`'s arguments (the two structs,
    /// `kfd_ioctl_dbg_trap_queue_snapshot_args` and `_device_snapshot_args`, have one layout).
    DbgTrapSnapshotArgs("kfd_ioctl_dbg_trap_queue_snapshot_args", 24) {
        /// To KFD: the exceptions to clear on each entry written.
        exception_mask: u64,
        /// To KFD: the entries' buffer.
        snapshot_buf_ptr: u64,
        /// To KFD: entries the buffer holds; from KFD: the entries there are.
        num: u32,
        /// To KFD: the caller's entry size, bytes; from KFD: the bytes written per entry.
        entry_size: u32,
    }
}

abi_struct! {
    /// The runtime's state as `ENABLE` and `QUERY_EXCEPTION_INFO` of `EC_PROCESS_RUNTIME`
    /// report it.
    KfdRuntimeInfo("kfd_runtime_info", 16) {
        /// `RUNTIME_ENABLE`'s `r_debug` (the runtime's `r_debug` address).
        r_debug: u64,
        /// `DEBUG_RUNTIME_STATE_*`.
        runtime_state: u32,
        /// Whether `RUNTIME_ENABLE` asked for trap temporaries to be set up.
        ttmp_setup: u32,
    }
}

abi_struct! {
    /// One queue of `GET_QUEUE_SNAPSHOT`.
    KfdQueueSnapshotEntry("kfd_queue_snapshot_entry", 64) {
        /// The queue's pending exceptions (before the request's clear).
        exception_status: u64,
        /// CREATE_QUEUE's `ring_base_address`.
        ring_base_address: u64,
        /// CREATE_QUEUE's `write_pointer_address`.
        write_pointer_address: u64,
        /// CREATE_QUEUE's `read_pointer_address`.
        read_pointer_address: u64,
        /// CREATE_QUEUE's `ctx_save_restore_address`.
        ctx_save_restore_address: u64,
        /// The queue id.
        queue_id: u32,
        /// The GPU.
        gpu_id: u32,
        /// The ring's size, bytes (at least 1024, as CREATE_QUEUE raised it).
        ring_size: u32,
        /// `KFD_IOC_QUEUE_TYPE_*`.
        queue_type: u32,
        /// CREATE_QUEUE's `ctx_save_restore_size`, bytes.
        ctx_save_restore_area_size: u32,
        /// Reserved (0).
        reserved: u32,
    }
}

abi_struct! {
    /// One GPU of `GET_DEVICE_SNAPSHOT`.
    KfdDbgDeviceInfoEntry("kfd_dbg_device_info_entry", 120) {
        /// The GPU's pending exceptions (before the request's clear).
        exception_status: u64,
        /// The process's LDS aperture base on the GPU.
        lds_base: u64,
        /// Its limit.
        lds_limit: u64,
        /// The scratch aperture base.
        scratch_base: u64,
        /// Its limit.
        scratch_limit: u64,
        /// The GPUVM range's base.
        gpuvm_base: u64,
        /// Its limit.
        gpuvm_limit: u64,
        /// The GPU.
        gpu_id: u32,
        /// Topology `location_id`.
        location_id: u32,
        /// Topology `vendor_id`.
        vendor_id: u32,
        /// Topology `device_id`.
        device_id: u32,
        /// The PCI revision (amdgpu's `pdev->revision`, the render node's `pci_rev`).
        revision_id: u32,
        /// PCI subsystem vendor (0: the emulated GPU has none).
        subsystem_vendor_id: u32,
        /// PCI subsystem device (0).
        subsystem_device_id: u32,
        /// The MEC firmware version (topology `fw_version`).
        fw_version: u32,
        /// Topology `gfx_target_version`.
        gfx_target_version: u32,
        /// Topology `simd_count`.
        simd_count: u32,
        /// Topology `max_waves_per_simd`.
        max_waves_per_simd: u32,
        /// Topology `array_count`.
        array_count: u32,
        /// Topology `simd_arrays_per_engine`.
        simd_arrays_per_engine: u32,
        /// The XCCs of the partition (topology `num_xcc`, at least 1).
        num_xcc: u32,
        /// Topology `capability`.
        capability: u32,
        /// Topology `debug_prop`.
        debug_prop: u32,
    }
}

impl DbgTrapArgs {
    /// The union as operation `T`'s argument struct (its first `size_of::<T>()` bytes).
    pub(crate) fn view<T: FromBytes>(&self) -> T {
        T::read_from_prefix(self.data.as_bytes())
            .map(|(t, _)| t)
            .unwrap_or_else(|_| T::new_zeroed())
    }

    /// Writes operation `T`'s argument struct back into the union.
    pub(crate) fn set_view<T: IntoBytes + Immutable>(&mut self, t: &T) {
        let bytes = t.as_bytes();
        self.data.as_mut_bytes()[..bytes.len()].copy_from_slice(bytes);
    }
}

/// The debug state of the process (amdkfd's `kfd_process` debug fields: `debug_trap_enabled`,
/// `dbg_ev_file`, `exception_enable_mask`, `exception_status`, `runtime_info`, `dbg_flags`,
/// and each `kfd_process_device`'s and queue's `exception_status`).
#[derive(Debug, Default)]
pub(crate) struct DebugState {
    /// `debug_trap_enabled`.
    enabled: bool,
    /// `dbg_ev_file`: the debugger's descriptor (a duplicate held, as `fget` holds the file).
    event_file: Option<OwnedFd>,
    /// `exception_enable_mask`.
    enable_mask: u64,
    /// The process's pending exceptions.
    process_status: u64,
    /// Each GPU's pending exceptions, by gpu id.
    device_status: BTreeMap<u32, u64>,
    /// Each queue's pending exceptions, by queue id.
    queue_status: HashMap<u32, u64>,
    /// The last memory fault's `kfd_hsa_memory_exception_data` per GPU (`vm_fault_exc_data`).
    vm_fault_data: HashMap<u32, [u8; 32]>,
    /// `runtime_info`.
    pub(crate) runtime: KfdRuntimeInfo,
    /// `dbg_flags`.
    flags: u32,
}

impl DebugState {
    /// Writes a byte to the debugger's descriptor, as `kernel_write(dbg_ev_file, ".", 1, &0)`
    /// (at offset 0 unless the file is a stream); errors are ignored, as amdkfd ignores them.
    fn notify(&self) {
        if let Some(f) = &self.event_file {
            if rustix::io::pwrite(f, b".", 0) == Err(Errno::SPIPE) {
                let _ = rustix::io::write(f, b".");
            }
        }
    }

    /// `kfd_dbg_ev_raise` of a process exception: `false` when the debug trap is off or the
    /// debugger does not take `mask`.
    fn raise_process(&mut self, mask: u64) -> bool {
        if !self.enabled {
            return false;
        }
        self.process_status |= mask & KFD_EC_MASK_PROCESS;
        self.subscribed(mask)
    }

    /// Whether the debugger takes `mask`; tells it so.
    fn subscribed(&self, mask: u64) -> bool {
        let yes = self.enable_mask & mask != 0;
        if yes {
            self.notify();
        }
        yes
    }

    /// `kfd_dbg_clean_exception_status`.
    fn clean(&mut self) {
        self.process_status = 0;
        self.device_status.clear();
        self.queue_status.clear();
    }
}

/// The process's debugger state and amdkfd's `runtime_enable_sema`, on which
/// `RUNTIME_ENABLE` of a process being debugged waits for the debugger's
/// `SEND_RUNTIME_EVENT` of `EC_PROCESS_RUNTIME`.
#[derive(Debug, Default)]
pub(crate) struct Debugger {
    /// The state (lock after the queue table, never before).
    pub(crate) state: Mutex<DebugState>,
    /// The semaphore's count.
    sema: Mutex<u64>,
    /// Wakes its waiters.
    sema_cv: Condvar,
}

impl Debugger {
    /// `up(&runtime_enable_sema)`.
    fn up(&self) {
        *lock(&self.sema) += 1;
        self.sema_cv.notify_one();
    }

    /// `down(&runtime_enable_sema)`: waits until the debugger answers `EC_PROCESS_RUNTIME`
    /// with `SEND_RUNTIME_EVENT` (the count is positive), then takes one. The emulated wait
    /// cannot be interrupted (amdkfd's `down_interruptible` returns `EINTR` on a signal).
    pub(crate) fn wait_runtime_event(&self) {
        let mut n = lock(&self.sema);
        while *n == 0 {
            n = self.sema_cv.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
        *n -= 1;
    }
}

/// The process `pid` names, as `kfd_ioctl_set_debug_trap` finds it (module docs, step 1):
/// `Ok(())` for this process; `ESRCH`, `EPERM` or `EINVAL` for another.
fn target_of(pid: u32, op: u32) -> Result<(), Errno> {
    let me = std::process::id();
    if pid == me || std::path::Path::new(&format!("/proc/self/task/{pid}")).exists() {
        return Ok(());
    }
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(Errno::SRCH);
    }
    // find_get_pid, get_pid_task, get_task_mm: a pid with no task, or a task with no memory.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| Errno::SRCH)?;
    if !status.lines().any(|l| l.starts_with("VmSize:")) {
        return Err(Errno::SRCH);
    }
    let traced_by_me = status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse::<u32>().ok())
        == Some(me);
    match op {
        // kfd_create_process on the tracee: its devices are not this device's.
        KFD_IOC_DBG_TRAP_ENABLE if traced_by_me => Err(Errno::SRCH),
        // The target is not ptraced by the caller.
        KFD_IOC_DBG_TRAP_DISABLE => Err(Errno::INVAL),
        _ if !traced_by_me => Err(Errno::PERM),
        // Debug trap not enabled on it.
        _ => Err(Errno::INVAL),
    }
}

/// `fget(fd)`: a duplicate of descriptor `fd` of this process, `EBADF` when it is not open.
#[allow(unsafe_code)]
fn fget(fd: u32) -> Result<OwnedFd, Errno> {
    let fd = i32::try_from(fd).map_err(|_| Errno::BADF)?;
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes any integer: the kernel answers EBADF for one that
    // is not an open descriptor and touches no memory of the process.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(Errno::BADF);
    }
    // SAFETY: `new` is a descriptor fcntl just made, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// `copy_to_user`: `data` at user address `addr`; `EFAULT` when not mapped. Copying nothing
/// always succeeds (whatever the address), as it does in the kernel.
fn copy_to_user(device: &Device, addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    device.user.write(addr, data)
}

/// `DBG_TRAP` as `kfd_ioctl_set_debug_trap` answers it under HWS (module docs for the
/// checks before the operation). The operations:
/// - `ENABLE` (`kfd_dbg_trap_enable`): `EALREADY` when on; `ENODEV` for a GPU older than
///   gfx9 (not SOC15); `EBUSY` on a gfx1100-gfx1103 GPU whose queue holds GWS; `EBADF` when `dbg_fd` is
///   not an open descriptor; else the trap is on, `min(rinfo_size, 16)` bytes of
///   [`KfdRuntimeInfo`] go to `rinfo_ptr` (`EFAULT` when not mapped: the trap stays on, but
///   the exception mask is not taken, as amdkfd does), `rinfo_size` becomes 16 and the
///   exception mask is stored. (The `EBUSY` rule is `kfd_dbg_has_gws_support`'s for
///   gfx1100-gfx1103; its old-MEC2-firmware cases are not modelled: the topology has no MEC2
///   version.)
/// - `DISABLE` (`kfd_dbg_trap_disable`): resumes every queue, clears the flags, drops the
///   descriptor and every pending exception.
/// - `SEND_RUNTIME_EVENT` (`kfd_dbg_send_exception_to_runtime`): `EC_DEVICE_MEMORY_VIOLATION`
///   (`ENODEV` for an unknown GPU) sets the memory events with the fault's data;
///   `EC_PROCESS_RUNTIME` releases a waiting `RUNTIME_ENABLE`; the other bits go to the
///   queue's runtime handler through its context save area (nothing for an unknown queue).
/// - `SET_EXCEPTIONS_ENABLED`: stores the mask; a byte to the descriptor when an exception in
///   it is pending.
/// - `SET_WAVE_LAUNCH_OVERRIDE`: `EINVAL` for a mode other than OR, `EACCES` for any bit
///   requested (the emulated waves take no trap: the supported mask written back is 0);
///   else the previous enable mask (0).
/// - `SET_WAVE_LAUNCH_MODE`: `EINVAL` for a mode amdkfd does not know and, as the emulated
///   waves cannot be halted, for HALT and DEBUG; NORMAL succeeds.
/// - `SUSPEND_QUEUES`/`RESUME_QUEUES` ([`suspend_queues`], [`resume_queues`]).
/// - `SET_NODE_ADDRESS_WATCH`: `ENOMEM` (no free watch slot); `CLEAR_NODE_ADDRESS_WATCH`:
///   `EINVAL` (the process owns no slot).
/// - `SET_FLAGS` (`kfd_dbg_trap_set_flags`): `EACCES`, the flags back as they were, when
///   [`KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP`] is asked of a GPU whose `capability` lacks
///   [`HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED`] (the emulated memory
///   operations are precise anyway); else the previous flags come back.
/// - `QUERY_DEBUG_EVENT` (`kfd_dbg_ev_query_debug_event`): the first queue, then GPU, then
///   the process with an enabled exception pending, its status and ids, clearing the
///   request's mask; `EAGAIN` when none.
/// - `QUERY_EXCEPTION_INFO` (`kfd_dbg_trap_query_exception_info`): `EINVAL` for a null
///   `info_ptr`, an unknown source or code; `ENODATA` when not pending; the data
///   (`kfd_hsa_memory_exception_data` of a memory fault, [`KfdRuntimeInfo`]) up to
///   `info_size` and its size back.
/// - `GET_QUEUE_SNAPSHOT`/`GET_DEVICE_SNAPSHOT` ([`queue_snapshot`], [`device_snapshot`]).
///
/// The emulated ioctl returns 0 where amdkfd returns SUSPEND/RESUME's count of queues.
pub(crate) fn dbg_trap(device: &Arc<Device>, a: &mut DbgTrapArgs) -> Result<(), Errno> {
    target_of(a.pid, a.op)?;
    let queues = lock(&device.queues);
    let mut st = lock(&device.debug.state);
    if a.op != KFD_IOC_DBG_TRAP_ENABLE && !st.enabled {
        return Err(Errno::INVAL);
    }
    if st.runtime.runtime_state != DEBUG_RUNTIME_STATE_ENABLED
        && matches!(
            a.op,
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE..=KFD_IOC_DBG_TRAP_SET_FLAGS
        )
    {
        return Err(Errno::PERM);
    }
    let watch_gpu = match a.op {
        KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => {
            Some(a.view::<DbgTrapSetNodeAddressWatchArgs>().gpu_id)
        }
        KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => {
            Some(a.view::<DbgTrapClearNodeAddressWatchArgs>().gpu_id)
        }
        _ => None,
    };
    if let Some(g) = watch_gpu {
        if device.gpu(g).is_none() {
            return Err(Errno::NODEV);
        }
    }
    match a.op {
        KFD_IOC_DBG_TRAP_ENABLE => {
            let mut e = a.view::<DbgTrapEnableArgs>();
            let r = enable(device, &queues, &mut st, &mut e);
            if r.is_ok() {
                st.enable_mask = e.exception_mask;
            }
            a.set_view(&e);
            r
        }
        KFD_IOC_DBG_TRAP_DISABLE => {
            if st.runtime.runtime_state == DEBUG_RUNTIME_STATE_ENABLED {
                deactivate(&queues, &mut st);
            }
            st.event_file = None;
            st.enabled = false;
            st.clean();
            Ok(())
        }
        KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => {
            let e = a.view::<DbgTrapSendRuntimeEventArgs>();
            let work = send_runtime_event(device, &queues, &st, e)?;
            drop(st);
            drop(queues);
            work.run(device);
            Ok(())
        }
        KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED => {
            let mask = a.view::<DbgTrapSetExceptionsEnabledArgs>().exception_mask;
            let found = st.process_status
                | st.queue_status.values().fold(0, |m, s| m | s)
                | st.device_status.values().fold(0, |m, s| m | s);
            st.enable_mask = mask;
            if mask & found != 0 {
                st.notify();
            }
            Ok(())
        }
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE => {
            let mut o = a.view::<DbgTrapSetWaveLaunchOverrideArgs>();
            let request = o.support_request_mask;
            // validate_trap_override_request: the supported mask starts all ones and each GPU
            // keeps the bits it can trap on: none here.
            o.support_request_mask = 0;
            let r = if o.override_mode != KFD_DBG_TRAP_OVERRIDE_OR {
                Err(Errno::INVAL)
            } else if request != 0 {
                Err(Errno::ACCESS)
            } else {
                o.enable_mask = 0;
                Ok(())
            };
            a.set_view(&o);
            r
        }
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE => {
            match a.view::<DbgTrapSetWaveLaunchModeArgs>().launch_mode {
                KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL => Ok(()),
                _ => Err(Errno::INVAL),
            }
        }
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES => {
            let s = a.view::<DbgTrapSuspendQueuesArgs>();
            suspend_queues(device, &queues, &mut st, s).map(|_| ())
        }
        KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
            let r = a.view::<DbgTrapResumeQueuesArgs>();
            resume_queues(device, &queues, r.queue_array_ptr, r.num_queues).map(|_| ())
        }
        KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => Err(Errno::NOMEM),
        KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => Err(Errno::INVAL),
        KFD_IOC_DBG_TRAP_SET_FLAGS => {
            let mut f = a.view::<DbgTrapSetFlagsArgs>();
            let prev = st.flags;
            let precise = device.topology.nodes.iter().all(|n| {
                n.properties.gpu_id == 0
                    || n.properties.capability
                        & HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED
                        != 0
            });
            let r = if !precise && f.flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP != 0 {
                Err(Errno::ACCESS)
            } else {
                st.flags = f.flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP;
                Ok(())
            };
            f.flags = prev;
            a.set_view(&f);
            r
        }
        KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT => {
            let mut q = a.view::<DbgTrapQueryDebugEventArgs>();
            let r = query_debug_event(&queues, &mut st, &mut q);
            a.set_view(&q);
            r
        }
        KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
            let mut q = a.view::<DbgTrapQueryExceptionInfoArgs>();
            let r = query_exception_info(device, &queues, &mut st, &mut q);
            a.set_view(&q);
            r
        }
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
            let mut s = a.view::<DbgTrapSnapshotArgs>();
            let r = queue_snapshot(device, &queues, &mut st, &mut s);
            a.set_view(&s);
            r
        }
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
            let mut s = a.view::<DbgTrapSnapshotArgs>();
            let r = device_snapshot(device, &mut st, &mut s);
            a.set_view(&s);
            r
        }
        _ => Err(Errno::INVAL),
    }
}

/// The queue table the handlers read (locked by [`dbg_trap`]).
type Queues = BTreeMap<u32, super::queue_manager::QueueEntry>;

/// `kfd_dbg_trap_enable` (see [`dbg_trap`]).
fn enable(
    device: &Device,
    queues: &Queues,
    st: &mut DebugState,
    e: &mut DbgTrapEnableArgs,
) -> Result<(), Errno> {
    if st.enabled {
        return Err(Errno::ALREADY);
    }
    for g in &device.gpus {
        let gfx = device
            .topology
            .nodes
            .iter()
            .find(|n| n.properties.gpu_id == g.gpu_id)
            .map_or(0, |n| n.properties.gfx_target_version);
        if gfx < 90000 {
            return Err(Errno::NODEV);
        }
        // kfd_dbg_has_gws_support is false on GC 11.0.0-11.0.3 (the CWSR workaround's
        // GPUs, gfx1100-gfx1103) and with old MEC2 firmware on gfx9, whose version the
        // emulated topology does not know (taken as new enough).
        let gws = queues.values().any(|q| q.gpu_id == g.gpu_id && q.gws);
        if (110000..=110003).contains(&gfx) && gws {
            return Err(Errno::BUSY);
        }
    }
    let copy = (e.rinfo_size as usize).min(size_of::<KfdRuntimeInfo>());
    st.event_file = Some(fget(e.dbg_fd)?);
    st.enabled = true;
    let r = copy_to_user(device, e.rinfo_ptr, &st.runtime.as_bytes()[..copy]);
    if r.is_err() {
        deactivate(queues, st);
    }
    e.rinfo_size = size_of::<KfdRuntimeInfo>() as u32;
    r
}

/// `kfd_dbg_trap_deactivate` (not unwinding): resumes every queue and clears the flags (no
/// watch slot, no launch mode to undo).
fn deactivate(queues: &Queues, st: &mut DebugState) {
    for q in queues.values() {
        resume_one(q);
    }
    st.flags = 0;
}

/// `resume_single_queue`: the queue's engine may take packets again (unless UPDATE_QUEUE
/// made it inactive).
fn resume_one(q: &super::queue_manager::QueueEntry) {
    if q.ctl
        .suspended
        .swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        q.ctl.kick();
    }
}

/// What `SEND_RUNTIME_EVENT` does once [`dbg_trap`] has dropped its locks (the memory
/// events, the runtime's semaphore and the queue's save area take locks of their own, some
/// of which CREATE_QUEUE holds while it takes the queue table's).
#[derive(Debug, Default)]
struct RuntimeEvent {
    /// The memory fault's data, for the memory events.
    vm_fault: Option<[u8; 32]>,
    /// Whether a waiting `RUNTIME_ENABLE` is released.
    release_runtime: bool,
    /// Queue id, GPU, context save area and error reason for the runtime's queue handler.
    queue: Option<(u32, u32, u64, u64)>,
}

impl RuntimeEvent {
    /// Runs it, in `kfd_dbg_send_exception_to_runtime`'s order.
    fn run(self, device: &Device) {
        if let Some(data) = self.vm_fault {
            device.signal_vm_fault(data);
        }
        if self.release_runtime {
            device.debug.up();
        }
        if let Some((queue_id, gpu_id, csa, reason)) = self.queue {
            device.send_exception_to_runtime(queue_id, gpu_id, csa, reason);
        }
    }
}

/// `kfd_dbg_send_exception_to_runtime` (see [`dbg_trap`]): what to do, or `ENODEV`.
fn send_runtime_event(
    device: &Device,
    queues: &Queues,
    st: &DebugState,
    e: DbgTrapSendRuntimeEventArgs,
) -> Result<RuntimeEvent, Errno> {
    let mut reason = e.exception_mask;
    let mut work = RuntimeEvent::default();
    if reason & ec_mask(EC_DEVICE_MEMORY_VIOLATION) != 0 {
        if device.gpu(e.gpu_id).is_none() {
            return Err(Errno::NODEV);
        }
        work.vm_fault = Some(st.vm_fault_data.get(&e.gpu_id).copied().unwrap_or([0; 32]));
        reason &= !ec_mask(EC_DEVICE_MEMORY_VIOLATION);
    }
    if reason & ec_mask(EC_PROCESS_RUNTIME) != 0 {
        work.release_runtime = true;
        reason &= !ec_mask(EC_PROCESS_RUNTIME);
    }
    if reason != 0 {
        // kfd_send_exception_to_runtime: nothing for a queue the process does not have.
        if let Some(q) = queues.get(&e.queue_id) {
            work.queue = Some((e.queue_id, q.gpu_id, q.ctl.ctx_save_area(), reason));
        }
    }
    Ok(work)
}

/// `kfd_dbg_ev_query_debug_event`: the first source with an enabled exception pending.
fn query_debug_event(
    queues: &Queues,
    st: &mut DebugState,
    q: &mut DbgTrapQueryDebugEventArgs,
) -> Result<(), Errno> {
    let clear = q.exception_mask;
    let enabled = st.enable_mask;
    *q = DbgTrapQueryDebugEventArgs::default();
    for (&qid, entry) in queues.iter().rev() {
        let s = st.queue_status.entry(qid).or_default();
        if *s & enabled != 0 {
            (q.exception_mask, q.queue_id, q.gpu_id) = (*s, qid, entry.gpu_id);
            *s &= !clear;
            return Ok(());
        }
    }
    for (&gpu, s) in st.device_status.iter_mut() {
        if *s & enabled != 0 {
            (q.exception_mask, q.gpu_id) = (*s, gpu);
            *s &= !clear;
            return Ok(());
        }
    }
    if st.process_status & enabled != 0 {
        q.exception_mask = st.process_status;
        st.process_status &= !clear;
        return Ok(());
    }
    Err(Errno::AGAIN)
}

/// `kfd_dbg_trap_query_exception_info` (see [`dbg_trap`]).
fn query_exception_info(
    device: &Device,
    queues: &Queues,
    st: &mut DebugState,
    q: &mut DbgTrapQueryExceptionInfoArgs,
) -> Result<(), Errno> {
    if q.info_ptr == 0 {
        return Err(Errno::INVAL);
    }
    let code = q.exception_code;
    let mask = if (1..=64).contains(&code) {
        ec_mask(code)
    } else {
        0
    };
    let runtime = st.runtime;
    let (status, size): (&mut u64, u32) = if mask & KFD_EC_MASK_QUEUE != 0 {
        if !queues.contains_key(&q.source_id) {
            return Err(Errno::INVAL);
        }
        (st.queue_status.entry(q.source_id).or_default(), 0)
    } else if mask & KFD_EC_MASK_DEVICE != 0 {
        if device.gpu(q.source_id).is_none() {
            return Err(Errno::INVAL);
        }
        let pending = st.device_status.get(&q.source_id).copied().unwrap_or(0);
        if pending & mask == 0 {
            return Err(Errno::NODATA);
        }
        let mut size = 0;
        if code == EC_DEVICE_MEMORY_VIOLATION {
            let data = st.vm_fault_data.get(&q.source_id).copied();
            let len = data.map_or(0, |d| d.len());
            let copy = (q.info_size as usize).min(len);
            copy_to_user(device, q.info_ptr, &data.unwrap_or([0; 32])[..copy])?;
            size = len as u32;
            if q.clear_exception != 0 {
                st.vm_fault_data.remove(&q.source_id);
            }
        }
        (st.device_status.entry(q.source_id).or_default(), size)
    } else if mask & KFD_EC_MASK_PROCESS != 0 {
        if st.process_status & mask == 0 {
            return Err(Errno::NODATA);
        }
        let mut size = 0;
        if code == EC_PROCESS_RUNTIME {
            let copy = (q.info_size as usize).min(size_of::<KfdRuntimeInfo>());
            copy_to_user(device, q.info_ptr, &runtime.as_bytes()[..copy])?;
            size = size_of::<KfdRuntimeInfo>() as u32;
        }
        (&mut st.process_status, size)
    } else {
        return Err(Errno::INVAL);
    };
    if *status & mask == 0 {
        return Err(Errno::NODATA);
    }
    q.info_size = size;
    if q.clear_exception != 0 {
        *status &= !mask;
    }
    Ok(())
}

/// `GET_QUEUE_SNAPSHOT` as `pqm_get_queue_snapshot` answers it: `EINVAL` (`num_queues` 0)
/// for an `entry_size` of 0; else one [`KfdQueueSnapshotEntry`] per queue
/// (`set_queue_snapshot_entry`: CREATE_QUEUE's addresses and sizes, the queue id, GPU and
/// type, the pending exceptions, which the request's mask then clears) for as many queues as
/// `num_queues` says the buffer holds, each `min(entry_size, 64)` bytes copied at a stride of
/// the caller's `entry_size`; `num_queues` comes back as the process's queue count (even
/// when larger than the buffer) and `entry_size` as the bytes copied. `EFAULT` at the first
/// entry that cannot be written. Queues come newest first, as amdkfd's list keeps them (by
/// descending queue id here).
pub(crate) fn queue_snapshot(
    device: &Device,
    queues: &Queues,
    st: &mut DebugState,
    s: &mut DbgTrapSnapshotArgs,
) -> Result<(), Errno> {
    let (stride, room) = (u64::from(s.entry_size), s.num);
    s.num = 0;
    if s.entry_size == 0 {
        return Err(Errno::INVAL);
    }
    s.entry_size = s.entry_size.min(size_of::<KfdQueueSnapshotEntry>() as u32);
    let mut at = s.snapshot_buf_ptr;
    let mut r = Ok(());
    for (&qid, q) in queues.iter().rev() {
        if s.num < room {
            let status = st.queue_status.entry(qid).or_default();
            let e = KfdQueueSnapshotEntry {
                exception_status: *status,
                ring_base_address: q.ring_va,
                write_pointer_address: q.write_ptr,
                read_pointer_address: q.read_ptr,
                ctx_save_restore_address: q.ctx_save.0,
                queue_id: qid,
                gpu_id: q.gpu_id,
                ring_size: q.ring_size,
                queue_type: q.queue_type,
                ctx_save_restore_area_size: q.ctx_save.1,
                reserved: 0,
            };
            *status &= !s.exception_mask;
            if let Err(err) = copy_to_user(device, at, &e.as_bytes()[..s.entry_size as usize]) {
                r = Err(err);
                break;
            }
            at = at.wrapping_add(stride);
        }
        s.num += 1;
    }
    r
}

/// `GET_DEVICE_SNAPSHOT` as `kfd_dbg_trap_device_snapshot` answers it: `EINVAL` for a null
/// buffer; `num_devices` comes back as the GPU count and `entry_size` as `min(entry_size,
/// 120)`; for the first `min(num_devices, GPUs)` GPUs one [`KfdDbgDeviceInfoEntry`] (the
/// process's apertures on it, as `GET_PROCESS_APERTURES_NEW` reports them, and the values of
/// its topology node's sysfs properties; the PCI revision the render node reports; no PCI
/// subsystem ids) of that many bytes at a stride of the caller's `entry_size`, clearing the
/// request's mask from its pending exceptions; `EFAULT` at the first that cannot be written.
pub(crate) fn device_snapshot(
    device: &Device,
    st: &mut DebugState,
    s: &mut DbgTrapSnapshotArgs,
) -> Result<(), Errno> {
    if s.snapshot_buf_ptr == 0 {
        return Err(Errno::INVAL);
    }
    let stride = u64::from(s.entry_size);
    let n = (s.num as usize).min(device.gpus.len());
    s.num = device.gpus.len() as u32;
    s.entry_size = s.entry_size.min(size_of::<KfdDbgDeviceInfoEntry>() as u32);
    let mut at = s.snapshot_buf_ptr;
    for g in &device.gpus[..n] {
        let e = device_info_entry(device, g, st.device_status.get(&g.gpu_id).copied());
        if s.exception_mask != 0 {
            if let Some(status) = st.device_status.get_mut(&g.gpu_id) {
                *status &= !s.exception_mask;
            }
        }
        copy_to_user(device, at, &e.as_bytes()[..s.entry_size as usize])?;
        at = at.wrapping_add(stride);
    }
    Ok(())
}

/// GPU `g`'s [`KfdDbgDeviceInfoEntry`] with pending exceptions `status`.
fn device_info_entry(
    device: &Device,
    g: &super::Gpu,
    status: Option<u64>,
) -> KfdDbgDeviceInfoEntry {
    let ap = super::process::apertures_of(g);
    let node = device
        .topology
        .nodes
        .iter()
        .find(|n| n.properties.gpu_id == g.gpu_id);
    let p = node.map(|n| n.properties.clone()).unwrap_or_default();
    KfdDbgDeviceInfoEntry {
        exception_status: status.unwrap_or(0),
        lds_base: ap.lds_base,
        lds_limit: ap.lds_limit,
        scratch_base: ap.scratch_base,
        scratch_limit: ap.scratch_limit,
        gpuvm_base: ap.gpuvm_base,
        gpuvm_limit: ap.gpuvm_limit,
        gpu_id: g.gpu_id,
        location_id: p.location_id,
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        revision_id: node.map_or(0, |n| super::drm::device_info(n).pci_rev),
        subsystem_vendor_id: 0,
        subsystem_device_id: 0,
        fw_version: p.fw_version,
        gfx_target_version: p.gfx_target_version,
        simd_count: p.simd_count,
        max_waves_per_simd: p.max_waves_per_simd,
        array_count: p.array_count,
        simd_arrays_per_engine: p.simd_arrays_per_engine,
        num_xcc: p.num_xcc.max(1),
        capability: p.capability,
        debug_prop: p.debug_prop,
    }
}

/// The user's queue-id array of SUSPEND/RESUME (`get_queue_ids`): `None` for a null pointer,
/// `EFAULT` when it cannot be read.
fn queue_ids(device: &Device, ptr: u64, n: u32) -> Result<Option<Vec<u32>>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut ids = vec![0u32; n as usize];
    if n > 0 {
        device.user.read(ptr, ids.as_mut_bytes())?;
    }
    Ok(Some(ids))
}

/// The index in `ids` of queue `qid` (its status bits ignored).
fn index_of(ids: &[u32], qid: u32) -> Option<usize> {
    ids.iter()
        .position(|&id| id & !KFD_DBG_QUEUE_INVALID_MASK == qid)
}

/// `SUSPEND_QUEUES` as amdkfd's `suspend_queues` runs it under HWS: `EFAULT` when the
/// array cannot be read (amdkfd dereferences a null array of `num_queues` > 0: `EFAULT`
/// here); every id is marked [`KFD_DBG_QUEUE_INVALID_MASK`], then each queue of the process
/// named in it is suspended (`suspend_single_queue`) and unmarked — one already suspended
/// counts again, a new one (`EC_QUEUE_NEW` pending) stays invalid — its engine stops taking
/// packets (a dispatch it has taken runs to its end), and the request's mask is cleared from
/// its exceptions; the array is written back (a failed write is ignored, as amdkfd ignores
/// it). Returns how many queues were suspended.
pub(crate) fn suspend_queues(
    device: &Device,
    queues: &Queues,
    st: &mut DebugState,
    s: DbgTrapSuspendQueuesArgs,
) -> Result<u32, Errno> {
    if s.queue_array_ptr == 0 && s.num_queues > 0 {
        return Err(Errno::FAULT);
    }
    let mut ids = queue_ids(device, s.queue_array_ptr, s.num_queues)?.unwrap_or_default();
    for id in ids.iter_mut() {
        *id |= KFD_DBG_QUEUE_INVALID_MASK;
    }
    let mut total = 0;
    for (&qid, q) in queues.iter().rev() {
        let Some(i) = index_of(&ids, qid) else {
            continue;
        };
        let status = st.queue_status.entry(qid).or_default();
        let already = q.ctl.suspended.load(std::sync::atomic::Ordering::SeqCst);
        if !already && *status & ec_mask(EC_QUEUE_NEW) != 0 {
            continue;
        }
        q.ctl
            .suspended
            .store(true, std::sync::atomic::Ordering::SeqCst);
        ids[i] &= !KFD_DBG_QUEUE_INVALID_MASK;
        *status &= !s.exception_mask;
        total += 1;
    }
    let _ = copy_to_user(device, s.queue_array_ptr, ids.as_bytes());
    Ok(total)
}

/// `RESUME_QUEUES` as amdkfd's `resume_queues` runs it: with a null array every queue of the
/// process resumes; else `EFAULT` when the array cannot be read, every id is marked
/// [`KFD_DBG_QUEUE_INVALID_MASK`] and each queue of the process named in it resumes (its
/// engine takes packets again, unless UPDATE_QUEUE made it inactive; one not suspended
/// counts too) and is unmarked; the array is written back. Returns how many resumed.
pub(crate) fn resume_queues(
    device: &Device,
    queues: &Queues,
    ptr: u64,
    num_queues: u32,
) -> Result<u32, Errno> {
    let mut ids = queue_ids(device, ptr, num_queues)?;
    if let Some(ids) = ids.as_mut() {
        for id in ids.iter_mut() {
            *id |= KFD_DBG_QUEUE_INVALID_MASK;
        }
    }
    let mut total = 0;
    for (&qid, q) in queues.iter().rev() {
        if let Some(ids) = ids.as_mut() {
            let Some(i) = index_of(ids, qid) else {
                continue;
            };
            ids[i] &= !KFD_DBG_QUEUE_INVALID_MASK;
        }
        resume_one(q);
        total += 1;
    }
    if let Some(ids) = ids {
        let _ = copy_to_user(device, ptr, ids.as_bytes());
    }
    Ok(total)
}

/// `RUNTIME_ENABLE`'s part for a process being debugged (`runtime_enable`,
/// `runtime_disable`), called with the runtime state already changed: a disable of a runtime
/// that `was_enabled` deactivates the debug trap (every queue resumed, flags cleared), and
/// the debugger is told `EC_PROCESS_RUNTIME`. `true` when the debug trap is on: the caller
/// then drops its locks and waits ([`Debugger::wait_runtime_event`]).
pub(crate) fn runtime_changed(st: &mut DebugState, queues: &Queues, was_enabled: bool) -> bool {
    if !st.enabled {
        return false;
    }
    if was_enabled && st.runtime.runtime_state != DEBUG_RUNTIME_STATE_ENABLED {
        deactivate(queues, st);
    }
    st.raise_process(ec_mask(EC_PROCESS_RUNTIME));
    true
}

/// `kfd_dbg_ev_raise` of queue exception `mask` on queue `queue_id` (a queue error the CP
/// stopped it with, or `EC_QUEUE_NEW`): `true` when the debugger takes it (the debug trap
/// is on and `mask` is enabled), and then the runtime is not told.
pub(crate) fn raise_queue_exception(device: &Device, queue_id: u32, mask: u64) -> bool {
    let mut st = lock(&device.debug.state);
    if !st.enabled {
        return false;
    }
    *st.queue_status.entry(queue_id).or_default() |= mask;
    st.subscribed(mask)
}

/// `kfd_dbg_ev_raise` of `EC_DEVICE_MEMORY_VIOLATION` on GPU `gpu_id` with the fault's
/// `kfd_hsa_memory_exception_data` (`data`, kept for QUERY_EXCEPTION_INFO and
/// SEND_RUNTIME_EVENT unless one is kept already): `true` when the debugger takes it, and
/// then the memory events are not set.
pub(crate) fn raise_memory_violation(device: &Device, gpu_id: u32, data: [u8; 32]) -> bool {
    let mut st = lock(&device.debug.state);
    if !st.enabled {
        return false;
    }
    let mask = ec_mask(EC_DEVICE_MEMORY_VIOLATION);
    *st.device_status.entry(gpu_id).or_default() |= mask;
    st.vm_fault_data.entry(gpu_id).or_insert(data);
    st.subscribed(mask)
}

/// Forgets queue `queue_id`'s exceptions (the queue is gone).
pub(crate) fn queue_destroyed(device: &Device, queue_id: u32) {
    lock(&device.debug.state).queue_status.remove(&queue_id);
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use crate::device::{builtin_topology, EmulatedKfd, BUILTIN_GPU_ID};
    use hsa_linux::kfd::abi::*;
    use hsa_linux::kfd::calls;
    use hsa_linux::kfd::driver::KfdDriver;

    fn dev() -> Arc<EmulatedKfd> {
        EmulatedKfd::new(builtin_topology()).unwrap()
    }

    /// DBG_TRAP through the ioctl path, for this process; the argument back.
    fn trap<T: IntoBytes + FromBytes + Immutable>(
        d: &EmulatedKfd,
        op: u32,
        t: &mut T,
    ) -> Result<(), Errno> {
        trap_pid(d, std::process::id(), op, t)
    }

    fn trap_pid<T: IntoBytes + FromBytes + Immutable>(
        d: &EmulatedKfd,
        pid: u32,
        op: u32,
        t: &mut T,
    ) -> Result<(), Errno> {
        let mut a = DbgTrapArgs {
            pid,
            op,
            ..Default::default()
        };
        a.set_view(t);
        // SAFETY: every pointer in the tests' arguments is null, unmapped or memory the test
        // owns and keeps alive across the call.
        let r = unsafe { d.ioctl(super::super::AMDKFD_IOC_DBG_TRAP, a.as_mut_bytes()) };
        *t = a.view();
        r
    }

    /// A pipe (read end, write end) for the debugger's events.
    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into the two-element array.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        assert_eq!(r, 0);
        // SAFETY: pipe2 just made both descriptors; nothing else owns them.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn enable(
        d: &EmulatedKfd,
        fd: &OwnedFd,
        rinfo: &mut KfdRuntimeInfo,
    ) -> Result<DbgTrapEnableArgs, Errno> {
        use std::os::fd::AsRawFd;
        let mut e = DbgTrapEnableArgs {
            exception_mask: u64::MAX,
            rinfo_ptr: rinfo as *mut KfdRuntimeInfo as u64,
            rinfo_size: 16,
            dbg_fd: fd.as_raw_fd() as u32,
        };
        trap(d, KFD_IOC_DBG_TRAP_ENABLE, &mut e).map(|()| e)
    }

    #[test]
    fn operations_before_enable_are_einval_and_unknown_pids_esrch() {
        let d = dev();
        let mut q = DbgTrapQueryDebugEventArgs::default();
        for op in 1..=15 {
            assert_eq!(trap(&d, op, &mut q), Err(Errno::INVAL), "op {op}");
        }
        // pid 0 and a pid past pid_max name no process.
        assert_eq!(trap_pid(&d, 0, 11, &mut q), Err(Errno::SRCH));
        assert_eq!(trap_pid(&d, 0x7fff_fff0, 0, &mut q), Err(Errno::SRCH));
        // A kernel thread (kthreadd, pid 2) has no memory.
        if std::fs::read_to_string("/proc/2/status").is_ok_and(|s| !s.contains("VmSize:")) {
            assert_eq!(trap_pid(&d, 2, 0, &mut q), Err(Errno::SRCH));
        }
        // This process's parent: alive, not traced by us.
        let parent = std::os::unix::process::parent_id();
        if std::fs::read_to_string(format!("/proc/{parent}/status"))
            .is_ok_and(|s| s.contains("VmSize:"))
        {
            assert_eq!(
                trap_pid(&d, parent, KFD_IOC_DBG_TRAP_ENABLE, &mut q),
                Err(Errno::PERM)
            );
            assert_eq!(
                trap_pid(&d, parent, KFD_IOC_DBG_TRAP_DISABLE, &mut q),
                Err(Errno::INVAL)
            );
        }
    }

    #[test]
    fn enable_checks_the_descriptor_and_writes_the_runtime_info() {
        let d = dev();
        let mut rinfo = KfdRuntimeInfo {
            r_debug: 0x5555,
            runtime_state: 7,
            ttmp_setup: 7,
        };
        let mut e = DbgTrapEnableArgs {
            rinfo_ptr: &mut rinfo as *mut KfdRuntimeInfo as u64,
            rinfo_size: 16,
            dbg_fd: 0x7fff_0000,
            ..Default::default()
        };
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_ENABLE, &mut e), Err(Errno::BADF));
        // Still off.
        let mut q = DbgTrapQueryDebugEventArgs::default();
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &mut q),
            Err(Errno::INVAL)
        );
        // The runtime enabled first, with r_debug and TTMP setup.
        let mut re = RuntimeEnableArgs {
            r_debug: 0x1234_5678,
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK | KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK,
            capabilities_mask: 0,
        };
        // SAFETY: RUNTIME_ENABLE carries no pointer the device follows.
        unsafe { d.ioctl(AMDKFD_IOC_RUNTIME_ENABLE, re.as_mut_bytes()) }.unwrap();
        let (_r, w) = pipe();
        let e = enable(&d, &w, &mut rinfo).unwrap();
        assert_eq!(e.rinfo_size, 16);
        assert_eq!(
            rinfo,
            KfdRuntimeInfo {
                r_debug: 0x1234_5678,
                runtime_state: DEBUG_RUNTIME_STATE_ENABLED,
                ttmp_setup: 1
            }
        );
        // A second ENABLE.
        assert_eq!(enable(&d, &w, &mut rinfo).map(|_| ()), Err(Errno::ALREADY));
    }

    #[test]
    fn enable_copies_at_most_rinfo_size_and_answers_the_real_size() {
        let d = dev();
        let (_r, w) = pipe();
        let mut buf = [0xaau8; 24];
        use std::os::fd::AsRawFd;
        let mut e = DbgTrapEnableArgs {
            exception_mask: 0,
            rinfo_ptr: buf.as_mut_ptr() as u64,
            rinfo_size: 4,
            dbg_fd: w.as_raw_fd() as u32,
        };
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_ENABLE, &mut e), Ok(()));
        assert_eq!(e.rinfo_size, 16);
        // r_debug 0 (no runtime): 4 bytes of it written, the rest untouched.
        assert_eq!(buf[..4], [0; 4]);
        assert_eq!(buf[4..], [0xaa; 20]);
    }

    #[test]
    fn query_debug_event_is_eagain_with_nothing_pending_and_disable_turns_it_off() {
        let d = dev();
        let (r, w) = pipe();
        let mut rinfo = KfdRuntimeInfo::default();
        enable(&d, &w, &mut rinfo).unwrap();
        let mut q = DbgTrapQueryDebugEventArgs::default();
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &mut q),
            Err(Errno::AGAIN)
        );
        // QUERY_EXCEPTION_INFO: a null buffer, a code of no kind, an unknown source, nothing
        // pending.
        let mut buf = [0u8; 32];
        let mut qi = DbgTrapQueryExceptionInfoArgs {
            info_ptr: 0,
            info_size: 32,
            source_id: BUILTIN_GPU_ID,
            exception_code: EC_DEVICE_MEMORY_VIOLATION,
            clear_exception: 0,
        };
        let query = |qi: &mut DbgTrapQueryExceptionInfoArgs| {
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, qi)
        };
        assert_eq!(query(&mut qi), Err(Errno::INVAL));
        qi.info_ptr = buf.as_mut_ptr() as u64;
        assert_eq!(query(&mut qi), Err(Errno::NODATA));
        qi.source_id = 0xdead;
        assert_eq!(query(&mut qi), Err(Errno::INVAL));
        qi.exception_code = 0;
        assert_eq!(query(&mut qi), Err(Errno::INVAL));
        qi.exception_code = 40;
        assert_eq!(query(&mut qi), Err(Errno::INVAL));
        (qi.exception_code, qi.source_id) = (EC_QUEUE_NEW, 3);
        assert_eq!(query(&mut qi), Err(Errno::INVAL));
        qi.exception_code = EC_PROCESS_RUNTIME;
        assert_eq!(query(&mut qi), Err(Errno::NODATA));
        assert_eq!(qi.info_size, 32);
        // SEND_RUNTIME_EVENT of a memory fault on an unknown GPU.
        let mut ev = DbgTrapSendRuntimeEventArgs {
            exception_mask: ec_mask(EC_DEVICE_MEMORY_VIOLATION),
            gpu_id: 0xdead,
            queue_id: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &mut ev),
            Err(Errno::NODEV)
        );
        // SET_EXCEPTIONS_ENABLED with nothing pending: no byte to the debugger.
        let mut se = DbgTrapSetExceptionsEnabledArgs { exception_mask: 1 };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED, &mut se),
            Ok(())
        );
        // Ops that program waves need the runtime enabled.
        let mut f = DbgTrapSetFlagsArgs { flags: 1, pad: 0 };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_FLAGS, &mut f),
            Err(Errno::PERM)
        );
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_DISABLE, &mut q), Ok(()));
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &mut q),
            Err(Errno::INVAL)
        );
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_DISABLE, &mut q),
            Err(Errno::INVAL)
        );
        // Nothing was written to the debugger's pipe.
        let mut b = [0u8; 4];
        assert_eq!(rustix::io::read(&r, &mut b), Err(Errno::AGAIN));
    }

    #[test]
    fn device_snapshot_reports_the_topology_values() {
        let d = dev();
        let (_r, w) = pipe();
        let mut rinfo = KfdRuntimeInfo::default();
        enable(&d, &w, &mut rinfo).unwrap();
        let mut buf = [0u8; 2 * 128];
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: 0,
            snapshot_buf_ptr: buf.as_mut_ptr() as u64,
            num: 4,
            entry_size: 128,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &mut s),
            Ok(())
        );
        assert_eq!((s.num, s.entry_size), (1, 120));
        let e = KfdDbgDeviceInfoEntry::read_from_bytes(&buf[..120]).unwrap();
        let node = d
            .topology()
            .nodes
            .iter()
            .find(|n| n.properties.gpu_id == BUILTIN_GPU_ID)
            .unwrap();
        let p = &node.properties;
        assert_eq!(e.gpu_id, BUILTIN_GPU_ID);
        assert_eq!(e.exception_status, 0);
        assert_eq!(
            (
                e.location_id,
                e.vendor_id,
                e.device_id,
                e.fw_version,
                e.gfx_target_version
            ),
            (0x4300, 4098, 29711, 92, 90010)
        );
        assert_eq!(
            (p.location_id, p.vendor_id, p.device_id, p.fw_version),
            (0x4300, 4098, 29711, 92)
        );
        assert_eq!(
            (
                e.simd_count,
                e.max_waves_per_simd,
                e.array_count,
                e.simd_arrays_per_engine,
                e.num_xcc
            ),
            (416, 8, 8, 1, 1)
        );
        assert_eq!((e.capability, e.debug_prop), (0x2c77_a280, 470));
        assert_eq!(e.revision_id, crate::device::drm::device_info(node).pci_rev);
        assert_eq!((e.subsystem_vendor_id, e.subsystem_device_id), (0, 0));
        // The apertures GET_PROCESS_APERTURES_NEW reports.
        let g = d.device.gpu(BUILTIN_GPU_ID).unwrap();
        let ap = super::super::process::apertures_of(g);
        assert_eq!(
            (
                e.lds_base,
                e.lds_limit,
                e.scratch_base,
                e.scratch_limit,
                e.gpuvm_base,
                e.gpuvm_limit
            ),
            (
                ap.lds_base,
                ap.lds_limit,
                ap.scratch_base,
                ap.scratch_limit,
                0x20_0000,
                0x7fff_ffff_ffff
            )
        );
        // The stride past the entry is untouched.
        assert_eq!(buf[120..], [0; 136]);
        // A null buffer.
        s.snapshot_buf_ptr = 0;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &mut s),
            Err(Errno::INVAL)
        );
        // A short entry size: 8 bytes copied.
        let mut small = [0xffu8; 16];
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: 0,
            snapshot_buf_ptr: small.as_mut_ptr() as u64,
            num: 1,
            entry_size: 8,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &mut s),
            Ok(())
        );
        assert_eq!((s.num, s.entry_size), (1, 8));
        assert_eq!(
            small,
            [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
    }

    /// Page-aligned memory for a queue: ring at 0, amd_queue_t at 4096.
    #[repr(C, align(4096))]
    struct Arena([u8; 16384]);

    #[test]
    fn queue_snapshot_lists_the_queue_and_clears_queue_new() {
        let d = dev();
        let (r, w) = pipe();
        let mut rinfo = KfdRuntimeInfo::default();
        enable(&d, &w, &mut rinfo).unwrap();
        let arena = Box::new(Arena([0; 16384]));
        let base = arena.0.as_ptr() as u64;
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: base,
            size: 16384,
            handle: 0,
            mmap_offset: base,
            gpu_id: BUILTIN_GPU_ID,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        // SAFETY: the arena is 16 KiB of page-aligned memory the test owns, alive until after
        // the queue is destroyed and the allocation freed below.
        unsafe { calls::alloc_userptr_memory_of_gpu(&*d, &mut a) }.unwrap();
        calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap();
        let mut q = CreateQueueArgs {
            ring_base_address: base,
            write_pointer_address: base + 4096 + 56,
            read_pointer_address: base + 4096 + 128,
            ring_size: 1024,
            gpu_id: BUILTIN_GPU_ID,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: 100,
            queue_priority: 7,
            ctx_save_restore_address: base + 8192,
            ctx_save_restore_size: 4096,
            ..Default::default()
        };
        // SAFETY: ring and amd_queue_t lie in the registered, mapped arena (all zero: no
        // packet), alive until the queue is destroyed below.
        unsafe { calls::create_queue(&*d, &mut q) }.unwrap();
        // The debugger was told of EC_QUEUE_NEW.
        let mut b = [0u8; 4];
        assert_eq!(rustix::io::read(&r, &mut b), Ok(1));
        let mut entries = [0u8; 2 * 72];
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: ec_mask(EC_QUEUE_NEW),
            snapshot_buf_ptr: entries.as_mut_ptr() as u64,
            num: 2,
            entry_size: 72,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &mut s),
            Ok(())
        );
        assert_eq!((s.num, s.entry_size), (1, 64));
        let e = KfdQueueSnapshotEntry::read_from_bytes(&entries[..64]).unwrap();
        assert_eq!(
            e,
            KfdQueueSnapshotEntry {
                exception_status: ec_mask(EC_QUEUE_NEW),
                ring_base_address: base,
                write_pointer_address: base + 4096 + 56,
                read_pointer_address: base + 4096 + 128,
                ctx_save_restore_address: base + 8192,
                queue_id: q.queue_id,
                gpu_id: BUILTIN_GPU_ID,
                ring_size: 1024,
                queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                ctx_save_restore_area_size: 4096,
                reserved: 0,
            }
        );
        assert_eq!(entries[64..], [0; 80]);
        // The mask cleared EC_QUEUE_NEW; a buffer of no entries: the count only.
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: 0,
            snapshot_buf_ptr: 0,
            num: 0,
            entry_size: 64,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &mut s),
            Ok(())
        );
        assert_eq!((s.num, s.entry_size), (1, 64));
        // A too-small entry size: 16 bytes.
        let mut small = [0xffu8; 24];
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: 0,
            snapshot_buf_ptr: small.as_mut_ptr() as u64,
            num: 1,
            entry_size: 16,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &mut s),
            Ok(())
        );
        assert_eq!((s.num, s.entry_size), (1, 16));
        assert_eq!(u64::from_le_bytes(small[..8].try_into().unwrap()), 0);
        assert_eq!(u64::from_le_bytes(small[8..16].try_into().unwrap()), base);
        assert_eq!(small[16..], [0xff; 8]);
        // entry_size 0; an unmapped buffer.
        s.entry_size = 0;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &mut s),
            Err(Errno::INVAL)
        );
        assert_eq!(s.num, 0);
        let mut s = DbgTrapSnapshotArgs {
            exception_mask: 0,
            snapshot_buf_ptr: 0x10,
            num: 1,
            entry_size: 64,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &mut s),
            Err(Errno::FAULT)
        );
        // Suspend needs the runtime enabled.
        let mut ids = [q.queue_id, 77];
        let mut sq = DbgTrapSuspendQueuesArgs {
            exception_mask: 0,
            queue_array_ptr: ids.as_mut_ptr() as u64,
            num_queues: 2,
            grace_period: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &mut sq),
            Err(Errno::PERM)
        );
        // The device (its queue and the USERPTR allocation) goes before the arena.
        drop(d);
        drop(arena);
    }

    /// Whether queue `qid`'s engine is suspended.
    fn suspended(d: &EmulatedKfd, qid: u32) -> bool {
        lock(&d.device.queues)[&qid]
            .ctl
            .suspended
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn a_debugged_runtime_suspends_resumes_and_waits_for_the_debugger() {
        let d = dev();
        let mut re = RuntimeEnableArgs {
            r_debug: 0x4000,
            mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK,
            capabilities_mask: 0,
        };
        // SAFETY: RUNTIME_ENABLE carries no pointer the device follows.
        unsafe { d.ioctl(AMDKFD_IOC_RUNTIME_ENABLE, re.as_mut_bytes()) }.unwrap();
        let (r, w) = pipe();
        let mut rinfo = KfdRuntimeInfo::default();
        enable(&d, &w, &mut rinfo).unwrap();
        assert_eq!(
            (rinfo.r_debug, rinfo.runtime_state, rinfo.ttmp_setup),
            (0x4000, 1, 0)
        );
        let arena = Box::new(Arena([0; 16384]));
        let base = arena.0.as_ptr() as u64;
        let mut a = AllocMemoryOfGpuArgs {
            va_addr: base,
            size: 16384,
            handle: 0,
            mmap_offset: base,
            gpu_id: BUILTIN_GPU_ID,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        // SAFETY: the arena is 16 KiB of page-aligned memory the test owns, alive until after
        // the device is dropped below.
        unsafe { calls::alloc_userptr_memory_of_gpu(&*d, &mut a) }.unwrap();
        calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap();
        let mut q = CreateQueueArgs {
            ring_base_address: base,
            write_pointer_address: base + 4096 + 56,
            read_pointer_address: base + 4096 + 128,
            ring_size: 1024,
            gpu_id: BUILTIN_GPU_ID,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: 100,
            ..Default::default()
        };
        // SAFETY: ring and amd_queue_t lie in the registered, mapped arena (no packet), alive
        // until the device is dropped.
        unsafe { calls::create_queue(&*d, &mut q) }.unwrap();
        let qid = q.queue_id;
        let mut ids = [qid, 77];
        let mut sq = DbgTrapSuspendQueuesArgs {
            exception_mask: 0,
            queue_array_ptr: ids.as_mut_ptr() as u64,
            num_queues: 2,
            grace_period: 0,
        };
        // A new queue (EC_QUEUE_NEW pending) is not suspended.
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &mut sq), Ok(()));
        assert_eq!(
            ids,
            [
                qid | KFD_DBG_QUEUE_INVALID_MASK,
                77 | KFD_DBG_QUEUE_INVALID_MASK
            ]
        );
        assert!(!suspended(&d, qid));
        // The debugger reads the event, clearing EC_QUEUE_NEW.
        let mut ev = DbgTrapQueryDebugEventArgs {
            exception_mask: ec_mask(EC_QUEUE_NEW),
            ..Default::default()
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &mut ev),
            Ok(())
        );
        assert_eq!(
            (ev.exception_mask, ev.queue_id, ev.gpu_id),
            (ec_mask(EC_QUEUE_NEW), qid, BUILTIN_GPU_ID)
        );
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &mut ev),
            Err(Errno::AGAIN)
        );
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &mut sq), Ok(()));
        assert_eq!(ids, [qid, 77 | KFD_DBG_QUEUE_INVALID_MASK]);
        assert!(suspended(&d, qid));
        // An unreadable array.
        sq.queue_array_ptr = 0x10;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &mut sq),
            Err(Errno::FAULT)
        );
        // RESUME without an array: every queue.
        let mut rq = DbgTrapResumeQueuesArgs::default();
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &mut rq), Ok(()));
        assert!(!suspended(&d, qid));
        // Flags: precise memory operations are supported (capability bit 18); the previous
        // flags come back.
        let mut f = DbgTrapSetFlagsArgs { flags: 1, pad: 0 };
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_SET_FLAGS, &mut f), Ok(()));
        assert_eq!(f.flags, 0);
        let mut f = DbgTrapSetFlagsArgs { flags: 0, pad: 0 };
        assert_eq!(trap(&d, KFD_IOC_DBG_TRAP_SET_FLAGS, &mut f), Ok(()));
        assert_eq!(f.flags, 1);
        // No watch slot; an unknown GPU first.
        let mut aw = DbgTrapSetNodeAddressWatchArgs {
            address: 0x1000,
            mode: 3,
            mask: u32::MAX,
            gpu_id: BUILTIN_GPU_ID,
            id: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, &mut aw),
            Err(Errno::NOMEM)
        );
        aw.gpu_id = 0xdead;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, &mut aw),
            Err(Errno::NODEV)
        );
        let mut cw = DbgTrapClearNodeAddressWatchArgs {
            gpu_id: BUILTIN_GPU_ID,
            id: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH, &mut cw),
            Err(Errno::INVAL)
        );
        // Wave launch: no trap can be overridden, normal launch only.
        let mut o = DbgTrapSetWaveLaunchOverrideArgs {
            override_mode: 0,
            enable_mask: 0x80,
            support_request_mask: 0x80,
            pad: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, &mut o),
            Err(Errno::ACCESS)
        );
        assert_eq!((o.enable_mask, o.support_request_mask), (0x80, 0));
        o.override_mode = 1;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, &mut o),
            Err(Errno::INVAL)
        );
        let mut o = DbgTrapSetWaveLaunchOverrideArgs::default();
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, &mut o),
            Ok(())
        );
        let mut m = DbgTrapSetWaveLaunchModeArgs {
            launch_mode: 0,
            pad: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, &mut m),
            Ok(())
        );
        m.launch_mode = 1;
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, &mut m),
            Err(Errno::INVAL)
        );
        // Drain the pipe, then disable the runtime: it waits for the debugger.
        let mut b = [0u8; 64];
        let _ = rustix::io::read(&r, &mut b);
        let d2 = d.clone();
        let runtime = std::thread::spawn(move || {
            let mut re = RuntimeEnableArgs::default();
            // SAFETY: RUNTIME_ENABLE carries no pointer the device follows.
            unsafe { d2.ioctl(AMDKFD_IOC_RUNTIME_ENABLE, re.as_mut_bytes()) }
        });
        let mut info = KfdRuntimeInfo {
            r_debug: 9,
            runtime_state: 9,
            ttmp_setup: 9,
        };
        let mut qi = DbgTrapQueryExceptionInfoArgs {
            info_ptr: &mut info as *mut KfdRuntimeInfo as u64,
            info_size: 16,
            source_id: 0,
            exception_code: EC_PROCESS_RUNTIME,
            clear_exception: 1,
        };
        let t0 = std::time::Instant::now();
        while trap(&d, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &mut qi) == Err(Errno::NODATA) {
            assert!(
                t0.elapsed().as_secs() < 10,
                "EC_PROCESS_RUNTIME never raised"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(qi.info_size, 16);
        assert_eq!(info, KfdRuntimeInfo::default());
        assert_eq!(rustix::io::read(&r, &mut b), Ok(1));
        assert!(!runtime.is_finished());
        let mut ev = DbgTrapSendRuntimeEventArgs {
            exception_mask: ec_mask(EC_PROCESS_RUNTIME),
            gpu_id: 0,
            queue_id: 0,
        };
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &mut ev),
            Ok(())
        );
        assert_eq!(runtime.join().unwrap(), Ok(()));
        // The runtime is disabled: the wave ops are EPERM again.
        assert_eq!(
            trap(&d, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, &mut m),
            Err(Errno::PERM)
        );
        drop(d);
        drop(arena);
    }
}
