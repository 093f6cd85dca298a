/* sd_device_ops.c: the calls that act on a whole device, synchronization and reset. They reach
 * into every subsystem (captures, streams, events, memory, VMM, pools), so they sit above them
 * all, apart from the device table (sd_device.c) that everything uses. */
#include "sd_capture.h"

int sd_device_sync(void)
{
    double t0 = sd_now();
    int rc = sd_check_current();
    if (rc)
        return rc;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    if ((rc = sd_capture_device_sync(d)) != SD_OK) {
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    d->c.device_syncs++;
    sd_wait_device(d);
    sd_pool_sync_trim(); /* a pool gives memory back at a synchronization */
    rc = d->sticky;
    pthread_mutex_unlock(&sd_lock);
    /* A device-wide synchronization costs at least what any waiting one costs, and may cost
     * more (SIMDEV_CTX_SYNC_US: beside a busy stream, part of a kernel). */
    sd_price_floor(t0, sd_cfg.sync_us > sd_cfg.ctx_sync_us ? sd_cfg.sync_us : sd_cfg.ctx_sync_us);
    sd_inject_sync_delay();
    return rc;
}

int sd_device_reset(void)
{
    sd_init();
    if (sd_cfg.devices == 0)
        return SD_ENODEV;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    /* Every stream drains and exits: user handles die, default streams are recreated lazily. */
    if (d->legacy) {
        sd_stream_close(d->legacy);
        d->legacy = NULL;
    }
    for (size_t i = 0; i < sd_streams_set.cap; i++) {
        struct sd_stream *s = (struct sd_stream *)sd_streams_set.v[i];
        if ((uintptr_t)s > 1 && s->dev == d) {
            sd_set_del(&sd_streams_set, s);
            sd_stream_close(s);
        }
    }
    for (struct sd_stream *s = d->streams; s; s = s->next)
        if (s->kind == SK_PERTHREAD && !s->closing) {
            s->closing = true; /* its owner thread sees the new generation and forgets it */
            s->refs--;         /* the owner's reference; the worker still holds one */
            pthread_cond_signal(&s->work);
        }
    d->gen++;
    d->peers = 0;
    while (d->streams)
        pthread_cond_wait(&sd_cv, &sd_lock);
    sd_events_drop_device(d);
    if (d->base) {
        while (d->allocs.n)
            sd_dev_release(d, d->allocs.v[d->allocs.n - 1].addr);
        d->cursor = d->base;
    }
    sd_vmm_drop_device(d);
    sd_pool_drop_device(d);
    d->sticky = 0;
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

int sd_peer_access(int peer, int on)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    uint64_t bit = peer >= 0 && peer < 64 ? (uint64_t)1 << peer : 0;
    if (peer < 0 || peer >= sd_cfg.devices || peer == d->id || !bit)
        rc = SD_EDEVICE;
    else if (on && (d->peers & bit))
        rc = SD_EPEERON;
    else if (!on && !(d->peers & bit))
        rc = SD_EPEEROFF;
    else
        d->peers = on ? d->peers | bit : d->peers & ~bit;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_peer_enabled(int peer)
{
    if (sd_check_current() != SD_OK || peer < 0 || peer >= 64)
        return 0;
    pthread_mutex_lock(&sd_lock);
    int on = (int)(sd_cur()->peers >> peer & 1);
    pthread_mutex_unlock(&sd_lock);
    return on;
}
