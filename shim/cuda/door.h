/* The CUDA door at the driver API: the driver entry points the cache serves, handed out in
 * place of the real ones wherever a program or a runtime looks them up. */
#ifndef CACHEALLOC_SHIM_CUDA_DOOR_H
#define CACHEALLOC_SHIM_CUDA_DOOR_H

/* dlsym(handle, name) for the served name of index i: the shim's entry point when the handle
 * resolves the name to the real driver, else what the real dlsym says. */
void *ca_drv_served_dlsym(int i, void *handle, const char *name);

#endif
