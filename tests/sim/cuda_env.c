/* cuda_env.c: bad SIMDEV_* values give one line on stderr and the default (run with
 * SIMDEV_MEMORY=12Q SIMDEV_FREE_US=-3). */
#include <cuda_runtime_api.h>

#include "check.h"

int main(void)
{
    sim_begin("simdevice cuda driver");
    FILE *tmp;
    int saved = capture_stderr(&tmp);
    size_t f, t;
    CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
    int mem = release_stderr(tmp, saved, "SIMDEV_MEMORY=\"12Q\"");
    CHECK_EQ(mem, 1);
    CHECK_EQ(t, (size_t)8 << 30);
    void *p;
    CHECK_EQ(cudaMalloc(&p, (size_t)2 << 30), cudaSuccess); /* 2 GiB: costs address space only */
    CHECK_EQ(cudaMemset((char *)p + ((size_t)1 << 30), 1, 4096), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    printf("cuda_env: all passed\n");
    return 0;
}
