/* The interposed dlopen (dlopen_hook.c) and the count of the program's loads it keeps. */
#ifndef CACHEALLOC_SHIM_DLOPEN_HOOK_H
#define CACHEALLOC_SHIM_DLOPEN_HOOK_H

#include <stdatomic.h>

/* Counts the program's dlopen calls that may load an object: new objects may import
 * per-thread stream entry points. Moves before the load it counts. */
extern atomic_uint ca_dlopen_gen;

#endif
