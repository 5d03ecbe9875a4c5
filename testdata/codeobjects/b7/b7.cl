// B7 (BENCHMARKS.md): kernels for the gfx9 interpreter's speed, next to host versions of
// the same computations in emulator/benches/b7_interpreter.rs. Built by ../build.sh
// (freestanding, -nogpulib: the work-item functions from the compiler's builtins).

// The dispatch packet's workgroup_size_x (AQL kernel dispatch packet, offset 4) and
// grid_size_x (offset 12).
static uint wg_size_x(void) {
    __constant ushort *pkt = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return pkt[2];
}

static uint grid_size_x(void) {
    __constant uint *pkt = (__constant uint *)__builtin_amdgcn_dispatch_ptr();
    return pkt[3];
}

static uint global_id_x(void) {
    return __builtin_amdgcn_workgroup_id_x() * wg_size_x() + __builtin_amdgcn_workitem_id_x();
}

static void group_barrier(void) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// One n-body step, O(n^2) (compute-bound): each work-item accumulates the softened
// gravitational acceleration on body i from all n bodies (pos.w = mass). The loop over j
// reads the same body in every lane, so the compiler loads it with scalar loads and the
// loop body is VALU arithmetic.
__kernel void nbody_accel(__global const float4 *restrict pos, __global float4 *restrict acc,
                          uint n, float eps2) {
    uint i = global_id_x();
    float4 p = pos[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (uint j = 0; j < n; j++) {
        float4 q = pos[j];
        float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
        float r2 = dx * dx + dy * dy + dz * dz + eps2;
        float inv = 1.0f / (r2 * sqrt(r2));
        float s = q.w * inv;
        ax += dx * s;
        ay += dy * s;
        az += dz * s;
    }
    acc[i] = (float4)(ax, ay, az, 0.0f);
}

// A work-group sum through LDS: each work-item loads 4 elements (strided by the grid), then a
// tree reduction in LDS with barriers; work-item 0 writes the group's sum.
__kernel void lds_reduce(__global const uint *restrict in, __global uint *restrict out,
                         uint n) {
    __local uint part[256];
    uint lid = __builtin_amdgcn_workitem_id_x();
    uint gid = global_id_x();
    uint stride = grid_size_x();
    uint s = 0;
    for (uint k = gid; k < n; k += stride)
        s += in[k];
    part[lid] = s;
    group_barrier();
    for (uint w = wg_size_x() / 2; w > 0; w >>= 1) {
        if (lid < w)
            part[lid] += part[lid + w];
        group_barrier();
    }
    if (lid == 0)
        out[__builtin_amdgcn_workgroup_id_x()] = part[0];
}
