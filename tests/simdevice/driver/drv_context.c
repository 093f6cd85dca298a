/* drv_context.c: contexts. Each device has one primary context (retained and released by the
 * runtime, reset by cudaDeviceReset); programs may create more. Every host thread has a stack
 * of current contexts. Memory and streams belong to the context current when they were made. */
#include <pthread.h>
#include <stdlib.h>

#include "drv.h"

#define CTX_MAGIC 0x43747821u
#define STACK_MAX 32

static struct drv_ctx primaries[64];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_id = 1;

static __thread struct drv_ctx *stack[STACK_MAX];
static __thread int depth;

/* Points the core at c, so its allocations land on c's device and are owned by c. */
static void bind_core(struct drv_ctx *c)
{
    if (c)
        sd_set_device(c->dev);
    sd_set_owner(c);
}

static void set_top(struct drv_ctx *c)
{
    if (depth == 0 && c)
        depth = 1;
    if (depth)
        stack[depth - 1] = c;
    bind_core(c);
}

struct drv_ctx *drv_primary(int dev)
{
    struct drv_ctx *c = &primaries[dev];
    pthread_mutex_lock(&ctx_lock);
    if (!c->magic) {
        c->magic = CTX_MAGIC;
        c->dev = dev;
        c->primary = true;
        c->id = next_id++;
    }
    pthread_mutex_unlock(&ctx_lock);
    return c;
}

bool drv_ctx_valid(const struct drv_ctx *c)
{
    return c && c->magic == CTX_MAGIC;
}

struct drv_ctx *drv_current(void)
{
    return depth ? stack[depth - 1] : NULL;
}

CUresult drv_enter(void)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct drv_ctx *c = drv_current();
    if (!drv_ctx_valid(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    /* A primary context released to zero is inactive: using it is an error, as on a GPU. */
    if (c->primary && __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    bind_core(c);
    return CUDA_SUCCESS;
}

CUresult drv_enter_live(void)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_check_current());
}

CUresult drv_enter_or_none(int live)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (drv_current() == NULL) /* the pointer or handle names its context (cuda-python #2750) */
        return CUDA_SUCCESS;
    return live ? drv_enter_live() : drv_enter();
}

static CUresult check_dev(CUdevice dev)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return dev < 0 || dev >= drv_device_count() ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

/* Retains the primary context of a device and hands it out. */
API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct drv_ctx *c = drv_primary(dev);
    pthread_mutex_lock(&ctx_lock);
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ctx_lock);
    *pctx = c;
    return CUDA_SUCCESS;
}

/* Drops one retain; the last one frees what the context owned. */
API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    struct drv_ctx *c = drv_primary(dev);
    pthread_mutex_lock(&ctx_lock);
    bool inactive = __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) == 0;
    bool last = !inactive && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_RELEASE) == 0;
    pthread_mutex_unlock(&ctx_lock);
    if (inactive)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (last)
        sd_owner_release(dev, c, 1);
    return CUDA_SUCCESS;
}

/* Frees everything the primary context owns and clears its sticky error; it stays retained. */
API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    return drv_ret(sd_owner_release(dev, drv_primary(dev), 1));
}

/* Whether the primary context is active (retained), and its flags. */
API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    struct drv_ctx *c = drv_primary(dev);
    pthread_mutex_lock(&ctx_lock);
    *flags = c->flags;
    *active = __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) > 0;
    pthread_mutex_unlock(&ctx_lock);
    return CUDA_SUCCESS;
}

/* Sets the primary context's scheduling flags. */
API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    struct drv_ctx *c = drv_primary(dev);
    pthread_mutex_lock(&ctx_lock); /* cuDevicePrimaryCtxGetState reads them under it */
    c->flags = flags;
    pthread_mutex_unlock(&ctx_lock);
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct drv_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&ctx_lock);
    *c = (struct drv_ctx){.magic = CTX_MAGIC, .dev = dev, .refs = 1, .flags = flags,
                          .id = next_id++};
    pthread_mutex_unlock(&ctx_lock);
    stack[depth++] = c;
    bind_core(c);
    *pctx = c;
    return CUDA_SUCCESS;
}

/* Creates a context on a device and pushes it on the calling thread's stack. */
API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

/* CUDA 11.4 form: execution-affinity parameters are not modelled and must be absent. */
API CUresult cuCtxCreate_v3(CUcontext *pctx, void *params, int nparams, unsigned flags,
                            CUdevice dev)
{
    if (params || nparams)
        return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create(pctx, flags, dev);
}

/* CUDA 12.5 form: creation parameters (affinity, CIG) are not modelled and must be absent. */
API CUresult cuCtxCreate_v4(CUcontext *pctx, void *params, unsigned flags, CUdevice dev)
{
    if (params)
        return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create(pctx, flags, dev);
}

/* Destroys a created context: its memory and streams go; it leaves every stack of this thread. */
API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    sd_owner_release(ctx->dev, ctx, 0);
    for (int i = 0; i < depth; i++)
        if (stack[i] == ctx) {
            for (int j = i; j + 1 < depth; j++)
                stack[j] = stack[j + 1];
            depth--;
            i--;
        }
    bind_core(drv_current());
    pthread_mutex_lock(&ctx_lock);
    ctx->magic = 0;
    pthread_mutex_unlock(&ctx_lock);
    free(ctx);
    return CUDA_SUCCESS;
}

/* Pushes a context on the calling thread's stack. */
API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    bind_core(ctx);
    return CUDA_SUCCESS;
}

/* Pops the calling thread's current context. */
API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct drv_ctx *c = stack[--depth];
    if (pctx)
        *pctx = c;
    bind_core(drv_current());
    return CUDA_SUCCESS;
}

/* Replaces the top of the stack (NULL pops it). */
API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) {
        if (depth)
            depth--;
        bind_core(drv_current());
        return CUDA_SUCCESS;
    }
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    set_top(ctx);
    return CUDA_SUCCESS;
}

/* Access from the current context's device to peer's memory (recorded per device: a
 * device's contexts share it here). CUDA_ERROR_INVALID_CONTEXT for a bad peer, 101 for the
 * current device itself, 704 when already on. */
static CUresult peer_access(CUcontext peer, unsigned flags, int on)
{
    CUresult rc = drv_enter();
    if (rc)
        return rc;
    if (!drv_ctx_valid(peer))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_peer_access(((struct drv_ctx *)peer)->dev, on));
}

API CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    return peer_access(peer, flags, 1);
}

/* 705 when it was not on. */
API CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    return peer_access(peer, 0, 0);
}

/* The calling thread's current context, or NULL. */
API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = drv_current();
    return CUDA_SUCCESS;
}

/* The current context's device. */
API CUresult cuCtxGetDevice(CUdevice *dev)
{
    CUresult rc = drv_enter();
    if (rc)
        return rc;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = drv_current()->dev;
    return CUDA_SUCCESS;
}

/* CUDA 13 form: the device of `ctx`, or of the current context when ctx is NULL. */
API CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(dev);
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = ctx->dev;
    return CUDA_SUCCESS;
}

/* Waits for all work of the current context's device. */
API CUresult cuCtxSynchronize(void)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_device_sync());
}

/* CUDA 13 form: synchronizes `ctx` (NULL: the current context). */
API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx)
        return cuCtxSynchronize();
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    int prev;
    sd_get_device(&prev);
    sd_set_device(ctx->dev);
    CUresult rc = drv_ret(sd_device_sync());
    sd_set_device(prev);
    return rc;
}

/* The current context's flags. */
API CUresult cuCtxGetFlags(unsigned *flags)
{
    CUresult rc = drv_enter();
    if (rc)
        return rc;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct drv_ctx *c = drv_current();
    pthread_mutex_lock(&ctx_lock); /* a primary context's flags change from any thread */
    *flags = c->flags;
    pthread_mutex_unlock(&ctx_lock);
    return CUDA_SUCCESS;
}

/* A context's unique id. */
API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    if (!ctx) {
        CUresult rc = drv_enter();
        if (rc)
            return rc;
        ctx = drv_current();
    }
    if (!drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    *id = ctx->id;
    return CUDA_SUCCESS;
}

/* The API version a context was created with (3020 for every context made here). */
API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx && !drv_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 3020;
    return CUDA_SUCCESS;
}

/* Stream priorities exist but are not modelled: the range is [0, 0]. */
API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_priority_range(least, greatest));
}

/* The CUDA 7 forms of the primary-context calls: the same behaviour here. */
API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}
API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}
API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
