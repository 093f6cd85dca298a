/* What arena.c (the device slots, the allocation ladder and the free path) offers the files
 * above it: arena/admin.c. No rung of the ladder includes this header, so no file arena.c
 * calls can call it back (suite structure checks both). */
#ifndef CACHEALLOC_ARENA_LADDER_H
#define CACHEALLOC_ARENA_LADDER_H

#include "arena/internal.h"

/* The device slot of dev, created on first use; NULL when dev is out of range or memory ran out. */
ca_device *ca_device_get(ca_arena *a, int dev);
/* Free every block the threads keep on dev (dev < 0: all) through the pools. Not under a
 * device lock. */
void ca_return_kept(ca_arena *a, int dev);

#endif
