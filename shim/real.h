/* Finding the real runtime functions behind the shim. */
#ifndef CACHEALLOC_SHIM_REAL_H
#define CACHEALLOC_SHIM_REAL_H

#include "runtime.h"

/* Results of ca_real_resolve. */
#define CA_REAL_OK 0          /* every required function found                          */
#define CA_REAL_ABSENT (-1)   /* no loaded object defines the runtime: nothing to call    */
#define CA_REAL_INCOMPLETE (-2) /* the runtime is there, a required function is not: the
                                 * fields found are filled, the rest are NULL              */

/* A dlopen handle (a reference, never a new load) on the loaded object, other than the shim,
 * that defines the function probe: the next definition after the shim in the global scope,
 * else the first loaded object that defines it (a runtime loaded RTLD_LOCAL, under any file
 * name). NULL when none does. */
void *ca_real_find(const char *probe);

/* Fill rt->fn from rt->syms, every one from the object defining rt->syms[0] (the runtime's
 * allocation function). Returns CA_REAL_OK, CA_REAL_ABSENT or CA_REAL_INCOMPLETE. */
int ca_real_resolve(ca_runtime *rt);

#endif
