/* Wait or grow: what the ladder does when the memory that would serve a request is pending.
 *
 * Growing avoids a wait, but a loop that frees and allocates faster than its fences complete
 * then grows without bound: each segment is asked for while the previous ones wait. So the
 * cache grows past pending memory only while it holds at most twice the working set (allocated
 * bytes plus the request); beyond that it waits, unlocked, for the oldest fences that cover the
 * request's size in pending bytes and searches again. docs/arena.md gives the measurements. */
#include <sched.h>
#include <stdlib.h>

#include "arena_internal.h"
#include "clock.h"

#define WAIT_STACK 32 /* events waited for without a heap array */

/* Rounds of waiting before the caller grows after all. Other threads may take what a wait
 * freed (and free it again, pending), or what it freed may be scattered: later rounds wait for
 * every pending block, and the last one stops the device's other allocations while it waits,
 * so a starved thread is served without growing. */
#define ROUND_ALONE 4

static bool within_budget(const ca_device *d, size_t rounded)
{
    uint64_t working = d->st.allocated_bytes + rounded;
    return d->st.reserved_bytes <= 2 * working;
}

/* The free number at which the oldest pending blocks add up to need bytes (the newest pending
 * block's when they never do). */
static uint64_t seq_covering(const ca_device *d, uint64_t need)
{
    uint64_t sum = 0;
    for (const ca_block *b = d->pend_head; b; b = b->lnext)
        if ((sum += b->size) >= need || !b->lnext)
            return b->free_seq;
    return 0;
}

/* The oldest fence covering seq, or NULL when none does (frees made since the last fence, or
 * one that could not be recorded). */
static ca_fence *fence_covering(const ca_device *d, uint64_t seq)
{
    for (ca_fence *f = d->fence_head; f; f = f->next)
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
    ca_event_t stack[WAIT_STACK], *evs = stack;
    int n = f->nev + d->ndying;
    if (n > WAIT_STACK && !(evs = malloc((size_t)n * sizeof *evs)))
        return false;
    uint64_t upto = f->max_seq;
    int k = 0;
    for (int i = 0; i < f->nev; i++)
        evs[k++] = f->ev[i];
    for (int i = 0; i < d->ndying; i++)
        if (!d->dying[i].done && d->dying[i].stamp <= f->dying_upto)
            evs[k++] = d->dying[i].ev;
    ca_window_begin(d);
    for (int i = 0; i < k; i++)
        wait_event(a, d, evs[i]);
    ca_window_end(d);
    if (evs != stack)
        free(evs);
    ca_fence_poll(a, d);
    return !d->fence_head || d->fence_head->max_seq > upto;
}

bool ca_wait_instead_of_grow(ca_arena *a, ca_device *d, size_t rounded, int round)
{
    if (!ca_fencing(a, d) || !d->pend_head || round > ROUND_ALONE ||
        within_budget(d, rounded) || ca_hushed(a, d))
        return false;
    if (round == ROUND_ALONE) {
        ca_wait_device_alone(a, d);
        return true;
    }
    if (a->cfg.fences == CA_FENCES_DEVICE) {
        ca_wait_device(a, d); /* every pending block at once, no event recorded */
        return true;
    }
    ca_fence *f = fence_covering(d, seq_covering(d, round == 0 ? rounded : UINT64_MAX));
    /* A device synchronization waits no longer than a fence recorded now would. */
    if (!f || !wait_fence(a, d, f))
        ca_wait_device(a, d);
    return true;
}
