// vector_add in HIP on hsa-rt: Debian's HIP 5.2.3 runtime (libamdhip64) over hsa-rt's
// libhsa-runtime64 instead of ROCR, on the emulated gfx90a (no GPU needed), which runs the
// kernel's real gfx90a machine code.
//
// From the repository's root (Debian 12: apt install hipcc libamdhip64-dev rocm-device-libs):
//
//   cargo build --release -p hsa-capi
//   ln -sf libhsa_runtime64.so target/release/libhsa-runtime64.so.1
//   hipcc --offload-arch=gfx90a capi/hip/vector_add.hip -o target/vector_add_hip
//   LD_LIBRARY_PATH=target/release HSA_RT_DEVICE=emulated target/vector_add_hip
//
// The link makes the library loadable by its soname, the name libamdhip64 opens. Prints
// "vector_add: verified 65536 elements on gfx90a..." and exits 0, or prints what failed
// and exits 1.
// capi/tests/examples.rs runs these lines (the cargo build replaced by the test's own build).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

#define CHECK(x)                                                                  \
    do {                                                                          \
        hipError_t e_ = (x);                                                      \
        if (e_ != hipSuccess) {                                                   \
            printf("vector_add: %s failed: %s\n", #x, hipGetErrorString(e_));     \
            return 1;                                                             \
        }                                                                         \
    } while (0)

__global__ void vector_add(const int* a, const int* b, int* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 16;
    std::vector<int> a(n), b(n), c(n, 0);
    for (int i = 0; i < n; i++) {
        a[i] = 7 * i - 3;
        b[i] = i ^ 0x5a5a;
    }
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, 0));
    int *da, *db, *dc;
    CHECK(hipMalloc(&da, n * sizeof(int)));
    CHECK(hipMalloc(&db, n * sizeof(int)));
    CHECK(hipMalloc(&dc, n * sizeof(int)));
    CHECK(hipMemcpy(da, a.data(), n * sizeof(int), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(db, b.data(), n * sizeof(int), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(vector_add, dim3(n / 256), dim3(256), 0, 0, da, db, dc, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(c.data(), dc, n * sizeof(int), hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        if (c[i] != a[i] + b[i]) {
            printf("vector_add: element %d is %d, expected %d\n", i, c[i], a[i] + b[i]);
            return 1;
        }
    }
    CHECK(hipFree(da));
    CHECK(hipFree(db));
    CHECK(hipFree(dc));
    printf("vector_add: verified %d elements on %s\n", n, prop.gcnArchName);
    return 0;
}
