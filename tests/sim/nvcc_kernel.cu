// nvcc_kernel.cu: built by nvcc with the shared runtime; it must load and run on the simulated driver,
// and its one kernel launch must report cudaErrorNotSupported.
#include <cstdio>
#include <cstring>

#include "simdev.h"

__global__ void fill(int *p) { p[threadIdx.x] = 1; }

int main()
{
    simdev_identify_fn id = (simdev_identify_fn)simdev_sym("simdev_identify");
    if (!id || std::strcmp(id(), "simdevice cuda driver") != 0) {
        std::fprintf(stderr, "FAIL: the CUDA stand-in did not answer\n");
        return 1;
    }
    int *d = nullptr;
    if (cudaMalloc(&d, 64 * sizeof(int)) != cudaSuccess) return 1;
    fill<<<1, 64>>>(d);
    cudaError_t e = cudaGetLastError();
    if (e != cudaErrorNotSupported) {
        std::fprintf(stderr, "FAIL: launch gave %d, expected cudaErrorNotSupported\n", (int)e);
        return 1;
    }
    if (cudaGetLastError() != cudaSuccess) return 1;
    if (cudaFree(d) != cudaSuccess) return 1;
    std::printf("nvcc_kernel: launch refused as expected (%s)\n", cudaGetErrorName(e));
    return 0;
}
