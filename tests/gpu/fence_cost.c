/* A probe for scripts/gpu-check.sh (a record, no verdict): what the driver charges for the calls
 * the reuse contract is built from (issue 36, "Prices of the fence calls"). Every fence decision
 * in docs/arena.md was made on the simulator's prices, where a wait for the device is a hand-over
 * between threads; these figures are what the simulator's defaults should come from.
 *
 * Each figure is the median of ROUNDS rounds of CALLS calls a thread, in microseconds a call as
 * the calling thread sees it; with 16 threads also calls per millisecond over all of them. On an
 * idle device, then on a busy one: a non-blocking stream kept fed with 64 MiB memsets, topped up
 * before each round so it cannot drain during one. Event calls are measured with events created
 * with and without CU_EVENT_DISABLE_TIMING. An answer other than the one expected (a "done" event
 * not done, a busy stream found idle) is counted in an `unexpected` line: the figure then does not
 * measure what its name says. On the idle device it also times the work of bench-loop's pairs:
 * queueing an 8-byte memset, the memset until its stream is found done, and the memset with a
 * device synchronization after it (the simulator's SIMDEV_LAUNCH_US, SIMDEV_OP_LATENCY_US and
 * SIMDEV_SYNC_US come from these). Runs in a few seconds. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_util.h"

#define MIB ((size_t)1 << 20)
#define BUSY_BYTES (64 * MIB)
#define ROUNDS 7
#define CALLS 256
#define MAX_THREADS 16
#define MAX_TOPUP 4096

static CUresult (*set_current)(CUcontext);
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*stream_create)(CUstream *, unsigned);
static CUresult (*stream_query)(CUstream);
static CUresult (*stream_sync)(CUstream);
static CUresult (*stream_wait)(CUstream, CUevent, unsigned);
static CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*event_create)(CUevent *, unsigned);
static CUresult (*event_record)(CUevent, CUstream);
static CUresult (*event_query)(CUevent);
static CUresult (*event_sync)(CUevent);
static CUresult (*ctx_sync)(void);

/* The calls measured; `timed`: once per kind of event; `when`: 1 idle device only, 2 busy only. */
enum op { RECORD, QUERY_DONE, QUERY_PENDING, WAIT_DONE, WAIT_PENDING, SYNC_DONE, STREAM_IDLE,
          STREAM_BUSY, CTX_SYNC, LAUNCH, LAUNCH_TO_DONE, LAUNCH_SYNC, N_OPS };
static const struct {
    const char *name;
    int timed, when;
    CUresult want;
} ops[N_OPS] = {
    [RECORD] = {"cuEventRecord", 1, 0, CUDA_SUCCESS},
    [QUERY_DONE] = {"cuEventQuery.done", 1, 0, CUDA_SUCCESS},
    [QUERY_PENDING] = {"cuEventQuery.pending", 1, 2, CUDA_ERROR_NOT_READY},
    [WAIT_DONE] = {"cuStreamWaitEvent.done", 1, 0, CUDA_SUCCESS},
    [WAIT_PENDING] = {"cuStreamWaitEvent.pending", 1, 2, CUDA_SUCCESS},
    [SYNC_DONE] = {"cuEventSynchronize.done", 1, 0, CUDA_SUCCESS},
    [STREAM_IDLE] = {"cuStreamQuery.idle", 0, 0, CUDA_SUCCESS},
    [STREAM_BUSY] = {"cuStreamQuery.busy", 0, 2, CUDA_ERROR_NOT_READY},
    [CTX_SYNC] = {"cuCtxSynchronize", 0, 1, CUDA_SUCCESS},
    /* What a loop of bench-loop pays around its allocator: queueing its 8-byte memset; the
     * memset from its queueing until a query finds the stream past it (the device's latency
     * for the smallest work); and the memset followed by a device synchronization, which is
     * what the reference that synchronizes before each reuse pays a pair. */
    [LAUNCH] = {"cuMemsetD8Async.8B", 0, 1, CUDA_SUCCESS},
    [LAUNCH_TO_DONE] = {"cuMemsetD8Async.8B.until_done", 0, 1, CUDA_SUCCESS},
    [LAUNCH_SYNC] = {"cuMemsetD8Async.8B+cuCtxSynchronize", 0, 1, CUDA_SUCCESS},
};
static const unsigned event_flags[2] = {CU_EVENT_DEFAULT, CU_EVENT_DISABLE_TIMING};
static const char *const event_kind[2] = {"timing", "notiming"};

/* A calling thread's own streams and events, so that threads share nothing but the device:
 * `own` is idle between figures, `waits` takes waits on done events, `blocked` on pending ones. */
typedef struct worker {
    pthread_t t;
    CUstream own, waits, blocked;
    CUevent rec[2], done[2], pend[2];
    CUdeviceptr small; /* the 8 bytes its memsets write */
    double took[ROUNDS], start, end;
    int unexpected;
} worker;

static CUcontext ctx;
static CUstream busy;
static CUdeviceptr busy_buf;
static double memset_us;
static double busy_until; /* when the busy stream's queue should run dry, by memset_us */
static worker workers[MAX_THREADS];
static pthread_barrier_t go;
static struct {
    enum op op;
    int kind, round, quit;
} job;

/* CALLS calls of `op` on w's streams and events; the microseconds they took together (and when
 * they started and ended, in w). */
static double run_op(worker *w, enum op op, int k)
{
    CUresult e = CUDA_SUCCESS;
    int bad = 0;
    double t0 = now_us();
    for (int i = 0; i < CALLS; i++) {
        switch (op) {
        case RECORD: e = event_record(w->rec[k], w->own); break;
        case QUERY_DONE: e = event_query(w->done[k]); break;
        case QUERY_PENDING: e = event_query(w->pend[k]); break;
        case WAIT_DONE: e = stream_wait(w->waits, w->done[k], 0); break;
        case WAIT_PENDING: e = stream_wait(w->blocked, w->pend[k], 0); break;
        case SYNC_DONE: e = event_sync(w->done[k]); break;
        case STREAM_IDLE: e = stream_query(w->own); break;
        case STREAM_BUSY: e = stream_query(busy); break;
        case LAUNCH: e = memset_async(w->small, (unsigned char)i, 8, w->own); break;
        case LAUNCH_TO_DONE:
            e = memset_async(w->small, (unsigned char)i, 8, w->own);
            if (e == CUDA_SUCCESS)
                while ((e = stream_query(w->own)) == CUDA_ERROR_NOT_READY) {
                }
            break;
        case LAUNCH_SYNC:
            e = memset_async(w->small, (unsigned char)i, 8, w->own);
            if (e == CUDA_SUCCESS)
                e = ctx_sync();
            break;
        default: e = ctx_sync(); break;
        }
        bad += e != ops[op].want;
    }
    w->start = t0;
    w->end = now_us();
    w->unexpected += bad;
    return w->end - t0;
}

static void *work(void *arg)
{
    worker *w = arg;
    set_current(ctx);
    for (;;) {
        pthread_barrier_wait(&go);
        if (job.quit)
            break;
        w->took[job.round] = run_op(w, job.op, job.kind);
        pthread_barrier_wait(&go);
    }
    return NULL;
}

/* Keeps the busy stream from draining during the next round: its queue is kept, by the
 * memsets' measured time, long enough for the last round's wall time twice over, a millisecond
 * and four memsets more (a memset's time varies); then the pending events are recorded behind
 * it. Topping up only the shortfall keeps the final drain short where a memset is slow (the
 * simulator's take 30 to 40 ms). */
static void top_up(int n, double last_wall_us)
{
    double now = now_us();
    if (busy_until < now)
        busy_until = now;
    double ahead = 2 * last_wall_us + 1000.0 + 4 * memset_us;
    long k = (long)((now + ahead - busy_until) / memset_us) + 1;
    for (long i = 0; i < (k < MAX_TOPUP ? k : MAX_TOPUP); i++) {
        memset_async(busy_buf, (unsigned char)i, BUSY_BYTES, busy);
        busy_until += memset_us;
    }
    for (int i = 0; i < n; i++)
        for (int f = 0; f < 2; f++)
            event_record(workers[i].pend[f], busy);
}

/* Brings the threads' own streams to rest, so that "idle" queries find them idle. */
static void settle(int n, int is_busy)
{
    if (!is_busy) {
        ctx_sync();
        return;
    }
    for (int i = 0; i < n; i++)
        stream_sync(workers[i].own);
}

/* One figure: `op` on n threads at once, on an idle or busy device, with events of kind k. */
static void figure(enum op op, int k, int n, int is_busy)
{
    double each[MAX_THREADS * ROUNDS], rate[ROUNDS], wall = 0;
    int busy_lost = 0;
    for (int i = 0; i < n; i++)
        workers[i].unexpected = 0;
    settle(n, is_busy);
    for (int r = 0; r < ROUNDS; r++) {
        if (is_busy)
            top_up(n, wall);
        double t0 = now_us();
        if (n == 1) {
            workers[0].took[r] = run_op(&workers[0], op, k);
        } else {
            job.op = op;
            job.kind = k;
            job.round = r;
            pthread_barrier_wait(&go);
            pthread_barrier_wait(&go);
        }
        wall = now_us() - t0;
        /* Over the span the threads were calling, not the barrier's wake-ups around it. */
        double first = workers[0].start, last = workers[0].end;
        for (int i = 0; i < n; i++) {
            each[r * n + i] = workers[i].took[r] / CALLS;
            first = workers[i].start < first ? workers[i].start : first;
            last = workers[i].end > last ? workers[i].end : last;
        }
        rate[r] = (double)(n * CALLS) / ((last - first) / 1000.0);
        if (is_busy && stream_query(busy) == CUDA_SUCCESS) {
            busy_lost++;
            busy_until = 0;
        }
    }
    char key[96];
    snprintf(key, sizeof key, "%s.t%d%s%s.%s", is_busy ? "busy" : "idle", n,
             ops[op].timed ? "." : "", ops[op].timed ? event_kind[k] : "", ops[op].name);
    printf("%s.us=%.2f\n", key, median(each, n * ROUNDS));
    if (n > 1)
        printf("%s.per_ms=%.1f\n", key, median(rate, ROUNDS));
    int unexpected = 0;
    for (int i = 0; i < n; i++)
        unexpected += workers[i].unexpected;
    if (unexpected || busy_lost)
        printf("%s.unexpected=%d busy_lost=%d\n", key, unexpected, busy_lost);
    fflush(stdout);
}

static void all_figures(int n, int is_busy)
{
    for (int op = 0; op < N_OPS; op++) {
        if (ops[op].when == (is_busy ? 1 : 2))
            continue;
        for (int k = 0; k < (ops[op].timed ? 2 : 1); k++)
            figure((enum op)op, k, n, is_busy);
    }
}

static int make_worker(worker *w)
{
    int bad = mem_alloc(&w->small, 8) != CUDA_SUCCESS ||
              stream_create(&w->own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
              stream_create(&w->waits, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
              stream_create(&w->blocked, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS;
    for (int f = 0; f < 2 && !bad; f++) {
        bad = event_create(&w->rec[f], event_flags[f]) != CUDA_SUCCESS ||
              event_create(&w->done[f], event_flags[f]) != CUDA_SUCCESS ||
              event_create(&w->pend[f], event_flags[f]) != CUDA_SUCCESS ||
              event_record(w->done[f], w->own) != CUDA_SUCCESS;
    }
    return bad;
}

/* Microseconds one 64 MiB memset keeps the busy stream busy, after a first one has paid for
 * anything done once. */
static double time_memset(void)
{
    memset_async(busy_buf, 0, BUSY_BYTES, busy);
    stream_sync(busy);
    double t0 = now_us();
    for (int i = 0; i < 8; i++)
        memset_async(busy_buf, (unsigned char)i, BUSY_BYTES, busy);
    stream_sync(busy);
    return (now_us() - t0) / 8;
}

int main(void)
{
    CUdevice dev;
    void *lib = probe_open(&dev, &ctx);
    LOAD(set_current, "cuCtxSetCurrent");
    LOAD(mem_alloc, "cuMemAlloc_v2");
    LOAD(stream_create, "cuStreamCreate");
    LOAD(stream_query, "cuStreamQuery");
    LOAD(stream_sync, "cuStreamSynchronize");
    LOAD(stream_wait, "cuStreamWaitEvent");
    LOAD(memset_async, "cuMemsetD8Async");
    LOAD(event_create, "cuEventCreate");
    LOAD(event_record, "cuEventRecord");
    LOAD(event_query, "cuEventQuery");
    LOAD(event_sync, "cuEventSynchronize");
    LOAD(ctx_sync, "cuCtxSynchronize");
    if (stream_create(&busy, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        mem_alloc(&busy_buf, BUSY_BYTES) != CUDA_SUCCESS) {
        printf("no busy stream\n");
        return 1;
    }
    for (int i = 0; i < MAX_THREADS; i++)
        if (make_worker(&workers[i]) != 0) {
            printf("no streams or events for thread %d\n", i);
            return 1;
        }
    ctx_sync();
    memset_us = time_memset();
    printf("memset64MiB.us=%.1f calls=%d rounds=%d\n", memset_us, CALLS, ROUNDS);
    if (memset_us <= 0)
        memset_us = 1;
    pthread_barrier_init(&go, NULL, MAX_THREADS + 1);
    for (int i = 0; i < MAX_THREADS; i++)
        pthread_create(&workers[i].t, NULL, work, &workers[i]);
    /* Idle first: the waits on pending events leave the `blocked` streams behind the busy one. */
    for (int is_busy = 0; is_busy < 2; is_busy++) {
        all_figures(1, is_busy);
        all_figures(MAX_THREADS, is_busy);
    }
    job.quit = 1;
    pthread_barrier_wait(&go);
    for (int i = 0; i < MAX_THREADS; i++)
        pthread_join(workers[i].t, NULL);
    double t0 = now_us();
    ctx_sync();
    printf("drain.us=%.0f\n", now_us() - t0);
    /* Streams, events and memory go with the process. */
    return 0;
}
