/* Firmware written in C over hsa-rt's bare-metal build (libhsa_runtime64.a, built with
 * `--no-default-features --features baremetal`), on a simulated machine.
 *
 * The "machine" is ordinary memory: a system-memory carve-out identity-mapped for the GPU, a
 * doorbell BAR, a soc15 IH ring with its write-pointer write-back and read-pointer register.
 * The "GPU" is a thread playing the command processor: it polls the doorbells of the queues
 * map_queue gave it, consumes their AQL packets (barrier-AND; a kernel dispatch of the one
 * kernel object it knows, vector_copy, run as C), decrements completion signals, and reports
 * each completion of an interrupt signal as the CP does: the event id into the signal's
 * mailbox, a CP end-of-pipe entry (client 0x14, source 181, src_data[0] = event id) into the
 * IH ring, the write pointer advanced, then the ISR entry point hsa_rt_baremetal_interrupt.
 * Waiters sleep in the host's wait_for_interrupt (a condition variable standing in for
 * "sti; hlt") until the ISR path wakes them.
 *
 * It checks: hsa_init before registration and bad host structs fail with the documented
 * status and log line (registration: the field and value; hsa_init: what the platform
 * refuses); the agents the host described (gfx90a GPU); a code object loads for
 * the GPU; map_queue sees the queue's ring, doorbell and MQD; a barrier-AND and the
 * vector_copy dispatch complete through interrupts; unmap_queue on destroy; nothing reaches
 * the runtime after the last hsa_shut_down.
 *
 * Usage: baremetal_firmware CODE_OBJECT (kernels-gfx90a-v5.hsaco).
 * Prints "baremetal_firmware: ok ..." and exits 0 on success. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa_rt_ext.h"

#define FAIL(...)                                                  \
  do {                                                             \
    fprintf(stderr, "baremetal_firmware:%d: ", __LINE__);          \
    fprintf(stderr, __VA_ARGS__);                                  \
    fprintf(stderr, "\n");                                         \
    exit(1);                                                       \
  } while (0)

#define CHECK(call)                                                \
  do {                                                             \
    hsa_status_t s_ = (call);                                      \
    if (s_ != HSA_STATUS_SUCCESS) FAIL("%s: 0x%x", #call, (unsigned)s_); \
  } while (0)

#define EXPECT_STATUS(call, want)                                  \
  do {                                                             \
    hsa_status_t s_ = (call);                                      \
    if (s_ != (want)) FAIL("%s: 0x%x, expected 0x%x", #call, (unsigned)s_, (unsigned)(want)); \
  } while (0)

#define SYSTEM_BYTES (64u << 20)
#define DOORBELL_BAR_BYTES 4096u
#define FIRST_DOORBELL 8u
#define DOORBELL_COUNT 8u
#define IH_BYTES 4096u
#define IH_RPTR_OFFSET 0x10u
#define MAX_HQDS 4
#define N 4096u

/* ---- the machine ---- */

static uint8_t* system_memory;
static _Atomic uint64_t* doorbell_bar;
static _Atomic uint32_t* ih_ring;
static _Atomic uint64_t* ih_wptr_writeback;
static _Atomic uint32_t* ih_registers;

/* HQDs: what map_queue loaded; the device holds hqd_lock over a whole pass, so unmap_queue
 * returning means the device no longer touches the ring. */
static pthread_mutex_t hqd_lock = PTHREAD_MUTEX_INITIALIZER;
static hsa_rt_baremetal_queue_mapping_t hqds[MAX_HQDS];
static int hqd_used[MAX_HQDS];
static int map_calls, unmap_calls;
static hsa_rt_baremetal_queue_mapping_t last_mapped;

/* "Interrupts masked" is this mutex; "hlt" is waiting on the condition variable. */
static pthread_mutex_t irq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t irq_cv;
static _Atomic uint64_t sleeps, wakes, interrupts, events_signaled;

static _Atomic int device_stop;
static _Atomic uint64_t vector_copy_object;
static _Atomic uint64_t packets_done;

static char last_log[512];

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---- the host callbacks ---- */

static hsa_status_t host_map_queue(void* context, const hsa_rt_baremetal_queue_mapping_t* m) {
  (void)context;
  pthread_mutex_lock(&hqd_lock);
  int slot = -1;
  for (int i = 0; i < MAX_HQDS; i++) {
    if (!hqd_used[i]) {
      slot = i;
      break;
    }
  }
  if (slot >= 0) {
    hqds[slot] = *m;
    hqd_used[slot] = 1;
    map_calls++;
    last_mapped = *m;
  }
  pthread_mutex_unlock(&hqd_lock);
  return slot >= 0 ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_OUT_OF_RESOURCES;
}

static hsa_status_t host_unmap_queue(void* context, const hsa_rt_baremetal_queue_mapping_t* m) {
  (void)context;
  hsa_status_t status = HSA_STATUS_ERROR_INVALID_QUEUE;
  pthread_mutex_lock(&hqd_lock);
  for (int i = 0; i < MAX_HQDS; i++) {
    if (hqd_used[i] && hqds[i].doorbell == m->doorbell) {
      hqd_used[i] = 0;
      unmap_calls++;
      status = HSA_STATUS_SUCCESS;
    }
  }
  pthread_mutex_unlock(&hqd_lock);
  return status;
}

static void host_wait_for_interrupt(void* context, uint64_t deadline_ticks,
                                    bool (*still_waiting)(void*), void* waiter) {
  (void)context;
  pthread_mutex_lock(&irq_lock);
  if (still_waiting(waiter)) {
    sleeps++;
    struct timespec t;
    t.tv_sec = (time_t)(deadline_ticks / 1000000000ull);
    t.tv_nsec = (long)(deadline_ticks % 1000000000ull);
    /* A deadline far away (u64::MAX) is capped: a spurious return is allowed. */
    uint64_t cap = now_ns() + 100000000ull;
    if (deadline_ticks > cap) {
      t.tv_sec = (time_t)(cap / 1000000000ull);
      t.tv_nsec = (long)(cap % 1000000000ull);
    }
    pthread_cond_timedwait(&irq_cv, &irq_lock, &t);
  }
  pthread_mutex_unlock(&irq_lock);
}

static void host_wake_waiters(void* context) {
  (void)context;
  pthread_mutex_lock(&irq_lock);
  wakes++;
  pthread_cond_broadcast(&irq_cv);
  pthread_mutex_unlock(&irq_lock);
}

static uint64_t host_timestamp_ticks(void* context) {
  (void)context;
  return now_ns();
}

static void host_log(void* context, const char* line) {
  (void)context;
  snprintf(last_log, sizeof last_log, "%s", line);
}

/* ---- the GPU: a command processor over the mapped queues ---- */

static void ih_push_end_of_pipe(uint32_t event_id) {
  uint32_t wptr = (uint32_t)(atomic_load(ih_wptr_writeback) & ~1ull);
  uint32_t dw[8] = {0x14u | (181u << 8), 0, 0, 0, event_id, 0, 0, 0};
  for (int i = 0; i < 8; i++) atomic_store_explicit(&ih_ring[wptr / 4 + i], dw[i], memory_order_relaxed);
  wptr = (wptr + 32) & (IH_BYTES - 1);
  /* Release: the entry before the write pointer. */
  atomic_store_explicit(ih_wptr_writeback, wptr, memory_order_release);
}

static void complete(uint64_t signal) {
  if (signal == 0) return;
  _Atomic int64_t* value = (_Atomic int64_t*)(uintptr_t)(signal + 8);
  uint64_t mailbox = *(volatile uint64_t*)(uintptr_t)(signal + 16);
  uint32_t event_id = *(volatile uint32_t*)(uintptr_t)(signal + 24);
  atomic_fetch_sub_explicit(value, 1, memory_order_release);
  if (mailbox != 0) {
    atomic_store_explicit((_Atomic uint64_t*)(uintptr_t)mailbox, event_id, memory_order_release);
    ih_push_end_of_pipe(event_id);
    interrupts++;
    events_signaled += hsa_rt_baremetal_interrupt();
  }
}

/* vector_copy: out[i] = in[i] for i < grid_size_x (kernarg: in, out). */
static void run_vector_copy(const uint8_t* packet) {
  uint32_t grid;
  uint64_t kernarg;
  memcpy(&grid, packet + 12, 4);
  memcpy(&kernarg, packet + 40, 8);
  const int* in;
  int* out;
  memcpy(&in, (const void*)(uintptr_t)kernarg, 8);
  memcpy(&out, (const void*)(uintptr_t)(kernarg + 8), 8);
  for (uint32_t i = 0; i < grid; i++) out[i] = in[i];
}

static int process(const hsa_rt_baremetal_queue_mapping_t* m) {
  uint64_t doorbell = atomic_load_explicit(&doorbell_bar[m->doorbell], memory_order_acquire);
  _Atomic uint64_t* read_index = (_Atomic uint64_t*)(uintptr_t)m->read_pointer;
  uint64_t size = m->ring_size_bytes / 64;
  int done = 0;
  for (;;) {
    uint64_t r = atomic_load_explicit(read_index, memory_order_relaxed);
    if (doorbell == UINT64_MAX || r > doorbell) return done;
    uint8_t* packet = (uint8_t*)(uintptr_t)(m->ring + (r % size) * 64);
    _Atomic uint16_t* header = (_Atomic uint16_t*)packet;
    uint16_t h = atomic_load_explicit(header, memory_order_acquire);
    uint16_t type = h & 0xff;
    if (type == HSA_PACKET_TYPE_INVALID) return done;
    uint64_t completion;
    memcpy(&completion, packet + 56, 8);
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      uint64_t object;
      memcpy(&object, packet + 32, 8);
      if (object != atomic_load(&vector_copy_object)) FAIL("unknown kernel object 0x%llx", (unsigned long long)object);
      run_vector_copy(packet);
    } else if (type != HSA_PACKET_TYPE_BARRIER_AND) {
      FAIL("packet type %u", type);
    }
    atomic_store_explicit(header, HSA_PACKET_TYPE_INVALID, memory_order_release);
    atomic_store_explicit(read_index, r + 1, memory_order_release);
    complete(completion);
    packets_done++;
    done++;
  }
}

static void* device_thread(void* arg) {
  (void)arg;
  while (!atomic_load(&device_stop)) {
    int done = 0;
    pthread_mutex_lock(&hqd_lock);
    for (int i = 0; i < MAX_HQDS; i++)
      if (hqd_used[i]) done += process(&hqds[i]);
    pthread_mutex_unlock(&hqd_lock);
    if (!done) {
      struct timespec t = {0, 50000};
      nanosleep(&t, NULL);
    }
  }
  return NULL;
}

/* ---- the firmware ---- */

static hsa_rt_baremetal_carve_out_t carve_outs[1];
static hsa_rt_baremetal_node_t nodes[2];

static void describe(hsa_rt_baremetal_host_t* h) {
  memset(h, 0, sizeof *h);
  h->version = HSA_RT_BAREMETAL_HOST_VERSION;
  carve_outs[0] = (hsa_rt_baremetal_carve_out_t){
      .node = 0,
      .kind = HSA_RT_BAREMETAL_SYSTEM_MEMORY,
      .phys_base = 0x100000000ull,
      .virt_base = (uint64_t)(uintptr_t)system_memory,
      .gpu_va = (uint64_t)(uintptr_t)system_memory,
      .size_bytes = SYSTEM_BYTES,
  };
  h->carve_outs = carve_outs;
  h->carve_out_count = 1;
  memset(nodes, 0, sizeof nodes);
  nodes[0].node_id = 0;
  nodes[0].cpu_cores_count = 4;
  strcpy(nodes[0].name, "Firmware CPU");
  nodes[1].node_id = 1;
  nodes[1].gpu_id = 0x1234;
  strcpy(nodes[1].name, "gfx90a");
  strcpy(nodes[1].marketing_name, "Simulated MI210");
  nodes[1].simd_count = 8;
  nodes[1].simd_per_cu = 4;
  nodes[1].max_waves_per_simd = 8;
  nodes[1].lds_size_in_kb = 64;
  nodes[1].wave_front_size = 64;
  nodes[1].array_count = 1;
  nodes[1].simd_arrays_per_engine = 1;
  nodes[1].cu_per_simd_array = 2;
  nodes[1].gfx_target_version = 90010;
  nodes[1].vendor_id = 0x1002;
  nodes[1].device_id = 0x740f;
  nodes[1].num_cp_queues = 8;
  nodes[1].num_xcc = 1;
  h->nodes = nodes;
  h->node_count = 2;
  h->doorbells = (hsa_rt_baremetal_doorbells_t){
      .virt_base = (uint64_t)(uintptr_t)doorbell_bar,
      .size_bytes = DOORBELL_BAR_BYTES,
      .first = FIRST_DOORBELL,
      .count = DOORBELL_COUNT,
  };
  /* Version 2: the queues run under VMID 8 with amdkfd's apertures (sh_mem_bases 0), and the
   * MEC takes exactly the granted doorbells ((index * 2) << 2 in both registers). */
  h->queue_vmid = 8;
  h->mec_doorbell_range_lower = (FIRST_DOORBELL * 2u) << 2;
  h->mec_doorbell_range_upper = ((FIRST_DOORBELL + DOORBELL_COUNT - 1u) * 2u) << 2;
  h->ih_ring = (hsa_rt_baremetal_ih_ring_t){
      .ring_virt_base = (uint64_t)(uintptr_t)ih_ring,
      .ring_size_bytes = IH_BYTES,
      .wptr_virt = (uint64_t)(uintptr_t)ih_wptr_writeback,
      .rptr_block_virt_base = (uint64_t)(uintptr_t)ih_registers,
      .rptr_block_size_bytes = 256,
      .rptr_offset_bytes = IH_RPTR_OFFSET,
  };
  h->timestamp_frequency_hz = 1000000000ull;
  h->map_queue = host_map_queue;
  h->unmap_queue = host_unmap_queue;
  h->wait_for_interrupt = host_wait_for_interrupt;
  h->wake_waiters = host_wake_waiters;
  h->timestamp_ticks = host_timestamp_ticks;
  h->log = host_log;
}

/* hsa_rt_baremetal_init refuses `h` with INVALID_ARGUMENT and logs `message` (through the host
 * registered before, whose log callback is this file's). */
static void expect_refused(const hsa_rt_baremetal_host_t* h, const char* message) {
  last_log[0] = 0;
  EXPECT_STATUS(hsa_rt_baremetal_init(h), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  if (!strstr(last_log, message)) FAIL("log line \"%s\", expected \"%s\"", last_log, message);
}

static hsa_status_t find_agent(hsa_agent_t agent, void* data) {
  hsa_agent_t* out = data;
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  out[type == HSA_DEVICE_TYPE_GPU ? 1 : 0] = agent;
  return HSA_STATUS_SUCCESS;
}

struct pools {
  hsa_amd_memory_pool_t kernarg, fine;
  int have_kernarg, have_fine;
};

static hsa_status_t find_pools(hsa_amd_memory_pool_t pool, void* data) {
  struct pools* p = data;
  uint32_t flags = 0;
  hsa_amd_segment_t segment;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
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

static void submit(hsa_queue_t* queue, const void* body, uint16_t header, uint16_t setup) {
  uint64_t index = hsa_queue_add_write_index_screlease(queue, 1);
  uint8_t* slot = (uint8_t*)queue->base_address + (index & (queue->size - 1)) * 64;
  memcpy(slot + 4, (const uint8_t*)body + 4, 60);
  __atomic_store_n((uint32_t*)slot, header | ((uint32_t)setup << 16), __ATOMIC_RELEASE);
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
}

static void wait_zero(hsa_signal_t s, const char* what) {
  for (int tries = 0; tries < 30; tries++) {
    if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, 1000000000ull,
                                  HSA_WAIT_STATE_BLOCKED) == 0)
      return;
  }
  FAIL("timed out waiting for %s", what);
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) FAIL("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* bytes = malloc((size_t)n);
  if (fread(bytes, 1, (size_t)n, f) != (size_t)n) FAIL("cannot read %s", path);
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CODE_OBJECT\n", argv[0]);
    return 2;
  }
  system_memory = aligned_alloc(1u << 21, SYSTEM_BYTES);
  doorbell_bar = aligned_alloc(4096, DOORBELL_BAR_BYTES);
  ih_ring = aligned_alloc(4096, IH_BYTES);
  ih_wptr_writeback = aligned_alloc(64, 64);
  ih_registers = aligned_alloc(256, 256);
  memset(system_memory, 0, SYSTEM_BYTES);
  memset((void*)doorbell_bar, 0, DOORBELL_BAR_BYTES);
  memset((void*)ih_ring, 0, IH_BYTES);
  memset((void*)ih_wptr_writeback, 0, 64);
  memset((void*)ih_registers, 0, 256);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&irq_cv, &attr);

  /* Before any host is registered. */
  EXPECT_STATUS(hsa_init(), HSA_STATUS_ERROR_INVALID_RUNTIME_STATE);
  EXPECT_STATUS(hsa_rt_baremetal_init(NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  hsa_rt_baremetal_host_t host;
  describe(&host);
  host.version = 3;
  EXPECT_STATUS(hsa_rt_baremetal_init(&host), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* A version-1 host (the struct without the GPU-context fields) is still taken. */
  describe(&host);
  host.version = 1;
  CHECK(hsa_rt_baremetal_init(&host));
  describe(&host);
  host.map_queue = NULL;
  EXPECT_STATUS(hsa_rt_baremetal_init(&host), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* The log callback of the struct being refused is not registered; register a good host
   * first, then a bad one, to see the message. */
  describe(&host);
  CHECK(hsa_rt_baremetal_init(&host));
  carve_outs[0].kind = 7;
  expect_refused(&host, "host carve_outs[0].kind 7 is not SYSTEM_MEMORY 0, HOST_VISIBLE_VRAM 1 "
                        "or PRIVATE_VRAM 2");
  describe(&host);
  host.carve_outs = NULL;
  expect_refused(&host, "host carve_outs is NULL with a count of 1");
  describe(&host);
  carve_outs[0].kind = HSA_RT_BAREMETAL_PRIVATE_VRAM;
  expect_refused(&host, "host carve_outs[0] is PRIVATE_VRAM but clear_device_memory is NULL");
  describe(&host);
  memset(nodes[1].name, 'x', sizeof nodes[1].name);
  expect_refused(&host, "host nodes[1].name is not NUL-terminated within 64 bytes");
  describe(&host);
  host.timestamp_frequency_hz = 0;
  expect_refused(&host, "host timestamp_frequency_hz is 0");
  describe(&host);
  host.queue_vmid = 16;
  expect_refused(&host, "host queue_vmid 16 is past 15");
  describe(&host);
  host.mec_doorbell_range_lower = host.mec_doorbell_range_upper + 8;
  expect_refused(&host, "host mec_doorbell_range_lower");
  /* What only the platform checks fails hsa_init: more doorbells than the aperture holds. */
  describe(&host);
  host.doorbells.count = DOORBELL_BAR_BYTES / 8;
  CHECK(hsa_rt_baremetal_init(&host));
  EXPECT_STATUS(hsa_init(), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  if (!strstr(last_log, "hsa-rt: hsa_init: ") || !strstr(last_log, "doorbell"))
    FAIL("log line: %s", last_log);
  /* ... and a grant the MEC's doorbell range does not hold (the last doorbell left out). */
  describe(&host);
  host.mec_doorbell_range_upper -= 8;
  CHECK(hsa_rt_baremetal_init(&host));
  EXPECT_STATUS(hsa_init(), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  if (!strstr(last_log, "leave the MEC's doorbell range")) FAIL("log line: %s", last_log);
  describe(&host);
  CHECK(hsa_rt_baremetal_init(&host));

  pthread_t device;
  pthread_create(&device, NULL, device_thread, NULL);

  CHECK(hsa_init());
  EXPECT_STATUS(hsa_rt_baremetal_init(&host), HSA_STATUS_ERROR_INVALID_RUNTIME_STATE);
  hsa_agent_t agents[2] = {{0}, {0}};
  CHECK(hsa_iterate_agents(find_agent, agents));
  hsa_agent_t cpu = agents[0], gpu = agents[1];
  char name[64];
  CHECK(hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, name));
  if (strcmp(name, "gfx90a") != 0) FAIL("GPU agent name %s", name);
  char product[64];
  CHECK(hsa_agent_get_info(gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_PRODUCT_NAME, product));
  if (strcmp(product, "Simulated MI210") != 0) FAIL("GPU product name %s", product);

  struct pools pools = {0};
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pools, &pools));
  if (!pools.have_kernarg || !pools.have_fine) FAIL("no kernarg or fine-grained pool");

  size_t co_size;
  void* co = read_file(argv[1], &co_size);
  hsa_code_object_reader_t reader;
  CHECK(hsa_code_object_reader_create_from_memory(co, co_size, &reader));
  hsa_executable_t exe;
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                  NULL, &exe));
  CHECK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  hsa_executable_symbol_t sym;
  CHECK(hsa_executable_get_symbol_by_name(exe, "vector_copy.kd", &gpu, &sym));
  uint64_t kernel_object;
  CHECK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  uint64_t sys = (uint64_t)(uintptr_t)system_memory;
  if (kernel_object < sys || kernel_object >= sys + SYSTEM_BYTES)
    FAIL("kernel object 0x%llx outside the system carve-out", (unsigned long long)kernel_object);
  atomic_store(&vector_copy_object, kernel_object);

  hsa_queue_t* queue;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                         &queue));
  pthread_mutex_lock(&hqd_lock);
  hsa_rt_baremetal_queue_mapping_t m = last_mapped;
  int mapped = map_calls;
  pthread_mutex_unlock(&hqd_lock);
  if (mapped != 1) FAIL("map_queue called %d times", mapped);
  if (m.node != 1 || m.ring != (uint64_t)(uintptr_t)queue->base_address ||
      m.ring_size_bytes != 64 * 64 || m.doorbell < FIRST_DOORBELL ||
      m.doorbell >= FIRST_DOORBELL + DOORBELL_COUNT ||
      m.amd_queue != (uint64_t)(uintptr_t)queue || m.read_pointer != m.amd_queue + 128 ||
      m.write_pointer != m.amd_queue + 56)
    FAIL("mapping: node %u doorbell %u ring 0x%llx size %llu amd_queue 0x%llx", m.node,
         m.doorbell, (unsigned long long)m.ring, (unsigned long long)m.ring_size_bytes,
         (unsigned long long)m.amd_queue);
  /* The MQD names the ring (>> 8) and enables the doorbell at its dword offset (with
   * DOORBELL_BIF_DROP, bit 1, as amdkfd sets it for AQL queues). */
  if (m.mqd.cp_hqd_pq_base_lo != (uint32_t)(m.ring >> 8) ||
      m.mqd.cp_hqd_pq_doorbell_control != ((m.doorbell * 2u) << 2 | 2u | (1u << 30)))
    FAIL("mqd: pq_base_lo 0x%x doorbell_control 0x%x", m.mqd.cp_hqd_pq_base_lo,
         m.mqd.cp_hqd_pq_doorbell_control);
  /* The whole struct v9_mqd is in memory at mqd_address (mqd_virt for the CPU): its header,
   * its own address in cp_mqd_base_addr (dwords 128-129), the same register images
   * (cp_hqd_pq_base_lo at dword 136, cp_hqd_pq_control 145, doorbell control 143). */
  const uint32_t* image = (const uint32_t*)(uintptr_t)m.mqd_virt;
  if (m.mqd_address == 0 || m.mqd_address % 256 != 0 || image == NULL ||
      image[0] != 0xC0310800u || image[128] != (uint32_t)m.mqd_address ||
      image[129] != (uint32_t)(m.mqd_address >> 32) ||
      image[136] != m.mqd.cp_hqd_pq_base_lo || image[143] != m.mqd.cp_hqd_pq_doorbell_control ||
      image[145] != m.mqd.cp_hqd_pq_control || ((image[145] >> 25) & 3) != 2 ||
      image[131] != 8)
    FAIL("mqd image at 0x%llx: header 0x%x base 0x%x:%x pq_control 0x%x",
         (unsigned long long)m.mqd_address, image ? image[0] : 0, image ? image[129] : 0,
         image ? image[128] : 0, image ? image[145] : 0);
  /* The queue runs under the host's VMID (cp_hqd_vmid, dword 131: checked above), and its
   * amd_queue_t names the apertures of SH_MEM_BASES 0x00010002 (group_segment_aperture_base_hi
   * at byte 64, private_segment_aperture_base_hi at 68: bits 63:32 of 1 << 48 and 2 << 48). */
  const uint32_t* amd = (const uint32_t*)(uintptr_t)m.amd_queue;
  if (amd[64 / 4] != 0x10000u || amd[68 / 4] != 0x20000u)
    FAIL("amd_queue_t apertures 0x%x 0x%x", amd[64 / 4], amd[68 / 4]);

  /* A barrier-AND with no dependencies, completing an interrupt signal. */
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  hsa_barrier_and_packet_t barrier;
  memset(&barrier, 0, sizeof barrier);
  barrier.completion_signal = done;
  submit(queue, &barrier,
         (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) |
             (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
             (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE),
         0);
  wait_zero(done, "the barrier-AND");

  /* vector_copy over N ints. */
  int *in, *out;
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&in));
  CHECK(hsa_amd_memory_pool_allocate(pools.fine, N * sizeof(int), 0, (void**)&out));
  for (uint32_t i = 0; i < N; i++) {
    in[i] = (int)(i * 7u - 3u);
    out[i] = -1;
  }
  void* kernarg;
  CHECK(hsa_amd_memory_pool_allocate(pools.kernarg, 64, 0, &kernarg));
  memset(kernarg, 0, 64);
  memcpy(kernarg, &in, 8);
  memcpy((char*)kernarg + 8, &out, 8);
  hsa_signal_store_screlease(done, 1);
  hsa_kernel_dispatch_packet_t d;
  memset(&d, 0, sizeof d);
  d.workgroup_size_x = 256;
  d.workgroup_size_y = 1;
  d.workgroup_size_z = 1;
  d.grid_size_x = N;
  d.grid_size_y = 1;
  d.grid_size_z = 1;
  d.kernel_object = kernel_object;
  d.kernarg_address = kernarg;
  d.completion_signal = done;
  submit(queue, &d,
         (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
             (1 << HSA_PACKET_HEADER_BARRIER) |
             (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
             (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE),
         1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  wait_zero(done, "vector_copy");
  for (uint32_t i = 0; i < N; i++)
    if (out[i] != in[i]) FAIL("element %u is %d, expected %d", i, out[i], in[i]);

  /* The device thread counts a packet and its interrupt after it has decremented the
   * completion signal the wait above returned on: give it up to 5 s to finish. */
  for (int i = 0; i < 5000 && (packets_done != 2 || interrupts != 2 || events_signaled != 2); i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  if (packets_done != 2) FAIL("%llu packets done", (unsigned long long)packets_done);
  if (interrupts != 2 || events_signaled != 2)
    FAIL("%llu interrupts signaled %llu events", (unsigned long long)interrupts,
         (unsigned long long)events_signaled);

  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_amd_memory_pool_free(kernarg));
  CHECK(hsa_amd_memory_pool_free(out));
  CHECK(hsa_amd_memory_pool_free(in));
  CHECK(hsa_executable_destroy(exe));
  CHECK(hsa_code_object_reader_destroy(reader));
  CHECK(hsa_queue_destroy(queue));
  if (unmap_calls != 1) FAIL("unmap_queue called %d times", unmap_calls);
  CHECK(hsa_shut_down());
  EXPECT_STATUS(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);
  if (hsa_rt_baremetal_interrupt() != 0) FAIL("an interrupt reached a shut-down runtime");

  atomic_store(&device_stop, 1);
  pthread_join(device, NULL);
  printf("baremetal_firmware: ok: %llu packets, %llu interrupts, %llu sleeps in "
         "wait_for_interrupt, %u elements verified\n",
         (unsigned long long)packets_done, (unsigned long long)interrupts,
         (unsigned long long)sleeps, N);
  free(co);
  return 0;
}
