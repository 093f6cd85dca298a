/* The cache's answer to address queries about its own blocks (address.h). */
#include <stdatomic.h>

#include "address.h"
#include "host_front.h"

ca_range_kind ca_front_range(ca_runtime *rt, const void *p, uintptr_t *start, size_t *size)
{
    ca_place at;
    if (rt == NULL)
        return CA_RANGE_RUNTIME;
    if (ca_front_host_locate(rt, p, start, size))
        return CA_RANGE_PINNED;
    if (!atomic_load_explicit(&rt->ready, memory_order_acquire) || !ca_locate(rt->arena, p, &at) ||
        !at.live)
        return CA_RANGE_RUNTIME;
    *start = at.block;
    *size = at.requested;
    return at.expandable ? CA_RANGE_MAPPED : CA_RANGE_PLAIN;
}
