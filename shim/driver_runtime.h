/* The CUDA driver's runtime descriptor (driver_runtime.c), for the door and the entry points
 * beside it (driver_capture.c, pluggable.c): front.c opens it at their first call. */
#ifndef CACHEALLOC_SHIM_DRIVER_RUNTIME_H
#define CACHEALLOC_SHIM_DRIVER_RUNTIME_H

#include "runtime.h"

extern ca_runtime ca_drv_rt;

#endif
