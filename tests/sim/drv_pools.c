/* drv_pools.c: the driver's memory pools: creation and its documented refusals, each device's
 * current and default pool, allocation from the current pool and from a given one, memory kept
 * up to the release threshold and given back at a synchronization or a trim, the attributes and
 * peers' access. Run with SIMDEV_DEVICES=2 SIMDEV_MEMORY=64M. */
#include <cudaTypedefs.h>

#include "drv_check.h"

#define MiB ((size_t)1 << 20)

static CUmemPoolProps props_of(int dev)
{
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static cuuint64_t attr(CUmemoryPool pool, CUmemPool_attribute a)
{
    cuuint64_t v = 12345;
    CU_OK(cuMemPoolGetAttribute(pool, a, &v));
    return v;
}

static size_t free_bytes(void)
{
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    return f;
}

static void creation_refusals(void)
{
    CUmemoryPool pool;
    CUmemPoolProps p = props_of(0);
    CHECK_EQ(cuMemPoolCreate(NULL, &p), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemPoolCreate(&pool, NULL), CUDA_ERROR_INVALID_VALUE);
    p.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    CHECK_EQ(cuMemPoolCreate(&pool, &p), CUDA_ERROR_INVALID_VALUE);
    p = props_of(2);
    CHECK_EQ(cuMemPoolCreate(&pool, &p), CUDA_ERROR_INVALID_VALUE);
    p = props_of(0);
    p.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CHECK_EQ(cuMemPoolCreate(&pool, &p), CUDA_ERROR_NOT_SUPPORTED);
    p = props_of(0);
    p.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CHECK_EQ(cuMemPoolCreate(&pool, &p), CUDA_ERROR_NOT_SUPPORTED);
    p = props_of(0);
    p.reserved[3] = 1;
    CHECK_EQ(cuMemPoolCreate(&pool, &p), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemAllocAsync takes the stream's device's current pool; a destroyed current pool leaves the
 * default one current, and its allocations still out stay valid until freed. */
static void current_pool(CUstream s)
{
    CUmemoryPool def, cur, mine, other;
    CUmemPoolProps p0 = props_of(0), p1 = props_of(1);
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    CHECK(cur == def);
    CU_OK(cuMemPoolCreate(&mine, &p0));
    CU_OK(cuMemPoolCreate(&other, &p1));
    CHECK(mine != def && other != mine);
    CHECK_EQ(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuDeviceSetMemPool(0, other), CUDA_ERROR_INVALID_VALUE); /* not local to 0 */
    CHECK_EQ(cuDeviceSetMemPool(2, mine), CUDA_ERROR_INVALID_DEVICE);
    CHECK_EQ(cuDeviceSetMemPool(0, (CUmemoryPool)&cur), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuDeviceSetMemPool(0, mine));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    CHECK(cur == mine);
    CU_OK(cuDeviceGetDefaultMemPool(&cur, 0));
    CHECK(cur == def);

    CUdeviceptr a;
    uint64_t r0 = sim_counters(0).reserved_bytes;
    CU_OK(cuMemAllocAsync(&a, MiB, s));
    CHECK_EQ(attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), MiB);
    CHECK_EQ(attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    CU_OK(cuMemPoolDestroy(mine));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    CHECK(cur == def);
    CHECK_EQ(cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &r0),
             CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemsetD8Async(a, 7, MiB, s)); /* still live */
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuStreamSynchronize(s));
    CHECK_EQ(sim_counters(0).faults, 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    CU_OK(cuMemPoolDestroy(other));
    CHECK_EQ(cuMemPoolDestroy(other), CUDA_ERROR_INVALID_VALUE);
}

/* Freed memory stays in the pool up to its release threshold (default 0) until a
 * synchronization, serves the next allocation, and goes at a trim. */
static void threshold_and_trim(CUstream s)
{
    CUmemoryPool pool;
    CUdeviceptr a, b;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    size_t f0 = free_bytes();
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    CU_OK(cuMemAllocAsync(&a, 4 * MiB, s));
    CU_OK(cuMemFreeAsync(a, s));
    struct gate g = {0};
    CU_OK(cuLaunchHostFunc(s, drv_gate_fn, &g));
    gate_open(&g);
    while (!gate_flag(&g.done))
        usleep(1000);
    /* The free has completed, but no one synchronized: the pool still holds the memory. */
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(free_bytes(), f0 - 4 * MiB);
    CU_OK(cuStreamSynchronize(s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_EQ(free_bytes(), f0);

    cuuint64_t keep = 8 * MiB;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 8 * MiB);
    CU_OK(cuMemAllocAsync(&a, 4 * MiB, s));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuCtxSynchronize());
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB); /* under threshold */
    uint64_t peak = sim_counters(0).peak_reserved_bytes;
    CU_OK(cuMemAllocAsync(&b, 2 * MiB, s)); /* served from what the pool keeps */
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
    CHECK_EQ(free_bytes(), f0 - 4 * MiB);
    CHECK_EQ(sim_counters(0).peak_reserved_bytes, peak);
    CU_OK(cuMemPoolTrimTo(pool, 0)); /* only the unused part can go */
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * MiB);
    CU_OK(cuMemFreeAsync(b, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolTrimTo(pool, 1 * MiB)); /* keeps at least what was asked */
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 1 * MiB);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(free_bytes(), f0);
    keep = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CHECK_EQ(cuMemPoolTrimTo((CUmemoryPool)&keep, 0), CUDA_ERROR_INVALID_VALUE);
}

static void watermarks(CUstream s)
{
    CUmemoryPool pool;
    CUdeviceptr a, b;
    CUmemPoolProps p = props_of(0);
    CU_OK(cuMemPoolCreate(&pool, &p));
    CU_OK(cuMemAllocFromPoolAsync(&a, 3 * MiB, pool, s));
    CU_OK(cuMemAllocFromPoolAsync(&b, 1000, pool, s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 3 * MiB + 1024);
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuStreamSynchronize(s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1024);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 3 * MiB + 1024);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 3 * MiB + 1024);
    cuuint64_t v = 5;
    CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemPoolGetAttribute(pool, (CUmemPool_attribute)99, &v), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, NULL),
             CUDA_ERROR_INVALID_VALUE);
    v = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1024);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 1024);
    int reuse = -1;
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    CHECK_EQ(reuse, 1);
    CU_OK(cuMemFreeAsync(b, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
}

/* A pool of device 1 serves a stream of device 0, in both stream flavours. */
static void from_other_device(CUstream s)
{
    CUmemoryPool pool;
    CUdeviceptr a, b;
    CUmemPoolProps p = props_of(1);
    CU_OK(cuMemPoolCreate(&pool, &p));
    CHECK_EQ(cuMemAllocFromPoolAsync(&a, 0, pool, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemAllocFromPoolAsync(&a, MiB, (CUmemoryPool)&a, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocFromPoolAsync(&a, MiB, pool, s));
    PFN_cuMemAllocFromPoolAsync_v11020_ptsz pt;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemAllocFromPoolAsync", (void **)&pt, 11020,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    CU_OK(pt(&b, MiB, pool, NULL));
    int ord = -1;
    CU_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a));
    CHECK_EQ(ord, 1);
    CU_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
    CHECK_EQ(ord, 1);
    CHECK_EQ(sim_counters(1).malloc_async_calls, 2);
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuMemFreeAsync(b, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(sim_counters(1).reserved_bytes, 0);
    CU_OK(cuMemPoolDestroy(pool));
}

static CUmemAccess_flags access_of(CUmemoryPool pool, int dev)
{
    CUmemAccess_flags f = (CUmemAccess_flags)77;
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    CU_OK(cuMemPoolGetAccess(&f, pool, &loc));
    return f;
}

static void peer_access(void)
{
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_EQ(access_of(pool, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK_EQ(access_of(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemPoolSetAccess(pool, &d, 1));
    CHECK_EQ(access_of(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUmemAccessDesc bad[2] = {{{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_NONE},
                              {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_NONE}};
    CHECK_EQ(cuMemPoolSetAccess(pool, bad, 2), CUDA_ERROR_INVALID_VALUE); /* the owner's */
    CHECK_EQ(access_of(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);     /* none applied */
    bad[1].location.id = 2;
    CHECK_EQ(cuMemPoolSetAccess(pool, bad, 2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemPoolSetAccess(pool, bad, 1));
    CHECK_EQ(access_of(pool, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccess_flags f;
    CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CHECK_EQ(cuMemPoolGetAccess(&f, pool, &host), CUDA_ERROR_INVALID_VALUE);
}

/* Every entry point is found by cuGetProcAddress at the version of cudaTypedefs.h. */
static void lookups(void)
{
    static const char *const names[] = {
        "cuMemPoolCreate", "cuMemPoolDestroy", "cuDeviceSetMemPool", "cuDeviceGetMemPool",
        "cuDeviceGetDefaultMemPool", "cuMemAllocFromPoolAsync", "cuMemPoolSetAccess",
        "cuMemPoolGetAccess", "cuMemPoolSetAttribute", "cuMemPoolGetAttribute", "cuMemPoolTrimTo",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult st;
        CU_OK(cuGetProcAddress(names[i], &fn, 11020, CU_GET_PROC_ADDRESS_DEFAULT, &st));
        CHECK(fn != NULL);
    }
}

int main(void)
{
    drv_begin();
    CHECK_EQ(cuMemPoolTrimTo(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    drv_use_primary(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    creation_refusals();
    current_pool(s);
    threshold_and_trim(s);
    watermarks(s);
    from_other_device(s);
    peer_access();
    lookups();
    CU_OK(cuStreamDestroy(s));
    puts("drv_pools: ok");
    return 0;
}
