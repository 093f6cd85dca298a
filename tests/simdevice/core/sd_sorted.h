/* sd_sorted.h: arrays of records kept in address order, each record starting with its
 * uintptr_t address. The device allocation table and the VMM spans are both such arrays. */
#ifndef SD_SORTED_H
#define SD_SORTED_H

#include <stddef.h>
#include <stdint.h>

/* Index of the first of the n records of size esz at v whose address is above p. */
size_t sd_sorted_upper(const void *v, size_t n, size_t esz, uintptr_t p);
/* Inserts the record e in address order, growing the array: returns the array, which may have
 * moved, or NULL when out of memory (v is then left as it was). */
void *sd_sorted_insert(void *v, size_t *n, size_t *cap, size_t esz, const void *e);
/* Removes the `count` records starting at index i. */
void sd_sorted_cut(void *v, size_t *n, size_t esz, size_t i, size_t count);

#endif
