// A code-object file for hip_check's `module` section: built with
// `hipcc --genco --offload-arch=gfx90a`, loaded with hipModuleLoad.
#include <hip/hip_runtime.h>

extern "C" __global__ void triple(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= 3;
}
