/* The CUDA door. Every copy of NVIDIA's runtime in the process (the shared libcudart, or the
 * static runtime inside the program and inside cuBLAS, cuDNN, NCCL...) and every driver-API
 * program reaches the driver through dlsym and cuGetProcAddress: the shim answers both with its
 * own entry points for the calls the cache serves, each only in place of the exact ABI variant
 * the caller asked for (legacy or per-thread stream, and never a newer version), and exports
 * the same entry points by name for programs linked with -lcuda. The logic is front.c's, over
 * the driver's descriptor (descriptor.c), whose "devices" are context slots
 * (ctx.c). */
#include <stdint.h>
#include <string.h>

#include "ctx.h"
#include "cuda_abi.h"
#include "descriptor.h"
#include "door.h"
#include "driver.h"
#include "front.h"
#include "front_lane.h"
#include "host_front.h"
#include "init.h"
#include "loader.h"
#include "pools.h"
#include "served.h"

typedef ca_rt_err (*gpa_v1_fn)(const char *symbol, void **pfn, int version, uint64_t flags);
typedef ca_rt_err (*gpa_v2_fn)(const char *symbol, void **pfn, int version, uint64_t flags,
                               unsigned *status);

#define DECLARE(name, base, version, flags, proto, params) CA_EXPORT ca_rt_err name params;
CUABI_SERVED(DECLARE)

/* The shim's entry point of each served index. */
static void (*const wrapper[N_SERVED])(void) = {
#define WRAPPER(name, base, version, flags, proto, params) (void (*)(void))name,
    CUABI_SERVED(WRAPPER)
};

#define REAL(T, i) CA_DRV_REAL(T, i)

void *ca_drv_served_dlsym(int i, void *handle, const char *name)
{
    void *p = ca_real_dlsym()(handle, name);
    if (p == NULL || p == ca_drv_fn_ptr(wrapper[i]))
        return p;
    ca_drv_note(handle, name, p);
    ca_drv_served_named(i, p);
    return ca_drv_fn_ptr(wrapper[i]);
}

/* A real lookup's answer replaced by the shim's entry point when it is exactly the variant
 * the shim serves under that name. */
static void swap(const char *symbol, void **pfn, int version)
{
    if (symbol == NULL || pfn == NULL || *pfn == NULL)
        return;
    /* The lookup itself is told apart by the version asked: the runtime must get the shim's
     * lookup back, or its later lookups go past the shim (the driver may answer with an
     * internal address that no other way shows). */
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        if (version >= 11030)
            *pfn = ca_drv_fn_ptr(wrapper[version >= 12000 ? I_cuGetProcAddress_v2 : I_cuGetProcAddress]);
        return;
    }
    for (int i = 0; i < N_SERVED; i++)
        if (ca_drv_served_is_real(i, *pfn) && strcmp(ca_drv_served_table[i].base, symbol) == 0) {
            *pfn = ca_drv_fn_ptr(wrapper[i]);
            return;
        }
}

/* Where cudaMalloc and -lcuda programs allocate: a cached block (front.c), or the driver's when
 * the cache steps aside. */
ca_rt_err cuMemAlloc_v2(cuabi_deviceptr *p, size_t size) { return ca_front_malloc(&ca_drv_rt, (void **)p, size); }
/* The block goes back to the cache; a pointer the cache never gave goes to the driver. */
ca_rt_err cuMemFree_v2(cuabi_deviceptr p) { return ca_front_free(&ca_drv_rt, (void *)(uintptr_t)p); }
/* A stream-ordered allocation: the cache's where the program left the stream's device its
 * default pool, else the real driver's (pools.c). */
static ca_rt_err alloc_async(cuabi_deviceptr *p, size_t size, cuabi_stream_t s, int ptsz)
{
    if (ca_drv_pool_passthrough(s)) {
        ca_rt_err (*real_alloc)(cuabi_deviceptr *, size_t, cuabi_stream_t) =
            REAL(ca_rt_err(*)(cuabi_deviceptr *, size_t, cuabi_stream_t),
                 ptsz ? I_cuMemAllocAsync_ptsz : I_cuMemAllocAsync);
        if (real_alloc != NULL)
            return real_alloc(p, size, s);
    }
    return ca_front_malloc_async(&ca_drv_rt, (void **)p, size, s, ptsz);
}

/* The runtime's cudaMallocAsync: the cache's block unless the stream's pool is the program's. */
ca_rt_err cuMemAllocAsync(cuabi_deviceptr *p, size_t size, cuabi_stream_t s) { return alloc_async(p, size, s, 0); }
/* The same where the null stream means the calling thread's default stream (per-thread builds). */
ca_rt_err cuMemAllocAsync_ptsz(cuabi_deviceptr *p, size_t size, cuabi_stream_t s) { return alloc_async(p, size, s, 1); }
/* Back to the cache in stream order (docs/arena.md, "Pools and the reuse contract"). */
ca_rt_err cuMemFreeAsync(cuabi_deviceptr p, cuabi_stream_t s) { return ca_front_free_async(&ca_drv_rt, (void *)(uintptr_t)p, s, 0); }
/* The same where the null stream means the calling thread's default stream. */
ca_rt_err cuMemFreeAsync_ptsz(cuabi_deviceptr p, cuabi_stream_t s) { return ca_front_free_async(&ca_drv_rt, (void *)(uintptr_t)p, s, 1); }
/* cudaMallocPitch and cudaMalloc3D stay the driver's (the pitch is the driver's choice); when
 * the device is full, the cache makes room (front.h) and the call is made again, as it would
 * have succeeded without the cache. */
ca_rt_err cuMemAllocPitch_v2(cuabi_deviceptr *p, size_t *pitch, size_t width, size_t height,
                             unsigned elem)
{
    ca_rt_err (*real)(cuabi_deviceptr *, size_t *, size_t, size_t, unsigned) =
        REAL(ca_rt_err(*)(cuabi_deviceptr *, size_t *, size_t, size_t, unsigned),
             I_cuMemAllocPitch_v2);
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = real(p, pitch, width, height, elem);
    if (e == CUABI_ERROR_OUT_OF_MEMORY && ca_front_make_room(&ca_drv_rt))
        e = real(p, pitch, width, height, elem);
    return e;
}

/* Free memory counts what the cache holds unused: programs size their work by it. */
ca_rt_err cuMemGetInfo_v2(size_t *f, size_t *t) { return ca_front_mem_get_info(&ca_drv_rt, f, t); }
/* The cache learns each stream's device, and whether it waits for the legacy stream
 * (non-blocking), where the stream is made: later calls name only its handle. */
ca_rt_err cuStreamCreate(cuabi_stream_t *s, unsigned flags) { return ca_front_stream_create(&ca_drv_rt, CA_CTOR_FLAGS, (void **)s, flags, 0); }
/* As cuStreamCreate: the priority changes nothing the cache keeps. */
ca_rt_err cuStreamCreateWithPriority(cuabi_stream_t *s, unsigned flags, int priority) { return ca_front_stream_create(&ca_drv_rt, CA_CTOR_PRIORITY, (void **)s, flags, priority); }
/* Before the stream goes, the cache records its last work, which its blocks still wait for:
 * the handle may name a new stream later. */
ca_rt_err cuStreamDestroy_v2(cuabi_stream_t s) { return ca_front_stream_destroy(&ca_drv_rt, s); }
/* A context synchronization completes the fences of its slot. */
ca_rt_err cuCtxSynchronize(void) { return ca_front_device_synchronize(&ca_drv_rt); }

/* CUDA 13's form, of a given context (NULL: the current one). */
ca_rt_err cuCtxSynchronize_v2(cuabi_context_t ctx)
{
    ca_rt_err (*sync)(cuabi_context_t) = REAL(ca_rt_err(*)(cuabi_context_t), I_cuCtxSynchronize_v2);
    if (sync == NULL)
        return CUABI_ERROR_NOT_FOUND;
    int slot = -1;
    if (!ca_cache_ready(&ca_drv_rt) ||
        (ctx != NULL ? (slot = ca_drv_slot_of(ctx)) : (ca_drv_get_slot(&slot), slot)) < 0)
        return sync(ctx);
    uint64_t token = ca_device_sync_begin(ca_drv_rt.arena, slot);
    ca_rt_err e = sync(ctx);
    if (e == 0)
        ca_device_synchronized(ca_drv_rt.arena, slot, token);
    return e;
}

/* The context of `slot` lost its memory, its pinned memory too: the cache forgets what it held
 * there. */
static void forget_slot(int slot)
{
    ca_front_forget_device(&ca_drv_rt, slot);
    ca_front_host_forget(&ca_drv_rt, ca_drv_slot_context(slot));
}

/* The primary context of dev went inactive, its memory with it: the cache forgets its blocks
 * and its slot (a context retained later is met anew). Its expandable pages are forgotten, not
 * unmapped: no context is left to unmap them in. */
static void primary_gone(int slot)
{
    forget_slot(slot);
    ca_drv_slot_drop(slot);
}

static ca_rt_err primary_reset(ca_rt_err (*reset)(int), int dev)
{
    if (reset == NULL)
        return CUABI_ERROR_NOT_FOUND;
    if (!ca_cache_ready(&ca_drv_rt))
        return reset(dev);
    int slot = ca_drv_primary_slot(dev);
    int live = ca_drv_primary_of(dev) != NULL;
    if (slot >= 0 && live)
        ca_device_resetting(ca_drv_rt.arena, slot);
    ca_rt_err e = reset(dev);
    /* Reset after a release to zero (Numba's order): whatever the cache still held there is
     * gone too. */
    if (e == 0 && slot >= 0 && live)
        forget_slot(slot);
    else if (e == 0 && slot >= 0)
        primary_gone(slot);
    return e;
}

/* The last release of a primary context destroys it and frees its memory. */
static ca_rt_err primary_release(ca_rt_err (*release)(int), int dev)
{
    if (release == NULL)
        return CUABI_ERROR_NOT_FOUND;
    if (!ca_cache_ready(&ca_drv_rt))
        return release(dev);
    int slot = ca_drv_primary_slot(dev);
    ca_rt_err e = release(dev);
    if (e == 0 && slot >= 0 && ca_drv_primary_of(dev) == NULL)
        primary_gone(slot);
    return e;
}

/* Releases a primary context; the last release makes the cache forget what it held there. */
ca_rt_err cuDevicePrimaryCtxRelease(int dev) { return primary_release(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxRelease), dev); }
/* CUDA 11's name for the same call: runtimes ask for either. */
ca_rt_err cuDevicePrimaryCtxRelease_v2(int dev) { return primary_release(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxRelease_v2), dev); }

/* A primary context reset (cudaDeviceReset) frees its memory: the cache forgets it. */
ca_rt_err cuDevicePrimaryCtxReset(int dev) { return primary_reset(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxReset), dev); }
/* CUDA 11's name for the same call: runtimes ask for either. */
ca_rt_err cuDevicePrimaryCtxReset_v2(int dev) { return primary_reset(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxReset_v2), dev); }

/* A destroyed context's memory is gone: the cache forgets it, and its slot is free again. */
ca_rt_err cuCtxDestroy_v2(cuabi_context_t ctx)
{
    ca_rt_err (*destroy)(cuabi_context_t) = REAL(ca_rt_err(*)(cuabi_context_t), I_cuCtxDestroy_v2);
    if (destroy == NULL)
        return CUABI_ERROR_NOT_FOUND;
    int slot = ca_cache_ready(&ca_drv_rt) ? ca_drv_slot_of(ctx) : -1;
    if (slot >= 0)
        ca_device_resetting(ca_drv_rt.arena, slot);
    ca_rt_err e = destroy(ctx);
    if (e == 0 && slot >= 0) {
        forget_slot(slot);
        ca_drv_slot_drop(slot);
    }
    return e;
}

/* Access from the current context's device to peer's memory: the driver's, then the same
 * for the cache's mapped memory of peer, which the driver's does not reach. */
ca_rt_err cuCtxEnablePeerAccess(cuabi_context_t peer, unsigned flags)
{
    ca_rt_err (*enable)(cuabi_context_t, unsigned) =
        REAL(ca_rt_err(*)(cuabi_context_t, unsigned), I_cuCtxEnablePeerAccess);
    if (enable == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = enable(peer, flags);
    if (e == 0)
        ca_front_peer_access(&ca_drv_rt, ca_drv_slot_of(peer), true);
    return e;
}

/* The access taken away again, from the cache's mapped memory of peer too. */
ca_rt_err cuCtxDisablePeerAccess(cuabi_context_t peer)
{
    ca_rt_err (*disable)(cuabi_context_t) =
        REAL(ca_rt_err(*)(cuabi_context_t), I_cuCtxDisablePeerAccess);
    if (disable == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = disable(peer);
    if (e == 0)
        ca_front_peer_access(&ca_drv_rt, ca_drv_slot_of(peer), false);
    return e;
}

/* The lookup every runtime uses: the real answer, with the served entry points put in. */
ca_rt_err cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                              unsigned *status)
{
    gpa_v2_fn gpa = REAL(gpa_v2_fn, I_cuGetProcAddress_v2);
    if (gpa == NULL)
        return CUABI_ERROR_NOT_INITIALIZED;
    ca_rt_err e = gpa(symbol, pfn, version, flags, status);
    if (e == 0)
        swap(symbol, pfn, version);
    return e;
}

/* CUDA 11.3 to 11.8's lookup, which runtimes of that age still call: answered as above. */
ca_rt_err cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    gpa_v1_fn gpa = REAL(gpa_v1_fn, I_cuGetProcAddress);
    if (gpa == NULL)
        return CUABI_ERROR_NOT_INITIALIZED;
    ca_rt_err e = gpa(symbol, pfn, version, flags);
    if (e == 0)
        swap(symbol, pfn, version);
    return e;
}
