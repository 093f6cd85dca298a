/* The CUDA door at the driver API: the driver entry points the cache serves, handed out in
 * place of the real ones wherever a program or a runtime looks them up. */
#ifndef CACHEALLOC_SHIM_DRIVER_DOOR_H
#define CACHEALLOC_SHIM_DRIVER_DOOR_H

/* The index of a served driver symbol name (as exported, e.g. "cuMemAlloc_v2"), or -1. */
int ca_drv_served_index(const char *name);

/* dlsym(handle, name) for the served name of index i: the shim's entry point when the handle
 * resolves the name to the real driver, else what the real dlsym says. */
void *ca_drv_served_dlsym(int i, void *handle, const char *name);

struct ca_runtime;

/* The CUDA driver's descriptor at any time, for entry points of the door's own that go
 * through front.c (pluggable.c): front.c opens it at their first call. */
struct ca_runtime *ca_drv_descriptor(void);

/* The real driver function behind the served entry point exported as `name`, or NULL. */
void (*ca_drv_real_fn(const char *name))(void);

#endif
