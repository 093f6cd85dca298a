/* The verbose lines. A user's first question is whether the shim is there at all, and which
 * door took the program's calls: the start line answers both before anything else happens. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "process.h"
#include "stats/writer.h"
#include "verbose.h"

#ifndef CA_VERSION
#define CA_VERSION "unknown"
#endif

void ca_verbose_start(FILE *out, const ca_runtime *rt, const ca_options *o)
{
    Dl_info info;
    void *p;
    memcpy(&p, &rt->fn.malloc, sizeof p);
    const char *where = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
    char opts[512], stats[512];
    ca_options_describe(o, opts, sizeof opts);
    if (!o->stats)
        snprintf(stats, sizeof stats, "off (CACHEALLOC_STATS=0)");
    else if (ca_stats_path(stats, sizeof stats) != 0)
        snprintf(stats, sizeof stats, "unavailable (name too long)");
    /* CACHEALLOC_REUSE=auto: the contract the door chose. */
    char reuse[96] = "";
    if (o->reuse == CA_REUSE_AUTO)
        snprintf(reuse, sizeof reuse, "; reuse=%s, the %s door's default%s",
                 ca_rt_reuse(rt) == CA_REUSE_SYNC ? "sync" : "safe", rt->api,
                 ca_rt_reuse(rt) == CA_REUSE_SYNC ? ": each free synchronizes its device" : "");
    char expand[160] = "";
    int expandable = ca_rt_expandable(rt);
    if (expandable && !ca_backend_has_vmm(rt))
        snprintf(expand, sizeof expand,
                 "; expandable segments unavailable (the %s has no virtual memory calls): plain "
                 "segments", rt->real_what);
    else if (expandable)
        snprintf(expand, sizeof expand, "; expandable segments over the %s's virtual memory calls",
                 rt->real_what);
    fprintf(out, "cachealloc %s: serving %s, %s in %s%s%s; %s%s%s; statistics %s%s\n", CA_VERSION,
            rt->door, rt->real_what, where, rt->found_how ? ", " : "",
            rt->found_how ? rt->found_how() : "", opts, reuse, expand, o->stats ? "in " : "",
            stats);
}

void ca_verbose_summary(FILE *out, const ca_runtime *rt)
{
    if (rt == NULL || rt->arena == NULL)
        return;
    uint64_t served = 0, hits = 0, calls = 0, driver = 0, peak = 0;
    int n = ca_device_count(rt->arena);
    for (int d = 0; d < n; d++) {
        ca_dev_stats s;
        if (!ca_get_stats(rt->arena, d, &s))
            continue;
        served += s.alloc_calls;
        hits += s.cache_hits;
        calls += s.alloc_calls + s.free_calls;
        driver += s.driver_alloc_calls + s.driver_free_calls;
        peak += s.peak_reserved_bytes;
    }
    fprintf(out, "cachealloc: %s: %" PRIu64 " allocations served, %" PRIu64 " cache hits, %" PRIu64
            " driver calls avoided, peak reserved %" PRIu64 " bytes\n", rt->api, served, hits,
            calls > driver ? calls - driver : 0, peak);
}
