/* A GPU memory fault reaches the system event handlers (hsa_amd_register_system_event_handler)
 * as HSA_AMD_GPU_MEMORY_FAULT_EVENT, with the GPU agent, the address read and the reason, and
 * only then the error callback of the queue that ran the kernel, as in ROCR 5.2 (its
 * Runtime::VMFaultHandler runs before the queue's error handler). The kernel is vector_copy
 * with its input at 0x1000, an address nothing maps. Values are checked in C; prints
 * "memory_fault: ok" and exits 0 when every check holds.
 * With "shut-down-in-callback" after the code object, the queue's callback uses the completion
 * signal and then calls the last hsa_shut_down itself (on the runtime's event thread, which the
 * platform then must not join), and the program checks the runtime is gone.
 * With "unmapped-lock", the input is host memory the program locked (hsa_amd_memory_lock) and
 * then unmapped (replaced by a PROT_NONE mapping, so no other mapping takes the address before
 * the dispatch): the GPU's read of it faults at the locked pointer, as a GPU's access to a
 * userptr buffer object whose pages went does, and the process lives on (hsa_amd_memory_unlock
 * still succeeds). With "unmap-while-reading", 4 MiB of locked input are copied by 2^20
 * work-items while the program unmaps it: the dispatch either completes first or faults at an
 * address inside the locked range; never a crash.
 * Usage: memory_fault KERNELS_CODE_OBJECT [shut-down-in-callback|unmapped-lock|unmap-while-reading] */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"

/* The address the kernel reads. */
#define FAULT_ADDRESS 0x1000u

static hsa_amd_memory_pool_t fine;

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

/* The order things happened in: each handler and the queue callback take the next number. */
static atomic_int sequence;

typedef struct {
  atomic_int calls;
  int seen_at; /* `sequence` when last called */
  hsa_amd_event_t event;
} Seen;
static Seen handler_a, handler_b;

static hsa_status_t on_system_event(const hsa_amd_event_t* event, void* data) {
  Seen* s = data;
  s->event = *event;
  s->seen_at = atomic_fetch_add(&sequence, 1);
  atomic_fetch_add(&s->calls, 1);
  return HSA_STATUS_SUCCESS;
}

static atomic_int queue_errors;
static int queue_error_at;
static hsa_status_t queue_status;
/* The "shut-down-in-callback" mode: the completion signal, what the callback saw in it and
 * what its hsa_shut_down returned. */
static int shut_down_in_callback;
static hsa_signal_t done;
static hsa_signal_value_t callback_value;
static hsa_status_t callback_shut_down = HSA_STATUS_ERROR;
static void on_queue_error(hsa_status_t status, hsa_queue_t* q, void* data) {
  (void)q;
  (void)data;
  queue_status = status;
  if (shut_down_in_callback) {
    hsa_signal_store_screlease(done, 5);
    callback_value = hsa_signal_load_scacquire(done);
    callback_shut_down = hsa_shut_down();
  }
  queue_error_at = atomic_fetch_add(&sequence, 1);
  atomic_fetch_add(&queue_errors, 1);
}

/* Waits up to 10 s for *flag to reach want. */
static int wait_for(atomic_int* flag, int want) {
  struct timespec t = {0, 10 * 1000000L};
  for (int i = 0; i < 1000 && atomic_load(flag) < want; i++) nanosleep(&t, NULL);
  return atomic_load(flag) >= want;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: memory_fault KERNELS_CODE_OBJECT\n");
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
  EXPECT(gpu.handle && fine.handle);

  /* Two handlers, each with its own data. */
  OK(hsa_amd_register_system_event_handler(on_system_event, &handler_a));
  OK(hsa_amd_register_system_event_handler(on_system_event, &handler_b));

  hsa_code_object_reader_t reader;
  hsa_executable_t e;
  OK(hsa_code_object_reader_create_from_memory(bytes, size, &reader));
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e));
  OK(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  hsa_executable_symbol_t sym;
  uint64_t kernel_object = 0;
  uint32_t kernarg_size = 0;
  OK(hsa_executable_get_symbol_by_name(e, "vector_copy.kd", &gpu, &sym));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                    &kernarg_size));

  hsa_queue_t* queue = NULL;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, 0, 0, &queue));
  shut_down_in_callback = argc > 2 && !strcmp(argv[2], "shut-down-in-callback");
  OK(hsa_signal_create(1, 0, NULL, &done));
  int unmapped_lock = argc > 2 && !strcmp(argv[2], "unmapped-lock");
  int racing = argc > 2 && !strcmp(argv[2], "unmap-while-reading");
  /* The input: FAULT_ADDRESS, or locked host memory (unmapped before or during the dispatch). */
  uint32_t items = racing ? 1u << 20 : 1;
  size_t input_bytes = (size_t)items * sizeof(int) < 65536 ? 65536 : (size_t)items * sizeof(int);
  void* host = NULL;
  void* input = (void*)(uintptr_t)FAULT_ADDRESS;
  if (unmapped_lock || racing) {
    host = mmap(NULL, input_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(host != MAP_FAILED);
    memset(host, 0x5a, input_bytes);
    OK(hsa_amd_memory_lock(host, input_bytes, &gpu, 1, &input));
    /* The pages go at once, replaced by an inaccessible mapping that keeps the address: after
     * a plain munmap a later mapping of this process (a thread's stack, a malloc arena) could
     * take the hole before the kernel ran, and the GPU then read that memory instead of
     * faulting (seen: the kernel copied 2 from an anonymous mapping over the locked range). */
    if (unmapped_lock)
      EXPECT(mmap(host, input_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
             host);
  }
  uint64_t fault_lo = (uint64_t)(uintptr_t)input;
  uint64_t fault_hi = racing ? fault_lo + input_bytes : fault_lo + 1;
  int* out = NULL;
  void* kernarg = NULL;
  OK(hsa_amd_memory_pool_allocate(fine, (size_t)items * sizeof(int) < 4096 ? 4096
                                                                            : (size_t)items * sizeof(int),
                                  0, (void**)&out));
  OK(hsa_amd_memory_pool_allocate(fine, kernarg_size < 64 ? 64 : kernarg_size, 0, &kernarg));
  memset(kernarg, 0, kernarg_size);
  void* args[2] = {input, out};
  memcpy(kernarg, args, sizeof args);

  /* One work-item (2^20 when racing): out[i] = in[i], a read of the input. */
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = racing ? 256 : 1;
  p->workgroup_size_y = p->workgroup_size_z = 1;
  p->grid_size_x = items;
  p->grid_size_y = p->grid_size_z = 1;
  p->kernel_object = kernel_object;
  p->kernarg_address = kernarg;
  p->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  __atomic_store_n((uint32_t*)p, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);

  if (racing) {
    /* Unmap while the work-groups read it, then wait for the dispatch's end: completion, or a
     * memory fault inside the locked range. */
    EXPECT(munmap(host, input_bytes) == 0);
    struct timespec t = {0, 10 * 1000000L};
    for (int i = 0; i < 3000 && !atomic_load(&queue_errors) && hsa_signal_load_scacquire(done);
         i++)
      nanosleep(&t, NULL);
    int faulted = atomic_load(&queue_errors) == 1;
    EXPECT(faulted || hsa_signal_load_scacquire(done) == 0);
    if (faulted) {
      EXPECT(queue_status == (hsa_status_t)HSA_STATUS_ERROR_MEMORY_FAULT);
      EXPECT(wait_for(&handler_a.calls, 1));
      uint64_t at = handler_a.event.memory_fault.virtual_address;
      EXPECT(at >= fault_lo && at < fault_hi);
    }
    OK(hsa_amd_memory_unlock(host));
    OK(hsa_queue_destroy(queue));
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(out));
    OK(hsa_amd_memory_pool_free(kernarg));
    OK(hsa_executable_destroy(e));
    OK(hsa_code_object_reader_destroy(reader));
    OK(hsa_shut_down());
    free(bytes);
    if (failures) {
      fprintf(stderr, "memory_fault: %d checks failed\n", failures);
      return 1;
    }
    printf("memory_fault: unmap while reading: %s: ok\n", faulted ? "faulted" : "completed first");
    return 0;
  }

  EXPECT(wait_for(&queue_errors, 1));
  EXPECT(queue_status == (hsa_status_t)HSA_STATUS_ERROR_MEMORY_FAULT);
  /* Each handler once, with the fault, both before the queue's callback. */
  Seen* both[2] = {&handler_a, &handler_b};
  for (int i = 0; i < 2; i++) {
    Seen* s = both[i];
    EXPECT(atomic_load(&s->calls) == 1);
    EXPECT(s->event.event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT);
    EXPECT(s->event.memory_fault.agent.handle == gpu.handle);
    EXPECT(s->event.memory_fault.virtual_address == fault_lo);
    EXPECT(s->event.memory_fault.fault_reason_mask == HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT);
    EXPECT(s->seen_at < queue_error_at);
  }
  EXPECT(handler_a.seen_at < handler_b.seen_at); /* in registration order */
  EXPECT(atomic_load(&queue_errors) == 1);
  if (shut_down_in_callback) {
    EXPECT(callback_value == 5);
    EXPECT(callback_shut_down == HSA_STATUS_SUCCESS);
    /* The runtime is gone: value operations do nothing, calls with a status say so. */
    EXPECT(hsa_signal_load_scacquire(done) == 0);
    EXPECT(hsa_queue_destroy(queue) == HSA_STATUS_ERROR_NOT_INITIALIZED);
    EXPECT(hsa_shut_down() == HSA_STATUS_ERROR_NOT_INITIALIZED);
    free(bytes);
    if (failures) {
      fprintf(stderr, "memory_fault: %d checks failed\n", failures);
      return 1;
    }
    printf("memory_fault: shut down in the queue's callback: ok\n");
    return 0;
  }
  EXPECT(hsa_signal_load_scacquire(done) == 1); /* the dispatch never completed */
  if (unmapped_lock) {
    OK(hsa_amd_memory_unlock(host));
    EXPECT(munmap(host, input_bytes) == 0);
  }

  OK(hsa_queue_destroy(queue));
  OK(hsa_signal_destroy(done));
  OK(hsa_amd_memory_pool_free(out));
  OK(hsa_amd_memory_pool_free(kernarg));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
  OK(hsa_shut_down());
  free(bytes);
  if (failures) {
    fprintf(stderr, "memory_fault: %d checks failed\n", failures);
    return 1;
  }
  printf(unmapped_lock ? "memory_fault: unmapped lock: ok\n" : "memory_fault: ok\n");
  return 0;
}
