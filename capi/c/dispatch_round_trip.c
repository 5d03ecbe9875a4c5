/* B8 (BENCHMARKS.md), hsa.h only: the round trip of one tiny dispatch, many times, on whatever
 * libhsa-runtime64 the program loads (hsa-rt's, or Debian's ROCR under kfd-emu).
 *
 * Set up once: a queue, a kernarg buffer, a completion signal (hsa_signal_create, no
 * consumers: an interrupt signal on ROCR), vector_copy's kernel object. Per dispatch: the
 * signal set back to 1, a kernel-dispatch packet of one work-item (vector_copy copies one
 * int) with the barrier bit and system-scope fences, its header published, the doorbell rung,
 * and an active wait (HSA_WAIT_STATE_ACTIVE) until the signal is below 1. The element copied
 * is checked after every dispatch. 10 dispatches untimed, then five batches of ITERATIONS / 5;
 * printed: "dispatch_round_trip: N dispatches, X ns per dispatch (batches: ...)", X being the
 * median batch's time per dispatch (CLOCK_MONOTONIC). Then five more batches time only the
 * runtime's part on the host, each round trip's calls up to and including the doorbell store
 * (signal reset, write-index add, read-index load, packet, doorbell), the wait left out:
 * "dispatch_round_trip: submit X ns per dispatch (batches: ...)". (Separate batches, so the
 * clock reads they add do not enter the round-trip figure.)
 *
 * Placement, as the criterion benches do it: on a machine whose CPUs 0 and 1 this process may
 * use, the main thread runs on CPU 1 until the queue exists, so the threads the runtime (and
 * the emulated device's command processor under it) starts meanwhile inherit CPU 1, then moves
 * to CPU 0 for the timed loop. Left to the scheduler, the waiting thread and the command
 * processor sometimes share one CPU and every dispatch waits for a time slice (issue 21).
 *
 * Usage: dispatch_round_trip CODE_OBJECT ITERATIONS
 * Exits 0 on success; a queue error, a wait timeout or a wrong element exits non-zero. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#endif
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

#define BATCHES 5

static hsa_status_t find_agent(hsa_agent_t agent, void* data) {
  hsa_agent_t* want = data; /* want->handle holds the device type to find */
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
  (void)data;
  hsa_status_string(status, &m);
  fprintf(stderr, "dispatch_round_trip: queue %llu error 0x%x: %s\n",
          (unsigned long long)queue->id, (unsigned)status, m);
  exit(3);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static hsa_queue_t* queue;
static uint64_t kernel_object;
static void* kernarg;
static hsa_signal_t done;
static int *in, *out;
/* When non-NULL, each round trip adds its submission's time (ns) here. */
static double* submit_ns;

/* One dispatch of one work-item, waited for; `value` is the element it must copy. */
static void round_trip(int value) {
  double t0 = submit_ns ? now_ns() : 0;
  *in = value;
  *out = -1;
  hsa_signal_store_relaxed(done, 1);
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  while (index - hsa_queue_load_read_index_scacquire(queue) >= queue->size) {
  }
  hsa_kernel_dispatch_packet_t* packet =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)packet + 4, 0, sizeof *packet - 4);
  packet->workgroup_size_x = 1;
  packet->workgroup_size_y = 1;
  packet->workgroup_size_z = 1;
  packet->grid_size_x = 1;
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
  if (submit_ns) *submit_ns += now_ns() - t0;
  int waits = 0;
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                   HSA_WAIT_STATE_ACTIVE) >= 1) {
    if (++waits > 30) {
      fprintf(stderr, "dispatch_round_trip: dispatch of %d timed out\n", value);
      exit(1);
    }
  }
  if (*out != value) {
    fprintf(stderr, "dispatch_round_trip: copied %d, expected %d\n", *out, value);
    exit(1);
  }
}

/* Moves the calling thread to `cpu`. */
static void pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)sched_setaffinity(0, sizeof one, &one);
}

/* Whether CPUs 0 and 1 are both allowed to this process. */
static int two_cpus(void) {
  cpu_set_t allowed;
  return sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_ISSET(0, &allowed) &&
         CPU_ISSET(1, &allowed);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CODE_OBJECT ITERATIONS\n", argv[0]);
    return 2;
  }
  unsigned iterations = (unsigned)strtoul(argv[2], NULL, 10);
  if (iterations < BATCHES) {
    fprintf(stderr, "dispatch_round_trip: ITERATIONS must be at least %d\n", BATCHES);
    return 2;
  }

  int pinned = two_cpus();
  if (pinned) pin(1);
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
  uint32_t kernarg_size;
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));

  CHECK(hsa_amd_memory_pool_allocate(pools.fine, 4096, 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, 4096, 0, (void**)&out));
  CHECK(hsa_amd_memory_pool_allocate(pools.kernarg, kernarg_size, 0, &kernarg));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, in));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, out));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, kernarg));
  memset(kernarg, 0, kernarg_size);
  memcpy(kernarg, &in, 8);
  memcpy((char*)kernarg + 8, &out, 8);
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, queue_error, NULL, UINT32_MAX,
                         UINT32_MAX, &queue));
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  if (pinned) pin(0);

  int value = 0;
  for (int i = 0; i < 10; i++) round_trip(value++);
  unsigned per = iterations / BATCHES;
  double t[BATCHES], sorted[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_ns();
    for (unsigned i = 0; i < per; i++) round_trip(value++);
    t[b] = (now_ns() - t0) / per;
  }
  memcpy(sorted, t, sizeof t);
  qsort(sorted, BATCHES, sizeof sorted[0], cmp_double);
  printf("dispatch_round_trip: %u dispatches, %.0f ns per dispatch (batches:", per * BATCHES,
         sorted[BATCHES / 2]);
  for (int b = 0; b < BATCHES; b++) printf(" %.0f", t[b]);
  printf(")\n");
  for (int b = 0; b < BATCHES; b++) {
    double submitted = 0;
    submit_ns = &submitted;
    for (unsigned i = 0; i < per; i++) round_trip(value++);
    submit_ns = NULL;
    t[b] = submitted / per;
  }
  memcpy(sorted, t, sizeof t);
  qsort(sorted, BATCHES, sizeof sorted[0], cmp_double);
  printf("dispatch_round_trip: submit %.0f ns per dispatch (batches:", sorted[BATCHES / 2]);
  for (int b = 0; b < BATCHES; b++) printf(" %.0f", t[b]);
  printf(")\n");

  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_amd_memory_pool_free(kernarg));
  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(in));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  close(fd);
  CHECK(hsa_shut_down());
  return 0;
}
