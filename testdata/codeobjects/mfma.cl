// Matrix kernels for the gfx9 interpreter's MFMA tests (issue 19): one wave (64 work-items)
// computes D = A·B + C with the compiler's MFMA builtins, the lanes loading and storing the
// matrix entries where the CDNA ISA guides' register layouts put them. Row-major matrices;
// freestanding like kernels_more.cl. Built for gfx908, gfx90a and gfx942 (build.sh).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

typedef float v16f __attribute__((ext_vector_type(16)));
typedef float v4f __attribute__((ext_vector_type(4)));
typedef half v4h __attribute__((ext_vector_type(4)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef double v4d __attribute__((ext_vector_type(4)));

static inline uint lane_id(void)
{
    return __builtin_amdgcn_workitem_id_x();
}

// f32, 32x32 tiles, K a multiple of 2: v_mfma_f32_32x32x2f32 per 2 columns of A. A[i][k]
// of a step is in lane i + 32 k, D[i][j] in register 4 (i / 8) + i % 4 of lane
// 32 ((i / 4) % 2) + j.
__kernel void sgemm_32x32x2(__global const float *a, __global const float *b,
                            __global float *c, uint k_total)
{
    uint l = lane_id();
    uint j = l % 32, half_id = l / 32;
    v16f acc;
    for (int r = 0; r < 16; r++)
        acc[r] = c[(8 * (r / 4) + 4 * half_id + r % 4) * 32 + j];
    for (uint k0 = 0; k0 < k_total; k0 += 2) {
        float x = a[j * k_total + k0 + half_id];
        float y = b[(k0 + half_id) * 32 + j];
        acc = __builtin_amdgcn_mfma_f32_32x32x2f32(x, y, acc, 0, 0, 0);
    }
    for (int r = 0; r < 16; r++)
        c[(8 * (r / 4) + 4 * half_id + r % 4) * 32 + j] = acc[r];
}

// f16 inputs, f32 accumulation, 16x16 tiles, K a multiple of 16: v_mfma_f32_16x16x16f16.
// A[i][k] of a step is element k % 4 of lane i + 16 (k / 4); D[i][j] in register i % 4 of
// lane 16 (i / 4) + j.
__kernel void hgemm_16x16x16(__global const half *a, __global const half *b,
                             __global float *c, uint k_total)
{
    uint l = lane_id();
    uint j = l % 16, g = l / 16;
    v4f acc;
    for (int r = 0; r < 4; r++)
        acc[r] = c[(4 * g + r) * 16 + j];
    for (uint k0 = 0; k0 < k_total; k0 += 16) {
        v4h x, y;
        for (int e = 0; e < 4; e++) {
            x[e] = a[j * k_total + k0 + 4 * g + e];
            y[e] = b[(k0 + 4 * g + e) * 16 + j];
        }
        acc = __builtin_amdgcn_mfma_f32_16x16x16f16(x, y, acc, 0, 0, 0);
    }
    for (int r = 0; r < 4; r++)
        c[(4 * g + r) * 16 + j] = acc[r];
}

// i8 inputs, i32 accumulation, 16x16 tiles: v_mfma_i32_16x16x16i8 (gfx908, gfx90a) or
// v_mfma_i32_16x16x32_i8 (gfx940+), K a multiple of 32.
__kernel void igemm_16x16(__global const char *a, __global const char *b, __global int *c,
                          uint k_total)
{
    uint l = lane_id();
    uint j = l % 16, g = l / 16;
    v4i acc;
    for (int r = 0; r < 4; r++)
        acc[r] = c[(4 * g + r) * 16 + j];
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
    for (uint k0 = 0; k0 < k_total; k0 += 32) {
        long x = 0, y = 0;
        for (int e = 0; e < 8; e++) {
            x |= (long)(uchar)a[j * k_total + k0 + 8 * g + e] << (8 * e);
            y |= (long)(uchar)b[(k0 + 8 * g + e) * 16 + j] << (8 * e);
        }
        acc = __builtin_amdgcn_mfma_i32_16x16x32_i8(x, y, acc, 0, 0, 0);
    }
#else
    for (uint k0 = 0; k0 < k_total; k0 += 16) {
        int x = 0, y = 0;
        for (int e = 0; e < 4; e++) {
            x |= (int)(uchar)a[j * k_total + k0 + 4 * g + e] << (8 * e);
            y |= (int)(uchar)b[(k0 + 4 * g + e) * 16 + j] << (8 * e);
        }
        acc = __builtin_amdgcn_mfma_i32_16x16x16i8(x, y, acc, 0, 0, 0);
    }
#endif
    for (int r = 0; r < 4; r++)
        c[(4 * g + r) * 16 + j] = acc[r];
}

#if !defined(__gfx908__)
// f64, 16x16 tiles, K a multiple of 4: v_mfma_f64_16x16x4f64 (gfx90a+). A[i][k] in lane
// i + 16 k; D[i][j] in register pair i / 4 of lane 16 (i % 4) + j.
__kernel void dgemm_16x16x4(__global const double *a, __global const double *b,
                            __global double *c, uint k_total)
{
    uint l = lane_id();
    uint j = l % 16, g = l / 16;
    v4d acc;
    for (int r = 0; r < 4; r++)
        acc[r] = c[(4 * r + g) * 16 + j];
    for (uint k0 = 0; k0 < k_total; k0 += 4) {
        double x = a[j * k_total + k0 + g];
        double y = b[(k0 + g) * 16 + j];
        acc = __builtin_amdgcn_mfma_f64_16x16x4f64(x, y, acc, 0, 0, 0);
    }
    for (int r = 0; r < 4; r++)
        c[(4 * r + g) * 16 + j] = acc[r];
}
#endif
