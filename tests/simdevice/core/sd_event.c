/* sd_event.c: events. A record is an op on the stream; the event completes when the stream
 * passes it. An event never recorded counts as complete. */
#include <stdlib.h>

#include "sd_capture.h"

static void unlink_event(struct sd_event *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        e->dev->events = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->next = e->prev = NULL;
}

void sd_events_drop_device(struct sd_device *d)
{
    while (d->events) {
        struct sd_event *e = d->events;
        unlink_event(e);
        sd_set_del(&sd_events_set, e);
        sd_event_unref(e);
    }
}

int sd_event_create(void **out, unsigned flags)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!out || flags > 0xF)
        return SD_EINVAL;
    struct sd_event *e = calloc(1, sizeof *e);
    if (!e)
        return SD_ENOMEM;
    pthread_mutex_lock(&sd_lock);
    e->dev = sd_cur();
    e->flags = flags;
    e->refs = 1;
    if (sd_inject_event_create(e->dev) || sd_set_add(&sd_events_set, e) != 0) {
        pthread_mutex_unlock(&sd_lock);
        free(e);
        return SD_ENOMEM;
    }
    e->next = e->dev->events;
    if (e->next)
        e->next->prev = e;
    e->dev->events = e;
    pthread_mutex_unlock(&sd_lock);
    *out = e;
    return SD_OK;
}

bool sd_event_pending(const struct sd_event *e)
{
    /* A record inside a capture replaced the last real one: nothing is left to wait for. */
    return e->recorded && !e->capmark && e->s->done < e->seq;
}

/* Looks up a live event and the sticky state of its device. Under sd_lock. */
static int lookup(void *handle, struct sd_event **out)
{
    if (!sd_set_has(&sd_events_set, handle))
        return SD_EHANDLE;
    *out = handle;
    return (*out)->dev->sticky;
}

int sd_event_record(void *event, void *stream, int ptsz)
{
    double t0 = sd_now();
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_event *e;
    struct sd_stream *s;
    struct sd_op *op = NULL;
    int rc = lookup(event, &e);
    if (!rc)
        rc = sd_op_prepare(stream, ptsz, OP_EVENT, &s, &op);
    if (!rc && sd_inject_event_record(e->dev))
        rc = SD_ENOMEM;
    bool taken = false;
    if (!rc)
        rc = sd_capture_record(e, s, &taken);
    if (rc || taken) {
        free(op);
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    e->gen++;
    op->u.event.ev = e;
    op->u.event.gen = e->gen;
    e->refs++;
    uint64_t seq = sd_enqueue(s, op, NULL);
    s->refs++;
    if (e->s)
        sd_stream_unref(e->s);
    e->s = s;
    e->seq = seq;
    e->recorded = true;
    s->dev->c.events_recorded++;
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.event_record_us);
    return SD_OK;
}

int sd_event_query(void *event)
{
    double t0 = sd_now();
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_event *e;
    int rc = lookup(event, &e);
    if (!rc)
        rc = sd_capture_event_use(e);
    if (!rc && sd_event_pending(e)) {
        e->refs++; /* the catch-up lets go of sd_lock */
        sd_catch_up(e->s, e->seq);
        if (sd_event_pending(e))
            rc = SD_ENOTREADY;
        sd_event_unref(e);
    }
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.event_query_us);
    return rc;
}

int sd_event_sync(void *event)
{
    double t0 = sd_now();
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_event *e;
    int rc = lookup(event, &e);
    if (!rc)
        rc = sd_capture_event_use(e);
    bool waited = !rc && sd_event_pending(e);
    if (waited) {
        e->refs++;
        sd_wait_seq(e->s, e->seq);
        sd_pool_sync_trim(); /* a pool gives memory back at a synchronization */
        rc = e->dev->sticky;
        sd_event_unref(e);
    }
    pthread_mutex_unlock(&sd_lock);
    /* A done event answers as a query does; a wait costs what a synchronization costs. */
    sd_price_floor(t0, waited ? sd_cfg.sync_us : sd_cfg.event_query_us);
    sd_inject_sync_delay();
    return rc;
}

int sd_event_destroy(void *event)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    if (!sd_set_has(&sd_events_set, event)) {
        pthread_mutex_unlock(&sd_lock);
        return SD_EHANDLE;
    }
    struct sd_event *e = event;
    sd_set_del(&sd_events_set, e);
    unlink_event(e);
    sd_event_unref(e);
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

int sd_event_elapsed(float *ms, void *start, void *end)
{
    sd_init();
    if (!ms)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_event *a, *b;
    int rc = lookup(start, &a);
    if (!rc)
        rc = lookup(end, &b);
    if (!rc && ((a->flags | b->flags) & 2)) /* cudaEventDisableTiming */
        rc = SD_EHANDLE;
    if (!rc && (!a->recorded || !b->recorded))
        rc = SD_EHANDLE;
    if (!rc && (sd_event_pending(a) || sd_event_pending(b)))
        rc = SD_ENOTREADY;
    if (!rc)
        *ms = (float)((b->time - a->time) * 1e3);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}
