/* CACHEALLOC_LEAK_CHECK: at exit, every allocation the program never freed, as CUDA.jl's
 * outstanding-allocation report lists them. */
#ifndef CACHEALLOC_LEAK_H
#define CACHEALLOC_LEAK_H

#include <stdio.h>

#include "arena/arena.h"
#include "host/pool.h"

/* Write the report for arena a to out (stacks when the arena kept them). Returns the number of
 * allocations listed; prints nothing when there are none. */
int ca_leak_report(ca_arena *a, const char *api, FILE *out);

/* The same for the pinned host memory pool hp: address and size asked of each block the
 * program never freed (no stacks: pinned allocations are few and large). */
int ca_leak_report_host(ca_host_pool *hp, FILE *out);

#endif
