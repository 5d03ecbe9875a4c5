/* Two processes share device memory and a signal through the IPC functions, as ROCR's rocrtst
 * IPC test does: the process forks before hsa_init, so each has its own runtime (and, on the
 * emulated device, its own device). The parent allocates VRAM, fills it, shares it and an IPC
 * signal; the child attaches both, checks the fill through an async copy, writes its own
 * pattern through the host, detaches, and sets the signal to 2; the parent sees 2, checks the
 * child's pattern, sets 0, and the child sees 0. Bad, foreign and stale handles are checked
 * for ROCR's statuses. Prints "ipc: ok" (and exits 0) when every check passed. */
#define _GNU_SOURCE
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static const char* who = "parent";
#define EXPECT(cond)                                                                 \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s: %s:%d: expected %s\n", who, __FILE__, __LINE__, #cond);   \
      failures++;                                                                    \
    }                                                                                \
  } while (0)
#define OK(call) EXPECT((call) == HSA_STATUS_SUCCESS)
#define IS(call, status) EXPECT((call) == (hsa_status_t)(status))

/* Bytes shared: three pages. */
#define SIZE (3 * 4096)
#define WORDS (SIZE / 4)
#define FILL 0x11111111u
#define CHILD_BASE 0x22220000u
/* A wait's timeout, ns, and the most waits before giving up (20 s). */
#define WAIT_NS 100000000ull
#define MAX_WAITS 200

struct shared {
  atomic_int stage; /* 1: handles are ready; -1: the parent failed before that */
  hsa_amd_ipc_memory_t mem;
  hsa_amd_ipc_signal_t sig;
};

static hsa_agent_t cpu, gpu;
static hsa_amd_memory_pool_t vram, sys;

static hsa_status_t pick_agents(hsa_agent_t a, void* data) {
  (void)data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_CPU && !cpu.handle) cpu = a;
  if (t == HSA_DEVICE_TYPE_GPU && !gpu.handle) gpu = a;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void* data) {
  uint32_t flags;
  bool alloc;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  hsa_amd_memory_pool_t* out = data;
  if (alloc && !out->handle) *out = p;
  return HSA_STATUS_SUCCESS;
}

static void init(void) {
  OK(hsa_init());
  OK(hsa_iterate_agents(pick_agents, NULL));
  EXPECT(cpu.handle && gpu.handle);
  OK(hsa_amd_agent_iterate_memory_pools(gpu, pick_pool, &vram));
  OK(hsa_amd_agent_iterate_memory_pools(cpu, pick_pool, &sys));
  EXPECT(vram.handle && sys.handle);
}

/* Copies SIZE bytes of `src` (device memory) into a new system buffer with an async copy. */
static uint32_t* copy_out(const void* src) {
  uint32_t* out = NULL;
  hsa_signal_t done;
  OK(hsa_amd_memory_pool_allocate(sys, SIZE, 0, (void**)&out));
  hsa_agent_t both[2] = {gpu, cpu};
  OK(hsa_amd_agents_allow_access(2, both, NULL, out));
  OK(hsa_signal_create(1, 0, NULL, &done));
  OK(hsa_amd_memory_async_copy(out, cpu, src, gpu, SIZE, 0, NULL, done));
  EXPECT(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) == 0);
  OK(hsa_signal_destroy(done));
  return out;
}

/* Waits (blocked, in slices) until `sig` is not `value`; returns what it then holds. */
static hsa_signal_value_t wait_ne(hsa_signal_t sig, hsa_signal_value_t value) {
  hsa_signal_value_t v = value;
  for (int i = 0; i < MAX_WAITS && v == value; i++)
    v = hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_NE, value, WAIT_NS,
                                  HSA_WAIT_STATE_BLOCKED);
  return v;
}

static int child(struct shared* s) {
  who = "child";
  for (int i = 0; atomic_load(&s->stage) == 0; i++) {
    if (i > 20000) return 2;
    usleep(1000);
  }
  if (atomic_load(&s->stage) != 1) return 3;
  init();

  void* q = NULL;
  OK(hsa_amd_ipc_memory_attach(&s->mem, SIZE, 1, &gpu, &q));
  EXPECT(q != NULL);
  hsa_signal_t sig = {0};
  OK(hsa_amd_ipc_signal_attach(&s->sig, &sig));
  EXPECT(hsa_signal_load_scacquire(sig) == 1);
  if (q) {
    /* The parent's fill, through the device path (async copy from the attached address). */
    uint32_t* seen = copy_out(q);
    int bad = 0;
    for (int i = 0; i < WORDS; i++) bad += seen[i] != FILL;
    EXPECT(bad == 0);
    OK(hsa_amd_memory_pool_free(seen));
    /* Our pattern, through the host. */
    uint32_t* w = q;
    for (int i = 0; i < WORDS; i++) w[i] = CHILD_BASE + (uint32_t)i;
    OK(hsa_amd_ipc_memory_detach(q));
    IS(hsa_amd_ipc_memory_detach(q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  }
  hsa_signal_store_screlease(sig, 2);
  EXPECT(wait_ne(sig, 2) == 0);
  OK(hsa_signal_destroy(sig));
  OK(hsa_shut_down());
  return failures ? 1 : 0;
}

static void bad_handles(void) {
  hsa_amd_ipc_memory_t zero_mem;
  memset(&zero_mem, 0, sizeof zero_mem);
  hsa_amd_ipc_signal_t zero_sig;
  memset(&zero_sig, 0, sizeof zero_sig);
  void* q = NULL;
  hsa_signal_t sig;
  IS(hsa_amd_ipc_memory_attach(&zero_mem, 4096, 0, NULL, &q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_signal_attach(&zero_sig, &sig), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_attach(&zero_mem, 4096, 0, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_detach(NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_detach(&q), HSA_STATUS_ERROR_INVALID_ARGUMENT);

  /* A signal made without HSA_AMD_SIGNAL_IPC cannot be shared. */
  hsa_signal_t plain;
  OK(hsa_signal_create(1, 0, NULL, &plain));
  IS(hsa_amd_ipc_signal_create(plain, &zero_sig), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_signal_destroy(plain));

  /* Only an allocation's start, with its size, can be shared. */
  char* buf = NULL;
  hsa_amd_ipc_memory_t h;
  OK(hsa_amd_memory_pool_allocate(vram, SIZE, 0, (void**)&buf));
  IS(hsa_amd_ipc_memory_create(buf + 4096, 4096, &h), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_create(buf, SIZE + 4096, &h), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_create(&h, 4096, &h), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  OK(hsa_amd_ipc_memory_create(buf, SIZE, &h));
  /* A memory handle is no signal handle, and a length beyond the shared bytes is refused. */
  hsa_amd_ipc_signal_t as_sig;
  memcpy(&as_sig, &h, sizeof as_sig);
  IS(hsa_amd_ipc_signal_attach(&as_sig, &sig), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  IS(hsa_amd_ipc_memory_attach(&h, SIZE + 4096, 0, NULL, &q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
  /* Attached in this process too: another address over the same memory. */
  OK(hsa_amd_ipc_memory_attach(&h, SIZE, 0, NULL, &q));
  EXPECT(q != NULL && q != buf);
  if (q) {
    ((volatile uint32_t*)buf)[5] = 0xabcd1234u;
    EXPECT(((volatile uint32_t*)q)[5] == 0xabcd1234u);
    OK(hsa_amd_ipc_memory_detach(q));
  }
  OK(hsa_amd_memory_pool_free(buf));

  /* Stale: an allocation larger than a pool chunk has a chunk of its own, given back (and
   * its export ended) when it is freed. */
  size_t big = 4u << 20;
  OK(hsa_amd_memory_pool_allocate(vram, big, 0, (void**)&buf));
  OK(hsa_amd_ipc_memory_create(buf, big, &h));
  OK(hsa_amd_memory_pool_free(buf));
  IS(hsa_amd_ipc_memory_attach(&h, big, 0, NULL, &q), HSA_STATUS_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  struct shared* s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
  if (s == MAP_FAILED) return 2;
  memset(s, 0, sizeof *s);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) _exit(child(s));

  init();
  bad_handles();

  /* As rocrtst: a first allocation freed again, so the shared one is not a chunk's start. */
  void* discard = NULL;
  uint32_t* buf = NULL;
  OK(hsa_amd_memory_pool_allocate(vram, SIZE, 0, &discard));
  OK(hsa_amd_memory_pool_allocate(vram, SIZE, 0, (void**)&buf));
  OK(hsa_amd_memory_pool_free(discard));
  hsa_agent_t both[2] = {gpu, cpu};
  OK(hsa_amd_agents_allow_access(2, both, NULL, buf));
  OK(hsa_amd_memory_fill(buf, FILL, WORDS));
  OK(hsa_amd_ipc_memory_create(buf, SIZE, &s->mem));
  hsa_signal_t sig;
  OK(hsa_amd_signal_create(1, 0, NULL, HSA_AMD_SIGNAL_IPC, &sig));
  OK(hsa_amd_ipc_signal_create(sig, &s->sig));
  atomic_store(&s->stage, failures ? -1 : 1);

  EXPECT(wait_ne(sig, 1) == 2);
  uint32_t* seen = copy_out(buf);
  int bad = 0;
  for (int i = 0; i < WORDS; i++) bad += seen[i] != CHILD_BASE + (uint32_t)i;
  EXPECT(bad == 0);
  OK(hsa_amd_memory_pool_free(seen));
  hsa_signal_store_screlease(sig, 0);
  OK(hsa_signal_destroy(sig));
  OK(hsa_amd_memory_pool_free(buf));

  int status = 0;
  EXPECT(waitpid(pid, &status, 0) == pid);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  OK(hsa_shut_down());
  if (failures) {
    fprintf(stderr, "ipc: %d failures\n", failures);
    return 1;
  }
  printf("ipc: ok\n");
  return 0;
}
