/* sd_owner.c: what a driver context owns, where an allocation begins, and what the driver's
 * address queries answer for an address (its allocation, VMM mapping or reservation, or pinned
 * host block). The driver front tags allocations and streams with the thread's current context
 * (sd_set_owner) so that destroying or resetting a context frees exactly its own memory, as a
 * GPU driver does, and never another context's on the same device. */
#include "sd_vmm_internal.h" /* the 2 MiB large page */

int sd_owner_release(int dev, void *owner, int clear_fault)
{
    sd_init();
    if (dev < 0 || dev >= sd_cfg.devices)
        return SD_EDEVICE;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = &sd_dev[dev];
    /* Work already queued may still touch the memory: let the device finish it first. */
    sd_wait_device(d);
    for (size_t i = 0; i < sd_streams_set.cap; i++) {
        struct sd_stream *s = (struct sd_stream *)sd_streams_set.v[i];
        if ((uintptr_t)s > 1 && s->dev == d && s->owner == owner) {
            sd_set_del(&sd_streams_set, s);
            sd_stream_close(s);
        }
    }
    for (size_t i = d->allocs.n; i-- > 0;)
        if (d->allocs.v[i].owner == owner)
            sd_dev_release(d, d->allocs.v[i].addr);
    sd_pool_drop_device(d); /* what the released allocations gave their pools goes too */
    if (clear_fault)
        d->sticky = 0;
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

int sd_alloc_range(const void *p, void **base, size_t *size)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_dev_of(p);
    struct sd_alloc *a = d ? sd_table_find_containing(&d->allocs, (uintptr_t)p) : NULL;
    if (a) {
        *base = (void *)a->addr;
        *size = a->size;
    }
    pthread_mutex_unlock(&sd_lock);
    return a ? SD_OK : SD_EINVAL;
}

int sd_addr_query(const void *p, struct sd_addr_query *q)
{
    sd_init();
    *q = (struct sd_addr_query){0};
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_dev_of(p);
    struct sd_alloc *a = d ? sd_table_find_containing(&d->allocs, (uintptr_t)p) : NULL;
    if (a) {
        q->base = q->range_base = q->map_base = a->addr;
        q->size = q->range_size = a->size;
        q->map_size = (a->size + SD_VMM_GRANULE - 1) / SD_VMM_GRANULE * SD_VMM_GRANULE;
        q->legacy_ipc = sd_ipc_exportable(a);
    } else if (sd_vmm_holds((uintptr_t)p)) {
        q->vmm = sd_vmm_span_of((uintptr_t)p, true, &q->base, &q->size);
        q->map_base = q->base;
        q->map_size = q->size;
        sd_vmm_span_of((uintptr_t)p, false, &q->range_base, &q->range_size);
    } else if (!d && sd_host_block((uintptr_t)p, &q->base, &q->size, NULL)) {
        /* Pinned host memory: the block with its requested size (an H100 answered a 3 MiB
         * block's start and 3 MiB, its mapping 4 MiB). */
        q->host = 1;
        q->range_base = q->map_base = q->base;
        q->range_size = q->size;
        q->map_size = (q->size + SD_VMM_GRANULE - 1) / SD_VMM_GRANULE * SD_VMM_GRANULE;
    }
    pthread_mutex_unlock(&sd_lock);
    return a || q->vmm || q->host ? SD_OK : SD_EINVAL;
}

int sd_stream_owner(void *stream, void **owner)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    int rc = SD_EHANDLE;
    if (sd_set_has(&sd_streams_set, stream)) {
        *owner = ((struct sd_stream *)stream)->owner;
        rc = SD_OK;
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}
