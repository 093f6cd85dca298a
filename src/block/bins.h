/* The free-block index of one pool: segregated size classes with bitmaps, so that finding a
 * fitting block costs O(1) expected and never scans every free block. */
#ifndef CACHEALLOC_BLOCK_BINS_H
#define CACHEALLOC_BLOCK_BINS_H

#include <stddef.h>
#include <stdint.h>

#define CA_BIN_SUB_BITS 3
#define CA_BIN_SUB (1u << CA_BIN_SUB_BITS)
#define CA_BIN_LEVELS 56
#define CA_BIN_COUNT (CA_BIN_LEVELS * CA_BIN_SUB)

typedef struct ca_block ca_block;

typedef struct ca_bins {
    uint64_t level_map;             /* bit l: some class of level l is non-empty */
    uint8_t sub_map[CA_BIN_LEVELS]; /* bit s: class (l, s) is non-empty          */
    ca_block *head[CA_BIN_COUNT];
    uint64_t bytes;                 /* total size of the blocks in the index      */
    uint64_t count;
} ca_bins;

/* Class of a size (a multiple of 512): the class whose range holds it. */
static inline uint32_t ca_bin_of(size_t size)
{
    uint64_t units = size / 512u;
    if (units < CA_BIN_SUB)
        return (uint32_t)units;
    uint32_t level = 63u - (uint32_t)__builtin_clzll(units);
    uint32_t sub = (uint32_t)(units >> (level - CA_BIN_SUB_BITS)) & (CA_BIN_SUB - 1);
    uint32_t cls = (level - CA_BIN_SUB_BITS + 1) * CA_BIN_SUB + sub;
    return cls < CA_BIN_COUNT ? cls : CA_BIN_COUNT - 1;
}

/* Put a free block into the index. */
void ca_bins_insert(ca_bins *b, ca_block *blk);

/* Take a block out of the index. */
void ca_bins_remove(ca_bins *b, ca_block *blk);

/* Blocks of one class rung 1's bounded scan looks at before moving on: keeps a long class O(1). */
#define CA_BIN_SCAN_LIMIT 16

/* The smallest block of at least size found in the index (best fit within size's own class,
 * then the first of the next non-empty class), skipping blocks that accept() rejects; NULL if
 * none. exact: only blocks of exactly size (the binned pool). At most scan blocks of a class
 * are looked at (SIZE_MAX: all). */
ca_block *ca_bins_find(const ca_bins *b, size_t size, int exact,
                       int (*accept)(const ca_block *blk, size_t size, uint64_t arg), uint64_t arg,
                       size_t scan);

/* Largest block in the index (statistics). */
size_t ca_bins_largest(const ca_bins *b);

#endif
