/* CACHEALLOC_VERBOSE=1: what the shim found, once, and what it did, at exit. */
#ifndef CACHEALLOC_SHIM_VERBOSE_H
#define CACHEALLOC_SHIM_VERBOSE_H

#include <stdio.h>

#include "options/options.h"
#include "runtime.h"

/* One line: the library's version, the door that serves rt and where its real functions are,
 * the pool, reuse contract, limit and other non-default options, and the statistics segment. */
void ca_verbose_start(FILE *out, const ca_runtime *rt, const ca_options *o);

/* One line: allocations served, cache hits, driver calls avoided and peak reserved bytes of
 * rt's arena (nothing if it never opened). No device call. */
void ca_verbose_summary(FILE *out, const ca_runtime *rt);

#endif
