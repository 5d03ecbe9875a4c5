//! The amdkfd ioctl ABI: argument structs, request numbers, flags, mmap offsets.
//!
//! Source: linux `include/uapi/linux/kfd_ioctl.h`, interface version 1.11
//! (`KFD_IOCTL_MAJOR_VERSION` 1, `KFD_IOCTL_MINOR_VERSION` 11, the header installed at
//! `/usr/include/linux/kfd_ioctl.h`), plus `RUNTIME_ENABLE` from version 1.13 and the
//! `KFD_MMAP_*` encoding from the kernel-private `drivers/gpu/drm/amd/amdkfd/kfd_priv.h` (the same
//! values ROCT-Thunk-Interface and tinygrad use). Every struct is `#[repr(C)]` with the header's
//! field names and order, has zerocopy derives (so it is read from and written to ioctl buffers
//! without `unsafe`), and a compile-time size assertion; `tests/kfd_abi_c.rs` compares every size,
//! offset, request number and constant with a C program built against the header.
//!
//! Nothing here makes a system call.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `KFD_IOCTL_MAJOR_VERSION` of the header these definitions follow.
pub const KFD_IOCTL_MAJOR_VERSION: u32 = 1;
/// `KFD_IOCTL_MINOR_VERSION` of the header these definitions follow.
pub const KFD_IOCTL_MINOR_VERSION: u32 = 11;

// ---- _IOC encoding (include/uapi/asm-generic/ioctl.h; x86_64, aarch64 and riscv use it) ----

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes, the kernel reads.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes, user space reads.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`: bits 0..8 `nr`, 8..16 `type`, 16..30 `size` (bytes), 30..32 `dir`.
/// A `size` above the 14-bit field is a compile error where used in a const.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(
        size < (1 << 14),
        "ioctl argument size does not fit _IOC_SIZEBITS"
    );
    (dir << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32
}

/// `AMDKFD_IOCTL_BASE`, the ioctl type byte `'K'`.
pub const AMDKFD_IOCTL_BASE: u8 = b'K';

const fn iow<T>(nr: u8) -> u32 {
    ioc(IOC_WRITE, AMDKFD_IOCTL_BASE, nr, size_of::<T>())
}
const fn ior<T>(nr: u8) -> u32 {
    ioc(IOC_READ, AMDKFD_IOCTL_BASE, nr, size_of::<T>())
}
const fn iowr<T>(nr: u8) -> u32 {
    ioc(IOC_READ | IOC_WRITE, AMDKFD_IOCTL_BASE, nr, size_of::<T>())
}

macro_rules! abi_struct {
    ($(#[$m:meta])* $name:ident ($c:literal, $size:expr) { $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[doc = concat!("\n\nC: `struct ", $c, "` (", stringify!($size), " bytes).")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
        #[repr(C)]
        pub struct $name {
            $($(#[$fm])* pub $field: $ty,)*
        }
        const _: () = assert!(size_of::<$name>() == $size);
    };
}

abi_struct! {
    /// `GET_VERSION`: the interface version the kernel implements.
    GetVersionArgs("kfd_ioctl_get_version_args", 8) {
        /// From KFD.
        major_version: u32,
        /// From KFD.
        minor_version: u32,
    }
}

abi_struct! {
    /// `CREATE_QUEUE`: create a user-mode queue. (Headers from 1.16 append `sdma_engine_id` and
    /// `pad`; the kernel zero-fills a shorter argument, so this 1.11 layout stays valid.)
    CreateQueueArgs("kfd_ioctl_create_queue_args", 88) {
        /// To KFD: ring buffer address.
        ring_base_address: u64,
        /// To KFD: address of the write pointer (for AQL: `amd_queue_t.write_dispatch_id`).
        write_pointer_address: u64,
        /// To KFD: address of the read pointer (`amd_queue_t.read_dispatch_id`).
        read_pointer_address: u64,
        /// From KFD: mmap offset of the doorbell page (and the doorbell's offset within it).
        doorbell_offset: u64,
        /// To KFD: ring size, bytes.
        ring_size: u32,
        /// To KFD.
        gpu_id: u32,
        /// To KFD: `KFD_IOC_QUEUE_TYPE_*`.
        queue_type: u32,
        /// To KFD: 0..=100 ([`KFD_MAX_QUEUE_PERCENTAGE`]).
        queue_percentage: u32,
        /// To KFD: 0..=15 ([`KFD_MAX_QUEUE_PRIORITY`]).
        queue_priority: u32,
        /// From KFD.
        queue_id: u32,
        /// To KFD: end-of-pipe buffer address (gfx8+ AQL).
        eop_buffer_address: u64,
        /// To KFD: EOP buffer size, bytes.
        eop_buffer_size: u64,
        /// To KFD: context save/restore area address.
        ctx_save_restore_address: u64,
        /// To KFD: context save/restore area size, bytes.
        ctx_save_restore_size: u32,
        /// To KFD: control stack size, bytes.
        ctl_stack_size: u32,
    }
}

abi_struct! {
    /// `DESTROY_QUEUE`.
    DestroyQueueArgs("kfd_ioctl_destroy_queue_args", 8) {
        /// To KFD.
        queue_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `UPDATE_QUEUE`: change ring, size, percentage or priority of a queue.
    UpdateQueueArgs("kfd_ioctl_update_queue_args", 24) {
        /// To KFD.
        ring_base_address: u64,
        /// To KFD.
        queue_id: u32,
        /// To KFD: bytes.
        ring_size: u32,
        /// To KFD.
        queue_percentage: u32,
        /// To KFD.
        queue_priority: u32,
    }
}

abi_struct! {
    /// `SET_CU_MASK`: restrict a queue to a set of compute units.
    SetCuMaskArgs("kfd_ioctl_set_cu_mask_args", 16) {
        /// To KFD.
        queue_id: u32,
        /// To KFD: number of mask bits (a multiple of 32).
        num_cu_mask: u32,
        /// To KFD: user pointer to `num_cu_mask / 32` u32 words.
        cu_mask_ptr: u64,
    }
}

abi_struct! {
    /// `AVAILABLE_MEMORY`: VRAM still available to this process on a GPU.
    GetAvailableMemoryArgs("kfd_ioctl_get_available_memory_args", 16) {
        /// From KFD: bytes.
        available: u64,
        /// To KFD.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `IMPORT_DMABUF`: makes a dma-buf (of this or another process) a buffer object of this
    /// process at `va_addr` on `gpu_id`, the dma-buf's whole size.
    ImportDmabufArgs("kfd_ioctl_import_dmabuf_args", 24) {
        /// To KFD: the device address, page-aligned.
        va_addr: u64,
        /// From KFD: the new buffer object's handle.
        handle: u64,
        /// To KFD.
        gpu_id: u32,
        /// To KFD: the dma-buf's file descriptor in this process.
        dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `EXPORT_DMABUF` (interface 1.12+): a dma-buf file descriptor for a buffer object.
    ExportDmabufArgs("kfd_ioctl_export_dmabuf_args", 16) {
        /// To KFD: the buffer object's handle.
        handle: u64,
        /// To KFD: the new descriptor's `O_*` flags (`O_CLOEXEC`, `O_RDWR`).
        flags: u32,
        /// From KFD: the new descriptor, which the caller owns.
        dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `GET_DMABUF_INFO`: what a dma-buf of an amdgpu buffer object is (interface 1.2+;
    /// `kfd_ioctl_get_dmabuf_info`).
    GetDmabufInfoArgs("kfd_ioctl_get_dmabuf_info_args", 32) {
        /// From KFD: the buffer object's size, bytes.
        size: u64,
        /// To KFD: where to copy the buffer object's metadata (0: not copied).
        metadata_ptr: u64,
        /// To KFD: bytes at `metadata_ptr`; from KFD: the metadata's size, bytes.
        metadata_size: u32,
        /// From KFD: the GPU the buffer object belongs to.
        gpu_id: u32,
        /// From KFD: `KFD_IOC_ALLOC_MEM_FLAGS_VRAM` or `_GTT`, with `_PUBLIC` for CPU-visible
        /// VRAM.
        flags: u32,
        /// To KFD: the dma-buf's descriptor.
        dmabuf_fd: u32,
    }
}

abi_struct! {
    /// `GET_QUEUE_WAVE_STATE`: the control stack and save-area use of an inactive compute
    /// queue's context save (interface 1.1+; `kfd_ioctl_get_queue_wave_state`).
    GetQueueWaveStateArgs("kfd_ioctl_get_queue_wave_state_args", 24) {
        /// To KFD: where to copy the queue's control stack.
        ctl_stack_address: u64,
        /// From KFD: bytes of the control stack in use.
        ctl_stack_used_size: u32,
        /// From KFD: bytes of the wave save area in use.
        save_area_used_size: u32,
        /// To KFD: the queue.
        queue_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `ALLOC_QUEUE_GWS`: gives a queue the GPU's global wave sync resources, or takes them
    /// back with `num_gws` 0 (interface 1.2+; `kfd_ioctl_alloc_queue_gws`).
    AllocQueueGwsArgs("kfd_ioctl_alloc_queue_gws_args", 16) {
        /// To KFD: the queue.
        queue_id: u32,
        /// To KFD: 0 takes the queue's GWS back; any other value gives it the GPU's.
        num_gws: u32,
        /// From KFD: the first GWS entry given (always 0).
        first_gws: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `SMI_EVENTS`: opens a descriptor that delivers a GPU's system-management events
    /// (interface 1.3+; `kfd_ioctl_smi_events`).
    SmiEventsArgs("kfd_ioctl_smi_events_args", 8) {
        /// To KFD: the GPU.
        gpuid: u32,
        /// From KFD: the new descriptor, which the caller owns.
        anon_fd: u32,
    }
}

abi_struct! {
    /// `CRIU_OP`: a checkpoint/restore operation (interface 1.7+; `kfd_ioctl_criu`), only for
    /// a process with `CAP_CHECKPOINT_RESTORE` or `CAP_SYS_ADMIN`.
    CriuArgs("kfd_ioctl_criu_args", 56) {
        /// Devices array (CHECKPOINT, RESTORE).
        devices: u64,
        /// Buffer-object array (CHECKPOINT, RESTORE).
        bos: u64,
        /// Private data (CHECKPOINT, RESTORE).
        priv_data: u64,
        /// Bytes of private data.
        priv_data_size: u64,
        /// Number of GPUs.
        num_devices: u32,
        /// Number of buffer objects.
        num_bos: u32,
        /// Number of other objects.
        num_objects: u32,
        /// The process checkpointed.
        pid: u32,
        /// `KFD_CRIU_OP_*`.
        op: u32,
        /// Padding to the struct's 8-byte alignment.
        pad: u32,
    }
}

abi_struct! {
    /// `DBG_REGISTER_DEPRECATED` and `DBG_UNREGISTER_DEPRECATED`: the first debugger
    /// interface, removed in Linux 6.2 (amdkfd answers `EPERM`).
    DbgRegisterArgs("kfd_ioctl_dbg_register_args", 8) {
        /// To KFD.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `DBG_ADDRESS_WATCH_DEPRECATED` and `DBG_WAVE_CONTROL_DEPRECATED`: the first debugger
    /// interface, removed in Linux 6.2 (amdkfd answers `EPERM`).
    DbgContentArgs("kfd_ioctl_dbg_address_watch_args", 16) {
        /// To KFD: the request's content.
        content_ptr: u64,
        /// To KFD.
        gpu_id: u32,
        /// To KFD: bytes of content.
        buf_size_in_bytes: u32,
    }
}

abi_struct! {
    /// `SET_MEMORY_POLICY`: default and alternate-aperture cache policy.
    SetMemoryPolicyArgs("kfd_ioctl_set_memory_policy_args", 32) {
        /// To KFD.
        alternate_aperture_base: u64,
        /// To KFD: bytes.
        alternate_aperture_size: u64,
        /// To KFD.
        gpu_id: u32,
        /// To KFD: `KFD_IOC_CACHE_POLICY_*`.
        default_policy: u32,
        /// To KFD: `KFD_IOC_CACHE_POLICY_*`.
        alternate_policy: u32,
        /// Padding (`misc_process_flag` in newer headers).
        pad: u32,
    }
}

abi_struct! {
    /// `GET_CLOCK_COUNTERS`: GPU and CPU timestamps taken together.
    GetClockCountersArgs("kfd_ioctl_get_clock_counters_args", 40) {
        /// From KFD: GPU clock counter.
        gpu_clock_counter: u64,
        /// From KFD: CPU clock counter (TSC).
        cpu_clock_counter: u64,
        /// From KFD: system clock (CLOCK_BOOTTIME), ns.
        system_clock_counter: u64,
        /// From KFD: system clock frequency, Hz.
        system_clock_freq: u64,
        /// To KFD.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// One GPU's apertures, as `GET_PROCESS_APERTURES_NEW` fills an array of them.
    ProcessDeviceApertures("kfd_process_device_apertures", 56) {
        /// From KFD.
        lds_base: u64,
        /// From KFD.
        lds_limit: u64,
        /// From KFD.
        scratch_base: u64,
        /// From KFD.
        scratch_limit: u64,
        /// From KFD.
        gpuvm_base: u64,
        /// From KFD.
        gpuvm_limit: u64,
        /// From KFD.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

/// `NUM_OF_SUPPORTED_GPUS`: the entries of [`GetProcessAperturesArgs`].
pub const NUM_OF_SUPPORTED_GPUS: usize = 7;

abi_struct! {
    /// `GET_PROCESS_APERTURES` (deprecated for `GET_PROCESS_APERTURES_NEW`): the apertures of
    /// at most [`NUM_OF_SUPPORTED_GPUS`] GPUs of the process.
    GetProcessAperturesArgs("kfd_ioctl_get_process_apertures_args", 400) {
        /// From KFD: the first `num_of_nodes` entries.
        process_apertures: [ProcessDeviceApertures; NUM_OF_SUPPORTED_GPUS],
        /// From KFD: entries filled.
        num_of_nodes: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `GET_PROCESS_APERTURES_NEW`.
    GetProcessAperturesNewArgs("kfd_ioctl_get_process_apertures_new_args", 16) {
        /// To KFD: user pointer to an array of [`ProcessDeviceApertures`].
        kfd_process_device_apertures_ptr: u64,
        /// To KFD: array length; from KFD: entries filled.
        num_of_nodes: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `CREATE_EVENT`.
    CreateEventArgs("kfd_ioctl_create_event_args", 32) {
        /// From KFD: mmap offset of the event page (signal events).
        event_page_offset: u64,
        /// From KFD: signal events only.
        event_trigger_data: u32,
        /// To KFD: `KFD_IOC_EVENT_*`.
        event_type: u32,
        /// To KFD: non-zero for auto-reset.
        auto_reset: u32,
        /// To KFD: only for some event types.
        node_id: u32,
        /// From KFD.
        event_id: u32,
        /// From KFD: the event's slot in the event page.
        event_slot_index: u32,
    }
}

abi_struct! {
    /// `DESTROY_EVENT`.
    DestroyEventArgs("kfd_ioctl_destroy_event_args", 8) {
        /// To KFD.
        event_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `SET_EVENT`.
    SetEventArgs("kfd_ioctl_set_event_args", 8) {
        /// To KFD.
        event_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `RESET_EVENT`.
    ResetEventArgs("kfd_ioctl_reset_event_args", 8) {
        /// To KFD.
        event_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// Why a memory access faulted.
    MemoryExceptionFailure("kfd_memory_exception_failure", 16) {
        /// Page not present or supervisor privilege.
        not_present: u32,
        /// Write to a read-only page.
        read_only: u32,
        /// Execute of a non-executable page.
        no_execute: u32,
        /// The exact fault address is unknown.
        imprecise: u32,
    }
}

abi_struct! {
    /// Memory exception data of a `KFD_IOC_EVENT_MEMORY` event.
    HsaMemoryExceptionData("kfd_hsa_memory_exception_data", 32) {
        /// What kind of fault.
        failure: MemoryExceptionFailure,
        /// Faulting virtual address.
        va: u64,
        /// The GPU.
        gpu_id: u32,
        /// `KFD_MEM_ERR_*` (C name `ErrorType`).
        error_type: u32,
    }
}

abi_struct! {
    /// Hardware exception data of a `KFD_IOC_EVENT_HW_EXCEPTION` event.
    HsaHwExceptionData("kfd_hsa_hw_exception_data", 16) {
        /// `KFD_HW_EXCEPTION_WHOLE_GPU_RESET` or `_PER_ENGINE_RESET`.
        reset_type: u32,
        /// `KFD_HW_EXCEPTION_GPU_HANG` or `_ECC`.
        reset_cause: u32,
        /// Non-zero when VRAM contents were lost.
        memory_lost: u32,
        /// The GPU.
        gpu_id: u32,
    }
}

abi_struct! {
    /// One entry of the `WAIT_EVENTS` array. The C struct starts with an anonymous union of
    /// [`HsaMemoryExceptionData`] and [`HsaHwExceptionData`] (32 bytes, from KFD); it is held
    /// here as bytes, read with [`EventData::memory_exception`] / [`EventData::hw_exception`].
    EventData("kfd_event_data", 48) {
        /// The union, bytes (from KFD).
        union_data: [u8; 32],
        /// Pointer to an extension structure (0).
        kfd_event_data_ext: u64,
        /// To KFD.
        event_id: u32,
        /// Padding.
        pad: u32,
    }
}

impl EventData {
    /// The union read as memory exception data.
    pub fn memory_exception(&self) -> HsaMemoryExceptionData {
        HsaMemoryExceptionData::read_from_bytes(&self.union_data[..]).unwrap_or_default()
    }

    /// The union read as hardware exception data (its first 16 bytes).
    pub fn hw_exception(&self) -> HsaHwExceptionData {
        HsaHwExceptionData::read_from_prefix(&self.union_data[..])
            .map(|(d, _)| d)
            .unwrap_or_default()
    }
}

abi_struct! {
    /// `WAIT_EVENTS`.
    WaitEventsArgs("kfd_ioctl_wait_events_args", 24) {
        /// To KFD: user pointer to an array of [`EventData`].
        events_ptr: u64,
        /// To KFD.
        num_events: u32,
        /// To KFD: non-zero to wait for all.
        wait_for_all: u32,
        /// To KFD: ms (`0xffffffff` forever).
        timeout: u32,
        /// From KFD: `KFD_IOC_WAIT_RESULT_*`.
        wait_result: u32,
    }
}

abi_struct! {
    /// `SET_SCRATCH_BACKING_VA` (pre-gfx9 scratch).
    SetScratchBackingVaArgs("kfd_ioctl_set_scratch_backing_va_args", 16) {
        /// To KFD.
        va_addr: u64,
        /// To KFD.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

abi_struct! {
    /// `ACQUIRE_VM`: adopt the GPU VM of a DRM render node file.
    AcquireVmArgs("kfd_ioctl_acquire_vm_args", 8) {
        /// To KFD: file descriptor of `/dev/dri/renderD<N>`.
        drm_fd: u32,
        /// To KFD.
        gpu_id: u32,
    }
}

abi_struct! {
    /// `ALLOC_MEMORY_OF_GPU`.
    AllocMemoryOfGpuArgs("kfd_ioctl_alloc_memory_of_gpu_args", 40) {
        /// To KFD: GPU virtual address.
        va_addr: u64,
        /// To KFD: bytes.
        size: u64,
        /// From KFD.
        handle: u64,
        /// To KFD (userptr: the CPU address); from KFD (the mmap offset).
        mmap_offset: u64,
        /// To KFD.
        gpu_id: u32,
        /// To KFD: `KFD_IOC_ALLOC_MEM_FLAGS_*`.
        flags: u32,
    }
}

abi_struct! {
    /// `FREE_MEMORY_OF_GPU`.
    FreeMemoryOfGpuArgs("kfd_ioctl_free_memory_of_gpu_args", 8) {
        /// To KFD.
        handle: u64,
    }
}

abi_struct! {
    /// `MAP_MEMORY_TO_GPU`.
    MapMemoryToGpuArgs("kfd_ioctl_map_memory_to_gpu_args", 24) {
        /// To KFD.
        handle: u64,
        /// To KFD: user pointer to `n_devices` u32 gpu ids.
        device_ids_array_ptr: u64,
        /// To KFD.
        n_devices: u32,
        /// To/from KFD: devices already mapped (0 on the first call).
        n_success: u32,
    }
}

abi_struct! {
    /// `UNMAP_MEMORY_FROM_GPU`.
    UnmapMemoryFromGpuArgs("kfd_ioctl_unmap_memory_from_gpu_args", 24) {
        /// To KFD.
        handle: u64,
        /// To KFD: user pointer to `n_devices` u32 gpu ids.
        device_ids_array_ptr: u64,
        /// To KFD.
        n_devices: u32,
        /// To/from KFD.
        n_success: u32,
    }
}

abi_struct! {
    /// `SET_XNACK_MODE`: query (`-1`) or set XNACK for the process.
    SetXnackModeArgs("kfd_ioctl_set_xnack_mode_args", 4) {
        /// To KFD: -1 to query, 0 off, 1 on; from KFD: the mode.
        xnack_enabled: i32,
    }
}

abi_struct! {
    /// One attribute of an `AMDKFD_IOC_SVM` request (`struct kfd_ioctl_svm_attribute`).
    SvmAttribute("kfd_ioctl_svm_attribute", 8) {
        /// `KFD_IOCTL_SVM_ATTR_*`.
        type_: u32,
        /// A gpu_id, a location, flags or a granularity (log2 of pages), by `type_`.
        value: u32,
    }
}

abi_struct! {
    /// `AMDKFD_IOC_SVM` (interface 1.5+): the fixed head of the argument; `nattr`
    /// [`SvmAttribute`]s follow it in the same buffer, and the caller puts their size into the
    /// request's `_IOC_SIZE` (libhsakmt: `AMDKFD_IOC_SVM + (s_attr << _IOC_SIZESHIFT)`).
    SvmArgs("kfd_ioctl_svm_args", 24) {
        /// To KFD: first byte of the range (page-aligned, non-zero).
        start_addr: u64,
        /// To KFD: length, bytes (page-aligned, non-zero).
        size: u64,
        /// To KFD: `KFD_IOCTL_SVM_OP_SET_ATTR` or `KFD_IOCTL_SVM_OP_GET_ATTR`.
        op: u32,
        /// To KFD: number of attributes after the head.
        nattr: u32,
    }
}

abi_struct! {
    /// `RUNTIME_ENABLE` (interface 1.13+; absent from 1.11 headers).
    RuntimeEnableArgs("kfd_ioctl_runtime_enable_args", 16) {
        /// To KFD: pointer to the `r_debug` shared with a debugger (0 when none).
        r_debug: u64,
        /// To KFD: `KFD_RUNTIME_ENABLE_MODE_*`.
        mode_mask: u32,
        /// From KFD.
        capabilities_mask: u32,
    }
}

abi_struct! {
    /// `GET_TILE_CONFIG`: the GPU's tiling registers, which ROCR's image manager reads at
    /// start (through `hsaKmtGetTileConfig`) to set up its address library.
    GetTileConfigArgs("kfd_ioctl_get_tile_config_args", 40) {
        /// To KFD: where the tile-mode array goes (user address).
        tile_config_ptr: u64,
        /// To KFD: where the macro-tile-mode array goes (user address).
        macro_tile_config_ptr: u64,
        /// To KFD: entries the caller's tile-mode array holds; from KFD: entries written.
        num_tile_configs: u32,
        /// To KFD: entries the caller's macro-tile array holds; from KFD: entries written.
        num_macro_tile_configs: u32,
        /// To KFD: the GPU.
        gpu_id: u32,
        /// From KFD: the `GB_ADDR_CONFIG` register.
        gb_addr_config: u32,
        /// From KFD: memory banks (`MC_ARB_RAMCFG.NOOFBANK`).
        num_banks: u32,
        /// From KFD: memory ranks (`MC_ARB_RAMCFG.NOOFRANKS`).
        num_ranks: u32,
    }
}

abi_struct! {
    /// `SET_TRAP_HANDLER`: the process's trap handler on one GPU.
    SetTrapHandlerArgs("kfd_ioctl_set_trap_handler_args", 24) {
        /// To KFD: the trap handler's code (TBA), a GPU address.
        tba_addr: u64,
        /// To KFD: the trap handler's memory (TMA), a GPU address.
        tma_addr: u64,
        /// To KFD: the GPU.
        gpu_id: u32,
        /// Padding.
        pad: u32,
    }
}

// ---- request numbers ----

/// `AMDKFD_IOC_GET_VERSION`: `_IOR('K', 0x01, ...)`.
pub const AMDKFD_IOC_GET_VERSION: u32 = ior::<GetVersionArgs>(0x01);
/// `AMDKFD_IOC_CREATE_QUEUE`: `_IOWR('K', 0x02, ...)`.
pub const AMDKFD_IOC_CREATE_QUEUE: u32 = iowr::<CreateQueueArgs>(0x02);
/// `AMDKFD_IOC_DESTROY_QUEUE`: `_IOWR('K', 0x03, ...)`.
pub const AMDKFD_IOC_DESTROY_QUEUE: u32 = iowr::<DestroyQueueArgs>(0x03);
/// `AMDKFD_IOC_SET_MEMORY_POLICY`: `_IOW('K', 0x04, ...)`.
pub const AMDKFD_IOC_SET_MEMORY_POLICY: u32 = iow::<SetMemoryPolicyArgs>(0x04);
/// `AMDKFD_IOC_GET_CLOCK_COUNTERS`: `_IOWR('K', 0x05, ...)`.
pub const AMDKFD_IOC_GET_CLOCK_COUNTERS: u32 = iowr::<GetClockCountersArgs>(0x05);
/// `AMDKFD_IOC_UPDATE_QUEUE`: `_IOW('K', 0x07, ...)`.
pub const AMDKFD_IOC_UPDATE_QUEUE: u32 = iow::<UpdateQueueArgs>(0x07);
/// `AMDKFD_IOC_CREATE_EVENT`: `_IOWR('K', 0x08, ...)`.
pub const AMDKFD_IOC_CREATE_EVENT: u32 = iowr::<CreateEventArgs>(0x08);
/// `AMDKFD_IOC_DESTROY_EVENT`: `_IOW('K', 0x09, ...)`.
pub const AMDKFD_IOC_DESTROY_EVENT: u32 = iow::<DestroyEventArgs>(0x09);
/// `AMDKFD_IOC_SET_EVENT`: `_IOW('K', 0x0A, ...)`.
pub const AMDKFD_IOC_SET_EVENT: u32 = iow::<SetEventArgs>(0x0A);
/// `AMDKFD_IOC_RESET_EVENT`: `_IOW('K', 0x0B, ...)`.
pub const AMDKFD_IOC_RESET_EVENT: u32 = iow::<ResetEventArgs>(0x0B);
/// `AMDKFD_IOC_WAIT_EVENTS`: `_IOWR('K', 0x0C, ...)`.
pub const AMDKFD_IOC_WAIT_EVENTS: u32 = iowr::<WaitEventsArgs>(0x0C);
/// `AMDKFD_IOC_SET_SCRATCH_BACKING_VA`: `_IOWR('K', 0x11, ...)`.
pub const AMDKFD_IOC_SET_SCRATCH_BACKING_VA: u32 = iowr::<SetScratchBackingVaArgs>(0x11);
/// `AMDKFD_IOC_GET_TILE_CONFIG`: `_IOWR('K', 0x12, ...)`.
pub const AMDKFD_IOC_GET_TILE_CONFIG: u32 = iowr::<GetTileConfigArgs>(0x12);
/// `AMDKFD_IOC_SET_TRAP_HANDLER`: `_IOW('K', 0x13, ...)`.
pub const AMDKFD_IOC_SET_TRAP_HANDLER: u32 = iow::<SetTrapHandlerArgs>(0x13);
/// `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`: `_IOWR('K', 0x14, ...)`.
pub const AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: u32 = iowr::<GetProcessAperturesNewArgs>(0x14);
/// `AMDKFD_IOC_ACQUIRE_VM`: `_IOW('K', 0x15, ...)`.
pub const AMDKFD_IOC_ACQUIRE_VM: u32 = iow::<AcquireVmArgs>(0x15);
/// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`: `_IOWR('K', 0x16, ...)`.
pub const AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: u32 = iowr::<AllocMemoryOfGpuArgs>(0x16);
/// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`: `_IOW('K', 0x17, ...)`.
pub const AMDKFD_IOC_FREE_MEMORY_OF_GPU: u32 = iow::<FreeMemoryOfGpuArgs>(0x17);
/// `AMDKFD_IOC_MAP_MEMORY_TO_GPU`: `_IOWR('K', 0x18, ...)`.
pub const AMDKFD_IOC_MAP_MEMORY_TO_GPU: u32 = iowr::<MapMemoryToGpuArgs>(0x18);
/// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`: `_IOWR('K', 0x19, ...)`.
pub const AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: u32 = iowr::<UnmapMemoryFromGpuArgs>(0x19);
/// `AMDKFD_IOC_SET_CU_MASK`: `_IOW('K', 0x1A, ...)`.
pub const AMDKFD_IOC_SET_CU_MASK: u32 = iow::<SetCuMaskArgs>(0x1A);
/// `AMDKFD_IOC_SET_XNACK_MODE`: `_IOWR('K', 0x21, ...)`.
pub const AMDKFD_IOC_SET_XNACK_MODE: u32 = iowr::<SetXnackModeArgs>(0x21);
/// `AMDKFD_IOC_AVAILABLE_MEMORY`: `_IOWR('K', 0x23, ...)`.
pub const AMDKFD_IOC_AVAILABLE_MEMORY: u32 = iowr::<GetAvailableMemoryArgs>(0x23);
/// `AMDKFD_IOC_IMPORT_DMABUF`: `_IOWR('K', 0x1D, ...)`.
pub const AMDKFD_IOC_IMPORT_DMABUF: u32 = iowr::<ImportDmabufArgs>(0x1D);
/// `AMDKFD_IOC_EXPORT_DMABUF`: `_IOWR('K', 0x24, ...)` (interface 1.12+; absent from 1.11
/// headers).
pub const AMDKFD_IOC_EXPORT_DMABUF: u32 = iowr::<ExportDmabufArgs>(0x24);
/// `AMDKFD_IOC_GET_PROCESS_APERTURES`: `_IOR('K', 0x06, ...)`.
pub const AMDKFD_IOC_GET_PROCESS_APERTURES: u32 = ior::<GetProcessAperturesArgs>(0x06);
/// `AMDKFD_IOC_DBG_REGISTER_DEPRECATED`: `_IOW('K', 0x0D, ...)`.
pub const AMDKFD_IOC_DBG_REGISTER_DEPRECATED: u32 = iow::<DbgRegisterArgs>(0x0D);
/// `AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED`: `_IOW('K', 0x0E, ...)`.
pub const AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED: u32 = iow::<DbgRegisterArgs>(0x0E);
/// `AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED`: `_IOW('K', 0x0F, ...)`.
pub const AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED: u32 = iow::<DbgContentArgs>(0x0F);
/// `AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED`: `_IOW('K', 0x10, ...)`.
pub const AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED: u32 = iow::<DbgContentArgs>(0x10);
/// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`: `_IOWR('K', 0x1B, ...)`.
pub const AMDKFD_IOC_GET_QUEUE_WAVE_STATE: u32 = iowr::<GetQueueWaveStateArgs>(0x1B);
/// `AMDKFD_IOC_GET_DMABUF_INFO`: `_IOWR('K', 0x1C, ...)`.
pub const AMDKFD_IOC_GET_DMABUF_INFO: u32 = iowr::<GetDmabufInfoArgs>(0x1C);
/// `AMDKFD_IOC_ALLOC_QUEUE_GWS`: `_IOWR('K', 0x1E, ...)`.
pub const AMDKFD_IOC_ALLOC_QUEUE_GWS: u32 = iowr::<AllocQueueGwsArgs>(0x1E);
/// `AMDKFD_IOC_SMI_EVENTS`: `_IOWR('K', 0x1F, ...)`.
pub const AMDKFD_IOC_SMI_EVENTS: u32 = iowr::<SmiEventsArgs>(0x1F);
/// `AMDKFD_IOC_CRIU_OP`: `_IOWR('K', 0x22, ...)`.
pub const AMDKFD_IOC_CRIU_OP: u32 = iowr::<CriuArgs>(0x22);
/// `AMDKFD_IOC_SVM`: `_IOWR('K', 0x20, ...)` of the fixed head ([`SvmArgs`]); callers add
/// the attributes' size to `_IOC_SIZE`.
pub const AMDKFD_IOC_SVM: u32 = iowr::<SvmArgs>(0x20);
/// `AMDKFD_IOC_RUNTIME_ENABLE`: `_IOWR('K', 0x25, ...)` (interface 1.13+).
pub const AMDKFD_IOC_RUNTIME_ENABLE: u32 = iowr::<RuntimeEnableArgs>(0x25);

// ---- flags and constants ----

/// `KFD_IOCTL_SVM_OP_SET_ATTR`: modify attributes of a range.
pub const KFD_IOCTL_SVM_OP_SET_ATTR: u32 = 0;
/// `KFD_IOCTL_SVM_OP_GET_ATTR`: query attributes of a range.
pub const KFD_IOCTL_SVM_OP_GET_ATTR: u32 = 1;
/// `KFD_IOCTL_SVM_LOCATION_SYSMEM`: system memory as a location.
pub const KFD_IOCTL_SVM_LOCATION_SYSMEM: u32 = 0;
/// `KFD_IOCTL_SVM_LOCATION_UNDEFINED`: no location.
pub const KFD_IOCTL_SVM_LOCATION_UNDEFINED: u32 = 0xffff_ffff;
/// `KFD_IOCTL_SVM_ATTR_PREFERRED_LOC`: gpu_id of the preferred location (or a location).
pub const KFD_IOCTL_SVM_ATTR_PREFERRED_LOC: u32 = 0;
/// `KFD_IOCTL_SVM_ATTR_PREFETCH_LOC`: gpu_id to prefetch to (or system memory).
pub const KFD_IOCTL_SVM_ATTR_PREFETCH_LOC: u32 = 1;
/// `KFD_IOCTL_SVM_ATTR_ACCESS`: the GPU (value) may access the range.
pub const KFD_IOCTL_SVM_ATTR_ACCESS: u32 = 2;
/// `KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE`: the GPU may access it where it is, no migration.
pub const KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE: u32 = 3;
/// `KFD_IOCTL_SVM_ATTR_NO_ACCESS`: the GPU may not access it.
pub const KFD_IOCTL_SVM_ATTR_NO_ACCESS: u32 = 4;
/// `KFD_IOCTL_SVM_ATTR_SET_FLAGS`: `KFD_IOCTL_SVM_FLAG_*` to set.
pub const KFD_IOCTL_SVM_ATTR_SET_FLAGS: u32 = 5;
/// `KFD_IOCTL_SVM_ATTR_CLR_FLAGS`: `KFD_IOCTL_SVM_FLAG_*` to clear.
pub const KFD_IOCTL_SVM_ATTR_CLR_FLAGS: u32 = 6;
/// `KFD_IOCTL_SVM_ATTR_GRANULARITY`: migration granularity, log2 of pages.
pub const KFD_IOCTL_SVM_ATTR_GRANULARITY: u32 = 7;
/// `KFD_IOCTL_SVM_FLAG_HOST_ACCESS`: the host may access the range.
pub const KFD_IOCTL_SVM_FLAG_HOST_ACCESS: u32 = 0x1;
/// `KFD_IOCTL_SVM_FLAG_COHERENT`: fine-grained coherence.
pub const KFD_IOCTL_SVM_FLAG_COHERENT: u32 = 0x2;
/// `KFD_IOCTL_SVM_FLAG_GPU_EXEC`: the GPU may execute code from it.
pub const KFD_IOCTL_SVM_FLAG_GPU_EXEC: u32 = 0x10;
/// `KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED` (interface 1.11+): kept mapped on the GPU.
pub const KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED: u32 = 0x40;

/// Queue type: PM4 compute.
pub const KFD_IOC_QUEUE_TYPE_COMPUTE: u32 = 0x0;
/// Queue type: SDMA.
pub const KFD_IOC_QUEUE_TYPE_SDMA: u32 = 0x1;
/// Queue type: AQL compute (what HSA queues are).
pub const KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: u32 = 0x2;
/// Queue type: SDMA on an XGMI engine.
pub const KFD_IOC_QUEUE_TYPE_SDMA_XGMI: u32 = 0x3;
/// Largest `queue_percentage`.
pub const KFD_MAX_QUEUE_PERCENTAGE: u32 = 100;
/// Largest `queue_priority`.
pub const KFD_MAX_QUEUE_PRIORITY: u32 = 15;
/// Smallest ring, bytes.
pub const KFD_MIN_QUEUE_RING_SIZE: u32 = 1024;

/// Cache policy: coherent.
pub const KFD_IOC_CACHE_POLICY_COHERENT: u32 = 0;
/// Cache policy: non-coherent.
pub const KFD_IOC_CACHE_POLICY_NONCOHERENT: u32 = 1;

/// Event type: signal (what HSA interrupt signals use).
pub const KFD_IOC_EVENT_SIGNAL: u32 = 0;
/// Event type: node change.
pub const KFD_IOC_EVENT_NODECHANGE: u32 = 1;
/// Event type: device state change.
pub const KFD_IOC_EVENT_DEVICESTATECHANGE: u32 = 2;
/// Event type: hardware exception (GPU reset).
pub const KFD_IOC_EVENT_HW_EXCEPTION: u32 = 3;
/// Event type: system event.
pub const KFD_IOC_EVENT_SYSTEM_EVENT: u32 = 4;
/// Event type: debug event.
pub const KFD_IOC_EVENT_DEBUG_EVENT: u32 = 5;
/// Event type: profile event.
pub const KFD_IOC_EVENT_PROFILE_EVENT: u32 = 6;
/// Event type: queue event.
pub const KFD_IOC_EVENT_QUEUE_EVENT: u32 = 7;
/// Event type: memory fault.
pub const KFD_IOC_EVENT_MEMORY: u32 = 8;
/// Wait result: an event fired.
pub const KFD_IOC_WAIT_RESULT_COMPLETE: u32 = 0;
/// Wait result: timed out.
pub const KFD_IOC_WAIT_RESULT_TIMEOUT: u32 = 1;
/// Wait result: failed.
pub const KFD_IOC_WAIT_RESULT_FAIL: u32 = 2;
/// Most signal events a process may have (slots in the event page).
pub const KFD_SIGNAL_EVENT_LIMIT: u32 = 4096;
/// `kfd_hsa_hw_exception_data.reset_type`: the whole GPU was reset.
pub const KFD_HW_EXCEPTION_WHOLE_GPU_RESET: u32 = 0;
/// `kfd_hsa_hw_exception_data.reset_type`: one engine was reset.
pub const KFD_HW_EXCEPTION_PER_ENGINE_RESET: u32 = 1;
/// `kfd_hsa_hw_exception_data.reset_cause`: the GPU hung.
pub const KFD_HW_EXCEPTION_GPU_HANG: u32 = 0;
/// `kfd_hsa_hw_exception_data.reset_cause`: an uncorrectable ECC error.
pub const KFD_HW_EXCEPTION_ECC: u32 = 1;
/// `kfd_hsa_memory_exception_data.ErrorType`: no RAS error (a plain page fault).
pub const KFD_MEM_ERR_NO_RAS: u32 = 0;
/// `kfd_hsa_memory_exception_data.ErrorType`: SRAM ECC error.
pub const KFD_MEM_ERR_SRAM_ECC: u32 = 1;
/// `kfd_hsa_memory_exception_data.ErrorType`: poison consumed.
pub const KFD_MEM_ERR_POISON_CONSUMED: u32 = 2;
/// `kfd_hsa_memory_exception_data.ErrorType`: a GPU hang not attributable to a cause.
pub const KFD_MEM_ERR_GPU_HANG: u32 = 3;

/// Memory type: device VRAM.
pub const KFD_IOC_ALLOC_MEM_FLAGS_VRAM: u32 = 1 << 0;
/// Memory type: GTT (system memory the GPU maps).
pub const KFD_IOC_ALLOC_MEM_FLAGS_GTT: u32 = 1 << 1;
/// Memory type: user pointer (`mmap_offset` holds the CPU address).
pub const KFD_IOC_ALLOC_MEM_FLAGS_USERPTR: u32 = 1 << 2;
/// Memory type: the doorbell page.
pub const KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL: u32 = 1 << 3;
/// Memory type: the MMIO remap page (HDP flush).
pub const KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP: u32 = 1 << 4;
/// Attribute: writable.
pub const KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE: u32 = 1 << 31;
/// Attribute: executable.
pub const KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE: u32 = 1 << 30;
/// Attribute: host-visible VRAM.
pub const KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC: u32 = 1 << 29;
/// Attribute: do not substitute another memory type.
pub const KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE: u32 = 1 << 28;
/// Attribute: AQL queue memory (double-mapped ring).
pub const KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM: u32 = 1 << 27;
/// Attribute: coherent (fine-grained).
pub const KFD_IOC_ALLOC_MEM_FLAGS_COHERENT: u32 = 1 << 26;
/// Attribute: uncached.
pub const KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED: u32 = 1 << 25;
/// Attribute: physically contiguous VRAM, best effort (interface 1.16; named
/// `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS` in later headers; newer than Debian 12's).
pub const KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT: u32 = 1 << 23;

/// `RUNTIME_ENABLE` mode: enable the runtime (for debugging), otherwise disable.
pub const KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK: u32 = 1;
/// `RUNTIME_ENABLE` mode: set up trap temporaries (ttmp) save.
pub const KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK: u32 = 2;

/// `enum kfd_dbg_trap_exception_code` (kfd_ioctl.h 1.13+): the exceptions amdkfd reports to a
/// debugger, or, for a process whose runtime is enabled and no debugger is attached, to the
/// runtime (`kfd_send_exception_to_runtime`: ORed into the 64-bit error reason the queue's
/// context-save-area header points at, then its error event set). A wave aborted.
pub const EC_QUEUE_WAVE_ABORT: u32 = 1;
/// Exception code: a wave trapped (`s_trap`).
pub const EC_QUEUE_WAVE_TRAP: u32 = 2;
/// Exception code: a wave raised a floating-point exception.
pub const EC_QUEUE_WAVE_MATH_ERROR: u32 = 3;
/// Exception code: a wave met an illegal instruction.
pub const EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION: u32 = 4;
/// Exception code: a wave violated memory (a fault the trap handler saw).
pub const EC_QUEUE_WAVE_MEMORY_VIOLATION: u32 = 5;
/// Exception code: a wave's address was outside every aperture.
pub const EC_QUEUE_WAVE_APERTURE_VIOLATION: u32 = 6;
/// Exception code: the CP refused a dispatch's grid or work-group dimensions.
pub const EC_QUEUE_PACKET_DISPATCH_DIM_INVALID: u32 = 16;
/// Exception code: the CP refused a dispatch's group segment size.
pub const EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID: u32 = 17;
/// Exception code: the CP refused a dispatch's kernel code (null or invalid).
pub const EC_QUEUE_PACKET_DISPATCH_CODE_INVALID: u32 = 18;
/// Exception code: an AQL packet type the CP does not support.
pub const EC_QUEUE_PACKET_UNSUPPORTED: u32 = 20;
/// Exception code: the CP refused a dispatch's work-group size (too many work-items).
pub const EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID: u32 = 21;
/// Exception code: the CP refused a dispatch's register counts.
pub const EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID: u32 = 22;
/// Exception code: a vendor-specific packet the CP does not support.
pub const EC_QUEUE_PACKET_VENDOR_UNSUPPORTED: u32 = 23;

/// `KFD_EC_MASK(ecode)`: exception code `ec` (1-64) as its bit of an error reason.
pub const fn kfd_ec_mask(ec: u32) -> u64 {
    1 << (ec - 1)
}

// ---- mmap offsets (kfd_priv.h, byte offsets since linux 5.6) ----

/// Bits of a gpu id hash kept in an mmap offset.
pub const KFD_GPU_ID_HASH_WIDTH: u32 = 16;
/// Shift of the mmap type field (bits 63:62).
pub const KFD_MMAP_TYPE_SHIFT: u32 = 62;
/// Mask of the mmap type field.
pub const KFD_MMAP_TYPE_MASK: u64 = 0x3 << KFD_MMAP_TYPE_SHIFT;
/// mmap type: doorbell page.
pub const KFD_MMAP_TYPE_DOORBELL: u64 = 0x3 << KFD_MMAP_TYPE_SHIFT;
/// mmap type: the event page.
pub const KFD_MMAP_TYPE_EVENTS: u64 = 0x2 << KFD_MMAP_TYPE_SHIFT;
/// mmap type: reserved memory (CWSR trap handler area on APUs).
pub const KFD_MMAP_TYPE_RESERVED_MEM: u64 = 0x1 << KFD_MMAP_TYPE_SHIFT;
/// mmap type: MMIO remap page.
pub const KFD_MMAP_TYPE_MMIO: u64 = 0x0 << KFD_MMAP_TYPE_SHIFT;
/// Shift of the gpu id field (bits 61:46).
pub const KFD_MMAP_GPU_ID_SHIFT: u32 = 46;
/// Mask of the gpu id field.
pub const KFD_MMAP_GPU_ID_MASK: u64 =
    ((1u64 << KFD_GPU_ID_HASH_WIDTH) - 1) << KFD_MMAP_GPU_ID_SHIFT;

/// `KFD_MMAP_GPU_ID(gpu_id)`: the gpu id placed in its mmap-offset field (extra bits dropped).
pub const fn kfd_mmap_gpu_id(gpu_id: u32) -> u64 {
    ((gpu_id as u64) << KFD_MMAP_GPU_ID_SHIFT) & KFD_MMAP_GPU_ID_MASK
}

/// `KFD_MMAP_GET_GPU_ID(offset)`: the gpu id field of an mmap offset.
pub const fn kfd_mmap_get_gpu_id(offset: u64) -> u32 {
    ((offset & KFD_MMAP_GPU_ID_MASK) >> KFD_MMAP_GPU_ID_SHIFT) as u32
}

/// The mmap offset of a GPU's doorbell page on `/dev/kfd` (what the kernel returns in
/// [`CreateQueueArgs::doorbell_offset`], page part).
pub const fn kfd_mmap_doorbell_offset(gpu_id: u32) -> u64 {
    KFD_MMAP_TYPE_DOORBELL | kfd_mmap_gpu_id(gpu_id)
}

/// The mmap offset of the process's event page on `/dev/kfd`.
pub const KFD_MMAP_EVENTS_OFFSET: u64 = KFD_MMAP_TYPE_EVENTS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_kernel_values() {
        // Values computed by hand from _IOC: dir<<30 | size<<16 | 'K'<<8 | nr.
        assert_eq!(AMDKFD_IOC_GET_VERSION, 0x8008_4b01);
        assert_eq!(AMDKFD_IOC_CREATE_QUEUE, 0xc058_4b02);
        assert_eq!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, 0xc028_4b16);
        assert_eq!(AMDKFD_IOC_FREE_MEMORY_OF_GPU, 0x4008_4b17);
        assert_eq!(AMDKFD_IOC_SET_XNACK_MODE, 0xc004_4b21);
        assert_eq!(AMDKFD_IOC_RUNTIME_ENABLE, 0xc010_4b25);
        assert_eq!(AMDKFD_IOC_IMPORT_DMABUF, 0xc018_4b1d);
        assert_eq!(AMDKFD_IOC_EXPORT_DMABUF, 0xc010_4b24);
    }

    #[test]
    fn mmap_offsets() {
        assert_eq!(
            kfd_mmap_doorbell_offset(0x1234),
            0xc000_0000_0000_0000 | (0x1234u64 << 46)
        );
        assert_eq!(kfd_mmap_get_gpu_id(kfd_mmap_doorbell_offset(24248)), 24248);
        assert_eq!(kfd_mmap_gpu_id(0x1_0001), 1u64 << 46); // only 16 bits kept
        assert_eq!(KFD_MMAP_EVENTS_OFFSET, 0x8000_0000_0000_0000);
    }

    #[test]
    fn event_data_union_views() {
        let mut e = EventData::default();
        e.union_data[16..24].copy_from_slice(&0xdead_beef_0000u64.to_ne_bytes());
        e.union_data[24..28].copy_from_slice(&7u32.to_ne_bytes());
        e.union_data[0..4].copy_from_slice(&1u32.to_ne_bytes());
        let m = e.memory_exception();
        assert_eq!(m.va, 0xdead_beef_0000);
        assert_eq!(m.gpu_id, 7);
        assert_eq!(m.failure.not_present, 1);
        assert_eq!(e.hw_exception().reset_type, 1);
    }
}
