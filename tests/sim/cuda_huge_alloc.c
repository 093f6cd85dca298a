/* cuda_huge_alloc.c: a request larger than the device fails at once with out-of-memory, as a
 * real driver refuses it, instead of first spending its size-proportional simulated cost
 * (2^62 bytes would take longer than the watchdog allows). Run with the default costs. */
#include <cuda_runtime_api.h>

#include "check.h"

int main(void)
{
    sim_begin("simdevice cuda driver");
    CHECK_EQ(cudaFree(NULL), cudaSuccess);
    struct simdev_counters before = sim_counters(0);
    void *p = (void *)1;
    CHECK_EQ(cudaMalloc(&p, (size_t)1 << 62), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaMalloc(&p, (size_t)1 << 63), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(sim_counters(0).oom - before.oom, 2);
    CHECK_EQ(sim_counters(0).malloc_calls - before.malloc_calls, 0);
    /* A request that fits still succeeds. */
    CHECK_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    printf("cuda_huge_alloc: all passed\n");
    return 0;
}
