/* sd_stream.c: streams as worker threads with FIFO queues. Every op carries the (stream, seq)
 * pairs it must wait for; legacy default-stream semantics are those dependencies, added at
 * enqueue time. What a program's handle names, and the entry points above the queues, are in
 * sd_stream_handle.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

struct sd_set sd_streams_set, sd_events_set;

/* Objects of streams that are gone, reused last-gone first: as with the real driver, a new
 * stream may get the handle of one destroyed before it, which a cache keyed by handles must
 * survive. Under sd_lock; bounded by the most streams alive at once. */
static struct sd_stream *recycled;

void sd_stream_unref(struct sd_stream *s)
{
    if (--s->refs == 0) {
        pthread_cond_destroy(&s->work);
        s->next = recycled;
        recycled = s;
    }
}

/* Here, not in sd_event.c: a queued record holds its event and a recorded event its stream, so
 * the two releases call each other; and the workers, below the event calls, drop records. */
void sd_event_unref(struct sd_event *e)
{
    if (--e->refs == 0) {
        sd_capmark_free(e->capmark);
        if (e->s)
            sd_stream_unref(e->s);
        free(e);
    }
}

static struct sd_stream *stream_object(void)
{
    struct sd_stream *s = recycled;
    if (!s)
        return calloc(1, sizeof *s);
    recycled = s->next;
    memset(s, 0, sizeof *s);
    return s;
}

static void complete(struct sd_stream *s, struct sd_op *op)
{
    s->done = op->seq;
    s->done_time = sd_now();
    if (op->kind == OP_EVENT) {
        struct sd_event *e = op->u.event.ev;
        if (e->gen == op->u.event.gen)
            e->time = s->done_time;
        sd_event_unref(e);
    }
    if (op->kind == OP_FREE) {
        struct sd_device *owner = &sd_dev[op->u.free.dev];
        if (owner->base)
            sd_dev_release(owner, op->u.free.addr);
    }
    for (int i = 0; i < op->ndeps; i++)
        sd_stream_unref(op->deps[i].s);
    free(op);
    pthread_cond_broadcast(&sd_cv);
}

/* An op completes no sooner than the device's latency after it was queued, whoever runs it:
 * a GPU takes that long for the smallest work, and a loop that waits for each of its memsets
 * pays it. Outside sd_lock. */
static void await_latency(const struct sd_op *op)
{
    double ready = op->queued + sd_cfg.op_latency_us * 1e-6;
    while (sd_now() < ready) {
    }
}

/* Whether op's dependencies on other streams are met. Under sd_lock. */
static bool deps_met(const struct sd_op *op)
{
    for (int i = 0; i < op->ndeps; i++)
        if (op->deps[i].s->done < op->deps[i].seq)
            return false;
    return true;
}

/* Runs s's head op, which the caller has claimed with s->running, and completes it. Under
 * sd_lock, which it lets go of while the op runs. */
static void run_claimed(struct sd_stream *s, struct sd_op *op)
{
    pthread_mutex_unlock(&sd_lock);
    sd_op_execute(s, op);
    await_latency(op);
    pthread_mutex_lock(&sd_lock);
    s->running = false;
    s->head = op->next;
    if (!s->head)
        s->tail = NULL;
    complete(s, op);
}

/* The device's own work a waiting thread may run itself: copies, sets, event records and
 * markers. Never the program's code (host functions, callbacks: the driver's thread runs
 * those) nor a graph's memory nodes. */
static bool device_work(const struct sd_op *op)
{
    return op->kind == OP_COPY || op->kind == OP_SET || op->kind == OP_EVENT ||
           op->kind == OP_NOP || op->kind == OP_FREE;
}

/* A thread that waits for s runs its head op itself when no one runs it and nothing holds it
 * back, and says whether it did. A GPU's host wait lasts as long as the work, not until a
 * worker thread is next scheduled: on 2 shared CPUs that hand-over cost tens of microseconds
 * and made every wait for the device look dear (docs/simdevice.md, "The cost model"). The
 * worker still runs everything no one waits for, so the device stays asynchronous. Under
 * sd_lock. */
static bool help(struct sd_stream *s)
{
    struct sd_op *op = s->head;
    if (!op || s->running || !device_work(op) || !deps_met(op))
        return false;
    s->running = true;
    run_claimed(s, op);
    pthread_cond_signal(&s->work); /* the rest is the worker's again, or its exit if closing */
    return true;
}

/* Work a query may run: device work small enough that a GPU finishes it within its latency. */
static bool small_work(const struct sd_op *op)
{
    if (op->kind == OP_COPY)
        return op->u.copy.n <= SD_SMALL_WORK;
    if (op->kind == OP_SET)
        return op->u.set.n <= SD_SMALL_WORK;
    return device_work(op);
}

void sd_catch_up(struct sd_stream *s, uint64_t seq)
{
    s->refs++;
    while (s->done < seq) {
        struct sd_op *op = s->head;
        if (!op || s->running || !small_work(op) || !deps_met(op) ||
            sd_now() < op->queued + sd_cfg.op_latency_us * 1e-6)
            break;
        s->running = true;
        run_claimed(s, op);
        pthread_cond_signal(&s->work);
    }
    sd_stream_unref(s);
}

static void *worker(void *arg)
{
    struct sd_stream *s = arg;
    pthread_mutex_lock(&sd_lock);
    for (;;) {
        while ((!s->head || s->running) && !(s->closing && !s->head))
            pthread_cond_wait(&s->work, &sd_lock);
        if (!s->head)
            break;
        struct sd_op *op = s->head;
        s->running = true; /* claimed before its dependencies: no waiter takes it meanwhile */
        while (!deps_met(op))
            pthread_cond_wait(&sd_cv, &sd_lock);
        run_claimed(s, op);
    }
    struct sd_device *d = s->dev;
    if (s->prev)
        s->prev->next = s->next;
    else
        d->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    sd_stream_unref(s);
    pthread_cond_broadcast(&sd_cv);
    pthread_mutex_unlock(&sd_lock);
    return NULL;
}

int sd_stream_new(struct sd_device *d, enum sd_stream_kind kind, unsigned flags, int prio,
                  struct sd_stream **out)
{
    struct sd_stream *s = stream_object();
    if (!s)
        return SD_ENOMEM;
    s->dev = d;
    s->kind = kind;
    s->flags = flags;
    s->priority = prio;
    s->refs = 2; /* the owner's and the worker's */
    pthread_cond_init(&s->work, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &attr, worker, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_cond_destroy(&s->work);
        free(s);
        return SD_ENOMEM;
    }
    s->next = d->streams;
    if (d->streams)
        d->streams->prev = s;
    d->streams = s;
    *out = s;
    return SD_OK;
}

struct sd_op *sd_op_new(enum sd_op_kind kind)
{
    struct sd_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    return op;
}

static bool pending(const struct sd_stream *s)
{
    return s->done < s->enq;
}

/* Whether legacy work queued on s must wait for o's work queued so far. */
static bool legacy_waits_for(const struct sd_stream *s, const struct sd_stream *o)
{
    return o != s && !(o->flags & 1) && pending(o);
}

/* Stores dep as deps[i] when there is room for it, pinning its stream for the op. */
static void put_dep(struct sd_dep *deps, int room, int i, struct sd_dep dep)
{
    if (i >= room)
        return;
    deps[i] = dep;
    dep.s->refs++;
}

/* The dependencies of an op queued on s: `extra` unless already met, and the legacy-stream
 * semantics. Fills the first `room` of them into deps and returns how many there are. Never
 * lets go of sd_lock: a wait in the middle of the walk would let the stream it stands on exit
 * and be recycled, sending the walk down the list of recycled streams past the rest. */
static int collect_deps(struct sd_stream *s, const struct sd_dep *extra, struct sd_dep *deps,
                        int room)
{
    struct sd_device *d = s->dev;
    int n = 0;
    if (extra && extra->s != s && extra->s->done < extra->seq)
        put_dep(deps, room, n++, *extra);
    if (s->kind == SK_LEGACY) {
        /* Legacy work waits for all earlier work of every blocking stream of the device. */
        for (struct sd_stream *o = d->streams; o; o = o->next)
            if (legacy_waits_for(s, o))
                put_dep(deps, room, n++, (struct sd_dep){o, o->enq});
    } else if (!(s->flags & 1) && d->legacy && d->legacy != s && pending(d->legacy)) {
        put_dep(deps, room, n++, (struct sd_dep){d->legacy, d->legacy->enq});
    }
    return n;
}

/* Out of memory for the op's dependencies: meets them on the host instead, still correct, only
 * slower. Each wait lets go of sd_lock, so the next stream is found again from the list's head. */
static void wait_deps_on_host(struct sd_stream *s, const struct sd_dep *extra)
{
    if (extra && extra->s != s)
        sd_wait_seq(extra->s, extra->seq);
    struct sd_dep dep;
    while (collect_deps(s, NULL, &dep, 1) > 0) {
        sd_wait_seq(dep.s, dep.seq);
        sd_stream_unref(dep.s);
    }
}

uint64_t sd_enqueue(struct sd_stream *s, struct sd_op *op, const struct sd_dep *extra)
{
    int n = collect_deps(s, extra, NULL, 0);
    struct sd_op *full = realloc(op, sizeof *op + (size_t)n * sizeof op->deps[0]);
    if (full) {
        op = full;
        op->ndeps = collect_deps(s, extra, op->deps, n);
    } else {
        wait_deps_on_host(s, extra);
        op->ndeps = 0;
    }
    op->next = NULL;
    op->seq = ++s->enq;
    op->queued = sd_now();
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->work);
    return op->seq;
}

/* Waits, running what it may of s's queue itself, until s has passed seq. Under sd_lock. */
static void wait_stream(struct sd_stream *s, uint64_t seq)
{
    while (s->done < seq)
        if (!help(s))
            pthread_cond_wait(&sd_cv, &sd_lock);
}

void sd_wait_seq(struct sd_stream *s, uint64_t seq)
{
    s->refs++;
    wait_stream(s, seq);
    sd_stream_unref(s);
}

void sd_wait_device(struct sd_device *d)
{
    size_t n = 0;
    for (struct sd_stream *s = d->streams; s; s = s->next)
        n++;
    if (!n)
        return;
    struct sd_dep *snap = malloc(n * sizeof *snap);
    if (!snap) {
        while (1) {
            bool busy = false;
            for (struct sd_stream *s = d->streams; s; s = s->next)
                busy |= pending(s);
            if (!busy)
                return;
            pthread_cond_wait(&sd_cv, &sd_lock);
        }
    }
    size_t k = 0;
    for (struct sd_stream *s = d->streams; s; s = s->next) {
        snap[k++] = (struct sd_dep){s, s->enq};
        s->refs++;
    }
    for (size_t i = 0; i < k; i++) {
        wait_stream(snap[i].s, snap[i].seq);
        sd_stream_unref(snap[i].s);
    }
    free(snap);
}
