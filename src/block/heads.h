/* The few words of the arena's private structures that a cache hit reads and writes without a
 * device lock, each set in a structure of its own at the head of its owner (block/block.h
 * checks that it comes first). The inline hit (tcache/hit.h), which the shim compiles into its
 * own functions, reaches the arena's blocks, devices and arena only through these, so the shim
 * never sees the arena's private headers. */
#ifndef CACHEALLOC_BLOCK_HEADS_H
#define CACHEALLOC_BLOCK_HEADS_H

#include <stdint.h>

#include "base/types.h"
#include "base/ca_compiler.h"

typedef struct ca_block ca_block;
typedef struct ca_device ca_device;

/* A block's head. Both atomic: a thread cache reads them without the lock. */
typedef struct ca_block_head {
    uint32_t gen;   /* changes at every allocation and free by the pools, and never goes back
                     * when the struct is recycled: a thread cache compares it with the gen it
                     * was handed the block at */
    uint32_t kept;  /* freed, kept by a thread cache */
} ca_block_head;

/* A device's head. Both atomic. */
typedef struct ca_device_head {
    uint32_t streams_seen; /* a stream beside the default ones was created or used */
    uint32_t stream_epoch; /* changes when a stream dies or the device resets */
} ca_device_head;

/* An arena's head. */
typedef struct ca_arena_head {
    uint64_t serial; /* unique to this arena in the process, never reused */
} ca_arena_head;

/* The head of block b (its first member). */
CA_INLINE ca_block_head *ca_block_head_of(ca_block *b)
{
    return (ca_block_head *)(void *)b;
}

/* The head of device d (its first member). */
CA_INLINE ca_device_head *ca_device_head_of(ca_device *d)
{
    return (ca_device_head *)(void *)d;
}

/* The head of arena a (its first member). */
CA_INLINE const ca_arena_head *ca_arena_head_of(const ca_arena *a)
{
    return (const ca_arena_head *)(const void *)a;
}

#endif
