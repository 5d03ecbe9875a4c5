// More test kernels for the gfx9 wave interpreter: branches, loops, divergent control flow,
// f32 math and several by-value arguments. Freestanding like kernels.cl (-nogpulib): the
// global id is workgroup_id_x * dispatch_packet.workgroup_size_x + workitem_id_x, and there
// are no hidden kernel arguments.

static inline uint wg_size_x(void)
{
    __constant ushort *pkt = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return pkt[2];
}

static inline uint gid_x(void)
{
    return __builtin_amdgcn_workgroup_id_x() * wg_size_x() + __builtin_amdgcn_workitem_id_x();
}

// Divergent if/else with a bounds check: out[i] = in[i] > threshold ? in[i] * 3 : threshold - in[i].
__kernel void branchy(__global const int *in, __global int *out, int threshold, uint n)
{
    uint i = gid_x();
    if (i >= n)
        return;
    int v = in[i];
    if (v > threshold)
        out[i] = v * 3;
    else
        out[i] = threshold - v;
}

// A loop whose trip count differs per lane: out[i] = sum_{j < i % 13} (in[i] ^ j) + j * j.
__kernel void loop_sum(__global const int *in, __global int *out, uint n)
{
    uint i = gid_x();
    if (i >= n)
        return;
    int v = in[i];
    int acc = 0;
    for (uint j = 0; j < i % 13; j++)
        acc += (v ^ (int)j) + (int)(j * j);
    out[i] = acc;
}

// f32 math: y[i] = clamp(a * x[i] + y[i], lo, hi) + (float)i * 0.5f.
__kernel void saxpy_clamp(float a, __global const float *x, __global float *y, float lo, float hi, uint n)
{
    uint i = gid_x();
    if (i < n) {
        float r = a * x[i] + y[i];
        r = fmin(fmax(r, lo), hi);
        y[i] = r + (float)i * 0.5f;
    }
}

// 64-bit integer math and narrow by-value arguments:
// out[i] = a * i + (b >> (i & 7)) + c - d + (long)(f * 4.0f).
__kernel void mixed_args(__global long *out, long a, uint b, short c, char d, float f, uint n)
{
    uint i = gid_x();
    if (i < n)
        out[i] = a * (long)i + (long)(b >> (i & 7)) + (long)c - (long)d + (long)(f * 4.0f);
}

// Tree reduction in LDS with several barriers: out[group] = sum of the group's in[] values.
__kernel void group_sum(__global const uint *in, __global uint *out)
{
    __local uint part[256];
    uint lid = __builtin_amdgcn_workitem_id_x();
    uint lsz = wg_size_x();
    part[lid] = in[gid_x()];
    for (uint s = 128; s > 0; s >>= 1) {
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
        __builtin_amdgcn_s_barrier();
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
        if (lid < s && lid + s < lsz)
            part[lid] += part[lid + s];
    }
    if (lid == 0)
        out[__builtin_amdgcn_workgroup_id_x()] = part[0];
}
