/* Giving the free pages of expandable segments back: carved out of their free blocks under the
 * lock, unmapped with it dropped (after a device synchronization unless the program's own one
 * proved them idle), then holes again. block/expand.c has the ranges and their growth. */
#include <stdlib.h>

#include "arena/internal.h"
#include "base/clock.h"

/* b's pages were just unmapped: it joins the holes, merged with its unmapped neighbours, so
 * that a later growth sees the whole gap. */
static void hole_add(ca_device *d, ca_block *b)
{
    ca_segment *s = b->seg;
    b->state = BLOCK_UNMAPPED;
    if (b->next && b->next->state == BLOCK_UNMAPPED) {
        ca_unmapped_unlink(s, b->next);
        ca_block_merge(d, b, b->next);
    }
    if (b->prev && b->prev->state == BLOCK_UNMAPPED)
        ca_block_merge(d, b->prev, b);
    else
        ca_unmapped_link(s, b);
}

/* The pages wholly inside free block b, [lo, hi), carved out of it: the rest of b stays free.
 * NULL when no block struct could be had. */
static ca_block *carve(ca_device *d, ca_block *b, uintptr_t lo, uintptr_t hi)
{
    ca_block *mid = lo > b->addr ? ca_block_new(d) : NULL;
    ca_block *right = hi < b->addr + b->size ? ca_block_new(d) : NULL;
    if ((lo > b->addr && !mid) || (hi < b->addr + b->size && !right)) {
        if (mid)
            ca_block_recycle(d, mid);
        if (right)
            ca_block_recycle(d, right);
        return NULL;
    }
    ca_bins *bins = ca_pool_bins(b->seg->pool, b->seg->small);
    ca_block_unfree(d, b);
    ca_block *piece = b;
    if (mid) {
        ca_block_split(b, mid, lo - b->addr);
        ca_bins_insert(bins, b);
        d->st.cached_bytes += b->size;
        piece = mid;
    }
    if (right) {
        ca_block_split(piece, right, hi - piece->addr);
        ca_bins_insert(bins, right);
        d->st.cached_bytes += right->size;
    }
    piece->state = BLOCK_UNMAPPING;
    d->st.reserved_bytes -= piece->size;
    return piece;
}

bool ca_unmap_whole_mappings(const ca_segment *s, size_t page, uintptr_t from, uintptr_t end,
                       bool open_end, uint64_t want, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t first = ca_align_up(from, page);
    uintptr_t y = ca_align_down(end, page);
    while (y > first && !(y == end && open_end) && !ca_range_boundary(s, page, y))
        y -= page;
    uintptr_t x = y;
    /* Down from y, mapping by mapping, while the pieces still fall short of want. */
    for (uintptr_t at = y; at > first && y - x < want;) {
        at -= page;
        if (ca_range_boundary(s, page, at))
            x = at;
    }
    *lo = x;
    *hi = y;
    return y > x;
}

/* ca_unmap_whole_mappings over free block b of range s. */
static bool whole_mappings(const ca_segment *s, const ca_block *b, size_t page, uint64_t want,
                           uintptr_t *lo, uintptr_t *hi)
{
    bool open_end = !b->next || b->next->state == BLOCK_UNMAPPED;
    return ca_unmap_whole_mappings(s, page, b->addr, b->addr + b->size, open_end, want, lo, hi);
}

/* Free pages of d's ranges, highest addresses first (a range shrinks from its end, where it
 * grows last), up to want bytes. A page whose last use is not proven complete is taken only
 * when may_sync. Returns the pieces (linked by lnext), their bytes in *got. */
static ca_block *collect_pages(ca_device *d, uint64_t want, bool may_sync, uint64_t *got,
                               int *n, bool *unproven)
{
    size_t page = d->vmm.page;
    ca_block *pieces = NULL;
    for (int i = d->nsegs - 1; i >= 0 && *got < want; i--) {
        ca_segment *s = d->segs[i];
        if (!s->expandable)
            continue;
        ca_block *b = s->first;
        while (b->next)
            b = b->next;
        for (ca_block *prev; b && *got < want; b = prev) {
            prev = b->prev;
            if (b->state != BLOCK_FREE)
                continue;
            uintptr_t lo, hi;
            /* Free since before the last device synchronization: the device is done with it. */
            bool proven = ca_reuse_block_idle(d, b);
            if ((!proven && !may_sync) || !whole_mappings(s, b, page, want - *got, &lo, &hi))
                continue;
            ca_block *piece = carve(d, b, lo, hi);
            if (!piece)
                continue;
            *unproven |= !proven;
            piece->lnext = pieces;
            pieces = piece;
            *got += piece->size;
            (*n)++;
        }
    }
    return pieces;
}

/* A destroyed stream's range with no page mapped any more: its reservation goes back, and the
 * pool can be dropped. */
static void drop_dead_range(ca_arena *a, ca_device *d, ca_segment *s)
{
    ca_pool *p = s->pool;
    if (!p->dead || s->first->state != BLOCK_UNMAPPED || s->first->next)
        return;
    ca_seg_remove(d, s);
    if (p->range[s->small] == s) /* the newest of its ranges */
        p->range[s->small] = NULL;
    p->nsegs--;
    d->vmm.nranges--;
    d->st.segments--;
    a->be.vmm_free(a->be.ctx, d->id, (void *)s->base, s->size);
    ca_block_recycle(d, s->first);
    free(s);
}

/* Pages another thread is unmapping are as good as this caller's own: wait for them, the lock
 * dropped, and report what they gave back. Without this a request that finds nothing left to
 * unmap would fail while the memory it needs is on its way back. */
static uint64_t wait_unmapping(ca_device *d)
{
    if (!d->vmm.unmapping)
        return 0;
    uint64_t before = d->vmm.unmapped_bytes;
    ca_window_begin(d);
    for (uint32_t u; (u = __atomic_load_n(&d->vmm.unmapping, __ATOMIC_ACQUIRE)) != 0;)
        ca_futex_wait(&d->vmm.unmapping, u);
    ca_window_end(d);
    return d->vmm.unmapped_bytes - before;
}

uint64_t ca_unmap_free_pages(ca_arena *a, ca_device *d, uint64_t want, bool may_sync)
{
    if (d->vmm.nranges == 0 || d->vmm.ranges_gone || want == 0)
        return 0;
    ca_device_consolidate(d); /* pages held only by unmerged exact-size lists */
    uint64_t got = 0;
    int n = 0;
    bool unproven = false;
    ca_block *pieces = collect_pages(d, want, may_sync, &got, &n, &unproven);
    if (!pieces)
        return may_sync ? wait_unmapping(d) : 0;
    ca_block **v = malloc((size_t)n * sizeof *v);
    int *ok = calloc((size_t)n, sizeof *ok);
    if (!v || !ok) {
        free(v);
        free(ok);
        v = NULL;
        ok = NULL;
    }
    for (int k = 0; v && k < n; k++, pieces = pieces->lnext)
        v[k] = pieces;
    if (v) {
        /* Unmapping under running work faults on a GPU; the pieces are out of every list, so
         * no one can allocate them meanwhile. */
        uint64_t token = ca_reuse_token(&d->reuse);
        if (unproven)
            d->st.device_syncs++;
        __atomic_store_n(&d->vmm.unmapping, d->vmm.unmapping + 1, __ATOMIC_RELAXED);
        uint64_t t0 = ca_now_ns();
        ca_window_begin(d);
        int sync = unproven ? a->be.device_synchronize(a->be.ctx, d->id) : CA_OK;
        uint64_t waited = unproven ? ca_now_ns() - t0 : 0;
        for (int i = 0; i < n && sync == CA_OK; i++)
            ok[i] = a->be.vmm_unmap(a->be.ctx, d->id, (void *)v[i]->addr, v[i]->size) == CA_OK;
        ca_window_end(d);
        d->st.sync_wait_ns += waited;
        if (unproven && sync == CA_OK)
            ca_reuse_synced(d, token);
    }
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        ca_block *b = v ? v[i] : pieces;
        if (!v)
            pieces = pieces->lnext;
        b->lnext = NULL;
        if (ok && ok[i]) {
            bytes += b->size;
            for (uintptr_t at = b->addr; at < b->addr + b->size; at += d->vmm.page)
                if (ca_range_boundary(b->seg, d->vmm.page, at)) {
                    ca_range_mark(b->seg, d->vmm.page, at, false);
                    d->st.driver_free_calls++;
                }
            ca_range_mark_solo(b->seg, b->addr, b->size, false);
            if (a->cfg.trace)
                a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_SEG_FREE, d->id, (void *)b->addr,
                             b->size, b->seg->pool->stream);
            hole_add(d, b);
        } else {
            /* Still mapped: a free block again, merged with what was freed meanwhile. */
            d->st.reserved_bytes += b->size;
            b->state = BLOCK_ALLOC;
            ca_block_free(d, b);
        }
    }
    if (v) {
        d->vmm.unmapped_bytes += bytes;
        __atomic_store_n(&d->vmm.unmapping, d->vmm.unmapping - 1, __ATOMIC_RELEASE);
        ca_futex_wake_all(&d->vmm.unmapping);
    }
    free(v);
    free(ok);
    for (int i = d->nsegs - 1; i >= 0; i--)
        if (d->segs[i]->expandable)
            drop_dead_range(a, d, d->segs[i]);
    return may_sync ? bytes + wait_unmapping(d) : bytes;
}
