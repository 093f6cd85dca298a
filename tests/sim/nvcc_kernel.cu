// nvcc_kernel.cu: built by nvcc with the shared runtime; it must load and run on the stand-in,
// and its one kernel launch must report cudaErrorNotSupported.
#include <cstdio>
#include <cstring>
#include <dlfcn.h>

__global__ void fill(int *p) { p[threadIdx.x] = 1; }

int main()
{
    typedef const char *(*id_fn)();
    id_fn id = (id_fn)dlsym(RTLD_DEFAULT, "simdev_identify");
    if (!id || std::strcmp(id(), "simdevice cuda") != 0) {
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
