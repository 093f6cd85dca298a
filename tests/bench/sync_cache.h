/* The "sync cache" reference of bench_loop: the simplest honest cache of cudaMalloc memory.
 * It keeps every freed block, and before it hands back a block freed since the last device
 * synchronization it synchronizes the device (cudaFree's own promise, kept by brute force).
 * Thread-safe; never gives memory back until sync_cache_release_all. */
#ifndef SYNC_CACHE_H
#define SYNC_CACHE_H

#include <stddef.h>

/* cudaMalloc-like: 0 on success. */
int sync_cache_alloc(void **p, size_t size);

/* cudaFree-like: 0 on success, -1 for a pointer the cache never handed out. */
int sync_cache_free(void *p);

/* The bytes it has taken from the runtime: it never gives any back, so also its peak. */
size_t sync_cache_reserved(void);

/* Give every cached block back to the runtime (cudaFree). */
void sync_cache_release_all(void);

#endif
