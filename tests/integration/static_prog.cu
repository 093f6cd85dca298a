// Built by nvcc with its default static CUDA runtime: its cudaMalloc never reaches the shim,
// which must say so in one line when the runtime loads the driver.
#include <cuda_runtime.h>
#include <stdio.h>

int main()
{
    void *p = 0;
    cudaError_t e = cudaMalloc(&p, 1 << 20);
    printf("cudaMalloc: %d\n", (int)e);
    return 0;
}
