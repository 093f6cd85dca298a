/* cuBLAS: a 256 x 256 SGEMM per round on freshly allocated matrices. */
#include <cublas_v2.h>

#include "libcheck.h"

int main(void)
{
    enum { N = 256 };
    cublasHandle_t h;
    LIBCHECK(cublasCreate(&h));
    double total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        float *a, *b, *c;
        LIBCHECK(cudaMalloc((void **)&a, N * N * sizeof(float)));
        LIBCHECK(cudaMalloc((void **)&b, N * N * sizeof(float)));
        LIBCHECK(cudaMalloc((void **)&c, N * N * sizeof(float)));
        device_fill(a, N * N, r);
        device_fill(b, N * N, r + 1);
        const float one = 1.0f, zero = 0.0f;
        LIBCHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, &one, a, N, b, N, &zero, c, N));
        total += device_sum(c, N * N);
        LIBCHECK(cudaFree(a));
        LIBCHECK(cudaFree(b));
        LIBCHECK(cudaFree(c));
    }
    LIBCHECK(cublasDestroy(h));
    printf("cublas checksum %.17g\n", total);
    return 0;
}
