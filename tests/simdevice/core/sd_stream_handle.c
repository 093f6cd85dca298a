/* sd_stream_handle.c: from a program's stream handle to a stream, and the entry points every
 * stream call goes through: the default streams, made at first use (the per-thread one per host
 * thread); resolving a live stream; submitting work to it, or to its capture; closing it, after
 * it leaves its capture. Kept apart from the queues and workers (sd_stream.c) because these call
 * the capture rules, which in turn use the queues. */
#include <stdlib.h>

#include "sd_capture.h"

/* Per host thread: its per-thread default stream on each device, tagged with the device's
 * reset generation so a reset makes it stale. */
struct pt_slot {
    struct sd_stream *s;
    uint64_t gen;
};
static pthread_key_t pt_key;
static pthread_once_t pt_once = PTHREAD_ONCE_INIT;

static void pt_release(void *v)
{
    struct pt_slot *slots = v;
    pthread_mutex_lock(&sd_lock);
    for (int i = 0; i < SD_MAX_DEVICES; i++)
        if (slots[i].s && slots[i].gen == sd_dev[i].gen)
            sd_stream_close(slots[i].s);
    pthread_mutex_unlock(&sd_lock);
    free(slots);
}

static void pt_init(void)
{
    pthread_key_create(&pt_key, pt_release);
}

void sd_stream_close(struct sd_stream *s)
{
    if (s->capture)
        sd_capture_stream_gone(s);
    s->closing = true;
    pthread_cond_signal(&s->work);
    sd_stream_unref(s);
}

int sd_resolve_stream(void *handle, int ptsz, struct sd_stream **out)
{
    uintptr_t h = (uintptr_t)handle;
    struct sd_device *d = sd_cur();
    if (h == 0)
        h = ptsz ? 2 : 1;
    if (h == 1) {
        if (!d->legacy) {
            int rc = sd_stream_new(d, SK_LEGACY, 0, 0, &d->legacy);
            if (rc)
                return rc;
        }
        *out = d->legacy;
        return SD_OK;
    }
    if (h == 2) {
        pthread_once(&pt_once, pt_init);
        struct pt_slot *slots = pthread_getspecific(pt_key);
        if (!slots) {
            slots = calloc(SD_MAX_DEVICES, sizeof *slots);
            if (!slots)
                return SD_ENOMEM;
            pthread_setspecific(pt_key, slots);
        }
        struct pt_slot *sl = &slots[d->id];
        if (!sl->s || sl->gen != d->gen) {
            int rc = sd_stream_new(d, SK_PERTHREAD, 0, 0, &sl->s);
            if (rc) {
                sl->s = NULL;
                return rc;
            }
            sl->gen = d->gen;
        }
        *out = sl->s;
        return SD_OK;
    }
    if (!sd_set_has(&sd_streams_set, handle))
        return SD_EHANDLE;
    *out = handle;
    return SD_OK;
}

int sd_resolve_live(void *handle, int ptsz, struct sd_stream **out)
{
    int rc = sd_resolve_stream(handle, ptsz, out);
    return rc ? rc : (*out)->dev->sticky;
}

int sd_op_prepare(void *handle, int ptsz, enum sd_op_kind kind, struct sd_stream **s,
                  struct sd_op **op)
{
    *op = NULL;
    int rc = sd_resolve_live(handle, ptsz, s);
    if (!rc && !(*op = sd_op_new(kind)))
        rc = SD_ENOMEM;
    return rc;
}

int sd_submit(void *handle, int ptsz, const struct sd_op *proto, struct sd_stream **sout,
              uint64_t *seq)
{
    struct sd_stream *s;
    struct sd_op *op;
    int rc = sd_op_prepare(handle, ptsz, proto->kind, &s, &op);
    if (rc)
        return rc;
    op->u = proto->u;
    bool taken;
    rc = sd_capture_take(s, op, &taken);
    if (rc || taken) { /* recorded into a capture (or refused): nothing is queued */
        if (!taken)
            free(op);
        if (sout)
            *sout = s;
        if (seq)
            *seq = 0;
        return rc;
    }
    uint64_t q = sd_enqueue(s, op, NULL);
    if (sout)
        *sout = s;
    if (seq)
        *seq = q;
    return SD_OK;
}
