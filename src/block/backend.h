/* The backend table: the device as the arena sees it, the one door through which the arena
 * reaches the driver (the shim fills it for CUDA or HIP, tests/unit with a fake). */
#ifndef CACHEALLOC_BLOCK_BACKEND_H
#define CACHEALLOC_BLOCK_BACKEND_H

#include "base/types.h"

/* The device as the arena sees it. Every function returns a ca_status (CA_OK on success)
 * except event_query. All take the backend's own context first. */
typedef struct ca_backend {
    void *ctx;
    /* Allocate size bytes on device dev (a real driver allocation). CA_ERR_OOM when full. */
    int (*alloc)(void *ctx, int dev, size_t size, void **out);
    /* Give a driver allocation back. May synchronize the device: never called under a lock. */
    int (*release)(void *ctx, int dev, void *ptr);
    int (*event_create)(void *ctx, int dev, ca_event_t *out);
    int (*event_destroy)(void *ctx, int dev, ca_event_t ev);
    /* Record ev on stream s of device dev. */
    int (*event_record)(void *ctx, int dev, ca_event_t ev, ca_stream_t s);
    /* 1 when ev has completed, 0 when not yet, negative on error: never taken as completed (a
     * faulted device answers every query with an error while its work may still be queued). */
    int (*event_query)(void *ctx, int dev, ca_event_t ev);
    /* Block until ev completed. Never called under a lock. */
    int (*event_synchronize)(void *ctx, int dev, ca_event_t ev);
    /* 1 when every piece of work queued on stream s so far has completed, 0 when not yet,
     * negative on error (never taken as idle). May be NULL: fences then record an event on
     * every stream. */
    int (*stream_query)(void *ctx, int dev, ca_stream_t s);
    /* Make stream s wait on the GPU for ev. May be NULL (then only host polling is used). */
    int (*stream_wait_event)(void *ctx, int dev, ca_stream_t s, ca_event_t ev);
    /* Block until device dev is idle. Never called under a lock. */
    int (*device_synchronize)(void *ctx, int dev);
    int (*mem_info)(void *ctx, int dev, size_t *free_bytes, size_t *total_bytes);
    /* Clear the error a failed real allocation left behind (cudaGetLastError), so that a
     * recovered out-of-memory never shows up in the program's own error checks. */
    void (*clear_error)(void *ctx);

    /* Virtual memory management, for expandable segments. All optional: NULL where the driver
     * or runtime lacks them, and then segments are fixed driver allocations. Sizes and
     * addresses are multiples of the granularity. None of them may synchronize the device;
     * vmm_unmap is called only for pages the device is done with. */
    /* The page size of physical memory on dev: every other size is a multiple of it. */
    int (*vmm_granularity)(void *ctx, int dev, size_t *out);
    /* Reserve size bytes of virtual addresses (no memory behind them), aligned to the page. */
    int (*vmm_reserve)(void *ctx, int dev, size_t size, void **out);
    /* Give a reservation back; it holds no mapping any more. */
    int (*vmm_free)(void *ctx, int dev, void *base, size_t size);
    /* Create size bytes of physical memory on dev. CA_ERR_OOM when full. */
    int (*vmm_create)(void *ctx, int dev, size_t size, uint64_t *handle);
    /* Drop the creation's reference: the memory lives on while a mapping holds it. */
    int (*vmm_release)(void *ctx, int dev, uint64_t handle);
    /* Map handle (size bytes) at addr, inside a reservation; inaccessible until vmm_set_access. */
    int (*vmm_map)(void *ctx, int dev, void *addr, size_t size, uint64_t handle);
    /* Unmap the mappings that make up [addr, addr+size); a released handle's memory goes back. */
    int (*vmm_unmap)(void *ctx, int dev, void *addr, size_t size);
    /* Give dev read-write access to the mappings that make up [addr, addr+size). */
    int (*vmm_set_access)(void *ctx, int dev, void *addr, size_t size);
    /* Optional: give the device of ordinal `peer` read-write access (on) or none (off) to the
     * mappings of dev's memory that make up [addr, addr+size). */
    int (*vmm_peer_access)(void *ctx, int dev, void *addr, size_t size, int peer, bool on);
} ca_backend;

#endif
