/* The inline half of the thread caches (tcache/tcache.h): a hit served in the caller's own
 * function. The shim's lane includes this header, so that a cache-hit allocation or free
 * makes no call into the arena at all; everything else goes through ca_malloc and ca_free.
 *
 * A hit reads and writes only the calling thread's cache, under the cache's own lock (tried,
 * never waited for: held by a collection, the call misses), and the device's stream flags. */
#ifndef CACHEALLOC_TCACHE_HIT_H
#define CACHEALLOC_TCACHE_HIT_H

#include "tcache/tcache.h"
#include "base/ca_assert.h"
#include "base/ca_compiler.h"

struct ca_tcache {
    uint32_t lock;                    /* ca_tc_try, tc_lock: 0 free, 1 held               */
    uint32_t nkept;
    uint8_t order[CA_TC_KEPT];        /* table entries of the kept blocks, oldest first   */
    /* Blocks it was handed and blocks it keeps, in one table by address hash: a free marks
     * an entry kept and a hit marks it issued again, with nothing copied. A new allocation
     * whose entry holds a kept block is not remembered (its free goes to the pools). */
    ca_tc_entry table[CA_TC_ISSUED];
    ca_tc_entry evicted;              /* pushed out by the last keep, for its caller      */
    /* By device, its own calls. */
    uint64_t hits[CA_MAX_DEVICES];
    uint64_t frees[CA_MAX_DEVICES];
    /* Away from the lock's line: other threads write prev and next when they come and go. */
    ca_arena *arena;
    uint64_t serial;                  /* the arena's                                      */
    bool graveyard;                   /* no thread's: the counts of exited threads' caches */
    struct ca_tcache *prev, *next;    /* the registry                                     */
};

_Static_assert(CA_TC_ISSUED <= 256, "kept entries' indexes are bytes");

/* A thread's caches, one per arena it used (a process has one arena per runtime), at the index
 * its arena's serial names, and checked by that serial: a destroyed arena's serial never comes
 * back, so a hit never follows a stale pointer here (a destroyed arena frees its caches, and
 * their threads' indexes still name them: retiring one checks that it is still registered, as
 * this serial's). Two arenas of one index (tests make many) take turns: the newer one's cache
 * replaces the older's. */
#define CA_TC_ARENAS 4
typedef struct ca_tc_thread {
    uint64_t serial[CA_TC_ARENAS];
    ca_tcache *tc[CA_TC_ARENAS];
    bool exit_armed;
    bool exited;                      /* its caches retired: no new one (nothing would free it) */
} ca_tc_thread;
extern _Thread_local ca_tc_thread ca_tc_self;

CA_INLINE unsigned ca_tc_arena_index(const ca_arena *a)
{
    return (unsigned)ca_arena_head_of(a)->serial & (CA_TC_ARENAS - 1);
}

/* The calling thread's cache of a, or NULL (none made yet, or thread caches are off). */
CA_INLINE ca_tcache *ca_tc_mine(const ca_arena *a)
{
    unsigned i = ca_tc_arena_index(a);
    return ca_tc_self.serial[i] == ca_arena_head_of(a)->serial ? ca_tc_self.tc[i] : NULL;
}

/* A cache's lock: its thread only ever tries it (held: that call misses, or spills nothing),
 * and whoever collects or sums the caches spins on it (tcache/tcache.c). So giving it back is
 * one store, with nobody asleep to wake. */
CA_INLINE bool ca_tc_try(ca_tcache *tc)
{
    uint32_t free_ = 0;
    return __atomic_compare_exchange_n(&tc->lock, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

CA_INLINE void ca_tc_unlock(ca_tcache *tc)
{
    __atomic_store_n(&tc->lock, 0, __ATOMIC_RELEASE);
}

/* The table entry of the i-th kept block (0: the oldest). */
CA_INLINE ca_tc_entry *ca_tc_kept_at(ca_tcache *tc, unsigned i)
{
    return &tc->table[tc->order[i]];
}

/* Whether kept block e may serve a request now: the same requested size, device, API and
 * stream, and a stream-ordered block while its stream lives, a plain one while its device has
 * no stream but the default ones (the thread's own default stream orders the reuse). */
CA_INLINE bool ca_tc_serves(const ca_tc_entry *e, int dev, size_t size, ca_stream_t s,
                                unsigned api)
{
    if (e->requested != size || e->key != s || e->dev != dev || e->api != api)
        return false;
    if (api == CA_API_PLAIN)
        return !__atomic_load_n(&ca_device_head_of(e->d)->streams_seen, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&ca_device_head_of(e->d)->stream_epoch, __ATOMIC_ACQUIRE) == e->epoch;
}

/* Hand out the i-th kept block of tc, forgetting it there (the newer ones move down). Caller
 * holds tc's lock. */
CA_INLINE void *ca_tc_reissue(ca_tcache *tc, unsigned i)
{
    ca_assert(i < tc->nkept);
    ca_tc_entry *e = ca_tc_kept_at(tc, i);
    /* Kept, and the pools never saw it since its keep: the block still says kept (a block
     * handed back to the pools is unmarked there), and no free or allocation moved its gen. */
    ca_assert(e->is_kept && __atomic_load_n(&ca_block_head_of(e->b)->kept, __ATOMIC_RELAXED));
    ca_assert(__atomic_load_n(&ca_block_head_of(e->b)->gen, __ATOMIC_RELAXED) == e->gen);
    ca_tc_check_block(e);
    tc->hits[e->dev]++;
    __atomic_store_n(&ca_block_head_of(e->b)->kept, 0, __ATOMIC_RELAXED);
    e->is_kept = 0; /* issued again: its gen never changed */
    tc->nkept--;
    for (; i < tc->nkept; i++)
        tc->order[i] = tc->order[i + 1];
    return (void *)e->addr;
}

/* The table entry of the block at addr: a multiplicative hash of its 512-byte units. */
CA_INLINE size_t ca_tc_entry_index(uintptr_t addr)
{
    return (size_t)((addr >> 9) * 0x9E3779B97F4A7C15ull >> 58) & (CA_TC_ISSUED - 1);
}

/* The issued entry of ptr (not NULL), in its table entry, still valid; or NULL. Caller holds
 * tc's lock. */
CA_INLINE ca_tc_entry *ca_tc_issued_entry(ca_tcache *tc, size_t at, const void *ptr)
{
    uintptr_t addr = (uintptr_t)ptr;
    ca_tc_entry *e = &tc->table[at];
    /* Freed or handed out again by the pools since (another thread freed it, or a double
     * free): the gen moved on, and the pools answer. A kept block is freed already. An empty
     * entry's address is 0. */
    if (e->addr != addr || e->is_kept ||
        __atomic_load_n(&ca_block_head_of(e->b)->gen, __ATOMIC_RELAXED) != e->gen)
        return NULL;
    return e;
}

/* Whether the calling thread may keep e, freed by (s, api). */
CA_INLINE bool ca_tc_keepable(const ca_tc_entry *e, ca_stream_t s, unsigned api)
{
    if (e->api != api || e->key != s)
        return false;
    /* A plain block on a device with streams: fences decide, in the pools. */
    return api != CA_API_PLAIN ||
           !__atomic_load_n(&ca_device_head_of(e->d)->streams_seen, __ATOMIC_ACQUIRE);
}

/* Keep e, table entry `at`, as the newest kept block. Caller holds tc's lock, with room. */
CA_INLINE void ca_tc_keep_entry(ca_tcache *tc, ca_tc_entry *e, size_t at)
{
    /* An issued entry, named by its own index in the order list, once, with room there; no
     * cache keeps its block already. */
    ca_assert(e == &tc->table[at] && !e->is_kept && tc->nkept < CA_TC_KEPT);
    ca_assert(!__atomic_load_n(&ca_block_head_of(e->b)->kept, __ATOMIC_RELAXED));
    ca_tc_check_block(e);
    e->is_kept = 1;
    if (e->api != CA_API_PLAIN) /* a plain block's reuse does not look at it */
        e->epoch = __atomic_load_n(&ca_device_head_of(e->d)->stream_epoch, __ATOMIC_ACQUIRE);
    __atomic_store_n(&ca_block_head_of(e->b)->kept, 1, __ATOMIC_RELAXED);
    tc->order[tc->nkept++] = (uint8_t)at;
    tc->frees[e->dev]++;
}

/* The calling thread's own cache tc only (ca_tc_thread_cache; NULL: none): true when it
 * served the allocation (*out set); false: ca_malloc serves it. Only the newest kept block is
 * tried: what misses it is the pools' business, ca_malloc's full search of the cache first.
 * size > 0, out valid. */
CA_INLINE bool ca_malloc_hit(ca_tcache *tc, int dev, size_t size, ca_stream_t s, unsigned api,
                          void **out)
{
    if (!tc || !ca_tc_try(tc))
        return false;
    unsigned n = tc->nkept;
    bool hit = n > 0 && ca_tc_serves(ca_tc_kept_at(tc, n - 1), dev, size, s, api);
    if (hit)
        *out = ca_tc_reissue(tc, n - 1);
    ca_tc_unlock(tc);
    return hit;
}

/* The calling thread's own cache tc only (NULL: none): true when it kept the free of ptr, a
 * block of device dev; false: ca_free answers (another device, or a keep that pushes out the
 * oldest). ptr not NULL. */
CA_INLINE bool ca_free_hit(ca_tcache *tc, void *ptr, ca_stream_t s, unsigned api, int dev)
{
    if (!tc || !ca_tc_try(tc))
        return false;
    size_t at = ca_tc_entry_index((uintptr_t)ptr);
    ca_tc_entry *e = ca_tc_issued_entry(tc, at, ptr);
    bool kept = e && e->dev == dev && tc->nkept < CA_TC_KEPT && ca_tc_keepable(e, s, api);
    if (kept)
        ca_tc_keep_entry(tc, e, at);
    ca_tc_unlock(tc);
    return kept;
}

#endif
