/* A client that maps the device files with the mmap system call itself, as tinygrad does
 * (it calls mmap through ctypes.CDLL('libc.so.6'), a handle to libc's own definition, which
 * an LD_PRELOAD library never interposes): syscall(SYS_mmap, ...) of a render node's buffer
 * object and of /dev/kfd's doorbell page must give the device's bytes, exactly as libc's
 * mmap does.
 *
 * Checks, each printing one line "syscall_mmap: <what>: ok" or the first thing wrong:
 * - bo: a VRAM buffer object mapped with the system call over its reserved address
 *   (MAP_FIXED) and with libc's mmap elsewhere: bytes written through either mapping read
 *   back through the other;
 * - doorbell: /dev/kfd's doorbell page of the GPU (KFD_MMAP_TYPE_DOORBELL | gpu_id << 46),
 *   mapped both ways, aliases the same way;
 * - errors: what amdkfd and amdgpu answer for bad mmaps, through the system call: an offset
 *   no buffer object has (EINVAL), a length past the buffer object (EINVAL), a doorbell
 *   page of the wrong length (EINVAL) or of an unknown GPU (EINVAL), the event page before
 *   any signal event made one (EINVAL);
 * - file: a file's mapping at an offset past 4 GiB (where the device's offsets are) still
 *   gives the file's bytes;
 * - exec: a child exec'd after the device was opened (it inherits whatever the library set
 *   up to serve the system call) runs and exits with its own status.
 * Exits 0 when all passed, 1 at the first failure. Reads the first GPU's gpu_id and render
 * minor from the KFD topology in sysfs (kfd-emu's namespace). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* kfd_ioctl.h (interface 1.x): the two requests and their arguments, written out so that
 * the program needs no kernel or libdrm headers. */
struct kfd_ioctl_acquire_vm_args {
  uint32_t drm_fd;
  uint32_t gpu_id;
};
struct kfd_ioctl_alloc_memory_of_gpu_args {
  uint64_t va_addr, size, handle, mmap_offset;
  uint32_t gpu_id, flags;
};
#define AMDKFD_IOC_ACQUIRE_VM _IOW('K', 0x15, struct kfd_ioctl_acquire_vm_args)
#define AMDKFD_IOC_ALLOC_MEMORY_OF_GPU _IOWR('K', 0x16, struct kfd_ioctl_alloc_memory_of_gpu_args)
#define KFD_IOC_ALLOC_MEM_FLAGS_VRAM (1u << 0)
#define KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC (1u << 29)
#define KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE (1u << 31)

/* kfd_priv.h: the type of a /dev/kfd mmap offset, and the GPU it is for. */
#define KFD_MMAP_TYPE_DOORBELL (3ULL << 62)
#define KFD_MMAP_TYPE_EVENTS (2ULL << 62)
#define KFD_MMAP_GPU_ID_SHIFT 46
/* gfx9 and later: one process's doorbells, 1024 64-bit slots (kfd_doorbell.c). */
#define DOORBELL_PAGE 8192u
#define BO_SIZE (64u << 10)

static sigjmp_buf fault_jmp;
static void on_sigbus(int sig) { siglongjmp(fault_jmp, sig); }

static void fail(const char* what, const char* detail) {
  printf("syscall_mmap: %s: %s\n", what, detail);
  exit(1);
}

static void* sys_mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t off) {
  return (void*)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static uint64_t read_u64(const char* path, const char* key) {
  FILE* f = fopen(path, "r");
  if (!f) fail(path, strerror(errno));
  char name[128];
  unsigned long long v = 0;
  if (!key) {
    if (fscanf(f, "%llu", &v) != 1) fail(path, "no number");
  } else {
    int found = 0;
    while (fscanf(f, "%127s %llu", name, &v) == 2)
      if (strcmp(name, key) == 0) {
        found = 1;
        break;
      }
    if (!found) fail(path, key);
  }
  fclose(f);
  return v;
}

/* Writes `tag` through `w` and reads it through `r`, then the other way (SIGBUS caught). */
static void alias(const char* what, volatile uint64_t* a, volatile uint64_t* b, size_t slot) {
  if (sigsetjmp(fault_jmp, 1) != 0) fail(what, "SIGBUS touching a mapping");
  a[slot] = 0x5ca1ab1e00000000ull | slot;
  if (b[slot] != (0x5ca1ab1e00000000ull | slot)) fail(what, "the system call's write is not seen through libc's mapping");
  b[slot + 1] = 0xfeedface12345678ull;
  if (a[slot + 1] != 0xfeedface12345678ull) fail(what, "libc's mapping's write is not seen through the system call's");
  printf("syscall_mmap: %s: ok\n", what);
}

static void expect_errno(const char* what, void* r, int want) {
  if (r != MAP_FAILED) {
    printf("syscall_mmap: errors: %s mapped at %p, want %s\n", what, r, strerror(want));
    exit(1);
  }
  if (errno != want) {
    printf("syscall_mmap: errors: %s: %s, want %s\n", what, strerror(errno), strerror(want));
    exit(1);
  }
}

int main(void) {
  signal(SIGBUS, on_sigbus);
  signal(SIGSEGV, on_sigbus);
  const char* node = "/sys/devices/virtual/kfd/kfd/topology/nodes/1";
  char path[256];
  snprintf(path, sizeof path, "%s/gpu_id", node);
  uint32_t gpu_id = (uint32_t)read_u64(path, NULL);
  snprintf(path, sizeof path, "%s/properties", node);
  int minor = (int)read_u64(path, "drm_render_minor");

  int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
  if (kfd < 0) fail("/dev/kfd", strerror(errno));
  snprintf(path, sizeof path, "/dev/dri/renderD%d", minor);
  int drm = open(path, O_RDWR | O_CLOEXEC);
  if (drm < 0) fail(path, strerror(errno));
  struct kfd_ioctl_acquire_vm_args vm = {.drm_fd = (uint32_t)drm, .gpu_id = gpu_id};
  if (ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &vm) != 0) fail("ACQUIRE_VM", strerror(errno));

  /* The buffer object's GPU address: reserved address space, as the thunk reserves it. */
  void* va = mmap(NULL, BO_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (va == MAP_FAILED) fail("reserve", strerror(errno));
  struct kfd_ioctl_alloc_memory_of_gpu_args bo = {
      .va_addr = (uint64_t)va,
      .size = BO_SIZE,
      .gpu_id = gpu_id,
      .flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
               KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
  };
  if (ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &bo) != 0) fail("ALLOC_MEMORY_OF_GPU", strerror(errno));

  void* bo_sys = sys_mmap(va, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, drm, bo.mmap_offset);
  if (bo_sys == MAP_FAILED) fail("bo", strerror(errno));
  if (bo_sys != va) fail("bo", "MAP_FIXED mapping not at the address asked for");
  void* bo_libc = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, drm, bo.mmap_offset);
  if (bo_libc == MAP_FAILED) fail("bo (libc)", strerror(errno));
  alias("bo", bo_sys, bo_libc, BO_SIZE / 8 - 2);

  uint64_t db = KFD_MMAP_TYPE_DOORBELL | ((uint64_t)(gpu_id & 0xffff) << KFD_MMAP_GPU_ID_SHIFT);
  void* db_sys = sys_mmap(NULL, DOORBELL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, kfd, db);
  if (db_sys == MAP_FAILED) fail("doorbell", strerror(errno));
  void* db_libc = mmap(NULL, DOORBELL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, kfd, db);
  if (db_libc == MAP_FAILED) fail("doorbell (libc)", strerror(errno));
  /* The last two slots: no queue of this process has them. */
  alias("doorbell", db_sys, db_libc, DOORBELL_PAGE / 8 - 2);

  int rw = PROT_READ | PROT_WRITE;
  expect_errno("unknown buffer object offset",
               sys_mmap(NULL, 4096, rw, MAP_SHARED, drm, bo.mmap_offset + (64ull << 24)), EINVAL);
  expect_errno("length past the buffer object",
               sys_mmap(NULL, BO_SIZE + 4096, rw, MAP_SHARED, drm, bo.mmap_offset), EINVAL);
  expect_errno("doorbell page of 4096 bytes", sys_mmap(NULL, 4096, rw, MAP_SHARED, kfd, db), EINVAL);
  expect_errno("doorbell page of an unknown GPU",
               sys_mmap(NULL, DOORBELL_PAGE, rw, MAP_SHARED, kfd,
                        KFD_MMAP_TYPE_DOORBELL | ((uint64_t)((gpu_id + 1) & 0xffff) << KFD_MMAP_GPU_ID_SHIFT)),
               EINVAL);
  expect_errno("event page before any signal event",
               sys_mmap(NULL, 4096, rw, MAP_SHARED, kfd, KFD_MMAP_TYPE_EVENTS), EINVAL);
  printf("syscall_mmap: errors: ok\n");

  int f = memfd_create("syscall_mmap", MFD_CLOEXEC);
  if (f < 0) fail("file", strerror(errno));
  uint64_t far = 5ull << 30;
  if (ftruncate(f, (off_t)(far + 4096)) != 0) fail("file", strerror(errno));
  if (pwrite(f, "the file's bytes", 17, (off_t)far) != 17) fail("file", strerror(errno));
  char* fp = sys_mmap(NULL, 4096, PROT_READ, MAP_SHARED, f, far);
  if (fp == MAP_FAILED) fail("file", strerror(errno));
  if (sigsetjmp(fault_jmp, 1) != 0) fail("file", "SIGBUS touching the mapping");
  if (strcmp(fp, "the file's bytes") != 0) fail("file", "not the file's bytes");
  printf("syscall_mmap: file: ok\n");

  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", "exit 7", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) fail("exec", strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) {
    printf("syscall_mmap: exec: child status %#x, want exit 7\n", status);
    return 1;
  }
  printf("syscall_mmap: exec: ok\n");
  return 0;
}
