/* Segregated free lists in the manner of TLSF: 56 power-of-two levels of 512-byte units, each
 * cut into 8 classes. A request first looks at a bounded number of blocks of its own class for
 * the best fit (the exact size is usually at the head in a steady loop), then takes the head of
 * the next non-empty class, every block of which is large enough. */
#include "block/bins.h"

#include "block/block.h"
#include "base/ca_assert.h"

static inline uint32_t floor_log2(uint64_t x) { return 63u - (uint32_t)__builtin_clzll(x); }

void ca_bins_insert(ca_bins *b, ca_block *blk)
{
    uint32_t cls = ca_bin_of(blk->size);
    /* Only free blocks are indexed, each once: one that is in no list (every list a block
     * leaves unlinks it: bins, pending, exact, holes), so neither in this class's nor any other. */
    ca_assert(blk->state == BLOCK_FREE && blk->size > 0 && blk->size % CA_ROUND == 0);
    ca_assert(!blk->lprev && !blk->lnext && b->head[cls] != blk);
    blk->bin = cls;
    blk->lprev = NULL;
    blk->lnext = b->head[cls];
    if (blk->lnext)
        blk->lnext->lprev = blk;
    b->head[cls] = blk;
    b->sub_map[cls / CA_BIN_SUB] |= (uint8_t)(1u << (cls % CA_BIN_SUB));
    b->level_map |= 1ull << (cls / CA_BIN_SUB);
    b->bytes += blk->size;
    b->count++;
}

void ca_bins_remove(ca_bins *b, ca_block *blk)
{
    uint32_t cls = blk->bin;
    /* A free block of this index, in the class of its size (nobody resized it while it was
     * indexed), linked both ways: its left neighbour's next, or this class's head. */
    ca_assert(blk->state == BLOCK_FREE && cls == ca_bin_of(blk->size));
    ca_assert(blk->lprev ? blk->lprev->lnext == blk : b->head[cls] == blk);
    ca_assert(!blk->lnext || blk->lnext->lprev == blk);
    ca_assert(b->count > 0 && b->bytes >= blk->size);
    if (blk->lprev)
        blk->lprev->lnext = blk->lnext;
    else
        b->head[cls] = blk->lnext;
    if (blk->lnext)
        blk->lnext->lprev = blk->lprev;
    blk->lprev = blk->lnext = NULL;
    if (!b->head[cls]) {
        uint32_t level = cls / CA_BIN_SUB;
        b->sub_map[level] &= (uint8_t)~(1u << (cls % CA_BIN_SUB));
        if (!b->sub_map[level])
            b->level_map &= ~(1ull << level);
    }
    b->bytes -= blk->size;
    b->count--;
}

/* First non-empty class at or above cls, or CA_BIN_COUNT. */
static uint32_t next_class(const ca_bins *b, uint32_t cls)
{
    if (cls >= CA_BIN_COUNT)
        return CA_BIN_COUNT;
    uint32_t level = cls / CA_BIN_SUB;
    uint32_t subs = b->sub_map[level] & (uint32_t)(0xffu << (cls % CA_BIN_SUB)) & 0xffu;
    if (subs)
        return level * CA_BIN_SUB + (uint32_t)__builtin_ctz(subs);
    if (level + 1 >= CA_BIN_LEVELS)
        return CA_BIN_COUNT;
    uint64_t levels = b->level_map & (~0ull << (level + 1));
    if (!levels)
        return CA_BIN_COUNT;
    level = (uint32_t)__builtin_ctzll(levels);
    return level * CA_BIN_SUB + (uint32_t)__builtin_ctz(b->sub_map[level]);
}

ca_block *ca_bins_find(const ca_bins *b, size_t size, int exact,
                       int (*accept)(const ca_block *blk, size_t size, uint64_t arg), uint64_t arg,
                       size_t scan)
{
    uint32_t own = ca_bin_of(size);
    ca_block *best = NULL;
    size_t seen = 0;
    for (ca_block *blk = b->head[own]; blk && seen < scan; blk = blk->lnext, seen++) {
        if (blk->size < size || (exact && blk->size != size))
            continue;
        if (best && blk->size >= best->size)
            continue;
        if (accept && !accept(blk, size, arg))
            continue;
        best = blk;
        if (blk->size == size)
            break;
    }
    if (best || exact)
        return best;
    for (uint32_t cls = next_class(b, own + 1); cls < CA_BIN_COUNT; cls = next_class(b, cls + 1)) {
        seen = 0;
        for (ca_block *blk = b->head[cls]; blk && seen < scan; blk = blk->lnext, seen++) {
            if (!accept || accept(blk, size, arg))
                return blk;
        }
    }
    return NULL;
}

size_t ca_bins_largest(const ca_bins *b)
{
    if (!b->level_map)
        return 0;
    uint32_t level = floor_log2(b->level_map);
    uint32_t cls = level * CA_BIN_SUB + floor_log2(b->sub_map[level]);
    size_t largest = 0;
    for (ca_block *blk = b->head[cls]; blk; blk = blk->lnext)
        if (blk->size > largest)
            largest = blk->size;
    return largest;
}

size_t ca_device_largest_free(ca_device *d)
{
    size_t largest = ca_bins_largest(&d->plain.large);
    size_t s = ca_bins_largest(&d->plain.small);
    if (s > largest)
        largest = s;
    for (int i = 0; i < d->npools; i++) {
        size_t l = ca_bins_largest(&d->pools[i]->large);
        if (l > largest)
            largest = l;
        l = ca_bins_largest(&d->pools[i]->small);
        if (l > largest)
            largest = l;
    }
    return largest;
}
