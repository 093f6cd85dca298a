/* The CUDA driver's runtime descriptor (descriptor.c), for the door and the entry points
 * beside it (door_capture.c, pluggable.c): front.c opens it at their first call. */
#ifndef CACHEALLOC_SHIM_CUDA_DESCRIPTOR_H
#define CACHEALLOC_SHIM_CUDA_DESCRIPTOR_H

#include "runtime.h"

extern ca_runtime ca_drv_rt;

/* What a pinned block belongs to: the current context, or NULL (host_ctx.c). */
void *ca_drv_host_owner(void);

/* The wait of a pinned block's free: the current context's, or, with none current, that of
 * owner (ca_drv_host_owner's), pushed around it, with rt's wait (host_ctx.c). */
ca_rt_err ca_drv_host_wait(ca_runtime *rt, void *owner);

#endif
