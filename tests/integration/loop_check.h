/* loop_check.h: the measure of service, shared by the loop programs built every way a user
 * builds them: after N x (allocate 64 MiB, memset, free), the simulated driver saw one
 * allocation (one growth: at most LOOP_GROWTH_PIECES handles of a page) and no device
 * synchronization when the shim is loaded (N and N without it, and with it when
 * LOOP_EXPECT_UNCACHED=1 says the cache must be off). On a real GPU the cache's own
 * statistics say as much: N allocations served, one growth from the driver, no device
 * synchronization of its own (none served when the cache must be off). Prints the counts;
 * exits 1 when they are not what is expected, 77 without the shim on a real GPU. */
#ifndef LOOP_CHECK_H
#define LOOP_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachealloc.h"
#include "simdev.h"

/* The driver allocations one 64 MiB block may take: a plain segment, or one growth of
 * expandable memory: a solo mapping by default (one handle, 64 MiB being CA_SOLO_MIN), at most
 * 32 pieces of a 2 MiB page were it a shared growth. */
#define LOOP_GROWTH_PIECES 32u

static inline int loop_one_growth(unsigned long long n)
{
    return n >= 1 && n <= LOOP_GROWTH_PIECES;
}

static inline int loop_check(int iterations)
{
    simdev_get_counters_fn get;
    void *sym = simdev_sym("simdev_get_counters");
    memcpy(&get, &sym, sizeof get);
    struct simdev_counters c;
    memset(&c, 0, sizeof c);
    const char *off = getenv("LOOP_EXPECT_UNCACHED");
    int shim = dlsym(RTLD_DEFAULT, "cachealloc_get_stats_v1") != NULL;
    int cached = shim && !(off && *off == '1');
    if (get == NULL || get(-1, &c) != 0) {
        if (!shim) { /* a plain run on a GPU: nothing here counts the driver's calls */
            fprintf(stderr, "neither the simulated device nor the cache is here to count\n");
            return 77;
        }
        cachealloc_stats st;
        int have = cachealloc_get_stats(0, &st);
        printf("%d iterations %s: the cache served %llu, %llu from the driver, %llu device "
               "synchronizations of its own\n", iterations, cached ? "under the shim" : "plain",
               have ? (unsigned long long)st.alloc_calls : 0ull,
               have ? (unsigned long long)st.driver_alloc_calls : 0ull,
               have ? (unsigned long long)st.device_syncs : 0ull);
        if (cached)
            return have && st.alloc_calls == (uint64_t)iterations &&
                           loop_one_growth(st.driver_alloc_calls) && st.device_syncs == 0 ? 0 : 1;
        return !have || st.alloc_calls == 0 ? 0 : 1;
    }
    printf("%d iterations %s: %llu driver allocations, %llu device synchronizations\n",
           iterations, cached ? "under the shim" : "plain", (unsigned long long)simdev_allocs(c),
           (unsigned long long)c.device_syncs);
    if (cached && (!loop_one_growth(simdev_allocs(c)) || c.device_syncs != 0))
        return 1;
    if (!cached && (simdev_allocs(c) != (unsigned long long)iterations))
        return 1;
    return 0;
}

#endif
