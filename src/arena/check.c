/* The device's invariants, checked whole: what the unit tests' balance check and the comments
 * of block/block.h promise, walked block by block. O(blocks): the expensive tier of
 * base/ca_assert.h, so it runs where it is asked for (ca_arena_check, statistics reads, and one
 * slow allocation in CA_CHECK_EVERY) and only in builds with assertions on (CA_DEBUG, which
 * turns on CA_ASSERT_EXPENSIVE); a release build compiles it to nothing. */
#include "arena/internal.h"
#include "base/ca_assert.h"

#if CA_ASSERT_EXPENSIVE

/* A block of an expandable range: mapped memory that follows unmapped memory (or the range's
 * start) begins a mapping, and no mapping begins in unmapped memory. */
static void check_mappings(const ca_device *d, const ca_segment *s, const ca_block *b,
                           const ca_block *prev)
{
    if (b->state != BLOCK_UNMAPPED) {
        if (!prev || prev->state == BLOCK_UNMAPPED)
            ca_assert_expensive(b->addr % d->vmm.page == 0 &&
                                ca_range_boundary(s, d->vmm.page, b->addr));
        return;
    }
    /* Word by word: a hole may span most of a range, and the check runs often. */
    size_t lo = (b->addr - s->base) / d->vmm.page, hi = lo + b->size / d->vmm.page;
    for (size_t w = lo / 64; w * 64 < hi; w++) {
        uint64_t mask = ~(uint64_t)0;
        if (w == lo / 64)
            mask &= ~(uint64_t)0 << (lo % 64);
        if ((w + 1) * 64 > hi)
            mask &= ~(uint64_t)0 >> (64 - hi % 64);
        ca_assert_expensive((s->starts[w] & mask) == 0);
    }
}

/* One segment: its blocks tile it in address order, each knows it and its neighbours, and
 * every allocated block is the live map's. Adds the bytes of each state to sum[]. */
static void check_segment(ca_device *d, const ca_segment *s, uint64_t sum[6], uint64_t n[6])
{
    uintptr_t at = s->base;
    const ca_block *prev = NULL;
    /* Every block starts on CA_ROUND, whatever base the driver answered (ca_segment_new). */
    ca_assert_expensive(s->base % CA_ROUND == 0 && s->size % CA_ROUND == 0);
    ca_assert_expensive(!s->expandable || (s->lead == 0 && s->tail == 0));
    for (const ca_block *b = s->first; b; prev = b, b = b->next) {
        ca_assert_expensive(b->seg == s);
        ca_assert_expensive(b->prev == prev);
        ca_assert_expensive(b->addr == at);
        ca_assert_expensive(b->size > 0 && b->state <= BLOCK_UNMAPPING);
        ca_assert_expensive(b->state != BLOCK_ALLOC || ca_map_get(&d->live, b->addr) == b);
        ca_assert_expensive(b->state == BLOCK_ALLOC ||
                            !__atomic_load_n(&b->head.kept, __ATOMIC_RELAXED));
        if (s->expandable)
            check_mappings(d, s, b, prev);
        sum[b->state] += b->size;
        n[b->state]++;
        at += b->size;
    }
    ca_assert_expensive(at == s->base + s->size);
}

/* A pool's indexes: what its bins say they hold. */
static void add_pool(const ca_pool *p, uint64_t *bytes, uint64_t *count, uint64_t *exact)
{
    *bytes += p->small.bytes + p->large.bytes;
    *count += p->small.count + p->large.count;
    *exact += p->nexact;
}

void ca_device_check(ca_device *d)
{
    uint64_t sum[6] = {0}, n[6] = {0}, bin_bytes = 0, bin_count = 0, nexact = 0;
    for (int i = 0; i < d->nsegs; i++) {
        const ca_segment *s = d->segs[i], *before = i ? d->segs[i - 1] : NULL;
        ca_assert_expensive(!before || ca_seg_driver_base(before) + ca_seg_driver_size(before) <=
                                           ca_seg_driver_base(s));
        check_segment(d, s, sum, n);
    }
    /* Every allocated block is in the live map, and nothing else. */
    ca_assert_expensive(n[BLOCK_ALLOC] == d->live.count);
    add_pool(&d->plain, &bin_bytes, &bin_count, &nexact);
    for (int i = 0; i < d->npools; i++)
        add_pool(d->pools[i], &bin_bytes, &bin_count, &nexact);
    /* Reserved = allocated + cached + pending, and each is exactly its blocks. */
    ca_assert_expensive(d->st.reserved_bytes ==
                        d->st.allocated_bytes + d->st.cached_bytes + d->st.pending_bytes);
    ca_assert_expensive(sum[BLOCK_ALLOC] == d->st.allocated_bytes);
    ca_assert_expensive(sum[BLOCK_FREE] + sum[BLOCK_EXACT] == d->st.cached_bytes);
    ca_assert_expensive(sum[BLOCK_PENDING] == d->st.pending_bytes);
    /* Free blocks are the bins', and only they. */
    ca_assert_expensive(bin_bytes == sum[BLOCK_FREE] && bin_count == n[BLOCK_FREE]);
    ca_reuse_check(d); /* the pending list, the fences, the watched streams */
    ca_assert_expensive(nexact == n[BLOCK_EXACT]);
}

#endif
