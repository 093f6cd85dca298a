/* Page-locked host memory served from the cache of pinned blocks (src/host/pool.c), behind
 * both doors: the door checks its runtime's arguments, this does the rest. */
#ifndef CACHEALLOC_SHIM_HOST_FRONT_H
#define CACHEALLOC_SHIM_HOST_FRONT_H

#include <stddef.h>

#include "runtime.h"

/* A pinned block of size bytes with the runtime's flags, from the cache (CACHEALLOC_PINNED=1)
 * or the runtime itself; the runtime's code. */
ca_rt_err ca_front_host_alloc(ca_runtime *rt, void **ptr, size_t size, unsigned flags);

/* Frees a pinned block: the cache's after the runtime's own wait, anything else by the
 * runtime; the runtime's code. */
ca_rt_err ca_front_host_free(ca_runtime *rt, void *ptr);

/* owner (what ca_runtime.host_owner named) is gone, and the pinned memory it held with it. */
void ca_front_host_forget(ca_runtime *rt, void *owner);

/* Whether p lies in a live block of the cache of pinned memory: its start and the size asked. */
bool ca_front_host_locate(ca_runtime *rt, const void *p, uintptr_t *start, size_t *size);

#endif
