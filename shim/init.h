/* Lazy, one-time initialization of the shim: nothing happens until a program calls an
 * interposed function, so the library is inert in processes that never use CUDA or HIP. */
#ifndef CACHEALLOC_SHIM_INIT_H
#define CACHEALLOC_SHIM_INIT_H

#include <stdbool.h>

#include "runtime.h"

/* Whether the cache serves this call: rt made usable (options parsed once per process, real
 * functions found, arena created) and the call not made from inside one of the cache's own
 * real calls. When false the caller passes the call to the real function (CA_PASSTHROUGH). Cheap
 * after the first call. */
bool ca_cache_ready(ca_runtime *rt);

/* The arenas' configuration, made once at the first door that opens (the timeline's writer
 * among it); other pools of the cache take what they share with the arenas from it. */
const ca_config *ca_shim_config(void);

/* For a program built for per-thread default streams, end device dev's single-stream mode
 * at its first plain allocation (other host threads' default streams are streams too). */
void ca_per_thread_default_check(ca_runtime *rt, int dev);

/* The door did not open: call the real function `field` with the parenthesized args where the
 * runtime is there but the cache cannot work (rt->passthrough) or must not be entered again (a
 * call from inside the cache's own real call), else answer codes.not_initialized (no runtime). */
#define CA_PASSTHROUGH(rt, field, args)                                                            \
    ((atomic_load_explicit(&(rt)->passthrough, memory_order_acquire) ||                        \
      atomic_load_explicit(&(rt)->ready, memory_order_acquire)) && (rt)->fn.field != NULL      \
         ? (rt)->fn.field args                                                                \
         : (rt)->codes.not_initialized)

#endif
