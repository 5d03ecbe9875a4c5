/* CU masks honoured: hsa_amd_queue_cu_set_mask restricts where a queue's work-groups run.
 *
 * The kernel (testdata/codeobjects/hw_id.cl) stores each work-group's HW_ID register
 * (s_getreg_b32 hwreg(HW_REG_HW_ID)); its SE_ID [15:13] (3 bits on gfx90a), SH_ID [12] and
 * CU_ID [11:8] say which compute unit the work-group ran on, ME_ID [31:30] the micro-engine
 * (1: the MEC compute queues live on).
 *
 * The user's mask bit i names a CU as amdkfd maps it (kfd_mqd_manager.c,
 * mqd_symmetrically_map_cu_mask, gfx9): counting CUs in the order "CU 0 of shader array 0
 * of every shader engine, CU 0 of array 1 of every engine, CU 1 ...". This program works
 * that order out from the agent's shader engines, arrays per engine and CU count (assuming,
 * as it checks, the same number of CUs in every array), and checks:
 *  1. with a mask of 7 CUs set and 10 work-groups per enabled CU, every work-group ran on an
 *     enabled CU and every enabled CU ran one;
 *  2. hsa_amd_queue_cu_get_mask returns the mask;
 *  3. with the mask reset (count 0: every CU) and 2 work-groups per CU, every CU ran one;
 *  4. a mask naming no CU of the agent is accepted (as amdkfd accepts it on gfx9), and a
 *     dispatch then waits, none of its work-groups running, until a mask enables CUs.
 *
 * Usage: cu_mask CODE_OBJECT   (hw_id.cl built for the GPU's ISA)
 * Prints "cu_mask: ok" and exits 0 on success. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    hsa_status_t s_ = (call);                                                \
    if (s_ != HSA_STATUS_SUCCESS) {                                          \
      const char* m_ = "?";                                                  \
      hsa_status_string(s_, &m_);                                            \
      fprintf(stderr, "%s:%d: %s failed: 0x%x %s\n", __FILE__, __LINE__,     \
              #call, (unsigned)s_, m_);                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define FAIL(...)                                \
  do {                                           \
    fprintf(stderr, "cu_mask: " __VA_ARGS__);    \
    exit(1);                                     \
  } while (0)

static hsa_status_t find_type(hsa_agent_t agent, void* data, hsa_device_type_t want) {
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == want) {
    *(hsa_agent_t*)data = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t find_gpu(hsa_agent_t a, void* d) { return find_type(a, d, HSA_DEVICE_TYPE_GPU); }
static hsa_status_t find_cpu(hsa_agent_t a, void* d) { return find_type(a, d, HSA_DEVICE_TYPE_CPU); }

struct pools {
  hsa_amd_memory_pool_t kernarg, fine;
  int have_kernarg, have_fine;
};

static hsa_status_t find_pools(hsa_amd_memory_pool_t pool, void* data) {
  struct pools* p = data;
  hsa_amd_segment_t segment;
  uint32_t flags;
  bool alloc;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
                                     &alloc));
  if (!alloc) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !p->have_kernarg) {
    p->kernarg = pool;
    p->have_kernarg = 1;
  } else if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !p->have_fine) {
    p->fine = pool;
    p->have_fine = 1;
  }
  return HSA_STATUS_SUCCESS;
}

static void queue_error(hsa_status_t status, hsa_queue_t* queue, void* data) {
  const char* m = "?";
  (void)data;
  (void)queue;
  hsa_status_string(status, &m);
  fprintf(stderr, "cu_mask: queue error 0x%x: %s\n", (unsigned)status, m);
  exit(3);
}

static hsa_queue_t* queue;
static uint64_t kernel_object;
static void* kernarg;
static uint32_t* out;

/* Submits `groups` work-groups of 64 work-items; out[g] becomes work-group g's HW_ID; the
 * returned signal drops to 0 when they are done. */
static hsa_signal_t submit(uint32_t groups) {
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  memset(out, 0, groups * sizeof *out);
  memcpy(kernarg, &out, sizeof out);
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = 64;
  p->workgroup_size_y = 1;
  p->workgroup_size_z = 1;
  p->grid_size_x = groups * 64;
  p->grid_size_y = 1;
  p->grid_size_z = 1;
  p->kernel_object = kernel_object;
  p->kernarg_address = kernarg;
  p->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (1 << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  __atomic_store_n((uint32_t*)p, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
  return done;
}

/* Waits (at most 2 minutes) for `done`, then destroys it. */
static void finish(hsa_signal_t done) {
  int waits = 0;
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                   HSA_WAIT_STATE_BLOCKED) >= 1) {
    if (++waits > 120) FAIL("timed out waiting for a dispatch\n");
  }
  CHECK(hsa_signal_destroy(done));
}

static void run(uint32_t groups) { finish(submit(groups)); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CODE_OBJECT\n", argv[0]);
    return 2;
  }
  CHECK(hsa_init());
  hsa_agent_t gpu = {0}, cpu = {0};
  if (hsa_iterate_agents(find_gpu, &gpu) != HSA_STATUS_INFO_BREAK) FAIL("no GPU agent\n");
  if (hsa_iterate_agents(find_cpu, &cpu) != HSA_STATUS_INFO_BREAK) FAIL("no CPU agent\n");
  uint32_t cus, engines, arrays;
  CHECK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &cus));
  CHECK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES,
                           &engines));
  CHECK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE,
                           &arrays));
  if (engines == 0 || engines > 8 || arrays == 0 || arrays > 2 || cus % (engines * arrays))
    FAIL("%u CUs over %u engines of %u arrays: not an even gfx9 layout\n", cus, engines, arrays);
  uint32_t per_array = cus / (engines * arrays);
  printf("cu_mask: %u CUs, %u shader engines of %u arrays of %u\n", cus, engines, arrays,
         per_array);

  /* amdkfd's order: user CU i is (se, sh, cu) = order[i], packed se << 8 | sh << 4 | cu. */
  uint32_t order[256];
  uint32_t n = 0;
  for (uint32_t cu = 0; cu < per_array; cu++)
    for (uint32_t sh = 0; sh < arrays; sh++)
      for (uint32_t se = 0; se < engines; se++) order[n++] = se << 8 | sh << 4 | cu;

  struct pools pools = {0};
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pools, &pools));
  if (!pools.have_kernarg || !pools.have_fine) FAIL("no kernarg or fine-grained pool\n");
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, queue_error, NULL, UINT32_MAX,
                         UINT32_MAX, &queue));

  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  hsa_code_object_reader_t reader;
  CHECK(hsa_code_object_reader_create_from_file(fd, &reader));
  hsa_executable_t exe;
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                  NULL, &exe));
  CHECK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  hsa_executable_symbol_t sym;
  CHECK(hsa_executable_get_symbol_by_name(exe, "hw_id.kd", &gpu, &sym));
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_amd_memory_pool_allocate(pools.kernarg, 64, 0, &kernarg));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, kernarg));
  uint32_t max_groups = 2 * cus > 70 ? 2 * cus : 70;
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, max_groups * sizeof *out, 0, (void**)&out));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, out));

  /* 1. Seven CUs: user CUs 0, 1, 2, 3, 9, 50 and the last one. */
  uint32_t words = (cus + 31) / 32;
  uint32_t mask[32] = {0};
  uint32_t chosen[7] = {0, 1, 2, 3, 9, 50, cus - 1};
  for (int k = 0; k < 7; k++) mask[chosen[k] / 32] |= 1u << (chosen[k] % 32);
  CHECK(hsa_amd_queue_cu_set_mask(queue, words * 32, mask));
  uint32_t back[32] = {0};
  CHECK(hsa_amd_queue_cu_get_mask(queue, words * 32, back));
  if (memcmp(back, mask, words * sizeof *mask)) FAIL("hsa_amd_queue_cu_get_mask differs\n");
  run(70);
  int used[7] = {0};
  for (uint32_t g = 0; g < 70; g++) {
    uint32_t v = out[g];
    uint32_t where = (v >> 13 & 7) << 8 | (v >> 12 & 1) << 4 | (v >> 8 & 0xF);
    if (v >> 30 != 1) FAIL("work-group %u: HW_ID 0x%08x has ME_ID %u, not 1\n", g, v, v >> 30);
    int k = 0;
    while (k < 7 && order[chosen[k]] != where) k++;
    if (k == 7)
      FAIL("work-group %u ran on SE %u SH %u CU %u (HW_ID 0x%08x), which the mask disables\n",
           g, where >> 8, where >> 4 & 0xF, where & 0xF, v);
    used[k]++;
  }
  for (int k = 0; k < 7; k++)
    if (used[k] == 0)
      FAIL("enabled CU %u (SE %u SH %u CU %u) ran no work-group of 70\n", chosen[k],
           order[chosen[k]] >> 8, order[chosen[k]] >> 4 & 0xF, order[chosen[k]] & 0xF);

  /* 3. Count 0: every CU again. */
  CHECK(hsa_amd_queue_cu_set_mask(queue, 0, NULL));
  run(2 * cus);
  static int seen[8][2][16];
  for (uint32_t g = 0; g < 2 * cus; g++) {
    uint32_t v = out[g];
    seen[v >> 13 & 7][v >> 12 & 1][v >> 8 & 0xF]++;
  }
  for (uint32_t i = 0; i < cus; i++) {
    uint32_t w = order[i];
    if (!seen[w >> 8][w >> 4 & 0xF][w & 0xF])
      FAIL("with every CU enabled, CU %u (SE %u SH %u CU %u) ran no work-group of %u\n", i,
           w >> 8, w >> 4 & 0xF, w & 0xF, 2 * cus);
  }

  /* 4. A mask naming no CU of the agent (only bits past its CUs) is taken, as amdkfd takes
   * it; no work-group can launch until a mask enables a CU, then all run. */
  memset(mask, 0, sizeof mask);
  if (cus % 32) {
    mask[words - 1] = ~0u << (cus % 32);
  }
  CHECK(hsa_amd_queue_cu_set_mask(queue, 32 * 32, mask));
  hsa_signal_t done = submit(8);
  if (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 200000000ull,
                                HSA_WAIT_STATE_BLOCKED) < 1)
    FAIL("a dispatch completed on a queue whose mask enables no CU\n");
  for (uint32_t g = 0; g < 8; g++)
    if (out[g] != 0) FAIL("work-group %u ran with no CU enabled\n", g);
  CHECK(hsa_amd_queue_cu_set_mask(queue, 0, NULL));
  finish(done);
  for (uint32_t g = 0; g < 8; g++)
    if (out[g] >> 30 != 1) FAIL("work-group %u did not run once CUs were enabled\n", g);

  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(kernarg));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  close(fd);
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  printf("cu_mask: ok\n");
  return 0;
}
