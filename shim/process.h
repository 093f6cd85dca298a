/* The shim's state of the whole process.
 *
 * The options the program's environment sets (CACHEALLOC_*), parsed once per process at the
 * first question: a wrong value gets one line on stderr and its default.
 *
 * The runtimes whose arena is ready, by index (CA_RT_CUDA, CA_RT_HIP): what code that is not a
 * door (thread exits, the public API, capture, IPC) reaches them by. */
#ifndef CACHEALLOC_SHIM_PROCESS_H
#define CACHEALLOC_SHIM_PROCESS_H

#include "options/options.h"
#include "runtime.h"

/* The parsed options. */
const ca_options *ca_shim_options(void);

/* Whether rt's arena grows expandable segments: the option, or the door's default for auto. */
int ca_rt_expandable(const ca_runtime *rt);

/* rt's reuse contract: the option, or the door's default for auto. */
ca_reuse_kind ca_rt_reuse(const ca_runtime *rt);

/* rt's arena is ready: ca_runtime_by_index answers rt for its index from now on. */
void ca_registry_add(ca_runtime *rt);

/* The runtime of that index once its arena is ready, else NULL. */
ca_runtime *ca_runtime_by_index(int index);

#endif
