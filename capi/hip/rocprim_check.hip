// rocPRIM's device-wide algorithms (Debian's librocprim-dev 5.3.3, header-only) run on the
// emulated gfx900, gfx906, gfx908 and gfx90a: capi/tests/hip.rs builds this file with hipcc
// for all four (one fat binary) and runs one section per process on each profile;
// kfd-emu/tests/hip.rs runs the same sections on Debian's ROCR.
// Each section runs its algorithm on several sizes (one element, a non-power-of-two inside
// one block, and several blocks with a partial last one) and compares every result with
// what the host computes from the same input. A section prints "rocprim_check: <section> ok"
// and exits 0, or prints "FAIL ..." and exits 1.
#include <hip/hip_runtime.h>
// Before rocPRIM: rocPRIM 7.2.4's texture_cache_iterator.hpp calls memset without including
// <cstring> itself.
#include <cstring>
#include <rocprim/rocprim.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <utility>
#include <vector>

#define CHECK(x)                                                                         \
    do {                                                                                 \
        hipError_t e_ = (x);                                                             \
        if (e_ != hipSuccess) {                                                          \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

// The sizes every algorithm runs on: 1, inside one block (not a power of two), a few blocks
// with a partial last one, and many blocks. `rocprim_check SECTION MAX` runs only the sizes up
// to MAX (the tests' runs on more targets than one keep to the smaller sizes of the slowest
// section).
static const unsigned ALL_SIZES[] = {1, 1000, 4097, 30011};
static std::vector<unsigned> SIZES(std::begin(ALL_SIZES), std::end(ALL_SIZES));

// Deterministic input: a 64-bit LCG (Knuth's MMIX constants), its high 32 bits.
struct Lcg {
    uint64_t s;
    explicit Lcg(uint64_t seed) : s(seed) {}
    uint32_t next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return uint32_t(s >> 32);
    }
};

template <class T>
static int to_device(T** d, const std::vector<T>& h) {
    CHECK(hipMalloc(d, std::max<size_t>(h.size(), 1) * sizeof(T)));
    CHECK(hipMemcpy(*d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice));
    return 0;
}

template <class T>
static int from_device(std::vector<T>& h, const T* d) {
    CHECK(hipMemcpy(h.data(), d, h.size() * sizeof(T), hipMemcpyDeviceToHost));
    return 0;
}

template <class T>
static int compare(const char* what, unsigned n, const std::vector<T>& got,
                   const std::vector<T>& want) {
    for (size_t i = 0; i < want.size(); i++) {
        if (got[i] != want[i]) {
            printf("FAIL %s n=%u: element %zu is %lld, the host computed %lld\n", what, n, i,
                   (long long)got[i], (long long)want[i]);
            return 1;
        }
    }
    return 0;
}

// rocprim::reduce: the sum of ints (wrapping as the host's uint32 sum does) and the maximum.
static int reduce_section() {
    for (unsigned n : SIZES) {
        Lcg r(n);
        std::vector<int> in(n);
        for (auto& v : in) v = int(r.next() % 2001) - 1000;
        int* din;
        int* dout;
        if (to_device(&din, in)) return 1;
        CHECK(hipMalloc(&dout, 2 * sizeof(int)));
        size_t bytes = 0;
        CHECK(rocprim::reduce(nullptr, bytes, din, dout, 0, n, rocprim::plus<int>()));
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::reduce(tmp, bytes, din, dout, 0, n, rocprim::plus<int>()));
        size_t bytes2 = 0;
        CHECK(rocprim::reduce(nullptr, bytes2, din, dout + 1, -2000, n, rocprim::maximum<int>()));
        if (bytes2 > bytes) {
            CHECK(hipFree(tmp));
            CHECK(hipMalloc(&tmp, bytes2));
            bytes = bytes2;
        }
        CHECK(rocprim::reduce(tmp, bytes, din, dout + 1, -2000, n, rocprim::maximum<int>()));
        std::vector<int> got(2);
        if (from_device(got, dout)) return 1;
        std::vector<int> want = {std::accumulate(in.begin(), in.end(), 0),
                                 *std::max_element(in.begin(), in.end())};
        if (compare("reduce (sum, max)", n, got, want)) return 1;
        CHECK(hipFree(tmp));
        CHECK(hipFree(din));
        CHECK(hipFree(dout));
    }
    return 0;
}

// rocprim::inclusive_scan and rocprim::exclusive_scan (initial value 7) of ints with plus.
static int scan_section() {
    for (unsigned n : SIZES) {
        Lcg r(n + 1);
        std::vector<int> in(n);
        for (auto& v : in) v = int(r.next() % 201) - 100;
        int* din;
        int* dout;
        if (to_device(&din, in)) return 1;
        CHECK(hipMalloc(&dout, n * sizeof(int)));
        size_t bytes = 0;
        CHECK(rocprim::inclusive_scan(nullptr, bytes, din, dout, n, rocprim::plus<int>()));
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::inclusive_scan(tmp, bytes, din, dout, n, rocprim::plus<int>()));
        std::vector<int> got(n), want(n);
        if (from_device(got, dout)) return 1;
        int acc = 0;
        for (unsigned i = 0; i < n; i++) want[i] = acc += in[i];
        if (compare("inclusive_scan", n, got, want)) return 1;
        CHECK(hipFree(tmp));

        bytes = 0;
        CHECK(rocprim::exclusive_scan(nullptr, bytes, din, dout, 7, n, rocprim::plus<int>()));
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::exclusive_scan(tmp, bytes, din, dout, 7, n, rocprim::plus<int>()));
        if (from_device(got, dout)) return 1;
        acc = 7;
        for (unsigned i = 0; i < n; i++) {
            want[i] = acc;
            acc += in[i];
        }
        if (compare("exclusive_scan", n, got, want)) return 1;
        CHECK(hipFree(tmp));
        CHECK(hipFree(din));
        CHECK(hipFree(dout));
    }
    return 0;
}

// rocprim::radix_sort_keys of unsigned ints (all 32 bits) and rocprim::radix_sort_pairs of
// int keys (negative ones too) with their input positions as values: the sort is stable, so
// the host's std::stable_sort gives the same values.
static int sort_section() {
    for (unsigned n : SIZES) {
        Lcg r(n + 2);
        std::vector<unsigned> keys(n);
        for (auto& v : keys) v = r.next();
        unsigned *dk, *dko;
        if (to_device(&dk, keys)) return 1;
        CHECK(hipMalloc(&dko, n * sizeof(unsigned)));
        size_t bytes = 0;
        CHECK(rocprim::radix_sort_keys(nullptr, bytes, dk, dko, n));
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::radix_sort_keys(tmp, bytes, dk, dko, n));
        std::vector<unsigned> got(n), want = keys;
        if (from_device(got, dko)) return 1;
        std::sort(want.begin(), want.end());
        if (compare("radix_sort_keys", n, got, want)) return 1;
        CHECK(hipFree(tmp));

        // Few distinct keys (-50..49), so the stability shows.
        std::vector<int> ikeys(n), vals(n);
        for (unsigned i = 0; i < n; i++) {
            ikeys[i] = int(r.next() % 100) - 50;
            vals[i] = int(i);
        }
        int *dik, *diko, *dv, *dvo;
        if (to_device(&dik, ikeys) || to_device(&dv, vals)) return 1;
        CHECK(hipMalloc(&diko, n * sizeof(int)));
        CHECK(hipMalloc(&dvo, n * sizeof(int)));
        bytes = 0;
        CHECK(rocprim::radix_sort_pairs(nullptr, bytes, dik, diko, dv, dvo, n));
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::radix_sort_pairs(tmp, bytes, dik, diko, dv, dvo, n));
        std::vector<std::pair<int, int>> pairs(n);
        for (unsigned i = 0; i < n; i++) pairs[i] = {ikeys[i], vals[i]};
        std::stable_sort(pairs.begin(), pairs.end(),
                         [](const std::pair<int, int>& a, const std::pair<int, int>& b) {
                             return a.first < b.first;
                         });
        std::vector<int> gk(n), gv(n), wk(n), wv(n);
        for (unsigned i = 0; i < n; i++) {
            wk[i] = pairs[i].first;
            wv[i] = pairs[i].second;
        }
        if (from_device(gk, diko) || from_device(gv, dvo)) return 1;
        if (compare("radix_sort_pairs keys", n, gk, wk)) return 1;
        if (compare("radix_sort_pairs values", n, gv, wv)) return 1;
        CHECK(hipFree(tmp));
        CHECK(hipFree(dk));
        CHECK(hipFree(dko));
        CHECK(hipFree(dik));
        CHECK(hipFree(diko));
        CHECK(hipFree(dv));
        CHECK(hipFree(dvo));
    }
    return 0;
}

// rocprim::histogram_even: 37 bins of equal width over [-100, 270) for ints in [-120, 300)
// (samples outside the range are not counted).
static int histogram_section() {
    const unsigned levels = 38;
    const int lower = -100, upper = 270;
    for (unsigned n : SIZES) {
        Lcg r(n + 3);
        std::vector<int> in(n);
        for (auto& v : in) v = int(r.next() % 420) - 120;
        int* din;
        unsigned* dh;
        if (to_device(&din, in)) return 1;
        CHECK(hipMalloc(&dh, (levels - 1) * sizeof(unsigned)));
        size_t bytes = 0;
        CHECK(rocprim::histogram_even(nullptr, bytes, din, n, dh, levels, lower, upper));
        void* tmp;
        CHECK(hipMalloc(&tmp, bytes));
        CHECK(rocprim::histogram_even(tmp, bytes, din, n, dh, levels, lower, upper));
        std::vector<unsigned> got(levels - 1), want(levels - 1, 0);
        if (from_device(got, dh)) return 1;
        for (int v : in) {
            if (v >= lower && v < upper) want[(v - lower) * (levels - 1) / (upper - lower)]++;
        }
        if (compare("histogram_even", n, got, want)) return 1;
        CHECK(hipFree(tmp));
        CHECK(hipFree(din));
        CHECK(hipFree(dh));
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const char* s = argv[1];
    if (argc > 2) {
        unsigned long max = strtoul(argv[2], nullptr, 10);
        SIZES.erase(std::remove_if(SIZES.begin(), SIZES.end(), [max](unsigned n) { return n > max; }),
                    SIZES.end());
        if (SIZES.empty()) {
            printf("FAIL no size up to %s\n", argv[2]);
            return 2;
        }
    }
    int r;
    if (!strcmp(s, "rocprim_reduce")) r = reduce_section();
    else if (!strcmp(s, "rocprim_scan")) r = scan_section();
    else if (!strcmp(s, "rocprim_sort")) r = sort_section();
    else if (!strcmp(s, "rocprim_histogram")) r = histogram_section();
    else {
        printf("FAIL unknown section %s\n", s);
        return 2;
    }
    if (r == 0) printf("rocprim_check: %s ok\n", s);
    return r;
}
