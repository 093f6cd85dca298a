/* Stream capture as the cache sees it: the captures under way (from their begin to their end,
 * as the doors report them), the reclaims they hold back, and whether a stream's work is
 * captured. PyTorch's caching allocator is the model: its captures_underway decides whether an
 * allocation may belong to a graph, and it defers its events until no capture is under way
 * (c10/cuda/CUDACachingAllocator.cpp). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"
#include "process.h"
#include "lane.h"
#include "stats/writer.h"

/* One capture under way: the stream that began it (with the thread, for a per-thread stream
 * handle, which names another stream on every thread). */
struct capture {
    int index;
    void *stream;
    bool per_thread;
    pthread_t thread;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct capture *reg;
static size_t nreg, capreg;
static atomic_int underway[CA_RT_COUNT];

/* Each thread's interaction mode, as the program set it; global until then. */
static _Thread_local unsigned thread_mode[CA_RT_COUNT];

/* A reclaim kept for after the captures: its device (-1: all), whether the monitor waits for
 * its answer, and that answer once given. */
struct kept {
    bool pending, monitor, answered;
    int dev;
    uint64_t bytes;
};
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept kept[CA_RT_COUNT];
static atomic_int kept_any[CA_RT_COUNT];

static const char *mode_name(unsigned mode)
{
    return mode == 0 ? "global" : mode == 1 ? "thread-local" : mode == 2 ? "relaxed" : "unknown";
}

int ca_capture_underway(const ca_runtime *rt)
{
    return atomic_load_explicit(&underway[rt->index], memory_order_relaxed) != 0;
}

int ca_capture_idle(const ca_runtime *rt)
{
    return !ca_capture_underway(rt) && !atomic_load_explicit(&kept_any[rt->index], memory_order_relaxed);
}

void ca_capture_will_begin(ca_runtime *rt)
{
    atomic_fetch_add(&underway[rt->index], 1);
    ca_lane_invalidate(); /* lanes were armed with no capture under way */
    ca_quiet_begin(rt->arena);
}

static int per_thread_handle(const ca_runtime *rt, void *stream, int ptsz)
{
    return stream == rt->per_thread_stream || (stream == NULL && ptsz);
}

/* The capture that work was begun on stream, or NULL. Under reg_lock. */
static struct capture *find(const ca_runtime *rt, void *stream, int ptsz)
{
    int pt = per_thread_handle(rt, stream, ptsz);
    for (size_t i = 0; i < nreg; i++) {
        struct capture *c = &reg[i];
        if (c->index == rt->index && (pt ? c->per_thread && pthread_equal(c->thread, pthread_self())
                                       : c->stream == stream))
            return c;
    }
    return NULL;
}

/* The capture is over: forgotten, and the arena may call the device again once no other one
 * is under way. */
static void over(ca_runtime *rt, struct capture *c)
{
    *c = reg[--nreg];
    atomic_fetch_sub(&underway[rt->index], 1);
    ca_quiet_end(rt->arena);
    if (ca_shim_options()->verbose && !ca_capture_underway(rt))
        fprintf(stderr, "cachealloc: %s: no stream capture under way: the cache calls the "
                        "device again\n", rt->api);
}

void ca_capture_began(ca_runtime *rt, void *stream, int ptsz, unsigned mode, ca_rt_err e)
{
    pthread_mutex_lock(&reg_lock);
    if (e == rt->codes.success && nreg == capreg) {
        size_t cap = capreg ? capreg * 2 : 8;
        struct capture *n = realloc(reg, cap * sizeof *n);
        if (n != NULL) {
            reg = n;
            capreg = cap;
        }
    }
    /* Without room to remember it, the cache stays quiet for good: safe, if slower. */
    if (e == rt->codes.success && nreg < capreg)
        reg[nreg++] = (struct capture){rt->index, stream, per_thread_handle(rt, stream, ptsz),
                                       pthread_self()};
    pthread_mutex_unlock(&reg_lock);
    if (e != rt->codes.success) {
        atomic_fetch_sub(&underway[rt->index], 1);
        ca_quiet_end(rt->arena);
    } else if (ca_shim_options()->verbose) {
        fprintf(stderr, "cachealloc: %s: a stream capture begins (mode %s, this thread's mode "
                        "%s): the cache makes no device call until it ends\n", rt->api,
                mode_name(mode), mode_name(thread_mode[rt->index]));
    }
}

/* Whether the capture on stream is over after its end answered e: the runtime says whether the
 * stream still captures; without that query, the end's own answer says (success, or the
 * invalidated and unjoined errors, 901 and 904, which end it too). */
static int ended(ca_runtime *rt, void *stream, int ptsz, ca_rt_err e)
{
    ca_rt_err (*q)(void *, unsigned *) =
        ptsz ? rt->fn.stream_is_capturing_ptsz : rt->fn.stream_is_capturing;
    unsigned status = 1;
    if (q != NULL && q(stream, &status) == rt->codes.success)
        return status == 0;
    return e == rt->codes.success || e == 901 || e == 904;
}

void ca_capture_ended(ca_runtime *rt, void *stream, int ptsz, ca_rt_err e)
{
    int done = ended(rt, stream, ptsz, e);
    pthread_mutex_lock(&reg_lock);
    struct capture *c = done ? find(rt, stream, ptsz) : NULL;
    if (c != NULL)
        over(rt, c);
    pthread_mutex_unlock(&reg_lock);
}

void ca_capture_stream_destroyed(ca_runtime *rt, void *stream)
{
    if (!ca_capture_underway(rt))
        return;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg;)
        if (reg[i].index == rt->index && !reg[i].per_thread && reg[i].stream == stream)
            over(rt, &reg[i]);
        else
            i++;
    pthread_mutex_unlock(&reg_lock);
}

void ca_capture_thread_mode(ca_runtime *rt, unsigned mode)
{
    thread_mode[rt->index] = mode;
}

int ca_capture_stream_captures(ca_runtime *rt, void *stream, int ptsz)
{
    if (!ca_capture_underway(rt))
        return 0;
    ca_rt_err (*q)(void *, unsigned *) =
        ptsz ? rt->fn.stream_is_capturing_ptsz : rt->fn.stream_is_capturing;
    unsigned status = 0;
    /* An error (the legacy stream beside a blocking capture answers one) leaves the answer to
     * the real runtime as well. */
    if (q == NULL || q(stream, &status) != rt->codes.success)
        return 1;
    return status != 0;
}

/* Does a reclaim of dev (under kept_lock, released here; what x kept is taken along) and, when
 * the monitor waits for a kept one it does not ask for itself now, keeps the answer for it. */
static uint64_t run(ca_runtime *rt, struct kept *x, int dev, bool tell_monitor)
{
    x->pending = x->monitor = false;
    atomic_store(&kept_any[rt->index], 0);
    pthread_mutex_unlock(&kept_lock);
    uint64_t bytes = ca_reclaim(rt->arena, dev);
    if (tell_monitor) {
        pthread_mutex_lock(&kept_lock);
        x->answered = true;
        x->bytes = bytes;
        pthread_mutex_unlock(&kept_lock);
    }
    return bytes;
}

uint64_t ca_capture_reclaim(ca_runtime *rt, int dev, int monitor)
{
    struct kept *x = &kept[rt->index];
    pthread_mutex_lock(&kept_lock);
    if (monitor && x->answered) {
        x->answered = false;
        uint64_t bytes = x->bytes;
        pthread_mutex_unlock(&kept_lock);
        return bytes;
    }
    if (x->pending && x->dev != dev)
        dev = -1; /* one reclaim for both */
    if (!ca_capture_underway(rt))
        return run(rt, x, dev, x->pending && x->monitor && !monitor);
    x->dev = dev;
    x->pending = true;
    x->monitor = x->monitor || monitor;
    atomic_store(&kept_any[rt->index], 1);
    ca_lane_invalidate(); /* the next allocation must settle it */
    pthread_mutex_unlock(&kept_lock);
    return monitor ? CA_STATS_RECLAIM_LATER : 0;
}

void ca_capture_settle(ca_runtime *rt)
{
    if (!atomic_load_explicit(&kept_any[rt->index], memory_order_relaxed) ||
        ca_capture_underway(rt))
        return;
    struct kept *x = &kept[rt->index];
    pthread_mutex_lock(&kept_lock);
    if (x->pending && !ca_capture_underway(rt))
        run(rt, x, x->dev, x->monitor);
    else
        pthread_mutex_unlock(&kept_lock);
}

void ca_capture_after_fork(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    reg_lock = fresh;
    kept_lock = fresh;
    nreg = 0;
    for (int s = 0; s < CA_RT_COUNT; s++) {
        ca_runtime *rt = ca_runtime_by_index(s);
        for (int n = atomic_exchange(&underway[s], 0); n > 0 && rt != NULL; n--)
            ca_quiet_end(rt->arena);
        kept[s] = (struct kept){0};
        atomic_store(&kept_any[s], 0);
    }
}
