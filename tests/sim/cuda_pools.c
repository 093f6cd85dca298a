/* cuda_pools.c: memory pools through NVIDIA's runtime, which finds the driver's pool entry
 * points with cuGetProcAddress: a created pool made current serves cudaMallocAsync, a pool of
 * device 1 serves a stream of device 0, and a trim gives back what the pool keeps.
 * Run with SIMDEV_DEVICES=2 SIMDEV_MEMORY=64M. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "check.h"

#define MiB ((size_t)1 << 20)

static cudaMemPool_t make_pool(int dev)
{
    struct cudaMemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = cudaMemAllocationTypePinned;
    p.location.type = cudaMemLocationTypeDevice;
    p.location.id = dev;
    cudaMemPool_t pool = NULL;
    CHECK_EQ(cudaMemPoolCreate(&pool, &p), cudaSuccess);
    CHECK(pool != NULL);
    return pool;
}

static unsigned long long reserved(cudaMemPool_t pool)
{
    unsigned long long v = 0;
    CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v), cudaSuccess);
    return v;
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    cudaMemPool_t mine = make_pool(0), def = NULL, cur = NULL;
    CHECK_EQ(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
    CHECK_EQ(cudaDeviceSetMemPool(0, mine), cudaSuccess);
    CHECK_EQ(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    CHECK(cur == mine && cur != def);

    /* cudaMallocAsync takes the current pool; the pool keeps the freed bytes until a trim
     * (the threshold is above them, so a synchronization keeps them too). */
    unsigned long long keep = 16 * MiB;
    CHECK_EQ(cudaMemPoolSetAttribute(mine, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    void *a = NULL;
    CHECK_EQ(cudaMallocAsync(&a, 2 * MiB, s), cudaSuccess);
    CHECK_EQ(cudaMemsetAsync(a, 1, 2 * MiB, s), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(a, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(reserved(mine), 2 * MiB);
    CHECK_EQ(reserved(def), 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 2 * MiB);
    CHECK_EQ(cudaMemPoolTrimTo(mine, 0), cudaSuccess);
    CHECK_EQ(reserved(mine), 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);

    /* A pool of device 1 serves a stream of device 0. */
    cudaMemPool_t other = make_pool(1);
    void *b = NULL;
    CHECK_EQ(cudaMallocFromPoolAsync(&b, MiB, other, s), cudaSuccess);
    struct cudaPointerAttributes at;
    CHECK_EQ(cudaPointerGetAttributes(&at, b), cudaSuccess);
    CHECK_EQ(at.device, 1);
    CHECK_EQ(at.type, cudaMemoryTypeDevice);
    CHECK_EQ(cudaFreeAsync(b, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(sim_counters(1).reserved_bytes, 0); /* threshold 0: given back at the sync */

    /* A destroyed current pool leaves the default one current. */
    CHECK_EQ(cudaMemPoolDestroy(mine), cudaSuccess);
    CHECK_EQ(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    CHECK(cur == def);
    CHECK_EQ(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemPoolDestroy(other), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    puts("cuda_pools: ok");
    return 0;
}
