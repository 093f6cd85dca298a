/* The cache of page-locked host memory (cudaHostAlloc, cudaMallocHost, hipHostMalloc). Pinning
 * costs the driver about a millisecond a call and half a millisecond a MiB, unpinning a third of
 * that (docs/gpu.md finding 12): programs that stage transfers through pinned buffers they
 * allocate and free in loops pay it every time. Each cached block is one driver allocation,
 * never split and never shared by two flag sets, so that everything the driver answers about
 * it (flags, device pointer, memory type) is what a fresh allocation would answer; the size
 * asked is kept for the range queries the shim answers itself. docs/arena.md, "Pinned host
 * memory", has the rules and the measurements. */
#ifndef CACHEALLOC_HOST_POOL_H
#define CACHEALLOC_HOST_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/types.h"

/* The driver as the host pool sees it. Each returns a ca_status. */
typedef struct ca_host_backend {
    void *ctx;
    /* Pin size bytes with the runtime's flags; *owner names what the block belongs to (the
     * driver's current context, whose destruction takes the block with it), NULL for nothing
     * known. CA_ERR_OOM when the driver refuses. */
    int (*alloc)(void *ctx, size_t size, unsigned flags, void **out, void **owner);
    /* Unpin a block alloc made. */
    int (*release)(void *ctx, void *p);
    /* Wait until the device work queued before now has completed, as the driver's free of
     * pinned memory does; owner is the block's (alloc's), for a thread with no context. */
    int (*wait)(void *ctx, void *owner);
} ca_host_backend;

typedef struct ca_host_config {
    uint64_t limit_bytes; /* pinned bytes the pool may hold, live and cached; 0: no limit */
    ca_trace_fn trace;    /* NULL: no timeline. Events HA, HF, HSA, HSF; device -1 */
    void *trace_ctx;
} ca_host_config;

typedef struct ca_host_stats {
    uint64_t alloc_calls, free_calls; /* served by the pool */
    uint64_t hits;                    /* served from a cached block */
    uint64_t driver_alloc_calls, driver_free_calls;
    uint64_t live_bytes, cached_bytes; /* driver sizes of the blocks held */
    uint64_t waiting_bytes;            /* freed, waiting for the device before they are cached */
    uint64_t requested_bytes;          /* what the program asked for, of the live blocks */
    uint64_t peak_bytes;               /* the most live + cached + waiting ever held */
    uint64_t peak_live_bytes;          /* the most live ever held */
    uint64_t waits;                    /* device waits of frees */
    uint64_t oom_recoveries;           /* allocations served after the driver said no */
    uint64_t oom_failures;             /* allocations refused (driver or limit) */
    uint64_t invalid_frees;            /* frees inside a block, or of one already freed */
    uint64_t blocks;                   /* driver allocations held, live and cached */
} ca_host_stats;

typedef struct ca_host_pool ca_host_pool;

/* A new, empty pool over be; NULL when out of memory. */
ca_host_pool *ca_host_pool_create(const ca_host_backend *be, const ca_host_config *cfg);

/* Unpins every cached block and frees the pool; live blocks stay the program's (and the
 * driver's, which frees them at exit). */
void ca_host_pool_destroy(ca_host_pool *hp);

/* A pinned block of at least size bytes with exactly these flags: a cached one when there is
 * one of its size class, else a new driver allocation. When the driver refuses, every cached
 * block is unpinned and the allocation tried again, then once more at the exact size. CA_OK;
 * CA_ERR_OOM (the driver's refusal, or over the limit). size 0 is the caller's to pass on. */
int ca_host_malloc(ca_host_pool *hp, size_t size, unsigned flags, void **out);

/* Frees a block the pool handed out: waits as the driver's free does (be->wait with the
 * block's owner), then caches it. CA_ERR_NOT_OURS for an address the pool never handed out
 * (the driver's business); CA_ERR_INVALID for an address inside a block, or one already freed
 * (the driver's refusal); when the wait fails, the block goes back to the driver and the
 * wait's status is returned. A block whose owner is gone goes back to the driver without a
 * wait, and the driver's status is returned. */
int ca_host_free(ca_host_pool *hp, void *p);

/* owner is gone (a destroyed context), its pinned memory with it: its cached blocks are given
 * back to the driver, whatever it answers, and its live ones at their free. NULL: nothing. */
void ca_host_forget_owner(ca_host_pool *hp, void *owner);

/* Whether p lies in a live block: its start and the size the program asked for. */
bool ca_host_locate(ca_host_pool *hp, const void *p, uintptr_t *start, size_t *size);

/* Unpins cached blocks until at most keep bytes stay cached; the bytes unpinned. */
uint64_t ca_host_trim(ca_host_pool *hp, uint64_t keep);

/* A snapshot of the counters. */
void ca_host_get_stats(ca_host_pool *hp, ca_host_stats *out);

/* The same snapshot in a device's shape, for the statistics segment's "host" record:
 * reserved = allocated + cached + pending, segments = driver allocations held, fences 0. */
void ca_host_get_dev_stats(ca_host_pool *hp, ca_dev_stats *out);

/* Calls fn for every block the program holds, in address order, under the pool's lock (fn
 * must not call the pool): its start and the size asked. */
void ca_host_foreach_live(ca_host_pool *hp, void (*fn)(void *ctx, const void *p, size_t size),
                          void *ctx);

/* The size class a request of size bytes is served from: the next power of two, at least a
 * page (PyTorch's CachingHostAllocator rounds the same way). */
size_t ca_host_class_size(size_t size);

#endif
