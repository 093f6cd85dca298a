#include "block/map.h"

#include <stdlib.h>

int ca_map_grow(ca_map *m)
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
        size_t s = ca_map_bucket(m->keys[i], ncap);
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

void ca_map_remove_bucket(ca_map *m, size_t s)
{
    size_t mask = m->cap - 1;
    /* Backward shift: pull later entries of the probe run into the hole when their home bucket
     * does not lie cyclically between the hole and their current bucket. */
    size_t hole = s;
    for (size_t j = (hole + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = ca_map_bucket(m->keys[j], m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->vals[hole] = NULL;
    m->count--;
}

void ca_map_free(ca_map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}
