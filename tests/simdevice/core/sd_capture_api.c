/* sd_capture_api.c: the capture calls of the API (begin, end, status), on top of sd_capture.c's
 * rules. Kept apart from the rules because these resolve stream handles and publish graphs,
 * and both of those use the rules. */
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

static uint64_t last_id;

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
    if (!rc && c->mode != SD_CAPTURE_RELAXED && !sd_capture_begun_here(c))
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
        sd_capture_finish(c);
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
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
    if (!rc && s->kind == SK_LEGACY && sd_capture_legacy_blocked(s->dev, false))
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
