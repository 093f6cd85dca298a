/* The free memory a program reads under the cache (cudaMemGetInfo, hipMemGetInfo): what its
 * next single allocation can get, read off the out-of-memory ladder (docs/arena.md, "The free
 * figure"). Computed only when asked, by walks over the device's blocks under its lock that
 * change nothing.
 *
 * The ladder serves a plain allocation in one of two ways. Without new memory: a run of
 * neighbouring free blocks of the plain pool, the pending ones free once rung 5 waited for
 * them and the threads' kept ones once it took them back. With new memory, at rung 4, 6 or 7:
 * a growth maps what the driver has into the lowest hole that holds the request with the
 * free blocks beside it (or a fixed segment of the request's size). Rung 6 first gave the
 * empty fixed segments back, rung 7 every whole mapping lying in free memory. The figure is
 * the largest request that one of these serves together with every smaller one. */
#include "arena/internal.h"
#include "base/ca_assert.h"

/* A block that is free as rung 4 sees it (free, merged or in an exact-size list), or as rungs 6
 * and 7 do (also pending, since rung 5 waited, and kept by a thread cache, since it took those
 * back): free in every sense the program can observe. */
static bool free_block(const ca_block *b, bool after_waits)
{
    if (b->state == BLOCK_FREE || b->state == BLOCK_EXACT)
        return true;
    return after_waits && (b->state == BLOCK_PENDING ||
                           (b->state == BLOCK_ALLOC &&
                            __atomic_load_n(&b->head.kept, __ATOMIC_RELAXED)));
}

/* The run of free blocks that begins at b: its end, and the block after it (NULL at the
 * segment's end). A run stops at a seam: free blocks never merge into or out of a solo
 * mapping (ca_seam). *late (may be NULL) is set when one of them is free only after the
 * waits. */
static const ca_block *run_end(const ca_segment *s, const ca_block *b, bool after_waits,
                               uintptr_t *end, bool *late)
{
    for (bool first = true; b && free_block(b, after_waits) && (first || !ca_seam(s, b->addr));
         b = b->next, first = false)
        if (late && !free_block(b, false))
            *late = true;
    *end = b ? b->addr : s->base + s->size;
    return b;
}

/* Whether the run starting at lo lies in a solo mapping: it serves only a request of its own
 * size (fits_rule in arena.c), never every smaller one, so only its unmapping counts. */
static bool solo_run(const ca_segment *s, uintptr_t lo)
{
    return s->expandable && ca_range_solo(s, lo);
}

/* Whether the ladder's unmapping sees a run followed by b as open-ended: an unmapped page, or
 * the range's end, follows it (arena/unmap.c's rule). */
static bool open_after(const ca_block *b) { return !b || b->state == BLOCK_UNMAPPED; }

static uint64_t sub(uint64_t x, uint64_t y) { return x > y ? x - y : 0; }
static uint64_t max64(uint64_t x, uint64_t y) { return x > y ? x : y; }
static uint64_t min64(uint64_t x, uint64_t y) { return x < y ? x : y; }

/* The bytes a block of 64 KiB or more skips to start aligned, when its free room begins at
 * addr (ca_align_pad's rule for such a block). */
static uint64_t pad_at(const ca_arena *a, uintptr_t addr)
{
    return ca_align_pad(addr, a->cfg.big_align, a->cfg.big_align);
}

/* What the plain pool serves without growing, and what the ladder can give the driver back,
 * over the whole device. */
typedef struct spare_sum {
    uint64_t largest;  /* the largest request one run of the plain pool serves */
    uint64_t segments; /* empty fixed segments, free once waited for (rung 6) */
    uint64_t mappings; /* whole mappings inside runs of free blocks (rung 7) */
    uint64_t coming;   /* pages another thread is unmapping now (rung 7 waits for them) */
    bool unsettled;    /* pending or kept blocks: rung 4 may see more free than now */
} spare_sum;

static void sum_run(const ca_arena *a, const ca_device *d, const ca_segment *s, uintptr_t lo,
                    uintptr_t hi, bool open, spare_sum *sum)
{
    if (s->pool == &d->plain && !solo_run(s, lo)) {
        uint64_t n = sub(hi - lo, pad_at(a, lo));
        /* A request of 1 MiB or less searches the small blocks only, a larger one the rest. */
        if (s->small)
            n = min64(n, CA_SMALL_MAX);
        else if (n <= CA_SMALL_MAX)
            n = 0;
        sum->largest = max64(sum->largest, n);
    }
    uintptr_t x, y;
    if (!s->expandable)
        sum->segments += lo == s->base && hi == s->base + s->size ? s->size : 0;
    else if (!d->vmm.ranges_gone && ca_unmap_whole_mappings(s, d->vmm.page, lo, hi, open, UINT64_MAX, &x, &y))
        sum->mappings += y - x;
}

static void sum_device(const ca_arena *a, const ca_device *d, spare_sum *sum)
{
    for (int i = 0; i < d->nsegs; i++) {
        const ca_segment *s = d->segs[i];
        for (const ca_block *b = s->first; b;) {
            if (!free_block(b, true)) {
                if (b->state == BLOCK_UNMAPPING)
                    sum->coming += b->size;
                b = b->next;
                continue;
            }
            uintptr_t lo = b->addr, hi;
            b = run_end(s, b, true, &hi, &sum->unsettled);
            sum_run(a, d, s, lo, hi, open_after(b), sum);
        }
    }
}

/* The plain pool's ranges of large blocks as the ladder's growth sees them at a rung. */
typedef enum { AT_RUNG4, AT_RUNG6, AT_RUNG7 } rung;

/* A walk over those ranges in address order, as they are at `at`: at rung 7, after the
 * unmapping, each free run is split into what stays mapped below and above its whole mappings
 * and a hole where they were, merged with the holes beside it. For each hole: the requests it
 * holds with the free blocks beside it, and those a growth there serves mapping at most
 * `room` bytes (pick_hole's rule). */
typedef enum { PIECE_LIVE, PIECE_FREE, PIECE_HOLE } piece_kind;

typedef struct hole_walk {
    const ca_arena *a;
    rung at;
    bool solo;          /* requests of CA_SOLO_MIN or more: a solo mapping takes the hole alone */
    uint64_t room;      /* what a growth may map: pages only */
    uint64_t floor;     /* requests up to this are served another way */
    piece_kind last;
    uintptr_t free_lo;  /* the last free piece */
    uint64_t free_n;
    uintptr_t start;    /* where the open hole's block would begin */
    uintptr_t hole_lo;  /* where the open hole begins */
    uint64_t below;     /* the free bytes just below the open hole */
    uint64_t hole;      /* the open hole's bytes so far */
    uint64_t fit_max;   /* the largest request any hole so far holds */
    uint64_t served;    /* every request up to this is served (UINT64_MAX: so far all) */
} hole_walk;

/* The open hole ends, `above` free bytes after it. A growth takes the lowest hole that holds
 * the request, so this one gets the requests that no lower hole holds: a hole no larger than
 * the room is mapped whole and serves all it holds; a larger one serves what the room and
 * the block below make, and the requests it holds above that fail. */
static void hole_close(hole_walk *w, uint64_t above)
{
    uint64_t below = w->solo ? 0 : w->below;
    above = w->solo ? 0 : above;
    uint64_t pad = pad_at(w->a, w->solo ? w->hole_lo : w->start);
    uint64_t holds = sub(below + w->hole + above, pad);
    uint64_t serves = w->hole <= w->room ? holds : sub(below + w->room, pad);
    uint64_t from = max64(max64(w->fit_max, serves), w->floor);
    if (holds > from)
        w->served = min64(w->served, from);
    w->fit_max = max64(w->fit_max, holds);
}
static void piece(hole_walk *w, piece_kind k, uintptr_t lo, uintptr_t hi)
{
    if (hi == lo)
        return;
    if (k == PIECE_HOLE && w->last != PIECE_HOLE) {
        w->below = w->last == PIECE_FREE ? w->free_n : 0;
        w->start = w->below ? w->free_lo : lo;
        w->hole_lo = lo;
        w->hole = 0;
    } else if (k != PIECE_HOLE && w->last == PIECE_HOLE) {
        hole_close(w, k == PIECE_FREE ? hi - lo : 0);
    }
    if (k == PIECE_HOLE)
        w->hole += hi - lo;
    if (k == PIECE_FREE) {
        w->free_lo = lo;
        w->free_n = hi - lo;
    }
    w->last = k;
}

static void walk_range(hole_walk *w, const ca_device *d, const ca_segment *s)
{
    bool waited = w->at != AT_RUNG4, unmapped = w->at == AT_RUNG7;
    w->last = PIECE_LIVE; /* nothing below the range's base */
    for (const ca_block *b = s->first; b;) {
        if (!free_block(b, waited)) {
            bool gone = b->state == BLOCK_UNMAPPED || (unmapped && b->state == BLOCK_UNMAPPING);
            piece(w, gone ? PIECE_HOLE : PIECE_LIVE, b->addr, b->addr + b->size);
            b = b->next;
            continue;
        }
        uintptr_t lo = b->addr, hi, x, y;
        b = run_end(s, b, waited, &hi, NULL);
        if (!unmapped ||
            !ca_unmap_whole_mappings(s, d->vmm.page, lo, hi, open_after(b), UINT64_MAX, &x, &y))
            x = y = hi;
        /* What stays of a solo mapping merges with no growth beside it. */
        piece_kind kept = solo_run(s, lo) ? PIECE_LIVE : PIECE_FREE;
        piece(w, kept, lo, x);
        piece(w, PIECE_HOLE, x, y);
        piece(w, kept, y, hi);
    }
    if (w->last == PIECE_HOLE)
        hole_close(w, 0);
}

/* What a growth into a fresh range serves with room bytes to map in pages of `page` (0: a
 * fixed segment of the request's size). A range begins on a page: a start aligned beyond
 * that may cost what it skips. */
static uint64_t fresh_range(const ca_arena *a, size_t page, uint64_t room)
{
    if (page == 0)
        return room;
    return sub(ca_align_down(room, page), a->cfg.big_align > page ? a->cfg.big_align - page : 0);
}

/* The largest request a growth at rung `at` serves, with every smaller one above floor (served
 * another way), mapping at most room bytes in pages of `page`. A request no hole holds opens a
 * fresh range. One that no hole held at rung 4 (beyond opened) opened one there already,
 * wherever the driver placed it: it may be the lowest that holds the request later, and it
 * serves no more than the room. *fit: the largest request a hole holds. */
static uint64_t served_at(const ca_arena *a, const ca_device *d, size_t page, rung at,
                          bool solo, uint64_t room, uint64_t floor, uint64_t opened_beyond,
                          uint64_t *fit)
{
    hole_walk w = {.a = a, .at = at, .solo = solo, .room = ca_align_down(room, page),
                   .floor = floor, .served = UINT64_MAX};
    uint64_t fresh = fresh_range(a, page, room);
    for (int i = 0; d->vmm.page && !d->vmm.ranges_gone && i < d->nsegs; i++) {
        const ca_segment *s = d->segs[i];
        if (s->expandable && s->pool == &d->plain && !s->small)
            walk_range(&w, d, s);
    }
    *fit = w.fit_max;
    uint64_t served = min64(w.served, max64(max64(w.fit_max, fresh), floor));
    return min64(served, max64(max64(opened_beyond, fresh), floor));
}

/* The page size the plain pool grows in on device dev (d: its state, NULL before its first
 * use), where it grows in ranges; 0 where it takes fixed segments. Before the first range the
 * driver is asked (not while a capture forbids calls: then nothing grows anyway). */
static size_t growth_page(ca_arena *a, int dev, const ca_device *d)
{
    if (a->cfg.expandable <= 0 || a->cfg.pool != CA_POOL_SPLIT ||
        (d && (d->vmm.off || d->vmm.ranges_gone)))
        return 0;
    size_t page = d ? d->vmm.page : 0;
    if (!page && !ca_quiet(a) && a->be.vmm_granularity)
        (void)a->be.vmm_granularity(a->be.ctx, dev, &page);
    return page;
}

/* What a growth may map at rungs 4, 6 and 7: what the driver has by then, within the limit. */
typedef struct rooms {
    uint64_t at4, at6, at7;
} rooms;

/* The largest request a growth at one of the rungs serves with every smaller one above floor,
 * for requests of one kind (solo: CA_SOLO_MIN or more). */
static uint64_t grown_by(const ca_arena *a, const ca_device *d, size_t page, const spare_sum *sum,
                        const rooms *r, bool solo, uint64_t floor)
{
    uint64_t fit4, fit;
    uint64_t s4 = served_at(a, d, page, AT_RUNG4, solo, r->at4, floor, UINT64_MAX, &fit4);
    uint64_t s6 = served_at(a, d, page, AT_RUNG6, solo, r->at6, floor, fit4, &fit);
    uint64_t s7 = served_at(a, d, page, AT_RUNG7, solo, r->at7, floor, fit4, &fit);
    /* Pending or kept blocks freed before rung 4 change what it sees: none of its own. */
    return max64(sum->unsettled ? 0 : s4, max64(s6, s7));
}

/* The largest request the ladder serves with every smaller one, from its runs (sum) or by a
 * growth. Each rung's growth serves what the others leave out too: a request served at one
 * needs none of the others, so each looks only above what the rest already serve. */
static uint64_t figure(ca_arena *a, ca_device *d, const spare_sum *sum, const rooms *r)
{
    size_t page = growth_page(a, d->id, d);
    if (page == 0)
        return max64(sum->largest, r->at7); /* a fixed segment of the request's size */
    uint64_t served = sum->largest, before;
    int rounds = 0;
    do {
        before = served;
        /* Requests below CA_SOLO_MIN grow beside the free blocks around a hole; larger ones
         * take a solo mapping of the hole alone: each up to where the other kind begins. */
        uint64_t grown = grown_by(a, d, page, sum, r, false, before);
        if (grown >= CA_SOLO_MIN - CA_ROUND)
            grown = max64(CA_SOLO_MIN - CA_ROUND, grown_by(a, d, page, sum, r, true, before));
        if (grown > CA_SMALL_MAX) /* smaller requests grow the small ranges */
            served = max64(served, grown);
    } while (served != before && ++rounds < 8); /* each round's answer holds: a bound on the walks */
    return served;
}

/* The largest request whose block is at most n bytes. */
static uint64_t fit(const ca_config *c, uint64_t n)
{
    if (c->pool != CA_POOL_BINNED)
        return n / CA_ROUND * CA_ROUND;
    if (n < CA_ROUND)
        return 0;
    uint64_t p = CA_ROUND;
    while (p <= n / 2)
        p <<= 1;
    return p;
}

/* CACHEALLOC_LIMIT in bytes: the device's own once it was used, the same rule before. */
static uint64_t limit_of(const ca_arena *a, const ca_device *d, uint64_t total)
{
    if (d && d->ready)
        return d->limit;
    return a->cfg.limit_percent ? ca_share_of(total, a->cfg.limit_percent) : a->cfg.limit_bytes;
}

/* driver_free plus `back` bytes given back, within the limit: what is given back leaves
 * reserved (pages another thread is unmapping left it already). */
static uint64_t room_after(uint64_t driver_free, uint64_t back, uint64_t coming, uint64_t limit,
                           uint64_t reserved)
{
    uint64_t room = driver_free + back + coming;
    return limit ? min64(room, sub(limit, sub(reserved, back))) : room;
}

uint64_t ca_free_for_program(ca_arena *a, int dev, uint64_t driver_free, uint64_t total)
{
    ca_device *d = ca_device_peek(a, dev);
    uint64_t limit = limit_of(a, d, total);
    if (!d) { /* nothing cached yet: what one growth gets */
        uint64_t room = room_after(driver_free, 0, 0, limit, 0);
        return min64(fit(&a->cfg, fresh_range(a, growth_page(a, dev, NULL), room)), total);
    }
    ca_lock_acquire(&d->lock);
    spare_sum sum = {0};
    sum_device(a, d, &sum);
    uint64_t reserved = d->st.reserved_bytes, all = sum.segments + sum.mappings;
    ca_assert(all <= reserved); /* only what the device holds for the cache can go back */
    rooms r = {room_after(driver_free, 0, 0, limit, reserved),
               room_after(driver_free, sum.segments, 0, limit, reserved),
               room_after(driver_free, all, sum.coming, limit, reserved)};
    uint64_t f = figure(a, d, &sum, &r);
    ca_lock_release(&d->lock);
    return min64(fit(&a->cfg, f), total);
}
