/* Expandable segments: one reserved range of virtual addresses per pool and block kind (small
 * or large), grown by mapping physical pages where the pool needs them and shrunk by unmapping
 * free pages wherever they lie (arena/unmap.c). PyTorch's "Note [Expandable Segments]" is the
 * design this follows; docs/arena.md says what differs.
 *
 * A range is a segment like any other to the rest of the arena: its blocks split, merge and sit
 * in the pool's bins. Two block states are its own: UNMAPPED, page-aligned holes with no memory
 * behind them (listed on the segment, merged with each other), and UNMAPPING, free pages carved
 * out and being unmapped while the lock is dropped. A page is never shared by an UNMAPPED block
 * and a mapped one, so mapped bytes = allocated + cached + pending stays exact.
 *
 * A page's physical memory is created, mapped and released at once: the mapping alone keeps it,
 * and unmapping gives it back. The arena therefore holds no handles at all. */
#include <stdlib.h>

#include "block/block.h"
#include "base/clock.h"

void ca_unmapped_link(ca_segment *s, ca_block *b)
{
    b->state = BLOCK_UNMAPPED;
    b->lprev = NULL;
    b->lnext = s->unmapped;
    if (s->unmapped)
        s->unmapped->lprev = b;
    s->unmapped = b;
}

void ca_unmapped_unlink(ca_segment *s, ca_block *b)
{
    if (b->lprev)
        b->lprev->lnext = b->lnext;
    else
        s->unmapped = b->lnext;
    if (b->lnext)
        b->lnext->lprev = b->lprev;
    b->lprev = b->lnext = NULL;
}

static bool vmm_ops(const ca_backend *be)
{
    return be->vmm_granularity && be->vmm_reserve && be->vmm_free && be->vmm_create &&
           be->vmm_release && be->vmm_map && be->vmm_unmap && be->vmm_set_access;
}

/* First use on a device: the page size, and a reservation as large as the device plus an
 * eighth (PyTorch's choice), room to put pages unmapped early in a range back at its end. */
static bool vmm_ready(ca_arena *a, ca_device *d)
{
    if (d->vmm.off || d->vmm.ranges_gone)
        return false;
    if (d->vmm.page)
        return true;
    size_t page = 0, fr = 0, total = 0;
    if (!vmm_ops(&a->be) || a->be.vmm_granularity(a->be.ctx, d->id, &page) != CA_OK ||
        page == 0 || a->be.mem_info(a->be.ctx, d->id, &fr, &total) != CA_OK || total == 0) {
        d->vmm.off = true;
        return false;
    }
    d->vmm.page = page;
    d->vmm.range = ca_align_up(total + total / 8, page);
    return true;
}

static bool range_idle(const ca_segment *s)
{
    for (const ca_block *b = s->first; b; b = b->next)
        if (b->state != BLOCK_FREE && b->state != BLOCK_UNMAPPED)
            return false;
    return true;
}

/* The range of a destroyed stream's pool with nothing allocated or pending in it, taken over
 * with its mapped pages: programs that create and destroy streams in a loop would otherwise
 * leave a reservation behind each time. Its free blocks waited for a fence when the stream
 * died (or were freed after, and waited then), so every stream may use them. */
static ca_segment *range_adopt(ca_device *d, ca_pool *p, bool small)
{
    for (int i = 0; i < d->npools; i++) {
        ca_pool *q = d->pools[i];
        ca_segment *s = q->dead ? q->range[small] : NULL;
        if (!s || !range_idle(s))
            continue;
        for (ca_block *b = s->first; b; b = b->next) {
            if (b->state == BLOCK_FREE) {
                ca_bins_remove(ca_pool_bins(q, small), b);
                ca_bins_insert(ca_pool_bins(p, small), b);
            }
        }
        q->range[small] = NULL;
        q->nsegs--;
        s->pool = p;
        p->nsegs++;
        return p->range[small] = s;
    }
    return NULL;
}

static ca_segment *range_new(ca_arena *a, ca_device *d, ca_pool *p, bool small)
{
    size_t words = (d->vmm.range / d->vmm.page + 63) / 64;
    ca_segment *s = calloc(1, sizeof *s + 2 * words * sizeof s->starts[0]);
    ca_block *b = ca_block_new(d);
    void *base = NULL;
    bool room = s && b && ca_seg_reserve(d) == 0;
    if (!room || a->be.vmm_reserve(a->be.ctx, d->id, d->vmm.range, &base) != CA_OK || !base) {
        /* Addresses ran out (a reservation per pool): fixed segments from now on. */
        if (room)
            d->vmm.off = true;
        free(s);
        if (b)
            ca_block_recycle(d, b);
        return NULL;
    }
    s->base = (uintptr_t)base;
    s->size = d->vmm.range;
    s->page = d->vmm.page;
    s->solo = s->starts + words;
    s->pool = p;
    s->small = small;
    s->expandable = true;
    s->first = b;
    b->addr = s->base;
    b->size = s->size;
    b->seg = s;
    ca_unmapped_link(s, b);
    ca_seg_insert(d, s);
    p->nsegs++;
    d->vmm.nranges++;
    d->st.segments++;
    return p->range[small] = s;
}

/* The bytes each handle of a shared growth holds: CACHEALLOC_EXPANDABLE_PIECE, the driver's
 * page by default, so that any free page can go back to the driver wherever it lies
 * (docs/arena.md, "Pieces"). */
static size_t piece_of(const ca_arena *a, const ca_device *d)
{
    size_t page = d->vmm.page;
    return ca_align_up(a->cfg.expandable_piece ? a->cfg.expandable_piece : page, page);
}

/* Below this price a handle is cheap: growths keep a page a handle whatever the room. */
#define CHEAP_MAP_NS 10000

/* The least request that gets a solo mapping (one handle, CA_SOLO_MIN by default). Each handle
 * costs a driver call or three (about 55 us for a 2 MiB page on an H200, docs/gpu.md finding
 * 17), and far from the edge of memory a page a handle buys nothing yet; near it, pages are
 * what lets every free one go back. So while a handle is dear here (measured) and the device
 * keeps at least half of its memory free after the growth, requests from CA_SOLO_LEAST get a
 * mapping of their own, which goes back whole when its block is freed (docs/arena.md,
 * "Pieces"). A piece the program set (CACHEALLOC_EXPANDABLE_PIECE) is kept. fr, total: the
 * device's memory as the driver answered (0 when unknown). */
static size_t solo_from(const ca_arena *a, const ca_device *d, size_t rounded, size_t fr,
                        size_t total)
{
    if (a->cfg.expandable_piece || d->vmm.map_ns <= CHEAP_MAP_NS || !total || fr < rounded ||
        fr - rounded < total / 2)
        return CA_SOLO_MIN;
    if (d->limit && d->st.reserved_bytes + rounded > d->limit / 2)
        return CA_SOLO_MIN;
    return CA_SOLO_LEAST;
}

/* A run of handles took ns: the price of one joins the moving average. */
static void note_map_price(ca_device *d, uint64_t ns, size_t handles)
{
    uint64_t one = ns / (handles ? handles : 1);
    d->vmm.map_ns = d->vmm.map_ns ? (3 * d->vmm.map_ns + one) / 4 : one;
}

/* Map [addr, addr+size), the start of a hole of range s, as pieces of `piece` bytes, one handle
 * each, and give dev access to them; on failure nothing is mapped. The driver unmaps whole
 * mappings only, so a mapping that still holds one live block keeps all its memory: small
 * pieces let every free one go back, and a solo mapping holds one block at a time
 * (docs/arena.md, "Pieces", has the trade against the calls they cost). */
static int map_run(ca_arena *a, ca_device *d, ca_segment *s, uintptr_t addr, size_t size,
                   size_t piece)
{
    const ca_backend *be = &a->be;
    size_t done = 0;
    int rc = CA_OK;
    uint64_t t0 = ca_now_ns();
    while (rc == CA_OK && done < size) {
        size_t n = size - done < piece ? size - done : piece;
        uint64_t h = 0;
        d->st.driver_alloc_calls++;
        rc = be->vmm_create(be->ctx, d->id, n, &h);
        if (rc != CA_OK)
            break;
        rc = be->vmm_map(be->ctx, d->id, (void *)(addr + done), n, h);
        /* The mapping holds the memory from here on; unmapping alone gives it back. */
        be->vmm_release(be->ctx, d->id, h);
        if (rc == CA_OK)
            done += n;
    }
    /* One access call for the run: the driver charges it by the mapping either way. */
    if (rc == CA_OK)
        rc = be->vmm_set_access(be->ctx, d->id, (void *)addr, size);
    /* The devices the program gave peer access to d reach this memory too, as they reach
     * cudaMalloc memory. */
    for (int p = 0; rc == CA_OK && d->vmm.peers >> p; p++)
        if (d->vmm.peers >> p & 1)
            rc = be->vmm_peer_access ? be->vmm_peer_access(be->ctx, d->id, (void *)addr, size,
                                                           p, true)
                                     : CA_ERR_BACKEND;
    if (rc != CA_OK && done)
        be->vmm_unmap(be->ctx, d->id, (void *)addr, done);
    uint64_t ns = ca_note_growth(d, t0); /* a failed run too: the program waited for it */
    if (rc != CA_OK)
        return rc;
    note_map_price(d, ns, (size + piece - 1) / piece);
    for (size_t at = 0; at < size; at += piece)
        ca_range_mark(s, d->vmm.page, addr + at, true);
    return CA_OK;
}

/* The lowest hole that, with the free blocks on either side, holds rounded bytes, and how much
 * of it to map: growing at the lowest address keeps a range compact, so that its free pieces
 * merge again (PyTorch's rule). *map is 0 when the free block before a hole fits by itself.
 * NULL when the reservation has no such room. */
static ca_block *pick_hole(const ca_segment *s, size_t rounded, size_t page, size_t align,
                           bool solo, size_t *map)
{
    ca_block *best = NULL;
    for (ca_block *h = s->unmapped; h; h = h->lnext) {
        /* A solo mapping takes no free block beside it, and none takes a solo mapping's. */
        size_t before = !solo && h->prev && h->prev->state == BLOCK_FREE &&
                                !ca_range_solo(s, h->prev->addr)
                            ? h->prev->size
                            : 0;
        size_t after = !solo && h->next && h->next->state == BLOCK_FREE &&
                               !ca_range_solo(s, h->next->addr)
                           ? h->next->size
                           : 0;
        /* The block starts where the free room starts, moved up to an aligned address. */
        size_t need = rounded + ca_align_pad(before ? h->prev->addr : h->addr, rounded, align);
        size_t want = before >= need ? 0 : ca_align_up(need - before, page);
        if (want > h->size) {
            if (before + h->size + after < need)
                continue;
            want = h->size;
        }
        if (!best || h->addr < best->addr) {
            best = h;
            *map = want;
        }
    }
    return best;
}

/* The lowest fitting hole over every range of p for this block kind (pick_hole's rule), or
 * NULL. */
static ca_block *pick_in_ranges(const ca_arena *a, const ca_device *d, const ca_pool *p,
                                size_t rounded, bool small, bool solo, size_t *map)
{
    ca_block *best = NULL;
    for (int i = 0; i < d->nsegs; i++) {
        const ca_segment *s = d->segs[i];
        size_t m = 0;
        ca_block *h = s->expandable && s->pool == p && s->small == small
                          ? pick_hole(s, rounded, d->vmm.page, a->cfg.big_align, solo, &m)
                          : NULL;
        if (h && (!best || h->addr < best->addr)) {
            best = h;
            *map = m;
        }
    }
    return best;
}

/* Rung 4 of the ladder for a pool with expandable ranges. When no range has a hole that fits (live
 * blocks spread over them), another range is opened, as PyTorch does: a fixed segment instead
 * could never give its pages back. NULL with *full unset: no range here (no virtual memory
 * calls, or no addresses left), and the caller takes a fixed segment. */
ca_block *ca_expand_grow(ca_arena *a, ca_device *d, ca_pool *p, size_t rounded, bool small,
                         bool *full, bool *driver_failed)
{
    if (a->cfg.pool != CA_POOL_SPLIT || !vmm_ready(a, d))
        return NULL;
    if (!p->range[small] && !range_adopt(d, p, small) && !range_new(a, d, p, small))
        return NULL;
    size_t map = 0, fr = 0, total = 0;
    bool known = a->be.mem_info(a->be.ctx, d->id, &fr, &total) == CA_OK;
    /* A large request gets a mapping of its own, one handle: a few driver calls where pages
     * would cost one each, and it still goes back whole when its block is freed, since no other
     * block is ever carved from it (fits_rule in arena.c, ca_seam). */
    bool solo = !small && rounded >= solo_from(a, d, rounded, known ? fr : 0, known ? total : 0);
    ca_block *h = pick_in_ranges(a, d, p, rounded, small, solo, &map);
    if (!h) {
        /* A request no empty range could hold (larger than the device) opens none: each
         * attempt would leave another reservation behind. */
        if (rounded > d->vmm.range - a->cfg.big_align)
            return NULL;
        ca_segment *s = range_new(a, d, p, small);
        if (!s || !(h = pick_hole(s, rounded, d->vmm.page, a->cfg.big_align, solo, &map)))
            return NULL;
    }
    ca_segment *s = h->seg;
    if (map == 0)
        return h->prev; /* a range just taken over brought the room with it */
    /* As for a segment: never ask for more than the device has, so no error needs clearing. */
    if (!ca_within_limit(d, map) || (known && fr < map)) {
        *full = true;
        return NULL;
    }
    ca_block *rest = map < h->size ? ca_block_new(d) : NULL;
    if (map < h->size && !rest)
        return NULL;
    int rc = map_run(a, d, s, h->addr, map, solo ? map : piece_of(a, d));
    if (rc != CA_OK) {
        if (rest)
            ca_block_recycle(d, rest);
        *driver_failed = true;
        if (rc == CA_ERR_OOM)
            *full = true;
        else
            d->vmm.off = true; /* the calls exist but do not work here */
        return NULL;
    }
    ca_unmapped_unlink(s, h);
    if (rest) {
        ca_block_split(h, rest, map);
        ca_unmapped_link(s, rest);
    }
    if (solo)
        ca_range_mark_solo(s, h->addr, map, true);
    ca_reuse_stamp_fresh(&h->free_seq); /* never used */
    h->state = BLOCK_ALLOC;
    d->st.reserved_bytes += map;
    ca_note_peaks(&d->st);
    if (a->cfg.trace)
        a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_SEG_ALLOC, d->id, (void *)h->addr, map,
                     p->stream);
    return ca_block_free(d, h);
}

int ca_expand_peer_access(ca_arena *a, ca_device *d, int peer, bool on)
{
    int rc = CA_OK;
    for (int i = 0; i < d->nsegs; i++) {
        ca_segment *s = d->segs[i];
        if (!s->expandable)
            continue;
        /* One call per run of mapped blocks; pages being unmapped are skipped. */
        for (ca_block *b = s->first; b;) {
            if (b->state == BLOCK_UNMAPPED || b->state == BLOCK_UNMAPPING) {
                b = b->next;
                continue;
            }
            uintptr_t start = b->addr;
            while (b && b->state != BLOCK_UNMAPPED && b->state != BLOCK_UNMAPPING)
                b = b->next;
            uintptr_t end = b ? b->addr : s->base + s->size;
            int r = a->be.vmm_peer_access
                        ? a->be.vmm_peer_access(a->be.ctx, d->id, (void *)start, end - start,
                                                peer, on)
                        : CA_ERR_BACKEND;
            if (r != CA_OK)
                rc = r;
        }
    }
    return rc;
}

void ca_expand_teardown(ca_arena *a, ca_device *d)
{
    for (int i = 0; i < d->nsegs; i++) {
        ca_segment *s = d->segs[i];
        if (!s->expandable)
            continue;
        /* One unmap per run of mapped pages: whatever the blocks are, the memory goes. */
        for (ca_block *b = s->first; b;) {
            if (b->state == BLOCK_UNMAPPED) {
                b = b->next;
                continue;
            }
            uintptr_t start = b->addr;
            while (b && b->state != BLOCK_UNMAPPED)
                b = b->next;
            uintptr_t end = b ? b->addr : s->base + s->size;
            a->be.vmm_unmap(a->be.ctx, d->id, (void *)start, end - start);
        }
        a->be.vmm_free(a->be.ctx, d->id, (void *)s->base, s->size);
    }
}
