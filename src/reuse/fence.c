/* Fences and pending blocks: the plain API's half of the contract, and completion by a device
 * synchronization.
 *
 * Every free on a device takes the next number of a device-wide sequence. A pending block
 * waits for a fence whose number covers it; an async pool's blocks are safe for other streams
 * up to the number its last completed event covered (reuse/events.c). Fences are recorded on
 * the same streams in order, so they complete in order and polling stops at the first
 * incomplete one. */
#include <stdlib.h>

#include "reuse/reuse.h"
#include "base/ca_assert.h"

bool ca_reuse_segment_safe(const ca_arena *a, const ca_device *d, const ca_segment *seg)
{
    const ca_pool *p = seg->pool;
    if (!ca_reuse_fencing(&d->reuse, &a->cfg) || p->plain || p->dead)
        return true;
    uint64_t safe = p->safe_seq > d->reuse.synced_seq ? p->safe_seq : d->reuse.synced_seq;
    return seg->first->free_seq <= safe;
}

bool ca_reuse_block_idle(const ca_device *d, const ca_block *b)
{
    return b->free_seq <= d->reuse.synced_seq;
}

/* b waits at the tail of the pending list, which stays in the order of the frees. */
static void pend(ca_device *d, ca_block *b)
{
    ca_reuse *r = &d->reuse;
    ca_assert(!r->pend_tail || r->pend_tail->free_seq <= b->free_seq);
    b->state = BLOCK_PENDING;
    b->lnext = NULL;
    b->lprev = r->pend_tail;
    if (r->pend_tail)
        r->pend_tail->lnext = b;
    else
        r->pend_head = b;
    r->pend_tail = b;
    r->unfenced_max_seq = b->free_seq;
    d->st.pending_bytes += b->size;
}

bool ca_reuse_pend(ca_arena *a, ca_device *d, ca_block *b, ca_stream_t s, unsigned api,
                   bool idle)
{
    /* CACHEALLOC_POOL=none sends only quiet frees here: the segment goes back after the
     * capture, once the synchronization owed proved it idle. */
    if (a->cfg.pool == CA_POOL_NONE)
        d->reuse.sync_owed = true;
    /* A stream the arena was never told about ends the single-stream mode here too. */
    if (api == CA_API_ASYNC)
        ca_reuse_stream_used(a, d, s);
    b->free_seq = ++d->reuse.free_seq;
    ca_pool *p = b->seg->pool;
    bool same_stream = api == CA_API_ASYNC && !p->plain && !p->dead && p->stream == s;
    if (same_stream) {
        p->last_free_seq = b->free_seq;
        if (!p->ev_inflight) /* one event at a time covers every free before it */
            ca_reuse_async_freed(a, d, p);
        return false;
    }
    if (idle || (!ca_reuse_fencing(&d->reuse, &a->cfg) && !d->reuse.sync_owed))
        return false;
    pend(d, b);
    return true;
}

void ca_reuse_pool_retired(ca_arena *a, ca_device *d, ca_pool *p)
{
    if (!ca_reuse_fencing(&d->reuse, &a->cfg))
        return;
    for (int small = 0; small < 2; small++) {
        ca_bins *bins = ca_pool_bins(p, small);
        for (uint32_t c = 0; c < CA_BIN_COUNT; c++) {
            while (bins->head[c]) {
                ca_block *b = bins->head[c];
                ca_block_unfree(d, b);
                b->free_seq = ++d->reuse.free_seq;
                pend(d, b);
            }
        }
    }
}

/* Pending blocks freed up to seq become free blocks of their pools. */
static void release_pending(ca_device *d, uint64_t seq)
{
    ca_reuse *r = &d->reuse;
    while (r->pend_head && r->pend_head->free_seq <= seq) {
        ca_block *b = r->pend_head;
        r->pend_head = b->lnext;
        if (r->pend_head)
            r->pend_head->lprev = NULL;
        else
            r->pend_tail = NULL;
        b->lnext = b->lprev = NULL;
        ca_assert(b->state == BLOCK_PENDING && d->st.pending_bytes >= b->size);
        d->st.pending_bytes -= b->size;
        ca_reuse_stamp_fresh(&b->free_seq); /* its fence completed */
        ca_block_free(d, b);
    }
}

static uint64_t fenced_upto(const ca_reuse *r)
{
    return r->fence_tail ? r->fence_tail->max_seq : 0;
}

/* An event on every stream of the fence set that may still hold work queued before the frees
 * f covers; false, with f's events given back, when one could not be made. */
static bool fence_events(ca_arena *a, ca_device *d, ca_fence *f)
{
    const ca_reuse *r = &d->reuse;
    /* The legacy stream's event also covers every blocking stream, per-thread ones included.
     * A created stream found idle now has finished everything queued before these frees: it
     * needs no event, and an event costs the driver more than a query (an idle stream is the
     * common case beside a busy one). A fence missing one stream that was busy would complete
     * too early: all those events or no fence. */
    for (int i = -1; i < r->nstreams; i++) {
        ca_stream_t s = i < 0 ? CA_STREAM_LEGACY : r->streams[i];
        if (i >= 0 && a->be.stream_query && a->be.stream_query(a->be.ctx, d->id, s) > 0)
            continue;
        ca_event_t ev = ca_reuse_event_get(a, d);
        if (!ev || a->be.event_record(a->be.ctx, d->id, ev, s) != CA_OK) {
            if (ev)
                ca_reuse_event_put(d, ev);
            while (f->nev > 0)
                ca_reuse_event_put(d, f->ev[--f->nev]);
            return false;
        }
        f->ev[f->nev++] = ev;
    }
    return true;
}

bool ca_reuse_fence(ca_arena *a, ca_device *d)
{
    ca_reuse *r = &d->reuse;
    if (!ca_reuse_fencing(r, &a->cfg))
        return true;
    /* The device way (CACHEALLOC_FENCES=device, or learned) records none: pending blocks wait
     * for a device synchronization. */
    if (ca_reuse_way(&a->cfg, r) != CA_FENCES_EVENTS || ca_reuse_hushed(r, ca_quiet(a)) ||
        r->streams_lost)
        return false;
    if (!r->pend_tail || r->unfenced_max_seq <= fenced_upto(r) ||
        r->unfenced_max_seq <= r->synced_seq)
        return true;
    ca_fence *f = malloc(sizeof *f + (size_t)(1 + r->nstreams) * sizeof(ca_event_t));
    if (!f)
        return false;
    f->next = NULL;
    f->max_seq = r->unfenced_max_seq;
    f->dying_upto = r->dying_stamp;
    f->nev = 0;
    if (!fence_events(a, d, f)) {
        free(f);
        return false;
    }
    d->st.fences++;
    /* Fences complete in the order they were recorded, which must be that of their frees. */
    ca_assert(f->max_seq > fenced_upto(r));
    if (r->fence_tail)
        r->fence_tail->next = f;
    else
        r->fence_head = f;
    r->fence_tail = f;
    return true;
}

/* A fence recorded after a stream was destroyed has no event on it: it can be trusted only
 * once that stream's last event completed. Drops the entries that completed; true when every
 * stream destroyed up to stamp upto is done. */
static bool dying_done(ca_arena *a, ca_device *d, uint64_t upto)
{
    ca_reuse *r = &d->reuse;
    bool all = true;
    int kept = 0;
    for (int i = 0; i < r->ndying; i++) {
        ca_dying *x = &r->dying[i];
        if (x->done || a->be.event_query(a->be.ctx, d->id, x->ev) > 0) {
            ca_reuse_event_put(d, x->ev);
            continue;
        }
        if (x->stamp <= upto)
            all = false;
        r->dying[kept++] = *x;
    }
    r->ndying = kept;
    return all;
}

static void fence_pop(ca_device *d)
{
    ca_reuse *r = &d->reuse;
    ca_fence *f = r->fence_head;
    for (int i = 0; i < f->nev; i++)
        ca_reuse_event_put(d, f->ev[i]);
    r->fence_head = f->next;
    if (!r->fence_head)
        r->fence_tail = NULL;
    free(f);
}

bool ca_reuse_poll_fences(ca_arena *a, ca_device *d)
{
    ca_reuse *r = &d->reuse;
    bool any = false;
    if (ca_reuse_hushed(r, ca_quiet(a)))
        return false;
    while (r->fence_head) {
        ca_fence *f = r->fence_head;
        if (!dying_done(a, d, f->dying_upto))
            return any;
        for (; f->nev > 0; f->nev--) {
            if (a->be.event_query(a->be.ctx, d->id, f->ev[f->nev - 1]) <= 0)
                return any;
            ca_reuse_event_put(d, f->ev[f->nev - 1]);
        }
        release_pending(d, f->max_seq);
        fence_pop(d);
        any = true;
    }
    return any;
}

void ca_reuse_poll(ca_arena *a, ca_device *d)
{
    if (!ca_reuse_fencing(&d->reuse, &a->cfg))
        return;
    ca_reuse_poll_fences(a, d);
    ca_reuse_poll_pools(a, d);
}

void ca_reuse_synced(ca_device *d, uint64_t token)
{
    ca_reuse *r = &d->reuse;
    /* A token is a free number taken before the synchronization: never one still to come. */
    ca_assert(token <= r->free_seq);
    if (token > r->synced_seq)
        r->synced_seq = token;
    while (r->fence_head && r->fence_head->max_seq <= token)
        fence_pop(d);
    release_pending(d, token);
    for (int i = 0; i < d->npools; i++)
        if (d->pools[i]->safe_seq < token)
            d->pools[i]->safe_seq = token;
}

#ifdef CA_DEBUG
void ca_reuse_check(const ca_device *d)
{
    const ca_reuse *r = &d->reuse;
    ca_assert_expensive(r->synced_seq <= r->free_seq);
    /* The pending list: pending blocks, in the order of their frees, none covered by a
     * synchronization already (it would have freed them). */
    uint64_t seq = 0;
    for (const ca_block *b = r->pend_head; b; b = b->lnext) {
        ca_assert_expensive(b->state == BLOCK_PENDING);
        ca_assert_expensive(b->free_seq >= seq && b->free_seq > r->synced_seq && b->free_seq <= r->free_seq);
        seq = b->free_seq;
        ca_assert_expensive(b->lnext || b == r->pend_tail);
    }
    /* Fences: in ascending order of the frees they cover, each past the last synchronization. */
    seq = r->synced_seq;
    for (const ca_fence *f = r->fence_head; f; f = f->next) {
        ca_assert_expensive(f->max_seq > seq && f->max_seq <= r->free_seq);
        ca_assert_expensive(f->dying_upto <= r->dying_stamp);
        seq = f->max_seq;
        ca_assert_expensive(f->next || f == r->fence_tail);
    }
    /* Pools' events: no number past the last free, an event in flight covers frees made. */
    for (int i = -1; i < d->npools; i++) {
        const ca_pool *p = i < 0 ? &d->plain : d->pools[i];
        ca_assert_expensive(p->safe_seq <= r->free_seq && p->last_free_seq <= r->free_seq);
        ca_assert_expensive(!p->ev_inflight || p->ev_seq <= p->last_free_seq);
    }
    /* The watched streams: in the order they were destroyed. */
    for (int i = 1; i < r->ndying; i++)
        ca_assert_expensive(r->dying[i - 1].stamp < r->dying[i].stamp);
    ca_assert_expensive(r->nstreams <= r->cap_streams && r->nevents <= r->cap_events);
}
#endif
