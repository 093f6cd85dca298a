/* The failure of an invariant check, of either tier (ca_assert.h). */
#include "base/ca_assert.h"

#ifdef CA_DEBUG
#include <stdio.h>
#include <stdlib.h>

void ca_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "cachealloc: invariant broken at %s:%d: %s\n", file, line, cond);
    abort();
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int ca_assert_unused;
#endif
