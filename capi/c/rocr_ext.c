/* The ROCR extension functions beyond HSA 1.2's core that HIP and ROCm tools use: extension
 * queries and the AMD loader table, HDP_FLUSH, async copies, fills and their profiling, locked
 * host memory, AMD signals and async handlers, dispatch profiling, CU masks and priorities,
 * caches, ISA queries, coherency, executable info, variable definitions, the HSA 1.0 code object
 * API, the image extension, and the statuses of the features not provided. Values are checked in C; prints
 * "rocr_ext: ok" and exits 0 when every check holds.
 * Usage: rocr_ext KERNELS_CODE_OBJECT EXTERN_VAR_CODE_OBJECT */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/hsa_ext_finalize.h>
#include <hsa/hsa_ext_image.h>
#include <hsa/hsa_ven_amd_loader.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static hsa_amd_memory_pool_t vram, fine;

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void* data) {
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  hsa_amd_memory_pool_t* out = data;
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !out->handle)
    *out = p;
  if (alloc && flags == HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED && !out->handle) *out = p;
  return HSA_STATUS_SUCCESS;
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void* p = malloc(*size);
  if (fread(p, 1, *size, f) != *size) *size = 0;
  fclose(f);
  return p;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Waits up to 5 s for *flag to reach want. */
static int wait_for(atomic_int* flag, int want) {
  for (int i = 0; i < 500 && atomic_load(flag) != want; i++) sleep_ms(10);
  return atomic_load(flag) == want;
}

/* ---- extension queries and the loader table ---- */

static hsa_ven_amd_loader_1_03_pfn_t loader;
static int executables_seen;
static hsa_executable_t exe_seen;

static hsa_status_t on_executable(hsa_executable_t e, void* data) {
  (void)data;
  executables_seen++;
  exe_seen = e;
  return HSA_STATUS_SUCCESS;
}

static hsa_loaded_code_object_t lco_seen;
static int lcos_seen;
static hsa_status_t on_lco(hsa_executable_t e, hsa_loaded_code_object_t l, void* data) {
  (void)e;
  (void)data;
  lcos_seen++;
  lco_seen = l;
  return HSA_STATUS_SUCCESS;
}

static void extensions(void) {
  const char* name = NULL;
  OK(hsa_extension_get_name(HSA_EXTENSION_AMD_LOADER, &name));
  EXPECT(name && !strcmp(name, "HSA_EXTENSION_AMD_LOADER"));
  IS(hsa_extension_get_name(0x100, &name), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT(!strcmp(name, "HSA_EXTENSION_INVALID"));

  bool yes = false;
  OK(hsa_system_extension_supported(HSA_EXTENSION_AMD_LOADER, 1, 3, &yes));
  EXPECT(yes);
  OK(hsa_system_extension_supported(HSA_EXTENSION_AMD_LOADER, 1, 4, &yes));
  EXPECT(!yes);
  OK(hsa_system_extension_supported(HSA_EXTENSION_IMAGES, 1, 0, &yes));
  EXPECT(yes);
  OK(hsa_system_extension_supported(HSA_EXTENSION_IMAGES, 1, 1, &yes));
  EXPECT(!yes);
  OK(hsa_system_extension_supported(HSA_EXTENSION_AMD_PROFILER, 1, 0, &yes));
  EXPECT(yes);
  IS(hsa_system_extension_supported(0x100, 1, 0, &yes), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  uint16_t minor = 0;
  OK(hsa_system_major_extension_supported(HSA_EXTENSION_AMD_LOADER, 1, &minor, &yes));
  EXPECT(yes && minor == 3);
  OK(hsa_system_major_extension_supported(HSA_EXTENSION_FINALIZER, 1, &minor, &yes));
  EXPECT(!yes);
  OK(hsa_agent_extension_supported(HSA_EXTENSION_AMD_LOADER, gpu, 1, 0, &yes));
  EXPECT(yes);
  OK(hsa_agent_extension_supported(HSA_EXTENSION_AMD_LOADER, cpu, 1, 0, &yes));
  EXPECT(!yes);
  OK(hsa_agent_major_extension_supported(HSA_EXTENSION_AMD_LOADER, gpu, 1, &minor, &yes));
  EXPECT(yes && minor == 3);
  uint8_t mask[128];
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_EXTENSIONS, mask));
  EXPECT(mask[HSA_EXTENSION_AMD_LOADER / 8] & (1 << (HSA_EXTENSION_AMD_LOADER % 8)));
  EXPECT(mask[HSA_EXTENSION_AMD_PROFILER / 8] & (1 << (HSA_EXTENSION_AMD_PROFILER % 8)));
  EXPECT(mask[0] & (1 << HSA_EXTENSION_IMAGES));
  OK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_EXTENSIONS, mask));
  EXPECT(mask[0] & (1 << HSA_EXTENSION_IMAGES));
  EXPECT(mask[HSA_EXTENSION_AMD_LOADER / 8] & (1 << (HSA_EXTENSION_AMD_LOADER % 8)));

  /* Tables: the 1.00 table is the first three entries; the rest is left alone. */
  unsigned char raw[sizeof(hsa_ven_amd_loader_1_03_pfn_t) + 8];
  memset(raw, 0xee, sizeof raw);
  OK(hsa_system_get_extension_table(HSA_EXTENSION_AMD_LOADER, 1, 0, raw));
  EXPECT(raw[sizeof(hsa_ven_amd_loader_1_00_pfn_t)] == 0xee);
  EXPECT(((hsa_ven_amd_loader_1_00_pfn_t*)raw)->hsa_ven_amd_loader_query_host_address != NULL);
  IS(hsa_system_get_extension_table(HSA_EXTENSION_AMD_LOADER, 1, 4, raw),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof loader, &loader));
  EXPECT(loader.hsa_ven_amd_loader_iterate_executables != NULL);
  IS(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 2, sizeof loader, raw),
     HSA_STATUS_ERROR);
  IS(hsa_system_get_major_extension_table(HSA_EXTENSION_FINALIZER, 1, 64, raw), HSA_STATUS_ERROR);
  IS(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, 0, raw),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, 8, NULL),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* HIP refuses a device whose HDP_FLUSH query fails: two NULL registers, as ROCR without
     an MMIO-remap page. */
  hsa_amd_hdp_flush_t hdp = {(uint32_t*)1, (uint32_t*)1};
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_HDP_FLUSH, &hdp));
  EXPECT(hdp.HDP_MEM_FLUSH_CNTL == NULL && hdp.HDP_REG_FLUSH_CNTL == NULL);
  OK(hsa_agent_get_info(cpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_HDP_FLUSH, &hdp));
}

static hsa_executable_t load(const void* bytes, size_t size, hsa_code_object_reader_t* reader) {
  hsa_executable_t e = {0};
  OK(hsa_code_object_reader_create_from_memory(bytes, size, reader));
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e));
  return e;
}

static void loader_table(const char* path, const void* bytes, size_t size) {
  hsa_code_object_reader_t reader;
  hsa_executable_t e = load(bytes, size, &reader);
  hsa_loaded_code_object_t lco;
  OK(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, &lco));
  OK(hsa_executable_freeze(e, NULL));

  executables_seen = 0;
  OK(loader.hsa_ven_amd_loader_iterate_executables(on_executable, NULL));
  EXPECT(executables_seen == 1 && exe_seen.handle == e.handle);
  IS(loader.hsa_ven_amd_loader_iterate_executables(NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(e, on_lco, NULL));
  EXPECT(lcos_seen == 1 && lco_seen.handle == lco.handle);
  hsa_executable_t bad = {42};
  IS(loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(bad, on_lco, NULL),
     HSA_STATUS_ERROR_INVALID_EXECUTABLE);

  hsa_executable_t owner;
  uint32_t kind = 0, storage = 0, uri_len = 0;
  hsa_agent_t agent;
  uint64_t base = 0, mem_size = 0, load_base = 0, load_size = 0;
  int64_t delta = 0;
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE, &owner));
  EXPECT(owner.handle == e.handle);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND, &kind));
  EXPECT(kind == HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_KIND_AGENT);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT, &agent));
  EXPECT(agent.handle == gpu.handle);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE, &storage));
  EXPECT(storage == HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE, &base));
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE,
      &mem_size));
  EXPECT(mem_size == size && !memcmp((void*)(uintptr_t)base, bytes, size));
  int fd = -1;
  IS(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
         lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE, &fd),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE, &load_base));
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE, &load_size));
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA, &delta));
  /* The image starts at file vaddr 0: the delta is the load base. */
  EXPECT(load_base != 0 && load_size >= 0x2000 && (uint64_t)delta == load_base);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH, &uri_len));
  char uri[256] = {0};
  EXPECT(uri_len > 0 && uri_len < sizeof uri);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI, uri));
  char want[128];
  snprintf(want, sizeof want, "memory://%d#offset=%p&size=%zu", (int)getpid(), bytes, size);
  EXPECT(!strcmp(uri, want));
  hsa_loaded_code_object_t nope = {7};
  IS(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
         nope, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND, &kind),
     HSA_STATUS_ERROR_INVALID_CODE_OBJECT);

  /* Addresses inside the loaded image: host address (the same here) and executable. */
  hsa_executable_symbol_t sym;
  uint64_t kernel_object = 0;
  OK(hsa_executable_get_symbol_by_name(e, "vector_copy.kd", &gpu, &sym));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object));
  const void* host = NULL;
  OK(loader.hsa_ven_amd_loader_query_host_address((void*)(uintptr_t)kernel_object, &host));
  EXPECT((uint64_t)(uintptr_t)host == kernel_object);
  IS(loader.hsa_ven_amd_loader_query_host_address((void*)16, &host),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_executable_t found;
  OK(loader.hsa_ven_amd_loader_query_executable((void*)(uintptr_t)kernel_object, &found));
  EXPECT(found.handle == e.handle);
  size_t n = 0;
  OK(loader.hsa_ven_amd_loader_query_segment_descriptors(NULL, &n));
  EXPECT(n == 1);
  hsa_ven_amd_loader_segment_descriptor_t seg[2];
  size_t two = 2;
  IS(loader.hsa_ven_amd_loader_query_segment_descriptors(seg, &two),
     HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
  OK(loader.hsa_ven_amd_loader_query_segment_descriptors(seg, &n));
  EXPECT(seg[0].agent.handle == gpu.handle && seg[0].executable.handle == e.handle);
  EXPECT((uint64_t)(uintptr_t)seg[0].segment_base == load_base &&
         seg[0].segment_size == load_size && seg[0].code_object_storage_size == size);

  /* A reader over part of a file: a file:// URI with the range. */
  int f = open(path, O_RDONLY);
  hsa_code_object_reader_t r2;
  IS(loader.hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(f, 0, 0, &r2),
     HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
  IS(loader.hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(
         f, size, 16, &r2),
     HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
  OK(loader.hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(f, 0, size, &r2));
  hsa_executable_t e2;
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e2));
  hsa_loaded_code_object_t l2;
  OK(hsa_executable_load_agent_code_object(e2, gpu, r2, NULL, &l2));
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      l2, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH, &uri_len));
  memset(uri, 0, sizeof uri);
  OK(loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      l2, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI, uri));
  EXPECT(!strncmp(uri, "file:///", 8) && strstr(uri, "kernels-gfx90a-v5.hsaco#offset=0&size="));
  close(f);
  OK(hsa_executable_destroy(e2));
  OK(hsa_code_object_reader_destroy(r2));

  /* hsa_executable_get_info. */
  uint32_t v = 9;
  OK(hsa_executable_get_info(e, HSA_EXECUTABLE_INFO_PROFILE, &v));
  EXPECT(v == HSA_PROFILE_FULL);
  OK(hsa_executable_get_info(e, HSA_EXECUTABLE_INFO_STATE, &v));
  EXPECT(v == HSA_EXECUTABLE_STATE_FROZEN);
  OK(hsa_executable_get_info(e, HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE, &v));
  EXPECT(v == HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR);
  IS(hsa_executable_get_info(e, 99, &v), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_executable_load_program_code_object(e, reader, NULL, NULL),
     HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
  uint32_t valid = 7;
  OK(hsa_executable_validate_alt(e, NULL, &valid));
  EXPECT(valid == 0);
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
}

/* ---- kernels ---- */

typedef struct {
  hsa_queue_t* queue;
  hsa_signal_t done;
} Runner;

/* Dispatches `kernel_object` over n work-items with a copy of `args`; waits; returns the
   completion signal (value 0 once done). */
static void dispatch(Runner* r, uint64_t kernel_object, const void* args, size_t args_size,
                     uint32_t kernarg_size, uint32_t n) {
  void* kernarg = NULL;
  hsa_amd_memory_pool_t kpool = {0};
  OK(hsa_amd_memory_pool_allocate(fine, kernarg_size < 64 ? 64 : kernarg_size, 0, &kernarg));
  (void)kpool;
  memset(kernarg, 0, kernarg_size);
  memcpy(kernarg, args, args_size);
  hsa_signal_store_screlease(r->done, 1);
  uint64_t index = hsa_queue_add_write_index_screlease(r->queue, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)r->queue->base_address + (index & (r->queue->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = n < 64 ? (uint16_t)n : 64;
  p->workgroup_size_y = p->workgroup_size_z = 1;
  p->grid_size_x = n;
  p->grid_size_y = p->grid_size_z = 1;
  p->kernel_object = kernel_object;
  p->kernarg_address = kernarg;
  p->completion_signal = r->done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  __atomic_store_n((uint32_t*)p, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(r->queue->doorbell_signal, (hsa_signal_value_t)index);
  EXPECT(hsa_signal_wait_scacquire(r->done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  OK(hsa_amd_memory_pool_free(kernarg));
}

static uint64_t kernel(hsa_executable_t e, const char* name, uint32_t* kernarg_size) {
  hsa_executable_symbol_t s;
  uint64_t ko = 0;
  OK(hsa_executable_get_symbol_by_name(e, name, &gpu, &s));
  OK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &ko));
  OK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                    kernarg_size));
  return ko;
}

/* Dispatch profiling, tick translation, CU masks and priorities. */
static void queues(const void* bytes, size_t size) {
  hsa_code_object_reader_t reader;
  hsa_executable_t e = load(bytes, size, &reader);
  OK(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  uint32_t kernarg_size;
  uint64_t ko = kernel(e, "vector_copy.kd", &kernarg_size);

  Runner r;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &r.queue));
  OK(hsa_signal_create(1, 0, NULL, &r.done));
  int *in, *out;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&in));
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&out));
  for (int i = 0; i < 1024; i++) in[i] = i * 5;
  void* args[2] = {in, out};

  /* Profiling turned on for the live queue: the next dispatch has timestamps. */
  OK(hsa_amd_profiling_set_profiler_enabled(r.queue, 1));
  uint64_t before;
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &before));
  dispatch(&r, ko, args, sizeof args, kernarg_size, 1024);
  uint64_t after;
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &after));
  EXPECT(out[1023] == 1023 * 5);
  hsa_amd_profiling_dispatch_time_t t = {0, 0};
  OK(hsa_amd_profiling_get_dispatch_time(gpu, r.done, &t));
  EXPECT(before <= t.start && t.start <= t.end && t.end <= after);
  IS(hsa_amd_profiling_get_dispatch_time(cpu, r.done, &t), HSA_STATUS_ERROR_INVALID_AGENT);
  uint64_t sys = 0;
  OK(hsa_amd_profiling_convert_tick_to_system_domain(gpu, 123456, &sys));
  EXPECT(sys == 123456); /* the emulated device stamps system time */
  IS(hsa_amd_profiling_convert_tick_to_system_domain(cpu, 1, &sys), HSA_STATUS_ERROR_INVALID_AGENT);

  /* CU masks: all 104 CUs of the emulated MI210 until set; then what was set. */
  uint32_t mask[4] = {0};
  OK(hsa_amd_queue_cu_get_mask(r.queue, 128, mask));
  EXPECT(mask[0] == 0xffffffffu && mask[2] == 0xffffffffu && mask[3] == 0xffu);
  uint32_t two_cus[4] = {0x3, 0, 0, 0};
  OK(hsa_amd_queue_cu_set_mask(r.queue, 128, two_cus));
  OK(hsa_amd_queue_cu_get_mask(r.queue, 128, mask));
  EXPECT(mask[0] == 0x3 && mask[1] == 0 && mask[3] == 0);
  IS(hsa_amd_queue_cu_set_mask(r.queue, 33, two_cus), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_queue_cu_get_mask(r.queue, 0, mask), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  dispatch(&r, ko, args, sizeof args, kernarg_size, 1024);
  OK(hsa_amd_queue_cu_set_mask(r.queue, 0, NULL));
  OK(hsa_amd_queue_cu_get_mask(r.queue, 128, mask));
  EXPECT(mask[1] == 0xffffffffu && mask[3] == 0xffu);
  /* KFD UPDATE_QUEUE with priority 0, then 15 (capi/tests/c_abi.rs reads the record). */
  OK(hsa_amd_queue_set_priority(r.queue, HSA_AMD_QUEUE_PRIORITY_LOW));
  OK(hsa_amd_queue_set_priority(r.queue, HSA_AMD_QUEUE_PRIORITY_HIGH));
  IS(hsa_amd_queue_set_priority(r.queue, (hsa_amd_queue_priority_t)7),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);

  OK(hsa_queue_destroy(r.queue));
  OK(hsa_signal_destroy(r.done));
  OK(hsa_amd_memory_pool_free(in));
  OK(hsa_amd_memory_pool_free(out));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
}

/* A code object reading a variable it does not define: defined by the application. */
static hsa_status_t count_agent_symbols(hsa_executable_t e, hsa_agent_t a,
                                        hsa_executable_symbol_t s, void* data) {
  (void)e;
  (void)a;
  (void)s;
  ++*(int*)data;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t count_program_symbols(hsa_executable_t e, hsa_executable_symbol_t s,
                                          void* data) {
  (void)e;
  (void)s;
  ++*(int*)data;
  return HSA_STATUS_SUCCESS;
}

static void variables(const void* bytes, size_t size) {
  hsa_code_object_reader_t reader;
  hsa_executable_t e = load(bytes, size, &reader);
  IS(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, NULL),
     HSA_STATUS_ERROR_VARIABLE_UNDEFINED);
  int* ext;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&ext));
  *ext = 0x5eed;
  OK(hsa_executable_agent_global_variable_define(e, gpu, "ext_var", ext));
  IS(hsa_executable_agent_global_variable_define(e, gpu, "ext_var", ext),
     HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED);
  OK(hsa_executable_global_variable_define(e, "program_var", ext + 1));
  /* A read-only variable: an agent symbol of the readonly segment (ROCR 5.2's agent
     symbols hold it too). */
  OK(hsa_executable_readonly_variable_define(e, gpu, "ro_var", ext + 2));
  IS(hsa_executable_readonly_variable_define(e, gpu, "ro_var", ext + 2),
     HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED);
  OK(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  IS(hsa_executable_global_variable_define(e, "late", ext), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
  IS(hsa_executable_readonly_variable_define(e, gpu, "late", ext),
     HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
  hsa_executable_symbol_t ro;
  OK(hsa_executable_get_symbol_by_name(e, "ro_var", &gpu, &ro));
  uint64_t ro_address = 0;
  uint32_t ro_segment = 9;
  OK(hsa_executable_symbol_get_info(ro, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                                    &ro_address));
  EXPECT(ro_address == (uint64_t)(uintptr_t)(ext + 2));
  OK(hsa_executable_symbol_get_info(ro, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT,
                                    &ro_segment));
  EXPECT(ro_segment == HSA_VARIABLE_SEGMENT_READONLY);

  hsa_executable_symbol_t var;
  OK(hsa_executable_get_symbol_by_name(e, "ext_var", &gpu, &var));
  uint64_t address = 0;
  uint32_t alloc = 9, kind = 9;
  OK(hsa_executable_symbol_get_info(var, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &address));
  EXPECT(address == (uint64_t)(uintptr_t)ext);
  OK(hsa_executable_symbol_get_info(var, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION, &alloc));
  EXPECT(alloc == HSA_VARIABLE_ALLOCATION_AGENT);
  OK(hsa_executable_symbol_get_info(var, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
  EXPECT(kind == HSA_SYMBOL_KIND_VARIABLE);
  int agent_symbols = 0, program_symbols = 0;
  OK(hsa_executable_iterate_agent_symbols(e, gpu, count_agent_symbols, &agent_symbols));
  EXPECT(agent_symbols == 3); /* read_ext.kd, ext_var and ro_var */
  OK(hsa_executable_iterate_program_symbols(e, count_program_symbols, &program_symbols));
  EXPECT(program_symbols == 1);

  /* The kernel reads the variable through the relocated address. */
  uint32_t kernarg_size;
  uint64_t ko = kernel(e, "read_ext.kd", &kernarg_size);
  Runner r;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &r.queue));
  OK(hsa_signal_create(1, 0, NULL, &r.done));
  int* out;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&out));
  void* args[1] = {out};
  dispatch(&r, ko, args, sizeof args, kernarg_size, 1);
  EXPECT(*out == 0x5eed);
  OK(hsa_queue_destroy(r.queue));
  OK(hsa_signal_destroy(r.done));
  OK(hsa_amd_memory_pool_free(out));
  OK(hsa_amd_memory_pool_free(ext));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
}

/* ---- copies, fills, locked memory ---- */

static void copies(void) {
  const size_t n = 1 << 20;
  unsigned char *dev, *host;
  OK(hsa_amd_memory_pool_allocate(vram, n, 0, (void**)&dev));
  OK(hsa_amd_memory_pool_allocate(fine, n, 0, (void**)&host));
  for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 13);
  hsa_signal_t dep, done;
  OK(hsa_signal_create(1, 0, NULL, &dep));
  OK(hsa_signal_create(1, 0, NULL, &done));
  OK(hsa_amd_profiling_async_copy_enable(true));
  /* Waits for its dependency. */
  OK(hsa_amd_memory_async_copy(dev, gpu, host, cpu, n, 1, &dep, done));
  sleep_ms(50);
  EXPECT(hsa_signal_load_scacquire(done) == 1);
  hsa_signal_store_screlease(dep, 0);
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  hsa_amd_profiling_async_copy_time_t ct = {0, 0};
  OK(hsa_amd_profiling_get_async_copy_time(done, &ct));
  EXPECT(ct.start != 0 && ct.start <= ct.end);
  OK(hsa_amd_profiling_async_copy_enable(false));
  /* Back, 3 bytes past an odd offset. */
  memset(host, 0, n);
  hsa_signal_store_screlease(done, 1);
  OK(hsa_amd_memory_async_copy(host + 1, cpu, dev + 1, gpu, n - 3, 0, NULL, done));
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  int same = host[0] == 0 && host[n - 2] == 0;
  for (size_t i = 1; i < n - 2; i++) same &= host[i] == (unsigned char)(i * 13);
  EXPECT(same);
  IS(hsa_amd_profiling_get_async_copy_time(dep, &ct), HSA_STATUS_ERROR); /* never profiled */
  /* Size 0 copies nothing and leaves the signal. */
  OK(hsa_amd_memory_async_copy(host, cpu, dev, gpu, 0, 0, NULL, done));
  EXPECT(hsa_signal_load_relaxed(done) == 0);
  IS(hsa_amd_memory_async_copy(host, cpu, dev, gpu, 8, 1, NULL, done),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_signal_t nosig = {8};
  IS(hsa_amd_memory_async_copy(host, cpu, dev, gpu, 8, 0, NULL, nosig),
     HSA_STATUS_ERROR_INVALID_SIGNAL);

  /* A 16 x 8 byte rect of a 64-byte-pitch surface into a 32-byte-pitch one. */
  for (size_t i = 0; i < 4096; i++) host[i] = (unsigned char)i;
  hsa_pitched_ptr_t src = {host, 64, 0}, dst = {dev, 32, 0};
  hsa_dim3_t so = {8, 2, 0}, dof = {4, 1, 0}, range = {16, 8, 1};
  hsa_signal_store_screlease(done, 1);
  OK(hsa_amd_memory_async_copy_rect(&dst, &dof, &src, &so, &range, gpu, hsaHostToDevice, 0, NULL,
                                    done));
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  int rect = 1;
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 16; x++) rect &= dev[(1 + y) * 32 + 4 + x] == host[(2 + y) * 64 + 8 + x];
  EXPECT(rect);
  hsa_dim3_t wide = {40, 1, 1};
  IS(hsa_amd_memory_async_copy_rect(&dst, &dof, &src, &so, &wide, gpu, hsaHostToDevice, 0, NULL,
                                    done),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_memory_async_copy_rect(&dst, &dof, &src, &so, &range, cpu, hsaHostToDevice, 0, NULL,
                                    done),
     HSA_STATUS_ERROR_INVALID_AGENT);

  /* Fill: 32-bit words, 4-byte aligned. */
  OK(hsa_amd_memory_fill(dev + 8, 0xdeadbeef, 100));
  EXPECT(((uint32_t*)dev)[2] == 0xdeadbeef && ((uint32_t*)dev)[101] == 0xdeadbeef);
  IS(hsa_amd_memory_fill(dev + 2, 0, 4), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* Locked memory: its own agent pointer, reached by copies through either address. */
  char* m = malloc(3 * 4096);
  char* buf = m + 100;
  for (int i = 0; i < 5000; i++) buf[i] = (char)(i * 3);
  void* agent_ptr = NULL;
  OK(hsa_amd_memory_lock(buf, 5000, NULL, 0, &agent_ptr));
  EXPECT(agent_ptr != NULL && agent_ptr != buf);
  hsa_amd_pointer_info_t info = {.size = sizeof info};
  OK(hsa_amd_pointer_info(agent_ptr, &info, NULL, NULL, NULL));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_LOCKED && info.hostBaseAddress == buf &&
         info.agentBaseAddress == agent_ptr && info.sizeInBytes == 5000 &&
         info.agentOwner.handle == cpu.handle);
  OK(hsa_amd_pointer_info(buf + 10, &info, NULL, NULL, NULL));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_LOCKED && info.hostBaseAddress == buf);
  hsa_signal_store_screlease(done, 1);
  OK(hsa_amd_memory_async_copy(dev, gpu, agent_ptr, cpu, 5000, 0, NULL, done));
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  EXPECT(!memcmp(dev, buf, 5000));
  void* again = NULL;
  OK(hsa_amd_memory_lock_to_pool(buf, 5000, NULL, 0, fine, 0, &again));
  EXPECT(again == agent_ptr); /* the same pages share their registration */
  IS(hsa_amd_memory_lock_to_pool(buf, 5000, NULL, 0, vram, 0, &again),
     HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  OK(hsa_amd_memory_unlock(buf));
  OK(hsa_amd_memory_unlock(buf));
  OK(hsa_amd_pointer_info(buf, &info, NULL, NULL, NULL));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_UNKNOWN);
  OK(hsa_amd_memory_unlock(buf)); /* not locked: SUCCESS, as ROCR */
  IS(hsa_amd_memory_lock(buf, 0, NULL, 0, &agent_ptr), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* Runtime memory is already reachable: its own address. */
  OK(hsa_amd_memory_lock(host, 64, NULL, 0, &agent_ptr));
  EXPECT(agent_ptr == host);
  OK(hsa_amd_memory_unlock(host));
  OK(hsa_memory_register(buf, 100));
  IS(hsa_memory_register(buf, 0), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_memory_deregister(buf, 100));
  free(m);

  OK(hsa_signal_destroy(dep));
  OK(hsa_signal_destroy(done));
  OK(hsa_amd_memory_pool_free(dev));
  OK(hsa_amd_memory_pool_free(host));
}

/* ---- signals and handlers ---- */

static atomic_int handler_calls, function_calls, dealloc_calls;
static hsa_signal_value_t handler_value;

static bool on_signal(hsa_signal_value_t v, void* arg) {
  handler_value = v;
  int n = atomic_fetch_add(&handler_calls, 1) + 1;
  (void)arg;
  return n < 2; /* re-armed once */
}

static void on_function(void* arg) { atomic_fetch_add(&function_calls, *(int*)arg); }

static void on_dealloc(void* ptr, void* data) {
  (void)ptr;
  atomic_fetch_add(&dealloc_calls, *(int*)data);
}

static hsa_status_t refree_status = HSA_STATUS_SUCCESS;
static void on_dealloc_refree(void* ptr, void* data) {
  (void)data;
  refree_status = hsa_amd_memory_pool_free(ptr);
}

static void signals(void) {
  hsa_signal_t s, gpu_only;
  OK(hsa_amd_signal_create(0, 0, NULL, 0, &s));
  OK(hsa_amd_signal_create(5, 1, &gpu, HSA_AMD_SIGNAL_AMD_GPU_ONLY, &gpu_only));
  hsa_agent_t twice[2] = {cpu, cpu};
  hsa_signal_t x;
  IS(hsa_amd_signal_create(0, 2, twice, 0, &x), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  volatile hsa_signal_value_t* value = NULL;
  OK(hsa_amd_signal_value_pointer(gpu_only, &value));
  EXPECT(value && *value == 5);
  *value = 6;
  EXPECT(hsa_signal_load_relaxed(gpu_only) == 6);
  IS(hsa_amd_signal_value_pointer(s, &value), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* A handler on an interrupt signal: called when the condition holds, re-armed while it
     returns true (and so called again at once while the condition still holds, as ROCR). */
  IS(hsa_amd_signal_async_handler(gpu_only, HSA_SIGNAL_CONDITION_EQ, 1, on_signal, NULL),
     HSA_STATUS_ERROR_INVALID_SIGNAL);
  IS(hsa_amd_signal_async_handler(s, HSA_SIGNAL_CONDITION_EQ, 1, NULL, NULL),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_amd_signal_async_handler(s, HSA_SIGNAL_CONDITION_GTE, 7, on_signal, NULL));
  sleep_ms(20);
  EXPECT(atomic_load(&handler_calls) == 0);
  hsa_signal_store_screlease(s, 7);
  EXPECT(wait_for(&handler_calls, 2));
  EXPECT(handler_value == 7);
  hsa_signal_store_screlease(s, 9);
  sleep_ms(50);
  EXPECT(atomic_load(&handler_calls) == 2); /* returned false the second time: gone */

  int three = 3;
  OK(hsa_amd_async_function(on_function, &three));
  EXPECT(wait_for(&function_calls, 3));
  IS(hsa_amd_async_function(NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* A handler whose signal is destroyed is dropped. */
  OK(hsa_amd_signal_async_handler(s, HSA_SIGNAL_CONDITION_EQ, 100, on_signal, NULL));
  OK(hsa_signal_destroy(s));
  OK(hsa_signal_destroy(gpu_only));

  /* Deallocation callbacks run before the free; user data shows in pointer info. */
  void* p;
  OK(hsa_amd_memory_pool_allocate(fine, 8192, 0, &p));
  int five = 5;
  OK(hsa_amd_register_deallocation_callback((char*)p + 100, on_dealloc, &five));
  OK(hsa_amd_register_deallocation_callback(p, on_dealloc, &five));
  OK(hsa_amd_deregister_deallocation_callback(p, on_dealloc));
  IS(hsa_amd_deregister_deallocation_callback(p, on_dealloc), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  int local;
  IS(hsa_amd_register_deallocation_callback(&local, on_dealloc, &five),
     HSA_STATUS_ERROR_INVALID_ALLOCATION);
  OK(hsa_amd_pointer_info_set_userdata(p, &local));
  IS(hsa_amd_pointer_info_set_userdata((char*)p + 8, &local), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_amd_pointer_info_t info = {.size = sizeof info};
  OK(hsa_amd_pointer_info(p, &info, NULL, NULL, NULL));
  EXPECT(info.userData == &local);
  OK(hsa_amd_memory_pool_free(p));
  EXPECT(atomic_load(&dealloc_calls) == 5);
  /* As ROCR 5.2 (Runtime::FreeMemory): the allocation leaves the runtime's map before its
     callbacks run, so freeing it again from one (rocrtst's Deallocation_Notifier_Test) is
     INVALID_ALLOCATION, and so is freeing it after. */
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, &p));
  OK(hsa_amd_register_deallocation_callback(p, on_dealloc_refree, NULL));
  OK(hsa_amd_memory_pool_free(p));
  EXPECT(refree_status == HSA_STATUS_ERROR_INVALID_ALLOCATION);
  IS(hsa_amd_memory_pool_free(p), HSA_STATUS_ERROR_INVALID_ALLOCATION);
  OK(hsa_amd_register_system_event_handler(NULL, NULL));
}

/* ---- agents, ISAs, HSA 1.0 code objects, features not provided ---- */

static int caches_seen;
static hsa_cache_t first_cache;
static hsa_status_t on_cache(hsa_cache_t c, void* data) {
  (void)data;
  if (!caches_seen++) first_cache = c;
  return HSA_STATUS_SUCCESS;
}

static hsa_wavefront_t wavefront;
static hsa_status_t on_wavefront(hsa_wavefront_t w, void* data) {
  (void)data;
  wavefront = w;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t serialize_alloc(size_t size, hsa_callback_data_t data, void** address) {
  (void)data;
  *address = malloc(size);
  return HSA_STATUS_SUCCESS;
}

static int code_symbols_seen;
static hsa_status_t on_code_symbol(hsa_code_object_t co, hsa_code_symbol_t s, void* data) {
  (void)co;
  (void)s;
  (void)data;
  code_symbols_seen++;
  return HSA_STATUS_SUCCESS;
}

static void agents_and_code_objects(const void* bytes, size_t size) {
  OK(hsa_agent_iterate_caches(gpu, on_cache, NULL));
  EXPECT(caches_seen >= 1);
  uint8_t level = 0;
  uint32_t name_len = 0;
  const char* cache_name = NULL;
  char agent_name[64];
  OK(hsa_cache_get_info(first_cache, HSA_CACHE_INFO_LEVEL, &level));
  OK(hsa_cache_get_info(first_cache, HSA_CACHE_INFO_NAME_LENGTH, &name_len));
  OK(hsa_cache_get_info(first_cache, HSA_CACHE_INFO_NAME, &cache_name));
  OK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, agent_name));
  char want[80];
  snprintf(want, sizeof want, "%s L%u", agent_name, level);
  EXPECT(level >= 1 && cache_name && !strcmp(cache_name, want) && name_len == strlen(want));
  hsa_cache_t bogus = {3};
  IS(hsa_cache_get_info(bogus, HSA_CACHE_INFO_LEVEL, &level), HSA_STATUS_ERROR_INVALID_CACHE);

  hsa_isa_t isa, by_name;
  OK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_ISA, &isa));
  char isa_name[64] = {0};
  OK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, isa_name));
  OK(hsa_isa_from_name(isa_name, &by_name));
  EXPECT(by_name.handle == isa.handle);
  IS(hsa_isa_from_name("amdgcn-amd-amdhsa--gfx1100", &by_name), HSA_STATUS_ERROR_INVALID_ISA_NAME);
  uint16_t policies = 9;
  OK(hsa_isa_get_exception_policies(isa, HSA_PROFILE_BASE, &policies));
  EXPECT(policies == 0);
  hsa_round_method_t round = 0;
  OK(hsa_isa_get_round_method(isa, HSA_FP_TYPE_32, HSA_FLUSH_MODE_FTZ, &round));
  EXPECT(round == HSA_ROUND_METHOD_SINGLE);
  IS(hsa_isa_get_round_method(isa, 3, HSA_FLUSH_MODE_FTZ, &round), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_isa_iterate_wavefronts(isa, on_wavefront, NULL));
  uint32_t wave = 0;
  OK(hsa_wavefront_get_info(wavefront, HSA_WAVEFRONT_INFO_SIZE, &wave));
  EXPECT(wave == 64);

  hsa_amd_coherency_type_t coherency;
  OK(hsa_amd_coherency_get_type(gpu, &coherency));
  EXPECT(coherency == HSA_AMD_COHERENCY_TYPE_NONCOHERENT);
  OK(hsa_amd_coherency_set_type(gpu, HSA_AMD_COHERENCY_TYPE_COHERENT));
  OK(hsa_amd_coherency_get_type(gpu, &coherency));
  EXPECT(coherency == HSA_AMD_COHERENCY_TYPE_COHERENT);
  IS(hsa_amd_coherency_get_type(cpu, &coherency), HSA_STATUS_ERROR_INVALID_AGENT);

  /* HSA 1.0 code objects. */
  hsa_code_object_t co;
  OK(hsa_code_object_deserialize((void*)bytes, size, NULL, &co));
  char co_isa[64] = {0};
  OK(hsa_code_object_get_info(co, HSA_CODE_OBJECT_INFO_ISA, co_isa));
  EXPECT(!strcmp(co_isa, "amdgcn-amd-amdhsa--gfx90a")); /* built for any sramecc/xnack */
  char version[64];
  IS(hsa_code_object_get_info(co, HSA_CODE_OBJECT_INFO_VERSION, version),
     HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
  hsa_code_symbol_t cs;
  OK(hsa_code_object_get_symbol(co, "vector_add.kd", &cs));
  uint32_t kernarg = 0;
  OK(hsa_code_symbol_get_info(cs, HSA_CODE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg));
  EXPECT(kernarg == 24);
  OK(hsa_code_object_get_symbol_from_name(co, NULL, "local_reverse", &cs));
  OK(hsa_code_symbol_get_info(cs, HSA_CODE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &kernarg));
  EXPECT(kernarg == 1024);
  IS(hsa_code_object_get_symbol(co, "nothing", &cs), HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
  OK(hsa_code_object_iterate_symbols(co, on_code_symbol, NULL));
  EXPECT(code_symbols_seen == 3);
  void* ser = NULL;
  size_t ser_size = 0;
  hsa_callback_data_t cb = {0};
  OK(hsa_code_object_serialize(co, serialize_alloc, cb, NULL, &ser, &ser_size));
  EXPECT(ser_size == size && !memcmp(ser, bytes, size));
  free(ser);
  hsa_executable_t e;
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e));
  OK(hsa_executable_load_code_object(e, gpu, co, NULL));
  OK(hsa_executable_freeze(e, NULL));
  hsa_executable_symbol_t sym;
  OK(hsa_executable_get_symbol_by_name(e, "vector_copy.kd", &gpu, &sym));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_destroy(co));
  IS(hsa_code_object_destroy(co), HSA_STATUS_ERROR_INVALID_CODE_OBJECT);

  /* Features not provided: ROCR 5.2's statuses without them. */
  /* The finalizer's program functions: NOT_INITIALIZED, as ROCR without it. */
  hsa_ext_program_t program;
  IS(hsa_ext_program_create(HSA_MACHINE_MODEL_LARGE, HSA_PROFILE_BASE,
                            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &program),
     HSA_STATUS_ERROR_NOT_INITIALIZED);
  program.handle = 1;
  hsa_ext_module_t module = NULL;
  IS(hsa_ext_program_add_module(program, module), HSA_STATUS_ERROR_NOT_INITIALIZED);
  IS(hsa_ext_program_iterate_modules(program, NULL, NULL), HSA_STATUS_ERROR_NOT_INITIALIZED);
  hsa_machine_model_t model;
  IS(hsa_ext_program_get_info(program, HSA_EXT_PROGRAM_INFO_MACHINE_MODEL, &model),
     HSA_STATUS_ERROR_NOT_INITIALIZED);
  hsa_ext_control_directives_t directives;
  memset(&directives, 0, sizeof directives);
  hsa_isa_t no_isa = {0};
  hsa_code_object_t finalized;
  IS(hsa_ext_program_finalize(program, no_isa, 0, directives, NULL,
                              HSA_CODE_OBJECT_TYPE_PROGRAM, &finalized),
     HSA_STATUS_ERROR_NOT_INITIALIZED);
  IS(hsa_ext_program_destroy(program), HSA_STATUS_ERROR_NOT_INITIALIZED);
  void* p;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, &p));
  hsa_amd_ipc_memory_t ipc;
  /* System memory of a pool is host pages KFD cannot export (c/ipc.c shares VRAM). */
  IS(hsa_amd_ipc_memory_create(p, 4096, &ipc), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_amd_svm_attribute_pair_t attr = {HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu.handle};
  IS(hsa_amd_svm_attributes_set(p, 4096, &attr, 1), HSA_STATUS_ERROR);
  attr.attribute = HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION;
  IS(hsa_amd_svm_attributes_set(p, 4096, &attr, 1), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* Reading: a readable attribute gets ERROR (no SVM), one only for setting INVALID_ARGUMENT. */
  hsa_amd_svm_attribute_pair_t get = {HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0};
  IS(hsa_amd_svm_attributes_get(p, 4096, &get, 1), HSA_STATUS_ERROR);
  get.attribute = HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE;
  IS(hsa_amd_svm_attributes_get(p, 4096, &get, 1), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_memory_migrate(p, vram, 0), HSA_STATUS_ERROR_OUT_OF_RESOURCES);
  bool can = true;
  IS(hsa_amd_memory_pool_can_migrate(fine, vram, &can), HSA_STATUS_ERROR_OUT_OF_RESOURCES);
  EXPECT(!can);
  size_t isize;
  void* iptr;
  IS(hsa_amd_interop_map_buffer(1, &gpu, 3, 0, &isize, &iptr, NULL, NULL), HSA_STATUS_ERROR);
  OK(hsa_amd_interop_unmap_buffer(p));
  hsa_signal_t done;
  OK(hsa_signal_create(1, 0, NULL, &done));
  OK(hsa_amd_svm_prefetch_async(p, 4096, gpu, 0, NULL, done));
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  OK(hsa_signal_destroy(done));
  OK(hsa_amd_memory_pool_free(p));
}

/* ---- the image extension (hsa_ext_image.h) ---- */

/* The dword `i` of an image or sampler object (handles are the objects' addresses). */
static uint32_t word(uint64_t handle, int i) { return ((const uint32_t*)(uintptr_t)handle)[i]; }

static void images(void) {
  bool yes = false;
  uint16_t minor = 9;
  OK(hsa_agent_extension_supported(HSA_EXTENSION_IMAGES, gpu, 1, 0, &yes));
  EXPECT(yes);
  OK(hsa_agent_major_extension_supported(HSA_EXTENSION_IMAGES, gpu, 1, &minor, &yes));
  EXPECT(yes && minor == 0);
  OK(hsa_agent_extension_supported(HSA_EXTENSION_IMAGES, cpu, 1, 0, &yes));
  EXPECT(!yes);

  /* The tables: 1.00 is the first ten functions, the major table all thirteen. */
  hsa_ext_images_1_pfn_t t;
  OK(hsa_system_get_major_extension_table(HSA_EXTENSION_IMAGES, 1, sizeof t, &t));
  EXPECT(t.hsa_ext_image_create == hsa_ext_image_create);
  EXPECT(t.hsa_ext_sampler_destroy == hsa_ext_sampler_destroy);
  EXPECT(t.hsa_ext_image_create_with_layout == hsa_ext_image_create_with_layout);
  unsigned char raw[sizeof(hsa_ext_images_1_pfn_t)];
  memset(raw, 0xee, sizeof raw);
  OK(hsa_system_get_extension_table(HSA_EXTENSION_IMAGES, 1, 0, raw));
  EXPECT(((hsa_ext_images_1_00_pfn_t*)raw)->hsa_ext_image_clear == hsa_ext_image_clear);
  EXPECT(raw[sizeof(hsa_ext_images_1_00_pfn_t)] == 0xee);

  /* Limits: the T#'s 14-bit width/height and 13-bit depth fields; ROCR's handle counts. */
  uint32_t dims[3] = {0, 0, 0}, n = 0;
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_IMAGE_2D_MAX_ELEMENTS, dims));
  EXPECT(dims[0] == 16384 && dims[1] == 16384);
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_IMAGE_3D_MAX_ELEMENTS, dims));
  EXPECT(dims[0] == 16384 && dims[1] == 16384 && dims[2] == 8192);
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_IMAGE_ARRAY_MAX_LAYERS, &n));
  EXPECT(n == 8192);
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_MAX_IMAGE_RD_HANDLES, &n));
  EXPECT(n == 128);
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_MAX_IMAGE_RORW_HANDLES, &n));
  EXPECT(n == 64);
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_MAX_SAMPLER_HANDLERS, &n));
  EXPECT(n == 16);
  OK(hsa_agent_get_info(cpu, (hsa_agent_info_t)HSA_EXT_AGENT_INFO_MAX_SAMPLER_HANDLERS, &n));
  EXPECT(n == 0);
  dims[0] = dims[1] = 0;
  OK(hsa_amd_image_get_info_max_dim(gpu, HSA_EXT_AGENT_INFO_IMAGE_2DA_MAX_ELEMENTS, dims));
  EXPECT(dims[0] == 16384 && dims[1] == 16384);
  IS(hsa_amd_image_get_info_max_dim(gpu, HSA_AGENT_INFO_NAME, dims),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* Capabilities. */
  hsa_ext_image_format_t rgba8 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_format_t srgba = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_SRGBA};
  hsa_ext_image_format_t r24 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT24,
                                HSA_EXT_IMAGE_CHANNEL_ORDER_R};
  uint32_t cap = 99;
  OK(hsa_ext_image_get_capability(gpu, HSA_EXT_IMAGE_GEOMETRY_2D, &rgba8, &cap));
  EXPECT(cap == (HSA_EXT_IMAGE_CAPABILITY_READ_ONLY | HSA_EXT_IMAGE_CAPABILITY_WRITE_ONLY |
                 HSA_EXT_IMAGE_CAPABILITY_READ_WRITE));
  OK(hsa_ext_image_get_capability(gpu, HSA_EXT_IMAGE_GEOMETRY_2D, &srgba, &cap));
  EXPECT(cap == HSA_EXT_IMAGE_CAPABILITY_READ_ONLY);
  OK(hsa_ext_image_get_capability(gpu, HSA_EXT_IMAGE_GEOMETRY_2D, &r24, &cap));
  EXPECT(cap == 0);
  OK(hsa_ext_image_get_capability(cpu, HSA_EXT_IMAGE_GEOMETRY_2D, &rgba8, &cap));
  EXPECT(cap == 0);
  IS(hsa_ext_image_get_capability(gpu, (hsa_ext_image_geometry_t)8, &rgba8, &cap),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_ext_image_get_capability((hsa_agent_t){0}, HSA_EXT_IMAGE_GEOMETRY_2D, &rgba8, &cap),
     HSA_STATUS_ERROR_INVALID_AGENT);
  OK(hsa_ext_image_get_capability_with_layout(gpu, HSA_EXT_IMAGE_GEOMETRY_3D, &rgba8,
                                              HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, &cap));
  EXPECT(cap == 7);
  IS(hsa_ext_image_get_capability_with_layout(gpu, HSA_EXT_IMAGE_GEOMETRY_3D, &rgba8,
                                              HSA_EXT_IMAGE_DATA_LAYOUT_OPAQUE, &cap),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* Sizes: 100 texels of 4 bytes are 400 bytes, a row pitch of 512; 3 rows. */
  hsa_ext_image_descriptor_t d = {HSA_EXT_IMAGE_GEOMETRY_2D, 100, 3, 0, 0, rgba8};
  hsa_ext_image_data_info_t info = {0, 0};
  OK(hsa_ext_image_data_get_info(gpu, &d, HSA_ACCESS_PERMISSION_RW, &info));
  EXPECT(info.size == 1536 && info.alignment == 256);
  OK(hsa_ext_image_data_get_info_with_layout(gpu, &d, HSA_ACCESS_PERMISSION_RO,
                                             HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, 1024, 0, &info));
  EXPECT(info.size == 3072);
  IS(hsa_ext_image_data_get_info_with_layout(gpu, &d, HSA_ACCESS_PERMISSION_RO,
                                             HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, 0, 0, &info),
     HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED); /* 400 bytes is no multiple of 256 */
  IS(hsa_ext_image_data_get_info(gpu, &d, (hsa_access_permission_t)0, &info),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_ext_image_descriptor_t bad = d;
  bad.width = 0;
  IS(hsa_ext_image_data_get_info(gpu, &bad, HSA_ACCESS_PERMISSION_RW, &info),
     HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED);
  bad = d;
  bad.format = r24;
  IS(hsa_ext_image_data_get_info(gpu, &bad, HSA_ACCESS_PERMISSION_RW, &info),
     HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED);
  const char* text = NULL;
  OK(hsa_status_string((hsa_status_t)HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED, &text));
  EXPECT(text && strstr(text, "HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED"));

  /* An image over system memory; its object holds the T# and ROCm's three extra dwords. */
  uint8_t *mem, *mem2;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&mem));
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&mem2));
  memset(mem, 0, 4096);
  memset(mem2, 0, 4096);
  hsa_ext_image_t img = {0}, img2 = {0};
  IS(hsa_ext_image_create(gpu, &d, mem + 4, HSA_ACCESS_PERMISSION_RW, &img),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_ext_image_create(gpu, &d, (void*)(uintptr_t)0xffffffffffffff00ull,
                          HSA_ACCESS_PERMISSION_RW, &img),
     HSA_STATUS_ERROR_INVALID_ARGUMENT); /* its 1536 bytes would wrap around */
  OK(hsa_ext_image_create(gpu, &d, mem, HSA_ACCESS_PERMISSION_RW, &img));
  EXPECT(img.handle != 0 && img.handle % 16 == 0);
  uint64_t addr = (uint64_t)(uintptr_t)mem;
  EXPECT(word(img.handle, 0) == (uint32_t)(addr >> 8));
  EXPECT((word(img.handle, 1) & 0xff) == (uint32_t)((addr >> 40) & 0xff));
  EXPECT(((word(img.handle, 1) >> 20) & 0x3f) == 10); /* IMG_DATA_FORMAT 8_8_8_8 */
  EXPECT((word(img.handle, 2) & 0x3fff) == 99 && ((word(img.handle, 2) >> 14) & 0x3fff) == 2);
  EXPECT((word(img.handle, 3) >> 28) == 9);                       /* SQ_RSRC_IMG_2D */
  EXPECT(((word(img.handle, 4) >> 13) & 0xffff) == 127);          /* PITCH-1, texels */
  EXPECT(word(img.handle, 8) == HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8);
  EXPECT(word(img.handle, 9) == HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA);
  EXPECT(word(img.handle, 10) == 100);

  /* Import the whole image from tightly packed bytes: rows land 512 bytes apart. */
  uint8_t src[400 * 3], out[20 * 4 * 2];
  for (int i = 0; i < 1200; i++) src[i] = (uint8_t)(i * 7 + 3);
  hsa_ext_image_region_t whole = {{0, 0, 0}, {100, 3, 1}};
  OK(hsa_ext_image_import(gpu, src, 0, 0, img, &whole));
  for (int row = 0; row < 3; row++) EXPECT(!memcmp(mem + row * 512, src + row * 400, 400));
  EXPECT(mem[400] == 0); /* padding untouched */
  /* Export 20 x 2 texels from (10, 1). */
  hsa_ext_image_region_t part = {{10, 1, 0}, {20, 2, 1}};
  OK(hsa_ext_image_export(gpu, img, out, 80, 0, &part));
  for (int row = 0; row < 2; row++)
    EXPECT(!memcmp(out + row * 80, src + (row + 1) * 400 + 40, 80));
  hsa_ext_image_region_t outside = {{90, 0, 0}, {20, 1, 1}};
  IS(hsa_ext_image_export(gpu, img, out, 0, 0, &outside), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* A row pitch below the region's row of 400 bytes: the tight pitch is used (header). */
  OK(hsa_ext_image_import(gpu, src, 10, 0, img, &whole));
  EXPECT(!memcmp(mem + 512, src + 400, 400));
  /* A row pitch whose last row lies past the end of the address space. */
  IS(hsa_ext_image_export(gpu, img, out, SIZE_MAX - 64, 0, &part), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* Clear 2 texels of row 2 to (1.0, 0.5, 0, 0.25): unorm8 255, 128 (ties to even), 0, 64. */
  float color[4] = {1.0f, 0.5f, 0.0f, 0.25f};
  hsa_ext_image_region_t two = {{5, 2, 0}, {2, 1, 1}};
  OK(hsa_ext_image_clear(gpu, img, color, &two));
  const uint8_t want[8] = {255, 128, 0, 64, 255, 128, 0, 64};
  EXPECT(!memcmp(mem + 2 * 512 + 5 * 4, want, 8));
  EXPECT(!memcmp(mem + 2 * 512 + 7 * 4, src + 2 * 400 + 28, 4)); /* the next texel kept */

  /* Copy a 4 x 2 block to (0, 0) of a second image of the same format; other formats refuse. */
  OK(hsa_ext_image_create(gpu, &d, mem2, HSA_ACCESS_PERMISSION_RW, &img2));
  hsa_dim3_t from = {4, 1, 0}, to = {0, 0, 0}, range = {4, 2, 1};
  OK(hsa_ext_image_copy(gpu, img, &from, img2, &to, &range));
  EXPECT(!memcmp(mem2, mem + 512 + 16, 16) && !memcmp(mem2 + 512, mem + 1024 + 16, 16));
  hsa_ext_image_descriptor_t rd = d;
  rd.format.channel_type = HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT8;
  hsa_ext_image_t img3;
  OK(hsa_ext_image_create(gpu, &rd, mem2 + 2048, HSA_ACCESS_PERMISSION_RW, &img3));
  IS(hsa_ext_image_copy(gpu, img, &from, img3, &to, &range),
     HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
  OK(hsa_ext_image_destroy(gpu, img3));

  /* hsa_amd_image_create: a linear T# layout of this device, given the image's own words. */
  hsa_amd_image_descriptor_t* layout = malloc(sizeof(*layout) + 8 * sizeof(uint32_t));
  uint32_t chip = 0;
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_CHIP_ID, &chip));
  layout->version = 1;
  layout->deviceID = 0x1002u << 16 | chip;
  for (int i = 0; i < 8; i++) layout->data[i] = word(img.handle, i);
  hsa_ext_image_t imported;
  OK(hsa_amd_image_create(gpu, &d, layout, mem2 + 1024, HSA_ACCESS_PERMISSION_RW, &imported));
  EXPECT(word(imported.handle, 0) == (uint32_t)(((uint64_t)(uintptr_t)mem2 + 1024) >> 8));
  EXPECT(word(imported.handle, 4) == word(img.handle, 4));
  OK(hsa_ext_image_destroy(gpu, imported));
  layout->deviceID ^= 1;
  IS(hsa_amd_image_create(gpu, &d, layout, mem2, HSA_ACCESS_PERMISSION_RW, &imported),
     HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED);
  layout->deviceID ^= 1;
  layout->data[3] |= 9u << 20; /* SW_MODE 9: a swizzled layout */
  IS(hsa_amd_image_create(gpu, &d, layout, mem2, HSA_ACCESS_PERMISSION_RW, &imported),
     HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED);
  IS(hsa_amd_image_create(gpu, &d, layout, mem2 + 16, HSA_ACCESS_PERMISSION_RW, &imported),
     HSA_STATUS_ERROR_INVALID_ALLOCATION);
  layout->data[3] &= ~(0x1fu << 20); /* linear again, but a PITCH of 51 texels < width 100 */
  layout->data[4] = (layout->data[4] & ~(0xffffu << 13)) | (50u << 13);
  IS(hsa_amd_image_create(gpu, &d, layout, mem2, HSA_ACCESS_PERMISSION_RW, &imported),
     HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED);
  free(layout);

  /* Samplers: the S# in the object the handle points to. */
  hsa_ext_sampler_descriptor_t sd = {HSA_EXT_SAMPLER_COORDINATE_MODE_NORMALIZED,
                                     HSA_EXT_SAMPLER_FILTER_MODE_LINEAR,
                                     HSA_EXT_SAMPLER_ADDRESSING_MODE_CLAMP_TO_EDGE};
  hsa_ext_sampler_t smp;
  OK(hsa_ext_sampler_create(gpu, &sd, &smp));
  EXPECT((word(smp.handle, 0) & 7) == 2);          /* SQ_TEX_CLAMP_LAST_TEXEL */
  EXPECT(((word(smp.handle, 0) >> 15) & 1) == 0);  /* normalized */
  EXPECT(((word(smp.handle, 2) >> 20) & 0xf) == 5); /* bilinear mag and min */
  OK(hsa_ext_sampler_destroy(gpu, smp));
  IS(hsa_ext_sampler_destroy(gpu, smp), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  sd.filter_mode = (hsa_ext_sampler_filter_mode32_t)7;
  IS(hsa_ext_sampler_create(gpu, &sd, &smp), HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED);
  sd.filter_mode = HSA_EXT_SAMPLER_FILTER_MODE_NEAREST;
  IS(hsa_ext_sampler_create(cpu, &sd, &smp), HSA_STATUS_ERROR_INVALID_AGENT);

  OK(hsa_ext_image_destroy(gpu, img));
  OK(hsa_ext_image_destroy(gpu, img2));
  IS(hsa_ext_image_destroy(gpu, img), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_ext_image_destroy((hsa_agent_t){0}, img2), HSA_STATUS_ERROR_INVALID_AGENT);
  IS(hsa_ext_image_import(gpu, src, 0, 0, img, &whole), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_amd_memory_pool_free(mem));
  OK(hsa_amd_memory_pool_free(mem2));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: rocr_ext KERNELS_CODE_OBJECT EXTERN_VAR_CODE_OBJECT\n");
    return 2;
  }
  bool yes;
  IS(hsa_system_extension_supported(HSA_EXTENSION_AMD_LOADER, 1, 0, &yes),
     HSA_STATUS_ERROR_NOT_INITIALIZED);
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(gpu, pick_pool, &vram));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_pool, &fine));
  size_t size = 0, ext_size = 0;
  void* bytes = read_file(argv[1], &size);
  void* ext = read_file(argv[2], &ext_size);
  if (!bytes || !ext || !size || !ext_size) {
    fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
    return 2;
  }
  extensions();
  loader_table(argv[1], bytes, size);
  queues(bytes, size);
  variables(ext, ext_size);
  copies();
  signals();
  agents_and_code_objects(bytes, size);
  images();
  OK(hsa_shut_down());
  free(bytes);
  free(ext);
  if (failures) {
    fprintf(stderr, "rocr_ext: %d failures\n", failures);
    return 1;
  }
  printf("rocr_ext: ok\n");
  return 0;
}
