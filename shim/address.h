/* What the cache answers of both doors' address queries (cuMemGetAddressRange,
 * cuPointerGetAttribute, hipMemGetAddressRange, hipMemPtrGetInfo) about its own blocks. A
 * block lies in a segment (one driver allocation, or mappings of a reserved range) or is one
 * pinned allocation of its size class: the runtime would answer the whole of that. A program
 * asks about what it allocated, and must see a fresh allocation of the size it asked for. */
#ifndef CACHEALLOC_SHIM_ADDRESS_H
#define CACHEALLOC_SHIM_ADDRESS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* Which kind of the cache's live blocks holds an address. */
typedef enum ca_range_kind {
    CA_RANGE_RUNTIME, /* none of them: the runtime's answer stands                           */
    CA_RANGE_PLAIN,   /* a device block of a plain segment (a driver allocation of many)      */
    CA_RANGE_MAPPED,  /* a device block of an expandable segment                              */
    CA_RANGE_PINNED,  /* a pinned host block                                                 */
} ca_range_kind;

/* The kind of rt's live block holding p, with its start and the size the program asked for.
 * Never makes a cache: one not made yet holds nothing. */
ca_range_kind ca_front_range(ca_runtime *rt, const void *p, uintptr_t *start, size_t *size);

#endif
