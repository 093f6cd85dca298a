/* sd_sorted.c: address-ordered record arrays, binary-searched and grown by doubling. */
#include <stdlib.h>
#include <string.h>

#include "sd_sorted.h"

static uintptr_t addr_of(const void *v, size_t esz, size_t i)
{
    uintptr_t a;
    memcpy(&a, (const char *)v + i * esz, sizeof a);
    return a;
}

size_t sd_sorted_upper(const void *v, size_t n, size_t esz, uintptr_t p)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr_of(v, esz, mid) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *sd_sorted_insert(void *v, size_t *n, size_t *cap, size_t esz, const void *e)
{
    if (*n == *cap) {
        size_t grown = *cap ? *cap * 2 : 64;
        void *nv = realloc(v, grown * esz);
        if (!nv)
            return NULL;
        v = nv;
        *cap = grown;
    }
    size_t i = sd_sorted_upper(v, *n, esz, addr_of(e, esz, 0));
    char *at = (char *)v + i * esz;
    memmove(at + esz, at, (*n - i) * esz);
    memcpy(at, e, esz);
    (*n)++;
    return v;
}

void sd_sorted_cut(void *v, size_t *n, size_t esz, size_t i, size_t count)
{
    char *at = (char *)v + i * esz;
    memmove(at, at + count * esz, (*n - i - count) * esz);
    *n -= count;
}
