/* The reuse contract (docs/arena.md, "Pools and the reuse contract"): a block freed with
 * cudaFree is not handed out again before every stream of its device has passed the free, and
 * one freed on a stream reaches another stream only once an event recorded after the free has
 * completed. Each device keeps what the contract needs in one ca_reuse; the files of
 * src/reuse/ hold its logic, and the rest of the arena asks them through this header: the
 * ladder (arena.c) at its rungs, the free path at every free, the stream doors, and the files
 * that give memory back (whether a block or segment is safe, what a synchronization covered).
 * Those verbs are where the policy lives: when fences are recorded (ca_reuse_fence), what a
 * free waits for (ca_reuse_pend), when to wait rather than grow (ca_reuse_wait), when the
 * device is synchronized (ca_reuse_sync).
 *
 * Layering (suite structure checks it): the module is below the ladder (src/arena/) and above
 * the blocks, segments, bins, map and lock (src/block/); within it price.c is lowest (it calls
 * nothing), then switch.c, events.c, fence.c, and wait.c and streams.c on top. Its state,
 * embedded in each device, is defined below it (block/reuse_state.h). */
#ifndef CACHEALLOC_REUSE_H
#define CACHEALLOC_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "block/block.h"
#include "base/clock.h"

/* The verbs. Under the device lock unless said otherwise; those that wait drop it meanwhile
 * (an unlocked window), so whatever the caller found before may have changed after. */

/* reuse/price.c: the learned policy. Pure functions of a ca_reuse_price, below the rest of the
 * module (it calls nothing of the arena), so that the decision is tested with injected times. */
/* A price list that knows nothing yet: the device way in force, the events way to be tried. */
void ca_price_init(ca_reuse_price *p);
/* CA_PRICE_EPOCH allocations were served by now_ns, the device's growths counter at growths:
 * the epoch ends, and the way may change. */
void ca_price_epoch(ca_reuse_price *p, uint64_t now_ns, uint64_t growths);
/* The cheaper of the two ways, given what an allocation cost under each (0: unknown) and the
 * way in force. */
ca_fences_kind ca_price_cheaper(const uint64_t per_alloc_ns[2], ca_fences_kind in_force);

/* The way d knows plain frees are past the device now: the configured one, or the learned one. */
static inline ca_fences_kind ca_reuse_way(const ca_config *cfg, const ca_reuse *r)
{
    return cfg->fences == CA_FENCES_AUTO ? (ca_fences_kind)r->price.way : cfg->fences;
}

/* The allocations the current epoch lasts: a try, the settling of a new way before it is timed,
 * and every epoch until both ways have a figure are an eighth of an epoch (the way that lost
 * may be many times slower, and a short program learns early). */
static inline uint32_t ca_price_due(const ca_reuse_price *p)
{
    bool learning = !p->per_alloc_ns[0] || !p->per_alloc_ns[1];
    return p->trying || !p->epoch_t0 || learning ? CA_PRICE_EPOCH / 8 : CA_PRICE_EPOCH;
}

/* An allocation of device d was served: once fenced, the budget's working set takes it in, and
 * under the learned policy an epoch may end. */
static inline void ca_reuse_served(const ca_config *cfg, ca_device *d)
{
    ca_reuse *r = &d->reuse;
    if (!r->fenced)
        return;
    uint64_t now = d->st.allocated_bytes;
    if (now > r->working_peak[0])
        r->working_peak[0] = now;
    if (++r->working_served >= CA_WORKING_WINDOW) {
        r->working_peak[1] = r->working_peak[0];
        r->working_peak[0] = now;
        r->working_served = 0;
    }
    if (cfg->fences == CA_FENCES_AUTO && ++r->price.served >= ca_price_due(&r->price))
        ca_price_epoch(&r->price, ca_now_ns(), d->st.growths);
}

/* reuse/switch.c: the switch to fences, and the contract's synchronizations. */
/* Synchronize the device in a window (alone: the device's other allocations wait); its rc. */
int ca_reuse_sync(ca_arena *a, ca_device *d, bool alone);
/* Leave the single-stream mode: one device synchronization, owed instead when quiet. */
void ca_reuse_switch(ca_arena *a, ca_device *d);
/* A stream beside the default ones exists on d: single-stream mode ends (ca_reuse_switch). */
void ca_reuse_other_stream(ca_arena *a, ca_device *d);
/* A stream-ordered call named s: any stream but the legacy one ends single-stream mode. */
void ca_reuse_stream_used(ca_arena *a, ca_device *d, ca_stream_t s);

/* reuse/events.c: event handles, and each stream-ordered pool's event in flight. */
/* An idle event handle of d, created when none is kept; NULL when the backend refuses. */
ca_event_t ca_reuse_event_get(ca_arena *a, ca_device *d);
/* Keep ev (completed, or no longer waited for) for the next ca_reuse_event_get. */
void ca_reuse_event_put(ca_device *d, ca_event_t ev);
/* A new pool owes nothing to the frees made before it. */
void ca_reuse_pool_new(ca_device *d, ca_pool *p);
/* Frees on p's own stream: an event on it, when none is in flight, makes them safe elsewhere. */
void ca_reuse_async_freed(ca_arena *a, ca_device *d, ca_pool *p);
/* Completed pool events (or idle streams) make pools' frees safe; dead, empty pools go. */
void ca_reuse_poll_pools(ca_arena *a, ca_device *d);
/* Destroy every event handle d's contract holds (the arena's end). */
void ca_reuse_destroy(ca_arena *a, ca_device *d);
/* Forget d's bookkeeping without a backend call: a reset destroyed the events with the memory. */
void ca_reuse_forget(ca_device *d);

/* reuse/fence.c: pending blocks and fences. */
/* Stamps b's free: true when b pends until a fence covers it; false: its pool may reuse it now.
 * idle: the device was synchronized within this free (ca_free_synced), so nothing queued before
 * it can still use the block. */
bool ca_reuse_pend(ca_arena *a, ca_device *d, ca_block *b, ca_stream_t s, unsigned api,
                   bool idle);
/* A destroyed stream's pool p: under fences its free blocks now wait like plain frees. */
void ca_reuse_pool_retired(ca_arena *a, ca_device *d, ca_pool *p);
/* Fence the frees pending since the last (CACHEALLOC_FENCES=events); false: wait for the device. */
bool ca_reuse_fence(ca_arena *a, ca_device *d);
/* Completed fences free their blocks; true when any did. */
bool ca_reuse_poll_fences(ca_arena *a, ca_device *d);
/* Rung 2 of the ladder: completed fences and pool events free their blocks. */
void ca_reuse_poll(ca_arena *a, ca_device *d);
/* The device synchronized after token was taken (ca_reuse_token): every free up to it is safe. */
void ca_reuse_synced(ca_device *d, uint64_t token);
/* Whether empty segment seg may move to another pool now. */
bool ca_reuse_segment_safe(const ca_arena *a, const ca_device *d, const ca_segment *seg);
/* Whether the device is done with free block b: freed before its last synchronization. */
bool ca_reuse_block_idle(const ca_device *d, const ca_block *b);
#ifdef CA_DEBUG
/* Stops the process at the first broken invariant of d's contract (ca_device_check's part). */
void ca_reuse_check(const ca_device *d);
#else
static inline void ca_reuse_check(const ca_device *d) { (void)d; }
#endif

/* reuse/wait.c: waits (each drops the lock meanwhile). */
/* Wait for the whole device once: it covers the frees and destroyed streams made before. True
 * when it did (not quiet, and the device answered success). */
bool ca_reuse_wait_device(ca_arena *a, ca_device *d);
/* Rung 5 of the ladder: wait for every fence and pool event; false when d does not fence. */
bool ca_reuse_wait_all(ca_arena *a, ca_device *d);
/* Rung 4: over the pending budget, wait instead of growing (round 0, 1, ...); false: grow. */
bool ca_reuse_wait(ca_arena *a, ca_device *d, size_t rounded, int round);

/* reuse/streams.c: the streams watched; arena.c's stream doors call these. */
/* Stream s was created on d (nonblocking: outside the legacy stream's order). */
void ca_reuse_stream_created(ca_arena *a, ca_device *d, ca_stream_t s, bool nonblocking);
/* The program used stream s (the legacy stream from another thread included) on d. */
void ca_reuse_stream_seen(ca_arena *a, ca_device *d, ca_stream_t s);
/* Stream s was destroyed: out of the fence set, its last work watched (or waited for). */
void ca_reuse_stream_destroyed(ca_arena *a, ca_device *d, ca_stream_t s);

#endif
