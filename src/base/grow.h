/* Growing the arena's arrays: one rule (double, from a first size), one failure path. */
#ifndef CACHEALLOC_GROW_H
#define CACHEALLOC_GROW_H

#include <stdlib.h>

/* Room for element n of arr (*cap elements of elem bytes): arr itself while n < *cap, else arr
 * reallocated to twice *cap (first when *cap is 0), *cap updated. NULL, with arr and *cap
 * unchanged, when host memory ran out. */
static inline void *ca_grow(void *arr, int n, int *cap, size_t elem, int first)
{
    if (n < *cap)
        return arr;
    int ncap = *cap ? *cap * 2 : first;
    void *grown = realloc(arr, (size_t)ncap * elem);
    if (grown)
        *cap = ncap;
    return grown;
}

#endif
