/* hsa_amd_memory_lock maps the locked pages only to the GPU agents it lists (all of them when
 * it lists none), as ROCR 5.2's MemoryRegion::Lock: on a machine of eight GPUs (the MI210
 * capture), memory locked for GPU 2 is read by a kernel on GPU 2, while the same kernel on
 * GPU 5 faults at the agent pointer (the system event handler names GPU 5 and that address;
 * the queue's callback gets MEMORY_FAULT); hsa_amd_pointer_info lists GPU 2 alone as
 * accessible. Locking the same pages again for GPU 5 (and the CPU) maps them to GPU 5 too,
 * whose kernel then reads them; a lock listing no agent reaches every GPU. Values are
 * checked in C; prints "lock_agents: ok" and exits 0 when every check holds.
 * Usage: lock_agents KERNELS_CODE_OBJECT (with HSA_RT_SYSFS naming an 8-GPU topology) */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)
#define OK(call) EXPECT((call) == HSA_STATUS_SUCCESS)

#define MAX_GPUS 8
#define N 1024

static hsa_agent_t cpu, gpus[MAX_GPUS];
static int gpu_count;
static hsa_amd_memory_pool_t fine;

static hsa_status_t pick_agents(hsa_agent_t a, void* data) {
  (void)data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_CPU && !cpu.handle) cpu = a;
  if (t == HSA_DEVICE_TYPE_GPU && gpu_count < MAX_GPUS) gpus[gpu_count++] = a;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t pick_fine(hsa_amd_memory_pool_t p, void* data) {
  (void)data;
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !fine.handle) fine = p;
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

/* The last memory fault the system event handler saw, and how many. */
static atomic_int faults;
static hsa_amd_event_t fault;
static hsa_status_t on_system_event(const hsa_amd_event_t* event, void* data) {
  (void)data;
  fault = *event;
  atomic_fetch_add(&faults, 1);
  return HSA_STATUS_SUCCESS;
}

static atomic_int queue_errors;
static hsa_status_t queue_status;
static void on_queue_error(hsa_status_t status, hsa_queue_t* q, void* data) {
  (void)q;
  (void)data;
  queue_status = status;
  atomic_fetch_add(&queue_errors, 1);
}

/* Waits up to 10 s for *flag to reach want. */
static int wait_for(atomic_int* flag, int want) {
  struct timespec t = {0, 10 * 1000000L};
  for (int i = 0; i < 1000 && atomic_load(flag) < want; i++) nanosleep(&t, NULL);
  return atomic_load(flag) >= want;
}

/* vector_copy's kernel object on GPU `g` (its code object loaded for that agent). */
static uint64_t kernel_object[MAX_GPUS];
static uint32_t kernarg_size;

/* Runs vector_copy(in, out) over n work-items on GPU `g`, on a queue of its own; returns 1 when
   it completed, 0 when its queue stopped with an error. */
static int copy_on(int g, const void* in, int* out, uint32_t n) {
  hsa_queue_t* queue = NULL;
  OK(hsa_queue_create(gpus[g], 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, 0, 0, &queue));
  hsa_signal_t done;
  OK(hsa_signal_create(1, 0, NULL, &done));
  void* kernarg = NULL;
  OK(hsa_amd_memory_pool_allocate(fine, kernarg_size < 64 ? 64 : kernarg_size, 0, &kernarg));
  memset(kernarg, 0, kernarg_size);
  const void* args[2] = {in, out};
  memcpy(kernarg, args, sizeof args);
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = n < 64 ? (uint16_t)n : 64;
  p->workgroup_size_y = p->workgroup_size_z = 1;
  p->grid_size_x = n;
  p->grid_size_y = p->grid_size_z = 1;
  p->kernel_object = kernel_object[g];
  p->kernarg_address = kernarg;
  p->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  int errors_before = atomic_load(&queue_errors);
  __atomic_store_n((uint32_t*)p, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
  /* Done, or stopped: whichever comes first. */
  int completed = 0;
  for (int i = 0; i < 1000; i++) {
    if (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 10 * 1000000ull,
                                  HSA_WAIT_STATE_BLOCKED) == 0) {
      completed = 1;
      break;
    }
    if (atomic_load(&queue_errors) > errors_before) break;
  }
  OK(hsa_queue_destroy(queue));
  OK(hsa_signal_destroy(done));
  OK(hsa_amd_memory_pool_free(kernarg));
  return completed;
}

/* The GPU indices hsa_amd_pointer_info lists as accessing `p`, as a bit mask; 0x100 for an
   agent that is not a GPU. */
static void* alloc_bytes(size_t n) { return malloc(n); }
static unsigned accessible_mask(void* p) {
  hsa_amd_pointer_info_t info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  uint32_t count = 0;
  hsa_agent_t* accessible = NULL;
  OK(hsa_amd_pointer_info(p, &info, alloc_bytes, &count, &accessible));
  EXPECT(info.type == HSA_EXT_POINTER_TYPE_LOCKED);
  unsigned mask = 0;
  for (uint32_t i = 0; i < count; i++) {
    int found = 0;
    for (int g = 0; g < gpu_count; g++)
      if (accessible[i].handle == gpus[g].handle) {
        mask |= 1u << g;
        found = 1;
      }
    if (!found) mask |= 0x100;
  }
  free(accessible);
  return mask;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lock_agents KERNELS_CODE_OBJECT\n");
    return 2;
  }
  size_t size = 0;
  void* bytes = read_file(argv[1], &size);
  if (!bytes || !size) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_fine, NULL));
  EXPECT(gpu_count == 8 && fine.handle);
  if (gpu_count != 8) return 1;
  OK(hsa_amd_register_system_event_handler(on_system_event, NULL));

  hsa_code_object_reader_t reader;
  hsa_executable_t e;
  OK(hsa_code_object_reader_create_from_memory(bytes, size, &reader));
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e));
  for (int g = 0; g < gpu_count; g++)
    OK(hsa_executable_load_agent_code_object(e, gpus[g], reader, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  for (int g = 0; g < gpu_count; g++) {
    hsa_executable_symbol_t sym;
    OK(hsa_executable_get_symbol_by_name(e, "vector_copy.kd", &gpus[g], &sym));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                      &kernel_object[g]));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                      &kernarg_size));
  }
  int* out = NULL;
  OK(hsa_amd_memory_pool_allocate(fine, N * sizeof(int), 0, (void**)&out));

  /* Locked for GPU 2 alone. */
  int* in = NULL;
  EXPECT(posix_memalign((void**)&in, 4096, N * sizeof(int)) == 0);
  for (int i = 0; i < N; i++) in[i] = i * 3 + 1;
  hsa_agent_t only_2[1] = {gpus[2]};
  void* in_agent = NULL;
  OK(hsa_amd_memory_lock(in, N * sizeof(int), only_2, 1, &in_agent));
  EXPECT(in_agent && in_agent != (void*)in);
  EXPECT(accessible_mask(in) == 1u << 2);
  EXPECT(copy_on(2, in_agent, out, N));
  EXPECT(out[0] == 1 && out[N - 1] == (N - 1) * 3 + 1);

  /* GPU 5 does not reach it: its read faults at the agent pointer. */
  EXPECT(!copy_on(5, in_agent, out, 1));
  EXPECT(wait_for(&faults, 1) && wait_for(&queue_errors, 1));
  EXPECT(fault.event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT);
  EXPECT(fault.memory_fault.agent.handle == gpus[5].handle);
  EXPECT(fault.memory_fault.virtual_address == (uint64_t)(uintptr_t)in_agent);
  EXPECT(queue_status == (hsa_status_t)HSA_STATUS_ERROR_MEMORY_FAULT);

  /* Locked again for GPU 5 and the CPU: the same registration, now mapped to GPU 5 too. */
  hsa_agent_t five_and_cpu[2] = {gpus[5], cpu};
  void* again = NULL;
  OK(hsa_amd_memory_lock(in, N * sizeof(int), five_and_cpu, 2, &again));
  EXPECT(again == in_agent);
  EXPECT(accessible_mask(in) == ((1u << 2) | (1u << 5)));
  memset(out, 0, N * sizeof(int));
  EXPECT(copy_on(5, in_agent, out, N));
  EXPECT(out[0] == 1 && out[N - 1] == (N - 1) * 3 + 1);
  OK(hsa_amd_memory_unlock(in));
  OK(hsa_amd_memory_unlock(in));

  /* No agents listed: every GPU. */
  int* all = NULL;
  EXPECT(posix_memalign((void**)&all, 4096, N * sizeof(int)) == 0);
  for (int i = 0; i < N; i++) all[i] = 7 * i;
  void* all_agent = NULL;
  OK(hsa_amd_memory_lock(all, N * sizeof(int), NULL, 0, &all_agent));
  EXPECT(accessible_mask(all) == 0xffu);
  memset(out, 0, N * sizeof(int));
  EXPECT(copy_on(7, all_agent, out, N));
  EXPECT(out[1] == 7 && out[N - 1] == 7 * (N - 1));
  OK(hsa_amd_memory_unlock(all));

  EXPECT(atomic_load(&faults) == 1 && atomic_load(&queue_errors) == 1);
  OK(hsa_amd_memory_pool_free(out));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
  OK(hsa_shut_down());
  free(in);
  free(all);
  free(bytes);
  if (failures) {
    fprintf(stderr, "lock_agents: %d checks failed\n", failures);
    return 1;
  }
  printf("lock_agents: ok\n");
  return 0;
}
