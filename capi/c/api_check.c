/* Exercises the parts of the C API vector_copy.c does not: signal operations (every memory
 * order of each), waits, signal groups, hsa_amd_signal_wait_any, soft queues and index
 * operations (every memory order), regions,
 * hsa_memory_allocate/copy/free/assign_agent, hsa_amd_pointer_info, symbol iteration, error
 * statuses. Prints "api_check: ok" and exits 0 when every check holds.
 * Usage: api_check CODE_OBJECT */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                     \
    }                                                                 \
  } while (0)
#define OK(call) EXPECT((call) == HSA_STATUS_SUCCESS)

static hsa_status_t first_of_type(hsa_agent_t a, void* data) {
  hsa_agent_t* out = data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == (hsa_device_type_t)out[0].handle && out[1].handle == 0) {
    out[1] = a;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_fine_region(hsa_region_t r, void* data) {
  uint32_t flags;
  bool alloc;
  hsa_region_get_info(r, HSA_REGION_INFO_GLOBAL_FLAGS, &flags);
  hsa_region_get_info(r, HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && flags == HSA_REGION_GLOBAL_FLAG_FINE_GRAINED) {
    *(hsa_region_t*)data = r;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t count_symbols(hsa_executable_t e, hsa_executable_symbol_t s, void* data) {
  (void)e;
  hsa_symbol_kind_t kind;
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind);
  if (kind == HSA_SYMBOL_KIND_KERNEL) ++*(int*)data;
  return HSA_STATUS_SUCCESS;
}

static void* alloc_cb(size_t n) { return malloc(n); }

int main(int argc, char** argv) {
  hsa_signal_t s;
  EXPECT(hsa_signal_create(0, 0, NULL, &s) == HSA_STATUS_ERROR_NOT_INITIALIZED);
  OK(hsa_init());
  OK(hsa_init());
  OK(hsa_shut_down());

  hsa_agent_t cpu[2] = {{HSA_DEVICE_TYPE_CPU}, {0}}, gpu[2] = {{HSA_DEVICE_TYPE_GPU}, {0}};
  EXPECT(hsa_iterate_agents(first_of_type, cpu) == HSA_STATUS_INFO_BREAK);
  EXPECT(hsa_iterate_agents(first_of_type, gpu) == HSA_STATUS_INFO_BREAK);
  char name[64];
  EXPECT(hsa_agent_get_info(gpu[1], 0x7fff, name) == HSA_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT(hsa_agent_get_info(gpu[1], HSA_AGENT_INFO_NAME, NULL) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_agent_t bogus = {12345};
  EXPECT(hsa_agent_get_info(bogus, HSA_AGENT_INFO_NAME, name) == HSA_STATUS_ERROR_INVALID_AGENT);
  /* Grid maxima as ROCR 7.2.4 answers them (GpuAgent::GetInfo, Isa::GetInfo): INT32_MAX along
   * x, UINT16_MAX along y and z; the grid size UINT32_MAX. */
  hsa_dim3_t grid = {0, 0, 0};
  uint32_t grid_size = 0;
  OK(hsa_agent_get_info(gpu[1], HSA_AGENT_INFO_GRID_MAX_DIM, &grid));
  EXPECT(grid.x == 2147483647u && grid.y == 65535u && grid.z == 65535u);
  OK(hsa_agent_get_info(gpu[1], HSA_AGENT_INFO_GRID_MAX_SIZE, &grid_size));
  EXPECT(grid_size == 4294967295u);

  /* Signals: every operation. */
  OK(hsa_signal_create(10, 0, NULL, &s));
  EXPECT(hsa_signal_load_scacquire(s) == 10);
  hsa_signal_store_screlease(s, 7);
  EXPECT(hsa_signal_load_relaxed(s) == 7);
  EXPECT(hsa_signal_exchange_scacq_screl(s, 3) == 7);
  EXPECT(hsa_signal_cas_scacquire(s, 4, 9) == 3);
  EXPECT(hsa_signal_cas_screlease(s, 3, 9) == 3);
  hsa_signal_add_relaxed(s, 2);
  hsa_signal_subtract_scacq_screl(s, 12);
  EXPECT(hsa_signal_load_relaxed(s) == -1);
  hsa_signal_silent_store_relaxed(s, 12);
  hsa_signal_and_screlease(s, 10);
  hsa_signal_or_scacquire(s, 1);
  hsa_signal_xor_relaxed(s, 15);
  EXPECT(hsa_signal_load_scacquire(s) == 6);
  EXPECT(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 6, UINT64_MAX,
                                   HSA_WAIT_STATE_ACTIVE) == 6);
  /* Every memory order of each read-modify-write, one step at a time from a known value. */
  hsa_signal_store_relaxed(s, 100);
  hsa_signal_add_scacquire(s, 5);
  hsa_signal_add_screlease(s, 6);
  hsa_signal_add_scacq_screl(s, 7);
  EXPECT(hsa_signal_load_relaxed(s) == 118);
  hsa_signal_subtract_relaxed(s, 1);
  hsa_signal_subtract_scacquire(s, 2);
  hsa_signal_subtract_screlease(s, 3);
  EXPECT(hsa_signal_load_relaxed(s) == 112);
  hsa_signal_and_relaxed(s, 0x7e);   /* 0x70 & 0x7e */
  EXPECT(hsa_signal_load_relaxed(s) == 0x70);
  hsa_signal_and_scacquire(s, 0x3f);  /* 0x30 */
  hsa_signal_and_scacq_screl(s, 0x2f);  /* 0x20 */
  EXPECT(hsa_signal_load_relaxed(s) == 0x20);
  hsa_signal_or_relaxed(s, 1);
  hsa_signal_or_screlease(s, 2);
  hsa_signal_or_scacq_screl(s, 0x100);
  EXPECT(hsa_signal_load_relaxed(s) == 0x123);
  hsa_signal_xor_scacquire(s, 0x3);
  hsa_signal_xor_screlease(s, 0x20);
  hsa_signal_xor_scacq_screl(s, 0x1000);
  EXPECT(hsa_signal_load_relaxed(s) == 0x1100);
  EXPECT(hsa_signal_exchange_relaxed(s, 1) == 0x1100);
  EXPECT(hsa_signal_exchange_scacquire(s, 2) == 1);
  EXPECT(hsa_signal_exchange_screlease(s, 3) == 2);
  EXPECT(hsa_signal_cas_relaxed(s, 3, 4) == 3);
  EXPECT(hsa_signal_cas_relaxed(s, 3, 5) == 4); /* no match: unchanged */
  EXPECT(hsa_signal_cas_scacq_screl(s, 4, 6) == 4);
  hsa_signal_silent_store_screlease(s, 6);
  EXPECT(hsa_signal_load_scacquire(s) == 6);
  /* Timeout: 1 ms at the reported frequency. */
  uint64_t freq;
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq));
  {
    /* ROCR 7's system attributes (hsa.h 0x203-0x208; ROCR 5.2's headers lack the names). */
    bool b = true;
    OK(hsa_system_get_info((hsa_system_info_t)0x203, &b)); /* MWAITX_ENABLED */
    EXPECT(!b);
    b = false;
    /* DMABUF_SUPPORTED: the emulated amdkfd reports interface 1.17 (>= 1.12, ROCR 7's test). */
    OK(hsa_system_get_info((hsa_system_info_t)0x204, &b));
    EXPECT(b);
    b = false;
    /* VIRTUAL_MEM_API_SUPPORTED: interface 1.17 >= 1.15 and a GPU (ROCR 7's test). */
    OK(hsa_system_get_info((hsa_system_info_t)0x205, &b));
    EXPECT(b);
    b = true;
    OK(hsa_system_get_info((hsa_system_info_t)0x206, &b)); /* XNACK_ENABLED: HSA_XNACK unset */
    EXPECT(!b);
    uint16_t v[2] = {0xffff, 0xffff};
    OK(hsa_system_get_info((hsa_system_info_t)0x207, &v[0])); /* EXT_VERSION_MAJOR */
    OK(hsa_system_get_info((hsa_system_info_t)0x208, &v[1])); /* EXT_VERSION_MINOR */
    EXPECT(v[0] == 1 && v[1] == 15); /* ROCR 7.2.4's HSA_AMD_INTERFACE_VERSION_* */
    EXPECT(hsa_system_get_info((hsa_system_info_t)0x209, &v[0]) ==
           HSA_STATUS_ERROR_INVALID_ARGUMENT);
  }
  EXPECT(hsa_signal_wait_relaxed(s, HSA_SIGNAL_CONDITION_LT, 0, freq / 1000,
                                 HSA_WAIT_STATE_BLOCKED) == 6);

  hsa_signal_t t;
  OK(hsa_signal_create(1, 1, gpu + 1, &t));
  hsa_signal_t both[2] = {s, t};
  hsa_signal_condition_t conds[2] = {HSA_SIGNAL_CONDITION_EQ, HSA_SIGNAL_CONDITION_EQ};
  hsa_signal_value_t vals[2] = {100, 1}, got = 0;
  EXPECT(hsa_amd_signal_wait_any(2, both, conds, vals, UINT64_MAX, HSA_WAIT_STATE_ACTIVE,
                                 &got) == 1);
  EXPECT(got == 1);
  vals[1] = 100;
  EXPECT(hsa_amd_signal_wait_any(2, both, conds, vals, 0, HSA_WAIT_STATE_ACTIVE, &got) ==
         UINT32_MAX);

  hsa_signal_group_t g;
  hsa_signal_t dup[2] = {s, s};
  EXPECT(hsa_signal_group_create(2, dup, 0, NULL, &g) == HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_signal_group_create(2, both, 1, cpu + 1, &g));
  vals[0] = 6;
  hsa_signal_t which = {0};
  OK(hsa_signal_group_wait_any_scacquire(g, conds, vals, HSA_WAIT_STATE_BLOCKED, &which, &got));
  EXPECT(which.handle == s.handle && got == 6);
  which.handle = 0;
  got = 0;
  OK(hsa_signal_group_wait_any_relaxed(g, conds, vals, HSA_WAIT_STATE_ACTIVE, &which, &got));
  EXPECT(which.handle == s.handle && got == 6);
  OK(hsa_signal_group_destroy(g));
  EXPECT(hsa_signal_group_destroy(g) == HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP);

  /* Regions and memory. */
  hsa_region_t region = {0};
  EXPECT(hsa_agent_iterate_regions(cpu[1], find_fine_region, &region) == HSA_STATUS_INFO_BREAK);
  bool host;
  OK(hsa_region_get_info(region, HSA_AMD_REGION_INFO_HOST_ACCESSIBLE, &host));
  EXPECT(host);
  int* a;
  int* b;
  OK(hsa_memory_allocate(region, 4096, (void**)&a));
  OK(hsa_memory_allocate(region, 4096, (void**)&b));
  for (int i = 0; i < 1024; i++) a[i] = i * 3;
  OK(hsa_memory_copy(b, a, 4096));
  EXPECT(b[1023] == 1023 * 3);
  EXPECT(hsa_memory_copy(b + 1, a, 4096) == HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_memory_assign_agent(a, gpu[1], HSA_ACCESS_PERMISSION_RW));
  hsa_amd_pointer_info_t info;
  info.size = sizeof info;
  uint32_t n_agents = 0;
  hsa_agent_t* agents = NULL;
  OK(hsa_amd_pointer_info(b + 5, &info, alloc_cb, &n_agents, &agents));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_HSA);
  EXPECT(info.agentBaseAddress == (void*)b && info.hostBaseAddress == (void*)b);
  EXPECT(info.sizeInBytes == 4096);
  EXPECT(info.agentOwner.handle == cpu[1].handle);
  EXPECT(info.global_flags == HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
  EXPECT(n_agents >= 2);
  free(agents);
  int local;
  OK(hsa_amd_pointer_info(&local, &info, NULL, NULL, NULL));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_UNKNOWN);
  OK(hsa_memory_free(a));
  /* Freed already: INVALID_ALLOCATION, as ROCR 5.2 (Runtime::FreeMemory). */
  EXPECT(hsa_memory_free(a) == HSA_STATUS_ERROR_INVALID_ALLOCATION);

  /* Soft queue: descriptor, indices, doorbell signal. */
  hsa_queue_t* q;
  EXPECT(hsa_soft_queue_create(region, 100, HSA_QUEUE_TYPE_MULTI, 1, s, &q) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_soft_queue_create(region, 64, HSA_QUEUE_TYPE_SINGLE, HSA_QUEUE_FEATURE_AGENT_DISPATCH,
                           s, &q));
  EXPECT(q->size == 64 && q->doorbell_signal.handle == s.handle);
  EXPECT(q->type == HSA_QUEUE_TYPE_SINGLE && q->features == HSA_QUEUE_FEATURE_AGENT_DISPATCH);
  EXPECT(((uint16_t*)q->base_address)[0] == HSA_PACKET_TYPE_INVALID);
  EXPECT(hsa_queue_add_write_index_scacq_screl(q, 3) == 0);
  EXPECT(hsa_queue_cas_write_index_relaxed(q, 3, 5) == 3);
  EXPECT(hsa_queue_load_write_index_scacquire(q) == 5);
  hsa_queue_store_write_index_screlease(q, 8);
  hsa_queue_store_read_index_screlease(q, 2);
  EXPECT(hsa_queue_load_read_index_relaxed(q) == 2);
  EXPECT(hsa_queue_load_write_index_relaxed(q) == 8);
  /* The other memory orders of the index operations. */
  EXPECT(hsa_queue_add_write_index_scacquire(q, 2) == 8);
  EXPECT(hsa_queue_cas_write_index_scacquire(q, 10, 11) == 10);
  EXPECT(hsa_queue_cas_write_index_screlease(q, 99, 12) == 11); /* no match */
  EXPECT(hsa_queue_cas_write_index_scacq_screl(q, 11, 13) == 11);
  hsa_queue_store_write_index_relaxed(q, 20);
  hsa_queue_store_read_index_relaxed(q, 17);
  EXPECT(hsa_queue_load_write_index_scacquire(q) == 20);
  EXPECT(hsa_queue_load_read_index_scacquire(q) == 17);
  OK(hsa_queue_inactivate(q));
  OK(hsa_queue_destroy(q));
  EXPECT(hsa_queue_destroy(q) == HSA_STATUS_ERROR_INVALID_QUEUE);

  /* AQL queue indices. */
  hsa_queue_t* aq;
  EXPECT(hsa_queue_create(cpu[1], 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &aq) ==
         HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
  OK(hsa_queue_create(gpu[1], 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &aq));
  EXPECT(aq->size == 64);
  EXPECT(hsa_queue_add_write_index_relaxed(aq, 2) == 0);
  EXPECT(hsa_queue_load_write_index_scacquire(aq) == 2);
  EXPECT(hsa_queue_load_read_index_scacquire(aq) == 0);
  OK(hsa_queue_inactivate(aq));
  OK(hsa_queue_destroy(aq));

  /* Executable symbols. */
  if (argc > 1) {
    FILE* f = fopen(argv[1], "rb");
    EXPECT(f != NULL);
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    hsa_code_object_reader_t r;
    OK(hsa_code_object_reader_create_from_memory(buf, n, &r));
    hsa_executable_t e;
    OK(hsa_executable_create_alt(HSA_PROFILE_BASE, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL,
                                 &e));
    OK(hsa_executable_load_agent_code_object(e, gpu[1], r, NULL, NULL));
    OK(hsa_executable_freeze(e, NULL));
    EXPECT(hsa_executable_freeze(e, NULL) == HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    int kernels = 0;
    OK(hsa_executable_iterate_symbols(e, count_symbols, &kernels));
    EXPECT(kernels == 3); /* vector_copy, vector_add, local_reverse */
    hsa_executable_symbol_t sym;
    EXPECT(hsa_executable_get_symbol_by_name(e, "nope", NULL, &sym) ==
           HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
    OK(hsa_executable_get_symbol_by_name(e, "vector_add", NULL, &sym));
    uint32_t len;
    char sname[64] = {0};
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, sname));
    EXPECT(len == 13 && strcmp(sname, "vector_add.kd") == 0);
    uint32_t kernarg;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                      &kernarg));
    EXPECT(kernarg == 24);
    OK(hsa_executable_destroy(e));
    EXPECT(hsa_executable_destroy(e) == HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    OK(hsa_code_object_reader_destroy(r));

    /* From a file descriptor: the whole file from offset 0, whatever the descriptor's offset. */
    int fd = open(argv[1], O_RDONLY);
    EXPECT(fd >= 0);
    EXPECT(lseek(fd, 100, SEEK_SET) == 100);
    OK(hsa_code_object_reader_create_from_file(fd, &r));
    OK(hsa_code_object_reader_destroy(r));
    EXPECT(lseek(fd, 0, SEEK_CUR) == 100);
    close(fd);
    EXPECT(hsa_code_object_reader_create_from_file(-1, &r) == HSA_STATUS_ERROR_INVALID_FILE);
    /* A FIFO nobody writes is refused at once (it used to block forever), and so is a sparse
     * 2 GiB file (above the 1 GiB limit) without being read. */
    char fifo[64], big[64];
    snprintf(fifo, sizeof fifo, "/tmp/hsa-api-check-fifo-%d", (int)getpid());
    snprintf(big, sizeof big, "/tmp/hsa-api-check-big-%d", (int)getpid());
    EXPECT(mkfifo(fifo, 0600) == 0);
    fd = open(fifo, O_RDONLY | O_NONBLOCK);
    EXPECT(fd >= 0);
    EXPECT(hsa_code_object_reader_create_from_file(fd, &r) == HSA_STATUS_ERROR_INVALID_FILE);
    close(fd);
    unlink(fifo);
    fd = open(big, O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT(fd >= 0 && ftruncate(fd, 2ll << 30) == 0);
    EXPECT(hsa_code_object_reader_create_from_file(fd, &r) == HSA_STATUS_ERROR_INVALID_FILE);
    close(fd);
    unlink(big);
  }

  OK(hsa_signal_destroy(t));
  OK(hsa_signal_destroy(s));
  EXPECT(hsa_signal_destroy(s) == HSA_STATUS_ERROR_INVALID_SIGNAL);
  OK(hsa_shut_down());
  EXPECT(hsa_shut_down() == HSA_STATUS_ERROR_NOT_INITIALIZED);
  if (failures) {
    fprintf(stderr, "api_check: %d failures\n", failures);
    return 1;
  }
  printf("api_check: ok\n");
  return 0;
}
