/* The arena's slower doors: device synchronization and reset, reclaim, statistics, the leak
 * walk, and the arena's own life cycle. */
#include <stdlib.h>

#include "arena/ladder.h"
#include "base/ca_assert.h"
#include "tcache/tcache.h"
#include "stats/neighbours.h"

uint64_t ca_device_sync_begin(ca_arena *a, int dev)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return 0;
    /* What the threads keep goes back first, so that this synchronization covers it: the
     * device's other streams may then take it over without an event. */
    ca_return_kept(a, dev);
    ca_lock_acquire(&d->lock);
    uint64_t token = ca_reuse_token(&d->reuse);
    ca_lock_release(&d->lock);
    return token;
}

/* Trim cached bytes above the release threshold: the program just synchronized, so giving
 * segments back (each a cudaFree, which synchronizes) costs no wait on its work. Free pages of
 * expandable segments follow when that was not enough, only those the synchronization proved
 * idle: the trim never waits for the device itself. */
static void trim(ca_arena *a, ca_device *d)
{
    if (d->release_threshold == UINT64_MAX || d->st.cached_bytes <= d->release_threshold)
        return;
    int n;
    ca_segment **list =
        ca_collect_empty(a, d, false, d->st.cached_bytes - d->release_threshold, &n);
    if (n == 0) {
        free(list);
    } else {
        d->st.driver_free_calls += (uint64_t)n;
        ca_window_begin(d);
        ca_release_list(a, d, list, n);
        ca_window_end(d);
    }
    if (d->st.cached_bytes > d->release_threshold)
        ca_unmap_free_pages(a, d, d->st.cached_bytes - d->release_threshold, false);
}

void ca_device_synchronized(ca_arena *a, int dev, uint64_t token)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return;
    ca_lock_acquire(&d->lock);
    ca_reuse_synced(d, token);
    trim(a, d);
    ca_lock_release(&d->lock);
}

static void free_device_state(ca_device *d)
{
    __atomic_store_n(&d->head.streams_seen, 0, __ATOMIC_RELEASE);
    __atomic_fetch_add(&d->head.stream_epoch, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < d->nsegs; i++)
        ca_segment_forget(d->segs[i]);
    free(d->segs);
    d->segs = NULL;
    d->nsegs = d->cap_segs = 0;
    d->empty_segs = NULL;
    ca_reuse_forget(d);
    for (int i = 0; i < d->npools; i++)
        free(d->pools[i]);
    free(d->pools);
    d->pools = NULL;
    d->npools = d->cap_pools = 0;
    d->last_pool = NULL;
    for (ca_block *b = d->spare, *n; b; b = n) {
        n = b->lnext;
        free(b->stack);
        free(b);
    }
    d->spare = NULL;
    ca_map_free(&d->live);
    ca_pool plain = {0};
    plain.plain = true;
    plain.stream = CA_STREAM_LEGACY;
    d->plain = plain;
    d->ready = false;
    d->vmm.nranges = 0;
    d->vmm.ranges_gone = false;
    d->vmm.peers = 0; /* the context's peer access went with it */
}

/* Zero what describes memory; keep the cumulative call counters. */
static void zero_gauges(ca_dev_stats *st)
{
    st->reserved_bytes = st->allocated_bytes = st->cached_bytes = st->pending_bytes = 0;
    st->requested_bytes = st->segments = 0;
}

/* Take d's lock once no thread is inside an unlocked window: those hold pools and detached
 * segments of this device. */
static void lock_quiet(ca_device *d)
{
    ca_lock_acquire(&d->lock);
    ca_window_drain(d, true);
}

void ca_device_resetting(ca_arena *a, int dev)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return;
    lock_quiet(d);
    bool ranges = d->vmm.nranges > 0 && !d->vmm.ranges_gone;
    if (ranges)
        d->st.device_syncs++;
    ca_lock_release(&d->lock);
    if (!ranges)
        return;
    /* A context reset need not free mappings, which belong to the device: the arena unmaps its
     * pages first, once the device is idle (waited for unlocked, as every wait). The
     * bookkeeping goes with ca_device_reset; should the reset fail, the blocks there are lost
     * with their memory. */
    uint64_t t0 = ca_now_ns();
    a->be.device_synchronize(a->be.ctx, d->id);
    lock_quiet(d);
    d->st.sync_wait_ns += ca_now_ns() - t0;
    if (!d->vmm.ranges_gone) {
        ca_expand_teardown(a, d);
        d->vmm.ranges_gone = true;
    }
    ca_lock_release(&d->lock);
}

void ca_device_reset(ca_arena *a, int dev)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return;
    ca_tc_forget(a, dev); /* before the blocks they name go */
    lock_quiet(d);
    /* The runtime destroyed the memory and the events: forget them without calling it. */
    free_device_state(d);
    zero_gauges(&d->st);
    ca_lock_release(&d->lock);
}

static uint64_t reclaim_device(ca_arena *a, ca_device *d)
{
    ca_lock_acquire(&d->lock);
    ca_window_wait_switch(d);
    if (ca_quiet(a)) {
        ca_lock_release(&d->lock);
        return 0;
    }
    ca_quiet_refuses(a, d); /* not quiet: pays what a capture left owed */
    ca_reuse_wait_all(a, d);
    int n;
    ca_segment **list = ca_collect_empty(a, d, true, UINT64_MAX, &n);
    d->st.driver_free_calls += (uint64_t)n;
    ca_window_begin(d);
    uint64_t bytes = ca_release_list(a, d, list, n);
    ca_window_end(d);
    bytes += ca_unmap_free_pages(a, d, UINT64_MAX, true);
    ca_lock_release(&d->lock);
    return bytes;
}

ca_status ca_peer_access(ca_arena *a, int dev, int peer, bool on)
{
    if (dev < 0 || dev >= CA_MAX_DEVICES || peer < 0 || peer >= 64)
        return CA_ERR_INVALID;
    ca_device *d = ca_device_get(a, dev);
    if (!d)
        return CA_ERR_OOM;
    ca_lock_acquire(&d->lock);
    uint64_t bit = (uint64_t)1 << peer;
    d->vmm.peers = on ? d->vmm.peers | bit : d->vmm.peers & ~bit;
    int rc = d->vmm.nranges > 0 && !d->vmm.ranges_gone ? ca_expand_peer_access(a, d, peer, on) : CA_OK;
    ca_lock_release(&d->lock);
    return rc == CA_OK ? CA_OK : CA_ERR_BACKEND;
}

uint64_t ca_reclaim(ca_arena *a, int dev)
{
    ca_return_kept(a, dev);
    uint64_t bytes = 0;
    int n = __atomic_load_n(&a->ndev, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        ca_device *d = ca_device_peek(a, i);
        if (d && (dev < 0 || dev == i))
            bytes += reclaim_device(a, d);
    }
    return bytes;
}

int ca_get_stats(ca_arena *a, int dev, ca_dev_stats *out)
{
    ca_device *d = ca_device_peek(a, dev);
    if (!d)
        return 0;
    ca_lock_acquire(&d->lock);
    *out = d->st;
    /* Every reserved byte is in exactly one state (thread caches' blocks count as allocated
     * until ca_tc_adjust_stats below): checked with the rest. */
    ca_device_check(d);
    /* What one request could get: unmerged neighbours count as the block they would form. */
    ca_device_consolidate(d);
    out->largest_free_block = ca_device_largest_free(d);
    ca_lock_release(&d->lock);
    if (a->tc_on)
        ca_tc_adjust_stats(a, dev, out);
    return 1;
}

uint64_t ca_make_room(ca_arena *a)
{
    uint64_t bytes = ca_reclaim(a, -1);
    if (bytes == 0 && a->cfg.neighbours_api)
        bytes = ca_neighbours_ask(a->cfg.neighbours_api, a->cfg.neighbours_wait_ms);
    return bytes;
}

static bool check_one(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a, (void)ctx;
    ca_device_check(d);
    return false;
}

void ca_arena_check(ca_arena *a) { ca_for_each_device_locked(a, check_one, NULL); }

bool ca_device_idle(ca_arena *a, int dev, uint64_t now_ns, uint64_t idle_ns)
{
    ca_dev_stats s;
    ca_device *d = ca_device_peek(a, dev);
    if (!d || idle_ns == 0 || !ca_get_stats(a, dev, &s))
        return false;
    uint64_t calls = s.alloc_calls + s.free_calls;
    if (calls != d->idle_calls || d->idle_since_ns == 0) {
        d->idle_calls = calls;
        d->idle_since_ns = now_ns;
        return false;
    }
    if (s.cached_bytes + s.pending_bytes == 0 || now_ns - d->idle_since_ns < idle_ns)
        return false;
    d->idle_since_ns = now_ns; /* the next answer after another whole stretch */
    return true;
}

int ca_device_count(ca_arena *a) { return __atomic_load_n(&a->ndev, __ATOMIC_ACQUIRE); }

typedef struct live_walk {
    ca_live_fn fn;
    void *ctx;
} live_walk;

static bool walk_live(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a;
    const live_walk *w = ctx;
    for (size_t s = 0; s < d->live.cap; s++) {
        ca_block *b = d->live.vals[s];
        if (d->live.keys[s] && b && !__atomic_load_n(&b->head.kept, __ATOMIC_RELAXED))
            w->fn(w->ctx, d->id, (void *)b->addr, b->requested, b->t_alloc_ns,
                  b->depth ? (void *const *)b->stack : NULL, b->depth);
    }
    return false;
}

void ca_foreach_live(ca_arena *a, ca_live_fn fn, void *ctx)
{
    live_walk w = {fn, ctx};
    ca_for_each_device_locked(a, walk_live, &w);
}

void ca_arena_destroy(ca_arena *a)
{
    if (!a)
        return;
    ca_tc_arena_gone(a); /* what they keep is allocated in the books: released below */
    for (int i = 0; i < CA_MAX_DEVICES; i++) {
        ca_device *d = a->dev[i];
        if (!d)
            continue;
        /* Unmapping under running work faults, where a cudaFree would have waited. */
        if (d->vmm.nranges > 0 && !d->vmm.ranges_gone) {
            a->be.device_synchronize(a->be.ctx, i);
            ca_expand_teardown(a, d);
        }
        for (int k = 0; k < d->nsegs; k++)
            if (!d->segs[k]->expandable)
                a->be.release(a->be.ctx, i, (void *)ca_seg_driver_base(d->segs[k]));
        ca_reuse_destroy(a, d);
        free_device_state(d);
        free(d);
    }
    pthread_mutex_destroy(&a->devices_lock);
    free(a);
}

void ca_arena_forget(ca_arena *a)
{
    ca_tc_fork_child();
    ca_tc_forget(a, -1);
    for (int i = 0; i < CA_MAX_DEVICES; i++) {
        ca_device *d = a->dev[i];
        if (!d)
            continue;
        free_device_state(d);
        d->lock = (ca_lock)CA_LOCK_INIT;
        ca_window_forget(d);
        ca_dev_stats zero = {0};
        d->st = zero;
    }
    pthread_mutex_init(&a->devices_lock, NULL);
}
