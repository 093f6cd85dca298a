/* The arena's private structures (blocks, segments, pools, devices, the arena) and the functions
 * of src/block/, the mechanism below the reuse contract: segments and the blocks that tile
 * them, split and merged; expandable ranges grown page by page; the bins, the live map and the
 * lock with its unlocked windows. Nothing here waits for the device. The reuse contract's
 * verbs are in reuse/reuse.h, the ladder's and the device's administration in
 * arena/internal.h. */
#ifndef CACHEALLOC_BLOCK_H
#define CACHEALLOC_BLOCK_H

#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>

#include "base/types.h"
#include "block/backend.h"
#include "block/bins.h"
#include "block/heads.h"
#include "block/lock.h"
#include "block/map.h"
#include "block/reuse_state.h"

#define CA_ROUND 512u                     /* every block is a multiple of this    */
#define CA_SMALL_MAX (1u << 20)           /* up to here: the small pool          */
#define CA_SMALL_SEGMENT (2u << 20)       /* segment size of the small pool      */
#define CA_MID_MAX (10u << 20)            /* up to here: 20 MiB segments         */
#define CA_MID_SEGMENT (20u << 20)
#define CA_LARGE_ROUND (2u << 20)         /* larger: rounded to this             */
#define CA_LARGE_MIN_REMAINDER (1u << 20) /* large blocks split only above this  */
#define CA_OVERSIZE_SLACK (20u << 20)     /* an unsplittable block may waste this */
#define CA_SOLO_MIN (64u << 20)           /* from here a growth is one solo mapping */
#define CA_SOLO_LEAST (4u << 20)         /* ... and from here while handles are dear and
                                           * the device is far from full (block/expand.c) */
#define CA_MAX_STACK 16

/* EXACT: freed into its pool's exact-size LIFO without merging (see ca_exact_push). UNMAPPED:
 * pages of an expandable segment with no memory behind them; UNMAPPING: free pages carved out
 * to be unmapped while the lock is dropped (block/expand.c). */
typedef enum {
    BLOCK_FREE = 0, BLOCK_ALLOC = 1, BLOCK_PENDING = 2, BLOCK_EXACT = 3, BLOCK_UNMAPPED = 4,
    BLOCK_UNMAPPING = 5
} ca_block_state;

/* Blocks a pool keeps unmerged for exact-size reuse before frees merge again. */
#define CA_EXACT_MAX 64u

typedef struct ca_segment ca_segment;
typedef struct ca_pool ca_pool;

struct ca_block {
    ca_block_head head;       /* first: gen, out of ca_block_new's reset; kept */
    uintptr_t addr;
    size_t size;              /* rounded, what the block occupies            */
    size_t requested;         /* what the program asked for                  */
    ca_block *prev, *next;    /* address-order neighbours in the segment     */
    ca_block *lprev, *lnext;  /* bin list or pending list                    */
    ca_segment *seg;
    uint64_t free_seq;        /* device free sequence number of the last free */
    uint32_t state;
    uint32_t bin;
    uint64_t t_alloc_ns;
    void **stack;             /* CA_MAX_STACK entries when stacks are kept   */
    int depth;
};

struct ca_segment {
    uintptr_t base;           /* its first block: a multiple of CA_ROUND             */
    size_t size;              /* what its blocks tile                                */
    /* A fixed segment's driver allocation may begin before base and end after base + size:
     * a runtime may answer a base aligned to less than CA_ROUND (ca_segment_new). */
    size_t lead, tail;
    ca_pool *pool;            /* the pool whose streams may use it           */
    ca_block *first;          /* lowest block                                */
    bool small;
    bool prealloc;              /* the preallocation: kept by the threshold trim */
    ca_segment *eprev, *enext;/* list of empty segments of the device  */
    bool in_empty;            /* on the device's list of empty segments       */
    bool expandable;          /* a reserved range, mapped as it grows: never empty */
    ca_block *unmapped;          /* its UNMAPPED blocks, unordered (lnext/lprev)     */
    size_t page;              /* an expandable range's page; 0 for a fixed segment */
    /* An expandable range's solo mappings (block/expand.c): bit i set when page i lies in one.
     * Points into starts[], after the starts' own words. */
    uint64_t *solo;
    /* An expandable range's mappings: bit i set when page i begins one (one driver handle).
     * A mapping ends where the next begins or the mapped pages stop, and only whole mappings
     * can be unmapped. Empty for a fixed segment. */
    uint64_t starts[];
};

/* A pool: the blocks one stream (or the plain API) may reuse at once. */
struct ca_pool {
    ca_stream_t stream;
    bool plain;               /* the plain API pool of the device            */
    bool dead;                /* its stream was destroyed                    */
    ca_bins small, large;
    ca_block *exact[CA_BIN_COUNT]; /* exact-size reuse lists, by size class */
    uint32_t nexact;
    /* Cross-stream safety of async pools: frees with free_seq <= safe_seq completed on the
     * device. One event at a time is in flight; it covers frees up to ev_seq. */
    uint64_t last_free_seq;
    uint64_t safe_seq;
    ca_event_t ev;
    uint64_t ev_seq;
    bool ev_inflight;
    int nsegs;                /* segments it owns: a dead pool with none is dropped */
    ca_segment *range[2];     /* its newest expandable segment, [1] for small blocks */
};

/* A device's expandable segments (block/expand.c, arena/unmap.c): reserved ranges whose pages
 * are mapped as they grow. */
typedef struct ca_vmm {
    size_t page;              /* the driver's page size, found at first use              */
    size_t range;             /* the size of one reservation                              */
    bool off;                 /* unavailable here: fixed segments only                    */
    uint64_t map_ns;          /* what one handle cost to create, map and open, a moving
                               * average: prices a growth's pieces (block/expand.c)        */
    uint64_t peers;           /* ordinals of the devices the program let reach this one's
                               * memory: every mapping gives them access too               */
    bool ranges_gone;         /* unmapped ahead of a device reset                         */
    int nranges;
    uint32_t unmapping;       /* threads unmapping pages, lock dropped (a futex word)     */
    uint64_t unmapped_bytes;  /* unmapped so far, for those waiting on them               */
} ca_vmm;

struct ca_device {
    ca_device_head head;      /* first: streams_seen, stream_epoch           */
    ca_lock lock;
    int id;
    /* ca_device_idle's watch (its one caller's, the monitor thread's; no lock): the program's
     * calls on the device when they last changed, and when. */
    uint64_t idle_calls;
    uint64_t idle_since_ns;
    bool ready;               /* limit computed, preallocation done          */
    uint64_t limit;           /* effective CACHEALLOC_LIMIT in bytes, 0 none */
    uint64_t release_threshold;
    ca_map live;              /* allocated blocks by address                 */
    ca_pool plain;
    ca_pool **pools;          /* async pools by stream                       */
    int npools, cap_pools;
    ca_pool *last_pool;       /* the stream-ordered pool found last          */
    ca_segment **segs;        /* sorted by base                              */
    int nsegs, cap_segs;
    ca_segment *empty_segs;        /* empty segments                        */
    ca_reuse reuse;           /* the reuse contract's state: reuse/reuse.h   */
    ca_block *spare;          /* recycled block structs                      */
    bool bases_unaligned;     /* the driver answered a segment base off CA_ROUND: a segment
                               * that must hold its request whole is asked with room   */
    size_t max_lead;          /* the most bytes a segment's base lies past its driver's */
    ca_vmm vmm;               /* its expandable segments                          */
    ca_dev_stats st;
};

struct ca_tc_entry;

struct ca_arena {
    ca_arena_head head;            /* first: serial                                         */
    ca_backend be;
    ca_config cfg;
    bool hooks;                   /* trace, allocation times or stacks: the slow bookkeeping */
    bool tc_on;                   /* thread caches in front of the pools (tcache/tcache.c) */
    /* Frees n blocks a thread cache kept through the pools (the cache's thread exits). */
    void (*return_kept_list)(ca_arena *a, const struct ca_tc_entry *kept, int n);
    pthread_mutex_t devices_lock; /* creation of device slots               */
    ca_device *dev[CA_MAX_DEVICES];
    int ndev;
    uint32_t quiet;               /* captures under way: no backend call (arena/quiet.c) */
};

/* block/heads.h's casts: each head comes first. */
_Static_assert(offsetof(struct ca_block, head) == 0, "a block's head comes first");
_Static_assert(offsetof(struct ca_device, head) == 0, "a device's head comes first");
_Static_assert(offsetof(struct ca_arena, head) == 0, "an arena's head comes first");

static inline ca_device *ca_device_peek(ca_arena *a, int dev)
{
    if (dev < 0 || dev >= CA_MAX_DEVICES)
        return NULL;
    return __atomic_load_n(&a->dev[dev], __ATOMIC_ACQUIRE);
}

/* Call fn on each device of a in order, under that device's lock, until fn returns true: the
 * number of the device it stopped at, else -1. */
typedef bool (*ca_device_fn)(ca_arena *a, ca_device *d, void *ctx);
static inline int ca_for_each_device_locked(ca_arena *a, ca_device_fn fn, void *ctx)
{
    int n = __atomic_load_n(&a->ndev, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        ca_device *d = ca_device_peek(a, i);
        if (!d)
            continue;
        ca_lock_acquire(&d->lock);
        bool stop = fn(a, d, ctx);
        ca_lock_release(&d->lock);
        if (stop)
            return i;
    }
    return -1;
}
/* block/bins.c. Under the lock: the largest free block of any of d's pools. */
size_t ca_device_largest_free(ca_device *d);

static inline bool ca_within_limit(const ca_device *d, size_t more)
{
    return !d->limit || d->st.reserved_bytes + more <= d->limit;
}

/* block/segment.c: segments, blocks, split and merge. All under the device lock. */
size_t ca_segment_size(const ca_config *c, size_t rounded);
bool ca_is_small(size_t rounded);
ca_block *ca_block_new(ca_device *d);
void ca_block_recycle(ca_device *d, ca_block *b);
void ca_block_split(ca_block *b, ca_block *rest, size_t first);
void ca_block_merge(ca_device *d, ca_block *left, ca_block *right);
int ca_seg_reserve(ca_device *d);
void ca_seg_insert(ca_device *d, ca_segment *s);
void ca_seg_remove(ca_device *d, ca_segment *s);
void ca_note_peaks(ca_dev_stats *st);
/* Count a driver call (or run of calls) that grew d's cache, begun at t0 (ca_now_ns), in
 * growths and grow_ns, whether it succeeded or not: the program waited for it either way.
 * Under d's lock; returns the nanoseconds it took. */
uint64_t ca_note_growth(ca_device *d, uint64_t t0);
/* A segment of `size` bytes from the driver, whose first block (all of it, free) comes back in
 * *out; every block of it starts on CA_ROUND, whatever base the driver answered. rounded (0:
 * none) is the request it must serve: where the driver's base left too little room for it,
 * nothing is made, *unfit gets the driver's allocation for the caller to give back without the
 * lock (CA_ERR_BACKEND), and from then on the device's segments that must hold their request
 * are asked with room for it, a large block's alignment included. */
ca_status ca_segment_new(ca_arena *a, ca_device *d, ca_pool *pool, size_t size, bool small,
                         bool prealloc, size_t rounded, ca_block **out, bool *driver_failed,
                         void **unfit);
/* The driver allocation of fixed segment s: where it begins, and its size. */
static inline uintptr_t ca_seg_driver_base(const ca_segment *s) { return s->base - s->lead; }
static inline size_t ca_seg_driver_size(const ca_segment *s)
{
    return s->lead + s->size + s->tail;
}
void ca_segment_detach(ca_arena *a, ca_device *d, ca_segment *seg);
void ca_segment_release(ca_arena *a, int dev, ca_segment *seg);
void ca_segment_forget(ca_segment *seg);
ca_segment *ca_segment_find(const ca_device *d, uintptr_t addr);
void ca_segment_move(ca_segment *seg, ca_pool *to);
ca_block *ca_block_free(ca_device *d, ca_block *b);
void ca_pool_consolidate(ca_device *d, ca_pool *p);
void ca_device_consolidate(ca_device *d);
void ca_block_unfree(ca_device *d, ca_block *b);
ca_block *ca_block_take(ca_arena *a, ca_device *d, ca_block *b, size_t rounded);
ca_bins *ca_pool_bins(ca_pool *p, bool small);

/* The bytes in front of address addr that a block of `rounded` bytes must skip to start on a
 * multiple of align (ca_config.big_align; 0: none). */
static inline size_t ca_align_pad(uintptr_t addr, size_t rounded, size_t align)
{
    if (align == 0 || rounded < align)
        return 0;
    return (size_t)(-addr & (align - 1));
}

/* True when b can hold a block of rounded bytes at an aligned start. */
static inline bool ca_fits_aligned(const ca_block *b, size_t rounded, size_t align)
{
    return b->size >= rounded + ca_align_pad(b->addr, rounded, align);
}

/* What to search for so that any block found can hold rounded bytes aligned. */
static inline size_t ca_aligned_need(size_t rounded, size_t align)
{
    return align == 0 || rounded < align ? rounded : rounded + align - CA_ROUND;
}

/* A request's block size: 512-byte multiples, or powers of two in the binned pool. 0 when it
 * cannot be represented. */
static inline size_t ca_round_request(const ca_config *c, size_t size)
{
    if (size > SIZE_MAX / 2)
        return 0;
    if (c->pool != CA_POOL_BINNED)
        return (size + CA_ROUND - 1) & ~(size_t)(CA_ROUND - 1);
    size_t p = CA_ROUND;
    while (p < size)
        p <<= 1;
    return p;
}

/* A free's exact-size path: the block joins its pool's exact-size list unmerged, so that the
 * next request of that size takes it back without a search, a split or a merge. Merging is
 * only deferred: every search that misses the lists consolidates them first, so best fit
 * sees the same free blocks eager merging would give it. */
static inline bool ca_exact_push(ca_device *d, ca_pool *p, ca_block *b)
{
    if (p->nexact >= CA_EXACT_MAX)
        return false;
    b->state = BLOCK_EXACT;
    b->lnext = p->exact[b->bin];
    p->exact[b->bin] = b;
    p->nexact++;
    d->st.cached_bytes += b->size;
    return true;
}

/* An allocation's exact-size path: a block of exactly rounded bytes (class cls), or NULL. */
static inline ca_block *ca_exact_pop(ca_device *d, ca_pool *p, size_t rounded, uint32_t cls)
{
    ca_block *b = p->exact[cls];
    if (!b || b->size != rounded)
        return NULL;
    p->exact[cls] = b->lnext;
    p->nexact--;
    b->lnext = NULL;
    b->state = BLOCK_ALLOC;
    d->st.cached_bytes -= b->size;
    d->st.allocated_bytes += b->size;
    if (d->st.allocated_bytes > d->st.peak_allocated_bytes)
        d->st.peak_allocated_bytes = d->st.allocated_bytes;
    return b;
}

/* Whether a mapping of expandable range s begins at addr, a page of s or its end: where a
 * mapping may end, if the page before it is mapped (block/expand.c). */
static inline bool ca_range_boundary(const ca_segment *s, size_t page, uintptr_t addr)
{
    size_t i = (addr - s->base) / page;
    return addr == s->base + s->size || (s->starts[i / 64] >> (i % 64) & 1);
}

/* Whether the page at addr of expandable range s lies in a solo mapping. */
static inline bool ca_range_solo(const ca_segment *s, uintptr_t addr)
{
    size_t i = (addr - s->base) / s->page;
    return s->solo[i / 64] >> (i % 64) & 1;
}

/* Whether free blocks meeting at addr must stay apart: a solo mapping begins or ends there.
 * A solo mapping holds one block at a time (and the free rest of its last page), so that it
 * goes back whole when that block is freed: nothing merges into it from outside. */
static inline bool ca_seam(const ca_segment *s, uintptr_t addr)
{
    if (!s->page || (addr - s->base) % s->page != 0 || addr == s->base + s->size ||
        !ca_range_boundary(s, s->page, addr))
        return false;
    return ca_range_solo(s, addr) || (addr > s->base && ca_range_solo(s, addr - s->page));
}

/* Marks (on) or clears the page at addr of s as the first of a mapping. */
static inline void ca_range_mark(ca_segment *s, size_t page, uintptr_t addr, bool on)
{
    size_t i = (addr - s->base) / page;
    if (on)
        s->starts[i / 64] |= (uint64_t)1 << (i % 64);
    else
        s->starts[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* Marks (on) or clears the pages of [addr, addr+size) of s as those of a solo mapping. */
static inline void ca_range_mark_solo(ca_segment *s, uintptr_t addr, size_t size, bool on)
{
    for (uintptr_t at = addr; at < addr + size; at += s->page) {
        size_t i = (at - s->base) / s->page;
        if (on)
            s->solo[i / 64] |= (uint64_t)1 << (i % 64);
        else
            s->solo[i / 64] &= ~((uint64_t)1 << (i % 64));
    }
}

/* block/expand.c, arena/unmap.c: expandable segments. Under the device lock. */
static inline uintptr_t ca_align_up(uintptr_t x, size_t to) { return (x + to - 1) / to * to; }
static inline uintptr_t ca_align_down(uintptr_t x, size_t to) { return x / to * to; }
/* Put b on / take it off its segment's list of holes (b becomes / stays UNMAPPED). */
void ca_unmapped_link(ca_segment *s, ca_block *b);
/* Gives peer access (on) or takes it away (off) on every mapped run of d's ranges. */
int ca_expand_peer_access(ca_arena *a, ca_device *d, int peer, bool on);
void ca_unmapped_unlink(ca_segment *s, ca_block *b);
/* Rung 4 of the ladder in p's range: pages mapped for rounded bytes, as a free block of the pool.
 * NULL with *full unset when p has no range to grow (the caller takes a fixed segment). */
ca_block *ca_expand_grow(ca_arena *a, ca_device *d, ca_pool *p, size_t rounded, bool small,
                         bool *full, bool *driver_failed);
/* Unmap every mapped page and free every reservation of d (the device is idle). */
void ca_expand_teardown(ca_arena *a, ca_device *d);

/* block/window.c: unlocked windows, under the device lock. */
/* Drop the lock around a blocking backend call; a device reset waits for every open window. */
void ca_window_begin(ca_device *d);
/* Take the lock back after a window, first waiting out a mode switch that began meanwhile. */
void ca_window_end(ca_device *d);
/* Close a window whose lock was taken back without ca_window_end (a switch's own end). */
void ca_window_closed(ca_device *d);
/* Wait, the lock dropped meanwhile, until no window is open (nor, if switches, a switch runs). */
void ca_window_drain(ca_device *d, bool switches);
/* A fork's child: no thread of it is inside a window, a switch or a synchronization, whatever
 * the parent's did. */
void ca_window_forget(ca_device *d);
/* Wait, the lock dropped meanwhile, until no synchronization that stops allocations runs. */
void ca_window_wait_switch(ca_device *d);

/* Whether a stream capture is under way: the arena makes no backend call (arena/quiet.c). */
static inline bool ca_quiet(const ca_arena *a)
{
    return __atomic_load_n(&a->quiet, __ATOMIC_ACQUIRE) != 0;
}

/* percent% of total, as CACHEALLOC_LIMIT=75% and the release threshold's percentages mean. */
static inline uint64_t ca_share_of(uint64_t total, unsigned percent)
{
    return total / 100 * percent;
}

#endif
