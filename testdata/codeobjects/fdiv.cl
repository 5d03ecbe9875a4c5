// IEEE division and square root as clang-19 compiles them (issue 19): every f32/f64/f16
// `a / b` becomes v_div_scale, v_rcp, fused multiply-adds, v_div_fmas and v_div_fixup
// (f16: v_rcp_f32 and v_div_fixup_f16); `sqrt` becomes v_sqrt/v_rsq with corrections.
// Built with -cl-fp32-correctly-rounded-divide-sqrt (OpenCL's default f32 division may be
// 2.5 ULP). Freestanding like kernels_more.cl, for work-groups of 64 (no dispatch packet
// read): out[i] = a[i] op b[i] for i < n.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

static inline uint gid_x(void)
{
    return __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
}

__kernel void div_f32(__global const float *a, __global const float *b, __global float *out, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = a[i] / b[i];
}

__kernel void div_f64(__global const double *a, __global const double *b, __global double *out, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = a[i] / b[i];
}

__kernel void div_f16(__global const half *a, __global const half *b, __global half *out, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = a[i] / b[i];
}

__kernel void sqrt_f32(__global const float *a, __global const float *b, __global float *out, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = sqrt(a[i]);
}

__kernel void sqrt_f64(__global const double *a, __global const double *b, __global double *out, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = sqrt(a[i]);
}
