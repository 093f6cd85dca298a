/* The optional public API (cachealloc.h reaches these by name with dlsym). */
#include <stdio.h>
#include <string.h>

#include "cachealloc.h"
#include "capture.h"
#include "init.h"
#include "process.h"
#include "lane.h"
#include "public_internal.h"

/* Each thread's region stack: bit i of `nocache` is 1 when region i (from the outside) is a
 * no-caching one. Deeper nesting than the bits still counts, treated as caching regions. */
#define MAX_TRACKED 64
static _Thread_local struct {
    unsigned depth;
    uint64_t nocache;
} regions;

int ca_public_nocache(void)
{
    unsigned d = regions.depth;
    return d > 0 && d <= MAX_TRACKED && (regions.nocache >> (d - 1)) & 1u;
}

static void push(int nocache, const char *name)
{
    unsigned d = regions.depth++;
    ca_lane_disarm(); /* lanes were armed outside this region */
    if (d < MAX_TRACKED) {
        uint64_t bit = UINT64_C(1) << d;
        regions.nocache = nocache ? regions.nocache | bit : regions.nocache & ~bit;
    }
    const ca_options *o = ca_shim_options();
    if (o->verbose)
        fprintf(stderr, "cachealloc: thread enters %s region%s%s (depth %u)\n",
                nocache ? "a no-caching" : "the caching", name ? " " : "", name ? name : "",
                regions.depth);
}

/* Public: release every fully free cached segment of dev (dev < 0: all); bytes released.
 * During a stream capture nothing is released now: at the next allocation after it. */
CA_EXPORT uint64_t cachealloc_reclaim_v1(int dev)
{
    uint64_t n = 0;
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = ca_runtime_by_index(i);
        if (rt != NULL)
            n += ca_capture_reclaim(rt, dev, 0);
    }
    return n;
}

/* Public: copy device dev's counters into out (size bytes of it); 1 on success, 0 if unused. */
CA_EXPORT int cachealloc_get_stats_v1(int dev, cachealloc_stats *out, size_t size)
{
    if (out == NULL || size == 0 || dev < 0 || dev >= CA_MAX_DEVICES)
        return 0;
    cachealloc_stats s;
    memset(&s, 0, sizeof s);
    int found = 0;
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = ca_runtime_by_index(i);
        ca_dev_stats d;
        if (rt == NULL || !ca_get_stats(rt->arena, dev, &d))
            continue;
        found = 1;
        s.reserved_bytes += d.reserved_bytes;
        s.allocated_bytes += d.allocated_bytes;
        s.cached_bytes += d.cached_bytes;
        s.pending_bytes += d.pending_bytes;
        s.peak_reserved_bytes += d.peak_reserved_bytes;
        s.peak_allocated_bytes += d.peak_allocated_bytes;
        s.alloc_calls += d.alloc_calls;
        s.free_calls += d.free_calls;
        s.cache_hits += d.cache_hits;
        s.driver_alloc_calls += d.driver_alloc_calls;
        s.driver_free_calls += d.driver_free_calls;
        s.device_syncs += d.device_syncs;
        s.oom_recoveries += d.oom_recoveries;
        s.oom_failures += d.oom_failures;
        if (d.largest_free_block > s.largest_free_block)
            s.largest_free_block = d.largest_free_block;
        s.sync_wait_ns += d.sync_wait_ns;
        s.fence_wait_ns += d.fence_wait_ns;
        s.fence_waits += d.fence_waits;
        s.grow_ns += d.grow_ns;
        s.growths += d.growths;
    }
    /* An older caller's smaller struct gets the prefix it knows. */
    memcpy(out, &s, size < sizeof s ? size : sizeof s);
    return found;
}

/* Public: begin a no-caching (nocache) region: the calling thread's allocations are the
 * runtime's own. */
CA_EXPORT void cachealloc_nocache_begin_v1(void)
{
    push(1, NULL);
}

/* Public: begin a named region where the calling thread's allocations use the cache. */
CA_EXPORT void cachealloc_region_begin_v1(const char *name)
{
    push(0, name);
}

/* Public: end the calling thread's innermost region; unbalanced ends are ignored. */
CA_EXPORT void cachealloc_region_end_v1(void)
{
    if (regions.depth > 0)
        regions.depth--;
    ca_lane_disarm();
}
