/* loop_check.h: the measure of service, shared by the loop programs built every way a
 * user builds them: after N x (allocate 64 MiB, memset, free), the simulated driver saw exactly
 * one allocation and no device synchronization when the shim is loaded (1000 and 1000 without
 * it). Prints the counts; exits 1 when the shim is loaded and they are not 1 and 0. */
#ifndef LOOP_CHECK_H
#define LOOP_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "simdev.h"

static inline int loop_check(int iterations)
{
    simdev_get_counters_fn get;
    void *sym = simdev_sym("simdev_get_counters");
    memcpy(&get, &sym, sizeof get);
    struct simdev_counters c;
    memset(&c, 0, sizeof c);
    if (get == NULL || get(-1, &c) != 0) {
        fprintf(stderr, "not running on the simulated device\n");
        return 77;
    }
    int cached = dlsym(RTLD_DEFAULT, "cachealloc_get_stats_v1") != NULL;
    printf("%d iterations %s: %llu driver allocations, %llu device synchronizations\n",
           iterations, cached ? "under the shim" : "plain", (unsigned long long)c.malloc_calls,
           (unsigned long long)c.device_syncs);
    if (cached && (c.malloc_calls != 1 || c.device_syncs != 0))
        return 1;
    if (!cached && (c.malloc_calls != (unsigned long long)iterations))
        return 1;
    return 0;
}

#endif
