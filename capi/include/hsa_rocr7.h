/* The ROCR 7 additions to hsa_ext_amd.h and hsa_ext_image.h that libhsa-runtime64 built from
 * hsa-rt exports (HIP 7.2.4 imports them), for C programs built against older (ROCR 5.2)
 * headers. Types, values and signatures are those of ROCR 7.2.4's headers; when those headers
 * are installed, include them instead (this file then declares nothing twice: it is guarded by
 * the version macro ROCR 7's hsa_ext_amd.h defines). */
#ifndef HSA_RT_ROCR7_H
#define HSA_RT_ROCR7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/hsa_ext_image.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(HSA_AMD_INTERFACE_VERSION_MINOR) || HSA_AMD_INTERFACE_VERSION_MINOR < 15

/* Agent attributes (hsa_amd_agent_info_t). */
#define HSA_RT_AMD_AGENT_INFO_MEMORY_AVAIL 0xA015        /* uint64_t, bytes */
#define HSA_RT_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY 0xA016 /* uint64_t, Hz */
#define HSA_RT_AMD_AGENT_INFO_ASIC_FAMILY_ID 0xA107      /* uint32_t */
#define HSA_RT_AMD_AGENT_INFO_NUM_SDMA_ENG 0xA10A        /* uint32_t */
#define HSA_RT_AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG 0xA10B   /* uint32_t */
#define HSA_RT_AMD_AGENT_INFO_NEAREST_CPU 0xA113         /* hsa_agent_t */
#define HSA_RT_AMD_AGENT_INFO_CLOCK_COUNTERS 0xA118      /* hsa_rt_amd_clock_counters_t */
/* System attributes (hsa_system_info_t). */
#define HSA_RT_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED 0x205 /* bool */
/* hsa_amd_memory_pool_allocate flags. */
#define HSA_RT_AMD_MEMORY_POOL_CONTIGUOUS_FLAG (1 << 1)
#define HSA_RT_AMD_MEMORY_POOL_EXECUTABLE_FLAG (1 << 2)
/* hsa_amd_vmem_address_reserve flags. */
#define HSA_RT_AMD_VMEM_ADDRESS_NO_REGISTER 1ull
/* hsa_amd_log_flag_t bit positions in the uint8_t[8] flag set. */
#define HSA_RT_AMD_LOG_FLAG_AQL 0
#define HSA_RT_AMD_LOG_FLAG_SDMA 1
#define HSA_RT_AMD_LOG_FLAG_INFO 2

typedef struct hsa_rt_amd_clock_counters_s {
  uint64_t gpu_clock_counter;
  uint64_t cpu_clock_counter;
  uint64_t system_clock_counter;
  uint64_t system_clock_frequency;
} hsa_rt_amd_clock_counters_t;

/* hsa_amd_sdma_engine_id_t: bit n is SDMA engine n. */
typedef uint32_t hsa_rt_amd_sdma_engine_id_t;

typedef struct hsa_amd_vmem_alloc_handle_s {
  uint64_t handle;
} hsa_amd_vmem_alloc_handle_t;

typedef enum {
  MEMORY_TYPE_NONE,
  MEMORY_TYPE_PINNED,
} hsa_amd_memory_type_t;

typedef struct hsa_amd_memory_access_desc_s {
  hsa_access_permission_t permissions;
  hsa_agent_t agent_handle;
} hsa_amd_memory_access_desc_t;

typedef struct hsa_amd_ais_file_handle_s {
  union {
    void* handle;
    int fd;
    uint8_t pad[8];
  };
} hsa_amd_ais_file_handle_t;

typedef struct hsa_ext_sampler_descriptor_v2_s {
  hsa_ext_sampler_coordinate_mode32_t coordinate_mode;
  hsa_ext_sampler_filter_mode32_t filter_mode;
  hsa_ext_sampler_addressing_mode32_t address_modes[3]; /* x, y, z */
} hsa_ext_sampler_descriptor_v2_t;

hsa_status_t HSA_API hsa_amd_memory_async_copy_on_engine(
    void* dst, hsa_agent_t dst_agent, const void* src, hsa_agent_t src_agent, size_t size,
    uint32_t num_dep_signals, const hsa_signal_t* dep_signals, hsa_signal_t completion_signal,
    hsa_rt_amd_sdma_engine_id_t engine_id, bool force_copy_on_sdma);
hsa_status_t HSA_API hsa_amd_memory_copy_engine_status(hsa_agent_t dst_agent,
                                                       hsa_agent_t src_agent,
                                                       uint32_t* engine_ids_mask);
hsa_status_t HSA_API hsa_amd_memory_get_preferred_copy_engine(hsa_agent_t dst_agent,
                                                              hsa_agent_t src_agent,
                                                              uint32_t* recommended_ids_mask);
hsa_status_t HSA_API hsa_amd_portable_export_dmabuf(const void* ptr, size_t size, int* dmabuf,
                                                    uint64_t* offset);
hsa_status_t HSA_API hsa_amd_vmem_address_reserve(void** va, size_t size, uint64_t address,
                                                  uint64_t flags);
hsa_status_t HSA_API hsa_amd_vmem_address_reserve_align(void** va, size_t size,
                                                        uint64_t address, uint64_t alignment,
                                                        uint64_t flags);
hsa_status_t HSA_API hsa_amd_vmem_address_free(void* va, size_t size);
hsa_status_t HSA_API hsa_amd_vmem_handle_create(hsa_amd_memory_pool_t pool, size_t size,
                                                hsa_amd_memory_type_t type, uint64_t flags,
                                                hsa_amd_vmem_alloc_handle_t* memory_handle);
hsa_status_t HSA_API hsa_amd_vmem_handle_release(hsa_amd_vmem_alloc_handle_t memory_handle);
hsa_status_t HSA_API hsa_amd_vmem_map(void* va, size_t size, size_t in_offset,
                                      hsa_amd_vmem_alloc_handle_t memory_handle,
                                      uint64_t flags);
hsa_status_t HSA_API hsa_amd_vmem_unmap(void* va, size_t size);
hsa_status_t HSA_API hsa_amd_vmem_set_access(void* va, size_t size,
                                             const hsa_amd_memory_access_desc_t* desc,
                                             size_t desc_cnt);
hsa_status_t HSA_API hsa_amd_vmem_get_access(void* va, hsa_access_permission_t* perms,
                                             hsa_agent_t agent_handle);
hsa_status_t HSA_API hsa_amd_vmem_export_shareable_handle(int* dmabuf_fd,
                                                          hsa_amd_vmem_alloc_handle_t handle,
                                                          uint64_t flags);
hsa_status_t HSA_API hsa_amd_vmem_import_shareable_handle(int dmabuf_fd,
                                                          hsa_amd_vmem_alloc_handle_t* handle);
hsa_status_t HSA_API hsa_amd_vmem_retain_alloc_handle(hsa_amd_vmem_alloc_handle_t* memory_handle,
                                                      void* addr);
hsa_status_t HSA_API hsa_amd_vmem_get_alloc_properties_from_handle(
    hsa_amd_vmem_alloc_handle_t memory_handle, hsa_amd_memory_pool_t* pool,
    hsa_amd_memory_type_t* type);
hsa_status_t HSA_API hsa_amd_agent_set_async_scratch_limit(hsa_agent_t agent, size_t threshold);
hsa_status_t HSA_API hsa_amd_ais_file_write(hsa_amd_ais_file_handle_t handle, void* devicePtr,
                                            uint64_t size, int64_t file_offset,
                                            uint64_t* size_copied, int32_t* status);
hsa_status_t HSA_API hsa_amd_ais_file_read(hsa_amd_ais_file_handle_t handle, void* devicePtr,
                                           uint64_t size, int64_t file_offset,
                                           uint64_t* size_copied, int32_t* status);
hsa_status_t HSA_API hsa_amd_enable_logging(uint8_t* flags, void* file);
hsa_status_t HSA_API hsa_ext_sampler_create_v2(
    hsa_agent_t agent, const hsa_ext_sampler_descriptor_v2_t* sampler_descriptor,
    hsa_ext_sampler_t* sampler);

/* hsa_amd_queue_get_info attributes (hsa_queue_info_attribute_t). */
typedef enum {
  HSA_AMD_QUEUE_INFO_AGENT,       /* hsa_agent_t */
  HSA_AMD_QUEUE_INFO_DOORBELL_ID, /* uint64_t */
} hsa_queue_info_attribute_t;
/* hsa_amd_portable_export_dmabuf_v2 flags (hsa_amd_dma_buf_mapping_type_t). */
#define HSA_RT_AMD_DMABUF_MAPPING_TYPE_NONE 0ull
#define HSA_RT_AMD_DMABUF_MAPPING_TYPE_PCIE 1ull

hsa_status_t HSA_API hsa_amd_queue_get_info(hsa_queue_t* queue,
                                            hsa_queue_info_attribute_t attribute, void* value);
uint32_t HSA_API hsa_amd_signal_wait_all(uint32_t signal_count, hsa_signal_t* signals,
                                         hsa_signal_condition_t* conds,
                                         hsa_signal_value_t* values, uint64_t timeout_hint,
                                         hsa_wait_state_t wait_hint,
                                         hsa_signal_value_t* satisfying_values);
hsa_status_t HSA_API hsa_amd_portable_export_dmabuf_v2(const void* ptr, size_t size,
                                                       int* dmabuf, uint64_t* offset,
                                                       uint64_t flags);
hsa_status_t HSA_API hsa_amd_portable_close_dmabuf(int dmabuf);
hsa_status_t HSA_API hsa_amd_spm_acquire(hsa_agent_t preferred_agent);
hsa_status_t HSA_API hsa_amd_spm_release(hsa_agent_t preferred_agent);
hsa_status_t HSA_API hsa_amd_spm_set_dest_buffer(hsa_agent_t preferred_agent,
                                                 size_t size_in_bytes, uint32_t* timeout,
                                                 uint32_t* size_copied, void* dest,
                                                 bool* is_data_loss);

#endif

/* PC sampling (hsa_ven_amd_pc_sampling.h of ROCR 7), unless that header was included. */
#ifndef HSA_VEN_AMD_PC_SAMPLING_H
typedef enum {
  HSA_VEN_AMD_PCS_METHOD_HOSTTRAP_V1,
  HSA_VEN_AMD_PCS_METHOD_STOCHASTIC_V1
} hsa_ven_amd_pcs_method_kind_t;
typedef enum {
  HSA_VEN_AMD_PCS_INTERVAL_UNITS_MICRO_SECONDS,
  HSA_VEN_AMD_PCS_INTERVAL_UNITS_CLOCK_CYCLES,
  HSA_VEN_AMD_PCS_INTERVAL_UNITS_INSTRUCTIONS
} hsa_ven_amd_pcs_units_t;
typedef hsa_status_t (*hsa_ven_amd_pcs_data_copy_callback_t)(void* hsa_callback_data,
                                                             size_t data_size, void* destination);
typedef void (*hsa_ven_amd_pcs_data_ready_callback_t)(
    void* client_callback_data, size_t data_size, size_t lost_sample_count,
    hsa_ven_amd_pcs_data_copy_callback_t data_copy_callback, void* hsa_callback_data);
typedef struct {
  uint64_t handle;
} hsa_ven_amd_pcs_t;
typedef struct {
  hsa_ven_amd_pcs_method_kind_t method;
  hsa_ven_amd_pcs_units_t units;
  size_t min_interval;
  size_t max_interval;
  uint64_t flags;
} hsa_ven_amd_pcs_configuration_t;
typedef hsa_status_t (*hsa_ven_amd_pcs_iterate_configuration_callback_t)(
    const hsa_ven_amd_pcs_configuration_t* configuration, void* callback_data);
hsa_status_t hsa_ven_amd_pcs_iterate_configuration(
    hsa_agent_t agent, hsa_ven_amd_pcs_iterate_configuration_callback_t configuration_callback,
    void* callback_data);
hsa_status_t hsa_ven_amd_pcs_create(hsa_agent_t agent, hsa_ven_amd_pcs_method_kind_t method,
                                    hsa_ven_amd_pcs_units_t units, size_t interval, size_t latency,
                                    size_t buffer_size,
                                    hsa_ven_amd_pcs_data_ready_callback_t data_ready_callback,
                                    void* client_callback_data, hsa_ven_amd_pcs_t* pc_sampling);
hsa_status_t hsa_ven_amd_pcs_create_from_id(
    uint32_t pcs_id, hsa_agent_t agent, hsa_ven_amd_pcs_method_kind_t method,
    hsa_ven_amd_pcs_units_t units, size_t interval, size_t latency, size_t buffer_size,
    hsa_ven_amd_pcs_data_ready_callback_t data_ready_callback, void* client_callback_data,
    hsa_ven_amd_pcs_t* pc_sampling);
hsa_status_t hsa_ven_amd_pcs_destroy(hsa_ven_amd_pcs_t pc_sampling);
hsa_status_t hsa_ven_amd_pcs_start(hsa_ven_amd_pcs_t pc_sampling);
hsa_status_t hsa_ven_amd_pcs_stop(hsa_ven_amd_pcs_t pc_sampling);
hsa_status_t hsa_ven_amd_pcs_flush(hsa_ven_amd_pcs_t pc_sampling);
#endif

#ifdef __cplusplus
}
#endif

#endif
