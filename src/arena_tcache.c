/* Thread caches (arena_tcache.h). Each cache has its own lock, taken by its thread on every
 * call (never contended but by a collection) and by whoever collects or sums the caches; the
 * registry of caches has a mutex, taken only when a thread makes its cache, exits, or when the
 * caches are collected or summed. Lock order: registry, then a cache, then (never while holding
 * either) a device. */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdlib.h>

#include "arena_tcache.h"

typedef struct ca_tcache ca_tcache;
struct ca_tcache {
    uint32_t lock;                    /* tc_try, tc_lock: 0 free, 1 held                 */
    ca_arena *arena;
    bool graveyard;                   /* no thread's: the counts of exited threads' caches */
    ca_tcache *prev, *next;           /* the registry                                    */
    /* Blocks it was handed and blocks it keeps, in one table by address hash: a free marks
     * an entry kept and a hit marks it issued again, with nothing copied. A new allocation
     * whose slot holds a kept block is not remembered (its free goes to the pools). */
    ca_tc_entry table[CA_TC_ISSUED];
    int nkept;
    uint64_t kept;                    /* byte i: table slot of the i-th kept block, oldest
                                       * first (one word: forgetting one is two shifts)  */
    ca_tc_entry evicted;              /* pushed out by the last keep, for its caller     */
    /* By device, its own calls. */
    uint64_t hits[CA_MAX_DEVICES];
    uint64_t frees[CA_MAX_DEVICES];
};

_Static_assert(CA_TC_KEPT <= 8 && CA_TC_ISSUED <= 256, "kept slots are bytes of one word");

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ca_tcache *registry;

static int take_kept(ca_tcache *tc, int dev, ca_tc_entry *out, int n);

/* A thread's caches, one per arena it used (a process has one arena per runtime), found by the
 * arena's serial: a destroyed arena's serial never comes back, so a stale pointer here is
 * never followed. */
#define TL_SLOTS 4
static _Thread_local struct {
    uint64_t serial[TL_SLOTS];
    ca_tcache *tc[TL_SLOTS];
    bool exit_armed;
} tl;

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static size_t issued_slot(uintptr_t addr)
{
    return (size_t)((addr >> 9) * 0x9E3779B97F4A7C15ull >> 58) & (CA_TC_ISSUED - 1);
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
    ca_tcache *g = calloc(1, sizeof *g);
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

/* Unregister tc, keep its counts, and hand its kept blocks to its arena's pools. */
static void retire(ca_tcache *tc)
{
    pthread_mutex_lock(&registry_lock);
    bool live = registered(tc);
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
        return; /* its arena went first, and took it along */
    ca_tc_entry kept[CA_TC_KEPT];
    int n = take_kept(tc, -1, kept, 0); /* no lock: nobody else can reach tc any more */
    if (n > 0 && tc->arena->tc_flush)
        tc->arena->tc_flush(tc->arena, kept, n);
    free(tc);
}

static void thread_exit(void *unused)
{
    (void)unused;
    for (int i = 0; i < TL_SLOTS; i++) {
        if (tl.tc[i])
            retire(tl.tc[i]);
        tl.tc[i] = NULL;
        tl.serial[i] = 0;
    }
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

/* The calling thread's cache for a, made at its first use; NULL when memory is short. */
static ca_tcache *cache_new(ca_arena *a)
{
    ca_tcache *tc = calloc(1, sizeof *tc);
    if (!tc)
        return NULL;
    tc->arena = a;
    if (!tl.exit_armed) {
        pthread_once(&exit_once, make_exit_key);
        if (exit_key != (pthread_key_t)-1 && pthread_setspecific(exit_key, &tl) == 0)
            tl.exit_armed = true;
    }
    int slot = 0;
    while (slot < TL_SLOTS - 1 && tl.serial[slot] != 0)
        slot++;
    if (tl.tc[slot])
        retire(tl.tc[slot]); /* a fifth arena on this thread: the oldest slot's cache goes */
    pthread_mutex_lock(&registry_lock);
    tc->next = registry;
    if (registry)
        registry->prev = tc;
    registry = tc;
    pthread_mutex_unlock(&registry_lock);
    tl.tc[slot] = tc;
    tl.serial[slot] = a->serial;
    return tc;
}

/* A cache's lock: its thread only ever tries it (held: that call misses, or spills nothing),
 * and whoever collects or sums the caches spins on it, yielding, through the few stores the
 * thread makes under it, then sleeps between tries (a preempted thread of lower priority may
 * hold it). So giving it back is one store, with nobody asleep to wake. */
static inline bool tc_try(ca_tcache *tc)
{
    uint32_t free_ = 0;
    return __atomic_compare_exchange_n(&tc->lock, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void tc_lock(ca_tcache *tc)
{
    for (int tries = 0; !tc_try(tc); tries++) {
        if (tries < 64)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 50 * 1000}, NULL);
    }
}

static inline void tc_unlock(ca_tcache *tc)
{
    __atomic_store_n(&tc->lock, 0, __ATOMIC_RELEASE);
}

static inline ca_tcache *cache_of(ca_arena *a)
{
    for (int i = 0; i < TL_SLOTS; i++)
        if (tl.serial[i] == a->serial)
            return tl.tc[i];
    return NULL;
}

/* Whether a kept block may serve its thread again now (see ca_tc_take). */
static inline bool reusable(ca_arena *a, const ca_tc_entry *e)
{
    ca_device *d = ca_device_peek(a, e->dev);
    if (!d)
        return false;
    if (e->api == CA_API_PLAIN)
        return !__atomic_load_n(&d->streams_seen, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&d->stream_epoch, __ATOMIC_ACQUIRE) == e->epoch;
}

/* The table entry of the i-th kept block (0: the oldest). */
static inline ca_tc_entry *kept_at(ca_tcache *tc, int i)
{
    return &tc->table[(tc->kept >> (8 * i)) & 0xff];
}

/* Forget the i-th kept block: the newer ones move down a place (its table entry stays, now
 * issued or emptied by the caller). */
static inline void unkeep(ca_tcache *tc, int i)
{
    uint64_t older = (UINT64_C(1) << (8 * i)) - 1;
    tc->kept = (tc->kept & older) | ((tc->kept >> 8) & ~older);
    tc->nkept--;
}

static inline bool matches(ca_arena *a, const ca_tc_entry *e, int dev, size_t size,
                           ca_stream_t s, unsigned api)
{
    return e->requested == size && e->dev == dev && e->api == api && e->key == s &&
           reusable(a, e);
}

bool ca_tc_take(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api, void **out)
{
    ca_tcache *tc = cache_of(a);
    if (!tc)
        return false;
    /* nkept too: a collection may change it. Held by a collection: a miss. */
    if (!tc_try(tc))
        return false;
    /* Newest first: a loop takes back what it just freed. */
    for (int i = tc->nkept - 1; i >= 0; i--) {
        ca_tc_entry *e = kept_at(tc, i);
        if (!matches(a, e, dev, size, s, api))
            continue;
        tc->hits[dev]++;
        __atomic_store_n(&e->b->kept, 0, __ATOMIC_RELAXED);
        e->is_kept = 0; /* issued again: its gen never changed */
        unkeep(tc, i);
        tc_unlock(tc);
        *out = (void *)e->addr;
        return true;
    }
    tc_unlock(tc);
    return false;
}

int ca_tc_spill(ca_arena *a, int dev, ca_tc_entry *spill)
{
    ca_tcache *tc = cache_of(a);
    if (!tc || !tc_try(tc))
        return 0; /* held by a collection, which takes them */
    int n = take_kept(tc, dev, spill, 0);
    tc_unlock(tc);
    return n;
}

void ca_tc_issue(ca_arena *a, int dev, ca_block *b, uint32_t gen, size_t requested,
                 ca_stream_t s, unsigned api)
{
    if (b->size > CA_TC_MAX_BLOCK)
        return;
    ca_tcache *tc = cache_of(a);
    if (!tc && !(tc = cache_new(a)))
        return;
    if (!tc_try(tc))
        return; /* held by a collection: not remembered, its free goes to the pools */
    ca_tc_entry *e = &tc->table[issued_slot(b->addr)];
    if (!e->b || !e->is_kept)
        *e = (ca_tc_entry){.b = b, .addr = b->addr, .requested = requested, .key = s,
                           .gen = gen, .dev = (int16_t)dev, .api = (uint8_t)api};
    tc_unlock(tc);
}

/* The issued entry of ptr, still valid, or NULL. Caller holds tc's lock. */
static inline ca_tc_entry *issued_of(ca_tcache *tc, const void *ptr)
{
    ca_tc_entry *e = &tc->table[issued_slot((uintptr_t)ptr)];
    /* Freed or handed out again by the pools since (another thread freed it, or a double
     * free): the gen moved on, and the pools answer. A kept block is freed already. */
    if (!e->b || e->is_kept || e->addr != (uintptr_t)ptr ||
        __atomic_load_n(&e->b->gen, __ATOMIC_RELAXED) != e->gen)
        return NULL;
    return e;
}

bool ca_tc_issued(ca_arena *a, const void *ptr, int *dev, size_t *requested)
{
    ca_tcache *tc = cache_of(a);
    if (!tc || !tc_try(tc))
        return false;
    const ca_tc_entry *e = issued_of(tc, ptr);
    if (e) {
        *dev = e->dev;
        *requested = e->requested;
    }
    tc_unlock(tc);
    return e != NULL;
}

int ca_tc_keep(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out)
{
    ca_tcache *tc = cache_of(a);
    if (!tc || !tc_try(tc))
        return CA_TC_NOT_KEPT;
    ca_tc_entry *e = issued_of(tc, ptr);
    if (!e || e->api != api || e->key != s) {
        tc_unlock(tc);
        return CA_TC_NOT_KEPT;
    }
    ca_device *d = ca_device_peek(a, e->dev);
    if (!d || (api == CA_API_PLAIN && __atomic_load_n(&d->streams_seen, __ATOMIC_ACQUIRE))) {
        tc_unlock(tc);
        return CA_TC_NOT_KEPT; /* fences decide, in the pools */
    }
    int rc = CA_TC_KEPT_ONE;
    if (tc->nkept == CA_TC_KEPT) {
        ca_tc_entry *old = kept_at(tc, 0);
        tc->evicted = *old;
        old->b = NULL;
        unkeep(tc, 0);
        rc = CA_TC_KEPT_EVICTING;
    }
    e->is_kept = 1;
    e->epoch = __atomic_load_n(&d->stream_epoch, __ATOMIC_ACQUIRE);
    __atomic_store_n(&e->b->kept, 1, __ATOMIC_RELAXED);
    tc->kept |= (uint64_t)(e - tc->table) << (8 * tc->nkept++);
    tc->frees[e->dev]++;
    tc_unlock(tc);
    if (dev_out)
        *dev_out = e->dev;
    return rc;
}

void ca_tc_evicted(ca_arena *a, ca_tc_entry *out)
{
    *out = cache_of(a)->evicted; /* its thread's alone: no lock */
}

/* Move tc's kept blocks of dev (dev < 0: all) into out[n..] (NULL: drop them); returns the
 * new n. Caller holds tc's lock. */
static int take_kept(ca_tcache *tc, int dev, ca_tc_entry *out, int n)
{
    int kept = 0;
    uint64_t slots = 0;
    for (int i = 0; i < tc->nkept; i++) {
        ca_tc_entry *e = kept_at(tc, i);
        if (dev >= 0 && e->dev != dev) {
            slots |= (uint64_t)(e - tc->table) << (8 * kept++);
            continue;
        }
        if (out)
            out[n++] = *e;
        e->b = NULL;
    }
    tc->kept = slots;
    tc->nkept = kept;
    return n;
}

int ca_tc_collect(ca_arena *a, int dev, ca_tc_entry **out)
{
    *out = NULL;
    pthread_mutex_lock(&registry_lock);
    int cap = 0;
    for (ca_tcache *t = registry; t; t = t->next)
        if (t->arena == a)
            cap += CA_TC_KEPT;
    ca_tc_entry *list = cap ? malloc((size_t)cap * sizeof *list) : NULL;
    int n = 0;
    for (ca_tcache *t = registry; t && list; t = t->next) {
        if (t->arena != a)
            continue;
        tc_lock(t);
        n = take_kept(t, dev, list, n);
        tc_unlock(t);
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
                t->table[i].b = NULL;
        for (int i = 0; i < CA_MAX_DEVICES; i++)
            if (dev < 0 || i == dev)
                t->hits[i] = t->frees[i] = 0; /* the device's counters restart too */
        tc_unlock(t);
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
        for (int i = 0; i < t->nkept; i++) {
            const ca_tc_entry *e = kept_at(t, i);
            if (e->dev == dev) {
                bytes += e->b->size;
                requested += e->requested;
            }
        }
        hits += t->hits[dev];
        frees += t->frees[dev];
        tc_unlock(t);
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
