/* Firmware without an OS over the no_std build of hsa-rt's C ABI
 * (`cargo build -p hsa-capi --no-default-features --features baremetal
 *  --target x86_64-unknown-none`: libhsa_runtime64.a, which needs no libc).
 *
 * Freestanding C: no libc, no threads; linked with `ld -static -nostdlib` and run as a Linux
 * process only to see it work (its two system calls, write and exit, are the only contact
 * with an OS). The host hands the library static memory: the system carve-out, the doorbell
 * BAR, the IH ring, and the heap the library allocates from (a bump allocator). There is no
 * GPU: queues are mapped and unmapped but never run.
 *
 * It checks: registration, hsa_init, the two agents described, a signal's store and
 * (satisfied) wait, a kernarg allocation inside the carve-out, map_queue/unmap_queue for a
 * queue, hsa_shut_down; then it makes the heap fail during hsa_init, and the library's panic
 * handler reports it through log and abort, which exits with status 70.
 *
 * Prints "freestanding: ok ..." then "abort: hsa-rt: panic: ...", and exits 70. */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsa_rt_ext.h"

static void sys_exit(int code) {
  __asm__ volatile("syscall" : : "a"(60), "D"(code) : "rcx", "r11", "memory");
  for (;;) {
  }
}

static void say(const char* s) {
  size_t n = 0;
  while (s[n]) n++;
  long r;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(1), "D"(1), "S"(s), "d"(n)
                   : "rcx", "r11", "memory");
  (void)r;
}

static void say_u64(uint64_t v) {
  char b[24];
  int i = 23;
  b[i] = 0;
  do {
    b[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  say(b + i);
}

#define FAIL(what)        \
  do {                    \
    say("FAIL: ");        \
    say(what);            \
    say("\n");            \
    sys_exit(1);          \
  } while (0)
#define CHECK(x) \
  if ((x) != HSA_STATUS_SUCCESS) FAIL(#x)

#define SYS_BYTES (16u << 20)
static uint8_t system_memory[SYS_BYTES] __attribute__((aligned(1 << 21)));
static uint64_t doorbell_bar[512] __attribute__((aligned(4096)));
static uint32_t ih_ring[1024] __attribute__((aligned(4096)));
static uint64_t ih_wptr[8] __attribute__((aligned(64)));
static uint32_t ih_registers[64] __attribute__((aligned(256)));

static uint8_t heap[4u << 20] __attribute__((aligned(4096)));
static size_t heap_top;
static bool heap_fails;

static void* host_allocate(void* context, size_t size, size_t align) {
  (void)context;
  size_t p = (heap_top + align - 1) & ~(align - 1);
  if (heap_fails || p + size > sizeof heap) return NULL;
  heap_top = p + size;
  return heap + p;
}

static void host_deallocate(void* context, void* ptr, size_t size, size_t align) {
  (void)context, (void)ptr, (void)size, (void)align; /* a bump heap never reuses */
}

static uint64_t ticks;
static uint64_t host_timestamp(void* context) {
  (void)context;
  return ++ticks; /* one tick a call; 1 MHz: waits end after their timeout in calls */
}

static void host_wait(void* context, uint64_t deadline, bool (*still_waiting)(void*), void* w) {
  (void)context, (void)deadline;
  (void)still_waiting(w); /* one CPU, no interrupts: nothing to sleep for */
}

static int mapped, unmapped;
static uint32_t mapped_doorbell;
static hsa_status_t host_map_queue(void* context, const hsa_rt_baremetal_queue_mapping_t* m) {
  (void)context;
  mapped++;
  mapped_doorbell = m->doorbell;
  return HSA_STATUS_SUCCESS;
}
static hsa_status_t host_unmap_queue(void* context, const hsa_rt_baremetal_queue_mapping_t* m) {
  (void)context, (void)m;
  unmapped++;
  return HSA_STATUS_SUCCESS;
}

static void host_log(void* context, const char* line) {
  (void)context;
  say("log: ");
  say(line);
  say("\n");
}

static void host_abort(void* context, const char* message) {
  (void)context;
  say("abort: ");
  say(message);
  say("\n");
  sys_exit(70);
}

static hsa_status_t find_agents(hsa_agent_t agent, void* data) {
  hsa_agent_t* agents = data;
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  agents[type == HSA_DEVICE_TYPE_GPU ? 1 : 0] = agent;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_kernarg(hsa_amd_memory_pool_t pool, void* data) {
  uint32_t flags = 0;
  hsa_amd_segment_t segment;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) {
    *(hsa_amd_memory_pool_t*)data = pool;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_rt_baremetal_carve_out_t carve_outs[1];
static hsa_rt_baremetal_node_t nodes[2];

static void run(void) {
  hsa_rt_baremetal_host_t h = {0};
  h.version = HSA_RT_BAREMETAL_HOST_VERSION;
  carve_outs[0].kind = HSA_RT_BAREMETAL_SYSTEM_MEMORY;
  carve_outs[0].virt_base = carve_outs[0].gpu_va = (uint64_t)(uintptr_t)system_memory;
  carve_outs[0].phys_base = 0x100000000ull;
  carve_outs[0].size_bytes = SYS_BYTES;
  h.carve_outs = carve_outs;
  h.carve_out_count = 1;
  nodes[0].node_id = 0;
  nodes[0].cpu_cores_count = 1;
  nodes[1].node_id = 1;
  nodes[1].simd_count = 4;
  nodes[1].simd_per_cu = 4;
  nodes[1].wave_front_size = 64;
  nodes[1].max_waves_per_simd = 8;
  nodes[1].lds_size_in_kb = 64;
  nodes[1].gfx_target_version = 90010;
  h.nodes = nodes;
  h.node_count = 2;
  h.doorbells.virt_base = (uint64_t)(uintptr_t)doorbell_bar;
  h.doorbells.size_bytes = sizeof doorbell_bar;
  h.doorbells.first = 8;
  h.doorbells.count = 8;
  h.ih_ring.ring_virt_base = (uint64_t)(uintptr_t)ih_ring;
  h.ih_ring.ring_size_bytes = sizeof ih_ring;
  h.ih_ring.wptr_virt = (uint64_t)(uintptr_t)ih_wptr;
  h.ih_ring.rptr_block_virt_base = (uint64_t)(uintptr_t)ih_registers;
  h.ih_ring.rptr_block_size_bytes = sizeof ih_registers;
  h.ih_ring.rptr_offset_bytes = 0x10;
  h.timestamp_frequency_hz = 1000000;
  h.map_queue = host_map_queue;
  h.unmap_queue = host_unmap_queue;
  h.wait_for_interrupt = host_wait;
  h.timestamp_ticks = host_timestamp;
  h.log = host_log;
  h.allocate = host_allocate;
  h.deallocate = host_deallocate;
  h.abort = host_abort;
  CHECK(hsa_rt_baremetal_init(&h));
  CHECK(hsa_init());

  hsa_agent_t agents[2] = {{0}, {0}};
  CHECK(hsa_iterate_agents(find_agents, agents));
  if (agents[0].handle == 0 || agents[1].handle == 0) FAIL("a CPU and a GPU agent");
  char name[64];
  CHECK(hsa_agent_get_info(agents[1], HSA_AGENT_INFO_NAME, name));
  if (name[0] != 'g' || name[5] != 'a' || name[6] != 0) FAIL("GPU agent name gfx90a");

  hsa_signal_t s;
  CHECK(hsa_signal_create(5, 0, NULL, &s));
  hsa_signal_store_screlease(s, 9);
  if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 9, 1000, HSA_WAIT_STATE_BLOCKED) != 9)
    FAIL("signal wait");
  CHECK(hsa_signal_destroy(s));

  hsa_amd_memory_pool_t kernarg = {0};
  if (hsa_amd_agent_iterate_memory_pools(agents[0], find_kernarg, &kernarg) !=
      HSA_STATUS_INFO_BREAK)
    FAIL("kernarg pool");
  void* args;
  CHECK(hsa_amd_memory_pool_allocate(kernarg, 256, 0, &args));
  if ((uint8_t*)args < system_memory || (uint8_t*)args >= system_memory + SYS_BYTES)
    FAIL("kernarg outside the carve-out");
  CHECK(hsa_amd_memory_pool_free(args));

  hsa_queue_t* queue;
  CHECK(hsa_queue_create(agents[1], 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX,
                         UINT32_MAX, &queue));
  if (mapped != 1 || mapped_doorbell != 8) FAIL("map_queue on doorbell 8");
  CHECK(hsa_queue_destroy(queue));
  if (unmapped != 1) FAIL("unmap_queue");
  CHECK(hsa_shut_down());

  say("freestanding: ok: 2 agents, queue on doorbell ");
  say_u64(mapped_doorbell);
  say(", heap ");
  say_u64(heap_top);
  say(" bytes\n");

  /* The heap fails: the library's panic handler logs and aborts. */
  heap_fails = true;
  (void)hsa_init();
  FAIL("hsa_init returned with a failing heap");
}

/* The process entry: the stack is 16-byte aligned here, not 8 off as after a call. */
__attribute__((force_align_arg_pointer)) void _start(void) {
  run();
  sys_exit(1);
}
