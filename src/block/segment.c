/* Segments (driver allocations) and the blocks they are cut into.
 *
 * A segment belongs to one pool at a time; its blocks are address-ordered and linked, so a
 * freed block merges with free neighbours in O(1). A segment whose blocks have all merged back
 * into one free block is "empty" (no live block): only empty segments move between pools or go
 * back to the driver. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "block/block.h"
#include "base/clock.h"
#include "base/grow.h"
#include "base/ca_assert.h"

static inline size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

bool ca_is_small(size_t rounded) { return rounded <= CA_SMALL_MAX; }

size_t ca_segment_size(const ca_config *c, size_t rounded)
{
    if (c->pool != CA_POOL_SPLIT)
        return rounded;
    if (rounded <= CA_SMALL_MAX)
        return CA_SMALL_SEGMENT;
    if (rounded < CA_MID_MAX)
        return CA_MID_SEGMENT;
    return round_up(rounded, CA_LARGE_ROUND);
}

ca_bins *ca_pool_bins(ca_pool *p, bool small) { return small ? &p->small : &p->large; }

ca_block *ca_block_new(ca_device *d)
{
    ca_block *b = d->spare;
    if (b) {
        d->spare = b->lnext;
        void **stack = b->stack;
        /* Not gen: a thread cache may still compare it with the gen it saw. */
        size_t from = offsetof(ca_block, head.kept);
        memset((char *)b + from, 0, sizeof *b - from);
        b->stack = stack;
        return b;
    }
    return calloc(1, sizeof *b);
}

void ca_block_recycle(ca_device *d, ca_block *b)
{
    b->lnext = d->spare;
    d->spare = b;
}

static void empty_add(ca_device *d, ca_segment *s)
{
    if (s->in_empty)
        return;
    s->in_empty = true;
    s->eprev = NULL;
    s->enext = d->empty_segs;
    if (d->empty_segs)
        d->empty_segs->eprev = s;
    d->empty_segs = s;
}

static void empty_del(ca_device *d, ca_segment *s)
{
    if (!s->in_empty)
        return;
    if (s->eprev)
        s->eprev->enext = s->enext;
    else
        d->empty_segs = s->enext;
    if (s->enext)
        s->enext->eprev = s->eprev;
    s->in_empty = false;
    s->eprev = s->enext = NULL;
}

static int seg_index(const ca_device *d, uintptr_t addr)
{
    /* Index of the last segment with base <= addr, or -1. */
    int lo = 0, hi = d->nsegs - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (d->segs[mid]->base <= addr) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

/* Whether addr lies in s's driver allocation: its blocks, or the bytes before and after them
 * that an unaligned base left (never handed out, never the runtime's to free). */
static bool holds(const ca_segment *s, uintptr_t addr)
{
    return addr >= ca_seg_driver_base(s) && addr - ca_seg_driver_base(s) < ca_seg_driver_size(s);
}

ca_segment *ca_segment_find(const ca_device *d, uintptr_t addr)
{
    /* A segment's driver allocation begins at most max_lead bytes before its base (place()):
     * the one holding addr is based at most that far past it. Driver allocations are disjoint
     * and ordered as their bases: of those based at or before addr, only the last may. */
    uintptr_t past = addr + d->max_lead < addr ? UINTPTR_MAX : addr + d->max_lead;
    for (int k = seg_index(d, past); k >= 0; k--) {
        if (holds(d->segs[k], addr))
            return d->segs[k];
        if (d->segs[k]->base <= addr)
            break;
    }
    return NULL;
}

/* Room for one more segment, made before the driver is asked: a segment the arena could not
 * record would have to go back under the lock. */
int ca_seg_reserve(ca_device *d)
{
    ca_segment **n = ca_grow(d->segs, d->nsegs, &d->cap_segs, sizeof *n, 16);
    if (!n)
        return -1;
    d->segs = n;
    return 0;
}

void ca_seg_insert(ca_device *d, ca_segment *s)
{
    int at = seg_index(d, s->base) + 1;
    memmove(&d->segs[at + 1], &d->segs[at], (size_t)(d->nsegs - at) * sizeof *d->segs);
    d->segs[at] = s;
    d->nsegs++;
}

void ca_seg_remove(ca_device *d, ca_segment *s)
{
    int at = seg_index(d, s->base);
    if (at < 0 || d->segs[at] != s)
        return;
    memmove(&d->segs[at], &d->segs[at + 1], (size_t)(d->nsegs - at - 1) * sizeof *d->segs);
    d->nsegs--;
}

uint64_t ca_note_growth(ca_device *d, uint64_t t0)
{
    uint64_t ns = ca_now_ns() - t0;
    d->st.grow_ns += ns;
    d->st.growths++;
    return ns;
}

void ca_note_peaks(ca_dev_stats *st)
{
    if (st->reserved_bytes > st->peak_reserved_bytes)
        st->peak_reserved_bytes = st->reserved_bytes;
    if (st->allocated_bytes > st->peak_allocated_bytes)
        st->peak_allocated_bytes = st->allocated_bytes;
}

/* What a segment that must hold rounded bytes is asked beyond them where the device's bases
 * come unaligned: CA_ROUND, so that its first block holds them whatever the base; a large
 * block's alignment more, so that ca_block_take can start it there. Only in the split pool:
 * a binned or uncached block is all of its segment, and starts where the segment does. */
static size_t room_for(const ca_arena *a, size_t rounded)
{
    size_t big = a->cfg.big_align;
    return big && rounded >= big && a->cfg.pool == CA_POOL_SPLIT ? big : CA_ROUND;
}

/* Blocks tile [base, base + size) of the driver's [ptr, ptr + got): from the first CA_ROUND
 * boundary to the last, no more than `want` bytes or what serves rounded at its aligned start,
 * whichever is more (a binned or uncached segment stays one block of its own size). Every block then starts on
 * CA_ROUND at least, whatever the driver's base. */
static void place(const ca_arena *a, ca_segment *seg, uintptr_t ptr, size_t got, size_t want,
                  size_t rounded)
{
    uintptr_t base = ca_align_up(ptr, CA_ROUND);
    uintptr_t end = ca_align_down(ptr + got, CA_ROUND);
    size_t size = end > base ? end - base : 0;
    size_t keep = want;
    if (a->cfg.pool == CA_POOL_SPLIT &&
        rounded + ca_align_pad(base, rounded, a->cfg.big_align) > keep)
        keep = rounded + ca_align_pad(base, rounded, a->cfg.big_align);
    if (size > keep)
        size = keep;
    seg->base = base;
    seg->size = size;
    seg->lead = base - ptr;
    seg->tail = got - seg->lead - size;
    ca_assert(seg->base % CA_ROUND == 0 && seg->size % CA_ROUND == 0);
    ca_assert(ca_seg_driver_base(seg) == ptr && ca_seg_driver_size(seg) == got);
}

ca_status ca_segment_new(ca_arena *a, ca_device *d, ca_pool *pool, size_t size, bool small,
                         bool prealloc, size_t rounded, ca_block **out, bool *driver_failed,
                         void **unfit)
{
    ca_segment *seg = calloc(1, sizeof *seg);
    ca_block *b = ca_block_new(d);
    if (!seg || !b || ca_seg_reserve(d) != 0) {
        free(seg);
        if (b)
            ca_block_recycle(d, b);
        return CA_ERR_OOM;
    }
    size_t ask = size;
    if (rounded && d->bases_unaligned && ask < rounded + room_for(a, rounded))
        ask = rounded + room_for(a, rounded);
    void *ptr = NULL;
    d->st.driver_alloc_calls++;
    uint64_t t0 = ca_now_ns();
    int rc = a->be.alloc(a->be.ctx, d->id, ask, &ptr);
    ca_note_growth(d, t0);
    if (rc != CA_OK || !ptr) {
        /* Whatever the code, the runtime recorded it as its last error. */
        *driver_failed = true;
        free(seg);
        ca_block_recycle(d, b);
        return rc == CA_OK || rc != CA_ERR_OOM ? CA_ERR_BACKEND : CA_ERR_OOM;
    }
    if ((uintptr_t)ptr % CA_ROUND)
        d->bases_unaligned = true;
    place(a, seg, (uintptr_t)ptr, ask, size, rounded);
    if (seg->size < rounded) {
        /* The base left too little room: the caller gives it back (the lock dropped). */
        *unfit = ptr;
        free(seg);
        ca_block_recycle(d, b);
        return CA_ERR_BACKEND;
    }
    if (seg->lead > d->max_lead)
        d->max_lead = seg->lead;
    seg->pool = pool;
    pool->nsegs++;
    seg->small = small;
    seg->prealloc = prealloc;
    seg->first = b;
    ca_seg_insert(d, seg);
    b->addr = seg->base;
    b->size = seg->size;
    b->seg = seg;
    b->state = BLOCK_FREE;
    ca_bins_insert(ca_pool_bins(pool, small), b);
    empty_add(d, seg);
    d->st.reserved_bytes += seg->size;
    d->st.cached_bytes += seg->size;
    d->st.segments++;
    ca_note_peaks(&d->st);
    if (a->cfg.trace)
        a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_SEG_ALLOC, d->id, ptr, ask, pool->stream);
    *out = b;
    return CA_OK;
}

void ca_segment_detach(ca_arena *a, ca_device *d, ca_segment *seg)
{
    /* Only empty segments (one free block) or a none-mode segment (one allocated block). */
    ca_block *b = seg->first;
    if (b->state == BLOCK_FREE) {
        ca_bins_remove(ca_pool_bins(seg->pool, seg->small), b);
        d->st.cached_bytes -= b->size;
    }
    empty_del(d, seg);
    ca_seg_remove(d, seg);
    seg->pool->nsegs--;
    d->st.reserved_bytes -= seg->size;
    d->st.segments--;
    ca_block_recycle(d, b);
    seg->first = NULL;
    if (a->cfg.trace)
        a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_SEG_FREE, d->id, (void *)ca_seg_driver_base(seg),
                     ca_seg_driver_size(seg), seg->pool->stream);
}

void ca_segment_release(ca_arena *a, int dev, ca_segment *seg)
{
    a->be.release(a->be.ctx, dev, (void *)ca_seg_driver_base(seg));
    free(seg);
}

void ca_segment_forget(ca_segment *seg)
{
    for (ca_block *b = seg->first, *n; b; b = n) {
        n = b->next;
        free(b->stack);
        free(b);
    }
    free(seg);
}

void ca_segment_move(ca_segment *seg, ca_pool *to)
{
    ca_block *b = seg->first;
    ca_bins_remove(ca_pool_bins(seg->pool, seg->small), b);
    seg->pool->nsegs--;
    seg->pool = to;
    to->nsegs++;
    ca_bins_insert(ca_pool_bins(to, seg->small), b);
}

/* Cut b after its first `first` bytes: rest (a fresh struct) takes the remainder, in b's state,
 * linked after b. */
void ca_block_split(ca_block *b, ca_block *rest, size_t first)
{
    ca_assert(first > 0 && first < b->size);
    rest->addr = b->addr + first;
    rest->size = b->size - first;
    rest->seg = b->seg;
    rest->free_seq = b->free_seq; /* the pieces of one free wait for the same */
    rest->state = b->state;
    rest->prev = b;
    rest->next = b->next;
    if (b->next)
        b->next->prev = rest;
    b->next = rest;
    b->size = first;
}

/* Absorb right into left (adjacent, same state): left grows, right's struct is recycled. */
void ca_block_merge(ca_device *d, ca_block *left, ca_block *right)
{
    /* Blocks tile their segment: neighbours touch, and only like merges with like. */
    ca_assert(left->next == right && right->prev == left && left->seg == right->seg);
    ca_assert(left->addr + left->size == right->addr && left->state == right->state);
    left->size += right->size;
    left->next = right->next;
    if (right->next)
        right->next->prev = left;
    ca_reuse_stamp_merge(&left->free_seq, right->free_seq);
    ca_block_recycle(d, right);
}

ca_block *ca_block_free(ca_device *d, ca_block *b)
{
    ca_segment *seg = b->seg;
    ca_bins *bins = ca_pool_bins(seg->pool, seg->small);
    /* Freed once: a block already free, or with no memory behind it, is never freed again. */
    ca_assert(b->state == BLOCK_ALLOC || b->state == BLOCK_PENDING || b->state == BLOCK_EXACT);
    ca_assert(b->prev ? b->prev->addr + b->prev->size == b->addr : b->addr == seg->base);
    ca_assert(b->next ? b->addr + b->size == b->next->addr : b->addr + b->size == seg->base + seg->size);
    b->state = BLOCK_FREE;
    d->st.cached_bytes += b->size;
    if (b->prev && b->prev->state == BLOCK_FREE && !ca_seam(seg, b->addr)) {
        ca_block *p = b->prev;
        ca_bins_remove(bins, p);
        ca_block_merge(d, p, b);
        b = p;
    }
    if (b->next && b->next->state == BLOCK_FREE && !ca_seam(seg, b->next->addr)) {
        ca_bins_remove(bins, b->next);
        ca_block_merge(d, b, b->next);
    }
    ca_bins_insert(bins, b);
    /* An expandable segment never goes back whole: its pages are unmapped instead. */
    if (!b->prev && !b->next && !seg->expandable)
        empty_add(d, seg);
    return b;
}

void ca_block_unfree(ca_device *d, ca_block *b)
{
    ca_segment *seg = b->seg;
    ca_bins_remove(ca_pool_bins(seg->pool, seg->small), b);
    empty_del(d, seg);
    d->st.cached_bytes -= b->size;
}

ca_block *ca_block_take(ca_arena *a, ca_device *d, ca_block *b, size_t rounded)
{
    ca_segment *seg = b->seg;
    ca_bins *bins = ca_pool_bins(seg->pool, seg->small);
    ca_assert(b->state == BLOCK_FREE && b->size >= rounded);
    ca_block_unfree(d, b);
    /* A block of 64 KiB or more starts aligned: the bytes in front stay a free block. */
    size_t pad = ca_align_pad(b->addr, rounded, a->cfg.big_align);
    ca_block *front = pad && b->size >= pad + rounded ? ca_block_new(d) : NULL;
    if (front) {
        ca_block_split(b, front, pad);
        ca_block *taken = front; /* the split keeps the low part in b */
        b->state = BLOCK_FREE;
        ca_bins_insert(bins, b);
        d->st.cached_bytes += pad;
        b = taken;
    }
    size_t rest = b->size - rounded;
    /* In an expandable segment a remainder of any size stays mergeable with what its pages
     * gain later, and pages wholly inside it can be unmapped: splitting wastes nothing. */
    bool split = seg->expandable ? rest >= CA_ROUND
                 : a->cfg.pool == CA_POOL_SPLIT && b->size < a->cfg.max_split &&
                       (seg->small ? rest >= CA_ROUND : rest > CA_LARGE_MIN_REMAINDER);
    if (split) {
        ca_block *r = ca_block_new(d);
        if (r) {
            ca_block_split(b, r, rounded);
            r->state = BLOCK_FREE;
            ca_bins_insert(bins, r);
            d->st.cached_bytes += rest;
        }
    }
    ca_assert(b->addr % CA_ROUND == 0);
    b->state = BLOCK_ALLOC;
    b->bin = ca_bin_of(b->size); /* its exact-size list when freed */
    d->st.allocated_bytes += b->size;
    ca_note_peaks(&d->st);
    return b;
}

void ca_pool_consolidate(ca_device *d, ca_pool *p)
{
    for (uint32_t c = 0; p->nexact > 0 && c < CA_BIN_COUNT; c++) {
        while (p->exact[c]) {
            ca_block *b = p->exact[c];
            p->exact[c] = b->lnext;
            p->nexact--;
            b->lnext = NULL;
            d->st.cached_bytes -= b->size; /* ca_block_free counts it again */
            ca_block_free(d, b);
        }
    }
}

void ca_device_consolidate(ca_device *d)
{
    ca_pool_consolidate(d, &d->plain);
    for (int i = 0; i < d->npools; i++)
        ca_pool_consolidate(d, d->pools[i]);
}
