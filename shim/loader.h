/* The dynamic loader's functions as the shim meets them (loader.c): the C library's own dlsym
 * behind the shim's interposed one, and the count of the program's loads that the interposed
 * dlopen keeps. */
#ifndef CACHEALLOC_SHIM_LOADER_H
#define CACHEALLOC_SHIM_LOADER_H

#include <stdatomic.h>

typedef void *(*ca_dlsym_fn)(void *handle, const char *name);

/* The real dlsym (never the shim's hook); NULL only if the C library has none. */
ca_dlsym_fn ca_real_dlsym(void);

/* Counts the program's dlopen calls that may load an object: new objects may import
 * per-thread stream entry points. Moves before the load it counts. */
extern atomic_uint ca_dlopen_gen;

#endif
