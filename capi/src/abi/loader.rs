//! Extension ids (`hsa.h` `hsa_extension_t`) and the AMD loader extension's types
//! (`hsa_ven_amd_loader.h`), its function table `hsa_ven_amd_loader_1_03_pfn_t`.

#[allow(unused_imports)]
use super::*;
use core::ffi::c_void;

/// `HSA_EXTENSION_FINALIZER`.
pub const HSA_EXTENSION_FINALIZER: u16 = 0;

/// `HSA_EXTENSION_IMAGES`.
pub const HSA_EXTENSION_IMAGES: u16 = 1;

/// `HSA_EXTENSION_PERFORMANCE_COUNTERS`.
pub const HSA_EXTENSION_PERFORMANCE_COUNTERS: u16 = 2;

/// `HSA_EXTENSION_PROFILING_EVENTS`.
pub const HSA_EXTENSION_PROFILING_EVENTS: u16 = 3;

/// `HSA_EXTENSION_STD_LAST`.
pub const HSA_EXTENSION_STD_LAST: u16 = 3;

/// `HSA_AMD_FIRST_EXTENSION`.
pub const HSA_AMD_FIRST_EXTENSION: u16 = 0x200;

/// `HSA_EXTENSION_AMD_PROFILER`.
pub const HSA_EXTENSION_AMD_PROFILER: u16 = 0x200;

/// `HSA_EXTENSION_AMD_LOADER`.
pub const HSA_EXTENSION_AMD_LOADER: u16 = 0x201;

/// `HSA_EXTENSION_AMD_AQLPROFILE`.
pub const HSA_EXTENSION_AMD_AQLPROFILE: u16 = 0x202;

/// `HSA_AMD_LAST_EXTENSION`.
pub const HSA_AMD_LAST_EXTENSION: u16 = 0x202;

/// `HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY`.
pub const STORAGE_TYPE_MEMORY: u32 = 2;

/// `HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_KIND_AGENT`.
pub const LOADED_CODE_OBJECT_KIND_AGENT: u32 = 2;

/// `hsa_ven_amd_loader_loaded_code_object_info_t` attributes.
pub mod lco_info {
    /// `..._INFO_EXECUTABLE` (`hsa_executable_t`).
    pub const EXECUTABLE: u32 = 1;
    /// `..._INFO_KIND` (`uint32_t`).
    pub const KIND: u32 = 2;
    /// `..._INFO_AGENT` (`hsa_agent_t`).
    pub const AGENT: u32 = 3;
    /// `..._INFO_CODE_OBJECT_STORAGE_TYPE` (`uint32_t`).
    pub const STORAGE_TYPE: u32 = 4;
    /// `..._INFO_CODE_OBJECT_STORAGE_MEMORY_BASE` (`uint64_t`).
    pub const STORAGE_MEMORY_BASE: u32 = 5;
    /// `..._INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE` (`uint64_t`).
    pub const STORAGE_MEMORY_SIZE: u32 = 6;
    /// `..._INFO_CODE_OBJECT_STORAGE_FILE` (`int`).
    pub const STORAGE_FILE: u32 = 7;
    /// `..._INFO_LOAD_DELTA` (`int64_t`).
    pub const LOAD_DELTA: u32 = 8;
    /// `..._INFO_LOAD_BASE` (`uint64_t`).
    pub const LOAD_BASE: u32 = 9;
    /// `..._INFO_LOAD_SIZE` (`uint64_t`).
    pub const LOAD_SIZE: u32 = 10;
    /// `..._INFO_URI_LENGTH` (`uint32_t`).
    pub const URI_LENGTH: u32 = 11;
    /// `..._INFO_URI` (`char[URI_LENGTH]`).
    pub const URI: u32 = 12;
}

/// `hsa_ven_amd_loader_segment_descriptor_t` (`hsa_ven_amd_loader.h`): 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SegmentDescriptor {
    /// The agent the segment is loaded for.
    pub agent: u64,
    /// The executable holding it.
    pub executable: u64,
    /// `hsa_ven_amd_loader_code_object_storage_type_t`: always MEMORY (2).
    pub code_object_storage_type: u32,
    /// The code object's first byte (the reader's copy).
    pub code_object_storage_base: *const c_void,
    /// The code object's size, bytes.
    pub code_object_storage_size: usize,
    /// Offset in the code object of the first byte copied into the segment.
    pub code_object_storage_offset: usize,
    /// The segment's address.
    pub segment_base: *const c_void,
    /// The segment's size, bytes.
    pub segment_size: usize,
}
const _: () = assert!(core::mem::size_of::<SegmentDescriptor>() == 64);
const _: () = assert!(core::mem::offset_of!(SegmentDescriptor, code_object_storage_base) == 24);

/// `hsa_ven_amd_loader_1_03_pfn_t`: the seven functions in the header's order (the 1.00 table
/// is its first three, 1.01 its first five, 1.02 its first six).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AmdLoader103 {
    /// `hsa_ven_amd_loader_query_host_address`.
    pub query_host_address: unsafe extern "C" fn(*const c_void, *mut *const c_void) -> u32,
    /// `hsa_ven_amd_loader_query_segment_descriptors`.
    pub query_segment_descriptors: unsafe extern "C" fn(*mut SegmentDescriptor, *mut usize) -> u32,
    /// `hsa_ven_amd_loader_query_executable`.
    pub query_executable: unsafe extern "C" fn(*const c_void, *mut u64) -> u32,
    /// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects`.
    pub executable_iterate_loaded_code_objects:
        unsafe extern "C" fn(u64, Option<LoadedCodeObjectCallback>, *mut c_void) -> u32,
    /// `hsa_ven_amd_loader_loaded_code_object_get_info`.
    pub loaded_code_object_get_info: unsafe extern "C" fn(u64, u32, *mut c_void) -> u32,
    /// `hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size`.
    pub code_object_reader_create_from_file_with_offset_size:
        unsafe extern "C" fn(i32, usize, usize, *mut u64) -> u32,
    /// `hsa_ven_amd_loader_iterate_executables`.
    pub iterate_executables: unsafe extern "C" fn(Option<ExecutableCallback>, *mut c_void) -> u32,
}

/// `struct link_map` (glibc `<link.h>`, the part a debugger reads): one loaded code object
/// in the list `_amdgpu_r_debug` heads, 40 bytes. ROCR's loader fills `l_addr` with the load
/// delta (the device address file vaddr 0 maps to) and `l_name` with the code object's URI
/// (AMDGPUUsage "Code Object URI"); `l_ld` stays NULL.
#[repr(C)]
#[derive(Debug)]
pub struct LinkMap {
    /// The load delta, bytes.
    pub l_addr: usize,
    /// The code object's URI, NUL-terminated.
    pub l_name: *const core::ffi::c_char,
    /// The dynamic section (NULL: code objects are not in the host's address space).
    pub l_ld: *const core::ffi::c_void,
    /// The next entry, NULL at the end.
    pub l_next: *mut LinkMap,
    /// The entry before, NULL at the start.
    pub l_prev: *mut LinkMap,
}
const _: () = assert!(core::mem::size_of::<LinkMap>() == 40);

/// `r_debug.r_state` (glibc `<link.h>`): the list is consistent.
pub const RT_CONSISTENT: i32 = 0;
/// `r_debug.r_state`: entries are being added.
pub const RT_ADD: i32 = 1;
/// `r_debug.r_state`: entries are being removed.
pub const RT_DELETE: i32 = 2;

/// The `r_version` ROCR 7 writes into `_amdgpu_r_debug` (`Runtime::Runtime`), which AMD's
/// debugger library checks.
pub const AMDGPU_R_DEBUG_VERSION: i32 = 11;

/// `struct r_debug` (glibc `<link.h>`), the type of ROCR's exported `_amdgpu_r_debug`: the
/// head of the list of loaded GPU code objects a debugger (rocgdb, through ROCdbgapi) reads,
/// 40 bytes.
#[repr(C)]
#[derive(Debug)]
pub struct RDebug {
    /// [`AMDGPU_R_DEBUG_VERSION`].
    pub r_version: i32,
    /// The first entry, NULL when no code object is loaded.
    pub r_map: *mut LinkMap,
    /// The function the loader calls before and after each change (a debugger breaks there).
    pub r_brk: extern "C" fn(),
    /// [`RT_CONSISTENT`], [`RT_ADD`] or [`RT_DELETE`].
    pub r_state: i32,
    /// Unused (0).
    pub r_ldbase: usize,
}
const _: () = assert!(core::mem::size_of::<RDebug>() == 40);
