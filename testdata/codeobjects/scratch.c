// Kernels that need a queue's scratch (issue 38), freestanding C like extern_var.c: a 64 KiB
// private array per work-item, and a recursive function whose frames live on the scratch
// stack. The host recomputes both (tests/tests/scratch.rs).
#define GLOBAL __attribute__((address_space(1)))
#define CONSTANT __attribute__((address_space(4)))
#define KERNEL __attribute__((amdgpu_kernel, visibility("default")))
typedef unsigned int uint;

#define BIG 16384 // 64 KiB of uints

static inline uint gid_x(void)
{
    const CONSTANT unsigned short *pkt = (const CONSTANT unsigned short *)__builtin_amdgcn_dispatch_ptr();
    return __builtin_amdgcn_workgroup_id_x() * pkt[2] + __builtin_amdgcn_workitem_id_x();
}

// tmp[j] = seed * (j + 1) + i for j < BIG; out[i] = the sum of tmp[(j * seed) % BIG] over
// j = 0, 97, 194, ... < BIG (seed = in[i]).
KERNEL void big_private(GLOBAL const uint *in, GLOBAL uint *out, uint n)
{
    volatile uint tmp[BIG];
    uint i = gid_x();
    if (i >= n)
        return;
    uint seed = in[i];
    for (uint j = 0; j < BIG; j++)
        tmp[j] = seed * (j + 1) + i;
    uint s = 0;
    for (uint j = 0; j < BIG; j += 97)
        s += tmp[(j * seed) % BIG];
    out[i] = s;
}

// walk(k, acc): a frame of 8 words, then (k > 0) r = walk(k - 1, acc * 31 + in[k % 64]) and
// r ^ frame[(acc + r) % 8], where frame[j] = acc + j + k; walk(0, acc) = acc.
__attribute__((noinline)) static uint walk(GLOBAL const uint *in, uint k, uint acc)
{
    volatile uint frame[8];
    for (uint j = 0; j < 8; j++)
        frame[j] = acc + j + k;
    if (k == 0)
        return acc;
    uint r = walk(in, k - 1, acc * 31 + in[k % 64]);
    return r ^ frame[(acc + r) % 8];
}

// out[i] = walk(in[i] % 12 + 1, i): at most 12 frames of 64 bytes, within the 1 KiB per
// work-item of a queue's default scratch.
KERNEL void recursive(GLOBAL const uint *in, GLOBAL uint *out, uint n)
{
    uint i = gid_x();
    if (i >= n)
        return;
    out[i] = walk(in, in[i] % 12 + 1, i);
}
