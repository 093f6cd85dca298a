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
 * Layering (suite structure checks it): the module is below arena.c and above the lock, the
 * map and the bins; within it price.c is lowest (it calls nothing), then window.c, events.c,
 * fence.c, and wait.c, streams.c and quiet.c on top. This header comes before the arena's structures
 * (arena/internal.h embeds a ca_reuse in each device), so it names them only through pointers
 * and its inline predicates read the contract's own state. */
#ifndef CACHEALLOC_REUSE_H
#define CACHEALLOC_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena/arena.h"
#include "arena/heads.h"
#include "base/clock.h"

typedef struct ca_pool ca_pool;
typedef struct ca_segment ca_segment;

/* A fence: events on every live stream of a device, covering a batch of plain frees. */
typedef struct ca_fence {
    struct ca_fence *next;
    uint64_t max_seq;         /* covers pending blocks with free_seq <= max_seq */
    uint64_t dying_upto;      /* streams destroyed before it (not in its events) */
    int nev;
    ca_event_t ev[];          /* nev events                                  */
} ca_fence;

/* A destroyed stream whose last work may still run: its final event. */
typedef struct ca_dying {
    ca_event_t ev;
    uint64_t stamp;           /* order of destruction: what a device sync covers */
    bool done;
} ca_dying;

/* What the two ways of knowing that plain frees are past the device (CACHEALLOC_FENCES=device
 * and events) have cost this program, for the learned policy (auto, reuse/price.c): the wall
 * time an allocation took under each, measured over epochs of allocations. The losing way is
 * tried again now and then, less often while it keeps losing. */
typedef struct ca_reuse_price {
    uint8_t way;              /* CA_FENCES_DEVICE or CA_FENCES_EVENTS: the way in force  */
    bool trying;              /* this epoch tries the way that lost                     */
    uint32_t served;          /* allocations served in this epoch                       */
    uint64_t epoch_t0;        /* when the epoch began (0: it begins at the next call)   */
    uint64_t per_alloc_ns[2]; /* learned wall time an allocation, by way; 0: unknown    */
    uint32_t since_try;       /* epochs since the losing way was last tried             */
    uint32_t try_every;       /* epochs between its tries: doubles while it keeps losing */
    uint64_t epochs;          /* epochs measured (the tests read it)                    */
} ca_reuse_price;

#define CA_PRICE_EPOCH 512u  /* allocations an epoch averages over (a try: an eighth) */

/* A device's side of the contract. Every free on the device takes the next number of a
 * device-wide sequence (free_seq), and a block keeps the number of its last free: what has
 * completed is said in those numbers. All under the device lock, but for the futex words. */
typedef struct ca_reuse {
    bool fenced;              /* left the single-stream mode            */
    uint32_t switching;       /* a device synchronization that stops allocations runs: the
                               * mode switch, or a starved allocation's (a futex word) */
    uint32_t windows;         /* threads inside an unlocked window (a futex word)        */
    /* Plain frees waiting for a fence: the unfenced list, then recorded fences (FIFO). */
    ca_block *pend_head, *pend_tail;
    uint64_t unfenced_max_seq;
    ca_fence *fence_head, *fence_tail;
    uint64_t free_seq;        /* device-wide free counter                    */
    uint64_t synced_seq;      /* frees up to here completed (device synchronized) */
    ca_stream_t *streams;     /* live streams in the fence set               */
    int nstreams, cap_streams;
    /* A non-blocking stream could not be added to `streams` (no host memory): no fence can
     * cover it, so none is taken, and frees wait for a device synchronization. */
    bool streams_lost;
    ca_dying *dying;
    int ndying, cap_dying;
    uint64_t dying_stamp;
    bool sync_owed;           /* work done quietly needs a device synchronization (the
                               * single-stream mode's end, a stream destroyed unwatched) before
                               * fences and pools are trusted again: reuse/quiet.c */
    ca_event_t *events;       /* idle events for reuse                       */
    int nevents, cap_events;
    ca_reuse_price price;     /* what waiting has cost each way (CACHEALLOC_FENCES=auto) */
} ca_reuse;

/* Inline predicates on the contract's own state, for the paths that ask at every call. */

/* Whether plain frees wait for fences: the device left its single-stream mode, and the
 * program did not opt out of the contract (CACHEALLOC_REUSE=stream). */
static inline bool ca_reuse_fencing(const ca_reuse *r, const ca_config *cfg)
{
    return r->fenced && cfg->reuse != CA_REUSE_STREAM; /* safe and sync */
}

/* Whether fences and pool events must be left alone: quiet (a capture is under way), or a
 * synchronization is owed before they are trusted again. */
static inline bool ca_reuse_hushed(const ca_reuse *r, bool quiet)
{
    return quiet || r->sync_owed;
}

/* Whether a synchronization that stops the device's allocations runs (read without the lock). */
static inline bool ca_reuse_switching(const ca_reuse *r)
{
    return __atomic_load_n(&r->switching, __ATOMIC_RELAXED) != 0;
}

/* Whether the device's single-stream mode ended during a capture: its switch waits for it. */
static inline bool ca_reuse_switch_owed(const ca_reuse *r)
{
    return r->sync_owed && !r->fenced;
}

/* Whether plain frees wait for a fence, recorded or not. */
static inline bool ca_reuse_pending(const ca_reuse *r)
{
    return r->pend_tail != NULL;
}

/* The free number a device synchronization that begins now covers: pass it to ca_reuse_synced. */
static inline uint64_t ca_reuse_token(const ca_reuse *r)
{
    return r->free_seq;
}

/* A block's stamp (ca_block.free_seq, the number of its last free), for the files below the
 * module that split, merge and map blocks: inline, so that they call nothing of it. */

/* Memory no stream has used since its fence completed, or ever: safe for every stream. */
static inline void ca_reuse_stamp_fresh(uint64_t *stamp)
{
    *stamp = 0;
}

/* A block merged from two free ones waits for the later of their frees. */
static inline void ca_reuse_stamp_merge(uint64_t *into, uint64_t from)
{
    if (from > *into)
        *into = from;
}

/* The verbs. Under the device lock unless said otherwise; those that wait drop it meanwhile
 * (an unlocked window), so whatever the caller found before may have changed after. */

/* reuse/price.c: the learned policy. Pure functions of a ca_reuse_price, below the rest of the
 * module (it calls nothing of the arena), so that the decision is tested with injected times. */
/* A price list that knows nothing yet: the device way in force, the events way to be tried. */
void ca_price_init(ca_reuse_price *p);
/* CA_PRICE_EPOCH allocations were served by now_ns: the epoch ends, and the way may change. */
void ca_price_epoch(ca_reuse_price *p, uint64_t now_ns);
/* The cheaper of the two ways, given what an allocation cost under each (0: unknown) and the
 * way in force. */
ca_fences_kind ca_price_cheaper(const uint64_t per_alloc_ns[2], ca_fences_kind in_force);

/* The way d knows plain frees are past the device now: the configured one, or the learned one. */
static inline ca_fences_kind ca_reuse_way(const ca_config *cfg, const ca_reuse *r)
{
    return cfg->fences == CA_FENCES_AUTO ? (ca_fences_kind)r->price.way : cfg->fences;
}

/* The allocations the current epoch lasts: a try, and the settling of a new way before it is
 * timed, are an eighth of an epoch (the way that lost may be many times slower). */
static inline uint32_t ca_price_due(const ca_reuse_price *p)
{
    return p->trying || !p->epoch_t0 ? CA_PRICE_EPOCH / 8 : CA_PRICE_EPOCH;
}

/* An allocation of a fenced device was served: under the learned policy, an epoch may end. */
static inline void ca_reuse_served(const ca_config *cfg, ca_reuse *r)
{
    if (cfg->fences == CA_FENCES_AUTO && r->fenced && ++r->price.served >= ca_price_due(&r->price))
        ca_price_epoch(&r->price, ca_now_ns());
}

/* reuse/window.c: unlocked windows and the switch to fences. */
/* Drop the lock around a blocking backend call; a device reset waits for every open window. */
void ca_window_begin(ca_device *d);
/* Take the lock back after a window, first waiting out a mode switch that began meanwhile. */
void ca_window_end(ca_device *d);
/* Wait, the lock dropped meanwhile, until no window is open (nor, if switches, a switch runs). */
void ca_window_drain(ca_device *d, bool switches);
/* A fork's child: no thread of it is inside a window or a switch, whatever the parent's did. */
void ca_window_forget(ca_device *d);
/* Wait, the lock dropped meanwhile, until no synchronization that stops allocations runs. */
void ca_reuse_wait_switch(ca_device *d);
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
/* Whether whole segment seg may move to another pool now. */
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

/* reuse/quiet.c: no backend call while a stream capture is under way (ca_quiet_begin/end). */
/* At an allocation: pays a capture's debt, or (while quiet) whether d cannot serve at all. */
bool ca_reuse_quiet_refuses(ca_arena *a, ca_device *d);

#endif
