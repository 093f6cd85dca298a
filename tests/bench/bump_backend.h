/* A trivial device for the hot-path benchmark: allocations come from a bump pointer over a
 * fake address range (never touched), and every event is complete the moment it is recorded,
 * so what the benchmark measures is the arena alone. */
#ifndef BUMP_BACKEND_H
#define BUMP_BACKEND_H

#include <stdint.h>

#include "arena/arena.h"

typedef struct bump_device {
    uintptr_t next;            /* next address handed out                     */
    uint64_t allocs, releases; /* driver calls the arena made (atomic updates) */
} bump_device;

/* Fill be with a backend over dev; one bump_device serves every device id. */
void bump_init(bump_device *dev, ca_backend *be);

#endif
