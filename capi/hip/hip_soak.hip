// Soak of HIP on hsa-rt's libhsa-runtime64 (capi/tests/hip.rs runs it on the emulated device):
// THREADS host threads each run ROUNDS rounds of creating and destroying streams, events,
// device and pinned host buffers and a module (the code object given, with its kernels), while
// launching kernels and copying, every element checked on the host. The module is
// module_kernels.hip's code object (its `triple` kernel). After one warm-up round
// the program notes its resident set and the bytes of the emulated device's buffer objects
// (its memfds, "/memfd:hsa-emulated-bo"); after the threads end both must be back: the
// device's bytes exactly, the resident set within RSS_SLACK_KIB.
// Prints "hip_soak: ok ..." and exits 0, or "FAIL ..." and exits 1.
// Usage: hip_soak MODULE_CODE_OBJECT THREADS ROUNDS
#include <hip/hip_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#define CHECK(x)                                                                             \
    do {                                                                                     \
        hipError_t e_ = (x);                                                                 \
        if (e_ != hipSuccess) {                                                              \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_));     \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

// How far the resident set may end above its level after the warm-up round, KiB.
static const long RSS_SLACK_KIB = 48 * 1024;
static const int N = 4096;

__global__ void add_scaled(const int* a, const int* b, int* c, int k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + k * b[i];
}

static long rss_kib() {
    long pages = 0, resident = -1;
    FILE* f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long long device_bytes() {
    long long total = 0;
    DIR* d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (dirent* e = readdir(d)) {
        std::string link = std::string("/proc/self/fd/") + e->d_name;
        char target[256];
        ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        struct stat st;
        if (!strncmp(target, "/memfd:hsa-emulated-bo", 22) && !stat(link.c_str(), &st))
            total += st.st_size;
    }
    closedir(d);
    return total;
}

static const char* module_path;

// One round; `seed` varies the data.
static int round_once(int seed) {
    hipStream_t s;
    CHECK(hipStreamCreate(&s));
    hipEvent_t start, stop;
    CHECK(hipEventCreate(&start));
    CHECK(hipEventCreate(&stop));
    int *da, *db, *dc, *h;
    CHECK(hipMalloc(&da, N * sizeof(int)));
    CHECK(hipMalloc(&db, N * sizeof(int)));
    CHECK(hipMalloc(&dc, N * sizeof(int)));
    CHECK(hipHostMalloc(&h, 3 * N * sizeof(int)));
    for (int i = 0; i < N; i++) {
        h[i] = seed * 31 + i;
        h[N + i] = i ^ seed;
        h[2 * N + i] = 0;
    }
    CHECK(hipEventRecord(start, s));
    CHECK(hipMemcpyAsync(da, h, N * sizeof(int), hipMemcpyHostToDevice, s));
    CHECK(hipMemcpyAsync(db, h + N, N * sizeof(int), hipMemcpyHostToDevice, s));
    hipLaunchKernelGGL(add_scaled, dim3(N / 256), dim3(256), 0, s, da, db, dc, 3, N);
    CHECK(hipGetLastError());
    CHECK(hipMemcpyAsync(h + 2 * N, dc, N * sizeof(int), hipMemcpyDeviceToHost, s));
    CHECK(hipEventRecord(stop, s));
    CHECK(hipStreamSynchronize(s));
    CHECK(hipEventSynchronize(stop));
    for (int i = 0; i < N; i++)
        if (h[2 * N + i] != h[i] + 3 * h[N + i]) {
            printf("FAIL round %d element %d: %d, want %d\n", seed, i, h[2 * N + i],
                   h[i] + 3 * h[N + i]);
            return 1;
        }
    // A module (an executable of its own) with a kernel of it.
    hipModule_t m;
    hipFunction_t f;
    CHECK(hipModuleLoad(&m, module_path));
    CHECK(hipModuleGetFunction(&f, m, "triple"));
    struct {
        int* p;
        int n;
    } args = {dc, N};
    size_t size = sizeof args;
    void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &args, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      HIP_LAUNCH_PARAM_END};
    CHECK(hipModuleLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s, nullptr, config));
    CHECK(hipMemcpyAsync(h + 2 * N, dc, N * sizeof(int), hipMemcpyDeviceToHost, s));
    CHECK(hipStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        if (h[2 * N + i] != 3 * (h[i] + 3 * h[N + i])) {
            printf("FAIL round %d module element %d: %d\n", seed, i, h[2 * N + i]);
            return 1;
        }
    CHECK(hipModuleUnload(m));
    CHECK(hipFree(da));
    CHECK(hipFree(db));
    CHECK(hipFree(dc));
    CHECK(hipHostFree(h));
    CHECK(hipEventDestroy(start));
    CHECK(hipEventDestroy(stop));
    CHECK(hipStreamDestroy(s));
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        printf("usage: hip_soak MODULE_CODE_OBJECT THREADS ROUNDS\n");
        return 2;
    }
    module_path = argv[1];
    int threads = atoi(argv[2]), rounds = atoi(argv[3]);
    if (threads < 1 || rounds < 1) return 2;
    if (round_once(1)) return 1;
    CHECK(hipDeviceSynchronize());
    long rss0 = rss_kib();
    long long dev0 = device_bytes();
    std::atomic<int> failed{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            for (int r = 0; r < rounds; r++)
                if (round_once(1000 * (t + 1) + r)) {
                    failed++;
                    return;
                }
        });
    for (auto& t : pool) t.join();
    CHECK(hipDeviceSynchronize());
    long rss1 = rss_kib();
    long long dev1 = device_bytes();
    if (failed) {
        printf("FAIL %d threads failed\n", failed.load());
        return 1;
    }
    if (dev1 != dev0 || dev0 <= 0) {
        printf("FAIL device buffer objects %lld -> %lld bytes\n", dev0, dev1);
        return 1;
    }
    if (rss0 <= 0 || rss1 > rss0 + RSS_SLACK_KIB) {
        printf("FAIL resident set %ld -> %ld KiB\n", rss0, rss1);
        return 1;
    }
    printf("hip_soak: ok: %d threads x %d rounds; rss %ld -> %ld KiB; device buffer objects "
           "%lld -> %lld bytes\n",
           threads, rounds, rss0, rss1, dev0, dev1);
    return 0;
}
