/* The lane: what a thread's last full check of an allocation call established, so that
 * its next calls skip every check whose answer cannot have changed.
 *
 * A full call (front.c) checks the door, the capture state, the device, its sticky error, the
 * statistics, the per-thread stream scan and the thread's plain-call count, and then arms the
 * calling thread's lane with the generation it read before it began. Anything that could
 * change one of those answers, on any thread, bumps the generation after the change: a lane
 * whose generation is stale is never used, and its thread goes the full way once more. So a
 * call on the lane reads one shared word, written only by rare events (a capture, a dlopen, a
 * stream created or destroyed, a device reset, a sticky error), and otherwise only its own
 * thread's memory. */
#ifndef CACHEALLOC_SHIM_LANE_H
#define CACHEALLOC_SHIM_LANE_H

#include <stdatomic.h>
#include <stdint.h>

#include "tcache/tcache.h"
#include "runtime.h"

/* 64 bytes: a thread's lanes are indexed by a shift. */
typedef struct __attribute__((aligned(64))) ca_lane {
    uint64_t gen;     /* ca_lane_gen when armed; 0: not armed (the generation starts at 1) */
    void *token;      /* what named the current device then (see ca_lane_token)            */
    int dev;          /* ... and that device                                                */
    int plain;        /* the thread's plain calls are counted on dev (streams.c): which plain
                       * calls the lane serves, CA_LANE_ALLOC and CA_LANE_FREE bits         */
    ca_tcache *tc;    /* the thread's cache of the runtime's arena (NULL: none), valid while
                       * the lane is armed (a cache's retirement disarms its thread's lanes) */
    /* The last stream of a stream-ordered call (none while async is 0): its handle and entry
     * point, and the arena key and device they gave for token's device. */
    int async;
    int ptsz;
    int kdev;
    void *stream;
    ca_stream_t key;
} ca_lane;

/* A lane's plain bits: allocations on it; frees kept on it (not where a plain free must
 * synchronize its device, CACHEALLOC_REUSE=sync: those take the full way). */
#define CA_LANE_ALLOC 1
#define CA_LANE_FREE 2

extern atomic_uint_fast64_t ca_lane_gen;
extern _Thread_local ca_lane ca_lanes[CA_RT_COUNT];

/* Something a lane relies on changed (on any thread): every thread's lane goes stale. Called
 * after the change is made. */
void ca_lane_invalidate(void);

/* The calling thread's lanes go stale (its own state changed: a public-API region). */
void ca_lane_disarm(void);

/* The calling thread's lanes stop while it is inside one of the cache's own runtime calls
 * (backend.c): their generations move to held. No lane is armed meanwhile (a full check
 * passes through at that depth). */
static inline void ca_lane_hold(uint64_t held[CA_RT_COUNT])
{
    for (int s = 0; s < CA_RT_COUNT; s++) {
        held[s] = ca_lanes[s].gen;
        ca_lanes[s].gen = 0;
    }
}

/* ... and go on after it, unless the generation moved meanwhile. (Nothing disarms a lane of
 * the calling thread from inside one of the cache's own calls, which this would undo.) */
static inline void ca_lane_resume(const uint64_t held[CA_RT_COUNT])
{
    for (int s = 0; s < CA_RT_COUNT; s++)
        ca_lanes[s].gen = held[s];
}

/* The generation a full check starts from: read before anything the check looks at. */
static inline uint64_t ca_lane_start(void)
{
    return atomic_load_explicit(&ca_lane_gen, memory_order_acquire);
}

/* The calling thread's lane of rt when it is armed and current, else NULL. */
static inline ca_lane *ca_lane_of(const ca_runtime *rt)
{
    ca_lane *l = &ca_lanes[rt->index];
    return l->gen == atomic_load_explicit(&ca_lane_gen, memory_order_acquire) ? l : NULL;
}

/* What names the current device now: the current context where the runtime has one (the CUDA
 * driver), else the device's ordinal plus one (rt->fn.current, which a lane requires); NULL
 * when the runtime cannot tell. */
static inline void *ca_lane_token(const ca_runtime *rt)
{
    void *t;
    return rt->fn.current(&t) == 0 ? t : NULL;
}

/* The current device when the lane's own, else -1 (the caller then goes the full way). An
 * armed lane's token is never NULL. */
static inline int ca_lane_device(const ca_runtime *rt, const ca_lane *l)
{
    void *t;
    return rt->fn.current(&t) == 0 && t == l->token ? l->dev : -1;
}

#endif
