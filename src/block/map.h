/* Address -> block map of a device's live blocks: open addressing with linear probing and
 * backward-shift deletion, so lookups on free are expected O(1) with no tombstones. */
#ifndef CACHEALLOC_BLOCK_MAP_H
#define CACHEALLOC_BLOCK_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/ca_assert.h"

typedef struct ca_block ca_block;

typedef struct ca_map {
    uintptr_t *keys;   /* 0: empty bucket (no block lives at address 0) */
    ca_block **vals;
    size_t cap;        /* power of two */
    size_t count;
} ca_map;

/* Double the table (or create it). Returns 0, or -1 when memory ran out. */
int ca_map_grow(ca_map *m);

/* Remove the entry in bucket s, closing the hole by backward shift. */
void ca_map_remove_bucket(ca_map *m, size_t s);

/* Device addresses are at least 512-byte aligned: drop those bits, then mix (Fibonacci). */
static inline size_t ca_map_bucket(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)(key >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* Insert key -> val (key not present, key != 0). Returns 0, or -1 when memory ran out. */
static inline int ca_map_put(ca_map *m, uintptr_t key, ca_block *val)
{
    /* 0 marks an empty bucket, and NULL is ca_map_get's "absent". */
    ca_assert(key != 0 && val != NULL);
    if ((m->count + 1) * 2 > m->cap && ca_map_grow(m) != 0)
        return -1;
    size_t s = ca_map_bucket(key, m->cap);
    /* A key present lies in the probe run from its home bucket to the first empty one: no block
     * is live twice at one address (handed out twice), nor put twice. */
    while (m->keys[s]) {
        ca_assert(m->keys[s] != key);
        s = (s + 1) & (m->cap - 1);
    }
    m->keys[s] = key;
    m->vals[s] = val;
    m->count++;
    return 0;
}

/* The block at key, or NULL. */
static inline ca_block *ca_map_get(const ca_map *m, uintptr_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t s = ca_map_bucket(key, m->cap); m->keys[s]; s = (s + 1) & (m->cap - 1))
        if (m->keys[s] == key)
            return m->vals[s];
    return NULL;
}

/* Remove key and return its block, or NULL when absent. */
static inline ca_block *ca_map_take(ca_map *m, uintptr_t key)
{
    if (!m->cap)
        return NULL;
    size_t s = ca_map_bucket(key, m->cap);
    while (m->keys[s] != key) {
        if (!m->keys[s])
            return NULL;
        s = (s + 1) & (m->cap - 1);
    }
    ca_block *val = m->vals[s];
    ca_map_remove_bucket(m, s);
    return val;
}

/* Free the map's storage. */
void ca_map_free(ca_map *m);

#endif
