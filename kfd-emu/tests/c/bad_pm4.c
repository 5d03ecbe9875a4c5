/* An AMD PM4-IB vendor packet (ROCR's amd_aql_pm4_ib, AmdFormat 1) whose PM4 the command
 * processor does not run (EVENT_WRITE, opcode 0x46), submitted on a queue with an error
 * callback: the CP stops the queue with its vendor-packet error code, which the runtime
 * reports to the callback as HSA_STATUS_ERROR_INVALID_PACKET_FORMAT.
 *
 * Prints "bad_pm4: queue error 0x<status>" and exits 0 when the callback came; exits 1 when
 * it did not come within 10 s. Built against hsa.h alone: runs on any libhsa-runtime64. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    hsa_status_t s_ = (call);                                                    \
    if (s_ != HSA_STATUS_SUCCESS) {                                              \
      fprintf(stderr, "%s:%d: %s failed: 0x%x\n", __FILE__, __LINE__, #call,     \
              (unsigned)s_);                                                     \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static volatile unsigned reported;

static hsa_status_t find_gpu(hsa_agent_t agent, void* data) {
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU) {
    *(hsa_agent_t*)data = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static void queue_error(hsa_status_t status, hsa_queue_t* queue, void* data) {
  (void)queue;
  (void)data;
  __atomic_store_n(&reported, (unsigned)status, __ATOMIC_RELEASE);
}

int main(void) {
  CHECK(hsa_init());
  hsa_agent_t gpu = {0};
  if (hsa_iterate_agents(find_gpu, &gpu) != HSA_STATUS_INFO_BREAK) {
    fprintf(stderr, "no GPU agent\n");
    return 1;
  }
  hsa_queue_t* queue;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, queue_error, NULL, UINT32_MAX,
                         UINT32_MAX, &queue));
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  uint32_t* slot = (uint32_t*)((char*)queue->base_address + (index & (queue->size - 1)) * 64);
  memset(slot + 1, 0, 60);
  slot[1] = 3u << 30 | 0u << 16 | 0x46u << 8; /* PM4 type 3, EVENT_WRITE, 2 dwords */
  slot[2] = 0x16;                            /* its event (CACHE_FLUSH) */
  slot[3] = 0x80000000u;                     /* type-2 fillers */
  slot[4] = 0x80000000u;
  slot[5] = 10; /* dw_cnt_remain */
  /* Header: HSA_PACKET_TYPE_VENDOR_SPECIFIC (0), no barrier, no fences; AmdFormat 1. */
  __atomic_store_n(slot, 1u << 16, __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
  for (int i = 0; i < 1000; i++) {
    unsigned s = __atomic_load_n(&reported, __ATOMIC_ACQUIRE);
    if (s != 0) {
      printf("bad_pm4: queue error 0x%x\n", s);
      fflush(stdout);
      _exit(0);
    }
    usleep(10000);
  }
  fprintf(stderr, "bad_pm4: no queue error within 10 s\n");
  return 1;
}
