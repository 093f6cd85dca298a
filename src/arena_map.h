/* Address -> block map of a device's live blocks: open addressing with linear probing and
 * backward-shift deletion, so lookups on free are expected O(1) with no tombstones. */
#ifndef CACHEALLOC_ARENA_MAP_H
#define CACHEALLOC_ARENA_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ca_block ca_block;

typedef struct ca_map {
    uintptr_t *keys;   /* 0: empty slot (no block lives at address 0) */
    ca_block **vals;
    size_t cap;        /* power of two */
    size_t count;
} ca_map;

/* Insert key -> val (key not present, key != 0). Returns 0, or -1 when memory ran out. */
int ca_map_put(ca_map *m, uintptr_t key, ca_block *val);

/* The block at key, or NULL. */
ca_block *ca_map_get(const ca_map *m, uintptr_t key);

/* Remove key and return its block, or NULL when absent. */
ca_block *ca_map_take(ca_map *m, uintptr_t key);

/* Free the map's storage. */
void ca_map_free(ca_map *m);

#endif
