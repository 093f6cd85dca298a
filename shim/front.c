/* The shared logic of every interposed call. Bad input is answered by the real runtime itself
 * wherever that is safe (a NULL out-pointer, size 0, a NULL free), so the code returned and the
 * runtime's last error are exactly the runtime's own. */
#include <stdint.h>

#include "capture.h"
#include "front.h"
#include "init.h"
#include "stats_source.h"
#include "process.h"
#include "lane.h"
#include "public_internal.h"
#include "streams.h"

/* A host address that is never a device allocation: forwarded to the real free when the arena
 * rejects a free (interior pointer, double free), so that the runtime itself returns and
 * records its "not an allocation" code. Forwarding the program's own pointer is not safe: a
 * double-freed block may start one of the arena's live segments. */
static char not_a_device_pointer;

/* The sticky error the cache's own calls saw on dev, or 0 (see runtime.h). */
static ca_rt_err sticky_of(const ca_runtime *rt, int dev)
{
    return atomic_load_explicit(&rt->sticky[dev], memory_order_relaxed);
}

/* A free the cache served on a device with a sticky error: the real free would have failed
 * with it. Asked of the real free (with a host address, never one of the cache's blocks), so
 * the code and the runtime's last error are its own. */
static CA_COLD ca_rt_err sticky_free(ca_runtime *rt, ca_rt_err sticky)
{
    ca_rt_err e = rt->fn.free(&not_a_device_pointer);
    return e != rt->codes.success && e != rt->codes.invalid_value ? e : sticky;
}

/* An allocation no device can satisfy: makes the real runtime record out-of-memory. */
#define IMPOSSIBLE_SIZE ((size_t)1 << 62)

static int usable_device(int dev)
{
    return dev >= 0 && dev < CA_MAX_DEVICES;
}

/* Which of the runtime's allocators a call came through. */
enum { REAL_PLAIN, REAL_ASYNC, REAL_ASYNC_PTSZ };

static ca_rt_err real_alloc(ca_runtime *rt, int kind, void **p, size_t size, void *stream)
{
    if (kind == REAL_PLAIN)
        return rt->fn.malloc(p, size);
    return (kind == REAL_ASYNC ? rt->fn.malloc_async : rt->fn.malloc_async_ptsz)(p, size, stream);
}

static void real_release(ca_runtime *rt, int kind, void *p, void *stream)
{
    if (kind == REAL_PLAIN)
        rt->fn.free(p);
    else
        (kind == REAL_ASYNC ? rt->fn.free_async : rt->fn.free_async_ptsz)(p, stream);
}

/* The arena refused an allocation the real runtime must now answer: its code and last error
 * are then the runtime's own. Under CACHEALLOC_LIMIT the real runtime may succeed where the
 * arena may not: the limit wins, and an impossible request records out-of-memory. */
static CA_COLD ca_rt_err alloc_refused(ca_runtime *rt, int kind, ca_status st, void **ptr,
                                       size_t size, void *stream)
{
    void *p = NULL;
    ca_rt_err e = real_alloc(rt, kind, &p, size, stream);
    if (e != rt->codes.success)
        return e;
    if (st != CA_ERR_OOM) {
        *ptr = p; /* the arena failed for another reason: the program gets a plain allocation */
        return e;
    }
    real_release(rt, kind, p, stream);
    e = real_alloc(rt, kind, &p, IMPOSSIBLE_SIZE, stream);
    if (e == rt->codes.success)
        real_release(rt, kind, p, stream);
    return rt->codes.out_of_memory;
}

/* Serve an allocation from the arena on dev's pool of stream key (kind: the entry point
 * called; tried: the lane's inline hit missed it already); what the arena refuses, the real
 * runtime answers. */
static ca_rt_err serve_alloc(ca_runtime *rt, int kind, int dev, size_t size, ca_stream_t key,
                             void **ptr, void *stream, bool tried)
{
    void *p; /* ca_malloc always sets it */
    unsigned api = kind == REAL_PLAIN ? CA_API_PLAIN : CA_API_ASYNC;
    ca_status st = tried ? ca_malloc_missed(rt->arena, dev, size, key, api, &p)
                         : ca_malloc(rt->arena, dev, size, key, api, &p);
    if (st == CA_OK) {
        *ptr = p;
        return rt->codes.success;
    }
    return alloc_refused(rt, kind, st, ptr, size, stream);
}

/* A plain allocation of a process that exported one of the cache's blocks (cuda/ipc.c): the
 * real call, an allocation of its own that exports correctly. Blocks freed since came back to
 * the cache, which no plain allocation takes from any more: when the device is full, what it
 * holds unused goes back and the call is made again. */
static CA_COLD ca_rt_err dedicated_malloc(ca_runtime *rt, void **ptr, size_t size)
{
    ca_rt_err e = rt->fn.malloc(ptr, size);
    if (e == rt->codes.out_of_memory && ca_front_make_room(rt))
        e = rt->fn.malloc(ptr, size);
    return e;
}

bool ca_front_make_room(ca_runtime *rt)
{
    return ca_cache_ready(rt) && ca_make_room(rt->arena) > 0;
}

/* A full check that began at generation gen passed for the current device dev: the calling
 * thread's lane is armed for it (what it held for the same device stays). NULL when the
 * device cannot be named. */
static ca_lane *lane_arm(ca_runtime *rt, uint64_t gen, int dev)
{
    void *token = rt->fn.current != NULL ? ca_lane_token(rt) : NULL;
    if (token == NULL || !ca_capture_idle(rt))
        return NULL;
    ca_lane *l = &ca_lanes[rt->index];
    if (l->gen != gen || l->token != token || l->dev != dev)
        *l = (ca_lane){.gen = gen, .token = token, .dev = dev,
                       .tc = ca_tc_thread_cache(rt->arena)};
    return l;
}

ca_rt_err ca_front_malloc_lane(ca_runtime *rt, int dev, void **ptr, size_t size)
{
    return serve_alloc(rt, REAL_PLAIN, dev, size, CA_STREAM_LEGACY, ptr, NULL, true);
}

ca_rt_err ca_front_malloc_full(ca_runtime *rt, void **ptr, size_t size)
{
    uint64_t gen = ca_lane_start();
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, malloc, (ptr, size));
    if (ptr == NULL || size == 0 || ca_public_nocache())
        return rt->fn.malloc(ptr, size);
    ca_capture_settle(rt);
    if (atomic_load_explicit(&rt->plain_dedicated, memory_order_relaxed))
        return dedicated_malloc(rt, ptr, size);
    int dev = -1;
    ca_rt_err e = rt->fn.get_device(&dev);
    if (e != rt->codes.success)
        return e;
    /* A faulted device: the real call answers, with its own code. */
    if (!usable_device(dev) || sticky_of(rt, dev))
        return rt->fn.malloc(ptr, size);
    ca_stats_ensure(rt);
    ca_per_thread_default_check(rt, dev);
    ca_stream_plain_thread(rt, dev);
    ca_lane *l = lane_arm(rt, gen, dev);
    if (l != NULL)
        l->plain = rt->free_syncs ? CA_LANE_ALLOC : CA_LANE_ALLOC | CA_LANE_FREE;
    return serve_alloc(rt, REAL_PLAIN, dev, size, CA_STREAM_LEGACY, ptr, NULL, false);
}

/* What a plain free returns to the program, given the arena's answer st. dev: the block's
 * device; counted: the device the freeing thread's plain calls are counted on (-1: none). */
static ca_rt_err plain_freed(ca_runtime *rt, ca_status st, int dev, void *ptr, int counted)
{
    switch (st) {
    case CA_OK:
        if (dev != counted)
            ca_stream_plain_thread(rt, dev);
        return sticky_of(rt, dev) ? sticky_free(rt, sticky_of(rt, dev)) : rt->codes.success;
    case CA_ERR_NOT_OURS:
        return rt->fn.free(ptr);
    default: {
        ca_rt_err e = rt->fn.free(&not_a_device_pointer);
        return e != rt->codes.success ? e : rt->codes.invalid_value;
    }
    }
}

ca_rt_err ca_front_free_lane(ca_runtime *rt, void *ptr, int counted)
{
    int dev = -1;
    ca_status st = ca_free(rt->arena, ptr, CA_STREAM_LEGACY, CA_API_PLAIN, &dev);
    return plain_freed(rt, st, dev, ptr, counted);
}

ca_rt_err ca_front_free_full(ca_runtime *rt, void *ptr)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, free, (ptr));
    if (ptr == NULL)
        return rt->fn.free(ptr); /* programs create their context this way */
    int dev = -1;
    /* A thread's first plain free: counted before the block becomes reusable, so that no other
     * thread takes it through its lane meanwhile (its device is almost always the current). */
    if (!ca_stream_plain_counted(rt) && rt->fn.get_device(&dev) == rt->codes.success &&
        usable_device(dev))
        ca_stream_plain_thread(rt, dev);
    /* CACHEALLOC_REUSE=sync: the device first, as the runtime's free does (no lane keeps such
     * a free: they all come here). */
    if (rt->free_syncs) {
        dev = -1;
        ca_status st = ca_free_synced(rt->arena, ptr, &dev);
        return plain_freed(rt, st, dev, ptr, -1);
    }
    return ca_front_free_lane(rt, ptr, -1);
}

ca_rt_err ca_front_malloc_async_lane(ca_runtime *rt, const ca_lane *l, void **ptr, size_t size)
{
    return serve_alloc(rt, l->ptsz ? REAL_ASYNC_PTSZ : REAL_ASYNC, l->kdev, size, l->key, ptr,
                       l->stream, true);
}

ca_rt_err ca_front_malloc_async_full(ca_runtime *rt, void **ptr, size_t size, void *stream,
                                     int ptsz)
{
    uint64_t gen = ca_lane_start();
    if (!ca_cache_ready(rt))
        return ptsz ? CA_PASSTHROUGH(rt, malloc_async_ptsz, (ptr, size, stream))
                    : CA_PASSTHROUGH(rt, malloc_async, (ptr, size, stream));
    ca_rt_err (*real)(void **, size_t, void *) = ptsz ? rt->fn.malloc_async_ptsz : rt->fn.malloc_async;
    if (real == NULL)
        return rt->codes.not_initialized;
    if (ptr == NULL || size == 0 || ca_public_nocache())
        return real(ptr, size, stream);
    /* What a capturing stream allocates belongs to its graph: an allocation node, whose
     * memory every replay writes and the cache must never hand out. */
    if (ca_capture_stream_captures(rt, stream, ptsz))
        return real(ptr, size, stream);
    ca_capture_settle(rt);
    int dev = -1;
    ca_rt_err e = rt->fn.get_device(&dev);
    if (e != rt->codes.success)
        return e;
    if (!usable_device(dev))
        return real(ptr, size, stream);
    ca_stream_t key;
    int current = dev;
    /* A handle that names no stream: the runtime answers with its own code and last error. */
    if (ca_stream_key(rt, stream, ptsz, &dev, &key) != rt->codes.success)
        return real(ptr, size, stream);
    ca_stats_ensure(rt);
    /* Not on a faulted device: its frees must report the error (free_async_keyed); nor where
     * the runtime has no free to match (the lane's free would not say so). */
    ca_rt_err (*real_free)(void *, void *) = ptsz ? rt->fn.free_async_ptsz : rt->fn.free_async;
    ca_lane *l = usable_device(dev) && !sticky_of(rt, dev) && real_free != NULL
                     ? lane_arm(rt, gen, current)
                     : NULL;
    if (l != NULL) {
        l->async = 1;
        l->stream = stream;
        l->ptsz = ptsz;
        l->key = key;
        l->kdev = dev;
    }
    return serve_alloc(rt, ptsz ? REAL_ASYNC_PTSZ : REAL_ASYNC, dev, size, key, ptr, stream,
                       false);
}

/* The answer to a free the arena refused (interior pointer, double free): the runtime's own. */
static ca_rt_err rejected_free_async(ca_runtime *rt, ca_rt_err (*real)(void *, void *),
                                     void *stream)
{
    ca_rt_err e = real(&not_a_device_pointer, stream);
    return e != rt->codes.success ? e : rt->codes.invalid_value;
}

/* A stream-ordered free past the checks, on arena key `key` of the caller's device dev. */
static ca_rt_err free_async_keyed(ca_runtime *rt, ca_rt_err (*real)(void *, void *), void *ptr,
                                  void *stream, ca_stream_t key, int dev)
{
    switch (ca_free(rt->arena, ptr, key, CA_API_ASYNC, &dev)) {
    case CA_OK:
        return sticky_of(rt, dev) ? sticky_free(rt, sticky_of(rt, dev)) : rt->codes.success;
    case CA_ERR_NOT_OURS:
        return real(ptr, stream);
    default:
        return rejected_free_async(rt, real, stream);
    }
}

ca_rt_err ca_front_free_async_lane(ca_runtime *rt, const ca_lane *l, void *ptr)
{
    /* Not NULL: a stream-ordered lane is armed only where the runtime has this free. */
    ca_rt_err (*real)(void *, void *) = l->ptsz ? rt->fn.free_async_ptsz : rt->fn.free_async;
    return free_async_keyed(rt, real, ptr, l->stream, l->key, l->kdev);
}

ca_rt_err ca_front_free_async_full(ca_runtime *rt, void *ptr, void *stream, int ptsz)
{
    if (!ca_cache_ready(rt))
        return ptsz ? CA_PASSTHROUGH(rt, free_async_ptsz, (ptr, stream))
                    : CA_PASSTHROUGH(rt, free_async, (ptr, stream));
    ca_rt_err (*real)(void *, void *) = ptsz ? rt->fn.free_async_ptsz : rt->fn.free_async;
    if (real == NULL)
        return rt->codes.not_initialized;
    if (ptr == NULL)
        return real(ptr, stream);
    int bdev;
    size_t bsize;
    if (!ca_lookup(rt->arena, ptr, &bdev, &bsize)) {
        /* Not a live block: the stream is not the cache's business. The arena still tells a
         * foreign pointer from one of its own freed twice, which must never reach the real
         * free (it may start one of the cache's segments). */
        int dev = -1;
        switch (ca_free(rt->arena, ptr, CA_STREAM_LEGACY, CA_API_ASYNC, &dev)) {
        case CA_ERR_NOT_OURS:
            return real(ptr, stream);
        case CA_OK: /* made live meanwhile by another thread: the program's own race */
            return rt->codes.success;
        default:
            return rejected_free_async(rt, real, stream);
        }
    }
    /* A capture may free only graph memory (a free node): the driver's own answer. */
    if (ca_capture_stream_captures(rt, stream, ptsz))
        return rejected_free_async(rt, real, stream);
    int dev = -1;
    if (rt->fn.get_device(&dev) != rt->codes.success)
        dev = bdev;
    /* The per-thread stream is told to the arena per device: use the block's own device. */
    if (stream == rt->per_thread_stream || (stream == NULL && ptsz))
        dev = bdev;
    ca_stream_t key = CA_STREAM_LEGACY;
    if (usable_device(dev)) {
        /* A handle that names no stream: the block stays the program's, as with the real
         * runtime, and the program gets the runtime's own code (and last error) for that
         * handle. The block itself is not forwarded: it lies inside one of the cache's
         * segments. */
        ca_rt_err e = ca_stream_key(rt, stream, ptsz, &dev, &key);
        if (e != rt->codes.success)
            return e;
    }
    return free_async_keyed(rt, real, ptr, stream, key, dev);
}

ca_rt_err ca_front_mem_get_info(ca_runtime *rt, size_t *free_bytes, size_t *total_bytes)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, mem_get_info, (free_bytes, total_bytes));
    ca_rt_err e = rt->fn.mem_get_info(free_bytes, total_bytes);
    int dev = -1;
    if (e != rt->codes.success || free_bytes == NULL ||
        rt->fn.get_device(&dev) != rt->codes.success || !usable_device(dev))
        return e;
    size_t total = 0, unused;
    if (total_bytes != NULL)
        total = *total_bytes;
    else if (rt->fn.mem_get_info(&unused, &total) != rt->codes.success)
        return e;
    *free_bytes = (size_t)ca_free_for_program(rt->arena, dev, *free_bytes, total);
    return e;
}

void ca_front_forget_device(ca_runtime *rt, int dev)
{
    ca_device_reset(rt->arena, dev);
    ca_streams_forget(dev);
    atomic_store(&rt->sticky[dev], 0);
}

ca_rt_err ca_front_device_reset(ca_runtime *rt)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, device_reset, ());
    int dev = -1;
    int have_dev = rt->fn.get_device(&dev) == rt->codes.success && usable_device(dev);
    if (have_dev)
        ca_device_resetting(rt->arena, dev);
    ca_rt_err e = rt->fn.device_reset();
    if (e == rt->codes.success && have_dev)
        ca_front_forget_device(rt, dev);
    return e;
}

void ca_front_peer_access(ca_runtime *rt, int owner, bool on)
{
    int me = -1;
    if (!ca_cache_ready(rt) || !usable_device(owner) || rt->fn.device_ordinal == NULL ||
        rt->fn.device_ordinal(&me) != rt->codes.success || me < 0)
        return;
    if (ca_peer_access(rt->arena, owner, me, on) != CA_OK)
        fprintf(stderr, "cachealloc: device %d could not be given %s to the cache's mapped memory "
                        "of device %d\n", me, on ? "access" : "no access", owner);
}

ca_rt_err ca_front_device_synchronize(ca_runtime *rt)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, device_synchronize, ());
    int dev = -1;
    if (rt->fn.get_device(&dev) != rt->codes.success || !usable_device(dev))
        return rt->fn.device_synchronize();
    uint64_t token = ca_device_sync_begin(rt->arena, dev);
    ca_rt_err e = rt->fn.device_synchronize();
    if (e == rt->codes.success)
        ca_device_synchronized(rt->arena, dev, token);
    return e;
}

ca_rt_err ca_front_stream_create(ca_runtime *rt, ca_stream_ctor ctor, void **stream,
                                 unsigned flags, int priority)
{
    if (!ca_cache_ready(rt)) {
        switch (ctor) {
        case CA_CTOR_PLAIN:
            return CA_PASSTHROUGH(rt, stream_create, (stream));
        case CA_CTOR_FLAGS:
            return CA_PASSTHROUGH(rt, stream_create_with_flags, (stream, flags));
        default:
            return CA_PASSTHROUGH(rt, stream_create_with_priority, (stream, flags, priority));
        }
    }
    ca_rt_err e;
    switch (ctor) {
    case CA_CTOR_PLAIN:
        e = rt->fn.stream_create(stream);
        flags = 0;
        break;
    case CA_CTOR_FLAGS:
        e = rt->fn.stream_create_with_flags(stream, flags);
        break;
    default:
        e = rt->fn.stream_create_with_priority(stream, flags, priority);
        break;
    }
    int dev = -1;
    if (e == rt->codes.success && stream != NULL && *stream != NULL &&
        rt->fn.get_device(&dev) == rt->codes.success && usable_device(dev))
        ca_stream_register(rt, *stream, dev, (flags & rt->stream_nonblocking) != 0);
    return e;
}

ca_rt_err ca_front_stream_destroy(ca_runtime *rt, void *stream)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, stream_destroy, (stream));
    /* The arena records the stream's last event before the stream goes away. */
    ca_stream_unregister(rt, stream);
    ca_rt_err e = rt->fn.stream_destroy(stream);
    if (e == rt->codes.success)
        ca_capture_stream_destroyed(rt, stream);
    return e;
}

/* A door's begin of a capture through the real stream_begin_capture (HIP's, which its door
 * wraps): the arena quiet first, the capture remembered after. */
ca_rt_err ca_front_begin_capture(ca_runtime *rt, void *stream, unsigned mode)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, stream_begin_capture, (stream, mode));
    if (rt->fn.stream_begin_capture == NULL)
        return rt->codes.not_initialized;
    ca_capture_will_begin(rt);
    ca_rt_err e = rt->fn.stream_begin_capture(stream, mode);
    ca_capture_began(rt, stream, 0, mode, e);
    return e;
}

ca_rt_err ca_front_end_capture(ca_runtime *rt, void *stream, void **graph)
{
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, stream_end_capture, (stream, graph));
    if (rt->fn.stream_end_capture == NULL)
        return rt->codes.not_initialized;
    ca_rt_err e = rt->fn.stream_end_capture(stream, graph);
    ca_capture_ended(rt, stream, 0, e);
    return e;
}
