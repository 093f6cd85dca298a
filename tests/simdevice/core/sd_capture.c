/* sd_capture.c: stream capture sequences, and the rules of the CUDA driver's documentation that
 * forbid calls while one is under way: a capture begins on a stream and is ended there, by the
 * same thread unless it was begun relaxed; work given to a capturing stream becomes nodes of its
 * graph; and what would have to wait for captured work, which never runs, fails and invalidates
 * the capture (cuThreadExchangeStreamCaptureMode and cuStreamIsCapturing in cuda.h). The calls
 * that begin and end a capture and report on it are in sd_capture_api.c. */
#include <stdlib.h>

#include "sd_capture.h"

struct sd_capture *sd_captures;
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

bool sd_capture_begun_here(const struct sd_capture *c)
{
    return pthread_equal(c->thread, pthread_self()) != 0;
}

/* The three modes as cuda.h words them: a thread's own capture forbids its unsafe calls unless
 * begun relaxed; another thread's global capture forbids them to global-mode threads. */
static bool forbids(const struct sd_capture *c)
{
    if (thread_mode == SD_CAPTURE_RELAXED)
        return false;
    if (sd_capture_begun_here(c))
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

bool sd_capture_legacy_blocked(const struct sd_device *d, bool invalidate)
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
    return sd_capture_legacy_blocked(s->dev, true) ? SD_ECAPIMPLICIT : SD_OK;
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

void sd_capture_finish(struct sd_capture *c)
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

void sd_capture_stream_gone(struct sd_stream *s)
{
    struct sd_capture *c = s->capture->c;
    if (c->origin == s) {
        sd_capture_finish(c); /* nobody can end it any more */
        return;
    }
    sd_capture_invalidate(c);
    leave(s);
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
