/* Kernels that need scratch (testdata/codeobjects/scratch.c: big_private, a 64 KiB private
 * array per work-item, and recursive, a recursive call on the scratch stack) on a runtime
 * over hsa.h: on Debian's ROCR 5.2 under kfd-emu the queue is created without scratch
 * (private_segment_size UINT32_MAX: a dGPU's base profile), so the emulated CP's scratch
 * request (queue error code 1 in the inactive signal) makes ROCR allocate scratch, write the
 * queue's amd_queue_t scratch fields and resume the queue, whose CP then reads them.
 *
 * Usage: scratch CODE_OBJECT. Prints "scratch: KERNEL verified N" per kernel and the queue's
 * COMPUTE_TMPRING_SIZE after each, exits 0 when every work-item's value is the host's. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/amd_hsa_queue.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITEMS 128u

#define CHECK(call)                                                                  \
  do {                                                                               \
    hsa_status_t s_ = (call);                                                        \
    if (s_ != HSA_STATUS_SUCCESS) {                                                  \
      fprintf(stderr, "%s:%d: %s failed: 0x%x\n", __FILE__, __LINE__, #call, (unsigned)s_); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static hsa_status_t find(hsa_agent_t agent, void* data) {
  hsa_device_type_t type;
  hsa_agent_t* a = data;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU && a[0].handle == 0) a[0] = agent;
  if (type == HSA_DEVICE_TYPE_CPU && a[1].handle == 0) a[1] = agent;
  return HSA_STATUS_SUCCESS;
}

static hsa_amd_memory_pool_t kernarg_pool, fine_pool;
static hsa_status_t find_pools(hsa_amd_memory_pool_t pool, void* data) {
  uint32_t flags;
  hsa_amd_segment_t segment;
  (void)data;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT)
    kernarg_pool = pool;
  else if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
    fine_pool = pool;
  return HSA_STATUS_SUCCESS;
}

static void queue_error(hsa_status_t status, hsa_queue_t* queue, void* data) {
  (void)queue, (void)data;
  fprintf(stderr, "scratch: queue error 0x%x\n", (unsigned)status);
  exit(3);
}

/* The host's big_private and walk (scratch.c). */
static uint32_t big_private(uint32_t seed, uint32_t i) {
  uint32_t s = 0;
  for (uint32_t j = 0; j < 16384; j += 97) s += seed * ((j * seed) % 16384 + 1) + i;
  return s;
}
static uint32_t walk(const uint32_t* in, uint32_t k, uint32_t acc) {
  if (k == 0) return acc;
  uint32_t r = walk(in, k - 1, acc * 31 + in[k % 64]);
  return r ^ (acc + (acc + r) % 8 + k);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  CHECK(hsa_init());
  hsa_agent_t agents[2] = {{0}, {0}};
  CHECK(hsa_iterate_agents(find, agents));
  hsa_agent_t gpu = agents[0];
  CHECK(hsa_amd_agent_iterate_memory_pools(agents[1], find_pools, NULL));
  hsa_queue_t* queue;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, queue_error, NULL, UINT32_MAX,
                         UINT32_MAX, &queue));
  const amd_queue_t* amd = (const amd_queue_t*)queue;
  int fd = open(argv[1], O_RDONLY);
  hsa_code_object_reader_t reader;
  CHECK(hsa_code_object_reader_create_from_file(fd, &reader));
  hsa_executable_t exe;
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                  NULL, &exe));
  CHECK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  uint32_t *in, *out;
  void* kernarg;
  CHECK(hsa_amd_memory_pool_allocate(fine_pool, 4 * ITEMS, 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(fine_pool, 4 * ITEMS, 0, (void**)&out));
  CHECK(hsa_amd_memory_pool_allocate(kernarg_pool, 4096, 0, &kernarg));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, in));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, out));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, kernarg));
  for (uint32_t i = 0; i < ITEMS; i++) in[i] = (i * 2654435761u) >> 7;
  printf("scratch: tmpring at creation 0x%x\n", amd->compute_tmpring_size);
  const char* kernels[2] = {"big_private.kd", "recursive.kd"};
  for (int k = 0; k < 2; k++) {
    hsa_executable_symbol_t sym;
    CHECK(hsa_executable_get_symbol_by_name(exe, kernels[k], &gpu, &sym));
    uint64_t object;
    uint32_t private_size;
    CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object));
    CHECK(hsa_executable_symbol_get_info(
        sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &private_size));
    if (k == 1 && private_size < 1024) private_size = 1024; /* HIP's default stack */
    memset(kernarg, 0, 4096);
    memcpy(kernarg, &in, 8);
    memcpy((char*)kernarg + 8, &out, 8);
    uint32_t n = ITEMS;
    memcpy((char*)kernarg + 16, &n, 4);
    memset(out, 0xEE, 4 * ITEMS);
    hsa_signal_t done;
    CHECK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
    hsa_kernel_dispatch_packet_t* p =
        (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
    memset((char*)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = 64, p->workgroup_size_y = 1, p->workgroup_size_z = 1;
    p->grid_size_x = ITEMS, p->grid_size_y = 1, p->grid_size_z = 1;
    p->private_segment_size = private_size;
    p->kernel_object = object;
    p->kernarg_address = kernarg;
    p->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n((uint32_t*)p, header | (1u << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    int waits = 0;
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                     HSA_WAIT_STATE_BLOCKED) >= 1) {
      if (++waits > 120) {
        fprintf(stderr, "scratch: %s timed out\n", kernels[k]);
        return 1;
      }
    }
    for (uint32_t i = 0; i < ITEMS; i++) {
      uint32_t want = k == 0 ? big_private(in[i], i) : walk(in, in[i] % 12 + 1, i);
      if (out[i] != want) {
        fprintf(stderr, "scratch: %s out[%u] = 0x%x, expected 0x%x\n", kernels[k], i, out[i],
                want);
        return 1;
      }
    }
    printf("scratch: %s verified %u, tmpring 0x%x\n", kernels[k], ITEMS,
           amd->compute_tmpring_size);
    CHECK(hsa_signal_destroy(done));
  }
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  return 0;
}
