/* The driver's page-locked host memory calls, which NVIDIA's runtime (shared and static) reaches
 * for cudaHostAlloc, cudaMallocHost and cudaFreeHost: served from the cache of pinned blocks
 * (host_front.c). Flags the driver does not know go to the driver, for its own refusal. */
#include "cuda_abi.h"
#include "descriptor.h"
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
