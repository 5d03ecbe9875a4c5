/* What ROCR 5.2 does that rocrtst (ROCR's own test suite, issue 24) relies on, checked in C
 * against the library on the emulated device's built-in profile: one section per behaviour,
 * chosen by name (deprecated, pool_info, allow_access, memory, queues).
 * Prints "rocr_compat: <section> ok" and exits 0 when every check holds.
 * Usage: rocr_compat CODE_OBJECT SECTION */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
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

static hsa_status_t get_isa(hsa_isa_t isa, void* data) {
  *(hsa_isa_t*)data = isa;
  return HSA_STATUS_INFO_BREAK;
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

static char code_object[1 << 20];
static size_t code_object_len;

/* ROCR 5.2's deprecated names: the renamed signal and queue operations behave as the new
 * ones, hsa_executable_create/get_symbol, hsa_isa_get_info/compatible,
 * hsa_agent_get_exception_policies. */
static void deprecated_names(hsa_agent_t cpu, hsa_agent_t gpu) {
  hsa_signal_t s;
  OK(hsa_signal_create(5, 0, NULL, &s));
  hsa_signal_store_release(s, 7);
  EXPECT(hsa_signal_load_acquire(s) == 7);
  EXPECT(hsa_signal_wait_acquire(s, HSA_SIGNAL_CONDITION_EQ, 7, UINT64_MAX,
                                 HSA_WAIT_STATE_ACTIVE) == 7);
  EXPECT(hsa_signal_exchange_acq_rel(s, 3) == 7);
  EXPECT(hsa_signal_exchange_acquire(s, 4) == 3);
  EXPECT(hsa_signal_exchange_release(s, 5) == 4);
  EXPECT(hsa_signal_cas_acq_rel(s, 5, 6) == 5);
  EXPECT(hsa_signal_cas_acquire(s, 0, 9) == 6);
  EXPECT(hsa_signal_cas_release(s, 6, 10) == 6);
  hsa_signal_add_acq_rel(s, 1);     /* 11 */
  hsa_signal_add_acquire(s, 2);     /* 13 */
  hsa_signal_add_release(s, 3);     /* 16 */
  hsa_signal_subtract_acq_rel(s, 1); /* 15 */
  hsa_signal_subtract_acquire(s, 2); /* 13 */
  hsa_signal_subtract_release(s, 1); /* 12 */
  EXPECT(hsa_signal_load_acquire(s) == 12);
  hsa_signal_and_acq_rel(s, 0xe);   /* 12 */
  hsa_signal_and_acquire(s, 0xc);   /* 12 */
  hsa_signal_and_release(s, 0x4);   /* 4 */
  hsa_signal_or_acq_rel(s, 1);      /* 5 */
  hsa_signal_or_acquire(s, 2);      /* 7 */
  hsa_signal_or_release(s, 8);      /* 15 */
  hsa_signal_xor_acq_rel(s, 1);     /* 14 */
  hsa_signal_xor_acquire(s, 2);     /* 12 */
  hsa_signal_xor_release(s, 4);     /* 8 */
  EXPECT(hsa_signal_load_acquire(s) == 8);
  OK(hsa_signal_destroy(s));

  hsa_queue_t* q;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
  EXPECT(hsa_queue_add_write_index_acq_rel(q, 2) == 0);
  EXPECT(hsa_queue_add_write_index_acquire(q, 2) == 2);
  EXPECT(hsa_queue_add_write_index_release(q, 2) == 4);
  EXPECT(hsa_queue_cas_write_index_acq_rel(q, 6, 7) == 6);
  EXPECT(hsa_queue_cas_write_index_acquire(q, 0, 9) == 7);
  EXPECT(hsa_queue_cas_write_index_release(q, 7, 8) == 7);
  EXPECT(hsa_queue_load_write_index_acquire(q) == 8);
  EXPECT(hsa_queue_load_read_index_acquire(q) == 0);
  OK(hsa_queue_inactivate(q));
  OK(hsa_queue_destroy(q));

  hsa_region_t region = {0};
  hsa_queue_t* soft;
  hsa_signal_t doorbell;
  OK(hsa_signal_create(0, 0, NULL, &doorbell));
  EXPECT(hsa_agent_iterate_regions(cpu, find_fine_region, &region) == HSA_STATUS_INFO_BREAK);
  OK(hsa_soft_queue_create(region, 64, HSA_QUEUE_TYPE_SINGLE, HSA_QUEUE_FEATURE_AGENT_DISPATCH,
                           doorbell, &soft));
  hsa_queue_store_write_index_release(soft, 6);
  hsa_queue_store_read_index_release(soft, 4);
  EXPECT(hsa_queue_load_write_index_acquire(soft) == 6);
  EXPECT(hsa_queue_load_read_index_acquire(soft) == 4);
  OK(hsa_queue_destroy(soft));
  OK(hsa_signal_destroy(doorbell));

  hsa_isa_t isa = {0};
  EXPECT(hsa_agent_iterate_isas(gpu, get_isa, &isa) == HSA_STATUS_INFO_BREAK);
  uint32_t v = 0;
  OK(hsa_isa_get_info(isa, HSA_ISA_INFO_CALL_CONVENTION_COUNT, 0, &v));
  EXPECT(v == 1);
  OK(hsa_isa_get_info(isa, HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE, 0, &v));
  EXPECT(v == 64);
  OK(hsa_isa_get_info(isa, HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT, 0, &v));
  EXPECT(v == 40);
  OK(hsa_isa_get_info(isa, HSA_ISA_INFO_WORKGROUP_MAX_SIZE, 0, &v));
  EXPECT(v == 1024);
  EXPECT(hsa_isa_get_info(isa, HSA_ISA_INFO_WORKGROUP_MAX_SIZE, 1, &v) ==
         HSA_STATUS_ERROR_INVALID_INDEX);
  EXPECT(hsa_isa_get_info(isa, HSA_ISA_INFO_WORKGROUP_MAX_SIZE, 0, NULL) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_isa_t bogus_isa = {42};
  EXPECT(hsa_isa_get_info(bogus_isa, HSA_ISA_INFO_WORKGROUP_MAX_SIZE, 0, &v) ==
         HSA_STATUS_ERROR_INVALID_ISA);
  bool compatible = false;
  OK(hsa_isa_compatible(isa, isa, &compatible));
  EXPECT(compatible);
  EXPECT(hsa_isa_compatible(isa, bogus_isa, &compatible) == HSA_STATUS_ERROR_INVALID_ISA);
  uint16_t mask = 0xffff;
  OK(hsa_agent_get_exception_policies(gpu, HSA_PROFILE_BASE, &mask));
  EXPECT(mask == 0);
  EXPECT(hsa_agent_get_exception_policies(gpu, (hsa_profile_t)2, &mask) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);

  hsa_executable_t e;
  EXPECT(hsa_executable_create(HSA_PROFILE_BASE, (hsa_executable_state_t)2, NULL, &e) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_executable_create(HSA_PROFILE_BASE, HSA_EXECUTABLE_STATE_FROZEN, NULL, &e));
  hsa_code_object_reader_t r;
  OK(hsa_code_object_reader_create_from_memory(code_object, code_object_len, &r));
  EXPECT(hsa_executable_load_agent_code_object(e, gpu, r, NULL, NULL) ==
         HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
  OK(hsa_executable_destroy(e));
  OK(hsa_executable_create(HSA_PROFILE_BASE, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, &e));
  OK(hsa_executable_load_agent_code_object(e, gpu, r, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  hsa_executable_symbol_t by_old = {0}, by_new = {0};
  OK(hsa_executable_get_symbol(e, NULL, "vector_add.kd", gpu, 0, &by_old));
  OK(hsa_executable_get_symbol_by_name(e, "vector_add.kd", &gpu, &by_new));
  EXPECT(by_old.handle != 0 && by_old.handle == by_new.handle);
  OK(hsa_executable_get_symbol(e, "", "vector_add.kd", gpu, 0, &by_old));
  EXPECT(by_old.handle == by_new.handle);
  /* module_name is prepended as "module::name", as ROCR does: no such symbol here. */
  EXPECT(hsa_executable_get_symbol(e, "mod", "vector_add.kd", gpu, 0, &by_old) ==
         HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
  EXPECT(hsa_executable_get_symbol(e, NULL, "", gpu, 0, &by_old) ==
         HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
  EXPECT(hsa_executable_get_symbol(e, NULL, NULL, gpu, 0, &by_old) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_agent_t bogus_agent = {12345};
  EXPECT(hsa_executable_get_symbol(e, NULL, "vector_add.kd", bogus_agent, 0, &by_old) ==
         HSA_STATUS_ERROR_INVALID_AGENT);
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(r));
}

/* The pools of an agent: out[0] the first global pool with exactly `flags` (flags 0: the
 * group segment pool). */
struct pool_query {
  uint32_t flags;
  hsa_amd_memory_pool_t found;
};

static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void* data) {
  struct pool_query* q = data;
  hsa_amd_segment_t segment;
  uint32_t flags = 0;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment);
  if (segment == HSA_AMD_SEGMENT_GLOBAL)
    hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  bool match = q->flags == 0 ? segment == HSA_AMD_SEGMENT_GROUP
                             : segment == HSA_AMD_SEGMENT_GLOBAL && flags == q->flags;
  if (match) {
    q->found = p;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

/* HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_EXTENDED_SCOPE_FINE_GRAINED (ROCR 6+ hsa_ext_amd.h; Debian's
 * 5.2.3 header predates it). The built-in GPU is in no xGMI hive, so, as ROCR 6 and 7, hsa-rt
 * offers its VRAM as coarse-grained and extended-scope fine-grained memory but keeps the
 * fine-grained VRAM pool from users; the fine VRAM checks below use the extended one. */
#define POOL_FLAG_EXTENDED_SCOPE_FINE_GRAINED 8u

static hsa_amd_memory_pool_t pool_of(hsa_agent_t agent, uint32_t flags) {
  struct pool_query q = {flags, {0}};
  EXPECT(hsa_amd_agent_iterate_memory_pools(agent, find_pool, &q) == HSA_STATUS_INFO_BREAK);
  return q.found;
}

/* Checks ACCESS, NUM_LINK_HOPS and LINK_INFO of `agent` for `pool`. */
static void expect_pool_info(int line, hsa_agent_t agent, hsa_amd_memory_pool_t pool,
                             hsa_amd_memory_pool_access_t access, uint32_t hops,
                             hsa_amd_memory_pool_link_info_t link) {
  hsa_amd_memory_pool_access_t got_access = 99;
  uint32_t got_hops = 99;
  hsa_amd_memory_pool_link_info_t got;
  memset(&got, 0xab, sizeof got);
  OK(hsa_amd_agent_memory_pool_get_info(agent, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                                        &got_access));
  OK(hsa_amd_agent_memory_pool_get_info(agent, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS,
                                        &got_hops));
  OK(hsa_amd_agent_memory_pool_get_info(agent, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO,
                                        &got));
  if (got_access != access || got_hops != hops || got.min_latency != link.min_latency ||
      got.max_latency != link.max_latency || got.min_bandwidth != link.min_bandwidth ||
      got.max_bandwidth != link.max_bandwidth ||
      got.atomic_support_32bit != link.atomic_support_32bit ||
      got.atomic_support_64bit != link.atomic_support_64bit ||
      got.coherent_support != link.coherent_support || got.link_type != link.link_type ||
      got.numa_distance != link.numa_distance) {
    fprintf(stderr,
            "%s:%d: got access %d hops %u link {%u %u %u %u %d %d %d type %d numa %u}\n",
            __FILE__, line, got_access, got_hops, got.min_latency, got.max_latency,
            got.min_bandwidth, got.max_bandwidth, got.atomic_support_32bit,
            got.atomic_support_64bit, got.coherent_support, got.link_type, got.numa_distance);
    failures++;
  }
}

/* hsa_amd_agent_memory_pool_get_info on the built-in profile, whose CPU (node 0) and GPU
 * (node 1) are joined by PCIe links of weight 20, 312..64000 MB/s, flags 1 (override, all
 * capabilities), no XGMI hive: the values ROCR 5.2 computes from them. */
static void pool_info(hsa_agent_t cpu, hsa_agent_t gpu) {
  const hsa_amd_memory_pool_link_info_t none = {0};
  const hsa_amd_memory_pool_link_info_t pcie = {0,    0,    312, 64000, true,
                                                true, true, HSA_AMD_LINK_INFO_TYPE_PCIE, 20};
  hsa_amd_memory_pool_t vram = pool_of(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
  hsa_amd_memory_pool_t vram_fine = pool_of(gpu, POOL_FLAG_EXTENDED_SCOPE_FINE_GRAINED);
  /* No fine-grained VRAM pool outside a hive. */
  struct pool_query fine = {HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED, {0}};
  EXPECT(hsa_amd_agent_iterate_memory_pools(gpu, find_pool, &fine) == HSA_STATUS_SUCCESS);
  hsa_amd_memory_pool_t group = pool_of(gpu, 0);
  hsa_amd_memory_pool_t system = pool_of(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
  hsa_amd_memory_pool_t kernarg = pool_of(
      cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);

  /* Owner: allowed, no hop. */
  expect_pool_info(__LINE__, gpu, vram, HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT, 0, none);
  expect_pool_info(__LINE__, gpu, group, HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT, 0, none);
  expect_pool_info(__LINE__, cpu, system, HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT, 0, none);
  /* Device memory from the CPU: disallowed by default (fine-grained too: the CPU and a GPU
   * outside any XGMI hive count as one hive in ROCR 5.2). */
  expect_pool_info(__LINE__, cpu, vram, HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT, 1, pcie);
  expect_pool_info(__LINE__, cpu, vram_fine, HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT, 1,
                   pcie);
  /* System memory from the GPU: disallowed by default. */
  expect_pool_info(__LINE__, gpu, system, HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT, 1,
                   pcie);
  expect_pool_info(__LINE__, gpu, kernarg, HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT, 1,
                   pcie);
  /* Another agent's group segment: never. */
  expect_pool_info(__LINE__, cpu, group, HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED, 0, none);

  /* ROCR's checks, in its order. */
  uint32_t v;
  hsa_agent_t bogus_agent = {12345};
  hsa_amd_memory_pool_t bogus_pool = {12345};
  EXPECT(hsa_amd_agent_memory_pool_get_info(cpu, vram, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                                            NULL) == HSA_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT(hsa_amd_agent_memory_pool_get_info(bogus_agent, bogus_pool,
                                            HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                                            &v) == HSA_STATUS_ERROR_INVALID_AGENT);
  EXPECT(hsa_amd_agent_memory_pool_get_info(cpu, bogus_pool, 7, &v) ==
         (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  EXPECT(hsa_amd_agent_memory_pool_get_info(cpu, vram, 7, &v) ==
         HSA_STATUS_ERROR_INVALID_ARGUMENT);
}

static void* alloc_cb(size_t n) { return malloc(n); }

/* hsa_amd_agents_allow_access with the CPU agent on VRAM (coarse- and extended-scope
 * fine-grained): ROCR
 * 5.2 accepts it (host access, as rocrtst's IPC and memory tests do); the built-in profile's
 * VRAM is host-visible, so the CPU then reads and writes it, and hsa_amd_pointer_info lists
 * the CPU among the agents that reach it. */
static void allow_access(hsa_agent_t cpu, hsa_agent_t gpu) {
  uint32_t flags[2] = {HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                       POOL_FLAG_EXTENDED_SCOPE_FINE_GRAINED};
  for (int i = 0; i < 2; i++) {
    hsa_amd_memory_pool_t vram = pool_of(gpu, flags[i]);
    uint32_t* p = NULL;
    OK(hsa_amd_memory_pool_allocate(vram, 4096, 0, (void**)&p));
    hsa_amd_pointer_info_t info;
    info.size = sizeof info;
    uint32_t n = 0;
    hsa_agent_t* agents = NULL;
    OK(hsa_amd_pointer_info(p, &info, alloc_cb, &n, &agents));
    EXPECT(n == 1 && agents[0].handle == gpu.handle);
    free(agents);

    OK(hsa_amd_agents_allow_access(1, &cpu, NULL, p));
    hsa_agent_t both[2] = {cpu, gpu};
    OK(hsa_amd_agents_allow_access(2, both, NULL, p));
    p[0] = 0x12345678;
    p[1023] = 7;
    EXPECT(p[0] == 0x12345678 && p[1023] == 7);
    n = 0;
    agents = NULL;
    OK(hsa_amd_pointer_info(p + 5, &info, alloc_cb, &n, &agents));
    EXPECT(n == 2);
    bool has_cpu = false;
    for (uint32_t k = 0; k < n; k++) has_cpu |= agents[k].handle == cpu.handle;
    EXPECT(has_cpu);
    free(agents);

    hsa_agent_t bogus = {12345};
    EXPECT(hsa_amd_agents_allow_access(1, &bogus, NULL, p) == HSA_STATUS_ERROR_INVALID_AGENT);
    EXPECT(hsa_amd_agents_allow_access(0, &cpu, NULL, p) == HSA_STATUS_ERROR_INVALID_ARGUMENT);
    uint32_t reserved = 0;
    EXPECT(hsa_amd_agents_allow_access(1, &cpu, &reserved, p) ==
           HSA_STATUS_ERROR_INVALID_ARGUMENT);
    OK(hsa_amd_memory_pool_free(p));
  }
}

/* Resident memory of this process, bytes (/proc/self/statm, second field). */
static long long resident_bytes(void) {
  long long size = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%lld %lld", &size, &resident) != 2) {
    fprintf(stderr, "rocr_compat: cannot read /proc/self/statm\n");
    failures++;
  }
  if (f) fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

#define MIB (1ll << 20)

/* A 1 GiB allocation from `pool` reserves without touching (resident memory grows by less
 * than 64 MiB), the memory is usable (writing 256 MiB adds at least 240 MiB resident), and
 * freeing it gives the memory back (resident memory within 64 MiB of where it started);
 * four more rounds leave no trace either. */
static void one_gib(const char* what, hsa_amd_memory_pool_t pool) {
  long long before = resident_bytes();
  for (int round = 0; round < 5; round++) {
    char* p = NULL;
    OK(hsa_amd_memory_pool_allocate(pool, 1ll << 30, 0, (void**)&p));
    if (!p) return;
    long long allocated = resident_bytes();
    if (allocated - before >= 64 * MIB) {
      fprintf(stderr, "%s: 1 GiB allocation %d: resident +%lld MiB\n", what, round,
              (allocated - before) / MIB);
      failures++;
    }
    if (round == 0) {
      memset(p + (512 * MIB), 0x5a, 256 * MIB);
      long long touched = resident_bytes();
      if (touched - allocated < 240 * MIB) {
        fprintf(stderr, "%s: writing 256 MiB: resident +%lld MiB\n", what,
                (touched - allocated) / MIB);
        failures++;
      }
      EXPECT(p[512 * MIB] == 0x5a && p[768 * MIB - 1] == 0x5a && p[0] == 0 &&
             p[(1ll << 30) - 1] == 0);
    }
    OK(hsa_amd_memory_pool_free(p));
    long long freed = resident_bytes();
    if (freed - before >= 64 * MIB) {
      fprintf(stderr, "%s: after free %d: resident +%lld MiB\n", what, round,
              (freed - before) / MIB);
      failures++;
    }
  }
}

/* CPU pools (system memory) and, on the emulated device, VRAM. */
static void memory(hsa_agent_t cpu, hsa_agent_t gpu) {
  one_gib("system fine-grained", pool_of(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED));
  one_gib("system coarse-grained", pool_of(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED));
  one_gib("VRAM", pool_of(gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED));
}

/* HSA_AGENT_INFO_QUEUES_MAX queues can be created on the GPU, and not one more
 * (OUT_OF_RESOURCES, as amdkfd's ENOSPC); a destroyed queue's place can be taken again. The
 * emulated gfx90a says 127: amdkfd's per-process limit (it used to say 128 and stop at 24). */
static void queues(hsa_agent_t gpu) {
  uint32_t max = 0;
  OK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUES_MAX, &max));
  EXPECT(max == 127);
  hsa_queue_t* q[128] = {0};
  uint32_t made = 0;
  for (uint32_t i = 0; i < max && i < 128; i++) {
    hsa_status_t st = hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
                                       UINT32_MAX, &q[i]);
    if (st != HSA_STATUS_SUCCESS) {
      fprintf(stderr, "%s:%d: queue %u of %u: status %#x\n", __FILE__, __LINE__, i + 1, max,
              st);
      failures++;
      break;
    }
    made++;
  }
  hsa_queue_t* extra = NULL;
  EXPECT(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                          &extra) == HSA_STATUS_ERROR_OUT_OF_RESOURCES);
  if (made > 0) {
    OK(hsa_queue_destroy(q[made - 1]));
    OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                        &q[made - 1]));
  }
  for (uint32_t i = 0; i < made; i++) OK(hsa_queue_destroy(q[i]));
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: rocr_compat CODE_OBJECT SECTION\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "rocr_compat: cannot open %s\n", argv[1]);
    return 2;
  }
  code_object_len = fread(code_object, 1, sizeof code_object, f);
  fclose(f);

  OK(hsa_init());
  hsa_agent_t cpu[2] = {{HSA_DEVICE_TYPE_CPU}, {0}}, gpu[2] = {{HSA_DEVICE_TYPE_GPU}, {0}};
  EXPECT(hsa_iterate_agents(first_of_type, cpu) == HSA_STATUS_INFO_BREAK);
  EXPECT(hsa_iterate_agents(first_of_type, gpu) == HSA_STATUS_INFO_BREAK);

  const char* section = argv[2];
  if (strcmp(section, "deprecated") == 0) {
    deprecated_names(cpu[1], gpu[1]);
  } else if (strcmp(section, "pool_info") == 0) {
    pool_info(cpu[1], gpu[1]);
  } else if (strcmp(section, "allow_access") == 0) {
    allow_access(cpu[1], gpu[1]);
  } else if (strcmp(section, "memory") == 0) {
    memory(cpu[1], gpu[1]);
  } else if (strcmp(section, "queues") == 0) {
    queues(gpu[1]);
  } else {
    fprintf(stderr, "rocr_compat: unknown section %s\n", section);
    return 2;
  }
  OK(hsa_shut_down());
  if (failures) {
    fprintf(stderr, "rocr_compat: %s: %d failures\n", section, failures);
    return 1;
  }
  printf("rocr_compat: %s ok\n", section);
  return 0;
}
