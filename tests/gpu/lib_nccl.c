/* NCCL: one rank on device 0, a sum all-reduce of a million floats per round. */
#include <nccl.h>

#include "libcheck.h"

int main(void)
{
    enum { N = 1 << 20 };
    ncclComm_t comm;
    int dev = 0;
    LIBCHECK(ncclCommInitAll(&comm, 1, &dev));
    double total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        float *x, *y;
        LIBCHECK(cudaMalloc((void **)&x, N * sizeof(float)));
        LIBCHECK(cudaMalloc((void **)&y, N * sizeof(float)));
        device_fill(x, N, r);
        LIBCHECK(ncclAllReduce(x, y, N, ncclFloat, ncclSum, comm, 0));
        LIBCHECK(cudaStreamSynchronize(0));
        total += device_sum(y, N);
        LIBCHECK(cudaFree(x));
        LIBCHECK(cudaFree(y));
    }
    LIBCHECK(ncclCommDestroy(comm));
    printf("nccl checksum %.17g\n", total);
    return 0;
}
