/* Thread caches (tcache/tcache.h). Each cache has its own lock, taken by its thread on every
 * call (never contended but by a collection) and by whoever collects or sums the caches; the
 * registry of caches has a mutex, taken only when a thread makes its cache, exits, or when the
 * caches are collected or summed. Lock order: registry, then a cache, then (never while holding
 * either) a device. */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "tcache/hit.h"
#include "block/block.h"
#include "base/ca_assert.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ca_tcache *registry;

static int take_kept(ca_tcache *tc, int dev, ca_tc_entry *out, int n);

_Thread_local ca_tc_thread ca_tc_self;
#define tl ca_tc_self

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* A zeroed cache, aligned as its entries must be (calloc's alignment is less). */
static ca_tcache *cache_alloc(void)
{
    ca_tcache *tc = aligned_alloc(_Alignof(ca_tcache), sizeof *tc);
    if (tc)
        memset(tc, 0, sizeof *tc);
    return tc;
}

/* An entry emptied: no block, and an address no pointer matches. */
static void forget(ca_tc_entry *e)
{
    e->b = NULL;
    e->addr = 0;
}

static bool registered(const ca_tcache *tc)
{
    for (const ca_tcache *t = registry; t; t = t->next)
        if (t == tc)
            return true;
    return false;
}

static void unregister(ca_tcache *tc)
{
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        registry = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
}

/* The arena's graveyard, made at the first exit. Caller holds registry_lock. */
static ca_tcache *graveyard_of(ca_arena *a)
{
    for (ca_tcache *t = registry; t; t = t->next)
        if (t->arena == a && t->graveyard)
            return t;
    ca_tcache *g = cache_alloc();
    if (!g)
        return NULL;
    g->arena = a;
    g->graveyard = true;
    g->next = registry;
    if (registry)
        registry->prev = g;
    registry = g;
    return g;
}

/* Unregister tc, the calling thread's cache of the arena of serial `serial`, keep its counts,
 * and hand its kept blocks to its arena's pools. */
static void retire(ca_tcache *tc, uint64_t serial)
{
    pthread_mutex_lock(&registry_lock);
    /* Its arena may have gone first and taken it along: then the address may even be another
     * cache's by now, which the serial tells apart (none of a destroyed arena is left). */
    bool live = registered(tc) && tc->serial == serial && !tc->graveyard;
    if (live) {
        unregister(tc);
        /* The device's call counts must not drop when a thread ends. */
        ca_tcache *g = graveyard_of(tc->arena);
        for (int d = 0; g && d < CA_MAX_DEVICES; d++) {
            g->hits[d] += tc->hits[d];
            g->frees[d] += tc->frees[d];
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!live)
        return;
    ca_tc_entry kept[CA_TC_KEPT];
    int n = take_kept(tc, -1, kept, 0); /* no lock: nobody else can reach tc any more */
    if (n > 0 && tc->arena->return_kept_list)
        tc->arena->return_kept_list(tc->arena, kept, n);
    free(tc);
}

static void (*retire_hook)(void);

void ca_tc_set_retire_hook(void (*hook)(void))
{
    retire_hook = hook;
}

/* The calling thread's cache at index i is about to go: the hook first. */
static void retire_own(unsigned i)
{
    if (retire_hook)
        retire_hook();
    retire(tl.tc[i], tl.serial[i]);
}

static void thread_exit(void *unused)
{
    (void)unused;
    /* A later destructor of the thread's may still allocate: through the pools, since no
     * cache made now would ever be retired. */
    tl.exited = true;
    for (unsigned i = 0; i < CA_TC_ARENAS; i++) {
        if (tl.tc[i])
            retire_own(i);
        tl.tc[i] = NULL;
        tl.serial[i] = 0;
    }
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

/* The calling thread's cache for a, made at its first use; NULL when memory is short or the
 * thread is past its exit. */
static ca_tcache *cache_new(ca_arena *a)
{
    ca_tcache *tc = tl.exited ? NULL : cache_alloc();
    if (!tc)
        return NULL;
    tc->arena = a;
    tc->serial = a->head.serial;
    if (!tl.exit_armed) {
        pthread_once(&exit_once, make_exit_key);
        if (exit_key != (pthread_key_t)-1 && pthread_setspecific(exit_key, &tl) == 0)
            tl.exit_armed = true;
    }
    unsigned i = ca_tc_arena_index(a);
    if (tl.tc[i])
        retire_own(i); /* another arena of the same index: its cache goes */
    pthread_mutex_lock(&registry_lock);
    tc->next = registry;
    if (registry)
        registry->prev = tc;
    registry = tc;
    pthread_mutex_unlock(&registry_lock);
    tl.tc[i] = tc;
    tl.serial[i] = a->head.serial;
    return tc;
}

/* Collectors and summers spin on a cache's lock, yielding, through the few stores its thread
 * makes under it, then sleep between tries (a preempted thread of lower priority may hold it). */
static void tc_lock(ca_tcache *tc)
{
    for (int tries = 0; !ca_tc_try(tc); tries++) {
        if (tries < 64)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 50 * 1000}, NULL);
    }
}

ca_tcache *ca_tc_thread_cache(ca_arena *a)
{
    ca_tcache *tc = ca_tc_mine(a);
    return tc || !a->tc_on ? tc : cache_new(a);
}

int ca_tc_take(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api, bool newest_tried,
               void **out, ca_tc_entry *spill)
{
    ca_tcache *tc = ca_tc_mine(a);
    /* nkept too: a collection may change it. Held by a collection: a miss, and the collection
     * takes what the thread keeps. */
    if (!tc || !ca_tc_try(tc))
        return 0;
    /* Newest first: a loop takes back what it just freed. */
    unsigned i = tc->nkept - (newest_tried && tc->nkept > 0);
    while (i-- > 0) {
        if (ca_tc_serves(ca_tc_kept_at(tc, i), dev, size, s, api)) {
            *out = ca_tc_reissue(tc, i);
            ca_tc_unlock(tc);
            return -1;
        }
    }
    int n = take_kept(tc, dev, spill, 0);
    ca_tc_unlock(tc);
    return n;
}

void ca_tc_issue(ca_arena *a, int dev, ca_block *b, uint32_t gen, size_t requested,
                 ca_stream_t s, unsigned api)
{
    if (b->size > CA_TC_MAX_BLOCK)
        return;
    ca_tcache *tc = ca_tc_mine(a);
    if (!tc && !(tc = cache_new(a)))
        return;
    if (!ca_tc_try(tc))
        return; /* held by a collection: not remembered, its free goes to the pools */
    ca_tc_entry *e = &tc->table[ca_tc_entry_index(b->addr)];
    if (!e->b || !e->is_kept)
        *e = (ca_tc_entry){.b = b, .addr = b->addr, .requested = requested, .key = s,
                           .d = ca_device_peek(a, dev), .gen = gen, .dev = (int16_t)dev,
                           .api = (uint8_t)api};
    ca_tc_unlock(tc);
}

bool ca_tc_issued(ca_arena *a, const void *ptr, int *dev, size_t *requested)
{
    ca_tcache *tc = ca_tc_mine(a);
    if (!tc || !ca_tc_try(tc))
        return false;
    const ca_tc_entry *e = ca_tc_issued_entry(tc, ca_tc_entry_index((uintptr_t)ptr), ptr);
    if (e) {
        *dev = e->dev;
        *requested = e->requested;
    }
    ca_tc_unlock(tc);
    return e != NULL;
}

int ca_tc_keep(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out)
{
    ca_tcache *tc = ca_tc_mine(a);
    if (!tc || !ca_tc_try(tc))
        return CA_TC_NOT_KEPT;
    ca_tc_entry *e = ca_tc_issued_entry(tc, ca_tc_entry_index((uintptr_t)ptr), ptr);
    if (!e || !ca_tc_keepable(e, s, api)) {
        ca_tc_unlock(tc);
        return CA_TC_NOT_KEPT;
    }
    int rc = CA_TC_KEPT_ONE;
    if (tc->nkept == CA_TC_KEPT) {
        ca_tc_entry *old = ca_tc_kept_at(tc, 0);
        tc->evicted = *old;
        forget(old);
        tc->nkept--;
        memmove(tc->order, tc->order + 1, tc->nkept);
        rc = CA_TC_KEPT_EVICTING;
    }
    ca_tc_keep_entry(tc, e, ca_tc_entry_index((uintptr_t)ptr));
    ca_tc_unlock(tc);
    if (dev_out)
        *dev_out = e->dev;
    return rc;
}

void ca_tc_return_evicted(ca_arena *a, ca_tc_entry *out)
{
    *out = ca_tc_mine(a)->evicted; /* its thread's alone: no lock */
}

/* Move tc's kept blocks of dev (dev < 0: all) into out[n..] (NULL: drop them); returns the
 * new n. Caller holds tc's lock. */
static int take_kept(ca_tcache *tc, int dev, ca_tc_entry *out, int n)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < tc->nkept; i++) {
        ca_tc_entry *e = ca_tc_kept_at(tc, i);
        if (dev >= 0 && e->dev != dev) {
            tc->order[kept++] = tc->order[i];
            continue;
        }
        if (out)
            out[n++] = *e;
        forget(e);
    }
    tc->nkept = kept;
    return n;
}

int ca_tc_return_all(ca_arena *a, int dev, ca_tc_entry **out)
{
    *out = NULL;
    pthread_mutex_lock(&registry_lock);
    int cap = 0;
    for (ca_tcache *t = registry; t; t = t->next)
        if (t->arena == a)
            cap += CA_TC_KEPT;
    ca_tc_entry *list = cap ? aligned_alloc(_Alignof(ca_tc_entry), (size_t)cap * sizeof *list)
                            : NULL;
    int n = 0;
    for (ca_tcache *t = registry; t && list; t = t->next) {
        if (t->arena != a)
            continue;
        tc_lock(t);
        n = take_kept(t, dev, list, n);
        ca_tc_unlock(t);
    }
    pthread_mutex_unlock(&registry_lock);
    if (n == 0)
        free(list);
    else
        *out = list;
    return n;
}

void ca_tc_forget(ca_arena *a, int dev)
{
    pthread_mutex_lock(&registry_lock);
    for (ca_tcache *t = registry; t; t = t->next) {
        if (t->arena != a)
            continue;
        tc_lock(t);
        take_kept(t, dev, NULL, 0);
        for (int i = 0; i < CA_TC_ISSUED; i++)
            if (dev < 0 || t->table[i].dev == dev)
                forget(&t->table[i]);
        for (int i = 0; i < CA_MAX_DEVICES; i++)
            if (dev < 0 || i == dev)
                t->hits[i] = t->frees[i] = 0; /* the device's counters restart too */
        ca_tc_unlock(t);
    }
    pthread_mutex_unlock(&registry_lock);
}

void ca_tc_adjust_stats(ca_arena *a, int dev, ca_dev_stats *st)
{
    uint64_t bytes = 0, requested = 0, hits = 0, frees = 0;
    pthread_mutex_lock(&registry_lock);
    for (ca_tcache *t = registry; t; t = t->next) {
        if (t->arena != a)
            continue;
        tc_lock(t);
        for (unsigned i = 0; i < t->nkept; i++) {
            const ca_tc_entry *e = ca_tc_kept_at(t, i);
            if (e->dev == dev) {
                bytes += e->b->size;
                requested += e->requested;
            }
        }
        hits += t->hits[dev];
        frees += t->frees[dev];
        ca_tc_unlock(t);
    }
    pthread_mutex_unlock(&registry_lock);
    /* Never below zero: the device's snapshot and the caches' are taken one after the other. */
    bytes = bytes < st->allocated_bytes ? bytes : st->allocated_bytes;
    requested = requested < st->requested_bytes ? requested : st->requested_bytes;
    st->allocated_bytes -= bytes;
    st->cached_bytes += bytes;
    st->requested_bytes -= requested;
    st->alloc_calls += hits;
    st->cache_hits += hits;
    st->free_calls += frees;
}

#ifdef CA_DEBUG
void ca_tc_check_block(const ca_tc_entry *e)
{
    const ca_block *b = e->b;
    ca_assert(e->dev >= 0 && e->dev < CA_MAX_DEVICES && e->d && e->d->id == e->dev);
    ca_assert(b->state == BLOCK_ALLOC && b->addr == e->addr);
    ca_assert(b->size >= e->requested && b->size <= CA_TC_MAX_BLOCK);
}
#endif

void ca_tc_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    registry_lock = fresh;
    for (ca_tcache *t = registry; t; t = t->next)
        t->lock = 0;
}

void ca_tc_arena_gone(ca_arena *a)
{
    pthread_mutex_lock(&registry_lock);
    for (ca_tcache *t = registry, *n; t; t = n) {
        n = t->next;
        if (t->arena == a) {
            unregister(t);
            free(t);
        }
    }
    pthread_mutex_unlock(&registry_lock);
}
