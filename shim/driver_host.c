/* The driver's page-locked host memory calls, which NVIDIA's runtime (shared and static) reaches
 * for cudaHostAlloc, cudaMallocHost and cudaFreeHost: served from the cache of pinned blocks
 * (host_front.c). Flags the driver does not know go to the driver, for its own refusal. */
#include "cuda_abi.h"
#include "driver_ctx.h"
#include "driver_real.h"
#include "driver_runtime.h"
#include "host_front.h"

#define KNOWN_FLAGS \
    (CUABI_MEMHOSTALLOC_PORTABLE | CUABI_MEMHOSTALLOC_DEVICEMAP | CUABI_MEMHOSTALLOC_WRITECOMBINED)

/* Page-locked memory with flags (cudaHostAlloc). */
CA_EXPORT ca_rt_err cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    if (flags & ~KNOWN_FLAGS)
        return ca_drv_rt.fn.host_alloc ? ca_drv_rt.fn.host_alloc(pp, size, flags)
                                       : CUABI_ERROR_NOT_INITIALIZED;
    return ca_front_host_alloc(&ca_drv_rt, pp, size, flags);
}

/* Page-locked memory without flags (cudaMallocHost): the driver answers for it as for flags 0
 * (docs/gpu.md finding 12), so both share the cache's blocks of flags 0. */
CA_EXPORT ca_rt_err cuMemAllocHost_v2(void **pp, size_t size)
{
    return ca_front_host_alloc(&ca_drv_rt, pp, size, 0);
}

/* Frees page-locked memory (cudaFreeHost). */
CA_EXPORT ca_rt_err cuMemFreeHost(void *p)
{
    return ca_front_host_free(&ca_drv_rt, p);
}

/* The context pins its block into, given a slot so that its destruction reaches the pool
 * (driver_door.c, forget_slot): the driver frees a context's pinned memory with it. */
void *ca_drv_host_owner(void)
{
    int slot = -1;
    return ca_drv_get_slot(&slot) == CUABI_SUCCESS ? ca_drv_slot_context(slot) : NULL;
}

/* The driver's free finds pinned memory by its address, with any context current or none
 * (Numba's teardown pops every context, then runs its queued frees): with none, the wait is
 * the block's own context's, pushed and popped again so that the thread is left as it was. A
 * context the slots no longer hold is gone (its blocks were orphaned first) and never pushed. */
ca_rt_err ca_drv_host_wait(void *owner)
{
    ca_rt_err (*sync)(void) = ca_drv_rt.fn.device_synchronize;
    const ca_drv_fns *f = ca_drv_fns_get();
    void *current = NULL;
    if (f == NULL || owner == NULL || f->ctx_get_current(&current) != CUABI_SUCCESS ||
        current != NULL || ca_drv_slot_of(owner) < 0 || f->ctx_push(owner) != CUABI_SUCCESS)
        return sync();
    ca_rt_err e = sync();
    void *popped;
    f->ctx_pop(&popped);
    return e;
}
