// hipCUB's device-wide algorithms (ROCm 7.2.4's header-only hipCUB over rocPRIM, in the ROCm 7
// chroot): capi/tests/hip7.rs builds this file with hipcc 7.2.4 for gfx90a and gfx942 and runs
// each section on this library's emulated devices. Each section runs its algorithm on several
// sizes (one element, a non-power-of-two inside one block, several blocks with a partial last
// one) with hipCUB's two-phase temporary-storage protocol, and compares every result with what
// the host computes from the same input. A section prints "hipcub_check: <section> ok" and
// exits 0, or prints "FAIL ..." and exits 1.
#include <hip/hip_runtime.h>
#include <cstring>
#include <hipcub/hipcub.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#define CHECK(x)                                                                         \
    do {                                                                                 \
        hipError_t e_ = (x);                                                             \
        if (e_ != hipSuccess) {                                                          \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

static const size_t kSizes[] = {1, 1000, 100003};

// A fixed pseudo-random sequence (xorshift32), the same on every run.
static std::vector<uint32_t> input(size_t n, uint32_t seed) {
    std::vector<uint32_t> v(n);
    uint32_t x = seed;
    for (auto& e : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        e = x;
    }
    return v;
}

template <class T>
static int to_device(const std::vector<T>& h, T** d) {
    CHECK(hipMalloc(d, h.size() * sizeof(T)));
    CHECK(hipMemcpy(*d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice));
    return 0;
}

// DeviceReduce::Sum (wrapping 32-bit sum) and ::Max, and DeviceScan::InclusiveSum.
static int reduce_scan_section() {
    for (size_t n : kSizes) {
        std::vector<uint32_t> h = input(n, 0x1234567u + (uint32_t)n);
        uint32_t *d_in, *d_out, *d_scan;
        if (to_device(h, &d_in)) return 1;
        CHECK(hipMalloc(&d_out, 2 * sizeof(uint32_t)));
        CHECK(hipMalloc(&d_scan, n * sizeof(uint32_t)));
        size_t bytes = 0, more = 0;
        CHECK(hipcub::DeviceReduce::Sum(nullptr, bytes, d_in, d_out, (int)n));
        CHECK(hipcub::DeviceReduce::Max(nullptr, more, d_in, d_out + 1, (int)n));
        bytes = std::max(bytes, more);
        CHECK(hipcub::DeviceScan::InclusiveSum(nullptr, more, d_in, d_scan, (int)n));
        bytes = std::max(bytes, more);
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        size_t b = bytes;
        CHECK(hipcub::DeviceReduce::Sum(tmp, b, d_in, d_out, (int)n));
        b = bytes;
        CHECK(hipcub::DeviceReduce::Max(tmp, b, d_in, d_out + 1, (int)n));
        b = bytes;
        CHECK(hipcub::DeviceScan::InclusiveSum(tmp, b, d_in, d_scan, (int)n));
        uint32_t got[2];
        std::vector<uint32_t> scan(n);
        CHECK(hipMemcpy(got, d_out, sizeof got, hipMemcpyDeviceToHost));
        CHECK(hipMemcpy(scan.data(), d_scan, n * sizeof(uint32_t), hipMemcpyDeviceToHost));
        uint32_t sum = std::accumulate(h.begin(), h.end(), 0u);
        uint32_t max = *std::max_element(h.begin(), h.end());
        if (got[0] != sum || got[1] != max) {
            printf("FAIL reduce n=%zu: sum %u (host %u), max %u (host %u)\n", n, got[0], sum,
                   got[1], max);
            return 1;
        }
        uint32_t run = 0;
        for (size_t i = 0; i < n; i++) {
            run += h[i];
            if (scan[i] != run) {
                printf("FAIL inclusive sum n=%zu at %zu: %u (host %u)\n", n, i, scan[i], run);
                return 1;
            }
        }
        CHECK(hipFree(tmp));
        CHECK(hipFree(d_in));
        CHECK(hipFree(d_out));
        CHECK(hipFree(d_scan));
    }
    return 0;
}

// DeviceRadixSort::SortPairs: 32-bit keys with their original index as the value; the host
// sorts the same pairs stably.
static int sort_section() {
    for (size_t n : kSizes) {
        std::vector<uint32_t> keys = input(n, 0xBEEFu + (uint32_t)n);
        for (auto& k : keys) k %= 5000;  // repeated keys: stability shows in the values
        std::vector<uint32_t> values(n);
        std::iota(values.begin(), values.end(), 0u);
        uint32_t *dk, *dv, *dk2, *dv2;
        if (to_device(keys, &dk) || to_device(values, &dv)) return 1;
        CHECK(hipMalloc(&dk2, n * sizeof(uint32_t)));
        CHECK(hipMalloc(&dv2, n * sizeof(uint32_t)));
        size_t bytes = 0;
        CHECK(hipcub::DeviceRadixSort::SortPairs(nullptr, bytes, dk, dk2, dv, dv2, (int)n));
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(hipcub::DeviceRadixSort::SortPairs(tmp, bytes, dk, dk2, dv, dv2, (int)n));
        std::vector<uint32_t> gk(n), gv(n);
        CHECK(hipMemcpy(gk.data(), dk2, n * sizeof(uint32_t), hipMemcpyDeviceToHost));
        CHECK(hipMemcpy(gv.data(), dv2, n * sizeof(uint32_t), hipMemcpyDeviceToHost));
        std::vector<uint32_t> order(n);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
        for (size_t i = 0; i < n; i++) {
            if (gk[i] != keys[order[i]] || gv[i] != order[i]) {
                printf("FAIL sort n=%zu at %zu: (%u, %u), host (%u, %u)\n", n, i, gk[i], gv[i],
                       keys[order[i]], order[i]);
                return 1;
            }
        }
        CHECK(hipFree(tmp));
        CHECK(hipFree(dk));
        CHECK(hipFree(dv));
        CHECK(hipFree(dk2));
        CHECK(hipFree(dv2));
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        printf("usage: hipcub_check reduce_scan|sort\n");
        return 2;
    }
    const char* s = argv[1];
    int r;
    if (!strcmp(s, "reduce_scan")) r = reduce_scan_section();
    else if (!strcmp(s, "sort")) r = sort_section();
    else {
        printf("FAIL unknown section %s\n", s);
        return 2;
    }
    if (r == 0) printf("hipcub_check: %s ok\n", s);
    return r;
}
