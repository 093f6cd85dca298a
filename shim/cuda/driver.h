/* The real CUDA driver behind the shim: found once, through the lookup the runtime itself uses
 * (cuGetProcAddress_v2), or by name where a driver has no such lookup. */
#ifndef CACHEALLOC_SHIM_CUDA_DRIVER_H
#define CACHEALLOC_SHIM_CUDA_DRIVER_H

#include <stdint.h>

#include "runtime.h"

typedef ca_rt_err (*ca_gpa_v2_fn)(const char *symbol, void **pfn, int version, uint64_t flags,
                                  int *status);

/* The real driver functions the cache's own work needs besides the served ones. */
typedef struct ca_drv_fns {
    ca_rt_err (*ctx_get_current)(void **ctx);
    ca_rt_err (*ctx_set_current)(void *ctx);
    ca_rt_err (*ctx_get_device)(int *dev);
    ca_rt_err (*ctx_push)(void *ctx);
    ca_rt_err (*ctx_pop)(void **ctx);
    ca_rt_err (*primary_retain)(void **ctx, int dev);
    ca_rt_err (*primary_release)(int dev);
    ca_rt_err (*primary_get_state)(int dev, unsigned *flags, int *active);
} ca_drv_fns;

/* The dlsym hook saw `name` looked up on `handle` with result p: a real driver entry point. */
void ca_drv_note(void *handle, const char *name, void *p);

/* The real entry point `base` at ABI version `version` and lookup flags, or, on a driver
 * without cuGetProcAddress, the symbol `exported`; NULL when the driver has neither (or no
 * driver is loaded). */
void *ca_drv_lookup(const char *base, int version, int flags, const char *exported);

/* How the driver was found, for CACHEALLOC_VERBOSE. */
const char *ca_drv_found_how(void);

/* The functions of ca_drv_fns, once the driver is loaded; NULL before, or when one is missing. */
const ca_drv_fns *ca_drv_fns_get(void);

#endif
