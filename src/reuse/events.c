/* The events the contract records: a device's idle event handles, kept for reuse, and each
 * stream-ordered pool's one event in flight, which makes the pool's frees safe for the other
 * streams once it completed (docs/arena.md, "Pools and the reuse contract"). Also the end of
 * a device's bookkeeping: its handles destroyed, or forgotten after a reset. */
#include <stdlib.h>

#include "reuse/reuse.h"
#include "base/grow.h"

ca_event_t ca_reuse_event_get(ca_arena *a, ca_device *d)
{
    ca_reuse *r = &d->reuse;
    if (r->nevents > 0)
        return r->events[--r->nevents];
    ca_event_t ev = NULL;
    if (a->be.event_create(a->be.ctx, d->id, &ev) != CA_OK)
        return NULL;
    return ev;
}

void ca_reuse_event_put(ca_device *d, ca_event_t ev)
{
    ca_reuse *r = &d->reuse;
    ca_event_t *n = ca_grow(r->events, r->nevents, &r->cap_events, sizeof *n, 16);
    if (!n)
        return; /* leaks one event handle rather than failing a free */
    r->events = n;
    r->events[r->nevents++] = ev;
}

void ca_reuse_pool_new(ca_device *d, ca_pool *p)
{
    p->safe_seq = d->reuse.free_seq;
}

void ca_reuse_async_freed(ca_arena *a, ca_device *d, ca_pool *p)
{
    if (!ca_reuse_fencing(&d->reuse, &a->cfg) || p->ev_inflight ||
        ca_reuse_hushed(&d->reuse, ca_quiet(a)))
        return; /* quiet: the pool's blocks wait for its next free or poll after the capture */
    if (!p->ev) {
        p->ev = ca_reuse_event_get(a, d);
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
        ca_reuse_async_freed(a, d, p);
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
    if (!p->dead || p->nsegs > 0 || d->reuse.windows > 0)
        return false;
    if (p->ev_inflight && a->be.event_query(a->be.ctx, d->id, p->ev) <= 0)
        return false; /* its event is still queued: keep the handle out of reuse */
    if (p->ev)
        ca_reuse_event_put(d, p->ev);
    if (d->last_pool == p)
        d->last_pool = NULL;
    free(p);
    return true;
}

void ca_reuse_poll_pools(ca_arena *a, ca_device *d)
{
    if (ca_reuse_hushed(&d->reuse, ca_quiet(a)))
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

void ca_reuse_destroy(ca_arena *a, ca_device *d)
{
    const ca_reuse *r = &d->reuse;
    for (const ca_fence *f = r->fence_head; f; f = f->next)
        for (int k = 0; k < f->nev; k++)
            a->be.event_destroy(a->be.ctx, d->id, f->ev[k]);
    for (int k = 0; k < d->npools; k++)
        if (d->pools[k]->ev)
            a->be.event_destroy(a->be.ctx, d->id, d->pools[k]->ev);
    for (int k = 0; k < r->ndying; k++)
        a->be.event_destroy(a->be.ctx, d->id, r->dying[k].ev);
    for (int k = 0; k < r->nevents; k++)
        a->be.event_destroy(a->be.ctx, d->id, r->events[k]);
}

void ca_reuse_forget(ca_device *d)
{
    ca_reuse *r = &d->reuse;
    for (ca_fence *f = r->fence_head, *n; f; f = n) {
        n = f->next;
        free(f);
    }
    r->fence_head = r->fence_tail = NULL;
    r->pend_head = r->pend_tail = NULL;
    r->unfenced_max_seq = 0;
    free(r->streams);
    r->streams = NULL;
    r->nstreams = r->cap_streams = 0;
    r->streams_lost = false;
    free(r->dying);
    r->dying = NULL;
    r->ndying = r->cap_dying = 0;
    free(r->events);
    r->events = NULL;
    r->nevents = r->cap_events = 0;
    r->fenced = false;
}
