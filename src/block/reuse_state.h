/* The reuse contract's state in each device (reuse/reuse.h says what the contract is, and its
 * files in src/reuse/ hold its logic): a structure the device embeds, so it sits with the
 * device's other structures below the contract, with the inline predicates on it that the
 * paths below the contract ask (a block's stamp when blocks split and merge). */
#ifndef CACHEALLOC_BLOCK_REUSE_STATE_H
#define CACHEALLOC_BLOCK_REUSE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/types.h"
#include "block/heads.h"

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
    uint8_t timed[2];         /* epochs measured, by way (up to 255)                    */
    uint64_t growths0;        /* the device's growths when the epoch began              */
    uint32_t grown;           /* epochs in a row not timed because the device grew      */
} ca_reuse_price;

#define CA_PRICE_EPOCH 512u  /* allocations an epoch averages over (a try: an eighth) */
#define CA_PRICE_GROWN 8u    /* epochs in a row left untimed for a growth, at most      */

/* A device's side of the contract. Every free on the device takes the next number of a
 * device-wide sequence (free_seq), and a block keeps the number of its last free: what has
 * completed is said in those numbers. All under the device lock, but for the futex words. */
typedef struct ca_reuse {
    bool fenced;              /* left the single-stream mode            */
    uint32_t switching;       /* a device synchronization that stops allocations runs: the
                               * mode switch, or a starved allocation's (a futex word) */
    uint32_t windows;         /* threads inside an unlocked window (a futex word)        */
    uint32_t syncs_running;   /* waits' device synchronizations under way (reuse/wait.c) */
    uint32_t syncs_done;      /* bumped as each of those returns (a futex word)           */
    uint32_t sync_joiners;    /* threads waiting for one of them to return               */
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
                               * fences and pools are trusted again: arena/quiet.c */
    ca_event_t *events;       /* idle events for reuse                       */
    int nevents, cap_events;
    ca_reuse_price price;     /* what waiting has cost each way (CACHEALLOC_FENCES=auto) */
    /* The working set the budget is on (reuse/wait.c): the most bytes allocated at once in
     * this window of CA_WORKING_WINDOW allocations, and in the last whole one. */
    uint64_t working_peak[2];
    uint32_t working_served;
} ca_reuse;

#define CA_WORKING_WINDOW 1024u /* allocations a window of the budget's working set lasts */

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

#endif
