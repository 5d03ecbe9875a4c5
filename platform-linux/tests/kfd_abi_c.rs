//! Compares `hsa_linux::kfd::abi` with `<linux/kfd_ioctl.h>`: a C program generated here prints
//! every struct size, field offset, request number and constant; it is built with `cc` and its
//! output is compared, entry by entry, with the Rust values. Entries the installed header does
//! not have (those marked `since` a newer interface version) are reported and skipped; any other
//! missing entry fails.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::mem::{offset_of, size_of, size_of_val};
use std::path::Path;
use std::process::Command;

use hsa_linux::kfd::abi::*;

/// One value to compare: the key printed by C, the C expression, the Rust value, and the C
/// macro that must be defined for the entry to exist (`None`: always required).
struct Entry {
    key: String,
    c_expr: String,
    rust: u64,
    guard: Option<&'static str>,
}

macro_rules! structs {
    ($table:ident; $( $rust:ident = $c:literal $(if $guard:literal)? { $($rf:ident = $cf:literal),* $(,)? } )*) => {
        $(
            let guard: Option<&'static str> = None $(.or(Some($guard)))?;
            $table.push(Entry {
                key: format!("sizeof.{}", $c),
                c_expr: format!("sizeof(struct {})", $c),
                rust: size_of::<$rust>() as u64,
                guard,
            });
            $(
                $table.push(Entry {
                    key: format!("offsetof.{}.{}", $c, $cf),
                    c_expr: format!("offsetof(struct {}, {})", $c, $cf),
                    rust: offset_of!($rust, $rf) as u64,
                    guard,
                });
            )*
        )*
    };
}

macro_rules! consts {
    ($table:ident; $( $name:ident $(if $guard:literal)? ),* $(,)?) => {
        $(
            $table.push(Entry {
                key: stringify!($name).to_owned(),
                // 32-bit constants are compared as the __u32 they are stored in: C's
                // `(1 << 31)` (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) is a negative int.
                c_expr: if size_of_val(&$name) == 4 {
                    format!("(unsigned int)({})", stringify!($name))
                } else {
                    format!("(unsigned long long)({})", stringify!($name))
                },
                rust: $name as u64,
                guard: None $(.or(Some($guard)))?,
            });
        )*
    };
}

fn table() -> Vec<Entry> {
    let mut t = Vec::new();
    structs! { t;
        GetVersionArgs = "kfd_ioctl_get_version_args" { major_version = "major_version", minor_version = "minor_version" }
        CreateQueueArgs = "kfd_ioctl_create_queue_args" {
            ring_base_address = "ring_base_address", write_pointer_address = "write_pointer_address",
            read_pointer_address = "read_pointer_address", doorbell_offset = "doorbell_offset",
            ring_size = "ring_size", gpu_id = "gpu_id", queue_type = "queue_type",
            queue_percentage = "queue_percentage", queue_priority = "queue_priority", queue_id = "queue_id",
            eop_buffer_address = "eop_buffer_address", eop_buffer_size = "eop_buffer_size",
            ctx_save_restore_address = "ctx_save_restore_address", ctx_save_restore_size = "ctx_save_restore_size",
            ctl_stack_size = "ctl_stack_size",
        }
        DestroyQueueArgs = "kfd_ioctl_destroy_queue_args" { queue_id = "queue_id", pad = "pad" }
        UpdateQueueArgs = "kfd_ioctl_update_queue_args" {
            ring_base_address = "ring_base_address", queue_id = "queue_id", ring_size = "ring_size",
            queue_percentage = "queue_percentage", queue_priority = "queue_priority",
        }
        SetCuMaskArgs = "kfd_ioctl_set_cu_mask_args" { queue_id = "queue_id", num_cu_mask = "num_cu_mask", cu_mask_ptr = "cu_mask_ptr" }
        GetAvailableMemoryArgs = "kfd_ioctl_get_available_memory_args" { available = "available", gpu_id = "gpu_id", pad = "pad" }
        SetMemoryPolicyArgs = "kfd_ioctl_set_memory_policy_args" {
            alternate_aperture_base = "alternate_aperture_base", alternate_aperture_size = "alternate_aperture_size",
            gpu_id = "gpu_id", default_policy = "default_policy", alternate_policy = "alternate_policy", pad = "pad",
        }
        GetClockCountersArgs = "kfd_ioctl_get_clock_counters_args" {
            gpu_clock_counter = "gpu_clock_counter", cpu_clock_counter = "cpu_clock_counter",
            system_clock_counter = "system_clock_counter", system_clock_freq = "system_clock_freq",
            gpu_id = "gpu_id", pad = "pad",
        }
        ProcessDeviceApertures = "kfd_process_device_apertures" {
            lds_base = "lds_base", lds_limit = "lds_limit", scratch_base = "scratch_base",
            scratch_limit = "scratch_limit", gpuvm_base = "gpuvm_base", gpuvm_limit = "gpuvm_limit",
            gpu_id = "gpu_id", pad = "pad",
        }
        GetProcessAperturesNewArgs = "kfd_ioctl_get_process_apertures_new_args" {
            kfd_process_device_apertures_ptr = "kfd_process_device_apertures_ptr", num_of_nodes = "num_of_nodes", pad = "pad",
        }
        CreateEventArgs = "kfd_ioctl_create_event_args" {
            event_page_offset = "event_page_offset", event_trigger_data = "event_trigger_data",
            event_type = "event_type", auto_reset = "auto_reset", node_id = "node_id",
            event_id = "event_id", event_slot_index = "event_slot_index",
        }
        DestroyEventArgs = "kfd_ioctl_destroy_event_args" { event_id = "event_id", pad = "pad" }
        SetEventArgs = "kfd_ioctl_set_event_args" { event_id = "event_id", pad = "pad" }
        ResetEventArgs = "kfd_ioctl_reset_event_args" { event_id = "event_id", pad = "pad" }
        MemoryExceptionFailure = "kfd_memory_exception_failure" {
            not_present = "NotPresent", read_only = "ReadOnly", no_execute = "NoExecute", imprecise = "imprecise",
        }
        HsaMemoryExceptionData = "kfd_hsa_memory_exception_data" { failure = "failure", va = "va", gpu_id = "gpu_id", error_type = "ErrorType" }
        HsaHwExceptionData = "kfd_hsa_hw_exception_data" {
            reset_type = "reset_type", reset_cause = "reset_cause", memory_lost = "memory_lost", gpu_id = "gpu_id",
        }
        EventData = "kfd_event_data" {
            union_data = "memory_exception_data", union_data = "hw_exception_data",
            kfd_event_data_ext = "kfd_event_data_ext", event_id = "event_id", pad = "pad",
        }
        WaitEventsArgs = "kfd_ioctl_wait_events_args" {
            events_ptr = "events_ptr", num_events = "num_events", wait_for_all = "wait_for_all",
            timeout = "timeout", wait_result = "wait_result",
        }
        SetScratchBackingVaArgs = "kfd_ioctl_set_scratch_backing_va_args" { va_addr = "va_addr", gpu_id = "gpu_id", pad = "pad" }
        AcquireVmArgs = "kfd_ioctl_acquire_vm_args" { drm_fd = "drm_fd", gpu_id = "gpu_id" }
        AllocMemoryOfGpuArgs = "kfd_ioctl_alloc_memory_of_gpu_args" {
            va_addr = "va_addr", size = "size", handle = "handle", mmap_offset = "mmap_offset", gpu_id = "gpu_id", flags = "flags",
        }
        FreeMemoryOfGpuArgs = "kfd_ioctl_free_memory_of_gpu_args" { handle = "handle" }
        MapMemoryToGpuArgs = "kfd_ioctl_map_memory_to_gpu_args" {
            handle = "handle", device_ids_array_ptr = "device_ids_array_ptr", n_devices = "n_devices", n_success = "n_success",
        }
        UnmapMemoryFromGpuArgs = "kfd_ioctl_unmap_memory_from_gpu_args" {
            handle = "handle", device_ids_array_ptr = "device_ids_array_ptr", n_devices = "n_devices", n_success = "n_success",
        }
        SetXnackModeArgs = "kfd_ioctl_set_xnack_mode_args" { xnack_enabled = "xnack_enabled" }
        SvmAttribute = "kfd_ioctl_svm_attribute" { type_ = "type", value = "value" }
        SvmArgs = "kfd_ioctl_svm_args" { start_addr = "start_addr", size = "size", op = "op", nattr = "nattr" }
        GetTileConfigArgs = "kfd_ioctl_get_tile_config_args" {
            tile_config_ptr = "tile_config_ptr", macro_tile_config_ptr = "macro_tile_config_ptr",
            num_tile_configs = "num_tile_configs", num_macro_tile_configs = "num_macro_tile_configs",
            gpu_id = "gpu_id", gb_addr_config = "gb_addr_config", num_banks = "num_banks", num_ranks = "num_ranks",
        }
        SetTrapHandlerArgs = "kfd_ioctl_set_trap_handler_args" {
            tba_addr = "tba_addr", tma_addr = "tma_addr", gpu_id = "gpu_id", pad = "pad",
        }
        RuntimeEnableArgs = "kfd_ioctl_runtime_enable_args" if "AMDKFD_IOC_RUNTIME_ENABLE" {
            r_debug = "r_debug", mode_mask = "mode_mask", capabilities_mask = "capabilities_mask",
        }
    }
    consts! { t;
        KFD_IOCTL_MAJOR_VERSION, KFD_IOCTL_MINOR_VERSION,
        AMDKFD_IOC_GET_VERSION, AMDKFD_IOC_CREATE_QUEUE, AMDKFD_IOC_DESTROY_QUEUE,
        AMDKFD_IOC_SET_MEMORY_POLICY, AMDKFD_IOC_GET_CLOCK_COUNTERS, AMDKFD_IOC_UPDATE_QUEUE,
        AMDKFD_IOC_CREATE_EVENT, AMDKFD_IOC_DESTROY_EVENT, AMDKFD_IOC_SET_EVENT, AMDKFD_IOC_RESET_EVENT,
        AMDKFD_IOC_WAIT_EVENTS, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, AMDKFD_IOC_GET_TILE_CONFIG,
        AMDKFD_IOC_SET_TRAP_HANDLER, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
        AMDKFD_IOC_ACQUIRE_VM, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AMDKFD_IOC_FREE_MEMORY_OF_GPU,
        AMDKFD_IOC_MAP_MEMORY_TO_GPU, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, AMDKFD_IOC_SET_CU_MASK,
        AMDKFD_IOC_SET_XNACK_MODE, AMDKFD_IOC_AVAILABLE_MEMORY, AMDKFD_IOC_SVM,
        KFD_IOCTL_SVM_OP_SET_ATTR, KFD_IOCTL_SVM_OP_GET_ATTR, KFD_IOCTL_SVM_LOCATION_SYSMEM,
        KFD_IOCTL_SVM_LOCATION_UNDEFINED, KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
        KFD_IOCTL_SVM_ATTR_ACCESS, KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, KFD_IOCTL_SVM_ATTR_NO_ACCESS,
        KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_ATTR_GRANULARITY,
        KFD_IOCTL_SVM_FLAG_HOST_ACCESS, KFD_IOCTL_SVM_FLAG_COHERENT, KFD_IOCTL_SVM_FLAG_GPU_EXEC,
        KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED,
        AMDKFD_IOC_RUNTIME_ENABLE if "AMDKFD_IOC_RUNTIME_ENABLE",
        KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_SDMA, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        KFD_IOC_QUEUE_TYPE_SDMA_XGMI, KFD_MAX_QUEUE_PERCENTAGE, KFD_MAX_QUEUE_PRIORITY, KFD_MIN_QUEUE_RING_SIZE,
        KFD_IOC_CACHE_POLICY_COHERENT, KFD_IOC_CACHE_POLICY_NONCOHERENT,
        KFD_IOC_EVENT_SIGNAL, KFD_IOC_EVENT_NODECHANGE, KFD_IOC_EVENT_DEVICESTATECHANGE,
        KFD_IOC_EVENT_HW_EXCEPTION, KFD_IOC_EVENT_SYSTEM_EVENT, KFD_IOC_EVENT_DEBUG_EVENT,
        KFD_IOC_EVENT_PROFILE_EVENT, KFD_IOC_EVENT_QUEUE_EVENT, KFD_IOC_EVENT_MEMORY,
        KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_TIMEOUT, KFD_IOC_WAIT_RESULT_FAIL,
        KFD_SIGNAL_EVENT_LIMIT,
        KFD_HW_EXCEPTION_WHOLE_GPU_RESET, KFD_HW_EXCEPTION_PER_ENGINE_RESET, KFD_HW_EXCEPTION_GPU_HANG,
        KFD_HW_EXCEPTION_ECC, KFD_MEM_ERR_NO_RAS, KFD_MEM_ERR_SRAM_ECC, KFD_MEM_ERR_POISON_CONSUMED,
        KFD_MEM_ERR_GPU_HANG,
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM, KFD_IOC_ALLOC_MEM_FLAGS_GTT, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE, KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE,
        KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED,
        KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK if "KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK",
        KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK if "KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK",
    }
    t
}

fn c_program(table: &[Entry]) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <linux/kfd_ioctl.h>\nint main(void) {\n",
    );
    for e in table {
        if let Some(g) = e.guard {
            let _ = writeln!(c, "#ifdef {g}");
        }
        let _ = writeln!(
            c,
            "    printf(\"%s %llu\\n\", \"{}\", (unsigned long long)({}));",
            e.key, e.c_expr
        );
        if e.guard.is_some() {
            c.push_str("#endif\n");
        }
    }
    c.push_str("    return 0;\n}\n");
    c
}

#[test]
fn rust_abi_matches_kfd_ioctl_h() {
    if !Path::new("/usr/include/linux/kfd_ioctl.h").exists() {
        println!("skipped: /usr/include/linux/kfd_ioctl.h is not installed");
        return;
    }
    let table = table();
    let dir = std::env::temp_dir().join(format!("hsa-kfd-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("kfd_abi.c");
    let exe = dir.join("kfd_abi");
    std::fs::write(&src, c_program(&table)).unwrap();
    // kfd_ioctl.h includes <drm/drm.h> only for the __u32/__u64 types; where the DRM uapi headers
    // are not installed (linux-libc-dev without them), a stub giving <linux/types.h> stands in.
    let mut cmd = Command::new("cc");
    if !Path::new("/usr/include/drm/drm.h").exists() {
        std::fs::create_dir_all(dir.join("stub/drm")).unwrap();
        std::fs::write(dir.join("stub/drm/drm.h"), "#include <linux/types.h>\n").unwrap();
        cmd.arg("-I").arg(dir.join("stub"));
    }
    let cc = match cmd.arg("-o").arg(&exe).arg(&src).output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: cannot run cc: {e}");
            return;
        }
    };
    assert!(
        cc.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let c_values: HashMap<&str, u64> = stdout
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();

    let mut failures = Vec::new();
    let mut compared = 0;
    for e in &table {
        match c_values.get(e.key.as_str()) {
            Some(&c) if c == e.rust => compared += 1,
            Some(&c) => failures.push(format!("{}: C {c:#x}, Rust {:#x}", e.key, e.rust)),
            None if e.guard.is_some() => {
                println!(
                    "note: {} not in the installed header ({} undefined); not compared",
                    e.key,
                    e.guard.unwrap()
                )
            }
            None => failures.push(format!("{}: missing from the C output", e.key)),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "ABI mismatches:\n{}",
        failures.join("\n")
    );
    // Every entry without a guard must have been compared.
    assert!(compared >= table.iter().filter(|e| e.guard.is_none()).count());
    println!(
        "compared {compared} of {} entries with <linux/kfd_ioctl.h>",
        table.len()
    );
}
