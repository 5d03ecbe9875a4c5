/* What the C test programs share: a failure count with the EXPECT/OK/IS checks that bump it
 * (and print the file, line and condition), and the first CPU and GPU agent (pick_agents, an
 * hsa_iterate_agents callback). Each program includes it once, after <hsa/hsa.h>. */
#ifndef HSA_RT_C_CHECK_H
#define HSA_RT_C_CHECK_H

#include <hsa/hsa.h>
#include <stdio.h>

static int failures;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)
#define OK(call) EXPECT((call) == HSA_STATUS_SUCCESS)
#define IS(call, status) EXPECT((call) == (hsa_status_t)(status))

static hsa_agent_t cpu, gpu;

/* hsa_iterate_agents callback: the first CPU agent into cpu, the first GPU agent into gpu. */
static hsa_status_t pick_agents(hsa_agent_t a, void* data) {
  (void)data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_CPU && !cpu.handle) cpu = a;
  if (t == HSA_DEVICE_TYPE_GPU && !gpu.handle) gpu = a;
  return HSA_STATUS_SUCCESS;
}

#endif
