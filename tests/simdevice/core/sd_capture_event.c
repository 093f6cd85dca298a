/* sd_capture_event.c: events and stream capture. A record on a capturing stream marks the event
 * with the capture and the nodes recorded so far; waiting for it from another stream forks that
 * stream into the capture, or joins it back; the event cannot be queried or waited for on the
 * host while its capture is under way (CUDA_ERROR_CAPTURED_EVENT). */
#include <stdlib.h>

#include "sd_capture.h"

int sd_capture_record(struct sd_event *e, struct sd_stream *s, bool *taken)
{
    *taken = false;
    if (sd_captures && s->capture) {
        struct sd_capture *c = s->capture->c;
        if (c->invalid)
            return SD_ECAPINVALID;
        struct sd_capmark *m = calloc(1, sizeof *m);
        if (!m || sd_nodeset_copy(&m->deps, &s->capture->tail) != SD_OK) {
            sd_capmark_free(m);
            return SD_ENOMEM;
        }
        m->id = c->id;
        sd_capmark_free(e->capmark);
        e->capmark = m;
        *taken = true;
        return SD_OK;
    }
    int rc = sd_capture_legacy(s);
    if (!rc && e->capmark) { /* an ordinary record replaces the captured one */
        sd_capmark_free(e->capmark);
        e->capmark = NULL;
    }
    return rc;
}

int sd_capture_event_use(struct sd_event *e)
{
    if (e->capmark && sd_capture_by_id(e->capmark->id))
        return SD_ECAPEVENT;
    return sd_captures ? sd_capture_unsafe() : SD_OK;
}

int sd_capture_wait_event(struct sd_stream *s, struct sd_event *e, bool *handled)
{
    *handled = false;
    if (!sd_captures)
        return SD_OK;
    struct sd_capture *ec = e->capmark ? sd_capture_by_id(e->capmark->id) : NULL;
    if (s->capture) {
        struct sd_capture *c = s->capture->c;
        if (c->invalid)
            return SD_ECAPINVALID;
        if (ec && ec != c) {
            sd_capture_invalidate(c);
            return SD_ECAPMERGE;
        }
        /* Only in-stream order may cross the boundary: work recorded outside the capture
         * cannot become a dependency of its nodes. */
        if (!ec && e->recorded && !e->capmark) {
            sd_capture_invalidate(c);
            return SD_ECAPISOLATION;
        }
        *handled = true;
        for (size_t i = 0; ec && i < e->capmark->deps.n; i++)
            if (sd_nodeset_add(&s->capture->tail, e->capmark->deps.v[i]) != SD_OK) {
                sd_capture_invalidate(c);
                return SD_ENOMEM;
            }
        return SD_OK;
    }
    if (!ec)
        return sd_capture_legacy(s);
    if (s->kind == SK_LEGACY) {
        sd_capture_invalidate(ec);
        return SD_ECAPIMPLICIT;
    }
    *handled = true;
    return sd_capture_join(ec, s, &e->capmark->deps);
}
