/* cuFFT: a batch of 16 complex transforms of 4096 points per round, plan made each round (the
 * plan's work area is allocated too). */
#include <cufft.h>

#include "libcheck.h"

int main(void)
{
    enum { N = 4096, BATCH = 16 };
    double total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        cufftHandle plan;
        LIBCHECK(cufftPlan1d(&plan, N, CUFFT_C2C, BATCH));
        float *data;
        LIBCHECK(cudaMalloc((void **)&data, 2 * N * BATCH * sizeof(float)));
        device_fill(data, 2 * N * BATCH, r);
        LIBCHECK(cufftExecC2C(plan, (cufftComplex *)data, (cufftComplex *)data, CUFFT_FORWARD));
        total += device_sum(data, 2 * N * BATCH);
        LIBCHECK(cufftDestroy(plan));
        LIBCHECK(cudaFree(data));
    }
    printf("cufft checksum %.17g\n", total);
    return 0;
}
