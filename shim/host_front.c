/* Pinned host memory through the cache. The pool is made at the first pinned allocation the
 * cache serves; its backend is the runtime's own calls. A free waits as the driver's free of
 * pinned memory waits (docs/gpu.md finding 12: cuMemFreeHost returned only after a queued 200 ms
 * host function): the calling thread's context (device, for HIP) is synchronized, or, where the
 * runtime has contexts and none is current, the block's own (ca_runtime.host_wait), then the
 * block is cached. The driver's pinning and unpinning, milliseconds each, are what the cache saves;
 * the wait costs microseconds on an idle device and is the driver's own, which a program may
 * count on (docs/arena.md, "Pinned host memory"). */
#include <stdint.h>

#include "host_front.h"
#include "host/pool.h"
#include "init.h"
#include "process.h"
#include "stats_source.h"

/* The runtime's code of the last refusal the pool's backend saw in this thread. */
static _Thread_local ca_rt_err last_code;

static int status_of(ca_runtime *rt, ca_rt_err e)
{
    if (e == rt->codes.success)
        return CA_OK;
    last_code = e;
    return e == rt->codes.out_of_memory ? CA_ERR_OOM : CA_ERR_BACKEND;
}

static int be_alloc(void *ctx, size_t size, unsigned flags, void **out, void **owner)
{
    ca_runtime *rt = ctx;
    int rc = status_of(rt, rt->fn.host_alloc(out, size, flags));
    *owner = rc == CA_OK && rt->host_owner ? rt->host_owner() : NULL;
    return rc;
}

static int be_release(void *ctx, void *p)
{
    ca_runtime *rt = ctx;
    return status_of(rt, rt->fn.host_free(p));
}

static int be_wait(void *ctx, void *owner)
{
    ca_runtime *rt = ctx;
    return status_of(rt, rt->host_wait ? rt->host_wait(rt, owner) : rt->fn.device_synchronize());
}

/* rt's pool, made at the first call that needs one; NULL when the cache does not serve pinned
 * memory (CACHEALLOC_PINNED=0, no cache, or no room for the pool). */
static ca_host_pool *pool_of(ca_runtime *rt, bool make)
{
    ca_host_pool *hp = atomic_load_explicit(&rt->host_pool, memory_order_acquire);
    if (hp)
        return hp;
    /* The runtime's functions are found here whether or not the cache serves pinned memory. */
    bool ready = ca_cache_ready(rt);
    if (!make || !ready || !ca_shim_options()->pinned || !rt->fn.host_alloc || !rt->fn.host_free ||
        !rt->fn.device_synchronize)
        return NULL;
    pthread_mutex_lock(&rt->init_lock);
    hp = atomic_load_explicit(&rt->host_pool, memory_order_acquire);
    if (!hp) {
        ca_host_backend be = {rt, be_alloc, be_release, be_wait};
        ca_host_config cfg = {.limit_bytes = ca_shim_options()->pinned_limit,
                              .trace = ca_shim_config()->trace,
                              .trace_ctx = ca_shim_config()->trace_ctx};
        hp = ca_host_pool_create(&be, &cfg);
        atomic_store_explicit(&rt->host_pool, hp, memory_order_release);
    }
    pthread_mutex_unlock(&rt->init_lock);
    return hp;
}

ca_rt_err ca_front_host_alloc(ca_runtime *rt, void **ptr, size_t size, unsigned flags)
{
    ca_host_pool *hp = pool_of(rt, true);
    if (!hp || !ptr || size == 0)
        return rt->fn.host_alloc ? rt->fn.host_alloc(ptr, size, flags) : rt->codes.not_initialized;
    ca_stats_ensure(rt); /* a program may pin host memory before any device allocation */
    last_code = rt->codes.out_of_memory; /* a refusal by the limit, with no driver call */
    int rc = ca_host_malloc(hp, size, flags, ptr);
    return rc == CA_OK ? rt->codes.success : last_code;
}

ca_rt_err ca_front_host_free(ca_runtime *rt, void *ptr)
{
    ca_host_pool *hp = pool_of(rt, false);
    int rc = hp && ptr ? ca_host_free(hp, ptr) : CA_ERR_NOT_OURS;
    switch (rc) {
    case CA_OK:
        return rt->codes.success;
    case CA_ERR_NOT_OURS:
        return rt->fn.host_free ? rt->fn.host_free(ptr) : rt->codes.not_initialized;
    case CA_ERR_INVALID: /* inside a block, or freed already: the driver's answer (measured) */
        return rt->codes.invalid_value;
    default:
        return last_code;
    }
}

void ca_front_host_forget(ca_runtime *rt, void *owner)
{
    ca_host_pool *hp = pool_of(rt, false);
    if (hp)
        ca_host_forget_owner(hp, owner);
}

bool ca_front_host_locate(ca_runtime *rt, const void *p, uintptr_t *start, size_t *size)
{
    ca_host_pool *hp = pool_of(rt, false);
    return hp && ca_host_locate(hp, p, start, size);
}
