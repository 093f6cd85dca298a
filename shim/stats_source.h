/* The statistics segment's source (stats_source.c): started at the first allocation, fed by
 * the cache, forgotten in a forked child. */
#ifndef CACHEALLOC_SHIM_STATS_SOURCE_H
#define CACHEALLOC_SHIM_STATS_SOURCE_H

#include "runtime.h"

/* Start the statistics segment at the first allocation call, if CACHEALLOC_STATS allows it.
 * Cheap after the first call. */
void ca_stats_ensure(ca_runtime *rt);

/* In a forked child: forget the parent's segment and thread; the child starts its own. */
void ca_stats_source_after_fork(void);

#endif
