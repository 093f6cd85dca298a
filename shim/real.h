/* Finding the real runtime functions behind the shim. */
#ifndef CACHEALLOC_SHIM_REAL_H
#define CACHEALLOC_SHIM_REAL_H

#include "runtime.h"

/* Address of the real symbol `name`: the next definition after the shim in the global scope,
 * or, when the runtime was dlopen'ed RTLD_LOCAL (a plugin), the definition in the loaded
 * library whose file name starts with lib_prefix. NULL when neither exists. */
void *ca_real_symbol(const char *lib_prefix, const char *name);

/* Fill rt->fn from rt->syms. 0 when every required function was found. */
int ca_real_resolve(ca_runtime *rt);

#endif
