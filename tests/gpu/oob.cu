// A kernel that writes one warp's worth of bytes past the end of a 1000-byte block: what
// compute-sanitizer's memcheck must report, with the cache loaded or not (scripts/gpu-check.sh).
#include <cstdio>

#include <cuda_runtime.h>

__global__ void write_past(char *p, size_t n)
{
    p[n + threadIdx.x] = 1;
}

int main()
{
    char *before = nullptr, *p = nullptr, *after = nullptr;
    if (cudaMalloc(&before, 4096) != cudaSuccess || cudaMalloc(&p, 1000) != cudaSuccess ||
        cudaMalloc(&after, 4096) != cudaSuccess) {
        std::fprintf(stderr, "oob: no device memory\n");
        return 1;
    }
    write_past<<<1, 32>>>(p, 1000);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("oob: kernel finished: %s\n", cudaGetErrorString(e));
    cudaFree(after);
    cudaFree(p);
    cudaFree(before);
    return 0;
}
