/* What the public API (public.c) tells the rest of the shim. */
#ifndef CACHEALLOC_SHIM_PUBLIC_INTERNAL_H
#define CACHEALLOC_SHIM_PUBLIC_INTERNAL_H

/* 1 when the calling thread is inside a no-caching region: its allocations go straight to
 * the real runtime. */
int ca_public_nocache(void);

#endif
