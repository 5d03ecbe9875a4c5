/* dispatch_loop in C over hsa.h: the per-dispatch pattern of ROCR's own samples, many times.
 *
 * For every dispatch: allocate a kernarg buffer of a random size (at least the kernel's
 * kernarg segment size), create a completion signal, dispatch vector_copy with the barrier
 * bit set, wait, check the output, then free the kernarg buffer and destroy the signal.
 * Every QUEUE_EVERY dispatches the queue is destroyed and another created.
 *
 * Usage: dispatch_loop CODE_OBJECT ITERATIONS [SEED]
 * Prints "dispatch_loop: N dispatches verified on Q queues" and exits 0 on success; any
 * queue error, wait timeout or wrong element exits non-zero naming the iteration. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 256u
#define WG 64u
#define QUEUE_EVERY 97u

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

static hsa_status_t find_agent(hsa_agent_t agent, void* data) {
  hsa_agent_t* want = data; /* want[0].handle holds the device type to find */
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if ((uint64_t)type == want->handle) {
    *want = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

struct pools {
  hsa_amd_memory_pool_t kernarg, fine;
  int have_kernarg, have_fine;
};

static hsa_status_t find_pools(hsa_amd_memory_pool_t pool, void* data) {
  struct pools* p = data;
  hsa_amd_segment_t segment;
  uint32_t flags;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
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
  hsa_status_string(status, &m);
  fprintf(stderr, "dispatch_loop: iteration %u: queue %llu error 0x%x: %s\n",
          *(unsigned*)data, (unsigned long long)queue->id, (unsigned)status, m);
  exit(3);
}

/* xorshift64*: the kernarg sizes, reproducible from the seed. */
static uint64_t rng_state;
static uint32_t next_random(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CODE_OBJECT ITERATIONS [SEED]\n", argv[0]);
    return 2;
  }
  unsigned iterations = (unsigned)strtoul(argv[2], NULL, 10);
  rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) | 1 : 0x9e3779b97f4a7c15ull;
  static unsigned iteration;

  CHECK(hsa_init());
  hsa_agent_t gpu = {HSA_DEVICE_TYPE_GPU}, cpu = {HSA_DEVICE_TYPE_CPU};
  if (hsa_iterate_agents(find_agent, &gpu) != HSA_STATUS_INFO_BREAK ||
      hsa_iterate_agents(find_agent, &cpu) != HSA_STATUS_INFO_BREAK) {
    fprintf(stderr, "no GPU or no CPU agent\n");
    return 1;
  }
  struct pools pools = {0};
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pools, &pools));
  if (!pools.have_kernarg || !pools.have_fine) {
    fprintf(stderr, "no kernarg or fine-grained pool on the CPU agent\n");
    return 1;
  }

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
  CHECK(hsa_executable_get_symbol_by_name(exe, "vector_copy.kd", &gpu, &sym));
  uint64_t kernel_object;
  uint32_t kernarg_size;
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));

  int *in, *out;
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&out));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, in));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, out));

  hsa_queue_t* queue = NULL;
  unsigned queues = 0;
  for (iteration = 0; iteration < iterations; iteration++) {
    if (iteration % QUEUE_EVERY == 0) {
      if (queue != NULL) CHECK(hsa_queue_destroy(queue));
      CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, queue_error, &iteration,
                             UINT32_MAX, UINT32_MAX, &queue));
      queues++;
    }
    for (uint32_t i = 0; i < N; i++) {
      in[i] = (int)(i * 2654435761u + iteration);
      out[i] = -1;
    }
    /* At least the kernel's kernarg segment, up to 4 KiB more. */
    uint32_t ka_bytes = kernarg_size + next_random() % 4097u;
    void* kernarg;
    CHECK(hsa_amd_memory_pool_allocate(pools.kernarg, ka_bytes, 0, &kernarg));
    memset(kernarg, 0, ka_bytes);
    memcpy(kernarg, &in, 8);
    memcpy((char*)kernarg + 8, &out, 8);
    hsa_signal_t done;
    CHECK(hsa_signal_create(1, 0, NULL, &done));

    uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
    while (index - hsa_queue_load_read_index_scacquire(queue) >= queue->size) {
    }
    hsa_kernel_dispatch_packet_t* packet =
        (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
    memset((char*)packet + 4, 0, sizeof *packet - 4);
    packet->workgroup_size_x = WG;
    packet->workgroup_size_y = 1;
    packet->workgroup_size_z = 1;
    packet->grid_size_x = N;
    packet->grid_size_y = 1;
    packet->grid_size_z = 1;
    packet->kernel_object = kernel_object;
    packet->kernarg_address = kernarg;
    packet->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (1 << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    __atomic_store_n((uint32_t*)packet, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);

    int waits = 0;
    hsa_signal_value_t v;
    while ((v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                          HSA_WAIT_STATE_BLOCKED)) >= 1) {
      if (++waits > 30) {
        fprintf(stderr, "dispatch_loop: iteration %u: timed out (signal %lld)\n", iteration,
                (long long)v);
        return 1;
      }
    }
    for (uint32_t i = 0; i < N; i++) {
      if (out[i] != in[i]) {
        fprintf(stderr, "dispatch_loop: iteration %u: element %u is %d, expected %d\n",
                iteration, i, out[i], in[i]);
        return 1;
      }
    }
    CHECK(hsa_amd_memory_pool_free(kernarg));
    CHECK(hsa_signal_destroy(done));
  }
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(in));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  close(fd);
  CHECK(hsa_shut_down());
  printf("dispatch_loop: %u dispatches verified on %u queues\n", iterations, queues);
  return 0;
}
