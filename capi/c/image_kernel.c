/* Kernels reading and writing images made by hsa_ext_image_create: the clang-built OpenCL
 * kernels of testdata/codeobjects/image.cl (ROCm device-libs, isa/image_ocl-gfx90a.hsaco) get
 * the handles as their image arguments, over memory laid out as hsa_ext_image_data_get_info
 * says (rows padded to 256 bytes), filled by hsa_ext_image_import and read back by
 * hsa_ext_image_export; every texel is compared with the host's value:
 * - copy_f: an 8x8 RGBA8 UNORM image into an RGBA16 HALF_FLOAT one, x / 255 as binary16;
 * - copy_ui_array: a 4x4, 4-layer 2DA RGBA8 UINT image into an RGBA16 UINT one, plus
 *   (1, 2, 3, 4).
 * With a second code object (c/image_queries.cl for gfx90a), also:
 * - queries: get_image_width of a 1DB and a 1DA image, the 1DA's array size, a 3D image's
 *   depth and height, the CL channel order and type (CL_R 0x10B0, CL_UNSIGNED_INT32 0x10DC),
 *   texel 3 of the 1DB and texel (1, layer 2) of the 1DA image;
 * - sampled: read_imagef of a 4x2 R32F image (texel x + 10 y) through samplers of
 *   hsa_ext_sampler_create in each addressing mode, normalized and not, nearest and linear.
 * Prints "image_kernel: ok" and exits 0 when every check holds.
 * Usage: image_kernel IMAGE_OCL_GFX90A_CODE_OBJECT [IMAGE_QUERIES_GFX90A_CODE_OBJECT] */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/hsa_ext_image.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static hsa_amd_memory_pool_t fine, kernarg_pool;
static hsa_executable_t exe, exe2;
static hsa_queue_t* queue;

static hsa_status_t pick_pools(hsa_amd_memory_pool_t p, void* data) {
  uint32_t flags;
  bool alloc;
  (void)data;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !kernarg_pool.handle)
    kernarg_pool = p;
  if (alloc && flags == HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED && !fine.handle) fine = p;
  return HSA_STATUS_SUCCESS;
}

/* An image of d over fresh zeroed system memory. */
static hsa_ext_image_t make(hsa_ext_image_descriptor_t d, hsa_access_permission_t perm,
                            uint8_t** mem) {
  hsa_ext_image_data_info_t info = {0, 0};
  hsa_ext_image_t img = {0};
  OK(hsa_ext_image_data_get_info(gpu, &d, perm, &info));
  OK(hsa_amd_memory_pool_allocate(fine, info.size, 0, (void**)mem));
  memset(*mem, 0, info.size);
  OK(hsa_ext_image_create(gpu, &d, *mem, perm, &img));
  return img;
}

/* Runs kernel NAME of X on 64 work-items (one group) with the N 8-byte arguments ARGS. */
static void run_args(hsa_executable_t x, const char* name, const uint64_t* args, int n) {
  hsa_executable_symbol_t sym;
  uint64_t object = 0;
  uint32_t ka_size = 0, group = 0, priv = 0;
  OK(hsa_executable_get_symbol_by_name(x, name, &gpu, &sym));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                    &ka_size));
  OK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group));
  OK(hsa_executable_symbol_get_info(
      sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &priv));
  uint8_t* ka;
  OK(hsa_amd_memory_pool_allocate(kernarg_pool, ka_size < 256 ? 256 : ka_size, 0, (void**)&ka));
  memset(ka, 0, 256);
  memcpy(ka, args, 8 * (size_t)n);
  /* Code object v5 hidden arguments after the explicit ones: block counts (1, 1, 1), group
   * sizes (64, 1, 1) as uint16_t, global offsets 0 (AMDGPUUsage "Code Object V5 Metadata"). */
  uint32_t blocks[3] = {1, 1, 1};
  uint16_t sizes[3] = {64, 1, 1};
  memcpy(ka + 8 * n, blocks, sizeof blocks);
  memcpy(ka + 8 * n + 12, sizes, sizeof sizes);
  hsa_signal_t done;
  OK(hsa_signal_create(1, 0, NULL, &done));
  uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)queue->base_address + (index & (queue->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = 64;
  p->workgroup_size_y = p->workgroup_size_z = 1;
  p->grid_size_x = 64;
  p->grid_size_y = p->grid_size_z = 1;
  p->kernel_object = object;
  p->kernarg_address = ka;
  p->group_segment_size = group;
  p->private_segment_size = priv;
  p->completion_signal = done;
  uint16_t header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE |
                    HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE;
  __atomic_store_n((uint32_t*)p, header | (1u << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  OK(hsa_signal_destroy(done));
  OK(hsa_amd_memory_pool_free(ka));
}

/* Kernel NAME of exe with the two image handles as arguments. */
static void run(const char* name, hsa_ext_image_t a, hsa_ext_image_t b) {
  uint64_t args[2] = {a.handle, b.handle};
  run_args(exe, name, args, 2);
}

static void queries(void) {
  uint8_t *mb, *ma, *mt;
  int32_t* out;
  hsa_ext_image_format_t r32 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT32,
                                HSA_EXT_IMAGE_CHANNEL_ORDER_R};
  hsa_ext_image_format_t rgba8 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_t b = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_1DB, 10, 0, 0, 0,
                                                        r32},
                           HSA_ACCESS_PERMISSION_RO, &mb);
  hsa_ext_image_t a = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_1DA, 7, 0, 0, 5,
                                                        r32},
                           HSA_ACCESS_PERMISSION_RO, &ma);
  hsa_ext_image_t t = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_3D, 4, 3, 6, 0,
                                                        rgba8},
                           HSA_ACCESS_PERMISSION_RO, &mt);
  uint32_t bv[10], av[35];
  for (int i = 0; i < 10; i++) bv[i] = 100 + (uint32_t)i;
  for (int i = 0; i < 35; i++) av[i] = 1000 + (uint32_t)i;
  hsa_ext_image_region_t rb = {{0, 0, 0}, {10, 1, 1}}, ra = {{0, 0, 0}, {7, 5, 1}};
  OK(hsa_ext_image_import(gpu, bv, 0, 0, b, &rb));
  OK(hsa_ext_image_import(gpu, av, 0, 0, a, &ra)); /* a 1DA region's y counts layers */
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&out));
  memset(out, 0xff, 64);
  uint64_t args[4] = {b.handle, a.handle, t.handle, (uint64_t)(uintptr_t)out};
  run_args(exe2, "queries.kd", args, 4);
  const int32_t want[9] = {10, 7, 5, 6, 0x10B0, 0x10DC, 103, 1000 + 2 * 7 + 1, 3};
  for (int i = 0; i < 9; i++) {
    if (out[i] != want[i]) fprintf(stderr, "queries %d: %d, want %d\n", i, out[i], want[i]);
    EXPECT(out[i] == want[i]);
  }
  OK(hsa_ext_image_destroy(gpu, b));
  OK(hsa_ext_image_destroy(gpu, a));
  OK(hsa_ext_image_destroy(gpu, t));
  OK(hsa_amd_memory_pool_free(mb));
  OK(hsa_amd_memory_pool_free(ma));
  OK(hsa_amd_memory_pool_free(mt));
  OK(hsa_amd_memory_pool_free(out));
}

/* read_imagef of IMG at (x0, y0) and (x1, y1) through a sampler of modes (CM, FM, AM): w0, w1. */
static void sample(hsa_ext_image_t img, int cm, int fm, int am, float x0, float y0, float x1,
                   float y1, float w0, float w1) {
  hsa_ext_sampler_descriptor_t sd = {(hsa_ext_sampler_coordinate_mode32_t)cm,
                                     (hsa_ext_sampler_filter_mode32_t)fm,
                                     (hsa_ext_sampler_addressing_mode32_t)am};
  hsa_ext_sampler_t smp;
  OK(hsa_ext_sampler_create(gpu, &sd, &smp));
  float *c, *out;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&c));
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&out));
  c[0] = x0;
  c[1] = y0;
  c[2] = x1;
  c[3] = y1;
  uint64_t args[4] = {img.handle, smp.handle, (uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)out};
  run_args(exe2, "sampled.kd", args, 4);
  if (out[0] != w0 || out[1] != w1)
    fprintf(stderr, "sampler (%d, %d, %d): %g %g, want %g %g\n", cm, fm, am, (double)out[0],
            (double)out[1], (double)w0, (double)w1);
  EXPECT(out[0] == w0 && out[1] == w1);
  OK(hsa_ext_sampler_destroy(gpu, smp));
  OK(hsa_amd_memory_pool_free(c));
  OK(hsa_amd_memory_pool_free(out));
}

static void samplers(void) {
  uint8_t* m;
  hsa_ext_image_format_t r32f = {HSA_EXT_IMAGE_CHANNEL_TYPE_FLOAT, HSA_EXT_IMAGE_CHANNEL_ORDER_R};
  hsa_ext_image_t img = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2D, 4, 2, 0, 0,
                                                          r32f},
                             HSA_ACCESS_PERMISSION_RO, &m);
  float v[8];
  for (int i = 0; i < 8; i++) v[i] = (float)(i % 4 + 10 * (i / 4));
  hsa_ext_image_region_t r = {{0, 0, 0}, {4, 2, 1}};
  OK(hsa_ext_image_import(gpu, v, 0, 0, img, &r));
  enum { UNNORM, NORM };
  enum { NEAREST, LINEAR };
  enum { UNDEF, EDGE, BORDER, REPEAT, MIRROR };
  /* Unnormalized, clamp to edge: (-3, 1.5) -> texel (0, 1); (1.5, 0.5) -> (1, 0) (read as
   * normalized it would be (6, 1) -> (3, 1), 13). */
  sample(img, UNNORM, NEAREST, EDGE, -3.0f, 1.5f, 1.5f, 0.5f, 10, 1);
  /* Repeat: u = 1.3 * 4 = 5.2 -> 5 mod 4 = 1, v = 1.5 -> 1; u = -0.8 -> -1 -> 3. */
  sample(img, NORM, NEAREST, REPEAT, 1.3f, 0.75f, -0.2f, 0.25f, 11, 3);
  /* Linear: (2, 1) - 0.5 mixes texels 1, 2 of rows 0, 1 equally: 6.5; (0.5, 0.5) - 0.5 is
   * texel (0, 0) alone. */
  sample(img, NORM, LINEAR, EDGE, 0.5f, 0.5f, 0.125f, 0.25f, 6.5f, 0);
  /* Clamp to border: transparent black outside. */
  sample(img, UNNORM, NEAREST, BORDER, -1.0f, 0.0f, 3.5f, 2.5f, 0, 0);
  /* Mirrored repeat: u = 4.4 -> 4 -> 3; u = -0.4 -> -1 -> 0, v = 1.5 -> 1. */
  sample(img, NORM, NEAREST, MIRROR, 1.1f, 0.25f, -0.1f, 0.75f, 3, 10);
  OK(hsa_ext_image_destroy(gpu, img));
  OK(hsa_amd_memory_pool_free(m));
}

static void copy_f(void) {
  uint8_t *ms, *md;
  hsa_ext_image_format_t rgba8 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_format_t rgba16f = {HSA_EXT_IMAGE_CHANNEL_TYPE_HALF_FLOAT,
                                    HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_t src = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2D, 8, 8, 0, 0,
                                                          rgba8},
                             HSA_ACCESS_PERMISSION_RO, &ms);
  hsa_ext_image_t dst = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2D, 8, 8, 0, 0,
                                                          rgba16f},
                             HSA_ACCESS_PERMISSION_WO, &md);
  uint8_t texels[8 * 8 * 4];
  for (int i = 0; i < 256; i++) texels[i] = (uint8_t)(i * 37 + 11);
  hsa_ext_image_region_t whole = {{0, 0, 0}, {8, 8, 1}};
  OK(hsa_ext_image_import(gpu, texels, 0, 0, src, &whole));
  run("copy_f.kd", src, dst);
  _Float16 out[8 * 8 * 4];
  memset(out, 0, sizeof out);
  OK(hsa_ext_image_export(gpu, dst, out, 0, 0, &whole));
  int bad = 0;
  for (int i = 0; i < 256; i++) {
    _Float16 want = (_Float16)((double)texels[i] / 255.0);
    if (memcmp(&out[i], &want, 2) != 0 && bad++ < 4)
      fprintf(stderr, "copy_f component %d: %g, want %g\n", i, (double)out[i], (double)want);
  }
  EXPECT(bad == 0);
  OK(hsa_ext_image_destroy(gpu, src));
  OK(hsa_ext_image_destroy(gpu, dst));
  OK(hsa_amd_memory_pool_free(ms));
  OK(hsa_amd_memory_pool_free(md));
}

static void copy_ui_array(void) {
  uint8_t *ms, *md;
  hsa_ext_image_format_t u8 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT8,
                               HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_format_t u16 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNSIGNED_INT16,
                                HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};
  hsa_ext_image_t src = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2DA, 4, 4, 0, 4,
                                                          u8},
                             HSA_ACCESS_PERMISSION_RO, &ms);
  hsa_ext_image_t dst = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2DA, 4, 4, 0, 4,
                                                          u16},
                             HSA_ACCESS_PERMISSION_WO, &md);
  uint8_t texels[4 * 4 * 4 * 4];
  for (int i = 0; i < 256; i++) texels[i] = (uint8_t)(i * 13 + 5);
  hsa_ext_image_region_t whole = {{0, 0, 0}, {4, 4, 4}};
  OK(hsa_ext_image_import(gpu, texels, 0, 0, src, &whole));
  run("copy_ui_array.kd", src, dst);
  uint16_t out[256];
  memset(out, 0, sizeof out);
  OK(hsa_ext_image_export(gpu, dst, out, 0, 0, &whole));
  int bad = 0;
  for (int i = 0; i < 256; i++) {
    uint16_t want = (uint16_t)(texels[i] + 1 + i % 4);
    if (out[i] != want && bad++ < 4)
      fprintf(stderr, "copy_ui_array component %d: %u, want %u\n", i, out[i], want);
  }
  EXPECT(bad == 0);
  OK(hsa_ext_image_destroy(gpu, src));
  OK(hsa_ext_image_destroy(gpu, dst));
  OK(hsa_amd_memory_pool_free(ms));
  OK(hsa_amd_memory_pool_free(md));
}

/* Loads the code object at PATH for the GPU into a frozen executable *X; 0 if unreadable. */
static int load(const char* path, hsa_executable_t* x) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot read %s\n", path);
    return 0;
  }
  fseek(f, 0, SEEK_END);
  size_t size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void* bytes = malloc(size);
  if (fread(bytes, 1, size, f) != size) size = 0;
  fclose(f);
  hsa_code_object_reader_t reader;
  OK(hsa_code_object_reader_create_from_memory(bytes, size, &reader));
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                               x));
  OK(hsa_executable_load_agent_code_object(*x, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(*x, NULL));
  OK(hsa_code_object_reader_destroy(reader));
  free(bytes);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: image_kernel IMAGE_OCL_GFX90A_CODE_OBJECT [IMAGE_QUERIES]\n");
    return 2;
  }
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_pools, NULL));
  if (!load(argv[1], &exe) || (argc > 2 && !load(argv[2], &exe2))) return 2;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX,
                      &queue));
  copy_f();
  copy_ui_array();
  if (argc > 2) {
    queries();
    samplers();
    OK(hsa_executable_destroy(exe2));
  }
  OK(hsa_queue_destroy(queue));
  OK(hsa_executable_destroy(exe));
  OK(hsa_shut_down());
  if (failures) {
    fprintf(stderr, "image_kernel: %d failures\n", failures);
    return 1;
  }
  printf("image_kernel: ok\n");
  return 0;
}
