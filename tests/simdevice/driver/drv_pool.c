/* drv_pool.c: stream-ordered memory pools, over the core's model (sd_pool.c). Pool handles are
 * the core's. Codes are those cuda.h documents for each call. */
#include <string.h>

#include "drv.h"

_Static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps size");
_Static_assert(offsetof(CUmemPoolProps, max_size) == 24, "CUmemPoolProps.maxSize");

enum { ALLOC_PINNED = 1, LOC_DEVICE = 1, LOC_HOST_NUMA_CURRENT = 4 };

static CUresult check_init(void)
{
    return drv_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

#define CHECK_INIT()                      \
    do {                                  \
        CUresult rc_ = check_init();      \
        if (rc_)                          \
            return rc_;                   \
    } while (0)

static bool all_zero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Creates a pool of pinned device memory. Host pools, IPC handle types and usage flags are
 * not modelled: CUDA_ERROR_NOT_SUPPORTED, which the driver documents for what it cannot do. */
API CUresult cuMemPoolCreate(void **pool, const CUmemPoolProps *props)
{
    CHECK_INIT();
    if (!pool || !props || props->alloc_type != ALLOC_PINNED || props->win32_attrs ||
        !all_zero(props->reserved, sizeof props->reserved))
        return CUDA_ERROR_INVALID_VALUE;
    int type = props->location.type;
    if (type > LOC_DEVICE && type <= LOC_HOST_NUMA_CURRENT)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (type != LOC_DEVICE || props->location.id < 0 ||
        props->location.id >= drv_device_count())
        return CUDA_ERROR_INVALID_VALUE;
    if (props->handle_types || props->usage)
        return CUDA_ERROR_NOT_SUPPORTED;
    return drv_ret(sd_pool_create(pool, props->location.id, props->max_size));
}

/* Destroys a created pool; a device's default pool cannot be destroyed. */
API CUresult cuMemPoolDestroy(void *pool)
{
    CHECK_INIT();
    return drv_ret(sd_pool_destroy(pool));
}

/* The device's default memory pool. */
API CUresult cuDeviceGetDefaultMemPool(void **pool, CUdevice dev)
{
    CHECK_INIT();
    return drv_ret(sd_pool_default(dev, pool));
}

/* The device's current memory pool: the last one set, else the default one. */
API CUresult cuDeviceGetMemPool(void **pool, CUdevice dev)
{
    CHECK_INIT();
    return drv_ret(sd_pool_current(dev, pool));
}

/* Makes a pool of the device its current pool, which cuMemAllocAsync allocates from. */
API CUresult cuDeviceSetMemPool(CUdevice dev, void *pool)
{
    CHECK_INIT();
    return drv_ret(sd_pool_set_current(dev, pool));
}

/* Gives back what the pool keeps, down to minBytesToKeep reserved. */
API CUresult cuMemPoolTrimTo(void *pool, size_t keep)
{
    CHECK_INIT();
    return drv_ret(sd_pool_trim(pool, keep));
}

/* One attribute of a pool (int or cuuint64_t, by attribute). */
API CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value)
{
    CHECK_INIT();
    return drv_ret(sd_pool_attr(pool, attr, value, 0));
}

/* Sets one attribute of a pool; the current amounts are read-only. */
API CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value)
{
    CHECK_INIT();
    return drv_ret(sd_pool_attr(pool, attr, value, 1));
}

/* Sets devices' access to the pool's memory. */
API CUresult cuMemPoolSetAccess(void *pool, const struct sd_vmm_access *map, size_t count)
{
    CHECK_INIT();
    return drv_ret(sd_pool_set_access(pool, map, count));
}

/* A location's access to the pool's memory. */
API CUresult cuMemPoolGetAccess(int *flags, void *pool, const CUmemLocation *loc)
{
    CHECK_INIT();
    if (!loc)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_pool_get_access(flags, pool, loc->type, loc->id));
}

static CUresult from_pool(CUdeviceptr *p, size_t n, void *pool, CUstream s, int ptsz)
{
    CUresult rc = drv_enter_live();
    return rc ? rc : drv_ret(sd_malloc_from_pool((void **)p, n, pool, s, ptsz));
}

/* Stream-ordered allocation from a given pool, which may belong to another device. */
API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool, CUstream s)
{
    return from_pool(p, n, pool, s, 0);
}

/* The same; NULL names the calling thread's default stream. */
API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, void *pool, CUstream s)
{
    return from_pool(p, n, pool, s, 1);
}
