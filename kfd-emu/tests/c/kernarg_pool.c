/* A plain HSA program over hsa.h, as users write one: each dispatch of vector_copy gets its
 * kernarg buffer from the CPU agent's KERNARG_INIT pool with hsa_amd_memory_pool_allocate,
 * filled by the host, freed after the dispatch completes. The in and out buffers come from
 * the fine-grained pool, made accessible to the GPU with hsa_amd_agents_allow_access. The
 * kernarg buffers are made accessible the same way only with "allow": without it the
 * program trusts the pool's ACCESSIBLE_BY_ALL, which only says access *can* be granted.
 * ROCR answers HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS for the GPU on that pool with
 * DISALLOWED_BY_DEFAULT (2) and allocates restricted: amdkfd maps the buffer to no GPU, and
 * the kernel's first kernarg load faults.
 *
 * Usage: kernarg_pool CODE_OBJECT DISPATCHES [allow]
 * Prints the pool's attributes, then "kernarg_pool: N dispatches verified" and exits 0 when
 * every dispatch copied its slice; 1 on an error, 3 when the queue reported one. Each
 * dispatch's kernarg address goes to stderr ("kernarg_pool: dispatch D kernarg 0x..."). Built
 * against hsa.h alone: runs on any libhsa-runtime64. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096u
#define WG 64u

#define CHECK(call)                                                          \
  do {                                                                       \
    hsa_status_t s_ = (call);                                                \
    if (s_ != HSA_STATUS_SUCCESS) {                                          \
      fprintf(stderr, "%s:%d: %s failed: 0x%x\n", __FILE__, __LINE__, #call, \
              (unsigned)s_);                                                 \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

struct agents {
  hsa_agent_t gpu, cpu;
  int have_gpu, have_cpu;
};

static hsa_status_t find_agents(hsa_agent_t agent, void* data) {
  struct agents* a = data;
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU && !a->have_gpu) {
    a->gpu = agent;
    a->have_gpu = 1;
  } else if (type == HSA_DEVICE_TYPE_CPU && !a->have_cpu) {
    a->cpu = agent;
    a->have_cpu = 1;
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
  (void)queue;
  (void)data;
  fprintf(stderr, "kernarg_pool: queue error 0x%x\n", (unsigned)status);
  exit(3);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CODE_OBJECT DISPATCHES\n", argv[0]);
    return 2;
  }
  unsigned dispatches = (unsigned)atoi(argv[2]);
  int allow = argc > 3 && strcmp(argv[3], "allow") == 0;
  CHECK(hsa_init());
  struct agents a = {0};
  CHECK(hsa_iterate_agents(find_agents, &a));
  struct pools p = {0};
  CHECK(hsa_amd_agent_iterate_memory_pools(a.cpu, find_pools, &p));
  if (!a.have_gpu || !p.have_kernarg || !p.have_fine) {
    fprintf(stderr, "no GPU agent, kernarg pool or fine-grained pool\n");
    return 1;
  }
  bool all;
  CHECK(hsa_amd_memory_pool_get_info(p.kernarg, HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL,
                                     &all));
  hsa_amd_memory_pool_access_t access;
  CHECK(hsa_amd_agent_memory_pool_get_info(a.gpu, p.kernarg,
                                           HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, &access));
  printf("kernarg_pool: kernarg pool accessible by all: %s; GPU access %d\n",
         all ? "yes" : "no", (int)access);

  hsa_queue_t* queue;
  CHECK(hsa_queue_create(a.gpu, 64, HSA_QUEUE_TYPE_SINGLE, queue_error, NULL, UINT32_MAX,
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
  CHECK(hsa_executable_load_agent_code_object(exe, a.gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  hsa_executable_symbol_t sym;
  CHECK(hsa_executable_get_symbol_by_name(exe, "vector_copy.kd", &a.gpu, &sym));
  uint64_t kernel_object;
  uint32_t kernarg_size;
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));

  int *in, *out;
  CHECK(hsa_amd_memory_pool_allocate(p.fine, N * sizeof(int), 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(p.fine, N * sizeof(int), 0, (void**)&out));
  CHECK(hsa_amd_agents_allow_access(1, &a.gpu, NULL, in));
  CHECK(hsa_amd_agents_allow_access(1, &a.gpu, NULL, out));
  for (uint32_t i = 0; i < N; i++) {
    in[i] = (int)(i * 13u + 5u);
    out[i] = -1;
  }
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  uint32_t slice = N / dispatches;
  for (unsigned d = 0; d < dispatches; d++) {
    /* Each dispatch copies its slice: its kernarg points at the slice's start. */
    void* kernarg;
    uint32_t bytes = kernarg_size > 16 ? kernarg_size : 16;
    CHECK(hsa_amd_memory_pool_allocate(p.kernarg, bytes, 0, &kernarg));
    if (allow) CHECK(hsa_amd_agents_allow_access(1, &a.gpu, NULL, kernarg));
    fprintf(stderr, "kernarg_pool: dispatch %u kernarg %p\n", d, kernarg);
    memset(kernarg, 0, bytes);
    int* src = in + d * slice;
    int* dst = out + d * slice;
    memcpy(kernarg, &src, 8);
    memcpy((char*)kernarg + 8, &dst, 8);
    hsa_signal_store_relaxed(done, 1);
    uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
    hsa_kernel_dispatch_packet_t* packet =
        (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
    memset((char*)packet + 4, 0, sizeof *packet - 4);
    packet->workgroup_size_x = WG;
    packet->workgroup_size_y = 1;
    packet->workgroup_size_z = 1;
    packet->grid_size_x = slice;
    packet->grid_size_y = 1;
    packet->grid_size_z = 1;
    packet->kernel_object = kernel_object;
    packet->kernarg_address = kernarg;
    packet->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    __atomic_store_n((uint32_t*)packet, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    int waits = 0;
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                     HSA_WAIT_STATE_BLOCKED) >= 1) {
      if (++waits > 60) {
        fprintf(stderr, "kernarg_pool: dispatch %u timed out\n", d);
        return 1;
      }
    }
    CHECK(hsa_amd_memory_pool_free(kernarg));
  }
  for (uint32_t i = 0; i < slice * dispatches; i++) {
    if (out[i] != in[i]) {
      fprintf(stderr, "kernarg_pool: element %u is %d, expected %d\n", i, out[i], in[i]);
      return 1;
    }
  }
  printf("kernarg_pool: %u dispatches verified\n", dispatches);
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(in));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  close(fd);
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  return 0;
}
