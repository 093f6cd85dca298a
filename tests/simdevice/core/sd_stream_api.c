/* sd_stream_api.c: the stream calls of the API, on top of sd_stream.c's queues. */
#include <stdlib.h>

#include "sd_capture.h"

int sd_stream_create(void **out, unsigned flags, int priority)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!out || flags > 1)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    rc = sd_stream_new(sd_cur(), SK_USER, flags, priority, &s);
    if (!rc)
        s->owner = sd_owner_get();
    if (!rc && sd_set_add(&sd_streams_set, s) != 0) {
        sd_stream_close(s);
        rc = SD_ENOMEM;
    }
    pthread_mutex_unlock(&sd_lock);
    if (!rc)
        *out = s;
    return rc;
}

int sd_stream_destroy(void *stream)
{
    sd_init();
    uintptr_t h = (uintptr_t)stream;
    if (h <= 2)
        return SD_EHANDLE;
    pthread_mutex_lock(&sd_lock);
    int rc = SD_EHANDLE;
    if (sd_set_has(&sd_streams_set, stream)) {
        struct sd_stream *s = stream;
        sd_set_del(&sd_streams_set, s);
        rc = s->dev->sticky;
        sd_stream_close(s); /* returns at once: the worker drains its queue, then exits */
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_stream_sync(void *stream, int ptsz)
{
    double t0 = sd_now();
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_live(stream, ptsz, &s);
    if (!rc)
        rc = sd_capture_unsafe();
    if (!rc)
        rc = sd_capture_stream_wait(s);
    if (!rc) {
        if (s->kind == SK_LEGACY) {
            /* Waiting on the legacy stream waits for the blocking streams as a legacy op would. */
            struct sd_op *op = sd_op_new(OP_NOP);
            if (op)
                sd_wait_seq(s, sd_enqueue(s, op, NULL));
            else
                sd_wait_device(s->dev);
        } else {
            sd_wait_seq(s, s->enq);
        }
        sd_pool_sync_trim(); /* a pool gives memory back at a synchronization */
        rc = s->dev->sticky;
    }
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.sync_us);
    sd_inject_sync_delay();
    return rc;
}

int sd_stream_query(void *stream, int ptsz)
{
    double t0 = sd_now();
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_live(stream, ptsz, &s);
    if (!rc)
        rc = sd_capture_unsafe();
    if (!rc)
        rc = sd_capture_stream_wait(s);
    if (!rc)
        sd_catch_up(s, s->enq);
    if (!rc && s->done < s->enq)
        rc = SD_ENOTREADY;
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.stream_query_us);
    return rc;
}

int sd_stream_flags(void *stream, int ptsz, unsigned *flags)
{
    sd_init();
    if (!flags)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_stream(stream, ptsz, &s);
    if (!rc)
        *flags = s->flags;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_stream_wait_event(void *stream, void *event, unsigned flags, int ptsz)
{
    double t0 = sd_now();
    sd_init();
    if (flags > 1)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    int rc = sd_resolve_stream(stream, ptsz, &s);
    if (!rc && !sd_set_has(&sd_events_set, event))
        rc = SD_EHANDLE;
    if (!rc)
        rc = s->dev->sticky;
    bool handled = false;
    if (!rc)
        rc = sd_capture_wait_event(s, event, &handled);
    if (!rc && !handled) {
        struct sd_event *e = event;
        s->dev->c.stream_waits++;
        if (sd_event_pending(e)) {
            /* The stream waits on the device side: a marker op that depends on the event. */
            struct sd_op *op = sd_op_new(OP_NOP);
            struct sd_dep dep = {e->s, e->seq};
            if (op)
                sd_enqueue(s, op, &dep);
            else
                rc = SD_ENOMEM;
        }
    }
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.stream_wait_us);
    return rc;
}

int sd_host_func(void *stream, int ptsz, sd_hostfn fn, void *arg)
{
    sd_init();
    if (!fn)
        return SD_EINVAL;
    struct sd_op proto = {.kind = OP_HOSTFN, .u.hostfn = {fn, arg}};
    pthread_mutex_lock(&sd_lock);
    int rc = sd_submit(stream, ptsz, &proto, NULL, NULL);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_stream_callback(void *stream, int ptsz, sd_callback cb, void *arg, unsigned flags)
{
    sd_init();
    if (!cb || flags != 0)
        return SD_EINVAL;
    struct sd_op proto = {.kind = OP_CALLBACK, .u.callback = {cb, arg, stream}};
    pthread_mutex_lock(&sd_lock);
    int rc = sd_submit(stream, ptsz, &proto, NULL, NULL);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}
