/* The CUDA driver's runtime descriptor (driver_runtime.c), for the door and the entry points
 * beside it (driver_capture.c, pluggable.c): front.c opens it at their first call. */
#ifndef CACHEALLOC_SHIM_DRIVER_RUNTIME_H
#define CACHEALLOC_SHIM_DRIVER_RUNTIME_H

#include "runtime.h"

extern ca_runtime ca_drv_rt;

/* What a pinned block belongs to: the current context, or NULL (driver_host.c). */
void *ca_drv_host_owner(void);

/* The wait of a pinned block's free: the current context's, or, with none current, that of
 * owner (ca_drv_host_owner's), pushed around it; the driver's code (driver_host.c). */
ca_rt_err ca_drv_host_wait(void *owner);

#endif
