// A kernel with a dynamically indexed private array (issue 19): clang-19 -O1 keeps `tmp` in
// scratch, reached through the private segment buffer (buffer_store/load_dword ... offen) on
// gfx900/gfx90a and scratch_store/load_dword on gfx942. Freestanding like kernels_more.cl.

static inline uint gid_x(void)
{
    __constant ushort *pkt = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return __builtin_amdgcn_workgroup_id_x() * pkt[2] + __builtin_amdgcn_workitem_id_x();
}

// tmp[j] = in[(i + j) % 1024] * j for j < 64 (in has 1024 elements), then
// out[i] = tmp[in[i] % 64] + tmp[(i * 7) % 64].
__kernel void private_array(__global const int *in, __global int *out, uint n)
{
    int tmp[64];
    uint i = gid_x();
    if (i >= n)
        return;
    for (int j = 0; j < 64; j++)
        tmp[j] = in[(i + j) % 1024] * j;
    out[i] = tmp[(uint)in[i] % 64] + tmp[(i * 7) % 64];
}
