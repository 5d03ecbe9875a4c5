/* A GPU memory fault ends the GPU's SDMA queue, and the copies on it fail visibly instead of
 * waiting for ever. A copy of VRAM to VRAM runs on the GPU's SDMA queue after a dependency
 * signal; its source (a 256 MiB allocation of its own, so that freeing it unmaps it) is freed
 * before the signal is released, so the engine's read faults. Then: the system event handler
 * gets one HSA_AMD_GPU_MEMORY_FAULT_EVENT for the GPU at the source's address; the copy's
 * completion signal becomes -1 (hsa_ext_amd.h: a negative value is a failed copy); a later
 * copy on that GPU is refused with HSA_STATUS_ERROR (amdkfd evicted the queue); a copy between
 * the application's own host buffers (on the host) still completes. Values are checked in C;
 * prints "sdma_fault: ok" and exits 0 when every check holds.
 * Usage: sdma_fault (HSA_ENABLE_SDMA unset: copies between pool memory use SDMA) */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static hsa_amd_memory_pool_t vram;

static hsa_status_t pick_vram(hsa_amd_memory_pool_t p, void* data) {
  (void)data;
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !vram.handle)
    vram = p;
  return HSA_STATUS_SUCCESS;
}

static atomic_int faults;
static _Atomic uint64_t fault_agent, fault_address;

static hsa_status_t on_event(const hsa_amd_event_t* e, void* data) {
  (void)data;
  if (e->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT) {
    atomic_store(&fault_agent, e->memory_fault.agent.handle);
    atomic_store(&fault_address, e->memory_fault.virtual_address);
    atomic_fetch_add(&faults, 1);
  }
  return HSA_STATUS_SUCCESS;
}

int main(void) {
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(gpu, pick_vram, NULL));
  EXPECT(vram.handle != 0);
  OK(hsa_amd_register_system_event_handler(on_event, NULL));
  uint64_t freq;
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq));

  const size_t big = (size_t)256 << 20, size = 1 << 20;
  void *src, *dst, *dst2;
  OK(hsa_amd_memory_pool_allocate(vram, big, 0, &src));
  OK(hsa_amd_memory_pool_allocate(vram, size, 0, &dst));
  OK(hsa_amd_memory_pool_allocate(vram, size, 0, &dst2));
  hsa_signal_t dep, done, done2;
  OK(hsa_signal_create(1, 0, NULL, &dep));
  OK(hsa_signal_create(1, 0, NULL, &done));
  OK(hsa_signal_create(1, 0, NULL, &done2));

  /* The copy waits for dep on the engine; its source is gone by then. */
  OK(hsa_amd_memory_async_copy(dst, gpu, src, gpu, size, 1, &dep, done));
  OK(hsa_amd_memory_pool_free(src));
  hsa_signal_store_screlease(dep, 0);
  /* Bounded (10 s) so that a copy that never completes fails the check rather than hanging. */
  hsa_signal_value_t v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1,
                                                   10 * freq, HSA_WAIT_STATE_BLOCKED);
  EXPECT(v == -1);
  EXPECT(atomic_load(&faults) == 1);
  EXPECT(atomic_load(&fault_agent) == gpu.handle);
  EXPECT(atomic_load(&fault_address) == (uint64_t)(uintptr_t)src);

  /* The queue is gone: refused at once, the signal untouched. */
  EXPECT(hsa_amd_memory_async_copy(dst2, gpu, dst, gpu, 4096, 0, NULL, done2) ==
         HSA_STATUS_ERROR);
  EXPECT(hsa_signal_load_scacquire(done2) == 1);

  /* The application's own memory is copied on the host: that still works. */
  char a[64], b[64];
  for (int i = 0; i < 64; i++) a[i] = (char)(i * 3 + 1);
  memset(b, 0, sizeof b);
  OK(hsa_amd_memory_async_copy(b, cpu, a, cpu, sizeof a, 0, NULL, done2));
  EXPECT(hsa_signal_wait_scacquire(done2, HSA_SIGNAL_CONDITION_LT, 1, 10 * freq,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  EXPECT(memcmp(a, b, sizeof a) == 0);

  OK(hsa_signal_destroy(dep));
  OK(hsa_signal_destroy(done));
  OK(hsa_signal_destroy(done2));
  OK(hsa_amd_memory_pool_free(dst));
  OK(hsa_amd_memory_pool_free(dst2));
  OK(hsa_shut_down());
  if (failures) {
    printf("sdma_fault: %d failures\n", failures);
    return 1;
  }
  printf("sdma_fault: ok\n");
  return 0;
}
