/* The runtimes whose arena is ready (registry.h). */
#include <stdatomic.h>

#include "registry.h"

static ca_runtime *_Atomic slots[CA_RT_SLOTS];

void ca_registry_add(ca_runtime *rt)
{
    atomic_store(&slots[rt->slot], rt);
}

ca_runtime *ca_runtime_by_slot(int slot)
{
    if (slot < 0 || slot >= CA_RT_SLOTS)
        return NULL;
    return atomic_load(&slots[slot]);
}
