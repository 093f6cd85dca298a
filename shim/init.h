/* Lazy, one-time initialization of the shim: nothing happens until a program calls an
 * interposed function, so the library is inert in processes that never use CUDA or HIP. */
#ifndef CACHEALLOC_SHIM_INIT_H
#define CACHEALLOC_SHIM_INIT_H

#include "options.h"
#include "runtime.h"

/* Make rt usable: options parsed (once per process), real functions found, arena created.
 * 0 on success; -1 when the real runtime cannot be found (the caller answers
 * codes.not_initialized). Cheap after the first call. */
int ca_door_open(ca_runtime *rt);

/* Start the statistics segment at the first allocation call, if CACHEALLOC_STATS allows it.
 * Cheap after the first call. */
void ca_stats_ensure(ca_runtime *rt);

/* The runtime in slot (0 CUDA, 1 HIP) once opened, else NULL. */
ca_runtime *ca_runtime_by_slot(int slot);

/* The parsed options (valid after the first ca_door_open). */
const ca_options *ca_shim_options(void);

#endif
