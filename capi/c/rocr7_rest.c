/* The ROCR 7.2.4 exports that HIP 7.2.4 does not import, as a transcript: queue attributes
 * (hsa_amd_queue_get_info), hsa_amd_signal_wait_all, dma-buf export v2 and close, the
 * streaming performance monitor, PC sampling, and the debugger's _amdgpu_r_debug list around
 * an executable's freeze and destroy (argv[1]: a gfx90a code object). Every line is a value
 * or status that does not depend on the runtime's addresses, so the transcript of Debian's
 * ROCR 7.2.4 under kfd-emu and this library's are compared with one expected file
 * (c/rocr7_rest.expected). Exits 0 unless a call it needs to go on fails. */
#define _GNU_SOURCE
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/hsa_ven_amd_loader.h>
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hsa_rocr7.h"

static void status(const char* what, hsa_status_t s) { printf("%s: %#x\n", what, (unsigned)s); }

static hsa_amd_memory_pool_t vram;
static hsa_status_t pick_vram(hsa_amd_memory_pool_t p, void* data) {
  (void)data;
  bool alloc;
  uint32_t seg;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && seg == HSA_AMD_SEGMENT_GLOBAL && !vram.handle) vram = p;
  return HSA_STATUS_SUCCESS;
}

static int configurations;
static hsa_status_t count_configuration(const hsa_ven_amd_pcs_configuration_t* c, void* d) {
  (void)c;
  (void)d;
  configurations++;
  return HSA_STATUS_SUCCESS;
}

static void data_ready(void* a, size_t b, size_t c, hsa_ven_amd_pcs_data_copy_callback_t d,
                       void* e) {
  (void)a, (void)b, (void)c, (void)d, (void)e;
}

static hsa_ven_amd_loader_1_01_pfn_t loader;
static int64_t delta;
static hsa_status_t first_delta(hsa_executable_t exe, hsa_loaded_code_object_t lco,
                                void* data) {
  (void)exe;
  (void)data;
  loader.hsa_ven_amd_loader_loaded_code_object_get_info(
      lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA, &delta);
  return HSA_STATUS_SUCCESS;
}

/* The list _amdgpu_r_debug heads: its version, state and length; each entry's URI with the
 * code object's path (arg) replaced by ARG, and whether l_addr is the loader's load delta. */
static void show_r_debug(const char* when, const char* arg) {
  struct r_debug* r = dlsym(RTLD_DEFAULT, "_amdgpu_r_debug");
  if (!r) {
    printf("r_debug %s: absent\n", when);
    return;
  }
  int n = 0;
  for (struct link_map* m = r->r_map; m; m = m->l_next) n++;
  printf("r_debug %s: version %d state %d entries %d brk %d\n", when, r->r_version, r->r_state,
         n, r->r_brk != 0);
  for (struct link_map* m = r->r_map; m; m = m->l_next) {
    const char* at = strstr(m->l_name, arg);
    if (at)
      printf("  %.*sARG%s l_addr_is_delta %d prev_ok %d\n", (int)(at - m->l_name), m->l_name,
             at + strlen(arg), (int64_t)m->l_addr == delta,
             m->l_prev == NULL || m->l_prev->l_next == m);
    else
      printf("  %s\n", m->l_name);
  }
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: rocr7_rest CODE_OBJECT\n");
    return 2;
  }
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(gpu, pick_vram, NULL));
  if (failures) return 1;

  /* hsa_amd_queue_get_info */
  hsa_queue_t* q = NULL;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
  if (failures) return 1;
  hsa_agent_t owner = {0};
  status("queue_get_info AGENT", hsa_amd_queue_get_info(q, HSA_AMD_QUEUE_INFO_AGENT, &owner));
  printf("  is the GPU: %d\n", owner.handle == gpu.handle);
  uint64_t doorbell = 0;
  status("queue_get_info DOORBELL_ID",
         hsa_amd_queue_get_info(q, HSA_AMD_QUEUE_INFO_DOORBELL_ID, &doorbell));
  /* amd_signal_t's hardware_doorbell_ptr, at byte 8 of the doorbell signal. */
  uint64_t rung = *(const uint64_t*)(uintptr_t)(q->doorbell_signal.handle + 8);
  printf("  the doorbell signal's address: %d\n", doorbell != 0 && doorbell == rung);
  status("queue_get_info 2", hsa_amd_queue_get_info(q, (hsa_queue_info_attribute_t)2, &doorbell));
  status("queue_get_info NULL queue", hsa_amd_queue_get_info(NULL, HSA_AMD_QUEUE_INFO_AGENT, &owner));

  /* hsa_amd_signal_wait_all */
  hsa_signal_t s[3];
  OK(hsa_signal_create(0, 0, NULL, &s[0]));
  OK(hsa_signal_create(5, 0, NULL, &s[1]));
  s[2].handle = 0;
  hsa_signal_condition_t c[3] = {HSA_SIGNAL_CONDITION_EQ, HSA_SIGNAL_CONDITION_GTE,
                                 HSA_SIGNAL_CONDITION_EQ};
  hsa_signal_value_t v[3] = {0, 5, 7}, sat[3] = {9, 9, 9};
  uint32_t r = hsa_amd_signal_wait_all(3, s, c, v, UINT64_MAX, HSA_WAIT_STATE_BLOCKED, sat);
  printf("wait_all met: %u, satisfying %ld %ld %ld\n", r, (long)sat[0], (long)sat[1],
         (long)sat[2]);
  uint64_t freq = 0;
  OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq));
  v[0] = 1;
  sat[0] = sat[1] = sat[2] = 9;
  r = hsa_amd_signal_wait_all(3, s, c, v, freq / 100, HSA_WAIT_STATE_BLOCKED, sat);
  printf("wait_all timeout: %u, satisfying %ld %ld %ld\n", r, (long)sat[0], (long)sat[1],
         (long)sat[2]);
  r = hsa_amd_signal_wait_all(0, s, c, v, 0, HSA_WAIT_STATE_ACTIVE, NULL);
  printf("wait_all of none: %u\n", r);
  hsa_signal_t nulls[2] = {{0}, {0}};
  sat[0] = sat[1] = 9;
  r = hsa_amd_signal_wait_all(2, nulls, c, v, 0, HSA_WAIT_STATE_ACTIVE, sat);
  printf("wait_all of NULL signals: %u, satisfying %ld %ld\n", r, (long)sat[0], (long)sat[1]);
  hsa_signal_condition_t bad[1] = {(hsa_signal_condition_t)7};
  r = hsa_amd_signal_wait_all(1, s, bad, v, 0, HSA_WAIT_STATE_ACTIVE, NULL);
  printf("wait_all with condition 7: %u\n", r);

  /* dma-buf export v2 and close */
  void* p = NULL;
  OK(hsa_amd_memory_pool_allocate(vram, 1 << 20, 0, &p));
  if (failures) return 1;
  int fd = -1;
  uint64_t off = 1;
  hsa_status_t e = hsa_amd_portable_export_dmabuf_v2((char*)p + 4096, 4096, &fd, &off,
                                                     HSA_RT_AMD_DMABUF_MAPPING_TYPE_NONE);
  status("export_dmabuf_v2 NONE", e);
  printf("  a descriptor: %d, offset %lu\n", fd >= 0, (unsigned long)off);
  status("close_dmabuf", hsa_amd_portable_close_dmabuf(fd));
  status("close_dmabuf again", hsa_amd_portable_close_dmabuf(fd));
  status("close_dmabuf -1", hsa_amd_portable_close_dmabuf(-1));
  fd = -1;
  e = hsa_amd_portable_export_dmabuf_v2(p, 4096, &fd, &off, HSA_RT_AMD_DMABUF_MAPPING_TYPE_PCIE);
  status("export_dmabuf_v2 PCIE", e);
  printf("  a descriptor: %d, offset %lu\n", fd >= 0, (unsigned long)off);
  if (fd >= 0) hsa_amd_portable_close_dmabuf(fd);
  status("export_dmabuf_v2 size 0", hsa_amd_portable_export_dmabuf_v2(p, 0, &fd, &off, 0));
  status("export_dmabuf_v2 past the end",
         hsa_amd_portable_export_dmabuf_v2(p, 2 << 20, &fd, &off, 0));
  status("export_dmabuf_v2 NULL dmabuf", hsa_amd_portable_export_dmabuf_v2(p, 4096, NULL, &off, 0));
  OK(hsa_amd_memory_pool_free(p));

  /* SPM */
  status("spm_acquire GPU", hsa_amd_spm_acquire(gpu));
  status("spm_acquire CPU", hsa_amd_spm_acquire(cpu));
  uint32_t timeout = 10, copied = 77;
  bool loss = true;
  static uint32_t samples[1024];
  e = hsa_amd_spm_set_dest_buffer(gpu, sizeof samples, &timeout, &copied, samples, &loss);
  status("spm_set_dest_buffer GPU", e);
  printf("  copied %u, data loss %d, timeout %u\n", copied, loss, timeout);
  status("spm_set_dest_buffer CPU",
         hsa_amd_spm_set_dest_buffer(cpu, sizeof samples, &timeout, &copied, samples, &loss));
  status("spm_release GPU", hsa_amd_spm_release(gpu));
  status("spm_release CPU", hsa_amd_spm_release(cpu));

  /* PC sampling */
  e = hsa_ven_amd_pcs_iterate_configuration(gpu, count_configuration, NULL);
  status("pcs_iterate_configuration GPU", e);
  printf("  configurations %d\n", configurations);
  status("pcs_iterate_configuration CPU",
         hsa_ven_amd_pcs_iterate_configuration(cpu, count_configuration, NULL));
  hsa_ven_amd_pcs_t pcs;
  status("pcs_create without a callback",
         hsa_ven_amd_pcs_create(gpu, HSA_VEN_AMD_PCS_METHOD_HOSTTRAP_V1,
                                HSA_VEN_AMD_PCS_INTERVAL_UNITS_MICRO_SECONDS, 1000, 1000, 1 << 20,
                                NULL, NULL, &pcs));
  status("pcs_create NULL handle",
         hsa_ven_amd_pcs_create(gpu, HSA_VEN_AMD_PCS_METHOD_HOSTTRAP_V1,
                                HSA_VEN_AMD_PCS_INTERVAL_UNITS_MICRO_SECONDS, 1000, 1000, 1 << 20,
                                data_ready, NULL, NULL));
  status("pcs_create CPU",
         hsa_ven_amd_pcs_create(cpu, HSA_VEN_AMD_PCS_METHOD_HOSTTRAP_V1,
                                HSA_VEN_AMD_PCS_INTERVAL_UNITS_MICRO_SECONDS, 1000, 1000, 1 << 20,
                                data_ready, NULL, &pcs));
  status("pcs_create host trap",
         hsa_ven_amd_pcs_create(gpu, HSA_VEN_AMD_PCS_METHOD_HOSTTRAP_V1,
                                HSA_VEN_AMD_PCS_INTERVAL_UNITS_MICRO_SECONDS, 1000, 1000, 1 << 20,
                                data_ready, NULL, &pcs));
  status("pcs_create stochastic",
         hsa_ven_amd_pcs_create(gpu, HSA_VEN_AMD_PCS_METHOD_STOCHASTIC_V1,
                                HSA_VEN_AMD_PCS_INTERVAL_UNITS_CLOCK_CYCLES, 1024, 1000, 1 << 20,
                                data_ready, NULL, &pcs));
  hsa_ven_amd_pcs_t none = {0x1234};
  status("pcs_start unknown", hsa_ven_amd_pcs_start(none));
  status("pcs_stop unknown", hsa_ven_amd_pcs_stop(none));
  status("pcs_flush unknown", hsa_ven_amd_pcs_flush(none));
  status("pcs_destroy unknown", hsa_ven_amd_pcs_destroy(none));

  /* _amdgpu_r_debug around an executable's life */
  size_t loader_size = sizeof loader;
  OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, loader_size, &loader));
  show_r_debug("after init", argv[1]);
  hsa_code_object_reader_t reader;
  FILE* f = fopen(argv[1], "rb");
  EXPECT(f != NULL);
  if (failures) return 1;
  OK(hsa_code_object_reader_create_from_file(fileno(f), &reader));
  hsa_executable_t exe, second;
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                               &exe));
  OK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  if (failures) return 1;
  show_r_debug("after load", argv[1]);
  OK(hsa_executable_freeze(exe, NULL));
  OK(loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(exe, first_delta, NULL));
  show_r_debug("after freeze", argv[1]);
  /* A second executable of the same code object: two entries, the second's l_addr its own. */
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                               &second));
  OK(hsa_executable_load_agent_code_object(second, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(second, NULL));
  show_r_debug("after a second freeze", argv[1]);
  OK(hsa_executable_destroy(exe));
  OK(loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(second, first_delta, NULL));
  show_r_debug("after the first destroy", argv[1]);
  OK(hsa_executable_destroy(second));
  show_r_debug("after destroy", argv[1]);
  OK(hsa_code_object_reader_destroy(reader));
  fclose(f);

  hsa_signal_destroy(s[0]);
  hsa_signal_destroy(s[1]);
  OK(hsa_queue_destroy(q));
  OK(hsa_shut_down());
  show_r_debug("after shut_down", argv[1]);
  return failures ? 1 : 0;
}
