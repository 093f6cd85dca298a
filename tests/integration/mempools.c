/* Memory pools under the shim, one case per run (argv[1]):
 *   own-pool     a pool of the program's own made current on device 0: cudaMallocAsync there
 *                reaches the real driver (the pool's memory, its attributes), until the default
 *                pool is current again;
 *   peer-access  peers given access to device 0's default pool: the same, until revoked;
 *   from-pool    cudaMallocFromPoolAsync is the real driver's, and so is the free of its block;
 *   stream-device  cudaMallocAsync on a stream of device 1 while device 0 is current returns
 *                device 1 memory, from the program's own pool once one is current on device 1
 *                (device 0's allocations stay the cache's);
 *   trim         cudaMemPoolTrimTo on device 0's default pool gives back the cache's memory of
 *                device 0 too (a created pool's trim does not).
 * CUDA builds only (runtime, static runtime, driver API); two simulated devices. */
#include "gpu.h"

#define MiB ((size_t)1 << 20)

#ifdef GPU_DRIVER
typedef CUmemoryPool pool_t;
#define pool_default(p, dev) GPU_DRV(cuDeviceGetDefaultMemPool((p), (dev)))
#define pool_set_current(dev, p) GPU_DRV(cuDeviceSetMemPool((dev), (p)))
#define pool_trim(p, n) GPU_DRV(cuMemPoolTrimTo((p), (n)))
#define pool_alloc(ptr, n, p, s) GPU_DRV(cuMemAllocFromPoolAsync((CUdeviceptr *)(void *)(ptr), (n), (p), (s)))
#define pool_used(p, v) GPU_DRV(cuMemPoolGetAttribute((p), CU_MEMPOOL_ATTR_USED_MEM_CURRENT, (v)))

static gpuError_t pool_create(pool_t *pool, int dev)
{
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return GPU_DRV(cuMemPoolCreate(pool, &p));
}

static gpuError_t pool_peer_access(pool_t pool, int peer, int on)
{
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, peer},
                         on ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE};
    return GPU_DRV(cuMemPoolSetAccess(pool, &d, 1));
}

static int device_of(void *p)
{
    int ord = -1;
    CHECK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, gpu_dptr(p)));
    return ord;
}
#else
typedef cudaMemPool_t pool_t;
#define pool_default(p, dev) cudaDeviceGetDefaultMemPool((p), (dev))
#define pool_set_current(dev, p) cudaDeviceSetMemPool((dev), (p))
#define pool_trim(p, n) cudaMemPoolTrimTo((p), (n))
#define pool_alloc(ptr, n, p, s) cudaMallocFromPoolAsync((ptr), (n), (p), (s))
#define pool_used(p, v) cudaMemPoolGetAttribute((p), cudaMemPoolAttrUsedMemCurrent, (v))

static gpuError_t pool_create(pool_t *pool, int dev)
{
    struct cudaMemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = cudaMemAllocationTypePinned;
    p.location.type = cudaMemLocationTypeDevice;
    p.location.id = dev;
    return cudaMemPoolCreate(pool, &p);
}

static gpuError_t pool_peer_access(pool_t pool, int peer, int on)
{
    struct cudaMemAccessDesc d = {{cudaMemLocationTypeDevice, peer},
                                  on ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone};
    return cudaMemPoolSetAccess(pool, &d, 1);
}

static int device_of(void *p)
{
    struct cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, p));
    EXPECT(a.type == cudaMemoryTypeDevice);
    return a.device;
}
#endif

static unsigned long long used_of(pool_t pool)
{
    unsigned long long v = 0;
    CHECK(pool_used(pool, &v));
    return v;
}

/* One stream-ordered allocation and free on s; returns 1 when the real driver served both. */
static int reached_driver(gpuStream_t s, int dev)
{
    struct simdev_counters c0 = sim_counters(dev);
    void *p = NULL;
    CHECK(gpuMallocAsync(&p, MiB, s));
    CHECK(gpuMemsetAsync(p, 3, MiB, s));
    CHECK(gpuFreeAsync(p, s));
    CHECK(gpuStreamSynchronize(s));
    struct simdev_counters c = sim_counters(dev);
    int allocs = (int)(c.malloc_async_calls - c0.malloc_async_calls);
    int frees = (int)(c.free_async_calls - c0.free_async_calls);
    EXPECT(allocs == frees);
    EXPECT(c.faults == 0);
    return allocs == 1;
}

static void own_pool(gpuStream_t s)
{
    pool_t mine, def;
    CHECK(pool_create(&mine, 0));
    CHECK(pool_default(&def, 0));
    EXPECT(!reached_driver(s, 0)); /* the cache serves the default pool's allocations */
    CHECK(pool_set_current(0, mine));
    void *p = NULL;
    CHECK(gpuMallocAsync(&p, MiB, s));
    EXPECT(used_of(mine) == MiB); /* the program's pool holds it */
    CHECK(gpuFreeAsync(p, s));
    CHECK(gpuStreamSynchronize(s));
    EXPECT(used_of(mine) == 0);
    EXPECT(reached_driver(s, 0));
    CHECK(pool_set_current(0, def));
    EXPECT(!reached_driver(s, 0));
}

static void peer_access(gpuStream_t s)
{
    pool_t def;
    CHECK(pool_default(&def, 0));
    EXPECT(!reached_driver(s, 0));
    CHECK(pool_peer_access(def, 1, 1));
    EXPECT(reached_driver(s, 0));
    CHECK(pool_peer_access(def, 1, 0));
    EXPECT(!reached_driver(s, 0));
}

static void from_pool(gpuStream_t s)
{
    pool_t mine;
    CHECK(pool_create(&mine, 0));
    struct simdev_counters c0 = sim_counters(0);
    void *p = NULL;
    CHECK(pool_alloc(&p, MiB, mine, s));
    EXPECT(used_of(mine) == MiB);
    CHECK(gpuFreeAsync(p, s));
    CHECK(gpuStreamSynchronize(s));
    struct simdev_counters c = sim_counters(0);
    EXPECT(used_of(mine) == 0);
    EXPECT(c.malloc_async_calls - c0.malloc_async_calls == 1);
    EXPECT(c.free_async_calls - c0.free_async_calls == 1); /* the real driver's free */
    EXPECT(c.invalid_frees == c0.invalid_frees);
}

static void stream_device(gpuStream_t s0)
{
    gpuStream_t s1;
    CHECK(gpuSetDevice(1));
    CHECK(gpuStreamCreate(&s1));
    CHECK(gpuSetDevice(0));
    void *p = NULL, *q = NULL;
    CHECK(gpuMallocAsync(&p, MiB, s1));
    EXPECT(device_of(p) == 1);
    CHECK(gpuMemsetAsync(p, 5, MiB, s1));
    CHECK(gpuFreeAsync(p, s1));
    CHECK(gpuMallocAsync(&q, MiB, s1)); /* again, now from the cache's device 1 blocks */
    EXPECT(device_of(q) == 1);
    CHECK(gpuFreeAsync(q, s1));
    CHECK(gpuStreamSynchronize(s1));
    int cur = -1;
    CHECK(gpuGetDevice(&cur));
    EXPECT(cur == 0);
    EXPECT(sim_counters(0).faults == 0 && sim_counters(1).faults == 0);
    EXPECT(sim_counters(0).reserved_bytes == 0);
    /* A pool of the program's own made current on device 1: allocations on s1 take it while
     * device 0 is current; device 0's stay the cache's. */
    pool_t mine;
    CHECK(pool_create(&mine, 1));
    CHECK(pool_set_current(1, mine));
    CHECK(gpuMallocAsync(&p, MiB, s1));
    EXPECT(device_of(p) == 1);
    EXPECT(used_of(mine) == MiB);
    CHECK(gpuFreeAsync(p, s1));
    CHECK(gpuStreamSynchronize(s1));
    EXPECT(reached_driver(s1, 1));
    EXPECT(!reached_driver(s0, 0));
    CHECK(gpuStreamDestroy(s1));
}

static void trim(gpuStream_t s)
{
    pool_t def, mine;
    void *p = NULL;
    CHECK(pool_default(&def, 0));
    CHECK(pool_create(&mine, 0));
    CHECK(gpuMallocAsync(&p, 64 * MiB, s));
    CHECK(gpuFreeAsync(p, s));
    CHECK(gpuStreamSynchronize(s));
    EXPECT(sim_counters(0).reserved_bytes >= 64 * MiB); /* the cache keeps its segment */
    CHECK(pool_trim(mine, 0));
    EXPECT(sim_counters(0).reserved_bytes >= 64 * MiB);
    CHECK(pool_trim(def, 0));
    EXPECT(sim_counters(0).reserved_bytes == 0);
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    gpuStream_t s;
    CHECK(gpuStreamCreate(&s));
    if (strcmp(c, "own-pool") == 0)
        own_pool(s);
    else if (strcmp(c, "peer-access") == 0)
        peer_access(s);
    else if (strcmp(c, "from-pool") == 0)
        from_pool(s);
    else if (strcmp(c, "stream-device") == 0)
        stream_device(s);
    else if (strcmp(c, "trim") == 0)
        trim(s);
    else {
        fprintf(stderr, "unknown case '%s'\n", c);
        return 2;
    }
    CHECK(gpuStreamDestroy(s));
    printf("mempools %s: ok\n", c);
    return 0;
}
