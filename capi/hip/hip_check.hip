// HIP programs run on hsa-rt's libhsa-runtime64 (capi/tests/hip.rs builds this file with
// hipcc for gfx900, gfx906, gfx908 and gfx90a in one fat binary and runs one section per
// process on the emulated device's profile of each).
// Every result is compared with what the host computes; a section prints
// "hip_check: <section> ok" and exits 0, or prints "FAIL ..." and exits 1.
#include <hip/hip_runtime.h>
#include <sched.h>
#include <hip/hiprtc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                         \
    do {                                                                                 \
        hipError_t e_ = (x);                                                             \
        if (e_ != hipSuccess) {                                                          \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void reverse_static(const int* in, int* out) {
    __shared__ int tile[256];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = tile[blockDim.x - 1 - t];
}

__global__ void reverse_dynamic(const int* in, int* out) {
    extern __shared__ int tile[];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = tile[blockDim.x - 1 - t];
}

__global__ void scale(float* p, float f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= f;
}

// scale, and each work-group's first thread folds the device's clock (clock64: s_memtime) at
// its start and end into t[0] (earliest start) and t[1] (latest end).
__global__ void scale_timed(float* p, float f, int n, unsigned long long* t) {
    unsigned long long start = clock64();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= f;
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicMin(&t[0], start);
        atomicMax(&t[1], (unsigned long long)clock64());
    }
}

__global__ void add_one(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

__global__ void add_into(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] += a[i];
}

__global__ void count(unsigned* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(c, 1u);
}

__global__ void hello(int v) {
    if (threadIdx.x == 0) printf("hip_check: hello from the device: %d\n", v);
}

// Three lanes print every kind of argument the hostcall carries: double, string (copied by
// the device), char, long long, alternate-form hex.
__global__ void hello_formats(double d, const char* str) {
    int t = threadIdx.x;
    if (t < 3)
        printf("hip_check: t=%d f=%.3f s=%s x=%#x c=%c ll=%lld\n", t, d * t, str, t * 255,
               'a' + t, (long long)t << 40);
}

static int vector_add_section() {
    const int n = 4096 + 17;  // a partial last block
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) { a[i] = i * 0.5f; b[i] = 1000.0f - i; }
    float *da, *db, *dc;
    CHECK(hipMalloc(&da, n * 4));
    CHECK(hipMalloc(&db, n * 4));
    CHECK(hipMalloc(&dc, n * 4));
    CHECK(hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(vector_add, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dc, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(c.data(), dc, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) { printf("FAIL vector_add c[%d] = %f\n", i, c[i]); return 1; }
    CHECK(hipFree(da));
    CHECK(hipFree(db));
    CHECK(hipFree(dc));
    return 0;
}

static int shared_section() {
    const int n = 1024;
    std::vector<int> h(n), r(n);
    for (int i = 0; i < n; i++) h[i] = i * 3 + 1;
    int *in, *out;
    CHECK(hipMalloc(&in, n * 4));
    CHECK(hipMalloc(&out, n * 4));
    CHECK(hipMemcpy(in, h.data(), n * 4, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(reverse_static, dim3(n / 256), dim3(256), 0, 0, in, out);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(r.data(), out, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (r[i] != h[i / 256 * 256 + 255 - i % 256]) { printf("FAIL static r[%d]\n", i); return 1; }
    hipLaunchKernelGGL(reverse_dynamic, dim3(n / 128), dim3(128), 128 * 4, 0, in, out);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(r.data(), out, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (r[i] != h[i / 128 * 128 + 127 - i % 128]) { printf("FAIL dynamic r[%d]\n", i); return 1; }
    return 0;
}

// Host to device and back for sizes from 1 byte to 64 MiB, at aligned and odd offsets;
// device to device (HIP's blit kernel, interpreted) up to 64 KiB + 1.
static int memcpy_section() {
    const size_t sizes[] = {1, 3, 4096, 65537, 1 << 20, 64 << 20};
    for (size_t s : sizes) {
        for (int off = 0; off < 2; off++) {
            std::vector<unsigned char> a(s + 1), b(s + 1, 0);
            for (size_t i = 0; i < s + 1; i++) a[i] = (unsigned char)(i * 7 + s);
            unsigned char *d1, *d2;
            CHECK(hipMalloc(&d1, s + 1));
            CHECK(hipMalloc(&d2, s + 1));
            CHECK(hipMemcpy(d1 + off, a.data() + off, s, hipMemcpyHostToDevice));
            unsigned char* from = d1;
            if (s <= 65537) {
                CHECK(hipMemcpy(d2 + off, d1 + off, s, hipMemcpyDeviceToDevice));
                from = d2;
            }
            CHECK(hipMemcpy(b.data() + off, from + off, s, hipMemcpyDeviceToHost));
            if (memcmp(a.data() + off, b.data() + off, s)) {
                printf("FAIL memcpy of %zu bytes at offset %d\n", s, off);
                return 1;
            }
            CHECK(hipFree(d1));
            CHECK(hipFree(d2));
        }
    }
    std::vector<int> x(1000), y(1000);
    for (int i = 0; i < 1000; i++) x[i] = i * i;
    CHECK(hipMemcpy(y.data(), x.data(), 4000, hipMemcpyHostToHost));
    if (x != y) { printf("FAIL host to host\n"); return 1; }

    // hipMemcpyDefault: HIP tells the direction from the pointers (unified addressing), host to
    // device, device to device, device to host and host to host.
    const size_t m = 100003;
    std::vector<unsigned char> p(m), q(m, 0), r(m, 0);
    for (size_t i = 0; i < m; i++) p[i] = (unsigned char)(i * 13 + 5);
    unsigned char *e1, *e2;
    CHECK(hipMalloc(&e1, m));
    CHECK(hipMalloc(&e2, m));
    CHECK(hipMemcpy(e1, p.data(), m, hipMemcpyDefault));
    CHECK(hipMemcpy(e2, e1, m, hipMemcpyDefault));
    CHECK(hipMemcpy(q.data(), e2, m, hipMemcpyDefault));
    CHECK(hipMemcpy(r.data(), q.data(), m, hipMemcpyDefault));
    if (memcmp(p.data(), r.data(), m)) { printf("FAIL hipMemcpyDefault\n"); return 1; }

    // hipMemcpyAsync of every direction on one stream, between pinned host buffers and device
    // memory, ordered by the stream alone.
    hipStream_t st;
    CHECK(hipStreamCreate(&st));
    unsigned char *hp, *hq;
    CHECK(hipHostMalloc(&hp, m));
    CHECK(hipHostMalloc(&hq, m));
    for (size_t i = 0; i < m; i++) { hp[i] = (unsigned char)(i * 29 + 1); hq[i] = 0; }
    CHECK(hipMemsetAsync(e1, 0, m, st));
    CHECK(hipMemsetAsync(e2, 0, m, st));
    CHECK(hipMemcpyAsync(e1, hp, m, hipMemcpyHostToDevice, st));
    CHECK(hipMemcpyAsync(e2 + 1, e1, m - 1, hipMemcpyDeviceToDevice, st));
    CHECK(hipMemcpyAsync(hq + 1, e2 + 1, m - 1, hipMemcpyDeviceToHost, st));
    CHECK(hipStreamSynchronize(st));
    if (hq[0] != 0 || memcmp(hp, hq + 1, m - 1)) { printf("FAIL hipMemcpyAsync\n"); return 1; }

    // hipMemcpy2D: a 61 x 37 byte rectangle at row 2, column 5 of a host array of pitch 100
    // into a device array of pitch 128 at row 1, column 7; from there device to device
    // (hipMemcpy2DAsync) into one of pitch 192; then back into a host array of pitch 80,
    // where every byte outside the rectangle stays untouched.
    const size_t w = 61, hgt = 37, spitch = 100, hpitch = 80;
    std::vector<unsigned char> src(spitch * 40), dst(hpitch * hgt, 0xee);
    for (size_t i = 0; i < src.size(); i++) src[i] = (unsigned char)(i * 7 + i / 100);
    // (Plain allocations with pitches of our own here; hipMallocPitch: the pitched section.)
    unsigned char *dp, *dq;
    const size_t pitch = 128, pitch2 = 192;
    CHECK(hipMalloc(&dp, pitch * 40));
    CHECK(hipMalloc(&dq, pitch2 * 40));
    const unsigned char* at = src.data() + 2 * spitch + 5;
    CHECK(hipMemcpy2D(dp + pitch + 7, pitch, at, spitch, w, hgt, hipMemcpyHostToDevice));
    CHECK(hipMemcpy2DAsync(dq, pitch2, dp + pitch + 7, pitch, w, hgt, hipMemcpyDeviceToDevice, st));
    CHECK(hipStreamSynchronize(st));
    CHECK(hipMemcpy2D(dst.data(), hpitch, dq, pitch2, w, hgt, hipMemcpyDeviceToHost));
    for (size_t row = 0; row < hgt; row++)
        for (size_t col = 0; col < hpitch; col++) {
            unsigned char want = col < w ? at[row * spitch + col] : 0xee;
            if (dst[row * hpitch + col] != want) {
                printf("FAIL hipMemcpy2D row %zu column %zu: %x, want %x\n", row, col,
                       dst[row * hpitch + col], want);
                return 1;
            }
        }
    CHECK(hipStreamDestroy(st));
    CHECK(hipHostFree(hp));
    CHECK(hipHostFree(hq));
    CHECK(hipFree(e1));
    CHECK(hipFree(e2));
    CHECK(hipFree(dp));
    CHECK(hipFree(dq));
    return 0;
}

static int memset_section() {
    const size_t n = 1 << 16;
    unsigned char* d;
    CHECK(hipMalloc(&d, n * 4));
    std::vector<unsigned char> h(n * 4);
    CHECK(hipMemset(d, 0xab, n * 4));
    CHECK(hipMemcpy(h.data(), d, n * 4, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n * 4; i++)
        if (h[i] != 0xab) { printf("FAIL memset8 [%zu] = %x\n", i, h[i]); return 1; }
    CHECK(hipMemsetD16((hipDeviceptr_t)d, 0x1234, n * 2));
    CHECK(hipMemcpy(h.data(), d, n * 4, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n * 2; i++)
        if (((unsigned short*)h.data())[i] != 0x1234) { printf("FAIL memset16 [%zu]\n", i); return 1; }
    CHECK(hipMemsetD32((hipDeviceptr_t)d, 0x89abcdef, n));
    CHECK(hipMemcpy(h.data(), d, n * 4, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        if (((unsigned*)h.data())[i] != 0x89abcdefu) { printf("FAIL memset32 [%zu]\n", i); return 1; }

    // Every width again, at unaligned starts and odd counts, synchronous and async: each
    // writes exactly its range over a known background.
    hipStream_t st;
    CHECK(hipStreamCreate(&st));
    std::vector<unsigned char> want(n * 4, 0x5a);
    CHECK(hipMemset(d, 0x5a, n * 4));
    CHECK(hipMemsetD8((hipDeviceptr_t)(d + 1), 0xc3, 1001));
    memset(&want[1], 0xc3, 1001);
    // (A range inside one 8-byte-aligned word that does not start at its first byte is left
    // out: HIP 5.2's fill kernel then writes far past it until it faults, on ROCR as on
    // hsa-rt.)
    CHECK(hipMemsetAsync(d + 2003, 0x17, 7, st));
    memset(&want[2003], 0x17, 7);
    CHECK(hipMemsetD8Async((hipDeviceptr_t)(d + 3001), 0x71, 65537, st));
    memset(&want[3001], 0x71, 65537);
    CHECK(hipMemsetD16Async((hipDeviceptr_t)(d + 70002), 0xbeef, 999, st));
    for (size_t i = 0; i < 999; i++) { want[70002 + 2 * i] = 0xef; want[70003 + 2 * i] = 0xbe; }
    CHECK(hipMemsetD32Async((hipDeviceptr_t)(d + 80004), 0x01020304, 12345, st));
    for (size_t i = 0; i < 12345; i++)
        for (int k = 0; k < 4; k++) want[80004 + 4 * i + k] = (unsigned char)(4 - k);
    CHECK(hipStreamSynchronize(st));
    CHECK(hipMemcpy(h.data(), d, n * 4, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n * 4; i++)
        if (h[i] != want[i]) {
            printf("FAIL memset ranges [%zu] = %x, want %x\n", i, h[i], want[i]);
            return 1;
        }
    CHECK(hipStreamDestroy(st));
    CHECK(hipFree(d));
    return 0;
}

// Two streams ordered by an event, async copies, and the elapsed time of a kernel between two
// events: it must cover the span of the device's clock (clock64, at
// hipDeviceProp_t::clockInstructionRate kHz) from the kernel's earliest work-group start to its
// latest end, and lie within the host's time around the whole run.
static int streams_section() {
    const int n = 1 << 16;
    float* d;
    CHECK(hipMalloc(&d, n * 4));
    unsigned long long* dt;
    CHECK(hipMalloc(&dt, 16));
    unsigned long long t[2] = {~0ull, 0};
    CHECK(hipMemcpy(dt, t, 16, hipMemcpyHostToDevice));
    std::vector<float> h(n, 2.0f);
    hipStream_t s1, s2;
    CHECK(hipStreamCreate(&s1));
    CHECK(hipStreamCreate(&s2));
    hipEvent_t e0, e1;
    CHECK(hipEventCreate(&e0));
    CHECK(hipEventCreate(&e1));
    auto t0 = std::chrono::steady_clock::now();
    CHECK(hipMemcpyAsync(d, h.data(), n * 4, hipMemcpyHostToDevice, s1));
    CHECK(hipEventRecord(e0, s1));
    hipLaunchKernelGGL(scale_timed, dim3(n / 256), dim3(256), 0, s1, d, 3.0f, n, dt);
    CHECK(hipEventRecord(e1, s1));
    CHECK(hipStreamWaitEvent(s2, e1, 0));
    hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, s2, d, 0.5f, n);
    CHECK(hipMemcpyAsync(h.data(), d, n * 4, hipMemcpyDeviceToHost, s2));
    CHECK(hipStreamSynchronize(s2));
    double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int i = 0; i < n; i++)
        if (h[i] != 3.0f) { printf("FAIL streams h[%d] = %f\n", i, h[i]); return 1; }
    CHECK(hipMemcpy(t, dt, 16, hipMemcpyDeviceToHost));
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, 0));
    int rate_khz = prop.clockInstructionRate;
    if (rate_khz <= 0 || t[0] == ~0ull || t[1] < t[0]) {
        printf("FAIL clock rate %d kHz, kernel clock %llu to %llu\n", rate_khz, t[0], t[1]);
        return 1;
    }
    double kernel_ms = (double)(t[1] - t[0]) / rate_khz;
    float ms = -1;
    CHECK(hipEventElapsedTime(&ms, e0, e1));
    // float ms: allow its rounding (2^-20 relative) below the kernel's span.
    if (!(ms > 0 && ms >= kernel_ms * (1 - 1e-6) && ms <= wall_ms)) {
        printf("FAIL elapsed %f ms outside [%f (the kernel's clock span), %f (host)]\n", ms,
               kernel_ms, wall_ms);
        return 1;
    }
    printf("hip_check: elapsed %f ms, kernel %f ms (%d kHz), host %f ms\n", ms, kernel_ms,
           rate_khz, wall_ms);
    CHECK(hipStreamDestroy(s1));
    CHECK(hipStreamDestroy(s2));
    return 0;
}

// Kernels on pinned host memory: hipHostMalloc, and malloc'd memory (not page-aligned)
// registered with hipHostRegister and used through its device pointer.
static int hostmem_section() {
    const int n = 4096;
    int* h;
    CHECK(hipHostMalloc(&h, n * 4));
    for (int i = 0; i < n; i++) h[i] = i;
    hipLaunchKernelGGL(add_one, dim3(n / 256), dim3(256), 0, 0, h, n);
    CHECK(hipDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (h[i] != i + 1) { printf("FAIL hipHostMalloc h[%d] = %d\n", i, h[i]); return 1; }
    CHECK(hipHostFree(h));
    int* m = (int*)malloc(n * 4 + 4096);
    int* r = m + 3;
    for (int i = 0; i < n; i++) r[i] = 2 * i;
    CHECK(hipHostRegister(r, n * 4, hipHostRegisterDefault));
    int* dp;
    CHECK(hipHostGetDevicePointer((void**)&dp, r, 0));
    hipLaunchKernelGGL(add_one, dim3(n / 256), dim3(256), 0, 0, dp, n);
    CHECK(hipDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (r[i] != 2 * i + 1) { printf("FAIL hipHostRegister r[%d] = %d\n", i, r[i]); return 1; }
    CHECK(hipHostUnregister(r));
    free(m);
    return 0;
}

// __device__ variables: HIP finds them among the code object's symbols (the loader's
// variable symbols: address and size) for hipMemcpyToSymbol and friends.
__device__ int sym_table[300];
__device__ int sym_bias = 11;

__global__ void use_symbols(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = sym_table[i] * 2 + sym_bias;
        sym_table[i] = -i;
    }
}

// hipMemcpyToSymbol (and its async form at an offset), a kernel using the variables,
// hipMemcpyFromSymbol, hipGetSymbolAddress and hipGetSymbolSize.
static int symbols_section() {
    const int n = 300;
    size_t size = 0;
    CHECK(hipGetSymbolSize(&size, HIP_SYMBOL(sym_table)));
    if (size != n * sizeof(int)) { printf("FAIL hipGetSymbolSize %zu\n", size); return 1; }
    int bias = 0;
    CHECK(hipMemcpyFromSymbol(&bias, HIP_SYMBOL(sym_bias), sizeof bias));
    if (bias != 11) { printf("FAIL sym_bias initial value %d\n", bias); return 1; }
    std::vector<int> t(n), out(n), back(n);
    for (int i = 0; i < n; i++) t[i] = i * i - 50;
    CHECK(hipMemcpyToSymbol(HIP_SYMBOL(sym_table), t.data(), 100 * sizeof(int)));
    hipStream_t st;
    CHECK(hipStreamCreate(&st));
    CHECK(hipMemcpyToSymbolAsync(HIP_SYMBOL(sym_table), t.data() + 100, 200 * sizeof(int),
                                 100 * sizeof(int), hipMemcpyHostToDevice, st));
    CHECK(hipStreamSynchronize(st));
    bias = -3;
    CHECK(hipMemcpyToSymbol(HIP_SYMBOL(sym_bias), &bias, sizeof bias));
    int* d;
    CHECK(hipMalloc(&d, n * sizeof(int)));
    hipLaunchKernelGGL(use_symbols, dim3((n + 63) / 64), dim3(64), 0, 0, d, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(out.data(), d, n * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpyFromSymbol(back.data(), HIP_SYMBOL(sym_table), n * sizeof(int)));
    for (int i = 0; i < n; i++)
        if (out[i] != t[i] * 2 - 3 || back[i] != -i) {
            printf("FAIL symbols [%d]: %d and %d\n", i, out[i], back[i]);
            return 1;
        }
    int* addr = nullptr;
    CHECK(hipGetSymbolAddress((void**)&addr, HIP_SYMBOL(sym_table)));
    int v = 0;
    CHECK(hipMemcpy(&v, addr + 7, sizeof v, hipMemcpyDeviceToHost));
    if (v != -7) { printf("FAIL hipGetSymbolAddress: sym_table[7] read %d\n", v); return 1; }
    CHECK(hipStreamDestroy(st));
    CHECK(hipFree(d));
    return 0;
}

static int callback_total = 0;
static void stream_callback(hipStream_t, hipError_t status, void* arg) {
    if (status == hipSuccess) callback_total += *(int*)arg;
}

// Stream callbacks run after the work before them (HIP waits for them with an async handler).
static int callbacks_section() {
    hipStream_t s;
    CHECK(hipStreamCreate(&s));
    int* d;
    CHECK(hipMalloc(&d, 1024 * 4));
    int one = 1, ten = 10;
    hipLaunchKernelGGL(add_one, dim3(4), dim3(256), 0, s, d, 1024);
    CHECK(hipStreamAddCallback(s, stream_callback, &one, 0));
    CHECK(hipStreamAddCallback(s, stream_callback, &ten, 0));
    CHECK(hipStreamSynchronize(s));
    if (callback_total != 11) { printf("FAIL callbacks total %d\n", callback_total); return 1; }
    return 0;
}

// IEEE division (v_div_scale/fmas/fixup) and device-libs math (range reduction with
// v_trig_preop_f64, v_frexp, v_ldexp, ...) on values spanning the ranges.
__global__ void math_f32(const float* a, const float* b, float* o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    float* r = o + i * 8;
    r[0] = x / y; r[1] = sinf(x); r[2] = cosf(x); r[3] = expf(y); r[4] = logf(fabsf(x));
    r[5] = powf(fabsf(x), 1.7f); r[6] = atan2f(x, y); r[7] = sqrtf(fabsf(x));
}

__global__ void math_f64(const double* a, const double* b, double* o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    double* r = o + i * 8;
    r[0] = x / y; r[1] = sin(x); r[2] = cos(x); r[3] = exp(y); r[4] = log(fabs(x));
    r[5] = pow(fabs(x), 1.7); r[6] = atan2(x, y); r[7] = sqrt(fabs(x));
}

// Integer division and remainder, 32 and 64 bits, signed and unsigned (the compiler's
// v_rcp_iflag_f32 / v_mad_u64_u32 expansions).
__global__ void int_div(const int* a, const long long* b, long long* o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = a[i + 1] | 1;
    long long p = b[i], q = b[i + 1] | 1;
    long long* r = o + i * 6;
    r[0] = x / y; r[1] = x % y; r[2] = p / q; r[3] = p % q;
    r[4] = (long long)((unsigned long long)p / (unsigned long long)q); r[5] = (unsigned)x / (unsigned)y;
}

// Distance in units in the last place of `want` (0 when both are NaN or equal).
static double ulps(double got, double want, int mant_bits) {
    if (std::isnan(got) && std::isnan(want)) return 0;
    if (got == want) return 0;
    if (std::isinf(want) || std::isnan(got) || std::isnan(want)) return 1e30;
    int e = want == 0 ? -1074 : std::max(std::ilogb(want), mant_bits == 23 ? -126 : -1022);
    return std::fabs(got - want) / std::ldexp(1.0, e - mant_bits);
}

static int math_section() {
    const int n = 1000;
    std::vector<float> a(n), b(n), of(n * 8);
    std::vector<double> c(n), d(n), od(n * 8);
    unsigned s = 12345;
    auto rnd = [&]() { s = s * 1103515245u + 12345u; return s >> 8; };
    for (int i = 0; i < n; i++) {
        // Mantissas with every bit, exponents over most of the range (division needs the
        // scaling cases), and ordinary arguments for the functions.
        float m = 1.0f + (rnd() % 1000000) / 1e6f;
        a[i] = (i % 2 ? -m : m) * std::ldexp(1.0f, (int)(rnd() % 200) - 100);
        b[i] = (1.0f + (rnd() % 1000) / 1e3f) * std::ldexp(1.0f, (int)(rnd() % 60) - 30);
        c[i] = (i % 3 ? -1.0 : 1.0) * (1.0 + (rnd() % 1000000) / 1e6) * std::ldexp(1.0, (int)(rnd() % 400) - 200);
        d[i] = (1.0 + (rnd() % 1000) / 1e3) * std::ldexp(1.0, (int)(rnd() % 20) - 10);
    }
    float *da, *db, *dof;
    double *dc, *dd, *dod;
    CHECK(hipMalloc(&da, n * 4)); CHECK(hipMalloc(&db, n * 4)); CHECK(hipMalloc(&dof, n * 32));
    CHECK(hipMalloc(&dc, n * 8)); CHECK(hipMalloc(&dd, n * 8)); CHECK(hipMalloc(&dod, n * 64));
    CHECK(hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dc, c.data(), n * 8, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dd, d.data(), n * 8, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(math_f32, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dof, n);
    hipLaunchKernelGGL(math_f64, dim3((n + 255) / 256), dim3(256), 0, 0, dc, dd, dod, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(of.data(), dof, n * 32, hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(od.data(), dod, n * 64, hipMemcpyDeviceToHost));
    // Division and sqrt must be the host's IEEE results bit for bit; the functions within 2
    // ULP (pow and atan2: 4) of the host's double (f32) or long double (f64) result: loose
    // enough for device-libs' own error, tight enough for any wrong instruction.
    const double lim32[8] = {0, 2, 2, 2, 2, 4, 4, 0}, lim64[8] = {0, 2, 2, 2, 2, 4, 4, 0};
    const char* names[8] = {"div", "sin", "cos", "exp", "log", "pow", "atan2", "sqrt"};
    for (int i = 0; i < n; i++) {
        float x = a[i], y = b[i];
        double w32[8] = {x / y, sin((double)x), cos((double)x), exp((double)y), log(fabs((double)x)),
                         pow(fabs((double)x), (double)1.7f), atan2((double)x, (double)y), sqrt(fabs((double)x))};
        long double X = c[i], Y = d[i];
        long double w64[8] = {c[i] / d[i], sinl(X), cosl(X), expl(Y), logl(fabsl(X)), powl(fabsl(X), (long double)1.7),
                              atan2l(X, Y), sqrtl(fabsl(X))};
        for (int k = 0; k < 8; k++) {
            float g = of[i * 8 + k], want = (float)w32[k];
            double u = k == 0 || k == 7 ? (memcmp(&g, &want, 4) ? 1e30 : 0)
                       : g == want ? 0 : ulps(g, w32[k], 23);
            if (u > lim32[k]) {
                printf("FAIL math f32 %s(%.9g, %.9g) = %.9g, host %.9g (%.1f ulp)\n", names[k], x, y, g, want, u);
                return 1;
            }
            double gd = od[i * 8 + k], wd = (double)w64[k];
            double ud = k == 0 || k == 7 ? (memcmp(&gd, &wd, 8) ? 1e30 : 0)
                        : gd == wd ? 0 : ulps(gd, (double)w64[k], 52);
            if (ud > lim64[k]) {
                printf("FAIL math f64 %s(%.17g, %.17g) = %.17g, host %.17g (%.1f ulp)\n", names[k], c[i], d[i], gd, wd, ud);
                return 1;
            }
        }
    }
    // Integer division over random values of every magnitude.
    std::vector<int> ia(n + 1);
    std::vector<long long> lb(n + 1), io(n * 6);
    for (int i = 0; i <= n; i++) {
        ia[i] = (int)((rnd() << 8) ^ rnd()) >> (rnd() % 31);
        lb[i] = (long long)(((unsigned long long)rnd() << 40) ^ ((unsigned long long)rnd() << 16) ^ rnd()) >> (rnd() % 63);
    }
    int* dia;
    long long *dlb, *dio;
    CHECK(hipMalloc(&dia, (n + 1) * 4)); CHECK(hipMalloc(&dlb, (n + 1) * 8)); CHECK(hipMalloc(&dio, n * 48));
    CHECK(hipMemcpy(dia, ia.data(), (n + 1) * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dlb, lb.data(), (n + 1) * 8, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(int_div, dim3((n + 255) / 256), dim3(256), 0, 0, dia, dlb, dio, n);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(io.data(), dio, n * 48, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int x = ia[i], y = ia[i + 1] | 1;
        long long p = lb[i], q = lb[i + 1] | 1;
        long long w[6] = {x / y, x % y, p / q, p % q, (long long)((unsigned long long)p / (unsigned long long)q),
                          (unsigned)x / (unsigned)y};
        for (int k = 0; k < 6; k++)
            if (io[i * 6 + k] != w[k]) {
                printf("FAIL math int_div[%d] case %d: %lld, host %lld\n", i, k, io[i * 6 + k], w[k]);
                return 1;
            }
    }
    CHECK(hipFree(dia)); CHECK(hipFree(dlb)); CHECK(hipFree(dio));
    CHECK(hipFree(da)); CHECK(hipFree(db)); CHECK(hipFree(dof));
    CHECK(hipFree(dc)); CHECK(hipFree(dd)); CHECK(hipFree(dod));
    return 0;
}

static int atomics_section() {
    unsigned* c;
    CHECK(hipMalloc(&c, 4));
    unsigned zero = 0, v = 0;
    CHECK(hipMemcpy(c, &zero, 4, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(count, dim3(16), dim3(256), 0, 0, c, 4000);
    CHECK(hipMemcpy(&v, c, 4, hipMemcpyDeviceToHost));
    if (v != 4000) { printf("FAIL atomicAdd counted %u\n", v); return 1; }
    return 0;
}

static int printf_section() {
    hipLaunchKernelGGL(hello, dim3(1), dim3(64), 0, 0, 42);
    CHECK(hipDeviceSynchronize());
    char* str;
    CHECK(hipMalloc(&str, 16));
    CHECK(hipMemcpy(str, "hello", 6, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(hello_formats, dim3(1), dim3(64), 0, 0, 1.25, (const char*)str);
    CHECK(hipDeviceSynchronize());
    CHECK(hipFree(str));
    return 0;
}

static int module_section(const char* path) {
    hipModule_t m;
    CHECK(hipModuleLoad(&m, path));
    hipFunction_t f;
    CHECK(hipModuleGetFunction(&f, m, "triple"));
    const int n = 1000;
    std::vector<int> h(n);
    for (int i = 0; i < n; i++) h[i] = i;
    int* d;
    CHECK(hipMalloc(&d, n * 4));
    CHECK(hipMemcpy(d, h.data(), n * 4, hipMemcpyHostToDevice));
    struct { int* p; int n; } args = {d, n};
    size_t size = sizeof(args);
    void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &args, HIP_LAUNCH_PARAM_BUFFER_SIZE,
                      &size, HIP_LAUNCH_PARAM_END};
    CHECK(hipModuleLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, 0, nullptr, config));
    CHECK(hipMemcpy(h.data(), d, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (h[i] != 3 * i) { printf("FAIL module h[%d] = %d\n", i, h[i]); return 1; }
    CHECK(hipModuleUnload(m));
    return 0;
}

#define RTC_CHECK(x)                                                                   \
    do {                                                                               \
        hiprtcResult r_ = (x);                                                         \
        if (r_ != HIPRTC_SUCCESS) {                                                    \
            printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, hiprtcGetErrorString(r_)); \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

// hipRTC: a kernel compiled from a string at run time (hiprtcCompileProgram, through comgr)
// for the device's processor (gcnArchName up to its first ':', e.g. gfx906), its code object loaded with hipModuleLoadData and launched with
// hipModuleLaunchKernel's kernelParams.
static const char RTC_SOURCE[] =
    "extern \"C\" __global__ void axpy_rtc(int a, const int* x, int* y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static int hiprtc_section() {
    hiprtcProgram prog;
    RTC_CHECK(hiprtcCreateProgram(&prog, RTC_SOURCE, "axpy_rtc.hip", 0, nullptr, nullptr));
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, 0));
    std::string arch = prop.gcnArchName;
    std::string option = "--gpu-architecture=" + arch.substr(0, arch.find(':'));
    const char* options[] = {option.c_str()};
    hiprtcResult built = hiprtcCompileProgram(prog, 1, options);
    if (built != HIPRTC_SUCCESS) {
        size_t log_size = 0;
        hiprtcGetProgramLogSize(prog, &log_size);
        std::vector<char> log(log_size + 1);
        hiprtcGetProgramLog(prog, log.data());
        printf("FAIL hiprtcCompileProgram: %s\n%s\n", hiprtcGetErrorString(built), log.data());
        return 1;
    }
    size_t code_size = 0;
    RTC_CHECK(hiprtcGetCodeSize(prog, &code_size));
    std::vector<char> code(code_size);
    RTC_CHECK(hiprtcGetCode(prog, code.data()));
    RTC_CHECK(hiprtcDestroyProgram(&prog));
    hipModule_t m;
    CHECK(hipModuleLoadData(&m, code.data()));
    hipFunction_t f;
    CHECK(hipModuleGetFunction(&f, m, "axpy_rtc"));
    const int n = 1000 + 3;  // a partial last block
    std::vector<int> x(n), y(n);
    for (int i = 0; i < n; i++) { x[i] = i; y[i] = 7 - 2 * i; }
    int *dx, *dy;
    CHECK(hipMalloc(&dx, n * 4));
    CHECK(hipMalloc(&dy, n * 4));
    CHECK(hipMemcpy(dx, x.data(), n * 4, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(dy, y.data(), n * 4, hipMemcpyHostToDevice));
    int a = -5, nn = n;
    void* params[] = {&a, &dx, &dy, &nn};
    CHECK(hipModuleLaunchKernel(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, params, nullptr));
    std::vector<int> r(n);
    CHECK(hipMemcpy(r.data(), dy, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (r[i] != a * x[i] + y[i]) { printf("FAIL hiprtc r[%d] = %d\n", i, r[i]); return 1; }
    CHECK(hipModuleUnload(m));
    return 0;
}

// The 8-GPU MI210 capture: every device is there, work on device 3 is copied to device 7 with
// hipMemcpyPeer and used there.
static int multigpu_section() {
    int count = 0;
    CHECK(hipGetDeviceCount(&count));
    if (count != 8) { printf("FAIL hipGetDeviceCount %d\n", count); return 1; }
    const int n = 4096;
    std::vector<int> h(n), r(n);
    for (int i = 0; i < n; i++) h[i] = i;
    int src = 3, dst = 7, *a, *b;
    CHECK(hipSetDevice(src));
    CHECK(hipMalloc(&a, n * 4));
    CHECK(hipMemcpy(a, h.data(), n * 4, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(add_into, dim3(n / 256), dim3(256), 0, 0, a, a, n);
    CHECK(hipDeviceSynchronize());
    CHECK(hipSetDevice(dst));
    CHECK(hipMalloc(&b, n * 4));
    CHECK(hipMemcpyPeer(b, dst, a, src, n * 4));
    hipLaunchKernelGGL(add_into, dim3(n / 256), dim3(256), 0, 0, b, b, n);
    CHECK(hipMemcpy(r.data(), b, n * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (r[i] != 4 * i) { printf("FAIL multigpu r[%d] = %d\n", i, r[i]); return 1; }
    return 0;
}

// A block of 2048 threads: HIP refuses the launch itself.
static int badlaunch_section() {
    int* d;
    CHECK(hipMalloc(&d, 4));
    hipLaunchKernelGGL(add_one, dim3(1), dim3(2048), 0, 0, d, 1);
    hipError_t e = hipGetLastError();
    if (e != hipErrorInvalidConfiguration) {
        printf("FAIL launch of 2048 threads: %s\n", hipGetErrorName(e));
        return 1;
    }
    return 0;
}

// A kernel reading address 0x1000: the queue stops with a memory fault, which HIP 5.2 reports
// by aborting in its queue callback (this section never returns normally).
static int fault_section() {
    hipLaunchKernelGGL(add_one, dim3(1), dim3(64), 0, 0, (int*)0x1000, 64);
    hipError_t e = hipDeviceSynchronize();
    printf("FAIL the faulting kernel returned %s\n", hipGetErrorName(e));
    return 1;
}

__global__ void empty() {}

static double now_ns() {
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// B8 (BENCHMARKS.md), not a test: an empty kernel (one work-group of 64) launched and waited
// for with hipStreamSynchronize, `n` times after 10 untimed; five batches of n / 5, and the
// median batch's time per launch is printed as "hip_check: launch_loop N launches, X ns per
// launch (batches: ...)".
// Placement as in dispatch_round_trip.c: on CPU 1 while HIP and the runtime start their
// threads (queues, the emulated command processor), then on CPU 0 for the timed loop, when CPUs
// 0 and 1 are both allowed.
static void pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)sched_setaffinity(0, sizeof one, &one);
}

static bool two_cpus() {
    cpu_set_t allowed;
    return sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_ISSET(0, &allowed) &&
           CPU_ISSET(1, &allowed);
}

static int launch_loop_section(int n) {
    if (n < 5) { printf("FAIL launch_loop needs at least 5 launches\n"); return 1; }
    bool pinned = two_cpus();
    if (pinned) pin_to(1);
    for (int i = 0; i < 10; i++) {
        hipLaunchKernelGGL(empty, dim3(1), dim3(64), 0, 0);
        CHECK(hipStreamSynchronize(0));
    }
    if (pinned) pin_to(0);
    const int batches = 5, per = n / batches;
    double t[batches];
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < per; i++) {
            hipLaunchKernelGGL(empty, dim3(1), dim3(64), 0, 0);
            CHECK(hipStreamSynchronize(0));
        }
        t[b] = (now_ns() - t0) / per;
    }
    double sorted[batches];
    memcpy(sorted, t, sizeof t);
    std::sort(sorted, sorted + batches);
    printf("hip_check: launch_loop %d launches, %.0f ns per launch (batches:", per * batches,
           sorted[batches / 2]);
    for (int b = 0; b < batches; b++) printf(" %.0f", t[b]);
    printf(")\n");
    return 0;
}

// Writes row * 1000 + column into each float of a width x height array whose rows are
// `pitch` bytes apart (hipMallocPitch's layout).
__global__ void fill_pitched(float* p, size_t pitch, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < width && y < height) {
        float* row = (float*)((char*)p + y * pitch);
        row[x] = (float)(y * 1000 + x);
    }
}

// Pitched allocations, which HIP 5.2 makes only on a device with image support
// (hipDeviceAttributeImageSupport): hipMallocPitch pads rows to the device's 256-byte image
// pitch alignment; a kernel fills one through its pitch; hipMalloc3D, hipMemset3D and
// hipMemcpy3D move a box in and out of a pitched 3D array.
static int pitched_section() {
    int images = 0;
    CHECK(hipDeviceGetAttribute(&images, hipDeviceAttributeImageSupport, 0));
    if (images != 1) { printf("FAIL image support %d, want 1\n", images); return 1; }

    const int width = 75, height = 20;
    float* p;
    size_t pitch = 0;
    CHECK(hipMallocPitch((void**)&p, &pitch, width * sizeof(float), height));
    if (pitch != 512) { printf("FAIL hipMallocPitch pitch %zu, want 512\n", pitch); return 1; }
    hipLaunchKernelGGL(fill_pitched, dim3(2, height), dim3(64), 0, 0, p, pitch, width, height);
    CHECK(hipGetLastError());
    std::vector<float> h(width * height, -1.0f);
    CHECK(hipMemcpy2D(h.data(), width * sizeof(float), p, pitch, width * sizeof(float), height,
                      hipMemcpyDeviceToHost));
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++)
            if (h[y * width + x] != (float)(y * 1000 + x)) {
                printf("FAIL pitched (%d, %d): %f\n", x, y, h[y * width + x]);
                return 1;
            }
    CHECK(hipFree(p));

    // A 100-byte x 7 x 5 array: rows padded to 256 bytes.
    hipExtent ext = make_hipExtent(100, 7, 5);
    hipPitchedPtr pp;
    CHECK(hipMalloc3D(&pp, ext));
    if (pp.pitch != 256 || pp.xsize != 100 || pp.ysize != 7) {
        printf("FAIL hipMalloc3D pitch %zu xsize %zu ysize %zu\n", pp.pitch, pp.xsize, pp.ysize);
        return 1;
    }
    CHECK(hipMemset3D(pp, 0x5a, ext));
    // Host box of 100 x 7 x 5 bytes, tightly packed; copy a 40 x 3 x 2 box of it to
    // (10, 2, 1) in the device array, then the whole array back.
    std::vector<unsigned char> box(100 * 7 * 5), back(100 * 7 * 5, 0);
    for (size_t i = 0; i < box.size(); i++) box[i] = (unsigned char)(i * 13 + 1);
    hipMemcpy3DParms in = {};
    in.srcPtr = make_hipPitchedPtr(box.data(), 100, 100, 7);
    in.srcPos = make_hipPos(3, 1, 2);
    in.dstPtr = pp;
    in.dstPos = make_hipPos(10, 2, 1);
    in.extent = make_hipExtent(40, 3, 2);
    in.kind = hipMemcpyHostToDevice;
    CHECK(hipMemcpy3D(&in));
    hipMemcpy3DParms out = {};
    out.srcPtr = pp;
    out.dstPtr = make_hipPitchedPtr(back.data(), 100, 100, 7);
    out.extent = ext;
    out.kind = hipMemcpyDeviceToHost;
    CHECK(hipMemcpy3D(&out));
    for (size_t z = 0; z < 5; z++)
        for (size_t y = 0; y < 7; y++)
            for (size_t x = 0; x < 100; x++) {
                bool inside = x >= 10 && x < 50 && y >= 2 && y < 5 && z >= 1 && z < 3;
                unsigned char want =
                    inside ? box[(z - 1 + 2) * 700 + (y - 2 + 1) * 100 + (x - 10 + 3)] : 0x5a;
                unsigned char got = back[z * 700 + y * 100 + x];
                if (got != want) {
                    printf("FAIL hipMemcpy3D (%zu, %zu, %zu): %x, want %x\n", x, y, z, got, want);
                    return 1;
                }
            }
    CHECK(hipFree(pp.ptr));
    return 0;
}

// The image kernels. HIP 7 marks the texture and surface functions unavailable where the
// device has no image instructions (gfx940-942: __HIP_NO_IMAGE_SUPPORT), so there they are
// left empty and the images section is not run; the other sections build for those targets.
#if !__HIP_NO_IMAGE_SUPPORT
// Reads texel (x, y) of a 2D float texture at its centre (unnormalized coordinates).
__global__ void texture_read(hipTextureObject_t t, float* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < width && y < height) out[y * width + x] = tex2D<float>(t, x + 0.5f, y + 0.5f);
}

// Writes y * 100 + x + 0.25 into texel (x, y) of a 2D float surface.
__global__ void surface_write(hipSurfaceObject_t s, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < width && y < height) surf2Dwrite((float)(y * 100 + x) + 0.25f, s, x * 4, y);
}

// Samples a 2D float texture with normalized coordinates at (u, v) for each of n points.
__global__ void texture_sample(hipTextureObject_t t, const float2* at, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, at[i].x, at[i].y);
}

// Fetches element i of a texture over linear memory (a 1D buffer image).
__global__ void texture_fetch(hipTextureObject_t t, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(t, i);
}
#else
__global__ void texture_read(hipTextureObject_t, float*, int, int) {}
__global__ void surface_write(hipSurfaceObject_t, int, int) {}
__global__ void texture_sample(hipTextureObject_t, const float2*, float*, int) {}
__global__ void texture_fetch(hipTextureObject_t, int*, int) {}
#endif

// Images through HIP: a hipArray filled by hipMemcpy2DToArray and read by a kernel through a
// texture object (point sampling); a surface object over another hipArray written by a
// kernel and read back with hipMemcpy2DFromArray; bilinear filtering with normalized
// coordinates; a texture over linear memory read with tex1Dfetch.
static int images_section() {
    const int w = 37, h = 5;
    hipChannelFormatDesc desc = hipCreateChannelDesc<float>();
    hipArray* arr;
    CHECK(hipMallocArray(&arr, &desc, w, h));
    std::vector<float> host(w * h);
    for (int i = 0; i < w * h; i++) host[i] = (float)i * 1.5f - 7.0f;
    CHECK(hipMemcpy2DToArray(arr, 0, 0, host.data(), w * 4, w * 4, h, hipMemcpyHostToDevice));
    hipResourceDesc res = {};
    res.resType = hipResourceTypeArray;
    res.res.array.array = arr;
    hipTextureDesc td = {};
    td.addressMode[0] = hipAddressModeClamp;
    td.addressMode[1] = hipAddressModeClamp;
    td.filterMode = hipFilterModePoint;
    td.readMode = hipReadModeElementType;
    td.normalizedCoords = 0;
    hipTextureObject_t tex;
    CHECK(hipCreateTextureObject(&tex, &res, &td, nullptr));
    float* out;
    CHECK(hipMalloc(&out, w * h * 4));
    hipLaunchKernelGGL(texture_read, dim3(1, h), dim3(64), 0, 0, tex, out, w, h);
    CHECK(hipGetLastError());
    std::vector<float> got(w * h, 0.0f);
    CHECK(hipMemcpy(got.data(), out, w * h * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < w * h; i++)
        if (got[i] != host[i]) {
            printf("FAIL tex2D texel %d: %f, want %f\n", i, got[i], host[i]);
            return 1;
        }
    CHECK(hipDestroyTextureObject(tex));

    hipArray* sarr;
    CHECK(hipMallocArray(&sarr, &desc, w, h)); // (HIP 5.2 refuses hipArraySurfaceLoadStore)
    res.res.array.array = sarr;
    hipSurfaceObject_t surf;
    CHECK(hipCreateSurfaceObject(&surf, &res));
    hipLaunchKernelGGL(surface_write, dim3(1, h), dim3(64), 0, 0, surf, w, h);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    std::fill(got.begin(), got.end(), 0.0f);
    CHECK(hipMemcpy2DFromArray(got.data(), w * 4, sarr, 0, 0, w * 4, h, hipMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (got[y * w + x] != (float)(y * 100 + x) + 0.25f) {
                printf("FAIL surf2Dwrite (%d, %d): %f\n", x, y, got[y * w + x]);
                return 1;
            }
    CHECK(hipDestroySurfaceObject(surf));
    CHECK(hipFreeArray(arr));
    CHECK(hipFreeArray(sarr));
    CHECK(hipFree(out));

    // Bilinear filtering with normalized coordinates and clamping, over a 4 x 2 texture: the
    // expected values are the texel-centre blend computed here.
    const int bw = 4, bh = 2;
    float texels[bw * bh] = {0.0f, 8.0f, 16.0f, 24.0f, 100.0f, 108.0f, 116.0f, 124.0f};
    hipArray* barr;
    CHECK(hipMallocArray(&barr, &desc, bw, bh));
    CHECK(hipMemcpy2DToArray(barr, 0, 0, texels, bw * 4, bw * 4, bh, hipMemcpyHostToDevice));
    res.res.array.array = barr;
    td.filterMode = hipFilterModeLinear;
    td.normalizedCoords = 1;
    CHECK(hipCreateTextureObject(&tex, &res, &td, nullptr));
    const int np = 4;
    float2 pts[np] = {{0.5f, 0.5f}, {0.25f, 0.25f}, {0.375f, 0.75f}, {0.0f, 0.0f}};
    float2* dpts;
    float* dres;
    CHECK(hipMalloc(&dpts, sizeof pts));
    CHECK(hipMalloc(&dres, np * 4));
    CHECK(hipMemcpy(dpts, pts, sizeof pts, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(texture_sample, dim3(1), dim3(64), 0, 0, tex, dpts, dres, np);
    CHECK(hipGetLastError());
    float sampled[np];
    CHECK(hipMemcpy(sampled, dres, np * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < np; i++) {
        // Texel-centre convention, clamp to the edge texels.
        float x = pts[i].x * bw - 0.5f, y = pts[i].y * bh - 0.5f;
        int x0 = (int)std::floor(x), y0 = (int)std::floor(y);
        float fx = x - x0, fy = y - y0;
        auto at = [&](int xx, int yy) {
            xx = std::min(std::max(xx, 0), bw - 1);
            yy = std::min(std::max(yy, 0), bh - 1);
            return texels[yy * bw + xx];
        };
        float want = (1 - fx) * (1 - fy) * at(x0, y0) + fx * (1 - fy) * at(x0 + 1, y0) +
                     (1 - fx) * fy * at(x0, y0 + 1) + fx * fy * at(x0 + 1, y0 + 1);
        // The hardware blends with 8-bit fractions: allow a 1/256 step of the texel spread.
        if (std::fabs(sampled[i] - want) > 124.0f / 256.0f) {
            printf("FAIL bilinear sample %d at (%f, %f): %f, want %f\n", i, pts[i].x, pts[i].y,
                   sampled[i], want);
            return 1;
        }
    }
    CHECK(hipDestroyTextureObject(tex));
    CHECK(hipFreeArray(barr));
    CHECK(hipFree(dpts));
    CHECK(hipFree(dres));

    // A texture over linear memory (hipResourceTypeLinear: a 1D buffer image), tex1Dfetch.
    const int nl = 300;
    std::vector<int> lin(nl);
    for (int i = 0; i < nl; i++) lin[i] = i * 3 - 100;
    int *dlin, *dout;
    CHECK(hipMalloc(&dlin, nl * 4));
    CHECK(hipMalloc(&dout, nl * 4));
    CHECK(hipMemcpy(dlin, lin.data(), nl * 4, hipMemcpyHostToDevice));
    hipResourceDesc lres = {};
    lres.resType = hipResourceTypeLinear;
    lres.res.linear.devPtr = dlin;
    lres.res.linear.desc = hipCreateChannelDesc<int>();
    lres.res.linear.sizeInBytes = nl * 4;
    hipTextureDesc ltd = {};
    ltd.readMode = hipReadModeElementType;
    hipTextureObject_t ltex;
    CHECK(hipCreateTextureObject(&ltex, &lres, &ltd, nullptr));
    hipLaunchKernelGGL(texture_fetch, dim3(5), dim3(64), 0, 0, ltex, dout, nl);
    CHECK(hipGetLastError());
    std::vector<int> lgot(nl, 0);
    CHECK(hipMemcpy(lgot.data(), dout, nl * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < nl; i++)
        if (lgot[i] != lin[i]) {
            printf("FAIL tex1Dfetch %d: %d, want %d\n", i, lgot[i], lin[i]);
            return 1;
        }
    CHECK(hipDestroyTextureObject(ltex));
    CHECK(hipFree(dlin));
    CHECK(hipFree(dout));
    return 0;
}

// Virtual memory management: two physical allocations (hipMemCreate) mapped back to back in one
// reserved range (hipMemAddressReserve, hipMemMap, hipMemSetAccess), a kernel over the whole
// range across the seam, the values read back through hipMemcpy and compared with the host's;
// then each mapping undone and the range and handles released. On ROCR 7 with amdkfd 1.15+
// this is the render node's GEM path (dma-buf export, PRIME import, GEM_VA).
static int vmem_section() {
    int dev = 0;
    CHECK(hipGetDevice(&dev));
#if HIP_VERSION_MAJOR >= 6
    int supported = 0;
    CHECK(hipDeviceGetAttribute(&supported, hipDeviceAttributeVirtualMemoryManagementSupported, dev));
    if (!supported) { printf("FAIL virtual memory management not supported\n"); return 1; }
#endif
    hipMemAllocationProp prop = {};
    prop.type = hipMemAllocationTypePinned;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = dev;
    size_t gran = 0;
    CHECK(hipMemGetAllocationGranularity(&gran, &prop, hipMemAllocationGranularityMinimum));
    if (gran == 0) { printf("FAIL granularity 0\n"); return 1; }
    const size_t piece = ((size_t(1) << 20) + gran - 1) / gran * gran;
    const size_t total = 2 * piece;
    void* base = nullptr;
    CHECK(hipMemAddressReserve(&base, total, 0, nullptr, 0));
    hipMemGenericAllocationHandle_t h[2];
    for (int k = 0; k < 2; k++) {
        CHECK(hipMemCreate(&h[k], piece, &prop, 0));
        CHECK(hipMemMap((char*)base + k * piece, piece, 0, h[k], 0));
    }
    hipMemAccessDesc access = {};
    access.location = prop.location;
    access.flags = hipMemAccessFlagsProtReadWrite;
    CHECK(hipMemSetAccess(base, total, &access, 1));
    const int n = int(total / sizeof(int));
    std::vector<int> host(n), back(n);
    for (int i = 0; i < n; i++) host[i] = i * 7 - 3;
    CHECK(hipMemcpy(base, host.data(), total, hipMemcpyHostToDevice));
    add_one<<<(n + 255) / 256, 256>>>((int*)base, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(back.data(), base, total, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        if (back[i] != i * 7 - 2) {
            printf("FAIL vmem[%d] = %d, want %d (piece %d)\n", i, back[i], i * 7 - 2,
                   int(size_t(i) * sizeof(int) / piece));
            return 1;
        }
    }
    // The handle of a mapped address is the one created for it.
    hipMemGenericAllocationHandle_t got;
    CHECK(hipMemRetainAllocationHandle(&got, (char*)base + piece + 64));
    if (got != h[1]) { printf("FAIL hipMemRetainAllocationHandle gave another handle\n"); return 1; }
    CHECK(hipMemRelease(got));
    for (int k = 0; k < 2; k++) {
        CHECK(hipMemUnmap((char*)base + k * piece, piece));
        CHECK(hipMemRelease(h[k]));
    }
    CHECK(hipMemAddressFree(base, total));
    printf("hip_check: vmem %zu bytes in two pieces of %zu (granularity %zu)\n", total, piece, gran);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) { printf("usage: hip_check SECTION [CODE_OBJECT | LAUNCHES]\n"); return 2; }
    const char* s = argv[1];
    int r;
    if (!strcmp(s, "vector_add")) r = vector_add_section();
    else if (!strcmp(s, "shared")) r = shared_section();
    else if (!strcmp(s, "memcpy")) r = memcpy_section();
    else if (!strcmp(s, "memset")) r = memset_section();
    else if (!strcmp(s, "pitched")) r = pitched_section();
    else if (!strcmp(s, "images")) r = images_section();
    else if (!strcmp(s, "streams")) r = streams_section();
    else if (!strcmp(s, "hostmem")) r = hostmem_section();
    else if (!strcmp(s, "callbacks")) r = callbacks_section();
    else if (!strcmp(s, "symbols")) r = symbols_section();
    else if (!strcmp(s, "atomics")) r = atomics_section();
    else if (!strcmp(s, "math")) r = math_section();
    else if (!strcmp(s, "printf")) r = printf_section();
    else if (!strcmp(s, "module") && argc > 2) r = module_section(argv[2]);
    else if (!strcmp(s, "multigpu")) r = multigpu_section();
    else if (!strcmp(s, "hiprtc")) r = hiprtc_section();
    else if (!strcmp(s, "badlaunch")) r = badlaunch_section();
    else if (!strcmp(s, "fault")) r = fault_section();
    else if (!strcmp(s, "vmem")) r = vmem_section();
    else if (!strcmp(s, "launch_loop") && argc > 2) r = launch_loop_section(atoi(argv[2]));
    else { printf("unknown section %s\n", s); return 2; }
    if (r == 0) printf("hip_check: %s ok\n", s);
    return r;
}
