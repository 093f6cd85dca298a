/* The allocation entry points' lane, inlined into each door: a call whose thread's lane
 * (lane.h) still holds, and which its own thread cache serves (tcache/hit.h), runs here alone,
 * with no call into the rest of the shim or the arena. Everything else goes to front.c: a
 * call off the lane to its full check (..._full), one the cache misses to the arena
 * (..._lane). */
#ifndef CACHEALLOC_SHIM_FRONT_LANE_H
#define CACHEALLOC_SHIM_FRONT_LANE_H

#include "tcache/hit.h"
#include "front.h"
#include "lane.h"

/* A call finds no lane (ca_lane_of: NULL) from inside one of the cache's own calls, whose
 * lanes are held then, nor while the door is shut: a lane is armed only once it opened. */

/* The lane of a stream-ordered call on (stream, ptsz), or NULL. */
CA_INLINE ca_lane *ca_front_lane_stream(const ca_runtime *rt, void *stream, int ptsz)
{
    ca_lane *l = ca_lane_of(rt);
    return l != NULL && l->async && l->stream == stream && l->ptsz == ptsz ? l : NULL;
}

/* cudaMalloc / hipMalloc. */
CA_INLINE ca_rt_err ca_front_malloc(ca_runtime *rt, void **ptr, size_t size)
{
    ca_lane *l = ca_lane_of(rt);
    int dev;
    if (l == NULL || !l->plain || ptr == NULL || size == 0 || (dev = ca_lane_device(rt, l)) < 0)
        return ca_front_malloc_full(rt, ptr, size);
    if (ca_malloc_hit(l->tc, dev, size, CA_STREAM_LEGACY, CA_API_PLAIN, ptr))
        return rt->codes.success;
    return ca_front_malloc_lane(rt, dev, ptr, size);
}

/* cudaFree / hipFree. */
CA_INLINE ca_rt_err ca_front_free(ca_runtime *rt, void *ptr)
{
    ca_lane *l = ca_lane_of(rt);
    if (l == NULL || !(l->plain & CA_LANE_FREE) || ptr == NULL)
        return ca_front_free_full(rt, ptr);
    /* Kept only as a block of the lane's device, whose sticky error would have staled it. */
    if (ca_free_hit(l->tc, ptr, CA_STREAM_LEGACY, CA_API_PLAIN, l->dev))
        return rt->codes.success;
    return ca_front_free_lane(rt, ptr, l->dev);
}

/* cudaMallocAsync / hipMallocAsync; ptsz: a _ptsz entry point (stream 0 = per-thread). */
CA_INLINE ca_rt_err ca_front_malloc_async(ca_runtime *rt, void **ptr, size_t size, void *stream,
                                        int ptsz)
{
    ca_lane *l = ca_front_lane_stream(rt, stream, ptsz);
    if (l == NULL || ptr == NULL || size == 0 || ca_lane_device(rt, l) < 0)
        return ca_front_malloc_async_full(rt, ptr, size, stream, ptsz);
    if (ca_malloc_hit(l->tc, l->kdev, size, l->key, CA_API_ASYNC, ptr))
        return rt->codes.success;
    return ca_front_malloc_async_lane(rt, l, ptr, size);
}

/* cudaFreeAsync / hipFreeAsync; ptsz as above. */
CA_INLINE ca_rt_err ca_front_free_async(ca_runtime *rt, void *ptr, void *stream, int ptsz)
{
    ca_lane *l = ca_front_lane_stream(rt, stream, ptsz);
    /* The per-thread stream's key is told to the arena per device, the block's own: off the
     * lane. */
    if (l == NULL || ptr == NULL || ((uintptr_t)l->key & 1u))
        return ca_front_free_async_full(rt, ptr, stream, ptsz);
    /* Kept only as a block of the lane's device, which had no sticky error when it was armed
     * (one since would have staled it); the lane is armed only where the real free exists. */
    if (ca_free_hit(l->tc, ptr, l->key, CA_API_ASYNC, l->kdev))
        return rt->codes.success;
    return ca_front_free_async_lane(rt, l, ptr);
}

#endif
