/* Soak of the C ABI: THREADS threads each run ROUNDS rounds of creating and destroying what an
 * application makes and unmakes all the time — a queue, signals (an interrupt completion
 * signal and a signal group), an executable loaded from a code object, buffers from the
 * fine-grained system pool and the GPU's VRAM pool, a kernarg buffer — while dispatching
 * vector_copy over them and checking every element on the host (the VRAM input is filled and
 * the output read back with hsa_amd_memory_async_copy, the copy engine). After one warm-up
 * round on the main thread the program notes its resident set (/proc/self/statm) and the bytes
 * of the emulated device's buffer objects (its memfds, "/memfd:hsa-emulated-bo", found through
 * /proc/self/fd); after the threads end both must be back: the device's bytes exactly, the
 * resident set within RSS_SLACK_KIB (the C library's allocator keeps freed pages for reuse).
 * Prints "soak: ok ..." with the figures and exits 0 when every check holds.
 * Usage: soak KERNELS_CODE_OBJECT THREADS ROUNDS */
#include <dirent.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* Elements each dispatch copies. */
#define ELEMENTS 4096
/* How far the resident set may end above its level after the warm-up round, KiB. */
#define RSS_SLACK_KIB (24 * 1024)

static hsa_amd_memory_pool_t fine, vram;
static void* code;
static size_t code_size;
static atomic_int thread_failures;

static hsa_status_t pick_fine(hsa_amd_memory_pool_t p, void* data) {
  (void)data;
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !fine.handle) fine = p;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t pick_vram(hsa_amd_memory_pool_t p, void* data) {
  (void)data;
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !vram.handle) vram = p;
  return HSA_STATUS_SUCCESS;
}

/* Resident set, KiB. */
static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Bytes of the emulated device's buffer objects: its memfds. */
static long long device_bytes(void) {
  long long total = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  struct dirent* e;
  while ((e = readdir(d))) {
    char link[300], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    struct stat st;
    if (!strncmp(target, "/memfd:hsa-emulated-bo", 22) && !stat(link, &st)) total += st.st_size;
  }
  closedir(d);
  return total;
}

static int wait_zero(hsa_signal_t s) {
  return hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, 10ull * 1000000000ull,
                                   HSA_WAIT_STATE_BLOCKED) == 0;
}

/* One round: everything made, used, checked and unmade. `seed` varies the data. */
static int round_once(unsigned seed) {
  int before = failures;
  hsa_queue_t* q = NULL;
  OK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
  hsa_signal_t done, copied, spare;
  OK(hsa_signal_create(1, 0, NULL, &done));
  OK(hsa_signal_create(1, 0, NULL, &copied));
  OK(hsa_signal_create(0, 1, &cpu, &spare));
  hsa_signal_group_t group;
  hsa_signal_t members[2] = {done, spare};
  OK(hsa_signal_group_create(2, members, 1, &cpu, &group));

  hsa_code_object_reader_t reader;
  hsa_executable_t e;
  OK(hsa_code_object_reader_create_from_memory(code, code_size, &reader));
  OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR, NULL, &e));
  OK(hsa_executable_load_agent_code_object(e, gpu, reader, NULL, NULL));
  OK(hsa_executable_freeze(e, NULL));
  hsa_executable_symbol_t sym;
  uint64_t kernel_object = 0;
  OK(hsa_executable_get_symbol_by_name(e, "vector_copy.kd", &gpu, &sym));
  OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object));

  size_t bytes = ELEMENTS * sizeof(int);
  int *host_in = NULL, *host_out = NULL, *dev_in = NULL, *dev_out = NULL;
  void* kernarg = NULL;
  OK(hsa_amd_memory_pool_allocate(fine, bytes, 0, (void**)&host_in));
  OK(hsa_amd_memory_pool_allocate(fine, bytes, 0, (void**)&host_out));
  OK(hsa_amd_memory_pool_allocate(vram, bytes, 0, (void**)&dev_in));
  OK(hsa_amd_memory_pool_allocate(vram, bytes, 0, (void**)&dev_out));
  OK(hsa_amd_memory_pool_allocate(fine, 64, 0, &kernarg));
  hsa_agent_t both[2] = {cpu, gpu};
  OK(hsa_amd_agents_allow_access(2, both, NULL, host_in));
  OK(hsa_amd_agents_allow_access(2, both, NULL, host_out));
  if (failures != before) return 1;
  for (int i = 0; i < ELEMENTS; i++) host_in[i] = (int)(seed * 2654435761u) ^ i;
  memset(host_out, 0, bytes);

  /* host_in -> dev_in (copy engine), vector_copy dev_in -> dev_out, dev_out -> host_out. */
  OK(hsa_amd_memory_async_copy(dev_in, gpu, host_in, cpu, bytes, 0, NULL, copied));
  EXPECT(wait_zero(copied));
  void* args[2] = {dev_in, dev_out};
  memcpy(kernarg, args, sizeof args);
  uint64_t index = hsa_queue_add_write_index_screlease(q, 1);
  hsa_kernel_dispatch_packet_t* p =
      (hsa_kernel_dispatch_packet_t*)q->base_address + (index & (q->size - 1));
  memset((char*)p + 4, 0, sizeof *p - 4);
  p->workgroup_size_x = 256;
  p->workgroup_size_y = p->workgroup_size_z = 1;
  p->grid_size_x = ELEMENTS;
  p->grid_size_y = p->grid_size_z = 1;
  p->kernel_object = kernel_object;
  p->kernarg_address = kernarg;
  p->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint16_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  __atomic_store_n((uint32_t*)p, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)index);
  hsa_signal_condition_t conds[2] = {HSA_SIGNAL_CONDITION_EQ, HSA_SIGNAL_CONDITION_NE};
  hsa_signal_value_t vals[2] = {0, 0};
  hsa_signal_t fired;
  hsa_signal_value_t value;
  OK(hsa_signal_group_wait_any_scacquire(group, conds, vals, HSA_WAIT_STATE_BLOCKED, &fired,
                                         &value));
  EXPECT(fired.handle == done.handle && value == 0);
  hsa_signal_store_relaxed(copied, 1);
  OK(hsa_amd_memory_async_copy(host_out, cpu, dev_out, gpu, bytes, 0, NULL, copied));
  EXPECT(wait_zero(copied));
  for (int i = 0; i < ELEMENTS; i++)
    if (host_out[i] != host_in[i]) {
      EXPECT(host_out[i] == host_in[i]);
      break;
    }

  OK(hsa_amd_memory_pool_free(host_in));
  OK(hsa_amd_memory_pool_free(host_out));
  OK(hsa_amd_memory_pool_free(dev_in));
  OK(hsa_amd_memory_pool_free(dev_out));
  OK(hsa_amd_memory_pool_free(kernarg));
  OK(hsa_executable_destroy(e));
  OK(hsa_code_object_reader_destroy(reader));
  OK(hsa_signal_group_destroy(group));
  OK(hsa_signal_destroy(done));
  OK(hsa_signal_destroy(copied));
  OK(hsa_signal_destroy(spare));
  OK(hsa_queue_destroy(q));
  return failures != before;
}

static int rounds;

static void* worker(void* arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  for (int r = 0; r < rounds; r++)
    if (round_once(id * 100003u + (unsigned)r)) {
      atomic_fetch_add(&thread_failures, 1);
      break;
    }
  return NULL;
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

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: soak KERNELS_CODE_OBJECT THREADS ROUNDS\n");
    return 2;
  }
  code = read_file(argv[1], &code_size);
  int threads = atoi(argv[2]);
  rounds = atoi(argv[3]);
  if (!code || !code_size || threads < 1 || threads > 64 || rounds < 1) {
    fprintf(stderr, "soak: bad arguments\n");
    return 2;
  }
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_fine, NULL));
  OK(hsa_amd_agent_iterate_memory_pools(gpu, pick_vram, NULL));
  EXPECT(gpu.handle && fine.handle && vram.handle);
  if (failures) return 1;

  /* Warm-up: the runtime's lazily made parts (the copy engine's queue, the monitor, pools'
     first chunks) exist from here on. */
  EXPECT(round_once(7) == 0);
  long rss0 = rss_kib();
  long long dev0 = device_bytes();

  pthread_t t[64];
  for (int i = 0; i < threads; i++)
    EXPECT(pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i) == 0);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  EXPECT(atomic_load(&thread_failures) == 0);

  long rss1 = rss_kib();
  long long dev1 = device_bytes();
  EXPECT(dev0 > 0 && dev1 == dev0);
  EXPECT(rss0 > 0 && rss1 <= rss0 + RSS_SLACK_KIB);
  OK(hsa_shut_down());
  free(code);
  if (failures) {
    fprintf(stderr, "soak: %d checks failed (rss %ld -> %ld KiB, device %lld -> %lld bytes)\n",
            failures, rss0, rss1, dev0, dev1);
    return 1;
  }
  printf("soak: ok: %d threads x %d rounds; rss %ld -> %ld KiB; device buffer objects %lld -> "
         "%lld bytes\n",
         threads, rounds, rss0, rss1, dev0, dev1);
  return 0;
}
