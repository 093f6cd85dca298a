/* sd_pool.h: what the two pool files share. sd_pool.c keeps the pools, below the address space
 * (whose releases give memory back to them); sd_pool_alloc.c allocates from them, above it.
 * Everything here is used under sd_lock. */
#ifndef SD_POOL_H
#define SD_POOL_H

#include "sd_internal.h"

struct sd_pool {
    uint32_t magic;
    struct sd_device *dev;
    bool destroyed;          /* gone for the program; lives on while allocations are out */
    size_t max_size;         /* 0: no limit */
    uint64_t threshold;      /* release threshold */
    int reuse[3];            /* the three reuse policies: stored and reported only */
    size_t used, kept;       /* 512-rounded bytes handed out, and freed but still held */
    size_t used_high, reserved_high;
    unsigned char access[SD_MAX_DEVICES]; /* peers' access flags; the owner's is implied */
    struct sd_pool *next;    /* created pools, newest first */
};

/* The pool that stream-ordered allocations on d use: the one made current, else d's default
 * (made at first use). */
struct sd_pool *sd_pool_current_of(struct sd_device *d);
/* The live pool a program's handle names, or NULL. */
struct sd_pool *sd_pool_lookup(const void *handle);
/* Moves `n` kept bytes of p back to its device's free capacity for the allocation that follows
 * at once; other processes are not told (sd_dev_fits claims them again, or sd_dev_grow puts
 * them back). */
void sd_pool_give_back(struct sd_pool *p, size_t n);

#endif
