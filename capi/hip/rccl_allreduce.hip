// RCCL (ROCm 7.2.4's librccl) across every GPU of the machine, in one process: one
// communicator per GPU (ncclCommInitAll), an in-place float sum all-reduce of 1024 elements
// per GPU on each GPU's own stream, checked element by element against the sum the host
// computes. capi/tests/hip7.rs runs it on this library's emulated 8-GPU MI210 machine (two
// xGMI hives of four, PCIe between them). Prints "rccl_allreduce: ok" and exits 0, or prints
// "FAIL ..." and exits 1.
#include <hip/hip_runtime.h>
#include <rccl/rccl.h>

#include <cstdio>
#include <vector>

#define HIP(x)                                                                           \
    do {                                                                                 \
        hipError_t e_ = (x);                                                             \
        if (e_ != hipSuccess) {                                                          \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)
#define NCCL(x)                                                                          \
    do {                                                                                 \
        ncclResult_t r_ = (x);                                                           \
        if (r_ != ncclSuccess) {                                                         \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

// GPU g's input element k: (g + 1) * (k % 7), so the sum over n GPUs is n(n+1)/2 * (k % 7).
static float element(int g, size_t k) { return float(g + 1) * float(k % 7); }

int main() {
    setvbuf(stdout, nullptr, _IONBF, 0);
    const size_t count = 1024;
    int n = 0;
    HIP(hipGetDeviceCount(&n));
    printf("devices %d\n", n);
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devs(n);
    for (int i = 0; i < n; i++) devs[i] = i;
    NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
    std::vector<float*> buf(n);
    std::vector<hipStream_t> streams(n);
    for (int g = 0; g < n; g++) {
        HIP(hipSetDevice(g));
        HIP(hipMalloc(&buf[g], count * sizeof(float)));
        HIP(hipStreamCreate(&streams[g]));
        std::vector<float> h(count);
        for (size_t k = 0; k < count; k++) h[k] = element(g, k);
        HIP(hipMemcpy(buf[g], h.data(), count * sizeof(float), hipMemcpyHostToDevice));
    }
    NCCL(ncclGroupStart());
    for (int g = 0; g < n; g++)
        NCCL(ncclAllReduce(buf[g], buf[g], count, ncclFloat, ncclSum, comms[g], streams[g]));
    NCCL(ncclGroupEnd());
    int bad = 0;
    for (int g = 0; g < n; g++) {
        HIP(hipSetDevice(g));
        HIP(hipStreamSynchronize(streams[g]));
        std::vector<float> h(count);
        HIP(hipMemcpy(h.data(), buf[g], count * sizeof(float), hipMemcpyDeviceToHost));
        for (size_t k = 0; k < count; k++) {
            float want = 0;
            for (int s = 0; s < n; s++) want += element(s, k);
            if (h[k] != want && bad++ < 5)
                printf("FAIL GPU %d element %zu: %g, host %g\n", g, k, h[k], want);
        }
        HIP(hipFree(buf[g]));
        HIP(hipStreamDestroy(streams[g]));
    }
    for (int g = 0; g < n; g++) NCCL(ncclCommDestroy(comms[g]));
    if (bad) return 1;
    printf("rccl_allreduce: ok\n");
    return 0;
}
