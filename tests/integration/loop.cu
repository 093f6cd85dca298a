// loop.cu: 1000 x (cudaMalloc 64 MiB, cudaMemset, cudaFree) through NVIDIA's runtime, built
// both with plain nvcc (the static runtime) and with -cudart shared.
#include <cstdio>

#include "loop_check.h"

int main()
{
    const int n = 1000;
    for (int i = 0; i < n; i++) {
        void *p = nullptr;
        if (cudaMalloc(&p, 64u << 20) != cudaSuccess || cudaMemset(p, i & 0xff, 1 << 20) != cudaSuccess ||
            cudaFree(p) != cudaSuccess) {
            std::fprintf(stderr, "iteration %d failed: %s\n", i, cudaGetErrorName(cudaGetLastError()));
            return 1;
        }
    }
    return loop_check(n);
}
