/* The program's own memory pool semantics. The cache stands in for each device's default pool
 * only: once the program makes another pool current on a device (cuDeviceSetMemPool) or gives
 * peers access to the default pool (cuMemPoolSetAccess), cuMemAllocAsync on that device goes to
 * the real driver, whose pool then has exactly the properties the program asked for. A trim of
 * a default pool trims the cache's memory of that device too, since the program means to give
 * memory back. cuMemAllocFromPoolAsync is never served: its blocks are the real driver's, and
 * so are their frees (the arena does not know them). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ctx.h"
#include "cuda_abi.h"
#include "driver.h"
#include "init.h"
#include "pools.h"
#include "process.h"

typedef ca_rt_err (*set_pool_fn)(int dev, cuabi_mempool_t pool);
typedef ca_rt_err (*get_pool_fn)(cuabi_mempool_t *pool, int dev);
typedef ca_rt_err (*set_access_fn)(cuabi_mempool_t pool, const struct CUmemAccessDesc_st *map,
                                   size_t count);
typedef ca_rt_err (*trim_fn)(cuabi_mempool_t pool, size_t keep);
typedef ca_rt_err (*count_fn)(int *count);
typedef ca_rt_err (*stream_ctx_fn)(cuabi_stream_t stream, cuabi_context_t *ctx);
typedef ca_rt_err (*ctx_device_fn)(int *dev);

/* Devices whose current pool the program chose; devices whose default pool it shares with
 * peers, and with which peers. Written under `lock`, read without it. */
static atomic_uint_fast64_t own_pool;
static atomic_uint_fast64_t shared;
static atomic_uint_fast64_t peers[CA_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The real driver function `base` at `version`, as T (NULL when the driver lacks it). */
#define REAL(T, base, version, exported) ((T)real_fn(base, version, exported))
static void (*real_fn(const char *base, int version, const char *exported))(void)
{
    void *p = ca_drv_lookup(base, version, CUABI_GPA_LEGACY, exported);
    void (*f)(void);
    memcpy(&f, &p, sizeof f);
    return f;
}

/* The device whose default pool `pool` is, or -1. */
static int default_pool_device(cuabi_mempool_t pool)
{
    count_fn count = REAL(count_fn, "cuDeviceGetCount", 2000, "cuDeviceGetCount");
    get_pool_fn get = REAL(get_pool_fn, "cuDeviceGetDefaultMemPool", 11020,
                           "cuDeviceGetDefaultMemPool");
    int n = 0;
    if (count == NULL || get == NULL || count(&n) != CUABI_SUCCESS)
        return -1;
    for (int dev = 0; dev < n && dev < CA_MAX_DEVICES; dev++) {
        cuabi_mempool_t def = NULL;
        if (get(&def, dev) == CUABI_SUCCESS && def == pool)
            return dev;
    }
    return -1;
}

static void set_bit(atomic_uint_fast64_t *mask, int bit, int on)
{
    uint_fast64_t b = (uint_fast64_t)1 << bit;
    if (on)
        atomic_fetch_or(mask, b);
    else
        atomic_fetch_and(mask, ~b);
}

/* The device of a context, asked of the driver with the context pushed (and popped again), so
 * the thread's current context is never disturbed. -1 when the driver refuses. */
static int context_device(cuabi_context_t ctx)
{
    const ca_drv_fns *f = ca_drv_fns_get();
    int dev = -1;
    if (f == NULL || f->ctx_push(ctx) != CUABI_SUCCESS)
        return -1;
    if (f->ctx_get_device(&dev) != CUABI_SUCCESS)
        dev = -1;
    void *popped;
    f->ctx_pop(&popped);
    return dev;
}

/* The device a stream-ordered allocation on `stream` takes memory from: the stream's own. */
static int stream_device(cuabi_stream_t stream)
{
    uintptr_t h = (uintptr_t)stream;
    if (h == 0 || h == CUABI_STREAM_LEGACY_VALUE || h == CUABI_STREAM_PER_THREAD_VALUE) {
        ctx_device_fn get = REAL(ctx_device_fn, "cuCtxGetDevice", 2000, "cuCtxGetDevice");
        int dev = -1;
        return get != NULL && get(&dev) == CUABI_SUCCESS ? dev : -1;
    }
    stream_ctx_fn ctx_of = REAL(stream_ctx_fn, "cuStreamGetCtx", 9020, "cuStreamGetCtx");
    cuabi_context_t ctx = NULL;
    if (ctx_of == NULL || ctx_of(stream, &ctx) != CUABI_SUCCESS)
        return -1; /* no stream: the front lets the real driver say so */
    return context_device(ctx);
}

/* The program's pool may have stopped being current behind the shim (destroyed, which makes
 * the default pool current again): asked only on the uncached path. */
static int still_own(int dev)
{
    get_pool_fn cur = REAL(get_pool_fn, "cuDeviceGetMemPool", 11020, "cuDeviceGetMemPool");
    get_pool_fn def = REAL(get_pool_fn, "cuDeviceGetDefaultMemPool", 11020,
                           "cuDeviceGetDefaultMemPool");
    cuabi_mempool_t c = NULL, d = NULL;
    if (cur == NULL || def == NULL || cur(&c, dev) != CUABI_SUCCESS ||
        def(&d, dev) != CUABI_SUCCESS)
        return 1;
    return c != d;
}

int ca_drv_pool_passthrough(void *stream)
{
    uint_fast64_t any = atomic_load_explicit(&own_pool, memory_order_acquire) |
                        atomic_load_explicit(&shared, memory_order_acquire);
    if (any == 0)
        return 0;
    int dev = stream_device(stream);
    if (dev < 0 || dev >= CA_MAX_DEVICES || !((any >> dev) & 1))
        return 0;
    if (atomic_load(&peers[dev]) != 0)
        return 1;
    pthread_mutex_lock(&lock);
    int own = still_own(dev);
    if (!own)
        set_bit(&own_pool, dev, 0);
    pthread_mutex_unlock(&lock);
    return own;
}

/* Sets a device's current pool; the cache steps aside there while it is not the default. */
CA_EXPORT ca_rt_err cuDeviceSetMemPool(int dev, cuabi_mempool_t pool)
{
    set_pool_fn set = REAL(set_pool_fn, "cuDeviceSetMemPool", 11020, "cuDeviceSetMemPool");
    if (set == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = set(dev, pool);
    if (e != CUABI_SUCCESS || dev < 0 || dev >= CA_MAX_DEVICES)
        return e;
    pthread_mutex_lock(&lock);
    set_bit(&own_pool, dev, default_pool_device(pool) != dev);
    pthread_mutex_unlock(&lock);
    return e;
}

/* Sets devices' access to a pool; a default pool shared with peers is the driver's to serve. */
CA_EXPORT ca_rt_err cuMemPoolSetAccess(cuabi_mempool_t pool,
                                       const struct CUmemAccessDesc_st *map, size_t count)
{
    set_access_fn set = REAL(set_access_fn, "cuMemPoolSetAccess", 11020, "cuMemPoolSetAccess");
    if (set == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = set(pool, map, count);
    int dev;
    if (e != CUABI_SUCCESS || (dev = default_pool_device(pool)) < 0)
        return e;
    const cuabi_access_desc *d = (const cuabi_access_desc *)(const void *)map;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < count; i++)
        if (d[i].location.type == CUABI_MEM_LOCATION_TYPE_DEVICE && d[i].location.id != dev &&
            d[i].location.id >= 0 && d[i].location.id < CA_MAX_DEVICES)
            set_bit(&peers[dev], d[i].location.id, d[i].flags != 0);
    set_bit(&shared, dev, atomic_load(&peers[dev]) != 0);
    pthread_mutex_unlock(&lock);
    return e;
}

/* Trims a pool; a device's default pool takes the cache's free memory of that device along. */
CA_EXPORT ca_rt_err cuMemPoolTrimTo(cuabi_mempool_t pool, size_t keep)
{
    trim_fn trim = REAL(trim_fn, "cuMemPoolTrimTo", 11020, "cuMemPoolTrimTo");
    if (trim == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = trim(pool, keep);
    struct ca_runtime *rt = ca_runtime_by_index(CA_RT_CUDA);
    if (e != CUABI_SUCCESS || rt == NULL || !ca_cache_ready(rt))
        return e;
    int dev = default_pool_device(pool);
    void *ctx = dev >= 0 ? ca_drv_primary_of(dev) : NULL;
    int slot = ctx != NULL ? ca_drv_slot_of(ctx) : -1;
    if (slot >= 0)
        ca_reclaim(rt->arena, slot);
    return e;
}
