/* The reuse contract (docs/arena.md, "Pools and the reuse contract"): a block freed with
 * cudaFree is not handed out again before every stream of its device has passed the free, and
 * one freed on a stream reaches another stream only once an event recorded after the free has
 * completed. Each device keeps what the contract needs in one ca_reuse; the files of
 * src/reuse/ hold its logic, and the rest of the arena asks them through this header.
 *
 * This header comes before the arena's structures (arena_internal.h embeds a ca_reuse in each
 * device), so it names them only through pointers, and its inline predicates read the
 * contract's own state. */
#ifndef CACHEALLOC_REUSE_H
#define CACHEALLOC_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "arena_hot.h"

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

/* A device's side of the contract. Every free on the device takes the next number of a
 * device-wide sequence (free_seq), and a block keeps the number of its last free: what has
 * completed is said in those numbers. All under the device lock, but for the futex words. */
typedef struct ca_reuse {
    bool fenced;              /* left the single-stream fast path            */
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
                               * fast path's end, a stream destroyed unwatched) before
                               * fences and pools are trusted again: reuse/quiet.c */
    ca_event_t *events;       /* idle events for reuse                       */
    int nevents, cap_events;
} ca_reuse;

/* Whether plain frees wait for fences: the device left its single-stream fast path, and the
 * program did not opt out of the contract (CACHEALLOC_REUSE=stream). */
static inline bool ca_reuse_fencing(const ca_reuse *r, const ca_config *cfg)
{
    return r->fenced && cfg->reuse == CA_REUSE_SAFE;
}

/* Whether fences and pool events must be left alone: quiet (a capture is under way), or a
 * synchronization is owed before they are trusted again. */
static inline bool ca_reuse_hushed(const ca_reuse *r, bool quiet)
{
    return quiet || r->sync_owed;
}

/* reuse/window.c. Drop the device lock around a blocking backend call. A device reset waits
 * until no thread is inside such a window, so the pools and detached segments a window holds
 * stay valid. */
void ca_window_begin(ca_device *d);
/* Take the lock back after a window, first waiting out a mode switch that began meanwhile
 * (blocks freed before it are not safe until its device synchronization returned). */
void ca_window_end(ca_device *d);
/* Under the lock: wait (dropping it meanwhile) until no mode switch runs. */
void ca_wait_switch(ca_device *d);
/* Leave the single-stream fast path: blocks freed so far were safe by stream order alone, so
 * the device is synchronized once, with allocations stopped, before any other stream may
 * receive them (owed until after a capture when quiet). Drops the lock meanwhile. */
void ca_fence_switch(ca_arena *a, ca_device *d);

/* reuse/fence.c: fences, pending blocks and the pools' events. All under the device lock. */
bool ca_segment_safe(const ca_arena *a, const ca_device *d, const ca_segment *seg);
void ca_pend(ca_device *d, ca_block *b);
bool ca_fence_record(ca_arena *a, ca_device *d);
void ca_wait_device(ca_arena *a, ca_device *d);
/* ca_wait_device while the device's other allocations wait: its caller is served first. */
void ca_wait_device_alone(ca_arena *a, ca_device *d);
bool ca_fence_poll(ca_arena *a, ca_device *d);
void ca_pools_poll(ca_arena *a, ca_device *d);
void ca_async_freed(ca_arena *a, ca_device *d, ca_pool *p);
void ca_complete_upto(ca_device *d, uint64_t seq);
void ca_wait_all(ca_arena *a, ca_device *d);
ca_event_t ca_event_get(ca_arena *a, ca_device *d);
void ca_event_put(ca_device *d, ca_event_t ev);

/* reuse/quiet.c. At an allocation, under the lock: when not quiet, pays what is owed (a device
 * synchronization) and returns false; when quiet, returns true where the device cannot serve
 * at all without the device (not ready, or its fast path ended unsynchronized). */
bool ca_quiet_refuses(ca_arena *a, ca_device *d);

/* reuse/wait.c: before the ladder grows past pending memory, wait for it instead when the
 * cache already holds twice the working set. Call with round 0, 1, ... after each failed
 * search: true when it waited (search again), false when growing is the answer. Drops the lock
 * while it waits. */
bool ca_wait_instead_of_grow(ca_arena *a, ca_device *d, size_t rounded, int round);

#endif
