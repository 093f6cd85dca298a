/* cachealloc.h: optional control of libcachealloc.so from a program.
 *
 * A program that includes this header still runs without the shim: every function below is a
 * static inline wrapper that looks the shim's symbol up with dlsym(RTLD_DEFAULT, ...) and does
 * nothing (returning 0) when the shim is not loaded. Link with -ldl on glibc older than 2.34.
 *
 *   cachealloc_reclaim(-1);               give every cached block back to the driver
 *   cachealloc_get_stats(0, &s);          this process's counters for device 0
 *   cachealloc_nocache_begin(); ...; cachealloc_nocache_end();
 *                                         this thread's allocations are not cached (nocache)
 *   cachealloc_region_begin("decoder"); ...; cachealloc_region_end();
 *                                         this thread's allocations use the cache again, even
 *                                         inside a no-caching region
 *
 * Regions are per host thread and nest like parentheses. A pointer allocated inside a
 * no-caching region may be freed anywhere: the shim passes it to the real runtime. A named
 * region does not get a pool of its own: the name documents the code and is printed with
 * CACHEALLOC_VERBOSE=1. */
#ifndef CACHEALLOC_H
#define CACHEALLOC_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One device's counters, in bytes and calls. Fields are only ever appended. */
typedef struct cachealloc_stats {
    uint64_t reserved_bytes;     /* device memory held by the cache (in use + cached + pending) */
    uint64_t allocated_bytes;    /* in blocks the program holds                             */
    uint64_t cached_bytes;       /* free blocks ready for reuse                             */
    uint64_t pending_bytes;      /* freed, waiting for the device to pass the free          */
    uint64_t peak_reserved_bytes;
    uint64_t peak_allocated_bytes;
    uint64_t alloc_calls;
    uint64_t free_calls;
    uint64_t cache_hits;         /* allocations served without the driver                   */
    uint64_t driver_alloc_calls;
    uint64_t driver_free_calls;
    uint64_t device_syncs;       /* device synchronizations the cache made                  */
    uint64_t oom_recoveries;
    uint64_t oom_failures;
    uint64_t largest_free_block;
    /* The time the cache's own waits cost this device's program (0 from a library older
     * than these fields): */
    uint64_t sync_wait_ns;       /* in the device synchronizations it made                  */
    uint64_t fence_wait_ns;      /* waiting for fences and stream events                    */
    uint64_t fence_waits;
    uint64_t grow_ns;            /* in driver calls that grew the cache                     */
    uint64_t growths;
} cachealloc_stats;

#define CACHEALLOC_LOOKUP_(name, type) ((type)(uintptr_t)dlsym(((void *)0), name))

/* Release every cached segment of device dev (dev < 0: all devices) now; bytes released. */
static inline uint64_t cachealloc_reclaim(int dev)
{
    typedef uint64_t (*fn_t)(int);
    fn_t f = CACHEALLOC_LOOKUP_("cachealloc_reclaim_v1", fn_t);
    return f ? f(dev) : 0;
}

/* Fill *out with device dev's counters; 1 on success, 0 when the shim is absent or the device
 * unused. Zeroed first: an older library fills only the fields it knows. */
static inline int cachealloc_get_stats(int dev, cachealloc_stats *out)
{
    typedef int (*fn_t)(int, cachealloc_stats *, size_t);
    fn_t f = CACHEALLOC_LOOKUP_("cachealloc_get_stats_v1", fn_t);
    if (f)
        memset(out, 0, sizeof *out);
    return f ? f(dev, out, sizeof *out) : 0;
}

/* Begin a no-caching (nocache) region: this thread's allocations are the runtime's own. */
static inline void cachealloc_nocache_begin(void)
{
    typedef void (*fn_t)(void);
    fn_t f = CACHEALLOC_LOOKUP_("cachealloc_nocache_begin_v1", fn_t);
    if (f)
        f();
}

/* Begin a named region where this thread's allocations use the cache. */
static inline void cachealloc_region_begin(const char *name)
{
    typedef void (*fn_t)(const char *);
    fn_t f = CACHEALLOC_LOOKUP_("cachealloc_region_begin_v1", fn_t);
    if (f)
        f(name);
}

/* End the innermost region of either kind begun by this thread. */
static inline void cachealloc_region_end(void)
{
    typedef void (*fn_t)(void);
    fn_t f = CACHEALLOC_LOOKUP_("cachealloc_region_end_v1", fn_t);
    if (f)
        f();
}

/* End the innermost region (the same call as cachealloc_region_end). */
static inline void cachealloc_nocache_end(void)
{
    cachealloc_region_end();
}

#undef CACHEALLOC_LOOKUP_

#ifdef __cplusplus
}
#endif

#endif
