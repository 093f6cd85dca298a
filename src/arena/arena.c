/* The arena's public face: devices, pools, the allocation ladder and the free path.
 * docs/arena.md explains the algorithm; src/reuse/ holds the reuse contract (what a freed
 * block waits for before it is handed out again, asked through reuse/reuse.h), and
 * block/segment.c the segments and their blocks. */
#include <execinfo.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena/ladder.h"
#include "base/ca_assert.h"
#include "base/ca_compiler.h"
#include "base/grow.h"
#include "base/clock.h"
#include "tcache/tcache.h"
#include "stats/neighbours.h"

static __thread int free_hint; /* device of this thread's last free: tried first */
static uint64_t next_serial = 1;

static void return_kept_list(ca_arena *a, const ca_tc_entry *kept, int n);

ca_arena *ca_arena_create(const ca_backend *backend, const ca_config *config)
{
    ca_arena *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->be = *backend;
    a->cfg = *config;
    if (a->cfg.max_split == 0)
        a->cfg.max_split = UINT64_MAX;
    /* The options refuse lower values; a direct caller gets the floor that keeps the 20 MiB
     * mid-size segments splittable. */
    if (a->cfg.max_split <= CA_MID_SEGMENT)
        a->cfg.max_split = CA_MID_SEGMENT + 1;
    a->hooks = a->cfg.trace || a->cfg.record_alloc_times || a->cfg.record_stacks;
    /* The hooks see every call; the binned and uncached pools have their own rules. */
    a->tc_on = a->cfg.thread_cache && !a->hooks && a->cfg.pool == CA_POOL_SPLIT;
    a->head.serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
    a->return_kept_list = return_kept_list;
    pthread_mutex_init(&a->devices_lock, NULL);
    return a;
}

static ca_device *device_new(int id)
{
    ca_device *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->id = id;
    d->plain.plain = true;
    d->plain.stream = CA_STREAM_LEGACY;
    ca_price_init(&d->reuse.price);
    return d;
}

/* The device slot, created on first use. NULL when dev is out of range or memory ran out. */
ca_device *ca_device_get(ca_arena *a, int dev)
{
    if (dev < 0 || dev >= CA_MAX_DEVICES)
        return NULL;
    ca_device *d = __atomic_load_n(&a->dev[dev], __ATOMIC_ACQUIRE);
    if (d)
        return d;
    pthread_mutex_lock(&a->devices_lock);
    d = a->dev[dev];
    if (!d && (d = device_new(dev)) != NULL) {
        __atomic_store_n(&a->dev[dev], d, __ATOMIC_RELEASE);
        if (dev + 1 > a->ndev)
            __atomic_store_n(&a->ndev, dev + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&a->devices_lock);
    return d;
}

/* First use of a device: limits that depend on its size, and the preallocation. A failed
 * preallocation sets *driver_failed: the runtime recorded an error the caller must clear. */
static void device_ready(ca_arena *a, ca_device *d, bool *driver_failed)
{
    d->ready = true;
    d->limit = a->cfg.limit_bytes;
    d->release_threshold = a->cfg.release_threshold;
    if (a->cfg.limit_percent || a->cfg.release_percent) {
        size_t fr = 0, total = 0;
        if (a->be.mem_info(a->be.ctx, d->id, &fr, &total) == CA_OK) {
            if (a->cfg.limit_percent)
                d->limit = ca_share_of(total, a->cfg.limit_percent);
            if (a->cfg.release_percent)
                d->release_threshold = ca_share_of(total, a->cfg.release_percent);
        }
    }
    if (a->cfg.prealloc_bytes && a->cfg.pool == CA_POOL_SPLIT) {
        size_t size = ca_segment_size(&a->cfg, ca_round_request(&a->cfg, a->cfg.prealloc_bytes));
        ca_block *b;
        if (!d->limit || size <= d->limit)
            (void)ca_segment_new(a, d, &d->plain, size, false, true, 0, &b, driver_failed, NULL);
    }
}

static ca_pool *pool_of(ca_device *d, ca_stream_t s)
{
    if (d->last_pool && d->last_pool->stream == s)
        return d->last_pool;
    for (int i = 0; i < d->npools; i++)
        if (d->pools[i]->stream == s && !d->pools[i]->dead)
            return d->last_pool = d->pools[i];
    return NULL;
}

static ca_pool *pool_new(ca_device *d, ca_stream_t s)
{
    ca_pool **n = ca_grow(d->pools, d->npools, &d->cap_pools, sizeof *n, 8);
    if (!n)
        return NULL;
    d->pools = n;
    ca_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->stream = s;
    ca_reuse_pool_new(d, p);
    d->pools[d->npools++] = p;
    return d->last_pool = p;
}

/* Accept rule of the free-block search: an unsplittable block serves only a request of its
 * own league and wastes at most CA_OVERSIZE_SLACK (PyTorch's rule for max_split_size). A free
 * solo mapping of an expandable range serves a request of CA_SOLO_LEAST or more from its
 * start that leaves at most a sixteenth of it free (and at least the rest of its last page; a
 * mapping under CA_SOLO_MIN nothing past that page), so that it holds one block and goes back
 * whole when that block is freed (docs/arena.md, "Pieces"). */
static int fits_rule(const ca_block *b, size_t size, uint64_t max_split)
{
    const ca_segment *s = b->seg;
    if (s->expandable) {
        if (!ca_range_solo(s, b->addr))
            return 1; /* its free pages can be unmapped one by one */
        /* Below CA_SOLO_MIN (growth priced, block/expand.c) only the same pages: a block then
         * touches every page its mapping holds, as with pages a handle. */
        size_t slack = b->size < CA_SOLO_MIN ? 0 : size / 16 > s->page ? size / 16 : s->page;
        return size >= CA_SOLO_LEAST && ca_range_boundary(s, s->page, b->addr) &&
               b->size <= ca_align_up(size, s->page) + slack;
    }
    if (max_split == UINT64_MAX)
        return 1;
    if (size < max_split)
        return b->size < max_split;
    return b->size <= size + CA_OVERSIZE_SLACK;
}

/* Best fit among p's free blocks, scanning at most limit of a class; a block of 64 KiB or
 * more must also have room to start aligned, else one with room for any start is looked for. */
static ca_block *find_aligned(ca_arena *a, ca_pool *p, size_t rounded, bool small, size_t limit)
{
    ca_bins *bins = ca_pool_bins(p, small);
    bool binned = a->cfg.pool == CA_POOL_BINNED;
    /* Expandable ranges may hold solo mappings, which the rule keeps whole. */
    int (*rule)(const ca_block *, size_t, uint64_t) =
        a->cfg.max_split == UINT64_MAX && (small || !p->range[0]) ? NULL : fits_rule;
    ca_block *b = ca_bins_find(bins, rounded, binned, rule, a->cfg.max_split, limit);
    size_t align = a->cfg.big_align;
    if (b && !ca_fits_aligned(b, rounded, align))
        b = ca_bins_find(bins, ca_aligned_need(rounded, align), binned, rule, a->cfg.max_split,
                         limit);
    return b;
}

static ca_block *pool_find(ca_arena *a, ca_pool *p, size_t rounded, bool small)
{
    return find_aligned(a, p, rounded, small, CA_BIN_SCAN_LIMIT);
}

/* Rung 3 of the ladder: an empty segment of another pool, safe for this stream, moved over. */
static ca_block *steal_segment(ca_arena *a, ca_device *d, ca_pool *p, size_t rounded, bool small)
{
    ca_segment *best = NULL;
    for (ca_segment *s = d->empty_segs; s; s = s->enext) {
        if (s->pool == p || s->small != small || s->size < rounded)
            continue;
        if (a->cfg.pool == CA_POOL_BINNED && s->size != rounded)
            continue;
        if (!fits_rule(s->first, rounded, a->cfg.max_split) ||
            !ca_fits_aligned(s->first, rounded, a->cfg.big_align))
            continue;
        if ((best && s->size >= best->size) || !ca_reuse_segment_safe(a, d, s))
            continue;
        best = s;
    }
    if (!best)
        return NULL;
    ca_segment_move(best, p);
    return best->first;
}

static void warn_oom(ca_arena *a, ca_device *d, size_t size)
{
    if (a->cfg.quiet)
        return;
    size_t largest = ca_device_largest_free(d);
    char limit[32] = "none";
    if (d->limit)
        snprintf(limit, sizeof limit, "%" PRIu64, d->limit);
    fprintf(stderr,
            "cachealloc: out of memory on device %d: requested %zu, allocated %" PRIu64
            ", reserved %" PRIu64 ", cached %" PRIu64 ", pending %" PRIu64
            ", limit %s, largest free block %zu (bytes)\n",
            d->id, size, d->st.allocated_bytes, d->st.reserved_bytes, d->st.cached_bytes,
            d->st.pending_bytes, limit, largest);
}

/* A new segment of size bytes whose first block serves rounded. A runtime may answer bases
 * aligned to less than a block needs (chipStar's and ROCm's to 128 bytes): blocks then begin at
 * the next boundary, and an allocation left too short that way goes back, to be asked again
 * with room (ca_segment_new asks every later one so). */
static ca_status segment_for(ca_arena *a, ca_device *d, ca_pool *p, size_t size, bool small,
                             size_t rounded, ca_block **out, bool *driver_failed)
{
    void *unfit = NULL;
    ca_status rc = ca_segment_new(a, d, p, size, small, false, rounded, out, driver_failed, &unfit);
    if (!unfit)
        return rc;
    d->st.driver_free_calls++;
    ca_window_begin(d);
    a->be.release(a->be.ctx, d->id, unfit);
    ca_window_end(d);
    if (ca_quiet(a)) /* a capture began meanwhile: no more driver calls */
        return CA_ERR_BACKEND;
    unfit = NULL;
    rc = ca_segment_new(a, d, p, size, small, false, rounded, out, driver_failed, &unfit);
    ca_assert(unfit == NULL); /* asked with room for any base */
    return rc;
}

/* Rung 4 of the ladder: a new segment, unless the limit forbids it. *full says the device (or the
 * limit) had no room; *driver_failed that the runtime recorded an error to clear. */
static ca_block *grow(ca_arena *a, ca_device *d, ca_pool *p, size_t rounded, bool small,
                      bool *full, bool *driver_failed)
{
    if (ca_quiet(a))
        return NULL;
    if (a->cfg.expandable > 0) {
        bool no_room = false;
        ca_block *b = ca_expand_grow(a, d, p, rounded, small, &no_room, driver_failed);
        if (b || no_room) {
            *full |= no_room;
            return b;
        }
    }
    size_t seg_size = ca_segment_size(&a->cfg, rounded);
    /* The limit or the device may leave room for the request but not for its usual segment. */
    if (!ca_within_limit(d, seg_size) && ca_within_limit(d, rounded))
        seg_size = rounded;
    if (!ca_within_limit(d, seg_size)) {
        *full = true;
        return NULL;
    }
    /* Asking the driver for more than it has would leave an error in the runtime that a later
     * success has to clear, and that could hide an earlier error the program has not read. */
    size_t fr = 0, total = 0;
    if (a->be.mem_info(a->be.ctx, d->id, &fr, &total) == CA_OK && fr < seg_size) {
        if (fr < rounded) {
            *full = true;
            return NULL;
        }
        seg_size = rounded;
    }
    ca_block *b = NULL;
    ca_status rc = segment_for(a, d, p, seg_size, small, rounded, &b, driver_failed);
    if (rc != CA_OK && *driver_failed && seg_size > rounded)
        rc = segment_for(a, d, p, rounded, small, rounded, &b, driver_failed);
    if (rc != CA_OK && *driver_failed)
        *full = true;
    return rc == CA_OK ? b : NULL;
}

/* Searches after the first, on the slow path, look at every block of a class: a fitting block
 * must never hide behind rung 1's bounded scan. */
static ca_block *search_again(ca_arena *a, ca_device *d, ca_pool *p, size_t rounded, bool small)
{
    ca_device_consolidate(d); /* frees pushed while the lock was dropped */
    ca_block *b = find_aligned(a, p, rounded, small, SIZE_MAX);
    return b ? b : steal_segment(a, d, p, rounded, small);
}

static void return_kept_locked(ca_arena *a, ca_device *d, const ca_tc_entry *e);

/* Every block the threads keep on d back into the pools, under d's lock. */
static void return_all_kept_locked(ca_arena *a, ca_device *d)
{
    ca_tc_entry *list;
    int n = ca_tc_return_all(a, d->id, &list);
    for (int i = 0; i < n; i++)
        return_kept_locked(a, d, &list[i]);
    free(list);
}

/* One allocation's request and its way down the out-of-memory ladder (docs/arena.md, "The
 * out-of-memory ladder", numbers its rungs): each rung below returns a block or NULL, and the
 * pool is searched again after every one. */
typedef struct ladder {
    ca_arena *a;
    ca_device *d;
    size_t size;        /* what the program asked for */
    ca_stream_t s;
    unsigned api;
    ca_pool *p;
    size_t rounded;
    bool small;
    bool hit;           /* served by the cache, not by new memory */
    bool full;          /* the device, or the limit, had no room at some rung */
    bool driver_failed; /* the runtime recorded an error to clear */
} ladder;

static ca_block *found(ladder *l, ca_block *b)
{
    l->hit |= b != NULL;
    return b;
}

/* The whole search of the pool, then an empty, safe segment of another pool (rung 3). */
static ca_block *search(ladder *l)
{
    return found(l, search_again(l->a, l->d, l->p, l->rounded, l->small));
}

static ca_block *grow_now(ladder *l)
{
    return grow(l->a, l->d, l->p, l->rounded, l->small, &l->full, &l->driver_failed);
}

/* Rung 1: a free block of the pool, within the bounded scan of a size class. */
static ca_block *rung_pool(ladder *l)
{
    return found(l, pool_find(l->a, l->p, l->rounded, l->small));
}

/* Rungs 2 and 3: completed fences and pool events free their blocks, then the search. */
static ca_block *rung_poll(ladder *l)
{
    ca_reuse_poll(l->a, l->d);
    return search(l);
}

/* Rung 4: over the budget of pending memory, wait for fences instead of growing; then a new
 * segment or pages, as the limit and the device allow. */
static ca_block *rung_grow(ladder *l)
{
    ca_block *b;
    for (int round = 0; ca_reuse_wait(l->a, l->d, l->rounded, round); round++)
        if ((b = search(l)) != NULL)
            return b;
    return grow_now(l);
}

/* Rung 5: blocks the threads keep for themselves are the device's memory too, back to the
 * pools (fenced like any plain free); then a wait for every pending fence and event. */
static ca_block *rung_wait(ladder *l)
{
    if (l->a->tc_on)
        return_all_kept_locked(l->a, l->d);
    if (!ca_reuse_wait_all(l->a, l->d))
        return NULL;
    return search(l);
}

/* Rung 6: every empty, safe segment of the device back to the driver; then the search
 * (others may have freed or released meanwhile, even when this gave nothing back) and rung 4's
 * growth. */
static ca_block *rung_release(ladder *l)
{
    int n;
    ca_segment **list = ca_collect_empty(l->a, l->d, true, UINT64_MAX, &n);
    if (n > 0) {
        ca_window_begin(l->d);
        ca_release_list(l->a, l->d, list, n);
        ca_window_end(l->d);
        l->d->st.driver_free_calls += (uint64_t)n;
    } else {
        free(list);
    }
    ca_block *b = search(l);
    return b ? b : grow_now(l);
}

/* Rung 7: every free page of the device's expandable segments unmapped, wherever it lies;
 * then the search and growth once more. Nothing to unmap: the ladder ends here. */
static ca_block *rung_unmap(ladder *l)
{
    if (ca_unmap_free_pages(l->a, l->d, UINT64_MAX, true) == 0)
        return NULL;
    ca_block *b = search(l);
    return b ? b : grow_now(l);
}

/* Rungs 1 to 7, in order; the first block found ends the climb. Rung 8 (the neighbours,
 * rung_neighbours) drops the device lock and climbs them again; rung 9 is refuse's report. */
static ca_block *find_or_grow(ladder *l)
{
    ca_block *b;
    if ((b = rung_pool(l)) || (b = rung_poll(l)) || (b = rung_grow(l)) || (b = rung_wait(l)) ||
        (b = rung_release(l)) || (b = rung_unmap(l)))
        return b;
    return NULL;
}

static void note_origin(ca_arena *a, ca_block *b, void **frames, int depth)
{
    if (a->cfg.record_alloc_times) {
        b->t_alloc_ns = ca_now_ns();
    }
    if (depth > 0) {
        if (!b->stack)
            b->stack = malloc(CA_MAX_STACK * sizeof(void *));
        if (b->stack) {
            memcpy(b->stack, frames, (size_t)depth * sizeof(void *));
            b->depth = depth;
        }
    }
}

/* CACHEALLOC_POOL=none: every call goes to the driver; one segment per allocation. */
static ca_status malloc_uncached(ca_arena *a, ca_device *d, size_t rounded, ca_block **out)
{
    bool small = ca_is_small(rounded);
    if (ca_quiet(a))
        return CA_ERR_BACKEND;
    if (!ca_within_limit(d, rounded))
        return CA_ERR_OOM;
    ca_block *b = NULL;
    bool driver_failed = false; /* nothing to clear: the program sees the driver's own answer */
    ca_status rc = segment_for(a, d, &d->plain, rounded, small, rounded, &b, &driver_failed);
    if (rc != CA_OK)
        return rc;
    *out = ca_block_take(a, d, b, rounded);
    return CA_OK;
}

/* The pool l's request draws from: the plain pool, or its stream's (made on first use). NULL
 * when the device's switch to fences waits for a capture to end. */
static ca_pool *choose_pool(ladder *l)
{
    ca_device *d = l->d;
    ca_pool *p = &d->plain;
    if (l->api != CA_API_ASYNC || (p = pool_of(d, l->s)) != NULL)
        return p;
    ca_reuse_stream_used(l->a, d, l->s);
    if (ca_reuse_switch_owed(&d->reuse)) /* quiet: the switch waits for the capture */
        return NULL;
    return (p = pool_of(d, l->s)) != NULL ? p : pool_new(d, l->s);
}

/* Rungs 1 to 7 in l's pool, the exact-size list first: a block, taken, or NULL. */
static ca_block *serve(ladder *l)
{
    ca_device *d = l->d;
    if (ca_reuse_pending(&d->reuse)) /* frees since the last allocation: fence them */
        ca_reuse_fence(l->a, d);
    ca_block *b = ca_exact_pop(d, l->p, l->rounded, ca_bin_of(l->rounded));
    if (b) {
        l->hit = true;
        return b;
    }
    ca_pool_consolidate(d, l->p);
    l->small = ca_is_small(l->rounded);
    b = find_or_grow(l);
    return b ? ca_block_take(l->a, d, b, l->rounded) : NULL;
}

/* The block for l's request, allocated and in the live map; NULL with *rc saying why. */
static ca_block *allocate(ladder *l, ca_status *rc)
{
    ca_device *d = l->d;
    ca_block *b = NULL;
    if (l->rounded == 0)
        *rc = CA_ERR_OOM;
    else if (l->a->cfg.pool == CA_POOL_NONE)
        *rc = malloc_uncached(l->a, d, l->rounded, &b);
    else if (!(l->p = choose_pool(l)) || !(b = serve(l)))
        *rc = CA_ERR_OOM;
    if (b && ca_map_put(&d->live, b->addr, b) != 0) {
        /* No room to remember it: hand it back rather than lose it. */
        d->st.allocated_bytes -= b->size;
        ca_block_free(d, b);
        b = NULL;
        *rc = CA_ERR_OOM;
    }
    return b;
}

/* Under l's device lock, before the ladder and again after rung 8 dropped it: a switch to
 * fences finished, and a capture under way lets the device serve. false: it cannot. */
static bool ladder_enter(ladder *l)
{
    ca_device *d = l->d;
    if (ca_reuse_switching(&d->reuse))
        ca_window_wait_switch(d);
    return !(ca_reuse_hushed(&d->reuse, ca_quiet(l->a)) && ca_quiet_refuses(l->a, d));
}

/* Rung 8, outside the device lock: the device refused within the limit, so other processes
 * may hold what it lacks. They give back what they hold free, within the wait, and rungs 1 to 7
 * run once more. NULL with *rc as allocate's, the lock held again either way. */
static CA_COLD ca_block *rung_neighbours(ladder *l, ca_status *rc)
{
    ca_arena *a = l->a;
    ca_device *d = l->d;
    ca_lock_release(&d->lock);
    if (l->driver_failed && a->be.clear_error)
        a->be.clear_error(a->be.ctx);
    l->driver_failed = false; /* cleared: a later refusal records its own */
    uint64_t t0 = ca_now_ns();
    uint64_t given = ca_neighbours_ask(a->cfg.neighbours_api, a->cfg.neighbours_wait_ms);
    if (a->cfg.verbose)
        fprintf(stderr,
                "cachealloc: device %d refused %zu bytes; other processes gave back %" PRIu64
                " bytes in %.1f ms\n",
                d->id, l->size, given, (double)(ca_now_ns() - t0) / 1e6);
    ca_lock_acquire(&d->lock);
    if (!ladder_enter(l)) { /* a capture began meanwhile: refuse answers for it */
        *rc = CA_ERR_BACKEND;
        return NULL;
    }
    return allocate(l, rc);
}

/* Whether rung 8 may help l's request, which rungs 1 to 7 could not serve: the device said no
 * within the limit, not a capture's silence. */
static bool neighbours_may_help(const ladder *l)
{
    return !ca_quiet(l->a) && l->a->cfg.neighbours_api && (l->full || l->driver_failed) &&
           ca_within_limit(l->d, l->rounded);
}

/* No block for l's request (rc): gives the lock back, and counts and reports the failure
 * (rung 9), unless a capture kept the device from being asked. */
static ca_status refuse(ladder *l, ca_status rc)
{
    ca_arena *a = l->a;
    ca_device *d = l->d;
    if (ca_quiet(a)) { /* not an out-of-memory: the device was not asked */
        ca_lock_release(&d->lock);
        return CA_ERR_BACKEND;
    }
    d->st.oom_failures++;
    warn_oom(a, d, l->size);
    ca_lock_release(&d->lock);
    if (l->driver_failed && a->be.clear_error)
        a->be.clear_error(a->be.ctx);
    return rc;
}

/* The books of block b, served to l's request: counters, hooks, a new generation (returned).
 * Under the lock, which the caller gives back. */
static uint32_t served(ladder *l, ca_block *b, void **frames, int depth)
{
    ca_arena *a = l->a;
    ca_device *d = l->d;
    b->requested = l->size;
    d->st.requested_bytes += l->size;
    ca_reuse_served(&a->cfg, d);
    if (l->hit)
        d->st.cache_hits++;
    if (l->full || l->driver_failed)
        d->st.oom_recoveries++; /* the device said no at some step; a later one won */
    if (a->hooks) {
        if (a->cfg.record_alloc_times || depth > 0)
            note_origin(a, b, frames, depth);
        if (a->cfg.trace)
            a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_ALLOC, d->id, (void *)b->addr, l->size, l->s);
    }
    uint32_t gen = b->head.gen + 1;
    __atomic_store_n(&b->head.gen, gen, __ATOMIC_RELAXED);
    if ((d->st.alloc_calls & (CA_CHECK_EVERY - 1)) == 0)
        ca_device_check(d);
    return gen;
}

/* ca_malloc past the thread's cache: the pools, under the device lock (spill: the blocks the
 * thread kept on dev, back to them first). Out of line, so that a hit in the thread's cache
 * saves no registers and sets up no stack. */
static CA_NOINLINE ca_status malloc_slow(ca_arena *a, int dev, size_t size, ca_stream_t s,
                                         unsigned api, void **out, const ca_tc_entry *spill,
                                         int nspill)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d && !(d = ca_device_get(a, dev)))
        return CA_ERR_INVALID;
    ladder l = {.a = a, .d = d, .size = size, .s = s, .api = api,
                .rounded = ca_round_request(&a->cfg, size)};
    void *frames[CA_MAX_STACK];
    int depth = a->hooks && a->cfg.record_stacks ? backtrace(frames, CA_MAX_STACK) : 0;

    ca_lock_acquire(&d->lock);
    for (int i = 0; i < nspill; i++)
        return_kept_locked(a, d, &spill[i]);
    if (!ladder_enter(&l)) {
        ca_lock_release(&d->lock);
        return CA_ERR_BACKEND;
    }
    if (!d->ready)
        device_ready(a, d, &l.driver_failed);
    d->st.alloc_calls++;
    ca_status rc = CA_OK;
    ca_block *b = allocate(&l, &rc);
    if (!b && neighbours_may_help(&l))
        b = rung_neighbours(&l, &rc);
    if (!b)
        return refuse(&l, rc);
    uint32_t gen = served(&l, b, frames, depth);
    *out = (void *)b->addr; /* b is the device's again once the lock is given back */
    ca_lock_release(&d->lock);
    if (a->tc_on)
        ca_tc_issue(a, dev, b, gen, size, s, api);
    if (l.driver_failed && a->be.clear_error)
        a->be.clear_error(a->be.ctx);
    return CA_OK;
}

/* ca_malloc's path, the inline hit tried (newest_tried) or not. */
static ca_status malloc_from(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api,
                             void **out, bool newest_tried)
{
    ca_tc_entry spill[CA_TC_KEPT];
    int nspill = 0;
    if (a->tc_on && (nspill = ca_tc_take(a, dev, size, s, api, newest_tried, out, spill)) < 0)
        return CA_OK;
    return malloc_slow(a, dev, size, s, api, out, spill, nspill);
}

ca_status ca_malloc(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api, void **out)
{
    if (!out)
        return CA_ERR_INVALID;
    *out = NULL;
    if (size == 0)
        return CA_OK;
    return malloc_from(a, dev, size, s, api, out, false);
}

ca_status ca_malloc_missed(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api,
                           void **out)
{
    *out = NULL;
    return malloc_from(a, dev, size, s, api, out, true);
}

/* ptr's live block on d, taken out of the map with d's lock still held; or NULL, lock released,
 * with *inside telling whether ptr falls in one of d's segments (an interior pointer or a
 * double free, counted there). */
CA_INLINE ca_block *take_live(ca_device *d, void *ptr, bool *inside)
{
    ca_lock_acquire(&d->lock);
    ca_block *b = ca_map_take(&d->live, (uintptr_t)ptr);
    if (b)
        return b;
    if (ca_segment_find(d, (uintptr_t)ptr)) {
        d->st.invalid_frees++;
        *inside = true;
    }
    ca_lock_release(&d->lock);
    return NULL;
}

/* Take ptr's block out of whichever device holds it; the device comes back locked. Most frees
 * come back to the device of the thread's last free, which is tried first. */
static ca_status find_block(ca_arena *a, void *ptr, ca_device **dout, ca_block **bout)
{
    bool inside = false;
    ca_device *h = ca_device_peek(a, free_hint);
    if (h && (*bout = take_live(h, ptr, &inside)) != NULL) {
        *dout = h;
        return CA_OK;
    }
    int n = __atomic_load_n(&a->ndev, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && !inside; i++) {
        ca_device *d = ca_device_peek(a, i);
        if (d && d != h && (*bout = take_live(d, ptr, &inside)) != NULL) {
            free_hint = i;
            *dout = d;
            return CA_OK;
        }
    }
    return inside ? CA_ERR_INVALID : CA_ERR_NOT_OURS;
}

/* CACHEALLOC_POOL=none: b's segment goes back to the driver at once (a window). */
static void free_uncached(ca_arena *a, ca_device *d, ca_block *b)
{
    ca_segment *seg = b->seg;
    b->state = BLOCK_FREE;
    d->st.cached_bytes += b->size;
    ca_bins_insert(ca_pool_bins(seg->pool, seg->small), b);
    ca_segment_detach(a, d, seg);
    d->st.driver_free_calls++;
    ca_window_begin(d);
    ca_segment_release(a, d->id, seg);
    ca_window_end(d);
}

/* Free b, taken out of d's live map, under d's lock (kept there). counted: the program's own
 * free, not a thread cache giving back a block whose free it counted already. idle: the device
 * was synchronized within this free (ca_free_synced), so nothing queued before it can still use
 * the block: reusable at once by every stream. */
static void free_locked(ca_arena *a, ca_device *d, ca_block *b, ca_stream_t s, unsigned api,
                        bool counted, bool idle)
{
    void *ptr = (void *)b->addr;
    __atomic_store_n(&b->head.gen, b->head.gen + 1, __ATOMIC_RELAXED);
    if (counted)
        d->st.free_calls++;
    d->st.allocated_bytes -= b->size;
    d->st.requested_bytes -= b->requested;
    if (a->hooks && a->cfg.trace)
        a->cfg.trace(a->cfg.trace_ctx, CA_TRACE_FREE, d->id, ptr, b->requested, s);
    if (a->cfg.pool == CA_POOL_NONE && !ca_quiet(a)) {
        free_uncached(a, d, b);
        return;
    }
    /* The contract decides: it waits for a fence, or its pool may reuse it at once. */
    if (!ca_reuse_pend(a, d, b, s, api, idle) && !ca_exact_push(d, b->seg->pool, b))
        ca_block_free(d, b);
}

/* A block a thread cache kept goes back through the pools, under d's lock. */
static void return_kept_locked(ca_arena *a, ca_device *d, const ca_tc_entry *e)
{
    ca_block *b = ca_map_take(&d->live, e->addr);
    if (!b)
        return; /* the device was reset meanwhile */
    __atomic_store_n(&b->head.kept, 0, __ATOMIC_RELAXED);
    free_locked(a, d, b, e->key, e->api, false, false);
}

static void return_kept_list(ca_arena *a, const ca_tc_entry *kept, int n)
{
    for (int i = 0; i < n; i++) {
        ca_device *d = ca_device_peek(a, kept[i].dev);
        if (!d)
            continue;
        ca_lock_acquire(&d->lock);
        return_kept_locked(a, d, &kept[i]);
        ca_lock_release(&d->lock);
    }
}

void ca_return_kept(ca_arena *a, int dev)
{
    if (!a->tc_on)
        return;
    ca_tc_entry *list;
    int n = ca_tc_return_all(a, dev, &list);
    return_kept_list(a, list, n);
    free(list);
}

/* The block the thread's cache just pushed out goes back through the pools. */
static CA_NOINLINE void return_evicted(ca_arena *a)
{
    ca_tc_entry e;
    ca_tc_return_evicted(a, &e);
    return_kept_list(a, &e, 1);
}

static ca_status free_slow(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out);

ca_status ca_free(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out)
{
    if (!ptr)
        return CA_ERR_NOT_OURS;
    if (a->tc_on) {
        int kept = ca_tc_keep(a, ptr, s, api, dev_out);
        if (kept == CA_TC_KEPT_EVICTING)
            return_evicted(a);
        if (kept != CA_TC_NOT_KEPT)
            return CA_OK;
    }
    return free_slow(a, ptr, s, api, dev_out);
}

/* A free through the pools, under the device lock; idle as free_locked's. */
CA_INLINE ca_status free_pooled(ca_arena *a, void *ptr, ca_stream_t s, unsigned api,
                                int *dev_out, bool idle)
{
    ca_device *d;
    ca_block *b;
    ca_status rc = find_block(a, ptr, &d, &b);
    if (rc != CA_OK)
        return rc;
    if (dev_out)
        *dev_out = d->id;
    if (__atomic_load_n(&b->head.kept, __ATOMIC_RELAXED)) {
        /* Freed already, and kept by a thread: a double free, refused like any other. */
        (void)ca_map_put(&d->live, b->addr, b); /* its slot was just freed: cannot fail */
        d->st.invalid_frees++;
        ca_lock_release(&d->lock);
        return CA_ERR_INVALID;
    }
    free_locked(a, d, b, s, api, true, idle);
    ca_lock_release(&d->lock);
    return CA_OK;
}

/* ca_free past the thread's cache. */
static CA_NOINLINE ca_status free_slow(ca_arena *a, void *ptr, ca_stream_t s, unsigned api,
                                       int *dev_out)
{
    return free_pooled(a, ptr, s, api, dev_out, false);
}

ca_status ca_free_synced(ca_arena *a, void *ptr, int *dev_out)
{
    int dev;
    size_t size;
    ca_device *d;
    /* No live block here (never the arena's, freed already, inside one), or nothing cached
     * (the runtime's free, which synchronizes itself): ca_free answers. */
    if (!ptr || a->cfg.pool == CA_POOL_NONE || !ca_lookup(a, ptr, &dev, &size) ||
        (d = ca_device_peek(a, dev)) == NULL)
        return ca_free(a, ptr, CA_STREAM_LEGACY, CA_API_PLAIN, dev_out);
    /* The runtime's order: the device first, then the free. A free of the same block by
     * another thread meanwhile is the program's double free, answered as one below. */
    ca_lock_acquire(&d->lock);
    bool idle = ca_reuse_wait_device(a, d);
    ca_lock_release(&d->lock);
    return free_pooled(a, ptr, CA_STREAM_LEGACY, CA_API_PLAIN, dev_out, idle);
}

typedef struct lookup {
    uintptr_t addr;
    size_t requested; /* of the block found */
} lookup;

static bool live_in(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a;
    lookup *q = ctx;
    ca_block *b = ca_map_get(&d->live, q->addr);
    if (!b || __atomic_load_n(&b->head.kept, __ATOMIC_RELAXED)) /* kept: freed, held by a thread */
        return false;
    q->requested = b->requested;
    return true;
}

int ca_lookup(ca_arena *a, const void *ptr, int *dev, size_t *size)
{
    int tdev;
    size_t treq;
    if (a->tc_on && ca_tc_issued(a, ptr, &tdev, &treq)) { /* the thread's own: no lock */
        if (dev)
            *dev = tdev;
        if (size)
            *size = treq;
        return 1;
    }
    lookup q = {(uintptr_t)ptr, 0};
    int found = ca_for_each_device_locked(a, live_in, &q);
    if (found < 0)
        return 0;
    if (dev)
        *dev = found;
    if (size)
        *size = q.requested;
    return 1;
}

void ca_stream_created(ca_arena *a, int dev, ca_stream_t s, int nonblocking)
{
    ca_device *d = ca_device_get(a, dev);
    if (!d)
        return;
    ca_lock_acquire(&d->lock);
    ca_reuse_stream_created(a, d, s, nonblocking != 0);
    ca_lock_release(&d->lock);
}

void ca_per_thread_streams_used(ca_arena *a, int dev)
{
    ca_device *d = ca_device_get(a, dev);
    if (!d)
        return;
    ca_lock_acquire(&d->lock);
    ca_reuse_other_stream(a, d);
    ca_lock_release(&d->lock);
}

void ca_stream_seen(ca_arena *a, int dev, ca_stream_t s)
{
    ca_device *d = ca_device_get(a, dev);
    if (!d)
        return;
    ca_lock_acquire(&d->lock);
    ca_reuse_stream_seen(a, d, s);
    ca_lock_release(&d->lock);
}

void ca_stream_destroyed(ca_arena *a, int dev, ca_stream_t s)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return;
    ca_lock_acquire(&d->lock);
    /* A new stream may get s's handle: what threads keep for s is no longer theirs to reuse. */
    __atomic_fetch_add(&d->head.stream_epoch, 1, __ATOMIC_RELEASE);
    ca_pool *p = pool_of(d, s);
    ca_reuse_stream_destroyed(a, d, s);
    if (p) {
        /* Never searched again; a new stream may get the same handle. Its free blocks were
         * reusable only by s: the contract says what they wait for now. */
        p->dead = true;
        if (d->last_pool == p)
            d->last_pool = NULL;
        ca_pool_consolidate(d, p);
        ca_reuse_pool_retired(a, d, p);
    }
    ca_lock_release(&d->lock);
}
