/* Waits: for the whole device, for everything the contract holds, and, before the ladder
 * grows past pending memory, for just the fences that cover the request.
 *
 * Growing avoids a wait, but a loop that frees and allocates faster than its fences complete
 * then grows without bound: each segment is asked for while the previous ones wait. So the
 * cache grows past pending memory only while it holds at most twice the working set (allocated
 * bytes plus the request; CACHEALLOC_RESERVE_FACTOR sets another multiple); beyond that it
 * waits, unlocked, and searches again: for the oldest fences that cover the request's size in
 * pending bytes (the events way), or for the whole device (the device way). docs/arena.md gives
 * the measurements. */
#include <sched.h>
#include <stdlib.h>

#include "reuse/reuse.h"
#include "base/clock.h"

#define WAIT_STACK 32 /* events waited for without a heap array */

/* The host time since t0 went into a wait for events (a synchronization counts its own:
 * ca_reuse_sync): the statistics show what the cache's waits cost the program. */
static void waited(ca_device *d, uint64_t t0)
{
    d->st.fence_wait_ns += ca_now_ns() - t0;
    d->st.fence_waits++;
}

/* Wait for the whole device, unlocked: the fallback when a fence cannot be recorded. It covers
 * the frees and the stream destructions made before it began, not those made meanwhile. Alone,
 * the device's other allocations wait until it returned, as they do for the mode switch. */
static bool wait_device(ca_arena *a, ca_device *d, bool alone)
{
    if (ca_quiet(a))
        return false;
    ca_reuse *r = &d->reuse;
    uint64_t token = r->free_seq, dying = r->dying_stamp;
    r->syncs_running += !alone;
    int rc = ca_reuse_sync(a, d, alone);
    if (!alone) {
        r->syncs_running--;
        __atomic_add_fetch(&r->syncs_done, 1, __ATOMIC_RELEASE);
        if (r->sync_joiners)
            ca_futex_wake_all(&r->syncs_done);
    }
    if (rc != CA_OK)
        return false;
    ca_reuse_synced(d, token);
    for (int i = 0; i < r->ndying; i++)
        if (r->dying[i].stamp <= dying)
            r->dying[i].done = true;
    return true;
}

bool ca_reuse_wait_device(ca_arena *a, ca_device *d) { return wait_device(a, d, false); }

/* Another thread's synchronization is under way: wait for it to return instead of making one
 * more, then search again. Threads that run short together then share one synchronization, as
 * the reference cache's do not. It covers only the frees made before it began: a caller that
 * still finds nothing synchronizes itself at its next round. */
static void join_sync(ca_device *d)
{
    ca_reuse *r = &d->reuse;
    uint32_t seen = r->syncs_done;
    uint64_t t0 = ca_now_ns();
    r->sync_joiners++;
    ca_window_begin(d);
    while (__atomic_load_n(&r->syncs_done, __ATOMIC_ACQUIRE) == seen)
        ca_futex_wait(&r->syncs_done, seen);
    ca_window_end(d);
    r->sync_joiners--;
    d->st.sync_wait_ns += ca_now_ns() - t0;
}

/* What everything the contract holds waits for, copied (so the wait can drop the lock): the
 * destroyed streams' last events, the pools' events in flight, the newest fence's events. */
static int events_to_wait(const ca_device *d, ca_event_t *evs)
{
    const ca_reuse *r = &d->reuse;
    int k = 0;
    for (int i = 0; i < r->ndying; i++)
        evs[k++] = r->dying[i].ev;
    for (int i = 0; i < d->npools; i++)
        if (d->pools[i]->ev_inflight)
            evs[k++] = d->pools[i]->ev;
    if (r->fence_tail)
        for (int i = 0; i < r->fence_tail->nev; i++)
            evs[k++] = r->fence_tail->ev[i];
    return k;
}

bool ca_reuse_wait_all(ca_arena *a, ca_device *d)
{
    ca_reuse *r = &d->reuse;
    if (!ca_reuse_fencing(r, &a->cfg))
        return false;
    if (ca_quiet(a))
        return true;
    if (!ca_reuse_fence(a, d)) {
        ca_reuse_wait_device(a, d);
        return true;
    }
    for (int i = 0; i < d->npools; i++)
        if (!d->pools[i]->ev_inflight && !d->pools[i]->dead &&
            d->pools[i]->last_free_seq > d->pools[i]->safe_seq)
            ca_reuse_async_freed(a, d, d->pools[i]);
    /* Wait unlocked: a handle recycled meanwhile only makes the wait longer, never shorter
     * than the work it covered. */
    int n = r->ndying + d->npools + (r->fence_tail ? r->fence_tail->nev : 0);
    if (n == 0)
        return true;
    ca_event_t *evs = malloc((size_t)n * sizeof *evs);
    if (!evs) {
        ca_reuse_wait_device(a, d);
        return true;
    }
    int k = events_to_wait(d, evs);
    uint64_t t0 = ca_now_ns();
    ca_window_begin(d);
    for (int i = 0; i < k; i++)
        a->be.event_synchronize(a->be.ctx, d->id, evs[i]);
    ca_window_end(d);
    waited(d, t0);
    free(evs);
    ca_reuse_poll_fences(a, d);
    ca_reuse_poll_pools(a, d);
    return true;
}

/* Rounds of waiting before the caller grows after all. Other threads may take what a wait
 * freed (and free it again, pending), or what it freed may be scattered: later rounds wait for
 * every pending block, and the last one stops the device's other allocations while it waits,
 * so a starved thread is served without growing. */
#define ROUND_ALONE 4

/* The working set is the larger of what is allocated now with the request and the most
 * allocated at once in the last whole window of allocations: threads whose blocks come and go
 * make the allocated bytes swing, and a budget on a trough would synchronize where the bound
 * (twice the largest working set plus a segment) lets the cache grow. A program's first window
 * has no such figure yet: its budget is on what is allocated now. */
static bool within_budget(const ca_arena *a, const ca_device *d, size_t rounded)
{
    uint64_t working = d->st.allocated_bytes + rounded;
    if (d->reuse.working_peak[1] > working)
        working = d->reuse.working_peak[1];
    unsigned factor = a->cfg.reserve_factor ? a->cfg.reserve_factor : 2;
    return d->st.reserved_bytes <= factor * working;
}

/* The free number at which the oldest pending blocks add up to need bytes (the newest pending
 * block's when they never do). */
static uint64_t seq_covering(const ca_reuse *r, uint64_t need)
{
    uint64_t sum = 0;
    for (const ca_block *b = r->pend_head; b; b = b->lnext)
        if ((sum += b->size) >= need || !b->lnext)
            return b->free_seq;
    return 0;
}

/* The oldest fence covering seq, or NULL when none does (frees made since the last fence, or
 * one that could not be recorded). */
static ca_fence *fence_covering(const ca_reuse *r, uint64_t seq)
{
    for (ca_fence *f = r->fence_head; f; f = f->next)
        if (f->max_seq >= seq)
            return f;
    return NULL;
}

/* How long a wait polls before it blocks: a fence behind a little queued work completes
 * within it, and asking again while giving the CPU away is answered sooner than a blocking
 * wait is woken, on the simulator's old prices (docs/arena.md, "What the GPU still decides"). */
#define POLL_NS 200000

/* Wait for event ev of device d: polled for up to POLL_NS, then a blocking wait. */
static void wait_event(ca_arena *a, ca_device *d, ca_event_t ev)
{
    uint64_t until = 0;
    for (unsigned tries = 0;; tries++) {
        int r = a->be.event_query(a->be.ctx, d->id, ev);
        if (r > 0)
            return;
        if (r < 0)
            break; /* the blocking wait answers an error as it always did */
        if ((tries & 15) == 0) {
            uint64_t t = ca_now_ns();
            if (until == 0)
                until = t + POLL_NS;
            else if (t >= until)
                break;
        }
        sched_yield();
    }
    a->be.event_synchronize(a->be.ctx, d->id, ev);
}

/* Wait, unlocked, for fence f and for the destroyed streams it trusts to have finished; fences
 * complete in order, so every older one is then complete too. The handles are copied first: one
 * recycled meanwhile only lengthens the wait, and completion is decided by the poll after it,
 * never by the wait. True when f was found complete. */
static bool wait_fence(ca_arena *a, ca_device *d, const ca_fence *f)
{
    const ca_reuse *r = &d->reuse;
    ca_event_t stack[WAIT_STACK], *evs = stack;
    int n = f->nev + r->ndying;
    if (n > WAIT_STACK && !(evs = malloc((size_t)n * sizeof *evs)))
        return false;
    uint64_t upto = f->max_seq;
    int k = 0;
    for (int i = 0; i < f->nev; i++)
        evs[k++] = f->ev[i];
    for (int i = 0; i < r->ndying; i++)
        if (!r->dying[i].done && r->dying[i].stamp <= f->dying_upto)
            evs[k++] = r->dying[i].ev;
    uint64_t t0 = ca_now_ns();
    ca_window_begin(d);
    for (int i = 0; i < k; i++)
        wait_event(a, d, evs[i]);
    ca_window_end(d);
    waited(d, t0);
    if (evs != stack)
        free(evs);
    ca_reuse_poll_fences(a, d);
    return !r->fence_head || r->fence_head->max_seq > upto;
}

/* Called with round 0, 1, ... after each failed search of the ladder: true when it waited
 * (search again), false when growing is the answer. */
bool ca_reuse_wait(ca_arena *a, ca_device *d, size_t rounded, int round)
{
    const ca_reuse *r = &d->reuse;
    if (!ca_reuse_fencing(r, &a->cfg) || !r->pend_head || round > ROUND_ALONE ||
        within_budget(a, d, rounded) || ca_reuse_hushed(r, ca_quiet(a)))
        return false;
    if (round == ROUND_ALONE) {
        wait_device(a, d, true);
        return true;
    }
    if (ca_reuse_way(&a->cfg, r) == CA_FENCES_DEVICE) {
        if (r->syncs_running && round == 0)
            join_sync(d);
        else
            wait_device(a, d, false); /* every pending block at once, no event recorded */
        return true;
    }
    ca_fence *f = fence_covering(r, seq_covering(r, round == 0 ? rounded : UINT64_MAX));
    /* A device synchronization waits no longer than a fence recorded now would. */
    if (!f || !wait_fence(a, d, f))
        wait_device(a, d, false);
    return true;
}
