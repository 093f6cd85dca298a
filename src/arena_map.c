#include "arena_map.h"

#include <stdlib.h>

/* Device addresses are at least 512-byte aligned: drop those bits, then mix (Fibonacci). */
static inline size_t slot_of(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)(key >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int grow(ca_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uintptr_t *keys = calloc(ncap, sizeof *keys);
    ca_block **vals = calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t s = slot_of(m->keys[i], ncap);
        while (keys[s])
            s = (s + 1) & (ncap - 1);
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return 0;
}

int ca_map_put(ca_map *m, uintptr_t key, ca_block *val)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s])
        s = (s + 1) & (m->cap - 1);
    m->keys[s] = key;
    m->vals[s] = val;
    m->count++;
    return 0;
}

ca_block *ca_map_get(const ca_map *m, uintptr_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t s = slot_of(key, m->cap); m->keys[s]; s = (s + 1) & (m->cap - 1))
        if (m->keys[s] == key)
            return m->vals[s];
    return NULL;
}

ca_block *ca_map_take(ca_map *m, uintptr_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] && m->keys[s] != key)
        s = (s + 1) & mask;
    if (!m->keys[s])
        return NULL;
    ca_block *val = m->vals[s];
    /* Backward shift: pull later entries of the probe run into the hole when their home slot
     * does not lie cyclically between the hole and their current slot. */
    size_t hole = s;
    for (size_t j = (hole + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->vals[hole] = NULL;
    m->count--;
    return val;
}

void ca_map_free(ca_map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}
