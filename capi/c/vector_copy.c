/* vector_copy in C over hsa.h: the canonical HSA flow (as platform-linux/src/demo.rs does it in
 * Rust), linked against hsa-rt's libhsa-runtime64.
 *
 * init -> find the GPU agent -> kernarg and fine-grained pools of the CPU agent -> queue ->
 * code object reader from file -> executable -> kernel object and kernarg size -> buffers ->
 * dispatch packet -> doorbell -> wait on the completion signal -> verify.
 *
 * On the emulated device, the kernel's host implementation is registered through
 * hsa_rt_ext.h (argv[2] == "register"); without registration the device must run the code
 * object itself.
 *
 * The same program also runs on Debian's ROCR (libhsa-runtime64 of ROCm 5.2) under kfd-emu:
 * there hsa_rt_ext.h's function does not exist (a weak reference, NULL), so only
 * "noregister" runs, and every buffer the kernel reads (kernarg included) is made accessible
 * to the GPU with hsa_amd_agents_allow_access, as ROCR requires for pool allocations.
 *
 * Usage: vector_copy CODE_OBJECT [register|noregister]
 * Prints what it found, then "vector_copy: verified 65536 elements", and exits 0 on success.
 *
 * Build and run on hsa-rt, from the repository's root (Debian 12: apt install gcc
 * libhsa-runtime-dev, for <hsa/hsa.h> in /usr/include/hsa):
 *
 *   cargo build --release -p hsa-capi
 *   ln -sf libhsa_runtime64.so target/release/libhsa-runtime64.so.1
 *   ln -sf libhsa_runtime64.so target/release/libhsa-runtime64.so
 *   gcc -std=gnu11 -Wall -Icapi/include capi/c/vector_copy.c -Ltarget/release -lhsa-runtime64 -o target/vector_copy_c
 *   LD_LIBRARY_PATH=target/release HSA_RT_DEVICE=emulated target/vector_copy_c testdata/codeobjects/kernels-gfx90a-v5.hsaco
 *
 * cargo names the library libhsa_runtime64.so (soname libhsa-runtime64.so.1): the first link
 * is the name the program loads, the second the one -lhsa-runtime64 finds. HSA_RT_DEVICE
 * picks the emulated gfx90a even where /dev/kfd exists (the code object is gfx90a's; on a
 * GPU, pass the one for its ISA and leave it unset). capi/tests/examples.rs runs these
 * lines (the cargo build replaced by the test's own build of the library).
 *
 * The same program on Debian's ROCR under kfd-emu: see kfd-emu/src/main.rs. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsa_rt_ext.h"

/* Absent from other runtimes (Debian's ROCR): then NULL. */
#pragma weak hsa_rt_emulated_register_kernel

#define N (1u << 16)
#define WG 256u

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

static hsa_status_t find_gpu(hsa_agent_t agent, void* data) {
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU) {
    *(hsa_agent_t*)data = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_cpu(hsa_agent_t agent, void* data) {
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_CPU) {
    *(hsa_agent_t*)data = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

struct pools {
  hsa_amd_memory_pool_t kernarg;
  hsa_amd_memory_pool_t fine;
  int have_kernarg, have_fine;
};

static hsa_status_t find_pools(hsa_amd_memory_pool_t pool, void* data) {
  struct pools* p = data;
  hsa_amd_segment_t segment;
  uint32_t flags;
  bool alloc;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
                                     &alloc));
  if (!alloc) return HSA_STATUS_SUCCESS;
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

/* out[i] = in[i] for this work-group's work-items (the OpenCL C source of vector_copy). */
static hsa_status_t host_vector_copy(const hsa_rt_dispatch_t* d, void* user) {
  int* calls = user;
  const int* in;
  int* out;
  memcpy(&in, (const char*)d->kernarg_address, sizeof in);
  memcpy(&out, (const char*)d->kernarg_address + 8, sizeof out);
  uint32_t first = d->workgroup_id[0] * d->workgroup_size[0];
  for (uint32_t i = first; i < first + d->workgroup_size[0] && i < d->grid_size[0]; i++)
    out[i] = in[i];
  __atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
  return HSA_STATUS_SUCCESS;
}

/* The queue stopped with an error (e.g. no host implementation and no interpreter). */
static void queue_error(hsa_status_t status, hsa_queue_t* queue, void* data) {
  const char* m = "?";
  (void)data;
  hsa_status_string(status, &m);
  fprintf(stderr, "vector_copy: queue %llu error 0x%x: %s\n", (unsigned long long)queue->id,
          (unsigned)status, m);
  exit(3);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CODE_OBJECT [register|noregister]\n", argv[0]);
    return 2;
  }
  int do_register = argc < 3 || strcmp(argv[2], "register") == 0;
  static int calls;

  CHECK(hsa_init());
  hsa_agent_t gpu = {0}, cpu = {0};
  CHECK(hsa_iterate_agents(find_gpu, &gpu) == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS
                                                                     : HSA_STATUS_ERROR);
  CHECK(hsa_iterate_agents(find_cpu, &cpu) == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS
                                                                     : HSA_STATUS_ERROR);
  char name[64];
  CHECK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, name));
  printf("vector_copy: GPU agent %s\n", name);

  struct pools pools = {0};
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pools, &pools));
  if (!pools.have_kernarg || !pools.have_fine) {
    fprintf(stderr, "no kernarg or fine-grained pool on the CPU agent\n");
    return 1;
  }

  uint32_t queue_max;
  CHECK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &queue_max));
  hsa_queue_t* queue;
  CHECK(hsa_queue_create(gpu, 1024 < queue_max ? 1024 : queue_max, HSA_QUEUE_TYPE_MULTI,
                         queue_error, NULL, UINT32_MAX, UINT32_MAX, &queue));

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
  uint32_t invalid = 1;
  CHECK(hsa_executable_validate(exe, &invalid));
  if (invalid) {
    fprintf(stderr, "executable does not validate\n");
    return 1;
  }
  hsa_executable_symbol_t sym;
  CHECK(hsa_executable_get_symbol_by_name(exe, "vector_copy.kd", &gpu, &sym));
  uint64_t kernel_object;
  uint32_t kernarg_size, group_size, private_size;
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group_size));
  CHECK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &private_size));
  printf("vector_copy: kernel object 0x%llx, kernarg %u bytes\n",
         (unsigned long long)kernel_object, kernarg_size);
  /* The host implementation, for the kernel object the executable loaded (an address that
   * cannot be a kernel descriptor's is refused). */
  if (do_register && hsa_rt_emulated_register_kernel == NULL) {
    fprintf(stderr, "this runtime has no hsa_rt_emulated_register_kernel: use noregister\n");
    return 2;
  }
  if (do_register) {
    if (hsa_rt_emulated_register_kernel(kernel_object + 8, host_vector_copy, &calls) !=
        HSA_STATUS_ERROR_INVALID_ARGUMENT) {
      fprintf(stderr, "a misaligned kernel object was registered\n");
      return 1;
    }
    CHECK(hsa_rt_emulated_register_kernel(kernel_object, host_vector_copy, &calls));
  }

  int *in, *out;
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&out));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, in));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, out));
  for (uint32_t i = 0; i < N; i++) {
    in[i] = (int)(i * 7u - 3u);
    out[i] = 0;
  }
  void* kernarg;
  uint32_t ka_bytes = kernarg_size > 16 ? kernarg_size : 16;
  CHECK(hsa_amd_memory_pool_allocate(pools.kernarg, ka_bytes, 0, &kernarg));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, kernarg));
  memset(kernarg, 0, ka_bytes);
  memcpy(kernarg, &in, 8);
  memcpy((char*)kernarg + 8, &out, 8);

  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  /* Where things are (kfd-emu's comparison of runtimes names allocations by them). */
  printf("vector_copy: ring %p, kernarg %p, in %p, out %p, signal 0x%llx\n",
         queue->base_address, kernarg, (void*)in, (void*)out,
         (unsigned long long)done.handle);

  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  while (index - hsa_queue_load_read_index_scacquire(queue) >= queue->size) {
  }
  hsa_kernel_dispatch_packet_t* packet =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)packet + 4, 0, sizeof *packet - 4);
  packet->workgroup_size_x = WG;
  packet->workgroup_size_y = 1;
  packet->workgroup_size_z = 1;
  packet->grid_size_x = N;
  packet->grid_size_y = 1;
  packet->grid_size_z = 1;
  packet->private_segment_size = private_size;
  packet->group_segment_size = group_size;
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

  hsa_signal_value_t v;
  int waits = 0;
  while ((v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 1000000000ull,
                                        HSA_WAIT_STATE_BLOCKED)) >= 1) {
    if (++waits > 60) {
      fprintf(stderr, "timed out waiting for the dispatch (signal %lld)\n", (long long)v);
      return 1;
    }
  }
  for (uint32_t i = 0; i < N; i++) {
    if (out[i] != in[i]) {
      fprintf(stderr, "element %u is %d, expected %d\n", i, out[i], in[i]);
      return 1;
    }
  }
  /* With HSA_RT_EMULATION=host the registered host implementation runs every work-group;
   * by default the emulated device interprets the kernel's machine code instead. */
  const char* emulation = getenv("HSA_RT_EMULATION");
  int host_mode = emulation != NULL && strcmp(emulation, "host") == 0;
  if (do_register && host_mode && calls != (int)(N / WG)) {
    fprintf(stderr, "host kernel ran %d work-groups, expected %u\n", calls, N / WG);
    return 1;
  }
  printf("vector_copy: verified %u elements\n", N);

  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(kernarg));
  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(in));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  close(fd);
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  return 0;
}
