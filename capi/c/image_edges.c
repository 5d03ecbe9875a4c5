/* The image extension at its edges, as an application written against hsa_ext_image.h and
 * ROCR would use it: import/export pitches below a region's row or slice (the header: the
 * tight value is used), a depth image's clear value of one component (the header: as many
 * elements as the channel order has access components) ending at an unreadable page, an sRGBA
 * clear (linear values converted to sRGB, HSA PRM 1.2 §7.1.4.1.2, as ROCR does), copies between
 * geometries (the header allows any pair of regions of the same size), and a 1DA image's
 * regions whose y is the layer (the header: 1DA is "addressed by width and index coordinate";
 * ROCR's blits read it as (x, layer)), and images running past their allocation. Values are checked in C; prints "image_edges: ok" and
 * exits 0 when every check holds. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/hsa_ext_image.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static hsa_amd_memory_pool_t fine;

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void* data) {
  uint32_t flags;
  bool alloc;
  (void)data;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && flags == HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED && !fine.handle) fine = p;
  return HSA_STATUS_SUCCESS;
}

static const hsa_ext_image_format_t rgba8 = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                             HSA_EXT_IMAGE_CHANNEL_ORDER_RGBA};

/* An image of d over fresh zeroed system memory; *mem gets the memory. */
static hsa_ext_image_t make(hsa_ext_image_descriptor_t d, uint8_t** mem) {
  hsa_ext_image_data_info_t info = {0, 0};
  hsa_ext_image_t img = {0};
  OK(hsa_ext_image_data_get_info(gpu, &d, HSA_ACCESS_PERMISSION_RW, &info));
  OK(hsa_amd_memory_pool_allocate(fine, info.size, 0, (void**)mem));
  memset(*mem, 0, info.size);
  OK(hsa_ext_image_create(gpu, &d, *mem, HSA_ACCESS_PERMISSION_RW, &img));
  return img;
}

static void drop(hsa_ext_image_t img, uint8_t* mem) {
  OK(hsa_ext_image_destroy(gpu, img));
  OK(hsa_amd_memory_pool_free(mem));
}

/* Import/export pitches below the region's row (or slice) are replaced by the tight value. */
static void small_pitches(void) {
  uint8_t* mem;
  /* 2DA, 8 x 3 texels of 4 bytes, 2 layers: rows 256 bytes apart, layers 768. */
  hsa_ext_image_descriptor_t d = {HSA_EXT_IMAGE_GEOMETRY_2DA, 8, 3, 0, 2, rgba8};
  hsa_ext_image_t img = make(d, &mem);
  uint8_t src[32 * 3 * 2], out[sizeof src];
  for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 5 + 1);
  hsa_ext_image_region_t whole = {{0, 0, 0}, {8, 3, 2}};
  OK(hsa_ext_image_import(gpu, src, 10, 1, img, &whole));
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 3; y++)
      EXPECT(!memcmp(mem + z * 768 + y * 256, src + (z * 3 + y) * 32, 32));
  memset(out, 0, sizeof out);
  OK(hsa_ext_image_export(gpu, img, out, 31, 95, &whole));
  EXPECT(!memcmp(out, src, sizeof out));
  drop(img, mem);
}

/* A 2DDEPTH image's clear value is one float; the runtime must not read past it. */
static void depth_clear(void) {
  uint8_t* mem;
  hsa_ext_image_format_t depth = {HSA_EXT_IMAGE_CHANNEL_TYPE_FLOAT,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_DEPTH};
  hsa_ext_image_descriptor_t d = {HSA_EXT_IMAGE_GEOMETRY_2DDEPTH, 4, 2, 0, 0, depth};
  hsa_ext_image_t img = make(d, &mem);
  long page = sysconf(_SC_PAGESIZE);
  uint8_t* pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(pages != MAP_FAILED);
  EXPECT(mprotect(pages + page, page, PROT_NONE) == 0);
  float* value = (float*)(pages + page - sizeof(float)); /* the page's last 4 bytes */
  *value = 0.75f;
  hsa_ext_image_region_t whole = {{0, 0, 0}, {4, 2, 1}};
  OK(hsa_ext_image_clear(gpu, img, value, &whole));
  float got[2] = {0, 0};
  memcpy(&got[0], mem + 3 * 4, 4);
  memcpy(&got[1], mem + 256 + 3 * 4, 4);
  EXPECT(got[0] == 0.75f && got[1] == 0.75f);
  munmap(pages, 2 * page);
  drop(img, mem);
}

/* sRGBA clear: R, G, B are linear and stored sRGB-encoded; A as unorm.
 * 0.5 -> 1.055 * 0.5^(1/2.4) - 0.055 = 0.735357 -> 187.52 -> 188; 0.002 -> 12.92 * 0.002 =
 * 0.02584 -> 6.59 -> 7; 1.0 -> 255; A 0.5 -> 127.5 -> 128 (ties to even). */
static void srgb_clear(void) {
  uint8_t* mem;
  hsa_ext_image_format_t srgba = {HSA_EXT_IMAGE_CHANNEL_TYPE_UNORM_INT8,
                                  HSA_EXT_IMAGE_CHANNEL_ORDER_SRGBA};
  hsa_ext_image_descriptor_t d = {HSA_EXT_IMAGE_GEOMETRY_2D, 2, 1, 0, 0, srgba};
  hsa_ext_image_t img = make(d, &mem);
  float color[4] = {0.5f, 0.002f, 1.0f, 0.5f};
  hsa_ext_image_region_t whole = {{0, 0, 0}, {2, 1, 1}};
  OK(hsa_ext_image_clear(gpu, img, color, &whole));
  const uint8_t want[8] = {188, 7, 255, 128, 188, 7, 255, 128};
  EXPECT(!memcmp(mem, want, 8));
  drop(img, mem);
}

/* Copies between geometries: a 2D block into a slice of a 3D image and a layer of a 2DA one,
 * a 1D image into a row of a 2D one, and a 1DA layer (region y) into a 1D image. */
static void mixed_copies(void) {
  uint8_t *m2, *m3, *ma, *m1, *m1a;
  hsa_ext_image_t i2 = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2D, 8, 4, 0, 0,
                                                         rgba8},
                            &m2);
  hsa_ext_image_t i3 = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_3D, 8, 4, 3, 0,
                                                         rgba8},
                            &m3);
  hsa_ext_image_t ia = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_2DA, 8, 4, 0, 3,
                                                         rgba8},
                            &ma);
  hsa_ext_image_t i1 = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_1D, 8, 0, 0, 0,
                                                         rgba8},
                            &m1);
  hsa_ext_image_t i1a = make((hsa_ext_image_descriptor_t){HSA_EXT_IMAGE_GEOMETRY_1DA, 8, 0, 0,
                                                          4, rgba8},
                             &m1a);
  for (int y = 0; y < 4; y++)
    for (int b = 0; b < 32; b++) m2[y * 256 + b] = (uint8_t)(y * 32 + b + 1);
  hsa_dim3_t zero = {0, 0, 0}, slice2 = {0, 0, 2}, block = {8, 4, 1};
  OK(hsa_ext_image_copy(gpu, i2, &zero, i3, &slice2, &block));
  OK(hsa_ext_image_copy(gpu, i2, &zero, ia, &slice2, &block));
  for (int y = 0; y < 4; y++) {
    EXPECT(!memcmp(m3 + 2 * 1024 + y * 256, m2 + y * 256, 32));
    EXPECT(!memcmp(ma + 2 * 1024 + y * 256, m2 + y * 256, 32));
  }
  EXPECT(m3[1024] == 0 && ma[1024] == 0); /* slice 1 untouched */
  /* 1D -> row 3 of the 2D image. */
  for (int b = 0; b < 32; b++) m1[b] = (uint8_t)(200 + b);
  hsa_dim3_t row3 = {0, 3, 0}, line = {8, 1, 1};
  OK(hsa_ext_image_copy(gpu, i1, &zero, i2, &row3, &line));
  EXPECT(!memcmp(m2 + 3 * 256, m1, 32));
  /* 1DA: import layers 1 and 2 (region y), then copy layer 2 to the 1D image. */
  uint8_t layers[64];
  for (int b = 0; b < 64; b++) layers[b] = (uint8_t)(b + 100);
  hsa_ext_image_region_t two_layers = {{0, 1, 0}, {8, 2, 1}};
  OK(hsa_ext_image_import(gpu, layers, 0, 0, i1a, &two_layers));
  EXPECT(!memcmp(m1a + 256, layers, 32) && !memcmp(m1a + 512, layers + 32, 32));
  EXPECT(m1a[0] == 0 && m1a[768] == 0);
  hsa_dim3_t layer2 = {0, 2, 0};
  OK(hsa_ext_image_copy(gpu, i1a, &layer2, i1, &zero, &line));
  EXPECT(!memcmp(m1, layers + 32, 32));
  /* The layer index must stay below the layer count; z has one slice. */
  hsa_ext_image_region_t past = {{0, 3, 0}, {8, 2, 1}};
  IS(hsa_ext_image_import(gpu, layers, 0, 0, i1a, &past), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  hsa_ext_image_region_t deep = {{0, 0, 1}, {8, 1, 1}};
  IS(hsa_ext_image_import(gpu, layers, 0, 0, i1a, &deep), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* A 3D block of 2 slices does not fit a 2D image. */
  hsa_dim3_t thick = {8, 4, 2};
  IS(hsa_ext_image_copy(gpu, i3, &zero, i2, &zero, &thick), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  drop(i2, m2);
  drop(i3, m3);
  drop(ia, ma);
  drop(i1, m1);
  drop(i1a, m1a);
}

/* An image whose texels would run past the runtime allocation its memory starts in is
 * refused (the host copies would write past it): a 16x4 RGBA8 image needs 3 * 256 + 64 = 832
 * bytes from its start; and hsa_amd_image_create's PITCH of 65536 texels makes 3 * 256 KiB
 * + 64 bytes. */
static void past_the_allocation(void) {
  uint8_t* mem;
  OK(hsa_amd_memory_pool_allocate(fine, 4096, 0, (void**)&mem));
  hsa_ext_image_descriptor_t d = {HSA_EXT_IMAGE_GEOMETRY_2D, 16, 4, 0, 0, rgba8};
  hsa_ext_image_t img, other;
  IS(hsa_ext_image_create(gpu, &d, mem + 4096 - 768, HSA_ACCESS_PERMISSION_RW, &img),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_ext_image_create(gpu, &d, mem + 4096 - 1024, HSA_ACCESS_PERMISSION_RW, &img));
  uint32_t chip = 0;
  OK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_CHIP_ID, &chip));
  hsa_amd_image_descriptor_t* layout = calloc(1, sizeof(*layout) + 8 * sizeof(uint32_t));
  layout->version = 1;
  layout->deviceID = 0x1002u << 16 | chip;
  memcpy(layout->data, (const void*)(uintptr_t)img.handle, 8 * sizeof(uint32_t));
  OK(hsa_amd_image_create(gpu, &d, layout, mem, HSA_ACCESS_PERMISSION_RW, &other));
  OK(hsa_ext_image_destroy(gpu, other));
  layout->data[4] |= 0xffffu << 13; /* PITCH - 1 = 65535 */
  IS(hsa_amd_image_create(gpu, &d, layout, mem, HSA_ACCESS_PERMISSION_RW, &other),
     HSA_STATUS_ERROR_INVALID_ARGUMENT);
  free(layout);
  OK(hsa_ext_image_destroy(gpu, img));
  OK(hsa_amd_memory_pool_free(mem));
}

int main(void) {
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_pool, NULL));
  small_pitches();
  depth_clear();
  srgb_clear();
  mixed_copies();
  past_the_allocation();
  OK(hsa_shut_down());
  if (failures) {
    fprintf(stderr, "image_edges: %d failures\n", failures);
    return 1;
  }
  printf("image_edges: ok\n");
  return 0;
}
