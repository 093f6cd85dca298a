/* The streams the contract watches: the fence set (the live non-blocking streams a fence puts
 * an event on; the legacy stream's covers the blocking ones) and the destroyed streams whose
 * last work may still run. The arena's doors (arena.c) take the device lock and tell this
 * file; a stream's pool is the arena's, what its blocks wait for is the module's. */
#include "reuse/reuse.h"
#include "base/grow.h"

static void add_stream(ca_reuse *r, ca_stream_t s)
{
    for (int i = 0; i < r->nstreams; i++)
        if (r->streams[i] == s)
            return;
    ca_stream_t *n = ca_grow(r->streams, r->nstreams, &r->cap_streams, sizeof *n, 8);
    if (!n) {
        r->streams_lost = true;
        return;
    }
    r->streams = n;
    r->streams[r->nstreams++] = s;
}

static void drop_stream(ca_reuse *r, ca_stream_t s)
{
    for (int i = 0; i < r->nstreams; i++) {
        if (r->streams[i] == s) {
            r->streams[i] = r->streams[--r->nstreams];
            break;
        }
    }
}

/* Watch destroyed stream s through a last event on it; false when it cannot be watched. */
static bool track_dying(ca_arena *a, ca_device *d, ca_stream_t s)
{
    ca_reuse *r = &d->reuse;
    ca_dying *n = ca_grow(r->dying, r->ndying, &r->cap_dying, sizeof *n, 4);
    if (!n)
        return false;
    r->dying = n;
    ca_event_t ev = ca_reuse_event_get(a, d);
    if (!ev)
        return false;
    if (a->be.event_record(a->be.ctx, d->id, ev, s) != CA_OK) {
        ca_reuse_event_put(d, ev);
        return false;
    }
    r->dying[r->ndying++] = (ca_dying){ev, ++r->dying_stamp, false};
    return true;
}

void ca_reuse_stream_created(ca_arena *a, ca_device *d, ca_stream_t s, bool nonblocking)
{
    if (nonblocking)
        add_stream(&d->reuse, s);
    ca_reuse_other_stream(a, d);
}

void ca_reuse_stream_seen(ca_arena *a, ca_device *d, ca_stream_t s)
{
    /* The legacy stream seen from a second thread is that thread's default stream: its plain
     * blocks, kept by itself, stay ordered by it. */
    if (s != CA_STREAM_LEGACY)
        ca_reuse_other_stream(a, d);
    else if (!d->reuse.fenced)
        ca_reuse_switch(a, d);
}

void ca_reuse_stream_destroyed(ca_arena *a, ca_device *d, ca_stream_t s)
{
    drop_stream(&d->reuse, s);
    if (!ca_reuse_fencing(&d->reuse, &a->cfg))
        return;
    /* Work queued on s before its destruction may still run: later fences, which no longer
     * include s, are trusted only once this event completed. */
    if (ca_quiet(a))
        d->reuse.sync_owed = true; /* cannot watch s now: a synchronization after the capture */
    else if (a->be.stream_query && a->be.stream_query(a->be.ctx, d->id, s) > 0)
        ; /* idle: nothing queued on it can touch memory any more */
    else if (!track_dying(a, d, s))
        ca_reuse_wait_device(a, d); /* cannot watch s: wait for it once, now */
}
