/* The reuse contract's bookkeeping: fences for the plain API, one in-flight event per async
 * pool for cross-stream reuse, and completion by the program's own device synchronization.
 *
 * Every free on a device takes the next number of a device-wide sequence. A pending block
 * waits for a fence whose number covers it; an async pool's blocks are safe for other streams
 * up to the number its last completed event covered. Fences are recorded on the same streams in
 * order, so they complete in order and polling stops at the first incomplete one. */
#include <stdlib.h>

#include "arena_internal.h"
#include "grow.h"
#include "ca_assert.h"

bool ca_segment_safe(const ca_arena *a, const ca_device *d, const ca_segment *seg)
{
    const ca_pool *p = seg->pool;
    if (!ca_fencing(a, d) || p->plain || p->dead)
        return true;
    uint64_t safe = p->safe_seq > d->synced_seq ? p->safe_seq : d->synced_seq;
    return seg->first->free_seq <= safe;
}

ca_event_t ca_event_get(ca_arena *a, ca_device *d)
{
    if (d->nevents > 0)
        return d->events[--d->nevents];
    ca_event_t ev = NULL;
    if (a->be.event_create(a->be.ctx, d->id, &ev) != CA_OK)
        return NULL;
    return ev;
}

void ca_event_put(ca_device *d, ca_event_t ev)
{
    ca_event_t *n = ca_grow(d->events, d->nevents, &d->cap_events, sizeof *n, 16);
    if (!n)
        return; /* leaks one event handle rather than failing a free */
    d->events = n;
    d->events[d->nevents++] = ev;
}

void ca_pend(ca_device *d, ca_block *b)
{
    b->state = BLOCK_PENDING;
    b->lnext = NULL;
    b->lprev = d->pend_tail;
    if (d->pend_tail)
        d->pend_tail->lnext = b;
    else
        d->pend_head = b;
    d->pend_tail = b;
    d->unfenced_max_seq = b->free_seq;
    d->st.pending_bytes += b->size;
}

/* Pending blocks freed up to seq become free blocks of their pools. */
static void release_pending(ca_device *d, uint64_t seq)
{
    while (d->pend_head && d->pend_head->free_seq <= seq) {
        ca_block *b = d->pend_head;
        d->pend_head = b->lnext;
        if (d->pend_head)
            d->pend_head->lprev = NULL;
        else
            d->pend_tail = NULL;
        b->lnext = b->lprev = NULL;
        ca_assert(b->state == BLOCK_PENDING && d->st.pending_bytes >= b->size);
        d->st.pending_bytes -= b->size;
        b->free_seq = 0; /* its fence completed: safe for every stream */
        ca_block_free(d, b);
    }
}

static uint64_t fenced_upto(const ca_device *d)
{
    return d->fence_tail ? d->fence_tail->max_seq : 0;
}

bool ca_fence_record(ca_arena *a, ca_device *d)
{
    if (ca_hushed(a, d) || d->streams_lost)
        return false;
    if (!d->pend_tail || d->unfenced_max_seq <= fenced_upto(d) ||
        d->unfenced_max_seq <= d->synced_seq)
        return true;
    int want = 1 + d->nstreams;
    ca_fence *f = malloc(sizeof *f + (size_t)want * sizeof(ca_event_t));
    if (!f)
        return false;
    f->next = NULL;
    f->max_seq = d->unfenced_max_seq;
    f->dying_upto = d->dying_stamp;
    f->nev = 0;
    /* The legacy stream's event also covers every blocking stream, per-thread ones included.
     * A created stream found idle now has finished everything queued before these frees: it
     * needs no event, and an event costs the driver more than a query (an idle stream is the
     * common case beside a busy one). A fence missing one stream that was busy would complete
     * too early: all those events or no fence. */
    for (int i = -1; i < d->nstreams; i++) {
        ca_stream_t s = i < 0 ? CA_STREAM_LEGACY : d->streams[i];
        if (i >= 0 && a->be.stream_query && a->be.stream_query(a->be.ctx, d->id, s) > 0)
            continue;
        ca_event_t ev = ca_event_get(a, d);
        if (!ev || a->be.event_record(a->be.ctx, d->id, ev, s) != CA_OK) {
            if (ev)
                ca_event_put(d, ev);
            while (f->nev > 0)
                ca_event_put(d, f->ev[--f->nev]);
            free(f);
            return false;
        }
        f->ev[f->nev++] = ev;
    }
    d->st.fences++;
    if (d->fence_tail)
        d->fence_tail->next = f;
    else
        d->fence_head = f;
    d->fence_tail = f;
    return true;
}

/* A fence recorded after a stream was destroyed has no event on it: it can be trusted only
 * once that stream's last event completed. Drops the entries that completed; true when every
 * stream destroyed up to stamp upto is done. */
static bool dying_done(ca_arena *a, ca_device *d, uint64_t upto)
{
    bool all = true;
    int kept = 0;
    for (int i = 0; i < d->ndying; i++) {
        ca_dying *x = &d->dying[i];
        if (x->done || a->be.event_query(a->be.ctx, d->id, x->ev) > 0) {
            ca_event_put(d, x->ev);
            continue;
        }
        if (x->stamp <= upto)
            all = false;
        d->dying[kept++] = *x;
    }
    d->ndying = kept;
    return all;
}

static void fence_pop(ca_device *d)
{
    ca_fence *f = d->fence_head;
    for (int i = 0; i < f->nev; i++)
        ca_event_put(d, f->ev[i]);
    d->fence_head = f->next;
    if (!d->fence_head)
        d->fence_tail = NULL;
    free(f);
}

bool ca_fence_poll(ca_arena *a, ca_device *d)
{
    bool any = false;
    if (ca_hushed(a, d))
        return false;
    while (d->fence_head) {
        ca_fence *f = d->fence_head;
        if (!dying_done(a, d, f->dying_upto))
            return any;
        for (; f->nev > 0; f->nev--) {
            if (a->be.event_query(a->be.ctx, d->id, f->ev[f->nev - 1]) <= 0)
                return any;
            ca_event_put(d, f->ev[f->nev - 1]);
        }
        release_pending(d, f->max_seq);
        fence_pop(d);
        any = true;
    }
    return any;
}

static void pool_poll(ca_arena *a, ca_device *d, ca_pool *p)
{
    if (p->ev_inflight && a->be.event_query(a->be.ctx, d->id, p->ev) > 0) {
        p->ev_inflight = false;
        if (p->ev_seq > p->safe_seq)
            p->safe_seq = p->ev_seq;
    }
    if (!p->ev_inflight && !p->dead && p->last_free_seq > p->safe_seq) {
        /* An idle stream has finished the work of every free made on it: no event needed. */
        if (a->be.stream_query && a->be.stream_query(a->be.ctx, d->id, p->stream) > 0) {
            p->safe_seq = p->last_free_seq;
            return;
        }
        /* An idle stream passes a fresh event at once: look again before growing. */
        ca_async_freed(a, d, p);
        if (p->ev_inflight && a->be.event_query(a->be.ctx, d->id, p->ev) > 0) {
            p->ev_inflight = false;
            p->safe_seq = p->ev_seq;
        }
    }
}

/* A destroyed stream's pool that owns no segment any more is forgotten, so that programs
 * creating and destroying streams in a loop do not grow the list every search walks. Never
 * while a thread is in an unlocked window: it may hold the pool. */
static bool pool_drop(ca_arena *a, ca_device *d, ca_pool *p)
{
    if (!p->dead || p->nsegs > 0 || d->windows > 0)
        return false;
    if (p->ev_inflight && a->be.event_query(a->be.ctx, d->id, p->ev) <= 0)
        return false; /* its event is still queued: keep the handle out of reuse */
    if (p->ev)
        ca_event_put(d, p->ev);
    if (d->last_pool == p)
        d->last_pool = NULL;
    free(p);
    return true;
}

void ca_pools_poll(ca_arena *a, ca_device *d)
{
    if (ca_hushed(a, d))
        return;
    int kept = 0;
    for (int i = 0; i < d->npools; i++) {
        ca_pool *p = d->pools[i];
        pool_poll(a, d, p);
        if (!pool_drop(a, d, p))
            d->pools[kept++] = p;
    }
    d->npools = kept;
}

void ca_async_freed(ca_arena *a, ca_device *d, ca_pool *p)
{
    if (!ca_fencing(a, d) || p->ev_inflight || ca_hushed(a, d))
        return; /* quiet: the pool's blocks wait for its next free or poll after the capture */
    if (!p->ev) {
        p->ev = ca_event_get(a, d);
        if (!p->ev)
            return;
    }
    /* Fails for a stream this thread cannot name (another thread's per-thread stream): the
     * blocks then wait for that thread's next free or for a device synchronization. */
    if (a->be.event_record(a->be.ctx, d->id, p->ev, p->stream) == CA_OK) {
        p->ev_inflight = true;
        p->ev_seq = p->last_free_seq;
    }
}

void ca_complete_upto(ca_device *d, uint64_t seq)
{
    if (seq > d->synced_seq)
        d->synced_seq = seq;
    while (d->fence_head && d->fence_head->max_seq <= seq)
        fence_pop(d);
    release_pending(d, seq);
    for (int i = 0; i < d->npools; i++)
        if (d->pools[i]->safe_seq < seq)
            d->pools[i]->safe_seq = seq;
}

/* Wait for the whole device, unlocked: the fallback when a fence cannot be recorded. It covers
 * the frees and the stream destructions made before it began, not those made meanwhile. Alone,
 * the device's other allocations wait until it returned, as they do for the mode switch. */
static bool wait_device(ca_arena *a, ca_device *d, bool alone)
{
    if (ca_quiet(a))
        return false;
    uint64_t token = d->free_seq, dying = d->dying_stamp;
    d->st.device_syncs++;
    if (alone)
        __atomic_store_n(&d->switching, 1, __ATOMIC_RELEASE);
    ca_window_begin(d);
    int rc = a->be.device_synchronize(a->be.ctx, d->id);
    if (alone) {
        /* Not ca_window_end: it would wait for this very switch. */
        ca_lock_acquire(&d->lock);
        __atomic_store_n(&d->switching, 0, __ATOMIC_RELEASE);
        ca_futex_wake_all(&d->switching);
        if (--d->windows == 0)
            ca_futex_wake_all(&d->windows);
    } else {
        ca_window_end(d);
    }
    if (rc == CA_OK) {
        ca_complete_upto(d, token);
        for (int i = 0; i < d->ndying; i++)
            if (d->dying[i].stamp <= dying)
                d->dying[i].done = true;
    }
    return rc == CA_OK;
}

bool ca_wait_device(ca_arena *a, ca_device *d) { return wait_device(a, d, false); }

bool ca_wait_device_alone(ca_arena *a, ca_device *d) { return wait_device(a, d, true); }

void ca_wait_all(ca_arena *a, ca_device *d)
{
    if (ca_quiet(a))
        return;
    if (a->cfg.fences == CA_FENCES_DEVICE || !ca_fence_record(a, d)) {
        ca_wait_device(a, d);
        return;
    }
    for (int i = 0; i < d->npools; i++)
        if (!d->pools[i]->ev_inflight && !d->pools[i]->dead &&
            d->pools[i]->last_free_seq > d->pools[i]->safe_seq)
            ca_async_freed(a, d, d->pools[i]);
    /* Copy what to wait for, then wait unlocked: a handle recycled meanwhile only makes the
     * wait longer, never shorter than the work it covered. */
    int n = d->ndying + d->npools + (d->fence_tail ? d->fence_tail->nev : 0);
    if (n == 0)
        return;
    ca_event_t *evs = malloc((size_t)n * sizeof *evs);
    if (!evs) {
        ca_wait_device(a, d);
        return;
    }
    int k = 0;
    for (int i = 0; i < d->ndying; i++)
        evs[k++] = d->dying[i].ev;
    for (int i = 0; i < d->npools; i++)
        if (d->pools[i]->ev_inflight)
            evs[k++] = d->pools[i]->ev;
    if (d->fence_tail)
        for (int i = 0; i < d->fence_tail->nev; i++)
            evs[k++] = d->fence_tail->ev[i];
    ca_window_begin(d);
    for (int i = 0; i < k; i++)
        a->be.event_synchronize(a->be.ctx, d->id, evs[i]);
    ca_window_end(d);
    free(evs);
    ca_fence_poll(a, d);
    ca_pools_poll(a, d);
}
