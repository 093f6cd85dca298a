/* sd_capture.c: stream capture sequences, and the rules of the CUDA driver's documentation that
 * forbid calls while one is under way: a capture begins on a stream and is ended there, by the
 * same thread unless it was begun relaxed; work given to a capturing stream becomes nodes of its
 * graph; and what would have to wait for captured work, which never runs, fails and invalidates
 * the capture (cuThreadExchangeStreamCaptureMode and cuStreamIsCapturing in cuda.h). */
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

struct sd_capture *sd_captures;
static uint64_t last_id;
/* The calling thread's interaction mode (cuThreadExchangeStreamCaptureMode); global by default. */
static __thread int thread_mode = SD_CAPTURE_GLOBAL;

struct sd_capture *sd_capture_by_id(uint64_t id)
{
    for (struct sd_capture *c = sd_captures; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

void sd_capture_invalidate(struct sd_capture *c)
{
    if (!c->invalid)
        sd_log("capture %llu invalidated", (unsigned long long)c->id);
    c->invalid = true;
}

static bool begun_here(const struct sd_capture *c)
{
    return pthread_equal(c->thread, pthread_self()) != 0;
}

/* The three modes as cuda.h words them: a thread's own capture forbids its unsafe calls unless
 * begun relaxed; another thread's global capture forbids them to global-mode threads. */
static bool forbids(const struct sd_capture *c)
{
    if (thread_mode == SD_CAPTURE_RELAXED)
        return false;
    if (begun_here(c))
        return c->mode != SD_CAPTURE_RELAXED;
    return thread_mode == SD_CAPTURE_GLOBAL && c->mode == SD_CAPTURE_GLOBAL;
}

int sd_capture_unsafe(void)
{
    int rc = SD_OK;
    for (struct sd_capture *c = sd_captures; c; c = c->next)
        if (forbids(c)) {
            sd_capture_invalidate(c);
            rc = SD_ECAPUNSUP;
        }
    return rc;
}

/* Whether a stream of device d takes part in c (blocking ones only, with `blocking`). */
static bool touches(const struct sd_capture *c, const struct sd_device *d, bool blocking)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        const struct sd_stream *t = c->streams[i];
        if (t->capture && t->capture->c == c && t->dev == d && (!blocking || !(t->flags & 1)))
            return true;
    }
    return false;
}

int sd_capture_device_sync(struct sd_device *d)
{
    int rc = sd_capture_unsafe();
    for (struct sd_capture *c = sd_captures; c; c = c->next)
        if (touches(c, d, false)) {
            sd_capture_invalidate(c);
            rc = SD_ECAPUNSUP;
        }
    return rc;
}

/* Whether a blocking stream of d captures: the legacy stream would depend on its work. */
static bool legacy_blocked(const struct sd_device *d, bool invalidate)
{
    bool any = false;
    for (struct sd_capture *c = sd_captures; c; c = c->next)
        if (touches(c, d, true)) {
            if (invalidate)
                sd_capture_invalidate(c);
            any = true;
        }
    return any;
}

int sd_capture_legacy(struct sd_stream *s)
{
    if (!sd_captures || s->kind != SK_LEGACY)
        return SD_OK;
    return legacy_blocked(s->dev, true) ? SD_ECAPIMPLICIT : SD_OK;
}

int sd_capture_stream_wait(struct sd_stream *s)
{
    if (!sd_captures)
        return SD_OK;
    if (s->capture) {
        sd_capture_invalidate(s->capture->c);
        return SD_ECAPUNSUP;
    }
    return sd_capture_legacy(s);
}

int sd_capture_take(struct sd_stream *s, struct sd_op *op, bool *taken)
{
    *taken = false;
    if (!sd_captures)
        return SD_OK;
    if (!s->capture)
        return sd_capture_legacy(s);
    struct sd_capture *c = s->capture->c;
    if (c->invalid)
        return SD_ECAPINVALID;
    /* cuStreamAddCallback is documented as not supported in capture (cuLaunchHostFunc is). */
    if (op->kind == OP_CALLBACK) {
        sd_capture_invalidate(c);
        return SD_ECAPUNSUP;
    }
    *taken = true;
    if (!sd_capture_add(s->capture, op)) {
        sd_capture_invalidate(c);
        return SD_ENOMEM;
    }
    return SD_OK;
}

static int add_stream(struct sd_capture *c, struct sd_stream *s)
{
    if (c->nstreams == c->capstreams) {
        size_t cap = c->capstreams ? c->capstreams * 2 : 4;
        struct sd_stream **v = realloc(c->streams, cap * sizeof *v);
        if (!v)
            return SD_ENOMEM;
        c->streams = v;
        c->capstreams = cap;
    }
    c->streams[c->nstreams++] = s;
    s->refs++;
    return SD_OK;
}

int sd_capture_join(struct sd_capture *c, struct sd_stream *s, const struct sd_nodeset *deps)
{
    struct sd_capstream *cs = calloc(1, sizeof *cs);
    if (!cs || sd_nodeset_copy(&cs->tail, deps) != SD_OK || add_stream(c, s) != SD_OK) {
        if (cs)
            sd_nodeset_free(&cs->tail);
        free(cs);
        return SD_ENOMEM;
    }
    cs->c = c;
    s->capture = cs;
    return SD_OK;
}

static void leave(struct sd_stream *s)
{
    struct sd_capstream *cs = s->capture;
    sd_nodeset_free(&cs->tail);
    free(cs->edges);
    free(cs);
    s->capture = NULL;
}

/* Ends c: its streams leave it (dropping their references) and it is forgotten. */
static void finish(struct sd_capture *c)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        struct sd_stream *t = c->streams[i];
        if (t->capture && t->capture->c == c)
            leave(t);
        sd_stream_unref(t);
    }
    struct sd_capture **p = &sd_captures;
    while (*p != c)
        p = &(*p)->next;
    *p = c->next;
    sd_graph_free(c->graph);
    free(c->streams);
    free(c);
}

int sd_capture_begin(void *stream, int ptsz, int mode)
{
    sd_init();
    if (mode < SD_CAPTURE_GLOBAL || mode > SD_CAPTURE_RELAXED)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_live(stream, ptsz, &s);
    /* "Capture may not be initiated if stream is CU_STREAM_LEGACY." */
    if (!rc && s->kind == SK_LEGACY)
        rc = SD_ECAPUNSUP;
    if (!rc && s->capture)
        rc = SD_EILLSTATE;
    struct sd_capture *c = NULL;
    if (!rc && (!(c = calloc(1, sizeof *c)) || !(c->graph = sd_graph_new())))
        rc = SD_ENOMEM;
    if (!rc) {
        struct sd_nodeset none = {0};
        c->id = ++last_id;
        c->mode = mode;
        c->thread = pthread_self();
        c->origin = s;
        rc = sd_capture_join(c, s, &none);
    }
    if (!rc) {
        c->next = sd_captures;
        sd_captures = c;
        sd_log("capture %llu begins (mode %d)", (unsigned long long)c->id, mode);
    } else if (c) {
        sd_graph_free(c->graph);
        free(c);
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

/* Whether every stream forked into c was joined back into its origin. */
static bool joined(const struct sd_capture *c)
{
    const struct sd_nodeset *origin = &c->origin->capture->tail;
    for (size_t i = 0; i < c->nstreams; i++) {
        const struct sd_stream *t = c->streams[i];
        if (t != c->origin && t->capture && t->capture->c == c &&
            !sd_nodeset_reaches(c->graph, origin, &t->capture->tail))
            return false;
    }
    return true;
}

int sd_capture_end(void *stream, int ptsz, void **graph)
{
    sd_init();
    if (!graph)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_stream(stream, ptsz, &s);
    struct sd_capture *c = !rc && s->capture ? s->capture->c : NULL;
    if (!rc && !c)
        rc = SD_EILLSTATE;
    if (!rc && c->origin != s) {
        sd_capture_invalidate(c);
        rc = SD_ECAPUNMATCHED;
    }
    if (!rc && c->mode != SD_CAPTURE_RELAXED && !begun_here(c))
        rc = SD_ECAPTHREAD;
    if (!rc) {
        *graph = NULL;
        if (c->invalid)
            rc = SD_ECAPINVALID;
        else if (!joined(c))
            rc = SD_ECAPUNJOINED;
        if (!rc) {
            struct sd_graph *g = c->graph;
            g->capturing = false;
            rc = sd_graph_publish(g);
            if (!rc) {
                c->graph = NULL;
                *graph = g;
            }
        }
        sd_log("capture %llu ends -> %d", (unsigned long long)c->id, rc);
        finish(c);
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

void sd_capture_stream_gone(struct sd_stream *s)
{
    struct sd_capture *c = s->capture->c;
    if (c->origin == s) {
        finish(c); /* nobody can end it any more */
        return;
    }
    sd_capture_invalidate(c);
    leave(s);
}

int sd_capture_info(void *stream, int ptsz, int *status, uint64_t *id, void **graph,
                    void *const **deps, const void **edges, size_t edge_size, size_t *ndeps)
{
    sd_init();
    if (!status)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_stream(stream, ptsz, &s);
    /* The legacy stream beside a blocking capture: an error, without invalidating it. */
    if (!rc && s->kind == SK_LEGACY && legacy_blocked(s->dev, false))
        rc = SD_ECAPIMPLICIT;
    struct sd_capstream *cs = rc ? NULL : s->capture;
    if (!rc)
        *status = !cs ? SD_CAPSTATUS_NONE
                      : cs->c->invalid ? SD_CAPSTATUS_INVALIDATED : SD_CAPSTATUS_ACTIVE;
    if (cs && !cs->c->invalid) {
        size_t want = cs->tail.n * edge_size;
        if (edges && want > cs->nedges) {
            void *z = realloc(cs->edges, want);
            if (z) {
                memset(z, 0, want);
                cs->edges = z;
                cs->nedges = want;
            }
        }
        if (id)
            *id = cs->c->id;
        if (graph)
            *graph = cs->c->graph;
        if (deps)
            *deps = (void *const *)cs->tail.v;
        if (edges)
            *edges = cs->nedges >= want ? cs->edges : NULL;
        if (ndeps)
            *ndeps = cs->tail.n;
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_capture_exchange_mode(int *mode)
{
    if (!mode || *mode < SD_CAPTURE_GLOBAL || *mode > SD_CAPTURE_RELAXED)
        return SD_EINVAL;
    int old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return SD_OK;
}
