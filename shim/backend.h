/* The arena's backend over a runtime descriptor. */
#ifndef CACHEALLOC_SHIM_BACKEND_H
#define CACHEALLOC_SHIM_BACKEND_H

#include "arena/arena.h"
#include "runtime.h"

/* Nonzero while the calling thread is inside a real driver or runtime call the cache made: a
 * runtime that calls its own exported functions from there must reach the real ones, never the
 * cache again (which could deadlock on the lock it holds, or recurse). */
extern _Thread_local __attribute__((tls_model("initial-exec"))) int ca_real_call_depth;

/* Fill be with the one backend implementation, working on rt (whose fn must be resolved). */
void ca_backend_make(ca_runtime *rt, ca_backend *be);

/* Whether rt has every virtual memory call expandable segments need. */
int ca_backend_has_vmm(const ca_runtime *rt);

/* A new file descriptor of the driver handle mapped at addr, memory of arena device dev, for
 * another process to import (the caller closes it); -1 when the driver will not export it. */
int ca_backend_export_fd(ca_runtime *rt, int dev, void *addr);

/* Arena device dev's names for the statistics, as NVIDIA's tools write them: its UUID
 * ("GPU-" and 32 hex digits in 8-4-4-4-12 groups; "" where the runtime gives none) and PCI
 * bus id ("00000000:3B:00.0", dcgm-exporter's form). 0 when at least one is known. */
int ca_backend_identify(ca_runtime *rt, int dev, char *uuid, size_t ulen, char *pci,
                        size_t plen);

#endif
