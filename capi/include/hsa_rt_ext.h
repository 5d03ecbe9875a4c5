/* hsa-rt's extension to the HSA runtime API (libhsa-runtime64 built from hsa-rt).
 *
 * Host implementations of kernels on the emulated device: with no AMD GPU driver, hsa-rt
 * runs an emulated GPU whose dispatches call a host function once per work-group. */
#ifndef HSA_RT_EXT_H
#define HSA_RT_EXT_H

#include <stdint.h>
#include <hsa/hsa.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One work-group of a dispatch. Sizes in work-items; addresses are device addresses, which on
 * the emulated device are also host addresses. 80 bytes. */
typedef struct hsa_rt_dispatch_s {
  uint32_t dimensions;          /* grid dimensions, 1..3 */
  uint32_t grid_size[3];        /* grid size x/y/z */
  uint16_t workgroup_size[3];   /* work-group size x/y/z */
  uint16_t reserved0;
  uint32_t workgroup_count[3];  /* work-groups per dimension */
  uint32_t workgroup_id[3];     /* this work-group's id x/y/z */
  uint32_t group_segment_size;  /* LDS bytes of the dispatch */
  uint32_t private_segment_size;/* private bytes per work-item */
  uint64_t kernel_object;       /* kernel descriptor address */
  void* kernarg_address;        /* kernarg segment */
  void* group_segment;          /* this work-group's LDS, zeroed, valid during the call */
} hsa_rt_dispatch_t;

/* Called once per work-group, on the queue's processor thread. Returning anything but
 * HSA_STATUS_SUCCESS stops the queue with that status (the queue's error callback sees it). */
typedef hsa_status_t (*hsa_rt_host_kernel_fn)(const hsa_rt_dispatch_t* dispatch, void* user);

/* Registers fn (with user) as the kernel whose kernel object is kernel_object on the emulated
 * device, replacing an earlier registration for it. The kernel object is the device address
 * of the kernel's descriptor: HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT of its symbol, what a
 * dispatch packet's kernel_object holds; so register after loading the code object (the
 * device knows kernels by address, not by name).
 * Returns HSA_STATUS_ERROR_NOT_INITIALIZED before hsa_init, HSA_STATUS_ERROR_INVALID_ARGUMENT
 * for a NULL fn or a kernel object that is 0 or not 64-byte aligned,
 * HSA_STATUS_ERROR_INVALID_AGENT when the runtime is not on the emulated device (a real GPU
 * runs the code object itself). */
hsa_status_t hsa_rt_emulated_register_kernel(uint64_t kernel_object, hsa_rt_host_kernel_fn fn,
                                             void* user);

#ifdef __cplusplus
}
#endif

#endif
